"""One QEMU SabreLite guest: the process, its console protocol, its Ethernet endpoint.

QEMU runs inside a network namespace of this run (``rxo<pid>q``, :mod:`conformance.live.
netns`), with the board's ENET wired to a ``dgram`` netdev over two AF_UNIX datagram
sockets in this run's directory: one datagram is one Ethernet frame, both ways, and no
network address exists on either side.

The host talks to the guest over the NIC itself, the guest answers on the console (the
board's second UART, a socket chardev).  The console's input side cannot carry commands:
QEMU 7.2's i.MX UART never sets USR2_WAKE, so after a few receive interrupts the 6.12
driver's flood check (``imx_uart_check_flood``, drivers/tty/serial/imx.c) soft-resets the
port, and QEMU's soft reset leaves the receiver dead.  So a command is a few control
frames (EtherType :data:`CTL_PROTO` from :data:`HOST_MAC` to :data:`GUEST_MAC`): the probe
object's ``rxo_ctl`` program, at tcx ingress, copies them into the ``progs`` and ``ctrl``
maps and drops them; the guest's init (``init.sh``) polls ``ctrl``, runs the command and
prints ``RXO-BEGIN SEQ``, its output and ``RXO-ACK SEQ STATUS``.

Teardown on every exit path: :meth:`Guest.close` (also from ``atexit`` and SIGINT/SIGTERM
through :mod:`conformance.live.netns`), and QEMU gets SIGKILL from the kernel when the
process that started it dies (``PR_SET_PDEATHSIG``).  What a SIGKILL'd run leaves (its
run directory, its namespace) is removed by the next run's :func:`sweep`.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import queue
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import attrs

from conformance.live import netns

RUN_BASE = Path(tempfile.gettempdir()) / "rx-oracle-qemu-fec"
PR_SET_PDEATHSIG = 1
BOOT_TIMEOUT = 240.0
GUEST_MAC = "02:00:00:00:00:01"
#: The source MAC of the host's control frames.
HOST_MAC = "02:00:00:00:00:02"
#: Control frames (``rxo_probe.bpf.c``, ``RXO_GUEST``): EtherType, magic, kinds.
CTL_PROTO = 0x88B5
CTL_MAGIC = 0x43584F52
CTL_PROG, CTL_CMD = 1, 2
#: Commands (``struct rxo_cmd``'s ``op``, ``init.sh``'s ``rxo_do``).
RUN, RESET, DUMP, INFO = 1, 2, 3, 4
RESEND_AFTER = 3.0
#: ``struct rxo_rec`` of the guest probe: 32 bytes of head, 16 op records of 40 bytes (no
#: metadata or packet bytes: RXO_META_CAP and RXO_DATA_CAP are 0).
RECORD_HEAD, OP_RECORD, RECORD_SIZE = 32, 40, 32 + 16 * 40
_ETH_HEAD = bytes.fromhex(GUEST_MAC.replace(":", "") + HOST_MAC.replace(":", ""))
_CTL_HEAD = struct.Struct("<4I")


@attrs.frozen
class Command:
    """``struct rxo_cmd``: what the guest's shell does next (its ``rxo_cmd``)."""

    seq: int
    op: int
    nframes: int
    xdp: int
    rx_csum: int  # 0 off, 1 on, 2 leave alone
    vlan_rx: int
    record_lines: int  # of each record, the dump prints this many lines of 16 bytes

    def pack(self) -> bytes:
        return struct.pack("<8I", self.seq, self.op, self.nframes, self.xdp, self.rx_csum,
                           self.vlan_rx, self.record_lines, 0)


def _tristate(value: bool | None) -> int:
    return 2 if value is None else int(value)


class GuestError(Exception):
    """The guest did not boot, died, or a command failed or timed out."""


def _die_with_parent() -> None:  # runs in the child between fork and exec
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class Guest:
    """A booted guest; ``command`` runs a shell line in it, ``send``/``receive`` frames."""

    def __init__(self, *, kernel: Path, dtb: Path, initrd: Path, machine: str = "sabrelite",
                 qemu: str = "qemu-system-arm", qemu_env: Mapping[str, str] | None = None,
                 boot_timeout: float = BOOT_TIMEOUT) -> None:
        self.dir = RUN_BASE / str(os.getpid())
        self.proc: subprocess.Popen[bytes] | None = None
        self.sock: socket.socket | None = None
        self.ns: str | None = None
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.log: list[str] = []
        self._seq = 0
        _live.append(self)
        try:
            self._start(kernel, dtb, initrd, machine, qemu, dict(qemu_env or {}), boot_timeout)
        except BaseException:
            self.close()
            raise

    def _start(self, kernel: Path, dtb: Path, initrd: Path, machine: str, qemu: str,
               qemu_env: dict[str, str], boot_timeout: float) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir.mkdir(parents=True)
        self.host_path = str(self.dir / "h.sock")
        self.qemu_path = str(self.dir / "q.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.host_path)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.ns = netns.create("q")
        cmd = ["ip", "netns", "exec", self.ns, qemu, "-M", machine, "-m", "512M",
               "-display", "none", "-monitor", "none", "-no-reboot",
               "-chardev", f"socket,id=con,path={self.dir / 'console.sock'},server=on,wait=on",
               "-serial", "null", "-serial", "chardev:con",
               "-pidfile", str(self.dir / "qemu.pid"),
               "-kernel", str(kernel), "-dtb", str(dtb), "-initrd", str(initrd),
               "-append", "console=ttymxc1,115200 rdinit=/init loglevel=4 quiet",
               "-netdev", f"dgram,id=n0,local.type=unix,local.path={self.qemu_path},"
                          f"remote.type=unix,remote.path={self.host_path}",
               "-net", f"nic,netdev=n0,macaddr={GUEST_MAC}"]
        self.started = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, preexec_fn=_die_with_parent,
                                     env={**os.environ, **qemu_env})
        self.console = self._connect(self.dir / "console.sock")
        threading.Thread(target=self._read, daemon=True).start()
        ready = self._until(lambda line: line.startswith("RXO-READY"), boot_timeout, "boot")
        failures = [line for line in ready if line.startswith("RXO-FAIL")]
        if failures:
            raise GuestError(f"guest set-up: {'; '.join(failures)}\n{self.tail()}")
        self.boot_seconds = time.monotonic() - self.started

    def _connect(self, path: Path, timeout: float = 20.0) -> socket.socket:
        """The console: QEMU listens on ``path`` and starts the board once connected."""
        deadline = time.monotonic() + timeout
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(str(path))
                return sock
            except OSError as exc:
                sock.close()
                if time.monotonic() > deadline or (self.proc and self.proc.poll() is not None):
                    out = self.proc.stdout.read().decode(errors="replace") if (
                        self.proc and self.proc.stdout and self.proc.poll() is not None) else ""
                    raise GuestError(f"QEMU console {path}: {exc} {out[-1500:]}") from exc
                time.sleep(0.05)

    def _read(self) -> None:
        buf = b""
        while True:
            try:
                chunk = self.console.recv(65536)
            except OSError:
                chunk = b""
            if not chunk:
                break
            buf += chunk
            *complete, buf = buf.split(b"\n")
            for raw in complete:
                line = raw.decode(errors="replace").rstrip("\r").lstrip("\r")
                self.log.append(line)
                if len(self.log) > 2000:
                    del self.log[:1000]
                self.lines.put(line)
        self.lines.put(None)

    def _exit(self) -> str:
        """QEMU's exit status and last words, once its console has closed."""
        if self.proc is None:
            return ""
        try:
            status = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return " (its console closed; the process is still running)"
        said = self.proc.stdout.read().decode(errors="replace") if self.proc.stdout else ""
        return f" with status {status}: {said.strip()[-1500:]}"

    def tail(self, n: int = 25) -> str:
        return "\n".join(self.log[-n:])

    def _until(self, done: Callable[[str], bool], timeout: float, what: str) -> list[str]:
        """Console lines up to the one ``done`` accepts."""
        out: list[str] = []
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise GuestError(f"guest {what}: no answer in {timeout:.0f} s\n"
                                 f"{self.tail()}") from None
            if line is None:
                raise GuestError(f"guest {what}: QEMU exited{self._exit()}\n{self.tail()}")
            out.append(line)
            if done(line):
                return out

    # --- the control channel: frames in, console lines out ------------------------------

    def _control_frames(self, cmd: Command, programs: Sequence[bytes]) -> list[bytes]:
        head = _ETH_HEAD + CTL_PROTO.to_bytes(2, "big")
        out = [head + _CTL_HEAD.pack(CTL_MAGIC, CTL_PROG, i, 0) + prog
               for i, prog in enumerate(programs)]
        out.append(head + _CTL_HEAD.pack(CTL_MAGIC, CTL_CMD, 0, 0) + cmd.pack())
        return out

    def control(self, op: int, *, nframes: int = 0, xdp: bool = False,
                rx_csum: bool | None = None, vlan_rx: bool | None = None,
                programs: Sequence[bytes] = (), frames: Sequence[bytes] = (),
                record_bytes: int = RECORD_SIZE, timeout: float = 60.0) -> list[str]:
        """Send command ``op`` (:data:`RUN`, :data:`RESET`, :data:`DUMP`, :data:`INFO`) as
        control frames and return the guest's console lines up to its ``RXO-ACK``.

        ``programs`` (one ``struct rxo_prog`` per packet) travel ahead of the command; a
        dump prints the first ``record_bytes`` of each probe record.  For
        :data:`RUN`, ``frames`` are sent once the guest says ``RXO-ARMED`` (the device was
        just reopened).  The control frames are sent again while the guest has not begun
        the command (a frame can be lost while the previous scenario's ring is busy); once
        it has begun they are not, as a late copy would be counted by the new device."""
        self._seq += 1
        seq = self._seq
        cmd = Command(seq, op, nframes, int(xdp), _tristate(rx_csum), _tristate(vlan_rx),
                      -(-min(record_bytes, RECORD_SIZE) // 16))
        control = self._control_frames(cmd, programs)
        out: list[str] = []
        begun = False
        deadline = time.monotonic() + timeout
        resend = 0.0
        while True:
            now = time.monotonic()
            if not begun and now >= resend:
                self.send(control)
                resend = now + RESEND_AFTER
            if now > deadline:
                raise GuestError(f"guest command {seq} (op {op}): no answer in {timeout:.0f} s"
                                 f"\n{self.tail()}")
            try:
                line = self.lines.get(timeout=min(0.2, max(0.01, deadline - now)))
            except queue.Empty:
                continue
            if line is None:
                raise GuestError(f"guest command {seq}: QEMU exited{self._exit()}\n"
                                 f"{self.tail()}")
            if line == f"RXO-BEGIN {seq}":
                begun = True
                continue
            if not begun:
                continue
            if line == f"RXO-ARMED {seq}":
                self.drain()
                self.send(frames)
                continue
            if line.startswith(f"RXO-ACK {seq} "):
                status = line.split()[-1]
                if status != "0":
                    raise GuestError(f"guest command {seq} (op {op}) exited {status}:\n"
                                     + "\n".join(out[-20:]))
                return out
            out.append(line)

    def send(self, frames: Sequence[bytes]) -> None:
        """Frames to the guest's NIC; a QEMU that has gone (its socket refuses them) is a
        :class:`GuestError` saying so, as when its console closes."""
        assert self.sock is not None
        for frame in frames:
            try:
                self.sock.sendto(frame, self.qemu_path)
            except OSError as exc:
                if self._running_after(1.0):
                    raise GuestError(f"guest NIC socket: {exc}\n{self.tail()}") from exc
                raise GuestError(f"QEMU exited{self._exit()}\n{self.tail()}") from exc

    def _running_after(self, grace: float) -> bool:
        """Whether QEMU still runs ``grace`` seconds on (a dying process closes its
        sockets a moment before it can be reaped)."""
        if self.proc is None:
            return False
        try:
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            return True
        return False

    def receive(self, count: int, timeout: float, grace: float = 0.05) -> list[bytes]:
        """Frames the guest sent: until ``count`` arrived (then ``grace`` more) or timeout."""
        assert self.sock is not None
        got: list[bytes] = []
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if len(got) >= count:
                left = min(left, grace)
            if left <= 0:
                return got
            self.sock.settimeout(left)
            try:
                got.append(self.sock.recv(65536))
            except TimeoutError:
                return got

    def drain(self) -> None:
        assert self.sock is not None
        self.sock.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            while True:
                self.sock.recv(65536)
        self.sock.setblocking(True)

    def close(self) -> None:
        if self.proc is not None:
            with contextlib.suppress(OSError):
                self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=10)
            self.proc = None
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        console = getattr(self, "console", None)
        if console is not None:
            console.close()
            self.console = None  # type: ignore[assignment]
        _kill_pidfile(self.dir)
        shutil.rmtree(self.dir, ignore_errors=True)
        if self.ns is not None:
            netns.delete(self.ns)
            self.ns = None
        with contextlib.suppress(ValueError):
            _live.remove(self)


_live: list[Guest] = []


def _close_all() -> None:
    for guest in list(_live):
        guest.close()


atexit.register(_close_all)
netns.on_cleanup(_close_all)


def _kill_pidfile(run_dir: Path) -> None:
    """Kill the QEMU whose pid the run directory records, if it is still that QEMU."""
    try:
        pid = int((run_dir / "qemu.pid").read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return
    if str(run_dir).encode() in cmdline:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def leftovers() -> list[Path]:
    """Run directories whose owner process is gone."""
    return netns.dead_runs(RUN_BASE)


def sweep() -> list[str]:
    """Kill the QEMU of every dead run, remove its directory; dead namespaces too."""
    swept = []
    for run_dir in leftovers():
        _kill_pidfile(run_dir)
        shutil.rmtree(run_dir, ignore_errors=True)
        swept.append(str(run_dir))
    return swept + netns.sweep()


def running_qemus(run_dir: Path) -> list[int]:
    """Pids of processes whose command line names ``run_dir`` (for the tests)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if str(run_dir).encode() in (entry / "cmdline").read_bytes():
                    out.append(int(entry.name))
    return out

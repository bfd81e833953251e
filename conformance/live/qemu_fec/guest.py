"""One QEMU SabreLite guest: the process, its console protocol, its Ethernet endpoint.

QEMU runs inside a network namespace of this run (``rxo<pid>q``, :mod:`conformance.live.
netns`), with the board's ENET wired to a ``dgram`` netdev over two AF_UNIX datagram
sockets in this run's directory: one datagram is one Ethernet frame, both ways, and no
network address exists on either side.  The console (the board's second UART) is QEMU's
stdio: the guest's init (``init.sh``) prints ``RXO-READY``, then runs one command per line
and ends each with ``RXO-DONE ID STATUS``.

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
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from conformance.live import netns

RUN_BASE = Path(tempfile.gettempdir()) / "rx-oracle-qemu-fec"
PR_SET_PDEATHSIG = 1
BOOT_TIMEOUT = 240.0
GUEST_MAC = "02:00:00:00:00:01"


class GuestError(Exception):
    """The guest did not boot, died, or a command failed or timed out."""


def _die_with_parent() -> None:  # runs in the child between fork and exec
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class Guest:
    """A booted guest; ``command`` runs a shell line in it, ``send``/``receive`` frames."""

    def __init__(self, *, kernel: Path, dtb: Path, initrd: Path, machine: str = "sabrelite",
                 qemu: str = "qemu-system-arm", boot_timeout: float = BOOT_TIMEOUT) -> None:
        self.dir = RUN_BASE / str(os.getpid())
        self.proc: subprocess.Popen[bytes] | None = None
        self.sock: socket.socket | None = None
        self.ns: str | None = None
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.log: list[str] = []
        self._next = 0
        _live.append(self)
        try:
            self._start(kernel, dtb, initrd, machine, qemu, boot_timeout)
        except BaseException:
            self.close()
            raise

    def _start(self, kernel: Path, dtb: Path, initrd: Path, machine: str, qemu: str,
               boot_timeout: float) -> None:
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
                                     stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
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

    def tail(self, n: int = 25) -> str:
        return "\n".join(self.log[-n:])

    def _until(self, done: object, timeout: float, what: str,
               poke: bool = False) -> list[str]:
        """Console lines up to the one ``done`` accepts.  With ``poke``, an empty line is
        sent after each second of silence: the emulated UART can hold the last bytes of a
        command until more input arrives (seen with QEMU 7.2's i.MX UART)."""
        out: list[str] = []
        deadline = time.monotonic() + timeout
        while True:
            wait = max(0.0, deadline - time.monotonic())
            try:
                line = self.lines.get(timeout=min(wait, 1.0) if poke else wait)
            except queue.Empty:
                if poke and time.monotonic() < deadline:
                    self._write(b"\n")
                    continue
                raise GuestError(f"guest {what}: no answer in {timeout:.0f} s\n"
                                 f"{self.tail()}") from None
            if line is None:
                raise GuestError(f"guest {what}: QEMU exited "
                                 f"({self.proc.poll() if self.proc else '?'})\n{self.tail()}")
            out.append(line)
            if callable(done) and done(line):
                return out

    def command(self, line: str, timeout: float = 30.0, check: bool = True) -> list[str]:
        """Run ``line`` in the guest's shell; its output lines (status checked)."""
        self._next += 1
        tag = f"RXO-DONE {self._next} "
        self._write(f"{self._next} {line}\n".encode())
        out = self._until(lambda text: text.startswith(tag), timeout, repr(line[:60]),
                          poke=True)
        status = out.pop()[len(tag):].strip()
        if check and status != "0":
            raise GuestError(f"guest command {line[:80]!r} exited {status}:\n"
                             + "\n".join(out[-20:]))
        return out

    def _write(self, data: bytes) -> None:
        if self.proc is None:
            raise GuestError("guest is closed")
        try:
            self.console.sendall(data)
        except OSError as exc:
            raise GuestError(f"guest console: {exc}\n{self.tail()}") from exc

    def send(self, frames: Sequence[bytes]) -> None:
        assert self.sock is not None
        for frame in frames:
            self.sock.sendto(frame, self.qemu_path)

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
    try:
        entries = list(RUN_BASE.iterdir())
    except FileNotFoundError:
        return []
    return sorted(p for p in entries if p.name.isdigit() and not netns.alive(int(p.name)))


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

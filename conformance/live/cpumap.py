"""The live cpumap path: a veth pair whose receiving end redirects into a real
``BPF_MAP_TYPE_CPUMAP`` entry, and the kernel's own account of what the entry did.

Topology: namespaces ``rxo<pid>c`` (sender) and ``rxo<pid>d`` (receiver) joined by a veth
pair with IPv4 addresses and static neighbours.  ``rxo_cm_redir`` (``rxo_cpumap.bpf.c``)
runs native on the receiving end and redirects every frame to the entry of the scenario's
destination CPU; the entry's ``qsize`` and optional second program (``rxo_cm_verdict``,
attach type ``BPF_XDP_CPUMAP``, returning a configured verdict) are set by
``bpf_map_update_elem`` as the scenario says.  Frames are UDP datagrams to a socket in the
receiving namespace, each carrying its index after the UDP header, sent with AF_PACKET from
the sender end (as the live veth target sends).

What the kernel tells us (CPUMAP-ENQ-003, CPUMAP-KT-005, CPUMAP-LIVE-001):
- one record per ``xdp_cpumap_enqueue`` and ``xdp_cpumap_kthread`` tracepoint hit of this
  run's map (BTF raw tracepoints through BPF links: tracefs is never touched, and the
  links go away with the process, even after SIGKILL);
- which frames the second program ran for and with which verdict;
- which frames reached the socket (the skb the kthread built went all the way up);
- the errno of every map update (CPUMAP-MAP-001 .. CPUMAP-MAP-003).

Everything lives in the two namespaces (swept by :func:`conformance.live.netns.sweep`
after a SIGKILL) or in file descriptors of this process.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import os
import platform
import socket
import struct
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs

from conformance.live import libbpf, netns, probe
from conformance.live.ethtool import EthtoolStats
from conformance.live.probe import ProbeError
from reference.cpumap import EnqueueTrace, KthreadTrace

SOURCE = Path(__file__).with_name("rxo_cpumap.bpf.c")
#: The programs of the object, by the names ``bpftool prog show`` lists (leftover checks).
PROGRAMS = ("rxo_cm_redir", "rxo_cm_verdict", "rxo_cm_enq", "rxo_cm_kt")
MAX_PKTS = 1024
UDP_PORT = 47000
ADDR_S, ADDR_R = "10.199.0.1", "10.199.0.2"
MAC_S, MAC_R = "02:00:0a:c7:00:01", "02:00:0a:c7:00:02"
#: ``struct bpf_cpumap_val`` (include/uapi/linux/bpf.h): qsize, then the program fd.
CPUMAP_VAL = struct.Struct("<Ii")
_EVENT = struct.Struct("<IiIIiIII")
_CFG = struct.Struct("<IIII")
#: Minimum frame: Ethernet + IPv4 + UDP + the 4-byte index; maximum: the veth MTU's frame.
MIN_FRAME, MAX_FRAME = 46, 1514


def _fn(name: str, restype: object, argtypes: list[object]) -> Any:
    fn = getattr(libbpf.lib(), name)
    fn.restype = restype
    fn.argtypes = argtypes
    return fn


def _lib() -> dict[str, Any]:
    vp, i, u32p = ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_uint32)
    return {
        "attach": _fn("bpf_program__attach", vp, [vp]),
        "link_destroy": _fn("bpf_link__destroy", i, [vp]),
        "info": _fn("bpf_obj_get_info_by_fd", i, [i, vp, u32p]),
        "lookup": _fn("bpf_map_lookup_elem", i, [i, vp, vp]),
        "update": _fn("bpf_map_update_elem", i, [i, vp, vp, ctypes.c_uint64]),
    }


def build() -> Path:
    """``rxo_cpumap.bpf.o`` for this kernel, compiled once beside the probe's cache (whose
    ``vmlinux.h`` it includes)."""
    header_dir = probe.build().parent
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    obj = header_dir / f"rxo_cpumap-{digest}.bpf.o"
    if obj.exists():
        return obj
    return probe.compile_bpf(SOURCE, obj, header_dir)


def _checksum(data: bytes) -> int:
    total: int = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def udp_frame(index: int, frame_len: int) -> bytes:
    """A ``frame_len``-byte Ethernet/IPv4/UDP frame to the receiving socket whose payload
    starts with ``index`` (little endian, as ``rxo_cm_verdict`` reads it)."""
    if not MIN_FRAME <= frame_len <= MAX_FRAME:
        raise ProbeError(f"frame length {frame_len} outside {MIN_FRAME}..{MAX_FRAME}")
    payload = struct.pack("<I", index) + bytes(frame_len - 46)
    udp = struct.pack("!HHHH", UDP_PORT, UDP_PORT, 8 + len(payload), 0)
    head = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp) + len(payload), 0, 0x4000,
                       64, socket.IPPROTO_UDP, 0, socket.inet_aton(ADDR_S),
                       socket.inet_aton(ADDR_R))
    head = head[:10] + struct.pack("!H", _checksum(head)) + head[12:]
    eth = bytes.fromhex(MAC_R.replace(":", "")) + bytes.fromhex(MAC_S.replace(":", "")) \
        + b"\x08\x00"
    return eth + head + udp + payload


@attrs.frozen
class Batch:
    """One tracepoint hit: ``kind`` ``enqueue`` (``extra`` = to_cpu) or ``kthread``
    (``extra`` = sched, and the second program's counts)."""

    kind: str
    map_id: int
    processed: int
    drops: int
    extra: int
    xdp_pass: int = 0
    xdp_drop: int = 0
    xdp_redirect: int = 0


def traces(batches: Sequence[Batch]) -> tuple[list[EnqueueTrace], list[KthreadTrace]]:
    """The batches as the model's tracepoint records (CPUMAP-ENQ-003, CPUMAP-KT-005)."""
    enq = [EnqueueTrace(b.map_id, b.processed, b.drops, b.extra) for b in batches
           if b.kind == "enqueue"]
    kt = [KthreadTrace(b.map_id, b.processed, b.drops, b.extra, b.xdp_pass, b.xdp_drop,
                       b.xdp_redirect) for b in batches if b.kind == "kthread"]
    return enq, kt


def decode_event(raw: bytes) -> Batch:
    kind, map_id, processed, drops, extra, xpass, xdrop, xredir = _EVENT.unpack_from(raw)
    return Batch("enqueue" if kind == 1 else "kthread", map_id, processed, drops, extra,
                 xpass, xdrop, xredir)


@attrs.frozen
class BurstResult:
    """What the kernel reported for the frames sent so far on the current entry."""

    redirected: int  # frames rxo_cm_redir saw
    redirect_failed: int  # frames bpf_redirect_map refused (no entry)
    batches: tuple[Batch, ...]
    received: frozenset[int]  # frame indexes that reached the socket
    verdicts: dict[int, int]  # frame index -> verdict the second program returned


class CpumapVeth:
    """The topology of the module docstring, up and ready to take an entry; ``letters``
    name its two namespaces (``rxo<pid><letter>``), so a process can hold two."""

    def __init__(self, letters: str = "cd") -> None:
        self._fn = _lib()
        self.links: list[int] = []
        self.obj: libbpf.BpfObject | None = None
        self.attached = False
        self.sock: socket.socket | None = None
        self.tx: socket.socket | None = None
        self.ring: libbpf.RingBuffer | None = None
        obj_path = build()
        self.ns_s = netns.create(letters[0])
        self.ns_r = netns.create(letters[1])
        try:
            self._topology()
            with netns.entered(self.ns_r):
                self.ifindex = socket.if_nametoindex(self.ns_r)
                self._load(obj_path)
                self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                self.sock.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)  # SO_RCVBUFFORCE
                self.sock.bind((ADDR_R, UDP_PORT))
                self.sock.setblocking(False)
                self.stats = EthtoolStats(self.sock, self.ns_r)
            with netns.entered(self.ns_s):
                self.tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
                self.tx.bind((self.ns_s, 0))
        except BaseException:
            self.close()
            raise
        self.sent = 0
        self._received: set[int] = set()
        self._events: list[bytes] = []

    # ------------------------------------------------------------------ set-up

    def _topology(self) -> None:
        s, r = self.ns_s, self.ns_r
        netns.ip("link", "add", s, "netns", s, "address", MAC_S, "type", "veth", "peer",
                 "name", r, "netns", r, "address", MAC_R)
        netns.ip("addr", "add", f"{ADDR_S}/24", "dev", s, netns=s)
        netns.ip("addr", "add", f"{ADDR_R}/24", "dev", r, netns=r)
        netns.ip("neigh", "add", ADDR_R, "lladdr", MAC_R, "dev", s, "nud", "permanent",
                 netns=s)
        netns.ip("neigh", "add", ADDR_S, "lladdr", MAC_S, "dev", r, "nud", "permanent",
                 netns=r)
        netns.ip("link", "set", s, "up", netns=s)
        netns.ip("link", "set", r, "up", netns=r)
        from conformance.live.devices import _wait_up

        _wait_up(s, s)
        _wait_up(r, r)

    def _load(self, obj_path: Path) -> None:
        self.obj = libbpf.BpfObject(str(obj_path))
        fds = self.obj.load_all(PROGRAMS, ())
        self.redir_fd, self.verdict_fd = fds["rxo_cm_redir"], fds["rxo_cm_verdict"]
        self.cpus_fd = self.obj.map_fd("cpus")
        self.cfg_fd = self.obj.map_fd("cmcfg")
        self.count_fd = self.obj.map_fd("cmcount")
        self.seen_fd = self.obj.map_fd("cmseen")
        self.map_id = self.obj_id(self.cpus_fd)
        self.verdict_id = self.obj_id(self.verdict_fd)
        self._cfg = [0, 0, self.map_id, 0]
        self._write_cfg()
        for name in ("rxo_cm_enq", "rxo_cm_kt"):
            link = self._fn["attach"](self.obj.program(name))
            if not link:
                raise libbpf.BpfError(ctypes.get_errno(), f"attach {name}")
            self.links.append(int(link))
        self.ring = libbpf.RingBuffer(self.obj.map_fd("cmevents"), self._events_sink)
        libbpf.xdp_attach(self.ifindex, self.redir_fd)
        self.attached = True

    def _events_sink(self, raw: bytes) -> None:
        self._events.append(raw)

    def obj_id(self, fd: int) -> int:
        """The kernel id of a map or program (``struct bpf_{map,prog}_info``'s ``id``)."""
        buf = ctypes.create_string_buffer(64)
        size = ctypes.c_uint32(64)
        libbpf.check(self._fn["info"](fd, buf, ctypes.byref(size)), "bpf_obj_get_info_by_fd")
        return int(struct.unpack_from("<I", buf.raw, 4)[0])

    def _write_cfg(self) -> None:
        libbpf.map_update(self.cfg_fd, struct.pack("<I", 0), _CFG.pack(*self._cfg))

    # ------------------------------------------------------------------ map updates

    def update(self, key: int, qsize: int, prog_fd: int = 0, flags: int = 0,
               map_fd: int | None = None) -> int:
        """``bpf_map_update_elem`` on the cpumap: 0 or the kernel's -errno (CPUMAP-MAP-*)."""
        kbuf = ctypes.create_string_buffer(struct.pack("<I", key), 4)
        vbuf = ctypes.create_string_buffer(CPUMAP_VAL.pack(qsize, prog_fd), CPUMAP_VAL.size)
        rc = int(self._fn["update"](self.cpus_fd if map_fd is None else map_fd, kbuf, vbuf,
                                    flags))
        return rc if rc <= 0 else -rc

    def entry(self, key: int) -> tuple[int, int] | None:
        """The entry's (qsize, program id) as a lookup reads it, None for an empty slot."""
        kbuf = ctypes.create_string_buffer(struct.pack("<I", key), 4)
        vbuf = ctypes.create_string_buffer(CPUMAP_VAL.size)
        if self._fn["lookup"](self.cpus_fd, kbuf, vbuf) < 0:
            return None
        qsize, prog = CPUMAP_VAL.unpack(vbuf.raw)
        return int(qsize), int(prog)

    def set_entry(self, cpu: int, qsize: int, verdict: int | None) -> None:
        """A fresh entry on ``cpu`` (CPUMAP-MAP-002) with the verdict program or none;
        the frame counters and per-frame records start again."""
        rc = self.update(cpu, qsize, self.verdict_fd if verdict is not None else 0)
        if rc:
            raise ProbeError(f"cpumap update (cpu {cpu}, qsize {qsize}): {os.strerror(-rc)}")
        self._cfg[0] = cpu
        self._cfg[1] = 0 if verdict is None else verdict & 0xFFFFFFFF
        self._write_cfg()
        for key in (0, 1):
            libbpf.map_update(self.count_fd, struct.pack("<I", key), bytes(8))
        for index in range(min(self.sent, MAX_PKTS)):
            libbpf.map_update(self.seen_fd, struct.pack("<I", index), bytes(8))
        self.sent = 0
        self._received.clear()
        self._poll()
        self._events.clear()

    def clear_entry(self, cpu: int) -> None:
        self.update(cpu, 0)

    # ------------------------------------------------------------------ traffic

    def send(self, count: int, frame_len: int, cpu: int | None = None) -> None:
        """``count`` frames with the next indexes, sent from CPU ``cpu`` if given."""
        assert self.tx is not None
        if self.sent + count > MAX_PKTS:
            raise ProbeError(f"at most {MAX_PKTS} frames per entry")
        frames = [udp_frame(self.sent + i, frame_len) for i in range(count)]
        with _on_cpu(cpu):
            for frame in frames:
                self.tx.send(frame)
        self.sent += count

    def counters(self) -> dict[str, int]:
        """The receiving end's ``ethtool -S`` counters (``rx_queue_0_xdp_redirect``...)."""
        return self.stats.read()

    def _poll(self) -> None:
        assert self.ring is not None and self.sock is not None
        self.ring.consume()
        while True:
            try:
                data = self.sock.recv(65536)
            except BlockingIOError:
                return
            self._received.add(struct.unpack_from("<I", data)[0])

    def _u64(self, fd: int, key: int) -> int:
        kbuf = ctypes.create_string_buffer(struct.pack("<I", key), 4)
        vbuf = ctypes.create_string_buffer(8)
        libbpf.check(self._fn["lookup"](fd, kbuf, vbuf), "lookup")
        return int(struct.unpack("<Q", vbuf.raw)[0])

    def settle(self, timeout: float = 3.0, quiet: float = 0.02) -> BurstResult:
        """Wait until every frame sent is accounted for by the tracepoints (enqueued =
        the kthread's processed + enqueue drops) and nothing moved for ``quiet`` s."""
        deadline = time.monotonic() + timeout
        last: tuple[int, int, int] | None = None
        still = time.monotonic()
        while True:
            self._poll()
            batches = [decode_event(raw) for raw in self._events]
            enq = sum(b.processed for b in batches if b.kind == "enqueue")
            drops = sum(b.drops for b in batches if b.kind == "enqueue")
            done = sum(b.processed for b in batches if b.kind == "kthread")
            state = (enq, done, len(self._received))
            now = time.monotonic()
            if state != last:
                last, still = state, now
            redirected = self._u64(self.count_fd, 0)
            failed = self._u64(self.count_fd, 1)
            complete = redirected >= self.sent and enq + failed >= redirected \
                and done + drops >= enq
            if (complete and now - still >= quiet) or now > deadline:
                break
            time.sleep(0.002)
        verdicts: dict[int, int] = {}
        for index in range(min(self.sent, MAX_PKTS)):
            mark = self._u64(self.seen_fd, index)
            if mark >> 32:
                verdicts[index] = mark & 0xFFFFFFFF
        return BurstResult(redirected, failed, tuple(batches), frozenset(self._received),
                           verdicts)

    # ------------------------------------------------------------------ teardown

    def close(self) -> None:
        for attr in ("tx", "sock"):
            sock = getattr(self, attr, None)
            if sock is not None:
                sock.close()
                setattr(self, attr, None)
        if self.attached:
            try:
                with netns.entered(self.ns_r):
                    libbpf.xdp_detach(self.ifindex)
            except OSError:
                pass
            self.attached = False
        for link in self.links:
            self._fn["link_destroy"](link)
        self.links.clear()
        if self.ring is not None:
            self.ring.close()
            self.ring = None
        if self.obj is not None:
            self.obj.close()
            self.obj = None
        for name in ("ns_s", "ns_r"):
            ns = getattr(self, name, None)
            if ns:
                netns.delete(ns)


@contextmanager
def _on_cpu(cpu: int | None) -> Iterator[None]:
    """The calling thread pinned to ``cpu`` for the body (so enqueues run there)."""
    if cpu is None or cpu not in os.sched_getaffinity(0):
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def possible_cpus() -> frozenset[int]:
    """``cpu_possible_mask`` (``/sys/devices/system/cpu/possible``, ranges like ``0-3``)."""
    text = Path("/sys/devices/system/cpu/possible").read_text().strip()
    cpus: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return frozenset(cpus)


def load_unusual(obj_path: Path, program: str, bind_ifindex: int = 0) -> libbpf.BpfObject:
    """A second copy of the object with only ``program`` loaded (device-bound to
    ``bind_ifindex`` if given): candidates a cpumap entry must refuse (CPUMAP-MAP-003)."""
    obj = libbpf.BpfObject(str(obj_path))
    try:
        obj.load(program, others=tuple(p for p in PROGRAMS if p != program),
                 bind_ifindex=bind_ifindex)
    except BaseException:
        obj.close()
        raise
    return obj


def kthreads(map_id: int) -> list[str]:
    """Names of the cpumap kthreads still running for map ``map_id``
    (``cpumap/<cpu>/map:<id>``; a kernel that cuts task names to 15 characters shows
    the cut name)."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            name = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        full = (f"cpumap/{cpu}/map:{map_id}" for cpu in possible_cpus())
        if any(name in (want, want[:15]) for want in full):
            out.append(name)
    return out


def kernel_release() -> str:
    return platform.release()


ERRNO_NAMES = {-getattr(errno, n): n for n in ("EINVAL", "ENOMEM", "E2BIG", "EEXIST",
                                                "EOVERFLOW", "ENODEV", "EBADF", "EPERM")}

"""The op-list probe: build, load device-bound, feed op lists, read one record per packet.

``rxo_probe.bpf.c`` (beside this file) is compiled at run time with clang against a
``vmlinux.h`` that ``bpftool btf dump`` generates from the running kernel into a cache
directory (``$RX_ORACLE_CACHE`` or ``~/.cache/rx-oracle``), never into the repository.
"""

from __future__ import annotations

import hashlib
import os
import platform
import struct
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from conformance.live import libbpf

SOURCE = Path(__file__).with_name("rxo_probe.bpf.c")
MAX_OPS = 16
MAX_PKTS = 1024
DATA_CAP = 3584
META_CAP = 256

_OPS = {"adjust_head": 1, "adjust_meta": 2, "adjust_tail": 3, "write": 4, "get_buff_len": 5,
        "return": 9}
_KFUNC_OPS = {"rx_timestamp": 6, "rx_hash": 7, "rx_vlan_tag": 8}
_OP = struct.Struct("<IiiI8s")
_PROG_HEAD = struct.Struct("<II")
_REC_HEAD = struct.Struct("<8I")
_OPREC = struct.Struct("<iiQQQQ")
_REC_SIZE = _REC_HEAD.size + MAX_OPS * _OPREC.size + META_CAP + DATA_CAP


class ProbeError(Exception):
    """The probe cannot run this scenario or the kernel did not answer."""


def cache_dir() -> Path:
    base = os.environ.get("RX_ORACLE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "rx-oracle")
    return Path(base)


def build(omit: Iterable[str] = ()) -> Path:
    """The probe object for this kernel and source, compiled once and cached; ``omit``
    names ``RXO_NO_*`` macros of the source, each leaving out an op kind the kernel
    refuses (:mod:`conformance.live.ops`)."""
    out_dir = kernel_dir()
    left_out = sorted(set(omit))
    suffix = "".join(f"-{name.removeprefix('RXO_NO_').lower()}" for name in left_out)
    obj = out_dir / (f"rxo_probe-without{suffix}.bpf.o" if left_out else "rxo_probe.bpf.o")
    if obj.exists():
        return obj
    return compile_bpf(SOURCE, obj, out_dir, defines=left_out)


def kernel_dir() -> Path:
    """The cache directory for this kernel and probe source, with its ``vmlinux.h``."""
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:16]
    out_dir = cache_dir() / f"{platform.release()}-{digest}"
    out_dir.mkdir(parents=True, exist_ok=True)
    header = out_dir / "vmlinux.h"
    if not header.exists():
        text = subprocess.run(["bpftool", "btf", "dump", "file", "/sys/kernel/btf/vmlinux",
                               "format", "c"], capture_output=True, check=True).stdout
        tmp = header.with_suffix(f".h.{os.getpid()}")
        tmp.write_bytes(text)
        tmp.rename(header)
    return out_dir


def compile_bpf(source: Path, obj: Path, include_dir: Path,
                defines: Sequence[str] = ()) -> Path:
    """Compile ``source`` to ``obj`` with clang for BPF (``vmlinux.h`` from
    ``include_dir``, each of ``defines`` as a ``-D``), through a temporary name so a
    concurrent run never loads half a file; :class:`ProbeError` with clang's message when
    it fails."""
    tmp_obj = obj.with_suffix(f".o.{os.getpid()}")
    done = subprocess.run(["clang", "-O2", "-g", "-target", "bpf", "-mcpu=v3",
                           f"-I{include_dir}", *(f"-D{d}" for d in defines),
                           "-c", str(source), "-o", str(tmp_obj)],
                          capture_output=True, text=True, check=False)
    if done.returncode:
        raise ProbeError(f"clang failed: {done.stderr[-2000:]}")
    tmp_obj.rename(obj)
    return obj


def encode_program(ops: Sequence[Mapping[str, Any]]) -> bytes:
    """One ``struct rxo_prog``; ops past a ``return`` are dropped (they never run)."""
    body = b""
    count = 0
    for op in ops:
        name = op["op"]
        if count == MAX_OPS:
            raise ProbeError(f"the probe runs at most {MAX_OPS} ops")
        if name == "kfunc":
            body += _OP.pack(_KFUNC_OPS[str(op["name"])], 0, 0, 0, b"")
        elif name == "write":
            data = op["data"]
            raw = bytes.fromhex(data) if isinstance(data, str) else bytes(data)
            if len(raw) > 8:
                raise ProbeError("the probe writes at most 8 bytes per op")
            body += _OP.pack(_OPS[name], 0, _s32(int(op["offset"])), len(raw), raw)
        elif name == "return":
            body += _OP.pack(_OPS[name], _s32(int(op["action"]) & 0xFFFFFFFF), 0, 0, b"")
        elif name == "get_buff_len":
            body += _OP.pack(_OPS[name], 0, 0, 0, b"")
        elif name in _OPS:
            body += _OP.pack(_OPS[name], _s32(int(op["delta"])), 0, 0, b"")
        else:
            raise ProbeError(f"unknown op {name!r}")
        count += 1
        if name == "return":
            break
    return _PROG_HEAD.pack(count, 0) + body + bytes(_OP.size * (MAX_OPS - count))


def _s32(value: int) -> int:
    if not -(2**31) <= value < 2**32:
        raise ProbeError(f"{value} does not fit 32 bits")
    return value - 2**32 if value >= 2**31 else value


def decode_record(raw: bytes, ops: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A ring buffer record as the ``packets[i]`` observables of PROTOCOL.md."""
    seq, nrec, action, data_len, meta_len, buff_len, cap_len, _ = _REC_HEAD.unpack_from(raw)
    records: list[dict[str, Any]] = []
    for i in range(nrec):
        rc, _rc2, a1, a2, b1, b2 = _OPREC.unpack_from(raw, _REC_HEAD.size + i * _OPREC.size)
        op = ops[i]
        name = op["op"]
        if name == "get_buff_len":
            records.append({"op": name, "rc": 0, "len": a1})
        elif name == "kfunc":
            kf = str(op["name"])
            rec: dict[str, Any] = {"op": "kfunc", "name": kf, "rc": rc}
            first = a1 if a1 == b1 else None
            second = a2 if a2 == b2 else None
            if kf == "rx_timestamp":
                rec["timestamp"] = first
            elif kf == "rx_hash":
                rec["hash"], rec["rss_type"] = first, second
            else:  # __be16 read as a little-endian u16: swap to the TPID's value
                rec["vlan_proto"] = None if first is None else _bswap16(first)
                rec["vlan_tci"] = second
            records.append(rec)
        else:
            records.append({"op": name, "rc": rc})
    meta_off = _REC_HEAD.size + MAX_OPS * _OPREC.size
    meta = raw[meta_off:meta_off + meta_len] if 0 < meta_len <= META_CAP else b""
    data_off = meta_off + META_CAP
    data = raw[data_off:data_off + min(cap_len, data_len)]
    return {"seq": seq, "ops": records, "action": action, "data": data.hex(),
            "meta": meta.hex(), "len": buff_len}


def _bswap16(value: int) -> int:
    return ((value & 0xFF) << 8) | ((value >> 8) & 0xFF)


class Probe:
    """The probe program loaded bound to ``ifindex`` (caller is inside its netns).

    ``refused`` maps the op kinds the kernel refuses on this device to why
    (:func:`conformance.live.ops.load_probe` finds them and builds the probe without
    them); a scenario calling one is not applicable."""

    def __init__(self, obj_path: Path, ifindex: int,
                 refused: Mapping[str, str] | None = None) -> None:
        self.ifindex = ifindex
        self.refused = dict(refused or {})
        self.obj = libbpf.BpfObject(str(obj_path))
        self.attached = False
        try:
            fd = self.obj.load("rxo_probe", others=("rxo_peer", "rxo_bounce"),
                               bind_ifindex=ifindex)
            self.fd = fd
            self.progs_fd = self.obj.map_fd("progs")
            self.seq_fd = self.obj.map_fd("seqmap")
            self._records: list[bytes] = []
            self.ring = libbpf.RingBuffer(self.obj.map_fd("events"), self._records.append)
            libbpf.xdp_attach(ifindex, fd)
            self.attached = True
        except BaseException:
            self.obj.close()
            raise

    def prepare(self, programs: Sequence[Sequence[Mapping[str, Any]]]) -> None:
        """Op list ``i`` for the batch's packet ``i``; the packet counter back to 0."""
        if len(programs) > MAX_PKTS:
            raise ProbeError(f"at most {MAX_PKTS} packets per batch")
        for i, ops in enumerate(programs):
            libbpf.map_update(self.progs_fd, struct.pack("<I", i), encode_program(ops))
        libbpf.map_update(self.seq_fd, struct.pack("<I", 0), struct.pack("<I", 0))
        self.ring.consume()
        self._records.clear()

    def collect(self, count: int, timeout: float = 2.0) -> list[bytes]:
        """Wait for ``count`` records (the packets of the batch, in order)."""
        deadline = time.monotonic() + timeout
        self.ring.consume()
        while len(self._records) < count:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ProbeError(f"only {len(self._records)} of {count} packets reached XDP")
            self.ring.poll(max(1, int(left * 1000)))
        if len(self._records) > count:
            raise ProbeError(f"{len(self._records)} packets reached XDP, {count} were sent")
        out = list(self._records)
        self._records.clear()
        return out

    def close(self) -> None:
        if self.attached:
            libbpf.xdp_detach(self.ifindex)
            self.attached = False
        self.ring.close()
        self.obj.close()


class PeerProgram:
    """``rxo_peer`` (XDP_DROP) or ``rxo_bounce`` (XDP_TX) attached, unbound, on the other
    end of a pair; with ``vlan``, also ``rxo_vlan`` on its tc egress (:meth:`set_vlan`)."""

    def __init__(self, obj_path: Path, ifindex: int, program: str = "rxo_peer",
                 vlan: bool = False, bounce: bool = False) -> None:
        self.ifindex = ifindex
        self.obj = libbpf.BpfObject(str(obj_path))
        names: tuple[str, ...] = (program, "rxo_vlan") if vlan else (program,)
        if bounce and "rxo_bounce" not in names:
            names += ("rxo_bounce",)
        others = tuple(p for p in ("rxo_probe", "rxo_peer", "rxo_bounce", "rxo_vlan")
                       if p not in names)
        try:
            fds = self.obj.load_all(names, others)
            self.fds = fds
            self.program = program
            libbpf.xdp_attach(ifindex, fds[program])
            self.vlan_fd = -1
            if vlan:
                libbpf.tc_attach_egress(ifindex, fds["rxo_vlan"])
                self.vlan_fd = self.obj.map_fd("vlancfg")
        except BaseException:
            self.obj.close()
            raise

    def use(self, program: str) -> None:
        """Attach ``program`` (one of those loaded) instead of the current one (the caller
        is in the device's namespace)."""
        if program != self.program:
            libbpf.xdp_attach(self.ifindex, self.fds[program])
            self.program = program

    def set_vlan(self, tag: tuple[int, int] | None) -> None:
        """Push (proto, tci) out of band on every frame sent from now on; None: no tag."""
        proto, tci = tag or (0, 0)
        libbpf.map_update(self.vlan_fd, struct.pack("<I", 0),
                          struct.pack("<IHH", tag is not None, proto, tci))

    def close(self) -> None:
        libbpf.xdp_detach(self.ifindex)
        self.obj.close()

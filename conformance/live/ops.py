"""Which of the probe's op kinds the running kernel lets an XDP program call.

Kernels in the field differ: a hardened or distribution build may leave a helper out of
the XDP program type's list (a Firecracker host kernel refuses ``bpf_xdp_adjust_meta``
with "program of this type cannot use helper bpf_xdp_adjust_meta#54"), and a kernel older
than a kfunc does not have it.  The probe (``rxo_probe.bpf.c``) calls every op kind from
one program, so one refusal would refuse the probe as a whole and with it every case.

So before the probe loads, one tiny program per op kind (``rxo_try.bpf.c``, built with
``-DRXO_TRY=<n>``) is loaded on the device the probe will run on, bound to it for the
kfuncs (they exist only for device-bound programs).  Each refusal is kept with the
verifier's own last line, the probe is built without that op (``-DRXO_NO_<OP>``), and a
case whose op list calls it is not applicable on this target while every other case still
runs.  What every probe record needs whatever its op list (a ring buffer record, the
buffer's length, a copy of its bytes) is tried the same way; a kernel that refuses it
cannot run the probe at all.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from conformance.live import libbpf
from conformance.live.probe import Probe, ProbeError, build, compile_bpf

SOURCE = Path(__file__).with_name("rxo_try.bpf.c")


@attrs.frozen
class OpKind:
    """One thing the probe calls: the op-list name that needs it (``adjust_meta``, or a
    kfunc's name such as ``rx_hash``), the kernel's name for it, its ``RXO_TRY`` number in
    ``rxo_try.bpf.c`` and the ``RXO_NO_*`` macro that leaves it out of the probe."""

    name: str
    call: str
    number: int
    omit: str
    kfunc: bool = False


#: The op kinds an op list may leave out (PROTOCOL.md's op names; kfuncs by name).
OPTIONAL = (
    OpKind("adjust_head", "bpf_xdp_adjust_head", 1, "RXO_NO_ADJ_HEAD"),
    OpKind("adjust_meta", "bpf_xdp_adjust_meta", 2, "RXO_NO_ADJ_META"),
    OpKind("adjust_tail", "bpf_xdp_adjust_tail", 3, "RXO_NO_ADJ_TAIL"),
    OpKind("rx_timestamp", "bpf_xdp_metadata_rx_timestamp", 4, "RXO_NO_K_TS", kfunc=True),
    OpKind("rx_hash", "bpf_xdp_metadata_rx_hash", 5, "RXO_NO_K_HASH", kfunc=True),
    OpKind("rx_vlan_tag", "bpf_xdp_metadata_rx_vlan_tag", 6, "RXO_NO_K_VLAN", kfunc=True),
)
#: What every record needs; not optional.
RECORD = OpKind("record", "bpf_ringbuf_reserve, bpf_xdp_get_buff_len and bpf_xdp_load_bytes",
                7, "")
BY_NAME = {kind.name: kind for kind in OPTIONAL}


@attrs.frozen
class Refusal:
    """An op kind this kernel refused, and the verifier's (or the compiler's) words."""

    kind: OpKind
    reason: str

    def describe(self) -> str:
        return f"the kernel refuses {self.kind.call} ({self.reason})"


def op_name(op: Mapping[str, Any]) -> str:
    """The op kind an op of an op list needs: its ``op``, or a kfunc's ``name``."""
    return str(op.get("name")) if op.get("op") == "kfunc" else str(op.get("op"))


def needed(programs: Iterable[Iterable[Mapping[str, Any]]]) -> set[str]:
    """The op kinds a batch's op lists call (``return`` ends an op list: nothing after it
    runs)."""
    names: set[str] = set()
    for ops in programs:
        for op in ops:
            if op.get("op") == "return":
                break
            names.add(op_name(op))
    return names


def try_object(kind: OpKind, out_dir: Path) -> Path:
    """``rxo_try.bpf.c`` built for ``kind`` into ``out_dir`` (beside its ``vmlinux.h``),
    once per source."""
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]
    obj = out_dir / f"rxo_try-{kind.number}-{digest}.bpf.o"
    if obj.exists():
        return obj
    return compile_bpf(SOURCE, obj, out_dir, defines=(f"RXO_TRY={kind.number}",))


def try_load(kind: OpKind, out_dir: Path, ifindex: int) -> str | None:
    """None when the kernel loads ``kind``'s tiny program (bound to ``ifindex`` for a
    kfunc); else the verifier's (or the compiler's) reason.  The caller is in the
    device's namespace, as for the probe itself."""
    try:
        path = try_object(kind, out_dir)
    except ProbeError as exc:
        return f"does not build against this kernel's BTF: {_first_error(str(exc))}"
    obj = libbpf.BpfObject(str(path))
    try:
        obj.load("rxo_try", bind_ifindex=ifindex if kind.kfunc else 0)
    except libbpf.BpfError as exc:
        return exc.verifier_line or str(exc)
    finally:
        obj.close()
    return None


def refused(out_dir: Path, ifindex: int) -> dict[str, Refusal]:
    """The optional op kinds this kernel refuses on ``ifindex``, by op name; raises
    :class:`ProbeError` when it refuses what every record needs (the probe
    cannot run at all)."""
    reason = try_load(RECORD, out_dir, ifindex)
    if reason is not None:
        raise ProbeError(f"the kernel refuses the probe's record ({RECORD.call}): {reason}")
    out: dict[str, Refusal] = {}
    for kind in OPTIONAL:
        reason = try_load(kind, out_dir, ifindex)
        if reason is not None:
            out[kind.name] = Refusal(kind, reason)
    return out


def _first_error(text: str) -> str:
    for line in text.splitlines():
        if "error:" in line:
            return line.split("error:", 1)[1].strip()
    return text.strip().splitlines()[-1] if text.strip() else "clang failed"


def load_probe(obj_path: Path, ifindex: int) -> Probe:
    """The probe loaded bound to ``ifindex`` (the caller is in its namespace), built
    without the op kinds this kernel refuses there; its ``refused`` says which and why.
    :class:`ProbeError` names the refusal when the kernel refuses the record itself."""
    found = refused(obj_path.parent, ifindex)
    if found:
        obj_path = build(omit=[r.kind.omit for r in found.values()])
    return Probe(obj_path, ifindex, {name: r.describe() for name, r in found.items()})

"""XDP programs as data: a short op list the reference, exec targets and a live
kernel all run identically (XDP-PROG-001 .. XDP-PROG-003).

The vocabulary (each op is a mapping with an ``op`` key):

=================  =====================================  ==============================
op                 fields                                 records
=================  =====================================  ==============================
``adjust_head``    ``delta`` (int)                        ``rc`` of bpf_xdp_adjust_head
``adjust_meta``    ``delta``                              ``rc`` of bpf_xdp_adjust_meta
``adjust_tail``    ``delta``                              ``rc`` of bpf_xdp_adjust_tail
``write``          ``offset`` (from ``data``), ``data``   ``rc``: 0, or -ERANGE if the
                   (bytes; hex in JSON)                   bytes are not inside
                                                          [data_meta, data_end)
``get_buff_len``   -                                      ``rc`` 0, ``len``
``kfunc``          ``name``: rx_timestamp | rx_hash |     the kfunc's ``rc`` and outputs
                   rx_vlan_tag
``return``         ``action`` (int, any u32)              ends the program
=================  =====================================  ==============================

The interpreter takes no decision of the kernel's: every rc comes from the modelled
helper or kfunc.  Its own conventions are the write bounds and the implicit return.
"""

from __future__ import annotations

import errno
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import attrs

from reference import kfuncs
from reference.errors import InvalidConfig
from reference.trace import Trace, emit
from reference.xdp.actions import XdpAction
from reference.xdp.arch import V6_17, KernelSemantics
from reference.xdp.buff import XdpBuff, xdp_data_meta_unsupported
from reference.xdp.helpers import (
    bpf_xdp_adjust_head,
    bpf_xdp_adjust_meta,
    bpf_xdp_adjust_tail,
    bpf_xdp_get_buff_len,
)
from reference.xdp.mem import MemReturn
from reference.xdp.warn import KernelWarn

OPS = ("adjust_head", "adjust_meta", "adjust_tail", "write", "get_buff_len", "kfunc", "return")
KFUNCS = ("rx_timestamp", "rx_hash", "rx_vlan_tag")
_OUTPUT_NAMES = {"rx_timestamp": ("timestamp",), "rx_hash": ("hash", "rss_type"),
                 "rx_vlan_tag": ("vlan_proto", "vlan_tci")}


@attrs.frozen
class ProgramRun:
    """What one run of a program did: the raw return value and one record per op run."""

    action: int
    records: tuple[dict[str, Any], ...]
    #: With a trace: the rule ids applied while each op ran (explain, attribution).
    op_rules: tuple[tuple[str, ...], ...] = ()


#: XDP-PROG-001: the fields each op must carry.
_NEEDS: dict[str, tuple[str, ...]] = {
    "adjust_head": ("delta",), "adjust_meta": ("delta",), "adjust_tail": ("delta",),
    "write": ("offset", "data"), "kfunc": ("name",), "return": ("action",)}


def validate(ops: Sequence[Mapping[str, Any]]) -> None:
    """XDP-PROG-001: refuse ops outside the vocabulary before anything runs."""
    for i, op in enumerate(ops):
        name = op.get("op")
        if name not in OPS:
            raise InvalidConfig(f"op {i} is not one of {', '.join(OPS)}", field=f"program[{i}].op",
                                value=name, rule="XDP-PROG-001")
        for field in _NEEDS.get(str(name), ()):
            if field not in op:
                raise InvalidConfig(f"op {name} needs {field!r}", field=f"program[{i}].{field}",
                                    value=None, rule="XDP-PROG-001")
        if name == "kfunc" and op["name"] not in KFUNCS:
            raise InvalidConfig("unknown kfunc", field=f"program[{i}].name", value=op["name"],
                                rule="XDP-PROG-001")


class VerifiedProgram(tuple[Mapping[str, Any], ...]):
    """An op list checked once, when it is loaded (XDP-PROG-001), as the kernel verifies
    a BPF program once at load time: :func:`run_program` does not check it again for
    every packet.  Its ops are read-only copies, so the check stays true; a plain op list
    is still checked on every run."""

    __slots__ = ()

    def __new__(cls, ops: Sequence[Mapping[str, Any]]) -> VerifiedProgram:
        validate(ops)
        return super().__new__(cls, (MappingProxyType(dict(op)) for op in ops))


def run_program(
    ops: Sequence[Mapping[str, Any]],
    xdp: XdpBuff,
    *,
    metadata_ops: kfuncs.XdpMetadataOps | None = None,
    ctx: object = None,
    released: list[MemReturn] | None = None,
    kernel: KernelSemantics = V6_17,
    warns: list[KernelWarn] | None = None,
    trace: Trace | None = None,
) -> ProgramRun:
    """Run ``ops`` on ``xdp`` (XDP-PROG-001 .. XDP-PROG-003).

    ``metadata_ops`` are the kfunc implementations the program was resolved against
    at load time (None: every kfunc runs its default body); ``ctx`` is the driver's
    per-packet context handed to them.  Frags a tail shrink releases are appended to
    ``released``, the kernel WARNs a helper raises (XDP-ADJ-008) to ``warns``.
    ``kernel`` selects the helpers' version-gated behaviour
    (:func:`reference.xdp.arch.xdp_semantics`).
    """
    if not isinstance(ops, VerifiedProgram):
        validate(ops)
    records: list[dict[str, Any]] = []
    op_rules: list[tuple[str, ...]] = []
    for op in ops:
        name = op["op"]
        mark = len(trace) if trace is not None else 0
        if name == "return":
            action = int(op["action"]) & 0xFFFFFFFF
            emit(trace, "XDP-PROG-003", "program returns", action=action)
            return ProgramRun(action, tuple(records), tuple(op_rules))
        if name == "adjust_head":
            records.append({"op": name, "rc": bpf_xdp_adjust_head(xdp, int(op["delta"]),
                                                                  trace=trace)})
        elif name == "adjust_meta":
            records.append({"op": name, "rc": bpf_xdp_adjust_meta(xdp, int(op["delta"]),
                                                                  trace=trace)})
        elif name == "adjust_tail":
            records.append({"op": name, "rc": bpf_xdp_adjust_tail(
                xdp, int(op["delta"]), released=released, kernel=kernel, warns=warns,
                trace=trace)})
        elif name == "write":
            records.append({"op": name, "rc": _write(xdp, int(op["offset"]),
                                                     _bytes(op["data"]), trace)})
        elif name == "get_buff_len":
            records.append({"op": name, "rc": 0, "len": bpf_xdp_get_buff_len(xdp)})
        else:
            records.append(_kfunc(str(op["name"]), metadata_ops, ctx, trace))
        if trace is not None:
            op_rules.append(tuple(trace.rules()[mark:]))
    emit(trace, "XDP-PROG-003", "no return op: XDP_PASS")
    return ProgramRun(int(XdpAction.XDP_PASS), tuple(records), tuple(op_rules))


def _write(xdp: XdpBuff, offset: int, data: bytes, trace: Trace | None) -> int:
    """XDP-PROG-002: a verified program checks bounds first and skips an unsafe store."""
    start = xdp.data + offset
    low = xdp.data if xdp_data_meta_unsupported(xdp) else xdp.data_meta
    if start < low or start + len(data) > xdp.data_end:
        emit(trace, "XDP-PROG-002", "store out of bounds: skipped", start=start,
             length=len(data), low=low, data_end=xdp.data_end)
        return -errno.ERANGE
    page = xdp._page()
    page.data[start : start + len(data)] = data
    return 0


def _kfunc(name: str, ops: kfuncs.XdpMetadataOps | None, ctx: object,
           trace: Trace | None) -> dict[str, Any]:
    result: kfuncs.KfuncResult
    if name == "rx_timestamp":
        result = kfuncs.bpf_xdp_metadata_rx_timestamp(ctx, ops, trace)
    elif name == "rx_hash":
        result = kfuncs.bpf_xdp_metadata_rx_hash(ctx, ops, trace)
    else:
        result = kfuncs.bpf_xdp_metadata_rx_vlan_tag(ctx, ops, trace)
    record: dict[str, Any] = {"op": "kfunc", "name": name, "rc": result.rc}
    record.update(zip(_OUTPUT_NAMES[name], result.outputs(), strict=True))
    return record


def _bytes(value: object) -> bytes:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, str):
        try:
            return bytes.fromhex(value)
        except ValueError:
            pass
    raise InvalidConfig("write data must be bytes or a hex string", field="data", value=value,
                        rule="XDP-PROG-001")

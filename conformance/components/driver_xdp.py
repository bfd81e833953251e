"""Shared by the driver components that run an op list on a real driver's buffers
(``veth``, ``tun``): the per-packet run and the paths a live kernel leaves unspecified."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from conformance.readable import kfunc_result_text, rc_text
from conformance.scenario import Scenario
from reference.kfuncs import XdpMetadataOps
from reference.trace import Trace
from reference.xdp import program as prog
from reference.xdp.actions import XdpAction
from reference.xdp.buff import XdpBuff, xdp_get_buff_len, xdp_init_buff, xdp_prepare_buff
from reference.xdp.frame import xdp_convert_buff_to_frame, xdp_get_frame_len
from reference.xdp.mem import MemType
from reference.xdp.memory import Page
from reference.xdp.rxq import NetDev, XdpRxqInfo


def run_on_buffer(
    frame: bytes, ops: tuple[Mapping[str, Any], ...], *, headroom: int, frame_sz: int,
    metadata_ops: XdpMetadataOps | None, ctx: Callable[[XdpBuff], object] | None,
    meta_valid: bool = True, trace: Trace | None = None,
) -> tuple[dict[str, Any], prog.ProgramRun, int | None]:
    """Run ``ops`` on ``frame`` laid out at ``headroom`` in a ``frame_sz`` buffer.

    ``ctx`` builds the driver's per-packet kfunc context from the buffer; ``meta_valid``
    is what the driver's ``xdp_prepare_buff`` call says about metadata support; ``trace``
    records the program's and the conversion's decisions (explain).
    Returns the packet observables, the run, and for XDP_TX/REDIRECT the converted
    frame's length (None when the conversion fails).
    """
    rxq = XdpRxqInfo(dev=NetDev(ifindex=2))
    rxq.mem.type = MemType.MEM_TYPE_PAGE_SHARED
    xdp = XdpBuff()
    xdp_init_buff(xdp, frame_sz, rxq)
    page = Page.zeroed(frame_sz)
    xdp_prepare_buff(xdp, page, 0, headroom, len(frame), meta_valid)
    page.data[headroom : headroom + len(frame)] = frame
    run = prog.run_program(ops, xdp, metadata_ops=metadata_ops,
                           ctx=None if ctx is None else ctx(xdp), trace=trace)
    frame_len: int | None = None
    if run.action in (3, 4):
        xdpf = xdp_convert_buff_to_frame(xdp, trace=trace)
        frame_len = None if xdpf is None else xdp_get_frame_len(xdpf)
    packet = {"ops": list(run.records), "action": run.action, "data": xdp.linear(),
              "meta": xdp.metadata(), "len": xdp_get_buff_len(xdp)}
    return packet, run, frame_len


#: The rule that governs an op the reference traced nothing for (it succeeded quietly).
_OP_RULES = {"adjust_head": "XDP-ADJ-002", "adjust_meta": "XDP-ADJ-005",
             "adjust_tail": "XDP-ADJ-006", "write": "XDP-PROG-002",
             "get_buff_len": "XDP-BUFF-008", "kfunc": "KFUNC-CALL-001"}

#: The sample program explain runs when the user gives none: the three metadata kfuncs,
#: then XDP_PASS, so a driver's kfunc answers show.
EXPLAIN_PROGRAM: tuple[Mapping[str, Any], ...] = (
    {"op": "kfunc", "name": "rx_hash"}, {"op": "kfunc", "name": "rx_timestamp"},
    {"op": "kfunc", "name": "rx_vlan_tag"}, {"op": "return", "action": 2})


#: The frame explain sends when the user gives no capture: IPv4/TCP, 54 bytes.
EXPLAIN_FRAME = bytes.fromhex("0200000000020200000000010800450000280001000040068e93c0000201"
                              "c633640703e800500000000000000000500220009f6e0000")


def with_explain_defaults(scenario: Scenario) -> tuple[Scenario, list[str]]:
    """A software driver's explain input, with :data:`EXPLAIN_FRAME` when it has no frames
    and :data:`EXPLAIN_PROGRAM` when it has no program, and the notes saying so."""
    notes: list[str] = []
    if not scenario.frames:
        scenario = attrs.evolve(scenario, frames=(EXPLAIN_FRAME,))
        notes.append("no capture given: one 54-byte IPv4/TCP frame")
    if scenario.program is None and not scenario.per_packet_programs:
        scenario = attrs.evolve(scenario, program=EXPLAIN_PROGRAM)
        notes.append("no --program given: rx_hash, rx_timestamp, rx_vlan_tag, then XDP_PASS")
    return scenario, notes


def action_name(action: int) -> str:
    """``XDP_PASS`` for 2; an action outside ``enum xdp_action`` by its number."""
    try:
        return XdpAction(action).name
    except ValueError:
        return f"unknown action {action}"


def narrate_ops(ops: tuple[Mapping[str, Any], ...], run: prog.ProgramRun,
                kfunc_rules: Mapping[str, tuple[str, ...]]) -> list[str]:
    """One line per op the program ran: what it asked, its return code by kernel name
    (a kfunc's values too), and the rules the reference applied to it; ``kfunc_rules``
    are the driver's own rules for each kfunc's answer."""
    lines = []
    for j, (op, record) in enumerate(zip(ops, run.records, strict=False)):
        name = str(op["op"])
        rules = list(run.op_rules[j]) if j < len(run.op_rules) else []
        if name == "kfunc":
            kfunc = str(op["name"])
            text = kfunc_result_text(kfunc, record)
            rules = [r for r in rules if r != "KFUNC-API-006"] + list(kfunc_rules.get(kfunc, ()))
        elif name == "get_buff_len":
            text = f"get_buff_len -> {record['len']} bytes"
        elif name == "write":
            text = (f"write {len(bytes.fromhex(str(op['data'])))} bytes at offset "
                    f"{op['offset']} -> rc {rc_text(int(record['rc']))}")
        else:
            text = f"{name} {int(op['delta']):+d} -> rc {rc_text(int(record['rc']))}"
        rules = [r for r in rules if r != "XDP-ADJ-001"] or [_OP_RULES[name]]
        lines.append(f"  op {j}: {text} ({', '.join(dict.fromkeys(rules))})")
    verdict = action_name(run.action)
    lines.append(f"  program -> {verdict} (XDP-PROG-003, XDP-ACT-001)")
    return lines

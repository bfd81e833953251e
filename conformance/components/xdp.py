"""The ``xdp`` component: an XDP program (op list) run on each frame by a generic driver.

config:  ``frame_sz`` (default 4096), ``headroom`` (default 256 = XDP_PACKET_HEADROOM),
         ``meta_valid`` (default true: the driver supports metadata), ``frag_size``
         (default 0: linear buffers only; else ``rxq->frag_size`` and the size of each
         frag page), ``linear_max`` (with ``frag_size``: bytes kept in the linear part,
         the rest goes to frags), ``ops`` (optional kfunc results, as in the ``kfunc``
         component's device ops; absent: every kfunc runs its default body).
frames:  the packets; ``program``/``per_packet_programs``: the op lists.
observables: ``packets[i]`` = ``{"ops": [record, ...], "action": int, "verdict": name,
         "warned": bool, "data": hex, "meta": hex, "frags": [hex, ...], "len": int,
         "released": int, "frame": null | {"rc": int, "headroom": int, "metasize": int,
         "len": int}}``.  ``verdict`` is what the driver does with the action; ``frame``
         is the xdp_frame conversion, attempted for XDP_TX and XDP_REDIRECT only.
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Mapping
from typing import Any

from hypothesis import strategies as st

from conformance.components import Component
from conformance.components.kfunc import KFUNCS, _ops
from conformance.components.kfunc import _result as kfunc_result
from conformance.scenario import Scenario
from conformance.strategies.frames import ethernet_frames
from reference.kernel import resolve_kernel
from reference.trace import Trace
from reference.xdp import program as prog
from reference.xdp.actions import XdpAction, classify_action
from reference.xdp.arch import KernelSemantics, xdp_semantics
from reference.xdp.buff import (
    XdpBuff,
    xdp_buff_add_frag,
    xdp_get_buff_len,
    xdp_get_shared_info_from_buff,
    xdp_init_buff,
    xdp_prepare_buff,
)
from reference.xdp.frame import xdp_convert_buff_to_frame
from reference.xdp.mem import MemReturn, MemType
from reference.xdp.memory import Page
from reference.xdp.rxq import NetDev, XdpRxqInfo

PASS_PROGRAM: tuple[Mapping[str, Any], ...] = ({"op": "return", "action": 2},)


def semantics_of(scenario: Scenario) -> KernelSemantics:
    """The XDP-core behaviour of the scenario's kernel (XDP-ADJ-008, XDP-ADJ-010,
    XDP-BUFF-006 version gates)."""
    return xdp_semantics(resolve_kernel(scenario.kernel))


def _setup(scenario: Scenario, frame: bytes) -> tuple[XdpBuff, list[MemReturn]]:
    cfg = scenario.config
    frame_sz = int(cfg.get("frame_sz", 4096))
    headroom = int(cfg.get("headroom", 256))
    frag_size = int(cfg.get("frag_size", 0))
    rxq = XdpRxqInfo(dev=NetDev(ifindex=2), frag_size=frag_size)
    rxq.mem.type = MemType.MEM_TYPE_PAGE_POOL
    xdp = XdpBuff()
    xdp_init_buff(xdp, frame_sz, rxq)
    linear = frame
    rest = b""
    if frag_size:
        cut = int(cfg.get("linear_max", len(frame)))
        linear, rest = frame[:cut], frame[cut:]
    page = Page.zeroed(frame_sz)
    xdp_prepare_buff(xdp, page, 0, headroom, len(linear), bool(cfg.get("meta_valid", True)))
    page.data[headroom : headroom + len(linear)] = linear
    released: list[MemReturn] = []
    while rest:
        chunk, rest = rest[:frag_size], rest[frag_size:]
        frag = Page.zeroed(frag_size)
        frag.data[: len(chunk)] = chunk
        if not xdp_buff_add_frag(xdp, frag, 0, len(chunk), frag_size, released=released,
                                 kernel=semantics_of(scenario)):
            raise ValueError("frame needs more than MAX_SKB_FRAGS frags")
    return xdp, released


def _run_packet(scenario: Scenario, index: int, trace: Trace | None) -> tuple[dict[str, Any],
                                                                              prog.ProgramRun]:
    frame = scenario.frames[index]
    xdp, released = _setup(scenario, frame)
    ops = scenario.program_for(index) or PASS_PROGRAM
    metadata_ops = _ops(scenario.config["ops"]) if "ops" in scenario.config else None
    run = prog.run_program(ops, xdp, metadata_ops=metadata_ops, released=released,
                           kernel=semantics_of(scenario), trace=trace)
    frame_obs: dict[str, Any] | None = None
    xmit_failed = False
    if run.action in (XdpAction.XDP_TX, XdpAction.XDP_REDIRECT):
        xdpf = xdp_convert_buff_to_frame(xdp, trace=trace)
        if xdpf is None:
            xmit_failed = True
            frame_obs = {"rc": -errno.ENOSPC, "headroom": None, "metasize": None, "len": None}
        else:
            frame_obs = {"rc": 0, "headroom": xdpf.headroom, "metasize": xdpf.metasize,
                         "len": xdpf.len}
    verdict = classify_action(run.action, xmit_failed=xmit_failed, trace=trace)
    frags = []
    if xdp.flags & 1:
        frags = [f.view() for f in xdp_get_shared_info_from_buff(xdp).valid_frags()]
    return {
        "ops": list(run.records),
        "action": run.action,
        "verdict": verdict.effective.name,
        "warned": verdict.warned,
        "data": xdp.linear(),
        "meta": xdp.metadata(),
        "frags": frags,
        "len": xdp_get_buff_len(xdp),
        "released": len(released),
        "frame": frame_obs,
    }, run


def expected(scenario: Scenario) -> dict[str, Any]:
    return {"packets": [_run_packet(scenario, i, None)[0] for i in range(len(scenario.frames))]}


_FIELD_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("packets[*].verdict", ("XDP-ACT-002", "XDP-ACT-005")),
    ("packets[*].warned", ("XDP-ACT-002",)),
    ("packets[*].action", ("XDP-PROG-003", "XDP-ACT-004")),
    ("packets[*].frame*", ("XDP-FRAME-002",)),
    ("packets[*].meta", ("XDP-ADJ-003", "XDP-ADJ-005")),
    ("packets[*].len", ("XDP-BUFF-008",)),
    ("packets[*].frags*", ("XDP-ADJ-009",)),
    ("packets[*].released", ("XDP-ADJ-009",)),
    ("packets[*].data", ("XDP-ADJ-002", "XDP-ADJ-006")),
    ("packets[*].ops*", ("XDP-PROG-001",)),
)


def attribute(scenario: Scenario) -> Callable[[str], tuple[str, ...]]:
    """For an op's record, the rules the reference applied while that op ran; for the
    verdict, the branch of the driver's switch that decided it."""
    runs: list[tuple[list[str], prog.ProgramRun]] = []
    for index in range(len(scenario.frames)):
        trace = Trace()
        _, run = _run_packet(scenario, index, trace)
        runs.append((trace.rules(), run))

    def rules(path: str) -> tuple[str, ...]:
        if not path.startswith("packets["):
            return ()
        index = int(path.removeprefix("packets[").partition("]")[0])
        if index >= len(runs):
            return ()
        applied_rules, run = runs[index]
        if path.endswith(("].verdict", "].warned")):
            return tuple([r for r in applied_rules if r.startswith("XDP-ACT-")][-1:])
        _, sep, tail = path.partition("].ops[")
        if not sep:
            return ()
        op_index = int(tail.partition("]")[0])
        op_rules = run.op_rules[op_index] if op_index < len(run.op_rules) else ()
        decisive = [r for r in op_rules if r != "XDP-ADJ-001"]
        return tuple(decisive[-1:]) or tuple(op_rules[-1:])

    return rules


def explain(scenario: Scenario) -> str:
    """Each packet's trip through the program and the driver's verdict, rule by rule."""
    lines = []
    for i in range(len(scenario.frames)):
        trace = Trace()
        observed, _ = _run_packet(scenario, i, trace)
        lines.append(f"packet {i}: {len(scenario.frames[i])} bytes -> {observed['verdict']} "
                     f"(action {observed['action']}), {observed['len']} bytes after the program")
        lines += ["  " + event.render() for event in trace]
    return "\n".join(lines)


def applied(scenario: Scenario) -> set[str]:
    trace = Trace()
    for i in range(len(scenario.frames)):
        _run_packet(scenario, i, trace)
    return set(trace.rules())


COMPONENT = Component(name="xdp", expected=expected, field_rules=_FIELD_RULES,
                      attribute=attribute, applied=applied)


# --- strategies ---------------------------------------------------------------------------

_DELTAS = st.one_of(st.integers(-300, 300), st.sampled_from([-256, -255, -240, -14, 0, 4, 8,
                                                             252, 256, 2**31 - 1, -(2**31)]))


@st.composite
def op_lists(draw: st.DrawFn, *, kfuncs: bool = True) -> list[dict[str, Any]]:
    """Short programs: adjusts near their bounds, stores, kfunc calls, a return."""
    ops: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(["adjust_head", "adjust_meta", "adjust_tail", "write",
                                     "get_buff_len", *(["kfunc"] if kfuncs else [])]))
        if kind.startswith("adjust"):
            delta = draw(st.sampled_from([-260, -256, -252, -36, -32, -8, -6, -4, -3, 4, 8])
                         if kind == "adjust_meta" else _DELTAS)
            ops.append({"op": kind, "delta": delta})
        elif kind == "write":
            ops.append({"op": "write", "offset": draw(st.integers(-16, 80)),
                        "data": draw(st.binary(min_size=1, max_size=8)).hex()})
        elif kind == "kfunc":
            ops.append({"op": "kfunc", "name": draw(st.sampled_from(KFUNCS))})
        else:
            ops.append({"op": kind})
    if draw(st.integers(0, 9)):
        action = draw(st.sampled_from([0, 1, 2, 2, 3, 3, 4, 5, 2**32 - 1]))
        ops.append({"op": "return", "action": action})
    return ops


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    """Frames in linear or multi-buffer xdp_buffs, one program, some per-packet ones."""
    frames = draw(st.lists(ethernet_frames(), min_size=1, max_size=3))
    config: dict[str, Any] = {
        "frame_sz": draw(st.sampled_from([2048, 4096])),
        "headroom": draw(st.sampled_from([256, 256, 0, 40, 64, 192])),
        "meta_valid": draw(st.booleans() | st.just(True)),
    }
    longest = max(len(f) for f in frames)
    room = config["frame_sz"] - config["headroom"] - 320
    if longest > room or draw(st.integers(0, 3)) == 0:
        config["frag_size"] = draw(st.sampled_from([1024, 2048, 4096]))
        config["linear_max"] = draw(st.integers(14, max(14, min(room, 200))))
    if draw(st.booleans()):
        config["ops"] = {name: draw(kfunc_result(name))
                         for name in draw(st.lists(st.sampled_from(KFUNCS), unique=True))}
    per_packet = {}
    if len(frames) > 1 and draw(st.booleans()):
        per_packet[draw(st.integers(0, len(frames) - 1))] = tuple(draw(op_lists()))
    in_frags = len(frames[0]) - config.get("linear_max", len(frames[0]))
    if in_frags > 0 and draw(st.booleans()):
        # Shrink by exactly the frag bytes (or one more): the last frag goes away.
        delta = -(in_frags + draw(st.sampled_from([0, 1, 2])))
        per_packet[0] = ({"op": "adjust_tail", "delta": delta}, {"op": "get_buff_len"},
                         *draw(op_lists()))
    return Scenario(component="xdp", config=config, frames=tuple(frames),
                    program=tuple(draw(op_lists())), per_packet_programs=per_packet,
                    rules=("XDP-ADJ-002", "XDP-ADJ-005", "XDP-ADJ-006", "XDP-FRAME-002",
                           "XDP-ACT-002", "XDP-PROG-002"))

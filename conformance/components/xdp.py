"""The ``xdp`` component: an XDP program (op list) run on each frame by a generic driver.

config:  ``frame_sz`` (default 4096), ``headroom`` (default 256 = XDP_PACKET_HEADROOM),
         ``meta_valid`` (default true: the driver supports metadata), ``frag_size``
         (default 0: linear buffers only; else ``rxq->frag_size`` and the size of each
         frag page), ``linear_max`` (with ``frag_size``: bytes kept in the linear part,
         the rest goes to frags), ``ops`` (optional kfunc results, as in the ``kfunc``
         component's device ops; absent: every kfunc runs its default body),
         ``mem_type`` (default 2, MEM_TYPE_PAGE_POOL; 0 page_frag, 1 order-0 pages:
         the memory model the queue is registered with), ``coalesce`` (default false;
         true: the frags are consecutive pieces of one page, so each coalesces into the
         previous one and its reference goes back, and the queue's frag_size is 0).
frames:  the packets; ``program``/``per_packet_programs``: the op lists.
observables: ``packets[i]`` = ``{"ops": [record, ...], "action": int, "verdict": name,
         "warned": bool, "data": hex, "meta": hex, "frags": [hex, ...], "len": int,
         "released": int, "returns": [name, ...], "kernel_warns": int,
         "frame": null | {"rc": int,
         "headroom": int, "metasize": int, "len": int}}``.  ``verdict`` is what the driver
         does with the action; ``frame`` is the xdp_frame conversion, attempted for
         XDP_TX and XDP_REDIRECT only;
         ``returns`` names the function each released frag went back through
         (``page_pool_put_full_netmem``, ``page_frag_free``, ``put_page``; XDP-MEM-002);
         ``kernel_warns`` counts the WARNs registering the queue and building the buffer
         raised (none for a correct driver: XDP-MEM-005, XDP-MEM-006).
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Mapping
from typing import Any

from hypothesis import event
from hypothesis import strategies as st

from conformance.components import Component
from conformance.components.kfunc import KFUNCS, _ops
from conformance.components.kfunc import _result as kfunc_result
from conformance.readable import config_text
from conformance.scenario import Scenario
from conformance.strategies.frames import ethernet_frames
from reference.errors import StateViolation
from reference.kernel import resolve_kernel
from reference.trace import Trace
from reference.xdp import program as prog
from reference.xdp.actions import XdpAction, classify_action
from reference.xdp.arch import X86_64, KernelSemantics, xdp_semantics
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
from reference.xdp.rxq import NetDev, XdpRxqInfo, xdp_rxq_info_reg, xdp_rxq_info_reg_mem_model
from reference.xdp.warn import KernelWarn

#: The allocator a page_pool memory model is registered with (only its presence counts).
_POOL = object()

PASS_PROGRAM: tuple[Mapping[str, Any], ...] = ({"op": "return", "action": 2},)


def semantics_of(scenario: Scenario) -> KernelSemantics:
    """The XDP-core behaviour of the scenario's kernel (XDP-ADJ-008, XDP-ADJ-010,
    XDP-BUFF-006 version gates)."""
    return xdp_semantics(resolve_kernel(scenario.kernel))


def _setup(scenario: Scenario, frame: bytes,
           trace: Trace | None = None) -> tuple[XdpBuff, list[MemReturn], int]:
    """The buffer the driver hands the program, the frags it returned while building it,
    and how many kernel WARNs building it raised."""
    cfg = scenario.config
    frame_sz = int(cfg.get("frame_sz", 4096))
    headroom = int(cfg.get("headroom", 256))
    frag_size = int(cfg.get("frag_size", 0))
    coalesce = bool(cfg.get("coalesce", False))
    # Registered the way a driver does it (XDP-MEM-005, XDP-MEM-006): a page_pool
    # queue by default, or the page_frag / order-0 models some drivers use.  A driver
    # that carves its frags from one page does not let programs grow them (frag_size 0).
    rxq = XdpRxqInfo()
    warns: list[KernelWarn] = []
    mem_type = int(cfg.get("mem_type", MemType.MEM_TYPE_PAGE_POOL))
    if (xdp_rxq_info_reg(rxq, NetDev(ifindex=2), 0, 0 if coalesce else frag_size, warns=warns)
            or xdp_rxq_info_reg_mem_model(rxq, mem_type, _POOL, warns=warns)):
        raise StateViolation("registering the RX queue failed", obj="xdp_rxq_info",
                             rule="XDP-MEM-006")
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
    # XDP-BUFF-007: consecutive pieces of one page coalesce into the previous frag.
    shared = Page.zeroed(len(rest)) if coalesce else None
    offset = 0
    while rest:
        chunk, rest = rest[:frag_size], rest[frag_size:]
        frag = shared if shared is not None else Page.zeroed(frag_size)
        at = offset if shared is not None else 0
        frag.data[at : at + len(chunk)] = chunk
        if not xdp_buff_add_frag(xdp, frag, at, len(chunk), frag_size, released=released,
                                 kernel=semantics_of(scenario), trace=trace):
            raise ValueError("frame needs more than MAX_SKB_FRAGS frags")
        offset += len(chunk)
    return xdp, released, len(warns)


def _run_packet(scenario: Scenario, index: int, trace: Trace | None) -> tuple[dict[str, Any],
                                                                              prog.ProgramRun]:
    frame = scenario.frames[index]
    xdp, released, warns = _setup(scenario, frame, trace)
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
        "returns": [ret.path.value for ret in released],
        "kernel_warns": warns,
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
    ("packets[*].returns*", ("XDP-MEM-002",)),
    ("packets[*].kernel_warns", ("XDP-MEM-005", "XDP-MEM-006")),
    ("packets[*].data", ("XDP-ADJ-002", "XDP-ADJ-006")),
    ("packets[*].ops*", ("XDP-PROG-001",)),
)


_FRAG_RULES = frozenset({"XDP-BUFF-007", "XDP-ADJ-007", "XDP-ADJ-008", "XDP-ADJ-009",
                         "XDP-ADJ-010", "XDP-MEM-002"})


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
        if any(part in path for part in ("].frags", "].released", "].returns")):
            # The frags are decided by how the driver built them (coalescing,
            # XDP-BUFF-007) and by the program's tail adjustments (XDP-ADJ-007..010).
            return tuple(dict.fromkeys(r for r in applied_rules if r in _FRAG_RULES))
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
    from conformance.components.driver_xdp import narrate_ops

    lines = [f"xdp: generic driver; {config_text(scenario.config)}"]
    for i in range(len(scenario.frames)):
        trace = Trace()
        observed, run = _run_packet(scenario, i, trace)
        decided = [e.rule for e in trace if e.rule.startswith("XDP-ACT-")][-1:]
        lines.append(f"packet {i}: {len(scenario.frames[i])} bytes -> {observed['verdict']} "
                     f"(action {observed['action']}), {observed['len']} bytes after the program"
                     f" ({', '.join(['XDP-PROG-003', *decided])})")
        lines += ["  " + event.render() for event in trace]
        lines += narrate_ops(scenario.program_for(i) or PASS_PROGRAM, run, {})[:-1]
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
def edge_ops(draw: st.DrawFn, *, headroom: int, frame_sz: int, linear: int,
             frags: tuple[int, ...] = (), frag_size: int = 0,
             meta_valid: bool = True) -> list[dict[str, Any]]:
    """A program aimed at the helpers' bounds for one buffer layout: metadata written
    and then carried by a head adjustment (XDP-ADJ-003), the head moved to exactly the
    ``xdp_frame`` reserve or one past it (XDP-ADJ-002), the tail grown to exactly
    ``xdp_data_hard_end`` or one past (XDP-ADJ-006), or, with frags, shrunk by exactly
    the last frag, the frag bytes or one either side, and grown to exactly the last
    frag's tailroom (XDP-ADJ-008 .. XDP-ADJ-010)."""
    room = headroom - X86_64.sizeof_xdp_frame
    length = linear  # data_end stays where it is while the head moves
    ops: list[dict[str, Any]] = []
    meta = 0
    if meta_valid and room >= 4 and draw(st.booleans()):
        meta = draw(st.sampled_from([4, 8, min(252, room - room % 4)]))
        ops.append({"op": "adjust_meta", "delta": -meta})
        first = draw(st.integers(0, 254))  # no zero bytes: a lost copy must show
        ops.append({"op": "write", "offset": -meta,
                    "data": bytes((first + i) % 255 + 1 for i in range(min(meta, 8))).hex()})
    head = room - meta
    # Down to the xdp_frame reserve, or up to leave exactly ETH_HLEN bytes (XDP-ADJ-002).
    step = draw(st.sampled_from([-head, -head - 1, -head + 1, -(head // 2), linear - 14,
                                 linear - 13]))
    ops.append({"op": "adjust_head", "delta": step})
    if -head <= step <= linear - 14:
        linear -= step
    if frags:
        last, total = frags[-1], sum(frags)
        delta = draw(st.sampled_from([-last, -last + 1, -last - 1, -total, -total + 1,
                                      -total - 1, frag_size - last, frag_size - last + 1,
                                      -(linear + total - 14), -(linear + total - 13)]))
    else:
        grow = frame_sz - X86_64.shinfo_reserved - (headroom + length)
        delta = draw(st.sampled_from([grow, grow + 1, grow - 1, -(linear - 14),
                                      -(linear - 13)]))
    ops.append({"op": "adjust_tail", "delta": delta})
    ops.append({"op": "get_buff_len"})
    ops.append({"op": "return", "action": draw(st.sampled_from([1, 2, 3, 4]))})
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
    if draw(st.integers(0, 3)) == 0:
        config["mem_type"] = draw(st.sampled_from([MemType.MEM_TYPE_PAGE_SHARED,
                                                   MemType.MEM_TYPE_PAGE_ORDER0]))
    longest = max(len(f) for f in frames)
    room = config["frame_sz"] - config["headroom"] - 320
    if longest > room or draw(st.integers(0, 3)) == 0:
        config["frag_size"] = draw(st.sampled_from([1024, 2048, 4096]))
        config["linear_max"] = draw(st.integers(14, max(14, min(room, 200))))
        if draw(st.integers(0, 3)) == 0:
            # Small pieces of one page: even a short frame's frags coalesce into one
            # (XDP-BUFF-007).
            event("xdp: frags coalesced")
            config["coalesce"] = True
            config["frag_size"] = draw(st.sampled_from([16, 32, 64]))
            config["linear_max"] = draw(st.integers(14, 34))
    if draw(st.booleans()):
        config["ops"] = {name: draw(kfunc_result(name))
                         for name in draw(st.lists(st.sampled_from(KFUNCS), unique=True))}
    per_packet = {}
    if len(frames) > 1 and draw(st.booleans()):
        per_packet[draw(st.integers(0, len(frames) - 1))] = tuple(draw(op_lists()))
    in_frags = len(frames[0]) - config.get("linear_max", len(frames[0]))
    if draw(st.integers(0, 2)) == 0:
        event("xdp: program at the helpers' bounds")
        frag_size = config.get("frag_size", 0)
        linear = len(frames[0]) - max(in_frags, 0)
        frags = tuple(min(frag_size, in_frags - at) for at in range(0, max(in_frags, 0),
                                                                      frag_size or 1))
        if config.get("coalesce") and frags:
            frags = (in_frags,)
        per_packet[0] = tuple(draw(edge_ops(
            headroom=config["headroom"], frame_sz=config["frame_sz"], linear=linear,
            frags=frags, frag_size=frag_size, meta_valid=config["meta_valid"])))
    elif in_frags > 0 and draw(st.booleans()):
        # Shrink by exactly the frag bytes (or one more): the last frag goes away.
        delta = -(in_frags + draw(st.sampled_from([0, 1, 2])))
        per_packet[0] = ({"op": "adjust_tail", "delta": delta}, {"op": "get_buff_len"},
                         *draw(op_lists()))
    return Scenario(component="xdp", config=config, frames=tuple(frames),
                    program=tuple(draw(op_lists())), per_packet_programs=per_packet,
                    rules=("XDP-ADJ-002", "XDP-ADJ-005", "XDP-ADJ-006", "XDP-FRAME-002",
                           "XDP-ACT-002", "XDP-PROG-002"))

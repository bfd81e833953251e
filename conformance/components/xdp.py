"""The ``xdp`` component: an XDP program (op list) run on each frame by a generic driver.

config:  ``frame_sz`` (default 4096), ``headroom`` (default 256 = XDP_PACKET_HEADROOM),
         ``meta_valid`` (default true: the driver supports metadata), ``frag_size``
         (default 0: linear buffers only; else ``rxq->frag_size`` and the size of each
         frag page), ``linear_max`` (with ``frag_size``: bytes kept in the linear part,
         the rest goes to frags), ``ops`` (optional kfunc results, as in the ``kfunc``
         component's device ops; absent: every kfunc runs its default body),
         ``queue`` (default 0: the queue index registered), ``mem_type`` (default 2,
         MEM_TYPE_PAGE_POOL; 0 page_frag, 1 order-0 pages:
         the memory model the queue is registered with), ``coalesce`` (default false;
         true: the frags are consecutive pieces of one page, so each coalesces into the
         previous one and its reference goes back, and the queue's frag_size is 0),
         ``coalesce_page`` (with ``coalesce``: the bytes of each page the pieces are cut
         from, a new page after each; absent: one page holds them all),
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

import attrs
from hypothesis import event
from hypothesis import strategies as st

from conformance.components import Component
from conformance.components.kfunc import KFUNCS, _ops
from conformance.components.kfunc import _result as kfunc_result
from conformance.readable import config_text
from conformance.scenario import Scenario
from conformance.strategies.frames import ethernet_frames
from conformance.targets.base import NotApplicable
from reference.errors import InvalidConfig, StateViolation
from reference.kernel import gate, resolve_kernel
from reference.trace import Trace, TraceEvent, emit
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
    xdp_return_buff,
)
from reference.xdp.frame import (
    xdp_convert_buff_to_frame,
    xdp_convert_frame_to_buff,
    xdp_get_frame_len,
    xdp_return_frame,
    xdp_return_frame_bulk,
    xdp_return_frame_rx_napi,
)
from reference.xdp.helpers import s32
from reference.xdp.mem import MemReturn, MemType, XdpFrameBulk, xdp_flush_frame_bulk
from reference.xdp.memory import Page
from reference.xdp.rxq import (
    NetDev,
    XdpRxqInfo,
    xdp_md_rxq_fields,
    xdp_rxq_info_reg,
    xdp_rxq_info_reg_mem_model,
    xdp_rxq_info_unreg,
    xdp_rxq_info_unused,
)
from reference.xdp.warn import KernelWarn

#: The allocator a page_pool memory model is registered with (only its presence counts).
_POOL = object()

PASS_PROGRAM: tuple[Mapping[str, Any], ...] = ({"op": "return", "action": 2},)


def semantics_of(scenario: Scenario) -> KernelSemantics:
    """The XDP-core behaviour of the scenario's kernel (XDP-ADJ-008, XDP-ADJ-010,
    XDP-BUFF-006 version gates)."""
    return xdp_semantics(resolve_kernel(scenario.kernel))


def _rxq_ops(scenario: Scenario) -> list[Mapping[str, Any]]:
    """The driver's queue set-up calls: ``rxq_ops`` as given, or the registration every
    correct driver does (``xdp_rxq_info_reg``, then ``xdp_rxq_info_reg_mem_model`` of
    ``mem_type`` with an allocator)."""
    cfg = scenario.config
    if "rxq_ops" in cfg:
        return list(cfg["rxq_ops"])
    return [{"op": "reg", "queue": int(cfg.get("queue", 0))}, {"op": "reg_mem_model",
                            "mem_type": int(cfg.get("mem_type", MemType.MEM_TYPE_PAGE_POOL))}]


def _register(scenario: Scenario, warns: list[KernelWarn],
              trace: Trace | None) -> tuple[XdpRxqInfo, list[dict[str, Any]]]:
    """Run the queue set-up calls (XDP-MEM-005, XDP-MEM-006) on a new ``xdp_rxq_info``:
    the queue and one result per call (its return code, the WARNs it raised, whether it
    dropped a page_pool memory model, which the kernel then destroys)."""
    cfg = scenario.config
    # A driver that carves its frags from one page does not let programs grow them.
    default_frag = 0 if cfg.get("coalesce", False) else int(cfg.get("frag_size", 0))
    rxq = XdpRxqInfo()
    calls = []
    for op in _rxq_ops(scenario):
        before = len(warns)
        local = Trace()
        name = op["op"]
        if name == "reg":
            dev = NetDev(ifindex=2) if op.get("dev", True) else None
            rc = xdp_rxq_info_reg(rxq, dev, int(op.get("queue", 0)),
                                  int(op.get("frag_size", default_frag)), warns=warns,
                                  trace=local)
        elif name == "reg_mem_model":
            rc = xdp_rxq_info_reg_mem_model(
                rxq, int(op["mem_type"]), _POOL if op.get("allocator", True) else None,
                page_pool_compiled_in=bool(op.get("page_pool", True)), warns=warns,
                trace=local)
        elif name == "unreg":
            xdp_rxq_info_unreg(rxq, warns=warns, trace=local)
            rc = 0
        else:
            xdp_rxq_info_unused(rxq)
            rc = 0
        destroyed = any(dict(e.fields).get("page_pool_destroyed") for e in local)
        if trace is not None:
            trace.events.extend(local.events)
        calls.append({"op": name, "rc": rc, "warns": len(warns) - before,
                      "destroyed": destroyed})
    return rxq, calls


def _setup(scenario: Scenario, frame: bytes, trace: Trace | None = None
           ) -> tuple[XdpBuff, list[MemReturn], list[KernelWarn], list[dict[str, Any]]]:
    """The buffer the driver hands the program, the frags it returned while building it,
    the kernel WARNs registering the queue and building it raised, and the queue
    set-up calls' results."""
    cfg = scenario.config
    frame_sz = int(cfg.get("frame_sz", 4096))
    headroom = int(cfg.get("headroom", 256))
    frag_size = int(cfg.get("frag_size", 0))
    coalesce = bool(cfg.get("coalesce", False))
    hard_start = int(cfg.get("page_offset", 0))
    pfmemalloc = {int(i) for i in cfg.get("pfmemalloc", ())}
    warns: list[KernelWarn] = []
    rxq, calls = _register(scenario, warns, trace)
    xdp = XdpBuff()
    xdp_init_buff(xdp, frame_sz, rxq, trace=trace)
    linear = frame
    rest = b""
    if frag_size:
        cut = int(cfg.get("linear_max", len(frame)))
        linear, rest = frame[:cut], frame[cut:]
    # The buffer may sit in the second half of a split page (``page_offset``).
    page = Page.zeroed(hard_start + frame_sz)
    xdp_prepare_buff(xdp, page, hard_start, headroom, len(linear),
                     bool(cfg.get("meta_valid", True)), trace=trace)
    page.data[hard_start + headroom : hard_start + headroom + len(linear)] = linear
    released: list[MemReturn] = []
    # XDP-BUFF-007: consecutive pieces of one page coalesce into the previous frag.
    # XSK frags never coalesce (xsk_buff_add_frag passes try_coalesce false).
    # (xsk_buff_add_frag calls __xdp_buff_add_frag with try_coalesce false; its frags
    # are umem, user memory, never pfmemalloc.)
    xsk = rxq.mem.type == MemType.MEM_TYPE_XSK_BUFF_POOL
    if xsk:
        pfmemalloc = set()
    # With coalesce, the pieces are cut from pages of ``coalesce_page`` bytes (default: one
    # page for all): the first piece of each page takes a new slot, the rest of the page
    # coalesces into it (the kernel compares with the last slot only).
    page_bytes = int(cfg.get("coalesce_page", 0)) or len(rest)
    shared: Page | None = None
    offset = 0
    index = 0
    while rest:
        at = offset % page_bytes if coalesce else 0
        if coalesce and (shared is None or at == 0):
            shared = Page.zeroed(min(page_bytes, len(rest)),
                                 pfmemalloc=offset // page_bytes in pfmemalloc)
        size = min(frag_size, page_bytes - at) if coalesce else frag_size
        chunk, rest = rest[:size], rest[size:]
        frag = shared if shared is not None else Page.zeroed(frag_size,
                                                              pfmemalloc=index in pfmemalloc)
        frag.data[at : at + len(chunk)] = chunk
        if not xdp_buff_add_frag(xdp, frag, at, len(chunk), frag_size, released=released,
                                 try_coalesce=not xsk, kernel=semantics_of(scenario),
                                 trace=trace):
            # A generic driver cannot take the frame (xdp_buff_add_frag refuses the frag):
            # not a scenario the component describes.
            raise InvalidConfig("frame needs more than MAX_SKB_FRAGS frags", field="frames",
                                value=len(frame), rule="XDP-BUFF-007")
        offset += len(chunk)
        index += 1
    return xdp, released, warns, calls


@attrs.define
class _PacketRun:
    """One packet's answer and what the attribution needs: the rules applied while the
    driver built the buffer and the program ran, while the driver converted it to a frame,
    and while it gave its pages back."""

    observed: dict[str, Any]
    run: prog.ProgramRun
    rules: list[str]
    frame_rules: list[str]
    completion_rules: list[str]
    #: Pages per ``page_pool_put_netmem_bulk`` call the completion made (XDP-MEM-004).
    flushes: list[int]
    #: Every event, in order (explain).
    events: list[TraceEvent] = attrs.field(factory=list)


_FRAME_RETURNS = {"xdp_return_frame": xdp_return_frame,
                  "xdp_return_frame_rx_napi": xdp_return_frame_rx_napi}


def _returned(records: list[MemReturn]) -> list[dict[str, Any]]:
    return [{"path": r.path.value, "direct": r.napi_direct} for r in records]


def _run_packet(scenario: Scenario, index: int, bulk: XdpFrameBulk | None,
                traced: bool) -> tuple[_PacketRun, list[dict[str, Any]]]:
    frame = scenario.frames[index]
    trace = Trace() if traced else None
    xdp, released, warns, calls = _setup(scenario, frame, trace)
    ops = scenario.program_for(index) or PASS_PROGRAM
    metadata_ops = _ops(scenario.config["ops"]) if "ops" in scenario.config else None
    run = prog.run_program(ops, xdp, metadata_ops=metadata_ops, released=released,
                           kernel=semantics_of(scenario), warns=warns, trace=trace)
    flags = xdp.flags
    ingress_ifindex, rx_queue_index = xdp_md_rxq_fields(xdp.rxq)
    emit(trace, "XDP-PROG-004", "ctx fields read through xdp->rxq",
         ingress_ifindex=ingress_ifindex, rx_queue_index=rx_queue_index)
    frame_obs: dict[str, Any] | None = None
    xmit_failed = False
    frame_trace = Trace() if traced else None
    completion_trace = Trace()  # always: the bulk flushes are read from it
    completion: list[MemReturn] = []
    xdpf = None
    if run.action in (XdpAction.XDP_TX, XdpAction.XDP_REDIRECT):
        # XDP-FRAME-003's WARN joins kernel_warns; an XSK buffer is copied into a new
        # page and freed (XDP-FRAME-005): that free is the first of the completion.
        xdpf = xdp_convert_buff_to_frame(xdp, released=completion, warns=warns,
                                         trace=frame_trace)
        if xdpf is None:
            xmit_failed = True
            frame_obs = {"rc": -errno.ENOSPC, "headroom": None, "metasize": None, "len": None,
                         "mem_type": None, "frame_sz": None, "flags": None,
                         "data": None, "meta": None,
                         "frame_len": None, "back_headroom": None, "back_len": None}
        else:
            # What the remote end of a redirect (cpumap, devmap) reads back (XDP-FRAME-006).
            back = XdpBuff()
            xdp_convert_frame_to_buff(xdpf, back, trace=frame_trace)
            frame_obs = {"rc": 0, "headroom": xdpf.headroom, "metasize": xdpf.metasize,
                         "len": xdpf.len, "mem_type": xdpf.mem_type,
                         "frame_sz": xdpf.frame_sz, "flags": xdpf.flags,
                         "data": xdpf.payload(),
                         "meta": bytes(xdpf.page.data[xdpf.data - xdpf.metasize : xdpf.data]),
                         "frame_len": xdp_get_frame_len(xdpf),
                         "back_headroom": back.data - back.data_hard_start,
                         "back_len": xdp_get_buff_len(back)}
    verdict = classify_action(run.action, xmit_failed=xmit_failed, trace=trace)
    how = scenario.config.get("frame_return")
    if xdpf is not None and how is not None:
        # The TX completion gives the frame back (XDP-FRAME-007, XDP-MEM-004).
        if how == "xdp_return_frame_bulk" and bulk is not None:
            completion += xdp_return_frame_bulk(xdpf, bulk, trace=completion_trace)
        else:
            completion += _FRAME_RETURNS[how](xdpf, trace=completion_trace)
    elif verdict.dropped and scenario.config.get("drop_return", False):
        # A dropped packet's pages go back through xdp_return_buff (XDP-MEM-003).
        completion += xdp_return_buff(xdp, trace=completion_trace)
    frags = []
    if xdp.flags & 1:
        frags = [f.view() for f in xdp_get_shared_info_from_buff(xdp).valid_frags()]
    observed = {
        "ops": list(run.records),
        "action": run.action,
        "verdict": verdict.effective.name,
        "warned": verdict.warned,
        "data": xdp.linear(),
        "meta": xdp.metadata(),
        "frags": frags,
        "len": xdp_get_buff_len(xdp),
        "flags": flags,
        "ingress_ifindex": ingress_ifindex,
        "rx_queue_index": rx_queue_index,
        "released": len(released),
        "returns": [ret.path.value for ret in released],
        "returns_direct": [ret.napi_direct for ret in released],
        "kernel_warns": len(warns),
        "frame": frame_obs,
        "completion": _returned(completion),
    }
    return _PacketRun(observed, run, trace.rules() if trace is not None else [],
                      frame_trace.rules() if frame_trace is not None else [],
                      completion_trace.rules(), _flushes(completion_trace),
                      [*(trace or ()), *(frame_trace or ()), *completion_trace]), calls


def _run_all(scenario: Scenario, traced: bool) -> tuple[dict[str, Any], list[_PacketRun],
                                                         list[str]]:
    """Every packet in order (a bulk return queue spans them), then the last flush."""
    bulk = XdpFrameBulk() if scenario.config.get("frame_return") == "xdp_return_frame_bulk" \
        else None
    runs = []
    calls: list[dict[str, Any]] = []
    flushes: list[int] = []
    for i in range(len(scenario.frames)):
        packet, calls = _run_packet(scenario, i, bulk, traced)
        flushes += packet.flushes
        runs.append(packet)
    tail_trace = Trace()
    if bulk is not None and bulk.count:
        # The end of the TX completion: xdp_flush_frame_bulk of what is left.
        xdp_flush_frame_bulk(bulk, trace=tail_trace)
        flushes += _flushes(tail_trace)
    # The queue's set-up first, as it happened: the comparison's first differing field
    # is then the earliest decision that went wrong (a registration a device got wrong
    # shows in its result before in the packets returned through it).
    observed = {"rxq": calls, "packets": [r.observed for r in runs],
                "bulk_flushes": flushes}
    return observed, runs, tail_trace.rules()


def _flushes(trace: Trace) -> list[int]:
    """The pages of each ``page_pool_put_netmem_bulk`` call in ``trace`` (XDP-MEM-004)."""
    return [int(str(dict(e.fields)["pages"])) for e in trace
            if e.rule == "XDP-MEM-004" and "pages" in dict(e.fields)]


def expected(scenario: Scenario) -> dict[str, Any]:
    """The observables; not applicable where the kernel itself would write past a page
    (XDP-ADJ-008's unsigned tailroom, before 88b6b7f7b216, lets a frag that does not start
    its buffer grow beyond it: undefined behaviour the model refuses to predict, a
    StateViolation)."""
    try:
        return _run_all(scenario, traced=False)[0]
    except StateViolation as exc:
        kernel = resolve_kernel(scenario.kernel)
        if exc.rule != "XDP-ADJ-008" or gate(kernel, "XDP-ADJ-008"):
            raise
        raise NotApplicable(f"kernel {kernel}: {exc}: the kernel writes past the frag's "
                            "page here (before 88b6b7f7b216, XDP-ADJ-008); no prediction"
                            ) from None


_FIELD_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("packets[*].verdict", ("XDP-ACT-002", "XDP-ACT-005")),
    ("packets[*].warned", ("XDP-ACT-002",)),
    ("packets[*].action", ("XDP-PROG-003", "XDP-ACT-004")),
    ("packets[*].frame*", ("XDP-FRAME-002",)),
    ("packets[*].meta", ("XDP-ADJ-003", "XDP-ADJ-005")),
    ("packets[*].len", ("XDP-BUFF-008",)),
    ("packets[*].flags", ("XDP-BUFF-006",)),
    ("packets[*].ingress_ifindex", ("XDP-PROG-004", "XDP-MEM-005")),
    ("packets[*].rx_queue_index", ("XDP-PROG-004", "XDP-MEM-005")),
    ("packets[*].frags*", ("XDP-ADJ-009",)),
    ("packets[*].released", ("XDP-ADJ-009",)),
    ("packets[*].returns_direct*", ("XDP-ADJ-009", "XDP-BUFF-007")),
    ("packets[*].returns*", ("XDP-MEM-002",)),
    ("packets[*].completion*", ("XDP-FRAME-007", "XDP-MEM-003")),
    ("packets[*].kernel_warns", ("XDP-MEM-005", "XDP-MEM-006")),
    ("packets[*].data", ("XDP-ADJ-002", "XDP-ADJ-006")),
    ("packets[*].ops*", ("XDP-PROG-001",)),
    ("rxq*", ("XDP-MEM-005", "XDP-MEM-006")),
    ("bulk_flushes*", ("XDP-MEM-004",)),
)


_FRAG_RULES = frozenset({"XDP-BUFF-007", "XDP-ADJ-007", "XDP-ADJ-008", "XDP-ADJ-009",
                         "XDP-ADJ-010", "XDP-MEM-002"})
#: What decides ``xdp->flags``: the frag bits (XDP-BUFF-006, set while frags are added,
#: XDP-BUFF-007) and the shrink that makes the buffer linear again (XDP-ADJ-010).
_FLAG_RULES = ("XDP-ADJ-010", "XDP-BUFF-006", "XDP-BUFF-007")
#: Which frame field each rule writes: the in-place conversion (XDP-FRAME-004) with the
#: struct's 40-byte layout (XDP-FRAME-001), ``frame_sz`` as xdp_init_buff set it
#: (XDP-BUFF-003), ``flags`` as the buffer had them (XDP-BUFF-006), ``mem_type`` an
#: ``enum xdp_mem_type`` value (XDP-MEM-001).
_FRAME_FIELD_RULES: dict[str, tuple[str, ...]] = {
    "headroom": ("XDP-FRAME-004", "XDP-FRAME-001"),
    "metasize": ("XDP-FRAME-004",),
    "len": ("XDP-FRAME-004",),
    "data": ("XDP-FRAME-004",),
    "meta": ("XDP-FRAME-004",),
    "mem_type": ("XDP-FRAME-004", "XDP-MEM-001"),
    "frame_sz": ("XDP-FRAME-004", "XDP-BUFF-003"),
    "flags": ("XDP-FRAME-004", "XDP-BUFF-006"),
    "frame_len": ("XDP-FRAME-006",),
    "back_headroom": ("XDP-FRAME-006",),
    "back_len": ("XDP-FRAME-006",),
}
#: The rules that move the linear part's bytes (head, tail, the last frag's release).
_DATA_RULES = ("XDP-ADJ-003", "XDP-ADJ-006", "XDP-ADJ-010")


def _frame_rules(path: str, packet: _PacketRun) -> tuple[str, ...]:
    """A frame field's rules: how the conversion ended (XDP-FRAME-002 no headroom,
    XDP-FRAME-003 no tailroom, XDP-FRAME-005 an XSK copy), else the field's writer."""
    field = path.rpartition(".")[2]
    decided = [r for r in packet.frame_rules
               if r in ("XDP-FRAME-002", "XDP-FRAME-003", "XDP-FRAME-005")]
    if field == "rc" or "XDP-FRAME-005" in decided or not field:
        return tuple(decided[-1:])
    if field in ("frame_len", "back_headroom", "back_len"):
        return ("XDP-FRAME-006",)
    return _FRAME_FIELD_RULES.get(field, ())


def attribute(scenario: Scenario) -> Callable[[str], tuple[str, ...]]:
    """For an op's record, the rules the reference applied while that op ran; for the
    verdict, the branch of the driver's switch that decided it; for the other fields,
    the rules the reference applied to decide them, from its trace."""
    _, runs, tail_rules = _run_all(scenario, traced=True)

    def rules(path: str) -> tuple[str, ...]:
        if path.startswith("rxq["):
            index = int(path.removeprefix("rxq[").partition("]")[0])
            calls = _rxq_ops(scenario)
            if index < len(calls):
                return ("XDP-MEM-006",) if calls[index]["op"] == "reg_mem_model" \
                    else ("XDP-MEM-005",)
            return ()
        if path.startswith("bulk_flushes"):
            return ("XDP-MEM-004",)
        if not path.startswith("packets["):
            return ()
        index = int(path.removeprefix("packets[").partition("]")[0])
        if index >= len(runs):
            return ()
        packet = runs[index]
        applied_rules, run = packet.rules, packet.run
        if path.endswith(("].verdict", "].warned")):
            return tuple([r for r in applied_rules if r.startswith("XDP-ACT-")][-1:])
        if path.endswith("].flags"):
            return tuple(r for r in _FLAG_RULES if r in applied_rules)[:1]
        if path.endswith("].kernel_warns"):
            return tuple(dict.fromkeys(
                r for r in applied_rules + packet.frame_rules
                if r in ("XDP-MEM-005", "XDP-MEM-006", "XDP-FRAME-003", "XDP-ADJ-008")))
        if "].frame" in path:
            return _frame_rules(path, packet)
        if "].completion" in path:
            # The function that gave the pages back (XDP-FRAME-007 frame returns,
            # XDP-MEM-004 the bulk queue, XDP-MEM-003 xdp_return_buff), or the XSK copy
            # that freed its buffer (XDP-FRAME-005).
            found = [r for r in packet.completion_rules + tail_rules
                     if r in ("XDP-MEM-004", "XDP-FRAME-007", "XDP-MEM-003")]
            xsk = [r for r in packet.frame_rules if r == "XDP-FRAME-005"]
            return tuple(dict.fromkeys(xsk + found))[:2]
        if path.endswith("].data"):
            moved = [r for r in applied_rules if r in _DATA_RULES]
            return tuple(moved[-1:]) or ("XDP-BUFF-004",)
        if any(part in path for part in ("].frags", "].released", "].returns")):
            # The frags are decided by how the driver built them (coalescing,
            # XDP-BUFF-007) and by the program's tail adjustments (XDP-ADJ-007..010).
            # The frags live in the shared info at the buffer's hard end (XDP-BUFF-002)
            # and are read only while XDP_FLAGS_HAS_FRAGS says so (XDP-BUFF-006).
            return tuple(dict.fromkeys((*(r for r in applied_rules if r in _FRAG_RULES),
                                        "XDP-BUFF-002", "XDP-BUFF-006")))
        _, sep, tail = path.partition("].ops[")
        if not sep:
            return ()
        op_index = int(tail.partition("]")[0])
        op_rules = run.op_rules[op_index] if op_index < len(run.op_rules) else ()
        decisive = [r for r in op_rules if r != "XDP-ADJ-001"]
        program = scenario.program_for(index) or PASS_PROGRAM
        op = program[op_index] if op_index < len(program) else {}
        if "delta" in op and (s32(int(op["delta"])) != int(op["delta"]) or (
                op["op"] == "adjust_tail" and int(op["delta"]) == -(2**31)
                and "XDP-ADJ-007" in op_rules)):
            # The offset the helper saw is an int: the register truncated, or INT_MIN,
            # whose negation in the frags shrink path stays negative.
            return ("XDP-ADJ-001", *decisive[-1:])
        if path.endswith("].op"):
            # Which ops ran and left a record: the program's (XDP-PROG-001, each op
            # records; XDP-PROG-003, none after the first return).
            return ("XDP-PROG-001", "XDP-PROG-003", *decisive[-1:])
        records = packet.observed["ops"]
        record = records[op_index] if op_index < len(records) else {}
        if (op.get("op") == "adjust_tail" and s32(int(op["delta"])) > 0
                and record.get("rc") == -errno.EINVAL and decisive == ["XDP-ADJ-006"]):
            # A linear grow refused at xdp_data_hard_end, where the shared info starts.
            return ("XDP-ADJ-006", "XDP-BUFF-002")
        return tuple(decisive[-1:]) or tuple(op_rules[-1:])

    return rules


def explain(scenario: Scenario) -> str:
    """Each packet's trip through the program and the driver's verdict, rule by rule."""
    from conformance.components.driver_xdp import narrate_ops

    lines = [f"xdp: generic driver; {config_text(scenario.config)}"]
    bulk = XdpFrameBulk() if scenario.config.get("frame_return") == "xdp_return_frame_bulk" \
        else None
    for i in range(len(scenario.frames)):
        packet, _ = _run_packet(scenario, i, bulk, True)
        observed, run, trace = packet.observed, packet.run, packet.events
        decided = [e.rule for e in trace if e.rule.startswith("XDP-ACT-")][-1:]
        lines.append(f"packet {i}: {len(scenario.frames[i])} bytes -> {observed['verdict']} "
                     f"(action {observed['action']}), {observed['len']} bytes after the program"
                     f" ({', '.join(['XDP-PROG-003', *decided])})")
        lines += ["  " + event.render() for event in trace]
        lines += narrate_ops(scenario.program_for(i) or PASS_PROGRAM, run, {})[:-1]
    return "\n".join(lines)


def applied(scenario: Scenario) -> set[str]:
    _, runs, tail_rules = _run_all(scenario, traced=True)
    return {r for p in runs for r in (*p.rules, *p.frame_rules, *p.completion_rules)} | \
        set(tail_rules)


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
            # 0: data_meta already at data (no metadata yet) is in bounds (XDP-ADJ-005)
            delta = draw(st.sampled_from([-260, -256, -252, -36, -32, -8, -6, -4, -3, 0, 4, 8])
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
             meta_valid: bool = True, xsk: bool = False) -> list[dict[str, Any]]:
    """A program aimed at the helpers' bounds for one buffer layout: metadata written
    and then carried by a head adjustment (XDP-ADJ-003), the head moved to exactly the
    ``xdp_frame`` reserve or one past it (XDP-ADJ-002), the tail grown to exactly
    ``xdp_data_hard_end`` or one past (XDP-ADJ-006), or, with frags, shrunk by exactly
    the last frag, the frag bytes or one either side, and grown to exactly the last
    frag's tailroom (XDP-ADJ-008 .. XDP-ADJ-010).  On an XSK queue the tail may also grow
    to exactly the page the copy-out has, or one past (XDP-FRAME-005)."""
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
        edges = [grow, grow + 1, grow - 1, -(linear - 14), -(linear - 13)]
        if xsk:
            # sizeof(xdp_frame) + metadata + packet == PAGE_SIZE, or one byte more.
            page = X86_64.page_size - X86_64.sizeof_xdp_frame - meta - linear
            edges += [page, page + 1, page - 1]
        delta = draw(st.sampled_from(edges))
    ops.append({"op": "adjust_tail", "delta": delta})
    ops.append({"op": "get_buff_len"})
    ops.append({"op": "return", "action": draw(st.sampled_from([1, 2, 3, 4]))})
    return ops


#: The memory types ``xdp_rxq_info_reg_mem_model`` is asked for in ``rxq_ops``: each
#: supported one, and two it refuses (XDP-MEM-006).
_REG_MEM_TYPES = (0, 1, 2, 2, 3, 4, 2**32 - 1)


@st.composite
def rxq_ops(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A driver's queue set-up, right or wrong (XDP-MEM-005, XDP-MEM-006): registered
    twice without unregistering, unregistered and registered again, unregistered before
    registering, marked unused, registered without a device, a memory model before the
    queue, an unsupported type, page_pool without an allocator or not compiled in."""
    family = draw(st.sampled_from(["reregister", "unreg", "unused", "no_dev", "model_first",
                                   "model", "random"]))
    event(f"xdp: queue set-up {family}")
    mem_type = draw(st.sampled_from(_REG_MEM_TYPES))
    model: dict[str, Any] = {"op": "reg_mem_model", "mem_type": mem_type}
    if mem_type == MemType.MEM_TYPE_PAGE_POOL and draw(st.integers(0, 2)) == 0:
        model[draw(st.sampled_from(["allocator", "page_pool"]))] = False
    pool = {"op": "reg_mem_model", "mem_type": int(MemType.MEM_TYPE_PAGE_POOL)}
    if family == "reregister":
        return [{"op": "reg"}, pool, {"op": "reg"}, model]
    if family == "unreg":
        return [{"op": "reg"}, pool, {"op": "unreg"}, *draw(st.sampled_from(
            [[], [{"op": "reg"}], [{"op": "reg"}, model], [{"op": "unreg"}]]))]
    if family == "unused":
        return [{"op": "unused"}, {"op": "reg"}, model]
    if family == "no_dev":
        return [{"op": "reg", "dev": False}, model]
    if family == "model_first":
        return [model, {"op": "reg"}, model]
    if family == "model":
        return [{"op": "reg"}, model]
    return draw(st.lists(st.sampled_from(
        [{"op": "reg"}, {"op": "unreg"}, {"op": "unused"}, model, pool]), min_size=1,
        max_size=5))


#: Scenario families, one property each (a mixed draw reaches some of them rarely):
#: ``queue`` set-up calls right and wrong (no property of its own: the mixed draw and
#: :data:`QUEUE_SETUPS` reach them), ``xsk`` zero-copy queues, ``returns`` the pages
#: given back after the verdict (frames, the bulk queue, dropped buffers).
FAMILIES = ("mixed", "queue", "xsk", "returns")


@st.composite
def scenarios(draw: st.DrawFn, family: str = "mixed") -> Scenario:
    """Frames in linear or multi-buffer xdp_buffs, one program, some per-packet ones;
    the queue registered right or wrong, special frag pages, and the pages given back
    after the verdict (``family``: one of :data:`FAMILIES`)."""
    frames = draw(st.lists(ethernet_frames(), min_size=1, max_size=3))
    config: dict[str, Any] = {
        "frame_sz": draw(st.sampled_from([2048, 4096])),
        "headroom": draw(st.sampled_from([256, 256, 0, 40, 64, 192])),
        "meta_valid": draw(st.booleans() | st.just(True)),
    }
    if draw(st.booleans()):
        config["queue"] = draw(st.sampled_from([1, 3, 63]))
    queue = {"queue": "rxq_ops", "xsk": "xsk"}.get(family) or draw(
        st.sampled_from(["default", "mem_type", "rxq_ops"]))
    if queue in ("mem_type", "xsk"):
        config["mem_type"] = MemType.MEM_TYPE_XSK_BUFF_POOL if queue == "xsk" else draw(
            st.sampled_from([MemType.MEM_TYPE_PAGE_SHARED, MemType.MEM_TYPE_PAGE_ORDER0,
                             MemType.MEM_TYPE_XSK_BUFF_POOL]))
        if config["mem_type"] == MemType.MEM_TYPE_XSK_BUFF_POOL and draw(st.booleans()):
            # An XSK chunk larger than a page (unaligned umem on huge pages): a frame
            # can outgrow the one page the copy-out has (XDP-FRAME-005).
            event("xdp: XSK chunk above PAGE_SIZE")
            config["frame_sz"] = 8192
    elif queue == "rxq_ops":
        event("xdp: queue set-up calls")
        config["rxq_ops"] = draw(rxq_ops())
    if draw(st.integers(0, 3)) == 0:
        # The buffer is the second half of a split page (XDP-FRAME-006 finds its start
        # again from the frame).
        config["page_offset"] = draw(st.sampled_from([2048, config["frame_sz"]]))
    xsk = config.get("mem_type") == MemType.MEM_TYPE_XSK_BUFF_POOL or any(
        op.get("mem_type") == MemType.MEM_TYPE_XSK_BUFF_POOL for op in config.get("rxq_ops", ()))
    longest = max(len(f) for f in frames)
    room = config["frame_sz"] - config["headroom"] - 320
    fits = config["headroom"] + longest <= config["frame_sz"]
    returns = family == "returns"
    if returns and draw(st.integers(0, 2)) == 0:
        # A driver that forgot the tailroom: it gives xdp_init_buff a frame_sz with no
        # room for the shared info after the frame (XDP-FRAME-003's WARN on conversion).
        event("xdp: no reserved tailroom")
        config["frame_sz"] = max(320, config["headroom"] + longest +
                                 draw(st.sampled_from([0, 1, 160, 319])))
    elif longest > room and fits and draw(st.booleans()):
        # The frame runs into the shared info's place (XDP-FRAME-003).
        event("xdp: no reserved tailroom")
    elif longest > room or draw(st.integers(0, 1 if returns else 3)) == 0:
        # 128-byte frags: a frame of many pages, so a bulk return queue fills up.
        config["frag_size"] = draw(st.sampled_from([128, 1024, 2048, 4096]))
        config["linear_max"] = draw(st.integers(14, max(14, min(room, 200))))
        if not xsk and draw(st.integers(0, 3)) == 0:
            # Small pieces of one page: even a short frame's frags coalesce into one
            # (XDP-BUFF-007).
            event("xdp: frags coalesced")
            config["coalesce"] = True
            config["frag_size"] = draw(st.sampled_from([16, 32, 64]))
            config["linear_max"] = draw(st.integers(14, 34))
        if draw(st.integers(0, 2)) == 0:
            # Frags from pfmemalloc pages (XDP-BUFF-006: FRAGS_PF_MEMALLOC beside HAS_FRAGS).
            event("xdp: pfmemalloc frags")
            config["pfmemalloc"] = draw(st.sampled_from([[0], [1], [0, 1], [2]]))
    if returns or draw(st.integers(0, 2)) == 0:
        event("xdp: frames given back")
        config["frame_return"] = draw(st.sampled_from(["xdp_return_frame",
                                                       "xdp_return_frame_rx_napi",
                                                       "xdp_return_frame_bulk"]))
    if draw(st.integers(0, 1 if returns else 3)) == 0:
        config["drop_return"] = True
    if draw(st.booleans()):
        config["ops"] = {name: draw(kfunc_result(name))
                         for name in draw(st.lists(st.sampled_from(KFUNCS), unique=True))}
    per_packet = {}
    if len(frames) > 1 and draw(st.booleans()):
        per_packet[draw(st.integers(0, len(frames) - 1))] = tuple(draw(op_lists()))
    in_frags = len(frames[0]) - config.get("linear_max", len(frames[0]))
    if draw(st.integers(0, 1 if family == "xsk" else 2)) == 0:
        event("xdp: program at the helpers' bounds")
        frag_size = config.get("frag_size", 0)
        linear = len(frames[0]) - max(in_frags, 0)
        frags = tuple(min(frag_size, in_frags - at) for at in range(0, max(in_frags, 0),
                                                                      frag_size or 1))
        if config.get("coalesce") and frags:
            frags = (in_frags,)
        per_packet[0] = tuple(draw(edge_ops(
            headroom=config["headroom"], frame_sz=config["frame_sz"], linear=linear,
            frags=frags, frag_size=frag_size, meta_valid=config["meta_valid"], xsk=xsk)))
    elif in_frags > 0 and draw(st.booleans()):
        # Shrink by exactly the frag bytes (or one more): the last frag goes away.
        delta = -(in_frags + draw(st.sampled_from([0, 1, 2])))
        per_packet[0] = ({"op": "adjust_tail", "delta": delta}, {"op": "get_buff_len"},
                         *draw(op_lists()))
    program = draw(op_lists())
    if returns and draw(st.integers(0, 3)):
        # Mostly frames that leave as xdp_frames, so their pages come back through the
        # frame returns (and fill the bulk queue); some dropped.
        program = [op for op in program if op["op"] != "return"]
        program.append({"op": "return", "action": draw(st.sampled_from([3, 4, 1]))})
    return Scenario(component="xdp", config=config, frames=tuple(frames),
                    program=tuple(program), per_packet_programs=per_packet,
                    rules=("XDP-ADJ-002", "XDP-ADJ-005", "XDP-ADJ-006", "XDP-FRAME-002",
                           "XDP-ACT-002", "XDP-PROG-002"))


# --- fixed scenarios: every queue set-up and every way back, each once -------------------

_POOL_MODEL: dict[str, Any] = {"op": "reg_mem_model", "mem_type": 2}

#: Queue set-ups a driver may get wrong, each reached once whatever hypothesis draws
#: (XDP-MEM-005, XDP-MEM-006).
QUEUE_SETUPS: tuple[tuple[dict[str, Any], ...], ...] = (
    ({"op": "reg"}, _POOL_MODEL, {"op": "reg", "queue": 5}, _POOL_MODEL),
    ({"op": "reg", "queue": 7}, _POOL_MODEL, {"op": "unreg"}),
    ({"op": "reg"}, _POOL_MODEL, {"op": "unreg"}, {"op": "reg"},
     {"op": "reg_mem_model", "mem_type": 1}),
    ({"op": "reg"}, _POOL_MODEL, {"op": "unreg"}, {"op": "unreg"}),
    ({"op": "reg"}, {"op": "reg_mem_model", "mem_type": 1}, {"op": "reg"}),
    ({"op": "unused"}, {"op": "reg"}, _POOL_MODEL),
    ({"op": "unused"}, {"op": "unreg"}),
    ({"op": "reg", "dev": False}, _POOL_MODEL),
    (_POOL_MODEL, {"op": "reg"}, _POOL_MODEL),
    ({"op": "reg"}, {"op": "reg_mem_model", "mem_type": 4}),
    ({"op": "reg"}, {"op": "reg_mem_model", "mem_type": 2**32 - 1}),
    ({"op": "reg"}, {"op": "reg_mem_model", "mem_type": 2, "allocator": False}),
    ({"op": "reg"}, {"op": "reg_mem_model", "mem_type": 2, "page_pool": False}),
    ({"op": "reg"}, {"op": "reg_mem_model", "mem_type": 0, "allocator": False}),
    ({"op": "reg"}, {"op": "reg_mem_model", "mem_type": 3, "allocator": False}),
    ({"op": "reg", "frag_size": 64}, {"op": "reg_mem_model", "mem_type": 0}),
)


def _fixed(config: dict[str, Any]) -> Scenario:
    """A short frame dropped, and a 300-byte one in 128-byte frags whose last frag the
    program releases (after an INT_MIN shrink that takes nothing; then it grows the new
    last one by one byte) before XDP_TX: its pages
    go back through every path the queue's memory type decides."""
    frames = (bytes(range(64)), bytes(i % 251 for i in range(300)))
    # INT_MIN first: negated in int it stays negative, the shrink takes nothing (XDP-ADJ-001).
    program = ({"op": "adjust_tail", "delta": -(2**31)}, {"op": "adjust_tail", "delta": -44},
               {"op": "adjust_tail", "delta": 1},
               {"op": "get_buff_len"}, {"op": "return", "action": 3})
    return Scenario(component="xdp", config={"frag_size": 128, "linear_max": 128,
                                             "drop_return": True, **config},
                    frames=frames, program=program,
                    per_packet_programs={0: ({"op": "return", "action": 1},)},
                    rules=("XDP-MEM-005", "XDP-MEM-006", "XDP-FRAME-007", "XDP-MEM-004"))


def queue_setup_scenarios() -> list[Scenario]:
    return [_fixed({"rxq_ops": list(ops), "frame_return": "xdp_return_frame"})
            for ops in QUEUE_SETUPS]


def return_scenarios() -> list[Scenario]:
    """Each frame return on each memory type, with a pfmemalloc frag and a split page;
    the bulk queue also with frames of 128-byte frags enough to fill it (XDP-MEM-004);
    frag shrinks to the byte (XDP-ADJ-009)."""
    out = []
    for how in ("xdp_return_frame", "xdp_return_frame_rx_napi", "xdp_return_frame_bulk"):
        for mem_type in (0, 1, 2, 3):
            out.append(_fixed({"mem_type": mem_type, "frame_return": how, "pfmemalloc": [0],
                               "page_offset": 2048}))
    many = tuple(bytes(i % 253 for i in range(n)) for n in (1500, 1400, 900, 64))
    out.append(Scenario(component="xdp", config={"frag_size": 128, "linear_max": 100,
                                                 "frame_return": "xdp_return_frame_bulk"},
                        frames=many, program=({"op": "return", "action": 4},),
                        rules=("XDP-MEM-004",)))
    # XDP-FRAME-005: an XSK chunk above a page, its frame grown to fill the copy-out's
    # order-0 page exactly (converted), or one byte more (refused: -ENOSPC, aborted).
    fill = X86_64.page_size - X86_64.sizeof_xdp_frame - 1000
    out.append(Scenario(
        component="xdp", config={"mem_type": MemType.MEM_TYPE_XSK_BUFF_POOL, "frame_sz": 8192,
                                 "frame_return": "xdp_return_frame"},
        frames=(bytes(i % 249 for i in range(1000)),) * 2,
        program=({"op": "adjust_tail", "delta": fill + 1}, {"op": "return", "action": 3}),
        per_packet_programs={0: ({"op": "adjust_tail", "delta": fill},
                                 {"op": "return", "action": 3})},
        rules=("XDP-FRAME-005",)))
    # XDP-ADJ-010: a shrink by exactly the one pfmemalloc frag makes the buffer linear again;
    # the kernels with the pfmemalloc fix clear XDP_FLAGS_FRAGS_PF_MEMALLOC with
    # HAS_FRAGS, so the frame the XDP_TX converts carries neither.
    out.append(Scenario(
        component="xdp", config={"frag_size": 128, "linear_max": 128, "pfmemalloc": [0],
                                 "frame_return": "xdp_return_frame"},
        frames=(bytes(i % 247 for i in range(200)),),
        program=({"op": "adjust_tail", "delta": -72}, {"op": "get_buff_len"},
                 {"op": "return", "action": 3}),
        rules=("XDP-ADJ-010", "XDP-BUFF-006")))
    # XDP-ADJ-009: shrinks of a buffer in three frags (128, 128, 44) that end one byte into
    # a frag: one byte off the last; the last given back and one byte off the middle one;
    # the last two given back and one byte off the first.  The walk goes on while a single
    # byte is left to take, so each length is one short of a walk that stops at one.
    out.append(Scenario(
        component="xdp", config={"frag_size": 128, "linear_max": 100,
                                 "frame_return": "xdp_return_frame"},
        frames=tuple(bytes((i + n) % 241 for i in range(400)) for n in range(3)),
        program=({"op": "return", "action": 3},),
        per_packet_programs={n: ({"op": "adjust_tail", "delta": delta},
                                 {"op": "return", "action": 3})
                             for n, delta in enumerate((-1, -45, -173))},
        rules=("XDP-ADJ-009",)))
    return out


#: The rules :func:`frag_tailroom_scenarios` aims at (the test spells them out again for
#: ``rx-oracle spec`` and checks the two agree).
FRAG_TAILROOM_RULES = ("XDP-ADJ-008",)


def frag_tailroom_scenarios() -> list[tuple[str, Scenario]]:
    """XDP-ADJ-008 where the two tailroom computations part: frag pages of 128 bytes,
    a 328-byte frame (100 linear, frags of 128 and 100), the last frag grown.  With the
    queue's ``frag_size`` 64, below the last frag's 100 bytes, a kernel before
    88b6b7f7b216 (6.12 before .85) computes the tailroom in unsigned int: it wraps, so a
    grow by 0 and one by 28 (to the end of the frag's page) succeed; from 88b6b7f7b216 on
    it is signed and negative: a WARN and -EINVAL for both (a random draw registers the
    queue with the frag pages' own size, where both computations agree).  With
    ``frag_size`` 128 both agree: the 28 bytes to the page's end fit, 29 do not."""
    frame = bytes(i % 239 for i in range(328))
    config = {"frag_size": 128, "linear_max": 100}

    def grows(*deltas: int) -> dict[int, tuple[dict[str, Any], ...]]:
        return {n: ({"op": "adjust_tail", "delta": d}, {"op": "get_buff_len"},
                    {"op": "return", "action": 2}) for n, d in enumerate(deltas)}

    return [
        ("frag_size below the last frag", Scenario(
            component="xdp", frames=(frame, frame),
            config={**config, "rxq_ops": [{"op": "reg", "frag_size": 64}, _POOL_MODEL]},
            per_packet_programs=grows(0, 28), rules=FRAG_TAILROOM_RULES)),
        ("frag_size of the frag pages", Scenario(
            component="xdp", frames=(frame, frame), config=config,
            per_packet_programs=grows(28, 29), rules=FRAG_TAILROOM_RULES)),
    ]


#: The rules :func:`helper_edge_scenarios` aims at (the test spells them out again for
#: ``rx-oracle spec`` and checks the two agree).
HELPER_EDGE_RULES = ("XDP-ADJ-001", "XDP-ADJ-003", "XDP-ADJ-005", "XDP-ADJ-006", "XDP-ADJ-008",
                     "XDP-BUFF-003", "XDP-BUFF-007", "XDP-ACT-001")


def helper_edge_scenarios() -> list[tuple[str, Scenario]]:
    """The helpers' arguments and bounds a random draw misses (every delta within the
    32-bit ``int`` the program schema allows, XDP-PROG-001): a tail shrunk and
    then grown by exactly one byte, which the grow zeroes (XDP-ADJ-006, the memset in
    bpf_xdp_adjust_tail); a multi-buffer tail adjusted by 0, which takes the grow path
    (XDP-ADJ-007) and so is refused on a queue registered without ``frag_size``
    (XDP-ADJ-008: -EOPNOTSUPP), and a frag grown on a queue whose ``frag_size`` equals
    the buffer's ``frame_sz`` (allowed: only a larger ``frag_size`` refuses); metadata of
    256 bytes in a 512-byte headroom (XDP-ADJ-005: -EACCES above 255; 252 fits); a
    buffer of exactly MAX_SKB_FRAGS (17) frags, which xdp_buff_add_frag still accepts
    (XDP-BUFF-007), its last frag shortened by one byte; a tail grown to exactly
    ``xdp_data_hard_end`` (or one short) and sent with XDP_TX, which still converts
    (XDP-FRAME-003 WARNs only past it); buffers whose ``frame_sz`` is 2**31 and
    2**32 - 1, a u32's upper half and its last value (XDP-BUFF-003: the kernel takes any
    u32), their tails grown and sent with XDP_TX (the frame keeps ``frame_sz``)."""
    frame = bytes(i % 250 + 1 for i in range(300))  # no zero byte: a lost memset shows
    grow = 4096 - X86_64.shinfo_reserved - (256 + 64)  # 64 bytes to xdp_data_hard_end

    def run(*ops: dict[str, Any]) -> tuple[dict[str, Any], ...]:
        return (*ops, {"op": "get_buff_len"}, {"op": "return", "action": 2})

    one_byte = {0: run({"op": "adjust_tail", "delta": -4}, {"op": "adjust_tail", "delta": 1})}
    return [
        ("a one-byte grow after a shrink", Scenario(
            component="xdp", frames=(frame[:64],), config={}, per_packet_programs=one_byte,
            rules=HELPER_EDGE_RULES)),
        ("a 256-byte metadata area", Scenario(
            component="xdp", frames=(frame[:64],) * 2, config={"headroom": 512},
            per_packet_programs={0: run({"op": "adjust_meta", "delta": -256}),
                                 1: run({"op": "adjust_meta", "delta": -252})},
            rules=HELPER_EDGE_RULES)),
        ("MAX_SKB_FRAGS frags", Scenario(
            component="xdp", frames=(bytes(i % 251 + 1 for i in range(100 + 17 * 128)),),
            config={"frag_size": 128, "linear_max": 100},
            program=run({"op": "adjust_tail", "delta": -1}), rules=HELPER_EDGE_RULES)),
        ("tail at data_hard_end, then XDP_TX", Scenario(
            component="xdp", frames=(frame[:64],) * 2,
            config={"frame_return": "xdp_return_frame"},
            per_packet_programs={n: ({"op": "adjust_tail", "delta": grow - n},
                                     {"op": "return", "action": 3}) for n in (0, 1)},
            rules=HELPER_EDGE_RULES)),
        ("frags adjusted by 0, no frag_size", Scenario(
            component="xdp", frames=(frame,),
            config={"frag_size": 128, "linear_max": 100,
                    "rxq_ops": [{"op": "reg", "frag_size": 0}, _POOL_MODEL]},
            program=run({"op": "adjust_tail", "delta": 0}), rules=HELPER_EDGE_RULES)),
        ("frag_size equal to frame_sz", Scenario(
            component="xdp", frames=(frame,),
            config={"frame_sz": 2048, "frag_size": 2048, "linear_max": 100},
            program=run({"op": "adjust_tail", "delta": 1}), rules=HELPER_EDGE_RULES)),
        *((f"frame_sz {name}", Scenario(
            component="xdp", frames=(frame[:64],), config={"frame_sz": frame_sz},
            program=({"op": "adjust_tail", "delta": 1000}, {"op": "return", "action": 3}),
            rules=HELPER_EDGE_RULES)) for name, frame_sz in (("2**31", 1 << 31),
                                                             ("2**32 - 1", (1 << 32) - 1))),
    ]

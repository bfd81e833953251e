"""The ``zcrx`` component: io_uring zero-copy receive — registration, the data path, the
refill ring and teardown (reference: ``reference/zcrx``).

config:  ``setup_flags`` (the ring's IORING_SETUP_* flags; default DEFER_TASKRUN|CQE32),
         ``cap_net_admin`` (true), ``reg`` (``io_uring_zcrx_ifq_reg`` fields: ``if_idx`` 2,
         ``if_rxq`` 0, ``rq_entries`` 64, ``flags``, ``zcrx_id``, ``rx_buf_len``,
         ``event_desc``, ``resv`` [2]), ``area`` (``io_uring_zcrx_area_reg``: ``addr``
         0x100000000, ``len`` 262144, ``rq_area_token``, ``flags``, ``dmabuf_fd``, ``resv2``
         [2]), ``region`` (``io_uring_region_desc``: ``user_addr``, ``size`` 4096,
         ``flags``, ``id``, ``mmap_offset``, ``resv`` [4]), ``memory`` (``{"chunks":
         [len, ...]}``: the area's DMA segments; absent: one segment), ``netdev`` (null: no
         device has ``if_idx``; else ``NetdevModel`` fields: ``ifindex`` 2, ``has_dma_dev``,
         ``queue_mgmt_ops``, ``real_num_rx_queues`` 4, ``tcp_data_split``, ``hds_thresh``,
         ``xdp_attached``, ``rxq_mp_bound``, ``qcfg_rx_page_size`` (false),
         ``default_rx_page_size`` 4096, ``max_rx_page_size`` 32768), ``device``
         (``placement`` "packed" | "per_packet", ``gro_segs`` 1, ``linear_payload`` 0),
         ``cq_entries`` (4096), ``pool_size`` (1024), ``stream_mib`` (explain only).
frames:  Ethernet/IPv4/TCP frames of one flow; the TCP payload of each is what the device
         writes into the area (other frames carry nothing for the socket).
events:  ``{"op": "rx", "frames": [i, ...]}`` (default: every frame not yet received; one
         NAPI poll), ``{"op": "recv", "len": n, "user_data": u}``, ``{"op": "return",
         "cqes": [k, ...]}`` (the user gives CQE k, counted from 0 over the run and taken
         modulo the CQEs posted so far, back with a well-formed entry), ``{"op": "refill",
         "entries": [{"off", "len", "pad"}]}`` (raw entries), ``{"op": "alloc", "n": n}``
         (the driver posts n buffers: refill entries are read), ``{"op": "restart"}``,
         ``{"op": "reap"}``, ``{"op": "shutdown"}``.
observables: ``register`` (``mp_rx_page_size``, ``driver_rx_page_size``, ``rc``, then the
         written-back ``rq_entries``, ``rx_buf_len``, ``zcrx_id``, ``offsets``,
         ``rq_area_token``, ``num_niovs`` — null unless rc is 0); ``events[i]`` (per op:
         rx ``delivered``/``dropped``; recv ``rc``, ``requeue``, ``cqes`` [``user_data``,
         ``res``, ``flags``, ``off``]; return/refill ``written``; alloc ``got``; shutdown
         ``scrubbed``; ``skipped`` when there is no data path); ``refills`` (every entry the
         kernel consumed: ``seq``, ``niov``, ``outcome``); ``final`` (refill ``head`` and
         ``tail``, ``free_count``, nonzero ``user_refs``, each pool's hold, release, cache
         and ring); ``counts``; ``ledger.problems``.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping
from typing import Any

import attrs
from hypothesis import strategies as st

from conformance.components import Component, kernel_of, require
from conformance.readable import config_text, rc_text
from conformance.scenario import Scenario
from reference import packet
from reference.errors import InvalidConfig
from reference.kernel import KernelVersion, gate
from reference.trace import Trace
from reference.zcrx import (
    IORING_ZCRX_AREA_SHIFT,
    OUTCOME_RULE,
    AreaMemory,
    DeviceConfig,
    EngineConfig,
    IoUringRegionDesc,
    IoUringZcrxAreaReg,
    IoUringZcrxIfqReg,
    IoUringZcrxRqe,
    NetdevModel,
    RingCtx,
    ZcrxEngine,
    mss_stream,
)
from reference.zcrx.recv import LIMIT_REACHED
from reference.zcrx.register import SZ_1G, SZ_1T, UNMERGED_KNOBS, VETH, errno_name
from reference.zcrx.scenario import MIB, counts_of, run_stream, stream_counts
from reference.zcrx.uapi import (
    IORING_SETUP_CLAMP,
    IORING_SETUP_CQE32,
    IORING_SETUP_CQE_MIXED,
    IORING_SETUP_DEFER_TASKRUN,
    IORING_ZCRX_AREA_DMABUF,
    ZCRX_REG_IMPORT,
    ZCRX_REG_NODEV,
)

DEFAULT_FLAGS = IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_CQE32
DEFAULT_AREA_ADDR = 1 << 32
MAC_SRC, MAC_DST = "02:00:00:00:00:01", "02:00:00:00:00:02"


# ------------------------------------------------------------------ scenario -> model input

def _ints(value: Any, n: int, field: str) -> tuple[int, ...]:
    items = tuple(int(v) for v in (value if value is not None else [0] * n))
    if len(items) != n:
        raise InvalidConfig(f"needs {n} values", field=field, value=value, rule="ZCRX-UAPI-005")
    return items


def config_of(scenario: Scenario) -> EngineConfig:
    """The model's configuration of a scenario (see the module docstring).  Version gates:
    ZCRX-BUFLEN-001, the data path (events) is described as of v7.0 only, so a scenario
    with events is not applicable before; registration alone follows the registration
    gates of the scenario's kernel (6.18: no rx_buf_len, no flags, no event descriptor;
    6.12: no zcrx, the opcode is refused, ZCRX-REG-001)."""
    kernel = kernel_of(scenario)
    if scenario.events:
        require(scenario, "ZCRX-BUFLEN-001", "the zcrx data path")
    cfg = scenario.config
    for knob in UNMERGED_KNOBS:
        if knob in cfg:
            raise InvalidConfig("part of the unmerged RFC v2 series", field=knob,
                                value=cfg[knob], rule="ZCRX-BUFLEN-007")
    r: Mapping[str, Any] = cfg.get("reg", {})
    a: Mapping[str, Any] = cfg.get("area", {})
    g: Mapping[str, Any] = cfg.get("region", {})
    reg = IoUringZcrxIfqReg(
        if_idx=int(r.get("if_idx", 2)), if_rxq=int(r.get("if_rxq", 0)),
        rq_entries=int(r.get("rq_entries", 64)), flags=int(r.get("flags", 0)),
        zcrx_id=int(r.get("zcrx_id", 0)), rx_buf_len=int(r.get("rx_buf_len", 0)),
        event_desc=int(r.get("event_desc", 0)),
        resv=_ints(r.get("resv"), 2, "reg.resv"))  # type: ignore[arg-type]
    area = IoUringZcrxAreaReg(
        addr=int(a.get("addr", DEFAULT_AREA_ADDR)), len=int(a.get("len", 256 * 1024)),
        rq_area_token=int(a.get("rq_area_token", 0)), flags=int(a.get("flags", 0)),
        dmabuf_fd=int(a.get("dmabuf_fd", 0)),
        resv2=_ints(a.get("resv2"), 2, "area.resv2"))  # type: ignore[arg-type]
    region = IoUringRegionDesc(
        user_addr=int(g.get("user_addr", 0)), size=int(g.get("size", 4096)),
        flags=int(g.get("flags", 0)), id=int(g.get("id", 0)),
        mmap_offset=int(g.get("mmap_offset", 0)),
        resv=_ints(g.get("resv"), 4, "region.resv"))  # type: ignore[arg-type]
    # The structs cross the ABI as bytes: what the model reads is what unpacks.
    reg = IoUringZcrxIfqReg.unpack(reg.pack())
    area = IoUringZcrxAreaReg.unpack(area.pack())
    region = IoUringRegionDesc.unpack(region.pack())
    nd = cfg.get("netdev", {})
    netdev = None if nd is None else NetdevModel(**{k: v for k, v in nd.items()})
    chunks = cfg.get("memory", {}).get("chunks")
    dev = cfg.get("device", {})
    return EngineConfig(
        ctx=RingCtx(flags=int(cfg.get("setup_flags", DEFAULT_FLAGS)),
                    cap_net_admin=bool(cfg.get("cap_net_admin", True))),
        reg=reg, area=area, region=region, netdev=netdev,
        memory=AreaMemory(chunks=None if chunks is None else tuple(int(c) for c in chunks)),
        device=DeviceConfig(placement=str(dev.get("placement", "packed")),
                            gro_segs=int(dev.get("gro_segs", 1)),
                            linear_payload=int(dev.get("linear_payload", 0))),
        cq_entries=int(cfg.get("cq_entries", 4096)),
        pool_size=int(cfg.get("pool_size", 1024)),
        kernel=kernel,
    )


def payload_of(frame: bytes) -> int:
    """The TCP payload a frame carries (0 for anything else)."""
    info = packet.parse(frame)
    if info.l4 is not packet.L4.TCP:
        return 0
    return max(info.ip_payload_end - info.l4_offset - info.l4_hdr_len, 0)


# ------------------------------------------------------------------ running a scenario

def _run_event(engine: ZcrxEngine, ev: Mapping[str, Any], payloads: list[int],
               received: set[int]) -> dict[str, Any]:
    op = str(ev["op"])
    out: dict[str, Any] = {"op": op}
    if not engine.active:
        out["skipped"] = True
        return out
    if op == "rx":
        idx = ev.get("frames")
        chosen = [i for i in range(len(payloads)) if i not in received] if idx is None \
            else [int(i) for i in idx]
        received.update(chosen)
        delivered, dropped = engine.rx_segments([payloads[i] for i in chosen if payloads[i]])
        out.update(delivered=delivered, dropped=dropped)
    elif op == "recv":
        res = engine.recv(int(ev.get("len", 0)), user_data=int(ev.get("user_data", 0)))
        out.update(rc=res.rc, requeue=res.requeue,
                   cqes=[{"user_data": c.user_data, "res": c.res, "flags": c.flags,
                          "off": c.off} for c in res.cqes])
    elif op == "return" and ev.get("new"):
        out["written"] = engine.user_return_new()
    elif op == "return":
        n = len(engine.cqes)
        rqes = [engine.user_rqe_for(int(k) % n) for k in ev.get("cqes", [])] if n else []
        out["written"] = engine.user_write(rqes)
    elif op == "refill":
        rqes = [IoUringZcrxRqe(off=int(e.get("off", 0)), len=int(e.get("len", 0)),
                               pad=int(e.get("pad", 0))) for e in ev.get("entries", [])]
        rqes = [IoUringZcrxRqe.unpack(r.pack()) for r in rqes]
        out["written"] = engine.user_write(rqes)
    elif op == "alloc":
        out["got"] = engine.alloc(int(ev.get("n", 1)))
    elif op == "restart":
        engine.restart()
    elif op == "reap":
        engine.reap()
    elif op == "shutdown":
        out["scrubbed"] = engine.shutdown()
    else:
        raise InvalidConfig("unknown op", field="events[].op", value=op, rule="ZCRX-SIM-003")
    return out


def simulate(scenario: Scenario, trace: Trace | None = None) -> tuple[ZcrxEngine, list[Any]]:
    engine = ZcrxEngine(config_of(scenario), trace)
    payloads = [payload_of(f) for f in scenario.frames]
    received: set[int] = set()
    results = [_run_event(engine, ev, payloads, received) for ev in scenario.events]
    return engine, results


def observe(engine: ZcrxEngine, results: list[Any]) -> dict[str, Any]:
    res = engine.result
    ok = res.ok
    register = {
        "mp_rx_page_size": res.mp_rx_page_size,
        "driver_rx_page_size": res.driver_rx_page_size,
        "rc": res.rc,
        "rq_entries": res.reg.rq_entries if ok else None,
        "rx_buf_len": res.reg.rx_buf_len if ok else None,
        "zcrx_id": res.reg.zcrx_id if ok else None,
        "offsets": ({"head": res.reg.offsets.head, "tail": res.reg.offsets.tail,
                     "rqes": res.reg.offsets.rqes} if ok else None),
        "rq_area_token": res.area.rq_area_token if ok else None,
        "num_niovs": res.num_niovs if ok else None,
    }
    doc: dict[str, Any] = {"register": register, "events": results}
    ifq = engine.ifq
    if ifq is None:
        return doc
    doc["refills"] = [{"seq": r.seq, "niov": r.niov, "outcome": r.outcome.value}
                      for r in ifq.refills]
    area = ifq.area
    doc["final"] = {
        "head": ifq.rq.head, "tail": ifq.rq.tail, "free_count": area.free_count,
        "user_refs": {str(i): n for i, n in enumerate(area.user_refs) if n},
        "pools": [{"hold": p.pages_state_hold_cnt, "release": p.pages_state_release_cnt,
                   "cache": len(p.cache), "ring": len(p.ring)} for p in engine.pools],
    }
    c = counts_of(engine, 0, 0)
    doc["counts"] = {"cqes": c.cqes, "copy_cqes": c.copy_cqes,
                     "refill_entries": c.refill_entries, "pp_allocs": c.pp_allocs,
                     "mp_alloc_calls": c.mp_alloc_calls, "niovs_from_ring": c.niovs_from_ring,
                     "niovs_from_freelist": c.niovs_from_freelist, "releases": c.releases}
    doc["ledger"] = {"problems": len(engine.problems())}
    return doc


def expected(scenario: Scenario) -> dict[str, Any]:
    return observe(*simulate(scenario))


# ------------------------------------------------------------------ attribution

FIELD_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("register.mp_rx_page_size", ("ZCRX-BUFLEN-005",)),
    ("register.driver_rx_page_size", ("ZCRX-QUEUE-002",)),
    ("register.rc", ("ZCRX-REG-011",)),
    ("register.rq_entries", ("ZCRX-REG-006",)),
    ("register.rx_buf_len", ("ZCRX-BUFLEN-006",)),
    ("register.offsets*", ("ZCRX-REG-008",)),
    ("register.zcrx_id", ("ZCRX-REG-011",)),
    ("register.*", ("ZCRX-AREA-005",)),
    ("events[*].delivered", ("ZCRX-SIM-001",)),
    ("events[*].dropped", ("ZCRX-SIM-001",)),
    ("events[*].cqes*", ("ZCRX-CQE-002",)),
    ("events[*].rc", ("ZCRX-CQE-005",)),
    ("events[*].requeue", ("ZCRX-CQE-005",)),
    # The user writes entries while the ring has room (ZCRX-SIM-003), which the ring's
    # free-running counters decide (ZCRX-REFILL-007).
    ("events[*].written", ("ZCRX-SIM-003", "ZCRX-REFILL-007")),
    ("events[*].got", ("ZCRX-MP-003",)),
    ("events[*].scrubbed", ("ZCRX-SCRUB-001",)),
    ("events*", ("ZCRX-SIM-003",)),
    ("refills[*].seq", ("ZCRX-REFILL-001",)),
    ("refills[*].niov", ("ZCRX-REFILL-002",)),
    ("refills*", ("ZCRX-REFILL-001",)),
    ("final.head", ("ZCRX-REFILL-001",)),
    ("final.tail", ("ZCRX-REFILL-001",)),
    ("final.free_count", ("ZCRX-MP-004",)),
    ("final.user_refs*", ("ZCRX-OWN-001",)),
    ("final.pools*", ("ZCRX-MP-005",)),
    # Each count on the rule that decides it, and on the stream counts that report it.
    ("counts.cqes", ("ZCRX-CQE-002", "ZCRX-SIM-004")),
    ("counts.copy_cqes", ("ZCRX-COPY-001", "ZCRX-SIM-004")),
    ("counts.refill_entries", ("ZCRX-SIM-003", "ZCRX-SIM-004")),
    ("counts.pp_allocs", ("ZCRX-SIM-001", "ZCRX-SIM-004")),
    ("counts.mp_alloc_calls", ("ZCRX-MP-002", "ZCRX-SIM-004")),
    ("counts.niovs_from_*", ("ZCRX-MP-003", "ZCRX-SIM-004")),
    ("counts.releases", ("ZCRX-MP-004", "ZCRX-SIM-004")),
    ("counts.*", ("ZCRX-SIM-004",)),
    ("ledger.*", ("ZCRX-SIM-005",)),
)


def _event_rules(result: Mapping[str, Any]) -> list[str]:
    """The rules that decide an event's reported fields (FIELD_RULES), for explain's
    event lines; an event reporting nothing is ZCRX-SIM-003's."""
    rules: list[str] = []
    for key in result:
        for pattern, field_rules in FIELD_RULES:
            if pattern.startswith("events[*].") and fnmatch.fnmatchcase(
                    key, pattern.removeprefix("events[*].")):
                rules += [r for r in field_rules if r not in rules]
                break
    return rules or ["ZCRX-SIM-003"]


#: For a field of ``events[i]``: the rules that can decide it, most specific first.  The
#: first of them the reference applied *during that event* (its trace) is blamed; for a
#: receive's ``rc`` and ``requeue``, every one it applied (they decide it together).
EVENT_RULES: dict[str, tuple[str, ...]] = {
    "rc": ("ZCRX-CQE-001", "ZCRX-CQE-003", "ZCRX-COPY-003", "ZCRX-COPY-004", "ZCRX-CQE-005"),
    "requeue": ("ZCRX-CQE-003", "ZCRX-COPY-004", "ZCRX-CQE-005"),
    "got": ("ZCRX-MP-002", "ZCRX-MP-003"),
    "delivered": ("ZCRX-SIM-002", "ZCRX-SIM-001"),
    "dropped": ("ZCRX-SIM-001",),
}


def traced_events(scenario: Scenario) -> tuple[ZcrxEngine, list[Any], Trace, list[int]]:
    """:func:`simulate` with a trace, and where each event's part of the trace starts
    (``bounds[i]`` .. ``bounds[i + 1]`` are the decisions of event ``i``)."""
    trace = Trace()
    engine = ZcrxEngine(config_of(scenario), trace)
    payloads = [payload_of(f) for f in scenario.frames]
    received: set[int] = set()
    bounds = [len(trace)]
    results = []
    for ev in scenario.events:
        results.append(_run_event(engine, ev, payloads, received))
        bounds.append(len(trace))
    return engine, results, trace, bounds


def attribute(scenario: Scenario) -> Callable[[str], tuple[str, ...]]:
    """Blame from the reference's own run: ``register.rc`` on the rule that decided it; a
    refill outcome on the rule of the outcome reached; a field of event ``i`` on the rule
    the reference applied during event ``i`` that decides that field (EVENT_RULES; a
    copied CQE on the copy rules, a zero-copy CQE's ``res`` and ``off`` also on the device's
    placement ZCRX-SIM-001); a niov's user references on ZCRX-CQE-004 (each zero-copy
    CQE takes one) and, when copied chunks landed in it, ZCRX-COPY-001, after a scrub
    first on ZCRX-SCRUB-001; the pools' end
    state on the restart or shutdown that released them; the freelist's end count on the
    releases and, when some put kept a niov in a pool, on that put too."""
    engine, results, trace, bounds = traced_events(scenario)
    outcomes = [r.outcome for r in engine.ifq.refills] if engine.ifq is not None else []
    copies = {c.off for c in engine.cqes if c.copy}
    copy_niovs = {c.niov for c in engine.cqes if c.copy}
    zc_niovs = {c.niov for c in engine.cqes if not c.copy}
    every = set(trace.rules())
    rx_buf_len = int(scenario.config.get("reg", {}).get("rx_buf_len", 0) or 0)

    def during(i: int) -> set[str]:
        return {e.rule for e in trace.events[bounds[i]:bounds[i + 1]]}

    def limited(i: int) -> bool:
        return any(e.what == LIMIT_REACHED for e in trace.events[bounds[i]:bounds[i + 1]])

    def rules(path: str) -> tuple[str, ...]:
        if path == "register.rc":
            return (engine.result.rule,)
        if path == "register.rx_buf_len" and rx_buf_len == 0 and engine.result.ok:
            return ("ZCRX-BUFLEN-001",)
        if path.startswith("refills[") and path.endswith("].outcome"):
            i = int(path[len("refills["):path.index("]")])
            if i < len(outcomes):
                return (OUTCOME_RULE[outcomes[i]],)
        if path.startswith("refills[") and path.endswith("].seq"):
            return ("ZCRX-REFILL-001", "ZCRX-REFILL-007")
        if path.startswith("final.user_refs"):
            # A zero-copy CQE takes a user reference (ZCRX-CQE-004), so does a copied
            # chunk's CQE (ZCRX-COPY-001): blame whichever gave this niov out.
            key = path[len("final.user_refs."):]
            niov = int(key) if key.isdigit() else None
            by = [rule for rule, given in (("ZCRX-COPY-001", copy_niovs),
                                           ("ZCRX-CQE-004", zc_niovs))
                  if niov in given and rule in every]
            # A scrub took every user reference back (ZCRX-SCRUB-001): what is left
            # after it is its decision first.
            scrubbed = ("ZCRX-SCRUB-001",) if "ZCRX-SCRUB-001" in every else ()
            if by:
                return (*scrubbed, *by)
            if "ZCRX-CQE-004" in every:
                return (*scrubbed, "ZCRX-CQE-004")
        if path == "final.free_count" and "ZCRX-MP-005" in every:
            # The freelist ends with what was released (ZCRX-MP-004) less what the puts
            # kept in a pool's cache or ring instead (ZCRX-MP-005).
            return ("ZCRX-MP-004", "ZCRX-MP-005")
        if path.startswith("final.pools"):
            for rule in ("ZCRX-SCRUB-002", "ZCRX-MP-006"):
                if rule in every:
                    return (rule,)
            return ()
        if not path.startswith("events["):
            return ()
        ei = int(path[len("events["):path.index("]")])
        if ei >= len(results):
            return ()
        field = path[path.index("]") + 2:].partition("[")[0].partition(".")[0]
        if field == "cqes" and ".cqes[" in path:
            ci = int(path[path.index(".cqes[") + 6:path.rindex("]")])
            cqes = results[ei].get("cqes", [])
            if ci < len(cqes) and cqes[ci]["off"] in copies:
                return ("ZCRX-COPY-002",) if path.endswith(".res") else ("ZCRX-COPY-001",)
            if path.endswith((".res", ".off")):  # where the device put the payload
                return ("ZCRX-CQE-002", "ZCRX-SIM-001")
            return ()
        if field in ("rc", "requeue", "cqes") and limited(ei):
            # The call stopped at the actor's per-call limit: how much it delivered,
            # and whether it is requeued, is that limit's decision.
            return ("ZCRX-CQE-005",)
        applied = during(ei)
        if field in ("rc", "requeue"):
            # What a receive call returns is decided together: each frag's outcome
            # (ZCRX-CQE-001, ZCRX-CQE-003, ZCRX-COPY-003, ZCRX-COPY-004) and the walk
            # over the queue (ZCRX-CQE-005).
            return tuple(rule for rule in EVENT_RULES[field] if rule in applied)
        for rule in EVENT_RULES.get(field, ()):
            if rule in applied:
                # What an alloc event got is the driver's posting (ZCRX-SIM-001), one
                # pool allocation per buffer.
                return (rule, "ZCRX-SIM-001") if field == "got" else (rule,)
        return ()

    return rules


#: Checked by the engine on every run (its ledger), whatever the trace says.
ALWAYS_APPLIED = frozenset({"ZCRX-SIM-005", "ZCRX-OWN-001", "ZCRX-OWN-002", "ZCRX-OWN-003"})


def applied(scenario: Scenario) -> set[str]:
    trace = Trace()
    simulate(scenario, trace)
    return set(trace.rules()) | ALWAYS_APPLIED


COMPONENT = Component(name="zcrx", expected=expected, field_rules=FIELD_RULES,
                      attribute=attribute, applied=applied)


# ------------------------------------------------------------------ explain

def _stream_payloads(scenario: Scenario) -> list[int]:
    if scenario.frames:
        return [p for p in (payload_of(f) for f in scenario.frames) if p]
    return mss_stream(int(scenario.config.get("stream_mib", 1)) * MIB)


#: What a stream explanation registers unless the config says otherwise: a refill ring
#: that never throttles the user, 16 MiB of huge-page memory, a driver with the opt-in.
STREAM_DEFAULTS: dict[str, Any] = {
    "reg": {"rq_entries": 4096},
    "region": {"size": 69632},
    "area": {"len": 16 * MIB},
    "memory": {"chunks": [2 * MIB] * 8},
    "netdev": {"qcfg_rx_page_size": True},
}


def explain(scenario: Scenario) -> str:
    """Narrate the registration rule by rule; then the data path: the scenario's events,
    or, without events, a bulk stream (the frames' payloads, or ``stream_mib`` MiB in
    1448-byte segments) with the per-MiB counts for the configured ``rx_buf_len``.  A
    stream registers :data:`STREAM_DEFAULTS` overridden by the config."""
    if not scenario.events:
        scenario = attrs.evolve(scenario, config=_merge(STREAM_DEFAULTS, scenario.config))
    trace = Trace()
    engine = ZcrxEngine(config_of(scenario), trace)
    res = engine.result
    lines = ["zcrx registration:"]
    lines += [f"  {e.render()}" for e in trace.events]
    if not res.ok:
        lines.append(f"registration fails with -{errno_name(res.rc)} ({res.rc}), decided "
                     f"by {res.rule}")
        return "\n".join(lines)
    lines.append(f"registered: zcrx_id {res.reg.zcrx_id}, rq_entries {res.reg.rq_entries}, "
                 f"rx_buf_len {res.reg.rx_buf_len} (ZCRX-BUFLEN-006), {res.num_niovs} niovs, "
                 f"refill entries at offset {res.reg.offsets.rqes} (ZCRX-REG-008)")
    if res.nodev:
        lines.append("ZCRX_REG_NODEV: no queue, no data path modelled")
        return "\n".join(lines)
    kernel = kernel_of(scenario)
    if not gate(kernel, "ZCRX-BUFLEN-001"):
        lines.append(f"data path: not modelled for kernel {kernel}; the model describes it as "
                     "of v7.0 (ZCRX-BUFLEN-001)")
        return "\n".join(lines)
    if scenario.events:
        trace.events.clear()
        engine, results = simulate(scenario, trace)
        lines.append("data path (events):")
        for i, r in enumerate(results):
            detail = {k: v for k, v in r.items() if k not in ("op", "cqes")}
            if "cqes" in r:
                detail["cqes"] = len(r["cqes"])
            if isinstance(detail.get("rc"), int):
                detail["rc"] = rc_text(detail["rc"])
            what = config_text(detail) if detail else "done"
            lines.append(f"  [{i}] {r['op']}: {what} ({', '.join(_event_rules(r))})")
        for e in trace.events:
            if e.rule.startswith(("ZCRX-REFILL", "ZCRX-MP", "ZCRX-SCRUB", "ZCRX-COPY")):
                lines.append(f"    {e.render()}")
        problems = engine.problems()
        lines.append(f"invariants: {len(problems)} problem(s) (ZCRX-SIM-005, ZCRX-OWN-001)")
        return "\n".join(lines)
    payloads = _stream_payloads(scenario)
    dev = engine.cfg.device
    size = res.reg.rx_buf_len
    run_stream(engine, payloads)
    counts = counts_of(engine, sum(payloads), len(payloads))
    lines.append(f"stream: {len(payloads)} TCP segments, {sum(payloads)} payload bytes, "
                 f"placement {dev.placement}, gro_segs {dev.gro_segs} (ZCRX-SIM-001..003)")
    lines.append(f"per MiB of payload with {size}-byte buffers (ZCRX-SIM-004):")
    for key, value in counts.per_mib().items():
        lines.append(f"  {key:<20} {value}")
    if size != 4096:
        base = stream_counts(payloads, 4096, device=dev).per_mib()
        mine = counts.per_mib()
        ratios = ", ".join(f"{base[k] / mine[k]:.2f}x the {k}" for k in
                           ("cqes", "refill_entries", "pp_allocs", "mp_alloc_calls")
                           if mine[k])
        lines.append(f"the same stream with 4096-byte buffers takes {ratios}")
    lines.append("(provider calls include the warm-up batches of 64 niovs from the freelist; "
                 "a longer stream, stream_mib, approaches the steady state)")
    lines.append(f"invariants: {counts.problems} problem(s) (ZCRX-SIM-005)")
    return "\n".join(lines)


# ------------------------------------------------------------------ strategies

def tcp_frame(payload: int, seq: int) -> bytes:
    """One frame of the test flow, built with scapy (explicit MACs)."""
    from scapy.layers.inet import IP, TCP
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw

    pkt = (Ether(src=MAC_SRC, dst=MAC_DST) / IP(src="10.0.0.1", dst="10.0.0.2")
           / TCP(sport=40000, dport=9999, flags="A", seq=seq) / Raw(bytes(payload)))
    return bytes(pkt)


def frames_for(payloads: list[int]) -> tuple[bytes, ...]:
    out = []
    seq = 1000
    for p in payloads:
        out.append(tcp_frame(p, seq))
        seq += p
    return tuple(out)


#: One fault per registration rule (the config patch and the rule it breaks).
FAULTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("ZCRX-REG-001", {"cap_net_admin": False}),
    ("ZCRX-REG-002", {"setup_flags": IORING_SETUP_CQE32}),
    ("ZCRX-REG-002", {"setup_flags": IORING_SETUP_DEFER_TASKRUN}),
    ("ZCRX-REG-003", {"reg": {"zcrx_id": 3}}),
    ("ZCRX-REG-003", {"reg": {"resv": [0, 1]}}),
    ("ZCRX-REG-004", {"reg": {"flags": 4}}),
    ("ZCRX-REG-005", {"reg": {"if_rxq": 0xFFFF_FFFF}}),
    ("ZCRX-REG-005", {"reg": {"rq_entries": 0}}),
    ("ZCRX-REG-005", {"reg": {"flags": ZCRX_REG_NODEV}}),
    ("ZCRX-REG-011", {"reg": {"flags": ZCRX_REG_NODEV, "if_idx": 0}}),
    ("ZCRX-BUFLEN-004", {"reg": {"flags": ZCRX_REG_NODEV, "if_idx": 0, "rx_buf_len": 8192}}),
    ("ZCRX-REG-006", {"reg": {"rq_entries": 40000}}),
    ("ZCRX-REG-008", {"region": {"size": 1024}}),
    ("ZCRX-REG-009", {"region": {"id": 1}}),
    ("ZCRX-REG-009", {"region": {"flags": 1}}),
    ("ZCRX-REG-009", {"region": {"size": 4097}}),
    ("ZCRX-REG-010", {"netdev": None}),
    ("ZCRX-REG-010", {"netdev": {"has_dma_dev": False}}),
    ("ZCRX-BUFLEN-002", {"reg": {"rx_buf_len": 6000}}),
    ("ZCRX-BUFLEN-002", {"reg": {"rx_buf_len": 2048}}),
    ("ZCRX-BUFLEN-003", {"reg": {"rx_buf_len": 32768}, "memory": {"chunks": [4096] * 64},
                         "area": {"len": 64 * 4096},
                         "netdev": {"qcfg_rx_page_size": True}}),
    ("ZCRX-AREA-001", {"area": {"flags": 2}}),
    ("ZCRX-AREA-001", {"area": {"rq_area_token": 1 << 48}}),
    ("ZCRX-AREA-001", {"area": {"resv2": [1, 0]}}),
    ("ZCRX-AREA-002", {"area": {"len": 0}}),
    ("ZCRX-AREA-002", {"area": {"addr": (1 << 64) - 4096}}),
    ("ZCRX-AREA-003", {"area": {"addr": DEFAULT_AREA_ADDR + 16}}),
    ("ZCRX-AREA-004", {"area": {"dmabuf_fd": 5}}),
    ("ZCRX-AREA-004", {"area": {"addr": 0}}),
    # io_import_dmabuf: the mapped segments must add up to len (here 64 KiB of 128).
    ("ZCRX-AREA-004", {"area": {"flags": IORING_ZCRX_AREA_DMABUF, "addr": 0, "dmabuf_fd": 5,
                                "len": 128 * 1024},
                       "memory": {"chunks": [65536]}}),
    # io_import_dmabuf: a dma-buf area's addr is an offset into the buffer and must be 0.
    ("ZCRX-AREA-004", {"area": {"flags": IORING_ZCRX_AREA_DMABUF, "addr": 4096,
                                "dmabuf_fd": 5}}),
    # io_import_dmabuf: a dma-buf is attached to the queue's DMA device; without a
    # device (ZCRX_REG_NODEV) there is none to attach to.
    ("ZCRX-AREA-004", {"reg": {"flags": ZCRX_REG_NODEV, "if_idx": 0},
                       "area": {"flags": IORING_ZCRX_AREA_DMABUF, "addr": 0, "dmabuf_fd": 5}}),
    ("ZCRX-BUFLEN-005", {"reg": {"rx_buf_len": 16384}, "netdev": {"qcfg_rx_page_size": False}}),
    ("ZCRX-QUEUE-001", {"reg": {"if_rxq": 9}}),
    ("ZCRX-QUEUE-001", {"netdev": {"tcp_data_split": False}}),
    ("ZCRX-QUEUE-001", {"netdev": {"xdp_attached": True}}),
    ("ZCRX-QUEUE-001", {"netdev": {"queue_mgmt_ops": False}}),
    ("ZCRX-QUEUE-001", {"netdev": {"hds_thresh": 256}}),
    ("ZCRX-QUEUE-001", {"netdev": {"rxq_mp_bound": True}}),
    ("ZCRX-QUEUE-002", {"reg": {"rx_buf_len": 65536}, "netdev": {"qcfg_rx_page_size": True}}),
    # The driver's own defaults are validated before the provider's override: a default
    # that is not a power of two, or lies above the driver's maximum, fails there.
    ("ZCRX-QUEUE-002", {"netdev": {"qcfg_rx_page_size": True, "default_rx_page_size": 12288}}),
    ("ZCRX-QUEUE-002", {"netdev": {"qcfg_rx_page_size": True, "default_rx_page_size": 65536}}),
    ("ZCRX-QUEUE-003", {"netdev": {"default_rx_page_size": 8192}}),
)


#: ZCRX-REG-012: veth as the model sees it: no DMA device, no queue management ops, one
#: RX queue (what the ``zcrx-live`` target registers against).
VETH_NETDEV: dict[str, Any] = {"has_dma_dev": VETH.has_dma_dev,
                               "queue_mgmt_ops": VETH.queue_mgmt_ops,
                               "real_num_rx_queues": VETH.real_num_rx_queues,
                               "tcp_data_split": VETH.tcp_data_split}
USER_REGION_ADDR = 0x3F00_0000_0000
#: Registrations that matter on a device without a DMA device (veth): what veth stops
#: (ZCRX-REG-012), rounding seen through the region size, the region's own checks with
#: real user memory, 32-byte CQEs by CQE_MIXED, a word that is reserved before v7.0.
VETH_FAULTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("ZCRX-REG-012", {}),
    ("ZCRX-REG-012", {"reg": {"if_rxq": 5}}),
    ("ZCRX-REG-012", {"area": {"len": 0}}),
    ("ZCRX-REG-012", {"area": {"addr": 0}}),
    ("ZCRX-REG-002", {"setup_flags": IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_CQE_MIXED}),
    ("ZCRX-REG-003", {"reg": {"rx_buf_len": 4096}}),
    ("ZCRX-REG-006", {"reg": {"rq_entries": 250}}),
    ("ZCRX-REG-006", {"reg": {"rq_entries": 128}}),
    ("ZCRX-REG-006", {"setup_flags": DEFAULT_FLAGS | IORING_SETUP_CLAMP,
                      "reg": {"rq_entries": 40000}}),
    ("ZCRX-REG-006", {"setup_flags": DEFAULT_FLAGS | IORING_SETUP_CLAMP,
                      "reg": {"rq_entries": 40000}, "region": {"size": 528384}}),
    ("ZCRX-REG-009", {"region": {"resv": [0, 0, 0, 1]}}),
    ("ZCRX-REG-009", {"region": {"mmap_offset": 4096}}),
    ("ZCRX-REG-009", {"region": {"size": 0}}),
    ("ZCRX-REG-009", {"region": {"flags": 2}}),
    ("ZCRX-REG-009", {"region": {"user_addr": USER_REGION_ADDR}}),
    ("ZCRX-REG-009", {"region": {"size": (1 << 43) + 4096}}),
    # A user region whose end passes 2^64 (check_add_overflow): -EOVERFLOW.
    ("ZCRX-REG-009", {"region": {"flags": 1, "user_addr": (1 << 64) - 4096, "size": 8192}}),
    ("ZCRX-REG-009", {"region": {"flags": 1, "user_addr": USER_REGION_ADDR}}),
    ("ZCRX-REG-009", {"region": {"flags": 1, "user_addr": USER_REGION_ADDR + 8}}),
    ("ZCRX-REG-010", {"netdev": None, "reg": {"if_idx": 9}}),
    # Two faults: the kernel's order decides which errno wins.
    ("ZCRX-REG-001", {"cap_net_admin": False, "setup_flags": IORING_SETUP_CQE32}),
    ("ZCRX-REG-006", {"reg": {"rq_entries": 40000}, "region": {"flags": 1}}),
    ("ZCRX-REG-008", {"region": {"size": 1024}, "netdev": None, "reg": {"if_idx": 9}}),
    ("ZCRX-REG-009", {"region": {"id": 1}, "netdev": None, "reg": {"if_idx": 9}}),
    ("ZCRX-REG-009", {"region": {"resv": [1, 0, 0, 0], "flags": 1}}),
)


def _merge(base: dict[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in patch.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = _merge(dict(out[k]), v)
        else:
            out[k] = v
    return out


@st.composite
def registration_configs(draw: st.DrawFn) -> dict[str, Any]:
    """A valid registration (various buffer sizes, drivers with and without the opt-in),
    often with one fault from :data:`FAULTS`."""
    size = draw(st.sampled_from([0, 0, 4096, 8192, 32768]))
    qcfg = draw(st.booleans()) if size else draw(st.sampled_from([False, False, True]))
    rq_entries = draw(st.sampled_from([1, 3, 8, 64, 100, 256]))
    # ZCRX-REG-008: sized for 7.3's header (entries at 128), which fits 6.18's too.
    region = 4096 if 128 + 16 * rq_entries <= 4096 else 8192
    config: dict[str, Any] = {
        "reg": {"rq_entries": rq_entries, "rx_buf_len": size},
        "area": {"len": draw(st.sampled_from([64 * 1024, 256 * 1024]))},
        "region": {"size": region},
        "netdev": {"qcfg_rx_page_size": qcfg},
    }
    if draw(st.integers(0, 3)) > 0:
        # One fault at a time, so each reaches the check it is aimed at.
        _, patch = draw(st.sampled_from(FAULTS))
        return _merge(config, patch)
    if draw(st.booleans()):
        config["setup_flags"] = draw(st.sampled_from(
            [DEFAULT_FLAGS, DEFAULT_FLAGS | (1 << 18), IORING_SETUP_DEFER_TASKRUN | (1 << 18),
             DEFAULT_FLAGS | (1 << 4)]))
    return config


@st.composite
def registration_scenarios(draw: st.DrawFn) -> Scenario:
    return Scenario(component="zcrx", config=draw(registration_configs()),
                    rules=("ZCRX-REG-011",))


def fault_scenarios() -> list[Scenario]:
    """One registration per entry of :data:`FAULTS`, on the default configuration."""
    base: dict[str, Any] = {"reg": {"rq_entries": 64, "rx_buf_len": 0},
                            "area": {"len": 64 * 1024}, "region": {"size": 4096},
                            "netdev": {"qcfg_rx_page_size": False}}
    return [Scenario(component="zcrx", config=_merge(base, patch), rules=(rule,))
            for rule, patch in FAULTS]


@st.composite
def veth_registration_configs(draw: st.DrawFn) -> dict[str, Any]:
    """ZCRX-REG-012: a registration on veth with any mix of the faults decided before the
    device (ring flags, privilege, reserved words, flags, ring size, region descriptor,
    device index), so the kernel's order between them is exercised, not one at a time.
    (No ``ZCRX_REG_IMPORT`` and no ``event_desc``: the model refuses those on kernels
    that know them.)"""
    page = 4096
    flags = draw(st.sampled_from([
        DEFAULT_FLAGS, DEFAULT_FLAGS, IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_CQE_MIXED,
        DEFAULT_FLAGS | IORING_SETUP_CLAMP, IORING_SETUP_CQE32, IORING_SETUP_DEFER_TASKRUN]))
    reg: dict[str, Any] = {
        "rq_entries": draw(st.one_of(st.sampled_from([0, 1, 64, 250, 256, 32768, 40000]),
                                     st.integers(1, 70000))),
        "if_rxq": draw(st.sampled_from([0, 0, 0, 3, 0xFFFF_FFFF])),
        "flags": draw(st.sampled_from([0, 0, 0, 0, ZCRX_REG_NODEV, 4])),
        "rx_buf_len": draw(st.sampled_from([0, 0, 0, 4096, 8192])),
        "zcrx_id": draw(st.sampled_from([0, 0, 0, 0, 1])),
        "resv": draw(st.sampled_from([[0, 0], [0, 0], [0, 0], [0, 0], [0, 1]])),
    }
    region: dict[str, Any] = {
        "size": draw(st.sampled_from([0, 1024, page, page, 2 * page, 8192 + 64, 528384])),
        "id": draw(st.sampled_from([0, 0, 0, 0, 0, 1])),
        "mmap_offset": draw(st.sampled_from([0, 0, 0, 0, 0, page])),
        "resv": draw(st.sampled_from([[0, 0, 0, 0]] * 5 + [[0, 0, 1, 0]])),
    }
    kind = draw(st.sampled_from(["kernel", "kernel", "user", "user+8", "flag-only",
                                 "addr-only", "flags2"]))
    if kind.startswith("user"):
        region["flags"] = 1
        region["user_addr"] = USER_REGION_ADDR + (8 if kind == "user+8" else 0)
    elif kind == "flag-only":
        region["flags"] = 1
    elif kind == "addr-only":
        region["user_addr"] = USER_REGION_ADDR
    elif kind == "flags2":
        region["flags"] = 2
    config: dict[str, Any] = {
        "setup_flags": flags, "cap_net_admin": draw(st.sampled_from([True] * 7 + [False])),
        "reg": reg, "region": region, "area": {"len": 64 * 1024},
        "netdev": dict(VETH_NETDEV),
    }
    if draw(st.integers(0, 5)) == 0:
        config["netdev"] = None
        reg["if_idx"] = draw(st.sampled_from([0, 9, 77]))
    return config


@st.composite
def veth_registration_scenarios(draw: st.DrawFn) -> Scenario:
    return Scenario(component="zcrx", config=draw(veth_registration_configs()),
                    rules=("ZCRX-REG-012",))


def veth_fault_scenarios() -> list[Scenario]:
    """ZCRX-REG-012: every entry of :data:`FAULTS` and :data:`VETH_FAULTS` on veth (a
    device without a DMA device): what the ``zcrx-live`` target can put to the kernel."""
    base: dict[str, Any] = {"reg": {"rq_entries": 64, "rx_buf_len": 0},
                            "area": {"len": 64 * 1024}, "region": {"size": 4096},
                            "netdev": dict(VETH_NETDEV)}
    return [Scenario(component="zcrx", config=_merge(base, patch), rules=(rule,))
            for rule, patch in FAULTS + VETH_FAULTS]



#: The rules :func:`event_desc_scenarios` aims at (the test spells them out again for
#: ``rx-oracle spec`` and checks the two agree).
EVENT_DESC_RULES = ("ZCRX-REG-003", "ZCRX-REG-007")


def event_desc_scenarios() -> list[tuple[str, Scenario]]:
    """ZCRX-REG-007 before v7.1: the ``event_desc`` word is still the first of
    ``__resv[3]``, so any bit of it set is -EINVAL among the reserved words (ZCRX-REG-003),
    before the flags and the device are looked at: the low bit, the top bit only (a target
    that reads 32 bits of it passes), and with a device index no device has (-ENODEV
    later, ZCRX-REG-010), on the default device and on veth (what the ``zcrx-live``
    target can put to a 6.18 kernel).  From v7.1 the word names a notification
    descriptor, which the model leaves out: the test skips those kernels."""
    base: dict[str, Any] = {"reg": {"rq_entries": 64, "rx_buf_len": 0},
                            "area": {"len": 64 * 1024}, "region": {"size": 4096},
                            "netdev": {"qcfg_rx_page_size": False}}
    patches: tuple[tuple[str, dict[str, Any]], ...] = (
        ("low bit", {"reg": {"event_desc": 1}}),
        ("top bit", {"reg": {"event_desc": 1 << 63}}),
        ("before the device", {"reg": {"event_desc": 1, "if_idx": 9}, "netdev": None}),
    )
    out = [(name, Scenario(component="zcrx", config=_merge(base, patch),
                           rules=EVENT_DESC_RULES)) for name, patch in patches]
    veth = {**base, "netdev": dict(VETH_NETDEV)}
    out += [(f"{name} on veth", Scenario(component="zcrx", config=_merge(veth, patch),
                                         rules=EVENT_DESC_RULES))
            for name, patch in patches[:2]]
    return out

#: The rules :func:`registration_edge_scenarios` aims at (the test spells them out again
#: for ``rx-oracle spec`` and checks the two agree).
REGISTRATION_EDGE_RULES = ("ZCRX-AREA-002", "ZCRX-AREA-003", "ZCRX-BUFLEN-003",
                           "ZCRX-BUFLEN-005", "ZCRX-QUEUE-001", "ZCRX-QUEUE-002",
                           "ZCRX-REG-004", "ZCRX-REG-006", "ZCRX-REG-008", "ZCRX-REG-009",
                           "ZCRX-REG-011")

#: The top of the 64-bit address space (the ZCRX-AREA-002 overflow cases).
_TOP = 1 << 64


def registration_edge_scenarios() -> list[tuple[str, Scenario]]:
    """Registrations on each side of a boundary the draws pass over (the zcrx.py mutants of
    the d97b28c full run): the area's 1 GiB limit, the later 1 TiB cap (exactly 1 TiB
    passes it, and ends a page past 2^64: -EOVERFLOW) and the end of the address space with
    ``PAGE_ALIGN`` (ZCRX-AREA-002: an unaligned length rounds up a page, an end exactly at
    2^64 - 1 does not overflow but is unaligned, ZCRX-AREA-003, by one byte of ``addr`` or
    ``len``); a region of exactly ``INT_MAX`` pages and one more (ZCRX-REG-009, -E2BIG),
    one exactly as large as the ring needs, whose ``user_addr`` without the user flag is
    then -EFAULT (ZCRX-REG-008 passes at equality); 32768 entries without
    IORING_SETUP_CLAMP (allowed) and 40000 with a region large enough for their rounding
    (refused by ZCRX-REG-006 itself, not by the region size); the last queue of four and
    the first beyond (ZCRX-QUEUE-001); the protocol's default device (no
    QCFG_RX_PAGE_SIZE opt-in, ZCRX-BUFLEN-005); segments one power of two too small for
    the buffers, and a 1-byte segment (ZCRX-BUFLEN-003); a driver default page size of 0
    (-ERANGE) and 1 (a power of two, ZCRX-QUEUE-002); ``ZCRX_REG_IMPORT`` before the
    registration flags existed (ZCRX-REG-004, -EINVAL; later the model leaves importing
    out).  The same cases on veth where the refusal comes before the device (not the
    region of ``INT_MAX`` pages, which a real kernel then fails to allocate)."""
    base: dict[str, Any] = {"reg": {"rq_entries": 64, "rx_buf_len": 0},
                            "area": {"len": 64 * 1024}, "region": {"size": 4096},
                            "netdev": {"qcfg_rx_page_size": False}}
    user_region = {"size": 8256, "user_addr": USER_REGION_ADDR}
    patches: tuple[tuple[str, str, dict[str, Any]], ...] = (
        ("area of 1 GiB", "ZCRX-AREA-002", {"area": {"len": SZ_1G}}),
        ("area of 1 GiB and a page", "ZCRX-AREA-002", {"area": {"len": SZ_1G + 4096}}),
        # Only above the later 1 TiB cap: an area of exactly 1 TiB would be registered,
        # 2^28 niovs that neither the model nor a test host should hold.
        ("area of 1 TiB and a page", "ZCRX-AREA-002", {"area": {"len": SZ_1T + 4096}}),
        # Exactly 1 TiB passes the cap (it is inclusive) and is refused only because it
        # ends a page past 2^64 (-EOVERFLOW): the cap's edge without 2^28 niovs.
        ("area of exactly 1 TiB, a page past 2^64", "ZCRX-AREA-002",
         {"area": {"addr": _TOP - SZ_1T + 4096, "len": SZ_1T}}),
        ("area ends a page below 2^64", "ZCRX-AREA-002",
         {"area": {"addr": _TOP - 8192, "len": 4096}}),
        ("unaligned len rounds up past 2^64", "ZCRX-AREA-002",
         {"area": {"addr": _TOP - 8192, "len": 4097}}),
        ("three pages past 2^64", "ZCRX-AREA-002",
         {"area": {"addr": _TOP - 8192, "len": 12288}}),
        ("area ends at 2^64 - 1", "ZCRX-AREA-003",
         {"area": {"addr": _TOP - 1 - 4096, "len": 4096}}),
        ("addr one byte off", "ZCRX-AREA-003", {"area": {"addr": DEFAULT_AREA_ADDR + 1}}),
        ("len one byte over", "ZCRX-AREA-003", {"area": {"len": 64 * 1024 + 1}}),
        ("region of INT_MAX pages", "ZCRX-REG-009", {"region": {"size": (1 << 43) - 4096}}),
        ("region of 2^31 pages", "ZCRX-REG-009", {"region": {"size": 1 << 43}}),
        ("region exactly the ring's", "ZCRX-REG-008",
         {"reg": {"rq_entries": 512}, "region": user_region}),
        ("32768 entries without CLAMP", "ZCRX-REG-006",
         {"reg": {"rq_entries": 32768}, "region": {"size": 528384}}),
        ("40000 entries without CLAMP, region for 65536", "ZCRX-REG-006",
         {"reg": {"rq_entries": 40000}, "region": {"size": 1052672}}),
        ("last queue", "ZCRX-QUEUE-001", {"reg": {"if_rxq": 3}}),
        ("one queue beyond", "ZCRX-QUEUE-001", {"reg": {"if_rxq": 4}}),
        ("default device", "ZCRX-BUFLEN-005", {"reg": {"rx_buf_len": 16384}, "netdev": {}}),
        ("segments half a buffer", "ZCRX-BUFLEN-003",
         {"reg": {"rx_buf_len": 8192}, "memory": {"chunks": [4096] * 16},
          "netdev": {"qcfg_rx_page_size": True}}),
        ("a 1-byte segment", "ZCRX-BUFLEN-003", {"memory": {"chunks": [1, 65535]}}),
        ("driver default page size 0", "ZCRX-QUEUE-002",
         {"netdev": {"qcfg_rx_page_size": True, "default_rx_page_size": 0}}),
        ("driver default page size 1", "ZCRX-QUEUE-002",
         {"netdev": {"qcfg_rx_page_size": True, "default_rx_page_size": 1}}),
        ("ZCRX_REG_IMPORT before the flags", "ZCRX-REG-004",
         {"reg": {"flags": ZCRX_REG_IMPORT}}),
    )
    out = []
    for name, rule, patch in patches:
        config = _merge(base, patch)
        if name == "default device":
            config["netdev"] = {}
        out.append((name, Scenario(component="zcrx", config=config, rules=(rule,))))
    veth = {**base, "netdev": dict(VETH_NETDEV)}
    out += [(f"{name} on veth", Scenario(component="zcrx", config=_merge(veth, patch),
                                         rules=(rule,)))
            for name, rule, patch in patches
            if rule in ("ZCRX-REG-004", "ZCRX-REG-006", "ZCRX-REG-008", "ZCRX-REG-009")
            and name not in _LIVE_ALLOCATION_FAILS]
    return out


#: Cases whose region passes ZCRX-REG-009's checks only to be allocated: 8 TiB of pages,
#: which the live kernel refuses with -ENOMEM (6.18.44, stop 30's CI), an allocation the
#: model does not predict; so no veth copy of them reaches the ``zcrx-live`` target.
_LIVE_ALLOCATION_FAILS = frozenset({"region of INT_MAX pages"})


def registration_edge_not_applicable(scenario: Scenario, kernel: KernelVersion) -> str:
    """Why a case of :func:`registration_edge_scenarios` describes no behaviour of
    ``kernel`` ("" when it does): ``ZCRX_REG_IMPORT`` once the flags exist is outside the
    model (ZCRX-REG-004)."""
    cfg = scenario.config
    if int(cfg.get("reg", {}).get("flags", 0)) & ZCRX_REG_IMPORT and gate(kernel,
                                                                          "ZCRX-REG-004"):
        return "ZCRX_REG_IMPORT is a known flag (ZCRX-REG-004), importing is outside the model"
    return ""


#: The rules :func:`data_path_edge_scenarios` aims at (spelled out again in the test).
DATA_PATH_EDGE_RULES = ("ZCRX-COPY-003", "ZCRX-COPY-004", "ZCRX-CQE-002", "ZCRX-MP-002",
                        "ZCRX-MP-005", "ZCRX-MP-006", "ZCRX-REFILL-002", "ZCRX-SCRUB-002",
                        "ZCRX-SIM-001", "ZCRX-SIM-003")


def data_path_edge_scenarios() -> list[tuple[str, Scenario]]:
    """Data-path states the draws reach rarely or end before they show (the engine, pool,
    provider and recv mutants of the d97b28c full run): a ring with CQE_MIXED, whose
    CQEs carry IORING_CQE_F_32 (ZCRX-CQE-002); every op after the shutdown, and on a
    registration that failed, is skipped (ZCRX-SCRUB-002, ZCRX-SIM-003); a refill entry
    naming the niov just past the area, the last one, and one byte below the end
    (ZCRX-REFILL-002); a receive whose limit ends exactly where the linear part does,
    and a linear copy the freelist runs dry in (ZCRX-COPY-004, ZCRX-COPY-003: the skb's
    turn ends there, its frags wait); the state the pools are left in without a shutdown:
    an skb freed after its niov's refill was held puts it in the ptr_ring, not the cache
    (ZCRX-MP-005); 67 niovs in the ptr_ring refill the cache with 64 (ZCRX-MP-002); a
    dropped packet's whole-niov frag goes to the cache (direct, ZCRX-SIM-001); a restart
    with a 4-entry ptr_ring and more buffers posted than it holds, so the freelist order,
    and the niovs the next pool hands out, depend on what went to the cache and what to
    the ring (ZCRX-MP-006)."""
    dev = {"placement": "packed", "gro_segs": 1, "linear_payload": 0}
    base: dict[str, Any] = {"reg": {"rq_entries": 64, "rx_buf_len": 0},
                            "area": {"len": 64 * 4096}, "netdev": {"qcfg_rx_page_size": False},
                            "device": dev}
    held: list[dict[str, Any]] = [
        {"op": "rx", "frames": [0]}, {"op": "recv", "len": 4096, "user_data": 1},
        {"op": "return", "cqes": [0]}, {"op": "alloc", "n": 200},
        {"op": "recv", "len": 0, "user_data": 2}]
    batch: dict[str, Any] = {
        "reg": {"rq_entries": 128, "rx_buf_len": 0}, "region": {"size": 8192},
        "netdev": {"qcfg_rx_page_size": False}, "area": {"len": 128 * 4096},
        "device": {**dev, "gro_segs": 32}}
    every_op: list[dict[str, Any]] = [{"op": "rx"}, {"op": "recv", "len": 0, "user_data": 2},
                {"op": "return", "cqes": [0]}, {"op": "return", "new": True},
                {"op": "refill", "entries": [{"off": 0}]}, {"op": "alloc", "n": 3},
                {"op": "restart"}, {"op": "reap"}, {"op": "shutdown"}]
    cases: tuple[tuple[str, str, dict[str, Any], list[int], list[dict[str, Any]]], ...] = (
        ("CQE_MIXED ring", "ZCRX-CQE-002",
         {"setup_flags": IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_CQE_MIXED},
         [1448, 3000], [{"op": "rx"}, {"op": "recv", "len": 0, "user_data": 1}]),
        ("after the shutdown", "ZCRX-SCRUB-002", {}, [1448, 3000],
         [{"op": "rx", "frames": [0]}, {"op": "recv", "len": 0, "user_data": 1},
          {"op": "shutdown"}, *every_op]),
        ("on a failed registration", "ZCRX-SIM-003", {"reg": {"rq_entries": 0}}, [1448],
         every_op),
        ("refill index bounds", "ZCRX-REFILL-002", {}, [1448],
         [{"op": "refill", "entries": [{"off": 64 << 12}, {"off": 63 << 12},
                                       {"off": (64 << 12) - 1}]},
          {"op": "alloc", "n": 1}]),
        ("limit at the linear end", "ZCRX-COPY-004",
         {"area": {"len": 1 << 20}, "device": {"linear_payload": 1448}}, [3000, 3000],
         [{"op": "rx"}, {"op": "recv", "len": 1448, "user_data": 1},
          {"op": "recv", "len": 0, "user_data": 2}]),
        ("linear copy runs dry", "ZCRX-COPY-003",
         {"area": {"len": 65 * 4096}, "device": {"linear_payload": 5000}}, [6000, 6000],
         [{"op": "rx"}, {"op": "recv", "len": 0, "user_data": 1}]),
        ("held refill, skb freed", "ZCRX-MP-005", {}, [4096 + 100], held),
        ("67 niovs in the ptr_ring", "ZCRX-MP-002", batch, [8948] * 32,
         [{"op": "rx"}, {"op": "recv", "len": 67 * 4096, "user_data": 1},
          {"op": "return", "cqes": list(range(67))}, {"op": "alloc", "n": 200},
          {"op": "alloc", "n": 1}, {"op": "recv", "len": 0, "user_data": 2},
          {"op": "alloc", "n": 1}]),
        ("dropped packet's whole niov", "ZCRX-SIM-001", {"area": {"len": 8192}},
         [4096, 5000], [{"op": "rx"}]),
        ("restart over a small ptr_ring", "ZCRX-MP-006", {"pool_size": 4},
         [1448, 3000, 5000],
         [{"op": "alloc", "n": 10}, {"op": "rx", "frames": [0]}, {"op": "restart"},
          {"op": "rx", "frames": [1, 2]}, {"op": "recv", "len": 0, "user_data": 5}]),
        ("restart after a held refill", "ZCRX-MP-006", {"pool_size": 4}, [1448, 3000, 5000],
         [{"op": "rx", "frames": [0]}, {"op": "recv", "len": 0, "user_data": 1},
          {"op": "return", "cqes": [0]}, {"op": "alloc", "n": 70}, {"op": "restart"},
          {"op": "rx", "frames": [1, 2]}, {"op": "recv", "len": 0, "user_data": 5}]),
    )
    return [(name, Scenario(component="zcrx", config=_merge(base, patch),
                            frames=frames_for(payloads), events=tuple(events), rules=(rule,)))
            for name, rule, patch, payloads, events in cases]


def _refill_entry(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["index", "index", "area", "pad", "far"]))
    idx = draw(st.integers(0, 80))
    off = idx << 12
    if kind == "area":
        off |= 1 << IORING_ZCRX_AREA_SHIFT
    elif kind == "far":
        off = draw(st.sampled_from([1 << 44, (1 << 48) - 4096, 1 << 30]))
    return {"off": off, "len": 4096, "pad": 1 if kind == "pad" else 0}


def direct_recycle_scenario() -> Scenario:
    """The driver's direct put is a niov's last reference (ZCRX-MP-005's alloc-cache arm):
    one TCP segment lands in a niov, the user reads and returns it, the provider's
    refill takes the entry, and the driver, moving on, drops its hold in NAPI context,
    so the niov goes to the pool's alloc cache, not its ring (which niov the next
    allocation gets depends on it).  Found by searching the draw for that arm; the ci
    draw of the data-path properties meets it only by luck of the seed."""
    segment = bytes.fromhex(
        "02000000000202000000000108004500002900010000400666cc0a0000010a000002"
        "9c40270f000003e80000000050102000b499000000")
    return Scenario(
        component="zcrx",
        config={"reg": {"rq_entries": 4, "rx_buf_len": 32768},
                "area": {"len": 65536, "flags": IORING_ZCRX_AREA_DMABUF, "addr": 0,
                         "dmabuf_fd": 3},
                "netdev": {"qcfg_rx_page_size": True},
                "device": {"placement": "packed", "gro_segs": 1, "linear_payload": 0},
                "cq_entries": 4096, "pool_size": 1024},
        frames=(segment,),
        events=({"op": "rx", "frames": []}, {"op": "rx"},
                {"op": "recv", "len": 0, "user_data": 9}, {"op": "return", "cqes": [0]},
                {"op": "alloc", "n": 2}, {"op": "shutdown"}),
        rules=("ZCRX-MP-005", "ZCRX-CQE-002", "ZCRX-REFILL-001"),
    )


@st.composite
def data_path_scenarios(draw: st.DrawFn) -> Scenario:
    """A registered queue, a stream of frames, and a user who returns, double-returns and
    scribbles on the refill ring; restarts, CQ pressure and a final shutdown."""
    size = draw(st.sampled_from([0, 0, 4096, 8192, 32768]))
    payloads = draw(st.lists(st.sampled_from([0, 1, 100, 1448, 1448, 1448, 3000, 8000]),
                             min_size=1, max_size=14))
    rq_entries = draw(st.sampled_from([4, 16, 64]))
    config: dict[str, Any] = {
        "reg": {"rq_entries": rq_entries, "rx_buf_len": size},
        "area": {"len": draw(st.sampled_from([64 * 1024, 128 * 1024, 256 * 1024]))},
        "netdev": {"qcfg_rx_page_size": bool(size) or draw(st.booleans())},
        "device": {"placement": draw(st.sampled_from(["packed", "packed", "per_packet"])),
                   "gro_segs": draw(st.sampled_from([1, 1, 2, 4])),
                   "linear_payload": draw(st.sampled_from([0, 0, 0, 10]))},
        "cq_entries": draw(st.sampled_from([4096, 4096, 5])),
        "pool_size": draw(st.sampled_from([1024, 4])),
    }
    events_first: list[dict[str, Any]] = []
    if draw(st.integers(0, 3)) == 0:
        # The copy family (ZCRX-COPY-001..004): payload left in the linear part (and, past
        # the first segment of an skb, in ordinary-page frags), a readable area with free
        # niovs beyond the pool's first provider batch, sometimes a CQ that fills.
        # (The pool's first provider batch takes 64 niovs: 256 of 4 KiB leave the rest.)
        config["device"]["linear_payload"] = draw(st.sampled_from([10, 1448, 5000]))
        config["area"]["len"] = 1 << 20
        config["reg"]["rx_buf_len"] = 0
        config["netdev"]["qcfg_rx_page_size"] = False
        events_first = [{"op": "rx"}, {"op": "recv", "len": draw(st.sampled_from([0, 3000])),
                                       "user_data": 5}]
    elif draw(st.integers(0, 2)) == 0:
        config["area"]["flags"] = IORING_ZCRX_AREA_DMABUF
        config["area"]["addr"] = 0
        config["area"]["dmabuf_fd"] = 3
    n = len(payloads)
    events: list[dict[str, Any]] = list(events_first)
    for _ in range(draw(st.integers(1, 8))):
        op = draw(st.sampled_from(["rx", "recv", "return", "return", "refill", "alloc",
                                   "restart", "reap", "recv"]))
        if op == "rx":
            events.append({"op": "rx", "frames": draw(st.lists(st.integers(0, n - 1),
                                                               max_size=4, unique=True))})
        elif op == "recv":
            events.append({"op": "recv", "len": draw(st.sampled_from([0, 0, 500, 5000])),
                           "user_data": 7})
        elif op == "return":
            events.append({"op": "return",
                           "cqes": draw(st.lists(st.integers(0, 30), max_size=6))})
        elif op == "refill":
            events.append({"op": "refill", "entries": [
                _refill_entry(draw) for _ in range(draw(st.integers(1, 4)))]})
        elif op == "alloc":
            events.append({"op": "alloc", "n": draw(st.integers(1, 70))})
        else:
            events.append({"op": op})
    events += [{"op": "rx"}, {"op": "recv", "len": 0, "user_data": 9},
               {"op": "return", "cqes": list(range(draw(st.integers(0, 12))))},
               {"op": "alloc", "n": draw(st.integers(0, 70))}]
    if draw(st.booleans()):
        events.append({"op": "shutdown"})
    return Scenario(component="zcrx", config=config, frames=frames_for(payloads),
                    events=tuple(events), rules=("ZCRX-CQE-002", "ZCRX-REFILL-001"))


@st.composite
def held_scenarios(draw: st.DrawFn) -> Scenario:
    """Niovs an unread skb still holds, and an area that runs dry mid-packet.

    ``held``: a packet spans two niovs; the user reads exactly the first (ZCRX-CQE-005:
    the call stops at the skb it did not finish) and returns it; the driver drains its
    pool's cache so the refill is read while the skb still holds the niov (ZCRX-REFILL-004,
    held); reading the rest frees the skb, whose put is the niov's last, into the pool's
    ptr_ring (ZCRX-MP-005); the next allocation refills the cache from that ring
    (ZCRX-MP-002).  Then a receive whose limit ends exactly at an skb's end, and a
    shutdown with a partly read skb queued, so the scrub leaves a niov that skb still
    holds (ZCRX-SCRUB-001); ``batch``: the same at the scale of a whole refill batch.
    ``dry``: packed payload into a few niovs nobody returns, so a
    packet that already has a frag finds no next buffer and is dropped, its frags given
    back (ZCRX-SIM-001)."""
    size = draw(st.sampled_from([0, 8192]))
    niov = size or 4096
    events: list[dict[str, Any]]
    config: dict[str, Any] = {
        "reg": {"rq_entries": 64, "rx_buf_len": size},
        "netdev": {"qcfg_rx_page_size": bool(size)},
        "device": {"placement": "packed", "gro_segs": 1, "linear_payload": 0},
    }
    kind = draw(st.sampled_from(["held", "dry", "batch"]))
    if kind == "batch":
        # ``held`` at scale: one big GRO skb (BIG TCP-sized) over 70 niovs; the user reads
        # and returns the first 65, the refill of 64 of them is read while the skb holds
        # them, so freeing the skb leaves 64 niovs in the ptr_ring, and the next
        # allocation stops refilling its cache at 64 (ZCRX-MP-002).
        config["reg"] = {"rq_entries": 128, "rx_buf_len": 0}
        config["region"] = {"size": 8192}
        config["netdev"] = {"qcfg_rx_page_size": False}
        config["area"] = {"len": 128 * 4096}
        config["device"]["gro_segs"] = 32
        payloads = [8948] * 32
        events = [{"op": "rx"}, {"op": "recv", "len": 65 * 4096, "user_data": 1},
                  {"op": "return", "cqes": list(range(65))}, {"op": "alloc", "n": 200},
                  {"op": "recv", "len": 0, "user_data": 2},
                  {"op": "alloc", "n": draw(st.integers(1, 3))}]
    elif kind == "dry":
        # Three quarters of a niov and a little more per packet: packets straddle niovs
        # and never end on a boundary, and twice as many as fit arrive.
        niovs = draw(st.integers(2, 6))
        config["area"] = {"len": niovs * niov}
        payload = niov * 3 // 4 + draw(st.sampled_from([100, 700]))
        payloads = [payload] * draw(st.integers(2 * niovs, 2 * niovs + 2))
        events = [{"op": "rx"}, {"op": "recv", "len": 0, "user_data": 3}]
    else:
        config["area"] = {"len": draw(st.sampled_from([64, 128])) * niov}
        tail, exact = draw(st.integers(1, niov - 1)), draw(st.sampled_from([100, 1448]))
        payloads = [niov + tail, exact, draw(st.sampled_from([1448, 3000]))]
        events = [{"op": "rx", "frames": [0]}, {"op": "recv", "len": niov, "user_data": 1},
                  {"op": "return", "cqes": [0]}, {"op": "alloc", "n": 200},
                  {"op": "recv", "len": 0, "user_data": 2},
                  {"op": "alloc", "n": draw(st.integers(1, 3))},
                  {"op": "rx", "frames": [1]}, {"op": "recv", "len": exact, "user_data": 3},
                  {"op": "rx", "frames": [2]}, {"op": "recv", "len": 500, "user_data": 4}]
        if draw(st.booleans()):
            events.append({"op": "return", "new": True})
    events.append({"op": "shutdown"})
    return Scenario(component="zcrx", config=config, frames=frames_for(payloads),
                    events=tuple(events), rules=("ZCRX-MP-005", "ZCRX-SCRUB-001"))


@st.composite
def stream_scenarios(draw: st.DrawFn) -> Scenario:
    """A bulk stream received and returned in order (ZCRX-SIM-004), cut into MSS segments
    as :func:`~reference.zcrx.scenario.mss_stream` cuts it (the last one may be short).

    One stream in three is a backlog: every segment arrives, one skb each, before the
    first receive call, 19..24 skbs, so a call meets the actor's per-call limit on either
    side (ZCRX-CQE-005: at most 21 actor calls, requeued after more than 20)."""
    size = draw(st.sampled_from([4096, 8192, 16384, 32768]))
    backlog = draw(st.integers(0, 2)) == 0
    segs = draw(st.integers(19, 24) if backlog else st.integers(4, 24))
    mss = draw(st.sampled_from([1448, 1460, 4096, 9000 - 52]))
    # A bulk transfer of whole MSS segments, or one whose last segment is short.
    last = draw(st.sampled_from([mss, mss, 100, 700]))
    payloads = mss_stream((segs - 1) * mss + last, mss)
    gro = 1 if backlog else draw(st.sampled_from([1, 4]))
    events: list[dict[str, Any]] = []
    for i in range(0, segs, gro):  # one NAPI poll per GRO batch
        events.append({"op": "rx", "frames": list(range(i, min(i + gro, segs)))})
        if backlog:
            continue
        events.append({"op": "recv", "user_data": 1})
        events.append({"op": "reap"})
        events.append({"op": "return", "new": True})
    for _ in range(2 if backlog else 0):  # the first call stops at the limit
        events.append({"op": "recv", "user_data": 1})
        events.append({"op": "reap"})
        events.append({"op": "return", "new": True})
    config = {"reg": {"rq_entries": 256, "rx_buf_len": size},
              "area": {"len": 1 << 20}, "region": {"size": 8192},
              "netdev": {"qcfg_rx_page_size": True},
              "device": {"gro_segs": gro}}
    return Scenario(component="zcrx", config=config, frames=frames_for(payloads),
                    events=tuple(events), rules=("ZCRX-SIM-004",))


def scenarios() -> st.SearchStrategy[Scenario]:
    """Every kind of zcrx scenario."""
    # Registration twice: it has the most rules, one fault each (FAULTS).
    return st.one_of(registration_scenarios(), registration_scenarios(), data_path_scenarios(),
                     stream_scenarios(), veth_registration_scenarios())


def fixture_scenarios() -> st.SearchStrategy[Scenario]:
    """What ``rx-oracle fixtures generate`` draws: every kind of scenario, and the one
    registration per fault (:func:`fault_scenarios`) so the corpus meets each refusal."""
    return st.one_of(scenarios(), st.sampled_from(fault_scenarios()))

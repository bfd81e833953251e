"""The ``fec`` component: frames through the FEC MAC model and the fec driver's RX ring,
XDP verdicts, XDP transmit and TX completion, with page_pool pages accounted throughout.

config:  ``byte_order`` ("little" i.MX / "big" ColdFire), ``bufdesc_ex``, ``racc``
         (SHIFT16), ``rx_csum`` (NETIF_F_RXCSUM), ``vlan_rx`` (NETIF_F_HW_VLAN_CTAG_RX),
         ``rx_ring_size``, ``tx_ring_size``, ``avb`` (FEC_QUIRK_HAS_AVB), ``num_tx_queues``,
         ``num_rx_queues`` (queues 1.. only hold filled pools, FEC-RX-018),
         ``cpu``, ``xdp_tx_frame`` (the XDP_TX of commit f601899e4321, Aug 2023),
         ``redirect_ok``, ``budget`` (NAPI budget, default 64), ``page_alloc_bulk`` (most
         pages one bulk allocation returns; 1 keeps the pool cache empty), ``faults`` (frame index
         as a decimal string -> list of "crc", "overrun", "non_octet", "no_last", "split"),
         ``arch`` ("arm64" default, or "armhf": the XDP buffer geometry, FEC-RX-017).
         An XDP program is installed when ``program`` or ``per_packet_programs`` is given.
events:  optional; default: ``rx`` (every frame), ``napi``, ``tx_done``, ``napi``,
         ``stack_free``.  Ops: ``{"op": "rx", "frames": [i, ...]}`` (default: the frames
         not yet received), ``{"op": "napi", "budget": n}``, ``{"op": "tx_done", "count":
         n|null, "status": bits}``, ``{"op": "xdp_xmit", "frames": [i, ...]}``
         (ndo_xdp_xmit of those frames from another device), ``{"op": "fail_allocs",
         "count": n}``, ``{"op": "stack_free"}``, ``{"op": "restart"}``, ``{"op": "close"}``.
observables: ``packets`` (one per RX descriptor the driver consumed), ``tx_completions``,
         ``wire`` (frames the MAC sent), ``xdp_xmit`` (frames each ndo call queued),
         ``counters`` (ndev->stats), ``ethtool`` (XDP and page_pool strings),
         ``page_pool``, ``conservation``, ``ops``, ``rx_ring`` (the ring bytes at the end),
         ``dma``: fec's own syncs for the CPU and for the device as ``[offset in page,
         length]`` in call order, its TX unmaps, and the pool's maps, unmaps and syncs for
         the device (``[offset in page, length]``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs
from hypothesis import strategies as st

from conformance.components import Component, libblame
from conformance.components.xdp import op_lists
from conformance.readable import config_text, value_text
from conformance.scenario import Scenario
from conformance.strategies.frames import ethernet_frames
from reference import page_pool as pp
from reference.errors import InvalidConfig
from reference.fec import device, rx, tx
from reference.fec.bufdesc import (
    BD_ENET_TX_CSL,
    BD_ENET_TX_DEF,
    BD_ENET_TX_HB,
    BD_ENET_TX_LC,
    BD_ENET_TX_RL,
    BD_ENET_TX_STATS,
    BD_ENET_TX_UN,
    rx_sc_names,
)
from reference.fec.counters import ethtool_xdp_and_pp
from reference.fec.state import FecConfig, Fep, TxBufType
from reference.kernel import resolve_kernel
from reference.page_pool.stats import PagePoolStats
from reference.trace import Trace
from reference.xdp.buff import XdpBuff, xdp_init_buff, xdp_prepare_buff
from reference.xdp.frame import xdp_convert_buff_to_frame
from reference.xdp.mem import MemType
from reference.xdp.rxq import NetDev, XdpRxqInfo

DEFAULT_EVENTS: tuple[Mapping[str, Any], ...] = (
    {"op": "rx"}, {"op": "napi"}, {"op": "tx_done"}, {"op": "napi"}, {"op": "stack_free"},
)
_DRIVER_KEYS = {"budget", "faults", "page_alloc_bulk"}
#: DMA addresses are reported as offsets into their page (the bus address of a page is
#: the model's own convention; the offset and length are what fec chose).
_PAGE_MASK = 4096 - 1


def config_of(scenario: Scenario) -> FecConfig:
    cfg = {k: v for k, v in scenario.config.items() if k not in _DRIVER_KEYS}
    cfg["xdp"] = scenario.program is not None or bool(scenario.per_packet_programs)
    return attrs.evolve(FecConfig.from_dict(cfg), kernel=resolve_kernel(scenario.kernel))


def _skb_obs(skb: rx.Skb | None) -> dict[str, Any] | None:
    if skb is None:
        return None
    return {"len": skb.len, "data": skb.data.hex(), "protocol": skb.protocol,
            "ip_summed": skb.ip_summed, "csum": skb.csum,
            "vlan": None if skb.vlan is None else {"proto": skb.vlan[0], "tci": skb.vlan[1]},
            "queue": skb.queue}


def _packet_obs(rec: rx.RxRecord, frame: int | None) -> dict[str, Any]:
    x = rec.xdp
    page = {"error": "kept", "refill_failed": "kept"}.get(rec.outcome, rec.outcome)
    out: dict[str, Any] = {
        "slot": rec.slot, "frame": frame, "sc": rec.sc, "datlen": rec.datlen,
        "outcome": "error" if rec.outcome == "error" else
        "refill_failed" if rec.outcome == "refill_failed" else "ok",
        "verdict": None if x is None else x.verdict,
        "ops": [] if x is None else list(x.run.records),
        "page": page,
        "recycle": None, "tx": None, "exception": False if x is None else x.exception,
        "skb": _skb_obs(rec.skb), "rearm_sc": rec.rearm_sc,
    }
    if x is not None and x.recycle is not None:
        out["recycle"] = {"sync": x.recycle[0], "direct": x.recycle[1],
                          "outcome": x.recycle[2]}
    if x is not None and isinstance(x.tx, tuple):
        out["tx"] = {"queue": x.tx[0], "slot": x.tx[1], "len": x.tx[2], "sync": x.tx[3]}
    elif x is not None and isinstance(x.tx, int):
        out["tx"] = {"err": x.tx}
    return out


def _ndo_frames(fep: Fep, frames: list[bytes]) -> list[Any]:
    """xdp_frames another device redirected to us: order-0 pages of its own."""
    out = []
    for data in frames:
        pfn = max((p for p in fep.bus.pages if p >= 0x80000), default=0x7FFFF) + 1
        page = fep.bus.foreign(pfn)
        rxq = XdpRxqInfo(dev=NetDev(ifindex=3, name="peer0"))
        rxq.mem.type = MemType.MEM_TYPE_PAGE_ORDER0
        xdp = XdpBuff()
        xdp_init_buff(xdp, 4096, rxq)
        length = min(len(data), 4096 - 256 - 320)
        xdp_prepare_buff(xdp, page, 0, 256, length, True)
        page.data[256 : 256 + length] = data[:length]
        frame = xdp_convert_buff_to_frame(xdp)
        assert frame is not None
        out.append(frame)
    return out


def _rules_since(trace: Trace | None, start: int) -> set[str]:
    return {e.rule for i, e in enumerate(trace or ()) if i >= start}


def run(scenario: Scenario, trace: Trace | None = None,
        blame: dict[str, Any] | None = None) -> dict[str, Any]:
    """The observables; with ``blame`` (and a ``trace``), also which rule decided each TX
    completion (``blame["completions"]``) and the last write of the RX ring
    (``blame["rx_ring"]``), from the events and the reference's own trace."""
    cfg = config_of(scenario)
    origins: list[tuple[str, ...]] = []
    ring_rule = "FEC-RX-001"  # fec_enet_open armed every slot
    tx_held = False  # a budget-0 poll left XDP buffers for a later one (FEC-TX-006)
    budget_default = int(scenario.config.get("budget", 64))
    faults = {int(k): frozenset(v) for k, v in dict(scenario.config.get("faults", {})).items()}
    allocator = pp.PageAllocator(pp.ARM64_4K)
    if "page_alloc_bulk" in scenario.config:
        allocator.bulk_limit = int(scenario.config["page_alloc_bulk"])
    fep = rx.fec_enet_open(cfg, allocator=allocator, trace=trace)
    slot_frame: dict[int, int] = {}

    def program_for(slot: int) -> Any:
        i = slot_frame.get(slot)
        ops = scenario.program_for(i) if i is not None else scenario.program
        return ops if ops is not None else ()

    packets: list[dict[str, Any]] = []
    completions: list[dict[str, Any]] = []
    wire: list[str] = []
    xmit: list[int] = []
    received = 0
    for ev in scenario.events or DEFAULT_EVENTS:
        op = ev["op"]
        mark = len(trace) if trace is not None else 0
        if op == "rx":
            which = ev.get("frames")
            indices = list(range(received, len(scenario.frames))) if which is None else which
            for i in indices:
                w = device.receive(fep, scenario.frames[int(i)], faults.get(int(i), frozenset()),
                                   trace=trace)
                for s in w.slots:
                    slot_frame[s] = int(i)
            received = max([received, *[int(i) + 1 for i in indices]])
            ring_rule = "FEC-DEV-005" if indices else ring_rule
        elif op == "napi":
            recs, done = rx.napi_poll(fep, int(ev.get("budget", budget_default)), program_for,
                                      trace)
            packets += [_packet_obs(r, slot_frame.pop(r.slot, None)) for r in recs]
            completions += [_completion(c) for c in done]
            origins += [("FEC-TX-006", "FEC-TX-005") if tx_held else ("FEC-TX-005",)] * len(done)
            tx_held = "FEC-TX-006" in _rules_since(trace, mark) or (tx_held and not done)
            ring_rule = "FEC-RX-003" if recs else ring_rule
        elif op == "tx_done":
            count = ev.get("count")
            for q in range(len(fep.txqs)):
                wire += [f.hex() for f in device.transmit(
                    fep, q, None if count is None else int(count), int(ev.get("status", 0)),
                    trace)]
        elif op == "xdp_xmit":
            frames = _ndo_frames(fep, [scenario.frames[int(i)] for i in ev["frames"]])
            xmit.append(tx.xdp_xmit(fep, frames, trace))
        elif op == "fail_allocs":
            fep.allocator.fail(int(ev.get("count", 1)))
        elif op == "stack_free":
            rx.stack_free(fep, trace)
        elif op == "restart":
            done = rx.fec_restart(fep, trace)
            completions += [_completion(c) for c in done]
            origins += [("FEC-TX-007",)] * len(done)
            ring_rule, tx_held = "FEC-RX-013", False
        elif op == "close":
            done = rx.fec_enet_close(fep, trace)
            completions += [_completion(c) for c in done]
            origins += [("FEC-TX-007",)] * len(done)
            break
        else:
            raise InvalidConfig("unknown fec event", field="events.op", value=op,
                                rule="FEC-RX-001")
    if blame is not None:
        blame["completions"] = origins
        blame["rx_ring"] = ring_rule
    pool = fep.rxq.pool
    dev = pool.dev
    assert dev is not None
    stats = PagePoolStats()
    pool.get_stats(stats)
    for idle in fep.idle_pools:  # FEC-RX-018, FEC-STATS-004: every queue's pool
        idle.get_stats(stats)
    return {
        "packets": packets,
        "tx_completions": completions,
        "wire": wire,
        "xdp_xmit": xmit,
        "counters": fep.stats.as_dict(),
        "ethtool": ethtool_xdp_and_pp([fep.rxq.stats], stats),
        "page_pool": {"state": pool.state.value, "inflight": pool.inflight(),
                      "dma_dir": pool.dma_dir, "max_len": pool.max_len,
                      "offset": pool.offset, "pool_size": pool.pool_size},
        "conservation": rx.conservation(fep),
        "ops": {"xdp_frame_conversions": fep.ops.xdp_frame_conversions,
                "dma_syncs_for_cpu": len(fep.syncs.for_cpu),
                "dma_syncs_for_device": len(fep.syncs.for_device)},
        "dma": {"for_cpu": [[addr & _PAGE_MASK, n] for addr, n in fep.syncs.for_cpu],
                "for_device": [[addr & _PAGE_MASK, n] for addr, n in fep.syncs.for_device],
                "unmaps": fep.syncs.unmaps,
                "pool": {"maps": dev.maps, "unmaps": dev.unmaps,
                         "syncs_for_device": [[s.addr & _PAGE_MASK, s.size]
                                              for s in dev.syncs_for_device]}},
        "rx_ring": bytes(fep.rxq.ring.mem).hex(),
    }


def _completion(c: tx.TxCompletion) -> dict[str, Any]:
    return {"queue": c.queue, "slot": c.slot, "type": TxBufType(c.type).name,
            "bytes": c.bytes, "error": c.error, "fate": c.fate}


def expected(scenario: Scenario) -> dict[str, Any]:
    return run(scenario)


_PAGE_RULES = {"tx_ring": ("FEC-XDP-005",), "recycled": ("FEC-XDP-003",),
               "skb": ("FEC-RX-008",), "kept": ("FEC-RX-006",),
               "redirected": ("FEC-XDP-006",)}

_FIELD_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("packets[*].slot", ("FEC-RX-002",)),
    ("packets[*].frame", ("FEC-DEV-001",)),
    ("packets[*].sc", ("FEC-DEV-005",)),
    ("packets[*].datlen", ("FEC-DEV-002",)),
    ("packets[*].outcome", ("FEC-RX-004",)),
    ("packets[*].verdict", ("FEC-XDP-001",)),
    ("packets[*].ops*", ("FEC-XDP-007", "FEC-RX-017")),
    ("packets[*].recycle.sync", ("FEC-XDP-002",)),
    ("packets[*].recycle.*", ("FEC-XDP-003",)),
    ("packets[*].tx.err", ("FEC-TX-002",)),
    ("packets[*].tx*", ("FEC-XDP-005",)),
    ("packets[*].exception", ("FEC-XDP-004",)),
    ("packets[*].skb.vlan*", ("FEC-RX-009",)),
    ("packets[*].skb.ip_summed", ("FEC-RX-011",)),
    ("packets[*].skb.protocol", ("FEC-RX-010",)),
    ("packets[*].skb*", ("FEC-RX-008",)),
    ("packets[*].rearm_sc", ("FEC-RX-003",)),
    ("tx_completions[*].fate", ("FEC-TX-005",)),
    ("tx_completions*", ("FEC-TX-005",)),
    ("wire*", ("FEC-TX-003",)),
    ("xdp_xmit*", ("FEC-TX-004",)),
    ("counters.rx_bytes", ("FEC-RX-005",)),
    ("counters.rx_packets", ("FEC-RX-005",)),
    ("counters.rx_dropped", ("FEC-RX-006",)),
    ("counters.rx_*", ("FEC-RX-004",)),
    ("counters.tx_*", ("FEC-STATS-002",)),
    ("counters.collisions", ("FEC-STATS-002",)),
    ("counters.*", ("FEC-STATS-001",)),
    ("ethtool.rx_pp_*", ("FEC-STATS-004",)),
    ("ethtool.*", ("FEC-STATS-003",)),
    ("page_pool.*", ("FEC-RX-014",)),
    ("conservation.*", ("FEC-RX-015",)),
    ("ops.dma_syncs_for_cpu", ("FEC-RX-007",)),
    ("ops.*", ("FEC-XDP-008",)),
    ("dma.for_cpu*", ("FEC-RX-007",)),
    ("dma.for_device*", ("FEC-XDP-005",)),
    ("dma.unmaps", ("FEC-TX-005",)),
    ("dma.pool.*", ("FEC-XDP-002", "FEC-RX-014")),
    ("rx_ring", ("FEC-RX-003",)),
)


def attribute(scenario: Scenario) -> Callable[[str], tuple[str, ...]]:
    """Blame from the reference's own run: a packet's ``page`` field by the fate it got
    (XDP_TX, drop path, skb, refill failure); a TX completion by what produced it (a
    poll, a poll after a budget-0 one held XDP buffers back, restart or close); the RX
    ring by its last writer (open, the MAC, NAPI's re-arm, restart); after a close, the
    pool's state and the zeroed XDP counters by the close rule."""
    blame: dict[str, Any] = {}
    obs = run(scenario, Trace(), blame)
    packets = obs["packets"]
    ops = [str(ev["op"]) for ev in scenario.events or DEFAULT_EVENTS]
    closed = "close" in ops

    def rules(path: str) -> tuple[str, ...]:
        if path.startswith("packets[") and path.endswith("].skb.ip_summed"):
            lib = _checksum_library_rules(scenario, packets, path)
            if lib:
                return ("FEC-RX-011", "FEC-DEV-004", *lib)
        if path.startswith("packets[") and path.endswith("].page"):
            index = int(path.removeprefix("packets[").partition("]")[0])
            if index < len(packets):
                return _PAGE_RULES.get(str(packets[index]["page"]), ())
        if path.startswith("tx_completions["):
            index = int(path.removeprefix("tx_completions[").partition("]")[0])
            origins = blame["completions"]
            if path.endswith("].type"):
                return ("FEC-TX-001",)
            if index < len(origins):
                return tuple(origins[index])
        if path == "rx_ring":  # the writer's rule, then the descriptor layout
            layout = (("FEC-BD-002", "FEC-BD-004") if scenario.config.get("bufdesc_ex")
                      else ("FEC-BD-001",))
            return (str(blame["rx_ring"]), *layout, "FEC-BD-003", "FEC-BD-006")
        if closed and (path.startswith("page_pool.") or path.startswith("ethtool.rx_xdp_")):
            return ("FEC-RX-016",)
        if "stack_free" in ops and path.startswith("ethtool.rx_pp_recycle_"):
            return ("FEC-RX-012", "FEC-STATS-004")
        return ()

    return rules


def _checksum_library_rules(scenario: Scenario, packets: list[dict[str, Any]],
                            path: str) -> tuple[str, ...]:
    """An skb's ``ip_summed`` with the checksum accelerator on (FEC-RX-011 reads the ICE
    and PCR bits FEC-DEV-004 wrote) rests on the shared parser and checksum code: the
    frame's header walk, its IPv4 header check and its L4 verdict (libblame)."""
    cfg = config_of(scenario)
    if not (cfg.bufdesc_ex and cfg.rx_csum):
        return ()
    index = int(path.removeprefix("packets[").partition("]")[0])
    frame = packets[index]["frame"] if index < len(packets) else None
    if frame is None:
        return ()
    return libblame.frame_rules(bytes(scenario.frames[int(frame)])).checks


def applied(scenario: Scenario) -> set[str]:
    """The rule ids the reference applied to this scenario (its trace), with the checksum
    accelerator's reading of each frame (libblame)."""
    trace = Trace()
    run(scenario, trace)
    cfg = config_of(scenario)
    lib = libblame.applied(scenario.frames) if cfg.bufdesc_ex and cfg.rx_csum else set()
    return set(trace.rules()) | lib


COMPONENT = Component(name="fec", expected=expected, field_rules=_FIELD_RULES,
                      attribute=attribute, applied=applied)


def explain(scenario: Scenario) -> str:
    """Narrate each packet's path through the MAC model and the driver, by rule id."""
    frames = scenario.frames
    trace = Trace()
    obs = run(scenario, trace)
    config = {k: v for k, v in attrs.asdict(config_of(scenario), recurse=False).items()
              if k != "kernel"}  # the kernel line comes first
    lines = [f"fec: {len(frames)} frame(s); {config_text(config)}"]
    lines += ["  " + e.render() for e in trace if not e.rule.startswith("PP-")]
    for p in obs["packets"]:
        verdict = "no program" if p["verdict"] is None else f"verdict {p['verdict']}"
        rules = _PAGE_RULES.get(str(p["page"]), ())
        lines.append(f"packet slot {p['slot']} (frame {value_text(p['frame'])}): "
                     f"sc={rx_sc_names(p['sc'])} datlen={p['datlen']} -> {p['outcome']}, "
                     f"{verdict}, page {p['page']}"
                     + (f" ({', '.join(rules)})" if rules else ""))
    lines.append(f"counters: rx_packets={obs['counters']['rx_packets']} "
                 f"rx_bytes={obs['counters']['rx_bytes']}; pages (FEC-RX-015): "
                 f"{config_text(obs['conservation'])}")
    return "\n".join(lines)


# --- strategies ---------------------------------------------------------------------------

#: TX completion status bits the MAC may OR in: none, each error and DEF alone, a mix.
_TX_STATUS = st.sampled_from([0, 0, 0, BD_ENET_TX_HB, BD_ENET_TX_LC, BD_ENET_TX_RL,
                              BD_ENET_TX_UN, BD_ENET_TX_CSL, BD_ENET_TX_DEF,
                              BD_ENET_TX_DEF | BD_ENET_TX_UN, BD_ENET_TX_STATS])
_FAULTS = st.sampled_from([["crc"], ["overrun"], ["non_octet"], ["no_last"], ["split"]])


@st.composite
def giant_frames(draw: st.DrawFn) -> bytes:
    """Frames longer than PKT_MAXBUF_SIZE with their FCS (truncated by the MAC)."""
    base = draw(ethernet_frames())
    return base + bytes(draw(st.integers(1981 - len(base), 2100 - len(base)))
                        if len(base) < 1981 else 0)


@st.composite
def shrink_then_drop(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A program that shrinks the packet, then drops, aborts or fails to transmit it."""
    ops: list[dict[str, Any]] = []
    if draw(st.booleans()):
        ops.append({"op": "adjust_head", "delta": draw(st.integers(1, 14))})
    ops.append({"op": "adjust_tail", "delta": -draw(st.integers(1, 20))})
    ops.append({"op": "return", "action": draw(st.sampled_from([0, 1, 4, 7]))})
    return ops


@st.composite
def scenarios(draw: st.DrawFn, *, drops: bool = False) -> Scenario:
    """Both byte orders, both descriptor kinds, small rings; XDP programs from the xdp
    component's op lists; sometimes faults, giants, a refill failure, ndo frames."""
    frames = draw(st.lists(st.one_of(ethernet_frames(), ethernet_frames(), giant_frames()),
                           min_size=1, max_size=4))
    config: dict[str, Any] = {
        "byte_order": draw(st.sampled_from(["little", "big"])),
        "bufdesc_ex": draw(st.booleans()),
        "racc": draw(st.booleans()),
        "rx_csum": draw(st.booleans()),
        "vlan_rx": draw(st.booleans()),
        "rx_ring_size": draw(st.sampled_from([4, 8])),
        "tx_ring_size": draw(st.sampled_from([20, 32])),
        "xdp_tx_frame": draw(st.booleans()),
        "arch": draw(st.sampled_from(["arm64", "armhf"])),
        "num_rx_queues": draw(st.sampled_from([1, 1, 1, 2, 3])),  # FEC-RX-018
    }
    if draw(st.integers(0, 3)) == 0:
        config["faults"] = {str(draw(st.integers(0, len(frames) - 1))): draw(_FAULTS)}
    program: tuple[dict[str, Any], ...] | None = None
    if drops:
        program = tuple(draw(shrink_then_drop()))
    elif draw(st.integers(0, 4)):
        program = tuple(draw(op_lists(kfuncs=False)))
    events: list[dict[str, Any]] = []
    if draw(st.integers(0, 3)) == 0:
        config["redirect_ok"] = True  # FEC-XDP-006: the redirect finds a target
    kind = draw(st.sampled_from(["default", "default", "refill", "ndo", "restart", "budget0",
                                 "close_tx", "budget0_tx", "restart_more", "partial"]))
    if kind in ("close_tx", "budget0_tx", "restart_more") and draw(st.booleans()):
        program = ({"op": "return", "action": 3},)  # XDP_TX: frames in flight on TX
    status = draw(_TX_STATUS)
    if kind == "refill":
        config["page_alloc_bulk"] = 1
        events = [{"op": "rx"}, {"op": "fail_allocs", "count": 1}, {"op": "napi"},
                  {"op": "tx_done"}, {"op": "napi"}, {"op": "stack_free"}, {"op": "close"}]
    elif kind == "ndo":
        events = [{"op": "xdp_xmit", "frames": list(range(len(frames)))}, {"op": "rx"},
                  {"op": "napi"}, {"op": "tx_done", "status": status}, {"op": "napi"},
                  {"op": "stack_free"}]
    elif kind == "restart":
        events = [{"op": "rx"}, {"op": "napi"}, {"op": "restart"}, {"op": "stack_free"},
                  {"op": "close"}]
    elif kind == "budget0":
        events = [{"op": "rx"}, {"op": "napi"}, {"op": "tx_done"}, {"op": "napi", "budget": 0},
                  {"op": "napi"}, {"op": "stack_free"}]
    elif kind == "close_tx":  # FEC-RX-016, FEC-TX-007: TX still queued (or sent) at close
        events = [{"op": "rx"}, {"op": "napi"}]
        if draw(st.booleans()):
            events.append({"op": "tx_done", "count": draw(st.integers(0, 2)),
                           "status": status})
        events += [{"op": "stack_free"}, {"op": "close"}]
    elif kind == "budget0_tx":  # FEC-TX-006: budget-0 polls while XDP_TX frames are out
        events = [{"op": "rx"}, {"op": "napi"}, {"op": "napi", "budget": 0},
                  {"op": "tx_done", "count": draw(st.sampled_from([None, 1])),
                   "status": status},
                  {"op": "napi", "budget": 0}, {"op": "napi"}, {"op": "tx_done"},
                  {"op": "napi"}, {"op": "stack_free"}]
    elif kind == "restart_more":  # FEC-RX-013, FEC-TX-007: restart mid-run, then carry on
        first = draw(st.integers(0, len(frames)))
        events = [{"op": "rx", "frames": list(range(first))}, {"op": "napi"}]
        if draw(st.booleans()):
            events.append({"op": "tx_done", "count": 1, "status": status})
        events += [{"op": "restart"}, {"op": "rx", "frames": list(range(first, len(frames)))},
                   {"op": "napi"}, {"op": "tx_done", "status": status}, {"op": "napi"},
                   {"op": "stack_free"}, {"op": "close"}]
    elif kind == "partial":  # FEC-DEV-005: descriptors the MAC wrote, NAPI did not take
        config["bufdesc_ex"] = True  # their enhanced words are visible in ``rx_ring``
        events = [{"op": "rx"}, {"op": "napi", "budget": draw(st.integers(0, 1))}]
    if draw(st.integers(0, 3)) == 0:  # FEC-DEV-006, FEC-RX-009: 802.1Q, PCP and DEI set
        config.update(bufdesc_ex=True, vlan_rx=True)
        tcis = draw(st.lists(st.integers(0, 0xFFFF) | st.sampled_from([0xE001, 0x1FFF, 0xFFFF]),
                             min_size=len(frames), max_size=len(frames)))
        frames = [f[:12] + b"\x81\x00" + tci.to_bytes(2, "big") + f[12:]
                  for f, tci in zip(frames, tcis, strict=True)]
        if draw(st.booleans()):
            program = None  # no program: every frame reaches the stack as an skb
    return Scenario(component="fec", config=config, frames=tuple(frames),
                    events=tuple(events), program=program,
                    rules=("FEC-RX-005", "FEC-XDP-002", "FEC-XDP-005", "FEC-RX-015"))


# --- one SoC's scenarios ------------------------------------------------------------------

#: What an SoC fixes in the fec config: the quirks ``fec_devtype`` gives the compatible its
#: device tree names (fec_main.c), and the ring sizes the driver compiles in (fec.h).  A
#: target bound to a real driver reports its own (``fixed_config``); the reference runs
#: these too.
IMX6Q: Mapping[str, Any] = {"arch": "armhf", "byte_order": "little", "bufdesc_ex": True,
                            "racc": True, "rx_ring_size": 256, "tx_ring_size": 1024,
                            "xdp_tx_frame": False, "redirect_ok": False}
#: ``fsl,imx27-fec``: legacy descriptors, no RACC, no checksum or VLAN offload (on the
#: same 32-bit ARM kernel: the qemu-fec board patches the i.MX6Q's compatible).
IMX27: Mapping[str, Any] = {"arch": "armhf", "byte_order": "little", "bufdesc_ex": False,
                            "racc": False, "rx_csum": False, "vlan_rx": False,
                            "rx_ring_size": 256, "tx_ring_size": 1024,
                            "xdp_tx_frame": False, "redirect_ok": False}

#: ``fsl,imx8mp-fec`` (matched through its ``fsl,imx8mq-fec`` fallback, ``fec_imx8mq_info``)
#: on Debian's arm64 kernel: extended descriptors, RACC, checksum and VLAN offload, and
#: FEC_QUIRK_HAS_AVB with the three TX (and RX) queues the i.MX8MP device tree asks for
#: (``fsl,num-tx-queues``).  The XDP_TX queue of kernels before v7.0 is ``cpu %
#: num_tx_queues`` (FEC-XDP-005); the RX interrupt, hence NAPI, runs on CPU 0.  Its other
#: quirks (GBIT, ERR007885, BUG_CAPTURE, COALESCE, EEE, MULTI_QUEUES' RX queues 1-2) change
#: nothing the fec component models.
IMX8MP: Mapping[str, Any] = {"arch": "arm64", "byte_order": "little", "bufdesc_ex": True,
                             "racc": True, "avb": True, "num_tx_queues": 3,
                             "num_rx_queues": 3, "cpu": 0,
                             "rx_ring_size": 256, "tx_ring_size": 1024,
                             "xdp_tx_frame": False, "redirect_ok": False}


@st.composite
def board_scenarios(draw: st.DrawFn, fixed: Mapping[str, Any] = IMX6Q,
                    kfuncs: bool = False) -> Scenario:
    """Scenarios one SoC's driver can really run: the ``fixed`` config (its quirks, its
    full-size rings), the offloads it lets user space toggle, frames that fit a buffer,
    the xdp component's op lists (with kfunc calls only where the board's kernel can load
    a program calling them, ``kfuncs``), and the device left to itself (the
    default events: no faults, forced allocation failures or restarts).

    :func:`scenarios` draws what the model can reach (both byte orders, small rings,
    faults); a real or emulated MAC reproduces only this subset, which these draw whole
    instead of leaving every generic example not applicable."""
    frames = draw(st.lists(ethernet_frames(), min_size=1, max_size=8))
    config: dict[str, Any] = {"rx_csum": draw(st.booleans()), "vlan_rx": draw(st.booleans()),
                              **fixed}
    program: tuple[dict[str, Any], ...] | None = None
    per_packet: dict[int, tuple[dict[str, Any], ...]] = {}
    kind = draw(st.sampled_from(["none", "one", "one", "per_packet"]))
    if kind == "one":
        program = tuple(draw(op_lists(kfuncs=kfuncs)))
    elif kind == "per_packet":
        program = ({"op": "return", "action": 2},)
        per_packet = {i: tuple(draw(op_lists(kfuncs=kfuncs))) for i in range(len(frames))
                      if draw(st.booleans())}
    return Scenario(component="fec", config=config, frames=tuple(frames), program=program,
                    per_packet_programs=per_packet,
                    rules=("FEC-RX-005", "FEC-XDP-001", "FEC-XDP-005", "FEC-STATS-003"))

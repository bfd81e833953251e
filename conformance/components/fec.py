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
observables: ``packets`` (one per RX descriptor the driver consumed; with a program, its
         ``rx_queue_index``: what ``ctx->rx_queue_index`` reads), ``tx_completions``,
         ``wire`` (frames the MAC sent), ``xdp_xmit`` (frames each ndo call queued),
         ``counters`` (ndev->stats), ``ethtool`` (XDP and page_pool strings),
         ``page_pool``, ``conservation``, ``ops`` (``xdp_do_flush``: the polls that
         flushed the redirect lists, FEC-XDP-006), ``rx_ring`` (the ring bytes at the end),
         ``dma``: fec's own syncs for the CPU and for the device as ``[offset in page,
         length]`` in call order, its TX unmaps (completion and restart, FEC-TX-005,
         FEC-TX-007), and the pool's maps, unmaps and syncs for
         the device (``[offset in page, length]``); ``tx_rings`` (each TX queue's ring
         bytes at the end).
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
from conformance.strategies.frames import (
    LENGTH_FIELD_VALUES,
    ethernet_frames,
    l4_check_edge_frames,
    length_field_frames,
    udp_length_frames,
)
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
from reference.xdp.mem import MemType, ReturnPath
from reference.xdp.rxq import NetDev, XdpRxqInfo, xdp_md_rxq_fields

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


def _packet_obs(rec: rx.RxRecord, frame: int | None, rx_queue_index: int) -> dict[str, Any]:
    """One consumed descriptor; ``rx_queue_index`` is what a program reads from
    ``ctx->rx_queue_index`` (XDP-PROG-004: through ``xdp->rxq``, the queue fec registered,
    FEC-XDP-007), reported for the packets a program ran on."""
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
        "rx_queue_index": None if x is None else rx_queue_index,
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


#: The MAC's decisions about one frame beyond writing its descriptor (FEC-DEV-005): the
#: truncation of a giant, the checksum verdict, the VLAN bit, the split over two slots.
_FRAME_RULES = ("FEC-DEV-003", "FEC-DEV-004", "FEC-DEV-006", "FEC-DEV-007")


def _dedup(rules: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(rules))


def run(scenario: Scenario, trace: Trace | None = None,
        blame: dict[str, Any] | None = None) -> dict[str, Any]:
    """The observables; with ``blame`` (and a ``trace``), also which rule decided each TX
    completion (``blame["completions"]``), the last write of the RX ring
    (``blame["rx_ring"]``), the writers of each RX slot's current words
    (``blame["slots"]``) and the MAC's decisions about each frame (``blame["frames"]``,
    frame index -> the FEC-DEV rules its reception applied), from the events and the
    reference's own trace."""
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
    # Which rules wrote each RX slot's current words: open armed them all (FEC-RX-001).
    slot_writers: list[tuple[str, ...]] = [("FEC-RX-001",)] * cfg.rx_ring_size
    frame_rules: dict[int, tuple[str, ...]] = {}

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
                start = len(trace) if trace is not None else 0
                w = device.receive(fep, scenario.frames[int(i)], faults.get(int(i), frozenset()),
                                   trace=trace)
                decided = _rules_since(trace, start)
                frame_rules[int(i)] = tuple(r for r in _FRAME_RULES if r in decided)
                for s in w.slots:  # the MAC rewrote all but the address (FEC-DEV-005)
                    slot_frame[s] = int(i)
                    slot_writers[s] = _dedup(("FEC-DEV-005", *frame_rules[int(i)],
                                              *slot_writers[s]))
            received = max([received, *[int(i) + 1 for i in indices]])
            ring_rule = "FEC-DEV-005" if indices else ring_rule
        elif op == "napi":
            recs, done = rx.napi_poll(fep, int(ev.get("budget", budget_default)), program_for,
                                      trace)
            qidx = xdp_md_rxq_fields(fep.rxq.xdp_rxq)[1]
            packets += [_packet_obs(r, slot_frame.pop(r.slot, None), qidx) for r in recs]
            completions += [_completion(c) for c in done]
            origins += [("FEC-TX-006", "FEC-TX-005") if tx_held else ("FEC-TX-005",)] * len(done)
            tx_held = "FEC-TX-006" in _rules_since(trace, mark) or (tx_held and not done)
            ring_rule = "FEC-RX-003" if recs else ring_rule
            for r in recs:  # NAPI re-armed every word it consumed (FEC-RX-003)
                slot_writers[r.slot] = ("FEC-RX-003",)
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
            slot_writers = [_dedup(("FEC-RX-013", *w)) for w in slot_writers]  # status only
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
        blame["slots"] = slot_writers
        blame["frames"] = frame_rules
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
                "dma_syncs_for_device": len(fep.syncs.for_device),
                "xdp_do_flush": fep.xdp_flushes},
        "dma": {"for_cpu": [[addr & _PAGE_MASK, n] for addr, n in fep.syncs.for_cpu],
                "for_device": [[addr & _PAGE_MASK, n] for addr, n in fep.syncs.for_device],
                "unmaps": fep.syncs.unmaps,
                "pool": {"maps": dev.maps, "unmaps": dev.unmaps,
                         "syncs_for_device": [[s.addr & _PAGE_MASK, s.size]
                                              for s in dev.syncs_for_device]}},
        "rx_ring": bytes(fep.rxq.ring.mem).hex(),
        "tx_rings": [bytes(txq.ring.mem).hex() for txq in fep.txqs],
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
    ("packets[*].rx_queue_index", ("FEC-XDP-007",)),
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
    ("ops.xdp_do_flush", ("FEC-XDP-006",)),
    ("ops.*", ("FEC-XDP-008",)),
    ("dma.for_cpu*", ("FEC-RX-007",)),
    ("dma.for_device*", ("FEC-XDP-005",)),
    ("dma.unmaps", ("FEC-TX-005",)),
    ("dma.pool.*", ("FEC-XDP-002", "FEC-RX-014")),
    ("rx_ring", ("FEC-RX-003",)),
    ("tx_rings*", ("FEC-TX-003",)),
)

#: Where the RX ring's buffer addresses come from: open fills every slot from a fresh
#: pool, whose first allocation bulk-fills the cache (PP-ALLOC-004) and the rest pop it
#: (PP-ALLOC-001); each ``cbd_bufaddr`` is the page's DMA address (PP-ALLOC-005) + 256.
_POOL_PAGES = ("PP-ALLOC-004", "PP-ALLOC-001", "PP-ALLOC-005")

#: What a TX completion reads was queued by a transmit that found room (FEC-TX-002) and
#: filled the descriptor (FEC-TX-003): a completion missing, or its length, is theirs too.
_QUEUED_BY = ("FEC-TX-002", "FEC-TX-003")
#: The return paths ``__xdp_return`` picks by memory type (XDP-MEM-002).
_MEM_PATHS = frozenset(p.value for p in ReturnPath)

#: The rules that write TX descriptors: open, the fill, the MAC's send, the completion's
#: unmap, restart.
_TX_RING_WRITERS = ("FEC-RX-001", "FEC-TX-003", "FEC-DEV-008", "FEC-TX-005", "FEC-RX-013")


def attribute(scenario: Scenario) -> Callable[[str], tuple[str, ...]]:
    """Blame from the reference's own run: a packet's ``page`` field by the fate it got
    (XDP_TX, drop path, skb, refill failure; a REDIRECT verdict also by FEC-XDP-006); a
    packet's status, length, VLAN and checksum fields also by the MAC's decisions about
    its frame (truncation FEC-DEV-003, checksum verdict FEC-DEV-004, VLAN bit
    FEC-DEV-006, split FEC-DEV-007); a TX completion by what produced it (a poll, a poll
    after a budget-0 one held XDP buffers back, restart or close), then by the transmit
    that queued it (FEC-TX-002, FEC-TX-003), its error by the MAC's status too
    (FEC-DEV-008), an xdp_frame's return by the memory type open registered (XDP-MEM-002,
    FEC-RX-014), an XDP_TX one in f601899e4321's mode also by what that XDP_TX stored
    (FEC-XDP-008), the wire by the MAC's send; the RX ring by its last writer, then the
    writers of every slot's words (open FEC-RX-001, the MAC, NAPI's re-arm, restart) and
    the pool's allocation behind the buffer addresses; the TX rings by the rules that
    wrote TX descriptors, latest first
    (open, the fill FEC-TX-003, the MAC FEC-DEV-008, completion FEC-TX-005, restart);
    fec's TX unmaps by completion, and after a restart also by the restart's (FEC-TX-007);
    after a close, the pool's state and the zeroed XDP counters by the
    close rule."""
    blame: dict[str, Any] = {}
    trace = Trace()
    obs = run(scenario, trace, blame)
    packets = obs["packets"]
    applied_rules = trace.rules()
    tx_writers = sorted((r for r in _TX_RING_WRITERS if r in applied_rules),
                        key=lambda r: -max(i for i, e in enumerate(applied_rules) if e == r))
    ops = [str(ev["op"]) for ev in scenario.events or DEFAULT_EVENTS]
    closed = "close" in ops
    cfg = config_of(scenario)
    strips_vlan = cfg.bufdesc_ex and cfg.vlan_rx  # FEC-RX-009 reads the MAC's VLAN bit

    def device_rules(packet: dict[str, Any], field: str) -> tuple[str, ...]:
        """The MAC's decisions (FEC-DEV-*) behind one field of a consumed descriptor."""
        frame = packet["frame"]
        made = set(blame["frames"].get(frame, ())) if frame is not None else set()
        wants = {"sc": ("FEC-DEV-003", "FEC-DEV-007"), "datlen": ("FEC-DEV-003", "FEC-DEV-007"),
                 "skb.ip_summed": ("FEC-DEV-004",)}.get(field, ())
        if field.startswith("skb.") and field != "skb.ip_summed" and strips_vlan:
            wants = ("FEC-DEV-006",)
        return tuple(r for r in wants if r in made)

    def rules(path: str) -> tuple[str, ...]:
        if path.startswith("packets[") and path.endswith("].skb.ip_summed"):
            lib = _checksum_library_rules(scenario, packets, path)
            if lib:
                return ("FEC-RX-011", "FEC-DEV-004", *lib)
        if path.startswith("packets["):
            index = int(path.removeprefix("packets[").partition("]")[0])
            field = path.partition("].")[2]
            if index < len(packets) and field == "page":
                packet = packets[index]
                page = _PAGE_RULES.get(str(packet["page"]), ())
                if packet["verdict"] == "XDP_REDIRECT" and "FEC-XDP-006" not in page:
                    return ("FEC-XDP-006", *page)  # the redirect failed: the drop path
                return page
            if index < len(packets):
                made = device_rules(packets[index], field)
                if "FEC-DEV-006" in made:  # the tag the driver stripped, or not
                    made = ("FEC-RX-009", *made)
                if made:
                    return _dedup((*made, *COMPONENT.rules_for(path)))
        if path.startswith("wire["):  # what the MAC read and sent (FEC-DEV-008)
            return ("FEC-DEV-008", *COMPONENT.rules_for(path))
        if path == "ethtool.rx_xdp_redirect":  # counted before the redirect is tried
            return ("FEC-XDP-006", "FEC-STATS-003")
        if path.startswith("tx_completions["):
            index = int(path.removeprefix("tx_completions[").partition("]")[0])
            origins = blame["completions"]
            if path.endswith("].type"):
                return ("FEC-TX-001",)
            if index < len(origins):
                if path.endswith("].error") and origins[index] == ("FEC-TX-005",):
                    return ("FEC-TX-005", "FEC-DEV-008")  # the status the MAC wrote
                completions = obs["tx_completions"]
                queued: tuple[str, ...] = _QUEUED_BY
                if (path.endswith("].fate") and index < len(completions)
                        and str(completions[index]["fate"]) in _MEM_PATHS):
                    # An xdp_frame goes back by its memory type (XDP-MEM-002), the one
                    # open registered for the queue (FEC-RX-014).
                    queued = (*queued, "XDP-MEM-002", "FEC-RX-014")
                if (cfg.xdp_tx_frame and index < len(completions)
                        and completions[index]["type"] == "FEC_TXBUF_T_XDP_TX"):
                    # f601899e4321's XDP_TX stored an xdp_frame, not the page: how the
                    # buffer goes back follows from what FEC-XDP-008 put in the slot.
                    return _dedup((*origins[index], "FEC-XDP-008", *queued))
                return _dedup((*origins[index], *queued))
        if path == "rx_ring":  # the last writer, every slot's writers, the layout
            layout = (("FEC-BD-002", "FEC-BD-004") if cfg.bufdesc_ex else ("FEC-BD-001",))
            writers = [r for slot in blame["slots"] for r in slot]
            return _dedup((str(blame["rx_ring"]), *writers, *layout, "FEC-BD-003",
                           "FEC-BD-006", *_POOL_PAGES))
        if path.startswith("tx_rings["):  # the latest writer first, then the layout
            layout = (("FEC-BD-002", "FEC-BD-004") if cfg.bufdesc_ex else ("FEC-BD-001",))
            return _dedup((*tx_writers, *layout, "FEC-BD-003", "FEC-BD-006"))
        if path == "dma.unmaps" and "restart" in ops:  # completions, then the restart's
            return ("FEC-TX-005", "FEC-TX-007")  # by the slots' types (FEC-TX-007)
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
_FAULTS = st.sampled_from([["split"], ["crc"], ["overrun"], ["non_octet"], ["no_last"]])


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
    # FEC-RX-010: a sixth of the frames carry a type/length at the 0x0600 boundary.
    frames = draw(st.lists(st.one_of(ethernet_frames(), ethernet_frames(),
                                     giant_frames() | length_field_frames()),
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
    if draw(st.integers(0, 2)) == 0:  # FEC-DEV-005, FEC-DEV-007: faults on one frame or more
        faulty = draw(st.lists(st.integers(0, len(frames) - 1), min_size=1, max_size=2,
                               unique=True))
        config["faults"] = {str(i): draw(_FAULTS) for i in faulty}
    program: tuple[dict[str, Any], ...] | None = None
    if drops:
        program = tuple(draw(shrink_then_drop()))
    elif draw(st.integers(0, 4)):
        program = tuple(draw(op_lists(kfuncs=False)))
    events: list[dict[str, Any]] = []
    if draw(st.integers(0, 3)) == 0:
        config["redirect_ok"] = True  # FEC-XDP-006: the redirect finds a target
    kind = draw(st.sampled_from(["default", "default", "refill", "ndo", "restart", "budget0",
                                 "close_tx", "budget0_tx", "restart_more", "partial",
                                 "ndo_restart"]))
    if kind == "budget0_tx" or (kind in ("close_tx", "restart_more") and draw(st.booleans())):
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
    elif kind == "ndo_restart":  # FEC-TX-005, FEC-TX-007: NDO slots done or pending at
        # a restart (which unmaps by slot type), then more NDO frames pending at close
        every = list(range(len(frames)))
        events = [{"op": "xdp_xmit", "frames": every},
                  {"op": "tx_done", "count": draw(st.integers(0, 2)), "status": status},
                  {"op": "napi"}, {"op": "restart"}, {"op": "xdp_xmit", "frames": every},
                  {"op": "rx"}, {"op": "napi"},
                  {"op": "tx_done", "count": draw(st.integers(0, 1))}, {"op": "napi"},
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
    if draw(st.integers(0, 2)) == 0:  # FEC-RX-001, FEC-XDP-005, FEC-TX-003: AVB parts
        config.update(avb=draw(st.booleans()), num_tx_queues=draw(st.integers(1, 3)),
                      cpu=draw(st.sampled_from([0, 1, 2, 3, 5])))
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
    frames = draw(st.lists(st.one_of(ethernet_frames(), ethernet_frames(), ethernet_frames(),
                                     length_field_frames()),  # FEC-RX-010
                           min_size=1, max_size=8))
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


# --- one scenario per rule family ---------------------------------------------------------

def _csum_frames() -> list[bytes]:
    """Frames the RX checksum accelerator (FEC-DEV-004) tells apart: good and bad IPv4
    header checksums, good, bad and zero UDP checksums, a UDP length longer than the
    datagram, bad TCP, ICMP and ICMPv6 checksums, an IPv4 fragment, a non-IP frame, and
    SCTP with a good and a bad CRC32c (CSUM-L4-004, CSUM-009: the model's accelerator
    judges SCTP with the shared L4 check)."""
    from scapy.layers.inet import ICMP, IP, TCP, UDP
    from scapy.layers.inet6 import ICMPv6EchoRequest, IPv6
    from scapy.layers.l2 import ARP, Ether
    from scapy.layers.sctp import SCTP, SCTPChunkData

    eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    v4 = IP(src="10.0.0.1", dst="10.0.0.2")
    v6 = IPv6(src="fd00::1", dst="fd00::2")
    return [bytes(eth / v4 / UDP(sport=7, dport=9) / b"payload!"),
           bytes(eth / IP(src="10.0.0.1", dst="10.0.0.2", chksum=0x1234) / UDP() / b"x"),
           bytes(eth / v4 / UDP(sport=7, dport=9, chksum=0x4321) / b"payload!"),
           bytes(eth / v4 / UDP(sport=7, dport=9, chksum=0) / b"payload!"),
           bytes(eth / v4 / UDP(sport=7, dport=9, len=40) / b"payload!"),
           bytes(eth / v4 / TCP(sport=1, dport=2, flags="S")),
           bytes(eth / v4 / TCP(sport=1, dport=2, flags="S", chksum=0xBEEF)),
           bytes(eth / v4 / ICMP(chksum=0x1111)),
           bytes(eth / v6 / ICMPv6EchoRequest(cksum=0x2222)),
           bytes(eth / v6 / UDP(sport=7, dport=9) / b"six"),
           bytes(eth / IP(src="10.0.0.1", dst="10.0.0.2", flags="MF") / UDP(chksum=7) / b"f"),
           bytes(eth / ARP()),
           bytes(eth / v4 / SCTP(sport=5, dport=6) / SCTPChunkData(data=b"abcd")),
           bytes(eth / v6 / SCTP(sport=5, dport=6, chksum=0x12345678)
                 / SCTPChunkData(data=b"abcd"))]


#: The rules :func:`l4_check_edge_scenarios` aims at: the accelerator's verdict bits and
#: the ``ip_summed`` read from them, over the full L4 check's edges (CSUM-L4-*) and the
#: arithmetic under them (the IPv6 pseudo-header's length, SCTP's CRC32c).
L4_EDGE_RULES = ("FEC-DEV-004", "FEC-RX-011", "CSUM-007", "CSUM-009", "CSUM-L4-001",
                 "CSUM-L4-002", "CSUM-L4-003", "CSUM-L4-004", "CSUM-L4-005")


def l4_check_edge_scenarios() -> list[tuple[str, Scenario]]:
    """The checksum accelerator (FEC-DEV-004) and ``ip_summed`` (FEC-RX-011) on the edges
    of the full L4 check no random frame reaches (``l4_check_edge_frames``): zero UDP
    checksums with a length out of range, wrong UDP checksums with one zero byte, SCTP
    without chunks, another protocol with a dozen bytes and more, IPv6 datagrams of 300
    bytes and more; with and without the SHIFT16 pad."""
    frames = tuple(l4_check_edge_frames())
    return [(f"l4-edges-racc-{racc}",
             Scenario(component="fec", frames=frames, rules=L4_EDGE_RULES,
                      config={"bufdesc_ex": True, "rx_csum": True, "racc": racc,
                              "rx_ring_size": 16, "tx_ring_size": 40}))
            for racc in (True, False)]


def _tagged(frame: bytes, tpid: int, tci: int) -> bytes:
    return frame[:12] + tpid.to_bytes(2, "big") + tci.to_bytes(2, "big") + frame[12:]


def family_scenarios() -> list[tuple[str, Scenario]]:
    """One deterministic scenario per family that aims at a rule a random draw meets
    rarely: frames at the PKT_MAXBUF_SIZE boundary with and without the SHIFT16 pad
    (FEC-DEV-003), the checksum accelerator's verdicts (FEC-DEV-004), 802.1Q and 802.1ad
    tags with PCP and DEI set (FEC-DEV-006, FEC-RX-009), a frame split over two
    descriptors (FEC-DEV-007), XDP_TX sent with every TX status (FEC-DEV-008), the ring
    as open left it (FEC-RX-001), XDP_REDIRECT with and without a target (FEC-XDP-006),
    budget-0 polls while XDP_TX frames are out (FEC-TX-006), a restart mid-run
    (FEC-RX-013), type/length fields at the 0x0600 boundary (FEC-RX-010), XDP_TX pages
    coming back to a pool whose cache and ring are full (FEC-TX-005, FEC-TX-007)."""
    from scapy.layers.l2 import Ether

    base = bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02", type=0x88B5))
    udp = _csum_frames()[0]
    xdp_tx: tuple[dict[str, Any], ...] = ({"op": "return", "action": 3},)
    out: list[tuple[str, Scenario]] = []

    def add(name: str, rules: tuple[str, ...], config: dict[str, Any], frames: list[bytes],
            events: list[dict[str, Any]] | None = None,
            program: tuple[dict[str, Any], ...] | None = None) -> None:
        cfg = {"rx_ring_size": 8, "tx_ring_size": 40, **config}
        out.append((name, Scenario(component="fec", config=cfg, frames=tuple(frames),
                                   events=tuple(events or ()), program=program,
                                   rules=rules)))

    # FEC-DEV-003: 1978..1982 bytes; the cut is at 1979 with RACC, 1981 without.
    giants = [base + bytes(n - len(base)) for n in (1978, 1979, 1980, 1981, 1982)]
    for racc in (True, False):
        add(f"giant-racc-{racc}", ("FEC-DEV-003",), {"racc": racc}, giants)
    csum = _csum_frames()
    for ex, on in ((True, True), (True, False), (False, True)):  # FEC-DEV-004, FEC-RX-011
        add(f"csum-ex-{ex}-rxcsum-{on}", ("FEC-DEV-004", "FEC-RX-011", "CSUM-L4-003",
                                           "CSUM-L4-004", "CSUM-009"),
            {"bufdesc_ex": ex, "rx_csum": on, "rx_ring_size": 16}, csum)
    add("csum-udp-length", ("FEC-DEV-004", "FEC-RX-011"),  # CSUM-L4-002, CSUM-L4-003
        {"bufdesc_ex": True, "rx_csum": True, "rx_ring_size": 16}, udp_length_frames())
    tags = [_tagged(udp, 0x8100, 0xE001), _tagged(udp, 0x8100, 0x1FFF),
            _tagged(udp, 0x88A8, 0x2005), _tagged(_tagged(udp, 0x8100, 7), 0x88A8, 0xA00B),
            _tagged(base + bytes(50), 0x8100, 0xFFFF)]
    for vlan_rx in (True, False):  # FEC-DEV-006, FEC-RX-009
        add(f"vlan-rx-{vlan_rx}", ("FEC-DEV-006", "FEC-RX-009"),
            {"bufdesc_ex": True, "vlan_rx": vlan_rx}, tags)
    # FEC-RX-010: type/length fields at the 0x0600 boundary with and without Novell's
    # 0xFFFF, bare and behind a stripped 802.1Q tag.
    lengths = [bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02", type=v))
               + start + bytes(40) for v in LENGTH_FIELD_VALUES
               for start in (b"\xff\xff", b"\xaa\xaa\x03")]
    lengths += [_tagged(f, 0x8100, 0x2003) for f in lengths[4:8]]
    for vlan_rx in (True, False):
        add(f"ethertype-boundary-vlan-rx-{vlan_rx}", ("FEC-RX-010",),
            {"bufdesc_ex": True, "vlan_rx": vlan_rx, "rx_ring_size": 16}, lengths)
    for racc in (True, False):  # FEC-DEV-007
        add(f"split-racc-{racc}", ("FEC-DEV-007",),
            {"racc": racc, "faults": {"0": ["split"], "2": ["split", "crc"]}},
            [udp, base + bytes(60), udp + bytes(300)])
    tx_frames = [udp, base + bytes(100), udp]
    for status in (0, BD_ENET_TX_HB, BD_ENET_TX_LC | BD_ENET_TX_DEF, BD_ENET_TX_RL,
                   BD_ENET_TX_UN, BD_ENET_TX_CSL):  # FEC-DEV-008
        add(f"tx-status-{status:#x}", ("FEC-DEV-008", "FEC-TX-005"),
            {"num_tx_queues": 2, "cpu": 1, "avb": True},
            tx_frames, [{"op": "rx"}, {"op": "napi"}, {"op": "tx_done", "count": 2,
                                                       "status": status},
                        {"op": "napi"}, {"op": "tx_done", "status": 0}, {"op": "napi"}],
            xdp_tx)
    for ex in (True, False):  # FEC-RX-001: the rings as open armed them
        add(f"open-ex-{ex}", ("FEC-RX-001",), {"bufdesc_ex": ex, "rx_ring_size": 2},
            [udp], [{"op": "napi"}])
    redirect: tuple[dict[str, Any], ...] = ({"op": "return", "action": 4},)
    for ok in (False, True):  # FEC-XDP-006
        add(f"redirect-ok-{ok}", ("FEC-XDP-006",), {"redirect_ok": ok}, [udp, udp],
            program=redirect)
    add("budget0-tx", ("FEC-TX-006",), {}, tx_frames,  # FEC-TX-006
        [{"op": "rx"}, {"op": "napi"}, {"op": "napi", "budget": 0},
         {"op": "tx_done", "status": BD_ENET_TX_UN}, {"op": "napi", "budget": 0},
         {"op": "napi"}, {"op": "stack_free"}], xdp_tx)
    add("restart", ("FEC-RX-013", "FEC-TX-007"), {}, tx_frames,  # FEC-RX-013
        [{"op": "rx", "frames": [0, 1]}, {"op": "napi"}, {"op": "restart"},
         {"op": "rx", "frames": [2]}, {"op": "napi"}, {"op": "tx_done"}, {"op": "napi"},
         {"op": "stack_free"}, {"op": "close"}], xdp_tx)
    # FEC-TX-005, FEC-TX-007: ndo_xdp_xmit slots completed, then a restart (every NDO-typed
    # slot unmapped), more NDO frames, a close with one still pending.
    add("ndo-restart-close", ("FEC-TX-005", "FEC-TX-007"), {"num_tx_queues": 2}, tx_frames,
        [{"op": "xdp_xmit", "frames": [0, 1, 2]}, {"op": "tx_done", "count": 2},
         {"op": "napi"}, {"op": "restart"}, {"op": "xdp_xmit", "frames": [1, 2]},
         {"op": "tx_done", "count": 1}, {"op": "napi"}, {"op": "close"}])
    # FEC-TX-002, FEC-XDP-005, FEC-XDP-008: XDP_TX meeting a full ring (20 descriptors:
    # the second frame finds 17 free), counted as rx_xdp_tx_errors, and in f601899e4321's
    # XDP_TX with the conversion paid and no XDP_TX counter.
    for frame_mode in (False, True):
        add(f"xdp-tx-ring-full-frame-{frame_mode}", ("FEC-TX-002", "FEC-XDP-008"),
            {"xdp_tx_frame": frame_mode, "tx_ring_size": 20}, tx_frames, program=xdp_tx)
    # FEC-TX-005, FEC-TX-007: 200 XDP_TX pages out at once on an 8-slot RX ring (so an
    # 8-slot ptr_ring), then all completed in one poll (direct: cached until the cache
    # holds 128, 8 to the ring after that, the rest released with both full) or left to
    # close (not direct: 8 to the ring, the rest released): the fates page_pool's full
    # cache and full ring give (PP-RECYCLE-005, PP-RECYCLE-006).
    many = [base + bytes(60)] * 200
    arrive = [e for i in range(0, 200, 8)
              for e in ({"op": "rx", "frames": list(range(i, i + 8))}, {"op": "napi"})]
    for end in ("tx_done", "close"):
        add(f"xdp-tx-pool-full-{end}", ("FEC-TX-005", "FEC-TX-007"), {"tx_ring_size": 512},
            many, [*arrive, *([{"op": "tx_done", "status": 0}, {"op": "napi"}]
                              if end == "tx_done" else [{"op": "close"}])], xdp_tx)
    # FEC-DEV-001: more frames than RX descriptors; FEC-RX-002: polls that stop at the
    # budget (1, then 0) with written descriptors left.
    add("rx-ring-full", ("FEC-DEV-001",), {"rx_ring_size": 2}, tx_frames,
        [{"op": "rx"}, {"op": "napi"}, {"op": "rx", "frames": [2]}, {"op": "napi"}])
    add("rx-budget", ("FEC-RX-002",), {}, tx_frames,
        [{"op": "rx"}, {"op": "napi", "budget": 1}, {"op": "napi", "budget": 0},
         {"op": "napi"}, {"op": "stack_free"}])
    return out


def state_families() -> list[tuple[str, Scenario]]:
    """Fixed scenarios whose evidence is state a random draw rarely leaves in view: the
    descriptors the MAC wrote and NAPI did not take (their enhanced words: the checksum
    verdict, the VLAN bit, BDU, FEC-DEV-004 .. FEC-DEV-007), those words kept through a
    restart (FEC-RX-013), a slot re-armed with L kept then reused by a split frame
    (FEC-DEV-005, FEC-RX-003), a split frame's skb reading past its last chunk into the
    bytes of an earlier CRC-failed frame (FEC-DEV-007, FEC-RX-008), AVB frame types and
    the MAC's positions on TX queues 1 and 2 after open and restart (FEC-TX-003,
    FEC-DEV-008), a budget-0 poll that a further frame can tell from a poll of one
    (FEC-RX-002), XDP buffers held by a budget-0 poll until close (FEC-TX-006,
    FEC-TX-007), the free-descriptor count after a completion (FEC-TX-005, FEC-TX-002),
    XDP_TX pages and an ndo frame still queued when the run ends (FEC-RX-015), XDP_TX
    from an odd offset (FEC-XDP-005), f601899e4321's XDP_TX queue on a kernel with the
    RX-queue choice (FEC-XDP-008), and config keys left to their defaults (FEC-RX-001)."""
    from scapy.layers.l2 import Ether

    base = bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02", type=0x88B5))
    csum = _csum_frames()
    good, bad_ip, bad_udp = csum[0], csum[1], csum[2]
    xdp_tx: tuple[dict[str, Any], ...] = ({"op": "return", "action": 3},)
    out: list[tuple[str, Scenario]] = []

    def add(name: str, rules: tuple[str, ...], config: dict[str, Any], frames: list[bytes],
            events: list[dict[str, Any]],
            program: tuple[dict[str, Any], ...] | None = None) -> None:
        cfg = {"rx_ring_size": 8, "tx_ring_size": 40, **config}
        out.append((name, Scenario(component="fec", config=cfg, frames=tuple(frames),
                                   events=tuple(events), program=program, rules=rules)))

    # The MAC's enhanced words, left in the ring by a budget-0 poll: ICE, PCR, no verdict,
    # the VLAN bit, a split frame's two descriptors (the verdict only on the last), BDU.
    written = [bad_ip, bad_udp, good, _tagged(good, 0x8100, 0x2005), base + bytes(80)]
    ex_on = {"bufdesc_ex": True, "rx_csum": True, "vlan_rx": True, "faults": {"4": ["split"]}}
    add("mac-words-unconsumed", ("FEC-DEV-004", "FEC-DEV-005", "FEC-DEV-006", "FEC-DEV-007"),
        ex_on, written, [{"op": "rx"}, {"op": "napi", "budget": 0}])
    # fec_enet_bd_init rewrites only cbd_sc: the other words of unconsumed slots stay.
    add("restart-keeps-words", ("FEC-RX-013", "FEC-BD-002"), ex_on, written,
        [{"op": "rx"}, {"op": "napi", "budget": 0}, {"op": "restart"}])
    # A split frame's first slot is an error re-armed with L kept (status ^ L); the next
    # split frame's first chunk lands there and must not inherit that L.
    add("split-slot-reused", ("FEC-DEV-005", "FEC-RX-003"),
        {"rx_ring_size": 2, "faults": {"0": ["split"], "1": ["split"]}},
        [base + bytes(60), base + bytes(90)],
        [{"op": "rx", "frames": [0]}, {"op": "napi"}, {"op": "rx", "frames": [1]},
         {"op": "napi"}, {"op": "stack_free"}])
    # Frame 0 fails its CRC (its page stays in slot 0, FCS corrupted); frame 1 is split
    # and its last chunk lands in slot 0: the skb covers datlen - sub_len bytes from there,
    # past the chunk, into frame 0's tail and FCS.
    for racc in (False, True):
        add(f"split-over-crc-racc-{racc}", ("FEC-DEV-005", "FEC-DEV-007", "FEC-RX-008"),
            {"rx_ring_size": 2, "racc": racc, "faults": {"0": ["crc"], "1": ["split"]}},
            [base + bytes(46), base + bytes(86)],
            [{"op": "rx", "frames": [0]}, {"op": "napi"}, {"op": "rx", "frames": [1]},
             {"op": "napi"}, {"op": "stack_free"}])
    # AVB frame types in cbd_esc and the MAC's own position on TX queues 1 and 2, from
    # open and again after a restart (ndo_xdp_xmit goes to cpu % num_tx_queues).
    ndo: list[dict[str, Any]] = [
        {"op": "xdp_xmit", "frames": [0, 1]}, {"op": "tx_done"}, {"op": "napi"},
        {"op": "restart"}, {"op": "xdp_xmit", "frames": [1, 0]}, {"op": "tx_done"},
        {"op": "napi"}]
    for cpu in (1, 2):
        add(f"avb-queue-{cpu}", ("FEC-TX-003", "FEC-DEV-008", "FEC-RX-013"),
            {"bufdesc_ex": True, "avb": True, "num_tx_queues": 3, "cpu": cpu},
            [good, base + bytes(50)], ndo)
    add("avb-default-off", ("FEC-TX-003", "FEC-RX-001"),  # no "avb" key: the quirk is off
        {"bufdesc_ex": True, "num_tx_queues": 2, "cpu": 1}, [good, base + bytes(50)],
        ndo[:3])
    # A budget-0 poll takes nothing: the MAC then finds the ring full (a poll that took
    # one descriptor would have freed a slot for frame 2).
    add("rx-budget0-then-rx", ("FEC-RX-002", "FEC-DEV-001"), {"rx_ring_size": 2},
        [good, base + bytes(50), base + bytes(70)],
        [{"op": "rx", "frames": [0, 1]}, {"op": "napi", "budget": 0},
         {"op": "rx", "frames": [2]}, {"op": "napi"}, {"op": "stack_free"}])
    # XDP_TX frames sent, then a budget-0 poll (which leaves them) and close (which
    # releases them without completion counters).
    add("budget0-then-close", ("FEC-TX-006", "FEC-TX-007"), {}, [good, base + bytes(50)],
        [{"op": "rx"}, {"op": "napi"}, {"op": "tx_done"}, {"op": "napi", "budget": 0},
         {"op": "close"}], xdp_tx)
    # 20 TX descriptors leave 18 free, one XDP_TX leaves 17: only a completion that moved
    # dirty_tx lets the next frame's XDP_TX in.
    add("tx-free-after-completion", ("FEC-TX-005", "FEC-TX-002"), {"tx_ring_size": 20},
        [good, base + bytes(50)],
        [{"op": "rx", "frames": [0]}, {"op": "napi"}, {"op": "tx_done"}, {"op": "napi"},
         {"op": "rx", "frames": [1]}, {"op": "napi"}, {"op": "tx_done"}, {"op": "napi"}],
        xdp_tx)
    # The run ends with XDP_TX pages and an ndo frame queued on TX (conservation counts
    # the pages, not the peer's frame).
    add("tx-pending-at-end", ("FEC-RX-015",), {}, [good, base + bytes(50)],
        [{"op": "rx"}, {"op": "napi"}, {"op": "xdp_xmit", "frames": [1]}], xdp_tx)
    # XDP_TX after moving the head by one byte: the TX address is odd.
    add("xdp-tx-odd-offset", ("FEC-XDP-005", "FEC-DEV-008"), {}, [good, base + bytes(50)],
        [{"op": "rx"}, {"op": "napi"}, {"op": "tx_done"}, {"op": "napi"}],
        ({"op": "adjust_head", "delta": 1}, {"op": "return", "action": 3}))
    # f601899e4321's XDP_TX keeps the CPU's queue on every kernel (FEC-XDP-005's gate
    # does not apply to it).
    add("xdp-tx-frame-queue", ("FEC-XDP-005", "FEC-XDP-008"),
        {"xdp_tx_frame": True, "num_tx_queues": 2, "cpu": 1}, [good, base + bytes(50)],
        [{"op": "rx"}, {"op": "napi"}, {"op": "tx_done"}, {"op": "napi"}], xdp_tx)
    # Keys left out: vlan_rx (on) with an 802.1Q frame; redirect_ok (no target).
    add("default-vlan-rx", ("FEC-RX-009", "FEC-RX-001"), {"bufdesc_ex": True},
        [_tagged(good, 0x8100, 0x6007)], [{"op": "rx"}, {"op": "napi"}])
    add("default-redirect", ("FEC-XDP-006", "FEC-RX-001"), {}, [good],
        [{"op": "rx"}, {"op": "napi"}], ({"op": "return", "action": 4},))
    return out

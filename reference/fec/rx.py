"""The RX side of fec: open, ``fec_enet_rx_queue``, the skb it builds, restart and close
(FEC-RX-001 .. FEC-RX-017).

Read in ``fec_main.c`` (Kingxukai/linux v6.17-rc3, blob 9b44fff6): ``fec_enet_create_page_pool``,
``fec_enet_alloc_rxq_buffers``, ``fec_enet_update_cbd``, ``fec_enet_rx_queue``,
``fec_enet_rx_vlan``, ``fec_enet_bd_init``, ``fec_enet_free_buffers``, ``fec_enet_rx_napi``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from reference import page_pool as pp
from reference.errors import StateViolation
from reference.fec.bufdesc import (
    BD_ENET_RX_CL,
    BD_ENET_RX_CR,
    BD_ENET_RX_EMPTY,
    BD_ENET_RX_INT,
    BD_ENET_RX_LAST,
    BD_ENET_RX_LG,
    BD_ENET_RX_NO,
    BD_ENET_RX_OV,
    BD_ENET_RX_SH,
    BD_ENET_RX_STATS,
    BD_ENET_RX_VLAN,
    BD_ENET_TX_INT,
    BD_SC_WRAP,
    FLAG_RX_CSUM_ERROR,
    BufdescEx,
    Ring,
)
from reference.fec.state import (
    FEC_ENET_XDP_HEADROOM,
    PAGE_SIZE,
    Bus,
    FecConfig,
    Fep,
    RxQueue,
    Syncs,
    TxBuffer,
    TxQueue,
)
from reference.fec.tx import NAPI_CTX, TxCompletion, release_tx_buffers, tx_queue
from reference.fec.xdp import FEC_ENET_XDP_PASS, FEC_ENET_XDP_REDIR, Fate, XdpResult, run_xdp
from reference.trace import Trace, emit
from reference.xdp.buff import XdpBuff, xdp_init_buff, xdp_prepare_buff
from reference.xdp.mem import MemType
from reference.xdp.rxq import NetDev, XdpRxqInfo, xdp_rxq_info_reg, xdp_rxq_info_reg_mem_model

ETH_HLEN = 14
VLAN_HLEN = 4
ETH_P_8021Q = 0x8100
ETH_P_802_3_MIN = 0x0600
ETH_P_802_3 = 0x0001
ETH_P_802_2 = 0x0004
#: The error bits ``fec_enet_rx_queue`` tests after toggling LAST (FEC-RX-004).
RX_ERROR_MASK = (BD_ENET_RX_LG | BD_ENET_RX_SH | BD_ENET_RX_NO | BD_ENET_RX_CR |
                 BD_ENET_RX_OV | BD_ENET_RX_LAST | BD_ENET_RX_CL)

Program = Sequence[Mapping[str, Any]]


def page_pool_params(cfg: FecConfig, dev: pp.DmaDevice) -> pp.PagePoolParams:
    """``fec_enet_create_page_pool`` (FEC-RX-014): order 0, DMA_MAP|SYNC_DEV, one page per
    RX descriptor, ``offset`` = headroom, ``max_len`` = FEC_ENET_RX_FRSIZE, and the DMA
    direction chosen by whether a program is installed when the pool is created."""
    return pp.PagePoolParams(
        order=0, flags=pp.PP_FLAG_DMA_MAP | pp.PP_FLAG_DMA_SYNC_DEV,
        pool_size=cfg.rx_ring_size, nid=0, dev=dev,
        dma_dir=pp.DMA_BIDIRECTIONAL if cfg.xdp else pp.DMA_FROM_DEVICE,
        offset=FEC_ENET_XDP_HEADROOM, max_len=cfg.rx_frsize)


def fec_enet_open(cfg: FecConfig, *, allocator: pp.PageAllocator | None = None,
                  record: bool = True, trace: Trace | None = None) -> Fep:
    """``fec_enet_open`` as far as rings and pages go (FEC-RX-014, FEC-RX-001).

    The pool is created and registered as the queue's XDP memory model; every RX slot gets
    a page: ``cbd_bufaddr`` = DMA address + 256, ``cbd_sc`` = EMPTY (WRAP on the last),
    ``cbd_esc`` = ``BD_ENET_RX_INT`` with enhanced descriptors.  TX slots start empty
    with WRAP on the last and ``dirty_tx`` on the last slot.

    ``record=False`` keeps no per-sync logs, only counts (page_pool's ``DmaDevice`` and
    ``fep.syncs``): for long per-packet runs, whose memory then stays flat.
    """
    dev = pp.DmaDevice(record=record)
    allocator = allocator or pp.PageAllocator(pp.ARM64_4K)
    created = pp.page_pool_create(page_pool_params(cfg, dev), allocator=allocator)
    assert created.pool is not None, created.err
    pool = created.pool
    xdp_rxq = XdpRxqInfo()
    xdp_rxq_info_reg(xdp_rxq, NetDev(ifindex=2, name="eth0"), 0, 0)
    xdp_rxq_info_reg_mem_model(xdp_rxq, MemType.MEM_TYPE_PAGE_POOL, pool)
    pool.use_xdp_mem()
    ring = Ring(cfg.rx_ring_size, ex=cfg.bufdesc_ex, order=cfg.byte_order)
    bus = Bus()
    info: list[pp.Page | None] = []
    for i in range(cfg.rx_ring_size):
        page = pool.alloc_pages(pp.PROCESS_CONTEXT)
        if page is None:
            raise StateViolation("page allocation failed during open", obj="fec",
                                 rule="FEC-RX-001")
        bus.page_for(page)
        info.append(page)
        sc = BD_ENET_RX_EMPTY | (BD_SC_WRAP if i == cfg.rx_ring_size - 1 else 0)
        ring.put(i, BufdescEx(cbd_sc=sc, cbd_bufaddr=page.dma_addr + FEC_ENET_XDP_HEADROOM,
                              cbd_esc=BD_ENET_RX_INT if cfg.bufdesc_ex else 0))
    rxq = RxQueue(ring, pool, xdp_rxq, info)
    txqs = []
    for qid in range(cfg.num_tx_queues):
        tring = Ring(cfg.tx_ring_size, ex=cfg.bufdesc_ex, order=cfg.byte_order)
        # fec_enet_alloc_txq_buffers: sc 0, no buffer, cbd_esc BD_ENET_TX_INT (ex only).
        tx_esc = BD_ENET_TX_INT if cfg.bufdesc_ex else 0
        for i in range(cfg.tx_ring_size):
            sc = BD_SC_WRAP if i == cfg.tx_ring_size - 1 else 0
            tring.put(i, BufdescEx(cbd_sc=sc, cbd_esc=tx_esc))
        txqs.append(TxQueue(tring, [TxBuffer() for _ in range(cfg.tx_ring_size)], 0,
                            cfg.tx_ring_size - 1, qid))
    idle = [_idle_rx_queue(cfg) for _ in range(1, cfg.num_rx_queues)]
    emit(trace, "FEC-RX-001", "opened: every RX slot holds a pool page, TX slots empty",
         rx_ring_size=cfg.rx_ring_size, tx_queues=len(txqs))
    if idle:
        emit(trace, "FEC-RX-018", "RX queues 1.. get their own filled pools",
             rx_queues=cfg.num_rx_queues)
    emit(trace, "FEC-STATS-001", "ndev->stats: the RX and TX counters fec keeps, all 0")
    emit(trace, "FEC-RX-014", "page pool created and the RX ring filled",
         pool_size=cfg.rx_ring_size, dma_dir=pool.dma_dir, max_len=pool.max_len)
    emit(trace, "FEC-RX-017", "XDP buffer geometry of the architecture", arch=cfg.arch,
         shinfo=cfg.xdp_arch.shinfo_reserved, xdp_frame=cfg.xdp_arch.sizeof_xdp_frame)
    return Fep(cfg, bus, dev, allocator, rxq, txqs, syncs=Syncs(record=record),
               idle_pools=idle)


def _idle_rx_queue(cfg: FecConfig) -> pp.PagePool:
    """FEC-RX-018: an RX queue other than 0, opened like queue 0 (its own pool, every slot
    a page from it) and never given a frame: only its pool's counters are observable.
    Its pages come from an allocator of its own, outside queue 0's conservation."""
    created = pp.page_pool_create(page_pool_params(cfg, pp.DmaDevice(record=False)),
                                  allocator=pp.PageAllocator(pp.ARM64_4K))
    assert created.pool is not None, created.err
    pool = created.pool
    pool.use_xdp_mem()
    for _ in range(cfg.rx_ring_size):
        if pool.alloc_pages(pp.PROCESS_CONTEXT) is None:
            raise StateViolation("page allocation failed during open", obj="fec",
                                 rule="FEC-RX-018")
    return pool


@attrs.frozen
class Skb:
    """What the stack receives (FEC-RX-009 .. FEC-RX-011)."""

    data: bytes  # from the MAC header on (after any VLAN tag was removed)
    len: int  # skb->len after eth_type_trans pulled the Ethernet header
    protocol: int
    ip_summed: str
    csum: int
    vlan: tuple[int, int] | None  # (vlan_proto, vlan_tci) when hw-accelerated
    queue: int


@attrs.frozen
class RxRecord:
    """One descriptor ``fec_enet_rx_queue`` consumed."""

    slot: int
    sc: int  # cbd_sc as found
    datlen: int
    outcome: str  # "error", "refill_failed", "skb", or the XDP fate
    xdp: XdpResult | None = None
    skb: Skb | None = None
    rearm_sc: int = 0


def _eth_type_trans(data: bytes) -> int:
    """``eth_type_trans``'s protocol for a frame without DSA (FEC-RX-010)."""
    proto = int.from_bytes(data[12:14], "big")
    if proto >= ETH_P_802_3_MIN:
        return proto
    if data[14:16] == b"\xff\xff":
        return ETH_P_802_3
    return ETH_P_802_2


def _build_skb(fep: Fep, bd: BufdescEx, frame: bytes, trace: Trace | None) -> Skb:
    """FEC-RX-009 .. FEC-RX-011: VLAN extraction, protocol, checksum state."""
    cfg = fep.cfg
    vlan = None
    if cfg.bufdesc_ex and bd.cbd_esc & BD_ENET_RX_VLAN and cfg.vlan_rx:
        # fec_enet_rx_vlan: TCI at offset 14 (the TPID is not looked at), the addresses
        # move up by VLAN_HLEN, the tag becomes hw-accel 802.1Q (FEC-RX-009).
        tci = int.from_bytes(frame[14:16], "big")
        frame = frame[:12] + frame[16:]
        vlan = (ETH_P_8021Q, tci)
        emit(trace, "FEC-RX-009", "VLAN tag moved to the skb", tci=tci)
    protocol = _eth_type_trans(frame)
    ip_summed = "CHECKSUM_NONE"
    if cfg.bufdesc_ex and cfg.rx_csum:
        if not bd.cbd_esc & FLAG_RX_CSUM_ERROR:
            ip_summed = "CHECKSUM_UNNECESSARY"
        emit(trace, "FEC-RX-011", "checksum state from ICE|PCR", esc=bd.cbd_esc,
             ip_summed=ip_summed)
    return Skb(frame, len(frame) - ETH_HLEN, protocol, ip_summed, 0, vlan, 0)


def fec_enet_rx_queue(fep: Fep, budget: int, program_for: Callable[[int], Program | None],
                      trace: Trace | None = None) -> list[RxRecord]:
    """``fec_enet_rx_queue`` (FEC-RX-002 .. FEC-RX-008).

    ``program_for(slot)`` gives the op list for the frame in that slot (None: no
    program installed).  Returns one record per descriptor consumed.
    """
    cfg = fep.cfg
    rxq = fep.rxq
    ring = rxq.ring
    stats = fep.stats
    data_start, sub_len = cfg.data_start, cfg.sub_len
    xdp = XdpBuff(arch=cfg.xdp_arch)
    xdp_init_buff(xdp, PAGE_SIZE, rxq.xdp_rxq)
    xdp_result = FEC_ENET_XDP_PASS
    records: list[RxRecord] = []
    index = rxq.cur
    while True:
        bd = ring.get(index)
        if bd.cbd_sc & BD_ENET_RX_EMPTY:
            break
        if len(records) >= budget:
            break
        status = bd.cbd_sc ^ BD_ENET_RX_LAST  # FEC-RX-004
        rec_xdp: XdpResult | None = None
        skb: Skb | None = None
        new_addr = bd.cbd_bufaddr
        if status & RX_ERROR_MASK:
            stats.rx_errors += 1
            if status & BD_ENET_RX_OV:
                stats.rx_fifo_errors += 1
            else:
                if status & (BD_ENET_RX_LG | BD_ENET_RX_SH | BD_ENET_RX_LAST):
                    stats.rx_length_errors += 1
                if status & BD_ENET_RX_CR:
                    stats.rx_crc_errors += 1
                if status & (BD_ENET_RX_NO | BD_ENET_RX_CL):
                    stats.rx_frame_errors += 1
            emit(trace, "FEC-RX-004", "error descriptor: counted, page kept", slot=index,
                 sc=bd.cbd_sc)
            outcome = "error"
        else:
            # FEC-RX-005: counted before anything can drop it, FCS included; the RACC
            # pad too, unless the kernel carries ad17e7e92a7c (gate FEC-RX-005).
            stats.rx_packets += 1
            pkt_len = bd.cbd_datlen
            stats.rx_bytes += pkt_len - cfg.rx_bytes_pad
            emit(trace, "FEC-RX-005", "rx_packets/rx_bytes counted from cbd_datlen",
                 datlen=pkt_len, pad_excluded=cfg.rx_bytes_pad)
            if pkt_len < sub_len:
                raise StateViolation("cbd_datlen shorter than FCS and pad", obj="bufdesc",
                                     rule="FEC-RX-005")
            page = rxq.rx_skb_info[index]
            assert page is not None
            old_addr = bd.cbd_bufaddr
            new = rxq.pool.alloc_pages(NAPI_CTX, trace)  # fec_enet_update_cbd
            if new is None:
                stats.rx_dropped += 1
                emit(trace, "FEC-RX-006", "refill failed: frame dropped, old page stays",
                     slot=index)
                outcome = "refill_failed"
            else:
                fep.bus.page_for(new)
                rxq.rx_skb_info[index] = new
                new_addr = new.dma_addr + FEC_ENET_XDP_HEADROOM
                emit(trace, "FEC-RX-006", "slot refilled before the old page is used",
                     slot=index)
                fep.syncs.sync_for_cpu(old_addr, pkt_len)  # FEC-RX-007
                xpage = fep.bus.page_for(page)
                ops = program_for(index) if cfg.xdp else None
                outcome = Fate.SKB.value
                if ops is not None:
                    # FEC-XDP-007: hard start = page, headroom data_start, no FCS/pad,
                    # no metadata; the frags flag is cleared for every packet.
                    xdp.flags = 0  # xdp_buff_clear_frags_flag
                    xdp_prepare_buff(xdp, xpage, 0, data_start, pkt_len - sub_len, False)
                    rec_xdp = run_xdp(fep, ops, xdp, page, trace)
                    xdp_result |= rec_xdp.ret
                    outcome = rec_xdp.fate.value
                if rec_xdp is None or rec_xdp.ret == FEC_ENET_XDP_PASS:
                    # build_skb over the page: skb_reserve(data_start), put(len - sub_len).
                    # An XDP program's head/tail moves do not reach the skb; its stores
                    # into the page do (FEC-RX-008).
                    frame = bytes(xpage.data[data_start : data_start + pkt_len - sub_len])
                    skb = _build_skb(fep, bd, frame, trace)
                    fep.stack.append(page)
                    emit(trace, "FEC-RX-008", "skb built and delivered", len=skb.len)
        # FEC-RX-003: re-arm with the stats bits cleared, E set, W kept.
        rearm = (status & ~BD_ENET_RX_STATS) | BD_ENET_RX_EMPTY
        esc, prot, bdu = bd.cbd_esc, bd.cbd_prot, bd.cbd_bdu
        if cfg.bufdesc_ex:
            esc, prot, bdu = BD_ENET_RX_INT, 0, 0
        ring.put(index, BufdescEx(cbd_datlen=bd.cbd_datlen, cbd_sc=rearm, cbd_bufaddr=new_addr,
                                  cbd_esc=esc, cbd_prot=prot, cbd_bdu=bdu, ts=bd.ts,
                                  res0=bd.res0))
        emit(trace, "FEC-RX-003", "descriptor re-armed", slot=index, sc=rearm)
        records.append(RxRecord(index, bd.cbd_sc, bd.cbd_datlen, outcome, rec_xdp, skb,
                                rearm))
        index = ring.next(index)
    rxq.cur = index
    if xdp_result & FEC_ENET_XDP_REDIR:
        fep.xdp_flushes += 1
    return records


def stack_free(fep: Fep, trace: Trace | None = None) -> int:
    """FEC-RX-012 (model convention): the stack frees the delivered skbs, in order, from
    process context: each page goes back with ``page_pool_put_full_page`` without
    direct recycling (skbs are marked for recycling)."""
    n = 0
    while fep.stack:
        page = fep.stack.pop(0)
        pool = page.pp
        assert pool is not None
        pool.put_full_page(page, False, pp.PROCESS_CONTEXT, trace)
        n += 1
    emit(trace, "FEC-RX-012", "delivered skbs freed by the stack", count=n)
    return n


def napi_poll(fep: Fep, budget: int, program_for: Callable[[int], Program | None],
              trace: Trace | None = None) -> tuple[list[RxRecord], list[TxCompletion]]:
    """One pass of ``fec_enet_rx_napi``: RX with the budget, then TX completion of every
    queue (highest first) with the full budget."""
    rx = fec_enet_rx_queue(fep, budget, program_for, trace)
    done: list[TxCompletion] = []
    for q in range(len(fep.txqs) - 1, -1, -1):
        done += tx_queue(fep, q, budget, trace)
    return rx, done


def fec_restart(fep: Fep, trace: Trace | None = None) -> list[TxCompletion]:
    """``fec_enet_bd_init`` under ``fec_restart`` (FEC-RX-013, FEC-TX-007): RX slots are
    re-armed in place (EMPTY where a buffer address exists, WRAP on the last), pages
    kept; pending TX buffers are released, NDO mappings unmapped; the MAC starts again at
    the ring bases."""
    ring = fep.rxq.ring
    for i in range(ring.size):
        bd = ring.get(i)
        sc = BD_ENET_RX_EMPTY if bd.cbd_bufaddr else 0
        if i == ring.size - 1:
            sc |= BD_SC_WRAP
        ring.put(i, attrs.evolve(bd, cbd_sc=sc))
    fep.rxq.cur = 0
    released = release_tx_buffers(fep, trace, restart=True)
    for txq in fep.txqs:
        for i in range(txq.ring.size):
            sc = BD_SC_WRAP if i == txq.ring.size - 1 else 0
            txq.ring.put(i, attrs.evolve(txq.ring.get(i), cbd_sc=sc, cbd_bufaddr=0))
        txq.cur = 0
        txq.dirty_tx = txq.ring.size - 1
    fep.device_rx = 0
    fep.device_tx = [0, 0, 0]
    emit(trace, "FEC-RX-013", "rings re-initialised in place", released=len(released))
    return released


def fec_enet_close(fep: Fep, trace: Trace | None = None) -> list[TxCompletion]:
    """``fec_enet_free_buffers`` (FEC-RX-016): every RX page goes back with
    ``page_pool_put_full_page`` (not direct), the XDP counters are zeroed, the pool is
    destroyed; only then are pending TX buffers released, so XDP_TX pages reach a pool
    whose release is already deferred.  The model then runs the deferred release once."""
    rxq = fep.rxq
    pool = rxq.pool
    for i, page in enumerate(rxq.rx_skb_info):
        if page is not None:
            pool.put_full_page(page, False, pp.PROCESS_CONTEXT, trace)
            rxq.rx_skb_info[i] = None
    rxq.stats[:] = [0] * len(rxq.stats)
    pool.destroy(trace)  # the xdp_rxq_info unregistration drops the XDP mem user
    pool.destroy(trace)
    released = release_tx_buffers(fep, trace, restart=False)
    if pool.state is pp.PoolState.DETACHED:
        pool.release_retry(trace)
    fep.running = False
    emit(trace, "FEC-RX-016", "buffers freed and pool destroyed", state=pool.state.value,
         inflight=pool.inflight())
    return released


def conservation(fep: Fep) -> dict[str, int]:
    """FEC-RX-015: every page of the pool is in exactly one place; the pool's in-flight
    count equals the pages in the RX ring, TX ring, stack and redirect target plus the
    pages in its cache and ring.  Raises AssertionError when it does not hold."""
    pool = fep.rxq.pool
    rx = [p for p in fep.rxq.rx_skb_info if p is not None]
    tx = []
    for txq in fep.txqs:
        for buf in txq.tx_buf:
            if buf.buf_p is not None and buf.type.name == "FEC_TXBUF_T_XDP_TX":
                page = buf.buf_p.page.handle if hasattr(buf.buf_p, "addr") else buf.buf_p
                tx.append(page)
    holders = rx + tx + fep.stack + fep.redirected
    ids = [id(p) for p in holders]
    assert len(ids) == len(set(ids)), "a page is in two places at once"
    for page in holders:
        assert page.pp is pool and page.loc is pp.Loc.IN_FLIGHT, repr(page)
    counts = {"rx_ring": len(rx), "tx_ring": len(tx), "stack": len(fep.stack),
              "redirected": len(fep.redirected), "alloc_cache": len(pool.alloc_cache),
              "ptr_ring": len(pool.ring), "inflight": pool.inflight()}
    if pool.state is not pp.PoolState.FREED:
        assert counts["inflight"] == (len(holders) + counts["alloc_cache"]
                                      + counts["ptr_ring"]), counts
    in_flight = sum(1 for p in pool.pages() if p.loc is pp.Loc.IN_FLIGHT)
    assert in_flight == len(holders), (in_flight, counts)
    pool.check_conservation()
    return counts

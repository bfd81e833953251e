"""XDP transmit and TX completion (FEC-TX-001 .. FEC-TX-006).

``fec_enet_txq_xmit_frame``, ``fec_enet_xdp_xmit`` (ndo_xdp_xmit) and
``fec_enet_tx_queue`` from ``fec_main.c`` (v6.17-rc3); the release of pending TX buffers
on restart (``fec_enet_bd_init``) and close (``fec_enet_free_buffers``) is in
:mod:`reference.fec.rx` beside the RX side of those functions.
"""

from __future__ import annotations

import errno

import attrs

from reference import page_pool as pp
from reference.fec.bufdesc import (
    BD_ENET_TX_CSL,
    BD_ENET_TX_DEF,
    BD_ENET_TX_HB,
    BD_ENET_TX_INT,
    BD_ENET_TX_INTR,
    BD_ENET_TX_LAST,
    BD_ENET_TX_LC,
    BD_ENET_TX_READY,
    BD_ENET_TX_RL,
    BD_ENET_TX_STATS,
    BD_ENET_TX_TC,
    BD_ENET_TX_UN,
    FEC_TX_BD_FTYPE,
    BufdescEx,
)
from reference.fec.state import MAX_SKB_FRAGS, Fep, TxBuffer, TxBufType, TxQueue
from reference.trace import Trace, emit
from reference.xdp.frame import XdpFrame, xdp_return_frame, xdp_return_frame_rx_napi
from reference.xdp.mem import MemReturn, ReturnPath

#: NAPI runs in softirq on the RX CPU.
NAPI_CTX = pp.Context.softirq(cpu=0)


def xdp_get_tx_queue(fep: Fep, cpu: int) -> int:
    """``fec_enet_xdp_get_tx_queue``: cpu modulo the TX queue count, 0 for cpu < 0."""
    return 0 if cpu < 0 else cpu % fep.cfg.num_tx_queues


def txq_xmit_frame(fep: Fep, txq: TxQueue, *, addr: int, length: int, buf: TxBuffer,
                   trace: Trace | None = None) -> int:
    """``fec_enet_txq_xmit_frame`` after the buffer is mapped (FEC-TX-002, FEC-TX-003).

    The caller checked the free-descriptor floor (:func:`tx_room`).  The status loses
    the ``BD_ENET_TX_STATS`` bits (0x0fff; READY, PAD, WRAP and INTR stay), gets
    INTR|LAST, then READY|TC once the address, length and enhanced words are written;
    ``bd.cur`` advances.  With enhanced descriptors ``cbd_esc`` is ``BD_ENET_TX_INT``,
    plus ``FEC_TX_BD_FTYPE(bd.qid)`` on FEC_QUIRK_HAS_AVB parts.
    """
    ring = txq.ring
    index = txq.cur
    bd = ring.get(index)
    status = (bd.cbd_sc & ~BD_ENET_TX_STATS) | BD_ENET_TX_INTR | BD_ENET_TX_LAST
    esc, bdu = bd.cbd_esc, bd.cbd_bdu
    if fep.cfg.bufdesc_ex:
        esc, bdu = BD_ENET_TX_INT, 0
        if fep.cfg.avb:
            esc |= FEC_TX_BD_FTYPE(txq.qid)
    txq.tx_buf[index] = buf
    status |= BD_ENET_TX_READY | BD_ENET_TX_TC
    ring.put(index, BufdescEx(cbd_datlen=length, cbd_sc=status, cbd_bufaddr=addr, cbd_esc=esc,
                              cbd_prot=bd.cbd_prot, cbd_bdu=bdu, ts=bd.ts, res0=bd.res0))
    emit(trace, "FEC-TX-003", "TX descriptor filled and handed to the MAC", slot=index,
         type=buf.type.name, len=length, sc=status)
    txq.cur = ring.next(index)
    return index


def _unmapped(bd: BufdescEx) -> BufdescEx:
    """The descriptor with ``cbd_bufaddr`` cleared, as ``fec_enet_tx_queue`` leaves it."""
    return BufdescEx(bd.cbd_datlen, bd.cbd_sc, 0, bd.cbd_esc, bd.cbd_prot, bd.cbd_bdu, bd.ts,
                     bd.res0)


def tx_room(txq: TxQueue, trace: Trace | None = None) -> int:
    """FEC-TX-002: fewer than ``MAX_SKB_FRAGS + 1`` free descriptors refuses with -EBUSY."""
    free = txq.free_descs()
    if free < MAX_SKB_FRAGS + 1:
        emit(trace, "FEC-TX-002", "not enough free TX descriptors", free=free,
             need=MAX_SKB_FRAGS + 1)
        return -errno.EBUSY
    return 0


def xdp_xmit(fep: Fep, frames: list[XdpFrame], trace: Trace | None = None) -> int:
    """``fec_enet_xdp_xmit`` (ndo_xdp_xmit) (FEC-TX-004): frames are mapped
    ``DMA_TO_DEVICE`` and queued as FEC_TXBUF_T_XDP_NDO, in order, stopping at the first
    that does not fit; returns how many were queued (the caller frees the rest).
    ``TX_XDP_XMIT``/``TX_XDP_XMIT_ERRORS`` are not incremented anywhere (FEC-STATS-003)."""
    txq = fep.txqs[xdp_get_tx_queue(fep, fep.cfg.cpu)]
    sent = 0
    for frame in frames:
        if tx_room(txq, trace) < 0:
            break
        addr = _frame_bus_addr(fep, frame)
        txq_xmit_frame(fep, txq, addr=addr, length=frame.len,
                       buf=TxBuffer(TxBufType.FEC_TXBUF_T_XDP_NDO, frame), trace=trace)
        sent += 1
    emit(trace, "FEC-TX-004", "ndo_xdp_xmit queued frames", sent=sent, asked=len(frames))
    return sent


def _frame_bus_addr(fep: Fep, frame: XdpFrame) -> int:
    """``dma_map_single(xdpf->data)``: the bus address of the frame's data (the model
    maps by identity; mapping never fails)."""
    for pfn, page in fep.bus.pages.items():
        if page is frame.page:
            return (pfn << 12) + frame.data
    raise AssertionError("xdp_frame page is not on the bus")


@attrs.frozen
class TxCompletion:
    """One descriptor ``fec_enet_tx_queue`` cleaned."""

    queue: int
    slot: int
    type: TxBufType
    bytes: int
    error: bool
    fate: str  # what happened to the buffer (a PutOutcome value, a return path, "-")


def _put_xdp_tx_page(buf_p: object, direct: bool, ctx: pp.Context,
                     trace: Trace | None) -> str:
    """Return an XDP_TX buffer's page to its own pool with sync length 0 (FEC-TX-005)."""
    page = buf_p.page.handle if isinstance(buf_p, XdpFrame) else buf_p
    assert isinstance(page, pp.Page) and page.pp is not None
    return page.pp.put_page(page, 0, direct, ctx, trace).value


def _ndo_fate(rets: list[MemReturn]) -> str:
    return ",".join(r.path.value + ("(direct)" if r.napi_direct and
                                    r.path is ReturnPath.PAGE_POOL_PUT_FULL else "")
                    for r in rets)


def tx_queue(fep: Fep, queue: int, budget: int, trace: Trace | None = None
             ) -> list[TxCompletion]:
    """``fec_enet_tx_queue`` (FEC-TX-005, FEC-TX-006, FEC-STATS-002).

    Walks from the descriptor after ``dirty_tx`` to ``bd.cur``, stopping at one still
    READY.  An XDP buffer with ``budget`` 0 stops the whole walk (no page_pool call from
    a possible IRQ context).  Counters: an error bit (HB, LC, RL, UN, CSL) counts
    ``tx_errors`` and its specific counter, else ``tx_packets`` and ``tx_bytes`` (the
    descriptor length for XDP buffers); DEF counts a collision.  XDP_TX pages go back to
    their pool with sync length 0 and direct recycling; NDO frames through
    ``xdp_return_frame_rx_napi``.
    """
    txq = fep.txqs[queue]
    ring = txq.ring
    stats = fep.stats
    done: list[TxCompletion] = []
    index = ring.next(txq.dirty_tx)
    while index != txq.cur:
        bd = ring.get(index)
        status = bd.cbd_sc
        if status & BD_ENET_TX_READY:
            break
        buf = txq.tx_buf[index]
        if buf.type is TxBufType.FEC_TXBUF_T_SKB:  # never met: the model sends no skbs
            ring.put(index, _unmapped(bd))  # (an skb slot: unmapped, address cleared)
            if buf.buf_p is None:  # (a slot the skb path left empty)
                txq.dirty_tx = index  # (skb slot done)
                index = ring.next(index)  # (past the skb slot)
                continue
            raise AssertionError("the model queues no skbs")
        if budget == 0:
            emit(trace, "FEC-TX-006", "budget 0: XDP buffers are left for a later poll",
                 slot=index)
            break
        if buf.type is TxBufType.FEC_TXBUF_T_XDP_NDO and bd.cbd_bufaddr:
            fep.syncs.unmaps += 1
        ring.put(index, _unmapped(bd))
        if buf.buf_p is None:
            buf.type = TxBufType.FEC_TXBUF_T_SKB
            txq.dirty_tx = index
            index = ring.next(index)
            continue
        frame_len = bd.cbd_datlen
        error = bool(status & (BD_ENET_TX_HB | BD_ENET_TX_LC | BD_ENET_TX_RL |
                               BD_ENET_TX_UN | BD_ENET_TX_CSL))
        if error:
            stats.tx_errors += 1
            stats.tx_heartbeat_errors += bool(status & BD_ENET_TX_HB)
            stats.tx_window_errors += bool(status & BD_ENET_TX_LC)
            stats.tx_aborted_errors += bool(status & BD_ENET_TX_RL)
            stats.tx_fifo_errors += bool(status & BD_ENET_TX_UN)
            stats.tx_carrier_errors += bool(status & BD_ENET_TX_CSL)
        else:
            stats.tx_packets += 1
            stats.tx_bytes += frame_len
        if status & BD_ENET_TX_DEF:
            stats.collisions += 1
        if buf.type is TxBufType.FEC_TXBUF_T_XDP_NDO:
            fate = _ndo_fate(xdp_return_frame_rx_napi(buf.buf_p, trace=trace))
            fep.ndo_returned.append(buf.buf_p)
        else:
            fate = _put_xdp_tx_page(buf.buf_p, True, NAPI_CTX, trace)
        emit(trace, "FEC-TX-005", "TX buffer returned", slot=index, type=buf.type.name,
             fate=fate, error=error)
        done.append(TxCompletion(queue, index, buf.type, frame_len, error, fate))
        buf.buf_p = None
        buf.type = TxBufType.FEC_TXBUF_T_SKB
        txq.dirty_tx = index
        index = ring.next(index)
    return done


def release_tx_buffers(fep: Fep, trace: Trace | None = None, *, restart: bool
                       ) -> list[TxCompletion]:
    """The TX half of ``fec_enet_bd_init`` (``restart``) / ``fec_enet_free_buffers``
    (FEC-TX-007): every slot is released by its recorded type, outside NAPI: XDP_TX pages
    with sync length 0 and no direct recycling, NDO frames with ``xdp_return_frame``;
    then the slot is empty and FEC_TXBUF_T_SKB again.

    Only the restart unmaps an NDO slot's mapping (``fec_enet_bd_init``: v7.3 whatever
    the address, 6.12 when it is non-zero, which for an NDO slot a correct driver leaves
    is the same); ``fec_enet_free_buffers`` returns the frame and leaves the mapping.
    The type alone decides: an NDO slot whose frame is gone (a completion that did not
    restore FEC_TXBUF_T_SKB, FEC-TX-005) is still unmapped at restart."""
    out: list[TxCompletion] = []
    for q, txq in enumerate(fep.txqs):
        for index, buf in enumerate(txq.tx_buf):
            if buf.type is TxBufType.FEC_TXBUF_T_XDP_NDO:
                if restart:
                    fep.syncs.unmaps += 1
                if buf.buf_p is not None:  # (v7.3 would return a NULL frame: an oops)
                    fate = _ndo_fate(xdp_return_frame(buf.buf_p, trace=trace))
                    fep.ndo_returned.append(buf.buf_p)
                    emit(trace, "FEC-TX-007", "pending TX buffer released", slot=index,
                         type=buf.type.name, fate=fate, unmapped=restart)
                    out.append(TxCompletion(q, index, buf.type, 0, False, fate))
            elif buf.buf_p is not None:
                if isinstance(buf.buf_p, XdpFrame):
                    # f601899e4321 (FEC-XDP-008): the frame goes back with xdp_return_frame:
                    # MEM_TYPE_PAGE_POOL, so page_pool_put_full_page (sync over max_len),
                    # not direct.
                    fate = _ndo_fate(xdp_return_frame(buf.buf_p, trace=trace))
                    page = buf.buf_p.page.handle
                    assert isinstance(page, pp.Page) and page.pp is not None
                    page.pp.put_full_page(page, False, pp.PROCESS_CONTEXT, trace)
                else:
                    fate = _put_xdp_tx_page(buf.buf_p, False, pp.PROCESS_CONTEXT, trace)
                emit(trace, "FEC-TX-007", "pending TX buffer released", slot=index,
                     type=buf.type.name, fate=fate)
                out.append(TxCompletion(q, index, buf.type, 0, False, fate))
            txq.tx_buf[index] = TxBuffer()
    return out

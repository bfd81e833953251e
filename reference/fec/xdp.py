"""``fec_enet_run_xdp`` and ``fec_enet_xdp_tx_xmit`` (FEC-XDP-001 .. FEC-XDP-008).

Read in ``fec_main.c`` (Kingxukai/linux v6.17-rc3, blob 9b44fff6).  The program is an
op list run by :func:`reference.xdp.program.run_program` on the queue's ``xdp_buff``.
"""

from __future__ import annotations

import enum
import errno
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from reference import page_pool as pp
from reference.fec.counters import (
    RX_XDP_DROP,
    RX_XDP_PASS,
    RX_XDP_REDIRECT,
    RX_XDP_TX,
    RX_XDP_TX_ERRORS,
    bump,
)
from reference.fec.state import Fep, TxBuffer, TxBufType
from reference.fec.tx import NAPI_CTX, tx_room, txq_xmit_frame, xdp_get_tx_queue
from reference.kernel import gate
from reference.trace import Trace, emit
from reference.xdp.actions import ACTION_NAMES, XdpAction
from reference.xdp.arch import xdp_semantics
from reference.xdp.buff import XdpBuff
from reference.xdp.frame import xdp_convert_buff_to_frame
from reference.xdp.program import ProgramRun, run_program

# fec_main.c: the verdict bits fec_enet_run_xdp returns.
FEC_ENET_XDP_PASS = 0
FEC_ENET_XDP_CONSUMED = 1 << 0
FEC_ENET_XDP_TX = 1 << 1
FEC_ENET_XDP_REDIR = 1 << 2


class Fate(enum.Enum):
    """Where the RX page went after the verdict (observable, FEC-XDP-002..007)."""

    SKB = "skb"
    TX_RING = "tx_ring"
    REDIRECTED = "redirected"
    RECYCLED = "recycled"


@attrs.frozen
class XdpResult:
    """One run: the FEC_ENET_XDP_* bits, the program's run, and the page's fate."""

    ret: int
    run: ProgramRun
    verdict: str  # the action's name, or "UNKNOWN" for a value above XDP_REDIRECT
    fate: Fate
    #: drop path: (sync length, allow_direct, PutOutcome value); else None
    recycle: tuple[int, bool, str] | None
    #: XDP_TX: (queue, slot, length, sync length) or the errno when it failed
    tx: tuple[int, int, int, int] | int | None
    exception: bool  # trace_xdp_exception fired


def _verdict_name(act: int) -> str:
    """The action's name; every value above ``XDP_REDIRECT`` is "UNKNOWN"."""
    return ACTION_NAMES[act] if act <= XdpAction.XDP_REDIRECT else "UNKNOWN"


def run_xdp(fep: Fep, ops: Sequence[Mapping[str, Any]], xdp: XdpBuff, page: pp.Page,
            trace: Trace | None = None) -> XdpResult:
    """``fec_enet_run_xdp`` (FEC-XDP-001 .. FEC-XDP-007).

    ``sync`` is the larger of the linear length before and after the program
    (FEC-XDP-002).  PASS counts ``rx_xdp_pass``; REDIRECT counts ``rx_xdp_redirect``
    before trying; TX counts ``rx_xdp_tx`` and, on failure, ``rx_xdp_tx_errors``;
    ABORTED, DROP and unknown values count ``rx_xdp_drop``.  Every failure and drop
    puts the page back to the queue's pool with length ``sync`` and ``allow_direct``
    (FEC-XDP-003); ``trace_xdp_exception`` fires unless the verdict was DROP.
    """
    rxq = fep.rxq
    len0 = xdp.data_end - xdp.data
    run = run_program(ops, xdp, metadata_ops=None, trace=trace,
                      kernel=xdp_semantics(fep.cfg.kernel))
    act = run.action
    sync = max(xdp.data_end - xdp.data, len0)
    emit(trace, "FEC-XDP-002", "DMA sync length for a recycle is max(len before, after)",
         before=len0, after=xdp.data_end - xdp.data, sync=sync)
    verdict = _verdict_name(act)
    tx: tuple[int, int, int, int] | int | None = None
    if act == XdpAction.XDP_PASS:
        bump(rxq.stats, RX_XDP_PASS)
        emit(trace, "FEC-XDP-001", "XDP_PASS: build an skb", counter="rx_xdp_pass")
        return XdpResult(FEC_ENET_XDP_PASS, run, verdict, Fate.SKB, None, None, False)
    if act == XdpAction.XDP_REDIRECT:
        bump(rxq.stats, RX_XDP_REDIRECT)
        if fep.cfg.redirect_ok:
            fep.redirected.append(page)
            emit(trace, "FEC-XDP-006", "XDP_REDIRECT: the target owns the page")
            return XdpResult(FEC_ENET_XDP_REDIR, run, verdict, Fate.REDIRECTED, None, None,
                             False)
        emit(trace, "FEC-XDP-006", "XDP_REDIRECT without a target fails: drop path",
             err=-errno.EINVAL)
    elif act == XdpAction.XDP_TX:
        # The XDP_TX counters came after f601899e4321 (FEC-XDP-008).
        counted = not fep.cfg.xdp_tx_frame
        if counted:
            bump(rxq.stats, RX_XDP_TX)
        res = xdp_tx_xmit(fep, fep.cfg.cpu, xdp, page, sync, trace)
        if isinstance(res, tuple):
            return XdpResult(FEC_ENET_XDP_TX, run, verdict, Fate.TX_RING, None, res, False)
        if counted:
            bump(rxq.stats, RX_XDP_TX_ERRORS)
        tx = res
        emit(trace, "FEC-XDP-005", "XDP_TX failed: rx_xdp_tx_errors, drop path", err=res)
    else:
        bump(rxq.stats, RX_XDP_DROP)
        emit(trace, "FEC-XDP-004", f"{verdict}: rx_xdp_drop, drop path", act=act)
    # xdp_err: the head page of xdp->data goes back with sync, allow_direct (FEC-XDP-003).
    outcome = rxq.pool.put_page(page, sync, True, NAPI_CTX, trace)
    emit(trace, "FEC-XDP-003", "page recycled from the drop path", sync=sync,
         allow_direct=True, outcome=outcome.value)
    return XdpResult(FEC_ENET_XDP_CONSUMED, run, verdict, Fate.RECYCLED,
                     (sync, True, outcome.value), tx, act != XdpAction.XDP_DROP)


def xdp_tx_queue(fep: Fep, cpu: int) -> int:
    """FEC-XDP-005: the TX queue of an XDP_TX frame.  Up to v6.19 it is the NAPI CPU modulo
    the TX queue count (``fec_enet_xdp_get_tx_queue``).  Since v7.0 (8a3344bb734f, with the
    split-out ``fec_enet_rx_queue_xdp``) it is the RX queue's own index when a TX queue of
    that index exists, which for the model's single RX queue 0 is always queue 0.  The
    f601899e4321 mode (``xdp_tx_frame``) predates both and keeps the CPU choice."""
    if gate(fep.cfg.kernel, "FEC-XDP-005") and not fep.cfg.xdp_tx_frame:
        rx_queue = 0  # the model has one RX queue (FEC-RX-001)
        if rx_queue < fep.cfg.num_tx_queues:
            return rx_queue
    return xdp_get_tx_queue(fep, cpu)


def xdp_tx_xmit(fep: Fep, cpu: int, xdp: XdpBuff, page: pp.Page, sync: int,
                trace: Trace | None = None) -> tuple[int, int, int, int] | int:
    """``fec_enet_xdp_tx_xmit`` (FEC-XDP-005, FEC-XDP-008).

    v6.17: the RX page itself goes into the TX slot as FEC_TXBUF_T_XDP_TX; its bus
    address is the page's DMA address plus ``data - data_hard_start``, synced for the
    device over ``sync`` bytes, bidirectionally; the length is ``data_end - data``.
    With ``xdp_tx_frame`` (commit f601899e4321, replaced by af6f4791380c in the same
    merge) the buffer is first converted to an ``xdp_frame`` (-EFAULT if that fails),
    before the queue and the free-descriptor check; the slot holds the frame, with the
    same address and the same ``sync`` length.
    Returns (queue, slot, length, sync) or a negative errno.
    """
    buf_p: object = page
    if fep.cfg.xdp_tx_frame:
        # f601899e4321: the conversion comes first, before the queue is chosen and before
        # the free-descriptor check, so a full ring still costs a conversion.
        frame = xdp_convert_buff_to_frame(xdp, trace=trace)
        fep.ops.xdp_frame_conversions += 1
        if frame is None:
            return -errno.EFAULT
        buf_p = frame
        emit(trace, "FEC-XDP-008", "f601899e4321 XDP_TX: converted to xdp_frame first",
             headroom=frame.headroom)
    queue = xdp_tx_queue(fep, cpu)
    txq = fep.txqs[queue]
    err = tx_room(txq, trace)
    if err:
        return err
    length = xdp.data_end - xdp.data
    # Both versions sync dma_sync_len (run_xdp's ``sync``) from the data's bus address
    # (f601899e4321 computes it as page DMA + sizeof(xdp_frame) + frame->headroom).
    sync_len = sync
    addr = page.dma_addr + (xdp.data - xdp.data_hard_start)
    fep.syncs.sync_for_device(addr, sync_len)
    slot = txq_xmit_frame(fep, txq, addr=addr, length=length,
                          buf=TxBuffer(TxBufType.FEC_TXBUF_T_XDP_TX, buf_p), trace=trace)
    emit(trace, "FEC-XDP-005", "XDP_TX: the RX page is queued on TX", queue=queue, slot=slot,
         len=length, sync=sync_len)
    return (queue, slot, length, sync_len)

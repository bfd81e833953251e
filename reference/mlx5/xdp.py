"""The per-RQ ``mlx5e_xdp_buff`` and ``mlx5e_xdp_handle`` (SPEC: MLX5-XDP-*).

Since "net/mlx5e: Reuse per-RQ XDP buffer to avoid stack zeroing overhead" (in
v6.17-rc3) every mlx5e RQ owns one ``struct mlx5e_xdp_buff`` (``rq->mxbuf``): an
``xdp_buff`` followed by a ``cqe`` and an ``rq`` pointer.  The RX builders in
``en_rx.c`` refill it for each packet with ``mlx5e_fill_mxbuf``, which writes exactly
what ``xdp_init_buff`` and ``xdp_prepare_buff`` write plus ``cqe`` and ``rq``
(MLX5-XDP-001); every other field keeps what the previous packet left.  The model's
:class:`Mlx5eXdpBuff` is an :class:`~reference.xdp.buff.XdpBuff` with those two extra
fields, so the stale values are the kernel's stale values.

``mlx5e_xdp_handle`` (``en/xdp.c``) runs the program and carries out its verdict,
including the transmit onto the RQ's XDP-SQ (:class:`Mlx5eXdpsq`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from reference.mlx5 import cqe as C
from reference.mlx5.counters import Mlx5eRqStats, Mlx5eXdpsqStats
from reference.mlx5.kfuncs import MLX5E_XDP_METADATA_OPS
from reference.trace import Trace, emit
from reference.xdp.actions import ACTION_NAMES, XdpAction
from reference.xdp.arch import xdp_semantics
from reference.xdp.buff import (
    XdpBuff,
    xdp_buff_has_frags,
    xdp_get_shared_info_from_buff,
    xdp_init_buff,
    xdp_prepare_buff,
)
from reference.xdp.frame import XdpFrame, xdp_convert_buff_to_frame
from reference.xdp.memory import Page
from reference.xdp.program import ProgramRun, run_program

if TYPE_CHECKING:
    from reference.mlx5.rx import Mlx5eRq

#: ``MLX5E_XDP_MIN_INLINE``: the L2 header the SQ must inline when its min inline mode
#: is not NONE (``en/xdp.h``).
MLX5E_XDP_MIN_INLINE = 18
#: ``MLX5E_TX_WQE_EMPTY_DS_COUNT``: control + Ethernet segments of a send WQE.
MLX5E_TX_WQE_EMPTY_DS_COUNT = 2
#: ``MLX5_SEND_WQEBB_NUM_DS``: 16-byte data segments per 64-byte WQE basic block.
MLX5_SEND_WQEBB_NUM_DS = 4


@attrs.define(eq=False)
class Mlx5eXdpBuff(XdpBuff):
    """``struct mlx5e_xdp_buff``: the xdp_buff first (so the kfuncs can cast the program
    context back), then the CQE being processed and the owning RQ.  A new one is all
    zeroes, like the RQ allocation it lives in (MLX5-XDP-001)."""

    cqe: C.mlx5_cqe64 | None = None
    rq: Mlx5eRq | None = None


def mlx5e_fill_mxbuf(
    rq: Mlx5eRq, cqe: C.mlx5_cqe64, page: Page, va: int, headroom: int, frame_sz: int,
    length: int, mxbuf: Mlx5eXdpBuff, trace: Trace | None = None,
) -> None:
    """MLX5-XDP-001: the per-packet reset of the per-RQ buffer.

    ``xdp_init_buff`` (frame_sz, rxq, flags = 0), ``xdp_prepare_buff`` with metadata
    supported (hard start, data, data_end, data_meta = data), then ``cqe`` and ``rq``.
    ``txq`` and the shared info in the page are not touched.
    """
    xdp_init_buff(mxbuf, frame_sz, rq.xdp_rxq)
    xdp_prepare_buff(mxbuf, page, va, headroom, length, True)
    mxbuf.cqe = cqe
    mxbuf.rq = rq
    emit(trace, "MLX5-XDP-001", "mxbuf refilled", frame_sz=frame_sz, headroom=headroom,
         len=length)


def mxbuf_snapshot(mxbuf: Mlx5eXdpBuff) -> dict[str, int]:
    """What the program is handed: the fields the per-packet reset governs."""
    frags_size = nr_frags = 0
    if xdp_buff_has_frags(mxbuf):
        sinfo = xdp_get_shared_info_from_buff(mxbuf)
        frags_size, nr_frags = sinfo.xdp_frags_size, sinfo.nr_frags
    return {
        "frame_sz": mxbuf.frame_sz,
        "flags": mxbuf.flags,
        "headroom": mxbuf.data - mxbuf.data_hard_start,
        "len": mxbuf.data_end - mxbuf.data,
        "metasize": mxbuf.data - mxbuf.data_meta,
        "nr_frags": nr_frags,
        "frags_size": frags_size,
    }


# --- the XDP-SQ ---------------------------------------------------------------------------


@attrs.frozen
class SqEntry:
    """One posted send: the pages it holds until its completion (MLX5-XDP-007)."""

    pages: tuple[Page, ...]
    wqebbs: int


@attrs.define
class Mlx5eXdpsq:
    """The RQ's XDP-SQ, non-MPWQE flavour (``mlx5e_xmit_xdp_frame``).

    ``size`` WQE basic blocks; ``pc``/``cc`` are the producer/consumer counters (u16).
    """

    size: int
    hw_mtu: int
    min_inline: bool = False  # min_inline_mode != MLX5_INLINE_MODE_NONE
    pc: int = 0
    cc: int = 0
    posted: list[SqEntry] = attrs.field(factory=list)
    stats: Mlx5eXdpsqStats = attrs.field(factory=Mlx5eXdpsqStats)

    def has_room_for(self, n: int) -> bool:
        """``mlx5e_wqc_has_room_for``: ``(cc - pc) mod size >= n``, or the ring is empty."""
        return ((self.cc - self.pc) & (self.size - 1)) >= n or self.cc == self.pc

    def xmit(self, frame: XdpFrame, nr_frags: int, frags_size: int, pages: tuple[Page, ...],
             trace: Trace | None = None) -> bool:
        """MLX5-XDP-008: length check (``rx_xdp_tx_err``), then room (``rx_xdp_tx_full``)."""
        length = frame.len
        inline_ok = not self.min_inline or length >= MLX5E_XDP_MIN_INLINE
        if not inline_ok or self.hw_mtu < length + frags_size:
            self.stats.err += 1
            emit(trace, "MLX5-XDP-008", "XDP_TX length error", len=length, frags=frags_size)
            return False
        inline = MLX5E_XDP_MIN_INLINE if self.min_inline else 0
        ds_cnt = MLX5E_TX_WQE_EMPTY_DS_COUNT + int(length - inline > 0) + int(inline > 0)
        wqebbs, stop_room = 1, 1
        if nr_frags:
            ds_cnt += nr_frags
            wqebbs = -(-ds_cnt // MLX5_SEND_WQEBB_NUM_DS)
            stop_room = mlx5e_stop_room(wqebbs)
        if not self.has_room_for(stop_room):
            self.stats.full += 1
            emit(trace, "MLX5-XDP-008", "XDP-SQ full", pc=self.pc, cc=self.cc)
            return False
        self.posted.append(SqEntry(pages, wqebbs))
        self.pc = (self.pc + wqebbs) & 0xFFFF
        self.stats.xmit += 1
        return True

    def complete_all(self, trace: Trace | None = None) -> list[Page]:
        """MLX5-RX-003: the device has sent every posted WQE; their pages go back to the
        page_pool (``page_pool_recycle_direct``)."""
        pages = [p for e in self.posted for p in e.pages]
        if self.posted:
            self.stats.cqes += len(self.posted)
            emit(trace, "MLX5-RX-003", "XDP-SQ completions", wqes=len(self.posted))
        self.posted.clear()
        self.cc = self.pc
        return pages


def mlx5e_stop_room(wqebbs: int) -> int:
    """``MLX5E_STOP_ROOM(wqebbs)`` for a multi-WQEBB send (model convention: the WQEBBs
    themselves plus the NOP padding a wrap could need, ``2 * wqebbs - 1``)."""
    return 2 * wqebbs - 1


# --- mlx5e_xdp_handle ---------------------------------------------------------------------


class Fate(enum.Enum):
    """Where the packet's buffers went."""

    SKB = "skb"
    DROP = "drop"  # recycled into the page_pool at once
    TX = "tx"  # held by the XDP-SQ until completion, then recycled
    REDIRECT = "redirect"


@attrs.frozen
class XdpOutcome:
    run: ProgramRun
    verdict: str
    consumed: bool
    fate: Fate
    exception: bool = False  # trace_xdp_exception fired
    warned: bool = False  # bpf_warn_invalid_xdp_action fired


def mlx5e_xdp_handle(
    rq: Mlx5eRq, ops: Sequence[Mapping[str, Any]], mxbuf: Mlx5eXdpBuff,
    trace: Trace | None = None,
) -> XdpOutcome:
    """MLX5-XDP-004..009: run the program on the per-RQ buffer and act on its verdict."""
    run = run_program(ops, mxbuf, metadata_ops=MLX5E_XDP_METADATA_OPS, ctx=mxbuf, trace=trace,
                      kernel=xdp_semantics(rq.cfg.kernel))
    act = run.action
    stats: Mlx5eRqStats = rq.stats
    name = ACTION_NAMES.get(act, f"INVALID({act})")
    warned = False
    if act == XdpAction.XDP_PASS:
        emit(trace, "MLX5-XDP-004", "XDP_PASS: build the skb from the buffer")
        return XdpOutcome(run, name, False, Fate.SKB)
    if act == XdpAction.XDP_TX:
        if _xmit_xdp_buff(rq, mxbuf, trace):
            rq.flag_xdp_xmit = True
            emit(trace, "MLX5-XDP-007", "XDP_TX posted on the XDP-SQ")
            return XdpOutcome(run, name, True, Fate.TX)
    elif act == XdpAction.XDP_REDIRECT:
        if rq.cfg.redirect_ok:
            rq.flag_xdp_xmit = rq.flag_xdp_redirect = True
            stats.xdp_redirect += 1
            emit(trace, "MLX5-XDP-009", "XDP_REDIRECT done")
            return XdpOutcome(run, name, True, Fate.REDIRECT)
        emit(trace, "MLX5-XDP-009", "xdp_do_redirect failed: abort path")
    elif act not in (XdpAction.XDP_ABORTED, XdpAction.XDP_DROP):
        warned = True
        emit(trace, "MLX5-XDP-006", "invalid action: bpf_warn_invalid_xdp_action", act=act)
    exception = act != XdpAction.XDP_DROP
    if exception:
        emit(trace, "MLX5-XDP-006", "trace_xdp_exception", act=act)
    stats.xdp_drop += 1
    emit(trace, "MLX5-XDP-005", "rx_xdp_drop; the page goes back to the pool")
    return XdpOutcome(run, name, True, Fate.DROP, exception, warned)


def _xmit_xdp_buff(rq: Mlx5eRq, mxbuf: Mlx5eXdpBuff, trace: Trace | None) -> bool:
    """MLX5-XDP-007: ``mlx5e_xmit_xdp_buff``: convert in place, then post."""
    frame = xdp_convert_buff_to_frame(mxbuf, trace=trace)
    if frame is None:
        emit(trace, "MLX5-XDP-007", "xdp_convert_buff_to_frame failed")
        return False
    nr_frags = frags_size = 0
    pages: list[Page] = [mxbuf._page()]
    if xdp_buff_has_frags(mxbuf):
        sinfo = xdp_get_shared_info_from_buff(mxbuf)
        nr_frags, frags_size = sinfo.nr_frags, sinfo.xdp_frags_size
        pages += [f.page for f in sinfo.valid_frags()]
    return rq.xdpsq.xmit(frame, nr_frags, frags_size, tuple(pages), trace)

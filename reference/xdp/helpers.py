"""The BPF helpers that move an ``xdp_buff``'s pointers (XDP-ADJ-001 .. XDP-ADJ-010).

``bpf_xdp_adjust_head``, ``bpf_xdp_adjust_meta`` and ``bpf_xdp_adjust_tail`` from
``net/core/filter.c`` (v6.17), with every bound the kernel checks.  Each returns 0 or a
negative errno; a refused call changes nothing (ERR-003).  Bytes move the way the
kernel moves them: metadata is copied along with a head adjustment, a tail grow
zero-fills the new bytes, a shrink leaves the old bytes where they are.

A tail shrink of a multi-buffer packet releases whole frags.  The model cannot free
pages, so it appends one :class:`~reference.xdp.mem.MemReturn` per released frag to the
``released`` list the caller passes; a driver or page_pool model dispatches on them.
"""

from __future__ import annotations

import errno

from reference.errors import StateViolation
from reference.trace import Trace, emit
from reference.xdp.arch import ETH_HLEN, V6_17, KernelSemantics
from reference.xdp.buff import (
    XDP_FLAGS_FRAGS_PF_MEMALLOC,
    XDP_FLAGS_HAS_FRAGS,
    XdpBuff,
    xdp_buff_has_frags,
    xdp_data_hard_end,
    xdp_data_meta_unsupported,
    xdp_get_buff_len,
    xdp_get_shared_info_from_buff,
    xdp_metalen_invalid,
)
from reference.xdp.mem import MemReturn, MemType, xdp_return
from reference.xdp.warn import KernelWarn, kernel_warn

#: ``include/linux/errno.h``: the kernel-internal "operation is not supported" that
#: ``bpf_xdp_adjust_meta`` returns.  It is not a uapi errno and Python's ``errno``
#: module does not have it (``errno.ENOTSUP`` is 95, the uapi ``EOPNOTSUPP``).
ENOTSUPP = 524


def s32(value: int) -> int:
    """The helpers take ``int offset``: a 64-bit BPF register truncated to a signed
    32-bit int (XDP-ADJ-001)."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def _offset_argument(offset: int, trace: Trace | None) -> int:
    """A helper's ``int offset`` argument as it reads it (XDP-ADJ-001), told to the trace."""
    offset = s32(offset)
    emit(trace, "XDP-ADJ-001", f"the offset argument read as a 32-bit int: {offset}")
    return offset


def _u32(value: int) -> int:
    return value & 0xFFFFFFFF


def xdp_get_metalen(xdp: XdpBuff) -> int:
    """``xdp_get_metalen``: ``data - data_meta``, or 0 when metadata is unsupported."""
    return 0 if xdp_data_meta_unsupported(xdp) else xdp.data - xdp.data_meta


def bpf_xdp_get_buff_len(xdp: XdpBuff) -> int:
    """``bpf_xdp_get_buff_len``: :func:`~reference.xdp.buff.xdp_get_buff_len` (XDP-BUFF-008)."""
    return xdp_get_buff_len(xdp)


def bpf_xdp_adjust_head(xdp: XdpBuff, offset: int, *, trace: Trace | None = None) -> int:
    """``bpf_xdp_adjust_head``: move ``data`` by ``offset`` (XDP-ADJ-002, XDP-ADJ-003).

    The new ``data`` must leave room for a ``struct xdp_frame`` plus the current
    metadata above ``data_hard_start`` and at least ``ETH_HLEN`` bytes before
    ``data_end``; otherwise -EINVAL.  The metadata is copied to its new place and
    ``data_meta`` moves by the same offset.
    """
    offset = _offset_argument(offset, trace)
    page = xdp._page()
    metalen = xdp_get_metalen(xdp)
    data_start = xdp.data_hard_start + xdp.arch.sizeof_xdp_frame + metalen
    data = xdp.data + offset
    if data < data_start or data > xdp.data_end - ETH_HLEN:
        emit(trace, "XDP-ADJ-002", "head adjustment out of bounds", offset=offset, data=data,
             min=data_start, max=xdp.data_end - ETH_HLEN)
        return -errno.EINVAL
    if metalen:
        src = xdp.data_meta
        page.data[src + offset : src + offset + metalen] = page.data[src : src + metalen]
    xdp.data_meta += offset
    xdp.data = data
    emit(trace, "XDP-ADJ-003", "head moved, metadata moved with it", offset=offset,
         metalen=metalen)
    return 0


def bpf_xdp_adjust_meta(xdp: XdpBuff, offset: int, *, trace: Trace | None = None) -> int:
    """``bpf_xdp_adjust_meta``: move ``data_meta`` by ``offset`` (XDP-ADJ-004, XDP-ADJ-005).

    -ENOTSUPP (524) when the driver marked metadata unsupported; -EINVAL when the new
    ``data_meta`` would sit inside the ``xdp_frame`` reserve or above ``data``; -EACCES
    when the resulting length is not a multiple of 4 or exceeds 255.  No bytes move.
    """
    offset = _offset_argument(offset, trace)
    frame_end = xdp.data_hard_start + xdp.arch.sizeof_xdp_frame
    meta = xdp.data_meta + offset
    if xdp_data_meta_unsupported(xdp):
        emit(trace, "XDP-ADJ-004", "metadata unsupported by the driver", ret=-ENOTSUPP)
        return -ENOTSUPP
    if meta < frame_end or meta > xdp.data:
        emit(trace, "XDP-ADJ-005", "metadata pointer out of bounds", meta=meta, min=frame_end,
             max=xdp.data)
        return -errno.EINVAL
    metalen = xdp.data - meta
    if xdp_metalen_invalid(metalen):
        emit(trace, "XDP-ADJ-005", "metadata length not 4-aligned or above 255",
             metalen=metalen)
        return -errno.EACCES
    xdp.data_meta = meta
    emit(trace, "XDP-ADJ-005", "metadata adjusted", metalen=metalen)
    return 0


def bpf_xdp_adjust_tail(
    xdp: XdpBuff,
    offset: int,
    *,
    released: list[MemReturn] | None = None,
    kernel: KernelSemantics = V6_17,
    warns: list[KernelWarn] | None = None,
    trace: Trace | None = None,
) -> int:
    """``bpf_xdp_adjust_tail``: move the end of the packet by ``offset``.

    A linear buffer may grow up to ``xdp_data_hard_end`` and shrink down to
    ``ETH_HLEN`` bytes (XDP-ADJ-006).  A multi-buffer packet is handled by the frags
    paths instead (XDP-ADJ-007 .. XDP-ADJ-010).  The v6.18 grow path's WARN_ONCE on a
    negative tailroom is reported in ``warns`` (XDP-ADJ-008).
    """
    offset = _offset_argument(offset, trace)
    if xdp_buff_has_frags(xdp):
        emit(trace, "XDP-ADJ-007", "multi-buffer packet: frags path", offset=offset)
        if offset < 0:
            return _frags_shrink_tail(xdp, s32(-offset), released, kernel, trace)
        return _frags_increase_tail(xdp, offset, kernel, warns, trace)

    page = xdp._page()
    hard_end = xdp_data_hard_end(xdp)
    data_end = xdp.data_end + offset
    if data_end > hard_end:
        emit(trace, "XDP-ADJ-006", "tail beyond data_hard_end", data_end=data_end,
             hard_end=hard_end)
        return -errno.EINVAL
    if data_end < xdp.data + ETH_HLEN:
        emit(trace, "XDP-ADJ-006", "packet would be shorter than ETH_HLEN", data_end=data_end,
             min=xdp.data + ETH_HLEN)
        return -errno.EINVAL
    if offset > 0:
        if data_end > len(page):
            raise StateViolation("tail grow would write past the buffer (frame_sz larger "
                                 "than the memory)", obj="xdp_buff", rule="XDP-ADJ-006")
        page.data[xdp.data_end : data_end] = bytes(offset)
    xdp.data_end = data_end
    emit(trace, "XDP-ADJ-006", "tail adjusted", offset=offset)
    return 0


def _frags_increase_tail(
    xdp: XdpBuff, offset: int, kernel: KernelSemantics, warns: list[KernelWarn] | None,
    trace: Trace | None,
) -> int:
    """``bpf_xdp_frags_increase_tail`` (XDP-ADJ-008)."""
    sinfo = xdp_get_shared_info_from_buff(xdp)
    if not 0 < sinfo.nr_frags <= len(sinfo.frags):
        # frags[nr_frags - 1] with nr_frags == 0 reads before the array.
        raise StateViolation("XDP_FLAGS_HAS_FRAGS set but no frag", obj="skb_shared_info",
                             rule="XDP-ADJ-008")
    frag = sinfo.frags[sinfo.nr_frags - 1]
    rxq = xdp.rxq
    if rxq is None:
        raise StateViolation("xdp->rxq is NULL", obj="xdp_buff", rule="XDP-ADJ-008")
    if not rxq.frag_size or rxq.frag_size > xdp.frame_sz:
        emit(trace, "XDP-ADJ-008", "driver does not allow frag growth",
             frag_size=rxq.frag_size, frame_sz=xdp.frame_sz)
        return -errno.EOPNOTSUPP
    if kernel.frag_tailroom_modulo:
        # Computed in unsigned int, stored in an int: wraps to negative when the frag
        # already runs past frag_size, which the kernel WARN_ONCEs about and then refuses
        # every grow (the signed comparison below), offset 0 included.
        tailroom = s32(rxq.frag_size - frag.size - frag.offset % rxq.frag_size)
        if tailroom < 0:
            kernel_warn(warns, trace, rule="XDP-ADJ-008", function="bpf_xdp_frags_increase_tail",
                        message="tailroom < 0", once=True, tailroom=tailroom)
    else:
        # unsigned int arithmetic: wraps to a huge value when the frag does not start at
        # the beginning of a frag_size-sized buffer.
        tailroom = _u32(rxq.frag_size - frag.size - frag.offset)
    if offset > tailroom:
        emit(trace, "XDP-ADJ-008", "not enough tailroom in the last frag", offset=offset,
             tailroom=tailroom)
        return -errno.EINVAL
    start = frag.offset + frag.size
    if start + offset > len(frag.page):
        raise StateViolation(f"growing the last frag by {offset} writes past its page "
                             f"(tailroom computed as {tailroom})", obj="skb_frag",
                             rule="XDP-ADJ-008")
    frag.page.data[start : start + offset] = bytes(offset)
    frag.size += offset
    sinfo.xdp_frags_size += offset
    emit(trace, "XDP-ADJ-008", "last frag grown", offset=offset, tailroom=tailroom)
    return 0


def _frags_shrink_tail(
    xdp: XdpBuff,
    offset: int,
    released: list[MemReturn] | None,
    kernel: KernelSemantics,
    trace: Trace | None,
) -> int:
    """``bpf_xdp_frags_shrink_tail`` (XDP-ADJ-009, XDP-ADJ-010)."""
    sinfo = xdp_get_shared_info_from_buff(xdp)
    if offset > xdp_get_buff_len(xdp) - ETH_HLEN:
        emit(trace, "XDP-ADJ-009", "packet would be shorter than ETH_HLEN", offset=offset,
             buff_len=xdp_get_buff_len(xdp))
        return -errno.EINVAL
    rxq = xdp.rxq
    if rxq is None:
        raise StateViolation("xdp->rxq is NULL", obj="xdp_buff", rule="XDP-ADJ-009")
    mem_type = rxq.mem.type
    # Decide every release first, so a refused return (StateViolation) changes nothing.
    plan: list[tuple[int, int, bool]] = []  # (frag index, bytes taken, released)
    remaining = offset
    i = sinfo.nr_frags - 1
    while i >= 0 and remaining > 0:
        frag = sinfo.frags[i]
        shrink = min(remaining, frag.size)
        remaining -= shrink
        release = frag.size == shrink
        plan.append((i, shrink, release))
        if not release:
            break
        i -= 1
    # The XSK path hands the tail xsk buffer to __xdp_return; the others pass no buffer.
    zc = mem_type == MemType.MEM_TYPE_XSK_BUFF_POOL
    returns = [xdp_return(sinfo.frags[i].page, mem_type, False, from_xdp_buff=zc,
                          caller="bpf_xdp_frags_shrink_tail", trace=trace)
               for i, _, release in plan if release]
    n_frags_free = len(returns)
    len_free = sum(taken for _, taken, _ in plan)
    for i, taken, release in plan:
        if not release:
            sinfo.frags[i].size -= taken
    sinfo.nr_frags -= n_frags_free
    sinfo.xdp_frags_size -= len_free
    if released is not None:
        released.extend(returns)
    emit(trace, "XDP-ADJ-009", "frags shrunk", freed=n_frags_free, len_free=len_free)
    if sinfo.nr_frags == 0:
        xdp.flags &= ~XDP_FLAGS_HAS_FRAGS
        if kernel.shrink_clears_pfmemalloc:
            xdp.flags &= ~XDP_FLAGS_FRAGS_PF_MEMALLOC
        xdp.data_end -= remaining
        emit(trace, "XDP-ADJ-010", "last frag gone: buffer is linear again",
             linear_shrink=remaining)
    return 0

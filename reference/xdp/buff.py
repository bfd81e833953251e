"""``struct xdp_buff``, its set-up helpers and its frags (XDP-BUFF-001 .. XDP-BUFF-008).

An :class:`XdpBuff` is a mutable object, like the kernel's: drivers set it up with
:func:`xdp_init_buff` and :func:`xdp_prepare_buff`, programs move its pointers with the
helpers in :mod:`reference.xdp.helpers`, and drivers read it back afterwards.  Pointers
are offsets into :attr:`XdpBuff.page` (see :mod:`reference.xdp.memory`).

The two set-up helpers each write a fixed set of fields and leave every other field as
it was (:data:`INIT_WRITES`, :data:`PREPARE_WRITES`).  A driver model that keeps one
``XdpBuff`` per RX queue and reuses it for every packet - as mlx5 does since "net/mlx5e:
Reuse per-RQ XDP buffer to avoid stack zeroing overhead" - therefore sees exactly the
stale values the kernel would: ``txq`` is never written on RX, and the shared info in
the page is only re-initialised when the first frag is added.
"""

from __future__ import annotations

import attrs

from reference.errors import InvalidConfig, StateViolation
from reference.trace import Trace, emit
from reference.xdp.arch import V6_17, X86_64, Arch, KernelSemantics
from reference.xdp.mem import MemReturn, xdp_return
from reference.xdp.memory import Page, SkbFrag, SkbSharedInfo
from reference.xdp.rxq import XdpRxqInfo, XdpTxqInfo

# enum xdp_buff_flags (include/net/xdp.h) (XDP-BUFF-006).
XDP_FLAGS_HAS_FRAGS = 1 << 0
XDP_FLAGS_FRAGS_PF_MEMALLOC = 1 << 1
#: Added after v6.17 (v6.18 net-next, "net: xdp: handle frags with unreadable memory").
XDP_FLAGS_FRAGS_UNREADABLE = 1 << 2

#: ``skb_shared_info.meta_len`` is a ``__u8``: ``xdp_metalen_invalid`` takes its type
#: maximum as the metadata limit (XDP-ADJ-005).
META_LEN_MAX = 0xFF

_U32 = 1 << 32

#: XDP-BUFF-003: the only fields ``xdp_init_buff`` writes.
INIT_WRITES: tuple[str, ...] = ("frame_sz", "rxq", "flags")
#: XDP-BUFF-004: the only fields ``xdp_prepare_buff`` writes (``page`` is the model's
#: half of the ``data_hard_start`` pointer).
PREPARE_WRITES: tuple[str, ...] = ("page", "data_hard_start", "data", "data_end", "data_meta")


@attrs.define(eq=False)
class XdpBuff:
    """``struct xdp_buff`` (include/net/xdp.h).

    A new object is all zeroes and NULLs, like the kzalloc'd per-queue buffer mlx5
    reuses (XDP-BUFF-005).  ``arch`` is the model's: the architecture whose struct sizes
    the helpers use.
    """

    page: Page | None = None
    data_hard_start: int = 0
    data: int = 0
    data_end: int = 0
    data_meta: int = 0
    rxq: XdpRxqInfo | None = None
    txq: XdpTxqInfo | None = None
    frame_sz: int = 0
    flags: int = 0
    arch: Arch = X86_64

    def linear(self) -> bytes:
        """The linear packet bytes ``[data, data_end)``."""
        return bytes(self._page().data[self.data : self.data_end])

    def metadata(self) -> bytes:
        """The metadata bytes ``[data_meta, data)`` (empty when unsupported)."""
        if xdp_data_meta_unsupported(self):
            return b""
        return bytes(self._page().data[self.data_meta : self.data])

    def _page(self) -> Page:
        if self.page is None:
            raise StateViolation("xdp_buff used before xdp_prepare_buff", obj="xdp_buff",
                                 rule="XDP-BUFF-005")
        return self.page


def xdp_init_buff(xdp: XdpBuff, frame_sz: int, rxq: XdpRxqInfo | None, *,
                  trace: Trace | None = None) -> None:
    """``xdp_init_buff``: set ``frame_sz`` and ``rxq``, clear ``flags`` (XDP-BUFF-003).

    Nothing else is touched: the data pointers, ``txq`` and the shared info in the
    page keep whatever they held.
    """
    if not 0 <= frame_sz < _U32:
        raise InvalidConfig("frame_sz is a u32", field="frame_sz", value=frame_sz,
                            rule="XDP-BUFF-003")
    xdp.frame_sz = frame_sz
    xdp.rxq = rxq
    xdp.flags = 0
    emit(trace, "XDP-BUFF-003", "buffer initialised", frame_sz=frame_sz)


def xdp_prepare_buff(
    xdp: XdpBuff, page: Page, hard_start: int, headroom: int, data_len: int, meta_valid: bool,
    *, trace: Trace | None = None,
) -> None:
    """``xdp_prepare_buff``: place the packet in ``page`` (XDP-BUFF-004).

    ``data = hard_start + headroom``, ``data_end = data + data_len`` and ``data_meta``
    is ``data`` when the driver supports metadata or ``data + 1`` (the "unsupported"
    marker) when not.  ``frame_sz``, ``rxq``, ``txq`` and ``flags`` are not touched.
    """
    if hard_start < 0 or headroom < 0 or data_len < 0:
        raise InvalidConfig("offsets and lengths are non-negative", field="hard_start/"
                            "headroom/data_len", value=(hard_start, headroom, data_len),
                            rule="XDP-BUFF-004")
    if hard_start + headroom + data_len > len(page):
        raise InvalidConfig("packet does not fit in the page", field="data_len",
                            value=data_len, rule="XDP-BUFF-004")
    data = hard_start + headroom
    xdp.page = page
    xdp.data_hard_start = hard_start
    xdp.data = data
    xdp.data_end = data + data_len
    xdp.data_meta = data
    if not meta_valid:
        xdp_set_data_meta_invalid(xdp)
    emit(trace, "XDP-BUFF-004", "packet placed", hard_start=hard_start, headroom=headroom,
         data_len=data_len, meta_valid=meta_valid)


def xdp_set_data_meta_invalid(xdp: XdpBuff) -> None:
    """``xdp_set_data_meta_invalid``: mark metadata unsupported (``data_meta = data + 1``)."""
    xdp.data_meta = xdp.data + 1


def xdp_data_meta_unsupported(xdp: XdpBuff) -> bool:
    """``xdp_data_meta_unsupported``: ``data_meta > data`` (XDP-ADJ-004)."""
    return xdp.data_meta > xdp.data


def xdp_metalen_invalid(metalen: int) -> bool:
    """``xdp_metalen_invalid``: not a multiple of 4, or above ``meta_len``'s max 255
    (XDP-ADJ-005).  ``metalen`` is an unsigned long in C."""
    return metalen % 4 != 0 or metalen > META_LEN_MAX


def xdp_data_hard_end(xdp: XdpBuff) -> int:
    """``xdp_data_hard_end``: ``data_hard_start + frame_sz -
    SKB_DATA_ALIGN(sizeof(struct skb_shared_info))`` (XDP-BUFF-002)."""
    return xdp.data_hard_start + xdp.frame_sz - xdp.arch.shinfo_reserved


def xdp_get_shared_info_from_buff(xdp: XdpBuff) -> SkbSharedInfo:
    """The ``skb_shared_info`` in the buffer's tailroom, at ``xdp_data_hard_end``
    (XDP-BUFF-002)."""
    page = xdp._page()
    offset = xdp_data_hard_end(xdp)
    if offset < 0 or offset + xdp.arch.sizeof_skb_shared_info > len(page):
        raise StateViolation(f"skb_shared_info at {offset} lies outside the {len(page)}-byte "
                             "buffer (frame_sz larger than the memory)", obj="xdp_buff",
                             rule="XDP-BUFF-002")
    return page.shared_info_at(offset)


def xdp_buff_has_frags(xdp: XdpBuff) -> bool:
    return bool(xdp.flags & XDP_FLAGS_HAS_FRAGS)


def xdp_buff_is_frag_pfmemalloc(xdp: XdpBuff) -> bool:
    return bool(xdp.flags & XDP_FLAGS_FRAGS_PF_MEMALLOC)


def xdp_get_buff_len(xdp: XdpBuff) -> int:
    """``xdp_get_buff_len``: linear length plus ``xdp_frags_size`` when the buffer has
    frags (XDP-BUFF-008).  Without ``XDP_FLAGS_HAS_FRAGS`` the shared info is not read."""
    length = xdp.data_end - xdp.data
    if xdp_buff_has_frags(xdp):
        length += xdp_get_shared_info_from_buff(xdp).xdp_frags_size
    return length


def xdp_buff_add_frag(
    xdp: XdpBuff,
    page: Page,
    offset: int,
    size: int,
    truesize: int,
    *,
    try_coalesce: bool = True,
    released: list[MemReturn] | None = None,
    kernel: KernelSemantics = V6_17,
    trace: Trace | None = None,
) -> bool:
    """``xdp_buff_add_frag`` (``__xdp_buff_add_frag`` plus the flag updates)
    (XDP-BUFF-007).

    The first frag (``XDP_FLAGS_HAS_FRAGS`` clear) sets the flag and resets
    ``nr_frags``, ``xdp_frags_size`` and ``xdp_frags_truesize`` in the shared info;
    until then the shared info is whatever the page held.  A frag that continues the
    previous one in the same page is merged into it and its page reference is returned
    at once (appended to ``released``).  Returns False, changing nothing, when all
    ``MAX_SKB_FRAGS`` slots are in use.
    """
    for name, value in (("offset", offset), ("size", size), ("truesize", truesize)):
        if not 0 <= value < _U32:
            raise InvalidConfig("is a u32", field=name, value=value, rule="XDP-BUFF-007")
    if offset + size > len(page):
        raise InvalidConfig("frag does not fit in its page", field="size", value=size,
                            rule="XDP-BUFF-007")
    if xdp.data_end > xdp_data_hard_end(xdp):
        # The kernel writes the frags into the shared info at xdp_data_hard_end whatever
        # lies there: a linear part reaching into it would lose bytes to nr_frags and the
        # frag table, which the model (shared info kept beside the page) does not describe.
        raise InvalidConfig("the linear part runs into the shared info the frags are "
                            "written to (frame_sz leaves no tailroom)", field="frame_sz",
                            value=xdp.frame_sz, rule="XDP-BUFF-007")
    sinfo = xdp_get_shared_info_from_buff(xdp)
    if not xdp_buff_has_frags(xdp):
        xdp.flags |= XDP_FLAGS_HAS_FRAGS
        sinfo.xdp_frags_size = 0
        sinfo.xdp_frags_truesize = 0
        _fill(sinfo, 0, SkbFrag(page, offset, size))
        sinfo.nr_frags = 1
        emit(trace, "XDP-BUFF-007", "first frag initialises the shared info", size=size)
    else:
        nr_frags = sinfo.nr_frags
        prev = sinfo.frags[nr_frags - 1] if 0 < nr_frags <= len(sinfo.frags) else None
        if try_coalesce and prev is not None and prev.page is page and \
                offset == prev.offset + prev.size:
            if xdp.rxq is None:
                raise StateViolation("coalescing a frag needs xdp->rxq", obj="xdp_buff",
                                     rule="XDP-BUFF-007")
            ret = xdp_return(page, xdp.rxq.mem.type, True, from_xdp_buff=False,
                             caller="xdp_return_frag", trace=trace)
            prev.size += size
            if released is not None:
                released.append(ret)
            emit(trace, "XDP-BUFF-007", "frag coalesced with the previous one", size=size)
        elif nr_frags == xdp.arch.max_skb_frags:
            emit(trace, "XDP-BUFF-007", "no free frag slot", nr_frags=nr_frags)
            return False
        else:
            if nr_frags > xdp.arch.max_skb_frags:
                raise StateViolation(f"nr_frags {nr_frags} above MAX_SKB_FRAGS",
                                     obj="skb_shared_info", rule="XDP-BUFF-007")
            _fill(sinfo, nr_frags, SkbFrag(page, offset, size))
            sinfo.nr_frags = nr_frags + 1
    sinfo.xdp_frags_size += size
    sinfo.xdp_frags_truesize += truesize
    if page.pfmemalloc:
        xdp.flags |= XDP_FLAGS_FRAGS_PF_MEMALLOC
        emit(trace, "XDP-BUFF-006", "frag from a pfmemalloc page", flags=xdp.flags)
    if kernel.frags_unreadable_flag and page.net_iov:
        xdp.flags |= XDP_FLAGS_FRAGS_UNREADABLE
    return True


def _fill(sinfo: SkbSharedInfo, index: int, frag: SkbFrag) -> None:
    """Write frag slot ``index`` (XDP-BUFF-007); slots past it keep their stale contents.

    Frags are added in slot order, so ``index`` is at most one past the slots ever
    written: the slice assignment rewrites a stale slot or appends the next one.
    """
    if index > len(sinfo.frags):
        raise StateViolation(f"frag slot {index} written before slot {len(sinfo.frags)}",
                             obj="skb_shared_info", rule="XDP-BUFF-007")
    sinfo.frags[index : index + 1] = [frag]


def xdp_return_buff(
    xdp: XdpBuff, *, return_frame_no_direct: bool = False, trace: Trace | None = None
) -> list[MemReturn]:
    """``xdp_return_buff``: every frag, then the head page, with ``napi_direct`` true and
    the buffer passed along (XDP-MEM-003)."""
    if xdp.rxq is None:
        raise StateViolation("xdp_return_buff needs xdp->rxq", obj="xdp_buff",
                             rule="XDP-MEM-003")
    mem_type = xdp.rxq.mem.type
    pages = []
    if xdp_buff_has_frags(xdp):
        pages = [f.page for f in xdp_get_shared_info_from_buff(xdp).valid_frags()]
    pages.append(xdp._page())
    emit(trace, "XDP-MEM-003", "buffer returned: frags, then the head page", pages=len(pages))
    return [xdp_return(p, mem_type, True, from_xdp_buff=True, caller="xdp_return_buff",
                       return_frame_no_direct=return_frame_no_direct, trace=trace)
            for p in pages]

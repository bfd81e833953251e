"""A minimal ``struct sk_buff``: what cpumap builds from an ``xdp_frame`` and how its
pages go back when the stack frees it (SPEC part ``cpumap.md``, rules SKB-*).

Read in Kingxukai/linux v6.17-rc3: ``net/core/xdp.c: __xdp_build_skb_from_frame()``
(stored version 9b44fff655e2), ``include/linux/skbuff_ref.h: skb_page_unref()``,
``net/core/skbuff.c: napi_pp_put_page(), skb_pp_recycle(), skb_free_head()``.

Memory: the skb points into the model's XDP pages (:class:`reference.xdp.memory.Page`,
real bytes).  Each XDP page carries the page_pool model's page in ``handle``: that page
holds ``pp``/``pp_magic`` and the mm ``_refcount``, which is what the free path reads.
Only the fields this area needs are modelled.
"""

from __future__ import annotations

import enum
import struct

import attrs

from reference import page_pool as pp
from reference.errors import StateViolation
from reference.trace import Trace, emit
from reference.xdp.frame import (
    XdpFrame,
    xdp_frame_has_frags,
    xdp_frame_is_frag_pfmemalloc,
    xdp_get_shared_info_from_frame,
    xdp_scrub_frame,
)
from reference.xdp.mem import MemReturn, MemType, ReturnPath
from reference.xdp.memory import Page, SkbFrag

#: ``ip_summed`` values (include/linux/skbuff.h).
CHECKSUM_NONE = 0
#: ``ETH_HLEN`` and the ethertype floor of ``eth_type_trans`` (include/uapi/linux/if_ether.h).
ETH_HLEN = 14
ETH_P_802_3_MIN = 0x0600
ETH_P_802_3 = 0x0001
ETH_P_802_2 = 0x0004
_BE16 = struct.Struct(">H")


class FreePath(enum.Enum):
    """Where one page of a freed skb went (SKB-FREE-001 .. SKB-FREE-003)."""

    PAGE_POOL = "page_pool"  # napi_pp_put_page -> page_pool_put_full_netmem
    PUT_PAGE = "put_page"  # skb_free_frag / put_netmem: the mm reference drops


@attrs.frozen
class PageFree:
    """One page released by a free path: the page_pool outcome when it went to a pool."""

    page: pp.Page
    path: FreePath
    outcome: pp.PutOutcome | None
    cpu: int


@attrs.define(eq=False)
class SkBuff:
    """The fields of ``struct sk_buff`` and its shared info this area reads or writes.

    ``head`` is the buffer page (``head_frag``: the head is a page fragment, as
    ``build_skb_around`` makes it); ``data`` is an offset into it; ``frags`` are
    the shared-info frags; ``pp_recycle`` is the hint ``skb_mark_for_recycle`` sets.
    Fields ``__xdp_build_skb_from_frame`` leaves alone keep their zeroed values:
    ``ip_summed`` CHECKSUM_NONE, ``hash`` 0 with ``l4_hash`` false, ``queue_mapping`` 0.
    """

    head: Page
    head_start: int
    truesize: int
    data: int = 0
    len: int = 0
    data_len: int = 0
    mac_header: int = 0
    meta_len: int = 0
    protocol: int = 0
    dev: int = 0
    ip_summed: int = CHECKSUM_NONE
    hash: int = 0
    l4_hash: bool = False
    queue_mapping: int = 0
    pfmemalloc: bool = False
    pp_recycle: bool = False
    head_frag: bool = True
    frags: list[SkbFrag] = attrs.field(factory=list)
    freed: bool = False

    def pages(self) -> list[Page]:
        """Every page the skb holds: frags, then the head."""
        return [f.page for f in self.frags] + [self.head]


def pp_page_of(page: Page) -> pp.Page:
    """The page_pool-model page behind an XDP page (model convention: ``handle``)."""
    handle = page.handle
    if not isinstance(handle, pp.Page):
        raise StateViolation("XDP page without a page_pool-model page in handle",
                             obj="page", rule="SKB-FREE-001")
    return handle


def page_is_pp(page: pp.Page) -> bool:
    """``netmem_is_pp``: ``pp_magic`` carries ``PP_SIGNATURE`` (SKB-FREE-001)."""
    return page.pp is not None and page.pp_magic == page.pp.arch.pp_signature


def eth_type_trans(skb: SkBuff, dev: int) -> int:
    """``eth_type_trans`` as far as this area needs it (SKB-BUILD-002): set ``dev``,
    record the MAC header, pull ``ETH_HLEN`` and return the protocol (an ethertype of
    at least 0x0600, else 802.3 raw when the payload starts 0xFFFF, else 802.2)."""
    skb.dev = dev
    skb.mac_header = skb.data
    buf = skb.head.data
    ethertype = _BE16.unpack_from(buf, skb.data + 12)[0]
    skb.data += ETH_HLEN
    skb.len -= ETH_HLEN
    if ethertype >= ETH_P_802_3_MIN:
        return int(ethertype)
    # skb_header_pointer(skb, 0, 2): the first two bytes after the MAC header, from the
    # head and then the frags; NULL when the packet has fewer than two left (802.2).
    sap = _skb_first_bytes(skb, 2)
    if sap is not None and sap == b"\xff\xff":
        return ETH_P_802_3
    return ETH_P_802_2


def _skb_first_bytes(skb: SkBuff, n: int) -> bytes | None:
    """The first ``n`` bytes of the packet at ``skb.data``, read across the head and the
    frags as ``skb_header_pointer`` does, or None when the skb holds fewer."""
    if skb.len < n:
        return None
    headlen = skb.len - skb.data_len
    out = bytes(skb.head.data[skb.data : skb.data + min(n, headlen)])
    for frag in skb.frags:
        if len(out) >= n:
            break
        out += frag.view()[: n - len(out)]
    return out if len(out) == n else None


def _page_pool_release_page(page: pp.Page) -> None:
    """v6.3 ``page_pool_release_page``: the page leaves its pool (unmap, clear the pool
    fields, ``pages_state_release_cnt`` + 1) while its mm reference stays with the skb
    (SKB-BUILD-004).  The model takes the skb's reference before the pool drops its own,
    which leaves the page with one reference, held by the skb."""
    pool = page.pp
    if pool is None or page.loc is not pp.Loc.IN_FLIGHT:
        raise StateViolation("xdp_release_frame of a page not in flight from a pool",
                             obj=repr(page), rule="SKB-BUILD-004")
    pp.get_page(page)
    pool._return_page(page)  # the pool's own release step (PP-RECYCLE-007)


def xdp_build_skb_from_frame(
    frame: XdpFrame, dev: int, *, pre_v6_4: bool = False, trace: Trace | None = None
) -> SkBuff:
    """``__xdp_build_skb_from_frame`` (SKB-BUILD-001 .. SKB-BUILD-004).

    The skb is built around the frame's own buffer: the hard start is ``data -
    headroom - sizeof(struct xdp_frame)`` and the buffer size is ``frame_sz`` (kept as
    ``truesize``; the kernel also counts ``struct sk_buff`` itself there); the skb is
    pfmemalloc when its head page is or a frag page was (``XDP_FLAGS_FRAGS_PF_MEMALLOC``).  With
    ``pre_v6_4`` the kernel before commit 9c94bbf9a87b is modelled: no recycle mark,
    and a page_pool page leaves its pool (``xdp_release_frame``).
    """
    h = frame.header()
    sizeof_frame = frame.arch.sizeof_xdp_frame
    headroom = sizeof_frame + h.headroom
    hard_start = h.data - headroom
    skb = SkBuff(head=frame.page, head_start=hard_start, truesize=h.frame_sz)
    skb.pfmemalloc = frame.page.pfmemalloc  # build_skb_around: the head page's pfmemalloc
    skb.data = hard_start + headroom  # skb_reserve(headroom)
    skb.len = h.len  # __skb_put(len)
    skb.meta_len = h.metasize
    if xdp_frame_has_frags(frame):  # xdp_update_skb_shared_info
        sinfo = xdp_get_shared_info_from_frame(frame)
        skb.frags = list(sinfo.valid_frags())
        skb.data_len = sinfo.xdp_frags_size
        skb.len += sinfo.xdp_frags_size
        skb.truesize += sinfo.nr_frags * h.frame_sz
        skb.pfmemalloc = skb.pfmemalloc or xdp_frame_is_frag_pfmemalloc(frame)
    skb.protocol = eth_type_trans(skb, dev)
    emit(trace, "SKB-BUILD-001", "skb built around the frame's buffer", len=skb.len,
         truesize=skb.truesize, protocol=skb.protocol)
    emit(trace, "SKB-BUILD-002", "no checksum, hash or queue from the frame",
         ip_summed=skb.ip_summed, hash=skb.hash, queue_mapping=skb.queue_mapping)
    if h.mem_type == MemType.MEM_TYPE_PAGE_POOL:
        if pre_v6_4:
            for page in skb.pages():
                _page_pool_release_page(pp_page_of(page))
            emit(trace, "SKB-BUILD-004", "v6.3: xdp_release_frame, pages leave the pool")
        else:
            skb.pp_recycle = True  # skb_mark_for_recycle
            emit(trace, "SKB-BUILD-003", "page_pool frame: skb marked for recycle")
    else:
        emit(trace, "SKB-BUILD-003", "not a page_pool frame: no recycle mark",
             mem_type=h.mem_type)
    xdp_scrub_frame(frame)
    return skb


def napi_pp_put_page(page: pp.Page, ctx: pp.Context,
                     trace: Trace | None = None) -> pp.PutOutcome | None:
    """``napi_pp_put_page`` (SKB-FREE-001): a page whose ``pp_magic`` says page_pool goes
    to ``page_pool_put_full_netmem(pool, page, false)``, so direct recycling is decided
    by ``page_pool_napi_local`` (PP-RECYCLE-002); any other page returns None."""
    if not page_is_pp(page):
        return None
    pool = page.pp
    assert pool is not None
    outcome = pool.put_full_page(page, False, ctx)
    emit(trace, "SKB-FREE-001", "page_pool page returned to its pool", pfn=page.pfn,
         outcome=outcome.value, cpu=ctx.cpu)
    return outcome


def skb_page_unref(page: pp.Page, recycle: bool, ctx: pp.Context,
                   trace: Trace | None = None) -> PageFree:
    """``skb_page_unref`` / ``skb_free_head`` for a head fragment (SKB-FREE-001,
    SKB-FREE-002): with ``recycle`` try the pool first; otherwise, or for a page
    without the signature, drop the mm reference (``put_page``)."""
    if recycle:
        outcome = napi_pp_put_page(page, ctx, trace)
        if outcome is not None:
            return PageFree(page, FreePath.PAGE_POOL, outcome, ctx.cpu)
    pp.put_page(page)
    emit(trace, "SKB-FREE-002", "page freed with put_page", pfn=page.pfn, recycle=recycle)
    return PageFree(page, FreePath.PUT_PAGE, None, ctx.cpu)


def skb_release_data(skb: SkBuff, ctx: pp.Context, trace: Trace | None = None) -> list[PageFree]:
    """``skb_release_data``: each frag with ``skb_page_unref(…, pp_recycle)``, then the
    head with ``skb_free_head`` (SKB-FREE-003).  Freeing twice is refused."""
    if skb.freed:
        raise StateViolation("skb freed twice", obj="sk_buff", rule="SKB-FREE-003")
    out = [skb_page_unref(pp_page_of(f.page), skb.pp_recycle, ctx, trace) for f in skb.frags]
    out.append(skb_page_unref(pp_page_of(skb.head), skb.pp_recycle, ctx, trace))
    skb.freed = True
    return out


def kfree_skb(skb: SkBuff, ctx: pp.Context, trace: Trace | None = None) -> list[PageFree]:
    """``kfree_skb``: a drop; the pages take the same path as a consume (SKB-FREE-003)."""
    return skb_release_data(skb, ctx, trace)


def napi_consume_skb(skb: SkBuff, budget: int, ctx: pp.Context,
                     trace: Trace | None = None) -> list[PageFree]:
    """``napi_consume_skb``: budget 0 goes through ``dev_consume_skb_any``; either way
    the data is released by ``skb_release_data`` with the caller's context
    (SKB-FREE-003)."""
    del budget  # only changes where the skb head struct goes, not the pages
    return skb_release_data(skb, ctx, trace)


def apply_mem_return(rec: MemReturn, ctx: pp.Context, trace: Trace | None = None) -> PageFree:
    """Carry out a ``__xdp_return`` record on the memory models (SKB-FREE-004): a
    page_pool page goes to ``page_pool_put_full_page`` with the record's ``napi_direct``
    (which ``page_pool_napi_local`` may still upgrade), an order-0 page to ``put_page``."""
    page = pp_page_of(rec.page)
    if rec.path is ReturnPath.PAGE_POOL_PUT_FULL:
        pool = page.pp
        if pool is None:
            raise StateViolation("MEM_TYPE_PAGE_POOL return of a page with no pool",
                                 obj=repr(page), rule="SKB-FREE-004")
        outcome = pool.put_full_page(page, rec.napi_direct, ctx)
        emit(trace, "SKB-FREE-004", "frame page returned to its pool", pfn=page.pfn,
             napi_direct=rec.napi_direct, outcome=outcome.value)
        return PageFree(page, FreePath.PAGE_POOL, outcome, ctx.cpu)
    if rec.path is ReturnPath.PUT_PAGE:
        pp.put_page(page)
        emit(trace, "SKB-FREE-004", "order-0 frame page freed", pfn=page.pfn)
        return PageFree(page, FreePath.PUT_PAGE, None, ctx.cpu)
    raise StateViolation(f"return path {rec.path.value} is not modelled here",
                         obj="xdp_frame", rule="SKB-FREE-004")

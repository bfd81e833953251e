"""reference.skb: building an skb from an xdp_frame and the free paths, hand-worked."""

from __future__ import annotations

import pytest

from reference import page_pool as pp
from reference.errors import StateViolation
from reference.skb import (
    CHECKSUM_NONE,
    FreePath,
    SkBuff,
    apply_mem_return,
    kfree_skb,
    napi_consume_skb,
    page_is_pp,
    xdp_build_skb_from_frame,
)
from reference.xdp.buff import XdpBuff, xdp_init_buff, xdp_prepare_buff
from reference.xdp.frame import XdpFrame, xdp_convert_buff_to_frame, xdp_return_frame
from reference.xdp.mem import MemType, XdpMemInfo
from reference.xdp.memory import Page as XPage
from reference.xdp.memory import SkbFrag
from reference.xdp.rxq import NetDev, XdpRxqInfo

A, B = 0, 1
IPV6 = b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02\x86\xdd" + bytes(50)


def make_pool(*, cpuid: int = -1, napi_cpu: int | None = A) -> pp.PagePool:
    params = pp.PagePoolParams(flags=pp.PP_FLAG_DMA_MAP, pool_size=64,
                               dma_dir=pp.DMA_FROM_DEVICE,
                               napi=pp.NapiStruct(napi_cpu) if napi_cpu is not None else None)
    res = pp.page_pool_create_percpu(params, cpuid)
    assert res.pool is not None
    return res.pool


def make_frame(page: pp.Page, mem_type: int, payload: bytes = IPV6,
               dev_rx: int = 7) -> XdpFrame:
    xpage = XPage.zeroed(4096, handle=page)
    xpage.data[256 : 256 + len(payload)] = payload
    xdp = XdpBuff()
    xdp_init_buff(xdp, 4096, XdpRxqInfo(dev=NetDev(dev_rx), mem=XdpMemInfo(type=mem_type)))
    xdp_prepare_buff(xdp, xpage, 0, 256, len(payload), True)
    frame = xdp_convert_buff_to_frame(xdp)
    assert frame is not None
    frame.write(dev_rx=dev_rx)
    return frame


def pool_frame(pool: pp.PagePool) -> tuple[pp.Page, XdpFrame]:
    page = pool.alloc_pages(pp.Context.softirq(A))
    assert page is not None
    return page, make_frame(page, MemType.MEM_TYPE_PAGE_POOL)


@pytest.mark.rule("SKB-BUILD-001", "SKB-BUILD-002")
def test_skb_is_built_around_the_buffer_with_nothing_from_hardware() -> None:
    pool = make_pool()
    _, frame = pool_frame(pool)
    # The frame header sits at 0: headroom 256 - 40 = 216, data at 256, len 64.
    assert (frame.headroom, frame.data, frame.len) == (216, 256, 64)
    skb = xdp_build_skb_from_frame(frame, 7)
    assert skb.head_start == 0 and skb.truesize == 4096
    assert skb.mac_header == 256
    assert skb.data == 256 + 14 and skb.len == 64 - 14  # eth_type_trans pulled ETH_HLEN
    assert skb.protocol == 0x86DD and skb.dev == 7
    assert skb.ip_summed == CHECKSUM_NONE and skb.hash == 0 and not skb.l4_hash
    assert skb.queue_mapping == 0


@pytest.mark.rule("SKB-BUILD-002")
@pytest.mark.parametrize(("tail", "proto"), [(b"\x00\x2e\xff\xff", 0x0001),
                                             (b"\x00\x2e\xaa\xaa", 0x0004),
                                             (b"\x08\x00\x45\x00", 0x0800)])
def test_eth_type_trans_protocols(tail: bytes, proto: int) -> None:
    pool = make_pool()
    page = pool.alloc_pages(pp.Context.softirq(A))
    assert page is not None
    frame = make_frame(page, MemType.MEM_TYPE_PAGE_POOL, bytes(12) + tail + bytes(46))
    assert xdp_build_skb_from_frame(frame, 1).protocol == proto


@pytest.mark.rule("SKB-BUILD-002")
def test_eth_type_trans_reads_the_sap_only_inside_the_packet() -> None:
    # eth.c eth_type_trans: skb_header_pointer(skb, 0, 2) is NULL for a packet with fewer
    # than two bytes after the MAC header, so the answer is ETH_P_802_2 whatever bytes
    # the buffer holds past the end of the packet.
    pool = make_pool()
    page = pool.alloc_pages(pp.Context.softirq(A))
    assert page is not None
    frame = make_frame(page, MemType.MEM_TYPE_PAGE_POOL, bytes(12) + b"\x00\x2e")
    frame.page.data[256 + 14 : 256 + 16] = b"\xff\xff"  # tailroom, not packet
    assert xdp_build_skb_from_frame(frame, 1).protocol == 0x0004


@pytest.mark.rule("SKB-BUILD-003")
def test_only_page_pool_frames_are_marked_and_the_frame_is_scrubbed() -> None:
    pool = make_pool()
    _, frame = pool_frame(pool)
    skb = xdp_build_skb_from_frame(frame, 7)
    assert skb.pp_recycle
    assert frame.data == 0 and frame.dev_rx == 0  # xdp_scrub_frame
    other = pp.PageAllocator().alloc_pages_node(0, 0, 0)
    assert other is not None
    skb2 = xdp_build_skb_from_frame(make_frame(other, MemType.MEM_TYPE_PAGE_ORDER0), 7)
    assert not skb2.pp_recycle


@pytest.mark.rule("SKB-BUILD-004", "SKB-FREE-002")
def test_pre_v6_4_releases_the_page_from_its_pool() -> None:
    pool = make_pool()
    page, frame = pool_frame(pool)
    hold, release = pool.pages_state_hold_cnt, pool.pages_state_release_cnt
    unmaps = pool.dev.unmaps
    skb = xdp_build_skb_from_frame(frame, 7, pre_v6_4=True)
    assert not skb.pp_recycle
    assert pool.pages_state_release_cnt == release + 1 and pool.pages_state_hold_cnt == hold
    assert pool.dev.unmaps == unmaps + 1
    assert page.pp is None and page.pp_magic == 0 and page.refcount == 1
    assert pool.where(page) is pp.Loc.RELEASED
    freed_before = page.allocator.freed if page.allocator else 0
    out = napi_consume_skb(skb, 64, pp.Context.softirq(B))
    assert [r.path for r in out] == [FreePath.PUT_PAGE]
    assert page.refcount == 0 and page.allocator is not None
    assert page.allocator.freed == freed_before + 1
    s = pool.stats().recycle_stats
    assert (s.cached, s.ring, s.ring_full, s.released_refcnt) == (0, 0, 0, 0)
    pool.check_conservation(full=True)


@pytest.mark.rule("SKB-FREE-001", "CPUMAP-KT-006")
@pytest.mark.parametrize(("cpuid", "ctx", "expect"), [
    (-1, pp.Context.softirq(B), pp.PutOutcome.RING),  # remote CPU: ring
    (-1, pp.Context.softirq(A), pp.PutOutcome.CACHED),  # the NAPI owner's CPU: cache
    (-1, pp.Context(cpu=A), pp.PutOutcome.RING),  # owner CPU but process context
    (B, pp.Context.softirq(B), pp.PutOutcome.CACHED),  # a per-CPU pool of CPU B
])
def test_marked_skb_pages_go_back_by_locality(cpuid: int, ctx: pp.Context,
                                              expect: pp.PutOutcome) -> None:
    pool = make_pool(cpuid=cpuid)
    page, frame = pool_frame(pool)
    assert page_is_pp(page)
    out = kfree_skb(xdp_build_skb_from_frame(frame, 7), ctx)
    assert [(r.path, r.outcome) for r in out] == [(FreePath.PAGE_POOL, expect)]
    pool.check_conservation()


@pytest.mark.rule("SKB-FREE-002")
def test_a_mark_on_non_pool_pages_is_harmless() -> None:
    alloc = pp.PageAllocator()
    page = alloc.alloc_pages_node(0, 0, 0)
    assert page is not None
    skb = xdp_build_skb_from_frame(make_frame(page, MemType.MEM_TYPE_PAGE_ORDER0), 7)
    skb.pp_recycle = True  # as a driver that marks everything would
    out = kfree_skb(skb, pp.Context.softirq(A))
    assert [r.path for r in out] == [FreePath.PUT_PAGE]
    assert alloc.freed == 1


@pytest.mark.rule("SKB-FREE-003")
def test_frags_are_released_before_the_head_and_only_once() -> None:
    pool = make_pool()
    head, frame = pool_frame(pool)
    frag_page = pool.alloc_pages(pp.Context.softirq(A))
    assert frag_page is not None
    skb = xdp_build_skb_from_frame(frame, 7)
    skb.frags = [SkbFrag(XPage.zeroed(4096, handle=frag_page), 0, 100)]
    out = napi_consume_skb(skb, 0, pp.Context.softirq(B))
    assert [r.page for r in out] == [frag_page, head]
    with pytest.raises(StateViolation):
        kfree_skb(skb, pp.Context.softirq(B))


@pytest.mark.rule("SKB-FREE-004")
def test_mem_returns_reach_the_pool_and_the_page_allocator() -> None:
    pool = make_pool()
    page, frame = pool_frame(pool)
    (rec,) = xdp_return_frame(frame)
    assert not rec.napi_direct
    # napi_direct false, but the pool's NAPI CPU in softirq upgrades it (PP-RECYCLE-002).
    assert apply_mem_return(rec, pp.Context.softirq(A)).outcome is pp.PutOutcome.CACHED
    alloc = pp.PageAllocator()
    plain = alloc.alloc_pages_node(0, 0, 0)
    assert plain is not None
    (rec2,) = xdp_return_frame(make_frame(plain, MemType.MEM_TYPE_PAGE_ORDER0))
    assert apply_mem_return(rec2, pp.Context.softirq(B)).path is FreePath.PUT_PAGE
    assert alloc.freed == 1
    del page


def test_skbuff_defaults_are_zeroed() -> None:
    skb = SkBuff(head=XPage.zeroed(64), head_start=0, truesize=64)
    assert (skb.ip_summed, skb.hash, skb.queue_mapping, skb.pp_recycle) == (0, 0, 0, False)


def frag_frame(pool: pp.PagePool) -> tuple[pp.Page, pp.Page, XdpFrame]:
    from reference.xdp.buff import xdp_buff_add_frag

    head = pool.alloc_pages(pp.Context.softirq(A))
    frag = pool.alloc_pages(pp.Context.softirq(A))
    assert head is not None and frag is not None
    xpage = XPage.zeroed(4096, handle=head)
    xpage.data[256 : 256 + len(IPV6)] = IPV6
    xdp = XdpBuff()
    xdp_init_buff(xdp, 4096, XdpRxqInfo(dev=NetDev(7),
                                        mem=XdpMemInfo(type=MemType.MEM_TYPE_PAGE_POOL)))
    xdp_prepare_buff(xdp, xpage, 0, 256, len(IPV6), True)
    assert xdp_buff_add_frag(xdp, XPage.zeroed(4096, handle=frag), 0, 1000, 4096)
    frame = xdp_convert_buff_to_frame(xdp)
    assert frame is not None
    return head, frag, frame


@pytest.mark.rule("SKB-BUILD-001", "SKB-FREE-001", "SKB-FREE-003")
def test_frags_become_skb_frags() -> None:
    pool = make_pool()
    head, frag, frame = frag_frame(pool)
    skb = xdp_build_skb_from_frame(frame, 7)
    # len = 64 linear + 1000 frag bytes - 14 pulled; truesize = frame_sz + 1 * frame_sz.
    assert (skb.len, skb.data_len, skb.truesize) == (64 + 1000 - 14, 1000, 2 * 4096)
    assert [pp_page for pp_page in (f.page.handle for f in skb.frags)] == [frag]
    out = napi_consume_skb(skb, 64, pp.Context.softirq(B))
    assert [(r.page, r.outcome) for r in out] == [(frag, pp.PutOutcome.RING),
                                                  (head, pp.PutOutcome.RING)]
    pool.check_conservation()


@pytest.mark.rule("SKB-BUILD-004")
def test_pre_v6_4_releases_frag_pages_too() -> None:
    pool = make_pool()
    head, frag, frame = frag_frame(pool)
    skb = xdp_build_skb_from_frame(frame, 7, pre_v6_4=True)
    assert pool.pages_state_release_cnt == 2 and head.pp is None and frag.pp is None
    assert [r.path for r in kfree_skb(skb, pp.Context.softirq(B))] == [FreePath.PUT_PAGE] * 2
    pool.check_conservation(full=True)

"""Hand-worked tests of the page_pool model against the kernel source (v6.17-rc3).

Expected values are worked out by hand from ``net/core/page_pool.c``,
``include/net/page_pool/{types,helpers}.h`` and ``include/linux/ptr_ring.h``; each test
names the kernel function it follows.
"""

from __future__ import annotations

import errno

import pytest

from reference.errors import InvalidConfig, StateViolation
from reference.kernel import DEFAULT_KERNEL, KernelVersion, parse_kernel
from reference.page_pool import (
    ARM64_4K,
    ARM64_ARCH_DMA_MINALIGN,
    BIAS_MAX,
    DMA_BIDIRECTIONAL,
    DMA_FROM_DEVICE,
    DMA_NONE,
    DMA_TO_DEVICE,
    NUMA_NO_NODE,
    PP_ALLOC_CACHE_REFILL,
    PP_ALLOC_CACHE_SIZE,
    PP_FLAG_ALL,
    PP_FLAG_ALLOW_UNREADABLE_NETMEM,
    PP_FLAG_DMA_MAP,
    PP_FLAG_DMA_SYNC_DEV,
    PP_FLAG_SYSTEM_POOL,
    Context,
    DmaDevice,
    DmaSync,
    Loc,
    NapiStruct,
    Page,
    PageAllocator,
    PagePool,
    PagePoolParams,
    PagePoolRecycleStats,
    PagePoolStats,
    PoolState,
    PtrRing,
    PutOutcome,
    arm64_cache_line_size,
    ethtool_stats,
    get_page,
    page_pool_alloc,
    page_pool_alloc_frag,
    page_pool_create,
    page_pool_create_percpu,
    page_pool_destroy,
    page_pool_dev_alloc_frag,
    page_pool_dev_alloc_pages,
    page_pool_dma_sync_for_cpu,
    page_pool_enable_direct_recycling,
    page_pool_ethtool_stats_get,
    page_pool_ethtool_stats_get_count,
    page_pool_ethtool_stats_get_strings,
    page_pool_fragment_page,
    page_pool_inflight,
    page_pool_put_full_page,
    page_pool_put_netmem_bulk,
    page_pool_put_page,
    page_pool_put_unrefed_page,
    page_pool_recycle_direct,
    page_pool_ref_page,
    page_pool_unref_page,
    ptr_ring_batch,
    put_page,
)
from reference.page_pool.constants import Arch
from reference.trace import Trace

SOFTIRQ0 = Context.softirq(cpu=0)
PROC = Context()
FIRST_PFN = 0x1000  # PageAllocator default
DMA_FLAGS = PP_FLAG_DMA_MAP | PP_FLAG_DMA_SYNC_DEV


def make_pool(
    *,
    flags: int = DMA_FLAGS,
    pool_size: int = 256,
    max_len: int = 3520,
    offset: int = 256,
    nid: int = 0,
    order: int = 0,
    napi: NapiStruct | None = None,
    dev: DmaDevice | None = None,
    allocator: PageAllocator | None = None,
    cpuid: int = -1,
    kernel: KernelVersion | None = None,
) -> PagePool:
    params = PagePoolParams(
        flags=flags, pool_size=pool_size, max_len=max_len, offset=offset, nid=nid,
        order=order, napi=napi, dma_dir=DMA_FROM_DEVICE, dev=dev or DmaDevice(),
    )
    res = page_pool_create_percpu(params, cpuid, allocator=allocator or PageAllocator(),
                                  kernel=kernel or DEFAULT_KERNEL)
    assert res.pool is not None, res.err
    return res.pool


def take(pool: PagePool, n: int, ctx: Context = SOFTIRQ0) -> list[Page]:
    """Allocate ``n`` pages, each of which must succeed."""
    out = []
    for _ in range(n):
        page = pool.alloc_pages(ctx)
        assert page is not None
        out.append(page)
    return out


def state(pool: PagePool) -> PoolState:
    """The pool's state, read through a call (so type checkers do not narrow it)."""
    return pool.state


def snapshot(pool: PagePool) -> tuple[object, ...]:
    """Everything a refused call must leave untouched."""
    s = pool.stats()
    return (
        [p.pfn for p in pool.alloc_cache], [p.pfn for p in pool.ring],
        pool.pages_state_hold_cnt, pool.pages_state_release_cnt,
        tuple(page_pool_ethtool_stats_get(s)),
        tuple((p.pfn, p.loc, p.pp_ref_count, p.refs_out, p.refcount, p.dma_addr)
              for p in pool.pages()),
        pool.state, pool.user_cnt,
    )


# ----------------------------------------------------------------------------- constants


@pytest.mark.rule("PP-INIT-001", "PP-STATS-001", "PP-FRAG-004", "PP-PAGE-001")
def test_constants_transcribed_from_headers() -> None:
    # include/net/page_pool/types.h
    assert (PP_FLAG_DMA_MAP, PP_FLAG_DMA_SYNC_DEV, PP_FLAG_SYSTEM_POOL,
            PP_FLAG_ALLOW_UNREADABLE_NETMEM) == (0x1, 0x2, 0x4, 0x8)
    assert PP_FLAG_ALL == 0xF
    assert (PP_ALLOC_CACHE_SIZE, PP_ALLOC_CACHE_REFILL) == (128, 64)
    # net/core/page_pool.c: BIAS_MAX = LONG_MAX >> 1 on 64-bit
    assert BIAS_MAX == 0x3FFF_FFFF_FFFF_FFFF
    # include/linux/dma-direction.h
    assert (DMA_BIDIRECTIONAL, DMA_TO_DEVICE, DMA_FROM_DEVICE, DMA_NONE) == (0, 1, 2, 3)
    # include/linux/poison.h: PP_SIGNATURE = 0x40 + POISON_POINTER_DELTA (x86-64)
    assert Arch().pp_signature == 0xDEAD_0000_0000_0040


# ----------------------------------------------------------------------------- creation


#: A kernel before the 16K clamp (PP-INIT-002) and the order check (PP-INIT-007): these
#: tests state the earlier side; tests/test_kernel.py checks both sides of each gate.
OLD = parse_kernel("6.12.62")


def _create(kernel: KernelVersion = OLD, **kw: object) -> int:
    return page_pool_create(PagePoolParams(**kw), kernel=kernel).err  # type: ignore[arg-type]


@pytest.mark.rule("PP-INIT-001")
def test_unknown_flag_is_einval() -> None:
    assert _create(flags=1 << 4) == -errno.EINVAL
    unreadable = PP_FLAG_SYSTEM_POOL | PP_FLAG_ALLOW_UNREADABLE_NETMEM
    assert _create(flags=unreadable, netdev=object()) == 0
    # Without the netdev whose RX queue it reads, page_pool_init would dereference NULL:
    # refused, but only once the earlier checks have passed (an unknown flag is -EINVAL).
    with pytest.raises(InvalidConfig, match="PP_FLAG_ALLOW_UNREADABLE_NETMEM"):
        _create(flags=unreadable)
    assert _create(flags=unreadable | 1 << 4) == -errno.EINVAL


@pytest.mark.rule("PP-INIT-002")
def test_ring_size_default_and_limit() -> None:
    res = page_pool_create(PagePoolParams())
    assert res.pool is not None and res.pool.ring.size == 1024
    assert _create(pool_size=32768) == 0
    assert _create(pool_size=32769) == -errno.E2BIG
    # From 6.12.63 / 6.18 the size is clamped instead (version gate PP-INIT-002).
    clamped = page_pool_create(PagePoolParams(pool_size=40000), kernel=parse_kernel("7.3"))
    assert clamped.pool is not None and clamped.pool.ring.size == 16384


@pytest.mark.rule("PP-INIT-003")
def test_dma_map_direction() -> None:
    for d in (DMA_FROM_DEVICE, DMA_BIDIRECTIONAL):
        assert _create(flags=PP_FLAG_DMA_MAP, dma_dir=d) == 0
    for d in (DMA_TO_DEVICE, DMA_NONE):
        assert _create(flags=PP_FLAG_DMA_MAP, dma_dir=d) == -errno.EINVAL
        assert _create(flags=0, dma_dir=d) == 0  # only checked with DMA_MAP


@pytest.mark.rule("PP-INIT-004")
def test_sync_dev_needs_dma_map_and_max_len() -> None:
    assert _create(flags=PP_FLAG_DMA_SYNC_DEV, max_len=100) == -errno.EINVAL
    assert _create(flags=DMA_FLAGS, max_len=0) == -errno.EINVAL
    assert _create(flags=DMA_FLAGS, max_len=1) == 0


@pytest.mark.rule("PP-INIT-005")
def test_first_failing_check_wins() -> None:
    # flags are checked before the ring size, the ring size before the direction
    assert _create(flags=1 << 5, pool_size=40000) == -errno.EINVAL
    assert _create(flags=PP_FLAG_DMA_MAP, dma_dir=DMA_TO_DEVICE, pool_size=40000) == -errno.E2BIG
    assert _create(flags=PP_FLAG_DMA_SYNC_DEV | PP_FLAG_DMA_MAP, dma_dir=DMA_TO_DEVICE) == (
        -errno.EINVAL)


@pytest.mark.rule("PP-INIT-006", "PP-INIT-009")
def test_initial_state() -> None:
    res = page_pool_create(PagePoolParams(flags=DMA_FLAGS, max_len=64))
    assert res.ok and res.err == 0
    pool = res.pool
    assert pool is not None
    assert pool.cpuid == -1 and pool.user_cnt == 1 and pool.dma_sync_for_cpu
    assert pool.dma_map and pool.dma_sync
    assert pool.inflight(True) == 0 and not pool.alloc_cache and len(pool.ring) == 0
    assert pool.state is PoolState.ALIVE
    pc = page_pool_create_percpu(PagePoolParams(), 3).pool
    assert pc is not None and pc.cpuid == 3
    bad = page_pool_create(PagePoolParams(flags=1 << 7))
    assert bad.pool is None and not bad.ok and bad.err == -errno.EINVAL


@pytest.mark.rule("PP-INIT-007", "PP-ALLOC-006")
def test_no_order_check_at_create_allocation_fails_instead() -> None:
    """Before 9954464d737d (6.18 here); 7.x refuses the order at creation (-EINVAL)."""
    assert _create(kernel=parse_kernel("7.3"), order=11) == -errno.EINVAL
    assert _create(kernel=parse_kernel("7.3"), order=10) == 0
    pool = make_pool(order=11, kernel=parse_kernel("6.18"))
    assert pool.alloc_pages(SOFTIRQ0) is None
    s = pool.stats().alloc_stats
    assert (s.slow, s.slow_high_order, s.empty) == (0, 0, 1)
    pool10 = make_pool(order=10)
    page = pool10.alloc_pages(SOFTIRQ0)
    assert page is not None and page.order == 10
    assert pool10.stats().alloc_stats.slow_high_order == 1


@pytest.mark.rule("PP-INIT-008")
def test_system_pools_share_recycle_stats() -> None:
    shared = PagePoolRecycleStats()
    a = page_pool_create(PagePoolParams(flags=PP_FLAG_SYSTEM_POOL),
                         system_recycle_stats=shared).pool
    b = page_pool_create(PagePoolParams(flags=PP_FLAG_SYSTEM_POOL),
                         system_recycle_stats=shared).pool
    c = page_pool_create(PagePoolParams(), system_recycle_stats=shared).pool
    assert a is not None and b is not None and c is not None
    assert a.system and a.recycle_stats is shared and b.recycle_stats is shared
    assert c.recycle_stats is not shared
    pa = a.alloc_pages()
    assert pa is not None
    a.recycle_direct(pa)
    assert b.stats().recycle_stats.cached == 1  # counted in the shared block
    assert b.stats().alloc_stats.slow == 0  # alloc stats stay per pool


@pytest.mark.rule("PP-INIT-010")
def test_unrepresentable_params_are_invalid_config() -> None:
    with pytest.raises(InvalidConfig):
        page_pool_create(PagePoolParams(pool_size=-1))
    with pytest.raises(InvalidConfig):
        page_pool_create(PagePoolParams(max_len=1 << 32))
    with pytest.raises(InvalidConfig):
        page_pool_create(PagePoolParams(dma_dir=7))


# ----------------------------------------------------------------------------- ptr_ring


@pytest.mark.rule("PP-RING-001")
def test_ring_produce_until_full() -> None:
    r: PtrRing[int] = PtrRing(4)
    assert [r.produce(i) for i in range(5)] == [True, True, True, True, False]
    assert [r.consume() for _ in range(5)] == [0, 1, 2, 3, None]
    assert PtrRing[int](0).produce(1) is False  # size 0 is always -ENOSPC


@pytest.mark.rule("PP-RING-002")
def test_ring_consumer_frees_slots_a_batch_at_a_time() -> None:
    # __ptr_ring_set_size: batch = 2 * 64 / 8 = 16, or 1 when 16 > size / 2
    assert ptr_ring_batch(64, 64) == 16
    assert ptr_ring_batch(32, 64) == 16
    assert ptr_ring_batch(31, 64) == 1
    r: PtrRing[int] = PtrRing(64)
    for i in range(64):
        assert r.produce(i)
    for _ in range(15):
        r.consume()
    assert len(r) == 49 and r.full()  # 15 read slots not yet cleared
    assert not r.produce(99)
    r.consume()  # the 16th read clears slots 0..15
    assert not r.full()
    assert all(r.produce(100 + i) for i in range(16))
    assert r.full() and len(r) == 64


@pytest.mark.rule("PP-RING-002", "PP-NUMA-002", "PP-RECYCLE-006")
def test_pool_sees_ring_full_with_a_free_logical_slot() -> None:
    """A waive consumes one ring entry; its slot is not cleared yet, so the next put
    finds the ring full although it holds 63 of 64 pages."""
    pool = make_pool(pool_size=64)
    pages = [pool.alloc_pages(SOFTIRQ0) for _ in range(64)]
    for p in pages:
        assert p is not None
        assert pool.put_page(p, -1, False, PROC) is PutOutcome.RING
    pool.update_nid(1)
    new = pool.alloc_pages(SOFTIRQ0)  # waive one node-0 page, then slow path on node 1
    assert new is not None and new.nid == 1
    s = pool.stats()
    assert (s.alloc_stats.waive, s.alloc_stats.slow, s.alloc_stats.refill) == (1, 2, 0)
    assert len(pool.ring) == 63
    assert pool.put_page(new, -1, False, PROC) is PutOutcome.RING_FULL
    assert pool.stats().recycle_stats.ring_full == 1
    pool.check_conservation(full=True)


# ----------------------------------------------------------------------------- allocation


@pytest.mark.rule("PP-ALLOC-002", "PP-ALLOC-004", "PP-PAGE-001", "PP-ALLOC-005")
def test_first_allocation_takes_slow_path() -> None:
    dev = DmaDevice()
    pool = make_pool(dev=dev)
    page = pool.alloc_pages(SOFTIRQ0)
    assert page is not None
    s = pool.stats().alloc_stats
    assert (s.empty, s.slow, s.fast, s.refill) == (1, 1, 0, 0)
    # 64 pages bulk-allocated into the cache, the last one handed out
    assert page.pfn == FIRST_PFN + 63
    assert [p.pfn for p in pool.alloc_cache] == list(range(FIRST_PFN, FIRST_PFN + 63))
    assert pool.pages_state_hold_cnt == 64 and pool.inflight() == 64
    # page_pool_set_pp_info + page_pool_dma_map
    assert page.pp is pool and page.pp_magic == 0xDEAD_0000_0000_0040
    assert page.pp_ref_count == 1 and page.refcount == 1
    assert page.dma_addr == page.pfn << 12 and page.dma_index == 64
    assert sorted(p.dma_index for p in pool.pages()) == list(range(1, 65))
    assert pool.where(page) is Loc.IN_FLIGHT


@pytest.mark.rule("PP-ALLOC-001")
def test_fast_path_is_lifo() -> None:
    pool = make_pool()
    pool.alloc_pages(SOFTIRQ0)
    second = pool.alloc_pages(SOFTIRQ0)
    assert second is not None and second.pfn == FIRST_PFN + 62
    assert pool.stats().alloc_stats.fast == 1
    assert len(pool.alloc_cache) == 62


@pytest.mark.rule("PP-ALLOC-003", "PP-ALLOC-002")
def test_refill_after_64_ring_puts() -> None:
    pool = make_pool()
    pages = take(pool, 64)
    for p in pages:
        pool.put_page(p, -1, False, PROC)
    assert len(pool.ring) == 64 and not pool.alloc_cache
    got = pool.alloc_pages(SOFTIRQ0)
    s = pool.stats().alloc_stats
    assert (s.refill, s.empty, s.slow, s.fast) == (1, 1, 1, 63)
    assert len(pool.alloc_cache) == 63 and len(pool.ring) == 0
    assert got is pages[-1]  # consumed 64th, popped first
    assert [p.pfn for p in pool.alloc_cache] == [p.pfn for p in pages[:63]]


@pytest.mark.rule("PP-ALLOC-003")
def test_refill_takes_at_most_64() -> None:
    pool = make_pool(pool_size=256)
    pages = [pool.alloc_pages(SOFTIRQ0) for _ in range(100)]
    for p in pages:
        assert p is not None
        pool.put_page(p, -1, False, PROC)
    assert len(pool.ring) == 100
    while pool.alloc_cache:  # 128 were allocated: take the other 28 first
        pool.alloc_pages(SOFTIRQ0)
    pool.alloc_pages(SOFTIRQ0)
    assert len(pool.alloc_cache) == 63 and len(pool.ring) == 36
    assert pool.stats().alloc_stats.refill == 1


@pytest.mark.rule("PP-ALLOC-004")
def test_bulk_may_return_fewer_or_none() -> None:
    alloc = PageAllocator()
    pool = make_pool(allocator=alloc)
    alloc.bulk_limit = 5
    assert pool.alloc_pages(SOFTIRQ0) is not None
    assert len(pool.alloc_cache) == 4 and pool.pages_state_hold_cnt == 5
    for _ in range(4):
        pool.alloc_pages(SOFTIRQ0)
    alloc.fail(1)
    assert pool.alloc_pages(SOFTIRQ0) is None
    s = pool.stats().alloc_stats
    assert (s.slow, s.fast, s.empty) == (1, 4, 2)  # no stat for the failed slow path
    assert pool.pages_state_hold_cnt == 5


@pytest.mark.rule("PP-ALLOC-005")
def test_dma_map_failure_frees_the_page() -> None:
    dev, alloc = DmaDevice(), PageAllocator()
    pool = make_pool(dev=dev, allocator=alloc)
    dev.fail_map_next = 2
    page = pool.alloc_pages(SOFTIRQ0)
    assert page is not None
    assert pool.pages_state_hold_cnt == 62 and len(pool.alloc_cache) == 61
    assert alloc.allocated == 64 and alloc.freed == 2
    assert sorted(p.dma_index for p in pool.pages()) == list(range(1, 63))
    alloc2, dev2 = PageAllocator(), DmaDevice()
    pool2 = make_pool(dev=dev2, allocator=alloc2)
    alloc2.bulk_limit, dev2.fail_map_next = 3, 3
    assert pool2.alloc_pages(SOFTIRQ0) is None
    assert pool2.stats().alloc_stats.slow == 0 and alloc2.live == 0


@pytest.mark.rule("PP-ALLOC-005", "PP-DMA-004")
def test_dma_index_reuses_lowest_free_id() -> None:
    """xa_alloc on an ALLOC1 xarray hands out the lowest free id, from 1."""
    pool = make_pool(pool_size=1)
    pages = [p for p in (pool.alloc_pages(SOFTIRQ0) for _ in range(64)) if p]
    by_id = {p.dma_index: p for p in pages}
    assert sorted(by_id) == list(range(1, 65))
    pool.put_page(by_id[64], -1, False, PROC)  # into the ring
    for ident in (63, 10, 5):
        assert pool.put_page(by_id[ident], -1, False, PROC) is PutOutcome.RING_FULL
        assert by_id[ident].dma_index == 0 and by_id[ident].dma_addr == 0
    assert pool.alloc_pages(SOFTIRQ0) is by_id[64]  # refill from the ring
    last = pool.alloc_pages(SOFTIRQ0)  # slow path: 64 new pages
    assert last is not None
    fresh = sorted(p.dma_index for p in pool.pages() if p.pfn >= FIRST_PFN + 64)
    assert fresh == [5, 10, 63, *range(65, 126)] and last.dma_index == 125


@pytest.mark.rule("PP-ALLOC-006")
def test_high_order_path() -> None:
    pool = make_pool(order=2)
    a = pool.alloc_pages(SOFTIRQ0)
    b = pool.alloc_pages(SOFTIRQ0)
    assert a is not None and b is not None
    assert b.pfn - a.pfn == 4 and not pool.alloc_cache
    s = pool.stats().alloc_stats
    assert (s.slow_high_order, s.slow, s.empty) == (2, 0, 2)
    pool.recycle_direct(a)
    assert pool.alloc_pages(SOFTIRQ0) is a
    assert pool.stats().alloc_stats.fast == 1
    pool.allocator.fail(1)
    assert pool.alloc_pages(SOFTIRQ0) is None
    pool.dev.fail_map_next = 1
    assert pool.alloc_pages(SOFTIRQ0) is None
    assert pool.stats().alloc_stats.slow_high_order == 2


@pytest.mark.rule("PP-ALLOC-007", "PP-ALLOC-008")
def test_each_allocation_counts_once() -> None:
    pool = make_pool(pool_size=64)
    keys = ("fast", "refill", "slow", "slow_high_order")

    def counts() -> list[int]:
        s = pool.stats().alloc_stats
        return [getattr(s, k) for k in keys]

    seen = []
    held = []
    for step in range(200):
        before = counts()
        page = page_pool_dev_alloc_pages(pool, SOFTIRQ0)
        assert page is not None
        held.append(page)
        diff = [a - b for a, b in zip(counts(), before, strict=True)]
        assert sorted(diff) == [0, 0, 0, 1], diff
        seen.append(keys[diff.index(1)])
        if step % 3 == 0:
            for p in held:
                pool.put_page(p, -1, False, PROC)
            held.clear()
    assert {"fast", "refill", "slow"} <= set(seen)


@pytest.mark.rule("PP-ALLOC-009")
def test_alloc_after_destroy_refused() -> None:
    pool = make_pool()
    page = pool.alloc_pages(SOFTIRQ0)
    pool.destroy()
    assert pool.state is PoolState.DETACHED
    snap = snapshot(pool)
    with pytest.raises(StateViolation):
        pool.alloc_pages(SOFTIRQ0)
    with pytest.raises(StateViolation):
        page_pool_alloc_frag(pool, 100)
    assert snapshot(pool) == snap
    assert page is not None


# ----------------------------------------------------------------------------- NUMA


@pytest.mark.rule("PP-NUMA-001")
def test_refill_prefers_local_node_when_no_node() -> None:
    for ctx_nid, want_refill in ((0, 1), (1, 0)):
        pool = make_pool(nid=NUMA_NO_NODE)
        p = pool.alloc_pages(Context.softirq(0, nid=0))  # slow path on the local node 0
        assert p is not None and p.nid == 0
        while pool.alloc_cache:
            pool.alloc_pages(SOFTIRQ0)
        pool.put_page(p, -1, False, PROC)
        pool.alloc_pages(Context.softirq(0, nid=ctx_nid))
        s = pool.stats().alloc_stats
        assert (s.refill, s.waive) == (want_refill, 1 - want_refill)


@pytest.mark.rule("PP-NUMA-002")
def test_waive_stops_the_refill() -> None:
    alloc = PageAllocator()
    pool = make_pool(allocator=alloc, nid=0)
    home = take(pool, 64)  # node 0
    alloc.force_nid = 1
    foreign = pool.alloc_pages(SOFTIRQ0)  # slow path on node 1 (the node was full)
    assert foreign is not None and foreign.nid == 1
    order = [home[0], home[1], foreign, home[2], home[3]]
    for p in order:
        pool.put_page(p, -1, False, PROC)
    while pool.alloc_cache:
        pool.alloc_pages(SOFTIRQ0)
    before = pool.stats().alloc_stats
    got = pool.alloc_pages(SOFTIRQ0)
    s = pool.stats().alloc_stats
    assert (s.refill - before.refill, s.waive - before.waive) == (1, 1)
    assert got is home[1] and [p.pfn for p in pool.alloc_cache] == [order[0].pfn]
    assert foreign.loc is Loc.RELEASED and len(pool.ring) == 2


@pytest.mark.rule("PP-NUMA-003")
def test_update_nid_flushes_cache() -> None:
    pool = make_pool()
    pool.alloc_pages(SOFTIRQ0)
    rel = pool.pages_state_release_cnt
    rec = pool.stats().recycle_stats
    pool.update_nid(1)
    assert pool.nid == 1 and not pool.alloc_cache
    assert pool.pages_state_release_cnt == rel + 63
    assert pool.stats().recycle_stats == rec
    pool.check_conservation(full=True)


@pytest.mark.rule("PP-NUMA-004")
def test_nid_changed_only_when_different() -> None:
    pool = make_pool(nid=0)
    pool.alloc_pages(SOFTIRQ0)
    pool.nid_changed(0)
    assert len(pool.alloc_cache) == 63
    pool.nid_changed(2)
    assert pool.nid == 2 and not pool.alloc_cache


@pytest.mark.rule("PP-NUMA-005")
def test_slow_path_node() -> None:
    p1 = make_pool(nid=1).alloc_pages(Context.softirq(0, nid=0))
    assert p1 is not None and p1.nid == 1
    p2 = make_pool(nid=NUMA_NO_NODE).alloc_pages(Context.softirq(0, nid=3))
    assert p2 is not None and p2.nid == 3


# ----------------------------------------------------------------------------- recycling


@pytest.mark.rule("PP-RECYCLE-001", "PP-RECYCLE-011")
def test_put_drops_a_pp_reference_first() -> None:
    pool = make_pool()
    page = pool.alloc_pages(SOFTIRQ0)
    assert page is not None
    page_pool_ref_page(page)
    assert page.pp_ref_count == 2
    before = pool.stats()
    assert pool.put_page(page, -1, True, SOFTIRQ0) is PutOutcome.REF_DROPPED
    assert page.pp_ref_count == 1 and page.loc is Loc.IN_FLIGHT and pool.stats() == before
    assert pool.put_page(page, -1, True, SOFTIRQ0) is PutOutcome.CACHED
    assert page.pp_ref_count == 1  # the last reference leaves 1 behind


@pytest.mark.rule("PP-RECYCLE-002")
@pytest.mark.parametrize(
    ("cpuid", "napi_owner", "ctx", "expect"),
    [
        (-1, None, Context(cpu=0), PutOutcome.RING),  # process context
        (3, None, Context.softirq(3), PutOutcome.CACHED),  # pool->cpuid matches
        (3, None, Context.softirq(2), PutOutcome.RING),
        (3, None, Context(cpu=3), PutOutcome.RING),  # not in softirq
        (-1, 5, Context.softirq(5), PutOutcome.CACHED),  # napi->list_owner matches
        (-1, -1, Context.softirq(5), PutOutcome.RING),  # napi not scheduled
        (-1, 5, Context.softirq(4), PutOutcome.RING),
        (3, None, Context(cpu=3, in_softirq=True, preempt_rt=True), PutOutcome.RING),
    ],
)
def test_napi_local_upgrade(cpuid: int, napi_owner: int | None, ctx: Context,
                            expect: PutOutcome) -> None:
    napi = None if napi_owner is None else NapiStruct(napi_owner)
    pool = make_pool(cpuid=cpuid, napi=napi)
    page = pool.alloc_pages(SOFTIRQ0)
    assert page is not None
    assert pool.put_page(page, -1, False, ctx) is expect


@pytest.mark.rule("PP-RECYCLE-003", "PP-PAGE-002", "PP-RECYCLE-007")
def test_elevated_refcount_releases() -> None:
    alloc = PageAllocator()
    pool = make_pool(allocator=alloc)
    page = pool.alloc_pages(SOFTIRQ0)
    assert page is not None
    get_page(page)  # someone else holds the page too
    n_sync = len(pool.dev.syncs_for_device)
    assert pool.put_page(page, -1, True, SOFTIRQ0) is PutOutcome.RELEASED_REFCNT
    assert pool.stats().recycle_stats.released_refcnt == 1
    assert page.loc is Loc.RELEASED and page.pp is None and page.pp_magic == 0
    assert page.refcount == 1 and alloc.freed == 0
    assert len(pool.dev.syncs_for_device) == n_sync  # no sync for a released page
    put_page(page)  # the other holder lets go: now the page is freed
    assert page.refcount == 0 and alloc.freed == 1
    pfm = PageAllocator()
    pool2 = make_pool(allocator=pfm)
    pfm.pfmemalloc_next = 64
    p2 = pool2.alloc_pages(SOFTIRQ0)
    assert p2 is not None and p2.pfmemalloc
    assert pool2.put_page(p2, -1, True, SOFTIRQ0) is PutOutcome.RELEASED_REFCNT


@pytest.mark.rule("PP-PAGE-002")
def test_freeing_a_pool_page_is_refused() -> None:
    pool = make_pool()
    page = pool.alloc_pages(SOFTIRQ0)
    assert page is not None
    with pytest.raises(StateViolation):
        put_page(page)
    assert page.refcount == 1
    get_page(page)
    put_page(page)  # dropping an extra reference is fine
    assert page.refcount == 1


@pytest.mark.rule("PP-RECYCLE-004", "PP-RECYCLE-005")
def test_direct_put_cache_then_cache_full() -> None:
    pool = make_pool()
    held = [p for p in (pool.alloc_pages(SOFTIRQ0) for _ in range(192)) if p]
    assert len(held) == 192 and not pool.alloc_cache  # three bulks of 64, all taken
    for p in held[:128]:
        assert pool.recycle_direct(p, PROC) is PutOutcome.CACHED
    assert len(pool.alloc_cache) == 128
    assert pool.recycle_direct(held[128], PROC) is PutOutcome.CACHE_FULL_RING
    r = pool.stats().recycle_stats
    assert (r.cached, r.cache_full, r.ring) == (128, 1, 1)


@pytest.mark.rule("PP-RECYCLE-006", "PP-RECYCLE-012")
def test_ring_full_releases() -> None:
    pool = make_pool(pool_size=2)
    pages = [pool.alloc_pages(SOFTIRQ0) for _ in range(3)]
    outcomes = [pool.put_page(p, -1, False, PROC) for p in pages if p]
    assert outcomes == [PutOutcome.RING, PutOutcome.RING, PutOutcome.RING_FULL]
    r = pool.stats().recycle_stats
    assert (r.ring, r.ring_full, r.released_refcnt) == (2, 1, 0)
    assert pages[2] is not None and pages[2].loc is Loc.RELEASED


@pytest.mark.rule("PP-RECYCLE-005", "PP-RECYCLE-006", "PP-RECYCLE-012")
def test_cache_full_then_ring_full() -> None:
    pool = make_pool(pool_size=1)
    held = [pool.alloc_pages(SOFTIRQ0) for _ in range(192)]
    pages = [p for p in held if p is not None]
    for p in pages[:128]:
        pool.recycle_direct(p)
    assert pool.recycle_direct(pages[128]) is PutOutcome.CACHE_FULL_RING
    assert pool.recycle_direct(pages[129]) is PutOutcome.CACHE_FULL_RING_FULL
    r = pool.stats().recycle_stats
    assert (r.cache_full, r.ring, r.ring_full) == (2, 1, 1)


@pytest.mark.rule("PP-RECYCLE-007", "PP-DMA-004")
def test_release_unmaps_and_counts() -> None:
    dev, alloc = DmaDevice(), PageAllocator()
    pool = make_pool(pool_size=1, dev=dev, allocator=alloc)
    a, b = pool.alloc_pages(SOFTIRQ0), pool.alloc_pages(SOFTIRQ0)
    assert a is not None and b is not None
    pool.put_page(a, -1, False, PROC)
    idx = b.dma_index
    pool.put_page(b, -1, False, PROC)  # ring full: released
    assert b.dma_addr == 0 and b.dma_index == 0 and idx not in pool.dma_mapped
    assert dev.unmaps == 1 and pool.pages_state_release_cnt == 1 and alloc.freed == 1


@pytest.mark.rule("PP-RECYCLE-008", "PP-DMA-001")
def test_full_page_helpers() -> None:
    dev = DmaDevice()
    pool = make_pool(dev=dev, max_len=1500)
    a, b = pool.alloc_pages(SOFTIRQ0), pool.alloc_pages(SOFTIRQ0)
    assert a is not None and b is not None
    dev.syncs_for_device.clear()
    assert page_pool_put_full_page(pool, a, False, PROC) is PutOutcome.RING
    assert page_pool_recycle_direct(pool, b, PROC) is PutOutcome.CACHED
    assert [s.size for s in dev.syncs_for_device] == [1500, 1500]


@pytest.mark.rule("PP-RECYCLE-009")
def test_bulk_put() -> None:
    pool = make_pool(pool_size=4)
    pages = [p for p in (pool.alloc_pages(SOFTIRQ0) for _ in range(7)) if p]
    pool.put_page(pages[0], -1, False, PROC)
    pool.put_page(pages[1], -1, False, PROC)
    page_pool_put_netmem_bulk(pages[2:7], PROC)
    r = pool.stats().recycle_stats
    # two slots left: 2 produced, ring_full counted once, 3 released
    assert (r.ring, r.ring_full) == (4, 1)
    assert [p.loc for p in pages[2:7]] == [Loc.PTR_RING] * 2 + [Loc.RELEASED] * 3
    pool.check_conservation(full=True)


@pytest.mark.rule("PP-RECYCLE-009")
def test_bulk_put_groups_pools_and_goes_direct_in_napi_context() -> None:
    a = make_pool(cpuid=1)
    b = make_pool()
    pa, pb = take(a, 3), take(b, 2)
    mixed = [pa[0], pb[0], pa[1], pb[1], pa[2]]
    page_pool_ref_page(pa[0])  # two references: listed twice, last one recycles
    page_pool_put_netmem_bulk([*mixed, pa[0]], Context.softirq(1))
    assert a.stats().recycle_stats.cached == 3 and b.stats().recycle_stats.ring == 2
    with pytest.raises(StateViolation):
        page_pool_put_netmem_bulk([pa[0]] * 17)


@pytest.mark.rule("PP-RECYCLE-010")
def test_misuse_is_refused_and_state_unchanged() -> None:
    pool = make_pool()
    other = make_pool()
    page = pool.alloc_pages(SOFTIRQ0)
    foreign = other.alloc_pages(SOFTIRQ0)
    assert page is not None and foreign is not None
    pool.put_page(page, -1, False, PROC)
    snap = snapshot(pool)
    with pytest.raises(StateViolation):
        pool.put_page(page, -1, False, PROC)  # double put: page is in the ring
    with pytest.raises(StateViolation):
        pool.put_page(foreign, -1, False, PROC)  # another pool's page
    live = pool.alloc_pages(SOFTIRQ0)
    assert live is not None
    snap = snapshot(pool)
    with pytest.raises(StateViolation):
        pool.put_page(live, -1, False, Context(in_softirq=True, in_hardirq=True))
    with pytest.raises(StateViolation):
        page_pool_put_netmem_bulk([live, live])  # two returns, one reference
    assert snapshot(pool) == snap
    small = make_pool(pool_size=1)
    x, y = small.alloc_pages(SOFTIRQ0), small.alloc_pages(SOFTIRQ0)
    assert x is not None and y is not None
    small.put_page(x, -1, False, PROC)
    small.put_page(y, -1, False, PROC)  # released
    with pytest.raises(StateViolation, match="already released"):
        small.put_page(y, -1, False, PROC)


@pytest.mark.rule("PP-RECYCLE-011")
def test_fragment_unref_and_put_unrefed() -> None:
    pool = make_pool()
    page = pool.alloc_pages(SOFTIRQ0)
    assert page is not None
    page_pool_fragment_page(page, 3)
    assert page.pp_ref_count == 3
    with pytest.raises(StateViolation):
        page_pool_put_unrefed_page(pool, page, -1, True, PROC)  # references still out
    assert page_pool_unref_page(page, 2) == 1
    assert page_pool_unref_page(page, 1) == 0 and page.pp_ref_count == 1
    assert page_pool_put_unrefed_page(pool, page, -1, True, PROC) is PutOutcome.CACHED
    with pytest.raises(StateViolation):
        page_pool_fragment_page(page, 2)  # page is back in the cache


@pytest.mark.rule("PP-RECYCLE-012")
def test_each_last_put_has_exactly_one_outcome() -> None:
    groups = ("cached", "ring", "ring_full", "released_refcnt")
    pool = make_pool(pool_size=8)
    pages = [p for p in (pool.alloc_pages(SOFTIRQ0) for _ in range(200)) if p]
    for i, p in enumerate(pages):
        if i % 7 == 0:
            get_page(p)
        before = pool.stats().recycle_stats
        out = pool.put_page(p, -1, i % 2 == 0, PROC)
        after = pool.stats().recycle_stats
        diffs = {g: getattr(after, g) - getattr(before, g) for g in groups}
        assert sum(diffs.values()) == 1
        full = after.cache_full - before.cache_full
        assert full in (0, 1) and (not full or diffs["ring"] + diffs["ring_full"] == 1)
        assert out.value.split("+")[-1] == next(g for g, v in diffs.items() if v)


# ----------------------------------------------------------------------------- DMA sync


@pytest.mark.rule("PP-DMA-001")
def test_sync_length_table() -> None:
    dev = DmaDevice()
    pool = make_pool(dev=dev, max_len=1000, offset=256)
    pages = [p for p in (pool.alloc_pages(SOFTIRQ0) for _ in range(5)) if p]
    dev.syncs_for_device.clear()
    for p, size in zip(pages, (100, -1, 0, 5000, -2), strict=True):
        pool.put_page(p, size, False, PROC)
    assert [s.size for s in dev.syncs_for_device] == [100, 1000, 0, 1000, 1000]
    s0 = dev.syncs_for_device[0]
    assert s0 == DmaSync(pages[0].pfn, (pages[0].pfn << 12) + 256, 100, DMA_FROM_DEVICE)


@pytest.mark.rule("PP-DMA-001")
def test_no_sync_without_flag_or_need() -> None:
    for flags, need in ((PP_FLAG_DMA_MAP, True), (DMA_FLAGS, False)):
        dev = DmaDevice(need_sync=need)
        pool = make_pool(dev=dev, flags=flags)
        p = pool.alloc_pages(SOFTIRQ0)
        assert p is not None
        pool.put_page(p, -1, False, PROC)
        assert dev.syncs_for_device == [] and dev.maps == 64 and dev.device_syncs == 0
    # a ring_full page was synced before the ring refused it
    dev = DmaDevice()
    pool = make_pool(dev=dev, pool_size=1, max_len=64)
    a, b = pool.alloc_pages(SOFTIRQ0), pool.alloc_pages(SOFTIRQ0)
    dev.syncs_for_device.clear()
    assert a is not None and b is not None
    pool.put_page(a, 10, False, PROC)
    assert pool.put_page(b, 20, False, PROC) is PutOutcome.RING_FULL
    assert [s.size for s in dev.syncs_for_device] == [10, 20]
    quiet = DmaDevice(record=False)
    qpool = make_pool(dev=quiet)
    q = qpool.alloc_pages(SOFTIRQ0)
    assert q is not None
    qpool.put_page(q, 10, False, PROC)
    assert quiet.device_syncs == 65 and quiet.syncs_for_device == []  # counted only


@pytest.mark.rule("PP-DMA-002", "PP-DMA-003")
def test_sync_at_map_time_only() -> None:
    dev = DmaDevice()
    pool = make_pool(dev=dev, max_len=2048)
    page = pool.alloc_pages(SOFTIRQ0)
    assert page is not None
    assert len(dev.syncs_for_device) == 64
    assert {s.size for s in dev.syncs_for_device} == {2048}
    pool.put_page(page, 77, False, PROC)
    dev.syncs_for_device.clear()
    for _ in range(64):  # 63 fast + 1 refill: nothing synced on the way out
        pool.alloc_pages(SOFTIRQ0)
    assert dev.syncs_for_device == []


@pytest.mark.rule("PP-DMA-005")
def test_sync_for_cpu_helper() -> None:
    dev = DmaDevice()
    pool = make_pool(dev=dev, flags=PP_FLAG_DMA_MAP, offset=256)
    page = pool.alloc_pages(SOFTIRQ0)
    assert page is not None
    page_pool_dma_sync_for_cpu(pool, page, 2, 60)
    assert dev.syncs_for_cpu == [DmaSync(page.pfn, (page.pfn << 12) + 258, 60, DMA_FROM_DEVICE)]


# ----------------------------------------------------------------------------- frag API


@pytest.mark.rule("PP-FRAG-001")
def test_frag_bigger_than_page_warns_and_returns_null() -> None:
    # page_pool_alloc_frag_netmem: WARN_ON(size > max_size) and return 0, before any state.
    pool = make_pool()
    f = page_pool_alloc_frag(pool, 100)
    assert f is not None
    snap = snapshot(pool)
    trace = Trace()
    assert page_pool_alloc_frag(pool, 4097, trace=trace) is None
    assert snapshot(pool) == snap and pool.frag_page is f[0] and pool.frag_offset == 100
    assert len(pool.warnings) == 1 and trace.rules() == ["PP-FRAG-001"]
    assert page_pool_alloc_frag(pool, 4096) is not None  # exactly a page is allowed
    assert len(pool.warnings) == 1


@pytest.mark.rule("PP-FRAG-002")
def test_frag_size_aligned_to_dma_cache_alignment() -> None:
    # arm64 (arch/arm64/include/asm/cache.h): dma_get_cache_alignment is cache_line_size,
    # 64 bytes on a CPU reporting CTR_EL0.CWG = 4: 50 rounds up to 64 (128 would be the
    # old, wrong ARCH_DMA_MINALIGN reading), 100 to 128.
    assert ARM64_4K.dma_cache_alignment == 64
    pool = make_pool(allocator=PageAllocator(ARM64_4K))
    got = [page_pool_alloc_frag(pool, n) for n in (50, 100, 1)]
    assert [g[1] for g in got if g] == [0, 64, 192] and pool.frag_offset == 256
    # x86-64 has no ARCH_DMA_MINALIGN: alignment 1, sizes are kept as asked.
    pool = make_pool()
    got = [page_pool_alloc_frag(pool, 100) for _ in range(2)]
    assert [g[1] for g in got if g] == [0, 100] and pool.frag_offset == 200


@pytest.mark.rule("PP-FRAG-002")
def test_arm64_cache_line_size_sources() -> None:
    # cacheinfo.c cache_line_size: coherency_max_size first; then 4 << CWG; CWG 0 falls
    # back to ARCH_DMA_MINALIGN (128).
    assert arm64_cache_line_size() == 64
    assert arm64_cache_line_size(ctr_el0_cwg=5) == 128
    assert arm64_cache_line_size(ctr_el0_cwg=0) == ARM64_ARCH_DMA_MINALIGN == 128
    assert arm64_cache_line_size(coherency_max_size=128, ctr_el0_cwg=4) == 128
    pool = make_pool(allocator=PageAllocator(Arch(dma_cache_alignment=128)))
    got = [page_pool_alloc_frag(pool, 100) for _ in range(2)]
    assert [g[1] for g in got if g] == [0, 128] and pool.frag_offset == 256
    pool = make_pool(allocator=PageAllocator(Arch(dma_cache_alignment=64)))
    got = [page_pool_alloc_frag(pool, 1) for _ in range(3)]
    assert [g[1] for g in got if g] == [0, 64, 128]


@pytest.mark.rule("PP-FRAG-003", "PP-FRAG-004")
def test_frags_share_a_page() -> None:
    pool = make_pool()
    got = [page_pool_dev_alloc_frag(pool, 1000, SOFTIRQ0) for _ in range(4)]
    assert all(got)
    pages = {g[0].pfn for g in got if g}
    assert len(pages) == 1 and [g[1] for g in got if g] == [0, 1000, 2000, 3000]
    page = got[0][0] if got[0] else None
    assert page is not None and page is pool.frag_page
    assert pool.frag_users == 4 and page.pp_ref_count == BIAS_MAX
    assert pool.stats().alloc_stats.slow == 1
    pool.check_conservation()


@pytest.mark.rule("PP-FRAG-004")
def test_frag_alloc_failure_clears_frag_page() -> None:
    alloc = PageAllocator()
    pool = make_pool(allocator=alloc, pool_size=1)
    alloc.bulk_limit = 1
    first = page_pool_alloc_frag(pool, 3000)
    assert first is not None
    alloc.fail(1)
    assert page_pool_alloc_frag(pool, 3000) is None  # drain leaves users; alloc fails
    assert pool.frag_page is None and first[0].pp_ref_count == 1


@pytest.mark.rule("PP-FRAG-005", "PP-FRAG-007")
def test_drain_reuses_page_when_all_frags_returned() -> None:
    pool = make_pool()
    frags = [page_pool_alloc_frag(pool, 1000) for _ in range(4)]
    page = frags[0][0] if frags[0] else None
    assert page is not None
    for _ in frags:
        assert pool.put_page(page, -1, False, PROC) is PutOutcome.REF_DROPPED
    before = pool.stats()
    nxt = page_pool_alloc_frag(pool, 1000)  # 4000 + 1000 > 4096: drain
    assert nxt == (page, 0)
    after = pool.stats()
    assert after.recycle_stats.cached == before.recycle_stats.cached + 1
    assert after.alloc_stats.fast == before.alloc_stats.fast + 1
    assert pool.frag_users == 1 and page.pp_ref_count == BIAS_MAX


@pytest.mark.rule("PP-FRAG-005", "PP-FRAG-007")
def test_drain_with_users_left_moves_on() -> None:
    pool = make_pool()
    frags = [page_pool_alloc_frag(pool, 2000) for _ in range(2)]
    old = frags[0][0] if frags[0] else None
    assert old is not None
    pool.put_page(old, -1, False, PROC)  # one of two fragments back
    new = page_pool_alloc_frag(pool, 2000)
    assert new is not None and new[0] is not old and new[1] == 0
    assert old.pp_ref_count == 1 and old.refs_out == 1
    assert pool.put_page(old, -1, False, PROC) is PutOutcome.RING  # the last fragment


@pytest.mark.rule("PP-FRAG-005")
def test_drain_of_unrecyclable_page_releases_silently() -> None:
    alloc = PageAllocator()
    pool = make_pool(allocator=alloc)
    f = page_pool_alloc_frag(pool, 3000)
    assert f is not None
    page = f[0]
    get_page(page)
    pool.put_page(page, -1, False, PROC)
    rel = pool.pages_state_release_cnt
    before = pool.stats()
    g = page_pool_alloc_frag(pool, 3000)
    assert g is not None and g[0] is not page
    assert page.loc is Loc.RELEASED and pool.pages_state_release_cnt == rel + 1
    after = pool.stats()
    assert after.recycle_stats == before.recycle_stats  # no counter for this release
    assert after.alloc_stats.fast == before.alloc_stats.fast + 1  # g came from the cache


@pytest.mark.rule("PP-FRAG-006")
def test_page_pool_alloc_whole_page_or_grown_frag() -> None:
    pool = make_pool()
    whole = page_pool_alloc(pool, 3000)
    assert whole is not None and whole[1:] == (0, 4096) and pool.frag_page is None
    a = page_pool_alloc(pool, 1500)
    b = page_pool_alloc(pool, 1500)
    assert a is not None and b is not None
    assert a[1:] == (0, 1500)
    assert b[1:] == (1500, 4096 - 1500) and pool.frag_offset == 4096
    assert a[0] is b[0]


# ----------------------------------------------------------------------------- stats


@pytest.mark.rule("PP-STATS-001", "PP-STATS-003")
def test_ethtool_names_and_order() -> None:
    assert page_pool_ethtool_stats_get_count() == 11
    assert page_pool_ethtool_stats_get_strings() == (
        "rx_pp_alloc_fast", "rx_pp_alloc_slow", "rx_pp_alloc_slow_ho", "rx_pp_alloc_empty",
        "rx_pp_alloc_refill", "rx_pp_alloc_waive", "rx_pp_recycle_cached",
        "rx_pp_recycle_cache_full", "rx_pp_recycle_ring", "rx_pp_recycle_ring_full",
        "rx_pp_recycle_released_ref",
    )
    assert all(len(s) < 32 for s in page_pool_ethtool_stats_get_strings())
    pool = make_pool()
    p = pool.alloc_pages(SOFTIRQ0)
    assert p is not None
    pool.recycle_direct(p)
    d = ethtool_stats(pool.stats())
    assert list(d) == list(page_pool_ethtool_stats_get_strings())
    assert d["rx_pp_alloc_slow"] == 1 and d["rx_pp_alloc_empty"] == 1
    assert d["rx_pp_recycle_cached"] == 1 and sum(d.values()) == 3
    assert page_pool_ethtool_stats_get(pool.stats()) == [0, 1, 0, 1, 0, 0, 1, 0, 0, 0, 0]


@pytest.mark.rule("PP-STATS-002")
def test_get_stats_accumulates() -> None:
    a, b = make_pool(), make_pool()
    a.alloc_pages(SOFTIRQ0)
    b.alloc_pages(SOFTIRQ0)
    b.alloc_pages(SOFTIRQ0)
    total = PagePoolStats()
    assert a.get_stats(total) and b.get_stats(total)
    assert (total.alloc_stats.slow, total.alloc_stats.fast) == (2, 1)
    assert a.get_stats(None) is False


# ----------------------------------------------------------------------------- destroy


@pytest.mark.rule("PP-DESTROY-001")
def test_xdp_mem_reference_delays_teardown() -> None:
    pool = make_pool()
    pool.use_xdp_mem()
    assert pool.user_cnt == 2 and pool.xdp_mem_connected
    pool.alloc_pages(SOFTIRQ0)
    page_pool_destroy(pool)  # e.g. xdp_rxq_info_unreg: only drops a reference
    assert pool.state is PoolState.ALIVE and len(pool.alloc_cache) == 63
    assert pool.alloc_pages(SOFTIRQ0) is not None
    page_pool_destroy(pool)
    assert state(pool) is PoolState.DETACHED and pool.user_cnt == 0
    page_pool_destroy(None)


@pytest.mark.rule("PP-DESTROY-002", "PP-DESTROY-008")
def test_destroy_disables_direct_recycling_and_frees_frag() -> None:
    napi = NapiStruct(0)
    pool = make_pool(cpuid=0, napi=napi)
    held = pool.alloc_pages(SOFTIRQ0)
    f = page_pool_alloc_frag(pool, 500)
    assert f is not None and held is not None
    frag_page = f[0]
    pool.put_page(frag_page, -1, False, PROC)  # the frag user is done
    pool.destroy()
    assert pool.cpuid == -1 and pool.napi is None and pool.frag_page is None
    assert frag_page.loc is Loc.RELEASED  # no user left: released by page_pool_free_frag
    assert pool.put_page(held, -1, False, SOFTIRQ0) is PutOutcome.RING  # no upgrade now


@pytest.mark.rule("PP-DESTROY-008")
def test_enable_direct_recycling() -> None:
    pool = make_pool()
    napi = NapiStruct(2)
    assert pool.enable_direct_recycling(napi) is False  # NULL -> napi: no WARN
    assert pool.enable_direct_recycling(napi) is False  # same NAPI: idempotent
    assert pool.warnings == []
    page = pool.alloc_pages(SOFTIRQ0)
    assert page is not None
    assert pool.put_page(page, -1, False, Context.softirq(2)) is PutOutcome.CACHED


@pytest.mark.rule("PP-DESTROY-008")
def test_enable_direct_recycling_over_another_napi_warns_and_replaces() -> None:
    # page_pool.c page_pool_enable_direct_recycling: WARN_ON(!napi || pool->p.napi), then
    # WRITE_ONCE(pool->p.napi, napi) regardless.
    old, new = NapiStruct(2), NapiStruct(3)
    pool = make_pool(napi=old)
    trace = Trace()
    assert pool.enable_direct_recycling(new, trace) is True
    assert pool.napi is new and len(pool.warnings) == 1 and "WARN" in pool.warnings[0]
    assert [e.rule for e in trace.events] == ["PP-DESTROY-008"]
    page = pool.alloc_pages(SOFTIRQ0)
    assert page is not None
    # The new owner's CPU now recycles directly; the old one's no longer does.
    assert pool.put_page(page, -1, False, Context.softirq(2)) is PutOutcome.RING
    page = pool.alloc_pages(SOFTIRQ0)
    assert page is not None
    assert pool.put_page(page, -1, False, Context.softirq(3)) is PutOutcome.CACHED
    # Enabling with NULL while a NAPI is attached WARNs too and clears it.
    assert page_pool_enable_direct_recycling(pool, None) is True
    assert pool.napi is None and len(pool.warnings) == 2


@pytest.mark.rule("PP-DESTROY-008")
def test_disable_direct_recycling_warns_on_an_owned_napi() -> None:
    # napi_assert_will_not_race (net/core/dev.h): WARN if list_owner != -1; carries on.
    pool = make_pool(cpuid=1, napi=NapiStruct(-1))
    pool.disable_direct_recycling()
    assert (pool.cpuid, pool.napi, pool.warnings) == (-1, None, [])
    pool = make_pool(napi=NapiStruct(0))
    pool.disable_direct_recycling()
    assert pool.napi is None and len(pool.warnings) == 1


@pytest.mark.rule("PP-DESTROY-003")
def test_destroy_with_nothing_in_flight_frees() -> None:
    dev = DmaDevice()
    pool = make_pool(dev=dev)
    pages = [p for p in (pool.alloc_pages(SOFTIRQ0) for _ in range(10)) if p]
    for p in pages[:5]:
        pool.put_page(p, -1, False, PROC)
    for p in pages[5:]:
        pool.recycle_direct(p)
    pool.destroy()
    assert pool.state is PoolState.FREED and pool.inflight(True) == 0
    assert dev.unmaps == 64 and not pool.dma_mapped and not pool.dma_sync
    assert pool.allocator.live == 0
    pool.check_conservation(full=True)


@pytest.mark.rule("PP-DESTROY-003", "PP-DESTROY-005", "PP-DMA-004")
def test_deferred_release() -> None:
    dev = DmaDevice()
    pool = make_pool(dev=dev)
    a, b = pool.alloc_pages(SOFTIRQ0), pool.alloc_pages(SOFTIRQ0)
    assert a is not None and b is not None
    trace = Trace()
    pool.destroy(trace)
    assert "PP-DESTROY-005" in trace.rules()
    assert pool.state is PoolState.DETACHED and pool.inflight() == 2
    # the first scrub unmapped every page, in-flight ones included, and stopped syncing
    assert a.dma_addr == 0 and b.dma_addr == 0 and dev.unmaps == 64
    dev.syncs_for_device.clear()
    assert pool.put_page(a, -1, False, PROC) is PutOutcome.RING
    assert dev.syncs_for_device == []
    assert pool.release_retry() == 1 and a.loc is Loc.RELEASED
    assert dev.unmaps == 64  # nothing unmapped twice
    pool.put_page(b, -1, False, PROC)
    assert pool.release_retry() == 0 and state(pool) is PoolState.FREED
    pool.check_conservation(full=True)


@pytest.mark.rule("PP-DESTROY-004")
def test_inflight_is_a_signed_32_bit_distance() -> None:
    pool = make_pool()
    pool.pages_state_hold_cnt, pool.pages_state_release_cnt = 1, 0xFFFF_FFFF
    assert page_pool_inflight(pool, True) == 2
    pool.pages_state_hold_cnt, pool.pages_state_release_cnt = 0, 1
    assert page_pool_inflight(pool, True) == -1 and page_pool_inflight(pool, False) == 0


@pytest.mark.rule("PP-DESTROY-006")
def test_direct_put_after_destroy_parks_page_forever() -> None:
    pool = make_pool()
    page = pool.alloc_pages(SOFTIRQ0)
    assert page is not None
    pool.destroy()
    assert pool.put_page(page, -1, True, PROC) is PutOutcome.CACHED
    for _ in range(3):
        assert pool.release_retry() == 1  # the cache is emptied only once
    assert pool.where(page) is Loc.ALLOC_CACHE


@pytest.mark.rule("PP-DESTROY-007")
def test_destroy_misuse() -> None:
    pool = make_pool()
    with pytest.raises(StateViolation):
        pool.release_retry()
    pool.destroy()
    assert pool.state is PoolState.FREED
    snap = snapshot(pool)
    for call in (pool.destroy, pool.use_xdp_mem, pool.release_retry,
                 lambda: pool.update_nid(3)):
        with pytest.raises(StateViolation):
            call()
    assert snapshot(pool) == snap


@pytest.mark.rule("PP-DESTROY-007")
def test_destroy_after_last_on_a_waiting_pool_warns_and_saturates() -> None:
    # page_pool_put -> refcount_dec_and_test on 0: refcount_warn_saturate (WARN, count
    # pinned at REFCOUNT_SATURATED = INT_MIN / 2) and "not last", so destroy returns.
    pool = make_pool()
    held = pool.alloc_pages(SOFTIRQ0)
    assert held is not None
    pool.destroy()
    assert pool.state is PoolState.DETACHED and pool.warnings == []
    pool.destroy()
    assert pool.state is PoolState.DETACHED
    assert pool.user_cnt == -0x4000_0000 and len(pool.warnings) == 1
    pool.use_xdp_mem()  # refcount_inc from saturated: WARN again, stays saturated
    assert pool.user_cnt == -0x4000_0000 and len(pool.warnings) == 2
    # The deferred release still frees the pool once the page is back.
    pool.put_page(held, -1, False, PROC)
    assert pool.release_retry() == 0 and pool.state is PoolState.FREED


# ----------------------------------------------------------------------------- ledger


@pytest.mark.rule("PP-LEDGER-001", "PP-LEDGER-002")
def test_ledger_where_and_conservation() -> None:
    pool = make_pool(pool_size=1)
    pages = [p for p in (pool.alloc_pages(SOFTIRQ0) for _ in range(3)) if p]
    pool.put_page(pages[0], -1, False, PROC)
    pool.put_page(pages[1], -1, False, PROC)
    assert [pool.where(p) for p in pages] == [Loc.PTR_RING, Loc.RELEASED, Loc.IN_FLIGHT]
    assert pool.where(pool.alloc_cache[0]) is Loc.ALLOC_CACHE
    assert make_pool().where(pages[0]) is None
    pool.check_conservation(full=True)
    pool.alloc_cache.append(pool.alloc_cache[0])  # corrupt: one page twice
    with pytest.raises(AssertionError, match="twice"):
        pool.check_conservation()


@pytest.mark.rule("PP-ALLOC-001", "PP-RECYCLE-004")
def test_trace_names_rules() -> None:
    pool = make_pool()
    t = Trace()
    page = pool.alloc_pages(SOFTIRQ0, t)
    assert page is not None
    page_pool_put_page(pool, page, -1, True, SOFTIRQ0, t)
    pool.alloc_pages(SOFTIRQ0, t)
    assert t.rules() == ["PP-ALLOC-002", "PP-ALLOC-004", "PP-RECYCLE-004", "PP-ALLOC-001"]


@pytest.mark.rule("PP-INIT-005", "PP-INIT-009")
def test_page_pool_fixed_scenario_markers_match_the_component() -> None:
    """The creation and life-cycle properties' markers name exactly the rules their
    scenario tables (conformance.components.page_pool) are written for."""
    from conformance.components import page_pool as component
    from conformance.properties import test_page_pool as props
    assert set(props.CREATION_RULES) == {r for r, _ in component.CREATION_CASES} | {
        "PP-INIT-009"}
    assert set(props.LIFECYCLE_RULES) == set(component.LIFECYCLE_RULES)
    assert props.FIXED_RULES == component.FIXED_RULES


@pytest.mark.rule("PP-INIT-009", "PP-INIT-007")
def test_page_pool_component_reports_the_creation_errno() -> None:
    """A refused creation is an observable (``create.rc``) and runs no event; an accepted
    one reports rc 0."""
    from conformance.components import page_pool as component
    from conformance.scenario import Scenario
    refused = component.expected(Scenario(component="page_pool", config={"params": {
        "order": 11}}, events=({"op": "alloc"},)))
    assert refused["create"] == {"rc": -errno.EINVAL} and refused["events"] == []
    accepted = component.expected(Scenario(component="page_pool", config={"params": {
        "pool_size": 32769}}, events=({"op": "alloc"},)))
    assert accepted["create"] == {"rc": 0} and accepted["events"][0]["rc"] == 0


@pytest.mark.rule("PP-DESTROY-008", "PP-RECYCLE-002")
def test_page_pool_component_enable_direct_recycling_event() -> None:
    """The component's queue-restart event: the same NAPI again is nothing, another one
    WARNs and takes over direct recycling, NULL WARNs and clears it; 6.12, which has no
    page_pool_enable_direct_recycling, finds the scenario not applicable."""
    from conformance.components import page_pool as component
    from conformance.scenario import Scenario
    from conformance.targets.base import NotApplicable

    def run(kernel: str, *napis: int | None) -> dict[str, object]:
        restarts: list[dict[str, object]] = [
            {"op": "enable_direct_recycling", "napi": k} for k in napis]
        events: tuple[dict[str, object], ...] = (
                  {"op": "alloc"}, *restarts,
                  {"op": "napi_owner", "cpu": 1},
                  {"op": "put", "alloc": 0, "sync": -1, "cpu": 1})
        return component.expected(Scenario(component="page_pool", config={"napi_cpu": 0},
                                           events=events, kernel=kernel))

    same = run("7.3.4", 0)
    assert same["warnings"] == 0
    assert same["stats"]["rx_pp_recycle_cached"] == 1  # type: ignore[index]
    other = run("7.3.4", 1)
    assert other["warnings"] == 1  # replaced: WARN, and the new NAPI recycles directly
    assert other["stats"]["rx_pp_recycle_cached"] == 1  # type: ignore[index]
    cleared = run("6.18.44", None)
    assert cleared["warnings"] == 1  # NULL over a NAPI: WARN, no NAPI left to move
    assert cleared["events"][2] == {"rc": -errno.ENOENT}  # type: ignore[index]
    assert cleared["stats"]["rx_pp_recycle_ring"] == 1  # type: ignore[index]
    with pytest.raises(NotApplicable):
        run("6.12.117", 1)

"""``struct page_pool``: creation, allocation, recycling, NUMA, destroy (net/core/page_pool.c).

Read in Kingxukai/linux v6.17-rc3 (page_pool.c at 0291023e, types.h/helpers.h at
9b44fff6).  Every method names the rule it implements; SPEC part ``page_pool.md``
states the rules.  The hot path (``alloc_pages`` / ``put_page``) is plain list and
attribute work so that driver models can call it per packet.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

import attrs

from reference.errors import StateViolation
from reference.kernel import DEFAULT_KERNEL, KernelVersion
from reference.trace import Trace, emit

from .constants import (
    BIAS_MAX,
    NUMA_NO_NODE,
    PP_ALLOC_CACHE_REFILL,
    PP_ALLOC_CACHE_SIZE,
    PP_FLAG_DMA_MAP,
    PP_FLAG_DMA_SYNC_DEV,
    PP_FLAG_SYSTEM_POOL,
    REFCOUNT_SATURATED,
    U32_MASK,
    XDP_BULK_QUEUE_SIZE,
)
from .ledger import conservation_problems
from .page import DmaDevice, IdAllocator, Loc, Page, PageAllocator, put_page
from .params import (
    PROCESS_CONTEXT,
    Context,
    NapiStruct,
    PagePoolParams,
    page_pool_init_check,
    ring_qsize,
)
from .ptr_ring import PtrRing
from .stats import (
    PagePoolAllocStats,
    PagePoolRecycleStats,
    PagePoolStats,
    accumulate,
)

_CACHE = Loc.ALLOC_CACHE
_RING = Loc.PTR_RING
_FLIGHT = Loc.IN_FLIGHT
_RELEASED = Loc.RELEASED


class PoolState(enum.Enum):
    """Life cycle of a pool (model convention around ``page_pool_destroy``)."""

    ALIVE = "alive"
    #: the last user called destroy; pages are still in flight, release retries pending
    DETACHED = "detached"
    #: ``__page_pool_destroy`` ran: the pool object no longer exists
    FREED = "freed"


class PutOutcome(enum.Enum):
    """What one put did: the rows of the recycle decision table (PP-RECYCLE-012)."""

    REF_DROPPED = "ref_dropped"  # other pp references remain; nothing else happened
    CACHED = "cached"
    RING = "ring"
    CACHE_FULL_RING = "cache_full+ring"
    RING_FULL = "ring_full"
    CACHE_FULL_RING_FULL = "cache_full+ring_full"
    RELEASED_REFCNT = "released_refcnt"


@attrs.frozen
class CreateResult:
    """What ``page_pool_create`` returns: the pool, or ``err`` (a negative errno) as the
    kernel's ``ERR_PTR`` (PP-INIT-009)."""

    pool: PagePool | None
    err: int = 0

    @property
    def ok(self) -> bool:
        return self.pool is not None


# Results of the inner __page_pool_put_page step.
_PUT_DONE_CACHED = 0
_PUT_DONE_RELEASED = 1
_PUT_TO_RING = 2
_PUT_TO_RING_CACHE_FULL = 3


class PagePool:
    """One page pool.  Create it with :func:`page_pool_create` (PP-INIT-009)."""

    __slots__ = (
        "_id_alloc",
        "_live",
        "_n_pages",
        "_pages",
        "alloc_cache",
        "alloc_stats",
        "allocator",
        "arch",
        "cpuid",
        "destroy_cnt",
        "dev",
        "dma_dir",
        "dma_map",
        "dma_mapped",
        "dma_sync",
        "dma_sync_for_cpu",
        "empty_ring_refcnt_violations",
        "flags",
        "frag_offset",
        "frag_page",
        "frag_users",
        "max_len",
        "napi",
        "nid",
        "offset",
        "order",
        "pages_state_hold_cnt",
        "pages_state_release_cnt",
        "params",
        "pool_size",
        "recycle_stats",
        "ring",
        "state",
        "system",
        "user_cnt",
        "warnings",
        "xdp_mem_connected",
    )

    def __init__(
        self,
        params: PagePoolParams,
        cpuid: int,
        allocator: PageAllocator,
        system_recycle_stats: PagePoolRecycleStats | None,
        kernel: KernelVersion = DEFAULT_KERNEL,
    ) -> None:
        # PP-INIT-006: the state page_pool_init leaves behind.
        self.params = params
        self.arch = allocator.arch
        self.allocator = allocator
        self.order = params.order
        self.pool_size = params.pool_size
        self.nid = params.nid
        self.napi = params.napi
        self.dma_dir = params.dma_dir
        self.max_len = params.max_len
        self.offset = params.offset
        self.flags = params.flags
        self.dev = params.dev if params.dev is not None else DmaDevice()
        self.cpuid = cpuid
        self.dma_sync_for_cpu = True
        self.dma_map = bool(params.flags & PP_FLAG_DMA_MAP)
        self.dma_sync = bool(params.flags & PP_FLAG_DMA_SYNC_DEV)
        self.system = bool(params.flags & PP_FLAG_SYSTEM_POOL)
        self.alloc_stats = PagePoolAllocStats()
        # PP-INIT-008: system pools share one recycle-stats block.
        if self.system:
            self.recycle_stats = (
                system_recycle_stats if system_recycle_stats is not None
                else PagePoolRecycleStats()
            )
        else:
            self.recycle_stats = PagePoolRecycleStats()
        self.ring: PtrRing[Page] = PtrRing(
            ring_qsize(params, kernel), smp_cache_bytes=self.arch.smp_cache_bytes
        )
        self.alloc_cache: list[Page] = []
        self.pages_state_hold_cnt = 0
        self.pages_state_release_cnt = 0
        self.user_cnt = 1
        self.destroy_cnt = 0
        self.frag_users = 0
        self.frag_page: Page | None = None
        self.frag_offset = 0
        self.dma_mapped: dict[int, Page] = {}
        self._id_alloc = IdAllocator()
        self.state = PoolState.ALIVE
        self.xdp_mem_connected = False
        self.empty_ring_refcnt_violations = 0
        #: Kernel WARNs this pool triggered and carried on from, oldest first (an
        #: observable: the kernel prints a splat and continues, so the model continues).
        self.warnings: list[str] = []
        # Ledger (PP-LEDGER-001): pages not yet released, and every page ever accounted.
        self._live: dict[int, Page] = {}
        self._pages: list[Page] = []
        self._n_pages = 0

    def __repr__(self) -> str:
        return (
            f"PagePool(state={self.state.value}, cache={len(self.alloc_cache)}, "
            f"ring={len(self.ring)}/{self.ring.size}, inflight={self.inflight()})"
        )

    # ------------------------------------------------------------------ page metadata

    def _set_pp_info(self, page: Page) -> None:
        """``page_pool_set_pp_info`` + hold accounting (PP-PAGE-001)."""
        page.pp = self
        page.pp_magic = self.arch.pp_signature
        page.pp_ref_count = 1
        page.owner = self
        page.loc = _CACHE
        page.refs_out = 0
        self.pages_state_hold_cnt = (self.pages_state_hold_cnt + 1) & U32_MASK
        self._live[page.pfn] = page
        self._pages.append(page)
        self._n_pages += 1

    def _dma_map(self, page: Page) -> bool:
        """``page_pool_dma_map`` (PP-ALLOC-005, PP-DMA-002)."""
        addr = self.dev.map_page(page, self.arch.page_shift)
        if not addr:
            return False
        page.dma_addr = addr
        ident = self._id_alloc.alloc()
        self.dma_mapped[ident] = page
        page.dma_index = ident
        self._sync_for_device(page, self.max_len)
        return True

    def _release_dma(self, page: Page) -> None:
        """``__page_pool_release_netmem_dma``: unmap once, by index (PP-DMA-004)."""
        if not self.dma_map:
            return
        ident = page.dma_index
        if not ident or self.dma_mapped.get(ident) is not page:
            return
        del self.dma_mapped[ident]
        self._id_alloc.release(ident)
        self.dev.unmap_page()
        page.dma_addr = 0
        page.dma_index = 0

    def _sync_for_device(self, page: Page, dma_sync_size: int) -> None:
        """``page_pool_dma_sync_for_device`` (PP-DMA-001): only with ``dma_sync`` set and
        a device that needs syncing; length min(size as u32, max_len) at dma + offset."""
        if self.dma_sync and self.dev.need_sync:
            size = dma_sync_size & U32_MASK
            if size > self.max_len:
                size = self.max_len
            self.dev.sync_for_device(page, page.dma_addr + self.offset, size, self.dma_dir)

    def _return_page(self, page: Page) -> None:
        """``page_pool_return_netmem`` (PP-RECYCLE-007): unmap, count the release, clear
        the pp fields and drop the pool's mm reference."""
        self._release_dma(page)
        self.pages_state_release_cnt = (self.pages_state_release_cnt + 1) & U32_MASK
        page.pp = None
        page.pp_magic = 0
        page.loc = _RELEASED
        page.refs_out = 0
        del self._live[page.pfn]
        put_page(page)

    # ------------------------------------------------------------------ allocation

    def _check_alive(self, what: str, rule: str) -> None:
        if self.state is not PoolState.ALIVE:
            raise StateViolation(f"{what} on a pool that is {self.state.value}",
                                 obj="page_pool", rule=rule)

    def alloc_pages(self, ctx: Context | None = None, trace: Trace | None = None) -> Page | None:
        """``page_pool_alloc_pages``: a page with one pp reference, or None."""
        if self.state is not PoolState.ALIVE:
            self._check_alive("page_pool_alloc_pages", "PP-ALLOC-009")
        page = self._alloc(ctx, trace)
        if page is not None:
            page.loc = _FLIGHT
            page.refs_out = 1
        return page

    def _alloc(self, ctx: Context | None, trace: Trace | None) -> Page | None:
        """Cache, then ring, then page allocator.  A page handed out moves exactly one
        of fast / refill / slow / slow_high_order (PP-ALLOC-007) and is not synced on
        the way out (PP-DMA-003)."""
        cache = self.alloc_cache
        if cache:
            # PP-ALLOC-001: fast path, LIFO.
            page = cache.pop()
            self.alloc_stats.fast += 1
            if trace is not None:
                emit(trace, "PP-ALLOC-001", "fast path: popped the alloc cache",
                     pfn=page.pfn, cache=len(cache))
            return page
        got = self._refill_alloc_cache(ctx or PROCESS_CONTEXT, trace)
        if got is not None:
            return got
        return self._alloc_slow(ctx or PROCESS_CONTEXT, trace)

    def _refill_alloc_cache(self, ctx: Context, trace: Trace | None) -> Page | None:
        """``page_pool_refill_alloc_cache`` (PP-ALLOC-002, PP-ALLOC-003, PP-NUMA-001/002)."""
        ring = self.ring
        if ring.empty():
            self.alloc_stats.empty += 1
            emit(trace, "PP-ALLOC-002", "cache and ring empty: go to the slow path")
            return None
        pref_nid = ctx.nid if self.nid == NUMA_NO_NODE else self.nid
        cache = self.alloc_cache
        while True:
            page = ring.consume()
            if page is None:
                break
            if page.nid == pref_nid:
                page.loc = _CACHE
                cache.append(page)
            else:
                self._return_page(page)
                self.alloc_stats.waive += 1
                emit(trace, "PP-NUMA-002", "ring page of a foreign node released (waive)",
                     pfn=page.pfn, nid=page.nid, pref_nid=pref_nid)
                break
            if len(cache) >= PP_ALLOC_CACHE_REFILL:
                break
        if cache:
            page = cache.pop()
            self.alloc_stats.refill += 1
            emit(trace, "PP-ALLOC-003", "refilled the cache from the ring",
                 pfn=page.pfn, cache=len(cache), ring=len(ring))
            return page
        return None

    def _alloc_slow(self, ctx: Context, trace: Trace | None) -> Page | None:
        """``__page_pool_alloc_netmems_slow`` (PP-ALLOC-004, PP-ALLOC-006)."""
        if self.order:
            return self._alloc_high_order(ctx, trace)
        cache = self.alloc_cache
        if cache:  # the kernel's "guarantees zero count" branch; unreachable in practice
            return cache.pop()
        # PP-NUMA-005: on p.nid; NUMA_NO_NODE lets the allocator use the local node.
        pages = self.allocator.alloc_pages_bulk_node(self.nid, PP_ALLOC_CACHE_REFILL, ctx.nid)
        if not pages:
            emit(trace, "PP-ALLOC-004", "bulk allocation returned no page")
            return None
        if trace is not None:
            asked = ctx.nid if self.nid == NUMA_NO_NODE else self.nid
            foreign = sum(1 for page in pages if page.nid != asked)
            if foreign:
                emit(trace, "PP-NUMA-005", "the allocator gave pages of another node",
                     asked=asked, foreign=foreign)
        dma_map = self.dma_map
        for page in pages:
            if dma_map and not self._dma_map(page):
                put_page(page)
                continue
            self._set_pp_info(page)
            cache.append(page)
        if cache:
            page = cache.pop()
            self.alloc_stats.slow += 1
            emit(trace, "PP-ALLOC-004", "slow path: bulk allocated into the cache",
                 pfn=page.pfn, got=len(pages), cache=len(cache))
            return page
        return None

    def _alloc_high_order(self, ctx: Context, trace: Trace | None) -> Page | None:
        """``__page_pool_alloc_page_order`` (PP-ALLOC-006): one compound page."""
        page = self.allocator.alloc_pages_node(self.nid, self.order, ctx.nid)
        if page is None:
            emit(trace, "PP-ALLOC-006", "high-order allocation failed", order=self.order)
            return None
        if self.dma_map and not self._dma_map(page):
            put_page(page)
            return None
        self.alloc_stats.slow_high_order += 1
        self._set_pp_info(page)
        emit(trace, "PP-ALLOC-006", "slow path: high-order page", pfn=page.pfn, order=self.order)
        return page

    # ------------------------------------------------------------------ recycling

    def _napi_local(self, ctx: Context) -> bool:
        """``page_pool_napi_local`` (PP-RECYCLE-002)."""
        if ctx.preempt_rt or not ctx.in_softirq:
            return False
        if self.cpuid == ctx.cpu:
            return True
        napi = self.napi
        return napi is not None and napi.list_owner == ctx.cpu

    def _check_put(self, page: Page, nrefs: int, ctx: Context, what: str) -> None:
        """PP-RECYCLE-010: refuse puts the kernel would corrupt itself on."""
        if ctx.in_hardirq:
            raise StateViolation(f"{what} from hardirq context", obj=repr(page),
                                 rule="PP-RECYCLE-010")
        if page.owner is not self or page.pp is not self:
            if page.owner is self:
                raise StateViolation(f"{what}: page already released by this pool",
                                     obj=repr(page), rule="PP-RECYCLE-010")
            raise StateViolation(f"{what}: page does not belong to this pool", obj=repr(page),
                                 rule="PP-RECYCLE-010")
        if page.loc is not _FLIGHT:
            raise StateViolation(f"{what}: page is not in flight (it is in {page.loc})",
                                 obj=repr(page), rule="PP-RECYCLE-010")
        if page.refs_out < nrefs:
            raise StateViolation(f"{what}: more references returned than handed out",
                                 obj=repr(page), rule="PP-RECYCLE-010")

    @staticmethod
    def _unref(page: Page, nr: int) -> int:
        """``page_pool_unref_netmem``: drop ``nr`` pp references, return what remains; a
        page whose last reference goes keeps ``pp_ref_count`` 1 (PP-RECYCLE-001)."""
        if page.pp_ref_count == nr:
            page.pp_ref_count = 1
            return 0
        ret = page.pp_ref_count - nr
        if ret < 0:
            raise StateViolation("pp_ref_count would go negative", obj=repr(page),
                                 rule="PP-RECYCLE-001")
        page.pp_ref_count = ret if ret else 1
        return ret

    def _put_core(self, page: Page, dma_sync_size: int, allow_direct: bool) -> int:
        """``__page_pool_put_page`` (PP-RECYCLE-003/004/005): cache it, release it, or say
        it is a candidate for the ring."""
        if page._refcount == 1 and not page.pfmemalloc:
            self._sync_for_device(page, dma_sync_size)
            if allow_direct:
                cache = self.alloc_cache
                if len(cache) < PP_ALLOC_CACHE_SIZE:
                    page.loc = _CACHE
                    cache.append(page)
                    self.recycle_stats.cached += 1
                    return _PUT_DONE_CACHED
                self.recycle_stats.cache_full += 1
                return _PUT_TO_RING_CACHE_FULL
            return _PUT_TO_RING
        self.recycle_stats.released_refcnt += 1
        self._return_page(page)
        return _PUT_DONE_RELEASED

    def put_unrefed_page(
        self,
        page: Page,
        dma_sync_size: int,
        allow_direct: bool,
        ctx: Context | None = None,
        trace: Trace | None = None,
    ) -> PutOutcome:
        """``page_pool_put_unrefed_page``: recycle a page whose pp references are gone."""
        ctx = ctx or PROCESS_CONTEXT
        self._check_put(page, 0, ctx, "page_pool_put_unrefed_page")
        if page.refs_out or page is self.frag_page:
            raise StateViolation("page_pool_put_unrefed_page: pp references are still out",
                                 obj=repr(page), rule="PP-RECYCLE-010")
        return self._put_unrefed(page, dma_sync_size, allow_direct, ctx, trace)

    def _put_unrefed(
        self, page: Page, dma_sync_size: int, allow_direct: bool, ctx: Context,
        trace: Trace | None,
    ) -> PutOutcome:
        if self.destroy_cnt:
            emit(trace, "PP-DESTROY-006", "put after the last destroy: no upgrade to direct",
                 pfn=page.pfn, allow_direct=allow_direct)
        if not allow_direct:
            allow_direct = self._napi_local(ctx)
            if allow_direct:
                emit(trace, "PP-RECYCLE-002", "caller is the pool's NAPI context: direct",
                     pfn=page.pfn, cpu=ctx.cpu)
            else:
                emit(trace, "PP-RECYCLE-002", "not the pool's NAPI context: not direct",
                     pfn=page.pfn, cpu=ctx.cpu, in_softirq=ctx.in_softirq)
        r = self._put_core(page, dma_sync_size, allow_direct)
        if r == _PUT_DONE_CACHED:
            emit(trace, "PP-RECYCLE-004", "direct put into the alloc cache", pfn=page.pfn,
                 cache=len(self.alloc_cache))
            return PutOutcome.CACHED
        if r == _PUT_DONE_RELEASED:
            emit(trace, "PP-RECYCLE-003", "page not recyclable: released", pfn=page.pfn,
                 refcount=page._refcount, pfmemalloc=page.pfmemalloc)
            return PutOutcome.RELEASED_REFCNT
        cache_full = r == _PUT_TO_RING_CACHE_FULL
        if cache_full:
            emit(trace, "PP-RECYCLE-005", "alloc cache full: try the ring", pfn=page.pfn)
        if self.ring.produce(page):
            page.loc = _RING
            self.recycle_stats.ring += 1
            emit(trace, "PP-RECYCLE-006", "put into the ptr_ring", pfn=page.pfn,
                 ring=len(self.ring))
            return PutOutcome.CACHE_FULL_RING if cache_full else PutOutcome.RING
        self.recycle_stats.ring_full += 1
        self._return_page(page)
        emit(trace, "PP-RECYCLE-006", "ptr_ring full: released", pfn=page.pfn)
        return PutOutcome.CACHE_FULL_RING_FULL if cache_full else PutOutcome.RING_FULL

    def put_page(
        self,
        page: Page,
        dma_sync_size: int,
        allow_direct: bool,
        ctx: Context | None = None,
        trace: Trace | None = None,
    ) -> PutOutcome:
        """``page_pool_put_page``: drop one pp reference; the last one recycles."""
        ctx = ctx or PROCESS_CONTEXT
        self._check_put(page, 1, ctx, "page_pool_put_page")
        page.refs_out -= 1
        # PP-RECYCLE-001: page_pool_unref_and_test.
        if page.pp_ref_count != 1:
            page.pp_ref_count -= 1
            emit(trace, "PP-RECYCLE-001", "other pp references remain", pfn=page.pfn,
                 pp_ref_count=page.pp_ref_count)
            return PutOutcome.REF_DROPPED
        return self._put_unrefed(page, dma_sync_size, allow_direct, ctx, trace)

    def put_full_page(self, page: Page, allow_direct: bool, ctx: Context | None = None,
                      trace: Trace | None = None) -> PutOutcome:
        """``page_pool_put_full_page``: put with sync length -1 (PP-RECYCLE-008)."""
        return self.put_page(page, -1, allow_direct, ctx, trace)

    def recycle_direct(self, page: Page, ctx: Context | None = None,
                       trace: Trace | None = None) -> PutOutcome:
        """``page_pool_recycle_direct``: full-length put with allow_direct (PP-RECYCLE-008)."""
        return self.put_page(page, -1, True, ctx, trace)

    def _recycle_ring_bulk(self, bulk: list[Page]) -> None:
        """``page_pool_recycle_ring_bulk`` (PP-RECYCLE-009)."""
        ring = self.ring
        i = 0
        for page in bulk:
            if not ring.produce(page):
                self.recycle_stats.ring_full += 1
                break
            page.loc = _RING
            i += 1
        self.recycle_stats.ring += i
        for page in bulk[i:]:
            self._return_page(page)

    # ------------------------------------------------------------------ pp references

    def ref_page(self, page: Page) -> None:
        """``page_pool_ref_page``: take one more pp reference (PP-RECYCLE-011)."""
        self._check_put(page, 1, PROCESS_CONTEXT, "page_pool_ref_page")
        page.pp_ref_count += 1
        page.refs_out += 1

    def fragment_page(self, page: Page, nr: int, trace: Trace | None = None) -> None:
        """``page_pool_fragment_page``: set ``nr`` references on a page fresh from the pool
        (one reference out, not the current frag page) (PP-RECYCLE-011)."""
        self._check_put(page, 1, PROCESS_CONTEXT, "page_pool_fragment_page")
        if nr < 1 or page.refs_out != 1 or page.pp_ref_count != 1 or page is self.frag_page:
            raise StateViolation("page_pool_fragment_page needs a fresh page and nr >= 1",
                                 obj=repr(page), rule="PP-RECYCLE-011")
        page.pp_ref_count = nr
        page.refs_out = nr
        emit(trace, "PP-RECYCLE-011", "pp_ref_count set for the fragments", pfn=page.pfn, nr=nr)

    def unref_page(self, page: Page, nr: int, trace: Trace | None = None) -> int:
        """``page_pool_unref_page``: drop ``nr`` references, return how many remain; at 0
        the caller owns the page and must hand it to :meth:`put_unrefed_page`
        (PP-RECYCLE-011)."""
        self._check_put(page, nr, PROCESS_CONTEXT, "page_pool_unref_page")
        if nr < 1:
            raise StateViolation("nr must be positive", obj=repr(page), rule="PP-RECYCLE-011")
        ret = self._unref(page, nr)
        page.refs_out -= nr
        emit(trace, "PP-RECYCLE-011", "pp references dropped", pfn=page.pfn, nr=nr,
             remaining=ret, pp_ref_count=page.pp_ref_count)
        return ret

    # ------------------------------------------------------------------ NUMA

    def update_nid(self, new_nid: int, trace: Trace | None = None) -> None:
        """``page_pool_update_nid``: set the node and flush the alloc cache (PP-NUMA-003)."""
        if self.state is PoolState.FREED:
            self._check_alive("page_pool_update_nid", "PP-DESTROY-007")
        self.nid = new_nid
        cache = self.alloc_cache
        flushed = [page.pfn for page in cache]
        while cache:
            self._return_page(cache.pop())
        emit(trace, "PP-NUMA-003", "node changed: alloc cache flushed", nid=new_nid,
             pfns=flushed)

    def nid_changed(self, new_nid: int, trace: Trace | None = None) -> None:
        """``page_pool_nid_changed``: update only when the node differs (PP-NUMA-004)."""
        if self.nid != new_nid:
            emit(trace, "PP-NUMA-004", "node differs: update it", nid=self.nid, new_nid=new_nid)
            self.update_nid(new_nid, trace)
        else:
            emit(trace, "PP-NUMA-004", "same node: nothing to do", nid=new_nid)

    # ------------------------------------------------------------------ destroy

    def inflight(self, strict: bool = False) -> int:
        """``page_pool_inflight``: hold - release as a signed 32-bit distance; not strict
        clamps a negative value to 0 (PP-DESTROY-004)."""
        d = (self.pages_state_hold_cnt - self.pages_state_release_cnt) & U32_MASK
        if d >= 1 << 31:
            d -= 1 << 32
        return d if strict else max(0, d)

    def use_xdp_mem(self) -> None:
        """``page_pool_use_xdp_mem``: the XDP mem model takes a user reference
        (PP-DESTROY-001).  On a pool whose last user already destroyed it, the
        ``refcount_inc`` of a zero ``user_cnt`` WARNs and saturates it (PP-DESTROY-007)."""
        if self.state is PoolState.FREED:
            self._check_alive("page_pool_use_xdp_mem", "PP-DESTROY-007")
        if self.state is PoolState.DETACHED:
            self._user_cnt_warn("page_pool_use_xdp_mem: refcount_t: " + (
                "addition on 0; use-after-free" if self.user_cnt == 0
                else "saturated; leaking memory"))
        else:
            self.user_cnt += 1
        self.xdp_mem_connected = True

    def _user_cnt_warn(self, what: str) -> None:
        """``refcount_warn_saturate``: the WARN, and ``user_cnt`` pinned at
        ``REFCOUNT_SATURATED`` (PP-DESTROY-007)."""
        self.user_cnt = REFCOUNT_SATURATED
        self.warnings.append(what)

    def enable_direct_recycling(self, napi: NapiStruct | None,
                                trace: Trace | None = None) -> bool:
        """``page_pool_enable_direct_recycling`` (PP-DESTROY-008): attach ``napi``.

        Nothing happens when it is already the pool's NAPI.  Otherwise the kernel WARNs
        if ``napi`` is NULL or another NAPI is attached, and installs ``napi`` all the
        same; the model does that and records the WARN in :attr:`warnings`.  Returns
        whether it warned.
        """
        if self.napi is napi:
            return False
        warned = napi is None or self.napi is not None
        if warned:
            what = ("NULL napi" if napi is None
                    else "a NAPI instance is already attached; replaced")
            self.warnings.append(f"page_pool_enable_direct_recycling: WARN_ON: {what}")
            emit(trace, "PP-DESTROY-008", "WARN: " + what,
                 old_owner=None if self.napi is None else self.napi.list_owner,
                 new_owner=None if napi is None else napi.list_owner)
        self.napi = napi
        return warned

    def disable_direct_recycling(self) -> None:
        """``page_pool_disable_direct_recycling``: cpuid -1 and no NAPI (PP-DESTROY-008).

        With a NAPI attached the kernel first runs ``napi_assert_will_not_race``, which
        WARNs unless that NAPI is disabled (SCHED set, ``list_owner`` -1) or was never
        registered, and carries on.  The model's NAPI has no SCHED bit (-1 is read as
        disabled, :class:`NapiStruct`), so it WARNs when ``list_owner`` is a CPU, and
        records that WARN in :attr:`warnings` only.
        """
        self.cpuid = -1
        napi = self.napi
        if napi is None:
            return
        if napi.list_owner != -1:
            self.warnings.append("page_pool_disable_direct_recycling: WARN_ON: napi "
                                 f"list_owner is CPU {napi.list_owner}, not -1")
        self.napi = None

    def destroy(self, trace: Trace | None = None) -> None:
        """``page_pool_destroy`` (PP-DESTROY-001/002/003/005).

        A destroy after the last one (PP-DESTROY-007): on a pool still waiting for its
        pages, ``page_pool_put`` underflows ``user_cnt``, which WARNs, saturates the count
        and answers "not the last user", so nothing else happens; on a freed pool it is a
        use after free, which the model refuses.
        """
        if self.state is PoolState.FREED:
            raise StateViolation("page_pool_destroy on a freed pool (use after free)",
                                 obj="page_pool", rule="PP-DESTROY-007")
        if self.state is PoolState.DETACHED:
            self._user_cnt_warn("page_pool_destroy: refcount_t: underflow; use-after-free")
            emit(trace, "PP-DESTROY-007", "WARN: destroy after the last one; user_cnt "
                 "saturated, nothing else done")
            return
        self.user_cnt -= 1
        if self.user_cnt:
            emit(trace, "PP-DESTROY-001", "other users remain", user_cnt=self.user_cnt)
            return
        self.disable_direct_recycling()
        released = self._free_frag()
        emit(trace, "PP-DESTROY-002", "last destroy: direct recycling off, frag page dropped",
             pfns=[] if released is None else [released.pfn])
        inflight = self._release(trace)
        if inflight:
            self.state = PoolState.DETACHED
            emit(trace, "PP-DESTROY-005", "pages in flight: release deferred", inflight=inflight)

    def _free_frag(self) -> Page | None:
        """``page_pool_free_frag`` (PP-DESTROY-002): drop the pool's frag bias; a page
        with no user left is released (no recyclable check, no counter).  Returns the
        page it released, if any."""
        page = self.frag_page
        self.frag_page = None
        if page is None:
            return None
        if self._unref(page, BIAS_MAX - self.frag_users):
            return None
        self._return_page(page)
        return page

    def _scrub(self) -> list[int]:
        """``page_pool_scrub`` (PP-DESTROY-003); the pfns of the pages it released."""
        # page_pool_empty_alloc_cache_once: only the first scrub empties the cache, so a
        # page put directly after destroy stays there (PP-DESTROY-006).
        released: list[int] = []
        if not self.destroy_cnt:
            cache = self.alloc_cache
            while cache:
                released.append(cache[-1].pfn)
                self._return_page(cache.pop())
        first = self.destroy_cnt == 0
        self.destroy_cnt += 1
        if first and self.dma_map:
            self.dma_sync = False
            for ident in sorted(self.dma_mapped):
                self._release_dma(self.dma_mapped[ident])
        ring = self.ring
        while (page := ring.consume()) is not None:  # page_pool_empty_ring
            if page._refcount != 1:  # the kernel's pr_crit, in the log as a WARN would be
                self.empty_ring_refcnt_violations += 1
                self.warnings.append("page_pool_empty_ring: page_pool refcnt "
                                     f"{page._refcount} violation")
            released.append(page.pfn)
            self._return_page(page)
        return released

    def _release(self, trace: Trace | None) -> int:
        """``page_pool_release``: scrub, then free the pool if nothing is in flight."""
        released = self._scrub()
        if released:
            emit(trace, "PP-DESTROY-003", "scrub: cache and ring pages released", pfns=released)
        inflight = self.inflight(strict=True)
        if inflight == 0:
            self.state = PoolState.FREED
            self.xdp_mem_connected = False  # the disconnect callback
            emit(trace, "PP-DESTROY-003", "no page in flight: pool freed")
        return inflight

    def release_retry(self, trace: Trace | None = None) -> int:
        """One run of ``page_pool_release_retry`` (the 1 s deferred work) (PP-DESTROY-005).
        Returns the inflight count it saw; the pool is freed when it is 0."""
        if self.state is not PoolState.DETACHED:
            raise StateViolation(f"release retry on a pool that is {self.state.value}",
                                 obj="page_pool", rule="PP-DESTROY-007")
        return self._release(trace)

    # ------------------------------------------------------------------ stats

    def get_stats(self, stats: PagePoolStats | None) -> bool:
        """``page_pool_get_stats``: add this pool's counters into ``stats`` (PP-STATS-002)."""
        if stats is None:
            return False
        accumulate(stats, self.alloc_stats, self.recycle_stats)
        return True

    def stats(self) -> PagePoolStats:
        """This pool's counters alone (a fresh struct filled by :meth:`get_stats`)."""
        s = PagePoolStats()
        self.get_stats(s)
        return s

    # ------------------------------------------------------------------ ledger

    def where(self, page: Page) -> Loc | None:
        """Where ``page`` is now (PP-LEDGER-002); None if this pool never accounted it."""
        return page.loc if page.owner is self else None

    def pages(self) -> Iterable[Page]:
        """Every page this pool ever accounted, in accounting order."""
        return iter(self._pages)

    def check_conservation(self, *, full: bool = False) -> None:
        """PP-LEDGER-001: every page is in exactly one place and the counters agree.

        Raises ``AssertionError`` naming every inconsistency (a model bug, never a
        kernel-visible outcome).  ``full`` also walks every released page.
        """
        problems = conservation_problems(self, full=full)
        if problems:
            raise AssertionError("page_pool ledger broken:\n  " + "\n  ".join(problems))


# ---------------------------------------------------------------------- bulk return


def page_pool_put_netmem_bulk(pages: list[Page], ctx: Context | None = None,
                              trace: Trace | None = None) -> None:
    """``page_pool_put_netmem_bulk`` (PP-RECYCLE-009): drop one pp reference per entry,
    then recycle the last references pool by pool, ring insertions under one lock.

    At most ``XDP_BULK_QUEUE_SIZE`` entries (the kernel's on-stack array).  The pages
    may belong to several pools; an entry may repeat a page it holds several
    references on.  Everything is checked before anything changes.
    """
    ctx = ctx or PROCESS_CONTEXT
    if len(pages) > XDP_BULK_QUEUE_SIZE:
        raise StateViolation(f"{len(pages)} entries > XDP_BULK_QUEUE_SIZE", obj="bulk",
                             rule="PP-RECYCLE-009")
    wanted: dict[int, int] = {}
    for page in pages:
        wanted[id(page)] = wanted.get(id(page), 0) + 1
    for page in pages:
        pool = page.pp
        if pool is None:
            raise StateViolation("page_pool_put_netmem_bulk: not a page pool page",
                                 obj=repr(page), rule="PP-RECYCLE-010")
        pool._check_put(page, wanted[id(page)], ctx, "page_pool_put_netmem_bulk")
    data: list[Page] = []
    for page in pages:
        page.refs_out -= 1
        if page.pp_ref_count == 1:
            data.append(page)
        else:
            page.pp_ref_count -= 1
    while data:
        first = data[0].pp
        assert first is not None
        allow_direct = first._napi_local(ctx)
        foreign: list[Page] = []
        bulk: list[Page] = []
        for page in data:
            if page.pp is not first:
                foreign.append(page)
                continue
            r = first._put_core(page, -1, allow_direct)
            if r >= _PUT_TO_RING:
                bulk.append(page)
        if bulk:
            first._recycle_ring_bulk(bulk)
        emit(trace, "PP-RECYCLE-009", "bulk: one pool's last references recycled",
             pfns=[page.pfn for page in data if page.pp is first or page.owner is first],
             allow_direct=allow_direct, ring=len(bulk))
        data = foreign


# ---------------------------------------------------------------------- creation


def page_pool_create_percpu(
    params: PagePoolParams,
    cpuid: int,
    *,
    allocator: PageAllocator | None = None,
    system_recycle_stats: PagePoolRecycleStats | None = None,
    kernel: KernelVersion = DEFAULT_KERNEL,
    trace: Trace | None = None,
) -> CreateResult:
    """``page_pool_create_percpu``: a pool whose direct recycling belongs to ``cpuid``.

    ``allocator`` is the page allocator the pool draws from (a fresh one by default);
    ``system_recycle_stats`` is the block system pools share (PP-INIT-008); ``kernel``
    selects the version-gated creation checks (PP-INIT-002, PP-INIT-007); ``trace`` gets
    the check that refused the parameters.
    """
    allocator = allocator or PageAllocator()
    err = page_pool_init_check(params, kernel, allocator.arch.max_page_order, trace)
    if err:
        return CreateResult(None, err)
    pool = PagePool(params, cpuid, allocator, system_recycle_stats, kernel)
    return CreateResult(pool, 0)


def page_pool_create(
    params: PagePoolParams,
    *,
    allocator: PageAllocator | None = None,
    system_recycle_stats: PagePoolRecycleStats | None = None,
    kernel: KernelVersion = DEFAULT_KERNEL,
    trace: Trace | None = None,
) -> CreateResult:
    """``page_pool_create``: ``page_pool_create_percpu`` with cpuid -1 (PP-INIT-009)."""
    return page_pool_create_percpu(params, -1, allocator=allocator,
                                   system_recycle_stats=system_recycle_stats, kernel=kernel,
                                   trace=trace)

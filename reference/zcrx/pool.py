"""A page_pool bound to a memory provider, reduced to what zcrx exercises (ZCRX-MP-001,
ZCRX-MP-002, ZCRX-MP-005, ZCRX-MP-006).

Kernel: ``net/core/page_pool.c`` (``page_pool_alloc_netmems``, ``__page_pool_get_cached``,
``page_pool_refill_alloc_cache``, ``page_pool_put_unrefed_netmem``,
``__page_pool_put_page``, ``page_pool_return_netmem``, ``page_pool_destroy``,
``net_mp_niov_set_page_pool``) and ``include/net/page_pool/helpers.h``
(``page_pool_ref_netmem``, ``page_pool_unref_netmem``).  The full page_pool model lives in
``reference/page_pool``; it allocates real pages and knows no memory providers, so this
module keeps only the pool's two stores, its hold/release counters and the provider
hooks, with the same names, bounds and order.  The pool never calls the page allocator.

Recycling: a niov whose last pool reference goes goes into the alloc cache only when the
caller may recycle directly and the cache has room; otherwise into the ptr_ring; a full
ring returns it to the provider (``release_netmem``), which counts as a release.  Puts
from the stack (skb frees in the recv path, io_zcrx_return_niov) are not direct.  (For the
skb frees that is a model convention: the kernel frees them through
``skb_attempt_defer_free`` and may promote the put to direct with
``page_pool_napi_local`` depending on CPU placement, ZCRX-MP-005.)

The ptr_ring is the same ``struct ptr_ring`` a page-backed pool has (``page_pool_init``
sizes it, ``page_pool_recycle_in_ring`` produces into it, ``page_pool_refill_alloc_cache``
consumes from it; a provider changes none of that), so it is modelled slot for slot with
:class:`~reference.page_pool.ptr_ring.PtrRing`: consumed slots are freed only a batch at a
time (PP-RING-002), and a put can find the ring full with fewer than ``size`` unread
entries.  Read in Debian linux-source-7.3 (7.3.4): ``net/core/page_pool.c`` lines 260,
383-417 and 793-805, ``include/linux/ptr_ring.h`` lines 287-335 and 509-516.
"""

from __future__ import annotations

from typing import Protocol

from reference.errors import StateViolation
from reference.page_pool.constants import (
    DMA_FROM_DEVICE,
    PP_ALLOC_CACHE_REFILL,
    PP_ALLOC_CACHE_SIZE,
    PP_RING_DEFAULT_SIZE,
)
from reference.page_pool.ptr_ring import PtrRing
from reference.trace import Trace, emit

from .area import Niov


class MemoryProvider(Protocol):
    """``struct memory_provider_ops`` as the pool calls it."""

    def alloc_netmems(self, pool: ZcPagePool) -> Niov | None: ...

    def release_netmem(self, pool: ZcPagePool, niov: Niov) -> bool: ...


class ZcPagePool:
    """A page_pool whose pages are the provider's niovs."""

    def __init__(self, pool_id: int, provider: MemoryProvider, *, order: int,
                 ring_size: int = PP_RING_DEFAULT_SIZE, trace: Trace | None = None) -> None:
        self.pool_id = pool_id
        self.provider = provider
        self.order = order
        self.cache: list[Niov] = []
        #: ``pool->ring``: batched slot release as for a page-backed pool (PP-RING-002).
        self.ring: PtrRing[Niov] = PtrRing(ring_size)
        self.ring_size = ring_size
        self.pages_state_hold_cnt = 0
        self.pages_state_release_cnt = 0
        self.detached = False
        self.trace = trace
        # operation counters (what the stream scenario reports, ZCRX-SIM-004)
        self.alloc_calls = 0
        self.alloc_fast = 0
        self.alloc_refill = 0
        self.mp_alloc_calls = 0
        self.ref_ops = 0
        self.unref_ops = 0
        self.recycle_cached = 0
        self.recycle_ring = 0
        self.releases = 0

    def __repr__(self) -> str:
        return (f"ZcPagePool({self.pool_id}, cache={len(self.cache)}, ring={len(self.ring)}, "
                f"inflight={self.inflight()})")

    def inflight(self) -> int:
        """``hold - release``: niovs that carry this pool (in its stores or out)."""
        return self.pages_state_hold_cnt - self.pages_state_release_cnt

    # -- allocation ------------------------------------------------------------------------
    def alloc_netmem(self) -> Niov | None:
        """``page_pool_alloc_netmems`` (ZCRX-MP-002): the alloc cache first, refilled from
        the ptr_ring when empty; only when both are empty is the provider asked."""
        if self.detached:
            raise StateViolation("allocation from a destroyed pool", obj=repr(self),
                                 rule="ZCRX-MP-006")
        self.alloc_calls += 1
        if self.cache:
            self.alloc_fast += 1
            niov = self.cache.pop()
        elif not self.ring.empty():
            while len(self.cache) < PP_ALLOC_CACHE_REFILL:
                got_ring = self.ring.consume()
                if got_ring is None:
                    break
                self.cache.append(got_ring)
            self.alloc_refill += 1
            emit(self.trace, "ZCRX-MP-002", "alloc cache refilled from the ptr_ring",
                 pool=self.pool_id, got=len(self.cache))
            niov = self.cache.pop()
        else:
            emit(self.trace, "ZCRX-MP-002", "cache and ring empty: asking the provider",
                 pool=self.pool_id)
            self.mp_alloc_calls += 1
            got = self.provider.alloc_netmems(self)
            if got is None:
                emit(self.trace, "ZCRX-MP-003", "provider had no niov: allocation fails",
                     pool=self.pool_id)
                return None
            niov = got
        niov.pp_ref_count = 1
        return niov

    def set_pp_info(self, niov: Niov) -> None:
        """``net_mp_niov_set_page_pool``: the niov now carries this pool; hold count + 1."""
        niov.pp = self
        niov.pp_ref_count = 0
        self.pages_state_hold_cnt += 1

    # -- references --------------------------------------------------------------------------
    def ref(self, niov: Niov) -> None:
        """``page_pool_ref_netmem``: one more holder."""
        self._own(niov)
        self.ref_ops += 1
        niov.pp_ref_count += 1

    def unref(self, niov: Niov, nr: int = 1) -> int:
        """``page_pool_unref_netmem``: drop ``nr`` holders, return what remains."""
        if niov.pp_ref_count < nr:
            raise StateViolation(f"dropping {nr} pool references of {niov.pp_ref_count}",
                                 obj=repr(niov), rule="ZCRX-MP-005")
        self.unref_ops += 1
        niov.pp_ref_count -= nr
        return niov.pp_ref_count

    def put(self, niov: Niov, *, allow_direct: bool = False) -> None:
        """``page_pool_put_netmem``: drop one holder; the last one recycles (ZCRX-MP-005)."""
        self._own(niov)
        if self.unref(niov) == 0:
            self.put_unrefed(niov, allow_direct=allow_direct)

    def put_unrefed(self, niov: Niov, *, allow_direct: bool = False) -> None:
        """``page_pool_put_unrefed_netmem``: recycle a niov nobody holds (ZCRX-MP-005).

        A destroyed pool keeps no store: the niov goes back to the provider at once (the
        kernel parks it in the ring until the release worker scrubs it; the model folds
        that delay away, ZCRX-MP-006)."""
        self._own(niov)
        if niov.pp_ref_count != 0:
            raise StateViolation("recycling a niov that is still referenced", obj=repr(niov),
                                 rule="ZCRX-MP-005")
        if self.detached:
            self.return_netmem(niov)
        elif allow_direct and len(self.cache) < PP_ALLOC_CACHE_SIZE:
            self.recycle_cached += 1
            self.cache.append(niov)
            emit(self.trace, "ZCRX-MP-005", "recycled into the alloc cache", niov=niov.index)
        elif self.ring.produce(niov):
            # page_pool_recycle_in_ring: only into an empty slot; slots the consumer has
            # read but not yet released still count as taken (PP-RING-002).
            self.recycle_ring += 1
            emit(self.trace, "ZCRX-MP-005", "recycled into the ptr_ring", niov=niov.index)
        else:
            self.return_netmem(niov)

    def return_netmem(self, niov: Niov) -> None:
        """``page_pool_return_netmem``: give the niov back to the provider; release + 1."""
        self.releases += 1
        self.provider.release_netmem(self, niov)
        self.pages_state_release_cnt += 1

    def destroy(self) -> None:
        """``page_pool_destroy`` as a queue restart or close runs it (ZCRX-MP-006): every
        niov in the cache and the ring goes back to the provider; niovs still out come back
        through :meth:`put_unrefed` later."""
        self.detached = True
        for niov in self.cache:
            self.return_netmem(niov)
        self.cache.clear()
        # page_pool_empty_ring: consume every unread entry, oldest first.
        while (niov_ring := self.ring.consume()) is not None:
            self.return_netmem(niov_ring)

    def _own(self, niov: Niov) -> None:
        if niov.pp is not self:
            raise StateViolation("niov does not belong to this pool", obj=repr(niov),
                                 rule="ZCRX-MP-005")


def pp_zc_init_check(*, order: int, niov_shift: int, page_shift: int, dma_map: bool = True,
                     dma_sync: bool = True, dma_dir: int = DMA_FROM_DEVICE,
                     same_dev: bool = True) -> tuple[int, str]:
    """``page_pool_init`` then ``io_pp_zc_init`` (ZCRX-MP-001): the checks on the
    driver's pool, in order.

    ``page_pool_init`` refuses a provider-backed pool that does not both DMA-map
    (``PP_FLAG_DMA_MAP``) and sync for the device (``PP_FLAG_DMA_SYNC_DEV``) with
    -EOPNOTSUPP before it calls the provider's ``init`` (Debian linux-source-7.3
    ``net/core/page_pool.c`` 282-286; the same check in 6.12's 288-292), so the provider's
    own ``dma_map`` test (a WARN) is never reached.  Returns ``(0, rule)`` or
    ``(-errno, rule)``.
    """
    import errno

    if not dma_map or not dma_sync:
        return -errno.EOPNOTSUPP, "ZCRX-MP-001"
    if not same_dev:
        return -errno.EINVAL, "ZCRX-MP-001"
    if order + page_shift != niov_shift:
        return -errno.EINVAL, "ZCRX-MP-001"
    if dma_dir != DMA_FROM_DEVICE:
        return -errno.EOPNOTSUPP, "ZCRX-MP-001"
    return 0, "ZCRX-MP-001"

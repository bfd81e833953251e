"""page_pool statistics and their ethtool view (PP-STATS-001 .. PP-STATS-003).

``struct page_pool_alloc_stats`` and ``struct page_pool_recycle_stats``
(include/net/page_pool/types.h) and the ``pp_stats[]`` string table with
``page_pool_ethtool_stats_get*`` (net/core/page_pool.c), v6.17-rc3.  The kernel keeps
the recycle counters per CPU and sums them; the model keeps one sum.
"""

from __future__ import annotations

import attrs


@attrs.define(slots=True)
class PagePoolAllocStats:
    """``struct page_pool_alloc_stats`` (PP-STATS-001)."""

    fast: int = 0
    slow: int = 0
    slow_high_order: int = 0
    empty: int = 0
    refill: int = 0
    waive: int = 0


@attrs.define(slots=True)
class PagePoolRecycleStats:
    """``struct page_pool_recycle_stats`` (PP-STATS-001)."""

    cached: int = 0
    cache_full: int = 0
    ring: int = 0
    ring_full: int = 0
    released_refcnt: int = 0


@attrs.define(slots=True)
class PagePoolStats:
    """``struct page_pool_stats``: the two groups side by side."""

    alloc_stats: PagePoolAllocStats = attrs.field(factory=PagePoolAllocStats)
    recycle_stats: PagePoolRecycleStats = attrs.field(factory=PagePoolRecycleStats)


#: ``pp_stats[]`` in kernel order (PP-STATS-003), with the field each string reports.
PP_STATS: tuple[tuple[str, str, str], ...] = (
    ("rx_pp_alloc_fast", "alloc_stats", "fast"),
    ("rx_pp_alloc_slow", "alloc_stats", "slow"),
    ("rx_pp_alloc_slow_ho", "alloc_stats", "slow_high_order"),
    ("rx_pp_alloc_empty", "alloc_stats", "empty"),
    ("rx_pp_alloc_refill", "alloc_stats", "refill"),
    ("rx_pp_alloc_waive", "alloc_stats", "waive"),
    ("rx_pp_recycle_cached", "recycle_stats", "cached"),
    ("rx_pp_recycle_cache_full", "recycle_stats", "cache_full"),
    ("rx_pp_recycle_ring", "recycle_stats", "ring"),
    ("rx_pp_recycle_ring_full", "recycle_stats", "ring_full"),
    ("rx_pp_recycle_released_ref", "recycle_stats", "released_refcnt"),
)

#: ``ETH_GSTRING_LEN``: every ethtool string occupies this many bytes.
ETH_GSTRING_LEN = 32


def page_pool_ethtool_stats_get_count() -> int:
    """Number of page_pool ethtool strings (11)."""
    return len(PP_STATS)


def page_pool_ethtool_stats_get_strings() -> tuple[str, ...]:
    """The ethtool strings in the order ``page_pool_ethtool_stats_get_strings`` writes."""
    return tuple(name for name, _, _ in PP_STATS)


def page_pool_ethtool_stats_get(stats: PagePoolStats) -> list[int]:
    """The values in string order, as ``page_pool_ethtool_stats_get`` writes them."""
    return [getattr(getattr(stats, group), field) for _, group, field in PP_STATS]


def ethtool_stats(stats: PagePoolStats) -> dict[str, int]:
    """Name -> value in kernel order (a convenience view of the two functions above)."""
    return dict(zip(page_pool_ethtool_stats_get_strings(), page_pool_ethtool_stats_get(stats),
                    strict=True))


def accumulate(into: PagePoolStats, alloc: PagePoolAllocStats,
               recycle: PagePoolRecycleStats) -> None:
    """Add one pool's counters into ``into`` (``page_pool_get_stats`` adds, PP-STATS-002)."""
    a, r = into.alloc_stats, into.recycle_stats
    a.fast += alloc.fast
    a.slow += alloc.slow
    a.slow_high_order += alloc.slow_high_order
    a.empty += alloc.empty
    a.refill += alloc.refill
    a.waive += alloc.waive
    r.cached += recycle.cached
    r.cache_full += recycle.cache_full
    r.ring += recycle.ring
    r.ring_full += recycle.ring_full
    r.released_refcnt += recycle.released_refcnt

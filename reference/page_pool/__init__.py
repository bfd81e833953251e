"""The page_pool model (SPEC part ``page_pool.md``, rule prefix PP-).

Kernel: ``net/core/page_pool.c``, ``include/net/page_pool/{types,helpers}.h``,
``include/linux/ptr_ring.h``, Kingxukai/linux v6.17-rc3.

Modules: ``constants`` (flags, sizes, :class:`Arch`), ``page`` (pages, page allocator,
DMA device), ``ptr_ring``, ``stats`` (counters and their ethtool view), ``params``
(``page_pool_params``, execution context, creation checks), ``pool`` (the pool: create,
alloc, put, NUMA, destroy), ``frag`` (fragment API), ``ledger`` (the conservation
check), ``api`` (kernel-named wrappers).

Typical use::

    dev = DmaDevice()
    res = page_pool_create(PagePoolParams(flags=PP_FLAG_DMA_MAP | PP_FLAG_DMA_SYNC_DEV,
                                          pool_size=256, dma_dir=DMA_FROM_DEVICE,
                                          max_len=3520, offset=256, dev=dev))
    pool = res.pool
    page = pool.alloc_pages(Context.softirq(cpu=0))
    pool.put_page(page, 128, allow_direct=True, ctx=Context.softirq(cpu=0))
    pool.check_conservation()
"""

from __future__ import annotations

from .api import (
    page_pool_alloc_pages,
    page_pool_destroy,
    page_pool_dev_alloc_pages,
    page_pool_disable_direct_recycling,
    page_pool_dma_sync_for_cpu,
    page_pool_enable_direct_recycling,
    page_pool_fragment_page,
    page_pool_get_dma_addr,
    page_pool_get_dma_dir,
    page_pool_get_stats,
    page_pool_inflight,
    page_pool_nid_changed,
    page_pool_put_full_page,
    page_pool_put_page,
    page_pool_put_unrefed_page,
    page_pool_recycle_direct,
    page_pool_ref_page,
    page_pool_release_retry,
    page_pool_unref_page,
    page_pool_update_nid,
    page_pool_use_xdp_mem,
)
from .constants import (
    ARM64_4K,
    ARM64_ARCH_DMA_MINALIGN,
    BIAS_MAX,
    DEFAULT_ARCH,
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
    PP_RING_DEFAULT_SIZE,
    PP_RING_SIZE_LIMIT,
    X86_64,
    XDP_BULK_QUEUE_SIZE,
    Arch,
    arm64_cache_line_size,
)
from .frag import (
    page_pool_alloc,
    page_pool_alloc_frag,
    page_pool_dev_alloc,
    page_pool_dev_alloc_frag,
)
from .ledger import conservation_problems
from .page import DmaDevice, DmaSync, Loc, Page, PageAllocator, get_page, put_page
from .params import (
    PROCESS_CONTEXT,
    Context,
    NapiStruct,
    PagePoolParams,
    page_pool_init_check,
)
from .pool import (
    CreateResult,
    PagePool,
    PoolState,
    PutOutcome,
    page_pool_create,
    page_pool_create_percpu,
    page_pool_put_netmem_bulk,
)
from .ptr_ring import PtrRing, ptr_ring_batch
from .stats import (
    PP_STATS,
    PagePoolAllocStats,
    PagePoolRecycleStats,
    PagePoolStats,
    ethtool_stats,
    page_pool_ethtool_stats_get,
    page_pool_ethtool_stats_get_count,
    page_pool_ethtool_stats_get_strings,
)

#: The bulk put under its page-based name as well.
page_pool_put_page_bulk = page_pool_put_netmem_bulk

__all__ = [
    "ARM64_4K",
    "ARM64_ARCH_DMA_MINALIGN",
    "BIAS_MAX",
    "DEFAULT_ARCH",
    "DMA_BIDIRECTIONAL",
    "DMA_FROM_DEVICE",
    "DMA_NONE",
    "DMA_TO_DEVICE",
    "NUMA_NO_NODE",
    "PP_ALLOC_CACHE_REFILL",
    "PP_ALLOC_CACHE_SIZE",
    "PP_FLAG_ALL",
    "PP_FLAG_ALLOW_UNREADABLE_NETMEM",
    "PP_FLAG_DMA_MAP",
    "PP_FLAG_DMA_SYNC_DEV",
    "PP_FLAG_SYSTEM_POOL",
    "PP_RING_DEFAULT_SIZE",
    "PP_RING_SIZE_LIMIT",
    "PP_STATS",
    "PROCESS_CONTEXT",
    "X86_64",
    "XDP_BULK_QUEUE_SIZE",
    "Arch",
    "Context",
    "CreateResult",
    "DmaDevice",
    "DmaSync",
    "Loc",
    "NapiStruct",
    "Page",
    "PageAllocator",
    "PagePool",
    "PagePoolAllocStats",
    "PagePoolParams",
    "PagePoolRecycleStats",
    "PagePoolStats",
    "PoolState",
    "PtrRing",
    "PutOutcome",
    "arm64_cache_line_size",
    "conservation_problems",
    "ethtool_stats",
    "get_page",
    "page_pool_alloc",
    "page_pool_alloc_frag",
    "page_pool_alloc_pages",
    "page_pool_create",
    "page_pool_create_percpu",
    "page_pool_destroy",
    "page_pool_dev_alloc",
    "page_pool_dev_alloc_frag",
    "page_pool_dev_alloc_pages",
    "page_pool_disable_direct_recycling",
    "page_pool_dma_sync_for_cpu",
    "page_pool_enable_direct_recycling",
    "page_pool_ethtool_stats_get",
    "page_pool_ethtool_stats_get_count",
    "page_pool_ethtool_stats_get_strings",
    "page_pool_fragment_page",
    "page_pool_get_dma_addr",
    "page_pool_get_dma_dir",
    "page_pool_get_stats",
    "page_pool_inflight",
    "page_pool_init_check",
    "page_pool_nid_changed",
    "page_pool_put_full_page",
    "page_pool_put_netmem_bulk",
    "page_pool_put_page",
    "page_pool_put_page_bulk",
    "page_pool_put_unrefed_page",
    "page_pool_recycle_direct",
    "page_pool_ref_page",
    "page_pool_release_retry",
    "page_pool_unref_page",
    "page_pool_update_nid",
    "page_pool_use_xdp_mem",
    "ptr_ring_batch",
    "put_page",
]

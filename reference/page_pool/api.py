"""Kernel-named entry points, so a driver model reads like the driver.

Thin wrappers over :class:`PagePool` methods; the rules are named where they are
implemented (``pool.py``, ``frag.py``).  Each wrapper mirrors the signature of the
kernel function, with the model's extra ``ctx`` (execution context) and ``trace``.
"""

from __future__ import annotations

from reference.errors import StateViolation
from reference.trace import Trace

from .page import Page
from .params import Context, NapiStruct
from .pool import PagePool, PutOutcome
from .stats import PagePoolStats


def _pool_of(page: Page, what: str) -> PagePool:
    pool = page.pp
    if pool is None:
        raise StateViolation(f"{what}: not a page pool page", obj=repr(page),
                             rule="PP-RECYCLE-010")
    return pool


def page_pool_alloc_pages(pool: PagePool, ctx: Context | None = None,
                          trace: Trace | None = None) -> Page | None:
    return pool.alloc_pages(ctx, trace)


def page_pool_dev_alloc_pages(pool: PagePool, ctx: Context | None = None,
                              trace: Trace | None = None) -> Page | None:
    """PP-ALLOC-008: GFP_ATOMIC | __GFP_NOWARN; the model does not model gfp flags."""
    return pool.alloc_pages(ctx, trace)


def page_pool_put_page(pool: PagePool, page: Page, dma_sync_size: int, allow_direct: bool,
                       ctx: Context | None = None, trace: Trace | None = None) -> PutOutcome:
    return pool.put_page(page, dma_sync_size, allow_direct, ctx, trace)


def page_pool_put_full_page(pool: PagePool, page: Page, allow_direct: bool,
                            ctx: Context | None = None,
                            trace: Trace | None = None) -> PutOutcome:
    return pool.put_full_page(page, allow_direct, ctx, trace)


def page_pool_recycle_direct(pool: PagePool, page: Page, ctx: Context | None = None,
                             trace: Trace | None = None) -> PutOutcome:
    return pool.recycle_direct(page, ctx, trace)


def page_pool_put_unrefed_page(pool: PagePool, page: Page, dma_sync_size: int,
                               allow_direct: bool, ctx: Context | None = None,
                               trace: Trace | None = None) -> PutOutcome:
    return pool.put_unrefed_page(page, dma_sync_size, allow_direct, ctx, trace)


def page_pool_ref_page(page: Page) -> None:
    _pool_of(page, "page_pool_ref_page").ref_page(page)


def page_pool_fragment_page(page: Page, nr: int, trace: Trace | None = None) -> None:
    _pool_of(page, "page_pool_fragment_page").fragment_page(page, nr, trace)


def page_pool_unref_page(page: Page, nr: int, trace: Trace | None = None) -> int:
    return _pool_of(page, "page_pool_unref_page").unref_page(page, nr, trace)


def page_pool_update_nid(pool: PagePool, new_nid: int, trace: Trace | None = None) -> None:
    pool.update_nid(new_nid, trace)


def page_pool_nid_changed(pool: PagePool, new_nid: int, trace: Trace | None = None) -> None:
    pool.nid_changed(new_nid, trace)


def page_pool_destroy(pool: PagePool | None, trace: Trace | None = None) -> None:
    """``page_pool_destroy``; None is accepted and ignored, as in the kernel."""
    if pool is not None:
        pool.destroy(trace)


def page_pool_use_xdp_mem(pool: PagePool) -> None:
    pool.use_xdp_mem()


def page_pool_release_retry(pool: PagePool, trace: Trace | None = None) -> int:
    return pool.release_retry(trace)


def page_pool_inflight(pool: PagePool, strict: bool) -> int:
    return pool.inflight(strict)


def page_pool_get_stats(pool: PagePool, stats: PagePoolStats | None) -> bool:
    return pool.get_stats(stats)


def page_pool_enable_direct_recycling(pool: PagePool, napi: NapiStruct | None,
                                      trace: Trace | None = None) -> bool:
    """PP-DESTROY-008; True when the kernel would have WARNed (see ``pool.warnings``)."""
    return pool.enable_direct_recycling(napi, trace)


def page_pool_disable_direct_recycling(pool: PagePool) -> None:
    pool.disable_direct_recycling()


def page_pool_get_dma_addr(page: Page) -> int:
    return page.dma_addr


def page_pool_get_dma_dir(pool: PagePool) -> int:
    return pool.dma_dir


def page_pool_dma_sync_for_cpu(pool: PagePool, page: Page, offset: int,
                               dma_sync_size: int) -> None:
    """``page_pool_dma_sync_for_cpu`` (PP-DMA-005): always syncs, at dma + offset +
    ``p.offset``, whatever the pool's sync-for-device setting."""
    pool.dev.sync_for_cpu(page, page.dma_addr + offset + pool.offset, dma_sync_size,
                          pool.dma_dir)

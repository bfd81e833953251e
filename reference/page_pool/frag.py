"""The page_pool fragment API (PP-FRAG-001 .. PP-FRAG-007).

``page_pool_alloc_frag_netmem`` / ``page_pool_drain_frag`` (net/core/page_pool.c) and
``page_pool_alloc_netmem`` (include/net/page_pool/helpers.h), v6.17-rc3.

The pool carves its current ``frag_page`` front to back.  While a page is being
carved its ``pp_ref_count`` carries a bias of ``BIAS_MAX``; each fragment handed out
counts in ``frag_users``, each fragment returned drops one reference.  When the next
fragment does not fit, the pool drops the part of the bias no user took
(``BIAS_MAX - frag_users``): if nothing remains the page is reused on the spot.
"""

from __future__ import annotations

from reference.errors import StateViolation
from reference.trace import Trace, emit

from .constants import BIAS_MAX
from .page import Loc, Page
from .params import Context
from .pool import PagePool, PoolState


def _align(size: int, alignment: int) -> int:
    return (size + alignment - 1) // alignment * alignment


def _drain_frag(pool: PagePool, page: Page, trace: Trace | None) -> Page | None:
    """``page_pool_drain_frag`` (PP-FRAG-005): the page if it can be reused now."""
    if pool._unref(page, BIAS_MAX - pool.frag_users):
        emit(trace, "PP-FRAG-005", "frag page full: left to the fragments still out",
             pfn=page.pfn, pp_ref_count=page.pp_ref_count)
        return None
    if page._refcount == 1 and not page.pfmemalloc:
        pool._sync_for_device(page, -1)
        return page
    pool._return_page(page)
    emit(trace, "PP-FRAG-005", "frag page full, no fragment out, not recyclable: released",
         pfn=page.pfn)
    return None


def page_pool_alloc_frag(
    pool: PagePool, size: int, ctx: Context | None = None, trace: Trace | None = None
) -> tuple[Page, int] | None:
    """``page_pool_alloc_frag``: ``(page, offset)`` of a ``size``-byte fragment, or None.

    One pp reference is handed out per fragment; return it with ``page_pool_put_page``.
    """
    if pool.state is not PoolState.ALIVE:
        raise StateViolation(f"page_pool_alloc_frag on a pool that is {pool.state.value}",
                             obj="page_pool", rule="PP-ALLOC-009")
    max_size = pool.arch.page_size << pool.order
    if size > max_size:
        # PP-FRAG-001: the kernel WARNs and returns NULL, touching nothing.
        pool.warnings.append(f"page_pool_alloc_frag: WARN_ON: size {size} > {max_size}")
        emit(trace, "PP-FRAG-001", "WARN: fragment larger than the page; NULL", size=size,
             max_size=max_size)
        return None
    aligned = _align(size, pool.arch.dma_cache_alignment)  # PP-FRAG-002
    if aligned != size:
        emit(trace, "PP-FRAG-002", "size rounded up to the DMA cache alignment", size=size,
             aligned=aligned, alignment=pool.arch.dma_cache_alignment)
    size = aligned
    offset = pool.frag_offset
    page = pool.frag_page
    reuse = False
    if page is not None and offset + size > max_size:
        page = _drain_frag(pool, page, trace)
        if page is not None:
            pool.recycle_stats.cached += 1
            pool.alloc_stats.fast += 1
            reuse = True
            emit(trace, "PP-FRAG-005", "frag page drained and reused in place", pfn=page.pfn)
    if page is None:
        page = pool._alloc(ctx, trace)
        if page is None:
            pool.frag_page = None
            emit(trace, "PP-FRAG-004", "no page for a new fragment")
            return None
        page.loc = Loc.IN_FLIGHT
        pool.frag_page = page
        reuse = True
    if reuse:
        # PP-FRAG-004: frag_reset.
        pool.frag_users = 1
        pool.frag_offset = size
        page.pp_ref_count = BIAS_MAX
        page.refs_out = 1
        emit(trace, "PP-FRAG-004", "fragment at the start of a page", pfn=page.pfn, size=size)
        return page, 0
    # PP-FRAG-003: the fragment fits in the current page.
    pool.frag_users += 1
    pool.frag_offset = offset + size
    page.refs_out += 1
    emit(trace, "PP-FRAG-003", "fragment from the current page", pfn=page.pfn, offset=offset,
         size=size)
    return page, offset


def page_pool_dev_alloc_frag(
    pool: PagePool, size: int, ctx: Context | None = None, trace: Trace | None = None
) -> tuple[Page, int] | None:
    """``page_pool_dev_alloc_frag``: the same with GFP_ATOMIC (PP-ALLOC-008)."""
    return page_pool_alloc_frag(pool, size, ctx, trace)


def page_pool_alloc(
    pool: PagePool, size: int, ctx: Context | None = None, trace: Trace | None = None
) -> tuple[Page, int, int] | None:
    """``page_pool_alloc`` (helpers.h ``page_pool_alloc_netmem``, PP-FRAG-006):
    ``(page, offset, truesize)``.  More than half a page gets a whole page; otherwise
    a fragment, grown to the end of the page when no further fragment would fit."""
    max_size = pool.arch.page_size << pool.order
    if size << 1 > max_size:
        page = pool.alloc_pages(ctx, trace)
        return None if page is None else (page, 0, max_size)
    got = page_pool_alloc_frag(pool, size, ctx, trace)
    if got is None:
        return None
    page, offset = got
    if pool.frag_offset + size > max_size:
        size = max_size - offset
        pool.frag_offset = max_size
    return page, offset, size


def page_pool_dev_alloc(
    pool: PagePool, size: int, ctx: Context | None = None, trace: Trace | None = None
) -> tuple[Page, int, int] | None:
    """``page_pool_dev_alloc``: :func:`page_pool_alloc` with GFP_ATOMIC (PP-ALLOC-008)."""
    return page_pool_alloc(pool, size, ctx, trace)

"""The page ledger check (PP-LEDGER-001): every page in exactly one place.

Not a kernel mechanism: the model's own bookkeeping, checked against the pool's
containers and counters so that any test can assert conservation after any step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .constants import BIAS_MAX, PP_ALLOC_CACHE_SIZE, U32_MASK
from .page import Loc

if TYPE_CHECKING:
    from .pool import PagePool

_CACHE = Loc.ALLOC_CACHE
_RING = Loc.PTR_RING
_FLIGHT = Loc.IN_FLIGHT
_RELEASED = Loc.RELEASED


def conservation_problems(pool: PagePool, *, full: bool = False) -> list[str]:
    """The checks behind :meth:`PagePool.check_conservation` as a list of messages."""
    out: list[str] = []
    sig = pool.arch.pp_signature
    seen: set[int] = set()
    cache = pool.alloc_cache
    if len(cache) > PP_ALLOC_CACHE_SIZE:
        out.append(f"alloc cache holds {len(cache)} > {PP_ALLOC_CACHE_SIZE}")
    for page in cache:
        if page.pfn in seen:
            out.append(f"{page!r} twice in the alloc cache")
        seen.add(page.pfn)
        if page.loc is not _CACHE:
            out.append(f"{page!r} in the alloc cache but marked {page.loc}")
    ring_pages = list(pool.ring)
    if len(ring_pages) > pool.ring.size:
        out.append("ring holds more entries than slots")
    for page in ring_pages:
        if page.pfn in seen:
            out.append(f"{page!r} in two places (ring)")
        seen.add(page.pfn)
        if page.loc is not _RING:
            out.append(f"{page!r} in the ring but marked {page.loc}")
    n_flight = 0
    for pfn, page in pool._live.items():
        if page.pfn != pfn or page.owner is not pool or page.pp is not pool:
            out.append(f"{page!r} live but not owned by this pool")
        if page.pp_magic != sig:
            out.append(f"{page!r} live without PP_SIGNATURE")
        if page.loc is _FLIGHT:
            n_flight += 1
            if page is pool.frag_page:
                expect = BIAS_MAX - pool.frag_users + page.refs_out
            else:
                expect = page.refs_out if page.refs_out else 1
            if page.pp_ref_count != expect:
                out.append(f"{page!r} pp_ref_count {page.pp_ref_count} != {expect}")
        elif page.loc is _CACHE or page.loc is _RING:
            if page.pfn not in seen:
                out.append(f"{page!r} marked {page.loc} but not found there")
            if page.refs_out or page.pp_ref_count != 1:
                out.append(f"{page!r} parked with references out")
        else:
            out.append(f"{page!r} live but marked {page.loc}")
        if pool.dma_map and pool.destroy_cnt == 0 and not page.dma_index:
            out.append(f"{page!r} live in a DMA pool but unmapped")
    if len(seen) != len(cache) + len(ring_pages):
        out.append("a page sits in both the cache and the ring")
    n_live = len(pool._live)
    if n_live != len(cache) + len(ring_pages) + n_flight:
        out.append(f"live {n_live} != cache {len(cache)} + ring {len(ring_pages)} "
                   f"+ in flight {n_flight}")
    inflight = pool.inflight(strict=True)
    if inflight != n_live:
        out.append(f"inflight {inflight} != pages held {n_live}")
    if pool.pages_state_hold_cnt != pool._n_pages & U32_MASK:
        out.append("hold count differs from pages accounted")
    fp = pool.frag_page
    if fp is not None and (fp.loc is not _FLIGHT or fp.owner is not pool):
        out.append(f"frag page {fp!r} is not in flight")
    for ident, page in pool.dma_mapped.items():
        if page.dma_index != ident or not page.dma_addr:
            out.append(f"dma_mapped[{ident}] = {page!r} disagrees with the page")
    if full:
        released = 0
        for page in pool._pages:
            if page.loc is _RELEASED:
                released += 1
                if page.pp is not None or page.pp_magic or page.pfn in pool._live:
                    out.append(f"{page!r} released but still marked as a pool page")
                if page.dma_index and pool.dma_mapped.get(page.dma_index) is page:
                    out.append(f"{page!r} released but still DMA-mapped")
        if released & U32_MASK != pool.pages_state_release_cnt:
            out.append(f"released pages {released} != release_cnt "
                       f"{pool.pages_state_release_cnt}")
    return out

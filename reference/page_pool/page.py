"""Pages, the page allocator and the DMA device the page_pool model works against.

A :class:`Page` is an explicit object with an identity (its ``pfn``) and the fields the
kernel keeps in ``struct page`` / ``struct netmem_desc`` for page_pool use (PP-PAGE-001),
plus two fields that only the model keeps: ``loc`` (where the page is, PP-LEDGER-002)
and ``refs_out`` (how many page_pool references the pool has handed out and not had
back), which lets the model refuse a double put instead of corrupting itself.

:class:`PageAllocator` stands in for the buddy allocator and :class:`DmaDevice` for
``pool->p.dev``; both take failure injections so tests can drive every error path.
"""

from __future__ import annotations

import enum
import heapq
from typing import TYPE_CHECKING, NamedTuple

from reference.errors import StateViolation

from .constants import DEFAULT_ARCH, NUMA_NO_NODE, Arch

if TYPE_CHECKING:
    from .pool import PagePool


class Loc(enum.Enum):
    """Where a page of a pool is (PP-LEDGER-002): exactly one of these at any time."""

    ALLOC_CACHE = "alloc_cache"
    PTR_RING = "ptr_ring"
    IN_FLIGHT = "in_flight"
    RELEASED = "released"


class Page:
    """One (possibly compound) page: the fields page_pool reads and writes (PP-PAGE-001).

    Kernel fields: ``pp`` (owning pool or None), ``pp_magic`` (``PP_SIGNATURE`` while the
    page belongs to a pool, else 0), ``pp_ref_count``, ``_refcount`` (the mm reference
    count), ``nid``, ``pfmemalloc``, ``dma_addr`` (0 when unmapped) and ``dma_index`` (the
    id in the pool's ``dma_mapped`` xarray; the kernel packs it into ``pp_magic``).
    Model fields: ``owner`` (the pool that accounted the page; kept after release),
    ``loc`` and ``refs_out``.
    """

    __slots__ = (
        "_refcount",
        "allocator",
        "dma_addr",
        "dma_index",
        "loc",
        "nid",
        "order",
        "owner",
        "pfmemalloc",
        "pfn",
        "pp",
        "pp_magic",
        "pp_ref_count",
        "refs_out",
    )

    def __init__(
        self,
        pfn: int,
        *,
        order: int = 0,
        nid: int = 0,
        pfmemalloc: bool = False,
        allocator: PageAllocator | None = None,
    ) -> None:
        self.pfn = pfn
        self.order = order
        self.nid = nid
        self.pfmemalloc = pfmemalloc
        self._refcount = 1
        self.allocator = allocator
        self.pp: PagePool | None = None
        self.pp_magic = 0
        self.pp_ref_count = 0
        self.dma_addr = 0
        self.dma_index = 0
        self.owner: PagePool | None = None
        self.loc: Loc | None = None
        self.refs_out = 0

    @property
    def refcount(self) -> int:
        """``page_ref_count(page)``."""
        return self._refcount

    def __repr__(self) -> str:
        loc = self.loc.value if self.loc else "-"
        return (
            f"Page(pfn={self.pfn:#x}, nid={self.nid}, {loc}, pp_ref={self.pp_ref_count}, "
            f"ref={self._refcount}, out={self.refs_out})"
        )


def get_page(page: Page) -> None:
    """Take an extra mm reference (``get_page``), e.g. someone else holds the page.

    PP-PAGE-002: while ``_refcount`` is above 1 the pool will not recycle the page.
    """
    if page._refcount <= 0:
        raise StateViolation("get_page on a freed page", obj=repr(page), rule="PP-PAGE-002")
    page._refcount += 1


def put_page(page: Page) -> None:
    """Drop an mm reference (``put_page``); the last one frees the page (PP-PAGE-002).

    Freeing a page that still carries a pool's signature is what mm reports as a bad
    page (``page_pool_page_is_pp`` in the free path), so the model refuses it.
    """
    if page._refcount <= 0:
        raise StateViolation("put_page on a freed page", obj=repr(page), rule="PP-PAGE-002")
    if page._refcount == 1 and page.pp is not None:
        raise StateViolation(
            "last put_page of a page a page_pool still owns", obj=repr(page), rule="PP-PAGE-002"
        )
    page._refcount -= 1
    if page._refcount == 0 and page.allocator is not None:
        page.allocator._free(page)


class DmaSync(NamedTuple):
    """One ``dma_sync_single_for_{device,cpu}`` call: the page, bus address, length, dir."""

    pfn: int
    addr: int
    size: int
    dir: int


class DmaDevice:
    """``pool->p.dev`` as far as page_pool uses it (model convention).

    Maps pages at ``pfn << PAGE_SHIFT`` (an identity IOVA), records every sync as a
    :class:`DmaSync` (``syncs_for_device`` / ``syncs_for_cpu``) so driver models can be
    checked against the lengths they ask for, and can be told to fail the next N
    mappings (``fail_map_next``).  ``need_sync`` is ``dma_dev_need_sync(dev)``: False for
    a coherent device on the direct mapping, where page_pool skips every device sync.
    With ``record=False`` only the call counters are kept (long per-packet runs).
    """

    __slots__ = ("device_syncs", "fail_map_next", "maps", "need_sync", "record",
                 "syncs_for_cpu", "syncs_for_device", "unmaps")

    def __init__(self, *, need_sync: bool = True, record: bool = True) -> None:
        self.need_sync = need_sync
        self.record = record
        self.fail_map_next = 0
        self.syncs_for_device: list[DmaSync] = []
        self.syncs_for_cpu: list[DmaSync] = []
        self.maps = 0
        self.unmaps = 0
        self.device_syncs = 0

    def map_page(self, page: Page, page_shift: int) -> int:
        """``dma_map_page_attrs``: the bus address, or 0 for ``dma_mapping_error``."""
        if self.fail_map_next > 0:
            self.fail_map_next -= 1
            return 0
        self.maps += 1
        return page.pfn << page_shift

    def unmap_page(self) -> None:
        self.unmaps += 1

    def sync_for_device(self, page: Page, addr: int, size: int, dir: int) -> None:
        self.device_syncs += 1
        if self.record:
            self.syncs_for_device.append(DmaSync(page.pfn, addr, size, dir))

    def sync_for_cpu(self, page: Page, addr: int, size: int, dir: int) -> None:
        if self.record:
            self.syncs_for_cpu.append(DmaSync(page.pfn, addr, size, dir))


class PageAllocator:
    """The buddy allocator as page_pool sees it (model convention), with failure injection.

    * ``fail(n)``: the next ``n`` allocation requests fail (a bulk request that fails
      returns no page at all);
    * ``bulk_limit``: a bulk request returns at most this many pages (the kernel's
      ``alloc_pages_bulk_node`` may return fewer than asked);
    * ``force_nid``: every page comes from this node whatever was asked (node exhausted,
      fallback elsewhere) — how tests make pages of a foreign node;
    * ``pfmemalloc_next``: the next N pages are marked pfmemalloc (allocated from
      emergency reserves).

    Pages get fresh, increasing pfns (a compound page of order k takes 2**k of them), so
    a pfn names one page for the whole run.  Requests above ``MAX_PAGE_ORDER`` fail, as
    ``__alloc_pages`` refuses them (PP-INIT-007).
    """

    __slots__ = ("_next_pfn", "allocated", "arch", "bulk_limit", "fail_next", "force_nid",
                 "freed", "pfmemalloc_next")

    def __init__(self, arch: Arch = DEFAULT_ARCH, *, first_pfn: int = 0x1000) -> None:
        self.arch = arch
        self._next_pfn = first_pfn
        self.fail_next = 0
        self.bulk_limit: int | None = None
        self.force_nid: int | None = None
        self.pfmemalloc_next = 0
        self.allocated = 0
        self.freed = 0

    @property
    def live(self) -> int:
        """Pages handed out and not yet freed."""
        return self.allocated - self.freed

    def fail(self, n: int = 1) -> None:
        self.fail_next += n

    def _node(self, nid: int, local_nid: int) -> int:
        if self.force_nid is not None:
            return self.force_nid
        return local_nid if nid == NUMA_NO_NODE else nid

    def _new(self, order: int, nid: int) -> Page:
        """A fresh page: the next ``2**order`` pfns, so its DMA address (``pfn <<
        PAGE_SHIFT``, PP-ALLOC-005) is one no other page of the run has; one mm reference
        (PP-PAGE-002); pfmemalloc while ``pfmemalloc_next`` lasts (PP-RECYCLE-003)."""
        pfm = False
        if self.pfmemalloc_next > 0:
            self.pfmemalloc_next -= 1
            pfm = True
        page = Page(self._next_pfn, order=order, nid=nid, pfmemalloc=pfm, allocator=self)
        self._next_pfn += 1 << order
        self.allocated += 1
        return page

    def alloc_pages_node(self, nid: int, order: int, local_nid: int) -> Page | None:
        """``alloc_pages_node``: one page of ``order`` or None, as the high-order slow path
        asks for it (PP-ALLOC-006); an order above ``MAX_PAGE_ORDER`` fails (PP-INIT-007)."""
        if order > self.arch.max_page_order:
            return None
        if self.fail_next > 0:
            self.fail_next -= 1
            return None
        return self._new(order, self._node(nid, local_nid))

    def alloc_pages_bulk_node(self, nid: int, nr: int, local_nid: int) -> list[Page]:
        """``alloc_pages_bulk_node``: up to ``nr`` order-0 pages, possibly fewer or none, in
        the order the slow path pushes them into the cache (PP-ALLOC-004)."""
        if self.fail_next > 0:
            self.fail_next -= 1
            return []
        if self.bulk_limit is not None:
            nr = min(nr, self.bulk_limit)
        node = self._node(nid, local_nid)
        return [self._new(0, node) for _ in range(nr)]

    def _free(self, page: Page) -> None:
        self.freed += 1


class IdAllocator:
    """Lowest-free id allocation from 1 upwards, as ``xa_alloc`` on an ALLOC1 xarray."""

    __slots__ = ("_free", "_next")

    def __init__(self) -> None:
        self._free: list[int] = []
        self._next = 1

    def alloc(self) -> int:
        if self._free:
            return heapq.heappop(self._free)
        nid = self._next
        self._next += 1
        return nid

    def release(self, ident: int) -> None:
        heapq.heappush(self._free, ident)

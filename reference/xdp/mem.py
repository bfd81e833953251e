"""XDP memory types and where a returned buffer goes (XDP-MEM-001 .. XDP-MEM-004).

``__xdp_return`` (``net/core/xdp.c``) dispatches on the memory type registered for an
RX queue.  The model does not free anything: it returns a :class:`MemReturn` record that
names the page, the path the kernel would take and whether the page_pool may recycle
it directly.  A driver or page_pool model dispatches on :attr:`MemReturn.path`; this
module has no page_pool dependency.
"""

from __future__ import annotations

import enum

import attrs

from reference.errors import StateViolation
from reference.trace import Trace, emit
from reference.xdp.memory import Page
from reference.xdp.warn import kernel_warn


class MemType(enum.IntEnum):
    """``enum xdp_mem_type`` (include/net/xdp.h) (XDP-MEM-001)."""

    MEM_TYPE_PAGE_SHARED = 0  # split-page refcount model, page_frag_free()
    MEM_TYPE_PAGE_ORDER0 = 1  # one full page per buffer, put_page()
    MEM_TYPE_PAGE_POOL = 2
    MEM_TYPE_XSK_BUFF_POOL = 3
    MEM_TYPE_MAX = 4


@attrs.define
class XdpMemInfo:
    """``struct xdp_mem_info``: the type and the allocator id (u32 each)."""

    type: int = MemType.MEM_TYPE_PAGE_SHARED
    id: int = 0


class ReturnPath(enum.Enum):
    """What ``__xdp_return`` calls for each memory type (XDP-MEM-002)."""

    PAGE_POOL_PUT_FULL = "page_pool_put_full_netmem"
    PAGE_FRAG_FREE = "page_frag_free"
    PUT_PAGE = "put_page"
    XSK_BUFF_FREE = "xsk_buff_free"
    #: ``xdp_flush_frame_bulk`` -> ``page_pool_put_netmem_bulk`` (XDP-MEM-004).
    PAGE_POOL_PUT_BULK = "page_pool_put_netmem_bulk"
    #: ``__xdp_return``'s ``default`` case: a WARN, and nothing frees the page (XDP-MEM-002).
    WARN_LEAKED = "WARN: incorrect memory type, page leaked"


#: XDP-MEM-002: the dispatch table of ``__xdp_return``.
RETURN_PATH: dict[int, ReturnPath] = {
    MemType.MEM_TYPE_PAGE_POOL: ReturnPath.PAGE_POOL_PUT_FULL,
    MemType.MEM_TYPE_PAGE_SHARED: ReturnPath.PAGE_FRAG_FREE,
    MemType.MEM_TYPE_PAGE_ORDER0: ReturnPath.PUT_PAGE,
    MemType.MEM_TYPE_XSK_BUFF_POOL: ReturnPath.XSK_BUFF_FREE,
}


@attrs.frozen
class MemReturn:
    """One buffer handed back: which page, by which path, direct-recycle allowed or not.

    ``napi_direct`` is the value the page_pool receives (only meaningful for
    ``PAGE_POOL_PUT_FULL``); ``caller`` names the kernel function that returned it.
    """

    page: Page
    mem_type: int
    path: ReturnPath
    napi_direct: bool
    caller: str


def xdp_return(
    page: Page,
    mem_type: int,
    napi_direct: bool,
    *,
    from_xdp_buff: bool,
    caller: str,
    return_frame_no_direct: bool = False,
    trace: Trace | None = None,
) -> MemReturn:
    """``__xdp_return``: decide how ``page`` goes back (XDP-MEM-002).

    A memory type outside the enum is the kernel's WARN case: the record's path is
    :attr:`ReturnPath.WARN_LEAKED` (no callee frees the page) and the WARN is traced.

    ``return_frame_no_direct`` is ``xdp_return_frame_no_direct()``, the per-CPU
    ``BPF_RI_F_RF_NO_DIRECT`` flag; when set, page_pool returns never recycle directly.
    ``from_xdp_buff`` says whether the caller passed an ``xdp_buff``: the XSK path frees
    that buffer and has nothing to free without one.
    """
    path = RETURN_PATH.get(mem_type)
    if path is None:
        # The kernel WARNs ("Incorrect XDP memory type (%d) usage") and carries on: nothing
        # frees the page.  The record with path WARN_LEAKED is the observable.
        kernel_warn(None, trace, rule="XDP-MEM-002", function="__xdp_return",
                    message=f"Incorrect XDP memory type ({mem_type}) usage",
                    mem_type=mem_type, caller=caller)
        return MemReturn(page, mem_type, ReturnPath.WARN_LEAKED, False, caller)
    if path is ReturnPath.XSK_BUFF_FREE and not from_xdp_buff:
        # xsk_buff_free(NULL) would dereference a NULL xdp_buff.
        raise StateViolation("MEM_TYPE_XSK_BUFF_POOL return without an xdp_buff",
                             obj="xdp_frame", rule="XDP-MEM-002")
    if path is ReturnPath.PAGE_POOL_PUT_FULL:
        direct = napi_direct and not return_frame_no_direct
    else:
        direct = False
    emit(trace, "XDP-MEM-002", f"return via {path.value}", mem_type=mem_type,
         napi_direct=direct, caller=caller)
    return MemReturn(page, mem_type, path, direct, caller)


#: ``XDP_BULK_QUEUE_SIZE`` (include/net/xdp.h).
XDP_BULK_QUEUE_SIZE = 16


@attrs.define
class XdpFrameBulk:
    """``struct xdp_frame_bulk``: up to 16 page_pool pages waiting for one bulk put."""

    q: list[Page] = attrs.field(factory=list)

    @property
    def count(self) -> int:
        return len(self.q)


def xdp_flush_frame_bulk(bq: XdpFrameBulk, *, trace: Trace | None = None) -> list[MemReturn]:
    """Hand every queued page to ``page_pool_put_netmem_bulk`` and empty the queue
    (XDP-MEM-004).  The bulk put takes no ``napi_direct`` argument."""
    out = [MemReturn(p, MemType.MEM_TYPE_PAGE_POOL, ReturnPath.PAGE_POOL_PUT_BULK, False,
                     "xdp_flush_frame_bulk") for p in bq.q]
    emit(trace, "XDP-MEM-004", "bulk queue flushed", pages=len(out))
    bq.q.clear()
    return out


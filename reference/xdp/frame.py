"""``struct xdp_frame``: the buffer converted for TX and redirect (XDP-FRAME-001 .. 007).

``xdp_convert_buff_to_frame`` does not allocate: it writes a 40-byte ``struct
xdp_frame`` at ``data_hard_start``, in the packet's own headroom, and returns a pointer
to it.  The model does the same: :class:`XdpFrame` is a view of those 40 bytes in the
page, packed and unpacked with :data:`XDP_FRAME_STRUCT`.  Fields the conversion does not
write (``dev_rx``) keep whatever bytes the headroom held.

Pointer fields cannot hold real addresses, so the model stores ``data`` as its byte
offset in the page and ``dev_rx`` as the device's ifindex, 0 standing for NULL in both
(a model convention; the layout and the field sizes are the kernel's).
"""

from __future__ import annotations

import errno
import struct
from collections.abc import Callable

import attrs

from reference.errors import StateViolation, Truncated
from reference.trace import Trace, emit
from reference.xdp.arch import X86_64, Arch
from reference.xdp.buff import (
    XDP_FLAGS_FRAGS_PF_MEMALLOC,
    XDP_FLAGS_HAS_FRAGS,
    XdpBuff,
    xdp_data_hard_end,
    xdp_data_meta_unsupported,
)
from reference.xdp.mem import (
    XDP_BULK_QUEUE_SIZE,
    MemReturn,
    MemType,
    XdpFrameBulk,
    xdp_flush_frame_bulk,
    xdp_return,
)
from reference.xdp.memory import Page, PageMemory, SkbSharedInfo
from reference.xdp.warn import KernelWarn, kernel_warn

#: ``struct xdp_frame`` on LP64, little endian: data (pointer), len, headroom, metasize,
#: mem_type (a 32-bit enum bit-field), dev_rx (pointer), frame_sz, flags (XDP-FRAME-001).
XDP_FRAME_STRUCT = struct.Struct("<QIIIIQII")

#: (field, byte offset, size) of ``struct xdp_frame`` on LP64 (XDP-FRAME-001).
XDP_FRAME_LAYOUT: tuple[tuple[str, int, int], ...] = (
    ("data", 0, 8),
    ("len", 8, 4),
    ("headroom", 12, 4),
    ("metasize", 16, 4),
    ("mem_type", 20, 4),
    ("dev_rx", 24, 8),
    ("frame_sz", 32, 4),
    ("flags", 36, 4),
)


@attrs.frozen
class XdpFrameHeader:
    """The 40 bytes of a ``struct xdp_frame`` (XDP-FRAME-001)."""

    data: int
    len: int
    headroom: int
    metasize: int
    mem_type: int
    dev_rx: int
    frame_sz: int
    flags: int

    @classmethod
    def unpack(cls, buf: bytes | PageMemory, offset: int = 0) -> XdpFrameHeader:
        if offset < 0 or len(buf) - offset < XDP_FRAME_STRUCT.size:
            raise Truncated(field="xdp_frame", offset=offset, needed=XDP_FRAME_STRUCT.size,
                            available=max(0, len(buf) - offset), rule="XDP-FRAME-001")
        return cls(*XDP_FRAME_STRUCT.unpack_from(buf, offset))

    def pack(self) -> bytes:
        return XDP_FRAME_STRUCT.pack(self.data, self.len, self.headroom, self.metasize,
                                     self.mem_type, self.dev_rx, self.frame_sz, self.flags)


@attrs.define(eq=False)
class XdpFrame:
    """A ``struct xdp_frame *``: the header stored at byte ``addr`` of ``page``."""

    page: Page
    addr: int
    arch: Arch = X86_64

    def header(self) -> XdpFrameHeader:
        return XdpFrameHeader.unpack(self.page.data, self.addr)

    def write(self, **fields: int) -> None:
        """Store the named fields, leaving the others' bytes as they are."""
        header = attrs.evolve(self.header(), **fields)
        self.page.data[self.addr : self.addr + XDP_FRAME_STRUCT.size] = header.pack()

    # Field accessors, so driver models read ``frame.len`` like ``xdpf->len``.
    @property
    def data(self) -> int:
        return self.header().data

    @property
    def len(self) -> int:
        return self.header().len

    @property
    def headroom(self) -> int:
        return self.header().headroom

    @property
    def metasize(self) -> int:
        return self.header().metasize

    @property
    def mem_type(self) -> int:
        return self.header().mem_type

    @property
    def dev_rx(self) -> int:
        return self.header().dev_rx

    @property
    def frame_sz(self) -> int:
        return self.header().frame_sz

    @property
    def flags(self) -> int:
        return self.header().flags

    def payload(self) -> bytes:
        h = self.header()
        return bytes(self.page.data[h.data : h.data + h.len])


def xdp_update_frame_from_buff(
    xdp: XdpBuff,
    frame: XdpFrame,
    *,
    warns: list[KernelWarn] | None = None,
    trace: Trace | None = None,
) -> int:
    """``xdp_update_frame_from_buff`` (XDP-FRAME-002, XDP-FRAME-003, XDP-FRAME-004).

    Returns -ENOSPC, writing nothing, when the headroom left below the metadata cannot
    hold a ``struct xdp_frame``.  A buffer whose ``data_end`` lies beyond
    ``xdp_data_hard_end`` makes the kernel WARN ("Driver BUG: missing reserved
    tailroom", through ``XDP_WARN``) and also return -ENOSPC: the model does the same and
    reports the WARN (appended to ``warns``, traced under XDP-FRAME-003).
    """
    headroom = xdp.data - xdp.data_hard_start
    metasize = max(xdp.data - xdp.data_meta, 0)
    room = headroom - metasize
    # C compares the int ``room`` with a size_t: a negative room converts to a huge
    # unsigned value and passes.  Only 0 <= room < sizeof(struct xdp_frame) fails.
    if 0 <= room < xdp.arch.sizeof_xdp_frame:
        emit(trace, "XDP-FRAME-002", "no room for struct xdp_frame in the headroom",
             headroom=headroom, metasize=metasize, ret=-errno.ENOSPC)
        return -errno.ENOSPC
    if xdp.data_end > xdp_data_hard_end(xdp):
        kernel_warn(warns, trace, rule="XDP-FRAME-003", function="xdp_update_frame_from_buff",
                    message="Driver BUG: missing reserved tailroom", data_end=xdp.data_end,
                    hard_end=xdp_data_hard_end(xdp), ret=-errno.ENOSPC)
        return -errno.ENOSPC
    if frame.addr + xdp.arch.sizeof_xdp_frame > len(frame.page):  # self-check
        raise StateViolation("no room for the frame header in the buffer", obj="xdp_buff",
                             rule="XDP-FRAME-004")
    frame.write(data=xdp.data, len=xdp.data_end - xdp.data,
                headroom=headroom - xdp.arch.sizeof_xdp_frame, metasize=metasize,
                frame_sz=xdp.frame_sz, flags=xdp.flags)
    return 0


def xdp_convert_buff_to_frame(
    xdp: XdpBuff,
    *,
    alloc_page: Callable[[], Page | None] | None = None,
    released: list[MemReturn] | None = None,
    warns: list[KernelWarn] | None = None,
    trace: Trace | None = None,
) -> XdpFrame | None:
    """``xdp_convert_buff_to_frame``: the frame, or None (NULL) when it does not fit.

    A missing reserved tailroom is reported in ``warns`` (XDP-FRAME-003) and also gives
    None, as in the kernel.

    For ``MEM_TYPE_XSK_BUFF_POOL`` queues the packet is copied into a new page instead
    (XDP-FRAME-005); ``alloc_page`` stands for ``dev_alloc_page`` (None = a fresh zeroed
    page; a callable returning None models an allocation failure) and the freed XSK
    buffer is appended to ``released``.
    """
    if xdp.rxq is None:
        raise StateViolation("xdp->rxq is NULL", obj="xdp_buff", rule="XDP-FRAME-004")
    if xdp.rxq.mem.type == MemType.MEM_TYPE_XSK_BUFF_POOL:
        return _convert_zc_to_xdp_frame(xdp, alloc_page, released, trace)
    # The header goes at data_hard_start only once xdp_update_frame_from_buff found room
    # for it below the data (-ENOSPC first, whatever frame_sz is: a buffer shorter than
    # the header has less headroom than that).
    frame = XdpFrame(xdp._page(), xdp.data_hard_start, xdp.arch)
    if xdp_update_frame_from_buff(xdp, frame, warns=warns, trace=trace) < 0:
        return None
    frame.write(mem_type=xdp.rxq.mem.type)
    emit(trace, "XDP-FRAME-004", "xdp_frame written at data_hard_start",
         addr=frame.addr, len=frame.len, headroom=frame.headroom, mem_type=frame.mem_type)
    return frame


def _convert_zc_to_xdp_frame(
    xdp: XdpBuff,
    alloc_page: Callable[[], Page | None] | None,
    released: list[MemReturn] | None,
    trace: Trace | None,
) -> XdpFrame | None:
    """``xdp_convert_zc_to_xdp_frame`` (XDP-FRAME-005)."""
    src = xdp._page()
    arch = xdp.arch
    metasize = 0 if xdp_data_meta_unsupported(xdp) else xdp.data - xdp.data_meta
    totsize = xdp.data_end - xdp.data + metasize
    if arch.sizeof_xdp_frame + totsize > arch.page_size:
        emit(trace, "XDP-FRAME-005", "packet too big for one page", totsize=totsize)
        return None
    page = Page.zeroed(arch.page_size) if alloc_page is None else alloc_page()
    if page is None:
        emit(trace, "XDP-FRAME-005", "page allocation failed")
        return None
    if len(page) < arch.page_size:
        raise StateViolation("alloc_page returned less than PAGE_SIZE", obj="page",
                             rule="XDP-FRAME-005")
    start = xdp.data_meta if metasize else xdp.data
    body = arch.sizeof_xdp_frame
    page.data[body : body + totsize] = src.data[start : start + totsize]
    # The frame's headroom is the metadata: data - headroom - sizeof(xdp_frame) lands on the
    # page's start, where the header was written (XDP-FRAME-005, XDP-FRAME-006).
    header = XdpFrameHeader(data=body + metasize, len=totsize - metasize, headroom=metasize,
                            metasize=metasize, mem_type=MemType.MEM_TYPE_PAGE_ORDER0,
                            dev_rx=0, frame_sz=arch.page_size, flags=0)
    page.data[0:body] = header.pack()
    freed = xdp_return(src, MemType.MEM_TYPE_XSK_BUFF_POOL, False, from_xdp_buff=True,
                       caller="xdp_convert_zc_to_xdp_frame", trace=trace)
    if released is not None:
        released.append(freed)
    emit(trace, "XDP-FRAME-005", "XSK buffer copied into an order-0 page", len=totsize)
    return XdpFrame(page, 0, arch)


def xdp_convert_frame_to_buff(frame: XdpFrame, xdp: XdpBuff, *,
                              trace: Trace | None = None) -> None:
    """``xdp_convert_frame_to_buff``: rebuild the buffer's pointers, ``frame_sz`` and
    ``flags`` from the frame; ``rxq`` and ``txq`` are not touched (XDP-FRAME-006)."""
    h = frame.header()
    xdp.page = frame.page
    xdp.data_hard_start = h.data - h.headroom - frame.arch.sizeof_xdp_frame
    xdp.data = h.data
    xdp.data_end = h.data + h.len
    xdp.data_meta = h.data - h.metasize
    xdp.frame_sz = h.frame_sz
    xdp.flags = h.flags
    xdp.arch = frame.arch
    emit(trace, "XDP-FRAME-006", "buffer rebuilt from the frame",
         hard_start=xdp.data_hard_start, frame_sz=h.frame_sz)


def xdp_frame_has_frags(frame: XdpFrame) -> bool:
    return bool(frame.flags & XDP_FLAGS_HAS_FRAGS)


def xdp_frame_is_frag_pfmemalloc(frame: XdpFrame) -> bool:
    return bool(frame.flags & XDP_FLAGS_FRAGS_PF_MEMALLOC)


def xdp_get_shared_info_from_frame(frame: XdpFrame) -> SkbSharedInfo:
    """The shared info of the buffer the frame came from: hard start recovered as
    ``data - headroom - sizeof(struct xdp_frame)`` (XDP-FRAME-006)."""
    h = frame.header()
    hard_start = h.data - h.headroom - frame.arch.sizeof_xdp_frame
    offset = hard_start + h.frame_sz - frame.arch.shinfo_reserved
    if offset < 0 or offset + frame.arch.sizeof_skb_shared_info > len(frame.page):
        raise StateViolation(f"skb_shared_info at {offset} lies outside the buffer",
                             obj="xdp_frame", rule="XDP-FRAME-006")
    return frame.page.shared_info_at(offset)


def xdp_get_frame_len(frame: XdpFrame) -> int:
    """``xdp_get_frame_len``: ``len`` plus ``xdp_frags_size`` when the frame has frags."""
    length = frame.len
    if xdp_frame_has_frags(frame):
        length += xdp_get_shared_info_from_frame(frame).xdp_frags_size
    return length


def xdp_scrub_frame(frame: XdpFrame) -> None:
    """``xdp_scrub_frame``: clear the two kernel pointers, ``data`` and ``dev_rx``."""
    frame.write(data=0, dev_rx=0)


def _frame_pages(frame: XdpFrame) -> list[Page]:
    pages = []
    if xdp_frame_has_frags(frame):
        pages = [f.page for f in xdp_get_shared_info_from_frame(frame).valid_frags()]
    pages.append(frame.page)  # virt_to_netmem(xdpf->data): the head page
    return pages


def _return_frame(frame: XdpFrame, napi_direct: bool, caller: str, no_direct: bool,
                  trace: Trace | None) -> list[MemReturn]:
    mem_type = frame.mem_type
    emit(trace, "XDP-FRAME-007", f"{caller}: frags, then the head page", mem_type=mem_type,
         napi_direct=napi_direct)
    return [xdp_return(p, mem_type, napi_direct, from_xdp_buff=False, caller=caller,
                       return_frame_no_direct=no_direct, trace=trace)
            for p in _frame_pages(frame)]


def xdp_return_frame(
    frame: XdpFrame, *, return_frame_no_direct: bool = False, trace: Trace | None = None
) -> list[MemReturn]:
    """``xdp_return_frame``: frags first, then the head page, never direct (XDP-FRAME-007)."""
    return _return_frame(frame, False, "xdp_return_frame", return_frame_no_direct, trace)


def xdp_return_frame_rx_napi(
    frame: XdpFrame, *, return_frame_no_direct: bool = False, trace: Trace | None = None
) -> list[MemReturn]:
    """``xdp_return_frame_rx_napi``: as :func:`xdp_return_frame` with ``napi_direct`` true,
    for callers inside the RX NAPI poll (XDP-FRAME-007)."""
    return _return_frame(frame, True, "xdp_return_frame_rx_napi", return_frame_no_direct,
                         trace)


def xdp_return_frame_bulk(
    frame: XdpFrame, bq: XdpFrameBulk, *, trace: Trace | None = None
) -> list[MemReturn]:
    """``xdp_return_frame_bulk`` (XDP-MEM-004): non-page_pool frames go back one by one
    at once; page_pool pages are queued, and the queue is flushed whenever it is full.
    Returns whatever left the model during this call."""
    if frame.mem_type != MemType.MEM_TYPE_PAGE_POOL:
        return xdp_return_frame(frame, trace=trace)
    out: list[MemReturn] = []
    emit(trace, "XDP-MEM-004", "page_pool frame queued for a bulk return", queued=bq.count)
    if bq.count == XDP_BULK_QUEUE_SIZE:
        out += xdp_flush_frame_bulk(bq, trace=trace)
    if xdp_frame_has_frags(frame):
        for frag in xdp_get_shared_info_from_frame(frame).valid_frags():
            bq.q.append(frag.page)
            if bq.count == XDP_BULK_QUEUE_SIZE:
                out += xdp_flush_frame_bulk(bq, trace=trace)
    bq.q.append(frame.page)
    return out

"""The memory an XDP buffer points into: a page of real bytes (XDP-BUFF-002, XDP-BUFF-005).

The kernel's ``xdp_buff`` holds raw pointers.  The model replaces each pointer by a
(page, offset) pair: a :class:`Page` owns a ``bytearray`` and every pointer field of
the buffer is an offset into it.  A very large buffer is an anonymous memory mapping
instead (:data:`LAZY_ZEROED_MIN`).  Pointer comparisons in the helpers become integer
comparisons, and a buffer reused across packets keeps whatever offsets it was last
given, as the kernel's would.

``struct skb_shared_info`` lives *in the page*, at ``xdp_data_hard_end``.  Its frag
array holds page pointers, which bytes cannot carry, so the model keeps it in a side
table on the page keyed by its byte offset: the info belongs to the memory, not to the
``xdp_buff``, and is stale on a reused page exactly as it would be in the kernel.
"""

from __future__ import annotations

import itertools
import mmap

import attrs

_NEXT_ID = itertools.count(1)

#: What a page's bytes are: a ``bytearray``, or for a buffer above
#: :data:`LAZY_ZEROED_MIN` an anonymous mapping (slices read and write alike).
PageMemory = bytearray | mmap.mmap

#: :meth:`Page.zeroed` maps buffers larger than this (16 MiB) instead of filling a
#: ``bytearray`` with zeros: ``xdp_buff.frame_sz`` is a u32 (XDP-BUFF-003), and a buffer
#: of 2**32 - 1 bytes would otherwise cost seconds and gigabytes of written zeros for the
#: few hundred bytes a packet touches.  The mapping's zero pages cost nothing until written.
LAZY_ZEROED_MIN = 1 << 24


@attrs.define(eq=False)
class SkbFrag:
    """``skb_frag_t``: a (page, offset, size) slice of another page (XDP-BUFF-007)."""

    page: Page
    offset: int
    size: int

    def view(self) -> bytes:
        """The bytes the frag covers, as ``skb_frag_address`` .. ``+ skb_frag_size``."""
        return bytes(self.page.data[self.offset : self.offset + self.size])


@attrs.define(eq=False)
class SkbSharedInfo:
    """The fields of ``struct skb_shared_info`` the XDP core uses.

    ``frags`` may hold more entries than ``nr_frags``: entries past ``nr_frags`` are
    stale, as in the kernel's fixed-size array (XDP-ADJ-009).  A shared info the model
    has never seen starts zeroed (XDP-BUFF-005, a model convention: real memory holds
    whatever was there before).
    """

    nr_frags: int = 0
    xdp_frags_size: int = 0
    xdp_frags_truesize: int = 0
    frags: list[SkbFrag] = attrs.field(factory=list)

    def valid_frags(self) -> list[SkbFrag]:
        return self.frags[: self.nr_frags]


@attrs.define(eq=False)
class Page:
    """A page (or any contiguous buffer) of packet memory.

    ``pfmemalloc`` mirrors ``page_is_pfmemalloc``; ``net_iov`` marks unreadable
    (device) memory for the v6.18 flag; ``handle`` is free for a page_pool or driver
    model to hang its own bookkeeping on.  Identity, not content, tells pages apart.
    """

    data: PageMemory
    pfmemalloc: bool = False
    net_iov: bool = False
    handle: object = None
    ident: int = attrs.field(factory=lambda: next(_NEXT_ID))
    shinfo: dict[int, SkbSharedInfo] = attrs.field(factory=dict, repr=False)

    @classmethod
    def zeroed(cls, size: int, *, pfmemalloc: bool = False, net_iov: bool = False,
               handle: object = None) -> Page:
        """A buffer of ``size`` zero bytes (mapped, not filled, above LAZY_ZEROED_MIN)."""
        data = mmap.mmap(-1, size) if size > LAZY_ZEROED_MIN else bytearray(size)
        return cls(data, pfmemalloc=pfmemalloc, net_iov=net_iov, handle=handle)

    def __len__(self) -> int:
        return len(self.data)

    def shared_info_at(self, offset: int) -> SkbSharedInfo:
        """The ``skb_shared_info`` stored at byte ``offset`` of this page."""
        info = self.shinfo.get(offset)
        if info is None:
            info = self.shinfo[offset] = SkbSharedInfo()
        return info

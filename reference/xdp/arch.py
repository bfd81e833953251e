"""Architecture constants and kernel-version switches of the XDP core (XDP-BUFF-001).

Every size the XDP helpers compare against comes from a C struct layout or a Kconfig
default.  They are collected here, with where each number comes from, so a reader can
change the architecture instead of hunting magic numbers:

- ``SMP_CACHE_BYTES``: ``include/linux/cache.h`` defines it as ``L1_CACHE_BYTES``,
  which on x86 is ``1 << CONFIG_X86_L1_CACHE_SHIFT``; ``arch/x86/Kconfig.cpu`` makes
  that shift 6 for ``X86_64`` (64 bytes).
- ``MAX_SKB_FRAGS``: ``include/linux/skbuff.h`` uses ``CONFIG_MAX_SKB_FRAGS``, 17 by
  default.
- ``sizeof(struct skb_shared_info)`` on LP64 (``include/linux/skbuff.h``): four u8
  (flags, meta_len, nr_frags, tx_flags) and two u16 (gso_size, gso_segs) fill bytes
  0-7; ``frag_list`` pointer 8-15; the hwtstamps / xsk_meta union (8 bytes) 16-23;
  ``gso_type`` and ``tskey`` 24-31; ``dataref`` (atomic_t) 32-35; 4 bytes of padding
  because the next union holds a pointer; the ``xdp_frags_size``/``xdp_frags_truesize``
  / ``destructor_arg`` union 40-47; then ``frags[MAX_SKB_FRAGS]`` of ``skb_frag_t``
  (``netmem_ref`` 8 + ``len`` 4 + ``offset`` 4 = 16 bytes each).  So 48 + 16 * 17 =
  320 on x86_64, which ``SKB_DATA_ALIGN`` leaves at 320 (a multiple of 64).
- ``sizeof(struct xdp_frame)`` = 40 on LP64 (``include/net/xdp.h``), see
  :mod:`reference.xdp.frame`.

32-bit ARM (ILP32, AAPCS/EABI, as Debian's ``armhf`` kernel is built: the i.MX6 SoCs the
fec driver runs on) is the other layout modelled (XDP-BUFF-001).  Pointers,
``unsigned long`` and so ``netmem_ref`` are 4 bytes while ``ktime_t`` (s64) stays 8 and is
8-aligned.  ``struct skb_shared_info``: bytes 0-7 as above; ``frag_list`` 8-11; 4 bytes of
padding, because the hwtstamps union holds a ``ktime_t``; that union 16-23; ``gso_type``
and ``tskey`` 24-31; ``dataref`` 32-35; the ``xdp_frags_size``/``destructor_arg`` union
36-43 (no padding: it holds only 4-byte members now); ``frags`` of 12-byte ``skb_frag_t``
from 44.  44 + 12 * 17 = 248, already a multiple of the struct's 8-byte alignment, and
``SKB_DATA_ALIGN`` with ``CONFIG_ARM_L1_CACHE_SHIFT`` = 6 (Debian's armmp config) makes it
256.  ``struct xdp_frame`` is 32 bytes (each member 4 bytes, or 2+2 for 6.12's u16
``len``/``headroom``, the 8-byte ``mem`` of 6.12 replacing 6.14's ``mem_type`` and its
hole).
"""

from __future__ import annotations

import attrs

from reference.errors import InvalidConfig
from reference.kernel import KernelVersion, gate

#: ``include/uapi/linux/if_ether.h``: bytes in an Ethernet header; the adjust helpers
#: never let the linear packet become shorter than this (XDP-ADJ-002, XDP-ADJ-006).
ETH_HLEN = 14

#: ``include/uapi/linux/bpf.h``: the headroom XDP drivers are expected to reserve.
XDP_PACKET_HEADROOM = 256

#: Sizes of the pieces of ``struct skb_shared_info`` (see the module docstring), by the
#: width of a pointer: the bytes before ``frags``, one ``skb_frag_t``, the alignment.
_SHINFO_FIXED_PART = {64: 48, 32: 44}
_SKB_FRAG_SIZE = {64: 16, 32: 12}
_SHINFO_ALIGN = 8
#: ``struct xdp_frame`` (XDP-FRAME-001), by the width of a pointer.
_XDP_FRAME_SIZE = {64: 40, 32: 32}


def align_up(value: int, alignment: int) -> int:
    """The kernel's ``ALIGN(x, a)`` for a power-of-two ``a``."""
    return (value + alignment - 1) & ~(alignment - 1)


@attrs.frozen
class Arch:
    """The architecture-dependent numbers the XDP core uses (XDP-BUFF-001).

    Defaults are x86_64 with the default Kconfig; change ``max_skb_frags`` for a kernel
    built with a different ``CONFIG_MAX_SKB_FRAGS`` or ``smp_cache_bytes`` for another
    cache line size.
    """

    name: str = "x86_64"
    smp_cache_bytes: int = 64
    max_skb_frags: int = 17
    page_size: int = 4096
    #: ``BITS_PER_LONG``: 64 (LP64) or 32 (ILP32, 32-bit ARM).
    bits_per_long: int = 64

    def __attrs_post_init__(self) -> None:
        if self.bits_per_long not in (32, 64):
            raise InvalidConfig("BITS_PER_LONG is 32 or 64", field="bits_per_long",
                                value=self.bits_per_long, rule="XDP-BUFF-001")
        for field, value in (("smp_cache_bytes", self.smp_cache_bytes),
                             ("page_size", self.page_size)):
            if value <= 0 or value & (value - 1):
                raise InvalidConfig("must be a power of two", field=field, value=value,
                                    rule="XDP-BUFF-001")
        # CONFIG_MAX_SKB_FRAGS is a Kconfig range 17..45 (nr_frags is a u8 either way).
        if not 17 <= self.max_skb_frags <= 45:
            raise InvalidConfig("CONFIG_MAX_SKB_FRAGS ranges over 17..45",
                                field="max_skb_frags", value=self.max_skb_frags,
                                rule="XDP-BUFF-001")

    @property
    def sizeof_skb_shared_info(self) -> int:
        """``sizeof(struct skb_shared_info)``: 320 on LP64, 248 on 32-bit ARM (17 frags)."""
        size = (_SHINFO_FIXED_PART[self.bits_per_long]
                + _SKB_FRAG_SIZE[self.bits_per_long] * self.max_skb_frags)
        return align_up(size, _SHINFO_ALIGN)

    @property
    def shinfo_reserved(self) -> int:
        """``SKB_DATA_ALIGN(sizeof(struct skb_shared_info))``: tailroom every XDP buffer
        reserves below ``data_hard_start + frame_sz`` (XDP-BUFF-002)."""
        return align_up(self.sizeof_skb_shared_info, self.smp_cache_bytes)

    @property
    def sizeof_xdp_frame(self) -> int:
        """``sizeof(struct xdp_frame)``: 40 on LP64, 32 on 32-bit ARM."""
        return _XDP_FRAME_SIZE[self.bits_per_long]


#: x86_64, default Kconfig.
X86_64 = Arch()


@attrs.frozen
class KernelSemantics:
    """Points where the XDP core changed between the kernels the project cares about.

    The model follows v6.17 (:data:`V6_17`).  :data:`V6_18` switches on the changes read
    in the 6.18.y tree (``net/core/filter.c``) so a conformance run against a v6.18
    kernel can ask for them.
    """

    name: str
    #: XDP-ADJ-008: v6.18 computes the last frag's tailroom as a signed int using the
    #: frag offset modulo ``rxq->frag_size``; v6.17 uses an unsigned subtraction of the
    #: whole offset, which wraps for frags that do not start at offset 0.
    frag_tailroom_modulo: bool
    #: XDP-ADJ-010: v6.18 also clears ``XDP_FLAGS_FRAGS_PF_MEMALLOC`` when a tail shrink
    #: frees the last frag ("bpf: Clear pfmemalloc flag when freeing all fragments").
    shrink_clears_pfmemalloc: bool
    #: XDP-BUFF-006: v6.18 adds ``XDP_FLAGS_FRAGS_UNREADABLE`` and sets it when a frag
    #: is a net_iov ("net: xdp: handle frags with unreadable memory").
    frags_unreadable_flag: bool


V6_17 = KernelSemantics("v6.17", frag_tailroom_modulo=False, shrink_clears_pfmemalloc=False,
                        frags_unreadable_flag=False)
V6_18 = KernelSemantics("v6.18", frag_tailroom_modulo=True, shrink_clears_pfmemalloc=True,
                        frags_unreadable_flag=True)


def xdp_semantics(kernel: KernelVersion) -> KernelSemantics:
    """The XDP-core switches for a kernel version, from the version gates XDP-ADJ-008,
    XDP-ADJ-010 and XDP-BUFF-006 (:mod:`reference.kernel`)."""
    return KernelSemantics(str(kernel), frag_tailroom_modulo=gate(kernel, "XDP-ADJ-008"),
                           shrink_clears_pfmemalloc=gate(kernel, "XDP-ADJ-010"),
                           frags_unreadable_flag=gate(kernel, "XDP-BUFF-006"))

"""Constants of the page_pool model, with the header each one comes from.

Kernel source read: Kingxukai/linux v6.17-rc3 (``include/net/page_pool/types.h``,
``net/core/page_pool.c``, ``include/linux/poison.h``, ``include/linux/ptr_ring.h``,
``include/linux/dma-mapping.h``).  Values that depend on the architecture live in
:class:`Arch`; the default is x86-64 with 4 KiB pages.
"""

from __future__ import annotations

import attrs

# --- page_pool_params.flags (include/net/page_pool/types.h) -------------------------------
PP_FLAG_DMA_MAP = 1 << 0
PP_FLAG_DMA_SYNC_DEV = 1 << 1
PP_FLAG_SYSTEM_POOL = 1 << 2
PP_FLAG_ALLOW_UNREADABLE_NETMEM = 1 << 3
#: Every flag ``page_pool_init`` accepts (PP-INIT-001).
PP_FLAG_ALL = (
    PP_FLAG_DMA_MAP | PP_FLAG_DMA_SYNC_DEV | PP_FLAG_SYSTEM_POOL | PP_FLAG_ALLOW_UNREADABLE_NETMEM
)

# --- cache geometry (include/net/page_pool/types.h) ---------------------------------------
PP_ALLOC_CACHE_SIZE = 128
PP_ALLOC_CACHE_REFILL = 64

# --- page_pool_init ring sizing (net/core/page_pool.c, v6.17-rc3) -------------------------
#: Ring size when ``pool_size`` is 0.
PP_RING_DEFAULT_SIZE = 1024
#: Largest accepted ``pool_size``; larger is -E2BIG in v6.17-rc3 (PP-INIT-002).
PP_RING_SIZE_LIMIT = 32768
#: The ring size later kernels clamp ``pool_size`` to instead (PP-INIT-002 version gate).
PP_RING_CLAMP = 16384

# --- frag API (net/core/page_pool.c) ------------------------------------------------------
#: ``LONG_MAX >> 1`` on a 64-bit kernel.
BIAS_MAX = ((1 << 63) - 1) >> 1

# --- bulk return (include/net/xdp.h) ------------------------------------------------------
XDP_BULK_QUEUE_SIZE = 16

# --- enum dma_data_direction (include/linux/dma-direction.h) ------------------------------
DMA_BIDIRECTIONAL = 0
DMA_TO_DEVICE = 1
DMA_FROM_DEVICE = 2
DMA_NONE = 3

# --- NUMA ---------------------------------------------------------------------------------
NUMA_NO_NODE = -1

# --- page_pool_release_retry timing (net/core/page_pool.c) --------------------------------
DEFER_TIME_MS = 1000
DEFER_WARN_INTERVAL_S = 60

U32_MASK = 0xFFFF_FFFF

#: ``REFCOUNT_SATURATED`` (include/linux/refcount.h): where a ``refcount_t`` such as the
#: pool's ``user_cnt`` is pinned after an underflow or an increment from 0 WARNs.
REFCOUNT_SATURATED = -(1 << 31) // 2


@attrs.frozen
class Arch:
    """Architecture-dependent values the page_pool code reads (model convention).

    ``page_size``: ``PAGE_SIZE``.  ``dma_cache_alignment``: what
    ``dma_get_cache_alignment()`` returns (PP-FRAG-002).  The generic helper in
    ``include/linux/dma-mapping.h`` gives ``ARCH_DMA_MINALIGN`` where the arch defines one
    (``ARCH_HAS_DMA_MINALIGN``) and 1 elsewhere, so x86-64 gives 1.  arm64 overrides the
    helper with ``cache_line_size()`` (see :func:`arm64_cache_line_size`), which is 64 on
    usual cores, not its ``ARCH_DMA_MINALIGN`` of 128.  ``smp_cache_bytes``:
    ``SMP_CACHE_BYTES`` (sizes the ptr_ring consumer batch; ``L1_CACHE_BYTES`` = 64 on
    both).  ``max_page_order``: ``MAX_PAGE_ORDER`` (10 unless
    ``CONFIG_ARCH_FORCE_MAX_ORDER``).  ``poison_pointer_delta``:
    ``CONFIG_ILLEGAL_POINTER_VALUE`` (0xdead000000000000 on x86-64 and arm64).
    """

    page_size: int = 4096
    dma_cache_alignment: int = 1
    smp_cache_bytes: int = 64
    max_page_order: int = 10
    poison_pointer_delta: int = 0xDEAD_0000_0000_0000

    @property
    def page_shift(self) -> int:
        return self.page_size.bit_length() - 1

    @property
    def pp_signature(self) -> int:
        """``PP_SIGNATURE`` = 0x40 + ``POISON_POINTER_DELTA`` (include/linux/poison.h)."""
        return 0x40 + self.poison_pointer_delta


#: arm64 ``ARCH_DMA_MINALIGN`` (arch/arm64/include/asm/cache.h): the kmalloc/DMA bound,
#: and the fallback of ``cache_line_size_of_cpu`` when ``CTR_EL0.CWG`` is 0.
ARM64_ARCH_DMA_MINALIGN = 128


def arm64_cache_line_size(*, coherency_max_size: int = 0, ctr_el0_cwg: int = 4) -> int:
    """arm64 ``cache_line_size()``, which is its ``dma_get_cache_alignment()``.

    arch/arm64/include/asm/cache.h defines ``dma_get_cache_alignment`` as
    ``cache_line_size`` (so the generic ``ARCH_DMA_MINALIGN`` helper is not used).
    ``cache_line_size`` (arch/arm64/kernel/cacheinfo.c) answers ``coherency_max_size`` (the
    largest ``coherency_line_size`` the cacheinfo code found in firmware tables) when that
    is known, else ``cache_line_size_of_cpu``: ``4 << CTR_EL0.CWG`` words, or
    ``ARCH_DMA_MINALIGN`` when the CPU reports CWG 0 ("not given").  CWG 4 (64 bytes) is
    what usual arm64 cores (Cortex-A53/A72, Neoverse) report, hence the default.
    """
    if coherency_max_size:
        return coherency_max_size
    return 4 << ctr_el0_cwg if ctr_el0_cwg else ARM64_ARCH_DMA_MINALIGN


X86_64 = Arch()
#: arm64, 4 KiB pages, a CPU with 64-byte cache writeback granule (the usual case).
ARM64_4K = Arch(dma_cache_alignment=arm64_cache_line_size())
DEFAULT_ARCH = X86_64

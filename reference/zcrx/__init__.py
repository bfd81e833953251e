"""io_uring zero-copy receive (zcrx): the user ABI, registration and rx_buf_len, the
memory provider on a page_pool, the refill ring, CQE generation and the copy fallback
(SPEC part ``zcrx.md``, rule prefix ZCRX-).

Kernel semantics modelled: mainline with large rx buffers (v7.0, io_uring commit
795663b4d160 plus the fix 3d17d76d1ffb), read in openSUSE/kernel@0719e10d826a
(``io_uring/zcrx.c``, ``io_uring/zcrx.h``; a v7.1-cycle mainline tree) and
torvalds/linux (``include/uapi/linux/io_uring/zcrx.h``, ``io_uring/memmap.c``).

Modules: ``uapi`` (structs, flags, offset encoding), ``register`` (registration,
rx_buf_len, queue binding), ``area`` (niovs, freelist, refill ring), ``pool`` (the page
pool's side), ``provider`` (allocation, refill, release, scrub), ``recv`` (CQEs and the
copy fallback), ``engine`` (device, socket and user around one instance), ``scenario``
(the 4 KiB vs 32 KiB stream counts).
"""

from __future__ import annotations

from .area import Area, Niov, RefillRing
from .engine import DeviceConfig, EngineConfig, HdsDevice, ZcrxEngine, build_skbs
from .pool import ZcPagePool, pp_zc_init_check
from .provider import HONOURED, OUTCOME_RULE, RefillOutcome, RefillRecord, ZcrxIfq
from .recv import Cqe, CqRing, Frag, Receiver, RecvResult, Skb
from .register import (
    IO_RQ_MAX_ENTRIES,
    PAGE_SHIFT,
    PAGE_SIZE,
    QCFG_RX_PAGE_SIZE,
    AreaMemory,
    NetdevModel,
    RegResult,
    RingCtx,
    io_area_max_shift,
    register_zcrx,
    rx_buf_shift,
)
from .scenario import StreamCounts, compare_buffer_sizes, mss_stream, stream_counts
from .uapi import (
    IORING_ZCRX_AREA_MASK,
    IORING_ZCRX_AREA_SHIFT,
    Cqe32,
    IoUringRegionDesc,
    IoUringZcrxAreaReg,
    IoUringZcrxCqe,
    IoUringZcrxIfqReg,
    IoUringZcrxOffsets,
    IoUringZcrxRqe,
    area_token,
    decode_off,
    encode_off,
)

__all__ = [
    "HONOURED",
    "IORING_ZCRX_AREA_MASK",
    "IORING_ZCRX_AREA_SHIFT",
    "IO_RQ_MAX_ENTRIES",
    "OUTCOME_RULE",
    "PAGE_SHIFT",
    "PAGE_SIZE",
    "QCFG_RX_PAGE_SIZE",
    "Area",
    "AreaMemory",
    "CqRing",
    "Cqe",
    "Cqe32",
    "DeviceConfig",
    "EngineConfig",
    "Frag",
    "HdsDevice",
    "IoUringRegionDesc",
    "IoUringZcrxAreaReg",
    "IoUringZcrxCqe",
    "IoUringZcrxIfqReg",
    "IoUringZcrxOffsets",
    "IoUringZcrxRqe",
    "NetdevModel",
    "Niov",
    "Receiver",
    "RecvResult",
    "RefillOutcome",
    "RefillRecord",
    "RefillRing",
    "RegResult",
    "RingCtx",
    "Skb",
    "StreamCounts",
    "ZcPagePool",
    "ZcrxEngine",
    "ZcrxIfq",
    "area_token",
    "build_skbs",
    "compare_buffer_sizes",
    "decode_off",
    "encode_off",
    "io_area_max_shift",
    "mss_stream",
    "pp_zc_init_check",
    "register_zcrx",
    "rx_buf_shift",
    "stream_counts",
]

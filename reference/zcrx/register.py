"""IORING_REGISTER_ZCRX_IFQ: validation, rx_buf_len selection, queue binding
(rules ZCRX-REG-*, ZCRX-AREA-*, ZCRX-BUFLEN-*, ZCRX-QUEUE-*).

Kernel read: ``io_uring/zcrx.c`` (``io_register_zcrx``, ``io_allocate_rbuf_ring``,
``io_fill_zcrx_offsets``, ``zcrx_register_netdev``, ``io_zcrx_create_area``,
``io_import_area``, ``io_import_umem``, ``io_import_dmabuf``, ``io_area_max_shift``,
``io_pp_zc_init``) at openSUSE/kernel@0719e10d826a; ``io_uring/memmap.c:
io_create_region`` and ``io_uring/rsrc.c: io_validate_user_buf_range`` (torvalds/linux);
``net/core/netdev_rx_queue.c: __net_mp_open_rxq`` and ``net/core/netdev_config.c:
__netdev_queue_config`` in their v7.0 form (large rx buffer series, merged for v7.0).

The checks run in the kernel's order, so a registration with several faults gets the
errno of the first one the kernel meets.  Every outcome is a return value
(:class:`RegResult`), never an exception, except for inputs the model does not cover
(``ZCRX_REG_IMPORT``, event descriptors, ring-level knobs that were never merged), which
raise :class:`~reference.errors.InvalidConfig`.
"""

from __future__ import annotations

import errno

import attrs

from reference.errors import InvalidConfig
from reference.kernel import DEFAULT_KERNEL, KernelVersion, gate
from reference.trace import Trace, emit

from .pool import pp_zc_init_check
from .uapi import (
    IORING_MEM_REGION_TYPE_USER,
    IORING_SETUP_CLAMP,
    IORING_SETUP_CQE32,
    IORING_SETUP_CQE_MIXED,
    IORING_SETUP_DEFER_TASKRUN,
    IORING_ZCRX_AREA_DMABUF,
    U32,
    U64,
    ZCRX_REG_IMPORT,
    ZCRX_REG_NODEV,
    IoUringRegionDesc,
    IoUringZcrxAreaReg,
    IoUringZcrxIfqReg,
    IoUringZcrxOffsets,
    area_token,
)

#: x86-64 / arm64 with 4 KiB pages.
PAGE_SHIFT = 12
PAGE_SIZE = 1 << PAGE_SHIFT
#: ``L1_CACHE_BYTES`` on x86-64; the refill entries start on the next cache line.
L1_CACHE_BYTES = 64
#: ``sizeof(struct io_uring)``: the ``head`` and ``tail`` u32s at the region's start, side
#: by side (before ZCRX-REG-008's gate).
RQ_HEADER_SIZE = 8
#: ``sizeof(struct zcrx_rq_hdr)`` after ZCRX-REG-008's gate: ``head`` and ``tail`` each on
#: a cache line of its own (``____cacheline_aligned_in_smp``, 64 bytes on x86-64 SMP).
RQ_HEADER_SIZE_SPLIT = 2 * L1_CACHE_BYTES
#: ``io_uring/zcrx.c``.
IO_RQ_MAX_ENTRIES = 32768
#: The supported registration flags (``io_uring/zcrx.h: ZCRX_SUPPORTED_REG_FLAGS``).
ZCRX_SUPPORTED_REG_FLAGS = ZCRX_REG_IMPORT | ZCRX_REG_NODEV
IO_ZCRX_AREA_SUPPORTED_FLAGS = IORING_ZCRX_AREA_DMABUF
#: ``io_validate_user_buf_range``: the arbitrary 1 GiB limit before the ZCRX-AREA-002 gate,
#: and the 1 TiB cap after it.
SZ_1G = 1 << 30
SZ_1T = 1 << 40
INT_MAX = (1 << 31) - 1
#: ``include/net/netdev_queues.h``: the driver checks and honours a provider page size.
QCFG_RX_PAGE_SIZE = 0x1
#: bnxt's bounds for a queue's rx page size (``BNXT_MAX_RX_PAGE_SIZE`` = BIT(15)).
BNXT_MAX_RX_PAGE_SIZE = 1 << 15
#: Config knobs of the unmerged RFC v2 series (ZCRX-BUFLEN-007).
UNMERGED_KNOBS = ("ethtool_rx_buf_len", "rx_buf_len_max", "queue_rx_buf_len")


def errno_name(rc: int) -> str:
    """``-EOPNOTSUPP`` rather than Python's preferred alias ``ENOTSUP`` (same value)."""
    if rc == -errno.EOPNOTSUPP:
        return "EOPNOTSUPP"
    return errno.errorcode.get(-rc, str(rc))


def _align(value: int, to: int) -> int:
    return (value + to - 1) & ~(to - 1)


def rq_offsets(kernel: KernelVersion = DEFAULT_KERNEL) -> IoUringZcrxOffsets:
    """``io_fill_zcrx_offsets`` (ZCRX-REG-008): the entries start at the first cache line
    after the header.  Before the gate the header is two adjacent u32s (head 0, tail 4,
    entries at 64); after it head and tail sit on separate cache lines (head 0, tail 64,
    entries at 128)."""
    if gate(kernel, "ZCRX-REG-008"):
        return IoUringZcrxOffsets(head=0, tail=L1_CACHE_BYTES,
                                  rqes=_align(RQ_HEADER_SIZE_SPLIT, L1_CACHE_BYTES))
    return IoUringZcrxOffsets(head=0, tail=4, rqes=_align(RQ_HEADER_SIZE, L1_CACHE_BYTES))


@attrs.frozen
class RingCtx:
    """The io_uring instance registering (its setup flags) and the caller's privilege."""

    flags: int = IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_CQE32
    cap_net_admin: bool = True


@attrs.frozen
class NetdevModel:
    """The net device and queue the registration binds (device-model assumption, ZCRX-QUEUE-*).

    ``qcfg_rx_page_size`` is the driver's ``QCFG_RX_PAGE_SIZE`` opt-in;
    ``default_rx_page_size`` what its ``ndo_default_qcfg`` fills in;
    ``max_rx_page_size`` the upper bound its ``ndo_validate_qcfg`` accepts (bnxt: 32 KiB).
    """

    ifindex: int = 2
    has_dma_dev: bool = True
    queue_mgmt_ops: bool = True
    real_num_rx_queues: int = 4
    tcp_data_split: bool = True
    hds_thresh: int = 0
    xdp_attached: bool = False
    rxq_mp_bound: bool = False
    qcfg_rx_page_size: bool = False
    default_rx_page_size: int = PAGE_SIZE
    max_rx_page_size: int = BNXT_MAX_RX_PAGE_SIZE


#: ZCRX-REG-012: veth (like every software device without a parent) as the registration
#: sees it: no DMA device for its queues, no queue management ops, one RX queue, no
#: header/data split.  Registration stops at ZCRX-REG-010's DMA device check
#: (-EOPNOTSUPP), before the area, the buffer length or the queue is looked at.
VETH = NetdevModel(has_dma_dev=False, queue_mgmt_ops=False, real_num_rx_queues=1,
                   tcp_data_split=False)


@attrs.frozen
class AreaMemory:
    """What backs the area (device-model assumption, ZCRX-BUFLEN-003).

    ``chunks``: the lengths of the area's DMA segments, in order (physically contiguous
    runs for user memory, the dma-buf's mapped segments for a dma-buf).  ``None``: one
    segment as long as the area (for a dma-buf: as long as the area says).
    """

    chunks: tuple[int, ...] | None = None


@attrs.frozen
class RegResult:
    """What a registration returns and writes back."""

    rc: int
    #: the rule that decided ``rc``
    rule: str
    #: the ifq_reg as copied back to the user (meaningful when ``rc`` is 0)
    reg: IoUringZcrxIfqReg
    area: IoUringZcrxAreaReg
    region: IoUringRegionDesc
    niov_shift: int | None = None
    num_niovs: int | None = None
    #: ``pp_memory_provider_params.rx_page_size`` (0: not requested); ``None``: not reached
    mp_rx_page_size: int | None = None
    #: the ``rx_page_size`` in the queue config the driver got; ``None``: not reached
    driver_rx_page_size: int | None = None
    kern_readable: bool = True
    nodev: bool = False

    @property
    def ok(self) -> bool:
        return self.rc == 0


def io_area_max_shift(chunks: tuple[int, ...]) -> int:
    """``io_area_max_shift``: the lowest set bit over all segment lengths, i.e. log2 of the
    largest power of two that divides every segment (ZCRX-BUFLEN-003)."""
    return min((c & -c).bit_length() - 1 for c in chunks)


def validate_user_buf_range(addr: int, length: int,
                            kernel: KernelVersion = DEFAULT_KERNEL) -> int:
    """``io_validate_user_buf_range`` (ZCRX-AREA-002): length 0 is -EFAULT; above 1 GiB
    -EFAULT too before the version gate, above 1 TiB -EINVAL after it; then the end
    (``PAGE_ALIGN``) must not pass 2^64 (-EOVERFLOW)."""
    if length == 0:
        return -errno.EFAULT
    if gate(kernel, "ZCRX-AREA-002"):
        if length > SZ_1T:
            return -errno.EINVAL
    elif length > SZ_1G:
        return -errno.EFAULT
    if addr + _align(length, PAGE_SIZE) > U64:
        return -errno.EOVERFLOW
    return 0


def create_region_check(rd: IoUringRegionDesc) -> int:
    """``io_create_region``'s argument checks, in order (ZCRX-REG-009)."""
    if any(rd.resv):
        return -errno.EINVAL
    if rd.flags & ~IORING_MEM_REGION_TYPE_USER:
        return -errno.EINVAL
    if bool(rd.flags & IORING_MEM_REGION_TYPE_USER) != bool(rd.user_addr):
        return -errno.EFAULT
    if not rd.size or rd.mmap_offset or rd.id:
        return -errno.EINVAL
    if (rd.size >> PAGE_SHIFT) > INT_MAX:
        return -errno.E2BIG
    if (rd.user_addr | rd.size) & (PAGE_SIZE - 1):
        return -errno.EINVAL
    if rd.user_addr + rd.size > U64:
        return -errno.EOVERFLOW
    return 0


def rx_buf_shift(rx_buf_len: int) -> int:
    """ZCRX-BUFLEN-001/002: 0 means ``PAGE_SIZE``; else a power of two of at least
    ``PAGE_SIZE``, or -EINVAL."""
    if not rx_buf_len:
        return PAGE_SHIFT
    if rx_buf_len & (rx_buf_len - 1) or rx_buf_len < PAGE_SIZE:
        return -errno.EINVAL
    return rx_buf_len.bit_length() - 1


def driver_validate_qcfg(netdev: NetdevModel, rx_page_size: int) -> int:
    """The driver's ``ndo_validate_qcfg`` for ``rx_page_size`` (ZCRX-QUEUE-002), after
    bnxt's: a power of two (-ERANGE) between the default and the maximum (-ERANGE)."""
    if rx_page_size <= 0 or rx_page_size & (rx_page_size - 1):
        return -errno.ERANGE
    if not netdev.default_rx_page_size <= rx_page_size <= netdev.max_rx_page_size:
        return -errno.ERANGE
    return 0


def register_zcrx(ctx: RingCtx, reg: IoUringZcrxIfqReg, area: IoUringZcrxAreaReg,
                  rd: IoUringRegionDesc, netdev: NetdevModel | None = None,
                  memory: AreaMemory = AreaMemory(), *,
                  trace: Trace | None = None,
                  kernel: KernelVersion = DEFAULT_KERNEL) -> RegResult:
    """``io_register_zcrx``: every check, in the kernel's order; the result as written back.

    ``netdev`` is the device ``if_idx`` names (``None``: no device has that index).
    ``kernel`` picks the side of the registration's version gates: before v7.0
    (ZCRX-BUFLEN-001) ``rx_buf_len`` is a reserved word, before the registration flags
    (ZCRX-REG-004) every flag is refused, before the event descriptor (ZCRX-REG-007) its
    word is reserved.  Before zcrx exists (ZCRX-REG-001's gate) the opcode itself is
    refused, ahead of every other check.
    """
    large_buffers = gate(kernel, "ZCRX-BUFLEN-001")
    result = RegResult(rc=0, rule="ZCRX-REG-011", reg=reg, area=area, region=rd)

    def fail(rc: int, rule: str, what: str) -> RegResult:
        emit(trace, rule, f"{what}: -{errno_name(rc)}")
        return attrs.evolve(result, rc=rc, rule=rule)

    # ZCRX-REG-001: before v6.15 the syscall refuses opcode 32 as not below
    # IORING_REGISTER_LAST, before it even looks up the ring.
    if not gate(kernel, "ZCRX-REG-001"):
        return fail(-errno.EINVAL, "ZCRX-REG-001",
                    "IORING_REGISTER_ZCRX_IFQ (32) is not below IORING_REGISTER_LAST")
    # ZCRX-REG-001, ZCRX-REG-002: privilege and ring features come first.
    if not ctx.cap_net_admin:
        return fail(-errno.EPERM, "ZCRX-REG-001", "CAP_NET_ADMIN required")
    if not ctx.flags & IORING_SETUP_DEFER_TASKRUN:
        return fail(-errno.EINVAL, "ZCRX-REG-002", "ring lacks IORING_SETUP_DEFER_TASKRUN")
    if not ctx.flags & (IORING_SETUP_CQE32 | IORING_SETUP_CQE_MIXED):
        return fail(-errno.EINVAL, "ZCRX-REG-002", "ring has neither CQE32 nor CQE_MIXED")
    emit(trace, "ZCRX-REG-001", "caller has CAP_NET_ADMIN")
    emit(trace, "ZCRX-REG-002", "ring has DEFER_TASKRUN and 32-byte CQEs", flags=ctx.flags)
    # ZCRX-REG-003: reserved words and the output-only id (before v7.0 the rx_buf_len
    # word is __resv2, and before the event descriptor its word is __resv[0]).
    if any(reg.resv) or reg.zcrx_id:
        return fail(-errno.EINVAL, "ZCRX-REG-003", "reserved field or zcrx_id not zero")
    if reg.rx_buf_len and not large_buffers:
        return fail(-errno.EINVAL, "ZCRX-REG-003", "__resv2 (rx_buf_len since v7.0) not zero")
    if reg.event_desc and not gate(kernel, "ZCRX-REG-007"):
        return fail(-errno.EINVAL, "ZCRX-REG-003", "__resv[0] (event_desc later) not zero")
    # ZCRX-REG-004: flags (none at all before ZCRX_REG_IMPORT).
    known = ZCRX_SUPPORTED_REG_FLAGS if gate(kernel, "ZCRX-REG-004") else 0
    if reg.flags & ~known & U32:
        return fail(-errno.EINVAL, "ZCRX-REG-004", "unknown registration flag")
    if reg.flags & ZCRX_REG_IMPORT:
        raise InvalidConfig("importing another ring's zcrx is outside the model",
                            field="flags", value=reg.flags, rule="ZCRX-REG-004")
    nodev = bool(reg.flags & ZCRX_REG_NODEV)
    emit(trace, "ZCRX-REG-003", "reserved words and zcrx_id are zero")
    emit(trace, "ZCRX-REG-004", "registration flags known", flags=reg.flags)
    # ZCRX-REG-005: queue and ring size present; no queue named without a device.
    if reg.if_rxq == U32 or not reg.rq_entries:
        return fail(-errno.EINVAL, "ZCRX-REG-005", "if_rxq is -1 or rq_entries is 0")
    if nodev and (reg.if_rxq or reg.if_idx):
        return fail(-errno.EINVAL, "ZCRX-REG-005", "ZCRX_REG_NODEV with a device or queue")
    emit(trace, "ZCRX-REG-005", "queue and ring size given", if_rxq=reg.if_rxq)
    # ZCRX-REG-006: clamp (only with IORING_SETUP_CLAMP) and round up.
    entries = reg.rq_entries
    if entries > IO_RQ_MAX_ENTRIES:
        if not ctx.flags & IORING_SETUP_CLAMP:
            return fail(-errno.EINVAL, "ZCRX-REG-006", "rq_entries above 32768 without CLAMP")
        entries = IO_RQ_MAX_ENTRIES
    entries = 1 << (entries - 1).bit_length()
    emit(trace, "ZCRX-REG-006", "refill ring size", rq_entries=reg.rq_entries, used=entries)
    # ZCRX-AREA-001 (after its gate): the area is copied in right after the rounding and a
    # non-zero token refused there, before the event descriptor, the region and the device.
    if gate(kernel, "ZCRX-AREA-001") and area.rq_area_token:
        return fail(-errno.EINVAL, "ZCRX-AREA-001",
                    "rq_area_token is output only (checked when the area is copied in)")
    # ZCRX-REG-007: event descriptors are not modelled.
    if reg.event_desc:
        raise InvalidConfig("event/notification descriptors are outside the model",
                            field="event_desc", value=reg.event_desc, rule="ZCRX-REG-007")
    # ZCRX-REG-008: the region must hold the header and every entry.
    offsets = rq_offsets(kernel)
    need = offsets.rqes + 16 * entries
    if need > rd.size:
        return fail(-errno.EINVAL, "ZCRX-REG-008", f"region of {rd.size} bytes, {need} needed")
    # ZCRX-REG-009: io_create_region.
    emit(trace, "ZCRX-REG-008", "refill region large enough", size=rd.size, need=need)
    rc = create_region_check(rd)
    if rc:
        return fail(rc, "ZCRX-REG-009", "region descriptor refused")
    emit(trace, "ZCRX-REG-009", "region descriptor accepted")
    kern_readable = not area.flags & IORING_ZCRX_AREA_DMABUF
    result = attrs.evolve(result, kern_readable=kern_readable, nodev=nodev)
    # ZCRX-REG-010: the device and its DMA device.
    if not nodev:
        if netdev is None or netdev.ifindex != reg.if_idx:
            return fail(-errno.ENODEV, "ZCRX-REG-010", "no device with that if_idx")
        if not netdev.has_dma_dev:
            # ZCRX-REG-012: this is where veth and every parentless device stop.
            emit(trace, "ZCRX-REG-012", "no DMA device (veth, a parentless device)",
                 if_idx=reg.if_idx)
            return fail(-errno.EOPNOTSUPP, "ZCRX-REG-010", "device has no DMA device")
        emit(trace, "ZCRX-REG-010", "device and DMA device found", if_idx=reg.if_idx)
    has_dev = not nodev
    # io_zcrx_create_area: ZCRX-BUFLEN-001/002/004 before the memory is looked at.
    shift = rx_buf_shift(reg.rx_buf_len)
    if shift < 0:
        return fail(shift, "ZCRX-BUFLEN-002", "rx_buf_len not a power of two >= PAGE_SIZE")
    emit(trace, "ZCRX-BUFLEN-001", "niov size", rx_buf_len=reg.rx_buf_len, niov=1 << shift)
    if not has_dev and shift != PAGE_SHIFT:
        return fail(-errno.EOPNOTSUPP, "ZCRX-BUFLEN-004", "large buffers need a device")
    # io_import_area: ZCRX-AREA-001..005.
    if area.flags & ~IO_ZCRX_AREA_SUPPORTED_FLAGS:
        return fail(-errno.EINVAL, "ZCRX-AREA-001", "unknown area flag")
    if area.rq_area_token:
        return fail(-errno.EINVAL, "ZCRX-AREA-001", "rq_area_token is output only")
    if any(area.resv2):
        return fail(-errno.EINVAL, "ZCRX-AREA-001", "area __resv2 not zero")
    emit(trace, "ZCRX-AREA-001", "area flags, token and reserved words accepted")
    rc = validate_user_buf_range(area.addr, area.len, kernel)
    if rc:
        return fail(rc, "ZCRX-AREA-002", "area range refused")
    if area.addr & (PAGE_SIZE - 1) or area.len & (PAGE_SIZE - 1):
        return fail(-errno.EINVAL, "ZCRX-AREA-003", "area not page aligned")
    emit(trace, "ZCRX-AREA-002", "area range accepted", len=area.len)
    emit(trace, "ZCRX-AREA-003", "area page aligned")
    chunks = memory.chunks if memory.chunks is not None else (area.len,)
    if not chunks or any(c <= 0 for c in chunks):
        raise InvalidConfig("segments must be positive", field="memory.chunks",
                            value=memory.chunks, rule="ZCRX-AREA-004")
    if area.flags & IORING_ZCRX_AREA_DMABUF:
        if not has_dev:
            return fail(-errno.EINVAL, "ZCRX-AREA-004", "a dma-buf area needs a device")
        if area.addr:
            return fail(-errno.EINVAL, "ZCRX-AREA-004", "dma-buf offset must be 0")
        if sum(chunks) != area.len:
            return fail(-errno.EINVAL, "ZCRX-AREA-004", "dma-buf length differs from len")
    else:
        if area.dmabuf_fd:
            return fail(-errno.EINVAL, "ZCRX-AREA-004", "dmabuf_fd set for user memory")
        if not area.addr:
            return fail(-errno.EFAULT, "ZCRX-AREA-004", "user memory at address 0")
        if sum(chunks) != area.len:
            raise InvalidConfig("user memory segments must add up to the area length",
                                field="memory.chunks", value=memory.chunks,
                                rule="ZCRX-AREA-004")
    emit(trace, "ZCRX-AREA-004", "dma-buf area" if area.flags & IORING_ZCRX_AREA_DMABUF
         else "user memory area", segments=len(chunks))
    # ZCRX-BUFLEN-003: a niov must not straddle two DMA segments (since v7.0).
    if has_dev and large_buffers and shift > io_area_max_shift(chunks):
        return fail(-errno.ERANGE, "ZCRX-BUFLEN-003", "segments not aligned to rx_buf_len")
    if has_dev and large_buffers:
        emit(trace, "ZCRX-BUFLEN-003", "niovs fit the memory's contiguity",
             max_shift=io_area_max_shift(chunks), niov_shift=shift)
    # ZCRX-AREA-005: the niovs; the area token goes back to the user.
    num_niovs = area.len >> shift
    area_out = attrs.evolve(area, rq_area_token=area_token(0))
    result = attrs.evolve(result, niov_shift=shift, num_niovs=num_niovs, area=area_out)
    emit(trace, "ZCRX-AREA-005", f"area of {num_niovs} niovs of {1 << shift} bytes")
    if has_dev:
        assert netdev is not None
        # ZCRX-BUFLEN-005: a page size is asked of the queue only if the user asked.
        mp_size = (1 << shift) if reg.rx_buf_len else 0
        result = attrs.evolve(result, mp_rx_page_size=mp_size)
        emit(trace, "ZCRX-BUFLEN-005", "provider rx_page_size", rx_page_size=mp_size)
        if not large_buffers:
            # Before v7.0 there is no queue config for a provider to set: the driver
            # keeps its own page size, unvalidated (ZCRX-QUEUE-002).
            netdev = attrs.evolve(netdev, qcfg_rx_page_size=False)
        rc, rule, qcfg_size = open_rxq(netdev, reg.if_rxq, mp_size, shift, trace=trace)
        result = attrs.evolve(result, driver_rx_page_size=qcfg_size)
        if rc:
            return fail(rc, rule, "binding the queue failed")
    # ZCRX-REG-011, ZCRX-BUFLEN-006: what goes back to the user.
    written = (1 << shift) if large_buffers else 0
    reg_out = attrs.evolve(reg, rq_entries=entries, offsets=offsets, zcrx_id=0,
                           rx_buf_len=written)
    if large_buffers:
        emit(trace, "ZCRX-BUFLEN-006", "chosen buffer size written back", rx_buf_len=written)
    emit(trace, "ZCRX-REG-011", "registered", zcrx_id=0, rq_entries=entries)
    return attrs.evolve(result, reg=reg_out)


def open_rxq(netdev: NetdevModel, rxq: int, mp_rx_page_size: int, niov_shift: int, *,
             trace: Trace | None = None) -> tuple[int, str, int | None]:
    """``__net_mp_open_rxq`` and the queue restart it triggers (ZCRX-QUEUE-001..003).

    Returns ``(rc, rule, rx_page_size the driver was configured with or None)``.
    """
    if not netdev.queue_mgmt_ops:
        return -errno.EOPNOTSUPP, "ZCRX-QUEUE-001", None
    if rxq >= netdev.real_num_rx_queues:
        return -errno.ERANGE, "ZCRX-QUEUE-001", None
    if not netdev.tcp_data_split:
        return -errno.EINVAL, "ZCRX-QUEUE-001", None
    if netdev.hds_thresh:
        return -errno.EINVAL, "ZCRX-QUEUE-001", None
    if netdev.xdp_attached:
        return -errno.EEXIST, "ZCRX-QUEUE-001", None
    if mp_rx_page_size and not netdev.qcfg_rx_page_size:
        emit(trace, "ZCRX-BUFLEN-005", "driver lacks QCFG_RX_PAGE_SIZE", size=mp_rx_page_size)
        return -errno.EOPNOTSUPP, "ZCRX-BUFLEN-005", None
    if netdev.rxq_mp_bound:
        return -errno.EEXIST, "ZCRX-QUEUE-001", None
    emit(trace, "ZCRX-QUEUE-001", "queue can take a memory provider", rxq=rxq)
    # ZCRX-QUEUE-002: driver defaults, then the provider's override, each validated.
    size = netdev.default_rx_page_size
    if netdev.qcfg_rx_page_size:
        rc = driver_validate_qcfg(netdev, size)
        if rc:
            return rc, "ZCRX-QUEUE-002", size
    if mp_rx_page_size:
        size = mp_rx_page_size
        rc = driver_validate_qcfg(netdev, size)
        if rc:
            return rc, "ZCRX-QUEUE-002", size
    emit(trace, "ZCRX-QUEUE-002", "queue config for the driver", rx_page_size=size)
    # ZCRX-QUEUE-003: the driver's pool has the order of its page size; io_pp_zc_init.
    order = max(size.bit_length() - 1 - PAGE_SHIFT, 0)
    rc, rule = pp_zc_init_check(order=order, niov_shift=niov_shift, page_shift=PAGE_SHIFT)
    if rc:
        emit(trace, rule, "io_pp_zc_init refuses the driver's pool", order=order,
             niov_shift=niov_shift)
        return rc, "ZCRX-QUEUE-003", size
    emit(trace, "ZCRX-MP-001", "io_pp_zc_init accepts the driver's pool", order=order)
    emit(trace, "ZCRX-QUEUE-003", "queue restarted with the provider")
    return 0, "ZCRX-QUEUE-003", size

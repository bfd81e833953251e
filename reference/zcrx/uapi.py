"""The zcrx user ABI: structs, flags and the offset encoding (rules ZCRX-UAPI-*).

Transcribed (not copied) from ``include/uapi/linux/io_uring/zcrx.h`` as read in
torvalds/linux (file version 146cc263e457, the 2026 header that split zcrx out of
``io_uring.h``) and ``include/uapi/linux/io_uring.h`` (``io_uring_region_desc``, setup and
CQE flags).  Layouts are little-endian, as on x86-64 and arm64: every struct is naturally
aligned, so there is no padding the kernel does not name.

Python cannot carry the kernel's double-underscore names on attributes (they are mangled
inside classes), so ``__pad``, ``__resv`` and ``__resv2`` are spelled ``pad``, ``resv`` and
``resv2``; ``KERNEL_LAYOUT`` of each struct keeps the kernel's spelling beside each offset.
"""

from __future__ import annotations

import struct
from typing import ClassVar

import attrs

from reference.errors import InvalidConfig, Truncated

# --- include/uapi/linux/io_uring/zcrx.h ---------------------------------------------------
#: Bit from which the area id is encoded into offsets (ZCRX-UAPI-007).
IORING_ZCRX_AREA_SHIFT = 48
#: Every bit at or above ``IORING_ZCRX_AREA_SHIFT``.
IORING_ZCRX_AREA_MASK = ~((1 << IORING_ZCRX_AREA_SHIFT) - 1) & 0xFFFF_FFFF_FFFF_FFFF
#: ``enum io_uring_zcrx_area_flags``.
IORING_ZCRX_AREA_DMABUF = 1
#: ``enum zcrx_reg_flags``.
ZCRX_REG_IMPORT = 1
ZCRX_REG_NODEV = 2
#: ``enum zcrx_features`` (reported through the io_uring query interface).
ZCRX_FEATURE_RX_PAGE_SIZE = 1 << 0
ZCRX_FEATURE_EVENT = 1 << 1

# --- include/uapi/linux/io_uring.h --------------------------------------------------------
IORING_SETUP_CLAMP = 1 << 4
IORING_SETUP_CQE32 = 1 << 11
IORING_SETUP_DEFER_TASKRUN = 1 << 13
IORING_SETUP_CQE_MIXED = 1 << 18
IORING_CQE_F_MORE = 1 << 1
IORING_CQE_F_32 = 1 << 15
IORING_MEM_REGION_TYPE_USER = 1

U32 = 0xFFFF_FFFF
U64 = 0xFFFF_FFFF_FFFF_FFFF


def _check(name: str, value: int, limit: int, rule: str) -> None:
    """ZCRX-UAPI-008: a value that does not fit its field cannot be packed."""
    if not 0 <= value <= limit:
        raise InvalidConfig("does not fit its field", field=name, value=value, rule=rule)


def _need(data: bytes, size: int, what: str, rule: str) -> None:
    """ZCRX-UAPI-008: fewer bytes than the struct is a typed error; more are ignored, as
    the kernel copies exactly ``sizeof`` bytes from the user pointer."""
    if len(data) < size:
        raise Truncated(field=what, offset=0, needed=size, available=len(data), rule=rule)


@attrs.frozen
class IoUringZcrxRqe:
    """``struct io_uring_zcrx_rqe``: one refill-queue entry the user writes (ZCRX-UAPI-001).

    ``off`` names the buffer (area token | offset in the area), ``len`` is what the user
    got in the CQE (the kernel does not read it, ZCRX-REFILL-002), ``pad`` must be 0.
    """

    off: int = 0
    len: int = 0
    pad: int = 0

    SIZE: ClassVar[int] = 16
    KERNEL_LAYOUT: ClassVar[tuple[tuple[str, int, int], ...]] = (
        ("off", 0, 8), ("len", 8, 4), ("__pad", 12, 4))
    _S: ClassVar[struct.Struct] = struct.Struct("<QII")

    def pack(self) -> bytes:
        _check("off", self.off, U64, "ZCRX-UAPI-001")
        _check("len", self.len, U32, "ZCRX-UAPI-001")
        _check("__pad", self.pad, U32, "ZCRX-UAPI-001")
        return self._S.pack(self.off, self.len, self.pad)

    @classmethod
    def unpack(cls, data: bytes) -> IoUringZcrxRqe:
        _need(data, cls.SIZE, "io_uring_zcrx_rqe", "ZCRX-UAPI-001")
        off, ln, pad = cls._S.unpack_from(data)
        return cls(off, ln, pad)


@attrs.frozen
class IoUringZcrxCqe:
    """``struct io_uring_zcrx_cqe``: the second half of a 32-byte CQE (ZCRX-UAPI-002)."""

    off: int = 0
    pad: int = 0

    SIZE: ClassVar[int] = 16
    KERNEL_LAYOUT: ClassVar[tuple[tuple[str, int, int], ...]] = (("off", 0, 8), ("__pad", 8, 8))
    _S: ClassVar[struct.Struct] = struct.Struct("<QQ")

    def pack(self) -> bytes:
        _check("off", self.off, U64, "ZCRX-UAPI-002")
        _check("__pad", self.pad, U64, "ZCRX-UAPI-002")
        return self._S.pack(self.off, self.pad)

    @classmethod
    def unpack(cls, data: bytes) -> IoUringZcrxCqe:
        _need(data, cls.SIZE, "io_uring_zcrx_cqe", "ZCRX-UAPI-002")
        return cls(*cls._S.unpack_from(data))


@attrs.frozen
class Cqe32:
    """A whole 32-byte CQE as zcrx posts it: ``struct io_uring_cqe`` (``user_data``,
    ``res``, ``flags``) followed by the ``io_uring_zcrx_cqe`` (ZCRX-UAPI-002)."""

    user_data: int
    res: int
    flags: int
    zcrx: IoUringZcrxCqe

    SIZE: ClassVar[int] = 32
    _S: ClassVar[struct.Struct] = struct.Struct("<QiI")

    def pack(self) -> bytes:
        return self._S.pack(self.user_data, self.res, self.flags) + self.zcrx.pack()

    @classmethod
    def unpack(cls, data: bytes) -> Cqe32:
        _need(data, cls.SIZE, "io_uring_cqe (32 bytes)", "ZCRX-UAPI-002")
        user_data, res, flags = cls._S.unpack_from(data)
        return cls(user_data, res, flags, IoUringZcrxCqe.unpack(data[16:32]))


@attrs.frozen
class IoUringZcrxOffsets:
    """``struct io_uring_zcrx_offsets``: where head, tail and the entries sit in the refill
    region, as the kernel reports them (ZCRX-UAPI-003)."""

    head: int = 0
    tail: int = 0
    rqes: int = 0
    resv2: int = 0
    resv: tuple[int, int] = (0, 0)

    SIZE: ClassVar[int] = 32
    KERNEL_LAYOUT: ClassVar[tuple[tuple[str, int, int], ...]] = (
        ("head", 0, 4), ("tail", 4, 4), ("rqes", 8, 4), ("__resv2", 12, 4), ("__resv", 16, 16))
    _S: ClassVar[struct.Struct] = struct.Struct("<IIIIQQ")

    def pack(self) -> bytes:
        for name, v in (("head", self.head), ("tail", self.tail), ("rqes", self.rqes),
                        ("__resv2", self.resv2)):
            _check(name, v, U32, "ZCRX-UAPI-003")
        for v in self.resv:
            _check("__resv", v, U64, "ZCRX-UAPI-003")
        return self._S.pack(self.head, self.tail, self.rqes, self.resv2, *self.resv)

    @classmethod
    def unpack(cls, data: bytes) -> IoUringZcrxOffsets:
        _need(data, cls.SIZE, "io_uring_zcrx_offsets", "ZCRX-UAPI-003")
        h, t, r, r2, a, b = cls._S.unpack_from(data)
        return cls(h, t, r, r2, (a, b))


@attrs.frozen
class IoUringZcrxAreaReg:
    """``struct io_uring_zcrx_area_reg``: the memory the user lends (ZCRX-UAPI-004)."""

    addr: int = 0
    len: int = 0
    rq_area_token: int = 0
    flags: int = 0
    dmabuf_fd: int = 0
    resv2: tuple[int, int] = (0, 0)

    SIZE: ClassVar[int] = 48
    KERNEL_LAYOUT: ClassVar[tuple[tuple[str, int, int], ...]] = (
        ("addr", 0, 8), ("len", 8, 8), ("rq_area_token", 16, 8), ("flags", 24, 4),
        ("dmabuf_fd", 28, 4), ("__resv2", 32, 16))
    _S: ClassVar[struct.Struct] = struct.Struct("<QQQIIQQ")

    def pack(self) -> bytes:
        for name, v, lim in (("addr", self.addr, U64), ("len", self.len, U64),
                             ("rq_area_token", self.rq_area_token, U64),
                             ("flags", self.flags, U32), ("dmabuf_fd", self.dmabuf_fd, U32)):
            _check(name, v, lim, "ZCRX-UAPI-004")
        for v in self.resv2:
            _check("__resv2", v, U64, "ZCRX-UAPI-004")
        return self._S.pack(self.addr, self.len, self.rq_area_token, self.flags,
                            self.dmabuf_fd, *self.resv2)

    @classmethod
    def unpack(cls, data: bytes) -> IoUringZcrxAreaReg:
        _need(data, cls.SIZE, "io_uring_zcrx_area_reg", "ZCRX-UAPI-004")
        a, ln, tok, fl, fd, r0, r1 = cls._S.unpack_from(data)
        return cls(a, ln, tok, fl, fd, (r0, r1))


@attrs.frozen
class IoUringZcrxIfqReg:
    """``struct io_uring_zcrx_ifq_reg``: the IORING_REGISTER_ZCRX_IFQ argument (ZCRX-UAPI-005).

    ``rx_buf_len`` took the place of a reserved word (commit 795663b4d160, v7.0);
    ``event_desc`` (called ``notif_desc`` in early v7.1 trees) took the first of three
    reserved u64s, leaving ``__resv[2]``.
    """

    if_idx: int = 0
    if_rxq: int = 0
    rq_entries: int = 0
    flags: int = 0
    area_ptr: int = 0
    region_ptr: int = 0
    offsets: IoUringZcrxOffsets = IoUringZcrxOffsets()
    zcrx_id: int = 0
    rx_buf_len: int = 0
    event_desc: int = 0
    resv: tuple[int, int] = (0, 0)

    SIZE: ClassVar[int] = 96
    KERNEL_LAYOUT: ClassVar[tuple[tuple[str, int, int], ...]] = (
        ("if_idx", 0, 4), ("if_rxq", 4, 4), ("rq_entries", 8, 4), ("flags", 12, 4),
        ("area_ptr", 16, 8), ("region_ptr", 24, 8), ("offsets", 32, 32), ("zcrx_id", 64, 4),
        ("rx_buf_len", 68, 4), ("event_desc", 72, 8), ("__resv", 80, 16))
    _HEAD: ClassVar[struct.Struct] = struct.Struct("<IIIIQQ")
    _TAIL: ClassVar[struct.Struct] = struct.Struct("<IIQQQ")

    def pack(self) -> bytes:
        for name, v, lim in (("if_idx", self.if_idx, U32), ("if_rxq", self.if_rxq, U32),
                             ("rq_entries", self.rq_entries, U32), ("flags", self.flags, U32),
                             ("area_ptr", self.area_ptr, U64),
                             ("region_ptr", self.region_ptr, U64),
                             ("zcrx_id", self.zcrx_id, U32),
                             ("rx_buf_len", self.rx_buf_len, U32),
                             ("event_desc", self.event_desc, U64)):
            _check(name, v, lim, "ZCRX-UAPI-005")
        for v in self.resv:
            _check("__resv", v, U64, "ZCRX-UAPI-005")
        return (self._HEAD.pack(self.if_idx, self.if_rxq, self.rq_entries, self.flags,
                                self.area_ptr, self.region_ptr)
                + self.offsets.pack()
                + self._TAIL.pack(self.zcrx_id, self.rx_buf_len, self.event_desc, *self.resv))

    @classmethod
    def unpack(cls, data: bytes) -> IoUringZcrxIfqReg:
        _need(data, cls.SIZE, "io_uring_zcrx_ifq_reg", "ZCRX-UAPI-005")
        idx, rxq, ent, fl, ap, rp = cls._HEAD.unpack_from(data)
        offs = IoUringZcrxOffsets.unpack(data[32:64])
        zid, bl, ed, r0, r1 = cls._TAIL.unpack_from(data, 64)
        return cls(idx, rxq, ent, fl, ap, rp, offs, zid, bl, ed, (r0, r1))


@attrs.frozen
class IoUringRegionDesc:
    """``struct io_uring_region_desc``: the memory of the refill region (ZCRX-UAPI-006)."""

    user_addr: int = 0
    size: int = 0
    flags: int = 0
    id: int = 0
    mmap_offset: int = 0
    resv: tuple[int, int, int, int] = (0, 0, 0, 0)

    SIZE: ClassVar[int] = 64
    KERNEL_LAYOUT: ClassVar[tuple[tuple[str, int, int], ...]] = (
        ("user_addr", 0, 8), ("size", 8, 8), ("flags", 16, 4), ("id", 20, 4),
        ("mmap_offset", 24, 8), ("__resv", 32, 32))
    _S: ClassVar[struct.Struct] = struct.Struct("<QQIIQ4Q")

    def pack(self) -> bytes:
        for name, v, lim in (("user_addr", self.user_addr, U64), ("size", self.size, U64),
                             ("flags", self.flags, U32), ("id", self.id, U32),
                             ("mmap_offset", self.mmap_offset, U64)):
            _check(name, v, lim, "ZCRX-UAPI-006")
        for v in self.resv:
            _check("__resv", v, U64, "ZCRX-UAPI-006")
        return self._S.pack(self.user_addr, self.size, self.flags, self.id, self.mmap_offset,
                            *self.resv)

    @classmethod
    def unpack(cls, data: bytes) -> IoUringRegionDesc:
        _need(data, cls.SIZE, "io_uring_region_desc", "ZCRX-UAPI-006")
        ua, sz, fl, i, mo, a, b, c, d = cls._S.unpack_from(data)
        return cls(ua, sz, fl, i, mo, (a, b, c, d))


# --- the offset encoding ------------------------------------------------------------------

def area_token(area_id: int) -> int:
    """``rq_area_token`` of an area: its id shifted to bit 48 (ZCRX-UAPI-007)."""
    return (area_id << IORING_ZCRX_AREA_SHIFT) & U64


def encode_off(area_id: int, niov_index: int, niov_shift: int, offset: int) -> int:
    """The ``off`` of a CQE: area token + niov index << niov_shift + offset (ZCRX-UAPI-007)."""
    return (area_token(area_id) + (niov_index << niov_shift) + offset) & U64


def decode_off(off: int, niov_shift: int) -> tuple[int, int, int]:
    """``(area index, niov index, offset in the niov)`` as the kernel splits an ``off``
    (ZCRX-UAPI-007)."""
    low = off & ~IORING_ZCRX_AREA_MASK & U64
    # The kernel keeps both indexes in 32-bit unsigned ints: a niov index above 2^32 - 1
    # wraps (it only can with shifts below 16, from the 48-bit offset field).
    return ((off & U64) >> IORING_ZCRX_AREA_SHIFT, (low >> niov_shift) & U32,
            low & ((1 << niov_shift) - 1))

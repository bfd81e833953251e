"""reference.zcrx.uapi: struct layouts against the header, the offset encoding, bad bytes.

Offsets and sizes below are transcribed from ``include/uapi/linux/io_uring/zcrx.h``
(torvalds/linux, file version 146cc263e457) and ``include/uapi/linux/io_uring.h``
(``struct io_uring_region_desc``, ``struct io_uring_cqe``): every field is naturally
aligned, so the offsets follow from the declared types in order.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.errors import InvalidConfig, Truncated
from reference.zcrx import uapi
from reference.zcrx.uapi import (
    Cqe32,
    IoUringRegionDesc,
    IoUringZcrxAreaReg,
    IoUringZcrxCqe,
    IoUringZcrxIfqReg,
    IoUringZcrxOffsets,
    IoUringZcrxRqe,
)

# (field as the header spells it, offset, size) — from the header, not from the code.
HEADER: dict[str, tuple[int, list[tuple[str, int, int]]]] = {
    "io_uring_zcrx_rqe": (16, [("off", 0, 8), ("len", 8, 4), ("__pad", 12, 4)]),
    "io_uring_zcrx_cqe": (16, [("off", 0, 8), ("__pad", 8, 8)]),
    "io_uring_zcrx_offsets": (32, [("head", 0, 4), ("tail", 4, 4), ("rqes", 8, 4),
                                   ("__resv2", 12, 4), ("__resv", 16, 16)]),
    "io_uring_zcrx_area_reg": (48, [("addr", 0, 8), ("len", 8, 8), ("rq_area_token", 16, 8),
                                    ("flags", 24, 4), ("dmabuf_fd", 28, 4),
                                    ("__resv2", 32, 16)]),
    "io_uring_zcrx_ifq_reg": (96, [("if_idx", 0, 4), ("if_rxq", 4, 4), ("rq_entries", 8, 4),
                                   ("flags", 12, 4), ("area_ptr", 16, 8),
                                   ("region_ptr", 24, 8), ("offsets", 32, 32),
                                   ("zcrx_id", 64, 4), ("rx_buf_len", 68, 4),
                                   ("event_desc", 72, 8), ("__resv", 80, 16)]),
    "io_uring_region_desc": (64, [("user_addr", 0, 8), ("size", 8, 8), ("flags", 16, 4),
                                  ("id", 20, 4), ("mmap_offset", 24, 8), ("__resv", 32, 32)]),
}
CLASSES: dict[str, Any] = {
    "io_uring_zcrx_rqe": IoUringZcrxRqe, "io_uring_zcrx_cqe": IoUringZcrxCqe,
    "io_uring_zcrx_offsets": IoUringZcrxOffsets, "io_uring_zcrx_area_reg": IoUringZcrxAreaReg,
    "io_uring_zcrx_ifq_reg": IoUringZcrxIfqReg, "io_uring_region_desc": IoUringRegionDesc,
}
RULE = {"io_uring_zcrx_rqe": "ZCRX-UAPI-001", "io_uring_zcrx_cqe": "ZCRX-UAPI-002",
        "io_uring_zcrx_offsets": "ZCRX-UAPI-003", "io_uring_zcrx_area_reg": "ZCRX-UAPI-004",
        "io_uring_zcrx_ifq_reg": "ZCRX-UAPI-005", "io_uring_region_desc": "ZCRX-UAPI-006"}


def _le(data: bytes, off: int, size: int) -> int:
    return int.from_bytes(data[off:off + size], "little")


@pytest.mark.rule("ZCRX-UAPI-001", "ZCRX-UAPI-002", "ZCRX-UAPI-003", "ZCRX-UAPI-004",
                  "ZCRX-UAPI-005", "ZCRX-UAPI-006")
@pytest.mark.parametrize("name", sorted(HEADER))
def test_layout_matches_header(name: str) -> None:
    size, fields = HEADER[name]
    cls = CLASSES[name]
    assert size == cls.SIZE
    assert [(f, o, s) for f, o, s in cls.KERNEL_LAYOUT] == fields
    # the fields tile the struct with no gap: natural alignment, no hidden padding
    end = 0
    for _, off, sz in fields:
        assert off == end
        end = off + sz
    assert end == size


def test_ifq_reg_bytes_land_at_the_header_offsets() -> None:
    reg = IoUringZcrxIfqReg(
        if_idx=0x11, if_rxq=0x22, rq_entries=0x33, flags=0x44, area_ptr=0x5555_0000_0000_0055,
        region_ptr=0x66, offsets=IoUringZcrxOffsets(1, 2, 3, 4, (5, 6)), zcrx_id=0x77,
        rx_buf_len=0x8000, event_desc=0x99, resv=(0xAA, 0xBB))
    raw = reg.pack()
    assert len(raw) == 96
    want = {"if_idx": 0x11, "if_rxq": 0x22, "rq_entries": 0x33, "flags": 0x44,
            "area_ptr": 0x5555_0000_0000_0055, "region_ptr": 0x66, "zcrx_id": 0x77,
            "rx_buf_len": 0x8000, "event_desc": 0x99}
    for field, off, sz in HEADER["io_uring_zcrx_ifq_reg"][1]:
        if field in want:
            assert _le(raw, off, sz) == want[field], field
    assert [_le(raw, 32 + 4 * i, 4) for i in range(4)] == [1, 2, 3, 4]
    assert _le(raw, 48, 8) == 5 and _le(raw, 80, 8) == 0xAA and _le(raw, 88, 8) == 0xBB


@pytest.mark.rule("ZCRX-UAPI-001", "ZCRX-UAPI-004", "ZCRX-UAPI-006")
def test_small_structs_land_at_the_header_offsets() -> None:
    rqe = IoUringZcrxRqe(off=(1 << 48) | 0x1234, len=1448, pad=7).pack()
    assert (_le(rqe, 0, 8), _le(rqe, 8, 4), _le(rqe, 12, 4)) == ((1 << 48) | 0x1234, 1448, 7)
    area = IoUringZcrxAreaReg(addr=0x7F00_0000_0000, len=1 << 21, rq_area_token=1 << 48,
                              flags=1, dmabuf_fd=9, resv2=(2, 3)).pack()
    assert [_le(area, o, s) for _, o, s in HEADER["io_uring_zcrx_area_reg"][1][:5]] == \
        [0x7F00_0000_0000, 1 << 21, 1 << 48, 1, 9]
    rd = IoUringRegionDesc(user_addr=0x1000, size=0x2000, flags=1, id=5, mmap_offset=0x30,
                           resv=(1, 2, 3, 4)).pack()
    assert [_le(rd, o, s) for _, o, s in HEADER["io_uring_region_desc"][1][:5]] == \
        [0x1000, 0x2000, 1, 5, 0x30]
    assert [_le(rd, 32 + 8 * i, 8) for i in range(4)] == [1, 2, 3, 4]


@pytest.mark.rule("ZCRX-UAPI-002")
def test_cqe32_is_a_cqe_then_the_zcrx_half() -> None:
    # struct io_uring_cqe: user_data u64 @0, res s32 @8, flags u32 @12; zcrx cqe @16.
    cqe = Cqe32(user_data=0xABCD, res=-11, flags=uapi.IORING_CQE_F_MORE | uapi.IORING_CQE_F_32,
                zcrx=IoUringZcrxCqe(off=(3 << 12) + 5))
    raw = cqe.pack()
    assert len(raw) == 32
    assert _le(raw, 0, 8) == 0xABCD
    assert int.from_bytes(raw[8:12], "little", signed=True) == -11
    assert _le(raw, 12, 4) == (1 << 1) | (1 << 15)
    assert _le(raw, 16, 8) == 0x3005 and _le(raw, 24, 8) == 0
    assert Cqe32.unpack(raw) == cqe


def test_constants_match_the_headers() -> None:
    assert uapi.IORING_ZCRX_AREA_SHIFT == 48
    assert uapi.IORING_ZCRX_AREA_MASK == 0xFFFF_0000_0000_0000
    assert uapi.IORING_ZCRX_AREA_DMABUF == 1
    assert (uapi.ZCRX_REG_IMPORT, uapi.ZCRX_REG_NODEV) == (1, 2)
    assert (uapi.ZCRX_FEATURE_RX_PAGE_SIZE, uapi.ZCRX_FEATURE_EVENT) == (1, 2)
    assert uapi.IORING_SETUP_CLAMP == 0x10
    assert uapi.IORING_SETUP_CQE32 == 0x800
    assert uapi.IORING_SETUP_DEFER_TASKRUN == 0x2000
    assert uapi.IORING_SETUP_CQE_MIXED == 0x40000
    assert (uapi.IORING_CQE_F_MORE, uapi.IORING_CQE_F_32) == (2, 0x8000)
    assert uapi.IORING_MEM_REGION_TYPE_USER == 1


_u32 = st.integers(0, 2**32 - 1)
_u64 = st.integers(0, 2**64 - 1)


@pytest.mark.rule("ZCRX-UAPI-005", "ZCRX-UAPI-003")
@given(st.builds(IoUringZcrxIfqReg, _u32, _u32, _u32, _u32, _u64, _u64,
                 st.builds(IoUringZcrxOffsets, _u32, _u32, _u32, _u32, st.tuples(_u64, _u64)),
                 _u32, _u32, _u64, st.tuples(_u64, _u64)))
def test_ifq_reg_round_trips(reg: IoUringZcrxIfqReg) -> None:
    assert IoUringZcrxIfqReg.unpack(reg.pack()) == reg


@pytest.mark.rule("ZCRX-UAPI-001", "ZCRX-UAPI-004", "ZCRX-UAPI-006")
@given(rqe=st.builds(IoUringZcrxRqe, _u64, _u32, _u32),
       area=st.builds(IoUringZcrxAreaReg, _u64, _u64, _u64, _u32, _u32, st.tuples(_u64, _u64)),
       rd=st.builds(IoUringRegionDesc, _u64, _u64, _u32, _u32, _u64,
                    st.tuples(_u64, _u64, _u64, _u64)))
def test_other_structs_round_trip(rqe: IoUringZcrxRqe, area: IoUringZcrxAreaReg,
                                  rd: IoUringRegionDesc) -> None:
    assert IoUringZcrxRqe.unpack(rqe.pack()) == rqe
    assert IoUringZcrxAreaReg.unpack(area.pack()) == area
    assert IoUringRegionDesc.unpack(rd.pack()) == rd


@pytest.mark.rule("ZCRX-UAPI-008")
@pytest.mark.parametrize("name", sorted(HEADER))
def test_short_bytes_are_truncated_and_extra_bytes_ignored(name: str) -> None:
    cls = CLASSES[name]
    size = HEADER[name][0]
    with pytest.raises(Truncated) as err:
        cls.unpack(bytes(size - 1))
    assert err.value.needed == size and err.value.available == size - 1
    assert err.value.field == name
    assert cls.unpack(bytes(size) + b"\xff" * 8) == cls.unpack(bytes(size))


@pytest.mark.rule("ZCRX-UAPI-008")
def test_values_that_do_not_fit_are_refused() -> None:
    with pytest.raises(InvalidConfig):
        IoUringZcrxRqe(len=2**32).pack()
    with pytest.raises(InvalidConfig):
        IoUringZcrxIfqReg(rx_buf_len=-1).pack()
    with pytest.raises(InvalidConfig):
        IoUringRegionDesc(size=2**64).pack()


@pytest.mark.rule("ZCRX-UAPI-007")
def test_offset_encoding_hand_worked() -> None:
    # area 0, niov 5 of 4 KiB, 100 bytes in: 5 * 4096 + 100
    assert uapi.encode_off(0, 5, 12, 100) == 20580
    # area 1: the token is 1 << 48
    assert uapi.area_token(1) == 0x1_0000_0000_0000
    assert uapi.encode_off(1, 2, 15, 7) == 0x1_0000_0001_0007
    assert uapi.decode_off(0x1_0000_0001_0007, 15) == (1, 2, 7)
    # the niov index is a u32: 2^44 >> 12 = 2^32 wraps to 0
    assert uapi.decode_off(1 << 44, 12) == (0, 0, 0)
    assert uapi.decode_off((1 << 44) + 3 * 4096, 12) == (0, 3, 0)


@pytest.mark.rule("ZCRX-UAPI-007")
@given(area=st.integers(0, 0xFFFF), niov=st.integers(0, 2**20), shift=st.sampled_from(
    [12, 13, 15, 21]), data=st.data())
def test_offset_round_trips(area: int, niov: int, shift: int, data: st.DataObject) -> None:
    offset = data.draw(st.integers(0, (1 << shift) - 1))
    if (niov << shift) >= 1 << 48:
        return
    assert uapi.decode_off(uapi.encode_off(area, niov, shift, offset), shift) == \
        (area, niov, offset)

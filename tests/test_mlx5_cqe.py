"""Tests for reference/mlx5/cqe.py (SPEC: MLX5-CQE-*).

Independent reference: the struct definitions and constants of
include/linux/mlx5/device.h and include/linux/mlx5/cq.h (Kingxukai/linux v6.17-rc3, snapshot
0291023e7330), transcribed below as (field, byte offset, width) tables.  Offsets are summed
by hand from the member order; each test writes a distinct value into one field by raw byte
position and checks the decoder reads exactly that field.
"""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.errors import MalformedInput, Truncated
from reference.mlx5 import cqe as C

# struct mlx5_cqe64: u8 tls_outer_l3_tunneled; u8 rsvd0; __be16 wqe_id; union{lro: u8, u8,
# __be16, __be32}; __be32 rss_hash_result; u8 rss_hash_type; u8 ml_path; u8 rsvd20[2];
# __be16 check_sum; __be16 slid; __be32 flags_rqpn; u8 hds_ip_ext; u8 l4_l3_hdr_type;
# __be16 vlan_info; __be32 srqn; union{__be32 ...}; u8 rsvd40[4]; __be32 byte_cnt;
# __be32 timestamp_h; __be32 timestamp_l; __be32 sop_drop_qpn; __be16 wqe_counter;
# union{u8 signature; u8 validity_iteration_count}; u8 op_own.
CQE64 = [
    ("tls_outer_l3_tunneled", 0, 1),
    ("rsvd0", 1, 1),
    ("wqe_id", 2, 2),
    ("tcppsh_abort_dupack", 4, 1),
    ("min_ttl", 5, 1),
    ("tcp_win", 6, 2),
    ("ack_seq_num", 8, 4),
    ("rss_hash_result", 12, 4),
    ("rss_hash_type", 16, 1),
    ("ml_path", 17, 1),
    ("rsvd20", 18, 2),
    ("check_sum", 20, 2),
    ("slid", 22, 2),
    ("flags_rqpn", 24, 4),
    ("hds_ip_ext", 28, 1),
    ("l4_l3_hdr_type", 29, 1),
    ("vlan_info", 30, 2),
    ("srqn", 32, 4),
    ("ft_metadata", 36, 4),
    ("rsvd40", 40, 4),
    ("byte_cnt", 44, 4),
    ("timestamp_h", 48, 4),
    ("timestamp_l", 52, 4),
    ("sop_drop_qpn", 56, 4),
    ("wqe_counter", 60, 2),
    ("signature", 62, 1),
    ("op_own", 63, 1),
]

# struct mlx5_err_cqe: u8 rsvd0[32]; __be32 srqn; u8 rsvd1[18]; u8 vendor_err_synd;
# u8 syndrome; __be32 s_wqe_opcode_qpn; __be16 wqe_counter; u8 signature; u8 op_own.
ERR_CQE = [
    ("rsvd0", 0, 32),
    ("srqn", 32, 4),
    ("rsvd1", 36, 18),
    ("vendor_err_synd", 54, 1),
    ("syndrome", 55, 1),
    ("s_wqe_opcode_qpn", 56, 4),
    ("wqe_counter", 60, 2),
    ("signature", 62, 1),
    ("op_own", 63, 1),
]

#: Fields declared as byte arrays (u8 x[n]) in each struct.
BYTES_FIELDS = {"mlx5_cqe64": {"rsvd20", "rsvd40"}, "mlx5_err_cqe": {"rsvd0", "rsvd1"}}


def _raw_with(size: int, offset: int, width: int, value: bytes) -> bytes:
    raw = bytearray(size)
    raw[offset : offset + width] = value
    return bytes(raw)


def _value_bytes(width: int, seed: int) -> bytes:
    return bytes((seed * 37 + i * 11 + 1) & 0xFF for i in range(width))


@pytest.mark.rule("MLX5-CQE-001")
def test_offsets_cover_64_bytes_without_gaps() -> None:
    for table in (CQE64, ERR_CQE):
        end = 0
        for _, offset, width in table:
            assert offset == end
            end += width
        assert end == 64


@pytest.mark.rule("MLX5-CQE-001")
@pytest.mark.parametrize(("cls", "table"), [(C.mlx5_cqe64, CQE64), (C.mlx5_err_cqe, ERR_CQE)])
def test_each_field_sits_at_its_header_offset(
    cls: type[C.mlx5_cqe64] | type[C.mlx5_err_cqe], table: list[tuple[str, int, int]]
) -> None:
    for seed, (name, offset, width) in enumerate(table):
        value = _value_bytes(width, seed)
        raw = _raw_with(64, offset, width, value)
        decoded = cls.unpack(raw)
        as_int = int.from_bytes(value, "big")
        expected: object = value if name in BYTES_FIELDS[cls.__name__] else as_int
        assert getattr(decoded, name) == expected, name
        for other, _, _ in table:
            if other != name:
                got = getattr(decoded, other)
                assert got in (0, b"\0" * len(got) if isinstance(got, bytes) else 0), other
        assert decoded.pack() == raw


@st.composite
def _field_values(
    draw: st.DrawFn, table: list[tuple[str, int, int]], struct_name: str
) -> dict[str, object]:
    out: dict[str, object] = {}
    for name, _, width in table:
        if name in BYTES_FIELDS[struct_name]:
            out[name] = draw(st.binary(min_size=width, max_size=width))
        else:
            out[name] = draw(st.integers(0, (1 << (8 * width)) - 1))
    return out


@pytest.mark.rule("MLX5-CQE-001")
@given(_field_values(CQE64, "mlx5_cqe64"))
def test_cqe64_round_trip(values: dict[str, object]) -> None:
    cqe = C.mlx5_cqe64(**values)  # type: ignore[arg-type]
    raw = cqe.pack()
    for name, offset, width in CQE64:
        want = values[name]
        got = raw[offset : offset + width]
        assert got == (want if isinstance(want, bytes) else int(want).to_bytes(width, "big"))  # type: ignore[call-overload]
    assert C.mlx5_cqe64.unpack(raw) == cqe


@pytest.mark.rule("MLX5-CQE-001")
@given(_field_values(ERR_CQE, "mlx5_err_cqe"))
def test_err_cqe_round_trip(values: dict[str, object]) -> None:
    err = C.mlx5_err_cqe(**values)  # type: ignore[arg-type]
    assert C.mlx5_err_cqe.unpack(err.pack()) == err
    # The error view and the CQE view share op_own, wqe_counter and srqn.
    as_cqe = C.mlx5_cqe64.unpack(err.pack())
    assert (as_cqe.op_own, as_cqe.wqe_counter, as_cqe.srqn) == (
        err.op_own, err.wqe_counter, err.srqn)


@pytest.mark.rule("MLX5-CQE-001")
def test_union_views() -> None:
    raw = _raw_with(64, 4, 8, bytes([0x40, 0x22, 0x12, 0x34, 0xDE, 0xAD, 0xBE, 0xEF]))
    raw = raw[:36] + b"\x01\x02\x03\x04" + raw[40:62] + b"\x9a" + raw[63:]
    cqe = C.mlx5_cqe64.unpack(raw)
    assert cqe.shampo_header_size == 0x22
    assert cqe.shampo_header_entry_index == 0x1234
    assert cqe.shampo_data_offset == 0xDEADBEEF
    assert C.get_cqe_lro_tcppsh(cqe) == 1
    assert cqe.immediate == 0x01020304
    assert cqe.validity_iteration_count == 0x9A


@pytest.mark.rule("MLX5-CQE-004")
@given(st.integers(0, 0xFFFF), st.integers(0, 0xFFFF), st.integers(0, 0xFFFF_FFFF))
def test_mini_cqe_layout(checksum: int, stridx: int, byte_cnt: int) -> None:
    # struct mlx5_mini_cqe8: union{__be32 rx_hash_result; {__be16 checksum; __be16 stridx};
    # {__be16 wqe_counter; u8 s_wqe_opcode; u8 reserved}}; __be32 byte_cnt.
    raw = checksum.to_bytes(2, "big") + stridx.to_bytes(2, "big") + byte_cnt.to_bytes(4, "big")
    mini = C.mlx5_mini_cqe8.unpack(raw)
    assert (mini.checksum, mini.stridx, mini.byte_cnt) == (checksum, stridx, byte_cnt)
    assert mini.rx_hash_result == int.from_bytes(raw[:4], "big")
    assert mini.s_wqe_info_wqe_counter == checksum
    assert mini.s_wqe_info_s_wqe_opcode == raw[2]
    assert mini.s_wqe_info_reserved == raw[3]
    assert mini.pack() == raw
    assert C.mlx5_mini_cqe8.from_csum(checksum, stridx, byte_cnt) == mini


@pytest.mark.rule("MLX5-CQE-004")
def test_mini_array_positions_and_size() -> None:
    assert C.MLX5_MINI_CQE_ARRAY_SIZE == 8
    assert (C.MLX5_CQE_FORMAT_CSUM, C.MLX5_CQE_FORMAT_CSUM_STRIDX) == (1, 3)
    slot = b"".join(bytes([i, 0, 0, i]) + (100 + i).to_bytes(4, "big") for i in range(8))
    arr = C.unpack_mini_array(slot)
    assert [m.checksum for m in arr] == [i << 8 for i in range(8)]
    assert [m.stridx for m in arr] == list(range(8))
    assert [m.byte_cnt for m in arr] == [100 + i for i in range(8)]


@pytest.mark.rule("MLX5-CQE-002")
@pytest.mark.parametrize("cls", [C.mlx5_cqe64, C.mlx5_err_cqe])
def test_short_buffer_is_truncated(cls: type[C.mlx5_cqe64] | type[C.mlx5_err_cqe]) -> None:
    with pytest.raises(Truncated) as info:
        cls.unpack(bytes(63))
    assert info.value.needed == 64 and info.value.available == 63
    assert info.value.rule == "MLX5-CQE-002"
    with pytest.raises(Truncated):
        cls.unpack(bytes(128), offset=65)
    assert cls.unpack(bytes(128), offset=64) == cls()


@pytest.mark.rule("MLX5-CQE-002")
def test_mini_and_array_truncated_and_overwide() -> None:
    with pytest.raises(Truncated):
        C.mlx5_mini_cqe8.unpack(bytes(7))
    with pytest.raises(Truncated):
        C.unpack_mini_array(bytes(56))
    with pytest.raises(MalformedInput):
        C.mlx5_cqe64(wqe_id=0x10000).pack()
    with pytest.raises(MalformedInput):
        C.mlx5_cqe64(op_own=-1).pack()
    with pytest.raises(MalformedInput):
        C.mlx5_mini_cqe8.from_csum(0x10000, 0, 0)
    with pytest.raises(MalformedInput):
        C.mlx5_mini_cqe8(byte_cnt=1 << 32).pack()


@pytest.mark.rule("MLX5-CQE-003")
def test_op_own_accessors_and_constants() -> None:
    # include/linux/mlx5/cq.h
    assert (C.MLX5_CQE_OWNER_MASK, C.MLX5_CQE_REQ, C.MLX5_CQE_RESP_WR_IMM) == (1, 0, 1)
    assert (C.MLX5_CQE_RESP_SEND, C.MLX5_CQE_RESP_SEND_IMM, C.MLX5_CQE_RESP_SEND_INV) == (2, 3, 4)
    assert (C.MLX5_CQE_RESIZE_CQ, C.MLX5_CQE_SIG_ERR, C.MLX5_CQE_REQ_ERR) == (5, 12, 13)
    assert (C.MLX5_CQE_RESP_ERR, C.MLX5_CQE_INVALID) == (14, 15)
    assert (C.MLX5_NO_INLINE_DATA, C.MLX5_INLINE_DATA32_SEG) == (0, 1)
    assert (C.MLX5_INLINE_DATA64_SEG, C.MLX5_COMPRESSED) == (2, 3)
    cqe = C.mlx5_cqe64(op_own=0b0010_1101)  # opcode 2, format 3, owner 1
    assert C.get_cqe_opcode(cqe) == 2
    assert C.mlx5_get_cqe_format(cqe) == 3
    assert C.cqe_owner(cqe) == 1
    assert C.get_cqe_enhanced_num_mini_cqes(C.mlx5_cqe64(op_own=0x6C)) == 7
    assert C.get_cqe_enhanced_num_mini_cqes(C.mlx5_cqe64(op_own=0x0C)) == 1


@pytest.mark.rule("MLX5-CQE-005")
def test_rss_hash_type_masks() -> None:
    assert C.CQE_RSS_HTYPE_IP == 0b0000_1100
    assert C.CQE_RSS_HTYPE_L4 == 0b1100_0000
    assert (C.CQE_RSS_IP_NONE, C.CQE_RSS_IPV4, C.CQE_RSS_IPV6, C.CQE_RSS_RESERVED) == (0, 1, 2, 3)
    l4 = (C.CQE_RSS_L4_NONE, C.CQE_RSS_L4_TCP, C.CQE_RSS_L4_UDP, C.CQE_RSS_L4_IPSEC)
    assert l4 == (0, 1, 2, 3)
    assert C.rss_hash_type_of(C.CQE_RSS_IPV4, C.CQE_RSS_L4_TCP) == 0x44
    assert C.rss_hash_type_of(C.CQE_RSS_IPV6, C.CQE_RSS_L4_UDP) == 0x88
    assert C.rss_hash_type_of(C.CQE_RSS_IPV4, C.CQE_RSS_L4_NONE) == 0x04
    assert C.rss_hash_type_of(C.CQE_RSS_IPV6, C.CQE_RSS_L4_TCP) == 0x48


@pytest.mark.rule("MLX5-CQE-006")
def test_l4_l3_hdr_type_bits() -> None:
    low = (C.CQE_L4_HDR_TYPE_NONE, C.CQE_L4_HDR_TYPE_TCP_NO_ACK, C.CQE_L4_HDR_TYPE_UDP)
    assert low == (0, 1, 2)
    assert (C.CQE_L4_HDR_TYPE_TCP_ACK_NO_DATA, C.CQE_L4_HDR_TYPE_TCP_ACK_AND_DATA) == (3, 4)
    cqe = C.mlx5_cqe64(l4_l3_hdr_type=0b0100_1001)  # l4 = 4, l3 = 2, vlan
    assert C.get_cqe_l4_hdr_type(cqe) == 4
    assert C.get_cqe_l3_hdr_type(cqe) == C.MLX5_CQE_ROCE_L3_HEADER_TYPE_IPV4 == 2
    assert C.cqe_has_vlan(cqe)
    assert not C.cqe_has_vlan(C.mlx5_cqe64(l4_l3_hdr_type=0b0010_0100))
    assert (C.CQE_L2_OK, C.CQE_L3_OK, C.CQE_L4_OK) == (1, 2, 4)
    tls = C.mlx5_cqe64(tls_outer_l3_tunneled=0b0001_1001)
    assert C.cqe_is_tunneled(tls) and C.get_cqe_tls_offload(tls) == C.CQE_TLS_OFFLOAD_ERROR == 3


@pytest.mark.rule("MLX5-CQE-007")
def test_timestamp_and_lro_fields() -> None:
    raw = _raw_with(64, 48, 8, bytes.fromhex("0000000112345678"))
    raw = raw[:32] + b"\x05\x00\x00\x07" + raw[36:56] + bytes.fromhex("00abcdef") + raw[60:]
    cqe = C.mlx5_cqe64.unpack(raw)
    assert C.get_cqe_ts(cqe) == 0x1_1234_5678
    assert C.get_cqe_lro_num_seg(cqe) == 5
    assert C.get_cqe_flow_tag(cqe) == 0xDEF


@pytest.mark.rule("MLX5-CQE-008")
@given(st.integers(0, 0xFFFF), st.integers(0, 0x7FFF), st.booleans())
def test_striding_byte_cnt(length: int, strides: int, filler: bool) -> None:
    # struct mpwrq_cqe_bc { __be16 filler_consumed_strides; __be16 byte_cnt; } at offset 44.
    upper = (0x8000 if filler else 0) | strides
    raw = _raw_with(64, 44, 4, upper.to_bytes(2, "big") + length.to_bytes(2, "big"))
    cqe = C.mlx5_cqe64.unpack(raw)
    assert C.mpwrq_get_cqe_byte_cnt(cqe) == length
    assert C.mpwrq_get_cqe_consumed_strides(cqe) == strides
    assert C.mpwrq_is_filler_cqe(cqe) is filler
    assert C.mpwrq_byte_cnt(length, strides, filler) == cqe.byte_cnt
    assert C.mpwrq_get_cqe_stride_index(C.mlx5_cqe64(wqe_counter=strides)) == strides


@pytest.mark.rule("MLX5-CQE-008")
def test_striding_byte_cnt_bounds() -> None:
    with pytest.raises(MalformedInput):
        C.mpwrq_byte_cnt(0x10000, 1)
    with pytest.raises(MalformedInput):
        C.mpwrq_byte_cnt(1, 0x8000)
    assert (C.MLX5_MPWQE_LOG_STRIDE_SZ_BASE, C.MLX5_MPWQE_LOG_STRIDE_SZ_MAX) == (6, 13)
    assert (C.MLX5_MPWQE_LOG_NUM_STRIDES_EXT_BASE, C.MLX5_MPWQE_LOG_NUM_STRIDES_MAX) == (3, 16)


@pytest.mark.rule("MLX5-CQE-009")
@pytest.mark.parametrize("opcode", range(16))
def test_rx_err_cqe(opcode: int) -> None:
    cqe = C.mlx5_cqe64(op_own=opcode << 4)
    assert C.MLX5E_RX_ERR_CQE(cqe) is (opcode != 2)
    err = attrs.evolve(C.mlx5_err_cqe(), syndrome=C.MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR)
    assert err.syndrome == 1 and C.MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR == 0x22

"""mlx5 completion-queue entries on the wire (SPEC: MLX5-CQE-*).

Three layouts from ``include/linux/mlx5/device.h`` (v6.17-rc3): the 64-byte receive
completion ``struct mlx5_cqe64``, its error view ``struct mlx5_err_cqe`` and the 8-byte
``struct mlx5_mini_cqe8`` that CQE compression packs eight to a slot.  Every multi-byte
field is big-endian (``__be16``/``__be32``) in memory, so each class is one precompiled
big-endian ``struct.Struct`` (MLX5-CQE-001).  Field names are the kernel's; the unions
are kept as one stored field plus properties that read the other views.

The accessor functions below carry the kernel's names (``get_cqe_opcode``,
``mpwrq_get_cqe_consumed_strides``, ...) so the model can be read beside the driver.
"""

from __future__ import annotations

import operator
import struct
from collections.abc import Callable
from typing import Any, ClassVar

import attrs

from reference.errors import MalformedInput, Truncated

CQE_SIZE = 64
MINI_CQE_SIZE = 8

# --- include/linux/mlx5/cq.h -------------------------------------------------------------
MLX5_CQE_OWNER_MASK = 1
MLX5_CQE_REQ = 0
MLX5_CQE_RESP_WR_IMM = 1
MLX5_CQE_RESP_SEND = 2
MLX5_CQE_RESP_SEND_IMM = 3
MLX5_CQE_RESP_SEND_INV = 4
MLX5_CQE_RESIZE_CQ = 5
MLX5_CQE_SIG_ERR = 12
MLX5_CQE_REQ_ERR = 13
MLX5_CQE_RESP_ERR = 14
MLX5_CQE_INVALID = 15
# Not in the kernel: rdma-core's <infiniband/mlx5dv.h> names opcode 6
# MLX5_CQE_NO_PACKET; include/linux/mlx5/cq.h (v6.17-rc3, 6.12, 7.3) has no such name and
# mlx5e treats it like every opcode but RESP_SEND (MLX5-CQE-009).  Kept under a model name
# so no kernel-looking constant claims the kernel knows it.
RDMA_CORE_MLX5_CQE_NO_PACKET = 6

MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR = 0x01
MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR = 0x02
MLX5_CQE_SYNDROME_LOCAL_PROT_ERR = 0x04
MLX5_CQE_SYNDROME_WR_FLUSH_ERR = 0x05
MLX5_CQE_SYNDROME_MW_BIND_ERR = 0x06
MLX5_CQE_SYNDROME_BAD_RESP_ERR = 0x10
MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR = 0x11
MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR = 0x12
MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR = 0x13
MLX5_CQE_SYNDROME_REMOTE_OP_ERR = 0x14
MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR = 0x15
MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR = 0x16
MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR = 0x22

# --- include/linux/mlx5/device.h ---------------------------------------------------------
MLX5_CQE_SYND_FLUSHED_IN_ERROR = 5

# CQE format, op_own bits 3:2 (MLX5-CQE-003).
MLX5_NO_INLINE_DATA = 0
MLX5_INLINE_DATA32_SEG = 1
MLX5_INLINE_DATA64_SEG = 2
MLX5_COMPRESSED = 3

# Mini-CQE result formats (0, the implicit default, carries the RSS hash).
MLX5_CQE_FORMAT_HASH = 0  # model name for the implicit value; the header has no name for it
MLX5_CQE_FORMAT_CSUM = 0x1
MLX5_CQE_FORMAT_CSUM_STRIDX = 0x3

MLX5_CQE_COMPRESS_LAYOUT_BASIC = 0
MLX5_CQE_COMPRESS_LAYOUT_ENHANCED = 1

MLX5_MINI_CQE_ARRAY_SIZE = 8

MLX5_MPWQE_LOG_NUM_STRIDES_EXT_BASE = 3
MLX5_MPWQE_LOG_NUM_STRIDES_BASE = 9
MLX5_MPWQE_LOG_NUM_STRIDES_MAX = 16
MLX5_MPWQE_LOG_STRIDE_SZ_BASE = 6
MLX5_MPWQE_LOG_STRIDE_SZ_MAX = 13

CQE_L4_HDR_TYPE_NONE = 0x0
CQE_L4_HDR_TYPE_TCP_NO_ACK = 0x1
CQE_L4_HDR_TYPE_UDP = 0x2
CQE_L4_HDR_TYPE_TCP_ACK_NO_DATA = 0x3
CQE_L4_HDR_TYPE_TCP_ACK_AND_DATA = 0x4

# rss_hash_type (MLX5-CQE-005): bits 3:2 say which IP, bits 7:6 which L4 was hashed.
CQE_RSS_HTYPE_IP = 0x0C  # GENMASK(3, 2)
CQE_RSS_IP_NONE = 0x0
CQE_RSS_IPV4 = 0x1
CQE_RSS_IPV6 = 0x2
CQE_RSS_RESERVED = 0x3
CQE_RSS_HTYPE_L4 = 0xC0  # GENMASK(7, 6)
CQE_RSS_L4_NONE = 0x0
CQE_RSS_L4_TCP = 0x1
CQE_RSS_L4_UDP = 0x2
CQE_RSS_L4_IPSEC = 0x3

MLX5_CQE_ROCE_L3_HEADER_TYPE_GRH = 0x0
MLX5_CQE_ROCE_L3_HEADER_TYPE_IPV6 = 0x1
MLX5_CQE_ROCE_L3_HEADER_TYPE_IPV4 = 0x2

CQE_L2_OK = 1 << 0
CQE_L3_OK = 1 << 1
CQE_L4_OK = 1 << 2

CQE_TLS_OFFLOAD_NOT_DECRYPTED = 0x0
CQE_TLS_OFFLOAD_DECRYPTED = 0x1
CQE_TLS_OFFLOAD_RESYNC = 0x2
CQE_TLS_OFFLOAD_ERROR = 0x3


def _check_span(data: bytes | bytearray | memoryview, offset: int, size: int, name: str) -> None:
    if offset < 0 or len(data) - offset < size:
        raise Truncated(
            field=name,
            offset=offset,
            needed=size,
            available=max(0, len(data) - offset),
            rule="MLX5-CQE-002",
        )


def _pack(layout: struct.Struct, name: str, values: tuple[object, ...]) -> bytes:
    try:
        return layout.pack(*values)
    except struct.error as exc:
        raise MalformedInput(
            f"a field does not fit its width: {exc}", field=name, rule="MLX5-CQE-002"
        ) from exc


@attrs.frozen
class mlx5_cqe64:
    """``struct mlx5_cqe64`` (MLX5-CQE-001): a 64-byte receive completion.

    The LRO/SHAMPO union at bytes 4..11 is stored under its LRO names;
    ``shampo_*`` properties read the same bytes.  Byte 62 is ``signature``, also read
    as ``validity_iteration_count`` under enhanced compression.
    """

    tls_outer_l3_tunneled: int = 0  # 0
    rsvd0: int = 0  # 1
    wqe_id: int = 0  # 2, be16
    tcppsh_abort_dupack: int = 0  # 4 (lro) / shampo bit-byte
    min_ttl: int = 0  # 5 (lro) / shampo.header_size
    tcp_win: int = 0  # 6, be16 (lro) / shampo.header_entry_index
    ack_seq_num: int = 0  # 8, be32 (lro) / shampo.data_offset
    rss_hash_result: int = 0  # 12, be32
    rss_hash_type: int = 0  # 16
    ml_path: int = 0  # 17
    rsvd20: bytes = b"\0\0"  # 18
    check_sum: int = 0  # 20, be16
    slid: int = 0  # 22, be16
    flags_rqpn: int = 0  # 24, be32
    hds_ip_ext: int = 0  # 28
    l4_l3_hdr_type: int = 0  # 29
    vlan_info: int = 0  # 30, be16
    srqn: int = 0  # 32, be32: [31:24] lro_num_seg, [23:0] srqn
    ft_metadata: int = 0  # 36, be32 (union immediate / inval_rkey / pkey / ft_metadata)
    rsvd40: bytes = b"\0\0\0\0"  # 40
    byte_cnt: int = 0  # 44, be32
    timestamp_h: int = 0  # 48, be32
    timestamp_l: int = 0  # 52, be32
    sop_drop_qpn: int = 0  # 56, be32
    wqe_counter: int = 0  # 60, be16
    signature: int = 0  # 62 (union validity_iteration_count)
    op_own: int = 0  # 63

    LAYOUT: ClassVar[struct.Struct] = struct.Struct(">BBHBBHIIBB2sHHIBBHII4sIIIIHBB")

    @classmethod
    def unpack(cls, data: bytes | bytearray | memoryview, offset: int = 0) -> mlx5_cqe64:
        """Decode 64 bytes at ``offset``; fewer raise :class:`Truncated` (MLX5-CQE-002)."""
        _check_span(data, offset, CQE_SIZE, "mlx5_cqe64")
        return cls(*cls.LAYOUT.unpack_from(data, offset))

    def pack(self) -> bytes:
        """The 64 bytes of this CQE; a value too wide for its field raises (MLX5-CQE-002)."""
        return _pack(self.LAYOUT, "mlx5_cqe64", _CQE64_VALUES(self))

    # union views ------------------------------------------------------------------------
    @property
    def immediate(self) -> int:
        return self.ft_metadata

    @property
    def validity_iteration_count(self) -> int:
        return self.signature

    @property
    def shampo_header_size(self) -> int:
        return self.min_ttl

    @property
    def shampo_header_entry_index(self) -> int:
        return self.tcp_win

    @property
    def shampo_data_offset(self) -> int:
        return self.ack_seq_num


@attrs.frozen
class mlx5_err_cqe:
    """``struct mlx5_err_cqe`` (MLX5-CQE-001): the same 64 bytes read as an error report."""

    rsvd0: bytes = bytes(32)  # 0
    srqn: int = 0  # 32, be32
    rsvd1: bytes = bytes(18)  # 36
    vendor_err_synd: int = 0  # 54
    syndrome: int = 0  # 55
    s_wqe_opcode_qpn: int = 0  # 56, be32
    wqe_counter: int = 0  # 60, be16
    signature: int = 0  # 62
    op_own: int = 0  # 63

    LAYOUT: ClassVar[struct.Struct] = struct.Struct(">32sI18sBBIHBB")

    @classmethod
    def unpack(cls, data: bytes | bytearray | memoryview, offset: int = 0) -> mlx5_err_cqe:
        _check_span(data, offset, CQE_SIZE, "mlx5_err_cqe")
        return cls(*cls.LAYOUT.unpack_from(data, offset))

    def pack(self) -> bytes:
        return _pack(self.LAYOUT, "mlx5_err_cqe", _ERR_CQE_VALUES(self))


def _field_values(cls: type) -> Callable[[Any], tuple[object, ...]]:
    """The field values of an attrs class's instance in declaration order (as
    ``attrs.astuple(x, recurse=False)`` gives them), by one precompiled getter."""
    return operator.attrgetter(*(a.name for a in attrs.fields(cls)))


_CQE64_VALUES = _field_values(mlx5_cqe64)
_ERR_CQE_VALUES = _field_values(mlx5_err_cqe)


@attrs.frozen
class mlx5_mini_cqe8:
    """``struct mlx5_mini_cqe8`` (MLX5-CQE-004): one compressed completion.

    The first word is a union: ``rx_hash_result`` (hash format), or ``checksum`` and
    ``stridx`` (two be16, CSUM / CSUM_STRIDX formats), or the send-side ``s_wqe_info``.
    It is stored whole as ``rx_hash_result``; the properties split it.
    """

    rx_hash_result: int = 0  # 0, be32 (union)
    byte_cnt: int = 0  # 4, be32

    LAYOUT: ClassVar[struct.Struct] = struct.Struct(">II")

    @classmethod
    def from_csum(cls, checksum: int, stridx: int, byte_cnt: int) -> mlx5_mini_cqe8:
        if not (0 <= checksum <= 0xFFFF and 0 <= stridx <= 0xFFFF):
            raise MalformedInput(
                "checksum and stridx are 16-bit fields",
                field="mlx5_mini_cqe8",
                value=(checksum, stridx),
                rule="MLX5-CQE-004",
            )
        return cls((checksum << 16) | stridx, byte_cnt)

    @classmethod
    def unpack(cls, data: bytes | bytearray | memoryview, offset: int = 0) -> mlx5_mini_cqe8:
        _check_span(data, offset, MINI_CQE_SIZE, "mlx5_mini_cqe8")
        return cls(*cls.LAYOUT.unpack_from(data, offset))

    def pack(self) -> bytes:
        return _pack(self.LAYOUT, "mlx5_mini_cqe8", (self.rx_hash_result, self.byte_cnt))

    @property
    def checksum(self) -> int:
        return self.rx_hash_result >> 16

    @property
    def stridx(self) -> int:
        return self.rx_hash_result & 0xFFFF

    @property
    def s_wqe_info_wqe_counter(self) -> int:
        return self.rx_hash_result >> 16

    @property
    def s_wqe_info_s_wqe_opcode(self) -> int:
        return (self.rx_hash_result >> 8) & 0xFF

    @property
    def s_wqe_info_reserved(self) -> int:
        return self.rx_hash_result & 0xFF


def unpack_mini_array(slot: bytes | bytearray | memoryview) -> tuple[mlx5_mini_cqe8, ...]:
    """MLX5-CQE-004: a 64-byte slot read as ``MLX5_MINI_CQE_ARRAY_SIZE`` mini-CQEs."""
    _check_span(slot, 0, CQE_SIZE, "mini_cqe_array")
    return tuple(
        mlx5_mini_cqe8.unpack(slot, i * MINI_CQE_SIZE) for i in range(MLX5_MINI_CQE_ARRAY_SIZE)
    )


# --- accessors (device.h unless noted) --------------------------------------------------


def mlx5_get_cqe_format(cqe: mlx5_cqe64) -> int:
    """MLX5-CQE-003: bits 3:2 of ``op_own``."""
    return (cqe.op_own >> 2) & 0x3


def get_cqe_opcode(cqe: mlx5_cqe64) -> int:
    """MLX5-CQE-003: the high nibble of ``op_own``."""
    return cqe.op_own >> 4


def cqe_owner(cqe: mlx5_cqe64) -> int:
    """MLX5-CQE-003: bit 0 of ``op_own`` (``MLX5_CQE_OWNER_MASK``, include/linux/mlx5/cq.h)."""
    return cqe.op_own & MLX5_CQE_OWNER_MASK


def get_cqe_enhanced_num_mini_cqes(cqe: mlx5_cqe64) -> int:
    """MLX5-CQE-003: an enhanced compressed CQE stores (count - 1) in the opcode nibble."""
    return get_cqe_opcode(cqe) + 1


def get_cqe_lro_tcppsh(cqe: mlx5_cqe64) -> int:
    return (cqe.tcppsh_abort_dupack >> 6) & 1


def get_cqe_l4_hdr_type(cqe: mlx5_cqe64) -> int:
    """MLX5-CQE-006: bits 6:4 of ``l4_l3_hdr_type``."""
    return (cqe.l4_l3_hdr_type >> 4) & 0x7


def get_cqe_l3_hdr_type(cqe: mlx5_cqe64) -> int:
    """MLX5-CQE-006: bits 3:2 of ``l4_l3_hdr_type``.

    Not an accessor in v6.17-rc3's device.h (the model keeps it for the device side).
    """
    return (cqe.l4_l3_hdr_type >> 2) & 0x3


def cqe_is_tunneled(cqe: mlx5_cqe64) -> bool:
    return bool(cqe.tls_outer_l3_tunneled & 0x1)


def get_cqe_tls_offload(cqe: mlx5_cqe64) -> int:
    return (cqe.tls_outer_l3_tunneled >> 3) & 0x3


def cqe_has_vlan(cqe: mlx5_cqe64) -> bool:
    """MLX5-CQE-006: bit 0 of ``l4_l3_hdr_type``: the device stripped a VLAN tag."""
    return bool(cqe.l4_l3_hdr_type & 0x1)


def get_cqe_ts(cqe: mlx5_cqe64) -> int:
    """MLX5-CQE-007: ``timestamp_h`` is the high word, ``timestamp_l`` the low word."""
    return (cqe.timestamp_h << 32) | cqe.timestamp_l


def get_cqe_flow_tag(cqe: mlx5_cqe64) -> int:
    return cqe.sop_drop_qpn & 0xFFF


def get_cqe_lro_num_seg(cqe: mlx5_cqe64) -> int:
    """MLX5-CQE-007: bits 31:24 of ``srqn`` (read inline in en_rx.c mlx5e_build_rx_skb)."""
    return cqe.srqn >> 24


def mpwrq_get_cqe_byte_cnt(cqe: mlx5_cqe64) -> int:
    """MLX5-CQE-008: striding RQ: the low 16 bits of ``byte_cnt`` are the length."""
    return cqe.byte_cnt & 0xFFFF


def mpwrq_get_cqe_consumed_strides(cqe: mlx5_cqe64) -> int:
    """MLX5-CQE-008: bits 30:16 of ``byte_cnt``."""
    return (cqe.byte_cnt >> 16) & 0x7FFF


def mpwrq_is_filler_cqe(cqe: mlx5_cqe64) -> bool:
    """MLX5-CQE-008: bit 31 of ``byte_cnt`` marks a filler completion."""
    return bool(cqe.byte_cnt & 0x8000_0000)


def mpwrq_get_cqe_stride_index(cqe: mlx5_cqe64) -> int:
    """MLX5-CQE-008: on a striding RQ ``wqe_counter`` is the first stride's index."""
    return cqe.wqe_counter


def mpwrq_byte_cnt(byte_count: int, consumed_strides: int, filler: bool = False) -> int:
    """MLX5-CQE-008: compose the striding-RQ ``byte_cnt`` word (inverse of the accessors)."""
    if not (0 <= byte_count <= 0xFFFF and 0 <= consumed_strides <= 0x7FFF):
        raise MalformedInput(
            "striding byte_cnt holds a 16-bit length and 15-bit stride count",
            field="byte_cnt",
            value=(byte_count, consumed_strides),
            rule="MLX5-CQE-008",
        )
    return (int(filler) << 31) | (consumed_strides << 16) | byte_count


def MLX5E_RX_ERR_CQE(cqe: mlx5_cqe64) -> bool:
    """MLX5-CQE-009: en/txrx.h: any opcode other than RESP_SEND is an RX error, also
    opcodes the kernel's enum does not name (6, rdma-core's ``MLX5_CQE_NO_PACKET``)."""
    return get_cqe_opcode(cqe) != MLX5_CQE_RESP_SEND


def cqe_syndrome_needs_recover(syndrome: int) -> bool:
    """MLX5-CQE-009: ``en/health.h``: the error syndromes after which mlx5e recovers
    the queue (``trigger_report`` for an RQ)."""
    return syndrome in (MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, MLX5_CQE_SYNDROME_LOCAL_PROT_ERR,
                        MLX5_CQE_SYNDROME_WR_FLUSH_ERR)


def rss_hash_type_of(ip: int, l4: int) -> int:
    """MLX5-CQE-005: place the IP and L4 selectors in ``rss_hash_type``."""
    return ((ip & 0x3) << 2) | ((l4 & 0x3) << 6)

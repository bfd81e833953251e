"""Tests for reference/mlx5/device.py (SPEC: MLX5-DEV-*, MLX5-COMP-001..004).

Independent references: Microsoft's Toeplitz verification vectors
(conformance/vectors/ms_rss.py), a bit-at-a-time Toeplitz written here, scapy as the packet
builder and as the reader of header fields, a one's-complement sum written here word by word,
the CQE layout of include/linux/mlx5/device.h (offsets used directly on raw ring bytes), and
hand-worked stride / slot arithmetic.
"""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Packet, Raw

from conformance.vectors.ms_rss import IPV4_VECTORS, IPV6_VECTORS, MS_KEY, Vector
from reference import rss
from reference.errors import InvalidConfig, MalformedInput
from reference.mlx5 import cqe as C
from reference.mlx5.cq import Mlx5eRxCq, RqParams
from reference.mlx5.device import (
    Compression,
    DeviceConfig,
    Mlx5Device,
    RqType,
    TsFormat,
    new_ring,
)

RSS = rss.RssConfig.default(MS_KEY, 4)


def eth(type: int | None = None) -> Ether:
    """Explicit MAC addresses keep scapy from resolving neighbours (slow, and not needed)."""
    if type is None:
        return Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    return Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02", type=type)


def cfg(**kw: object) -> DeviceConfig:
    return DeviceConfig(rss=RSS, **kw)  # type: ignore[arg-type]


def one(frame: bytes, ts: int = 0, **kw: object) -> C.mlx5_cqe64:
    dev = Mlx5Device(cfg(**kw))
    (comp,) = dev.receive([frame], [ts])
    return comp.cqe


def toeplitz_ref(key: bytes, data: bytes) -> int:
    """Independent Toeplitz: slide a 32-bit window over the key, one input bit at a time."""
    window = int.from_bytes(key[:4], "big")
    result = 0
    for i in range(len(data) * 8):
        if data[i // 8] & (0x80 >> (i % 8)):
            result ^= window
        nxt = key[4 + i // 8] if 4 + i // 8 < len(key) else 0
        window = ((window << 1) | ((nxt >> (7 - i % 8)) & 1)) & 0xFFFF_FFFF
    return result


def ones_sum(data: bytes) -> int:
    """Word-by-word one's-complement sum with end-around carry (no complement)."""
    if len(data) % 2:
        data += b"\0"
    total = 0
    for i in range(0, len(data), 2):
        total += (data[i] << 8) | data[i + 1]
        total = (total & 0xFFFF) + (total >> 16)
    return total


# --- RSS (MLX5-DEV-002) ---------------------------------------------------------------------


@pytest.mark.rule("MLX5-DEV-002")
@pytest.mark.parametrize("vec", IPV4_VECTORS + IPV6_VECTORS)
def test_rss_hash_result_matches_published_vectors(vec: Vector) -> None:
    dst, dport, src, sport, hash_l3, hash_l3l4 = vec
    v6 = ":" in src
    ip = IPv6(src=src, dst=dst) if v6 else IP(src=src, dst=dst)
    tcp = bytes(eth() / ip / TCP(sport=sport, dport=dport))
    icmp = bytes(eth() / (IPv6(src=src, dst=dst, nh=59) if v6 else ip / ICMP()))
    cqe = one(tcp)
    assert cqe.rss_hash_result == hash_l3l4
    assert cqe.rss_hash_type == (0x48 if v6 else 0x44)
    cqe = one(icmp)
    assert cqe.rss_hash_result == hash_l3
    assert cqe.rss_hash_type == (0x08 if v6 else 0x04)


@pytest.mark.rule("MLX5-DEV-002")
@given(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1), st.integers(0, 65535),
       st.integers(0, 65535))
def test_rss_udp_against_independent_toeplitz(src: int, dst: int, sport: int, dport: int) -> None:
    s, d = str(ipaddress.IPv4Address(src)), str(ipaddress.IPv4Address(dst))
    frame = bytes(eth() / IP(src=s, dst=d) / UDP(sport=sport, dport=dport) / Raw(b"abc"))
    data = src.to_bytes(4, "big") + dst.to_bytes(4, "big") + sport.to_bytes(2, "big") + \
        dport.to_bytes(2, "big")
    cqe = one(frame)
    assert cqe.rss_hash_result == toeplitz_ref(MS_KEY, data)
    assert cqe.rss_hash_type & C.CQE_RSS_HTYPE_L4 == C.CQE_RSS_L4_UDP << 6
    assert cqe.rss_hash_type & C.CQE_RSS_HTYPE_IP == C.CQE_RSS_IPV4 << 2


@pytest.mark.rule("MLX5-DEV-002")
def test_non_ip_has_no_hash() -> None:
    cqe = one(bytes(eth(type=0x88CC) / Raw(b"x" * 50)))
    assert (cqe.rss_hash_result, cqe.rss_hash_type) == (0, 0)


# --- header facts (MLX5-DEV-003..005) ------------------------------------------------------


@pytest.mark.rule("MLX5-DEV-003")
@pytest.mark.parametrize(
    ("pkt", "l3", "l4"),
    [
        (IP() / TCP(flags="S"), 2, C.CQE_L4_HDR_TYPE_TCP_NO_ACK),
        (IP() / TCP(flags="A"), 2, C.CQE_L4_HDR_TYPE_TCP_ACK_NO_DATA),
        (IP() / TCP(flags="PA") / Raw(b"data"), 2, C.CQE_L4_HDR_TYPE_TCP_ACK_AND_DATA),
        (IPv6() / UDP(), 1, C.CQE_L4_HDR_TYPE_UDP),
        (IP() / ICMP(), 2, C.CQE_L4_HDR_TYPE_NONE),
        (IP(flags="MF") / UDP(), 2, C.CQE_L4_HDR_TYPE_NONE),
    ],
)
def test_header_types_follow_scapy(pkt: Packet, l3: int, l4: int) -> None:
    frame = bytes(eth() / pkt)
    cqe = one(frame)
    assert C.get_cqe_l3_hdr_type(cqe) == l3
    assert C.get_cqe_l4_hdr_type(cqe) == l4
    assert cqe.byte_cnt == len(frame)
    assert not C.cqe_has_vlan(cqe)


@pytest.mark.rule("MLX5-DEV-004")
@given(st.binary(max_size=300), st.booleans(), st.booleans())
def test_check_sum_is_ip_datagram_sum(payload: bytes, v6: bool, tagged: bool) -> None:
    ip = IPv6(src="2001:db8::1", dst="2001:db8::2") if v6 else IP(src="10.0.0.1", dst="10.0.0.2")
    inner = ip / UDP(sport=1, dport=2) / Raw(payload)
    frame = bytes((eth() / Dot1Q(vlan=5) / inner) if tagged else (eth() / inner))
    frame += b"\0" * max(0, 60 - len(frame))  # Ethernet padding the sum must leave out
    ip_bytes = bytes(inner)
    cqe = one(frame)
    assert cqe.check_sum == ones_sum(ip_bytes)


@pytest.mark.rule("MLX5-DEV-004")
def test_check_sum_non_ip_is_zero() -> None:
    assert one(bytes(eth(type=0x0806) / Raw(b"\x01" * 40))).check_sum == 0


@pytest.mark.rule("MLX5-DEV-005")
def test_validity_bits() -> None:
    good = bytes(eth() / IP() / TCP() / Raw(b"hello"))
    bad_l4 = bytes(eth() / IP() / TCP(chksum=0x1234) / Raw(b"hello"))
    bad_l3 = bytes(eth() / IP(chksum=0x1234) / UDP() / Raw(b"hello"))
    v6 = bytes(eth() / IPv6() / UDP() / Raw(b"x"))
    arp = bytes(eth(type=0x0806) / Raw(b"\0" * 28))
    assert one(good).hds_ip_ext == C.CQE_L2_OK | C.CQE_L3_OK | C.CQE_L4_OK
    assert one(bad_l4).hds_ip_ext == C.CQE_L2_OK | C.CQE_L3_OK
    assert one(bad_l3).hds_ip_ext == C.CQE_L2_OK | C.CQE_L4_OK
    assert one(v6).hds_ip_ext == 7
    assert one(arp).hds_ip_ext == C.CQE_L2_OK


# --- VLAN, timestamps (MLX5-DEV-006/007) -----------------------------------------------------


@pytest.mark.rule("MLX5-DEV-006")
def test_vlan_strip() -> None:
    inner = IP(src="1.1.1.1", dst="2.2.2.2") / UDP() / Raw(b"z" * 30)
    tagged = bytes(eth() / Dot1Q(prio=5, dei=1, vlan=100) / inner)
    dev = Mlx5Device(cfg(vlan_strip=True))
    (comp,) = dev.receive([tagged])
    assert C.cqe_has_vlan(comp.cqe)
    assert comp.cqe.vlan_info == (5 << 13) | (1 << 12) | 100
    assert comp.cqe.byte_cnt == len(tagged) - 4
    assert dev.placements[0].data == tagged[:12] + tagged[16:]
    assert comp.cqe.check_sum == ones_sum(bytes(inner))
    # Off: the tag stays; an 802.1ad outer tag is never stripped.
    assert not C.cqe_has_vlan(one(tagged))
    qinq = bytes(eth(type=0x88A8) / Dot1Q(vlan=7) / inner)
    assert not C.cqe_has_vlan(one(qinq, vlan_strip=True))


@pytest.mark.rule("MLX5-DEV-007")
def test_timestamp_formats() -> None:
    frame = bytes(eth() / IP() / UDP())
    rt = one(frame, 3 * 10**9 + 250, ts_format=TsFormat.REAL_TIME)
    assert (rt.timestamp_h, rt.timestamp_l) == (3, 250)
    # REAL_TIME_TO_NS(hi, lo) = hi * NSEC_PER_SEC + lo gives the value back.
    assert (C.get_cqe_ts(rt) >> 32) * 10**9 + (C.get_cqe_ts(rt) & 0xFFFFFFFF) == 3 * 10**9 + 250
    fr = one(frame, 0x1234_5678_9ABC)
    assert C.get_cqe_ts(fr) == 0x1234_5678_9ABC
    with pytest.raises(MalformedInput):
        one(frame, -1)
    with pytest.raises(MalformedInput):
        one(frame, 2**64)
    with pytest.raises(MalformedInput):
        one(frame, 2**32 * 10**9, ts_format=TsFormat.REAL_TIME)
    with pytest.raises(MalformedInput):
        Mlx5Device(cfg()).receive([frame, frame], [1])


# --- cyclic RQ (MLX5-DEV-008/009) ----------------------------------------------------------


@pytest.mark.rule("MLX5-DEV-008", "MLX5-DEV-009")
def test_cyclic_placement_and_length_error() -> None:
    dev = Mlx5Device(cfg(log_wq_size=2, mtu=1500, qpn=0x123456), wqe_ctr=0xFFFE)
    small = bytes(eth() / IP() / UDP() / Raw(b"a" * 10))
    big = bytes(eth() / IP() / UDP() / Raw(b"b" * 1600))  # 1642 > 1500 + 18
    edge = bytes(eth() / IP() / UDP() / Raw(b"c" * (1518 - 42)))  # exactly MTU + 18
    comps = dev.receive([small, big, edge])
    assert [c.error for c in comps] == [False, True, False]
    assert [c.cqe.wqe_counter for c in comps] == [0xFFFE, 0xFFFF, 0x0000]
    err = C.mlx5_err_cqe.unpack(comps[1].cqe.pack())
    assert err.syndrome == C.MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR
    assert C.get_cqe_opcode(comps[1].cqe) == C.MLX5_CQE_RESP_ERR
    assert C.MLX5E_RX_ERR_CQE(comps[1].cqe) and not C.MLX5E_RX_ERR_CQE(comps[0].cqe)
    assert err.s_wqe_opcode_qpn == 0x123456
    assert [(p.frame, p.wqe_index, p.offset) for p in dev.placements] == [(0, 2, 0), (2, 0, 0)]
    assert comps[2].cqe.byte_cnt == 1518


# --- striding RQ (MLX5-DEV-010..012) --------------------------------------------------------


def _udp(total: int) -> bytes:
    return bytes(eth() / IP() / UDP() / Raw(b"p" * (total - 42)))


@pytest.mark.rule("MLX5-DEV-010", "MLX5-DEV-011", "MLX5-DEV-012")
def test_striding_strides_filler_and_error() -> None:
    # 64-byte strides, 8 per WQE (512 bytes), 4 WQEs.
    dev = Mlx5Device(cfg(rq_type=RqType.STRIDING, log_stride_sz=6, log_num_strides=3,
                         log_wq_size=2))
    comps = dev.receive([_udp(100), _udp(200), _udp(150), _udp(600), _udp(64), _udp(448)])
    got = [
        (c.frame, c.filler, c.error, c.cqe.wqe_id, C.mpwrq_get_cqe_stride_index(c.cqe),
         C.mpwrq_get_cqe_consumed_strides(c.cqe), C.mpwrq_get_cqe_byte_cnt(c.cqe))
        for c in comps
    ]
    assert got == [
        (0, False, False, 0, 0, 2, 100),  # ceil(100/64) = 2 strides
        (1, False, False, 0, 2, 4, 200),  # ceil(200/64) = 4, strides 2..5
        (-1, True, False, 0, 6, 2, 0),  # 150 needs 3, only 2 left: filler
        (2, False, False, 1, 0, 3, 150),
        (3, False, True, 1, 3, 5, 0),  # 600 needs 10 > 8: error, WQE 1 closed
        (4, False, False, 2, 0, 1, 64),
        (5, False, False, 2, 1, 7, 448),  # fills WQE 2 exactly: no filler
    ]
    assert C.mpwrq_is_filler_cqe(comps[2].cqe)
    assert dev.cur_wqe == 3 and dev.cur_stride == 0
    assert [(p.wqe_index, p.offset) for p in dev.placements] == [
        (0, 0), (0, 128), (1, 0), (2, 0), (2, 64)]


@pytest.mark.rule("MLX5-DEV-011")
def test_filler_carries_the_next_packets_other_fields() -> None:
    """The driver reads only the opcode, filler bit and stride count of a filler CQE; the
    model's other fields are those of the packet that did not fit (model choice, stated)."""
    dev = Mlx5Device(cfg(rq_type=RqType.STRIDING, log_stride_sz=6, log_num_strides=3))
    filler, pkt = dev.receive([_udp(448), _udp(150)])[1:]
    assert filler.filler and not pkt.filler
    same = ("rss_hash_result", "rss_hash_type", "check_sum", "hds_ip_ext", "l4_l3_hdr_type",
            "timestamp_h", "timestamp_l", "sop_drop_qpn", "op_own")
    assert all(getattr(filler.cqe, f) == getattr(pkt.cqe, f) for f in same)
    assert filler.cqe.rss_hash_result != 0


# --- ring writing (MLX5-DEV-013, MLX5-COMP-*) ------------------------------------------------


def _slot(ring: bytes | bytearray, ix: int) -> bytes:
    return bytes(ring[ix * 64 : ix * 64 + 64])


@pytest.mark.rule("MLX5-DEV-013")
def test_owner_bits_per_lap_and_no_overrun() -> None:
    dev = Mlx5Device(cfg(log_cq_size=2))
    ring = new_ring(2)
    assert all(_slot(ring, i)[63] == 0xF1 for i in range(4))
    dev.receive([_udp(60 + i) for i in range(6)])
    assert dev.write(ring, cc=0) == 4  # only four slots are free
    assert [_slot(ring, i)[63] for i in range(4)] == [0x20] * 4  # RESP_SEND, owner 0
    assert dev.write(ring, cc=2) == 2  # consumer freed two
    assert [_slot(ring, i)[63] & 1 for i in range(4)] == [1, 1, 0, 0]
    assert dev.pending == 0


@pytest.mark.rule("MLX5-DEV-013")
def test_new_ring_mid_lap_start() -> None:
    ring = new_ring(3, start=5)
    # slots 5..7 are next reached in lap 0 (owner 0 expected), 0..4 in lap 1.
    assert [_slot(ring, i)[63] & 1 for i in range(8)] == [0] * 5 + [1] * 3
    assert [_slot(ring, i)[62] for i in range(8)] == [0] * 5 + [0xFF] * 3
    with pytest.raises(InvalidConfig):
        new_ring(3, start=-1)


@pytest.mark.rule("MLX5-DEV-013", "MLX5-CQ-001")
def test_largest_ring_at_its_last_slot() -> None:
    """A 2**24-slot CQ (the largest, MLX5-DEV-001) whose counters start at its last slot in
    lap 3: that slot is next reached in lap 3 (owner 1 expected, so it holds 0; validity
    byte 2), every other slot in lap 4 (owner 0 expected: it holds 1; validity byte 3)."""
    size = 1 << 24
    ring = new_ring(24, start=3 * size + size - 1)
    assert len(ring) == size * 64
    assert _slot(ring, size - 1)[62:] == bytes((2, 0xF0))
    for ix in (0, 1, size // 2, size - 2):
        assert _slot(ring, ix) == bytes(62) + bytes((3, 0xF1))
    reader = Mlx5eRxCq(RqParams(log_cq_size=24), cc=3 * size + size - 1)
    assert reader.get_cqe(ring) is None  # hardware-owned: nothing new


@pytest.mark.rule("MLX5-COMP-001", "MLX5-COMP-002", "MLX5-COMP-004")
def test_basic_session_layout() -> None:
    frames = [_udp(100 + i) for i in range(10)]
    dev = Mlx5Device(cfg(log_cq_size=4, compression=Compression.BASIC))
    comps = dev.receive(frames)
    ring = new_ring(4)
    assert dev.write(ring, 0) == 10
    title = C.mlx5_cqe64.unpack(_slot(ring, 0))
    assert title.op_own == (2 << 4) | (3 << 2) | 0
    assert title.byte_cnt == 10
    assert title.rss_hash_result == comps[0].cqe.rss_hash_result
    arr0, arr1 = C.unpack_mini_array(_slot(ring, 1)), C.unpack_mini_array(_slot(ring, 8))
    assert [m.byte_cnt for m in arr0] == [100 + i for i in range(8)]
    assert [m.byte_cnt for m in arr1[:2]] == [108, 109] and arr1[2].byte_cnt == 0
    assert [m.checksum for m in arr0] == [c.cqe.check_sum for c in comps[:8]]
    assert all(m.stridx == 0 for m in arr0)  # CSUM format carries no stride index
    for ix in (2, 3, 4, 5, 6, 7, 9):  # not written
        assert _slot(ring, ix)[63] == 0xF1


@pytest.mark.rule("MLX5-COMP-001")
def test_runs_break_on_differing_fields_and_errors() -> None:
    a = bytes(eth() / IP(src="1.1.1.1") / UDP() / Raw(b"x" * 20))
    b = bytes(eth() / IP(src="2.2.2.2") / UDP() / Raw(b"x" * 20))
    big = _udp(2000)
    dev = Mlx5Device(cfg(log_cq_size=4, compression=Compression.BASIC))
    dev.receive([a, a, b, big, a, a], [0, 0, 0, 0, 0, 7])
    ring = new_ring(4)
    dev.write(ring, 0)
    fmts = [(_slot(ring, i)[63] >> 2) & 3 for i in range(6)]
    # a,a -> session (title at 0, array at 1); b alone; error alone; a then a with a new ts.
    assert fmts[0] == 3 and fmts[2:] == [0, 0, 0, 0]
    assert C.mlx5_cqe64.unpack(_slot(ring, 0)).byte_cnt == 2


@pytest.mark.rule("MLX5-COMP-003", "MLX5-COMP-004")
def test_enhanced_layout() -> None:
    frames = [_udp(70 + i) for i in range(10)]
    dev = Mlx5Device(cfg(log_cq_size=4, compression=Compression.ENHANCED,
                         rq_type=RqType.STRIDING, mini_cqe_format=C.MLX5_CQE_FORMAT_CSUM_STRIDX,
                         log_num_strides=6))
    comps = dev.receive(frames)
    ring = new_ring(4)
    assert dev.write(ring, 0) == 10
    first = _slot(ring, 0)
    assert first[63] == 0x20 and first[62] == 0  # plain CQE, validity byte of lap 0
    c1, c2 = _slot(ring, 1), _slot(ring, 8)
    assert c1[63] == (6 << 4) | (3 << 2) and c1[62] == 0  # 7 mini-CQEs
    assert c2[63] == (1 << 4) | (3 << 2)  # the remaining 2
    minis = C.unpack_mini_array(c1)[:7]
    assert [m.stridx for m in minis] == [c.cqe.wqe_counter for c in comps[1:8]]
    assert [m.byte_cnt for m in minis] == [c.cqe.byte_cnt for c in comps[1:8]]
    assert c1[56:62] == bytes(6)


@pytest.mark.rule("MLX5-DEV-001")
@pytest.mark.parametrize(
    "kw",
    [
        {"log_cq_size": 0},
        {"log_wq_size": 17},
        {"log_stride_sz": 5},
        {"log_num_strides": 2},
        {"mini_cqe_format": 0},
        {"mini_cqe_format": 3},  # CSUM_STRIDX on a cyclic RQ
        {"mtu": 50},
        {"max_session": 1},
        {"log_cq_size": 3, "max_session": 9},
        {"qpn": 1 << 24},
    ],
)
def test_invalid_configs(kw: dict[str, object]) -> None:
    with pytest.raises(InvalidConfig) as info:
        cfg(**kw)
    assert info.value.rule == "MLX5-DEV-001"


@pytest.mark.rule("MLX5-DEV-001")
def test_sctp_ports_cannot_be_hashed() -> None:
    fields = dict(rss.DEFAULT_HASH_FIELDS)
    fields[rss.SCTP_V4_FLOW] = rss.FOUR_TUPLE
    with pytest.raises(InvalidConfig):
        DeviceConfig(rss=rss.RssConfig(key=MS_KEY, indir=(0,), hash_fields=fields))
    assert cfg().session_limit == 64 and cfg(log_cq_size=4).session_limit == 16

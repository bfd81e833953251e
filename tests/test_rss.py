"""Tests for reference/rss.py (SPEC: RSS-*).

Independent references used here:
- Microsoft's published Toeplitz verification vectors (conformance/vectors/ms_rss.py, cited
  there; cross-checked against DPDK app/test/test_thash.c);
- a rolling-register Toeplitz written in this file the way the kernel selftest
  tools/testing/selftests/net/toeplitz.c computes it (32-bit register, one key bit shifted
  in per input bit), independent of the module's window-extraction code;
- scapy as an independent packet builder (the frames go through packet.parse);
- constants transcribed from include/uapi/linux/ethtool.h and include/net/xdp.h
  (Kingxukai/linux, v6.17-rc3), and hand-worked table arithmetic.
"""

from __future__ import annotations

import errno
import ipaddress
import struct

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.vectors.ms_rss import IPV4_VECTORS, IPV6_VECTORS, MS_KEY
from reference import packet, rss
from reference.errors import InvalidConfig, MalformedInput
from reference.kfuncs import XdpRssHashType as H
from reference.packet import L3, L4, PacketInfo
from reference.trace import Trace

ALL_VECTORS = IPV4_VECTORS + IPV6_VECTORS
MASK32 = 0xFFFF_FFFF


# --- independent helpers -------------------------------------------------------------------


def toeplitz_rolling(key: bytes, data: bytes) -> int:
    """Toeplitz as a 32-bit shift register fed one key bit per input bit (selftest style)."""
    register = int.from_bytes(key[:4], "big")
    result = 0
    for n, byte in enumerate(data):
        next_key_byte = key[4 + n]
        for bit in range(7, -1, -1):
            if byte & (1 << bit):
                result ^= register
            register = ((register << 1) & MASK32) | ((next_key_byte >> bit) & 1)
    return result


def tuple_bytes(src: str, dst: str, sport: int | None = None, dport: int | None = None) -> bytes:
    """Hand-built hash input: source address, destination address, then ports, big-endian."""
    raw = ipaddress.ip_address(src).packed + ipaddress.ip_address(dst).packed
    if sport is not None and dport is not None:
        raw += struct.pack("!HH", sport, dport)
    return raw


def make_info(
    src: str,
    dst: str,
    l4: L4 = L4.TCP,
    sport: int = -1,
    dport: int = -1,
    *,
    fragment: bool = False,
    first_fragment: bool = False,
) -> PacketInfo:
    """A PacketInfo for an untagged IP frame, built without the parser."""
    s, d = ipaddress.ip_address(src), ipaddress.ip_address(dst)
    v6 = s.version == 6
    hdr = 40 if v6 else 20
    has_l4 = l4 is not L4.NONE
    return PacketInfo(
        length=14 + hdr + 20,
        vlans=(),
        ethertype=0x86DD if v6 else 0x0800,
        l3=L3.IPV6 if v6 else L3.IPV4,
        l3_offset=14,
        l3_hdr_len=hdr + (8 if v6 and fragment else 0),
        ip_options=False,
        ipv6_ext=v6 and fragment,
        src=s.packed,
        dst=d.packed,
        ip_proto=int(l4) if has_l4 else 6,
        is_fragment=fragment,
        is_first_fragment=first_fragment,
        ip_payload_end=14 + hdr + 20,
        l4=l4,
        l4_offset=14 + hdr if has_l4 else -1,
        sport=sport,
        dport=dport,
    )


def vector_info(v: object, l4: L4 = L4.TCP) -> PacketInfo:
    assert hasattr(v, "src")
    return make_info(v.src, v.dst, l4, v.sport, v.dport)  # type: ignore[attr-defined]


NON_IP = PacketInfo(
    length=60,
    vlans=(),
    ethertype=0x0806,
    l3=L3.NONE,
    l3_offset=14,
    l3_hdr_len=0,
    ip_options=False,
    ipv6_ext=False,
    src=b"",
    dst=b"",
    ip_proto=-1,
    is_fragment=False,
    is_first_fragment=False,
    ip_payload_end=60,
    l4=L4.NONE,
    l4_offset=-1,
    sport=-1,
    dport=-1,
)


def ms_config(**kw: object) -> rss.RssConfig:
    return rss.RssConfig(key=MS_KEY, indir=rss.default_indir(128, 4), **kw)  # type: ignore[arg-type]


VECTOR_IDS = [f"v4-{i}" for i in range(len(IPV4_VECTORS))] + [
    f"v6-{i}" for i in range(len(IPV6_VECTORS))
]


# --- constants transcribed from the headers ---------------------------------------------------


@pytest.mark.rule("RSS-CFG-001")
def test_ethtool_constants_match_uapi_header() -> None:
    # include/uapi/linux/ethtool.h (Kingxukai/linux 0291023e, v6.17-rc3): flow-type enum.
    assert (rss.TCP_V4_FLOW, rss.UDP_V4_FLOW, rss.SCTP_V4_FLOW, rss.AH_ESP_V4_FLOW) == (1, 2, 3, 4)
    assert (rss.TCP_V6_FLOW, rss.UDP_V6_FLOW, rss.SCTP_V6_FLOW, rss.AH_ESP_V6_FLOW) == (5, 6, 7, 8)
    assert (rss.IPV4_FLOW, rss.IPV6_FLOW) == (0x10, 0x11)
    # "L2-L4 network traffic flow hash options"
    assert rss.RXH_L2DA == 0x2 and rss.RXH_VLAN == 0x4 and rss.RXH_L3_PROTO == 0x8
    assert rss.RXH_IP_SRC == 0x10 and rss.RXH_IP_DST == 0x20
    assert rss.RXH_L4_B_0_1 == 0x40 and rss.RXH_L4_B_2_3 == 0x80
    assert rss.RXH_GTP_TEID == 0x100 and rss.RXH_DISCARD == 0x8000_0000
    assert rss.RXH_XFRM_SYM_XOR == 1 and rss.RXH_XFRM_SYM_OR_XOR == 2
    # include/linux/netdevice.h: "RSS keys are 40 or 52 bytes long"
    assert rss.NETDEV_RSS_KEY_LEN == 52


@pytest.mark.rule("RSS-TYPE-001")
def test_xdp_rss_hash_types_match_xdp_header() -> None:
    """Each kind of result maps to the enum xdp_rss_hash_type value the header defines.

    Literal values transcribed from include/net/xdp.h (Kingxukai/linux 9b44fff6): L3_IPV4 is
    bit 0, L3_IPV6 bit 1, L4 bit 3, L4_TCP bit 4, L4_UDP bit 5, L4_SCTP bit 6.
    """
    v4, v6 = IPV4_VECTORS[0], IPV6_VECTORS[0]
    cfg = ms_config(hash_fields={**rss.DEFAULT_HASH_FIELDS, rss.SCTP_V6_FLOW: rss.FOUR_TUPLE})
    cases = [
        (make_info(v4.src, v4.dst, L4.TCP, 1, 2), 0x19, H.XDP_RSS_TYPE_L4_IPV4_TCP),
        (make_info(v4.src, v4.dst, L4.UDP, 1, 2), 0x29, H.XDP_RSS_TYPE_L4_IPV4_UDP),
        (make_info(v4.src, v4.dst, L4.ICMP), 0x01, H.XDP_RSS_TYPE_L3_IPV4),
        (make_info(v6.src, v6.dst, L4.TCP, 1, 2), 0x1A, H.XDP_RSS_TYPE_L4_IPV6_TCP),
        (make_info(v6.src, v6.dst, L4.UDP, 1, 2), 0x2A, H.XDP_RSS_TYPE_L4_IPV6_UDP),
        (make_info(v6.src, v6.dst, L4.SCTP, 1, 2), 0x4A, H.XDP_RSS_TYPE_L4_IPV6_SCTP),
        (make_info(v6.src, v6.dst, L4.ICMPV6), 0x02, H.XDP_RSS_TYPE_L3_IPV6),
    ]
    for info, literal, named in cases:
        got = rss.xdp_rss_hash_type(rss.rss_hash(info, cfg))
        assert got == literal == named
    none = rss.xdp_rss_hash_type(None)
    assert none == H.XDP_RSS_TYPE_NONE and int(none) == 0


# --- the published vectors --------------------------------------------------------------------


@pytest.mark.rule("RSS-TOEP-001", "RSS-TOEP-002")
@pytest.mark.parametrize("v", ALL_VECTORS, ids=VECTOR_IDS)
def test_ms_vectors_raw(v: object) -> None:
    """All 16 values: hand-built inputs straight into both implementations and the helper."""
    src, dst, sport, dport = v.src, v.dst, v.sport, v.dport  # type: ignore[attr-defined]
    l3 = tuple_bytes(src, dst)
    l3l4 = tuple_bytes(src, dst, sport, dport)
    for data, expected in ((l3, v.hash_l3), (l3l4, v.hash_l3l4)):  # type: ignore[attr-defined]
        assert rss.toeplitz(MS_KEY, data) == expected
        assert rss.toeplitz_bitwise(MS_KEY, data) == expected
        assert toeplitz_rolling(MS_KEY, data) == expected


@pytest.mark.rule("RSS-IN-001", "RSS-IN-002", "RSS-CFG-004", "RSS-TYPE-001")
@pytest.mark.parametrize("v", ALL_VECTORS, ids=VECTOR_IDS)
def test_ms_vectors_through_hash_input(v: object) -> None:
    """Same 16 values via PacketInfo → hash_input → toeplitz, with the default fields."""
    cfg = ms_config()
    src, dst, sport, dport = v.src, v.dst, v.sport, v.dport  # type: ignore[attr-defined]
    tcp = vector_info(v, L4.TCP)
    assert rss.hash_input(tcp, cfg) == tuple_bytes(src, dst, sport, dport)
    result = rss.rss_hash(tcp, cfg)
    assert result is not None
    assert result.hash == v.hash_l3l4  # type: ignore[attr-defined]
    assert result.l4 is L4.TCP
    v6 = ":" in src
    assert result.flow_type == (rss.TCP_V6_FLOW if v6 else rss.TCP_V4_FLOW)
    # XDP_RSS_TYPE_L4_IPV{4,6}_TCP = L3 bit | XDP_RSS_L4 | XDP_RSS_L4_TCP (include/net/xdp.h)
    assert rss.xdp_rss_hash_type(result) == ((2 if v6 else 1) | 8 | 16)

    # UDP hashes the same 4-tuple layout, so "with TCP" is also the UDP value.
    udp = rss.rss_hash(vector_info(v, L4.UDP), cfg)
    assert udp is not None and udp.hash == v.hash_l3l4  # type: ignore[attr-defined]
    assert rss.xdp_rss_hash_type(udp) == ((2 if v6 else 1) | 8 | 32)

    # ICMP is "other IP": the address pair only.
    icmp = make_info(src, dst, L4.ICMPV6 if v6 else L4.ICMP)
    assert rss.hash_input(icmp, cfg) == tuple_bytes(src, dst)
    only_l3 = rss.rss_hash(icmp, cfg)
    assert only_l3 is not None and only_l3.hash == v.hash_l3  # type: ignore[attr-defined]
    assert only_l3.l4 is None and only_l3.flow_type == (rss.IPV6_FLOW if v6 else rss.IPV4_FLOW)
    assert rss.xdp_rss_hash_type(only_l3) == (2 if v6 else 1)


# --- the same vectors as real frames through the parser ---------------------------------------


def _parse_or_skip(frame: bytes) -> PacketInfo:
    try:
        return packet.parse(frame)
    except NotImplementedError:
        pytest.skip("packet.parse is not implemented yet")


def _frames(v: object) -> tuple[bytes, bytes, bytes]:
    from scapy.layers.inet import ICMP, IP, TCP, UDP
    from scapy.layers.inet6 import ICMPv6EchoRequest, IPv6
    from scapy.layers.l2 import Ether
    from scapy.packet import Packet

    src, dst, sport, dport = v.src, v.dst, v.sport, v.dport  # type: ignore[attr-defined]
    l3: Packet
    other: Packet
    if ":" in src:
        l3, other = IPv6(src=src, dst=dst), ICMPv6EchoRequest()
    else:
        l3, other = IP(src=src, dst=dst), ICMP()
    eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    return (
        bytes(eth / l3 / TCP(sport=sport, dport=dport)),
        bytes(eth / l3 / UDP(sport=sport, dport=dport)),
        bytes(eth / l3 / other),
    )


@pytest.mark.rule("RSS-IN-001", "RSS-IN-002", "RSS-TOEP-001")
@pytest.mark.parametrize("v", ALL_VECTORS, ids=VECTOR_IDS)
def test_ms_vectors_through_scapy_and_parse(v: object) -> None:
    """All 16 values from scapy-built frames: parse → hash_input → toeplitz."""
    cfg = ms_config()
    tcp_frame, udp_frame, ip_only_frame = _frames(v)
    for frame in (tcp_frame, udp_frame):
        data = rss.hash_input(_parse_or_skip(frame), cfg)
        assert data is not None
        assert rss.toeplitz(MS_KEY, data) == v.hash_l3l4  # type: ignore[attr-defined]
    data = rss.hash_input(_parse_or_skip(ip_only_frame), cfg)
    assert data is not None
    assert rss.toeplitz(MS_KEY, data) == v.hash_l3  # type: ignore[attr-defined]


@pytest.mark.rule("RSS-IN-003")
def test_scapy_fragments_hash_addresses_only() -> None:
    from scapy.layers.inet import IP, TCP
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw

    v = IPV4_VECTORS[0]
    eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    first = eth / IP(src=v.src, dst=v.dst, flags="MF", frag=0) / TCP(sport=v.sport, dport=v.dport)
    later = eth / IP(src=v.src, dst=v.dst, proto=6, frag=100) / Raw(b"x" * 16)
    for frame in (first, later):
        result = rss.rss_hash(_parse_or_skip(bytes(frame)), ms_config())
        assert result is not None
        assert (result.hash, result.flow_type, result.l4) == (v.hash_l3, rss.IPV4_FLOW, None)


# --- classification details -------------------------------------------------------------------


@pytest.mark.rule("RSS-IN-003")
@pytest.mark.parametrize("first", [True, False])
@pytest.mark.parametrize("v", ALL_VECTORS, ids=VECTOR_IDS)
def test_fragments_use_the_ip_flow_two_tuple(v: object, first: bool) -> None:
    src, dst, sport, dport = v.src, v.dst, v.sport, v.dport  # type: ignore[attr-defined]
    ports = (sport, dport) if first else (-1, -1)
    info = make_info(src, dst, L4.TCP if first else L4.NONE, *ports, fragment=True,
                     first_fragment=first)  # fmt: skip
    result = rss.rss_hash(info, ms_config())
    assert result is not None
    assert result.input == tuple_bytes(src, dst)
    assert result.hash == v.hash_l3  # type: ignore[attr-defined]
    assert result.l4 is None


@pytest.mark.rule("RSS-IN-003", "RSS-CFG-004")
def test_sctp_defaults_to_two_tuple_and_can_hash_ports() -> None:
    v = IPV4_VECTORS[1]
    info = make_info(v.src, v.dst, L4.SCTP, v.sport, v.dport)
    default = rss.rss_hash(info, ms_config())
    assert default is not None
    assert (default.flow_type, default.hash, default.l4) == (rss.SCTP_V4_FLOW, v.hash_l3, None)
    four = ms_config(hash_fields={rss.SCTP_V4_FLOW: rss.FOUR_TUPLE})
    result = rss.rss_hash(info, four)
    assert result is not None and result.hash == v.hash_l3l4 and result.l4 is L4.SCTP
    assert rss.xdp_rss_hash_type(result) == 1 | 8 | 64  # XDP_RSS_TYPE_L4_IPV4_SCTP


@pytest.mark.rule("RSS-CFG-004")
def test_default_fields_match_mlx5_default_traffic_types() -> None:
    # drivers/net/ethernet/mellanox/mlx5/core/en/rss.c rss_default_config: TCP and UDP over
    # IPv4/IPv6 hash IP + L4 ports, plain IPv4/IPv6 (which also catches SCTP) hash IP only.
    cfg = ms_config()
    four = 0x10 | 0x20 | 0x40 | 0x80
    two = 0x10 | 0x20
    for ft in (1, 2, 5, 6):
        assert cfg.fields_for(ft) == four
    for ft in (3, 7, 0x10, 0x11):
        assert cfg.fields_for(ft) == two
    assert cfg.fields_for(4) == 0  # AH/ESP is not a modelled flow type


@pytest.mark.rule("RSS-IN-002")
def test_selected_fields_keep_their_order() -> None:
    v = IPV4_VECTORS[0]
    info = make_info(v.src, v.dst, L4.TCP, v.sport, v.dport)
    cfg = ms_config(hash_fields={rss.TCP_V4_FLOW: rss.RXH_IP_DST | rss.RXH_L4_B_2_3})
    expected = ipaddress.ip_address(v.dst).packed + v.dport.to_bytes(2, "big")
    assert rss.hash_input(info, cfg) == expected
    result = rss.rss_hash(info, cfg)
    assert result is not None and result.hash == toeplitz_rolling(MS_KEY, expected)
    assert result.l4 is L4.TCP  # a port was hashed, so the hash type is L4
    # TCP hashed on addresses only: the "IPv4 only" value, an L3 hash type.
    l3_only = rss.rss_hash(info, ms_config(hash_fields={rss.TCP_V4_FLOW: rss.TWO_TUPLE}))
    assert l3_only is not None and l3_only.hash == v.hash_l3 and l3_only.l4 is None
    assert rss.xdp_rss_hash_type(l3_only) == 1  # XDP_RSS_TYPE_L3_IPV4


@pytest.mark.rule("RSS-IN-004", "RSS-TYPE-001")
def test_unhashed_packets() -> None:
    cfg = ms_config()
    assert rss.flow_type_of(NON_IP) is None
    assert rss.hash_input(NON_IP, cfg) is None
    assert rss.rss_hash(NON_IP, cfg) is None
    assert rss.xdp_rss_hash_type(None) == 0  # XDP_RSS_TYPE_NONE
    v = IPV4_VECTORS[0]
    tcp = make_info(v.src, v.dst, L4.TCP, v.sport, v.dport)
    nothing = ms_config(hash_fields={})
    assert rss.hash_input(tcp, nothing) is None and rss.rss_hash(tcp, nothing) is None


# --- symmetric input transforms ---------------------------------------------------------------


@pytest.mark.rule("RSS-XFRM-001")
def test_rxfh_fields_symmetric_truth_table() -> None:
    # net/ethtool/common.c ethtool_rxfh_config_is_sym(), worked by hand.
    sym = rss.rxfh_fields_symmetric
    assert sym(0) and sym(0x30) and sym(0xC0) and sym(0xF0)
    assert not sym(0x10) and not sym(0x20) and not sym(0x40) and not sym(0x70)
    assert not sym(0x30 | 0x04)  # RXH_VLAN is not a src/dst pair


@pytest.mark.rule("RSS-XFRM-002")
@pytest.mark.parametrize("v", ALL_VECTORS, ids=VECTOR_IDS)
def test_symmetric_transform_layouts(v: object) -> None:
    """Documentation/networking/scaling.rst layouts, rebuilt with integer arithmetic."""
    src, dst, sport, dport = v.src, v.dst, v.sport, v.dport  # type: ignore[attr-defined]
    s, d = ipaddress.ip_address(src), ipaddress.ip_address(dst)
    width = 16 if s.version == 6 else 4
    a_xor = (int(s) ^ int(d)).to_bytes(width, "big")
    a_or = (int(s) | int(d)).to_bytes(width, "big")
    p_xor = struct.pack("!H", sport ^ dport)
    p_or = struct.pack("!H", sport | dport)
    info = vector_info(v)
    cases = {
        rss.RXH_XFRM_SYM_XOR: a_xor + a_xor + p_xor + p_xor,
        rss.RXH_XFRM_SYM_OR_XOR: a_or + a_xor + p_or + p_xor,
    }
    for xfrm, expected in cases.items():
        result = rss.rss_hash(info, ms_config(input_xfrm=xfrm))
        assert result is not None
        assert result.input == expected
        assert result.hash == toeplitz_rolling(MS_KEY, expected)


_ADDR4 = st.binary(min_size=4, max_size=4).map(lambda b: str(ipaddress.IPv4Address(b)))
_ADDR6 = st.binary(min_size=16, max_size=16).map(lambda b: str(ipaddress.IPv6Address(b)))
_PORT = st.integers(0, 0xFFFF)
_L4 = st.sampled_from([L4.TCP, L4.UDP, L4.SCTP, L4.ICMP])
_KEY = st.binary(min_size=rss.KEY_MIN_LEN, max_size=rss.NETDEV_RSS_KEY_LEN)


@pytest.mark.rule("RSS-XFRM-002")
@given(
    key=_KEY,
    addrs=st.one_of(st.tuples(_ADDR4, _ADDR4), st.tuples(_ADDR6, _ADDR6)),
    sport=_PORT,
    dport=_PORT,
    l4=_L4,
    xfrm=st.sampled_from([rss.RXH_XFRM_SYM_XOR, rss.RXH_XFRM_SYM_OR_XOR]),
)
def test_symmetric_transforms_make_both_directions_agree(
    key: bytes, addrs: tuple[str, str], sport: int, dport: int, l4: L4, xfrm: int
) -> None:
    cfg = rss.RssConfig(
        key=key,
        indir=(0,),
        hash_fields={**rss.DEFAULT_HASH_FIELDS, rss.SCTP_V4_FLOW: rss.FOUR_TUPLE},
        input_xfrm=xfrm,
    )
    src, dst = addrs
    forward = rss.rss_hash(make_info(src, dst, l4, sport, dport), cfg)
    reverse = rss.rss_hash(make_info(dst, src, l4, dport, sport), cfg)
    assert forward is not None and reverse is not None
    assert forward.hash == reverse.hash


@pytest.mark.rule("RSS-TOEP-001")
@given(
    pair=st.binary(min_size=2, max_size=2),
    addrs=st.one_of(st.tuples(_ADDR4, _ADDR4), st.tuples(_ADDR6, _ADDR6)),
    sport=_PORT,
    dport=_PORT,
)
def test_sixteen_bit_periodic_key_is_symmetric(
    pair: bytes, addrs: tuple[str, str], sport: int, dport: int
) -> None:
    """A key repeating every 16 bits gives the same window at bit i and i+16, so swapping
    addresses (a 32- or 128-bit move) and ports (a 16-bit move) leaves the hash unchanged."""
    key = pair * 20
    src, dst = addrs
    assert rss.toeplitz(key, tuple_bytes(src, dst, sport, dport)) == rss.toeplitz(
        key, tuple_bytes(dst, src, dport, sport)
    )


# --- Toeplitz properties ----------------------------------------------------------------------


_SAME_LEN_PAIR = st.integers(0, rss.MAX_INPUT_LEN).flatmap(
    lambda n: st.tuples(st.binary(min_size=n, max_size=n), st.binary(min_size=n, max_size=n))
)


@pytest.mark.rule("RSS-TOEP-001")
@given(key=_KEY, pair=_SAME_LEN_PAIR)
def test_toeplitz_is_linear_over_xor(key: bytes, pair: tuple[bytes, bytes]) -> None:
    a, b = pair
    a_xor_b = bytes(x ^ y for x, y in zip(a, b, strict=True))
    assert rss.toeplitz(key, a_xor_b) == rss.toeplitz(key, a) ^ rss.toeplitz(key, b)


@pytest.mark.rule("RSS-TOEP-001", "RSS-TOEP-002")
@given(key=st.binary(min_size=4, max_size=64), data=st.binary(max_size=60))
def test_fast_equals_definition_and_rolling_register(key: bytes, data: bytes) -> None:
    data = data[: max(0, len(key) - 4)]
    fast = rss.toeplitz(key, data)
    assert fast == rss.toeplitz_bitwise(key, data) == toeplitz_rolling(key, data)
    assert 0 <= fast <= MASK32


@pytest.mark.rule("RSS-TOEP-001")
@given(key=_KEY, data=st.binary(max_size=rss.MAX_INPUT_LEN), zeros=st.integers(0, 4))
def test_zero_input_bits_contribute_nothing(key: bytes, data: bytes, zeros: int) -> None:
    data = data[: len(key) - 4 - zeros]
    assert rss.toeplitz(key, data + bytes(zeros)) == rss.toeplitz(key, data)
    assert rss.toeplitz(key, bytes(len(data))) == 0


@pytest.mark.rule("RSS-TOEP-001")
def test_single_bit_inputs_select_key_windows() -> None:
    # Hand-worked from the key bytes.  Input bit 0 selects key bits 0..31 (6d 5a 56 da);
    # input bit 8 selects key bits 8..39 (5a 56 da 25).  The last bit of a 36-byte input is
    # bit 287: its window is key bits 287..318 of 320, i.e. the key's last 33 bits
    # (the low bit of 0x3b, then be ac 01 fa) without the final bit.
    one_at = [0x80] + [0] * 35
    assert rss.toeplitz(MS_KEY, bytes(one_at)) == 0x6D5A56DA
    assert rss.toeplitz(MS_KEY, bytes([0, 0x80] + [0] * 34)) == 0x5A56DA25
    last = bytes([0] * 35 + [0x01])
    assert rss.toeplitz(MS_KEY, last) == (0x3BBEAC01FA >> 1) & MASK32


# --- bad input ----------------------------------------------------------------------------------


@pytest.mark.rule("RSS-TOEP-001")
def test_short_key_for_input_is_refused() -> None:
    for fn in (rss.toeplitz, rss.toeplitz_bitwise):
        assert fn(bytes(16), bytes(12)) == 0  # 12 + 4 bytes is enough
        with pytest.raises(InvalidConfig) as err:
            fn(bytes(15), bytes(12))
        assert err.value.rule == "RSS-TOEP-001" and err.value.field == "key"
    with pytest.raises(InvalidConfig):
        rss.toeplitz(MS_KEY, bytes(37))  # a 40-byte key covers 36 bytes, not 37


@pytest.mark.rule("RSS-CFG-002")
def test_config_key_must_cover_the_longest_input() -> None:
    rss.RssConfig(key=bytes(40), indir=(0,))
    rss.RssConfig(key=bytes(52), indir=(0,))
    with pytest.raises(InvalidConfig) as err:
        rss.RssConfig(key=bytes(39), indir=(0,))
    assert err.value.rule == "RSS-CFG-002"


@pytest.mark.rule("RSS-CFG-003")
@pytest.mark.parametrize(
    "fields",
    [
        {rss.TCP_V4_FLOW: rss.FOUR_TUPLE | rss.RXH_VLAN},
        {rss.UDP_V6_FLOW: rss.RXH_L3_PROTO},
        {rss.TCP_V4_FLOW: rss.RXH_DISCARD},
        {rss.IPV4_FLOW: rss.FOUR_TUPLE},  # no ports in an IP-only flow
        {rss.AH_ESP_V4_FLOW: rss.TWO_TUPLE},  # flow type not modelled
    ],
)
def test_unmodelled_fields_are_refused(fields: dict[int, int]) -> None:
    with pytest.raises(InvalidConfig) as err:
        ms_config(hash_fields=fields)
    assert err.value.rule == "RSS-CFG-003"


@pytest.mark.rule("RSS-XFRM-001")
def test_bad_input_xfrm_is_refused() -> None:
    with pytest.raises(InvalidConfig) as err:
        ms_config(input_xfrm=3)
    assert err.value.rule == "RSS-XFRM-001"
    with pytest.raises(InvalidConfig) as err:
        ms_config(input_xfrm=1, hash_fields={rss.TCP_V4_FLOW: rss.RXH_IP_SRC | 0xC0})
    assert err.value.rule == "RSS-XFRM-001"
    ms_config(input_xfrm=2, hash_fields={rss.TCP_V4_FLOW: 0xC0})  # ports only: symmetric


@pytest.mark.rule("RSS-IN-005")
def test_wrong_address_lengths_and_ports_are_refused() -> None:
    good = make_info("1.2.3.4", "5.6.7.8", L4.TCP, 1, 2)
    cfg = ms_config()
    with pytest.raises(MalformedInput) as err:
        rss.rss_hash(attrs.evolve(good, src=bytes(16)), cfg)
    assert err.value.field == "src" and err.value.rule == "RSS-IN-005"
    with pytest.raises(MalformedInput) as err:
        rss.hash_input(attrs.evolve(good, dst=bytes(3)), cfg)
    assert err.value.field == "dst"
    v6 = make_info("::1", "::2", L4.UDP, 1, 2)
    with pytest.raises(MalformedInput):
        rss.rss_hash(attrs.evolve(v6, dst=bytes(4)), cfg)
    with pytest.raises(MalformedInput) as err:
        rss.rss_hash(attrs.evolve(good, sport=0x10000), cfg)
    assert err.value.field == "sport"


# --- indirection table --------------------------------------------------------------------------


@pytest.mark.rule("RSS-RETA-001")
def test_default_indirection_is_round_robin() -> None:
    # include/linux/ethtool.h ethtool_rxfh_indir_default(): index % n_rx_rings.
    table = rss.default_indir(128, 3)
    assert len(table) == 128
    assert table[:7] == (0, 1, 2, 0, 1, 2, 0)
    assert table[127] == 1  # 127 = 42 * 3 + 1
    assert rss.default_indir(4, 8) == (0, 1, 2, 3)  # more rings than entries
    assert rss.ethtool_rxfh_indir_default(10, 4) == 2
    with pytest.raises(InvalidConfig):
        rss.ethtool_rxfh_indir_default(0, 0)
    cfg = rss.RssConfig.default(MS_KEY, 5, indir_size=16)
    assert cfg.indir == (0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0)


@pytest.mark.rule("RSS-RETA-002")
def test_indirection_entries_must_name_existing_rings() -> None:
    # net/ethtool/ioctl.c ethtool_copy_validate_indir(): any entry >= ring count is -EINVAL.
    assert rss.validate_indir((0, 1, 2, 2), 3) == 0
    assert rss.validate_indir((0, 1, 3), 3) == -errno.EINVAL
    assert rss.validate_indir((-1,), 3) == -errno.EINVAL


@pytest.mark.rule("RSS-RETA-003")
def test_table_shape_is_parametric_but_not_empty() -> None:
    assert len(rss.RssConfig.default(MS_KEY, 4).indir) == 128
    assert len(rss.RssConfig.default(MS_KEY, 4, indir_size=512).indir) == 512
    for bad in ((), (0, -1)):
        with pytest.raises(InvalidConfig) as err:
            rss.RssConfig(key=MS_KEY, indir=bad)
        assert err.value.rule == "RSS-RETA-003"
    with pytest.raises(InvalidConfig):
        rss.default_indir(0, 4)
    with pytest.raises(InvalidConfig):
        rss.queue_for(1, ())


@pytest.mark.rule("RSS-RETA-004")
def test_queue_lookup_hand_worked() -> None:
    # 0x51ccc178: low seven bits 0x78 = 120; default table over 7 rings: 120 % 7 = 1.
    assert rss.queue_for(0x51CCC178, rss.default_indir(128, 7)) == 1
    # Ten-entry table: 0x323e8fc2 = 842960834, which ends in 4, so entry 4.
    table = (9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
    assert rss.queue_for(0x323E8FC2, table) == 5
    assert rss.queue_for(0xFFFF_FFFF, rss.default_indir(128, 128)) == 127
    with pytest.raises(MalformedInput):
        rss.queue_for(1 << 32, table)
    with pytest.raises(MalformedInput):
        rss.queue_for(-1, table)


@pytest.mark.rule("RSS-RETA-004", "RSS-RETA-001")
@given(
    hash_value=st.integers(0, MASK32),
    size_log2=st.integers(0, 11),
    rings_log2=st.integers(0, 7),
)
def test_power_of_two_lookup_is_a_mask_and_matches_selftest(
    hash_value: int, size_log2: int, rings_log2: int
) -> None:
    size, rings = 1 << size_log2, 1 << rings_log2
    table = tuple(range(size))
    assert rss.queue_for(hash_value, table) == hash_value & (size - 1)
    # tools/testing/selftests/net/toeplitz.c verify_rss() expects queue = hash % n_queues,
    # which holds for the default table whenever the ring count divides the table size.
    if rings <= 128:
        assert rss.queue_for(hash_value, rss.default_indir(128, rings)) == hash_value % rings


@pytest.mark.rule("RSS-RETA-005", "RSS-RETA-004")
def test_rx_queue() -> None:
    cfg = rss.RssConfig(key=MS_KEY, indir=(3, 1, 2, 0) * 32)
    assert rss.rx_queue(rss.rss_hash(NON_IP, cfg), cfg) == 3  # unhashed: entry 0
    v = IPV4_VECTORS[0]
    tcp = make_info(v.src, v.dst, L4.TCP, v.sport, v.dport)
    # 0x51ccc178 & 127 = 120; entry 120 of (3, 1, 2, 0) * 32 is 120 % 4 = 0 -> ring 3.
    assert rss.rx_queue(rss.rss_hash(tcp, cfg), cfg) == 3
    icmp = make_info(v.src, v.dst, L4.ICMP)
    # 0x323e8fc2 & 127 = 0x42 = 66; 66 % 4 = 2 -> ring 2.
    assert rss.rx_queue(rss.rss_hash(icmp, cfg), cfg) == 2


@pytest.mark.rule("RSS-IN-001", "RSS-IN-004", "RSS-RETA-004", "RSS-RETA-005")
def test_trace_names_the_rules() -> None:
    cfg = ms_config()
    v = IPV4_VECTORS[0]
    trace = Trace()
    tcp = make_info(v.src, v.dst, L4.TCP, v.sport, v.dport)
    rss.rx_queue(rss.rss_hash(tcp, cfg, trace), cfg, trace)
    assert trace.rules() == ["RSS-IN-001", "RSS-TOEP-001", "RSS-RETA-004"]
    trace = Trace()
    rss.rx_queue(rss.rss_hash(NON_IP, cfg, trace), cfg, trace)
    assert trace.rules() == ["RSS-IN-004", "RSS-RETA-005"]

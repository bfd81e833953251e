"""Checksum arithmetic and receive checksum helpers (CSUM-*).

Independent references: a deliberately naive word-by-word sum written here, the
worked example of RFC 1071, the CRC32c vectors of RFC 3720, constants transcribed from
include/linux/skbuff.h, and checksums scapy computed when it built the packets.
"""

from __future__ import annotations

import itertools
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scapy.layers.inet import ICMP, IP, TCP, UDP, IPOption_NOP
from scapy.layers.inet6 import ICMPv6EchoRequest, IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrHopByHop
from scapy.layers.l2 import ARP, Dot1AD, Dot1Q, Ether
from scapy.layers.sctp import SCTP
from scapy.packet import Packet, Raw

from reference.checksum import (
    CHECKSUM_COMPLETE,
    CHECKSUM_NONE,
    CHECKSUM_PARTIAL,
    CHECKSUM_UNNECESSARY,
    CSUM_MANGLED_0,
    SKB_MAX_CSUM_LEVEL,
    IpSummed,
    L4Csum,
    complete_csum_of,
    complete_validates_l4,
    crc32c,
    csum_add,
    csum_block_add,
    csum_block_sub,
    csum_fold,
    csum_ipv6_magic,
    csum_partial,
    csum_shift,
    csum_sub,
    csum_tcpudp_magic,
    csum_tcpudp_nofold,
    csum_unfold,
    decr_checksum_unnecessary,
    incr_checksum_unnecessary,
    ip6_compute_pseudo,
    ip_compute_csum,
    ip_fast_csum,
    l4_checksum_status,
    sctp_compute_cksum,
    verify_l4_checksum,
)
from reference.errors import MalformedInput
from reference.packet import L4, parse
from reference.trace import Trace

MACS = {"dst": "02:00:00:00:00:01", "src": "02:00:00:00:00:02"}
u32 = st.integers(0, 0xFFFFFFFF)


def naive_sum(data: bytes) -> int:
    """The textbook algorithm, written independently: add 16-bit words, then fold carries."""
    total = 0
    for i in range(0, len(data), 2):
        hi = data[i]
        lo = data[i + 1] if i + 1 < len(data) else 0
        total += hi * 256 + lo
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def naive_fold32(value: int) -> int:
    """Fold a 32-bit partial sum by repeated carry addition and complement it."""
    while value > 0xFFFF:
        value = (value & 0xFFFF) + (value >> 16)
    return ~value & 0xFFFF


def same_ones(a: int, b: int) -> bool:
    """Equal as one's-complement numbers (0 and 0xffff are both zero)."""
    return a % 0xFFFF == b % 0xFFFF


# ----------------------------------------------------------------------------------
# Arithmetic
# ----------------------------------------------------------------------------------


@pytest.mark.rule("CSUM-001", "CSUM-002", "CSUM-003")
@given(st.binary(max_size=300), u32)
def test_csum_partial_matches_naive_sum(data: bytes, initial: int) -> None:
    assert csum_fold(csum_partial(data)) == ~naive_sum(data) & 0xFFFF
    assert ip_compute_csum(data) == ~naive_sum(data) & 0xFFFF
    # With a starting value: fold(initial + data) is the naive sum of both.
    assert csum_fold(csum_partial(data, initial)) == naive_fold32(initial + naive_sum(data))
    assert 0 <= csum_partial(data, initial) <= 0xFFFFFFFF


@pytest.mark.rule("CSUM-002")
def test_csum_partial_edge_values() -> None:
    assert csum_partial(b"") == 0
    assert csum_partial(b"\0" * 7) == 0  # only all-zero data sums to +0
    assert csum_partial(b"\xff\xff") == 0xFFFF  # one's-complement -0 stays -0
    assert csum_partial(b"\x12") == 0x1200  # odd trailing byte is a high byte
    assert csum_partial(b"\x12\x34\x56") == 0x1234 + 0x5600


@pytest.mark.rule("CSUM-002", "CSUM-003", "CSUM-008")
def test_rfc1071_worked_example() -> None:
    # RFC 1071 section 3: bytes 00 01 f2 03 f4 f5 f6 f7 sum to ddf2 (after end-around
    # carry); the same bytes swapped pairwise sum to f2dd.
    data = bytes.fromhex("0001f203f4f5f6f7")
    assert csum_partial(data) == 0xDDF2
    assert csum_fold(csum_partial(data)) == 0x220D
    assert ip_compute_csum(data) == 0x220D
    swapped = bytes.fromhex("0100 03f2 f5f4 f7f6".replace(" ", ""))
    assert csum_partial(swapped) == 0xF2DD


@pytest.mark.rule("CSUM-003")
@given(u32)
def test_csum_fold_matches_naive_fold(value: int) -> None:
    assert csum_fold(value) == naive_fold32(value)


@pytest.mark.rule("CSUM-004")
@given(u32, u32)
def test_csum_add_sub(a: int, b: int) -> None:
    s = csum_add(a, b)
    assert 0 <= s <= 0xFFFFFFFF
    assert same_ones(s, a + b)  # 2**32 - 1 is a multiple of 0xffff
    assert same_ones(csum_sub(s, b), a)
    assert csum_add(a, b) == csum_add(b, a)
    # The carry out of bit 31 comes back in at bit 0.
    assert csum_add(0xFFFFFFFF, 1) == 1
    assert csum_add(0x80000000, 0x80000000) == 1


@pytest.mark.rule("CSUM-004")
@given(st.integers(0, 0xFFFF))
def test_csum_unfold_is_identity(n: int) -> None:
    assert csum_unfold(n) == n
    # ~csum_unfold(folded) turns a folded checksum back into a partial sum
    # (ip6_compute_pseudo relies on it): folding again gives the same number.
    assert same_ones(csum_fold(~csum_unfold(n) & 0xFFFFFFFF), n)


@pytest.mark.rule("CSUM-005")
@given(st.binary(max_size=200), st.data())
def test_block_add_of_parts_equals_whole(data: bytes, draw: st.DataObject) -> None:
    cuts = sorted(draw.draw(st.lists(st.integers(0, len(data)), max_size=4)))
    bounds = [0, *cuts, len(data)]
    total = 0
    for lo, hi in itertools.pairwise(bounds):
        total = csum_block_add(total, csum_partial(data[lo:hi]), lo)
    assert csum_fold(total) == csum_fold(csum_partial(data))


@pytest.mark.rule("CSUM-005")
@given(st.binary(max_size=200), st.data())
def test_block_sub_removes_a_tail(data: bytes, draw: st.DataObject) -> None:
    cut = draw.draw(st.integers(0, len(data)))
    whole = csum_partial(data)
    head = csum_block_sub(whole, csum_partial(data[cut:]), cut)
    assert same_ones(csum_fold(head), csum_fold(csum_partial(data[:cut])))


@pytest.mark.rule("CSUM-005")
def test_odd_offset_block_is_rotated() -> None:
    a, b = b"\x01", b"\x02\x03"  # b starts at offset 1: its bytes sit in swapped lanes
    whole = csum_partial(a + b)  # 0x0102 + 0x0300
    assert whole == 0x0402
    assert csum_block_add(csum_partial(a), csum_partial(b), 1) % 0xFFFF == whole
    assert csum_add(csum_partial(a), csum_partial(b)) % 0xFFFF != whole  # no rotation: wrong
    assert csum_shift(0x11223344, 1) == 0x44112233
    assert csum_shift(0x11223344, 2) == 0x11223344


def _pseudo_v4(src: bytes, dst: bytes, length: int, proto: int) -> bytes:
    return src + dst + bytes([0, proto]) + struct.pack("!H", length)


def _pseudo_v6(src: bytes, dst: bytes, length: int, proto: int) -> bytes:
    return src + dst + struct.pack("!I", length) + b"\0\0\0" + bytes([proto])


@pytest.mark.rule("CSUM-006", "CSUM-007")
@given(st.binary(min_size=4, max_size=4), st.binary(min_size=4, max_size=4),
       st.binary(min_size=16, max_size=16), st.binary(min_size=16, max_size=16),
       st.integers(0, 0xFFFF), st.sampled_from([6, 17, 58, 132]), st.binary(max_size=64))
def test_pseudo_headers_match_naive(s4: bytes, d4: bytes, s6: bytes, d6: bytes, length: int,
                                    proto: int, body: bytes) -> None:
    base = csum_partial(body)
    want4 = ~naive_sum(_pseudo_v4(s4, d4, length, proto) + body) & 0xFFFF
    assert same_ones(csum_tcpudp_magic(s4, d4, length, proto, base), want4)
    assert same_ones(csum_fold(csum_tcpudp_nofold(s4, d4, length, proto, base)), want4)
    want6 = ~naive_sum(_pseudo_v6(s6, d6, length, proto) + body) & 0xFFFF
    assert same_ones(csum_ipv6_magic(s6, d6, length, proto, base), want6)
    assert same_ones(csum_fold(csum_add(ip6_compute_pseudo(s6, d6, length, proto), base)), want6)


@pytest.mark.rule("CSUM-006", "CSUM-007")
def test_pseudo_header_rejects_wrong_address_sizes() -> None:
    with pytest.raises(MalformedInput):
        csum_tcpudp_magic(b"\0" * 16, b"\0" * 4, 8, 17)
    with pytest.raises(MalformedInput):
        csum_ipv6_magic(b"\0" * 4, b"\0" * 16, 8, 17)


@pytest.mark.rule("CSUM-008")
def test_ip_fast_csum_on_scapy_header() -> None:
    ip = IP(bytes(IP(src="192.0.2.1", dst="198.51.100.7", ttl=9, id=0x1234, options=[])))
    hdr = bytes(ip)[: ip.ihl * 4]
    assert ip_fast_csum(hdr, ip.ihl) == 0
    zeroed = hdr[:10] + b"\0\0" + hdr[12:]
    assert ip_fast_csum(zeroed, ip.ihl) == ip.chksum
    with pytest.raises(MalformedInput):
        ip_fast_csum(hdr[:19], 5)


# ----------------------------------------------------------------------------------
# CRC32c (SCTP)
# ----------------------------------------------------------------------------------


@pytest.mark.rule("CSUM-009")
@pytest.mark.parametrize(
    ("data", "crc"),
    [
        # RFC 3720 appendix B.4 (iSCSI CRC32c examples).
        (b"\x00" * 32, 0x8A9136AA),
        (b"\xff" * 32, 0x62A8AB43),
        (bytes(range(32)), 0x46DD794E),
        (bytes(range(31, -1, -1)), 0x113FDB5C),
        # The customary check value of CRC-32C.
        (b"123456789", 0xE3069283),
    ],
)
def test_crc32c_vectors(data: bytes, crc: int) -> None:
    assert crc32c(data) == crc
    assert crc32c(data[5:], crc32c(data[:5])) == crc  # continues from a running value


@pytest.mark.rule("CSUM-009", "CSUM-L4-004")
@given(st.integers(0, 0xFFFF), st.integers(0, 0xFFFF), st.binary(max_size=40))
def test_scapy_sctp_checksum_verifies(sport: int, dport: int, data: bytes) -> None:
    ip = IP(src="10.0.0.1", dst="10.0.0.2")
    frame = bytes(Ether(**MACS) / ip / SCTP(sport=sport, dport=dport) / Raw(data))
    info = parse(frame)
    seg = frame[info.l4_offset : info.ip_payload_end]
    assert sctp_compute_cksum(seg) == int.from_bytes(seg[8:12], "little")
    assert l4_checksum_status(frame, info) is L4Csum.GOOD
    bad = bytearray(frame)
    bad[info.l4_offset] ^= 0x40
    assert l4_checksum_status(bytes(bad), parse(bytes(bad))) is L4Csum.BAD
    # CHECKSUM_COMPLETE never validates SCTP.
    assert not complete_validates_l4(frame, info, complete_csum_of(frame))


# ----------------------------------------------------------------------------------
# ip_summed
# ----------------------------------------------------------------------------------


@pytest.mark.rule("CSUM-SUM-001", "CSUM-SUM-002", "CSUM-SUM-003", "CSUM-SUM-004", "CSUM-SUM-005")
def test_ip_summed_values_match_skbuff_h() -> None:
    # include/linux/skbuff.h (v6.17-rc3): CHECKSUM_NONE 0, _UNNECESSARY 1, _COMPLETE 2,
    # _PARTIAL 3; SKB_MAX_CSUM_LEVEL 3.
    assert [int(v) for v in (CHECKSUM_NONE, CHECKSUM_UNNECESSARY, CHECKSUM_COMPLETE,
                             CHECKSUM_PARTIAL)] == [0, 1, 2, 3]
    assert [v.name for v in IpSummed] == ["CHECKSUM_NONE", "CHECKSUM_UNNECESSARY",
                                          "CHECKSUM_COMPLETE", "CHECKSUM_PARTIAL"]
    assert SKB_MAX_CSUM_LEVEL == 3
    assert CSUM_MANGLED_0 == 0xFFFF


@pytest.mark.rule("CSUM-SUM-003", "CSUM-SUM-006")
def test_csum_level_counts_down_then_none() -> None:
    # A device verified UDP, GRE and the inner TCP: csum_level 2 (the skbuff.h example).
    state = (IpSummed.CHECKSUM_UNNECESSARY, 2)
    seen = []
    for _ in range(4):
        state = decr_checksum_unnecessary(*state)
        seen.append(state)
    assert seen == [
        (IpSummed.CHECKSUM_UNNECESSARY, 1),
        (IpSummed.CHECKSUM_UNNECESSARY, 0),
        (IpSummed.CHECKSUM_NONE, 0),
        (IpSummed.CHECKSUM_NONE, 0),
    ]
    complete = (IpSummed.CHECKSUM_COMPLETE, 0)
    assert decr_checksum_unnecessary(*complete) == complete


@pytest.mark.rule("CSUM-SUM-006")
def test_incr_checksum_unnecessary_saturates() -> None:
    state = (IpSummed.CHECKSUM_NONE, 0)
    levels = []
    for _ in range(6):
        state = incr_checksum_unnecessary(*state)
        levels.append(state)
    assert levels[0] == (IpSummed.CHECKSUM_UNNECESSARY, 0)
    assert [lvl for _, lvl in levels] == [0, 1, 2, 3, 3, 3]
    complete = (IpSummed.CHECKSUM_COMPLETE, 0)
    assert incr_checksum_unnecessary(*complete) == complete


# ----------------------------------------------------------------------------------
# Full L4 checks against scapy-built packets
# ----------------------------------------------------------------------------------


@st.composite
def checksummed_frames(draw: st.DrawFn) -> bytes:
    """Frames whose L4 checksum scapy computed: TCP/UDP/ICMP/ICMPv6 over v4/v6, VLANs, padding."""
    pkt: Packet = Ether(**MACS)
    for cls in draw(st.lists(st.sampled_from([Dot1Q, Dot1AD]), max_size=2)):
        pkt = pkt / cls(vlan=draw(st.integers(0, 4095)))
    data = Raw(draw(st.binary(max_size=33)))
    v6 = draw(st.booleans())
    kind = draw(st.sampled_from(["tcp", "udp", "icmp"]))
    if v6:
        dst = "2001:db8::" + format(draw(st.integers(2, 0xFFFF)), "x")
        ip: Packet = IPv6(src="2001:db8::1", dst=dst)
        exts = st.lists(st.sampled_from([IPv6ExtHdrHopByHop, IPv6ExtHdrDestOpt]), max_size=2)
        for ext in draw(exts):
            ip = ip / ext()
        l4: Packet = ICMPv6EchoRequest(data=data.load) if kind == "icmp" else None
    else:
        ip = IP(src="192.0.2.1", dst="198.51.100." + str(draw(st.integers(1, 254))),
                options=draw(st.sampled_from([[], [IPOption_NOP()] * 3])))
        l4 = ICMP(id=draw(st.integers(0, 0xFFFF))) / data if kind == "icmp" else None
    if kind == "tcp":
        seq = draw(st.integers(0, 2**32 - 1))
        l4 = TCP(sport=draw(st.integers(0, 0xFFFF)), dport=80, seq=seq) / data
    elif kind == "udp":
        l4 = UDP(sport=draw(st.integers(1, 0xFFFF)), dport=53) / data
    return bytes(pkt / ip / l4) + draw(st.binary(max_size=11))  # Ethernet padding


@pytest.mark.rule("CSUM-001", "CSUM-L4-001", "CSUM-L4-002", "CSUM-L4-003", "CSUM-L4-006")
@given(checksummed_frames(), st.data())
def test_scapy_checksums_verify_and_corruption_is_caught(frame: bytes, data: st.DataObject) -> None:
    info = parse(frame)
    assert l4_checksum_status(frame, info) is L4Csum.GOOD
    assert verify_l4_checksum(frame, info)
    # Flip one bit anywhere in the L4 segment: a one's-complement sum (or the parser)
    # notices every single-bit error.
    pos = data.draw(st.integers(info.l4_offset, info.ip_payload_end - 1))
    bad = bytearray(frame)
    bad[pos] ^= 1 << data.draw(st.integers(0, 7))
    try:
        bad_info = parse(bytes(bad))
    except MalformedInput:
        return  # e.g. a TCP data offset pushed below 5 or past the segment
    status = l4_checksum_status(bytes(bad), bad_info)
    assert status is not L4Csum.GOOD
    if status is L4Csum.ZERO:  # the flip cleared a UDP checksum field: "no checksum"
        assert bad[info.l4_offset + 6 : info.l4_offset + 8] == b"\0\0"
    else:
        assert not verify_l4_checksum(bytes(bad), bad_info)


@pytest.mark.rule("CSUM-001", "CSUM-L4-001")
def test_folded_value_is_the_field_read_big_endian() -> None:
    frame = bytes(Ether(**MACS) / IP(src="10.1.2.3", dst="10.4.5.6") / TCP(sport=1234, dport=80)
                  / Raw(b"hello"))
    info = parse(frame)
    seg = bytearray(frame[info.l4_offset : info.ip_payload_end])
    field = int.from_bytes(seg[16:18], "big")
    seg[16:18] = b"\0\0"
    computed = csum_tcpudp_magic(info.src, info.dst, len(seg), 6, csum_partial(bytes(seg)))
    assert computed == field == Ether(frame)[TCP].chksum


@pytest.mark.rule("CSUM-L4-002")
def test_udp_zero_checksum_and_bad_lengths() -> None:
    base = Ether(**MACS) / IP(src="10.0.0.1", dst="10.0.0.2")
    zero = bytes(base / UDP(sport=1, dport=2, chksum=0) / Raw(b"abc"))
    info = parse(zero)
    assert l4_checksum_status(zero, info) is L4Csum.ZERO
    assert verify_l4_checksum(zero, info)  # a device may mark it CHECKSUM_UNNECESSARY
    assert complete_validates_l4(zero, info, complete_csum_of(zero))
    for ulen in (7, 100):
        bad = bytes(base / UDP(sport=1, dport=2, len=ulen) / Raw(b"abc"))
        assert l4_checksum_status(bad, parse(bad)) is L4Csum.MALFORMED
        assert not verify_l4_checksum(bad, parse(bad))
    # A UDP length shorter than the IP payload: only ulen bytes are covered.
    inner = IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=1, dport=2) / Raw(b"abcde")
    udp_bytes = bytes(inner)[20:]
    trailer = bytes(Ether(**MACS) / IP(src="10.0.0.1", dst="10.0.0.2", proto=17)
                    / Raw(udp_bytes + b"xyz"))
    tinfo = parse(trailer)
    assert l4_checksum_status(trailer, tinfo) is L4Csum.GOOD
    assert complete_validates_l4(trailer, tinfo, complete_csum_of(trailer))


def _udp6_len0_frame(check: int) -> bytes:
    """2001:db8::1 port 1 -> 2001:db8::2 port 2, UDP length field 0, payload b"ab"."""
    udp = struct.pack("!HHHH", 1, 2, 0, check) + b"ab"
    ip6 = struct.pack("!IHBB", 0x6000_0000, len(udp), 17, 64)
    ip6 += bytes.fromhex("20010db8" + "00" * 11 + "01")  # source 2001:db8::1
    ip6 += bytes.fromhex("20010db8" + "00" * 11 + "02")  # destination 2001:db8::2
    return bytes.fromhex("020000000001020000000002") + b"\x86\xdd" + ip6 + udp


@pytest.mark.rule("CSUM-L4-002", "CSUM-RX-002", "CSUM-L4-006")
def test_ipv6_udp_length_zero_covers_the_whole_datagram() -> None:
    # v6.17 net/ipv6/udp.c __udp6_lib_rcv: a UDP length of 0 is taken as a jumbo payload
    # and skb->len (here the 10 bytes after the IPv6 header) is used instead; the
    # pseudo-header of udp6_csum_init/ip6_compute_pseudo also carries skb->len.
    # Worked by hand, 16-bit words:
    #   addresses 2001+0db8+0001 + 2001+0db8+0002        = 5b75
    #   pseudo length 000a, next header 0011             -> 5b90
    #   UDP 0001+0002+0000(len)+0000(check), data 6162   -> 5b90+0003+6162 = bcf5
    #   checksum = ~bcf5                                  = 430a
    # Had the length field (0) gone into the pseudo-header: ~(bcf5 - 000a) = 4314.
    good = _udp6_len0_frame(0x430A)
    info = parse(good)
    assert (info.l4, info.ip_payload_end - info.l4_offset) == (L4.UDP, 10)
    assert l4_checksum_status(good, info) is L4Csum.GOOD
    assert verify_l4_checksum(good, info)
    assert complete_validates_l4(good, info, complete_csum_of(good))
    wrong_pseudo = _udp6_len0_frame(0x4314)
    assert l4_checksum_status(wrong_pseudo, parse(wrong_pseudo)) is L4Csum.BAD
    assert not complete_validates_l4(wrong_pseudo, parse(wrong_pseudo),
                                     complete_csum_of(wrong_pseudo))
    zero = _udp6_len0_frame(0)
    assert l4_checksum_status(zero, parse(zero)) is L4Csum.ZERO


@pytest.mark.rule("CSUM-L4-002", "CSUM-RX-002")
def test_ipv4_udp_length_zero_is_short() -> None:
    # __udp4_lib_rcv: a length of 0 is below sizeof(struct udphdr): short packet, dropped.
    frame = bytes(Ether(**MACS) / IP(src="10.0.0.1", dst="10.0.0.2")
                  / UDP(sport=1, dport=2, len=0) / Raw(b"ab"))
    info = parse(frame)
    assert l4_checksum_status(frame, info) is L4Csum.MALFORMED
    assert not verify_l4_checksum(frame, info)
    assert not complete_validates_l4(frame, info, complete_csum_of(frame))


@pytest.mark.rule("CSUM-RX-002")
def test_qinq1_tagged_frame_never_reaches_the_l4_check() -> None:
    # __netif_receive_skb_core strips only tags eth_type_vlan() knows (0x8100, 0x88a8);
    # with a 0x9100 tag the frame has no IP handler, so no L4 checksum is validated.
    tagged = bytearray(bytes(Ether(**MACS) / Dot1Q(vlan=5) / IP(src="10.0.0.1", dst="10.0.0.2")
                             / UDP(sport=1, dport=2) / Raw(b"abc")))
    assert complete_validates_l4(bytes(tagged), parse(bytes(tagged)),
                                 complete_csum_of(bytes(tagged)))
    tagged[12:14] = b"\x91\x00"
    info = parse(bytes(tagged))
    assert info.vlans[0].tpid == 0x9100
    assert l4_checksum_status(bytes(tagged), info) is L4Csum.GOOD  # the bytes are intact
    assert not complete_validates_l4(bytes(tagged), info, complete_csum_of(bytes(tagged)))


@pytest.mark.rule("CSUM-L4-005")
def test_not_applicable_cases() -> None:
    first_frag = bytes(
        Ether(**MACS) / IP(src="10.0.0.1", dst="10.0.0.2", flags="MF") / UDP() / Raw(b"x" * 8))
    other = bytes(Ether(**MACS) / IP(src="10.0.0.1", dst="10.0.0.2", proto=253) / Raw(b"data"))
    arp = bytes(Ether(**MACS, type=0x0806) / Raw(b"\0" * 28))
    icmp_in_v6 = bytes(Ether(**MACS) / IPv6(nh=1) / ICMP())
    icmpv6_in_v4 = bytes(Ether(**MACS) / IP(proto=58) / ICMPv6EchoRequest())
    for frame in (first_frag, other, arp, icmp_in_v6, icmpv6_in_v4):
        info = parse(frame)
        assert l4_checksum_status(frame, info) is L4Csum.NOT_APPLICABLE
        assert not verify_l4_checksum(frame, info)
        assert not complete_validates_l4(frame, info, complete_csum_of(frame))


# ----------------------------------------------------------------------------------
# CHECKSUM_COMPLETE
# ----------------------------------------------------------------------------------


@pytest.mark.rule("CSUM-RX-001")
@given(st.binary(min_size=14, max_size=200))
def test_complete_csum_covers_everything_after_the_ethernet_header(frame: bytes) -> None:
    assert csum_fold(complete_csum_of(frame)) == ~naive_sum(frame[14:]) & 0xFFFF
    assert complete_csum_of(frame, 14, 14) == 0
    with pytest.raises(MalformedInput):
        complete_csum_of(frame, 15, 14)


@pytest.mark.rule("CSUM-RX-002", "CSUM-SUM-004", "CSUM-005")
@given(checksummed_frames(), st.data())
def test_stack_accepts_complete_iff_checksum_good(frame: bytes, data: st.DataObject) -> None:
    info = parse(frame)
    # A device summing frame[14:] (VLAN tags, IP packet, padding): the stack adjusts for
    # the pulled tags and headers and the trimmed padding, and then the L4 check passes.
    assert complete_validates_l4(frame, info, complete_csum_of(frame))
    # A COMPLETE value that left the padding out is wrong unless the padding sums to 0.
    end = info.ip_payload_end
    if end < len(frame):
        short = complete_csum_of(frame, 14, end)
        pad_is_zero = same_ones(csum_partial(frame[end:]), 0)
        assert complete_validates_l4(frame, info, short) == pad_is_zero
    # Corrupt a payload byte and let the device sum the corrupted bytes: the stack agrees
    # with the full check.
    pos = data.draw(st.integers(info.l4_offset, info.ip_payload_end - 1))
    bad = bytearray(frame)
    bad[pos] ^= 0x80
    try:
        bad_info = parse(bytes(bad))
    except MalformedInput:
        return
    expect = l4_checksum_status(bytes(bad), bad_info) in (L4Csum.GOOD, L4Csum.ZERO)
    assert complete_validates_l4(bytes(bad), bad_info, complete_csum_of(bytes(bad))) == expect


@pytest.mark.rule("CSUM-RX-002")
def test_odd_length_datagram_with_padding_needs_rotation() -> None:
    # 20 (IP) + 8 (UDP) + 3 = 31 bytes: the padding starts at an odd offset.
    frame = bytes(Ether(**MACS) / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=7, dport=9)
                  / Raw(b"abc")) + b"\x01\x02\x03\x04\x05"
    info = parse(frame)
    assert (info.ip_payload_end - info.l3_offset) % 2 == 1
    csum = complete_csum_of(frame)
    assert complete_validates_l4(frame, info, csum)
    # Removing the padding without the rotation gives a different (wrong) value.
    pad = csum_partial(frame[info.ip_payload_end :])
    rotated = csum_block_sub(csum, pad, 1)
    plain = csum_sub(csum, pad)
    assert not same_ones(rotated, plain)


@pytest.mark.rule("CSUM-RX-002")
def test_bad_ipv4_header_checksum_never_reaches_l4() -> None:
    frame = bytearray(bytes(Ether(**MACS) / IP(src="10.0.0.1", dst="10.0.0.2") / UDP() / Raw(b"q")))
    frame[24] ^= 0xFF  # IPv4 header checksum
    info = parse(bytes(frame))
    assert l4_checksum_status(bytes(frame), info) is L4Csum.GOOD  # L4 itself is intact
    assert not complete_validates_l4(bytes(frame), info, complete_csum_of(bytes(frame)))


@pytest.mark.rule("CSUM-L4-005", "CSUM-RX-002")
@given(st.one_of(st.binary(max_size=160), checksummed_frames()), st.data())
def test_helpers_accept_whatever_parse_accepts(frame: bytes, data: st.DataObject) -> None:
    raw = bytearray(frame)
    for _ in range(data.draw(st.integers(0, 3))):
        if raw:
            raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    try:
        info = parse(bytes(raw))
    except MalformedInput:
        return
    status = l4_checksum_status(bytes(raw), info)
    accepted = complete_validates_l4(bytes(raw), info, complete_csum_of(bytes(raw)))
    if accepted and info.l4.name != "ICMP":
        assert status in (L4Csum.GOOD, L4Csum.ZERO)


@pytest.mark.rule("CSUM-L4-001", "CSUM-L4-005", "CSUM-L4-006", "CSUM-006", "CSUM-008")
def test_trace_names_the_rules_of_a_verdict() -> None:
    """TRACE-001: a traced check records the rule that decided it and its arithmetic;
    without a trace nothing is recorded and the verdict is the same."""
    frame = bytes(Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / TCP() / b"x")
    info = parse(frame)
    trace = Trace()
    assert verify_l4_checksum(frame, info, trace) == verify_l4_checksum(frame, info)
    assert trace.rules() == ["CSUM-L4-001", "CSUM-006", "CSUM-002", "CSUM-004", "CSUM-003",
                             "CSUM-L4-006"]
    trace = Trace()
    ip_fast_csum(frame[14:34], 5, trace)
    assert trace.rules() == ["CSUM-008", "CSUM-002"]
    arp = bytes(Ether() / ARP())
    trace = Trace()
    l4_checksum_status(arp, parse(arp), trace)
    assert trace.rules() == ["CSUM-L4-005"]

"""Frame strategies: scapy builds every frame, hypothesis chooses every field.

The traffic covers what NIC RX paths key on: Ethernet, 802.1Q and QinQ tags, IPv4
with options and fragments, IPv6 with extension headers, TCP, UDP, SCTP, ICMP and
ICMPv6, non-IP ethertypes, padding, runts and jumbo frames.
"""

from __future__ import annotations

import functools
import random
from typing import Any

from hypothesis import strategies as st
from scapy.layers.inet import ICMP, IP, TCP, UDP, IPOption_NOP, IPOption_RR
from scapy.layers.inet6 import (
    ICMPv6EchoRequest,
    IPv6,
    IPv6ExtHdrDestOpt,
    IPv6ExtHdrFragment,
    IPv6ExtHdrHopByHop,
    IPv6ExtHdrRouting,
)
from scapy.layers.ipsec import AH
from scapy.layers.l2 import ARP, Dot1AD, Dot1Q, Ether
from scapy.layers.sctp import SCTP
from scapy.packet import Packet, Raw

macs = st.binary(min_size=6, max_size=6).map(lambda b: ":".join(f"{x:02x}" for x in b))
ipv4_addrs = st.binary(min_size=4, max_size=4).map(lambda b: ".".join(str(x) for x in b))
ipv6_addrs = st.binary(min_size=16, max_size=16).map(
    lambda b: ":".join(b[i : i + 2].hex() for i in range(0, 16, 2))
)
ports = st.integers(0, 0xFFFF)
payloads = st.binary(max_size=64)


def rss_keys() -> st.SearchStrategy[bytes]:
    """A 40- or 52-byte RSS key (the two lengths netdev_rss_key_fill speaks of).

    Keys are pseudo-random bytes drawn from a seed, so even a shrunk example has a
    key with bits everywhere: an all-zero key hashes everything to 0 and would hide
    every difference in the hash input.
    """
    return st.tuples(st.sampled_from([40, 52]), st.integers(0, 2**32)).map(
        lambda t: random.Random(t[1]).randbytes(t[0])
    )


#: Protocol numbers sent with a few raw bytes as their "header": GRE, ESP, an experimental
#: value, and UDP-Lite, DCCP and IGMP, which the parser treats as other protocols
#: (PKT-L4-005) but the flow dissector reads ports of (VETH-KF-002) and ``eth_get_headlen``
#: adds a header length for (PKT-L4-007).
_RAW_PROTOCOLS = (47, 50, 253, 136, 33, 2)


@st.composite
def _l4(draw: st.DrawFn, v6: bool) -> Packet:
    kind = draw(st.sampled_from(["tcp", "udp", "sctp", "icmp", "raw"]))
    if kind == "tcp":
        flags = draw(st.sampled_from(["S", "A", "PA"]))
        return TCP(sport=draw(ports), dport=draw(ports), flags=flags)
    if kind == "udp":
        return UDP(sport=draw(ports), dport=draw(ports))
    if kind == "sctp":
        return SCTP(sport=draw(ports), dport=draw(ports))
    if kind == "icmp":
        return ICMPv6EchoRequest() if v6 else ICMP()
    return Raw(draw(st.binary(min_size=1, max_size=8)))


@st.composite
def _ipv4(draw: st.DrawFn, fragment: bool | None = None) -> Packet:
    options = draw(st.sampled_from([[], [IPOption_NOP()] * 4, [IPOption_RR(routers=["1.2.3.4"])]]))
    kinds = {None: ["none", "none", "first", "later"], True: ["first", "first", "later"],
             False: ["none"]}[fragment]
    frag = draw(st.sampled_from(kinds))
    fields: dict[str, Any] = {"src": draw(ipv4_addrs), "dst": draw(ipv4_addrs), "ttl": 64}
    if options:
        fields["options"] = options
    if frag == "first":
        fields["flags"] = "MF"
    elif frag == "later":
        fields["frag"] = draw(st.integers(1, 100))
    l4 = draw(_l4(v6=False))
    if isinstance(l4, Raw):
        fields["proto"] = draw(st.sampled_from(_RAW_PROTOCOLS))
    return IP(**fields) / l4 / Raw(draw(payloads))


@st.composite
def _ipv6(draw: st.DrawFn, fragment: bool | None = None) -> Packet:
    pkt: Packet = IPv6(src=draw(ipv6_addrs), dst=draw(ipv6_addrs))
    exts = draw(st.lists(st.sampled_from(["hbh", "dst", "rt"] if fragment is False
                                         else ["hbh", "dst", "rt", "frag"]), max_size=3))
    if fragment and "frag" not in exts:
        exts.append("frag")
    for ext in exts:
        if ext == "hbh":
            pkt = pkt / IPv6ExtHdrHopByHop()
        elif ext == "dst":
            pkt = pkt / IPv6ExtHdrDestOpt()
        elif ext == "rt":
            pkt = pkt / IPv6ExtHdrRouting(addresses=[])
        else:
            offset = draw(st.sampled_from([0, 0, 5]))
            pkt = pkt / IPv6ExtHdrFragment(offset=offset, m=draw(st.booleans()))
    l4 = draw(_l4(v6=True))
    if isinstance(l4, Raw):
        last = pkt.lastlayer()
        last.nh = draw(st.sampled_from(_RAW_PROTOCOLS))
    return pkt / l4 / Raw(draw(payloads))


@st.composite
def _tags(draw: st.DrawFn, ethertype_inner: bool = True) -> list[Packet]:
    n = draw(st.sampled_from([0, 0, 0, 1, 2]))
    tags: list[Packet] = []
    for i in range(n):
        tci = draw(st.integers(0, 0xFFFF))
        prio, dei, vid = tci >> 13, (tci >> 12) & 1, tci & 0xFFF
        if n == 2 and i == 0:
            tags.append(Dot1AD(prio=prio, dei=dei, vlan=vid))
        else:
            tags.append(Dot1Q(prio=prio, dei=dei, vlan=vid))
    return tags


@st.composite
def ip_frames(draw: st.DrawFn, *, vlans: bool = True, fragment: bool | None = None) -> bytes:
    """Well-formed Ethernet frames carrying IPv4 or IPv6.

    ``fragment``: True for fragments only, False for whole datagrams only, None for both.
    """
    pkt: Packet = Ether(src=draw(macs), dst=draw(macs))
    for tag in draw(_tags()) if vlans else []:
        pkt = pkt / tag
    l3 = draw(st.one_of(_ipv4(fragment), _ipv6(fragment)))
    return bytes(pkt / l3)


@st.composite
def ethernet_frames(draw: st.DrawFn) -> bytes:
    """Well-formed frames of any kind: IP, ARP, unknown ethertypes; padded, runt or jumbo."""
    kind = draw(st.sampled_from(["ip", "ip", "ip", "arp", "other"]))
    if kind == "ip":
        frame = draw(ip_frames())
    elif kind == "arp":
        frame = bytes(Ether(src=draw(macs), dst="ff:ff:ff:ff:ff:ff") / ARP(psrc=draw(ipv4_addrs)))
    else:
        ethertype = draw(st.sampled_from([0x88B5, 0x88CC, 0x9000]))
        frame = bytes(Ether(src=draw(macs), dst=draw(macs), type=ethertype)
                      / Raw(draw(st.binary(max_size=64))))
    size = draw(st.sampled_from(["as-built", "as-built", "padded", "jumbo"]))
    if size == "padded" and len(frame) < 60:
        frame = frame + bytes(60 - len(frame))  # the MAC's minimum-size padding
    elif size == "jumbo":
        # Trailing bytes past the IP length: a jumbo frame whose datagram is short.
        frame = frame + draw(st.binary(min_size=1500, max_size=1500))
    return frame


@st.composite
def malformed_frames(draw: st.DrawFn) -> bytes:
    """Runts, truncations and corrupted headers of otherwise real frames."""
    frame = draw(ethernet_frames())
    how = draw(st.sampled_from(["truncate", "flip", "runt"]))
    if how == "runt":
        return frame[: draw(st.integers(0, 13))]
    if how == "truncate":
        return frame[: draw(st.integers(0, max(0, len(frame) - 1)))]
    pos = draw(st.integers(0, len(frame) - 1))
    return frame[:pos] + bytes([frame[pos] ^ draw(st.integers(1, 255))]) + frame[pos + 1 :]


def frames() -> st.SearchStrategy[bytes]:
    """Any frame: mostly well-formed, sometimes malformed."""
    return st.one_of(ethernet_frames(), ethernet_frames(), malformed_frames())


def udp_length_frames() -> list[bytes]:
    """UDP datagrams at every boundary of the length field (CSUM-L4-002), each with the
    checksum right for the length the kernel reads: the bare 8-byte header, a field
    shorter than the datagram (the rest is trimmed), a field of 7 and of 0 over IPv4
    (short packets), 0 over IPv6 (the whole datagram), a field longer than the datagram;
    and ICMPv6 over IPv4, ICMP over IPv6 (no checksum the device can check, CSUM-L4-003)
    with wrong checksums, which a device reading the wrong family would flag."""
    eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    v4 = IP(src="10.0.0.1", dst="10.0.0.2")
    v6 = IPv6(src="fd00::1", dst="fd00::2")
    head = bytes(v4 / UDP(sport=7, dport=9) / b"ab")[20:]  # a good 10-byte datagram
    return [bytes(eth / v4 / UDP(sport=7, dport=9)),
            bytes(eth / IP(src="10.0.0.1", dst="10.0.0.2", proto=17) / (head + b"cd")),
            bytes(eth / v4 / UDP(sport=7, dport=9, len=7) / b"abcd"),
            bytes(eth / v4 / UDP(sport=7, dport=9, len=0) / b"abcd"),
            bytes(eth / v6 / UDP(sport=7, dport=9, len=0) / b"abcdef"),
            bytes(eth / v6 / UDP(sport=7, dport=9)),
            bytes(eth / v4 / UDP(sport=7, dport=9, len=200) / b"abcd"),
            bytes(eth / IP(src="10.0.0.1", dst="10.0.0.2", proto=58)
                  / bytes(ICMPv6EchoRequest(cksum=0x1234))),
            bytes(eth / IPv6(src="fd00::1", dst="fd00::2", nh=1) / ICMP(chksum=0x1111))]


def l4_check_edge_frames() -> list[bytes]:
    """Frames at the edges of the full L4 check the random frames never reach (each a
    frame a NIC can receive from the wire):

    * UDP with a checksum of 0 and a length field out of range (7 and longer than the
      datagram over IPv4, 3 and longer over IPv6): MALFORMED is decided before ZERO, so
      a device skipping the length check for unchecked datagrams differs (CSUM-L4-002);
    * UDP with a wrong checksum one of whose bytes is 0 (0x0001, 0x0100): only a field
      of two zero bytes means "no checksum" (CSUM-L4-002);
    * SCTP of the 12-byte common header alone, with a wrong and a right CRC32c: a
      packet with no chunks is still checked (CSUM-L4-004, CSUM-009);
    * protocol 253 (experimental, RFC 3692) over IPv4 and IPv6 with 16 bytes after the
      IP header: another protocol has no checksum to check, whatever its length
      (CSUM-L4-005);
    * UDP, TCP and ICMPv6 over IPv6 with 300 or more bytes and a right checksum: the
      pseudo-header's 32-bit length is more than its low byte (CSUM-007, CSUM-L4-001,
      CSUM-L4-002, CSUM-L4-003); the random payloads stop at 64 bytes;
    * protocol 253 over IPv4 with 300 bytes after the header, and IPv6 No Next Header
      with bytes after it: still nothing to check, however far the datagram goes
      (CSUM-L4-005, PKT-L4-005, PKT-IP6-004);
    * TCP over IPv6 behind a Hop-by-Hop header, with a right checksum and non-zero
      padding after the datagram: the payload length, not the frame, ends the checksummed
      bytes also when Hop-by-Hop comes first (PKT-IP6-002: only a zero length makes a
      jumbogram).
    """
    eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    v4 = IP(src="10.0.0.1", dst="10.0.0.2")
    v6 = IPv6(src="fd00::1", dst="fd00::2")
    good = bytes(eth / v4 / UDP(sport=7, dport=9) / b"payload!")
    csum_at = 14 + 20 + 6  # the UDP checksum field: Ethernet, IPv4, UDP offset 6

    def with_csum(value: int) -> bytes:
        return good[:csum_at] + value.to_bytes(2, "big") + good[csum_at + 2:]

    return [bytes(eth / v4 / UDP(sport=7, dport=9, len=7, chksum=0) / b"abcd"),
            bytes(eth / v4 / UDP(sport=7, dport=9, len=200, chksum=0) / b"abcd"),
            bytes(eth / v6 / UDP(sport=7, dport=9, len=3, chksum=0) / b"abcd"),
            bytes(eth / v6 / UDP(sport=7, dport=9, len=200, chksum=0) / b"abcd"),
            with_csum(0x0001),
            with_csum(0x0100),
            bytes(eth / v4 / SCTP(sport=5, dport=6, chksum=0x01020304)),
            bytes(eth / v6 / SCTP(sport=5, dport=6)),
            bytes(eth / IP(src="10.0.0.1", dst="10.0.0.2", proto=253) / Raw(bytes(range(16)))),
            bytes(eth / IPv6(src="fd00::1", dst="fd00::2", nh=253) / Raw(bytes(range(16)))),
            bytes(eth / v6 / UDP(sport=7, dport=9) / Raw(b"u" * 292)),
            bytes(eth / v6 / TCP(sport=1, dport=2, flags="A") / Raw(b"t" * 280)),
            bytes(eth / v6 / ICMPv6EchoRequest(data=b"i" * 292)),
            bytes(eth / IP(src="10.0.0.1", dst="10.0.0.2", proto=253) / Raw(b"o" * 300)),
            bytes(eth / IPv6(src="fd00::1", dst="fd00::2", nh=59) / Raw(b"n" * 16)),
            bytes(eth / v6 / IPv6ExtHdrHopByHop() / TCP(sport=1, dport=2, flags="A")
                  / Raw(b"h" * 8)) + b"\xa5" * 6]


#: Type/length values around the 0x0600 boundary ``eth_type_trans`` draws (FEC-RX-010):
#: the largest 802.3 length 0x05DC (1500), 0x05FF (the last value read as a length),
#: 0x0600 (the first read as an ethertype), 0x0601, 0x06FF (the low byte the kernel's
#: little-endian test masks off) and 0 (a zero length).
LENGTH_FIELD_VALUES = (0x0000, 0x05DC, 0x05FF, 0x0600, 0x0601, 0x06FF)


@st.composite
def length_field_frames(draw: st.DrawFn) -> bytes:
    """Frames whose type/length field sits at the ethertype/length boundary, with a
    payload that opens with 0xFFFF (Novell's raw 802.3), an 802.2 LLC/SNAP header or
    anything: what tells ``eth_type_trans``'s three answers apart, and a ``>`` from a
    ``>=`` at 0x0600."""
    field = draw(st.sampled_from(LENGTH_FIELD_VALUES))
    start = draw(st.sampled_from([b"\xff\xff", b"\xaa\xaa\x03", b"\xff\xfe", b""]))
    body = start + draw(st.binary(max_size=46))
    return bytes(Ether(src=draw(macs), dst=draw(macs), type=field) / Raw(body))


#: Protocols :func:`header_frames` carries besides TCP/UDP/SCTP/ICMP: ESP, AH (over IPv4 an
#: "other" protocol, PKT-L4-005; over IPv6 an extension header, PKT-IP6-006), IGMP, DCCP,
#: UDP-Lite, an experimental number and 44 (over IPv4 an other protocol, over IPv6 the
#: fragment header).  GRE and MPLS are left out: the flow dissector
#: would walk into them, which the model refuses (PKT-L4-007).
_OTHER_PROTOCOLS = (50, 51, 2, 33, 136, 253, 44)
#: The fixed header each L4 needs (PKT-L4-001..004); TCP grows to its data offset.
_L4_NEED = {"tcp": 20, "udp": 8, "sctp": 12, "icmp": 8}
#: A non-zero IPv6 flow label, all 20 bits varied (the hashing walk stops at any label,
#: VETH-KF-002; ``eth_get_headlen``'s never does, PKT-L4-007).
_FLOW_LABEL = 0xA5C3E


def _l4_layer(kind: str, v6: bool, doff: int) -> Packet:
    if kind == "tcp":
        return TCP(sport=0x1234, dport=0xABCD, flags="A", dataofs=doff,
                   options=[("NOP", None)] * (4 * max(doff - 5, 0)))
    if kind == "udp":
        return UDP(sport=0x1234, dport=0xABCD)
    if kind == "sctp":
        return SCTP(sport=0x1234, dport=0xABCD)
    return ICMPv6EchoRequest() if v6 else ICMP()


@st.composite
def header_frames(draw: st.DrawFn, *, wellformed: bool = True) -> bytes:
    """Frames at every boundary the header walk decides on (PKT-*): the facts a device
    model reads from the parser must take values that tell a right reading from a
    plausible wrong one.

    - VLAN tags (802.1Q, 802.1ad, 0x9100) whose PCP and DEI bits are set (PKT-VLAN-001/002);
    - IPv4 headers of IHL 5, 6, 7 and 15 (options present or not, PKT-IP4-003), whole
      datagrams, first and later fragments (PKT-IP4-005), and (``wellformed=False``) a
      header checksum that does not verify;
    - IPv6 with hop-by-hop, destination-options, routing, AH and fragment headers
      (PKT-IP6-003..006), with a flow label of zero or not (the label stops the hashing
      walk, VETH-KF-002, but not ``eth_get_headlen``'s, PKT-L4-007);
    - TCP (data offset 5, 6, 15), UDP, SCTP, ICMP/ICMPv6 and other protocols
      (PKT-L4-005), the upper-layer header ending exactly at the datagram's end, one byte
      short of it inside a first fragment (PKT-L4-006), or followed by payload;
    - ``wellformed=False`` adds what the parser refuses but a device still receives: an
      upper-layer header one byte short of its minimum in a whole datagram, TCP data
      offsets below 5 (PKT-L4-001), IHL below 5 (PKT-IP4-002).
    """
    tags = draw(st.lists(st.tuples(st.sampled_from([0x8100, 0x88A8, 0x9100]),
                                   st.integers(0, 0xFFFF)), max_size=2))
    v6 = draw(st.booleans())
    kind = draw(st.sampled_from(["tcp", "udp", "sctp", "icmp", "other"]))
    # AH over IPv6 is an extension header (drawn below), not an upper-layer protocol.
    proto = (draw(st.sampled_from([p for p in _OTHER_PROTOCOLS if not (v6 and p in (44, 51))]))
             if kind == "other" else None)
    doff = draw(st.sampled_from([5, 6, 15] + ([] if wellformed else [0, 4]))) \
        if kind == "tcp" else 5
    frag = draw(st.sampled_from(["none", "none", "first", "later"]))
    cuts = ["whole", "exact", "payload"]
    if frag == "first" or not wellformed:
        cuts.append("short")
    cut = draw(st.sampled_from(cuts))
    exts = draw(st.lists(st.sampled_from(["hbh", "dst", "rt", "ah"]), max_size=2)) if v6 else []
    ihl = 5 if v6 else draw(st.sampled_from([5, 6, 7, 15] + ([] if wellformed else [4])))
    bad = not wellformed and not v6 and draw(st.integers(0, 3)) == 0
    label = draw(st.sampled_from([0, 0, _FLOW_LABEL])) if v6 else 0
    return header_frame(tuple(tags), v6, kind, proto, doff, frag, cut, tuple(exts), ihl, bad,
                        flow_label=label)


@functools.cache
def header_cases(*, wellformed: bool = True) -> tuple[bytes, ...]:
    """:func:`header_frames` enumerated: each boundary at least once, so a derandomized
    run of a few examples meets them all (``st.sampled_from(header_cases())``)."""
    out: list[bytes] = []
    tags_cycle = [(), ((0x8100, 0xF000 | 0x123),), ((0x88A8, 0x1FFF), (0x8100, 0xB001)),
                  ((0x9100, 0x3FFE),)]
    n = 0
    for v6 in (False, True):
        for kind in ("tcp", "udp", "sctp", "icmp", "other"):
            protos: list[int | None] = ([p for p in _OTHER_PROTOCOLS if not (v6 and p in (44, 51))]
                                        if kind == "other" else [None])
            doffs = ([5, 6, 15] + ([] if wellformed else [0, 4])) if kind == "tcp" else [5]
            for proto in protos:
                for doff in doffs:
                    for frag in ("none", "first", "later"):
                        cuts = ["whole", "exact"]
                        if frag == "first" or not wellformed:
                            cuts.append("short")
                        if not wellformed:  # one byte past the header: where it ends shows
                            cuts.append("plus1")
                        for cut in cuts:
                            n += 1
                            ihls = [5] if v6 else [5, 6, 15][n % 3:] + [5, 6, 15][:n % 3]
                            # every other frame has one extension header, each kind in turn
                            exts = (("hbh", "dst", "rt", "ah")[n // 2 % 4],) if v6 and n % 2 \
                                else ()
                            bad = not wellformed and not v6 and n % 3 == 0
                            # every third IPv6 frame has a flow label (PKT-L4-007, VETH-KF-002)
                            label = _FLOW_LABEL if v6 and n % 3 == 0 else 0
                            out.append(header_frame(tags_cycle[n % 4], v6, kind, proto, doff,
                                                    frag, cut, exts, ihls[0], bad,
                                                    flow_label=label))
    if not wellformed:
        out.append(header_frame((), False, "udp", None, 5, "none", "whole", (), 4, False))
        out += _walk_edge_frames()
    return tuple(out)


def _walk_edge_frames() -> list[bytes]:
    """Where the flow dissector's walk stops early (PKT-L4-007, VETH-KF-002/007): ARP and
    PTP a few bytes long (it ends at the Ethernet header), FCoE and PTP at their header's
    length and either side of it, RARP and CFM, 802.3 length frames (raw 802.3,
    LLC, one payload byte), a tag cut off, eight and seventeen in-band tags (past
    ``VLAN_MAX_DEPTH``, and past ``MAX_FLOW_DISSECT_HDRS`` even with one tag stripped),
    IPv6 whose first extension or fragment header is cut off and a hop-by-hop jumbogram
    (payload length 0, PKT-IP6-002)."""
    eth = bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02"))[:12]
    udp4 = bytes(IP(src="192.0.2.1", dst="198.51.100.7") / UDP(sport=7, dport=9) / b"abcd")
    v6 = bytes(IPv6(src="2001:db8::1", dst="2001:db8::7", nh=59, plen=0))
    tag = b"\x81\x00\xa0\x05"
    jumbo = bytes(IPv6(src="2001:db8::1", dst="2001:db8::7", plen=0)
                  / IPv6ExtHdrHopByHop() / UDP(sport=7, dport=9) / b"abcd")
    return [
        eth + b"\x08\x06" + bytes(4), eth + b"\x88\xf7" + bytes(12),
        # FCoE and PTP step over their own header (38 and 34 bytes) when it is all there:
        # one byte short of it, exactly it, and with payload after it; RARP and CFM end
        # the walk at once, however long.
        eth + b"\x89\x06" + bytes(37), eth + b"\x89\x06" + bytes(38),
        eth + b"\x89\x06" + bytes(60), eth + b"\x88\xf7" + bytes(33),
        eth + b"\x88\xf7" + bytes(34), eth + b"\x88\xf7" + bytes(50),
        eth + b"\x80\x35" + bytes(46), eth + b"\x89\x02" + bytes(46),
        eth + b"\x00\x40" + b"\xff\xff" + bytes(62),
        eth + b"\x00\x40" + b"\xaa\xaa\x03" + bytes(61),
        eth + b"\x00\x01" + b"\x00",
        eth + b"\x81\x00" + b"\xa0",
        eth + tag * 8 + b"\x08\x00" + udp4, eth + tag * 17 + b"\x08\x00" + udp4,
        eth + b"\x86\xdd" + v6[:6] + b"\x3c" + v6[7:],  # a destination-options header cut off
        eth + b"\x86\xdd" + v6[:4] + b"\x00\x04\x2c" + v6[7:] + b"\x11\x00\x00\x00",
        eth + b"\x86\xdd" + jumbo,
    ]


def header_frame(tags: tuple[tuple[int, int], ...], v6: bool, kind: str, proto: int | None,
                 doff: int, frag: str, cut: str, exts: tuple[str, ...], ihl: int,
                 bad_checksum: bool, *, flow_label: int = 0) -> bytes:
    """One frame of :func:`header_frames`: ``tags`` (TPID, TCI) outermost first; ``kind``
    tcp/udp/sctp/icmp/other (``proto`` its number); ``frag`` none/first/later; ``cut``:
    the datagram ends ``whole`` (4 payload bytes after the L4 header), ``exact``ly at the
    header's end, ``short`` of it by one byte, one byte past it (``plus1``) or after 8
    bytes of ``payload``; ``flow_label``: the IPv6 header's 20-bit flow label."""
    pkt: Packet = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    for tpid, tci in tags:
        pkt.lastlayer().type = tpid
        pkt = pkt / Dot1Q(prio=tci >> 13, dei=(tci >> 12) & 1, vlan=tci & 0xFFF)
    need = 4 * max(doff, 5) if kind == "tcp" else _L4_NEED.get(kind, 4)
    body = b"" if kind == "other" and cut == "short" else bytes(range(8))
    l4: Packet = Raw(bytes(range(16))) if kind == "other" else _l4_layer(kind, v6, max(doff, 5))
    l3: Packet
    if v6:
        l3 = IPv6(src="2001:db8::1", dst="2001:db8::7", fl=flow_label)
        chain = [*exts, *(["frag"] if frag != "none" else [])]
        # scapy fills no AH next header: the number of whatever follows it.
        after = [*chain[1:], proto if proto is not None else kind]
        numbers = {"hbh": 0, "dst": 60, "rt": 43, "frag": 44, "ah": 51, "tcp": 6, "udp": 17,
                   "sctp": 132, "icmp": 58}
        for ext, nxt in zip(chain, after[:len(chain)], strict=True):
            l3 = l3 / {"hbh": IPv6ExtHdrHopByHop(), "dst": IPv6ExtHdrDestOpt(),
                       "rt": IPv6ExtHdrRouting(addresses=[]),
                       "frag": IPv6ExtHdrFragment(offset=0 if frag == "first" else 3, m=1),
                       "ah": AH(nh=nxt if isinstance(nxt, int) else numbers[nxt],
                                payloadlen=4, spi=0x100, seq=1,
                                icv=b"\0" * 12)}[ext]
    else:
        fields: dict[str, Any] = {"src": "192.0.2.1", "dst": "198.51.100.7"}
        if ihl > 5:
            fields["options"] = [IPOption_NOP()] * (4 * (ihl - 5))
        if frag == "first":
            fields["flags"] = "MF"
        elif frag == "later":
            fields["frag"] = 3
        l3 = IP(**fields)
    if proto is not None:
        l3.lastlayer().setfieldval("nh" if v6 else "proto", proto)
    full = bytes(pkt / l3 / l4 / Raw(body))
    head = len(bytes(pkt / l3))
    if not v6 and ihl < 5:  # IHL below 5 (PKT-IP4-002): the header is still 20 bytes
        full = full[:head - 20] + bytes([0x40 | ihl]) + full[head - 19:]
    if kind == "tcp" and doff < 5:  # a data offset the parser refuses (PKT-L4-001)
        full = full[:head + 12] + bytes([doff << 4]) + full[head + 13:]
    end = {"whole": head + need + (0 if kind == "other" else 4), "payload": len(full),
           "exact": head + need, "short": head + need - 1, "plus1": head + need + 1}[cut]
    frame = full[:end]
    # The IP length fields say where the datagram ends (PKT-IP4-004, PKT-IP6-002).
    l3_at = len(bytes(pkt))
    if v6:
        plen = len(frame) - l3_at - 40
        return frame[:l3_at + 4] + plen.to_bytes(2, "big") + frame[l3_at + 6:]
    hdr = bytearray(frame[l3_at:l3_at + 4 * max(ihl, 5)])
    hdr[2:4] = (len(frame) - l3_at).to_bytes(2, "big")
    hdr[10:12] = b"\0\0"
    hdr[10:12] = (_ip_checksum(bytes(hdr)) ^ (0x1234 if bad_checksum else 0)).to_bytes(2, "big")
    return frame[:l3_at] + bytes(hdr) + frame[l3_at + len(hdr):]


def _ip_checksum(header: bytes) -> int:
    """RFC 1071 over an IPv4 header whose checksum field is zero."""
    total = sum(int.from_bytes(header[i:i + 2], "big") for i in range(0, len(header), 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF

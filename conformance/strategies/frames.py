"""Frame strategies: scapy builds every frame, hypothesis chooses every field.

The traffic covers what NIC RX paths key on: Ethernet, 802.1Q and QinQ tags, IPv4
with options and fragments, IPv6 with extension headers, TCP, UDP, SCTP, ICMP and
ICMPv6, non-IP ethertypes, padding, runts and jumbo frames.
"""

from __future__ import annotations

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

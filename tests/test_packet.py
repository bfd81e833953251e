"""The header parser (PKT-*), checked against scapy and hand-built frames.

scapy is the independent implementation: packets are built with scapy, the bytes are
dissected again by scapy, and every fact ``parse`` reports is compared with what scapy
reads from the same bytes.  Malformed and truncated frames are built by hand with
``struct`` so the expected field names and offsets are worked out here, not taken
from the code under test.
"""

from __future__ import annotations

import ast
import contextlib
import socket
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scapy.layers.inet import ICMP, IP, TCP, UDP, IPOption_NOP, IPOption_RR
from scapy.layers.inet6 import (
    ICMPv6EchoReply,
    ICMPv6EchoRequest,
    IPv6,
    IPv6ExtHdrDestOpt,
    IPv6ExtHdrFragment,
    IPv6ExtHdrHopByHop,
    IPv6ExtHdrRouting,
    _ICMPv6,
)
from scapy.layers.ipsec import AH, ESP
from scapy.layers.l2 import ARP, Dot1AD, Dot1Q, Ether
from scapy.layers.sctp import SCTP
from scapy.packet import Packet, Raw

from reference.errors import MalformedInput, Truncated
from reference.packet import (
    ETH_P_8021AD,
    ETH_P_8021Q,
    ETH_P_IP,
    ETH_P_IPV6,
    ETH_P_QINQ1,
    L3,
    L4,
    PacketInfo,
    parse,
)
from reference.trace import Trace

MACS = {"dst": "02:00:00:00:00:01", "src": "02:00:00:00:00:02"}
ETH_HDR = bytes.fromhex("020000000001020000000002")

# ----------------------------------------------------------------------------------
# Strategies: scapy packets of every shape the parser claims to cover
# ----------------------------------------------------------------------------------

ports = st.integers(0, 0xFFFF)
payloads = st.binary(max_size=24)
v4addr = st.tuples(*[st.integers(0, 255)] * 4).map(lambda t: ".".join(map(str, t)))
v6addr = st.binary(min_size=16, max_size=16).map(lambda b: socket.inet_ntop(socket.AF_INET6, b))


@st.composite
def vlan_stacks(draw: st.DrawFn) -> list[tuple[str, int, int, int]]:
    """(kind, vid, pcp, dei) outermost first; kind 'q' 0x8100, 'ad' 0x88a8, 'qinq1' 0x9100."""
    return draw(
        st.lists(
            st.tuples(
                st.sampled_from(["q", "ad", "qinq1"]),
                st.integers(0, 4095),
                st.integers(0, 7),
                st.integers(0, 1),
            ),
            max_size=3,
        )
    )


@st.composite
def l4_layers(draw: st.DrawFn, v6: bool) -> Packet:
    kind = draw(st.sampled_from(["tcp", "udp", "sctp", "icmp", "other"]))
    data = Raw(draw(payloads))
    if kind == "tcp":
        opts = draw(st.sampled_from([[], [("MSS", 1460)], [("NOP", None), ("WScale", 7)]]))
        return TCP(sport=draw(ports), dport=draw(ports), options=opts) / data
    if kind == "udp":
        return UDP(sport=draw(ports), dport=draw(ports)) / data
    if kind == "sctp":
        return SCTP(sport=draw(ports), dport=draw(ports)) / data
    if kind == "icmp":
        if v6:
            cls = draw(st.sampled_from([ICMPv6EchoRequest, ICMPv6EchoReply]))
            return cls(code=draw(st.integers(0, 255)), data=draw(payloads))
        return ICMP(type=draw(st.sampled_from([0, 8, 13])), code=draw(st.integers(0, 255))) / data
    return Raw(draw(payloads))


@st.composite
def ipv4_packets(draw: st.DrawFn) -> Packet:
    rr = IPOption_RR(routers=["1.2.3.4"])
    opts = draw(st.sampled_from([[], [IPOption_NOP()], [IPOption_NOP()] * 5, [rr]]))
    frag_kind = draw(st.sampled_from(["none", "none", "first", "later"]))
    flags = "MF" if frag_kind == "first" or (draw(st.booleans()) and frag_kind == "later") else 0
    frag = draw(st.integers(1, 0x1FFF)) if frag_kind == "later" else 0
    l4 = draw(l4_layers(v6=False))
    ip = IP(src=draw(v4addr), dst=draw(v4addr), options=opts, flags=flags, frag=frag)
    if isinstance(l4, Raw):
        ip.proto = draw(st.sampled_from([47, 50, 51, 253]))
    return ip / l4


@st.composite
def ipv6_packets(draw: st.DrawFn) -> Packet:
    exts: list[Packet] = []
    for kind in draw(st.lists(st.sampled_from(["hbh", "rt", "dst", "frag", "ah"]), max_size=4)):
        if kind == "hbh":
            exts.append(IPv6ExtHdrHopByHop())
        elif kind == "rt":
            exts.append(IPv6ExtHdrRouting(addresses=draw(st.lists(v6addr, max_size=2)), segleft=0))
        elif kind == "dst":
            exts.append(IPv6ExtHdrDestOpt())
        elif kind == "frag":
            exts.append(
                IPv6ExtHdrFragment(offset=draw(st.sampled_from([0, 0, 1, 100, 8191])),
                                   m=draw(st.integers(0, 1)), id=draw(st.integers(0, 2**32 - 1)))
            )
        else:
            icv = draw(st.sampled_from([b"\x01" * 4, b"\x02" * 12]))
            exts.append(AH(icv=icv, payloadlen=(12 + len(icv)) // 4 - 2))
    tail = draw(st.sampled_from(["l4", "l4", "l4", "none", "esp"]))
    if tail == "none":
        last: Packet = Raw(draw(payloads))
    elif tail == "esp":
        last = ESP(spi=draw(st.integers(1, 2**32 - 1)), data=draw(payloads))
    else:
        last = draw(l4_layers(v6=True))
        if any(isinstance(e, AH) for e in exts) and isinstance(last, _ICMPv6):
            last = UDP(sport=1, dport=2)  # scapy does not dissect past AH; see _layers_past_ah
    # scapy does not fill in every next-header field (AH keeps 0): set them all here.
    chain: list[Packet] = [IPv6(src=draw(v6addr), dst=draw(v6addr)), *exts]
    nexts = [*exts, last]
    for hdr, nxt in zip(chain, nexts, strict=True):
        hdr.nh = _nh_of(nxt, tail)
    pkt = chain[0]
    for hdr in chain[1:]:
        pkt = pkt / hdr
    return pkt / last


_NH = [(IPv6ExtHdrHopByHop, 0), (IPv6ExtHdrRouting, 43), (IPv6ExtHdrFragment, 44),
       (IPv6ExtHdrDestOpt, 60), (AH, 51), (ESP, 50), (TCP, 6), (UDP, 17), (SCTP, 132),
       (_ICMPv6, 58)]


def _nh_of(layer: Packet, tail: str) -> int:
    for cls, nh in _NH:
        if isinstance(layer, cls):
            return nh
    return 59 if tail == "none" else 253


@st.composite
def frames(draw: st.DrawFn) -> tuple[bytes, list[int]]:
    """A frame built by scapy, plus the TPIDs the frame must carry (0x9100 patched in)."""
    stack = draw(vlan_stacks())
    l3 = draw(st.sampled_from(["ipv4", "ipv6", "ipv4", "ipv6", "arp", "lldp"]))
    pkt: Packet = Ether(**MACS)
    for kind, vid, pcp, dei in stack:
        cls = Dot1AD if kind == "ad" else Dot1Q
        pkt = pkt / cls(vlan=vid, prio=pcp, dei=dei)
    if l3 == "ipv4":
        pkt = pkt / draw(ipv4_packets())
    elif l3 == "ipv6":
        pkt = pkt / draw(ipv6_packets())
    elif l3 == "arp":
        pkt = pkt / ARP()
    else:
        _last(pkt).type = 0x88CC
        pkt = pkt / Raw(draw(payloads))
    pad = draw(st.binary(max_size=12))
    raw = bytes(pkt) + pad
    tpids = [{"q": ETH_P_8021Q, "ad": ETH_P_8021AD, "qinq1": ETH_P_QINQ1}[k] for k, *_ in stack]
    return raw, tpids


def _last(pkt: Packet) -> Packet:
    while pkt.payload:
        pkt = pkt.payload
    return pkt


def _patch_tpids(raw: bytes, tpids: list[int]) -> bytes:
    """Write the wanted TPIDs (scapy has no 0x9100 layer: it was built as 0x8100)."""
    out = bytearray(raw)
    for i, tpid in enumerate(tpids):
        struct.pack_into("!H", out, 12 + 4 * i, tpid)
    return bytes(out)


# ----------------------------------------------------------------------------------
# What scapy reads from the same bytes
# ----------------------------------------------------------------------------------

_SCAPY_NEXT = {0: IPv6ExtHdrHopByHop, 43: IPv6ExtHdrRouting, 44: IPv6ExtHdrFragment,
               60: IPv6ExtHdrDestOpt, 51: AH, 50: ESP, 6: TCP, 17: UDP, 132: SCTP}
_IPV6_EXT = (IPv6ExtHdrHopByHop, IPv6ExtHdrRouting, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment, AH)


def _layers_past_ah(raw: bytes, nh: int) -> Packet:
    """scapy does not dissect what follows AH reliably; dissect it by the AH next header."""
    cls = _SCAPY_NEXT.get(nh)
    return cls(raw) if cls is not None else Raw(raw)


def scapy_expect(raw: bytes) -> dict[str, Any]:
    """The PacketInfo facts, read from scapy's dissection of ``raw``."""
    total = len(raw)
    pkt = Ether(raw)

    def offset(layer: Packet) -> int:
        # scapy re-serialises a layer with its payload and trailing padding.
        return total - len(bytes(layer))

    vlans = []
    layer: Packet = pkt.payload
    while isinstance(layer, Dot1Q):  # Dot1AD subclasses Dot1Q in scapy
        vlans.append((layer.prio << 13) | (layer.dei << 12) | layer.vlan)
        layer = layer.payload
    exp: dict[str, Any] = {"vlan_tcis": vlans, "l3_offset": 14 + 4 * len(vlans)}
    if isinstance(layer, IP):
        l3 = offset(layer)
        fragment = bool(layer.flags.MF) or layer.frag != 0
        exp.update(
            l3=L3.IPV4, l3_offset=l3, l3_hdr_len=layer.ihl * 4, ip_options=layer.ihl > 5,
            ipv6_ext=False, src=socket.inet_aton(layer.src), dst=socket.inet_aton(layer.dst),
            ip_proto=layer.proto, ip_payload_end=l3 + layer.len, is_fragment=fragment,
            is_first_fragment=fragment and layer.frag == 0, frag_offset=layer.frag * 8,
        )
        if layer.frag:
            exp.update(_NO_L4)
        else:
            exp.update(_l4_expect(layer.payload, l3 + layer.ihl * 4))
        return exp
    if isinstance(layer, IPv6):
        l3 = offset(layer)
        exp.update(
            l3=L3.IPV6, l3_offset=l3, src=socket.inet_pton(socket.AF_INET6, layer.src),
            dst=socket.inet_pton(socket.AF_INET6, layer.dst), ip_payload_end=l3 + 40 + layer.plen,
            is_fragment=False, frag_offset=0,
        )
        proto = layer.nh
        cur: Packet | None = layer.payload
        hdr_end = l3 + 40
        first = True
        ip_end = exp["ip_payload_end"]
        while isinstance(cur, _IPV6_EXT):
            proto = cur.nh
            if isinstance(cur, AH):
                hdr_end += (cur.payloadlen + 2) * 4
                cur = _layers_past_ah(raw[hdr_end:ip_end], cur.nh)
                continue
            hdr_end += len(bytes(cur)) - len(bytes(cur.payload))
            if isinstance(cur, IPv6ExtHdrFragment):
                exp["is_fragment"] = True
                if cur.offset:
                    first = False
                    exp["frag_offset"] = cur.offset * 8
                    break
            cur = cur.payload
        exp.update(
            l3_hdr_len=hdr_end - l3, ipv6_ext=hdr_end > l3 + 40, ip_proto=proto,
            is_first_fragment=exp["is_fragment"] and first,
        )
        if not first or proto == 59:
            exp.update(_NO_L4)
        else:
            exp.update(_l4_expect(cur, hdr_end))
        return exp
    exp.update(l3=L3.NONE, ip_proto=-1, src=b"", dst=b"", is_fragment=False,
               ip_payload_end=total, **_NO_L4)
    return exp


_NO_L4: dict[str, Any] = {
    "l4": L4.NONE, "l4_offset": -1, "sport": -1, "dport": -1, "icmp_type": -1, "icmp_code": -1,
    "l4_hdr_len": 0,
}


def _l4_expect(layer: Packet | None, hdr_end: int) -> dict[str, Any]:
    """L4 facts of the scapy layer that follows the IP headers, which end at ``hdr_end``."""
    exp = dict(_NO_L4, l4=L4.OTHER, l4_offset=hdr_end)
    if isinstance(layer, TCP):
        exp.update(l4=L4.TCP, sport=layer.sport, dport=layer.dport, l4_hdr_len=layer.dataofs * 4)
    elif isinstance(layer, UDP):
        exp.update(l4=L4.UDP, sport=layer.sport, dport=layer.dport, l4_hdr_len=8)
    elif isinstance(layer, SCTP):
        exp.update(l4=L4.SCTP, sport=layer.sport, dport=layer.dport, l4_hdr_len=12)
    elif isinstance(layer, ICMP):
        exp.update(l4=L4.ICMP, icmp_type=layer.type, icmp_code=layer.code, l4_hdr_len=8)
    elif isinstance(layer, _ICMPv6):
        exp.update(l4=L4.ICMPV6, icmp_type=layer.type, icmp_code=layer.code, l4_hdr_len=8)
    return exp


def _compare(info: PacketInfo, exp: dict[str, Any], raw: bytes, tpids: list[int]) -> None:
    assert info.length == len(raw)
    assert [v.tci for v in info.vlans] == exp.pop("vlan_tcis")
    assert [v.tpid for v in info.vlans] == tpids
    assert [v.offset for v in info.vlans] == [12 + 4 * i for i in range(len(tpids))]
    for name, want in exp.items():
        got = getattr(info, name)
        assert got == want, f"{name}: parse={got!r} scapy={want!r}\n{Ether(raw)!r}"


@pytest.mark.rule(
    "PKT-001", "PKT-003", "PKT-ETH-001", "PKT-ETH-002", "PKT-VLAN-001", "PKT-VLAN-002",
    "PKT-IP4-003", "PKT-IP4-004", "PKT-IP4-005", "PKT-IP6-002", "PKT-IP6-003", "PKT-IP6-004",
    "PKT-IP6-005", "PKT-IP6-006", "PKT-L4-001", "PKT-L4-002", "PKT-L4-003", "PKT-L4-004",
    "PKT-L4-005",
)
@given(frames())
def test_parse_agrees_with_scapy(built: tuple[bytes, list[int]]) -> None:
    raw, tpids = built
    exp = scapy_expect(raw)
    info = parse(_patch_tpids(raw, tpids))
    _compare(info, exp, raw, tpids)


# ----------------------------------------------------------------------------------
# Prefixes: every cut parses or raises a typed error, and exactly where expected
# ----------------------------------------------------------------------------------


@pytest.mark.rule("PKT-001", "PKT-002", "PKT-IP4-004", "PKT-IP6-002")
@given(frames())
def test_every_prefix_parses_or_raises_typed(built: tuple[bytes, list[int]]) -> None:
    raw, tpids = built
    frame = _patch_tpids(raw, tpids)
    full = parse(frame)
    # Bytes the headers need: through the IP datagram for IP, through the tags otherwise.
    needed = full.ip_payload_end if full.l3 is not L3.NONE else full.l3_offset
    for cut in range(len(frame)):
        try:
            info = parse(frame[:cut])
        except Truncated as exc:
            assert cut < needed, f"cut {cut} >= {needed} raised {exc}"
            assert exc.available < exc.needed
            continue
        except MalformedInput as exc:  # pragma: no cover - must not happen for prefixes
            raise AssertionError(f"prefix {cut} raised non-truncation {exc!r}") from exc
        assert cut >= needed, f"cut {cut} < {needed} parsed"
        assert attrs_equal_but_length(info, full)


def attrs_equal_but_length(a: PacketInfo, b: PacketInfo) -> bool:
    import attrs

    da, db = attrs.asdict(a, recurse=False), attrs.asdict(b, recurse=False)
    da.pop("length"), db.pop("length")
    if a.l3 is L3.NONE:
        da.pop("ip_payload_end"), db.pop("ip_payload_end")
    return da == db


# ----------------------------------------------------------------------------------
# Hand-built frames: expected field names, offsets and rules worked out here
# ----------------------------------------------------------------------------------


def eth(ethertype: int, body: bytes) -> bytes:
    return ETH_HDR + struct.pack("!H", ethertype) + body


def ipv4(proto: int, payload: bytes, *, ihl: int = 5, tot_len: int | None = None,
         frag_off: int = 0, version: int = 4, options: bytes = b"") -> bytes:
    hlen = 20 + len(options)
    total = hlen + len(payload) if tot_len is None else tot_len
    hdr = struct.pack("!BBHHHBBH4s4s", (version << 4) | ihl, 0, total, 1, frag_off, 64, proto, 0,
                      b"\x0a\0\0\x01", b"\x0a\0\0\x02")
    return hdr + options + payload


def ipv6(nh: int, payload: bytes, *, plen: int | None = None, version: int = 6) -> bytes:
    length = len(payload) if plen is None else plen
    hdr = struct.pack("!IHBB16s16s", version << 28, length, nh, 64, b"\x20" * 16, b"\x30" * 16)
    return hdr + payload


def tcp(doff: int = 5, extra: bytes = b"") -> bytes:
    return struct.pack("!HHIIBBHHH", 1000, 80, 0, 0, doff << 4, 0x02, 0, 0, 0) + extra


def udp(sport: int = 53, dport: int = 5353) -> bytes:
    return struct.pack("!HHHH", sport, dport, 8, 0)


CASES: list[tuple[str, bytes, type[MalformedInput], str, int, str]] = [
    # (name, frame, error type, field, offset, rule)
    ("empty", b"", Truncated, "eth.hdr", 0, "PKT-ETH-001"),
    ("short eth", ETH_HDR + b"\x08", Truncated, "eth.hdr", 0, "PKT-ETH-001"),
    ("cut vlan", eth(0x8100, b"\x00\x05\x08"), Truncated, "vlan.hdr", 14, "PKT-VLAN-001"),
    ("cut inner vlan", eth(0x88A8, b"\x00\x05\x81\x00\x00"), Truncated, "vlan.hdr", 18,
     "PKT-VLAN-001"),
    ("short ipv4", eth(ETH_P_IP, b"\x45" + b"\0" * 18), Truncated, "ipv4.hdr", 14, "PKT-IP4-001"),
    ("ipv4 version 6", eth(ETH_P_IP, ipv4(17, udp(), version=6)), MalformedInput,
     "ipv4.version", 14, "PKT-IP4-002"),
    ("ipv4 ihl 4", eth(ETH_P_IP, ipv4(17, udp(), ihl=4)), MalformedInput, "ipv4.ihl", 14,
     "PKT-IP4-002"),
    ("ipv4 ihl 15 cut", eth(ETH_P_IP, ipv4(17, b"", ihl=15, tot_len=60)), Truncated, "ipv4.ihl",
     14, "PKT-IP4-003"),
    ("ipv4 tot_len < hdr", eth(ETH_P_IP, ipv4(17, udp(), tot_len=19)), MalformedInput,
     "ipv4.tot_len", 16, "PKT-IP4-004"),
    ("ipv4 tot_len > frame", eth(ETH_P_IP, ipv4(17, udp(), tot_len=29)), Truncated,
     "ipv4.tot_len", 14, "PKT-IP4-004"),
    ("tcp doff 4", eth(ETH_P_IP, ipv4(6, tcp(doff=4))), MalformedInput, "tcp.doff", 46,
     "PKT-L4-001"),
    ("tcp doff 6 cut", eth(ETH_P_IP, ipv4(6, tcp(doff=6))), Truncated, "tcp.doff", 34,
     "PKT-L4-001"),
    ("tcp 19 bytes", eth(ETH_P_IP, ipv4(6, tcp()[:19])), Truncated, "tcp.hdr", 34, "PKT-L4-006"),
    ("udp 7 bytes", eth(ETH_P_IP, ipv4(17, udp()[:7])), Truncated, "udp.hdr", 34, "PKT-L4-006"),
    ("udp cut by tot_len", eth(ETH_P_IP, ipv4(17, udp(), tot_len=24)), Truncated, "udp.hdr", 34,
     "PKT-L4-006"),
    ("sctp 11 bytes", eth(ETH_P_IP, ipv4(132, b"\0" * 11)), Truncated, "sctp.hdr", 34,
     "PKT-L4-006"),
    ("icmp 7 bytes", eth(ETH_P_IP, ipv4(1, b"\x08" + b"\0" * 6)), Truncated, "icmp.hdr", 34,
     "PKT-L4-006"),
    ("short ipv6", eth(ETH_P_IPV6, b"\x60" + b"\0" * 38), Truncated, "ipv6.hdr", 14,
     "PKT-IP6-001"),
    ("ipv6 version 4", eth(ETH_P_IPV6, ipv6(17, udp(), version=4)), MalformedInput,
     "ipv6.version", 14, "PKT-IP6-001"),
    ("ipv6 plen > frame", eth(ETH_P_IPV6, ipv6(17, udp(), plen=9)), Truncated,
     "ipv6.payload_len", 14, "PKT-IP6-002"),
    ("hbh past end", eth(ETH_P_IPV6, ipv6(0, bytes([17, 2]) + b"\0" * 6 + udp())), Truncated,
     "ipv6.exthdr", 54, "PKT-IP6-003"),
    ("routing 1 byte", eth(ETH_P_IPV6, ipv6(43, b"\x11")), Truncated, "ipv6.exthdr", 54,
     "PKT-IP6-003"),
    ("ah past end", eth(ETH_P_IPV6, ipv6(51, bytes([17, 4]) + b"\0" * 10)), Truncated,
     "ipv6.exthdr", 54, "PKT-IP6-006"),
    ("ah 1 byte", eth(ETH_P_IPV6, ipv6(51, b"\x11")), Truncated, "ipv6.exthdr", 54, "PKT-IP6-006"),
    ("frag hdr 7 bytes", eth(ETH_P_IPV6, ipv6(44, b"\x11" + b"\0" * 6)), Truncated, "ipv6.frag",
     54, "PKT-IP6-005"),
    ("icmpv6 4 bytes", eth(ETH_P_IPV6, ipv6(58, b"\x80\0\0\0")), Truncated, "icmpv6.hdr", 54,
     "PKT-L4-006"),
    ("ipv6 tcp doff 3", eth(ETH_P_IPV6, ipv6(6, tcp(doff=3))), MalformedInput, "tcp.doff", 66,
     "PKT-L4-001"),
]


@pytest.mark.rule(
    "PKT-001", "PKT-002", "PKT-ETH-001", "PKT-VLAN-001", "PKT-IP4-001", "PKT-IP4-002",
    "PKT-IP4-003", "PKT-IP4-004", "PKT-IP6-001", "PKT-IP6-002", "PKT-IP6-003", "PKT-IP6-005",
    "PKT-IP6-006", "PKT-L4-001", "PKT-L4-006",
)
@pytest.mark.parametrize(("name", "frame", "kind", "field", "offset", "rule"), CASES,
                         ids=[c[0] for c in CASES])
def test_malformed_examples(name: str, frame: bytes, kind: type[MalformedInput], field: str,
                            offset: int, rule: str) -> None:
    with pytest.raises(MalformedInput) as info:
        parse(frame)
    exc = info.value
    assert type(exc) is kind, f"{name}: {type(exc).__name__} {exc}"
    assert (exc.field, exc.offset, exc.rule) == (field, offset, rule), str(exc)
    if isinstance(exc, Truncated):
        assert exc.available < exc.needed
        assert exc.offset + exc.available <= len(frame)


@pytest.mark.rule("PKT-002", "PKT-IP4-004")
def test_truncated_reports_needed_and_available() -> None:
    frame = eth(ETH_P_IP, ipv4(17, udp(), tot_len=40))  # 28 bytes present, 40 claimed
    with pytest.raises(Truncated) as info:
        parse(frame)
    assert (info.value.needed, info.value.available) == (40, 28)


@pytest.mark.rule("PKT-IP4-004")
def test_ipv4_padding_is_not_payload() -> None:
    frame = eth(ETH_P_IP, ipv4(17, udp())) + b"\xee" * 18  # padded to ETH_ZLEN (60)
    info = parse(frame)
    assert info.ip_payload_end == 14 + 28
    assert info.length == 60


@pytest.mark.rule("PKT-IP4-005", "PKT-L4-006")
def test_first_fragment_too_short_for_l4_is_not_an_error() -> None:
    # A first IPv4 fragment carrying 8 bytes: the UDP header fits, a TCP header does not.
    tcp8 = tcp()[:8]
    info = parse(eth(ETH_P_IP, ipv4(6, tcp8, frag_off=0x2000)))
    assert (info.is_fragment, info.is_first_fragment) == (True, True)
    assert (info.l4, info.l4_offset, info.sport, info.dport) == (L4.NONE, -1, -1, -1)
    assert info.ip_proto == 6
    udp_info = parse(eth(ETH_P_IP, ipv4(17, udp(7, 9), frag_off=0x2000)))
    assert (udp_info.l4, udp_info.sport, udp_info.dport) == (L4.UDP, 7, 9)
    # The same bytes unfragmented are a truncated TCP header.
    with pytest.raises(Truncated):
        parse(eth(ETH_P_IP, ipv4(6, tcp8)))
    # A fragment with TCP options cut off also reports no L4 header.
    cut_opts = parse(eth(ETH_P_IP, ipv4(6, tcp(doff=8), frag_off=0x2000)))
    assert cut_opts.l4 is L4.NONE


@pytest.mark.rule("PKT-IP4-005")
def test_non_first_ipv4_fragment_has_no_l4() -> None:
    # offset 185 (1480 bytes), MF clear: the last fragment of a datagram.
    info = parse(eth(ETH_P_IP, ipv4(17, udp(1, 2), frag_off=185)))
    assert (info.is_fragment, info.is_first_fragment, info.frag_offset) == (True, False, 1480)
    assert (info.l4, info.l4_offset, info.sport, info.dport) == (L4.NONE, -1, -1, -1)
    assert info.ip_proto == 17
    # DF alone (0x4000) is not a fragment.
    df = parse(eth(ETH_P_IP, ipv4(17, udp(1, 2), frag_off=0x4000)))
    assert not df.is_fragment and df.l4 is L4.UDP


@pytest.mark.rule("PKT-IP6-005")
def test_ipv6_fragment_header_semantics() -> None:
    frag_first = bytes([17, 0]) + struct.pack("!HI", 0x0001, 7)  # offset 0, M=1
    info = parse(eth(ETH_P_IPV6, ipv6(44, frag_first + udp(5, 6))))
    assert (info.is_fragment, info.is_first_fragment) == (True, True)
    assert (info.l4, info.sport) == (L4.UDP, 5)
    assert info.l3_hdr_len == 48 and info.ipv6_ext
    frag_later = bytes([17, 0]) + struct.pack("!HI", (3 << 3) | 1, 7)  # offset 24 bytes
    info = parse(eth(ETH_P_IPV6, ipv6(44, frag_later + udp(5, 6))))
    assert (info.is_fragment, info.is_first_fragment, info.frag_offset) == (True, False, 24)
    assert (info.l4, info.ip_proto, info.l3_hdr_len) == (L4.NONE, 17, 48)
    # The atomic fragment (offset 0, M=0) is still a fragment header: first fragment.
    atomic = bytes([6, 0]) + struct.pack("!HI", 0, 7)
    info = parse(eth(ETH_P_IPV6, ipv6(44, atomic + tcp())))
    assert (info.is_fragment, info.is_first_fragment, info.l4) == (True, True, L4.TCP)


@pytest.mark.rule("PKT-IP6-004")
def test_ipv6_chain_terminators() -> None:
    hbh_to_none = bytes([59, 0]) + b"\x01\x04\0\0\0\0"
    info = parse(eth(ETH_P_IPV6, ipv6(0, hbh_to_none + b"junk")))
    assert (info.l4, info.ip_proto, info.l4_offset, info.l3_hdr_len) == (L4.NONE, 59, -1, 48)
    esp = parse(eth(ETH_P_IPV6, ipv6(50, b"\0\0\0\x05" + b"\0" * 12)))
    assert (esp.l4, esp.ip_proto, esp.l4_offset, esp.ipv6_ext) == (L4.OTHER, 50, 54, False)
    # Protocol 0 in IPv4 is not an extension header: just another protocol.
    v4 = parse(eth(ETH_P_IP, ipv4(0, b"\0" * 8)))
    assert (v4.l4, v4.ip_proto, v4.l4_offset) == (L4.OTHER, 0, 34)


@pytest.mark.rule("PKT-IP6-006")
def test_ah_is_walked_in_ipv6_but_not_ipv4() -> None:
    ah = bytes([6, 1]) + b"\0" * 6  # payload len 1 -> (1 + 2) * 4 = 12 bytes
    ah += b"\0" * 4
    info = parse(eth(ETH_P_IPV6, ipv6(51, ah + tcp())))
    assert (info.l4, info.l4_offset, info.l3_hdr_len, info.ip_proto) == (L4.TCP, 66, 52, 6)
    v4 = parse(eth(ETH_P_IP, ipv4(51, ah + tcp())))
    assert (v4.l4, v4.l4_offset, v4.ip_proto) == (L4.OTHER, 34, 51)


@pytest.mark.rule("PKT-IP6-002")
def test_ipv6_jumbo_payload_length_zero() -> None:
    # payload_len 0 with Hop-by-Hop first: the datagram runs to the end of the frame.
    hbh = bytes([17, 0]) + bytes([0xC2, 4]) + struct.pack("!I", 70000)
    info = parse(eth(ETH_P_IPV6, ipv6(0, hbh + udp(), plen=0)))
    assert info.ip_payload_end == info.length and info.l4 is L4.UDP
    # payload_len 0 with anything else: an empty payload, so the UDP header is missing.
    with pytest.raises(Truncated) as exc:
        parse(eth(ETH_P_IPV6, ipv6(17, udp(), plen=0)))
    assert exc.value.field == "udp.hdr"


@pytest.mark.rule("PKT-VLAN-001", "PKT-VLAN-002")
def test_vlan_tag_walk() -> None:
    inner = ipv4(17, udp(1, 2))
    # 0x88a8 outer, 0x8100 inner (QinQ), then 0x9100, then IPv4.
    tags = struct.pack("!HH", 0xE00A, 0x8100) + struct.pack("!HH", 0x3014, 0x9100)
    tags += struct.pack("!HH", 0x001E, 0x0800)
    info = parse(eth(0x88A8, tags + inner))
    assert [(v.tpid, v.pcp, v.dei, v.vid, v.offset) for v in info.vlans] == [
        (0x88A8, 7, 0, 10, 12), (0x8100, 1, 1, 20, 16), (0x9100, 0, 0, 30, 20)
    ]
    assert (info.l3_offset, info.ethertype, info.l4) == (26, ETH_P_IP, L4.UDP)
    # 0x9200 (ETH_P_QINQ2) is not a TPID the parser walks: non-IP payload.
    other = parse(eth(0x9200, struct.pack("!HH", 5, 0x0800) + inner))
    assert (other.vlans, other.ethertype, other.l3) == ((), 0x9200, L3.NONE)


@pytest.mark.rule("PKT-ETH-002", "PKT-003")
def test_non_ip_defaults() -> None:
    info = parse(eth(0x05DC, b"\xaa\xaa\x03" + b"\0" * 43))  # 802.3 length field, LLC
    assert (info.l3, info.ethertype, info.l3_offset, info.l3_hdr_len) == (L3.NONE, 0x05DC, 14, 0)
    assert (info.src, info.dst, info.ip_proto) == (b"", b"", -1)
    assert (info.l4, info.l4_offset) == (L4.NONE, -1)
    assert (info.sport, info.dport, info.ip_payload_end, info.is_fragment) == (-1, -1, 60, False)
    assert parse(ETH_HDR + b"\x08\x06").l3 is L3.NONE  # a bare ARP ethertype, no body needed


@pytest.mark.rule("PKT-ETH-001", "PKT-VLAN-001")
def test_ethertype_constants_match_if_ether_h() -> None:
    # Transcribed from include/uapi/linux/if_ether.h (v6.17-rc3).
    assert (ETH_P_IP, ETH_P_IPV6, ETH_P_8021Q, ETH_P_8021AD, ETH_P_QINQ1) == (
        0x0800, 0x86DD, 0x8100, 0x88A8, 0x9100)


@pytest.mark.rule("PKT-003")
def test_trace_names_decisions() -> None:
    trace = Trace()
    frag = bytes([17, 0]) + struct.pack("!HI", 8 << 3, 1)
    parse(eth(0x8100, struct.pack("!HH", 5, ETH_P_IPV6) + ipv6(44, frag + udp())), trace)
    assert trace.rules() == ["PKT-ETH-001", "PKT-VLAN-001", "PKT-IP6-001", "PKT-IP6-002",
                             "PKT-IP6-005"]
    trace = Trace()
    parse(eth(ETH_P_IP, ipv4(17, udp())), trace)
    assert trace.rules() == ["PKT-ETH-001", "PKT-IP4-001", "PKT-IP4-002", "PKT-IP4-003",
                             "PKT-IP4-004", "PKT-L4-002", "PKT-L4-006"]
    assert parse(eth(ETH_P_IP, ipv4(17, udp()))).l4 is L4.UDP  # no trace: nothing recorded


@pytest.mark.rule("PKT-001")
def test_parse_accepts_bytearray_and_memoryview() -> None:
    frame = eth(ETH_P_IPV6, ipv6(17, udp(10, 20)))
    a, b, c = parse(frame), parse(bytearray(frame)), parse(memoryview(frame))
    assert a == b == c
    assert isinstance(c.src, bytes)


@pytest.mark.rule("PKT-001")
def test_reference_modules_do_not_import_scapy() -> None:
    root = Path(__file__).resolve().parent.parent / "reference"
    for name in ("packet.py", "checksum.py"):
        tree = ast.parse((root / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] + [getattr(node, "module", "") or ""]
                assert not any(n.startswith("scapy") for n in names), name


# ----------------------------------------------------------------------------------
# Fuzzing: only MalformedInput may escape, whatever the bytes
# ----------------------------------------------------------------------------------


def _parse_or_typed_error(data: bytes) -> None:
    with contextlib.suppress(MalformedInput):
        parse(data)


@pytest.mark.rule("PKT-001")
@given(st.binary(max_size=200))
def test_fuzz_arbitrary_bytes(data: bytes) -> None:
    _parse_or_typed_error(data)


@pytest.mark.rule("PKT-001")
@given(
    st.sampled_from([ETH_P_IP, ETH_P_IPV6, 0x8100, 0x88A8, 0x9100]),
    st.sampled_from([b"", b"\x45", b"\x46", b"\x4f", b"\x60", b"\x60\0\0\0\0\x10\x00"]),
    st.binary(max_size=120),
)
def test_fuzz_ip_shaped_bytes(ethertype: int, head: bytes, rest: bytes) -> None:
    _parse_or_typed_error(eth(ethertype, head + rest))


@pytest.mark.rule("PKT-001")
@given(frames(), st.data())
def test_fuzz_mutated_valid_frames(built: tuple[bytes, list[int]], data: st.DataObject) -> None:
    raw = bytearray(_patch_tpids(*built))
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(raw) - 1))
        raw[pos] = data.draw(st.integers(0, 255))
    _parse_or_typed_error(bytes(raw))

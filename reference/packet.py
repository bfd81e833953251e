"""A small, fast header parser: the facts NICs and drivers key on (SPEC: PKT-*).

``parse`` walks one Ethernet frame - VLAN tags, IPv4 or IPv6 (with its extension
headers) and the first upper-layer header - and returns a :class:`PacketInfo`.  It is
written for a driver model that calls it once per packet: a handful of precompiled
``struct.Struct.unpack_from`` calls, explicit length checks instead of exceptions on
the happy path, and one result object.

Bad bytes raise :class:`~reference.errors.Truncated` (the frame or the datagram ends
before bytes a header needs) or :class:`~reference.errors.MalformedInput` (a field
holds an impossible value); nothing else ever escapes (PKT-001, PKT-002).

Where the walk follows the kernel, the code cites it: the IP receive paths
(``net/ipv4/ip_input.c: ip_rcv_core``, ``net/ipv6/ip6_input.c: ip6_rcv_core``), the
IPv6 extension-header skipper (``net/ipv6/exthdrs_core.c: ipv6_skip_exthdr``) and the
flow dissector (``net/core/flow_dissector.c: __skb_flow_dissect``).  Where it
deliberately differs from the flow dissector, the SPEC rule says so.
"""

from __future__ import annotations

import enum
import struct

import attrs

from reference.errors import MalformedInput, Truncated
from reference.trace import Trace, emit

# EtherType values, include/uapi/linux/if_ether.h (PKT-ETH-001, PKT-VLAN-001).
ETH_HLEN = 14
ETH_P_IP = 0x0800
ETH_P_IPV6 = 0x86DD
ETH_P_8021Q = 0x8100
ETH_P_8021AD = 0x88A8
ETH_P_QINQ1 = 0x9100
ETH_P_802_3_MIN = 0x0600
VLAN_HLEN = 4

#: TPIDs whose 4-byte tag the parser steps over (PKT-VLAN-001, PKT-VLAN-002).
VLAN_TPIDS = frozenset((ETH_P_8021Q, ETH_P_8021AD, ETH_P_QINQ1))

# IP protocol numbers (include/uapi/linux/in.h, include/net/ipv6.h NEXTHDR_*).
IPPROTO_ICMP = 1
IPPROTO_TCP = 6
IPPROTO_UDP = 17
IPPROTO_ESP = 50
IPPROTO_AH = 51
IPPROTO_ICMPV6 = 58
IPPROTO_SCTP = 132
NEXTHDR_HOP = 0
NEXTHDR_ROUTING = 43
NEXTHDR_FRAGMENT = 44
NEXTHDR_AUTH = IPPROTO_AH
NEXTHDR_NONE = 59
NEXTHDR_DEST = 60

# IPv4 frag_off bits (include/net/ip.h IP_MF / IP_OFFSET).
IP_MF = 0x2000
IP_OFFSET = 0x1FFF
# IPv6 fragment header frag_off: offset in the top 13 bits, M flag in bit 0
# (include/net/ipv6.h IP6_OFFSET / IP6_MF).
IP6_OFFSET = 0xFFF8
IP6_MF = 0x0001

IPV4_HLEN = 20
IPV6_HLEN = 40
FRAG6_HLEN = 8
TCP_HLEN = 20
UDP_HLEN = 8
SCTP_HLEN = 12
ICMP_HLEN = 8  # struct icmphdr / struct icmp6hdr


class L3(enum.IntEnum):
    NONE = 0  # not IP (ARP, LLDP, unknown ethertype, ...)
    IPV4 = 4
    IPV6 = 6


class L4(enum.IntEnum):
    NONE = 0  # no L4 header available (non-IP, or a non-first fragment)
    TCP = 6
    UDP = 17
    SCTP = 132
    ICMP = 1
    ICMPV6 = 58
    OTHER = 255  # some other IP protocol; see PacketInfo.ip_proto


@attrs.frozen(slots=True)
class VlanTag:
    tpid: int  # 0x8100 or 0x88a8 (or 0x9100)
    tci: int  # host-order 16-bit TCI: PCP(15:13) DEI(12) VID(11:0)
    offset: int  # byte offset of the TPID in the frame

    @property
    def vid(self) -> int:
        return self.tci & 0x0FFF

    @property
    def pcp(self) -> int:
        return self.tci >> 13

    @property
    def dei(self) -> int:
        return (self.tci >> 12) & 1


@attrs.frozen(slots=True)
class PacketInfo:
    """What a parsed Ethernet frame tells a NIC/driver model (PKT-003).

    Offsets are from the start of the Ethernet header.  Addresses are raw network-order
    bytes (4 for IPv4, 16 for IPv6).  Ports are host-order ints.
    """

    length: int  # len(frame)
    vlans: tuple[VlanTag, ...]  # outermost first
    ethertype: int  # the ethertype after all VLAN tags (host order)
    l3: L3
    l3_offset: int  # == 14 + 4 * len(vlans)
    l3_hdr_len: int  # IPv4: IHL*4; IPv6: 40 + all extension headers walked; 0 if not IP
    ip_options: bool  # IPv4 with IHL > 5
    ipv6_ext: bool  # IPv6 with at least one extension header
    src: bytes  # b"" if not IP
    dst: bytes
    ip_proto: int  # the final upper-layer protocol number (after IPv6 ext headers); -1 if not IP
    is_fragment: bool  # IPv4 MF or offset != 0; IPv6 with a Fragment header
    is_first_fragment: bool  # a fragment with offset 0 (only meaningful if is_fragment)
    ip_payload_end: int  # offset where the IP datagram ends per its length field (padding after)
    l4: L4
    l4_offset: int  # offset of the L4 header; -1 if l4 is NONE
    sport: int  # -1 when the L4 has no ports or is absent
    dport: int
    # Added by the packet module (defaults keep older constructors working):
    l4_hdr_len: int = 0  # TCP doff*4, UDP 8, SCTP 12, ICMP/ICMPv6 8; 0 for NONE/OTHER
    icmp_type: int = -1  # ICMP / ICMPv6 type; -1 otherwise
    icmp_code: int = -1
    frag_offset: int = 0  # fragment offset in bytes (0 unless a non-first fragment)


# Precompiled layouts (network byte order).
_U16 = struct.Struct("!H")
_VLAN = struct.Struct("!HH")  # TCI, encapsulated ethertype
_IPV4 = struct.Struct("!BxHxxHxB2x4s4s")  # ver/ihl, tot_len, frag_off, protocol, saddr, daddr
_IPV6 = struct.Struct("!B3xHB1x16s16s")  # ver/tc, payload_len, nexthdr, saddr, daddr
_OPTHDR = struct.Struct("!BB")  # nexthdr, hdrlen (ipv6_opt_hdr, ip_auth_hdr)
_FRAG6 = struct.Struct("!BxH")  # nexthdr, frag_off (struct frag_hdr)
_PORTS = struct.Struct("!HH")
_TCP_DOFF = struct.Struct("!12xB")
_ICMP = struct.Struct("!BB")

#: The IPv6 extension headers parse walks (net/ipv6/exthdrs_core.c ipv6_ext_hdr, minus
#: No Next Header, which ends the chain): PKT-IP6-003, PKT-IP6-005, PKT-IP6-006.
_EXT_HDRS = frozenset((NEXTHDR_HOP, NEXTHDR_ROUTING, NEXTHDR_DEST, NEXTHDR_FRAGMENT, NEXTHDR_AUTH))

_L4_OF_PROTO: dict[int, L4] = {
    IPPROTO_TCP: L4.TCP,
    IPPROTO_UDP: L4.UDP,
    IPPROTO_SCTP: L4.SCTP,
    IPPROTO_ICMP: L4.ICMP,
    IPPROTO_ICMPV6: L4.ICMPV6,
}

#: Fixed L4 header sizes; TCP grows to doff*4 (PKT-L4-001, PKT-L4-002 UDP 8,
#: PKT-L4-003 SCTP 12, PKT-L4-004 ICMP/ICMPv6 8).
_L4_MIN_LEN: dict[L4, int] = {
    L4.TCP: TCP_HLEN,
    L4.UDP: UDP_HLEN,
    L4.SCTP: SCTP_HLEN,
    L4.ICMP: ICMP_HLEN,
    L4.ICMPV6: ICMP_HLEN,
}

#: The rule of each upper-layer header, by name (the trace's record of which one was read).
_L4_RULE = {"TCP": "PKT-L4-001", "UDP": "PKT-L4-002", "SCTP": "PKT-L4-003",
            "ICMP": "PKT-L4-004", "ICMPV6": "PKT-L4-004"}

_L4_FIELD: dict[L4, str] = {
    L4.TCP: "tcp.hdr",
    L4.UDP: "udp.hdr",
    L4.SCTP: "sctp.hdr",
    L4.ICMP: "icmp.hdr",
    L4.ICMPV6: "icmpv6.hdr",
}

_FrameBytes = bytes | bytearray | memoryview

# Enum members as module constants: attribute access on an Enum class costs ~20x a
# global lookup, and parse runs once per packet.
_L3_NONE, _L3_IPV4, _L3_IPV6 = L3.NONE, L3.IPV4, L3.IPV6
_L4_NONE, _L4_TCP, _L4_OTHER = L4.NONE, L4.TCP, L4.OTHER
_ICMP_KINDS = frozenset((L4.ICMP, L4.ICMPV6))


def _truncated(field: str, offset: int, needed: int, end: int, rule: str) -> Truncated:
    """PKT-002: the error for ``needed`` bytes at ``offset`` when the data stops at ``end``."""
    return Truncated(
        field=field, offset=offset, needed=needed, available=max(end - offset, 0), rule=rule
    )


def parse(frame: _FrameBytes, trace: Trace | None = None) -> PacketInfo:
    """Parse an Ethernet frame (PKT-001).  Raises MalformedInput/Truncated on bad input."""
    n = len(frame)
    # PKT-ETH-001: the 14-byte Ethernet header.
    if n < ETH_HLEN:
        raise _truncated("eth.hdr", 0, ETH_HLEN, n, "PKT-ETH-001")
    (ethertype,) = _U16.unpack_from(frame, 12)
    off = ETH_HLEN
    if trace is not None:
        trace.emit("PKT-ETH-001", "Ethernet header", ethertype=ethertype)

    # PKT-VLAN-001: step over every tag whose TPID is in VLAN_TPIDS, outermost first.
    vlans: tuple[VlanTag, ...] = ()
    if ethertype in VLAN_TPIDS:
        tags: list[VlanTag] = []
        while ethertype in VLAN_TPIDS:
            if off + VLAN_HLEN > n:
                raise _truncated("vlan.hdr", off, VLAN_HLEN, n, "PKT-VLAN-001")
            tci, inner = _VLAN.unpack_from(frame, off)
            tags.append(VlanTag(ethertype, tci, off - 2))
            ethertype = inner
            off += VLAN_HLEN
        vlans = tuple(tags)
        emit(trace, "PKT-VLAN-001", "walked VLAN tags", depth=len(vlans), ethertype=ethertype)
        if trace is not None and any(tag.tpid == ETH_P_QINQ1 for tag in vlans):
            trace.emit("PKT-VLAN-002", "a 0x9100 tag walked like 0x8100")

    if ethertype == ETH_P_IP:
        return _parse_ipv4(frame, n, off, vlans, trace)
    if ethertype == ETH_P_IPV6:
        return _parse_ipv6(frame, n, off, vlans, trace)

    # PKT-ETH-002: anything else (including 802.3 length values) carries no IP.
    emit(trace, "PKT-ETH-002", "not IP: no L3/L4 facts", ethertype=ethertype)
    return PacketInfo(
        n, vlans, ethertype, _L3_NONE, off, 0, False, False, b"", b"", -1, False, False, n,
        _L4_NONE, -1, -1, -1,
    )


def _parse_ipv4(
    frame: _FrameBytes, n: int, off: int, vlans: tuple[VlanTag, ...], trace: Trace | None
) -> PacketInfo:
    # PKT-IP4-001: the fixed 20-byte header must be present.
    if off + IPV4_HLEN > n:
        raise _truncated("ipv4.hdr", off, IPV4_HLEN, n, "PKT-IP4-001")
    ver_ihl, tot_len, frag_off, proto, src, dst = _IPV4.unpack_from(frame, off)
    ihl = ver_ihl & 0x0F
    # PKT-IP4-002: ip_rcv_core drops ihl < 5 or version != 4 (inhdr_error).
    if ver_ihl >> 4 != 4:
        raise MalformedInput(
            "IPv4 header with a version other than 4",
            field="ipv4.version", offset=off, value=ver_ihl >> 4, rule="PKT-IP4-002",
        )
    if ihl < 5:
        raise MalformedInput(
            "IPv4 IHL below 5 words",
            field="ipv4.ihl", offset=off, value=ihl, rule="PKT-IP4-002",
        )
    hlen = ihl * 4
    # PKT-IP4-003: the options IHL announces must be in the frame.
    if off + hlen > n:
        raise _truncated("ipv4.ihl", off, hlen, n, "PKT-IP4-003")
    # PKT-IP4-004: total length covers the header and fits the frame; the rest is padding.
    if tot_len < hlen:
        raise MalformedInput(
            "IPv4 total length shorter than its header",
            field="ipv4.tot_len", offset=off + 2, value=tot_len, rule="PKT-IP4-004",
        )
    end = off + tot_len
    if end > n:
        raise _truncated("ipv4.tot_len", off, tot_len, n, "PKT-IP4-004")
    if trace is not None:  # the header's facts every later reading rests on
        trace.emit("PKT-IP4-001", "fixed IPv4 header: addresses, protocol", proto=proto)
        trace.emit("PKT-IP4-002", "version 4, IHL of at least 5", ihl=ihl)
        trace.emit("PKT-IP4-003", "header of IHL x 4 bytes", length=hlen, options=ihl > 5)
        trace.emit("PKT-IP4-004", "datagram ends at its total length", end=end,
                   padding=n - end)

    # PKT-IP4-005: ip_is_fragment() is MF or a non-zero offset.
    if frag_off & (IP_MF | IP_OFFSET):
        frag_offset = (frag_off & IP_OFFSET) * 8
        emit(trace, "PKT-IP4-005", "IPv4 fragment", offset=frag_offset, mf=bool(frag_off & IP_MF))
        if frag_offset:
            return PacketInfo(
                n, vlans, ETH_P_IP, _L3_IPV4, off, hlen, ihl > 5, False, src, dst, proto, True,
                False, end, _L4_NONE, -1, -1, -1, 0, -1, -1, frag_offset,
            )
        return _upper(frame, n, vlans, ETH_P_IP, _L3_IPV4, off, hlen, ihl > 5, False, src, dst,
                      proto, True, end, off + hlen, trace)
    return _upper(frame, n, vlans, ETH_P_IP, _L3_IPV4, off, hlen, ihl > 5, False, src, dst,
                  proto, False, end, off + hlen, trace)


def _parse_ipv6(
    frame: _FrameBytes, n: int, off: int, vlans: tuple[VlanTag, ...], trace: Trace | None
) -> PacketInfo:
    # PKT-IP6-001: the fixed 40-byte header, version 6 (ip6_rcv_core).
    if off + IPV6_HLEN > n:
        raise _truncated("ipv6.hdr", off, IPV6_HLEN, n, "PKT-IP6-001")
    ver_tc, plen, nexthdr, src, dst = _IPV6.unpack_from(frame, off)
    if ver_tc >> 4 != 6:
        raise MalformedInput(
            "IPv6 header with a version other than 6",
            field="ipv6.version", offset=off, value=ver_tc >> 4, rule="PKT-IP6-001",
        )
    # PKT-IP6-002: payload length bounds the datagram; zero with Hop-by-Hop first may be
    # a jumbogram, whose length the model takes from the frame.
    if plen == 0 and nexthdr == NEXTHDR_HOP:
        end = n
    else:
        end = off + IPV6_HLEN + plen
        if end > n:
            raise _truncated("ipv6.payload_len", off, IPV6_HLEN + plen, n, "PKT-IP6-002")
    if trace is not None:
        trace.emit("PKT-IP6-001", "fixed IPv6 header, version 6", nexthdr=nexthdr)
        trace.emit("PKT-IP6-002", "datagram ends at its payload length", end=end,
                   padding=n - end, jumbo=plen == 0 and nexthdr == NEXTHDR_HOP)

    # PKT-IP6-003..006: walk the extension headers ipv6_skip_exthdr() knows.
    cur = off + IPV6_HLEN
    is_fragment = False
    proto = nexthdr
    while proto in _EXT_HDRS:
        if proto == NEXTHDR_FRAGMENT:
            if cur + FRAG6_HLEN > end:
                raise _truncated("ipv6.frag", cur, FRAG6_HLEN, end, "PKT-IP6-005")
            nxt, frag_off = _FRAG6.unpack_from(frame, cur)
            is_fragment = True
            frag_offset = frag_off & IP6_OFFSET
            emit(trace, "PKT-IP6-005", "IPv6 Fragment header", offset=frag_offset,
                 m=bool(frag_off & IP6_MF))
            cur += FRAG6_HLEN
            if frag_offset:
                # A non-first fragment: what follows is the middle of the datagram.
                return PacketInfo(
                    n, vlans, ETH_P_IPV6, _L3_IPV6, off, cur - off, False, True, src, dst, nxt,
                    True, False, end, _L4_NONE, -1, -1, -1, 0, -1, -1, frag_offset,
                )
            proto = nxt
            continue
        rule = "PKT-IP6-006" if proto == NEXTHDR_AUTH else "PKT-IP6-003"
        if cur + 2 > end:
            raise _truncated("ipv6.exthdr", cur, 2, end, rule)
        nxt, hdrlen = _OPTHDR.unpack_from(frame, cur)
        # ipv6_authlen: AH counts 4-byte units minus 2; the others 8-byte units minus 1.
        size = (hdrlen + 2) * 4 if proto == NEXTHDR_AUTH else (hdrlen + 1) * 8
        if cur + size > end:
            raise _truncated("ipv6.exthdr", cur, size, end, rule)
        if trace is not None:
            trace.emit(rule, "IPv6 extension header", nexthdr=proto, length=size)
        cur += size
        proto = nxt

    hdr_len = cur - off
    ext = hdr_len > IPV6_HLEN
    if ext:
        emit(trace, "PKT-IP6-003", "walked IPv6 extension headers", length=hdr_len - IPV6_HLEN,
             nexthdr=proto)
    if trace is not None:
        trace.emit("PKT-IP6-004", "extension-header walk ended", nexthdr=proto)
    if proto == NEXTHDR_NONE:
        # PKT-IP6-004: No Next Header - nothing follows.
        return PacketInfo(
            n, vlans, ETH_P_IPV6, _L3_IPV6, off, hdr_len, False, ext, src, dst, proto,
            is_fragment, is_fragment, end, _L4_NONE, -1, -1, -1,
        )
    return _upper(frame, n, vlans, ETH_P_IPV6, _L3_IPV6, off, hdr_len, False, ext, src, dst,
                  proto, is_fragment, end, cur, trace)


def _upper(
    frame: _FrameBytes,
    n: int,
    vlans: tuple[VlanTag, ...],
    ethertype: int,
    l3: L3,
    l3_off: int,
    l3_len: int,
    options: bool,
    ext: bool,
    src: bytes,
    dst: bytes,
    proto: int,
    is_fragment: bool,
    end: int,
    l4_off: int,
    trace: Trace | None,
) -> PacketInfo:
    """Read the upper-layer header that starts at ``l4_off`` (PKT-L4-001..006).

    ``is_fragment`` is only ever true here for a first fragment.
    """
    l4 = _L4_OF_PROTO.get(proto, _L4_OTHER)
    if l4 is _L4_OTHER:
        # PKT-L4-005: another protocol (ESP, GRE, AH over IPv4, ...): only its offset.
        if trace is not None:
            trace.emit("PKT-L4-005", "other upper-layer protocol: offset only", proto=proto)
        return PacketInfo(
            n, vlans, ethertype, l3, l3_off, l3_len, options, ext, src, dst, proto,
            is_fragment, is_fragment, end, _L4_OTHER, l4_off, -1, -1,
        )
    need = _L4_MIN_LEN[l4]
    sport = dport = itype = icode = -1
    if l4_off + need <= end:
        if l4 in _ICMP_KINDS:
            # PKT-L4-004: type and code, no ports.
            itype, icode = _ICMP.unpack_from(frame, l4_off)
        else:
            # PKT-L4-001..003: TCP, UDP and SCTP all start with the two ports.
            sport, dport = _PORTS.unpack_from(frame, l4_off)
            if l4 is _L4_TCP:
                # PKT-L4-001: data offset >= 5 words and the whole header present.
                doff = _TCP_DOFF.unpack_from(frame, l4_off)[0] >> 4
                if doff < 5:
                    raise MalformedInput(
                        "TCP data offset below 5 words",
                        field="tcp.doff", offset=l4_off + 12, value=doff, rule="PKT-L4-001",
                    )
                need = doff * 4
                if l4_off + need > end and not is_fragment:
                    raise _truncated("tcp.doff", l4_off, need, end, "PKT-L4-001")
    elif not is_fragment:
        raise _truncated(_L4_FIELD[l4], l4_off, need, end, "PKT-L4-006")
    if l4_off + need > end:
        # PKT-L4-006: a first fragment may legally stop inside its L4 header.
        emit(trace, "PKT-L4-006", "first fragment too short for its L4 header",
             proto=proto, needed=need, available=end - l4_off)
        return PacketInfo(
            n, vlans, ethertype, l3, l3_off, l3_len, options, ext, src, dst, proto,
            True, True, end, _L4_NONE, -1, -1, -1,
        )
    if trace is not None:  # which header was read, and that it ended inside the datagram
        trace.emit(_L4_RULE[l4.name], "upper-layer header", l4=l4.name, length=need)
        trace.emit("PKT-L4-006", "L4 header inside the datagram", end=l4_off + need)
    return PacketInfo(
        n, vlans, ethertype, l3, l3_off, l3_len, options, ext, src, dst, proto, is_fragment,
        is_fragment, end, l4, l4_off, sport, dport, need, itype, icode, 0,
    )

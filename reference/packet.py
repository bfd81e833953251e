"""A small, fast header parser: the facts NICs and drivers key on (SPEC: PKT-*).

INTERFACE STUB written by the lead; the packet helper implements ``parse``.  The field
names and meanings of :class:`PacketInfo` are the contract other modules (rss, checksum,
driver models) rely on: extend it if needed, but do not rename or remove fields.
"""

from __future__ import annotations

import enum

import attrs


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


@attrs.frozen(slots=True)
class PacketInfo:
    """What a parsed Ethernet frame tells a NIC/driver model.

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


def parse(frame: bytes) -> PacketInfo:
    """Parse an Ethernet frame. Raises MalformedInput/Truncated on bad input."""
    raise NotImplementedError

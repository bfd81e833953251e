"""Internet checksum arithmetic and receive checksum state (SPEC: CSUM-*).

Two halves:

* the one's-complement helpers of ``include/net/checksum.h``, ``lib/checksum.c`` and
  ``include/asm-generic/checksum.h`` (``csum_partial``, ``csum_fold``, ``csum_add``,
  ``csum_block_add`` with its odd-offset byte rotation, the pseudo-header sums), plus
  the CRC32c that SCTP uses instead;
* what a driver model needs on receive: the ``ip_summed`` values with the promise each
  makes to the stack (``include/linux/skbuff.h``, "Checksumming of received packets"),
  the value a device reporting ``CHECKSUM_COMPLETE`` delivers, a full L4 checksum check,
  and the stack's own use of a ``CHECKSUM_COMPLETE`` value.

Byte order (CSUM-001): the model computes a ``__wsum`` as a big-endian host running the
generic C code would.  So the folded 16-bit values equal checksum fields read as
big-endian integers, on every host.  A little-endian kernel holds a different 32-bit
``__wsum`` for the same bytes, and an arch-specific ``csum_partial`` (x86, arm64) yet
another; only the folded 16-bit results can be compared across hosts.
"""

from __future__ import annotations

import enum

from reference.errors import MalformedInput
from reference.packet import ETH_HLEN, ETH_P_8021AD, ETH_P_8021Q, L3, L4, UDP_HLEN, PacketInfo
from reference.trace import Trace

_FrameBytes = bytes | bytearray | memoryview

M32 = 0xFFFFFFFF
M16 = 0xFFFF

#: include/net/checksum.h: a computed UDP checksum of 0 is sent as all ones.
CSUM_MANGLED_0 = 0xFFFF

IPPROTO_ICMP = 1
IPPROTO_TCP = 6
IPPROTO_UDP = 17
IPPROTO_ICMPV6 = 58


# --------------------------------------------------------------------------------------
# One's-complement arithmetic (CSUM-002 .. CSUM-008)
# --------------------------------------------------------------------------------------


def ror32(word: int, shift: int) -> int:
    """Rotate a 32-bit value right (include/linux/bitops.h ror32)."""
    word &= M32
    return ((word >> shift) | (word << (32 - shift))) & M32


def _ones16(data: _FrameBytes) -> int:
    """The 16-bit one's-complement sum of big-endian words, as do_csum returns it.

    CSUM-002: an odd trailing byte is the high byte of a last word padded with zero.
    Since 2**16 == 1 (mod 0xffff), the sum of the words is congruent to the whole
    buffer read as one big-endian integer; end-around carry makes the result 0 only
    when every byte is 0 and 0xffff for any other multiple of 0xffff.
    """
    value = int.from_bytes(data, "big")
    if len(data) & 1:
        value <<= 8
    return 0 if value == 0 else (value - 1) % M16 + 1


def csum_add(csum: int, addend: int) -> int:
    """CSUM-004: 32-bit add with the carry folded back in (checksum.h csum_add)."""
    res = ((csum & M32) + (addend & M32)) & M32
    return (res + (res < (addend & M32))) & M32


def csum_sub(csum: int, addend: int) -> int:
    """CSUM-004: adding the complement subtracts (checksum.h csum_sub)."""
    return csum_add(csum, ~addend & M32)


def csum_unfold(n: int) -> int:
    """CSUM-004: a folded ``__sum16`` used as a ``__wsum`` is the same number."""
    return n & M16


def csum_partial(data: _FrameBytes, initial: int = 0) -> int:
    """CSUM-002: the unfolded 32-bit ``__wsum`` of ``data`` added to ``initial``.

    Modelled on the generic lib/checksum.c: do_csum folds the bytes to 16 bits, then
    the result is added to ``initial`` with end-around carry.
    """
    return csum_add(initial, _ones16(data))


def csum_fold(csum: int) -> int:
    """CSUM-003: fold a 32-bit ``__wsum`` to the complemented 16-bit ``__sum16``.

    asm-generic/checksum.h: the complement of the sum minus the value rotated by 16,
    taken in 32-bit arithmetic; the top half is the folded, complemented sum.
    """
    s = csum & M32
    return (((~s & M32) - ror32(s, 16)) & M32) >> 16


def csum_shift(csum: int, offset: int) -> int:
    """CSUM-005: a block that starts at an odd offset has its bytes in swapped lanes."""
    if offset & 1:
        return ror32(csum, 8)
    return csum & M32


def csum_block_add(csum: int, csum2: int, offset: int) -> int:
    """CSUM-005: add the sum ``csum2`` of a block that starts ``offset`` bytes in."""
    return csum_add(csum, csum_shift(csum2, offset))


def csum_block_sub(csum: int, csum2: int, offset: int) -> int:
    """CSUM-005: remove the sum of a block that starts ``offset`` bytes in."""
    return csum_block_add(csum, ~csum2 & M32, offset)


def ip_compute_csum(data: _FrameBytes) -> int:
    """CSUM-008: the complemented 16-bit sum of a buffer (lib/checksum.c)."""
    return ~_ones16(data) & M16


def ip_fast_csum(iph: _FrameBytes, ihl: int, trace: Trace | None = None) -> int:
    """CSUM-008: checksum of an IPv4 header of ``ihl`` words; 0 means it is valid."""
    if len(iph) < ihl * 4:
        raise MalformedInput(
            "IPv4 header shorter than its IHL", field="ipv4.ihl", value=ihl, rule="CSUM-008"
        )
    result = ~_ones16(memoryview(iph)[: ihl * 4]) & M16
    if trace is not None:
        trace.emit("CSUM-008", "IPv4 header checksum", good=result == 0)
        trace.emit("CSUM-002", "one's-complement sum of the header's words")
    return result


def _addr(value: bytes, size: int, name: str, rule: str) -> bytes:
    if len(value) != size:
        raise MalformedInput(
            f"address must be {size} bytes", field=name, value=len(value), rule=rule
        )
    return value


def _from64to32(x: int) -> int:
    x = (x & M32) + (x >> 32)
    x = (x & M32) + (x >> 32)
    return x & M32


def csum_tcpudp_nofold(saddr: bytes, daddr: bytes, length: int, proto: int, csum: int = 0) -> int:
    """CSUM-006: the IPv4 pseudo-header added to ``csum``, unfolded (lib/checksum.c)."""
    s = (csum & M32) + int.from_bytes(_addr(saddr, 4, "saddr", "CSUM-006"), "big")
    s += int.from_bytes(_addr(daddr, 4, "daddr", "CSUM-006"), "big")
    s += (proto & 0xFF) + (length & M32)
    return _from64to32(s)


def csum_tcpudp_magic(saddr: bytes, daddr: bytes, length: int, proto: int, csum: int = 0) -> int:
    """CSUM-006: the folded IPv4 pseudo-header checksum (asm-generic/checksum.h)."""
    return csum_fold(csum_tcpudp_nofold(saddr, daddr, length, proto, csum))


def csum_ipv6_magic(saddr: bytes, daddr: bytes, length: int, proto: int, csum: int = 0) -> int:
    """CSUM-007: the folded IPv6 pseudo-header checksum (net/ipv6/ip6_checksum.c).

    The kernel adds the two addresses as eight 32-bit words with end-around carry.  A
    one's-complement sum does not depend on how the bytes are grouped into words (RFC
    1071, section 2 (C), "parallel summation"), and the fold only sees the sum, so the
    model adds the 16-bit sum of all 32 address bytes instead: the same folded value.
    """
    words = _addr(saddr, 16, "saddr", "CSUM-007") + _addr(daddr, 16, "daddr", "CSUM-007")
    s = csum_add(csum & M32, _ones16(words))
    s = csum_add(s, length & M32)
    s = csum_add(s, proto & 0xFF)
    return csum_fold(s)


def inet_compute_pseudo(saddr: bytes, daddr: bytes, length: int, proto: int) -> int:
    """CSUM-006: include/net/ip.h inet_compute_pseudo, the IPv4 pseudo ``__wsum``."""
    return csum_tcpudp_nofold(saddr, daddr, length, proto, 0)


def ip6_compute_pseudo(saddr: bytes, daddr: bytes, length: int, proto: int) -> int:
    """CSUM-007: include/net/ip6_checksum.h ip6_compute_pseudo, the IPv6 pseudo ``__wsum``."""
    return ~csum_unfold(csum_ipv6_magic(saddr, daddr, length, proto, 0)) & M32


# --------------------------------------------------------------------------------------
# CRC32c for SCTP (CSUM-009)
# --------------------------------------------------------------------------------------

#: Castagnoli polynomial, bit-reversed (RFC 3309 / RFC 9260 appendix).
CRC32C_POLY = 0x82F63B78


def _crc32c_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ CRC32C_POLY if crc & 1 else crc >> 1
        table.append(crc)
    return tuple(table)


_CRC32C_TABLE = _crc32c_table()


def crc32c(data: _FrameBytes, crc: int = 0) -> int:
    """CSUM-009: CRC32c of ``data`` continuing from ``crc`` (pre- and post-inverted)."""
    table = _CRC32C_TABLE
    value = ~crc & M32
    for byte in bytes(data):
        value = table[(value ^ byte) & 0xFF] ^ (value >> 8)
    return ~value & M32


def sctp_compute_cksum(segment: _FrameBytes) -> int:
    """CSUM-009: the CRC32c of an SCTP packet computed with its checksum field zeroed.

    include/net/sctp/checksum.h stores it little-endian (``cpu_to_le32``): the field's
    four bytes, read as a little-endian integer, equal this value when it is right.
    """
    if len(segment) < 12:
        raise MalformedInput(
            "SCTP common header needs 12 bytes", field="sctp.hdr", value=len(segment),
            rule="CSUM-009",
        )
    seg = bytes(segment)
    return crc32c(seg[:8] + b"\0\0\0\0" + seg[12:])


# --------------------------------------------------------------------------------------
# ip_summed (CSUM-SUM-*)
# --------------------------------------------------------------------------------------


class IpSummed(enum.IntEnum):
    """CSUM-SUM-001: ``sk_buff.ip_summed`` values (include/linux/skbuff.h).

    What each promises to the stack on receive:

    * NONE (CSUM-SUM-002): nothing was verified; ``skb->csum`` is meaningless.
    * UNNECESSARY (CSUM-SUM-003): ``csum_level + 1`` consecutive checksums (TCP, UDP,
      GRE with a checksum, SCTP's CRC, FCoE's CRC) were verified; ``skb->csum`` unused.
    * COMPLETE (CSUM-SUM-004): ``skb->csum`` holds the sum of the whole packet after the
      Ethernet header; the stack checks checksums itself.  Never for SCTP or FCoE.
    * PARTIAL (CSUM-SUM-005): from a virtual device, GRO or remote checksum offload; the
      checksum at ``csum_start + csum_offset`` and those before it count as verified.
    """

    CHECKSUM_NONE = 0
    CHECKSUM_UNNECESSARY = 1
    CHECKSUM_COMPLETE = 2
    CHECKSUM_PARTIAL = 3


CHECKSUM_NONE = IpSummed.CHECKSUM_NONE
CHECKSUM_UNNECESSARY = IpSummed.CHECKSUM_UNNECESSARY
CHECKSUM_COMPLETE = IpSummed.CHECKSUM_COMPLETE
CHECKSUM_PARTIAL = IpSummed.CHECKSUM_PARTIAL

#: CSUM-SUM-003: the largest ``csum_level`` (consecutive verified checksums minus one).
SKB_MAX_CSUM_LEVEL = 3


def decr_checksum_unnecessary(ip_summed: IpSummed, csum_level: int) -> tuple[IpSummed, int]:
    """CSUM-SUM-006: one verified checksum consumed (__skb_decr_checksum_unnecessary)."""
    if ip_summed is IpSummed.CHECKSUM_UNNECESSARY:
        if csum_level == 0:
            return IpSummed.CHECKSUM_NONE, 0
        return ip_summed, csum_level - 1
    return ip_summed, csum_level


def incr_checksum_unnecessary(ip_summed: IpSummed, csum_level: int) -> tuple[IpSummed, int]:
    """CSUM-SUM-006: one more verified checksum (__skb_incr_checksum_unnecessary)."""
    if ip_summed is IpSummed.CHECKSUM_UNNECESSARY:
        return ip_summed, min(csum_level + 1, SKB_MAX_CSUM_LEVEL)
    if ip_summed is IpSummed.CHECKSUM_NONE:
        return IpSummed.CHECKSUM_UNNECESSARY, 0
    return ip_summed, csum_level


# --------------------------------------------------------------------------------------
# Receive helpers for a driver model (CSUM-RX-*, CSUM-L4-*)
# --------------------------------------------------------------------------------------


def complete_csum_of(frame: _FrameBytes, start: int = ETH_HLEN, end: int | None = None) -> int:
    """CSUM-RX-001: the ``CHECKSUM_COMPLETE`` value of ``frame[start:end]``.

    With the defaults this is what a device reporting COMPLETE for the packet as the
    stack first sees it gives: every byte after the 14-byte Ethernet header - VLAN tags
    still in the frame, the IP packet and any Ethernet padding - up to the frame's end
    (the FCS is not part of the frame).
    """
    stop = len(frame) if end is None else end
    if not 0 <= start <= stop <= len(frame):
        raise MalformedInput(
            "checksum range outside the frame", field="complete.range", value=(start, stop),
            rule="CSUM-RX-001",
        )
    return csum_partial(memoryview(frame)[start:stop])


class L4Csum(enum.Enum):
    """CSUM-L4-001..005: what a full check of a packet's L4 checksum finds."""

    GOOD = "good"  # present and correct
    BAD = "bad"  # present and wrong
    ZERO = "zero"  # UDP checksum field 0: the sender computed none
    MALFORMED = "malformed"  # UDP length outside 8..bytes present (IPv6: 0 means all)
    NOT_APPLICABLE = "n/a"  # no checksum a device could verify (see CSUM-L4-005)


def udp_checked_length(info: PacketInfo, field: int, available: int) -> int | None:
    """CSUM-L4-002: the UDP length the receive path uses, or None for a "short packet".

    ``field`` is the UDP length field and ``available`` the bytes from the UDP header to
    the end of the IP datagram (``skb->len`` in ``__udp4_lib_rcv``/``__udp6_lib_rcv``).
    Over IPv6, v6.17 reads a length of 0 as a jumbo payload and takes ``available``
    instead; IPv4 has no such case, so 0 is below the 8-byte header and short.
    """
    if field == 0 and info.l3 is L3.IPV6:
        field = available
    if field < UDP_HLEN or field > available:
        return None
    return field


def _pseudo_fold(info: PacketInfo, length: int, proto: int, csum: int) -> int:
    """Fold ``csum`` plus the pseudo-header of ``info``'s IP version."""
    if info.l3 is L3.IPV4:
        return csum_tcpudp_magic(info.src, info.dst, length, proto, csum)
    return csum_ipv6_magic(info.src, info.dst, length, proto, csum)


def l4_checksum_status(frame: _FrameBytes, info: PacketInfo,
                       trace: Trace | None = None) -> L4Csum:
    """Check the L4 checksum of a parsed frame over the whole segment (CSUM-L4-001..005).

    With a trace, the verdict's rule and the arithmetic that decided it are recorded
    (TRACE-001): what the suite blames when a device's checksum verdict differs."""
    status = _l4_status(frame, info)
    if trace is not None:
        explain_l4_check(trace, info, status)
    return status


def _l4_status(frame: _FrameBytes, info: PacketInfo) -> L4Csum:
    """The verdict of :func:`l4_checksum_status` (CSUM-L4-001..005)."""
    l4 = info.l4
    if info.l3 is L3.NONE or info.is_fragment or l4 is L4.NONE or l4 is L4.OTHER:
        return L4Csum.NOT_APPLICABLE  # CSUM-L4-005
    seg = memoryview(frame)[info.l4_offset : info.ip_payload_end]
    if l4 is L4.TCP:
        # CSUM-L4-001: pseudo-header + header + data, length = IP payload after the headers.
        ok = _pseudo_fold(info, len(seg), IPPROTO_TCP, csum_partial(seg)) == 0
        return L4Csum.GOOD if ok else L4Csum.BAD
    if l4 is L4.UDP:
        # CSUM-L4-002: the UDP length field bounds the checksummed bytes (0 over IPv6:
        # all of them).
        ulen = udp_checked_length(info, int.from_bytes(seg[4:6], "big"), len(seg))
        if ulen is None:
            return L4Csum.MALFORMED
        if seg[6] == 0 and seg[7] == 0:
            return L4Csum.ZERO
        seg = seg[:ulen]
        ok = _pseudo_fold(info, ulen, IPPROTO_UDP, csum_partial(seg)) == 0
        return L4Csum.GOOD if ok else L4Csum.BAD
    if l4 is L4.ICMP:
        # CSUM-L4-003: ICMP over IPv4 has no pseudo-header.
        if info.l3 is not L3.IPV4:
            return L4Csum.NOT_APPLICABLE
        return L4Csum.GOOD if ip_compute_csum(seg) == 0 else L4Csum.BAD
    if l4 is L4.ICMPV6:
        # CSUM-L4-003: ICMPv6 covers the IPv6 pseudo-header.
        if info.l3 is not L3.IPV6:
            return L4Csum.NOT_APPLICABLE
        folded = csum_ipv6_magic(info.src, info.dst, len(seg), IPPROTO_ICMPV6, csum_partial(seg))
        return L4Csum.GOOD if folded == 0 else L4Csum.BAD
    # CSUM-L4-004: SCTP carries a CRC32c, stored little-endian.
    stored = int.from_bytes(seg[8:12], "little")
    return L4Csum.GOOD if sctp_compute_cksum(seg) == stored else L4Csum.BAD


def verify_l4_checksum(frame: _FrameBytes, info: PacketInfo,
                       trace: Trace | None = None) -> bool:
    """CSUM-L4-006: may a device report this packet CHECKSUM_UNNECESSARY (csum_level 0)?"""
    ok = l4_checksum_status(frame, info, trace) in (L4Csum.GOOD, L4Csum.ZERO)
    if trace is not None:
        trace.emit("CSUM-L4-006", "verified for CHECKSUM_UNNECESSARY", verified=ok)
    return ok


def explain_l4_check(trace: Trace, info: PacketInfo, status: L4Csum) -> None:
    """TRACE-001: which rule decided an L4 verdict and the arithmetic it used: the TCP
    (CSUM-L4-001), UDP (CSUM-L4-002), ICMP/ICMPv6 (CSUM-L4-003) and SCTP (CSUM-L4-004)
    checks, or nothing to check (CSUM-L4-005).  Trace-only (``explain*`` is never
    mutated: it decides nothing a target returns)."""
    check = _L4_CHECK.get(info.l4.name)
    if status is L4Csum.NOT_APPLICABLE or check is None:
        trace.emit("CSUM-L4-005", "no L4 checksum to check", l4=info.l4.name,
                   fragment=info.is_fragment)
        return
    rule, arithmetic = check
    if status is L4Csum.MALFORMED or status is L4Csum.ZERO:
        trace.emit(rule, "UDP length field outside 8..datagram, or a zero checksum",
                   status=status.value)
        return
    trace.emit(rule, "L4 checksum checked", status=status.value)
    for step in arithmetic[info.l3.name]:
        trace.emit(step, _ARITHMETIC[step])


#: Per L4 (by name): its check's rule and, per IP version, the arithmetic it uses.
_ONES = ("CSUM-002", "CSUM-004", "CSUM-003")
_L4_CHECK: dict[str, tuple[str, dict[str, tuple[str, ...]]]] = {
    "TCP": ("CSUM-L4-001", {"IPV4": ("CSUM-006", *_ONES), "IPV6": ("CSUM-007", *_ONES)}),
    "UDP": ("CSUM-L4-002", {"IPV4": ("CSUM-006", *_ONES), "IPV6": ("CSUM-007", *_ONES)}),
    "ICMP": ("CSUM-L4-003", {"IPV4": ("CSUM-008", "CSUM-002")}),
    "ICMPV6": ("CSUM-L4-003", {"IPV6": ("CSUM-007", *_ONES)}),
    "SCTP": ("CSUM-L4-004", {"IPV4": ("CSUM-009",), "IPV6": ("CSUM-009",)}),
}
_ARITHMETIC = {
    "CSUM-002": "csum_partial: 16-bit one's-complement sum of the bytes",
    "CSUM-003": "csum_fold of the sum",
    "CSUM-004": "csum_add: end-around carry",
    "CSUM-006": "IPv4 pseudo-header added",
    "CSUM-007": "IPv6 pseudo-header added",
    "CSUM-008": "ip_compute_csum: no pseudo-header",
    "CSUM-009": "CRC32c with the checksum field zeroed, stored little-endian",
}


#: The protocols whose one's-complement checksum a COMPLETE value can check (CSUM-RX-002).
_COMPLETE_L4 = frozenset((L4.TCP, L4.UDP, L4.ICMP, L4.ICMPV6))

#: The in-band tags the receive path strips (include/linux/if_vlan.h eth_type_vlan); a
#: 0x9100 tag stays and the frame never reaches IP (CSUM-RX-002).
_UNTAGGED_TPIDS = frozenset((ETH_P_8021Q, ETH_P_8021AD))


def complete_validates_l4(frame: _FrameBytes, info: PacketInfo, csum: int) -> bool:
    """CSUM-RX-002: does the stack accept the L4 checksum from a COMPLETE value?

    ``csum`` is the ``skb->csum`` a driver set with CHECKSUM_COMPLETE, covering
    ``frame[14:]`` (CSUM-RX-001).  The stack keeps it in step with each change to the
    packet and finally adds the pseudo-header and folds:

    1. in-band 802.1Q/802.1ad tags are pulled with ``skb_pull_rcsum`` (their sum
       subtracted); a frame with a 0x9100 tag never reaches IP: False;
    2. the IP layer trims Ethernet padding with ``pskb_trim_rcsum``, which removes the
       padding's sum with ``csum_block_sub`` at the datagram's length - odd lengths
       rotate;
    3. the network header is pulled: IPv6 (and its extension headers) with
       ``skb_postpull_rcsum``; IPv4 with a plain pull, because a valid IPv4 header
       sums to zero;
    4. UDP trims to its length field the same way as step 2 (a length of 0 over IPv6
       keeps the whole datagram, CSUM-L4-002);
    5. ``csum_fold(csum_add(pseudo, csum)) == 0`` accepts the checksum.

    A bad IPv4 header checksum gives False (ip_rcv_core drops the packet first); a
    UDP checksum of zero gives True (the zero check skips validation).

    Only for TCP, UDP (non-zero checksum), ICMP and ICMPv6 of unfragmented packets;
    CHECKSUM_COMPLETE is not applicable to SCTP (CSUM-SUM-004), so False there.
    """
    if info.l3 is L3.NONE or info.is_fragment or info.l4 not in _COMPLETE_L4:
        return False
    # ICMP is checked only under IPv4, ICMPv6 only under IPv6 (CSUM-L4-003).
    if info.l4 is L4.ICMP and info.l3 is not L3.IPV4:
        return False
    if info.l4 is L4.ICMPV6 and info.l3 is not L3.IPV6:
        return False
    if any(tag.tpid not in _UNTAGGED_TPIDS for tag in info.vlans):
        return False  # no packet_type handler for 0x9100: the stack never sees L3
    buf = memoryview(frame)
    iph = buf[info.l3_offset : info.l4_offset]
    if info.l3 is L3.IPV4 and ip_fast_csum(iph, info.l3_hdr_len // 4) != 0:
        return False  # ip_rcv_core drops a bad IPv4 header before any L4 check
    s = csum & M32
    # 1. VLAN tags (skb->data starts at each tag, so the offset is even: no rotation).
    if info.l3_offset > ETH_HLEN:
        s = csum_block_sub(s, csum_partial(buf[ETH_HLEN : info.l3_offset]), 0)
    # 2. Padding after the datagram; the offset is relative to the network header.
    if info.ip_payload_end < len(frame):
        pad = csum_partial(buf[info.ip_payload_end :])
        s = csum_block_sub(s, pad, info.ip_payload_end - info.l3_offset)
    # 3. The network header.
    if info.l3 is L3.IPV6:
        s = csum_block_sub(s, csum_partial(buf[info.l3_offset : info.l4_offset]), 0)
    length = info.ip_payload_end - info.l4_offset
    if info.l4 is L4.UDP:
        field = int.from_bytes(buf[info.l4_offset + 4 : info.l4_offset + 6], "big")
        ulen = udp_checked_length(info, field, length)
        if ulen is None:
            return False  # __udp4_lib_rcv / __udp6_lib_rcv drop it as a short packet
        if buf[info.l4_offset + 6] == 0 and buf[info.l4_offset + 7] == 0:
            return True  # zero_okay: a sender-omitted UDP checksum is not validated
        if ulen < length:  # 4. UDP trims to its own length.
            tail = csum_partial(buf[info.l4_offset + ulen : info.ip_payload_end])
            s = csum_block_sub(s, tail, ulen)
        length = ulen
    # 5. Pseudo-header and fold.
    proto = info.ip_proto
    if info.l4 is L4.ICMP:
        return csum_fold(s) == 0
    if info.l3 is L3.IPV4:
        psum = inet_compute_pseudo(info.src, info.dst, length, proto)
    else:
        psum = ip6_compute_pseudo(info.src, info.dst, length, proto)
    return csum_fold(csum_add(psum, s)) == 0


"""Blame into the shared parser and checksum code (PKT-*, CSUM-*), from the reference's trace.

The driver models read every frame through ``reference/packet.py`` and take their checksum
verdicts from ``reference/checksum.py``.  A wrong header walk or a wrong sum there shows in
a field a driver rule reports (an mlx5 CQE's header type, a fec skb's ``ip_summed``, an RSS
hash), so the component's attribution names the library rules that decided the field
together with its own rule.  Which library rules decided a frame is read from the
reference's own trace (TRACE-001): ``parse`` records each header it read, the L4 check
and ``ip_fast_csum`` the rule of their verdict and the arithmetic behind it.

Only the facts a field reads are blamed: a CQE's IP sum rests on the L3 walk
(:attr:`FrameRules.l3`), not on the L4 header; its header type on the whole walk; its
checksum bits on the walk and the verdicts.
"""

from __future__ import annotations

import contextlib
import functools

import attrs

from reference import checksum, packet
from reference.errors import MalformedInput
from reference.trace import Trace

#: The parser's rules that decide the L3 facts: the Ethernet header, the tags, the fixed
#: IP header and where the datagram ends (the span an IP-level sum covers).
L3_FACTS = frozenset({
    "PKT-ETH-001", "PKT-ETH-002", "PKT-VLAN-001", "PKT-VLAN-002", "PKT-IP4-001",
    "PKT-IP4-002", "PKT-IP4-003", "PKT-IP4-004", "PKT-IP6-001", "PKT-IP6-002",
})

#: csum_partial as the model computes it: a one's-complement sum (CSUM-002) added with
#: end-around carry (CSUM-004), its 16-bit value read as a big-endian host holds it
#: (CSUM-001): what a device reporting a sum of bytes delivers.
SUM_OF_BYTES = ("CSUM-002", "CSUM-004", "CSUM-001")


@attrs.frozen
class FrameRules:
    """The library rules the reference applied to one frame, from its trace."""

    #: The header walk (PKT-*), in order; a refused frame ends with the refusing rule.
    walk: tuple[str, ...]
    #: The IPv4 header checksum (CSUM-008 and its sum); () unless the frame is IPv4.
    ipv4_header: tuple[str, ...] = ()
    #: ``l4_checksum_status``: the verdict's rule and its arithmetic; () if refused.
    l4_check: tuple[str, ...] = ()
    #: ``verify_l4_checksum``: the same, then CSUM-L4-006.
    verified: tuple[str, ...] = ()
    #: What a CQE's L4_OK bit reads (mlx5 checks only whole TCP and UDP packets).
    tcp_or_udp: bool = False

    @property
    def l3(self) -> tuple[str, ...]:
        """The walk's rules that decide the L3 facts (:data:`L3_FACTS`)."""
        return tuple(r for r in self.walk if r in L3_FACTS)

    @property
    def checks(self) -> tuple[str, ...]:
        """The walk, the IPv4 header check and the L4 verdict: a device's checksum bits."""
        return _unique(self.walk + self.ipv4_header + self.l4_check)


def _unique(rules: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(rules))


@functools.lru_cache(maxsize=2048)
def frame_rules(frame: bytes) -> FrameRules:
    """Run the parser and the checksum checks on ``frame`` with a trace each."""
    walk = Trace()
    try:
        info = packet.parse(frame, walk)
    except MalformedInput as exc:  # the refusal is the decision: its rule names it
        return FrameRules(_unique((*walk.rules(), *([exc.rule] if exc.rule else []))))
    ipv4 = Trace()
    if info.l3 is packet.L3.IPV4:
        with contextlib.suppress(MalformedInput):  # the header the IHL names is all there
            checksum.ip_fast_csum(frame[info.l3_offset:info.l3_offset + info.l3_hdr_len],
                                  info.l3_hdr_len // 4, ipv4)
    l4, verified = Trace(), Trace()
    with contextlib.suppress(MalformedInput):  # the checks raise nothing on a parsed frame
        checksum.l4_checksum_status(frame, info, l4)
        checksum.verify_l4_checksum(frame, info, verified)
    return FrameRules(_unique(tuple(walk.rules())), _unique(tuple(ipv4.rules())),
                      _unique(tuple(l4.rules())), _unique(tuple(verified.rules())),
                      info.l4 in (packet.L4.TCP, packet.L4.UDP) and not info.is_fragment)


def mlx5_cqe_rules(frame: bytes, field: str, *, csum_full: bool,
                   vlan_strip: bool) -> tuple[str, ...]:
    """The library rules behind a CQE field the device derived from ``frame``.

    ``check_sum``: the IP datagram's sum (MLX5-DEV-004) over the span the L3 walk gives,
    or with ``cqe_checksum_full`` the sum of everything after the Ethernet header, which
    is CSUM-RX-001's value; ``l4_l3_hdr_type`` and the RSS fields: the whole walk;
    ``hds_ip_ext``: the walk, the IPv4 header check and (TCP, UDP) the L4 verification;
    ``vlan_info``: the Ethernet header and the tag walk."""
    rules = frame_rules(bytes(frame))
    if field == "check_sum":
        return ("CSUM-RX-001", *SUM_OF_BYTES) if csum_full else rules.l3 + SUM_OF_BYTES
    if field in ("l4_l3_hdr_type", "rss_hash_result", "rss_hash_type"):
        return rules.walk
    if field == "vlan_info" and vlan_strip:  # the outer tag stripped, as the walk found it
        return tuple(r for r in rules.walk if r.startswith(("PKT-ETH-001", "PKT-VLAN-")))
    if field == "hds_ip_ext":
        return _unique(rules.walk + rules.ipv4_header
                       + (rules.verified if rules.tcp_or_udp else ()))
    return ()


def applied(frames: tuple[bytes, ...], *, cqe: bool = False) -> set[str]:
    """The library rules the reference applied to ``frames`` (a fixture's ``rules``): each
    frame's walk, IPv4 header check and L4 verdict; with ``cqe``, what an mlx5 CQE reads
    (:func:`mlx5_cqe_rules`: the sum of bytes, the verification of TCP and UDP only)."""
    out: set[str] = set(SUM_OF_BYTES) if cqe and frames else set()
    for frame in frames:
        rules = frame_rules(bytes(frame))
        if cqe:
            out.update(rules.walk, rules.ipv4_header,
                       rules.verified if rules.tcp_or_udp else ())
        else:
            out.update(rules.checks)
    return out

"""eth_get_headlen (PKT-L4-007): hand-counted header lengths for frames built with scapy.

Each expected value is counted by hand from the header sizes (Ethernet 14, 802.1Q 4, IPv4
20 + options, IPv6 40, IPv6 extension headers 8 each, TCP 20 + options, UDP 8, ICMP 8,
SCTP 12, the FCoE header 38 (FCOE_HEADER_LEN, include/scsi/fc/fc_fcoe.h), struct
ptp_header 34 (include/linux/ptp_classify.h: 1+1+2+1+1+2+8+4+10+2+1+1)), never from the
model.
"""

from __future__ import annotations

import pytest
from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.inet6 import (
    IPv6,
    IPv6ExtHdrDestOpt,
    IPv6ExtHdrFragment,
    IPv6ExtHdrHopByHop,
    IPv6ExtHdrRouting,
)
from scapy.layers.l2 import ARP, Dot1Q, Ether
from scapy.layers.sctp import SCTP
from scapy.packet import Packet

from reference.errors import InvalidConfig
from reference.flow_dissector import eth_get_headlen

PAY = b"p" * 300

CASES: list[tuple[str, Packet, int]] = [
    ("tcp", Ether() / IP() / TCP() / PAY, 14 + 20 + 20),
    ("tcp with 8 option bytes", Ether() / IP() / TCP(options=[("NOP", None)] * 8) / PAY,
     14 + 20 + 28),
    ("ipv4 options", Ether() / IP(options=b"\x01\x01\x01\x00") / UDP() / PAY, 14 + 24 + 8),
    ("udp in 802.1Q", Ether() / Dot1Q(vlan=5) / IP() / UDP() / PAY, 14 + 4 + 20 + 8),
    ("ipv6 udp", Ether() / IPv6() / UDP() / PAY, 14 + 40 + 8),
    ("ipv6 flow label does not stop the walk", Ether() / IPv6(fl=7) / TCP() / PAY,
     14 + 40 + 20),
    # A label stop would end at the IPv6 header here (54): only an extension header or a
    # fragment header after it tells a stop from a walk.
    ("ipv6 flow label, hop-by-hop: still walked to L4",
     Ether() / IPv6(fl=0xA5C3E) / IPv6ExtHdrHopByHop() / TCP() / PAY, 14 + 40 + 8 + 20),
    ("ipv6 flow label, first fragment: still walked to L4",
     Ether() / IPv6(fl=1) / IPv6ExtHdrFragment(m=1) / UDP() / PAY, 14 + 40 + 8 + 8),
    ("ipv6 hop-by-hop", Ether() / IPv6() / IPv6ExtHdrHopByHop() / UDP() / PAY,
     14 + 40 + 8 + 8),
    ("ipv6 routing header", Ether() / IPv6() / IPv6ExtHdrRouting(addresses=[]) / UDP() / PAY,
     14 + 40 + 8 + 8),
    ("ipv6 destination options", Ether() / IPv6() / IPv6ExtHdrDestOpt() / TCP() / PAY,
     14 + 40 + 8 + 20),
    ("ipv4 first fragment walks into L4", Ether() / IP(flags="MF") / UDP() / PAY,
     14 + 20 + 8),
    ("ipv4 later fragment stops at L3", Ether() / IP(frag=10) / UDP() / PAY, 14 + 20),
    ("ipv6 first fragment walks into L4",
     Ether() / IPv6() / IPv6ExtHdrFragment(m=1) / TCP() / PAY, 14 + 40 + 8 + 20),
    ("ipv6 later fragment", Ether() / IPv6() / IPv6ExtHdrFragment(offset=5) / TCP() / PAY,
     14 + 40 + 8),
    ("icmp", Ether() / IP() / ICMP() / PAY, 14 + 20 + 8),
    ("sctp", Ether() / IP() / SCTP() / PAY, 14 + 20 + 12),
    ("ip-in-ip", Ether() / IP() / IP() / UDP() / PAY, 14 + 20 + 20 + 8),
    ("arp ends at the Ethernet header", Ether() / ARP(), 14),
    ("rarp ends at the Ethernet header", Ether(type=0x8035) / PAY, 14),
    ("cfm ends at the Ethernet header", Ether(type=0x8902) / PAY, 14),
    ("fcoe steps over its header", Ether(type=0x8906) / PAY, 14 + 38),
    ("fcoe header one byte short: out_bad", Ether(type=0x8906) / (b"f" * 37), 14),
    ("fcoe header and nothing after", Ether(type=0x8906) / (b"f" * 38), 14 + 38),
    ("ptp steps over struct ptp_header", Ether(type=0x88F7) / PAY, 14 + 34),
    ("ptp header one byte short: out_bad", Ether(type=0x88F7) / (b"p" * 33), 14),
    ("ptp in 802.1Q", Ether() / Dot1Q(vlan=5, type=0x88F7) / PAY, 14 + 4 + 34),
    ("unknown ethertype", Ether(type=0x88B5) / PAY, 14),
    ("another L4 protocol adds nothing", Ether() / IP(proto=99) / PAY, 14 + 20),
]


@pytest.mark.rule("PKT-L4-007")
@pytest.mark.parametrize(("name", "pkt", "want"), CASES, ids=[c[0] for c in CASES])
def test_eth_get_headlen_hand_counted(name: str, pkt: Packet, want: int) -> None:
    assert eth_get_headlen(bytes(pkt)) == want, name


@pytest.mark.rule("PKT-L4-007")
def test_eth_get_headlen_caps_and_short_input() -> None:
    """Shorter than an Ethernet header: all of it; a walk cut off by ``len`` gives where it
    stopped; a TCP header whose data-offset byte is past ``len`` adds nothing; the result
    never exceeds ``len``."""
    frame = bytes(Ether() / IP() / TCP() / PAY)
    assert eth_get_headlen(frame[:10]) == 10
    assert eth_get_headlen(frame[:30]) == 14  # IPv4 header cut off: out_bad at nhoff 14
    assert eth_get_headlen(frame[:40]) == 34  # thoff 34, doff byte (46) not there
    assert eth_get_headlen(frame[:50]) == 50  # 54 capped at len


@pytest.mark.rule("PKT-L4-007")
def test_eth_get_headlen_refuses_unmodelled_headers() -> None:
    with pytest.raises(InvalidConfig, match="PKT-L4-007"):
        eth_get_headlen(bytes(Ether() / IP(proto=47) / PAY))

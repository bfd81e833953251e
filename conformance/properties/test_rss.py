"""RSS properties: the target's hash, hash type and queue agree with the reference,
and its hashes of Microsoft's published vectors are the published values."""

from __future__ import annotations

import pytest
from hypothesis import given
from scapy.layers.inet import IP, TCP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether

from conformance.check import TargetSession, check
from conformance.components import rss as rss_component
from conformance.scenario import Scenario
from conformance.vectors.ms_rss import IPV4_VECTORS, IPV6_VECTORS, MS_KEY, Vector
from reference import rss

#: Explicit MACs: scapy never has to resolve one, so no ARP ever leaves the machine.
ETH = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")

COMPONENT = rss_component.COMPONENT


@pytest.mark.rule("RSS-IN-001", "RSS-IN-002", "RSS-IN-003", "RSS-IN-004", "RSS-TOEP-001",
                  "RSS-TYPE-001", "RSS-RETA-004", "RSS-RETA-005", "RSS-XFRM-002",
                  "RSS-CFG-001", "RSS-CFG-003", "RSS-CFG-004")
# The shared parser and checksum code, blamed through the reference's trace (libblame).
@pytest.mark.rule("PKT-ETH-001", "PKT-ETH-002", "PKT-VLAN-001", "PKT-VLAN-002", "PKT-IP4-001",
                  "PKT-IP4-002", "PKT-IP4-003", "PKT-IP4-004", "PKT-IP4-005", "PKT-IP6-001",
                  "PKT-IP6-002", "PKT-IP6-003", "PKT-IP6-004", "PKT-IP6-005", "PKT-IP6-006",
                  "PKT-L4-001", "PKT-L4-002", "PKT-L4-003", "PKT-L4-004", "PKT-L4-005",
                  "PKT-L4-006")
@given(scenario=rss_component.scenarios())
def test_rss_agrees_with_reference(rx_target: TargetSession, scenario: Scenario) -> None:
    check(rx_target, scenario, COMPONENT)


@pytest.mark.rule("RSS-IN-003")
@given(scenario=rss_component.scenarios(fragments=True))
def test_fragments_hash_the_address_pair(rx_target: TargetSession, scenario: Scenario) -> None:
    check(rx_target, scenario, COMPONENT)


@pytest.mark.rule("RSS-IN-001", "RSS-IN-002", "RSS-IN-003", "RSS-TYPE-001", "RSS-XFRM-002")
@pytest.mark.rule("PKT-VLAN-001", "PKT-VLAN-002", "PKT-IP4-003", "PKT-IP4-005", "PKT-IP6-003",
                  "PKT-IP6-005", "PKT-IP6-006", "PKT-L4-001", "PKT-L4-004", "PKT-L4-005",
                  "PKT-L4-006")
@pytest.mark.parametrize("scenario", rss_component.header_scenarios(),
                         ids=lambda s: f"{len(s.frames)}-frames")
def test_rss_at_header_walk_boundaries(rx_target: TargetSession, scenario: Scenario) -> None:
    """Each boundary of the header walk once (not left to the draw): a device that reads
    an option-bearing IPv4 header as 20 bytes, ports from a first fragment cut inside its
    L4 header, or an other protocol's bytes as ports hashes differently."""
    check(rx_target, scenario, COMPONENT)


#: The rules :func:`rss.fixed_scenarios` aims at, spelled out for ``rx-oracle spec``.
FIXED_RULES = ("RSS-IN-001", "RSS-IN-002", "RSS-IN-003", "RSS-IN-004", "RSS-RETA-004",
               "RSS-RETA-005", "PKT-VLAN-001", "PKT-IP6-003", "PKT-IP6-004", "PKT-IP6-005")
if FIXED_RULES != rss_component.FIXED_RULES:
    raise RuntimeError("FIXED_RULES differs from rss.FIXED_RULES")


@pytest.mark.rule(*FIXED_RULES)
@pytest.mark.parametrize("scenario", [s for _, s in rss_component.fixed_scenarios()],
                         ids=[name for name, _ in rss_component.fixed_scenarios()])
def test_rss_fixed_edges(rx_target: TargetSession, scenario: Scenario) -> None:
    """Each edge the draws miss, once: source or destination port 0 (still a port, still
    the 4-tuple); a hash of 0xFFFFFFFF (still a hash, the table's last entry); a header walk
    that ends exactly at the end of a VLAN tag, a QinQ pair, an IPv6 Fragment header or an
    extension header followed by No Next Header."""
    check(rx_target, scenario, COMPONENT)


def _vector_frames(v: Vector, v6: bool) -> tuple[bytes, bytes]:
    ip = IPv6(src=v.src, dst=v.dst) if v6 else IP(src=v.src, dst=v.dst)
    with_ports = bytes(ETH / ip / TCP(sport=v.sport, dport=v.dport))
    addresses_only = bytes(ETH / ip.copy())  # no L4 header: the address pair is hashed
    return addresses_only, with_ports


@pytest.mark.rule("RSS-TOEP-001", "RSS-IN-002")
@pytest.mark.parametrize(
    ("vector", "v6"),
    [(v, False) for v in IPV4_VECTORS] + [(v, True) for v in IPV6_VECTORS],
    ids=[f"v4-{v.src}" for v in IPV4_VECTORS] + [f"v6-{v.src}" for v in IPV6_VECTORS],
)
def test_published_microsoft_vectors(rx_target: TargetSession, vector: Vector, v6: bool) -> None:
    """Independent of the reference: the published hash of each row, both hash kinds."""
    scenario = Scenario(
        component="rss",
        config={"key": MS_KEY.hex(), "indir": list(rss.default_indir(128, 1))},
        frames=_vector_frames(vector, v6),
        rules=("RSS-TOEP-001", "RSS-IN-002"),
    )
    published = {"packets": [{"hash": vector.hash_l3}, {"hash": vector.hash_l3l4}]}
    check(rx_target, scenario, COMPONENT, expected=published,
          mask=("packets[*].hash_type", "packets[*].queue"))

"""veth properties: an op-list program on the receiving end of a veth pair gives the
reference's return codes, kfunc results, bytes, lengths and rx queue counters; the RX
hash, whose value is keyed per boot, is checked through its equalities."""

from __future__ import annotations

import pytest
from hypothesis import given, reject

from conformance.check import RuleMismatch, TargetSession, check, expected_at
from conformance.components import layout_edges, veth
from conformance.scenario import Scenario
from reference.errors import InvalidConfig

COMPONENT = veth.COMPONENT


@pytest.mark.rule("VETH-SKB-001", "VETH-SKB-002", "VETH-SKB-003", "VETH-KF-001", "VETH-KF-002",
                  "VETH-KF-003", "VETH-KF-004", "VETH-KF-006", "VETH-STAT-001", "VETH-STAT-002",
                  "VETH-STAT-003", "KFUNC-RSS-001", "KFUNC-RSS-002")
@given(scenario=veth.scenarios())
def test_veth_program_agrees_with_reference(rx_target: TargetSession,
                                            scenario: Scenario) -> None:
    check(rx_target, scenario, COMPONENT, mask=veth.unspecified(scenario))


@pytest.mark.rule("VETH-KF-003")
@given(scenario=veth.oob_vlan_scenarios())
def test_veth_out_of_band_vlan_tag(rx_target: TargetSession, scenario: Scenario) -> None:
    """A tag the sender pushed out of band is what rx_vlan_tag reports."""
    try:
        mask = veth.unspecified(scenario)
    except InvalidConfig:
        reject()
    check(rx_target, scenario, COMPONENT, mask=mask)


@pytest.mark.rule("VETH-KF-002", "VETH-KF-005", "KFUNC-RSS-001", "KFUNC-RSS-002")
@given(scenario=veth.flow_scenarios())
def test_veth_rx_hash_is_a_flow_hash(rx_target: TargetSession, scenario: Scenario) -> None:
    """Equal hashes exactly for the same flow in either direction (and, behind a non-zero
    IPv6 flow label, whatever the ports); each an L4 hash typed ``XDP_RSS_L4`` alone."""
    _check_hash_equalities(rx_target, scenario, ("VETH-KF-002", "VETH-KF-005"))


@pytest.mark.rule("VETH-KF-005", "VETH-KF-007")
@given(scenario=veth.tagged_flow_scenarios())
def test_veth_rx_hash_of_tagged_frames(rx_target: TargetSession, scenario: Scenario) -> None:
    """Tagged frames: the out-of-band tag's VID, PCP and TPID enter the hash (DEI does
    not); in-band tags make the dissector read the IP header as a tag, so the hash and
    its type follow the TPID, TOS and length, not the flow."""
    _check_hash_equalities(rx_target, scenario, ("VETH-KF-005", "VETH-KF-007"))


@pytest.mark.rule("VETH-KF-002", "VETH-KF-005")
@given(scenario=veth.envelope_flow_scenarios())
def test_veth_rx_hash_through_envelopes(rx_target: TargetSession, scenario: Scenario) -> None:
    """IP-in-IP, IPv6-in-IP and extension-header chains up to past the dissector's header
    limit: the hash follows the inner flow exactly as far as the walk goes."""
    _check_hash_equalities(rx_target, scenario, ("VETH-KF-002", "VETH-KF-005"))


@pytest.mark.rule("VETH-KF-006", "VETH-KF-005", "VETH-KF-002")
@given(scenario=veth.rehash_flow_scenarios())
def test_veth_rx_hash_is_dissected_once(rx_target: TargetSession, scenario: Scenario) -> None:
    """The hash of the bytes as the program left them at its first rx_hash call, cached
    for the later calls: a store over the ports after the first call changes nothing, a
    store before it changes the hash."""
    _check_hash_equalities(rx_target, scenario, ("VETH-KF-006", "VETH-KF-005", "VETH-KF-002"))


@pytest.mark.rule("VETH-KF-002", "VETH-KF-005", "VETH-KF-007")
@pytest.mark.parametrize("scenario", veth.walk_edge_scenarios(),
                         ids=lambda s: f"{len(s.frames)}-frames")
def test_veth_rx_hash_at_header_walk_boundaries(rx_target: TargetSession,
                                                scenario: Scenario) -> None:
    """Each boundary of the header walk once (not left to the draw): where the dissector
    stops decides which frames hash alike and whether the hash is L4."""
    _check_hash_equalities(rx_target, scenario, ("VETH-KF-002", "VETH-KF-005", "VETH-KF-007"))


@pytest.mark.rule("VETH-KF-002", "VETH-KF-005", "VETH-KF-006", "VETH-KF-007", "KFUNC-RSS-001",
                  "KFUNC-RSS-002")
@pytest.mark.parametrize("scenario", veth.dissector_constant_scenarios(),
                         ids=lambda s: f"{len(s.frames)}-frames")
def test_veth_rx_hash_at_dissector_constants(rx_target: TargetSession,
                                             scenario: Scenario) -> None:
    """Each constant of the dissector met at its value and beside it: the neighbours of
    the ethertypes and IP protocols it walks into, the 802.3 length/ethertype boundary,
    the VLAN and header-count limits, the port word's offset per protocol."""
    _check_hash_equalities(rx_target, scenario,
                           ("VETH-KF-002", "VETH-KF-005", "VETH-KF-006", "VETH-KF-007"))


@pytest.mark.rule("VETH-FRAME-001", "VETH-STAT-002")
@given(scenario=veth.frame_path_scenarios())
def test_veth_xdp_frame_path(rx_target: TargetSession, scenario: Scenario) -> None:
    """Frames the peer's program sent back with XDP_TX: no skb, so every kfunc is
    -ENODATA; the whole frame counts in xdp_bytes."""
    check(rx_target, scenario, COMPONENT, mask=veth.unspecified(scenario))


@pytest.mark.rule("VETH-MTU-001")
@given(scenario=veth.attach_scenarios())
def test_veth_attach_needs_the_peer_mtu_to_fit(rx_target: TargetSession,
                                               scenario: Scenario) -> None:
    """A program attaches only while the peer's MTU fits one page (or the frags' pages);
    once attached, the peer's max_mtu is that limit."""
    check(rx_target, scenario, COMPONENT)


def _check_hash_equalities(rx_target: TargetSession, scenario: Scenario,
                           rules: tuple[str, ...]) -> None:
    scenario, expected = expected_at(rx_target, scenario, COMPONENT)
    check(rx_target, scenario, COMPONENT, expected=expected, mask=veth.HASH_MASK)
    actual = rx_target.run(scenario, expected)
    # Every successful rx_hash call of the run, by (packet, op): its place and value.
    calls = [((n, k), op["hash"]) for n, p in enumerate(expected["packets"])
             for k, op in enumerate(p["ops"])
             if op.get("name") == "rx_hash" and op.get("rc") == 0]
    want = [h for _, h in calls]
    got = [actual["packets"][n]["ops"][k]["hash"] for (n, k), _ in calls]
    for i in range(len(want)):
        for j in range(i):
            if (want[i] == want[j]) != (got[i] == got[j]):
                (pj, oj), (pi, oi) = calls[j][0], calls[i][0]
                raise RuleMismatch(
                    f"rule {'/'.join(rules)}: packet {pj} op {oj} and packet {pi} op {oi}: "
                    f"hashes {got[j]:#x}, {got[i]:#x}; expected them "
                    f"{'equal' if want[i] == want[j] else 'different'}",
                    rules, scenario, expected)


# --- the page_pool copy's layout at its edges (branch tri4-arch) ----------------------------

#: The rules :func:`layout_edges.veth_scenarios` aims at, spelled out for ``rx-oracle spec``.
VETH_LAYOUT_RULES = ("VETH-SKB-002", "XDP-ADJ-006")
if VETH_LAYOUT_RULES != layout_edges.VETH_RULES:
    raise RuntimeError("VETH_LAYOUT_RULES differs from layout_edges.VETH_RULES")


@pytest.mark.rule(*VETH_LAYOUT_RULES)
@pytest.mark.parametrize("scenario", [s for _, s in layout_edges.veth_scenarios()],
                         ids=[name for name, _ in layout_edges.veth_scenarios()])
def test_veth_copy_layout_edges(rx_target: TargetSession, scenario: Scenario) -> None:
    """The tail grown to exactly the end of the page_pool copy: a 65-byte frame
    (``SKB_DATA_ALIGN`` rounds up from one byte past a cache line), a copy of exactly half
    a page (still a fragment) and one of more than half (a whole page, and one byte past
    its end: -EINVAL).  The draws keep growth out of the page_pool-dependent band."""
    check(rx_target, scenario, COMPONENT)

"""mlx5 properties (step 1): the CQEs the RX handlers see, the work done per poll and the
compression counters agree with the reference for the same frames and configuration."""

from __future__ import annotations

import pytest
from hypothesis import given

from conformance.check import TargetSession, check
from conformance.components import mlx5
from conformance.components.mlx5_ring_strategies import ring_scenarios, write_scenarios
from conformance.scenario import Scenario

COMPONENT = mlx5.COMPONENT


@pytest.mark.rule("MLX5-DEV-002", "MLX5-DEV-003", "MLX5-DEV-004", "MLX5-DEV-005", "MLX5-DEV-006",
                  "MLX5-DEV-008", "MLX5-DEV-009", "MLX5-DEV-010", "MLX5-DEV-011",
                  "MLX5-DEV-013", "MLX5-COMP-001", "MLX5-COMP-005", "MLX5-CQ-003",
                  "MLX5-CQ-004", "MLX5-CQ-005", "MLX5-CQ-006", "MLX5-CQ-007", "MLX5-CQ-010",
                  "MLX5-DEV-007", "MLX5-DEV-012", "MLX5-COMP-002",
                  "MLX5-COMP-003", "MLX5-COMP-004", "MLX5-CQ-001", "MLX5-CQ-002", "MLX5-CQ-008",
                  "MLX5-CQ-009", "MLX5-CQE-003", "MLX5-CQE-005", "MLX5-CQE-006",
                  "MLX5-CQE-007", "MLX5-CQE-008")
# MLX5-DEV-001: the configurations drawn lie inside its CQ, WQ and stride ranges and reach
# both ends of its MTU range; a target refusing one of them answers an error here.
@pytest.mark.rule("MLX5-DEV-001")
# The shared parser and checksum code, blamed through the reference's trace (libblame).
@pytest.mark.rule("PKT-ETH-001", "PKT-ETH-002", "PKT-VLAN-001", "PKT-VLAN-002", "PKT-IP4-001",
                  "PKT-IP4-002", "PKT-IP4-003", "PKT-IP4-004", "PKT-IP4-005", "PKT-IP6-001",
                  "PKT-IP6-002", "PKT-IP6-003", "PKT-IP6-004", "PKT-IP6-005", "PKT-IP6-006",
                  "PKT-L4-001", "PKT-L4-002", "PKT-L4-003", "PKT-L4-004", "PKT-L4-005",
                  "PKT-L4-006",
                  "CSUM-001", "CSUM-002", "CSUM-003", "CSUM-004", "CSUM-006", "CSUM-007",
                  "CSUM-008", "CSUM-L4-001", "CSUM-L4-002", "CSUM-L4-006")
@given(scenario=mlx5.cq_scenarios())
def test_mlx5_agrees_with_reference(rx_target: TargetSession, scenario: Scenario) -> None:
    check(rx_target, scenario, COMPONENT)


# --- step 2: the RX handlers and XDP on the per-RQ buffer ---------------------------------


@pytest.mark.rule("MLX5-XDP-001", "MLX5-XDP-002", "MLX5-XDP-003", "MLX5-XDP-004",
                  "MLX5-XDP-005", "MLX5-XDP-006", "MLX5-XDP-007", "MLX5-XDP-008",
                  "MLX5-XDP-009", "MLX5-RX-001", "MLX5-RX-002", "MLX5-RX-003",
                  "MLX5-KF-002", "MLX5-KF-004", "MLX5-KF-005", "MLX5-KF-006", "MLX5-RX-005",
                  "MLX5-CQE-009")
@given(scenario=mlx5.xdp_scenarios())
def test_mlx5_xdp_agrees_with_reference(rx_target: TargetSession, scenario: Scenario) -> None:
    check(rx_target, scenario, COMPONENT)


@pytest.mark.rule("MLX5-KF-002", "MLX5-KF-003")
@given(scenario=mlx5.xdp_scenarios(compressed_hash=True))
def test_mlx5_rx_hash_on_compressed_sessions(rx_target: TargetSession,
                                             scenario: Scenario) -> None:
    check(rx_target, scenario, COMPONENT)


# --- checksum and skb metadata ------------------------------------------------------------


@pytest.mark.rule("MLX5-CSUM-001", "MLX5-CSUM-003", "MLX5-CSUM-004",
                  "MLX5-CSUM-005", "MLX5-CSUM-006", "MLX5-CSUM-007", "MLX5-CSUM-008",
                  "MLX5-CSUM-009", "MLX5-CSUM-010", "MLX5-SKB-001", "MLX5-SKB-002",
                  "MLX5-SKB-003", "MLX5-SKB-004", "MLX5-SKB-005", "MLX5-DEV-014")
# The shared parser and checksum code, blamed through the reference's trace (libblame).
@pytest.mark.rule("PKT-ETH-001", "PKT-ETH-002", "PKT-VLAN-001", "PKT-VLAN-002", "PKT-IP4-001",
                  "PKT-IP4-002", "PKT-IP4-003", "PKT-IP4-004", "PKT-IP4-005", "PKT-IP6-001",
                  "PKT-IP6-002", "PKT-IP6-003", "PKT-IP6-004", "PKT-IP6-005", "PKT-IP6-006",
                  "PKT-L4-001", "PKT-L4-002", "PKT-L4-003", "PKT-L4-004", "PKT-L4-005",
                  "PKT-L4-006",
                  "CSUM-001", "CSUM-002", "CSUM-003", "CSUM-004", "CSUM-006", "CSUM-007",
                  "CSUM-008", "CSUM-L4-001", "CSUM-L4-002", "CSUM-L4-006", "CSUM-RX-001")
@given(scenario=mlx5.csum_scenarios())
def test_mlx5_skb_checksum_and_metadata(rx_target: TargetSession, scenario: Scenario) -> None:
    check(rx_target, scenario, COMPONENT)


@pytest.mark.rule("MLX5-DEV-002", "MLX5-DEV-003", "MLX5-DEV-005", "MLX5-XDP-002",
                  "MLX5-CSUM-007", "MLX5-SKB-001")
@pytest.mark.rule("PKT-VLAN-001", "PKT-VLAN-002", "PKT-IP4-002", "PKT-IP4-003", "PKT-IP4-005",
                  "PKT-IP6-003", "PKT-IP6-005", "PKT-IP6-006", "PKT-L4-001", "PKT-L4-004",
                  "PKT-L4-005", "PKT-L4-006", "PKT-L4-007", "CSUM-008")
@pytest.mark.parametrize("scenario", mlx5.header_scenarios(),
                         ids=lambda s: f"{len(s.frames)}-frames")
def test_mlx5_at_header_walk_boundaries(rx_target: TargetSession, scenario: Scenario) -> None:
    """Each boundary of the header walk once (not left to the draw): a device that checks
    20 bytes of an IPv4 header with options, reads an other protocol as TCP, accepts an L4
    header one byte short, or an skb head cut at the wrong header length differs here."""
    check(rx_target, scenario, COMPONENT)


@pytest.mark.rule("MLX5-CSUM-007", "MLX5-CSUM-008", "MLX5-CSUM-009", "MLX5-SKB-002",
                  "MLX5-XDP-002")
@pytest.mark.rule("PKT-IP6-001", "PKT-L4-007", "CSUM-008")
@pytest.mark.parametrize("scenario", mlx5.tail_and_cut_scenarios(),
                         ids=lambda s: f"vlan-strip-{s.config['vlan_strip']}")
def test_mlx5_checksum_tail_and_cut_headers(rx_target: TargetSession,
                                            scenario: Scenario) -> None:
    """The tail fix-up at each offset mod 4 and length (not left to the draw: a device that
    forgets the rotation at an odd offset, rotates on the wrong bit, or counts 9 bytes as a
    fast tail, differs here), and the skb head of frames cut inside their IPv6 or TCP
    header."""
    check(rx_target, scenario, COMPONENT)


@pytest.mark.rule("MLX5-DEV-005", "MLX5-CSUM-010", "CSUM-007", "CSUM-L4-001", "CSUM-L4-002",
                  "CSUM-L4-006")
@pytest.mark.parametrize("scenario", mlx5.l4_check_edge_scenarios(),
                         ids=lambda s: f"no-csum-complete-{s.config['no_csum_complete']}")
def test_mlx5_l4_check_edges(rx_target: TargetSession, scenario: Scenario) -> None:
    """CQE_L4_OK and ``ip_summed`` at the edges of the full L4 check (mlx5.l4_check_edge_
    scenarios): a device that verifies a zero UDP checksum before the length, reads one
    zero byte as "no checksum", or keeps only the low byte of the IPv6 pseudo-header's
    length differs here."""
    check(rx_target, scenario, COMPONENT)


@pytest.mark.rule("MLX5-XDP-002", "PKT-L4-007")
@pytest.mark.parametrize("scenario", mlx5.headlen_edge_scenarios(),
                         ids=lambda s: f"{len(s.frames)}-frames")
def test_mlx5_skb_head_at_fragment_edges(rx_target: TargetSession, scenario: Scenario) -> None:
    """The skb head at the fragment fields the header walk decides on (not left to the
    draw): a later fragment's head stops at its IP header, a first fragment's takes the
    extension headers after the fragment header and the L4 header, also inside IP-in-IP."""
    check(rx_target, scenario, COMPONENT)


# --- the driver alone: ring images written byte by byte (protocol 1.2) ------------------------


@pytest.mark.rule("MLX5-RING-001", "MLX5-RING-002", "MLX5-RING-005", "MLX5-RING-006",
                  "MLX5-CQ-001", "MLX5-CQ-002", "MLX5-CQ-005", "MLX5-CQ-006", "MLX5-CQ-008",
                  "MLX5-CQ-009", "MLX5-CQ-010", "MLX5-CQE-003", "MLX5-CQE-009",
                  "MLX5-RX-002", "MLX5-SKB-001", "MLX5-KF-002", "MLX5-CSUM-010",
                  "MLX5-CSUM-002")
@given(scenario=ring_scenarios())
def test_mlx5_driver_on_ring_images(rx_target: TargetSession, scenario: Scenario) -> None:
    """Needs ``capabilities.sides`` to name the driver half of mlx5 (PROTOCOL.md 1.2)."""
    check(rx_target, scenario, COMPONENT)


@pytest.mark.rule("MLX5-RING-004", "MLX5-DEV-002", "MLX5-DEV-003", "MLX5-DEV-005",
                  "MLX5-DEV-008", "MLX5-DEV-010", "MLX5-DEV-011", "MLX5-DEV-013",
                  "MLX5-COMP-001", "MLX5-COMP-002", "MLX5-COMP-003", "MLX5-COMP-004")
@given(scenario=write_scenarios())
def test_mlx5_device_writes_the_ring(rx_target: TargetSession, scenario: Scenario) -> None:
    """Needs ``capabilities.sides`` to name the device half of mlx5 (PROTOCOL.md 1.2)."""
    check(rx_target, scenario, COMPONENT)


@pytest.mark.rule("MLX5-XDP-002", "MLX5-XDP-004")
@given(scenario=mlx5.frag_pull_scenarios())
def test_mlx5_xdp_pass_pull_empties_fragments(rx_target: TargetSession,
                                              scenario: Scenario) -> None:
    """A striding non-linear XDP_PASS skb after ``bpf_xdp_adjust_tail`` shrank the packet
    to the length the pull takes into the linear part, and a byte either side: the
    emptied fragment is released (``nr_frags``)."""
    check(rx_target, scenario, COMPONENT)


#: The rules :func:`mlx5.fixed_scenarios` aims at, spelled out for ``rx-oracle spec``.
FIXED_RULES = ("MLX5-RX-001", "MLX5-RX-002", "MLX5-RX-003", "MLX5-RX-005", "MLX5-XDP-002",
               "MLX5-XDP-003", "MLX5-XDP-004", "MLX5-XDP-005", "MLX5-XDP-007", "MLX5-XDP-008",
               "MLX5-CSUM-004", "MLX5-CSUM-005", "MLX5-CSUM-007", "MLX5-CSUM-010",
               "MLX5-SKB-004", "MLX5-SKB-005", "MLX5-DEV-003", "MLX5-DEV-007", "MLX5-DEV-009",
               "MLX5-DEV-010", "MLX5-DEV-013", "MLX5-COMP-001", "MLX5-CQ-001", "MLX5-CQ-010",
               "MLX5-RING-001", "MLX5-RING-002", "MLX5-KF-002")
if FIXED_RULES != mlx5.FIXED_RULES:
    raise RuntimeError("FIXED_RULES differs from mlx5.FIXED_RULES")


@pytest.mark.rule(*FIXED_RULES)
@pytest.mark.parametrize("scenario", [s for _, s in mlx5.fixed_scenarios()],
                         ids=[name for name, _ in mlx5.fixed_scenarios()])
def test_mlx5_fixed_edges(rx_target: TargetSession, scenario: Scenario) -> None:
    """Each edge the draws miss, once: striding fragments that start a stride into a page
    and end one page past it, frames at hw_mtu; XDP_TX at the inline minimum and at the
    exact WQEBB room; frames of 64 and 65 bytes, six tags, IPv6 cut at its 40th byte,
    EtherType 0x0600; the accepted ends of the CQ, WQ, stride and fragment sizes and of
    both timestamp formats, a basic session past 64 packets; cyclic frames at the buffer
    length, TCP FIN without ACK, an empty frame; ring images at their edges (an idle
    two-slot ring at cc 2**32 - 1, a packet ending at its WQE's end, oversize byte counts,
    XDP-SQ completions around every poll, unmapped hash types)."""
    check(rx_target, scenario, COMPONENT)


# --- the CQ reader's fixed edges -------------------------------------------------------------

#: The rules :func:`mlx5.cq_edge_scenarios` aims at, spelled out for ``rx-oracle spec``.
CQ_EDGE_RULES = ("MLX5-CQ-001", "MLX5-CQ-003", "MLX5-CQ-004", "MLX5-CQ-008", "MLX5-CQ-009",
                 "MLX5-CQ-010", "MLX5-COMP-001", "MLX5-COMP-002", "MLX5-COMP-003",
                 "MLX5-COMP-004", "MLX5-COMP-005", "MLX5-CQE-008", "MLX5-DEV-004",
                 "MLX5-DEV-010")
if CQ_EDGE_RULES != mlx5.CQ_EDGE_RULES:
    raise RuntimeError("CQ_EDGE_RULES differs from mlx5.CQ_EDGE_RULES")
#: The rules :func:`mlx5.ring_image_edge_scenarios` aims at.
RING_IMAGE_EDGE_RULES = ("MLX5-CQE-009", "MLX5-RING-001", "MLX5-RING-006", "MLX5-CQ-005",
                         "MLX5-CQ-010")
if RING_IMAGE_EDGE_RULES != mlx5.RING_IMAGE_EDGE_RULES:
    raise RuntimeError("RING_IMAGE_EDGE_RULES differs from mlx5.RING_IMAGE_EDGE_RULES")


@pytest.mark.rule(*CQ_EDGE_RULES)
# MLX5-DEV-001: the 2-slot CQ is inside its range; a target refusing it answers an error.
@pytest.mark.rule("MLX5-DEV-001")
@pytest.mark.parametrize("scenario", [s for _, s in mlx5.cq_edge_scenarios()],
                         ids=[name for name, _ in mlx5.cq_edge_scenarios()])
def test_mlx5_cq_fixed_edges(rx_target: TargetSession, scenario: Scenario) -> None:
    """Each road of the CQ reader the draws miss, once: slots a basic session left that
    the driver meets again one lap later, before the device rewrote them (between mini
    arrays, a short mini array, past the ring's end, after an odd title; budgets that cut
    the session), so only the owner bytes the reader stamped keep it from taking them for
    CQEs; an enhanced title carried across polls; a session of the whole 2-slot CQ;
    mini-CQE checksums of 0xffff; a 65535-byte striding completion."""
    check(rx_target, scenario, COMPONENT)


@pytest.mark.rule(*RING_IMAGE_EDGE_RULES)
@pytest.mark.parametrize("scenario", [s for _, s in mlx5.ring_image_edge_scenarios()],
                         ids=[name for name, _ in mlx5.ring_image_edge_scenarios()])
def test_mlx5_ring_fixed_edges(rx_target: TargetSession, scenario: Scenario) -> None:
    """Ring images the draws miss (needs the driver side, PROTOCOL.md 1.2): one error CQE
    alone per syndrome (which start RQ recovery), a basic session of one packet."""
    check(rx_target, scenario, COMPONENT)

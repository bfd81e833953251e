"""fec properties: the same frames through the same MAC model and driver give the same
descriptors, verdicts, skbs, TX slots, counters, DMA syncs and unmaps and page_pool
accounting; also when the interface restarts or closes with TX still queued and when
budget-0 polls meet XDP_TX frames in flight."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.check import TargetSession, check
from conformance.components import fec, layout_edges
from conformance.scenario import Scenario

COMPONENT = fec.COMPONENT


@pytest.mark.rule("FEC-DEV-001", "FEC-DEV-002", "FEC-DEV-003", "FEC-DEV-004", "FEC-DEV-005",
                  "FEC-DEV-006", "FEC-DEV-007", "FEC-DEV-008", "FEC-RX-002", "FEC-RX-003",
                  "FEC-RX-004", "FEC-RX-005", "FEC-RX-006", "FEC-RX-008", "FEC-RX-009",
                  "FEC-RX-010", "FEC-RX-011", "FEC-XDP-001", "FEC-XDP-003", "FEC-XDP-004",
                  "FEC-XDP-005", "FEC-XDP-006", "FEC-XDP-008", "FEC-TX-003", "FEC-TX-004",
                  "FEC-TX-005", "FEC-STATS-002", "FEC-STATS-003", "FEC-STATS-004",
                  "FEC-RX-014", "FEC-RX-015", "FEC-RX-001", "FEC-RX-007", "FEC-RX-012",
                  "FEC-RX-013", "FEC-RX-016", "FEC-XDP-007", "FEC-TX-001", "FEC-TX-002",
                  "FEC-TX-006", "FEC-TX-007", "FEC-STATS-001", "FEC-RX-017",
                  "FEC-BD-001", "FEC-BD-002", "FEC-BD-003", "FEC-BD-004", "FEC-BD-006")
# The shared parser and checksum code, blamed through the reference's trace (libblame).
@pytest.mark.rule("PKT-ETH-001", "PKT-ETH-002", "PKT-VLAN-001", "PKT-VLAN-002", "PKT-IP4-001",
                  "PKT-IP4-002", "PKT-IP4-003", "PKT-IP4-004", "PKT-IP4-005", "PKT-IP6-001",
                  "PKT-IP6-002", "PKT-IP6-003", "PKT-IP6-004", "PKT-IP6-005", "PKT-IP6-006",
                  "PKT-L4-001", "PKT-L4-002", "PKT-L4-003", "PKT-L4-004", "PKT-L4-005",
                  "PKT-L4-006",
                  "CSUM-002", "CSUM-003", "CSUM-004", "CSUM-006", "CSUM-007", "CSUM-008",
                  "CSUM-009", "CSUM-L4-001", "CSUM-L4-002", "CSUM-L4-003", "CSUM-L4-004",
                  "CSUM-L4-005")
@given(scenario=fec.scenarios())
def test_fec_agrees_with_reference(rx_target: TargetSession, scenario: Scenario) -> None:
    check(rx_target, scenario, COMPONENT)


#: The rules :func:`fec.family_scenarios` aims at, one family each: spelled out, because
#: ``rx-oracle spec`` reads rule markers from the source (conformance/spectrace.py); the
#: check below keeps the list equal to the families' rules.
FAMILY_RULES = ("CSUM-009", "CSUM-L4-003", "CSUM-L4-004", "FEC-DEV-001", "FEC-DEV-003",
                "FEC-DEV-004", "FEC-DEV-006", "FEC-DEV-007", "FEC-DEV-008", "FEC-RX-001",
                "FEC-RX-002", "FEC-RX-009", "FEC-RX-010", "FEC-RX-011", "FEC-RX-013", "FEC-TX-002",
                "FEC-TX-005", "FEC-TX-006", "FEC-TX-007", "FEC-XDP-006", "FEC-XDP-008")
if set(FAMILY_RULES) != {r for _, s in fec.family_scenarios() for r in s.rules}:
    raise RuntimeError("FAMILY_RULES differs from the rules of fec.family_scenarios()")


@pytest.mark.rule(*FAMILY_RULES)
@pytest.mark.parametrize("scenario", [s for _, s in fec.family_scenarios()],
                         ids=[name for name, _ in fec.family_scenarios()])
def test_fec_rule_families(rx_target: TargetSession, scenario: Scenario) -> None:
    """One fixed scenario per family a random draw meets rarely (fec.family_scenarios):
    the PKT_MAXBUF_SIZE cut on both sides, every checksum-accelerator verdict, tags with
    PCP/DEI set and 802.1ad, split frames, every TX status, the ring as opened, XDP_REDIRECT
    with and without a target, budget-0 polls with XDP_TX out, a restart mid-run."""
    check(rx_target, scenario, COMPONENT)


@pytest.mark.rule("FEC-XDP-002")
@given(scenario=fec.scenarios(drops=True))
def test_fec_drop_sync_covers_the_longer_length(rx_target: TargetSession,
                                                scenario: Scenario) -> None:
    """Programs that shrink the packet and then drop it: the recycle sync length is the
    length before the program, not after."""
    check(rx_target, scenario, COMPONENT)


@pytest.mark.rule("FEC-RX-005", "FEC-XDP-001", "FEC-XDP-005", "FEC-TX-003", "FEC-STATS-002",
                  "FEC-STATS-003", "FEC-STATS-004", "FEC-RX-018")
# The shared parser and checksum code, blamed through the reference's trace (libblame).
@pytest.mark.rule("PKT-ETH-001", "PKT-ETH-002", "PKT-VLAN-001", "PKT-VLAN-002", "PKT-IP4-001",
                  "PKT-IP4-002", "PKT-IP4-003", "PKT-IP4-004", "PKT-IP4-005", "PKT-IP6-001",
                  "PKT-IP6-002", "PKT-IP6-003", "PKT-IP6-004", "PKT-IP6-005", "PKT-IP6-006",
                  "PKT-L4-001", "PKT-L4-002", "PKT-L4-003", "PKT-L4-004", "PKT-L4-005",
                  "PKT-L4-006",
                  "CSUM-002", "CSUM-003", "CSUM-004", "CSUM-006", "CSUM-007", "CSUM-008",
                  "CSUM-009", "CSUM-L4-001", "CSUM-L4-002", "CSUM-L4-003", "CSUM-L4-004",
                  "CSUM-L4-005")
@given(data=st.data())
def test_fec_board_agrees_with_reference(rx_target: TargetSession, data: st.DataObject) -> None:
    """One SoC's scenarios (:func:`fec.board_scenarios`): the board a target bound to a
    real driver names (its ``fixed_config``), else the i.MX6Q's; full-size rings, the
    device left to itself."""
    fixed = getattr(rx_target.target, "fixed_config", None) or fec.IMX6Q
    kfuncs = bool(getattr(rx_target.target, "kfuncs", False))
    check(rx_target, data.draw(fec.board_scenarios(fixed, kfuncs), label="scenario"),
          COMPONENT)


#: The rules :func:`fec.l4_check_edge_scenarios` aims at, spelled out for ``rx-oracle spec``
#: as FAMILY_RULES is.
L4_EDGE_RULES = ("FEC-DEV-004", "FEC-RX-011", "CSUM-007", "CSUM-009", "CSUM-L4-001",
                 "CSUM-L4-002", "CSUM-L4-003", "CSUM-L4-004", "CSUM-L4-005")
if L4_EDGE_RULES != fec.L4_EDGE_RULES:
    raise RuntimeError("L4_EDGE_RULES differs from fec.L4_EDGE_RULES")


@pytest.mark.rule(*L4_EDGE_RULES)
@pytest.mark.parametrize("scenario", [s for _, s in fec.l4_check_edge_scenarios()],
                         ids=[name for name, _ in fec.l4_check_edge_scenarios()])
def test_fec_l4_check_edges(rx_target: TargetSession, scenario: Scenario) -> None:
    """The accelerator's verdict at the edges of the full L4 check (fec.l4_check_edge_
    scenarios): a device that takes a zero UDP checksum before the length check, reads one
    zero byte as "no checksum", skips SCTP without chunks, checks another protocol as SCTP,
    or keeps only the low byte of the IPv6 pseudo-header's length differs here."""
    check(rx_target, scenario, COMPONENT)


#: The rules :func:`fec.state_families` aims at (spelled out for ``rx-oracle spec``, as
#: FAMILY_RULES is; the check below keeps the list equal to the scenarios' rules).
STATE_RULES = ("FEC-BD-002", "FEC-DEV-001", "FEC-DEV-004", "FEC-DEV-005", "FEC-DEV-006",
               "FEC-DEV-007", "FEC-DEV-008", "FEC-RX-001", "FEC-RX-002", "FEC-RX-003",
               "FEC-RX-008", "FEC-RX-009", "FEC-RX-013", "FEC-RX-015", "FEC-TX-002",
               "FEC-TX-003", "FEC-TX-005", "FEC-TX-006", "FEC-TX-007", "FEC-XDP-005",
               "FEC-XDP-006", "FEC-XDP-008")
if set(STATE_RULES) != {r for _, s in fec.state_families() for r in s.rules}:
    raise RuntimeError("STATE_RULES differs from the rules of fec.state_families()")


@pytest.mark.rule(*STATE_RULES)
@pytest.mark.parametrize("scenario", [s for _, s in fec.state_families()],
                         ids=[name for name, _ in fec.state_families()])
def test_fec_state_families(rx_target: TargetSession, scenario: Scenario) -> None:
    """State a random draw rarely leaves in view (fec.state_families): descriptors the MAC
    wrote and NAPI left, through a restart too; a re-armed slot reused by a split frame;
    a split frame's skb over an earlier CRC-failed frame's bytes; AVB frame types and
    the MAC's TX positions on queues 1 and 2; a budget-0 poll a further frame can see;
    XDP buffers held until close; the free count after a completion; TX still queued at
    the end; XDP_TX from an odd offset; f601899e4321's XDP_TX queue; default config keys."""
    check(rx_target, scenario, COMPONENT)


#: The rules :func:`layout_edges.fec_scenarios` aims at, spelled out for ``rx-oracle spec``.
ARMHF_FRAME_RULES = ("FEC-RX-017", "XDP-ADJ-002")
if ARMHF_FRAME_RULES != layout_edges.FEC_RULES:
    raise RuntimeError("ARMHF_FRAME_RULES differs from layout_edges.FEC_RULES")


@pytest.mark.rule(*ARMHF_FRAME_RULES)
@pytest.mark.parametrize("scenario", [s for _, s in layout_edges.fec_scenarios()],
                         ids=[name for name, _ in layout_edges.fec_scenarios()])
def test_fec_armhf_xdp_frame_reserve(rx_target: TargetSession, scenario: Scenario) -> None:
    """On 32-bit ARM the head moves down to exactly the 32-byte ``struct xdp_frame``
    reserve (0) and not one byte further (-EINVAL), with and without the SHIFT16 pad."""
    check(rx_target, scenario, COMPONENT)

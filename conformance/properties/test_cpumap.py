"""cpumap properties: the same schedule gives every redirected packet the same fate, the
same recycle marks and free paths, the same alloc-cache pushes by CPU, the same
tracepoint sums and pool counters, the same skbs (length, truesize, headroom, bytes, frags),
and a page ledger that holds at every step; under both kernel switches (v6.4+ recycling and
the pre-v6.4 release), with and without a program on the entry and failing skb heads, with
linear and multi-buffer frames (frag pages from the same source, CPUMAP-MB-001), and with
the entry replaced (or deleted and made again) while frames are queued."""

from __future__ import annotations

import pytest
from hypothesis import given

from conformance.check import TargetSession, check
from conformance.components import cpumap, skb_edges
from conformance.scenario import Scenario

COMPONENT = cpumap.COMPONENT


@pytest.mark.rule("CPUMAP-FATE-001", "CPUMAP-SIM-002", "CPUMAP-SIM-003", "CPUMAP-SIM-004",
                  "CPUMAP-ENQ-003", "CPUMAP-KT-004", "CPUMAP-KT-005", "SKB-BUILD-003",
                  "SKB-BUILD-004", "SKB-FREE-001", "SKB-FREE-002", "SKB-BUILD-001",
                  "SKB-BUILD-002", "SKB-FREE-003", "CPUMAP-ENQ-001", "CPUMAP-ENQ-002",
                  "CPUMAP-ENQ-004", "CPUMAP-KT-001", "CPUMAP-KT-002", "CPUMAP-KT-003",
                  "SKB-FREE-004", "CPUMAP-SIM-001", "CPUMAP-MAP-002", "CPUMAP-SIM-006",
                  "CPUMAP-MB-001", "CPUMAP-SIM-007")
@given(scenario=cpumap.scenarios())
def test_cpumap_agrees_with_reference(rx_target: TargetSession, scenario: Scenario) -> None:
    check(rx_target, scenario, COMPONENT)


@pytest.mark.rule("CPUMAP-FATE-001", "CPUMAP-ENQ-001", "CPUMAP-ENQ-003", "CPUMAP-ENQ-004",
                  "CPUMAP-KT-001", "CPUMAP-KT-002", "CPUMAP-KT-003", "CPUMAP-KT-005",
                  "SKB-BUILD-002")
@given(scenario=cpumap.drained_scenarios())
def test_cpumap_drained_bursts(rx_target: TargetSession, scenario: Scenario) -> None:
    """Bursts drained before the next: what a live kernel reproduces whatever its
    kthread's timing (CPUMAP-LIVE-001, whose own checks are in tests/test_cpumap.py and
    tests/test_live_cpumap.py), so the live veth target runs these (the other properties
    are not applicable there)."""
    check(rx_target, scenario, COMPONENT)


@pytest.mark.rule("CPUMAP-MAP-001", "CPUMAP-MAP-002", "CPUMAP-MAP-003", "CPUMAP-SIM-006",
                  "CPUMAP-FATE-001", "SKB-BUILD-002")
@given(scenario=cpumap.map_op_scenarios())
def test_cpumap_map_updates(rx_target: TargetSession, scenario: Scenario) -> None:
    """Map updates and deletes with arguments on both sides of every check: the same
    return code for each (which check refuses first, the program check, the errno the
    kernel's version reads), and the same fates for frames a successful update of CPU B's
    slot made its old entry drain, and the protocol of frames of 802.3 lengths."""
    check(rx_target, scenario, COMPONENT)


#: The rules of ``cpumap.FIXED_CASES``, written out so ``rx-oracle spec`` reads them
#: statically; tests/test_cpumap.py keeps the two equal.
FIXED_RULES = ("CPUMAP-KT-004", "CPUMAP-SIM-006", "CPUMAP-SIM-001", "CPUMAP-MAP-001",
               "SKB-BUILD-002", "CPUMAP-SIM-007", "XDP-ADJ-003")


@pytest.mark.rule(*FIXED_RULES)
@pytest.mark.parametrize("scenario", cpumap.fixed_scenarios(),
                         ids=[f"{rule}-{i}" for i, (rule, _, _) in
                              enumerate(cpumap.FIXED_CASES)])
def test_cpumap_each_fixed_case(rx_target: TargetSession, scenario: Scenario) -> None:
    """Each road the random draws miss, once: a GRO flush at the 64th packet with frames
    still queued, traffic right after a map update or delete of CPU B's slot (the new
    entry without a program; the deleted entry's skbs freed before the next update), CPU
    B as CPU 0, the default map size refusing key 2, the largest map, ethertype and frag
    list the engine takes, and headroom a program pushes into on a recycled page."""
    check(rx_target, scenario, COMPONENT)


# --- the skb built from a frame the entry's program changed (conformance/components/
# skb_edges.py; surviving mutants of reference/skb.py) ------------------------------------

#: The rules of ``skb_edges.cpumap_skb_edge_scenarios``, spelled out for ``rx-oracle spec``.
CPUMAP_SKB_EDGE_RULES = ("SKB-BUILD-001", "SKB-BUILD-002")
if CPUMAP_SKB_EDGE_RULES != skb_edges.CPUMAP_SKB_EDGE_RULES:
    raise RuntimeError("CPUMAP_SKB_EDGE_RULES differs from skb_edges.CPUMAP_SKB_EDGE_RULES")


@pytest.mark.rule(*CPUMAP_SKB_EDGE_RULES)
@pytest.mark.parametrize("scenario", [s for _, s in skb_edges.cpumap_skb_edge_scenarios()],
                         ids=[name for name, _ in skb_edges.cpumap_skb_edge_scenarios()])
def test_cpumap_skb_from_changed_frames(rx_target: TargetSession, scenario: Scenario) -> None:
    """An skb built from a frame the entry's program gave 8 bytes of metadata
    (``meta_len`` 8), and from an 802.3 frame cut to 2 or 1 bytes after the MAC header
    (``eth_type_trans``: raw 802.3 when both bytes are there and read 0xFFFF, else 802.2)."""
    check(rx_target, scenario, COMPONENT)

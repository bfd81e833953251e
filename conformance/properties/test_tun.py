"""tun properties: an op-list program on frames written to a tap device gives the
reference's return codes, bytes and lengths; every metadata kfunc is -EOPNOTSUPP."""

from __future__ import annotations

import pytest
from hypothesis import given

from conformance.check import TargetSession, check
from conformance.components import layout_edges, tun
from conformance.scenario import Scenario

COMPONENT = tun.COMPONENT


@pytest.mark.rule("TUN-BUF-001", "TUN-BUF-002", "TUN-KF-001")
@given(scenario=tun.scenarios())
def test_tun_program_agrees_with_reference(rx_target: TargetSession,
                                           scenario: Scenario) -> None:
    check(rx_target, scenario, COMPONENT, mask=tun.unspecified(scenario))


#: The rules :func:`layout_edges.tun_scenarios` aims at, spelled out for ``rx-oracle spec``.
TUN_LAYOUT_RULES = ("TUN-BUF-001", "XDP-ADJ-006")
if TUN_LAYOUT_RULES != layout_edges.TUN_RULES:
    raise RuntimeError("TUN_LAYOUT_RULES differs from layout_edges.TUN_RULES")


@pytest.mark.rule(*TUN_LAYOUT_RULES)
@pytest.mark.parametrize("scenario", [s for _, s in layout_edges.tun_scenarios()],
                         ids=[name for name, _ in layout_edges.tun_scenarios()])
def test_tun_buflen_edges(rx_target: TargetSession, scenario: Scenario) -> None:
    """The tail grown to exactly the end of ``buflen`` and one byte past it, for frames
    whose length plus the pad is one byte past a cache line (``SKB_DATA_ALIGN`` rounds up
    by 63): 65 bytes, and 3393 bytes on a jumbo tap (the page filled exactly)."""
    check(rx_target, scenario, COMPONENT)

"""XDP core properties: the same op-list program, run on the same buffers, gives the
reference's return codes, bytes, lengths, verdicts and xdp_frame conversions."""

from __future__ import annotations

import pytest
from hypothesis import given

from conformance.check import TargetSession, check
from conformance.components import xdp
from conformance.scenario import Scenario

COMPONENT = xdp.COMPONENT


@pytest.mark.rule("XDP-ADJ-002", "XDP-ADJ-003", "XDP-ADJ-004", "XDP-ADJ-005", "XDP-ADJ-006",
                  "XDP-ADJ-007", "XDP-ADJ-008", "XDP-ADJ-009", "XDP-ADJ-010", "XDP-BUFF-008",
                  "XDP-FRAME-002", "XDP-ACT-002", "XDP-ACT-004", "XDP-ACT-005",
                  "XDP-PROG-001", "XDP-PROG-002", "XDP-PROG-003", "XDP-MEM-002", "XDP-MEM-005",
                  "XDP-MEM-006", "XDP-BUFF-007", "KFUNC-API-003",
                  "KFUNC-CALL-001")
@given(scenario=xdp.scenarios())
def test_xdp_program_agrees_with_reference(rx_target: TargetSession, scenario: Scenario) -> None:
    check(rx_target, scenario, COMPONENT)

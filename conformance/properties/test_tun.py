"""tun properties: an op-list program on frames written to a tap device gives the
reference's return codes, bytes and lengths; every metadata kfunc is -EOPNOTSUPP."""

from __future__ import annotations

import pytest
from hypothesis import given

from conformance.check import TargetSession, check
from conformance.components import tun
from conformance.scenario import Scenario

COMPONENT = tun.COMPONENT


@pytest.mark.rule("TUN-BUF-001", "TUN-BUF-002", "TUN-KF-001")
@given(scenario=tun.scenarios())
def test_tun_program_agrees_with_reference(rx_target: TargetSession,
                                           scenario: Scenario) -> None:
    check(rx_target, scenario, COMPONENT, mask=tun.unspecified(scenario))

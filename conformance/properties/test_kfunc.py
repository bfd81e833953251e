"""kfunc properties: dispatch to the driver's ops (or the default body) and the
device-bound load, attach and map rules give the reference's return codes."""

from __future__ import annotations

import pytest
from hypothesis import given

from conformance.check import TargetSession, check
from conformance.components import kfunc
from conformance.scenario import Scenario

COMPONENT = kfunc.COMPONENT


@pytest.mark.rule("KFUNC-API-003", "KFUNC-API-004", "KFUNC-API-007", "KFUNC-CALL-001",
                  "KFUNC-LOAD-001", "KFUNC-LOAD-003", "KFUNC-LOAD-004", "KFUNC-LOAD-005",
                  "KFUNC-LOAD-006", "KFUNC-ATTACH-001", "KFUNC-ATTACH-002",
                  "KFUNC-ATTACH-004", "KFUNC-ATTACH-005", "KFUNC-MAP-001", "KFUNC-MAP-002",
                  "KFUNC-MAP-003", "KFUNC-MAP-004")
@given(scenario=kfunc.scenarios())
def test_kfunc_agrees_with_reference(rx_target: TargetSession, scenario: Scenario) -> None:
    check(rx_target, scenario, COMPONENT)

"""kfunc properties: dispatch to the driver's ops (or the default body) and the
device-bound load, attach and map rules give the reference's return codes."""

from __future__ import annotations

import pytest
from hypothesis import given

from conformance.check import TargetSession, check
from conformance.components import kfunc
from conformance.scenario import Scenario

COMPONENT = kfunc.COMPONENT


@pytest.mark.rule("KFUNC-API-001", "KFUNC-API-003", "KFUNC-API-004",
                  "KFUNC-API-005", "KFUNC-API-007", "KFUNC-CALL-001", "KFUNC-LOAD-001",
                  "KFUNC-LOAD-002", "KFUNC-LOAD-003", "KFUNC-LOAD-004", "KFUNC-LOAD-005",
                  "KFUNC-LOAD-006", "KFUNC-LOAD-007", "KFUNC-ATTACH-001", "KFUNC-ATTACH-002",
                  "KFUNC-ATTACH-003", "KFUNC-ATTACH-004", "KFUNC-ATTACH-005", "KFUNC-MAP-001",
                  "KFUNC-MAP-002", "KFUNC-MAP-003", "KFUNC-MAP-004")
@given(scenario=kfunc.scenarios())
def test_kfunc_agrees_with_reference(rx_target: TargetSession, scenario: Scenario) -> None:
    check(rx_target, scenario, COMPONENT)


@pytest.mark.rule("KFUNC-API-003", "KFUNC-API-005", "KFUNC-API-006",
                  "KFUNC-CALL-001", "KFUNC-LOAD-006")
@given(scenario=kfunc.family_scenarios("calls"))
def test_kfunc_every_call_branch(rx_target: TargetSession, scenario: Scenario) -> None:
    """Each kfunc alone and bound to a device with every member, some NULL, results 0 or
    -ENODATA, outputs at their C limits."""
    check(rx_target, scenario, COMPONENT)


@pytest.mark.rule("KFUNC-LOAD-001", "KFUNC-LOAD-002", "KFUNC-LOAD-003", "KFUNC-LOAD-004",
                  "KFUNC-LOAD-005", "KFUNC-ATTACH-001", "KFUNC-ATTACH-002", "KFUNC-ATTACH-003",
                  "KFUNC-ATTACH-004", "KFUNC-ATTACH-005")
@given(scenario=kfunc.family_scenarios("modes"))
def test_kfunc_every_binding_and_mode(rx_target: TargetSession, scenario: Scenario) -> None:
    """Every binding loaded, attached in every mode to a device without ndo_bpf, a native
    and an offload device; each prog_flags bit loaded alone and bound-only."""
    check(rx_target, scenario, COMPONENT)


@pytest.mark.rule("KFUNC-MAP-001", "KFUNC-MAP-002", "KFUNC-MAP-003", "KFUNC-MAP-004")
@given(scenario=kfunc.family_scenarios("maps"))
def test_kfunc_every_program_map(rx_target: TargetSession, scenario: Scenario) -> None:
    """Programs of each attach type and binding into every program map."""
    check(rx_target, scenario, COMPONENT)


#: The rules :func:`kfunc.fixed_scenarios` aims at, spelled out for ``rx-oracle spec``.
FIXED_RULES = ("KFUNC-ATTACH-001", "KFUNC-ATTACH-003", "KFUNC-ATTACH-004", "KFUNC-MAP-002")
if FIXED_RULES != kfunc.FIXED_RULES:
    raise RuntimeError("FIXED_RULES differs from kfunc.FIXED_RULES")


@pytest.mark.rule(*FIXED_RULES)
@pytest.mark.parametrize("scenario", [s for _, s in kfunc.fixed_scenarios()],
                         ids=[name for name, _ in kfunc.fixed_scenarios()])
def test_kfunc_fixed_edges(rx_target: TargetSession, scenario: Scenario) -> None:
    """Each road the draws miss, once: a BPF_PROG_TYPE_EXT program (and its neighbours
    27, 29) into a PROG_ARRAY; a bound-only program offered to a device that the v6.17-rc3
    comparison would match (both entries without an offload device, a sibling port) and
    an offloaded one to its sibling port; an offloaded program in generic mode where the
    later checks would answer -EEXIST or -EBUSY; generic beside native in both orders and
    beside HW."""
    check(rx_target, scenario, COMPONENT)

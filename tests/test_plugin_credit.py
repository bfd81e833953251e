"""Which rules a passing item credits (conformance.plugin.credited_rules).

A property's ``rule`` marker lists every rule any of its cases aims at.  A fixed case
(an item parametrized with a Scenario naming its rules) credits only the marker's rules it
names, so a case that stops at a registration check cannot make the data path rules of its
neighbours pass (seen live: zcrx-live's registration edges on veth credited ZCRX-AREA-002
and ZCRX-QUEUE-001 while every case aimed at them was skipped)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from collect_helpers import collect

from conformance.components import zcrx
from conformance.plugin import credited_rules
from conformance.scenario import Scenario


class _Item(SimpleNamespace):
    """What credited_rules reads of a pytest item: its markers and its parameters."""

    def iter_markers(self, name: str) -> list[Any]:
        return [pytest.mark.rule(*self.marked).mark] if name == "rule" else []


def _item(marked: tuple[str, ...], params: dict[str, Any] | None = None) -> Any:
    item = _Item(marked=marked)
    if params is not None:
        item.callspec = SimpleNamespace(params=params)
    return item


@pytest.mark.rule("ZCRX-AREA-002", "ZCRX-REG-009")
def test_a_fixed_case_credits_the_marker_rules_it_names() -> None:
    case = Scenario(component="zcrx", config={}, rules=("ZCRX-REG-009",))
    assert credited_rules(_item(("ZCRX-AREA-002", "ZCRX-REG-009"), {"scenario": case})) == (
        "ZCRX-REG-009",)


@pytest.mark.rule("ZCRX-AREA-002", "ZCRX-REG-009")
def test_other_items_credit_their_whole_marker() -> None:
    marked = ("ZCRX-AREA-002", "ZCRX-REG-009")
    assert credited_rules(_item(marked)) == marked  # a hypothesis property: no callspec
    assert credited_rules(_item(marked, {"scenario": Scenario("zcrx", config={})})) == marked
    # A case naming none of the marker's rules keeps the marker (never credits nothing).
    other = Scenario(component="zcrx", config={}, rules=("ZCRX-CQE-002",))
    assert credited_rules(_item(marked, {"scenario": other})) == marked
    assert credited_rules(_item(marked, {"wrong": "not a scenario"})) == marked


def credited(items: list[Any]) -> dict[str, list[str]]:
    """For :func:`collect_helpers.collect`: each item's credited rules."""
    return {item.nodeid: list(credited_rules(item)) for item in items}


@pytest.mark.rule("ZCRX-AREA-002", "ZCRX-REG-009")
def test_registration_edges_credit_one_rule_each(tmp_path: Path) -> None:
    """The suite's own items, collected: each registration edge credits the rule it aims
    at and nothing else of the property's marker."""
    found = collect(tmp_path, "test_plugin_credit:credited",
                    "conformance/properties/test_zcrx.py::test_zcrx_registration_edges")
    cases = dict(zcrx.registration_edge_scenarios())
    assert len(found) == len(cases)
    for nodeid, rules in found.items():
        name = nodeid.partition("[")[2].removesuffix("]")
        assert rules == list(cases[name].rules), nodeid

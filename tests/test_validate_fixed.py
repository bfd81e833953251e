"""Every fixed case the suite sends is a scenario the published schemas accept.

A target written from PROTOCOL.md and the schemas may refuse what they refuse; a fixed case
outside them would fail a correct target (seen: helper offsets of 2**32 - 4 beside the
program schema's 32-bit ``delta``).  The cases are collected from the suite itself, as
pytest parametrizes them, so a new fixed list is covered without being named here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from collect_helpers import collect

from conformance.scenario import Scenario
from conformance.validate import validate_scenario


def fixed_cases(items: list[Any]) -> dict[str, dict[str, Any]]:
    """For :func:`collect_helpers.collect`: the scenario of each item parametrized with one."""
    out = {}
    for item in items:
        spec = getattr(item, "callspec", None)
        scenario = spec.params.get("scenario") if spec is not None else None
        if isinstance(scenario, Scenario):
            out[item.nodeid] = scenario.to_json()
    return out


@pytest.mark.rule("XDP-PROG-001", "KVER-001")
def test_every_fixed_case_is_inside_the_published_schemas(tmp_path: Path) -> None:
    cases = collect(tmp_path, "test_validate_fixed:fixed_cases", "conformance/properties")
    assert len(cases) > 300  # every component's fixed lists
    refused = {}
    for nodeid, doc in cases.items():
        try:
            validate_scenario(Scenario.from_json(doc))
        except Exception as exc:  # the message is the finding
            refused[nodeid] = str(exc)
    assert refused == {}

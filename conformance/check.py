"""Running one scenario on a target and judging it against the reference.

A property generates scenarios and calls :func:`check`; the verdict is expressed
the pytest way (pass, :class:`RuleMismatch` failure, skip), and the plugin turns it
into per-rule verdicts.  Only the rules that govern the first differing field are
failed, so a target that breaks one rule is flagged under that rule alone.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable
from typing import Any

import pytest

from conformance.components import Component
from conformance.observe import Comparison, compare
from conformance.scenario import Scenario, to_jsonable
from conformance.targets.base import Target, TargetError

#: After this many target errors in a row a target is considered broken: the
#: remaining cases are skipped at once instead of each waiting for a timeout.
MAX_CONSECUTIVE_TARGET_ERRORS = 3


class RuleMismatch(AssertionError):
    """The target disagreed with the reference on a field governed by ``rules``."""

    def __init__(
        self, message: str, rules: tuple[str, ...], scenario: Scenario, expected: dict[str, Any]
    ) -> None:
        super().__init__(message)
        self.rules = rules
        self.scenario = scenario
        self.expected = expected


class TargetBroken(Exception):
    """Raised into pytest as a skip whose reason starts with ``target error``."""


class TargetSession:
    """A target plus the bookkeeping of its errors during one run."""

    def __init__(self, target: Target, spec: str) -> None:
        self.target = target
        self.spec = spec
        self.errors: list[str] = []
        self._consecutive = 0

    def run(self, scenario: Scenario) -> dict[str, Any]:
        if self._consecutive >= MAX_CONSECUTIVE_TARGET_ERRORS:
            pytest.skip(f"target error: {self.spec} gave up after "
                        f"{MAX_CONSECUTIVE_TARGET_ERRORS} target errors in a row")
        try:
            observables = self.target.run(scenario)
        except TargetError as exc:
            self._consecutive += 1
            self.errors.append(str(exc))
            pytest.skip(f"target error: {exc}")
        self._consecutive = 0
        return observables


def check(
    session: TargetSession,
    scenario: Scenario,
    component: Component,
    *,
    expected: dict[str, Any] | None = None,
    mask: Iterable[str] = (),
    context: str = "",
) -> Comparison:
    """Run ``scenario`` on the target and compare with the reference.

    ``expected`` defaults to the reference model's observables; a property that
    checks against an independent reference (a published vector) passes its own.
    """
    if expected is None:
        expected = component.expected(scenario)
    caps = session.target.capabilities
    if scenario.component not in caps.components:
        pytest.skip(f"not applicable: {session.spec} does not implement {scenario.component!r}")
    # A target bound to real hardware may reproduce only some configurations (qemu-fec).
    supports = getattr(session.target, "supports", None)
    reason = supports(scenario) if callable(supports) else None
    if reason:
        pytest.skip(f"not applicable: {reason}")
    actual = session.run(scenario)
    result = compare(to_jsonable(expected), to_jsonable(actual), mask=mask,
                     reports=caps.reports, rules_for=component.rules_in(scenario))
    first = result.first
    if first is not None:
        text = reproducer(session.spec, scenario, result)
        raise RuleMismatch(f"{context}: {text}" if context else text, first.rules, scenario,
                           expected)
    return result


def reproducer(spec: str, scenario: Scenario, result: Comparison) -> str:
    """The failure text: the rule, the first differing field, the scenario, a replay line."""
    first = result.first
    assert first is not None
    scenario_json = json.dumps(scenario.to_json(), separators=(",", ":"))
    lines = [
        f"rule {', '.join(first.rules) or '(unattributed)'}: first differing field "
        f"{first.describe()}",
    ]
    more = len(result.mismatches) - 1
    if more:
        lines.append(f"({more} more differing field{'s' if more > 1 else ''})")
    lines += [
        f"scenario: {scenario_json}",
        "replay: rx-oracle replay --target " + shlex.quote(spec) + " " + shlex.quote(scenario_json),
    ]
    return "\n".join(lines)

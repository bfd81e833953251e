"""Running one scenario on a target and judging it against the reference.

A property generates scenarios and calls :func:`check`; the verdict is expressed the
pytest way, and the plugin turns it into per-rule verdicts:

- the target answered and agrees: pass;
- it answered and disagrees: :class:`RuleMismatch`, and only the rules that govern the
  first differing field fail, so a target that breaks one rule is flagged under it alone;
- it misbehaved on this input (raised, crashed, hung, printed garbage, returned
  observables that break the component's schema): :class:`TargetFault`, a failure of the
  property's rules with the scenario, the kind of misbehaviour and a replay command,
  shrunk by hypothesis like any other failure;
- it cannot answer this scenario by design: skipped as *not applicable*;
- it cannot answer this one input (a program calling a helper its kernel refuses):
  the input is rejected and hypothesis draws another; the property is not applicable
  only when :data:`MAX_REJECTS_WITHOUT_ANSWER` inputs in a row could not run.

A target that fails on every input it is given is not judged at all: after
:data:`MAX_FAULTS_WITHOUT_SUCCESS` faults and no answer, the rest of the run is skipped
as a *target error* (its rules *not checked*) and ``rx-oracle`` exits 2 (see
:class:`TargetSession`).
"""

from __future__ import annotations

import json
import shlex
import traceback
from collections.abc import Iterable
from typing import Any, NoReturn

import attrs
import pytest

from conformance.components import Component
from conformance.observe import Comparison, compare
from conformance.scenario import Scenario, to_jsonable
from conformance.targets.base import (
    InputNotApplicable,
    NotApplicable,
    Target,
    TargetError,
    declared,
)
from conformance.targets.reference import ReferenceTarget
from conformance.validate import observables_problem

#: A target that has faulted this many times without ever answering is broken: the
#: remaining cases are skipped at once instead of each waiting for a timeout.
MAX_FAULTS_WITHOUT_SUCCESS = 3

#: Hypothesis shrinks a fault like any failure.  A hang costs a whole timeout per try and
#: a crash or garbage answer a restart of the target, so after this many of them in one
#: property shrinking stops and the smallest faulting scenario seen is reported.
MAX_HANGS_PER_PROPERTY = 4
MAX_RESTARTS_PER_PROPERTY = 12

#: A property whose first inputs all need what the target lacks is not applicable
#: (skipped with the reason) after this many; before, each such input is rejected, so
#: the property still checks the inputs that can run.  Below hypothesis' own limit on
#: rejected inputs (its ``filter_too_much`` health check at 50).
MAX_REJECTS_WITHOUT_ANSWER = 20


class RuleMismatch(AssertionError):
    """The target disagreed with the reference on a field governed by ``rules``.

    ``mask`` lists the observable paths the property did not compare, so a saved
    failure replays exactly as the property judged it.
    """

    def __init__(
        self,
        message: str,
        rules: tuple[str, ...],
        scenario: Scenario,
        expected: dict[str, Any],
        mask: tuple[str, ...] = (),
        spec: str = "",
    ) -> None:
        super().__init__(message)
        self.rules = rules
        self.scenario = scenario
        self.expected = expected
        self.mask = mask
        self.spec = spec


class TargetFault(RuleMismatch):
    """The target misbehaved on this input; every rule of the property fails.

    No field can be blamed (there is no answer to compare), so ``rules`` is empty and
    the plugin fails all the rules the property names.
    """

    def __init__(
        self, kind: str, detail: str, scenario: Scenario, expected: dict[str, Any],
        mask: tuple[str, ...], spec: str,
    ) -> None:
        self.kind = kind
        self.detail = detail
        super().__init__(fault_text(spec, kind, detail, scenario), (), scenario, expected,
                         mask, spec)


class ShrinkStopped(BaseException):
    """Ends a property whose target keeps hanging or crashing (hypothesis does not catch
    a BaseException other than its own, so this stops the shrinking at once).

    It carries the smallest fault seen; the plugin reports it as the property's failure.
    """

    def __init__(self, fault: TargetFault, cost: str) -> None:
        super().__init__(f"{fault}\n(shrinking stopped after {cost} of the target)")
        self.fault = fault


class TargetSession:
    """A target plus the bookkeeping of its faults during one run (or one xdist worker)."""

    def __init__(
        self, target: Target, spec: str, *, give_up: bool = True, kernel: str | None = None
    ) -> None:
        self.target = target
        self.spec = spec
        #: KVER-001: the version the reference predicts for: ``kernel`` (``--kernel``),
        #: else the kernel the target reports, else the default.  Raises
        #: :class:`~reference.kernel.UnsupportedKernel` (KVER-002) for one the model
        #: does not describe.
        self.kernel = session_kernel(kernel, declared(target, spec).kernel)
        #: Whether a target that never answers is given up as broken.  ``fixtures verify``
        #: replays a finite set chosen to fail, so there every fault stays a verdict.
        self.give_up = give_up
        self.answers = 0
        self.faults: list[str] = []
        self.broken: str | None = None
        # The built-in reference is the schemas' source: checking it against them is a
        # test (tests/test_schemas.py), not a per-run cost.
        self._check_schema = type(target) is not ReferenceTarget
        self._hangs = 0
        self._restarts = 0
        self._smallest: tuple[int, TargetFault] | None = None
        self._rejected = 0
        self._answered_in_property = 0
        #: Why inputs were rejected (InputNotApplicable), with how many, for the run's notes.
        self.rejected: dict[str, int] = {}

    def begin_property(self) -> None:
        """Called by the plugin before each test: the shrink budgets are per property."""
        self._hangs = 0
        self._restarts = 0
        self._smallest = None
        self._rejected = 0
        self._answered_in_property = 0

    @property
    def answers_in_property(self) -> int:
        """Inputs the target answered since :meth:`begin_property` (the plugin adds them
        up: a target that answered any input is judged, not given up as unable to run)."""
        return self._answered_in_property

    def run(
        self, scenario: Scenario, expected: dict[str, Any], mask: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        """The target's observables, or a :class:`TargetFault` for this input."""
        if self.broken is not None:
            pytest.skip(f"target error: {self.broken}")
        try:
            observables = self.target.run(scenario)
        except InputNotApplicable as exc:
            self._reject(exc)
        except NotApplicable as exc:
            pytest.skip(f"not applicable: {exc}")
        except TargetError as exc:
            raise self._fault(exc.kind, str(exc), scenario, expected, mask) from None
        except (Exception, SystemExit) as exc:  # a Python target's own bug on this input
            raise self._fault("exception", _describe(exc), scenario, expected, mask) from None
        problem = _not_observables(observables)
        if problem:
            raise self._fault("garbage", problem, scenario, expected, mask)
        if self._check_schema:
            problem = observables_problem(scenario.component, to_jsonable(observables))
            if problem:
                raise self._fault("schema", problem, scenario, expected, mask)
        self.answers += 1
        self._answered_in_property += 1
        return observables

    def _reject(self, exc: InputNotApplicable) -> NoReturn:
        """Another input instead of this one, while the property may still find inputs
        that run; a skip naming the reason once it has found none in a row of
        :data:`MAX_REJECTS_WITHOUT_ANSWER`, or outside hypothesis."""
        from hypothesis import reject
        from hypothesis.control import currently_in_test_context

        reason = str(exc)
        self.rejected[reason] = self.rejected.get(reason, 0) + 1
        self._rejected += 1
        if currently_in_test_context() and (
                self._answered_in_property or self._rejected < MAX_REJECTS_WITHOUT_ANSWER):
            reject()
        pytest.skip(f"not applicable: {reason}")

    def _fault(
        self, kind: str, detail: str, scenario: Scenario, expected: dict[str, Any],
        mask: tuple[str, ...],
    ) -> TargetFault | ShrinkStopped:
        fault = TargetFault(kind, detail, scenario, expected, mask, self.spec)
        self.faults.append(f"{kind}: {detail}")
        if self.give_up and self.answers == 0 and len(self.faults) >= MAX_FAULTS_WITHOUT_SUCCESS:
            self.broken = (f"{self.spec} failed on each of the first {len(self.faults)} "
                           f"inputs and never answered; first: {self.faults[0]}")
        size = len(json.dumps(scenario.to_json()))
        if self._smallest is None or size < self._smallest[0]:
            self._smallest = (size, fault)
        if kind == "hang":
            self._hangs += 1
            if self._hangs >= MAX_HANGS_PER_PROPERTY:
                return ShrinkStopped(self._smallest[1], f"{self._hangs} hangs")
        elif kind in ("crash", "garbage"):
            self._restarts += 1
            if self._restarts >= MAX_RESTARTS_PER_PROPERTY:
                return ShrinkStopped(self._smallest[1], f"{self._restarts} restarts")
        return fault


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
    mask = tuple(mask)
    scenario = with_kernel(scenario, session.kernel)
    if expected is None:
        try:
            expected = component.expected(scenario)
        except NotApplicable as exc:
            pytest.skip(f"not applicable: {exc}")
    caps = session.target.capabilities
    if scenario.component not in caps.components:
        pytest.skip(f"not applicable: {session.spec} does not implement {scenario.component!r}")
    lacking = caps.lacks(scenario.component, component.sides_needed(scenario))
    if lacking:
        pytest.skip(f"not applicable: {session.spec} does not implement the "
                    f"{'/'.join(sorted(lacking))} side of {scenario.component!r}")
    actual = session.run(scenario, expected, mask)
    result = compare(to_jsonable(expected), to_jsonable(actual), mask=mask,
                     reports=caps.reports, rules_for=component.rules_in(scenario))
    first = result.first
    if first is not None:
        text = reproducer(session.spec, scenario, result)
        raise RuleMismatch(f"{context}: {text}" if context else text, first.rules, scenario,
                           expected, mask, session.spec)
    return result


def session_kernel(override: str | None, reported: str | None) -> str:
    """KVER-001: ``--kernel`` if given, else the target's own kernel, else the default;
    always a full version (``"6.12.117"``), so a saved scenario says exactly what it was
    judged for.  A live kernel the model does not describe is refused (KVER-002) unless
    ``--kernel`` names one it does."""
    from reference.kernel import parse_kernel, resolve_kernel

    if override:
        return str(parse_kernel(override, "--kernel"))
    if reported:
        return str(parse_kernel(reported, "the target's kernel"))
    return str(resolve_kernel(None))


def expected_at(session: TargetSession, scenario: Scenario,
                component: Component) -> tuple[Scenario, dict[str, Any]]:
    """For a property that reads the target's answer itself: ``scenario`` at the session's
    kernel and the reference's observables there, or a skip when the reference says the
    scenario is not applicable at that kernel (as :func:`check` does).  Computed without
    the kernel, the expectation would be the default kernel's, and a target asked at
    another kernel would be asked for what it cannot answer (a zcrx scenario at 6.12)."""
    scenario = with_kernel(scenario, session.kernel)
    try:
        return scenario, component.expected(scenario)
    except NotApplicable as exc:
        pytest.skip(f"not applicable: {exc}")


def with_kernel(scenario: Scenario, kernel: str) -> Scenario:
    """The scenario with its kernel filled in (one that names its own keeps it)."""
    return scenario if scenario.kernel else attrs.evolve(scenario, kernel=kernel)


def replay_command(spec: str, scenario: Scenario) -> str:
    """The one-line command that runs ``scenario`` on the target ``spec`` again."""
    scenario_json = json.dumps(scenario.to_json(), separators=(",", ":"))
    return "rx-oracle replay --target " + shlex.quote(spec) + " " + shlex.quote(scenario_json)


def reproducer(spec: str, scenario: Scenario, result: Comparison) -> str:
    """The failure text: the rule, the first differing field, the scenario, a replay line."""
    first = result.first
    assert first is not None
    lines = [
        f"rule {', '.join(first.rules) or '(unattributed)'}: first differing field "
        f"{first.describe()}",
    ]
    if scenario.kernel:
        lines.append(f"kernel: {scenario.kernel} (the version the reference predicted for)")
    more = len(result.mismatches) - 1
    if more:
        lines.append(f"({more} more differing field{'s' if more > 1 else ''})")
    lines += [
        "scenario: " + json.dumps(scenario.to_json(), separators=(",", ":")),
        "replay: " + replay_command(spec, scenario),
    ]
    return "\n".join(lines)


def fault_text(spec: str, kind: str, detail: str, scenario: Scenario) -> str:
    """The failure text of a target fault: what went wrong, the scenario, a replay line."""
    return "\n".join([
        f"target fault ({kind}): {detail}",
        *([f"kernel: {scenario.kernel}"] if scenario.kernel else []),
        "scenario: " + json.dumps(scenario.to_json(), separators=(",", ":")),
        "replay: " + replay_command(spec, scenario),
    ])


def _describe(exc: BaseException) -> str:
    """``Type: message`` and where it was raised: enough to find the bug, no traceback."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


def _not_observables(value: Any) -> str:
    """Why ``value`` cannot be observables (an object of JSON data), or ``""``."""
    if not isinstance(value, dict):
        return f"run() returned {type(value).__name__}, not an object of observables"
    try:
        json.dumps(to_jsonable(value), allow_nan=False)
    except (TypeError, ValueError) as exc:
        return f"run() returned observables that are not JSON data: {exc}"
    return ""

"""Every SPEC rule is blameable, marked as outside a target's view, or a listed gap.

A target can fail a rule only if two things hold (conformance/check.py): some property
names the rule in its ``rule`` marker, and the comparison's field->rule attribution can
return it for a differing field. The attribution is the component's trace-based
``attribute`` (which rule the reference applied to produce that field) falling back to its
static ``field_rules``; a property may also raise :class:`RuleMismatch` itself with the
rules of a check it makes without the reference (``EXPLICIT`` below). A target fault
fails every rule of the property at once; that names no rule, so it does not count.

"Reachable in the attribution" is measured, not read off the code: each property's
scenario strategy is drawn ``SAMPLES`` times (derandomized), the reference answers, and
the attribution is asked about every path of its observables. Rules in a component's
static ``field_rules`` count as reachable too: the map names them for any target.

A rule nothing can blame carries an ``*Outside view:*`` line in SPEC.md under its heading
(the convention of the fec/page_pool/cpumap rules: ``not observable by a target: <why>``,
``not yet reached by a conformance property: <why>``, or ``checked through <rule>``), or it
is listed in :data:`KNOWN_GAPS` with a one-line reason. The list only shrinks: a listed
rule that becomes blameable fails :func:`test_known_gaps_are_still_gaps`.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import conformance.properties
from conformance.components import registry
from conformance.observe import flatten
from conformance.scenario import Scenario, to_jsonable
from conformance.spectrace import load_rules
from reference.errors import InvalidConfig
from reference.kernel import SUPPORTED

ROOT = Path(__file__).resolve().parent.parent
OUTSIDE_RE = re.compile(r"^\*Outside view:\* (?P<what>.+)$", re.MULTILINE)
#: The phrasings an ``*Outside view:*`` line opens with (SPEC.md's preface).
OUTSIDE_KINDS = ("not observable by a target:", "not yet reached by a conformance property:",
                 "checked through ", "checked as ", "checked by the unit tests")

#: Scenarios drawn per property to find the rules its attribution can return.
SAMPLES = 60

#: Properties that blame rules by their own check, without the reference's observables
#: (the rule ids must appear in the property's module).
EXPLICIT: dict[str, tuple[str, ...]] = {
    "test_zcrx.test_zcrx_ownership_holds": ("ZCRX-OWN-001", "ZCRX-OWN-002", "ZCRX-OWN-003"),
    "test_veth.test_veth_rx_hash_is_a_flow_hash": ("VETH-KF-005",),
    "test_veth.test_veth_rx_hash_of_tagged_frames": ("VETH-KF-005", "VETH-KF-007"),
}


#: Rules blameable in principle that no property and attribution name yet, with why.
KNOWN_GAPS: dict[str, str] = {}


def spec_rules() -> dict[str, str]:
    """Rule id -> the text of its section, as conformance.spectrace reads SPEC.md (the same
    reading tests/test_spec_traceability.py and ``rx-oracle spec`` use)."""
    return {rid: rule.text for rid, rule in load_rules(ROOT).items()}


def outside_view() -> dict[str, str]:
    """Rule id -> its ``*Outside view:*`` line (the text after the label)."""
    out = {}
    for rid, body in spec_rules().items():
        m = OUTSIDE_RE.search(body)
        if m:
            out[rid] = m.group("what")
    return out


def _properties() -> list[tuple[str, Callable[..., Any], tuple[str, ...]]]:
    """(module.name, test function, marker rules) of every conformance property."""
    found = []
    for info in sorted(pkgutil.iter_modules(conformance.properties.__path__),
                       key=lambda m: m.name):
        if not info.name.startswith("test_"):
            continue
        module = importlib.import_module(f"conformance.properties.{info.name}")
        for name in sorted(vars(module)):
            fn = getattr(module, name)
            if not (name.startswith("test_") and callable(fn)):
                continue
            marks = tuple(a for m in getattr(fn, "pytestmark", []) if m.name == "rule"
                          for a in m.args)
            if marks:
                found.append((f"{info.name}.{name}", fn, marks))
    return found


def _attribute_into(seen: set[str], scenario: Scenario) -> None:
    """Add every rule the attribution returns for some path of ``scenario``'s answer."""
    component = registry()[scenario.component]
    rules_of = component.rules_in(scenario)
    for path, _ in flatten(to_jsonable(component.expected(scenario))):
        seen.update(rules_of(path))


def _attribute_applicable(seen: set[str], scenario: Scenario) -> None:
    """A fixed case at the newest series where the model describes it (KVER-001).

    Properties fill in the target's kernel and skip where a case is not applicable (the
    ``event_desc`` cases of ZCRX-REG-007 exist only before v7.1); such a case can blame
    its rules on a target running that older series, so it is attributed there."""
    if scenario.kernel:
        _attribute_into(seen, scenario)
        return
    for version in sorted(SUPPORTED.values(), reverse=True):
        try:
            _attribute_into(seen, attrs.evolve(scenario, kernel=str(version)))
        except InvalidConfig:
            continue
        return
    raise AssertionError(f"a fixed case no supported kernel describes: {scenario}")


def _attributed(strategy: st.SearchStrategy[Scenario]) -> set[str]:
    """Every rule the attribution returns for some path of some drawn scenario."""
    seen: set[str] = set()

    @settings(max_examples=SAMPLES, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate])
    @given(strategy)
    def draw(scenario: Scenario) -> None:
        _attribute_into(seen, scenario)

    draw()
    return seen


def _parametrized(fn: Callable[..., Any]) -> list[Scenario]:
    """The scenarios a property is parametrized with (``parametrize("scenario", ...)``)."""
    out = []
    for mark in getattr(fn, "pytestmark", []):
        if mark.name == "parametrize" and mark.args[0] == "scenario":
            out += [v for v in mark.args[1] if isinstance(v, Scenario)]
    return out


@functools.cache
def blameable() -> dict[str, set[str]]:
    """Rule id -> the properties that can fail a target under it alone."""
    static = {r for c in registry().values() for _, rules in c.field_rules for r in rules}
    out: dict[str, set[str]] = {}
    for name, fn, marks in _properties():
        reach = set(static) | set(EXPLICIT.get(name, ()))
        strategy = getattr(getattr(fn, "hypothesis", None), "_given_kwargs", {}).get("scenario")
        if strategy is not None:
            reach |= _attributed(strategy)
        for scenario in _parametrized(fn):
            _attribute_applicable(reach, scenario)
        for rule in set(marks) & reach:
            out.setdefault(rule, set()).add(name)
    return out


def test_explicit_blame_is_in_the_property() -> None:
    """The rules EXPLICIT credits are raised by name in the property's module."""
    for name, rules in EXPLICIT.items():
        module = name.partition(".")[0]
        text = (ROOT / "conformance" / "properties" / f"{module}.py").read_text()
        for rule in rules:
            assert f'"{rule}"' in text, f"{name} does not raise {rule}"


def test_every_rule_is_blameable_or_outside_view_or_a_known_gap() -> None:
    rules = set(spec_rules())
    silent = sorted(rules - set(blameable()) - set(outside_view()) - set(KNOWN_GAPS))
    assert not silent, (f"rules no property can blame, without an *Outside view:* line "
                        f"in SPEC.md or a KNOWN_GAPS entry: {silent}")


def test_known_gaps_are_still_gaps() -> None:
    """The list only shrinks: a rule that became blameable leaves KNOWN_GAPS."""
    closed = sorted(set(KNOWN_GAPS) & set(blameable()))
    assert not closed, f"blameable now, remove from KNOWN_GAPS: {closed}"


def test_known_gaps_are_rules_with_reasons() -> None:
    rules = spec_rules()
    outside = outside_view()
    for rule, reason in KNOWN_GAPS.items():
        assert rule in rules, f"KNOWN_GAPS names {rule}, which SPEC.md does not define"
        assert rule not in outside, f"{rule} is both a known gap and marked *Outside view:*"
        assert reason.strip(), f"{rule}: no reason given"


def test_outside_view_lines_follow_the_convention() -> None:
    for rule, what in outside_view().items():
        assert what.startswith(OUTSIDE_KINDS), f"{rule}: unknown *Outside view:* form {what!r}"


def test_not_observable_rules_are_not_blameable() -> None:
    """A rule SPEC calls unobservable, or not yet reached, must not be blameable: else the
    line is stale (or the attribution names a rule it cannot see)."""
    stale = sorted(rule for rule, what in outside_view().items()
                   if rule in blameable() and not what.startswith(("checked ",)))
    assert not stale, f"*Outside view:* says unobservable, yet blameable: {stale}"


def test_figures() -> None:
    """The counts conformance/MUTANTS.md quotes (printed with ``-s``)."""
    rules = spec_rules()
    blamed, outside = set(blameable()), set(outside_view())
    print(f"\nrules {len(rules)}, blameable {len(blamed)}, outside view "
          f"{len(outside - blamed)} (+{len(outside & blamed)} checked through others), "
          f"known gaps {len(KNOWN_GAPS)}")
    assert len(blamed) + len(outside - blamed) + len(KNOWN_GAPS) >= len(rules)

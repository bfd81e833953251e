"""SPEC.md traceability: every rule is defined once, named by a test and by the code.

A rule id is any string of the form ``AREA-NNN`` or ``AREA-SUB-NNN`` (upper case,
three digits).  SPEC.md defines rules in headings ``#### ID — title``.  The parsing is
:mod:`conformance.spectrace`'s, the same that ``rx-oracle spec`` prints (TRACE-002).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance import spectrace
from conformance.spectrace import ID_RE

ROOT = spectrace.ROOT
SPEC = ROOT / "SPEC.md"


def _defined() -> dict[str, str]:
    """Rule id -> the text of its section (up to the next heading)."""
    return {rid: rule.text for rid, rule in spectrace.load_rules(ROOT).items()}


def _ids_in(paths: list[Path]) -> dict[str, set[Path]]:
    sites = spectrace.mention_sites(ROOT, paths)
    return {rid: {ROOT / s.path for s in ss} for rid, ss in sites.items()}


def _py_files(*dirs: str) -> list[Path]:
    return spectrace.py_files(ROOT, *dirs)


def test_every_heading_is_a_well_formed_rule() -> None:
    rules = _defined()
    assert len(rules) > 50
    for rid, body in rules.items():
        assert ID_RE.fullmatch(rid), f"malformed rule id {rid!r}"
        assert "*Source:*" in body, f"{rid} cites no kernel source"
        assert "*Kind:*" in body, f"{rid} does not say what kind of rule it is"


def test_spec_mentions_only_defined_rules() -> None:
    rules = _defined()
    dangling = sorted(set(ID_RE.findall(SPEC.read_text())) - set(rules))
    assert not dangling, f"SPEC.md mentions undefined rule ids: {dangling}"


def test_every_rule_is_named_by_a_test() -> None:
    rules = _defined()
    named = _ids_in(_py_files("tests", "conformance"))
    missing = sorted(set(rules) - set(named))
    assert not missing, f"rules no test names: {missing}"


def test_tests_name_only_rules_spec_defines() -> None:
    rules = _defined()
    named = _ids_in(_py_files("tests", "conformance"))
    unknown = {rid: sorted(str(p.relative_to(ROOT)) for p in ps)
               for rid, ps in named.items() if rid not in rules}
    assert not unknown, f"tests name rule ids SPEC.md lacks: {unknown}"


def test_code_names_only_defined_rules() -> None:
    rules = _defined()
    named = _ids_in(_py_files("reference", "conformance"))
    unknown = {rid: sorted(str(p.relative_to(ROOT)) for p in ps)
               for rid, ps in named.items() if rid not in rules}
    assert not unknown, f"code names rule ids SPEC.md lacks: {unknown}"


def test_every_rule_is_implemented_somewhere_named() -> None:
    """The model carries the id where it implements the rule."""
    rules = _defined()
    named = _ids_in(_py_files("reference"))
    missing = sorted(set(rules) - set(named))
    assert not missing, f"rules the reference code never names: {missing}"


def test_rule_marker_is_registered(pytestconfig: pytest.Config) -> None:
    """The ``rule`` marker exists, so ``-m`` and ``--strict-markers`` accept it."""
    markers = pytestconfig.getini("markers")
    assert any(str(m).startswith("rule(") for m in markers)


def test_every_rule_is_checked_by_a_marked_test_or_property() -> None:
    """Stronger than a mention: some test or property carries the id in its ``rule`` marker."""
    index = spectrace.load(ROOT)
    unchecked = sorted(set(index.rules) - set(index.tests) - set(index.properties))
    assert not unchecked, f"rules no test or property marks: {unchecked}"

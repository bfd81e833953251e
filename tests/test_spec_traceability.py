"""SPEC.md traceability: every rule is defined once, named by a test and by the code.

A rule id is any string of the form ``AREA-NNN`` or ``AREA-SUB-NNN`` (upper case,
three digits).  SPEC.md defines rules in headings ``#### ID — title``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "SPEC.md"
ID_RE = re.compile(r"\b[A-Z][A-Z0-9]+(?:-[A-Z0-9]+)*-[0-9]{3}\b")
HEADING_RE = re.compile(r"^#### (?P<id>\S+) — (?P<title>.+)$", re.MULTILINE)


def _defined() -> dict[str, str]:
    """Rule id -> the text of its section (up to the next heading)."""
    text = SPEC.read_text()
    rules: dict[str, str] = {}
    matches = list(HEADING_RE.finditer(text))
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        nxt = text.find("\n#", m.end())
        if 0 <= nxt < end:
            end = nxt
        rid = m.group("id")
        assert rid not in rules, f"SPEC.md defines {rid} twice"
        rules[rid] = text[m.end() : end]
    return rules


def _ids_in(paths: list[Path]) -> dict[str, set[Path]]:
    found: dict[str, set[Path]] = {}
    for path in paths:
        for rid in ID_RE.findall(path.read_text()):
            found.setdefault(rid, set()).add(path)
    return found


def _py_files(*dirs: str) -> list[Path]:
    return [p for d in dirs for p in sorted((ROOT / d).rglob("*.py"))]


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

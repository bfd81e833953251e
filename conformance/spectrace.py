"""SPEC.md traceability: each rule, the code that names it, the tests and fixtures that check it.

One parser for two readers (SPEC: TRACE-002).  ``tests/test_spec_traceability.py`` uses it
to fail when a rule is named nowhere, and ``rx-oracle spec ID`` uses it to show a student
everything about one rule in one hop; since both read the tree the same way they cannot
disagree.  What counts:

- a *rule* is a SPEC.md heading ``#### ID — title``; its text runs to the next heading;
- a *code site* is a line of a ``reference/`` or ``conformance/`` Python file naming the id;
- a *test* or *property* is a ``test_*`` function (or stateful-machine test case) in
  ``tests/*.py`` or ``conformance/properties/*.py`` whose ``rule`` marker names the id,
  on the function, its class or its module (``pytestmark``);
- a *fixture* is a line of ``fixtures/*.jsonl`` whose ``rules`` list names the id.

Markers are read from the source with :mod:`ast`, not by importing the tests, so a lookup
stays well under a second; the traceability test checks the result against pytest's own
collection.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import attrs

#: A rule id: ``AREA-NNN`` or ``AREA-SUB-NNN`` (upper case, three digits).
ID_RE = re.compile(r"\b[A-Z][A-Z0-9]+(?:-[A-Z0-9]+)*-[0-9]{3}\b")
HEADING_RE = re.compile(r"^#### (?P<id>\S+) — (?P<title>.+)$", re.MULTILINE)
_CITATION_RE = re.compile(r"\*Source:\*(?P<source>.*?)\*Kind:\*(?P<kind>.*)\Z", re.DOTALL)

#: Where the checkout sits: SPEC.md, tests/ and fixtures/ beside the two packages.
ROOT = Path(__file__).resolve().parent.parent


class SpecTreeError(Exception):
    """SPEC.md is malformed, or the checkout it belongs to is not there."""


@attrs.frozen
class Rule:
    """One SPEC.md rule, as written."""

    id: str
    title: str
    text: str  # the section under the heading, stripped: statement, then the citation
    area: str  # the ``##`` heading the rule sits under
    line: int  # SPEC.md line of the heading

    @property
    def statement(self) -> str:
        """The text without its ``*Source:* … · *Kind:* …`` citation."""
        i = self.text.find("*Source:*")
        return self.text[:i].rstrip() if i >= 0 else self.text

    @property
    def source(self) -> str:
        m = _CITATION_RE.search(self.text)
        return " ".join(m.group("source").split()).rstrip(" ·") if m else ""

    @property
    def kind(self) -> str:
        m = _CITATION_RE.search(self.text)
        return " ".join(m.group("kind").split()) if m else ""


@attrs.frozen
class Site:
    """A place in the tree: ``path:line`` (relative to the checkout), and what is there."""

    path: str
    line: int
    name: str = ""  # the test function, or the fixture id

    def __str__(self) -> str:
        return f"{self.path}:{self.line}" + (f" {self.name}" if self.name else "")


def parse_spec(text: str) -> dict[str, Rule]:
    """Rule id -> :class:`Rule`, in SPEC order.  A heading defined twice is an error."""
    rules: dict[str, Rule] = {}
    areas = [(m.start(), m.group(1)) for m in re.finditer(r"^## (.+)$", text, re.MULTILINE)]
    headings = list(HEADING_RE.finditer(text))
    for i, m in enumerate(headings):
        end = headings[i + 1].start() if i + 1 < len(headings) else len(text)
        nxt = text.find("\n#", m.end())
        if 0 <= nxt < end:
            end = nxt
        rid = m.group("id")
        if rid in rules:
            raise SpecTreeError(f"SPEC.md defines {rid} twice")
        area = next((name for pos, name in reversed(areas) if pos < m.start()), "")
        rules[rid] = Rule(rid, m.group("title").strip(), text[m.end():end].strip(), area,
                          text.count("\n", 0, m.start()) + 1)
    return rules


def ids_in(text: str) -> list[str]:
    """Every rule id the text mentions, in order, with repeats."""
    return ID_RE.findall(text)


def py_files(root: Path, *dirs: str) -> list[Path]:
    """The Python files under the given directories of the checkout, sorted."""
    return [p for d in dirs for p in sorted((root / d).rglob("*.py"))]


def mention_sites(root: Path, files: Iterable[Path]) -> dict[str, list[Site]]:
    """Rule id -> each line naming it (a line naming it twice counts once)."""
    found: dict[str, list[Site]] = {}
    for path in files:
        rel = path.relative_to(root).as_posix()
        for n, line in enumerate(path.read_text().splitlines(), 1):
            for rid in dict.fromkeys(ID_RE.findall(line)):
                found.setdefault(rid, []).append(Site(rel, n))
    return found


# --- rule markers -----------------------------------------------------------------------

def _is_rule_mark(node: ast.AST) -> bool:
    """``pytest.mark.rule``, the callee of a rule marker."""
    return (isinstance(node, ast.Attribute) and node.attr == "rule"
            and isinstance(node.value, ast.Attribute) and node.value.attr == "mark")


def _strings(node: ast.AST, consts: dict[str, list[str]]) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Starred) and isinstance(node.value, ast.Name):
        return consts.get(node.value.id, [])
    if isinstance(node, ast.Starred) and isinstance(node.value, ast.Tuple | ast.List):
        return [s for e in node.value.elts for s in _strings(e, consts)]
    return []


def _marked(node: ast.AST | None, consts: dict[str, list[str]]) -> list[str]:
    """The ids every ``pytest.mark.rule(...)`` call inside ``node`` names."""
    if node is None:
        return []
    return [s for call in ast.walk(node)
            if isinstance(call, ast.Call) and _is_rule_mark(call.func)
            for arg in call.args for s in _strings(arg, consts)]


def _constants(tree: ast.Module) -> dict[str, list[str]]:
    """Module-level ``NAME = ("ID", ...)`` tuples and lists, for ``rule(*NAME)``."""
    consts: dict[str, list[str]] = {}
    for stmt in tree.body:
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and isinstance(stmt.value, ast.Tuple | ast.List)):
            consts[stmt.targets[0].id] = [s for e in stmt.value.elts for s in _strings(e, {})]
    return consts


def _pytestmark(body: list[ast.stmt], consts: dict[str, list[str]]) -> list[str]:
    return [s for stmt in body if isinstance(stmt, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in stmt.targets)
            for s in _marked(stmt.value, consts)]


def _tests_of(tree: ast.Module) -> Iterator[tuple[str, int, list[ast.AST], ast.ClassDef | None]]:
    """(name, line, decorators, class) for every test pytest would collect from the module."""
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name.startswith(
                "test"):
            yield stmt.name, stmt.lineno, list(stmt.decorator_list), None
        elif isinstance(stmt, ast.ClassDef) and stmt.name.startswith("Test"):
            for sub in stmt.body:
                if isinstance(sub, ast.FunctionDef) and sub.name.startswith("test"):
                    yield f"{stmt.name}::{sub.name}", sub.lineno, list(sub.decorator_list), stmt


def _machine_tests(tree: ast.Module, consts: dict[str, list[str]]) -> Iterator[tuple[str, int,
                                                                                   list[str]]]:
    """Hypothesis state machines: ``TestX = Machine.TestCase``, marked through
    ``Machine.TestCase.pytestmark = [...]`` (pytest collects ``TestX::runTest``)."""
    marks: dict[str, list[str]] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                if (isinstance(t, ast.Attribute) and t.attr == "pytestmark"
                        and isinstance(t.value, ast.Attribute) and t.value.attr == "TestCase"
                        and isinstance(t.value.value, ast.Name)):
                    marks[t.value.value.id] = _marked(stmt.value, consts)
    for stmt in tree.body:
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id.startswith("Test")
                and isinstance(stmt.value, ast.Attribute) and stmt.value.attr == "TestCase"
                and isinstance(stmt.value.value, ast.Name)):
            yield (f"{stmt.targets[0].id}::runTest", stmt.lineno,
                   marks.get(stmt.value.value.id, []))


def _class_marks(cls: ast.ClassDef | None, consts: dict[str, list[str]]) -> list[str]:
    if cls is None:
        return []
    return _pytestmark(cls.body, consts) + [s for d in cls.decorator_list
                                            for s in _marked(d, consts)]


def marked_tests(root: Path, files: Iterable[Path]) -> dict[str, list[Site]]:
    """Rule id -> the tests whose ``rule`` marker names it (``Site.name`` is the test)."""
    found: dict[str, list[Site]] = {}
    for path in files:
        rel = path.relative_to(root).as_posix()
        tree = ast.parse(path.read_text(), str(path))
        consts = _constants(tree)
        module = _pytestmark(tree.body, consts)
        tests = [(name, line, module + _class_marks(cls, consts)
                  + [s for d in decos for s in _marked(d, consts)])
                 for name, line, decos, cls in _tests_of(tree)]
        tests += [(name, line, module + ids) for name, line, ids in _machine_tests(tree, consts)]
        for name, line, ids in tests:
            for rid in dict.fromkeys(ids):
                found.setdefault(rid, []).append(Site(rel, line, name))
    return found


def fixture_sites(root: Path) -> dict[str, list[Site]]:
    """Rule id -> each fixture record (``fixtures/*.jsonl`` line) whose ``rules`` names it."""
    found: dict[str, list[Site]] = {}
    for path in sorted((root / "fixtures").glob("*.jsonl")):
        rel = path.relative_to(root).as_posix()
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            record = json.loads(line)
            for rid in dict.fromkeys(record.get("rules", [])):
                found.setdefault(rid, []).append(Site(rel, n, str(record.get("id", ""))))
    return found


# --- the whole index ----------------------------------------------------------------------

@attrs.frozen
class SpecIndex:
    """Every rule with everything that names it, read once from one checkout."""

    root: Path
    rules: dict[str, Rule]
    code: dict[str, list[Site]]  # reference/ and conformance/ lines naming the id
    tests: dict[str, list[Site]]  # tests/*.py functions marked with the id
    properties: dict[str, list[Site]]  # conformance/properties/*.py functions marked with it
    fixtures: dict[str, list[Site]]  # fixtures/*.jsonl records listing it


def check_checkout(root: Path) -> None:
    """One sentence when the checkout around the package is not there (a wheel install)."""
    missing = [name for name, ok in (("SPEC.md", (root / "SPEC.md").is_file()),
                                     ("tests/", (root / "tests").is_dir()),
                                     ("fixtures/", (root / "fixtures").is_dir())) if not ok]
    if missing:
        raise SpecTreeError(
            f"{', '.join(missing)} not found in {root}: rule look-ups need a source checkout "
            "of rx-oracle (git clone, then pip install -e .), not an installed wheel")


def load_rules(root: Path = ROOT) -> dict[str, Rule]:
    return parse_spec((root / "SPEC.md").read_text())


@functools.cache
def load(root: Path = ROOT) -> SpecIndex:
    """The index of the checkout at ``root``, built once per process."""
    check_checkout(root)
    return SpecIndex(
        root=root,
        rules=load_rules(root),
        code=mention_sites(root, py_files(root, "reference", "conformance")),
        tests=marked_tests(root, sorted((root / "tests").glob("*.py"))),
        properties=marked_tests(root, sorted((root / "conformance" / "properties").glob(
            "*.py"))),
        fixtures=fixture_sites(root),
    )

"""The branches of ``reference/`` the ci run never takes, each covered or justified.

Branch coverage alone is a percentage; what issue 14 asks is that every branch the ci run
misses is either one no observable can depend on, or justified in writing. This module
reads coverage.py's JSON report and sorts each missed branch (``from`` line, ``to`` line;
a negative ``to`` leaves the function; a function the run never calls counts as one missed
branch from its ``def`` to its first statement) into:

- **refusal**: the branch leads to a ``raise``. The suite only sends what the reference
  accepts (PROTOCOL.md: a refused input is not a conformance question), so a refusal's
  branch is never taken by design; the unit tests take them.
- **explanation**: the branch is an ``if`` on ``trace``, or in an ``explain*`` function: it
  only records the explanation (``reference/trace.py``), never an observable.
- **justified**: an entry of ``unreached.toml`` (next to this module) names its function
  (every missed branch in it) or its ``from`` line's code, with the reason the ci run
  cannot or need not take it: a whole module that is not an observable's (``errors.py``),
  a path of the kernel no component models, a version gate the default kernel does not
  take.
- **open**: none of these: a branch that may change an observable and that no property
  reaches. Each one is a reach gap to close with a strategy, or to justify.

``rx-oracle mutate --coverage`` prints the counts per module and writes the open
branches to ``unreached.md``; ``tests/test_reach.py`` keeps the justification file honest
(every entry names a real function or line).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from conformance.mutation import checked_toml

JUSTIFIED = Path(__file__).with_name("unreached.toml")
REFUSAL, EXPLANATION, JUSTIFIED_KIND, OPEN = "refusal", "explanation", "justified", "open"
KINDS = (REFUSAL, EXPLANATION, JUSTIFIED_KIND, OPEN)

_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "unreached": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["path", "function", "reason"],
                "properties": {
                    "path": {"type": "string", "pattern": r"^reference/.+\.py$"},
                    "function": {"type": "string"},
                    "code": {"type": "string", "minLength": 1},
                    "reason": {"type": "string", "minLength": 10},
                },
            },
        },
    },
}


class JustificationError(Exception):
    """``unreached.toml`` is malformed: one line naming the entry and field."""


@attrs.frozen
class Justification:
    """Why the ci run leaves a function's branches (or one line's) untaken.

    ``function`` is the qualified name (``Pool.destroy``), ``"*"`` for the whole module;
    ``code``, when given, narrows the entry to branches leaving that (stripped) line.
    """

    path: str
    function: str
    reason: str
    code: str = ""


@attrs.frozen
class Branch:
    """One missed branch and how it was sorted."""

    path: str
    source: int
    dest: int
    function: str
    code: str
    kind: str
    reason: str = ""


def load(path: Path = JUSTIFIED) -> list[Justification]:
    doc = checked_toml.load(path, _SCHEMA, JustificationError)
    return [Justification(**entry) for entry in doc.get("unreached", [])]


class _Module:
    """A module's statements by line, and the function each line is in."""

    def __init__(self, source: str) -> None:
        self.lines = source.splitlines()
        self.tree = ast.parse(source)
        self.stmt_at: dict[int, ast.stmt] = {}
        self.function_at: dict[int, str] = {}
        self._walk(self.tree.body, "")

    def _walk(self, body: Iterable[ast.stmt], qual: str) -> None:
        for node in body:
            self.stmt_at.setdefault(node.lineno, node)
            inner = qual
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                inner = f"{qual}.{node.name}" if qual else node.name
            for line in range(node.lineno, (node.end_lineno or node.lineno) + 1):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) \
                        or line not in self.function_at:
                    self.function_at[line] = inner
            for field in ("body", "orelse", "finalbody"):
                self._walk(getattr(node, field, []), inner)
            for handler in getattr(node, "handlers", []):
                self._walk(handler.body, inner)
            for case in getattr(node, "cases", []):
                self._walk(case.body, inner)

    def never_entered(self, missing: frozenset[int]) -> list[tuple[str, ast.FunctionDef, int]]:
        """The functions the run never called (every statement of the body missed), each
        outermost one once, as (qualified name, node, line of its first statement).

        Coverage reports no *branch* into a function, so a function without an ``if`` or
        a loop that nothing calls would otherwise miss no branch at all; its call is
        counted here as one missed branch, from its ``def`` line to its first statement."""
        found: list[tuple[str, ast.FunctionDef, int]] = []

        def walk(body: Iterable[ast.stmt], qual: str) -> None:
            for node in body:
                if isinstance(node, ast.ClassDef):
                    walk(node.body, f"{qual}.{node.name}" if qual else node.name)
                elif isinstance(node, ast.FunctionDef):
                    name = f"{qual}.{node.name}" if qual else node.name
                    stmts = [s for s in node.body if not _is_docstring(s)]
                    if stmts and all(s.lineno in missing for s in stmts):
                        found.append((name, node, stmts[0].lineno))
                    else:
                        walk(node.body, name)

        walk(self.tree.body, "")
        return found

    def code(self, line: int) -> str:
        return self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""

    def refuses(self, source: int, dest: int) -> bool:
        """The branch leads into a ``raise`` (directly, or a block that only raises)."""
        target = self.stmt_at.get(dest)
        if isinstance(target, ast.Raise):
            return True
        origin = self.stmt_at.get(source)
        if isinstance(origin, ast.If) and origin.body and origin.body[0].lineno == dest:
            return all(isinstance(s, ast.Raise) for s in origin.body)
        return False

    def explains(self, source: int) -> bool:
        """The branch is an ``if`` on the trace (explanation-only code)."""
        origin = self.stmt_at.get(source)
        if not isinstance(origin, ast.If | ast.IfExp):
            return False
        return any(isinstance(n, ast.Name) and n.id == "trace" for n in ast.walk(origin.test))


def _is_docstring(stmt: ast.stmt) -> bool:
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str))


def classify(doc: Mapping[str, Any], root: Path,
             justified: Iterable[Justification] = ()) -> list[Branch]:
    """Every missed branch of coverage.py's JSON report ``doc``, sorted into :data:`KINDS`."""
    by_path: dict[str, list[Justification]] = {}
    for j in justified:
        by_path.setdefault(j.path, []).append(j)
    out = []
    for name, entry in sorted(doc["files"].items()):
        path = Path(name)
        rel = (path.resolve().relative_to(root) if path.is_absolute() else path).as_posix()
        module = _Module((root / rel).read_text())
        missing = frozenset(entry.get("missing_lines", ()))
        arcs = [(source, dest, module.function_at.get(source, ""))
                for source, dest in entry.get("missing_branches", ())]
        arcs += [(node.lineno, first, qual)
                 for qual, node, first in module.never_entered(missing)]
        for source, dest, function in arcs:
            code = module.code(source)
            kind, reason = OPEN, ""
            if module.refuses(source, dest):
                kind = REFUSAL
            elif module.explains(source) or function.rpartition(".")[2].startswith("explain"):
                kind = EXPLANATION
            else:
                for j in by_path.get(rel, ()):
                    if j.function in ("*", function) and (not j.code or j.code == code):
                        kind, reason = JUSTIFIED_KIND, j.reason
                        break
            out.append(Branch(rel, source, dest, function, code, kind, reason))
    return out


def stale(justified: Iterable[Justification], root: Path) -> list[Justification]:
    """Entries naming a module, function or line that no longer exists."""
    bad = []
    for j in justified:
        file = root / j.path
        if not file.exists():
            bad.append(j)
            continue
        module = _Module(file.read_text())
        lines = [n for n, f in module.function_at.items()
                 if j.function in ("*", f)]
        if not lines or (j.code and all(module.code(n) != j.code for n in lines)):
            bad.append(j)
    return bad


def counts(branches: Iterable[Branch]) -> dict[str, dict[str, int]]:
    """Module path -> kind -> how many missed branches."""
    out: dict[str, dict[str, int]] = {}
    for b in branches:
        row = out.setdefault(b.path, dict.fromkeys(KINDS, 0))
        row[b.kind] += 1
    return out


def report(branches: list[Branch]) -> str:
    """Markdown: the missed branches per module by kind, then every open one."""
    rows = counts(branches)
    lines = ["| module | missed branches | refusal | explanation | justified | open |",
             "|---|---:|---:|---:|---:|---:|"]
    total = dict.fromkeys(KINDS, 0)
    for path in sorted(rows):
        row = rows[path]
        for k in KINDS:
            total[k] += row[k]
        lines.append(f"| {path} | {sum(row.values())} | " + " | ".join(
            str(row[k]) for k in KINDS) + " |")
    lines.append(f"| **all** | {sum(total.values())} | " + " | ".join(
        str(total[k]) for k in KINDS) + " |")
    still = [b for b in branches if b.kind == OPEN]
    if still:
        lines += ["", f"Open ({len(still)}): branches that may change an observable and that "
                      "the ci run never takes:", ""]
        for b in still:
            where = "leaves the function" if b.dest < 0 else f"to line {b.dest}"
            lines.append(f"- `{b.path}:{b.source}` in `{b.function or '<module>'}`, "
                         f"{where}: `{b.code}`")
    return "\n".join(lines) + "\n"


def from_report(coverage_json: Path, root: Path) -> list[Branch]:
    return classify(json.loads(coverage_json.read_text()), root, load())

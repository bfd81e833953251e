"""Reach: branch coverage of ``reference/`` by the ci run of the conformance suite.

Mutation testing says how much of what the suite reaches it also checks; coverage says
what it reaches at all.  A line the ci run never executes cannot kill a mutant, so the
two read together: a low kill rate in a well-covered module means weak assertions, in a
poorly covered one missing strategies.

The suite runs in a child process under ``coverage run --branch`` (so that the
reference's module-level code, executed at import, is measured too), against the
in-process reference target, with the ``ci`` profile; then the per-module figures are
read from coverage's JSON report.  Usage::

    python -m conformance.mutation.reach [--out DIR]     # or: rx-oracle mutate --coverage

Needs ``coverage`` (in the ``dev`` extra).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from conformance.mutation.mutator import Mutant

ROOT = Path(__file__).resolve().parents[2]
#: In ``--out``: coverage's JSON report of the ci run, and the digest of the sources it ran.
COVERAGE, DIGEST = "coverage.json", "coverage.sources"


@attrs.frozen
class ModuleReach:
    """One module's figures, as coverage.py counts them."""

    path: str
    statements: int
    missing: int
    branches: int
    partial: int
    missing_branches: int
    percent: float

    @property
    def line_percent(self) -> float:
        return 100.0 * (self.statements - self.missing) / self.statements if self.statements \
            else 100.0

    @property
    def branch_percent(self) -> float:
        covered = self.branches - self.missing_branches
        return 100.0 * covered / self.branches if self.branches else 100.0


def measure(out: Path, *, root: Path = ROOT, python: str = sys.executable) -> list[ModuleReach]:
    """Run the ci suite under coverage; the per-module figures, sorted by path.

    Raises :class:`RuntimeError` if coverage is missing or the suite could not run.
    """
    from conformance.mutation import selection

    out.mkdir(parents=True, exist_ok=True)
    data = (out / ".coverage").resolve()
    data.unlink(missing_ok=True)
    env = dict(os.environ, PYTHONPATH=str(root), PYTHONDONTWRITEBYTECODE="1")
    selection.run_coverage(selection.coverage_command(
        python, root, data, None, (out / "ci-report.json").resolve()), root)
    report = (out / COVERAGE).resolve()
    subprocess.run([python, "-m", "coverage", "json", f"--data-file={data}", "-o", str(report),
                    "-q"], cwd=root, env=env, check=True, stdout=subprocess.DEVNULL)
    (out / DIGEST).write_text(source_digest(root) + "\n")
    return parse(json.loads(report.read_text()), root)


def source_digest(root: Path = ROOT) -> str:
    """A digest of every module of ``reference/``: line numbers in a coverage report hold
    for the sources it was measured on, and no others."""
    h = hashlib.sha256()
    for path in sorted((root / "reference").rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def fresh_executed_lines(out: Path, root: Path = ROOT) -> dict[str, frozenset[int]] | None:
    """The executed lines of ``out``'s coverage report if it was measured on today's
    ``reference/`` (its digest matches), else None."""
    digest = out / DIGEST
    if not (out / COVERAGE).exists() or not digest.exists() \
            or digest.read_text().strip() != source_digest(root):
        return None
    return executed_lines(out / COVERAGE, root)


def never_executed(mutant: Mutant, executed: Mapping[str, frozenset[int]]) -> bool:
    """No line of ``mutant``'s statement ran in the measured run."""
    lines_run = executed.get(mutant.path, frozenset())
    return mutant.stmt_line not in lines_run \
        and not lines_run.intersection(range(mutant.line, mutant.end_line + 1))


def parse(doc: dict[str, Any], root: Path) -> list[ModuleReach]:
    found = []
    for name, entry in doc["files"].items():
        s = entry["summary"]
        path = Path(name)
        rel = (path.resolve().relative_to(root) if path.is_absolute() else path).as_posix()
        found.append(ModuleReach(
            path=rel, statements=s["num_statements"], missing=s["missing_lines"],
            branches=s.get("num_branches", 0), partial=s.get("num_partial_branches", 0),
            missing_branches=s.get("missing_branches", 0), percent=s["percent_covered"]))
    return sorted(found, key=lambda m: m.path)


def executed_lines(report: Path, root: Path = ROOT) -> dict[str, frozenset[int]]:
    """The lines coverage saw executed, per module path, from a ``coverage.json``."""
    doc = json.loads(report.read_text())
    found = {}
    for name, entry in doc["files"].items():
        path = Path(name)
        rel = (path.resolve().relative_to(root) if path.is_absolute() else path).as_posix()
        found[rel] = frozenset(entry.get("executed_lines", ()))
    return found


def table(modules: Sequence[ModuleReach]) -> str:
    """A markdown table: lines and branches covered per module, and the total."""
    lines = ["| module | statements | missed | lines | branches | missed branches | "
             "branches covered | combined |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for m in modules:
        lines.append(f"| {m.path} | {m.statements} | {m.missing} | {m.line_percent:.0f}% | "
                     f"{m.branches} | {m.missing_branches} | {m.branch_percent:.0f}% | "
                     f"{m.percent:.0f}% |")
    total = ModuleReach(
        "**all**", sum(m.statements for m in modules), sum(m.missing for m in modules),
        sum(m.branches for m in modules), sum(m.partial for m in modules),
        sum(m.missing_branches for m in modules), 0.0)
    hit = total.statements - total.missing + total.branches - total.missing_branches
    combined = 100.0 * hit / (total.statements + total.branches) if modules else 0.0
    lines.append(f"| **all** | {total.statements} | {total.missing} | {total.line_percent:.0f}% "
                 f"| {total.branches} | {total.missing_branches} | {total.branch_percent:.0f}% "
                 f"| {combined:.0f}% |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m conformance.mutation.reach",
                                description="branch coverage of reference/ by the ci suite")
    p.add_argument("--out", type=Path, default=Path("mutation-out"), metavar="DIR",
                   help="where coverage data and reach.md go (default: mutation-out)")
    return run(p.parse_args(argv).out)


def run(out: Path) -> int:
    """Measure, print the table and the missed branches by kind (refusal, explanation,
    justified, open: :mod:`conformance.mutation.unreached`), write both to
    ``out/reach.md`` and the open branches to ``out/unreached.md``; then run the suite under
    coverage at each older supported tree too and write ``out/selection.json`` (which
    properties run each line, per kernel: :mod:`conformance.mutation.selection`); 2 on
    failure."""
    from conformance.mutation import gates, selection, unreached
    from reference.kernel import DEFAULT_KERNEL

    try:
        import coverage  # noqa: F401  - only to fail early with a clear message
    except ImportError:
        print("rx-oracle: coverage is not installed (pip install 'rx-oracle[dev]')",
              file=sys.stderr)
        return 2
    try:
        modules = measure(out)
        branches = unreached.from_report(out / "coverage.json", ROOT)
        older = [v for v in gates.judged_trees(ROOT) if v != str(DEFAULT_KERNEL)]
        selection.measure(out, out / ".coverage", older)
    except unreached.JustificationError as exc:
        print(f"rx-oracle: {exc}", file=sys.stderr)
        return 2
    except (RuntimeError, subprocess.CalledProcessError, OSError) as exc:
        print(f"rx-oracle: {exc}", file=sys.stderr)
        return 2
    text = table(modules)
    missed = unreached.report(branches)
    (out / "reach.md").write_text(text)
    (out / "unreached.md").write_text(missed)
    still = sum(1 for b in branches if b.kind == unreached.OPEN)
    print(text, end="")
    print(f"\nmissed branches: {len(branches)}; "
          + ", ".join(f"{k} {sum(1 for b in branches if b.kind == k)}"
                      for k in unreached.KINDS)
          + f" (each open one listed in {out / 'unreached.md'})")
    return 0 if still == 0 else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

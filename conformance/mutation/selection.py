"""Which properties can see a mutant: the lines each property executes, at each kernel.

A mutant changes what a target answers only on an input that executes its line.  The ci
profile is derandomized, so against a mutant every property draws the same inputs as
against the reference until the first answer that differs, and that answer comes from an
input that ran the mutated line.  So a property that never runs the line in the
reference's own ci run cannot see the mutant, and at a kernel where no property runs it
the mutant cannot be detected at all.  The runner uses this to run only the properties
that can see a mutant (``--property``) and to skip the kernels where none can; on the full
run that is most of the CPU time, which survivors spend running every property of every
checking component at up to three kernels.

The data: ``rx-oracle mutate --coverage`` runs the ci suite under coverage.py once per
supported tree (the newest one also gives reach), with :mod:`conformance.mutation.contexts`
naming each property's lines, and writes ``selection.json`` into ``--out``: per kernel,
per module, per line, the properties that executed it.  A line run outside any property
(at import, at collection, in a fixture's set-up: the empty context) may matter to every
property, so for it the runner runs them all, as it does with no data for a kernel.

One case the argument does not cover: state built lazily by the first property that needs
it (a table cached at first use) is recorded under that property alone.  The reference
keeps no such caches across properties (each target request builds its component state
afresh); ``tests/test_mutation_selection.py`` checks the runner detects the same mutants
with and without selection on a sample.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

import attrs

from conformance.mutation.mutator import Mutant
from conformance.mutation.reach import ROOT, source_digest

SELECTION = "selection.json"
FORMAT = 1
#: The context of lines run outside any property's call.
ANYWHERE = ""


@attrs.frozen
class Selection:
    """Per kernel version, per module path, per line: the contexts that ran it."""

    kernels: dict[str, dict[str, dict[int, frozenset[str]]]]

    def properties(self, mutant: Mutant, kernel: str,
                   components: Sequence[str]) -> tuple[str, ...] | None:
        """The node ids of ``components``' properties that ran ``mutant``'s lines at
        ``kernel``: None means run every property (no data for that kernel, or a line run
        outside any property), () means none can see it there."""
        table = self.kernels.get(kernel)
        if table is None:
            return None
        lines = table.get(mutant.path, {})
        seen: set[str] = set()
        for line in {mutant.stmt_line, *range(mutant.line, mutant.end_line + 1)}:
            seen |= lines.get(line, frozenset())
        if ANYWHERE in seen:
            return None
        files = {f"test_{c}.py" for c in components}
        return tuple(sorted(p for p in seen if p.partition("::")[0] in files))

    def to_json(self, digest: str) -> dict[str, object]:
        doc: dict[str, object] = {"format": FORMAT, "digest": digest}
        kernels: dict[str, object] = {}
        for kernel, modules in self.kernels.items():
            names = sorted({c for lines in modules.values() for cs in lines.values() for c in cs})
            index = {n: i for i, n in enumerate(names)}
            kernels[kernel] = {"contexts": names, "lines": {
                path: {str(line): sorted(index[c] for c in cs)
                       for line, cs in sorted(lines.items())}
                for path, lines in sorted(modules.items())}}
        doc["kernels"] = kernels
        return doc

    @classmethod
    def from_json(cls, doc: dict[str, object]) -> Selection:
        kernels: dict[str, dict[str, dict[int, frozenset[str]]]] = {}
        raw = doc["kernels"]
        assert isinstance(raw, dict)
        for kernel, entry in raw.items():
            names = entry["contexts"]
            kernels[kernel] = {
                path: {int(line): frozenset(names[i] for i in idx) for line, idx in lines.items()}
                for path, lines in entry["lines"].items()}
        return cls(kernels)


def load(out: Path, root: Path = ROOT) -> Selection | None:
    """``out``'s selection data if it was measured on today's ``reference/``, else None."""
    path = out / SELECTION
    if not path.exists():
        return None
    try:
        doc = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    if doc.get("format") != FORMAT or doc.get("digest") != source_digest(root):
        return None
    return Selection.from_json(doc)


def coverage_command(python: str, root: Path, data: Path, kernel: str | None,
                     report: Path | None = None) -> list[str]:
    """The ci suite under branch coverage of ``reference/``, each property's lines under
    its own context, at ``kernel`` (the default when None)."""
    return [python, "-m", "coverage", "run", "--branch", f"--source={root / 'reference'}",
            f"--data-file={data}", "-m", "conformance.mutation.suite", "--contexts",
            "--profile", "ci",
            *(["--kernel", kernel] if kernel else []),
            *(["--report", str(report)] if report else [])]


def run_coverage(command: list[str], root: Path) -> None:
    """Run one coverage command; RuntimeError unless the suite ran (0, or 1: a rule failed,
    coverage is still meaningful)."""
    env = dict(os.environ, PYTHONPATH=str(root), PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run(command, cwd=root, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, check=False)
    if proc.returncode not in (0, 1):
        tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
        raise RuntimeError(f"the suite under coverage exited {proc.returncode}: {tail}")


def read_contexts(data: Path, root: Path) -> dict[str, dict[int, frozenset[str]]]:
    """Per module path (relative to ``root``), per line, the contexts of a data file."""
    import coverage

    cov = coverage.CoverageData(str(data))
    cov.read()
    found: dict[str, dict[int, frozenset[str]]] = {}
    for name in cov.measured_files():
        rel = Path(name).resolve().relative_to(root.resolve()).as_posix()
        found[rel] = {line: frozenset(cs) for line, cs in cov.contexts_by_lineno(name).items()}
    return found


def measure(out: Path, default_data: Path, older: Iterable[str], *, root: Path = ROOT,
            python: str = sys.executable) -> Selection:
    """Write ``out/selection.json``: the default kernel's contexts from ``default_data``
    (reach's run), each ``older`` kernel's from a run of its own."""
    from reference.kernel import DEFAULT_KERNEL

    kernels = {str(DEFAULT_KERNEL): read_contexts(default_data, root)}
    for kernel in older:
        data = (out / f".coverage-{kernel}").resolve()
        data.unlink(missing_ok=True)
        run_coverage(coverage_command(python, root, data, kernel), root)
        kernels[kernel] = read_contexts(data, root)
    found = Selection(kernels)
    (out / SELECTION).write_text(json.dumps(found.to_json(source_digest(root))) + "\n")
    return found

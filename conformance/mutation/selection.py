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

A mutant of a module-level assignment (a constant, a table) runs at import, under no
property; it acts through the lines that read the names it binds, so those are the lines
that show it (:func:`showing_lines`), unless its module is read by name at run time.

One case the argument does not cover: state built lazily by the first property that needs
it (a table cached at first use) is recorded under that property alone.  The reference
keeps no such caches (no ``lru_cache`` or lazily filled globals; each target request builds
its component state afresh).  Measured: the 222 mutants of ``checksum.py`` the full run had
judged at 82c85c4 gave the same detections with selection, for a third of the CPU time
(conformance/MUTANTS.md).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

import attrs

from conformance.mutation.mutator import Mutant
from conformance.mutation.reach import ROOT, source_digest

SELECTION = "selection.json"
FORMAT = 2
#: selection.json, as :meth:`Selection.to_json` writes it: per kernel, the property node
#: ids (contexts) once, and per module and line the indexes of those that ran it.
SCHEMA: dict[str, object] = {
    "type": "object",
    "required": ["format", "digest", "kernels"],
    "properties": {
        "format": {"const": FORMAT},
        "digest": {"type": "string"},
        "kernels": {"type": "object", "additionalProperties": {
            "type": "object",
            "required": ["contexts", "lines", "gates"],
            "additionalProperties": False,
            "properties": {
                "contexts": {"type": "array", "items": {"type": "string"}},
                "gates": {"type": "object", "additionalProperties": {
                    "type": "array", "items": {"type": "integer", "minimum": 0}}},
                "lines": {"type": "object", "additionalProperties": {
                    "type": "object",
                    "propertyNames": {"pattern": "^[1-9][0-9]*$"},
                    "additionalProperties": {
                        "type": "array", "items": {"type": "integer", "minimum": 0}},
                }},
            },
        }},
    },
}
#: The context of lines run outside any property's call.
ANYWHERE = ""


@attrs.frozen
class Selection:
    """Per kernel version, per module path, per line: the contexts that ran it; and per
    kernel version, per version gate (a rule of ``reference.kernel.GATES``): the contexts
    that asked for it."""

    kernels: dict[str, dict[str, dict[int, frozenset[str]]]]
    gates: dict[str, dict[str, frozenset[str]]] = attrs.field(factory=dict)

    def properties(self, mutant: Mutant, kernel: str, components: Sequence[str],
                   root: Path = ROOT) -> tuple[str, ...] | None:
        """The node ids of ``components``' properties that ran ``mutant``'s lines at
        ``kernel`` (for a module-level binding, the lines reading the names it binds:
        :func:`showing_lines`): None means run every property (no data for that kernel, a
        line run outside any property, a name read outside ``reference/``), () means
        none can see it there."""
        table = self.kernels.get(kernel)
        if table is None:
            return None
        rule = gate_entry(mutant, root)
        seen: set[str] = set()
        if rule is not None:  # one entry of the gate table: what asks for that gate
            if kernel not in self.gates:
                return None
            seen |= self.gates[kernel].get(rule, frozenset())
        else:
            showing = showing_lines(mutant, root)
            if showing is None:
                return None
            for path, line in showing:
                seen |= table.get(path, {}).get(line, frozenset())
        if ANYWHERE in seen:
            return None
        files = {f"test_{c}.py" for c in components}
        return tuple(sorted(p for p in seen if p.partition("::")[0] in files))

    def to_json(self, digest: str) -> dict[str, object]:
        doc: dict[str, object] = {"format": FORMAT, "digest": digest}
        kernels: dict[str, object] = {}
        for kernel, modules in self.kernels.items():
            gates = self.gates.get(kernel, {})
            names = sorted({c for lines in modules.values() for cs in lines.values() for c in cs}
                           | {c for cs in gates.values() for c in cs})
            index = {n: i for i, n in enumerate(names)}
            kernels[kernel] = {"contexts": names, "lines": {
                path: {str(line): sorted(index[c] for c in cs)
                       for line, cs in sorted(lines.items())}
                for path, lines in sorted(modules.items())},
                "gates": {rule: sorted(index[c] for c in cs) for rule, cs in sorted(gates.items())}}
        doc["kernels"] = kernels
        return doc

    @classmethod
    def from_json(cls, doc: object) -> Selection:
        """The selection a document valid under :data:`SCHEMA` holds; ValueError for any
        other (naming where it breaks the schema, or a context index out of range)."""
        import jsonschema

        try:
            jsonschema.validate(doc, SCHEMA)
        except jsonschema.ValidationError as exc:
            where = "/".join(str(p) for p in exc.absolute_path) or "(top)"
            raise ValueError(f"{SELECTION}: {where}: {exc.message}") from None
        assert isinstance(doc, dict)  # the schema says so
        kernels: dict[str, dict[str, dict[int, frozenset[str]]]] = {}
        gates: dict[str, dict[str, frozenset[str]]] = {}
        for kernel, entry in doc["kernels"].items():
            names = entry["contexts"]
            try:
                kernels[kernel] = {
                    path: {int(line): frozenset(names[i] for i in idx)
                           for line, idx in lines.items()}
                    for path, lines in entry["lines"].items()}
                gates[kernel] = {rule: frozenset(names[i] for i in idx)
                                 for rule, idx in entry["gates"].items()}
            except IndexError:
                raise ValueError(f"{SELECTION}: kernels/{kernel}: a line or gate names a "
                                 f"context past the {len(names)} listed") from None
        return cls(kernels, gates)


#: The module whose gate table :func:`gate_entry` knows, and the table's name.
GATE_MODULE, GATE_TABLE = "reference/kernel.py", "GATES"


def gate_entry(mutant: Mutant, root: Path = ROOT) -> str | None:
    """The rule of the version gate whose entry ``mutant`` changes (a mutant inside one
    ``Gate(rule, ...)`` of ``GATES``), else None.  Only ``gate(kernel, rule)`` reads an
    entry, by its rule, so only what asks for that rule can see the mutant."""
    if mutant.path != GATE_MODULE:
        return None
    for node in _tree(root / mutant.path).body:
        if not (isinstance(node, ast.AnnAssign | ast.Assign)
                and node.lineno <= mutant.line <= (node.end_lineno or node.lineno)):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if not any(isinstance(t, ast.Name) and t.id == GATE_TABLE for t in targets):
            return None
        for call in ast.walk(node):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) \
                    and call.func.id == "Gate" and call.args \
                    and isinstance(call.args[0], ast.Constant) \
                    and isinstance(call.args[0].value, str) \
                    and call.lineno <= mutant.line <= (call.end_lineno or call.lineno) \
                    and mutant.end_line <= (call.end_lineno or call.lineno):
                return call.args[0].value
        return None
    return None


def showing_lines(mutant: Mutant, root: Path = ROOT) -> frozenset[tuple[str, int]] | None:
    """The (module, line) pairs whose execution can show ``mutant``: its own lines; but
    for a mutant of a module-level assignment to plain names (a constant, a table), the
    lines of ``reference/`` that read those names (as a name or an attribute), since the
    assignment itself runs at import, under no property, and acts only through its
    readers.  None when a reader is outside ``reference/`` (the target's components in
    ``conformance/``, which coverage does not measure): every property then."""
    own = frozenset((mutant.path, line)
                    for line in {mutant.stmt_line, *range(mutant.line, mutant.end_line + 1)})
    names = _module_binding(root / mutant.path, mutant.line)
    if not names:
        return own
    readers, dynamic = _readers(root)
    if any(mutant.path.startswith(prefix) for prefix in dynamic):
        return None
    found: set[tuple[str, int]] = set()
    for name in names:
        for path, line in readers.get(name, ()):
            if not path.startswith("reference/"):
                return None
            found.add((path, line))
    return frozenset(found)


def _module_binding(path: Path, line: int) -> tuple[str, ...]:
    """The names a module-level assignment covering ``line`` binds, if every target is a
    plain name; () for anything else."""
    for node in _tree(path).body:
        if node.lineno <= line <= (node.end_lineno or node.lineno):
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets = [node.target]
            else:
                return ()
            if all(isinstance(t, ast.Name) for t in targets):
                return tuple(t.id for t in targets if isinstance(t, ast.Name))
            return ()
    return ()


@functools.cache  # every module is read at start-up (_readers)
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


@functools.lru_cache(maxsize=2)
def _readers(root: Path) -> tuple[dict[str, tuple[tuple[str, int], ...]], frozenset[str]]:
    """Every line of ``reference/`` and ``conformance/`` that reads a name (a name load,
    an attribute of that name, or a name imported under another), name -> (module path,
    line) pairs; and the modules of ``reference/`` read by name at run time
    (``getattr(module, variable)``, ``vars(module)``, ``dir(module)``), as path prefixes:
    their bindings are read by no line that names them."""
    found: dict[str, set[tuple[str, int]]] = {}
    renamed: dict[str, set[str]] = {}
    dynamic: set[str] = set()
    for package in ("reference", "conformance"):
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            tree = _tree(path)
            modules = _module_aliases(tree, root)
            for node in ast.walk(tree):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                    found.setdefault(node.id, set()).add((rel, node.lineno))
                elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                    found.setdefault(node.attr, set()).add((rel, node.lineno))
                elif isinstance(node, ast.ImportFrom):
                    for alias in node.names:
                        if alias.asname and alias.asname != alias.name:
                            renamed.setdefault(alias.name, set()).add(alias.asname)
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                        and node.func.id in ("getattr", "vars", "dir") and node.args \
                        and isinstance(node.args[0], ast.Name) \
                        and node.args[0].id in modules \
                        and not (node.func.id == "getattr" and len(node.args) > 1
                                 and isinstance(node.args[1], ast.Constant)):
                    dynamic.add(modules[node.args[0].id])
    for name, others in renamed.items():
        for other in others:
            found.setdefault(name, set()).update(found.get(other, ()))
    return ({name: tuple(sorted(places)) for name, places in found.items()},
            frozenset(dynamic))


def _module_aliases(tree: ast.Module, root: Path) -> dict[str, str]:
    """Local names bound to a module or package of ``reference/`` by an import, mapped
    to its path (``reference/kfuncs.py``) or its directory (``reference/page_pool/``)."""
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            pairs = [(f"{node.module}.{a.name}", a.asname or a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            pairs = [(a.name, a.asname) for a in node.names if a.asname]
        else:
            continue
        for dotted, local in pairs:
            if not dotted.startswith("reference.") or local is None:
                continue
            rel = dotted.replace(".", "/")
            if (root / f"{rel}.py").exists():
                found[local] = f"{rel}.py"
            elif (root / rel).is_dir():
                found[local] = f"{rel}/"
    return found


def digest(root: Path = ROOT) -> str:
    """What the data was measured on: ``reference/`` and the suite (``conformance/``: a
    changed strategy changes which property runs a line)."""
    h = hashlib.sha256(source_digest(root).encode())
    for path in sorted((root / "conformance").rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def load(out: Path, root: Path = ROOT) -> Selection | None:
    """``out``'s selection data if it was measured on today's ``reference/`` and suite,
    else None."""
    path = out / SELECTION
    if not path.exists():
        return None
    try:
        doc = json.loads(path.read_text())
        if not isinstance(doc, dict) or doc.get("digest") != digest(root):
            return None  # stale: measured again by --coverage
        return Selection.from_json(doc)
    except (OSError, ValueError):  # json.JSONDecodeError is a ValueError
        return None  # damaged: measured again by --coverage, as a stale one is


def coverage_command(python: str, root: Path, data: Path, kernel: str | None,
                     report: Path | None = None) -> list[str]:
    """The ci suite under branch coverage of ``reference/``, each property's lines under
    its own context, at ``kernel`` (the default when None); the gates each property asks
    about go to :func:`gate_log` of ``data``."""
    return [python, "-m", "coverage", "run", "--branch", f"--source={root / 'reference'}",
            f"--data-file={data}", "-m", "conformance.mutation.suite", "--contexts",
            "--gate-log", str(gate_log(data)), "--profile", "ci",
            *(["--kernel", kernel] if kernel else []),
            *(["--report", str(report)] if report else [])]


def run_coverage(command: list[str], root: Path, kernel: str | None = None) -> None:
    """Run one coverage command; RuntimeError unless the suite passed the reference.

    A rule the reference itself fails at some kernel would 'kill' every mutant judged
    there, so it stops the measurement (at 6.12.0 a fixed xdp scenario did, until the
    component said not applicable).  The failing rules are read from the suite's JSON
    report (the command's ``--report``, or one added here)."""
    env = dict(os.environ, PYTHONPATH=str(root), PYTHONDONTWRITEBYTECODE="1")
    with tempfile.TemporaryDirectory(prefix="rx-coverage-") as tmp:
        if "--report" in command:
            report = Path(command[command.index("--report") + 1])
        else:
            report = Path(tmp) / "report.json"
            command = [*command, "--report", str(report)]
        proc = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True,
                              check=False)
        failed = failed_rules(report) if proc.returncode == 1 else ()
    if proc.returncode == 1:
        raise RuntimeError(f"the reference fails its own suite at kernel "
                           f"{kernel or 'default'}: "
                           f"{', '.join(failed) if failed else proc.stdout.strip()[-200:]}")
    if proc.returncode != 0:
        tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
        raise RuntimeError(f"the suite under coverage exited {proc.returncode}: {tail}")


def failed_rules(report: Path) -> tuple[str, ...]:
    """The rules a suite report (``rx-oracle conformance --report``) says failed."""
    try:
        doc = json.loads(report.read_text())
    except (OSError, json.JSONDecodeError):
        return ()
    return tuple(r["rule"] for r in doc.get("rules", []) if r.get("verdict") == "fail")


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


def gate_log(data: Path) -> Path:
    """Where a coverage run into ``data`` writes the gates each property asked about."""
    return data.with_name(data.name + ".gates.json")


def read_gates(data: Path) -> dict[str, frozenset[str]]:
    """Per gate rule, the contexts that asked for it in the coverage run into ``data``."""
    doc = json.loads(gate_log(data).read_text())
    return {rule: frozenset(contexts) for rule, contexts in doc.items()}


def measure(out: Path, default_data: Path, older: Iterable[str], *, root: Path = ROOT,
            python: str = sys.executable) -> Selection:
    """Write ``out/selection.json``: the default kernel's contexts from ``default_data``
    (reach's run), each ``older`` kernel's from a run of its own."""
    from reference.kernel import DEFAULT_KERNEL

    kernels = {str(DEFAULT_KERNEL): read_contexts(default_data, root)}
    gates = {str(DEFAULT_KERNEL): read_gates(default_data)}
    for kernel in older:
        data = (out / f".coverage-{kernel}").resolve()
        data.unlink(missing_ok=True)
        run_coverage(coverage_command(python, root, data, kernel), root, kernel)
        kernels[kernel] = read_contexts(data, root)
        gates[kernel] = read_gates(data)
    found = Selection(kernels, gates)
    (out / SELECTION).write_text(json.dumps(found.to_json(digest(root))) + "\n")
    return found

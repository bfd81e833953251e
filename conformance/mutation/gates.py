"""At which kernel versions to judge a mutant.

The ci run judges the default kernel only, so a mutant of the version gates
(``reference/kernel.py``: a stable backport moved by one sublevel, a mainline release
swapped) shows only at the versions where the mutated gate table and the pristine one
disagree. This module finds them: it loads both tables, has each parse candidate versions
of each supported series (every sublevel a gate names, one before it, 0, and the tree's
own) and asks every gate at what it parsed, and returns versions where some answer
differs: the first of each series before the second of any (:data:`MAX_VERSIONS`). A
mutant that changes no answer at any candidate (a description, what a bare series means)
is judged at each supported tree. Passing a full version such as ``6.12.62`` to
``--kernel`` is how a user names a stable release (KVER-001).

Any other mutant is judged at the default kernel first and, if it survives there, at
each older supported tree in turn (the runner stops at the first run that detects it):
code behind a gate, such as the attach-time checks that 6.17 and older make
(KFUNC-ATTACH-004), runs only at the trees the gate opens, and a survivor of the default
kernel alone is not yet a gap. A mutant already judged equivalent
(:mod:`conformance.mutation.equivalents`) is judged at the default kernel only, and so is
one whose line the default kernel's ci run executes, when a coverage report of today's
sources says so (``rx-oracle mutate --coverage`` into the same ``--out``): the extra runs
cost only the survivors nobody has judged yet whose code the default kernel never runs.
"""

from __future__ import annotations

import ast
import functools
import sys
import types
from pathlib import Path
from typing import Any

from conformance.mutation.mutator import Mutant

GATED = "reference/kernel.py"

#: At most this many disagreeing versions are run: the oldest of each series first
#: (newest series first), then the next of each. One is enough to detect where the
#: component applies; a second series guards against one where it does not (zcrx and
#: the cpumap entry program have no 6.12 prediction, so an entry changed everywhere
#: must also be judged at 6.18).
MAX_VERSIONS = 3


def _load(source: str) -> types.ModuleType | None:
    """The module ``source`` defines (its own name, not ``reference.kernel``), or None if
    it does not load."""
    name = "_rx_oracle_gate_table"
    module = types.ModuleType(name)
    sys.modules[name] = module  # attrs resolves the classes' module while defining them
    try:
        exec(compile(source, GATED, "exec"), module.__dict__)
    except Exception:  # a mutant that does not load is judged everywhere
        return None
    finally:
        del sys.modules[name]
    return module


@functools.lru_cache(maxsize=2)
def _pristine(source: str) -> types.ModuleType:
    """The repository's own gate table, loaded once per source text (every mutant asks
    for its supported trees)."""
    table = _load(source)
    if table is None:  # pragma: no cover - the repository's own kernel.py loads
        raise RuntimeError(f"{GATED} does not load")
    return table


def _candidates(*tables: Any) -> list[Any]:
    pristine = tables[0]
    subs: dict[tuple[int, int], set[int]] = {s: {0, v.sublevel}
                                              for s, v in pristine.SUPPORTED.items()}
    for table in tables:
        try:
            stables = [t for g in table.GATES.values() for t in g.since.stable]
        except (AttributeError, TypeError):  # a mutated table whose entries are mixed up
            continue
        for entry in stables:
            try:
                major, minor, sub = (int(x) for x in entry)
            except (TypeError, ValueError):
                continue
            if (major, minor) in subs:
                subs[(major, minor)] |= {sub, max(sub - 1, 0)}
    return [pristine.KernelVersion(m, n, s) for (m, n), found in sorted(subs.items())
            for s in sorted(found)]


def _answers(table: Any, version: Any) -> dict[str, bool | None]:
    out: dict[str, bool | None] = {}
    for rule in table.GATES:
        try:
            out[rule] = bool(table.gate(table.KernelVersion(*version_tuple(version)), rule))
        except Exception:  # a mutated gate that raises differs
            out[rule] = None
    return out


def _reading(table: Any, version: Any) -> dict[str, bool | None] | None:
    """Every gate's answer at the version the table's parser reads from ``version``'s
    full text (None when it refuses it): the suite names each version in full, so a parser
    mutant that reads ``6.12.0`` as the 6.12 tree shows only where the two answer a gate
    differently."""
    try:
        parsed = table.parse_kernel(str(version))
    except Exception:  # a mutated parser that raises differs
        return None
    return _answers(table, parsed)


def version_tuple(version: Any) -> tuple[int, int, int]:
    return (version.major, version.minor, version.sublevel)


def judged_trees(root: Path) -> tuple[str, ...]:
    """The versions a mutant outside the gate table is judged at, in order: every
    supported tree from the newest (the default) down, then the first release of each
    series whose gates answer otherwise than its supported tree (today 6.12.0: the
    page_pool ring limit of PP-INIT-002 is checked only before 6.12.63, so only there can
    a mutant of ``PP_RING_SIZE_LIMIT`` show)."""
    return _judged_trees((root / GATED).read_text())


@functools.lru_cache(maxsize=2)
def _judged_trees(source: str) -> tuple[str, ...]:
    pristine = _pristine(source)
    trees = sorted(pristine.SUPPORTED.values(), reverse=True)
    firsts = [pristine.KernelVersion(v.major, v.minor, 0) for v in trees]
    return (*(str(v) for v in trees),
            *(str(f) for f, v in zip(firsts, trees, strict=True)
              if f != v and _answers(pristine, f) != _answers(pristine, v)))


def reads_a_gate(mutant: Mutant, root: Path) -> bool:
    """Whether the function ``mutant`` is in calls ``gate()`` itself: its lines may carry a
    gate's answer in a local variable (``register_zcrx``'s ``large_buffers``), so a line the
    default kernel executes can still differ only at an older tree."""
    if not mutant.function:
        return False
    return mutant.function in _gated_functions((root / mutant.path).read_text())


@functools.lru_cache(maxsize=64)
def _gated_functions(source: str) -> frozenset[str]:
    """The qualified names (as :class:`Mutant` names them) of the functions of ``source``
    whose own body calls ``gate``."""
    tree = ast.parse(source)
    found: set[str] = set()

    def visit(node: ast.AST, scopes: tuple[str, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = (*scopes, child.name)
                if not isinstance(child, ast.ClassDef) and any(
                        isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                        and n.func.id == "gate" for n in ast.walk(child)):
                    found.add(".".join(inner))
                visit(child, inner)
            else:
                visit(child, scopes)

    visit(tree, ())
    return frozenset(found)


def kernels_for(mutant: Mutant, root: Path, *, default_only: bool = False) -> tuple[str, ...]:
    """The ``--kernel`` versions to judge ``mutant`` at, in order (() is the default
    kernel alone): for a mutant of the gate table, where the tables disagree, or every
    supported tree; for any other, :func:`judged_trees`, or the default alone when the
    caller says so (``default_only``: a mutant judged equivalent already, or one whose
    line the default kernel's run executes)."""
    source = (root / GATED).read_text()
    pristine = _pristine(source)
    everywhere = tuple(str(v) for _, v in sorted(pristine.SUPPORTED.items()))
    if mutant.path != GATED:
        return () if default_only else judged_trees(root)
    mutated = _load(mutant.apply(source))
    if mutated is None:
        return everywhere
    by_series: dict[tuple[int, int], list[str]] = {}
    for version in _candidates(pristine, mutated):
        if _reading(pristine, version) != _reading(mutated, version):
            by_series.setdefault((version.major, version.minor), []).append(str(version))
    rounds = [[versions[i] for _, versions in sorted(by_series.items(), reverse=True)
               if i < len(versions)]
              for i in range(max((len(v) for v in by_series.values()), default=0))]
    return tuple(v for batch in rounds for v in batch)[:MAX_VERSIONS] or everywhere

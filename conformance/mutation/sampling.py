"""Which mutants to run: every candidate of the chosen modules, or a seeded sample.

A sample is spread over components: the candidates are grouped by the primary component
of their module, each group is shuffled with the seed, and the groups are drawn from in
turn, so a small sample still covers every component instead of mirroring the module
sizes (mlx5 and page_pool alone would otherwise take most of it).  Candidates are only
checked (:meth:`~conformance.mutation.mutator.Mutant.valid`) when drawn, which keeps the
cost of a sample independent of the size of ``reference/``.

A module-level constant that no code of ``reference/`` or ``conformance/`` reads (a
header's value kept for the reader, a uapi constant the model never uses) is not a
candidate: no target answer can depend on it, so each of its mutants would only be one
more equivalent to judge by hand.
"""

from __future__ import annotations

import ast
import functools
import importlib
import random
from collections.abc import Iterable, Sequence
from pathlib import Path

from conformance.mutation.mutator import Mutant, mutants_of_source
from conformance.mutation.scope import components_for, module_name


def candidates(root: Path, modules: Iterable[str]) -> list[Mutant]:
    """Every candidate mutant of ``modules`` (paths relative to ``root``), in source order.

    The enum operator needs each module's namespace, so each module is imported: from
    ``root``, which must be the tree the running interpreter imports ``reference`` from.
    """
    found: list[Mutant] = []
    for path in modules:
        namespace = vars(importlib.import_module(module_name(path)))
        source = (root / path).read_text()
        unread = _unread_constant_lines(source, _names_read(root))
        found += [m for m in mutants_of_source(source, path, namespace)
                  if m.function or m.stmt_line not in unread]
    return found


@functools.cache
def _names_read(root: Path) -> frozenset[str]:
    """Every name loaded, and every attribute read, by the code of reference/ and
    conformance/ (the mutation tool itself aside)."""
    names: set[str] = set()
    files = [*(root / "reference").rglob("*.py"), *(root / "conformance").rglob("*.py")]
    for file in files:
        if "mutation" in file.relative_to(root).parts:
            continue
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                names.add(node.id)
            elif isinstance(node, ast.Attribute):
                names.add(node.attr)
    return frozenset(names)


def _unread_constant_lines(source: str, read: frozenset[str]) -> frozenset[int]:
    """The lines of module-level assignments binding only names nothing reads."""
    lines: set[int] = set()
    for stmt in ast.parse(source).body:
        targets = (stmt.targets if isinstance(stmt, ast.Assign)
                   else [stmt.target] if isinstance(stmt, ast.AnnAssign) else [])
        if targets and all(isinstance(t, ast.Name) and t.id not in read for t in targets):
            lines.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    return frozenset(lines)


def every_valid(root: Path, mutants: Sequence[Mutant]) -> list[Mutant]:
    """The valid mutants, each once: two operators can make the same change (an ``if``
    whose body is one statement, dropped as a body and as a statement), and the two share
    an id; running both would count one mutant twice."""
    sources = _Sources(root)
    unique = {m.id: m for m in reversed(mutants)}  # the first of each id wins
    return [m for m in mutants if unique.get(m.id) is m and m.valid(sources[m.path])]


def sample(root: Path, mutants: Sequence[Mutant], size: int, seed: int) -> list[Mutant]:
    """Up to ``size`` valid mutants, drawn round-robin over components, reproducibly."""
    rng = random.Random(seed)
    groups: dict[str, list[Mutant]] = {}
    for m in mutants:
        groups.setdefault(components_for(m.path)[0], []).append(m)
    queues = {name: rng.sample(group, len(group)) for name, group in sorted(groups.items())}
    sources = _Sources(root)
    chosen: list[Mutant] = []
    while len(chosen) < size and any(queues.values()):
        for name in sorted(queues):
            queue = queues[name]
            while queue:
                m = queue.pop()
                if m.valid(sources[m.path]):
                    chosen.append(m)
                    break
            if len(chosen) == size:
                break
    return chosen


class _Sources(dict[str, str]):
    """Module sources, read once."""

    def __init__(self, root: Path) -> None:
        super().__init__()
        self.root = root

    def __missing__(self, path: str) -> str:
        text = (self.root / path).read_text()
        self[path] = text
        return text

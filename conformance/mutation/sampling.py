"""Which mutants to run: every candidate of the chosen modules, or a seeded sample.

A sample is spread over components: the candidates are grouped by the primary component
of their module, each group is shuffled with the seed, and the groups are drawn from in
turn, so a small sample still covers every component instead of mirroring the module
sizes (mlx5 and page_pool alone would otherwise take most of it).  Candidates are only
checked (:meth:`~conformance.mutation.mutator.Mutant.valid`) when drawn, which keeps the
cost of a sample independent of the size of ``reference/``.
"""

from __future__ import annotations

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
        found += mutants_of_source((root / path).read_text(), path, namespace)
    return found


def every_valid(root: Path, mutants: Sequence[Mutant]) -> list[Mutant]:
    sources = _Sources(root)
    return [m for m in mutants if m.valid(sources[m.path])]


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

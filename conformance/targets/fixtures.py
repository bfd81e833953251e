"""``fixtures:DIR``: replays recorded observables.

Each ``*.jsonl`` file under DIR holds one fixture per line: a scenario and the
observables recorded for it (by the reference, or from a real driver elsewhere).
The target answers a scenario with the recorded observables of the identical
scenario, so the suite can compare a recording against today's reference.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.fixtures.record import FixtureError, fixture_texts, load_line, scenario_key
from conformance.scenario import Scenario
from conformance.targets.base import SIDES, Capabilities, NotApplicable, TargetUnavailable


class FixturesTarget:
    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.name = f"fixtures:{self.directory}"
        if not self.directory.is_dir():
            raise TargetUnavailable(f"{self.name}: not a directory")
        self.recorded: dict[str, dict[str, Any]] = {}
        self.scenarios: list[Scenario] = []
        self.components: set[str] = set()
        texts, problems = fixture_texts(self.directory)
        if problems:
            raise TargetUnavailable(f"{self.name}: {problems[0]}")
        for rel, text in texts:
            for lineno, line in enumerate(text.splitlines(), 1):
                if not line.strip():
                    continue
                where = f"{rel}:{lineno}"
                scenario, observables = load_fixture_line(line, where)
                self.recorded[scenario_key(scenario)] = observables
                self.scenarios.append(scenario)
                self.components.add(scenario.component)

    @property
    def capabilities(self) -> Capabilities:
        # A recording answers whatever form it recorded (protocol 1.2: every half).
        return Capabilities(frozenset(self.components), sides={
            name: SIDES for name in self.components if name == "mlx5"})

    def run(self, scenario: Scenario) -> dict[str, Any]:
        try:
            return self.recorded[scenario_key(scenario)]
        except KeyError:
            raise NotApplicable(f"{self.name} has no recording of this scenario") from None

    def close(self) -> None:
        pass


def load_fixture_line(line: str, where: str) -> tuple[Scenario, dict[str, Any]]:
    """Decode one fixture line, naming the file and line in any error."""
    try:
        _, scenario, observables = load_line(line, where)
    except FixtureError as exc:
        raise TargetUnavailable(str(exc)) from None
    return scenario, observables

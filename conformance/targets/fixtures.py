"""``fixtures:DIR``: replays recorded observables.

Each ``*.jsonl`` file under DIR holds one fixture per line: a scenario and the
observables recorded for it (by the reference, or from a real driver elsewhere).
The target answers a scenario with the recorded observables of the identical
scenario, so the suite can compare a recording against today's reference.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from conformance.scenario import Scenario, ScenarioError
from conformance.targets.base import Capabilities, TargetError

FIXTURE_FORMAT = "rx-oracle-fixture"
FIXTURE_VERSION = 1


def scenario_key(scenario: Scenario) -> str:
    """A stable digest of a scenario's canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(scenario.to_json(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


class FixturesTarget:
    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.name = f"fixtures:{self.directory}"
        if not self.directory.is_dir():
            raise TargetError(f"{self.name}: not a directory")
        self.recorded: dict[str, dict[str, Any]] = {}
        self.scenarios: list[Scenario] = []
        self.components: set[str] = set()
        for path in sorted(self.directory.rglob("*.jsonl")):
            for lineno, line in enumerate(path.read_text().splitlines(), 1):
                if not line.strip():
                    continue
                where = f"{path.relative_to(self.directory)}:{lineno}"
                scenario, observables = load_fixture_line(line, where)
                self.recorded[scenario_key(scenario)] = observables
                self.scenarios.append(scenario)
                self.components.add(scenario.component)

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(frozenset(self.components))

    def run(self, scenario: Scenario) -> dict[str, Any]:
        try:
            return self.recorded[scenario_key(scenario)]
        except KeyError:
            raise TargetError(f"{self.name}: no recording for this scenario") from None

    def close(self) -> None:
        pass


def load_fixture_line(line: str, where: str) -> tuple[Scenario, dict[str, Any]]:
    """Decode one fixture line, naming the file and line in any error."""
    try:
        doc = json.loads(line)
    except json.JSONDecodeError as exc:
        raise TargetError(f"{where}: not JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != FIXTURE_FORMAT:
        raise TargetError(f"{where}: not an {FIXTURE_FORMAT} record")
    if doc.get("version") != FIXTURE_VERSION:
        raise TargetError(f"{where}: fixture version {doc.get('version')!r} is not supported")
    try:
        scenario = Scenario.from_json(doc.get("scenario") or {})
    except ScenarioError as exc:
        raise TargetError(f"{where}: {exc}") from None
    observables = doc.get("observables")
    if not isinstance(observables, dict):
        raise TargetError(f"{where}: observables must be an object")
    return scenario, observables

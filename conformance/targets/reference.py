"""``reference``: the built-in model, answering every component it knows."""

from __future__ import annotations

from typing import Any

from conformance.components import registry
from conformance.scenario import Scenario
from conformance.targets.base import SIDES, Capabilities, TargetError
from reference.errors import OracleError


class ReferenceTarget:
    name = "reference"

    def __init__(self) -> None:
        self._components = registry()

    @property
    def capabilities(self) -> Capabilities:
        # Every half of every split component, on its own and together (protocol 1.2).
        return Capabilities(frozenset(self._components), sides={
            name: SIDES for name, c in self._components.items() if c.sides is not None})

    def run(self, scenario: Scenario) -> dict[str, Any]:
        component = self._components.get(scenario.component)
        if component is None:
            raise TargetError(f"reference: unknown component {scenario.component!r}")
        try:
            return component.expected(scenario)
        except OracleError as exc:
            raise TargetError(f"reference rejected the scenario: {exc}") from exc

    def close(self) -> None:
        pass

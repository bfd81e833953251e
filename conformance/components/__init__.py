"""Components: what a scenario exercises, and how the reference answers it.

Each component module provides a :class:`Component`: the reference's answer to a
scenario (``expected``), the rules that govern each observable path
(``rules_for``), and hypothesis strategies that generate its scenarios.  The
reference target and the properties both go through this registry, so no part of
the suite special-cases a target kind.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from conformance.observe import matches
from conformance.scenario import Scenario
from conformance.targets.base import NotApplicable
from reference.kernel import GATES, KernelVersion, gate, resolve_kernel


@attrs.frozen
class Component:
    name: str
    #: The reference model's observables for a scenario.
    expected: Callable[[Scenario], dict[str, Any]]
    #: (pattern over observable paths, rule ids) in priority order; first match wins.
    field_rules: tuple[tuple[str, tuple[str, ...]], ...]
    #: Optional finer attribution.  Called once per scenario (it may run the reference
    #: with a trace), it returns a function from an observable path to the rules the
    #: reference applied to produce that field; an empty answer falls back to
    #: ``field_rules``.
    attribute: Callable[[Scenario], Callable[[str], tuple[str, ...]]] | None = None
    #: The rule ids the reference applies while answering a scenario (from its trace):
    #: what a golden fixture of this scenario exercises.
    applied: Callable[[Scenario], set[str]] | None = None
    #: Protocol 1.2: the halves of the component a scenario exercises (``"device"``,
    #: ``"driver"``); None: the component is not split, every target runs it whole.
    sides: Callable[[Scenario], frozenset[str]] | None = None

    def sides_needed(self, scenario: Scenario) -> frozenset[str]:
        return frozenset() if self.sides is None else self.sides(scenario)

    def rules_for(self, path: str) -> tuple[str, ...]:
        """The rules ``field_rules`` gives a path, whatever the scenario."""
        for pattern, rules in self.field_rules:
            if matches(path, (pattern,)):
                return rules
        return ()

    def rules_in(self, scenario: Scenario) -> Callable[[str], tuple[str, ...]]:
        """Path -> rules for one scenario, as the comparison wants it."""
        attribute = self.attribute
        if attribute is None:
            return self.rules_for
        finer: list[Callable[[str], tuple[str, ...]]] = []

        def rules(path: str) -> tuple[str, ...]:
            if not finer:  # run the reference's trace only once a field needs it
                finer.append(attribute(scenario))
            return finer[0](path) or self.rules_for(path)

        return rules


def kernel_of(scenario: Scenario) -> KernelVersion:
    """KVER-001: the version the reference predicts a scenario for."""
    return resolve_kernel(scenario.kernel)


def require(scenario: Scenario, rule: str, what: str) -> KernelVersion:
    """The scenario's kernel, if it is on the side of ``rule``'s version gate the model
    describes; else :class:`NotApplicable`: the model has only the later behaviour, so it
    makes no prediction for this version (never a pass, never a guess)."""
    kernel = kernel_of(scenario)
    if not gate(kernel, rule):
        g = GATES[rule]
        raise NotApplicable(
            f"kernel {kernel}: {what}: before {g.commit} ({rule}, {g.since.describe()}) "
            f"{g.before}; the model describes only the later behaviour")
    return kernel


@functools.cache
def registry() -> Mapping[str, Component]:
    """Every module of this package that defines ``COMPONENT``, by component name.

    A new driver adds ``conformance/components/<driver>.py`` and is found here; nothing
    else in the suite lists components.
    """
    import importlib
    import pkgutil

    found: dict[str, Component] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        component = getattr(module, "COMPONENT", None)
        if isinstance(component, Component):
            found[component.name] = component
    return found

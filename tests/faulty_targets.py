"""Python targets that misbehave on some inputs (tests/test_target_faults.py).

Each answers like the reference except on scenarios with at least ``FAULTY_FRAMES``
frames, so hypothesis shrinks the fault to a scenario of exactly that many.
"""

from __future__ import annotations

from typing import Any

from conformance.scenario import Scenario
from conformance.targets.base import InputNotApplicable
from conformance.targets.reference import ReferenceTarget

FAULTY_FRAMES = 3


class _SomeInputs(ReferenceTarget):
    def run(self, scenario: Scenario) -> dict[str, Any]:
        observables = super().run(scenario)
        if len(scenario.frames) >= FAULTY_FRAMES:
            return self.fault(observables)
        return observables

    def fault(self, observables: dict[str, Any]) -> Any:
        raise NotImplementedError


class RaisesOnSomeInputs(_SomeInputs):
    name = "raises-on-some"

    def fault(self, observables: dict[str, Any]) -> Any:
        raise ZeroDivisionError("the port divides by the frame count")


class ExitsOnSomeInputs(_SomeInputs):
    name = "sys-exit-on-some"

    def fault(self, observables: dict[str, Any]) -> Any:
        raise SystemExit(4)


class GarbageOnSomeInputs(_SomeInputs):
    name = "garbage-on-some"

    def fault(self, observables: dict[str, Any]) -> Any:
        return ["not", "observables"]


class SchemaOnSomeInputs(_SomeInputs):
    name = "schema-on-some"

    def fault(self, observables: dict[str, Any]) -> Any:
        return {"packets": [{"hash": "0xdead", "hash_type": 0, "queue": 0}]}


class RaisesAlways(ReferenceTarget):
    name = "raises-always"

    def run(self, scenario: Scenario) -> dict[str, Any]:
        raise RuntimeError("this port is not finished")


class RssHashByteSwapped(ReferenceTarget):
    """Not a fault: a plain wrong answer (the hash in the wrong byte order), which the
    published Microsoft vectors catch with ``hash_type`` and ``queue`` masked."""

    name = "rss-hash-byte-swapped"

    def run(self, scenario: Scenario) -> dict[str, Any]:
        observables = super().run(scenario)
        if scenario.component == "rss":
            for packet in observables["packets"]:
                if packet["hash"] is not None:
                    packet["hash"] = int.from_bytes(packet["hash"].to_bytes(4, "big"), "little")
        return observables


class RefusesSomeInputs(ReferenceTarget):
    """Like a live kernel that refuses one helper: inputs of ``FAULTY_FRAMES`` frames or
    more cannot run here (InputNotApplicable), every other input is answered."""

    name = "refuses-some"

    def run(self, scenario: Scenario) -> dict[str, Any]:
        if len(scenario.frames) >= FAULTY_FRAMES:
            raise InputNotApplicable(f"{self.name}: {FAULTY_FRAMES} frames or more")
        return super().run(scenario)


class RefusesEveryInput(ReferenceTarget):
    """No input can run: each property is not applicable, with the reason."""

    name = "refuses-every"

    def run(self, scenario: Scenario) -> dict[str, Any]:
        raise InputNotApplicable(f"{self.name}: the kernel refuses everything")

"""The target interface every implementation under test provides."""

from __future__ import annotations

import importlib
import shlex
from typing import Any, Protocol, runtime_checkable

import attrs

from conformance.scenario import Scenario


class TargetError(Exception):
    """The target misbehaved: crashed, hung, spoke garbage or broke the protocol.

    This is not a verdict on any rule: the case is reported as a target error and
    the run goes on with the next case.
    """


@attrs.frozen
class Capabilities:
    """What a target implements and what it can report.

    ``components`` names the scenario components it accepts (``rss``, ``xdp``, ...).
    ``reports`` lists glob patterns over observable paths (``packets[*].verdict``);
    anything else the reference predicts is shown as "not checked".
    """

    components: frozenset[str]
    reports: tuple[str, ...] = ("*",)

    def to_json(self) -> dict[str, Any]:
        return {"components": sorted(self.components), "reports": list(self.reports)}


@runtime_checkable
class Target(Protocol):
    """An implementation under test.

    ``run`` takes a scenario and returns its observables as plain nested data in the
    schema of PROTOCOL.md; it raises :class:`TargetError` when it cannot.
    """

    name: str

    @property
    def capabilities(self) -> Capabilities: ...

    def run(self, scenario: Scenario) -> dict[str, Any]: ...

    def close(self) -> None: ...


def load_target(spec: str, *, timeout: float = 10.0) -> Target:
    """Build a target from its command-line spec (see the package docstring)."""
    kind, _, rest = spec.partition(":")
    if spec == "reference":
        from conformance.targets.reference import ReferenceTarget

        return ReferenceTarget()
    if kind == "python" and rest:
        return _python_target(rest)
    if kind == "exec" and rest:
        from conformance.targets.exec import ExecTarget

        return ExecTarget(shlex.split(rest), timeout=timeout)
    if spec in ("veth", "tun") or (kind == "iface" and rest):
        from conformance.targets.live import LiveTarget

        return LiveTarget(kind, rest)
    if kind == "qemu-fec":
        from conformance.targets.qemu_fec import QemuFecTarget

        return QemuFecTarget(rest)
    if kind == "fixtures" and rest:
        from conformance.targets.fixtures import FixturesTarget

        return FixturesTarget(rest)
    raise TargetError(
        f"unknown target {spec!r}: use reference, python:MODULE:OBJECT, exec:COMMAND, "
        "fixtures:DIR, veth, tun, iface:NAME,peer=PEER or qemu-fec[:BOARD]"
    )


def _python_target(spec: str) -> Target:
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise TargetError(f"python target {spec!r} must be MODULE:OBJECT")
    try:
        obj: Any = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise TargetError(f"cannot load python target {spec!r}: {exc}") from exc
    if isinstance(obj, type) or (callable(obj) and not isinstance(obj, Target)):
        obj = obj()
    if not isinstance(obj, Target):
        raise TargetError(
            f"python target {spec!r} does not implement the Target interface "
            "(name, capabilities, run, close)"
        )
    return obj

"""Scenarios: everything needed to reproduce one run, as plain data.

A scenario names the *component* under test (``rss``, ``xdp``, ``kfunc``,
``page_pool``; the driver issues add ``mlx5``, ``fec``, ``veth``, ...), its
configuration, the frames (scapy-built, carried as bytes), device-side events (ring
images, page_pool operations) and the XDP program as an op list.  The same value is
sent to an exec target as JSON, stored in a golden fixture and replayed against a
live kernel: there is one schema (``SCHEMA_VERSION``), documented in
``conformance/PROTOCOL.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

SCHEMA_VERSION = 1


class ScenarioError(ValueError):
    """A scenario or observables document that does not follow the schema."""


@attrs.frozen
class Scenario:
    component: str
    config: Mapping[str, Any] = attrs.field(factory=dict)
    frames: tuple[bytes, ...] = ()
    events: tuple[Mapping[str, Any], ...] = ()
    program: tuple[Mapping[str, Any], ...] | None = None
    per_packet_programs: Mapping[int, tuple[Mapping[str, Any], ...]] = attrs.field(factory=dict)
    rules: tuple[str, ...] = ()
    #: KVER-001: the kernel version the scenario is judged for, as the user or the target
    #: gave it (``"6.12"``, ``"6.18.44-cloud-amd64"``); empty means the default version.
    #: The suite fills it in before a scenario reaches a target (:func:`with_kernel`).
    kernel: str = ""

    def program_for(self, index: int) -> tuple[Mapping[str, Any], ...] | None:
        """The op list packet ``index`` runs: its own if it has one, else the default."""
        return self.per_packet_programs.get(index, self.program)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "schema": SCHEMA_VERSION,
            "component": self.component,
            "config": to_jsonable(self.config),
            "frames": [f.hex() for f in self.frames],
        }
        if self.events:
            doc["events"] = [to_jsonable(e) for e in self.events]
        if self.program is not None:
            doc["program"] = [to_jsonable(op) for op in self.program]
        if self.per_packet_programs:
            doc["per_packet_programs"] = {
                str(i): [to_jsonable(op) for op in ops]
                for i, ops in sorted(self.per_packet_programs.items())
            }
        if self.rules:
            doc["rules"] = list(self.rules)
        if self.kernel:
            doc["kernel"] = self.kernel
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Scenario:
        if not isinstance(doc, Mapping):
            raise ScenarioError(f"scenario must be a JSON object, got {type(doc).__name__}")
        schema = doc.get("schema", SCHEMA_VERSION)
        if schema != SCHEMA_VERSION:
            raise ScenarioError(
                f"scenario schema {schema!r} is not supported (this is {SCHEMA_VERSION})"
            )
        component = doc.get("component")
        if not isinstance(component, str) or not component:
            raise ScenarioError("scenario.component must be a non-empty string")
        frames = tuple(_hex(f, f"frames[{i}]") for i, f in enumerate(_list(doc, "frames")))
        program = doc.get("program")
        ppp = doc.get("per_packet_programs") or {}
        if not isinstance(ppp, Mapping):
            raise ScenarioError("scenario.per_packet_programs must be an object")
        try:
            per_packet = {
                int(k): tuple(_ops(v, f"per_packet_programs.{k}")) for k, v in ppp.items()
            }
        except ValueError as exc:
            raise ScenarioError(f"scenario.per_packet_programs: {exc}") from exc
        config = doc.get("config") or {}
        if not isinstance(config, Mapping):
            raise ScenarioError("scenario.config must be an object")
        kernel = doc.get("kernel", "")
        if not isinstance(kernel, str):
            raise ScenarioError("scenario.kernel must be a version string such as \"6.12\"")
        return cls(
            component=component,
            config=dict(config),
            frames=frames,
            events=tuple(_objects(doc, "events")),
            program=None if program is None else tuple(_ops(program, "program")),
            per_packet_programs=per_packet,
            rules=tuple(str(r) for r in _list(doc, "rules")),
            kernel=kernel,
        )


def to_jsonable(value: Any) -> Any:
    """Bytes become hex strings; tuples become lists; mappings keep their order."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    return value


def _list(doc: Mapping[str, Any], key: str) -> Sequence[Any]:
    value = doc.get(key) or []
    if not isinstance(value, list):
        raise ScenarioError(f"scenario.{key} must be a list")
    return value


def _objects(doc: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    items = _list(doc, key)
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise ScenarioError(f"scenario.{key}[{i}] must be an object")
    return [dict(item) for item in items]


def _ops(value: Any, where: str) -> list[Mapping[str, Any]]:
    if not isinstance(value, list):
        raise ScenarioError(f"scenario.{where} must be a list of ops")
    for i, op in enumerate(value):
        if not isinstance(op, Mapping) or not isinstance(op.get("op"), str):
            raise ScenarioError(f"scenario.{where}[{i}] must be an object with a string 'op'")
    return [dict(op) for op in value]


def _hex(value: Any, where: str) -> bytes:
    if not isinstance(value, str):
        raise ScenarioError(f"scenario.{where} must be a hex string")
    try:
        return bytes.fromhex(value)
    except ValueError as exc:
        raise ScenarioError(f"scenario.{where} is not valid hex: {exc}") from exc

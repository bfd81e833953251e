"""Validating structured input against the published JSON Schemas.

Every scenario that enters from outside (``explain --config/--program/--events``,
``replay``, a fixture record, a request to ``rx-oracle serve``) and every target's
observables are checked against the schemas in ``conformance/schemas/`` before the model
or the comparison sees them.  The schemas are the contract (PROTOCOL.md points at them),
so a tool author in another language validates against the same files.

A violation is one :class:`InputError` whose message names the field, the value, what
is wrong and the rule (a schema node's ``x-rule``, else the schema file): a typo such
as ``"comprssion"`` is refused with the known keys listed; ``"yes"`` is not ``true``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import jsonschema
import referencing
from jsonschema.exceptions import ValidationError

from conformance.scenario import Scenario

SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"
#: The prefix of every schema's ``$id``: ``urn:rx-oracle:schema:<file name>``.
ID_PREFIX = "urn:rx-oracle:schema:"
#: What ``frames.schema.json`` allows (resources: a scenario is held in memory whole).
MAX_FRAMES, MAX_FRAME_BYTES = 100_000, 65_535
#: Totals a schema cannot state (resources): component -> (event op, field, most in all).
#: A cpumap scenario holds every packet's frame, skb and pages in memory at once: the limit
#: counts pages, a packet's head and its frags (CPUMAP-SIM-007).
EVENT_TOTALS = {"cpumap": ("rx", "n", 100_000)}


def _pages_per_event(name: str, config: dict[str, Any]) -> int:
    """How many pages one unit of the limited field may take: a cpumap packet's head and
    up to the most frags its ``frags`` config gives a packet (CPUMAP-SIM-007)."""
    if name != "cpumap":
        return 1
    return 1 + max((int(n) for n in config.get("frags") or ()), default=0)


class InputError(ValueError):
    """Input that breaks its schema; the message is the one line a user sees."""


@functools.cache
def _registry() -> referencing.Registry[Any]:
    resources = []
    for path in sorted(SCHEMA_DIR.glob("*.schema.json")):
        doc = json.loads(path.read_text())
        resources.append((doc["$id"], referencing.Resource.from_contents(doc)))
    return referencing.Registry().with_resources(resources)


@functools.cache
def _validator(name: str) -> jsonschema.Draft202012Validator | None:
    """The validator of ``<name>.schema.json``, or None when there is no such schema."""
    path = SCHEMA_DIR / f"{name}.schema.json"
    if not path.exists():
        return None
    return jsonschema.Draft202012Validator(json.loads(path.read_text()), registry=_registry())


def schema_names() -> list[str]:
    return sorted(p.name.removesuffix(".schema.json") for p in SCHEMA_DIR.glob("*.schema.json"))


def problems(name: str, value: Any, where: str) -> Iterator[str]:
    """Each violation of schema ``name`` by ``value`` as one line (most relevant first)."""
    validator = _validator(name)
    if validator is None:
        return
    errors = sorted(validator.iter_errors(value), key=jsonschema.exceptions.relevance)
    for error in errors:
        yield _describe(error, where, name, validator.schema)


def check(name: str, value: Any, where: str) -> None:
    """Raise :class:`InputError` with the first violation of schema ``name``."""
    for line in problems(name, value, where):
        raise InputError(line)


def validate_scenario(scenario: Scenario) -> Scenario:
    """Check a scenario's parts against its component's schemas; return it unchanged."""
    from conformance.components import registry

    known = registry()
    if scenario.component not in known:
        raise InputError(f"scenario.component {scenario.component!r}: no such component; "
                         f"known: {', '.join(sorted(known))}")
    name = scenario.component
    if scenario.kernel:
        from reference.kernel import UnsupportedKernel, parse_kernel

        try:
            parse_kernel(scenario.kernel, "scenario.kernel")
        except UnsupportedKernel as exc:
            raise InputError(str(exc)) from None
    check(f"{name}.config", dict(scenario.config), "config")
    events = [dict(e) for e in scenario.events]
    if _validator(f"{name}.events") is not None:
        check(f"{name}.events", events, "events")
    elif events:
        raise InputError(f"events: the {name} component takes no events (got {len(events)})")
    total = EVENT_TOTALS.get(name)
    if total is not None:
        op, field, most = total
        asked = sum(int(e.get(field, 0)) for e in events if e.get("op") == op)
        per = _pages_per_event(name, dict(scenario.config))
        if asked * per > most:
            pages = f" of up to {per} pages each" if per > 1 else ""
            raise InputError(f"events: {op} events ask for {asked} {field} in all{pages}; at "
                             f"most {most}{' pages' if pages else ''} (resources)")
    if scenario.program is not None:
        check("program", [dict(op) for op in scenario.program], "program")
    for index, ops in scenario.per_packet_programs.items():
        check("program", [dict(op) for op in ops], f"per_packet_programs.{index}")
        # A ring image (MLX5-RING-001) has no frames: its indices count handler calls.
        bound = len(scenario.frames) if scenario.frames or not scenario.events else 1 << 32
        if not 0 <= index < max(bound, 1):
            raise InputError(f"per_packet_programs.{index}: there is no frame {index} "
                             f"(the scenario has {len(scenario.frames)})")
    # Frames are bytes by now (hex was decoded by Scenario.from_json): only their number
    # and sizes are left to check, as frames.schema.json states them.
    if len(scenario.frames) > MAX_FRAMES:
        raise InputError(f"frames: {len(scenario.frames)} frames; at most {MAX_FRAMES} "
                         "(schema frames.schema.json)")
    for i, frame in enumerate(scenario.frames):
        if len(frame) > MAX_FRAME_BYTES:
            raise InputError(f"frames[{i}]: {len(frame)} bytes; at most {MAX_FRAME_BYTES} "
                             "(schema frames.schema.json)")
    return scenario


def observables_problem(component: str, observables: Mapping[str, Any]) -> str:
    """The first way ``observables`` break the component's schema, or ``""``."""
    return next(problems(f"{component}.observables", observables, "observables"), "")


def _describe(error: ValidationError, where: str, name: str, root: Any) -> str:
    path = _path(where, error.absolute_path)
    rule = _rule(root, error.absolute_schema_path) or f"schema {name}.schema.json"
    value = _short(error.instance)
    kind = error.validator
    schema = error.schema if isinstance(error.schema, dict) else {}
    if kind == "additionalProperties" and isinstance(error.instance, dict):
        allowed = sorted(schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))
        return (f"{_path(path, [extra[0]]) if extra else path}: unknown key; known keys: "
                f"{', '.join(allowed) or '(none)'} ({rule})")
    if kind == "required":
        return f"{path}: {error.message} ({rule})"
    if kind == "type":
        return f"{path}: {value} is not {_article(error.validator_value)} ({rule})"
    if kind in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        words = {"minimum": "below the minimum", "maximum": "above the limit",
                 "exclusiveMinimum": "not above", "exclusiveMaximum": "not below"}[str(kind)]
        return f"{path}: {value} is {words} {error.validator_value} ({rule})"
    if kind in ("enum", "const"):
        allowed_values: list[Any] = (
            list(error.validator_value) if kind == "enum" and isinstance(
                error.validator_value, list) else [error.validator_value])
        return (f"{path}: {value} is not one of {', '.join(_short(v) for v in allowed_values)} "
                f"({rule})")
    if kind in ("maxItems", "minItems", "maxLength", "minLength"):
        return f"{path}: {error.message} ({rule})"
    return f"{path}: {value}: {error.message} ({rule})"


def _path(where: str, parts: Sequence[Any] | Any) -> str:
    text = where
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


def _rule(root: Any, schema_path: Iterable[Any]) -> str:
    """The ``x-rule`` of the failing schema node or of the nearest enclosing one."""
    found = ""
    node = root
    for step in schema_path:
        if isinstance(node, dict) and node.get("x-rule"):
            found = str(node["x-rule"])
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            break
    if isinstance(node, dict) and node.get("x-rule"):
        found = str(node["x-rule"])
    return f"rule {found}" if found else ""


def _article(type_name: Any) -> str:
    names = {"boolean": "a boolean (true or false)", "integer": "an integer",
             "object": "an object", "array": "a list", "string": "a string",
             "number": "a number", "null": "null"}
    if isinstance(type_name, list):
        return " or ".join(names.get(str(t), str(t)) for t in type_name)
    return names.get(str(type_name), str(type_name))


def _short(value: Any) -> str:
    text = json.dumps(value, default=repr)
    return text if len(text) <= 60 else text[:57] + "..."

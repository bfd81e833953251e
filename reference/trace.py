"""Rule-tagged trace events (SPEC: TRACE-001).

Every decision the reference takes can be recorded as a :class:`TraceEvent` that
names the rule it applied and the fields it looked at.  ``explain`` prints the
trace for a reader and a failed comparison quotes it: teaching and diagnosis are
one mechanism.  Tracing is optional; functions take ``trace=None`` and then
record nothing, so the hot path pays one ``is None`` test.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator

import attrs


@attrs.frozen
class TraceEvent:
    """One decision: the rule applied, a short sentence, and the fields consulted."""

    rule: str
    what: str
    fields: tuple[tuple[str, object], ...] = ()

    def render(self) -> str:
        detail = ", ".join(f"{k}={_fmt(v)}" for k, v in self.fields)
        return f"{self.rule:<18} {self.what}" + (f"  [{detail}]" if detail else "")


def _fmt(value: object) -> str:
    """A field as a reader of the kernel source expects it: names unquoted, enum members
    by name, None and booleans as JSON spells them, larger integers also in hex."""
    if isinstance(value, enum.Enum):
        return str(value.name)
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and value > 9:
        return f"{value} ({value:#x})"
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    if isinstance(value, dict):
        return "(" + ", ".join(f"{k}={_fmt(v)}" for k, v in value.items()) + ")"
    return str(value)


@attrs.define
class Trace:
    """An append-only list of :class:`TraceEvent`."""

    events: list[TraceEvent] = attrs.field(factory=list)

    def emit(self, rule: str, what: str, **fields: object) -> None:
        self.events.append(TraceEvent(rule, what, tuple(fields.items())))

    def rules(self) -> list[str]:
        """The rule ids in the order they were applied (duplicates kept)."""
        return [e.rule for e in self.events]

    def __iter__(self) -> Iterator[TraceEvent]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)

    def render(self) -> str:
        return "\n".join(e.render() for e in self.events)


def emit(trace: Trace | None, rule: str, what: str, **fields: object) -> None:
    """Record an event if a trace is being kept; a no-op otherwise."""
    if trace is not None:
        trace.emit(rule, what, **fields)

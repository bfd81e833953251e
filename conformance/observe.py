"""Observables, masks and the field-by-field comparison.

Observables are plain nested data (dicts, lists, ints, strings, bytes) so the same
values cross the exec protocol, fill golden fixtures and come back from a live
kernel.  They are compared as a flat, ordered list of ``(path, value)`` pairs:
``packets[0].verdict``, ``packets[0].kfuncs.rx_hash.rc``, ``counters.rx_xdp_drop``.

- A **mask** (PTF-style) is a set of glob patterns over paths whose values the
  scenario leaves unspecified; masked fields are never compared.
- A target **declares** the paths it can report (glob patterns); a field it cannot
  report is "not checked", which the report shows and never counts as a pass.
- The **first differing field** is reported with the rule ids that govern it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping

import attrs

Obs = Mapping[str, object]


def flatten(value: object, prefix: str = "") -> Iterator[tuple[str, object]]:
    """Yield ``(path, leaf)`` pairs in a stable order (dict insertion, list index)."""
    if isinstance(value, Mapping):
        if not value and prefix:
            yield prefix, {}
        for key, sub in value.items():
            yield from flatten(sub, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(value, (list, tuple)):
        if not value and prefix:
            yield prefix, []
        for i, sub in enumerate(value):
            yield from flatten(sub, f"{prefix}[{i}]")
    else:
        yield prefix, value


def matches(path: str, patterns: Iterable[str]) -> bool:
    """Whether ``path`` matches any pattern.

    Patterns are literal paths in which ``*`` stands for any run of characters
    (dots and brackets included): ``packets[*].hash``, ``counters.*``.  Brackets are
    literal, unlike in shell globs.
    """
    return any(_pattern(p).fullmatch(path) for p in patterns)


@functools.lru_cache(maxsize=512)
def _pattern(glob: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in glob.split("*")))


@attrs.frozen
class Mismatch:
    """One field where the target disagrees with the reference."""

    path: str
    expected: object
    actual: object
    rules: tuple[str, ...]

    def describe(self) -> str:
        rules = ", ".join(self.rules) or "no rule"
        return (f"{self.path}: expected {_show(self.expected, self.path)}, "
                f"got {_show(self.actual, self.path)} [{rules}]")


@attrs.frozen
class Comparison:
    """The outcome of comparing one run's observables with the reference's."""

    checked: tuple[str, ...]
    not_checked: tuple[str, ...]
    masked: tuple[str, ...]
    mismatches: tuple[Mismatch, ...]

    @property
    def ok(self) -> bool:
        return not self.mismatches

    @property
    def first(self) -> Mismatch | None:
        return self.mismatches[0] if self.mismatches else None


_MISSING = object()


def compare(
    expected: Obs,
    actual: Obs,
    *,
    mask: Iterable[str] = (),
    reports: Iterable[str] = ("*",),
    rules_for: Callable[[str], tuple[str, ...]] = lambda path: (),
) -> Comparison:
    """Compare field by field in the reference's order.

    ``reports`` lists what the target can report; a field outside it is not
    checked.  A field the target omits although it declared it is a mismatch.
    Fields the target reports beyond the reference are mismatches too (for
    example an extra packet or an extra transmitted frame).
    """
    mask, reports = tuple(mask), tuple(reports)
    exp = dict(flatten(expected))
    act = dict(flatten(actual))
    checked: list[str] = []
    not_checked: list[str] = []
    masked: list[str] = []
    mismatches: list[Mismatch] = []
    for path, want in exp.items():
        if matches(path, mask):
            masked.append(path)
            continue
        if not matches(path, reports):
            not_checked.append(path)
            continue
        checked.append(path)
        got = act.get(path, _MISSING)
        if got is _MISSING or not _equal(want, got):
            mismatches.append(
                Mismatch(path, want, None if got is _MISSING else got, rules_for(path))
            )
    for path, got in act.items():
        if path not in exp and matches(path, reports) and not matches(path, mask):
            mismatches.append(Mismatch(path, None, got, rules_for(path)))
    return Comparison(tuple(checked), tuple(not_checked), tuple(masked), tuple(mismatches))


def _equal(a: object, b: object) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return a == b


def _show(value: object, path: str = "") -> str:
    """A value as a failure message prints it: by its kernel name where the field is an
    errno or an enum (``-EBUSY (-16)``, ``XDP_PASS (2)``: conformance/readable.py), bytes
    as hex, larger integers also in hex."""
    from conformance.readable import field_text

    if isinstance(value, int) and not isinstance(value, bool):
        text_of = field_text(path)
        if text_of is not None:
            return text_of(value)
    if isinstance(value, (bytes, bytearray)):
        text = bytes(value).hex()
        return f"{len(value)} bytes {text[:64]}{'…' if len(text) > 64 else ''}"
    if isinstance(value, int) and value > 9:
        return f"{value} ({value:#x})"
    return repr(value)

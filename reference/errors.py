"""One exception hierarchy for the whole model (SPEC: ERR-001, ERR-002, ERR-003).

Bad input never produces a bare traceback from deep inside a parser and is never
accepted silently: it raises a subclass of :class:`OracleError` that names what was
wrong.  Outcomes the *kernel* reports through an errno (for example -EINVAL from
``bpf_xdp_adjust_head``) are return values, not exceptions: an exception always
means the caller handed the model something the kernel could never see, or asked
it to do something the kernel would WARN/BUG on.
"""

from __future__ import annotations


class OracleError(Exception):
    """Base class of every error the reference model raises."""

    rule: str | None = None


class MalformedInput(OracleError, ValueError):
    """Bytes that cannot be decoded (ERR-001).

    Carries the field that was wrong, its byte offset in the input, the offending
    value and the SPEC rule that the input breaks.
    """

    def __init__(
        self,
        what: str,
        *,
        field: str,
        offset: int | None = None,
        value: object = None,
        rule: str | None = None,
    ) -> None:
        self.what = what
        self.field = field
        self.offset = offset
        self.value = value
        self.rule = rule
        super().__init__(self._render())

    def _render(self) -> str:
        parts = [f"{self.field}"]
        if self.offset is not None:
            parts.append(f"at offset {self.offset}")
        head = " ".join(parts)
        tail = f" (value {self.value!r})" if self.value is not None else ""
        rule = f"[{self.rule}] " if self.rule else ""
        return f"{rule}{head}: {self.what}{tail}"

    def __reduce__(self) -> tuple[object, ...]:
        # Keep the error picklable (pytest-xdist, multiprocessing) despite kw-only args.
        return (_rebuild, (type(self), self.what, self.field, self.offset, self.value, self.rule))


class Truncated(MalformedInput):
    """The input ended before a field that must be present (ERR-001)."""

    def __init__(
        self,
        *,
        field: str,
        offset: int,
        needed: int,
        available: int,
        rule: str | None = None,
    ) -> None:
        self.needed = needed
        self.available = available
        super().__init__(
            f"needs {needed} bytes, only {available} available",
            field=field,
            offset=offset,
            rule=rule,
        )

    def __reduce__(self) -> tuple[object, ...]:
        return (
            _rebuild_truncated,
            (self.field, self.offset, self.needed, self.available, self.rule),
        )


class InvalidConfig(OracleError, ValueError):
    """A configuration value the modelled kernel code could never be given (ERR-002)."""

    def __init__(self, what: str, *, field: str, value: object, rule: str | None = None) -> None:
        self.what = what
        self.field = field
        self.value = value
        self.rule = rule
        prefix = f"[{rule}] " if rule else ""
        super().__init__(f"{prefix}{field}={value!r}: {what}")

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_config, (self.what, self.field, self.value, self.rule))


class StateViolation(OracleError, RuntimeError):
    """An operation the kernel would WARN or BUG on (ERR-002).

    For example returning a page to a pool it is not in flight from, or
    destroying a pool twice.  The model refuses, and its state is left as it was
    before the call, so nothing already recorded is lost.
    """

    def __init__(self, what: str, *, obj: str, rule: str | None = None) -> None:
        self.what = what
        self.obj = obj
        self.rule = rule
        prefix = f"[{rule}] " if rule else ""
        super().__init__(f"{prefix}{obj}: {what}")

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_state, (self.what, self.obj, self.rule))


def _rebuild(
    cls: type[MalformedInput],
    what: str,
    field: str,
    offset: int | None,
    value: object,
    rule: str | None,
) -> MalformedInput:
    return cls(what, field=field, offset=offset, value=value, rule=rule)


def _rebuild_truncated(
    field: str, offset: int, needed: int, available: int, rule: str | None
) -> Truncated:
    return Truncated(field=field, offset=offset, needed=needed, available=available, rule=rule)


def _rebuild_config(what: str, field: str, value: object, rule: str | None) -> InvalidConfig:
    return InvalidConfig(what, field=field, value=value, rule=rule)


def _rebuild_state(what: str, obj: str, rule: str | None) -> StateViolation:
    return StateViolation(what, obj=obj, rule=rule)

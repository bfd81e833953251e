"""A pytest plugin for the coverage runs of :mod:`conformance.mutation.selection`.

While a property runs (pytest's *call* phase), coverage.py records the lines it executes
under the property's node id (``test_rss.py::test_...``) as the dynamic context; lines run
at import, at collection or in a fixture's set-up keep the empty context, which says "any
property may depend on it".  coverage's own ``dynamic_context = test_function`` cannot be
used: inside a hypothesis property it names hypothesis's runner, not the property.

With :data:`GATE_LOG` set (``conformance.mutation.suite --gate-log PATH``) it also records
which version gates each property asks about (``reference.kernel.gate(kernel, rule)``
reads ``GATES[rule]``) and writes them to that file as ``{rule: [context, ...]}``: every
gate call goes through the one line of ``gate``, so lines cannot tell which gate a
property needs, and a mutant of one entry of the table can change only what asks for that
entry (:meth:`conformance.mutation.selection.Selection.properties`).

Loaded with ``-p conformance.mutation.contexts`` (``conformance.mutation.suite --contexts``)
in a process started by ``coverage run``; without a running coverage it does nothing.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

#: Where to write the gates each property asked about (None: not recorded).
GATE_LOG: Path | None = None
_current = [""]
_asked: dict[str, set[str]] = {}


class _Recording(Mapping[str, Any]):
    """``GATES``, noting each rule asked for under the running property's context."""

    def __init__(self, gates: Mapping[str, Any]) -> None:
        self.gates = gates

    def __getitem__(self, rule: str) -> Any:
        _asked.setdefault(rule, set()).add(_current[0])
        return self.gates[rule]

    def __iter__(self) -> Iterator[str]:
        return iter(self.gates)

    def __len__(self) -> int:
        return len(self.gates)


def pytest_configure(config: pytest.Config) -> None:
    if GATE_LOG is None:
        return
    import reference.kernel

    _asked.clear()
    reference.kernel.GATES = _Recording(reference.kernel.GATES)  # gate() reads the global


def pytest_unconfigure(config: pytest.Config) -> None:
    if GATE_LOG is None:
        return
    import reference.kernel

    if isinstance(reference.kernel.GATES, _Recording):
        reference.kernel.GATES = reference.kernel.GATES.gates
    GATE_LOG.write_text(json.dumps({rule: sorted(cs) for rule, cs in sorted(_asked.items())}))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    import coverage

    cov = coverage.Coverage.current()
    if cov is None:
        return (yield)
    cov.switch_context(item.nodeid)
    _current[0] = item.nodeid
    try:
        return (yield)
    finally:
        cov.switch_context("")
        _current[0] = ""

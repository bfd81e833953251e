"""A pytest plugin for the coverage runs of :mod:`conformance.mutation.selection`.

While a property runs (pytest's *call* phase), coverage.py records the lines it executes
under the property's node id (``test_rss.py::test_...``) as the dynamic context; lines run
at import, at collection or in a fixture's set-up keep the empty context, which says "any
property may depend on it".  coverage's own ``dynamic_context = test_function`` cannot be
used: inside a hypothesis property it names hypothesis's runner, not the property.

Loaded with ``-p conformance.mutation.contexts`` (``conformance.mutation.suite --contexts``)
in a process started by ``coverage run``; without a running coverage it does nothing.
"""

from __future__ import annotations

from collections.abc import Generator

import pytest


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    import coverage

    cov = coverage.Coverage.current()
    if cov is None:
        return (yield)
    cov.switch_context(item.nodeid)
    try:
        return (yield)
    finally:
        cov.switch_context("")

"""Targets: the implementations the suite checks against the reference.

A target spec on the command line selects one:

- ``reference``: the built-in model (the default);
- ``python:MODULE:OBJECT``: an in-process object implementing :class:`Target`
  (``OBJECT`` may also be a zero-argument factory returning one);
- ``exec:COMMAND``: a child process speaking the JSON-lines protocol of PROTOCOL.md;
- ``fixtures:DIR``: replays recorded observables (golden fixtures, driver traces).
"""

from __future__ import annotations

from conformance.targets.base import (
    Capabilities,
    NotApplicable,
    Target,
    TargetError,
    TargetUnavailable,
    load_target,
)

__all__ = ["Capabilities", "NotApplicable", "Target", "TargetError", "TargetUnavailable",
           "load_target"]

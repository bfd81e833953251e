"""Hypothesis settings profiles shared by the tests and the conformance suite.

- ``ci``: derandomized, no example database, bounded example counts: a CI run never
  flakes and always explores the same examples.
- ``dev``: the default for local runs; random, a little wider than ``ci``.
- ``deep``: long runs for people hunting bugs (stateful machines take 600 steps).

Select one with ``--hypothesis-profile NAME`` (pytest) or ``--profile NAME``
(``rx-oracle conformance``), or the ``HYPOTHESIS_PROFILE`` environment variable.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large]

PROFILES: dict[str, settings] = {
    "ci": settings(
        derandomize=True,
        database=None,
        max_examples=60,
        stateful_step_count=50,
        deadline=None,
        print_blob=True,
        suppress_health_check=_SLOW_OK,
    ),
    "dev": settings(
        max_examples=100,
        stateful_step_count=50,
        deadline=None,
        print_blob=True,
        suppress_health_check=_SLOW_OK,
    ),
    "deep": settings(
        max_examples=2000,
        stateful_step_count=600,
        deadline=None,
        print_blob=True,
        suppress_health_check=_SLOW_OK,
    ),
}

DEFAULT_PROFILE = "ci"


def register_profiles() -> None:
    """Register every profile and load the one the environment asks for."""
    for name, profile in PROFILES.items():
        settings.register_profile(name, profile)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", DEFAULT_PROFILE))

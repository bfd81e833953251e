"""Hypothesis settings profiles shared by the tests and the conformance suite.

- ``ci``: derandomized, no example database, bounded example counts: a CI run never
  flakes and always explores the same examples.
- ``dev``: the default for local runs; random, a little wider than ``ci``.
- ``deep``: long runs for people hunting bugs (stateful machines take 600 steps).

Select one with ``--hypothesis-profile NAME`` (pytest) or ``--profile NAME``
(``rx-oracle conformance``), or the ``HYPOTHESIS_PROFILE`` environment variable.

``RX_ORACLE_DATABASE=DIR`` (``rx-oracle conformance --database DIR``) gives the ``dev`` and
``deep`` profiles a shared example database in DIR: failing and interesting examples found
by one run (one machine, one xdist worker, one HypoFuzz process) are replayed first by the
next.  ``ci`` never uses a database, so CI stays reproducible.
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


def ignore_local_constants() -> None:
    """Make generation independent of which of our modules happen to be imported.

    Recent hypothesis versions also draw literal constants found in every loaded local
    module.  That set depends on import order and on how xdist spreads tests, so a
    derandomized run would change whenever any module changes, or between workers;
    golden fixtures would drift for unrelated edits.  The suite's strategies already
    aim at the interesting values, so the model turns the feature off (internal API:
    if it moves, nothing breaks, generation is merely less stable).
    """
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants
    except ImportError:  # pragma: no cover - a hypothesis without the feature
        return
    if hasattr(providers, "_get_local_constants"):
        empty = Constants()
        providers._get_local_constants = lambda: empty


DATABASE_ENV = "RX_ORACLE_DATABASE"


def register_profiles() -> None:
    """Register every profile and load the one the environment asks for."""
    ignore_local_constants()
    shared = os.environ.get(DATABASE_ENV)
    for name, profile in PROFILES.items():
        if shared and name != "ci":
            from hypothesis.database import DirectoryBasedExampleDatabase

            profile = settings(profile, database=DirectoryBasedExampleDatabase(shared))
        settings.register_profile(name, profile)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", DEFAULT_PROFILE))

"""pytest-benchmark: the fixture-generation rate, per component.

    pytest benchmarks/bench_fixtures.py --benchmark-only

Each timed call writes :data:`COUNT` fixtures of one component (seed 7) with
``conformance.fixtures.generate.generate``, as ``rx-oracle fixtures generate`` does;
``extra_info`` carries fixtures per second.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from conformance.fixtures.generate import generate, generators
from conformance.profiles import ignore_local_constants

COUNT = 10


@pytest.mark.benchmark(group=f"fixture generation, {COUNT} per call")
@pytest.mark.parametrize("component", generators())
def test_generate(benchmark: BenchmarkFixture, component: str, tmp_path: Path) -> None:
    ignore_local_constants()
    written = benchmark.pedantic(  # type: ignore[no-untyped-call]
        generate, args=(tmp_path,),
        kwargs={"components": [component], "count": COUNT, "seed_value": 7},
        rounds=3, iterations=1)
    assert written == {component: COUNT}
    if benchmark.stats is not None:
        benchmark.extra_info["fixtures_per_s"] = round(COUNT / benchmark.stats.stats.median, 1)

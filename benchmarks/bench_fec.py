"""pytest-benchmark: fec replay on the XDP_DROP and XDP_PASS paths beside scapy's
``Ether(raw)`` on the very same frames.

    pytest benchmarks/bench_fec.py --benchmark-only

One fec interface is opened per benchmark; every timed call streams :data:`FRAMES`
through it a NAPI budget (64) at a time (``workloads.FecStream``).
"""

from __future__ import annotations

import pytest
import workloads
from pytest_benchmark.fixture import BenchmarkFixture

FRAMES = workloads.frame_mix()
GROUP = "fec replay vs scapy, per 1024 frames"


@pytest.mark.benchmark(group=GROUP)
@pytest.mark.parametrize("verdict", sorted(workloads.PROGRAMS))
def test_fec_replay(benchmark: BenchmarkFixture, verdict: str) -> None:
    program = workloads.PROGRAMS[verdict]
    assert workloads.FecStream(program).outcomes(FRAMES) == {
        "recycled" if verdict == "XDP_DROP" else "skb"}
    stream = workloads.FecStream(program)
    assert benchmark(stream.replay, FRAMES) == len(FRAMES)
    workloads.note_per_packet(benchmark, len(FRAMES))


@pytest.mark.benchmark(group=GROUP)
def test_scapy_dissect(benchmark: BenchmarkFixture) -> None:
    assert benchmark(workloads.scapy_dissect, FRAMES) == len(FRAMES)
    workloads.note_per_packet(benchmark, len(FRAMES))

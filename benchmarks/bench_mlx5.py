"""pytest-benchmark: mlx5 replay on the XDP_DROP and XDP_PASS paths beside scapy's
``Ether(raw)`` on the very same frames (one group, so one table compares them).

    pytest benchmarks/bench_mlx5.py --benchmark-only

A timed call replays :data:`FRAMES` (``workloads.mlx5_replay``: one open RQ fed 256
frames at a time, NAPI budget 64); the per-packet median is in each benchmark's
``extra_info``.  ``python benchmarks/run.py`` prints the same comparison as ratios.
"""

from __future__ import annotations

import pytest
import workloads
from pytest_benchmark.fixture import BenchmarkFixture

FRAMES = workloads.frame_mix()
GROUP = "mlx5 replay vs scapy, per 1024 frames"


@pytest.mark.benchmark(group=GROUP)
@pytest.mark.parametrize("verdict", sorted(workloads.PROGRAMS))
def test_mlx5_replay(benchmark: BenchmarkFixture, verdict: str) -> None:
    program = workloads.PROGRAMS[verdict]
    assert workloads.mlx5_outcomes(FRAMES[:64], program) == {
        (verdict, "drop" if verdict == "XDP_DROP" else "skb")}
    handled = benchmark(workloads.mlx5_replay, FRAMES, program)
    assert handled == len(FRAMES)
    workloads.note_per_packet(benchmark, len(FRAMES))


@pytest.mark.benchmark(group=GROUP)
def test_scapy_dissect(benchmark: BenchmarkFixture) -> None:
    assert benchmark(workloads.scapy_dissect, FRAMES) == len(FRAMES)
    workloads.note_per_packet(benchmark, len(FRAMES))


@pytest.mark.benchmark(group=GROUP)
@pytest.mark.parametrize("verdict", sorted(workloads.PROGRAMS))
def test_mlx5_ring_replay(benchmark: BenchmarkFixture, verdict: str) -> None:
    """MLX5-RING-001: the driver alone on the ring images the device wrote for FRAMES."""
    images = workloads.mlx5_ring_images(FRAMES)
    handled = benchmark(workloads.mlx5_ring_replay, images, workloads.PROGRAMS[verdict])
    assert handled == len(FRAMES)
    workloads.note_per_packet(benchmark, len(FRAMES))

"""Device and driver on one ring: the round trip the tests and suite drive (MLX5-COMP-005).

``run`` lets the device write what fits, lets the driver poll with a budget, and repeats
until every completion has been read, returning what the handlers saw per poll.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from reference.errors import StateViolation
from reference.mlx5.cq import Mlx5eRxCq, PollResult, RqParams
from reference.mlx5.cqe import mlx5_cqe64
from reference.mlx5.device import (
    Completion,
    Compression,
    DeviceConfig,
    Mlx5Device,
    RqType,
    new_ring,
)
from reference.trace import Trace


@attrs.frozen
class RunResult:
    completions: tuple[Completion, ...]  # what the device would write uncompressed
    polls: tuple[PollResult, ...]
    stats: dict[str, int]
    #: The CQ as the driver left it: the run's own buffer, not a copy (a 2**24-slot CQ
    #: is 1 GiB).
    ring: bytearray

    @property
    def cqes(self) -> tuple[mlx5_cqe64, ...]:
        """Every CQE the RX handlers were called with, in order."""
        return tuple(c for p in self.polls for c in p.cqes)


def rq_params(config: DeviceConfig) -> RqParams:
    """The driver-side state bits that match a device configuration."""
    return RqParams(
        log_cq_size=config.log_cq_size,
        enhanced=config.compression is Compression.ENHANCED,
        hw_stridx=config.hw_stridx,
        striding=config.rq_type is RqType.STRIDING,
        log_wq_size=config.log_wq_size,
    )


def run(
    config: DeviceConfig,
    frames: Sequence[bytes],
    budget: int = 64,
    *,
    timestamps: Sequence[int] | None = None,
    start: int = 0,
    trace: Trace | None = None,
) -> RunResult:
    """Receive ``frames`` and poll until the ring is drained (MLX5-COMP-005)."""
    device = Mlx5Device(config, pc=start)
    driver = Mlx5eRxCq(rq_params(config), cc=start)
    ring = new_ring(config.log_cq_size, start)
    completions = device.receive(list(frames), None if timestamps is None else list(timestamps),
                                 trace)
    polls: list[PollResult] = []
    while True:
        wrote = device.write(ring, driver.cc, trace)
        before = driver.cc
        result = driver.poll(ring, budget, trace=trace)
        if result.work_done:
            polls.append(result)
        if device.pending == 0 and driver.cc == device.pc:
            break
        if not wrote and driver.cc == before:
            raise StateViolation(
                "no progress: the budget is smaller than an enhanced session",
                obj="mlx5 run", rule="MLX5-CQ-004",
            )
    return RunResult(tuple(completions), tuple(polls), driver.stats(), ring)

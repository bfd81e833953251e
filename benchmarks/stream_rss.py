"""Peak memory while streaming packets through replay: is it flat?

    python benchmarks/stream_rss.py [--model mlx5|fec] [--packets 10000000] [--json]

Frames cycle over one 1024-frame mix (``workloads.frame_mix``); even frames meet an
XDP_DROP program and odd ones XDP_PASS, so both paths run.  mlx5 keeps one RQ open
(``rx.open_stream``) and feeds it 256-frame chunks, fec keeps one interface open and
polls it a budget at a time.
``VmRSS`` and ``VmHWM`` are sampled every 1 % of the stream; a flat stream has the same
peak at 10 % as at 100 %.  ``benchmarks/run.py`` runs this in a child process so the
peak belongs to the stream alone.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import workloads


class _MixedMlx5:
    """mlx5: one RQ open for the whole stream, fed a chunk at a time; DROP for even frame
    numbers (within a chunk), PASS for odd."""

    def __init__(self) -> None:
        from reference.mlx5 import rx

        setup = workloads.MLX5
        self.stream = rx.open_stream(setup.device, setup.rq, workloads.NAPI_BUDGET,
                                     xdp_prog=True)

    @staticmethod
    def _program_for(i: int) -> Sequence[Mapping[str, Any]]:
        return workloads.XDP_PASS if i & 1 else workloads.XDP_DROP

    def replay(self, frames: Iterable[bytes]) -> int:
        handled = 0
        for batch in workloads.chunks(frames, workloads.MLX5_CHUNK):
            handled += len(self.stream.receive(batch, self._program_for).records)
        return handled


class _MixedFec(workloads.FecStream):
    """fec: DROP for frames in even slots, PASS in odd ones."""

    def _program_for(self, slot: int) -> Sequence[Mapping[str, Any]]:
        return workloads.XDP_PASS if slot & 1 else workloads.XDP_DROP


def measure(model: str, packets: int, *, samples: int = 100, pool_size: int = 1024,
            keep_logs: bool = False) -> dict[str, Any]:
    """Stream ``packets`` through ``model``; memory at every 1/``samples`` of the way.

    ``keep_logs``: fec keeps its DMA-sync logs (see ``workloads.FecStream``).
    """
    pool = workloads.frame_mix(pool_size)
    replay = (_MixedFec(workloads.XDP_DROP, keep_logs=keep_logs) if model == "fec"
              else _MixedMlx5()).replay

    replay(pool)  # warm-up: imports, lazily built tables, the interface's pages
    base = workloads.memory_kib()
    step = max(1, packets // samples)
    done = 0
    points: list[dict[str, Any]] = []
    start = time.perf_counter()
    while done < packets:
        n = min(step, packets - done)
        handled = replay(workloads.stream(pool, n))
        if handled != n:
            raise RuntimeError(f"{model}: {handled} of {n} packets handled")
        done += n
        points.append({"packets": done, "seconds": time.perf_counter() - start,
                       **workloads.memory_kib()})
    elapsed = time.perf_counter() - start
    return {"model": model, "packets": packets, "seconds": elapsed, "keep_logs": keep_logs,
            "packets_per_s": packets / elapsed, "base": base, "points": points}


def at_fraction(result: Mapping[str, Any], fraction: float) -> Mapping[str, Any]:
    """The first sample at or past ``fraction`` of the stream."""
    want = result["packets"] * fraction
    points: list[Mapping[str, Any]] = result["points"]
    return next(p for p in points if p["packets"] >= want)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("mlx5", "fec"), default="mlx5")
    parser.add_argument("--packets", type=int, default=10_000_000)
    parser.add_argument("--keep-logs", action="store_true",
                        help="fec: keep the DMA-sync logs (record=True) instead of counts only")
    parser.add_argument("--json", action="store_true", help="print the samples as JSON")
    args = parser.parse_args()
    result = measure(args.model, args.packets, keep_logs=args.keep_logs)
    if args.json:
        json.dump(result, sys.stdout)
        print()
        return 0
    print(f"{args.model}: {args.packets:,} packets in {result['seconds']:.1f} s "
          f"({result['packets_per_s']:,.0f} packets/s); after warm-up "
          f"VmRSS {result['base'].get('VmRSS', 0)} KiB")
    for fraction in (0.1, 0.5, 1.0):
        p = at_fraction(result, fraction)
        print(f"  {fraction:>4.0%}: VmRSS {p.get('VmRSS', 0):>8} KiB  "
              f"VmHWM {p.get('VmHWM', 0):>8} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Where the replay time goes: profile the mlx5 and fec RX paths on the benchmark frames.

    python benchmarks/profile_paths.py [--path mlx5-drop] [--tool cprofile|pyinstrument]
                                       [--frames 1024] [--repeat 4] [--top 30]

``cprofile`` (the standard library) prints the top functions by cumulative and by own
time, each as a share of the whole replay; it counts every call, so it inflates paths
made of many small calls.  ``pyinstrument`` (``pip install pyinstrument``, not a
project dependency) samples instead and prints its call tree.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

import workloads

ROOTS = (str(Path(__file__).resolve().parent.parent) + "/", str(Path(sys.prefix)) + "/")


def paths(frames: list[bytes]) -> dict[str, Callable[[], int]]:
    """The replays to profile, each over the same frames (a fresh fec interface each)."""
    return {
        "mlx5-drop": lambda: workloads.mlx5_replay(frames, workloads.XDP_DROP),
        "mlx5-pass": lambda: workloads.mlx5_replay(frames, workloads.XDP_PASS),
        "fec-drop": lambda: workloads.fec_replay(frames, workloads.XDP_DROP),
        "fec-pass": lambda: workloads.fec_replay(frames, workloads.XDP_PASS),
    }


def _where(key: tuple[str, int, str]) -> str:
    file, line, func = key
    for root in ROOTS:
        file = file.replace(root, "")
    return f"{func} ({file}:{line})" if line else func


def cprofile_table(run: Callable[[], int], top: int) -> str:
    """Top functions by cumulative and by own time, as shares of the profiled run."""
    prof = cProfile.Profile()
    prof.enable()
    packets = run()
    prof.disable()
    stats = pstats.Stats(prof)
    raw: dict[tuple[str, int, str], tuple[int, int, float, float, object]]
    raw = stats.stats  # type: ignore[attr-defined]
    total = max(ct for _, _, _, ct, _ in raw.values())
    calls = sum(nc for _, nc, _, _, _ in raw.values())
    lines = [f"{packets} packets, {total:.3f} s under cProfile "
             f"({total / packets * 1e6:.1f} us/packet with profiling overhead), "
             f"{calls / packets:.0f} function calls per packet"]

    def table(title: str, cumulative: bool) -> Iterable[str]:
        yield f"\n  by {title}:"
        yield f"  {'cum %':>6} {'own %':>6} {'calls/pkt':>9}  function"
        rows = sorted(raw.items(), key=lambda kv: kv[1][3] if cumulative else kv[1][2],
                      reverse=True)
        for key, (_, nc, tt, ct, _) in rows[:top]:
            yield (f"  {100 * ct / total:6.1f} {100 * tt / total:6.1f} {nc / packets:9.2f}  "
                   f"{_where(key)}")

    lines += table("cumulative time", True)
    lines += table("own time", False)
    return "\n".join(lines)


def pyinstrument_tree(run: Callable[[], int]) -> str:
    from pyinstrument import Profiler

    profiler = Profiler(interval=0.0005)
    profiler.start()
    run()
    profiler.stop()
    text: str = profiler.output_text(unicode=False, color=False)
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", action="append", choices=("mlx5-drop", "mlx5-pass",
                                                            "fec-drop", "fec-pass"))
    parser.add_argument("--tool", choices=("cprofile", "pyinstrument"), default="cprofile")
    parser.add_argument("--frames", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=4, help="replay the frames N times")
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    frames = workloads.frame_mix(args.frames)
    runs = paths(frames * args.repeat)
    paths(frames[:256])["mlx5-drop"]()  # warm-up: lazily built tables are not the path
    for name in args.path or list(runs):
        print(f"=== {name} ({args.tool})")
        if args.tool == "cprofile":
            print(cprofile_table(runs[name], args.top))
        else:
            print(pyinstrument_tree(runs[name]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

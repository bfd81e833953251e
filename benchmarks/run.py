"""rx-oracle benchmarks: the figures of issue 10 measured side by side in one run, printed
as one markdown table of ratios with the machine they came from.

    python benchmarks/run.py            # everything; streams 10M packets (long)
    python benchmarks/run.py --quick    # fewer rounds, a 200k-packet stream

(a) mlx5 replay per packet on the XDP_DROP and XDP_PASS paths (frames through device and
driver, and ring images through the driver alone), beside scapy's
``Ether(raw)`` on the very same frames and beside the kernel's own XDP_DROP cost;
(b) the same for fec; (c) the fixture-generation rate, beside hypothesis drawing the
same scenarios alone; (d) the wall time of ``rx-oracle conformance`` and of the live
veth and tun runs; (e) live veth packets checked per second, beside the same check on
the reference target; (f) peak RSS while streaming packets through replay (a child
process per model, so the peak is the stream's own).

Replay figures are medians over rounds in which the three contenders run in turn on
the same frames.  Nothing here is a pass/fail gate: the table says whether each
target was met on this machine.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import workloads

HERE = Path(__file__).resolve().parent
CONFORMANCE_BUDGET_S = 300.0  # issue 10: the default profile in <= 5 minutes, live included
SPEEDUP_TARGET = 10.0  # mlx5 replay >= 10x faster than scapy dissection
KERNEL_FACTOR_TARGET = 100.0  # <= 100x the kernel's XDP_DROP cost per packet
Row = dict[str, str]


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} µs"


def _met(ok: bool | None) -> str:
    return "—" if ok is None else ("yes" if ok else "**no**")


def side_by_side(cases: dict[str, Callable[[], int]], rounds: int) -> dict[str, float]:
    """Median seconds per packet of each case; every round runs all cases, in a rotated
    order, so drifting machine load falls on all of them alike."""
    names = list(cases)
    for name in names:
        cases[name]()  # warm-up: imports, lazily built tables
    samples: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[: r % len(names)]:
            start = time.perf_counter()
            packets = cases[name]()
            samples[name].append((time.perf_counter() - start) / packets)
    return {name: statistics.median(s) for name, s in samples.items()}


# --- (a), (b) ---------------------------------------------------------------------------


def replay_rows(model: str, frames: list[bytes], rounds: int) -> tuple[list[Row], dict[str, Any]]:
    cases: dict[str, Callable[[], int]] = {}
    for verdict, program in workloads.PROGRAMS.items():
        if model == "mlx5":
            cases[verdict] = functools.partial(workloads.mlx5_replay, frames, program)
        else:  # one interface opened up front; every round streams through it
            cases[verdict] = functools.partial(workloads.FecStream(program).replay, frames)
    if model == "mlx5":  # MLX5-RING-001: the driver alone on the device's ring images
        images = workloads.mlx5_ring_images(frames)
        for verdict, program in workloads.PROGRAMS.items():
            cases[f"ring {verdict}"] = functools.partial(workloads.mlx5_ring_replay, images,
                                                         program)
    cases["scapy"] = functools.partial(workloads.scapy_dissect, frames)
    per_packet = side_by_side(cases, rounds)
    scapy = per_packet["scapy"]
    letter = "a" if model == "mlx5" else "b"
    how = (f"one open RQ, {workloads.MLX5_CHUNK} frames per chunk" if model == "mlx5"
           else "one open interface")
    rows: list[Row] = []
    for verdict in workloads.PROGRAMS:
        t = per_packet[verdict]
        speedup = scapy / t
        target = f"≥ {SPEEDUP_TARGET:.0f}×" if model == "mlx5" else "—"
        rows.append({
            "id": letter, "figure": f"{model} replay per packet, {verdict} ({how}, "
                                    f"NAPI budget {workloads.NAPI_BUDGET})",
            "measured": _us(t), "beside": f"scapy `Ether(raw)` {_us(scapy)}",
            "ratio": f"{speedup:.2f}× scapy's speed", "target": target,
            "met": _met(speedup >= SPEEDUP_TARGET if model == "mlx5" else None)})
        if verdict == "XDP_DROP":
            factor = t / (workloads.KERNEL_DROP_NS * 1e-9)
            limit = workloads.KERNEL_DROP_NS * KERNEL_FACTOR_TARGET / 1000
            rows.append({
                "id": letter, "figure": f"{model} XDP_DROP beside the kernel's",
                "measured": _us(t), "beside": f"kernel {workloads.KERNEL_DROP_NS} ns",
                "ratio": f"{factor:,.0f}× the kernel",
                "target": f"≤ {KERNEL_FACTOR_TARGET:.0f}× (≤ {limit:.2f} µs)"
                if model == "mlx5" else "—",
                "met": _met(factor <= KERNEL_FACTOR_TARGET if model == "mlx5" else None)})
    for verdict in workloads.PROGRAMS if model == "mlx5" else ():
        t = per_packet[f"ring {verdict}"]
        rows.append({
            "id": letter, "figure": f"mlx5 ring-image replay per CQE, {verdict} (driver "
                                    f"alone on {workloads.MLX5_CHUNK}-slot images, NAPI "
                                    f"budget {workloads.NAPI_BUDGET})",
            "measured": _us(t), "beside": f"scapy `Ether(raw)` {_us(scapy)}; frame replay "
                                          f"{_us(per_packet[verdict])}",
            "ratio": f"{scapy / t:.2f}× scapy's speed, {per_packet[verdict] / t:.2f}× the "
                     "frame replay's", "target": "—", "met": "—"})
    return rows, {"per_packet_s": per_packet, "frames": len(frames), "rounds": rounds}


# --- (c) --------------------------------------------------------------------------------


def _draw_only(component: str, count: int, seed_value: int) -> None:
    """Hypothesis drawing ``count`` scenarios of ``component`` as the generator does,
    with nothing computed or written: the yardstick for the generator's own work."""
    from hypothesis import HealthCheck, Phase, given, seed, settings

    module = importlib.import_module(f"conformance.components.{component}")

    @seed(seed_value)
    @settings(max_examples=count, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck), derandomize=False)
    @given(scenario=module.scenarios())
    def draw(scenario: object) -> None:
        pass

    draw()


def fixture_rows(count: int, seed_value: int = 7) -> tuple[list[Row], dict[str, Any]]:
    from conformance.fixtures.generate import generate, generators
    from conformance.profiles import ignore_local_constants

    ignore_local_constants()
    names = generators()
    per: dict[str, dict[str, float]] = {}
    for name in names:
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            written = generate(Path(tmp), components=[name], count=count, seed_value=seed_value)
            gen = time.perf_counter() - start
        start = time.perf_counter()
        _draw_only(name, count, seed_value)
        draw = time.perf_counter() - start
        per[name] = {"fixtures": written[name], "generate_s": gen, "draw_s": draw}
    total = sum(p["fixtures"] for p in per.values())
    gen_s = sum(p["generate_s"] for p in per.values())
    draw_s = sum(p["draw_s"] for p in per.values())
    slowest = min(names, key=lambda n: per[n]["fixtures"] / per[n]["generate_s"])
    row = {"id": "c", "figure": f"fixture generation ({len(names)} components × {count}, "
                                f"seed {seed_value})",
           "measured": f"{total / gen_s:,.0f} fixtures/s (slowest: {slowest} "
                       f"{per[slowest]['fixtures'] / per[slowest]['generate_s']:,.0f}/s)",
           "beside": f"drawing the same scenarios only: {total / draw_s:,.0f}/s",
           "ratio": f"{gen_s / draw_s:.1f}× the drawing time", "target": "—", "met": "—"}
    return [row], {"components": per, "fixtures_per_s": total / gen_s}


# --- (d) --------------------------------------------------------------------------------


def _cli() -> list[str]:
    exe = shutil.which("rx-oracle")
    return [exe] if exe else [sys.executable, "-m", "conformance.cli"]


def conformance_rows() -> tuple[list[Row], dict[str, Any]]:
    from conformance.live import env

    runs: list[tuple[str, list[str]]] = [("rx-oracle conformance", [])]
    missing = env.missing()
    for drv in ("veth", "tun"):
        runs.append((f"rx-oracle conformance --target {drv} --driver {drv}",
                     ["--target", drv, "--driver", drv]))
    rows: list[Row] = []
    data: dict[str, Any] = {}
    total = 0.0
    for label, extra in runs:
        if extra and missing is not None:
            rows.append({"id": "d", "figure": f"`{label}` (live)", "measured": "skipped",
                         "beside": missing, "ratio": "—", "target": "—", "met": "—"})
            data[label] = {"skipped": missing}
            continue
        start = time.perf_counter()
        done = subprocess.run([*_cli(), "conformance", *extra], capture_output=True,
                              text=True, check=False)
        wall = time.perf_counter() - start
        total += wall
        summary = next((ln for ln in reversed(done.stdout.splitlines()) if "rules:" in ln),
                       f"exit {done.returncode}")
        rows.append({"id": "d", "figure": f"`{label}`" + (" (live)" if extra else ""),
                     "measured": f"{wall:.1f} s", "beside": summary.strip(),
                     "ratio": f"{wall / CONFORMANCE_BUDGET_S:.2f} of 5 min", "target": "—",
                     "met": "—"})
        data[label] = {"seconds": wall, "exit": done.returncode, "summary": summary}
    rows.append({"id": "d", "figure": "default conformance wall time, live runs included",
                 "measured": f"{total:.1f} s", "beside": "serial, one process each",
                 "ratio": f"{total / CONFORMANCE_BUDGET_S:.2f} of 5 min",
                 "target": "≤ 300 s on 2 cores",
                 "met": _met(total <= CONFORMANCE_BUDGET_S)})
    data["total_s"] = total
    return rows, data


# --- (e) --------------------------------------------------------------------------------


def live_rows(frames: int, rounds: int) -> tuple[list[Row], dict[str, Any]]:
    import live_veth

    from conformance.live import env

    missing = env.missing()
    if missing is not None:
        return ([{"id": "e", "figure": "live veth packets checked", "measured": "skipped",
                  "beside": missing, "ratio": "—", "target": "—", "met": "—"}],
                {"skipped": missing})
    live, _ = live_veth.measure(frames, rounds, "veth")
    ref, _ = live_veth.measure(frames, rounds, "reference")
    row = {"id": "e", "figure": f"live veth packets checked ({rounds} × {frames} frames, "
                               "kfunc + adjust_head + XDP_DROP)",
           "measured": f"{live:,.0f} packets/s",
           "beside": f"same check on the reference target {ref:,.0f} packets/s",
           "ratio": f"{live / ref:.2f}× the reference target's rate", "target": "—",
           "met": "—"}
    return [row], {"live_pps": live, "reference_pps": ref}


# --- (f) --------------------------------------------------------------------------------


def stream_rows(models: Sequence[tuple[str, int]]) -> tuple[list[Row], dict[str, Any]]:
    import stream_rss

    rows: list[Row] = []
    data: dict[str, Any] = {}
    for model, packets in models:
        done = subprocess.run([sys.executable, str(HERE / "stream_rss.py"), "--json",
                               "--model", model, "--packets", str(packets)],
                              capture_output=True, text=True, check=True)
        result = json.loads(done.stdout)
        marks = {f: stream_rss.at_fraction(result, f) for f in (0.1, 0.5, 1.0)}
        hwm = {f: int(p.get("VmHWM", 0)) for f, p in marks.items()}
        growth = hwm[1.0] - hwm[0.1]
        flat = growth <= max(1024, hwm[0.1] // 50)  # within 1 MiB or 2 %
        rows.append({
            "id": "f", "figure": f"peak RSS streaming {packets:,} packets through {model} "
                                 "replay (DROP/PASS alternating)",
            "measured": " / ".join(f"{hwm[f] / 1024:.1f}" for f in (0.1, 0.5, 1.0))
                        + " MiB at 10 / 50 / 100 %",
            "beside": f"{result['packets_per_s']:,.0f} packets/s in the stream",
            "ratio": f"{hwm[1.0] / hwm[0.1]:.3f} (100 % / 10 %), +{growth} KiB",
            "target": "flat", "met": _met(flat)})
        data[model] = result
    return rows, data


# --- the table ----------------------------------------------------------------------------


def table(rows: list[Row], facts: dict[str, str]) -> str:
    out = ["Machine: " + "; ".join(f"{k} {v}" for k, v in facts.items()), ""]
    cols = ("id", "figure", "measured", "beside", "ratio", "target", "met")
    heads = ("", "figure", "measured", "side by side", "ratio", "target", "met")
    out.append("| " + " | ".join(heads) + " |")
    out.append("|" + "---|" * len(cols))
    out += ["| " + " | ".join(r[c] for c in cols) + " |" for r in rows]
    return "\n".join(out)


STEPS = ("mlx5", "fec", "fixtures", "conformance", "live", "stream")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="fewer rounds and fixtures, a 200k-packet stream")
    parser.add_argument("--packets", type=int, default=None,
                        help="packets streamed through mlx5 for (f) (default 10M; "
                             "--quick 200k); fec streams a tenth")
    parser.add_argument("--frames", type=int, default=1024, help="frames in the replay mix")
    parser.add_argument("--rounds", type=int, default=None, help="replay rounds (7; quick 3)")
    parser.add_argument("--skip", action="append", default=[], choices=STEPS,
                        help="leave a step out (repeatable)")
    parser.add_argument("--json", type=Path, metavar="OUT.json", help="write every figure")
    args = parser.parse_args(argv)
    rounds = args.rounds or (3 if args.quick else 7)
    packets = args.packets or (200_000 if args.quick else 10_000_000)
    facts = workloads.machine()
    print("rx-oracle benchmarks on " + facts["cpu"], file=sys.stderr)

    frames = workloads.frame_mix(args.frames)
    seen = {(v, f) for p in workloads.PROGRAMS.values()
            for v, f in workloads.mlx5_outcomes(frames[:256], p)}
    if seen != {("XDP_DROP", "drop"), ("XDP_PASS", "skb")}:  # the paths we mean to time
        raise SystemExit(f"unexpected mlx5 verdicts/fates on the benchmark frames: {seen}")

    steps: list[tuple[str, Callable[[], tuple[list[Row], dict[str, Any]]]]] = [
        ("mlx5", lambda: replay_rows("mlx5", frames, rounds)),
        ("fec", lambda: replay_rows("fec", frames, rounds)),
        ("fixtures", lambda: fixture_rows(20 if args.quick else 100)),
        ("conformance", conformance_rows),
        ("live", lambda: live_rows(200 if args.quick else 1000, 2 if args.quick else 5)),
        ("stream", lambda: stream_rows([("mlx5", packets), ("fec", max(1, packets // 10))])),
    ]
    rows: list[Row] = []
    data: dict[str, Any] = {"machine": facts, "quick": args.quick}
    for name, step in steps:
        if name in args.skip:
            continue
        print(f"… {name}", file=sys.stderr)
        start = time.perf_counter()
        got, data[name] = step()
        rows += got
        print(f"  {name}: {time.perf_counter() - start:.1f} s", file=sys.stderr)
    print(table(rows, facts))
    if args.json:
        args.json.write_text(json.dumps(data, indent=2, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

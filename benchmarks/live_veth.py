"""Live veth: packets checked per second, end to end (frames built, injected into the
kernel's veth driver, the probe program's records read back, compared with the reference).

Run as root on a machine with clang, bpftool, libbpf and kernel BTF:

    python benchmarks/live_veth.py [--frames 1000] [--rounds 5]

It prints a figure; nothing here is a pass/fail gate (machines differ).
``benchmarks/run.py`` calls :func:`measure` for its table, beside the same check run
against the built-in reference target.
"""

from __future__ import annotations

import argparse
import sys
import time


def measure(frames: int = 1000, rounds: int = 5, target: str = "veth") -> tuple[float, float]:
    """Check ``rounds`` times one veth scenario of ``frames`` UDP frames against
    ``target`` ("veth": the running kernel; "reference": the built-in model).

    Returns (packets checked per second, seconds).  The caller checks
    ``conformance.live.env.missing()`` first for the live target.
    """
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    from conformance.check import TargetSession, check
    from conformance.components import veth
    from conformance.scenario import Scenario
    from conformance.targets.base import Target
    from conformance.targets.live import LiveTarget
    from conformance.targets.reference import ReferenceTarget

    # Explicit addresses: scapy never resolves a MAC (no ARP leaves the machine).
    eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    # Addresses never leave the run's own veth pair (AF_PACKET injection, no routing).
    built = tuple(bytes(eth / IP(src="192.0.2.1", dst="192.0.2.2")
                        / UDP(sport=1000 + i, dport=53)) for i in range(frames))
    program = ({"op": "kfunc", "name": "rx_hash"}, {"op": "adjust_head", "delta": 14},
               {"op": "return", "action": 1})
    scenario = Scenario(component="veth", frames=built, program=program)
    tgt: Target = ReferenceTarget() if target == "reference" else LiveTarget(target)
    try:
        session = TargetSession(tgt, target)
        start = time.monotonic()
        for _ in range(rounds):
            check(session, scenario, veth.COMPONENT, mask=veth.unspecified(scenario))
        elapsed = time.monotonic() - start
    finally:
        tgt.close()
    return rounds * len(built) / elapsed, elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--frames", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    from conformance.live import env

    missing = env.missing()
    if missing is not None:
        print(f"live veth benchmark skipped: {missing}", file=sys.stderr)
        return 0
    rate, elapsed = measure(args.frames, args.rounds)
    print(f"live veth: {rate:,.0f} packets/s checked end to end "
          f"({args.rounds} x {args.frames} frames in {elapsed:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

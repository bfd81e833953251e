"""Live veth: packets checked per second, end to end (frames built, injected into the
kernel's veth driver, the probe program's records read back, compared with the reference).

Run as root on a machine with clang, bpftool, libbpf and kernel BTF:

    python benchmarks/live_veth.py [--frames 1000] [--rounds 5]

It prints a figure; nothing here is a pass/fail gate (machines differ).
"""

from __future__ import annotations

import argparse
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    from conformance.live import env

    missing = env.missing()
    if missing is not None:
        print(f"live veth benchmark skipped: {missing}", file=sys.stderr)
        return 0

    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    # Explicit addresses: scapy never resolves a MAC (no ARP leaves the machine).
    ETH = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")

    from conformance.check import TargetSession, check
    from conformance.components import veth
    from conformance.scenario import Scenario
    from conformance.targets.live import LiveTarget

    # Addresses never leave the run's own veth pair (AF_PACKET injection, no routing).
    frames = tuple(bytes(ETH / IP(src="192.0.2.1", dst="192.0.2.2")
                         / UDP(sport=1000 + i, dport=53)) for i in range(args.frames))
    program = ({"op": "kfunc", "name": "rx_hash"}, {"op": "adjust_head", "delta": 14},
               {"op": "return", "action": 1})
    scenario = Scenario(component="veth", frames=frames, program=program)
    target = LiveTarget("veth")
    try:
        session = TargetSession(target, "veth")
        start = time.monotonic()
        for _ in range(args.rounds):
            check(session, scenario, veth.COMPONENT, mask=veth.unspecified(scenario))
        elapsed = time.monotonic() - start
    finally:
        target.close()
    rate = args.rounds * len(frames) / elapsed
    print(f"live veth: {rate:,.0f} packets/s checked end to end "
          f"({args.rounds} x {len(frames)} frames in {elapsed:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

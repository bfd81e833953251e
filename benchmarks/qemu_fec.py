"""The real fec driver on QEMU: frames checked per second, end to end (a scenario's op
lists and command sent as control frames, the device reopened, the frames injected, the
probe's records, ``ethtool -S`` and the netdev counters read back over the console,
compared with the reference), beside the same check on the built-in reference target.

Run as root on a machine with qemu-system-arm, clang and libbpf headers (the first run
downloads the guest kernel, ~150 MB unpacked, into the cache):

    python benchmarks/qemu_fec.py [--board sabrelite] [--frames 64] [--rounds 10]

It prints a figure; nothing here is a pass/fail gate (machines differ).  The boot is not
timed (it is printed apart): a run boots once and checks every scenario on that guest.
"""

from __future__ import annotations

import argparse
import sys
import time


def measure(frames: int = 64, rounds: int = 10, target: str = "sabrelite"
            ) -> tuple[float, float, float]:
    """Check ``rounds`` times one fec scenario of ``frames`` UDP frames (every fourth
    XDP_TX, the rest PASS, DROP and ABORTED) against ``target`` (a qemu-fec board, or
    "reference").  Returns (frames checked per second, seconds, boot seconds)."""
    from conformance.check import TargetSession, check
    from conformance.components import fec
    from conformance.scenario import Scenario
    from conformance.targets.base import Target
    from conformance.targets.qemu_fec import BOARD_CONFIG, QemuFecTarget
    from conformance.targets.reference import ReferenceTarget

    head = bytes.fromhex("020000000001" "020000000003" "0800" "4500002c00004000401100"
                         "00c0000201c0000202")
    built = tuple(head + (1000 + i).to_bytes(2, "big") + bytes.fromhex("0035001800")
                  + bytes(19) for i in range(frames))
    actions = (2, 1, 0, 3)
    programs = {i: ({"op": "get_buff_len"}, {"op": "return", "action": actions[i % 4]})
                for i in range(frames)}
    board = "sabrelite" if target == "reference" else target
    scenario = Scenario(component="fec", config=dict(BOARD_CONFIG[board]), frames=built,
                        program=({"op": "return", "action": 2},),
                        per_packet_programs=programs)
    started = time.monotonic()
    tgt: Target = ReferenceTarget() if target == "reference" else QemuFecTarget(target)
    boot = time.monotonic() - started
    try:
        session = TargetSession(tgt, target)
        start = time.monotonic()
        for _ in range(rounds):
            check(session, scenario, fec.COMPONENT)
        elapsed = time.monotonic() - start
    finally:
        tgt.close()
    return rounds * len(built) / elapsed, elapsed, boot


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--board", default="sabrelite")
    parser.add_argument("--frames", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()

    from conformance.live.qemu_fec import boot

    missing = boot.missing_tools()
    if missing is not None:
        print(f"qemu-fec benchmark skipped: {missing}", file=sys.stderr)
        return 0
    rate, elapsed, booted = measure(args.frames, args.rounds, args.board)
    ref, _, _ = measure(args.frames, args.rounds, "reference")
    print(f"qemu-fec:{args.board}: {rate:,.0f} frames/s checked end to end "
          f"({args.rounds} x {args.frames} frames in {elapsed:.2f} s; boot {booted:.1f} s); "
          f"reference target on the same check: {ref:,.0f} frames/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

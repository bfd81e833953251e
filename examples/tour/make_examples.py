"""Write the input files of the guided tour (docs/tour.md) into this directory.

The captures are ordinary pcap files made with scapy, with every timestamp 0 so that the
bytes do not depend on when they were made; the scenarios (``replay``) and the op lists
(``--program``, ``--events``) are the JSON the tour's commands read with ``@FILE``.
``tests/test_tour.py`` runs this into a temporary directory and checks that the committed
files are exactly what it writes.

    python examples/tour/make_examples.py [OUT_DIR]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Packet
from scapy.utils import wrpcap

#: Explicit addresses: scapy never resolves anything, and the frames are the same everywhere.
ETH = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
IPV4 = IP(src="10.0.0.1", dst="10.0.0.2")


def udp(sport: int, payload: int, *, vlan: int | None = None, prio: int = 0) -> Packet:
    """One IPv4/UDP frame to port 9 with ``payload`` bytes of b"x"."""
    l2: Packet = ETH / Dot1Q(vlan=vlan, prio=prio) if vlan is not None else ETH
    return l2 / IPV4 / UDP(sport=sport, dport=9) / (b"x" * payload)


#: The captures: (file, frames).  two-udp: a 242-byte frame, then an 82-byte one
#: (mlx5's per-RQ buffer with and without a fragment); udp: one 82-byte frame; vlan-udp:
#: the same flow with an 802.1Q tag (PCP 5, VID 100) for mlx5's rx_vlan_tag.
CAPTURES: dict[str, list[Packet]] = {
    "two-udp.pcap": [udp(1000, 200), udp(1001, 40)],
    "udp.pcap": [udp(1000, 40)],
    "vlan-udp.pcap": [udp(1000, 40, vlan=100, prio=5)],
}

#: The well-known RSS key (Microsoft's), which ``explain --driver mlx5`` also defaults to.
MS_KEY = ("6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c"
          "6a42b73bbeac01fa")

KFUNCS = [{"op": "kfunc", "name": "rx_hash"}, {"op": "kfunc", "name": "rx_timestamp"},
          {"op": "kfunc", "name": "rx_vlan_tag"}, {"op": "return", "action": 1}]

#: Three rounds of one NAPI poll of 64 packets on CPU 0, eight kthread iterations (batches
#: of 8) on CPU 1 and the stack freeing all 64 skbs.
CPUMAP_ROUNDS = [{"op": "rx", "n": 64}, {"op": "kthread", "n": 8}, {"op": "free", "n": 64}] * 3


def documents() -> dict[str, Any]:
    """The JSON files: scenarios for ``replay`` and op lists for ``--program``/``--events``."""
    hexes = {name: [bytes(p).hex() for p in frames] for name, frames in CAPTURES.items()}
    return {
        "mlx5-mxbuf.json": {
            "schema": 1, "component": "mlx5",
            "config": {"key": MS_KEY, "indir": [0], "rx_linear": False, "frag_size": 128},
            "frames": hexes["two-udp.pcap"],
            "program": [{"op": "adjust_meta", "delta": -8}, {"op": "return", "action": 2}],
        },
        "fec-xdp-tx.json": {
            "schema": 1, "component": "fec", "config": {},
            "frames": hexes["udp.pcap"],
            "program": [{"op": "return", "action": 3}],
            "events": [{"op": "rx"}, {"op": "napi"}],
        },
        "kfuncs.json": KFUNCS,
        "cpumap-rounds.json": CPUMAP_ROUNDS,
    }


def write(out: Path) -> list[Path]:
    """Write every tour input into ``out``; return the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, frames in CAPTURES.items():
        for frame in frames:
            frame.time = 0
        wrpcap(str(out / name), frames)
        written.append(out / name)
    for name, doc in documents().items():
        (out / name).write_text(json.dumps(doc, indent=1) + "\n")
        written.append(out / name)
    return written


if __name__ == "__main__":
    for path in write(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent):
        print(path)

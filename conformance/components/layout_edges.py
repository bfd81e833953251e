"""Fixed scenarios at the edges of the buffer layouts veth and tun compute, and of the
queue registration's ``frag_size`` (the full mutation run's survivors of
``reference/veth.py``, ``reference/tun.py``, ``reference/xdp/arch.py`` and
``reference/xdp/rxq.py``).

The random draws send frames of any length, but veth's generic programs keep their tail
growth out of the page_pool-dependent band (VETH-SKB-002) and tun's edge programs rarely
meet a frame whose ``SKB_DATA_ALIGN`` rounds up from one byte past a cache line: so
``ALIGN`` rounding down such a length, a cache line other than 64 bytes, or the "more
than half a page takes a whole page" test at the wrong bound gave the same answers.
Each case here grows the tail to exactly the end the layout allows.
"""

from __future__ import annotations

from typing import Any

from conformance.scenario import Scenario
from reference import tun, veth
from reference.fec.state import ARMHF, FEC_ENET_XDP_HEADROOM, SHIFT16_PAD
from reference.xdp.arch import X86_64, align_up

#: The rules the veth cases aim at (the frame size of the page_pool copy, the tail grow).
VETH_RULES = ("VETH-SKB-002", "XDP-ADJ-006")
#: The rules the tun cases aim at (the page fragment's ``buflen``, the tail grow).
TUN_RULES = ("TUN-BUF-001", "XDP-ADJ-006")
#: The rules the queue registration cases aim at.
RXQ_RULES = ("XDP-MEM-005",)
#: The rules the fec cases aim at (32-bit ARM's ``struct xdp_frame``, the head adjust).
FEC_RULES = ("FEC-RX-017", "XDP-ADJ-002")

_PASS: dict[str, Any] = {"op": "return", "action": 2}


def _frame(length: int) -> bytes:
    """``length`` bytes: an Ethernet header (IEEE local experimental ethertype 0x88b5),
    then a payload without zero bytes (a grown tail's zeroes must show)."""
    header = bytes.fromhex("020000000002" "020000000001" "88b5")
    return (header + bytes(i % 251 + 1 for i in range(length)))[:length]


def _veth_grow(length: int, frame_sz: int) -> int:
    """The tail growth that ends exactly at ``xdp_data_hard_end`` of a veth copy of
    ``length`` bytes in a ``frame_sz`` buffer."""
    return frame_sz - X86_64.shinfo_reserved - veth.XDP_PACKET_HEADROOM - length


def _veth_truesize(length: int) -> int:
    return align_up(length, 64) + X86_64.shinfo_reserved + veth.XDP_PACKET_HEADROOM


def veth_scenarios() -> list[tuple[str, Scenario]]:
    """veth's page_pool copy (VETH-SKB-002) grown to exactly its end:

    * a 65-byte frame (``SKB_DATA_ALIGN`` rounds it up to 128: truesize 704) grown by
      the 63 bytes to the end of its fragment, which every fragment size allows;
    * 1409 bytes (aligned 1472: truesize exactly 2048, half a page, still a fragment),
      grown by 63 likewise;
    * 1473 bytes (aligned 1536: truesize 2112, more than half a page, so a whole page)
      grown to the page's end (2047 bytes), and another grown one byte more (-EINVAL).
    """
    out: list[tuple[str, Scenario]] = []
    for length in (65, 1409):
        grow = _veth_grow(length, _veth_truesize(length))
        out.append((f"{length}-byte frame grown to its fragment's end", Scenario(
            component="veth", config={"path": "skb"}, frames=(_frame(length),),
            program=({"op": "adjust_tail", "delta": grow}, _PASS), rules=VETH_RULES)))
    length = 1473
    grow = _veth_grow(length, veth.PAGE_SIZE)
    out.append((f"{length}-byte frame in a whole page grown to its end", Scenario(
        component="veth", config={"path": "skb"}, frames=(_frame(length), _frame(length)),
        program=({"op": "adjust_tail", "delta": grow}, _PASS),
        per_packet_programs={1: ({"op": "adjust_tail", "delta": grow + 1}, _PASS)},
        rules=VETH_RULES)))
    return out


def veth_grow_sizes() -> list[tuple[int, int]]:
    """(frame length, tail growth) of each veth case's first packet (for the tests)."""
    out = []
    for _, scenario in veth_scenarios():
        ops = scenario.program or ()
        out.append((len(scenario.frames[0]), int(ops[0]["delta"])))
    return out


def tun_scenarios() -> list[tuple[str, Scenario]]:
    """tun's page fragment (TUN-BUF-001) grown to exactly ``buflen``'s end, and one byte
    more, for frames one byte past a cache line once the pad is added (65 bytes: buflen
    768; 3393 bytes: the shortest that fills the page, on a jumbo tap)."""
    out: list[tuple[str, Scenario]] = []
    for length, mtu in ((65, 1500), (3393, 3500)):
        layout = tun.tun_build_skb_layout(length)
        grow = layout.frame_sz - X86_64.shinfo_reserved - layout.headroom - length
        out.append((f"{length}-byte frame grown to buflen's end", Scenario(
            component="tun", config={"mtu": mtu}, frames=(_frame(length), _frame(length)),
            program=({"op": "adjust_tail", "delta": grow}, _PASS),
            per_packet_programs={1: ({"op": "adjust_tail", "delta": grow + 1}, _PASS)},
            rules=TUN_RULES)))
    return out


def rxq_scenarios() -> list[tuple[str, Scenario]]:
    """XDP-MEM-005: ``xdp_rxq_info.frag_size`` is a u32; a queue registered with one of
    2**31 or U32_MAX registers (0) like any other (the draws register 0 or a frag page's
    size).  The multi-buffer packet's tail grow then meets ``frag_size > frame_sz``:
    -EOPNOTSUPP (XDP-ADJ-008)."""
    out: list[tuple[str, Scenario]] = []
    for frag_size in (2**31, 2**32 - 1):
        out.append((f"queue registered with frag_size {frag_size:#x}", Scenario(
            component="xdp",
            config={"frag_size": 128, "linear_max": 128,
                    "rxq_ops": [{"op": "reg", "frag_size": frag_size},
                                {"op": "reg_mem_model", "mem_type": 2}]},
            frames=(_frame(60), _frame(300)),
            program=({"op": "adjust_tail", "delta": 1}, _PASS),
            rules=RXQ_RULES)))
    return out


def fec_scenarios() -> list[tuple[str, Scenario]]:
    """FEC-RX-017 on 32-bit ARM (``armhf``): ``struct xdp_frame`` is 32 bytes there, so
    ``bpf_xdp_adjust_head`` may move ``data`` down to 32 bytes above
    ``data_hard_start`` and not one byte further (XDP-ADJ-002), with and without the
    SHIFT16 pad (``racc``: two bytes more headroom).  The draws pick both architectures
    but rarely the exact delta of each."""
    out: list[tuple[str, Scenario]] = []
    for racc in (False, True):
        room = FEC_ENET_XDP_HEADROOM + (SHIFT16_PAD if racc else 0) - ARMHF.sizeof_xdp_frame
        out.append((f"armhf head moved to the xdp_frame reserve, racc {racc}", Scenario(
            component="fec", config={"arch": "armhf", "racc": racc},
            frames=(_frame(60), _frame(60)),
            program=({"op": "adjust_head", "delta": -room}, _PASS),
            per_packet_programs={1: ({"op": "adjust_head", "delta": -room - 1}, _PASS)},
            rules=FEC_RULES)))
    return out

"""Fixed cases for the skb built from an ``xdp_frame`` and the frame and memory-model code
under it (``reference/skb.py``, ``reference/xdp/frame.py``, ``reference/xdp/mem.py``):
each a road the random draws of the cpumap and xdp components miss, found by surviving
mutants of those modules (see conformance/MUTANTS.md).  No ``COMPONENT`` here: the cases
run on the cpumap and xdp components (``test_cpumap_skb_from_changed_frames``,
``test_xdp_frame_and_mem_model_edges``).
"""

from __future__ import annotations

from typing import Any

from conformance.scenario import Scenario

#: The rules :func:`cpumap_skb_edge_scenarios` aims at (the property spells them out again
#: for ``rx-oracle spec`` and checks the two agree).
CPUMAP_SKB_EDGE_RULES = ("SKB-BUILD-001", "SKB-BUILD-002")


def _cpumap(config: dict[str, Any]) -> Scenario:
    """Two packets through the entry's program, built into skbs and freed."""
    events = ({"op": "rx", "n": 2}, {"op": "kthread", "n": 1}, {"op": "free", "n": 2})
    return Scenario(component="cpumap", config=config, events=events,
                    rules=CPUMAP_SKB_EDGE_RULES)


def cpumap_skb_edge_scenarios() -> list[tuple[str, Scenario]]:
    """What ``__xdp_build_skb_from_frame`` takes from a frame the entry's program changed:
    metadata the program put in front of the packet (``skb_metadata_set(skb,
    xdpf->metasize)``, SKB-BUILD-001: ``meta_len`` 8); and an 802.3 frame (length field
    0x05DC) whose payload starts 0xFFFF, cut by the program to leave exactly 2 bytes after
    the MAC header (``eth_type_trans`` still reads them: raw 802.3) or 1 (the read fails:
    802.2) (SKB-BUILD-002).  The draws keep 46 bytes or more after the MAC header and
    put metadata only now and then before an XDP_PASS."""
    raw = {"frame_len": 60, "ethertype": 0x05DC, "raw_802_3": True}

    def cut_to(length: int) -> list[dict[str, Any]]:
        return [{"op": "adjust_tail", "delta": length - 60}, {"op": "return", "action": 2}]

    return [
        ("metadata before the packet", _cpumap({"second_prog": [
            {"op": "adjust_meta", "delta": -8},
            {"op": "write", "offset": -8, "data": "0102030405060708"},
            {"op": "return", "action": 2}]})),
        ("802.3 frame cut to two payload bytes", _cpumap({**raw, "second_prog": cut_to(16)})),
        ("802.3 frame cut to one payload byte", _cpumap({**raw, "second_prog": cut_to(15)})),
    ]


#: The rules :func:`xdp_frame_edge_scenarios` aims at (spelled out again by the property).
XDP_FRAME_EDGE_RULES = ("XDP-FRAME-002", "XDP-MEM-005")


def xdp_frame_edge_scenarios() -> list[tuple[str, Scenario]]:
    """The frame conversion and the queue's memory model at bounds the draws miss: a
    40-byte buffer (``frame_sz`` 40, just large enough for a ``struct xdp_frame``) and a
    39-byte one sent with XDP_TX: 26 or 25 bytes of headroom cannot hold the frame, so
    ``xdp_convert_buff_to_frame`` fails with -ENOSPC before it writes anything
    (XDP-FRAME-002); and a page_pool
    registration without a pool (-EINVAL, the type already written, no allocator id), then
    the queue unregistered, or registered again (which unregisters it first): with id 0
    ``xdp_unreg_mem_model`` destroys no page_pool (XDP-MEM-005)."""
    frame = bytes(i + 1 for i in range(14))
    tx = ({"op": "return", "action": 3},)
    failed_pool = {"op": "reg_mem_model", "mem_type": 2, "allocator": False}
    return [
        ("frame_sz 40, XDP_TX", Scenario(
            component="xdp", config={"frame_sz": 40, "headroom": 26}, frames=(frame,),
            program=tx, rules=XDP_FRAME_EDGE_RULES)),
        ("frame_sz 39, XDP_TX", Scenario(  # shorter than the header: -ENOSPC all the same
            component="xdp", config={"frame_sz": 39, "headroom": 25}, frames=(frame,),
            program=tx, rules=XDP_FRAME_EDGE_RULES)),
        ("page_pool registration without a pool, then unreg", Scenario(
            component="xdp", config={"rxq_ops": [{"op": "reg"}, failed_pool, {"op": "unreg"}]},
            frames=(frame,), program=({"op": "return", "action": 1},),
            rules=XDP_FRAME_EDGE_RULES)),
        ("page_pool registration without a pool, then reg", Scenario(
            component="xdp", config={"rxq_ops": [{"op": "reg"}, failed_pool, {"op": "reg"}]},
            frames=(frame,), program=({"op": "return", "action": 1},),
            rules=XDP_FRAME_EDGE_RULES)),
    ]

"""The ``tun`` component: an op-list XDP program on frames written to a tap device.

config:  ``mtu`` (default 1500): the tap's MTU.  frames: Ethernet frames of 14 ..
         mtu + 14 bytes, written one per ``write`` to a non-blocking tap fd, each small
         enough for ``tun_build_skb`` to run the native program: the aligned pad, frame
         and shared info fit one page (TUN-BUF-001; a larger frame takes another path,
         out of this component's scope).
observables: ``packets[i]`` = ``{"ops", "action", "data", "meta", "len"}`` as in the
         ``xdp`` component.  tun has no metadata ops: every kfunc is -EOPNOTSUPP
         (TUN-KF-001).
"""

from __future__ import annotations

from typing import Any

from hypothesis import event
from hypothesis import strategies as st

from conformance.components import Component
from conformance.components.driver_xdp import (
    action_name,
    narrate_ops,
    run_on_buffer,
    with_explain_defaults,
)
from conformance.components.xdp import PASS_PROGRAM, edge_ops, op_lists
from conformance.scenario import Scenario
from conformance.strategies.frames import ethernet_frames
from reference import tun
from reference.errors import InvalidConfig
from reference.kernel import resolve_kernel
from reference.trace import Trace

MAX_FRAME = 1514
ETH_HLEN = 14
#: A tap MTU at which frames reach the one-page limit of ``tun_can_build_skb``.
JUMBO_MTU = 3500
#: The longest frame whose buffer fills the page exactly, and the shortest that does
#: (``align_up(len + pad, 64) + shinfo == PAGE_SIZE``), and one below that.
PAGE_EDGE_LENGTHS = (3456, 3393, 3392)


def _packet(scenario: Scenario, i: int) -> tuple[dict[str, Any], bool]:
    frame = scenario.frames[i]
    max_frame = int(scenario.config.get("mtu", 1500)) + ETH_HLEN
    if not ETH_HLEN <= len(frame) <= max_frame or not tun.tun_can_build_skb(len(frame)):
        raise InvalidConfig("a tap frame is 14 .. mtu + 14 bytes and fits one page with "
                            "the pad and the shared info", field=f"frames[{i}]",
                            value=len(frame), rule="TUN-BUF-001")
    ops = scenario.program_for(i) or PASS_PROGRAM
    layout = tun.tun_build_skb_layout(len(frame), resolve_kernel(scenario.kernel))
    packet, run, _ = run_on_buffer(frame, ops, headroom=layout.headroom,
                                   frame_sz=layout.frame_sz, meta_valid=layout.meta_valid,
                                   metadata_ops=tun.TUN_XDP_METADATA_OPS, ctx=None)
    return packet, tun.headroom_exposed(ops, run.records)


def expected(scenario: Scenario) -> dict[str, Any]:
    return {"packets": [_packet(scenario, i)[0] for i in range(len(scenario.frames))]}


def unspecified(scenario: Scenario) -> tuple[str, ...]:
    """Bytes a program exposed from the never-written headroom (TUN-BUF-002)."""
    paths: list[str] = []
    for i in range(len(scenario.frames)):
        if _packet(scenario, i)[1]:
            paths += [f"packets[{i}].data", f"packets[{i}].meta"]
    return tuple(paths)


_FIELD_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("packets[*].ops[*].rc", ("TUN-KF-001", "TUN-BUF-001")),
    ("packets[*].ops*", ("TUN-KF-001",)),
    ("packets[*].data", ("TUN-BUF-001", "TUN-BUF-002")),
    ("packets[*].meta", ("TUN-BUF-001", "TUN-BUF-002")),
    ("packets[*].*", ("TUN-BUF-001",)),
)

COMPONENT = Component(name="tun", expected=expected, field_rules=_FIELD_RULES)


# --- teaching -----------------------------------------------------------------------------

#: ``rx-oracle explain --driver tun --config '{}'``: a tap of the default MTU.
EXPLAIN_DEFAULTS: dict[str, Any] = {"mtu": 1500}


def explain(scenario: Scenario) -> str:
    """Narrate each frame written to the tap: the buffer ``tun_build_skb`` lays out for it
    (headroom, ``buflen``, metadata support), each op of the program with its return code
    (every kfunc -EOPNOTSUPP: tun has no metadata ops) and the verdict.  Without frames
    one IPv4/TCP frame is written; without a program, the three kfuncs and XDP_PASS."""
    scenario, notes = with_explain_defaults(scenario)
    expected(scenario)  # the frame checks (TUN-BUF-001), as a target is judged
    kernel = resolve_kernel(scenario.kernel)
    lines = [*notes, f"tun: tap, MTU {scenario.config.get('mtu', 1500)}, non-blocking "
                     "writes, no metadata ops (TUN-KF-001)"]
    kfunc_rules = {name: ("TUN-KF-001",) for name in ("rx_hash", "rx_timestamp", "rx_vlan_tag")}
    for i, frame in enumerate(scenario.frames):
        trace = Trace()
        ops = scenario.program_for(i) or PASS_PROGRAM
        layout = tun.tun_build_skb_layout(len(frame), kernel)
        packet, run, _ = run_on_buffer(frame, ops, headroom=layout.headroom,
                                       frame_sz=layout.frame_sz, meta_valid=layout.meta_valid,
                                       metadata_ops=tun.TUN_XDP_METADATA_OPS, ctx=None,
                                       trace=trace)
        lines.append(f"packet {i}: {len(frame)} bytes -> {action_name(run.action)}, "
                     f"{packet['len']} bytes after the program (TUN-BUF-001)")
        lines.append(f"  tun_build_skb -> page fragment, headroom {layout.headroom} "
                     f"(TUN_RX_PAD {tun.TUN_RX_PAD} + XDP_PACKET_HEADROOM), buflen "
                     f"{layout.frame_sz}, metadata "
                     f"{'supported' if layout.meta_valid else 'unsupported'} (TUN-BUF-001)")
        lines += narrate_ops(ops, run, kfunc_rules)
        if tun.headroom_exposed(ops, run.records):
            lines.append("  headroom exposed -> those bytes were never written, the packet's "
                         "and metadata's values unspecified (TUN-BUF-002)")
    return "\n".join(lines)


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    """Frames and a program; a third of the time the first frame gets a program aimed at
    the bounds of tun's layout (its headroom, its ``buflen``: TUN-BUF-001)."""
    frames = draw(st.lists(ethernet_frames().filter(lambda f: 14 <= len(f) <= MAX_FRAME),
                           min_size=1, max_size=4))
    config: dict[str, Any] = {}
    if draw(st.integers(0, 3)) == 0:
        # A jumbo tap: the first frame's buffer fills the page exactly (or all but one
        # cache line): the one-page test of tun_can_build_skb decides at its bound.
        event("tun: a frame at the one-page limit")
        config["mtu"] = JUMBO_MTU
        length = draw(st.sampled_from(PAGE_EDGE_LENGTHS))
        frames[0] = frames[0] + bytes(length - len(frames[0]))
    per_packet = {}
    if draw(st.integers(0, 2)) == 0:
        event("tun: program at the layout's bounds")
        layout = tun.tun_build_skb_layout(len(frames[0]))
        per_packet[0] = tuple(draw(edge_ops(headroom=layout.headroom,
                                            frame_sz=layout.frame_sz, linear=len(frames[0]))))
    return Scenario(component="tun", config=config, frames=tuple(frames),
                    program=tuple(draw(op_lists())), per_packet_programs=per_packet,
                    rules=("TUN-BUF-001", "TUN-KF-001"))

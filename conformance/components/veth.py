"""The ``veth`` component: an op-list XDP program on the receiving end of a veth pair.

config:  ``path`` (default ``"skb"``: frames sent by the peer's stack, e.g. AF_PACKET,
         so each arrives as an skb with little headroom; ``"xdp_frame"``: frames sent
         with AF_PACKET from this end to the peer, whose XDP program returns XDP_TX, so
         each arrives back as an xdp_frame without skb: VETH-FRAME-001; no ``oob_vlan``
         and no XDP_TX there, which the peer would bounce back forever); ``peer_xdp`` (default true:
         the peer end runs an XDP program, so its NAPI takes XDP_TX frames);
         ``oob_vlan`` (optional ``{"proto": 0x8100 | 0x88a8, "tci": u16}``: every frame
         carries that out-of-band (hw-accel) tag, as pushed by the sender's stack with
         ``txvlan`` on, on top of whatever the frame bytes hold; or a list with one such
         tag or null per frame).
         ``attach`` (optional ``{"peer_mtu": 68 .. 65535, "frags": bool, "rx_queues":
         1 .. 8, "peer_tx_queues": 1 .. 8}``: no frames; a program, frags-aware or not, is
         attached to the receiving end, which had none and has ``rx_queues`` rx queues
         (default 1), its peer's MTU set to ``peer_mtu`` first, the peer with
         ``peer_tx_queues`` tx queues (default 1): VETH-MTU-001).
frames:  Ethernet frames of 14 .. 1514 bytes (the peer's MTU 1500 + header), sent with
         AF_PACKET; in-band VLAN tags stay in the bytes (VETH-KF-007).
program / per_packet_programs: the op lists (PROTOCOL.md).
observables: ``packets[i]`` = ``{"ops", "action", "data", "meta", "len"}`` as in the
         ``xdp`` component, and ``counters``: the deltas of the receiving end's
         ``rx_queue_0_*`` and ``tx_queue_0_*`` ethtool counters over the scenario
         (VETH-STAT-*).
         An ``rx_hash`` record's ``hash`` is the model's stand-in: it is masked in
         comparisons and checked through its equalities instead (VETH-KF-005).
         With ``attach``: ``attach`` = ``{"rc", "peer_max_mtu"}``, the attach's errno and
         the peer's ``max_mtu`` (``ip -d link``) after it.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
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
from conformance.components.xdp import PASS_PROGRAM, op_lists
from conformance.readable import rc_text, value_text, vlan_tci_text
from conformance.scenario import Scenario
from conformance.strategies.frames import ethernet_frames, header_cases, ip_frames
from reference import veth
from reference.errors import InvalidConfig
from reference.kfuncs import XdpRssHashType
from reference.trace import Trace
from reference.xdp.buff import XdpBuff

MAX_FRAME = 1500 + veth.ETH_HLEN
#: Never compared: the kernel's hash uses a per-boot random key (VETH-KF-005).
HASH_MASK = ("packets[*].ops[*].hash",)


def _check_frame(i: int, frame: bytes) -> None:
    if not veth.ETH_HLEN <= len(frame) <= MAX_FRAME:
        raise InvalidConfig("a veth frame is 14 .. 1514 bytes (peer MTU 1500)",
                            field=f"frames[{i}]", value=len(frame), rule="VETH-SKB-001")


def oob_tags(scenario: Scenario) -> list[tuple[int, int] | None]:
    """``config.oob_vlan`` as one (proto, tci) or None per frame (VETH-KF-003)."""
    tag = scenario.config.get("oob_vlan")
    if isinstance(tag, list):
        if len(tag) != len(scenario.frames):
            raise InvalidConfig("oob_vlan as a list needs one entry per frame",
                                field="config.oob_vlan", value=tag, rule="VETH-KF-003")
        return [_tag(t) for t in tag]
    return [_tag(tag)] * len(scenario.frames)


def _tag(tag: Any) -> tuple[int, int] | None:
    if tag is None:
        return None
    proto, tci = int(tag["proto"]), int(tag["tci"])
    if proto not in (0x8100, 0x88A8) or not 0 <= tci <= 0xFFFF:
        # bpf_skb_vlan_push and the stack push only 802.1Q and 802.1ad tags.
        raise InvalidConfig("oob_vlan.proto must be 0x8100 or 0x88a8, tci 16 bits",
                            field="config.oob_vlan", value=tag, rule="VETH-KF-003")
    return proto, tci


def _oob_vlan(scenario: Scenario, i: int) -> dict[str, Any]:
    tag = oob_tags(scenario)[i]
    if tag is None:
        return {}
    return {"vlan_present": True, "vlan_proto": tag[0], "vlan_tci": tag[1]}


def _packet(scenario: Scenario, i: int) -> tuple[dict[str, Any], bool, str]:
    """One frame through veth_xdp_rcv_skb: observables, unspecified-bytes flag, tx outcome."""
    frame_path = _frame_path(scenario)
    frame = scenario.frames[i]
    _check_frame(i, frame)
    ops = scenario.program_for(i) or PASS_PROGRAM
    # AF_PACKET: little headroom, so it is copied (VETH-SKB-001); the tag, if any, is the
    # sender's out-of-band one (VETH-KF-003).  On the xdp_frame path the copy is the
    # peer's, whose program's XDP_TX turned it into the xdp_frame this end receives: the
    # same buffer, but no skb (VETH-FRAME-001).
    skb = veth.VethSkb(frame, **_oob_vlan(scenario, i))
    layout = veth.veth_convert_skb_to_xdp_buff(skb)

    def ctx(xdp: XdpBuff) -> veth.VethXdpBuff:
        return veth.VethXdpBuff(None if frame_path else skb, xdp, layout.headroom)

    # Only a tail growth looks at frame_sz: otherwise one run stands for both sizes.
    grows = any(op["op"] == "adjust_tail" and int(op["delta"]) > 0 for op in ops)
    sizes = (layout.frame_sz_min, layout.frame_sz_max) if grows else (layout.frame_sz_min,)
    results = [run_on_buffer(frame, ops, headroom=layout.headroom, frame_sz=size,
                             metadata_ops=veth.VETH_XDP_METADATA_OPS, ctx=ctx)
               for size in sizes]
    packet, run, frame_len = results[0]
    if frame_path and run.action == veth.XDP_TX:
        raise InvalidConfig("XDP_TX of an xdp_frame goes back to the peer, whose program "
                            "sent it: the pair would bounce it forever", field="program",
                            value=None, rule="VETH-FRAME-001")
    if any(other[0] != packet or other[2] != frame_len for other in results[1:]):
        # VETH-SKB-002: the outcome depends on which page_pool fragment the copy got.
        raise InvalidConfig("outcome depends on the page_pool fragment size",
                            field="program", value=None, rule="VETH-SKB-002")
    tx = veth.veth_xdp_tx_outcome(frame_len is not None, frame_len or 0,
                                  peer_napi=bool(scenario.config.get("peer_xdp", True)))
    return packet, veth.headroom_exposed(ops, run.records), tx


#: The last scenario's per-packet results: a property asks for the mask and the
#: expectation of the same scenario object, so each packet is modelled once.
_last: list[tuple[Scenario, list[tuple[dict[str, Any], bool, str]]]] = []


def _frame_path(scenario: Scenario) -> bool:
    """``config.path``: ``"xdp_frame"`` (VETH-FRAME-001) or the default ``"skb"``."""
    path = scenario.config.get("path", "skb")
    if path not in ("skb", "xdp_frame"):
        raise InvalidConfig("path is skb or xdp_frame", field="config.path", value=path,
                            rule="VETH-FRAME-001")
    if path == "xdp_frame" and scenario.config.get("oob_vlan") is not None:
        raise InvalidConfig("the xdp_frame path carries no out-of-band tag (no skb)",
                            field="config.oob_vlan", value=scenario.config["oob_vlan"],
                            rule="VETH-FRAME-001")
    return bool(path == "xdp_frame")


def _packets(scenario: Scenario) -> list[tuple[dict[str, Any], bool, str]]:
    if _last and _last[0][0] is scenario:
        return _last[0][1]
    results = [_packet(scenario, i) for i in range(len(scenario.frames))]
    _last[:] = [(scenario, results)]
    return results


#: The queue counts an attach scenario may give each end (VETH-MTU-001's -ENOSPC).
MAX_ATTACH_QUEUES = 8


def attach_config(scenario: Scenario) -> tuple[int, bool, int, int] | None:
    """``config.attach`` as (peer MTU, frags-aware, the receiving end's rx queues, the
    peer's tx queues), or None (VETH-MTU-001)."""
    attach = scenario.config.get("attach")
    if attach is None:
        return None
    mtu = int(attach["peer_mtu"])
    if not veth.ETH_MIN_MTU <= mtu <= veth.ETH_MAX_MTU:
        raise InvalidConfig("attach.peer_mtu is a veth MTU: 68 .. 65535",
                            field="config.attach.peer_mtu", value=mtu, rule="VETH-MTU-001")
    if scenario.frames:
        raise InvalidConfig("an attach scenario sends no frames", field="frames",
                            value=len(scenario.frames), rule="VETH-MTU-001")
    queues = (int(attach.get("rx_queues", 1)), int(attach.get("peer_tx_queues", 1)))
    for name, n in zip(("rx_queues", "peer_tx_queues"), queues, strict=True):
        if not 1 <= n <= MAX_ATTACH_QUEUES:
            raise InvalidConfig(f"attach.{name} is 1 .. {MAX_ATTACH_QUEUES}",
                                field=f"config.attach.{name}", value=n, rule="VETH-MTU-001")
    return mtu, bool(attach.get("frags", False)), *queues


def _attach(scenario: Scenario, trace: Trace | None = None) -> dict[str, int] | None:
    config = attach_config(scenario)
    if config is None:
        return None
    mtu, frags, rx_queues, peer_tx_queues = config
    out = veth.veth_xdp_attach(mtu, has_frags=frags, rx_queues=rx_queues,
                               peer_tx_queues=peer_tx_queues, trace=trace)
    return {"rc": out.rc, "peer_max_mtu": out.peer_max_mtu}


def expected(scenario: Scenario) -> dict[str, Any]:
    attach = _attach(scenario)
    stats = veth.zero_stats()
    packets = []
    path = "xdp_frame" if _frame_path(scenario) else "skb"
    for frame, (packet, _, tx) in zip(scenario.frames, _packets(scenario), strict=True):
        veth.account(stats, path, len(frame), packet["action"], tx)
        packets.append(packet)
    values = {f"rx_queue_0_{k}": v for k, v in stats.items()}
    out: dict[str, Any] = {"packets": copy.deepcopy(packets),
                           "counters": {name: values.get(name, 0) for name in counter_names()}}
    if attach is not None:
        out["attach"] = attach
    return out


def counter_names() -> list[str]:
    """VETH-STAT-001: the counters ``ethtool -S`` lists for the pair's one queue (without
    ``peer_ifindex``, an index).  ``tx_queue_0_*`` count what this end sent with
    ``ndo_xdp_xmit`` (a redirect into it); no scenario does, so their deltas are 0 (an
    XDP_TX is flushed without them)."""
    return [name for name in veth.ethtool_stat_names() if name != "peer_ifindex"]


def unspecified(scenario: Scenario) -> tuple[str, ...]:
    """Paths the kernel leaves unspecified in this scenario: the hash values, and the
    bytes of packets whose program exposed uninitialised headroom (VETH-SKB-003)."""
    paths = list(HASH_MASK)
    for i, (_, exposed, _) in enumerate(_packets(scenario)):
        if exposed:
            paths += [f"packets[{i}].data", f"packets[{i}].meta"]
    return tuple(paths)


_FIELD_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("packets[*].ops[*].hash", ("VETH-KF-005",)),
    ("packets[*].ops[*].rss_type", ("VETH-KF-002", "VETH-KF-006")),
    ("packets[*].ops[*].timestamp", ("VETH-KF-001",)),
    ("packets[*].ops[*].vlan_*", ("VETH-KF-003",)),
    ("packets[*].ops[*].rc", ("VETH-KF-004", "VETH-SKB-002")),
    ("packets[*].ops*", ("VETH-SKB-002",)),
    ("packets[*].action", ("VETH-SKB-002",)),
    ("packets[*].data", ("VETH-SKB-001", "VETH-SKB-002", "VETH-SKB-003")),
    ("packets[*].meta", ("VETH-SKB-002", "VETH-SKB-003")),
    ("packets[*].len", ("VETH-SKB-002",)),
    ("counters.rx_queue_0_xdp_tx*", ("VETH-STAT-003",)),
    ("counters.rx_queue_0_drops", ("VETH-STAT-003",)),
    ("counters.tx_queue_0_*", ("VETH-STAT-001",)),
    ("counters.*", ("VETH-STAT-001", "VETH-STAT-002")),
    ("attach.*", ("VETH-MTU-001",)),
)

def _tagged(scenario: Scenario) -> set[int]:
    """Packets whose flow hash involves a VLAN key: an in-band 802.1Q/802.1ad ethertype
    or an out-of-band tag (VETH-KF-007)."""
    tags = oob_tags(scenario)
    return {i for i, frame in enumerate(scenario.frames)
            if tags[i] is not None or frame[12:14] in (b"\x81\x00", b"\x88\xa8")}


def _calls_rx_hash(scenario: Scenario, i: int) -> bool:
    return any(op.get("op") == "kfunc" and op.get("name") == "rx_hash"
               for op in scenario.program_for(i) or ())


_HASH_PATH = re.compile(r"packets\[(\d+)\]\.ops\[(\d+)\]\.(hash|rss_type)")


def attribute(scenario: Scenario) -> Callable[[str], tuple[str, ...]]:
    """The hash and type of a tagged frame are also VETH-KF-007's.  The type veth reports
    is built from ``enum xdp_rss_hash_type`` (KFUNC-RSS-001), and for an L4 hash it is
    ``XDP_RSS_L4`` alone (KFUNC-RSS-002: an L4 hash sets the L4 bit; no protocol bit)."""
    tagged = _tagged(scenario)
    packets = expected(scenario)["packets"]
    frame_path = _frame_path(scenario)

    def rules(path: str) -> tuple[str, ...]:
        if frame_path:
            return _frame_path_rules(scenario, path)
        helper = _helper_rules(scenario, path)
        if helper:
            return helper
        m = _HASH_PATH.fullmatch(path)
        if m is None:
            return ()
        i, j, field = int(m[1]), int(m[2]), m[3]
        found = COMPONENT.rules_for(path)
        if field == "rss_type" and i < len(packets) and j < len(packets[i]["ops"]):
            rss = packets[i]["ops"][j].get("rss_type")
            if rss == int(XdpRssHashType.XDP_RSS_TYPE_L4_ANY):
                found = (*found, "KFUNC-RSS-001", "KFUNC-RSS-002")
            elif rss is not None:
                found = (*found, "KFUNC-RSS-001")
        if i in tagged:
            found = (*found, "VETH-KF-007")
        return found if found != COMPONENT.rules_for(path) else ()

    return rules


_OP_PATH = re.compile(r"packets\[(\d+)\]\.ops\[(\d+)\]\..*")


def _helper_rules(scenario: Scenario, path: str) -> tuple[str, ...]:
    """The return code of a helper op (adjust_head/meta/tail, write) is decided by the XDP
    core rules the reference applied to that op, on the buffer veth's copy laid out
    (VETH-SKB-002): those rules from the reference's trace, not veth's kfunc rules.  A
    kfunc's return code on the skb path: veth implements it (VETH-KF-004) and the kfunc's
    own rule decides 0 or -ENODATA (``_KFUNC_RULES``: the tag present or not, VETH-KF-003,
    and so on)."""
    m = _OP_PATH.fullmatch(path)
    if m is None or not path.endswith(".rc"):
        return ()
    i, j = int(m[1]), int(m[2])
    if i >= len(scenario.frames):
        return ()
    ops = scenario.program_for(i) or PASS_PROGRAM
    if j < len(ops) and ops[j]["op"] == "kfunc":
        return (*COMPONENT.rules_for(path), *_KFUNC_RULES.get(str(ops[j].get("name")), ()))
    if j >= len(ops) or ops[j]["op"] == "get_buff_len":
        return ()
    frame = scenario.frames[i]
    skb = veth.VethSkb(frame, **_oob_vlan(scenario, i))
    layout = veth.veth_convert_skb_to_xdp_buff(skb)

    def ctx(xdp: XdpBuff) -> veth.VethXdpBuff:
        return veth.VethXdpBuff(skb, xdp, layout.headroom)

    _, run, _ = run_on_buffer(frame, ops, headroom=layout.headroom,
                              frame_sz=layout.frame_sz_min,
                              metadata_ops=veth.VETH_XDP_METADATA_OPS, ctx=ctx, trace=Trace())
    decisive = [r for r in (run.op_rules[j] if j < len(run.op_rules) else ())
                if r != "XDP-ADJ-001"]
    if ops[j]["op"] == "adjust_meta":
        # bpf_xdp_adjust_meta asks first whether the buffer supports metadata (XDP-ADJ-004),
        # which the trace names only when it does not.
        decisive = ["XDP-ADJ-004", *decisive]
    return (*dict.fromkeys(decisive), "VETH-SKB-002") if decisive else ()


def _frame_path_rules(scenario: Scenario, path: str) -> tuple[str, ...]:
    """On the xdp_frame path a kfunc's answer is VETH-FRAME-001's (no skb), and so is the
    whole frame's length in ``xdp_bytes``."""
    if path == "counters.rx_queue_0_xdp_bytes":
        return ("VETH-STAT-002", "VETH-FRAME-001")
    m = _OP_PATH.fullmatch(path)
    if m is None:
        return ()
    ops = scenario.program_for(int(m[1])) or PASS_PROGRAM
    j = int(m[2])
    return ("VETH-FRAME-001",) if j < len(ops) and ops[j]["op"] == "kfunc" else ()


def applied(scenario: Scenario) -> set[str]:
    """VETH-KF-007 when a tagged frame's program asks for the hash; VETH-MTU-001 for an
    attach; VETH-FRAME-001 on the xdp_frame path."""
    hashed = any(_calls_rx_hash(scenario, i) for i in _tagged(scenario))
    trace = Trace()
    _attach(scenario, trace)
    frames = {"VETH-FRAME-001"} if scenario.frames and _frame_path(scenario) else set()
    return set(trace.rules()) | ({"VETH-KF-007"} if hashed else set()) | frames


COMPONENT = Component(name="veth", expected=expected, field_rules=_FIELD_RULES,
                      attribute=attribute, applied=applied)


# --- teaching -----------------------------------------------------------------------------

#: ``rx-oracle explain --driver veth --config '{}'``: frames sent by the peer's stack
#: with AF_PACKET, the peer running XDP (so XDP_TX frames have a NAPI to land in).
EXPLAIN_DEFAULTS: dict[str, Any] = {"path": "skb", "peer_xdp": True}

#: The driver's rules for each kfunc's answer (VETH-KF-004: veth implements all three).
_KFUNC_RULES = {"rx_timestamp": ("VETH-KF-001",), "rx_hash": ("VETH-KF-002", "VETH-KF-005"),
                "rx_vlan_tag": ("VETH-KF-003",)}


def _config_text(scenario: Scenario) -> str:
    cfg = scenario.config
    tag = cfg.get("oob_vlan")
    if isinstance(tag, dict):
        oob = f"{int(tag['proto']):#06x} TCI {vlan_tci_text(int(tag['tci']))}"
    elif isinstance(tag, list):
        oob = "per frame"
    else:
        oob = "none"
    sent = ("sent with AF_PACKET" if cfg.get("path", "skb") == "skb" else
            "sent back by the peer's XDP_TX, no skb: every kfunc -ENODATA (VETH-FRAME-001)")
    return (f"veth: path {cfg.get('path', 'skb')} (frames {sent}), peer XDP "
            f"{value_text(bool(cfg.get('peer_xdp', True)))}, out-of-band VLAN tag {oob}")


def explain(scenario: Scenario) -> str:
    """Narrate each frame on the receiving end: the skb's copy into a page_pool buffer,
    each op of the program with its return code (the kfuncs' values and veth's rule for
    each), the verdict, what an XDP_TX became and what the rx queue counted.  Without
    frames one IPv4/TCP frame is sent; without a program, the three kfuncs and
    XDP_PASS."""
    if attach_config(scenario) is not None:
        trace = Trace()
        out = _attach(scenario, trace)
        assert out is not None
        mtu, frags, rxq, txq = attach_config(scenario) or (0, False, 1, 1)
        return "\n".join([
            _config_text(scenario),
            f"attach a {'frags-aware ' if frags else ''}program ({rxq} rx queues), the "
            f"peer's MTU {mtu} ({txq} tx queues) -> "
            f"rc {rc_text(out['rc'])}, the peer's max_mtu {out['peer_max_mtu']} "
            "(VETH-MTU-001)", *("  " + e.render() for e in trace)])
    scenario, notes = with_explain_defaults(scenario)
    observed = expected(scenario)  # the checks and the counters, as a target is judged
    tagged = _tagged(scenario)
    frame_path = _frame_path(scenario)
    lines = [*notes, _config_text(scenario)]
    for i, frame in enumerate(scenario.frames):
        trace = Trace()
        ops = scenario.program_for(i) or PASS_PROGRAM
        skb = veth.VethSkb(frame, **_oob_vlan(scenario, i))
        layout = veth.veth_convert_skb_to_xdp_buff(skb, trace)

        def ctx(xdp: XdpBuff, skb: veth.VethSkb | None = None if frame_path else skb,
                headroom: int = layout.headroom) -> veth.VethXdpBuff:
            return veth.VethXdpBuff(skb, xdp, headroom)

        packet, run, frame_len = run_on_buffer(
            frame, ops, headroom=layout.headroom, frame_sz=layout.frame_sz_min,
            metadata_ops=veth.VETH_XDP_METADATA_OPS, ctx=ctx,
            trace=Trace())  # each op's rules (narrate_ops prints them op by op)
        tx = "ok"  # what became of an XDP_TX; the other verdicts never transmit
        if run.action == veth.XDP_TX:
            tx = veth.veth_xdp_tx_outcome(frame_len is not None, frame_len or 0,
                                          peer_napi=bool(scenario.config.get("peer_xdp", True)))
        lines.append(f"packet {i}: {len(frame)} bytes -> {action_name(run.action)}, "
                     f"{packet['len']} bytes after the program (VETH-SKB-002)")
        lines += ["  " + e.render() for e in trace]
        rules = dict(_KFUNC_RULES)
        if frame_path:
            rules = dict.fromkeys(_KFUNC_RULES, ("VETH-FRAME-001",))
        if i in tagged:
            rules["rx_hash"] = (*rules["rx_hash"], "VETH-KF-007")
        lines += narrate_ops(ops, run, rules)
        if veth.headroom_exposed(ops, run.records):
            lines.append("  headroom exposed -> those bytes are uninitialised, the packet's "
                         "and metadata's values unspecified (VETH-SKB-003)")
        if run.action == veth.XDP_TX:
            lines.append(f"  XDP_TX -> {tx} (VETH-STAT-003)")
        counted = Trace()
        veth.account(veth.zero_stats(), "xdp_frame" if frame_path else "skb", len(frame),
                     run.action, tx, counted)
        lines += ["  " + e.render() for e in counted]
    lines.append("rx queue 0 counters (VETH-STAT-001): " + ", ".join(
        f"{k.removeprefix('rx_queue_0_')}={v}" for k, v in observed["counters"].items()))
    return "\n".join(lines)


# --- strategies ---------------------------------------------------------------------------


def _dissectable(frame: bytes) -> bool:
    """Frames whose flow hash the model predicts: no GRE, MPLS, PPPoE and the like on the
    dissector's way (VETH-KF-002); in-band VLAN tags are fine (VETH-KF-007)."""
    return veth.flow_dissect(frame).covered


def walk_edge_scenarios() -> list[Scenario]:
    """Every sendable frame of ``header_cases(wellformed=False)`` once, 32 to a scenario,
    rx_hash only: the flow dissector's stops (802.3 length frames, short ARP/PTP, a cut
    tag, tags past VLAN_MAX_DEPTH and the header limit, cut IPv6 extension and fragment
    headers, first fragments, other protocols) decide which frames hash alike
    (VETH-KF-002, VETH-KF-005, VETH-KF-007)."""
    frames = [f for f in header_cases(wellformed=False)
              if veth.ETH_HLEN <= len(f) <= MAX_FRAME and _dissectable(f)]
    return [Scenario(component="veth", config={"path": "skb"}, frames=tuple(frames[i:i + 32]),
                     program=({"op": "kfunc", "name": "rx_hash"},),
                     rules=("VETH-KF-002", "VETH-KF-005", "VETH-KF-007"))
            for i in range(0, len(frames), 32)]


#: Ethertypes one either side of each the dissector walks into and the model refuses
#: (PPPoE session 0x8864, TIPC 0x88CA, MPLS 0x8847/0x8848, batman-adv 0x4305, PRP 0x88FB,
#: HSR 0x892F): no case of their own, so the walk ends with ``n_proto`` alone
#: (VETH-KF-002).  A target that took a neighbour for the special value refuses it.
_ETHERTYPE_NEIGHBOURS = (0x8863, 0x8865, 0x88C9, 0x88CB, 0x8846, 0x8849, 0x4304, 0x4306,
                         0x88FA, 0x88FC, 0x892E, 0x8930)
#: IP protocols either side of GRE (47) and MPLS-in-IP (137), which the model refuses:
#: plain protocols with no port word (VETH-KF-002).
_PROTOCOL_NEIGHBOURS = (46, 48, 138)
#: ``proto_ports_offset``: where each non-TCP/UDP protocol's port word (ESP's and AH's
#: SPI) sits after the IP header (VETH-KF-002).
_PORT_WORD_AT = {33: 0, 50: 0, 132: 0, 136: 0, 51: 4}


def dissector_constant_scenarios() -> list[Scenario]:
    """The dissector's constants each met at the value and beside it (VETH-KF-002,
    VETH-KF-005, VETH-KF-007), rx_hash only, not left to the draw.

    First scenario: the neighbours of the refused ethertypes and IP protocols; 802.2
    and raw 802.3 frames whose length field is 0x05FF and 0x0040 (equal hashes), and an
    0x0600 frame (an ethertype: a hash of its own); 7 in-band tags (the most
    ``packet_parse_headers`` steps over, so the IP header is read as a tag) and 16 (the
    walk stops at ``MAX_FLOW_DISSECT_HDRS`` on the IPv4 ethertype, so no ports).
    Second: for DCCP, ESP, SCTP, UDP-Lite and AH over IPv4, a frame and its reverse whose
    port words at ``proto_ports_offset`` are each other's halves swapped, the bytes around
    them different (equal hashes read at the offset, different ones beside it); and
    802.3 and 802.2 frames under an out-of-band 802.1Q tag, each hashing like an in-band
    tagged frame whose misread ethertype is ``ETH_P_802_3`` or ``ETH_P_802_2``."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    eth = bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02"))[:12]
    udp = bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
                / IP(src="192.0.2.1", dst="198.51.100.7") / UDP(sport=7, dport=9) / b"abcd")
    llc, raw = b"\xaa\xaa\x03" + bytes(43), b"\xff\xff" + bytes(44)
    first = [eth + t.to_bytes(2, "big") + bytes(46) for t in _ETHERTYPE_NEIGHBOURS]
    first += [bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
                    / IP(src="192.0.2.1", dst="198.51.100.7", proto=p) / bytes(range(12)))
              for p in _PROTOCOL_NEIGHBOURS]
    first += [eth + b"\x05\xff" + llc, eth + b"\x00\x40" + llc, eth + b"\x06\x00" + llc,
              eth + b"\x05\xff" + raw, eth + b"\x00\x40" + raw]
    first += [_inband(udp, [(0x8100, 0xA005)] * n) for n in (7, 16)]
    second: list[bytes] = []
    for proto, at in _PORT_WORD_AT.items():
        for src, dst, word, fill in (("192.0.2.1", "198.51.100.7", b"\x11\x22\x33\x44", 0xA0),
                                     ("198.51.100.7", "192.0.2.1", b"\x33\x44\x11\x22", 0xB0)):
            l4 = bytes(range(fill, fill + at)) + word + bytes(range(fill + 8, fill + 12))
            second.append(bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
                                / IP(src=src, dst=dst, proto=proto) / l4))
    tci = 0x6123
    misread = [eth + b"\x81\x00" + b"\x00\x07\x08\x00" + tci.to_bytes(2, "big") + n_proto
               + bytes(42) for n_proto in (b"\x00\x01", b"\x00\x04")]
    second += [eth + b"\x00\x40" + raw, misread[0], eth + b"\x00\x40" + llc, misread[1]]
    tag: dict[str, int] | None = {"proto": 0x8100, "tci": tci}
    oob = [None] * (len(second) - 4) + [tag, None, tag, None]
    rules = ("VETH-KF-002", "VETH-KF-005", "VETH-KF-006", "VETH-KF-007")
    rx_hash = ({"op": "kfunc", "name": "rx_hash"},)
    third, oob3, programs = _dissector_field_frames()
    return [Scenario(component="veth", config={"path": "skb"}, frames=tuple(first),
                     program=rx_hash, rules=rules),
            Scenario(component="veth", config={"path": "skb", "oob_vlan": oob},
                     frames=tuple(second), program=rx_hash, rules=rules),
            Scenario(component="veth", config={"path": "skb", "oob_vlan": oob3},
                     frames=tuple(third), program=rx_hash, per_packet_programs=programs,
                     rules=rules)]


def _dissector_field_frames() -> tuple[list[bytes], list[dict[str, int] | None],
                                       dict[int, tuple[dict[str, Any], ...]]]:
    """The third scenario of :func:`dissector_constant_scenarios`: each header field the
    walk reads, at the edge where reading one byte more, less or beside it changes which
    frames hash alike (VETH-KF-002, VETH-KF-005, VETH-KF-006, VETH-KF-007).

    Two 18-byte frames whose only tag ends the frame (the sender steps over it, so the
    dissector finds no tag at the network header: equal), an IPv4 first fragment of GRE
    (not walked into: no first-fragment parsing for the hash), two IPv4 headers with
    nothing after them (addresses read: different), an IPv4 datagram with offset 1 and
    no MF (a fragment: no ports), two IPv6 frames with flow label 0x10000 (only the
    label's top bit set) and other ports (equal), one frame under out-of-band tags whose
    TCIs differ in the VID's low bit, in DEI, in the PCP's low bit (DEI alone leaves the
    hash alike), two IPv6 frames ending two bytes into a destination-options header and
    two eight bytes into a fragment header (next headers 17 and 6: different), two seven
    bytes into a fragment header (equal), two IPv4 protocol-44 datagrams (not a fragment
    header over IPv4: equal), IPv4 in IPv6 both ways (equal, L4), 17 destination-options
    headers before UDP (the walk stops at the 16th header: no ports), and an IPv4 frame whose
    ethertype the program rewrites to IPv6 before rx_hash (the walk starts from the
    protocol the skb had on entry: like the frame as sent)."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.inet6 import IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment
    from scapy.layers.l2 import Ether

    ether = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    eth = bytes(ether)[:12]
    a4, b4, a6, b6 = "192.0.2.1", "198.51.100.7", "2001:db8::1", "2001:db8::7"
    udp = bytes(ether / IP(src=a4, dst=b4) / UDP(sport=7, dport=9) / b"abcd")
    frames = [eth + b"\x81\x00\x20\x05\x08\x00", eth + b"\x81\x00\x40\x06\x08\x00",
              bytes(ether / IP(src=a4, dst=b4, proto=47, flags="MF") / bytes(range(12))),
              bytes(ether / IP(src=a4, dst=b4, proto=17)),
              bytes(ether / IP(src=a4, dst="203.0.113.9", proto=17)),
              bytes(ether / IP(src=a4, dst=b4, frag=1) / UDP(sport=7, dport=9) / b"abcd")]
    frames += [bytes(ether / IPv6(src=a6, dst=b6, fl=0x10000) / UDP(sport=s, dport=9) / b"abcd")
               for s in (7, 8)]
    tcis = (0x0064, 0x0065, 0x1064, 0x8064, 0xA064)
    oob: list[dict[str, int] | None] = [None] * len(frames)
    oob += [{"proto": 0x8100, "tci": t} for t in tcis]
    frames += [udp] * len(tcis)
    for cut, nh in ((2, 60), (8, 44), (7, 44)):
        for nxt in (17, 6):
            v6 = bytes(ether / IPv6(src=a6, dst=b6, nh=nh))
            ext = bytes(IPv6ExtHdrFragment(nh=nxt, offset=0, m=1)) if nh == 44 \
                else bytes([nxt, 0]) + bytes(6)
            frames.append(v6[:18] + cut.to_bytes(2, "big") + v6[20:] + ext[:cut])
    frames += [bytes(ether / IP(src=a4, dst=b4, proto=44) / bytes([nxt]) / bytes(range(1, 12)))
               for nxt in (17, 6)]
    frames += [bytes(ether / IPv6(src=a6, dst=b6) / IP(src=s, dst=d) / UDP(sport=p, dport=q)
                     / b"abcd") for s, d, p, q in ((a4, b4, 7, 9), (b4, a4, 9, 7))]
    chain = IPv6(src=a6, dst=b6)
    for _ in range(17):
        chain = chain / IPv6ExtHdrDestOpt()
    frames.append(bytes(ether / chain / UDP(sport=7, dport=9) / b"abcd"))
    programs: dict[int, tuple[dict[str, Any], ...]] = {
        len(frames) + 1: ({"op": "write", "offset": 12, "data": "86dd"},
                          {"op": "kfunc", "name": "rx_hash"})}
    frames += [udp, udp]
    oob += [None] * (len(frames) - len(oob))
    return frames, oob, programs




def veth_frames() -> st.SearchStrategy[bytes]:
    """IP and other frames, and the header-walk boundaries (``header_cases``: where the
    flow dissector stops early, tags past VLAN_MAX_DEPTH, IPv6 first fragments)."""
    return st.one_of(ip_frames(), ethernet_frames(),
                     st.sampled_from(header_cases(wellformed=False))).filter(
        lambda f: veth.ETH_HLEN <= len(f) <= MAX_FRAME and _dissectable(f))


def _live_ops(ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tail growth stays clear of the page_pool-dependent band (VETH-SKB-002)."""
    return [op for op in ops if not (op["op"] == "adjust_tail" and 0 < int(op["delta"]) < 4096)]


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    frames = draw(st.lists(veth_frames(), min_size=1, max_size=4))
    per_packet = {}
    if len(frames) > 1 and draw(st.booleans()):
        per_packet[draw(st.integers(0, len(frames) - 1))] = tuple(_live_ops(draw(op_lists())))
    if draw(st.integers(0, 3)) == 0:
        # XDP_TX of a frame grown to exactly the peer's limit (MTU + L2 header + VLAN_HLEN)
        # or one past it (VETH-STAT-003).  A frame this long fills its page_pool page,
        # so the growth does not depend on the fragment size (VETH-SKB-002).
        event("veth: XDP_TX at the peer's MTU limit")
        length = draw(st.integers(1500, MAX_FRAME))
        frames[0] = frames[0] + bytes(max(0, length - len(frames[0])))
        limit = 1500 + veth.ETH_HLEN + veth.VLAN_HLEN
        per_packet[0] = ({"op": "adjust_tail",
                          "delta": limit - len(frames[0]) + draw(st.sampled_from([0, 1, -1]))},
                         {"op": "return", "action": veth.XDP_TX})
    scenario = Scenario(component="veth", config={"path": "skb"}, frames=tuple(frames),
                        program=tuple(_live_ops(draw(op_lists()))),
                        per_packet_programs=per_packet,
                        rules=("VETH-SKB-002", "VETH-KF-001", "VETH-KF-002", "VETH-KF-003",
                               "VETH-STAT-002"))
    try:
        expected(scenario)
    except InvalidConfig:
        from hypothesis import reject

        reject()
    return scenario


#: Peer MTUs either side of veth_xdp_set's limit without frags (3506 on x86_64), and
#: the ends of the MTU range (VETH-MTU-001).
_PEER_MTUS = (veth.ETH_MIN_MTU, 1500, 3505, 3506, 3507, 4096, 9000, veth.ETH_MAX_MTU)


def fixture_scenarios() -> st.SearchStrategy[Scenario]:
    """What ``rx-oracle fixtures generate`` draws: the generic scenarios, and the xdp_frame
    path (VETH-FRAME-001) and the attach scenarios (VETH-MTU-001) the properties draw apart."""
    return st.one_of(scenarios(), frame_path_scenarios(), attach_scenarios())


@st.composite
def attach_scenarios(draw: st.DrawFn) -> Scenario:
    """A program attached to the receiving end, its peer at an MTU around the one-page
    limit; the program frags-aware or not (VETH-MTU-001)."""
    mtu = draw(st.sampled_from(_PEER_MTUS) | st.integers(veth.ETH_MIN_MTU, veth.ETH_MAX_MTU))
    frags = draw(st.booleans())
    event(f"veth: attach, frags {frags}")
    attach: dict[str, Any] = {"peer_mtu": mtu, "frags": frags}
    if draw(st.integers(0, 2)) == 0:
        # Queue counts either side of "rx queues not less than the peer's tx queues".
        rxq, txq = draw(st.sampled_from([(1, 2), (2, 1), (2, 2), (2, 3), (4, 3), (1, 8)]))
        event("veth: attach with queue counts")
        attach.update(rx_queues=rxq, peer_tx_queues=txq)
    return Scenario(component="veth", config={"path": "skb", "attach": attach},
                    rules=("VETH-MTU-001",))


@st.composite
def frame_path_scenarios(draw: st.DrawFn) -> Scenario:
    """Frames bounced by the peer's XDP_TX, so they reach the program as xdp_frames: every
    kfunc is -ENODATA and the whole frame is counted (VETH-FRAME-001).  An XDP_TX of the
    program becomes XDP_PASS (the peer would bounce it back)."""
    frames = draw(st.lists(veth_frames(), min_size=1, max_size=4))
    ops = [{**op, "action": veth.XDP_PASS}
           if op["op"] == "return" and op.get("action") == veth.XDP_TX else op
           for op in _live_ops(draw(op_lists()))]
    if draw(st.booleans()):
        ops.insert(0, {"op": "kfunc", "name": draw(st.sampled_from(
            ["rx_timestamp", "rx_hash", "rx_vlan_tag"]))})
    scenario = Scenario(component="veth", config={"path": "xdp_frame"}, frames=tuple(frames),
                        program=tuple(ops), rules=("VETH-FRAME-001",))
    try:
        expected(scenario)
    except InvalidConfig:
        from hypothesis import reject

        reject()
    return scenario


@st.composite
def oob_vlan_scenarios(draw: st.DrawFn) -> Scenario:
    """Frames sent with an out-of-band tag; kfunc calls among other ops."""
    frames = draw(st.lists(veth_frames(), min_size=1, max_size=3))
    tag = {"proto": draw(st.sampled_from([0x8100, 0x88A8])), "tci": draw(st.integers(0, 0xFFFF))}
    ops = _live_ops(draw(op_lists()))
    ops.insert(draw(st.integers(0, len(ops))), {"op": "kfunc", "name": "rx_vlan_tag"})
    return Scenario(component="veth", config={"path": "skb", "oob_vlan": tag},
                    frames=tuple(frames), program=tuple(ops), rules=("VETH-KF-003",))


#: IPv6 flow labels of :func:`flow_scenarios`: none (IPv4), 0 (the ports are read), and
#: non-zero ones, which stop the walk before the ports (VETH-KF-002).
_LABELS = (None, None, 0, 1, 0xFFFFF)


@st.composite
def flow_scenarios(draw: st.DrawFn) -> Scenario:
    """Pairs of frames of a few flows, each frame also sent reversed: rx_hash only.  Some
    flows are IPv6 with a flow label; with a non-zero label the walk stops before the
    ports, so a frame of the flow with other ports hashes alike, and the hash is L4 for
    the label alone (VETH-KF-002)."""
    flows = draw(_flows())
    frames: list[bytes] = []
    for flow in flows:
        label = draw(st.sampled_from(_LABELS) | st.integers(1, 0xFFFFF))
        for frame in (_flow_frame(flow, label=label),
                      _flow_frame(flow, reverse=True, label=label)):
            frames += [frame, frame]
        if label:
            event("veth: rx_hash of an IPv6 flow label")
            kind, sport, dport, src, dst = flow
            frames.append(_flow_frame((kind, sport % 65535 + 1, dport, src, dst), label=label))
    return Scenario(component="veth", config={"path": "skb"}, frames=tuple(frames),
                    program=({"op": "kfunc", "name": "rx_hash"},),
                    rules=("VETH-KF-002", "VETH-KF-005"))



@st.composite
def rehash_flow_scenarios(draw: st.DrawFn) -> Scenario:
    """VETH-KF-006: each flow frame three times.  First ``rx_hash``, a store over the
    ports, ``rx_hash`` again: the second call returns the cached hash.  Then the store
    before the one call: the dissector reads the ports as the program left them.  Then
    the frame as sent.  (IPv6 frames without a flow label, so the ports count.)"""
    flows = draw(_flows(max_size=2))
    frames: list[bytes] = []
    programs: dict[int, tuple[dict[str, Any], ...]] = {}
    for flow in flows:
        v6 = draw(st.booleans())
        frame = _flow_frame(flow, label=0 if v6 else None)
        ports = veth.ETH_HLEN + (40 if v6 else 20)
        store = {"op": "write", "offset": ports,
                 "data": draw(st.binary(min_size=4, max_size=4)).hex()}
        rx_hash = {"op": "kfunc", "name": "rx_hash"}
        programs[len(frames)] = (rx_hash, store, rx_hash)
        programs[len(frames) + 1] = (store, rx_hash)
        frames += [frame, frame, frame]
    return Scenario(component="veth", config={"path": "skb"}, frames=tuple(frames),
                    program=({"op": "kfunc", "name": "rx_hash"},),
                    per_packet_programs=programs,
                    rules=("VETH-KF-006", "VETH-KF-005", "VETH-KF-002"))

#: The envelopes of :func:`envelope_flow_scenarios`, each a walk the dissector must make
#: before it reaches the flow's ports (VETH-KF-002): IP-in-IP, IPv6-in-IP, chains of IPv6
#: destination-options headers around the 15-header limit (``MAX_FLOW_DISSECT_HDRS``), an
#: IPv4 header whose protocol number is an IPv6 extension header (walked no further).
_ENVELOPES = ("ipip", "ip6ip", "ip6ext", "ip6ext", "ip4ext")
_EXT_CHAIN = (0, 1, 2, 13, 14, 15, 16)


def _flow_packet(flow: tuple[str, int, int, int, int], v6: bool, reverse: bool) -> Any:
    """The flow's IP packet (IPv4 or IPv6 addresses derived from the flow's)."""
    from scapy.layers.inet import IP, TCP, UDP
    from scapy.layers.inet6 import IPv6

    kind, sport, dport, src, dst = flow
    if reverse:
        src, dst, sport, dport = dst, src, dport, sport
    l4 = (TCP if kind == "tcp" else UDP)(sport=sport, dport=dport)
    if v6:
        return IPv6(src=f"fd00::{src & 0xFFFF:x}:{src >> 16:x}",
                    dst=f"fd00::{dst & 0xFFFF:x}:{dst >> 16:x}") / l4
    return IP(src=_ip(src), dst=_ip(dst)) / l4


def _enveloped(flow: tuple[str, int, int, int, int], envelope: str, depth: int,
               reverse: bool, filler: bytes) -> bytes:
    from scapy.layers.inet import IP
    from scapy.layers.inet6 import IPv6ExtHdrDestOpt
    from scapy.layers.l2 import Ether
    from scapy.packet import Raw

    eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    outer4 = IP(src="192.0.2.1", dst="192.0.2.2")
    if envelope == "ipip":
        return bytes(eth / outer4 / _flow_packet(flow, False, reverse))
    if envelope == "ip6ip":
        return bytes(eth / outer4 / _flow_packet(flow, True, reverse))
    if envelope == "ip4ext":
        # Protocol 60 over IPv4: not an IPv6 extension header there, so the walk ends at
        # the IPv4 header; the bytes after it (the flow's, then filler) are never read.
        inner = bytes(_flow_packet(flow, False, reverse))[20:]
        return bytes(eth / IP(src="192.0.2.1", dst="192.0.2.2", proto=60) / Raw(inner + filler))
    pkt = _flow_packet(flow, True, reverse)
    l4 = pkt.payload
    pkt.remove_payload()
    for _ in range(depth):
        pkt = pkt / IPv6ExtHdrDestOpt()
    return bytes(eth / pkt / l4)


@st.composite
def envelope_flow_scenarios(draw: st.DrawFn) -> Scenario:
    """Frames of one or two flows inside the same envelope, in either direction: equal
    hashes exactly when the dissector reaches the same inner keys (VETH-KF-002, VETH-KF-005).
    Around the 15-header limit the walk stops early, and different flows share a hash."""
    flows = draw(_flows(max_size=2))
    envelope = draw(st.sampled_from(_ENVELOPES))
    event(f"veth: rx_hash through {envelope}")
    frames = []
    for _ in range(draw(st.integers(2, 6))):
        depth = draw(st.sampled_from(_EXT_CHAIN))
        frames.append(_enveloped(draw(st.sampled_from(flows)), envelope, depth,
                                 draw(st.booleans()), draw(st.binary(min_size=0, max_size=8))))
    return Scenario(component="veth", config={"path": "skb"}, frames=tuple(frames),
                    program=({"op": "kfunc", "name": "rx_hash"},),
                    rules=("VETH-KF-002", "VETH-KF-005"))


#: The ways a tagged flow frame is sent in :func:`tagged_flow_scenarios`: none, in band
#: (``Dot1Q``/``Dot1AD`` in the bytes) or out of band (the sender's tc program).
_WRAPS = ("none", "inband", "inband", "oob", "oob", "oob")


@st.composite
def tagged_flow_scenarios(draw: st.DrawFn) -> Scenario:
    """Frames of one or two flows, each sent untagged, with in-band tags or with an
    out-of-band tag, in either direction and with the ports swapped; rx_hash only.

    The tags come from a small pool, so equal and unequal keys both occur: TCIs that
    differ only in DEI, in PCP or in VID, both TPIDs, TOS values (the in-band walk reads
    the IP header as a tag) (VETH-KF-005, VETH-KF-007)."""
    flows = draw(_flows(max_size=2))
    tcis = draw(st.lists(st.sampled_from([0, 0x0064, 0x1064, 0xA064, 0x00C8, 0xF0C8]),
                         min_size=1, max_size=3))
    frames: list[bytes] = []
    tags: list[dict[str, int] | None] = []
    for _ in range(draw(st.integers(2, 8))):
        flow = draw(st.sampled_from(flows))
        frame = _flow_frame(flow, reverse=draw(st.booleans()), swap_ports=draw(st.booleans()),
                            tos=draw(st.sampled_from([0, 0, 0x10])))
        wrap = draw(st.sampled_from(_WRAPS))
        oob = None
        if wrap == "inband":
            frame = _inband(frame, draw(st.lists(
                st.tuples(st.sampled_from([0x8100, 0x88A8]), st.sampled_from(tcis)),
                min_size=1, max_size=2)))
        elif wrap == "oob":
            oob = {"proto": draw(st.sampled_from([0x8100, 0x88A8])),
                   "tci": draw(st.sampled_from(tcis))}
        frames.append(frame)
        tags.append(oob)
    return Scenario(component="veth", config={"path": "skb", "oob_vlan": tags},
                    frames=tuple(frames), program=({"op": "kfunc", "name": "rx_hash"},),
                    rules=("VETH-KF-005", "VETH-KF-007"))


def _flows(max_size: int = 4) -> st.SearchStrategy[list[tuple[str, int, int, int, int]]]:
    return st.lists(st.tuples(st.sampled_from(["tcp", "udp"]), st.integers(1, 65535),
                              st.integers(1, 65535), st.integers(1, 2**32 - 1),
                              st.integers(1, 2**32 - 1)),
                    min_size=1, max_size=max_size, unique=True)


def _flow_frame(flow: tuple[str, int, int, int, int], reverse: bool = False,
                swap_ports: bool = False, tos: int = 0, label: int | None = None) -> bytes:
    """The flow's frame: IPv4, or with ``label`` IPv6 carrying that flow label."""
    from scapy.layers.inet import IP, TCP, UDP
    from scapy.layers.l2 import Ether

    kind, sport, dport, src, dst = flow
    if reverse:
        src, dst, sport, dport = dst, src, dport, sport
    if swap_ports:
        sport, dport = dport, sport
    eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    if label is not None:
        pkt = _flow_packet((kind, sport, dport, src, dst), True, False)
        pkt.fl = label
        return bytes(eth / pkt)
    l4 = TCP if kind == "tcp" else UDP
    return bytes(eth / IP(src=_ip(src), dst=_ip(dst), tos=tos) / l4(sport=sport, dport=dport))


def _inband(frame: bytes, tags: list[tuple[int, int]]) -> bytes:
    """``frame`` with 802.1Q/802.1ad tags inserted after the MAC addresses, outer first."""
    inner = frame[12:14]
    out = b""
    for i, (_tpid, tci) in enumerate(tags):
        nxt = tags[i + 1][0].to_bytes(2, "big") if i + 1 < len(tags) else inner
        out += tci.to_bytes(2, "big") + nxt
    return frame[:12] + tags[0][0].to_bytes(2, "big") + out + frame[14:]


def _ip(value: int) -> str:
    return ".".join(str((value >> s) & 0xFF) for s in (24, 16, 8, 0))

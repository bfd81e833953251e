"""The ``rss`` component: Toeplitz hash, hash type and queue of each frame.

config:  ``key`` (hex, 40 or 52 bytes), ``indir`` (list of ring numbers),
         optional ``hash_fields`` (object: ethtool flow type as a decimal string →
         ``RXH_*`` mask; default: 4-tuple for TCP/UDP, addresses otherwise) and
         ``input_xfrm`` (0, 1 = RXH_XFRM_SYM_XOR, 2 = RXH_XFRM_SYM_OR_XOR).
frames:  well-formed Ethernet frames.
observables: ``packets[i]`` = ``{"hash": int | null, "hash_type": int, "queue": int}``
         where ``hash_type`` is the ``enum xdp_rss_hash_type`` value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
from hypothesis import strategies as st

from conformance.components import Component
from conformance.scenario import Scenario
from conformance.strategies import ip_frames, rss_keys
from conformance.strategies.frames import ethernet_frames
from reference import packet, rss
from reference.trace import Trace, emit


def config_of(scenario: Scenario) -> rss.RssConfig:
    cfg = scenario.config
    fields = cfg.get("hash_fields")
    return rss.RssConfig(
        key=bytes.fromhex(str(cfg["key"])),
        indir=tuple(int(q) for q in cfg["indir"]),
        hash_fields=(rss.DEFAULT_HASH_FIELDS if fields is None
                     else {int(k): int(v) for k, v in dict(fields).items()}),
        input_xfrm=int(cfg.get("input_xfrm", 0)),
    )


def expected(scenario: Scenario, trace: Trace | None = None) -> dict[str, Any]:
    """RSS-IN-001..004, RSS-TOEP-001, RSS-TYPE-001, RSS-RETA-004/005 per frame."""
    config = config_of(scenario)
    packets = []
    for frame in scenario.frames:
        info = packet.parse(frame)
        result = rss.rss_hash(info, config, trace)
        if result is not None:
            emit(trace, "RSS-TYPE-001", "hash type", hash_type=rss.xdp_rss_hash_type(result))
            queue = rss.queue_for(result.hash, config.indir, trace)
        else:
            emit(trace, "RSS-RETA-005", "unhashed packet takes indirection entry 0")
            queue = config.indir[0]
        packets.append({
            "hash": None if result is None else result.hash,
            "hash_type": int(rss.xdp_rss_hash_type(result)),
            "queue": queue,
        })
    return {"packets": packets}


def attribute(scenario: Scenario) -> Callable[[str], tuple[str, ...]]:
    """Which rule produced ``packets[i].<field>`` for each frame of this scenario."""
    config = config_of(scenario)
    infos = [packet.parse(frame) for frame in scenario.frames]

    def rules(path: str) -> tuple[str, ...]:
        index, _, field = path.removeprefix("packets[").partition("].")
        if not index.isdigit() or int(index) >= len(infos):
            return ()
        return _rules_for_field(infos[int(index)], config, field)

    return rules


def _rules_for_field(info: packet.PacketInfo, config: rss.RssConfig, field: str) -> tuple[str, ...]:
    flow_type = rss.flow_type_of(info)
    hashed = flow_type is not None and bool(config.fields_for(flow_type))
    if field == "hash":
        if not hashed:
            return ("RSS-IN-004",)
        if info.is_fragment:
            return ("RSS-IN-003",)
        if config.input_xfrm:
            return ("RSS-XFRM-002",)
        return ("RSS-IN-002", "RSS-TOEP-001")
    if field == "queue":
        return ("RSS-RETA-004",) if hashed else ("RSS-RETA-005",)
    return ()


def explain(scenario: Scenario) -> str:
    """Each frame's path through RSS, one rule-tagged line per decision."""
    lines = []
    for i, frame in enumerate(scenario.frames):
        trace = Trace()
        one = attrs.evolve(scenario, frames=(frame,))
        observed = expected(one, trace)["packets"][0]
        lines.append(f"packet {i}: {len(frame)} bytes -> hash {observed['hash']}, "
                     f"hash_type {observed['hash_type']:#x}, queue {observed['queue']}")
        lines += ["  " + event.render() for event in trace]
    return "\n".join(lines)


def applied(scenario: Scenario) -> set[str]:
    trace = Trace()
    expected(scenario, trace)
    return set(trace.rules())


COMPONENT = Component(
    name="rss",
    expected=expected,
    attribute=attribute,
    applied=applied,
    field_rules=(
        ("packets[*].hash", ("RSS-IN-002", "RSS-TOEP-001")),
        ("packets[*].hash_type", ("RSS-TYPE-001",)),
        ("packets[*].queue", ("RSS-RETA-004",)),
        ("packets", ("RSS-IN-001",)),
    ),
)


@st.composite
def scenarios(draw: st.DrawFn, *, symmetric: bool | None = None,
              fragments: bool = False) -> Scenario:
    """RSS scenarios: a key, a table over 1-16 rings, default fields, a few frames
    (only fragments with ``fragments``)."""
    n_rings = draw(st.integers(1, 16))
    size = draw(st.sampled_from([64, 128, 256]))
    xfrm = draw(st.sampled_from([0, 0, rss.RXH_XFRM_SYM_XOR, rss.RXH_XFRM_SYM_OR_XOR])
                if symmetric is None else st.just(rss.RXH_XFRM_SYM_XOR if symmetric else 0))
    kinds = ip_frames(fragment=True) if fragments else st.one_of(ip_frames(), ethernet_frames())
    frames = draw(st.lists(kinds, min_size=1, max_size=4))
    return Scenario(
        component="rss",
        config={"key": draw(rss_keys()).hex(), "indir": list(rss.default_indir(size, n_rings)),
                "input_xfrm": xfrm},
        frames=tuple(frames),
        rules=("RSS-IN-002", "RSS-TOEP-001", "RSS-TYPE-001", "RSS-RETA-004"),
    )

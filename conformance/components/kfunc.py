"""The ``kfunc`` component: XDP RX metadata kfunc dispatch and the device-bound rules.

config:  ``devices``: list of ``{"ifindex": int, "name": str, "ndo_bpf": bool,
         "offdev": str | null, "ops": {KFUNC: RESULT}}`` where KFUNC is ``rx_timestamp``,
         ``rx_hash`` or ``rx_vlan_tag`` (a missing one is a NULL ops member) and RESULT
         is what the driver's member returns for every packet, e.g. ``{"rc": 0,
         "hash": 1, "rss_type": 25}`` or ``{"rc": -61}``.
events:  in order, each one of
         ``{"op": "prog_load", "prog_type": int, "expected_attach_type": int,
         "prog_flags": int, "prog_ifindex": int, "calls": [KFUNC, ...]}``,
         ``{"op": "attach", "ifindex": int, "prog": EVENT_INDEX, "flags": int}``,
         ``{"op": "map_update", "map_type": int, "prog": EVENT_INDEX}``,
         ``{"op": "call", "prog": EVENT_INDEX, "kfunc": KFUNC}`` (the program runs on a
         packet and calls KFUNC, which it was loaded with).
         ``prog`` names the event that loaded the program; if that load failed there
         is no file descriptor and the event's rc is ``-EBADF``.
observables: ``events[i]`` = ``{"rc": int}``, plus for ``call`` the outputs the kfunc
         wrote (``timestamp``; ``hash``, ``rss_type``; ``vlan_proto``, ``vlan_tci``;
         null when not written); ``features``: ifindex (string) → netlink
         ``xdp-rx-metadata-features`` bits.
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Mapping
from typing import Any

from hypothesis import strategies as st

from conformance.components import Component
from conformance.scenario import Scenario
from reference import kfuncs as k
from reference.kernel import resolve_kernel
from reference.trace import Trace

KFUNCS = ("rx_timestamp", "rx_hash", "rx_vlan_tag")
_IDS = {
    "rx_timestamp": k.XdpRxMetadata.XDP_METADATA_KFUNC_RX_TIMESTAMP,
    "rx_hash": k.XdpRxMetadata.XDP_METADATA_KFUNC_RX_HASH,
    "rx_vlan_tag": k.XdpRxMetadata.XDP_METADATA_KFUNC_RX_VLAN_TAG,
}
_RESULT_TYPES: dict[str, type[k.RxTimestamp] | type[k.RxHash] | type[k.RxVlanTag]] = {
    "rx_timestamp": k.RxTimestamp, "rx_hash": k.RxHash, "rx_vlan_tag": k.RxVlanTag,
}


def _ops(spec: Mapping[str, Any]) -> k.MetadataOps:
    members: dict[str, Any] = {}
    for name, result in spec.items():
        value = _RESULT_TYPES[name](**{f: result.get(f) for f in _fields(name)})
        members[f"xmo_{name}"] = lambda _ctx, v=value: v
    return k.MetadataOps(**members)


def _fields(kfunc: str) -> tuple[str, ...]:
    return {"rx_timestamp": ("rc", "timestamp"), "rx_hash": ("rc", "hash", "rss_type"),
            "rx_vlan_tag": ("rc", "vlan_proto", "vlan_tci")}[kfunc]


def expected(scenario: Scenario) -> dict[str, Any]:
    return _run(scenario, None)


def _run(scenario: Scenario, traces: list[Trace] | None) -> dict[str, Any]:
    """Replay the events; with ``traces``, record one reference trace per event."""
    kernel = resolve_kernel(scenario.kernel)
    devices = k.BpfDevices.for_kernel(kernel)
    for d in scenario.config.get("devices", []):
        devices.register_netdev(k.NetDevice(
            ifindex=int(d["ifindex"]), name=str(d.get("name", f"dev{d['ifindex']}")),
            xdp_metadata_ops=_ops(d.get("ops", {})), has_ndo_bpf=bool(d.get("ndo_bpf", True)),
            offdev=d.get("offdev")))
    progs: dict[int, k.LoadedBpfProg] = {}
    events: list[dict[str, Any]] = []
    for i, ev in enumerate(scenario.events):
        op = ev["op"]
        trace = None
        if traces is not None:
            trace = Trace()
            traces.append(trace)
        if op == "prog_load":
            out = devices.prog_load(k.BpfProg(
                prog_type=int(ev.get("prog_type", k.BPF_PROG_TYPE_XDP)),
                expected_attach_type=int(ev.get("expected_attach_type", 0)),
                prog_flags=int(ev.get("prog_flags", 0)),
                prog_ifindex=int(ev.get("prog_ifindex", 0)),
                calls_kfuncs=frozenset(_IDS[c] for c in ev.get("calls", []))), trace)
            if out.prog is not None:
                progs[i] = out.prog
            events.append({"rc": out.rc})
            continue
        prog = progs.get(int(ev["prog"]))
        if prog is None:
            events.append({"rc": -errno.EBADF} if op != "call" else _no_call(ev["kfunc"]))
        elif op == "attach":
            dev = devices.devices.get(int(ev["ifindex"]))
            if dev is None:
                events.append({"rc": -errno.ENODEV})
            else:
                out_attach = devices.dev_xdp_attach(dev, prog, int(ev.get("flags", 0)), trace)
                events.append({"rc": out_attach.rc})
        elif op == "map_update":
            events.append({"rc": k.map_update_prog(int(ev["map_type"]), prog, trace, kernel)})
        elif op == "call":
            result = getattr(prog, f"call_{ev['kfunc']}")(None, trace)
            events.append({"rc": result.rc,
                           **dict(zip(_fields(ev["kfunc"])[1:], result.outputs(), strict=True))})
        else:
            raise ValueError(f"kfunc scenario event {i}: unknown op {op!r}")
    features = {str(ifindex): int(k.xdp_rx_metadata_features(dev))
                for ifindex, dev in sorted(devices.devices.items())}
    return {"events": events, "features": features}


def _no_call(kfunc: str) -> dict[str, Any]:
    return {"rc": -errno.EBADF, **{f: None for f in _fields(kfunc)[1:]}}


#: The rules that decide an event the reference let through, by op.
_SUCCESS_RULES = {
    "prog_load": ("KFUNC-LOAD-003", "KFUNC-LOAD-005"),
    "attach": ("KFUNC-ATTACH-004",),
    "map_update": ("KFUNC-MAP-001",),
}


def attribute(scenario: Scenario) -> Callable[[str], tuple[str, ...]]:
    """The rule the reference applied to event ``i``: its refusal, or the dispatch taken."""
    traces: list[Trace] = []
    observed = _run(scenario, traces)

    def rules(path: str) -> tuple[str, ...]:
        index, _, _field = path.removeprefix("events[").partition("]")
        if not index.isdigit() or int(index) >= len(traces):
            return ()
        i = int(index)
        op = scenario.events[i]["op"]
        if observed["events"][i]["rc"] != 0 or op == "call":
            return tuple(traces[i].rules()[-1:])
        return _SUCCESS_RULES.get(op, ())

    return rules


def applied(scenario: Scenario) -> set[str]:
    traces: list[Trace] = []
    _run(scenario, traces)
    return {rule for trace in traces for rule in trace.rules()}


COMPONENT = Component(
    name="kfunc",
    expected=expected,
    attribute=attribute,
    applied=applied,
    field_rules=(
        ("events[*].rss_type", ("KFUNC-CALL-001",)),
        ("events[*].hash", ("KFUNC-CALL-001",)),
        ("events[*].timestamp", ("KFUNC-CALL-001",)),
        ("events[*].vlan_*", ("KFUNC-CALL-001", "KFUNC-API-004")),
        ("events[*].rc", ("KFUNC-API-003", "KFUNC-LOAD-003", "KFUNC-LOAD-005",
                          "KFUNC-ATTACH-004", "KFUNC-MAP-001")),
        ("features.*", ("KFUNC-API-007",)),
    ),
)


# --- strategies ---------------------------------------------------------------------------

_FLAGS = (0, k.BPF_F_XDP_DEV_BOUND_ONLY, k.BPF_F_XDP_DEV_BOUND_ONLY | k.BPF_F_XDP_HAS_FRAGS,
          k.BPF_F_XDP_HAS_FRAGS, k.BPF_F_SLEEPABLE, 1 << 12)
_MODES = (0, k.XDP_FLAGS_SKB_MODE, k.XDP_FLAGS_DRV_MODE, k.XDP_FLAGS_HW_MODE,
          k.XDP_FLAGS_DRV_MODE | k.XDP_FLAGS_UPDATE_IF_NOEXIST)
_MAPS = (k.BPF_MAP_TYPE_PROG_ARRAY, k.BPF_MAP_TYPE_DEVMAP, k.BPF_MAP_TYPE_CPUMAP)


@st.composite
def _result(draw: st.DrawFn, kfunc: str) -> dict[str, Any]:
    if draw(st.booleans()):
        return {"rc": -errno.ENODATA}
    if kfunc == "rx_timestamp":
        return {"rc": 0, "timestamp": draw(st.integers(0, 2**64 - 1))}
    if kfunc == "rx_hash":
        return {"rc": 0, "hash": draw(st.integers(0, 2**32 - 1)),
                "rss_type": draw(st.sampled_from(sorted(k.XDP_RSS_TYPES.values())))}
    return {"rc": 0, "vlan_proto": draw(st.sampled_from([0x8100, 0x88A8])),
            "vlan_tci": draw(st.integers(0, 0xFFFF))}


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    """Devices with random ops, then loads, attaches, map updates and kfunc calls."""
    devices = []
    for ifindex in range(2, 2 + draw(st.integers(1, 2))):
        ops = {name: draw(_result(name))
               for name in draw(st.lists(st.sampled_from(KFUNCS), unique=True))}
        devices.append({"ifindex": ifindex, "name": f"eth{ifindex}", "ops": ops,
                        "ndo_bpf": draw(st.booleans() | st.just(True)), "offdev": None})
    ifindexes = [d["ifindex"] for d in devices]
    events: list[dict[str, Any]] = []
    loads: list[tuple[int, list[str]]] = []
    for _ in range(draw(st.integers(1, 3))):
        calls = draw(st.lists(st.sampled_from(KFUNCS), unique=True))
        loads.append((len(events), calls))
        kind = draw(st.sampled_from(["bound", "bound", "unbound", "random"]))
        load: dict[str, Any]
        if kind == "bound":  # the common, valid case: XDP, DEV_BOUND_ONLY, a real device
            load = {"prog_type": k.BPF_PROG_TYPE_XDP, "expected_attach_type": 0,
                    "prog_flags": k.BPF_F_XDP_DEV_BOUND_ONLY
                    | draw(st.sampled_from([0, k.BPF_F_XDP_HAS_FRAGS])),
                    "prog_ifindex": draw(st.sampled_from(ifindexes))}
        elif kind == "unbound":
            load = {"prog_type": k.BPF_PROG_TYPE_XDP, "expected_attach_type": 0,
                    "prog_flags": 0, "prog_ifindex": 0}
        else:
            load = {
                "prog_type": draw(st.sampled_from([k.BPF_PROG_TYPE_XDP] * 4
                                                  + [k.BPF_PROG_TYPE_SCHED_CLS, 2])),
                "expected_attach_type": draw(st.sampled_from([0, 0, 0, k.BPF_XDP_DEVMAP,
                                                              k.BPF_XDP_CPUMAP])),
                "prog_flags": draw(st.sampled_from(_FLAGS)),
                "prog_ifindex": draw(st.sampled_from([0, *ifindexes, *ifindexes, 99])),
            }
        events.append({"op": "prog_load", **load, "calls": calls})
    for _ in range(draw(st.integers(0, 6))):
        load_index, calls = draw(st.sampled_from(loads))
        kind = draw(st.sampled_from(["attach", "map_update", "call", "call"]))
        if kind == "attach":
            own = events[load_index]["prog_ifindex"]
            targets = [own, own, *ifindexes] if own in ifindexes else ifindexes
            events.append({"op": "attach", "ifindex": draw(st.sampled_from(targets)),
                           "prog": load_index, "flags": draw(st.sampled_from(_MODES))})
        elif kind == "map_update":
            events.append({"op": "map_update", "map_type": draw(st.sampled_from(_MAPS)),
                           "prog": load_index})
        elif calls:
            events.append({"op": "call", "prog": load_index, "kfunc": draw(st.sampled_from(calls))})
    return Scenario(component="kfunc", config={"devices": devices}, events=tuple(events),
                    rules=("KFUNC-API-003", "KFUNC-CALL-001", "KFUNC-LOAD-005",
                           "KFUNC-ATTACH-004", "KFUNC-MAP-001"))

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

import attrs
from hypothesis import strategies as st

from conformance.components import Component
from conformance.readable import kfunc_result_text, rc_text, value_text
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
#: The rule of each program map's own checks (what decides an insertion it accepts).
_MAP_RULES = {
    k.BPF_MAP_TYPE_PROG_ARRAY: "KFUNC-MAP-002",
    k.BPF_MAP_TYPE_DEVMAP: "KFUNC-MAP-003",
    k.BPF_MAP_TYPE_DEVMAP_HASH: "KFUNC-MAP-003",
    k.BPF_MAP_TYPE_CPUMAP: "KFUNC-MAP-004",
}


def attribute(scenario: Scenario) -> Callable[[str], tuple[str, ...]]:
    """The rules the reference's trace says decided event ``i``'s field: its refusal or
    the dispatch taken, and the decisions behind them (from the trace, not a table):

    * a load whose ``BPF_F_XDP_DEV_BOUND_ONLY`` came without ``prog_ifindex`` is unbound
      (KFUNC-LOAD-002), which decides its kfunc refusal or its success;
    * an attach of a bound program was decided by the device match (KFUNC-ATTACH-003)
      when it succeeded or was refused as bound to a different device;
    * a call's return code is the body's that ran (KFUNC-API-003 or KFUNC-CALL-001: the
      wrong targets are caught under exactly that rule); the outputs of a failed call are
      the unwritten ones (KFUNC-API-005);
    * an insertion a program map accepted was decided by that map's checks as well as by
      map compatibility (KFUNC-MAP-002 .. KFUNC-MAP-004 beside KFUNC-MAP-001);
    * an event naming a load that failed finds no program: nothing of it was left
      (KFUNC-LOAD-007). Whether the load failed is read from its answer: a successful map
      update leaves no trace either.
    """
    traces: list[Trace] = []
    observed = _run(scenario, traces)

    def rules(path: str) -> tuple[str, ...]:
        index, _, field = path.removeprefix("events[").partition("]")
        if not index.isdigit() or int(index) >= len(traces):
            return ()
        i = int(index)
        ev, out = scenario.events[i], observed["events"][i]
        op, applied_rules = ev["op"], traces[i].rules()
        if op != "prog_load" and not _loaded(scenario, observed, int(ev["prog"]), i):
            # the named load failed (or names no load): nothing of it was left
            j = int(ev["prog"])
            return ("KFUNC-LOAD-007", *(traces[j].rules()[-1:] if j < len(traces) else ()))
        if op == "call":
            if field.lstrip(".") != "rc" and out["rc"] != 0:
                return ("KFUNC-API-005", *applied_rules[-1:])
            return tuple(applied_rules[-1:])
        decided = tuple(applied_rules[-1:]) if out["rc"] != 0 else _SUCCESS_RULES.get(op, ())
        if op == "map_update" and out["rc"] == 0 and int(ev["map_type"]) in _MAP_RULES:
            decided = (*decided, _MAP_RULES[int(ev["map_type"])])
        if "KFUNC-LOAD-002" in applied_rules:
            decided = (*decided, "KFUNC-LOAD-002")
        if op == "attach" and "KFUNC-ATTACH-003" in applied_rules and (
                out["rc"] == 0 or _match_refused(traces[i])):
            decided = (*decided, "KFUNC-ATTACH-003")
        return decided

    return rules


def _loaded(scenario: Scenario, observed: Mapping[str, Any], j: int, i: int) -> bool:
    """Event ``j`` is a load before event ``i`` that succeeded (so ``i``'s ``prog`` names
    a program; a successful map update or an attach to an unknown device leaves no trace
    either)."""
    return (j < i and scenario.events[j]["op"] == "prog_load"
            and observed["events"][j]["rc"] == 0)


def _narrated(scenario: Scenario) -> Callable[[str], tuple[str, ...]]:
    """The one rule explain prints for event ``i``: its refusal, or the dispatch taken
    (:func:`attribute` adds the decisions behind it)."""
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


def _match_refused(trace: Trace) -> bool:
    """The attach was refused because the bound program does not match the device."""
    return any(e.rule == "KFUNC-ATTACH-004" and "different device" in e.what
               for e in trace.events)


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
        ("features.*", ("KFUNC-API-007", "KFUNC-API-001")),
    ),
)


# --- teaching -----------------------------------------------------------------------------

#: ``rx-oracle explain --driver kfunc --config '{}'``: one native-XDP device whose driver
#: implements rx_hash (an IPv4/TCP hash) and rx_timestamp (no stamp on this packet) and
#: leaves rx_vlan_tag NULL, so the three return codes of KFUNC-API-002 all show.
EXPLAIN_DEFAULTS: dict[str, Any] = {"devices": [{
    "ifindex": 2, "name": "eth0", "ndo_bpf": True, "offdev": None,
    "ops": {"rx_hash": {"rc": 0, "hash": 0x4A730215,
                        "rss_type": k.XDP_RSS_TYPES["XDP_RSS_TYPE_L4_IPV4_TCP"]},
            "rx_timestamp": {"rc": -errno.ENODATA}}}]}

#: The events explain runs when none are given: a program bound to eth0 calling all three
#: kfuncs, attached natively, each kfunc called once; then an unbound load calling a
#: kfunc (refused, KFUNC-LOAD-005) and the bound program offered to a DEVMAP (refused,
#: KFUNC-MAP-003).
EXPLAIN_EVENTS: tuple[dict[str, Any], ...] = (
    {"op": "prog_load", "prog_type": k.BPF_PROG_TYPE_XDP, "expected_attach_type": 0,
     "prog_flags": k.BPF_F_XDP_DEV_BOUND_ONLY, "prog_ifindex": 2, "calls": list(KFUNCS)},
    {"op": "attach", "ifindex": 2, "prog": 0, "flags": k.XDP_FLAGS_DRV_MODE},
    {"op": "call", "prog": 0, "kfunc": "rx_hash"},
    {"op": "call", "prog": 0, "kfunc": "rx_timestamp"},
    {"op": "call", "prog": 0, "kfunc": "rx_vlan_tag"},
    {"op": "prog_load", "prog_type": k.BPF_PROG_TYPE_XDP, "expected_attach_type": 0,
     "prog_flags": 0, "prog_ifindex": 0, "calls": ["rx_hash"]},
    {"op": "map_update", "map_type": k.BPF_MAP_TYPE_DEVMAP, "prog": 0},
)


def _names(prefix: str, value: int, *, flags: bool = False) -> str:
    """A uapi constant of ``reference.kfuncs`` by its kernel name (``BPF_PROG_TYPE_XDP``),
    or, for flag words, the names of its bits joined by ``|`` (``0`` when none)."""
    table = {v: n for n, v in vars(k).items()
             if n.startswith(prefix) and isinstance(v, int) and n != "XDP_FLAGS_MODES"}
    if not flags:
        return table.get(value, str(value))
    if value == 0:
        return "0"
    bits = [table.get(1 << b, f"{1 << b:#x}") for b in range(value.bit_length())
            if value >> b & 1]
    return "|".join(bits)


def _device_text(d: Mapping[str, Any]) -> list[str]:
    """A configured device and what each of its driver's members returns."""
    name = d.get("name", f"dev{d['ifindex']}")
    lines = [f"device {name}: ifindex {d['ifindex']}, ndo_bpf "
             f"{value_text(bool(d.get('ndo_bpf', True)))}, offload device "
             f"{value_text(d.get('offdev'))}"]
    ops = d.get("ops", {})
    for kfunc in KFUNCS:
        if kfunc in ops:
            result = kfunc_result_text(kfunc, ops[kfunc]).partition(" -> ")[2]
            lines.append(f"  xmo_{kfunc}: returns {result} for every packet (KFUNC-CALL-001)")
        else:
            lines.append(f"  xmo_{kfunc}: NULL, a call runs the default body (KFUNC-API-003)")
    return lines


def _event_text(ev: Mapping[str, Any]) -> str:
    op = ev["op"]
    if op == "prog_load":
        return (f"prog_load {_names('BPF_PROG_TYPE_', int(ev.get('prog_type', 6)))}, "
                f"expected_attach_type "
                f"{_names('BPF_XDP_', int(ev.get('expected_attach_type', 0)))}, "
                f"prog_flags {_names('BPF_F_', int(ev.get('prog_flags', 0)), flags=True)}, "
                f"prog_ifindex {ev.get('prog_ifindex', 0)}, calls "
                f"{', '.join(ev.get('calls', [])) or 'no metadata kfunc'}")
    if op == "attach":
        return (f"attach program of event {ev['prog']} to ifindex {ev['ifindex']}, flags "
                f"{_names('XDP_FLAGS_', int(ev.get('flags', 0)), flags=True)}")
    if op == "map_update":
        return (f"map_update {_names('BPF_MAP_TYPE_', int(ev['map_type']))} with the "
                f"program of event {ev['prog']}")
    return f"the program of event {ev['prog']} calls"


def explain(scenario: Scenario) -> str:
    """Narrate each event: what was asked, its return code by kernel name and the rule
    that decided it, the reference's trace, and for a kfunc call the values it returned
    (the hash with its ``xdp_rss_hash_type`` name, the timestamp, the VLAN proto and
    TCI).  Without events, :data:`EXPLAIN_EVENTS` run."""
    notes: list[str] = []
    if not scenario.events:
        scenario = attrs.evolve(scenario, events=EXPLAIN_EVENTS)
        notes.append("no --events given: a bound program's load, attach and three kfunc "
                     "calls, then two refusals")
    traces: list[Trace] = []
    observed = _run(scenario, traces)
    decided = _narrated(scenario)
    lines = [*notes]
    for d in scenario.config.get("devices", []):
        lines += _device_text(d)
    for i, (ev, out) in enumerate(zip(scenario.events, observed["events"], strict=True)):
        rules = decided(f"events[{i}].rc")
        if not rules and out["rc"] == -errno.EBADF:  # the load it names failed
            rules = tuple(traces[int(ev["prog"])].rules()[-1:]) or ("KFUNC-LOAD-007",)
            rules = (*rules, "KFUNC-LOAD-007")
        if not rules and out["rc"] == -errno.ENODEV:
            rules = ("KFUNC-ATTACH-001",)
        why = f" ({', '.join(rules)})" if rules else ""
        if out["rc"] == 0 and ev["op"] != "call":  # the checks passed, then the action
            last = [r for r in traces[i].rules()[-1:] if r not in rules]
            why = f" (checks {', '.join(rules)} passed{''.join('; ' + r for r in last)})"
        if ev["op"] == "call":
            result = kfunc_result_text(str(ev["kfunc"]), out)
            lines.append(f"event {i}: {_event_text(ev)} {result}{why}")
        else:
            lines.append(f"event {i}: {_event_text(ev)} -> rc {rc_text(out['rc'])}{why}")
        lines += ["  " + e.render() for e in traces[i]]
    for ifindex, bits in observed["features"].items():
        names = "|".join(m.name or "" for m in k.NetdevXdpRxMetadata if bits & m) or "0"
        lines.append(f"ifindex {ifindex}: xdp-rx-metadata-features -> {names} (KFUNC-API-007)")
    return "\n".join(lines)


# --- strategies ---------------------------------------------------------------------------

_FLAGS = (0, k.BPF_F_XDP_DEV_BOUND_ONLY, k.BPF_F_XDP_DEV_BOUND_ONLY | k.BPF_F_XDP_HAS_FRAGS,
          k.BPF_F_XDP_HAS_FRAGS, k.BPF_F_SLEEPABLE, 1 << 12)
#: Every single mode, no mode, each pair and all three (KFUNC-ATTACH-002 refuses more than
#: one), each with and without UPDATE_IF_NOEXIST (KFUNC-ATTACH-004's -EBUSY).
_MODE_BITS = (0, k.XDP_FLAGS_SKB_MODE, k.XDP_FLAGS_DRV_MODE, k.XDP_FLAGS_HW_MODE,
              k.XDP_FLAGS_SKB_MODE | k.XDP_FLAGS_DRV_MODE,
              k.XDP_FLAGS_DRV_MODE | k.XDP_FLAGS_HW_MODE, k.XDP_FLAGS_MODES)
_MODES = (*_MODE_BITS, *(m | k.XDP_FLAGS_UPDATE_IF_NOEXIST for m in _MODE_BITS))
_MAPS = (k.BPF_MAP_TYPE_PROG_ARRAY, k.BPF_MAP_TYPE_DEVMAP, k.BPF_MAP_TYPE_DEVMAP_HASH,
         k.BPF_MAP_TYPE_CPUMAP)
#: prog_flags bits 0 .. 16: every bit BPF_PROG_LOAD accepts (BPF_F_TOKEN_FD is bit 16) and
#: the unknown ones between (KFUNC-LOAD-001).
_FLAG_BITS = 17
#: ``BPF_PROG_TYPE_KPROBE`` (include/uapi/linux/bpf.h): a type that cannot be device-bound.
_KPROBE = 2
#: Offload devices: two net devices of one offload driver share its ``offdev``
#: (KFUNC-LOAD-004, KFUNC-ATTACH-003).
_OFFDEVS = (None, None, "nfp0", "nfp1")


@st.composite
def _result(draw: st.DrawFn, kfunc: str) -> dict[str, Any]:
    """A driver member's result: -ENODATA, or success with outputs that include each C
    type's limits (KFUNC-API-006 accepts them; a wrong limit refuses them)."""
    if draw(st.booleans()):
        return {"rc": -errno.ENODATA}
    if kfunc == "rx_timestamp":
        return {"rc": 0, "timestamp": draw(st.sampled_from([0, 1, k.U64_MAX])
                                           | st.integers(0, 2**64 - 1))}
    if kfunc == "rx_hash":
        return {"rc": 0, "hash": draw(st.sampled_from([0, k.U32_MAX])
                                      | st.integers(0, 2**32 - 1)),
                "rss_type": draw(st.sampled_from(sorted(k.XDP_RSS_TYPES.values())))}
    return {"rc": 0, "vlan_proto": draw(st.sampled_from([0x8100, 0x88A8])),
            "vlan_tci": draw(st.sampled_from([0, 0xFFFF, 0xE000, 0x1000])
                             | st.integers(0, 0xFFFF))}


@st.composite
def _load(draw: st.DrawFn, ifindexes: list[int], offload: list[int]) -> dict[str, Any]:
    """One BPF_PROG_LOAD: the common bound case, unbound ones (plain, or for a DEVMAP or
    CPUMAP entry), offloaded ones (XDP or SCHED_CLS; KFUNC-LOAD-004/005) or anything."""
    calls = draw(st.lists(st.sampled_from(KFUNCS), unique=True))
    kind = draw(st.sampled_from(["bound", "bound", "unbound", "map", "offload", "random"]))
    if kind == "bound":  # the common, valid case: XDP, DEV_BOUND_ONLY, a real device
        return {"prog_type": k.BPF_PROG_TYPE_XDP, "expected_attach_type": 0,
                "prog_flags": k.BPF_F_XDP_DEV_BOUND_ONLY
                | draw(st.sampled_from([0, k.BPF_F_XDP_HAS_FRAGS])),
                "prog_ifindex": draw(st.sampled_from(ifindexes)), "calls": calls}
    if kind in ("unbound", "map"):  # loads only without metadata kfuncs (KFUNC-LOAD-005)
        attach_type = 0 if kind == "unbound" else draw(st.sampled_from(
            [k.BPF_XDP_DEVMAP, k.BPF_XDP_CPUMAP]))
        return {"prog_type": k.BPF_PROG_TYPE_XDP, "expected_attach_type": attach_type,
                "prog_flags": 0, "prog_ifindex": 0,
                "calls": calls if draw(st.integers(0, 3)) == 0 else []}
    if kind == "offload":
        return {"prog_type": draw(st.sampled_from([k.BPF_PROG_TYPE_XDP, k.BPF_PROG_TYPE_XDP,
                                                   k.BPF_PROG_TYPE_SCHED_CLS])),
                "expected_attach_type": 0, "prog_flags": 0,
                "prog_ifindex": draw(st.sampled_from(offload * 2 + ifindexes)),
                "calls": calls if draw(st.booleans()) else []}
    return {
        "prog_type": draw(st.sampled_from([k.BPF_PROG_TYPE_XDP] * 4
                                          + [k.BPF_PROG_TYPE_SCHED_CLS, 2])),
        "expected_attach_type": draw(st.sampled_from([0, 0, 0, k.BPF_XDP_DEVMAP,
                                                      k.BPF_XDP_CPUMAP])),
        "prog_flags": draw(st.sampled_from(_FLAGS)),
        "prog_ifindex": draw(st.sampled_from([0, *ifindexes, *ifindexes, 99])),
        "calls": calls,
    }


def _device(draw: st.DrawFn, ifindex: int, *, ndo_bpf: bool | None = None,
            offdev: str | bool | None = False, all_ops: bool = False) -> dict[str, Any]:
    names = KFUNCS if all_ops else draw(st.lists(st.sampled_from(KFUNCS), unique=True))
    ops = {name: draw(_result(name)) for name in names}
    if offdev is False:
        offdev = draw(st.sampled_from(_OFFDEVS))
    if ndo_bpf is None:
        ndo_bpf = offdev is not None or draw(st.booleans() | st.just(True))
    return {"ifindex": ifindex, "name": f"eth{ifindex}", "ops": ops, "ndo_bpf": ndo_bpf,
            "offdev": offdev}


@st.composite
def _calls_family(draw: st.DrawFn) -> Scenario:
    """Every return branch of every kfunc (KFUNC-CALL-001, KFUNC-API-003, KFUNC-LOAD-006):
    on each device (members present or NULL, results 0 or -ENODATA), a program bound to
    it calling exactly one kfunc, and one calling them all, each called once."""
    devices = [_device(draw, i, ndo_bpf=True, offdev=None, all_ops=i == 2) for i in (2, 3)]
    if draw(st.booleans()):  # every output at its C type's limit (KFUNC-API-006 accepts it)
        devices[0]["ops"] = {
            "rx_timestamp": {"rc": 0, "timestamp": k.U64_MAX},
            "rx_hash": {"rc": 0, "hash": k.U32_MAX,
                        "rss_type": max(k.XDP_RSS_TYPES.values())},
            "rx_vlan_tag": {"rc": 0, "vlan_proto": 0x88A8, "vlan_tci": k.U16_MAX}}
    events: list[dict[str, Any]] = []
    for dev in devices:
        for calls in ([name] for name in KFUNCS):
            load = len(events)
            events.append({"op": "prog_load", "prog_type": k.BPF_PROG_TYPE_XDP,
                           "expected_attach_type": 0, "prog_flags": k.BPF_F_XDP_DEV_BOUND_ONLY,
                           "prog_ifindex": dev["ifindex"], "calls": calls})
            events.append({"op": "call", "prog": load, "kfunc": calls[0]})
    return Scenario(component="kfunc", config={"devices": devices}, events=tuple(events),
                    rules=("KFUNC-API-003", "KFUNC-CALL-001", "KFUNC-LOAD-006"))


@st.composite
def _modes_family(draw: st.DrawFn) -> Scenario:
    """Loads of every binding (unbound, bound, offloaded; XDP and SCHED_CLS; offload to a
    device that cannot, offload with metadata kfuncs, DEV_BOUND_ONLY without a device, a
    prog_ifindex naming no device: KFUNC-LOAD-002 .. KFUNC-LOAD-005),
    then each program attached to each of a device without ndo_bpf, a native one and an
    offload one, in a drawn order and mode (KFUNC-ATTACH-001 .. KFUNC-ATTACH-005).  The
    first attach to the device without ndo_bpf asks for a native or hardware mode.  Then
    two programs (HW and native) on a sibling port and an attach without a mode flag
    (KFUNC-ATTACH-002's ambiguity).  Last, one load per prog_flags bit, unbound and
    bound-only (KFUNC-LOAD-001, KFUNC-LOAD-003)."""
    devices = [_device(draw, 2, ndo_bpf=False, offdev=None),
               _device(draw, 3, ndo_bpf=True, offdev=None),
               _device(draw, 4, offdev="nfp0"),
               # a second port of the same offload NIC (KFUNC-ATTACH-003's sibling match)
               _device(draw, 5, offdev="nfp0")]
    xdp, cls = k.BPF_PROG_TYPE_XDP, k.BPF_PROG_TYPE_SCHED_CLS
    loads = [(xdp, 0, 0, []), (xdp, k.BPF_F_XDP_DEV_BOUND_ONLY, 3, []), (xdp, 0, 4, []),
             (cls, 0, 0, []), (cls, 0, 4, []), (xdp, 0, 3, []),
             (xdp, 0, 4, [draw(st.sampled_from(KFUNCS))]),
             # DEV_BOUND_ONLY without prog_ifindex: not bound (KFUNC-LOAD-002), so it
             # attaches in every mode, and a metadata kfunc refuses its load.
             (xdp, k.BPF_F_XDP_DEV_BOUND_ONLY, 0, []),
             (xdp, k.BPF_F_XDP_DEV_BOUND_ONLY, 0, [draw(st.sampled_from(KFUNCS))]),
             # a prog_ifindex naming no device (KFUNC-LOAD-003: -EINVAL), bound-only and
             # offloaded
             (xdp, k.BPF_F_XDP_DEV_BOUND_ONLY, 99, []), (xdp, 0, 99, []),
             # bound loads of a type that cannot be bound (BPF_PROG_TYPE_KPROBE) and a
             # bound-only SCHED_CLS (KFUNC-LOAD-003: -EINVAL each)
             (_KPROBE, 0, 3, []), (cls, k.BPF_F_XDP_DEV_BOUND_ONLY, 3, [])]
    events: list[dict[str, Any]] = [
        {"op": "prog_load", "prog_type": t, "expected_attach_type": 0, "prog_flags": f,
         "prog_ifindex": i, "calls": c} for t, f, i, c in loads]
    native = [k.XDP_FLAGS_DRV_MODE, k.XDP_FLAGS_HW_MODE,
              k.XDP_FLAGS_DRV_MODE | k.XDP_FLAGS_UPDATE_IF_NOEXIST]
    for ifindex in (2, 3, 4):
        progs = draw(st.permutations([0, 1, 2, 3, 4, 7]))[:draw(st.integers(1, 6))]
        for n, prog in enumerate(progs):
            modes = native if ifindex == 2 and n == 0 else _MODES
            events.append({"op": "attach", "ifindex": ifindex, "prog": prog,
                           "flags": draw(st.sampled_from(modes))})
    # The offloaded program in HW mode and an unbound one natively on the sibling port:
    # an attach without a mode flag is then ambiguous (KFUNC-ATTACH-002: -EINVAL).
    events += [{"op": "attach", "ifindex": 5, "prog": 2, "flags": k.XDP_FLAGS_HW_MODE},
               {"op": "attach", "ifindex": 5, "prog": 0, "flags": k.XDP_FLAGS_DRV_MODE},
               {"op": "attach", "ifindex": 5, "prog": 0, "flags": 0}]
    # Each prog_flags bit alone on an unbound load, every bit BPF_PROG_LOAD knows and the
    # unknown ones between them (KFUNC-LOAD-001), and each bit on a bound-only load
    # (KFUNC-LOAD-003: only HAS_FRAGS may join DEV_BOUND_ONLY).
    for bit in range(_FLAG_BITS):
        events.append({"op": "prog_load", "prog_type": xdp, "expected_attach_type": 0,
                       "prog_flags": 1 << bit, "prog_ifindex": 0, "calls": []})
        events.append({"op": "prog_load", "prog_type": xdp, "expected_attach_type": 0,
                       "prog_flags": k.BPF_F_XDP_DEV_BOUND_ONLY | 1 << bit,
                       "prog_ifindex": 3, "calls": []})
    return Scenario(component="kfunc", config={"devices": devices}, events=tuple(events),
                    rules=("KFUNC-ATTACH-002", "KFUNC-ATTACH-004", "KFUNC-ATTACH-005"))


@st.composite
def _maps_family(draw: st.DrawFn) -> Scenario:
    """Programs for each map's attach type, unbound, bound and offloaded, each inserted
    into every program map (KFUNC-MAP-001 .. KFUNC-MAP-004)."""
    devices = [_device(draw, 2, ndo_bpf=True, offdev=None), _device(draw, 3, offdev="nfp0")]
    loads = [(k.BPF_PROG_TYPE_XDP, k.BPF_XDP_DEVMAP, 0, 0),
             (k.BPF_PROG_TYPE_XDP, k.BPF_XDP_CPUMAP, 0, 0),
             (k.BPF_PROG_TYPE_XDP, 0, 0, 0),
             (k.BPF_PROG_TYPE_SCHED_CLS, 0, 0, 0),
             (k.BPF_PROG_TYPE_XDP, draw(st.sampled_from([0, k.BPF_XDP_DEVMAP, k.BPF_XDP_CPUMAP])),
              k.BPF_F_XDP_DEV_BOUND_ONLY, 2),
             (k.BPF_PROG_TYPE_XDP, draw(st.sampled_from([0, k.BPF_XDP_DEVMAP, k.BPF_XDP_CPUMAP])),
              0, 3)]
    events: list[dict[str, Any]] = [
        {"op": "prog_load", "prog_type": t, "expected_attach_type": a, "prog_flags": f,
         "prog_ifindex": i, "calls": []} for t, a, f, i in loads]
    for index in draw(st.permutations(range(len(loads)))):
        events.append({"op": "map_update", "map_type": draw(st.sampled_from(_MAPS)),
                       "prog": index})
    return Scenario(component="kfunc", config={"devices": devices}, events=tuple(events),
                    rules=("KFUNC-MAP-001", "KFUNC-MAP-002", "KFUNC-MAP-003", "KFUNC-MAP-004"))


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    """Devices with random ops (some of an offload driver, some without ndo_bpf), then
    loads, attaches (every mode combination, twice to the same device sometimes), map
    updates of every program map, and kfunc calls; three times in eight a family aimed
    at the kfunc calls' branches, the attach modes or the program maps."""
    devices = [_device(draw, ifindex) for ifindex in range(2, 2 + draw(st.integers(1, 3)))]
    ifindexes = [d["ifindex"] for d in devices]
    offload = [d["ifindex"] for d in devices if d["offdev"] is not None]
    events: list[dict[str, Any]] = []
    loads: list[tuple[int, list[str]]] = []
    for _ in range(draw(st.integers(1, 3))):
        load = draw(_load(ifindexes, offload))
        loads.append((len(events), load["calls"]))
        events.append({"op": "prog_load", **load})
    for _ in range(draw(st.integers(0, 6))):
        load_index, calls = draw(st.sampled_from(loads))
        kind = draw(st.sampled_from(["attach", "attach", "map_update", "call", "call"]))
        if kind == "attach":
            own = events[load_index]["prog_ifindex"]
            targets = [own, own, *ifindexes] if own in ifindexes else ifindexes
            attach = {"op": "attach", "ifindex": draw(st.sampled_from(targets)),
                      "prog": load_index, "flags": draw(st.sampled_from(_MODES))}
            events.append(attach)
            if draw(st.integers(0, 2)) == 0:
                # Again on the same device: with no mode, UPDATE_IF_NOEXIST or another
                # program (KFUNC-ATTACH-002's ambiguity, KFUNC-ATTACH-004's -EBUSY/-EEXIST).
                again, _ = draw(st.sampled_from(loads))
                events.append({**attach, "prog": again, "flags": draw(st.sampled_from(
                    [0, k.XDP_FLAGS_UPDATE_IF_NOEXIST, *_MODES]))})
        elif kind == "map_update":
            events.append({"op": "map_update", "map_type": draw(st.sampled_from(_MAPS)),
                           "prog": load_index})
        elif calls:
            events.append({"op": "call", "prog": load_index, "kfunc": draw(st.sampled_from(calls))})
    return Scenario(component="kfunc", config={"devices": devices}, events=tuple(events),
                    rules=("KFUNC-API-003", "KFUNC-CALL-001", "KFUNC-LOAD-005",
                           "KFUNC-ATTACH-004", "KFUNC-MAP-001"))


#: The scenario families aimed at rules, by name (each has its own property, so each
#: gets the ci profile's examples: a draw among them reached one family almost never).
FAMILIES: dict[str, Callable[[], st.SearchStrategy[Scenario]]] = {
    "calls": _calls_family, "modes": _modes_family, "maps": _maps_family,
}


def family_scenarios(name: str) -> st.SearchStrategy[Scenario]:
    """The family ``name`` of :data:`FAMILIES`."""
    return FAMILIES[name]()


# --- fixed cases ----------------------------------------------------------------------------

#: The rules :func:`fixed_scenarios` aims at (the test spells them out again for
#: ``rx-oracle spec`` and checks the two agree).
FIXED_RULES = ("KFUNC-ATTACH-001", "KFUNC-ATTACH-003", "KFUNC-ATTACH-004", "KFUNC-MAP-002")


def _fixed_load(prog_type: int = k.BPF_PROG_TYPE_XDP, prog_flags: int = 0,
                prog_ifindex: int = 0) -> dict[str, Any]:
    return {"op": "prog_load", "prog_type": prog_type, "expected_attach_type": 0,
            "prog_flags": prog_flags, "prog_ifindex": prog_ifindex, "calls": []}


def _fixed_attach(prog: int, ifindex: int, flags: int) -> dict[str, Any]:
    return {"op": "attach", "ifindex": ifindex, "prog": prog, "flags": flags}


def _fixed_device(ifindex: int, offdev: str | None = None) -> dict[str, Any]:
    return {"ifindex": ifindex, "name": f"eth{ifindex}", "ops": {}, "ndo_bpf": True,
            "offdev": offdev}


def fixed_scenarios() -> list[tuple[str, Scenario]]:
    """Roads the random draws miss, each once (the full mutation run's survivors):

    * KFUNC-MAP-002: a ``BPF_PROG_TYPE_EXT`` (28) program offered to a PROG_ARRAY is
      refused whatever its binding, and its neighbours STRUCT_OPS (27) and LSM (29) are
      not (the draws load XDP, SCHED_CLS and KPROBE programs only);
    * KFUNC-ATTACH-003: a bound-only program matches its own device only, also where the
      v6.17-rc3 comparison would match (two devices whose entries both have no offload
      device; a sibling port of an offload NIC), while an offloaded program matches the
      sibling port;
    * KFUNC-ATTACH-001: an offloaded program fetched for generic mode is refused before
      the checks that would answer -EEXIST (a native program beside it) or -EBUSY
      (UPDATE_IF_NOEXIST over a generic one);
    * KFUNC-ATTACH-004: generic beside native is -EEXIST in both orders, and generic
      beside a HW-mode program is allowed (the other mode of generic is native, not HW).
    """
    xdp = k.BPF_PROG_TYPE_XDP
    only = k.BPF_F_XDP_DEV_BOUND_ONLY
    skb, drv, hw = k.XDP_FLAGS_SKB_MODE, k.XDP_FLAGS_DRV_MODE, k.XDP_FLAGS_HW_MODE
    prog_types = (27, k.BPF_PROG_TYPE_EXT, 29, xdp)
    return [
        ("prog array and BPF_PROG_TYPE_EXT", Scenario(
            component="kfunc", config={"devices": []},
            events=(*(_fixed_load(t) for t in prog_types),
                    *({"op": "map_update", "map_type": k.BPF_MAP_TYPE_PROG_ARRAY, "prog": i}
                      for i in range(len(prog_types)))),
            rules=("KFUNC-MAP-002",))),
        ("bound-only program on another device", Scenario(
            component="kfunc",
            config={"devices": [_fixed_device(2), _fixed_device(3),
                                _fixed_device(4, "nfp0"), _fixed_device(5, "nfp0")]},
            events=(_fixed_load(xdp, only, 2), _fixed_load(xdp, only, 3),
                    _fixed_load(xdp, only, 4), _fixed_load(xdp, 0, 4),
                    # both bind targets' entries have no offload device: -EINVAL
                    _fixed_attach(0, 3, drv),
                    # a sibling port of the offload NIC, native and HW: -EINVAL
                    _fixed_attach(2, 5, drv), _fixed_attach(2, 5, hw),
                    # the offloaded program matches the sibling port; each bound-only
                    # program its own device
                    _fixed_attach(3, 5, hw), _fixed_attach(0, 2, drv),
                    _fixed_attach(1, 3, drv)),
            rules=("KFUNC-ATTACH-003", "KFUNC-ATTACH-004"))),
        ("offloaded program in generic mode", Scenario(
            component="kfunc",
            config={"devices": [_fixed_device(3), _fixed_device(4, "nfp0")]},
            events=(_fixed_load(xdp, 0, 4), _fixed_load(), _fixed_load(),
                    _fixed_attach(1, 4, drv), _fixed_attach(0, 4, skb),
                    _fixed_attach(2, 3, skb),
                    _fixed_attach(0, 3, skb | k.XDP_FLAGS_UPDATE_IF_NOEXIST)),
            rules=("KFUNC-ATTACH-001",))),
        ("generic beside native and HW", Scenario(
            component="kfunc",
            config={"devices": [_fixed_device(2), _fixed_device(3),
                                _fixed_device(4, "nfp0")]},
            events=(_fixed_load(), _fixed_load(), _fixed_load(xdp, 0, 4),
                    _fixed_attach(0, 2, drv), _fixed_attach(1, 2, skb),
                    _fixed_attach(0, 3, skb), _fixed_attach(1, 3, drv),
                    _fixed_attach(2, 4, hw), _fixed_attach(0, 4, skb),
                    _fixed_attach(1, 4, drv)),
            rules=("KFUNC-ATTACH-004",))),
    ]

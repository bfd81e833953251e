"""The ``mlx5`` component: ConnectX completions and mlx5e's CQ reader (step 1 of mlx5).

config:  ``key`` (hex), ``indir`` (ring numbers), optional ``compression`` ("none",
         "basic", "enhanced"), ``rq_type`` ("cyclic", "striding"), ``mini_cqe_format``
         (1 = CSUM, 3 = CSUM_STRIDX), ``log_cq_size``, ``log_wq_size``, ``log_stride_sz``,
         ``log_num_strides``, ``mtu``, ``vlan_strip``, ``ts_format`` ("free_running",
         "real_time"), ``timestamps`` (one int per frame), ``budget`` (NAPI budget per
         poll, default 64) and ``start`` (initial CQ counter, default 0).
frames:  Ethernet frames the device receives, in order.
         Driver/XDP keys (step 2): ``rx_linear`` (default true), ``frag_size`` (legacy
         non-linear WQE fragment), ``rxhash`` (NETIF_F_RXHASH, default true), ``hwtstamp``
         ("none"/"all"), ``xdpsq_size``, ``min_inline``, ``redirect_ok``.
events:  unused in this step (a later step may carry a ring image instead of frames).
observables: ``packets[i]`` = every field of the i-th CQE the RX handler is called with
         (``mlx5_cqe64`` names; reserved byte arrays as hex), ``polls`` = work done per
         poll, ``stats`` = ``cqe_compress_blks`` / ``cqe_compress_pkts``.
         With ``program`` / ``per_packet_programs`` the RX handlers run (step 2) and add
         ``xdp[i]`` per CQE (``kind``, ``frame``, ``mxbuf`` = the per-RQ buffer as the
         program got it, ``ops`` = op records with kfunc rc/values, ``verdict``,
         ``exception``, ``fate``, ``skb`` = what went up the stack), ``counters``
         (ethtool names) and ``pages`` (page fates).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
from hypothesis import strategies as st
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Raw

from conformance.components import Component
from conformance.scenario import Scenario
from reference import rss
from reference.mlx5 import cqe as C
from reference.mlx5 import rx, sim
from reference.mlx5.device import Compression, DeviceConfig, RqType, TsFormat
from reference.trace import Trace


def config_of(scenario: Scenario) -> DeviceConfig:
    cfg = scenario.config
    return DeviceConfig(
        rss=rss.RssConfig(
            key=bytes.fromhex(str(cfg["key"])), indir=tuple(int(q) for q in cfg["indir"])
        ),
        compression=Compression(str(cfg.get("compression", "none"))),
        rq_type=RqType(str(cfg.get("rq_type", "cyclic"))),
        mini_cqe_format=int(cfg.get("mini_cqe_format", C.MLX5_CQE_FORMAT_CSUM)),
        log_cq_size=int(cfg.get("log_cq_size", 10)),
        log_wq_size=int(cfg.get("log_wq_size", 10)),
        log_stride_sz=int(cfg.get("log_stride_sz", 6)),
        log_num_strides=int(cfg.get("log_num_strides", 9)),
        mtu=int(cfg.get("mtu", 1500)),
        vlan_strip=bool(cfg.get("vlan_strip", False)),
        ts_format=TsFormat(str(cfg.get("ts_format", "free_running"))),
    )


def _cqe_obs(cqe: C.mlx5_cqe64) -> dict[str, Any]:
    return {k: (v.hex() if isinstance(v, bytes) else v)
            for k, v in attrs.asdict(cqe, recurse=False).items()}


def rq_config_of(scenario: Scenario) -> rx.RqConfig:
    cfg = scenario.config
    return rx.RqConfig(
        rq_type=RqType(str(cfg.get("rq_type", "cyclic"))),
        linear=bool(cfg.get("rx_linear", True)),
        frag_size=int(cfg.get("frag_size", 1024)),
        log_stride_sz=int(cfg.get("log_stride_sz", 6)),
        mtu=int(cfg.get("mtu", 1500)),
        rxhash=bool(cfg.get("rxhash", True)),
        hwtstamp_rx_all=str(cfg.get("hwtstamp", "none")) == "all",
        ts_format=TsFormat(str(cfg.get("ts_format", "free_running"))),
        xdpsq_size=int(cfg.get("xdpsq_size", 1024)),
        min_inline=bool(cfg.get("min_inline", False)),
        redirect_ok=bool(cfg.get("redirect_ok", True)),
    )


def has_program(scenario: Scenario) -> bool:
    return scenario.program is not None or bool(scenario.per_packet_programs)


def driver_run(scenario: Scenario, trace: Trace | None = None) -> rx.DriverRun:
    """MLX5-RX-003: the RX handlers and XDP on top of the device/CQ round trip."""
    cfg = scenario.config
    stamps = cfg.get("timestamps")
    return rx.run(
        config_of(scenario), list(scenario.frames), rq_config_of(scenario),
        scenario.program_for, int(cfg.get("budget", 64)),
        timestamps=None if stamps is None else [int(t) for t in stamps],
        start=int(cfg.get("start", 0)), trace=trace,
    )


_RECORD_KEYS = ("kind", "frame", "mxbuf", "ops", "verdict", "exception", "fate", "skb")


def run(scenario: Scenario, trace: Trace | None = None) -> dict[str, Any]:
    """MLX5-COMP-005: device and driver on one ring, polled until drained."""
    cfg = scenario.config
    if has_program(scenario):
        d = driver_run(scenario, trace)
        cqes = [c for p in d.polls for c in p.cqes]
        return {
            "packets": [_cqe_obs(c) for c in cqes],
            "polls": [p.work_done for p in d.polls],
            "stats": dict(d.stats),
            "xdp": [{k: r[k] for k in _RECORD_KEYS} for r in d.records],
            "counters": dict(d.counters),
            "pages": dict(d.pages),
        }
    stamps = cfg.get("timestamps")
    result = sim.run(
        config_of(scenario),
        list(scenario.frames),
        int(cfg.get("budget", 64)),
        timestamps=None if stamps is None else [int(t) for t in stamps],
        start=int(cfg.get("start", 0)),
        trace=trace,
    )
    return {
        "packets": [_cqe_obs(c) for c in result.cqes],
        "polls": [p.work_done for p in result.polls],
        "stats": dict(result.stats),
    }


def expected(scenario: Scenario) -> dict[str, Any]:
    return run(scenario)


def applied(scenario: Scenario) -> set[str]:
    trace = Trace()
    run(scenario, trace)
    return set(trace.rules())


_FIELD_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("packets[*].rss_hash_*", ("MLX5-DEV-002", "MLX5-CQ-006")),
    ("packets[*].check_sum", ("MLX5-DEV-004", "MLX5-COMP-004", "MLX5-CQ-005")),
    ("packets[*].byte_cnt", ("MLX5-DEV-008", "MLX5-DEV-010", "MLX5-CQ-005")),
    ("packets[*].wqe_counter", ("MLX5-DEV-008", "MLX5-DEV-010", "MLX5-CQ-007")),
    ("packets[*].op_own", ("MLX5-DEV-013", "MLX5-CQ-005")),
    ("packets[*].hds_ip_ext", ("MLX5-DEV-005",)),
    ("packets[*].l4_l3_hdr_type", ("MLX5-DEV-003", "MLX5-DEV-006")),
    ("packets[*].vlan_info", ("MLX5-DEV-006",)),
    ("packets[*].timestamp_*", ("MLX5-DEV-007",)),
    ("packets*", ("MLX5-COMP-005",)),
    ("xdp[*].kind", ("MLX5-RX-002",)),
    ("xdp[*].frame", ("MLX5-COMP-005",)),
    ("xdp[*].mxbuf.flags", ("MLX5-XDP-001",)),
    ("xdp[*].mxbuf.headroom", ("MLX5-XDP-001",)),
    ("xdp[*].mxbuf.metasize", ("MLX5-XDP-001",)),
    ("xdp[*].mxbuf.nr_frags", ("MLX5-XDP-003",)),
    ("xdp[*].mxbuf.frags_size", ("MLX5-XDP-003",)),
    ("xdp[*].mxbuf*", ("MLX5-XDP-002",)),
    ("xdp[*].ops*", ("MLX5-XDP-002",)),
    ("xdp[*].verdict", ("MLX5-XDP-004",)),
    ("xdp[*].exception", ("MLX5-XDP-006",)),
    ("xdp[*].fate", ("MLX5-XDP-004",)),
    ("xdp[*].skb*", ("MLX5-XDP-004",)),
    ("counters.rx_packets", ("MLX5-RX-001",)),
    ("counters.rx_bytes", ("MLX5-RX-001",)),
    ("counters.rx_xdp_drop", ("MLX5-XDP-005",)),
    ("counters.rx_xdp_redirect", ("MLX5-XDP-009",)),
    ("counters.rx_xdp_tx_xmit", ("MLX5-XDP-007",)),
    ("counters.rx_xdp_tx_full", ("MLX5-XDP-008",)),
    ("counters.rx_xdp_tx_err", ("MLX5-XDP-008",)),
    ("counters.rx_xdp_tx_cqe", ("MLX5-RX-003",)),
    ("counters.*", ("MLX5-RX-002",)),
    ("pages.recycled", ("MLX5-XDP-005",)),
    ("pages.redirected", ("MLX5-XDP-009",)),
    ("pages.to_stack", ("MLX5-XDP-004",)),
    ("pages.*", ("MLX5-RX-003",)),
    ("polls*", ("MLX5-CQ-003", "MLX5-CQ-004")),
    ("stats.*", ("MLX5-CQ-010",)),
)

_FATE_RULES = {"drop": "MLX5-XDP-005", "tx": "MLX5-XDP-007", "redirect": "MLX5-XDP-009",
               "skb": "MLX5-XDP-004"}


def attribute(scenario: Scenario) -> Callable[[str], tuple[str, ...]]:
    """A kfunc record is governed by that kfunc's rule (the hash of a packet whose CQE
    the CQ reader cleared by MLX5-KF-003); a fate by the rule of the reference's fate."""
    if not has_program(scenario):
        return lambda path: ()
    d = driver_run(scenario)
    real_time = config_of(scenario).ts_format is TsFormat.REAL_TIME

    def rules(path: str) -> tuple[str, ...]:
        if not path.startswith("xdp["):
            return ()
        index = int(path.removeprefix("xdp[").partition("]")[0])
        if index >= len(d.records):
            return ()
        rec, rest = d.records[index], path.partition("]")[2]
        if rest == ".fate":
            fate = _FATE_RULES.get(str(rec["fate"]))
            return (fate,) if fate else ()
        if rest.startswith(".ops["):
            j = int(rest.removeprefix(".ops[").partition("]")[0])
            ops = rec["ops"]
            if j < len(ops) and ops[j]["op"] == "kfunc":
                name = ops[j]["name"]
                if name == "rx_hash":
                    return ("MLX5-KF-003",) if d.from_title[index] else ("MLX5-KF-002",)
                if name == "rx_vlan_tag":
                    return ("MLX5-KF-006",)
                return ("MLX5-KF-004",) if real_time else ("MLX5-KF-005",)
        return ()

    return rules


COMPONENT = Component(name="mlx5", expected=expected, field_rules=_FIELD_RULES,
                      attribute=attribute, applied=applied)


def _eth() -> Ether:
    return Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")


@st.composite
def frames(draw: st.DrawFn) -> bytes:
    """A few flows (so runs form and break), varied sizes, some tagged."""
    flow = draw(st.integers(0, 3))
    ip = IP(src=f"10.0.{flow}.1", dst="10.0.9.9")
    l4 = UDP(sport=1000 + flow, dport=53) if flow % 2 else TCP(sport=2000, dport=80, flags="A")
    body = ip / l4 / Raw(b"m" * draw(st.integers(0, 600)))
    if draw(st.integers(0, 7)) == 0:
        return bytes(_eth() / Dot1Q(vlan=draw(st.integers(1, 4094))) / body)
    return bytes(_eth() / body)


def scenarios() -> st.SearchStrategy[Scenario]:
    """Step-1 (CQ only) and step-2 (RX handlers with a program) scenarios."""
    return st.one_of(cq_scenarios(), xdp_scenarios(), xdp_scenarios(compressed_hash=True))


@st.composite
def cq_scenarios(draw: st.DrawFn) -> Scenario:
    striding = draw(st.booleans())
    log_cq = draw(st.integers(3, 7))
    config: dict[str, Any] = {
        "key": draw(st.binary(min_size=40, max_size=40)).hex(),
        "indir": [0, 1, 2, 3],
        "compression": draw(st.sampled_from(["none", "basic", "enhanced"])),
        "rq_type": "striding" if striding else "cyclic",
        "mini_cqe_format": 3 if striding and draw(st.booleans()) else 1,
        "log_cq_size": log_cq,
        "log_wq_size": draw(st.integers(1, 6)),
        "log_num_strides": draw(st.integers(3, 6)),
        "mtu": draw(st.sampled_from([400, 1500])),
        "vlan_strip": draw(st.booleans()),
        "budget": draw(st.integers(8, 64)),
        "start": draw(st.integers(0, (1 << log_cq) - 1)),
    }
    return Scenario(
        component="mlx5",
        config=config,
        frames=tuple(draw(st.lists(frames(), min_size=1, max_size=40))),
    )


# --- step 2: programs on the driver path ---------------------------------------------------


@st.composite
def xdp_programs(draw: st.DrawFn, *, kfunc: str | None = None) -> tuple[dict[str, Any], ...]:
    """Op lists from the xdp component, biased to metadata, kfuncs and each verdict."""
    from conformance.components.xdp import op_lists

    ops: list[dict[str, Any]] = []
    if draw(st.booleans()):
        ops.append({"op": "adjust_meta", "delta": draw(st.sampled_from([-4, -8, -32]))})
    if kfunc is not None:
        ops.append({"op": "kfunc", "name": kfunc})
    ops += [o for o in draw(op_lists()) if o["op"] != "return"]
    ops.append({"op": "return", "action": draw(st.sampled_from([0, 1, 2, 2, 3, 3, 4, 7]))})
    return tuple(ops)


@st.composite
def xdp_scenarios(draw: st.DrawFn, *, compressed_hash: bool = False) -> Scenario:
    """Step-1 scenarios plus a program, RQ layouts with and without fragments, small
    XDP-SQs (to fill them), timestamps and the hash/timestamp switches."""
    base = draw(cq_scenarios())
    config = dict(base.config)
    n = len(base.frames)
    frames = base.frames
    if compressed_hash:
        config["compression"] = draw(st.sampled_from(["basic", "enhanced"]))
        config["rxhash"] = True
        one = draw(frames_strategy())
        frames = (one,) * draw(st.integers(2, 6)) + frames
        n = len(frames)
    else:
        config["rxhash"] = draw(st.integers(0, 5)) > 0
    config.update(
        rx_linear=draw(st.booleans()),
        frag_size=draw(st.sampled_from([128, 256, 1024])),
        hwtstamp=draw(st.sampled_from(["none", "all"])),
        ts_format=draw(st.sampled_from(["free_running", "real_time"])),
        xdpsq_size=draw(st.sampled_from([2, 4, 1024])),
        min_inline=draw(st.booleans()),
        redirect_ok=draw(st.integers(0, 3)) > 0,
        timestamps=[draw(st.integers(0, 2**40)) for _ in range(n)],
        log_stride_sz=draw(st.sampled_from([6, 8])),
    )
    if config["rq_type"] == "striding" and config["mini_cqe_format"] == 3:
        config["log_stride_sz"] = 6
    kfunc = "rx_hash" if compressed_hash else None
    per_packet = {}
    if n > 1 and draw(st.booleans()):
        per_packet[draw(st.integers(0, n - 1))] = draw(xdp_programs(kfunc=kfunc))
    return Scenario(component="mlx5", config=config, frames=tuple(frames),
                    program=draw(xdp_programs(kfunc=kfunc)), per_packet_programs=per_packet,
                    rules=("MLX5-XDP-001", "MLX5-KF-003"))


frames_strategy = frames

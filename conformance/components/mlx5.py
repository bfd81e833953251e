"""The ``mlx5`` component: ConnectX completions and mlx5e's CQ reader (step 1 of mlx5).

config:  ``key`` (hex), ``indir`` (ring numbers), optional ``compression`` ("none",
         "basic", "enhanced"), ``rq_type`` ("cyclic", "striding"), ``mini_cqe_format``
         (1 = CSUM, 3 = CSUM_STRIDX), ``log_cq_size``, ``log_wq_size``, ``log_stride_sz``,
         ``log_num_strides``, ``mtu``, ``vlan_strip``, ``ts_format`` ("free_running",
         "real_time"), ``timestamps`` (one int per frame), ``budget`` (NAPI budget per
         poll, default 64) and ``start`` (initial CQ counter, default 0).
frames:  Ethernet frames the device receives, in order.
events:  unused in this step (a later step may carry a ring image instead of frames).
observables: ``packets[i]`` = every field of the i-th CQE the RX handler is called with
         (``mlx5_cqe64`` names; reserved byte arrays as hex), ``polls`` = work done per
         poll, ``stats`` = ``cqe_compress_blks`` / ``cqe_compress_pkts``.
"""

from __future__ import annotations

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
from reference.mlx5 import sim
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


def run(scenario: Scenario, trace: Trace | None = None) -> dict[str, Any]:
    """MLX5-COMP-005: device and driver on one ring, polled until drained."""
    cfg = scenario.config
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
    ("polls*", ("MLX5-CQ-003", "MLX5-CQ-004")),
    ("stats.*", ("MLX5-CQ-010",)),
)

COMPONENT = Component(name="mlx5", expected=expected, field_rules=_FIELD_RULES, applied=applied)


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


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
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

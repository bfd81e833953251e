"""The ``mlx5`` component: ConnectX completions and mlx5e's CQ reader (step 1 of mlx5).

config:  ``key`` (hex), ``indir`` (ring numbers), optional ``compression`` ("none",
         "basic", "enhanced"), ``rq_type`` ("cyclic", "striding"), ``mini_cqe_format``
         (1 = CSUM, 3 = CSUM_STRIDX), ``log_cq_size``, ``log_wq_size``, ``log_stride_sz``,
         ``log_num_strides``, ``mtu``, ``vlan_strip``, ``ts_format`` ("free_running",
         "real_time"), ``timestamps`` (one int per frame), ``budget`` (NAPI budget per
         poll, default 64) and ``start`` (initial CQ counter, default 0).
frames:  Ethernet frames the device receives, in order.
         Driver/XDP keys (step 2): ``rx_linear`` (default: linear where the MTU lets
         ``mlx5e_rx_is_linear_skb`` choose it, MLX5-RX-006), ``frag_size`` (legacy
         non-linear WQE fragment), ``rxhash`` (NETIF_F_RXHASH, default true), ``hwtstamp``
         ("none"/"all"), ``xdpsq_size``, ``min_inline``, ``redirect_ok``.
events:  unused in this step (a later step may carry a ring image instead of frames).
observables: ``packets[i]`` = every field of the i-th CQE the RX handler is called with
         (``mlx5_cqe64`` names; reserved byte arrays as hex), ``polls`` = work done per
         poll that completed a CQE (an idle poll is not listed), ``stats`` =
         ``cqe_compress_blks`` / ``cqe_compress_pkts``.
         With ``program`` / ``per_packet_programs`` the RX handlers run (step 2) and add
         ``xdp[i]`` per CQE (``kind``, ``frame``, ``mxbuf`` = the per-RQ buffer as the
         program got it, ``ops`` = op records with kfunc rc/values, ``verdict``,
         ``exception``, ``fate``, ``skb`` = what went up the stack), ``counters``
         (ethtool names) and ``pages`` (page fates).
         Checksum and skb metadata keys: ``rx_path`` (run the RX handlers without a
         program), ``rxcsum`` (NETIF_F_RXCSUM, default true), ``no_csum_complete`` (the
         private flag), ``csum_full`` (the device's cqe_checksum_full), ``dev_addr`` (the
         netdev's MAC, default 02:00:00:00:00:02), ``qpn`` (what the device writes into
         ``sop_drop_qpn``). ``skb`` then also holds ``ip_summed``, ``csum`` (16-bit sum for
         CHECKSUM_COMPLETE, else null), ``csum_level``, ``encapsulation``, ``hash``,
         ``l4_hash``, ``hash_type``, ``vlan_present``/``vlan_proto``/``vlan_tci``, ``mark``,
         ``hwtstamp`` (ns or null), ``protocol`` and ``pkt_type``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs
from hypothesis import strategies as st
from scapy.layers.inet import ICMP, IP, TCP, UDP, IPOption_NOP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment, IPv6ExtHdrHopByHop
from scapy.layers.l2 import ARP, Dot1AD, Dot1Q, Ether
from scapy.layers.sctp import SCTP
from scapy.packet import Packet, Raw

from conformance.components import Component, kernel_of, libblame, mlx5_ring, require
from conformance.readable import kfunc_result_text, value_text
from conformance.scenario import Scenario
from conformance.strategies.frames import header_cases, l4_check_edge_frames, udp_length_frames
from conformance.vectors.ms_rss import MS_KEY
from reference import rss
from reference.errors import InvalidConfig
from reference.kernel import gate
from reference.mlx5 import cqe as C
from reference.mlx5 import rx, sim, skbmeta
from reference.mlx5.counters import Mlx5eRqStats
from reference.mlx5.device import Compression, DeviceConfig, Mlx5Device, RqType, TsFormat
from reference.mlx5.ring import RingRun
from reference.trace import Trace
from reference.xdp.arch import X86_64


def config_of(scenario: Scenario) -> DeviceConfig:
    """The device configuration of a frame scenario; its RSS ``key`` and ``indir`` are
    required there (a ring image has no device, MLX5-RING-001)."""
    cfg = scenario.config
    for name in ("key", "indir"):
        if name not in cfg:
            raise InvalidConfig("a frame scenario's device needs an RSS key and indirection "
                                "table", field=name, value=None, rule="MLX5-DEV-001")
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
        csum_full=bool(cfg.get("csum_full", False)),
        qpn=int(cfg.get("qpn", 0)),
    )


def cqe_obs(cqe: C.mlx5_cqe64) -> dict[str, Any]:
    return {k: (v.hex() if isinstance(v, bytes) else v)
            for k, v in attrs.asdict(cqe, recurse=False).items()}


def rq_config_of(scenario: Scenario) -> rx.RqConfig:
    cfg = scenario.config
    return rx.RqConfig(
        rq_type=RqType(str(cfg.get("rq_type", "cyclic"))),
        linear=bool(cfg.get("rx_linear", linear_by_default(scenario))),
        frag_size=int(cfg.get("frag_size", 1024)),
        log_stride_sz=int(cfg.get("log_stride_sz", 6)),
        mtu=int(cfg.get("mtu", 1500)),
        rxhash=bool(cfg.get("rxhash", True)),
        hwtstamp_rx_all=str(cfg.get("hwtstamp", "none")) == "all",
        ts_format=TsFormat(str(cfg.get("ts_format", "free_running"))),
        xdpsq_size=int(cfg.get("xdpsq_size", 1024)),
        min_inline=bool(cfg.get("min_inline", False)),
        redirect_ok=bool(cfg.get("redirect_ok", True)),
        rxcsum=bool(cfg.get("rxcsum", True)),
        pflag_no_csum_complete=bool(cfg.get("no_csum_complete", False)),
        cqe_checksum_full=bool(cfg.get("csum_full", False)),
        dev_addr=bytes.fromhex(str(cfg.get("dev_addr", "020000000002")).replace(":", "")),
        kernel=kernel_of(scenario),
    )


def linear_by_default(scenario: Scenario) -> bool:
    """MLX5-RX-006: without ``rx_linear`` the RQ is what ``mlx5e_rx_is_linear_skb``
    chooses: linear when a packet of ``hw_mtu`` fits a page with the RQ's headroom."""
    mtu = int(scenario.config.get("mtu", 1500))
    return rx.mlx5e_rx_get_linear_sz_skb(mtu, has_program(scenario)) <= rx.PAGE_SIZE


def has_program(scenario: Scenario) -> bool:
    return scenario.program is not None or bool(scenario.per_packet_programs)


def runs_handlers(scenario: Scenario) -> bool:
    """The RX handlers run (skbs, checksum, XDP) with a program or with ``rx_path``."""
    return has_program(scenario) or bool(scenario.config.get("rx_path", False))


def driver_run(scenario: Scenario, trace: Trace | None = None) -> rx.DriverRun:
    """MLX5-RX-003: the RX handlers and XDP on top of the device/CQ round trip.

    Version gates: the handlers are modelled with the per-RQ buffer (MLX5-XDP-001) and
    the fixed XDP_PASS skbs (MLX5-XDP-004), so older 6.12.y kernels are not applicable.
    The striding non-linear builder follows the scenario's kernel (MLX5-XDP-002,
    MLX5-RX-002 gates)."""
    cfg = scenario.config
    require(scenario, "MLX5-XDP-001", "mlx5 RX handlers")
    require(scenario, "MLX5-XDP-004", "mlx5 XDP_PASS skbs")
    stamps = cfg.get("timestamps")
    return rx.run(
        config_of(scenario), list(scenario.frames), rq_config_of(scenario),
        scenario.program_for, int(cfg.get("budget", 64)),
        timestamps=None if stamps is None else [int(t) for t in stamps],
        start=int(cfg.get("start", 0)), trace=trace,
    )


_RECORD_KEYS = ("kind", "frame", "mxbuf", "ops", "verdict", "exception", "fate", "skb")


def run(scenario: Scenario, trace: Trace | None = None) -> dict[str, Any]:
    """MLX5-COMP-005: device and driver on one ring, polled until drained; a ring-image
    scenario runs the driver alone (MLX5-RING-001, :mod:`.mlx5_ring`)."""
    if mlx5_ring.is_ring(scenario):
        return mlx5_ring.run(scenario, trace)
    if mlx5_ring.is_write(scenario):
        return mlx5_ring.device_write(scenario, trace)
    cfg = scenario.config
    if trace is not None:  # MLX5-DEV-001: the device took this configuration
        device = config_of(scenario)
        trace.emit("MLX5-DEV-001", "device configuration accepted", mtu=device.mtu,
                   log_cq_size=device.log_cq_size, log_wq_size=device.log_wq_size)
    if runs_handlers(scenario):
        d = driver_run(scenario, trace)
        cqes = [c for p in d.polls for c in p.cqes]
        return {
            "packets": [cqe_obs(c) for c in cqes],
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
        "packets": [cqe_obs(c) for c in result.cqes],
        "polls": [p.work_done for p in result.polls],
        "stats": dict(result.stats),
    }


def expected(scenario: Scenario) -> dict[str, Any]:
    return run(scenario)


def applied(scenario: Scenario) -> set[str]:
    trace = Trace()
    run(scenario, trace)
    lib: set[str] = set()
    if not (mlx5_ring.is_ring(scenario) or mlx5_ring.is_write(scenario)):
        lib = libblame.applied(scenario.frames, cqe=True)  # what the device read
        if scenario.config.get("csum_full"):
            lib.add("CSUM-RX-001")
    return set(trace.rules()) | lib


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
    ("packets[*].wqe_id", ("MLX5-DEV-010", "MLX5-COMP-005")),  # the striding WQE it used
    # Any other CQE field is the 64 bytes as MLX5-CQE-001 lays them out.
    ("packets[*].*", ("MLX5-COMP-005", "MLX5-CQE-001")),
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
    ("xdp[*].skb.hash", ("MLX5-SKB-001",)),
    ("xdp[*].skb.l4_hash", ("MLX5-SKB-001",)),
    ("xdp[*].skb.hash_type", ("MLX5-SKB-001",)),
    ("xdp[*].skb.vlan_*", ("MLX5-SKB-002",)),
    ("xdp[*].skb.mark", ("MLX5-SKB-003",)),
    ("xdp[*].skb.hwtstamp", ("MLX5-SKB-004",)),
    ("xdp[*].skb.protocol", ("MLX5-SKB-005",)),
    ("xdp[*].skb.pkt_type", ("MLX5-SKB-005",)),
    ("xdp[*].skb.ip_summed", ("MLX5-CSUM-007",)),
    ("xdp[*].skb.csum", ("MLX5-CSUM-007",)),
    ("xdp[*].skb.csum_level", ("MLX5-CSUM-010",)),
    ("xdp[*].skb.encapsulation", ("MLX5-CSUM-010",)),
    ("xdp[*].skb.headroom", ("MLX5-RX-005", "MLX5-XDP-004")),
    ("xdp[*].skb*", ("MLX5-XDP-004",)),
    ("counters.rx_packets", ("MLX5-RX-001",)),
    ("counters.rx_bytes", ("MLX5-RX-001",)),
    ("counters.rx_removed_vlan_packets", ("MLX5-SKB-002",)),
    ("counters.rx_csum_complete_tail*", ("MLX5-CSUM-009",)),
    ("counters.rx_csum_complete", ("MLX5-CSUM-007",)),
    ("counters.rx_csum_*", ("MLX5-CSUM-010",)),
    ("counters.rx_xdp_drop", ("MLX5-XDP-005",)),
    ("counters.rx_xdp_redirect", ("MLX5-XDP-009",)),
    ("counters.rx_xdp_tx_xmit", ("MLX5-XDP-007",)),
    ("counters.rx_xdp_tx_full", ("MLX5-XDP-008",)),
    ("counters.rx_xdp_tx_err", ("MLX5-XDP-008",)),
    ("counters.rx_xdp_tx_cqe", ("MLX5-RX-003",)),
    ("counters.rx_wqe_err", ("MLX5-CQE-009", "MLX5-RX-002")),
    ("counters.*", ("MLX5-RX-002",)),
    ("pages.recycled", ("MLX5-XDP-005",)),
    ("pages.redirected", ("MLX5-XDP-009",)),
    ("pages.to_stack", ("MLX5-XDP-004",)),
    ("pages.*", ("MLX5-RX-003",)),
    ("polls*", ("MLX5-CQ-003", "MLX5-CQ-004")),
    ("stats.*", ("MLX5-CQ-010",)),
    ("cc", ("MLX5-RING-001",)),
    ("slots*", ("MLX5-DEV-013", "MLX5-COMP-002", "MLX5-COMP-003", "MLX5-RING-004")),
    ("pc", ("MLX5-DEV-013", "MLX5-RING-004")),
    ("pending", ("MLX5-DEV-013", "MLX5-RING-004")),
    ("placements*", ("MLX5-DEV-008", "MLX5-DEV-010", "MLX5-RING-004")),
    ("recovering", ("MLX5-CQE-009",)),
)

_FATE_RULES = {"drop": "MLX5-XDP-005", "tx": "MLX5-XDP-007", "redirect": "MLX5-XDP-009",
               "skb": "MLX5-XDP-004"}


#: CQE fields whose encoding rule (MLX5-CQE-*) governs them besides the device rule.
_CQE_ENCODING = {"op_own": "MLX5-CQE-003", "rss_hash_type": "MLX5-CQE-005",
                 "l4_l3_hdr_type": "MLX5-CQE-006", "timestamp_h": "MLX5-CQE-007",
                 "timestamp_l": "MLX5-CQE-007"}
_SESSION_FIELDS = ("byte_cnt", "check_sum", "wqe_counter")


def _cq_attribution(scenario: Scenario) -> Callable[[str], tuple[str, ...]]:
    """Blame from the reference's own run of the device and the CQ reader.

    A CQE is blamed on what the device decided for it: a filler on MLX5-DEV-011, an error
    completion on the length rule that made it (MLX5-DEV-009 cyclic, MLX5-DEV-012
    striding), a ``cqe_checksum_full`` sum on MLX5-DEV-014; its raw fields also on their
    encoding rule (MLX5-CQE-*), and on a basic session's mini-array reading (MLX5-CQ-008,
    op_own on MLX5-CQ-009).  Poll ``i`` is blamed on what ended it in the trace: a session
    left whole (MLX5-CQ-004), a slot the hardware still owned (MLX5-CQ-001, or
    MLX5-CQ-002's validity byte with enhanced compression), else the budget
    (MLX5-CQ-003); a slot a basic session consumed one lap earlier also on the stamp that
    keeps it the hardware's (MLX5-CQ-009).  The compression counters on the rules that
    formed the sessions."""
    cfg = config_of(scenario)
    stamps = scenario.config.get("timestamps")
    trace = Trace()
    run(scenario, trace)
    completions = Mlx5Device(cfg, pc=int(scenario.config.get("start", 0))).receive(
        list(scenario.frames), None if stamps is None else [int(t) for t in stamps], None)
    mode = cfg.compression
    striding = cfg.rq_type is RqType.STRIDING
    ended: list[set[str]] = []
    seen: set[str] = set()
    sessions: list[tuple[int, int]] = []  # basic sessions: (first counter, packets)
    for event in trace.events:
        fields = dict(event.fields)
        seen.add(event.rule)
        if event.rule == "MLX5-CQ-010" and event.what == "basic session starts":
            sessions.append((int(str(fields["cc"])), int(str(fields["packets"]))))
        if (event.rule == "MLX5-CQ-001" and event.what == "slot owned by hardware"
                and any(0 <= int(str(fields["cc"])) - cfg.cq_size - first < n
                        for first, n in sessions)):
            # The slot a session consumed one lap earlier, not rewritten since: it reads
            # as the hardware's because the reader stamped it (MLX5-CQ-009).
            seen.add("MLX5-CQ-009")
        if event.rule == "MLX5-CQ-003" and event.what == "poll done":
            if fields.get("work_done"):
                ended.append(seen)
            seen = set()

    def packet_rules(index: int, field: str) -> tuple[str, ...]:
        if index >= len(completions):
            return ()
        comp = completions[index]
        if comp.filler:
            return ("MLX5-DEV-011",)
        if comp.error:
            return ("MLX5-DEV-012",) if striding else ("MLX5-DEV-009",)
        # What the device read through the shared parser and checksum code (libblame).
        lib = libblame.mlx5_cqe_rules(scenario.frames[comp.frame], field,
                                      csum_full=cfg.csum_full, vlan_strip=cfg.vlan_strip)
        if field == "check_sum" and cfg.csum_full:
            return ("MLX5-DEV-014", *lib)
        extra: tuple[str, ...] = ()
        if field in _CQE_ENCODING:
            extra += (_CQE_ENCODING[field],)
        if field == "byte_cnt" and striding:
            extra += ("MLX5-CQE-008",)
        if mode is Compression.BASIC and field in _SESSION_FIELDS:
            extra += ("MLX5-CQ-008",)
        if mode is Compression.BASIC and field == "op_own":
            extra += ("MLX5-CQ-009",)
        extra += lib
        return (*COMPONENT.rules_for(f"packets[{index}].{field}"), *extra) if extra else ()

    def rules(path: str) -> tuple[str, ...]:
        if path.startswith("packets["):
            index, _, field = path.removeprefix("packets[").partition("].")
            return packet_rules(int(index), field) if index.isdigit() else ()
        if path.startswith("polls["):
            i = int(path.removeprefix("polls[").partition("]")[0])
            if i >= len(ended):
                return ()
            if "MLX5-CQ-004" in ended[i]:
                return ("MLX5-CQ-004",)
            if {"MLX5-CQ-001", "MLX5-CQ-009"} <= ended[i]:  # stopped at a stamped slot
                return ("MLX5-CQ-001", "MLX5-CQ-009")
            for rule in ("MLX5-CQ-002", "MLX5-CQ-001"):  # stopped at a slot not yet new
                if rule in ended[i]:
                    return (rule,)
            return ("MLX5-CQ-003",)
        if path.startswith("stats.") and mode is not Compression.NONE:
            return ("MLX5-CQ-010", "MLX5-COMP-001",
                    "MLX5-COMP-003" if mode is Compression.ENHANCED else "MLX5-COMP-002")
        return ()

    return rules


def attribute(scenario: Scenario) -> Callable[[str], tuple[str, ...]]:
    """A kfunc record is governed by that kfunc's rule (the hash of a packet whose CQE
    the CQ reader cleared by MLX5-KF-003); a fate by the rule of the reference's fate;
    CQEs, polls and the compression counters as :func:`_cq_attribution` says."""
    d: rx.DriverRun | RingRun
    cq_rules: Callable[[str], tuple[str, ...]]
    if mlx5_ring.is_write(scenario):  # the device alone: COMPONENT's field rules
        return lambda path: ()
    if mlx5_ring.is_ring(scenario):
        cq_rules, d = _ring_rules, mlx5_ring.ring_run(scenario)
    else:
        cq_rules = _cq_attribution(scenario)
        if not runs_handlers(scenario):
            return cq_rules
        d = driver_run(scenario)
    real_time = str(scenario.config.get("ts_format", "free_running")) == "real_time"
    cqes = [c for p in d.polls for c in p.cqes]

    ring = isinstance(d, RingRun)
    rq = rq_config_of(scenario)
    headers_only = (rq.rq_type is RqType.STRIDING and not rq.linear
                    and gate(rq.kernel, "MLX5-XDP-002"))

    def rules(path: str) -> tuple[str, ...]:
        found = handler_rules(path)
        extra = _ring_extra(path, d.records, d.from_title) if ring else ()
        return (*extra, *(found or COMPONENT.rules_for(path))) if extra else found

    def handler_rules(path: str) -> tuple[str, ...]:
        if not path.startswith("xdp["):
            return cq_rules(path)
        index = int(path.removeprefix("xdp[").partition("]")[0])
        if index >= len(d.records):
            return ()
        rec, rest = d.records[index], path.partition("]")[2]
        if rest == ".skb.metasize" and rec["verdict"] is None:
            # No program ran: the skb's metadata size is the per-packet reset's (the
            # buffer's data_meta = data), not anything XDP_PASS carried over.
            return ("MLX5-XDP-001",)
        if rest in (".skb.ip_summed", ".skb.csum") and rec["skb"] is not None:
            return _csum_blame(scenario, cqes[index], rec["skb"], rest == ".skb.csum")
        if rest == ".skb.nr_frags" and rec["verdict"] is None and headers_only:
            # No program: the striding non-linear skb's head is eth_get_headlen's, the
            # fragments hold the rest (MLX5-XDP-002 over the flow dissector, PKT-L4-007).
            return ("MLX5-XDP-002", "PKT-L4-007", "MLX5-XDP-004")
        if rest == ".fate":
            fate = _FATE_RULES.get(str(rec["fate"]))
            return (fate,) if fate else ()
        if rest == ".exception" and rec["verdict"] == "XDP_TX":
            # Whether an XDP_TX raises the exception is the XDP-SQ's length and room
            # checks' decision (MLX5-XDP-008); the exception itself is MLX5-XDP-006's.
            return ("MLX5-XDP-008", "MLX5-XDP-006")
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


def _ring_extra(path: str, records: tuple[dict[str, Any], ...],
                from_title: tuple[bool, ...]) -> tuple[str, ...]:
    """In a ring image a field also rests on the rule of the CQE bytes behind it: the
    buffer a CQE names (MLX5-RING-002), its hash-type encoding (MLX5-RING-005; not for a
    packet of a compressed session, whose hash the CQ reader rebuilt, MLX5-KF-003), an
    error CQE's opcode and syndrome (MLX5-RING-006)."""
    if path == "recovering" or path == "counters.rx_wqe_err":
        return ("MLX5-RING-006",)
    if not path.startswith("xdp["):
        return ()
    index = int(path.removeprefix("xdp[").partition("]")[0])
    rest = path.partition("]")[2]
    if index < len(records) and records[index]["kind"] == "error" and rest == ".kind":
        return ("MLX5-RING-006",)
    if rest in (".skb.hash", ".skb.hash_type", ".skb.l4_hash") or (
            rest.startswith(".ops[") and rest.endswith((".rss_type", ".hash"))):
        return () if index < len(from_title) and from_title[index] else ("MLX5-RING-005",)
    if rest in (".skb.data", ".skb.len", ".mxbuf.len"):
        return ("MLX5-RING-002",)
    return ()


def _ring_rules(path: str) -> tuple[str, ...]:
    """MLX5-RING-001: in a ring image the CQEs come from the ring, not from a device
    rule: a handler-visible CQE field is the reader's (decompression) or the ring's, read
    at the offsets MLX5-CQE-001 gives."""
    if path.startswith("packets["):
        field = path.partition("].")[2]
        if field in ("byte_cnt", "check_sum", "wqe_counter", "op_own", "rss_hash_result",
                     "rss_hash_type"):
            return ("MLX5-CQ-005", "MLX5-CQ-006", "MLX5-CQ-007", "MLX5-RING-001")
        return ("MLX5-RING-001", "MLX5-CQE-001")  # the ring's bytes at the CQE's offsets
    if path in ("cc", "polls") or path.startswith("polls["):
        return ("MLX5-RING-001", "MLX5-CQ-003", "MLX5-CQ-004")
    if path == "recovering":
        return ("MLX5-CQE-009",)
    return ()


_CSUM_GATES = ("MLX5-CSUM-001", "MLX5-CSUM-002", "MLX5-CSUM-003", "MLX5-CSUM-004",
               "MLX5-CSUM-005", "MLX5-CSUM-006")


def _csum_blame(scenario: Scenario, cqe: C.mlx5_cqe64, skb: dict[str, Any],
                value: bool) -> tuple[str, ...]:
    """The rule behind one skb's checksum verdict: for ``ip_summed`` the gate that kept it
    from CHECKSUM_COMPLETE (else MLX5-CSUM-007 and the gates that read the packet); for
    ``csum`` the last fix-up applied."""
    rq = rx.Mlx5eRq(rq_config_of(scenario))
    rq.xdp_prog = has_program(scenario)
    trace = Trace()
    skbmeta.mlx5e_handle_csum(cqe, rq.state, bytes.fromhex(skb["data"]), Mlx5eRqStats(),
                              trace)
    applied = set(trace.rules())
    if value:
        for rule in ("MLX5-CSUM-009", "MLX5-CSUM-008"):
            if rule in applied:
                return (rule,)
        return ("MLX5-CSUM-007",)
    gates = [r for r in _CSUM_GATES if r in applied]
    # CHECKSUM_COMPLETE is what is left when no gate held: the gates that read the packet
    # (the last EtherType and depth MLX5-CSUM-005 finds, SCTP MLX5-CSUM-006) let it through.
    return (gates[0],) if gates else ("MLX5-CSUM-007", "MLX5-CSUM-005", "MLX5-CSUM-006")


def sides(scenario: Scenario) -> frozenset[str]:
    """Protocol 1.2: a ring image exercises the driver alone (MLX5-RING-001), a ``write``
    scenario the device alone; a frame scenario the device writing the ring, then the
    driver (MLX5-RING-004)."""
    if mlx5_ring.is_ring(scenario):
        return mlx5_ring.DRIVER
    return mlx5_ring.DEVICE if mlx5_ring.is_write(scenario) else frozenset({"device", "driver"})


COMPONENT = Component(name="mlx5", expected=expected, field_rules=_FIELD_RULES,
                      attribute=attribute, applied=applied, sides=sides)


def _eth() -> Ether:
    return Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")


@st.composite
def frames(draw: st.DrawFn) -> bytes:
    """A few flows (so runs form and break), varied sizes, some tagged; one in eight of
    the kinds the CQE's header fields tell apart (MLX5-DEV-003, MLX5-DEV-005): ARP, IPv4
    with options, first and later IPv4 fragments, IPv6 with extension headers or no next
    header, a first IPv6 fragment; one in eight at a boundary of the header walk
    (``header_cases``: IHL 4..15, other protocols, L4 headers cut short, bad IPv4
    header checksums, tags with PCP/DEI set)."""
    odd = draw(st.integers(0, 7))
    if odd == 0:
        return bytes(_eth() / draw(st.sampled_from(_ODD_L3)))
    if odd == 1:
        return draw(st.sampled_from(header_cases(wellformed=False)))
    flow = draw(st.integers(0, 3))
    ip = IP(src=f"10.0.{flow}.1", dst="10.0.9.9")
    l4 = UDP(sport=1000 + flow, dport=53) if flow % 2 else TCP(sport=2000, dport=80, flags="A")
    body = ip / l4 / Raw(b"m" * draw(st.integers(0, 600)))
    if draw(st.integers(0, 7)) == 0:
        return bytes(_eth() / _dot1q(draw) / body)
    return bytes(_eth() / body)


_ODD_L3: tuple[Packet, ...] = (
    ARP(psrc="10.0.0.1", pdst="10.0.0.2"),
    IP(src="10.0.5.1", dst="10.0.9.9", options=[IPOption_NOP()] * 4) / TCP(sport=5, dport=80)
    / Raw(b"o" * 40),
    IP(src="10.0.5.1", dst="10.0.9.9", flags="MF", frag=0) / UDP(sport=5, dport=53)
    / Raw(b"f" * 64),
    IP(src="10.0.5.1", dst="10.0.9.9", frag=8) / Raw(b"g" * 64),
    IPv6(src="fd00::5", dst="fd00::9") / IPv6ExtHdrHopByHop() / IPv6ExtHdrDestOpt()
    / UDP(sport=5, dport=53) / Raw(b"x" * 30),
    IPv6(src="fd00::5", dst="fd00::9", nh=59) / Raw(b"n" * 20),
    # A first IPv6 fragment (PKT-IP6-005): a fragment, so no L4 type, whole UDP header.
    IPv6(src="fd00::5", dst="fd00::9") / IPv6ExtHdrFragment(offset=0, m=1)
    / UDP(sport=5, dport=53) / Raw(b"h" * 24),
)


def _dot1q(draw: st.DrawFn) -> Dot1Q:
    """An 802.1Q tag whose PCP and DEI bits are set as often as not (MLX5-DEV-006 reports
    the whole TCI, MLX5-SKB-002 hands it to the stack)."""
    return Dot1Q(prio=draw(st.sampled_from([0, 0, 3, 7])), dei=draw(st.integers(0, 1)),
                 vlan=draw(st.sampled_from([1, 100, 4094])))


@st.composite
def session_frames(draw: st.DrawFn) -> list[bytes]:
    """One flow, many packets of different lengths: with compression on they form long
    sessions (MLX5-COMP-001 groups completions equal but for length and checksum)."""
    flow = draw(st.integers(0, 3))
    ip = IP(src=f"10.0.{flow}.1", dst="10.0.9.9")
    l4 = UDP(sport=1000 + flow, dport=53) if flow % 2 else TCP(sport=2000, dport=80, flags="A")
    tag = draw(st.booleans())
    sizes = draw(st.lists(st.integers(0, 600), min_size=17, max_size=48))
    out = []
    for n in sizes:
        body = ip / l4 / Raw(b"s" * n)
        out.append(bytes(_eth() / Dot1Q(prio=5, dei=1, vlan=7) / body if tag else _eth() / body))
    return out


def scenarios() -> st.SearchStrategy[Scenario]:
    """CQ-only, RX handlers with a program, and checksum/skb-metadata scenarios."""
    return st.one_of(cq_scenarios(), xdp_scenarios(), xdp_scenarios(compressed_hash=True),
                     csum_scenarios())


def fixture_scenarios() -> st.SearchStrategy[Scenario]:
    """What ``rx-oracle fixtures generate`` draws: the frame scenarios, and the ring
    images of the driver side and the write scenarios of the device side (protocol 1.2,
    MLX5-RING-001/004), so a corpus replays against a target of either half."""
    from conformance.components.mlx5_ring_strategies import ring_scenarios, write_scenarios

    return st.one_of(scenarios(), ring_scenarios(), write_scenarios())


def _bad_l3() -> tuple[bytes, ...]:
    """IPv4 headers the device judges (MLX5-DEV-003, MLX5-DEV-005): one with a wrong
    header checksum (no CQE_L3_OK) and one whose version nibble is not 4 (the device
    finds no L3 at all: L3 type 0, no hash, no checksum bits but L2)."""
    good = bytearray(bytes(_eth() / IP(src="10.0.3.1", dst="10.0.3.2")
                           / UDP(sport=5, dport=6) / Raw(b"c" * 20)))
    bad_csum, bad_version = bytearray(good), bytearray(good)
    bad_csum[24] ^= 0x5A  # ip.chksum
    bad_version[14] = 0x65
    return bytes(bad_csum), bytes(bad_version)


_DEVICE_BAD_L3 = _bad_l3()


@st.composite
def cq_scenarios(draw: st.DrawFn) -> Scenario:
    """Mixed flows; a third of the time a long compressed session of one flow read
    under small budgets (sessions resumed across polls: MLX5-CQ-003/004, MLX5-CQ-008/009);
    the smallest striding WQEs get a frame larger than a whole WQE (MLX5-DEV-012)."""
    family = draw(st.sampled_from(["mixed", "mixed", "session"]))
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
        # Both ends of MLX5-DEV-001's accepted MTU range, so a narrower check shows.
        "mtu": draw(st.sampled_from([400, 1500, 68, 9978])),
        "vlan_strip": draw(st.booleans()),
        "budget": draw(st.integers(8, 64)),
        "start": draw(st.integers(0, (1 << log_cq) - 1)),
    }
    if family == "session":
        config["compression"] = draw(st.sampled_from(["basic", "enhanced"]))
        # An enhanced CQE of up to seven packets is taken whole (MLX5-CQ-004): the model
        # refuses budgets below seven there, as no poll could make progress.
        small = [1, 2, 3, 5, 7, 8, 9, 16] if config["compression"] == "basic" else [7, 8, 9, 16]
        config["budget"] = draw(st.sampled_from(small))
        # Sessions are at most the CQ size: 32 or more slots give several mini arrays.
        config["log_cq_size"] = draw(st.integers(5, 7))
        size = 1 << config["log_cq_size"]
        # Half the sessions start a few slots before the ring's end, so a resumed session
        # stamps owner bits on both sides of the wrap (MLX5-CQ-009).
        config["start"] = (size - draw(st.integers(1, 8)) if draw(st.booleans())
                           else draw(st.integers(0, size - 1)))
        return Scenario(component="mlx5", config=config, frames=tuple(draw(session_frames())))
    if draw(st.integers(0, 15)) == 0:
        # MLX5-CQ-003: an idle ring: the one poll completes nothing and is not listed.
        return Scenario(component="mlx5", config=config, frames=())
    mixed = draw(st.lists(frames(), min_size=1, max_size=40))
    for bad in draw(st.lists(st.sampled_from(_DEVICE_BAD_L3), max_size=2)):
        mixed.insert(draw(st.integers(0, len(mixed))), bad)
    if striding and config["log_num_strides"] == 3:
        # 8 strides of 64 bytes: a frame over 512 bytes fills more than a whole WQE.
        big = bytes(_eth() / IP(src="10.0.7.1", dst="10.0.9.9") / UDP(sport=7, dport=9)
                    / Raw(b"b" * draw(st.integers(485, 600))))
        mixed.insert(draw(st.integers(0, len(mixed))), big)
    if striding and draw(st.booleans()):
        # MLX5-RX-002: a frame of hw_mtu (MTU + 22) bytes and a byte either side.
        size = config["mtu"] + 22 + draw(st.sampled_from([-1, 0, 1]))
        edge = bytes(_eth() / IP(src="10.0.7.2", dst="10.0.9.9") / UDP(sport=7, dport=9)
                     / Raw(b"m" * (size - 42)))
        mixed.insert(draw(st.integers(0, len(mixed))), edge)
    return Scenario(component="mlx5", config=config, frames=tuple(mixed))


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
    if draw(st.integers(0, 7)) == 0:
        # MLX5-RX-006's edge: with a program, MTU 3498 is the largest a linear RQ holds.
        config["mtu"] = draw(st.sampled_from([3498, 3499]))
    config.update(
        # MLX5-RX-006: a linear RQ only where hw_mtu fits a page (never at MTU 9978).
        rx_linear=draw(st.booleans()) and rx.mlx5e_rx_get_linear_sz_skb(
            config["mtu"], xdp_prog=True) <= rx.PAGE_SIZE,
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
    # Every metadata kfunc on every switch (hwtstamp, ts_format, rxhash, VLAN strip): half
    # the programs open with one, so each return branch (MLX5-KF-002..006) is met.
    kfunc = "rx_hash" if compressed_hash else draw(
        st.sampled_from([None, None, None, "rx_hash", "rx_timestamp", "rx_vlan_tag"]))
    if kfunc == "rx_hash" and not compressed_hash and draw(st.booleans()):
        config["rxhash"] = False  # MLX5-KF-002: the kfunc with NETIF_F_RXHASH off
    per_packet = {}
    if n > 1 and draw(st.booleans()):
        per_packet[draw(st.integers(0, n - 1))] = draw(xdp_programs(kfunc=kfunc))
    return Scenario(component="mlx5", config=config, frames=tuple(frames),
                    program=draw(xdp_programs(kfunc=kfunc)), per_packet_programs=per_packet,
                    rules=("MLX5-XDP-001", "MLX5-KF-003"))


frames_strategy = frames


# --- checksum and skb metadata ------------------------------------------------------------

_DSTS = ("02:00:00:00:00:02", "02:00:00:00:00:02", "02:00:00:00:00:09", "ff:ff:ff:ff:ff:ff",
         "01:00:5e:00:00:01", "33:33:00:00:00:01")


@st.composite
def csum_frames(draw: st.DrawFn) -> bytes:
    """Frames for the checksum decision: every L3/L4 kind it distinguishes, stacks of
    in-packet tags (up to seven, one past what the driver walks), Ethernet padding after
    the IP packet, wrong L4 checksums, short frames, 802.3 length frames, group and foreign
    destination addresses; UDP length fields at every boundary and ICMP of the other IP
    family (``udp_length_frames``: CSUM-L4-002, CSUM-L4-003)."""
    which = draw(st.integers(0, 7))
    if which == 0:
        return draw(st.sampled_from(udp_length_frames()))
    if which == 1:  # IHL, options, other protocols, short L4 headers, bad IPv4 checksums
        return draw(st.sampled_from(header_cases(wellformed=False)))
    eth = Ether(src="02:00:00:00:00:01", dst=draw(st.sampled_from(_DSTS)))
    kind = draw(st.sampled_from(["tcp4", "udp4", "tcp6", "udp6", "sctp4", "sctp6", "icmp4",
                                 "arp", "llc"]))
    body = Raw(b"p" * draw(st.integers(0, 160)))
    bad: dict[str, Any] = {"chksum": 0x1234} if draw(st.integers(0, 5)) == 0 else {}
    l3: Packet
    if kind == "llc":
        payload = draw(st.sampled_from([b"\xaa\xaa\x03", b"\xff\xff"])) + b"q" * 40
        l3 = Raw(payload)
        eth.type = len(payload)
    elif kind == "arp":
        l3 = ARP(psrc="10.0.0.1", pdst="10.0.0.2")
    elif kind.endswith("4"):
        ip = IP(src="10.0.0.1", dst="10.0.0.2")
        l4 = {"tcp4": TCP(sport=1, dport=2, flags="A", **bad), "udp4": UDP(sport=3, dport=4, **bad),
              "sctp4": SCTP(sport=5, dport=6), "icmp4": ICMP()}[kind]
        l3 = ip / l4 / body
    else:
        ip6 = IPv6(src="fd00::1", dst="fd00::2")
        l4 = {"tcp6": TCP(sport=1, dport=2, flags="A", **bad), "udp6": UDP(sport=3, dport=4, **bad),
              "sctp6": SCTP(sport=5, dport=6)}[kind]
        l3 = ip6 / l4 / body
    ntags = draw(st.sampled_from([0, 0, 0, 1, 1, 2, 3, 6, 7]))
    frame: Packet = eth
    for i in range(ntags):
        frame = frame / (Dot1AD(vlan=100 + i) if i == 0 and draw(st.booleans())
                         else Dot1Q(vlan=200 + i))
    raw = bytes(frame / l3)
    pad = draw(st.sampled_from([0, 0, 0, 1, 3, 8, 9, 17]))
    return raw + draw(st.binary(min_size=pad, max_size=pad))


@st.composite
def csum_scenarios(draw: st.DrawFn) -> Scenario:
    """The RX handlers under every checksum switch: RXCSUM, the private flag, an attached
    XDP program, a cqe_checksum_full device; with VLAN stripping, compression and both RQ
    types from the CQ scenarios, and the timestamp filter."""
    base = draw(cq_scenarios())
    config = dict(base.config)
    frames = tuple(draw(st.lists(csum_frames(), min_size=1, max_size=12)))
    config.update(
        rx_path=True,
        mtu=1500,
        rxcsum=draw(st.integers(0, 7)) > 0,
        no_csum_complete=draw(st.integers(0, 5)) == 0,
        csum_full=draw(st.integers(0, 3)) == 0,
        rx_linear=draw(st.booleans()),
        frag_size=draw(st.sampled_from([128, 256, 1024])),
        hwtstamp=draw(st.sampled_from(["none", "all"])),
        ts_format=draw(st.sampled_from(["free_running", "real_time"])),
        timestamps=[draw(st.integers(0, 2**40)) for _ in frames],
        qpn=draw(st.sampled_from([0, 0, 0x12345, 0xFFFFFF])),
    )
    program = None
    if draw(st.integers(0, 4)) == 0:
        program = ({"op": "return", "action": 2},)  # XDP_PASS: attached, changes nothing
    return Scenario(component="mlx5", config=config, frames=frames, program=program,
                    rules=("MLX5-CSUM-007", "MLX5-SKB-001"))


def _striding_rx_config(n_frames: int, **overrides: Any) -> dict[str, Any]:
    """The config of the fixed header and checksum scenarios: the striding non-linear RX
    path with the Microsoft key, no compression and no program, a timestamp per frame;
    ``overrides`` replace values (``vlan_strip``, ``csum_full``) or add keys
    (``no_csum_complete``) before the timestamps."""
    config: dict[str, Any] = {
        "key": MS_KEY.hex(), "indir": [0, 1, 2, 3], "compression": "none",
        "rq_type": "striding", "log_cq_size": 6, "log_wq_size": 4, "log_num_strides": 6,
        "mtu": 1500, "vlan_strip": False, "budget": 64, "start": 0, "rx_path": True,
        "rxcsum": True, "rx_linear": False, "csum_full": False,
    }
    config.update(overrides)
    config["timestamps"] = [0] * n_frames
    return config


def header_scenarios() -> list[Scenario]:
    """Every frame of ``header_cases(wellformed=False)`` once, 30 to a scenario, through
    the device and the RX handlers (striding, non-linear: the skb head is
    ``eth_get_headlen``'s, PKT-L4-007): the CQE's L3/L4 types and OK bits, the RSS fields
    and the checksum verdict at each boundary of the header walk (IHL 4..15, other
    protocols, L4 headers one byte short, TCP data offsets below 5, bad IPv4 header
    checksums, tags with PCP/DEI set)."""
    # Then an IPv4 header one byte short of 20 and an IPv6 datagram (and frame) that ends
    # one byte into its first extension header: refused by the parser (PKT-IP4-001,
    # PKT-IP6-003), delivered by the device with no L3/L4 facts.
    eth = bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02"))[:12]
    v6 = bytes(IPv6(src="2001:db8::1", dst="2001:db8::7", nh=0, plen=1))
    cases = (*header_cases(wellformed=False), eth + b"\x08\x00\x45" + bytes(18),
             eth + b"\x86\xdd" + v6 + b"\x3b")
    out = []
    for n, i in enumerate(range(0, len(cases), 30)):
        frames = tuple(cases[i:i + 30])
        config = _striding_rx_config(len(frames), vlan_strip=n % 2 == 1,
                                     csum_full=n % 4 == 3)
        out.append(Scenario(component="mlx5", config=config, frames=frames,
                            rules=("MLX5-DEV-003", "MLX5-DEV-005")))
    return out


def tail_and_cut_scenarios() -> list[Scenario]:
    """Each case of the checksum tail fix-up once (MLX5-CSUM-009: the IP packet ending at
    each offset mod 4, followed by 1, 8, 9 or 17 bytes of padding: the rotated add, and
    the fast and slow tail counters), with the same frames behind a stripped and an
    in-packet tag (MLX5-CSUM-008); and the frames the skb head length is cut short by
    (PKT-L4-007): an IPv6 header shorter than 40 bytes, a TCP header ending before its
    data-offset byte; through the non-linear handler, where ``eth_get_headlen`` decides."""
    frames: list[bytes] = []
    for tagged in (False, True):
        eth: Packet = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
        if tagged:
            eth = eth / Dot1Q(vlan=7, prio=5)
        for ip in (IP(src="10.0.0.1", dst="10.0.0.2"), IPv6(src="fd00::1", dst="fd00::2")):
            # The packet ends at each offset mod 4 (odd and even, each with and without
            # bit 1: CSUM-005 rotates on bit 0 alone); a tag moves every end by 4.
            for payload in (41, 42) if tagged else (41, 42, 43, 44):
                packet = bytes(eth / ip / UDP(sport=3, dport=4) / Raw(b"t" * payload))
                frames += [packet + bytes(range(1, pad + 1)) for pad in (1, 8, 9, 17)]
    cut = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    frames += [bytes(cut / IPv6(src="fd00::1", dst="fd00::2"))[:14 + 30],
               bytes(cut / IP(src="10.0.0.1", dst="10.0.0.2") / TCP(sport=1, dport=2))[:14 + 30],
               bytes(cut / IPv6(src="fd00::1", dst="fd00::2") / TCP(sport=1, dport=2))[:14 + 52]]
    out = []
    for vlan_strip in (False, True):
        config = _striding_rx_config(len(frames), vlan_strip=vlan_strip)
        out.append(Scenario(component="mlx5", config=config, frames=tuple(frames),
                            rules=("MLX5-CSUM-009", "MLX5-CSUM-008")))
    return out


def l4_check_edge_scenarios() -> list[Scenario]:
    """The frames at the edges of the full L4 check (``l4_check_edge_frames``: zero UDP
    checksums with a length out of range, wrong UDP checksums with one zero byte, IPv6 TCP
    and UDP of 300 bytes and more, and SCTP, another protocol and ICMPv6 the device does not verify)
    through the device's CQE_L4_OK (MLX5-DEV-005) and the handlers' ``ip_summed``, once
    with CHECKSUM_COMPLETE off, where that bit decides CHECKSUM_UNNECESSARY (MLX5-CSUM-010),
    and once with it on, then with it on and VLAN stripping on (which reads the parsed tags
    of untagged frames too)."""
    frames = tuple(l4_check_edge_frames())
    out = []
    for no_complete, strip in ((True, False), (False, False), (False, True)):
        config = _striding_rx_config(len(frames), no_csum_complete=no_complete,
                                     vlan_strip=strip)
        out.append(Scenario(component="mlx5", config=config, frames=frames,
                            rules=("MLX5-DEV-005", "MLX5-CSUM-010")))
    return out


def headlen_edge_scenarios() -> list[Scenario]:
    """Frames whose skb head (``eth_get_headlen``, PKT-L4-007; MLX5-XDP-002) is the whole
    frame or stops short of it by an L4 header, decided by a fragment field: an IPv4
    fragment with MF and offset 1 (a later fragment: no UDP header in the head), an IPv6
    first fragment whose next header is a destination-options header (the first-fragment
    walk goes on through it to UDP), and an IPv4 first fragment carrying IPv4 that is a
    later fragment (the outer first fragment still adds the inner UDP header).  Each ends
    with its UDP header, so ``nr_frags`` is 0 exactly when the head holds it.  Then the L4
    header lengths ``__skb_get_poff`` adds for UDP-Lite and IGMP (8) and DCCP (12), and
    none for another protocol (253): each frame ending at that length and one byte past
    it; and a TCP header cut one byte after its data-offset byte (the head is all of it).
    Through the striding non-linear handler with no program."""
    eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    udp = UDP(sport=3, dport=4)
    frames: tuple[bytes, ...] = (
        bytes(eth / IP(src="10.0.0.1", dst="10.0.0.2", flags="MF", frag=1) / udp),
        bytes(eth / IPv6(src="fd00::1", dst="fd00::2") / IPv6ExtHdrFragment(offset=0, m=1)
              / IPv6ExtHdrDestOpt() / udp),
        bytes(eth / IP(src="10.0.0.1", dst="10.0.0.2", flags="MF", proto=4)
              / IP(src="10.0.1.1", dst="10.0.1.2", frag=1) / udp))
    frames += tuple(bytes(eth / IP(src="10.0.0.1", dst="10.0.0.2", proto=proto)
                          / bytes(range(size + extra)))
                    for proto, size in ((136, 8), (2, 8), (33, 12), (253, 0)) for extra in (0, 1))
    tcp = bytes(eth / IP(src="10.0.0.1", dst="10.0.0.2") / TCP(sport=3, dport=4))
    frames += (tcp[:14 + 20 + 13],)
    return [Scenario(component="mlx5", config=_striding_rx_config(len(frames)), frames=frames,
                     rules=("MLX5-XDP-002", "PKT-L4-007"))]



# --- the CQ reader's fixed edges (the full run's survivors of cq.py / cqe.py) ----------------

#: The rules :func:`cq_edge_scenarios` aims at (the property spells them out again for
#: ``rx-oracle spec`` and checks the two agree).
CQ_EDGE_RULES = ("MLX5-CQ-001", "MLX5-CQ-003", "MLX5-CQ-004", "MLX5-CQ-008", "MLX5-CQ-009",
                 "MLX5-CQ-010", "MLX5-COMP-001", "MLX5-COMP-002", "MLX5-COMP-003",
                 "MLX5-COMP-004", "MLX5-COMP-005", "MLX5-CQE-008", "MLX5-DEV-004",
                 "MLX5-DEV-010")
#: The rules :func:`ring_image_edge_scenarios` aims at.
RING_IMAGE_EDGE_RULES = ("MLX5-CQE-009", "MLX5-RING-001", "MLX5-RING-006", "MLX5-CQ-005",
                         "MLX5-CQ-010")


def _edge_session(n: int, flow: int = 0) -> list[bytes]:
    """``n`` frames of one UDP flow, each three bytes longer than the last: one session."""
    ip = IP(src=f"10.0.{flow}.1", dst="10.0.9.9")
    return [bytes(_eth() / ip / UDP(sport=1000 + flow, dport=53) / Raw(b"s" * (10 + 3 * i)))
            for i in range(n)]


def _edge_singles(n: int) -> list[bytes]:
    """``n`` frames no two of which share a flow: each its own CQE (MLX5-COMP-001)."""
    return [bytes(_eth() / IP(src="10.1.0.1", dst="10.0.9.9") / UDP(sport=3000 + i, dport=53)
                  / Raw(b"o" * (20 + i))) for i in range(n)]


def _edge_config(**overrides: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "key": MS_KEY.hex(), "indir": [0, 1, 2, 3], "compression": "basic",
        "rq_type": "cyclic", "log_cq_size": 5, "log_wq_size": 6, "budget": 64, "start": 0,
    }
    config.update(overrides)
    return config


def cq_edge_scenarios() -> list[tuple[str, Scenario]]:
    """Roads of the CQ reader the random draws miss, each once (frame form: the device
    writes what fits, the driver polls until the ring is drained):

    * MLX5-CQ-009: after a basic session the driver meets its slots again one lap later,
      before the device has rewritten them: the poll that drains the ring stops at an
      unwritten slot between mini arrays (the CQ's 32 slots all one session, lap 1), at a
      mini array holding fewer than eight mini-CQEs (its last byte 0), at slots past the
      ring's end (a session over the wrap, stamped with the opposite parity), and at the
      slot after a session whose title sits at an odd counter.  Each slot reads as the
      hardware's only because the reader stamped it; a reader that stamps nothing, the
      wrong byte, the wrong parity, or from the wrong slot takes it for a new CQE.  Each
      once with NAPI budgets that cut the session (resumed batches stamp their own slots);
    * MLX5-CQ-010/004: an enhanced poll that ends on a plain CQE (the title candidate,
      ``last_cqe_title``), then one that starts with a compressed CQE (counted, and the
      flag cleared), then another that does (not counted again);
    * a basic session of exactly the CQ size, in the smallest CQ (2 slots, MLX5-DEV-001);
    * MLX5-COMP-004 / MLX5-CQE-004: sessions whose mini-CQEs carry the checksum 0xffff
      (IPv4 datagrams of zero bytes after a valid header);
    * MLX5-CQE-008: a 65535-byte frame in a striding RQ, the largest length ``byte_cnt``'s
      16 bits hold."""
    out: list[tuple[str, Scenario]] = []
    for budget in (64, 5):
        out.append((f"stale in-between slot, budget {budget}", Scenario(
            component="mlx5", config=_edge_config(start=32, budget=budget),
            frames=tuple(_edge_session(32) + _edge_singles(2)), rules=("MLX5-CQ-009",))))
    out.append(("stale short mini array", Scenario(
        component="mlx5", config=_edge_config(start=32),
        frames=tuple(_edge_session(10) + _edge_singles(30)), rules=("MLX5-CQ-009",))))
    for budget in (64, 3):
        out.append((f"stale slot past the wrap, budget {budget}", Scenario(
            component="mlx5", config=_edge_config(start=62, budget=budget),
            frames=tuple(_edge_session(10) + _edge_singles(24)), rules=("MLX5-CQ-009",))))
    out.append(("stale slot after an odd title", Scenario(
        component="mlx5", config=_edge_config(start=33),
        frames=tuple(_edge_session(3) + _edge_singles(31)), rules=("MLX5-CQ-009",))))
    out.append(("enhanced title across polls", Scenario(
        component="mlx5", config=_edge_config(compression="enhanced", budget=7, log_cq_size=4),
        frames=tuple(_edge_session(6, 0) + _edge_session(15, 1)), rules=("MLX5-CQ-010",))))
    out.append(("session of the CQ size, 2 slots", Scenario(
        component="mlx5", config=_edge_config(log_cq_size=1), frames=tuple(_edge_session(2)),
        rules=("MLX5-CQ-008",))))
    ffff = tuple(bytes(_eth() / IP(src="10.0.5.1", dst="10.0.9.9", proto=253) / Raw(bytes(k)))
                 for k in (4, 10, 30))
    for compression in ("basic", "enhanced"):
        out.append((f"checksum 0xffff, {compression}", Scenario(
            component="mlx5", config=_edge_config(compression=compression), frames=ffff,
            rules=("MLX5-COMP-004",))))
    big = bytes(_eth() / IP(src="10.0.6.1", dst="10.0.9.9") / UDP(sport=9, dport=9)
                / Raw(b"j" * (0xFFFF - 42)))
    out.append(("65535-byte frame, striding", Scenario(
        component="mlx5", config=_edge_config(compression="none", rq_type="striding",
                                              log_num_strides=10, log_wq_size=2),
        frames=(big, _edge_singles(1)[0]), rules=("MLX5-CQE-008",))))
    return out


#: A slot the hardware still owns in lap 0: owner bit 1, opcode MLX5_CQE_INVALID.
_OWNED_LAP0 = bytes(62) + bytes((0, (C.MLX5_CQE_INVALID << 4) | 1))
_EDGE_FRAME = bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
                    / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=1, dport=2) / Raw(b"u" * 20))


def _edge_ring(slots: list[bytes], **config: Any) -> Scenario:
    """A 4-slot ring image read from counter 0: ``slots``, then slots the hardware owns."""
    full = slots + [_OWNED_LAP0] * (4 - len(slots))
    return Scenario(component="mlx5", config={"log_wq_size": 3, **config},
                    events=mlx5_ring.ring_events(full, 0, {0: _EDGE_FRAME}),
                    rules=("MLX5-RING-001",))


def ring_image_edge_scenarios() -> list[tuple[str, Scenario]]:
    """Ring images (the driver alone) the random draws miss, each once:

    * MLX5-CQE-009: one error CQE alone, for each syndrome 0..6 and each the kernel names:
      only LOCAL_QP_OP_ERR (2), LOCAL_PROT_ERR (4) and WR_FLUSH_ERR (5) start the RQ's
      recovery (``recovering``); the draws put several errors in a ring, where one of
      them sets the flag for all;
    * MLX5-CQ-005/010: a basic session of one packet (title ``byte_cnt`` 1, its mini array
      in the next slot, whose last byte keeps it the hardware's)."""
    named = {getattr(C, n) for n in dir(C) if n.startswith("MLX5_CQE_SYNDROME_")}
    out = [(f"error CQE, syndrome {s:#04x}", _edge_ring(
        [C.mlx5_err_cqe(syndrome=s, op_own=C.MLX5_CQE_RESP_ERR << 4).pack()]))
        for s in sorted(named | set(range(7)))]
    title = C.mlx5_cqe64(byte_cnt=1, rss_hash_result=7, rss_hash_type=0x84,
                         op_own=(C.MLX5_CQE_RESP_SEND << 4) | (C.MLX5_COMPRESSED << 2)).pack()
    minis = (C.mlx5_mini_cqe8.from_csum(0x1234, 0, len(_EDGE_FRAME)).pack() + bytes(48)
             + C.mlx5_mini_cqe8(0, 1).pack())  # byte 63 = 1: owner bit of lap 1
    out.append(("basic session of one packet", _edge_ring([title, minis],
                                                          compression="basic")))
    return out

# --- teaching ------------------------------------------------------------------------------

_L3 = {0: "none", 1: "IPv6", 2: "IPv4"}
_L4 = {0: "none", 1: "TCP (no ACK)", 2: "UDP", 3: "TCP (ACK, no data)", 4: "TCP (ACK + data)"}


def _cqe_story(cqe: C.mlx5_cqe64) -> str:
    if C.MLX5E_RX_ERR_CQE(cqe):  # read as mlx5_err_cqe, as trigger_report does
        err = C.mlx5_err_cqe.unpack(cqe.pack())
        return (f"error CQE: opcode {C.get_cqe_opcode(cqe)}, syndrome {err.syndrome:#04x}, "
                f"vendor_err_synd {err.vendor_err_synd:#04x}, wqe_counter {err.wqe_counter}"
                "  (MLX5-CQE-009, MLX5-RING-006)")
    ok = "+".join(n for n, b in (("L2", C.CQE_L2_OK), ("L3", C.CQE_L3_OK), ("L4", C.CQE_L4_OK))
                  if cqe.hds_ip_ext & b) or "none"
    vlan = f", stripped tag TCI {cqe.vlan_info:#06x}" if C.cqe_has_vlan(cqe) else ""
    return (f"CQE: opcode {C.get_cqe_opcode(cqe)}, byte_cnt {cqe.byte_cnt:#x}, "
            f"L3 {_L3.get(C.get_cqe_l3_hdr_type(cqe), '?')}, "
            f"L4 {_L4.get(C.get_cqe_l4_hdr_type(cqe), '?')}, checks OK: {ok}, "
            f"check_sum {cqe.check_sum:#06x}, rss {cqe.rss_hash_result:#010x} "
            f"(type {cqe.rss_hash_type:#04x}){vlan}, timestamp {C.get_cqe_ts(cqe)}, "
            f"wqe_counter {cqe.wqe_counter}  (MLX5-CQE-005..008)")


#: mlx5e's rule for each metadata kfunc's answer.
_KF_RULES = {"rx_hash": "MLX5-KF-002", "rx_timestamp": "MLX5-KF-004",
             "rx_vlan_tag": "MLX5-KF-006"}


#: A new user's pcap needs no configuration: the well-known RSS key, one ring, the RX
#: handlers on (``rx-oracle explain`` validates the config with these filled in).
EXPLAIN_DEFAULTS: dict[str, Any] = {"key": MS_KEY.hex(), "indir": [0], "rx_path": True}


def explain(scenario: Scenario) -> str:
    """Narrate the path of each packet, rule by rule: what the device wrote, the CQE fields
    and what they mean, the XDP verdict and kfunc results, the checksum verdict and why, the
    skb metadata and where the page went.  The RX handlers always run (``rx_path``)."""
    scenario = attrs.evolve(scenario, config={**EXPLAIN_DEFAULTS, **scenario.config})
    trace = Trace()
    cfg = scenario.config
    d: rx.DriverRun | RingRun
    if mlx5_ring.is_ring(scenario):  # a captured ring: the driver alone (MLX5-RING-001)
        d = mlx5_ring.ring_run(scenario, trace)
        lines = mlx5_ring.explain_ring(scenario)
    else:
        d = driver_run(scenario, trace)
        lines = [
            f"mlx5: {len(scenario.frames)} frame(s); RQ {cfg.get('rq_type', 'cyclic')}, "
            f"compression {cfg.get('compression', 'none')}, vlan_strip "
            f"{value_text(bool(cfg.get('vlan_strip', False)))}, rxcsum "
            f"{value_text(bool(cfg.get('rxcsum', True)))}, csum_full "
            f"{value_text(bool(cfg.get('csum_full', False)))}, XDP program "
            f"{'attached' if has_program(scenario) else 'none'}",
        ]
    cqes = [c for p in d.polls for c in p.cqes]
    starts = [i for i, e in enumerate(trace.events)
              if e.rule == "MLX5-RX-002" and e.what == "RX handler called"]
    lines.append("device and CQ:")
    lines += ["  " + e.render() for e in trace.events[: starts[0] if starts else None]
              if e.rule.startswith(("MLX5-DEV", "MLX5-COMP", "MLX5-CQ"))]
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(trace.events)
        rec = d.records[n]
        lines.append(f"packet {n} (frame {rec['frame']}, {rec['kind']}):")
        lines.append("  " + _cqe_story(cqes[n]))
        lines += ["  " + e.render() for e in trace.events[start + 1 : end]
                  if not e.rule.startswith("PP-")]
        skb = rec["skb"]
        for op in rec["ops"] or ():
            if op.get("op") == "kfunc":  # the values the program read (MLX5-KF-*)
                lines.append(f"  {kfunc_result_text(str(op['name']), op)} "
                             f"({_KF_RULES.get(str(op['name']), 'MLX5-KF-001')})")
        if rec["verdict"] is not None:
            lines.append(f"  XDP verdict {rec['verdict']} (MLX5-XDP-004..009)")
        if rec["kind"] == "packet":
            fate_rule = _FATE_RULES.get(str(rec["fate"]))
            lines.append(f"  page -> {rec['fate']}" + (f" ({fate_rule})" if fate_rule else ""))
        if skb is not None:
            csum = "" if skb["csum"] is None else f" csum {skb['csum']:#06x}"
            lines.append(
                f"  skb: len {skb['len']} at headroom {skb['headroom']} "
                f"({skb['nr_frags']} frags), {skb['ip_summed']}{csum} level {skb['csum_level']}, "
                f"hash {skb['hash']:#010x} {skb['hash_type']}, vlan "
                f"{skb['vlan_tci'] if skb['vlan_present'] else '-'}, mark {skb['mark']}, "
                f"hwtstamp {value_text(skb['hwtstamp'])}, protocol {skb['protocol']:#06x}, "
                f"{skb['pkt_type']}")
    lines.append("pages: " + ", ".join(f"{k} {v}" for k, v in d.pages.items()))
    lines.append("counters: " + ", ".join(f"{k}={v}" for k, v in d.counters.items() if v))
    lines.append("CQ: " + ", ".join(f"{k}={v}" for k, v in d.stats.items()))
    if isinstance(d, RingRun):
        lines.append(f"consumer counter after the last poll: {d.cc}; RQ recovery "
                     f"{'queued (MLX5-RING-006)' if d.recovering else 'not started'}")
    return "\n".join(lines)


@st.composite
def frag_pull_scenarios(draw: st.DrawFn) -> Scenario:
    """MLX5-XDP-002: a striding non-linear RQ with a program, whose XDP_PASS skb pulls
    fragment bytes into its empty linear part; the program first shrinks the packet with
    ``bpf_xdp_adjust_tail`` to the pull length, a byte either side of it (13: refused), or
    more, so the pull empties a fragment exactly, falls a byte short, or leaves it
    (``nr_frags``)."""
    config: dict[str, Any] = {
        "key": "00" * 40, "indir": [0, 1, 2, 3], "compression": "none",
        "rq_type": "striding", "mini_cqe_format": 1, "log_cq_size": 6, "log_wq_size": 2,
        "log_num_strides": 6, "log_stride_sz": 6, "mtu": 1500, "budget": 64,
        "rx_linear": False, "frag_size": 1024, "rxhash": False, "hwtstamp": "none",
    }
    frames = []
    for i in range(draw(st.integers(1, 6))):
        size = draw(st.sampled_from([60, 100, 200, 700, 1400]))
        frames.append(bytes(_eth() / IP(src="10.0.8.1", dst="10.0.8.2")
                            / UDP(sport=8, dport=9) / Raw(bytes([i]) * (size - 42))))
    keep = draw(st.sampled_from([13, 14, 15, 64, 65, 256, 257]))
    program = ({"op": "adjust_tail", "delta": -(len(frames[0]) - keep)},
               {"op": "return", "action": 2})
    return Scenario(component="mlx5", config=config, frames=tuple(frames), program=program,
                    rules=("MLX5-XDP-002",))


# --- fixed edges of the RQ, the XDP-SQ and the configuration (mlx5 survivors, full run) ----


def _udp_frame(size: int, fill: int = 0x61, dst: str = "02:00:00:00:00:02") -> bytes:
    """An untagged IPv4/UDP frame of exactly ``size`` bytes (``size`` >= 42)."""
    return bytes(Ether(src="02:00:00:00:00:01", dst=dst) / IP(src="10.0.4.1", dst="10.0.4.2")
                 / UDP(sport=4, dport=5) / Raw(bytes([fill]) * (size - 42)))


def _stride_config(n_frames: int, **overrides: Any) -> dict[str, Any]:
    """A striding non-linear RQ of 256-byte strides, 64 to a WQE (four pages), jumbo MTU:
    a packet's fragments start at its stride's offset in a page and cross page ends."""
    config = _striding_rx_config(n_frames, log_stride_sz=8, log_num_strides=6, mtu=9978)
    config.update(overrides)
    return config


def striding_page_scenarios() -> list[Scenario]:
    """MLX5-XDP-002/003, MLX5-RX-002: ``mlx5e_skb_from_cqe_mpwrq_nonlinear``'s fragments at
    the page ends the draws miss (``nr_frags`` and ``frags_size`` show where each fragment
    starts).  A 3840-byte frame fills strides 0..14, so the next frame starts at stride
    15, 256 bytes before the first page's end: 280 bytes of UDP cross it after the
    42-byte skb head (the fragment starts at 3882, 214 bytes to the end: two fragments;
    starting at the stride, 3840, or at 0, one would do); 256 bytes fit it exactly with a
    program (every byte in fragments) and cross it by 42 without; an 8192-byte frame
    from stride 0 leaves exactly one page after its first fragment (a later fragment
    starting past a page's first byte would need a third).  Each without a program
    (the skb's ``nr_frags``) and with an XDP_PASS program (the buffer's ``nr_frags``);
    then the oversize drop at hw_mtu (MTU + 22) and a byte either side, with and without
    a program."""
    frames = (_udp_frame(3840, 0x30), _udp_frame(280, 0x31), _udp_frame(3840, 0x32),
              _udp_frame(256, 0x33), _udp_frame(8192, 0x34), _udp_frame(200, 0x35))
    passing = ({"op": "return", "action": 2},)
    out = [Scenario(component="mlx5", config=_stride_config(len(frames)), frames=frames,
                    rules=("MLX5-XDP-002", "MLX5-XDP-003")),
           Scenario(component="mlx5", config=_stride_config(len(frames)), frames=frames,
                    program=passing, rules=("MLX5-XDP-002", "MLX5-XDP-003"))]
    edge = tuple(_udp_frame(1500 + 22 + d, 0x40 + d) for d in (-1, 0, 1))
    for program in (None, passing):
        out.append(Scenario(component="mlx5", config=_striding_rx_config(len(edge)),
                            frames=edge, program=program, rules=("MLX5-RX-002",)))
    # The program leaves one byte in the fragment and grows 14 bytes of linear part: the
    # XDP_PASS pull (to ETH_HLEN) has nothing to take, the fragment stays.
    one = _udp_frame(100, 0x36)
    out.append(Scenario(component="mlx5", config=_striding_rx_config(1), frames=(one,),
                        program=({"op": "adjust_head", "delta": -14},
                                 {"op": "adjust_tail", "delta": -(len(one) - 1)},
                                 {"op": "return", "action": 2}), rules=("MLX5-XDP-002",)))
    # MLX5-RX-005: an RQ opened with a program keeps its headroom for packets that run
    # none (a per-packet program on the first frame only).
    three = tuple(_udp_frame(120 + i, 0x37) for i in range(3))
    for rq_type in ("cyclic", "striding"):
        out.append(Scenario(component="mlx5", config=_striding_rx_config(
            len(three), rq_type=rq_type, rx_linear=True), frames=three,
            per_packet_programs={0: passing}, rules=("MLX5-RX-005",)))
    return out


def xdpsq_edge_scenarios() -> list[Scenario]:
    """MLX5-XDP-007/008: XDP_TX sends at the edges of ``mlx5e_xmit_xdp_frame``'s checks,
    two or more in one poll so the WQEBBs one send takes decide whether the next has room.
    A cyclic non-linear RQ of 128-byte fragments; the program moves the start with
    ``bpf_xdp_adjust_head`` so the linear part holds 17, 18 or 19 bytes (the inline
    minimum, ``MLX5E_XDP_MIN_INLINE``, with a min inline mode: below it the send is a
    length error; at it nothing is left for a data segment, a byte over it one is) before
    one fragment, on a 2-WQEBB SQ (a second WQEBB for the first send leaves no room for the
    second); then, on a 4-WQEBB SQ, a single-buffer send (one WQEBB) before one with two
    fragments (two WQEBBs, stop room 3: exactly what is left), and two single-buffer sends
    before it in one poll (2 left: the stop room, not the two WQEBBs, makes it full)."""
    out = []
    frames: tuple[bytes, ...] = (_udp_frame(200, 0x50), _udp_frame(200, 0x51),
                                 _udp_frame(200, 0x52))
    for keep in (17, 18, 19):
        config = _striding_rx_config(len(frames), rq_type="cyclic", frag_size=128,
                                     xdpsq_size=2, min_inline=True)
        program = ({"op": "adjust_head", "delta": 128 - keep}, {"op": "return", "action": 3})
        out.append(Scenario(component="mlx5", config=config, frames=frames, program=program,
                            rules=("MLX5-XDP-007", "MLX5-XDP-008")))
    frames = (_udp_frame(100, 0x53), _udp_frame(300, 0x54), _udp_frame(100, 0x55),
              _udp_frame(300, 0x56))
    for min_inline in (False, True):
        config = _striding_rx_config(len(frames), rq_type="cyclic", frag_size=128,
                                     xdpsq_size=4, min_inline=min_inline, budget=2)
        out.append(Scenario(component="mlx5", config=config, frames=frames,
                            program=({"op": "return", "action": 3},),
                            rules=("MLX5-XDP-007", "MLX5-XDP-008")))
    frames = (_udp_frame(100, 0x57), _udp_frame(100, 0x58), _udp_frame(300, 0x59))
    config = _striding_rx_config(len(frames), rq_type="cyclic", frag_size=128, xdpsq_size=4)
    out.append(Scenario(component="mlx5", config=config, frames=frames,
                        program=({"op": "return", "action": 3},),
                        rules=("MLX5-XDP-007", "MLX5-XDP-008")))
    return out


def csum_edge_scenarios() -> list[Scenario]:
    """MLX5-CSUM-004/005, MLX5-SKB-005 at the boundaries the draws miss: IPv4/UDP frames of
    63, 64 and 65 bytes (``ETH_ZLEN + ETH_FCS_LEN``: 64 is still short); IPv4 behind 5, 6
    and 7 in-packet tags (``__vlan_get_protocol`` walks six); an IPv6 header behind three
    tags cut to end one byte before, at and after its 40th byte (the 65- and 66-byte
    frames, past the short-frame check); EtherTypes 0x05FF and 0x0600 (the 802.3 length
    boundary) and a 16-byte 802.3 frame whose payload starts 0xFFFF (raw 802.3: the two
    bytes are just there)."""
    eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    frames = [_udp_frame(n, 0x60 + n % 16) for n in (63, 64, 65)]
    for ntags in (5, 6, 7):
        tagged: Packet = eth
        for i in range(ntags):
            tagged = tagged / Dot1Q(vlan=300 + i)
        frames.append(bytes(tagged / IP(src="10.0.6.1", dst="10.0.6.2") / UDP(sport=6, dport=7)
                            / Raw(b"k" * 30)))
    three: Packet = eth / Dot1Q(vlan=400) / Dot1Q(vlan=401) / Dot1Q(vlan=402)
    v6 = bytes(three / IPv6(src="fd00::6", dst="fd00::7") / UDP(sport=6, dport=7) / Raw(b"z" * 8))
    frames += [v6[:n] for n in (65, 66, 67)]
    frames += [bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02", type=t)
                     / Raw(b"\xaa\xaa\x03" + b"e" * 60)) for t in (0x05FF, 0x0600)]
    frames.append(bytes.fromhex("020000000002020000000001" "0002" "ffff"))
    return [Scenario(component="mlx5", config=_striding_rx_config(len(frames), **over),
                     frames=tuple(frames), rules=("MLX5-CSUM-004", "MLX5-CSUM-005"))
            for over in ({}, {"rq_type": "cyclic", "rx_linear": True})]


def config_edge_scenarios() -> list[Scenario]:
    """MLX5-DEV-001, MLX5-DEV-007, MLX5-COMP-001 at the accepted ends the draws miss: a
    two-slot CQ over a two-WQE ring; the largest stride (2**13 bytes) and the most strides
    (2**15) with the largest WQ (2**16 WQEs); the legacy RQ's smallest and largest
    fragment; real-time timestamps of 2**32 - 1 seconds and a free-running one of
    2**64 - 1 (the last values each format holds); the rx_hash kfunc with NETIF_F_RXHASH
    off (MLX5-KF-002); a basic session of 70 packets on a 128-slot CQ (a session
    reports at most 64); and the largest CQ, 2**24 slots, with the counters at its last
    slot, so that a basic session wraps into the next lap and bit 24 of the consumer
    counter (the owner bit it compares, MLX5-CQ-001) flips."""
    frames = tuple(_udp_frame(n, 0x70 + n % 16) for n in (60, 300, 1000))
    out = [Scenario(component="mlx5", frames=frames, config=_striding_rx_config(
        len(frames), rq_type="cyclic", log_cq_size=1, log_wq_size=1)),
        Scenario(component="mlx5", frames=frames, config=_striding_rx_config(
            len(frames), log_stride_sz=13, log_num_strides=3, log_wq_size=16)),
        Scenario(component="mlx5", frames=frames, config=_striding_rx_config(
            len(frames), log_num_strides=15, log_wq_size=16))]
    for frag_size in (64, rx.PAGE_SIZE - rx.XDP_PACKET_HEADROOM - X86_64.shinfo_reserved):
        out.append(Scenario(component="mlx5", frames=frames, config=_striding_rx_config(
            len(frames), rq_type="cyclic", frag_size=frag_size)))
    for fmt, stamp in (("real_time", 0xFFFF_FFFF * 10**9 + 999_999_999),
                       ("free_running", 2**64 - 1)):
        config = _striding_rx_config(len(frames), ts_format=fmt, hwtstamp="all")
        config["timestamps"] = [stamp] * len(frames)
        out.append(Scenario(component="mlx5", frames=frames, config=config,
                            rules=("MLX5-DEV-007", "MLX5-SKB-004")))
    # MLX5-KF-002: the rx_hash kfunc on a netdev without NETIF_F_RXHASH (-ENODATA).
    out.append(Scenario(component="mlx5", frames=frames[:1], config=_striding_rx_config(
        1, rq_type="cyclic", rxhash=False),
        program=({"op": "kfunc", "name": "rx_hash"}, {"op": "return", "action": 2}),
        rules=("MLX5-KF-002",)))
    session = tuple(_udp_frame(60 + n, 0x41) for n in range(70))
    out.append(Scenario(component="mlx5", frames=session, config=_striding_rx_config(
        len(session), rq_type="cyclic", compression="basic", log_cq_size=7),
        rules=("MLX5-COMP-001",)))
    out.append(Scenario(component="mlx5", frames=frames, config=_edge_config(
        log_cq_size=24, start=(1 << 24) - 1), rules=("MLX5-CQ-001", "MLX5-DEV-013")))
    return out


def _ring_from(scenario: Scenario, patch: Callable[[list[bytearray]], None] | None = None,
               **config: Any) -> Scenario:
    """The ring image the modelled device writes for ``scenario`` (MLX5-RING-004), its
    slots changed by ``patch`` and its config extended by ``config``."""
    ring = mlx5_ring.from_frame_scenario(scenario)
    event = ring.events[0]
    slots = [bytearray(bytes.fromhex(str(s))) for s in event["slots"]]
    if patch is not None:
        patch(slots)
    events = ({**event, "slots": [bytes(s).hex() for s in slots]}, *ring.events[1:])
    return attrs.evolve(ring, events=events, config={**ring.config, **config})


def _set_lro_num_seg(n: int) -> Callable[[list[bytearray]], None]:
    def patch(slots: list[bytearray]) -> None:
        slots[0][32] = n  # srqn bits 31:24 (MLX5-CQE-007)
    return patch


def _set_byte_cnt(slot: int, length: int) -> Callable[[list[bytearray]], None]:
    def patch(slots: list[bytearray]) -> None:
        slots[slot][46:48] = length.to_bytes(2, "big")  # byte_cnt bits 15:0 (MLX5-CQE-008)
    return patch


def _set_wqe_id(slot: int, wqe_id: int) -> Callable[[list[bytearray]], None]:
    def patch(slots: list[bytearray]) -> None:
        slots[slot][2:4] = wqe_id.to_bytes(2, "big")  # read by the striding handler only
    return patch


def _set_rss_hash_types(types: Sequence[int]) -> Callable[[list[bytearray]], None]:
    def patch(slots: list[bytearray]) -> None:
        for slot, value in enumerate(types):
            slots[slot][16] = value  # rss_hash_type (MLX5-CQE-005)
    return patch


def ring_edge_scenarios() -> list[Scenario]:
    """MLX5-RING-001..003 and the striding handlers on ring images at the edges the draws
    miss: an oversize non-linear packet whose ``lro_num_seg`` is 1 (not an LRO session: it
    is still dropped); a two-slot ring at consumer counter 2**32 - 1, idle and taking two
    CQEs (the u32 counter ends at 1), and an idle ring of the most slots an image may hold
    (2**16); a packet
    ending exactly at its WQE's end; linear striding packets of hw_mtu - 1 and hw_mtu
    bytes, and one whose byte count is both oversize and past its WQE (dropped before a
    byte is read, not refused); XDP_TX on a 2-WQEBB SQ under a budget of 2, whose
    completions come before every poll and once after the last (five sends: the last
    poll sends one); a cyclic RQ's CQE with ``wqe_id`` 0xFFFF, a field only the striding
    handler reads; ``bpf_xdp_metadata_rx_hash`` on CQEs whose hash type names an L4
    protocol but no IP version, or the reserved IP type 3 (``mlx5_xdp_rss_type[1..3]`` and
    ``[12..15]``: no type)."""
    out = []
    over = _striding_rx_config(2)
    out.append(_ring_from(Scenario(component="mlx5", config=over, frames=(
        _udp_frame(1523, 0x21), _udp_frame(100, 0x22))), _set_lro_num_seg(1)))
    idle = _striding_rx_config(0, rq_type="cyclic", log_cq_size=1, start=0xFFFF_FFFF)
    out.append(_ring_from(Scenario(component="mlx5", config=idle, frames=())))
    wraps = _striding_rx_config(2, rq_type="cyclic", log_cq_size=1, start=0xFFFF_FFFF)
    out.append(_ring_from(Scenario(component="mlx5", config=wraps, frames=(
        _udp_frame(90, 0x2D), _udp_frame(91, 0x2E)))))
    largest = _striding_rx_config(0, rq_type="cyclic", log_cq_size=16)
    out.append(_ring_from(Scenario(component="mlx5", config=largest, frames=())))
    exact = _striding_rx_config(2, log_num_strides=3)
    out.append(_ring_from(Scenario(component="mlx5", config=exact, frames=(
        _udp_frame(512, 0x23), _udp_frame(448, 0x24)))))
    linear = _striding_rx_config(2, rx_linear=True)
    out.append(_ring_from(Scenario(component="mlx5", config=linear, frames=(
        _udp_frame(1521, 0x25), _udp_frame(1522, 0x26)))))
    out.append(_ring_from(Scenario(component="mlx5", config=linear, frames=(
        _udp_frame(2560, 0x27), _udp_frame(600, 0x28))), _set_byte_cnt(1, 2000)))
    tx = _striding_rx_config(5, rq_type="cyclic", xdpsq_size=2, budget=2)
    out.append(_ring_from(Scenario(component="mlx5", config=tx, frames=tuple(
        _udp_frame(80 + i, 0x29) for i in range(5)), program=({"op": "return", "action": 3},))))
    cyclic = _striding_rx_config(2, rq_type="cyclic", log_wq_size=2)
    out.append(_ring_from(Scenario(component="mlx5", config=cyclic, frames=(
        _udp_frame(90, 0x2A), _udp_frame(91, 0x2B))), _set_wqe_id(0, 0xFFFF)))
    types = (0x40, 0x80, 0xC0, 0x0C, 0x4C, 0x8C, 0xCC)
    hashed = _striding_rx_config(len(types), rq_type="cyclic")
    out.append(_ring_from(Scenario(
        component="mlx5", config=hashed, frames=tuple(_udp_frame(70 + i, 0x2C)
                                                      for i in range(len(types))),
        program=({"op": "kfunc", "name": "rx_hash"}, {"op": "return", "action": 2})),
        _set_rss_hash_types(types)))
    return out


def device_edge_scenarios() -> list[Scenario]:
    """MLX5-DEV-003/007/009/010 on the CQ alone (no handlers) at the edges the draws miss:
    cyclic frames of the buffer's length (MTU + 18, ``max_frame``) and a byte either side;
    TCP segments with FIN but no ACK, FIN+ACK, ACK and SYN (the CQE's L4 type tells
    segments with ACK apart); an empty frame and a 100-byte one on a striding RQ (even
    an empty frame takes a stride); and timestamps in both formats on the CQ-only path."""
    eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    frames = [_udp_frame(1500 + 18 + d, 0x10) for d in (-1, 0, 1)]
    frames += [bytes(eth / IP(src="10.0.2.1", dst="10.0.2.2") / TCP(sport=9, dport=10, flags=f))
               for f in ("F", "FA", "A", "S")]
    cyclic = _striding_rx_config(len(frames), rq_type="cyclic", rx_path=False)
    out = [Scenario(component="mlx5", config=cyclic, frames=tuple(frames),
                    rules=("MLX5-DEV-003", "MLX5-DEV-009"))]
    runt = (b"", _udp_frame(100, 0x11))
    out.append(Scenario(component="mlx5", config=_striding_rx_config(2, rx_path=False),
                        frames=runt, rules=("MLX5-DEV-010",)))
    for fmt in ("free_running", "real_time"):
        config = _striding_rx_config(3, rx_path=False, ts_format=fmt)
        config["timestamps"] = [0, 123_456_789_012, 2**40 + 7]
        out.append(Scenario(component="mlx5", config=config,
                            frames=tuple(_udp_frame(64 + i, 0x12) for i in range(3)),
                            rules=("MLX5-DEV-007",)))
    return out


#: The rules :func:`fixed_scenarios` aims at (spelled out again in test_mlx5.py).
FIXED_RULES = ("MLX5-RX-001", "MLX5-RX-002", "MLX5-RX-003", "MLX5-RX-005", "MLX5-XDP-002",
               "MLX5-XDP-003", "MLX5-XDP-004", "MLX5-XDP-005", "MLX5-XDP-007", "MLX5-XDP-008",
               "MLX5-CSUM-004", "MLX5-CSUM-005", "MLX5-CSUM-007", "MLX5-CSUM-010",
               "MLX5-SKB-004", "MLX5-SKB-005", "MLX5-DEV-003", "MLX5-DEV-007", "MLX5-DEV-009",
               "MLX5-DEV-010", "MLX5-DEV-013", "MLX5-COMP-001", "MLX5-CQ-001", "MLX5-CQ-010",
               "MLX5-RING-001", "MLX5-RING-002", "MLX5-KF-002")


def fixed_scenarios() -> list[tuple[str, Scenario]]:
    """The edges the draws miss, each once (the full mutation run's survivors of
    ``reference/mlx5``), named for the test ids: the striding RQ's fragments at page ends
    and the oversize boundary (:func:`striding_page_scenarios`), the XDP-SQ's inline and
    WQEBB boundaries (:func:`xdpsq_edge_scenarios`), the checksum and protocol
    boundaries (:func:`csum_edge_scenarios`), the configuration's accepted ends
    (:func:`config_edge_scenarios`), the device alone (:func:`device_edge_scenarios`) and
    ring images (:func:`ring_edge_scenarios`)."""
    out: list[tuple[str, Scenario]] = []
    for name, make in (("pages", striding_page_scenarios), ("xdpsq", xdpsq_edge_scenarios),
                       ("csum", csum_edge_scenarios), ("config", config_edge_scenarios),
                       ("device", device_edge_scenarios), ("ring", ring_edge_scenarios)):
        out += [(f"{name}-{i}", s) for i, s in enumerate(make())]
    return out

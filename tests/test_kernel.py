"""Kernel versions (KVER-001, KVER-002) and the version gates: parsing, refusal, each gate
on both sides with its rule and commit, and every gate's SPEC.md entry."""

from __future__ import annotations

import errno
import re
from pathlib import Path

import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether

from conformance.components import cpumap, fec, kfunc, page_pool, tun, xdp, zcrx
from conformance.components import mlx5 as mlx5_component
from conformance.scenario import Scenario
from conformance.targets.base import NotApplicable
from reference import page_pool as pp
from reference.cpumap import CpuMap
from reference.errors import InvalidConfig
from reference.kernel import (
    DEFAULT_KERNEL,
    GATES,
    SUPPORTED,
    KernelVersion,
    Since,
    UnsupportedKernel,
    gate,
    parse_kernel,
    resolve_kernel,
    same_series,
)
from reference.kfuncs import BPF_MAP_TYPE_CPUMAP, BpfDevices, BpfProg, map_update_prog
from reference.xdp.arch import xdp_semantics

SPEC = Path(__file__).resolve().parents[1] / "SPEC.md"
V = parse_kernel


# ---------------------------------------------------------------------- KVER-001/002


@pytest.mark.rule("KVER-001")
@pytest.mark.parametrize(("text", "want"), [
    ("6.12", KernelVersion(6, 12, 117)),
    ("6.18", KernelVersion(6, 18, 44)),
    ("7.3", KernelVersion(7, 3, 4)),
    ("6.12.57", KernelVersion(6, 12, 57)),
    ("7.3.4", KernelVersion(7, 3, 4)),
    ("v6.12.1", KernelVersion(6, 12, 1)),
    ("6.18.44-cloud-amd64", KernelVersion(6, 18, 44)),
    ("6.12.117+deb13-armmp", KernelVersion(6, 12, 117)),
    ("6.18.44-fc-v1098", KernelVersion(6, 18, 44)),
    (" 7.3.4 ", KernelVersion(7, 3, 4)),
])
def test_parse(text: str, want: KernelVersion) -> None:
    assert parse_kernel(text) == want


@pytest.mark.rule("KVER-001")
def test_default_is_the_newest_series_and_bare_series_are_the_trees_read() -> None:
    assert DEFAULT_KERNEL == KernelVersion(7, 3, 4) == max(SUPPORTED.values())
    assert resolve_kernel(None) == resolve_kernel("") == DEFAULT_KERNEL
    assert sorted(SUPPORTED) == [(6, 12), (6, 18), (7, 3)]
    assert str(V("6.12")) == "6.12.117"
    assert V("6.12.57") < V("6.12") < V("6.18") < V("7.3")
    assert same_series("6.12.57", "6.12.117+deb13-armmp") and not same_series("6.12", "7.3")


@pytest.mark.rule("KVER-002")
@pytest.mark.parametrize("text", ["6.17", "6.1", "5.15.0-91-generic", "7.4", "8.0.1", "6", "",
                                  "latest", "6.x", "six.twelve"])
def test_unsupported_versions_are_refused_with_the_supported_list(text: str) -> None:
    with pytest.raises(UnsupportedKernel) as info:
        parse_kernel(text, "--kernel")
    message = str(info.value)
    assert message.startswith(f"--kernel {text!r}: ")
    assert "KVER-002" in message and info.value.rule == "KVER-002"
    assert "6.12 (= 6.12.117), 6.18 (= 6.18.44), 7.3 (= 7.3.4)" in message


# ---------------------------------------------------------------------- gates as data


@pytest.mark.rule("KVER-001")
def test_since_predicate_with_stable_backports() -> None:
    since = Since(mainline=(6, 18), stable=((6, 12, 63),))
    assert not since.holds(V("6.12.62")) and since.holds(V("6.12.63"))
    assert since.holds(V("6.18.0")) and since.holds(V("7.3"))
    assert since.describe() == "v6.18 and later; 6.12.y >= 6.12.63"
    assert not Since(mainline=(7, 0)).holds(V("6.18")) and Since().describe() == "never"


def _spec_line(rule: str) -> str:
    lines = [ln for ln in SPEC.read_text().splitlines() if ln.startswith(f"- **{rule}** · ")]
    assert len(lines) == 1, f"SPEC.md has {len(lines)} version-difference lines for {rule}"
    return lines[0]


@pytest.mark.rule("KVER-001")
@pytest.mark.parametrize("rule", sorted(GATES))
def test_every_gate_names_a_spec_rule_that_describes_both_sides(rule: str) -> None:
    """The gate's rule is defined in SPEC.md, and its version-differences entry names the
    commit, both behaviours and the versions on the new side, and says which side each
    supported version is on."""
    g = GATES[rule]
    assert re.search(rf"^#### {re.escape(rule)} — ", SPEC.read_text(), re.MULTILINE)
    line = _spec_line(rule)
    assert f"commit {g.commit} · " in line
    assert f"before: {g.before} · " in line and f"after: {g.after} · " in line
    assert f"after-side versions: {g.since.describe()}" in line
    for version in SUPPORTED.values():
        side = "after" if gate(version, rule) else "before"
        assert f"{version} {side}" in line, (rule, str(version), side)


# ---------------------------------------------------------------------- each gate, both sides

UDP_FRAME = bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / IP(dst="10.0.0.2")
                  / UDP(sport=1, dport=2) / (b"x" * 40))


def _mlx5_striding_nonlinear(kernel: str, frames: tuple[bytes, ...], mtu: int,
                             program: list[dict[str, int]] | None) -> list[dict[str, object]]:
    sc = Scenario(component="mlx5", config={**mlx5_component.EXPLAIN_DEFAULTS,
                                            "rq_type": "striding", "rx_linear": False,
                                            "mtu": mtu},
                  frames=frames, kernel=kernel, program=program)
    return list(mlx5_component.COMPONENT.expected(sc)["xdp"])


#: A 4032-byte frame fills strides 0..62 of a page, so the next packet starts 64 bytes
#: before the page's end (log_stride_sz 6).
_FILLER = bytes(Ether(dst="02:00:00:00:00:02") / IP(dst="10.0.0.2") / UDP(sport=1, dport=2)
                / (b"y" * (4032 - 42)))
_TCP_2054 = bytes(Ether(dst="02:00:00:00:00:02") / IP(dst="10.0.0.2") / TCP(sport=1, dport=2)
                  / (b"x" * 2000))


@pytest.mark.rule("MLX5-XDP-002", "PKT-L4-007")
@pytest.mark.parametrize("program", [None, [{"op": "return", "action": 2}]])
def test_gate_mlx5_striding_head_399f030cd612(program: list[dict[str, int]] | None) -> None:
    """The second packet starts 64 bytes before a page end.  6.12/6.18: 256 bytes go to
    the skb head (or, with XDP, the pull takes 256 and empties the 64-byte first frag), the
    rest (1798 bytes) fits the next page: 1 frag.  7.3: without XDP only the 54 header
    bytes go to the head, leaving 10 bytes before the page end: 2 frags; with XDP the pull
    stops at ETH_HLEN (14 < 64): 2 frags.  The bytes are the same."""
    def nr_frags(kernel: str) -> list[object]:
        recs = _mlx5_striding_nonlinear(kernel, (_FILLER, _TCP_2054), 9000, program)
        assert [r["skb"]["len"] for r in recs] == [4032, 2054]  # type: ignore[index]
        return [r["skb"]["nr_frags"] for r in recs]  # type: ignore[index]
    assert nr_frags("6.12") == nr_frags("6.18") == [1, 1]
    assert nr_frags("7.3") == [1, 2]
    assert GATES["MLX5-XDP-002"].commit == "399f030cd612"


@pytest.mark.rule("MLX5-RX-002")
def test_gate_mlx5_nonlinear_oversize_drop_7ed7a576f20a() -> None:
    """A 2054-byte packet on a 1500-MTU non-linear striding RQ: built before 7.0, dropped
    and counted as rx_oversize_pkts_sw_drop since."""
    for kernel, kind in (("6.12", "packet"), ("6.18", "packet"), ("7.3", "oversize")):
        recs = _mlx5_striding_nonlinear(kernel, (_TCP_2054,), 1500, None)
        assert [r["kind"] for r in recs] == [kind], kernel
    assert GATES["MLX5-RX-002"].commit == "7ed7a576f20a"


@pytest.mark.rule("FEC-XDP-005")
def test_gate_fec_xdp_tx_queue_8a3344bb734f() -> None:
    """Up to 6.19 XDP_TX takes TX queue cpu % num_tx_queues; since 7.0 the RX queue's own
    index (0); the f601899e4321 mode keeps the CPU choice on every version."""
    def tx_queue(kernel: str, **config: object) -> int:
        obs = fec.COMPONENT.expected(Scenario(
            component="fec", config={"cpu": 1, "num_tx_queues": 3, "avb": True, "xdp": True,
                                     **config},
            program=[{"op": "return", "action": 3}], frames=(UDP_FRAME,), kernel=kernel))
        return int(obs["packets"][0]["tx"]["queue"])
    assert tx_queue("6.12") == tx_queue("6.18") == 1
    assert tx_queue("7.3") == 0
    assert tx_queue("7.3", cpu=5) == 0 and tx_queue("6.18", cpu=5) == 2
    assert tx_queue("7.3", xdp_tx_frame=True) == 1
    assert GATES["FEC-XDP-005"].commit == "8a3344bb734f"


@pytest.mark.rule("FEC-RX-005")
def test_gate_fec_rx_bytes_racc_pad_ad17e7e92a7c() -> None:
    """6.12 before .63 counts the 2-byte RACC pad in rx_bytes; 6.12.63+, 6.18, 7.3 not."""
    def rx_bytes(kernel: str, racc: bool = True) -> int:
        obs = fec.COMPONENT.expected(Scenario(component="fec", config={"racc": racc},
                                              frames=(UDP_FRAME,), kernel=kernel))
        return int(obs["counters"]["rx_bytes"])
    assert rx_bytes("6.12.62") == len(UDP_FRAME) + 4 + 2
    for kernel in ("6.12.63", "6.12", "6.18", "7.3"):
        assert rx_bytes(kernel) == len(UDP_FRAME) + 4, kernel
    assert rx_bytes("6.12.62", racc=False) == rx_bytes("7.3", racc=False) == len(UDP_FRAME) + 4
    assert GATES["FEC-RX-005"].commit == "ad17e7e92a7c"


@pytest.mark.rule("PP-INIT-002", "PP-INIT-007")
def test_gates_page_pool_creation() -> None:
    """PP-INIT-002 ("page_pool: Clamp pool size to max 16K pages"): -E2BIG before 6.12.63,
    clamp after; PP-INIT-007 (9954464d737d): the order check exists only in 7.x."""
    big = pp.PagePoolParams(pool_size=40000)
    assert pp.page_pool_create(big, kernel=V("6.12.62")).err == -errno.E2BIG
    for kernel in ("6.12", "6.18", "7.3"):
        pool = pp.page_pool_create(big, kernel=V(kernel)).pool
        assert pool is not None and pool.ring.size == 16384, kernel
    huge = pp.PagePoolParams(order=11)
    assert pp.page_pool_create(huge, kernel=V("6.12")).err == 0
    assert pp.page_pool_create(huge, kernel=V("6.18")).err == 0
    assert pp.page_pool_create(huge, kernel=V("7.3")).err == -errno.EINVAL
    obs = page_pool.COMPONENT.expected(Scenario(
        component="page_pool", config={"params": {"pool_size": 20000}}, kernel="6.12"))
    assert obs is not None


@pytest.mark.rule("XDP-ADJ-008", "XDP-ADJ-010", "XDP-BUFF-006")
def test_gates_xdp_core_semantics() -> None:
    """88b6b7f7b216 (modulo tailroom), 8f12d1137c23 (pfmemalloc clear), 6bffdc0f88f8
    (FRAGS_UNREADABLE): the switches of reference.xdp.arch per version."""
    old = xdp_semantics(V("6.12.57"))
    assert (old.frag_tailroom_modulo, old.shrink_clears_pfmemalloc,
            old.frags_unreadable_flag) == (False, False, False)
    mid = xdp_semantics(V("6.12"))
    assert (mid.frag_tailroom_modulo, mid.shrink_clears_pfmemalloc,
            mid.frags_unreadable_flag) == (True, True, False)
    for kernel in ("6.18", "7.3"):
        new = xdp_semantics(V(kernel))
        assert new.frag_tailroom_modulo and new.shrink_clears_pfmemalloc
        assert new.frags_unreadable_flag
    assert xdp.semantics_of(Scenario(component="xdp", kernel="6.12.57")) == old


@pytest.mark.rule("XDP-ADJ-008")
def test_gate_xdp_frag_grow_through_the_component() -> None:
    """A frag scenario runs with the scenario's semantics (both sides give an answer)."""
    for kernel in ("6.12.57", "7.3"):
        obs = xdp.COMPONENT.expected(Scenario(
            component="xdp", config={"frag_size": 256, "linear_max": 64},
            frames=(UDP_FRAME + bytes(200),), kernel=kernel,
            program=({"op": "adjust_tail", "delta": 8}, {"op": "return", "action": 2})))
        assert obs["packets"][0]["ops"][0]["rc"] == 0, kernel


@pytest.mark.rule("TUN-BUF-001")
def test_gate_tun_metadata_c2315ebb0588() -> None:
    """6.12 prepares the tap buffer without metadata: adjust_meta is -ENOTSUPP (524)."""
    def rc(kernel: str) -> int:
        obs = tun.COMPONENT.expected(Scenario(
            component="tun", frames=(UDP_FRAME,), kernel=kernel,
            program=({"op": "adjust_meta", "delta": -4}, {"op": "return", "action": 2})))
        return int(obs["packets"][0]["ops"][0]["rc"])
    assert rc("6.12") == -524
    assert rc("6.18") == rc("7.3") == 0


@pytest.mark.rule("KFUNC-MAP-004", "CPUMAP-MAP-003")
def test_gate_cpumap_refusal_errno_48e11bad9a1f() -> None:
    bpf = BpfDevices()
    prog = bpf.prog_load(BpfProg())
    assert prog.prog is not None
    assert map_update_prog(BPF_MAP_TYPE_CPUMAP, prog.prog, kernel=V("6.18")) == -errno.ENOMEM
    assert map_update_prog(BPF_MAP_TYPE_CPUMAP, prog.prog, kernel=V("7.3")) == -errno.EINVAL
    for kernel, want in (("6.12", -errno.ENOMEM), ("7.3", -errno.EINVAL)):
        cmap = CpuMap(4, [0, 1], kernel=V(kernel))
        assert cmap.update_elem(1, 8, prog=prog.prog, ops=()) == want, kernel


@pytest.mark.rule("KFUNC-ATTACH-004")
def test_gate_attach_check_order_ad27ed7d2309() -> None:
    assert not BpfDevices.for_kernel(V("6.12.112")).attach_checks_in_install
    assert not BpfDevices.for_kernel(V("6.18.15")).attach_checks_in_install  # live guest
    assert BpfDevices.for_kernel(V("6.18")).attach_checks_in_install  # 6.18.44, the live host
    assert BpfDevices.for_kernel(V("6.12")).attach_checks_in_install
    assert BpfDevices.for_kernel(V("7.3")).attach_checks_in_install
    obs = kfunc.COMPONENT.expected(Scenario(component="kfunc", kernel="6.18"))
    assert isinstance(obs, dict)


@pytest.mark.rule("ZCRX-REG-001", "CPUMAP-KT-004", "MLX5-XDP-001", "MLX5-XDP-004")
def test_gates_without_an_earlier_model_are_not_applicable() -> None:
    """zcrx's data path before v7.0 (795663b4d160), the mlx5
    handlers before the per-RQ buffer (b66b76a82c88, 6.12.57) and the XDP_PASS skb fix
    (afd5ba577c10): the model makes no prediction there."""
    z = Scenario(component="zcrx", kernel="6.18", events=({"op": "reap"},))
    with pytest.raises(NotApplicable, match="795663b4d160"):
        zcrx.COMPONENT.expected(z)
    with pytest.raises(NotApplicable, match="795663b4d160"):
        zcrx.COMPONENT.expected(Scenario(component="zcrx", kernel="6.12", events=z.events))
    m = Scenario(component="mlx5", kernel="6.12.56", frames=(UDP_FRAME,),
                 config={"key": "00" * 40, "indir": [0], "rx_path": True})
    with pytest.raises(NotApplicable, match="b66b76a82c88"):
        mlx5_component.COMPONENT.expected(m)
    for kernel in ("6.12", "6.18"):  # the cpumap kthread has both sides of CPUMAP-KT-004
        cpumap.COMPONENT.expected(Scenario(component="cpumap", kernel=kernel,
                                           events=({"op": "rx", "n": 1},)))


@pytest.mark.rule("ZCRX-REG-001", "ZCRX-BUFLEN-001", "ZCRX-REG-003", "ZCRX-REG-004",
                  "ZCRX-REG-007", "ZCRX-REG-011")
def test_gates_zcrx_registration_6_18_against_7_3() -> None:
    """6.18 registers zcrx (v6.15) but has no rx_buf_len (795663b4d160), no flags and no
    event descriptor: those words are reserved, -EINVAL; 7.3 reads them."""
    def reg(kernel: str, **fields: int) -> dict[str, object]:
        config = {"reg": {"rq_entries": 64, **fields}, "area": {"len": 65536},
                  "region": {"size": 4096}}
        obs = zcrx.COMPONENT.expected(Scenario(component="zcrx", config=config,
                                               kernel=kernel))
        return dict(obs["register"])
    assert reg("6.18")["rc"] == reg("7.3")["rc"] == 0
    assert reg("6.18")["rx_buf_len"] == 0 and reg("7.3")["rx_buf_len"] == 4096
    assert reg("6.18", rx_buf_len=4096)["rc"] == -errno.EINVAL
    assert reg("7.3", rx_buf_len=4096)["rc"] == -errno.EOPNOTSUPP  # read: ZCRX-BUFLEN-005
    assert reg("6.18", flags=2)["rc"] == -errno.EINVAL
    assert reg("7.3", flags=2, if_idx=0)["rc"] == 0
    assert reg("6.18", flags=1)["rc"] == -errno.EINVAL
    assert reg("6.18", event_desc=8)["rc"] == -errno.EINVAL
    with pytest.raises(InvalidConfig):
        reg("7.3", event_desc=8)


def test_every_gate_has_a_row_in_the_live_gate_table() -> None:
    """SPEC.md's "Version gates checked against live kernels" names each gate once."""
    spec = (Path(__file__).parents[1] / "SPEC.md").read_text()
    section = spec.split("### Version gates checked against live kernels", 1)[1]
    section = section.split("\n## ", 1)[0]
    rows = re.findall(r"^\| ([A-Z0-9]+(?:-[A-Z0-9]+)+) \|", section, re.M)
    assert sorted(rows) == sorted(GATES), set(rows) ^ set(GATES)

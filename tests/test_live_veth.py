"""The live targets on this machine's kernel: the conformance suite against the real veth
and tun drivers, clean-up on every exit path, and the veth rules that need a live pair of
their own (attach MTU, ethtool names, the xdp_frame path).

Skipped, with the reason, unless root with clang, bpftool, libbpf and kernel BTF.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from conformance.live import env

REASON = env.missing()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")

if REASON is None:
    from conformance.live import libbpf, netns, ops, probe
    from conformance.live.devices import VethPair


def _conformance(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "conformance.cli", "conformance",
                           "--profile", "ci", *args],
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.rule("VETH-SKB-001", "VETH-SKB-002", "VETH-SKB-003", "VETH-KF-001",
                  "VETH-KF-002", "VETH-KF-003", "VETH-KF-004", "VETH-KF-005", "VETH-KF-006",
                  "VETH-STAT-002", "VETH-STAT-003")
def test_conformance_veth_live() -> None:
    done = _conformance("--target", "veth", "--driver", "veth")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "0 fail" in done.stdout


@pytest.mark.rule("TUN-BUF-001", "TUN-BUF-002", "TUN-KF-001")
def test_conformance_tun_live() -> None:
    done = _conformance("--target", "tun", "--driver", "tun")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "0 fail" in done.stdout


@pytest.fixture
def own_pair() -> Iterator[tuple[str, str]]:
    """A veth pair of this test process in namespace ``rxo<pid>x``: (ns, name prefix)."""
    ns = netns.create("x")
    a, b = netns.name_for("y"), netns.name_for("z")
    try:
        netns.ip("link", "add", a, "type", "veth", "peer", "name", b, netns=ns)
        yield ns, a
    finally:
        netns.delete(ns)


@pytest.mark.rule("VETH-SKB-002", "VETH-STAT-002")
def test_iface_target_on_a_veth(own_pair: tuple[str, str]) -> None:
    """``iface:NAME`` picks the veth model from the driver ethtool reports."""
    ns, _ = own_pair
    a, b = netns.name_for("y"), netns.name_for("z")
    for dev in (a, b):
        netns.ip("link", "set", dev, "up", netns=ns)
    obj = probe.build()
    with netns.entered(ns):
        peer = probe.PeerProgram(obj, socket.if_nametoindex(a))
    try:
        done = _conformance("--target", f"iface:{b},peer={a},netns={ns}", "--driver", "veth",
                            "--rules", "VETH-SKB-*")
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert "0 fail" in done.stdout and "pass" in done.stdout
    finally:
        with netns.entered(ns):
            peer.close()


@pytest.mark.rule("VETH-MTU-001")
def test_attach_needs_peer_mtu_within_one_page(own_pair: tuple[str, str]) -> None:
    ns, _ = own_pair
    a, b = netns.name_for("y"), netns.name_for("z")
    obj = probe.build()
    netns.ip("link", "set", a, "mtu", "3507", netns=ns)
    with netns.entered(ns), pytest.raises(libbpf.BpfError) as refused:
        ops.load_probe(obj, socket.if_nametoindex(b))
    assert refused.value.errno == 34  # ERANGE
    netns.ip("link", "set", a, "mtu", "3506", netns=ns)
    with netns.entered(ns):
        attached = ops.load_probe(obj, socket.if_nametoindex(b))
        attached.close()


@pytest.mark.rule("VETH-STAT-001")
def test_ethtool_names_live() -> None:
    pair = VethPair(probe.build())
    try:
        out = netns.run_in(pair.ns_b, "ethtool", "-S", pair.if_b)
        names = [line.split(":")[0].strip() for line in out.splitlines()[1:]]
        from reference.veth import ethtool_stat_names

        assert names[: len(ethtool_stat_names())] == ethtool_stat_names()
        assert pair.stats is not None and pair.stats.names == names
    finally:
        pair.close()


@pytest.mark.rule("VETH-FRAME-001", "VETH-STAT-002")
def test_xdp_frame_path_live() -> None:
    """A frame the peer bounces with XDP_TX arrives as an xdp_frame: no skb, so every
    kfunc is -ENODATA with nothing written, and xdp_bytes counts the whole frame."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    # Explicit MACs: scapy never has to resolve one, so no ARP ever leaves the machine.
    eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    pair = VethPair(probe.build())
    try:
        with netns.entered(pair.ns_a):
            pair.peer.close()
            pair.peer = probe.PeerProgram(pair.probe_obj_path, socket.if_nametoindex(pair.if_a),
                                          "rxo_bounce")
        frame = bytes(eth / IP(src="10.1.1.1", dst="10.1.1.2") / UDP(sport=9, dport=10))
        ops: list[dict[str, object]] = [
            {"op": "kfunc", "name": n} for n in ("rx_timestamp", "rx_hash", "rx_vlan_tag")]
        ops.append({"op": "return", "action": 1})
        pair.probe.prepare([ops])
        before = pair.counters()
        with netns.entered(pair.ns_b):
            sender = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
            sender.bind((pair.if_b, 0))
        with sender:
            sender.send(frame)
        record = probe.decode_record(pair.probe.collect(1)[0], ops)
        time.sleep(0.05)
        after = pair.counters()
        assert record["ops"] == [
            {"op": "kfunc", "name": "rx_timestamp", "rc": -61, "timestamp": None},
            {"op": "kfunc", "name": "rx_hash", "rc": -61, "hash": None, "rss_type": None},
            {"op": "kfunc", "name": "rx_vlan_tag", "rc": -61, "vlan_proto": None,
             "vlan_tci": None},
        ]
        assert bytes.fromhex(record["data"]) == frame
        delta = {k: after[k] - before[k] for k in after}
        assert delta["rx_queue_0_xdp_packets"] == 1
        assert delta["rx_queue_0_xdp_bytes"] == len(frame)
        assert delta["rx_queue_0_xdp_drops"] == 1
    finally:
        pair.close()


_HOLDER = """
import sys, time
from conformance.targets.live import LiveTarget
t = LiveTarget(sys.argv[1])
print("ready", flush=True)
time.sleep(60)
"""


def _start_holder(kind: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, kind], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


def _names_of(pid: int) -> list[str]:
    return sorted(n for n in os.listdir(netns.NETNS_DIR) if n.startswith(f"rxo{pid}"))


def test_sigkill_leftovers_are_swept_by_the_next_start() -> None:
    proc = _start_holder("veth")
    assert _names_of(proc.pid) == [f"rxo{proc.pid}a", f"rxo{proc.pid}b"]
    proc.kill()
    proc.wait()
    # SIGKILL cannot be caught: the namespaces stay until a start sweeps them (another
    # live test running in parallel may already have done so).
    assert set(_names_of(proc.pid)) <= set(netns.leftovers())
    from conformance.targets.live import LiveTarget

    LiveTarget("tun").close()  # the next start sweeps
    assert _names_of(proc.pid) == []
    assert not [n for n in netns.leftovers() if n.startswith(f"rxo{proc.pid}")]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signals_clean_up(signum: int) -> None:
    proc = _start_holder("tun")
    assert _names_of(proc.pid) == [f"rxo{proc.pid}t"]
    proc.send_signal(signum)
    proc.wait(timeout=10)
    assert _names_of(proc.pid) == []


def test_sweep_spares_live_and_foreign_names() -> None:
    mine = netns.create("s")
    foreign = "rxofoo"
    netns.ip("netns", "add", foreign)
    try:
        netns.sweep()
        present = os.listdir(netns.NETNS_DIR)
        assert mine in present and foreign in present
    finally:
        netns.delete(mine)
        subprocess.run(["ip", "netns", "del", foreign], check=False)


@pytest.mark.rule("VETH-KF-005", "VETH-KF-007")
def test_tagged_hash_equalities_live() -> None:
    """Hand-picked pairs for the VLAN key: which tagged frames share a flow hash on the
    running kernel, next to the model's prediction (equalities only; the value is keyed
    per boot)."""
    from conformance.components import veth as veth_component
    from conformance.scenario import Scenario
    from conformance.targets.live import LiveTarget

    flow = ("udp", 1000, 2000, 0x0A000001, 0x0A000002)
    plain = veth_component._flow_frame(flow)
    other_port = veth_component._flow_frame(("udp", 1001, 2000, 0x0A000001, 0x0A000002))
    swapped = veth_component._flow_frame(flow, swap_ports=True)
    tos = veth_component._flow_frame(flow, tos=0x10)
    inband = veth_component._inband
    cases: list[tuple[bytes, tuple[int, int] | None]] = [
        (plain, None),                                   # 0
        (plain, (0x8100, 0x0000)),                       # 1: a zero tag still counts
        (plain, (0x8100, 0x0064)),                       # 2
        (plain, (0x8100, 0x1064)),                       # 3: DEI only: = 2
        (plain, (0x8100, 0xA064)),                       # 4: PCP differs from 2
        (plain, (0x88A8, 0x0064)),                       # 5: TPID differs from 2
        (plain, (0x8100, 0x00C8)),                       # 6: VID differs from 2
        (swapped, None),                                 # 7: ports swapped only: = 0
        (inband(plain, [(0x8100, 100)]), None),          # 8
        (inband(plain, [(0x8100, 200)]), None),          # 9: VID ignored: = 8
        (inband(other_port, [(0x8100, 100)]), None),     # 10: ports ignored: = 8
        (inband(tos, [(0x8100, 100)]), None),            # 11: TOS read as the TCI
        (inband(plain, [(0x88A8, 100)]), None),          # 12: outer TPID counts
        (inband(plain, [(0x88A8, 1), (0x8100, 2)]), None),  # 13: QinQ: = 12 (same IP)
        (inband(plain, [(0x8100, 100)]), (0x8100, 300)),    # 14: oob on in-band
    ]
    scenario = Scenario(component="veth", config={"path": "skb",
                                                  "oob_vlan": [None if t is None else
                                                               {"proto": t[0], "tci": t[1]}
                                                               for _, t in cases]},
                        frames=tuple(f for f, _ in cases),
                        program=({"op": "kfunc", "name": "rx_hash"},))
    want = veth_component.expected(scenario)["packets"]
    target = LiveTarget("veth")
    try:
        got = target.run(scenario)["packets"]
    finally:
        target.close()
    w = [p["ops"][0] for p in want]
    g = [p["ops"][0] for p in got]
    assert [o["rss_type"] for o in g] == [o["rss_type"] for o in w] == [8] * 8 + [0] * 7
    for i in range(len(cases)):
        for j in range(i):
            assert (g[i]["hash"] == g[j]["hash"]) == (w[i]["hash"] == w[j]["hash"]), (j, i)
    # The hand-worked expectations the model must meet as well.
    assert w[3]["hash"] == w[2]["hash"] and w[7]["hash"] == w[0]["hash"]
    assert w[9]["hash"] == w[8]["hash"] == w[10]["hash"]
    assert len({w[k]["hash"] for k in (0, 1, 2, 4, 5, 6)}) == 6
    assert len({w[k]["hash"] for k in (8, 11, 12)}) == 3 and w[13]["hash"] == w[12]["hash"]

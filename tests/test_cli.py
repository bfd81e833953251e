"""The command line: explain narrates a user's own pcap; replay compares one scenario."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether
from scapy.utils import wrpcap

from conformance.vectors.ms_rss import IPV4_VECTORS, MS_KEY

#: Explicit MACs: scapy never has to resolve one, so no ARP ever leaves the machine.
ETH = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "conformance.cli", *args], capture_output=True,
                          text=True, timeout=120)


@pytest.mark.rule("TRACE-001", "RSS-TOEP-001")
def test_explain_narrates_a_pcap_made_with_scapy(tmp_path: Path) -> None:
    v = IPV4_VECTORS[0]
    pcap = tmp_path / "one.pcap"
    wrpcap(str(pcap), [ETH / IP(src=v.src, dst=v.dst) / TCP(sport=v.sport, dport=v.dport)])
    config = json.dumps({"key": MS_KEY.hex(), "indir": [0, 1]})
    result = _cli("explain", "--driver", "rss", str(pcap), "--config", config)
    assert result.returncode == 0, result.stderr
    assert f"{v.hash_l3l4:#x}" in result.stdout  # the published hash of this row
    for rule in ("RSS-IN-001", "RSS-TOEP-001", "RSS-TYPE-001", "RSS-RETA-004"):
        assert rule in result.stdout


@pytest.mark.rule("TRACE-001", "XDP-ACT-002")
def test_explain_xdp_shows_the_verdict_switch(tmp_path: Path) -> None:
    pcap = tmp_path / "one.pcap"
    wrpcap(str(pcap), [ETH / IP() / TCP()])
    result = _cli("explain", str(pcap), "--program", '[{"op": "return", "action": 9}]')
    assert result.returncode == 0, result.stderr
    assert "XDP_ABORTED" in result.stdout and "XDP-ACT-002" in result.stdout


def test_explain_reports_bad_input_without_a_traceback(tmp_path: Path) -> None:
    result = _cli("explain", str(tmp_path / "missing.pcap"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    result = _cli("explain", "--driver", "nosuch", str(tmp_path / "missing.pcap"))
    assert result.returncode == 2 and "no such driver or component" in result.stderr


def test_replay_compares_one_scenario() -> None:
    scenario = json.dumps({"schema": 1, "component": "rss",
                           "config": {"key": MS_KEY.hex(), "indir": [0]},
                           "frames": [bytes(ETH / IP() / TCP()).hex()]})
    result = _cli("replay", scenario)
    assert result.returncode == 0 and "checked 3 fields" in result.stdout
    bad = _cli("replay", "{not json")
    assert bad.returncode == 2 and "not JSON" in bad.stderr


@pytest.mark.rule("TRACE-001", "CPUMAP-FATE-001", "SKB-BUILD-003", "SKB-BUILD-004")
def test_explain_narrates_a_frame_through_cpumap_to_skb_free() -> None:
    events = json.dumps([{"op": "rx", "n": 8}, {"op": "kthread", "n": 2}, {"op": "free", "n": 8}])
    result = _cli("explain", "--driver", "cpumap", "--events", events)
    assert result.returncode == 0, result.stderr
    assert "fates: freed 8" in result.stdout and "pp_recycle -> true" in result.stdout
    old = _cli("explain", "--driver", "cpumap", "--events", events, "--config",
               '{"pre_v6_4": true}')
    assert old.returncode == 0 and "no recycle mark (SKB-BUILD-004)" in old.stdout


@pytest.mark.rule("TRACE-001", "MLX5-DEV-002", "MLX5-CSUM-007", "MLX5-CSUM-003")
def test_explain_mlx5_narrates_a_users_pcap(tmp_path: Path) -> None:
    """No configuration needed: the default key is the published one, so the CQE's
    rss_hash_result must be the published hash of this row."""
    v = IPV4_VECTORS[0]
    pcap = tmp_path / "mlx5.pcap"
    wrpcap(str(pcap), [ETH / IP(src=v.src, dst=v.dst) / TCP(sport=v.sport, dport=v.dport)
                       / (b"d" * 40)])
    result = _cli("explain", "--driver", "mlx5", str(pcap))
    assert result.returncode == 0, result.stderr
    assert f"rss {v.hash_l3l4:#010x}" in result.stdout
    assert "CHECKSUM_COMPLETE" in result.stdout and "page -> skb" in result.stdout
    for rule in ("MLX5-DEV-002", "MLX5-CSUM-007", "MLX5-SKB-005", "MLX5-RX-001"):
        assert rule in result.stdout
    result = _cli("explain", "--driver", "mlx5", str(pcap), "--program",
                  '[{"op": "return", "action": 1}]')
    assert result.returncode == 0, result.stderr
    assert "XDP verdict XDP_DROP" in result.stdout and "page -> drop" in result.stdout


@pytest.mark.rule("RSS-TYPE-001")
def test_parallel_run_and_a_shared_example_database(tmp_path: Path) -> None:
    """``-n 2`` spreads the properties over xdist workers and still prints one verdict per
    rule; ``--database`` keeps what a dev run found, so the failing example is on disk for
    the next run (or another machine) to replay."""
    result = _cli("conformance", "--driver", "rss", "-n", "2",
                  "--report", str(tmp_path / "r.json"))
    assert result.returncode == 0, result.stdout + result.stderr
    verdicts = json.loads((tmp_path / "r.json").read_text())["rules"]
    assert verdicts and all(v["verdict"] == "pass" for v in verdicts)
    db = tmp_path / "db"
    env_result = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "conformance", "--driver", "rss",
         "--profile", "dev", "--database", str(db),
         "--target", "python:wrong_targets:RssTypeWithoutL4"],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parent)})
    assert env_result.returncode == 1, env_result.stdout + env_result.stderr
    assert any(p.is_file() for p in db.rglob("*"))

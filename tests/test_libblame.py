"""Blame into the shared parser and checksum code (conformance/components/libblame.py).

A field a driver model derives through ``reference/packet.py`` or ``reference/checksum.py``
is blamed on the library rules the reference's trace recorded for that frame, besides the
driver's own rule; and a target whose library arithmetic is wrong is blamed under the
library rule, not only under the driver rule that consumed it.
"""

from __future__ import annotations

from unittest import mock

import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from conformance.components import fec, libblame, mlx5, rss
from conformance.observe import compare
from conformance.scenario import Scenario, to_jsonable
from conformance.vectors.ms_rss import MS_KEY
from reference import checksum

ETH = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
TCP4 = bytes(ETH / IP(src="10.0.0.1", dst="10.0.0.2") / TCP(sport=1, dport=2, flags="A")
             / Raw(b"t" * 20))
UDP4 = bytes(ETH / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=3, dport=4) / Raw(b"u" * 9))


@pytest.mark.rule("PKT-ETH-001", "PKT-IP4-004", "PKT-L4-001", "CSUM-L4-001", "CSUM-008")
def test_frame_rules_follow_the_walk_and_the_verdicts() -> None:
    rules = libblame.frame_rules(TCP4)
    assert rules.walk == ("PKT-ETH-001", "PKT-IP4-001", "PKT-IP4-002", "PKT-IP4-003",
                          "PKT-IP4-004", "PKT-L4-001", "PKT-L4-006")
    assert "PKT-L4-001" not in rules.l3 and "PKT-IP4-004" in rules.l3
    assert rules.ipv4_header == ("CSUM-008", "CSUM-002")
    assert rules.l4_check[0] == "CSUM-L4-001" and "CSUM-006" in rules.l4_check
    assert rules.verified[-1] == "CSUM-L4-006"
    short = TCP4[:40]  # the IPv4 total length runs past the frame: refused
    assert libblame.frame_rules(short).walk[-1] == "PKT-IP4-004"


def _mlx5(frames: tuple[bytes, ...], **config: object) -> Scenario:
    return Scenario(component="mlx5", frames=frames,
                    config={"key": MS_KEY.hex(), "indir": [0], **config})


@pytest.mark.rule("MLX5-DEV-004", "MLX5-DEV-005", "CSUM-002", "CSUM-RX-001", "PKT-L4-002")
def test_mlx5_cqe_fields_name_the_library_rules_that_decided_them() -> None:
    rules = mlx5.COMPONENT.rules_in(_mlx5((UDP4,)))
    assert rules("packets[0].check_sum")[:3] == ("MLX5-DEV-004", "MLX5-COMP-004", "MLX5-CQ-005")
    assert "CSUM-002" in rules("packets[0].check_sum")
    assert "PKT-L4-002" not in rules("packets[0].check_sum")  # an IP-level sum
    hds = rules("packets[0].hds_ip_ext")
    assert hds[0] == "MLX5-DEV-005" and {"CSUM-L4-002", "CSUM-L4-006", "CSUM-008"} <= set(hds)
    assert "PKT-L4-002" in rules("packets[0].l4_l3_hdr_type")
    full = mlx5.COMPONENT.rules_in(_mlx5((UDP4,), csum_full=True))("packets[0].check_sum")
    assert full[:2] == ("MLX5-DEV-014", "CSUM-RX-001")


@pytest.mark.rule("CSUM-003", "CSUM-L4-002", "MLX5-DEV-005")
def test_a_wrong_fold_is_blamed_on_the_fold() -> None:
    """A target whose csum_fold is off by one: its first differing field is a CQE's
    L4_OK bit, blamed on the device rule and on the fold and the UDP check under it."""
    scenario = _mlx5((TCP4, UDP4))
    expected = to_jsonable(mlx5.COMPONENT.expected(scenario))
    real = checksum.csum_fold
    with mock.patch.object(checksum, "csum_fold", lambda csum: real(csum) ^ 1):
        actual = to_jsonable(mlx5.COMPONENT.expected(scenario))
    first = compare(expected, actual, rules_for=mlx5.COMPONENT.rules_in(scenario)).first
    assert first is not None and first.path == "packets[0].hds_ip_ext"
    assert {"MLX5-DEV-005", "CSUM-003", "CSUM-L4-001"} <= set(first.rules)


@pytest.mark.rule("FEC-RX-011", "FEC-DEV-004", "CSUM-L4-001")
def test_fec_ip_summed_names_the_checksum_verdict() -> None:
    scenario = Scenario(component="fec", frames=(TCP4,),
                        config={"bufdesc_ex": True, "rx_csum": True})
    rules = fec.COMPONENT.rules_in(scenario)("packets[0].skb.ip_summed")
    assert rules[:2] == ("FEC-RX-011", "FEC-DEV-004") and "CSUM-L4-001" in rules
    off = Scenario(component="fec", frames=(TCP4,), config={"bufdesc_ex": True,
                                                            "rx_csum": False})
    assert "CSUM-L4-001" not in fec.COMPONENT.rules_in(off)("packets[0].skb.ip_summed")


@pytest.mark.rule("RSS-IN-002", "RSS-IN-003", "PKT-L4-001")
def test_rss_hash_names_the_walk_except_for_fragments() -> None:
    """A hashed packet's input is the parser's (its walk is named); a fragment's hash is
    RSS-IN-003's choice alone (the wrong target RssFragmentsWithPorts stays exact)."""
    frag = bytes(ETH / IP(src="10.0.0.1", dst="10.0.0.2", flags="MF") / UDP() / b"x")
    scenario = Scenario(component="rss", frames=(TCP4, frag),
                        config={"key": MS_KEY.hex(), "indir": [0]})
    rules = rss.COMPONENT.rules_in(scenario)
    assert rules("packets[0].hash")[0] == "RSS-IN-002" and "PKT-L4-001" in rules("packets[0].hash")
    assert rules("packets[1].hash") == ("RSS-IN-003",)

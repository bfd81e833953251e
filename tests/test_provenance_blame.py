"""Blame that follows a field back to the rule that produced what it reads.

A field's first differing value is blamed on the rule that decided it and, where that
decision consumed another rule's output, on that rule too: the page the fast path hands
out was put on top of the cache by some put; an RX descriptor's buffer address is a pool
page's DMA address; a TX completion reads the descriptor a transmit filled; a kfunc's
return code is its own rule's.  Each case here is a hand-built scenario and the rules the
component's attribution gives the field (SPEC: TRACE-001, the trace the blame reads).
"""

from __future__ import annotations

import pytest
from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from conformance.components import fec, page_pool, veth, xdp, zcrx
from conformance.components.driver_xdp import EXPLAIN_FRAME
from conformance.scenario import Scenario


@pytest.mark.rule("PP-ALLOC-001", "PP-RECYCLE-002", "PP-RECYCLE-004")
def test_fast_path_page_is_blamed_on_the_put_that_cached_it() -> None:
    """A put from the pool's NAPI CPU in softirq is made direct (PP-RECYCLE-002) and
    caches the page (PP-RECYCLE-004); the next allocation pops it (PP-ALLOC-001)."""
    scenario = Scenario(component="page_pool", config={"napi_cpu": 0},
                        events=({"op": "alloc"}, {"op": "put", "alloc": 0, "sync": 64},
                                {"op": "alloc"}))
    rules = page_pool.COMPONENT.rules_in(scenario)("events[2].page")
    assert rules[0] == "PP-ALLOC-001"
    assert {"PP-RECYCLE-002", "PP-RECYCLE-004"} <= set(rules)
    # the first allocation took a fresh page: nothing put it anywhere before
    first = page_pool.COMPONENT.rules_in(scenario)("events[0].page")
    assert "PP-RECYCLE-004" not in first
    # A put from another CPU is not direct (PP-RECYCLE-002) and goes to the ring: had it
    # been cached, the next allocation would have popped its page instead.
    other = Scenario(component="page_pool", config={"napi_cpu": 0},
                     events=({"op": "alloc"}, {"op": "alloc"},
                             {"op": "put", "alloc": 0, "direct": True},
                             {"op": "put", "alloc": 1, "cpu": 1}, {"op": "alloc"}))
    popped = page_pool.COMPONENT.rules_in(other)("events[4].page")
    assert popped[0] == "PP-ALLOC-001"
    assert {"PP-RECYCLE-004", "PP-RECYCLE-002"} <= set(popped)
    assert page_pool.expected(other)["events"][4]["page"] == 0


@pytest.mark.rule("FEC-RX-001", "PP-ALLOC-004", "PP-ALLOC-005", "FEC-TX-002", "FEC-TX-003",
                  "FEC-TX-005", "XDP-MEM-002", "FEC-RX-014")
def test_fec_ring_and_completions_name_what_they_read() -> None:
    scenario = Scenario(component="fec", config={"tx_ring_size": 32}, frames=(EXPLAIN_FRAME,),
                        events=({"op": "xdp_xmit", "frames": [0, 0]}, {"op": "tx_done"},
                                {"op": "napi"}))
    rules = fec.COMPONENT.rules_in(scenario)
    assert {"FEC-RX-001", "PP-ALLOC-004", "PP-ALLOC-005"} <= set(rules("rx_ring"))
    completion = rules("tx_completions[0].bytes")
    assert completion[0] == "FEC-TX-005" and {"FEC-TX-002", "FEC-TX-003"} <= set(completion)
    # an NDO frame goes back by its memory type, which open registered
    assert {"XDP-MEM-002", "FEC-RX-014"} <= set(rules("tx_completions[0].fate"))


@pytest.mark.rule("XDP-PROG-001", "XDP-PROG-003", "XDP-ADJ-005")
def test_xdp_op_records_name_the_program() -> None:
    """Which ops left a record is the program's; an op's return code stays its helper's
    alone (a wrong adjust_meta is XDP-ADJ-005's, not the buffer set-up's)."""
    program = ({"op": "adjust_meta", "delta": -8}, {"op": "return", "action": 2})
    scenario = Scenario(component="xdp", frames=(EXPLAIN_FRAME,), program=program)
    rules = xdp.COMPONENT.rules_in(scenario)
    assert rules("packets[0].ops[0].op")[:2] == ("XDP-PROG-001", "XDP-PROG-003")
    assert rules("packets[0].ops[0].rc") == ("XDP-ADJ-005",)


@pytest.mark.rule("VETH-KF-003", "VETH-KF-004")
def test_veth_kfunc_rc_names_the_kfunc_rule() -> None:
    program = ({"op": "kfunc", "name": "rx_vlan_tag"}, {"op": "return", "action": 2})
    scenario = Scenario(component="veth", frames=(EXPLAIN_FRAME,), program=program)
    rules = veth.COMPONENT.rules_in(scenario)("packets[0].ops[0].rc")
    assert rules[0] == "VETH-KF-004" and "VETH-KF-003" in rules


@pytest.mark.rule("ZCRX-SCRUB-001", "ZCRX-CQE-004", "ZCRX-SIM-001", "ZCRX-SIM-003",
                  "ZCRX-REFILL-007")
def test_zcrx_user_refs_after_a_scrub_and_posted_buffers() -> None:
    scenario = Scenario(component="zcrx", frames=zcrx.frames_for([1000, 2000]),
                        events=({"op": "alloc", "n": 8}, {"op": "rx"}, {"op": "recv"},
                                {"op": "return", "cqes": [0]}, {"op": "shutdown"}))
    rules = zcrx.COMPONENT.rules_in(scenario)
    assert rules("final.user_refs")[0] == "ZCRX-SCRUB-001"
    assert rules("events[0].got")[-1] == "ZCRX-SIM-001"
    assert rules("events[3].written") == ("ZCRX-SIM-003", "ZCRX-REFILL-007")


@pytest.mark.rule("MLX5-CSUM-007", "MLX5-CSUM-005", "MLX5-CSUM-006", "MLX5-CQE-001",
                  "MLX5-DEV-010")
def test_mlx5_checksum_complete_names_the_packet_gates() -> None:
    """CHECKSUM_COMPLETE is what is left when no gate held: the gates that read the packet
    (MLX5-CSUM-005, MLX5-CSUM-006) let it through (a frame long enough for MLX5-CSUM-004).
    A CQE field no device rule decides is the CQE's layout."""
    from conformance.components import mlx5

    frame = bytes(Ether() / IP(src="192.0.2.1", dst="192.0.2.2") / TCP() / Raw(b"x" * 100))
    scenario = Scenario(component="mlx5", config=dict(mlx5.EXPLAIN_DEFAULTS), frames=(frame,))
    observed = mlx5.expected(scenario)
    assert observed["xdp"][0]["skb"]["ip_summed"] == "CHECKSUM_COMPLETE"
    assert mlx5.COMPONENT.rules_in(scenario)("xdp[0].skb.ip_summed") == (
        "MLX5-CSUM-007", "MLX5-CSUM-005", "MLX5-CSUM-006")
    assert mlx5.COMPONENT.rules_for("packets[0].wqe_id") == ("MLX5-DEV-010", "MLX5-COMP-005")
    assert mlx5.COMPONENT.rules_for("packets[0].flags_rqpn") == ("MLX5-COMP-005",
                                                                 "MLX5-CQE-001")

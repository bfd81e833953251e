"""reference.zcrx.scenario and the zcrx component: the 4 KiB vs 32 KiB stream counts
against hand computation, the user model, explain, attribution.

The hand computation lays the stream's payload back to back (packed) or from a fresh
buffer per segment (per_packet) and counts, per skb, the buffers its bytes touch: one
CQE each, one refill entry each, one page_pool allocation per buffer.  It is interval
arithmetic, written independently of the model's event-driven run.
"""

from __future__ import annotations

import errno
import json
from typing import Any

import attrs
import pytest
from zcrx_helpers import make_engine

from conformance import cli
from conformance.components import zcrx as component
from conformance.scenario import Scenario
from reference.zcrx import DeviceConfig, IoUringZcrxRqe, ZcrxEngine, mss_stream, stream_counts
from reference.zcrx.scenario import MIB, compare_buffer_sizes


def hand_counts(payloads: list[int], size: int, *, placement: str = "packed",
                gro: int = 1) -> tuple[int, int]:
    """(CQEs, buffers) by interval arithmetic."""
    if placement == "per_packet":
        return (sum(-(-p // size) for p in payloads), sum(-(-p // size) for p in payloads))
    cqes, pos = 0, 0
    for i in range(0, len(payloads), gro):
        end = pos + sum(payloads[i:i + gro])
        cqes += (end - 1) // size - pos // size + 1
        pos = end
    return cqes, -(-pos // size)


@pytest.mark.rule("ZCRX-SIM-004", "ZCRX-SIM-001", "ZCRX-SIM-003")
@pytest.mark.parametrize(("size", "cqes", "buffers"), [(4096, 979, 256), (32768, 756, 32)])
def test_one_mib_stream_counts(size: int, cqes: int, buffers: int) -> None:
    payloads = mss_stream(MIB, 1448)
    assert len(payloads) == 725 and sum(payloads) == MIB
    # 725 segments plus the buffer boundaries that fall inside a segment: 255 boundaries
    # of 4 KiB, one of which (181 * 4096 = 512 * 1448) falls between two; 31 of 32 KiB
    assert hand_counts(payloads, size) == (cqes, buffers)
    assert (725 + 254, 725 + 31) == (979, 756)
    c = stream_counts(payloads, size)
    assert (c.cqes, c.refill_entries, c.pp_allocs) == (cqes, cqes, buffers)
    assert c.copy_cqes == 0 and c.problems == 0
    assert c.per_mib()["cqes"] == cqes
    assert c.mp_alloc_calls >= -(-buffers // 64)
    assert c.niovs_from_ring + c.niovs_from_freelist >= buffers
    # the CQE reference and the frag reference per CQE
    assert c.pp_ref_ops == 2 * cqes


@pytest.mark.rule("ZCRX-SIM-004")
@pytest.mark.parametrize(("placement", "gro", "mss"), [
    ("per_packet", 1, 1448), ("packed", 4, 1448), ("packed", 16, 1448), ("packed", 1, 4096),
    ("per_packet", 1, 8948), ("packed", 3, 8948)])
def test_stream_counts_match_hand_computation(placement: str, gro: int, mss: int) -> None:
    payloads = mss_stream(MIB // 4, mss)
    dev = DeviceConfig(placement=placement, gro_segs=gro)
    for size, c in compare_buffer_sizes(payloads, device=dev).items():
        cqes, buffers = hand_counts(payloads, size, placement=placement, gro=gro)
        assert (c.cqes, c.refill_entries, c.pp_allocs) == (cqes, cqes, buffers), size
        assert c.problems == 0


@pytest.mark.rule("ZCRX-SIM-004")
def test_per_packet_placement_gains_nothing_from_large_buffers() -> None:
    c = compare_buffer_sizes(mss_stream(MIB, 1448), device=DeviceConfig("per_packet"))
    assert c[4096].pp_allocs == c[32768].pp_allocs == 725
    assert c[4096].cqes == c[32768].cqes == 725


@pytest.mark.rule("ZCRX-SIM-003")
def test_user_writes_only_into_free_slots() -> None:
    e = make_engine(niovs=8, rq_entries=4)
    e.rx_segments([100] * 6)
    e.recv()
    assert len(e.cqes) == 6
    assert e.user_return_new() == 4  # the ring holds 4
    assert e.user_cursor == 4 and e.refill_written == 4
    assert e.user_write([IoUringZcrxRqe()]) == 0
    rqe = e.user_rqe_for(5)
    assert rqe.off == e.cqes[5].off and rqe.len == e.cqes[5].res and rqe.pad == 0


def _explain(capsys: pytest.CaptureFixture[str], config: dict[str, object],
             events: list[dict[str, Any]] | None = None) -> str:
    argv = ["explain", "--driver", "zcrx", "--config", json.dumps(config)]
    if events is not None:
        argv += ["--events", json.dumps(events)]
    assert cli.main(argv) == 0
    return capsys.readouterr().out


@pytest.mark.rule("ZCRX-SIM-004", "ZCRX-BUFLEN-006")
def test_explain_reports_the_per_mib_counts(capsys: pytest.CaptureFixture[str]) -> None:
    out4 = _explain(capsys, {"reg": {"rx_buf_len": 4096}})
    assert "rx_buf_len 4096 (ZCRX-BUFLEN-006)" in out4
    assert "cqes                 979.0" in out4 and "pp_allocs            256.0" in out4
    out32 = _explain(capsys, {"reg": {"rx_buf_len": 32768}})
    assert "cqes                 756.0" in out32 and "pp_allocs            32.0" in out32
    assert "8.00x the pp_allocs" in out32
    assert "0 problem(s)" in out32


@pytest.mark.rule("ZCRX-BUFLEN-005")
def test_explain_narrates_a_refusal(capsys: pytest.CaptureFixture[str]) -> None:
    out = _explain(capsys, {"reg": {"rx_buf_len": 32768},
                            "netdev": {"qcfg_rx_page_size": False}})
    assert "-EOPNOTSUPP (-95), decided by ZCRX-BUFLEN-005" in out


@pytest.mark.rule("ZCRX-REFILL-003")
def test_explain_with_events(capsys: pytest.CaptureFixture[str]) -> None:
    events: list[dict[str, Any]] = [{"op": "rx"}, {"op": "recv"},
                                    {"op": "return", "cqes": [0, 0]}, {"op": "alloc", "n": 70}]
    argv = ["explain", "--driver", "zcrx", "--config", "{}", "--events", json.dumps(events)]
    scenario = Scenario(component="zcrx", frames=component.frames_for([4096]),
                        events=tuple(events))
    text = component.explain(scenario)
    assert "ZCRX-REFILL-003" in text and "skipped:uref0" in text
    assert cli.main(argv) == 0  # without frames: the events run on an empty stream
    capsys.readouterr()


@pytest.mark.rule("ZCRX-REFILL-003", "ZCRX-REG-011", "ZCRX-COPY-001")
def test_component_attribution() -> None:
    frames = component.frames_for([4096])
    scenario = Scenario(component="zcrx", frames=frames, events=(
        {"op": "rx"}, {"op": "recv"}, {"op": "return", "cqes": [0, 0]}, {"op": "alloc",
                                                                        "n": 70}))
    obs = component.expected(scenario)
    outcomes = [r["outcome"] for r in obs["refills"]]
    assert outcomes == ["cached", "skipped:uref0"]
    rules = component.COMPONENT.rules_in(scenario)
    assert rules("refills[1].outcome") == ("ZCRX-REFILL-003",)
    assert rules("refills[0].outcome") == ("ZCRX-REFILL-006",)
    assert rules("register.rc") == ("ZCRX-REG-011",)
    assert rules("register.mp_rx_page_size") == ("ZCRX-BUFLEN-005",)
    assert obs["register"]["mp_rx_page_size"] == 0
    assert obs["ledger"] == {"problems": 0}
    json.dumps(obs)
    copy = Scenario(component="zcrx", config={"area": {"len": 128 * 4096},
                                              "device": {"linear_payload": 10}},
                    frames=frames, events=({"op": "rx"}, {"op": "recv"}))
    # Blame from the reference's trace of event 1: the copy of the linear part decided the
    # first CQE's length (ZCRX-COPY-002); ZCRX-COPY-001 is still applied.  A zero-copy
    # CQE's length is the device's placement (ZCRX-SIM-001) as ZCRX-CQE-002 reports it.
    assert component.COMPONENT.rules_in(copy)("events[1].cqes[0].res") == ("ZCRX-COPY-002",)
    assert component.COMPONENT.rules_in(copy)("events[1].cqes[1].res") == (
        "ZCRX-CQE-002", "ZCRX-SIM-001")
    assert "ZCRX-COPY-001" in component.applied(copy)


@pytest.mark.rule("ZCRX-SIM-001")
def test_frames_carry_their_tcp_payload() -> None:
    frames = component.frames_for([0, 1, 1448])
    assert [component.payload_of(f) for f in frames] == [0, 1, 1448]
    assert frames[0][:12] == bytes.fromhex("020000000002020000000001")


@pytest.mark.rule("ZCRX-REG-001")
def test_the_fault_propertys_marker_names_every_fault_rule() -> None:
    from conformance.properties.test_zcrx import FAULT_RULES

    assert tuple(sorted({rule for rule, _ in component.FAULTS})) == FAULT_RULES


@pytest.mark.rule("ZCRX-REG-012")
def test_veth_registrations_are_decided_by_the_veth_propertys_rules() -> None:
    """On veth every case of the veth property is decided by a rule its marker names
    (never by an area, buffer-length or queue rule, except 7.3's early token check,
    ZCRX-AREA-001's gate), on 6.18 and on 7.3 (where the ZCRX_REG_NODEV cases register
    no device at all, so veth is not involved)."""
    from conformance.properties.test_zcrx import VETH_RULES

    for kernel in ("6.18", "7.3"):
        for scenario in component.veth_fault_scenarios():
            scenario = attrs.evolve(scenario, kernel=kernel)
            engine = ZcrxEngine(component.config_of(scenario))
            if engine.result.nodev:
                continue
            assert engine.result.rule in VETH_RULES, (kernel, scenario.config)
            if scenario.config.get("netdev") is not None and not engine.result.ok \
                    and engine.result.rule not in VETH_RULES[:-2]:
                assert engine.result.rc == -errno.EOPNOTSUPP

"""mlx5 ring images: the driver alone on CQ slots the tests write byte by byte.

Every expectation here is worked by hand from the kernel sources (Debian linux-source 7.3.4,
identical in 6.12.117 where cited): ``drivers/net/ethernet/mellanox/mlx5/core/en_rx.c``
(``mlx5e_skb_set_hash``, ``trigger_report``, ``mlx5e_handle_rx_err_cqe``,
``mlx5e_handle_rx_cqe``, ``mlx5e_handle_rx_cqe_mpwrq``, ``mlx5e_build_rx_skb``, the
decompression helpers), ``en/xdp.c`` (``mlx5e_xdp_rx_hash``, ``mlx5_xdp_rss_type[]``),
``en/txrx.h`` (``MLX5E_RX_ERR_CQE``), ``en/health.h`` (``cqe_syndrome_needs_recover``) and
``include/net/xdp.h`` (``enum xdp_rss_hash_type``), not read back from the model.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from conformance.components import mlx5, mlx5_ring
from conformance.scenario import Scenario
from conformance.targets.base import SIDES, Capabilities
from conformance.validate import InputError, validate_scenario
from reference.errors import InvalidConfig, MalformedInput, OracleError
from reference.mlx5 import cqe as C

FRAME = bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
              / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=1, dport=2) / Raw(b"u" * 20))
#: A slot the hardware still owns in lap 0: owner bit 1, opcode MLX5_CQE_INVALID.
OWNED = bytes(62) + bytes((0, (C.MLX5_CQE_INVALID << 4) | 1))
RESP_SEND = C.MLX5_CQE_RESP_SEND << 4
RX_HASH_PASS = ({"op": "kfunc", "name": "rx_hash"}, {"op": "return", "action": 2})

# include/net/xdp.h: XDP_RSS_L3_IPV4 BIT(0), L3_IPV6 BIT(1), L4 BIT(3), L4_TCP BIT(4),
# L4_UDP BIT(5), L4_IPSEC BIT(7); the types are their ORs.
XDP_TYPE = {(1, 0): 0x01, (1, 1): 0x19, (1, 2): 0x29, (1, 3): 0x89,
            (2, 0): 0x02, (2, 1): 0x1A, (2, 2): 0x2A, (2, 3): 0x8A}


def slot(**kw: Any) -> bytes:
    kw.setdefault("op_own", RESP_SEND)
    return C.mlx5_cqe64(**kw).pack()


def ring(*slots: bytes, buffers: dict[int, bytes] | None = None, cc: int = 0, log: int = 3,
         program: tuple[dict[str, Any], ...] | None = None, fill: bytes = OWNED,
         **config: Any) -> Scenario:
    full = list(slots) + [fill] * ((1 << log) - len(slots))
    config.setdefault("log_wq_size", 3)
    config.setdefault("rx_path", True)
    return Scenario("mlx5", config=config,
                    events=mlx5_ring.ring_events(full, cc, buffers if buffers is not None
                                                 else {0: FRAME}),
                    program=program)


def run(scenario: Scenario) -> dict[str, Any]:
    validate_scenario(Scenario.from_json(json.loads(json.dumps(scenario.to_json()))))
    return mlx5.run(scenario)


# --- MLX5-RING-005: every rss_hash_type encoding ---------------------------------------------


@pytest.mark.rule("MLX5-RING-005", "MLX5-SKB-001", "MLX5-KF-002", "MLX5-CQE-005")
@pytest.mark.parametrize("noise", [0x00, 0x33])
@pytest.mark.parametrize("l4", [0, 1, 2, 3])
@pytest.mark.parametrize("ip", [0, 1, 2, 3])
def test_every_rss_hash_type_encoding(ip: int, l4: int, noise: int) -> None:
    """mlx5e_skb_set_hash reads the two fields apart (any L4 -> L4, else any IP -> L3);
    mlx5e_xdp_rx_hash looks them up together and gives NONE, rc 0, without IPv4/IPv6.
    Bits 5:4 and 1:0 (``noise``) are read by neither."""
    ht = (ip << 2) | (l4 << 6) | noise
    out = run(ring(slot(byte_cnt=len(FRAME), rss_hash_result=0xCAFE0001, rss_hash_type=ht),
                   program=RX_HASH_PASS))
    rec = out["xdp"][0]
    level = "PKT_HASH_TYPE_L4" if l4 else "PKT_HASH_TYPE_L3" if ip else "PKT_HASH_TYPE_NONE"
    assert rec["skb"]["hash_type"] == level
    assert rec["skb"]["l4_hash"] is bool(l4)
    assert rec["skb"]["hash"] == 0xCAFE0001
    assert rec["ops"][0] == {"op": "kfunc", "name": "rx_hash", "rc": 0, "hash": 0xCAFE0001,
                             "rss_type": XDP_TYPE.get((ip, l4), 0)}
    assert out["counters"]["rx_packets"] == 1  # no warning, no drop, nothing else counted
    assert out["counters"]["rx_wqe_err"] == 0


@pytest.mark.rule("MLX5-RING-005", "MLX5-SKB-001", "MLX5-KF-002")
def test_rss_hash_type_without_rxhash() -> None:
    """Without NETIF_F_RXHASH: no skb hash, and rx_hash returns -ENODATA (-61)."""
    out = run(ring(slot(byte_cnt=len(FRAME), rss_hash_result=7, rss_hash_type=0x44),
                   program=RX_HASH_PASS, rxhash=False))
    assert out["xdp"][0]["skb"]["hash"] == 0
    assert out["xdp"][0]["skb"]["hash_type"] is None
    assert out["xdp"][0]["ops"][0]["rc"] == -61


# --- MLX5-RING-006: every syndrome, every opcode ---------------------------------------------

NAMED_SYNDROMES = (0x01, 0x02, 0x04, 0x05, 0x06, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x22)
UNNAMED_SYNDROMES = (0x00, 0x03, 0x07, 0x0F, 0x17, 0x21, 0x23, 0x80, 0xFF)


def err_slot(opcode: int, syndrome: int, vendor: int = 0, wqe_counter: int = 0) -> bytes:
    return C.mlx5_err_cqe(syndrome=syndrome, vendor_err_synd=vendor, wqe_counter=wqe_counter,
                          op_own=opcode << 4).pack()


@pytest.mark.rule("MLX5-RING-006", "MLX5-CQE-009", "MLX5-RX-002")
@pytest.mark.parametrize("opcode", [C.MLX5_CQE_RESP_ERR, C.MLX5_CQE_REQ_ERR])
@pytest.mark.parametrize("syndrome", NAMED_SYNDROMES + UNNAMED_SYNDROMES)
def test_every_error_syndrome(syndrome: int, opcode: int) -> None:
    """trigger_report: recovery only for 0x02, 0x04, 0x05 (cqe_syndrome_needs_recover);
    then rx_wqe_err + 1; no skb, no program, no packet counted; the WQE is released."""
    out = run(ring(err_slot(opcode, syndrome, vendor=0xAB), program=RX_HASH_PASS))
    rec = out["xdp"][0]
    assert rec["kind"] == "error"
    assert rec["ops"] == [] and rec["verdict"] is None and rec["skb"] is None
    assert out["counters"]["rx_wqe_err"] == 1
    assert out["counters"]["rx_packets"] == 0 and out["counters"]["rx_bytes"] == 0
    assert out["recovering"] is (syndrome in (0x02, 0x04, 0x05))
    assert out["cc"] == 1 and out["polls"] == [1]


@pytest.mark.rule("MLX5-RING-006", "MLX5-CQE-009", "MLX5-CQE-003")
@pytest.mark.parametrize("opcode", range(16))
def test_every_opcode(opcode: int) -> None:
    """MLX5E_RX_ERR_CQE: only RESP_SEND (2) is a packet. REQ (0), RESP_WR_IMM, SEND_IMM,
    SEND_INV, RESIZE_CQ, rdma-core's NO_PACKET (6), the unnamed 7..11, SIG_ERR, REQ_ERR,
    RESP_ERR and INVALID (15, with the current lap's owner bit) are error CQEs.  Byte 55 (the
    syndrome) of a success CQE is ``ml_path``-free reserved space: 0 here."""
    raw = bytearray(slot(byte_cnt=len(FRAME), rss_hash_type=0x88, op_own=opcode << 4))
    out = run(ring(bytes(raw)))
    rec = out["xdp"][0]
    if opcode == C.MLX5_CQE_RESP_SEND:
        assert rec["kind"] == "packet" and rec["skb"]["len"] == len(FRAME)
        assert out["counters"]["rx_wqe_err"] == 0 and out["counters"]["rx_packets"] == 1
    else:
        assert rec["kind"] == "error" and rec["skb"] is None
        assert out["counters"]["rx_wqe_err"] == 1 and out["counters"]["rx_packets"] == 0
    assert out["recovering"] is False


@pytest.mark.rule("MLX5-RING-006", "MLX5-CQE-009")
@pytest.mark.parametrize("opcode", [C.MLX5_CQE_RESP_SEND_IMM, C.RDMA_CORE_MLX5_CQE_NO_PACKET])
def test_syndrome_byte_read_whatever_the_opcode(opcode: int) -> None:
    """trigger_report casts every error CQE to mlx5_err_cqe: byte 55 = 5 (WR_FLUSH_ERR)
    starts recovery also on a RESP_SEND_IMM or NO_PACKET CQE."""
    out = run(ring(err_slot(opcode, C.MLX5_CQE_SYNDROME_WR_FLUSH_ERR)))
    assert out["recovering"] is True and out["counters"]["rx_wqe_err"] == 1


@pytest.mark.rule("MLX5-RING-006", "MLX5-CQE-009")
def test_recovery_starts_once_and_errors_keep_counting() -> None:
    """test_and_set_bit(MLX5E_RQ_STATE_RECOVERING): the second recoverable CQE finds it set;
    both count rx_wqe_err; a success CQE after them still becomes an skb."""
    out = run(ring(err_slot(14, 0x04), err_slot(13, 0x02, wqe_counter=1),
                   slot(byte_cnt=len(FRAME), wqe_counter=2), buffers={2: FRAME}))
    assert out["counters"]["rx_wqe_err"] == 2 and out["counters"]["rx_packets"] == 1
    assert out["recovering"] is True
    assert [r["kind"] for r in out["xdp"]] == ["error", "error", "packet"]


# --- owner bits, validity bytes, formats ------------------------------------------------------


@pytest.mark.rule("MLX5-RING-001", "MLX5-CQ-001")
def test_stale_owner_bits_one_lap_old() -> None:
    """At cc = 8 of an 8-slot CQ the driver is in lap 1 and wants owner bit 1: a slot the
    device wrote in lap 0 (owner 0) is not new, so nothing is consumed."""
    stale = slot(byte_cnt=len(FRAME))  # owner bit 0
    out = run(ring(stale, cc=8, fill=stale))
    assert out["polls"] == [] and out["cc"] == 8 and out["xdp"] == []
    fresh = slot(byte_cnt=len(FRAME), op_own=RESP_SEND | 1)
    out = run(ring(fresh, cc=8))  # slots 1..7 keep owner 1 but opcode INVALID: errors
    assert out["cc"] == 16 and out["counters"]["rx_packets"] == 1
    assert out["counters"]["rx_wqe_err"] == 7


@pytest.mark.rule("MLX5-RING-001", "MLX5-CQ-002")
def test_enhanced_reader_looks_at_the_validity_byte_not_the_owner_bit() -> None:
    """With enhanced compression a slot is new when byte 62 equals the lap count mod 256;
    the owner bit does not matter."""
    one = slot(byte_cnt=len(FRAME), signature=1, op_own=RESP_SEND)  # validity 1, owner 0
    out = run(ring(one, cc=8, compression="enhanced", fill=bytes(64)))
    assert out["cc"] == 9 and out["counters"]["rx_packets"] == 1
    out = run(ring(one, cc=16, compression="enhanced", fill=bytes(64)))  # lap 2: stale
    assert out["cc"] == 16 and out["polls"] == []


@pytest.mark.rule("MLX5-CQE-003", "MLX5-RING-001")
@pytest.mark.parametrize("fmt", [C.MLX5_INLINE_DATA32_SEG, C.MLX5_INLINE_DATA64_SEG])
def test_inline_formats_are_read_as_plain_cqes(fmt: int) -> None:
    """The reader only asks whether the format is MLX5_COMPRESSED."""
    out = run(ring(slot(byte_cnt=len(FRAME), op_own=RESP_SEND | (fmt << 2))))
    assert out["counters"]["rx_packets"] == 1


@pytest.mark.rule("MLX5-RING-001", "MLX5-CQ-005", "MLX5-CQ-006", "MLX5-CQ-008",
                  "MLX5-CQ-009", "MLX5-CQ-010")
def test_basic_session_written_by_hand() -> None:
    """Title at slot 0 (byte_cnt = 3 packets, wqe_counter 5, hash type IPv4+UDP), mini
    array at slot 1: packets at WQE 5, 6, 7 with the minis' lengths and checksums; only
    packet 0 keeps the hash; owner bytes of slots 0..2 become lap 0's parity (0)."""
    title = slot(byte_cnt=3, wqe_counter=5, rss_hash_result=0xAA, rss_hash_type=0x84,
                 op_own=RESP_SEND | (C.MLX5_COMPRESSED << 2))
    minis = b"".join(C.mlx5_mini_cqe8.from_csum(0x1000 + i, 0, 60 + i).pack()
                     for i in range(3)).ljust(64, b"\0")
    bufs = {5: FRAME, 6: FRAME, 7: FRAME}
    out = run(ring(title, minis, buffers=bufs))
    pk = out["packets"]
    assert [p["wqe_counter"] for p in pk] == [5, 6, 7]
    assert [p["byte_cnt"] for p in pk] == [60, 61, 62]
    assert [p["check_sum"] for p in pk] == [0x1000, 0x1001, 0x1002]
    assert [(p["rss_hash_result"], p["rss_hash_type"]) for p in pk] == [(0xAA, 0x84), (0, 0),
                                                                          (0, 0)]
    assert [p["op_own"] for p in pk] == [RESP_SEND] * 3
    assert out["stats"] == {"cqe_compress_blks": 1, "cqe_compress_pkts": 3}
    assert out["cc"] == 3 and out["counters"]["rx_packets"] == 3


@pytest.mark.rule("MLX5-RING-003", "MLX5-RING-001")
def test_lro_bytes_are_ignored_below_two_segments() -> None:
    """mlx5e_build_rx_skb reads bytes 4..11 only when lro_num_seg > 1."""
    clean = run(ring(slot(byte_cnt=len(FRAME), srqn=1 << 24)))
    noisy = run(ring(slot(byte_cnt=len(FRAME), srqn=1 << 24, tcppsh_abort_dupack=0xFF,
                          min_ttl=3, tcp_win=0xFFFF, ack_seq_num=0xDEADBEEF)))
    assert clean["xdp"] == noisy["xdp"] and clean["counters"] == noisy["counters"]


@pytest.mark.rule("MLX5-RING-002", "MLX5-RX-002", "MLX5-CQE-008")
def test_striding_buffer_offset_and_filler() -> None:
    """Striding: a filler of 3 strides, then a packet at stride 3 of WQE 1 reads its bytes
    from 3 << 6 = 192 bytes into that WQE."""
    filler = slot(wqe_id=1, byte_cnt=C.mpwrq_byte_cnt(0, 3, filler=True))
    pkt = slot(wqe_id=1, wqe_counter=3, byte_cnt=C.mpwrq_byte_cnt(len(FRAME), 1))
    out = run(ring(filler, pkt, buffers={1: bytes(192) + FRAME}, rq_type="striding",
                   log_num_strides=3))
    assert out["counters"]["rx_mpwqe_filler_cqes"] == 1
    assert out["counters"]["rx_mpwqe_filler_strides"] == 3
    assert bytes.fromhex(out["xdp"][1]["skb"]["data"]) == FRAME


@pytest.mark.rule("MLX5-RING-002")
def test_missing_buffer_bytes_read_as_zero() -> None:
    out = run(ring(slot(byte_cnt=len(FRAME)), buffers={}))
    assert out["xdp"][0]["skb"]["data"] == "00" * len(FRAME)


# --- MLX5-RING-003 / MLX5-CQ-011: refusals ------------------------------------------------


@pytest.mark.rule("MLX5-RING-003", "MLX5-CQ-011")
@pytest.mark.parametrize(("scenario", "rule", "field"), [
    (ring(slot(byte_cnt=1523)), "MLX5-RING-003", "byte_cnt"),  # MTU 1500 + 22 = 1522
    (ring(slot(wqe_id=8, byte_cnt=C.mpwrq_byte_cnt(60, 1)), rq_type="striding"),
     "MLX5-RING-003", "wqe_id"),
    (ring(slot(wqe_counter=7, byte_cnt=C.mpwrq_byte_cnt(200, 4)), rq_type="striding",
          rx_linear=False, log_num_strides=3), "MLX5-RING-003", "byte_cnt"),
    (ring(slot(byte_cnt=len(FRAME), ft_metadata=2 << 30)), "MLX5-RING-003", "ft_metadata"),
    (ring(slot(byte_cnt=len(FRAME), srqn=2 << 24)), "MLX5-RING-003", "lro_num_seg"),
    (ring(slot(byte_cnt=len(FRAME), tls_outer_l3_tunneled=1 << 3)), "MLX5-RING-003",
     "get_cqe_tls_offload"),
    (ring(slot(byte_cnt=0, op_own=RESP_SEND | (C.MLX5_COMPRESSED << 2))), "MLX5-CQ-011",
     "byte_cnt"),
    (ring(bytes(63) + bytes((0x7C,)), compression="enhanced", fill=bytes(64)), "MLX5-CQ-011",
     "op_own"),
])
def test_rings_the_model_refuses(scenario: Scenario, rule: str, field: str) -> None:
    with pytest.raises(MalformedInput) as info:
        mlx5.run(scenario)
    assert info.value.rule == rule and info.value.field == field


@pytest.mark.rule("MLX5-RING-001")
def test_ring_scenarios_are_schema_checked() -> None:
    good = ring(slot(byte_cnt=len(FRAME)))
    bad_slot = attrs.evolve(good, events=({"op": "ring", "slots": ["00" * 63]},))
    with pytest.raises(InputError, match="MLX5-RING-001"):
        validate_scenario(bad_slot)
    two = attrs.evolve(good, events=(good.events[0], good.events[0]))
    with pytest.raises(InputError):
        validate_scenario(two)
    with pytest.raises(InvalidConfig):
        mlx5.run(attrs.evolve(good, config={**good.config, "log_cq_size": 4}))
    with pytest.raises(OracleError):  # 3 slots: not a power of two
        mlx5.run(attrs.evolve(good, events=({"op": "ring", "slots": ["00" * 64] * 3},)))


# --- MLX5-RING-004: the frame form is the device's ring, then this ---------------------------


@pytest.mark.rule("MLX5-RING-004", "MLX5-RING-001", "MLX5-RING-002")
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(scenario=mlx5.scenarios())  # the frame forms only
def test_frame_scenario_equals_its_ring_image(scenario: Scenario) -> None:
    try:
        image = mlx5_ring.from_frame_scenario(scenario)
    except InvalidConfig:
        return  # the device would write between polls or reuse a buffer
    expected, got = mlx5.run(scenario), run(image)
    for key, value in expected.items():
        if key == "xdp":
            assert [{k: v for k, v in r.items() if k != "frame"} for r in value] == \
                [{k: v for k, v in r.items() if k != "frame"} for r in got["xdp"]]
        else:
            assert got[key] == value, key


# --- protocol 1.2: capabilities.sides -----------------------------------------------------


@pytest.mark.rule("MLX5-RING-001")
def test_sides_decide_which_form_a_target_is_sent() -> None:
    ring_needs = mlx5.COMPONENT.sides_needed(ring(slot(byte_cnt=60)))
    frame_needs = mlx5.COMPONENT.sides_needed(Scenario("mlx5", config={"key": "00" * 40,
                                                                          "indir": [0]}))
    assert ring_needs == {"driver"} and frame_needs == SIDES
    whole = Capabilities(frozenset({"mlx5"}))  # a 1.1 target: frame scenarios only
    assert not whole.lacks("mlx5", frame_needs) and whole.lacks("mlx5", ring_needs)
    driver = Capabilities(frozenset({"mlx5"}), sides={"mlx5": frozenset({"driver"})})
    assert not driver.lacks("mlx5", ring_needs) and driver.lacks("mlx5", frame_needs) == {
        "device"}
    both = Capabilities(frozenset({"mlx5"}), sides={"mlx5": SIDES})
    assert not both.lacks("mlx5", ring_needs) and not both.lacks("mlx5", frame_needs)
    assert both.to_json()["sides"] == {"mlx5": ["device", "driver"]}


@pytest.mark.rule("MLX5-RING-004", "MLX5-DEV-013")
def test_the_device_side_alone_writes_the_ring_the_driver_side_reads() -> None:
    """A ``write`` scenario answers the ring image and placements; as ring events they are
    the image :func:`mlx5_ring.from_frame_scenario` builds."""
    frames = (FRAME,) * 3  # one flow: one basic session (MLX5-COMP-001)
    base = Scenario("mlx5", config={"key": "00" * 40, "indir": [0], "log_cq_size": 3,
                                    "compression": "basic", "start": 5, "rx_path": True},
                    frames=frames)
    out = run(attrs.evolve(base, events=({"op": "write"},)))
    assert out["pc"] == 5 + 3 and out["pending"] == 0
    assert [p["wqe"] for p in out["placements"]] == [0, 1, 2]
    title = C.mlx5_cqe64.unpack(bytes.fromhex(out["slots"][5]))
    assert C.mlx5_get_cqe_format(title) == C.MLX5_COMPRESSED and title.byte_cnt == 3
    image = mlx5_ring.from_frame_scenario(base)
    assert image.events[0]["slots"] == out["slots"] and image.events[0]["cc"] == 5
    assert mlx5.COMPONENT.sides_needed(attrs.evolve(base, events=({"op": "write"},))) == {
        "device"}


@pytest.mark.rule("MLX5-RING-001")
@pytest.mark.parametrize("value", [{"mlx5": []}, {"mlx5": ["nic"]}, ["driver"],
                                   {"mlx5": "driver"}])
def test_a_hello_with_malformed_sides_is_refused(value: Any) -> None:
    from conformance.targets.base import parse_sides

    with pytest.raises(ValueError, match=r"capabilities\.sides"):
        parse_sides(value)
    assert parse_sides({"mlx5": ["driver"]}) == {"mlx5": frozenset({"driver"})}
    assert parse_sides(None) == {}


@pytest.mark.rule("MLX5-RING-001")
def test_ring_strategies_are_exported_for_users() -> None:
    import conformance.strategies as strategies

    assert callable(strategies.mlx5_ring_scenarios)


@pytest.mark.rule("MLX5-RING-001")
def test_an_exec_target_declaring_sides_is_sent_ring_images() -> None:
    """``rx-oracle serve --target reference`` says ``sides`` in its hello (protocol 1.2);
    the exec target reads it back, and a ring image then runs on it."""
    import sys

    from conformance.targets.exec import ExecTarget

    target = ExecTarget([sys.executable, "-m", "conformance.cli", "serve", "--target",
                         "reference"], timeout=60)
    try:
        caps = target.capabilities
        assert caps.sides["mlx5"] == SIDES
        image = ring(slot(byte_cnt=len(FRAME), rss_hash_type=0x48))
        assert not caps.lacks("mlx5", mlx5.COMPONENT.sides_needed(image))
        assert target.run(image)["xdp"][0]["skb"]["hash_type"] == "PKT_HASH_TYPE_L4"
    finally:
        target.close()


@pytest.mark.rule("MLX5-CSUM-010", "MLX5-CQE-006", "MLX5-RING-001")
@pytest.mark.parametrize("tunneled", [0, 1])
@pytest.mark.parametrize("hds_ip_ext", range(8))
def test_checksum_bits_and_header_types(hds_ip_ext: int, tunneled: int) -> None:
    """mlx5e_handle_csum with rx_no_csum_complete: CHECKSUM_UNNECESSARY only when both
    CQE_L3_OK (bit 1) and CQE_L4_OK (bit 2) are set (bit 0, L2_OK, is not read), at
    csum_level 1 with encapsulation when cqe_is_tunneled; else CHECKSUM_NONE.  The L3/L4
    header-type bits (6:2 of l4_l3_hdr_type) are read only by the LRO header rewrite, so
    none of their 32 values changes the skb."""
    answers = []
    for types in range(0, 0x80, 4):  # bit 0 (the VLAN bit) left clear
        out = run(ring(slot(byte_cnt=len(FRAME), hds_ip_ext=hds_ip_ext, l4_l3_hdr_type=types,
                            tls_outer_l3_tunneled=tunneled), no_csum_complete=True))
        answers.append((out["xdp"][0]["skb"], out["counters"]))
    skb, counters = answers[0]
    assert all(a == answers[0] for a in answers)
    ok = hds_ip_ext & 0x6 == 0x6
    assert skb["ip_summed"] == ("CHECKSUM_UNNECESSARY" if ok else "CHECKSUM_NONE")
    assert (skb["csum_level"], skb["encapsulation"]) == ((1, True) if ok and tunneled
                                                         else (0, False))
    assert counters["rx_csum_unnecessary_inner"] == int(ok and bool(tunneled))
    assert counters["rx_csum_unnecessary"] == int(ok and not tunneled)
    assert counters["rx_csum_none"] == int(not ok)

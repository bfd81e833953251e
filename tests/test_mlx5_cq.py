"""Tests for reference/mlx5/cq.py and sim.py (SPEC: MLX5-CQ-*, MLX5-COMP-005).

The hand-worked sessions build ring images byte by byte in this file (offsets from
include/linux/mlx5/device.h: byte_cnt@44, wqe_counter@60, rss_hash_result@12, validity@62,
op_own@63; mini-CQE = be16 checksum, be16 stridx, be32 byte_cnt) and state the expected
handler CQEs from reading en_rx.c (v6.17-rc3) by hand, not from running the model.  The
round-trip property compares against the device's own uncompressed CQEs with the
documented differences applied by an independent normaliser.
"""

from __future__ import annotations

import struct

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from conformance.vectors.ms_rss import MS_KEY
from reference import rss
from reference.errors import MalformedInput, StateViolation
from reference.mlx5 import cqe as C
from reference.mlx5 import sim
from reference.mlx5.cq import Mlx5eRxCq, RqParams
from reference.mlx5.device import Compression, DeviceConfig, Mlx5Device, RqType
from reference.trace import Trace

HASH = 0xCAFEF00D


def cqe_bytes(*, op_own: int, byte_cnt: int = 0, wqe_counter: int = 0, rss: int = 0,
              rss_type: int = 0, check_sum: int = 0, validity: int = 0, wqe_id: int = 0) -> bytes:
    raw = bytearray(64)
    raw[2:4] = wqe_id.to_bytes(2, "big")
    raw[12:16] = rss.to_bytes(4, "big")
    raw[16] = rss_type
    raw[20:22] = check_sum.to_bytes(2, "big")
    raw[29] = 0x24  # UDP over IPv4: inherited by every packet of a session
    raw[44:48] = byte_cnt.to_bytes(4, "big")
    raw[60:62] = wqe_counter.to_bytes(2, "big")
    raw[62] = validity
    raw[63] = op_own
    return bytes(raw)


def mini(checksum: int, byte_cnt: int, stridx: int = 0) -> bytes:
    return struct.pack(">HHI", checksum, stridx, byte_cnt)


def ring_of(log_size: int, slots: dict[int, bytes], start: int = 0) -> bytearray:
    """Slots below ``start`` are next reached in lap 1, the others in lap 0: mark each with
    the owner bit (and validity byte) of the other lap, opcode INVALID."""
    ring = bytearray(64 << log_size)
    for ix in range(1 << log_size):
        lap = 1 if ix < start else 0
        ring[ix * 64 + 63] = 0xF0 | (lap ^ 1)
        ring[ix * 64 + 62] = 0xFF if lap == 0 else 0
    for ix, raw in slots.items():
        ring[ix * 64 : ix * 64 + 64] = raw.ljust(64, b"\0")
    return ring


def basic_ring_3() -> bytearray:
    """A basic session of 3 packets at counter 0 of an 8-slot CQ (cyclic RQ of 8 WQEs)."""
    return ring_of(3, {
        0: cqe_bytes(op_own=0x2C, byte_cnt=3, wqe_counter=5, rss=HASH, rss_type=0x84,
                     check_sum=0xAAAA),
        1: mini(0x1111, 100) + mini(0x2222, 200) + mini(0x3333, 300),
    })


@pytest.mark.rule("MLX5-CQ-003", "MLX5-CQ-005", "MLX5-CQ-006", "MLX5-CQ-007", "MLX5-CQ-010")
def test_basic_session_hand_worked() -> None:
    ring = basic_ring_3()
    cq = Mlx5eRxCq(RqParams(log_cq_size=3, log_wq_size=3))
    res = cq.poll(ring, 64)
    assert res.work_done == 3
    got = [(c.byte_cnt, c.check_sum, c.wqe_counter, c.rss_hash_result, c.rss_hash_type, c.op_own)
           for c in res.cqes]
    assert got == [
        (100, 0x1111, 5, HASH, 0x84, 0x20),  # packet 0 keeps the hash
        (200, 0x2222, 6, 0, 0, 0x20),  # (5 + 1) mod 8
        (300, 0x3333, 7, 0, 0, 0x20),
    ]
    assert all(c.l4_l3_hdr_type == 0x24 for c in res.cqes)  # inherited from the title
    assert cq.stats() == {"cqe_compress_blks": 1, "cqe_compress_pkts": 3}
    assert cq.cc == 3 and cq.db_record == 3


@pytest.mark.rule("MLX5-CQ-003", "MLX5-CQ-006", "MLX5-CQ-009")
def test_basic_session_split_across_two_polls() -> None:
    ring = basic_ring_3()
    cq = Mlx5eRxCq(RqParams(log_cq_size=3, log_wq_size=3))
    first = cq.poll(ring, 2)
    assert first.work_done == 2 and cq.cqd.left == 1 and cq.cc == 2
    assert [c.byte_cnt for c in first.cqes] == [100, 200]
    assert ring[63] == 0 and ring[64 + 63] == 0  # consumed slots stamped with lap parity 0
    assert ring[2 * 64 + 63] == 0xF1  # not yet
    second = cq.poll(ring, 2)
    assert second.work_done == 1
    (c,) = second.cqes
    assert (c.byte_cnt, c.check_sum, c.wqe_counter, c.rss_hash_result) == (300, 0x3333, 7, 0)
    assert ring[2 * 64 + 63] == 0
    assert cq.stats() == {"cqe_compress_blks": 1, "cqe_compress_pkts": 3}
    assert cq.poll(ring, 2).work_done == 0 and cq.db_record == 3


@pytest.mark.rule("MLX5-CQ-001", "MLX5-CQ-007", "MLX5-CQ-008", "MLX5-CQ-009")
def test_basic_session_wraps_the_ring() -> None:
    # 16-slot CQ, consumer at 12; 12 packets: title @12, array 0 @13, array 1 @ counter 20
    # = slot 4.  Striding RQ without HW stride index: running stride counter.
    arr0 = b"".join(mini(0x100 + i, (2 << 16) | 100) for i in range(8))
    arr1 = b"".join(mini(0x200 + i, (1 << 16) | 60) for i in range(4))
    ring = ring_of(4, {12: cqe_bytes(op_own=0x2C, byte_cnt=12, wqe_counter=10, wqe_id=3),
                       13: arr0, 4: arr1}, start=12)
    cq = Mlx5eRxCq(RqParams(log_cq_size=4, striding=True), cc=12)
    res = cq.poll(ring, 64)
    assert res.work_done == 12
    assert [c.check_sum for c in res.cqes] == [0x100 + i for i in range(8)] + [
        0x200 + i for i in range(4)]
    # strides: 10, 12, ..., 24 (eight packets of 2), then 26, 27, 28, 29
    assert [c.wqe_counter for c in res.cqes] == [10 + 2 * i for i in range(8)] + [26, 27, 28, 29]
    # owner bit of counter 12..15 is 0, of 16..23 is 1
    assert [c.op_own & 1 for c in res.cqes] == [0] * 4 + [1] * 8
    assert all(c.wqe_id == 3 for c in res.cqes)
    # MLX5-CQ-009: slots 12..15 get 0, slots 0..7 (past the end) get 1
    assert [ring[i * 64 + 63] for i in range(12, 16)] == [0] * 4
    assert [ring[i * 64 + 63] for i in range(8)] == [1] * 8
    assert ring[8 * 64 + 63] == 0xF0  # untouched: still invalid for lap 1
    assert cq.poll(ring, 64).work_done == 0
    assert cq.cc == 24 and cq.db_record == 24


@pytest.mark.rule("MLX5-CQ-007")
def test_hw_stride_index_comes_from_the_mini_cqe() -> None:
    ring = ring_of(3, {0: cqe_bytes(op_own=0x2C, byte_cnt=2, wqe_counter=99),
                       1: mini(1, (3 << 16) | 150, stridx=40) + mini(2, (1 << 16) | 10, stridx=7)})
    cq = Mlx5eRxCq(RqParams(log_cq_size=3, striding=True, hw_stridx=True))
    assert [c.wqe_counter for c in cq.poll(ring, 8).cqes] == [40, 7]


@pytest.mark.rule("MLX5-CQ-001", "MLX5-CQ-003")
def test_ownership_stops_the_poll() -> None:
    plain = cqe_bytes(op_own=0x20, byte_cnt=60, wqe_counter=0)
    stale = cqe_bytes(op_own=0x21, byte_cnt=61, wqe_counter=1)  # owner 1 in lap 0
    ring = ring_of(2, {0: plain, 1: stale})
    cq = Mlx5eRxCq(RqParams(log_cq_size=2))
    res = cq.poll(ring, 64)
    assert [c.byte_cnt for c in res.cqes] == [60]
    assert cq.cc == 1 and cq.db_record == 1
    trace = Trace()
    assert cq.poll(ring, 64, trace=trace).work_done == 0
    assert "MLX5-CQ-001" in trace.rules()
    assert cq.db_record == 1
    # Budget stops too: three valid plain CQEs, budget 2.
    ring = ring_of(2, {i: cqe_bytes(op_own=0x20, byte_cnt=i) for i in range(3)})
    cq = Mlx5eRxCq(RqParams(log_cq_size=2))
    assert cq.poll(ring, 2).work_done == 2 and cq.cc == 2


def enhanced_ring() -> bytearray:
    """Plain CQE @0 (cyclic wqe_counter 3), compressed CQE @1 with 3 packets, lap 0."""
    return ring_of(3, {
        0: cqe_bytes(op_own=0x20, byte_cnt=64, wqe_counter=3, rss=HASH, rss_type=0x84),
        1: (mini(0xA, 70) + mini(0xB, 80) + mini(0xC, 90)).ljust(62, b"\0") + bytes([0, 0x2C]),
    })


@pytest.mark.rule("MLX5-CQ-002", "MLX5-CQ-004", "MLX5-CQ-006", "MLX5-CQ-007", "MLX5-CQ-010")
def test_enhanced_hand_worked() -> None:
    cq = Mlx5eRxCq(RqParams(log_cq_size=3, enhanced=True, log_wq_size=3))
    res = cq.poll(enhanced_ring(), 64)
    got = [(c.byte_cnt, c.check_sum, c.wqe_counter, c.rss_hash_result) for c in res.cqes]
    assert got == [(64, 0, 3, HASH), (70, 0xA, 4, 0), (80, 0xB, 5, 0), (90, 0xC, 6, 0)]
    assert [c.op_own for c in res.cqes] == [0x20] * 4
    assert res.work_done == 4 and cq.cc == 4
    assert cq.stats() == {"cqe_compress_blks": 1, "cqe_compress_pkts": 3}


@pytest.mark.rule("MLX5-CQ-002")
def test_enhanced_validity_byte_decides() -> None:
    ring = enhanced_ring()
    ring[62] = 1  # plain CQE claims lap 1
    cq = Mlx5eRxCq(RqParams(log_cq_size=3, enhanced=True))
    assert cq.poll(ring, 64).work_done == 0


@pytest.mark.rule("MLX5-CQ-004")
def test_enhanced_session_is_never_split() -> None:
    cq = Mlx5eRxCq(RqParams(log_cq_size=3, enhanced=True, log_wq_size=3))
    ring = enhanced_ring()
    first = cq.poll(ring, 3)
    assert first.work_done == 3  # 1 handled + the remaining budget reported as done
    assert len(first.cqes) == 1 and cq.cc == 1
    assert cq.cqe_compress_blks == 1 and cq.cqe_compress_pkts == 0
    assert not cq.cqd.last_cqe_title
    second = cq.poll(ring, 64)
    assert [c.wqe_counter for c in second.cqes] == [4, 5, 6]
    assert cq.stats() == {"cqe_compress_blks": 1, "cqe_compress_pkts": 3}


@pytest.mark.rule("MLX5-CQ-010")
def test_enhanced_blocks_counted_again_across_polls() -> None:
    # R1 @0, R2 @1, C(2) @2, C(2) @4.
    comp = (mini(1, 10) + mini(2, 20)).ljust(62, b"\0") + bytes([0, 0x1C])
    ring = ring_of(3, {0: cqe_bytes(op_own=0x20, byte_cnt=1),
                       1: cqe_bytes(op_own=0x20, byte_cnt=2, wqe_counter=1),
                       2: comp, 4: comp})
    cq = Mlx5eRxCq(RqParams(log_cq_size=3, enhanced=True, log_wq_size=3))
    assert cq.poll(ring, 1).work_done == 1 and cq.cqd.last_cqe_title
    second = cq.poll(ring, 2)  # R2, then C(2) does not fit the remaining budget of 1
    assert second.work_done == 2 and cq.cqe_compress_blks == 1
    assert cq.cqd.last_cqe_title  # stale: the poll began with a plain CQE
    third = cq.poll(ring, 64)
    assert [c.byte_cnt for c in third.cqes] == [10, 20, 10, 20]
    assert [c.wqe_counter for c in third.cqes] == [2, 3, 4, 5]
    assert cq.stats() == {"cqe_compress_blks": 2, "cqe_compress_pkts": 4}


@pytest.mark.rule("MLX5-CQ-011")
def test_impossible_compressed_cqes_raise_and_undo() -> None:
    ring = ring_of(3, {0: cqe_bytes(op_own=0x20, byte_cnt=5),
                       1: cqe_bytes(op_own=0x2C, byte_cnt=0)})
    before = bytes(ring)
    cq = Mlx5eRxCq(RqParams(log_cq_size=3))
    with pytest.raises(MalformedInput) as info:
        cq.poll(ring, 64)
    assert info.value.field == "byte_cnt" and info.value.offset == 64 + 44
    assert info.value.value == 0
    assert bytes(ring) == before and cq.cc == 0 and cq.stats()["cqe_compress_blks"] == 0
    ring = ring_of(3, {0: cqe_bytes(op_own=0x2C, byte_cnt=9)})  # more than 8 slots
    with pytest.raises(MalformedInput):
        Mlx5eRxCq(RqParams(log_cq_size=3)).poll(ring, 64)
    ring = ring_of(3, {0: bytes(62) + bytes([0, 0x7C])})  # enhanced, 8 mini-CQEs claimed
    cq = Mlx5eRxCq(RqParams(log_cq_size=3, enhanced=True))
    with pytest.raises(MalformedInput) as info:
        cq.poll(ring, 64)
    assert info.value.field == "op_own" and info.value.value == 8 and cq.cc == 0
    # A whole session first (its title's op_own rewritten, MLX5-CQ-009), then the
    # impossible CQE in the same poll: the rewrite is undone too.
    ring = ring_of(3, {0: cqe_bytes(op_own=0x2C, byte_cnt=2), 1: bytes(64),
                       2: cqe_bytes(op_own=0x2C, byte_cnt=0)})
    before = bytes(ring)
    cq = Mlx5eRxCq(RqParams(log_cq_size=3))
    with pytest.raises(MalformedInput):
        cq.poll(ring, 64)
    assert bytes(ring) == before and cq.cc == 0 and cq.stats()["cqe_compress_pkts"] == 0


# --- the round trip --------------------------------------------------------------------------

FLOWS = [
    (IP(src="10.0.0.1", dst="10.0.0.2"), UDP(sport=1000, dport=53)),
    (IP(src="10.0.0.3", dst="10.0.0.4"), TCP(sport=2000, dport=80, flags="A")),
    (IP(src="10.0.0.5", dst="10.0.0.6"), UDP(sport=3000, dport=4789)),
]
ETH = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[DeviceConfig, list[bytes], int, int]:
    compression = draw(st.sampled_from(list(Compression)))
    striding = draw(st.booleans())
    hw_stridx = striding and draw(st.booleans())
    log_cq = draw(st.integers(3, 6))
    config = DeviceConfig(
        rss=rss.RssConfig.default(MS_KEY, 4),
        compression=compression,
        rq_type=RqType.STRIDING if striding else RqType.CYCLIC,
        mini_cqe_format=C.MLX5_CQE_FORMAT_CSUM_STRIDX if hw_stridx else C.MLX5_CQE_FORMAT_CSUM,
        log_cq_size=log_cq,
        log_wq_size=draw(st.integers(1, 4)),
        log_stride_sz=6,
        log_num_strides=draw(st.integers(3, 6)),
        mtu=draw(st.sampled_from([300, 1500])),
    )
    flow_ix = draw(st.lists(st.integers(0, 2), min_size=1, max_size=60))
    sizes = draw(st.lists(st.integers(0, 700), min_size=len(flow_ix), max_size=len(flow_ix)))
    frames = [bytes(ETH / FLOWS[f][0] / FLOWS[f][1] / Raw(b"q" * n))
              for f, n in zip(flow_ix, sizes, strict=True)]
    budget = draw(st.integers(8, 64))
    start = draw(st.integers(0, (1 << log_cq) - 1))
    return config, frames, budget, start


def normalise(config: DeviceConfig, cqe: C.mlx5_cqe64, counter: int) -> C.mlx5_cqe64:
    """The uncompressed CQE as it would sit at ``counter`` in the ring (owner bit set)."""
    owner = (counter >> config.log_cq_size) & 1
    return attrs.evolve(cqe, op_own=(cqe.op_own & 0xF0) | owner)


@pytest.mark.rule("MLX5-COMP-005", "MLX5-CQ-005", "MLX5-CQ-006", "MLX5-CQ-010")
@given(scenarios())
def test_round_trip(scenario: tuple[DeviceConfig, list[bytes], int, int]) -> None:
    config, frames, budget, start = scenario
    result = sim.run(config, frames, budget, start=start)
    seen = result.cqes
    assert len(seen) == len(result.completions)
    zeroed = 0
    for i, (comp, got) in enumerate(zip(result.completions, seen, strict=True)):
        want = normalise(config, comp.cqe, start + i)
        if config.compression is Compression.ENHANCED:
            got = attrs.evolve(got, signature=0)
        if (got.rss_hash_result, got.rss_hash_type) != (want.rss_hash_result, want.rss_hash_type):
            assert (got.rss_hash_result, got.rss_hash_type) == (0, 0)
            prev = result.completions[i - 1]
            assert i > 0 and prev.compressible and comp.compressible
            assert Mlx5Device.title_key(prev.cqe) == Mlx5Device.title_key(comp.cqe)
            zeroed += 1
            got = attrs.evolve(got, rss_hash_result=want.rss_hash_result,
                               rss_hash_type=want.rss_hash_type)
        if config.rq_type is RqType.CYCLIC and got.wqe_counter != want.wqe_counter:
            assert got.wqe_counter == want.wqe_counter & (config.wq_size - 1)
            got = attrs.evolve(got, wqe_counter=want.wqe_counter)
        assert got == want, i
    stats = result.stats
    if config.compression is Compression.NONE:
        assert stats == {"cqe_compress_blks": 0, "cqe_compress_pkts": 0}
    # Packets whose hash was cleared: every compressed packet but each basic title's.
    if config.compression is Compression.BASIC:
        hashed_later = stats["cqe_compress_pkts"] - stats["cqe_compress_blks"]
    else:
        hashed_later = stats["cqe_compress_pkts"]
    # Every device hash here is non-zero (all frames are TCP/UDP over IPv4), so each packet
    # that went through the _no_hash path shows up as a cleared hash, and no other does.
    assert all(c.cqe.rss_hash_type for c in result.completions if not c.error)
    assert zeroed == hashed_later


@pytest.mark.rule("MLX5-COMP-005")
def test_run_refuses_a_budget_below_an_enhanced_session() -> None:
    config = DeviceConfig(rss=rss.RssConfig.default(MS_KEY, 4), compression=Compression.ENHANCED,
                          log_cq_size=4)
    frame = bytes(ETH / FLOWS[0][0] / FLOWS[0][1])
    with pytest.raises(StateViolation):
        sim.run(config, [frame] * 9, budget=3)
    assert len(sim.run(config, [frame] * 9, budget=8).cqes) == 9

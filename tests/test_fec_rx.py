"""The fec driver model: hand-worked ring walks, errors, a refill failure, XDP verdicts,
XDP_TX page fate through TX completion, restart and close, and page conservation.

Expected values are worked out by hand from fec_main.c (Kingxukai/linux v6.17-rc3)."""

from __future__ import annotations

import zlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Dot1Q, Ether

from conformance.components import fec as component
from conformance.scenario import Scenario
from conformance.strategies.frames import ethernet_frames
from reference import page_pool as pp
from reference.errors import InvalidConfig
from reference.fec import device, rx, tx
from reference.fec.bufdesc import ByteOrder
from reference.fec.counters import FEC_XDP_STAT_STRS
from reference.fec.state import FecConfig, Fep, TxBufType
from reference.kernel import parse_kernel

#: Explicit MACs: scapy never has to resolve one, so no ARP ever leaves the machine.
ETH = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")

UDP_FRAME = bytes(ETH / IP(src="10.0.0.1",
                  dst="10.0.0.2") / UDP(sport=1, dport=2) / (b"x" * 40))


def _open(**kw: Any) -> Fep:
    kw.setdefault("rx_ring_size", 4)
    kw.setdefault("tx_ring_size", 32)
    return rx.fec_enet_open(FecConfig(**kw))


def _prog(*ops: dict[str, Any]) -> Any:
    return lambda slot: list(ops)


NO_PROG = _prog()


@pytest.mark.rule("FEC-RX-001", "FEC-RX-014")
def test_open_fills_the_ring_with_pool_pages() -> None:
    fep = _open(xdp=True, byte_order=ByteOrder.BIG, bufdesc_ex=True)
    pool = fep.rxq.pool
    assert (pool.dma_dir, pool.offset, pool.max_len, pool.pool_size) == (
        pp.DMA_BIDIRECTIONAL, 256, 4096 - 256 - 320, 4)
    assert pool.flags == pp.PP_FLAG_DMA_MAP | pp.PP_FLAG_DMA_SYNC_DEV
    assert _open().rxq.pool.dma_dir == pp.DMA_FROM_DEVICE
    ring = fep.rxq.ring
    # Big endian: cbd_sc at offset 0 -> E (0x8000) first; last slot E|W (0xa000).
    assert ring.mem[0:2] == b"\x80\x00" and ring.mem[3 * 32 : 3 * 32 + 2] == b"\xa0\x00"
    for i, page in enumerate(fep.rxq.rx_skb_info):
        assert page is not None
        assert ring.get(i).cbd_bufaddr == page.dma_addr + 256
        assert ring.get(i).cbd_esc == 0x00800000
    assert fep.txqs[0].dirty_tx == 31
    # fec_enet_alloc_txq_buffers: every TX descriptor starts with BD_ENET_TX_INT.
    assert {fep.txqs[0].ring.get(i).cbd_esc for i in range(32)} == {0x40000000}
    assert fep.txqs[0].ring.get(31).cbd_sc == 0x2000


@pytest.mark.rule("FEC-RX-002", "FEC-RX-003", "FEC-RX-005", "FEC-DEV-001", "FEC-DEV-002",
                  "FEC-DEV-005", "FEC-BD-006")
def test_ring_walk_wraps() -> None:
    fep = _open()
    for _ in range(3):
        device.receive(fep, UDP_FRAME)
    recs, _ = rx.napi_poll(fep, 64, NO_PROG)
    assert [r.slot for r in recs] == [0, 1, 2]
    assert [r.sc for r in recs] == [0x0800] * 3  # device: L, E clear
    assert recs[0].datlen == len(UDP_FRAME) + 4 + 2
    for _ in range(3):
        device.receive(fep, UDP_FRAME)
    recs, _ = rx.napi_poll(fep, 64, NO_PROG)
    assert [r.slot for r in recs] == [3, 0, 1]
    assert recs[0].sc == 0x2800 and recs[0].rearm_sc == 0xA000  # W kept, L cleared, E set
    assert recs[1].rearm_sc == 0x8000
    assert fep.rxq.cur == 2
    assert fep.stats.rx_packets == 6
    assert fep.stats.rx_bytes == 6 * (len(UDP_FRAME) + 4)  # 7.3: pad left out (FEC-RX-005)
    # Enhanced words re-armed: INT, prot 0, bdu 0 (the device had set bdu).
    bd = fep.rxq.ring.get(0)
    assert (bd.cbd_esc, bd.cbd_prot, bd.cbd_bdu) == (0x00800000, 0, 0)


@pytest.mark.rule("FEC-RX-002")
def test_budget_limits_the_walk() -> None:
    fep = _open()
    for _ in range(3):
        device.receive(fep, UDP_FRAME)
    assert len(rx.napi_poll(fep, 2, NO_PROG)[0]) == 2
    assert fep.rxq.cur == 2
    assert [r.slot for r in rx.napi_poll(fep, 2, NO_PROG)[0]] == [2]


@pytest.mark.rule("FEC-RX-004", "FEC-DEV-005", "FEC-STATS-001")
@pytest.mark.parametrize(("fault", "counters"), [
    ("crc", {"rx_errors": 1, "rx_crc_errors": 1}),
    ("overrun", {"rx_errors": 1, "rx_fifo_errors": 1}),
    ("non_octet", {"rx_errors": 1, "rx_frame_errors": 1}),
    ("no_last", {"rx_errors": 1, "rx_length_errors": 1}),
])
def test_error_descriptor(fault: str, counters: dict[str, int]) -> None:
    fep = _open()
    page = fep.rxq.rx_skb_info[0]
    device.receive(fep, UDP_FRAME, frozenset({fault}))
    (rec,), _ = rx.napi_poll(fep, 64, NO_PROG)
    assert rec.outcome == "error" and rec.skb is None
    assert fep.rxq.rx_skb_info[0] is page  # the page stays
    got = {k: v for k, v in fep.stats.as_dict().items() if v}
    assert got == counters
    # A descriptor that lacked L is re-armed with L set (the toggle).
    assert rec.rearm_sc == (0x8800 if fault == "no_last" else 0x8000)


@pytest.mark.rule("FEC-DEV-003", "FEC-RX-004")
def test_giant_frame_is_truncated_and_flagged() -> None:
    fep = _open()
    frame = UDP_FRAME + bytes(2000)
    device.receive(fep, frame)
    (rec,), _ = rx.napi_poll(fep, 64, NO_PROG)
    assert rec.sc == 0x0800 | 0x0020 | 0x0001
    assert rec.datlen == 1984  # the pad counts toward the limit (FEC-DEV-003)
    assert fep.stats.rx_length_errors == fep.stats.rx_frame_errors == 1


@pytest.mark.rule("FEC-DEV-003", "FEC-RX-004")
@pytest.mark.parametrize(("kernel", "racc", "longest"), [
    ("7.3.4", True, 1516), ("7.3.4", False, 1518), ("6.18.15", True, 1516),
    ("6.12.117", True, 1978), ("6.12.117", False, 1980)])
def test_max_fl_is_the_mtus_frame_after_the_gate(kernel: str, racc: bool, longest: int) -> None:
    """Worked from Debian's 7.3.4 ``fec_restart``: MAX_FL = 1500 + 18 + 4 = 1522 stored
    bytes (pad, frame, FCS), so with RACC 1516 bytes pass and 1517 are stored whole with
    LG alone (no TR) and dropped as a length error; before the gate (6.12.118) MAX_FL is
    1984 like FTRL, so only truncated frames have LG.  The edges match
    ``qemu-fec:imx8mp-evk`` at 6.18.15 and 7.3.4 (1516 passes, 1517 does not)."""
    for length, passes in ((longest, True), (longest + 1, False)):
        fep = _open(racc=racc, kernel=parse_kernel(kernel, "test"))
        device.receive(fep, UDP_FRAME + bytes(length - len(UDP_FRAME)))
        (rec,), _ = rx.napi_poll(fep, 64, NO_PROG)
        assert (rec.outcome != "error") == passes, (kernel, length)
        if not passes and kernel != "6.12.117":
            assert rec.sc == 0x0800 | 0x0020  # L and LG: stored whole, not truncated
            assert rec.datlen == length + 4 + (2 if racc else 0)
            assert fep.stats.rx_length_errors == 1


@pytest.mark.rule("FEC-RX-006")
def test_refill_failure_drops_and_keeps_the_page() -> None:
    allocator = pp.PageAllocator(pp.ARM64_4K)
    allocator.bulk_limit = 1  # every slow allocation yields one page: the cache stays empty
    fep = rx.fec_enet_open(FecConfig(rx_ring_size=4), allocator=allocator)
    page = fep.rxq.rx_skb_info[0]
    addr = fep.rxq.ring.get(0).cbd_bufaddr
    device.receive(fep, UDP_FRAME)
    device.receive(fep, UDP_FRAME)
    allocator.fail(1)
    recs, _ = rx.napi_poll(fep, 64, NO_PROG)
    assert [r.outcome for r in recs] == ["refill_failed", "skb"]
    assert fep.rxq.rx_skb_info[0] is page and fep.rxq.ring.get(0).cbd_bufaddr == addr
    assert (fep.stats.rx_packets, fep.stats.rx_dropped) == (2, 1)
    assert len(fep.syncs.for_cpu) == 1  # only the refilled frame was synced (FEC-RX-007)


@pytest.mark.rule("FEC-RX-007", "FEC-XDP-007")
def test_sync_for_cpu_and_xdp_buff_setup() -> None:
    fep = _open(xdp=True)
    addr = fep.rxq.ring.get(0).cbd_bufaddr
    device.receive(fep, UDP_FRAME)
    (rec,), _ = rx.napi_poll(fep, 64, _prog({"op": "get_buff_len"}, {"op": "return",
                                                                      "action": 2}))
    assert fep.syncs.for_cpu == [(addr, len(UDP_FRAME) + 6)]
    assert rec.xdp is not None and rec.xdp.run.records[0]["len"] == len(UDP_FRAME)


@pytest.mark.rule("FEC-XDP-002", "FEC-XDP-003", "FEC-XDP-004")
@pytest.mark.parametrize(("action", "exception"), [(1, False), (0, True), (7, True)])
def test_drop_path_syncs_the_longer_length(action: int, exception: bool) -> None:
    fep = _open(xdp=True)
    device.receive(fep, UDP_FRAME)
    page = fep.rxq.rx_skb_info[0]
    assert page is not None
    prog = _prog({"op": "adjust_tail", "delta": -10}, {"op": "return", "action": action})
    (rec,), _ = rx.napi_poll(fep, 64, prog)
    assert rec.xdp is not None
    assert rec.xdp.recycle == (len(UDP_FRAME), True, "cached")
    assert rec.xdp.exception is exception
    assert fep.rxq.pool.where(page) is pp.Loc.ALLOC_CACHE
    assert fep.dev.syncs_for_device[-1].size == len(UDP_FRAME)
    assert fep.rxq.stats[2] == 1  # rx_xdp_drop
    assert fep.stats.rx_bytes == len(UDP_FRAME) + 4  # counted before XDP (FEC-RX-005)


@pytest.mark.rule("FEC-XDP-006")
def test_redirect_without_target_counts_redirect_only() -> None:
    fep = _open(xdp=True)
    device.receive(fep, UDP_FRAME)
    (rec,), _ = rx.napi_poll(fep, 64, _prog({"op": "return", "action": 4}))
    assert rec.outcome == "recycled" and rec.xdp is not None and rec.xdp.exception
    assert fep.rxq.stats == [1, 0, 0, 0, 0, 0, 0]
    assert fep.xdp_flushes == 0  # only a redirect that succeeded asks for xdp_do_flush
    fep = _open(xdp=True, redirect_ok=True)
    device.receive(fep, UDP_FRAME)
    (rec,), _ = rx.napi_poll(fep, 64, _prog({"op": "return", "action": 4}))
    assert rec.outcome == "redirected" and fep.xdp_flushes == 1
    rx.conservation(fep)


@pytest.mark.rule("FEC-XDP-001", "FEC-RX-008", "FEC-RX-010", "FEC-RX-011")
def test_pass_builds_the_skb_from_data_start() -> None:
    fep = _open(xdp=True)
    device.receive(fep, UDP_FRAME)
    prog = _prog({"op": "adjust_head", "delta": 14}, {"op": "write", "offset": 0,
                                                      "data": "ab"}, {"op": "return",
                                                                      "action": 2})
    (rec,), _ = rx.napi_poll(fep, 64, prog)
    assert rec.skb is not None
    # The head move is lost; the store at the new data (frame offset 14) is kept.
    assert rec.skb.data == UDP_FRAME[:14] + b"\xab" + UDP_FRAME[15:]
    assert rec.skb.len == len(UDP_FRAME) - 14 and rec.skb.protocol == 0x0800
    # ICE/PCR came from the wire frame, which was good; the program's store into the
    # IPv4 header happened after reception, so the device's verdict stands.
    assert rec.skb.ip_summed == "CHECKSUM_UNNECESSARY"


@pytest.mark.rule("FEC-RX-011", "FEC-DEV-004")
def test_checksum_state() -> None:
    bad = bytearray(UDP_FRAME)
    bad[24] ^= 0xFF  # IPv4 header checksum
    for cfg, frame, want in [({}, UDP_FRAME, "CHECKSUM_UNNECESSARY"),
                             ({}, bytes(bad), "CHECKSUM_NONE"),
                             ({"bufdesc_ex": False}, UDP_FRAME, "CHECKSUM_NONE"),
                             ({"rx_csum": False}, UDP_FRAME, "CHECKSUM_NONE")]:
        fep = _open(**cfg)
        device.receive(fep, frame)
        (rec,), _ = rx.napi_poll(fep, 64, NO_PROG)
        assert rec.skb is not None and rec.skb.ip_summed == want, cfg


@pytest.mark.rule("FEC-RX-009", "FEC-DEV-006")
def test_vlan_extraction() -> None:
    tagged = bytes(ETH / Dot1Q(vlan=5, prio=3) / IP() / UDP())
    fep = _open()
    device.receive(fep, tagged)
    (rec,), _ = rx.napi_poll(fep, 64, NO_PROG)
    assert rec.skb is not None
    assert rec.skb.vlan == (0x8100, (3 << 13) | 5)
    assert rec.skb.data == tagged[:12] + tagged[16:] and rec.skb.protocol == 0x0800
    fep = _open(vlan_rx=False)
    device.receive(fep, tagged)
    (rec,), _ = rx.napi_poll(fep, 64, NO_PROG)
    assert rec.skb is not None and rec.skb.vlan is None and rec.skb.protocol == 0x8100


@pytest.mark.rule("FEC-DEV-006")
def test_a_tag_cut_short_is_refused_with_enhanced_descriptors() -> None:
    """An 802.1Q frame must hold its tag and the inner ethertype (18 bytes) where the MAC
    computes the VLAN bit; 14 .. 17 bytes are refused there, and accepted (a short frame
    like any other) with legacy descriptors."""
    tagged = bytes(ETH / Dot1Q(vlan=5) / IP() / UDP())
    for n in (14, 15, 16, 17):
        with pytest.raises(InvalidConfig, match="FEC-DEV-006"):
            device.receive(_open(), tagged[:n])
        device.receive(_open(bufdesc_ex=False), tagged[:n])
    fep = _open()
    device.receive(fep, tagged[:18])
    (rec,), _ = rx.napi_poll(fep, 64, NO_PROG)
    assert rec.skb is not None and rec.skb.vlan == (0x8100, 5)


@pytest.mark.rule("FEC-XDP-005", "FEC-TX-001", "FEC-TX-003", "FEC-TX-005", "FEC-DEV-008",
                  "FEC-STATS-002", "FEC-RX-015")
def test_xdp_tx_page_lives_in_the_tx_slot_until_completion() -> None:
    fep = _open(xdp=True)
    device.receive(fep, UDP_FRAME)
    page = fep.rxq.rx_skb_info[0]
    assert page is not None
    prog = _prog({"op": "adjust_tail", "delta": -8}, {"op": "return", "action": 3})
    (rec,), done = rx.napi_poll(fep, 64, prog)
    assert rec.outcome == "tx_ring" and done == []
    assert rec.xdp is not None and rec.xdp.tx == (0, 0, len(UDP_FRAME) - 8, len(UDP_FRAME))
    buf = fep.txqs[0].tx_buf[0]
    assert buf.type is TxBufType.FEC_TXBUF_T_XDP_TX and buf.buf_p is page
    bd = fep.txqs[0].ring.get(0)
    assert bd.cbd_sc == 0x8000 | 0x0400 | 0x1000 | 0x0800  # READY|TC|INTR|LAST
    assert bd.cbd_bufaddr == page.dma_addr + 258 and bd.cbd_esc == 0x40000000
    assert fep.syncs.for_device == [(page.dma_addr + 258, len(UDP_FRAME))]
    assert fep.rxq.pool.where(page) is pp.Loc.IN_FLIGHT
    assert rx.conservation(fep)["tx_ring"] == 1
    wire = device.transmit(fep)
    assert wire == [UDP_FRAME[:-8]]
    syncs_before = len(fep.dev.syncs_for_device)
    _, done = rx.napi_poll(fep, 64, prog)
    assert [(c.type, c.bytes, c.fate) for c in done] == [
        (TxBufType.FEC_TXBUF_T_XDP_TX, len(UDP_FRAME) - 8, "cached")]
    assert fep.dev.syncs_for_device[syncs_before].size == 0  # sync length 0
    assert fep.rxq.pool.where(page) is pp.Loc.ALLOC_CACHE
    assert (fep.stats.tx_packets, fep.stats.tx_bytes) == (1, len(UDP_FRAME) - 8)
    assert rx.conservation(fep)["tx_ring"] == 0


@pytest.mark.rule("FEC-TX-006")
def test_budget_zero_leaves_xdp_buffers() -> None:
    fep = _open(xdp=True)
    device.receive(fep, UDP_FRAME)
    rx.napi_poll(fep, 64, _prog({"op": "return", "action": 3}))
    device.transmit(fep)
    assert tx.tx_queue(fep, 0, 0) == []
    assert fep.txqs[0].tx_buf[0].buf_p is not None
    assert len(tx.tx_queue(fep, 0, 64)) == 1


@pytest.mark.rule("FEC-TX-002", "FEC-XDP-005")
def test_tx_ring_without_room_fails_xdp_tx() -> None:
    fep = _open(xdp=True, rx_ring_size=4, tx_ring_size=20)
    prog = _prog({"op": "return", "action": 3})
    outcomes = []
    for _ in range(4):
        device.receive(fep, UDP_FRAME)
        (rec,), _ = rx.napi_poll(fep, 64, prog)
        outcomes.append(rec.outcome)
    # 20 slots: free = 18 at first (dirty on the last), 17 after one frame < 18.
    assert outcomes == ["tx_ring", "recycled", "recycled", "recycled"]
    assert fep.rxq.stats[3:5] == [4, 3]  # rx_xdp_tx, rx_xdp_tx_errors


@pytest.mark.rule("FEC-TX-004", "FEC-STATS-003")
def test_ndo_xdp_xmit_frames() -> None:
    scenario = Scenario(component="fec", config={"tx_ring_size": 32}, frames=(UDP_FRAME,),
                        events=({"op": "xdp_xmit", "frames": [0, 0]}, {"op": "tx_done"},
                                {"op": "napi"}))
    obs = component.run(scenario)
    assert obs["xdp_xmit"] == [2] and obs["wire"] == [UDP_FRAME.hex()] * 2
    assert [c["type"] for c in obs["tx_completions"]] == ["FEC_TXBUF_T_XDP_NDO"] * 2
    assert obs["tx_completions"][0]["fate"] == "put_page"
    assert obs["ethtool"]["tx_xdp_xmit"] == obs["ethtool"]["tx_xdp_xmit_errors"] == 0
    assert list(obs["ethtool"])[:7] == list(FEC_XDP_STAT_STRS)


@pytest.mark.rule("FEC-RX-013", "FEC-TX-007")
def test_restart_releases_xdp_tx_pages_without_direct_recycling() -> None:
    fep = _open(xdp=True)
    device.receive(fep, UDP_FRAME)
    rx.napi_poll(fep, 64, _prog({"op": "return", "action": 3}))
    page = fep.txqs[0].tx_buf[0].buf_p
    assert isinstance(page, pp.Page)
    released = rx.fec_restart(fep)
    assert [c.fate for c in released] == ["ring"]  # not direct: to the ptr_ring
    assert fep.rxq.pool.where(page) is pp.Loc.PTR_RING
    assert fep.rxq.cur == 0 and fep.rxq.ring.get(3).cbd_sc == 0xA000
    assert fep.txqs[0].dirty_tx == 31 and fep.txqs[0].cur == 0
    rx.conservation(fep)


@pytest.mark.rule("FEC-RX-016", "FEC-RX-012", "FEC-RX-015")
def test_close_destroys_the_pool_then_releases_tx() -> None:
    fep = _open(xdp=True)
    device.receive(fep, UDP_FRAME)
    device.receive(fep, UDP_FRAME)
    prog = lambda slot: [{"op": "return", "action": 3 if slot == 0 else 2}]  # noqa: E731
    rx.napi_poll(fep, 64, prog)
    assert rx.stack_free(fep) == 1
    released = rx.fec_enet_close(fep)
    assert [c.type for c in released] == [TxBufType.FEC_TXBUF_T_XDP_TX]
    pool = fep.rxq.pool
    assert pool.state is pp.PoolState.FREED and pool.inflight() == 0
    assert fep.rxq.stats == [0] * 7
    assert rx.conservation(fep)["inflight"] == 0


@pytest.mark.rule("FEC-XDP-008")
def test_f601899e4321_xdp_tx_converts_once_per_packet() -> None:
    counts = {}
    for old in (False, True):
        scenario = Scenario(component="fec", config={"xdp_tx_frame": old, "rx_ring_size": 8},
                            frames=(UDP_FRAME,) * 3, program=({"op": "return", "action": 3},))
        obs = component.run(scenario)
        counts[old] = obs["ops"]
        assert [c["fate"] for c in obs["tx_completions"]] == ["cached"] * 3
        # The XDP_TX counters were added after f601899e4321.
        assert obs["ethtool"]["rx_xdp_tx"] == (0 if old else 3)
    assert counts[False] == {"xdp_frame_conversions": 0, "dma_syncs_for_cpu": 3,
                             "dma_syncs_for_device": 3, "xdp_do_flush": 0}
    assert counts[True]["xdp_frame_conversions"] == 3


@pytest.mark.rule("FEC-XDP-008", "FEC-TX-002", "FEC-TX-007")
def test_f601899e4321_xdp_tx_order_sync_and_release() -> None:
    """fec_enet_xdp_tx_xmit at f601899e4321: the conversion precedes the free-descriptor
    check (a full ring still costs one); the TX sync covers run_xdp's ``sync`` (the
    length before a tail shrink), not the frame's length; completion puts the page with
    length 0 and direct; restart returns a pending frame with xdp_return_frame."""
    fep = _open(xdp=True, xdp_tx_frame=True, rx_ring_size=4, tx_ring_size=20)
    page = fep.rxq.rx_skb_info[0]
    assert page is not None
    device.receive(fep, UDP_FRAME)
    shrink = _prog({"op": "adjust_tail", "delta": -8}, {"op": "return", "action": 3})
    (rec,), _ = rx.napi_poll(fep, 64, shrink)
    assert rec.outcome == "tx_ring"
    assert fep.syncs.for_device == [(page.dma_addr + 258, len(UDP_FRAME))]
    assert fep.txqs[0].ring.get(0).cbd_datlen == len(UDP_FRAME) - 8
    # 20 slots, one used: 17 free < 18, so the next XDP_TX fails after converting.
    device.receive(fep, UDP_FRAME)
    (rec,), _ = rx.napi_poll(fep, 64, shrink)
    assert rec.outcome == "recycled" and fep.ops.xdp_frame_conversions == 2
    assert fep.rxq.stats[3:5] == [0, 0]
    syncs = len(fep.dev.syncs_for_device)
    released = rx.fec_restart(fep)
    assert [c.type for c in released] == [TxBufType.FEC_TXBUF_T_XDP_TX]
    assert released[0].fate == "page_pool_put_full_netmem"  # not direct
    assert [s.size for s in fep.dev.syncs_for_device[syncs:]] == [4096 - 256 - 320]  # max_len
    assert fep.rxq.pool.where(page) is not pp.Loc.IN_FLIGHT


@pytest.mark.rule("FEC-TX-003", "FEC-RX-001", "FEC-XDP-005")
@pytest.mark.parametrize(("avb", "cpu", "esc"), [
    (False, 1, 0x40000000), (True, 0, 0x40000000), (True, 1, 0x40000000 | (1 << 20)),
    (True, 5, 0x40000000 | (2 << 20)),  # cpu 5 % 3 queues = queue 2
])
def test_tx_descriptor_carries_the_queue_frame_type_on_avb_parts(avb: bool, cpu: int,
                                                                 esc: int) -> None:
    # 6.18: the queue is chosen by CPU (FEC-XDP-005; 7.0+ takes the RX queue's index).
    fep = _open(xdp=True, avb=avb, cpu=cpu, num_tx_queues=3, kernel=parse_kernel("6.18"))
    device.receive(fep, UDP_FRAME)
    (rec,), _ = rx.napi_poll(fep, 64, _prog({"op": "return", "action": 3}))
    assert rec.xdp is not None and isinstance(rec.xdp.tx, tuple)
    queue = rec.xdp.tx[0]
    assert queue == cpu % 3
    assert fep.txqs[queue].ring.get(0).cbd_esc == esc
    legacy = _open(xdp=True, avb=True, cpu=1, num_tx_queues=3, bufdesc_ex=False,
                   kernel=parse_kernel("6.18"))
    device.receive(legacy, UDP_FRAME)
    rx.napi_poll(legacy, 64, _prog({"op": "return", "action": 3}))
    assert legacy.txqs[1].ring.get(0).cbd_esc == 0  # no enhanced words at all


@pytest.mark.rule("FEC-DEV-007", "FEC-RX-004")
def test_split_frame() -> None:
    fep = _open()
    device.receive(fep, UDP_FRAME, frozenset({"split"}), split_at=20)
    recs, _ = rx.napi_poll(fep, 64, NO_PROG)
    assert [r.outcome for r in recs] == ["error", "skb"]
    assert recs[0].datlen == 20 and recs[1].datlen == len(UDP_FRAME) + 6


@pytest.mark.rule("FEC-DEV-002")
def test_stored_bytes_are_pad_frame_fcs() -> None:
    fep = _open()
    device.receive(fep, UDP_FRAME)
    page = fep.bus.page_for(fep.rxq.rx_skb_info[0])  # type: ignore[arg-type]
    fcs = zlib.crc32(UDP_FRAME).to_bytes(4, "little")
    assert bytes(page.data[256 : 256 + len(UDP_FRAME) + 6]) == b"\0\0" + UDP_FRAME + fcs


@pytest.mark.rule("FEC-RX-015", "FEC-STATS-004")
@given(scenario=component.scenarios())
def test_conservation_holds_for_any_scenario(scenario: Scenario) -> None:
    obs = component.run(scenario)  # conservation() asserts inside
    c = obs["conservation"]
    assert c["inflight"] >= c["rx_ring"] + c["tx_ring"] + c["stack"]
    assert all(isinstance(v, int) for k, v in obs["ethtool"].items() if k.startswith("rx_pp_"))


@pytest.mark.rule("FEC-RX-005", "FEC-XDP-001")
def test_explain_names_rules() -> None:
    text = component.explain(Scenario(component="fec", frames=(UDP_FRAME,),
                                      program=({"op": "return", "action": 1},)))
    assert "FEC-RX-005" in text and "FEC-XDP-003" in text and "page recycled" in text


@pytest.mark.rule("FEC-RX-005", "FEC-DEV-002", "FEC-DEV-003")
@given(frames=st.lists(ethernet_frames(), min_size=1, max_size=4), racc=st.booleans(),
       with_prog=st.booleans(), kernel=st.sampled_from(["6.12.62", "6.12", "6.18", "7.3"]))
def test_rx_bytes_is_the_wire_length_plus_fcs_and_pad(frames: list[bytes], racc: bool,
                                                      with_prog: bool, kernel: str) -> None:
    """Independent recomputation: every frame that fits is counted with FCS, and with the
    RACC pad only before ad17e7e92a7c (6.12.62 here), whatever the program does to it;
    longer ones are errors and not counted."""
    scenario = Scenario(component="fec", config={"racc": racc, "rx_ring_size": 8},
                        frames=tuple(frames), kernel=kernel,
                        program=({"op": "return", "action": 1},) if with_prog else None)
    obs = component.run(scenario)
    # FTRL truncates above 1984 stored bytes; since FEC-DEV-003's gate (v6.18: "6.18"
    # and "7.3" here) MAX_FL flags LG above 1522, the pad counted.
    max_fl = 1522 if kernel in ("6.18", "7.3") else 1984
    fits = [f for f in frames
            if len(f) + 4 <= 1984 and len(f) + 4 + (2 if racc else 0) <= max_fl]
    pad = 2 if racc and kernel == "6.12.62" else 0
    assert obs["counters"]["rx_bytes"] == sum(len(f) + 4 + pad for f in fits)
    assert obs["counters"]["rx_packets"] == len(fits)
    assert obs["counters"]["rx_length_errors"] == len(frames) - len(fits)


@pytest.mark.rule("FEC-RX-017", "XDP-BUFF-001", "XDP-ADJ-002", "XDP-ADJ-006")
@pytest.mark.parametrize(("arch", "reserved", "frame"), [("arm64", 320, 40), ("armhf", 256, 32)])
def test_the_architecture_bounds_adjust_head_and_tail(arch: str, reserved: int,
                                                      frame: int) -> None:
    """With RACC the frame starts at 256 + 2 in the page.  Tail growth stops at
    4096 - SKB_DATA_ALIGN(sizeof(struct skb_shared_info)); head growth at
    sizeof(struct xdp_frame) past data_hard_start (no metadata)."""
    start = 256 + 2
    tail_room = 4096 - reserved - start - len(UDP_FRAME)
    head_room = start - frame
    results = []
    for tail, head in ((tail_room, -head_room), (tail_room + 1, -head_room - 1)):
        fep = _open(xdp=True, arch=arch)
        device.receive(fep, UDP_FRAME)
        (rec,), _ = rx.napi_poll(fep, 64, _prog({"op": "adjust_tail", "delta": tail},
                                                {"op": "adjust_head", "delta": head},
                                                {"op": "return", "action": 1}))
        assert rec.xdp is not None
        results.append([r["rc"] for r in rec.xdp.run.records])
    assert results == [[0, 0], [-22, -22]]  # at the bound: taken; one byte past: -EINVAL
    assert FecConfig(arch=arch).rx_frsize == 4096 - 256 - reserved  # the pool's max_len


@pytest.mark.rule("FEC-RX-018", "FEC-STATS-004", "FEC-RX-001")
def test_idle_rx_queues_add_their_filled_pools_to_ethtool() -> None:
    """Three RX queues (the i.MX8MP's device tree): queues 1 and 2 get their own pools,
    filled at open like queue 0's and never given a frame, so every pool counter that
    open moves is three times queue 0's while frame handling stays queue 0's alone."""
    frames = (UDP_FRAME,) * 3

    def ethtool(queues: int) -> dict[str, int]:
        scenario = Scenario(component="fec", config={"num_rx_queues": queues},
                            frames=frames, program=({"op": "return", "action": 2},))
        out: dict[str, int] = component.run(scenario)["ethtool"]
        return out

    one, three = ethtool(1), ethtool(3)
    assert three["rx_xdp_pass"] == one["rx_xdp_pass"] == len(frames)
    fill = _open(num_rx_queues=3)
    assert len(fill.idle_pools) == 2

    def counters(pool: pp.PagePool) -> pp.PagePoolStats:
        stats = pp.PagePoolStats()
        pool.get_stats(stats)
        return stats

    for pool in fill.idle_pools:  # opened exactly like queue 0
        assert counters(pool) == counters(fill.rxq.pool)
        assert pool is not fill.rxq.pool
    # 256 slots filled: 4 slow allocations (each a bulk refill of the empty cache) and
    # 252 fast ones per pool (seen on qemu-fec:imx8mp-evk: 756 fast in all)
    assert three["rx_pp_alloc_fast"] - one["rx_pp_alloc_fast"] == 2 * 252
    assert three["rx_pp_alloc_slow"] - one["rx_pp_alloc_slow"] == 2 * 4
    assert three["rx_pp_recycle_cached"] == one["rx_pp_recycle_cached"]
    with pytest.raises(InvalidConfig):
        FecConfig(num_rx_queues=4)


@pytest.mark.rule("FEC-TX-007", "FEC-TX-005")
def test_restart_unmaps_ndo_slots_by_type_and_close_does_not() -> None:
    """fec_enet_bd_init unmaps every pending NDO mapping; fec_enet_free_buffers returns the
    frame and leaves the mapping; a completed slot is SKB again, so restart skips it."""
    events = ({"op": "xdp_xmit", "frames": [0, 0, 0]}, {"op": "tx_done", "count": 2},
              {"op": "napi"}, {"op": "restart"}, {"op": "xdp_xmit", "frames": [0, 0]},
              {"op": "close"})
    scenario = Scenario(component="fec", config={"rx_ring_size": 4, "tx_ring_size": 40},
                        frames=(UDP_FRAME,), events=events)
    obs = component.run(scenario)
    # two completions (2 unmaps), restart with one NDO frame pending (1), close with two
    # pending (no unmap)
    assert obs["dma"]["unmaps"] == 3
    assert [c["type"] for c in obs["tx_completions"]] == ["FEC_TXBUF_T_XDP_NDO"] * 5
    assert [c["bytes"] for c in obs["tx_completions"]] == [len(UDP_FRAME)] * 2 + [0] * 3
    fep = _open()
    frames = component._ndo_frames(fep, [UDP_FRAME])
    assert tx.xdp_xmit(fep, frames) == 1
    device.transmit(fep, 0)
    tx.tx_queue(fep, 0, 64)
    assert fep.txqs[0].tx_buf[0].type is TxBufType.FEC_TXBUF_T_SKB
    assert fep.syncs.unmaps == 1
    assert rx.fec_restart(fep) == [] and fep.syncs.unmaps == 1

"""mlx5e RX handlers with XDP: the per-RQ buffer's resets, verdicts, counters and the
three metadata kfuncs, checked against hand-worked cases and published vectors.

Kernel sources: drivers/net/ethernet/mellanox/mlx5/core/en_rx.c (Kingxukai/linux
v6.17-rc3, 9b44fff655e2), en/xdp.c (0291023e7330), en/txrx.h, en_stats.c.
"""

from __future__ import annotations

import errno
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Raw

from conformance.vectors.ms_rss import IPV4_VECTORS, IPV6_VECTORS, MS_KEY
from reference import rss
from reference.errors import InvalidConfig
from reference.kfuncs import RxHash
from reference.mlx5 import cqe as C
from reference.mlx5 import kfuncs as K
from reference.mlx5 import rx
from reference.mlx5 import xdp as X
from reference.mlx5.counters import ETHTOOL_NAMES, Mlx5eRqStats, Mlx5eXdpsqStats, ethtool
from reference.mlx5.device import Compression, DeviceConfig, RqType, TsFormat
from reference.xdp.buff import XDP_FLAGS_HAS_FRAGS

#: Explicit MACs: scapy never has to resolve one, so no ARP ever leaves the machine.
ETH = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")

Ops = tuple[Mapping[str, Any], ...]
DROP, PASS, TX, REDIRECT, ABORTED = 1, 2, 3, 4, 0


def cqe(byte_cnt: int, **kw: Any) -> C.mlx5_cqe64:
    """A successful receive completion (opcode RESP_SEND)."""
    return C.mlx5_cqe64(byte_cnt=byte_cnt, op_own=C.MLX5_CQE_RESP_SEND << 4, **kw)


def ret(action: int, *before: Mapping[str, Any]) -> Ops:
    return (*before, {"op": "return", "action": action})


def udp(n: int = 20, src: str = "10.0.0.1", sport: int = 1000) -> bytes:
    return bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
                 / IP(src=src, dst="10.0.0.2") / UDP(sport=sport, dport=53) / Raw(b"u" * n))


def dev(**kw: Any) -> DeviceConfig:
    kw.setdefault("rss", rss.RssConfig(key=MS_KEY, indir=(0,)))
    return DeviceConfig(**kw)


def drive(frames: Sequence[bytes], prog: Ops | Sequence[Ops | None], *,
          device: DeviceConfig | None = None, budget: int = 64, **rq: Any) -> rx.DriverRun:
    progs: Sequence[Ops | None] = [prog] * len(frames) if isinstance(prog, tuple) else prog
    return rx.run(device or dev(), frames, rx.RqConfig(**rq), lambda i: progs[i], budget)


# --- MLX5-XDP-001/002/003: the per-RQ buffer and its per-packet reset ------------------


@pytest.mark.rule("MLX5-XDP-001")
def test_fill_mxbuf_writes_exactly_the_reset_fields() -> None:
    rq = rx.Mlx5eRq(rx.RqConfig())
    mx = rq.mxbuf
    sentinel_txq = object()
    mx.txq = sentinel_txq  # type: ignore[assignment]  # never written on RX
    mx.flags = XDP_FLAGS_HAS_FRAGS
    mx.data_meta = 7
    a = cqe(60, rss_hash_result=1)
    page = rx._page_with(b"x" * 60, 256)
    X.mlx5e_fill_mxbuf(rq, a, page, 0, 256, 4096, 60, mx)
    assert (mx.frame_sz, mx.flags, mx.rxq) == (4096, 0, rq.xdp_rxq)
    assert (mx.data_hard_start, mx.data, mx.data_end, mx.data_meta) == (0, 256, 316, 256)
    assert mx.cqe is a and mx.rq is rq and mx.txq is sentinel_txq


@pytest.mark.rule("MLX5-XDP-001", "MLX5-XDP-003")
def test_one_buffer_per_rq_and_frags_flag_reset_between_packets() -> None:
    rq = rx.Mlx5eRq(rx.RqConfig(linear=False, frag_size=128))
    buf = rq.mxbuf
    big = udp(300)  # 342 bytes: 128 linear + 128 + 86 in two frags
    first = rq.handle_cqe(cqe(len(big)), big, ret(PASS))
    small = udp(20)
    second = rq.handle_cqe(cqe(len(small)), small, ret(PASS))
    assert rq.mxbuf is buf
    assert first["mxbuf"] == {"frame_sz": 4096, "flags": XDP_FLAGS_HAS_FRAGS, "headroom": 256,
                              "len": 128, "metasize": 0, "nr_frags": 2, "frags_size": 214}
    assert second["mxbuf"]["flags"] == 0 and second["mxbuf"]["nr_frags"] == 0
    assert first["skb"]["data"] == big.hex() and first["skb"]["nr_frags"] == 2


@pytest.mark.rule("MLX5-XDP-001")
def test_a_driver_that_skips_the_flags_reset_hands_stale_frags_to_the_program(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    original = X.mlx5e_fill_mxbuf

    def no_flags_reset(rq: Any, cqe: Any, page: Any, va: int, hr: int, fsz: int, n: int,
                       mx: X.Mlx5eXdpBuff, trace: Any = None) -> None:
        stale = mx.flags
        original(rq, cqe, page, va, hr, fsz, n, mx, trace)
        mx.flags = stale

    monkeypatch.setattr(X, "mlx5e_fill_mxbuf", no_flags_reset)
    rq = rx.Mlx5eRq(rx.RqConfig(linear=False, frag_size=128))
    big, small = udp(300), udp(20)
    rq.handle_cqe(cqe(len(big)), big, ret(PASS))
    second = rq.handle_cqe(cqe(len(small)), small, ret(PASS))
    assert second["mxbuf"]["flags"] == XDP_FLAGS_HAS_FRAGS  # what the kernel must not do


@pytest.mark.rule("MLX5-XDP-001", "MLX5-KF-002")
def test_cqe_pointer_is_the_current_packets() -> None:
    frames = [udp(20, src="10.0.0.1"), udp(20, src="10.0.0.9")]
    run = drive(frames, ret(PASS, {"op": "kfunc", "name": "rx_hash"}))
    hashes = [r["ops"][0]["hash"] for r in run.records]
    assert hashes == [c.cqe.rss_hash_result for c in run.completions]
    assert hashes[0] != hashes[1]


@pytest.mark.rule("MLX5-XDP-002", "MLX5-RX-004")
def test_striding_nonlinear_with_program_has_everything_in_frags() -> None:
    frame = udp(100)
    run = drive([frame], ret(PASS, {"op": "get_buff_len"}),
                device=dev(rq_type=RqType.STRIDING), rq_type=RqType.STRIDING, linear=False)
    rec = run.records[0]
    # MLX5_SKB_FRAG_SZ(256 + 256) = SKB_DATA_ALIGN(512) + SKB_DATA_ALIGN(320) on x86_64.
    assert rec["mxbuf"]["frame_sz"] == 512 + 320
    assert rec["mxbuf"]["len"] == 0 and rec["mxbuf"]["headroom"] == 256
    assert rec["mxbuf"]["frags_size"] == len(frame)
    assert rec["ops"][0]["len"] == len(frame)
    assert rec["skb"]["data"] == frame.hex()


@pytest.mark.rule("MLX5-XDP-002", "MLX5-RX-001")
def test_linear_without_program_leaves_the_buffer_alone() -> None:
    rq = rx.Mlx5eRq(rx.RqConfig())
    f = udp(10)
    rec = rq.handle_cqe(cqe(len(f)), f, None)
    assert rq.mxbuf.page is None and rq.mxbuf.cqe is None
    assert rec["skb"]["data"] == f.hex() and rq.stats.packets == 1


# --- MLX5-XDP-004..009, MLX5-RX-*, MLX5-STATS-*: verdicts and counters ------------------


@pytest.mark.rule("MLX5-XDP-004", "MLX5-RX-001")
def test_pass_builds_from_program_pointers_but_counts_cqe_bytes() -> None:
    f = udp(30)
    run = drive([f], ret(PASS, {"op": "adjust_head", "delta": 14},
                         {"op": "adjust_meta", "delta": -8}))
    skb = run.records[0]["skb"]
    assert skb["data"] == f[14:].hex() and skb["headroom"] == 256 + 14
    assert skb["metasize"] == 8
    assert run.counters["rx_packets"] == 1 and run.counters["rx_bytes"] == len(f)


@pytest.mark.rule("MLX5-XDP-005", "MLX5-XDP-006", "MLX5-RX-001")
@pytest.mark.parametrize(("action", "exception"), [(DROP, False), (ABORTED, True), (7, True)])
def test_drop_aborted_and_invalid_are_counted_as_xdp_drop(action: int, exception: bool) -> None:
    run = drive([udp(), udp()], ret(action))
    assert [r["fate"] for r in run.records] == ["drop", "drop"]
    assert all(r["exception"] is exception for r in run.records)
    assert run.counters["rx_xdp_drop"] == 2
    assert run.counters["rx_packets"] == 0 and run.counters["rx_bytes"] == 0
    assert run.pages["recycled"] == 2


@pytest.mark.rule("MLX5-XDP-007", "MLX5-RX-003", "MLX5-STATS-001")
def test_tx_holds_the_page_until_the_xdpsq_completes() -> None:
    run = drive([udp(), udp(), udp()], ret(TX))
    assert [r["fate"] for r in run.records] == ["tx"] * 3
    assert run.counters["rx_xdp_tx_xmit"] == 3 and run.counters["rx_xdp_drop"] == 0
    assert run.pages["tx_recycled"] == 3 and run.pages["in_sq"] == 0


@pytest.mark.rule("MLX5-XDP-008")
def test_tx_full_after_the_ring_fills_in_one_poll() -> None:
    # size 2: free = (cc - pc) mod 2; pc=0 empty -> room; pc=1 -> 1 >= 1; pc=2 -> 0: full.
    run = drive([udp()] * 3, ret(TX), xdpsq_size=2)
    assert [r["fate"] for r in run.records] == ["tx", "tx", "drop"]
    assert run.records[2]["exception"] is True
    c = run.counters
    assert (c["rx_xdp_tx_xmit"], c["rx_xdp_tx_full"], c["rx_xdp_drop"]) == (2, 1, 1)


@pytest.mark.rule("MLX5-XDP-008", "MLX5-RX-003")
def test_completions_between_polls_free_the_ring() -> None:
    run = drive([udp()] * 4, ret(TX), xdpsq_size=2, budget=2)
    assert [r["fate"] for r in run.records] == ["tx"] * 4
    assert run.counters["rx_xdp_tx_full"] == 0


@pytest.mark.rule("MLX5-XDP-008")
def test_tx_length_errors() -> None:
    f = udp(200)  # 242 bytes; hw_mtu = 200 + 22
    run = drive([f], ret(TX), mtu=200)
    assert run.counters["rx_xdp_tx_err"] == 1 and run.counters["rx_xdp_drop"] == 1
    short = drive([udp(20)], ret(TX, {"op": "adjust_tail", "delta": -(62 - 17)}),
                  min_inline=True)
    assert short.counters["rx_xdp_tx_err"] == 1
    ok = drive([udp(20)], ret(TX, {"op": "adjust_tail", "delta": -(62 - 18)}), min_inline=True)
    assert ok.counters["rx_xdp_tx_xmit"] == 1


@pytest.mark.rule("MLX5-XDP-007")
def test_tx_conversion_failure_goes_down_the_abort_path() -> None:
    # Programs cannot get below sizeof(struct xdp_frame) = 40 bytes of headroom (the
    # helpers keep it), so the buffer is filled by hand with 30 bytes of headroom.
    rq = rx.Mlx5eRq(rx.RqConfig())
    f = udp()
    X.mlx5e_fill_mxbuf(rq, cqe(len(f)), rx._page_with(f, 30), 0, 30, 4096, len(f), rq.mxbuf)
    out = X.mlx5e_xdp_handle(rq, ret(TX), rq.mxbuf)
    assert (out.fate, out.exception, out.consumed) == (X.Fate.DROP, True, True)
    assert rq.xdpsq.stats.xmit == 0 and rq.stats.xdp_drop == 1
    # At exactly 40 bytes the frame fits and the send is posted.
    edge = drive([udp()], ret(TX, {"op": "adjust_head", "delta": -216}))
    assert edge.records[0]["ops"][0]["rc"] == 0 and edge.records[0]["fate"] == "tx"


@pytest.mark.rule("MLX5-XDP-009")
def test_redirect_success_and_failure() -> None:
    ok = drive([udp()], ret(REDIRECT))
    assert ok.records[0]["fate"] == "redirect" and ok.counters["rx_xdp_redirect"] == 1
    bad = drive([udp()], ret(REDIRECT), redirect_ok=False)
    assert bad.records[0]["fate"] == "drop" and bad.records[0]["exception"] is True
    assert bad.counters["rx_xdp_redirect"] == 0 and bad.counters["rx_xdp_drop"] == 1


@pytest.mark.rule("MLX5-RX-002")
def test_striding_linear_oversize_is_dropped_before_xdp() -> None:
    run = drive([udp(200)], ret(PASS), device=dev(rq_type=RqType.STRIDING),
                rq_type=RqType.STRIDING, mtu=200)
    assert run.records[0]["kind"] == "oversize" and run.records[0]["verdict"] is None
    assert run.counters["rx_oversize_pkts_sw_drop"] == 1


@pytest.mark.rule("MLX5-STATS-001")
def test_ethtool_names_transcribed_from_en_stats_c() -> None:
    # sw_stats_desc[] in en_stats.c lists these names (the rx_xdp_* group in this order).
    names = [n for n, _, _ in ETHTOOL_NAMES]
    xdp_group = ["rx_xdp_drop", "rx_xdp_redirect", "rx_xdp_tx_xmit", "rx_xdp_tx_full",
                 "rx_xdp_tx_err", "rx_xdp_tx_cqe"]
    assert [n for n in names if n.startswith("rx_xdp")] == xdp_group
    out = ethtool(Mlx5eRqStats(xdp_drop=3), Mlx5eXdpsqStats(full=2, cqes=5))
    assert (out["rx_xdp_drop"], out["rx_xdp_tx_full"], out["rx_xdp_tx_cqe"]) == (3, 2, 5)


# --- MLX5-KF-*: the kfuncs ----------------------------------------------------------------

#: mlx5_xdp_rss_type[] of en/xdp.c, as (CQE IP type, CQE L4 type) -> xdp_rss_hash_type
#: value (include/net/xdp.h): IPv4 = 1, IPv6 = 2; TCP = 1, UDP = 2, IPSEC = 3.
RSS_TABLE = {
    (1, 0): 0x001, (1, 1): 0x019, (1, 2): 0x029, (1, 3): 0x089,
    (2, 0): 0x002, (2, 1): 0x01A, (2, 2): 0x02A, (2, 3): 0x08A,
}


@pytest.mark.rule("MLX5-KF-001", "MLX5-KF-002")
@pytest.mark.parametrize("ip", range(4))
@pytest.mark.parametrize("l4", range(4))
def test_rss_type_table(ip: int, l4: int) -> None:
    rq = rx.Mlx5eRq(rx.RqConfig())
    c = cqe(0, rss_hash_type=(ip << 2) | (l4 << 6), rss_hash_result=0xDEADBEEF)
    X.mlx5e_fill_mxbuf(rq, c, rx._page_with(b"", 0), 0, 256, 4096, 0, rq.mxbuf)
    got = K.MLX5E_XDP_METADATA_OPS.xmo_rx_hash
    assert got is not None
    assert got(rq.mxbuf) == RxHash(0, 0xDEADBEEF, RSS_TABLE.get((ip, l4), 0))


def _tcp(v: Any, six: bool) -> bytes:
    l3 = IPv6(src=v.src, dst=v.dst) if six else IP(src=v.src, dst=v.dst)
    return bytes(ETH / l3 / TCP(sport=v.sport, dport=v.dport, flags="A") / Raw(b"p"))


@pytest.mark.rule("MLX5-KF-002")
@pytest.mark.parametrize(("vector", "six"), [(v, False) for v in IPV4_VECTORS] +
                         [(v, True) for v in IPV6_VECTORS])
def test_rx_hash_matches_published_toeplitz(vector: Any, six: bool) -> None:
    run = drive([_tcp(vector, six)], ret(PASS, {"op": "kfunc", "name": "rx_hash"}))
    rec = run.records[0]["ops"][0]
    assert rec["rc"] == 0 and rec["hash"] == vector.hash_l3l4
    assert rec["rss_type"] == (0x01A if six else 0x019)


@pytest.mark.rule("MLX5-KF-002")
def test_rx_hash_needs_netif_f_rxhash() -> None:
    run = drive([udp()], ret(PASS, {"op": "kfunc", "name": "rx_hash"}), rxhash=False)
    assert run.records[0]["ops"][0] == {"op": "kfunc", "name": "rx_hash",
                                        "rc": -errno.ENODATA, "hash": None, "rss_type": None}


@pytest.mark.rule("MLX5-KF-003")
@pytest.mark.parametrize("compression", [Compression.BASIC, Compression.ENHANCED])
def test_rx_hash_on_a_compressed_session(compression: Compression) -> None:
    frames = [udp(20)] * 4
    run = drive(frames, ret(PASS, {"op": "kfunc", "name": "rx_hash"}),
                device=dev(compression=compression))
    assert run.stats["cqe_compress_pkts"] > 0
    full = run.completions[0].cqe.rss_hash_result
    for rec, titled in zip(run.records, run.from_title, strict=True):
        op = rec["ops"][0]
        assert op["rc"] == 0
        if not titled:
            assert op["hash"] == full
    # Basic: packet 0 of the session keeps the title's hash, the rest read 0 / NONE.
    if compression is Compression.BASIC:
        assert [r["ops"][0]["hash"] for r in run.records] == [full, 0, 0, 0]
        assert [r["ops"][0]["rss_type"] for r in run.records] == [0x029, 0, 0, 0]
    else:
        assert any(r["ops"][0]["hash"] == 0 for r in run.records)


@pytest.mark.rule("MLX5-KF-004", "MLX5-KF-005")
@pytest.mark.parametrize("fmt", [TsFormat.REAL_TIME, TsFormat.FREE_RUNNING])
def test_rx_timestamp(fmt: TsFormat) -> None:
    prog = ret(PASS, {"op": "kfunc", "name": "rx_timestamp"})
    ts = 5 * 1_000_000_000 + 123
    on = rx.run(dev(ts_format=fmt), [udp()], rx.RqConfig(hwtstamp_rx_all=True, ts_format=fmt),
                lambda i: prog, timestamps=[ts])
    assert on.records[0]["ops"][0]["rc"] == 0
    assert on.records[0]["ops"][0]["timestamp"] == ts
    off = rx.run(dev(ts_format=fmt), [udp()], rx.RqConfig(ts_format=fmt), lambda i: prog,
                 timestamps=[ts])
    assert off.records[0]["ops"][0]["rc"] == -errno.ENODATA


@pytest.mark.rule("MLX5-KF-004")
def test_real_time_conversion_by_hand() -> None:
    assert K.real_time_cyc2time((7 << 32) | 999_999_999) == 7_999_999_999


@pytest.mark.rule("MLX5-KF-006")
def test_rx_vlan_tag() -> None:
    tagged = bytes(ETH / Dot1Q(prio=1, vlan=5) / IP() / UDP() / Raw(b"v"))
    prog = ret(PASS, {"op": "kfunc", "name": "rx_vlan_tag"})
    run = drive([tagged, udp()], prog, device=dev(vlan_strip=True))
    assert run.records[0]["ops"][0] == {"op": "kfunc", "name": "rx_vlan_tag", "rc": 0,
                                        "vlan_proto": 0x8100, "vlan_tci": (1 << 13) | 5}
    assert run.records[1]["ops"][0]["rc"] == -errno.ENODATA
    # The stripped tag is not in the program's packet.
    assert run.records[0]["skb"]["data"] == (tagged[:12] + tagged[16:]).hex()


@pytest.mark.rule("MLX5-XDP-001", "MLX5-KF-001")
@pytest.mark.parametrize("skipped", ["cqe", "data_meta"])
def test_skipping_one_reset_changes_what_the_program_sees(
    monkeypatch: pytest.MonkeyPatch, skipped: str
) -> None:
    frames = [udp(20, src="10.0.0.1"), udp(20, src="10.0.0.9")]
    prog = ret(PASS, {"op": "adjust_meta", "delta": -8}, {"op": "kfunc", "name": "rx_hash"})
    good = drive(frames, prog)
    original = X.mlx5e_fill_mxbuf

    def skip(rq: Any, c: Any, page: Any, va: int, hr: int, fsz: int, n: int,
             mx: X.Mlx5eXdpBuff, trace: Any = None) -> None:
        stale = getattr(mx, skipped)
        original(rq, c, page, va, hr, fsz, n, mx, trace)
        if stale is not None and (skipped == "cqe" or stale):
            setattr(mx, skipped, stale)

    monkeypatch.setattr(X, "mlx5e_fill_mxbuf", skip)
    bad = drive(frames, prog)
    assert good.records[0] == bad.records[0]  # nothing stale yet
    if skipped == "cqe":  # packet 1's kfunc answers for packet 0
        assert bad.records[1]["ops"][1]["hash"] == good.records[0]["ops"][1]["hash"]
        assert bad.records[1]["ops"][1]["hash"] != good.records[1]["ops"][1]["hash"]
    else:  # packet 0 left data_meta 8 below data; packet 1 then has 16 bytes of "metadata"
        assert good.records[1]["skb"]["metasize"] == 8
        assert bad.records[1]["skb"]["metasize"] == 16


# --- second reading (2026-12): RQ headroom, fragments after a shrink, error opcodes ------


@pytest.mark.rule("MLX5-RX-005", "MLX5-RX-004")
@pytest.mark.parametrize(("rq_type", "linear"), [(RqType.CYCLIC, True), (RqType.CYCLIC, False),
                                                 (RqType.STRIDING, True)])
def test_without_a_program_the_skb_sits_after_net_skb_pad(rq_type: RqType,
                                                           linear: bool) -> None:
    # en/params.c mlx5e_get_linear_rq_headroom: NET_IP_ALIGN (0 on x86) + MLX5_RX_HEADROOM
    # (NET_SKB_PAD = max(32, L1_CACHE_BYTES) = 64 on x86_64) when params->xdp_prog is NULL.
    f = udp(40)
    run = rx.run(dev(rq_type=rq_type), [f], rx.RqConfig(rq_type=rq_type, linear=linear),
                 lambda i: None)
    skb = run.records[0]["skb"]
    assert skb["headroom"] == 64 and skb["data"] == f.hex()
    assert rx.mlx5e_get_linear_rq_headroom(False) == rx.NET_IP_ALIGN + rx.NET_SKB_PAD == 64


@pytest.mark.rule("MLX5-RX-005", "MLX5-XDP-002")
def test_with_a_program_the_rq_headroom_is_xdp_packet_headroom() -> None:
    f = udp(40)
    for linear in (True, False):
        run = drive([f], ret(PASS), linear=linear)
        assert run.records[0]["mxbuf"]["headroom"] == 256
        assert run.records[0]["skb"]["headroom"] == 256
    assert rx.mlx5e_get_linear_rq_headroom(True) == 256


@pytest.mark.rule("MLX5-RX-005")
def test_headroom_is_the_rqs_not_the_packets() -> None:
    # rq->buff.headroom is fixed by mlx5e_open_rq: an RQ opened with a program keeps 256
    # bytes for a packet the scenario runs no program on.
    f = udp(40)
    run = drive([f, f], [ret(PASS), None])
    assert [r["skb"]["headroom"] for r in run.records] == [256, 256]


@pytest.mark.rule("MLX5-RX-005", "MLX5-XDP-002")
def test_striding_nonlinear_without_program_uses_the_napi_skb_headroom() -> None:
    f = udp(400)
    run = rx.run(dev(rq_type=RqType.STRIDING), [f],
                 rx.RqConfig(rq_type=RqType.STRIDING, linear=False), lambda i: None)
    skb = run.records[0]["skb"]
    # napi_alloc_skb reserves NET_SKB_PAD + NET_IP_ALIGN; MLX5E_RX_MAX_HEAD bytes are copied.
    assert skb["headroom"] == 64 and skb["nr_frags"] == 1 and skb["data"] == f.hex()


@pytest.mark.rule("MLX5-RX-006")
def test_a_linear_rq_only_where_hw_mtu_fits_a_page() -> None:
    # Worked by hand from en/params.c (x86_64): MLX5_SKB_FRAG_SZ(headroom + MTU + 22) is
    # SKB_DATA_ALIGN(...) + 320.  With a program: 256 + 3498 + 22 = 3776 = 59 * 64, + 320 =
    # 4096 (fits); MTU 3499 rounds to 3840 + 320.  Without: 64 + 3690 + 22 = 3776 again.
    assert rx.mlx5e_rx_get_linear_sz_skb(3498, xdp_prog=True) == 4096
    assert rx.mlx5e_rx_get_linear_sz_skb(3499, xdp_prog=True) == 4160
    assert rx.mlx5e_rx_get_linear_sz_skb(3690, xdp_prog=False) == 4096
    rx.check_linear(rx.RqConfig(mtu=3498), xdp_prog=True)
    rx.check_linear(rx.RqConfig(mtu=3690), xdp_prog=False)
    rx.check_linear(rx.RqConfig(mtu=9978, linear=False), xdp_prog=True)
    for mtu, prog in ((3499, True), (3691, False), (9978, False)):
        with pytest.raises(InvalidConfig, match="MLX5_SKB_FRAG_SZ"):
            rx.check_linear(rx.RqConfig(mtu=mtu), xdp_prog=prog)
    with pytest.raises(InvalidConfig):  # the RQ is opened through the same check
        rx.run(dev(), [udp(40)], rx.RqConfig(mtu=3499), lambda i: ret(PASS))
    # The scenario's default is the kernel's choice for its MTU and program.
    from conformance.components import mlx5
    from conformance.scenario import Scenario

    def linear(mtu: int, program: bool) -> bool:
        sc = Scenario("mlx5", config={"mtu": mtu},
                      program=({"op": "return", "action": 2},) if program else None)
        return mlx5.rq_config_of(sc).linear

    assert (linear(3498, True), linear(3499, True), linear(3690, False),
            linear(3691, False)) == (True, False, True, False)


@pytest.mark.rule("MLX5-XDP-004", "MLX5-XDP-003")
def test_pass_after_a_tail_shrink_keeps_only_the_remaining_frags() -> None:
    # 128 linear + 128 + 128 + 58: shrinking by 100 frees the last fragment; the skb gets
    # the fragments the buffer still holds (the fixed code of 6.12.117 / 7.3.4).
    big = udp(400)
    assert len(big) == 442
    run = drive([big], ret(PASS, {"op": "adjust_tail", "delta": -100}), linear=False,
                frag_size=128)
    rec = run.records[0]
    assert rec["mxbuf"]["nr_frags"] == 3
    assert rec["skb"]["nr_frags"] == 2 and rec["skb"]["len"] == len(big) - 100
    assert rec["skb"]["data"] == big[:-100].hex()


@pytest.mark.rule("MLX5-CQE-009", "MLX5-RX-002")
@pytest.mark.parametrize("opcode", [C.RDMA_CORE_MLX5_CQE_NO_PACKET, C.MLX5_CQE_RESP_SEND_IMM,
                                    C.MLX5_CQE_RESP_SEND_INV, C.MLX5_CQE_RESP_ERR,
                                    C.MLX5_CQE_INVALID])
def test_every_opcode_but_resp_send_is_an_error_completion(opcode: int) -> None:
    for rq_type in (RqType.CYCLIC, RqType.STRIDING):
        rq = rx.Mlx5eRq(rx.RqConfig(rq_type=rq_type))
        f = udp(20)
        rec = rq.handle_cqe(C.mlx5_cqe64(byte_cnt=len(f), op_own=opcode << 4), f, ret(PASS))
        assert rec["kind"] == "error" and rec["skb"] is None and rec["verdict"] is None
        assert rq.counters()["rx_wqe_err"] == 1 and rq.counters()["rx_packets"] == 0
        assert rq.recovering is False  # syndrome 0 needs no recovery


@pytest.mark.rule("MLX5-CQE-009", "MLX5-RX-002")
def test_recovery_syndromes_mark_the_rq_recovering_once() -> None:
    rq = rx.Mlx5eRq(rx.RqConfig())
    length_err = C.mlx5_err_cqe(syndrome=C.MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR,
                                op_own=C.MLX5_CQE_RESP_ERR << 4).pack()
    rq.handle_cqe(C.mlx5_cqe64.unpack(length_err), b"", None)
    assert rq.recovering is False
    flush = C.mlx5_err_cqe(syndrome=C.MLX5_CQE_SYNDROME_WR_FLUSH_ERR,
                           op_own=C.MLX5_CQE_RESP_ERR << 4).pack()
    for _ in range(2):
        rq.handle_cqe(C.mlx5_cqe64.unpack(flush), b"", None)
    assert rq.recovering is True and rq.stats.wqe_err == 3
    assert [s for s in range(256) if C.cqe_syndrome_needs_recover(s)] == [0x02, 0x04, 0x05]

"""mlx5e_build_rx_skb: the checksum decision and the skb metadata (reference/mlx5/skbmeta.py).

Independent references: a one's-complement sum written from RFC 1071 (in
test_mlx5_device) over the scapy frame's bytes; the v6.17 sources for the gates (en_rx.c,
if_vlan.h, eth.c) worked by hand; the header constants cited beside each use.
"""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Dot1AD, Dot1Q, Ether
from scapy.layers.sctp import SCTP
from scapy.packet import Packet, Raw
from test_mlx5_device import ones_sum  # RFC 1071, written independently of the model

from reference import rss
from reference.errors import MalformedInput
from reference.mlx5 import cqe as C
from reference.mlx5 import rx, skbmeta
from reference.mlx5.counters import Mlx5eRqStats
from reference.mlx5.device import Compression, DeviceConfig, RqType, TsFormat

HOST = "02:00:00:00:00:02"
KEY = bytes(range(1, 41))


def eth(dst: str = HOST) -> Ether:
    return Ether(src="02:00:00:00:00:01", dst=dst)


def run(frames: list[bytes], *, program: bool = False, dev: dict[str, object] | None = None,
        **rq: object) -> rx.DriverRun:
    config = DeviceConfig(rss=rss.RssConfig(key=KEY, indir=(0, 1, 2, 3)), **(dev or {}))
    rq_cfg = rx.RqConfig(**rq)  # type: ignore[arg-type]
    ops = ({"op": "return", "action": 2},) if program else None
    return rx.run(config, frames, rq_cfg, lambda i: ops)


def skb(frame: bytes, **kw: object) -> dict[str, object]:
    d = run([frame], **kw)  # type: ignore[arg-type]
    result = d.records[0]["skb"]
    assert isinstance(result, dict)
    return result


def tcp4(payload: int = 100) -> Packet:
    return IP(src="10.0.0.1", dst="10.0.0.2") / TCP(sport=1, dport=2, flags="A") / Raw(
        b"x" * payload)


# --- CHECKSUM_COMPLETE and its fix-ups ----------------------------------------------------

_tags = st.lists(st.sampled_from(["q", "ad"]), max_size=6)


@st.composite
def complete_frames(draw: st.DrawFn) -> bytes:
    l3: Packet = (tcp4(draw(st.integers(40, 300))) if draw(st.booleans()) else
                  IPv6(src="fd00::1", dst="fd00::2") / UDP(sport=3, dport=4)
                  / Raw(b"y" * draw(st.integers(40, 300))))
    frame: Packet = eth()
    for i, t in enumerate(draw(_tags)):
        frame = frame / (Dot1AD(vlan=10 + i) if t == "ad" else Dot1Q(vlan=20 + i))
    return bytes(frame / l3) + draw(st.binary(max_size=24))


@pytest.mark.rule("MLX5-CSUM-007", "MLX5-CSUM-008", "MLX5-CSUM-009", "MLX5-DEV-004",
                  "MLX5-DEV-014")
@given(frame=complete_frames(), strip=st.booleans(), full=st.booleans(),
       linear=st.booleans(), striding=st.booleans())
def test_complete_sum_equals_an_independent_sum_after_the_ethernet_header(
        frame: bytes, strip: bool, full: bool, linear: bool, striding: bool) -> None:
    d = run([frame], dev={"vlan_strip": strip, "csum_full": full,
                          "rq_type": RqType.STRIDING if striding else RqType.CYCLIC},
            rq_type=RqType.STRIDING if striding else RqType.CYCLIC, linear=linear,
            frag_size=128, cqe_checksum_full=full)
    got = d.records[0]["skb"]
    body = bytes.fromhex(got["data"])
    assert got["ip_summed"] == "CHECKSUM_COMPLETE"
    assert got["csum"] == ones_sum(body[14:])


@pytest.mark.rule("MLX5-CSUM-008", "MLX5-CSUM-009")
def test_fixups_are_what_the_cqe_sum_leaves_out() -> None:
    """Hand-worked: the device sums only the IP datagram; one in-packet tag and 5 padding
    bytes are added by the driver, counted as a short tail (<= MAX_PADDING 8)."""
    ip = bytes(tcp4(60))
    frame = bytes(eth() / Dot1Q(vlan=7, type=0x0800) / Raw(ip)) + b"\x01\x02\x03\x04\x05"
    d = run([frame])
    cqe = d.completions[0].cqe
    assert cqe.check_sum == ones_sum(ip)
    assert d.records[0]["skb"]["csum"] == ones_sum(frame[14:])
    assert d.counters["rx_csum_complete"] == 1
    assert d.counters["rx_csum_complete_tail"] == 1
    assert d.counters["rx_csum_complete_tail_slow"] == 0
    d = run([bytes(eth() / tcp4(60)) + bytes(9)])
    assert (d.counters["rx_csum_complete_tail"], d.counters["rx_csum_complete_tail_slow"]) == (0, 1)


@pytest.mark.rule("MLX5-CSUM-009")
def test_odd_tail_offset_is_rotated_into_the_sum() -> None:
    """An IP packet of odd length: the padding starts at an odd offset, and only a
    byte-rotated addition gives the sum of the whole frame."""
    frame = bytes(eth() / tcp4(61)) + b"\xab\xcd\xef"
    assert (len(frame) - 3) % 2 == 1
    assert skb(frame)["csum"] == ones_sum(frame[14:])


@pytest.mark.rule("MLX5-CSUM-007", "MLX5-DEV-014")
def test_csum_full_needs_no_fixup_counters() -> None:
    frame = bytes(eth() / Dot1Q(vlan=3) / tcp4(80)) + bytes(6)
    d = run([frame], dev={"csum_full": True}, cqe_checksum_full=True)
    assert d.completions[0].cqe.check_sum == ones_sum(frame[14:])
    assert d.records[0]["skb"]["csum"] == ones_sum(frame[14:])
    assert d.counters["rx_csum_complete_tail"] == d.counters["rx_csum_complete_tail_slow"] == 0


# --- the gates -----------------------------------------------------------------------------


@pytest.mark.rule("MLX5-CSUM-001")
def test_rxcsum_off_is_checksum_none() -> None:
    got = skb(bytes(eth() / tcp4()), rxcsum=False)
    assert got["ip_summed"] == "CHECKSUM_NONE" and got["csum"] is None


@pytest.mark.rule("MLX5-CSUM-003")
def test_an_attached_program_or_the_private_flag_forbids_complete() -> None:
    frame = bytes(eth() / tcp4())
    for kw in ({"program": True}, {"pflag_no_csum_complete": True}):
        d = run([frame], **kw)  # type: ignore[arg-type]
        assert d.records[0]["skb"]["ip_summed"] == "CHECKSUM_UNNECESSARY"
        assert d.counters["rx_csum_complete"] == 0 and d.counters["rx_csum_unnecessary"] == 1


@pytest.mark.rule("MLX5-CSUM-004")
def test_short_frame_boundary_is_64_bytes() -> None:
    """short_frame(len) is len <= ETH_ZLEN (60) + ETH_FCS_LEN (4), include/uapi/linux/if_ether.h."""
    base = bytes(eth() / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=1, dport=2))  # 42
    at_64 = base + b"z" * (64 - len(base))
    at_65 = base + b"z" * (65 - len(base))
    assert skb(at_64)["ip_summed"] == "CHECKSUM_UNNECESSARY"  # the L3/L4 bits decide
    assert skb(at_65)["ip_summed"] == "CHECKSUM_COMPLETE"


@pytest.mark.rule("MLX5-CSUM-005")
def test_six_in_packet_tags_are_walked_and_seven_are_not() -> None:
    """Hand-worked from __vlan_get_protocol_offset with mac_len 14 and VLAN_MAX_DEPTH 8:
    step 1 re-reads the outer TPID at offset 10, steps 2..7 read tags 1..6, step 8 gives
    up.  So six tags end on IP; the seventh leaves the walk at type 0."""
    def tagged(n: int) -> bytes:
        frame: Packet = eth()
        for i in range(n):
            frame = frame / Dot1Q(vlan=i + 1)
        return bytes(frame / tcp4())

    assert skb(tagged(6))["ip_summed"] == "CHECKSUM_COMPLETE"
    assert skb(tagged(7))["ip_summed"] == "CHECKSUM_UNNECESSARY"  # the L3/L4 bits decide
    assert skbmeta.is_last_ethertype_ip(tagged(6)) == (True, 0x0800, 14 + 6 * 4)
    assert skbmeta.is_last_ethertype_ip(tagged(7))[0] is False


@pytest.mark.rule("MLX5-CSUM-005")
def test_non_ip_and_short_ip_headers_are_not_complete() -> None:
    arp = bytes(eth("ff:ff:ff:ff:ff:ff") / ARP(psrc="10.0.0.1", pdst="10.0.0.2"))
    assert skb(arp)["ip_summed"] == "CHECKSUM_NONE"  # no L3/L4 OK for ARP
    # One tag, then 30 of IPv6's 40 header bytes: pskb_may_pull(18 + 40) fails.
    head = bytes.fromhex("020000000002" "020000000001" "8100" "0001" "86dd") + bytes(30)
    assert skbmeta.is_last_ethertype_ip(head) == (False, 0x86DD, 18)
    assert skbmeta.is_last_ethertype_ip(head + bytes(10)) == (True, 0x86DD, 18)


@pytest.mark.rule("MLX5-CSUM-006")
def test_sctp_is_never_complete() -> None:
    for l3 in (IP(src="10.0.0.1", dst="10.0.0.2"), IPv6(src="fd00::1", dst="fd00::2")):
        got = skb(bytes(eth() / l3 / SCTP(sport=1, dport=2) / Raw(b"s" * 80)))
        assert got["ip_summed"] == "CHECKSUM_NONE"  # the device verifies TCP/UDP only


@pytest.mark.rule("MLX5-CSUM-010", "MLX5-CSUM-002")
def test_validity_bits_tunnel_and_lro_by_hand_made_cqes() -> None:
    """CQEs made by hand (no device): bits from include/linux/mlx5/device.h
    (CQE_L3_OK 1<<1, CQE_L4_OK 1<<2; tunneled = bit 0 of tls_outer_l3_tunneled;
    lro_num_seg = srqn[31:24])."""
    data = bytes(eth() / tcp4())
    state = skbmeta.RqState(no_csum_complete=True)
    cases = [
        (C.mlx5_cqe64(hds_ip_ext=0b110), ("CHECKSUM_UNNECESSARY", 0, False), "csum_unnecessary"),
        (C.mlx5_cqe64(hds_ip_ext=0b110, tls_outer_l3_tunneled=1),
         ("CHECKSUM_UNNECESSARY", 1, True), "csum_unnecessary_inner"),
        (C.mlx5_cqe64(hds_ip_ext=0b010), ("CHECKSUM_NONE", 0, False), "csum_none"),
        (C.mlx5_cqe64(hds_ip_ext=0, srqn=3 << 24), ("CHECKSUM_UNNECESSARY", 0, False),
         "csum_unnecessary"),
    ]
    for cqe, want, counter in cases:
        stats = Mlx5eRqStats()
        v = skbmeta.mlx5e_handle_csum(cqe, state, data, stats)
        assert (v.ip_summed.name, v.csum_level, v.encapsulation) == want
        assert getattr(stats, counter) == 1
    # kTLS offload bits (4:3) send even a plain RQ to the validity bits.
    v = skbmeta.mlx5e_handle_csum(C.mlx5_cqe64(hds_ip_ext=0b110, tls_outer_l3_tunneled=1 << 3),
                                  skbmeta.RqState(), data, Mlx5eRqStats())
    assert v.ip_summed.name == "CHECKSUM_UNNECESSARY"


# --- skb metadata --------------------------------------------------------------------------


@pytest.mark.rule("MLX5-SKB-001", "MLX5-DEV-002")
def test_hash_and_level() -> None:
    tcp = skb(bytes(eth() / tcp4()))
    udp6 = skb(bytes(eth() / IPv6(src="fd00::1", dst="fd00::2") / UDP(sport=5, dport=6)
                     / Raw(b"u" * 60)))
    arp = skb(bytes(eth() / ARP()))
    assert (tcp["hash_type"], tcp["l4_hash"]) == ("PKT_HASH_TYPE_L4", True)
    assert tcp["hash"] == rss.toeplitz(KEY, bytes([10, 0, 0, 1, 10, 0, 0, 2, 0, 1, 0, 2]))
    assert udp6["hash_type"] == "PKT_HASH_TYPE_L4"
    assert (arp["hash"], arp["hash_type"]) == (0, "PKT_HASH_TYPE_NONE")
    assert skb(bytes(eth() / tcp4()), rxhash=False)["hash"] == 0


@pytest.mark.rule("MLX5-SKB-001", "MLX5-CQ-006")
def test_compressed_packets_after_the_first_lose_the_skb_hash() -> None:
    frame = bytes(eth() / tcp4())
    d = run([frame] * 3, dev={"compression": Compression.BASIC})
    hashes = [(r["skb"]["hash"] != 0, r["skb"]["hash_type"]) for r in d.records]
    assert hashes == [(True, "PKT_HASH_TYPE_L4"), (False, "PKT_HASH_TYPE_NONE"),
                      (False, "PKT_HASH_TYPE_NONE")]


@pytest.mark.rule("MLX5-SKB-002", "MLX5-SKB-005")
def test_stripped_tag_and_protocol() -> None:
    frame = bytes(eth() / Dot1Q(vlan=42, prio=5) / tcp4())
    stripped = run([frame], dev={"vlan_strip": True})
    got = stripped.records[0]["skb"]
    assert (got["vlan_present"], got["vlan_proto"], got["vlan_tci"]) == (True, 0x8100,
                                                                         (5 << 13) | 42)
    assert got["protocol"] == 0x0800 and stripped.counters["rx_removed_vlan_packets"] == 1
    kept = skb(frame)
    assert (kept["vlan_present"], kept["protocol"]) == (False, 0x8100)


@pytest.mark.rule("MLX5-SKB-003")
def test_mark_is_the_low_16_bits_of_sop_drop_qpn() -> None:
    assert skb(bytes(eth() / tcp4()), dev={"qpn": 0xABCDEF})["mark"] == 0xCDEF


@pytest.mark.rule("MLX5-SKB-004")
def test_hw_timestamp_only_with_the_all_filter() -> None:
    frame = bytes(eth() / tcp4())
    cfg = DeviceConfig(rss=rss.RssConfig(key=KEY, indir=(0,)), ts_format=TsFormat.REAL_TIME)
    on = rx.run(cfg, [frame], rx.RqConfig(hwtstamp_rx_all=True, ts_format=TsFormat.REAL_TIME),
                lambda i: None, timestamps=[5_000_000_123])
    off = rx.run(cfg, [frame], rx.RqConfig(ts_format=TsFormat.REAL_TIME), lambda i: None,
                 timestamps=[5_000_000_123])
    assert on.records[0]["skb"]["hwtstamp"] == 5_000_000_123
    assert off.records[0]["skb"]["hwtstamp"] is None


@pytest.mark.rule("MLX5-SKB-005")
@pytest.mark.parametrize(("dst", "pkt_type", "mcast"), [
    (HOST, "PACKET_HOST", 0), ("02:00:00:00:00:09", "PACKET_OTHERHOST", 0),
    ("ff:ff:ff:ff:ff:ff", "PACKET_BROADCAST", 1), ("01:00:5e:00:00:01", "PACKET_MULTICAST", 1)])
def test_pkt_type_by_destination(dst: str, pkt_type: str, mcast: int) -> None:
    d = run([bytes(eth(dst) / tcp4())])
    assert d.records[0]["skb"]["pkt_type"] == pkt_type


@pytest.mark.rule("MLX5-SKB-005")
def test_own_address_is_host_before_the_group_bit_is_read() -> None:
    """include/linux/etherdevice.h eth_skb_pkt_type: only a destination other than
    dev_addr is classified, so a netdev whose address has the group bit still gets HOST."""
    own = bytes.fromhex("030000000002")
    frame = own + bytes.fromhex("020000000001" "0800") + bytes(46)
    assert skbmeta.eth_type_trans(frame, own)[1] is skbmeta.PktType.PACKET_HOST
    assert skbmeta.eth_type_trans(frame, bytes.fromhex("020000000002"))[1] is \
        skbmeta.PktType.PACKET_MULTICAST


@pytest.mark.rule("MLX5-SKB-005")
def test_length_frames_get_802_2_or_802_3() -> None:
    """eth.c: below ETH_P_802_3_MIN (0x0600) the field is a length; 0xffff after the header
    means raw 802.3 (ETH_P_802_3 = 1), anything else 802.2 LLC (ETH_P_802_2 = 4)."""
    header = bytes.fromhex("020000000002" "020000000001" "0030")
    assert skbmeta.eth_type_trans(header + b"\xff\xff" + bytes(46), bytes.fromhex(
        "020000000002")) == (0x0001, skbmeta.PktType.PACKET_HOST)
    assert skbmeta.eth_type_trans(header + b"\xaa\xaa\x03" + bytes(45), bytes.fromhex(
        "020000000002"))[0] == 0x0004
    with pytest.raises(MalformedInput, match="MLX5-SKB-005"):
        skbmeta.mlx5e_build_rx_skb(C.mlx5_cqe64(), b"\0" * 10, features=frozenset(),
                                   state=skbmeta.RqState(), hwtstamp_rx_all=False,
                                   real_time=False, dev_addr=bytes(6), stats=Mlx5eRqStats())


@pytest.mark.rule("MLX5-STATS-001")
def test_new_counters_follow_sw_stats_desc_order() -> None:
    """Transcribed from en_stats.c sw_stats_desc[] (v6.17-rc3), RX entries only."""
    desc = ["rx_packets", "rx_bytes", "rx_lro_packets", "rx_lro_bytes", "rx_gro_packets",
            "rx_ecn_mark", "rx_removed_vlan_packets", "rx_csum_unnecessary", "rx_csum_none",
            "rx_csum_complete", "rx_csum_complete_tail", "rx_csum_complete_tail_slow",
            "rx_csum_unnecessary_inner", "rx_xdp_drop", "rx_xdp_redirect", "rx_xdp_tx_xmit",
            "rx_xdp_tx_mpwqe", "rx_xdp_tx_full", "rx_xdp_tx_err", "rx_xdp_tx_cqe",
            "rx_wqe_err", "rx_mpwqe_filler_cqes", "rx_mpwqe_filler_strides",
            "rx_oversize_pkts_sw_drop"]
    names = list(run([bytes(eth() / tcp4())]).counters)
    assert names == [n for n in desc if n in names]
    assert set(names) <= set(desc)


def test_rq_config_rejects_a_bad_mac() -> None:
    with pytest.raises(Exception, match="MLX5-SKB-005"):
        attrs.evolve(rx.RqConfig(), dev_addr=b"\0")

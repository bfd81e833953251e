"""The veth and tun models against hand-worked values from drivers/net/veth.c and tun.c
(v6.17-rc3), scapy-built frames and the live probe notes' observations."""

from __future__ import annotations

import errno
from collections.abc import Mapping

import pytest
from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.inet6 import ICMPv6EchoRequest, IPv6, IPv6ExtHdrHopByHop
from scapy.layers.ipsec import ESP
from scapy.layers.l2 import ARP, Ether

from conformance.components import tun as tun_component
from conformance.components import veth as veth_component
from conformance.scenario import Scenario
from reference import tun, veth
from reference.errors import InvalidConfig
from reference.flow_dissector import VlanKey as FlowVlan
from reference.kfuncs import RxHash, RxTimestamp, RxVlanTag

ETH = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")


def udp(sport: int = 1000, dport: int = 2000, src: str = "10.0.0.1",
        dst: str = "10.0.0.2") -> bytes:
    return bytes(ETH / IP(src=src, dst=dst) / UDP(sport=sport, dport=dport))


@pytest.mark.rule("VETH-MTU-001")
def test_attach_mtu_limit() -> None:
    # SKB_WITH_OVERHEAD(4096 - 256) - ETH_HLEN with a 320-byte aligned skb_shared_info;
    # the live probe saw the refusal start at a peer MTU of 3507.
    assert veth.veth_xdp_max_mtu() == 4096 - 256 - 320 - 14 == 3506
    assert veth.veth_xdp_set(3506) == 0
    assert veth.veth_xdp_set(3507) == -errno.ERANGE
    assert veth.veth_xdp_set(3507, has_frags=True) == 0
    assert veth.veth_xdp_set(3506 + 17 * 4096 + 1, has_frags=True) == -errno.ERANGE
    assert veth.veth_xdp_set(None) == -errno.ENOTCONN
    assert veth.veth_xdp_set(1500, rx_queues=1, peer_tx_queues=2) == -errno.ENOSPC


@pytest.mark.rule("VETH-STAT-001")
def test_ethtool_names() -> None:
    # Transcribed from veth_rq_stats_desc / veth_tq_stats_desc / ethtool_stats_keys.
    assert veth.ethtool_stat_names() == [
        "peer_ifindex", "rx_queue_0_xdp_packets", "rx_queue_0_xdp_bytes", "rx_queue_0_drops",
        "rx_queue_0_xdp_redirect", "rx_queue_0_xdp_drops", "rx_queue_0_xdp_tx",
        "rx_queue_0_xdp_tx_errors", "tx_queue_0_xdp_xmit", "tx_queue_0_xdp_xmit_errors"]
    assert len(veth.ethtool_stat_names(2, 2)) == 1 + 2 * 7 + 2 * 2


@pytest.mark.rule("VETH-STAT-002", "VETH-STAT-003")
@pytest.mark.parametrize(("action", "tx", "counter"), [
    (2, "ok", None), (1, "ok", "xdp_drops"), (0, "ok", "xdp_drops"), (7, "ok", "xdp_drops"),
    (3, "ok", "xdp_tx"), (3, "convert_failed", "drops"), (3, "xmit_failed", "xdp_tx_errors"),
    (4, "ok", "drops"),
])
def test_counters_per_action(action: int, tx: str, counter: str | None) -> None:
    stats = veth.zero_stats()
    veth.account(stats, "skb", 74, action, tx)
    want = {name: 0 for name in veth.VETH_RQ_STATS}
    want["xdp_packets"], want["xdp_bytes"] = 1, 60  # 74 - 14, as the live probe counted
    if counter:
        want[counter] += 1
    assert stats == want
    frame_stats = veth.zero_stats()
    veth.account(frame_stats, "xdp_frame", 74, 2)
    assert frame_stats["xdp_bytes"] == 74


@pytest.mark.rule("VETH-STAT-003")
def test_tx_outcome() -> None:
    assert veth.veth_xdp_tx_outcome(False, 0) == "convert_failed"
    assert veth.veth_xdp_tx_outcome(True, 1518) == "ok"  # MTU 1500 + 14 + VLAN_HLEN
    assert veth.veth_xdp_tx_outcome(True, 1519) == "xmit_failed"
    assert veth.veth_xdp_tx_outcome(True, 60, peer_napi=False) == "xmit_failed"


@pytest.mark.rule("VETH-SKB-001", "VETH-SKB-002")
def test_skb_layout() -> None:
    small = veth.veth_convert_skb_to_xdp_buff(veth.VethSkb(bytes(74)))
    # truesize = SKB_DATA_ALIGN(74) + 320 + 256 = 128 + 576
    assert small == veth.SkbBuffLayout(True, 256, 704, 4096)
    assert veth.tail_grow_room(74, small) == (128 - 74, 4096 - 256 - 74 - 320)
    big = veth.veth_convert_skb_to_xdp_buff(veth.VethSkb(bytes(1514)))
    assert big == veth.SkbBuffLayout(True, 256, 4096, 4096)  # 1536 + 576 > 2048
    in_place = veth.veth_convert_skb_to_xdp_buff(veth.VethSkb(bytes(74), headroom=300))
    assert not in_place.copied
    shared = veth.veth_convert_skb_to_xdp_buff(veth.VethSkb(bytes(74), headroom=300,
                                                            shared=True))
    assert shared.copied


@pytest.mark.rule("VETH-SKB-002")
def test_tail_growth_in_the_uncertain_band_is_refused() -> None:
    frame = udp()
    assert len(frame) == 42  # SKB_DATA_ALIGN(42) = 64: 22 bytes of certain tailroom
    ok = Scenario(component="veth", frames=(frame,),
                  program=({"op": "adjust_tail", "delta": 22},))
    assert veth_component.expected(ok)["packets"][0]["ops"][0]["rc"] == 0
    unsure = Scenario(component="veth", frames=(frame,),
                      program=({"op": "adjust_tail", "delta": 200},))
    with pytest.raises(InvalidConfig):
        veth_component.expected(unsure)


@pytest.mark.rule("VETH-SKB-003", "TUN-BUF-002")
def test_exposed_headroom_is_masked() -> None:
    grow = ({"op": "adjust_head", "delta": -4},)
    for component, name in ((veth_component, "veth"), (tun_component, "tun")):
        scenario = Scenario(component=name, frames=(udp(), udp()), program=grow,
                            per_packet_programs={1: ({"op": "adjust_head", "delta": 4},)})
        masked = component.unspecified(scenario)
        assert "packets[0].data" in masked and "packets[0].meta" in masked
        assert "packets[1].data" not in masked


@pytest.mark.rule("VETH-KF-001", "VETH-KF-003", "VETH-KF-004")
def test_kfuncs_on_the_skb_path() -> None:
    ctx = veth.VethXdpBuff(veth.VethSkb(udp(), hwtstamp=0))
    ops = veth.VETH_XDP_METADATA_OPS
    assert ops.xmo_rx_timestamp is not None and ops.xmo_rx_hash is not None
    assert ops.xmo_rx_vlan_tag is not None
    assert ops.xmo_rx_timestamp(ctx) == RxTimestamp(0, 0)
    # No hw-accel tag: tci written as 0, proto untouched, -ENODATA (live: -61 / tci 0).
    assert ops.xmo_rx_vlan_tag(ctx) == RxVlanTag(-errno.ENODATA, None, 0)
    tagged = veth.VethXdpBuff(veth.VethSkb(udp(), vlan_present=True, vlan_proto=0x8100,
                                           vlan_tci=0xA064))
    assert ops.xmo_rx_vlan_tag(tagged) == RxVlanTag(0, 0x8100, 0xA064)


@pytest.mark.rule("VETH-FRAME-001")
def test_kfuncs_on_the_xdp_frame_path() -> None:
    ctx = veth.VethXdpBuff(None)
    ops = veth.VETH_XDP_METADATA_OPS
    assert ops.xmo_rx_timestamp is not None and ops.xmo_rx_hash is not None
    assert ops.xmo_rx_vlan_tag is not None
    assert ops.xmo_rx_timestamp(ctx) == RxTimestamp(-errno.ENODATA)
    assert ops.xmo_rx_hash(ctx) == RxHash(-errno.ENODATA)
    assert ops.xmo_rx_vlan_tag(ctx) == RxVlanTag(-errno.ENODATA)


L4_ANY, NONE = 8, 0


@pytest.mark.rule("VETH-KF-002")
@pytest.mark.parametrize(("frame", "rss"), [
    (udp(), L4_ANY),
    (udp(0, 0), NONE),  # a zero port word is no L4 key
    (bytes(ETH / IP() / TCP(sport=1, dport=0)), L4_ANY),
    (bytes(ETH / IP() / ICMP()), NONE),
    (bytes(ETH / IP(flags="MF") / UDP(sport=1, dport=2)), NONE),
    (bytes(ETH / IP(frag=3) / UDP(sport=1, dport=2)), NONE),
    (bytes(ETH / IP() / ESP(spi=7)), L4_ANY),
    (bytes(ETH / IPv6(fl=5) / ICMPv6EchoRequest()), L4_ANY),  # flow label alone
    (bytes(ETH / IPv6() / ICMPv6EchoRequest()), NONE),
    (bytes(ETH / IPv6() / IPv6ExtHdrHopByHop() / TCP(sport=5, dport=6)), L4_ANY),
    (bytes(ETH / ARP()), NONE),
    (bytes(ETH / IP(ihl=5) / UDP(sport=1, dport=2))[:14 + 20 + 2], NONE),  # ports cut off
])
def test_rx_hash_type(frame: bytes, rss: int) -> None:
    ctx = veth.VethXdpBuff(veth.VethSkb(frame))
    hook = veth.VETH_XDP_METADATA_OPS.xmo_rx_hash
    assert hook is not None
    result = hook(ctx)
    assert result.rc == 0 and result.rss_type == rss and result.hash


@pytest.mark.rule("VETH-KF-005")
def test_hash_stand_in_equalities() -> None:
    def h(frame: bytes) -> int:
        return veth.flow_key_hash(veth.flow_dissect(frame))

    assert h(udp(1, 2, "1.1.1.1", "2.2.2.2")) == h(udp(2, 1, "2.2.2.2", "1.1.1.1"))
    assert h(udp(1, 2)) == h(udp(1, 2))
    assert h(udp(1, 2)) != h(udp(1, 3))
    assert h(udp(1, 2, "1.1.1.1")) != h(udp(1, 2, "1.1.1.3"))
    # __flow_hash_consistentify orders the addresses and, separately, the ports.
    assert h(udp(1, 2, "1.1.1.1", "2.2.2.2")) == h(udp(2, 1, "1.1.1.1", "2.2.2.2"))


@pytest.mark.rule("TUN-BUF-001")
def test_tun_layout() -> None:
    # pad 64 + 256; buflen = SKB_DATA_ALIGN(74 + 320) + 320 = 448 + 320
    assert tun.tun_build_skb_layout(74) == tun.TunBuffLayout(320, 768, True)
    # SKB_DATA_ALIGN(len + 320) + 320 <= 4096  <=>  len <= 3456
    assert tun.tun_can_build_skb(3456)
    assert not tun.tun_can_build_skb(3457)
    assert not tun.tun_can_build_skb(74, noblock=False)
    assert not tun.tun_can_build_skb(74, tap=False)
    assert not tun.tun_can_build_skb(74, sndbuf_unlimited=False)  # TUNSETSNDBUF
    assert not tun.tun_can_build_skb(74, napi_frags=True)  # IFF_NAPI_FRAGS
    frame = udp()
    grow = 64 - len(frame)
    scenario = Scenario(component="tun", frames=(frame,),
                        program=({"op": "adjust_tail", "delta": grow},
                                 {"op": "adjust_tail", "delta": 1}))
    ops = tun_component.expected(scenario)["packets"][0]["ops"]
    assert [o["rc"] for o in ops] == [0, -errno.EINVAL]


@pytest.mark.rule("TUN-KF-001")
def test_tun_kfuncs_are_unsupported() -> None:
    scenario = Scenario(component="tun", frames=(udp(),),
                        program=tuple({"op": "kfunc", "name": n}
                                      for n in ("rx_timestamp", "rx_hash", "rx_vlan_tag")))
    ops = tun_component.expected(scenario)["packets"][0]["ops"]
    assert ops == [
        {"op": "kfunc", "name": "rx_timestamp", "rc": -95, "timestamp": None},
        {"op": "kfunc", "name": "rx_hash", "rc": -95, "hash": None, "rss_type": None},
        {"op": "kfunc", "name": "rx_vlan_tag", "rc": -95, "vlan_proto": None, "vlan_tci": None},
    ]


@pytest.mark.rule("VETH-KF-006")
def test_rx_hash_reads_the_program_stores_once() -> None:
    frame = udp(1, 2)
    frag = {"op": "write", "offset": 20, "data": "01"}  # IPv4 fragment offset 256 bytes
    unfrag = {"op": "write", "offset": 20, "data": "00"}
    rx_hash = {"op": "kfunc", "name": "rx_hash"}

    def types(*program: Mapping[str, object]) -> list[int]:
        scenario = Scenario(component="veth", frames=(frame,), program=program)
        ops = veth_component.expected(scenario)["packets"][0]["ops"]
        return [o["rss_type"] for o in ops if o["op"] == "kfunc"]

    assert types(rx_hash, frag, rx_hash) == [8, 8]  # cached before the store
    assert types(frag, rx_hash, unfrag, rx_hash) == [0, 0]  # the store is seen, then cached
    assert types({"op": "adjust_head", "delta": 14}, rx_hash) == [8]  # offsets fixed at entry
    assert types({"op": "write", "offset": 12, "data": "86dd"}, rx_hash) == [8]  # protocol too


@pytest.mark.rule("VETH-KF-003")
def test_out_of_band_tag_in_scenarios() -> None:
    program = ({"op": "kfunc", "name": "rx_vlan_tag"},)
    tagged = Scenario(component="veth", config={"oob_vlan": {"proto": 0x88A8, "tci": 0xA064}},
                      frames=(udp(),), program=program)
    packet = veth_component.expected(tagged)["packets"][0]
    assert packet["ops"] == [{"op": "kfunc", "name": "rx_vlan_tag", "rc": 0,
                              "vlan_proto": 0x88A8, "vlan_tci": 0xA064}]
    assert packet["data"] == udp()  # the tag is not in the bytes
    wrong = Scenario(component="veth", config={"oob_vlan": {"proto": 0x9100, "tci": 1}},
                     frames=(udp(),), program=program)
    with pytest.raises(InvalidConfig):
        veth_component.expected(wrong)


@pytest.mark.rule("VETH-KF-007")
def test_af_packet_network_offset_skips_in_band_tags() -> None:
    from reference.flow_dissector import af_packet_network_offset

    base = udp()
    tag = veth_component._inband
    assert af_packet_network_offset(base) == 14
    assert af_packet_network_offset(tag(base, [(0x8100, 5)])) == 18
    assert af_packet_network_offset(tag(base, [(0x88A8, 5), (0x8100, 6)])) == 22
    seven = tag(base, [(0x8100, i) for i in range(7)])
    assert af_packet_network_offset(seven) == 14 + 28
    eight = tag(base, [(0x8100, i) for i in range(8)])
    assert af_packet_network_offset(eight) == 14  # __vlan_get_protocol_offset gives up
    assert af_packet_network_offset(base[:12] + b"\x81\x00\x00") == 14  # tag cut off
    assert af_packet_network_offset(tag(base, [(0x9100, 5)])) == 14  # not eth_type_vlan


@pytest.mark.rule("VETH-KF-007")
def test_vlan_keys_hand_worked() -> None:
    frame = udp(1000, 2000)
    oob = veth.flow_dissect(frame, veth.VethSkb(frame, vlan_present=True, vlan_proto=0x88A8,
                                                 vlan_tci=0xB064))
    # Out of band: VID 100, PCP 5 (DEI dropped), the TPID, skb->protocol after it; the
    # rest as untagged, so the hash stays L4.
    assert oob.vlan == FlowVlan(100, 5, 0x88A8, 0x0800)
    assert (oob.ip_proto, oob.ports, oob.has_l4) == (17, (1000 << 16) | 2000, True)
    # In band (AF_PACKET): the walk starts at 0x8100 from the network header, which
    # AF_PACKET put past the tag, so the IPv4 header's first word is read as the tag:
    # 0x4500 -> VID 0x500, PCP 2; then the total length (28) as the ethertype.
    tagged = veth_component._inband(frame, [(0x8100, 0xFFFF)])
    keys = veth.flow_dissect(tagged, veth.VethSkb(tagged))
    assert keys.vlan == FlowVlan(0x500, 2, 0x8100, 28)
    assert (keys.n_proto, keys.addrs, keys.ports, keys.has_l4) == (28, None, 0, False)


@pytest.mark.rule("VETH-KF-002")
def test_dissector_details() -> None:
    from scapy.layers.inet6 import IPv6ExtHdrFragment

    from reference.flow_dissector import eth_type_trans_protocol

    # IPv6 fragment: ip_proto is the fragment header's next header, no ports.
    frag = bytes(ETH / IPv6() / IPv6ExtHdrFragment(offset=0, m=1) / UDP(sport=1, dport=2))
    keys = veth.flow_dissect(frag)
    assert (keys.ip_proto, keys.fragment, keys.ports) == (17, True, 0)
    # IP-in-IP: the inner header's addresses and ports.
    ipip = bytes(ETH / IP(src="9.9.9.9", dst="8.8.8.8") / IP(src="1.1.1.1", dst="2.2.2.2")
                 / UDP(sport=3, dport=4))
    inner = veth.flow_dissect(ipip)
    assert inner.addrs == (bytes([1] * 4), bytes([2] * 4)) and inner.ports == (3 << 16) | 4
    # A length field: eth_type_trans's 802.3/802.2 protocol, whatever the length.
    assert eth_type_trans_protocol(bytes(12) + b"\x00\x40" + b"\xff\xff") == 0x0001
    assert eth_type_trans_protocol(bytes(12) + b"\x00\x40" + b"\xaa\xaa") == 0x0004
    a, b = bytes(12) + b"\x00\x40" + bytes(40), bytes(12) + b"\x00\x50" + bytes(40)
    assert veth.flow_key_hash(veth.flow_dissect(a)) == veth.flow_key_hash(veth.flow_dissect(b))
    # GRE is outside the model: rx_hash refuses the scenario.
    gre = bytes(ETH / IP(proto=47) / b"\x00\x00\x08\x00" / IP())
    assert not veth.flow_dissect(gre).covered
    scenario = Scenario(component="veth", frames=(gre,),
                        program=({"op": "kfunc", "name": "rx_hash"},))
    with pytest.raises(InvalidConfig):
        veth_component.expected(scenario)


@pytest.mark.rule("VETH-MTU-001")
def test_attach_outcome_sets_the_peer_max_mtu() -> None:
    """A successful attach leaves the peer's max_mtu at the limit it checked (frags: 17
    more pages, above the veth range); a refusal leaves ETH_MAX_MTU (no program)."""
    assert veth.veth_xdp_attach(3506) == veth.AttachOutcome(0, 3506)
    assert veth.veth_xdp_attach(3507) == veth.AttachOutcome(-errno.ERANGE, 65535)
    assert veth.veth_xdp_attach(65535, has_frags=True) == veth.AttachOutcome(0, 73138)

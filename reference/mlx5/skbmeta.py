"""What ``mlx5e_build_rx_skb`` writes into an skb besides the bytes (SPEC: MLX5-CSUM-*,
MLX5-SKB-*): the checksum verdict, the hash and its level, the VLAN tag, the mark, the
hardware timestamp, the protocol and the packet type.

Read beside ``en_rx.c`` (v6.17-rc3): ``mlx5e_build_rx_skb``, ``mlx5e_handle_csum``,
``mlx5e_skb_csum_fixup``, ``tail_padding_csum``, ``is_last_ethertype_ip``,
``mlx5e_skb_set_hash``; ``include/linux/if_vlan.h: __vlan_get_protocol_offset`` and
``net/ethernet/eth.c: eth_type_trans``.

The skb is given as its bytes from the Ethernet header on (linear part and fragments
joined: every helper used here reads across fragments the same way), so the result does
not depend on which builder made it.
"""

from __future__ import annotations

import enum
import functools

import attrs

from reference import checksum
from reference.checksum import IpSummed
from reference.errors import MalformedInput
from reference.mlx5 import cqe as C
from reference.mlx5.counters import Mlx5eRqStats
from reference.mlx5.kfuncs import (
    NETIF_F_RXHASH,
    real_time_cyc2time,
    timecounter_cyc2time,
)
from reference.packet import ETH_P_8021AD, ETH_P_8021Q, ETH_P_IP, ETH_P_IPV6
from reference.trace import Trace, emit

ETH_HLEN = 14
ETH_ZLEN = 60
ETH_FCS_LEN = 4
VLAN_HLEN = 4
#: ``include/linux/if_vlan.h``: the most nested tags ``__vlan_get_protocol`` walks.
VLAN_MAX_DEPTH = 8
#: ``en_rx.c``: longer tails go through ``tail_padding_csum_slow``.
MAX_PADDING = 8
IPPROTO_SCTP = 132
#: ``en_tc.h``: the bits of ``sop_drop_qpn`` that become ``skb->mark``.
MLX5E_TC_FLOW_ID_MASK = 0x0000FFFF
#: ``include/uapi/linux/if_ether.h``: values at or above this are EtherTypes.
ETH_P_802_3_MIN = 0x0600
ETH_P_802_3 = 0x0001
ETH_P_802_2 = 0x0004
NETIF_F_RXCSUM = "NETIF_F_RXCSUM"


class PktHashType(enum.IntEnum):
    """``enum pkt_hash_types`` (include/linux/skbuff.h)."""

    PKT_HASH_TYPE_NONE = 0
    PKT_HASH_TYPE_L2 = 1
    PKT_HASH_TYPE_L3 = 2
    PKT_HASH_TYPE_L4 = 3


class PktType(enum.IntEnum):
    """``PACKET_*`` of ``skb->pkt_type`` (include/uapi/linux/if_packet.h)."""

    PACKET_HOST = 0
    PACKET_BROADCAST = 1
    PACKET_MULTICAST = 2
    PACKET_OTHERHOST = 3


@attrs.frozen
class RqState:
    """The RQ state bits and netdev features the verdict depends on (MLX5-CSUM-003/007)."""

    rxcsum: bool = True  # NETIF_F_RXCSUM
    no_csum_complete: bool = False  # MLX5E_RQ_STATE_NO_CSUM_COMPLETE
    csum_full: bool = False  # MLX5E_RQ_STATE_CSUM_FULL


@functools.cache  # an RqState is immutable, and the RX path asks for it per packet
def rq_state(*, rxcsum: bool, xdp_prog: bool, pflag_no_csum_complete: bool,
             cqe_checksum_full: bool) -> RqState:
    """MLX5-CSUM-003: ``mlx5e_open_rq`` sets NO_CSUM_COMPLETE for the private flag or when
    an XDP program is attached, and CSUM_FULL when the device has the capability."""
    return RqState(rxcsum=rxcsum, no_csum_complete=pflag_no_csum_complete or xdp_prog,
                   csum_full=cqe_checksum_full)


@attrs.frozen
class CsumVerdict:
    ip_summed: IpSummed
    #: ``skb->csum`` folded to 16 bits (not complemented); only for CHECKSUM_COMPLETE.
    csum: int | None = None
    csum_level: int = 0
    encapsulation: bool = False


def _be16(data: bytes, offset: int) -> int:
    return (data[offset] << 8) | data[offset + 1]


def is_last_ethertype_ip(data: bytes) -> tuple[bool, int, int]:
    """MLX5-CSUM-005: ``(is IP, EtherType, network_depth)`` as the driver finds them.

    ``__vlan_get_protocol`` runs with ``mac_len`` = ETH_HLEN (set just before), so its
    first step re-reads the outer EtherType at offset 10 and each further step one tag;
    it gives up (type 0) on its eighth step, so at most six tags in the packet are
    walked.  ``pskb_may_pull`` then needs the whole fixed IP header to be present.
    """
    proto = _be16(data, 12)
    depth = ETH_HLEN  # skb->mac_len
    if proto in (ETH_P_8021Q, ETH_P_8021AD):
        depth = ETH_HLEN - VLAN_HLEN
        steps = VLAN_MAX_DEPTH
        while True:
            steps -= 1
            if depth + VLAN_HLEN > len(data) or steps == 0:
                return False, 0, 0
            proto = _be16(data, depth + 2)
            depth += VLAN_HLEN
            if proto not in (ETH_P_8021Q, ETH_P_8021AD):
                break
    if proto == ETH_P_IP:
        return depth + 20 <= len(data), proto, depth
    if proto == ETH_P_IPV6:
        return depth + 40 <= len(data), proto, depth
    return False, proto, depth


def _ip_proto(data: bytes, depth: int, proto: int) -> int:
    """``get_ip_proto``: IPv4 ``protocol`` or the IPv6 header's own ``nexthdr``."""
    return data[depth + 9] if proto == ETH_P_IP else data[depth + 6]


def mlx5e_handle_csum(cqe: C.mlx5_cqe64, state: RqState, data: bytes, stats: Mlx5eRqStats,
                      trace: Trace | None = None) -> CsumVerdict:
    """MLX5-CSUM-001..010: the ``ip_summed`` decision for one skb of ``data``."""
    if not state.rxcsum:
        emit(trace, "MLX5-CSUM-001", "NETIF_F_RXCSUM off: CHECKSUM_NONE")
        stats.csum_none += 1
        return CsumVerdict(IpSummed.CHECKSUM_NONE)
    if C.get_cqe_lro_num_seg(cqe):
        emit(trace, "MLX5-CSUM-002", "LRO session: CHECKSUM_UNNECESSARY")
        stats.csum_unnecessary += 1
        return CsumVerdict(IpSummed.CHECKSUM_UNNECESSARY)
    if state.no_csum_complete or C.get_cqe_tls_offload(cqe):
        emit(trace, "MLX5-CSUM-003", "no CHECKSUM_COMPLETE on this RQ or for TLS")
        return _unnecessary_or_none(cqe, stats, trace)
    if len(data) <= ETH_ZLEN + ETH_FCS_LEN:
        emit(trace, "MLX5-CSUM-004", "short frame", len=len(data))
        return _unnecessary_or_none(cqe, stats, trace)
    is_ip, proto, depth = is_last_ethertype_ip(data)
    if not is_ip:
        emit(trace, "MLX5-CSUM-005", "last EtherType is not IP", proto=proto)
        return _unnecessary_or_none(cqe, stats, trace)
    if _ip_proto(data, depth, proto) == IPPROTO_SCTP:
        emit(trace, "MLX5-CSUM-006", "SCTP: the CRC is not a one's-complement sum")
        return _unnecessary_or_none(cqe, stats, trace)
    stats.csum_complete += 1
    csum = checksum.csum_unfold(cqe.check_sum)
    emit(trace, "MLX5-CSUM-007", "CHECKSUM_COMPLETE from check_sum", check_sum=cqe.check_sum)
    if not state.csum_full:
        csum = _csum_fixup(data, depth, proto, csum, stats, trace)
    return CsumVerdict(IpSummed.CHECKSUM_COMPLETE, _fold16(csum))


def _fold16(csum: int) -> int:
    """A 32-bit ``__wsum`` as the 16-bit one's-complement sum it stands for."""
    return (~checksum.csum_fold(csum)) & 0xFFFF


def _csum_fixup(data: bytes, depth: int, proto: int, csum: int, stats: Mlx5eRqStats,
                trace: Trace | None) -> int:
    """``mlx5e_skb_csum_fixup``: add what the CQE sum leaves out."""
    if depth > ETH_HLEN:
        # MLX5-CSUM-008: the tags between the Ethernet header and the IP header.
        csum = checksum.csum_partial(data[ETH_HLEN:depth], csum)
        emit(trace, "MLX5-CSUM-008", "added in-packet VLAN headers", bytes=depth - ETH_HLEN)
    if proto == ETH_P_IP:
        pkt_len = depth + _be16(data, depth + 2)
    else:
        pkt_len = depth + 40 + _be16(data, depth + 4)
    if pkt_len >= len(data):
        return csum
    # MLX5-CSUM-009: Ethernet padding after the IP packet, at its offset in the frame.
    tail = len(data) - pkt_len
    if tail > MAX_PADDING:
        stats.csum_complete_tail_slow += 1
    else:
        stats.csum_complete_tail += 1
    emit(trace, "MLX5-CSUM-009", "added tail padding", offset=pkt_len, bytes=tail,
         slow=tail > MAX_PADDING)
    return checksum.csum_block_add(csum, checksum.csum_partial(data[pkt_len:]), pkt_len)


def _unnecessary_or_none(cqe: C.mlx5_cqe64, stats: Mlx5eRqStats,
                         trace: Trace | None) -> CsumVerdict:
    """MLX5-CSUM-010: the ``csum_unnecessary`` label."""
    if cqe.hds_ip_ext & C.CQE_L3_OK and cqe.hds_ip_ext & C.CQE_L4_OK:
        if C.cqe_is_tunneled(cqe):
            stats.csum_unnecessary_inner += 1
            emit(trace, "MLX5-CSUM-010", "L3 and L4 OK, tunneled: inner level")
            return CsumVerdict(IpSummed.CHECKSUM_UNNECESSARY, csum_level=1, encapsulation=True)
        stats.csum_unnecessary += 1
        emit(trace, "MLX5-CSUM-010", "L3 and L4 OK: CHECKSUM_UNNECESSARY")
        return CsumVerdict(IpSummed.CHECKSUM_UNNECESSARY)
    stats.csum_none += 1
    emit(trace, "MLX5-CSUM-010", "no L3/L4 verdict: CHECKSUM_NONE")
    return CsumVerdict(IpSummed.CHECKSUM_NONE)


def eth_type_trans(data: bytes, dev_addr: bytes) -> tuple[int, PktType]:
    """MLX5-SKB-005: ``eth_type_trans``: the protocol and the packet type by destination."""
    dst = data[0:6]
    # eth_skb_pkt_type: the netdev's own address wins before the group bit is looked at.
    if dst == dev_addr:
        pkt_type = PktType.PACKET_HOST
    elif dst[0] & 1:
        pkt_type = (PktType.PACKET_BROADCAST if dst == b"\xff" * 6
                    else PktType.PACKET_MULTICAST)
    else:
        pkt_type = PktType.PACKET_OTHERHOST
    h_proto = _be16(data, 12)
    if h_proto >= ETH_P_802_3_MIN:
        return h_proto, pkt_type
    if len(data) >= ETH_HLEN + 2 and data[ETH_HLEN:ETH_HLEN + 2] == b"\xff\xff":
        return ETH_P_802_3, pkt_type
    return ETH_P_802_2, pkt_type


def skb_hash(cqe: C.mlx5_cqe64) -> tuple[int, PktHashType]:
    """MLX5-SKB-001: ``mlx5e_skb_set_hash``: the level from the CQE's hash type bits."""
    cht = cqe.rss_hash_type
    level = (PktHashType.PKT_HASH_TYPE_L4 if cht & 0xC0
             else PktHashType.PKT_HASH_TYPE_L3 if cht & C.CQE_RSS_HTYPE_IP
             else PktHashType.PKT_HASH_TYPE_NONE)
    return cqe.rss_hash_result, level


def mlx5e_build_rx_skb(cqe: C.mlx5_cqe64, data: bytes, *, features: frozenset[str],
                       state: RqState, hwtstamp_rx_all: bool, real_time: bool,
                       dev_addr: bytes, stats: Mlx5eRqStats,
                       trace: Trace | None = None) -> dict[str, object]:
    """MLX5-SKB-001..005 and the checksum verdict, in the order the driver sets them."""
    if len(data) < ETH_HLEN:
        raise MalformedInput("an skb reaching eth_type_trans holds an Ethernet header",
                             field="skb.len", value=len(data), rule="MLX5-SKB-005")
    meta: dict[str, object] = {}
    if hwtstamp_rx_all:  # MLX5-SKB-004
        ts = C.get_cqe_ts(cqe)
        meta["hwtstamp"] = real_time_cyc2time(ts) if real_time else timecounter_cyc2time(ts)
    else:
        meta["hwtstamp"] = None
    if NETIF_F_RXHASH in features:  # MLX5-SKB-001
        h, level = skb_hash(cqe)
        level_name = level.name
        meta.update(hash=h, l4_hash=level is PktHashType.PKT_HASH_TYPE_L4,
                    hash_type=level_name)
        emit(trace, "MLX5-SKB-001", "skb hash", hash=h, level=level_name)
    else:
        meta.update(hash=0, l4_hash=False, hash_type=None)
    if C.cqe_has_vlan(cqe):  # MLX5-SKB-002
        meta.update(vlan_present=True, vlan_proto=ETH_P_8021Q, vlan_tci=cqe.vlan_info)
        stats.removed_vlan_packets += 1
        emit(trace, "MLX5-SKB-002", "hw-accel VLAN tag", tci=cqe.vlan_info)
    else:
        meta.update(vlan_present=False, vlan_proto=0, vlan_tci=0)
    meta["mark"] = cqe.sop_drop_qpn & MLX5E_TC_FLOW_ID_MASK  # MLX5-SKB-003
    verdict = mlx5e_handle_csum(cqe, state, data, stats, trace)
    meta.update(ip_summed=verdict.ip_summed.name, csum=verdict.csum,
                csum_level=verdict.csum_level, encapsulation=verdict.encapsulation)
    protocol, pkt_type = eth_type_trans(data, dev_addr)  # MLX5-SKB-005
    pkt_type_name = pkt_type.name
    meta.update(protocol=protocol, pkt_type=pkt_type_name)
    if pkt_type in (PktType.PACKET_MULTICAST, PktType.PACKET_BROADCAST):
        stats.mcast_packets += 1
    emit(trace, "MLX5-SKB-005", "eth_type_trans", protocol=protocol, pkt_type=pkt_type_name)
    return meta

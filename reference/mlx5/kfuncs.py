"""mlx5e's XDP RX-metadata kfuncs, ``mlx5e_xdp_metadata_ops`` (SPEC: MLX5-KF-*).

Each kfunc gets the program's context, which the driver knows is its per-RQ
:class:`~reference.mlx5.xdp.Mlx5eXdpBuff`, and reads the completion through that
buffer's ``cqe`` pointer (``en/xdp.c``, v6.17-rc3).  For a packet of a compressed
session that pointer is the RQ's decompression title as the CQ reader rewrote it for
this packet (MLX5-KF-003), so what the kfuncs report is whatever
:mod:`reference.mlx5.cq` handed to the RX handler.
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, Any

from reference.kfuncs import MetadataOps, RxHash, RxTimestamp, RxVlanTag
from reference.kfuncs import XdpRssHashType as R
from reference.mlx5 import cqe as C
from reference.mlx5.device import TsFormat

if TYPE_CHECKING:
    from reference.mlx5.xdp import Mlx5eXdpBuff

NSEC_PER_SEC = 1_000_000_000
ETH_P_8021Q = 0x8100
#: ``NETIF_F_RXHASH`` as a feature name; the model's netdev keeps a set of names.
NETIF_F_RXHASH = "rxhash"

#: MLX5-KF-002: ``mlx5_xdp_rss_type[]``, indexed by (CQE IP type bits 3:2) | (CQE L4
#: type bits 7:6 shifted down).  Index 1-3 (no IP) and 12-15 (reserved IP) are zero.
MLX5_XDP_RSS_TYPE: tuple[int, ...] = (
    R.XDP_RSS_TYPE_NONE, R.XDP_RSS_TYPE_NONE, R.XDP_RSS_TYPE_NONE, R.XDP_RSS_TYPE_NONE,
    R.XDP_RSS_TYPE_L3_IPV4, R.XDP_RSS_TYPE_L4_IPV4_TCP, R.XDP_RSS_TYPE_L4_IPV4_UDP,
    R.XDP_RSS_TYPE_L4_IPV4_IPSEC,
    R.XDP_RSS_TYPE_L3_IPV6, R.XDP_RSS_TYPE_L4_IPV6_TCP, R.XDP_RSS_TYPE_L4_IPV6_UDP,
    R.XDP_RSS_TYPE_L4_IPV6_IPSEC,
    R.XDP_RSS_TYPE_NONE, R.XDP_RSS_TYPE_NONE, R.XDP_RSS_TYPE_NONE, R.XDP_RSS_TYPE_NONE,
)  # fmt: skip

CQE_RSS_HTYPE_L4 = 0xC0  # GENMASK(7, 6)


def rss_lookup(rss_hash_type: int) -> int:
    """MLX5-KF-002: the 4-bit table index: IP bits stay at 3:2, L4 bits move to 1:0."""
    return (rss_hash_type & C.CQE_RSS_HTYPE_IP) | ((rss_hash_type & CQE_RSS_HTYPE_L4) >> 6)


def _ctx(ctx: Any) -> Mlx5eXdpBuff:
    from reference.mlx5.xdp import Mlx5eXdpBuff

    if not isinstance(ctx, Mlx5eXdpBuff) or ctx.cqe is None or ctx.rq is None:
        raise TypeError("mlx5e kfuncs run only on an mlx5e_xdp_buff filled for a packet")
    return ctx


def mlx5e_xdp_rx_hash(ctx: Any) -> RxHash:
    """MLX5-KF-002: -ENODATA without NETIF_F_RXHASH; else the CQE's hash and mapped type.

    A type of NONE is still success (rc 0): there is no "no hash" errno here
    (MLX5-KF-003).
    """
    mx = _ctx(ctx)
    assert mx.cqe is not None and mx.rq is not None
    if NETIF_F_RXHASH not in mx.rq.netdev_features:
        return RxHash(-errno.ENODATA)
    return RxHash(0, mx.cqe.rss_hash_result,
                  int(MLX5_XDP_RSS_TYPE[rss_lookup(mx.cqe.rss_hash_type)]))


def real_time_cyc2time(ts: int) -> int:
    """MLX5-KF-004: real-time format: seconds in the high word, nanoseconds in the low."""
    return (ts >> 32) * NSEC_PER_SEC + (ts & 0xFFFF_FFFF)


def timecounter_cyc2time(ts: int) -> int:
    """MLX5-KF-005 (model convention): the free-running counter through a model
    timecounter that started at 0 ns at cycle 0 and ticks 1 ns per cycle."""
    return ts & 0xFFFF_FFFF_FFFF_FFFF


def mlx5e_xdp_rx_timestamp(ctx: Any) -> RxTimestamp:
    """MLX5-KF-004/005: -ENODATA unless the RQ's hwtstamp rx_filter is ALL; else the CQE
    timestamp converted by the RQ's translator."""
    mx = _ctx(ctx)
    assert mx.cqe is not None and mx.rq is not None
    if not mx.rq.hwtstamp_rx_all:
        return RxTimestamp(-errno.ENODATA)
    ts = C.get_cqe_ts(mx.cqe)
    if mx.rq.ts_format is TsFormat.REAL_TIME:
        return RxTimestamp(0, real_time_cyc2time(ts))
    return RxTimestamp(0, timecounter_cyc2time(ts))


def mlx5e_xdp_rx_vlan_tag(ctx: Any) -> RxVlanTag:
    """MLX5-KF-006: -ENODATA unless the CQE says a tag was stripped; else proto 0x8100
    (always) and the full 16-bit TCI from ``vlan_info``."""
    mx = _ctx(ctx)
    assert mx.cqe is not None
    if not C.cqe_has_vlan(mx.cqe):
        return RxVlanTag(-errno.ENODATA)
    return RxVlanTag(0, ETH_P_8021Q, mx.cqe.vlan_info)


#: MLX5-KF-001: ``mlx5e_xdp_metadata_ops``: all three members implemented.
MLX5E_XDP_METADATA_OPS = MetadataOps(
    xmo_rx_timestamp=mlx5e_xdp_rx_timestamp,
    xmo_rx_hash=mlx5e_xdp_rx_hash,
    xmo_rx_vlan_tag=mlx5e_xdp_rx_vlan_tag,
)

"""mlx5e software counters the RX/XDP path touches (SPEC: MLX5-STATS-*).

The driver keeps per-RQ ``struct mlx5e_rq_stats`` and per-XDP-SQ ``struct
mlx5e_xdpsq_stats``; ethtool reports their sums under the ``sw_stats_desc`` names of
``en_stats.c`` (v6.17-rc3).  :func:`ethtool` maps the model's fields to those names.
"""

from __future__ import annotations

import attrs


@attrs.define
class Mlx5eRqStats:
    """The ``struct mlx5e_rq_stats`` fields the model updates."""

    packets: int = 0
    bytes: int = 0
    xdp_drop: int = 0
    xdp_redirect: int = 0
    wqe_err: int = 0
    mpwqe_filler_cqes: int = 0
    mpwqe_filler_strides: int = 0
    oversize_pkts_sw_drop: int = 0
    removed_vlan_packets: int = 0
    csum_unnecessary: int = 0
    csum_none: int = 0
    csum_complete: int = 0
    csum_complete_tail: int = 0
    csum_complete_tail_slow: int = 0
    csum_unnecessary_inner: int = 0
    #: Counted by ``mlx5e_build_rx_skb`` but in no ethtool string of v6.17.
    mcast_packets: int = 0


@attrs.define
class Mlx5eXdpsqStats:
    """``struct mlx5e_xdpsq_stats`` of the RQ's own XDP-SQ (the ``rx_xdp_tx_*`` group)."""

    xmit: int = 0
    full: int = 0
    err: int = 0
    cqes: int = 0


#: MLX5-STATS-001: ethtool name -> (group, field).  ``rx_xdp_tx_cqe`` is the one name
#: whose field differs in spelling (``cqes``).
ETHTOOL_NAMES: tuple[tuple[str, str, str], ...] = (
    ("rx_packets", "rq", "packets"),
    ("rx_bytes", "rq", "bytes"),
    ("rx_removed_vlan_packets", "rq", "removed_vlan_packets"),
    ("rx_csum_unnecessary", "rq", "csum_unnecessary"),
    ("rx_csum_none", "rq", "csum_none"),
    ("rx_csum_complete", "rq", "csum_complete"),
    ("rx_csum_complete_tail", "rq", "csum_complete_tail"),
    ("rx_csum_complete_tail_slow", "rq", "csum_complete_tail_slow"),
    ("rx_csum_unnecessary_inner", "rq", "csum_unnecessary_inner"),
    ("rx_xdp_drop", "rq", "xdp_drop"),
    ("rx_xdp_redirect", "rq", "xdp_redirect"),
    ("rx_xdp_tx_xmit", "xdpsq", "xmit"),
    ("rx_xdp_tx_full", "xdpsq", "full"),
    ("rx_xdp_tx_err", "xdpsq", "err"),
    ("rx_xdp_tx_cqe", "xdpsq", "cqes"),
    ("rx_wqe_err", "rq", "wqe_err"),
    ("rx_mpwqe_filler_cqes", "rq", "mpwqe_filler_cqes"),
    ("rx_mpwqe_filler_strides", "rq", "mpwqe_filler_strides"),
    ("rx_oversize_pkts_sw_drop", "rq", "oversize_pkts_sw_drop"),
)


def ethtool(rq: Mlx5eRqStats, xdpsq: Mlx5eXdpsqStats) -> dict[str, int]:
    """MLX5-STATS-001: the counters under their ethtool names, in ``sw_stats_desc`` order."""
    groups: dict[str, object] = {"rq": rq, "xdpsq": xdpsq}
    return {name: int(getattr(groups[group], field)) for name, group, field in ETHTOOL_NAMES}

"""The counters fec keeps: netdev stats, per-queue XDP stats and the ethtool view
(FEC-STATS-001 .. FEC-STATS-004).

``fec_xdp_stat_strs`` and the ``RX_XDP_*`` / ``TX_XDP_*`` enum are from
``fec_main.c`` / ``fec.h`` (v6.17-rc3).  The hardware MIB counters (``fec_stats[]``) are
device registers and are not modelled.
"""

from __future__ import annotations

import attrs

from reference.page_pool.stats import PagePoolStats, ethtool_stats

# enum in fec.h: index of each per-queue XDP counter (FEC-STATS-003).
RX_XDP_REDIRECT = 0
RX_XDP_PASS = 1
RX_XDP_DROP = 2
RX_XDP_TX = 3
RX_XDP_TX_ERRORS = 4
TX_XDP_XMIT = 5
TX_XDP_XMIT_ERRORS = 6
XDP_STATS_TOTAL = 7

#: ``fec_xdp_stat_strs``, in enum order (FEC-STATS-003).
FEC_XDP_STAT_STRS: tuple[str, ...] = (
    "rx_xdp_redirect", "rx_xdp_pass", "rx_xdp_drop", "rx_xdp_tx", "rx_xdp_tx_errors",
    "tx_xdp_xmit", "tx_xdp_xmit_errors",
)


@attrs.define
class NetStats:
    """The ``ndev->stats`` fields fec's RX and TX paths touch (FEC-STATS-001), each from
    zero: the RX error counters are moved by FEC-RX-004, ``rx_packets`` and ``rx_bytes``
    by FEC-RX-005, ``rx_dropped`` by FEC-RX-006, the TX ones and ``collisions`` by
    FEC-STATS-002."""

    rx_packets: int = 0
    rx_bytes: int = 0
    rx_errors: int = 0
    rx_fifo_errors: int = 0
    rx_length_errors: int = 0
    rx_crc_errors: int = 0
    rx_frame_errors: int = 0
    rx_dropped: int = 0
    tx_packets: int = 0
    tx_bytes: int = 0
    tx_errors: int = 0
    tx_heartbeat_errors: int = 0
    tx_window_errors: int = 0
    tx_aborted_errors: int = 0
    tx_fifo_errors: int = 0
    tx_carrier_errors: int = 0
    collisions: int = 0

    def as_dict(self) -> dict[str, int]:
        return attrs.asdict(self)


def new_xdp_stats() -> list[int]:
    """``rxq->stats``: seven u32 counters, zeroed (kzalloc)."""
    return [0] * XDP_STATS_TOTAL


def bump(stats: list[int], index: int) -> None:
    """``rxq->stats[index]++`` on a u32."""
    stats[index] = (stats[index] + 1) & 0xFFFFFFFF


def ethtool_xdp_and_pp(xdp_stats: list[list[int]], pp: PagePoolStats) -> dict[str, int]:
    """The XDP and page_pool part of ``fec_enet_get_ethtool_stats`` (FEC-STATS-004):
    each XDP counter summed over the RX queues, then the 11 ``rx_pp_*`` counters of all
    pools accumulated into one struct."""
    out = {name: sum(q[i] for q in xdp_stats) for i, name in enumerate(FEC_XDP_STAT_STRS)}
    out.update(ethtool_stats(pp))
    return out

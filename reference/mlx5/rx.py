"""mlx5e's RX handlers with XDP: from a completion to an skb or an XDP verdict
(SPEC: MLX5-RX-*, MLX5-XDP-*).

Models ``mlx5e_handle_rx_cqe`` / ``mlx5e_handle_rx_cqe_mpwrq`` and the four buffer
builders of ``en_rx.c`` (v6.17-rc3): ``mlx5e_skb_from_cqe_linear``, ``_nonlinear``,
``_mpwrq_linear`` and ``_mpwrq_nonlinear``.  All of them use the RQ's one
:class:`~reference.mlx5.xdp.Mlx5eXdpBuff` (MLX5-XDP-001/002).

Memory is modelled per packet: each receive buffer is a fresh zeroed
:class:`~reference.xdp.memory.Page` of ``PAGE_SIZE`` holding the packet at the offset
the driver would use (model convention, MLX5-RX-004); page_pool recycling is reported
as a page fate, not simulated.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from reference.errors import InvalidConfig, StateViolation
from reference.flow_dissector import ETH_HLEN, eth_get_headlen
from reference.kernel import DEFAULT_KERNEL, KernelVersion, gate
from reference.mlx5 import cqe as C
from reference.mlx5 import xdp as X
from reference.mlx5.counters import Mlx5eRqStats, ethtool
from reference.mlx5.cq import Mlx5eRxCq, PollResult
from reference.mlx5.device import Completion, DeviceConfig, Mlx5Device, RqType, TsFormat, new_ring
from reference.mlx5.kfuncs import NETIF_F_RXHASH
from reference.mlx5.sim import rq_params
from reference.mlx5.skbmeta import NETIF_F_RXCSUM, RqState, mlx5e_build_rx_skb, rq_state
from reference.trace import Trace, emit
from reference.xdp.arch import X86_64
from reference.xdp.buff import XdpBuff, xdp_buff_add_frag, xdp_get_shared_info_from_buff
from reference.xdp.mem import MemType
from reference.xdp.memory import Page
from reference.xdp.rxq import NetDev, XdpRxqInfo

PAGE_SIZE = 4096
XDP_PACKET_HEADROOM = 256
#: ``MLX5E_RX_MAX_HEAD``: the linear part of a striding non-linear packet.
MLX5E_RX_MAX_HEAD = 256
#: ``ETH_HLEN + VLAN_HLEN + ETH_FCS_LEN``: what ``MLX5E_SW2HW_MTU`` adds to the MTU.
MLX5E_HARD_MTU = 14 + 4 + 4
#: ``NET_IP_ALIGN``: ``arch/x86/include/asm/processor.h`` defines it as 0 (the generic
#: default in ``include/linux/skbuff.h`` is 2).  The model assumes x86_64.
NET_IP_ALIGN = 0
#: ``NET_SKB_PAD`` = max(32, ``L1_CACHE_BYTES``) (``include/linux/skbuff.h``); x86_64's
#: L1 line is 64 bytes (``X86_L1_CACHE_SHIFT`` 6), so 64.  Also the headroom
#: ``napi_alloc_skb`` reserves (plus ``NET_IP_ALIGN``).
NET_SKB_PAD = max(32, X86_64.smp_cache_bytes)
#: ``MLX5_RX_HEADROOM`` (en.h): the RQ headroom without an XDP program.
MLX5_RX_HEADROOM = NET_SKB_PAD


def mlx5e_get_linear_rq_headroom(xdp_prog: bool) -> int:
    """MLX5-RX-005: ``en/params.c: mlx5e_get_linear_rq_headroom`` (no XSK):
    ``NET_IP_ALIGN`` plus ``XDP_PACKET_HEADROOM`` when the RQ is opened with a program,
    else plus ``MLX5_RX_HEADROOM``: 256 or 64 on x86_64.  ``mlx5e_alloc_rq`` stores it in
    ``rq->buff.headroom`` (through ``mlx5e_get_rq_headroom``) for the cyclic and the linear
    striding RQ."""
    return NET_IP_ALIGN + (XDP_PACKET_HEADROOM if xdp_prog else MLX5_RX_HEADROOM)

def mlx5e_rx_get_linear_sz_skb(mtu: int, xdp_prog: bool) -> int:
    """MLX5-RX-006: ``en/params.c: mlx5e_rx_get_linear_sz_skb`` (no XSK): the bytes one
    linear skb of ``hw_mtu`` takes, headroom and aligned shared info included."""
    return mlx5_skb_frag_sz(mlx5e_get_linear_rq_headroom(xdp_prog) + mtu + MLX5E_HARD_MTU)


def check_linear(cfg: RqConfig, xdp_prog: bool) -> None:
    """MLX5-RX-006: ``mlx5e_rx_is_linear_skb`` chooses a linear RQ only when a packet of
    ``hw_mtu`` fits one page with the RQ's headroom and the shared info; a linear RQ the
    kernel could not have opened is refused rather than simulated."""
    if cfg.linear and mlx5e_rx_get_linear_sz_skb(cfg.mtu, xdp_prog) > PAGE_SIZE:
        raise InvalidConfig(
            "a linear RQ needs MLX5_SKB_FRAG_SZ(headroom + hw_mtu) <= PAGE_SIZE "
            f"({mlx5e_rx_get_linear_sz_skb(cfg.mtu, xdp_prog)} with "
            f"{'a' if xdp_prog else 'no'} program): the kernel opens it non-linear",
            field="mtu", value=cfg.mtu, rule="MLX5-RX-006")


Ops = Sequence[Mapping[str, Any]]


def skb_data_align(n: int) -> int:
    return -(-n // X86_64.smp_cache_bytes) * X86_64.smp_cache_bytes


def mlx5_skb_frag_sz(n: int) -> int:
    """``MLX5_SKB_FRAG_SZ``: aligned length plus the aligned shared info."""
    return skb_data_align(n) + X86_64.shinfo_reserved


@attrs.frozen
class RqConfig:
    """The driver-side RQ settings the XDP path depends on."""

    rq_type: RqType = RqType.CYCLIC
    linear: bool = True  # mlx5e_rx_is_linear_skb / mlx5e_rx_mpwqe_is_linear_skb
    frag_size: int = 1024  # legacy non-linear: bytes per WQE fragment
    log_stride_sz: int = 6
    mtu: int = 1500
    rxhash: bool = True  # NETIF_F_RXHASH
    hwtstamp_rx_all: bool = False  # hwtstamp_config.rx_filter == HWTSTAMP_FILTER_ALL
    ts_format: TsFormat = TsFormat.FREE_RUNNING
    xdpsq_size: int = 1024  # WQEBBs, a power of two
    min_inline: bool = False
    redirect_ok: bool = True
    rxcsum: bool = True  # NETIF_F_RXCSUM
    pflag_no_csum_complete: bool = False  # ethtool private flag rx_no_csum_complete
    cqe_checksum_full: bool = False  # the device capability behind CSUM_FULL
    dev_addr: bytes = bytes.fromhex("020000000002")  # the netdev's MAC (eth_type_trans)
    #: KVER-001: the version the handlers behave as (MLX5-XDP-002, MLX5-RX-002 gates).
    kernel: KernelVersion = DEFAULT_KERNEL

    def __attrs_post_init__(self) -> None:
        if len(self.dev_addr) != 6:
            raise InvalidConfig("a MAC address is 6 bytes", field="dev_addr",
                                value=self.dev_addr.hex(), rule="MLX5-SKB-005")
        if self.xdpsq_size < 2 or self.xdpsq_size & (self.xdpsq_size - 1):
            raise InvalidConfig("the XDP-SQ size is a power of two >= 2", field="xdpsq_size",
                                value=self.xdpsq_size, rule="MLX5-XDP-008")
        if not 64 <= self.frag_size <= PAGE_SIZE - XDP_PACKET_HEADROOM - X86_64.shinfo_reserved:
            raise InvalidConfig("frag_size must fit a page after headroom and shared info",
                                field="frag_size", value=self.frag_size, rule="MLX5-XDP-002")

    @property
    def hw_mtu(self) -> int:
        return self.mtu + MLX5E_HARD_MTU


@functools.cache  # asked for per packet; the set is immutable
def _netdev_features(rxhash: bool, rxcsum: bool) -> frozenset[str]:
    return frozenset(name for name, on in ((NETIF_F_RXHASH, rxhash), (NETIF_F_RXCSUM, rxcsum))
                     if on)


@attrs.define(eq=False)
class Mlx5eRq:
    """The parts of ``struct mlx5e_rq`` the XDP path reads and writes."""

    cfg: RqConfig
    mxbuf: X.Mlx5eXdpBuff = attrs.field(factory=X.Mlx5eXdpBuff)
    stats: Mlx5eRqStats = attrs.field(factory=Mlx5eRqStats)
    xdp_rxq: XdpRxqInfo = attrs.field(factory=lambda: XdpRxqInfo(dev=NetDev(ifindex=2)))
    xdpsq: X.Mlx5eXdpsq = attrs.field(init=False)
    #: ``params->xdp_prog`` when the RQ was opened: a program is attached (MLX5-CSUM-003).
    xdp_prog: bool = False
    flag_xdp_xmit: bool = False  # MLX5E_RQ_FLAG_XDP_XMIT
    flag_xdp_redirect: bool = False  # MLX5E_RQ_FLAG_XDP_REDIRECT
    #: ``MLX5E_RQ_STATE_RECOVERING``: set by the first error CQE whose syndrome needs
    #: recovery (MLX5-RX-002); the recovery work itself is not modelled.
    recovering: bool = False
    redirect_flushes: int = 0
    pages: dict[str, int] = attrs.field(factory=lambda: {
        "recycled": 0, "tx_recycled": 0, "in_sq": 0, "to_stack": 0, "redirected": 0})

    def __attrs_post_init__(self) -> None:
        self.xdp_rxq.mem.type = MemType.MEM_TYPE_PAGE_POOL
        self.xdpsq = X.Mlx5eXdpsq(self.cfg.xdpsq_size, self.cfg.hw_mtu, self.cfg.min_inline)

    @property
    def netdev_features(self) -> frozenset[str]:
        """The features of the netdev behind ``xdp_rxq.dev`` (MLX5-KF-002, MLX5-CSUM-001)."""
        return _netdev_features(self.cfg.rxhash, self.cfg.rxcsum)

    @property
    def state(self) -> RqState:
        """MLX5-CSUM-003: the checksum state bits ``mlx5e_open_rq`` set."""
        return rq_state(rxcsum=self.cfg.rxcsum, xdp_prog=self.xdp_prog,
                        pflag_no_csum_complete=self.cfg.pflag_no_csum_complete,
                        cqe_checksum_full=self.cfg.cqe_checksum_full)

    def headroom(self, ops: Ops | None) -> int:
        """``rq->buff.headroom`` (MLX5-RX-005), fixed when the RQ is opened: with a
        program when ``xdp_prog`` says so, or when this packet runs one (an RQ only runs
        programs it was opened with)."""
        return mlx5e_get_linear_rq_headroom(self.xdp_prog or ops is not None)

    @property
    def hwtstamp_rx_all(self) -> bool:
        return self.cfg.hwtstamp_rx_all

    @property
    def ts_format(self) -> TsFormat:
        return self.cfg.ts_format

    # --- NAPI hooks ----------------------------------------------------------------------

    def poll_xdpsq(self, trace: Trace | None = None) -> None:
        """MLX5-RX-003: completions of the XDP-SQ, before the RX CQ is polled."""
        released = self.xdpsq.complete_all(trace)
        self.pages["tx_recycled"] += len(released)
        self.pages["in_sq"] -= len(released)

    def xdp_rx_poll_complete(self) -> None:
        """``mlx5e_xdp_rx_poll_complete``: flush redirects once per poll, clear the flag."""
        if self.flag_xdp_redirect:
            self.redirect_flushes += 1
            self.flag_xdp_redirect = False

    # --- per CQE ---------------------------------------------------------------------------

    def handle_cqe(self, cqe: C.mlx5_cqe64, data: bytes, ops: Ops | None,
                   trace: Trace | None = None) -> dict[str, Any]:
        """MLX5-RX-002: ``mlx5e_handle_rx_cqe`` / ``_mpwrq``: errors and fillers first."""
        rec: dict[str, Any] = {"kind": "packet", "mxbuf": None, "ops": [], "verdict": None,
                               "exception": False, "fate": None, "skb": None}
        striding = self.cfg.rq_type is RqType.STRIDING
        if C.MLX5E_RX_ERR_CQE(cqe):
            # mlx5e_handle_rx_err_cqe: trigger_report, then rx_wqe_err (MLX5-CQE-009).
            syndrome = C.mlx5_err_cqe.unpack(cqe.pack()).syndrome
            if C.cqe_syndrome_needs_recover(syndrome) and not self.recovering:
                self.recovering = True  # test_and_set_bit(MLX5E_RQ_STATE_RECOVERING)
                emit(trace, "MLX5-RX-002", "error CQE starts RQ recovery", syndrome=syndrome)
            self.stats.wqe_err += 1
            emit(trace, "MLX5-RX-002", "error CQE: rx_wqe_err", opcode=C.get_cqe_opcode(cqe))
            rec["kind"] = "error"
            return rec
        if striding and C.mpwrq_is_filler_cqe(cqe):
            self.stats.mpwqe_filler_cqes += 1
            self.stats.mpwqe_filler_strides += C.mpwrq_get_cqe_consumed_strides(cqe)
            emit(trace, "MLX5-RX-002", "filler CQE")
            rec["kind"] = "filler"
            return rec
        cqe_bcnt = C.mpwrq_get_cqe_byte_cnt(cqe) if striding else cqe.byte_cnt
        data = data[:cqe_bcnt].ljust(cqe_bcnt, b"\0")
        if striding and self.cfg.linear:
            built = self._mpwrq_linear(cqe, data, ops, rec, trace)
        elif striding:
            built = self._mpwrq_nonlinear(cqe, data, ops, rec, trace)
        elif self.cfg.linear:
            built = self._linear(cqe, data, ops, rec, trace)
        else:
            built = self._nonlinear(cqe, data, ops, rec, trace)
        if built:
            # MLX5-RX-001: mlx5e_complete_rx_cqe counts the CQE's byte count.
            self.stats.packets += 1
            self.stats.bytes += cqe_bcnt
            emit(trace, "MLX5-RX-001", "skb completed", bytes=cqe_bcnt)
        self.flag_xdp_xmit = False  # __test_and_clear_bit(MLX5E_RQ_FLAG_XDP_XMIT)
        return rec

    def _run_xdp(self, ops: Ops, rec: dict[str, Any], trace: Trace | None) -> bool:
        """Run ``mlx5e_xdp_handle``; True when XDP consumed the packet."""
        rec["mxbuf"] = X.mxbuf_snapshot(self.mxbuf)
        out = X.mlx5e_xdp_handle(self, ops, self.mxbuf, trace)
        rec.update(ops=list(out.run.records), verdict=out.verdict, exception=out.exception,
                   fate=out.fate.value)
        npages = 1 + (xdp_get_shared_info_from_buff(self.mxbuf).nr_frags
                      if self.mxbuf.flags & 1 else 0)
        if out.fate is X.Fate.DROP:
            self.pages["recycled"] += npages
        elif out.fate is X.Fate.TX:
            self.pages["in_sq"] += npages
        elif out.fate is X.Fate.REDIRECT:
            self.pages["redirected"] += npages
        return out.consumed

    def _skb(self, cqe: C.mlx5_cqe64, rec: dict[str, Any], xdp: XdpBuff, frags: bool,
             trace: Trace | None = None, pull_to: int | None = None) -> None:
        """MLX5-XDP-004: the skb takes headroom, metadata size and length from the buffer
        as the program left it; ``mlx5e_build_rx_skb`` adds the metadata (MLX5-SKB-*).
        ``pull_to``: the striding non-linear XDP_PASS skb pulls fragment bytes into its
        linear part until it holds that many (MLX5-XDP-002)."""
        body = xdp.linear()
        nr = 0
        if frags and xdp.flags & 1:
            sinfo = xdp_get_shared_info_from_buff(xdp)
            nr = sinfo.nr_frags
            body += b"".join(f.view() for f in sinfo.valid_frags())
            if pull_to is not None:
                nr = _nr_frags_after_pull(sinfo.valid_frags(), len(xdp.linear()), pull_to,
                                          trace)
        rec["skb"] = {"len": len(body), "data": body.hex(), "headroom": xdp.data -
                      xdp.data_hard_start, "metasize": xdp.data - xdp.data_meta,
                      "nr_frags": nr}
        rec["skb"].update(mlx5e_build_rx_skb(
            cqe, body, features=self.netdev_features, state=self.state,
            hwtstamp_rx_all=self.cfg.hwtstamp_rx_all,
            real_time=self.cfg.ts_format is TsFormat.REAL_TIME, dev_addr=self.cfg.dev_addr,
            stats=self.stats, trace=trace))
        rec["fate"] = rec["fate"] or "skb"
        self.pages["to_stack"] += 1 + nr

    # --- the four builders -----------------------------------------------------------------

    def _linear(self, cqe: C.mlx5_cqe64, data: bytes, ops: Ops | None, rec: dict[str, Any],
                trace: Trace | None) -> bool:
        """``mlx5e_skb_from_cqe_linear``: the buffer is filled only with a program; the
        packet sits after ``rq->buff.headroom`` (MLX5-RX-005)."""
        page = _page_with(data, self.headroom(ops))
        return self._linear_common(cqe, page, len(data), ops, rec, trace)

    def _linear_common(self, cqe: C.mlx5_cqe64, page: Page, length: int, ops: Ops | None,
                       rec: dict[str, Any], trace: Trace | None) -> bool:
        headroom = self.headroom(ops)
        if ops is None:
            plain = XdpBuff()  # no program: the skb is built straight over the page
            plain.page, plain.data_hard_start = page, 0
            plain.data = plain.data_meta = headroom
            plain.data_end = plain.data + length
            emit(trace, "MLX5-RX-005", "skb over the page at the RQ headroom", headroom=headroom)
            self._skb(cqe, rec, plain, False, trace)
            return True
        X.mlx5e_fill_mxbuf(self, cqe, page, 0, headroom, PAGE_SIZE, length,
                           self.mxbuf, trace)
        if self._run_xdp(ops, rec, trace):
            return False
        self._skb(cqe, rec, self.mxbuf, False, trace)
        return True

    def _nonlinear(self, cqe: C.mlx5_cqe64, data: bytes, ops: Ops | None,
                   rec: dict[str, Any], trace: Trace | None) -> bool:
        """``mlx5e_skb_from_cqe_nonlinear``: fills the buffer for every packet, program or
        not; the first ``frag_size`` bytes are linear, the rest one fragment per WQE frag."""
        size = self.cfg.frag_size
        first = data[:size]
        headroom = self.headroom(ops)  # MLX5-RX-005
        X.mlx5e_fill_mxbuf(self, cqe, _page_with(first, headroom), 0,
                           headroom, PAGE_SIZE, len(first), self.mxbuf, trace)
        for off in range(size, len(data), size):
            chunk = data[off : off + size]
            self._add_frag(_page_with(chunk, 0), 0, len(chunk), size, trace)
        if ops is not None and self._run_xdp(ops, rec, trace):
            return False
        self._skb(cqe, rec, self.mxbuf, True, trace)
        return True

    def _mpwrq_linear(self, cqe: C.mlx5_cqe64, data: bytes, ops: Ops | None,
                      rec: dict[str, Any], trace: Trace | None) -> bool:
        """``mlx5e_skb_from_cqe_mpwrq_linear``: oversize packets are dropped before XDP."""
        if len(data) > self.cfg.hw_mtu:
            self.stats.oversize_pkts_sw_drop += 1
            emit(trace, "MLX5-RX-002", "oversize packet dropped before XDP", len=len(data))
            rec["kind"] = "oversize"
            return False
        page = _page_with(data, self.headroom(ops))
        return self._linear_common(cqe, page, len(data), ops, rec, trace)

    def _mpwrq_nonlinear(self, cqe: C.mlx5_cqe64, data: bytes, ops: Ops | None,
                         rec: dict[str, Any], trace: Trace | None) -> bool:
        """``mlx5e_skb_from_cqe_mpwrq_nonlinear``.

        With a program: a separate linear page with 256 bytes of headroom and no packet
        bytes; every byte is in fragments (``data == data_end``).  Without: the first
        ``MLX5E_RX_MAX_HEAD`` bytes are the skb's linear part, the rest fragments.
        Fragments run from the stride's offset to the end of each page.
        """
        if (gate(self.cfg.kernel, "MLX5-RX-002") and len(data) > self.cfg.hw_mtu
                and C.get_cqe_lro_num_seg(cqe) <= 1):
            # 7ed7a576f20a: oversize non-LRO packets are dropped here too, before XDP.
            self.stats.oversize_pkts_sw_drop += 1
            emit(trace, "MLX5-RX-002", "oversize packet dropped before XDP (non-linear)",
                 len=len(data), hw_mtu=self.cfg.hw_mtu)
            rec["kind"] = "oversize"
            return False
        headers_only = gate(self.cfg.kernel, "MLX5-XDP-002")
        stride_ix = C.mpwrq_get_cqe_stride_index(cqe)
        frag_offset = (stride_ix << self.cfg.log_stride_sz) & (PAGE_SIZE - 1)
        headlen = min(MLX5E_RX_MAX_HEAD, len(data))
        if ops is None and headers_only:
            # 399f030cd612: only the headers go to the linear part.
            headlen = eth_get_headlen(data[:headlen])
            emit(trace, "MLX5-XDP-002", "skb head holds the headers only (eth_get_headlen)",
                 headlen=headlen)
        if ops is not None:
            linear_hr, lin, frame_sz = XDP_PACKET_HEADROOM, b"", mlx5_skb_frag_sz(
                XDP_PACKET_HEADROOM + MLX5E_RX_MAX_HEAD)
            rest = data
        else:
            # napi_alloc_skb reserves NET_SKB_PAD + NET_IP_ALIGN (MLX5-RX-005).
            linear_hr, lin = NET_SKB_PAD + NET_IP_ALIGN, data[:headlen]
            frame_sz = mlx5_skb_frag_sz(skb_data_align(linear_hr + MLX5E_RX_MAX_HEAD))
            rest = data[headlen:]
            frag_offset = (frag_offset + headlen) & (PAGE_SIZE - 1)
        X.mlx5e_fill_mxbuf(self, cqe, _page_with(lin, linear_hr), 0, linear_hr, frame_sz,
                           len(lin), self.mxbuf, trace)
        while rest:
            n = min(PAGE_SIZE - frag_offset, len(rest))
            truesize = -(-n // (1 << self.cfg.log_stride_sz)) * (1 << self.cfg.log_stride_sz)
            self._add_frag(_page_with(rest[:n], frag_offset), frag_offset, n, truesize, trace)
            rest, frag_offset = rest[n:], 0
        if ops is not None and self._run_xdp(ops, rec, trace):
            return False
        pull_to = None if ops is None else ETH_HLEN if headers_only else MLX5E_RX_MAX_HEAD
        self._skb(cqe, rec, self.mxbuf, True, trace, pull_to)
        return True

    def _add_frag(self, page: Page, offset: int, size: int, truesize: int,
                  trace: Trace | None) -> None:
        """MLX5-XDP-003: ``mlx5e_add_skb_shared_info_frag``."""
        if not xdp_buff_add_frag(self.mxbuf, page, offset, size, truesize,
                                 try_coalesce=False, trace=trace):
            raise StateViolation("more fragments than MAX_SKB_FRAGS", obj="mlx5e_rq",
                                 rule="MLX5-XDP-003")

    def counters(self) -> dict[str, int]:
        return ethtool(self.stats, self.xdpsq.stats)


def _nr_frags_after_pull(frags: Sequence[Any], linear: int, pull_to: int,
                         trace: Trace | None) -> int:
    """MLX5-XDP-002: ``__pskb_pull_tail`` on a striding non-linear XDP_PASS skb whose
    linear part holds ``linear`` bytes: up to ``pull_to - linear`` fragment bytes move into
    the linear part (6.12/6.18: up to ``MLX5E_RX_MAX_HEAD``; since 399f030cd612 only up to
    ``ETH_HLEN``, and only when shorter), and every fragment emptied by the pull is
    released, so ``nr_frags`` drops by their number."""
    pull = max(0, min(pull_to - linear, sum(f.size for f in frags)))
    left = len(frags)
    for frag in frags:
        if pull < frag.size:
            break
        pull -= frag.size
        left -= 1
    if left != len(frags):
        emit(trace, "MLX5-XDP-002", "XDP_PASS pull emptied fragments", nr_frags=left)
    return left


def _page_with(data: bytes, offset: int) -> Page:
    page = Page.zeroed(PAGE_SIZE)
    page.data[offset : offset + len(data)] = data
    return page


def packet_bytes(frame: bytes, cqe: C.mlx5_cqe64) -> bytes:
    """The bytes the device wrote: the frame, minus the outer tag when it was stripped."""
    return frame[:12] + frame[16:] if C.cqe_has_vlan(cqe) else frame


@attrs.frozen
class DriverRun:
    completions: tuple[Completion, ...]
    polls: tuple[PollResult, ...]
    stats: dict[str, int]
    records: tuple[dict[str, Any], ...]
    counters: dict[str, int]
    pages: dict[str, int]
    #: Per record: whether the handler got the RQ's decompression title (a packet of a
    #: compressed session, MLX5-KF-003) rather than a CQE from the ring; for attribution.
    from_title: tuple[bool, ...]


@attrs.define(eq=False)
class RxStream:
    """One RQ and its CQ that frames keep arriving on, chunk after chunk (MLX5-RX-003).

    The device, the CQ ring and the driver's RQ persist between chunks, as they do while
    an interface is up, so a long replay pays their set-up (an empty ring of CQ-size
    slots, the RQ and its XDP-SQ) once.  :func:`run` is one chunk on a fresh stream.
    """

    device: Mlx5Device
    cq: Mlx5eRxCq
    ring: bytearray
    rq: Mlx5eRq
    budget: int = 64

    def receive(
        self,
        frames: Sequence[bytes],
        program_for: Callable[[int], Ops | None],
        *,
        timestamps: Sequence[int] | None = None,
        trace: Trace | None = None,
    ) -> DriverRun:
        """The device receives ``frames``; NAPI polls (XDP-SQ completions, then the RX CQ
        with the handlers) until every completion was handled, then one last XDP-SQ
        completion pass.

        ``program_for`` and the records' ``frame`` count from this chunk's first frame.
        The result holds this chunk's completions, polls and records; its counters and
        page fates are the stream's running totals.  The device's own per-frame logs
        (``completions``, ``placements``) keep the latest chunk only.
        """
        device, cq, ring, rq = self.device, self.cq, self.ring, self.rq
        device.completions.clear()
        device.placements.clear()
        first = device.frames_received  # the device's number for frames[0]
        completions = device.receive(list(frames),
                                     None if timestamps is None else list(timestamps), trace)
        records: list[dict[str, Any]] = []
        cleared: list[bool] = []

        def handler(cqe: C.mlx5_cqe64) -> None:
            comp = completions[len(records)]
            frame = comp.frame - first if comp.frame >= 0 else comp.frame
            emit(trace, "MLX5-RX-002", "RX handler called", index=len(records), frame=frame)
            rec = rq.handle_cqe(cqe, packet_bytes(frames[frame], cqe) if frame >= 0
                                else b"", program_for(frame) if frame >= 0 else None, trace)
            rec["frame"] = frame
            records.append(rec)
            cleared.append(cqe is cq.cqd.title)

        polls: list[PollResult] = []
        while True:
            wrote = device.write(ring, cq.cc, trace)
            before = cq.cc
            rq.poll_xdpsq(trace)
            result = cq.poll(ring, self.budget, handler, trace=trace)
            if result.work_done:
                polls.append(result)
                rq.xdp_rx_poll_complete()
            if device.pending == 0 and cq.cc == device.pc:
                break
            if not wrote and cq.cc == before:
                raise StateViolation("no progress: the budget is smaller than an enhanced "
                                     "session", obj="mlx5 run", rule="MLX5-CQ-004")
        rq.poll_xdpsq(trace)
        return DriverRun(tuple(completions), tuple(polls), cq.stats(), tuple(records),
                         rq.counters(), dict(rq.pages), tuple(cleared))


def open_stream(config: DeviceConfig, rq_cfg: RqConfig, budget: int = 64, *,
                xdp_prog: bool = False, start: int = 0) -> RxStream:
    """A fresh device, an empty CQ whose counters start at ``start``, and an RQ opened
    with or without an XDP program (``xdp_prog``, MLX5-CSUM-003)."""
    device = Mlx5Device(config, pc=start)
    cq = Mlx5eRxCq(rq_params(config), cc=start)
    ring = new_ring(config.log_cq_size, start)
    check_linear(rq_cfg, xdp_prog)  # MLX5-RX-006
    rq = Mlx5eRq(rq_cfg)
    rq.xdp_prog = xdp_prog
    return RxStream(device, cq, ring, rq, budget)


def run(
    config: DeviceConfig,
    frames: Sequence[bytes],
    rq_cfg: RqConfig,
    program_for: Callable[[int], Ops | None],
    budget: int = 64,
    *,
    timestamps: Sequence[int] | None = None,
    start: int = 0,
    trace: Trace | None = None,
) -> DriverRun:
    """MLX5-RX-003: ``frames`` through a fresh RQ/CQ (see :meth:`RxStream.receive`); the
    RQ counts as opened with a program when any frame has one."""
    xdp_prog = any(program_for(i) is not None for i in range(len(frames)))
    stream = open_stream(config, rq_cfg, budget, xdp_prog=xdp_prog, start=start)
    return stream.receive(frames, program_for, timestamps=timestamps, trace=trace)

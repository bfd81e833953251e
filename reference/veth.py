"""veth: XDP on the receive side of a veth pair (SPEC area "veth", VETH-*).

A frame sent on one end of a pair reaches the other end's ``xdp_ring`` in one of two
shapes, and ``veth_xdp_rcv`` (drivers/net/veth.c) handles each its own way:

* an **skb** (the peer's ``ndo_start_xmit``: any socket, AF_PACKET included): the skb
  is turned into an ``xdp_buff`` (``veth_convert_skb_to_xdp_buff``), copying it into a
  page_pool buffer with 256 bytes of headroom when it cannot be used in place
  (VETH-SKB-001 .. 003).  The metadata kfuncs read the skb (VETH-KF-*);
* an **xdp_frame** (the peer's ``ndo_xdp_xmit``, e.g. the peer program's XDP_TX): there
  is no skb and every kfunc returns ``-ENODATA`` (VETH-FRAME-001).

Counters are the ``rx_queue_<i>_*`` strings of ``veth_rq_stats_desc`` (VETH-STAT-*).
Attaching needs the peer's MTU to fit one page (VETH-MTU-001).

Kernel read: ``Kingxukai/linux`` v6.17-rc3 ``drivers/net/veth.c``, ``net/core/skbuff.c:
skb_pp_cow_data()``; ``net/core/flow_dissector.c`` re-read in 7.3.4 and 6.12.117
(:mod:`reference.flow_dissector`); checked live on 6.18.
The exact hash value uses a per-boot random key (``skb_get_hash``): the model gives a
stand-in with the same equalities (:func:`flow_key_hash`), never the kernel's number.
"""

from __future__ import annotations

import errno
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from reference import flow_dissector
from reference.errors import InvalidConfig
from reference.kfuncs import MetadataOps, RxHash, RxTimestamp, RxVlanTag, XdpRssHashType
from reference.trace import Trace, emit
from reference.xdp.arch import X86_64, align_up
from reference.xdp.buff import XdpBuff

PAGE_SIZE = 4096
ETH_HLEN = 14
ETH_MIN_MTU = 68
ETH_MAX_MTU = 0xFFFF
XDP_PACKET_HEADROOM = 256
NET_IP_ALIGN = 0  # x86
VETH_XDP_HEADROOM = XDP_PACKET_HEADROOM + NET_IP_ALIGN
MAX_SKB_FRAGS = 17
SMP_CACHE_BYTES = 64
#: SKB_DATA_ALIGN(sizeof(struct skb_shared_info)) on x86_64.
SHINFO_ALIGNED = X86_64.shinfo_reserved

#: VETH-STAT-001: ``veth_rq_stats_desc``, in order; ethtool shows ``rx_queue_<i>_<name>``.
VETH_RQ_STATS: tuple[str, ...] = (
    "xdp_packets", "xdp_bytes", "drops", "xdp_redirect", "xdp_drops", "xdp_tx", "xdp_tx_errors",
)
#: ``veth_tq_stats_desc``: ``tx_queue_<i>_<name>``, counted on the peer's RX queue.
VETH_TQ_STATS: tuple[str, ...] = ("xdp_xmit", "xdp_xmit_errors")

XDP_ABORTED, XDP_DROP, XDP_PASS, XDP_TX, XDP_REDIRECT = range(5)


def ethtool_stat_names(real_num_rx_queues: int = 1, real_num_tx_queues: int = 1) -> list[str]:
    """``veth_get_strings(ETH_SS_STATS)`` without page_pool stats (VETH-STAT-001)."""
    names = ["peer_ifindex"]
    names += [f"rx_queue_{i}_{s}" for i in range(real_num_rx_queues) for s in VETH_RQ_STATS]
    names += [f"tx_queue_{i}_{s}" for i in range(real_num_tx_queues) for s in VETH_TQ_STATS]
    return names


# --- attach -------------------------------------------------------------------------------


def veth_xdp_max_mtu(peer_hard_header_len: int = ETH_HLEN, has_frags: bool = False) -> int:
    """VETH-MTU-001: the largest peer MTU ``veth_xdp_set`` accepts.

    One page minus the XDP headroom and the shared info, minus the peer's L2 header;
    a frags-aware program may use ``MAX_SKB_FRAGS`` more pages.
    """
    max_mtu = PAGE_SIZE - VETH_XDP_HEADROOM - SHINFO_ALIGNED - peer_hard_header_len
    if has_frags:
        max_mtu += PAGE_SIZE * MAX_SKB_FRAGS
    return max_mtu


def veth_xdp_set(peer_mtu: int | None, has_frags: bool = False,
                 rx_queues: int = 1, peer_tx_queues: int = 1,
                 trace: Trace | None = None) -> int:
    """VETH-MTU-001: the checks ``veth_xdp_set`` makes before attaching; 0 or ``-errno``.

    ``peer_mtu`` None: the pair is broken (no peer): ``-ENOTCONN``.
    """
    if peer_mtu is None:
        emit(trace, "VETH-MTU-001", "Cannot set XDP when peer is detached")
        return -errno.ENOTCONN
    if peer_mtu > veth_xdp_max_mtu(has_frags=has_frags):
        emit(trace, "VETH-MTU-001", "Peer MTU is too large to set XDP", peer_mtu=peer_mtu)
        return -errno.ERANGE
    if rx_queues < peer_tx_queues:
        emit(trace, "VETH-MTU-001", "fewer rx queues than peer tx queues")
        return -errno.ENOSPC
    return 0


@attrs.frozen
class AttachOutcome:
    """What attaching a program to a veth end without one shows (VETH-MTU-001): the
    errno and the peer's ``max_mtu`` afterwards (``ETH_MAX_MTU`` while no program is
    attached; the limit of :func:`veth_xdp_max_mtu` once one is)."""

    rc: int
    peer_max_mtu: int


def veth_xdp_attach(peer_mtu: int, has_frags: bool = False, rx_queues: int = 1,
                    peer_tx_queues: int = 1, trace: Trace | None = None) -> AttachOutcome:
    """VETH-MTU-001: attach a program (frags-aware or not) to an end with no program and
    ``rx_queues`` rx queues, its peer at ``peer_mtu`` with ``peer_tx_queues`` tx queues.
    On success ``veth_xdp_set`` sets the peer's ``max_mtu`` to the limit it checked
    against; a refusal leaves it at ``ETH_MAX_MTU`` (veth_setup)."""
    rc = veth_xdp_set(peer_mtu, has_frags, rx_queues, peer_tx_queues, trace=trace)
    if rc:
        return AttachOutcome(rc, ETH_MAX_MTU)
    limit = veth_xdp_max_mtu(has_frags=has_frags)
    emit(trace, "VETH-MTU-001", "attached: the peer's max_mtu is the limit",
         peer_max_mtu=limit)
    return AttachOutcome(0, limit)


# --- the skb -> xdp_buff conversion ---------------------------------------------------------


@attrs.frozen
class VethSkb:
    """The parts of an skb on veth's ring that the model needs.

    ``frame``: the bytes from the MAC header on.  ``headroom``: ``skb_headroom`` once the
    MAC header is pushed back.  ``hwtstamp``: ``skb_hwtstamps(skb)->hwtstamp``.
    ``vlan_tci``/``vlan_proto``: the out-of-band (hw-accel) tag, if present.
    ``protocol`` is what ``eth_type_trans`` set when the peer forwarded the skb, and
    ``network_offset`` where the sender (AF_PACKET, the only sender modelled) left the
    network header: past the in-band tags (VETH-KF-007).
    """

    frame: bytes
    headroom: int = 0
    shared: bool = False
    nonlinear: bool = False
    hwtstamp: int = 0
    vlan_present: bool = False
    vlan_proto: int = 0
    vlan_tci: int = 0

    @property
    def protocol(self) -> int:
        """``skb->protocol`` on the receiving end (``__dev_forward_skb``'s
        ``eth_type_trans``)."""
        return flow_dissector.eth_type_trans_protocol(self.frame)

    @property
    def network_offset(self) -> int:
        """``skb_network_offset`` from the MAC header (VETH-KF-007)."""
        return flow_dissector.af_packet_network_offset(self.frame)


@attrs.frozen
class SkbBuffLayout:
    """Where the xdp_buff lies after ``veth_convert_skb_to_xdp_buff``.

    ``frame_sz_min``/``frame_sz_max``: the page_pool fragment size is the aligned request
    unless the fragment is the last to fit in its page, which then gets the rest of the
    page; which one happens depends on earlier allocations (VETH-SKB-002).
    """

    copied: bool
    headroom: int
    frame_sz_min: int
    frame_sz_max: int


def veth_convert_skb_to_xdp_buff(skb: VethSkb, trace: Trace | None = None) -> SkbBuffLayout:
    """VETH-SKB-001, VETH-SKB-002: copy or use in place, and the buffer's geometry.

    The skb is used in place only if it is private, its head unlocked, linear and has
    at least XDP_PACKET_HEADROOM of headroom; otherwise ``skb_pp_cow_data`` copies it into
    a page_pool buffer with exactly that headroom.  Only the copy case is modelled
    (frames that fit in one page): an in-place skb keeps its allocator's geometry.
    """
    needs_copy = (skb.shared or skb.nonlinear or skb.headroom < XDP_PACKET_HEADROOM)
    if not needs_copy:
        emit(trace, "VETH-SKB-001", "skb used in place")
        return SkbBuffLayout(False, skb.headroom, 0, 0)
    length = len(skb.frame)
    max_head = PAGE_SIZE - XDP_PACKET_HEADROOM - SHINFO_ALIGNED
    size = min(length, max_head)
    truesize = align_up(size, SMP_CACHE_BYTES) + SHINFO_ALIGNED + XDP_PACKET_HEADROOM
    if 2 * truesize > PAGE_SIZE:  # page_pool_alloc_netmem: a whole page
        frame_min = frame_max = PAGE_SIZE
    else:
        frame_min, frame_max = truesize, PAGE_SIZE
    emit(trace, "VETH-SKB-002", "skb copied into page_pool buffer", truesize=truesize)
    return SkbBuffLayout(True, XDP_PACKET_HEADROOM, frame_min, frame_max)


def tail_grow_room(length: int, layout: SkbBuffLayout) -> tuple[int, int]:
    """VETH-SKB-002: the (certain, possible) growth ``bpf_xdp_adjust_tail`` allows at entry.

    Growing by at most the first value always succeeds; by more than the second never.
    """
    used = layout.headroom + length + SHINFO_ALIGNED
    return layout.frame_sz_min - used, layout.frame_sz_max - used


# --- kfuncs -------------------------------------------------------------------------------


@attrs.define(eq=False)
class VethXdpBuff:
    """``struct veth_xdp_buff``: the xdp_buff's driver context, ``skb`` NULL on the
    xdp_frame path (VETH-FRAME-001).

    ``buff`` and ``mac_offset`` say where the skb's bytes are while the program runs (the
    xdp_buff is built on the skb's own head, so the program's stores are the skb's
    bytes); ``flow`` is the hash the skb caches once computed (VETH-KF-006).
    """

    skb: VethSkb | None
    buff: XdpBuff | None = None
    mac_offset: int = 0
    flow: flow_dissector.FlowKeys | None = None

    def current_frame(self) -> bytes:
        """The skb's bytes now: the frame's extent at entry, with the program's stores."""
        assert self.skb is not None
        if self.buff is None or self.buff.page is None:
            return self.skb.frame
        start = self.mac_offset
        return bytes(self.buff.page.data[start : start + len(self.skb.frame)])


def veth_xdp_rx_timestamp(ctx: object) -> RxTimestamp:
    """VETH-KF-001: the skb's ``hwtstamp`` (0 unless set), ``-ENODATA`` without skb."""
    skb = _skb(ctx)
    if skb is None:
        return RxTimestamp(-errno.ENODATA)
    return RxTimestamp(0, skb.hwtstamp)


def veth_xdp_rx_hash(ctx: object) -> RxHash:
    """VETH-KF-002: ``skb_get_hash`` and L4_ANY when it is an L4 hash, else NONE.

    The value is the model's stand-in (:func:`flow_key_hash`), not the kernel's.
    """
    skb = _skb(ctx)
    if skb is None or not isinstance(ctx, VethXdpBuff):
        return RxHash(-errno.ENODATA)
    if ctx.flow is None:
        # VETH-KF-006: dissected once, from the bytes as the program left them so far;
        # skb->protocol and the network offset were set before the program ran.
        ctx.flow = flow_dissect(ctx.current_frame(), skb)
        if not ctx.flow.covered:
            raise InvalidConfig("rx_hash: the flow dissector would walk a header the model "
                                "does not dissect (GRE, MPLS, PPPoE, TIPC, batman-adv, HSR)",
                                field="frame", value=skb.frame[:64].hex(), rule="VETH-KF-002")
    keys = ctx.flow
    rss = XdpRssHashType.XDP_RSS_TYPE_L4_ANY if keys.has_l4 else XdpRssHashType.XDP_RSS_TYPE_NONE
    return RxHash(0, flow_key_hash(keys), int(rss))


def veth_xdp_rx_vlan_tag(ctx: object) -> RxVlanTag:
    """VETH-KF-003: only an out-of-band tag; ``vlan_tci`` is zeroed before ``-ENODATA``."""
    skb = _skb(ctx)
    if skb is None:
        return RxVlanTag(-errno.ENODATA)
    if not skb.vlan_present:
        return RxVlanTag(-errno.ENODATA, None, 0)
    return RxVlanTag(0, skb.vlan_proto, skb.vlan_tci)


def _skb(ctx: object) -> VethSkb | None:
    return ctx.skb if isinstance(ctx, VethXdpBuff) else None


#: VETH-KF-004: veth implements all three members.
VETH_XDP_METADATA_OPS = MetadataOps(
    xmo_rx_timestamp=veth_xdp_rx_timestamp,
    xmo_rx_hash=veth_xdp_rx_hash,
    xmo_rx_vlan_tag=veth_xdp_rx_vlan_tag,
)


# --- the flow dissector: reference/flow_dissector.py ---------------------------------------

#: Re-exported: the veth tests and the component use these names.
FlowKeys = flow_dissector.FlowKeys
flow_key_hash = flow_dissector.flow_key_hash


def flow_dissect(frame: bytes, skb: VethSkb | None = None) -> FlowKeys:
    """VETH-KF-002, VETH-KF-007: the keys ``skb_get_hash`` finds in ``frame`` for an skb
    sent like ``skb`` (default: an untagged AF_PACKET send of ``frame``): the walk starts
    at the hw-accel tag's TPID if there is one, else at ``skb->protocol``, from the
    network header the sender left."""
    skb = skb or VethSkb(frame)
    oob = (skb.vlan_proto, skb.vlan_tci) if skb.vlan_present else None
    return flow_dissector.flow_dissect(frame, protocol=skb.protocol, nhoff=skb.network_offset,
                                       oob_vlan=oob)


# --- what a program can see of the headroom ------------------------------------------------


def headroom_exposed(ops: Sequence[Mapping[str, Any]],
                     records: Sequence[Mapping[str, Any]]) -> bool:
    """VETH-SKB-003: did a successful negative ``adjust_head``/``adjust_meta`` expose
    headroom bytes?  Nobody initialised them (the page_pool copy writes only the frame),
    so their values, and so the packet's and metadata's bytes, are unspecified."""
    for op, record in zip(ops, records, strict=False):
        if op["op"] in ("adjust_head", "adjust_meta") and int(op["delta"]) < 0 \
                and record["rc"] == 0:
            return True
    return False


# --- one packet through veth_xdp_rcv --------------------------------------------------------


VLAN_HLEN = 4


def veth_xdp_tx_outcome(converted: bool, frame_len: int, peer_mtu: int = 1500,
                        peer_napi: bool = True) -> str:
    """VETH-STAT-003: what becomes of an XDP_TX: ``"ok"``, ``"convert_failed"`` (no room
    for the xdp_frame: counted in ``drops``) or ``"xmit_failed"`` (the peer refused it in
    ``veth_xdp_xmit``: no NAPI on the peer, or longer than the peer's MTU + L2 header +
    VLAN_HLEN: counted in ``xdp_tx_errors``)."""
    if not converted:
        return "convert_failed"
    if not peer_napi or frame_len > peer_mtu + ETH_HLEN + VLAN_HLEN:
        return "xmit_failed"
    return "ok"


def account(stats: dict[str, int], path: str, frame_len: int, action: int,
            tx: str = "ok", trace: Trace | None = None) -> None:
    """VETH-STAT-002, VETH-STAT-003: add one ring entry's effect to the rx queue counters.

    ``path`` is ``"skb"`` or ``"xdp_frame"``; ``tx`` the :func:`veth_xdp_tx_outcome` of an
    XDP_TX.  A REDIRECT is counted as failed (``drops``): the op-list programs never set
    a target, so ``xdp_do_redirect`` fails (model convention).
    """
    stats["xdp_packets"] += 1
    # skb path: skb->len after eth_type_trans pulled the MAC header; frame path: whole frame
    stats["xdp_bytes"] += frame_len - ETH_HLEN if path == "skb" else frame_len
    act = action & 0xFFFFFFFF
    if act == XDP_PASS:
        pass
    elif act == XDP_TX:
        key = {"ok": "xdp_tx", "convert_failed": "drops", "xmit_failed": "xdp_tx_errors"}[tx]
        stats[key] += 1
    elif act == XDP_REDIRECT:
        stats["drops"] += 1
    else:
        stats["xdp_drops"] += 1
    emit(trace, "VETH-STAT-002", "counted", action=act, path=path, tx=tx)


def zero_stats() -> dict[str, int]:
    return {name: 0 for name in VETH_RQ_STATS}

"""tun/tap: native XDP on frames written to a tap file descriptor (SPEC area "tun", TUN-*).

``tun_build_skb`` (drivers/net/tun.c) runs the attached program on a buffer carved from
the writer's page_frag when the frame is small enough and the write is non-blocking
(``tun_can_build_skb``): ``TUN_RX_PAD`` + XDP_PACKET_HEADROOM of headroom, metadata
supported (TUN-BUF-001).  tun registers no ``xdp_metadata_ops``, so every metadata kfunc
runs its default body (TUN-KF-001).

Kernel read: ``Kingxukai/linux`` v6.17-rc3 ``drivers/net/tun.c``.
"""

from __future__ import annotations

import attrs

from reference import veth
from reference.kernel import DEFAULT_KERNEL, KernelVersion, gate
from reference.kfuncs import XdpMetadataOps
from reference.xdp.arch import X86_64, align_up

PAGE_SIZE = 4096
XDP_PACKET_HEADROOM = 256
NET_IP_ALIGN = 0  # x86
NET_SKB_PAD = 64  # max(32, L1_CACHE_BYTES) on x86_64
TUN_RX_PAD = NET_IP_ALIGN + NET_SKB_PAD
SMP_CACHE_BYTES = 64
SHINFO_ALIGNED = X86_64.shinfo_reserved

#: TUN-BUF-002: the page fragment's headroom is not initialised either; the same test as
#: veth's says when a program has exposed it.
headroom_exposed = veth.headroom_exposed

#: TUN-KF-001: tun sets no ``dev->xdp_metadata_ops``.
TUN_XDP_METADATA_OPS: XdpMetadataOps | None = None


@attrs.frozen
class TunBuffLayout:
    """The xdp_buff ``tun_build_skb`` prepares: headroom, ``frame_sz`` (= buflen), and
    whether metadata is supported."""

    headroom: int
    frame_sz: int
    meta_valid: bool = True


def tun_can_build_skb(length: int, *, tap: bool = True, noblock: bool = True,
                      zerocopy: bool = False, sndbuf_unlimited: bool = True,
                      napi_frags: bool = False) -> bool:
    """TUN-BUF-001: the native XDP path is taken only for a non-blocking tap write, on a
    queue without IFF_NAPI_FRAGS whose socket keeps the default ``sk_sndbuf`` (INT_MAX;
    TUNSETSNDBUF lowers it), of a frame that fits one page with the pad, the XDP
    headroom and the shared info."""
    if not tap or not noblock or zerocopy or not sndbuf_unlimited or napi_frags:
        return False
    need = (align_up(length + TUN_RX_PAD + XDP_PACKET_HEADROOM, SMP_CACHE_BYTES)
            + SHINFO_ALIGNED)
    return need <= PAGE_SIZE


def tun_build_skb_layout(length: int, kernel: KernelVersion = DEFAULT_KERNEL) -> TunBuffLayout:
    """TUN-BUF-001: ``pad`` = TUN_RX_PAD + XDP_PACKET_HEADROOM, ``buflen`` = the aligned
    pad + frame plus the aligned shared info; metadata valid on kernels with c2315ebb0588
    (v6.15+), unsupported before it (6.12: ``bpf_xdp_adjust_meta`` is -ENOTSUPP)."""
    pad = TUN_RX_PAD + XDP_PACKET_HEADROOM
    buflen = align_up(length + pad, SMP_CACHE_BYTES) + SHINFO_ALIGNED
    return TunBuffLayout(pad, buflen, gate(kernel, "TUN-BUF-001"))

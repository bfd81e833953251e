"""The driver's state: ``struct fec_enet_private`` and its queues, as the model keeps them.

Kernel: ``fec.h`` / ``fec_main.c`` (v6.17-rc3).  Pages are page_pool pages
(:class:`reference.page_pool.Page`); their bytes live in :class:`Bus`, which maps
a bus address to the :class:`reference.xdp.memory.Page` holding the bytes, whose
``handle`` is the page_pool page (so one identity links both models).
"""

from __future__ import annotations

import enum
from typing import Any

import attrs

from reference import page_pool as pp
from reference.errors import InvalidConfig
from reference.fec.bufdesc import ByteOrder, Ring
from reference.fec.counters import NetStats, new_xdp_stats
from reference.kernel import DEFAULT_KERNEL, KernelVersion, gate
from reference.xdp.arch import Arch
from reference.xdp.frame import XdpFrame
from reference.xdp.memory import Page as XPage
from reference.xdp.rxq import XdpRxqInfo

PAGE_SIZE = 4096
PAGE_SHIFT = 12
#: ``FEC_ENET_XDP_HEADROOM`` = ``XDP_PACKET_HEADROOM`` (fec.h).
FEC_ENET_XDP_HEADROOM = 256
#: The two architectures fec runs on (FEC-RX-017): arm64 (i.MX8) and 32-bit ARM (i.MX6,
#: i.MX7, Debian ``armhf``), both with 4 KiB pages, 64-byte cache lines and 17 frags.
#: ``SKB_DATA_ALIGN(sizeof(struct skb_shared_info))`` is 320 on arm64 and 256 on armhf,
#: and ``sizeof(struct xdp_frame)`` 40 and 32 (reference.xdp.arch).
ARM64 = Arch(name="arm64")
ARMHF = Arch(name="armhf", bits_per_long=32)
ARCHES = {"arm64": ARM64, "armhf": ARMHF}
#: ``FEC_ENET_RX_FRSIZE`` = PAGE_SIZE - headroom - the aligned shared info (fec.h), on
#: arm64: 3520; :attr:`FecConfig.rx_frsize` gives it per architecture (armhf: 3584).
FEC_ENET_RX_FRSIZE = PAGE_SIZE - FEC_ENET_XDP_HEADROOM - ARM64.shinfo_reserved
#: ``FEC_ENET_RX_PAGES`` * ``FEC_ENET_RX_FRPPG`` (1 with 4 KiB pages) and ``TX_RING_SIZE``.
RX_RING_SIZE = 256
TX_RING_SIZE = 1024
#: ``PKT_MAXBUF_SIZE`` = round_down(2048 - 64, 64): MRBR, FTRL and the RCR frame limit.
PKT_MAXBUF_SIZE = 1984
#: ``MAX_SKB_FRAGS`` (default Kconfig): ``fec_enet_txq_xmit_frame`` wants this + 1 free BDs.
MAX_SKB_FRAGS = 17
#: ``ETH_FCS_LEN`` and the RACC SHIFT16 pad.
FCS_LEN = 4
SHIFT16_PAD = 2
#: ``VLAN_ETH_HLEN`` and the default MTU: since FEC-DEV-003's gate ``fec_restart`` puts
#: mtu + VLAN_ETH_HLEN + ETH_FCS_LEN in the RCR MAX_FL field (1522 at MTU 1500).
VLAN_ETH_HLEN = 18
ETH_DATA_LEN = 1500


class TxBufType(enum.IntEnum):
    """``enum fec_txbuf_type`` (fec.h) (FEC-TX-001)."""

    FEC_TXBUF_T_SKB = 0
    FEC_TXBUF_T_XDP_NDO = 1
    FEC_TXBUF_T_XDP_TX = 2


@attrs.define
class TxBuffer:
    """``struct fec_tx_buffer``: what a TX slot holds and how to give it back."""

    type: TxBufType = TxBufType.FEC_TXBUF_T_SKB
    #: a page_pool page (XDP_TX), an :class:`XdpFrame` (NDO, or XDP_TX before 2023), None
    buf_p: Any = None


@attrs.frozen
class FecConfig:
    """What the modelled kernel and SoC look like (FEC-DEV-001, FEC-RX-001).

    ``bufdesc_ex``: ``fep->bufdesc_ex`` (FEC_QUIRK_HAS_BUFDESC_EX and a PTP clock);
    ``racc``: FEC_QUIRK_HAS_RACC, which makes fec_restart set RACC SHIFT16;
    ``rx_csum``: NETIF_F_RXCSUM (``csum_flags``); ``vlan_rx``: NETIF_F_HW_VLAN_CTAG_RX;
    ``avb``: FEC_QUIRK_HAS_AVB (i.MX6SX, i.MX8MQ/QM, S32V234), which makes TX descriptors
    carry the queue's frame type in ``cbd_esc`` (FEC-TX-003);
    ``num_rx_queues``: RX queues the device tree asks for (AVB SoCs: up to 3); frames
    arrive on queue 0, the others only hold their filled pools (FEC-RX-018);
    ``xdp_tx_frame``: the XDP_TX of commit f601899e4321 (Aug 2023), which converts to an
    ``xdp_frame`` first; it was replaced in the same merge (FEC-XDP-008);
    ``redirect_ok``: an XDP_REDIRECT finds a target (FEC-XDP-006);
    ``arch``: ``"arm64"`` or ``"armhf"``, the sizes the XDP helpers and the pool's
    ``max_len`` depend on (FEC-RX-017);
    ``kernel``: the kernel version the model predicts for (KVER-001; set from the
    scenario, not from its config).
    """

    byte_order: ByteOrder = ByteOrder.LITTLE
    bufdesc_ex: bool = True
    racc: bool = True
    rx_csum: bool = True
    vlan_rx: bool = True
    avb: bool = False
    rx_ring_size: int = RX_RING_SIZE
    tx_ring_size: int = TX_RING_SIZE
    num_tx_queues: int = 1
    num_rx_queues: int = 1
    xdp: bool = False
    xdp_tx_frame: bool = False
    redirect_ok: bool = False
    cpu: int = 0
    arch: str = "arm64"
    kernel: KernelVersion = DEFAULT_KERNEL

    @property
    def max_fl(self) -> int:
        """FEC-DEV-003: the RCR MAX_FL field ``fec_restart`` writes: ``PKT_MAXBUF_SIZE``
        (``OPT_FRAME_SIZE``) before the gate, after it the MTU's frame with a VLAN tag and
        its FCS.  The model's device has the default MTU (no ``ndo_change_mtu``)."""
        if gate(self.kernel, "FEC-DEV-003"):
            return ETH_DATA_LEN + VLAN_ETH_HLEN + FCS_LEN
        return PKT_MAXBUF_SIZE

    def __attrs_post_init__(self) -> None:
        if self.arch not in ARCHES:
            raise InvalidConfig(f"fec runs on {' or '.join(ARCHES)}", field="arch",
                                value=self.arch, rule="FEC-RX-017")
        for name in ("rx_ring_size", "tx_ring_size"):
            value = getattr(self, name)
            if not 2 <= value <= 4096:
                raise InvalidConfig("ring sizes range over 2..4096 in the model", field=name,
                                    value=value, rule="FEC-RX-001")
        if not 1 <= self.num_tx_queues <= 3:
            raise InvalidConfig("FEC_ENET_MAX_TX_QS is 3", field="num_tx_queues",
                                value=self.num_tx_queues, rule="FEC-RX-001")
        if not 1 <= self.num_rx_queues <= 3:
            raise InvalidConfig("FEC_ENET_MAX_RX_QS is 3", field="num_rx_queues",
                                value=self.num_rx_queues, rule="FEC-RX-001")

    @classmethod
    def from_dict(cls, cfg: dict[str, Any]) -> FecConfig:
        order = ByteOrder(cfg.get("byte_order", "little"))
        known = {f.name for f in attrs.fields(cls)} - {"byte_order", "kernel"}
        unknown = set(cfg) - known - {"byte_order"}
        if unknown:
            raise InvalidConfig("unknown fec config keys", field="config",
                                value=sorted(unknown), rule="FEC-RX-001")
        return cls(byte_order=order, **{k: v for k, v in cfg.items() if k in known})

    @property
    def xdp_arch(self) -> Arch:
        """The layout the XDP helpers see on this SoC (FEC-RX-017)."""
        return ARCHES[self.arch]

    @property
    def rx_frsize(self) -> int:
        """``FEC_ENET_RX_FRSIZE`` on this architecture (FEC-RX-014, FEC-RX-017)."""
        return PAGE_SIZE - FEC_ENET_XDP_HEADROOM - self.xdp_arch.shinfo_reserved

    @property
    def data_start(self) -> int:
        """Where the frame starts in the page: headroom plus the SHIFT16 pad (FEC-RX-002)."""
        return FEC_ENET_XDP_HEADROOM + (SHIFT16_PAD if self.racc else 0)

    @property
    def rx_bytes_pad(self) -> int:
        """FEC-RX-005: the RACC pad bytes ``rx_bytes`` leaves out: 2 with RACC on kernels
        that carry ad17e7e92a7c (6.12.63+, 6.18+), else 0."""
        return SHIFT16_PAD if self.racc and gate(self.kernel, "FEC-RX-005") else 0

    @property
    def sub_len(self) -> int:
        """Bytes of ``cbd_datlen`` that are not frame: FCS plus the pad (FEC-RX-002)."""
        return FCS_LEN + (SHIFT16_PAD if self.racc else 0)


class Bus:
    """Bus address -> page bytes: the memory the MAC's DMA reads and writes."""

    def __init__(self) -> None:
        self.pages: dict[int, XPage] = {}

    def page_for(self, page: pp.Page) -> XPage:
        """The bytes of a page_pool page (created zeroed on first use)."""
        x = self.pages.get(page.pfn)
        if x is None or x.handle is not page:
            x = self.pages[page.pfn] = XPage.zeroed(PAGE_SIZE, handle=page)
        return x

    def foreign(self, pfn: int) -> XPage:
        x = self.pages.get(pfn)
        if x is None:
            x = self.pages[pfn] = XPage.zeroed(PAGE_SIZE)
        return x

    def at(self, addr: int) -> tuple[XPage, int]:
        page = self.pages.get(addr >> PAGE_SHIFT)
        if page is None:
            raise InvalidConfig("DMA to an address no page backs", field="bufaddr",
                                value=addr, rule="FEC-DEV-001")
        return page, addr & (PAGE_SIZE - 1)


@attrs.define(eq=False)
class RxQueue:
    """``struct fec_enet_priv_rx_q``."""

    ring: Ring
    pool: pp.PagePool
    xdp_rxq: XdpRxqInfo
    rx_skb_info: list[pp.Page | None]
    stats: list[int] = attrs.field(factory=new_xdp_stats)
    cur: int = 0


@attrs.define(eq=False)
class TxQueue:
    """``struct fec_enet_priv_tx_q`` (``dirty_tx`` kept as an index; ``qid`` is
    ``bd.qid``, the queue's index)."""

    ring: Ring
    tx_buf: list[TxBuffer]
    cur: int = 0
    dirty_tx: int = 0
    qid: int = 0

    def free_descs(self) -> int:
        """``fec_enet_get_free_txdesc_num`` (FEC-TX-002)."""
        entries = (self.dirty_tx - self.cur) - 1
        return entries if entries >= 0 else entries + self.ring.size


@attrs.define
class Syncs:
    """The DMA syncs fec itself issues (page_pool's own go to its ``DmaDevice``).

    Each sync is logged as (bus address, length) and counted; with ``record=False``
    only the counts are kept (long per-packet runs), as ``DmaDevice(record=False)`` does.
    """

    for_cpu: list[tuple[int, int]] = attrs.field(factory=list)  # (bus addr, len)
    for_device: list[tuple[int, int]] = attrs.field(factory=list)
    unmaps: int = 0
    record: bool = True
    cpu_syncs: int = 0
    device_syncs: int = 0

    def sync_for_cpu(self, addr: int, length: int) -> None:
        """``dma_sync_single_for_cpu`` over ``length`` bytes at ``addr``."""
        self.cpu_syncs += 1
        if self.record:
            self.for_cpu.append((addr, length))

    def sync_for_device(self, addr: int, length: int) -> None:
        """``dma_sync_single_for_device`` over ``length`` bytes at ``addr``."""
        self.device_syncs += 1
        if self.record:
            self.for_device.append((addr, length))


@attrs.define
class OpCount:
    """Per-run operation counts for the XDP_TX cost comparison (FEC-XDP-008)."""

    xdp_frame_conversions: int = 0


@attrs.define(eq=False)
class Fep:
    """``struct fec_enet_private`` as far as RX, XDP and XDP transmit use it."""

    cfg: FecConfig
    bus: Bus
    dev: pp.DmaDevice
    allocator: pp.PageAllocator
    rxq: RxQueue
    txqs: list[TxQueue]
    stats: NetStats = attrs.field(factory=NetStats)
    #: the pools of RX queues 1.. (FEC-RX-018): filled at open, no frame reaches them
    idle_pools: list[pp.PagePool] = attrs.field(factory=list)
    syncs: Syncs = attrs.field(factory=Syncs)
    ops: OpCount = attrs.field(factory=OpCount)
    #: pages of skbs handed to the stack and not yet freed (FEC-RX-012)
    stack: list[pp.Page] = attrs.field(factory=list)
    #: pages a successful XDP_REDIRECT handed to its target (FEC-XDP-006)
    redirected: list[pp.Page] = attrs.field(factory=list)
    #: returned ndo_xdp_xmit frames (page of the foreign sender), in order
    ndo_returned: list[XdpFrame] = attrs.field(factory=list)
    xdp_flushes: int = 0
    running: bool = True
    #: the MAC's own ring positions (device model): next RX slot, next TX slot per queue
    device_rx: int = 0
    device_tx: list[int] = attrs.field(factory=lambda: [0, 0, 0])

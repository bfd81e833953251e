"""The MAC side: how the ENET writes received frames into the RX ring and consumes the
TX ring (FEC-DEV-001 .. FEC-DEV-007).  Every rule here is a *device-model assumption*:
hardware behaviour inferred from what ``fec_enet_rx_queue`` and ``fec_enet_tx_queue``
expect (v6.17-rc3), not read in any source.  A real ENET may differ; the conformance
component lets a target say which device fields it reports.
"""

from __future__ import annotations

import zlib

import attrs

from reference import checksum, packet
from reference.errors import InvalidConfig, MalformedInput
from reference.fec.bufdesc import (
    BD_ENET_RX_CL,
    BD_ENET_RX_CR,
    BD_ENET_RX_EMPTY,
    BD_ENET_RX_ICE,
    BD_ENET_RX_INT,
    BD_ENET_RX_INTR,
    BD_ENET_RX_LAST,
    BD_ENET_RX_LG,
    BD_ENET_RX_NO,
    BD_ENET_RX_OV,
    BD_ENET_RX_PCR,
    BD_ENET_RX_VLAN,
    BD_ENET_RX_WRAP,
    BD_ENET_TX_READY,
    BD_ENET_TX_STATS,
    BufdescEx,
)
from reference.fec.state import FCS_LEN, PKT_MAXBUF_SIZE, SHIFT16_PAD, Fep
from reference.trace import Trace, emit

#: ``cbd_bdu`` bit the ENET sets when it has written the enhanced words (assumed).
BD_ENET_RX_BDU = 0x80000000
ETH_P_8021Q = 0x8100
#: Faults a scenario may inject on one received frame.
FAULTS = frozenset({"crc", "overrun", "non_octet", "no_last", "split"})


@attrs.frozen
class RxWrite:
    """What the device did with one frame: the slots it wrote, or ``dropped``."""

    slots: tuple[int, ...]
    dropped: bool = False


def fcs(frame: bytes) -> bytes:
    """The Ethernet FCS as it follows the frame on the wire (CRC-32, LSB first)."""
    return (zlib.crc32(frame) & 0xFFFFFFFF).to_bytes(4, "little")


def _csum_bits(frame: bytes) -> int:
    """FEC-DEV-004: the RX checksum accelerator's verdict bits for one frame."""
    try:
        info = packet.parse(frame)
    except MalformedInput:
        return 0
    bits = 0
    if info.l3 is packet.L3.IPV4:
        hdr = frame[info.l3_offset : info.l3_offset + info.l3_hdr_len]
        try:
            if checksum.ip_fast_csum(hdr, info.l3_hdr_len // 4) != 0:
                bits |= BD_ENET_RX_ICE
        except MalformedInput:
            bits |= BD_ENET_RX_ICE
    try:
        status = checksum.l4_checksum_status(frame, info)
    except MalformedInput:
        return bits
    if status in (checksum.L4Csum.BAD, checksum.L4Csum.MALFORMED):
        bits |= BD_ENET_RX_PCR
    return bits


def receive(fep: Fep, frame: bytes, faults: frozenset[str] = frozenset(),
            split_at: int = 0, trace: Trace | None = None) -> RxWrite:
    """The MAC receives ``frame`` (wire bytes without FCS) into the RX ring.

    FEC-DEV-001: the frame goes into the buffer of the slot the device points at, only if
    that slot is EMPTY; otherwise it is dropped (ring full).  FEC-DEV-002: the stored
    bytes are [2 pad bytes with SHIFT16] + frame + FCS and ``cbd_datlen`` counts them all.
    FEC-DEV-003: a frame whose stored bytes (pad, frame, FCS) exceed ``PKT_MAXBUF_SIZE``
    is truncated there and flagged LG and TR (``BD_ENET_RX_CL``).  FEC-DEV-005: the status
    written is W and INTR kept, E cleared, L set, plus error bits; faults add CR, OV, NO or drop L.
    """
    cfg = fep.cfg
    ring = fep.rxq.ring
    if len(frame) < 14:
        raise InvalidConfig("a received frame has at least an Ethernet header",
                            field="frame", value=len(frame), rule="FEC-DEV-002")
    if cfg.bufdesc_ex and len(frame) < 18 and frame[12:14] == ETH_P_8021Q.to_bytes(2, "big"):
        # FEC-DEV-006: what the MAC flags, and what fec_enet_rx_vlan then pulls, for a tag
        # cut short is not modelled (the skb would be shorter than its Ethernet header).
        raise InvalidConfig("an 802.1Q frame holds its tag and the inner ethertype (18 "
                            "bytes) on a MAC with enhanced descriptors",
                            field="frame", value=len(frame), rule="FEC-DEV-006")
    unknown = faults - FAULTS
    if unknown:
        raise InvalidConfig("unknown fault", field="faults", value=sorted(unknown),
                            rule="FEC-DEV-005")
    pad = b"\x00" * SHIFT16_PAD if cfg.racc else b""
    wire = frame + fcs(frame)
    if "crc" in faults:
        wire = wire[:-1] + bytes([wire[-1] ^ 0xFF])
    errs = 0
    # The SHIFT16 pad counts toward the limit (assumed, as QEMU's ENET does): the stored
    # bytes never outgrow the one MRBR-sized buffer fec gives a frame.
    limit = PKT_MAXBUF_SIZE - len(pad)
    if len(wire) > limit:
        wire = wire[:limit]
        errs |= BD_ENET_RX_LG | BD_ENET_RX_CL
        emit(trace, "FEC-DEV-003", "frame longer than the limit: truncated, LG|TR",
             length=len(pad) + len(frame) + FCS_LEN, limit=PKT_MAXBUF_SIZE)
    elif len(pad) + len(wire) > cfg.max_fl:
        # Longer than MAX_FL but within FTRL: stored whole, flagged LG (the pad counts
        # here too, as on the board's QEMU ENET).
        errs |= BD_ENET_RX_LG
        emit(trace, "FEC-DEV-003", "frame longer than MAX_FL: LG",
             length=len(pad) + len(frame) + FCS_LEN, limit=cfg.max_fl)
    if "crc" in faults:
        errs |= BD_ENET_RX_CR
    if "overrun" in faults:
        errs |= BD_ENET_RX_OV
    if "non_octet" in faults:
        errs |= BD_ENET_RX_NO
    stored = pad + wire
    esc = 0
    if cfg.bufdesc_ex:
        if len(frame) >= 16 and int.from_bytes(frame[12:14], "big") == ETH_P_8021Q:
            esc |= BD_ENET_RX_VLAN
            emit(trace, "FEC-DEV-006", "802.1Q frame: VLAN bit set in the extended BD")
        if cfg.rx_csum:
            esc |= _csum_bits(frame)
            emit(trace, "FEC-DEV-004", "checksum accelerator verdict", esc=esc)
    chunks = [stored]
    if "split" in faults:
        k = split_at if 0 < split_at < len(stored) else len(stored) // 2
        chunks = [stored[:k], stored[k:]]
        emit(trace, "FEC-DEV-007", "frame spread over two descriptors", first=k,
             total=len(stored))
    slots: list[int] = []
    index = fep.device_rx
    for n, chunk in enumerate(chunks):
        bd = ring.get(index)
        if not bd.cbd_sc & BD_ENET_RX_EMPTY:
            emit(trace, "FEC-DEV-001", "no empty descriptor: frame dropped", slot=index)
            return RxWrite(tuple(slots), dropped=True)
        page, off = fep.bus.at(bd.cbd_bufaddr)
        page.data[off : off + len(chunk)] = chunk
        last = n == len(chunks) - 1
        # FEC-DEV-007: a frame spread over BDs: only the last has L, its length is the total.
        datlen = len(stored) if last else len(chunk)
        sc = bd.cbd_sc & (BD_ENET_RX_WRAP | BD_ENET_RX_INTR)
        if last and "no_last" not in faults:
            sc |= BD_ENET_RX_LAST
        if last:
            sc |= errs
        bd_esc, bd_prot, bd_bdu = bd.cbd_esc, bd.cbd_prot, bd.cbd_bdu
        if cfg.bufdesc_ex:  # the enhanced words: INT kept, the verdict on the last, BDU
            bd_esc = (bd.cbd_esc & BD_ENET_RX_INT) | (esc if last else 0)
            bd_prot, bd_bdu = 0, BD_ENET_RX_BDU
        new = BufdescEx(cbd_datlen=datlen, cbd_sc=sc, cbd_bufaddr=bd.cbd_bufaddr,
                        cbd_esc=bd_esc, cbd_prot=bd_prot, cbd_bdu=bd_bdu, ts=bd.ts,
                        res0=bd.res0)
        ring.put(index, new)
        emit(trace, "FEC-DEV-005", "frame written", slot=index, datlen=datlen, sc=sc,
             esc=new.cbd_esc)
        slots.append(index)
        index = 0 if bd.cbd_sc & BD_ENET_RX_WRAP else index + 1
        if index >= ring.size:
            index = 0
        fep.device_rx = index
    return RxWrite(tuple(slots))


def transmit(fep: Fep, queue: int = 0, count: int | None = None, status: int = 0,
             trace: Trace | None = None) -> list[bytes]:
    """The MAC sends READY TX descriptors in order (FEC-DEV-008): it reads
    ``cbd_datlen`` bytes at ``cbd_bufaddr``, then clears READY and ORs ``status`` (TX
    error/status bits the scenario injects) into ``cbd_sc``.  Returns the wire frames."""
    txq = fep.txqs[queue]
    ring = txq.ring
    sent: list[bytes] = []
    index = fep.device_tx[queue]
    while count is None or len(sent) < count:
        bd = ring.get(index)
        if not bd.cbd_sc & BD_ENET_TX_READY:
            break
        page, off = fep.bus.at(bd.cbd_bufaddr)
        sent.append(bytes(page.data[off : off + bd.cbd_datlen]))
        sc = (bd.cbd_sc & ~BD_ENET_TX_READY) | (status & BD_ENET_TX_STATS)
        ring.put(index, BufdescEx(bd.cbd_datlen, sc, bd.cbd_bufaddr, bd.cbd_esc, bd.cbd_prot,
                                  bd.cbd_bdu, bd.ts, bd.res0))
        emit(trace, "FEC-DEV-008", "frame transmitted", queue=queue, slot=index,
             len=bd.cbd_datlen)
        index = ring.next(index)
    fep.device_tx[queue] = index
    return sent

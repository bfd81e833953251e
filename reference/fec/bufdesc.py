"""FEC buffer descriptors: ``struct bufdesc`` and ``struct bufdesc_ex`` (FEC-BD-001 .. 006).

Layouts and bit values from ``drivers/net/ethernet/freescale/fec.h`` (Kingxukai/linux
v6.17-rc3, blob 0291023e).  The descriptor words are little endian when the kernel is
built for ARM or ARM64 (i.MX) and big endian otherwise (ColdFire); in the big-endian
layout the two 16-bit words of ``struct bufdesc`` trade places (FEC-BD-001).  Both
layouts are precompiled ``struct.Struct`` objects, selected by :class:`ByteOrder`.
"""

from __future__ import annotations

import enum
import struct

import attrs

from reference.errors import MalformedInput, Truncated

# --- cbd_sc, shared names (fec.h "commproc" block) (FEC-BD-003) ------------------------
BD_SC_EMPTY = 0x8000
BD_SC_READY = 0x8000
BD_SC_WRAP = 0x2000
BD_SC_INTRPT = 0x1000
BD_SC_CM = 0x0200
BD_SC_ID = 0x0100
BD_SC_P = 0x0100
BD_SC_BR = 0x0020
BD_SC_FR = 0x0010
BD_SC_PR = 0x0008
BD_SC_OV = 0x0002
BD_SC_CD = 0x0001

# --- RX cbd_sc (FEC-BD-003) -------------------------------------------------------------
BD_ENET_RX_EMPTY = 0x8000
BD_ENET_RX_WRAP = 0x2000
BD_ENET_RX_INTR = 0x1000
BD_ENET_RX_LAST = 0x0800
BD_ENET_RX_FIRST = 0x0400
BD_ENET_RX_MISS = 0x0100
BD_ENET_RX_LG = 0x0020
BD_ENET_RX_NO = 0x0010
BD_ENET_RX_SH = 0x0008
BD_ENET_RX_CR = 0x0004
BD_ENET_RX_OV = 0x0002
BD_ENET_RX_CL = 0x0001
#: The status bits the driver clears when it re-arms a slot (FEC-RX-007).
BD_ENET_RX_STATS = 0x013F
#: Same value as BD_ENET_RX_FIRST; fec.h defines it beside the extended bits.
BD_ENET_RX_PTP = 0x0400

# --- RX cbd_esc (extended descriptors) (FEC-BD-004) --------------------------------------
BD_ENET_RX_INT = 0x00800000
BD_ENET_RX_ICE = 0x00000020
BD_ENET_RX_PCR = 0x00000010
BD_ENET_RX_VLAN = 0x00000004
FLAG_RX_CSUM_ENABLED = BD_ENET_RX_ICE | BD_ENET_RX_PCR
FLAG_RX_CSUM_ERROR = BD_ENET_RX_ICE | BD_ENET_RX_PCR

# --- TX cbd_sc (FEC-BD-003) -------------------------------------------------------------
BD_ENET_TX_READY = 0x8000
BD_ENET_TX_PAD = 0x4000
BD_ENET_TX_WRAP = 0x2000
BD_ENET_TX_INTR = 0x1000
BD_ENET_TX_LAST = 0x0800
BD_ENET_TX_TC = 0x0400
BD_ENET_TX_DEF = 0x0200
BD_ENET_TX_HB = 0x0100
BD_ENET_TX_LC = 0x0080
BD_ENET_TX_RL = 0x0040
BD_ENET_TX_RCMASK = 0x003C
BD_ENET_TX_UN = 0x0002
BD_ENET_TX_CSL = 0x0001
BD_ENET_TX_STATS = 0x0FFF

# --- TX cbd_esc (FEC-BD-004) ------------------------------------------------------------
BD_ENET_TX_INT = 0x40000000
BD_ENET_TX_TS = 0x20000000
BD_ENET_TX_PINS = 0x10000000
BD_ENET_TX_IINS = 0x08000000


def FEC_TX_BD_FTYPE(q: int) -> int:
    """AVB frame type of TX queue ``q`` in ``cbd_esc``."""
    return (q & 0xF) << 20


#: RX status bit names in descending value, for explain and error messages.
RX_SC_NAMES: tuple[tuple[int, str], ...] = (
    (BD_ENET_RX_EMPTY, "E"), (BD_ENET_RX_WRAP, "W"), (BD_ENET_RX_INTR, "I"),
    (BD_ENET_RX_LAST, "L"), (BD_ENET_RX_FIRST, "F"), (BD_ENET_RX_MISS, "M"),
    (BD_ENET_RX_LG, "LG"), (BD_ENET_RX_NO, "NO"), (BD_ENET_RX_SH, "SH"),
    (BD_ENET_RX_CR, "CR"), (BD_ENET_RX_OV, "OV"), (BD_ENET_RX_CL, "CL/TR"),
)


def rx_sc_names(sc: int) -> str:
    """``cbd_sc`` of an RX descriptor as flag names, e.g. ``"W|L"``."""
    return "|".join(name for bit, name in RX_SC_NAMES if sc & bit) or "0"


class ByteOrder(enum.Enum):
    """Which ``struct bufdesc`` layout the kernel was built with (FEC-BD-001)."""

    #: ``CONFIG_ARM || CONFIG_ARM64`` (i.MX): ``__le16``/``__le32``, datlen first.
    LITTLE = "little"
    #: every other build (ColdFire): ``__be16``/``__be32``, cbd_sc first.
    BIG = "big"


# FEC-BD-001: (datlen, sc, bufaddr) on LE; (sc, datlen, bufaddr) on BE.
_BD = {ByteOrder.LITTLE: struct.Struct("<HHI"), ByteOrder.BIG: struct.Struct(">HHI")}
# FEC-BD-002: the base descriptor, then cbd_esc, cbd_prot, cbd_bdu, ts, res0[4].
_BD_EX = {ByteOrder.LITTLE: struct.Struct("<HHIIIII4H"),
          ByteOrder.BIG: struct.Struct(">HHIIIII4H")}

#: The layouts the range checks pack into (any order checks the same widths).
_BD_WIDTHS = _BD[ByteOrder.LITTLE]
_BD_EX_WIDTHS = _BD_EX[ByteOrder.LITTLE]

#: ``sizeof(struct bufdesc)`` and ``sizeof(struct bufdesc_ex)``.
BUFDESC_SIZE = 8
BUFDESC_EX_SIZE = 32

#: (field, byte offset, size) per byte order (FEC-BD-001, FEC-BD-002).
LAYOUT: dict[ByteOrder, tuple[tuple[str, int, int], ...]] = {
    ByteOrder.LITTLE: (("cbd_datlen", 0, 2), ("cbd_sc", 2, 2), ("cbd_bufaddr", 4, 4)),
    ByteOrder.BIG: (("cbd_sc", 0, 2), ("cbd_datlen", 2, 2), ("cbd_bufaddr", 4, 4)),
}
LAYOUT_EX_TAIL: tuple[tuple[str, int, int], ...] = (
    ("cbd_esc", 8, 4), ("cbd_prot", 12, 4), ("cbd_bdu", 16, 4), ("ts", 20, 4),
    ("res0", 24, 8),
)


def _check(name: str, value: int, bits: int) -> None:
    if not isinstance(value, int) or not 0 <= value < 1 << bits:
        raise MalformedInput(f"is a {bits}-bit field", field=name, value=value,
                             rule="FEC-BD-005")


#: (field, width in bits) of the integer words, in declaration order (FEC-BD-005).
_BD_BITS: tuple[tuple[str, int], ...] = (("cbd_datlen", 16), ("cbd_sc", 16), ("cbd_bufaddr", 32))
_BD_EX_BITS = (*_BD_BITS, ("cbd_esc", 32), ("cbd_prot", 32), ("cbd_bdu", 32), ("ts", 32))


def _fits(layout: struct.Struct, *values: object) -> bool:
    """Whether ``values`` pack into ``layout``: each an integer within its field's width."""
    try:
        layout.pack(*values)
    except struct.error:
        return False
    return True


def _check_fields(bd: object, widths: tuple[tuple[str, int], ...]) -> None:
    """Raise for the first field of ``bd`` that is not an int of its width (FEC-BD-005)."""
    for name, bits in widths:
        _check(name, getattr(bd, name), bits)


def _need(buf: bytes | bytearray | memoryview, offset: int, size: int, what: str) -> None:
    if offset < 0 or len(buf) - offset < size:
        raise Truncated(field=what, offset=offset, needed=size,
                        available=max(0, len(buf) - offset), rule="FEC-BD-005")


@attrs.frozen
class Bufdesc:
    """``struct bufdesc``: data length, control/status, buffer bus address (FEC-BD-001)."""

    cbd_datlen: int = 0
    cbd_sc: int = 0
    cbd_bufaddr: int = 0

    # FEC-BD-001: pack and unpack take the byte order without a default: the layout is
    # the kernel build's (the ring's ``order``), and a default would hide a caller that
    # dropped it.

    def __attrs_post_init__(self) -> None:
        # FEC-BD-005: one packing attempt checks every width; only when it fails are the
        # fields walked, in declaration order, to name the first that does not fit.
        if not _fits(_BD_WIDTHS, self.cbd_datlen, self.cbd_sc, self.cbd_bufaddr):
            _check_fields(self, _BD_BITS)

    @classmethod
    def unpack(cls, buf: bytes | bytearray | memoryview, offset: int,
               order: ByteOrder) -> Bufdesc:
        _need(buf, offset, BUFDESC_SIZE, "bufdesc")
        a, b, addr = _BD[order].unpack_from(buf, offset)
        return cls(a, b, addr) if order is ByteOrder.LITTLE else cls(b, a, addr)

    def pack(self, order: ByteOrder) -> bytes:
        if order is ByteOrder.LITTLE:
            return _BD[order].pack(self.cbd_datlen, self.cbd_sc, self.cbd_bufaddr)
        return _BD[order].pack(self.cbd_sc, self.cbd_datlen, self.cbd_bufaddr)


@attrs.frozen
class BufdescEx:
    """``struct bufdesc_ex``: a :class:`Bufdesc` plus the enhanced words (FEC-BD-002)."""

    cbd_datlen: int = 0
    cbd_sc: int = 0
    cbd_bufaddr: int = 0
    cbd_esc: int = 0
    cbd_prot: int = 0
    cbd_bdu: int = 0
    ts: int = 0
    res0: tuple[int, int, int, int] = (0, 0, 0, 0)

    def __attrs_post_init__(self) -> None:
        # FEC-BD-005: as for Bufdesc, one packing attempt is the whole check (of a tuple
        # res0; anything else takes the walk, which checks its length and words).
        if isinstance(self.res0, tuple) and _fits(
                _BD_EX_WIDTHS, self.cbd_datlen, self.cbd_sc, self.cbd_bufaddr, self.cbd_esc,
                self.cbd_prot, self.cbd_bdu, self.ts, *self.res0):
            return
        _check_fields(self, _BD_EX_BITS)
        if len(self.res0) != 4:
            raise MalformedInput("res0 has four 16-bit words", field="res0", value=self.res0,
                                 rule="FEC-BD-005")
        for i, word in enumerate(self.res0):
            _check(f"res0[{i}]", word, 16)

    @property
    def desc(self) -> Bufdesc:
        return Bufdesc(self.cbd_datlen, self.cbd_sc, self.cbd_bufaddr)

    @classmethod
    def unpack(cls, buf: bytes | bytearray | memoryview, offset: int,
               order: ByteOrder) -> BufdescEx:
        _need(buf, offset, BUFDESC_EX_SIZE, "bufdesc_ex")
        a, b, addr, esc, prot, bdu, ts, r0, r1, r2, r3 = _BD_EX[order].unpack_from(buf, offset)
        datlen, sc = (a, b) if order is ByteOrder.LITTLE else (b, a)
        return cls(datlen, sc, addr, esc, prot, bdu, ts, (r0, r1, r2, r3))

    def pack(self, order: ByteOrder) -> bytes:
        a, b = ((self.cbd_datlen, self.cbd_sc) if order is ByteOrder.LITTLE
                else (self.cbd_sc, self.cbd_datlen))
        return _BD_EX[order].pack(a, b, self.cbd_bufaddr, self.cbd_esc, self.cbd_prot,
                                  self.cbd_bdu, self.ts, *self.res0)


AnyBd = Bufdesc | BufdescEx


class Ring:
    """A descriptor ring as the coherent memory both sides share (FEC-BD-006).

    The device and the driver each read and write whole descriptors through
    :meth:`get` / :meth:`put`; the bytes in :attr:`mem` are what a real ring holds.
    ``fec_enet_get_nextdesc`` wraps after the last slot (index arithmetic here).
    """

    def __init__(self, size: int, *, ex: bool, order: ByteOrder) -> None:
        if size <= 0:
            raise MalformedInput("a ring has at least one descriptor", field="ring_size",
                                 value=size, rule="FEC-BD-006")
        self.size = size
        self.ex = ex
        self.order = order
        self.dsize = BUFDESC_EX_SIZE if ex else BUFDESC_SIZE
        self.mem = bytearray(size * self.dsize)

    @property
    def dsize_log2(self) -> int:
        return self.dsize.bit_length() - 1

    def get(self, index: int) -> BufdescEx:
        """The descriptor at ``index``; base descriptors are widened with zero ext words."""
        off = index * self.dsize
        if self.ex:
            return BufdescEx.unpack(self.mem, off, self.order)
        d = Bufdesc.unpack(self.mem, off, self.order)
        return BufdescEx(d.cbd_datlen, d.cbd_sc, d.cbd_bufaddr)

    def put(self, index: int, bd: BufdescEx) -> None:
        off = index * self.dsize
        raw = bd.pack(self.order) if self.ex else bd.desc.pack(self.order)
        self.mem[off : off + self.dsize] = raw

    def next(self, index: int) -> int:
        return 0 if index >= self.size - 1 else index + 1


def unpack_ring(data: bytes | bytearray | memoryview, *, ex: bool,
                order: ByteOrder) -> list[BufdescEx] | list[Bufdesc]:
    """Decode a whole ring image; its length must be a multiple of the descriptor size."""
    dsize = BUFDESC_EX_SIZE if ex else BUFDESC_SIZE
    if len(data) % dsize:
        raise MalformedInput(f"ring image is not a multiple of {dsize} bytes",
                             field="ring", offset=len(data) - len(data) % dsize,
                             value=len(data), rule="FEC-BD-006")
    if ex:
        return [BufdescEx.unpack(data, off, order) for off in range(0, len(data), dsize)]
    return [Bufdesc.unpack(data, off, order) for off in range(0, len(data), dsize)]

"""FEC buffer descriptors against the layouts and constants transcribed from fec.h
(Kingxukai/linux v6.17-rc3, drivers/net/ethernet/freescale/fec.h)."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.errors import MalformedInput, Truncated
from reference.fec import bufdesc as bd
from reference.fec.bufdesc import Bufdesc, BufdescEx, ByteOrder, Ring, unpack_ring

# Transcribed from fec.h: the #if defined(CONFIG_ARM) || defined(CONFIG_ARM64) branch
# declares cbd_datlen, cbd_sc, cbd_bufaddr (little endian); the #else branch cbd_sc,
# cbd_datlen, cbd_bufaddr (big endian).  bufdesc_ex appends four __fec32 and res0[4].
LE_OFFSETS = {"cbd_datlen": (0, 2), "cbd_sc": (2, 2), "cbd_bufaddr": (4, 4)}
BE_OFFSETS = {"cbd_sc": (0, 2), "cbd_datlen": (2, 2), "cbd_bufaddr": (4, 4)}
EX_OFFSETS = {"cbd_esc": (8, 4), "cbd_prot": (12, 4), "cbd_bdu": (16, 4), "ts": (20, 4)}

# Transcribed from fec.h (value, name).
RX_BITS = {
    "BD_ENET_RX_EMPTY": 0x8000, "BD_ENET_RX_WRAP": 0x2000, "BD_ENET_RX_INTR": 0x1000,
    "BD_ENET_RX_LAST": 0x0800, "BD_ENET_RX_FIRST": 0x0400, "BD_ENET_RX_MISS": 0x0100,
    "BD_ENET_RX_LG": 0x0020, "BD_ENET_RX_NO": 0x0010, "BD_ENET_RX_SH": 0x0008,
    "BD_ENET_RX_CR": 0x0004, "BD_ENET_RX_OV": 0x0002, "BD_ENET_RX_CL": 0x0001,
    "BD_ENET_RX_STATS": 0x013F, "BD_ENET_RX_PTP": 0x0400,
}
TX_BITS = {
    "BD_ENET_TX_READY": 0x8000, "BD_ENET_TX_PAD": 0x4000, "BD_ENET_TX_WRAP": 0x2000,
    "BD_ENET_TX_INTR": 0x1000, "BD_ENET_TX_LAST": 0x0800, "BD_ENET_TX_TC": 0x0400,
    "BD_ENET_TX_DEF": 0x0200, "BD_ENET_TX_HB": 0x0100, "BD_ENET_TX_LC": 0x0080,
    "BD_ENET_TX_RL": 0x0040, "BD_ENET_TX_RCMASK": 0x003C, "BD_ENET_TX_UN": 0x0002,
    "BD_ENET_TX_CSL": 0x0001, "BD_ENET_TX_STATS": 0x0FFF,
}
SC_BITS = {"BD_SC_EMPTY": 0x8000, "BD_SC_READY": 0x8000, "BD_SC_WRAP": 0x2000,
           "BD_SC_INTRPT": 0x1000, "BD_SC_CM": 0x0200, "BD_SC_ID": 0x0100, "BD_SC_P": 0x0100,
           "BD_SC_BR": 0x0020, "BD_SC_FR": 0x0010, "BD_SC_PR": 0x0008, "BD_SC_OV": 0x0002,
           "BD_SC_CD": 0x0001}
EX_BITS = {"BD_ENET_RX_INT": 0x00800000, "BD_ENET_RX_ICE": 0x00000020,
           "BD_ENET_RX_PCR": 0x00000010, "BD_ENET_RX_VLAN": 0x00000004,
           "FLAG_RX_CSUM_ENABLED": 0x30, "FLAG_RX_CSUM_ERROR": 0x30,
           "BD_ENET_TX_INT": 0x40000000, "BD_ENET_TX_TS": 0x20000000,
           "BD_ENET_TX_PINS": 0x10000000, "BD_ENET_TX_IINS": 0x08000000}


def _field(raw: bytes, off: int, size: int, order: str) -> int:
    return int.from_bytes(raw[off : off + size], order)  # type: ignore[arg-type]


@pytest.mark.rule("FEC-BD-003", "FEC-BD-004")
@pytest.mark.parametrize("table", [RX_BITS, TX_BITS, SC_BITS, EX_BITS],
                         ids=["rx", "tx", "sc", "ex"])
def test_bit_values_match_fec_h(table: dict[str, int]) -> None:
    for name, value in table.items():
        assert getattr(bd, name) == value, name
    assert bd.FEC_TX_BD_FTYPE(0x12) == 0x2 << 20


@pytest.mark.rule("FEC-BD-001")
@pytest.mark.parametrize(("order", "offsets", "endian"),
                         [(ByteOrder.LITTLE, LE_OFFSETS, "little"),
                          (ByteOrder.BIG, BE_OFFSETS, "big")])
def test_bufdesc_layout(order: ByteOrder, offsets: dict[str, tuple[int, int]],
                        endian: str) -> None:
    d = Bufdesc(cbd_datlen=0x1234, cbd_sc=0x8A01, cbd_bufaddr=0xDEADBEEF)
    raw = d.pack(order)
    assert len(raw) == 8 == bd.BUFDESC_SIZE
    for name, (off, size) in offsets.items():
        assert _field(raw, off, size, endian) == getattr(d, name), name
    assert dict((n, (o, s)) for n, o, s in bd.LAYOUT[order]) == offsets


@pytest.mark.rule("FEC-BD-002")
@pytest.mark.parametrize("order", list(ByteOrder))
def test_bufdesc_ex_layout(order: ByteOrder) -> None:
    endian = order.value
    d = BufdescEx(0x5EE, 0x8800, 0x01020304, 0x00800004, 0x11223344, 0x80000000,
                  0xCAFEF00D, (1, 2, 3, 0xFFFF))
    raw = d.pack(order)
    assert len(raw) == 32 == bd.BUFDESC_EX_SIZE
    assert raw[:8] == d.desc.pack(order)
    for name, (off, size) in EX_OFFSETS.items():
        assert _field(raw, off, size, endian) == getattr(d, name), name
    assert [_field(raw, 24 + 2 * i, 2, endian) for i in range(4)] == [1, 2, 3, 0xFFFF]


@pytest.mark.rule("FEC-BD-001", "FEC-BD-002")
@given(order=st.sampled_from(list(ByteOrder)), raw=st.binary(min_size=32, max_size=32))
def test_round_trip_both_orders(order: ByteOrder, raw: bytes) -> None:
    assert BufdescEx.unpack(raw, 0, order).pack(order) == raw
    assert Bufdesc.unpack(raw, 0, order).pack(order) == raw[:8]


@pytest.mark.rule("FEC-BD-001")
def test_byte_orders_differ_as_the_header_says() -> None:
    d = Bufdesc(cbd_datlen=0x0040, cbd_sc=0x8000, cbd_bufaddr=0x10000100)
    assert d.pack(ByteOrder.LITTLE) == bytes([0x40, 0, 0, 0x80, 0, 1, 0, 0x10])
    assert d.pack(ByteOrder.BIG) == bytes([0x80, 0, 0, 0x40, 0x10, 0, 1, 0])


@pytest.mark.rule("FEC-BD-005")
def test_truncated_and_out_of_range() -> None:
    with pytest.raises(Truncated):
        Bufdesc.unpack(b"\x00" * 7, 0, ByteOrder.LITTLE)
    with pytest.raises(Truncated):
        BufdescEx.unpack(b"\x00" * 40, 16, ByteOrder.BIG)
    with pytest.raises(MalformedInput):
        Bufdesc(cbd_datlen=0x10000)
    with pytest.raises(MalformedInput):
        BufdescEx(cbd_esc=-1)
    with pytest.raises(MalformedInput):
        BufdescEx(res0=(0, 0, 0))  # type: ignore[arg-type]


@pytest.mark.rule("FEC-BD-006", "FEC-BD-005")
def test_ring_wraps_and_images_decode() -> None:
    ring = Ring(4, ex=False, order=ByteOrder.BIG)
    assert [ring.next(i) for i in range(4)] == [1, 2, 3, 0]
    assert ring.dsize_log2 == 3
    ring.put(3, BufdescEx(cbd_sc=0x2000, cbd_bufaddr=8))
    descs = unpack_ring(bytes(ring.mem), ex=False, order=ByteOrder.BIG)
    assert descs[3] == Bufdesc(0, 0x2000, 8)
    with pytest.raises(MalformedInput):
        unpack_ring(b"\x00" * 33, ex=True, order=ByteOrder.LITTLE)
    assert Ring(2, ex=True, order=ByteOrder.LITTLE).dsize_log2 == 5


@pytest.mark.rule("FEC-BD-005")
@given(order=st.sampled_from(list(ByteOrder)), raw=st.binary(max_size=40),
       offset=st.integers(-4, 40))
def test_any_bytes_decode_or_raise_a_typed_error(order: ByteOrder, raw: bytes,
                                                 offset: int) -> None:
    for cls in (Bufdesc, BufdescEx):
        with contextlib.suppress(MalformedInput):
            cls.unpack(raw, offset, order)

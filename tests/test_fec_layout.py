"""The FEC buffer descriptors against two independent references.

1. QEMU's i.MX FEC/ENET emulation, ``include/hw/net/imx_fec.h`` in qemu/qemu at commit
   2a1823456c3ab500a90c3fe0cfcc5fc6f560282b (a QEMU 9.2-or-later header: it includes
   ``hw/net/lan9118_phy.h``): ``IMXFECBufDesc`` (the legacy 8-byte descriptor),
   ``IMXENETBufDesc`` (the 32-byte enhanced one) and its ``ENET_BD_*`` bits.  QEMU models
   the little-endian i.MX part and splits the kernel's 32-bit words into 16-bit halves:
   ``status``/``option`` are ``cbd_esc``'s low/high halves, ``checksum``/``head_proto``
   ``cbd_prot``'s, ``last_buffer`` is ``cbd_bdu``, ``reserved[2]`` is ``res0[4]``.
2. The kernel's ``struct bufdesc``/``struct bufdesc_ex`` as declared in
   ``drivers/net/ethernet/freescale/fec.h`` (read in /work/ksrc/7.3 and /work/ksrc/6.12 and
   Kingxukai/linux v6.17-rc3 at commit 0291023e; the declarations are the same in all
   three): one member order under ``CONFIG_ARM || CONFIG_ARM64`` (little endian), another
   otherwise (big endian).

Offsets and sizes come from ctypes (the platform's C layout rules), and, when a C compiler
is present, from compiling the transcribed declarations; the model's packed bytes must
put each field where both references say.
"""

from __future__ import annotations

import ctypes
import itertools
import shutil
import subprocess
from pathlib import Path

import pytest

from reference.fec import bufdesc as bd
from reference.fec.bufdesc import BufdescEx, ByteOrder

u16, u32 = ctypes.c_uint16, ctypes.c_uint32


# --- QEMU, include/hw/net/imx_fec.h (transcribed member lists) ------------------------


class IMXFECBufDesc(ctypes.LittleEndianStructure):
    _fields_ = [("length", u16), ("flags", u16), ("data", u32)]


class IMXENETBufDesc(ctypes.LittleEndianStructure):
    _fields_ = [("length", u16), ("flags", u16), ("data", u32),
                ("status", u16), ("option", u16), ("checksum", u16), ("head_proto", u16),
                ("last_buffer", u32), ("timestamp", u32), ("reserved", u32 * 2)]


#: ENET_BD_* in ``flags`` (the kernel's ``cbd_sc``), as QEMU defines them.
QEMU_FLAGS = {
    "ENET_BD_R": 1 << 15, "ENET_BD_E": 1 << 15, "ENET_BD_O1": 1 << 14, "ENET_BD_W": 1 << 13,
    "ENET_BD_O2": 1 << 12, "ENET_BD_L": 1 << 11, "ENET_BD_TC": 1 << 10,
    "ENET_BD_ABC": 1 << 9, "ENET_BD_M": 1 << 8, "ENET_BD_BC": 1 << 7, "ENET_BD_MC": 1 << 6,
    "ENET_BD_LG": 1 << 5, "ENET_BD_NO": 1 << 4, "ENET_BD_CR": 1 << 2, "ENET_BD_OV": 1 << 1,
    "ENET_BD_TR": 1 << 0,
}
#: ENET_BD_* in ``option`` (the high half of ``cbd_esc``).
QEMU_OPTION = {"ENET_BD_ME": 1 << 15, "ENET_BD_TX_INT": 1 << 14, "ENET_BD_TS": 1 << 13,
               "ENET_BD_PINS": 1 << 12, "ENET_BD_IINS": 1 << 11, "ENET_BD_PE": 1 << 10,
               "ENET_BD_CE": 1 << 9, "ENET_BD_UC": 1 << 8, "ENET_BD_RX_INT": 1 << 7}
#: ENET_BD_* in ``status`` (the low half of ``cbd_esc``), RX side.
QEMU_STATUS = {"ENET_BD_ICE": 1 << 5, "ENET_BD_PCR": 1 << 4, "ENET_BD_VLAN": 1 << 2,
               "ENET_BD_IPV6": 1 << 1, "ENET_BD_FRAG": 1 << 0}
#: In ``last_buffer`` (the kernel's ``cbd_bdu``).
QEMU_BDU = 1 << 31


# --- the kernel, drivers/net/ethernet/freescale/fec.h ----------------------------------


class KernelBufdescLE(ctypes.LittleEndianStructure):  # CONFIG_ARM || CONFIG_ARM64
    _fields_ = [("cbd_datlen", u16), ("cbd_sc", u16), ("cbd_bufaddr", u32)]


class KernelBufdescBE(ctypes.BigEndianStructure):  # ColdFire and everything else
    _fields_ = [("cbd_sc", u16), ("cbd_datlen", u16), ("cbd_bufaddr", u32)]


def _kernel_ex(base: type[ctypes.Structure], big: bool) -> type[ctypes.Structure]:
    parent = ctypes.BigEndianStructure if big else ctypes.LittleEndianStructure
    return type("KernelBufdescEx", (parent,), {"_fields_": [
        ("desc", base), ("cbd_esc", u32), ("cbd_prot", u32), ("cbd_bdu", u32), ("ts", u32),
        ("res0", u16 * 4)]})


KERNEL = {ByteOrder.LITTLE: KernelBufdescLE, ByteOrder.BIG: KernelBufdescBE}
FIELDS = ("cbd_datlen", "cbd_sc", "cbd_bufaddr")
SAMPLE = BufdescEx(cbd_datlen=0x05EE, cbd_sc=0xA801, cbd_bufaddr=0x10203040,
                   cbd_esc=0x40A00034, cbd_prot=0x11223344, cbd_bdu=0x80000000,
                   ts=0xCAFEF00D, res0=(1, 2, 3, 0xFFFF))


@pytest.mark.rule("FEC-BD-001", "FEC-BD-002")
def test_model_layout_matches_qemu() -> None:
    assert ctypes.sizeof(IMXFECBufDesc) == bd.BUFDESC_SIZE == 8
    assert ctypes.sizeof(IMXENETBufDesc) == bd.BUFDESC_EX_SIZE == 32
    legacy = IMXFECBufDesc.from_buffer_copy(SAMPLE.desc.pack(ByteOrder.LITTLE))
    assert (legacy.length, legacy.flags, legacy.data) == (
        SAMPLE.cbd_datlen, SAMPLE.cbd_sc, SAMPLE.cbd_bufaddr)
    ex = IMXENETBufDesc.from_buffer_copy(SAMPLE.pack(ByteOrder.LITTLE))
    assert (ex.length, ex.flags, ex.data) == (SAMPLE.cbd_datlen, SAMPLE.cbd_sc,
                                              SAMPLE.cbd_bufaddr)
    assert (ex.option << 16 | ex.status) == SAMPLE.cbd_esc
    assert (ex.head_proto << 16 | ex.checksum) == SAMPLE.cbd_prot
    assert ex.last_buffer == SAMPLE.cbd_bdu and ex.timestamp == SAMPLE.ts
    res = bytes(ex.reserved)
    assert [int.from_bytes(res[i:i + 2], "little") for i in range(0, 8, 2)] == [1, 2, 3, 0xFFFF]
    # The model's own offset table, field by field.
    for name, off, size in bd.LAYOUT[ByteOrder.LITTLE]:
        qname = {"cbd_datlen": "length", "cbd_sc": "flags", "cbd_bufaddr": "data"}[name]
        member = getattr(IMXFECBufDesc, qname)
        assert (member.offset, member.size) == (off, size), name
    halves = {"cbd_esc": ("status", "option"), "cbd_prot": ("checksum", "head_proto"),
              "cbd_bdu": ("last_buffer",), "ts": ("timestamp",), "res0": ("reserved",)}
    for name, off, size in bd.LAYOUT_EX_TAIL:
        members = [getattr(IMXENETBufDesc, q) for q in halves[name]]
        # The QEMU members cover exactly the kernel field's bytes, in order.
        assert members[0].offset == off, name
        assert sum(m.size for m in members) == size, name
        assert all(a.offset + a.size == b.offset for a, b in itertools.pairwise(members)), name


#: (model constant, QEMU bit it must equal).  The driver's INTR bit is the ENET's
#: software-owned RO2/TO2 and its TX PAD is TO1; TR is the bit fec.h calls CL
#: (FEC-DEV-003).  ``cbd_esc`` bits are QEMU's ``option`` bits shifted up 16.
SAME_BITS: tuple[tuple[str, int], ...] = (
    ("BD_ENET_RX_EMPTY", QEMU_FLAGS["ENET_BD_E"]), ("BD_ENET_TX_READY", QEMU_FLAGS["ENET_BD_R"]),
    ("BD_ENET_RX_WRAP", QEMU_FLAGS["ENET_BD_W"]), ("BD_ENET_TX_WRAP", QEMU_FLAGS["ENET_BD_W"]),
    ("BD_SC_WRAP", QEMU_FLAGS["ENET_BD_W"]),
    ("BD_ENET_RX_INTR", QEMU_FLAGS["ENET_BD_O2"]), ("BD_ENET_TX_INTR", QEMU_FLAGS["ENET_BD_O2"]),
    ("BD_ENET_TX_PAD", QEMU_FLAGS["ENET_BD_O1"]),
    ("BD_ENET_RX_LAST", QEMU_FLAGS["ENET_BD_L"]), ("BD_ENET_TX_LAST", QEMU_FLAGS["ENET_BD_L"]),
    ("BD_ENET_TX_TC", QEMU_FLAGS["ENET_BD_TC"]), ("BD_ENET_RX_MISS", QEMU_FLAGS["ENET_BD_M"]),
    ("BD_ENET_RX_LG", QEMU_FLAGS["ENET_BD_LG"]), ("BD_ENET_RX_NO", QEMU_FLAGS["ENET_BD_NO"]),
    ("BD_ENET_RX_CR", QEMU_FLAGS["ENET_BD_CR"]), ("BD_ENET_RX_OV", QEMU_FLAGS["ENET_BD_OV"]),
    ("BD_ENET_RX_CL", QEMU_FLAGS["ENET_BD_TR"]),
    ("BD_ENET_TX_INT", QEMU_OPTION["ENET_BD_TX_INT"] << 16),
    ("BD_ENET_TX_TS", QEMU_OPTION["ENET_BD_TS"] << 16),
    ("BD_ENET_TX_PINS", QEMU_OPTION["ENET_BD_PINS"] << 16),
    ("BD_ENET_TX_IINS", QEMU_OPTION["ENET_BD_IINS"] << 16),
    ("BD_ENET_RX_INT", QEMU_OPTION["ENET_BD_RX_INT"] << 16),
    ("BD_ENET_RX_ICE", QEMU_STATUS["ENET_BD_ICE"]), ("BD_ENET_RX_PCR", QEMU_STATUS["ENET_BD_PCR"]),
    ("BD_ENET_RX_VLAN", QEMU_STATUS["ENET_BD_VLAN"]),
)


@pytest.mark.rule("FEC-BD-003", "FEC-BD-004")
@pytest.mark.parametrize(("name", "qemu"), SAME_BITS, ids=[n for n, _ in SAME_BITS])
def test_bit_matches_qemu(name: str, qemu: int) -> None:
    assert getattr(bd, name) == qemu


@pytest.mark.rule("FEC-BD-003", "FEC-BD-004")
def test_bit_sets_against_qemu() -> None:
    q = QEMU_FLAGS
    # BD_ENET_RX_STATS is MISS and LG..CL; QEMU names no bit 3, fec.h calls it SH.
    stats = q["ENET_BD_M"] | q["ENET_BD_LG"] | q["ENET_BD_NO"] | q["ENET_BD_CR"] \
        | q["ENET_BD_OV"] | q["ENET_BD_TR"] | bd.BD_ENET_RX_SH
    assert stats == bd.BD_ENET_RX_STATS and bd.BD_ENET_RX_SH == 0x8
    # FEC-BD-004: QEMU has IPV6 and FRAG status bits; fec.h (so the model) has none.
    assert not hasattr(bd, "BD_ENET_RX_IPV6") and not hasattr(bd, "BD_ENET_RX_FRAG")
    # FEC_TX_BD_FTYPE (bits 20..23 of cbd_esc) is option bits 4..7: clear of every option
    # bit QEMU names but RX_INT, which only RX descriptors carry.
    o = QEMU_OPTION
    ftype = bd.FEC_TX_BD_FTYPE(0xF) >> 16
    assert ftype == 0xF0 and not ftype & (sum(o.values()) & ~o["ENET_BD_RX_INT"])
    assert QEMU_BDU == 0x80000000  # the cbd_bdu the device model writes (FEC-DEV-005)


@pytest.mark.rule("FEC-BD-001", "FEC-BD-002")
@pytest.mark.parametrize("order", list(ByteOrder))
def test_model_layout_matches_fec_h(order: ByteOrder) -> None:
    base = KERNEL[order]
    ex_type = _kernel_ex(base, order is ByteOrder.BIG)
    assert ctypes.sizeof(base) == 8 and ctypes.sizeof(ex_type) == 32
    legacy = base.from_buffer_copy(SAMPLE.desc.pack(order))
    assert tuple(getattr(legacy, f) for f in FIELDS) == (
        SAMPLE.cbd_datlen, SAMPLE.cbd_sc, SAMPLE.cbd_bufaddr)
    ex = ex_type.from_buffer_copy(SAMPLE.pack(order))
    assert tuple(getattr(ex.desc, f) for f in FIELDS) == (
        SAMPLE.cbd_datlen, SAMPLE.cbd_sc, SAMPLE.cbd_bufaddr)
    assert (ex.cbd_esc, ex.cbd_prot, ex.cbd_bdu, ex.ts, tuple(ex.res0)) == (
        SAMPLE.cbd_esc, SAMPLE.cbd_prot, SAMPLE.cbd_bdu, SAMPLE.ts, SAMPLE.res0)
    assert {n: (o, s) for n, o, s in bd.LAYOUT[order]} == {
        f: (getattr(base, f).offset, getattr(base, f).size) for f in FIELDS}


_C_SOURCE = r"""
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
/* QEMU include/hw/net/imx_fec.h (transcribed) */
typedef struct { uint16_t length; uint16_t flags; uint32_t data; } IMXFECBufDesc;
typedef struct { uint16_t length; uint16_t flags; uint32_t data; uint16_t status;
    uint16_t option; uint16_t checksum; uint16_t head_proto; uint32_t last_buffer;
    uint32_t timestamp; uint32_t reserved[2]; } IMXENETBufDesc;
/* fec.h, the CONFIG_ARM || CONFIG_ARM64 branch (transcribed) */
struct bufdesc { uint16_t cbd_datlen; uint16_t cbd_sc; uint32_t cbd_bufaddr; };
struct bufdesc_ex { struct bufdesc desc; uint32_t cbd_esc; uint32_t cbd_prot;
    uint32_t cbd_bdu; uint32_t ts; uint16_t res0[4]; };
#define P(t, m) printf("%s.%s %zu\n", #t, #m, offsetof(t, m))
int main(void) {
    printf("IMXFECBufDesc %zu\nIMXENETBufDesc %zu\n", sizeof(IMXFECBufDesc),
           sizeof(IMXENETBufDesc));
    printf("bufdesc %zu\nbufdesc_ex %zu\n", sizeof(struct bufdesc),
           sizeof(struct bufdesc_ex));
    P(IMXENETBufDesc, status); P(IMXENETBufDesc, checksum);
    P(IMXENETBufDesc, last_buffer); P(IMXENETBufDesc, timestamp);
    P(IMXENETBufDesc, reserved);
    P(struct bufdesc_ex, cbd_esc); P(struct bufdesc_ex, cbd_prot);
    P(struct bufdesc_ex, cbd_bdu); P(struct bufdesc_ex, ts); P(struct bufdesc_ex, res0);
    return 0;
}
"""


@pytest.mark.rule("FEC-BD-002")
def test_compiled_offsets_agree(tmp_path: Path) -> None:
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler")
    src, exe = tmp_path / "layout.c", tmp_path / "layout"
    src.write_text(_C_SOURCE)
    subprocess.run([cc, "-o", str(exe), str(src)], check=True, capture_output=True)
    out = dict(line.rsplit(" ", 1) for line in subprocess.run(
        [str(exe)], check=True, capture_output=True, text=True).stdout.splitlines())
    sizes = {k: int(v) for k, v in out.items()}
    assert sizes["IMXFECBufDesc"] == sizes["bufdesc"] == bd.BUFDESC_SIZE
    assert sizes["IMXENETBufDesc"] == sizes["bufdesc_ex"] == bd.BUFDESC_EX_SIZE
    pairs = {"cbd_esc": "status", "cbd_prot": "checksum", "cbd_bdu": "last_buffer",
             "ts": "timestamp", "res0": "reserved"}
    tail = {name: off for name, off, _ in bd.LAYOUT_EX_TAIL}
    for kname, qname in pairs.items():
        assert sizes[f"struct bufdesc_ex.{kname}"] == sizes[f"IMXENETBufDesc.{qname}"] \
            == tail[kname], kname

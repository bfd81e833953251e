"""The struct sizes behind the XDP buffer geometry, per architecture, against a C compiler
(SPEC: XDP-BUFF-001, FEC-RX-017).

Independent reference: clang's own ABI for each target (``x86_64-linux-gnu``,
``aarch64-linux-gnu``, ``armv7a-linux-gnueabihf`` as Debian's armhf kernel is built).  The
test writes the member types of ``struct skb_shared_info`` and ``struct xdp_frame`` as this
project reads them in ``include/linux/skbuff.h`` and ``include/net/xdp.h`` (6.12 and 6.17
shapes; types only, with the kernel's typedefs replaced by plain C types), asks the
compiler to check with ``_Static_assert`` that ``sizeof`` and the offset of ``frags`` are
what ``reference.xdp.arch.Arch`` says, and compiles with ``-fsyntax-only`` (no target
libraries needed).  The model computes its numbers from a field table; the compiler lays the
struct out itself, padding rules of each ABI included (the 8-byte alignment of a 64-bit
integer on 32-bit ARM, which the i386 ABI would not give).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from reference.fec.state import ARCHES, PAGE_SIZE, FecConfig
from reference.xdp.arch import X86_64, Arch

CLANG = shutil.which("clang")
pytestmark = pytest.mark.skipif(CLANG is None, reason="clang is not installed (CI installs it)")

#: The member types, in order.  ``long`` stands for pointers' and ``netmem_ref``'s width.
SOURCE = """
#include <stddef.h>
struct frag { unsigned long netmem; unsigned int len; unsigned int offset; };
struct shinfo {
    unsigned char flags, meta_len, nr_frags, tx_flags;
    unsigned short gso_size, gso_segs;
    void *frag_list;
    union { long long hwtstamp; void *netdev_data; unsigned long long *tx_ts; } ts;
    unsigned int gso_type;
    unsigned int tskey;
    int dataref;
    union { struct { unsigned int size, truesize; } xdp; void *destructor_arg; } u;
    struct frag frags[%(frags)d];
};
/* 6.12: u16 len/headroom and the 8-byte struct xdp_mem_info. */
struct frame_612 {
    void *data; unsigned short len, headroom; unsigned int metasize;
    struct { unsigned int type, id; } mem;
    void *dev_rx; unsigned int frame_sz; unsigned int flags;
};
/* 6.14 and later: u32 len/headroom and a 32-bit mem_type. */
struct frame_617 {
    void *data; unsigned int len, headroom, metasize;
    unsigned int mem_type;
    void *dev_rx; unsigned int frame_sz; unsigned int flags;
};
#define ALIGN(x, a) (((x) + (a) - 1) / (a) * (a))
_Static_assert(sizeof(struct shinfo) == %(shinfo)d, "sizeof(struct skb_shared_info)");
_Static_assert(ALIGN(sizeof(struct shinfo), %(cache)d) == %(reserved)d, "SKB_DATA_ALIGN");
_Static_assert(sizeof(struct frame_612) == %(frame)d, "sizeof(struct xdp_frame), 6.12");
_Static_assert(sizeof(struct frame_617) == %(frame)d, "sizeof(struct xdp_frame), 6.17");
"""

TARGETS = {
    "x86_64-linux-gnu": X86_64,
    "aarch64-linux-gnu": ARCHES["arm64"],
    "armv7a-linux-gnueabihf": ARCHES["armhf"],
}


def _check(target: str, arch: Arch, tmp_path: Path) -> None:
    src = tmp_path / f"{target}.c"
    src.write_text(SOURCE % {"frags": arch.max_skb_frags, "shinfo": arch.sizeof_skb_shared_info,
                             "cache": arch.smp_cache_bytes, "reserved": arch.shinfo_reserved,
                             "frame": arch.sizeof_xdp_frame})
    assert CLANG is not None
    proc = subprocess.run([CLANG, f"--target={target}", "-ffreestanding", "-fsyntax-only",
                           str(src)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.rule("XDP-BUFF-001")
@pytest.mark.parametrize("target", sorted(TARGETS))
def test_struct_sizes_match_the_compilers_abi(target: str, tmp_path: Path) -> None:
    _check(target, TARGETS[target], tmp_path)


@pytest.mark.rule("XDP-BUFF-001")
@pytest.mark.parametrize("frags", [18, 45])
def test_more_frags_on_32_bit_arm(frags: int, tmp_path: Path) -> None:
    _check("armv7a-linux-gnueabihf", Arch(name="armhf", bits_per_long=32, max_skb_frags=frags),
           tmp_path)


@pytest.mark.rule("XDP-BUFF-001", "FEC-RX-017")
def test_hand_worked_numbers() -> None:
    """44 + 12 * 17 = 248 -> 256 on armhf; 48 + 16 * 17 = 320 on arm64 (SPEC text)."""
    armhf, arm64 = ARCHES["armhf"], ARCHES["arm64"]
    assert (armhf.sizeof_skb_shared_info, armhf.shinfo_reserved, armhf.sizeof_xdp_frame) == \
        (248, 256, 32)
    assert (arm64.sizeof_skb_shared_info, arm64.shinfo_reserved, arm64.sizeof_xdp_frame) == \
        (320, 320, 40)
    assert FecConfig(arch="armhf").rx_frsize == PAGE_SIZE - 256 - 256 == 3584
    assert FecConfig().rx_frsize == PAGE_SIZE - 256 - 320 == 3520

"""xdp_frame layout, conversion, return paths and memory types (XDP-FRAME-*, XDP-MEM-*).

Independent references: ``struct xdp_frame`` from ``include/net/xdp.h`` (v6.17)
recomputed here from its field list; the return dispatch of ``net/core/xdp.c:
__xdp_return`` transcribed as a table; hand-worked conversions.
"""

from __future__ import annotations

import errno
import pathlib
import shutil
import struct
import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.errors import StateViolation, Truncated
from reference.trace import Trace
from reference.xdp.arch import X86_64
from reference.xdp.buff import (
    XDP_FLAGS_HAS_FRAGS,
    XdpBuff,
    xdp_buff_add_frag,
    xdp_init_buff,
    xdp_prepare_buff,
)
from reference.xdp.frame import (
    XDP_FRAME_LAYOUT,
    XDP_FRAME_STRUCT,
    XdpFrame,
    XdpFrameHeader,
    xdp_convert_buff_to_frame,
    xdp_convert_frame_to_buff,
    xdp_get_frame_len,
    xdp_get_shared_info_from_frame,
    xdp_return_frame,
    xdp_return_frame_bulk,
    xdp_return_frame_rx_napi,
    xdp_scrub_frame,
    xdp_update_frame_from_buff,
)
from reference.xdp.helpers import bpf_xdp_adjust_meta
from reference.xdp.mem import (
    MemReturn,
    MemType,
    ReturnPath,
    XdpFrameBulk,
    xdp_flush_frame_bulk,
    xdp_return,
)
from reference.xdp.memory import Page
from reference.xdp.rxq import NetDev, RegState, XdpRxqInfo
from reference.xdp.warn import KernelWarn


def c_layout(fields: list[tuple[str, int, int]]) -> tuple[dict[str, int], int]:
    offsets: dict[str, int] = {}
    pos = max_align = 0
    for name, size, align in fields:
        pos = -(-pos // align) * align
        offsets[name] = pos
        pos += size
        max_align = max(max_align, align)
    return offsets, -(-pos // max_align) * max_align


# include/net/xdp.h (v6.17), LP64: void *data; u32 len, headroom, metasize;
# enum xdp_mem_type mem_type:32; struct net_device *dev_rx; u32 frame_sz, flags.
XDP_FRAME_FIELDS = [("data", 8, 8), ("len", 4, 4), ("headroom", 4, 4), ("metasize", 4, 4),
                    ("mem_type", 4, 4), ("dev_rx", 8, 8), ("frame_sz", 4, 4),
                    ("flags", 4, 4)]


def rxq(mem_type: int = MemType.MEM_TYPE_PAGE_POOL) -> XdpRxqInfo:
    q = XdpRxqInfo(dev=NetDev(2), reg_state=RegState.REGISTERED, frag_size=4096)
    q.mem.type = mem_type
    return q


def buff(headroom: int, data_len: int = 100, mem_type: int = MemType.MEM_TYPE_PAGE_POOL,
         meta_valid: bool = True, frame_sz: int = 4096, page_size: int = 4096) -> XdpBuff:
    xdp = XdpBuff()
    xdp_init_buff(xdp, frame_sz, rxq(mem_type))
    page = Page(bytearray(b"\xa5" * page_size))
    xdp_prepare_buff(xdp, page, 0, headroom, data_len, meta_valid)
    return xdp


# --- XDP-FRAME-001 ----------------------------------------------------------------------

@pytest.mark.rule("XDP-FRAME-001")
def test_xdp_frame_layout_from_header() -> None:
    offsets, size = c_layout(XDP_FRAME_FIELDS)
    assert size == 40
    assert offsets == {"data": 0, "len": 8, "headroom": 12, "metasize": 16, "mem_type": 20,
                       "dev_rx": 24, "frame_sz": 32, "flags": 36}
    assert [(n, offsets[n], s) for n, s, _ in XDP_FRAME_FIELDS] == list(XDP_FRAME_LAYOUT)
    assert XDP_FRAME_STRUCT.size == X86_64.sizeof_xdp_frame == size


@pytest.mark.rule("XDP-FRAME-001")
def test_header_pack_unpack_roundtrip_and_truncation() -> None:
    h = XdpFrameHeader(data=296, len=100, headroom=216, metasize=0, mem_type=2, dev_rx=5,
                       frame_sz=4096, flags=1)
    raw = h.pack()
    assert len(raw) == 40
    # Independent decode with the field offsets of the header.
    assert struct.unpack_from("<Q", raw, 0)[0] == 296
    assert struct.unpack_from("<I", raw, 20)[0] == 2  # mem_type, no mem id anywhere
    assert struct.unpack_from("<Q", raw, 24)[0] == 5
    assert XdpFrameHeader.unpack(raw) == h
    with pytest.raises(Truncated):
        XdpFrameHeader.unpack(raw[:39])


# --- XDP-FRAME-002 ----------------------------------------------------------------------

@pytest.mark.rule("XDP-FRAME-002")
@pytest.mark.parametrize(("headroom", "ok"), [(40, True), (39, False), (0, False)])
def test_conversion_needs_sizeof_frame_headroom(headroom: int, ok: bool) -> None:
    xdp = buff(headroom)
    assert xdp.page is not None
    before = bytes(xdp.page.data)
    frame = xdp_convert_buff_to_frame(xdp)
    if ok:
        assert frame is not None and frame.headroom == 0
    else:
        assert frame is None
        assert bytes(xdp.page.data) == before


@pytest.mark.rule("XDP-FRAME-002")
def test_conversion_counts_metadata_against_the_headroom() -> None:
    # headroom 48 with 8 bytes of metadata: 48 - 8 = 40 fits exactly ...
    xdp = buff(48)
    assert bpf_xdp_adjust_meta(xdp, -8) == 0
    frame = xdp_convert_buff_to_frame(xdp)
    assert frame is not None and (frame.headroom, frame.metasize) == (8, 8)
    # ... 47 - 8 = 39 does not.  (adjust_meta refuses metadata reaching into the xdp_frame
    # area, so the driver-set geometry is built by hand.)
    xdp = buff(47)
    xdp.data_meta = xdp.data - 8
    assert xdp_update_frame_from_buff(xdp, XdpFrame(xdp.page, 0)) == -errno.ENOSPC  # type: ignore[arg-type]
    assert xdp_convert_buff_to_frame(xdp) is None
    # Unsupported metadata (data_meta = data + 1) counts as 0.
    xdp = buff(40, meta_valid=False)
    frame = xdp_convert_buff_to_frame(xdp)
    assert frame is not None and frame.metasize == 0


@pytest.mark.rule("XDP-FRAME-002")
def test_negative_room_passes_like_the_c_comparison() -> None:
    xdp = buff(40)
    xdp.data_meta = xdp.data - 48  # below data_hard_start: room = 40 - 48 = -8
    frame = xdp_convert_buff_to_frame(xdp)
    assert frame is not None and frame.metasize == 48


# --- XDP-FRAME-003 ----------------------------------------------------------------------

@pytest.mark.rule("XDP-FRAME-003")
def test_missing_reserved_tailroom_is_a_driver_bug() -> None:
    # hard end = 4096 - 320 = 3776; data_end exactly there is fine, one more is a WARN.
    ok = buff(256, data_len=3776 - 256)
    assert xdp_convert_buff_to_frame(ok) is not None
    bad = buff(256, data_len=3776 - 256 + 1)
    before = bytes(bad.page.data)  # type: ignore[union-attr]
    # include/net/xdp.h: xdp_update_frame_from_buff() XDP_WARNs and returns -ENOSPC, so the
    # conversion gives NULL like any other failure; the WARN is the observable.
    warns: list[KernelWarn] = []
    trace = Trace()
    assert xdp_convert_buff_to_frame(bad, warns=warns, trace=trace) is None
    assert warns == [KernelWarn("xdp_update_frame_from_buff",
                                "Driver BUG: missing reserved tailroom", "XDP-FRAME-003")]
    assert "XDP-FRAME-003" in trace.rules()
    assert bytes(bad.page.data) == before  # type: ignore[union-attr]
    frame = XdpFrame(bad.page, 0)  # type: ignore[arg-type]
    assert xdp_update_frame_from_buff(bad, frame) == -errno.ENOSPC
    assert bytes(bad.page.data) == before  # type: ignore[union-attr]
    # The headroom check comes first: no WARN when the headroom already fails.
    both = buff(20, data_len=3776)
    warns.clear()
    assert xdp_convert_buff_to_frame(both, warns=warns) is None
    assert warns == []


# --- XDP-FRAME-004 ----------------------------------------------------------------------

@pytest.mark.rule("XDP-FRAME-004")
def test_frame_written_in_place_and_dev_rx_left_stale() -> None:
    xdp = buff(256, data_len=100, mem_type=MemType.MEM_TYPE_PAGE_ORDER0)
    page = xdp.page
    assert page is not None
    page.data[24:32] = (7).to_bytes(8, "little")  # whatever the headroom held
    assert bpf_xdp_adjust_meta(xdp, -4) == 0
    xdp.flags = XDP_FLAGS_HAS_FRAGS
    before = bytes(page.data)
    frame = xdp_convert_buff_to_frame(xdp)
    assert frame is not None and frame.page is page and frame.addr == 0
    assert frame.header() == XdpFrameHeader(data=256, len=100, headroom=216, metasize=4,
                                            mem_type=MemType.MEM_TYPE_PAGE_ORDER0,
                                            dev_rx=7, frame_sz=4096, flags=1)
    assert bytes(page.data[40:]) == before[40:]  # metadata and packet untouched
    assert frame.payload() == before[256:356]


@pytest.mark.rule("XDP-FRAME-004")
@given(headroom=st.integers(0, 400), data_len=st.integers(0, 400),
       metalen=st.integers(0, 63).map(lambda k: 4 * k))
def test_conversion_property(headroom: int, data_len: int, metalen: int) -> None:
    xdp = buff(headroom, data_len)
    meta_ret = bpf_xdp_adjust_meta(xdp, -metalen)
    meta = metalen if meta_ret == 0 else 0
    before = bytes(xdp.page.data)  # type: ignore[union-attr]
    frame = xdp_convert_buff_to_frame(xdp)
    if headroom - meta < 40:
        assert frame is None and bytes(xdp.page.data) == before  # type: ignore[union-attr]
        return
    assert frame is not None
    assert (frame.data, frame.len, frame.headroom, frame.metasize) == \
        (headroom, data_len, headroom - 40, meta)
    assert bytes(frame.page.data[40:]) == before[40:]


# --- XDP-FRAME-005 ----------------------------------------------------------------------

@pytest.mark.rule("XDP-FRAME-005")
def test_xsk_conversion_copies_into_an_order0_page() -> None:
    xdp = buff(256, data_len=100, mem_type=MemType.MEM_TYPE_XSK_BUFF_POOL)
    assert bpf_xdp_adjust_meta(xdp, -8) == 0
    xdp.page.data[248:356] = bytes(range(108))  # type: ignore[union-attr]
    xdp.flags = XDP_FLAGS_HAS_FRAGS
    released: list[MemReturn] = []
    frame = xdp_convert_buff_to_frame(xdp, released=released)
    assert frame is not None and frame.page is not xdp.page and frame.addr == 0
    # headroom = metasize (6.12.117, 7.3.4): back from the frame, the hard start is the page's
    assert frame.header() == XdpFrameHeader(data=48, len=100, headroom=8, metasize=8,
                                            mem_type=MemType.MEM_TYPE_PAGE_ORDER0,
                                            dev_rx=0, frame_sz=4096, flags=0)
    assert bytes(frame.page.data[40:148]) == bytes(range(108))
    assert [(r.page, r.path) for r in released] == [(xdp.page, ReturnPath.XSK_BUFF_FREE)]


@pytest.mark.rule("XDP-FRAME-005")
def test_xsk_conversion_bounds_and_allocation_failure() -> None:
    # 40 + totsize <= PAGE_SIZE, where totsize counts the metadata: 4056 bytes fit.
    xsk = MemType.MEM_TYPE_XSK_BUFF_POOL
    for data_len, fits in ((4056, True), (4057, False)):
        xdp = buff(0, data_len=data_len, mem_type=xsk, frame_sz=8192, page_size=8192)
        assert (xdp_convert_buff_to_frame(xdp) is not None) is fits
    for data_len, fits in ((4048, True), (4049, False)):
        xdp = buff(64, data_len=data_len, mem_type=xsk, frame_sz=8192, page_size=8192)
        assert bpf_xdp_adjust_meta(xdp, -8) == 0
        assert (xdp_convert_buff_to_frame(xdp) is not None) is fits
    released: list[MemReturn] = []
    nomem = buff(256, mem_type=MemType.MEM_TYPE_XSK_BUFF_POOL)
    assert xdp_convert_buff_to_frame(nomem, alloc_page=lambda: None, released=released) is None
    assert released == []


# --- XDP-FRAME-006 ----------------------------------------------------------------------

def frame_with_frags() -> tuple[XdpFrame, list[Page]]:
    xdp = buff(256, data_len=100)
    a, b = Page.zeroed(4096), Page.zeroed(4096)
    xdp_buff_add_frag(xdp, a, 0, 1000, 4096, try_coalesce=False)
    xdp_buff_add_frag(xdp, b, 0, 500, 4096, try_coalesce=False)
    frame = xdp_convert_buff_to_frame(xdp)
    assert frame is not None
    return frame, [a, b]


@pytest.mark.rule("XDP-FRAME-006")
def test_frame_back_to_buff_shared_info_and_length() -> None:
    frame, (_a, _b) = frame_with_frags()
    info = xdp_get_shared_info_from_frame(frame)
    assert info is frame.page.shinfo[3776] and info.nr_frags == 2
    assert xdp_get_frame_len(frame) == 1600
    back = XdpBuff()
    xdp_convert_frame_to_buff(frame, back)
    assert (back.data_hard_start, back.data, back.data_end, back.data_meta) == \
        (0, 256, 356, 256)
    assert (back.frame_sz, back.flags, back.rxq, back.txq) == (4096, 1, None, None)
    xdp_scrub_frame(frame)
    assert (frame.data, frame.dev_rx, frame.len) == (0, 0, 100)


# --- XDP-FRAME-007 ----------------------------------------------------------------------

@pytest.mark.rule("XDP-FRAME-007")
def test_frame_returns_frags_then_head() -> None:
    frame, (a, b) = frame_with_frags()
    out = xdp_return_frame(frame)
    assert [r.page for r in out] == [a, b, frame.page]
    assert all(r.path is ReturnPath.PAGE_POOL_PUT_FULL and not r.napi_direct for r in out)
    napi = xdp_return_frame_rx_napi(frame)
    assert all(r.napi_direct for r in napi)
    assert not any(r.napi_direct for r in
                   xdp_return_frame_rx_napi(frame, return_frame_no_direct=True))


@pytest.mark.rule("XDP-FRAME-007")
def test_frame_of_xsk_type_cannot_be_returned() -> None:
    frame = xdp_convert_buff_to_frame(buff(256))
    assert frame is not None
    frame.write(mem_type=MemType.MEM_TYPE_XSK_BUFF_POOL)
    with pytest.raises(StateViolation):
        xdp_return_frame(frame)


# --- XDP-MEM-001 / XDP-MEM-002 ----------------------------------------------------------

@pytest.mark.rule("XDP-MEM-001")
def test_mem_type_values() -> None:
    assert [(m.name, int(m)) for m in MemType] == [
        ("MEM_TYPE_PAGE_SHARED", 0), ("MEM_TYPE_PAGE_ORDER0", 1), ("MEM_TYPE_PAGE_POOL", 2),
        ("MEM_TYPE_XSK_BUFF_POOL", 3), ("MEM_TYPE_MAX", 4)]


# net/core/xdp.c: __xdp_return, case by case: (type, napi_direct in, no_direct flag)
# -> (callee, napi_direct the callee receives).
RETURN_TABLE = [
    (2, True, False, "page_pool_put_full_netmem", True),
    (2, True, True, "page_pool_put_full_netmem", False),
    (2, False, False, "page_pool_put_full_netmem", False),
    (0, True, False, "page_frag_free", False),
    (1, True, False, "put_page", False),
    (3, False, False, "xsk_buff_free", False),
]


@pytest.mark.rule("XDP-MEM-002")
@pytest.mark.parametrize(("mem_type", "direct", "no_direct", "callee", "effective"),
                         RETURN_TABLE)
def test_xdp_return_dispatch(mem_type: int, direct: bool, no_direct: bool, callee: str,
                             effective: bool) -> None:
    page = Page.zeroed(64)
    r = xdp_return(page, mem_type, direct, from_xdp_buff=True, caller="t",
                   return_frame_no_direct=no_direct)
    assert (r.page, r.mem_type, r.path.value, r.napi_direct) == (page, mem_type, callee,
                                                                  effective)


@pytest.mark.rule("XDP-MEM-002")
@pytest.mark.parametrize("mem_type", [4, 99, -1])
def test_xdp_return_unknown_type_warns_and_leaks(mem_type: int) -> None:
    # net/core/xdp.c: __xdp_return() default case: WARN, then break: nothing frees the page.
    page = Page.zeroed(64)
    trace = Trace()
    r = xdp_return(page, mem_type, True, from_xdp_buff=True, caller="t", trace=trace)
    assert (r.page, r.mem_type, r.path, r.napi_direct) == (page, mem_type,
                                                          ReturnPath.WARN_LEAKED, False)
    assert [e.rule for e in trace] == ["XDP-MEM-002"]
    assert "WARN in __xdp_return" in trace.events[0].what


@pytest.mark.rule("XDP-MEM-002", "XDP-FRAME-007")
def test_frame_with_stale_unknown_mem_type_leaks_every_page() -> None:
    frame = xdp_convert_buff_to_frame(buff(256))
    assert frame is not None
    frame.write(mem_type=7)
    assert [r.path for r in xdp_return_frame(frame)] == [ReturnPath.WARN_LEAKED]


@pytest.mark.rule("XDP-MEM-002")
def test_xdp_return_xsk_needs_a_buffer() -> None:
    with pytest.raises(StateViolation):
        xdp_return(Page.zeroed(64), 3, False, from_xdp_buff=False, caller="t")


# --- XDP-MEM-004 ------------------------------------------------------------------------

def single(mem_type: int = MemType.MEM_TYPE_PAGE_POOL) -> XdpFrame:
    frame = xdp_convert_buff_to_frame(buff(256, mem_type=mem_type))
    assert frame is not None
    return frame


@pytest.mark.rule("XDP-MEM-004")
def test_bulk_return_queues_sixteen_page_pool_pages() -> None:
    bq = XdpFrameBulk()
    other = single(MemType.MEM_TYPE_PAGE_ORDER0)
    [r] = xdp_return_frame_bulk(other, bq)
    assert r.path is ReturnPath.PUT_PAGE and bq.count == 0
    frames = [single() for _ in range(17)]
    for f in frames[:16]:
        assert xdp_return_frame_bulk(f, bq) == []
    assert bq.count == 16
    flushed = xdp_return_frame_bulk(frames[16], bq)
    assert [r.page for r in flushed] == [f.page for f in frames[:16]]
    assert all(r.path is ReturnPath.PAGE_POOL_PUT_BULK and not r.napi_direct
               for r in flushed)
    assert bq.q == [frames[16].page]
    assert [r.page for r in xdp_flush_frame_bulk(bq)] == [frames[16].page]
    assert bq.count == 0 and xdp_flush_frame_bulk(bq) == []


@pytest.mark.rule("XDP-MEM-004")
def test_bulk_flushes_between_frags_when_full() -> None:
    bq = XdpFrameBulk()
    fillers = [single() for _ in range(14)]
    for f in fillers:
        xdp_return_frame_bulk(f, bq)
    frame, (a, b) = frame_with_frags()
    out = xdp_return_frame_bulk(frame, bq)
    # 14 + frag a = 15, + frag b = 16 -> flush; then the head page starts a new batch.
    assert [r.page for r in out] == [f.page for f in fillers] + [a, b]
    assert bq.q == [frame.page]


# --- XDP-FRAME-001 / XDP-BUFF-001 against a C compiler ----------------------------------

# Our transcription of the two layouts (field types and order from include/net/xdp.h and
# include/linux/skbuff.h as read in v6.17-rc3 and 6.12.117), compiled for the host LP64 ABI.
_LAYOUT_C = r"""
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
enum mem_type_t { T0, T1, T2, T3, T4 };
struct mem_info_t { uint32_t type; uint32_t id; };
struct frame_v617 { void *data; uint32_t len; uint32_t headroom; uint32_t metasize;
                    enum mem_type_t mem_type:32; void *dev_rx; uint32_t frame_sz;
                    uint32_t flags; };
struct frame_v612 { void *data; uint16_t len; uint16_t headroom; uint32_t metasize;
                    struct mem_info_t mem; void *dev_rx; uint32_t frame_sz; uint32_t flags; };
struct frag_t { uintptr_t netmem; unsigned int len; unsigned int offset; };
struct shinfo_t { uint8_t flags, meta_len, nr_frags, tx_flags; unsigned short gso_size,
                  gso_segs; void *frag_list; union { int64_t hwtstamp; void *p; } u;
                  unsigned int gso_type; uint32_t tskey; int dataref;
                  union { struct { uint32_t size, truesize; } x; void *destructor_arg; } v;
                  struct frag_t frags[17]; };
#define OFF(s, f) printf(#f " %zu\n", offsetof(struct s, f))
int main(void) {
    OFF(frame_v617, data); OFF(frame_v617, len); OFF(frame_v617, headroom);
    OFF(frame_v617, metasize); OFF(frame_v617, dev_rx); OFF(frame_v617, frame_sz);
    OFF(frame_v617, flags);
    printf("sizeof_v617 %zu\nsizeof_v612 %zu\n", sizeof(struct frame_v617),
           sizeof(struct frame_v612));
    printf("v612_mem %zu\nshinfo %zu\n", offsetof(struct frame_v612, mem),
           sizeof(struct shinfo_t));
    return 0;
}
"""


@pytest.mark.rule("XDP-FRAME-001", "XDP-BUFF-001")
@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_layouts_agree_with_a_c_compiler(tmp_path: pathlib.Path) -> None:
    src, exe = tmp_path / "layout.c", tmp_path / "layout"
    src.write_text(_LAYOUT_C)
    subprocess.run(["cc", "-std=gnu11", "-o", str(exe), str(src)], check=True)
    out = dict(line.split() for line in subprocess.run(
        [str(exe)], check=True, capture_output=True, text=True).stdout.splitlines())
    expected = {name: off for name, off, _ in XDP_FRAME_LAYOUT if name != "mem_type"}
    assert {k: int(v) for k, v in out.items() if k in expected} == expected
    assert int(out["sizeof_v617"]) == XDP_FRAME_STRUCT.size == X86_64.sizeof_xdp_frame == 40
    # 6.12.117's older layout is the same size, with the whole xdp_mem_info at 16.
    assert (int(out["sizeof_v612"]), int(out["v612_mem"])) == (40, 16)
    assert int(out["shinfo"]) == X86_64.sizeof_skb_shared_info == 320

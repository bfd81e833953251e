"""bpf_xdp_adjust_head / _meta / _tail at every bound (XDP-ADJ-*).

Each hand-worked test names the kernel function whose check it exercises
(``net/core/filter.c``, v6.17; v6.18.y where marked).  Geometry used throughout unless
a test says otherwise: a 4096-byte page, ``frame_sz`` 4096, ``data_hard_start`` 0,
headroom 256, 100 bytes of packet.  So ``data`` = 256, ``data_end`` = 356 and
``xdp_data_hard_end`` = 4096 - SKB_DATA_ALIGN(320) = 3776.  The smallest legal
``data`` is 0 + sizeof(struct xdp_frame) 40 + metalen.
"""

from __future__ import annotations

import errno
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.errors import StateViolation
from reference.trace import Trace
from reference.xdp.arch import V6_17, V6_18
from reference.xdp.buff import (
    XDP_FLAGS_FRAGS_PF_MEMALLOC,
    XDP_FLAGS_HAS_FRAGS,
    XdpBuff,
    xdp_buff_add_frag,
    xdp_get_buff_len,
    xdp_get_shared_info_from_buff,
    xdp_init_buff,
    xdp_prepare_buff,
)
from reference.xdp.helpers import (
    ENOTSUPP,
    bpf_xdp_adjust_head,
    bpf_xdp_adjust_meta,
    bpf_xdp_adjust_tail,
    s32,
)
from reference.xdp.mem import MemReturn, MemType, ReturnPath
from reference.xdp.memory import Page
from reference.xdp.rxq import NetDev, RegState, XdpRxqInfo
from reference.xdp.warn import KernelWarn

HARD_END = 4096 - 320


def pattern(n: int, seed: int = 0) -> bytearray:
    return bytearray((i * 7 + seed) % 251 for i in range(n))


def mk(headroom: int = 256, data_len: int = 100, meta_valid: bool = True,
       frame_sz: int = 4096, hard_start: int = 0, mem_type: int = MemType.MEM_TYPE_PAGE_POOL,
       frag_size: int = 4096) -> XdpBuff:
    q = XdpRxqInfo(dev=NetDev(2), reg_state=RegState.REGISTERED, frag_size=frag_size)
    q.mem.type = mem_type
    xdp = XdpBuff()
    xdp_init_buff(xdp, frame_sz, q)
    xdp_prepare_buff(xdp, Page(pattern(4096)), hard_start, headroom, data_len, meta_valid)
    return xdp


def snapshot(xdp: XdpBuff) -> tuple[Any, ...]:
    """Everything a helper could change: pointers, flags, bytes, shared info, frag bytes."""
    assert xdp.page is not None
    infos = tuple(
        (off, i.nr_frags, i.xdp_frags_size, i.xdp_frags_truesize,
         tuple((id(f.page), f.offset, f.size, bytes(f.page.data)) for f in i.frags))
        for off, i in sorted(xdp.page.shinfo.items()))
    return (xdp.data_hard_start, xdp.data, xdp.data_end, xdp.data_meta, xdp.frame_sz,
            xdp.flags, bytes(xdp.page.data), infos)


def refused(xdp: XdpBuff, call: Any, expected: int) -> None:
    before = snapshot(xdp)
    assert call() == expected
    assert snapshot(xdp) == before


# --- XDP-ADJ-001 ------------------------------------------------------------------------

@pytest.mark.rule("XDP-ADJ-001")
def test_offsets_are_signed_32_bit() -> None:
    assert [s32(v) for v in (0xFFFFFFFF, 0x80000000, (1 << 32) + 5, -1, 0x7FFFFFFF)] == \
        [-1, -(1 << 31), 5, -1, 0x7FFFFFFF]
    xdp = mk()
    assert bpf_xdp_adjust_head(xdp, 0xFFFFFFFF) == 0  # an int -1
    assert xdp.data == 255
    assert bpf_xdp_adjust_tail(xdp, (1 << 32) + 4) == 0  # an int 4
    assert xdp.data_end == 360


# --- XDP-ADJ-002 / XDP-ADJ-003: bpf_xdp_adjust_head ------------------------------------

@pytest.mark.rule("XDP-ADJ-002")
def test_head_lower_bound_is_xdp_frame_plus_metalen() -> None:
    # bpf_xdp_adjust_head: data_start = hard_start + sizeof(xdp_frame) + metalen = 40.
    xdp = mk()
    refused(xdp, lambda: bpf_xdp_adjust_head(xdp, -217), -errno.EINVAL)
    assert bpf_xdp_adjust_head(xdp, -216) == 0
    assert (xdp.data, xdp.data_meta) == (40, 40)


@pytest.mark.rule("XDP-ADJ-002")
def test_head_lower_bound_counts_metadata() -> None:
    xdp = mk()
    assert bpf_xdp_adjust_meta(xdp, -8) == 0  # metalen 8: data_start = 48
    refused(xdp, lambda: bpf_xdp_adjust_head(xdp, -209), -errno.EINVAL)
    assert bpf_xdp_adjust_head(xdp, -208) == 0
    assert (xdp.data_meta, xdp.data) == (40, 48)


@pytest.mark.rule("XDP-ADJ-002")
def test_head_upper_bound_keeps_eth_hlen() -> None:
    # data <= data_end - ETH_HLEN = 342, i.e. offset <= 86.
    xdp = mk()
    refused(xdp, lambda: bpf_xdp_adjust_head(xdp, 87), -errno.EINVAL)
    assert bpf_xdp_adjust_head(xdp, 86) == 0
    assert xdp.data_end - xdp.data == 14


@pytest.mark.rule("XDP-ADJ-002")
def test_head_with_small_headroom_only_moves_forward() -> None:
    xdp = mk(headroom=0)
    refused(xdp, lambda: bpf_xdp_adjust_head(xdp, 39), -errno.EINVAL)
    refused(xdp, lambda: bpf_xdp_adjust_head(xdp, 0), -errno.EINVAL)
    assert bpf_xdp_adjust_head(xdp, 40) == 0


@pytest.mark.rule("XDP-ADJ-003")
def test_head_moves_metadata_and_leaves_packet_bytes() -> None:
    xdp = mk()
    assert bpf_xdp_adjust_meta(xdp, -8) == 0
    assert xdp.page is not None
    xdp.page.data[248:256] = b"METADATA"
    before = bytes(xdp.page.data)
    trace = Trace()
    assert bpf_xdp_adjust_head(xdp, -20, trace=trace) == 0
    assert (xdp.data_meta, xdp.data) == (228, 236)
    assert xdp.metadata() == b"METADATA"
    after = bytes(xdp.page.data)
    # Only the new metadata window [228, 236) was written; the pushed area [236, 256)
    # keeps the old bytes (the old metadata's tail and headroom), nothing is zeroed.
    assert after[:228] == before[:228] and after[236:] == before[236:]
    assert "XDP-ADJ-003" in trace.rules()
    # Pull (positive offset) moves the metadata forward too.
    assert bpf_xdp_adjust_head(xdp, 30) == 0
    assert (xdp.data_meta, xdp.data, xdp.metadata()) == (258, 266, b"METADATA")


@pytest.mark.rule("XDP-ADJ-003")
def test_head_with_meta_unsupported_keeps_the_marker() -> None:
    xdp = mk(meta_valid=False)
    assert bpf_xdp_adjust_head(xdp, -216) == 0  # metalen counts as 0
    assert (xdp.data, xdp.data_meta) == (40, 41)


# --- XDP-ADJ-004 / XDP-ADJ-005: bpf_xdp_adjust_meta ------------------------------------

@pytest.mark.rule("XDP-ADJ-004")
@pytest.mark.parametrize("offset", [-4, 0, 4, -300])
def test_meta_unsupported_is_enotsupp_first(offset: int) -> None:
    assert ENOTSUPP == 524  # include/linux/errno.h
    xdp = mk(meta_valid=False)
    refused(xdp, lambda: bpf_xdp_adjust_meta(xdp, offset), -524)


@pytest.mark.rule("XDP-ADJ-005")
def test_meta_bounds() -> None:
    xdp = mk()
    # meta > data
    refused(xdp, lambda: bpf_xdp_adjust_meta(xdp, 4), -errno.EINVAL)
    # meta < hard_start + 40 (256 - 217 = 39), checked before the length
    refused(xdp, lambda: bpf_xdp_adjust_meta(xdp, -217), -errno.EINVAL)
    # exactly at the xdp_frame end: metalen 216, a multiple of 4
    assert bpf_xdp_adjust_meta(xdp, -216) == 0
    assert xdp.data_meta == 40
    assert bpf_xdp_adjust_meta(xdp, 216) == 0  # back to metalen 0
    assert xdp.data_meta == xdp.data


@pytest.mark.rule("XDP-ADJ-005")
@pytest.mark.parametrize(("offset", "expected"), [
    (-252, 0), (-256, -errno.EACCES), (-255, -errno.EACCES), (-253, -errno.EACCES),
    (-3, -errno.EACCES), (-4, 0), (0, 0),
])
def test_meta_length_alignment_and_max(offset: int, expected: int) -> None:
    # xdp_metalen_invalid: !IS_ALIGNED(metalen, 4) || metalen > 255 (u8 meta_len).
    xdp = mk(headroom=400)
    before = snapshot(xdp)
    assert bpf_xdp_adjust_meta(xdp, offset) == expected
    if expected:
        assert snapshot(xdp) == before
    else:
        assert xdp.data - xdp.data_meta == -offset
        assert bytes(xdp.page.data) == before[6]  # type: ignore[union-attr]


# --- XDP-ADJ-006: linear bpf_xdp_adjust_tail -------------------------------------------

@pytest.mark.rule("XDP-ADJ-006")
def test_tail_grow_to_hard_end_exactly() -> None:
    xdp = mk()
    refused(xdp, lambda: bpf_xdp_adjust_tail(xdp, HARD_END - 356 + 1), -errno.EINVAL)
    before = bytes(xdp.page.data)  # type: ignore[union-attr]
    assert bpf_xdp_adjust_tail(xdp, HARD_END - 356) == 0
    assert xdp.data_end == HARD_END
    after = bytes(xdp.page.data)  # type: ignore[union-attr]
    assert after[356:HARD_END] == bytes(HARD_END - 356)
    assert after[:356] == before[:356] and after[HARD_END:] == before[HARD_END:]


@pytest.mark.rule("XDP-ADJ-006")
def test_tail_shrink_to_eth_hlen_exactly() -> None:
    xdp = mk()
    refused(xdp, lambda: bpf_xdp_adjust_tail(xdp, -87), -errno.EINVAL)
    before = bytes(xdp.page.data)  # type: ignore[union-attr]
    assert bpf_xdp_adjust_tail(xdp, -86) == 0
    assert xdp.data_end - xdp.data == 14
    assert bytes(xdp.page.data) == before  # type: ignore[union-attr]


@pytest.mark.rule("XDP-ADJ-006")
def test_tail_bounds_with_a_short_frame_and_a_missing_tailroom() -> None:
    runt = mk(data_len=10)
    refused(runt, lambda: bpf_xdp_adjust_tail(runt, 0), -errno.EINVAL)
    assert bpf_xdp_adjust_tail(runt, 4) == 0
    # A driver that put data_end beyond the hard end cannot shrink by a little.
    buggy = mk(headroom=256, data_len=3600)  # data_end 3856 > 3776
    refused(buggy, lambda: bpf_xdp_adjust_tail(buggy, -10), -errno.EINVAL)
    assert bpf_xdp_adjust_tail(buggy, -80) == 0
    # A half-page buffer at offset 2048 (frame_sz 2048) grows to 2048 + 2048 - 320.
    half = mk(hard_start=2048, headroom=256, data_len=100, frame_sz=2048)
    refused(half, lambda: bpf_xdp_adjust_tail(half, 3776 - 2404 + 1), -errno.EINVAL)
    assert bpf_xdp_adjust_tail(half, 3776 - 2404) == 0


@pytest.mark.rule("XDP-ADJ-006")
def test_tail_has_no_page_size_check_on_frame_sz() -> None:
    # Kernels around v6.8 refused frame_sz > PAGE_SIZE; v6.17 only checks the hard end.
    xdp = XdpBuff()
    xdp_init_buff(xdp, 8192, XdpRxqInfo())
    xdp_prepare_buff(xdp, Page.zeroed(8192), 0, 256, 100, True)
    assert bpf_xdp_adjust_tail(xdp, 8192 - 320 - 356) == 0
    assert xdp.data_end == 8192 - 320


@pytest.mark.rule("XDP-ADJ-006")
def test_tail_grow_past_the_memory_is_refused() -> None:
    xdp = mk(frame_sz=8192)  # hard end 7872, beyond the 4096-byte page
    before = snapshot(xdp)
    with pytest.raises(StateViolation):
        bpf_xdp_adjust_tail(xdp, 4000)
    assert snapshot(xdp) == before


# --- frags ------------------------------------------------------------------------------

def with_frags(sizes: list[int], mem_type: int = MemType.MEM_TYPE_PAGE_POOL,
               frag_size: int = 4096, pfmemalloc: bool = False) -> tuple[XdpBuff, list[Page]]:
    xdp = mk(mem_type=mem_type, frag_size=frag_size)
    pages = []
    for i, size in enumerate(sizes):
        p = Page(pattern(4096, seed=i + 1), pfmemalloc=pfmemalloc)
        assert xdp_buff_add_frag(xdp, p, 0, size, 4096)
        pages.append(p)
    return xdp, pages


@pytest.mark.rule("XDP-ADJ-007")
def test_frags_tail_offset_zero_goes_to_the_grow_path() -> None:
    xdp, _ = with_frags([1000], frag_size=0)
    refused(xdp, lambda: bpf_xdp_adjust_tail(xdp, 0), -errno.EOPNOTSUPP)
    # The linear part is not consulted: a grow beyond the head's hard end is fine.
    ok, _ = with_frags([1000])
    assert bpf_xdp_adjust_tail(ok, HARD_END) == -errno.EINVAL  # > frag tailroom 3096
    assert bpf_xdp_adjust_tail(ok, 3096) == 0 and ok.data_end == 356


@pytest.mark.rule("XDP-ADJ-008")
def test_frag_grow_up_to_frag_size_exactly() -> None:
    # bpf_xdp_frags_increase_tail: tailroom = frag_size - size - off = 4096 - 500 - 0.
    xdp, (_a, b) = with_frags([1000, 500])
    refused(xdp, lambda: bpf_xdp_adjust_tail(xdp, 3597), -errno.EINVAL)
    assert bpf_xdp_adjust_tail(xdp, 3596) == 0
    sinfo = xdp_get_shared_info_from_buff(xdp)
    assert (sinfo.frags[1].size, sinfo.xdp_frags_size, sinfo.xdp_frags_truesize) == \
        (4096, 1000 + 4096, 8192)
    assert bytes(b.data[500:]) == bytes(3596)  # zero-filled
    assert bytes(b.data[:500]) == bytes(pattern(4096, seed=2)[:500])
    assert xdp_get_buff_len(xdp) == 100 + 5096


@pytest.mark.rule("XDP-ADJ-008")
@pytest.mark.parametrize("frag_size", [0, 4097])
def test_frag_grow_needs_a_frag_size_within_frame_sz(frag_size: int) -> None:
    xdp, _ = with_frags([1000], frag_size=frag_size)
    refused(xdp, lambda: bpf_xdp_adjust_tail(xdp, 1), -errno.EOPNOTSUPP)


@pytest.mark.rule("XDP-ADJ-008")
def test_frag_grow_tailroom_wraps_in_v617_and_not_in_v618() -> None:
    def build() -> tuple[XdpBuff, Page]:
        xdp = mk(frag_size=2048)
        page = Page(pattern(4096, seed=9))
        assert xdp_buff_add_frag(xdp, page, 2048, 1000, 2048)  # second half of a page
        return xdp, page

    # v6.17: unsigned 2048 - 1000 - 2048 wraps; a grow that fits the page is accepted.
    xdp, page = build()
    assert bpf_xdp_adjust_tail(xdp, 1048, kernel=V6_17) == 0
    assert bytes(page.data[3048:4096]) == bytes(1048)
    xdp, page = build()
    before = snapshot(xdp)
    with pytest.raises(StateViolation):  # wrapped tailroom lets it write past the page
        bpf_xdp_adjust_tail(xdp, 1049, kernel=V6_17)
    assert snapshot(xdp) == before
    # v6.18: 2048 - 1000 - (2048 % 2048) = 1048, a real bound.
    xdp, page = build()
    refused(xdp, lambda: bpf_xdp_adjust_tail(xdp, 1049, kernel=V6_18), -errno.EINVAL)
    assert bpf_xdp_adjust_tail(xdp, 1048, kernel=V6_18) == 0


@pytest.mark.rule("XDP-ADJ-009")
def test_frag_shrink_releases_the_emptied_frag() -> None:
    xdp, (_a, b) = with_frags([1000, 500])
    released: list[MemReturn] = []
    assert bpf_xdp_adjust_tail(xdp, -500, released=released) == 0
    sinfo = xdp_get_shared_info_from_buff(xdp)
    assert (sinfo.nr_frags, sinfo.xdp_frags_size, sinfo.xdp_frags_truesize) == (1, 1000, 8192)
    assert xdp.flags & XDP_FLAGS_HAS_FRAGS
    [r] = released
    assert (r.page, r.mem_type, r.path, r.napi_direct, r.caller) == (
        b, MemType.MEM_TYPE_PAGE_POOL, ReturnPath.PAGE_POOL_PUT_FULL, False,
        "bpf_xdp_frags_shrink_tail")
    # The released slot keeps its stale entry past nr_frags.
    assert len(sinfo.frags) == 2 and sinfo.frags[1].page is b


@pytest.mark.rule("XDP-ADJ-009")
def test_frag_shrink_across_frags_stops_at_a_partial_one() -> None:
    xdp, (a, b) = with_frags([1000, 500])
    released: list[MemReturn] = []
    assert bpf_xdp_adjust_tail(xdp, -600, released=released) == 0
    sinfo = xdp_get_shared_info_from_buff(xdp)
    assert [r.page for r in released] == [b]
    assert (sinfo.nr_frags, sinfo.frags[0].size, sinfo.xdp_frags_size) == (1, 900, 900)
    assert bytes(a.data) == bytes(pattern(4096, seed=1))  # shrinking writes nothing
    assert xdp.data_end == 356


@pytest.mark.rule("XDP-ADJ-009")
def test_frag_shrink_bound_is_eth_hlen_of_the_whole_packet() -> None:
    # bpf_xdp_frags_shrink_tail: offset > xdp_get_buff_len - ETH_HLEN = 1600 - 14.
    xdp, _ = with_frags([1000, 500])
    refused(xdp, lambda: bpf_xdp_adjust_tail(xdp, -1587), -errno.EINVAL)


@pytest.mark.rule("XDP-ADJ-009")
def test_frag_shrink_releases_a_zero_size_frag() -> None:
    xdp, (_a, _b) = with_frags([1000, 500])
    c = Page.zeroed(4096)
    assert xdp_buff_add_frag(xdp, c, 0, 0, 4096)
    released: list[MemReturn] = []
    assert bpf_xdp_adjust_tail(xdp, -10, released=released) == 0
    sinfo = xdp_get_shared_info_from_buff(xdp)
    assert [r.page for r in released] == [c]
    assert (sinfo.nr_frags, sinfo.frags[1].size, sinfo.xdp_frags_size) == (2, 490, 1490)


@pytest.mark.rule("XDP-ADJ-009")
def test_frag_shrink_on_xsk_frees_xsk_buffers() -> None:
    xdp, (_a, b) = with_frags([1000, 500], mem_type=MemType.MEM_TYPE_XSK_BUFF_POOL)
    released: list[MemReturn] = []
    assert bpf_xdp_adjust_tail(xdp, -500, released=released) == 0
    assert [(r.page, r.path) for r in released] == [(b, ReturnPath.XSK_BUFF_FREE)]


@pytest.mark.rule("XDP-ADJ-001", "XDP-ADJ-009")
def test_frag_shrink_by_int_min_changes_nothing() -> None:
    xdp, _ = with_frags([1000, 500])
    refused(xdp, lambda: bpf_xdp_adjust_tail(xdp, -(1 << 31)), 0)


@pytest.mark.rule("XDP-ADJ-010")
def test_frag_shrink_all_frags_exactly() -> None:
    xdp, (a, b) = with_frags([1000, 500])
    released: list[MemReturn] = []
    assert bpf_xdp_adjust_tail(xdp, -1500, released=released) == 0
    assert [r.page for r in released] == [b, a]
    assert not xdp.flags & XDP_FLAGS_HAS_FRAGS
    assert (xdp.data_end, xdp_get_buff_len(xdp)) == (356, 100)


@pytest.mark.rule("XDP-ADJ-010")
def test_frag_shrink_into_the_linear_part_down_to_eth_hlen() -> None:
    xdp, (_a, _b) = with_frags([1000, 500])
    trace = Trace()
    assert bpf_xdp_adjust_tail(xdp, -1586, released=[], trace=trace) == 0
    assert xdp.data_end - xdp.data == 14 and xdp_get_buff_len(xdp) == 14
    assert xdp_get_shared_info_from_buff(xdp).nr_frags == 0
    assert trace.rules()[-1] == "XDP-ADJ-010"
    # The buffer is linear again: the linear bounds apply from now on.
    refused(xdp, lambda: bpf_xdp_adjust_tail(xdp, -1), -errno.EINVAL)


@pytest.mark.rule("XDP-ADJ-010")
@pytest.mark.parametrize(("kernel", "flags"), [(V6_17, XDP_FLAGS_FRAGS_PF_MEMALLOC),
                                               (V6_18, 0)])
def test_pfmemalloc_after_the_last_frag_goes(kernel: Any, flags: int) -> None:
    xdp, _ = with_frags([1000], pfmemalloc=True)
    assert xdp.flags == XDP_FLAGS_HAS_FRAGS | XDP_FLAGS_FRAGS_PF_MEMALLOC
    assert bpf_xdp_adjust_tail(xdp, -1000, kernel=kernel) == 0
    assert xdp.flags == flags


# --- properties -------------------------------------------------------------------------

# Multiples of 4 are drawn often so that adjust_meta succeeds now and then.
OFFSETS = st.one_of(st.integers(-400, 400), st.integers(-70, 70).map(lambda k: 4 * k))
OPS = st.lists(st.tuples(st.sampled_from(["head", "meta", "tail"]), OFFSETS), max_size=25)


@st.composite
def geometries(draw: st.DrawFn) -> XdpBuff:
    hard_start = draw(st.integers(0, 32)) * 64
    frame_sz = 2048
    hard_end = hard_start + frame_sz - 320
    headroom = draw(st.integers(0, 300))
    data_len = draw(st.integers(14, hard_end - hard_start - headroom))
    xdp = mk(headroom=headroom, data_len=data_len, frame_sz=frame_sz, hard_start=hard_start,
             meta_valid=draw(st.sampled_from([True, True, False])))
    return xdp


def check_invariants(xdp: XdpBuff) -> None:
    hard_end = xdp.data_hard_start + xdp.frame_sz - 320
    if xdp.data_meta > xdp.data:
        assert xdp.data_meta == xdp.data + 1  # the unsupported marker survives
        metalen = 0
    else:
        metalen = xdp.data - xdp.data_meta
    assert xdp.data_hard_start <= xdp.data - metalen <= xdp.data <= xdp.data_end <= hard_end
    assert metalen % 4 == 0 and metalen <= 252


@pytest.mark.rule("XDP-ADJ-002", "XDP-ADJ-003", "XDP-ADJ-005", "XDP-ADJ-006")
@given(xdp=geometries(), ops=OPS)
def test_random_adjustments_keep_invariants_and_touch_only_their_window(
    xdp: XdpBuff, ops: list[tuple[str, int]]
) -> None:
    assert xdp.page is not None
    check_invariants(xdp)
    for op, offset in ops:
        before = snapshot(xdp)
        old = bytes(xdp.page.data)
        old_meta, old_data, old_end = xdp.data_meta, xdp.data, xdp.data_end
        metalen = 0 if xdp.data_meta > xdp.data else xdp.data - xdp.data_meta
        if op == "head":
            ret = bpf_xdp_adjust_head(xdp, offset)
        elif op == "meta":
            ret = bpf_xdp_adjust_meta(xdp, offset)
        else:
            ret = bpf_xdp_adjust_tail(xdp, offset)
        assert ret in (0, -errno.EINVAL, -errno.EACCES, -ENOTSUPP)
        if ret:
            assert snapshot(xdp) == before
            continue
        new = bytes(xdp.page.data)
        check_invariants(xdp)
        if op == "head":
            assert xdp.data - old_data == offset and xdp.data_meta - old_meta == offset
            lo, hi = xdp.data - metalen, xdp.data  # the only bytes written
            assert new[lo:hi] == old[old_data - metalen : old_data]
            assert new[:lo] == old[:lo] and new[hi:] == old[hi:]
        elif op == "meta":
            assert new == old and xdp.data == old_data and xdp.data_end == old_end
        else:
            assert xdp.data_end - old_end == offset and xdp.data == old_data
            grown = slice(old_end, max(old_end, xdp.data_end))
            assert new[grown] == bytes(grown.stop - grown.start)
            assert new[: grown.start] == old[: grown.start]
            assert new[grown.stop :] == old[grown.stop :]


FRAG_OPS = st.lists(st.integers(-3000, 3000), max_size=12)


@pytest.mark.rule("XDP-ADJ-008", "XDP-ADJ-009", "XDP-ADJ-010")
@given(sizes=st.lists(st.integers(0, 3000), min_size=1, max_size=5), ops=FRAG_OPS,
       kernel=st.sampled_from([V6_17, V6_18]))
def test_frag_tail_ops_conserve_pages_and_lengths(
    sizes: list[int], ops: list[int], kernel: Any
) -> None:
    xdp, pages = with_frags(sizes)
    released: list[MemReturn] = []
    for offset in ops:
        before = snapshot(xdp)
        total = xdp_get_buff_len(xdp)
        had_frags = bool(xdp.flags & XDP_FLAGS_HAS_FRAGS)
        ret = bpf_xdp_adjust_tail(xdp, offset, released=released, kernel=kernel)
        if ret:
            assert snapshot(xdp) == before
            continue
        assert xdp_get_buff_len(xdp) == total + offset
        assert xdp_get_buff_len(xdp) >= 14
        sinfo = xdp_get_shared_info_from_buff(xdp)
        if xdp.flags & XDP_FLAGS_HAS_FRAGS:
            assert sinfo.nr_frags >= 1
            assert sinfo.xdp_frags_size == sum(f.size for f in sinfo.valid_frags())
        else:
            assert had_frags or sinfo.nr_frags == 0
        # Every page is either still a live frag or was released, never both, never twice.
        live = [id(f.page) for f in sinfo.valid_frags()] if xdp.flags & XDP_FLAGS_HAS_FRAGS \
            else []
        gone = [id(r.page) for r in released]
        assert sorted(live + gone) == sorted(id(p) for p in pages)
        assert len(set(gone)) == len(gone)
        assert all(not r.napi_direct for r in released)


@pytest.mark.rule("XDP-ADJ-008")
def test_v618_negative_frag_tailroom_warns_once_and_refuses_every_grow() -> None:
    # net/core/filter.c (6.12.117, 7.3.4): bpf_xdp_frags_increase_tail() computes
    # frag_size - size - off % frag_size as an int; a frag already longer than frag_size
    # gives a negative tailroom: WARN_ON_ONCE, then "offset > tailroom" refuses even 0.
    xdp = mk(frag_size=2048)
    assert xdp_buff_add_frag(xdp, Page(pattern(4096, seed=3)), 0, 3000, 4096)
    warns: list[KernelWarn] = []
    before = snapshot(xdp)
    for grow in (0, 1):
        assert bpf_xdp_adjust_tail(xdp, grow, kernel=V6_18, warns=warns) == -errno.EINVAL
        assert snapshot(xdp) == before
    assert warns == [KernelWarn("bpf_xdp_frags_increase_tail", "tailroom < 0",
                                "XDP-ADJ-008", once=True)] * 2
    # v6.17 wraps the same arithmetic to a huge unsigned tailroom, and never WARNs.
    warns.clear()
    assert bpf_xdp_adjust_tail(xdp, 0, kernel=V6_17, warns=warns) == 0
    assert warns == []

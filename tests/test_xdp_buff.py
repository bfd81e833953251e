"""xdp_buff set-up, shared info and frags, RX-queue registration (XDP-BUFF-*, XDP-MEM-003/005/006).

Independent references: the struct layouts in ``include/linux/skbuff.h`` and
``include/net/xdp.h`` (v6.17) recomputed here from their field lists with a small C
layout function, and hand-worked buffer geometries.
"""

from __future__ import annotations

import errno

import pytest

from reference.errors import InvalidConfig, StateViolation
from reference.trace import Trace
from reference.xdp.arch import ETH_HLEN, V6_17, V6_18, X86_64, XDP_PACKET_HEADROOM, Arch
from reference.xdp.buff import (
    INIT_WRITES,
    PREPARE_WRITES,
    XDP_FLAGS_FRAGS_PF_MEMALLOC,
    XDP_FLAGS_FRAGS_UNREADABLE,
    XDP_FLAGS_HAS_FRAGS,
    XdpBuff,
    xdp_buff_add_frag,
    xdp_data_hard_end,
    xdp_get_buff_len,
    xdp_get_shared_info_from_buff,
    xdp_init_buff,
    xdp_prepare_buff,
    xdp_return_buff,
)
from reference.xdp.helpers import bpf_xdp_get_buff_len
from reference.xdp.mem import MemReturn, MemType, ReturnPath
from reference.xdp.memory import Page
from reference.xdp.rxq import (
    NetDev,
    RegState,
    XdpRxqInfo,
    XdpTxqInfo,
    xdp_rxq_info_reg,
    xdp_rxq_info_reg_mem_model,
    xdp_rxq_info_unreg,
    xdp_rxq_info_unused,
)
from reference.xdp.warn import KernelWarn


def c_layout(fields: list[tuple[str, int, int]]) -> tuple[dict[str, int], int]:
    """Offsets and sizeof of a C struct from (name, size, alignment), natural alignment."""
    offsets: dict[str, int] = {}
    pos = 0
    max_align = 1
    for name, size, align in fields:
        pos = (pos + align - 1) // align * align
        offsets[name] = pos
        pos += size
        max_align = max(max_align, align)
    return offsets, (pos + max_align - 1) // max_align * max_align


def skb_shared_info_fields(max_frags: int) -> list[tuple[str, int, int]]:
    # include/linux/skbuff.h (v6.17), LP64: u8 x4, unsigned short x2, pointer,
    # union { ktime_t; void *; } / xsk_tx_metadata_compl { __u64 * }, unsigned int,
    # u32, atomic_t (int), union { struct { u32; u32; }; void * }, skb_frag_t[] where
    # skb_frag_t = { netmem_ref (unsigned long), unsigned int len, unsigned int offset }.
    return [
        ("flags", 1, 1), ("meta_len", 1, 1), ("nr_frags", 1, 1), ("tx_flags", 1, 1),
        ("gso_size", 2, 2), ("gso_segs", 2, 2), ("frag_list", 8, 8),
        ("hwtstamps", 8, 8), ("gso_type", 4, 4), ("tskey", 4, 4), ("dataref", 4, 4),
        ("xdp_frags_size_union", 8, 8), ("frags", 16 * max_frags, 8),
    ]


def rxq(mem_type: int = MemType.MEM_TYPE_PAGE_POOL, frag_size: int = 4096) -> XdpRxqInfo:
    info = XdpRxqInfo(dev=NetDev(3, "eth1"), queue_index=5, reg_state=RegState.REGISTERED,
                      frag_size=frag_size)
    info.mem.type = mem_type
    return info


def prepared(headroom: int = 256, data_len: int = 100, frame_sz: int = 4096,
             meta_valid: bool = True, q: XdpRxqInfo | None = None) -> XdpBuff:
    xdp = XdpBuff()
    xdp_init_buff(xdp, frame_sz, q if q is not None else rxq())
    xdp_prepare_buff(xdp, Page.zeroed(4096), 0, headroom, data_len, meta_valid)
    return xdp


# --- XDP-BUFF-001 -----------------------------------------------------------------------

@pytest.mark.rule("XDP-BUFF-001")
def test_skb_shared_info_size_from_header_field_list() -> None:
    offsets, size = c_layout(skb_shared_info_fields(17))
    # Hand check of the interesting offsets: 4 bytes of padding after dataref (32..35).
    assert offsets["frag_list"] == 8
    assert offsets["dataref"] == 32
    assert offsets["xdp_frags_size_union"] == 40
    assert offsets["frags"] == 48
    assert size == 320
    assert X86_64.sizeof_skb_shared_info == size
    # SKB_DATA_ALIGN(320) with 64-byte lines: 320 is 5 * 64.
    assert X86_64.shinfo_reserved == 320


@pytest.mark.rule("XDP-BUFF-001")
@pytest.mark.parametrize(("frags", "cache", "reserved"), [
    (17, 64, 320), (45, 64, 768), (17, 128, 384), (18, 64, 384),
])
def test_shinfo_reserve_follows_kconfig(frags: int, cache: int, reserved: int) -> None:
    _, size = c_layout(skb_shared_info_fields(frags))
    arch = Arch(max_skb_frags=frags, smp_cache_bytes=cache)
    assert arch.sizeof_skb_shared_info == size
    assert arch.shinfo_reserved == reserved


@pytest.mark.rule("XDP-BUFF-001")
def test_constants_and_arch_validation() -> None:
    assert (ETH_HLEN, XDP_PACKET_HEADROOM) == (14, 256)
    assert X86_64.sizeof_xdp_frame == 40
    assert (X86_64.smp_cache_bytes, X86_64.max_skb_frags, X86_64.page_size) == (64, 17, 4096)
    with pytest.raises(InvalidConfig):
        Arch(max_skb_frags=16)
    with pytest.raises(InvalidConfig):
        Arch(smp_cache_bytes=48)


# --- XDP-BUFF-002 -----------------------------------------------------------------------

@pytest.mark.rule("XDP-BUFF-002")
def test_hard_end_and_shared_info_location() -> None:
    xdp = prepared()
    assert xdp_data_hard_end(xdp) == 4096 - 320
    # A half-page buffer in the second half of a page: 2048 + 2048 - 320.
    half = XdpBuff()
    xdp_init_buff(half, 2048, rxq())
    page = Page.zeroed(4096)
    xdp_prepare_buff(half, page, 2048, 256, 60, True)
    assert xdp_data_hard_end(half) == 3776
    # The shared info belongs to the memory: another buffer over the same bytes sees it.
    other = XdpBuff()
    xdp_init_buff(other, 2048, rxq())
    xdp_prepare_buff(other, page, 2048, 128, 60, True)
    assert xdp_get_shared_info_from_buff(other) is xdp_get_shared_info_from_buff(half)
    assert page.shinfo.keys() == {3776}


@pytest.mark.rule("XDP-BUFF-002")
def test_shared_info_outside_the_memory_is_refused() -> None:
    xdp = XdpBuff()
    xdp_init_buff(xdp, 8192, rxq())  # frame_sz larger than the 4096-byte page
    xdp_prepare_buff(xdp, Page.zeroed(4096), 0, 256, 100, True)
    with pytest.raises(StateViolation):
        xdp_get_shared_info_from_buff(xdp)


# --- XDP-BUFF-003 / XDP-BUFF-004 --------------------------------------------------------

FIELDS = ("page", "data_hard_start", "data", "data_end", "data_meta", "rxq", "txq",
          "frame_sz", "flags")


def sentinel_buff() -> XdpBuff:
    return XdpBuff(page=Page.zeroed(4096), data_hard_start=7, data=300, data_end=900,
                   data_meta=296, rxq=rxq(), txq=XdpTxqInfo(NetDev(9)), frame_sz=1234,
                   flags=XDP_FLAGS_HAS_FRAGS | XDP_FLAGS_FRAGS_PF_MEMALLOC)


@pytest.mark.rule("XDP-BUFF-003")
def test_init_buff_writes_exactly_frame_sz_rxq_flags() -> None:
    # include/net/xdp.h: xdp_init_buff assigns frame_sz, rxq and flags = 0.
    assert set(INIT_WRITES) == {"frame_sz", "rxq", "flags"}
    xdp = sentinel_buff()
    before = {f: getattr(xdp, f) for f in FIELDS}
    new_rxq = rxq()
    xdp_init_buff(xdp, 2048, new_rxq)
    assert (xdp.frame_sz, xdp.rxq, xdp.flags) == (2048, new_rxq, 0)
    for f in FIELDS:
        if f not in ("frame_sz", "rxq", "flags"):
            assert getattr(xdp, f) is before[f] or getattr(xdp, f) == before[f], f
    with pytest.raises(InvalidConfig):
        xdp_init_buff(xdp, 1 << 32, new_rxq)


@pytest.mark.rule("XDP-BUFF-003")
@pytest.mark.parametrize("frame_sz", [1 << 31, (1 << 32) - 1])
def test_init_buff_takes_any_u32_frame_sz(frame_sz: int) -> None:
    """frame_sz is a u32 in the kernel: its upper half is taken like any other value, and
    the model's buffer of that size (mapped, not filled) reads as zeros to its end."""
    xdp = XdpBuff()
    xdp_init_buff(xdp, frame_sz, None)
    assert xdp.frame_sz == frame_sz
    page = Page.zeroed(frame_sz)
    assert len(page) == frame_sz and page.data[frame_sz - 4 :] == bytes(4)
    page.data[frame_sz - 1 :] = b"\x01"
    assert page.data[frame_sz - 2 :] == b"\x00\x01"


@pytest.mark.rule("XDP-BUFF-004")
@pytest.mark.parametrize("meta_valid", [True, False])
def test_prepare_buff_writes_exactly_the_data_pointers(meta_valid: bool) -> None:
    assert set(PREPARE_WRITES) == {"page", "data_hard_start", "data", "data_end", "data_meta"}
    xdp = sentinel_buff()
    keep = {f: getattr(xdp, f) for f in ("rxq", "txq", "frame_sz", "flags")}
    page = Page.zeroed(4096)
    xdp_prepare_buff(xdp, page, 64, 192, 1500, meta_valid)
    # data = 64 + 192 = 256, data_end = 256 + 1500 = 1756, data_meta = data or data + 1.
    assert (xdp.page, xdp.data_hard_start, xdp.data, xdp.data_end) == (page, 64, 256, 1756)
    assert xdp.data_meta == (256 if meta_valid else 257)
    for f, v in keep.items():
        assert getattr(xdp, f) is v


@pytest.mark.rule("XDP-BUFF-004")
def test_prepare_buff_rejects_impossible_geometry() -> None:
    xdp = XdpBuff()
    with pytest.raises(InvalidConfig):
        xdp_prepare_buff(xdp, Page.zeroed(4096), 0, 256, 4000, True)
    with pytest.raises(InvalidConfig):
        xdp_prepare_buff(xdp, Page.zeroed(4096), 0, -1, 10, True)


@pytest.mark.rule("XDP-BUFF-003", "XDP-BUFF-004", "XDP-BUFF-007", "XDP-BUFF-008")
def test_reused_per_queue_buffer_sees_the_kernels_stale_fields() -> None:
    """mlx5 keeps one xdp_buff per RQ: packet 2 re-runs init + prepare only."""
    q = rxq()
    mxbuf = XdpBuff()
    page1 = Page.zeroed(4096)
    frag_page = Page.zeroed(4096)
    xdp_init_buff(mxbuf, 4096, q)
    xdp_prepare_buff(mxbuf, page1, 0, 256, 1000, True)
    mxbuf.txq = XdpTxqInfo(NetDev(11))  # as if some earlier path had set it
    assert xdp_buff_add_frag(mxbuf, frag_page, 0, 3000, 4096)
    assert xdp_get_buff_len(mxbuf) == 4000
    # Packet 2 lands in the same page (a recycled page): init clears the flags, so the
    # stale shared info (nr_frags 1, 3000 bytes) is ignored by the length...
    xdp_init_buff(mxbuf, 4096, q)
    xdp_prepare_buff(mxbuf, page1, 0, 256, 60, True)
    assert mxbuf.flags == 0
    assert mxbuf.txq is not None and mxbuf.txq.dev == NetDev(11)  # never reset on RX
    stale = xdp_get_shared_info_from_buff(mxbuf)
    assert (stale.nr_frags, stale.xdp_frags_size) == (1, 3000)
    assert xdp_get_buff_len(mxbuf) == 60
    # ...and the first frag of packet 2 re-initialises it.
    assert xdp_buff_add_frag(mxbuf, Page.zeroed(4096), 0, 100, 4096)
    assert (stale.nr_frags, stale.xdp_frags_size, stale.xdp_frags_truesize) == (1, 100, 4096)


# --- XDP-BUFF-005 -----------------------------------------------------------------------

@pytest.mark.rule("XDP-BUFF-005")
def test_fresh_buffer_is_zeroed_and_unprepared_use_is_refused() -> None:
    xdp = XdpBuff()
    assert [getattr(xdp, f) for f in FIELDS] == [None, 0, 0, 0, 0, None, None, 0, 0]
    with pytest.raises(StateViolation):
        xdp.linear()
    info = Page.zeroed(4096).shared_info_at(3776)
    assert (info.nr_frags, info.xdp_frags_size, info.xdp_frags_truesize, info.frags) == \
        (0, 0, 0, [])


# --- XDP-BUFF-006 -----------------------------------------------------------------------

@pytest.mark.rule("XDP-BUFF-006")
def test_flag_values_and_pfmemalloc_and_unreadable() -> None:
    assert (XDP_FLAGS_HAS_FRAGS, XDP_FLAGS_FRAGS_PF_MEMALLOC, XDP_FLAGS_FRAGS_UNREADABLE) == \
        (1, 2, 4)
    xdp = prepared()
    assert xdp_buff_add_frag(xdp, Page.zeroed(4096, pfmemalloc=True), 0, 10, 4096)
    assert xdp.flags == XDP_FLAGS_HAS_FRAGS | XDP_FLAGS_FRAGS_PF_MEMALLOC
    iov = Page.zeroed(4096, net_iov=True)
    v617 = prepared()
    assert xdp_buff_add_frag(v617, iov, 0, 10, 4096, kernel=V6_17)
    assert v617.flags == XDP_FLAGS_HAS_FRAGS
    v618 = prepared()
    assert xdp_buff_add_frag(v618, iov, 0, 10, 4096, kernel=V6_18)
    assert v618.flags == XDP_FLAGS_HAS_FRAGS | XDP_FLAGS_FRAGS_UNREADABLE


# --- XDP-BUFF-007 -----------------------------------------------------------------------

@pytest.mark.rule("XDP-BUFF-007")
def test_add_frag_appends_and_accounts() -> None:
    xdp = prepared()
    a, b = Page.zeroed(4096), Page.zeroed(4096)
    assert xdp_buff_add_frag(xdp, a, 0, 1000, 2048)
    assert xdp_buff_add_frag(xdp, b, 128, 500, 2048)
    sinfo = xdp_get_shared_info_from_buff(xdp)
    assert sinfo.nr_frags == 2
    assert [(f.page, f.offset, f.size) for f in sinfo.valid_frags()] == [(a, 0, 1000),
                                                                         (b, 128, 500)]
    assert (sinfo.xdp_frags_size, sinfo.xdp_frags_truesize) == (1500, 4096)


@pytest.mark.rule("XDP-BUFF-007")
def test_add_frag_coalesces_and_returns_the_extra_reference() -> None:
    xdp = prepared(q=rxq(MemType.MEM_TYPE_PAGE_POOL))
    a = Page.zeroed(4096)
    released: list[MemReturn] = []
    trace = Trace()
    assert xdp_buff_add_frag(xdp, a, 0, 1000, 1024, released=released)
    assert xdp_buff_add_frag(xdp, a, 1000, 24, 1024, released=released, trace=trace)
    sinfo = xdp_get_shared_info_from_buff(xdp)
    assert sinfo.nr_frags == 1 and sinfo.frags[0].size == 1024
    assert (sinfo.xdp_frags_size, sinfo.xdp_frags_truesize) == (1024, 2048)
    [ret] = released
    assert (ret.page, ret.path, ret.napi_direct, ret.caller) == \
        (a, ReturnPath.PAGE_POOL_PUT_FULL, True, "xdp_return_frag")
    assert "XDP-BUFF-007" in trace.rules()
    # Not contiguous (gap) or try_coalesce=False: a new slot.
    assert xdp_buff_add_frag(xdp, a, 2048, 10, 1024, released=released)
    assert xdp_buff_add_frag(xdp, a, 2058, 10, 1024, try_coalesce=False, released=released)
    assert sinfo.nr_frags == 3 and len(released) == 1


@pytest.mark.rule("XDP-BUFF-007")
def test_add_frag_full_returns_false_and_changes_nothing() -> None:
    xdp = prepared()
    pages = [Page.zeroed(4096) for _ in range(17)]
    for p in pages:
        assert xdp_buff_add_frag(xdp, p, 0, 100, 4096)
    sinfo = xdp_get_shared_info_from_buff(xdp)
    before = (sinfo.nr_frags, sinfo.xdp_frags_size, sinfo.xdp_frags_truesize, xdp.flags,
              list(sinfo.frags))
    assert not xdp_buff_add_frag(xdp, Page.zeroed(4096, pfmemalloc=True), 0, 100, 4096)
    assert (sinfo.nr_frags, sinfo.xdp_frags_size, sinfo.xdp_frags_truesize, xdp.flags,
            list(sinfo.frags)) == before
    # Coalescing into the 17th frag still works: it uses no new slot.
    assert xdp_buff_add_frag(xdp, pages[-1], 100, 50, 0)
    assert sinfo.nr_frags == 17 and sinfo.frags[16].size == 150


@pytest.mark.rule("XDP-BUFF-007")
def test_add_frag_rejects_frag_outside_its_page() -> None:
    with pytest.raises(InvalidConfig):
        xdp_buff_add_frag(prepared(), Page.zeroed(4096), 4000, 200, 4096)


# --- XDP-BUFF-008 -----------------------------------------------------------------------

@pytest.mark.rule("XDP-BUFF-008")
def test_buff_len_counts_frags_only_with_the_flag() -> None:
    xdp = prepared(data_len=100)
    assert xdp_get_buff_len(xdp) == bpf_xdp_get_buff_len(xdp) == 100
    xdp_buff_add_frag(xdp, Page.zeroed(4096), 0, 700, 4096)
    xdp_buff_add_frag(xdp, Page.zeroed(4096), 0, 300, 4096)
    assert xdp_get_buff_len(xdp) == bpf_xdp_get_buff_len(xdp) == 1100
    xdp.flags &= ~XDP_FLAGS_HAS_FRAGS
    assert xdp_get_buff_len(xdp) == 100
    # Metadata is not part of the length.
    meta = prepared(data_len=100)
    meta.data_meta -= 8
    assert xdp_get_buff_len(meta) == 100


# --- XDP-MEM-003 ------------------------------------------------------------------------

@pytest.mark.rule("XDP-MEM-003")
@pytest.mark.parametrize("mem_type", [MemType.MEM_TYPE_PAGE_POOL,
                                      MemType.MEM_TYPE_XSK_BUFF_POOL])
def test_return_buff_frags_then_head_direct(mem_type: MemType) -> None:
    xdp = prepared(q=rxq(mem_type))
    a, b = Page.zeroed(4096), Page.zeroed(4096)
    xdp_buff_add_frag(xdp, a, 0, 10, 4096, try_coalesce=False)
    xdp_buff_add_frag(xdp, b, 0, 10, 4096, try_coalesce=False)
    out = xdp_return_buff(xdp)
    assert [r.page for r in out] == [a, b, xdp.page]
    assert all(r.mem_type == mem_type and r.caller == "xdp_return_buff" for r in out)
    expected_direct = mem_type == MemType.MEM_TYPE_PAGE_POOL
    assert all(r.napi_direct is expected_direct for r in out)
    assert xdp_return_buff(xdp, return_frame_no_direct=True)[0].napi_direct is False


# --- XDP-MEM-005 / XDP-MEM-006 ----------------------------------------------------------

@pytest.mark.rule("XDP-MEM-005")
def test_rxq_reg_resets_memory_model() -> None:
    q = XdpRxqInfo()
    q.mem.type, q.mem.id = MemType.MEM_TYPE_PAGE_POOL, 42
    q.reg_state = RegState.UNREGISTERED
    assert xdp_rxq_info_reg(q, NetDev(4, "eth2"), 3, 2048) == 0
    assert (q.dev, q.queue_index, q.frag_size, q.reg_state) == \
        (NetDev(4, "eth2"), 3, 2048, RegState.REGISTERED)
    assert (q.mem.type, q.mem.id) == (MemType.MEM_TYPE_PAGE_SHARED, 0)


@pytest.mark.rule("XDP-MEM-005")
def test_rxq_reg_warn_cases_return_the_kernels_errnos() -> None:
    # net/core/xdp.c: __xdp_rxq_info_reg(): each case WARNs, then returns as shown.
    warns: list[KernelWarn] = []
    q = XdpRxqInfo()
    assert xdp_rxq_info_reg(q, None, 0, warns=warns) == -errno.ENODEV
    assert q == XdpRxqInfo()
    xdp_rxq_info_unused(q)
    assert xdp_rxq_info_reg(q, NetDev(1), 0, warns=warns) == -errno.EINVAL
    assert q.reg_state == RegState.UNUSED and q.dev is None
    assert [(w.function, w.message, w.rule) for w in warns] == [
        ("__xdp_rxq_info_reg", "Missing net_device from driver", "XDP-MEM-005"),
        ("__xdp_rxq_info_reg", "Driver promised not to register this", "XDP-MEM-005")]


@pytest.mark.rule("XDP-MEM-005")
def test_rxq_reg_twice_warns_unregisters_and_registers_again() -> None:
    # The third WARN case carries on: xdp_rxq_info_unreg() drops the memory model (a
    # page_pool registered under it is destroyed), then the queue is registered anew.
    r = XdpRxqInfo()
    assert xdp_rxq_info_reg(r, NetDev(1), 0, 1024) == 0
    assert xdp_rxq_info_reg_mem_model(r, MemType.MEM_TYPE_PAGE_POOL, object(), mem_id=9) == 0
    warns: list[KernelWarn] = []
    trace = Trace()
    assert xdp_rxq_info_reg(r, NetDev(2), 1, 0, warns=warns, trace=trace) == 0
    assert [w.message for w in warns] == ["Missing unregister, handled but fix driver"]
    assert (r.dev, r.queue_index, r.frag_size, r.reg_state) == \
        (NetDev(2), 1, 0, RegState.REGISTERED)
    assert (r.mem.type, r.mem.id) == (MemType.MEM_TYPE_PAGE_SHARED, 0)
    dropped = [dict(e.fields) for e in trace if e.what == "memory model dropped on unregister"]
    assert dropped == [{"mem_type": MemType.MEM_TYPE_PAGE_POOL, "mem_id": 9,
                        "page_pool_destroyed": True}]


@pytest.mark.rule("XDP-MEM-005")
def test_rxq_unreg_of_a_never_registered_queue_warns() -> None:
    # xdp_rxq_info_unreg_mem_model() WARNs on a queue that is not registered; unreg still
    # marks it UNREGISTERED.  An unused queue is skipped silently.
    warns: list[KernelWarn] = []
    q = XdpRxqInfo()
    assert xdp_rxq_info_unreg(q, warns=warns) is None
    assert q.reg_state == RegState.UNREGISTERED
    assert [w.function for w in warns] == ["xdp_rxq_info_unreg_mem_model"]
    u = XdpRxqInfo()
    xdp_rxq_info_unused(u)
    assert xdp_rxq_info_unreg(u, warns=warns) is None
    assert u.reg_state == RegState.UNUSED and len(warns) == 1


@pytest.mark.rule("XDP-MEM-006")
def test_reg_mem_model_order_of_checks() -> None:
    unreg = XdpRxqInfo()
    warns: list[KernelWarn] = []
    assert xdp_rxq_info_reg_mem_model(unreg, MemType.MEM_TYPE_PAGE_POOL, object(),
                                      warns=warns) == -errno.EFAULT
    assert unreg == XdpRxqInfo()
    assert [(w.message, w.rule) for w in warns] == [("Missing register, driver bug",
                                                     "XDP-MEM-006")]
    q = XdpRxqInfo()
    xdp_rxq_info_reg(q, NetDev(1), 0)
    assert xdp_rxq_info_reg_mem_model(q, 4, None) == -errno.EOPNOTSUPP
    assert q.mem.type == MemType.MEM_TYPE_PAGE_SHARED
    assert xdp_rxq_info_reg_mem_model(q, MemType.MEM_TYPE_PAGE_POOL, object(),
                                      page_pool_compiled_in=False) == -errno.EOPNOTSUPP
    # Type written before the allocator check: stays PAGE_POOL although -EINVAL.
    assert xdp_rxq_info_reg_mem_model(q, MemType.MEM_TYPE_PAGE_POOL, None) == -errno.EINVAL
    assert (q.mem.type, q.mem.id) == (MemType.MEM_TYPE_PAGE_POOL, 0)
    assert xdp_rxq_info_reg_mem_model(q, MemType.MEM_TYPE_PAGE_ORDER0, None) == 0
    assert (q.mem.type, q.mem.id) == (MemType.MEM_TYPE_PAGE_ORDER0, 0)
    assert xdp_rxq_info_reg_mem_model(q, MemType.MEM_TYPE_PAGE_POOL, object(), mem_id=7) == 0
    assert (q.mem.type, q.mem.id) == (MemType.MEM_TYPE_PAGE_POOL, 7)

"""Multi-buffer (XDP frags) frames through a cpumap entry, hand-worked.

One packet of a 100-byte head and two frags of 1000 bytes each, from a page_pool whose NAPI
instance is polled on CPU 0, redirected to the entry of CPU 1.  The numbers below are worked
from the kernel source (v6.17-rc3 ``net/core/xdp.c: __xdp_build_skb_from_frame``,
``include/net/xdp.h: xdp_update_skb_shared_info``, ``net/core/skbuff.c:
skb_release_data``, ``net/core/xdp.c: xdp_return_frame``, ``kernel/bpf/cpumap.c``), not
read off the model:

- the head buffer is a whole page: ``frame_sz`` 4096, data at 256 (XDP_PACKET_HEADROOM),
  so the ``xdp_frame`` at offset 0 records headroom 256 - 40 = 216 and len 100;
- ``build_skb_around`` takes the 4096-byte buffer (the model's truesize leaves out
  ``sizeof(struct sk_buff)``), ``skb_reserve(40 + 216)``, ``__skb_put(100)``;
- the frags add ``xdp_frags_size`` = 2000 to ``len`` and ``data_len`` and
  ``nr_frags * frame_sz`` = 2 * 4096 to truesize: len 2100, data_len 2000, truesize 12288;
- ``eth_type_trans`` pulls 14 bytes: len 2086, 270 bytes from the buffer start to data;
- freed by the stack on CPU 1, each page goes through ``napi_pp_put_page`` to
  ``page_pool_put_full_netmem(..., false)``; CPU 1 is not the pool's NAPI CPU, so all three
  pages go to the pool's ptr_ring: the two frags first, then the head.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from conformance.components import cpumap as component
from conformance.scenario import Scenario
from reference import page_pool as pp
from reference.cpumap import DROP_PROG, DROP_SKB_ALLOC
from reference.cpumap_sim import CpumapSim, SimConfig
from reference.errors import InvalidConfig
from reference.skb import FreePath
from reference.xdp.mem import MemType

A, B = 0, 1


def one_packet(**kw: Any) -> CpumapSim:
    sim = CpumapSim(SimConfig(frame_len=100, frags=(2,), frag_len=1000, **kw))
    sim.run([("rx", 1)])
    return sim


def frag_bytes(index: int, k: int, length: int) -> bytes:
    """CPUMAP-SIM-007's frag contents, from its text: counting up modulo 256 from
    (17 * index + 5 * k) mod 256."""
    start = (17 * index + 5 * k) % 256
    return bytes((start + j) % 256 for j in range(length))


@pytest.mark.rule("CPUMAP-SIM-007", "CPUMAP-MB-001", "SKB-BUILD-001", "SKB-BUILD-003",
                  "SKB-FREE-001", "SKB-FREE-003")
def test_a_two_frag_frame_becomes_an_skb_and_every_page_goes_back_once() -> None:
    sim = one_packet()
    (frame,) = sim.frames
    assert (frame.headroom, frame.len, frame.frame_sz, frame.flags) == (216, 100, 4096, 1)
    sim.run([("kthread", 1)])
    skb = sim._skb_of[0]
    assert (skb.len, skb.data_len, skb.truesize) == (2086, 2000, 12288)
    assert skb.data - skb.head_start == 270 and skb.protocol == 0x86DD and skb.pp_recycle
    assert [f.size for f in skb.frags] == [1000, 1000]
    assert [f.offset for f in skb.frags] == [256, 256]
    assert b"".join(f.view() for f in skb.frags) == frag_bytes(0, 0, 1000) + frag_bytes(0, 1, 1000)
    head_page = skb.head.handle
    frag_pages = [f.page.handle for f in skb.frags]
    assert sim.ledger_problems() == []
    assert sim.pool.inflight() == 64  # one slow-path bulk of 64 pages, all accounted
    st = sim.pool.stats()
    assert (st.alloc_stats.slow, st.alloc_stats.fast) == (1, 2)  # three pages taken
    sim.run([("free", 1)])
    assert [(r.page, r.path, r.outcome, r.cpu) for r in sim.frees] == [
        (frag_pages[0], FreePath.PAGE_POOL, pp.PutOutcome.RING, B),
        (frag_pages[1], FreePath.PAGE_POOL, pp.PutOutcome.RING, B),
        (head_page, FreePath.PAGE_POOL, pp.PutOutcome.RING, B)]
    st = sim.pool.stats()
    assert (st.recycle_stats.ring, st.recycle_stats.cached) == (3, 0)
    assert sim.fates() == ["freed"] and sim.ledger_problems() == []


@pytest.mark.rule("CPUMAP-SIM-007", "SKB-BUILD-001", "SKB-BUILD-002")
def test_the_skb_observables_of_a_two_frag_frame() -> None:
    scenario = Scenario(component="cpumap",
                        config={"frame_len": 100, "frags": [2], "frag_len": 1000},
                        events=({"op": "rx", "n": 1}, {"op": "kthread", "n": 1},
                                {"op": "free", "n": 1}))
    (packet,) = component.expected(scenario)["packets"]
    skb = packet["skb"]
    assert (skb["len"], skb["data_len"], skb["truesize"], skb["headroom"]) == (2086, 2000,
                                                                            12288, 270)
    assert skb["nr_frags"] == 2
    paged = frag_bytes(0, 0, 1000) + frag_bytes(0, 1, 1000)
    assert skb["frag_data"] == hashlib.sha256(paged).hexdigest()[:16]
    assert packet["fate"] == "freed" and packet["free_path"] == "page_pool"


@pytest.mark.rule("SKB-BUILD-004", "CPUMAP-MB-001", "SKB-FREE-002")
def test_before_v6_4_every_frag_page_leaves_the_pool_and_is_freed_with_put_page() -> None:
    sim = one_packet(pre_v6_4=True)
    sim.run([("kthread", 1)])
    # xdp_release_frame: each frag page, then the head, leaves the pool.
    assert sim.pool.pages_state_release_cnt == 3 and sim.pool.pages_state_hold_cnt == 64
    assert not sim._skb_of[0].pp_recycle
    sim.run([("free", 1)])
    assert [r.path for r in sim.frees] == [FreePath.PUT_PAGE] * 3
    assert sim.allocator.freed == 3
    r = sim.pool.stats().recycle_stats
    assert (r.cached, r.ring, r.ring_full) == (0, 0, 0)


@pytest.mark.rule("CPUMAP-MB-001", "SKB-FREE-002", "CPUMAP-SIM-002")
def test_order0_frag_pages_are_put_back_to_the_page_allocator() -> None:
    sim = one_packet(mem_type=MemType.MEM_TYPE_PAGE_ORDER0)
    sim.run([("kthread", 1)])
    assert not sim._skb_of[0].pp_recycle and sim.allocator.live == 3
    sim.run([("free", 1)])
    assert [r.path for r in sim.frees] == [FreePath.PUT_PAGE] * 3
    assert sim.allocator.live == 0 and sim.ledger_problems() == []


@pytest.mark.rule("CPUMAP-MB-001", "CPUMAP-KT-003", "SKB-FREE-004")
def test_a_frame_without_an_skb_head_returns_its_frags_then_its_head() -> None:
    sim = one_packet()
    sim.entry.skb_alloc_fail_next = 1
    sim.run([("kthread", 1)])
    frame_pages = [sim.cpumap.frees[i].page for i in range(3)]
    # xdp_return_frame: frags, then the head, napi_direct false, on CPU 1: the ring.
    assert [r.outcome for r in sim.cpumap.frees] == [pp.PutOutcome.RING] * 3
    assert frame_pages[2] is sim.frames[0].page.handle
    assert sim.fates() == [f"dropped:{DROP_SKB_ALLOC}"] and sim.ledger_problems() == []


@pytest.mark.rule("CPUMAP-MB-001", "CPUMAP-KT-002", "XDP-ADJ-009", "XDP-ADJ-010")
@pytest.mark.parametrize(("delta", "skb_len", "data_len", "truesize", "released"), [
    (-999, 100 + 1001 - 14, 1001, 12288, 0),  # the last frag keeps 1 byte
    (-1000, 100 + 1000 - 14, 1000, 8192, 1),  # the last frag goes back
    (-2000, 100 - 14, 0, 4096, 2),  # both go back: the frame is linear again
    (-2001, 99 - 14, 0, 4096, 2),  # and one byte more comes off the head
])
def test_the_entry_program_shrinks_frags_away(delta: int, skb_len: int, data_len: int,
                                              truesize: int, released: int) -> None:
    sim = one_packet(second_prog=({"op": "adjust_tail", "delta": delta},))
    sim.run([("kthread", 1)])
    skb = sim._skb_of[0]
    assert (skb.len, skb.data_len, skb.truesize) == (skb_len, data_len, truesize)
    # bpf_xdp_shrink_data: each emptied frag goes back at once, not direct: the ring.
    assert [r.outcome for r in sim.cpumap.frees] == [pp.PutOutcome.RING] * released
    sim.run([("free", 1)])
    assert len(sim.frees) == 3 - released and sim.ledger_problems() == []
    assert sim.pool.stats().recycle_stats.ring == 3


@pytest.mark.rule("CPUMAP-MB-001", "CPUMAP-KT-002", "XDP-ADJ-008")
def test_the_entry_program_cannot_grow_a_frag_and_its_drop_returns_every_page() -> None:
    sim = one_packet(second_prog=({"op": "adjust_tail", "delta": 8},
                                  {"op": "get_buff_len"}, {"op": "return", "action": 1}))
    sim.run([("kthread", 1)])
    assert sim.fates() == [f"dropped:{DROP_PROG}"]
    assert len(sim.cpumap.frees) == 3 and sim.ledger_problems() == []


@pytest.mark.rule("CPUMAP-SIM-007", "CPUMAP-SIM-003", "CPUMAP-SIM-004")
def test_a_packet_that_cannot_get_its_frag_gives_back_its_head_in_the_poll() -> None:
    sim = CpumapSim(SimConfig(frags=(2,), frag_len=1000))
    sim.run([("rx", 21)])  # 63 pages of the first bulk of 64
    sim.allocator.fail(1)
    sim.run([("rx", 1)])  # head: the 64th page; frag: the slow path fails
    assert sim.rx_alloc_failures == 1 and len(sim.frames) == 21
    assert [(r.path, r.outcome, r.cpu) for r in sim.rx_frees] == [
        (FreePath.PAGE_POOL, pp.PutOutcome.CACHED, A)]  # direct, in A's NAPI poll
    a = sim.pool.stats().alloc_stats
    assert a.fast + a.refill + a.slow == 64
    assert sim.direct_pushes()["source_cpu"] == 1 and sim.ledger_problems() == []


@pytest.mark.rule("CPUMAP-SIM-007")
def test_frag_counts_cycle_over_the_packets_and_are_bounded() -> None:
    cfg = SimConfig(frags=(0, 3))
    assert [cfg.frags_of(i) for i in range(4)] == [0, 3, 0, 3]
    assert SimConfig().frags_of(5) == 0
    bad: list[dict[str, Any]] = [{"frags": (18,)}, {"frag_len": 0}, {"frag_len": 3841},
                                 {"frags": (1,) * 65}]
    for kw in bad:
        with pytest.raises(InvalidConfig):
            SimConfig(**kw)


@pytest.mark.rule("SKB-BUILD-001", "CPUMAP-SIM-001", "XDP-BUFF-007", "PP-RECYCLE-003")
def test_pfmemalloc_comes_from_the_head_page_or_any_frag_page() -> None:
    # The pool's first slow-path bulk takes 64 pages and hands out the last one first:
    # with the allocator's next 63 pages from the reserves, packet 0's head is the one
    # ordinary page and its two frags are pfmemalloc (xdp_buff_add_frag sets
    # XDP_FLAGS_FRAGS_PF_MEMALLOC, 2); packet 1's head is a reserve page itself
    # (build_skb_around copies page_is_pfmemalloc of the head).
    sim = CpumapSim(SimConfig(frame_len=100, frags=(2, 0), frag_len=1000))
    sim.allocator.pfmemalloc_next = 63
    sim.run([("rx", 2), ("kthread", 1)])
    assert [f.flags for f in sim.frames] == [1 | 2, 0]
    one, two = sim._skb_of[0], sim._skb_of[1]
    assert not one.head.pfmemalloc and one.pfmemalloc
    assert two.head.pfmemalloc and two.pfmemalloc and not two.frags
    sim.run([("free", 2)])
    # A pfmemalloc page is never recycled: released (released_refcnt) and freed.
    r = sim.pool.stats().recycle_stats
    assert (r.ring, r.released_refcnt) == (1, 3) and sim.allocator.freed == 3
    assert sim.ledger_problems() == []


@pytest.mark.rule("CPUMAP-SIM-007", "CPUMAP-SIM-002")
def test_an_order0_packet_that_cannot_get_its_frag_puts_its_head_back() -> None:
    # With order-0 pages each page is one allocator request; make the second fail.
    class SecondFails(pp.PageAllocator):
        calls = 0

        def alloc_pages_node(self, nid: int, order: int, local_nid: int) -> pp.Page | None:
            SecondFails.calls += 1
            return None if SecondFails.calls == 2 else super().alloc_pages_node(nid, order,
                                                                                 local_nid)

    sim = CpumapSim(SimConfig(mem_type=MemType.MEM_TYPE_PAGE_ORDER0, frags=(1,)))
    sim.allocator = SecondFails()
    sim.run([("rx", 1)])
    assert sim.rx_alloc_failures == 1 and sim.frames == []
    assert [(r.path, r.outcome, r.cpu) for r in sim.rx_frees] == [(FreePath.PUT_PAGE, None, A)]
    assert sim.allocator.live == 0 and sim.ledger_problems() == []

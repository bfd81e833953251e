"""reference.cpumap and reference.cpumap_sim: hand-worked cases and the seed's result."""

from __future__ import annotations

import errno
from collections import Counter
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference import page_pool as pp
from reference.cpumap import (
    BPF_EXIST,
    BPF_NOEXIST,
    DROP_PROG,
    DROP_PROG_REDIRECT,
    DROP_RING_FULL,
    DROP_SKB_ALLOC,
    CpuMap,
    CpuMapEntry,
    overflow_free_burst,
    tracepoint_problems,
)
from reference.cpumap_sim import CpumapSim, SimConfig
from reference.errors import InvalidConfig
from reference.kernel import parse_kernel
from reference.kfuncs import BPF_XDP_CPUMAP, BPF_XDP_DEVMAP, BpfDevices, BpfProg, LoadedBpfProg
from reference.xdp.buff import XdpBuff, xdp_init_buff, xdp_prepare_buff
from reference.xdp.frame import XdpFrame, xdp_convert_buff_to_frame
from reference.xdp.mem import MemType, XdpMemInfo
from reference.xdp.memory import Page as XPage
from reference.xdp.rxq import NetDev, XdpRxqInfo

A, B = 0, 1
CTX_A = pp.Context.softirq(A)
PAYLOAD = b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02\x86\xdd" + bytes(50)


def make_pool(pool_size: int = 256) -> pp.PagePool:
    res = pp.page_pool_create(pp.PagePoolParams(flags=pp.PP_FLAG_DMA_MAP, pool_size=pool_size,
                                                dma_dir=pp.DMA_FROM_DEVICE,
                                                napi=pp.NapiStruct(A)))
    assert res.pool is not None
    return res.pool


def frames(pool: pp.PagePool, n: int) -> list[XdpFrame]:
    out = []
    rxq = XdpRxqInfo(dev=NetDev(2), mem=XdpMemInfo(type=MemType.MEM_TYPE_PAGE_POOL))
    for _ in range(n):
        page = pool.alloc_pages(CTX_A)
        assert page is not None
        xpage = XPage.zeroed(4096, handle=page)
        xpage.data[256 : 256 + len(PAYLOAD)] = PAYLOAD
        xdp = XdpBuff()
        xdp_init_buff(xdp, 4096, rxq)
        xdp_prepare_buff(xdp, xpage, 0, 256, len(PAYLOAD), True)
        f = xdp_convert_buff_to_frame(xdp)
        assert f is not None
        out.append(f)
    return out


def entry_map(qsize: int, **kw: Any) -> tuple[CpuMap, CpuMapEntry]:
    cmap = CpuMap(4, [0, 1, 2], **kw)
    assert cmap.update_elem(B, qsize) == 0
    entry = cmap.lookup(B)
    assert entry is not None
    return cmap, entry


def load(attach: int) -> LoadedBpfProg:
    out = BpfDevices().prog_load(BpfProg(expected_attach_type=attach))
    assert out.prog is not None
    return out.prog


# ---------------------------------------------------------------------- map updates


@pytest.mark.rule("CPUMAP-MAP-001")
@pytest.mark.parametrize(("key", "qsize", "flags", "rc"), [
    (1, 64, 3, -errno.EINVAL),  # flags > BPF_EXIST, checked before the key
    (9, 64, 3, -errno.EINVAL),
    (4, 64, 0, -errno.E2BIG),  # key >= max_entries (4)
    (4, 64, BPF_NOEXIST, -errno.E2BIG),
    (1, 64, BPF_NOEXIST, -errno.EEXIST),
    (1, 16385, BPF_EXIST, -errno.EOVERFLOW),  # 16384 is the limit
    (3, 64, 0, -errno.ENODEV),  # CPU 3 is not possible
    (3, 16385, 0, -errno.EOVERFLOW),  # qsize is checked before the CPU
    (1, 16384, BPF_EXIST, 0),
])
def test_update_elem_checks_in_kernel_order(key: int, qsize: int, flags: int, rc: int) -> None:
    assert CpuMap(4, [0, 1, 2]).update_elem(key, qsize, flags=flags) == rc


@pytest.mark.rule("CPUMAP-MAP-002")
def test_qsize_zero_deletes_and_updates_replace() -> None:
    cmap, first = entry_map(8)
    assert first.queue.size == 8
    assert cmap.update_elem(B, 32) == 0
    second = cmap.lookup(B)
    assert second is not None and second is not first and second.queue.size == 32
    assert cmap.retired == [first]
    assert cmap.update_elem(B, 0) == 0 and cmap.lookup(B) is None
    assert cmap.delete_elem(4) == -errno.EINVAL and cmap.delete_elem(2) == 0


@pytest.mark.rule("CPUMAP-MAP-003")
def test_second_program_must_be_a_cpumap_program() -> None:
    """Before 48e11bad9a1f (6.18 here) a refusal reads -ENOMEM; from v7.0 -EINVAL."""
    cmap = CpuMap(4, [0, 1], kernel=parse_kernel("6.18"))
    assert cmap.update_elem(B, 8, prog=load(BPF_XDP_DEVMAP), ops=()) == -errno.ENOMEM
    assert cmap.update_elem(B, 8, prog=load(0), ops=()) == -errno.ENOMEM
    assert CpuMap(4, [0, 1], kernel=parse_kernel("7.3")).update_elem(
        B, 8, prog=load(0), ops=()) == -errno.EINVAL
    assert cmap.lookup(B) is None
    assert cmap.update_elem(B, 8, prog=load(BPF_XDP_CPUMAP), ops=({"op": "return",
                                                                  "action": 2},)) == 0


# ---------------------------------------------------------------------- enqueue


@pytest.mark.rule("CPUMAP-ENQ-001", "CPUMAP-ENQ-004")
def test_bulk_queue_of_eight_flushes_on_the_ninth_and_at_xdp_do_flush() -> None:
    pool = make_pool()
    cmap, entry = entry_map(64)
    fs = frames(pool, 9)
    for f in fs[:8]:
        assert cmap.cpu_map_enqueue(entry, f, 2, CTX_A) == 0
    assert len(entry.bq(A).q) == 8 and len(entry.queue) == 0 and not cmap.enqueue_traces
    assert fs[0].dev_rx == 2
    cmap.cpu_map_enqueue(entry, fs[8], 2, CTX_A)
    assert len(entry.queue) == 8 and entry.bq(A).q == [fs[8]]
    assert [(t.processed, t.drops, t.to_cpu) for t in cmap.enqueue_traces] == [(8, 0, B)]
    cmap.flush(CTX_A)
    assert list(entry.queue) == fs and entry.wakeups == 1
    assert [t.processed for t in cmap.enqueue_traces] == [8, 1]
    cmap.flush(CTX_A)  # nothing linked any more: no empty trace
    assert len(cmap.enqueue_traces) == 2


@pytest.mark.rule("CPUMAP-ENQ-001", "CPUMAP-ENQ-004")
def test_flush_list_is_walked_from_the_most_recently_linked_queue() -> None:
    # bq_enqueue links a queue with list_add (at the head); __cpu_map_flush walks the
    # list from the head.  A queue flushed because it was full is unlinked
    # (__list_del_clearprev) and relinked at the head by the frame that follows.
    pool = make_pool()
    cmap = CpuMap(4, [0, 1, 2])
    assert cmap.update_elem(1, 64) == 0 and cmap.update_elem(2, 64) == 0
    e1, e2 = cmap.lookup(1), cmap.lookup(2)
    assert e1 is not None and e2 is not None
    fs = frames(pool, 11)
    cmap.cpu_map_enqueue(e1, fs[0], 2, CTX_A)
    cmap.cpu_map_enqueue(e2, fs[1], 2, CTX_A)
    cmap.flush(CTX_A)
    assert [t.to_cpu for t in cmap.enqueue_traces] == [2, 1]
    cmap.enqueue_traces.clear()
    for f in fs[2:10]:
        cmap.cpu_map_enqueue(e1, f, 2, CTX_A)  # e1 linked, then full (8 frames)
    cmap.cpu_map_enqueue(e2, fs[10], 2, CTX_A)  # e2 linked at the head
    assert [bq.obj.cpu for bq in cmap.flush_lists[A]] == [2, 1]
    cmap.flush(CTX_A)
    assert [(t.to_cpu, t.processed) for t in cmap.enqueue_traces] == [(2, 1), (1, 8)]


@pytest.mark.rule("CPUMAP-ENQ-002", "CPUMAP-ENQ-003", "CPUMAP-FATE-001")
def test_ring_full_drops_are_counted_and_returned_direct_on_the_source() -> None:
    pool = make_pool()
    cmap, entry = entry_map(4)
    fs = frames(pool, 7)
    for f in fs:
        cmap.cpu_map_enqueue(entry, f, 2, CTX_A)
    cmap.flush(CTX_A)
    assert list(entry.queue) == fs[:4]
    assert [(t.processed, t.drops) for t in cmap.enqueue_traces] == [(7, 3)]
    assert [(f, r) for f, r in cmap.drops] == [(f, DROP_RING_FULL) for f in fs[4:]]
    # xdp_return_frame_rx_napi on CPU A: straight into the alloc cache.
    assert [r.outcome for r in cmap.frees] == [pp.PutOutcome.CACHED] * 3
    assert pool.stats().recycle_stats.cached == 3
    pool.check_conservation()


# ---------------------------------------------------------------------- kthread


@pytest.mark.rule("CPUMAP-KT-001", "CPUMAP-KT-004", "CPUMAP-KT-005")
def test_kthread_batches_of_eight_and_gro_flush_when_the_ring_empties() -> None:
    pool = make_pool()
    cmap, entry = entry_map(32)
    assert cmap.kthread_run_once(entry) is None  # empty: it sleeps
    for f in frames(pool, 20):
        cmap.cpu_map_enqueue(entry, f, 2, CTX_A)
    cmap.flush(CTX_A)
    runs = [cmap.kthread_run_once(entry) for _ in range(4)]
    assert runs[3] is None
    got = [(r.trace.processed, r.trace.sched, r.gro_flushed) for r in runs[:3] if r]
    assert got == [(8, 1, 0), (8, 0, 0), (4, 0, 20)]
    assert len(entry.stack) == 20 and entry.gro_flushes == 1 and entry.gro_full_flushes == 1


@pytest.mark.rule("CPUMAP-KT-004")
def test_gro_flushes_every_64_packets() -> None:
    pool = make_pool()
    cmap, entry = entry_map(128)
    for f in frames(pool, 100):
        cmap.cpu_map_enqueue(entry, f, 2, CTX_A)
    cmap.flush(CTX_A)
    flushed = []
    while (r := cmap.kthread_run_once(entry)) is not None:
        flushed.append(r.gro_flushed)
    # 13 batches (12 x 8 + 4): the 8th reaches 64 packets; the 13th empties the ring.
    assert flushed == [0] * 7 + [64] + [0] * 4 + [36]
    assert entry.gro_full_flushes == 1


@pytest.mark.rule("CPUMAP-KT-002")
def test_second_program_verdicts() -> None:
    pool = make_pool()
    cmap, entry = entry_map(16)
    fs = frames(pool, 5)
    actions = [2, 1, 3, 0, 4]  # PASS, DROP, TX, ABORTED, REDIRECT
    for f in fs:
        cmap.cpu_map_enqueue(entry, f, 2, CTX_A)
    cmap.flush(CTX_A)
    # one program per frame is not possible; run the kthread once per action instead
    results = []
    for act in actions:
        entry.prog = ({"op": "return", "action": act},)
        entry.queue, saved = type(entry.queue)(16), entry.queue
        one = saved.consume()
        assert one is not None
        entry.queue.produce(one)
        run = cmap.kthread_run_once(entry)
        assert run is not None
        results.append((run.trace.xdp_pass, run.trace.xdp_drop, run.trace.xdp_redirect,
                        [r for _, r in run.dropped]))
        entry.queue = saved
    assert results == [(1, 0, 0, []), (0, 1, 0, [DROP_PROG]), (0, 1, 0, [DROP_PROG]),
                       (0, 1, 0, [DROP_PROG]), (0, 1, 0, [DROP_PROG_REDIRECT])]
    assert entry.warned_actions == [3, 0]  # TX and ABORTED warn; DROP does not
    # Returns run with the no-direct flag on CPU B: the ring, never the cache.
    assert {r.outcome for r in cmap.frees} == {pp.PutOutcome.RING}


@pytest.mark.rule("CPUMAP-KT-003")
def test_missing_skb_heads_drop_frames() -> None:
    pool = make_pool()
    cmap, entry = entry_map(16)
    for f in frames(pool, 8):
        cmap.cpu_map_enqueue(entry, f, 2, CTX_A)
    cmap.flush(CTX_A)
    entry.skb_alloc_fail_next = 3
    run = cmap.kthread_run_once(entry)
    assert run is not None
    assert run.trace.processed == 8 and run.trace.drops == 3 and len(run.skbs) == 5
    assert [r for _, r in run.dropped] == [DROP_SKB_ALLOC] * 3


@pytest.mark.rule("CPUMAP-KT-003", "CPUMAP-KT-004", "CPUMAP-KT-005")
def test_before_v6_15_each_batch_goes_up_as_a_list_and_heads_are_all_or_nothing() -> None:
    """6.12.118 ``cpu_map_kthread_run`` (linux-source-6.12), worked by hand: 20 frames on a
    ring of 32 are three batches (8, 8, 4); ``kmem_cache_alloc_bulk`` fails the whole
    first batch when it lacks one head (7.3 would keep 7 of 8), and every other batch's
    skbs go to the stack right after the tracepoint with no GRO (``gro_flushes`` 0)."""
    pool = make_pool()
    cmap, entry = entry_map(32, kernel=parse_kernel("6.12.117", "test"))
    for f in frames(pool, 20):
        cmap.cpu_map_enqueue(entry, f, 2, CTX_A)
    cmap.flush(CTX_A)
    entry.skb_alloc_fail_next = 1
    got = []
    while (run := cmap.kthread_run_once(entry)) is not None:
        got.append((run.trace.processed, run.trace.drops, len(run.skbs), run.gro_flushed,
                    len(entry.stack), [r for _, r in run.dropped]))
    assert got == [(8, 8, 0, 0, 0, [DROP_SKB_ALLOC] * 8), (8, 0, 8, 8, 8, []),
                   (4, 0, 4, 4, 12, [])]
    assert entry.skb_alloc_fail_next == 0 and not entry.gro
    assert entry.gro_flushes == 0 and entry.gro_full_flushes == 0


@pytest.mark.rule("CPUMAP-KT-003")
def test_a_head_shortage_larger_than_a_batch_spans_batches_on_both_sides() -> None:
    """``skb_alloc_fail`` 10 over batches of 8 and 4: at 7.3.4 the first batch gets no head
    and the second lacks 2 (2 dropped, 2 skbs); at 6.12.117 the second batch, short of
    2, gets none (4 dropped)."""
    for kernel, second in (("7.3.4", (2, 2)), ("6.12.117", (4, 0))):
        pool = make_pool()
        cmap, entry = entry_map(32, kernel=parse_kernel(kernel, "test"))
        for f in frames(pool, 12):
            cmap.cpu_map_enqueue(entry, f, 2, CTX_A)
        cmap.flush(CTX_A)
        entry.skb_alloc_fail_next = 10
        first, then = cmap.kthread_run_once(entry), cmap.kthread_run_once(entry)
        assert first is not None and then is not None
        assert (first.trace.drops, len(first.skbs)) == (8, 0), kernel
        assert (then.trace.drops, len(then.skbs)) == second, kernel
        assert entry.skb_alloc_fail_next == 0


# ---------------------------------------------------------------------- the engine


def seed_sim(pre_v6_4: bool, packets_per_poll: int, polls: int) -> CpumapSim:
    sim = CpumapSim(SimConfig(pre_v6_4=pre_v6_4, qsize=64, pool_size=256))
    sim.run([("rx", packets_per_poll), ("kthread", 8), ("free", 1000)] * polls)
    return sim


@pytest.mark.rule("CPUMAP-SIM-005", "CPUMAP-SIM-004", "CPUMAP-KT-006")
def test_seed_steady_state_needs_no_slow_allocations_with_recycling() -> None:
    warm = seed_sim(False, 32, 10)
    slow_warm = warm.pool.stats().alloc_stats.slow
    long = seed_sim(False, 32, 50)
    st_ = long.pool.stats()
    assert st_.alloc_stats.slow == slow_warm == 1  # the first bulk of 64 pages only
    assert st_.recycle_stats.ring == 50 * 32  # every skb free on CPU B: the ring
    assert st_.recycle_stats.cached == 0
    assert long.pool.pages_state_release_cnt == 0
    a = st_.alloc_stats
    assert a.fast + a.refill + a.slow == 50 * 32


@pytest.mark.rule("CPUMAP-SIM-005", "CPUMAP-SIM-004", "SKB-BUILD-004")
def test_seed_without_recycling_costs_one_page_per_packet() -> None:
    sims = {polls: seed_sim(True, 32, polls) for polls in (10, 50)}
    for polls, sim in sims.items():
        n = polls * 32
        assert sim.pool.pages_state_release_cnt == n  # one release per skb built
        assert sim.pool.pages_state_hold_cnt == -(-n // 64) * 64  # bulks of 64
        assert sim.pool.stats().alloc_stats.slow == -(-n // 64)
        r = sim.pool.stats().recycle_stats
        assert (r.cached, r.ring, r.ring_full) == (0, 0, 0)
        assert sim.allocator.freed == n


@pytest.mark.rule("CPUMAP-FATE-001", "CPUMAP-SIM-001")
def test_source_outrunning_the_destination_drops_at_the_ring() -> None:
    sim = CpumapSim(SimConfig(qsize=16))
    sim.run([("rx", 40), ("kthread", 1), ("free", 100)] * 5)
    fates = Counter(sim.fates())
    drops = sum(t.drops for t in sim.cpumap.enqueue_traces)
    assert fates[f"dropped:{DROP_RING_FULL}"] == drops > 0
    assert sum(fates.values()) == 200
    assert sum(t.processed for t in sim.cpumap.enqueue_traces) == 200


@pytest.mark.rule("CPUMAP-SIM-003")
def test_cache_pushes_only_on_the_source_cpu() -> None:
    remote = CpumapSim(SimConfig())
    remote.run([("rx", 16), ("kthread", 4), ("free", 100)] * 6)
    assert remote.direct_pushes() == {"source_cpu": 0, "destination_cpu": 0, "other": 0}
    local = CpumapSim(SimConfig(free_cpu=A))
    local.run([("rx", 16), ("kthread", 4), ("free", 100)] * 6)
    assert local.direct_pushes() == {"source_cpu": 96, "destination_cpu": 0, "other": 0}


@pytest.mark.rule("CPUMAP-SIM-001")
def test_engine_refuses_impossible_configs() -> None:
    with pytest.raises(InvalidConfig):
        SimConfig(cpu_a=1, cpu_b=1)
    with pytest.raises(InvalidConfig):
        SimConfig(mem_type=MemType.MEM_TYPE_PAGE_SHARED)
    with pytest.raises(InvalidConfig):
        CpumapSim(SimConfig()).run([("sleep", 1)])


@pytest.mark.rule("CPUMAP-SIM-002", "CPUMAP-FATE-001", "CPUMAP-SIM-004", "CPUMAP-SIM-007")
@given(pre=st.booleans(), order0=st.booleans(), free_on_a=st.booleans(),
       qsize=st.sampled_from([4, 16, 64]), pool_size=st.sampled_from([8, 64, 256]),
       frags=st.sampled_from([(), (1,), (0, 2), (17,)]),
       steps=st.lists(st.tuples(st.sampled_from(["rx", "kthread", "free", "fail"]),
                                st.integers(0, 30)), max_size=25))
def test_ledger_and_fates_hold_at_every_step(pre: bool, order0: bool, free_on_a: bool,
                                             qsize: int, pool_size: int,
                                             frags: tuple[int, ...],
                                             steps: list[tuple[str, int]]) -> None:
    mem = MemType.MEM_TYPE_PAGE_ORDER0 if order0 else MemType.MEM_TYPE_PAGE_POOL
    sim = CpumapSim(SimConfig(pre_v6_4=pre, mem_type=mem, qsize=qsize, pool_size=pool_size,
                              free_cpu=A if free_on_a else None, frags=frags, frag_len=100))
    for op, n in steps:
        if op == "fail":  # the page allocator fails the next request or two
            sim.allocator.fail(n % 3)
        else:
            sim.run([(op, n)])  # checks the ledger after every step
    fates = sim.fates()
    assert "?" not in fates
    c = Counter(fates)
    assert c[f"dropped:{DROP_RING_FULL}"] == sum(t.drops for t in sim.cpumap.enqueue_traces)
    assert c[f"dropped:{DROP_SKB_ALLOC}"] == sum(t.drops for t in sim.cpumap.kthread_traces)
    stats = sim.pool.stats()
    a, r = stats.alloc_stats, stats.recycle_stats
    pages = [1 + sim.config.frags_of(i) for i in range(len(fates))]
    if not order0:
        assert a.fast + a.refill + a.slow == sum(pages) + len(sim.rx_frees)
        returned = sum(1 for f in [*sim.frees, *sim.cpumap.frees, *sim.rx_frees]
                       if f.outcome is not None)
        assert r.cached + r.ring + r.ring_full + r.released_refcnt == returned
        assert r.released_refcnt == 0
        if pre:
            built = sum(n for n, f in zip(pages, fates, strict=True)
                        if f in ("gro", "stack", "freed"))
            assert sim.pool.pages_state_release_cnt - r.ring_full - a.waive == built
    if not free_on_a:
        assert sim.direct_pushes()["destination_cpu"] == 0


@pytest.mark.rule("CPUMAP-SIM-001", "SKB-FREE-001", "CPUMAP-FATE-001")
def test_explain_narrates_every_packet() -> None:
    from conformance.components.cpumap import explain
    from conformance.scenario import Scenario

    text = explain(Scenario(component="cpumap", config={"qsize": 16},
                            events=({"op": "rx", "n": 3}, {"op": "kthread", "n": 1},
                                    {"op": "free", "n": 3})))
    assert "fates: freed 3 (CPUMAP-FATE-001)" in text
    for i in range(3):
        assert f"packet {i}: page_pool page pfn " in text
    assert text.count("pp_recycle -> true (SKB-BUILD-003)") == 3
    assert text.count("freed at event 2 -> page on CPU 1: page_pool -> ring (SKB-FREE-001") == 3


# ---------------------------------------------------------------------- timing-free facts


@pytest.mark.rule("CPUMAP-LIVE-001", "PP-RING-001")
def test_overflow_free_burst_leaves_room_for_uncleared_slots() -> None:
    assert [overflow_free_burst(q) for q in (8, 16, 32, 33, 64, 256)] == [8, 16, 17, 18, 49,
                                                                          241]


@pytest.mark.rule("CPUMAP-LIVE-001", "CPUMAP-ENQ-003", "CPUMAP-KT-005")
def test_tracepoint_invariants_hold_for_the_model_and_catch_a_lost_frame() -> None:
    """The model's own traces satisfy what the live kernel is held to; a frame missing
    from the kthread's count, an oversized batch and an empty iteration without a wake-up
    are each named."""
    pool = make_pool()
    cmap, entry = entry_map(8)
    for f in frames(pool, 12):
        cmap.cpu_map_enqueue(entry, f, 2, CTX_A)
    cmap.flush(CTX_A)
    while cmap.kthread_run_once(entry) is not None:
        pass
    enq, kt = cmap.enqueue_traces, cmap.kthread_traces
    assert sum(t.drops for t in enq) == 4
    assert tracepoint_problems(enq, kt, 12, to_cpu=B) == []
    assert tracepoint_problems(enq, kt[:-1], 12, to_cpu=B)
    assert tracepoint_problems(enq, kt, 13, to_cpu=B)
    big = attrs.evolve(kt[0], processed=9)
    assert any("more than 8" in p for p in tracepoint_problems(enq, [big], 12, to_cpu=B))
    idle = attrs.evolve(kt[0], processed=0, sched=0)
    assert any("without a wake-up" in p for p in tracepoint_problems([], [idle], 0, to_cpu=B))
    assert tracepoint_problems(enq, kt, 12, to_cpu=A)


def test_fixed_case_rules_are_written_out() -> None:
    """The cpumap fixed-case property names every rule its cases aim at."""
    from conformance.components import cpumap as component
    from conformance.properties import test_cpumap as props
    assert set(props.FIXED_RULES) == {rule for rule, _, _ in component.FIXED_CASES}

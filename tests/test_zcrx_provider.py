"""reference.zcrx provider, pool and refill ring: hand-worked sequences.

Every expected value below is worked out by hand from ``io_uring/zcrx.c``
(``io_pp_zc_alloc_netmems``, ``io_zcrx_ring_refill``, ``io_parse_rqe``,
``io_zcrx_refill_slow``, ``io_pp_zc_release_netmem``, ``io_zcrx_return_niov``,
``io_zcrx_scrub``) and ``net/core/page_pool.c`` (alloc, recycle, destroy).
"""

from __future__ import annotations

import pytest
from zcrx_helpers import make_engine

from reference.errors import StateViolation
from reference.zcrx import Area, Niov, RefillOutcome, RefillRing, ZcPagePool
from reference.zcrx.provider import OUTCOME_RULE
from reference.zcrx.uapi import IoUringZcrxRqe

OUT = RefillOutcome


@pytest.mark.rule("ZCRX-AREA-005", "ZCRX-MP-003", "ZCRX-MP-002")
def test_first_allocation_order() -> None:
    e = make_engine(niovs=8)
    area = e.ifq.area  # type: ignore[union-attr]
    assert area.freelist == list(range(8)) and area.user_refs == [0] * 8
    got = [e.pool.alloc_netmem() for _ in range(8)]
    # the freelist pops 7, 6, ..., 0 into the batch; the last (0) is returned and the
    # cache hands out 1, 2, ..., 7 from its end
    assert [n.index for n in got if n is not None] == list(range(8))
    assert e.pool.mp_alloc_calls == 1 and e.pool.alloc_fast == 7
    assert e.pool.pages_state_hold_cnt == 8
    assert all(n is not None and n.pp is e.pool and n.pp_ref_count == 1 for n in got)
    # nothing left anywhere: the next allocation fails
    assert e.pool.alloc_netmem() is None
    assert e.pool.mp_alloc_calls == 2


@pytest.mark.rule("ZCRX-MP-003")
def test_provider_batch_is_64() -> None:
    e = make_engine(niovs=100)
    first = e.pool.alloc_netmem()
    assert first is not None and first.index == 36  # freelist pops 99..36: 64 niovs
    assert len(e.pool.cache) == 63
    assert e.ifq is not None and e.ifq.area.free_count == 36


@pytest.mark.rule("ZCRX-REFILL-001", "ZCRX-REFILL-002", "ZCRX-REFILL-003",
                  "ZCRX-REFILL-004", "ZCRX-REFILL-006", "ZCRX-CQE-002", "ZCRX-CQE-004")
def test_refill_hand_worked() -> None:
    e = make_engine(niovs=8, rq_entries=8)
    ifq = e.ifq
    assert ifq is not None
    area, rq = ifq.area, ifq.rq
    # 1. a 1448-byte segment lands at the start of niov 0 (the first allocated)
    e.rx_segments([1448])
    res = e.recv()
    assert res.rc == 1448
    assert [(c.off, c.res) for c in res.cqes] == [(0, 1448)]
    n0 = area.niovs[0]
    # driver (filling it) + the CQE; the skb's frag reference went when it was freed
    assert n0.pp_ref_count == 2 and area.user_refs[0] == 1
    # 2. the user gives CQE 0 back; nothing is read until an allocation needs it
    assert e.user_write([e.user_rqe_for(0)]) == 1
    assert (rq.head, rq.tail, rq.cached_head) == (0, 1, 0)
    # 3. the driver posts the 7 cached niovs: the cache was not empty, the ring not read
    assert e.alloc(7) == 7 and rq.cached_head == 0
    # 4. one more: cache empty -> provider -> the entry is read; niov 0 is still being
    #    filled, so it stays out (held); the freelist is empty: no buffer
    assert e.alloc(1) == 0
    assert [(r.seq, r.niov, r.outcome) for r in ifq.refills] == [(0, 0, OUT.HELD)]
    assert (rq.head, rq.cached_head) == (1, 1)
    assert area.user_refs[0] == 0 and n0.pp_ref_count == 1
    # 5. the rest of niov 0 is filled (the driver lets go of it) and received
    e.rx_segments([2648])
    res = e.recv()
    assert [(c.off, c.res) for c in res.cqes] == [(1448, 2648)]
    assert n0.pp_ref_count == 1 and area.user_refs[0] == 1
    # 6. the user returns it, and scribbles
    bogus = [IoUringZcrxRqe(off=0x2000, len=1, pad=1),          # __pad set
             IoUringZcrxRqe(off=(1 << 48) | 0x3000),             # area 1
             IoUringZcrxRqe(off=99 << 12),                       # niov 99 of 8
             IoUringZcrxRqe(off=5 << 12)]                        # niov 5: no user ref
    assert e.user_write([e.user_rqe_for(1), *bogus]) == 5
    # 7. the driver wants a buffer: the provider reads all five, consumes all of them,
    #    and niov 0 (nobody holds it any more) becomes the buffer
    assert e.device is not None and e.device.current is None
    assert e.alloc(1) == 1
    assert [(r.seq, r.niov, r.outcome) for r in ifq.refills[1:]] == [
        (1, 0, OUT.CACHED), (2, None, OUT.SKIPPED_PAD), (3, None, OUT.SKIPPED_AREA),
        (4, None, OUT.SKIPPED_INDEX), (5, 5, OUT.SKIPPED_UREF)]
    assert (rq.head, rq.cached_head, rq.tail) == (6, 6, 6)
    assert e.device.posted[-1] is n0
    assert area.user_refs == [0] * 8
    assert e.problems() == []


@pytest.mark.rule("ZCRX-REFILL-002", "ZCRX-UAPI-007")
def test_refill_ignores_len_and_the_offset_inside_the_niov() -> None:
    e = make_engine(niovs=8)
    e.rx_segments([4096])  # fills niov 0 exactly: the driver lets go at once
    e.recv()
    # any offset within niov 0 names niov 0; len is never read; 2^44 wraps to niov 0 too
    e.user_write([IoUringZcrxRqe(off=4095, len=0xFFFF_FFFF)])
    e.alloc(7)
    assert e.alloc(1) == 1
    assert e.ifq is not None and e.ifq.refills[0].outcome is OUT.CACHED
    e.rx_segments([4096])
    e.recv()
    e.user_write([IoUringZcrxRqe(off=1 << 44)])
    e.alloc(1)
    assert e.ifq.refills[1].niov == 0


@pytest.mark.rule("ZCRX-REFILL-001")
def test_bogus_tail_reads_at_most_the_ring() -> None:
    ring = RefillRing(8)
    ring.tail = 1000
    assert ring.entries() == 8
    ring.tail = (ring.cached_head - 1) & 0xFFFF_FFFF  # tail behind head: wraps huge
    assert ring.entries() == 8
    ring.tail = 3
    assert ring.entries() == 3


@pytest.mark.rule("ZCRX-REFILL-001")
def test_one_refill_reads_at_most_64_entries() -> None:
    e = make_engine(niovs=8, rq_entries=128)
    e.user_write([IoUringZcrxRqe(off=200 << 12)] * 100)  # 100 entries naming nothing
    # the first allocation tries the ring first: 64 entries read, all skipped, then the
    # freelist gives the batch
    assert e.alloc(8) == 8
    assert e.ifq is not None and e.ifq.rq.head == 64 and len(e.ifq.refills) == 64
    assert e.alloc(1) == 0  # cache empty: the other 36 read, freelist empty
    assert e.ifq.rq.head == 100 and len(e.ifq.refills) == 100
    assert {r.outcome for r in e.ifq.refills} == {OUT.SKIPPED_INDEX}


@pytest.mark.rule("ZCRX-REFILL-007")
def test_ring_slots_wrap_with_the_u32_counters() -> None:
    ring = RefillRing(8)
    start = (1 << 32) - 2
    ring.head = ring.tail = ring.cached_head = start
    for i in range(3):
        assert ring.user_push(IoUringZcrxRqe(off=i))
    assert ring.tail == 1
    seen = [ring.next_rqe() for _ in range(ring.entries())]
    assert [(slot, r.off) for slot, r in seen] == [(6, 0), (7, 1), (0, 2)]
    ring.publish()
    assert ring.head == 1
    # the user may not overrun head
    ring2 = RefillRing(4)
    assert all(ring2.user_push(IoUringZcrxRqe()) for _ in range(4))
    assert not ring2.user_push(IoUringZcrxRqe())


@pytest.mark.rule("ZCRX-REFILL-005", "ZCRX-MP-006")
def test_niov_of_a_restarted_queue_goes_back_to_its_pool() -> None:
    e = make_engine(niovs=8)
    e.rx_segments([4096])
    e.recv()
    old = e.pool
    e.restart()
    assert old.detached and e.pool is not old
    ifq = e.ifq
    assert ifq is not None
    # the old pool's cache (7 niovs) was released to the freelist at destroy
    assert ifq.area.free_count == 7 and old.pages_state_release_cnt == 7
    n0 = ifq.area.niovs[0]
    assert n0.pp is old and n0.pp_ref_count == 1  # the user's CQE
    e.user_write([e.user_rqe_for(0)])
    # the new pool's first allocation reads the entry: niov 0 is another pool's, so it
    # goes back through that pool (destroyed: to the freelist); the batch then comes
    # from the freelist
    assert e.alloc(1) == 1
    assert [(r.niov, r.outcome) for r in ifq.refills] == [(0, OUT.RETURNED)]
    assert old.pages_state_hold_cnt == old.pages_state_release_cnt == 8
    assert e.pool.pages_state_hold_cnt == 8
    assert e.problems() == []


@pytest.mark.rule("ZCRX-MP-002", "ZCRX-MP-004", "ZCRX-MP-005", "ZCRX-MP-006")
def test_pool_recycle_paths() -> None:
    area = Area(0, 8 * 4096, 12)

    class Provider:
        def __init__(self) -> None:
            self.released: list[int] = []

        def alloc_netmems(self, pool: ZcPagePool) -> Niov | None:
            niov = area.get_free_niov()
            if niov is None:
                return None
            pool.set_pp_info(niov)
            return niov

        def release_netmem(self, pool: ZcPagePool, niov: Niov) -> bool:
            self.released.append(niov.index)
            niov.pp = None
            area.return_to_freelist(niov)
            return False

    prov = Provider()
    pool = ZcPagePool(0, prov, order=0, ring_size=1)
    a, b, c = (pool.alloc_netmem() for _ in range(3))
    assert a is not None and b is not None and c is not None
    assert [a.index, b.index, c.index] == [7, 6, 5]
    pool.ref(a)
    pool.put(a)                      # references remain: nothing recycled
    assert a.pp_ref_count == 1 and not pool.ring and not pool.cache
    pool.put(a)                      # not direct: the ring (room for 1)
    assert list(pool.ring) == [a] and pool.recycle_ring == 1
    pool.put(b)                      # ring full: released to the provider
    assert prov.released == [6] and pool.pages_state_release_cnt == 1
    pool.put(c, allow_direct=True)   # direct: the cache
    assert pool.cache == [c]
    # alloc: the cache first, then the ring refills the cache, then the provider
    assert pool.alloc_netmem() is c
    assert pool.alloc_netmem() is a and pool.alloc_refill == 1
    assert pool.alloc_netmem() is not None and pool.mp_alloc_calls == 4
    with pytest.raises(StateViolation):
        pool.unref(c, 5)
    # destroy: what the pool keeps is released; later puts go straight back
    pool.put(c, allow_direct=True)
    pool.destroy()
    assert c.index in prov.released and not pool.cache
    pool.put(a)
    assert a.index in prov.released
    with pytest.raises(StateViolation):
        pool.alloc_netmem()


@pytest.mark.rule("ZCRX-MP-004")
def test_freelist_refuses_a_double_return() -> None:
    area = Area(0, 4 * 4096, 12)
    with pytest.raises(StateViolation):
        area.return_to_freelist(area.niovs[0])


@pytest.mark.rule("ZCRX-SCRUB-001", "ZCRX-SCRUB-002")
def test_shutdown_scrubs_and_returns_everything() -> None:
    e = make_engine(niovs=8)
    e.rx_segments([1448, 1448, 4000])
    e.recv()
    ifq = e.ifq
    assert ifq is not None
    refs = list(ifq.area.user_refs)
    assert sum(refs) == 4 and refs[0] == 3 and refs[1] == 1
    e.rx_segments([500])  # queued, never received
    taken = e.shutdown()
    assert taken == 4
    assert ifq.area.free_count == 8 and ifq.area.user_refs == [0] * 8
    assert all(n.pp is None and n.pp_ref_count == 0 for n in ifq.area.niovs)
    assert all(p.pages_state_hold_cnt == p.pages_state_release_cnt for p in e.pools)
    assert e.problems() == []


def test_every_outcome_has_a_rule() -> None:
    assert set(OUTCOME_RULE) == set(RefillOutcome)


@pytest.mark.rule("ZCRX-MP-005", "ZCRX-MP-002", "PP-RING-002")
def test_ring_full_with_unreleased_slots() -> None:
    """The zcrx pool's ptr_ring frees consumed slots a batch at a time, as a page-backed
    pool's does (``page_pool_recycle_in_ring`` -> ``__ptr_ring_produce``;
    ``page_pool_refill_alloc_cache`` -> ``__ptr_ring_consume`` ->
    ``__ptr_ring_discard_one``; Debian linux-source-7.3 ``include/linux/ptr_ring.h``
    287-335, ``net/core/page_pool.c`` 383-417 and 793-805).

    Worked by hand for a 32-slot ring: batch = 2 * 64 / 8 = 16 (not above 32 / 2).
    20 puts fill slots 0..19; one allocation refills the cache with all 20, clearing
    slots 0..15 when the 16th is read and leaving 16..19 read but not cleared.  16 more
    puts take slots 20..31 and 0..3; 12 more take 4..15; the next finds slot 16 still
    occupied: the ring is full with 28 unread entries of 32, and the niov is released.
    """
    area = Area(0, 64 * 4096, 12)

    class Provider:
        def __init__(self) -> None:
            self.released: list[int] = []

        def alloc_netmems(self, pool: ZcPagePool) -> Niov | None:
            niov = area.get_free_niov()
            if niov is None:
                return None
            pool.set_pp_info(niov)
            return niov

        def release_netmem(self, pool: ZcPagePool, niov: Niov) -> bool:
            self.released.append(niov.index)
            niov.pp = None
            area.return_to_freelist(niov)
            return False

    prov = Provider()
    pool = ZcPagePool(0, prov, order=0, ring_size=32)
    assert pool.ring.batch == 16
    out = [pool.alloc_netmem() for _ in range(64)]
    assert all(n is not None for n in out) and pool.alloc_netmem() is None
    niovs = [n for n in out if n is not None]
    for n in niovs[:20]:
        pool.put(n)
    assert len(pool.ring) == 20
    got = pool.alloc_netmem()                  # refill: all 20 into the cache, hand one out
    assert got is niovs[19] and len(pool.cache) == 19 and len(pool.ring) == 0
    assert pool.ring.stale_slots() == 4        # slots 16..19: read, not yet cleared
    for n in niovs[20:48]:
        pool.put(n)                            # 28 puts: slots 20..31, 0..15
    assert len(pool.ring) == 28 and pool.recycle_ring == 48 and prov.released == []
    pool.put(niovs[48])                        # slot 16 still taken: ring full
    assert prov.released == [niovs[48].index] and pool.pages_state_release_cnt == 1
    assert len(pool.ring) == 28 < pool.ring_size

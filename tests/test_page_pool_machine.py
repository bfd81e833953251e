"""Stateful test of the page_pool model: random driver behaviour, invariants after every step.

The machine plays a driver (and the rest of the stack) around one pool: it allocates
pages and fragments (with the page allocator failing, returning short bulks, pages of
a foreign node or pfmemalloc pages, and DMA mappings failing), returns references one
by one or in bulk, from the owning or a foreign context, with any sync length, takes
extra pp references and extra mm references, changes the NUMA node, destroys the pool,
retries its release and opens a new pool once the old one is gone.  It predicts
independently which put is the last reference and which allocation must move an
allocation counter, and after every step checks page conservation, the counter
algebra and the cache bound.

The step count comes from the settings profile (``stateful_step_count``).  The machine
has a single rule, ``step``, that draws one small integer naming an action (and the
held reference it applies to) from a per-example weighted action table.  Hypothesis
stops a run early once its per-example data budget is used, and with many rules its
rule selection (swarm testing plus rejection of disabled rules) can spend most of that
budget; one lean rule is what lets a ``deep`` run reach its 600 steps.  The table's
weights are drawn per example (the "mix"), which keeps the variety swarm testing gives.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from reference.errors import StateViolation
from reference.page_pool import (
    DMA_BIDIRECTIONAL,
    NUMA_NO_NODE,
    PP_ALLOC_CACHE_SIZE,
    PP_FLAG_DMA_MAP,
    PP_FLAG_DMA_SYNC_DEV,
    XDP_BULK_QUEUE_SIZE,
    Context,
    DmaDevice,
    Loc,
    NapiStruct,
    Page,
    PageAllocator,
    PagePool,
    PagePoolParams,
    PoolState,
    PutOutcome,
    get_page,
    page_pool_alloc_frag,
    page_pool_create_percpu,
    page_pool_ethtool_stats_get,
    page_pool_put_netmem_bulk,
    put_page,
)

CONTEXTS = [
    Context.softirq(0),
    Context.softirq(1),
    Context(cpu=0),
    Context.softirq(0, nid=1),
    Context(cpu=1, in_softirq=True, preempt_rt=True),
]
ALLOC_KEYS = ("fast", "refill", "slow", "slow_high_order")
RECYCLE_KEYS = ("cached", "ring", "ring_full", "released_refcnt")
MAX_HELD = 400
U32 = 0xFFFF_FFFF

# One table entry per way of allocating:
#   ("page", ctx, fail next N, bulk limit, force node, pfmemalloc next N, map failures)
#   ("frag", ctx, fail next N, size)
ALLOC_HOW: list[tuple[object, ...]] = (
    [("page", ctx, 0, None, None, 0, 0) for ctx in CONTEXTS] * 3
    + [
        ("page", ctx, fail, limit, nid, pfm, mapf)
        for ctx in CONTEXTS[:4]
        for fail, limit, nid, pfm, mapf in [
            (1, None, None, 0, 0), (0, 1, None, 0, 0), (0, 3, 1, 0, 0), (0, None, 1, 0, 0),
            (0, None, 0, 2, 0), (0, None, None, 0, 1), (0, 2, None, 0, 70),
        ]
    ]
    + [("frag", ctx, fail, size) for size in (1, 100, 1000, 2048, 3000, 4096)
       for ctx in CONTEXTS[:3] for fail in (0, 0, 1)]
)
# ("one", dma_sync_size, allow_direct, ctx) or ("bulk", entries, ctx)
PUT_HOW: list[tuple[object, ...]] = (
    [("one", size, direct, ctx) for size in (-1, 0, 64, 1500, 5000)
     for direct in (False, True) for ctx in CONTEXTS]
    + [("bulk", n, ctx) for n in (1, 2, 5, XDP_BULK_QUEUE_SIZE) for ctx in CONTEXTS]
)
#: 0: page_pool_ref_page; 2..4: page_pool_fragment_page(nr); 5: get_page; 6: put_page
REF_KINDS = [0, 0, 2, 3, 4, 5, 5, 6, 6]
#: (new node, via page_pool_nid_changed)
NID_HOW = [(nid, changed) for nid in (0, 1, NUMA_NO_NODE) for changed in (False, True)]
#: Action families and their parameter lists.
FAMILIES: dict[str, list[tuple[object, ...]]] = {
    "lifecycle": [()],
    "alloc": [h for h in ALLOC_HOW if h[0] == "page"],
    "alloc_frag": [h for h in ALLOC_HOW if h[0] == "frag"],
    "put": [h for h in PUT_HOW if h[0] == "one"],
    "put_bulk": [h for h in PUT_HOW if h[0] == "bulk"],
    "refs": [(k,) for k in REF_KINDS],
    "change_nid": [(h,) for h in NID_HOW],
    "misuse_put": [()],
    # bursts: take or return many references in one step (to fill the cache or ring)
    "alloc_burst": [(64,), (130,)],
    "put_burst": [(64, True), (64, False), (200, True)],
}
#: Per-example weights of the families (emulating swarm testing).
MIXES: list[dict[str, int]] = [
    {"lifecycle": 2, "alloc": 8, "alloc_frag": 3, "put": 8, "put_bulk": 2, "refs": 3,
     "change_nid": 1, "misuse_put": 1, "alloc_burst": 1, "put_burst": 1},
    {"lifecycle": 1, "alloc": 6, "put": 4, "put_bulk": 1, "refs": 1, "alloc_burst": 2,
     "put_burst": 2},  # big swings: cache full
    {"lifecycle": 1, "alloc": 4, "put": 8, "put_bulk": 4, "change_nid": 1},  # ring full
    {"lifecycle": 2, "alloc_frag": 8, "put": 6, "refs": 2, "misuse_put": 1},  # fragments
    {"lifecycle": 4, "alloc": 6, "put": 6, "refs": 6, "change_nid": 3, "misuse_put": 2},
]
TABLE_SIZE = 256


def action_table(mix: dict[str, int]) -> list[tuple[str, tuple[object, ...]]]:
    """``TABLE_SIZE`` actions, each family taking a share of slots by its weight and
    cycling through its parameter list; slot 0 is the always-applicable lifecycle."""
    total = sum(mix.values())
    table: list[tuple[str, tuple[object, ...]]] = []
    for name, weight in mix.items():
        entries = FAMILIES[name]
        n = max(1, TABLE_SIZE * weight // total)
        table.extend((name, entries[k * 7 % len(entries)]) for k in range(n))
    table = [(n, a) for n, a in table if n == "lifecycle"] + [
        (n, a) for n, a in table if n != "lifecycle"]
    return (table * 2)[:TABLE_SIZE]


def _alloc_sum(pool: PagePool) -> int:
    s = pool.alloc_stats
    return s.fast + s.refill + s.slow + s.slow_high_order


class PagePoolMachine(RuleBasedStateMachine):
    pool: PagePool

    @initialize(
        pool_size=st.sampled_from([1, 2, 8, 31, 32, 64, 200]),
        flags=st.sampled_from([PP_FLAG_DMA_MAP | PP_FLAG_DMA_SYNC_DEV, PP_FLAG_DMA_MAP, 0]),
        cpuid=st.sampled_from([-1, 0, 1]),
        napi_owner=st.sampled_from([None, -1, 0, 1]),
        nid=st.sampled_from([0, NUMA_NO_NODE]),
        order=st.sampled_from([0, 0, 0, 1]),
        xdp_mem=st.booleans(),
        destroy_after=st.sampled_from([300, 10, 40, 150, 450]),
        mix=st.sampled_from(range(len(MIXES))),
    )
    def setup(self, pool_size: int, flags: int, cpuid: int, napi_owner: int | None,
              nid: int, order: int, xdp_mem: bool, destroy_after: int, mix: int) -> None:
        self.table = action_table(MIXES[mix])
        self.allocator = PageAllocator()
        self.dev = DmaDevice()
        self.params = PagePoolParams(
            flags=flags, pool_size=pool_size, nid=nid, order=order, max_len=1500,
            offset=64, dma_dir=DMA_BIDIRECTIONAL, dev=self.dev,
            napi=None if napi_owner is None else NapiStruct(napi_owner),
        )
        self.cpuid, self.xdp_mem = cpuid, xdp_mem
        self.held: list[Page] = []  # one entry per pp reference the "driver" holds
        self.external: list[Page] = []  # one entry per extra mm reference
        self.destroy_after = destroy_after  # destroy only after this many steps
        self.steps = 0
        self._open()

    def _open(self) -> None:
        """Create the pool (again, after a completed teardown: the interface reopens)."""
        res = page_pool_create_percpu(self.params, self.cpuid, allocator=self.allocator)
        assert res.pool is not None
        self.pool = res.pool
        if self.xdp_mem:
            self.pool.use_xdp_mem()
        self.parked = 0  # pages put into the cache after destroy (never emptied again)
        # independent tallies for the counter algebra
        self.expected_recycle_events = 0
        self.expected_allocs = 0
        self.uncounted_bulk_releases = 0
        self.destroy_after += self.steps

    # ------------------------------------------------------------------ helpers

    def _alive(self) -> bool:
        return self.pool.state is PoolState.ALIVE

    def _snapshot(self) -> tuple[object, ...]:
        pool = self.pool
        return (
            [p.pfn for p in pool.alloc_cache], [p.pfn for p in pool.ring],
            pool.pages_state_hold_cnt, pool.pages_state_release_cnt,
            tuple(page_pool_ethtool_stats_get(pool.stats())), pool.state, pool.nid,
            tuple((p.pfn, p.loc, p.pp_ref_count, p.refs_out, p.refcount)
                  for p in pool._live.values()),
        )

    def _refused(self, call: Callable[[], object]) -> None:
        """The call raises StateViolation and leaves everything as it was."""
        snap = self._snapshot()
        with pytest.raises(StateViolation):
            call()
        assert self._snapshot() == snap

    def _is_last_ref(self, page: Page) -> bool:
        return self.held.count(page) == 1 and page is not self.pool.frag_page

    # ------------------------------------------------------------------ the one rule

    @rule(a=st.integers(0, (TABLE_SIZE << 7) - 1))
    def step(self, a: int) -> None:
        """Run action ``table[a % 256]`` on held reference ``a >> 8`` (modulo)."""
        name, args = self.table[a % TABLE_SIZE]
        i = a // TABLE_SIZE
        if name in ("put", "put_bulk", "refs") and not (self.held or self.external):
            name, args = "alloc", FAMILIES["alloc"][0]  # nothing to return yet
        if name == "misuse_put" and not self.pool._n_pages:
            name = "lifecycle"
        note(f"step {self.steps}: {name}{args} i={i}")
        if name == "lifecycle":
            self.lifecycle()
        elif name in ("alloc", "alloc_frag"):
            self.alloc(args)
        elif name in ("put", "put_bulk"):
            if self.held:
                self.put(i, args)
        elif name == "refs":
            self.refs(i, args[0])  # type: ignore[arg-type]
        elif name == "change_nid":
            self.change_nid(args[0])  # type: ignore[arg-type]
        elif name == "alloc_burst":
            for _ in range(args[0]):  # type: ignore[call-overload]
                self.alloc(FAMILIES["alloc"][0])
        elif name == "put_burst":
            n, direct = args
            for _ in range(min(n, len(self.held))):  # type: ignore[call-overload]
                self._put_one(len(self.held) - 1, -1, direct, CONTEXTS[0])  # type: ignore[arg-type]
        else:
            self.misuse_put(i)

    # ------------------------------------------------------------------ allocation

    def alloc(self, how: tuple[object, ...]) -> None:
        """Allocate a page or a fragment; on a destroyed pool the call is refused."""
        if len(self.held) >= MAX_HELD:
            return
        if how[0] == "page":
            self._alloc_page(*how[1:])  # type: ignore[arg-type]
        else:
            self._alloc_frag(*how[1:])  # type: ignore[arg-type]

    def _alloc_page(self, ctx: Context, fail: int, bulk_limit: int | None,
                    force_nid: int | None, pfmemalloc: int, map_fail: int) -> None:
        pool = self.pool
        if not self._alive():
            self._refused(lambda: pool.alloc_pages(ctx))
            return
        al = self.allocator
        al.fail_next, al.bulk_limit, al.force_nid = fail, bulk_limit, force_nid
        al.pfmemalloc_next = pfmemalloc
        self.dev.fail_map_next = map_fail
        before = [getattr(pool.alloc_stats, k) for k in ALLOC_KEYS]
        page = pool.alloc_pages(ctx)
        diff = [getattr(pool.alloc_stats, k) - b for k, b in zip(ALLOC_KEYS, before, strict=True)]
        al.fail_next, al.pfmemalloc_next, self.dev.fail_map_next = 0, 0, 0
        if page is None:
            assert diff == [0, 0, 0, 0]
            return
        assert sorted(diff) == [0, 0, 0, 1]  # exactly one of the four
        self.expected_allocs += 1
        assert page.loc is Loc.IN_FLIGHT and page.pp_ref_count == 1 and page.refs_out == 1
        self.held.append(page)

    def _alloc_frag(self, ctx: Context, fail: int, size: int) -> None:
        pool = self.pool
        if not self._alive():
            self._refused(lambda: page_pool_alloc_frag(pool, size, ctx))
            return
        self.allocator.fail_next = fail
        prev = pool.frag_page
        before_sum, before_cached = _alloc_sum(pool), pool.recycle_stats.cached
        got = page_pool_alloc_frag(pool, size, ctx)
        self.allocator.fail_next = 0
        if got is None:
            assert _alloc_sum(pool) == before_sum and pool.frag_page is None
            return
        page, offset = got
        # an allocation counter moves exactly when a fragment starts a page
        assert _alloc_sum(pool) - before_sum == (1 if offset == 0 else 0)
        reused = page is prev and offset == 0
        assert pool.recycle_stats.cached - before_cached == (1 if reused else 0)
        if offset == 0:
            self.expected_allocs += 1
            if reused:
                self.expected_recycle_events += 1
        assert pool.frag_page is page
        assert offset + size <= pool.arch.page_size << pool.order
        self.held.append(page)

    # ------------------------------------------------------------------ returning pages

    def put(self, i: int, how: tuple[object, ...]) -> None:
        """Return one reference (page_pool_put_page) or a run of them in bulk."""
        if how[0] == "one":
            self._put_one(i % len(self.held), *how[1:])  # type: ignore[arg-type]
        else:
            self._put_bulk(i % len(self.held), *how[1:])  # type: ignore[arg-type]

    def _put_one(self, idx: int, size: int, allow_direct: bool, ctx: Context) -> None:
        pool = self.pool
        page = self.held[idx]
        last = self._is_last_ref(page)
        recyclable = page.refcount == 1 and not page.pfmemalloc
        before = pool.stats().recycle_stats
        n_sync = len(self.dev.syncs_for_device)
        out = pool.put_page(page, size, allow_direct, ctx)
        self.held.pop(idx)
        after = pool.stats().recycle_stats
        diffs = {k: getattr(after, k) - getattr(before, k) for k in RECYCLE_KEYS}
        full = after.cache_full - before.cache_full
        if not last:
            assert out is PutOutcome.REF_DROPPED
            assert sum(diffs.values()) == 0 and full == 0
            assert page.loc is Loc.IN_FLIGHT
            return
        self.expected_recycle_events += 1
        assert sum(diffs.values()) == 1, diffs  # exactly one outcome
        assert full in (0, 1)
        if full:
            assert diffs["ring"] + diffs["ring_full"] == 1
        if not recyclable:
            assert diffs["released_refcnt"] == 1 and page.loc is Loc.RELEASED
        if diffs["cached"] and not self._alive():
            self.parked += 1
        # a sync for device happens exactly for a recyclable page of a syncing pool
        syncs = len(self.dev.syncs_for_device) - n_sync
        assert syncs == (1 if recyclable and pool.dma_sync else 0)
        if syncs:
            want = pool.max_len if (size & U32) > pool.max_len else size
            assert self.dev.syncs_for_device[-1].size == want

    def _put_bulk(self, start: int, n: int, ctx: Context) -> None:
        pool = self.pool
        idxs = list(range(start, min(start + n, len(self.held))))[::-1]
        batch = [self.held[j] for j in idxs]
        # the references left after the batch decide which entries are last
        remaining = list(self.held)
        for j in idxs:
            remaining.pop(j)
        lasts = {id(p): p for p in batch if p not in remaining and p is not pool.frag_page}
        non_recyclable = sum(1 for p in lasts.values() if p.refcount != 1 or p.pfmemalloc)
        before = pool.stats().recycle_stats
        page_pool_put_netmem_bulk(batch, ctx)
        self.held = remaining
        after = pool.stats().recycle_stats
        diffs = {k: getattr(after, k) - getattr(before, k) for k in RECYCLE_KEYS}
        locs = [p.loc for p in lasts.values()]
        assert diffs["cached"] == locs.count(Loc.ALLOC_CACHE)
        assert diffs["ring"] == locs.count(Loc.PTR_RING)
        assert diffs["released_refcnt"] == non_recyclable
        overflow = locs.count(Loc.RELEASED) - non_recyclable
        assert diffs["ring_full"] == (1 if overflow else 0)  # once per bulk
        self.uncounted_bulk_releases += overflow
        self.expected_recycle_events += len(lasts) - overflow + (1 if overflow else 0)
        if not self._alive():
            self.parked += diffs["cached"]

    # ------------------------------------------------------------------ references

    def refs(self, i: int, kind: int) -> None:
        """pp references (page_pool_ref_page / page_pool_fragment_page) and mm references
        someone else takes and drops (get_page / put_page, e.g. a cloned skb)."""
        if kind == 6 or not self.held:
            if self.external:
                put_page(self.external.pop(i % len(self.external)))
            return
        page = self.held[i % len(self.held)]
        if kind == 5:
            get_page(page)
            self.external.append(page)
        elif len(self.held) >= MAX_HELD:
            return
        elif kind == 0:
            self.pool.ref_page(page)
            self.held.append(page)
        elif (self.held.count(page) == 1 and page.pp_ref_count == 1
              and page is not self.pool.frag_page):
            self.pool.fragment_page(page, kind)
            self.held.extend([page] * (kind - 1))
        else:
            self._refused(lambda: self.pool.fragment_page(page, kind))

    # ------------------------------------------------------------------ NUMA

    def change_nid(self, how: tuple[int, bool]) -> None:
        nid, use_changed = how
        pool = self.pool
        if pool.state is PoolState.FREED:
            self._refused(lambda: pool.update_nid(nid))
            return
        n_cache, rel, old_nid = len(pool.alloc_cache), pool.pages_state_release_cnt, pool.nid
        if use_changed:
            pool.nid_changed(nid)
        else:
            pool.update_nid(nid)
        assert pool.nid == nid
        if not use_changed or nid != old_nid:
            assert not pool.alloc_cache
            assert pool.pages_state_release_cnt == (rel + n_cache) & U32
            self.parked = 0  # the flush released any page parked after destroy
        else:
            assert len(pool.alloc_cache) == n_cache

    # ------------------------------------------------------------------ life cycle

    def lifecycle(self) -> None:
        """Destroy the pool once its time has come, retry a deferred release, open a
        new pool once the old one is gone; otherwise audit every page ever accounted."""
        pool = self.pool
        if pool.state is PoolState.FREED:
            assert not self.held
            assert self.allocator.live == len({id(p) for p in self.external})
            self._open()
        elif pool.state is PoolState.DETACHED:
            inflight = pool.release_retry()
            assert len(pool.ring) == 0 and inflight == pool.inflight(strict=True)
        elif self.steps >= self.destroy_after:
            users = pool.user_cnt
            pool.destroy()
            if users > 1:
                assert pool.state is PoolState.ALIVE and pool.user_cnt == users - 1
                return
            assert pool.cpuid == -1 and pool.napi is None and pool.frag_page is None
            assert not pool.alloc_cache and len(pool.ring) == 0
            expect = PoolState.FREED if pool.inflight() == 0 else PoolState.DETACHED
            assert pool.state is expect
        else:
            pool.check_conservation(full=True)

    # ------------------------------------------------------------------ misuse

    def misuse_put(self, i: int) -> None:
        """Returning a reference the driver does not hold (or from hardirq context) is
        refused and changes nothing."""
        pool = self.pool
        allow_direct = bool(i & 1)
        page = pool._pages[-1 - (i >> 1) % len(pool._pages)]
        ctx = (Context(in_softirq=True, in_hardirq=True) if page in self.held
               else Context.softirq(0))
        self._refused(lambda: pool.put_page(page, -1, allow_direct, ctx))

    # ------------------------------------------------------------------ invariants

    @invariant()
    def conservation(self) -> None:
        self.steps += 1
        pool = self.pool
        pool.check_conservation()
        assert len(pool.alloc_cache) <= PP_ALLOC_CACHE_SIZE
        assert pool.inflight(strict=True) == (
            pool.pages_state_hold_cnt - pool.pages_state_release_cnt)
        # every reference the driver holds is to a page in flight
        for page in self.held:
            assert page.loc is Loc.IN_FLIGHT and page.pp is pool
        # the page allocator agrees: pool pages + released pages someone still holds
        still_held = {id(p) for p in self.external if p.loc is Loc.RELEASED}
        assert self.allocator.live == len(pool._live) + len(still_held)

    @invariant()
    def counter_algebra(self) -> None:
        pool = self.pool
        r = pool.recycle_stats
        assert r.cached + r.ring + r.ring_full + r.released_refcnt == (
            self.expected_recycle_events)
        assert r.cache_full <= r.ring + r.ring_full + self.uncounted_bulk_releases
        assert _alloc_sum(pool) == self.expected_allocs

    def teardown(self) -> None:
        pool = getattr(self, "pool", None)
        if pool is None:
            return
        for page in self.external:
            put_page(page)
        for page in list(self.held):
            pool.put_page(page, -1, False, Context(cpu=7))
        while pool.state is PoolState.ALIVE:
            pool.destroy()
        if pool.state is PoolState.DETACHED:
            pool.release_retry()
        # only pages parked in the cache after destroy can keep the pool alive
        assert pool.inflight() == self.parked == len(pool.alloc_cache)
        assert (pool.state is PoolState.FREED) == (self.parked == 0)
        pool.check_conservation(full=True)
        assert self.allocator.live == self.parked


PagePoolMachine.TestCase.pytestmark = [  # type: ignore[attr-defined]
    pytest.mark.rule(
        "PP-LEDGER-001", "PP-ALLOC-007", "PP-RECYCLE-012", "PP-RECYCLE-009",
        "PP-DESTROY-005", "PP-DESTROY-006", "PP-FRAG-005",
    )
]
TestPagePoolMachine = PagePoolMachine.TestCase

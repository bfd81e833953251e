"""The io_uring memory provider: allocation, the refill ring, release, scrub
(rules ZCRX-MP-003, ZCRX-MP-004, ZCRX-REFILL-*, ZCRX-SCRUB-*).

Kernel: ``io_uring/zcrx.c`` — ``io_pp_zc_alloc_netmems``, ``io_zcrx_ring_refill``,
``io_parse_rqe``, ``io_zcrx_put_niov_uref``, ``io_zcrx_refill_slow``,
``io_pp_zc_release_netmem``, ``io_zcrx_return_niov``, ``io_zcrx_scrub``,
``io_close_queue`` — as read in openSUSE/kernel@0719e10d826a (mainline of the v7.1 cycle,
with large rx buffers from v7.0).
"""

from __future__ import annotations

import enum

import attrs

from reference.page_pool.constants import PP_ALLOC_CACHE_REFILL
from reference.trace import Trace, emit

from .area import Area, Niov, RefillRing
from .pool import ZcPagePool
from .uapi import decode_off


class RefillOutcome(enum.Enum):
    """What the kernel did with one refill entry it consumed."""

    #: ``__pad`` was not zero (ZCRX-REFILL-002)
    SKIPPED_PAD = "skipped:pad"
    #: the area index names no area (ZCRX-REFILL-002)
    SKIPPED_AREA = "skipped:area"
    #: the niov index is beyond the area (ZCRX-REFILL-002)
    SKIPPED_INDEX = "skipped:index"
    #: the niov has no user reference to give back (ZCRX-REFILL-003)
    SKIPPED_UREF = "skipped:uref0"
    #: a user reference was returned but the niov is still held (ZCRX-REFILL-004)
    HELD = "held"
    #: the niov belongs to another pool, or none (copy fallback), and went back there
    #: (ZCRX-REFILL-005)
    RETURNED = "returned"
    #: the niov went into this pool's alloc cache (ZCRX-REFILL-006)
    CACHED = "cached"


#: The rule that decides each outcome.
OUTCOME_RULE: dict[RefillOutcome, str] = {
    RefillOutcome.SKIPPED_PAD: "ZCRX-REFILL-002",
    RefillOutcome.SKIPPED_AREA: "ZCRX-REFILL-002",
    RefillOutcome.SKIPPED_INDEX: "ZCRX-REFILL-002",
    RefillOutcome.SKIPPED_UREF: "ZCRX-REFILL-003",
    RefillOutcome.HELD: "ZCRX-REFILL-004",
    RefillOutcome.RETURNED: "ZCRX-REFILL-005",
    RefillOutcome.CACHED: "ZCRX-REFILL-006",
}

#: Outcomes that consumed a user reference (an honoured entry).
HONOURED = frozenset({RefillOutcome.HELD, RefillOutcome.RETURNED, RefillOutcome.CACHED})


@attrs.frozen
class RefillRecord:
    """One consumed refill entry: its free-running index, the niov it named (``None`` when
    it named none) and what happened."""

    seq: int
    niov: int | None
    outcome: RefillOutcome


class ZcrxIfq:
    """``struct io_zcrx_ifq`` with one area, one refill ring and the provider hooks."""

    def __init__(self, area: Area, rq: RefillRing, *, trace: Trace | None = None) -> None:
        self.area = area
        self.niov_shift = area.niov_shift
        self.rq = rq
        self.trace = trace
        self.refills: list[RefillRecord] = []
        self.closed = False
        # counters
        self.mp_from_ring = 0
        self.mp_from_freelist = 0

    @property
    def nr_areas(self) -> int:
        return 1

    # -- memory_provider_ops.alloc_netmems -------------------------------------------------
    def alloc_netmems(self, pool: ZcPagePool) -> Niov | None:
        """``io_pp_zc_alloc_netmems`` (ZCRX-MP-003).

        Called only with an empty alloc cache.  Up to ``PP_ALLOC_CACHE_REFILL`` (64) niovs
        come from the refill ring; if the ring gives none, up to 64 from the freelist.  The
        last niov of the batch is returned, the others stay in the cache in batch order.
        """
        batch = self.ring_refill(pool, PP_ALLOC_CACHE_REFILL)
        source = "refill ring"
        if not batch:
            batch = self.refill_slow(pool, PP_ALLOC_CACHE_REFILL)
            source = "freelist"
        if not batch:
            return None
        emit(self.trace, "ZCRX-MP-003", f"provider batch of {len(batch)} from the {source}",
             pool=pool.pool_id, first=batch[0].index)
        last = batch.pop()
        pool.cache.extend(batch)
        return last

    def ring_refill(self, pool: ZcPagePool, to_alloc: int) -> list[Niov]:
        """``io_zcrx_ring_refill`` (ZCRX-REFILL-001..006).

        Reads ``min(tail - cached_head, rq_entries, to_alloc)`` entries; each one read is
        consumed whatever it holds, and ``head`` is published once at the end.
        """
        rq = self.rq
        entries = min(rq.entries(), to_alloc)
        if not entries:
            return []
        emit(self.trace, "ZCRX-REFILL-001", f"reading {entries} refill entries",
             cached_head=rq.cached_head, tail=rq.tail)
        emit(self.trace, "ZCRX-REFILL-007", "first slot", slot=rq.cached_head & rq.mask)
        got: list[Niov] = []
        for _ in range(entries):
            seq = rq.cached_head
            _, rqe = rq.next_rqe()
            niov, outcome = self._refill_one(pool, rqe.off, rqe.pad)
            if outcome is RefillOutcome.CACHED and niov is not None:
                got.append(niov)
            self.refills.append(RefillRecord(seq, None if niov is None else niov.index,
                                             outcome))
            emit(self.trace, OUTCOME_RULE[outcome], f"refill entry {seq}: {outcome.value}",
                 off=rqe.off)
        rq.publish()
        self.mp_from_ring += len(got)
        return got

    def _refill_one(self, pool: ZcPagePool, off: int,
                    pad: int) -> tuple[Niov | None, RefillOutcome]:
        # ZCRX-REFILL-002: io_parse_rqe.  rqe->len is never read.
        area_idx, niov_idx, _ = decode_off(off, self.niov_shift)
        if pad:
            return None, RefillOutcome.SKIPPED_PAD
        if area_idx >= self.nr_areas:
            return None, RefillOutcome.SKIPPED_AREA
        area = self.area
        if niov_idx >= area.num_niovs:
            return None, RefillOutcome.SKIPPED_INDEX
        niov = area.niovs[niov_idx]
        # ZCRX-REFILL-003: the user must hold a reference to give one back.
        if area.user_refs[niov_idx] == 0:
            return niov, RefillOutcome.SKIPPED_UREF
        area.user_refs[niov_idx] -= 1
        # ZCRX-REFILL-004: drop the pool reference the CQE took; others may remain.
        if niov.pp is not None:
            remaining = niov.pp.unref(niov)
        else:  # a copy-fallback niov: its single reference is the user's
            niov.pp_ref_count -= 1
            remaining = niov.pp_ref_count
        if remaining:
            return niov, RefillOutcome.HELD
        # ZCRX-REFILL-005: another pool's (or no pool's) niov goes back where it belongs.
        if niov.pp is not pool:
            self.return_niov(niov)
            return niov, RefillOutcome.RETURNED
        # ZCRX-REFILL-006: this pool's niov joins the batch for its alloc cache.
        return niov, RefillOutcome.CACHED

    def refill_slow(self, pool: ZcPagePool, to_alloc: int) -> list[Niov]:
        """``io_zcrx_refill_slow``: take free niovs, give each to the pool (hold + 1)."""
        got: list[Niov] = []
        while len(got) < to_alloc:
            niov = self.area.get_free_niov()
            if niov is None:
                break
            pool.set_pp_info(niov)
            got.append(niov)
        self.mp_from_freelist += len(got)
        return got

    # -- memory_provider_ops.release_netmem ------------------------------------------------
    def release_netmem(self, pool: ZcPagePool, niov: Niov) -> bool:
        """``io_pp_zc_release_netmem`` (ZCRX-MP-004): clear the pool, back on the freelist;
        ``False`` tells the pool not to put the page."""
        niov.pp = None
        niov.pp_ref_count = 0
        self.area.return_to_freelist(niov)
        emit(self.trace, "ZCRX-MP-004", "niov released to the freelist", niov=niov.index,
             pool=pool.pool_id)
        return False

    def return_niov(self, niov: Niov) -> None:
        """``io_zcrx_return_niov`` (ZCRX-REFILL-005): a copy-fallback niov (no pool) goes to
        the freelist; a pool's niov is recycled through that pool, not directly."""
        if niov.pp is None:
            niov.pp_ref_count = 0
            self.area.return_to_freelist(niov)
            return
        niov.pp.put_unrefed(niov, allow_direct=False)

    # -- teardown --------------------------------------------------------------------------
    def scrub(self) -> int:
        """``io_zcrx_scrub`` (ZCRX-SCRUB-001): take back every reference the user holds.

        For each niov with user references, the counter is swapped to 0 and as many pool
        references are dropped; a niov nobody holds any more is returned.  Returns the
        number of user references taken back.
        """
        area = self.area
        taken = 0
        for niov in area.niovs:
            nr = area.user_refs[niov.index]
            if not nr:
                continue
            area.user_refs[niov.index] = 0
            taken += nr
            if niov.pp is not None:
                remaining = niov.pp.unref(niov, nr)
            else:
                niov.pp_ref_count -= nr
                remaining = niov.pp_ref_count
            if not remaining:
                self.return_niov(niov)
        emit(self.trace, "ZCRX-SCRUB-001", f"scrub took back {taken} user references")
        return taken

"""The area (niovs, freelist, user references) and the refill ring (ZCRX-AREA-005,
ZCRX-REFILL-001, ZCRX-REFILL-007).

Kernel: ``io_uring/zcrx.c`` (``__zcrx_create_area``/``io_zcrx_create_area``,
``zcrx_get_free_niov``, ``io_zcrx_return_niov_freelist``, ``zcrx_rq_entries``,
``zcrx_next_rqe``) and ``io_uring/zcrx.h`` (``struct io_zcrx_area``, ``struct zcrx_rq``).

A niov here is the model's ``struct net_iov``: its index in the area, the page pool that
owns it (``pp``, ``None`` when none does) and ``pp_ref_count``.  The model keeps the
*logical* count: 0 while the niov sits in a pool's cache or ring or on the freelist, 1 when
handed out, one more for every extra holder.  (The kernel stores 1 for a recycled netmem
and treats "drops to zero" as "was 1"; the logical count is what that encodes.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reference.errors import StateViolation

from .uapi import U32, IoUringZcrxRqe

if TYPE_CHECKING:
    from .pool import ZcPagePool


class Niov:
    """``struct net_iov`` of an io_uring area."""

    __slots__ = ("index", "pp", "pp_ref_count")

    def __init__(self, index: int) -> None:
        self.index = index
        self.pp: ZcPagePool | None = None
        self.pp_ref_count = 0

    def __repr__(self) -> str:
        owner = "-" if self.pp is None else f"pool{self.pp.pool_id}"
        return f"Niov({self.index}, {owner}, refs={self.pp_ref_count})"


class Area:
    """``struct io_zcrx_area``: niovs of ``1 << niov_shift`` bytes, a freelist, user refs.

    ZCRX-AREA-005: ``len >> niov_shift`` niovs; the freelist starts as 0, 1, ..., n-1 and
    is used as a stack (the next niov handed out is the one at ``free_count - 1``, so the
    first is the highest index); every user reference counter starts at 0.
    """

    def __init__(self, area_id: int, length: int, niov_shift: int, *,
                 kern_readable: bool = True) -> None:
        self.area_id = area_id
        self.niov_shift = niov_shift
        self.kern_readable = kern_readable
        n = length >> niov_shift
        self.niovs = [Niov(i) for i in range(n)]
        self.freelist: list[int] = list(range(n))
        self.user_refs = [0] * n

    @property
    def num_niovs(self) -> int:
        return len(self.niovs)

    @property
    def free_count(self) -> int:
        return len(self.freelist)

    @property
    def niov_size(self) -> int:
        return 1 << self.niov_shift

    def get_free_niov(self) -> Niov | None:
        """``zcrx_get_free_niov``: pop the freelist, or nothing when it is empty."""
        if not self.freelist:
            return None
        return self.niovs[self.freelist.pop()]

    def return_to_freelist(self, niov: Niov) -> None:
        """``io_zcrx_return_niov_freelist``: push the niov back.

        The kernel WARNs (and drops the niov) if the freelist is already full; a niov
        already on the freelist would be the model's equivalent, so both are refused.
        """
        if self.free_count >= self.num_niovs or niov.index in self.freelist:
            raise StateViolation("niov returned to a freelist that already holds it",
                                 obj=f"niov {niov.index}", rule="ZCRX-MP-004")
        self.freelist.append(niov.index)


class RefillRing:
    """``struct zcrx_rq`` and the shared ``head``/``tail`` words (ZCRX-REFILL-001).

    The user writes entries at ``tail`` and advances it; the kernel reads from its private
    ``cached_head`` and publishes ``head = cached_head`` after each batch.  Both counters
    are free-running u32s; an entry's slot is ``counter & (nr_entries - 1)``
    (ZCRX-REFILL-007).
    """

    def __init__(self, nr_entries: int) -> None:
        if nr_entries <= 0 or nr_entries & (nr_entries - 1):
            raise StateViolation("the refill ring size is a power of two",
                                 obj=f"rq_entries {nr_entries}", rule="ZCRX-REG-006")
        self.nr_entries = nr_entries
        self.rqes = [IoUringZcrxRqe() for _ in range(nr_entries)]
        self.head = 0
        self.tail = 0
        self.cached_head = 0

    @property
    def mask(self) -> int:
        return self.nr_entries - 1

    # -- user side ---------------------------------------------------------------------
    def user_space(self) -> int:
        """Free slots from the user's view: what it may write before catching up head."""
        return self.nr_entries - ((self.tail - self.head) & U32)

    def user_push(self, rqe: IoUringZcrxRqe) -> bool:
        """Write one entry at ``tail`` and advance it; refuse when the ring is full."""
        if self.user_space() <= 0:
            return False
        self.rqes[self.tail & self.mask] = rqe
        self.tail = (self.tail + 1) & U32
        return True

    # -- kernel side -------------------------------------------------------------------
    def entries(self) -> int:
        """``zcrx_rq_entries``: unread entries, never more than the ring holds, whatever
        tail says (ZCRX-REFILL-001)."""
        return min((self.tail - self.cached_head) & U32, self.nr_entries)

    def next_rqe(self) -> tuple[int, IoUringZcrxRqe]:
        """``zcrx_next_rqe``: the entry at ``cached_head``, which advances (ZCRX-REFILL-007)."""
        slot = self.cached_head & self.mask
        self.cached_head = (self.cached_head + 1) & U32
        return slot, self.rqes[slot]

    def publish(self) -> None:
        """Store ``cached_head`` to the shared ``head`` (release store)."""
        self.head = self.cached_head

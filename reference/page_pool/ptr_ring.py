"""``struct ptr_ring`` as page_pool uses it (include/linux/ptr_ring.h, v6.17-rc3).

The ring is an array of ``size`` slots.  A producer may write only into an empty
(NULL) slot (PP-RING-001).  The consumer does not clear each slot as it reads it: it
clears the slots it has read in batches of ``batch`` (and when it wraps), so a producer
can find the ring full while fewer than ``size`` entries are still unread (PP-RING-002).
The model keeps that geometry slot for slot because it decides ``ring_full``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

T = TypeVar("T")

#: ``sizeof(void *)`` on a 64-bit kernel.
_PTR_SIZE = 8


def ptr_ring_batch(size: int, smp_cache_bytes: int) -> int:
    """``__ptr_ring_set_size``: two cache lines of pointers, or 1 for small rings."""
    batch = smp_cache_bytes * 2 // _PTR_SIZE
    if batch > size // 2 or not batch:
        batch = 1
    return batch


class PtrRing(Generic[T]):
    """The slot array with ``producer``, ``consumer_head`` and ``consumer_tail``."""

    __slots__ = ("batch", "consumer_head", "consumer_tail", "count", "producer", "queue",
                 "size")

    def __init__(self, size: int, *, smp_cache_bytes: int = 64) -> None:
        self.size = size
        self.batch = ptr_ring_batch(size, smp_cache_bytes)
        self.queue: list[T | None] = [None] * size
        self.producer = 0
        self.consumer_head = 0
        self.consumer_tail = 0
        #: Entries produced and not yet consumed (model bookkeeping, not a kernel field).
        self.count = 0

    def __len__(self) -> int:
        return self.count

    def full(self) -> bool:
        """``__ptr_ring_full``: the producer's next slot is still occupied."""
        return self.size == 0 or self.queue[self.producer] is not None

    def empty(self) -> bool:
        """``__ptr_ring_empty``: the consumer's next slot holds nothing."""
        return self.size == 0 or self.queue[self.consumer_head] is None

    def produce(self, item: T) -> bool:
        """``__ptr_ring_produce``: True on success, False where the kernel says -ENOSPC."""
        p = self.producer
        if self.size == 0 or self.queue[p] is not None:
            return False
        self.queue[p] = item
        p += 1
        self.producer = 0 if p >= self.size else p
        self.count += 1
        return True

    def consume(self) -> T | None:
        """``__ptr_ring_consume``: the oldest entry, or None when empty."""
        if self.size == 0:
            return None
        head = self.consumer_head
        item = self.queue[head]
        if item is None:
            return None
        # __ptr_ring_discard_one: clear consumed slots only a batch at a time.
        nxt = head + 1
        if nxt - self.consumer_tail >= self.batch or nxt >= self.size:
            q = self.queue
            for i in range(self.consumer_tail, head + 1):
                q[i] = None
            self.consumer_tail = nxt
        if nxt >= self.size:
            nxt = 0
            self.consumer_tail = 0
        self.consumer_head = nxt
        self.count -= 1
        return item

    def __iter__(self) -> Iterator[T]:
        """The unread entries, oldest first (for checks; not a kernel operation)."""
        i = self.consumer_head
        for _ in range(self.count):
            item = self.queue[i]
            assert item is not None
            yield item
            i = i + 1 if i + 1 < self.size else 0

    def stale_slots(self) -> int:
        """Slots already read but not yet cleared, which the producer cannot reuse."""
        return sum(1 for x in self.queue if x is not None) - self.count

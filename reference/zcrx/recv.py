"""Receive: skbs of a TCP socket become CQEs (rules ZCRX-CQE-*, ZCRX-COPY-*).

Kernel: ``io_uring/zcrx.c`` — ``io_zcrx_recv``, ``io_zcrx_tcp_recvmsg``,
``io_zcrx_recv_skb``, ``io_zcrx_recv_frag``, ``io_zcrx_copy_chunk``,
``io_alloc_fallback_niov``, ``io_zcrx_queue_cqe`` (openSUSE/kernel@0719e10d826a) — and
``net/ipv4/tcp.c: __tcp_read_sock`` for the walk over the receive queue.

The model's skb has a linear part (``headlen`` bytes still in the head after TCP pulled
its headers) and page frags; a frag either points into a niov (zero copy) or into an
ordinary page (copied).  skbs chained on a frag_list are not modelled.
"""

from __future__ import annotations

import errno

import attrs

from reference.kernel import DEFAULT_KERNEL, KernelVersion, gate
from reference.trace import Trace, emit

from .area import Niov
from .pool import ZcPagePool
from .provider import ZcrxIfq
from .register import PAGE_SIZE
from .uapi import (
    IORING_CQE_F_32,
    IORING_CQE_F_MORE,
    U32,
    Cqe32,
    IoUringZcrxCqe,
    encode_off,
)

#: ``io_uring/zcrx.c``: skbs one call looks at before it asks to be requeued.
IO_SKBS_PER_CALL_LIMIT = 20
#: The trace event of an actor call refused by that limit (ZCRX-CQE-005).
LIMIT_REACHED = "actor call over the per-call limit: -EAGAIN"


@attrs.frozen
class Frag:
    """An skb page frag: ``off``/``size`` within its niov (or within an ordinary page when
    ``niov`` is ``None``)."""

    niov: Niov | None
    off: int
    size: int


@attrs.define
class Skb:
    """A received skb: ``headlen`` linear bytes (headers already pulled), then ``frags``."""

    headlen: int = 0
    frags: list[Frag] = attrs.field(factory=list)

    @property
    def len(self) -> int:
        return self.headlen + sum(f.size for f in self.frags)


@attrs.frozen
class Cqe:
    """One posted CQE, with what the model knows about it besides the bytes."""

    user_data: int
    res: int
    flags: int
    off: int
    niov: int
    copy: bool

    def to_cqe32(self) -> Cqe32:
        return Cqe32(self.user_data, self.res, self.flags, IoUringZcrxCqe(self.off, 0))


class CqRing:
    """The completion queue from the producer's side: room for ``capacity`` CQEs until
    the user reaps them (model convention for CQ pressure)."""

    def __init__(self, capacity: int, *, mixed: bool = False) -> None:
        self.capacity = capacity
        self.mixed = mixed
        self.pending = 0
        self.posted: list[Cqe] = []

    def reap(self) -> None:
        self.pending = 0


@attrs.frozen
class RecvResult:
    """What one ``io_zcrx_recv`` call did: ``rc`` (bytes, or a negative errno), whether a
    multishot request is requeued, the CQEs posted and the skbs looked at."""

    rc: int
    requeue: bool
    cqes: tuple[Cqe, ...]
    nr_skbs: int


class Receiver:
    """The zcrx receive path of one ifq, over a socket receive queue."""

    def __init__(self, ifq: ZcrxIfq, cq: CqRing, *, trace: Trace | None = None,
                 kernel: KernelVersion = DEFAULT_KERNEL) -> None:
        self.ifq = ifq
        self.cq = cq
        self.trace = trace
        self.kernel = kernel
        #: the socket receive queue: [skb, bytes already consumed]
        self.queue: list[list[object]] = []
        self._count = 0
        self._nr_skbs = 0
        #: ``io_zcrx_args.stopped_early`` (ZCRX-CQE-005): an actor call left bytes unread
        self._stopped_early = False
        self._user_data = 0

    # -- CQEs ------------------------------------------------------------------------------
    def queue_cqe(self, niov: Niov, off: int, length: int, *, copy: bool) -> bool:
        """``io_zcrx_queue_cqe`` (ZCRX-CQE-002, ZCRX-CQE-003)."""
        cq = self.cq
        if cq.pending >= cq.capacity:
            return False
        cq.pending += 1
        flags = IORING_CQE_F_MORE | (IORING_CQE_F_32 if cq.mixed else 0)
        area = self.ifq.area
        cqe = Cqe(self._user_data, length, flags,
                  encode_off(area.area_id, niov.index, self.ifq.niov_shift, off),
                  niov.index, copy)
        cq.posted.append(cqe)
        return True

    # -- copy fallback -----------------------------------------------------------------------
    def copy_chunk(self, length: int) -> int:
        """``io_zcrx_copy_chunk`` (ZCRX-COPY-001..003): at most ``PAGE_SIZE`` bytes per free
        niov, at its start; returns the bytes copied, or the error when none were."""
        area = self.ifq.area
        copied = 0
        ret = 0
        while length:
            # ZCRX-COPY-003: no readable area or no free niov is -ENOMEM
            niov = area.get_free_niov() if area.kern_readable else None
            if niov is None:
                ret = -errno.ENOMEM
                break
            niov.pp_ref_count = 1  # page_pool_fragment_netmem(niov, 1); no pool
            n = min(length, PAGE_SIZE)
            if not self.queue_cqe(niov, 0, n, copy=True):  # ZCRX-COPY-003: -ENOSPC
                self.ifq.return_niov(niov)
                ret = -errno.ENOSPC
                break
            area.user_refs[niov.index] += 1
            length -= n
            copied += n
        emit(self.trace, "ZCRX-COPY-001", f"copied {copied} bytes", rc=copied or ret)
        if ret:
            emit(self.trace, "ZCRX-COPY-003", "copy stopped", rc=ret)
        return copied if copied else ret

    # -- zero copy ---------------------------------------------------------------------------
    def recv_frag(self, frag: Frag, off: int, length: int) -> int:
        """``io_zcrx_recv_frag`` (ZCRX-CQE-001..004)."""
        if frag.niov is None:
            emit(self.trace, "ZCRX-COPY-002", "frag in an ordinary page: copied")
            return self.copy_chunk(length)
        niov = frag.niov
        pp = niov.pp
        if pp is None or not isinstance(pp, ZcPagePool) or pp.provider is not self.ifq:
            emit(self.trace, "ZCRX-CQE-001", "frag niov not from this ifq's provider")
            return -errno.EFAULT
        if not self.queue_cqe(niov, off + frag.off, length, copy=False):
            emit(self.trace, "ZCRX-CQE-003", "no CQE space")
            return -errno.ENOSPC
        # ZCRX-CQE-004: the pool reference first, then the user reference.
        pp.ref(niov)
        self.ifq.area.user_refs[niov.index] += 1
        emit(self.trace, "ZCRX-CQE-001", "frag is a niov of this instance", niov=niov.index)
        emit(self.trace, "ZCRX-CQE-004", "pool and user reference taken", niov=niov.index)
        emit(self.trace, "ZCRX-CQE-002", "zero-copy CQE", niov=niov.index, len=length)
        return length

    def recv_skb(self, skb: Skb, offset: int, length: int) -> int:
        """``io_zcrx_recv_skb``: one call of the read actor (ZCRX-CQE-005, ZCRX-COPY-004)."""
        length = min(length, self._count)
        if not length:
            return 0
        self._nr_skbs += 1
        if self._nr_skbs - 1 > IO_SKBS_PER_CALL_LIMIT:
            emit(self.trace, "ZCRX-CQE-005", LIMIT_REACHED, skbs=self._nr_skbs)
            return -errno.EAGAIN
        start_off = offset
        ret = 0
        done = False
        if offset < skb.headlen:
            emit(self.trace, "ZCRX-COPY-002", "linear data: copied",
                 bytes=skb.headlen - offset)
            copied = self.copy_chunk(min(skb.headlen - offset, length))
            if copied < 0:
                ret, done = copied, True
            else:
                offset += copied
                length -= copied
                done = not length or offset != skb.headlen
            if done:
                emit(self.trace, "ZCRX-COPY-004", "linear copy ended the skb's turn")
        start = skb.headlen
        if not done:
            for frag in skb.frags:
                end = start + frag.size
                if offset < end:
                    want = min(end - offset, length)
                    ret = self.recv_frag(frag, offset - start, want)
                    if ret < 0:
                        break
                    offset += ret
                    length -= ret
                    if not length or ret != want:
                        break
                start = end
        # ZCRX-CQE-005 (its gate): bytes left in this call's share mean an error or a short
        # piece stopped the walk; noted whether or not anything was consumed.
        if length:
            self._stopped_early = True
        if offset == start_off:
            return ret
        self._count -= offset - start_off
        return offset - start_off

    def recv(self, length: int = 0, *, user_data: int = 0,
             multishot: bool = True) -> RecvResult:
        """``io_zcrx_recv`` → ``io_zcrx_tcp_recvmsg`` → ``__tcp_read_sock`` (ZCRX-CQE-005).

        ``length`` 0 means no limit.  The walk stops when the limit is used up, an skb is
        not fully consumed, or the read actor fails.  A fully consumed skb is freed, which
        drops the pool reference each of its niov frags held.  A multishot call that
        delivered bytes is requeued after more than 20 actor calls and, from ZCRX-CQE-005's
        gate, also when an actor call stopped early (an error or a short piece).
        """
        self._count = length if length else U32
        self._nr_skbs = 0
        self._stopped_early = False
        self._user_data = user_data
        before = len(self.cq.posted)
        copied = 0
        while self.queue:
            entry = self.queue[0]
            skb, offset = entry[0], entry[1]
            assert isinstance(skb, Skb) and isinstance(offset, int)
            if offset < skb.len:
                used = self.recv_skb(skb, offset, skb.len - offset)
                if used <= 0:
                    if not copied:
                        copied = used
                    break
                copied += used
                entry[1] = offset + used
                if offset + used != skb.len:
                    continue
            self.queue.pop(0)
            self.free_skb(skb)
            if not self._count:
                break
        requeue = False
        if copied == 0:
            copied = -errno.EAGAIN  # an open socket with nothing (more) to read
        elif copied > 0 and multishot and (
                self._nr_skbs > IO_SKBS_PER_CALL_LIMIT
                or (self._stopped_early and gate(self.kernel, "ZCRX-CQE-005"))):
            requeue = True
        emit(self.trace, "ZCRX-CQE-005", "recv returns", rc=copied, requeue=requeue,
             skbs=self._nr_skbs, stopped_early=self._stopped_early)
        return RecvResult(copied, requeue, tuple(self.cq.posted[before:]), self._nr_skbs)

    def free_skb(self, skb: Skb) -> None:
        """The stack frees a consumed skb: each niov frag drops its pool reference, not
        directly (ZCRX-MP-005: a model convention; the kernel's ``skb_attempt_defer_free``
        may make it direct on the NAPI's CPU)."""
        for frag in skb.frags:
            niov = frag.niov
            if niov is not None and niov.pp is not None:
                niov.pp.put(niov, allow_direct=False)

    def drop_queue(self) -> None:
        """The socket closes: every queued skb is freed unread."""
        while self.queue:
            skb = self.queue.pop(0)[0]
            assert isinstance(skb, Skb)
            self.free_skb(skb)

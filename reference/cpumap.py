"""``BPF_MAP_TYPE_CPUMAP``: XDP frames redirected to a kthread on another CPU
(SPEC part ``cpumap.md``, rules CPUMAP-*).

Read in Kingxukai/linux v6.17-rc3 ``kernel/bpf/cpumap.c`` (stored version 0291023e7330):
``cpu_map_update_elem``, ``__cpu_map_entry_alloc``, ``__cpu_map_load_bpf_program``,
``cpu_map_enqueue``, ``bq_enqueue``, ``bq_flush_to_queue``, ``__cpu_map_flush``,
``cpu_map_kthread_run``, ``cpu_map_bpf_prog_run_xdp``; ``cpu_map_kthread_run`` read again
in Debian's 7.3.4 and 6.12.118 trees (``linux-source-7.3``, ``linux-source-6.12``): the
6.12 kthread has neither GRO nor ``napi_skb_cache_get_bulk`` (CPUMAP-KT-003, -004 gates).

The model is single-threaded: the caller says which CPU and context each call runs in
(a :class:`reference.page_pool.Context`), and the kthread runs one loop iteration per
:meth:`CpuMap.kthread_run_once` call.  Pages that leave through ``__xdp_return`` are
handed to :func:`reference.skb.apply_mem_return` in the caller's context.
"""

from __future__ import annotations

import errno
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from reference import page_pool as pp
from reference.kernel import DEFAULT_KERNEL, KernelVersion, gate
from reference.kfuncs import BPF_MAP_TYPE_CPUMAP, LoadedBpfProg, map_update_prog
from reference.page_pool.ptr_ring import PtrRing
from reference.skb import PageFree, SkBuff, apply_mem_return, xdp_build_skb_from_frame
from reference.trace import Trace, emit
from reference.xdp.actions import XdpAction
from reference.xdp.arch import xdp_semantics
from reference.xdp.buff import XdpBuff
from reference.xdp.frame import (
    XdpFrame,
    xdp_convert_frame_to_buff,
    xdp_return_frame,
    xdp_return_frame_rx_napi,
    xdp_update_frame_from_buff,
)
from reference.xdp.mem import MemReturn, XdpMemInfo
from reference.xdp.program import run_program
from reference.xdp.rxq import NetDev, XdpRxqInfo

#: kernel/bpf/cpumap.c constants (CPUMAP-ENQ-001, CPUMAP-KT-001, CPUMAP-MAP-001).
CPU_MAP_BULK_SIZE = 8
CPUMAP_BATCH = 8
CPUMAP_QSIZE_MAX = 16384
#: ``NAPI_POLL_WEIGHT`` (include/linux/netdevice.h): the GRO flush period (CPUMAP-KT-004).
NAPI_POLL_WEIGHT = 64
#: ``BPF_ANY`` / ``BPF_NOEXIST`` / ``BPF_EXIST`` (include/uapi/linux/bpf.h).
BPF_ANY = 0
BPF_NOEXIST = 1
BPF_EXIST = 2

#: Why a redirected frame was dropped (CPUMAP-FATE-001).
DROP_RING_FULL = "ring_full"
DROP_PROG = "prog_drop"
DROP_PROG_REDIRECT = "prog_redirect_failed"
DROP_PROG_NO_ROOM = "prog_pass_no_room"
DROP_SKB_ALLOC = "kmem_alloc"
DROP_REASONS = (DROP_RING_FULL, DROP_PROG, DROP_PROG_REDIRECT, DROP_PROG_NO_ROOM,
                DROP_SKB_ALLOC)


@attrs.frozen
class EnqueueTrace:
    """``trace_xdp_cpumap_enqueue`` (CPUMAP-ENQ-003)."""

    map_id: int
    processed: int
    drops: int
    to_cpu: int


@attrs.frozen
class KthreadTrace:
    """``trace_xdp_cpumap_kthread`` with ``struct xdp_cpumap_stats`` (CPUMAP-KT-005)."""

    map_id: int
    processed: int
    drops: int
    sched: int
    xdp_pass: int
    xdp_drop: int
    xdp_redirect: int


@attrs.define(eq=False)
class XdpBulkQueue:
    """``struct xdp_bulk_queue``: one per (entry, enqueuing CPU)."""

    obj: CpuMapEntry
    cpu: int
    q: list[XdpFrame] = attrs.field(factory=list)
    linked: bool = False  # ``flush_node`` is on the CPU's flush list


@attrs.define(eq=False)
class CpuMapEntry:
    """``struct bpf_cpu_map_entry``.

    ``prog`` is the second program as an op list (``reference.xdp.program``); ``gro``
    holds skbs not yet flushed; ``stack`` holds skbs passed up and not yet freed.
    ``skb_alloc_fail_next`` is how many skb heads the kthread's next batches cannot get
    (a model hook: a batch of n frames lacks min(N, n) of them, and N goes down by as
    many; ``napi_skb_cache_get_bulk`` then returns the others, while before v6.15
    ``kmem_cache_alloc_bulk`` returns none, CPUMAP-KT-003).
    """

    cpu: int
    qsize: int
    map_id: int
    queue: PtrRing[XdpFrame]
    prog: tuple[Mapping[str, Any], ...] | None = None
    bulkq: dict[int, XdpBulkQueue] = attrs.field(factory=dict)
    gro: list[SkBuff] = attrs.field(factory=list)
    stack: list[SkBuff] = attrs.field(factory=list)
    gro_packets: int = 0
    gro_flushes: int = 0
    gro_full_flushes: int = 0
    slept: bool = True
    wakeups: int = 0
    warned_actions: list[int] = attrs.field(factory=list)
    skb_alloc_fail_next: int = 0

    def bq(self, cpu: int) -> XdpBulkQueue:
        q = self.bulkq.get(cpu)
        if q is None:
            q = self.bulkq[cpu] = XdpBulkQueue(self, cpu)
        return q


@attrs.frozen
class KthreadRun:
    """What one kthread iteration did."""

    frames: tuple[XdpFrame, ...]
    skbs: tuple[SkBuff, ...]
    dropped: tuple[tuple[XdpFrame, str], ...]
    trace: KthreadTrace
    gro_flushed: int
    frees: tuple[PageFree, ...]


class CpuMap:
    """A cpumap: ``max_entries`` slots keyed by CPU number, and the per-CPU flush lists.

    ``possible_cpus`` is ``cpu_possible_mask``.  ``drops`` logs every redirected frame
    the map dropped with its reason; ``frees`` every page a drop released.
    """

    def __init__(self, max_entries: int, possible_cpus: Sequence[int], *, map_id: int = 1,
                 pre_v6_4: bool = False, kernel: KernelVersion = DEFAULT_KERNEL) -> None:
        self.max_entries = max_entries
        self.kernel = kernel
        self.possible_cpus = frozenset(possible_cpus)
        self.map_id = map_id
        self.pre_v6_4 = pre_v6_4
        self.entries: list[CpuMapEntry | None] = [None] * max_entries
        self.retired: list[CpuMapEntry] = []
        self.flush_lists: dict[int, list[XdpBulkQueue]] = {}
        self.enqueue_traces: list[EnqueueTrace] = []
        self.kthread_traces: list[KthreadTrace] = []
        self.drops: list[tuple[XdpFrame, str]] = []
        self.frees: list[PageFree] = []

    # ------------------------------------------------------------------ map operations

    def update_elem(
        self,
        key: int,
        qsize: int,
        *,
        prog: LoadedBpfProg | None = None,
        ops: Sequence[Mapping[str, Any]] | None = None,
        flags: int = BPF_ANY,
        trace: Trace | None = None,
    ) -> int:
        """``cpu_map_update_elem`` (CPUMAP-MAP-001 .. CPUMAP-MAP-003): 0 or -errno."""
        if flags > BPF_EXIST:
            emit(trace, "CPUMAP-MAP-001", "flags above BPF_EXIST", flags=flags)
            return -errno.EINVAL
        if key >= self.max_entries:
            emit(trace, "CPUMAP-MAP-001", "key at or above max_entries", key=key)
            return -errno.E2BIG
        if flags == BPF_NOEXIST:
            emit(trace, "CPUMAP-MAP-001", "BPF_NOEXIST: every slot exists", key=key)
            return -errno.EEXIST
        if qsize > CPUMAP_QSIZE_MAX:
            emit(trace, "CPUMAP-MAP-001", "qsize above the sanity limit", qsize=qsize)
            return -errno.EOVERFLOW
        if key not in self.possible_cpus:
            emit(trace, "CPUMAP-MAP-001", "key is not a possible CPU", key=key)
            return -errno.ENODEV
        if qsize == 0:
            self._replace(key, None)
            emit(trace, "CPUMAP-MAP-002", "qsize 0: entry deleted", key=key)
            return 0
        if prog is not None:
            rc = map_update_prog(BPF_MAP_TYPE_CPUMAP, prog, kernel=self.kernel)
            if rc < 0:
                # CPUMAP-MAP-003: __cpu_map_entry_alloc returns NULL for any failure
                # (-ENOMEM), or from 48e11bad9a1f (gate CPUMAP-MAP-003) its error.
                emit(trace, "CPUMAP-MAP-003", "program refused: entry allocation fails", rc=rc)
                return rc if gate(self.kernel, "CPUMAP-MAP-003") else -errno.ENOMEM
        entry = CpuMapEntry(cpu=key, qsize=qsize, map_id=self.map_id, queue=PtrRing(qsize),
                            prog=tuple(ops) if prog is not None and ops is not None else None)
        self._replace(key, entry)
        emit(trace, "CPUMAP-MAP-002", "new entry", key=key, qsize=qsize)
        return 0

    def delete_elem(self, key: int, trace: Trace | None = None) -> int:
        """``cpu_map_delete_elem``: -EINVAL past ``max_entries`` (CPUMAP-MAP-002)."""
        if key >= self.max_entries:
            emit(trace, "CPUMAP-MAP-002", "delete: key at or above max_entries", key=key)
            return -errno.EINVAL
        self._replace(key, None)
        emit(trace, "CPUMAP-MAP-002", "delete: entry removed", key=key)
        return 0

    def _replace(self, key: int, entry: CpuMapEntry | None) -> None:
        old = self.entries[key]
        self.entries[key] = entry
        if old is not None:
            self.retired.append(old)  # its kthread drains the ring before it stops

    def lookup(self, key: int) -> CpuMapEntry | None:
        """``__cpu_map_lookup_elem``."""
        return self.entries[key] if 0 <= key < self.max_entries else None

    # ------------------------------------------------------------------ enqueue

    def cpu_map_enqueue(self, entry: CpuMapEntry, frame: XdpFrame, dev_rx: int,
                        ctx: pp.Context, trace: Trace | None = None) -> int:
        """``cpu_map_enqueue``: store ``dev_rx`` in the frame and bulk it; never fails
        (CPUMAP-ENQ-001)."""
        frame.write(dev_rx=dev_rx)
        bq = entry.bq(ctx.cpu)
        if len(bq.q) == CPU_MAP_BULK_SIZE:
            emit(trace, "CPUMAP-ENQ-001", "bulk queue full: flush it first", cpu=ctx.cpu)
            self.bq_flush_to_queue(bq, ctx, trace)
        bq.q.append(frame)
        if not bq.linked:
            # list_add: the queue goes to the head of the CPU's flush list, and
            # __cpu_map_flush walks from the head, so the last linked flushes first.
            self.flush_lists.setdefault(ctx.cpu, []).insert(0, bq)
            bq.linked = True
        emit(trace, "CPUMAP-ENQ-001", "frame bulked", cpu=ctx.cpu, to_cpu=entry.cpu,
             count=len(bq.q))
        return 0

    def bq_flush_to_queue(self, bq: XdpBulkQueue, ctx: pp.Context,
                          trace: Trace | None = None) -> None:
        """``bq_flush_to_queue`` (CPUMAP-ENQ-002, CPUMAP-ENQ-003): produce each frame
        into the entry's ptr_ring; a frame that finds it full is returned with
        ``xdp_return_frame_rx_napi`` in the enqueuing context and counted as a drop."""
        if not bq.q:
            return
        rcpu = bq.obj
        processed = drops = 0
        for frame in bq.q:
            if not rcpu.queue.produce(frame):
                drops += 1
                self.drops.append((frame, DROP_RING_FULL))
                _give_back(xdp_return_frame_rx_napi(frame), self.frees, ctx, trace)
            processed += 1
        bq.q.clear()
        if bq.linked:
            self.flush_lists[bq.cpu].remove(bq)
            bq.linked = False
        t = EnqueueTrace(rcpu.map_id, processed, drops, rcpu.cpu)
        self.enqueue_traces.append(t)
        emit(trace, "CPUMAP-ENQ-003", "xdp_cpumap_enqueue", processed=processed, drops=drops,
             to_cpu=rcpu.cpu)

    def flush(self, ctx: pp.Context, trace: Trace | None = None) -> None:
        """``__cpu_map_flush`` from ``xdp_do_flush``: flush every bulk queue on this
        CPU's list, head first (the most recently linked queue), and wake its kthread
        (CPUMAP-ENQ-004)."""
        for bq in list(self.flush_lists.get(ctx.cpu, ())):
            self.bq_flush_to_queue(bq, ctx, trace)
            bq.obj.wakeups += 1
            emit(trace, "CPUMAP-ENQ-004", "bulk queue flushed, kthread woken",
                 to_cpu=bq.obj.cpu)

    # ------------------------------------------------------------------ kthread

    def kthread_run_once(self, entry: CpuMapEntry, trace: Trace | None = None
                         ) -> KthreadRun | None:
        """One iteration of ``cpu_map_kthread_run`` on ``entry.cpu`` (CPUMAP-KT-001 ..
        CPUMAP-KT-005).  None when the ring is empty (the kthread sleeps)."""
        # local_bh_disable() on the entry's CPU: softirq there, so page_pool puts from
        # here are direct only for a pool that CPU owns (CPUMAP-KT-006).
        ctx = pp.Context(cpu=entry.cpu, in_softirq=True)
        if entry.queue.empty():
            entry.slept = True
            return None
        sched = 1 if entry.slept else 0
        entry.slept = False
        frames: list[XdpFrame] = []
        while len(frames) < CPUMAP_BATCH:
            f = entry.queue.consume()
            if f is None:
                break
            frames.append(f)
        n = len(frames)
        dropped: list[tuple[XdpFrame, str]] = []
        frees: list[PageFree] = []
        stats = {"pass": 0, "drop": 0, "redirect": 0}
        if entry.prog is not None:
            frames = self._run_prog(entry, frames, stats, dropped, frees, ctx, trace)
        kmem_alloc_drops = 0
        if frames and entry.skb_alloc_fail_next:
            lacking = min(entry.skb_alloc_fail_next, len(frames))
            entry.skb_alloc_fail_next -= lacking
            # CPUMAP-KT-003: v6.15's napi_skb_cache_get_bulk hands out the heads it has;
            # before, kmem_cache_alloc_bulk is all or nothing.
            m = len(frames) - lacking if gate(self.kernel, "CPUMAP-KT-003") else 0
            for f in frames[m:]:
                dropped.append((f, DROP_SKB_ALLOC))
                _give_back(xdp_return_frame(f), frees, ctx, trace)
            kmem_alloc_drops = len(frames) - m
            frames = frames[:m]
            emit(trace, "CPUMAP-KT-003", "no skb head: frames returned", drops=kmem_alloc_drops)
        skbs = [xdp_build_skb_from_frame(f, f.dev_rx, pre_v6_4=self.pre_v6_4, trace=trace)
                for f in frames]
        if trace is not None and any(skb.frags for skb in skbs):
            emit(trace, "CPUMAP-MB-001", "skbs hold their frames' frag pages",
                 nr_frags=[len(skb.frags) for skb in skbs])
        kt = KthreadTrace(entry.map_id, n, kmem_alloc_drops, sched, stats["pass"],
                          stats["drop"], stats["redirect"])
        self.kthread_traces.append(kt)
        emit(trace, "CPUMAP-KT-005", "xdp_cpumap_kthread", processed=n, drops=kmem_alloc_drops,
             sched=sched)
        flushed = 0
        empty = entry.queue.empty()
        if not gate(self.kernel, "CPUMAP-KT-004"):
            # Before v6.15 the batch's skbs go up in one netif_receive_skb_list() call.
            entry.stack.extend(skbs)
            flushed = len(skbs)
            emit(trace, "CPUMAP-KT-004", "batch passed to netif_receive_skb_list",
                 skbs=flushed)
        else:
            entry.gro.extend(skbs)
            entry.gro_packets += n
            if entry.gro_packets >= NAPI_POLL_WEIGHT or empty:
                flushed = len(entry.gro)
                entry.stack.extend(entry.gro)
                entry.gro.clear()
                entry.gro_flushes += 1
                entry.gro_full_flushes += int(empty)
                entry.gro_packets = 0
                emit(trace, "CPUMAP-KT-004", "GRO flush", skbs=flushed, ring_empty=empty)
        self.drops.extend(dropped)
        self.frees.extend(frees)
        return KthreadRun(tuple(frames), tuple(skbs), tuple(dropped), kt, flushed, tuple(frees))

    def _run_prog(self, entry: CpuMapEntry, frames: list[XdpFrame], stats: dict[str, int],
                  dropped: list[tuple[XdpFrame, str]], frees: list[PageFree],
                  ctx: pp.Context, trace: Trace | None) -> list[XdpFrame]:
        """``cpu_map_bpf_prog_run_xdp`` (CPUMAP-KT-002).  Returns run with
        ``xdp_set_return_frame_no_direct`` in force, so every return is non-direct.  The
        program sees a multi-buffer frame's frags, and may release some (CPUMAP-MB-001)."""
        assert entry.prog is not None
        kept: list[XdpFrame] = []
        for frame in frames:
            rxq = XdpRxqInfo(dev=NetDev(frame.dev_rx), mem=XdpMemInfo(type=frame.mem_type))
            xdp = XdpBuff(rxq=rxq)
            xdp_convert_frame_to_buff(frame, xdp)
            released: list[MemReturn] = []
            act = run_program(entry.prog, xdp, released=released, trace=trace,
                              kernel=xdp_semantics(self.kernel)).action
            # CPUMAP-MB-001: frags a tail shrink took off go back at once, in this context.
            for rec in released:
                frees.append(apply_mem_return(rec, ctx, trace))
            if trace is not None and released:
                emit(trace, "CPUMAP-MB-001", "the program's tail shrink released frags",
                     frags=len(released))
            reason: str | None = None
            if act == XdpAction.XDP_PASS:
                if xdp_update_frame_from_buff(xdp, frame, trace=trace) < 0:
                    reason = DROP_PROG_NO_ROOM
                else:
                    kept.append(frame)
            elif act == XdpAction.XDP_REDIRECT:
                # The op vocabulary has no redirect helper, so bpf_redirect_info names no
                # target and xdp_do_redirect fails.
                reason = DROP_PROG_REDIRECT
            else:
                if act != XdpAction.XDP_DROP:
                    entry.warned_actions.append(act)  # bpf_warn_invalid_xdp_action
                reason = DROP_PROG
            if reason is not None:
                stats["drop"] += 1
                dropped.append((frame, reason))
                _give_back(xdp_return_frame(frame, return_frame_no_direct=True), frees, ctx,
                           trace)
            emit(trace, "CPUMAP-KT-002", "second program verdict", action=act,
                 dropped=reason)
        stats["pass"] += len(kept)
        return kept

    def entries_on(self, cpu: int) -> list[CpuMapEntry]:
        """The live and retired entries whose kthread runs on ``cpu``."""
        return [e for e in [*self.entries, *self.retired] if e is not None and e.cpu == cpu]


def _give_back(records: Sequence[MemReturn], frees: list[PageFree], ctx: pp.Context,
               trace: Trace | None) -> None:
    """Carry out the returns of a dropped frame in ``ctx`` (SKB-FREE-004): every frag
    first, then the head page (XDP-FRAME-007, CPUMAP-MB-001)."""
    if trace is not None and len(records) > 1:
        emit(trace, "CPUMAP-MB-001", "a dropped frame's frags go back before its head",
             frags=len(records) - 1)
    for rec in records:
        frees.append(apply_mem_return(rec, ctx, trace))


# ---------------------------------------------------------------------- timing-free facts


def overflow_free_burst(qsize: int) -> int:
    """CPUMAP-LIVE-001: the largest burst that cannot meet a full ring of ``qsize`` slots
    whatever the kthread's timing, when it starts with the ring drained: a drained consumer
    may leave ``batch - 1`` consumed slots not yet cleared (PP-RING-001)."""
    return qsize - PtrRing[XdpFrame](qsize).batch + 1


def tracepoint_problems(enqueue: Sequence[EnqueueTrace], kthread: Sequence[KthreadTrace],
                        redirected: int, *, to_cpu: int) -> list[str]:
    """CPUMAP-LIVE-001: what breaks the invariants that hold whatever the timing, once the
    ring is drained: ``redirected`` frames went into the entry on ``to_cpu``; the traces
    are every enqueue and kthread tracepoint of that entry.  Empty when they hold."""
    problems = []
    for t in enqueue:
        if not 1 <= t.processed <= CPU_MAP_BULK_SIZE or not 0 <= t.drops <= t.processed:
            problems.append(f"enqueue batch {t}: 1..{CPU_MAP_BULK_SIZE} frames, drops <= them")
        if t.to_cpu != to_cpu:
            problems.append(f"enqueue batch {t}: to_cpu is not {to_cpu}")
    for k in kthread:
        if k.processed > CPUMAP_BATCH:
            problems.append(f"kthread batch {k}: more than {CPUMAP_BATCH} frames")
        if k.processed != k.drops + k.xdp_pass + k.xdp_drop + k.xdp_redirect and (
                k.xdp_pass + k.xdp_drop + k.xdp_redirect):
            problems.append(f"kthread batch {k}: processed is not drops + verdicts")
        if k.processed == 0 and not k.sched:
            problems.append(f"kthread batch {k}: empty without a wake-up (CPUMAP-KT-001)")
    enqueued = sum(t.processed for t in enqueue)
    ring_drops = sum(t.drops for t in enqueue)
    processed = sum(k.processed for k in kthread)
    if enqueued != redirected:
        problems.append(f"{enqueued} frames enqueued, {redirected} redirected")
    if processed + ring_drops != enqueued:
        problems.append(f"{processed} processed + {ring_drops} ring drops != {enqueued} enqueued")
    return problems

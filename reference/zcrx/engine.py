"""A registered zcrx instance with a device, a socket and a user (rules ZCRX-SIM-*,
ZCRX-OWN-*, ZCRX-SCRUB-002).

The engine ties the pieces together: :func:`~reference.zcrx.register.register_zcrx`
builds the area and the refill ring and binds the queue; the driver's page pool uses the
provider; a header/data-split device writes TCP payload into niovs and hands skbs to the
socket; :class:`~reference.zcrx.recv.Receiver` turns them into CQEs; the user writes refill
entries.  After every step the engine can check that every niov is in exactly one place
and that ownership holds (:meth:`ZcrxEngine.problems`).

The device is a model (device-model assumption, ZCRX-SIM-001): headers go to a separate
header buffer, never to the area; payload is written into the current data buffer, back to
back across packets (``packed``, what hardware GRO/LRO aggregation and bnxt's TPA do) or
starting a fresh buffer for every packet (``per_packet``).  Every frag the device hands up
holds one pool reference; the driver holds one more on the buffer it is filling and drops
it when it moves on (ZCRX-SIM-002).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

import attrs

from reference.errors import InvalidConfig, StateViolation
from reference.kernel import DEFAULT_KERNEL, KernelVersion
from reference.page_pool.constants import PP_RING_DEFAULT_SIZE
from reference.trace import Trace, emit

from .area import Area, Niov, RefillRing
from .pool import ZcPagePool
from .provider import HONOURED, ZcrxIfq
from .recv import Cqe, CqRing, Frag, Receiver, RecvResult, Skb
from .register import (
    PAGE_SHIFT,
    AreaMemory,
    NetdevModel,
    RegResult,
    RingCtx,
    register_zcrx,
)
from .uapi import (
    IORING_SETUP_CQE_MIXED,
    IORING_ZCRX_AREA_MASK,
    IoUringRegionDesc,
    IoUringZcrxAreaReg,
    IoUringZcrxIfqReg,
    IoUringZcrxRqe,
)

PLACEMENTS = ("packed", "per_packet")


@attrs.frozen
class DeviceConfig:
    """The header/data-split device (ZCRX-SIM-001, ZCRX-SIM-002).

    ``gro_segs``: consecutive segments of one ``rx`` step merged into one skb (1: none).
    ``linear_payload``: payload bytes per segment the split leaves in the header buffer
    (0: the split is exact, as with ``hds_thresh`` 0).
    """

    placement: str = "packed"
    gro_segs: int = 1
    linear_payload: int = 0

    def __attrs_post_init__(self) -> None:
        if self.placement not in PLACEMENTS:
            raise InvalidConfig("unknown placement", field="placement", value=self.placement,
                                rule="ZCRX-SIM-001")
        if self.gro_segs < 1 or self.linear_payload < 0:
            raise InvalidConfig("gro_segs >= 1, linear_payload >= 0", field="device",
                                value=(self.gro_segs, self.linear_payload),
                                rule="ZCRX-SIM-002")


@attrs.frozen
class EngineConfig:
    """Everything a run fixes."""

    ctx: RingCtx = attrs.field(factory=RingCtx)
    reg: IoUringZcrxIfqReg = attrs.field(
        factory=lambda: IoUringZcrxIfqReg(if_idx=2, rq_entries=256))
    area: IoUringZcrxAreaReg = attrs.field(
        factory=lambda: IoUringZcrxAreaReg(addr=1 << 32, len=1 << 20))
    region: IoUringRegionDesc = attrs.field(factory=lambda: IoUringRegionDesc(size=8192))
    netdev: NetdevModel | None = attrs.field(factory=NetdevModel)
    memory: AreaMemory = attrs.field(factory=AreaMemory)
    device: DeviceConfig = attrs.field(factory=DeviceConfig)
    cq_entries: int = 4096
    pool_size: int = PP_RING_DEFAULT_SIZE
    #: KVER-001: the registration's version gates (ZCRX-BUFLEN-001, ZCRX-REG-004, -007).
    kernel: KernelVersion = DEFAULT_KERNEL


class HdsDevice:
    """The device and the driver's RX buffer handling (ZCRX-SIM-001, ZCRX-SIM-002)."""

    def __init__(self, cfg: DeviceConfig, niov_size: int, pool: ZcPagePool,
                 trace: Trace | None = None) -> None:
        self.cfg = cfg
        self.niov_size = niov_size
        self.pool = pool
        self.trace = trace
        self.posted: deque[Niov] = deque()
        self.current: Niov | None = None
        self.fill = 0
        self.buffers_used = 0

    def post(self, n: int) -> int:
        """The driver fills its RX ring with ``n`` more buffers, one pool allocation each,
        and returns how many it got: the posted buffers ZCRX-SIM-001 places into first."""
        got = 0
        for _ in range(n):
            niov = self.pool.alloc_netmem()
            if niov is None:
                break
            self.posted.append(niov)
            got += 1
        return got

    def _next_buffer(self) -> Niov | None:
        niov = self.posted.popleft() if self.posted else self.pool.alloc_netmem()
        if niov is not None:
            self.buffers_used += 1
        return niov

    def finish_buffer(self) -> None:
        """The device moves on: the driver drops its reference to the buffer."""
        if self.current is not None:
            niov, self.current = self.current, None
            assert niov.pp is not None
            niov.pp.put(niov, allow_direct=True)
        self.fill = 0

    def place(self, payload: int) -> list[Frag] | None:
        """Write ``payload`` bytes; the frags they landed in, or ``None`` when a buffer could
        not be had (the packet is dropped and its frags given back)."""
        if self.cfg.placement == "per_packet":
            self.finish_buffer()
        frags: list[Frag] = []
        left = payload
        while left:
            if self.current is None:
                niov = self._next_buffer()
                if niov is None:
                    for f in frags:
                        assert f.niov is not None and f.niov.pp is not None
                        f.niov.pp.put(f.niov, allow_direct=True)
                    emit(self.trace, "ZCRX-SIM-001", "no buffer: packet dropped")
                    return None
                self.current, self.fill = niov, 0
            take = min(left, self.niov_size - self.fill)
            niov = self.current
            assert niov.pp is not None
            niov.pp.ref(niov)
            frags.append(Frag(niov, self.fill, take))
            self.fill += take
            left -= take
            if self.fill == self.niov_size:
                self.finish_buffer()
        if self.cfg.placement == "per_packet":
            self.finish_buffer()
        return frags

    def release(self) -> None:
        """The queue's memory is freed (restart or close): every buffer the driver holds
        goes back to its pool."""
        self.finish_buffer()
        while self.posted:
            niov = self.posted.popleft()
            assert niov.pp is not None
            niov.pp.put(niov, allow_direct=False)


def build_skbs(cfg: DeviceConfig, segments: Sequence[list[Frag]]) -> list[Skb]:
    """Segments of one NAPI poll become skbs (ZCRX-SIM-002): ``gro_segs`` at a time; a frag
    that continues the previous one in the same niov is merged into it (the merged frag's
    extra pool reference is dropped); the linear payload of the first segment stays in the
    head, that of later ones becomes an ordinary page frag (copied on receive)."""
    skbs: list[Skb] = []
    for start in range(0, len(segments), cfg.gro_segs):
        skb = Skb(headlen=cfg.linear_payload)
        for i, frags in enumerate(segments[start:start + cfg.gro_segs]):
            if i and cfg.linear_payload:
                skb.frags.append(Frag(None, 0, cfg.linear_payload))
            for frag in frags:
                prev = skb.frags[-1] if skb.frags else None
                if (prev is not None and prev.niov is not None and prev.niov is frag.niov
                        and prev.off + prev.size == frag.off):
                    skb.frags[-1] = Frag(prev.niov, prev.off, prev.size + frag.size)
                    assert frag.niov is not None and frag.niov.pp is not None
                    frag.niov.pp.put(frag.niov, allow_direct=True)
                else:
                    skb.frags.append(frag)
        skbs.append(skb)
    return skbs


@attrs.frozen
class Ledger:
    """Per-niov ownership accounting (ZCRX-OWN-001, ZCRX-OWN-002)."""

    granted: tuple[int, ...]
    honoured: tuple[int, ...]
    scrubbed: tuple[int, ...]


class ZcrxEngine:
    """Registration plus the data path, step by step."""

    def __init__(self, cfg: EngineConfig, trace: Trace | None = None) -> None:
        self.cfg = cfg
        self.trace = trace
        self.result: RegResult = register_zcrx(cfg.ctx, cfg.reg, cfg.area, cfg.region,
                                               cfg.netdev, cfg.memory, trace=trace,
                                               kernel=cfg.kernel)
        self.pools: list[ZcPagePool] = []
        self.ifq: ZcrxIfq | None = None
        self.device: HdsDevice | None = None
        self.rx: Receiver | None = None
        self.shut = False
        self.cqes: list[Cqe] = []
        self.refill_written = 0
        #: CQEs before this index the user has already given back with return_new
        self.user_cursor = 0
        self._granted: list[int] = []
        self._scrubbed: list[int] = []
        if not self.result.ok or self.result.nodev:
            return
        shift = self.result.niov_shift
        assert shift is not None
        area = Area(0, cfg.area.len, shift, kern_readable=self.result.kern_readable)
        rq = RefillRing(self.result.reg.rq_entries)
        self.ifq = ZcrxIfq(area, rq, trace=trace)
        pool = self._new_pool()
        self.device = HdsDevice(cfg.device, area.niov_size, pool, trace)
        mixed = bool(cfg.ctx.flags & IORING_SETUP_CQE_MIXED)
        self.rx = Receiver(self.ifq, CqRing(cfg.cq_entries, mixed=mixed), trace=trace,
                           kernel=cfg.kernel)
        n = area.num_niovs
        self._granted, self._scrubbed = [0] * n, [0] * n

    @property
    def active(self) -> bool:
        return self.ifq is not None and not self.shut

    @property
    def pool(self) -> ZcPagePool:
        return self.pools[-1]

    def _new_pool(self) -> ZcPagePool:
        assert self.ifq is not None
        size = self.result.driver_rx_page_size or (1 << PAGE_SHIFT)
        order = size.bit_length() - 1 - PAGE_SHIFT
        pool = ZcPagePool(len(self.pools), self.ifq, order=order,
                          ring_size=self.cfg.pool_size, trace=self.trace)
        self.pools.append(pool)
        return pool

    # -- steps -----------------------------------------------------------------------------
    def rx_segments(self, payloads: Sequence[int]) -> tuple[int, int]:
        """One NAPI poll: each TCP payload is split from its headers and placed; the skbs
        go to the socket.  Returns (delivered segments, dropped segments)."""
        assert self.device is not None and self.rx is not None
        placed: list[list[Frag]] = []
        dropped = 0
        for payload in payloads:
            frags = self.device.place(payload)
            if frags is None:
                dropped += 1
            else:
                placed.append(frags)
        skbs = build_skbs(self.cfg.device, placed)
        emit(self.trace, "ZCRX-SIM-002", f"{len(placed)} segments in {len(skbs)} skbs",
             dropped=dropped)
        for skb in skbs:
            self.rx.queue.append([skb, 0])
        return len(placed), dropped

    def recv(self, length: int = 0, *, user_data: int = 0) -> RecvResult:
        assert self.rx is not None and self.ifq is not None
        res = self.rx.recv(length, user_data=user_data)
        for cqe in res.cqes:
            self.cqes.append(cqe)
            self._granted[cqe.niov] += 1
        return res

    def reap(self) -> None:
        assert self.rx is not None
        self.rx.cq.reap()

    def user_rqe_for(self, cqe_index: int) -> IoUringZcrxRqe:
        """The entry a well-behaved user writes to give CQE ``cqe_index`` back (the offset
        with its area bits replaced by the area token, the CQE's length)."""
        cqe = self.cqes[cqe_index]
        token = self.result.area.rq_area_token
        return IoUringZcrxRqe(off=(cqe.off & ~IORING_ZCRX_AREA_MASK) | token, len=cqe.res)

    def user_write(self, rqes: Sequence[IoUringZcrxRqe]) -> int:
        """The user writes entries at tail while there is room; returns how many fit."""
        assert self.ifq is not None
        n = 0
        for rqe in rqes:
            if not self.ifq.rq.user_push(rqe):
                break
            n += 1
        self.refill_written += n
        return n

    def user_return_new(self) -> int:
        """The user gives back every CQE it has not returned yet, oldest first, as far as
        the ring has room (ZCRX-SIM-003)."""
        rqes = [self.user_rqe_for(k) for k in range(self.user_cursor, len(self.cqes))]
        n = self.user_write(rqes)
        self.user_cursor += n
        return n

    def alloc(self, n: int) -> int:
        """The driver refills its RX ring with ``n`` buffers (this is when refill entries
        are read)."""
        assert self.device is not None
        return self.device.post(n)

    def restart(self) -> None:
        """A queue restart with the provider still installed (ZCRX-MP-006): a new pool is
        created, the old queue's buffers go back to the old pool, which is destroyed."""
        assert self.device is not None and self.ifq is not None
        old = self.pool
        new = self._new_pool()
        self.device.release()
        old.destroy()
        self.device.pool = new
        emit(self.trace, "ZCRX-MP-006", "queue restarted", old=old.pool_id, new=new.pool_id)

    def shutdown(self) -> int:
        """The ring lets go of the ifq (ZCRX-SCRUB-002): the queue is closed (buffers back,
        pool destroyed), then the scrub takes every user reference back, then the socket's
        unread skbs are freed.  Returns the references scrubbed."""
        assert self.device is not None and self.ifq is not None and self.rx is not None
        self.device.release()
        self.pool.destroy()
        refs = list(self.ifq.area.user_refs)
        taken = self.ifq.scrub()
        for i, r in enumerate(refs):
            self._scrubbed[i] += r
        self.rx.drop_queue()
        self.shut = True
        emit(self.trace, "ZCRX-SCRUB-002", "queue closed and scrubbed",
             free=self.ifq.area.free_count, niovs=self.ifq.area.num_niovs)
        return taken

    # -- checks -----------------------------------------------------------------------------
    def ledger(self) -> Ledger:
        """CQEs granted, refills honoured and references scrubbed, per niov."""
        honoured = [0] * len(self._granted)
        if self.ifq is not None:
            for rec in self.ifq.refills:
                if rec.outcome in HONOURED and rec.niov is not None:
                    honoured[rec.niov] += 1
        return Ledger(tuple(self._granted), tuple(honoured), tuple(self._scrubbed))

    def problems(self) -> list[str]:
        """Every broken invariant (ZCRX-SIM-005, ZCRX-OWN-001, ZCRX-OWN-002); empty when
        all hold."""
        if self.ifq is None:
            return []
        out: list[str] = []
        area = self.ifq.area
        rq = self.ifq.rq
        where: dict[int, list[str]] = {i: [] for i in range(area.num_niovs)}
        for i in area.freelist:
            where[i].append("freelist")
        for pool in self.pools:
            for n in pool.cache:
                where[n.index].append(f"pool{pool.pool_id}.cache")
            for n in pool.ring:
                where[n.index].append(f"pool{pool.pool_id}.ring")
        holders = [0] * area.num_niovs
        if self.device is not None:
            if self.device.current is not None:
                holders[self.device.current.index] += 1
            for n in self.device.posted:
                holders[n.index] += 1
        if self.rx is not None:
            for entry in self.rx.queue:
                skb = entry[0]
                assert isinstance(skb, Skb)
                for f in skb.frags:
                    if f.niov is not None:
                        holders[f.niov.index] += 1
        ledger = self.ledger()
        for niov in area.niovs:
            i = niov.index
            uref = area.user_refs[i]
            if uref < 0:
                out.append(f"niov {i}: user_refs {uref} < 0")
            places = where[i]
            if niov.pp_ref_count > 0:
                places = [*places, "out"]
            if len(places) != 1:
                out.append(f"niov {i} is in {places or 'no place'}")
            if niov.pp_ref_count != holders[i] + uref:
                out.append(f"niov {i}: pp_ref_count {niov.pp_ref_count} != "
                           f"{holders[i]} driver/skb holders + {uref} user refs")
            if "freelist" in places and niov.pp is not None:
                out.append(f"niov {i} on the freelist still carries pool {niov.pp.pool_id}")
            g, h, s = ledger.granted[i], ledger.honoured[i], ledger.scrubbed[i]
            if h > g:
                out.append(f"niov {i}: {h} refills honoured for {g} CQEs")
            if uref != g - h - s:
                out.append(f"niov {i}: user_refs {uref} != {g} CQEs - {h} refills - {s} "
                           "scrubbed")
        for pool in self.pools:
            carried = sum(1 for n in area.niovs if n.pp is pool)
            if pool.inflight() != carried:
                out.append(f"pool {pool.pool_id}: hold-release {pool.inflight()} but "
                           f"{carried} niovs carry it")
        # ZCRX-OWN-003: the kernel never publishes a head beyond what the user wrote.
        if (rq.tail - rq.head) & 0xFFFF_FFFF > rq.nr_entries:
            out.append(f"refill head {rq.head} passed tail {rq.tail}")
        return out

    def check(self) -> None:
        problems = self.problems()
        if problems:
            raise StateViolation("; ".join(problems[:5]), obj="zcrx engine",
                                 rule="ZCRX-SIM-005")

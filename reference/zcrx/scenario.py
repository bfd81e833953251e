"""The seed's comparison as operation counts: a TCP stream through zcrx with 4 KiB or
32 KiB buffers (rule ZCRX-SIM-004).

Seed 002 ("Per queue configs and large rx buffer support for zcrx", RFC v2, Aug 2025)
measured about 22.8 GB/s either way on a 200 Gbit NIC, with CPU time dropping when the
buffers grow from 4 KiB to 32 KiB.  The model cannot measure time; it counts what the
CPU has to do per MiB of payload: CQEs to post and read, refill entries to write and
parse, and page_pool / provider operations.  The run is the full model — registration,
the driver's pool on the provider, the header/data-split device, receive, the user
returning every CQE — so the counts are consequences of the rules, not formulas.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from .engine import DeviceConfig, EngineConfig, ZcrxEngine
from .register import PAGE_SIZE, AreaMemory, NetdevModel, rq_offsets
from .uapi import IoUringRegionDesc, IoUringZcrxAreaReg, IoUringZcrxIfqReg, IoUringZcrxRqe

MIB = 1 << 20
HUGE_PAGE = 2 * MIB


def mss_stream(total: int = MIB, mss: int = 1448) -> list[int]:
    """Payload lengths of a bulk TCP transfer of ``total`` bytes in ``mss`` segments (1448:
    a 1500-byte MTU with TCP timestamps)."""
    out = [mss] * (total // mss)
    if total % mss:
        out.append(total % mss)
    return out


@attrs.frozen
class StreamCounts:
    """What one stream cost (ZCRX-SIM-004)."""

    rx_buf_len: int
    payload_bytes: int
    segments: int
    skbs: int
    #: CQEs posted, zero copy and copied
    cqes: int
    copy_cqes: int
    #: refill entries the user wrote
    refill_entries: int
    #: ``page_pool_alloc_netmems`` calls: one per RX buffer the driver takes
    pp_allocs: int
    #: calls into the provider's ``alloc_netmems`` (the pool's cache and ring were empty)
    mp_alloc_calls: int
    #: niovs the provider got back through the refill ring, and from the freelist
    niovs_from_ring: int
    niovs_from_freelist: int
    #: ``page_pool_ref_netmem`` / unref calls (frag references and CQE references)
    pp_ref_ops: int
    pp_unref_ops: int
    #: niovs given back to the provider by the pool
    releases: int
    #: broken invariants at the end (0: conservation and ownership held)
    problems: int

    def per_mib(self) -> dict[str, float]:
        """Each count scaled to one MiB of payload (exact when the stream is 1 MiB)."""
        scale = MIB / self.payload_bytes if self.payload_bytes else 0.0
        keys = ("cqes", "copy_cqes", "refill_entries", "pp_allocs", "mp_alloc_calls",
                "niovs_from_ring", "niovs_from_freelist", "pp_ref_ops", "pp_unref_ops")
        return {k: round(getattr(self, k) * scale, 2) for k in keys}


def stream_config(rx_buf_len: int, *, device: DeviceConfig | None = None,
                  area_len: int = 16 * MIB, rq_entries: int = 4096) -> EngineConfig:
    """A registration that succeeds for ``rx_buf_len`` (0 or a power of two up to 2 MiB):
    huge-page backed memory, a driver that opts into QCFG_RX_PAGE_SIZE."""
    region = rq_offsets().rqes + 16 * rq_entries  # ZCRX-REG-008
    region = (region + PAGE_SIZE - 1) // PAGE_SIZE * PAGE_SIZE
    device = device if device is not None else DeviceConfig()
    chunks = (HUGE_PAGE,) * (area_len // HUGE_PAGE) if area_len % HUGE_PAGE == 0 else None
    return EngineConfig(
        reg=IoUringZcrxIfqReg(if_idx=2, if_rxq=0, rq_entries=rq_entries, rx_buf_len=rx_buf_len),
        area=IoUringZcrxAreaReg(addr=1 << 32, len=area_len),
        region=IoUringRegionDesc(size=region),
        netdev=NetdevModel(qcfg_rx_page_size=True, max_rx_page_size=max(rx_buf_len, 1 << 15)),
        memory=AreaMemory(chunks=chunks),
        device=device,
    )


def run_stream(engine: ZcrxEngine, payloads: Sequence[int], *,
               recv_every: int | None = None) -> None:
    """Feed ``payloads`` ``recv_every`` segments per NAPI poll (default: one GRO batch,
    ``gro_segs``); after each poll the user receives and returns every CQE it got
    (ZCRX-SIM-003)."""
    if recv_every is None:
        recv_every = engine.cfg.device.gro_segs
    pending: list[IoUringZcrxRqe] = []

    def user_turn() -> None:
        res = engine.recv()
        engine.reap()
        first = len(engine.cqes) - len(res.cqes)
        pending.extend(engine.user_rqe_for(first + k) for k in range(len(res.cqes)))
        n = engine.user_write(pending)
        del pending[:n]

    for i in range(0, len(payloads), recv_every):
        engine.rx_segments(payloads[i:i + recv_every])
        user_turn()
    assert engine.rx is not None
    while engine.rx.queue:
        user_turn()
    if pending:
        engine.user_write(pending)


def stream_counts(payloads: Sequence[int], rx_buf_len: int, *,
                  device: DeviceConfig | None = None, recv_every: int | None = None,
                  area_len: int = 16 * MIB, rq_entries: int = 4096) -> StreamCounts:
    """Run a stream and count (ZCRX-SIM-004)."""
    device = device if device is not None else DeviceConfig()
    engine = ZcrxEngine(stream_config(rx_buf_len, device=device, area_len=area_len,
                                      rq_entries=rq_entries))
    if not engine.result.ok:
        raise ValueError(f"stream registration failed: {engine.result.rc} "
                         f"({engine.result.rule})")
    run_stream(engine, payloads, recv_every=recv_every)
    return counts_of(engine, sum(payloads), len(payloads))


def counts_of(engine: ZcrxEngine, payload_bytes: int, segments: int) -> StreamCounts:
    assert engine.ifq is not None and engine.rx is not None and engine.device is not None
    pools = engine.pools
    ifq = engine.ifq
    return StreamCounts(
        rx_buf_len=1 << ifq.niov_shift,
        payload_bytes=payload_bytes,
        segments=segments,
        skbs=-(-segments // engine.cfg.device.gro_segs),
        cqes=len(engine.cqes),
        copy_cqes=sum(1 for c in engine.cqes if c.copy),
        refill_entries=engine.refill_written,
        pp_allocs=sum(p.alloc_calls for p in pools),
        mp_alloc_calls=sum(p.mp_alloc_calls for p in pools),
        niovs_from_ring=ifq.mp_from_ring,
        niovs_from_freelist=ifq.mp_from_freelist,
        pp_ref_ops=sum(p.ref_ops for p in pools),
        pp_unref_ops=sum(p.unref_ops for p in pools),
        releases=sum(p.releases for p in pools),
        problems=len(engine.problems()),
    )


def compare_buffer_sizes(payloads: Sequence[int], sizes: Sequence[int] = (4096, 32768), *,
                         device: DeviceConfig | None = None) -> dict[int, StreamCounts]:
    """The seed's comparison: the same stream with each buffer size."""
    return {size: stream_counts(payloads, size, device=device) for size in sizes}

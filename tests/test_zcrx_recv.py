"""reference.zcrx.recv: CQEs from received skbs, worked by hand.

Offsets follow ``io_zcrx_queue_cqe`` (token + niov index << niov_shift + offset) and the
device model (payload back to back in the first allocated niov, then the next); the
walk and its limits follow ``io_zcrx_recv_skb`` / ``__tcp_read_sock``; the copy fallback
``io_zcrx_copy_chunk`` (``io_uring/zcrx.c``, openSUSE/kernel@0719e10d826a).
"""

from __future__ import annotations

import errno

import pytest
from zcrx_helpers import make_engine

from reference.kernel import KernelVersion
from reference.zcrx import Frag, RefillOutcome, Skb
from reference.zcrx.uapi import IORING_CQE_F_32, IORING_CQE_F_MORE


def offs(cqes: object) -> list[tuple[int, int]]:
    return [(c.off, c.res) for c in cqes]  # type: ignore[attr-defined]


@pytest.mark.rule("ZCRX-CQE-002", "ZCRX-SIM-001", "ZCRX-SIM-002")
def test_packed_stream_offsets() -> None:
    e = make_engine(niovs=8)
    e.rx_segments([1448, 1448, 1448])
    res = e.recv(user_data=42)
    assert res.rc == 3 * 1448
    # the third segment straddles niov 0 and niov 1
    assert offs(res.cqes) == [(0, 1448), (1448, 1448), (2896, 1200), (4096, 248)]
    assert {c.flags for c in res.cqes} == {IORING_CQE_F_MORE}
    assert {c.user_data for c in res.cqes} == {42}
    raw = res.cqes[3].to_cqe32().pack()
    assert int.from_bytes(raw[16:24], "little") == 4096


@pytest.mark.rule("ZCRX-CQE-002", "ZCRX-REG-002")
def test_mixed_ring_sets_f_32() -> None:
    e = make_engine(niovs=8, mixed=True)
    e.rx_segments([100])
    assert e.recv().cqes[0].flags == IORING_CQE_F_MORE | IORING_CQE_F_32


@pytest.mark.rule("ZCRX-CQE-002", "ZCRX-BUFLEN-001")
def test_32k_niovs() -> None:
    e = make_engine(niovs=8, rx_buf_len=32768)
    e.rx_segments([1448] * 30)
    cqes = e.recv().cqes + e.recv().cqes  # 21 skbs per call
    assert len(cqes) == 31
    # segment 22 covers bytes 31856..33304: 912 in niov 0, 536 at the start of niov 1
    assert offs(cqes[22:24]) == [(31856, 912), (32768, 536)]


@pytest.mark.rule("ZCRX-SIM-001")
def test_per_packet_placement_starts_a_buffer_per_packet() -> None:
    e = make_engine(niovs=8, placement="per_packet")
    e.rx_segments([100, 200, 5000])
    assert offs(e.recv().cqes) == [(0, 100), (4096, 200), (8192, 4096), (12288, 904)]
    assert e.device is not None and e.device.buffers_used == 4


@pytest.mark.rule("ZCRX-SIM-002")
def test_gro_merges_contiguous_frags() -> None:
    e = make_engine(niovs=8, gro_segs=4)
    e.rx_segments([1448] * 4)  # 5792 bytes: one skb, niov 0 (4096) + niov 1 (1696)
    assert offs(e.recv().cqes) == [(0, 4096), (4096, 1696)]
    assert e.problems() == []


@pytest.mark.rule("ZCRX-CQE-005")
def test_length_limit_splits_an_skb() -> None:
    e = make_engine(niovs=8)
    e.rx_segments([1448])
    first = e.recv(1000)
    assert first.rc == 1000 and offs(first.cqes) == [(0, 1000)]
    second = e.recv()
    assert second.rc == 448 and offs(second.cqes) == [(1000, 448)]
    assert e.recv().rc == -errno.EAGAIN  # nothing left to read


@pytest.mark.rule("ZCRX-CQE-005")
def test_skb_limit_per_call() -> None:
    e = make_engine(niovs=8)
    e.rx_segments([10] * 25)
    first = e.recv()
    assert (first.rc, first.requeue, len(first.cqes)) == (210, True, 21)
    second = e.recv()
    assert (second.rc, second.requeue, len(second.cqes)) == (40, False, 4)


@pytest.mark.rule("ZCRX-CQE-005", "ZCRX-CQE-003")
@pytest.mark.parametrize(("kernel", "requeue"), [
    (KernelVersion(7, 3, 4), True), (KernelVersion(7, 2, 10), True),  # 98ad5b63f504
    (KernelVersion(7, 2, 9), False), (KernelVersion(7, 0, 0), False),
])
def test_multishot_requeued_when_stopped_early(kernel: KernelVersion, requeue: bool) -> None:
    """One skb of two segments, each in a buffer of its own (per_packet, two segments per
    GRO skb): frags of 100 bytes in one niov and 200 in the next.  A CQ with one entry
    takes the first CQE; the second frag gets -ENOSPC, so the actor returns 100 with 200
    bytes of its share left: stopped early.  __tcp_read_sock calls the actor again for the
    rest, which fails at once (-ENOSPC, nothing consumed), and the call returns 100.
    Only 2 actor calls, far below the limit of 20: before 98ad5b63f504 the multishot
    request is not requeued; from 7.3 (and 7.2.10) it is.  After a reap the rest comes
    in one piece and that call is not stopped early."""
    e = make_engine(niovs=8, cq_entries=1, placement="per_packet", gro_segs=2)
    assert e.rx is not None
    e.rx.kernel = kernel
    e.rx_segments([100, 200])
    first = e.recv()
    assert (first.rc, first.requeue, first.nr_skbs) == (100, requeue, 2)
    assert offs(first.cqes) == [(0, 100)]  # niov 0; the 200 bytes sit in niov 1
    e.reap()
    second = e.recv()
    assert (second.rc, second.requeue) == (200, False)
    assert offs(second.cqes) == [(4096, 200)]
    assert e.problems() == []


@pytest.mark.rule("ZCRX-CQE-005")
def test_stopped_early_needs_multishot_and_bytes() -> None:
    """7.3.4: a single-shot request is never requeued; a call that delivered nothing
    returns the error (-ENOSPC), not a requeue."""
    e = make_engine(niovs=8, cq_entries=1, placement="per_packet", gro_segs=2)
    assert e.rx is not None
    e.rx_segments([100, 200])
    single = e.rx.recv(multishot=False)
    assert (single.rc, single.requeue) == (100, False)
    nothing = e.rx.recv()
    assert (nothing.rc, nothing.requeue) == (-errno.ENOSPC, False)


@pytest.mark.rule("ZCRX-CQE-003")
def test_no_cqe_space() -> None:
    e = make_engine(niovs=8, cq_entries=2)
    e.rx_segments([1448, 1448, 1448])
    first = e.recv()
    assert first.rc == 2896 and len(first.cqes) == 2
    assert first.requeue  # 7.3.4: the third skb stopped its actor call (ZCRX-CQE-005)
    assert e.recv().rc == -errno.ENOSPC
    e.reap()
    third = e.recv()
    assert offs(third.cqes) == [(2896, 1200), (4096, 248)]
    assert e.problems() == []


@pytest.mark.rule("ZCRX-CQE-001")
def test_foreign_niov_is_efault() -> None:
    e = make_engine(niovs=8)
    assert e.ifq is not None and e.rx is not None
    stray = e.ifq.area.niovs[3]  # a free niov: no pool
    e.rx.queue.append([Skb(frags=[Frag(stray, 0, 100)]), 0])
    assert e.recv().rc == -errno.EFAULT


@pytest.mark.rule("ZCRX-CQE-004")
def test_cqe_takes_a_pool_and_a_user_reference() -> None:
    e = make_engine(niovs=8)
    e.rx_segments([4096])  # fills niov 0: the driver let go of it
    n0 = e.ifq.area.niovs[0]  # type: ignore[union-attr]
    assert n0.pp_ref_count == 1  # the skb's frag
    assert (e.pool.ref_ops, e.pool.unref_ops) == (1, 1)  # frag ref; the driver's put
    e.recv()
    assert n0.pp_ref_count == 1 and e.ifq.area.user_refs[0] == 1  # type: ignore[union-attr]
    assert (e.pool.ref_ops, e.pool.unref_ops) == (2, 2)  # + the CQE's ref; the skb free


@pytest.mark.rule("ZCRX-COPY-001", "ZCRX-COPY-002", "ZCRX-REFILL-005")
def test_linear_payload_is_copied() -> None:
    e = make_engine(niovs=128, linear_payload=10)
    e.rx_segments([1448])
    cqes = e.recv().cqes
    # the pool's first batch took niovs 127..64 and handed out 64; the copy takes the
    # freelist's top, 63, and writes at its start
    assert offs(cqes) == [(63 << 12, 10), (64 << 12, 1448)]
    assert [c.copy for c in cqes] == [True, False]
    area = e.ifq.area  # type: ignore[union-attr]
    n63 = area.niovs[63]
    assert n63.pp is None and n63.pp_ref_count == 1 and area.user_refs[63] == 1
    e.user_write([e.user_rqe_for(0)])
    e.alloc(63)
    e.alloc(1)
    assert e.ifq.refills[0].outcome is RefillOutcome.RETURNED  # type: ignore[union-attr]
    # back on the freelist, whence the same allocation's batch took it into the pool
    assert n63.pp is e.pool and n63 in e.pool.cache and n63.pp_ref_count == 0
    assert e.problems() == []


@pytest.mark.rule("ZCRX-COPY-001")
def test_copy_uses_at_most_a_page_per_niov() -> None:
    e = make_engine(niovs=128, rx_buf_len=32768, linear_payload=5000)
    e.rx_segments([100])
    cqes = e.recv().cqes
    assert offs(cqes) == [(63 << 15, 4096), (62 << 15, 904), (64 << 15, 100)]


@pytest.mark.rule("ZCRX-COPY-002")
def test_gro_linear_of_later_segments_is_an_ordinary_page_frag() -> None:
    e = make_engine(niovs=128, gro_segs=2, linear_payload=10)
    e.rx_segments([1448, 1448])
    cqes = e.recv().cqes
    assert [(c.copy, c.res) for c in cqes] == [(True, 10), (False, 1448), (True, 10),
                                              (False, 1448)]


@pytest.mark.rule("ZCRX-COPY-003")
def test_copy_failures() -> None:
    # no free niov: the pool took all 8 into its cache
    e = make_engine(niovs=8, linear_payload=10)
    e.rx_segments([100])
    assert e.recv().rc == -errno.ENOMEM
    # a dma-buf area is not readable by the kernel
    d = make_engine(niovs=128, linear_payload=10, dmabuf=True)
    d.rx_segments([100])
    assert d.recv().rc == -errno.ENOMEM
    # no CQE space: the niov goes back to the freelist
    c = make_engine(niovs=128, linear_payload=10, cq_entries=1)
    c.rx_segments([100])
    assert c.recv().rc == 10
    free = c.ifq.area.free_count  # type: ignore[union-attr]
    c.rx_segments([100])
    assert c.recv().rc == -errno.ENOSPC
    assert c.ifq.area.free_count == free  # type: ignore[union-attr]
    assert c.problems() == []


@pytest.mark.rule("ZCRX-COPY-004")
def test_short_linear_copy_stops_the_skb() -> None:
    e = make_engine(niovs=128, linear_payload=10)
    e.rx_segments([1448])
    first = e.recv(5)
    assert first.rc == 5 and [c.res for c in first.cqes] == [5]
    second = e.recv()
    assert second.rc == 5 + 1448 and [c.res for c in second.cqes] == [5, 1448]

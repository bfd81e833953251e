"""Replaying a completion-ring image through the driver alone (SPEC: MLX5-RING-*).

The frame scenarios run the modelled ConnectX and the driver together: the device writes
the ring, then the driver reads it.  This module is the second half on its own.  Its input
is what a ring dump from real hardware (or a port's test) holds: every 64-byte slot of the
CQ as the device left it, owner bits and validity bytes included (:class:`RingImage`), the
driver's consumer counter, and the bytes of the receive buffers the CQEs point at
(:class:`RxBuffers`).  Only ``en_rx.c`` runs: the CQ reader with decompression (``cq``),
the RX handlers with XDP and the skb build (``rx``), and the counters.

The frame form (``rx.run``) is the device model writing the ring, then this same driver
(MLX5-RING-004): a ring the device wrote at once, with its placements as buffers, replays
to the same records.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from reference.errors import InvalidConfig, MalformedInput
from reference.mlx5 import cqe as C
from reference.mlx5.cq import Mlx5eRxCq, PollResult, RqParams
from reference.mlx5.device import RqType
from reference.mlx5.rx import Mlx5eRq, Ops, RqConfig, check_linear
from reference.trace import Trace, emit

#: MLX5-RING-001: the most CQ slots an image may hold (2**16; the CQ itself may be larger).
MAX_LOG_RING = 16


@attrs.frozen
class RingImage:
    """MLX5-RING-001: the CQ as the device left it, and where the driver will read next.

    ``slots`` is the whole ring, ``2**log_cq_size`` slots of 64 bytes in index order
    (slot ``i`` at byte ``64 * i``), nothing interpreted yet; ``cc`` is the free-running
    consumer counter (``wq->cc``) whose lap decides which owner bit and validity byte
    mean "new" (MLX5-CQ-001/002).
    """

    slots: bytes
    cc: int = 0

    def __attrs_post_init__(self) -> None:
        n, rest = divmod(len(self.slots), C.CQE_SIZE)
        if rest or n < 2 or n & (n - 1) or n > 1 << MAX_LOG_RING:
            raise MalformedInput(
                f"a ring image is 2**1..2**{MAX_LOG_RING} slots of {C.CQE_SIZE} bytes",
                field="ring.slots", value=len(self.slots), rule="MLX5-RING-001")
        if not 0 <= self.cc <= 0xFFFF_FFFF:
            raise MalformedInput("the consumer counter is a u32", field="ring.cc",
                                 value=self.cc, rule="MLX5-RING-001")

    @property
    def log_cq_size(self) -> int:
        return (len(self.slots) // C.CQE_SIZE).bit_length() - 1

    @classmethod
    def from_slots(cls, slots: list[bytes], cc: int = 0) -> RingImage:
        for i, slot in enumerate(slots):
            if len(slot) != C.CQE_SIZE:
                raise MalformedInput(f"slot {i} is not {C.CQE_SIZE} bytes",
                                     field=f"ring.slots[{i}]", value=len(slot),
                                     rule="MLX5-RING-001")
        return cls(b"".join(slots), cc)

    def slot(self, index: int) -> bytes:
        return self.slots[index * C.CQE_SIZE : (index + 1) * C.CQE_SIZE]


@attrs.frozen
class RxBuffers:
    """MLX5-RING-002: the receive buffers' bytes, by WQ index.

    Cyclic RQ: index ``wqe_counter & (wq_size - 1)`` (``mlx5_wq_cyc_ctr2ix``), the bytes
    from the start of the WQE's buffer (its fragments one after another).  Striding RQ:
    index ``wqe_id``, the bytes of the multi-packet WQE from stride 0.  Bytes no buffer
    gives read as zero.
    """

    wqes: Mapping[int, bytes] = attrs.field(factory=dict)

    def read(self, index: int, offset: int, length: int) -> bytes:
        return self.wqes.get(index, b"")[offset : offset + length].ljust(length, b"\0")


def packet_of(cqe: C.mlx5_cqe64, buffers: RxBuffers, rq_cfg: RqConfig, log_wq_size: int,
              log_num_strides: int) -> bytes:
    """MLX5-RING-002/003: the bytes a success CQE points at.

    ``en_rx.c`` trusts the device's byte count and indices: a count larger than the
    buffer it names, or a striding ``wqe_id`` outside the WQ, would make the driver read
    (or, for ``wi->consumed_strides``, write) outside its arrays.  The model refuses
    such a ring (MLX5-RING-003) instead of guessing.
    """
    if rq_cfg.rq_type is RqType.CYCLIC:
        bcnt = cqe.byte_cnt
        if bcnt > rq_cfg.hw_mtu:
            raise MalformedInput(
                f"byte_cnt above the cyclic WQE's buffer (MTU + 22 = {rq_cfg.hw_mtu})",
                field="byte_cnt", value=bcnt, rule="MLX5-RING-003")
        return buffers.read(cqe.wqe_counter & ((1 << log_wq_size) - 1), 0, bcnt)
    bcnt = C.mpwrq_get_cqe_byte_cnt(cqe)
    offset = C.mpwrq_get_cqe_stride_index(cqe) << rq_cfg.log_stride_sz
    wqe_bytes = 1 << (log_num_strides + rq_cfg.log_stride_sz)
    if rq_cfg.linear and bcnt > rq_cfg.hw_mtu:
        return b""  # dropped as oversize before a byte is read (MLX5-RX-002)
    if offset + bcnt > wqe_bytes:
        raise MalformedInput(
            f"stride {C.mpwrq_get_cqe_stride_index(cqe)} + {bcnt} bytes run past the "
            f"{wqe_bytes}-byte WQE", field="byte_cnt", value=cqe.byte_cnt,
            rule="MLX5-RING-003")
    return buffers.read(cqe.wqe_id, offset, bcnt)


def _check_indices(cqe: C.mlx5_cqe64, striding: bool, log_wq_size: int) -> None:
    """MLX5-RING-003: ``mlx5e_handle_rx_cqe_mpwrq`` indexes its WQE array with
    ``wqe_id`` before it looks at the opcode."""
    if striding and cqe.wqe_id >= 1 << log_wq_size:
        raise MalformedInput(f"wqe_id outside the {1 << log_wq_size}-WQE striding RQ",
                             field="wqe_id", value=cqe.wqe_id, rule="MLX5-RING-003")


def _check_modelled(cqe: C.mlx5_cqe64) -> None:
    """MLX5-RING-003: success CQEs that would take ``mlx5e_build_rx_skb`` into paths the
    model does not describe are refused: kTLS (``get_cqe_tls_offload``), PSP / IPsec /
    MACsec / TC-chain restore (all keyed on ``ft_metadata``) and LRO (``lro_num_seg`` > 1,
    ``mlx5e_lro_update_hdr``).  Below those thresholds the LRO and SHAMPO bytes are never
    read, whatever they hold."""
    for what, value in (("get_cqe_tls_offload", C.get_cqe_tls_offload(cqe)),
                        ("ft_metadata", cqe.ft_metadata),
                        ("lro_num_seg > 1", max(0, C.get_cqe_lro_num_seg(cqe) - 1))):
        if value:
            raise MalformedInput(f"{what}: a driver path the model does not describe",
                                 field=what.split()[0], value=value, rule="MLX5-RING-003")


@attrs.frozen
class RingRun:
    """What the driver made of one ring image."""

    polls: tuple[PollResult, ...]
    stats: dict[str, int]
    records: tuple[dict[str, Any], ...]
    counters: dict[str, int]
    pages: dict[str, int]
    from_title: tuple[bool, ...]
    cc: int
    recovering: bool
    ring: bytes  # the ring after the polls (basic sessions rewrite owner bytes, MLX5-CQ-009)


def replay(
    image: RingImage,
    buffers: RxBuffers,
    params: RqParams,
    rq_cfg: RqConfig,
    program_for: Callable[[int], Ops | None],
    budget: int = 64,
    *,
    log_num_strides: int = 9,
    xdp_prog: bool = False,
    trace: Trace | None = None,
) -> RingRun:
    """MLX5-RING-001: NAPI polls of ``budget`` over the image until a poll does less than
    its budget or moves nothing (an enhanced session larger than the budget).

    Each handler call ``i`` runs ``program_for(i)``; its record's ``frame`` is ``i``.
    """
    if params.log_cq_size != image.log_cq_size:
        raise InvalidConfig("the ring image's slot count sets the CQ size",
                            field="log_cq_size", value=params.log_cq_size, rule="MLX5-RING-001")
    if budget < 1:
        raise InvalidConfig("a NAPI budget is >= 1", field="budget", value=budget,
                            rule="MLX5-RING-001")
    striding = rq_cfg.rq_type is RqType.STRIDING
    cq = Mlx5eRxCq(params, cc=image.cc)
    ring = bytearray(image.slots)
    check_linear(rq_cfg, xdp_prog)  # MLX5-RX-006
    rq = Mlx5eRq(rq_cfg)
    rq.xdp_prog = xdp_prog
    records: list[dict[str, Any]] = []
    cleared: list[bool] = []

    def handler(cqe: C.mlx5_cqe64) -> None:
        index = len(records)
        # First, so the ring rules below fall in this CQE's part of the trace.
        emit(trace, "MLX5-RX-002", "RX handler called", index=index, frame=index)
        _check_indices(cqe, striding, params.log_wq_size)
        data = b""
        if C.MLX5E_RX_ERR_CQE(cqe):
            err = C.mlx5_err_cqe.unpack(cqe.pack())
            emit(trace, "MLX5-RING-006", "error CQE", opcode=C.get_cqe_opcode(cqe),
                 syndrome=err.syndrome, vendor_err_synd=err.vendor_err_synd)
        elif not (striding and C.mpwrq_is_filler_cqe(cqe)):
            _check_modelled(cqe)
            data = packet_of(cqe, buffers, rq_cfg, params.log_wq_size, log_num_strides)
            emit(trace, "MLX5-RING-002", "buffer read", bytes=len(data))
            ht = cqe.rss_hash_type
            emit(trace, "MLX5-RING-005", "rss_hash_type", ip=(ht >> 2) & 3, l4=ht >> 6)
        rec = rq.handle_cqe(cqe, data, program_for(index), trace)
        rec["frame"] = index
        records.append(rec)
        cleared.append(cqe is cq.cqd.title)

    polls: list[PollResult] = []
    while True:
        before = cq.cc
        rq.poll_xdpsq(trace)
        result = cq.poll(ring, budget, handler, trace=trace)
        if result.work_done:
            polls.append(result)
            rq.xdp_rx_poll_complete()
        if result.work_done < budget or cq.cc == before:
            emit(trace, "MLX5-RING-001", "replay ends", polls=len(polls), cc=cq.cc)
            break
    rq.poll_xdpsq(trace)
    # MLX5-RING-001: struct mlx5_cqwq's cc is a u32; the model counts on past 2**32 (every
    # index, lap parity and validity byte it derives agrees with the wrapped value), so
    # the counter a developer would read is the count modulo 2**32.
    return RingRun(tuple(polls), cq.stats(), tuple(records), rq.counters(), dict(rq.pages),
                   tuple(cleared), cq.cc & 0xFFFF_FFFF, rq.recovering, bytes(ring))

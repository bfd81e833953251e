"""How mlx5e reads its receive completion queue (SPEC: MLX5-CQ-*).

A model of ``mlx5e_poll_rx_cq`` and its helpers in
``drivers/net/ethernet/mellanox/mlx5/core/en_rx.c`` and ``wq.h`` (v6.17-rc3): the
ownership (or validity-byte) test that says whether the slot at the consumer counter
holds a new CQE, the NAPI budget, and CQE decompression in both layouts.  The output
of a poll is the list of 64-byte CQEs the RX handlers would be called with - for a
compressed session that is the per-RQ *title* copy, rewritten for each packet - plus
the ``cqe_compress_blks`` / ``cqe_compress_pkts`` counters.

The ring is a ``bytearray`` shared with the device model; like the driver, the model
writes to it (the owner byte of consumed slots after a basic session).
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from reference.errors import InvalidConfig, MalformedInput
from reference.mlx5 import cqe as C
from reference.trace import Trace, emit

Handler = Callable[[C.mlx5_cqe64], None]


@attrs.frozen
class RqParams:
    """The RQ state bits and sizes the CQ reader depends on."""

    log_cq_size: int
    enhanced: bool = False  # MLX5E_RQ_STATE_MINI_CQE_ENHANCED
    hw_stridx: bool = False  # MLX5E_RQ_STATE_MINI_CQE_HW_STRIDX
    striding: bool = False  # rq->wq_type == MLX5_WQ_TYPE_LINKED_LIST_STRIDING_RQ
    log_wq_size: int = 10

    def __attrs_post_init__(self) -> None:
        if not 1 <= self.log_cq_size <= 24:
            raise InvalidConfig(
                "CQ size 2**1..2**24", field="log_cq_size", value=self.log_cq_size,
                rule="MLX5-CQ-001",
            )
        if self.hw_stridx and not self.striding:
            raise InvalidConfig(
                "HW stride index implies a striding RQ", field="hw_stridx", value=True,
                rule="MLX5-CQ-007",
            )


@attrs.define
class Mlx5eCqDecomp:
    """``struct mlx5e_cq_decomp``: the decompression state kept in the RQ."""

    title: C.mlx5_cqe64 = attrs.field(factory=C.mlx5_cqe64)
    mini_arr: tuple[C.mlx5_mini_cqe8, ...] = ()
    left: int = 0
    wqe_counter: int = 0
    mini_arr_idx: int = 0
    last_cqe_title: bool = False


@attrs.frozen
class PollResult:
    """What one ``mlx5e_poll_rx_cq`` call did."""

    work_done: int
    cqes: tuple[C.mlx5_cqe64, ...]  # as handed to the RX handler, in order


@attrs.define
class Mlx5eRxCq:
    """The driver's view of one RX CQ: consumer counter, decompression state, counters."""

    params: RqParams
    cc: int = 0
    cqd: Mlx5eCqDecomp = attrs.field(factory=Mlx5eCqDecomp)
    cqe_compress_blks: int = 0
    cqe_compress_pkts: int = 0
    db_record: int = 0
    _out: list[C.mlx5_cqe64] = attrs.field(factory=list)
    _handler: Handler | None = None
    #: (offset, byte before) of each ring byte this poll rewrote, to undo a refused poll.
    _rewritten: list[tuple[int, int]] = attrs.field(factory=list)

    @property
    def size(self) -> int:
        return 1 << self.params.log_cq_size

    def stats(self) -> dict[str, int]:
        return {
            "cqe_compress_blks": self.cqe_compress_blks,
            "cqe_compress_pkts": self.cqe_compress_pkts,
        }

    # --- wq.h ----------------------------------------------------------------------------

    def _read(self, ring: bytearray, counter: int) -> C.mlx5_cqe64:
        """``mlx5e_read_cqe_slot``: slot ``counter & (size - 1)``."""
        ix = counter & (self.size - 1)
        return C.mlx5_cqe64.unpack(ring, ix * C.CQE_SIZE)

    def _wrap_cnt(self, counter: int) -> int:
        return counter >> self.params.log_cq_size

    def get_cqe(self, ring: bytearray) -> C.mlx5_cqe64 | None:
        """MLX5-CQ-001: ``mlx5_cqwq_get_cqe``: valid iff owner bit == lap parity."""
        cqe = self._read(ring, self.cc)
        if C.cqe_owner(cqe) != self._wrap_cnt(self.cc) & 1:
            return None
        return cqe

    def get_cqe_enhanced_comp(self, ring: bytearray) -> C.mlx5_cqe64 | None:
        """MLX5-CQ-002: valid iff the validity byte == lap count mod 256."""
        cqe = self._read(ring, self.cc)
        if cqe.validity_iteration_count != self._wrap_cnt(self.cc) & 0xFF:
            return None
        return cqe

    # --- the poll ------------------------------------------------------------------------

    def poll(
        self,
        ring: bytearray,
        budget: int,
        handler: Handler | None = None,
        trace: Trace | None = None,
    ) -> PollResult:
        """MLX5-CQ-003/004: one NAPI poll of at most ``budget`` packets.

        An impossible compressed CQE raises :class:`MalformedInput` (MLX5-CQ-011); the
        ring and this object are then as they were before the call.
        """
        if len(ring) != self.size * C.CQE_SIZE:
            raise InvalidConfig(
                "ring length must be CQ size * 64", field="ring", value=len(ring),
                rule="MLX5-CQ-001",
            )
        saved = attrs.evolve(self, cqd=attrs.evolve(self.cqd), out=[], rewritten=[])
        self._out, self._handler, self._rewritten = [], handler, []
        try:
            if self.params.enhanced:
                work = self._process_enhanced(ring, budget, trace)
            else:
                work = self._process_basic(ring, budget, trace)
        except MalformedInput:
            for offset, byte in reversed(self._rewritten):
                ring[offset] = byte
            for a in attrs.fields(type(self)):
                setattr(self, a.name, getattr(saved, a.name))
            raise
        out = tuple(self._out)
        self._out, self._handler = [], None
        if work:
            self.db_record = self.cc & 0xFFFFFF  # mlx5_cqwq_update_db_record
        emit(trace, "MLX5-CQ-003", "poll done", work_done=work, cc=self.cc)
        return PollResult(work, out)

    def _handle(self, cqe: C.mlx5_cqe64) -> None:
        self._out.append(cqe)
        if self._handler is not None:
            self._handler(cqe)

    # --- basic layout --------------------------------------------------------------------

    def _process_basic(self, ring: bytearray, budget_rem: int, trace: Trace | None) -> int:
        """``mlx5e_rx_cq_process_basic_cqe_comp`` (MLX5-CQ-003)."""
        work = 0
        if self.cqd.left:
            emit(trace, "MLX5-CQ-003", "resume session", left=self.cqd.left)
            work += self._decompress_cqes_cont(ring, 0, budget_rem)
        while work < budget_rem:
            cqe = self.get_cqe(ring)
            if cqe is None:
                emit(trace, "MLX5-CQ-001", "slot owned by hardware", cc=self.cc)
                break
            if C.mlx5_get_cqe_format(cqe) == C.MLX5_COMPRESSED:
                work += self._decompress_cqes_start(ring, budget_rem - work, trace)
                continue
            self.cc += 1
            self._handle(cqe)
            work += 1
        return work

    def _decompress_cqe(self, cqcc: int) -> None:
        """MLX5-CQ-005, MLX5-CQ-007: ``mlx5e_decompress_cqe`` rewrites the title."""
        cqd = self.cqd
        mini = cqd.mini_arr[cqd.mini_arr_idx]
        title = attrs.evolve(
            cqd.title,
            byte_cnt=mini.byte_cnt,
            check_sum=mini.checksum,
            op_own=(cqd.title.op_own & 0xF0) | (self._wrap_cnt(cqcc) & 1),
        )
        if self.params.hw_stridx:
            cqd.title = attrs.evolve(title, wqe_counter=mini.stridx)
            return
        cqd.title = attrs.evolve(title, wqe_counter=cqd.wqe_counter)
        if self.params.striding:
            cqd.wqe_counter = (cqd.wqe_counter + C.mpwrq_get_cqe_consumed_strides(title)) & 0xFFFF
        else:
            cqd.wqe_counter = (cqd.wqe_counter + 1) & ((1 << self.params.log_wq_size) - 1)

    def _decompress_cqe_no_hash(self, cqcc: int) -> None:
        """MLX5-CQ-006: as above, then the hash result and type are cleared."""
        self._decompress_cqe(cqcc)
        self.cqd.title = attrs.evolve(self.cqd.title, rss_hash_type=0, rss_hash_result=0)

    def _read_mini_arr_slot(self, ring: bytearray, cqcc: int) -> None:
        """MLX5-CQ-008: ``mlx5e_read_mini_arr_slot``."""
        ix = cqcc & (self.size - 1)
        self.cqd.mini_arr = C.unpack_mini_array(ring[ix * C.CQE_SIZE : (ix + 1) * C.CQE_SIZE])
        self.cqd.mini_arr_idx = 0

    def _cqes_update_owner(self, ring: bytearray, n: int) -> None:
        """MLX5-CQ-009: ``mlx5e_cqes_update_owner``: stamp consumed slots' op_own."""
        op_own = self._wrap_cnt(self.cc) & 1
        ci = self.cc & (self.size - 1)
        top = min(self.size, ci + n)
        for ix in range(ci, top):
            self._rewrite(ring, ix * C.CQE_SIZE + 63, op_own)
        n -= top - ci
        if top == self.size:
            for ix in range(n):
                self._rewrite(ring, ix * C.CQE_SIZE + 63, op_own ^ 1)

    def _rewrite(self, ring: bytearray, offset: int, byte: int) -> None:
        """The reader's only write to the ring, logged so a refused poll can undo it."""
        self._rewritten.append((offset, ring[offset]))
        ring[offset] = byte

    def _decompress_cqes_cont(
        self, ring: bytearray, update_owner_only: int, budget_rem: int
    ) -> int:
        """MLX5-CQ-003, MLX5-CQ-008..010: ``mlx5e_decompress_cqes_cont``."""
        cqd = self.cqd
        cqcc = self.cc + update_owner_only
        count = min(cqd.left, budget_rem)
        for _ in range(update_owner_only, count):
            if cqd.mini_arr_idx == C.MLX5_MINI_CQE_ARRAY_SIZE:
                self._read_mini_arr_slot(ring, cqcc)
            self._decompress_cqe_no_hash(cqcc)
            self._handle(cqd.title)
            cqd.mini_arr_idx += 1
            cqcc += 1
        self._cqes_update_owner(ring, cqcc - self.cc)
        self.cc = cqcc
        cqd.left -= count
        self.cqe_compress_pkts += count
        return count

    def _decompress_cqes_start(self, ring: bytearray, budget_rem: int, trace: Trace | None) -> int:
        """MLX5-CQ-005..010: ``mlx5e_decompress_cqes_start`` (title, then packet 0)."""
        title = self._read(ring, self.cc)
        left = title.byte_cnt
        if not 1 <= left <= self.size:
            raise MalformedInput(
                f"a compressed session must report 1..{self.size} CQEs",
                field="byte_cnt",
                offset=(self.cc & (self.size - 1)) * C.CQE_SIZE + 44,
                value=left,
                rule="MLX5-CQ-011",
            )
        cqd = self.cqd
        cqd.title, cqd.left, cqd.wqe_counter = title, left, title.wqe_counter
        self.cqe_compress_blks += 1
        emit(trace, "MLX5-CQ-010", "basic session starts", cc=self.cc, packets=left)
        self._read_mini_arr_slot(ring, self.cc + 1)
        self._decompress_cqe(self.cc)  # packet 0 keeps the hash (MLX5-CQ-006)
        self._handle(cqd.title)
        cqd.mini_arr_idx += 1
        return self._decompress_cqes_cont(ring, 1, budget_rem)

    # --- enhanced layout -----------------------------------------------------------------

    def _read_enhanced_title_slot(self, cqe: C.mlx5_cqe64) -> None:
        """MLX5-CQ-007: the last plain CQE becomes the title; the counter continues after it."""
        cqd = self.cqd
        cqd.title = cqe
        if self.params.hw_stridx:
            return
        if self.params.striding:
            cqd.wqe_counter = (
                C.mpwrq_get_cqe_stride_index(cqe) + C.mpwrq_get_cqe_consumed_strides(cqe)
            ) & 0xFFFF
        else:
            cqd.wqe_counter = (cqe.wqe_counter + 1) & ((1 << self.params.log_wq_size) - 1)

    def _decompress_enhanced_cqe(
        self, ring: bytearray, budget_rem: int, trace: Trace | None
    ) -> int:
        """MLX5-CQ-004, MLX5-CQ-006: ``mlx5e_decompress_enhanced_cqe``."""
        ix = self.cc & (self.size - 1)
        raw = ring[ix * C.CQE_SIZE : (ix + 1) * C.CQE_SIZE]
        left = C.get_cqe_enhanced_num_mini_cqes(C.mlx5_cqe64.unpack(raw))
        if left > C.MLX5_MINI_CQE_ARRAY_SIZE - 1:
            raise MalformedInput(
                "an enhanced compressed CQE holds at most 7 mini-CQEs",
                field="op_own",
                offset=ix * C.CQE_SIZE + 63,
                value=left,
                rule="MLX5-CQ-011",
            )
        if left > budget_rem:
            emit(trace, "MLX5-CQ-004", "session left whole for the next poll", packets=left)
            return budget_rem
        cqd = self.cqd
        cqd.mini_arr, cqd.mini_arr_idx = C.unpack_mini_array(raw), 0
        cqcc = self.cc
        for _ in range(left):
            self._decompress_cqe_no_hash(cqcc)
            self._handle(cqd.title)
            cqd.mini_arr_idx += 1
            cqcc += 1
        self.cc = cqcc
        self.cqe_compress_pkts += left
        return left

    def _process_enhanced(self, ring: bytearray, budget_rem: int, trace: Trace | None) -> int:
        """``mlx5e_rx_cq_process_enhanced_cqe_comp`` (MLX5-CQ-004, MLX5-CQ-010)."""
        cqd = self.cqd
        work = 0
        title_cqe: C.mlx5_cqe64 | None = None
        cqe = self.get_cqe_enhanced_comp(ring)
        if cqe is None:
            emit(trace, "MLX5-CQ-002", "validity byte of the last lap: not new", cc=self.cc)
            return 0
        if cqd.last_cqe_title and C.mlx5_get_cqe_format(cqe) == C.MLX5_COMPRESSED:
            self.cqe_compress_blks += 1
            cqd.last_cqe_title = False
        while True:
            if C.mlx5_get_cqe_format(cqe) == C.MLX5_COMPRESSED:
                if title_cqe is not None:
                    self._read_enhanced_title_slot(title_cqe)
                    title_cqe = None
                    self.cqe_compress_blks += 1
                work += self._decompress_enhanced_cqe(ring, budget_rem - work, trace)
            else:
                title_cqe = cqe
                self.cc += 1
                self._handle(cqe)
                work += 1
            if work >= budget_rem:
                break
            nxt = self.get_cqe_enhanced_comp(ring)
            if nxt is None:
                emit(trace, "MLX5-CQ-002", "validity byte of the last lap: not new", cc=self.cc)
                break
            cqe = nxt
        if title_cqe is not None:
            self._read_enhanced_title_slot(title_cqe)
            cqd.last_cqe_title = True
        return work


"""A ConnectX receive engine as the mlx5e driver expects it to behave (SPEC: MLX5-DEV-*,
MLX5-COMP-001..004).

Given Ethernet frames and a device configuration, :class:`Mlx5Device` decides what the
hardware writes: one logical 64-byte CQE per completion (:class:`Completion`), where the
frame bytes land in the receive buffers (:class:`Placement`), and - with CQE compression -
how runs of similar completions are packed into the completion ring (``write``).

Almost everything here is a *device-model assumption*: hardware behaviour inferred from
what ``drivers/net/ethernet/mellanox/mlx5/core/en_rx.c`` (v6.17-rc3) reads and how it
reads it.  The SPEC rules say for each which driver code the inference rests on.
"""

from __future__ import annotations

import enum
import functools
from collections import deque
from collections.abc import Callable

import attrs

from reference import checksum, rss
from reference.errors import InvalidConfig, MalformedInput
from reference.mlx5 import cqe as C
from reference.packet import ETH_HLEN, ETH_P_8021Q, L3, L4, VLAN_HLEN, PacketInfo, parse
from reference.trace import Trace, emit

NSEC_PER_SEC = 1_000_000_000
MAX_ENHANCED_MINI_CQES = 7  # MLX5-COMP-003: bytes 56..63 of the slot hold control fields
TCP_FLAG_ACK = 0x10


class RqType(enum.Enum):
    """``MLX5_WQ_TYPE_CYCLIC`` (legacy) or ``MLX5_WQ_TYPE_LINKED_LIST_STRIDING_RQ``."""

    CYCLIC = "cyclic"
    STRIDING = "striding"


class Compression(enum.Enum):
    """CQE compression: off, basic layout, or enhanced layout (MLX5-COMP-001)."""

    NONE = "none"
    BASIC = "basic"
    ENHANCED = "enhanced"


class TsFormat(enum.Enum):
    """How the device fills ``timestamp_h``/``timestamp_l`` (MLX5-DEV-007)."""

    FREE_RUNNING = "free_running"
    REAL_TIME = "real_time"


#: A CQE under construction: every field but the placement ones given (see ``_one``).
CqeBase = Callable[..., C.mlx5_cqe64]


def _bad(field: str, value: object, what: str) -> InvalidConfig:
    return InvalidConfig(what, field=field, value=value, rule="MLX5-DEV-001")


@attrs.frozen
class DeviceConfig:
    """What the RQ/CQ pair is programmed with (MLX5-DEV-001)."""

    rss: rss.RssConfig
    rxcsum: bool = True
    #: ``cqe_checksum_full`` capability: check_sum covers every byte after the Ethernet
    #: header (MLX5-DEV-014); the driver then sets MLX5E_RQ_STATE_CSUM_FULL.
    csum_full: bool = False
    vlan_strip: bool = False
    ts_format: TsFormat = TsFormat.FREE_RUNNING
    compression: Compression = Compression.NONE
    mini_cqe_format: int = C.MLX5_CQE_FORMAT_CSUM
    log_cq_size: int = 10
    rq_type: RqType = RqType.CYCLIC
    log_wq_size: int = 10
    log_stride_sz: int = 6
    log_num_strides: int = 9
    mtu: int = 1500
    qpn: int = 0
    max_session: int | None = None  # basic sessions; None: min(64, CQ size)

    def __attrs_post_init__(self) -> None:
        if not 1 <= self.log_cq_size <= 24:
            raise _bad("log_cq_size", self.log_cq_size, "CQ size must be 2**1 .. 2**24")
        if not 1 <= self.log_wq_size <= 16:
            raise _bad("log_wq_size", self.log_wq_size, "WQ size must be 2**1 .. 2**16")
        if not C.MLX5_MPWQE_LOG_STRIDE_SZ_BASE <= self.log_stride_sz <= 13:
            raise _bad("log_stride_sz", self.log_stride_sz, "stride size must be 2**6 .. 2**13")
        if not C.MLX5_MPWQE_LOG_NUM_STRIDES_EXT_BASE <= self.log_num_strides <= 15:
            raise _bad("log_num_strides", self.log_num_strides, "strides per WQE 2**3 .. 2**15")
        if self.mini_cqe_format not in (C.MLX5_CQE_FORMAT_CSUM, C.MLX5_CQE_FORMAT_CSUM_STRIDX):
            raise _bad("mini_cqe_format", self.mini_cqe_format, "mlx5e reads CSUM or CSUM_STRIDX")
        if (
            self.mini_cqe_format == C.MLX5_CQE_FORMAT_CSUM_STRIDX
            and self.rq_type is not RqType.STRIDING
        ):
            raise _bad("mini_cqe_format", self.mini_cqe_format, "CSUM_STRIDX needs a striding RQ")
        if not 68 <= self.mtu <= 9978:
            raise _bad("mtu", self.mtu, "MTU out of range")
        if self.max_session is not None and not 2 <= self.max_session <= self.cq_size:
            raise _bad("max_session", self.max_session, "a session needs 2..CQ-size slots")
        if not 0 <= self.qpn <= 0xFFFFFF:
            raise _bad("qpn", self.qpn, "a QPN is 24 bits")
        for flow_type in (rss.SCTP_V4_FLOW, rss.SCTP_V6_FLOW):
            if self.rss.fields_for(flow_type) & ~rss.TWO_TUPLE:
                raise _bad("rss", flow_type, "mlx5 hashes only TCP and UDP ports")

    @property
    def session_limit(self) -> int:
        """MLX5-COMP-001: the most packets one basic session reports."""
        return min(64, self.cq_size) if self.max_session is None else self.max_session

    @property
    def cq_size(self) -> int:
        return 1 << self.log_cq_size

    @property
    def wq_size(self) -> int:
        return 1 << self.log_wq_size

    @property
    def stride_sz(self) -> int:
        return 1 << self.log_stride_sz

    @property
    def num_strides(self) -> int:
        return 1 << self.log_num_strides

    @property
    def hw_stridx(self) -> bool:
        """``MLX5E_RQ_STATE_MINI_CQE_HW_STRIDX``: mini-CQEs carry the stride index."""
        return self.mini_cqe_format == C.MLX5_CQE_FORMAT_CSUM_STRIDX

    @property
    def max_frame(self) -> int:
        """MLX5-DEV-009: the longest frame a cyclic-RQ buffer takes (MTU + L2 + one tag)."""
        return self.mtu + ETH_HLEN + VLAN_HLEN


@attrs.frozen
class Placement:
    """Where a frame's bytes were written (MLX5-DEV-008, MLX5-DEV-010)."""

    frame: int
    wqe_index: int
    offset: int  # byte offset inside the WQE's buffer (stride index * stride size)
    data: bytes


@attrs.frozen
class Completion:
    """One logical completion, as the device would write it uncompressed.

    ``cqe`` has owner bit and validity byte 0; the ring writer fills them per lap.
    ``frame`` is the index of the frame it reports, or -1 for a filler CQE.
    """

    cqe: C.mlx5_cqe64
    frame: int
    error: bool = False
    filler: bool = False

    @property
    def compressible(self) -> bool:
        """MLX5-COMP-001: only successful packet completions go into sessions."""
        return not (self.error or self.filler)


#: The L3 header type the device reports for each parsed L3 (0 for any other).
_L3_HDR_TYPE = {
    L3.IPV4: C.MLX5_CQE_ROCE_L3_HEADER_TYPE_IPV4,
    L3.IPV6: C.MLX5_CQE_ROCE_L3_HEADER_TYPE_IPV6,
}
#: MLX5-DEV-002: the L4 selector of ``rss_hash_type`` per hashed L4 (NONE for any other).
_RSS_L4 = {L4.TCP: C.CQE_RSS_L4_TCP, L4.UDP: C.CQE_RSS_L4_UDP}


def _l3_type(info: PacketInfo | None) -> int:
    if info is None:
        return 0
    return _L3_HDR_TYPE.get(info.l3, 0)


def _l4_type(frame: bytes, info: PacketInfo | None) -> int:
    """MLX5-DEV-003: the CQE_L4_HDR_TYPE_* the device reports."""
    if info is None or info.is_fragment:
        return C.CQE_L4_HDR_TYPE_NONE
    if info.l4 is L4.UDP:
        return C.CQE_L4_HDR_TYPE_UDP
    if info.l4 is not L4.TCP:
        return C.CQE_L4_HDR_TYPE_NONE
    flags = frame[info.l4_offset + 13]
    if not flags & TCP_FLAG_ACK:
        return C.CQE_L4_HDR_TYPE_TCP_NO_ACK
    payload = info.ip_payload_end - info.l4_offset - info.l4_hdr_len
    return C.CQE_L4_HDR_TYPE_TCP_ACK_AND_DATA if payload > 0 else C.CQE_L4_HDR_TYPE_TCP_ACK_NO_DATA


def _hds_ip_ext(frame: bytes, info: PacketInfo | None) -> int:
    """MLX5-DEV-005: L2 always good; L3 good for a valid IPv4 header or any IPv6; L4 good
    for a TCP/UDP checksum that verifies."""
    bits = C.CQE_L2_OK
    if info is None or info.l3 is L3.NONE:
        return bits
    if info.l3 is L3.IPV6 or checksum.ip_fast_csum(
        frame[info.l3_offset : info.l3_offset + info.l3_hdr_len], info.l3_hdr_len // 4
    ) == 0:
        bits |= C.CQE_L3_OK
    if (
        not info.is_fragment
        and info.l4 in (L4.TCP, L4.UDP)
        and checksum.verify_l4_checksum(frame, info)
    ):
        bits |= C.CQE_L4_OK
    return bits


def _rss_fields(info: PacketInfo | None, config: rss.RssConfig) -> tuple[int, int]:
    """MLX5-DEV-002: ``(rss_hash_result, rss_hash_type)``; (0, 0) when nothing is hashed."""
    result = rss.rss_hash(info, config) if info is not None else None
    if result is None:
        return 0, 0
    ip = C.CQE_RSS_IPV4 if result.l3 is L3.IPV4 else C.CQE_RSS_IPV6
    l4 = _RSS_L4.get(result.l4 if result.l4 is not None else L4.NONE, C.CQE_RSS_L4_NONE)
    return result.hash, C.rss_hash_type_of(ip, l4)


def _timestamp(ts: int, fmt: TsFormat) -> tuple[int, int]:
    """MLX5-DEV-007: free-running: a 64-bit counter; real-time: seconds and nanoseconds."""
    if ts < 0:
        raise MalformedInput(
            "timestamps are >= 0", field="timestamp", value=ts, rule="MLX5-DEV-007"
        )
    if fmt is TsFormat.REAL_TIME:
        sec, nsec = divmod(ts, NSEC_PER_SEC)
        if sec > 0xFFFF_FFFF:
            raise MalformedInput(
                "seconds do not fit 32 bits", field="timestamp", value=ts, rule="MLX5-DEV-007"
            )
        return sec, nsec
    if ts > 0xFFFF_FFFF_FFFF_FFFF:
        raise MalformedInput(
            "not a 64-bit counter", field="timestamp", value=ts, rule="MLX5-DEV-007"
        )
    return ts >> 32, ts & 0xFFFF_FFFF


def _full_sum(data: bytes) -> int:
    """MLX5-DEV-014: with ``cqe_checksum_full``, the sum of everything after the 14-byte
    Ethernet header of the buffer as written (tags left in it, padding included)."""
    return checksum.csum_partial(data[14:]) & 0xFFFF


def _ip_sum(data: bytes, info: PacketInfo | None, shift: int) -> int:
    """MLX5-DEV-004: the un-complemented 16-bit one's-complement sum of the IP datagram.

    It starts at the IP header (after any tags left in the buffer) and stops at the end
    the IP length field gives, so padding is left out: the driver adds both back.
    """
    if info is None or info.l3 is L3.NONE:
        return 0
    start = info.l3_offset - shift
    end = min(info.ip_payload_end - shift, len(data))
    return checksum.csum_partial(data[start:end]) & 0xFFFF


@attrs.define
class Mlx5Device:
    """The device side of one RQ and its CQ (MLX5-DEV-*, MLX5-COMP-001..004)."""

    config: DeviceConfig
    pc: int = 0  # producer counter of the CQ (slots, free running)
    wqe_ctr: int = 0  # cyclic RQ: next WQE counter
    cur_wqe: int = 0  # striding RQ: current multi-packet WQE
    cur_stride: int = 0  # striding RQ: next free stride in it
    completions: list[Completion] = attrs.field(factory=list)
    placements: list[Placement] = attrs.field(factory=list)
    _units: deque[tuple[str, tuple[Completion, ...]]] = attrs.field(factory=deque)
    _frames: int = 0

    @property
    def frames_received(self) -> int:
        """Frames received so far: the number the next frame's completions will carry."""
        return self._frames

    # --- per frame -----------------------------------------------------------------------

    def receive(
        self,
        frames: list[bytes],
        timestamps: list[int] | None = None,
        trace: Trace | None = None,
    ) -> list[Completion]:
        """Turn frames into completions and queue them for the ring; returns the new ones."""
        if timestamps is not None and len(timestamps) != len(frames):
            raise MalformedInput(
                "one timestamp per frame", field="timestamps", value=len(timestamps),
                rule="MLX5-DEV-007",
            )
        new: list[Completion] = []
        for i, frame in enumerate(frames):
            ts = 0 if timestamps is None else timestamps[i]
            new.extend(self._one(bytes(frame), ts, trace))
        self.completions.extend(new)
        self._group(new, trace)
        return new

    def _one(self, frame: bytes, ts: int, trace: Trace | None) -> list[Completion]:
        cfg = self.config
        index = self._frames
        self._frames += 1
        try:
            info: PacketInfo | None = parse(frame)
        except MalformedInput:
            info = None  # the device still delivers it, with no L3/L4 facts
        data, shift, vlan_info, hdr = frame, 0, 0, 0
        if cfg.vlan_strip and info is not None and info.vlans and info.vlans[0].tpid == ETH_P_8021Q:
            # MLX5-DEV-006: strip the outer C-tag and report its TCI.
            data, shift, vlan_info, hdr = frame[:12] + frame[16:], VLAN_HLEN, info.vlans[0].tci, 1
            emit(trace, "MLX5-DEV-006", "stripped VLAN tag", frame=index, vlan_info=vlan_info)
        hash_result, hash_type = _rss_fields(info, cfg.rss)
        emit(trace, "MLX5-DEV-002", "RSS", frame=index, hash=hash_result, hash_type=hash_type)
        if cfg.csum_full:
            emit(trace, "MLX5-DEV-014", "check_sum covers all bytes after the Ethernet header",
                 frame=index)
        ts_h, ts_l = _timestamp(ts, cfg.ts_format)
        # The frame's CQE with everything but where its bytes went (the RQ type adds
        # wqe_id, wqe_counter and byte_cnt): each CQE is then built once, whole.
        base = functools.partial(
            C.mlx5_cqe64,
            rss_hash_result=hash_result,
            rss_hash_type=hash_type,
            check_sum=_full_sum(data) if cfg.csum_full else _ip_sum(data, info, shift),
            hds_ip_ext=_hds_ip_ext(frame, info),
            l4_l3_hdr_type=(_l4_type(frame, info) << 4) | (_l3_type(info) << 2) | hdr,
            vlan_info=vlan_info,
            timestamp_h=ts_h,
            timestamp_l=ts_l,
            sop_drop_qpn=cfg.qpn,
            op_own=C.MLX5_CQE_RESP_SEND << 4,
        )
        if cfg.rq_type is RqType.CYCLIC:
            return [self._cyclic(index, frame, data, base, trace)]
        return self._striding(index, data, base, trace)

    def _error(self, wqe_counter: int, wqe_id: int = 0, byte_cnt: int = 0) -> C.mlx5_cqe64:
        """MLX5-DEV-009/012: a RESP_ERR completion with syndrome LOCAL_LENGTH_ERR."""
        raw = bytearray(
            C.mlx5_err_cqe(
                syndrome=C.MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR,
                s_wqe_opcode_qpn=self.config.qpn,
                wqe_counter=wqe_counter,
                op_own=C.MLX5_CQE_RESP_ERR << 4,
            ).pack()
        )
        raw[2:4] = wqe_id.to_bytes(2, "big")
        raw[44:48] = byte_cnt.to_bytes(4, "big")
        return C.mlx5_cqe64.unpack(raw)

    def _cyclic(
        self, index: int, frame: bytes, data: bytes, base: CqeBase, trace: Trace | None
    ) -> Completion:
        cfg = self.config
        counter = self.wqe_ctr & 0xFFFF
        self.wqe_ctr = (self.wqe_ctr + 1) & 0xFFFF
        if len(frame) > cfg.max_frame:
            emit(trace, "MLX5-DEV-009", "frame longer than the buffer", frame=index, len=len(frame))
            return Completion(self._error(counter), index, error=True)
        self.placements.append(Placement(index, counter & (cfg.wq_size - 1), 0, data))
        emit(trace, "MLX5-DEV-008", "placed in WQE", frame=index, wqe_counter=counter)
        return Completion(base(byte_cnt=len(data), wqe_counter=counter), index)

    def _next_wqe(self) -> None:
        """A WQE whose strides are used up gives way to the next one (id + 1 modulo the WQ
        size), from stride 0 (MLX5-DEV-010)."""
        self.cur_wqe = (self.cur_wqe + 1) & (self.config.wq_size - 1)
        self.cur_stride = 0

    def _striding(
        self, index: int, data: bytes, base: CqeBase, trace: Trace | None
    ) -> list[Completion]:
        cfg = self.config
        out: list[Completion] = []
        need = max(1, -(-len(data) // cfg.stride_sz))
        left = cfg.num_strides - self.cur_stride
        if need > cfg.num_strides:
            # MLX5-DEV-012: larger than a whole WQE: an error CQE closes the current WQE.
            emit(trace, "MLX5-DEV-012", "frame larger than a WQE", frame=index, strides=need)
            err = self._error(self.cur_stride, self.cur_wqe, C.mpwrq_byte_cnt(0, left))
            self._next_wqe()
            return [Completion(err, index, error=True)]
        if need > left:
            # MLX5-DEV-011: the rest of the WQE cannot hold the packet: report it as filler.
            emit(trace, "MLX5-DEV-011", "filler CQE", wqe_id=self.cur_wqe, strides=left)
            filler = base(
                wqe_id=self.cur_wqe,
                wqe_counter=self.cur_stride,
                byte_cnt=C.mpwrq_byte_cnt(0, left, filler=True),
            )
            out.append(Completion(filler, -1, filler=True))
            self._next_wqe()
        cqe = base(
            wqe_id=self.cur_wqe,
            wqe_counter=self.cur_stride,
            byte_cnt=C.mpwrq_byte_cnt(len(data), need),
        )
        self.placements.append(
            Placement(index, self.cur_wqe, self.cur_stride * cfg.stride_sz, data)
        )
        emit(trace, "MLX5-DEV-010", "placed in strides", wqe_id=self.cur_wqe,
             stride=self.cur_stride, strides=need)
        out.append(Completion(cqe, index))
        self.cur_stride += need
        if self.cur_stride == cfg.num_strides:
            self._next_wqe()
        return out

    # --- compression ---------------------------------------------------------------------

    @staticmethod
    def title_key(cqe: C.mlx5_cqe64) -> C.mlx5_cqe64:
        """MLX5-COMP-001: the fields every packet of a session must share."""
        return attrs.evolve(cqe, byte_cnt=0, check_sum=0, wqe_counter=0)

    def _group(self, new: list[Completion], trace: Trace | None) -> None:
        """MLX5-COMP-001: cut the completions into ring units: single CQEs and sessions."""
        mode = self.config.compression
        if mode is Compression.NONE:  # every completion is a unit of its own
            self._units.extend(("single", (comp,)) for comp in new)
            return
        runs: list[list[Completion]] = []
        for comp in new:
            if (
                comp.compressible
                and runs
                and runs[-1][-1].compressible
                and self.title_key(runs[-1][-1].cqe) == self.title_key(comp.cqe)
            ):
                runs[-1].append(comp)
            else:
                runs.append([comp])
        for run in runs:
            if mode is Compression.BASIC:
                limit = self.config.session_limit
                for start in range(0, len(run), limit):
                    chunk = tuple(run[start : start + limit])
                    self._units.append(("basic" if len(chunk) > 1 else "single", chunk))
            elif mode is Compression.ENHANCED and len(run) > 1:
                self._units.append(("single", (run[0],)))
                rest = run[1:]
                for start in range(0, len(rest), MAX_ENHANCED_MINI_CQES):
                    self._units.append(
                        ("enhanced", tuple(rest[start : start + MAX_ENHANCED_MINI_CQES]))
                    )
            else:
                self._units.extend(("single", (comp,)) for comp in run)
            if len(run) > 1:
                emit(trace, "MLX5-COMP-001", "compressible run", length=len(run), mode=mode.value)

    @property
    def pending(self) -> int:
        """Completions queued but not yet written to the ring."""
        return sum(len(unit) for _, unit in self._units)

    # --- the ring ------------------------------------------------------------------------

    def _owner(self, counter: int) -> int:
        return (counter >> self.config.log_cq_size) & 1

    def _validity(self, counter: int) -> int:
        return (counter >> self.config.log_cq_size) & 0xFF

    def _slot(self, ring: bytearray, counter: int, raw: bytes) -> None:
        ix = counter & (self.config.cq_size - 1)
        ring[ix * C.CQE_SIZE : (ix + 1) * C.CQE_SIZE] = raw

    def _stamp(self, cqe: C.mlx5_cqe64, counter: int, fmt: int = 0) -> bytes:
        """MLX5-DEV-013: owner bit = lap parity; enhanced mode also writes the validity byte."""
        op_own = (cqe.op_own & 0xF0) | (fmt << 2) | self._owner(counter)
        signature = (
            self._validity(counter)
            if self.config.compression is Compression.ENHANCED
            else cqe.signature
        )
        # Bytes 62 and 63 of the packed CQE (MLX5-CQE-001): signature, op_own.
        return cqe.pack()[:62] + bytes((signature, op_own))

    def _mini(self, comp: Completion) -> C.mlx5_mini_cqe8:
        """MLX5-COMP-004: the per-packet fields a mini-CQE carries."""
        stridx = comp.cqe.wqe_counter if self.config.hw_stridx else 0
        return C.mlx5_mini_cqe8.from_csum(comp.cqe.check_sum, stridx, comp.cqe.byte_cnt)

    def write(self, ring: bytearray, cc: int, trace: Trace | None = None) -> int:
        """Write queued units while they fit before the consumer (MLX5-DEV-013).

        ``cc`` is the driver's consumer counter: the device never writes a slot the
        driver has not consumed yet.  Returns the number of slots advanced.
        """
        cfg = self.config
        start = self.pc
        while self._units:
            kind, unit = self._units[0]
            if self.pc + len(unit) - cc > cfg.cq_size:
                break
            self._units.popleft()
            if kind == "single":
                self._slot(ring, self.pc, self._stamp(unit[0].cqe, self.pc))
            elif kind == "basic":
                self._write_basic(ring, unit, trace)
            else:
                self._write_enhanced(ring, unit, trace)
            self.pc += len(unit)
        return self.pc - start

    def _write_basic(
        self, ring: bytearray, unit: tuple[Completion, ...], trace: Trace | None
    ) -> None:
        """MLX5-COMP-002: title at pc, mini arrays at pc+1, pc+8, pc+16, ..."""
        n = len(unit)
        title = attrs.evolve(unit[0].cqe, byte_cnt=n)
        self._slot(ring, self.pc, self._stamp(title, self.pc, C.MLX5_COMPRESSED))
        for j in range(0, -(-n // C.MLX5_MINI_CQE_ARRAY_SIZE)):
            chunk = unit[j * 8 : j * 8 + 8]
            raw = b"".join(self._mini(c).pack() for c in chunk).ljust(C.CQE_SIZE, b"\0")
            self._slot(ring, self.pc + (1 if j == 0 else 8 * j), raw)
        emit(trace, "MLX5-COMP-002", "basic session", at=self.pc, packets=n)

    def _write_enhanced(
        self, ring: bytearray, unit: tuple[Completion, ...], trace: Trace | None
    ) -> None:
        """MLX5-COMP-003: one slot of up to seven mini-CQEs; opcode nibble = count - 1."""
        n = len(unit)
        raw = bytearray(b"".join(self._mini(c).pack() for c in unit).ljust(C.CQE_SIZE, b"\0"))
        raw[62] = self._validity(self.pc)
        raw[63] = ((n - 1) << 4) | (C.MLX5_COMPRESSED << 2) | self._owner(self.pc)
        self._slot(ring, self.pc, bytes(raw))
        emit(trace, "MLX5-COMP-003", "enhanced compressed CQE", at=self.pc, packets=n)


def new_ring(log_cq_size: int, start: int = 0) -> bytearray:
    """MLX5-DEV-013: an empty CQ whose every slot reads as hardware-owned.

    Each slot gets the owner bit and validity byte opposite to those of the lap in which
    a consumer starting at ``start`` will next reach it, and opcode ``MLX5_CQE_INVALID``.
    The slots from ``start``'s index to the ring's end are next reached in ``start``'s
    lap, those before it one lap later.  Bytes 62 and 63 of each slot are written as two
    strided runs, so a 2**24-slot CQ (1 GiB) is built without a Python loop.
    """
    size = 1 << log_cq_size
    if not start >= 0:
        raise InvalidConfig("counters start >= 0", field="start", value=start, rule="MLX5-DEV-013")
    ring = bytearray(size * C.CQE_SIZE)
    first = start & (size - 1)
    lap = start >> log_cq_size
    for laps_ahead, slots in ((1, range(first)), (0, range(first, size))):
        signature, op_own = _empty_tail(lap + laps_ahead)
        begin, end = slots.start * C.CQE_SIZE, slots.stop * C.CQE_SIZE
        ring[begin + 62 : end : C.CQE_SIZE] = bytes((signature,)) * len(slots)
        ring[begin + 63 : end : C.CQE_SIZE] = bytes((op_own,)) * len(slots)
    return ring


def _empty_tail(lap: int) -> tuple[int, int]:
    """MLX5-DEV-013: bytes 62 and 63 (validity byte, op_own) of a slot the consumer
    reaches in ``lap`` that must read as not new: the previous lap's validity count and
    the opposite owner bit."""
    return (lap - 1) & 0xFF, (C.MLX5_CQE_INVALID << 4) | ((lap & 1) ^ 1)

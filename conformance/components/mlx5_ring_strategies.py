"""Hypothesis strategies that write mlx5 completion rings byte by byte (MLX5-RING-*).

Unlike the frame scenarios, nothing here goes through the device model: each slot is
drawn as the driver could find it.  Success CQEs with every ``rss_hash_type`` byte,
every L3/L4 header type, checksum-OK bit, VLAN bit and tunneled bit, random checksums, timestamps,
marks and LRO bytes (with ``lro_num_seg`` 0 or 1, MLX5-RING-003); error CQEs with every
opcode but RESP_SEND and any syndrome; striding fillers; basic sessions (title plus mini
arrays, unused mini entries and the slots between arrays full of garbage) and enhanced
compressed CQEs, also one with no title before it (the reader then decompresses onto its
zeroed title and counter: opcode 0, an error CQE, MLX5-CQ-007); and after the written
slots, slots one lap old (stale owner bit or validity byte).  Byte counts stay within the
buffers they name, so the reference answers every ring drawn (MLX5-RING-003 refusals are
tested apart).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Raw

from conformance.components.mlx5_ring import ring_events
from conformance.scenario import Scenario
from reference.mlx5 import cqe as C

_ETH = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
#: Buffer contents: frames of each L3/L4 kind the checksum and hash code tell apart.
_FRAMES = tuple(bytes(f) for f in (
    _ETH / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=1, dport=2) / Raw(b"u" * 40),
    _ETH / IP(src="10.0.0.1", dst="10.0.0.2") / TCP(sport=1, dport=2, flags="A") / Raw(b"t" * 9),
    _ETH / IPv6(src="fd00::1", dst="fd00::2") / UDP(sport=3, dport=4) / Raw(b"6" * 30),
    _ETH / Dot1Q(vlan=5) / IP(src="10.0.0.3", dst="10.0.0.4") / UDP() / Raw(b"v" * 12),
    _ETH / IP(src="10.0.0.1", dst="10.0.0.2", frag=8) / Raw(b"f" * 24),
))
RESP_SEND = C.MLX5_CQE_RESP_SEND << 4
_ERR_OPCODES = tuple(op for op in range(16) if op != C.MLX5_CQE_RESP_SEND)
_SYNDROMES = tuple(getattr(C, name) for name in dir(C) if name.startswith("MLX5_CQE_SYNDROME_"))
_RECOVER_SYNDROMES = tuple(s for s in _SYNDROMES if C.cqe_syndrome_needs_recover(s))


def _u(draw: st.DrawFn, bits: int) -> int:
    return draw(st.integers(0, (1 << bits) - 1))


def _fields(draw: st.DrawFn) -> dict[str, Any]:
    """The per-packet metadata of a success CQE, every encoding allowed."""
    return {
        "rss_hash_result": _u(draw, 32),
        "rss_hash_type": _u(draw, 8),  # all 16 IP/L4 encodings, and the unread bits
        "l4_l3_hdr_type": _u(draw, 7),  # VLAN bit, L3 type 0..3, L4 type 0..7
        "hds_ip_ext": _u(draw, 8),  # L2/L3/L4 OK bits and the rest
        "check_sum": _u(draw, 16),
        "vlan_info": _u(draw, 16),
        "timestamp_h": _u(draw, 32),
        "timestamp_l": _u(draw, 32),
        "sop_drop_qpn": _u(draw, 32),
        "flags_rqpn": _u(draw, 32),
        "srqn": (draw(st.integers(0, 1)) << 24) | _u(draw, 24),  # lro_num_seg 0 or 1
        # MLX5-CSUM-010: bit 0 is cqe_is_tunneled (an inner-level CHECKSUM_UNNECESSARY);
        # bits 3-4 (kTLS offload) stay 0, a kind of CQE the model refuses (MLX5-RING-003).
        "tls_outer_l3_tunneled": _u(draw, 3) | (_u(draw, 3) << 5),
        "tcppsh_abort_dupack": _u(draw, 8), "min_ttl": _u(draw, 8),  # LRO bytes: unread
        "tcp_win": _u(draw, 16), "ack_seq_num": _u(draw, 32),
    }


def ring_scenarios() -> st.SearchStrategy[Scenario]:
    """Ring images the reference answers: a striding session whose strides run past
    its WQE (MLX5-RING-003) is drawn again."""
    return _ring_scenarios().filter(_answered)


def _answered(scenario: Scenario) -> bool:
    from conformance.components import mlx5
    from reference.errors import MalformedInput

    try:
        mlx5.run(scenario)
    except MalformedInput:
        return False
    return True


@st.composite
def _ring_scenarios(draw: st.DrawFn) -> Scenario:
    """A ring image, its buffers and a driver config (MLX5-RING-001)."""
    striding = draw(st.booleans())
    compression = draw(st.sampled_from(["none", "basic", "enhanced"]))
    log_cq = draw(st.integers(2, 5))
    size = 1 << log_cq
    log_wq, log_strides = draw(st.integers(2, 4)), draw(st.integers(3, 5))
    hw_stridx = striding and draw(st.booleans())
    lap = draw(st.sampled_from([0, 1, 2, 255, 256, 0xFFFF]))
    cc = lap * size + draw(st.integers(0, size - 1))
    config: dict[str, Any] = {
        "rq_type": "striding" if striding else "cyclic", "compression": compression,
        "mini_cqe_format": 3 if hw_stridx else 1, "log_wq_size": log_wq,
        "log_num_strides": log_strides, "log_stride_sz": 6, "rx_path": True,
        "rx_linear": draw(st.booleans()), "frag_size": draw(st.sampled_from([128, 1024])),
        "rxhash": draw(st.integers(0, 5)) > 0, "rxcsum": draw(st.integers(0, 5)) > 0,
        "hwtstamp": draw(st.sampled_from(["none", "all"])),
        "ts_format": draw(st.sampled_from(["free_running", "real_time"])),
        "budget": draw(st.sampled_from([1, 2, 7, 8, 64])),
    }
    if striding and config["rx_linear"] and draw(st.integers(0, 3)) > 0:
        # MLX5-RX-002: an MTU below the lengths drawn, so a linear striding RQ meets CQEs
        # longer than hw_mtu (dropped as oversize before a byte is read).
        config["mtu"] = 100
    max_len = 1 << (log_strides + 6) if striding else 1522

    def length() -> int:
        # At least an Ethernet header: a shorter skb is refused (MLX5-SKB-005).
        if config.get("mtu") == 100 and draw(st.booleans()):
            return draw(st.integers(123, 200))  # above hw_mtu (MLX5-RX-002)
        return draw(st.integers(14, min(max_len, 200) if striding else 1522))

    def success(counter: int) -> C.mlx5_cqe64:
        n = length()
        if striding:
            return C.mlx5_cqe64(wqe_id=_u(draw, log_wq), wqe_counter=0,
                                byte_cnt=C.mpwrq_byte_cnt(n, max(1, -(-n // 64))),
                                op_own=RESP_SEND, **_fields(draw))
        return C.mlx5_cqe64(wqe_counter=_u(draw, 16), byte_cnt=n, op_own=RESP_SEND,
                            **_fields(draw))

    def mini() -> bytes:
        n = draw(st.integers(14, 60)) if striding else length()
        bc = C.mpwrq_byte_cnt(n, 1) if striding else n
        return C.mlx5_mini_cqe8.from_csum(_u(draw, 16), draw(st.integers(0, 1)), bc).pack()

    def stamp(raw: bytes, counter: int, fmt: int = 0) -> bytes:
        own = (counter >> log_cq) & 1
        validity = (counter >> log_cq) & 0xFF if compression == "enhanced" else raw[62]
        return raw[:62] + bytes((validity, (raw[63] & 0xF0) | (fmt << 2) | own))

    slots: dict[int, bytes] = {}
    c, end = cc, cc + draw(st.integers(0, size))
    while c < end:
        kind = draw(st.sampled_from(["ok", "ok", "ok", "err", "filler", "session"]))
        first = c == cc and compression == "enhanced" and draw(st.booleans())
        if first:
            # An enhanced session with no title before it, read onto the RQ's zeroed
            # decompression state (MLX5-CQ-007) by a first poll whose budget takes it
            # whole: half the rings of this layout.
            kind = "session"
        if kind == "session" and compression == "enhanced":
            n = draw(st.integers(1, min(7, config["budget"]) if first else 7))
            raw = b"".join(mini() for _ in range(n)).ljust(56, b"\0") + bytes(8)
            slots[c] = stamp(raw[:63] + bytes(((n - 1) << 4,)), c, C.MLX5_COMPRESSED)
            c += 1
            continue
        if kind == "session" and end - c >= 2:
            n = draw(st.integers(1, end - c))
            title = bytearray(success(c).pack())
            title[44:48] = n.to_bytes(4, "big")  # byte_cnt: the session's packet count
            slots[c] = stamp(bytes(title), c, C.MLX5_COMPRESSED)
            for j in range(1, n):  # mini arrays at +1, +8, +16; the rest garbage
                slots[c + j] = (b"".join(mini() for _ in range(8)) if j == 1 or j % 8 == 0
                                else draw(st.binary(min_size=64, max_size=64)))
            c += n
            continue
        if kind == "err":
            # MLX5-CQE-009: the three syndromes that start RQ recovery, the other named
            # ones and any byte, a third each.
            syndrome = draw(st.sampled_from(_RECOVER_SYNDROMES) | st.sampled_from(_SYNDROMES)
                            | st.integers(0, 255))
            err = C.mlx5_err_cqe(syndrome=syndrome, vendor_err_synd=_u(draw, 8),
                                 wqe_counter=_u(draw, 16) if not striding else 0,
                                 op_own=draw(st.sampled_from(_ERR_OPCODES)) << 4).pack()
            slots[c] = stamp(err, c)
        elif kind == "filler" and striding:
            filler = C.mlx5_cqe64(wqe_id=_u(draw, log_wq),
                                  byte_cnt=C.mpwrq_byte_cnt(0, _u(draw, 3), filler=True),
                                  op_own=RESP_SEND)
            slots[c] = stamp(filler.pack(), c)
        else:
            slots[c] = stamp(success(c).pack(), c)
        c += 1
    ring: list[bytes] = []
    for ix in range(size):
        counter = cc + ((ix - cc) % size)
        written = slots.get(counter)
        # Not written this lap: a CQE one lap old (the previous lap's owner bit and
        # validity byte), which the reader must not take for a new one (MLX5-CQ-001/002).
        ring.append(written if written is not None
                    else stamp(success(counter).pack(), counter - size))
    buffers = {w: draw(st.sampled_from(_FRAMES)) * (1 + (max_len // 60 if striding else 0))
               for w in range(1 << log_wq) if draw(st.integers(0, 3))}
    program = None
    if draw(st.booleans()):
        program = ({"op": "kfunc", "name": "rx_hash"},
                   {"op": "kfunc", "name": draw(st.sampled_from(["rx_vlan_tag",
                                                                 "rx_timestamp"]))},
                   {"op": "return", "action": draw(st.sampled_from([1, 2, 2, 3]))})
    return Scenario("mlx5", config=config, events=ring_events(ring, cc, buffers),
                    program=program, rules=("MLX5-RING-001", "MLX5-RING-005",
                                            "MLX5-RING-006"))


def write_scenarios() -> st.SearchStrategy[Scenario]:
    """The frame scenarios of the CQ property, asked of the device side alone: the ring
    it writes before the first poll (MLX5-RING-004)."""
    import attrs

    from conformance.components.mlx5 import cq_scenarios
    from conformance.components.mlx5_ring import WRITE_OP

    return cq_scenarios().map(lambda s: attrs.evolve(s, events=({"op": WRITE_OP},),
                                                     rules=("MLX5-RING-004",)))

"""The ``mlx5`` component's ring-image form: the driver side alone (MLX5-RING-*).

A scenario whose ``events`` hold one ``{"op": "ring", ...}`` event is a ring image: the
CQ slots as the device left them and the driver's consumer counter, plus ``{"op":
"buffer", "wqe": N, "data": hex}`` events for the receive buffers the CQEs point at.
``frames`` are unused; ``config`` holds the driver's settings (the device keys have no
effect).  The frame form is the same driver run after the modelled device wrote the ring
(MLX5-RING-004).

events:  ``ring``: ``slots`` (list of 2**n hex strings of 64 bytes, n = 1..16, slot i
         first), ``cc`` (the consumer counter, u32, default 0).  ``buffer``: ``wqe`` (cyclic:
         the WQ index ``wqe_counter & (wq_size - 1)``; striding: ``wqe_id``) and ``data``
         (hex, the buffer from its first byte; a striding WQE from stride 0).
observables: as the frame form with the RX handlers running (``packets``, ``polls``,
         ``stats``, ``xdp``, ``counters``, ``pages``; ``xdp[i].frame`` is the handler call
         ``i``), plus ``cc`` (the consumer counter after the last poll) and ``recovering``
         (``MLX5E_RQ_STATE_RECOVERING`` was set by an error CQE, MLX5-CQE-009).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from conformance.scenario import Scenario
from reference.errors import InvalidConfig
from reference.mlx5 import cqe as C
from reference.mlx5.cq import RqParams
from reference.mlx5.device import Compression, RqType
from reference.mlx5.ring import RingImage, RingRun, RxBuffers, replay
from reference.trace import Trace, emit

RING_OP, BUFFER_OP, WRITE_OP = "ring", "buffer", "write"
#: MLX5-RING-001: what the driver side of a ring-image scenario needs from a target.
DRIVER = frozenset({"driver"})
#: MLX5-RING-004: what the device side of a write scenario needs.
DEVICE = frozenset({"device"})


def is_ring(scenario: Scenario) -> bool:
    """A scenario is in the ring-image form when one of its events is the ring."""
    return any(e.get("op") == RING_OP for e in scenario.events)


def is_write(scenario: Scenario) -> bool:
    """A frame scenario with a ``write`` event asks the device side alone for its ring."""
    return any(e.get("op") == WRITE_OP for e in scenario.events)


def device_write(scenario: Scenario, trace: Trace | None = None) -> dict[str, Any]:
    """MLX5-RING-004: the device side alone: the frames are received and every unit that
    fits is written into an empty CQ whose consumer stands at ``start``, before any poll.
    The answer is a ring image (``slots``, ``pc``) plus ``placements`` (where each frame's
    bytes went) and ``pending`` (completions that did not fit): with the placements as
    buffers, what the driver side replays (MLX5-RING-001)."""
    from conformance.components.mlx5 import config_of
    from reference.mlx5.device import Mlx5Device, new_ring

    cfg = config_of(scenario)
    start = int(scenario.config.get("start", 0))
    device = Mlx5Device(cfg, pc=start)
    stamps = scenario.config.get("timestamps")
    device.receive(list(scenario.frames), None if stamps is None else [int(t) for t in stamps],
                   trace)
    ring = new_ring(cfg.log_cq_size, start)
    device.write(ring, start, trace)
    emit(trace, "MLX5-RING-004", "device side alone: ring written", pc=device.pc,
         pending=device.pending)
    return {
        "slots": [ring[i * C.CQE_SIZE : (i + 1) * C.CQE_SIZE].hex() for i in range(cfg.cq_size)],
        "pc": device.pc,
        "pending": device.pending,
        "placements": [{"frame": p.frame, "wqe": p.wqe_index, "offset": p.offset,
                        "data": p.data.hex()} for p in device.placements],
    }


def image_of(scenario: Scenario) -> tuple[RingImage, RxBuffers]:
    """MLX5-RING-001/002: the ring and the buffers the events describe."""
    rings = [e for e in scenario.events if e.get("op") == RING_OP]
    if len(rings) != 1:
        raise InvalidConfig("a ring-image scenario has exactly one ring event", field="events",
                            value=len(rings), rule="MLX5-RING-001")
    ring = rings[0]
    image = RingImage.from_slots([bytes.fromhex(str(s)) for s in ring.get("slots", [])],
                                 int(ring.get("cc", 0)))
    wqes: dict[int, bytes] = {}
    for e in scenario.events:
        if e.get("op") == BUFFER_OP:
            wqe = int(e["wqe"])
            if wqe in wqes:
                raise InvalidConfig("one buffer event per WQE", field="events", value=wqe,
                                    rule="MLX5-RING-002")
            wqes[wqe] = bytes.fromhex(str(e["data"]))
    return image, RxBuffers(wqes)


def params_of(scenario: Scenario, image: RingImage) -> RqParams:
    """MLX5-RING-001: the reader's state bits from the driver config; the CQ size from
    the image (a ``log_cq_size`` in the config must agree)."""
    cfg = scenario.config
    if "log_cq_size" in cfg and int(cfg["log_cq_size"]) != image.log_cq_size:
        raise InvalidConfig(f"the ring image has 2**{image.log_cq_size} slots",
                            field="log_cq_size", value=cfg["log_cq_size"], rule="MLX5-RING-001")
    striding = str(cfg.get("rq_type", "cyclic")) == RqType.STRIDING.value
    return RqParams(
        log_cq_size=image.log_cq_size,
        enhanced=str(cfg.get("compression", "none")) == Compression.ENHANCED.value,
        hw_stridx=int(cfg.get("mini_cqe_format", C.MLX5_CQE_FORMAT_CSUM))
        == C.MLX5_CQE_FORMAT_CSUM_STRIDX,
        striding=striding,
        log_wq_size=int(cfg.get("log_wq_size", 10)),
    )


def ring_run(scenario: Scenario, trace: Trace | None = None) -> RingRun:
    """MLX5-RING-001: replay the image through the driver."""
    from conformance.components.mlx5 import has_program, rq_config_of

    image, buffers = image_of(scenario)
    return replay(image, buffers, params_of(scenario, image), rq_config_of(scenario),
                  scenario.program_for, int(scenario.config.get("budget", 64)),
                  log_num_strides=int(scenario.config.get("log_num_strides", 9)),
                  xdp_prog=has_program(scenario), trace=trace)


_RECORD_KEYS = ("kind", "frame", "mxbuf", "ops", "verdict", "exception", "fate", "skb")


def run(scenario: Scenario, trace: Trace | None = None) -> dict[str, Any]:
    from conformance.components.mlx5 import cqe_obs

    r = ring_run(scenario, trace)
    return {
        "packets": [cqe_obs(c) for p in r.polls for c in p.cqes],
        "polls": [p.work_done for p in r.polls],
        "stats": dict(r.stats),
        "xdp": [{k: rec[k] for k in _RECORD_KEYS} for rec in r.records],
        "counters": dict(r.counters),
        "pages": dict(r.pages),
        "cc": r.cc,
        "recovering": r.recovering,
    }


def ring_events(slots: Sequence[bytes], cc: int,
                buffers: Mapping[int, bytes]) -> tuple[dict[str, Any], ...]:
    """The events of a ring-image scenario (strategies, the capture loader, fixtures)."""
    return ({"op": RING_OP, "cc": cc, "slots": [bytes(s).hex() for s in slots]},
            *({"op": BUFFER_OP, "wqe": w, "data": bytes(d).hex()}
              for w, d in sorted(buffers.items())))


def from_frame_scenario(scenario: Scenario) -> Scenario:
    """MLX5-RING-004: the ring-image scenario of a frame scenario whose completions all fit
    the CQ at once: the ring the modelled device writes before the first poll, and the
    buffers as it filled them.  Its replay gives the frame scenario's observables."""
    from conformance.components.mlx5 import config_of
    from reference.mlx5.device import Mlx5Device, new_ring

    cfg = config_of(scenario)
    start = int(scenario.config.get("start", 0))
    device = Mlx5Device(cfg, pc=start)
    stamps = scenario.config.get("timestamps")
    completions = device.receive(list(scenario.frames),
                                 None if stamps is None else [int(t) for t in stamps])
    # per_packet_programs count frames there, handler calls here (fillers are calls).
    per_call = {i: scenario.per_packet_programs[c.frame] for i, c in enumerate(completions)
                if c.frame in scenario.per_packet_programs}
    ring = new_ring(cfg.log_cq_size, start)
    device.write(ring, start)
    if device.pending:
        raise InvalidConfig("the completions do not fit the CQ at once", field="frames",
                            value=len(scenario.frames), rule="MLX5-RING-004")
    buffers: dict[int, bytearray] = {}
    for p in device.placements:
        buf = buffers.setdefault(p.wqe_index, bytearray())
        end = p.offset + len(p.data)
        if p.offset < len(buf) or (cfg.rq_type is RqType.CYCLIC and buf):
            raise InvalidConfig("the device reused a receive buffer", field="frames",
                                value=p.frame, rule="MLX5-RING-004")
        if len(buf) < end:
            buf.extend(bytes(end - len(buf)))
        buf[p.offset : end] = p.data
    slots = [bytes(ring[i * C.CQE_SIZE : (i + 1) * C.CQE_SIZE]) for i in range(cfg.cq_size)]
    config = {k: v for k, v in scenario.config.items() if k not in ("timestamps", "start")}
    return attrs.evolve(scenario, frames=(), config=config, per_packet_programs=per_call,
                        events=ring_events(slots, start, {k: bytes(v)
                                                          for k, v in buffers.items()}))


_FORMATS = {0: "plain", 1: "inline32", 2: "inline64", 3: "compressed"}


def explain_ring(scenario: Scenario, most: int = 64) -> list[str]:
    """The headline and the slots from ``cc`` on as the reader will meet them: owner bit
    (validity byte with enhanced compression), format and opcode (MLX5-CQE-003)."""
    image, buffers = image_of(scenario)
    params = params_of(scenario, image)
    size = 1 << image.log_cq_size
    lap = image.cc >> image.log_cq_size
    cfg = scenario.config
    lines = [f"mlx5 ring image: {size} slots, cc {image.cc} (lap {lap}, slot "
             f"{image.cc & (size - 1)}), {len(buffers.wqes)} buffer(s); RQ "
             f"{cfg.get('rq_type', 'cyclic')}, {'enhanced' if params.enhanced else 'basic'} "
             f"reader, XDP program "
             f"{'attached' if scenario.program or scenario.per_packet_programs else 'none'}"
             " (MLX5-RING-001)"]
    for k in range(min(size, most)):
        counter = image.cc + k
        raw = image.slot(counter & (size - 1))
        op_own, lap_k = raw[63], counter >> image.log_cq_size
        new = (raw[62] == lap_k & 0xFF) if params.enhanced else ((op_own & 1) == lap_k & 1)
        mark = f"validity {raw[62]}" if params.enhanced else f"owner {op_own & 1}"
        lines.append(f"  slot {counter & (size - 1)} (counter {counter}): {mark} -> "
                     f"{'new' if new else 'not new'}; format "
                     f"{_FORMATS[(op_own >> 2) & 3]}, opcode {op_own >> 4}")
    if size > most:
        lines.append(f"  ... {size - most} more slots")
    return lines

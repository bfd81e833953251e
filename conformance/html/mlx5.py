"""The mlx5 CQ ring: title CQEs, mini-CQE arrays, owner bits, before and after the poll.

Two snapshots of the same ring, read from the reference's own objects:

1. after the device's first write (MLX5-DEV-013), before the driver polls: which slot
   holds a plain CQE, a basic session's title and mini arrays at +1, +8, +16 ...
   (MLX5-COMP-002), an enhanced compressed CQE (MLX5-COMP-003), and which slots are still
   hardware-owned (opcode ``MLX5_CQE_INVALID``, the previous lap's owner bit);
2. the ring image :func:`reference.mlx5.sim.run` returns once the driver drained it, so the
   reader sees what the consumer rewrote (MLX5-CQ-009).

The layout of each session comes from the device's queued units (what ``_group`` cut,
MLX5-COMP-001), the bits from the ring bytes it wrote.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from conformance.components import mlx5 as component
from conformance.html.svg import Figure, Svg
from conformance.scenario import Scenario
from reference.mlx5 import cqe as C
from reference.mlx5 import sim
from reference.mlx5.device import Completion, Mlx5Device, new_ring

COLS = 16
CELL_W, CELL_H = 58, 44
MAX_SLOTS = 96  # slots drawn; a bigger ring's rest is summarised


@attrs.frozen
class Slot:
    kind: str  # sw (plain CQE), title, mini, enhanced, covered, hw
    label: str
    tip: str


def _frames(unit: Sequence[Completion]) -> str:
    return ",".join(str(c.frame) for c in unit)


def layout(device: Mlx5Device, first: int, last: int) -> dict[int, Slot]:
    """Counter -> what the device put there, for the units written in ``first..last``."""
    out: dict[int, Slot] = {}
    counter = first
    units = list(device._units)  # read only: the units still queued, in ring order
    for kind, unit in units:
        if counter >= last:
            break
        n = len(unit)
        if kind == "single":
            c = unit[0]
            what = "filler" if c.filler else "error CQE" if c.error else "CQE"
            out[counter] = Slot("sw", f"f{c.frame}", f"{what} of frame {c.frame}: byte_cnt "
                                f"{c.cqe.byte_cnt}, wqe_counter {c.cqe.wqe_counter}")
        elif kind == "basic":
            out[counter] = Slot("title", f"T×{n}", f"title CQE of a basic session of {n} "
                                f"packets (frames {_frames(unit)}); byte_cnt = {n}")
            for k in range(1, n):
                out[counter + k] = Slot("covered", "", "spanned by the session, not written")
            for j in range(-(-n // C.MLX5_MINI_CQE_ARRAY_SIZE)):
                chunk = unit[j * 8 : j * 8 + 8]
                at = counter + (1 if j == 0 else 8 * j)
                out[at] = Slot("mini", f"M{j}:{len(chunk)}", f"mini-CQE array {j}: frames "
                               f"{_frames(chunk)} (byte_cnt "
                               + ", ".join(str(c.cqe.byte_cnt) for c in chunk) + ")")
        else:
            out[counter] = Slot("enhanced", f"E×{n}", f"enhanced compressed CQE: {n} mini "
                                f"CQEs (frames {_frames(unit)}); opcode nibble = {n - 1}; "
                                "its title is the plain CQE read just before it")
            for k in range(1, n):
                out[counter + k] = Slot("covered", "", "spanned by the compressed CQE, not "
                                        "written")
        counter += n
    return out


def _bits(ring: bytes | bytearray, ix: int) -> tuple[int, int, int, int]:
    """(opcode, format, owner, signature/validity) of slot ``ix`` from the ring bytes."""
    op_own = ring[ix * C.CQE_SIZE + 63]
    return op_own >> 4, (op_own >> 2) & 3, op_own & 1, ring[ix * C.CQE_SIZE + 62]


def ring_svg(title: str, ring: bytes | bytearray, size: int, start: int, slots: dict[int, Slot],
             *, consumer: int, producer: int, written: bool) -> str:
    svg = Svg(title)
    used = max((c - start + 1 for c in slots), default=0)
    shown = min(size, MAX_SLOTS, max(2 * COLS, -(-(used + 4) // COLS) * COLS))
    for n in range(shown):
        counter = start + n
        ix = counter % size
        x, y = (n % COLS) * (CELL_W + 4), 18 + (n // COLS) * (CELL_H + 22)
        opcode, fmt, owner, sig = _bits(ring, ix)
        slot = slots.get(counter)
        if slot is None:
            slot = Slot("hw", "", "not written this lap: hardware-owned" if opcode ==
                        C.MLX5_CQE_INVALID else "old contents")
        detail = (f"slot {ix} (counter {counter}): {slot.tip}; opcode {opcode}, format "
                  f"{fmt}, owner bit {owner}, byte 62 {sig}")
        if slot.kind == "mini":  # a mini array has no op_own: byte 63 is packet data
            detail = f"slot {ix} (counter {counter}): {slot.tip}; no owner bit of its own"
        svg.cell(x, y, CELL_W, CELL_H - 14, slot.kind, slot.label, tip=detail)
        svg.text(x + 2, y + CELL_H - 3, f"{ix}", size=9, fill="#666")
        if slot.kind != "mini":
            svg.text(x + CELL_W - 2, y + CELL_H - 3, f"o={owner}", size=9, anchor="end")
        marks = (("cc=pc", consumer),) if consumer == producer else (("cc", consumer),
                                                                        ("pc", producer))
        for mark, pos in marks:
            if pos == counter:
                svg.text(x + CELL_W / 2, y - 4, f"▼{mark}", size=10, anchor="middle",
                         weight="bold", fill="#b30000")
    y = 18 + (-(-shown // COLS)) * (CELL_H + 22)
    if size > shown:
        svg.text(0, y, f"... {size - shown} more slots of {size}, not drawn")
        y += 18
    svg.text(0, y + 4, "o = owner bit (bit 0 of op_own); a slot is new to the driver when it "
             "equals the lap's parity" + ("" if written else "; the driver has consumed "
                                          "every slot drawn"), size=10)
    svg.legend(0, y + 14, [("sw", "CQE"), ("title", "title CQE"), ("mini", "mini-CQE array"),
                           ("enhanced", "enhanced compressed CQE"),
                           ("covered", "spanned, not written"), ("hw", "hardware-owned")])
    return svg.markup()


def figures(scenario: Scenario) -> list[Figure]:
    config = component.config_of(scenario)
    cfg = scenario.config
    start = int(cfg.get("start", 0))
    stamps = cfg.get("timestamps")
    timestamps = None if stamps is None else [int(t) for t in stamps]
    device = Mlx5Device(config, pc=start)
    ring = new_ring(config.log_cq_size, start)
    device.receive(list(scenario.frames), timestamps, None)
    queued = device.pending
    slots = layout(device, start, start + config.cq_size)
    device.write(ring, start)
    slots = {k: v for k, v in slots.items() if k < device.pc}
    before = ring_svg("the CQ ring after the device's first write", bytes(ring),
                      config.cq_size, start, slots, consumer=start, producer=device.pc,
                      written=True)
    result = sim.run(config, list(scenario.frames), int(cfg.get("budget", 64)),
                     timestamps=timestamps, start=start)
    end = start + sum(p.work_done for p in result.polls)
    after = ring_svg("the CQ ring after the driver drained it", result.ring, config.cq_size,
                     start, slots, consumer=end, producer=end, written=False)
    pending = queued - device.pending
    return [
        Figure("CQ ring, before the first poll",
               f"compression {config.compression.value}: the device wrote {pending} of "
               f"{queued} completions into slots {start}..{device.pc - 1} (MLX5-DEV-013); "
               "runs of identical-looking completions become sessions (MLX5-COMP-001): a "
               "basic session is a title CQE with mini arrays at +1, +8, +16 "
               "(MLX5-COMP-002), an enhanced one a single slot of up to seven mini CQEs "
               "whose title is the plain CQE before it; both span one counter per packet "
               "(MLX5-COMP-003). cc: the driver's consumer counter, pc: the device's "
               "producer counter.", before),
        Figure("CQ ring, after the driver drained it",
               f"the driver polled {len(result.polls)} time(s) and consumed {end - start} "
               "slots: a slot is new when its owner bit equals the lap parity (MLX5-CQ-001, "
               "MLX5-CQ-002 for the validity byte); the slots of a basic session get the "
               "consumer's owner byte as they are read (MLX5-CQ-009). Stats: "
               + ", ".join(f"{k}={v}" for k, v in result.stats.items()), after),
    ]

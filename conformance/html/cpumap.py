"""cpumap: the bulk queue flushes on CPU A, the entry's ptr_ring, the kthread's batches on
CPU B, and where each packet is after every step of the schedule.

The reference is run on each prefix of the schedule (:func:`conformance.components.cpumap
.simulate`), and the objects it returns are read: the enqueue tracepoint records (one per
bulk-queue flush, CPUMAP-ENQ-001..003), the entry's ptr_ring slots with its producer and
consumer indices, the kthread tracepoint records (one per batch of at most 8,
CPUMAP-KT-001, CPUMAP-KT-005), and each packet's fate (CPUMAP-FATE-001).  The bulk queue
itself is always empty between steps: xdp_do_flush empties it at the end of every poll
(CPUMAP-ENQ-004), so what a reader sees of it is its flushes.
"""

from __future__ import annotations

import attrs

from conformance.components import cpumap as component
from conformance.html.svg import Figure, Svg, sample, sampled_note
from conformance.scenario import Scenario
from reference.cpumap_sim import CpumapSim

MAX_RING = 32
CHIP = 26


def _steps(scenario: Scenario) -> list[tuple[str, CpumapSim]]:
    out = []
    for k in sample(len(scenario.events)):
        ev = scenario.events[k]
        sim = component.simulate(attrs.evolve(scenario, events=scenario.events[: k + 1]))
        out.append((f"{k}: {ev['op']} n={ev['n']}", sim))
    return out


def _chips(svg: Svg, x: float, y: float, items: list[int], kind: str, limit: int = 24
           ) -> float:
    for i, p in enumerate(items[:limit]):
        svg.cell(x + i * (CHIP + 2), y, CHIP, 18, kind, f"#{p}", size=9, tip=f"packet {p}")
    if len(items) > limit:
        svg.text(x + limit * (CHIP + 2) + 4, y + 13, f"+{len(items) - limit}", size=10)
    return x + min(len(items), limit) * (CHIP + 2)


def figures(scenario: Scenario) -> list[Figure]:
    steps = _steps(scenario)
    svg = Svg("cpumap queues after each step")
    y = 6.0
    seen_enq = seen_kt = 0
    for label, sim in steps:
        cfg = sim.config
        index = {id(f): i for i, f in enumerate(sim.frames)}
        fates = sim.fates()
        svg.text(0, y + 14, label, size=12, weight="bold")
        y += 22
        # CPU A: the bulk-queue flushes of this step
        svg.text(10, y + 13, f"CPU {cfg.cpu_a} bulk flushes", size=11)
        x = 170.0
        enq = sim.cpumap.enqueue_traces[seen_enq:]
        for t in enq:
            w = 70 + 0.0
            svg.cell(x, y, w, 18, "bulk", f"{t.processed} fr" + (f", {t.drops} drop"
                                                                  if t.drops else ""),
                     size=9, tip=f"bq_flush_to_queue: {t.processed} frames processed, "
                                 f"{t.drops} dropped (ring full)")
            x += w + 4
        if not enq:
            svg.text(x, y + 13, "none", size=10, fill="#777")
        seen_enq = len(sim.cpumap.enqueue_traces)
        y += 24
        # the entry's ptr_ring
        ring = sim.entry.queue
        svg.text(10, y + 13, f"ptr_ring (qsize {ring.size})", size=11)
        for s in range(min(ring.size, MAX_RING)):
            f = ring.queue[s]
            x = 170 + s * (CHIP + 2)
            svg.cell(x, y, CHIP, 18, "ring" if f is not None else "hw",
                     "" if f is None else f"#{index[id(f)]}", size=9,
                     tip=f"slot {s}: " + ("empty" if f is None else
                                          f"packet {index[id(f)]}"))
            marks = [m for m, at in (("P", ring.producer), ("C", ring.consumer_head))
                     if at == s]
            if marks:
                svg.text(x + CHIP / 2, y + 29, "".join(marks), size=9, anchor="middle",
                         weight="bold", fill="#b30000")
        if ring.size > MAX_RING:
            svg.text(170 + MAX_RING * (CHIP + 2) + 4, y + 13, f"(+{ring.size - MAX_RING})",
                     size=10)
        y += 34
        # CPU B: kthread batches of this step
        svg.text(10, y + 13, f"CPU {cfg.cpu_b} kthread batches", size=11)
        x = 170.0
        kt = sim.cpumap.kthread_traces[seen_kt:]
        for b in kt:
            svg.cell(x, y, 70, 18, "gro", f"{b.processed} fr" + (f", {b.drops} drop"
                                                                 if b.drops else ""),
                     size=9, tip=f"kthread batch: {b.processed} frames, {b.drops} dropped, "
                                 f"sched {b.sched}, pass {b.xdp_pass}, drop {b.xdp_drop}")
            x += 74
        if not kt:
            svg.text(x, y + 13, "none", size=10, fill="#777")
        seen_kt = len(sim.cpumap.kthread_traces)
        y += 24
        # where each packet is
        for place, kind in (("gro", "gro"), ("stack", "stack"), ("freed", "freed")):
            items = [i for i, f in enumerate(fates) if f == place]
            svg.text(10, y + 13, f"in {place}" if place != "freed" else "freed", size=11)
            end = _chips(svg, 170, y, items, kind)
            if not items:
                svg.text(end, y + 13, "none", size=10, fill="#777")
            y += 22
        dropped = [i for i, f in enumerate(fates) if f.startswith("dropped:")]
        if dropped:
            svg.text(10, y + 13, "dropped", size=11)
            _chips(svg, 170, y, dropped, "dropped")
            y += 22
        svg.line(0, y + 4, 1000, y + 4, stroke="#ccc", dash=True)
        y += 10
    if not steps:
        svg.cell(0, 10, 200, 22, "hw", "no events: nothing received")
        y = 40
    svg.text(0, y + 12, "#N: packet N (in the order CPU A received them); P / C: the "
             "ring's producer and consumer index", size=10)
    svg.legend(0, y + 22, [("bulk", "bulk-queue flush"), ("ring", "frame in the ptr_ring"),
                           ("hw", "empty slot"), ("gro", "kthread batch / skb in GRO"),
                           ("stack", "skb up the stack"), ("freed", "freed"),
                           ("dropped", "dropped")])
    return [Figure(
        "cpumap, step by step",
        "on CPU A each redirected frame is bulked per (entry, CPU), 8 at a time "
        "(CPUMAP-ENQ-001), and flushed into the entry's ptr_ring (CPUMAP-ENQ-002) at "
        "xdp_do_flush, which wakes the kthread (CPUMAP-ENQ-004); on CPU B the kthread takes "
        "batches of up to 8 (CPUMAP-KT-001), builds one skb per frame (CPUMAP-KT-003) and "
        "feeds GRO (CPUMAP-KT-004); every frame ends in exactly one state "
        "(CPUMAP-FATE-001); the flushes and batches drawn for a step are those since the "
        "previous step drawn" + sampled_note(len(scenario.events)), svg.markup())]

"""The fec RX buffer-descriptor ring after each event: E and W bits, lengths, page slots.

Each row is the ring's memory (the ``rx_ring`` observable, the bytes a real ring holds,
FEC-BD-006) after one more event of the scenario: the reference is run on the scenario's
events up to and including that one (plus, first, an ``rx`` of no frames to show the ring
as ``fec_enet_open`` armed it, FEC-RX-001).  A slot whose E bit is set belongs to the MAC
(FEC-RX-003 re-arms it); a clear E bit means the MAC wrote a frame there and the driver
has not taken it yet (FEC-DEV-005).  The page a slot points at is named by its order of
first appearance, so a reader sees a page stay in its slot (recycled) or be replaced.
"""

from __future__ import annotations

from typing import Any

import attrs

from conformance.components import fec as component
from conformance.html.svg import Figure, Svg, sample, sampled_note
from conformance.scenario import Scenario
from reference.fec.bufdesc import (
    BD_ENET_RX_EMPTY,
    BD_ENET_RX_LAST,
    BD_ENET_RX_WRAP,
    Bufdesc,
    BufdescEx,
    rx_sc_names,
)

COLS = 16
CELL_W, CELL_H = 56, 34
MAX_SLOTS = 32
PAGE_SHIFT = 12


@attrs.frozen
class Desc:
    sc: int
    datlen: int
    bufaddr: int


def descriptors(ring_hex: str, scenario: Scenario) -> list[Desc]:
    cfg = component.config_of(scenario)
    mem = bytes.fromhex(ring_hex)
    size = 32 if cfg.bufdesc_ex else 8
    out = []
    for off in range(0, len(mem), size):
        bd = (BufdescEx.unpack(mem, off, cfg.byte_order) if cfg.bufdesc_ex
              else Bufdesc.unpack(mem, off, cfg.byte_order))
        out.append(Desc(bd.cbd_sc, bd.cbd_datlen, bd.cbd_bufaddr))
    return out


def snapshots(scenario: Scenario) -> list[tuple[str, dict[str, Any]]]:
    """(event label, observables) after open and after each event."""
    events = tuple(scenario.events or component.DEFAULT_EVENTS)
    noop = {"op": "rx", "frames": []}
    out = [("open", component.run(attrs.evolve(scenario, events=(noop,))))]
    for k in sample(len(events)):
        ev = events[k]
        obs = component.run(attrs.evolve(scenario, events=(noop, *events[: k + 1])))
        detail = ",".join(f"{a}={b}" for a, b in ev.items() if a != "op")
        out.append((f"{k}: {ev['op']}" + (f" {detail}" if detail else ""), obs))
    return out


def figures(scenario: Scenario) -> list[Figure]:
    steps = snapshots(scenario)
    svg = Svg("the fec RX descriptor ring after each event")
    pages: dict[int, int] = {}
    label_w = 150
    y = 14.0
    svg.text(label_w - 6, 12, "slot", size=10, anchor="end")
    for label, obs in steps:
        descs = descriptors(obs["rx_ring"], scenario)
        shown = descs[:MAX_SLOTS]
        svg.text(0, y + 20, label[:24], size=11, weight="bold")
        for i, d in enumerate(shown):
            x = label_w + (i % COLS) * (CELL_W + 3)
            yy = y + (i // COLS) * (CELL_H + 16)
            pfn = d.bufaddr >> PAGE_SHIFT
            page = pages.setdefault(pfn, len(pages))
            empty = bool(d.sc & BD_ENET_RX_EMPTY)
            bits = ("E" if empty else "·") + ("W" if d.sc & BD_ENET_RX_WRAP else "") + (
                "L" if d.sc & BD_ENET_RX_LAST else "")
            tip = (f"slot {i}: cbd_sc {d.sc:#06x} ({rx_sc_names(d.sc)}), cbd_datlen "
                   f"{d.datlen}, cbd_bufaddr {d.bufaddr:#x} (page p{page}, offset "
                   f"{d.bufaddr & ((1 << PAGE_SHIFT) - 1)})")
            svg.cell(x, yy, CELL_W, CELL_H - 12, "hw" if empty else "sw", f"p{page}", tip=tip)
            svg.text(x + 2, yy + CELL_H + 1, bits, size=9)
            if not empty:
                svg.text(x + CELL_W - 2, yy + CELL_H + 1, f"{d.datlen}B", size=9,
                         anchor="end")
            if i < COLS and label == "open":
                svg.text(x + CELL_W / 2, y - 2, str(i), size=9, anchor="middle", fill="#666")
        rows = -(-len(shown) // COLS)
        note = f"(+{len(descs) - len(shown)} slots not drawn)" if len(descs) > len(shown) \
            else ""
        c = obs["counters"]
        svg.text(0, y + 34, f"rx_packets {c['rx_packets']}", size=9, fill="#444")
        if note:
            svg.text(0, y + 46, note, size=9, fill="#444")
        y += rows * (CELL_H + 16) + 12
    svg.text(0, y + 6, "pN: the page the descriptor points at (N in order of first "
             "appearance); E: empty, owned by the MAC; W: wrap (last slot); L: last "
             "buffer of a frame; NB: bytes the MAC stored", size=10)
    svg.legend(0, y + 16, [("hw", "E set: armed for the MAC"),
                           ("sw", "E clear: a frame for the driver")])
    return [Figure(
        "RX descriptor ring, event by event",
        "each row is the ring after one more event (FEC-BD-006): the MAC fills a slot and "
        "clears E (FEC-DEV-005); NAPI walks from the current slot while E is clear "
        "(FEC-RX-002) and re-arms each slot with E (FEC-RX-003), with the same page when "
        "it was recycled or dropped, or a fresh one when the page went up the stack"
        + sampled_note(len(scenario.events or component.DEFAULT_EVENTS)),
        svg.markup())]

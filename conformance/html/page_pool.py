"""page_pool: where each page is, event by event, and the pool's cache and ring at the end.

A page of a pool is in exactly one place (PP-LEDGER-002): the per-CPU alloc cache, the
ptr_ring, in flight (a driver or the stack holds it) or released back to the page
allocator.  The ``pages`` observable of the component says where page K (numbered in
the order the pool first handed it out) is when the scenario ends; running the reference
on each prefix of the events gives the same answer after every event, which is the grid
drawn here.  :func:`narrate` is the narration used while the component has no
``explain()`` of its own: each event's result and the rule-tagged trace of the call.
"""

from __future__ import annotations

from typing import Any

import attrs

from conformance.components import page_pool as component
from conformance.html.svg import Figure, Svg, sample, sampled_note
from conformance.scenario import Scenario
from reference.trace import Trace

PLACES = ("alloc_cache", "ptr_ring", "in_flight", "released")
CELL_W, CELL_H = 58, 20
MAX_PAGES = 64


def narrate(scenario: Scenario) -> str:
    """Each event, what it returned and the decisions the pool took (TRACE-001)."""
    traces: list[Trace] = []
    obs = component._run(scenario, traces)  # the reference's own per-event traces
    lines = [f"page_pool: {len(scenario.events)} event(s), params "
             f"{dict(scenario.config.get('params', {})) or 'default'}"]
    for i, (ev, res, trace) in enumerate(zip(scenario.events, obs["events"], traces,
                                             strict=False)):
        args = ", ".join(f"{k}={v}" for k, v in ev.items() if k != "op")
        lines.append(f"[{i}] {ev['op']}({args}) -> " + ", ".join(f"{k} {v}" for k, v in
                                                                  res.items()))
        lines += [f"  {e.render()}" for e in trace]
    lines.append("pages at the end (PP-LEDGER-002): " + ", ".join(
        f"p{k} {where}" for k, where in obs["pages"].items()))
    lines.append(f"inflight {obs['inflight']}, state {obs['state']}")
    return "\n".join(lines)


def history(scenario: Scenario) -> list[tuple[str, dict[str, Any]]]:
    """(event label, observables) after each event."""
    out = []
    for k in sample(len(scenario.events)):
        obs = component.expected(attrs.evolve(scenario, events=scenario.events[: k + 1]))
        out.append((f"{k}:{scenario.events[k]['op']}", obs))
    return out


def timeline_svg(steps: list[tuple[str, dict[str, Any]]]) -> str:
    svg = Svg("where each page is after each event")
    pages = sorted({int(k) for _, obs in steps for k in obs["pages"]})[:MAX_PAGES]
    left, top = 40, 60
    for j, (label, _) in enumerate(steps):
        x = left + j * (CELL_W + 2)
        svg.text(x + 2, top - 6, label[:11], size=9)
    for r, k in enumerate(pages):
        y = top + r * (CELL_H + 2)
        svg.text(0, y + 14, f"p{k}", size=11, weight="bold")
        for j, (label, obs) in enumerate(steps):
            where = obs["pages"].get(str(k))
            if where is None:
                continue
            x = left + j * (CELL_W + 2)
            short = {"alloc_cache": "cache", "ptr_ring": "ring", "in_flight": "out",
                     "released": "freed"}.get(where, where)
            svg.cell(x, y, CELL_W, CELL_H, where, short, size=9,
                     tip=f"after event {label}: page {k} is {where} (pp_ref_count "
                         f"{obs['pp_ref_count'].get(str(k))})")
    y = top + len(pages) * (CELL_H + 2) + 10
    if not pages:
        svg.cell(left, top, 200, CELL_H, "hw", "no page handed out yet")
        y += CELL_H + 10
    svg.legend(0, y, [("alloc_cache", "alloc cache"), ("ptr_ring", "ptr_ring"),
                      ("in_flight", "in flight (driver or stack)"),
                      ("released", "released to the page allocator")])
    # the event labels are rotated text in spirit; keep them short and upright
    svg.text(0, 14, "time →  (one column per event; hover a cell for the detail)", size=11)
    return svg.markup()


def pool_svg(obs: dict[str, Any]) -> str:
    svg = Svg("the pool when the scenario ends")
    by_place: dict[str, list[str]] = {p: [] for p in PLACES}
    for k, where in obs["pages"].items():
        by_place.setdefault(where, []).append(f"p{k}")
    y = 8.0
    for place in PLACES:
        names = by_place[place]
        svg.text(0, y + 15, place.replace("_", " "), size=11, weight="bold")
        svg.rect(110, y, 16 * 38 + 8, 24, "#ffffff")
        for i, name in enumerate(names[:16]):
            svg.cell(114 + i * 38, y + 3, 34, 18, place, name, size=9)
        if len(names) > 16:
            svg.text(114 + 16 * 38 + 12, y + 16, f"+{len(names) - 16}", size=10)
        svg.text(114 + 16 * 38 + 40, y + 16, f"{len(names)} page(s)", size=10)
        y += 32
    stats = obs["stats"]
    if stats is None:  # page_pool_create refused the parameters (PP-INIT-009): no pool
        rc = (obs.get("create") or {}).get("rc")
        svg.text(0, y + 10, f"no pool: page_pool_create answered {rc}", size=10)
    else:
        svg.text(0, y + 10, ", ".join(f"{k.removeprefix('rx_pp_')}={v}"
                                      for k, v in stats.items() if v), size=10)
    return svg.markup()


def figures(scenario: Scenario) -> list[Figure]:
    steps = history(scenario)
    final = steps[-1][1] if steps else component.expected(scenario)
    return [
        Figure("Each page over time",
               "rows are pages in the order the pool first handed them out, columns are the "
               "events; a page is in exactly one place (PP-LEDGER-002): allocation takes "
               "from the alloc cache (PP-ALLOC-001), refilling it from the ptr_ring "
               "(PP-ALLOC-003) or the page allocator (PP-ALLOC-004); a put drops a "
               "reference (PP-RECYCLE-001) and recycles into the cache from the owning "
               "context (PP-RECYCLE-002) or else into the ring"
               + sampled_note(len(scenario.events)), timeline_svg(steps)),
        Figure("The pool at the end",
               f"the alloc cache, the ptr_ring and the pages outside the pool after the "
               f"last event, for the pages the pool handed out at least once (pages bulk-"
               f"allocated into the cache but never handed out are not drawn); inflight "
               f"{final['inflight']}, state {final['state']} "
               "(PP-LEDGER-001)", pool_svg(final)),
    ]

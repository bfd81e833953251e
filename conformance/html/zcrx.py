"""zcrx: the area's niovs and who owns each one, after registration and after each event.

An io_uring zcrx area is cut into niovs of ``rx_buf_len`` bytes (ZCRX-AREA-005).  At any
time a niov is on the area's freelist, in a page_pool's cache or ring, posted to (or being
filled by) the device, in an skb waiting on the socket, or held by the user after a CQE
pointed at it until a refill entry gives it back (ZCRX-OWN-001, ZCRX-REFILL-003).  The
places are read from the engine the reference returns, the same accounting its ledger
check walks (ZCRX-SIM-005); nothing is changed.  A scenario with events is drawn after
each event (the reference is run on each prefix); one without events is the bulk stream
``explain`` narrates, drawn after registration and after the stream.
"""

from __future__ import annotations

import attrs

from conformance.components import zcrx as component
from conformance.html.svg import Figure, Svg, sample, sampled_note
from conformance.scenario import Scenario
from reference.zcrx import ZcrxEngine
from reference.zcrx.recv import Skb
from reference.zcrx.scenario import run_stream

PLACES = (("freelist", "area freelist"), ("pool", "page_pool cache / ring"),
          ("device", "posted to the device"), ("socket", "in an skb on the socket"),
          ("user", "held by the user (CQE not yet refilled)"), ("other", "elsewhere"))
MAX_NIOVS = 4096


def owners(engine: ZcrxEngine) -> list[str]:
    """Where each niov of the area is, by index (one place each when the ledger holds)."""
    ifq = engine.ifq
    if ifq is None:
        return []
    area = ifq.area
    where = ["other"] * area.num_niovs
    for i in area.freelist:
        where[i] = "freelist"
    for pool in engine.pools:
        for n in [*pool.cache, *pool.ring]:
            where[n.index] = "pool"
    dev = engine.device
    if dev is not None:
        for n in [*dev.posted, *([dev.current] if dev.current is not None else [])]:
            where[n.index] = "device"
    if engine.rx is not None:
        for entry in engine.rx.queue:
            skb = entry[0]
            if isinstance(skb, Skb):
                for f in skb.frags:
                    if f.niov is not None:
                        where[f.niov.index] = "socket"
    for i, refs in enumerate(area.user_refs):
        if refs > 0 and where[i] == "other":
            where[i] = "user"
    return where


def _steps(scenario: Scenario) -> tuple[str, list[tuple[str, ZcrxEngine]]]:
    if scenario.events:
        out = [("registered", ZcrxEngine(component.config_of(scenario)))]
        for k in sample(len(scenario.events)):
            ev = scenario.events[k]
            engine, _ = component.simulate(attrs.evolve(scenario,
                                                        events=scenario.events[: k + 1]))
            out.append((f"{k}: {ev['op']}", engine))
        return "event", out
    stream = Scenario(component=scenario.component,
                      config=component._merge(component.STREAM_DEFAULTS, scenario.config),
                      frames=scenario.frames, kernel=scenario.kernel)
    engine = ZcrxEngine(component.config_of(stream))
    out = [("registered", ZcrxEngine(component.config_of(stream)))]
    if engine.active:
        run_stream(engine, component._stream_payloads(stream))
        out.append(("after the stream", engine))
    return "stream", out


def figures(scenario: Scenario) -> list[Figure]:
    mode, steps = _steps(scenario)
    svg = Svg("the zcrx area's niovs and their owners")
    y = 4.0
    first = steps[0][1]
    if first.ifq is None:
        res = first.result
        svg.cell(0, 10, 420, 26, "dropped", f"registration refused: rc {res.rc} ({res.rule})")
        return [Figure("zcrx area", "registration failed, so there is no area to draw; the "
                       "timeline below says which check refused it", svg.markup())]
    n = first.ifq.area.num_niovs
    cols = 64 if n > 64 else n
    cell = 12 if n <= 256 else 9
    for label, engine in steps:
        where = owners(engine)[:MAX_NIOVS]
        counts = {p: where.count(p) for p, _ in PLACES}
        svg.text(0, y + 12, label + ": " + ", ".join(f"{p} {c}" for p, c in counts.items()
                                                     if c), size=11, weight="bold")
        y += 18
        area = engine.ifq.area if engine.ifq is not None else None
        for i, place in enumerate(where):
            refs = area.user_refs[i] if area is not None else 0
            svg.rect((i % cols) * (cell + 1), y + (i // cols) * (cell + 1), cell, cell,
                     _colour(place), stroke="#d62728" if refs > 0 else "#999",
                     tip=f"niov {i}: {place}, user refs {refs}")
        y += -(-len(where) // cols) * (cell + 1) + 10
    size = first.ifq.area.niov_size
    svg.text(0, y + 8, "a red outline: the user holds a reference to that niov (a CQE it has "
             "not returned), wherever else the niov is", size=10)
    svg.legend(0, y + 16, [(_kind(p), m) for p, m in PLACES])
    caption = (f"{n} niovs of {size} bytes (ZCRX-AREA-005), one square each, coloured by "
               "owner: the provider refills the pool from the refill ring, then from the "
               "freelist (ZCRX-MP-003) and releases back to it (ZCRX-MP-004); a CQE gives "
               "the user a reference until a refill entry returns it (ZCRX-OWN-001, "
               "ZCRX-REFILL-003). " + ("One row block per event" + sampled_note(
                   len(scenario.events)) + "." if mode == "event" else
                                       "The bulk stream explain narrates: after "
                                       "registration and after the stream."))
    return [Figure("zcrx area and niov ownership", caption, svg.markup())]


_KIND = {"freelist": "freelist", "pool": "pool", "device": "device", "socket": "socket",
         "user": "user", "other": "other"}


def _kind(place: str) -> str:
    return _KIND.get(place, "other")


def _colour(place: str) -> str:
    from conformance.html.svg import colour

    return colour(_kind(place))

"""``rx-oracle explain --html``: one self-contained page per scenario (TRACE-001).

The page holds the component's narration as a timeline (its ``explain()`` text, rule ids
linked to their SPEC.md text and kernel citation) and pictures of the state the reader
would otherwise have to imagine.  Each component with a dedicated picture has a module
here (:mod:`.mlx5` the CQ ring, :mod:`.fec` the BD ring, :mod:`.page_pool` where each
page is, :mod:`.cpumap` the queues and batches, :mod:`.zcrx` the area's niovs); every
other component gets :mod:`.generic`'s buffer layout.  The pictures read the reference:
they run it (on the scenario, or on a prefix of its events to see each step) and look at
the objects it returns; they never change what it does.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from conformance import spectrace
from conformance.html import generic, page
from conformance.html.svg import Figure
from conformance.scenario import Scenario
from conformance.spectrace import Rule

#: Components with a picture of their own; the rest get :func:`generic.figures`.
DEDICATED = ("mlx5", "fec", "page_pool", "cpumap", "zcrx")


def figures_for(component: str) -> Callable[[Scenario], list[Figure]]:
    if component in DEDICATED:
        module = importlib.import_module(f"conformance.html.{component}")
        draw: Callable[[Scenario], list[Figure]] = module.figures
        return draw
    return generic.figures


def narrator(component: ModuleType) -> Callable[[Scenario], str] | None:
    """The component's ``explain``, or this package's own narration of the reference
    where the component has none yet (page_pool: its per-event trace)."""
    narrate: Callable[[Scenario], str] | None = getattr(component, "explain", None)
    if narrate is None and component.__name__.endswith(".page_pool"):
        from conformance.html import page_pool

        return page_pool.narrate
    return narrate


def _known_rules() -> dict[str, Rule]:
    """SPEC.md's rules, or none outside a checkout (ids then stay plain text)."""
    try:
        return spectrace.load_rules()
    except OSError:
        return {}


def render(scenario: Scenario, narration: str) -> str:
    """The page for ``scenario`` with the narration the command line printed."""
    cfg = ", ".join(f"{k}={json.dumps(v, separators=(', ', ': '))}"
                    for k, v in sorted(scenario.config.items())
                    if k not in ("key", "timestamps")) or "defaults"
    summary = [f"component: {scenario.component}", f"config: {cfg}",
               f"{len(scenario.frames)} frame(s), {len(scenario.events)} event(s)"
               + (", XDP program attached" if scenario.program is not None else "")]
    return page.render(component=scenario.component, kernel=scenario.kernel or "default",
                       summary=summary, narration=narration,
                       figures=figures_for(scenario.component)(scenario),
                       known=_known_rules())


def write(path: Path, scenario: Scenario, narration: str) -> None:
    """Write the page atomically: a reader never opens half a file."""
    from conformance import outputs

    outputs.write_text("--html", path, render(scenario, narration))

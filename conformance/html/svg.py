"""A tiny SVG writer: boxes, labels and legends, escaped, with no dependencies.

The diagrams are drawn on a grid of cells; each module computes what a cell shows and
this module only turns it into markup.  Every picture is an ``<svg class="diagram">`` with
a ``<title>`` (so a screen reader and a hovering mouse get a name), and every shape may
carry a ``<title>`` child with the full detail of what it stands for.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape

import attrs

#: The colours the pictures share, by meaning, so a legend means the same on every page.
COLOURS: dict[str, str] = {
    "hw": "#d9d9d9",  # owned by hardware / empty
    "sw": "#9ecae1",  # owned by software / a CQE to read
    "title": "#fdae6b",  # a compressed session's title CQE
    "mini": "#fdd0a2",  # a mini CQE array
    "enhanced": "#e377c2",  # an enhanced compressed CQE
    "covered": "#f2f2f2",  # a slot a session spans but never writes
    "headroom": "#e5f5e0",
    "eth": "#6baed6",
    "vlan": "#9e9ac8",
    "l3": "#74c476",
    "l4": "#fd8d3c",
    "payload": "#fdd0a2",
    "tailroom": "#f0f0f0",
    "shinfo": "#bdbdbd",
    "alloc_cache": "#74c476",
    "ptr_ring": "#6baed6",
    "in_flight": "#fd8d3c",
    "released": "#bdbdbd",
    "bulk": "#fdd0a2",
    "ring": "#6baed6",
    "gro": "#9e9ac8",
    "stack": "#fd8d3c",
    "freed": "#74c476",
    "dropped": "#de2d26",
    "freelist": "#e5f5e0",
    "pool": "#74c476",
    "device": "#6baed6",
    "socket": "#9e9ac8",
    "user": "#fd8d3c",
    "refill": "#fdd0a2",
    "other": "#ffffff",
}


#: The most snapshots a picture draws; a longer schedule is sampled evenly, last step kept.
MAX_STEPS = 32


def sample(n: int, limit: int = MAX_STEPS) -> list[int]:
    """Indices of the steps to draw out of ``n``: all of them, or ``limit`` spread evenly
    with the last one always in (the state the run ends in)."""
    if n <= limit:
        return list(range(n))
    return sorted({(i * (n - 1)) // (limit - 1) for i in range(limit)})


def sampled_note(n: int, limit: int = MAX_STEPS) -> str:
    return "" if n <= limit else (f" ({limit} of the {n} events are drawn, evenly spaced, "
                                  "the last one included)")


def colour(kind: str) -> str:
    return COLOURS.get(kind, COLOURS["other"])


@attrs.define
class Svg:
    """Shapes appended in drawing order; :meth:`markup` closes the picture."""

    title: str
    width: float = 0
    height: float = 0
    parts: list[str] = attrs.field(factory=list)

    def _grow(self, x: float, y: float) -> None:
        self.width, self.height = max(self.width, x), max(self.height, y)

    def rect(self, x: float, y: float, w: float, h: float, fill: str, *, tip: str = "",
             stroke: str = "#555", css: str = "") -> None:
        tip_el = f"<title>{escape(tip)}</title>" if tip else ""
        cls = f' class="{escape(css)}"' if css else ""
        self.parts.append(f'<rect x="{x:g}" y="{y:g}" width="{w:g}" height="{h:g}" '
                          f'fill="{fill}" stroke="{stroke}"{cls}>{tip_el}</rect>')
        self._grow(x + w + 1, y + h + 1)

    def text(self, x: float, y: float, label: str, *, size: int = 11, anchor: str = "start",
             weight: str = "normal", fill: str = "#222") -> None:
        self.parts.append(f'<text x="{x:g}" y="{y:g}" font-size="{size}" '
                          f'text-anchor="{anchor}" font-weight="{weight}" fill="{fill}">'
                          f"{escape(label)}</text>")
        self._grow(x + (len(label) * size * 0.6 if anchor == "start" else 0), y + 4)

    def line(self, x1: float, y1: float, x2: float, y2: float, *, stroke: str = "#555",
             dash: bool = False) -> None:
        extra = ' stroke-dasharray="4 3"' if dash else ""
        self.parts.append(f'<line x1="{x1:g}" y1="{y1:g}" x2="{x2:g}" y2="{y2:g}" '
                          f'stroke="{stroke}"{extra}/>')
        self._grow(max(x1, x2), max(y1, y2))

    def cell(self, x: float, y: float, w: float, h: float, kind: str, label: str = "", *,
             tip: str = "", size: int = 10) -> None:
        """A box coloured by ``kind`` with a centred label."""
        self.rect(x, y, w, h, colour(kind), tip=tip)
        if label:
            self.text(x + w / 2, y + h / 2 + size / 3, label, size=size, anchor="middle")

    def legend(self, x: float, y: float, items: Iterable[tuple[str, str]]) -> float:
        """A row of coloured swatches with their meaning; returns the y below it."""
        cx = x
        for kind, meaning in items:
            self.rect(cx, y, 12, 12, colour(kind))
            self.text(cx + 16, y + 10, meaning, size=11)
            cx += 16 + len(meaning) * 6.6 + 14
            if cx > 900:
                cx, y = x, y + 18
        return y + 22

    def markup(self) -> str:
        w, h = max(self.width + 4, 40), max(self.height + 4, 20)
        return (f'<svg class="diagram" role="img" '
                f'width="{w:g}" height="{h:g}" viewBox="0 0 {w:g} {h:g}">'
                f"<title>{escape(self.title)}</title>{''.join(self.parts)}</svg>")


@attrs.frozen
class Figure:
    """One picture on the page: a heading, a sentence saying what to look at, the SVG."""

    title: str
    caption: str
    svg: str

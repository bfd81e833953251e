"""The page: a header, the diagrams, the timeline of decisions and the rules they cite.

The timeline is built from the component's ``explain()`` text, line for line, so the page
and ``rx-oracle explain`` cannot tell different stories (TRACE-001).  Rule ids are found
with the SPEC id pattern of :mod:`conformance.spectrace`; each one that SPEC.md defines
becomes a link to an anchor at the foot of the page holding the rule's title, text and
kernel citation (with a link to each kernel file, as ``rx-oracle spec`` shows it,
TRACE-002).  Everything is inline: the CSS, the SVG; no script, no font, no image is
fetched, so the file can be mailed or opened offline.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from html import escape

import attrs

from conformance import spec_cmd, spectrace
from conformance.html.svg import Figure
from conformance.spectrace import Rule

CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1100px;
       color: #222; line-height: 1.4; padding: 0 1em; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; }
h2 { border-bottom: 1px solid #ccc; padding-bottom: 0.2em; margin-top: 1.6em; }
.lede { color: #555; }
figure { margin: 1em 0; padding: 0.6em; border: 1px solid #ddd; border-radius: 6px;
         overflow-x: auto; background: #fcfcfc; }
figcaption { font-size: 0.92em; color: #444; margin-bottom: 0.4em; }
figcaption b { color: #222; }
ol.timeline { list-style: none; padding-left: 0; border-left: 3px solid #9ecae1;
              margin-left: 0.6em; }
ol.timeline > li { position: relative; padding: 0.2em 0 0.8em 1.2em; }
ol.timeline > li::before { content: ""; position: absolute; left: -8px; top: 0.55em;
                           width: 12px; height: 12px; border-radius: 50%;
                           background: #3182bd; }
ol.timeline > li.packet::before { background: #e6550d; }
.step-head { font-weight: 600; }
ul.decisions { list-style: none; padding-left: 0.4em; margin: 0.2em 0; }
ul.decisions li { font-family: ui-monospace, monospace; font-size: 0.85em;
                  white-space: pre-wrap; padding: 1px 0; }
a.rule { background: #deebf7; border-radius: 3px; padding: 0 3px; color: #08519c;
         text-decoration: none; font-family: ui-monospace, monospace; }
a.rule:hover { background: #9ecae1; }
section.rule { border-left: 4px solid #9ecae1; padding: 0.2em 0.8em; margin: 0.8em 0; }
section.rule:target { background: #fff7bc; border-left-color: #e6550d; }
section.rule h3 { font-size: 1em; margin: 0.2em 0; }
section.rule p { margin: 0.3em 0; font-size: 0.92em; white-space: pre-wrap; }
.cite { color: #555; }
code { background: #f0f0f0; padding: 0 2px; border-radius: 2px; }
"""


@attrs.frozen
class Step:
    """One top-level line of the narration and the indented lines under it."""

    head: str
    lines: tuple[str, ...]

    @property
    def is_packet(self) -> bool:
        return self.head.lower().startswith(("packet", "[", "frame"))


def steps(narration: str) -> list[Step]:
    """The narration cut at its unindented lines (a packet, a phase, a summary)."""
    out: list[tuple[str, list[str]]] = []
    for raw in narration.splitlines():
        if not raw.strip():
            continue
        if raw[:1].isspace() and out:
            out[-1][1].append(raw.strip())
        else:
            out.append((raw.strip(), []))
    return [Step(head, tuple(lines)) for head, lines in out]


def link_ids(text: str, known: Mapping[str, Rule]) -> str:
    """``text`` escaped, each rule id SPEC.md defines turned into a link to its anchor."""
    def sub(m: re.Match[str]) -> str:
        rid = m.group(0)
        if rid not in known:
            return rid
        return (f'<a class="rule" href="#{rid}" title="{escape(known[rid].title)}">'
                f"{rid}</a>")

    return spectrace.ID_RE.sub(sub, escape(text, quote=False))


def timeline(narration: str, known: Mapping[str, Rule]) -> str:
    items = []
    for step in steps(narration):
        cls = ' class="packet"' if step.is_packet else ""
        body = "".join(f"<li>{link_ids(line, known)}</li>" for line in step.lines)
        items.append(f'<li{cls}><div class="step-head">{link_ids(step.head, known)}</div>'
                     + (f'<ul class="decisions">{body}</ul>' if body else "") + "</li>")
    return f'<ol class="timeline">{"".join(items)}</ol>'


def _inline(text: str) -> str:
    """SPEC markdown, enough of it: escaped text with ``code`` spans."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", escape(text, quote=False))


def rule_section(rule: Rule) -> str:
    links = []
    for f in spec_cmd.cited_files(rule, spectrace.ROOT):
        if f["url"]:
            links.append(f'<a href="{escape(str(f["url"]))}">{escape(str(f["path"]))}</a>')
        else:
            links.append(f"<code>{escape(str(f['path']))}</code>")
    tree = spec_cmd.tree_of(rule)
    files = f"<br>kernel files ({escape(tree.version)}): {', '.join(links)}" if links else ""
    return (f'<section class="rule" id="{rule.id}"><h3>{rule.id} — {_inline(rule.title)}</h3>'
            f"<p>{_inline(spec_cmd.reflow(rule.statement))}</p>"
            f'<p class="cite"><b>Source:</b> {_inline(rule.source)}{files}<br>'
            f"<b>Kind:</b> {_inline(rule.kind)} · SPEC.md line {rule.line}</p></section>")


def cited(narration: str, known: Mapping[str, Rule]) -> list[Rule]:
    """The rules the narration names, in order of first mention."""
    return [known[rid] for rid in dict.fromkeys(spectrace.ids_in(narration)) if rid in known]


def figure(fig: Figure, known: Mapping[str, Rule]) -> str:
    return (f"<figure><figcaption><b>{escape(fig.title)}</b> — "
            f"{link_ids(fig.caption, known)}</figcaption>{fig.svg}</figure>")


def render(*, component: str, kernel: str, summary: Iterable[str], narration: str,
           figures: Iterable[Figure], known: Mapping[str, Rule]) -> str:
    """The whole document."""
    figures = list(figures)
    rules = cited("\n".join([narration, *(f.caption for f in figures)]), known)
    facts = "".join(f"<li>{escape(s)}</li>" for s in summary)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>rx-oracle explain: {escape(component)}</title>
<style>{CSS}</style>
</head>
<body>
<header>
<h1>rx-oracle explain: {escape(component)}</h1>
<p class="lede">What the reference model of Linux RX does with this input, kernel
{escape(kernel)}. Pictures first (hover a box for its detail), then every decision in order;
each <a class="rule" href="#rules">RULE-ID</a> links to the rule's text and the kernel source
it was read from, at the foot of the page.</p>
<ul>{facts}</ul>
</header>
<main>
<h2 id="diagrams">State</h2>
{"".join(figure(f, known) for f in figures)}
<h2 id="timeline">Decisions, in order</h2>
{timeline(narration, known)}
<h2 id="rules">Rules cited ({len(rules)})</h2>
{"".join(rule_section(r) for r in rules)}
</main>
</body>
</html>
"""

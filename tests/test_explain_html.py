"""``rx-oracle explain --html``: a self-contained page per component, checked two ways.

Pure Python: the page parses (:mod:`html.parser`), fetches nothing (no ``src``, and no
``http(s)`` ``href`` but the kernel-source links of the rule citations), every rule link
has its anchor, the timeline is the ``explain()`` text line for line, and the pictures show
what SPEC says they must (checked against hand-computed layouts, not against the code that
draws them).  In a browser: headless Chromium (Debian's ``chromium``, installed by CI)
loads each page with no console message at all (the page has no script) and the DOM it
builds holds every diagram with shapes in it.  Without Chromium those tests skip and say so.
"""

from __future__ import annotations

import html as htmllib
import importlib
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether

from conformance import cli, html, spectrace
from conformance.components import registry
from conformance.html import svg as svgmod
from conformance.scenario import Scenario
from conformance.targets.base import NotApplicable
from reference.errors import OracleError

ROOT = Path(__file__).resolve().parent.parent
ETH = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
TCP_FRAME = bytes(ETH / IP(src="10.0.0.1", dst="10.0.0.2") / TCP(sport=1, dport=2) / (b"d" * 40))
UDP_FRAME = bytes(ETH / IP(src="10.0.0.3", dst="10.0.0.4") / UDP(sport=3, dport=4) / (b"x" * 99))
KERNEL_LINK = re.compile(r"^https://elixir\.bootlin\.com/linux/[^/]+/source/")


def _fixture_scenario(component: str) -> Scenario:
    """The first golden-fixture scenario of a component: an input the suite already uses."""
    line = (ROOT / "fixtures" / f"{component}.jsonl").read_text().splitlines()[0]
    return Scenario.from_json(json.loads(line)["scenario"])


def scenario_for(component: str) -> Scenario:
    """A scenario that puts something in each picture."""
    if component == "mlx5":
        from conformance.components.mlx5 import EXPLAIN_DEFAULTS

        return Scenario(component="mlx5", config={**EXPLAIN_DEFAULTS, "compression": "basic"},
                        frames=(TCP_FRAME,) * 12 + (UDP_FRAME,) * 3)
    if component == "fec":
        return Scenario(component="fec", config={"rx_ring_size": 8},
                        frames=(TCP_FRAME, UDP_FRAME),
                        program=({"op": "return", "action": 1},))
    if component == "cpumap":
        return Scenario(component="cpumap", config={"qsize": 16},
                        events=({"op": "rx", "n": 12}, {"op": "kthread", "n": 1},
                                {"op": "kthread", "n": 1}, {"op": "free", "n": 5}))
    if component == "page_pool":
        return Scenario(component="page_pool", config={"napi_cpu": 0},
                        events=({"op": "alloc"}, {"op": "alloc"},
                                {"op": "put", "alloc": 0, "direct": True},
                                {"op": "put", "alloc": 1, "cpu": 1}, {"op": "alloc"},
                                {"op": "destroy"}))
    if component == "zcrx":
        from conformance.components import zcrx

        return Scenario(component="zcrx", frames=zcrx.frames_for([1000, 2000]),
                        events=({"op": "alloc", "n": 8}, {"op": "rx"}, {"op": "recv"},
                                {"op": "return", "cqes": [0]}, {"op": "alloc", "n": 4}))
    return _fixture_scenario(component)


def narration_for(scenario: Scenario) -> str:
    """What ``explain`` prints; for a component with no narration yet, the rules its run
    applied, so the generic page is still exercised for every component."""
    module = importlib.import_module(f"conformance.components.{scenario.component}")
    narrate = html.narrator(module)
    if narrate is not None:
        return narrate(scenario)
    applied = registry()[scenario.component].applied
    rules = sorted(applied(scenario)) if applied is not None else []
    return f"{scenario.component}: no explain() yet\n  rules applied: {' '.join(rules)}"


_PAGES: dict[str, tuple[str, str]] = {}


def page_for(component: str) -> tuple[str, str]:
    """(page, narration), built once per component."""
    if component not in _PAGES:
        scenario = scenario_for(component)
        text = narration_for(scenario)
        _PAGES[component] = (html.render(scenario, text), text)
    return _PAGES[component]


class PageParser(HTMLParser):
    """What the checks need from a page: ids, links, sources, the shapes of each diagram."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.hrefs: list[tuple[str, bool]] = []  # (href, inside a rule section)
        self.srcs: list[str] = []
        self.rule_links: list[str] = []
        self.diagrams: list[int] = []  # shapes per svg.diagram
        self.scripts = 0
        self._stack: list[str] = []
        self._in_rule = 0
        self._svg_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if "id" in a:
            self.ids.add(a["id"])
        if "src" in a:
            self.srcs.append(a["src"])
        if tag == "script":
            self.scripts += 1
        if tag == "section" and "rule" in a.get("class", "").split():
            self._in_rule += 1
        if "href" in a:
            self.hrefs.append((a["href"], self._in_rule > 0))
        if tag == "a" and "rule" in a.get("class", "").split():
            self.rule_links.append(a["href"])
        if tag == "svg" and "diagram" in a.get("class", "").split():
            self.diagrams.append(0)
            self._svg_depth = 1
        elif self._svg_depth and tag in ("rect", "line", "circle", "path", "polygon"):
            self.diagrams[-1] += 1
        if tag not in ("meta", "br", "rect", "line"):
            self._stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "section" and self._in_rule:
            self._in_rule -= 1
        if tag == "svg":
            self._svg_depth = 0


def parse(page: str) -> PageParser:
    p = PageParser()
    p.feed(page)
    p.close()
    return p


COMPONENTS = sorted(registry())


@pytest.mark.rule("TRACE-001", "TRACE-002")
@pytest.mark.parametrize("component", COMPONENTS)
def test_page_is_self_contained_and_every_rule_link_has_its_anchor(component: str) -> None:
    page, _ = page_for(component)
    p = parse(page)
    assert p.srcs == [] and p.scripts == 0
    known = spectrace.load_rules()
    for href, in_rule in p.hrefs:
        if href.startswith("#"):
            assert href[1:] in p.ids, f"{href} has no anchor"
        else:  # only a rule's citation links out, and only to the kernel source
            assert in_rule and KERNEL_LINK.match(href), href
    assert p.rule_links, "the page links no rule"
    for href in p.rule_links:
        assert href == "#rules" or href[1:] in known
    assert p.diagrams and all(n > 0 for n in p.diagrams), p.diagrams


@pytest.mark.rule("TRACE-001")
@pytest.mark.parametrize("component", COMPONENTS)
def test_timeline_is_the_explain_text(component: str) -> None:
    """Every line the command line prints is on the page, in the same order."""
    page, text = page_for(component)
    timeline = page[page.index('<ol class="timeline">'):page.index('<h2 id="rules">')]
    plain = htmllib.unescape(re.sub(r"<[^>]+>", "", timeline.replace("</li>", "\n")))
    at = 0
    for line in (s.strip() for s in text.splitlines() if s.strip()):
        found = plain.find(line, at)
        assert found >= 0, f"missing or out of order: {line!r}"
        at = found + len(line)


@pytest.mark.rule("TRACE-001")
@pytest.mark.parametrize("component", html.DEDICATED)
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_scenario_gets_its_pictures(component: str, data: st.DataObject) -> None:
    """Whatever the component's own strategy draws (long schedules, refusals, other ring
    layouts), the page renders and every diagram has shapes in it."""
    module = importlib.import_module(f"conformance.components.{component}")
    scenario = data.draw(module.scenarios())
    try:
        text = narration_for(scenario)
    except (NotApplicable, OracleError):
        return  # explain itself refuses the input; the command line says so, no page
    p = parse(html.render(scenario, text))
    assert p.diagrams and all(n > 0 for n in p.diagrams), p.diagrams


def _tips(svg_markup: str) -> list[str]:
    return [htmllib.unescape(t) for t in re.findall(r"<rect [^>]*><title>([^<]*)</title>",
                                                    svg_markup)]


@pytest.mark.rule("MLX5-COMP-002", "MLX5-DEV-013")
def test_mlx5_ring_draws_a_basic_session_as_the_rule_lays_it_out() -> None:
    """12 identical TCP completions then 3 UDP ones, basic compression: by MLX5-COMP-002's
    text, titles at slots 0 and 12, mini array 0 (8 packets) at 1 and array 1 (4) at 8,
    array 0 of the second session (3) at 13, slots 2..7 and 9..11 not written."""
    from conformance.html import mlx5

    before = mlx5.figures(scenario_for("mlx5"))[0].svg
    tips = {int(m.group(1)): t for t in _tips(before)
            if (m := re.match(r"slot (\d+) ", t))}
    assert "title CQE of a basic session of 12 packets" in tips[0]
    assert "mini-CQE array 0: frames 0,1,2,3,4,5,6,7 " in tips[1]
    assert "mini-CQE array 1: frames 8,9,10,11 " in tips[8]
    assert "title CQE of a basic session of 3 packets" in tips[12]
    assert "mini-CQE array 0: frames 12,13,14 " in tips[13]
    assert all("not written" in tips[s] for s in (*range(2, 8), 9, 10, 11, 14))
    assert "hardware-owned" in tips[15] and "owner bit 1" in tips[15]  # lap 0 waits for 0
    assert "owner bit 0" in tips[0]


@pytest.mark.rule("MLX5-COMP-003")
def test_mlx5_ring_draws_enhanced_compressed_cqes_as_the_rule_lays_them_out() -> None:
    """The same frames, enhanced: a plain CQE (the title), then compressed CQEs of at most
    seven packets, each spanning one counter per packet."""
    import attrs

    from conformance.html import mlx5

    basic = scenario_for("mlx5")
    scenario = attrs.evolve(basic, config={**basic.config, "compression": "enhanced"})
    tips = {int(m.group(1)): t for t in _tips(mlx5.figures(scenario)[0].svg)
            if (m := re.match(r"slot (\d+) ", t))}
    assert "CQE of frame 0:" in tips[0] and "CQE of frame 12:" in tips[12]
    assert "enhanced compressed CQE: 7 mini CQEs (frames 1,2,3,4,5,6,7)" in tips[1]
    assert "enhanced compressed CQE: 4 mini CQEs (frames 8,9,10,11)" in tips[8]
    assert "enhanced compressed CQE: 2 mini CQEs (frames 13,14)" in tips[13]
    assert all("not written" in tips[s] for s in (*range(2, 8), 9, 10, 11, 14))


@pytest.mark.rule("CPUMAP-ENQ-001", "CPUMAP-KT-001")
def test_cpumap_shows_bulks_and_batches_of_eight() -> None:
    from conformance.html import cpumap

    tips = _tips(cpumap.figures(scenario_for("cpumap"))[0].svg)
    flushes = [t for t in tips if t.startswith("bq_flush_to_queue")]
    batches = [t for t in tips if t.startswith("kthread batch")]
    assert [f.split(":")[1].split(" frames")[0].strip() for f in flushes] == ["8", "4"]
    assert [b.split(":")[1].split(" frames")[0].strip() for b in batches] == ["8", "4"]


@pytest.mark.rule("PP-LEDGER-002", "PP-RECYCLE-004", "PP-RECYCLE-006")
def test_page_pool_history_places_each_page() -> None:
    """A direct put parks page 0 in the alloc cache; a put from another CPU puts page 1 in
    the ptr_ring; the next alloc takes page 0 back out of the cache."""
    from conformance.html import page_pool

    tips = _tips(page_pool.figures(scenario_for("page_pool"))[0].svg)
    assert any(t.startswith("after event 2:put: page 0 is alloc_cache") for t in tips)
    assert any(t.startswith("after event 3:put: page 1 is ptr_ring") for t in tips)
    assert any(t.startswith("after event 4:alloc: page 0 is in_flight") for t in tips)


@pytest.mark.rule("FEC-DEV-005", "FEC-RX-003")
def test_fec_ring_rows_show_e_cleared_by_the_mac_and_set_by_the_driver() -> None:
    from conformance.html import fec

    svg = fec.figures(scenario_for("fec"))[0].svg
    filled = svg.count(f'fill="{svgmod.COLOURS["sw"]}"')
    armed = svg.count(f'fill="{svgmod.COLOURS["hw"]}"')
    rows = 1 + 5  # open, then the five default events
    assert filled == 2 + 1  # the two frames' slots after rx, and the legend's swatch
    assert armed == rows * 8 - 2 + 1


@pytest.mark.rule("ZCRX-AREA-005", "ZCRX-OWN-001")
def test_zcrx_area_has_one_square_per_niov_per_step() -> None:
    from conformance.html import zcrx

    tips = _tips(zcrx.figures(scenario_for("zcrx"))[0].svg)
    niovs = [t for t in tips if t.startswith("niov ")]
    assert len(niovs) == 64 * (1 + 5)  # 256 KiB of 4 KiB niovs, registration + 5 events
    assert all(t.endswith("user refs 0") for t in niovs[:64])
    assert any(not t.endswith("user refs 0") for t in niovs[64 * 3:])  # after recv


@pytest.mark.rule("TRACE-001")
def test_cli_writes_the_page_and_refuses_a_bad_path(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "pp.html"
    events = json.dumps(list(scenario_for("page_pool").events))
    argv = ["explain", "--driver", "page_pool", "--config", '{"napi_cpu": 0}',
            "--events", events]
    assert cli.main([*argv, "--html", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"wrote {out}" in text and "PP-RECYCLE-004" in text
    assert '<svg class="diagram"' in out.read_text()
    for bad in (tmp_path / "missing" / "x.html", tmp_path):
        assert cli.main([*argv, "--html", str(bad)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--html" in err


# --- in a browser ------------------------------------------------------------------------

CHROMIUM = shutil.which("chromium")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install chromium; "
                             "CI installs it): the page cannot be rendered in a browser here")


def chromium(page: Path, profile: Path) -> tuple[str, list[str]]:
    """(the DOM Chromium built, the console messages it logged) for a local page."""
    assert CHROMIUM is not None
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", "--dump-dom",
         page.as_uri()], capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return done.stdout, console


@needs_chromium
@pytest.mark.rule("TRACE-001")
def test_the_browser_check_sees_console_errors(tmp_path: Path) -> None:
    """The check below would see an error: a page that logs one is caught."""
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html><body><script>console.error("boom");'
                   "nosuch();</script></body></html>")
    _, console = chromium(bad, tmp_path / "profile")
    assert any("boom" in c for c in console) and any("nosuch" in c for c in console)


@needs_chromium
@pytest.mark.rule("TRACE-001")
@pytest.mark.parametrize("component", COMPONENTS)
def test_page_renders_in_chromium(component: str, tmp_path: Path) -> None:
    path = tmp_path / f"{component}.html"
    path.write_text(page_for(component)[0], encoding="utf-8")
    dom, console = chromium(path, tmp_path / "profile")
    assert console == [], console
    p = parse(dom)
    assert p.diagrams and all(n > 0 for n in p.diagrams), p.diagrams
    assert "rules" in p.ids and p.rule_links

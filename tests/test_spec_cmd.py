"""``rx-oracle spec``: checked for every SPEC rule against SPEC.md and the tree.

The expectations are computed independently of :mod:`conformance.spectrace`: the section
text by splitting SPEC.md into lines, the code sites by ``grep``, the tests and properties
by pytest's own collection (the ``rule`` markers pytest sees, through class and module
``pytestmark`` and stateful machines), the fixtures by reading the records.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from collect_helpers import collect

from conformance import cli, spec_cmd, spectrace
from conformance.plugin import rules_of

ROOT = Path(__file__).resolve().parent.parent
SPEC_LINES = (ROOT / "SPEC.md").read_text().splitlines()
SCHEMA = json.loads((ROOT / "conformance" / "schemas" / "spec.schema.json").read_text())

#: A well-formed id SPEC.md lacks, built so that the traceability scan does not read it as one.
UNKNOWN_RULE = "NOPE-" + "001"


def rules_by_test(items: list[Any]) -> dict[str, list[str]]:
    """For :func:`collect_helpers.collect`: ``path::test`` -> the rules its markers name."""
    out: dict[str, set[str]] = {}
    for item in items:
        out.setdefault(item.nodeid.split("[")[0], set()).update(rules_of(item))
    return {k: sorted(v) for k, v in out.items()}


def _run(argv: list[str]) -> tuple[int, str, str]:
    """``rx-oracle ARGV`` in-process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def everything() -> dict[str, dict[str, Any]]:
    """Every rule, described by one in-process call (the whole SPEC parsed once)."""
    return {d["id"]: d for d in spec_cmd.lookup(["*"])}


@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    """Rule id -> ``path::test`` of each test and property pytest collects with that rule."""
    found = collect(tmp_path_factory.mktemp("collect"), "test_spec_cmd:rules_by_test",
                    "tests", "conformance/properties")
    by_rule: dict[str, set[str]] = {}
    for nodeid, rules in found.items():
        for rid in rules:
            by_rule.setdefault(rid, set()).add(nodeid)
    return by_rule


@pytest.fixture(scope="module")
def grepped() -> dict[str, set[tuple[str, int]]]:
    """Rule id -> (path, line) of each ``reference/`` or ``conformance/`` Python line naming
    it, by ``grep -w`` over the ids SPEC.md defines."""
    ids = sorted(line.split()[1] for line in SPEC_LINES if line.startswith("#### "))
    proc = subprocess.run(
        ["grep", "-rnowF", "--include=*.py", "-e", "\n".join(ids), "reference", "conformance"],
        cwd=ROOT, capture_output=True, text=True, check=True)
    found: dict[str, set[tuple[str, int]]] = {}
    for hit in proc.stdout.splitlines():
        path, line, rid = hit.split(":", 2)
        found.setdefault(rid, set()).add((path, int(line)))
    return found


def _section(rid: str) -> tuple[str, str]:
    """(title, text) of a rule, read from SPEC.md's lines: heading to the next ``#`` line."""
    start = next(i for i, line in enumerate(SPEC_LINES) if line.startswith(f"#### {rid} — "))
    end = next((i for i in range(start + 1, len(SPEC_LINES)) if SPEC_LINES[i].startswith("#")),
               len(SPEC_LINES))
    title = SPEC_LINES[start].split(" — ", 1)[1]
    return title, "\n".join(SPEC_LINES[start + 1:end]).strip()


def _fixture_records() -> dict[str, list[tuple[str, int, str]]]:
    found: dict[str, list[tuple[str, int, str]]] = {}
    for path in sorted((ROOT / "fixtures").glob("*.jsonl")):
        with path.open() as lines:
            for n, line in enumerate(lines, 1):
                record = json.loads(line)
                for rid in set(record["rules"]):
                    found.setdefault(rid, []).append((f"fixtures/{path.name}", n, record["id"]))
    return found


@pytest.mark.rule("TRACE-002")
def test_every_rule_has_its_spec_section(everything: dict[str, dict[str, Any]]) -> None:
    headings = [line.split()[1] for line in SPEC_LINES if line.startswith("#### ")]
    assert list(everything) == headings  # every rule, in SPEC order
    for rid, d in everything.items():
        title, text = _section(rid)
        assert (d["title"], d["text"]) == (title, text), rid
        assert SPEC_LINES[d["spec"]["line"] - 1].startswith(f"#### {rid} — ")
        assert text.startswith(d["statement"]) and "*Source:*" not in d["statement"], rid
        assert d["source"] and " ".join(d["source"].split()) in " ".join(text.split()), rid
        assert " ".join(text.split()).endswith(f"*Kind:* {d['kind']}"), rid


@pytest.mark.rule("TRACE-002")
def test_code_sites_are_the_grep_of_the_id(everything: dict[str, dict[str, Any]],
                                          grepped: dict[str, set[tuple[str, int]]]) -> None:
    for rid, d in everything.items():
        sites = [(s["path"], s["line"]) for s in d["code"]]
        assert len(sites) == len(set(sites)), rid
        assert set(sites) == grepped.get(rid, set()), rid
        assert d["code"], f"{rid}: no code names it"


@pytest.mark.rule("TRACE-002")
def test_tests_and_properties_are_those_pytest_collects_with_the_rule(
        everything: dict[str, dict[str, Any]], collected: dict[str, set[str]]) -> None:
    for rid, d in everything.items():
        tests = {f"{s['path']}::{s['name']}" for s in d["tests"]}
        props = {f"{s['path']}::{s['name']}" for s in d["properties"]}
        assert all(t.startswith("tests/") for t in tests), rid
        assert all(p.startswith("conformance/properties/") for p in props), rid
        assert tests | props == collected.get(rid, set()), rid


@pytest.mark.rule("TRACE-002")
def test_fixtures_are_the_records_listing_the_rule(
        everything: dict[str, dict[str, Any]]) -> None:
    records = _fixture_records()
    assert records
    for rid, d in everything.items():
        want = records.get(rid, [])
        got = [(r["path"], r["line"], r["name"]) for r in d["fixtures"]["records"]]
        assert (d["fixtures"]["count"], got) == (len(want), want), rid


@pytest.mark.rule("TRACE-002")
def test_kernel_files_link_to_the_tree_the_rule_was_read_in(
        everything: dict[str, dict[str, Any]]) -> None:
    linked = 0
    for rid, d in everything.items():
        for f in d["cited_files"]:
            assert f["path"] in d["source"] or f["path"].rsplit("/", 1)[-1] in d["source"], rid
            if f["where"] == "checkout":
                assert (ROOT / f["path"]).is_file() and f["url"] is None
            elif rid.startswith("ZCRX-"):
                assert f["url"] is None, rid  # Debian 7.3.4: no pinned public URL
            elif f["where"] == "kernel" and f["url"] is not None:
                assert f["url"] == ("https://elixir.bootlin.com/linux/v6.17-rc3/source/"
                                    + f["path"]), rid
                linked += 1
        tree = d["kernel_tree"]
        if rid.startswith("ZCRX-"):
            assert tree["version"] == "v7.0" and "7.3.4" in tree["description"]
        else:
            assert tree["version"] == "v6.17-rc3" and "Kingxukai/linux" in tree["description"]
    assert linked > 300
    fec = everything["FEC-RX-001"]["cited_files"]
    assert fec[0]["path"] == "drivers/net/ethernet/freescale/fec_main.c"


@pytest.mark.rule("TRACE-002")
def test_the_text_shows_each_part(everything: dict[str, dict[str, Any]]) -> None:
    for rid, d in everything.items():
        text = spec_cmd.render_text(d).plain
        assert text.startswith(f"{rid} — {d['title']}\n"), rid
        assert d["statement"] in text and f"Kind: {d['kind']}\n" in text, rid
        for f in d["cited_files"]:
            assert f["path"] in text and (f["url"] is None or f["url"] in text), rid
        for s in d["code"]:
            line = next(x for x in text.splitlines() if x.startswith(f"  {s['path']}:"))
            assert str(s["line"]) in line.split(":", 1)[1].split(", "), (rid, line)
        for s in d["tests"] + d["properties"]:
            assert f"  {s['path']}:{s['line']} {s['name']}\n" in text, rid
        assert f"Fixtures ({d['fixtures']['count']}):" in text


@pytest.mark.rule("TRACE-002")
def test_json_output_validates_against_its_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    code, out, err = _run(["spec", "--json", "*"])
    assert (code, err) == (0, "")
    doc = json.loads(out)
    jsonschema.validate(doc, SCHEMA)
    assert doc["query"] == ["*"] and len(doc["rules"]) == sum(
        line.startswith("#### ") for line in SPEC_LINES)


@pytest.mark.rule("TRACE-002")
def test_one_rule_prints_in_full() -> None:
    code, out, err = _run(["spec", "kfunc-attach-003"])  # case does not matter
    assert (code, err) == (0, "")
    assert out.startswith("KFUNC-ATTACH-003 — ")
    assert ("https://elixir.bootlin.com/linux/v6.17-rc3/source/kernel/bpf/offload.c" in out)
    assert "tests/test_kfuncs.py:" in out and "\nKind: kernel\n" in out


@pytest.mark.rule("TRACE-002")
def test_a_glob_lists_each_rule(everything: dict[str, dict[str, Any]]) -> None:
    want = [rid for rid in everything if rid.startswith("FEC-RX-")]
    assert len(want) > spec_cmd.TABLE_OVER
    code, out, _ = _run(["spec", "FEC-RX-*"])
    assert code == 0
    rows = [line.split()[0] for line in out.splitlines()[2:]]
    assert rows == want  # a compact table: one row per rule
    header = out.splitlines()[1].split()
    assert header == ["rule", "title", "code", "tests", "fixtures"]
    first = out.splitlines()[2].split()
    d = everything[want[0]]
    assert first[-3:] == [str(len(d["code"])), str(len(d["tests"]) + len(d["properties"])),
                          str(d["fixtures"]["count"])]
    code, full, _ = _run(["spec", "--full", "FEC-RX-*"])
    assert code == 0
    assert [line.split()[0] for line in full.splitlines()
            if line.startswith("FEC-RX-") and " — " in line] == want
    code, few, _ = _run(["spec", "TRACE-*", "ERR-00[12]"])
    assert code == 0 and few.startswith("ERR-001 — ") and "\nTRACE-002 — " in few


@pytest.mark.rule("TRACE-002", "ERR-001")
@pytest.mark.parametrize(("argv", "message"), [
    ([UNKNOWN_RULE], f"rx-oracle: spec {UNKNOWN_RULE}: no such rule; SPEC.md defines"),
    (["FEC-RX-01"], "rx-oracle: spec FEC-RX-01: no such rule; did you mean FEC-RX-01"),
    (["FEC-RX-001", "NOPE-*"], "rx-oracle: spec NOPE-*: no such rule;"),
    (["FEC-\nRX"], "rx-oracle: spec 'FEC-\\nRX': no such rule;"),  # still one line
])
def test_a_rule_that_does_not_exist_is_one_line_and_exit_2(argv: list[str], message: str) -> None:
    code, out, err = _run(["spec", *argv])
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith(message), err


@pytest.mark.rule("TRACE-002", "ERR-001")
def test_without_a_checkout_it_says_so_in_one_line(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A wheel install has the packages but not SPEC.md, tests/ or fixtures/."""
    monkeypatch.setattr(spectrace, "ROOT", tmp_path)
    code, out, err = _run(["spec", "FEC-RX-001"])
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1
    assert err.startswith(f"rx-oracle: spec: SPEC.md, tests/, fixtures/ not found in {tmp_path}")


@pytest.mark.rule("TRACE-002")
def test_a_lookup_parses_the_tree_once_and_is_fast() -> None:
    """CPU time, not wall time: the bound is the command's own cost on a busy machine."""
    spectrace.load.cache_clear()
    start = time.process_time()
    spec_cmd.lookup(["*"])
    cold = time.process_time() - start
    start = time.process_time()
    spec_cmd.lookup(["FEC-RX-001"])
    warm = time.process_time() - start
    assert spectrace.load.cache_info().misses == 1
    assert cold < 2.0 and warm < 0.5, (cold, warm)

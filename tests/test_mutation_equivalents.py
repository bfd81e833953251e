"""The registry of judged-equivalent mutants (conformance/mutation/equivalents/*.toml).

Every entry must still name a candidate mutant of the current ``reference/`` (an edited
line must be judged again), carry a reason, and the report must leave the equivalent
survivors out of the non-equivalent kill rate (issue 14's done-when figure). A malformed
registry is one line naming the entry and field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest

from conformance.mutation import equivalents, report, sampling, scope
from conformance.mutation.mutator import Mutant
from conformance.mutation.runner import KILLED, NOT_RUN, SURVIVED, MutantResult

ROOT = Path(__file__).resolve().parent.parent


def test_every_entry_names_a_current_mutant() -> None:
    registry = equivalents.load()
    paths = sorted({eq.path for eq in registry.values()})
    modules = scope.mutated_modules(ROOT)
    for path in paths:
        assert path in modules, f"the registry names {path}, not a mutated module"
    pool = sampling.candidates(ROOT, paths)
    sources = {p: (ROOT / p).read_text() for p in paths}
    by_key: dict[tuple[str, ...], list[Mutant]] = {}
    for m in pool:
        by_key.setdefault(equivalents.key_of(m, sources[m.path]), []).append(m)

    def names_a_mutant(eq: equivalents.Equivalent) -> bool:
        return any(eq.col in (None, m.col)
                   and (eq.above is None or eq.above == equivalents.above_of(
                       m, sources[m.path], eq.above.count("\n") + 1))
                   for m in by_key.get(eq.key, ()))

    stale = [eq for eq in registry.values() if not names_a_mutant(eq)]
    assert not stale, ("registry entries that match no mutant of the current "
                       "source (judge them again): "
                       + "; ".join(f"{eq.path} {eq.function} {eq.code!r}" for eq in stale))


def _mutant(line: int, replacement: str) -> Mutant:
    return Mutant(path="reference/rss.py", line=line, col=0, end_line=line, end_col=1,
                  operator="int", original="1", replacement=replacement, function="f")


def _result(m: Mutant, outcome: str) -> MutantResult:
    return MutantResult(mutant=m, components=("rss",), outcome=outcome,
                        exit_code=0 if outcome == SURVIVED else 1, seconds=1.0)


def test_equivalent_survivors_leave_the_non_equivalent_rate() -> None:
    """Hand-worked: 4 mutants, 2 killed, 2 survived of which 1 judged equivalent:
    kill rate 2/4 = 50 %, non-equivalent kill rate 2/3 = 67 %."""
    ms = [_mutant(n, f"({n})") for n in (1, 2, 3, 4)]
    results = [_result(ms[0], KILLED), _result(ms[1], KILLED), _result(ms[2], SURVIVED),
               _result(ms[3], SURVIVED)]
    eq = equivalents.Equivalent(path="reference/rss.py", function="f", operator="int",
                                original="1", replacement="(3)", code="x",
                                reason="a constant read nowhere")
    text = report.summary(results, equivalent={ms[2].id: eq})
    row = next(line for line in text.splitlines() if line.startswith("| rss |"))
    assert row.split("|")[7:10] == [" 50% ", " 1 ", " 67% "]
    assert "**equivalent**: a constant read nowhere" in text
    assert "1 judged equivalent, 1 not" in text


def test_survivors_no_property_ran_leave_the_reached_rate_and_ids_count_once() -> None:
    """Hand-worked: 5 distinct mutants (one listed twice: two operators made the same
    change), 2 killed, 3 survived: 1 judged equivalent, 1 that no property executes (it
    survived without a run), 1 plain survivor.  Kill rate 2/5 = 40 %, non-equivalent
    2/4 = 50 %, where reached 2/3 = 67 %."""
    ms = [_mutant(n, f"({n})") for n in (1, 2, 3, 4, 5)]
    unrun = attrs.evolve(_result(ms[3], SURVIVED),
                         detail=f"{NOT_RUN}rss executes the line at 7.3.4 (selection.json)")
    assert unrun.unreached and not _result(ms[4], SURVIVED).unreached
    results = [_result(ms[0], KILLED), _result(ms[1], KILLED), _result(ms[2], SURVIVED),
               unrun, _result(ms[4], SURVIVED), _result(ms[0], KILLED)]
    eq = equivalents.Equivalent(path="reference/rss.py", function="f", operator="int",
                                original="1", replacement="(3)", code="x",
                                reason="a constant read nowhere")
    text = report.summary(results, equivalent={ms[2].id: eq})
    row = next(line for line in text.splitlines() if line.startswith("| rss |"))
    cells = [c.strip() for c in row.split("|")[2:12]]
    assert cells == ["5", "2", "0", "0", "3", "40%", "1", "50%", "1", "67%"]
    assert "1 judged equivalent, 2 not, of which 1 not reached" in text
    assert "no property executes it" in text


def test_an_entry_naming_a_column_judges_only_that_mutant() -> None:
    """Two mutants of one line with the same key (the same text replaced the same way at
    two places): an entry with ``col`` judges one, an entry without judges both."""
    one, two = (attrs.evolve(_mutant(5, "(2)"), col=c) for c in (4, 9))
    source = "\n" * 4 + "x\n"
    base: dict[str, Any] = {
        "path": "reference/rss.py", "function": "f", "operator": "int", "original": "1",
            "replacement": "(2)", "code": "x", "reason": "a constant read nowhere"}
    by_col = equivalents.Equivalent(**base, col=9)
    registry = {by_col.entry_key: by_col}
    assert equivalents.lookup(registry, one, source) is None
    assert equivalents.lookup(registry, two, source) is by_col
    every = equivalents.Equivalent(**base)
    registry = {every.entry_key: every}
    assert equivalents.lookup(registry, one, source) is every
    assert equivalents.lookup(registry, two, source) is every


def test_registering_twice_or_an_ambiguous_key_is_refused_and_leaves_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    root = tmp_path / "root"
    registry = root / "conformance" / "mutation" / "equivalents"
    registry.mkdir(parents=True)
    (root / "reference").mkdir()
    (root / "reference" / "rss.py").write_text("\n" * 4 + "x\n")
    monkeypatch.setattr(equivalents, "REGISTRY", registry)
    one, two = (attrs.evolve(_mutant(5, "(2)"), col=c, code="x") for c in (4, 9))
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps({"mutant": m.to_json()}) + "\n" for m in (one, two)))
    reason = "a constant read nowhere"
    assert equivalents.main([str(results), one.id, reason]) == 2
    assert "--col" in capsys.readouterr().err
    assert not (registry / "rss.toml").exists()
    assert equivalents.main([str(results), two.id, reason, "--col"]) == 0
    written = (registry / "rss.toml").read_text()
    assert "col = 9" in written
    assert equivalents.main([str(results), two.id, reason, "--col"]) == 2
    assert "registered already" in capsys.readouterr().err
    assert (registry / "rss.toml").read_text() == written


def test_a_detected_equivalent_is_flagged() -> None:
    m = _mutant(1, "(2)")
    eq = equivalents.Equivalent(path=m.path, function="f", operator="int", original="1",
                                replacement="(2)", code="x", reason="a constant read nowhere")
    text = report.summary([_result(m, KILLED)], equivalent={m.id: eq})
    assert "judge them again" in text


@pytest.mark.parametrize(("body", "where"), [
    ('[[mutant]]\npath = "reference/rss.py"\n', "mutant/0"),
    ('[[mutant]]\npath = "x.py"\nfunction = ""\noperator = "int"\noriginal = "1"\n'
     'replacement = "2"\ncode = "x = 1"\nreason = "because it is"\n', "mutant/0/path"),
    ('[[mutant]]\npath = "reference/rss.py"\nfunction = ""\noperator = "neg"\n'
     'original = "1"\nreplacement = "2"\ncode = "x = 1"\nreason = "because it is"\n',
     "mutant/0/operator"),
    ("mutant = [", "not TOML"),
])
def test_a_malformed_registry_is_one_line(tmp_path: Path, body: str, where: str) -> None:
    path = tmp_path / "equivalents.toml"
    path.write_text(body)
    with pytest.raises(equivalents.RegistryError) as info:
        equivalents.load(path)
    assert where in str(info.value)
    assert "\n" not in str(info.value)


def _gate_since_mutants() -> list[Mutant]:
    """``Since(mainline=(7, 0)))`` moved to (6, 0): the same line in several gates of
    reference/kernel.py's table, each mutant with the same key."""
    return [m for m in sampling.candidates(ROOT, ["reference/kernel.py"])
            if m.code == "Since(mainline=(7, 0))),"
            and m.operator == "int" and m.original == "7" and m.replacement == "(6)"]


def test_an_entry_naming_the_line_around_judges_only_that_row_of_a_table() -> None:
    """KVER gate table: the rows of CPUMAP-MAP-003 and ZCRX-BUFLEN-001 end in the same
    line; ``above`` (the row's after-text, the line above) tells their mutants apart."""
    source = (ROOT / "reference/kernel.py").read_text()
    twins = _gate_since_mutants()
    places = {equivalents.above_of(m, source) for m in twins}
    assert len(twins) >= 2 and len(places) == len(twins)
    cpumap = next(m for m in twins
                  if equivalents.above_of(m, source).startswith('"the update reads'))
    key = equivalents.key_of(cpumap, source)
    eq = equivalents.Equivalent(*key, reason="a refused program reads -ENOMEM there anyway",
                                above=equivalents.above_of(cpumap, source))
    registry = {eq.entry_key: eq}
    assert [m for m in twins if equivalents.lookup(registry, m, source)] == [cpumap]


def test_an_identical_line_elsewhere_needs_within(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """Registering one row's mutant is refused until ``--above`` names its row, even when
    the run's results hold no twin (the twins are today's source's mutants); the entry goes
    to the gate table's own file."""
    registry = tmp_path / "equivalents"
    registry.mkdir()
    monkeypatch.setattr(equivalents, "REGISTRY", registry)
    one = _gate_since_mutants()[0]
    results = tmp_path / "results.jsonl"
    results.write_text(json.dumps({"mutant": one.to_json()}) + "\n")
    reason = "a move no supported version sees"
    assert equivalents.main([str(results), one.id, reason]) == 2
    assert "--above" in capsys.readouterr().err
    assert not list(registry.iterdir())
    assert equivalents.main([str(results), one.id, reason, "--above"]) == 0
    written = (registry / "kernel.toml").read_text()
    assert "above = " in written


def test_the_second_of_two_identical_lines_is_told_apart_by_the_line_above() -> None:
    """checksum.py's ``_from64to32`` folds twice with the same line: ``>> 32 → 33`` is
    killed in the first fold and equivalent in the second (x is below 2**33 by then), so
    the registry entry must name the second fold alone (the run found the first killed)."""
    source = (ROOT / "reference/checksum.py").read_text()
    folds = [m for m in sampling.candidates(ROOT, ["reference/checksum.py"])
             if m.function == "_from64to32" and m.operator == "int" and m.original == "32"
             and m.replacement == "(33)"]
    assert len(folds) == 2 and len({equivalents.key_of(m, source) for m in folds}) == 1
    first, second = sorted(folds, key=lambda m: m.line)
    registry = equivalents.load()
    assert equivalents.lookup(registry, first, source) is None
    assert equivalents.lookup(registry, second, source) is not None


def test_an_entry_can_name_several_lines_above() -> None:
    """Two identical lines below identical lines (flow_dissector._dissect: ``continue``
    then ``return True`` twice, the first reached only at the header limit): the entry
    names two lines above, so it names the first pair's mutant and not the second's."""
    source = (ROOT / "reference/flow_dissector.py").read_text()
    twins = [m for m in sampling.candidates(ROOT, ["reference/flow_dissector.py"])
             if m.function == "_dissect" and m.code == "return True"
             and m.replacement == "(False)"]
    assert len(twins) == 2
    first, second = sorted(twins, key=lambda m: m.line)
    assert equivalents.above_of(first, source) == equivalents.above_of(second, source)
    registry = equivalents.load()
    assert equivalents.lookup(registry, first, source) is not None
    assert equivalents.lookup(registry, second, source) is None
    assert equivalents.above_of(first, source, 2) == "if walk.allowed():\ncontinue"

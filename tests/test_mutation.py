"""Mutation testing (conformance/mutation): the operators, the table, the runner, the CLI.

The operators are checked on a small hand-written module: each one appears, every
mutant compiles and changes the AST, and nothing is mutated where no observable can
show it (docstrings, annotations, f-strings, raise messages, trace calls).  Two real
mutants of ``reference/rss.py`` run end to end: a flipped comparison in the RSS-XFRM-002
symmetric transform is killed; dropping the key-length check of ``toeplitz`` (a refusal
the suite never provokes: it only sends what the reference accepts) survives.  Neither
run may touch the real ``reference/`` tree.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import importlib.util
import json
from pathlib import Path

import attrs
import pytest

from conformance import cli
from conformance.mutation import blame, reach, report, runner, sampling, scope
from conformance.mutation.mutator import OPERATORS, Mutant, mutants_of_source

ROOT = Path(__file__).resolve().parent.parent

SAMPLE = '''\
"""A module with one site for every operator (RSS-TOEP-001 in the module docstring)."""
import enum
from typing import Literal


class Color(enum.IntEnum):
    RED = 1
    GREEN = 2


def emit(*args: object, **fields: object) -> None:
    pass


def pick(a: int, b: int, flag: Literal[7] | None = None, trace: object = None) -> int:
    """Pick a colour (RSS-IN-002)."""
    total = a
    total = b
    total += 3
    emit(trace, "RSS-IN-002", "chose", value=11)
    if trace is not None:
        emit(trace, "RSS-IN-002", "again", value=12)
    if a < b and not flag:
        return Color.RED
    if a == 13:
        raise ValueError(f"bad value {a + 14}")
    print(divmod(a, b))
    label = f"{a + 15}"
    return Color.GREEN if (True or label) else total


class Shape:
    def __repr__(self) -> str:
        return str(16 + 17)
'''


def _sample_mutants() -> list[Mutant]:
    namespace: dict[str, object] = {}
    exec(compile(SAMPLE, "sample.py", "exec"), namespace)
    return mutants_of_source(SAMPLE, "sample.py", namespace)


def test_every_operator_appears_and_every_mutant_compiles_and_changes_the_ast() -> None:
    mutants = _sample_mutants()
    assert {m.operator for m in mutants} == set(OPERATORS)
    for m in mutants:
        assert m.valid(SAMPLE), m.description
        mutated = m.apply(SAMPLE)
        compile(mutated, "sample.py", "exec")
        assert ast.dump(ast.parse(mutated)) != ast.dump(ast.parse(SAMPLE))


def test_each_operator_makes_the_expected_change() -> None:
    made = {(m.operator, m.original, m.replacement) for m in _sample_mutants()}
    assert ("cmp", "a < b", "(a <= b)") in made
    assert ("cmp", "a == 13", "(a != 13)") in made
    assert ("bool", "a < b and not flag", "(a < b or not flag)") in made
    assert ("bool", "not flag", "(flag)") in made
    assert ("bool", "True", "(False)") in made
    assert ("int", "3", "(4)") in made and ("int", "3", "(2)") in made
    assert ("int", "1", "(2)") in made  # an enum member's value is a constant like any
    assert ("stmt", "total = b", "pass") in made  # rebinds: total was bound before
    assert ("stmt", "total += 3", "pass") in made
    assert ("stmt", "print(divmod(a, b))", "pass") in made
    assert ("stmt", "if body: return Color.RED", "pass") in made
    assert ("args", "divmod(a, b)", "(divmod(b, a))") in made
    assert ("enum", "Color.RED", "(Color.GREEN)") in made
    assert ("enum", "Color.GREEN", "(Color.RED)") in made


def test_nothing_is_mutated_where_no_observable_can_show_it() -> None:
    mutants = _sample_mutants()
    texts = " ".join(m.original for m in mutants)
    for unseen in ("11", "12", "14", "15", "16", "17", "7", "emit(", "raise"):
        assert unseen not in texts, unseen
    # The first binding of a name is not dropped (a mere NameError), the second is.
    assert not any(m.original == "total = a" for m in mutants)
    # ``if a == 13: raise ...``: a body that only raises is not dropped.
    assert not any(m.operator == "stmt" and "raise" in m.original for m in mutants)


def test_a_mutant_knows_its_function_and_the_rules_it_names() -> None:
    flip = next(m for m in _sample_mutants() if m.original == "a < b")
    assert flip.function == "pick"
    assert flip.rules == ("RSS-IN-002",)
    assert Mutant.from_json(flip.to_json()) == flip


def test_mutants_of_non_ascii_lines_replace_the_right_bytes() -> None:
    source = 'def f(x: int) -> str:\n    return "é" if x < 1 else "ü"\n'
    (flip,) = [m for m in mutants_of_source(source, "u.py") if m.operator == "cmp"]
    assert flip.apply(source) == 'def f(x: int) -> str:\n    return "é" if (x <= 1) else "ü"\n'


def test_the_table_maps_every_module_to_components_that_import_it() -> None:
    components = {p.stem.removeprefix("test_")
                  for p in (ROOT / "conformance" / "properties").glob("test_*.py")}
    for path in scope.mutated_modules(ROOT):
        checked_by = scope.components_for(path)
        assert checked_by, f"{path} is mapped to no component"
        assert set(checked_by) <= components
        for component in checked_by:
            assert scope.module_name(path) in _imports(f"conformance.components.{component}"), \
                f"{component} does not import {path}"
    assert "reference/trace.py" not in scope.mutated_modules(ROOT)


def _imports(module: str, seen: set[str] | None = None) -> set[str]:
    """The static import closure of ``module`` through reference/ and the components."""
    seen = set() if seen is None else seen
    if module in seen:
        return seen
    seen.add(module)
    if "." in module:  # importing a module imports its packages first
        _imports(module.rpartition(".")[0], seen)
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None
    tree = ast.parse(Path(spec.origin).read_text())
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's package
                package = module if spec.submodule_search_locations else module.rpartition(".")[0]
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = f"{package}.{base}".rstrip(".")
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            if name.startswith(("reference", "conformance.components")) and _is_module(name):
                _imports(name, seen)
    return seen


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # ``from reference.errors import InvalidConfig``
        return False


def test_a_full_run_lists_a_change_two_operators_make_once(tmp_path: Path) -> None:
    """An ``if`` whose body is one call: dropping the body and dropping the statement are
    the same mutant (same id); ``--all`` runs and counts it once."""
    source = "def f(a):\n    if a:\n        g()\n    return 1\n"
    (tmp_path / "reference").mkdir()
    (tmp_path / "reference" / "x.py").write_text(source)
    found = mutants_of_source(source, "reference/x.py", {})
    ids = [m.id for m in found]
    assert len(ids) > len(set(ids))
    chosen = sampling.every_valid(tmp_path, found)
    assert sorted(m.id for m in chosen) == sorted(set(ids))
    assert chosen == [m for m in found if m in chosen]  # source order kept


def test_a_sample_is_spread_over_components_and_reproducible() -> None:
    pool = sampling.candidates(ROOT, scope.mutated_modules(ROOT))
    first = sampling.sample(ROOT, pool, 10, seed=3)
    assert first == sampling.sample(ROOT, pool, 10, seed=3)
    assert first != sampling.sample(ROOT, pool, 10, seed=4)
    assert len({scope.components_for(m.path)[0] for m in first}) == 10


def test_outcomes_follow_the_suite_exit_status() -> None:
    m = next(m for m in _sample_mutants() if m.original == "a < b")
    assert runner.classify(m, ("rss",), 0, "", (), 1.0).outcome == runner.SURVIVED
    killed = runner.classify(m, ("rss",), 1, "", ("RSS-IN-002",), 1.0)
    assert killed.outcome == runner.KILLED and killed.under_own_rule is True
    elsewhere = runner.classify(m, ("rss",), 1, "", ("RSS-TOEP-001",), 1.0)
    assert elsewhere.under_own_rule is False
    crash = runner.classify(m, ("rss",), 2, "x\nrx-oracle: 3 case(s) ended in a target error", (),
                            1.0)
    assert crash.outcome == runner.CRASHED and crash.detail.startswith("rx-oracle: 3 case")
    hang = "rx-oracle: 1 case(s) ended in a target error; first: ... no answer within 5s"
    assert runner.classify(m, ("rss",), 2, hang, (), 1.0).outcome == runner.TIMED_OUT
    assert runner.classify(m, ("rss",), None, "", (), 1.0).outcome == runner.TIMED_OUT
    # every rule not applicable: exit 2, but nothing was checked, so nothing killed it
    unchecked = f"rx-oracle: {cli.NO_RULE_CHECKED}: exec:... implements none of what ..."
    assert runner.classify(m, ("rss",), 2, unchecked, (), 1.0).outcome == runner.SURVIVED
    # three distinct mutants (a summary counts each id once)
    table = report.summary([killed, attrs.evolve(elsewhere, mutant=attrs.evolve(m, col=m.col + 1)),
                            attrs.evolve(crash, mutant=attrs.evolve(m, col=m.col + 2))])
    assert "| rss | 3 | 2 | 1 | 0 | 0 | 100% | 0 | 100% | 0 | 100% | 50% (2) | 0.0 |" in table


def test_the_summary_marks_survivors_the_ci_run_never_executes() -> None:
    m = next(m for m in _sample_mutants() if m.original == "a < b")
    assert m.stmt_line == m.line  # the ``if`` holding the comparison
    survivor = runner.classify(m, ("rss",), 0, "", (), 1.0)
    unreached = report.summary([survivor], executed={"sample.py": frozenset({1, 2})})
    assert "`sample.py:" in unreached and "not executed by the ci run" in unreached
    reached = report.summary([survivor], executed={"sample.py": frozenset({m.stmt_line})})
    assert "not executed" not in reached


def _rss_mutant(function: str, original: str) -> Mutant:
    path = "reference/rss.py"
    namespace = vars(importlib.import_module("reference.rss"))
    source = (ROOT / path).read_text()
    return next(m for m in mutants_of_source(source, path, namespace)
                if m.function == function and m.original == original)


def _tree_state() -> dict[str, tuple[int, str]]:
    return {str(p.relative_to(ROOT)): (p.stat().st_mtime_ns,
                                      hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted((ROOT / "reference").rglob("*.py"))}


@pytest.mark.rule("RSS-XFRM-002")
def test_a_flipped_comparison_in_rss_is_killed_and_the_real_tree_is_untouched(
    tmp_path: Path,
) -> None:
    mutant = _rss_mutant("_pair", "xfrm == RXH_XFRM_SYM_XOR")
    assert "RSS-XFRM-002" in mutant.rules
    before = _tree_state()
    result = runner.run_mutant(mutant, ("rss",), root=ROOT, scratch=tmp_path)
    assert _tree_state() == before
    assert list(tmp_path.iterdir()) == []  # the scratch copy is gone too
    assert result.outcome == runner.KILLED, result.detail
    assert "RSS-XFRM-002" in result.failed_rules and result.under_own_rule


@pytest.mark.rule("RSS-TOEP-001")
def test_dropping_a_refusal_the_suite_never_provokes_survives() -> None:
    mutant = _rss_mutant("toeplitz", "_check_key(key, len(data))")
    before = _tree_state()
    result = runner.run_mutant(mutant, ("rss",), root=ROOT)
    assert _tree_state() == before
    assert result.outcome == runner.SURVIVED, result.detail


@pytest.mark.parametrize(("argv", "message"), [
    (["--sample", "-3"], "--sample must be a positive number"),
    (["-j", "0"], "-j must be a positive number"),
    (["--component", "nosuch"], "unknown component nosuch"),
    (["--module", "reference/nosuch.py"], "not a mutated module"),
    (["--module", "/elsewhere/rss.py"], "not under"),
])
def test_user_mistakes_are_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["mutate", "--list", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_an_unusable_out_directory_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert cli.main(["mutate", "--module", "reference/tun.py", "--sample", "1",
                     "--out", str(blocker)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rx-oracle mutate: --out") and len(err.strip().splitlines()) == 1


def test_list_shows_the_selection_without_running(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["mutate", "--list", "--module", "reference/tun.py", "--operator", "cmp",
                     "--all"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(line.startswith("reference/tun.py:") and "[tun]" in line
                         for line in lines)


def test_again_reruns_the_survivors_of_an_earlier_run_by_their_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["mutate", "--list", "--module", "reference/tun.py", "--all"]) == 0
    listed = capsys.readouterr().out.splitlines()
    mutants = [m for m in sampling.candidates(ROOT, ["reference/tun.py"])
               if m.id in {line.split()[0] for line in listed}]
    survivor, killed = mutants[0], mutants[1]
    # an earlier run, its survivor three lines further down than today (an edit above it)
    moved = Mutant.from_json({**survivor.to_json(), "line": survivor.line + 3,
                              "end_line": survivor.end_line + 3})
    results = [runner.classify(moved, ("tun",), 0, "", (), 1.0),
               runner.classify(killed, ("tun",), 1, "", ("TUN-BUF-001",), 1.0)]
    report.write_jsonl(tmp_path / report.RESULTS, results)
    assert cli.main(["mutate", "--list", "--again", str(tmp_path)]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == [survivor.id]
    (tmp_path / report.RESULTS).write_text("{not json\n")
    assert cli.main(["mutate", "--list", "--again", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--again" in err and "not a results file" in err and len(err.splitlines()) == 1


def test_a_run_stopped_part_way_resumes_from_its_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ran: list[str] = []

    def fake_run(mutant: Mutant, components: tuple[str, ...], **_: object
                 ) -> runner.MutantResult:
        ran.append(mutant.id)
        return runner.classify(mutant, components, 0, "", (), 0.5)

    monkeypatch.setattr(runner, "run_mutant", fake_run)
    argv = ["mutate", "--module", "reference/tun.py", "--operator", "bool", "--all",
            "--out", str(tmp_path), "-j", "1"]
    assert cli.main(argv) == 0
    first = report.read_jsonl(tmp_path / report.RESULTS)
    assert len(first) == len(ran) >= 3 and not (tmp_path / report.PARTIAL).exists()
    # stopped after one result and half a line: --resume keeps the one, runs the rest
    line = (tmp_path / report.RESULTS).read_text().splitlines()[0]
    (tmp_path / report.PARTIAL).write_text(line + "\n" + line[:20])
    ran.clear()
    assert cli.main([*argv, "--resume"]) == 0
    assert "resuming: 1 results kept" in capsys.readouterr().err
    assert ran == [r.mutant.id for r in first[1:]]
    assert report.read_jsonl(tmp_path / report.RESULTS) == first
    assert cli.main([*argv, "--resume"]) == 2  # the journal is gone once a run completes
    assert "nothing to resume" in capsys.readouterr().err


def test_a_constant_nothing_reads_is_not_mutated() -> None:
    source = "A = 1\nB: int = (\n    2)\nC, D = 3, 4\nprint(A, mod.D)\n"
    assert sampling._unread_constant_lines(source, frozenset({"A", "D", "print", "mod"})) \
        == {2, 3}  # B alone is unread; C is bound with D, which is read
    candidates = sampling.candidates(ROOT, ["reference/fec/bufdesc.py"])
    assert candidates and not any("BD_SC_EMPTY" in m.code for m in candidates)


def test_reach_reads_coverage_json_per_module() -> None:
    doc = {"files": {
        str(ROOT / "reference" / "rss.py"): {"summary": {
            "num_statements": 10, "missing_lines": 2, "num_branches": 4,
            "num_partial_branches": 1, "missing_branches": 1, "percent_covered": 78.57}},
        "reference/tun.py": {"summary": {
            "num_statements": 4, "missing_lines": 0, "num_branches": 0,
            "num_partial_branches": 0, "missing_branches": 0, "percent_covered": 100.0}},
    }}
    modules = reach.parse(doc, ROOT)
    assert [m.path for m in modules] == ["reference/rss.py", "reference/tun.py"]
    assert (modules[0].line_percent, modules[0].branch_percent) == (80.0, 75.0)
    text = reach.table(modules)
    assert "| reference/rss.py | 10 | 2 | 80% | 4 | 1 | 75% | 79% |" in text
    assert "| **all** | 14 | 2 | 86% | 4 | 1 | 75% | 83% |" in text


def test_first_failure_stops_the_suite_at_its_first_failing_property(tmp_path: Path) -> None:
    """RSS-RETA-004: a port taking the queue from the hash's high bits fails the same rule
    either way; with --first-failure the properties after the failing one are not run."""
    from conformance.mutation import suite

    verdicts = {}
    for flag in ([], ["--first-failure"]):
        out = tmp_path / f"report{len(flag)}.json"
        code = suite.main([*flag, "--target", "python:tests.wrong_targets:RssQueueFromHighBits",
                           "--driver", "rss", "--report", str(out)])
        assert code == 1
        rules = json.loads(out.read_text())["rules"]
        verdicts[bool(flag)] = {r["rule"]: r["verdict"] for r in rules}
    for whole_run, failed in verdicts.items():
        assert [r for r, v in failed.items() if v == "fail"] == ["RSS-RETA-004"], whole_run
    passed = {flag: sum(v == "pass" for v in got.values()) for flag, got in verdicts.items()}
    assert passed[True] < passed[False]


def test_older_trees_judge_only_survivors_the_default_kernel_never_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a coverage report of today's sources and older_trees="unexecuted" (the full
    run's choice), a mutant whose line the default kernel's ci run executed is judged
    there alone (by default every survivor goes on to the older trees); one on a line it
    never ran is judged at every supported tree and the first releases whose gates differ
    (gates.kernels_for); a stale report is not used."""
    ran = next(m for m in sampling.candidates(ROOT, ["reference/rss.py"]) if m.line > 1)
    idle = attrs.evolve(ran, line=ran.line + 1, end_line=ran.end_line + 1, stmt_line=ran.line + 1)
    (tmp_path / reach.COVERAGE).write_text(json.dumps({"files": {
        str(ROOT / ran.path): {"executed_lines": [ran.stmt_line]}}}))
    (tmp_path / reach.DIGEST).write_text(reach.source_digest(ROOT) + "\n")
    executed = reach.fresh_executed_lines(tmp_path, ROOT)
    assert executed == {ran.path: frozenset({ran.stmt_line})}
    seen: dict[int, tuple[str, ...]] = {}

    def fake_run(mutant: Mutant, components: tuple[str, ...], *, kernels: tuple[str, ...],
                 **_: object) -> runner.MutantResult:
        seen[mutant.line] = kernels
        return runner.classify(mutant, components, 0, "", (), 0.1)

    monkeypatch.setattr(runner, "run_mutant", fake_run)
    runner.run_all([(ran, ("rss",)), (idle, ("rss",))], root=ROOT, jobs=1, executed=executed,
                   older_trees="unexecuted")
    # 6.18.0 and 6.12.0: the first releases of their series, where KFUNC-ATTACH-004's
    # stable entries (6.18.44, 6.12.113) and the 6.12 backports answer otherwise.
    assert seen == {ran.line: (),
                    idle.line: ("7.3.4", "6.18.44", "6.12.117", "6.18.0", "6.12.0")}
    runner.run_all([(ran, ("rss",))], root=ROOT, jobs=1, executed=executed)  # the default
    assert seen[ran.line] == ("7.3.4", "6.18.44", "6.12.117", "6.18.0", "6.12.0")
    (tmp_path / reach.DIGEST).write_text("0" * 64 + "\n")
    assert reach.fresh_executed_lines(tmp_path, ROOT) is None


def test_rule_shorthands_are_spelt_out() -> None:
    """A docstring's ``PP-RECYCLE-003/004/005`` names three rules, ``FEC-BD-001 .. 003``
    three, ``PKT-ETH-001 … PKT-ETH-002`` every rule between them in SPEC.md order; a range
    SPEC.md has no rules for names none."""
    assert blame.ids_in("(PP-RECYCLE-003/004/005)") == (
        "PP-RECYCLE-003", "PP-RECYCLE-004", "PP-RECYCLE-005")
    assert blame.ids_in("FEC-BD-001 .. 003") == ("FEC-BD-001", "FEC-BD-002", "FEC-BD-003")
    assert blame.ids_in("PKT-ETH-001 … PKT-VLAN-001") == (
        "PKT-ETH-001", "PKT-ETH-002", "PKT-VLAN-001")
    assert blame.ids_in("CSUM-001..999") == ("CSUM-001",)
    src = 'def f():\n    """x (PP-RECYCLE-003/004)."""\n    return 1 < 2\n'
    (m,) = [m for m in mutants_of_source(src, "reference/x.py") if m.operator == "cmp"]
    assert m.rules == ("PP-RECYCLE-003", "PP-RECYCLE-004")


def test_a_kill_by_the_rule_spec_names_as_observer_is_under_own_rule() -> None:
    """RSS-TOEP-002 (the byte tables) is *checked through RSS-TOEP-001* (SPEC.md): a mutant
    of the tables failing RSS-TOEP-001 is caught under its own rule; one failing only
    RSS-IN-002 is not.  Ranges in the line count (PP-RECYCLE-008: *checked as
    PP-RECYCLE-001 .. PP-RECYCLE-006 and PP-DMA-001*)."""
    assert blame.under_own_rule(("RSS-TOEP-002",), ("RSS-TOEP-001",)) is True
    assert blame.under_own_rule(("RSS-TOEP-002",), ("RSS-IN-002",)) is False
    assert blame.under_own_rule((), ("RSS-IN-002",)) is None
    assert blame.under_own_rule(("RSS-TOEP-002",), ()) is None
    assert blame.observers()["PP-RECYCLE-008"] == {
        *(f"PP-RECYCLE-00{i}" for i in range(1, 7)), "PP-DMA-001"}
    m = next(m for m in _sample_mutants() if m.original == "a < b")
    tables = attrs.evolve(m, rules=("RSS-TOEP-002",))
    killed = runner.classify(tables, ("rss",), 1, "", ("RSS-TOEP-001",), 1.0)
    assert killed.under_own_rule is True
    assert "| 100% (1) |" in report.summary([killed])

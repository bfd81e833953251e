"""pytest plugin: the ``rule`` marker, rule selection and per-rule verdicts.

Registered as a ``pytest11`` entry point, so any pytest run in an environment with
rx-oracle installed understands ``@pytest.mark.rule("RSS-TOEP-001", ...)`` and the
``--rx-rules GLOB`` option.  ``rx-oracle conformance`` drives pytest with this plugin
and renders the verdicts it gathers.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Generator, Iterable
from pathlib import Path
from typing import Any

import attrs
import pytest

from conformance.check import (
    RuleMismatch,
    ShrinkStopped,
    TargetFault,
    TargetSession,
    replay_command,
)
from conformance.fixtures.record import FIXTURE_FORMAT, FIXTURE_VERSION, dump_line, scenario_key
from conformance.scenario import Scenario, to_jsonable
from conformance.targets.base import TargetError, TargetSpecError, load_target
from reference.errors import OracleError

#: The four verdicts a rule can get, strongest first: one case that failed fails the
#: rule; else one that checked it passes it; else a case that could have judged it but
#: did not leaves it not checked; else every case naming it was outside what the target
#: (or the reference, at this kernel) can run, and it is not applicable.
FAIL, PASS = "fail", "pass"
NOT_CHECKED, NOT_APPLICABLE = "not checked", "not applicable"
#: How the table shows each verdict (rich markup styles).
STYLE = {FAIL: "bold red", PASS: "green", NOT_CHECKED: "yellow", NOT_APPLICABLE: "dim"}

#: A skip reason that means "outside what the target or the reference can run"; any other
#: skip (the target given up as broken) leaves the case's rules not checked.
_NOT_APPLICABLE_PREFIX = "not applicable: "

#: Python's default repr of an object, which says nothing to a reader (hypothesis quotes
#: the arguments of a failing example: ``rx_target=<…TargetSession object at 0x7f…>``).
_OBJECT_REPR = re.compile(r"<[\w.]+ object at 0x[0-9a-fA-F]+>")


def one_line(text: str) -> str:
    """A reason as one clean line: its lines joined, object reprs left out."""
    line = " ".join(part.strip() for part in str(text).splitlines() if part.strip())
    return _OBJECT_REPR.sub("…", line).removeprefix("Skipped: ").strip()


@attrs.define
class RuleVerdict:
    """What the suite concluded about one SPEC rule, and the cases it rests on."""

    rule: str
    verdict: str = NOT_APPLICABLE
    passed: int = 0
    failed: int = 0
    #: Cases outside what the target or the reference can run, and why (deduplicated).
    not_applicable: int = 0
    not_applicable_reasons: list[str] = attrs.field(factory=list)
    #: Cases that could have judged the rule but did not, and why.
    not_checked: int = 0
    not_checked_reasons: list[str] = attrs.field(factory=list)
    failures: list[str] = attrs.field(factory=list)
    #: The full failure texts (reproducers), for printing after the table.
    reproducers: list[str] = attrs.field(factory=list)
    #: One record per failing case: test, kind, detail, scenario, replay command.
    cases: list[dict[str, Any]] = attrs.field(factory=list)

    def add(
        self, outcome: str, nodeid: str, detail: str, full: str = "",
        case: dict[str, Any] | None = None,
    ) -> None:
        if outcome == FAIL:
            self.failed += 1
            self.failures.append(f"{nodeid.rpartition('/')[2]}: {detail}".strip())
            if full and full not in self.reproducers:
                self.reproducers.append(full)
            if case is not None:
                self.cases.append(case)
        elif outcome == PASS:
            self.passed += 1
        elif outcome == NOT_CHECKED:
            self.not_checked += 1
            _add_reason(self.not_checked_reasons, detail)
            if full and full not in self.reproducers:  # the suite's own error, in full
                self.reproducers.append(full)
        else:
            self.not_applicable += 1
            _add_reason(self.not_applicable_reasons, detail.removeprefix(_NOT_APPLICABLE_PREFIX))
        self.verdict = (FAIL if self.failed else PASS if self.passed
                        else NOT_CHECKED if self.not_checked else NOT_APPLICABLE)

    @property
    def total(self) -> int:
        """Every case that named the rule, whatever became of it."""
        return self.passed + self.failed + self.not_checked + self.not_applicable

    def detail(self) -> str:
        """The table's detail: what the verdict rests on, never another verdict's reasons
        (a pass shows at most how many of its cases did not judge it)."""
        if self.verdict == FAIL:
            return "; ".join(self.failures[:2])
        if self.verdict == NOT_CHECKED:
            return "; ".join(self.not_checked_reasons[:2])
        if self.verdict == NOT_APPLICABLE:
            return "; ".join(self.not_applicable_reasons[:2])
        counts = [f"{n} {what}" for n, what in ((self.not_checked, NOT_CHECKED),
                                                 (self.not_applicable, NOT_APPLICABLE)) if n]
        return f"{', '.join(counts)} of {self.total} cases" if counts else ""

    def to_json(self) -> dict[str, Any]:
        """The rule's entry in the ``rx-oracle-report`` (version 2)."""
        return {"rule": self.rule, "verdict": self.verdict, "passed": self.passed,
                "failed": self.failed, "not_applicable": self.not_applicable,
                "not_checked": self.not_checked,
                "not_applicable_reasons": self.not_applicable_reasons,
                "not_checked_reasons": self.not_checked_reasons,
                "failures": self.failures, "cases": self.cases}


def _add_reason(reasons: list[str], detail: str) -> None:
    if detail and detail not in reasons:
        reasons.append(detail)


@attrs.define(eq=False)  # pluggy keeps plugins in sets: identity hashing
class RuleCollector:
    """Gathers one verdict per rule from test reports."""

    selectors: tuple[str, ...] = ()
    verdicts: dict[str, RuleVerdict] = attrs.field(factory=dict)
    #: Cases skipped because the target was given up as broken (it never answered).
    target_errors: list[str] = attrs.field(factory=list)
    #: How many inputs the target answered (ran and returned observables), over all tests.
    answered: int = 0
    #: Rule-marked cases that ended in a target fault.
    faulted: list[str] = attrs.field(factory=list)
    #: Set when the target could not be loaded at all (the run stops, exit 2).
    unavailable: str | None = None
    #: Set when a ``--save-failures`` fixture could not be written (the run ends, exit 2).
    output_error: str | None = None
    #: KVER-001: the kernel version the reference predicted for (set by ``rx_target``).
    kernel: str | None = None
    #: What the target said about itself (a live kernel's refused helpers) and how many
    #: inputs could not run because of it; printed once after the table.
    notes: list[str] = attrs.field(factory=list)

    def selected(self, rules: Iterable[str]) -> bool:
        if not self.selectors:
            return True
        return any(fnmatch.fnmatchcase(r, s) for r in rules for s in self.selectors)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        keep, drop = [], []
        for item in items:
            rules = credited_rules(item)
            if self.selected(rules):
                keep.append(item)
                # Travels with every report, so xdist's controller sees it too.
                item.user_properties.append(("rx_rules", ",".join(rules)))
            else:
                drop.append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self, item: pytest.Item) -> None:
        session = getattr(item, "funcargs", {}).get("rx_target")
        if isinstance(session, TargetSession):
            session.begin_property()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, None]:
        outcome = yield
        report = outcome.get_result()
        exc = call.excinfo.value if call.excinfo is not None else None
        session = getattr(item, "funcargs", {}).get("rx_target")
        if call.when == "call" and isinstance(session, TargetSession):
            # Whether the target answers at all is counted per answer, not per test: a
            # property that got 16 answers and then a fault saw a target that runs.  The
            # count travels with the report, so xdist's controller sums it too.
            report.user_properties.append(("rx_answers", str(session.answers_in_property)))
        if report.skipped and isinstance(report.longrepr, tuple) and exc is not None:
            # The skip's own reason, without the notes hypothesis adds to it (the failing
            # explicit example, with its arguments' reprs): the table and junit read this.
            where, lineno, _ = report.longrepr
            reason = one_line(str(getattr(exc, "msg", exc)))
            report.longrepr = (where, lineno, f"Skipped: {reason}")
        found = _judged_failures(exc)
        if not found:
            return
        if isinstance(exc, ShrinkStopped):
            report.outcome = "failed"  # hypothesis did not see it: it is still this test's
        # Only the rules governing the first differing field fail (all of them for a fault).
        failed: dict[str, None] = {}
        for failure in found:
            failed.update(dict.fromkeys(failure.rules or credited_rules(item)))
        report.user_properties.append(("rx_failed_rules", ",".join(failed)))
        if all(isinstance(f, TargetFault) for f in found):
            report.user_properties.append(("rx_faulted", "1"))
        for failure in found:
            if not failure.spec and isinstance(session, TargetSession):
                failure.spec = session.spec  # a property's own RuleMismatch: same target
            report.user_properties.append(("rx_case", json.dumps(_case(failure, item.nodeid))))
        # The reproducer says everything; a traceback through the suite would not help.
        texts = [str(exc)] if isinstance(exc, ShrinkStopped) else [str(f) for f in found]
        report.longrepr = "\n\n".join(
            f"{'TargetFault' if isinstance(f, TargetFault) else 'RuleMismatch'}: {t}"
            for f, t in zip(found, texts, strict=True))
        directory = item.config.getoption("--rx-save-failures")
        if directory and report.when == "call" and self.output_error is None:
            from conformance.outputs import OutputError

            for failure in found:
                try:
                    path = save_failure(Path(directory), failure, item.nodeid,
                                        failure.rules or credited_rules(item))
                except OutputError as error:
                    # Losing a failure silently is worse than no verdict: end the run.
                    self.output_error = str(error)
                    item.session.shouldstop = str(error)
                    # Travels with the report, so xdist's controller learns it too.
                    report.user_properties.append(("rx_output_error", str(error)))
                    break
                report.sections.append(("rx-oracle", f"saved as fixture {path}"))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties)
        if props.get("rx_output_error") and self.output_error is None:
            self.output_error = str(props["rx_output_error"])
        rules = [r for r in str(props.get("rx_rules", "")).split(",") if r]
        self.answered += int(str(props.get("rx_answers", 0)))
        if not (report.when == "call" or (report.when == "setup" and not report.passed)):
            return
        detail = _detail(report)
        if report.skipped:
            if detail.startswith("target error"):
                self.target_errors.append(f"{report.nodeid}: {detail}")
            judged = NOT_APPLICABLE if detail.startswith(_NOT_APPLICABLE_PREFIX) else NOT_CHECKED
            for rule in rules:
                self.verdicts.setdefault(rule, RuleVerdict(rule)).add(judged, report.nodeid,
                                                                      detail)
            return
        failed_rules = props.get("rx_failed_rules")
        if report.failed and failed_rules is not None:
            if props.get("rx_faulted"):
                self.faulted.append(f"{report.nodeid}: {detail}")
            blamed = [r for r in str(failed_rules).split(",") if r] or rules
            full = report.longreprtext
            cases = [json.loads(str(v)) for k, v in report.user_properties if k == "rx_case"]
            for rule in blamed:
                verdict = self.verdicts.setdefault(rule, RuleVerdict(rule))
                verdict.add(FAIL, report.nodeid, detail, full)
                verdict.cases.extend(c for c in cases if rule in c["rules"] or not c["rules"])
            # The test stopped at that failure, so its other rules were not checked by it.
            why = f"the test stopped at a failure of {', '.join(blamed)}"
            for rule in rules:
                if rule not in blamed:
                    self.verdicts.setdefault(rule, RuleVerdict(rule)).add(
                        NOT_CHECKED, report.nodeid, why)
            return
        if report.failed:
            # No verdict on the target: the suite itself failed (an error in setup, a
            # hypothesis health check), so the rules could have been judged and were not.
            # The run exits 2 unless some rule failed (conformance/cli.py).
            why = f"the suite failed: {detail}" if detail else "the suite failed"
            for rule in rules:
                self.verdicts.setdefault(rule, RuleVerdict(rule)).add(
                    NOT_CHECKED, report.nodeid, why, report.longreprtext)
            return
        for rule in rules:
            self.verdicts.setdefault(rule, RuleVerdict(rule)).add(PASS, report.nodeid, "")


def rules_of(item: pytest.Item) -> tuple[str, ...]:
    """The rule ids an item's ``rule`` markers name, in order, without duplicates."""
    seen: dict[str, None] = {}
    for mark in item.iter_markers("rule"):
        for rid in mark.args:
            seen[str(rid)] = None
    return tuple(seen)


def credited_rules(item: pytest.Item) -> tuple[str, ...]:
    """The rules a passing item credits: its ``rule`` markers' rules, narrowed for a fixed
    case (an item parametrized with a :class:`~conformance.scenario.Scenario` that names
    the rules it aims at) to the marker's rules the case names.  A property's marker lists
    every rule any of its cases aims at; one case that stops at a registration check does
    not check the data path rules its neighbours aim at, so it must not credit them.  A
    failure is still blamed on the rule of the first differing field, whichever it is."""
    rules = rules_of(item)
    callspec = getattr(item, "callspec", None)
    scenario = callspec.params.get("scenario") if callspec is not None else None
    if isinstance(scenario, Scenario) and scenario.rules:
        aimed = tuple(rule for rule in rules if rule in scenario.rules)
        if aimed:
            return aimed
    return rules


def _judged_failures(exc: BaseException | None) -> list[RuleMismatch]:
    """The suite's own verdicts inside a test's exception: a mismatch, a target fault, a
    property that stopped shrinking a hang, or several of them in a hypothesis group.
    Empty when anything else is in there (an error in the suite itself)."""
    if isinstance(exc, ShrinkStopped):
        return [exc.fault]
    if isinstance(exc, RuleMismatch):
        return [exc]
    if isinstance(exc, BaseExceptionGroup):
        found = [f for e in exc.exceptions for f in _judged_failures(e)]
        return found if len(found) == len(exc.exceptions) else []
    return []


def _case(failure: RuleMismatch, nodeid: str) -> dict[str, Any]:
    """A failing case as the JSON report carries it."""
    kind = failure.kind if isinstance(failure, TargetFault) else "mismatch"
    return {
        "test": nodeid,
        "kind": kind,
        "rules": list(failure.rules),
        "detail": str(failure).splitlines()[0],
        "scenario": failure.scenario.to_json(),
        "replay": replay_command(failure.spec, failure.scenario) if failure.spec else "",
    }


def _detail(report: pytest.TestReport) -> str:
    """One line saying why a test was skipped or failed."""
    if report.skipped and isinstance(report.longrepr, tuple):
        return one_line(str(report.longrepr[2]))
    if report.failed and isinstance(report.longrepr, str):
        first = report.longrepr.splitlines()[0]
        return first.removeprefix("RuleMismatch: ").removeprefix("TargetFault: ")
    if report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        message = str(getattr(crash, "message", "")).strip() if crash else ""
        return one_line(message.splitlines()[0]) if message else ""
    return ""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rx-oracle")
    group.addoption(
        "--rx-target",
        default="reference",
        metavar="TARGET",
        help="implementation under test: reference (default), python:MODULE:OBJECT, "
        "exec:COMMAND or fixtures:DIR",
    )
    group.addoption(
        "--rx-fixtures",
        default=None,
        metavar="DIR",
        help="the fixture set conformance/fixtures/replay.py replays (fixtures verify)",
    )
    group.addoption(
        "--rx-save-failures",
        default=None,
        metavar="DIR",
        help="write every failure as a golden fixture (JSON lines) into DIR",
    )
    group.addoption(
        "--rx-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="per-request timeout for exec targets (default 10)",
    )
    group.addoption(
        "--rx-kernel",
        default=None,
        metavar="VERSION",
        help="the kernel version the reference predicts for (6.12, 6.18, 7.3, or a full "
        "version such as 6.12.57); default: the target's own kernel, else the newest",
    )
    group.addoption(
        "--rx-rules",
        action="append",
        default=[],
        metavar="GLOB",
        help="run only tests that check a rule matching GLOB (e.g. 'RSS-*'); repeatable",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "rule(*ids): the SPEC.md rule ids a test checks")
    if config.pluginmanager.has_plugin("rx-oracle-rules"):
        return
    selectors = tuple(config.getoption("--rx-rules") or ())
    config.pluginmanager.register(RuleCollector(selectors), "rx-oracle-rules")


@pytest.fixture(scope="session")
def rx_target(request: pytest.FixtureRequest) -> Generator[TargetSession, None, None]:
    """The target under test for this run, with its error bookkeeping."""
    spec = str(request.config.getoption("--rx-target"))
    try:
        target = load_target(spec, timeout=float(request.config.getoption("--rx-timeout")))
    except (TargetError, TargetSpecError) as exc:
        collector(request.config).unavailable = str(exc)
        pytest.exit(f"rx-oracle: target error: {exc}", returncode=pytest.ExitCode.USAGE_ERROR)
    try:
        session = TargetSession(target, spec,
                                give_up=not request.config.getoption("--rx-fixtures"),
                                kernel=request.config.getoption("--rx-kernel"))
    except (TargetError, OracleError) as exc:  # no hello, or a kernel refused (KVER-002)
        target.close()
        collector(request.config).unavailable = str(exc)
        pytest.exit(f"rx-oracle: {exc}", returncode=pytest.ExitCode.USAGE_ERROR)
    rules = collector(request.config)
    rules.kernel = session.kernel
    rules.notes.extend(str(note) for note in getattr(target, "notes", ()))
    try:
        yield session
    finally:
        target.close()
        rules.notes.extend(f"{count} input(s) not run: {reason}"
                           for reason, count in session.rejected.items())


def save_failure(
    directory: Path, failure: RuleMismatch, nodeid: str, rules: Iterable[str] = ()
) -> Path:
    """Write a failure as a one-line fixture: the scenario and the reference's observables.

    ``rules`` are the rules the fixture checks (those that failed; for a target fault,
    every rule of the property).
    """
    from conformance import outputs
    from reference import __version__

    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise outputs.OutputError(f"--save-failures {directory}: cannot make the "
                                  f"directory: {outputs.describe(exc)}") from None
    key = scenario_key(failure.scenario)
    rules = list(rules) or list(failure.rules)
    rule = rules[0] if rules else "unattributed"
    path = directory / f"{rule}-{key[:12]}.jsonl"
    record: dict[str, Any] = {
        "format": FIXTURE_FORMAT,
        "version": FIXTURE_VERSION,
        "id": f"failure-{key[:12]}",
        "rules": rules,
        "scenario": failure.scenario.to_json(),
        "observables": to_jsonable(failure.expected),
        "provenance": {"oracle_version": __version__, "source": "conformance failure",
                       "kernel": failure.scenario.kernel,
                       "test": nodeid,
                       "kind": failure.kind if isinstance(failure, TargetFault) else "mismatch"},
    }
    if failure.mask:  # a property that compared less (a published vector) replays the same
        record["mask"] = list(failure.mask)
    outputs.write_text("--save-failures", path, dump_line(record))
    return path


def collector(config: pytest.Config) -> RuleCollector:
    plugin = config.pluginmanager.get_plugin("rx-oracle-rules")
    assert isinstance(plugin, RuleCollector)
    return plugin

"""pytest plugin: the ``rule`` marker, rule selection and per-rule verdicts.

Registered as a ``pytest11`` entry point, so any pytest run in an environment with
rx-oracle installed understands ``@pytest.mark.rule("RSS-TOEP-001", ...)`` and the
``--rx-rules GLOB`` option.  ``rx-oracle conformance`` drives pytest with this plugin
and renders the verdicts it gathers.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Generator, Iterable
from pathlib import Path

import attrs
import pytest

from conformance.check import RuleMismatch, TargetSession
from conformance.fixtures.record import FIXTURE_FORMAT, FIXTURE_VERSION, dump_line, scenario_key
from conformance.scenario import to_jsonable
from conformance.targets.base import TargetError, load_target

PASS, FAIL, SKIP = "pass", "fail", "skip"


@attrs.define
class RuleVerdict:
    """What the suite concluded about one SPEC rule."""

    rule: str
    verdict: str = SKIP
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    reasons: list[str] = attrs.field(factory=list)
    failures: list[str] = attrs.field(factory=list)
    #: The full failure texts (reproducers), for printing after the table.
    reproducers: list[str] = attrs.field(factory=list)

    def add(self, outcome: str, nodeid: str, detail: str, full: str = "") -> None:
        if outcome == FAIL:
            self.failed += 1
            self.failures.append(f"{nodeid.rpartition('/')[2]}: {detail}".strip())
            if full and full not in self.reproducers:
                self.reproducers.append(full)
        elif outcome == PASS:
            self.passed += 1
        else:
            self.skipped += 1
            if detail and detail not in self.reasons:
                self.reasons.append(detail)
        self.verdict = FAIL if self.failed else PASS if self.passed else SKIP


@attrs.define(eq=False)  # pluggy keeps plugins in sets: identity hashing
class RuleCollector:
    """Gathers one verdict per rule from test reports."""

    selectors: tuple[str, ...] = ()
    verdicts: dict[str, RuleVerdict] = attrs.field(factory=dict)
    target_errors: list[str] = attrs.field(factory=list)

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
            rules = rules_of(item)
            if self.selected(rules):
                keep.append(item)
                # Travels with every report, so xdist's controller sees it too.
                item.user_properties.append(("rx_rules", ",".join(rules)))
            else:
                drop.append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, None]:
        outcome = yield
        report = outcome.get_result()
        exc = call.excinfo.value if call.excinfo is not None else None
        if isinstance(exc, RuleMismatch):
            # Only the rules governing the first differing field fail.
            report.user_properties.append(("rx_failed_rules", ",".join(exc.rules)))
            # The reproducer says everything; a traceback through the suite would not help.
            report.longrepr = f"RuleMismatch: {exc}"
            directory = item.config.getoption("--rx-save-failures")
            if directory and report.when == "call":
                path = save_failure(Path(directory), exc, item.nodeid)
                report.sections.append(("rx-oracle", f"saved as fixture {path}"))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties)
        rules = [r for r in str(props.get("rx_rules", "")).split(",") if r]
        if not (report.when == "call" or (report.when == "setup" and not report.passed)):
            return
        outcome = FAIL if report.failed else SKIP if report.skipped else PASS
        detail = _detail(report)
        if outcome == SKIP and detail.startswith("target error"):
            self.target_errors.append(f"{report.nodeid}: {detail}")
        failed_rules = props.get("rx_failed_rules")
        if outcome == FAIL and failed_rules is not None:
            blamed = [r for r in str(failed_rules).split(",") if r] or rules
            full = report.longreprtext
            for rule in blamed:
                self.verdicts.setdefault(rule, RuleVerdict(rule)).add(
                    FAIL, report.nodeid, detail, full
                )
            # The test stopped at that failure, so its other rules were not fully checked.
            why = f"not fully checked: the test stopped at a failure of {', '.join(blamed)}"
            for rule in rules:
                if rule not in blamed:
                    self.verdicts.setdefault(rule, RuleVerdict(rule)).add(SKIP, report.nodeid, why)
            return
        full = report.longreprtext if outcome == FAIL else ""
        for rule in rules:
            self.verdicts.setdefault(rule, RuleVerdict(rule)).add(
                outcome, report.nodeid, detail, full
            )


def rules_of(item: pytest.Item) -> tuple[str, ...]:
    """The rule ids an item's ``rule`` markers name, in order, without duplicates."""
    seen: dict[str, None] = {}
    for mark in item.iter_markers("rule"):
        for rid in mark.args:
            seen[str(rid)] = None
    return tuple(seen)


def _detail(report: pytest.TestReport) -> str:
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2]).removeprefix("Skipped: ")
    if report.failed and isinstance(report.longrepr, str):
        return report.longrepr.splitlines()[0].removeprefix("RuleMismatch: ")
    if report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        return str(getattr(crash, "message", "")).splitlines()[0] if crash else ""
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
    except TargetError as exc:
        pytest.exit(f"rx-oracle: target error: {exc}", returncode=pytest.ExitCode.USAGE_ERROR)
    session = TargetSession(target, spec)
    try:
        yield session
    finally:
        target.close()


def save_failure(directory: Path, failure: RuleMismatch, nodeid: str) -> Path:
    """Write a failure as a one-line fixture: the scenario and the reference's observables."""
    from reference import __version__

    directory.mkdir(parents=True, exist_ok=True)
    key = scenario_key(failure.scenario)
    rule = failure.rules[0] if failure.rules else "unattributed"
    path = directory / f"{rule}-{key[:12]}.jsonl"
    record = {
        "format": FIXTURE_FORMAT,
        "version": FIXTURE_VERSION,
        "id": f"failure-{key[:12]}",
        "rules": list(failure.rules),
        "scenario": failure.scenario.to_json(),
        "observables": to_jsonable(failure.expected),
        "provenance": {"oracle_version": __version__, "source": "conformance failure",
                       "test": nodeid},
    }
    path.write_text(dump_line(record))
    return path


def collector(config: pytest.Config) -> RuleCollector:
    plugin = config.pluginmanager.get_plugin("rx-oracle-rules")
    assert isinstance(plugin, RuleCollector)
    return plugin

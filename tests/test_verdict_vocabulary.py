"""The four verdicts a rule can get, under targets that do not simply pass or fail.

``rx-oracle conformance`` gives each SPEC rule one verdict (conformance/plugin.py):
``fail`` if a case failed it; else ``pass`` if a case checked it; else ``not checked`` if
a case could have judged it but did not (its test ended at another rule's failure, the
target was given up as broken, the suite itself failed); else ``not applicable`` (every
case naming it was outside what the target or the reference can run).  The JSON report
(``rx-oracle-report`` version 2) carries the same words.

Covered here: the precedence of the verdicts, one-line reasons without hypothesis's
notes (KVER-001's not-applicable zcrx data path at 6.12), a target that says
NotApplicable for one component (KFUNC-* not applicable, RSS-* pass), a wrong queue
(RSS-RETA-004 fails, the property's other rules not checked), a target that answers and
then faults (exit 1, not "failed on every input"), and errno and XDP action values by
their kernel names in failure messages.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from conformance.observe import Mismatch
from conformance.plugin import (
    FAIL,
    NOT_APPLICABLE,
    NOT_CHECKED,
    PASS,
    RuleVerdict,
    one_line,
)

#: Python targets for the runs below, written into each test's tmp_path (``python:``).
TARGETS = '''
import errno

from conformance.targets.base import NotApplicable
from conformance.targets.reference import ReferenceTarget


class NoKfuncMetadata(ReferenceTarget):
    """Runs rss; every kfunc input is outside what it can run."""

    name = "no-kfunc-metadata"

    def run(self, scenario):
        if scenario.component == "kfunc":
            raise NotApplicable("no-kfunc-metadata: this port has no metadata kfuncs")
        return super().run(scenario)


class WrongQueue(ReferenceTarget):
    """Hashes right, steers every packet to the neighbouring queue (RSS-RETA-004)."""

    name = "wrong-queue"

    def run(self, scenario):
        observables = super().run(scenario)
        for packet in observables.get("packets", []):
            if packet.get("queue") is not None:
                packet["queue"] ^= 1
        return observables


class AnswersThenFaults(ReferenceTarget):
    """Answers its first 16 inputs like the reference, then raises on every one."""

    name = "answers-then-faults"
    answered = 0

    def run(self, scenario):
        if self.answered >= 16:
            raise RuntimeError("the port's ring ran dry")
        self.answered += 1
        return super().run(scenario)


class KfuncBusy(ReferenceTarget):
    """Every kfunc event returns -EBUSY."""

    name = "kfunc-busy"

    def run(self, scenario):
        observables = super().run(scenario)
        if scenario.component == "kfunc":
            for event in observables["events"]:
                event["rc"] = -errno.EBUSY
        return observables
'''


def _conformance(tmp_path: Path, target: str, *args: str
                 ) -> tuple[subprocess.CompletedProcess[str], dict[str, dict[str, Any]]]:
    """``rx-oracle conformance --target python:verdict_targets:TARGET ARGS``: the process
    and its report's rules by id (empty without a report)."""
    (tmp_path / "verdict_targets.py").write_text(TARGETS)
    report = tmp_path / "report.json"
    spec = "reference" if target == "reference" else f"python:verdict_targets:{target}"
    done = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "conformance", "--target", spec,
         "--report", str(report), "--junitxml", str(tmp_path / "junit.xml"), *args],
        capture_output=True, text=True, timeout=300,
        # Wide enough that no table row wraps: the rows are read back below.
        env={**os.environ, "PYTHONPATH": str(tmp_path), "COLUMNS": "300"})
    rules: dict[str, dict[str, Any]] = {}
    if report.exists():
        doc = json.loads(report.read_text())
        assert doc["format"] == "rx-oracle-report" and doc["version"] == 2
        rules = {r["rule"]: r for r in doc["rules"]}
    return done, rules


def _table(stdout: str) -> dict[str, tuple[str, str]]:
    """The printed table's rows: rule -> (verdict, detail)."""
    rows = {}
    for line in stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        if len(cells) == 4 and cells[0][:1].isupper() and "-" in cells[0]:
            rows[cells[0]] = (cells[1], cells[3])
    return rows


def test_the_verdicts_rank_fail_pass_not_checked_not_applicable() -> None:
    """Whatever order the cases come in: a failure wins, then a case that checked the
    rule, then one that could have and did not; only nothing else is not applicable."""
    def verdict(*outcomes: str) -> RuleVerdict:
        v = RuleVerdict("RSS-TOEP-001")
        for outcome in outcomes:
            v.add(outcome, "t.py::test", f"{outcome} reason")
        return v

    assert verdict(NOT_APPLICABLE).verdict == NOT_APPLICABLE
    assert verdict(NOT_APPLICABLE, NOT_CHECKED).verdict == NOT_CHECKED
    assert verdict(NOT_CHECKED, PASS, NOT_APPLICABLE).verdict == PASS
    assert verdict(PASS, FAIL, NOT_CHECKED).verdict == FAIL
    # A pass names no other verdict's reasons, only how many cases did not judge it.
    passed = verdict(NOT_APPLICABLE, PASS, NOT_APPLICABLE)
    assert passed.detail() == "2 not applicable of 3 cases"
    assert verdict(PASS).detail() == ""
    assert verdict(NOT_CHECKED, NOT_APPLICABLE).detail() == "not checked reason"
    assert passed.to_json()["not_applicable_reasons"] == ["not applicable reason"]


def test_a_reason_is_one_line_without_hypothesis_notes() -> None:
    reason = ("not applicable: kernel 6.12.117: no zcrx\nFailing explicit example: test_x(\n"
              "    rx_target=<conformance.check.TargetSession object at 0x7fee03671490>,\n)")
    assert "0x7fee" not in one_line(reason) and "\n" not in one_line(reason)
    assert one_line("Skipped: not applicable: the port\nhas two lines") == (
        "not applicable: the port has two lines")


@pytest.mark.rule("KVER-001", "ZCRX-COPY-001")
def test_not_applicable_reasons_keep_the_models_words_only(tmp_path: Path) -> None:
    """KVER-001: at 6.12 the zcrx data path is not applicable; its property has an
    explicit example, whose skip hypothesis annotates with the example's arguments
    (object reprs, frame bytes): neither the report, the table nor junit shows them."""
    done, rules = _conformance(tmp_path, "reference", "--driver", "zcrx", "--kernel", "6.12",
                               "--rules", "ZCRX-COPY-*")
    # Every rule selected is not applicable there, so the run checked nothing: exit 2.
    assert done.returncode == 2, done.stdout[-3000:] + done.stderr[-3000:]
    assert "no rule was checked" in done.stderr
    assert {v["verdict"] for v in rules.values()} == {NOT_APPLICABLE}
    copy = rules["ZCRX-COPY-001"]
    assert copy["verdict"] == NOT_APPLICABLE and copy["not_applicable"] >= 1
    assert any("795663b4d160" in r for r in copy["not_applicable_reasons"]), copy
    junit = (tmp_path / "junit.xml").read_text()
    for text in (json.dumps(copy), done.stdout, junit):
        assert "Failing explicit example" not in text and " object at 0x" not in text
    assert _table(done.stdout)["ZCRX-COPY-001"][0] == NOT_APPLICABLE
    assert " skip" not in done.stdout.splitlines()[-1]  # the summary's words are the same
    messages = [s.get("message", "") for s in ElementTree.parse(tmp_path / "junit.xml").iter(
        "skipped")]
    assert messages and all("\n" not in m for m in messages), messages


@pytest.mark.rule("KFUNC-API-001", "RSS-CFG-001")
def test_a_component_the_target_cannot_run_is_not_applicable(tmp_path: Path) -> None:
    """The target says NotApplicable for every kfunc input: the kfunc rules are not
    applicable, with its reason; the rss rules pass, and their rows carry no
    not-applicable reason (the shared PKT-* rules pass too: rss checked them)."""
    done, rules = _conformance(tmp_path, "NoKfuncMetadata", "--driver", "rss",
                               "--driver", "kfunc", "--rules", "RSS-CFG-001",
                               "--rules", "KFUNC-API-*")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    kfunc = {r: v for r, v in rules.items() if r.startswith("KFUNC-")}
    rss = {r: v for r, v in rules.items() if not r.startswith("KFUNC-")}
    assert kfunc and rss
    for rule, v in kfunc.items():
        assert v["verdict"] == NOT_APPLICABLE, (rule, v)
        assert v["not_applicable_reasons"] == ["no-kfunc-metadata: this port has no metadata "
                                               "kfuncs"], v
    table = _table(done.stdout)
    for rule, v in rss.items():
        assert v["verdict"] == PASS and v["passed"] >= 1, (rule, v)
        verdict, detail = table[rule]
        assert verdict == PASS and "port" not in detail, (rule, detail)
        assert detail == "" or detail.endswith(" cases"), (rule, detail)


@pytest.mark.rule("RSS-RETA-004", "RSS-CFG-001")
def test_the_other_rules_of_a_failing_test_are_not_checked(tmp_path: Path) -> None:
    """A wrong queue fails the rule governing it (RSS-RETA-004); the property stopped
    there, so the other rules only it names (with ``--rules RSS-CFG-001``, all of its
    rules) are not checked, never pass."""
    done, rules = _conformance(tmp_path, "WrongQueue", "--driver", "rss",
                               "--rules", "RSS-CFG-001")
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    failed = {r for r, v in rules.items() if v["verdict"] == FAIL}
    assert "RSS-RETA-004" in failed, rules
    others = {r: v for r, v in rules.items() if r not in failed}
    assert "RSS-CFG-001" in others
    for rule, v in others.items():
        assert v["verdict"] == NOT_CHECKED and v["passed"] == 0, (rule, v)
        assert v["not_checked_reasons"] == [
            f"the test stopped at a failure of {', '.join(sorted(failed))}"], v
    table = _table(done.stdout)
    assert table["RSS-CFG-001"] == (NOT_CHECKED, others["RSS-CFG-001"]["not_checked_reasons"][0])
    assert "fully checked" not in done.stdout + done.stderr


@pytest.mark.rule("RSS-CFG-001")
@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["in-process", "xdist"])
def test_a_target_that_answered_and_then_faults_is_judged(tmp_path: Path,
                                                          workers: tuple[str, ...]) -> None:
    """16 answers, then a fault on every input: the target runs, so the fault is a
    verdict (exit 1, the property's rules fail with the fault), not "failed on every
    input" (exit 2), however few tests passed; under xdist the worker's count of answers
    reaches the controller with the test's report."""
    done, rules = _conformance(tmp_path, "AnswersThenFaults", "--driver", "rss",
                               "--rules", "RSS-CFG-001", *workers)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out[-3000:]
    assert "failed on every input" not in out
    cfg = rules["RSS-CFG-001"]
    assert cfg["verdict"] == FAIL
    assert [c["kind"] for c in cfg["cases"]] == ["exception"], cfg["cases"]
    assert "the port's ring ran dry" in cfg["cases"][0]["detail"]


@pytest.mark.rule("KFUNC-API-002")
def test_an_errno_mismatch_names_the_errno(tmp_path: Path) -> None:
    """KFUNC-API-002: a kfunc's return code is an errno; the failure says ``-EBUSY (-16)``
    as ``explain`` does, not ``-16``."""
    done, rules = _conformance(tmp_path, "KfuncBusy", "--driver", "kfunc",
                               "--rules", "KFUNC-API-*")
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    details = [c["detail"] for v in rules.values() for c in v["cases"]]
    assert details and all("got -EBUSY (-16)" in d for d in details), details
    assert "got -16" not in done.stdout


def test_failure_messages_name_errnos_and_xdp_actions() -> None:
    """Fields the observables schemas give errno values (``*.rc``, fec's ``tx.err``) and
    XDP actions print by kernel name with the number; other integers as before."""
    def text(path: str, expected: object, actual: object) -> str:
        return Mismatch(path, expected, actual, ("R-1",)).describe()

    assert text("packets[0].ops[1].rc", -16, 0) == (
        "packets[0].ops[1].rc: expected -EBUSY (-16), got 0 [R-1]")
    assert "expected -EOPNOTSUPP (-95)" in text("register.rc", -95, None)
    assert "expected -ENOSPC (-28)" in text("packets[3].tx.err", -28, 0)
    assert text("packets[2].action", 2, 7) == (
        "packets[2].action: expected XDP_PASS (2), got 7 (no such XDP action) [R-1]")
    assert "expected 2, got 9" in text("packets[0].queue", 2, 9)
    assert "expected True" in text("packets[0].warned", True, False)  # a bool is no errno

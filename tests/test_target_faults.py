"""Verdicts survive a target's faults (python: and exec: targets that misbehave).

A target that raises, crashes, hangs, prints garbage or returns observables that break
the component's schema *on some inputs* fails the property's rules with the shrunk
scenario, the kind of fault and a replay command (exit 1), and the other properties
keep running.  A target that cannot run at all (cannot be loaded or started, or fails on
every input) ends the run with exit 2 and one line, no rule verdicts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
EXEC_CHILD = f"exec:{sys.executable} {TESTS / 'misbehaving_exec_target.py'}"
#: Two properties are enough to show a fault fails one and the other runs on: the main
#: rss property (and the published vectors, which never meet the fault) and kfunc's.
SELECTION = ("--driver", "rss", "--driver", "kfunc", "--rules", "RSS-TOEP-001",
             "--rules", "KFUNC-*")
Run = tuple[subprocess.CompletedProcess[str], dict[str, object] | None]


def _run(target: str, *args: str, timeout: float = 300) -> Run:
    """``rx-oracle conformance`` on ``target``: the process and its JSON report (if any)."""
    tmp = Path(os.environ.get("TMPDIR", "/tmp"))
    report = tmp / f"rxo-fault-{os.getpid()}-{time.monotonic_ns()}.json"
    proc = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "conformance", "--target", target,
         "--report", str(report), *args],
        capture_output=True, text=True, timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(TESTS)})
    doc = json.loads(report.read_text()) if report.exists() else None
    report.unlink(missing_ok=True)
    return proc, doc


def _failed(doc: dict[str, object] | None) -> dict[str, dict[str, object]]:
    assert doc is not None
    rules = doc["rules"]
    assert isinstance(rules, list)
    return {r["rule"]: r for r in rules if r["verdict"] == "fail"}


def _assert_fault_verdict(proc: subprocess.CompletedProcess[str],
                          doc: dict[str, object] | None, kind: str) -> None:
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "Traceback" not in out
    failed = _failed(doc)
    # The fault fails the rules of the properties that met it, with a shrunk reproducer.
    # (the rss properties also name the shared parser's rules they read: PKT-*, CSUM-*)
    assert all(r.startswith(("RSS-", "PKT-", "CSUM-")) for r in failed), failed
    assert "RSS-TOEP-001" in failed, failed
    case = failed["RSS-TOEP-001"]["cases"][0]  # type: ignore[index]
    assert case["kind"] == kind, case
    frames = len(case["scenario"]["frames"])
    # Shrunk to the smallest faulty input; a target that hangs, crashes or prints garbage
    # costs a timeout or a restart per try, so shrinking may stop early (check.py budgets).
    assert frames == 3 or (kind in ("hang", "crash", "garbage") and frames > 3), case
    assert case["replay"].startswith("rx-oracle replay --target "), case
    # The other component ran on and passed: one fault hides nothing else.
    assert doc is not None
    passed = {r["rule"] for r in doc["rules"] if r["verdict"] == "pass"}  # type: ignore[union-attr]
    assert any(r.startswith("KFUNC-") for r in passed), passed


@pytest.mark.rule("ERR-002")
@pytest.mark.parametrize(("cls", "kind"), [
    ("RaisesOnSomeInputs", "exception"),
    ("ExitsOnSomeInputs", "exception"),
    ("GarbageOnSomeInputs", "garbage"),
    ("SchemaOnSomeInputs", "schema"),
])
def test_python_target_fault_on_some_inputs_fails_the_rules(cls: str, kind: str) -> None:
    proc, doc = _run(f"python:faulty_targets:{cls}", *SELECTION)
    _assert_fault_verdict(proc, doc, kind)
    assert f"target fault ({kind})" in proc.stdout


@pytest.mark.rule("ERR-002")
@pytest.mark.parametrize(("mode", "kind"), [
    ("some-crash", "crash"),
    ("some-garbage", "garbage"),
    ("some-error", "error"),
    ("some-schema", "schema"),
    ("some-hang", "hang"),
])
def test_exec_target_fault_on_some_inputs_fails_the_rules(mode: str, kind: str) -> None:
    start = time.monotonic()
    # A generous timeout except where a hang is the point: the machine may be busy.
    proc, doc = _run(f"{EXEC_CHILD} {mode}", *SELECTION,
                     "--timeout", "3" if mode == "some-hang" else "20")
    _assert_fault_verdict(proc, doc, kind)
    assert "ValueError" not in proc.stderr  # the reader thread never leaks a closed-file error
    assert time.monotonic() - start < 240


@pytest.mark.rule("ERR-002")
@pytest.mark.parametrize("mode", ["stderr-flood", "slow"])
def test_noisy_or_slow_but_correct_targets_pass(mode: str) -> None:
    proc, doc = _run(f"{EXEC_CHILD} {mode}", "--driver", "rss", "--rules", "RSS-TOEP-001",
                     "--timeout", "5")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert not _failed(doc)


@pytest.mark.rule("ERR-002")
@pytest.mark.parametrize("target", [
    "python:faulty_targets:RaisesAlways",
    "python:faulty_targets_import:Target",
    f"{EXEC_CHILD} crash",
    f"{EXEC_CHILD} silent",
])
def test_a_target_that_cannot_run_is_exit_2_with_one_line(target: str) -> None:
    proc, doc = _run(target, "--driver", "rss", "--timeout", "1")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rx-oracle: target error"), proc.stderr
    assert doc is None  # no rule verdicts


@pytest.mark.rule("ERR-002")
def test_yes_garbage_never_leaks_a_reader_thread_error() -> None:
    """``exec:yes garbage`` used to print ``ValueError: I/O operation on closed file``
    from the reader thread in about half the runs."""
    for _ in range(4):
        proc, _ = _run("exec:yes garbage", "--driver", "rss")
        assert proc.returncode == 2
        assert "ValueError" not in proc.stderr and "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


@pytest.mark.rule("ERR-002")
def test_a_saved_fault_replays_with_fixtures_verify(tmp_path: Path) -> None:
    """The round trip: the saved failure passes on the reference and fails on the target."""
    saved = tmp_path / "saved"
    proc, _ = _run("python:faulty_targets:RaisesOnSomeInputs", "--driver", "rss",
                   "--rules", "RSS-TOEP-001", "--save-failures", str(saved))
    assert proc.returncode == 1
    assert list(saved.glob("*.jsonl"))
    verify = [sys.executable, "-m", "conformance.cli", "fixtures", "verify", str(saved)]
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    ok = subprocess.run(verify, capture_output=True, text=True, env=env, timeout=300)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = subprocess.run([*verify, "--target", "python:faulty_targets:RaisesOnSomeInputs"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert bad.returncode == 1, bad.stdout + bad.stderr

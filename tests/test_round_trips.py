"""Round trips a user relies on: save a failure, replay it, anywhere.

A failure saved with ``--save-failures`` replays with ``fixtures verify``: it passes on
the reference and fails on the broken target, for every property, including those that
compare against published vectors with some fields masked.  ``replay`` takes a fixture
record or ``FILE:LINE``.  Ctrl-C says "interrupted".
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ENV = {**os.environ, "PYTHONPATH": str(TESTS)}


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "conformance.cli", *args], capture_output=True,
                          text=True, timeout=600, env=ENV)


@pytest.mark.rule("RSS-TOEP-001")
def test_saved_vector_failures_replay_on_the_reference_and_fail_on_the_target(
    tmp_path: Path,
) -> None:
    saved = tmp_path / "saved"
    broken = "python:faulty_targets:RssHashByteSwapped"
    run = _cli("conformance", "--target", broken, "--rules", "RSS-TOEP-001",
               "--save-failures", str(saved))
    assert run.returncode == 1, run.stdout + run.stderr
    records = [json.loads(p.read_text()) for p in saved.glob("*.jsonl")]
    assert any(r.get("mask") for r in records)  # the vector property's mask travels along
    assert _cli("fixtures", "verify", str(saved)).returncode == 0
    assert _cli("fixtures", "verify", str(saved), "--target", broken).returncode == 1
    # One record at a time, as FILE:LINE or as the record itself.
    first = sorted(saved.glob("*.jsonl"))[0]
    assert _cli("replay", f"{first}:1").returncode == 0
    assert _cli("replay", "--target", broken, f"{first}:1").returncode == 1
    assert _cli("replay", first.read_text().strip()).returncode == 0


@pytest.mark.rule("ERR-002")
def test_ctrl_c_says_interrupted() -> None:
    child = f"exec:{sys.executable} {TESTS / 'misbehaving_exec_target.py'} some-hang"
    proc = subprocess.Popen(
        [sys.executable, "-m", "conformance.cli", "conformance", "--target", child,
         "--driver", "rss", "--timeout", "60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    time.sleep(8)  # well into a property, waiting on the hanging child
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, out + err
    assert err.strip().splitlines()[-1] == "rx-oracle: interrupted", err
    assert "Traceback" not in err and "could not run" not in err

"""The exec target protocol: a misbehaving child never hangs or crashes the suite.

A child that is silent, hangs, prints garbage, crashes, speaks another protocol
version or answers the wrong request ends the run with exit status 2 and a clear
message, within a few multiples of its timeout.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.scenario import Scenario
from conformance.targets.base import TargetError
from conformance.targets.exec import ExecTarget

TESTS = Path(__file__).resolve().parent
CHILD = [sys.executable, str(TESTS / "misbehaving_exec_target.py")]
SCENARIO = Scenario(component="rss", config={"key": "00" * 40, "indir": [0]},
                    frames=(bytes(60),))


@pytest.mark.rule("ERR-002")
@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("hang", "no answer within"),
        ("garbage", "not JSON"),
        ("crash", r"exited \(status 3\)"),
        ("wrong-id", "answered id -1"),
    ],
)
def test_misbehaviour_is_a_target_error_and_the_child_restarts(mode: str, message: str) -> None:
    target = ExecTarget([*CHILD, mode], timeout=1.0)
    try:
        for _ in range(2):  # the second request runs on a fresh child
            with pytest.raises(TargetError, match=message):
                target.run(SCENARIO)
    finally:
        target.close()


@pytest.mark.rule("ERR-002")
@pytest.mark.parametrize(("mode", "message"), [("silent", "hello"), ("old", "protocol 0")])
def test_a_bad_handshake_is_refused(mode: str, message: str) -> None:
    with pytest.raises(TargetError, match=message):
        ExecTarget([*CHILD, mode], timeout=1.0)


@pytest.mark.rule("ERR-002")
@pytest.mark.parametrize("mode", ["silent", "hang", "garbage"])
def test_conformance_run_ends_with_exit_2(mode: str) -> None:
    argv = " ".join([*CHILD, mode])
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "conformance", "--target", f"exec:{argv}",
         "--timeout", "1", "--rules", "RSS-*"],
        capture_output=True, text=True, timeout=120,
    )
    elapsed = time.monotonic() - start
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "target error" in (proc.stdout + proc.stderr)
    assert elapsed < 60

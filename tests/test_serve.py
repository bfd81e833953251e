"""``rx-oracle serve``: a Python target behind the exec protocol (conformance/serve.py).

End to end, the reference served over the protocol passes the rss properties.  A Python
target that raises on some scenarios answers ``error`` for exactly those requests and
goes on serving the others; one that prints to stdout does not corrupt the protocol.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether

from conformance import cli
from conformance.scenario import Scenario
from conformance.serve import serve
from conformance.targets.base import Capabilities, TargetError
from conformance.targets.exec import ExecTarget
from conformance.targets.reference import ReferenceTarget

ROOT = Path(__file__).resolve().parent.parent
SERVE = [sys.executable, "-m", "conformance.cli", "serve"]
FRAME = bytes(Ether() / IP(src="192.0.2.1", dst="198.51.100.2") / TCP(sport=1234, dport=80))
RSS = Scenario(component="rss", config={"key": "6d5a" * 20, "indir": [0, 1, 2, 3]},
               frames=(FRAME,))


class RaisingTarget:
    """The reference, except that it raises on scenarios with two or more frames."""

    name = "raising"

    def __init__(self) -> None:
        self.inner = ReferenceTarget()

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(frozenset({"rss"}))

    def run(self, scenario: Scenario) -> dict[str, Any]:
        if len(scenario.frames) >= 2:
            raise RuntimeError(f"cannot take {len(scenario.frames)} frames")
        return self.inner.run(scenario)

    def close(self) -> None:
        pass


class BrokenTarget(RaisingTarget):
    """Raises while it is being built."""

    def __init__(self) -> None:
        raise ValueError("no model today")


class ChattyTarget(RaisingTarget):
    """Prints to stdout while it runs, as a careless target might."""

    def run(self, scenario: Scenario) -> dict[str, Any]:
        print("debugging output that is not a protocol line")
        return super().run(scenario)


def _exchange(target: RaisingTarget, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    stdin = io.StringIO("".join(json.dumps(r) + "\n" for r in requests))
    stdout = io.StringIO()
    serve(target, stdin, stdout)
    return [json.loads(line) for line in stdout.getvalue().splitlines()]


def _run(rid: int, scenario: Scenario) -> dict[str, Any]:
    return {"type": "run", "id": rid, "scenario": scenario.to_json()}


@pytest.mark.rule("RSS-TOEP-001", "RSS-RETA-004")
def test_hello_then_one_answer_per_request_and_an_error_only_where_the_target_raised() -> None:
    two = Scenario(component="rss", config=RSS.config, frames=RSS.frames * 2)
    answers = _exchange(RaisingTarget(), [_run(1, RSS), _run(2, two), _run(3, RSS),
                                          {"type": "bye"}, _run(4, RSS)])
    hello, *rest = answers
    assert hello == {"type": "hello", "protocol": 1, "name": "rx-oracle serve raising",
                     "capabilities": {"components": ["rss"], "reports": ["*"]}}
    assert [(a["type"], a["id"]) for a in rest] == [("result", 1), ("error", 2), ("result", 3)]
    assert rest[1]["message"] == "RuntimeError: cannot take 2 frames"
    assert rest[0]["observables"] == ReferenceTarget().run(RSS)


def test_malformed_requests_are_answered_not_fatal() -> None:
    stdin = io.StringIO('not json\n[1]\n{"type": "ping", "id": 9}\n'
                        '{"type": "run", "id": 10}\n')
    stdout = io.StringIO()
    serve(RaisingTarget(), stdin, stdout)
    answers = [json.loads(line) for line in stdout.getvalue().splitlines()][1:]
    assert [(a["type"], a["id"]) for a in answers] == [
        ("error", None), ("error", None), ("error", 9), ("error", 10)]


def test_a_target_printing_to_stdout_does_not_corrupt_the_protocol(
    capsys: pytest.CaptureFixture[str],
) -> None:
    answers = _exchange(ChattyTarget(), [_run(1, RSS)])
    assert [a["type"] for a in answers] == ["hello", "result"]
    assert "debugging output" in capsys.readouterr().err


def _env() -> dict[str, str]:
    here = str(Path(__file__).resolve().parent)
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), here]))


@pytest.mark.rule("ERR-002")
def test_over_exec_a_raising_target_is_a_target_error_for_that_case_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYTHONPATH", _env()["PYTHONPATH"])
    target = ExecTarget([*SERVE, "--target", "python:test_serve:RaisingTarget"], timeout=20)
    try:
        assert target.capabilities.components == frozenset({"rss"})
        assert target.run(RSS) == json.loads(json.dumps(ReferenceTarget().run(RSS)))
        two = Scenario(component="rss", config=RSS.config, frames=RSS.frames * 2)
        with pytest.raises(TargetError, match="reported an error: RuntimeError: cannot take 2"):
            target.run(two)
        assert target.run(RSS)["packets"]  # the same child goes on serving
    finally:
        target.close()


@pytest.mark.rule("RSS-IN-001", "RSS-TOEP-001", "RSS-TYPE-001", "RSS-RETA-004")
def test_the_reference_served_over_exec_passes_the_rss_properties(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "conformance", "--driver", "rss",
         "--target", "exec:" + " ".join([*SERVE, "--target", "reference"]),
         "--report", str(report)],
        env=_env(), cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    verdicts = {r["rule"]: r["verdict"] for r in json.loads(report.read_text())["rules"]}
    assert verdicts and set(verdicts.values()) == {"pass"}
    assert json.loads(report.read_text())["target"].startswith("exec:")


@pytest.mark.parametrize(("spec", "message"), [
    ("exec:./whatever", "cannot serve 'exec:./whatever'"),
    ("python:no_such_module_here:Target", "cannot load python target"),
    ("python:test_serve:BrokenTarget", "cannot load python target 'test_serve:BrokenTarget': "
                                       "ValueError: no model today"),
])
def test_a_target_that_cannot_be_served_is_one_line_and_exit_2(
    spec: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["serve", "--target", spec]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1

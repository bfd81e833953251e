"""The exec target and ``rx-oracle serve`` hold against hostile target processes.

Real child processes, each bounded by short timeouts: a child that closes its stdout,
leaves a grandchild holding its pipes, never reads its stdin, prints bytes that are not
UTF-8, or sends extreme but well-formed JSON (a 5000-digit integer, nesting 100000 deep,
``NaN``) gets a one-line verdict for the input that caused it, and no process of its
group survives.  ``rx-oracle serve`` answers each such request line with an error whose
``id`` is null and goes on serving.  conformance/PROTOCOL.md, *Faults*.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from conformance.scenario import Scenario
from conformance.serve import serve
from conformance.targets import exec as exec_target
from conformance.targets.base import Capabilities, TargetError, TargetUnavailable
from conformance.targets.exec import ExecTarget, ProtocolLineError, parse_line

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = Scenario(component="rss", config={"key": "00" * 40, "indir": [0]},
                    frames=(bytes(60),))
#: A request of about 300 KB, several times any pipe buffer.
BIG = Scenario(component="rss", config=SCENARIO.config, frames=(bytes(1500),) * 100)
#: Generous: each test's own timeouts add up to a few seconds; this only proves no hang.
BOUND = 20.0
#: What every hostile script starts with: a hello, a correct empty answer, and where to
#: leave the pids the test checks afterwards.
PRELUDE = '''\
import json, os, subprocess, sys, time
HERE = os.path.dirname(os.path.abspath(__file__))
HELLO = {"type": "hello", "protocol": 1, "name": "hostile",
         "capabilities": {"components": ["rss"], "reports": ["*"]}}
def say(line):
    sys.stdout.buffer.write(line if isinstance(line, bytes) else line.encode())
    sys.stdout.buffer.write(b"\\n")
    sys.stdout.buffer.flush()
def result(request):
    return json.dumps({"type": "result", "id": request["id"], "observables": {}})
def note_pid(name, pid):
    with open(os.path.join(HERE, name), "w") as f:
        f.write(str(pid))
'''
#: Five thousand digits: Python refuses to convert more than 4300 (a ValueError).
HUGE_INT = "9" * 5000
#: Nesting the parser would recurse on (RecursionError), far beyond MAX_DEPTH.
DEEP = "[" * 100_000 + "]" * 100_000
EXTREME = {"5000-digit integer": HUGE_INT, "deep nesting": DEEP, "NaN": "NaN",
           "Infinity": "-Infinity", "1e400": "1e400"}


def _script(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / "target.py"
    path.write_text(PRELUDE + textwrap.dedent(body))
    return [sys.executable, str(path)]


def _pid(path: Path, within: float = 5.0) -> int:
    deadline = time.monotonic() + within
    while not path.exists() or not path.read_text().strip():
        assert time.monotonic() < deadline, f"{path} was never written"
        time.sleep(0.02)
    return int(path.read_text())


def _gone(pid: int, within: float = 5.0) -> bool:
    """Whether ``pid`` has exited within ``within`` seconds (a zombie that init has not
    reaped yet counts: it runs nothing and holds no pipe)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return True
        except (OSError, IndexError):
            return True
        time.sleep(0.05)
    return False


def _fault(target: ExecTarget, scenario: Scenario = SCENARIO) -> TargetError:
    with pytest.raises(TargetError) as caught:
        target.run(scenario)
    assert not isinstance(caught.value, TargetUnavailable)
    assert "\n" not in str(caught.value)
    return caught.value


# -- pipes that outlive the child, and children that never read ----------------------


def test_a_target_that_closes_stdout_after_hello_is_a_crash_of_that_input(
    tmp_path: Path,
) -> None:
    """*Faults*: closing stdout is a ``crash`` for the input, found without waiting on a
    child that is still alive; its group is killed."""
    argv = _script(tmp_path, '''\
        say(json.dumps(HELLO))
        note_pid("child", os.getpid())
        os.close(1)
        time.sleep(60)
    ''')
    start = time.monotonic()
    target = ExecTarget(argv, timeout=1.0, startup_timeout=5.0)
    try:
        fault = _fault(target)
        assert fault.kind == "crash" and "closed its stdout" in str(fault), fault
        child = _pid(tmp_path / "child")
    finally:
        target.close()
    assert time.monotonic() - start < BOUND
    assert _gone(child)


def test_a_grandchild_holding_the_pipes_hides_neither_the_hello_nor_the_exit(
    tmp_path: Path,
) -> None:
    """*Faults*: the target behind ``sh -c`` answers although a ``sleep`` holds its pipes;
    when it exits on a request the ``crash`` is seen at once, not when the sleep ends, and
    the sleep is killed with the process group."""
    argv = _script(tmp_path, '''\
        say(json.dumps(HELLO))
        for n, line in enumerate(sys.stdin):
            if n == 1:
                sys.exit(3)
            say(result(json.loads(line)))
    ''')
    shell = f"sleep 60 & echo $! > {tmp_path / 'sleep'}; exec {' '.join(argv)}"
    start = time.monotonic()
    target = ExecTarget(["sh", "-c", shell], timeout=2.0, startup_timeout=5.0)
    try:
        assert target.run(SCENARIO) == {}
        fault = _fault(target)
        assert fault.kind == "crash" and "exited (status 3)" in str(fault), fault
        sleep = _pid(tmp_path / "sleep")
        assert _gone(sleep)
    finally:
        target.close()
    assert time.monotonic() - start < BOUND


def test_a_daemon_inheriting_stdout_while_the_target_hangs_is_killed_with_it(
    tmp_path: Path,
) -> None:
    """*Faults*: a ``hang`` while a forked helper holds stdout: the fault comes at the
    timeout, the group (helper included) is killed, and a correct close ends quickly."""
    argv = _script(tmp_path, '''\
        helper = subprocess.Popen(["sleep", "60"])  # inherits stdin, stdout, stderr
        note_pid("helper", helper.pid)
        say(json.dumps(HELLO))
        for line in sys.stdin:
            time.sleep(60)
    ''')
    start = time.monotonic()
    target = ExecTarget(argv, timeout=1.0, startup_timeout=5.0)
    try:
        helper = _pid(tmp_path / "helper")
        fault = _fault(target)
        assert fault.kind == "hang" and "no answer within 1s" in str(fault), fault
        assert _gone(helper)
    finally:
        target.close()
    assert time.monotonic() - start < BOUND


def test_a_correct_target_with_a_helper_daemon_closes_promptly(tmp_path: Path) -> None:
    """*Faults*: after ``bye`` the suite waits a short grace for the child, never for the
    pipes a helper holds, and kills what is left of the group."""
    argv = _script(tmp_path, '''\
        helper = subprocess.Popen(["sleep", "60"])
        note_pid("helper", helper.pid)
        say(json.dumps(HELLO))
        for line in sys.stdin:
            request = json.loads(line)
            if request["type"] == "bye":
                break
            say(result(request))
    ''')
    start = time.monotonic()
    target = ExecTarget(argv, timeout=5.0, startup_timeout=5.0)
    helper = _pid(tmp_path / "helper")
    assert target.run(SCENARIO) == {}
    target.close()
    assert time.monotonic() - start < BOUND
    assert _gone(helper)


def test_a_target_that_never_reads_stdin_is_a_hang_on_a_big_request(tmp_path: Path) -> None:
    """*Faults*: requests are written non-blocking against the request's deadline: a
    target that never reads a request larger than a pipe buffer is a ``hang`` of that
    input (twice: it is restarted), never a frozen suite."""
    assert len(json.dumps(BIG.to_json())) > 4 * 65536
    argv = _script(tmp_path, '''\
        say(json.dumps(HELLO))
        time.sleep(60)
    ''')
    start = time.monotonic()
    target = ExecTarget(argv, timeout=1.0, startup_timeout=5.0)
    try:
        for _ in range(2):
            fault = _fault(target, BIG)
            assert fault.kind == "hang" and "had not read request" in str(fault), fault
    finally:
        target.close()
    assert time.monotonic() - start < BOUND


def test_a_target_that_logs_while_it_reads_a_big_request_passes(tmp_path: Path) -> None:
    """*Faults*: while the suite writes a request it drains the target's stderr, so a
    target that logs a lot as it reads is answered, not a ``hang``."""
    argv = _script(tmp_path, '''\
        say(json.dumps(HELLO))
        while True:
            line = sys.stdin.readline()
            sys.stderr.write("x" * 200_000 + "\\n")
            sys.stderr.flush()
            say(result(json.loads(line)))
    ''')
    target = ExecTarget(argv, timeout=5.0, startup_timeout=5.0)
    try:
        assert target.run(BIG) == {}
    finally:
        target.close()


# -- bytes that are not UTF-8 ----------------------------------------------------------


def test_a_stdout_line_that_is_not_utf8_is_garbage(tmp_path: Path) -> None:
    """*Faults*: an undecodable stdout line is ``garbage`` for the input; the next input
    runs on a fresh child."""
    argv = _script(tmp_path, '''\
        say(json.dumps(HELLO))
        for line in sys.stdin:
            say(b'{"type": "result", "id": 1, "observables": {"x": "\\xff\\xfe"}}')
    ''')
    start = time.monotonic()
    target = ExecTarget(argv, timeout=2.0, startup_timeout=5.0)
    try:
        for _ in range(2):
            fault = _fault(target)
            assert fault.kind == "garbage" and "not UTF-8" in str(fault), fault
    finally:
        target.close()
    assert time.monotonic() - start < BOUND


def test_stderr_is_never_a_fault_whatever_its_bytes(tmp_path: Path) -> None:
    """*Faults*: stderr is decoded leniently and kept only as a short tail: a correct
    target that logs non-UTF-8 bytes (and lines that never end) passes, and when it does
    crash the tail shows in the one-line message."""
    argv = _script(tmp_path, '''\
        say(json.dumps(HELLO))
        for n, line in enumerate(sys.stdin):
            sys.stderr.buffer.write(b"log \\xff\\xfe\\xc3 not utf-8\\n" + b"y" * 100_000)
            sys.stderr.buffer.flush()
            if n == 2:
                sys.exit(4)
            say(result(json.loads(line)))
    ''')
    target = ExecTarget(argv, timeout=2.0, startup_timeout=5.0)
    try:
        assert target.run(SCENARIO) == {}
        assert target.run(SCENARIO) == {}
        fault = _fault(target)
        assert fault.kind == "crash", fault
        assert "log \ufffd\ufffd\ufffd not utf-8" in str(fault), fault
        assert len(str(fault)) < 6000
    finally:
        target.close()


# -- extreme but well-formed JSON --------------------------------------------------------


@pytest.mark.parametrize("value", EXTREME.values(), ids=EXTREME.keys())
def test_extreme_json_in_a_hello_is_a_target_error_of_one_line(
    tmp_path: Path, value: str
) -> None:
    """*Faults*: a hello the suite cannot read (a 5000-digit integer, nesting 100000 deep,
    ``NaN``/``Infinity``, a number beyond a double) means the target cannot run: one line,
    no traceback."""
    (tmp_path / "value").write_text(value)
    argv = _script(tmp_path, '''\
        value = open(os.path.join(HERE, "value")).read()
        say(json.dumps(HELLO)[:-1] + ', "extra": ' + value + "}")
        time.sleep(60)
    ''')
    start = time.monotonic()
    with pytest.raises(TargetUnavailable) as caught:
        ExecTarget(argv, timeout=1.0, startup_timeout=5.0)
    assert "printed a line that is " in str(caught.value), caught.value
    assert "\n" not in str(caught.value)
    # Bounded whatever the value's size; the target's own name (its command, whose path
    # depends on where the project is) is not counted.
    assert len(str(caught.value).partition(": printed")[2]) < 300
    assert time.monotonic() - start < BOUND


@pytest.mark.parametrize("value", EXTREME.values(), ids=EXTREME.keys())
def test_extreme_json_in_an_answer_is_garbage(tmp_path: Path, value: str) -> None:
    """*Faults*: an answer the suite cannot read is ``garbage`` for that input."""
    (tmp_path / "value").write_text(value)
    argv = _script(tmp_path, '''\
        value = open(os.path.join(HERE, "value")).read()
        say(json.dumps(HELLO))
        for line in sys.stdin:
            request = json.loads(line)
            say('{"type": "result", "id": %d, "observables": {"x": %s}}'
                % (request["id"], value))
    ''')
    start = time.monotonic()
    target = ExecTarget(argv, timeout=2.0, startup_timeout=5.0)
    try:
        fault = _fault(target)
        assert fault.kind == "garbage", fault
        assert len(str(fault)) < 400  # named by its hello ("hostile"), not its path
    finally:
        target.close()
    assert time.monotonic() - start < BOUND


def test_a_conformance_run_on_an_unreadable_hello_is_exit_2_and_one_line(
    tmp_path: Path,
) -> None:
    """*Faults*: a target that cannot run at all (its hello nests 100000 deep) is a target
    error, exit status 2, with no traceback."""
    (tmp_path / "value").write_text(DEEP)
    argv = _script(tmp_path, '''\
        value = open(os.path.join(HERE, "value")).read()
        say('{"type": "hello", "protocol": 1, "capabilities": ' + value + "}")
        time.sleep(60)
    ''')
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "conformance.cli", "conformance", "--target",
         "exec:" + " ".join(argv), "--timeout", "1", "--rules", "RSS-TOEP-001"],
        capture_output=True, text=True, timeout=120, cwd=ROOT)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert "target error" in out and "nested deeper" in out, out
    assert "Traceback" not in out
    assert time.monotonic() - start < 60


def test_the_depth_bound_counts_nesting_not_brackets_in_strings() -> None:
    """*Faults*, *Unreadable lines*: 64 levels read, 65 do not; brackets inside strings
    (escaped quotes included) are text, not nesting."""
    assert parse_line("[" * exec_target.MAX_DEPTH + "]" * exec_target.MAX_DEPTH)
    with pytest.raises(ProtocolLineError, match="nested deeper than 64"):
        parse_line("[" * (exec_target.MAX_DEPTH + 1) + "]" * (exec_target.MAX_DEPTH + 1))
    text = json.dumps({"message": '[[[{{{ \\" ' * 100, "ok": [[1]]})
    assert parse_line(text.encode())["ok"] == [[1]]


# -- rx-oracle serve on lines it cannot read -------------------------------------------------


def _strict(line: bytes) -> dict[str, Any]:
    """A line serve printed, which must be strict JSON (no NaN) and an object."""
    try:
        msg = parse_line(line)
    except ProtocolLineError as exc:
        pytest.fail(f"serve printed {line[:120]!r}: {exc}")
    assert isinstance(msg, dict)
    return msg


def test_serve_answers_every_unreadable_line_with_an_error_of_id_null() -> None:
    """*Faults* and *Serving a Python target*: a request line that is not UTF-8, not JSON,
    nested too deep, or holds ``NaN`` or a 5000-digit integer gets an ``error`` answer
    with ``id`` null; serve goes on and answers the next request."""
    bad = [b"\xff\xfe{}", f'{{"type": "run", "id": {HUGE_INT}}}'.encode(), DEEP.encode(),
           b'{"type": "run", "id": NaN}', b'{"type": "run", "id": 1, "x": Infinity}',
           b'{"type": "run", "id": 1e400}', b'{"type": "run", "id": 1, "scenario": ' +
           DEEP.encode() + b"}"]
    good = {"type": "run", "id": 7, "scenario": SCENARIO.to_json()}
    lines = [*bad, json.dumps(good).encode(), b'{"type": "bye"}']
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "conformance.cli", "serve"],
                          input=b"\n".join(lines) + b"\n", capture_output=True, timeout=60,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert b"Traceback" not in proc.stderr
    hello, *answers = [_strict(line) for line in proc.stdout.splitlines()]
    assert hello["type"] == "hello"
    assert [(a["type"], a["id"]) for a in answers] == [("error", None)] * len(bad) + [
        ("result", 7)]
    assert time.monotonic() - start < 60


class NonFiniteTarget:
    """Answers every scenario with a NaN among its observables."""

    name = "non-finite"

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(frozenset({"rss"}))

    def run(self, scenario: Scenario) -> dict[str, Any]:
        return {"packets": [{"hash": float("nan")}], "ratio": float("inf")}

    def close(self) -> None:
        pass


def test_serve_turns_a_targets_non_finite_number_into_an_error_answer() -> None:
    """*Serving a Python target*: serve never prints a bare ``NaN``; the request is
    answered with an ``error`` and the next one is served."""
    run = json.dumps({"type": "run", "id": 1, "scenario": SCENARIO.to_json()})
    stdout = io.StringIO()
    serve(NonFiniteTarget(), io.BytesIO(f"{run}\n{run}\n".encode()), stdout)
    answers = [_strict(line.encode()) for line in stdout.getvalue().splitlines()][1:]
    assert [(a["type"], a["id"]) for a in answers] == [("error", 1), ("error", 1)]
    assert "not JSON" in answers[0]["message"]


def test_a_line_that_never_ends_is_garbage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """*Faults*, *Unreadable lines*: output past the line limit without a newline is
    ``garbage`` at once, not memory spent until the deadline (the limit is lowered here)."""
    monkeypatch.setattr(exec_target, "MAX_LINE", 1 << 20)
    argv = _script(tmp_path, '''\
        say(json.dumps(HELLO))
        for line in sys.stdin:
            while True:
                sys.stdout.write("x" * 65536)
    ''')
    start = time.monotonic()
    target = ExecTarget(argv, timeout=10.0, startup_timeout=5.0)
    try:
        fault = _fault(target)
        assert fault.kind == "garbage" and "longer than" in str(fault), fault
    finally:
        target.close()
    assert time.monotonic() - start < BOUND

"""``exec:COMMAND``: a target in a child process, in any language.

The child speaks the JSON-lines protocol of ``conformance/PROTOCOL.md`` on its stdin
and stdout.  Every read has a deadline: a child that hangs, dies, or prints something
that is not a protocol message is reported as a :class:`TargetError` of that kind for
that case (a target fault: the suite fails the property's rules with the scenario),
killed, and started afresh for the next case, so the suite never hangs.  A child that
cannot be started or greeted the first time is :class:`TargetUnavailable`: the run
stops with exit status 2.
"""

from __future__ import annotations

import collections
import contextlib
import json
import queue
import subprocess
import threading
from typing import IO, Any

from conformance.scenario import Scenario
from conformance.targets.base import (
    Capabilities,
    InputNotApplicable,
    NotApplicable,
    TargetError,
    TargetUnavailable,
    parse_sides,
)

PROTOCOL_VERSION = 1
_EOF = object()
#: Each stderr line kept for messages is cut to this length; only the last lines are kept.
_STDERR_LINE = 200
#: Starting a program (an interpreter loading its model, say) is not answering a request:
#: the hello may take this long even when ``--timeout`` is shorter.
STARTUP_TIMEOUT = 30.0


class ExecTarget:
    """Drives one child process; restarts it after a failure."""

    def __init__(self, argv: list[str], *, timeout: float = 10.0,
                 startup_timeout: float = STARTUP_TIMEOUT) -> None:
        if not argv:
            raise TargetUnavailable("exec target needs a command")
        if not timeout > 0:
            raise TargetUnavailable(f"exec target timeout must be > 0 seconds, not {timeout!r}")
        self.argv = argv
        self.timeout = timeout
        self.name = f"exec:{' '.join(argv)}"
        self._proc: subprocess.Popen[str] | None = None
        self._lines: queue.Queue[object] = queue.Queue()
        self._stderr: collections.deque[str] = collections.deque(maxlen=20)
        self._next_id = 0
        self._caps: Capabilities | None = None
        #: how long the hello may take (a target that boots a machine waits longer)
        self.startup_timeout = max(timeout, startup_timeout)
        try:
            self._start()
        except TargetError as exc:
            raise TargetUnavailable(str(exc)) from None

    # -- the Target interface ------------------------------------------------------

    @property
    def capabilities(self) -> Capabilities:
        assert self._caps is not None
        return self._caps

    def run(self, scenario: Scenario) -> dict[str, Any]:
        if self._proc is None or self._proc.poll() is not None:
            try:
                self._start()
            except TargetError as exc:  # it started once: a restart failing is this case's
                raise TargetError(f"{self.name}: could not be restarted: {exc}", "crash") from None
        self._next_id += 1
        rid = self._next_id
        self._send({"type": "run", "id": rid, "scenario": scenario.to_json()})
        try:
            msg = self._receive(f"the result of request {rid}")
        except TargetError:
            self._kill()
            raise
        if msg.get("id") != rid:
            self._kill()
            raise TargetError(f"{self.name}: answered id {msg.get('id')!r} to request {rid}",
                              "garbage")
        if msg.get("type") == "not_applicable":  # protocol 1.9
            why = f"{self.name}: {_short(msg.get('message', ''))}"
            raise InputNotApplicable(why) if msg.get("per_input") is True else NotApplicable(why)
        if msg.get("type") == "error":
            raise TargetError(f"{self.name}: reported an error: {_short(msg.get('message', ''))}",
                              "error")
        observables = msg.get("observables")
        if msg.get("type") != "result" or not isinstance(observables, dict):
            self._kill()
            raise TargetError(f"{self.name}: out-of-protocol answer {_short(msg)}", "garbage")
        return observables

    def close(self) -> None:
        proc = self._proc
        if proc is None:
            return
        try:
            if proc.poll() is None and proc.stdin is not None:
                proc.stdin.write(json.dumps({"type": "bye"}) + "\n")
                proc.stdin.close()
            proc.wait(timeout=min(self.timeout, 2.0))
        except (OSError, subprocess.TimeoutExpired, ValueError):
            pass
        self._kill()

    # -- process management ----------------------------------------------------------

    def _start(self) -> None:
        self._kill()
        self._lines = queue.Queue()
        try:
            proc = self._spawn()
        except OSError as exc:
            raise TargetUnavailable(f"{self.name}: cannot start: {exc}") from exc
        self._proc = proc
        assert proc.stdout is not None and proc.stderr is not None
        threading.Thread(target=self._pump, args=(proc.stdout, self._lines), daemon=True).start()
        threading.Thread(target=self._drain, args=(proc.stderr,), daemon=True).start()
        hello = self._receive("the hello message", self.startup_timeout)
        if hello.get("type") != "hello":
            self._kill()
            raise TargetError(f"{self.name}: first message must be hello, got {_short(hello)}")
        if hello.get("protocol") != PROTOCOL_VERSION:
            self._kill()
            raise TargetError(
                f"{self.name}: speaks protocol {hello.get('protocol')!r}, "
                f"the suite speaks {PROTOCOL_VERSION}"
            )
        caps = hello.get("capabilities") or {}
        comps = caps.get("components") if isinstance(caps, dict) else None
        reports = caps.get("reports", ["*"]) if isinstance(caps, dict) else None
        if not isinstance(comps, list) or not isinstance(reports, list):
            self._kill()
            raise TargetError(f"{self.name}: hello lacks capabilities.components/reports")
        if isinstance(hello.get("name"), str):
            self.name = f"exec:{hello['name']}"
        kernel = hello.get("kernel")  # KVER-001: optional, protocol 1.1
        if kernel is not None and not isinstance(kernel, str):
            self._kill()
            raise TargetError(f"{self.name}: hello.kernel must be a version string, "
                              f"got {_short(kernel)}")
        try:
            sides = parse_sides(caps.get("sides"))  # protocol 1.2
        except ValueError as exc:
            self._kill()
            raise TargetError(f"{self.name}: {exc}, got {_short(caps.get('sides'))}") from None
        self._caps = Capabilities(frozenset(map(str, comps)), tuple(map(str, reports)), kernel,
                                  sides)

    def _spawn(self) -> subprocess.Popen[str]:
        """Start the child with the protocol on its stdin and stdout (a hook for
        subclasses that start it otherwise)."""
        return subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, bufsize=1)

    @staticmethod
    def _pump(stream: IO[str], lines: queue.Queue[object]) -> None:
        # The stream is closed under this thread when the child is killed: that ends
        # the loop quietly (ValueError: I/O operation on closed file), it is no error.
        with contextlib.suppress(ValueError, OSError):
            for line in stream:
                lines.put(line)
        lines.put(_EOF)

    def _drain(self, stream: IO[str]) -> None:
        with contextlib.suppress(ValueError, OSError):
            for line in stream:
                self._stderr.append(line.rstrip()[:_STDERR_LINE])

    def _send(self, msg: dict[str, Any]) -> None:
        proc = self._proc
        assert proc is not None and proc.stdin is not None
        try:
            proc.stdin.write(json.dumps(msg, separators=(",", ":")) + "\n")
            proc.stdin.flush()
        except (OSError, ValueError) as exc:
            self._kill()
            raise TargetError(
                f"{self.name}: died before reading a request ({exc}){self._tail()}", "crash"
            ) from exc

    def _receive(self, what: str, timeout: float | None = None) -> dict[str, Any]:
        wait = self.timeout if timeout is None else timeout
        try:
            line = self._lines.get(timeout=wait)
        except queue.Empty:
            self._kill()
            raise TargetError(
                f"{self.name}: no answer within {wait:g}s while waiting for {what}",
                "hang",
            ) from None
        if line is _EOF:
            code = self._proc.wait() if self._proc else None
            self._kill()
            raise TargetError(
                f"{self.name}: exited (status {code}) while we waited for {what}{self._tail()}",
                "crash",
            )
        try:
            msg = json.loads(str(line))
        except json.JSONDecodeError:
            self._kill()
            raise TargetError(
                f"{self.name}: printed a line that is not JSON: {str(line)[:120]!r}", "garbage"
            ) from None
        if not isinstance(msg, dict):
            self._kill()
            raise TargetError(
                f"{self.name}: printed a JSON value that is not an object: {_short(msg)}",
                "garbage",
            )
        return msg

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        for stream in (proc.stdin, proc.stdout, proc.stderr) if proc else ():
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass

    def _tail(self) -> str:
        return ("; its stderr ended with: " + " | ".join(self._stderr)) if self._stderr else ""


def _short(value: object) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= 120 else text[:117] + "..."

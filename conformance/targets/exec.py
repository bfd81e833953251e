"""``exec:COMMAND``: a target in a child process, in any language.

The child speaks the JSON-lines protocol of ``conformance/PROTOCOL.md`` on its stdin
and stdout.  Every wait has a deadline and every read takes any byte, so no child can
hang or crash the suite: a child that hangs, dies, never reads its stdin, or prints
something that is not a protocol message is reported as a :class:`TargetError` of that
kind for that case (a target fault: the suite fails the property's rules with the
scenario), its whole process group is killed, and it is started afresh for the next
case.  A child that cannot be started or greeted the first time is
:class:`TargetUnavailable`: the run ends with exit status 2.

The child runs in a session of its own, so the processes it starts (the real target
behind ``sh -c``, a helper daemon) are killed with it.  Its pipes are served by one
selector in the calling thread, and the child's exit is noticed by polling it, not by
the end of its stdout, which a grandchild may hold open long after the child is gone.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import json
import math
import os
import re
import selectors
import signal
import subprocess
import time
from typing import Any

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
#: Each stderr line kept for messages is cut to this length; only the last lines are kept.
_STDERR_LINE = 200
_STDERR_LINES = 20
#: Starting a program (an interpreter loading its model, say) is not answering a request:
#: the hello may take this long even when ``--timeout`` is shorter.
STARTUP_TIMEOUT = 30.0
#: How long a child may take to exit after ``bye``, and after SIGTERM before SIGKILL.
SHUTDOWN_GRACE = 2.0
KILL_GRACE = 0.5
#: JSON nesting no protocol message comes near (a scenario or observables nest a few
#: levels); deeper input is refused before the parser, which would recurse on it.
MAX_DEPTH = 64
#: A protocol line longer than this is garbage (it bounds what a runaway child costs).
MAX_LINE = 256 * 1024 * 1024
#: How often a wait looks whether the child has exited (its pipes may outlive it).
_POLL = 0.05
_CHUNK = 65536
#: Chunks read from each pipe once the child has exited (16 pipe buffers of 64 KiB).
_EXIT_CHUNKS = 16


class ProtocolLineError(ValueError):
    """A line that is not one JSON value the protocol can carry (see :func:`parse_line`)."""


_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def _refuse_constant(name: str) -> Any:
    raise ProtocolLineError(f"not strict JSON ({name})")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400: JSON, but no number the protocol carries
        raise ProtocolLineError(f"not strict JSON ({text[:40]} overflows a double)")
    return value


def parse_line(line: bytes | str) -> Any:
    """One protocol line as a JSON value, strictly.

    Raises :class:`ProtocolLineError` (a one-line reason) for bytes that are not UTF-8,
    text that is not JSON, nesting deeper than :data:`MAX_DEPTH`, ``NaN``/``Infinity``,
    or an integer too long for Python to convert (over 4300 digits).
    """
    try:
        text = line.decode("utf-8") if isinstance(line, bytes) else line
    except UnicodeDecodeError as exc:
        raise ProtocolLineError(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    depth = max(itertools.accumulate(map(_STEP.__getitem__, brackets)), default=0)
    if depth > MAX_DEPTH:
        raise ProtocolLineError(f"nested deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite)
    except ProtocolLineError:
        raise
    except json.JSONDecodeError as exc:
        raise ProtocolLineError(f"not JSON: {_first_line(str(exc))}") from None
    except (ValueError, RecursionError) as exc:  # an integer over 4300 digits, say
        raise ProtocolLineError(f"not JSON the suite reads: {_first_line(str(exc))}") from None


def dump_line(msg: Any) -> bytes:
    """One protocol line, strict JSON (``ValueError`` on NaN/Infinity), ``\\n``-ended."""
    return (json.dumps(msg, separators=(",", ":"), allow_nan=False) + "\n").encode()


class _Hang(Exception):
    pass


class _Exited(Exception):
    pass


class _TooLong(Exception):
    pass


class _Pipes:
    """A child's stdin, stdout and stderr, non-blocking, served by one selector.

    Stdout is split into lines (bytes: decoding is the reader's business); stderr is
    decoded leniently and only its last lines are kept, for messages.
    """

    def __init__(self, proc: subprocess.Popen[Any]) -> None:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        self.proc = proc
        self.stdin = proc.stdin.fileno()
        self.stdout = proc.stdout.fileno()
        self.stderr = proc.stderr.fileno()
        for fd in (self.stdin, self.stdout, self.stderr):
            os.set_blocking(fd, False)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.stdout, selectors.EVENT_READ)
        self.selector.register(self.stderr, selectors.EVENT_READ)
        self.out = bytearray()
        #: how much of ``out`` is known to hold no newline
        self.scanned = 0
        self.out_closed = False
        self.err = bytearray()
        self.err_lines: collections.deque[str] = collections.deque(maxlen=_STDERR_LINES)

    def write(self, data: bytes, deadline: float) -> None:
        """Write all of ``data`` to stdin by ``deadline`` (:class:`_Hang`), reading the
        child's output meanwhile so that a child writing as it reads never blocks."""
        view = memoryview(data)
        self.selector.register(self.stdin, selectors.EVENT_WRITE)
        try:
            while view:
                try:
                    view = view[os.write(self.stdin, view):]
                    continue
                except BlockingIOError:
                    pass
                except OSError as exc:  # EPIPE: nobody reads the other end any more
                    raise _Exited(str(exc)) from None
                if self.proc.poll() is not None:
                    raise _Exited(f"status {self.proc.returncode}")
                self._serve(deadline)
        finally:
            self.selector.unregister(self.stdin)

    def line(self, deadline: float) -> bytes:
        """The next stdout line (without ``\\n``) by ``deadline``: :class:`_Hang` when
        none came, :class:`_Exited` when the child is gone or its stdout closed,
        :class:`_TooLong` past :data:`MAX_LINE` bytes without a newline."""
        while True:
            end = self.out.find(b"\n", self.scanned)
            if end >= 0:
                line = bytes(self.out[:end])
                del self.out[:end + 1]
                self.scanned = 0
                return line
            self.scanned = len(self.out)  # a long answer is searched once, not per chunk
            if len(self.out) > MAX_LINE:
                raise _TooLong()
            if self.out_closed:
                raise _Exited("closed its stdout")
            if self.proc.poll() is not None:
                self._read_available()  # what it wrote before exiting is still an answer
                if self.out.find(b"\n", self.scanned) < 0:
                    raise _Exited(f"status {self.proc.returncode}")
                continue
            self._serve(deadline)

    def wait_exit(self, deadline: float) -> int | None:
        """The child's exit status once it exits, or None at ``deadline``; its output
        is read (and dropped) meanwhile, so a child flushing at exit is not stuck."""
        while self.proc.poll() is None:
            if time.monotonic() >= deadline:
                return None
            try:
                self._serve(deadline)
            except _Hang:
                return None
            self.out.clear()
            self.scanned = 0
        return self.proc.returncode

    def tail(self) -> str:
        lines = [*self.err_lines]
        if self.err:
            lines.append(self._err_text(bytes(self.err)))
        return ("; its stderr ended with: " + " | ".join(lines)) if lines else ""

    def close(self) -> None:
        self.selector.close()

    def _serve(self, deadline: float) -> None:
        """Wait until a pipe is ready (at most :data:`_POLL`) and serve it; :class:`_Hang`
        once ``deadline`` has passed."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise _Hang()
        for key, _ in self.selector.select(min(left, _POLL)):
            if key.fd != self.stdin:
                self._read(key.fd)

    def _read_available(self) -> None:
        """What is in the pipes now.  Bounded: a child that exited left at most a pipe
        buffer behind, and a grandchild that keeps writing must not keep us here."""
        for key, _ in self.selector.select(0):
            if key.fd != self.stdin:
                for _ in range(_EXIT_CHUNKS):
                    if not self._read(key.fd):
                        break

    def _read(self, fd: int) -> bool:
        """Read one chunk from ``fd``; False when nothing more is there for now."""
        try:
            chunk = os.read(fd, _CHUNK)
        except BlockingIOError:
            return False
        except OSError:
            chunk = b""
        if not chunk:
            self.selector.unregister(fd)
            if fd == self.stdout:
                self.out_closed = True
            return False
        if fd == self.stdout:
            self.out += chunk
        else:
            self._stderr(chunk)
        return True

    def _stderr(self, chunk: bytes) -> None:
        self.err += chunk
        *lines, rest = bytes(self.err).split(b"\n")
        for line in lines[-_STDERR_LINES:]:
            self.err_lines.append(self._err_text(line))
        # Only a line's beginning is ever shown: a line that never ends costs no memory.
        self.err = bytearray(rest[:_STDERR_LINE * 4])

    @staticmethod
    def _err_text(line: bytes) -> str:
        return line.decode("utf-8", errors="replace").rstrip()[:_STDERR_LINE]


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
        self._proc: subprocess.Popen[Any] | None = None
        self._pipes: _Pipes | None = None
        #: the child's process group, when it leads one (killed whole, grandchildren too)
        self._pgid: int | None = None
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
        # One deadline for the request: writing it and reading its answer.
        deadline = time.monotonic() + self.timeout
        self._send({"type": "run", "id": rid, "scenario": scenario.to_json()}, rid, deadline)
        msg = self._receive(f"the result of request {rid}", self.timeout, deadline)
        if msg.get("id") != rid:
            self._kill()
            raise TargetError(f"{self.name}: answered id {_short(msg.get('id'))} to request {rid}",
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
        pipes = self._pipes
        if pipes is None:
            return
        deadline = time.monotonic() + min(self.timeout, SHUTDOWN_GRACE)
        with contextlib.suppress(_Hang, _Exited):
            if pipes.proc.poll() is None:
                pipes.write(dump_line({"type": "bye"}), deadline)
        self._close_stdin()
        pipes.wait_exit(deadline)
        self._kill()

    # -- process management ----------------------------------------------------------

    def _start(self) -> None:
        self._kill()
        try:
            proc = self._spawn()
        except OSError as exc:
            raise TargetUnavailable(f"{self.name}: cannot start: {exc}") from exc
        self._proc = proc
        try:
            self._pgid = proc.pid if os.getpgid(proc.pid) == proc.pid else None
        except OSError:
            self._pgid = None
        self._pipes = _Pipes(proc)
        hello = self._receive("the hello message", self.startup_timeout,
                              time.monotonic() + self.startup_timeout)
        if hello.get("type") != "hello":
            self._kill()
            raise TargetError(f"{self.name}: first message must be hello, got {_short(hello)}")
        if hello.get("protocol") != PROTOCOL_VERSION:
            self._kill()
            raise TargetError(
                f"{self.name}: speaks protocol {_short(hello.get('protocol'))}, "
                f"the suite speaks {PROTOCOL_VERSION}"
            )
        caps = hello.get("capabilities") or {}
        comps = caps.get("components") if isinstance(caps, dict) else None
        reports = caps.get("reports", ["*"]) if isinstance(caps, dict) else None
        if not isinstance(comps, list) or not isinstance(reports, list):
            self._kill()
            raise TargetError(f"{self.name}: hello lacks capabilities.components/reports")
        if isinstance(hello.get("name"), str):
            self.name = f"exec:{_short(hello['name'])}"
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

    def _spawn(self) -> subprocess.Popen[Any]:
        """Start the child with the protocol on its stdin and stdout, in a session of its
        own (a hook for subclasses that start it otherwise; the pipes are read as bytes,
        whatever mode the subclass opens them in)."""
        return subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)

    def _send(self, msg: dict[str, Any], rid: int, deadline: float) -> None:
        assert self._pipes is not None
        data = dump_line(msg)
        try:
            self._pipes.write(data, deadline)
        except _Hang:
            tail = self._tail()
            self._kill()
            raise TargetError(
                f"{self.name}: no answer within {self.timeout:g}s: it had not read request "
                f"{rid} ({len(data)} bytes) by then{tail}", "hang") from None
        except _Exited as exc:
            tail = self._tail()
            self._kill()
            raise TargetError(
                f"{self.name}: died before reading request {rid} ({exc}){tail}", "crash"
            ) from None

    def _receive(self, what: str, wait: float, deadline: float) -> dict[str, Any]:
        """The next message, a JSON object, by ``deadline`` (``wait`` is how long that
        was, for the message)."""
        assert self._pipes is not None
        try:
            line = self._pipes.line(deadline)
        except _Hang:
            tail = self._tail()
            self._kill()
            raise TargetError(
                f"{self.name}: no answer within {wait:g}s while waiting for {what}{tail}",
                "hang",
            ) from None
        except _Exited:
            code = self._pipes.wait_exit(time.monotonic() + KILL_GRACE)
            tail = self._tail()
            self._kill()
            how = "closed its stdout" if code is None else f"exited (status {code})"
            raise TargetError(f"{self.name}: {how} while we waited for {what}{tail}",
                              "crash") from None
        except _TooLong:
            self._kill()
            raise TargetError(f"{self.name}: printed a line longer than {MAX_LINE} bytes",
                              "garbage") from None
        try:
            msg = parse_line(line)
        except ProtocolLineError as exc:
            self._kill()
            raise TargetError(
                f"{self.name}: printed a line that is {exc}: {line[:120]!r}", "garbage"
            ) from None
        if not isinstance(msg, dict):
            self._kill()
            raise TargetError(
                f"{self.name}: printed a JSON value that is not an object: {_short(msg)}",
                "garbage",
            )
        return msg

    def _close_stdin(self) -> None:
        proc = self._proc
        if proc is not None and proc.stdin is not None:
            with contextlib.suppress(OSError, ValueError):
                proc.stdin.close()

    def _kill(self) -> None:
        """End the child and every process of its group: SIGTERM, a short grace, SIGKILL.

        Nothing here waits on a pipe, so a grandchild holding them cannot block it."""
        proc, self._proc = self._proc, None
        pipes, self._pipes = self._pipes, None
        pgid, self._pgid = self._pgid, None
        if proc is None:
            return
        if proc.poll() is None or pgid is not None:
            self._signal(proc, pgid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=KILL_GRACE)
            self._signal(proc, pgid, signal.SIGKILL)  # whatever outlived the grace
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=KILL_GRACE)
        if pipes is not None:
            pipes.close()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError, ValueError):
                    stream.close()

    @staticmethod
    def _signal(proc: subprocess.Popen[Any], pgid: int | None, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if pgid is not None:
                os.killpg(pgid, sig)
            elif proc.poll() is None:
                proc.send_signal(sig)

    def _tail(self) -> str:
        return self._pipes.tail() if self._pipes is not None else ""


def _first_line(text: str) -> str:
    return text.splitlines()[0][:120] if text else text


def _short(value: object) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= 120 else text[:117] + "..."

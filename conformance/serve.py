"""``rx-oracle serve``: any Python target behind the exec protocol of PROTOCOL.md.

Why: the exec protocol is how the suite talks to implementations in other processes, and
serving an in-process target over it gives three things at once.  It is a working
reference implementation of the target side of the protocol (in a few dozen lines); it
lets a Python target run isolated in its own process, with its own ``sys.path``, which is
how mutation testing (``rx-oracle mutate``) runs a mutated copy of ``reference/`` while
the suite keeps the pristine one for its predictions; and it exercises the exec target
end to end against the model itself.

The loop: print ``hello`` with the target's capabilities, then answer each ``run`` with
``result``; an exception the target raises on one scenario becomes an ``error`` answer
for that request only, and the loop goes on.  A line it cannot read (not UTF-8, not JSON,
nested too deep, ``NaN``, an integer Python will not convert) is answered with an
``error`` whose ``id`` is null, and the loop goes on too.  ``bye`` or the end of stdin
ends it with status 0.  Stdout carries strict JSON protocol lines and nothing else (a
target's non-finite number is an ``error`` answer, never a bare ``NaN``): while the
target runs, anything it prints goes to stderr instead.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterable
from typing import IO, Any

from conformance.scenario import Scenario, ScenarioError, to_jsonable
from conformance.targets.base import (
    InputNotApplicable,
    NotApplicable,
    Target,
    TargetError,
    TargetSpecError,
    load_target,
)
from conformance.targets.exec import (
    PROTOCOL_VERSION,
    ProtocolLineError,
    dump_line,
    parse_line,
)

EXIT_OK, EXIT_ERROR = 0, 2
#: Targets served by name: the model, and the live targets (a guest target serves these
#: inside its guest, :mod:`conformance.targets.guest`).
SERVABLE = ("reference", "veth", "tun", "zcrx-live")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``serve`` to the ``rx-oracle`` sub-commands."""
    s: argparse.ArgumentParser = subparsers.add_parser(
        "serve",
        help="serve a Python target over the exec protocol on stdin/stdout",
        description="Serve a Python target over the JSON-lines exec protocol of "
                    "conformance/PROTOCOL.md, so that "
                    "'rx-oracle conformance --target \"exec:rx-oracle serve --target T\"' "
                    "checks it in a separate process.",
    )
    s.add_argument("--target", default="reference", metavar="TARGET",
                   help="reference (default), veth, tun, zcrx-live or python:MODULE:OBJECT")
    return s


def main(args: argparse.Namespace) -> int:
    """Load the target, then run the protocol loop on this process's stdin and stdout."""
    spec = str(args.target)
    if spec not in SERVABLE and not spec.startswith("python:"):
        print(f"rx-oracle serve: cannot serve {spec!r}: use {', '.join(SERVABLE)} or "
              "python:MODULE:OBJECT", file=sys.stderr)
        return EXIT_ERROR
    try:
        target = load_target(spec)
    except (TargetError, TargetSpecError) as exc:  # incl. a module that fails to import
        print(f"rx-oracle serve: {exc}", file=sys.stderr)
        return EXIT_ERROR
    try:
        serve(target, sys.stdin.buffer, sys.stdout)  # bytes: a line may not be UTF-8
    finally:
        target.close()
    return EXIT_OK


def serve(target: Target, stdin: Iterable[str] | Iterable[bytes], stdout: IO[str]) -> None:
    """The protocol loop: hello, then one answer per request until bye or end of input."""
    caps = target.capabilities
    hello: dict[str, object] = {"type": "hello", "protocol": PROTOCOL_VERSION,
                                "name": f"rx-oracle serve {target.name}",
                                "capabilities": caps.to_json()}
    if caps.kernel is not None:
        hello["kernel"] = caps.kernel  # KVER-001 (protocol 1.1)
    _send(stdout, hello)
    for line in stdin:
        if not line.strip():
            continue
        try:
            request = parse_line(line)
        except ProtocolLineError as exc:
            _send(stdout, _error(None, f"request is {exc}"))
            continue
        if not isinstance(request, dict):
            _send(stdout, _error(None, "request is not a JSON object"))
            continue
        kind = request.get("type")
        if kind == "bye":
            return
        if kind != "run":
            _send(stdout, _error(request.get("id"), f"unknown request type {kind!r}"))
            continue
        _send(stdout, answer(target, request))


def answer(target: Target, request: dict[str, Any]) -> dict[str, Any]:
    """The ``result``, ``not_applicable`` or ``error`` message for one ``run`` request."""
    rid = request.get("id")
    doc = request.get("scenario")
    if not isinstance(doc, dict):
        return _error(rid, "run request lacks a scenario object")
    try:
        scenario = Scenario.from_json(doc)
    except ScenarioError as exc:
        return _error(rid, f"bad scenario: {exc}")
    try:
        # The protocol owns stdout: a target that prints must not corrupt it.
        with contextlib.redirect_stdout(sys.stderr):
            observables = target.run(scenario)
    except NotApplicable as exc:  # by design, not a fault (protocol 1.9)
        return {"type": "not_applicable", "id": rid, "message": str(exc),
                "per_input": isinstance(exc, InputNotApplicable)}
    except Exception as exc:  # any failure of the target is an answer, not a crash
        return _error(rid, f"{type(exc).__name__}: {exc}")
    try:
        return {"type": "result", "id": rid, "observables": _plain(observables)}
    except (TypeError, ValueError, RecursionError) as exc:
        return _error(rid, f"observables are not JSON: {exc}")


def _plain(observables: dict[str, Any]) -> Any:
    """Observables as JSON values; a value strict JSON cannot carry (NaN, an object)
    raises here, not mid-write."""
    value = to_jsonable(observables)
    dump_line(value)
    return value


def _error(rid: Any, message: str) -> dict[str, Any]:
    return {"type": "error", "id": rid, "message": message}


def _send(stdout: IO[str], msg: dict[str, Any]) -> None:
    stdout.write(dump_line(msg).decode())
    stdout.flush()

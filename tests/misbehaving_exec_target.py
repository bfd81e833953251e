"""An exec target that misbehaves on purpose, one way per command-line mode.

Whole-target modes: ``silent`` (never says hello), ``hang`` (says hello, then never
answers), ``garbage`` (answers with a line that is not JSON), ``crash`` (exits on the
first request), ``old`` (speaks protocol 0), ``wrong-id`` (answers another request id).

Per-input modes answer like the reference, except on scenarios with at least
``FAULTY_FRAMES`` frames (so hypothesis shrinks a fault to exactly that many):
``some-hang``, ``some-crash``, ``some-garbage``, ``some-error`` (a protocol error
message), ``some-schema`` (observables of the wrong types).  ``stderr-flood`` answers
every request correctly while writing a megabyte to stderr each time, and ``slow``
answers correctly after a short sleep.
"""

from __future__ import annotations

import json
import sys
import time

HELLO = {"type": "hello", "protocol": 1, "name": "misbehaving",
         "capabilities": {"components": ["rss", "kfunc"], "reports": ["*"]}}
FAULTY_FRAMES = 3


def _answer(request: dict[str, object], mode: str) -> dict[str, object] | str | None:
    """The message for one run request (None: hang, a str: raw garbage)."""
    from conformance.components import registry  # imported before hello (see main)
    from conformance.scenario import Scenario, to_jsonable

    scenario = Scenario.from_json(request["scenario"])  # type: ignore[arg-type]
    faulty = len(scenario.frames) >= FAULTY_FRAMES
    if mode == "slow":
        time.sleep(0.02)
    if faulty and mode == "some-hang":
        return None
    if faulty and mode == "some-crash":
        sys.exit(5)
    if faulty and mode == "some-garbage":
        return "not json {"
    if faulty and mode == "some-error":
        return {"type": "error", "id": request["id"], "message": "the port cannot do this"}
    observables = to_jsonable(registry()[scenario.component].expected(scenario))
    if faulty and mode == "some-schema":
        observables = {"packets": "all of them"}
    if mode == "stderr-flood":
        sys.stderr.write("x" * 1_000_000 + "\n")
        sys.stderr.flush()
    return {"type": "result", "id": request["id"], "observables": observables}


def main(mode: str) -> None:
    if mode == "silent":
        time.sleep(3600)
    if mode.startswith("some-") or mode in ("stderr-flood", "slow"):
        from conformance.components import registry

        registry()  # the model loads before hello, so no request waits for imports
    hello = dict(HELLO, protocol=0) if mode == "old" else HELLO
    print(json.dumps(hello), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("type") == "bye":
            return
        if mode == "hang":
            time.sleep(3600)
        elif mode == "garbage":
            print("this is not json {", flush=True)
        elif mode == "crash":
            sys.exit(3)
        elif mode == "wrong-id":
            print(json.dumps({"type": "result", "id": -1, "observables": {}}), flush=True)
        else:
            answer = _answer(request, mode)
            if answer is None:
                time.sleep(3600)
            print(answer if isinstance(answer, str) else json.dumps(answer), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])

"""An exec target that misbehaves on purpose, one way per command-line mode.

Modes: ``silent`` (never says hello), ``hang`` (says hello, then never answers),
``garbage`` (answers with a line that is not JSON), ``crash`` (exits on the first
request), ``old`` (speaks protocol 0), ``wrong-id`` (answers another request id).
"""

from __future__ import annotations

import json
import sys
import time

HELLO = {"type": "hello", "protocol": 1, "name": "misbehaving",
         "capabilities": {"components": ["rss", "kfunc"], "reports": ["*"]}}


def main(mode: str) -> None:
    if mode == "silent":
        time.sleep(3600)
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


if __name__ == "__main__":
    main(sys.argv[1])

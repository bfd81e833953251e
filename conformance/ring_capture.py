"""Captured mlx5 completion rings: the file format ``explain --ring`` and fixtures read
(MLX5-RING-001).

A ring dumped from real hardware (a debugging hook that copies the CQ buffer, the consumer
counter and the receive buffers) is written in one of two forms:

* **JSON**: an ``mlx5`` scenario in the ring-image form (PROTOCOL.md), or the short record
  ``{"cc": N, "slots": ["<128 hex>", ...], "buffers": {"<wqe>": "<hex>"}, "config": {...}}``.
* **Text** (a hexdump), one item per line, ``#`` starting a comment::

      # rx-oracle mlx5 ring
      cc 5
      config {"rq_type": "cyclic", "log_wq_size": 4}
      slot 0  00000000 00000000 ... (64 bytes; spaces anywhere)
      slot 1  ...
      buffer 3  0200000000020200 ...
          more hex of buffer 3 on indented continuation lines

  Every slot of the ring must be given, ``slot 0`` to ``slot 2**n - 1``, owner bits
  included: the driver's view depends on all of them.  Buffers not given read as zero.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conformance.components.mlx5_ring import ring_events


class RingFileError(ValueError):
    """A ring file that does not follow the format; the message names file and line."""


def load_ring(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The ``(config, events)`` a ring file describes."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise RingFileError(f"{path}: cannot read: {exc}") from None
    if text.lstrip().startswith("{"):
        return _from_json(path, text)
    return _from_text(path, text)


def _from_json(path: Path, text: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RingFileError(f"{path}: not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise RingFileError(f"{path}: a ring record is a JSON object")
    config = doc.get("config") or {}
    if "events" in doc:  # a whole scenario
        return dict(config), [dict(e) for e in doc["events"]]
    try:
        slots = [bytes.fromhex(str(s)) for s in doc["slots"]]
        buffers = {int(k): bytes.fromhex(str(v)) for k, v in (doc.get("buffers") or {}).items()}
        cc = int(doc.get("cc", 0))
    except (KeyError, ValueError, TypeError) as exc:
        raise RingFileError(f"{path}: a ring record needs 'slots' (hex), optional 'cc' and "
                            f"'buffers' ({{wqe: hex}}): {exc}") from None
    return dict(config), list(ring_events(slots, cc, buffers))


def _from_text(path: Path, text: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    config: dict[str, Any] = {}
    cc = 0
    slots: dict[int, str] = {}
    buffers: dict[int, str] = {}
    current: dict[int, str] | None = None
    key = -1
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0]
        where = f"{path}:{lineno}"
        if not line.strip():
            continue
        if line[0].isspace():  # continuation of the previous slot or buffer
            if current is None:
                raise RingFileError(f"{where}: continuation line without a slot or buffer")
            current[key] += _hex(line, where)
            continue
        word, _, rest = line.strip().partition(" ")
        if word == "cc":
            cc = _int(rest, where)
        elif word == "config":
            try:
                config = json.loads(rest)
            except json.JSONDecodeError as exc:
                raise RingFileError(f"{where}: config is not JSON: {exc}") from None
        elif word in ("slot", "buffer"):
            index, _, data = rest.strip().partition(" ")
            current = slots if word == "slot" else buffers
            key = _int(index, where)
            if key in current:
                raise RingFileError(f"{where}: {word} {key} given twice")
            current[key] = _hex(data, where)
        else:
            raise RingFileError(f"{where}: expected cc, config, slot or buffer; got {word!r}")
    if sorted(slots) != list(range(len(slots))):
        raise RingFileError(f"{path}: slots must be numbered 0..n-1 without gaps")
    try:
        return config, list(ring_events(
            [bytes.fromhex(slots[i]) for i in range(len(slots))], cc,
            {w: bytes.fromhex(h) for w, h in buffers.items()}))
    except ValueError as exc:
        raise RingFileError(f"{path}: odd number of hex digits: {exc}") from None


def _hex(text: str, where: str) -> str:
    digits = "".join(text.split())
    if any(ch not in "0123456789abcdefABCDEF" for ch in digits):
        raise RingFileError(f"{where}: not hex: {text.strip()[:40]!r}")
    return digits


def _int(text: str, where: str) -> int:
    try:
        return int(text.strip(), 0)
    except ValueError:
        raise RingFileError(f"{where}: not an integer: {text.strip()!r}") from None


def dump_text(config: dict[str, Any], events: list[dict[str, Any]]) -> str:
    """The text form of a ring image (the inverse of :func:`load_ring`)."""
    out = ["# rx-oracle mlx5 ring (conformance/ring_capture.py)"]
    for e in events:
        if e.get("op") == "ring":
            out.append(f"cc {int(e.get('cc', 0))}")
    out.append("config " + json.dumps(config, sort_keys=True))
    for e in events:
        if e.get("op") == "ring":
            for i, s in enumerate(e["slots"]):
                out.append(f"slot {i} " + " ".join(s[j : j + 16] for j in range(0, len(s), 16)))
    for e in events:
        if e.get("op") == "buffer":
            data = str(e["data"])
            out.append(f"buffer {e['wqe']}")
            out += ["    " + data[j : j + 64] for j in range(0, len(data), 64)]
    return "\n".join(out) + "\n"

"""Read a hand-edited TOML file of the mutation tools and validate it with a JSON Schema.

The judgement files (``equivalents/*.toml``, ``unreached.toml``) are written by people;
a mistake in one is reported in one line naming the file, the entry and the field.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import jsonschema


def load(path: Path, schema: dict[str, Any], error: type[Exception]) -> dict[str, Any]:
    """The document in ``path``, valid under ``schema``; else ``error`` with one line."""
    try:
        doc = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path.name}: not TOML: {exc}") from None
    try:
        jsonschema.validate(doc, schema)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise error(f"{path.name}: {where}: {exc.message}") from None
    return doc

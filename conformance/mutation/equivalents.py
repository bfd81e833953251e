"""Mutants judged equivalent: the triage that turns a kill rate into a defended number.

A surviving mutant is either a gap in the suite or *equivalent*: no target built that way
could be told apart from the reference by anything the kernel lets a developer see (a
refusal the suite never provokes, a documentation table, a constant read nowhere). The
judgement is a person's, made once and written down with its reason in
``equivalents/<component>.toml`` next to this module (one file per primary component of
the mutated module, :mod:`conformance.mutation.scope`); the report then gives the kill rate over the
non-equivalent mutants, the figure issue 14's done-when is about.

An entry names its mutant by what survives edits elsewhere in the file: the module path,
the enclosing function, the operator, the replaced and the new text, and the stripped
source line the change starts on (``code``). Line numbers are not used: they move with
every edit above. When the line itself is edited, the entry stops matching and
``tests/test_mutation_equivalents.py`` fails: an edited line must be judged again.

The file is validated with a JSON Schema (a user's mistake there is one line naming the
entry and field).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from conformance.mutation import checked_toml
from conformance.mutation.mutator import Mutant

REGISTRY = Path(__file__).with_name("equivalents")

_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "mutant": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["path", "function", "operator", "original", "replacement",
                             "code", "reason"],
                "properties": {
                    "path": {"type": "string", "pattern": r"^reference/.+\.py$"},
                    "function": {"type": "string"},
                    "operator": {"enum": ["cmp", "bool", "int", "stmt", "args", "enum"]},
                    "original": {"type": "string", "minLength": 1},
                    "replacement": {"type": "string", "minLength": 1},
                    "code": {"type": "string", "minLength": 1},
                    "reason": {"type": "string", "minLength": 10},
                },
            },
        },
    },
}


class RegistryError(Exception):
    """A registry file is malformed: one line naming the file, the entry and the field."""


@attrs.frozen
class Equivalent:
    """One judged-equivalent mutant and why no observable can tell it apart."""

    path: str
    function: str
    operator: str
    original: str
    replacement: str
    code: str
    reason: str

    @property
    def key(self) -> tuple[str, str, str, str, str, str]:
        return (self.path, self.function, self.operator, self.original, self.replacement,
                self.code)


def key_of(mutant: Mutant, source: str) -> tuple[str, str, str, str, str, str]:
    """The registry key of ``mutant``, read against its module's ``source``."""
    # A mutant read back from an earlier run names its line's text; an older record does
    # not, and is matched against today's source at its line.
    code = mutant.code or source.splitlines()[mutant.line - 1].strip()
    return (mutant.path, mutant.function, mutant.operator, mutant.original,
            mutant.replacement, code)


def load(path: Path = REGISTRY) -> dict[tuple[str, str, str, str, str, str], Equivalent]:
    """The registry (a directory of TOML files, or one file), keyed as :func:`key_of` keys
    a mutant."""
    files = sorted(path.glob("*.toml")) if path.is_dir() else [path]
    out: dict[tuple[str, str, str, str, str, str], Equivalent] = {}
    for file in files:
        for index, eq in enumerate(_load_file(file)):
            if eq.key in out:
                raise RegistryError(f"{file.name}: mutant/{index}: the same mutant twice "
                                    f"({eq.path} {eq.code!r})")
            out[eq.key] = eq
    return out


def _load_file(path: Path) -> list[Equivalent]:
    doc = checked_toml.load(path, _SCHEMA, RegistryError)
    return [Equivalent(**entry) for entry in doc.get("mutant", [])]


def judge(mutants: Iterable[Mutant], root: Path,
          registry: Mapping[tuple[str, str, str, str, str, str], Equivalent] | None = None,
          ) -> dict[str, Equivalent]:
    """Mutant id -> its registry entry, for the mutants of ``mutants`` judged equivalent."""
    registry = load() if registry is None else registry
    sources: dict[str, str] = {}
    out = {}
    for m in mutants:
        if m.path not in sources:
            sources[m.path] = (root / m.path).read_text()
        eq = registry.get(key_of(m, sources[m.path]))
        if eq is not None:
            out[m.id] = eq
    return out


def toml_entry(mutant: Mutant, source: str, reason: str) -> str:
    """The registry entry for ``mutant`` as TOML text (what :func:`main` appends)."""
    key = key_of(mutant, source)
    names = ("path", "function", "operator", "original", "replacement", "code")
    lines = ["", "[[mutant]]"]
    lines += [f"{name} = {_toml_string(value)}" for name, value in zip(names, key, strict=True)]
    lines.append(f"reason = {_toml_string(reason)}")
    return "\n".join(lines) + "\n"


def _toml_string(text: str) -> str:
    """A TOML basic string (JSON's escapes are a subset TOML accepts)."""
    import json
    return json.dumps(text, ensure_ascii=False)


def main(argv: list[str] | None = None) -> int:
    """``python -m conformance.mutation.equivalents RESULTS.jsonl MUTANT_ID REASON``:
    append a judged-equivalent mutant of a mutation run to the registry file of its
    module's primary component."""
    import argparse
    import json
    import sys

    parser = argparse.ArgumentParser(prog="python -m conformance.mutation.equivalents",
                                     description=main.__doc__)
    parser.add_argument("results", type=Path)
    parser.add_argument("mutant_id")
    parser.add_argument("reason")
    args = parser.parse_args(argv)
    root = REGISTRY.parent.parent.parent
    for line in args.results.read_text().splitlines():
        doc = json.loads(line)
        if doc["mutant"]["id"] == args.mutant_id:
            mutant = Mutant.from_json(doc["mutant"])
            break
    else:
        print(f"{args.results}: no mutant {args.mutant_id}", file=sys.stderr)
        return 2
    if len(args.reason.strip()) < 10:
        print("reason: say why no observable can tell the mutant apart", file=sys.stderr)
        return 2
    from conformance.mutation.scope import components_for

    entry = toml_entry(mutant, (root / mutant.path).read_text(), args.reason.strip())
    target = REGISTRY / f"{components_for(mutant.path)[0]}.toml"
    with target.open("a") as f:
        f.write(entry)
    load()  # the registry stays valid, or this says where it is not
    print(entry, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

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
every edit above. When two mutants of one line share all of that (the same text replaced
the same way at two places of the line) and only one is equivalent, its entry also names
its column (``col``). When the same line appears twice in the module (two rows of a
table) and only one of its mutants is equivalent, the entry also names the first line of
the line above it (``above``). When the line itself is edited, the entry
stops matching and
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
                    "col": {"type": "integer", "minimum": 0},
                    "above": {"type": "string", "minLength": 1},
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
    #: The mutant's column, when its line has another mutant with the same key.
    col: int | None = None
    #: :func:`above_of` the mutant, when an identical line elsewhere in the module has a
    #: mutant with the same key.
    above: str | None = None

    @property
    def key(self) -> tuple[str, str, str, str, str, str]:
        return (self.path, self.function, self.operator, self.original, self.replacement,
                self.code)

    @property
    def entry_key(self) -> Key:
        """What names this entry in the registry: the key, and the column and the
        enclosing line if given."""
        return (*self.key, self.col, self.above)


#: A registry entry's name: :func:`key_of`'s key, a column (None: every column) and the
#: :func:`above_of` text (None: every place the line appears).
Key = tuple[str, str, str, str, str, str, int | None, str | None]


def key_of(mutant: Mutant, source: str) -> tuple[str, str, str, str, str, str]:
    """The registry key of ``mutant``, read against its module's ``source``."""
    # A mutant read back from an earlier run names its line's text; an older record does
    # not, and is matched against today's source at its line.
    code = mutant.code or source.splitlines()[mutant.line - 1].strip()
    return (mutant.path, mutant.function, mutant.operator, mutant.original,
            mutant.replacement, code)


def above_of(mutant: Mutant, source: str, depth: int = 1) -> str:
    """The stripped text of the nearest non-blank line above ``mutant``'s line ("" at the
    top): what tells apart two identical lines, such as two gates'
    ``Since(mainline=(7, 0))),`` (each below its own after-text) or the two identical folds
    of ``_from64to32`` (the second below the first).  With ``depth`` above 1, that many
    nearest non-blank lines, in source order, joined by newlines: for identical lines
    below identical lines (``flow_dissector._dissect``'s two ``continue`` / ``return
    True`` pairs)."""
    lines = [text.strip() for text in source.splitlines()[:mutant.line - 1] if text.strip()]
    return "\n".join(lines[-depth:]) if lines else ""


def _depth(above: str) -> int:
    """How many lines an entry's ``above`` names."""
    return above.count("\n") + 1


def load(path: Path = REGISTRY) -> dict[Key, Equivalent]:
    """The registry (a directory of TOML files, or one file), keyed by
    :attr:`Equivalent.entry_key`."""
    files = sorted(path.glob("*.toml")) if path.is_dir() else [path]
    out: dict[Key, Equivalent] = {}
    for file in files:
        for index, eq in enumerate(_load_file(file)):
            if eq.entry_key in out:
                raise RegistryError(f"{file.name}: mutant/{index}: the same mutant twice "
                                    f"({eq.path} {eq.code!r})")
            out[eq.entry_key] = eq
    for key, eq in out.items():
        # An entry for every column (or place) beside one for a single column (place) of
        # the same key: the narrower one says the others are not equivalent, the wider
        # one that they are.
        wider = [(*key[:6], None, key[7]), (*key[:6], key[6], None), (*key[:6], None, None)]
        if any(w != key and w in out for w in wider):
            raise RegistryError(f"{eq.path}: {eq.code!r} is registered for every column "
                                f"or place and for one")
    return out


def lookup(registry: Mapping[Key, Equivalent], mutant: Mutant,
           source: str) -> Equivalent | None:
    """``mutant``'s registry entry: the narrowest one that names it (its column, the line
    above it, both, or neither)."""
    key = key_of(mutant, source)
    found = registry.get((*key, mutant.col, None)) or registry.get((*key, None, None))
    if found is not None:
        return found
    depths = {_depth(k[7]) for k in _placed(registry) if k[:6] == key and k[7] is not None}
    for depth in sorted(depths):
        above = above_of(mutant, source, depth)
        found = registry.get((*key, mutant.col, above)) or registry.get((*key, None, above))
        if found is not None:
            return found
    return None


def _placed(registry: Mapping[Key, Equivalent]) -> list[Key]:
    """The keys of entries that name a place (``above``): few, so scanned directly."""
    return [k for k in registry if k[7] is not None]


def _load_file(path: Path) -> list[Equivalent]:
    doc = checked_toml.load(path, _SCHEMA, RegistryError)
    return [Equivalent(**entry) for entry in doc.get("mutant", [])]


def judge(mutants: Iterable[Mutant], root: Path,
          registry: Mapping[Key, Equivalent] | None = None,
          ) -> dict[str, Equivalent]:
    """Mutant id -> its registry entry, for the mutants of ``mutants`` judged equivalent."""
    registry = load() if registry is None else registry
    sources: dict[str, str] = {}
    out = {}
    for m in mutants:
        if m.path not in sources:
            sources[m.path] = (root / m.path).read_text()
        eq = lookup(registry, m, sources[m.path])
        if eq is not None:
            out[m.id] = eq
    return out


def toml_entry(mutant: Mutant, source: str, reason: str, *, col: bool = False,
               above: int = 0) -> str:
    """The registry entry for ``mutant`` as TOML text (what :func:`main` appends); with
    ``col``, naming its column too, with ``above``, that many lines above it."""
    key = key_of(mutant, source)
    names = ("path", "function", "operator", "original", "replacement", "code")
    lines = ["", "[[mutant]]"]
    lines += [f"{name} = {_toml_string(value)}" for name, value in zip(names, key, strict=True)]
    if col:
        lines.append(f"col = {mutant.col}")
    if above:
        lines.append(f"above = {_toml_string(above_of(mutant, source, above))}")
    lines.append(f"reason = {_toml_string(reason)}")
    return "\n".join(lines) + "\n"


def _toml_string(text: str) -> str:
    """A TOML basic string (JSON's escapes are a subset TOML accepts)."""
    import json
    return json.dumps(text, ensure_ascii=False)


def main(argv: list[str] | None = None) -> int:
    """``python -m conformance.mutation.equivalents RESULTS.jsonl MUTANT_ID REASON``:
    append a judged-equivalent mutant of a mutation run to the registry file of its
    module (:func:`registry_file`).  Refused, with the file untouched, when the mutant is
    registered already, or when another mutant of the module (of today's source, or of
    the run) shares its key: on its line (then ``--col`` names it by its column as well)
    or on an identical line elsewhere (then ``--above`` names the line above it)."""
    import argparse
    import json
    import sys

    parser = argparse.ArgumentParser(prog="python -m conformance.mutation.equivalents",
                                     description=main.__doc__)
    parser.add_argument("results", type=Path)
    parser.add_argument("mutant_id")
    parser.add_argument("reason")
    parser.add_argument("--col", action="store_true",
                        help="name the mutant by its column too (another mutant of its line "
                             "has the same key)")
    parser.add_argument("--above", nargs="?", type=int, const=1, default=0, metavar="N",
                        help="name the line above the mutant too (an identical line "
                             "elsewhere in the module has a mutant with the same key); "
                             "N lines when the lines above are identical too")
    args = parser.parse_args(argv)
    root = Path(__file__).resolve().parent.parent.parent  # the sources being judged
    run = [Mutant.from_json(json.loads(line)["mutant"])
           for line in args.results.read_text().splitlines() if line.strip()]
    mutant = next((m for m in run if m.id == args.mutant_id), None)
    if mutant is None:
        print(f"{args.results}: no mutant {args.mutant_id}", file=sys.stderr)
        return 2
    if len(args.reason.strip()) < 10:
        print("reason: say why no observable can tell the mutant apart", file=sys.stderr)
        return 2
    try:
        registry = load(REGISTRY)
    except RegistryError as exc:
        print(f"the registry is malformed already: {exc}", file=sys.stderr)
        return 2
    source = (root / mutant.path).read_text()
    found = lookup(registry, mutant, source)
    if found is not None:
        print(f"{args.mutant_id}: registered already: {found.reason}", file=sys.stderr)
        return 2
    problem = _ambiguity(mutant, [*run, *_module_mutants(root, mutant.path)], source,
                         col=args.col, above=args.above)
    if problem:
        print(f"{args.mutant_id}: {problem}", file=sys.stderr)
        return 2
    target = REGISTRY / f"{registry_file(mutant.path)}.toml"
    before = target.read_text() if target.exists() else None
    entry = toml_entry(mutant, source, args.reason.strip(), col=args.col, above=args.above)
    with target.open("a") as f:
        f.write(entry)
    try:
        load(REGISTRY)
    except RegistryError as exc:  # pragma: no cover - the checks above should prevent it
        if before is None:
            target.unlink()
        else:
            target.write_text(before)
        print(f"not registered: {exc}", file=sys.stderr)
        return 2
    print(entry, end="")
    return 0


def registry_file(path: str) -> str:
    """The registry file (without ``.toml``) of a module's entries: its primary
    component's, except for the version gates every component reads (``kernel``)."""
    from conformance.mutation.scope import components_for

    return "kernel" if path == "reference/kernel.py" else components_for(path)[0]


def _module_mutants(root: Path, path: str) -> list[Mutant]:
    """Every candidate mutant of today's module (what a key must tell apart, whether or
    not the run judged it)."""
    from conformance.mutation import sampling

    try:
        return sampling.candidates(root, [path])
    except (OSError, SyntaxError):  # a module that is not today's mutated source
        return []


def _ambiguity(mutant: Mutant, others: Iterable[Mutant], source: str, *, col: bool,
               above: int) -> str:
    """Why the entry the options would write would also name another mutant, or ""."""
    key = key_of(mutant, source)
    place = above_of(mutant, source, above) if above else None
    for m in others:
        if m.id == mutant.id or (m.line, m.col) == (mutant.line, mutant.col) \
                or key_of(m, source) != key:
            continue
        same_col = not col or m.col == mutant.col
        same_place = place is None or above_of(m, source, above) == place
        if same_col and same_place:
            if m.line == mutant.line:
                return (f"{m.id} has the same key (path, function, text, line); name the "
                        "column with --col")
            if above and not col:
                return (f"{m.id} has the same key on an identical line below the same "
                        f"{above} line(s); name the column with --col, or more lines with "
                        f"--above {above + 1}")
            if above:
                return (f"{m.id} has the same key on an identical line below the same "
                        f"{above} line(s); name more lines with --above {above + 1}")
            return (f"{m.id} has the same key on an identical line; name the line above "
                    "it with --above")
    return ""


if __name__ == "__main__":
    raise SystemExit(main())

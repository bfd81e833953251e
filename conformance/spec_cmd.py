"""``rx-oracle spec RULE-ID|GLOB``: one rule, its kernel source, its code, tests and fixtures.

Everything shown comes from :mod:`conformance.spectrace`, the parser the traceability test
uses (SPEC: TRACE-002).  This module only adds what a reader needs beside it: a link to
each kernel file the rule cites, at the tree the rule was read in, and the rendering
(terminal text with rich on a TTY, plain text otherwise, ``--json`` for tools).
"""

from __future__ import annotations

import argparse
import difflib
import fnmatch
import json
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

from conformance import spectrace
from conformance.spectrace import Rule, Site, SpecIndex
from conformance.usage import UsageError

JSON_FORMAT, JSON_VERSION = "rx-oracle-spec", 1
#: More matches than this print as one table row each, unless ``--full``.
TABLE_OVER = 5
#: How many fixture records the text names (``--json`` lists them all).
FIXTURES_SHOWN = 5

ELIXIR = "https://elixir.bootlin.com/linux/{tag}/source/{path}"
_KERNEL_TOP = frozenset({"arch", "block", "crypto", "Documentation", "drivers", "fs",
                         "include", "init", "io_uring", "ipc", "kernel", "lib", "mm", "net",
                         "samples", "scripts", "security", "sound", "tools", "virt"})
#: Paths a rule cites from a later tree than the one it was read in (no v6.17-rc3 link).
_NOT_IN_V617 = frozenset({"tools/testing/selftests/drivers/net/hw/toeplitz.c"})
#: Driver rules cite their own files relative to the driver's directory.
_DRIVER_DIRS = {
    "MLX5-": (re.compile(r"^(en/|en_|lib/)"), "drivers/net/ethernet/mellanox/mlx5/core/"),
    "FEC-": (re.compile(r"^fec(_\w+)?\.[ch]$"), "drivers/net/ethernet/freescale/"),
}
_PATH_RE = re.compile(r"`([A-Za-z0-9_./-]+\.(?:[ch]|rst|py|md)|[A-Za-z0-9_./-]+/Kconfig[\w.]*)"
                      r"(?=[:`\s])")


@attrs.frozen
class KernelTree:
    """The tree a rule was read in, and how to reach a file of it."""

    version: str
    description: str
    elixir_tag: str | None  # None: no public browsable URL is pinned for this tree

    def url(self, path: str) -> str | None:
        if self.elixir_tag is None or path in _NOT_IN_V617:
            return None
        return ELIXIR.format(tag=self.elixir_tag, path=path)


MAINLINE = KernelTree(
    "v6.17-rc3",
    "mainline v6.17-rc3, read in the Kingxukai/linux mirror; version notes in the citation "
    "name Debian's linux-source-6.12 (6.12.117) and linux-source-7.3 (7.3.4)",
    "v6.17-rc3")
ZCRX = KernelTree(
    "v7.0",
    "v7.0 semantics, read in Debian's linux-source-7.3 package (7.3.4) and a v7.1-cycle "
    "io_uring/zcrx.c (openSUSE/kernel@0719e10d826a); no public browsable URL is pinned for "
    "these trees, so the paths carry no link",
    None)


def tree_of(rule: Rule) -> KernelTree:
    """SPEC.md's preface: every area describes v6.17 but zcrx, which describes v7.0."""
    return ZCRX if rule.id.startswith("ZCRX-") else MAINLINE


def cited_files(rule: Rule, root: Path) -> list[dict[str, str | None]]:
    """Each file the citation names: ``{"path", "where", "url"}``.

    ``where`` is ``kernel``, ``checkout`` (a file of this repository) or ``other`` (QEMU,
    rdma-core, documentation outside the kernel: named, not linked).  A bare file name
    outside a driver's own rules is not a path and is left in the citation text only.
    """
    out: dict[str, dict[str, str | None]] = {}
    for token in _PATH_RE.findall(re.sub(r"/\s+", "/", rule.source)):
        path = token
        for prefix, (pattern, directory) in _DRIVER_DIRS.items():
            if rule.id.startswith(prefix) and pattern.match(token):
                path = directory + token
        if "/" not in path:
            continue
        if (root / path).is_file():
            where, url = "checkout", None
        elif path.split("/", 1)[0] in _KERNEL_TOP:
            where, url = "kernel", tree_of(rule).url(path)
        else:
            where, url = "other", None
        out.setdefault(path, {"path": path, "where": where, "url": url})
    return list(out.values())


# --- selecting rules ----------------------------------------------------------------------

def select(index: SpecIndex, patterns: Iterable[str]) -> list[Rule]:
    """The rules the patterns name, in SPEC order; a pattern naming none is a UsageError."""
    chosen: set[str] = set()
    for raw in patterns:
        pattern = raw.strip().upper()
        hits = [rid for rid in index.rules if fnmatch.fnmatchcase(rid, pattern)]
        if not hits:
            shown = raw if raw.isprintable() else repr(raw)  # the message stays one line
            raise UsageError(f"spec {shown}: no such rule; {_hint(index, pattern)}")
        chosen.update(hits)
    return [rule for rid, rule in index.rules.items() if rid in chosen]


def _hint(index: SpecIndex, pattern: str) -> str:
    close = difflib.get_close_matches(pattern, list(index.rules), n=3, cutoff=0.75)
    if close:
        return f"did you mean {', '.join(close)}?"
    areas = dict.fromkeys(rid.split("-", 1)[0] for rid in index.rules)
    return f"SPEC.md defines {len(index.rules)} rules, their ids start with {', '.join(areas)}"


# --- one rule as data -----------------------------------------------------------------------

def _sites(sites: Iterable[Site]) -> list[dict[str, Any]]:
    return [{"path": s.path, "line": s.line, **({"name": s.name} if s.name else {})}
            for s in sites]


def describe(index: SpecIndex, rule: Rule) -> dict[str, Any]:
    """Everything ``spec`` knows about one rule, as JSON-ready data."""
    tree = tree_of(rule)
    return {
        "id": rule.id,
        "title": rule.title,
        "area": rule.area,
        "spec": {"path": "SPEC.md", "line": rule.line},
        "text": rule.text,
        "statement": rule.statement,
        "source": rule.source,
        "kind": rule.kind,
        "kernel_tree": {"version": tree.version, "description": tree.description},
        "cited_files": cited_files(rule, index.root),
        "code": _sites(index.code.get(rule.id, [])),
        "tests": _sites(index.tests.get(rule.id, [])),
        "properties": _sites(index.properties.get(rule.id, [])),
        "fixtures": {"count": len(index.fixtures.get(rule.id, [])),
                     "records": _sites(index.fixtures.get(rule.id, []))},
    }


# --- rendering ------------------------------------------------------------------------------

def _by_file(sites: list[dict[str, Any]]) -> list[str]:
    files: dict[str, list[str]] = {}
    for s in sites:
        files.setdefault(s["path"], []).append(str(s["line"]))
    return [f"{path}:{', '.join(lines)}" for path, lines in files.items()]


_KEEP_BREAK = re.compile(r"\n(?=\s|[-*|] |\d+\. |\n)")


def reflow(text: str) -> str:
    """SPEC's hard line breaks joined, so a terminal wraps to its own width; paragraph
    breaks, list items, tables and indented lines keep theirs."""
    parts = _KEEP_BREAK.split(text)
    return "\n".join(" ".join(p.split("\n")) for p in parts)


def render_text(d: dict[str, Any], *, wrap: bool = False) -> Any:
    """One rule as a rich ``Text``; ``.plain`` is what is printed when not on a TTY, with
    SPEC's text verbatim.  ``wrap`` reflows the text for a terminal of any width."""
    from rich.style import Style
    from rich.text import Text

    t = Text()
    t.append(f"{d['id']} — {d['title']}\n", style="bold")
    t.append(f"SPEC.md:{d['spec']['line']} · {d['area']}\n\n", style="dim")
    t.append((reflow(d["statement"]) if wrap else d["statement"]) + "\n\n")
    t.append("Source: ", style="bold")
    t.append(d["source"] + "\n")
    for f in d["cited_files"]:
        if f["url"]:  # the URL ends in the path: one line, clickable where links are
            t.append("  ")
            t.append(f["url"], style=Style(link=f["url"], color="blue"))
            t.append("\n")
            continue
        t.append(f"  {f['path']}")
        if f["where"] == "checkout":
            t.append("  (this checkout)", style="dim")
        elif f["where"] == "other":
            t.append("  (not a kernel file)", style="dim")
        t.append("\n")
    if any(f["where"] == "kernel" for f in d["cited_files"]):
        t.append(f"  tree: {d['kernel_tree']['description']}\n", style="dim")
    t.append("Kind: ", style="bold")
    t.append(d["kind"] + "\n")
    for label, key in (("Code", "code"), ("Tests", "tests"), ("Properties", "properties")):
        sites = d[key]
        t.append(f"{label} ({len(sites)}):", style="bold")
        t.append(" none\n" if not sites else "\n")
        lines = _by_file(sites) if key == "code" else [
            f"{s['path']}:{s['line']} {s['name']}" for s in sites]
        for line in lines:
            t.append(f"  {line}\n")
    fx = d["fixtures"]
    t.append(f"Fixtures ({fx['count']}):", style="bold")
    shown = [f"{r['path']}:{r['line']} {r['name']}" for r in fx["records"][:FIXTURES_SHOWN]]
    more = fx["count"] - len(shown)
    t.append((" " + ", ".join(shown) if shown else " none")
             + (f", … {more} more (--json lists them)" if more > 0 else "") + "\n")
    return t


def _table_rows(ds: list[dict[str, Any]]) -> list[tuple[str, str, str, str, str]]:
    return [(d["id"], d["title"], str(len(d["code"])),
             str(len(d["tests"]) + len(d["properties"])), str(d["fixtures"]["count"]))
            for d in ds]


_HEADER = ("rule", "title", "code", "tests", "fixtures")


def render_table_plain(ds: list[dict[str, Any]]) -> str:
    rows = [_HEADER, *_table_rows(ds)]
    width = [max(len(r[i]) for r in rows) for i in range(len(_HEADER))]
    lines = ["  ".join(c.rjust(w) if i >= 2 else c.ljust(w)
                       for i, (c, w) in enumerate(zip(r, width, strict=True))).rstrip()
             for r in rows]
    return "\n".join(lines)


def _print_rich_table(ds: list[dict[str, Any]], title: str) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for i, name in enumerate(_HEADER):
        table.add_column(name, justify="right" if i >= 2 else "left",
                         overflow="fold" if name == "title" else "ellipsis")
    for row in _table_rows(ds):
        table.add_row(*row)
    Console().print(table)


# --- the command ------------------------------------------------------------------------------

def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``spec`` to the ``rx-oracle`` sub-commands."""
    s: argparse.ArgumentParser = subparsers.add_parser(
        "spec", help="look up SPEC rules: text, kernel source, code, tests, fixtures",
        description="Show SPEC.md rules with their kernel citation (linked at the tree they "
                    "were read in), the code lines naming them, the tests and conformance "
                    "properties marked with them and the fixtures exercising them.  Needs a "
                    "source checkout (SPEC.md, tests/ and fixtures/ beside the package).")
    s.add_argument("rules", nargs="+", metavar="RULE-ID|GLOB",
                   help="a rule id (like FEC-RX-00N) or a glob ('FEC-RX-*'); repeatable")
    s.add_argument("--full", action="store_true",
                   help=f"print every rule in full, even when more than {TABLE_OVER} match")
    s.add_argument("--json", action="store_true", help="print JSON for tools (every field)")
    return s


def lookup(patterns: Iterable[str]) -> list[dict[str, Any]]:
    """The described rules the patterns name: what ``rx-oracle spec`` prints."""
    try:
        index = spectrace.load(spectrace.ROOT)
    except spectrace.SpecTreeError as exc:
        raise UsageError(f"spec: {exc}") from None
    return [describe(index, rule) for rule in select(index, patterns)]


def main(args: argparse.Namespace) -> int:
    ds = lookup(args.rules)
    if args.json:
        print(json.dumps({"format": JSON_FORMAT, "version": JSON_VERSION,
                          "query": list(args.rules), "rules": ds}, indent=1))
        return 0
    tty = sys.stdout.isatty()
    if len(ds) > TABLE_OVER and not args.full:
        title = f"{len(ds)} rules match {' '.join(args.rules)} (--full for each in full)"
        if tty:
            _print_rich_table(ds, title)
        else:
            print(title)
            print(render_table_plain(ds))
        return 0
    if tty:
        from rich.console import Console

        console = Console(highlight=False)
        for i, d in enumerate(ds):
            console.print(render_text(d, wrap=True), end="\n" if i + 1 < len(ds) else "")
    else:
        print("\n".join(render_text(d).plain for d in ds), end="")
    return 0

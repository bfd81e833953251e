"""The guided tour (docs/tour.md) stays true: every console block's command runs through the
``rx-oracle`` entry point and its excerpt appears, in order, in the real output.

Convention (stated in the tour itself): a ```` ```console ```` block holds one or more
commands, each a line ``$ rx-oracle ...`` (optionally after ``NAME=VALUE`` environment
assignments, e.g. ``PYTHONPATH=tests``), followed by the excerpt of its output.  Excerpt
lines must match output lines in the same order (more output lines may come between);
``...`` alone on a line is a visual gap, ``...`` inside a line matches any text; runs of
whitespace are not significant.  ``[exit N]`` states the exit status, 0 by default.  The
output compared is stdout followed by stderr.

Each story's test names the rules its story checks; the story's prose must name each of
them, and every rule id the story names must exist in SPEC.md.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest

from conformance import cli
from conformance.spectrace import load_rules

ROOT = Path(__file__).resolve().parent.parent
TOUR = ROOT / "docs" / "tour.md"
EXAMPLES = ROOT / "examples" / "tour"

_RULE_ID = re.compile(r"\b[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*-\d{3}\b")
_EXIT = re.compile(r"^\[exit (\d+)\]$")
_ENV = re.compile(r"^[A-Z_][A-Z0-9_]*=")

#: The rules each story checks, by the story's number in docs/tour.md.
MLX5_RULES = ("MLX5-XDP-001", "MLX5-XDP-003", "MLX5-XDP-004", "XDP-BUFF-007", "XDP-ADJ-005")
FEC_RULES = ("FEC-XDP-002", "FEC-XDP-005", "FEC-XDP-008", "FEC-TX-003", "FEC-TX-005",
             "XDP-FRAME-004")
ZCRX_RULES = ("ZCRX-BUFLEN-001", "ZCRX-BUFLEN-002", "ZCRX-BUFLEN-003", "ZCRX-BUFLEN-005",
              "ZCRX-BUFLEN-006", "ZCRX-QUEUE-002", "ZCRX-MP-001", "ZCRX-SIM-004",
              "ZCRX-REG-003")
KFUNC_RULES = ("KFUNC-API-002", "KFUNC-API-003", "KFUNC-CALL-001", "MLX5-KF-002",
               "MLX5-KF-004", "MLX5-KF-006", "FEC-XDP-001", "TUN-KF-001", "VETH-KF-002",
               "VETH-KF-004")
CPUMAP_RULES = ("SKB-BUILD-003", "SKB-BUILD-004", "SKB-FREE-001", "SKB-FREE-002",
                "CPUMAP-KT-006", "CPUMAP-SIM-004", "CPUMAP-KT-004")


@attrs.frozen
class Block:
    """One command of a console block and the excerpt that must be in its output."""

    story: int
    line: int  # where the command is in docs/tour.md
    env: dict[str, str]
    argv: tuple[str, ...]  # after ``rx-oracle``
    excerpt: tuple[str, ...]
    exit: int


def _normal(text: str) -> str:
    return " ".join(text.split())


def _pattern(line: str) -> re.Pattern[str]:
    """An excerpt line as a pattern: ``...`` inside it matches any text."""
    return re.compile(".*".join(re.escape(part.strip()) for part in _normal(line).split("...")))


def _command(text: str, where: str) -> tuple[dict[str, str], tuple[str, ...]]:
    words = shlex.split(text)
    env: dict[str, str] = {}
    while words and _ENV.match(words[0]):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    assert words and words[0] == "rx-oracle", f"{where}: a tour command must run rx-oracle"
    return env, tuple(words[1:])


def parse(text: str) -> list[Block]:
    """Every command of every console block, with its story number (0 before story 1)."""
    found: list[tuple[int, int, str, list[str]]] = []  # story, line, command, what follows
    story, inside = 0, False
    for n, raw in enumerate(text.splitlines(), 1):
        heading = re.match(r"^## (\d+)\. ", raw)
        if heading and not inside:
            story = int(heading.group(1))
        if raw.startswith("```"):
            inside = not inside and raw.strip() == "```console"
        elif inside and raw.startswith("$ "):
            found.append((story, n, raw[2:], []))
        elif inside:
            assert found and found[-1][1] < n, f"docs/tour.md:{n}: output before any command"
            found[-1][3].append(raw)
    blocks = []
    for story_, line, command, follows in found:
        env, argv = _command(command, f"docs/tour.md:{line}")
        exits = [int(m.group(1)) for m in (_EXIT.match(f.strip()) for f in follows) if m]
        excerpt = tuple(f for f in follows
                        if f.strip() and f.strip() != "..." and not _EXIT.match(f.strip()))
        blocks.append(Block(story_, line, env, argv, excerpt, exits[-1] if exits else 0))
    return blocks


def run(block: Block, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    """The command through the ``rx-oracle`` entry point (``conformance.cli.main``), in this
    process, from the checkout root: its exit status, and stdout followed by stderr.  A
    ``PYTHONPATH`` assignment puts those directories on ``sys.path``; other assignments go
    into the environment."""
    monkeypatch.chdir(ROOT)
    for name, value in block.env.items():
        if name == "PYTHONPATH":
            for entry in reversed(value.split(os.pathsep)):
                monkeypatch.syspath_prepend(str(ROOT / entry))
        else:
            monkeypatch.setenv(name, value)
    capsys.readouterr()
    code = cli.main(list(block.argv))
    out, err = capsys.readouterr()
    return code, out + err


def missing(excerpt: tuple[str, ...], output: str) -> str | None:
    """The first excerpt line not found (in order) in ``output``, or None."""
    lines = [_normal(line) for line in output.splitlines()]
    at = 0
    for want in excerpt:
        pattern = _pattern(want)
        while at < len(lines) and not pattern.search(lines[at]):
            at += 1
        if at == len(lines):
            return want
        at += 1
    return None


def _story_text(number: int) -> str:
    sections = re.split(r"(?m)^## ", TOUR.read_text())
    found = [s for s in sections if s.startswith(f"{number}. ")]
    assert len(found) == 1, f"docs/tour.md has no single story {number}"
    return found[0]


def check_story(number: int, rules: tuple[str, ...], capsys: pytest.CaptureFixture[str],
                monkeypatch: pytest.MonkeyPatch) -> None:
    """Run every command of the story and compare; check the rules it names."""
    blocks = [b for b in parse(TOUR.read_text()) if b.story == number]
    assert blocks, f"story {number} has no console block"
    for block in blocks:
        with monkeypatch.context() as patch:
            code, output = run(block, capsys, patch)
        where = f"docs/tour.md:{block.line}: rx-oracle {shlex.join(block.argv)}"
        assert code == block.exit, f"{where}: exit {code}, expected {block.exit}\n{output}"
        line = missing(block.excerpt, output)
        assert line is None, f"{where}: not in the output (in order): {line!r}\n{output}"
    text = _story_text(number)
    known = load_rules(ROOT)
    named = set(_RULE_ID.findall(text))
    assert not named - set(known), f"story {number} names unknown rules {named - set(known)}"
    assert not set(rules) - named, f"story {number} never names {set(rules) - named}"


Story = Callable[[int, tuple[str, ...]], None]


@pytest.fixture
def story(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Story:
    """``story(number, rules)`` runs and checks that story of the tour."""
    return lambda number, rules: check_story(number, rules, capsys, monkeypatch)


@pytest.mark.rule(*MLX5_RULES)
def test_story_1_mlx5_per_rq_buffer(story: Story) -> None:
    story(1, MLX5_RULES)


@pytest.mark.rule(*FEC_RULES)
def test_story_2_fec_xdp_tx_and_completion(story: Story) -> None:
    story(2, FEC_RULES)


@pytest.mark.rule(*ZCRX_RULES)
def test_story_3_zcrx_buffer_sizes(story: Story) -> None:
    story(3, ZCRX_RULES)


@pytest.mark.rule(*KFUNC_RULES)
def test_story_4_metadata_kfuncs_per_driver(story: Story) -> None:
    story(4, KFUNC_RULES)


@pytest.mark.rule(*CPUMAP_RULES)
def test_story_5_cpumap_skb_recycling(story: Story) -> None:
    story(5, CPUMAP_RULES)


def test_every_block_belongs_to_a_story_and_the_readme_links_the_tour() -> None:
    blocks = parse(TOUR.read_text())
    assert {b.story for b in blocks} == {1, 2, 3, 4, 5}
    assert "docs/tour.md" in (ROOT / "README.md").read_text()


def test_the_tour_inputs_are_what_make_examples_writes(tmp_path: Path) -> None:
    """The committed captures and JSON files are exactly the script's output."""
    sys.path.insert(0, str(EXAMPLES))
    try:
        import make_examples
    finally:
        sys.path.remove(str(EXAMPLES))
    written = make_examples.write(tmp_path)
    assert written
    for path in written:
        assert (EXAMPLES / path.name).read_bytes() == path.read_bytes(), path.name


def test_the_excerpt_matcher_keeps_order_and_wildcards() -> None:
    """The convention itself: in-order matching, ``...`` in a line, spaces not significant."""
    output = "kernel: 7.3.4\n  A-001   first  [x=1]\nnoise\n  B-002  second [y=2, z=3]\n"
    assert missing(("A-001 first [x=1]", "B-002 ... z=3]"), output) is None
    assert missing(("B-002 second", "A-001 first"), output) == "A-001 first"
    assert missing(("C-003",), output) == "C-003"
    blocks = parse("## 1. x\n```console\n$ X=1 rx-oracle spec 'A-*'\nout\n...\n[exit 2]\n```\n")
    assert blocks == [Block(story=1, line=3, env={"X": "1"}, argv=("spec", "A-*"),
                            excerpt=("out",), exit=2)]

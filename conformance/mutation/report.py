"""Mutation results on disk: JSON lines (one per mutant) and a markdown summary.

The JSON lines are the record (a later run, or a triage, reads them back); the summary
is what a person reads: one row per component (the mutated module's primary component,
see :mod:`conformance.mutation.scope`), then every survivor, since survivors are the
actionable part (each is an equivalent mutant or a gap in the suite).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TextIO

from conformance.mutation import blame
from conformance.mutation.equivalents import Equivalent
from conformance.mutation.reach import never_executed
from conformance.mutation.runner import CRASHED, KILLED, SURVIVED, TIMED_OUT, MutantResult

RESULTS = "results.jsonl"
#: Results as they arrive, while a run lasts (``--resume`` reads it after an interruption).
PARTIAL = "results.partial.jsonl"
SUMMARY = "summary.md"


def write_jsonl(path: Path, results: Iterable[MutantResult]) -> None:
    path.write_text("".join(json.dumps(r.to_json(), separators=(",", ":")) + "\n"
                            for r in results))


def append_jsonl(stream: TextIO, result: MutantResult) -> None:
    """One result appended to an open journal, flushed (a kill loses at most a line)."""
    stream.write(json.dumps(result.to_json(), separators=(",", ":")) + "\n")
    stream.flush()


def read_jsonl(path: Path) -> list[MutantResult]:
    return parse_jsonl(path.read_text())


def parse_jsonl(text: str) -> list[MutantResult]:
    return [MutantResult.from_json(json.loads(line))
            for line in text.splitlines() if line.strip()]


def summary(
    results: Sequence[MutantResult], *, header: str = "",
    executed: Mapping[str, frozenset[int]] | None = None,
    equivalent: Mapping[str, Equivalent] | None = None,
) -> str:
    """The markdown summary: a table per component, then the survivors.

    ``equivalent`` maps mutant ids to their entry in the registry of judged-equivalent
    mutants (:mod:`conformance.mutation.equivalents`): a surviving one is listed with its
    reason and left out of the *non-equivalent kill rate*; a killed one is flagged, since
    a kill disproves the judgement.

    With ``executed`` (the lines the ci run executes, per module: see
    :func:`conformance.mutation.reach.executed_lines`), a survivor on lines the suite
    never runs is marked so: that is missing reach, not a missing assertion.
    """
    results = list({r.mutant.id: r for r in reversed(results)}.values())[::-1]
    lines = [header, ""] if header else []
    lines += [
        "| component | mutants | killed | killed by crash | timed out | survived | kill rate "
        "| equivalent | non-equivalent kill rate | not reached | kill rate where reached "
        "| kills under own rule | CPU s per mutant |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    equivalent = equivalent or {}

    def unreached(r: MutantResult) -> bool:
        return r.mutant.id not in equivalent and (
            r.unreached or (r.outcome == SURVIVED and executed is not None
                            and never_executed(r.mutant, executed)))

    groups: dict[str, list[MutantResult]] = {}
    for r in results:
        groups.setdefault(r.components[0] if r.components else "?", []).append(r)
    for name in sorted(groups):
        lines.append(_row(name, groups[name], equivalent, unreached))
    lines.append(_row("**all**", list(results), equivalent, unreached))
    lines += [
        "",
        "*mutants*: distinct mutants (two operators making the same change share an id and "
        "count once).  *kill rate*: killed, killed by crash or timed out, over mutants.  "
        "*equivalent*: survivors judged equivalent in conformance/mutation/equivalents/.  "
        "*non-equivalent kill rate*: detected over mutants less those.  *not reached*: the "
        "other survivors that no property executes at any tree they were judged at (a "
        "question of reach, answered by `--coverage` and unreached.toml, not of "
        "assertions).  *kill rate where reached*: detected over mutants less both.  *kills "
        "under own rule*: of the clean kills (a rule failed) whose mutated function names a "
        "SPEC rule, the share where a failed rule is one it names or one SPEC.md names as its "
        "observer (*Outside view:* checked through; conformance/mutation/blame.py), judged "
        "again from the recorded failed rules on every summary.  *CPU s per mutant*: "
        "suite and target processes together; a sample's wall time on 2 free cores with "
        "-j 2 is about half its total.",
    ]
    disproved = [r for r in results if r.outcome != SURVIVED and r.mutant.id in equivalent]
    if disproved:
        lines += ["", "Registered as equivalent, yet detected (judge them again):", ""]
        lines += [f"- `{r.mutant.path}:{r.mutant.line}` `{r.mutant.description}`: {r.outcome}"
                  for r in disproved]
    survivors = [r for r in results if r.outcome == SURVIVED]
    if survivors:
        gaps = [r for r in survivors if r.mutant.id not in equivalent]
        unrun = sum(1 for r in gaps if unreached(r))
        lines += ["", f"Survivors ({len(survivors)}; {len(survivors) - len(gaps)} judged "
                      f"equivalent, {len(gaps)} not, of which {unrun} not reached):", ""]
        for r in sorted(survivors, key=lambda r: (r.mutant.path, r.mutant.line)):
            m = r.mutant
            reach = ""
            if r.unreached:
                reach = "; **no property executes it**"
            elif executed is not None and never_executed(m, executed):
                reach = "; **not executed by the ci run**"
            if len(r.kernels) > 1:
                reach += f"; judged at {', '.join(r.kernels)}"
            lines.append(f"- `{m.path}:{m.line}` {m.operator} in `{m.function or '<module>'}`: "
                         f"`{m.description}` (checked by {', '.join(r.components)}{reach})"
                         + (f": **equivalent**: {equivalent[m.id].reason}"
                            if m.id in equivalent else ""))
    return "\n".join(lines) + "\n"


def _row(name: str, group: Sequence[MutantResult], equivalent: Mapping[str, Equivalent],
         unreached: Callable[[MutantResult], bool]) -> str:
    count = {o: sum(1 for r in group if r.outcome == o)
             for o in (KILLED, CRASHED, TIMED_OUT, SURVIVED)}
    detected = len(group) - count[SURVIVED]
    rate = f"{100 * detected / len(group):.0f}%" if group else "n/a"
    same = sum(1 for r in group if r.outcome == SURVIVED and r.mutant.id in equivalent)
    judged_total = len(group) - same
    net = f"{100 * detected / judged_total:.0f}%" if judged_total else "n/a"
    unrun = sum(1 for r in group if unreached(r))
    reached_total = judged_total - unrun
    reached = f"{100 * detected / reached_total:.0f}%" if reached_total else "n/a"
    verdicts = [blame.under_own_rule(r.mutant.rules, r.failed_rules)
                for r in group if r.outcome == KILLED]
    judged = [v for v in verdicts if v is not None]
    own = (f"{100 * sum(judged) / len(judged):.0f}% "
           f"({len(judged)})" if judged else "n/a")
    cpu = f"{sum(r.cpu_seconds for r in group) / len(group):.1f}" if group else "n/a"
    return (f"| {name} | {len(group)} | {count[KILLED]} | {count[CRASHED]} | "
            f"{count[TIMED_OUT]} | {count[SURVIVED]} | {rate} | {same} | {net} | {unrun} | "
            f"{reached} | {own} | {cpu} |")

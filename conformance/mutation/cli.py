"""``rx-oracle mutate``: measure the suite's power as a kill rate over mutants of reference/.

Examples::

    rx-oracle mutate                          # the default seeded sample, 2 workers
    rx-oracle mutate --sample 40 --seed 7 --component rss
    rx-oracle mutate --module reference/rss.py --all --list
    rx-oracle mutate --coverage               # reach: branch coverage of the ci run, and
                                              # which properties run each line (selection)
    rx-oracle mutate --again mutation-out     # the survivors of an earlier run, once more

Results go to ``--out`` (default ``mutation-out/``): ``results.jsonl`` (one mutant per
line) and ``summary.md`` (per component: mutants, killed, killed by crash, timed out,
survived, kill rate, kills under a rule of the mutated function; then the survivors).
After ``--coverage`` into the same ``--out``, the summary marks each survivor the ci
run never executes, and each mutant is run against only the properties that execute its
line, at only the kernels where some property does (:mod:`conformance.mutation.selection`;
``--every-property`` turns that off).  A user mistake (an unknown component or module, a
non-positive number) is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import conformance
from conformance.mutation.mutator import OPERATORS, Mutant

if TYPE_CHECKING:
    from conformance.mutation.runner import MutantResult

EXIT_OK, EXIT_ERROR = 0, 2
ROOT = Path(conformance.__file__).resolve().parent.parent
PROPERTIES_DIR = ROOT / "conformance" / "properties"

#: A mutant costs 8.4 CPU seconds on average (suite and target processes, stop 25's
#: measurement in MUTANTS.md: the properties grew), so this sample takes about 7 minutes
#: on 2 free cores with -j 2.
DEFAULT_SAMPLE = 100


class UsageError(Exception):
    """A mistake on the command line: reported in one line, exit status 2."""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``mutate`` to the ``rx-oracle`` sub-commands."""
    m: argparse.ArgumentParser = subparsers.add_parser(
        "mutate", help="mutation testing: the suite's kill rate over mutants of reference/",
        description="Run the conformance properties against mutants of reference/ (each "
                    "served in its own process) and report the kill rate per component.")
    m.add_argument("--sample", type=int, default=DEFAULT_SAMPLE, metavar="N",
                   help=f"run a seeded sample of N mutants spread over components "
                        f"(default {DEFAULT_SAMPLE})")
    m.add_argument("--all", action="store_true", help="run every mutant of the selection")
    m.add_argument("--seed", type=int, default=0, metavar="S", help="sample seed (default 0)")
    m.add_argument("--component", action="append", default=[], metavar="NAME",
                   help="only modules this component's properties check (repeatable)")
    m.add_argument("--module", action="append", default=[], metavar="PATH",
                   help="only this module, e.g. reference/rss.py (repeatable)")
    m.add_argument("--operator", action="append", default=[], choices=OPERATORS,
                   help="only this mutation operator (repeatable)")
    m.add_argument("-j", "--jobs", type=int, default=2, metavar="N",
                   help="mutants run in parallel (default 2)")
    m.add_argument("--out", type=Path, default=Path("mutation-out"), metavar="DIR",
                   help="where results.jsonl and summary.md go (default mutation-out)")
    m.add_argument("--mutant-timeout", type=float, default=180.0, metavar="SECONDS",
                   help="wall-clock limit per run of the suite against a mutant, one run per "
                        "kernel it is judged at (default 180)")
    m.add_argument("--request-timeout", type=float, default=5.0, metavar="SECONDS",
                   help="limit per request to a mutant target (default 5)")
    m.add_argument("--shrink", action="store_true",
                   help="let hypothesis shrink failures (slower; sharper rule attribution)")
    m.add_argument("--first-failure", action="store_true",
                   help="stop each suite run at its first failing property (a full run in "
                        "about 4/5 of the time; kills under own rule then count only that "
                        "property's rules)")
    m.add_argument("--older-trees", choices=("survivors", "unexecuted"), default="survivors",
                   help="which survivors of the default kernel are judged again at the older "
                        "trees: every one not judged equivalent (default), or only those "
                        "whose lines the default kernel's ci run never executes (cheaper: "
                        "the full run; misses a difference only an older tree's values show)")
    m.add_argument("--every-property", action="store_true",
                   help="run every property of the checking components against each mutant "
                        "even when --out holds a fresh selection.json from --coverage")
    m.add_argument("--again", type=Path, metavar="DIR",
                   help="run the current mutants matching DIR/results.jsonl's survivors "
                        "(by module, function, operator and text: line numbers move)")
    m.add_argument("--resume", action="store_true",
                   help="keep the results DIR/results.partial.jsonl already holds (a run "
                        "stopped part-way, on the same source) and run only the rest")
    m.add_argument("--list", action="store_true", help="list the selected mutants, run nothing")
    m.add_argument("--coverage", action="store_true",
                   help="instead: branch coverage of reference/ by the ci suite, per module; "
                        "and which properties execute each line at each supported kernel "
                        "(selection.json: later runs into the same --out use it)")
    m.add_argument("--rejudge", action="store_true",
                   help="instead: rewrite --out's summary.md from its results.jsonl with the "
                        "registry, conformance/mutation/equivalents/ (runs no mutant)")
    return m


def main(args: argparse.Namespace) -> int:
    try:
        return _main(args)
    except UsageError as exc:
        print(f"rx-oracle mutate: {exc}", file=sys.stderr)
        return EXIT_ERROR


def _main(args: argparse.Namespace) -> int:
    from conformance.mutation import reach

    _check_numbers(args)
    if args.coverage:
        return reach.run(args.out)
    if args.rejudge:
        return _rejudge(args.out)
    mutants, checked_by = _select(args)
    if args.list:
        for m in mutants:
            print(f"{m.id}  {m.function or '<module>'}  {m.description}  "
                  f"[{', '.join(checked_by[m.path])}]")
        return EXIT_OK
    return _run(args, mutants, checked_by)


def _check_numbers(args: argparse.Namespace) -> None:
    if args.sample <= 0:
        raise UsageError(f"--sample must be a positive number, not {args.sample}")
    if args.jobs <= 0:
        raise UsageError(f"-j must be a positive number, not {args.jobs}")
    if args.mutant_timeout <= 0 or args.request_timeout <= 0:
        raise UsageError("timeouts must be positive")


def _select(args: argparse.Namespace) -> tuple[list[Mutant], dict[str, tuple[str, ...]]]:
    """The mutants to run (valid ones only) and the components checking each module."""
    from conformance.mutation import sampling, scope

    modules = scope.mutated_modules(ROOT)
    known = sorted(p.stem.removeprefix("test_") for p in PROPERTIES_DIR.glob("test_*.py"))
    unknown = sorted(set(args.component) - set(known))
    if unknown:
        raise UsageError(f"unknown component {', '.join(unknown)}; known: {', '.join(known)}")
    if args.module:
        wanted = [_module_path(text, modules) for text in args.module]
        modules = [m for m in modules if m in wanted]
    if args.component:
        modules = [m for m in modules if set(scope.components_for(m)) & set(args.component)]
    checked_by = {m: scope.components_for(m) for m in modules}
    unmapped = [m for m, c in checked_by.items() if not c]
    if unmapped:  # a new module nobody mapped: say so rather than skip it silently
        raise UsageError(f"no component is mapped to {unmapped[0]} "
                         "(add it to conformance/mutation/scope.py TABLE)")
    pool = sampling.candidates(ROOT, modules)
    if args.again is not None:
        sources: dict[str, str] = {}
        wanted_keys = _survivor_keys(args.again, sources)
        pool = [m for m in pool if _stable_key(m, sources) in wanted_keys]
        args.all = True
    if args.operator:
        pool = [m for m in pool if m.operator in args.operator]
    if not pool:
        raise UsageError("the selection has no mutants")
    chosen = (sampling.every_valid(ROOT, pool) if args.all
              else sampling.sample(ROOT, pool, args.sample, args.seed))
    return chosen, checked_by


def _stable_key(m: Mutant, sources: dict[str, str]) -> tuple[object, ...]:
    """What names a mutant across edits of its module (its line number moves): the
    registry's key (:func:`~conformance.mutation.equivalents.key_of`) and its column."""
    from conformance.mutation import equivalents

    if m.path not in sources:
        sources[m.path] = (ROOT / m.path).read_text()
    return (*equivalents.key_of(m, sources[m.path]), m.col)


def _survivor_keys(out: Path, sources: dict[str, str]) -> set[tuple[object, ...]]:
    from conformance.mutation import report

    try:
        results = report.read_jsonl(out / report.RESULTS)
    except OSError as exc:
        raise UsageError(f"--again {out}: no results to read ({exc.strerror})") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"--again {out}: {report.RESULTS} is not a results file "
                         f"({type(exc).__name__}: {exc})") from None
    return {_stable_key(r.mutant, sources) for r in results if not r.detected}


def _module_path(text: str, modules: list[str]) -> str:
    path = Path(text)
    if path.is_absolute():
        try:
            path = path.resolve().relative_to(ROOT)
        except ValueError:
            raise UsageError(f"--module {text}: not under {ROOT}") from None
    rel = path.as_posix().removeprefix("./")
    if rel not in modules:
        raise UsageError(f"--module {text}: not a mutated module of reference/ "
                         f"(e.g. {modules[0]})")
    return rel


def _run(args: argparse.Namespace, mutants: list[Mutant],
         checked_by: dict[str, tuple[str, ...]]) -> int:
    from conformance.mutation import reach, report, runner
    from conformance.mutation import selection as selection_mod
    from conformance.mutation.selection import SELECTION

    limits = runner.Limits(mutant=args.mutant_timeout, request=args.request_timeout,
                           shrink=args.shrink,
                           first_failure=args.first_failure)
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out {args.out}: {exc.strerror}") from None
    journal = args.out / report.PARTIAL
    kept = _resumed(journal, mutants) if args.resume else []
    done_ids = {r.mutant.id for r in kept}
    todo = [m for m in mutants if m.id not in done_ids]
    if kept:
        print(f"resuming: {len(kept)} results kept, {len(todo)} mutants to run",
              file=sys.stderr, flush=True)
    done = len(kept)
    executed = reach.fresh_executed_lines(args.out, ROOT)
    if args.older_trees == "survivors":
        executed = None
    older = ("survivors on lines the default kernel's ci run never executes "
             f"({args.out / reach.COVERAGE})" if executed is not None
             else "every survivor not judged equivalent")
    print(f"judged again at the older supported trees: {older}", file=sys.stderr, flush=True)
    chosen = None if args.every_property else selection_mod.load(args.out, ROOT)
    runs = (f"only the properties that execute the mutated line ({args.out / SELECTION})"
            if chosen is not None else "every property of the checking components")
    print(f"each run: {runs}", file=sys.stderr, flush=True)
    start = time.monotonic()

    with journal.open("a" if args.resume else "w") as log:

        def progress(result: runner.MutantResult) -> None:
            nonlocal done
            done += 1
            report.append_jsonl(log, result)  # a long run stopped part-way keeps its work
            m = result.mutant
            print(f"[{done}/{len(mutants)}] {result.outcome:<15} {m.path}:{m.line} "
                  f"{m.operator} {m.description} ({result.seconds:.1f}s)",
                  file=sys.stderr, flush=True)

        fresh = runner.run_all(((m, checked_by[m.path]) for m in todo), root=ROOT,
                               jobs=args.jobs, limits=limits, on_result=progress,
                               executed=executed, selection=chosen,
                               older_trees=args.older_trees)
    wall = time.monotonic() - start
    order = {m.id: i for i, m in enumerate(mutants)}
    results = sorted([*kept, *fresh], key=lambda r: order[r.mutant.id])
    report.write_jsonl(args.out / report.RESULTS, results)
    journal.unlink()
    selection = (f"the survivors of {args.again}" if args.again is not None
                 else "all" if args.all else f"sample {args.sample}, seed {args.seed}")
    if args.first_failure:
        selection += "; each run up to its first failing property"
    selection += f"; at the older trees: {older}; each run: {runs}"
    cpu = sum(r.cpu_seconds for r in results)
    header = (f"{len(results)} mutants ({selection}), -j {args.jobs}: wall time {wall:.0f} s, "
              f"CPU time {cpu:.0f} s")
    (args.out / "header.txt").write_text(header + "\n")
    return _write_summary(args.out, results, header)


def _resumed(journal: Path, mutants: list[Mutant]) -> list[MutantResult]:
    """The journal's results for mutants of this selection (a result per mutant, the last)."""
    from conformance.mutation import report

    if not journal.exists():
        raise UsageError(f"--resume: {journal} does not exist (nothing to resume)")
    text = journal.read_text()
    if not text.endswith("\n"):  # the run was killed while writing its last line
        text = text[:text.rfind("\n") + 1]
    try:
        earlier = report.parse_jsonl(text)
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"--resume: {journal} is not a results file "
                         f"({type(exc).__name__}: {exc})") from None
    wanted = {m.id for m in mutants}
    return list({r.mutant.id: r for r in earlier if r.mutant.id in wanted}.values())


def _rejudge(out: Path) -> int:
    from conformance.mutation import report

    try:
        results = report.read_jsonl(out / report.RESULTS)
    except OSError as exc:
        raise UsageError(f"--out {out}: no results to judge ({exc.strerror})") from None
    header_file = out / "header.txt"
    header = header_file.read_text().strip() if header_file.exists() else ""
    return _write_summary(out, results, header)


def _write_summary(out: Path, results: list[MutantResult], header: str) -> int:
    """summary.md from ``results``, with reach and the equivalence judgements if known."""
    from conformance.mutation import equivalents, reach, report

    executed = reach.fresh_executed_lines(out, ROOT)  # an earlier --coverage run's
    try:
        judged = equivalents.judge((r.mutant for r in results), ROOT)
    except equivalents.RegistryError as exc:
        raise UsageError(str(exc)) from None
    text = report.summary(results, header=header, executed=executed, equivalent=judged)
    (out / report.SUMMARY).write_text(text)
    print(text, end="")
    return EXIT_OK

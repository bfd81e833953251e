"""The kernel matrix: one live target kind on several Debian kernels, one rule × kernel table.

``rx-oracle conformance --target 'veth@6.12.117,7.3.4' --driver veth`` runs the suite once
per version, each run a child ``rx-oracle conformance --target veth@VERSION`` of its own (a
guest boots once per child; pytest and hypothesis keep per-process state, so one process per
run is what keeps the runs independent).  Each child writes its JSON report into a private
temporary directory; this module reads them back, prints one table with a column per kernel
and, with ``--report``, writes one matrix report holding every child's report unchanged.

The matrix's exit status is the worst of its runs': 1 when a rule fails on any kernel, else
2 when any kernel could not be checked (a column with no verdicts is not a pass), else 0.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import attrs

from conformance import plugin
from conformance.usage import UsageError
from reference import __version__

#: The exit statuses of ``rx-oracle conformance`` (README, "Exit status"), a child's and
#: the matrix's.
EXIT_OK, EXIT_NONCONFORMANT, EXIT_ERROR = 0, 1, 2

#: A child run is a whole guest run (download, boot, every property); its own waits have
#: deadlines, and this one bounds the child as a whole in case they do not.
RUN_DEADLINE_S = 4 * 3600

#: How long a stopped child has to tear its guest down before it is killed (the next run
#: sweeps what a killed one leaves).
STOP_GRACE_S = 60

#: Options a matrix cannot pass to its children: each would name one file for several runs.
_ONE_FILE_OPTIONS = (("junitxml", "--junitxml"), ("save_failures", "--save-failures"))


@attrs.frozen
class Column:
    """One kernel of the matrix: the child's target, exit status, report and last error."""

    target: str
    exit: int
    report: dict[str, Any] | None
    error: str


def split(spec: str) -> list[str] | None:
    """``KIND@V1,V2,…`` as ``[KIND@V1, KIND@V2, …]``; None for any other ``--target``
    (``iface:NAME,peer=PEER`` has commas but no ``@``).  A version list with an empty or
    repeated entry is a :class:`UsageError`; each version is checked by the child's own
    parse of ``KIND@VERSION``, and here too so that a typo fails before the first boot."""
    from conformance.targets.base import TargetSpecError, parse_guest_spec

    kind, at, versions = spec.partition("@")
    if not at or "," not in versions or ":" in kind:
        return None
    listed = [v.strip() for v in versions.split(",")]
    if "" in listed:
        raise UsageError(f"--target {spec!r}: an empty version in the list")
    repeated = sorted({v for v in listed if listed.count(v) > 1})
    if repeated:
        raise UsageError(f"--target {spec!r}: {', '.join(repeated)} listed twice")
    targets = [f"{kind}@{v}" for v in listed]
    for target in targets:
        try:
            parse_guest_spec(target)
        except TargetSpecError as exc:
            raise UsageError(str(exc)) from None
    return targets


def child_argv(args: argparse.Namespace, target: str, report: Path) -> list[str]:
    """The ``rx-oracle conformance`` command line of one column: the matrix's own options,
    with one target and a report of the matrix's."""
    argv = [sys.executable, "-m", "conformance.cli", "conformance", "--target", target,
            "--timeout", str(args.timeout), "--profile", args.profile, "--report", str(report)]
    for driver in args.driver:
        argv += ["--driver", driver]
    for glob in args.rules:
        argv += ["--rules", glob]
    if args.kernel:
        argv += ["--kernel", args.kernel]
    if args.numprocesses:
        argv += ["-n", str(args.numprocesses)]
    if args.database:
        argv += ["--database", str(args.database)]
    if args.verbose:
        argv.append("-v")
    return argv


def run_column(args: argparse.Namespace, target: str, workdir: Path) -> Column:
    """Run one kernel's child; its stdout (its own table) is kept back, its stderr lines are
    passed on prefixed with the target so that each note and error says which kernel."""
    report = workdir / f"{target.replace('/', '_')}.json"
    print(f"rx-oracle: matrix: running {target}", file=sys.stderr, flush=True)
    child = subprocess.Popen(child_argv(args, target, report), stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             errors="replace")
    try:
        _, stderr = child.communicate(timeout=RUN_DEADLINE_S)
    except subprocess.TimeoutExpired:
        _stop(child)
        return Column(target, EXIT_ERROR, None,
                      f"no result within {RUN_DEADLINE_S} s; the run was stopped")
    except BaseException:
        # Interrupted (SIGINT reaches the child too; SIGTERM does not): let the child tear
        # its guest down before this process goes, rather than killing it outright.
        _stop(child)
        raise
    lines = [line for line in stderr.splitlines() if line.strip()]
    for line in lines:
        print(f"[{target}] {line}", file=sys.stderr)
    errors = [line.removeprefix("rx-oracle: ") for line in lines
              if line.startswith("rx-oracle: ") and not line.startswith("rx-oracle: note:")]
    loaded: dict[str, Any] | None = None
    if report.is_file():
        loaded = json.loads(report.read_text())
    error = errors[-1] if errors else ""
    if child.returncode not in (EXIT_OK, EXIT_NONCONFORMANT, EXIT_ERROR):
        error = error or f"the run ended with status {child.returncode}"
        return Column(target, EXIT_ERROR, loaded, error)
    return Column(target, child.returncode, loaded, error)


def _stop(child: subprocess.Popen[str]) -> None:
    """SIGTERM, then SIGKILL after a grace a guest's teardown fits in; never unbounded."""
    if child.poll() is None:
        child.terminate()
        try:
            child.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(timeout=STOP_GRACE_S)


def matrix_exit(columns: list[Column]) -> int:
    """1 if a rule failed on some kernel; else 2 if some kernel could not be checked."""
    if any(c.exit == EXIT_NONCONFORMANT for c in columns):
        return EXIT_NONCONFORMANT
    if any(c.exit != EXIT_OK or c.report is None for c in columns):
        return EXIT_ERROR
    return EXIT_OK


def verdict_rows(columns: list[Column]) -> list[tuple[str, list[str]]]:
    """One row per rule any column judged: its verdict per column ("" where that kernel's
    run has no such rule, "-" where the run produced no report)."""
    per_column: list[dict[str, str] | None] = []
    for c in columns:
        if c.report is None:
            per_column.append(None)
        else:
            per_column.append({r["rule"]: r["verdict"] for r in c.report["rules"]})
    rules = sorted({rule for verdicts in per_column if verdicts for rule in verdicts})
    return [(rule, [("-" if v is None else v.get(rule, "")) for v in per_column])
            for rule in rules]


def print_table(columns: list[Column], args: argparse.Namespace) -> None:
    from rich.console import Console
    from rich.table import Table

    style = plugin.STYLE
    kind = columns[0].target.partition("@")[0]
    table = Table(title=f"rx-oracle {__version__} · target {kind} on {len(columns)} kernels"
                        f" · profile {args.profile}")
    table.add_column("rule")
    for c in columns:
        kernel = (c.report or {}).get("kernel") or c.target.partition("@")[2]
        table.add_column(kernel)
    for rule, cells in verdict_rows(columns):
        table.add_row(rule, *[f"[{style[v]}]{v}[/]" if v in style else v for v in cells])
    console = Console(stderr=False)
    console.print(table)
    for c in columns:
        if c.report is None:
            console.print(f"{c.target}: not checked ({c.error or 'no report'})")
        else:
            counts = [f"{sum(1 for r in c.report['rules'] if r['verdict'] == k)} {k}"
                      for k in (plugin.PASS, plugin.FAIL, plugin.NOT_CHECKED,
                                plugin.NOT_APPLICABLE)]
            console.print(f"{c.target}: {', '.join(counts)}")


def matrix_report(columns: list[Column], args: argparse.Namespace) -> dict[str, Any]:
    """The ``rx-oracle-matrix`` report: every child's ``rx-oracle-report`` as it wrote it."""
    return {
        "format": "rx-oracle-matrix",
        "version": 1,
        "oracle_version": __version__,
        "profile": args.profile,
        "runs": [{"target": c.target, "exit": c.exit, "error": c.error, "report": c.report}
                 for c in columns],
    }


def run(args: argparse.Namespace, targets: list[str]) -> int:
    """Run every column in turn (guests are booted one at a time: each takes the cores it
    can get), then print the table and write the matrix report."""
    from conformance import usage

    for attr, option in _ONE_FILE_OPTIONS:
        if getattr(args, attr, None):
            raise UsageError(f"{option}: not with a kernel matrix (--target {args.target}); "
                             "run one kernel for it")
    usage.check_timeout(args.timeout)
    usage.check_kernel(args.kernel)
    usage.check_numprocesses(args.numprocesses)
    usage.check_output_file("--report", args.report)
    with tempfile.TemporaryDirectory(prefix="rxo-matrix-") as tmp:
        columns = [run_column(args, target, Path(tmp)) for target in targets]
    print_table(columns, args)
    if args.report:
        from conformance import outputs

        outputs.write_text("--report", args.report,
                           json.dumps(matrix_report(columns, args), indent=2) + "\n")
    return matrix_exit(columns)

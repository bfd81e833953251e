"""The ``rx-oracle`` command line.

``rx-oracle conformance`` runs the conformance properties (``conformance/properties``)
against a target and prints one verdict per SPEC rule.  Exit codes:

- 0: every checked rule passed;
- 1: some rule failed: the target disagreed with the reference, or misbehaved on an
  input (a *target fault*: it raised, crashed, hung, or answered garbage on that input);
- 2: no verdict: a usage error (one line on stderr naming the option, the value and what
  is wrong), an output that cannot be written, a target that cannot run at all (cannot
  be loaded or started, names a component that does not exist, or failed on every input
  it was given), a run in which no rule could be checked, or an interrupted run (SIGINT
  or SIGTERM).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from conformance import plugin, spec_cmd
from conformance import serve as serve_cli
from conformance.mutation import cli as mutate_cli
from conformance.usage import (
    UsageError,
    check_kernel,
    check_output_file,
    check_target,
    check_timeout,
)
from reference import __version__

EXIT_OK, EXIT_NONCONFORMANT, EXIT_ERROR = 0, 1, 2
#: The line a run in which every rule was not applicable ends with (exit status 2); the
#: mutation runner (:mod:`conformance.mutation.runner`) looks for it.
NO_RULE_CHECKED = "no rule was checked"
#: The largest ``@FILE`` read for a JSON option: far above any real config or scenario,
#: and a bound on what ``@/dev/zero`` costs.
MAX_JSON_FILE = 16 * 1024 * 1024
PROPERTIES_DIR = Path(__file__).resolve().parent / "properties"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rx-oracle",
        description="Reference model and conformance suite for Linux NIC driver RX semantics.",
    )
    p.add_argument("--version", action="version", version=f"rx-oracle {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    c = sub.add_parser("conformance", help="run the conformance suite against a target")
    _suite_options(c)
    c.add_argument("--driver", action="append", default=[], metavar="NAME",
                   help="check only this driver's or component's properties: "
                        f"{', '.join(_components())} (repeatable)")

    from conformance.fixtures import cli as fixtures_cli

    fixtures_cli.add_parser(sub, suite_options=_suite_options)

    e = sub.add_parser("explain", help="narrate the reference's decisions for frames in a pcap")
    e.add_argument("pcap", type=Path, nargs="?", default=None,
                   help="a pcap or pcapng file of Ethernet frames (omit for event-driven "
                        "components such as cpumap)")
    e.add_argument("--driver", default="xdp", metavar="NAME",
                   help="the driver or component whose path to narrate (default: xdp)")
    e.add_argument("--config", default="{}", metavar="JSON",
                   help="the component's config as JSON text, or @FILE")
    e.add_argument("--program", default=None, metavar="JSON",
                   help="an XDP op list as JSON text, or @FILE (default: return XDP_PASS)")
    e.add_argument("--events", default=None, metavar="JSON",
                   help="the scenario's events as JSON text, or @FILE (see PROTOCOL.md)")
    e.add_argument("--kernel", default=None, metavar="VERSION",
                   help="the kernel version to narrate for (default: the newest, 7.3)")
    e.add_argument("--html", type=Path, default=None, metavar="OUT.html",
                   help="also write one self-contained page: the decisions as a timeline "
                        "linked to their rules, and diagrams of the state")
    e.add_argument("--ring", type=Path, default=None, metavar="FILE",
                   help="with --driver mlx5: a captured completion ring (text hexdump or "
                        "JSON, see README) replayed through the driver alone")

    r = sub.add_parser("replay", help="run one scenario (JSON) on a target and compare")
    r.add_argument("scenario", help="the scenario as JSON text, or @FILE")
    r.add_argument("--target", default="reference")
    r.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS")
    r.add_argument("--kernel", default=None, metavar="VERSION",
                   help="the kernel version to predict for (default: the scenario's own, "
                        "else the target's running kernel, else the newest)")
    serve_cli.add_parser(sub)
    mutate_cli.add_parser(sub)
    spec_cmd.add_parser(sub)
    from conformance.live import guest_kernel

    guest_kernel.add_parser(sub)
    return p


def _suite_options(c: argparse.ArgumentParser) -> None:
    """Options shared by ``conformance`` and ``fixtures verify``."""
    c.add_argument("--target", default="reference",
                   help="implementation under test: reference (default), "
                        "python:MODULE:OBJECT, exec:COMMAND, fixtures:DIR, "
                        "veth, tun, iface:NAME[,peer=PEER], zcrx-live (live kernel, root); "
                        "veth@VERSION (also tun, zcrx-live) in a guest on Debian's kernel; "
                        "veth@V1,V2,... one run per kernel, one rule x kernel table")
    c.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                   help="per-request timeout for exec targets (default 10)")
    c.add_argument("--kernel", default=None, metavar="VERSION",
                   help="the kernel version the reference predicts for: 6.12, 6.18, 7.3 "
                        "(a bare series means the tree SPEC.md was read from) or a full "
                        "version such as 6.12.57 or 6.18.44-cloud-amd64; default: the "
                        "target's running kernel for live targets, else the newest (7.3)")
    c.add_argument("--rules", action="append", default=[], metavar="GLOB",
                   help="check only rules matching GLOB, e.g. 'RSS-*' (repeatable)")
    c.add_argument("--profile", default="ci", choices=("ci", "dev", "deep"),
                   help="hypothesis profile: ci (derandomized, default), dev, deep")
    c.add_argument("--report", type=Path, metavar="OUT.json",
                   help="write the per-rule report as JSON")
    c.add_argument("--junitxml", type=Path, metavar="OUT.xml", help="write JUnit XML")
    c.add_argument("--save-failures", type=Path, metavar="DIR",
                   help="write each failure as a fixture into DIR "
                        "(replay: rx-oracle fixtures verify DIR)")
    c.add_argument("-n", "--numprocesses", default=None, metavar="N",
                   help="run in N processes via pytest-xdist ('auto' for one per core)")
    c.add_argument("--database", type=Path, metavar="DIR",
                   help="shared hypothesis example database for the dev and deep profiles "
                        "(several runs, machines or HypoFuzz processes pooling examples)")
    c.add_argument("-v", "--verbose", action="store_true", help="show each test as it runs")


def _components() -> list[str]:
    return sorted(p.stem.removeprefix("test_") for p in PROPERTIES_DIR.glob("test_*.py"))


class Terminated(KeyboardInterrupt):
    """SIGTERM, taken down the same path as Ctrl-C so that live targets are torn down.

    pytest turns any KeyboardInterrupt into an interrupted run; ``_signalled`` keeps
    which signal it was for the last line."""


_signalled: list[str] = []


def _on_sigterm(signum: int, frame: object) -> None:
    _signalled.append("SIGTERM")
    raise Terminated()


def interrupted_line() -> str:
    """The last line of a run that a signal ended."""
    return "rx-oracle: terminated (SIGTERM)" if _signalled else "rx-oracle: interrupted"


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    _signalled.clear()
    # ``serve`` is a target's process: whoever started it decides how it ends.  Only the
    # main thread may set a handler (a caller may run main() in another).
    handle = args.command != "serve" and threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _on_sigterm) if handle else None
    try:
        return _dispatch(args)
    except UsageError as exc:
        print(f"rx-oracle: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print(interrupted_line(), file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        # The reader went away (``| head``): not an error of ours, and no traceback.
        # Point stdout at /dev/null so the interpreter's final flush cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    finally:
        if handle:
            signal.signal(signal.SIGTERM, previous)


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "conformance":
        return conformance(args)
    if args.command == "replay":
        return replay(args)
    if args.command == "explain":
        return explain(args)
    if args.command == "serve":
        return serve_cli.main(args)
    if args.command == "mutate":
        return mutate_cli.main(args)
    if args.command == "spec":
        return spec_cmd.main(args)
    if args.command == "kernels":
        from conformance.live import guest_kernel

        return guest_kernel.main(args)
    if args.command == "fixtures":
        from conformance.fixtures import cli as fixtures_cli

        return fixtures_cli.main(args)
    return EXIT_ERROR  # pragma: no cover - argparse enforces the sub-command


def conformance(args: argparse.Namespace, *, properties: Sequence[str] = (),
                extra: Sequence[str] = (), probe_target: bool = True) -> int:
    """Run the suite: the ``--driver`` components' properties, or (for the mutation runner,
    :mod:`conformance.mutation.suite`) only ``properties``, node ids such as
    ``test_rss.py::test_hash``; ``extra`` goes to pytest as it is.  ``probe_target=False``
    skips starting the target once before the run to see that it can run at all (the
    mutation runner's exit status is the same either way: a target that cannot start is
    unavailable inside the run too)."""
    unknown = sorted(set(args.driver) - set(_components()))
    if unknown:
        raise UsageError(f"--driver {', '.join(unknown)}: no such driver or component; "
                         f"known: {', '.join(_components())}")
    from conformance import matrix

    columns = None if properties else matrix.split(args.target)
    if columns is not None:  # KIND@V1,V2,...: one child run per kernel, one table
        return matrix.run(args, columns)
    paths = [str(PROPERTIES_DIR / f"test_{d}.py") for d in args.driver] or [str(PROPERTIES_DIR)]
    if properties:
        paths = [str(PROPERTIES_DIR / p) for p in properties]
    return run_suite(args, paths, extra, probe_target=probe_target)


def run_suite(args: argparse.Namespace, paths: list[str], extra: Sequence[str] = (),
              *, probe_target: bool = True) -> int:
    """Run pytest on ``paths`` with the plugin; print the per-rule table; map exit codes."""
    from conformance import usage

    usage.check_suite_options(args, probe_target=probe_target)
    pytest_args = [
        *paths,
        *extra,
        "--rootdir", str(PROPERTIES_DIR),
        "-o", "addopts=",
        "-p", "no:cacheprovider",
        f"--hypothesis-profile={args.profile}",
        "-v" if args.verbose else "-q",
        "--no-header",
        "-W", "ignore::pytest.PytestAssertRewriteWarning",
        "--rx-target", args.target,
        "--rx-timeout", str(args.timeout),
        *(["--rx-kernel", args.kernel] if args.kernel else []),
        "-p", "no:benchmark",  # it would leave a .benchmarks directory in the user's cwd
    ]
    for glob in args.rules:
        pytest_args += ["--rx-rules", glob]
    # pytest writes its XML into a private directory; the user's path gets it through
    # :mod:`conformance.outputs` (a device is written through, a write error is one line).
    scratch = Path(tempfile.mkdtemp(prefix="rx-oracle-"))
    try:
        return _run_suite(args, paths, extra, pytest_args, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run_suite(args: argparse.Namespace, paths: list[str], extra: Sequence[str],
               pytest_args: list[str], scratch: Path) -> int:
    from conformance import outputs

    junit = scratch / "junit.xml"
    if args.junitxml:
        pytest_args += ["--junitxml", str(junit)]
    if args.save_failures:
        pytest_args += ["--rx-save-failures", str(args.save_failures)]
    if args.numprocesses:
        pytest_args += ["-n", str(args.numprocesses)]
    if args.database:
        from conformance.profiles import DATABASE_ENV

        os.environ[DATABASE_ENV] = str(args.database.resolve())  # xdist workers inherit it

    capture = _Capture()
    plugins: list[object] = [capture]
    interactive = sys.stdout.isatty() and not args.verbose and not args.numprocesses
    if interactive:
        # A live progress bar replaces pytest's dots; failures are printed below the table.
        pytest_args = [a for a in pytest_args if a not in ("-q", "--no-header")]
        pytest_args += ["-p", "no:terminal"]
        plugins.append(_Progress())
    code = pytest.main(pytest_args, plugins=plugins)
    verdicts = capture.verdicts
    if args.junitxml and junit.exists():  # whatever the verdict, as pytest would have
        outputs.write_bytes("--junitxml", args.junitxml, junit.read_bytes())
    if capture.output_error:
        print(f"rx-oracle: {capture.output_error}", file=sys.stderr)
        return EXIT_ERROR
    if capture.unavailable:
        print(f"rx-oracle: target error: {capture.unavailable}", file=sys.stderr)
        return EXIT_ERROR
    if code == pytest.ExitCode.INTERRUPTED:
        print(interrupted_line(), file=sys.stderr)
        return EXIT_ERROR
    if code in (pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.INTERNAL_ERROR):
        print(f"rx-oracle: the suite could not run (pytest exit {int(code)})", file=sys.stderr)
        return EXIT_ERROR
    if code == pytest.ExitCode.NO_TESTS_COLLECTED or not verdicts:
        print("rx-oracle: no conformance property matched the selection", file=sys.stderr)
        return EXIT_ERROR
    replaying = "--rx-fixtures" in extra  # a fixture set: every fault stays a verdict
    if not replaying and capture.answered == 0 and (capture.faulted or capture.target_errors):
        first = (capture.faulted or capture.target_errors)[0].partition(": ")[2]
        print(f"rx-oracle: target error: {args.target} failed on every input it was given "
              f"({first.splitlines()[0]})", file=sys.stderr)
        return EXIT_ERROR

    kernel = capture.kernel or kernel_used(args.kernel)
    _print_table(verdicts, args, kernel)
    if interactive:
        _print_reproducers(verdicts)
    for note in capture.notes:
        print(f"rx-oracle: note: {note}", file=sys.stderr)
    if args.report:
        _write_report(args.report, verdicts, args, kernel, capture.notes)
    failed = any(v.verdict == plugin.FAIL for v in verdicts.values())
    if capture.target_errors:
        print(f"rx-oracle: {len(capture.target_errors)} case(s) not run: the target was given "
              f"up as broken; first: {capture.target_errors[0]}", file=sys.stderr)
    if code == pytest.ExitCode.TESTS_FAILED and not failed:
        # A failure outside any rule (an error in the suite itself) is not a verdict.
        print("rx-oracle: the suite itself failed outside any rule", file=sys.stderr)
        return EXIT_ERROR
    if not any(v.verdict in (plugin.PASS, plugin.FAIL) for v in verdicts.values()):
        # Every rule not applicable: a green run here would check nothing at all.
        print(f"rx-oracle: {NO_RULE_CHECKED}: {args.target} implements none of what the "
              f"{len(verdicts)} selected rule(s) need", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_NONCONFORMANT if failed else EXIT_OK


class _Capture:
    """Receives the verdicts from the in-process (or xdist-controller) pytest session."""

    verdicts: dict[str, plugin.RuleVerdict]
    target_errors: list[str]
    faulted: list[str]
    answered: int
    unavailable: str | None
    output_error: str | None
    kernel: str | None
    notes: list[str]

    def __init__(self) -> None:
        self.output_error = None
        self.kernel = None
        self.notes = []
        self.verdicts = {}
        self.target_errors = []
        self.faulted = []
        self.answered = 0
        self.unavailable = None

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        rules = plugin.collector(session.config)
        self.verdicts = dict(rules.verdicts)
        self.target_errors = list(rules.target_errors)
        self.faulted = list(rules.faulted)
        self.answered = rules.answered
        self.unavailable = rules.unavailable
        self.output_error = rules.output_error
        self.kernel = rules.kernel
        self.notes = list(rules.notes)


class _Progress:
    """A rich progress bar over the collected properties (interactive runs only)."""

    def __init__(self) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self.bar = Progress(TextColumn("checking {task.description}"), BarColumn(),
                            MofNCompleteColumn(), transient=True)
        self.task = self.bar.add_task("rules", total=None)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.bar.update(self.task, total=len(session.items))
        self.bar.start()

    def pytest_runtest_logstart(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        self.bar.update(self.task, description=location[2])

    def pytest_runtest_logfinish(self, nodeid: str, location: tuple[str, int | None, str]) -> None:
        self.bar.advance(self.task)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.bar.stop()


def _print_reproducers(verdicts: dict[str, plugin.RuleVerdict]) -> None:
    seen: set[str] = set()
    for rid in sorted(verdicts):
        for text in verdicts[rid].reproducers:
            if text not in seen:
                seen.add(text)
                print(f"\n--- failure ({rid}) ---\n{text}")


def kernel_used(option: str | None) -> str:
    """KVER-001: the full version ``--kernel`` names, or the default (already checked)."""
    from reference.kernel import resolve_kernel

    return str(resolve_kernel(option))


def _print_table(
    verdicts: dict[str, plugin.RuleVerdict], args: argparse.Namespace, kernel: str
) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"rx-oracle {__version__} · target {args.target} · profile {args.profile}"
                        f" · kernel {kernel}")
    table.add_column("rule")
    table.add_column("verdict")
    table.add_column("tests", justify="right")
    table.add_column("detail", overflow="fold")
    for rid in sorted(verdicts):
        v = verdicts[rid]
        table.add_row(rid, f"[{plugin.STYLE[v.verdict]}]{v.verdict}[/]", str(v.total), v.detail())
    console = Console(stderr=False)
    console.print(table)
    counts = [f"{sum(1 for v in verdicts.values() if v.verdict == k)} {k}"
              for k in (plugin.PASS, plugin.FAIL, plugin.NOT_CHECKED, plugin.NOT_APPLICABLE)]
    console.print(f"{len(verdicts)} rules: {', '.join(counts)}")


def _write_report(
    path: Path, verdicts: dict[str, plugin.RuleVerdict], args: argparse.Namespace, kernel: str,
    notes: Sequence[str] = (),
) -> None:
    report = {
        "format": "rx-oracle-report",
        "version": 2,  # 2: four verdicts, not_applicable/not_checked replace skipped
        "oracle_version": __version__,
        "kernel": kernel,
        "target": args.target,
        "profile": args.profile,
        "notes": list(notes),
        "rules": [v.to_json() for _, v in sorted(verdicts.items())],
    }
    from conformance import outputs

    outputs.write_text("--report", path, json.dumps(report, indent=2) + "\n")


def _json_arg(option: str, text: str) -> Any:
    """JSON text, or ``@FILE`` holding it; a mistake is a :class:`UsageError`."""
    source = text
    if text.startswith("@"):
        source = _read_json_file(option, text)
    try:
        return json.loads(source)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{option}: not JSON: {exc}") from None


def _read_json_file(option: str, text: str) -> str:
    """The text of ``@FILE``, at most :data:`MAX_JSON_FILE` bytes of UTF-8.

    A pipe or ``/dev/stdin`` is read too (it ends); one that never ends, such as
    ``/dev/zero``, is refused at the bound instead of filling memory."""
    from conformance.outputs import describe

    try:
        with open(text[1:], "rb") as fh:
            data = fh.read(MAX_JSON_FILE + 1)
    except OSError as exc:
        raise UsageError(f"{option} {text}: cannot read the file: {describe(exc)}") from None
    if len(data) > MAX_JSON_FILE:
        raise UsageError(f"{option} {text}: larger than {MAX_JSON_FILE // (1024 * 1024)} MiB; "
                         "a config or scenario is far smaller")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{option} {text}: not UTF-8 text (byte {exc.start})") from None


def explain(args: argparse.Namespace) -> int:
    """Narrate, rule by rule, what the reference does with each frame of a capture."""
    import importlib

    from conformance.capture import CaptureError, read_capture
    from conformance.scenario import Scenario, ScenarioError
    from conformance.targets.base import NotApplicable
    from conformance.validate import SCHEMA_DIR, InputError, validate_scenario
    from conformance.validate import check as check_schema
    from reference.errors import OracleError

    if args.driver not in _components():
        raise UsageError(f"--driver {args.driver}: no such driver or component; "
                         f"known: {', '.join(_components())}")
    module = importlib.import_module(f"conformance.components.{args.driver}")
    narrate = getattr(module, "explain", None)
    if narrate is None and args.html is not None:
        from conformance import html

        narrate = html.narrator(module)
    if narrate is None:
        raise UsageError(f"--driver {args.driver}: has no explain yet")
    config = _json_arg("--config", args.config)
    program = _json_arg("--program", args.program) if args.program else None
    events = _json_arg("--events", args.events) if args.events else []
    notes: tuple[str, ...] = ()
    frames: tuple[bytes, ...] = ()
    if args.pcap is not None:
        try:
            capture = read_capture(args.pcap)
        except CaptureError as exc:
            raise UsageError(str(exc)) from None
        frames, notes = capture.frames, capture.notes
    if args.ring is not None:  # MLX5-RING-001: a captured ring replaces frames and events
        from conformance.ring_capture import RingFileError, load_ring

        if args.driver != "mlx5" or args.pcap is not None or args.events is not None:
            raise UsageError("--ring FILE: a captured mlx5 completion ring; use it with "
                             "--driver mlx5, without a pcap or --events")
        try:
            ring_config, events = load_ring(args.ring)
        except RingFileError as exc:
            raise UsageError(str(exc)) from None
        config = {**ring_config, **config} if isinstance(config, dict) else config
    if isinstance(config, dict):  # what explain fills in for a user who gave nothing
        config = {**getattr(module, "EXPLAIN_DEFAULTS", {}), **config}
    try:  # each option's own schema first, so the message names the option
        check_schema(f"{args.driver}.config", config, "--config")
        if program is not None:
            check_schema("program", program, "--program")
        if args.events is not None and (SCHEMA_DIR / f"{args.driver}.events.schema.json").exists():
            check_schema(f"{args.driver}.events", events, "--events")
    except InputError as exc:
        raise UsageError(str(exc)) from None
    check_kernel(args.kernel)
    check_output_file("--html", args.html)
    doc: dict[str, Any] = {"component": args.driver, "config": config,
                           "frames": [f.hex() for f in frames], "events": events,
                           "kernel": kernel_used(args.kernel)}
    if program is not None:
        doc["program"] = program
    try:
        scenario = validate_scenario(Scenario.from_json(doc))
    except (ScenarioError, InputError) as exc:
        raise UsageError(str(exc)) from None
    for note in notes:
        print(f"note: {note}")
    print(f"kernel: {scenario.kernel}")
    try:
        text = narrate(scenario)
        print(text)
        if args.html is not None:
            from conformance import html

            html.write(args.html, scenario, text)
            print(f"wrote {args.html}")
    except NotApplicable as exc:
        print(f"rx-oracle: not applicable for kernel {scenario.kernel}: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except OracleError as exc:
        print(f"rx-oracle: the reference refused this input: {exc}", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_OK


def _replay_input(text: str) -> tuple[Any, dict[str, Any] | None, tuple[str, ...]]:
    """The scenario document, and the expected observables and mask when ``text`` is a
    fixture record: JSON text, ``@FILE``, a record, or ``FILE:LINE`` of a fixture file."""
    from conformance.fixtures.record import FIXTURE_FORMAT, FixtureError, load_line

    where = "scenario"
    if not text.lstrip().startswith(("{", "[", "@")) and ":" in text:
        name, _, line = text.rpartition(":")
        if line.isdigit() and Path(name).is_file():
            try:
                lines = Path(name).read_text().splitlines()
            except (OSError, UnicodeDecodeError) as exc:
                raise UsageError(f"{name}: cannot read: {exc}") from None
            if not 1 <= int(line) <= len(lines):
                raise UsageError(f"{text}: {name} has {len(lines)} lines")
            text, where = lines[int(line) - 1], text
    doc = _json_arg(where, text)
    if isinstance(doc, dict) and doc.get("format") == FIXTURE_FORMAT:
        try:
            record, _, observables = load_line(json.dumps(doc), where)
        except FixtureError as exc:
            raise UsageError(str(exc)) from None
        return record["scenario"], observables, tuple(record.get("mask", ()))
    return doc, None, ()


def replay(args: argparse.Namespace) -> int:
    """Run one scenario on a target and on the reference; print the comparison."""
    import attrs

    from conformance.check import TargetFault, TargetSession, session_kernel, with_kernel
    from conformance.components import registry
    from conformance.observe import compare
    from conformance.scenario import Scenario, ScenarioError, to_jsonable
    from conformance.targets.base import NotApplicable, TargetError, declared, load_target
    from conformance.validate import InputError, validate_scenario
    from reference.errors import OracleError
    from reference.kernel import UnsupportedKernel, parse_kernel

    check_timeout(args.timeout)
    check_kernel(args.kernel)
    doc, expected, mask = _replay_input(args.scenario)
    try:
        scenario = validate_scenario(Scenario.from_json(doc))
    except (ScenarioError, InputError) as exc:
        raise UsageError(f"bad scenario: {exc}") from None
    component = registry()[scenario.component]
    check_target(args.target, args.timeout)
    try:
        target = load_target(args.target, timeout=args.timeout)
        declared(target, args.target)
    except TargetError as exc:
        raise UsageError(f"target error: {exc}") from None
    try:
        # KVER-001: --kernel, else the scenario's own, else the target's, else the newest.
        if args.kernel and str(parse_kernel(args.kernel)) != scenario.kernel:
            scenario = attrs.evolve(scenario, kernel=str(parse_kernel(args.kernel)))
            expected = None  # a recorded answer was for another version
        try:
            scenario = with_kernel(scenario, session_kernel(None, target.capabilities.kernel))
        except UnsupportedKernel as exc:
            raise UsageError(f"target error: {exc}") from None
        print(f"kernel: {scenario.kernel}")
        # A recorded answer is compared as it is, but the reference must accept the
        # scenario either way: one it refuses is the user's mistake, not the target's.
        try:
            predicted = component.expected(scenario)
        except NotApplicable as exc:
            if expected is None:
                print(f"not applicable: {exc}")
                return EXIT_OK
            predicted = expected
        except OracleError as exc:
            raise UsageError(f"bad scenario: the reference refuses it: "
                             f"{str(exc).splitlines()[0]}") from None
        if expected is None:
            expected = predicted
        if scenario.component not in target.capabilities.components:
            print(f"not applicable: {args.target} does not implement {scenario.component!r}")
            return EXIT_OK
        lacking = target.capabilities.lacks(scenario.component,
                                            component.sides_needed(scenario))
        if lacking:
            print(f"not applicable: {args.target} does not implement the "
                  f"{'/'.join(sorted(lacking))} side of {scenario.component!r}")
            return EXIT_OK
        actual = TargetSession(target, args.target, kernel=scenario.kernel).run(
            scenario, expected, mask)
        reports = target.capabilities.reports
    except TargetFault as fault:
        print(f"FAULT {fault.kind}: {fault.detail}")
        return EXIT_NONCONFORMANT
    finally:
        target.close()
    result = compare(to_jsonable(expected), to_jsonable(actual), mask=mask, reports=reports,
                     rules_for=component.rules_in(scenario))
    print(f"checked {len(result.checked)} fields, {len(result.not_checked)} not checked")
    for mismatch in result.mismatches:
        print("MISMATCH " + mismatch.describe())
    return EXIT_OK if result.ok else EXIT_NONCONFORMANT


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

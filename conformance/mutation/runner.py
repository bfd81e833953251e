"""Running mutants: each one a mutated copy of ``reference/`` served in its own process.

For one mutant the runner makes a scratch directory holding a copy of the ``reference``
package with the one file mutated, and runs::

    python -m conformance.mutation.suite --driver C ... --report R \\
        --target "exec:env PYTHONPATH=<scratch>/mutant:<root> python -m conformance.cli \\
                  serve --target reference"

(``conformance.mutation.suite`` is ``rx-oracle conformance`` without hypothesis's
shrinking.)  The suite process gets ``PYTHONPATH=<root>``: it predicts with the pristine reference.
Only the target process sees the mutant, first on its ``PYTHONPATH``.  Both run with the
scratch directory as working directory, which holds no ``reference`` package of its own
(``python -m`` puts the working directory first on ``sys.path``).  Nothing is ever
written under ``<root>``.

Outcomes, from the suite's exit status (see ``conformance/cli.py``):

- ``killed``: some rule failed (exit 1);
- ``killed by crash``: the target raised, died, or could not start (exit 2);
- ``timed out``: the mutant exceeded its wall-clock limit, or a request hit the
  per-request timeout (an endless loop, as the exec target reports it);
- ``survived``: every selected rule passed (exit 0), or none could be checked (exit 2
  with "no rule was checked").
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Literal

import attrs

from conformance.mutation import blame, equivalents, gates
from conformance.mutation.mutator import Mutant
from conformance.mutation.reach import never_executed
from conformance.mutation.selection import SELECTION, Selection, failed_rules
from reference.kernel import DEFAULT_KERNEL

KILLED, CRASHED, TIMED_OUT, SURVIVED = "killed", "killed by crash", "timed out", "survived"
#: How the detail of a survivor no property ran begins (:attr:`MutantResult.unreached`).
NOT_RUN = "no property of "
#: Which survivors of the default kernel run again at the older trees: every one not
#: judged equivalent, or only those whose line the default kernel's ci run never executes.
OlderTrees = Literal["survivors", "unexecuted"]
OUTCOMES = (KILLED, CRASHED, TIMED_OUT, SURVIVED)

#: What the exec target says when a request outlives ``--timeout`` (targets/exec.py).
_HANG = "no answer within"
#: What ``rx-oracle conformance`` says (exit 2) when every selected rule was not
#: applicable (``conformance.cli.NO_RULE_CHECKED``; not imported, to keep the runner
#: free of the suite).  Nothing was checked, so nothing killed the mutant: it survived,
#: as it did when such a run ended with exit 0.
_NO_RULE_CHECKED = "no rule was checked"


@attrs.frozen
class Limits:
    """Wall-clock limits (each run of the suite against a mutant, one per kernel it is
    judged at; each request to its target) and shrinking.

    Shrinking is off by default (see :mod:`conformance.mutation.suite`).
    """

    mutant: float = 180.0
    request: float = 5.0
    shrink: bool = False
    #: Stop each suite run at its first failing property (:mod:`conformance.mutation.suite`).
    first_failure: bool = False


@attrs.frozen
class MutantResult:
    """What running the suite against one mutant gave."""

    mutant: Mutant
    components: tuple[str, ...]
    outcome: str
    exit_code: int | None
    seconds: float
    #: The rules the suite's report failed.
    failed_rules: tuple[str, ...] = ()
    #: A failed rule is one the mutated function names; None when it names none or no
    #: rule failed.
    under_own_rule: bool | None = None
    detail: str = ""
    #: CPU time of the suite and its target processes: the load-independent cost.
    cpu_seconds: float = 0.0
    #: The ``--kernel`` versions the suite ran at, in order (the last one decided); ()
    #: when it ran once, at the default kernel.
    kernels: tuple[str, ...] = ()

    @property
    def detected(self) -> bool:
        return self.outcome != SURVIVED

    @property
    def unreached(self) -> bool:
        """A survivor no property ran: selection found none that executes its line at
        any tree it was judged at, so it survived without a run.  Whether that line is
        reachable is reach's question (``--coverage``: every branch the ci run never
        takes is justified in unreached.toml), not power's."""
        return self.outcome == SURVIVED and self.detail.startswith(NOT_RUN)

    def to_json(self) -> dict[str, Any]:
        return {
            "mutant": self.mutant.to_json(), "components": list(self.components),
            "outcome": self.outcome, "exit_code": self.exit_code,
            "seconds": round(self.seconds, 2), "failed_rules": list(self.failed_rules),
            "under_own_rule": self.under_own_rule, "detail": self.detail,
            "cpu_seconds": round(self.cpu_seconds, 2), "kernels": list(self.kernels),
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> MutantResult:
        return cls(
            mutant=Mutant.from_json(doc["mutant"]), components=tuple(doc["components"]),
            outcome=doc["outcome"], exit_code=doc["exit_code"], seconds=doc["seconds"],
            failed_rules=tuple(doc["failed_rules"]), under_own_rule=doc["under_own_rule"],
            detail=doc["detail"], cpu_seconds=doc.get("cpu_seconds", 0.0),
            kernels=tuple(doc.get("kernels", ())),
        )


def suite_argv(
    python: str, mutant_dir: Path, root: Path, components: Sequence[str], report: Path,
    limits: Limits, kernel: str | None = None, properties: Sequence[str] | None = None,
) -> list[str]:
    """The suite command for one mutant (its target command is the exec spec), judged at
    ``kernel`` (the default kernel when None), by ``components``' properties or, given
    ``properties``, by those alone."""
    serve = ["env", f"PYTHONPATH={mutant_dir}{os.pathsep}{root}", "PYTHONDONTWRITEBYTECODE=1",
             python, "-m", "conformance.cli", "serve", "--target", "reference"]
    argv = [python, "-m", "conformance.mutation.suite", *(["--shrink"] if limits.shrink else []),
            *(["--first-failure"] if limits.first_failure else []),
            "--target", "exec:" + shlex.join(serve),
            "--timeout", f"{limits.request:g}", "--report", str(report)]
    if properties:
        for nodeid in properties:
            argv += ["--property", nodeid]
    else:
        for component in components:
            argv += ["--driver", component]
    if kernel is not None:
        argv += ["--kernel", kernel]
    return argv


def run_mutant(
    mutant: Mutant,
    components: Sequence[str],
    *,
    root: Path,
    limits: Limits = Limits(),
    python: str = sys.executable,
    scratch: Path | None = None,
    kernels: Sequence[str] = (),
    selection: Selection | None = None,
) -> MutantResult:
    """Run the suite's ``components`` against ``mutant``; never writes under ``root``.

    With ``kernels``, the suite runs once per kernel version, in order, until one run
    detects the mutant (the result is that run's, with the CPU time of all of them).
    With ``selection``, each run is of the properties that execute the mutated line at
    that kernel, and a kernel where none does is skipped (a mutant no property can see
    anywhere survives without running: :mod:`conformance.mutation.selection`).
    """
    plan = _plan(mutant, components, kernels, selection, root)
    if not plan:
        where = ", ".join(kernels) if kernels else str(DEFAULT_KERNEL)
        return MutantResult(mutant, tuple(components), SURVIVED, 0, 0.0,
                            detail=f"{NOT_RUN}{', '.join(components)} executes the "
                                   f"line at {where} ({SELECTION})")
    source = (root / mutant.path).read_text()
    with tempfile.TemporaryDirectory(prefix="rx-mutant-", dir=scratch) as tmp_name:
        tmp = Path(tmp_name).resolve()
        mutant_dir = tmp / "mutant"
        shutil.copytree(root / "reference", mutant_dir / "reference",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        mutated = (mutant_dir / mutant.path).resolve()
        if not mutated.is_relative_to(tmp):  # pragma: no cover - a path escaping the copy
            raise ValueError(f"mutant path {mutant.path!r} leaves the scratch copy")
        mutated.write_text(mutant.apply(source))
        start = time.monotonic()
        cpu = 0.0
        ran: list[str] = []
        for kernel, properties in plan:
            report = tmp / "report.json"
            report.unlink(missing_ok=True)
            argv = suite_argv(python, mutant_dir, root, components, report, limits, kernel,
                              properties)
            env = dict(os.environ, PYTHONPATH=str(root), PYTHONDONTWRITEBYTECODE="1")
            code, stderr, spent = _run(argv, cwd=tmp, env=env, limit=limits.mutant)
            cpu += spent
            failed = failed_rules(report)
            if kernel is not None:
                ran.append(kernel)
            if code != 0:
                break
        seconds = time.monotonic() - start
    result = classify(mutant, tuple(components), code, stderr, failed, seconds)
    return attrs.evolve(result, cpu_seconds=cpu, kernels=tuple(ran))


def _plan(
    mutant: Mutant, components: Sequence[str], kernels: Sequence[str],
    selection: Selection | None, root: Path,
) -> list[tuple[str | None, tuple[str, ...] | None]]:
    """The runs to make: (kernel or None for the default, the properties to run or None
    for all of ``components``'), leaving out kernels where no property runs the line."""
    plan: list[tuple[str | None, tuple[str, ...] | None]] = []
    for kernel in (kernels or (None,)):
        properties = None if selection is None else selection.properties(
            mutant, kernel or str(DEFAULT_KERNEL), components, root)
        if properties != ():
            plan.append((kernel, properties))
    return plan


def classify(
    mutant: Mutant, components: tuple[str, ...], code: int | None, stderr: str,
    failed: tuple[str, ...], seconds: float,
) -> MutantResult:
    """The outcome from the exit status (None: killed at the limit) and the report."""
    detail = _last_message(stderr)
    if code is None or (code == 2 and _HANG in stderr):
        outcome = TIMED_OUT
    elif code == 0 or (code == 2 and _NO_RULE_CHECKED in stderr):
        outcome = SURVIVED
    elif code == 1:
        outcome = KILLED
    else:
        outcome = CRASHED
    own = blame.under_own_rule(mutant.rules, failed)
    return MutantResult(mutant, components, outcome, code, seconds, failed, own, detail)


def run_all(
    work: Iterable[tuple[Mutant, tuple[str, ...]]],
    *,
    root: Path,
    jobs: int = 2,
    limits: Limits = Limits(),
    on_result: Callable[[MutantResult], None] | None = None,
    executed: Mapping[str, frozenset[int]] | None = None,
    selection: Selection | None = None,
    older_trees: OlderTrees = "survivors",
) -> list[MutantResult]:
    """Run every (mutant, components) pair, ``jobs`` at a time; results in input order.

    Each is judged at the kernels :func:`gates.kernels_for` gives: a survivor of the
    default kernel runs again at the older trees, unless it is registered as equivalent;
    with ``older_trees="unexecuted"``, also not when its line ran at the default kernel:
    by ``selection`` (a line that can show it ran in one of its components' properties:
    :func:`selection.showing_lines`) or else by ``executed`` (the lines the default
    kernel's ci run executes, per module).  That saves most of a full run's re-runs, but
    misses a difference only an older tree's values show (a line every tree runs, with a
    value only older ones let through: ``PP_RING_SIZE_LIMIT``'s comparison), except in a
    function that reads a gate itself (:func:`gates.reads_a_gate`), whose survivors are
    always judged at the older trees too."""
    items = list(work)
    settled = equivalents.judge((m for m, _ in items), root)

    def default_only(m: Mutant, components: tuple[str, ...]) -> bool:
        if m.id in settled:
            return True
        if older_trees != "unexecuted" or gates.reads_a_gate(m, root):
            return False
        if selection is not None and str(DEFAULT_KERNEL) in selection.kernels:
            return selection.properties(m, str(DEFAULT_KERNEL), components, root) != ()
        return executed is not None and not never_executed(m, executed)

    results: list[MutantResult | None] = [None] * len(items)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(run_mutant, m, c, root=root, limits=limits,
                               kernels=gates.kernels_for(
                                   m, root, default_only=default_only(m, c)),
                               selection=selection): i
                   for i, (m, c) in enumerate(items)}
        for future in as_completed(futures):
            result = future.result()
            results[futures[future]] = result
            if on_result is not None:
                on_result(result)
    return [r for r in results if r is not None]


def _run(
    argv: list[str], *, cwd: Path, env: dict[str, str], limit: float
) -> tuple[int | None, str, float]:
    """Run ``argv`` in its own session; at the limit kill the session (suite and target).

    Returns the exit status (None when killed at the limit), stderr, and the CPU seconds
    of the process and the children it waited for (``wait4``), so that a run on a busy
    machine still says what a mutant costs.
    """
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    stream = proc.stderr
    assert stream is not None
    chunks: list[str] = []
    reader = threading.Thread(target=lambda: chunks.append(stream.read()), daemon=True)
    reader.start()
    deadline = time.monotonic() + limit
    timed_out = False
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            timed_out = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # the group of the process we started
            pid, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.1)
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    reader.join(timeout=10)
    stream.close()
    cpu = usage.ru_utime + usage.ru_stime
    return (None if timed_out else proc.returncode), "".join(chunks), cpu


def _last_message(stderr: str) -> str:
    """The suite's own one-line diagnosis (``rx-oracle: ...``), else stderr's last line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in reversed(lines):
        if line.startswith("rx-oracle:"):
            return line[:300]
    return lines[-1][:300] if lines else ""

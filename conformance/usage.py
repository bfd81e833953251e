"""Checking what a user typed before anything runs.

A user's mistake costs one line and exit status 2, before the suite starts: the line
names the option, the value and what is wrong.  Nothing is half-run and no file is
half-written because of a typo.  These checks are the command line's; structured input
(configs, programs, events, scenarios) is checked by the schemas in
``conformance/schemas/`` (:mod:`conformance.validate`).
"""

from __future__ import annotations

import argparse
import importlib.util
import math
from pathlib import Path


class UsageError(Exception):
    """A mistake in what the user asked for: printed as one line, exit status 2."""


class TargetUnavailableError(UsageError):
    """The target cannot run at all: one line, exit status 2, no rule verdicts."""


#: The longest per-request timeout accepted: a day (a larger one overflows the clocks
#: the targets wait on, and no single request is meant to take that long).
MAX_TIMEOUT = 86400.0


def check_timeout(value: float) -> None:
    if not (math.isfinite(value) and 0 < value <= MAX_TIMEOUT):
        raise UsageError(f"--timeout {value!r}: must be a number of seconds in "
                         f"(0, {MAX_TIMEOUT:g}]")


def check_output_file(option: str, path: Path | None) -> None:
    """A file the run will write (see :mod:`conformance.outputs`)."""
    from conformance import outputs

    outputs.check_file(option, path)


def check_output_dir(option: str, path: Path | None) -> None:
    """A directory the run will fill: it may not exist yet, but its parent must, and it
    must not be an existing file."""
    from conformance import outputs

    outputs.check_dir(option, path)


def check_kernel(value: str | None) -> None:
    """KVER-002: ``--kernel`` names a version the model describes (or is absent)."""
    if value is None:
        return
    from reference.kernel import UnsupportedKernel, parse_kernel

    try:
        parse_kernel(value, "--kernel")
    except UnsupportedKernel as exc:
        raise UsageError(str(exc)) from None


def check_numprocesses(value: str | None) -> None:
    if value is None:
        return
    if importlib.util.find_spec("xdist") is None:
        raise UsageError(f"-n {value}: parallel runs need pytest-xdist "
                         "(pip install pytest-xdist, or install rx-oracle[dev])")
    if value != "auto" and not (value.isdigit() and int(value) >= 1):
        raise UsageError(f"-n {value!r}: use a number of processes >= 1, or 'auto'")


def check_target_spec(spec: str) -> None:
    """The target spec parses (nothing is started)."""
    from conformance.targets.base import TargetSpecError, parse_target_spec

    try:
        parse_target_spec(spec)
    except TargetSpecError as exc:
        raise UsageError(str(exc)) from None


def check_target(spec: str, timeout: float) -> None:
    """The target spec parses, and a target that is cheap to start does start.

    Live targets (veth, tun, iface, and KIND@VERSION in a guest) are only checked for
    their prerequisites here; they build their namespaces (boot their guest) once, inside
    the run.
    """
    from conformance.targets.base import (
        TargetError,
        TargetSpecError,
        declared,
        load_target,
        parse_target_spec,
    )

    try:
        parsed = parse_target_spec(spec)
    except TargetSpecError as exc:
        raise UsageError(str(exc)) from None
    if parsed.version and parsed.kind != "qemu-fec":  # KIND@VERSION: the run boots, once
        from conformance.live import vm

        reason = vm.missing_tools()
        if reason:
            raise TargetUnavailableError(f"target error: {spec}: {reason}")
        return
    if parsed.kind in ("veth", "tun", "iface"):
        from conformance.live import env

        reason = env.missing()
        if reason:
            raise TargetUnavailableError(f"target error: {spec}: {reason}")
        return
    try:
        target = load_target(spec, timeout=timeout)
        try:
            declared(target, spec)
        finally:
            target.close()
    except TargetError as exc:
        raise TargetUnavailableError(f"target error: {exc}") from None



def check_suite_options(args: argparse.Namespace, *, probe_target: bool = True) -> None:
    """Every option of ``conformance`` and ``fixtures verify``, before pytest starts (the
    target's spec always; starting the target once, unless ``probe_target`` is False)."""
    check_timeout(args.timeout)
    check_kernel(args.kernel)
    check_numprocesses(args.numprocesses)
    from conformance import outputs

    check_output_file("--report", args.report)
    check_output_file("--junitxml", args.junitxml)
    check_output_dir("--save-failures", args.save_failures)
    outputs.refuse_clashes([("--report", args.report), ("--junitxml", args.junitxml),
                            ("--save-failures", args.save_failures)])
    if args.database is not None and args.database.exists() and not args.database.is_dir():
        raise UsageError(f"--database {args.database}: exists and is not a directory")
    if probe_target:
        check_target(args.target, args.timeout)
    else:
        check_target_spec(args.target)

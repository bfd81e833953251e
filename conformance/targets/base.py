"""The target interface every implementation under test provides."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import re
import shlex
import sys
from collections.abc import Mapping
from typing import Any, Protocol, cast, runtime_checkable

import attrs

from conformance.scenario import Scenario

#: The ways a target can misbehave on one input (``TargetError.kind``).
FAULT_KINDS = ("exception", "error", "crash", "hang", "garbage", "schema")


class TargetError(Exception):
    """The target misbehaved on one input: raised, crashed, hung, spoke garbage.

    ``kind`` is one of :data:`FAULT_KINDS`: ``exception`` (a Python target raised),
    ``error`` (an exec target answered with an error message), ``crash`` (the process
    died), ``hang`` (no answer within the timeout), ``garbage`` (an answer that is not
    a protocol message), ``schema`` (observables that break the component's schema).
    The suite turns it into a failure of the property's rules, with the shrunk scenario
    (a *target fault*), exactly like a value that differs from the reference.
    """

    def __init__(self, message: str, kind: str = "error") -> None:
        super().__init__(message)
        self.kind = kind


class TargetUnavailable(TargetError):
    """The target cannot run at all: it cannot be loaded, started or greeted.

    This is not a verdict on any rule: the run stops with exit status 2 and one line.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message, kind="unavailable")


class NotApplicable(Exception):
    """The target cannot answer this scenario by design (a recording that does not
    exist, a path a live device lacks): the case is *not applicable*, never a pass."""


class InputNotApplicable(NotApplicable):
    """This one input needs what the target lacks, while other inputs of the same
    property may run: an XDP program calling a helper the live kernel refuses.  Inside a
    hypothesis property the input is rejected and another is drawn; the property is not
    applicable only when nothing it draws can run."""


@attrs.frozen
class Capabilities:
    """What a target implements and what it can report.

    ``components`` names the scenario components it accepts (``rss``, ``xdp``, ...).
    ``reports`` lists glob patterns over observable paths (``packets[*].verdict``);
    anything else the reference predicts is shown as "not checked".
    ``kernel`` is the kernel the target runs (``uname -r`` of a live target, or what an
    exec target's hello says): the reference predicts for it unless ``--kernel``
    overrides (KVER-001).  ``None`` for a target that is not a particular kernel.
    """

    components: frozenset[str]
    reports: tuple[str, ...] = ("*",)
    kernel: str | None = None
    #: Protocol 1.2: for a component with a device and a driver half (``mlx5``), the
    #: halves the target implements on their own (``"device"``, ``"driver"``).  A
    #: component not named here is implemented only whole, as in protocol 1.1: it gets
    #: the scenarios that run both halves together and no others (MLX5-RING-001).
    sides: Mapping[str, frozenset[str]] = attrs.field(factory=dict, hash=False)

    def lacks(self, component: str, needed: frozenset[str]) -> frozenset[str]:
        """The halves a scenario needs that this target did not declare (empty: it runs)."""
        declared = self.sides.get(component)
        if declared is None:
            return frozenset() if needed in (frozenset(), SIDES) else needed
        return needed - declared

    def to_json(self) -> dict[str, Any]:
        """The hello's ``capabilities`` (the kernel travels beside it, as ``hello.kernel``)."""
        doc: dict[str, Any] = {"components": sorted(self.components),
                               "reports": list(self.reports)}
        if self.sides:
            doc["sides"] = {c: sorted(s) for c, s in sorted(self.sides.items())}
        return doc


#: The halves a component may be split into (protocol 1.2, ``capabilities.sides``).
SIDES = frozenset({"device", "driver"})


def parse_sides(value: Any) -> dict[str, frozenset[str]]:
    """``capabilities.sides`` from a hello: component -> non-empty list of halves."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
            isinstance(v, list) and v and set(v) <= SIDES for v in value.values()):
        raise ValueError("capabilities.sides maps a component to a non-empty list of "
                         "\"device\"/\"driver\"")
    return {str(k): frozenset(map(str, v)) for k, v in value.items()}


@runtime_checkable
class Target(Protocol):
    """An implementation under test.

    ``run`` takes a scenario and returns its observables as plain nested data in the
    schema of PROTOCOL.md.  It raises :class:`NotApplicable` for a scenario it cannot
    answer by design and :class:`TargetError` when it fails; any other exception a
    Python target raises counts as a target fault of kind ``exception``.
    """

    name: str

    @property
    def capabilities(self) -> Capabilities: ...

    def run(self, scenario: Scenario) -> dict[str, Any]: ...

    def close(self) -> None: ...


TARGET_KINDS = ("reference, python:MODULE:OBJECT, exec:COMMAND, fixtures:DIR, veth, tun, "
                "iface:NAME,peer=PEER, qemu-fec[:BOARD][@VERSION], zcrx-live, or KIND@VERSION "
                "(veth, tun or zcrx-live in a guest booted from Debian's kernel VERSION)")
#: The live targets that also run in a guest booted from a Debian kernel (``KIND@VERSION``).
GUEST_KINDS = ("veth", "tun", "zcrx-live")


class TargetSpecError(ValueError):
    """A ``--target`` value that does not parse: a usage error, not a target fault."""


@attrs.frozen
class TargetSpec:
    """A parsed ``--target`` value: which kind of target, and its argument."""

    kind: str
    argument: str = ""
    argv: tuple[str, ...] = ()
    #: ``KIND@VERSION``: the Debian kernel the guest boots (empty: the host's kernel).
    version: str = ""


def parse_guest_spec(spec: str) -> TargetSpec:
    """``KIND@VERSION`` (``veth@7.3.4``, ``tun@6.12.117+deb13-amd64``); ``KIND@host`` is
    plain ``KIND``.  The version must parse and be a series the model describes."""
    from conformance.live.guest_kernel import abi
    from reference.errors import OracleError
    from reference.kernel import parse_kernel

    kind, _, version = spec.partition("@")
    if kind not in GUEST_KINDS:
        raise TargetSpecError(f"--target {spec!r}: only {', '.join(GUEST_KINDS)} run in a "
                              "guest (KIND@VERSION)")
    if version == "host":
        return TargetSpec(kind)
    try:
        abi(version)
        parse_kernel(version, "the guest's kernel")
    except (ValueError, OracleError) as exc:
        raise TargetSpecError(f"--target {spec!r}: {exc}") from None
    return TargetSpec(kind, version=version)


def parse_target_spec(spec: str) -> TargetSpec:
    """Parse a target spec without starting anything (a usage check for the CLI)."""
    kind, _, rest = spec.partition(":")
    if "@" in kind:
        return parse_guest_spec(spec)
    if spec == "reference" or spec in ("veth", "tun", "zcrx-live"):
        return TargetSpec(spec)
    if kind == "python":
        module_name, _, attr = rest.partition(":")
        if not module_name or not attr or ":" in attr:
            raise TargetSpecError(f"--target {spec!r}: a python target is python:MODULE:OBJECT")
        return TargetSpec(kind, rest)
    if kind == "exec":
        try:
            argv = tuple(shlex.split(rest))
        except ValueError as exc:
            raise TargetSpecError(f"--target {spec!r}: the command does not parse: {exc}") from None
        if not argv:
            raise TargetSpecError(f"--target {spec!r}: an exec target needs a command")
        return TargetSpec(kind, rest, argv)
    if kind in ("fixtures", "iface") and rest:
        return TargetSpec(kind, rest)
    if kind == "qemu-fec":
        return parse_qemu_fec_spec(spec, rest)
    raise TargetSpecError(f"--target {spec!r} is not a target: use {TARGET_KINDS}")


def parse_qemu_fec_spec(spec: str, rest: str) -> TargetSpec:
    """``qemu-fec[:BOARD][@VERSION]``: VERSION picks Debian's kernel of that version for
    the board's architecture (``imx8mp-evk@7.3.4``); without it, the suite's current one."""
    from reference.errors import OracleError
    from reference.kernel import parse_kernel

    board, at, version = rest.partition("@")
    if not at:
        return TargetSpec("qemu-fec", board)
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        raise TargetSpecError(f"--target {spec!r}: {version!r} is not a kernel version: use "
                              "X.Y.Z (e.g. 7.3.4)")
    try:
        parse_kernel(version, "the guest's kernel")
    except OracleError as exc:
        raise TargetSpecError(f"--target {spec!r}: {exc}") from None
    return TargetSpec("qemu-fec", board, version=version)


def load_target(spec: str, *, timeout: float = 10.0) -> Target:
    """Build a target from its command-line spec (see the package docstring).

    Raises :class:`TargetSpecError` for a spec that does not parse and
    :class:`TargetUnavailable` for a target that cannot be loaded or started.
    """
    parsed = parse_target_spec(spec)
    if parsed.kind == "qemu-fec":
        from conformance.targets.qemu_fec import QemuFecTarget

        return QemuFecTarget(parsed.argument, parsed.version or None)
    if parsed.version:
        from conformance.targets.guest import GuestTarget

        return GuestTarget(parsed.kind, parsed.version, timeout=timeout)
    if parsed.kind == "reference":
        from conformance.targets.reference import ReferenceTarget

        return ReferenceTarget()
    if parsed.kind == "python":
        return _python_target(parsed.argument)
    if parsed.kind == "exec":
        from conformance.targets.exec import ExecTarget

        return ExecTarget(list(parsed.argv), timeout=timeout)
    if parsed.kind in ("veth", "tun", "iface"):
        from conformance.targets.live import LiveTarget

        return LiveTarget(parsed.kind, parsed.argument)
    if parsed.kind == "zcrx-live":
        from conformance.targets.zcrx_live import ZcrxLiveTarget

        return ZcrxLiveTarget()
    from conformance.targets.fixtures import FixturesTarget

    return FixturesTarget(parsed.argument)


def declared(target: Target, spec: str) -> Capabilities:
    """The target's capabilities, checked before anything is asked of it.

    A target that cannot say what it implements (its ``capabilities`` raises, or is not
    a :class:`Capabilities`), or names a component this rx-oracle does not have
    (``"rsss"``, ``"RSS"``), cannot run at all: every rule of the component it meant
    would otherwise be quietly *not applicable*.  Raises :class:`TargetUnavailable`.
    """
    from conformance.components import registry

    try:
        caps: Any = target.capabilities
    except Exception as exc:
        raise TargetUnavailable(f"{spec}: its capabilities raised {_last_line(exc)}") from None
    if not isinstance(caps, Capabilities):
        raise TargetUnavailable(
            f"{spec}: capabilities is a {type(caps).__name__}, not a "
            "conformance.targets.base.Capabilities")
    names = caps.components
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise TargetUnavailable(f"{spec}: capabilities.components {names!r} is not a set "
                                "of component names")
    known = sorted(registry())
    unknown = sorted(set(names) - set(known)) + sorted(set(caps.sides) - set(known))
    if unknown:
        raise TargetUnavailable(
            f"{spec}: capabilities name no such component {', '.join(map(repr, unknown))}; "
            f"known: {', '.join(known)}")
    return caps


def _last_line(exc: BaseException) -> str:
    """``KeyError: 'x'``: the exception as the last line of its traceback would say it."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[-1]}" if lines else type(exc).__name__


def _import(module_name: str) -> Any:
    """MODULE the way pytest finds a test module: a path (anything with ``/`` or ending
    ``.py``) is loaded from that file, a name is looked up with the current directory
    first on ``sys.path`` (the ``rx-oracle`` script's own directory is there instead)."""
    if "/" in module_name or module_name.endswith(".py"):
        path = os.path.abspath(module_name)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no such file {module_name}")
        name = os.path.splitext(os.path.basename(path))[0]
        found = importlib.util.spec_from_file_location(name, path)
        if found is None or found.loader is None:
            raise ImportError(f"{module_name} is not a Python module")
        module = importlib.util.module_from_spec(found)
        # Its own directory first, so the file imports its neighbours as pytest lets it.
        _first_on_path(os.path.dirname(path))
        sys.modules[name] = module
        try:
            found.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        return module
    _first_on_path(os.getcwd())
    return importlib.import_module(module_name)


def _first_on_path(directory: str) -> None:
    if directory not in sys.path and not (directory == os.getcwd() and "" in sys.path):
        sys.path.insert(0, directory)


def _is_target(obj: object) -> bool:
    """``isinstance(obj, Target)`` without running ``obj``'s properties: a
    ``capabilities`` that raises is :func:`declared`'s to report, in one line."""
    return all(_has_static(obj, name) for name in ("name", "capabilities", "run", "close"))


def _has_static(obj: object, name: str) -> bool:
    try:
        inspect.getattr_static(obj, name)
    except AttributeError:
        return False
    return True


def _python_target(spec: str) -> Target:
    """Import MODULE and take OBJECT (a target, a class or a factory).

    Anything that goes wrong here, including an exception raised while the module is
    imported or the factory runs, means the target cannot run at all.
    """
    module_name, _, attr = spec.partition(":")
    # The user's directory is theirs: no __pycache__ is left in it.
    write_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        obj: Any = getattr(_import(module_name), attr)
        if isinstance(obj, type) or (callable(obj) and not _is_target(obj)):
            obj = obj()
    except Exception as exc:
        raise TargetUnavailable(
            f"cannot load python target {spec!r}: {_last_line(exc)}"
        ) from exc
    finally:
        sys.dont_write_bytecode = write_bytecode
    if not _is_target(obj):
        raise TargetUnavailable(
            f"python target {spec!r} does not implement the Target interface "
            "(name, capabilities, run, close)"
        )
    return cast(Target, obj)

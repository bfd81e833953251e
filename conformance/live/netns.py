"""Named network namespaces owned by this process, and their clean-up.

Every object a live run creates lives in a namespace named ``rxo<pid><letter>`` (the
interfaces inside carry the same kind of name).  Deleting the namespace deletes them all,
so clean-up is one ``ip netns del`` per namespace, run on every exit path: normal close,
exceptions (context managers), ``atexit``, SIGINT and SIGTERM.  A SIGKILL cannot be
caught; the next run's :func:`sweep` deletes namespaces whose pid is gone.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType

PREFIX = "rxo"
NETNS_DIR = "/run/netns"
CLONE_NEWNET = 0x40000000
_NAME = re.compile(rf"^{PREFIX}(\d+)([a-z])$")

_libc = ctypes.CDLL(None, use_errno=True)
_lock = threading.Lock()
_owned: list[str] = []
_installed = False
_hooks: list[Callable[[], None]] = []


def name_for(letter: str, pid: int | None = None) -> str:
    """``rxo<pid><letter>``: at most 15 characters, a valid interface name as well."""
    return f"{PREFIX}{os.getpid() if pid is None else pid}{letter}"


def ip(*args: str, netns: str | None = None) -> str:
    """Run ``ip`` (in ``netns`` with ``-n``); raise with its stderr on failure."""
    cmd = ["ip", *(["-n", netns] if netns else []), *args]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode:
        raise OSError(f"{' '.join(cmd)}: {done.stderr.strip()}")
    return done.stdout


def run_in(netns: str, *cmd: str) -> str:
    done = subprocess.run(["ip", "netns", "exec", netns, *cmd], capture_output=True,
                          text=True, check=False)
    if done.returncode:
        raise OSError(f"{' '.join(cmd)} in {netns}: {done.stderr.strip()}")
    return done.stdout


def create(letter: str) -> str:
    """Create this run's namespace ``letter`` with IPv6 off (no RS/DAD/MLD noise)."""
    _install_handlers()
    name = name_for(letter)
    with _lock:
        _owned.append(name)
    ip("netns", "add", name)
    run_in(name, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
           "net.ipv6.conf.default.disable_ipv6=1")
    return name


def delete(name: str) -> None:
    with _lock:
        if name in _owned:
            _owned.remove(name)
    subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)


def on_cleanup(hook: Callable[[], None]) -> None:
    """Run ``hook`` first whenever :func:`cleanup` runs (for processes living in the
    namespaces, which must be gone before them)."""
    if hook not in _hooks:
        _hooks.append(hook)


def cleanup() -> None:
    """Run the clean-up hooks, then delete every namespace this process still owns."""
    for hook in list(_hooks):
        hook()
    with _lock:
        names = list(_owned)
    for name in names:
        delete(name)


def leftovers() -> list[str]:
    """Namespaces with the project prefix whose pid is not alive."""
    try:
        entries = os.listdir(NETNS_DIR)
    except FileNotFoundError:
        return []
    dead = []
    for entry in entries:
        match = _NAME.match(entry)
        if match and not alive(int(match.group(1))):
            dead.append(entry)
    return sorted(dead)


def sweep() -> list[str]:
    """Delete leftovers of dead runs (only names with the project prefix)."""
    dead = leftovers()
    for name in dead:
        subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)
    return dead


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def dead_runs(base: Path) -> list[Path]:
    """Run directories under ``base`` (each named by its owner's pid) whose owner is gone:
    what a guest-running target sweeps before it starts its own."""
    try:
        entries = list(base.iterdir())
    except FileNotFoundError:
        return []
    return sorted(p for p in entries if p.name.isdigit() and not alive(int(p.name)))


@contextlib.contextmanager
def entered(name: str) -> Iterator[None]:
    """Run the body with the calling thread inside namespace ``name``."""
    here = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    there = os.open(os.path.join(NETNS_DIR, name), os.O_RDONLY)
    try:
        if _libc.setns(there, CLONE_NEWNET):
            raise OSError(ctypes.get_errno(), f"setns {name}")
        try:
            yield
        finally:
            if _libc.setns(here, CLONE_NEWNET):
                raise OSError(ctypes.get_errno(), "setns back")
    finally:
        os.close(here)
        os.close(there)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    cleanup()
    previous = _previous.get(signum)
    if callable(previous):
        previous(signum, frame)
        return
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


_previous: dict[int, object] = {}


def _install_handlers() -> None:
    global _installed
    if _installed:
        return
    import atexit

    atexit.register(cleanup)
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            _previous[signum] = signal.getsignal(signum)
            signal.signal(signum, _on_signal)
    _installed = True

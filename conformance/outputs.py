"""Every file the command line writes for the user goes through here.

An output option names a path the user owns; what is there decides how it is written:

- a regular file, or a path that does not exist yet: written to a temporary file in the
  same directory, flushed to disk (``fsync``) and renamed over the path, so a reader
  never sees half a file and a failed write leaves the old one;
- a character device or a FIFO (``/dev/stdout``, ``/dev/null``, a pipe), and any path
  under ``/dev`` or ``/proc`` (``/dev/stdout`` redirected to a file is that file, and
  replacing it would cut the shell's redirection off): written through, never replaced;
- a directory, a block device or a socket: refused before anything runs.

Two options naming the same file (the same path, or the same inode through a link) are
refused before anything runs too: one would silently overwrite the other.  An error
while writing (``ENOSPC``, ``EACCES``, ``EROFS`` ...) is one line naming the option, the
path and the errno name, exit status 2, and no temporary file is left behind.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from conformance.usage import UsageError


class OutputError(UsageError):
    """An output the run cannot write: one line naming the option, the path and why."""


def describe(exc: OSError) -> str:
    """``ENOSPC (No space left on device)``: the kernel's name first, then its words."""
    name = errno.errorcode.get(exc.errno or 0, "error")
    return f"{name} ({exc.strerror or exc})"


def _stat(option: str, path: Path) -> os.stat_result | None:
    """The file ``path`` names (through symlinks), or None when nothing is there yet."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise OutputError(f"{option} {path}: a symlink to nothing "
                              f"({os.readlink(path)}); name the file itself") from None
        return None
    except OSError as exc:  # ELOOP, ENOTDIR, EACCES on the way
        raise OutputError(f"{option} {path}: {describe(exc)}") from None


def check_file(option: str, path: Path | None) -> None:
    """A file the run will write: refused now if it can never be written."""
    if path is None:
        return
    st = _stat(option, path)
    if st is not None:
        kind = _refused_kind(st.st_mode)
        if kind:
            raise OutputError(f"{option} {path}: is {kind}, not a file, a pipe or a "
                              "character device such as /dev/stdout")
        if not os.access(path, os.W_OK):
            raise OutputError(f"{option} {path}: EACCES (not writable)")
        if _through(path, st):
            return
    parent = _real(path).parent
    if not parent.is_dir():
        raise OutputError(f"{option} {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"{option} {path}: EACCES (directory {parent} is not writable)")


def check_dir(option: str, path: Path | None) -> None:
    """A directory the run will fill: it may not exist yet, but its parent must."""
    if path is None:
        return
    st = _stat(option, path)
    if st is not None:
        if not stat.S_ISDIR(st.st_mode):
            raise OutputError(f"{option} {path}: exists and is not a directory")
        return
    parent = Path(os.path.abspath(path)).parent
    if not parent.is_dir():
        raise OutputError(f"{option} {path}: directory {parent} does not exist")


def _refused_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return ""


def _through(path: Path, st: os.stat_result) -> bool:
    """Whether ``path`` is written through rather than replaced (the module docstring)."""
    special = os.path.abspath(path).startswith(("/dev/", "/proc/"))
    return special or not stat.S_ISREG(st.st_mode)


def _real(path: Path) -> Path:
    """The path with its symlinks followed (as far as they lead), made absolute."""
    return Path(os.path.realpath(path))


def refuse_clashes(named: Iterable[tuple[str, Path | None]]) -> None:
    """Two output options that name the same file: one would lose the other's content.

    Write-through devices are exempt (``--report /dev/null --junitxml /dev/null`` is
    fine); anything else is the same file when its resolved path, or its device and
    inode, are the same.
    """
    seen: dict[object, str] = {}
    for option, path in named:
        if path is None:
            continue
        try:
            st: os.stat_result | None = os.stat(path)
        except OSError:
            st = None
        if st is not None and _through(path, st):
            continue
        keys: list[object] = [str(_real(path))]
        if st is not None:
            keys.append((st.st_dev, st.st_ino))
        for key in keys:
            if key in seen:
                raise OutputError(f"{option} {path}: the same file as {seen[key]}; each "
                                  "output needs a file of its own")
        for key in keys:
            seen[key] = f"{option} {path}"


def write_text(option: str, path: Path, text: str) -> None:
    write_bytes(option, path, text.encode("utf-8"))


def write_bytes(option: str, path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` as the module docstring says, or :class:`OutputError`."""
    st = _stat(option, path)
    if st is not None and _refused_kind(st.st_mode):
        raise OutputError(f"{option} {path}: is {_refused_kind(st.st_mode)}")
    try:
        if st is not None and _through(path, st):
            _write_through(path, data)
        else:
            _replace(_real(path), data, st)
    except OSError as exc:
        raise OutputError(f"{option} {path}: cannot write: {describe(exc)}") from None


def _write_through(path: Path, data: bytes) -> None:
    # The path may be this process's own stdout: what print() buffered goes first.
    sys.stdout.flush()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOCTTY)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def _replace(path: Path, data: bytes, old: os.stat_result | None) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            # mkstemp makes the file 0600; keep what the old file had, else the umask's.
            os.fchmod(fd, stat.S_IMODE(old.st_mode) if old is not None else 0o666 & ~_umask())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask

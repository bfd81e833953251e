"""The QEMU a board needs: the host's own, or QEMU >= 10 unpacked from Debian backports.

The SabreLite boards run on any ``qemu-system-arm`` (7.2 in bookworm has them).  The
i.MX8MP EVK machine (``imx8mp-evk``) first appeared in QEMU 10.0.  :func:`find` uses an
installed ``qemu-system-aarch64`` when its ``-machine help`` lists the machine; otherwise
it fetches ``qemu-system-arm`` (the package that holds the aarch64 binary) of the newest
version the host's Debian suite or its backports offer, with the private apt of
:mod:`.archive` (host architecture, the host's own suite), and unpacks it with
``dpkg-deb -x`` under ``<cache>/qemu-<version>/``: nothing is installed.  Shared libraries
the host lacks (``ldd`` says "not found" under the unpacked tree's library path) are
fetched the same way from the package's Depends and unpacked into the same tree; QEMU then
runs with ``LD_LIBRARY_PATH`` pointing there.  ``qemu-system-data`` (firmware, keymaps) is
not needed: the board boots the kernel directly.

:class:`QemuUnavailable` (an :class:`~.archive.ArchiveUnreachable`: the target skips) says
why no QEMU with the machine can be had; any other failure is an
:class:`~.archive.ImageError`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

import attrs

from conformance.live.qemu_fec.archive import (
    ArchiveUnreachable,
    ImageError,
    PrivateApt,
    extract,
)

PACKAGE = "qemu-system-arm"
COMPLETE = ".complete"
_MIN_MAJOR = {"imx8mp-evk": 10}


class QemuUnavailable(ArchiveUnreachable):
    """No QEMU that has the machine: neither installed nor in the archive."""


@attrs.frozen
class Qemu:
    """A QEMU binary and the environment it runs in."""

    binary: str
    env: Mapping[str, str] = attrs.field(factory=dict)
    version: str = ""

    def environ(self) -> dict[str, str]:
        return {**os.environ, **self.env}


def has_machine(binary: str, machine: str, env: Mapping[str, str] | None = None) -> bool:
    """Whether ``binary -machine help`` lists ``machine``."""
    try:
        done = subprocess.run([binary, "-machine", "help"], capture_output=True, text=True,
                              env={**os.environ, **(env or {})}, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and re.search(rf"^{re.escape(machine)}\s", done.stdout,
                                              re.M) is not None


def host_codename(os_release: str = "/etc/os-release") -> str:
    try:
        text = Path(os_release).read_text()
    except OSError as exc:
        raise ImageError(f"{os_release}: {exc}") from exc
    match = re.search(r"^VERSION_CODENAME=\"?([a-z]+)", text, re.M)
    if not match:
        raise ImageError(f"{os_release} names no VERSION_CODENAME")
    return match.group(1)


def host_arch() -> str:
    done = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True,
                          check=False)
    if done.returncode:
        raise ImageError(f"dpkg --print-architecture: {done.stderr.strip()}")
    return done.stdout.strip()


def find(machine: str, binary: str, cache: Path) -> Qemu:
    """A QEMU whose ``binary`` (``qemu-system-arm``, ``qemu-system-aarch64``) has
    ``machine``: the installed one, else one unpacked from the archive (see the module)."""
    installed = shutil.which(binary)
    if installed and has_machine(installed, machine):
        return Qemu(installed)
    if machine not in _MIN_MAJOR:
        raise ImageError(f"{binary} on PATH has no machine {machine!r}")
    return unpacked(machine, binary, cache)


def _major(version: str) -> int:
    match = re.match(r"(?:\d+:)?(\d+)", version)
    return int(match.group(1)) if match else 0


def unpacked(machine: str, binary: str, cache: Path) -> Qemu:
    """QEMU from the host suite or its backports, unpacked under ``cache``."""
    codename = host_codename()
    apt = PrivateApt(cache / f"apt-qemu-{codename}", suite=(codename, f"{codename}-backports"),
                     arch=host_arch())
    try:
        apt.update()
        version = max(apt.versions(PACKAGE), key=_version_key, default="")
    except ArchiveUnreachable:
        done = sorted((p.parent for p in cache.glob(f"qemu-*/{COMPLETE}")),
                      key=lambda p: p.stat().st_mtime)
        if done:
            return _from_tree(done[-1], machine, binary)
        raise
    need = _MIN_MAJOR[machine]
    if _major(version) < need:
        raise QemuUnavailable(f"machine {machine} needs QEMU >= {need}: {binary} on PATH "
                              f"lacks it and {codename}(-backports) offers {PACKAGE} "
                              f"{version or 'in no version'}")
    tree = cache / f"qemu-{version.split(':')[-1]}"
    if not (tree / COMPLETE).exists():
        _fetch(apt, version, tree, binary)
    return _from_tree(tree, machine, binary)


def _version_key(version: str) -> tuple[int, str]:
    return (_major(version), version)


def _fetch(apt: PrivateApt, version: str, tree: Path, binary: str) -> None:
    if tree.exists():
        shutil.rmtree(tree)
    debs = tree / "debs"
    for deb in apt.download([f"{PACKAGE}={version}"], debs):
        extract(deb, tree / "root")
    missing = _missing_libs(tree, binary)
    if missing:
        # The libraries this suite lacks: fetch the package's library Depends (not their
        # own Depends: the host has those, or ldd says so below) into the same tree.
        libs = [d for d in apt.depends(f"{PACKAGE}={version}")
                if d.startswith("lib") and not d.startswith("<")]
        for deb in apt.download(libs, debs / "libs"):
            extract(deb, tree / "root")
        missing = _missing_libs(tree, binary)
        if missing:
            raise ImageError(f"{binary} {version} needs {', '.join(missing)}, which neither "
                             "the host nor the archive's library packages provide")
    shutil.rmtree(debs)
    (tree / COMPLETE).write_text(version + "\n")


def _libpath(tree: Path) -> str:
    root = tree / "root"
    dirs = [p for p in (root / "usr/lib").glob("*-linux-gnu*") if p.is_dir()]
    dirs += [p for p in (root / "lib").glob("*-linux-gnu*") if p.is_dir()]
    return ":".join(str(p) for p in dirs)


def _missing_libs(tree: Path, binary: str) -> list[str]:
    exe = tree / "root/usr/bin" / binary
    if not exe.exists():
        raise ImageError(f"{PACKAGE} has no usr/bin/{binary}")
    done = subprocess.run(["ldd", str(exe)], capture_output=True, text=True,
                          env={**os.environ, "LD_LIBRARY_PATH": _libpath(tree)}, check=False)
    return re.findall(r"^\s*(\S+) => not found", done.stdout, re.M)


def _from_tree(tree: Path, machine: str, binary: str) -> Qemu:
    env = {"LD_LIBRARY_PATH": _libpath(tree)} if _libpath(tree) else {}
    exe = str(tree / "root/usr/bin" / binary)
    missing = _missing_libs(tree, binary)
    if missing:
        raise ImageError(f"{exe}: shared libraries not found: {', '.join(missing)}")
    if not has_machine(exe, machine, env):
        raise ImageError(f"{exe} lists no machine {machine!r}")
    return Qemu(exe, env, tree.name.removeprefix("qemu-"))

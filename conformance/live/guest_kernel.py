"""Debian's exact amd64 kernels for the guest targets (``--target veth@7.3.4``).

A version (``7.3.4``, or the full ``uname -r`` ``7.3.4+deb13-amd64``) names one Debian
kernel ABI, ``<version>+deb13-amd64``.  Which packages carry it depends on the series:
trixie-backports' 7.x splits it into ``linux-binary-<abi>`` (the image) and
``linux-modules-<abi>``; trixie's 6.12 and backports' 6.18 ship one ``linux-image-<abi>``
(:func:`packages_for`).  They are downloaded with the private apt of
:mod:`conformance.live.qemu_fec.archive` (the host's apt state is never touched, nothing
is installed) and unpacked with ``dpkg-deb -x`` into ``<cache>/kernels/<abi>/``
(``<cache>`` is ``$RX_ORACLE_CACHE``, else ``~/.cache/rx-oracle``), as qemu-fec caches its
guests.  A completed directory is reused without asking the archive.

:class:`~conformance.live.qemu_fec.archive.ArchiveUnreachable` means the archive could
not be reached; :class:`~conformance.live.qemu_fec.archive.ImageError` anything else
(a version the archive does not have, a package without a kernel image).
"""

from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

from conformance.live.qemu_fec.archive import ImageError, PrivateApt, extract

#: The suites that carry Debian 13's kernels: the release and its backports.
SUITES = ("trixie", "trixie-backports")
ARCH = "amd64"
ABI_SUFFIX = "+deb13-amd64"
COMPLETE = ".complete"
#: ``7.3.4`` or ``7.3.4+deb13-amd64`` (what ``--target KIND@VERSION`` accepts).
VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)(\+deb\d+-amd64)?")


def abi(version: str) -> str:
    """The kernel ABI (``uname -r``) a version names; ValueError for one that does not parse."""
    match = VERSION.fullmatch(version)
    if match is None:
        raise ValueError(f"{version!r} is not a kernel version: use X.Y.Z "
                         f"(e.g. 7.3.4) or X.Y.Z{ABI_SUFFIX}")
    return match.group(0) if match.group(4) else version + ABI_SUFFIX


def packages_for(kernel_abi: str, known: Iterable[str] = ()) -> list[str]:
    """The packages that carry ``kernel_abi``: ``linux-binary`` + ``linux-modules`` where
    the archive has them (``known``: the names it offers; without it, by series: 7.x and
    later are split), else the one ``linux-image``."""
    names = set(known)
    split = [f"linux-binary-{kernel_abi}", f"linux-modules-{kernel_abi}"]
    if names:
        if all(n in names for n in split):
            return split
        if f"linux-image-{kernel_abi}" in names:
            return [f"linux-image-{kernel_abi}"]
        raise ImageError(f"the archive ({', '.join(SUITES)}, {ARCH}) has no kernel "
                         f"{kernel_abi}; it has: {', '.join(archive_versions(names)) or 'none'}")
    return split if int(kernel_abi.split(".")[0]) >= 7 else [f"linux-image-{kernel_abi}"]


def archive_versions(names: Iterable[str]) -> list[str]:
    """The kernel ABIs among package names (``linux-image-…``/``linux-binary-…``), sorted
    by version."""
    pattern = re.compile(r"linux-(?:image|binary)-(\d+\.\d+\.\d+" + re.escape(ABI_SUFFIX) + ")")
    found = {m.group(1) for n in names if (m := pattern.fullmatch(n))}
    return sorted(found, key=lambda v: tuple(int(x) for x in v.split("+")[0].split(".")))


def cache_root() -> Path:
    from conformance.live.probe import cache_dir

    return cache_dir() / "kernels"


@attrs.frozen
class GuestKernel:
    """An unpacked kernel: ``root`` holds ``boot/`` and ``usr/lib/modules/<abi>/``."""

    abi: str
    root: Path

    @property
    def vmlinuz(self) -> Path:
        for path in (self.root / "boot" / f"vmlinuz-{self.abi}",
                     self.root / "usr/lib/modules" / self.abi / "vmlinuz"):
            if path.exists():
                return path
        raise ImageError(f"no vmlinuz for {self.abi} under {self.root}")

    @property
    def complete(self) -> bool:
        return (self.root / COMPLETE).exists()


def cached(root: Path | None = None) -> list[str]:
    """The kernel ABIs unpacked in the cache."""
    root = root or cache_root()
    return archive_versions(f"linux-image-{p.parent.name}" for p in root.glob(f"*/{COMPLETE}"))


def private_apt(root: Path | None = None) -> PrivateApt:
    return PrivateApt((root or cache_root()) / "apt", SUITES, ARCH)


def available(root: Path | None = None) -> list[str]:
    """The kernel ABIs the archive offers (refreshes the private lists when stale)."""
    apt = private_apt(root)
    apt.update()
    return archive_versions(_pkgnames(apt))


def _pkgnames(apt: PrivateApt) -> list[str]:
    return [n for prefix in ("linux-image-", "linux-binary-", "linux-modules-")
            for n in apt._run("apt-cache", "pkgnames", prefix).split()]


def kernel(version: str, root: Path | None = None) -> tuple[GuestKernel, bool]:
    """The kernel ``version`` names, unpacked; downloads it on first use.  Returns the
    kernel and whether it had to be fetched."""
    root = root or cache_root()
    k = GuestKernel(abi(version), root / abi(version))
    if k.complete:
        return k, False
    apt = private_apt(root)
    apt.update()
    packages = packages_for(k.abi, _pkgnames(apt))
    shutil.rmtree(k.root, ignore_errors=True)
    debs = root / f".debs-{k.abi}"
    shutil.rmtree(debs, ignore_errors=True)
    try:
        for deb in apt.download(packages, debs):
            extract(deb, k.root)
    finally:
        shutil.rmtree(debs, ignore_errors=True)
    k.vmlinuz  # noqa: B018 -- raises ImageError when the packages hold no image
    if not (k.root / "usr/lib/modules" / k.abi).is_dir():
        raise ImageError(f"{', '.join(packages)}: no usr/lib/modules/{k.abi}")
    (k.root / COMPLETE).write_text(" ".join(packages) + "\n")
    return k, True


# --- rx-oracle kernels ------------------------------------------------------------------

def add_parser(subparsers: Any) -> None:
    """Add ``kernels`` to the ``rx-oracle`` sub-commands."""
    subparsers.add_parser(
        "kernels", help="list the Debian kernels KIND@VERSION can boot, and the cached ones",
        description="List the amd64 kernels of Debian's trixie and trixie-backports (what "
                    "--target veth@VERSION can boot), marking those unpacked in the cache "
                    "and those whose series the model describes.")


def main(_args: Any) -> int:
    """One line per kernel: its version, ``cached``, ``model`` (a series the model knows)."""
    from conformance.live.qemu_fec.archive import ArchiveUnreachable
    from reference.kernel import SUPPORTED

    have = cached()
    try:
        offered = available()
    except (ArchiveUnreachable, ImageError) as exc:
        print(f"rx-oracle kernels: {exc} (listing the cached kernels only)", file=sys.stderr)
        offered = []
    for version in archive_versions(f"linux-image-{v}" for v in {*offered, *have}):
        major, minor = (int(x) for x in version.split(".")[:2])
        marks = [m for m, on in (("cached", version in have),
                                 ("model", (major, minor) in SUPPORTED)) if on]
        print(f"{version.removesuffix(ABI_SUFFIX):<12} {version:<24} {' '.join(marks)}")
    return 0

"""Guest packages from the Debian archive through a private apt configuration.

The host's apt state is never touched: lists, caches and the (empty) dpkg status live in
``<cache>/apt``, the architecture is set there (``APT::Architecture``) so no
``dpkg --add-architecture`` is needed, and packages are only downloaded (``apt-get
download``), never installed.  The archive's address is the one the host's own apt
configuration already uses: nothing here names a mirror.

:class:`ArchiveUnreachable` means the archive could not be reached (the target then skips
with that reason); any other failure is an :class:`ImageError`.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

SUITE = "trixie"
ARCH = "armhf"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
#: Lists younger than this are not refreshed (versions drift; a day is fresh enough).
LISTS_MAX_AGE = 24 * 3600
_FETCH_ERRORS = re.compile(r"(Could not resolve|Failed to fetch|Temporary failure|"
                           r"Unable to connect|Connection (failed|timed out|refused)|"
                           r"Network is unreachable|No route to host)", re.I)


class ImageError(Exception):
    """Building the guest failed for a reason other than the archive being unreachable."""


class ArchiveUnreachable(ImageError):
    """The Debian archive could not be reached: the target skips with this reason."""


def host_mirror(sources: tuple[str, ...] = ("/etc/apt/sources.list.d/debian.sources",
                                            "/etc/apt/sources.list")) -> str:
    """The Debian archive URI the host's apt already uses (deb822 or one-line format)."""
    for name in sources:
        try:
            text = Path(name).read_text()
        except OSError:
            continue
        for match in re.finditer(r"^\s*(?:URIs:\s*|deb\s+(?:\[[^]]*\]\s+)?)(\S+)", text, re.M):
            uri = match.group(1).rstrip("/")
            if uri.endswith("/debian"):
                return uri
    raise ArchiveUnreachable("no Debian archive in the host's apt sources "
                             f"({', '.join(sources)})")


class PrivateApt:
    """``apt-get``/``apt-cache`` for ``arch`` packages of ``suite`` (one, or several as a
    tuple: e.g. a suite and its backports) under ``root``."""

    def __init__(self, root: Path, suite: str | tuple[str, ...] = SUITE,
                 arch: str = ARCH) -> None:
        self.root = root
        self.suites = (suite,) if isinstance(suite, str) else suite
        self.suite, self.arch = self.suites[0], arch
        for sub in ("state/lists/partial", "cache/archives/partial"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        (root / "status").touch()
        self.conf = root / "apt.conf"

    def configure(self) -> None:
        mirror = host_mirror()
        (self.root / "sources.list").write_text("".join(
            f"deb [signed-by={KEYRING}] {mirror} {suite} main\n" for suite in self.suites))
        r = self.root
        self.conf.write_text(
            f'Dir::Etc::SourceList "{r}/sources.list";\n'
            'Dir::Etc::SourceParts "/nonexistent";\n'
            f'Dir::State "{r}/state";\nDir::State::status "{r}/status";\n'
            f'Dir::Cache "{r}/cache";\n'
            f'APT::Architecture "{self.arch}";\nAPT::Architectures {{ "{self.arch}"; }};\n'
            'Acquire::Languages "none";\nAcquire::Retries "2";\n'
            'Acquire::http::Timeout "20";\n')

    def _run(self, *args: str, cwd: Path | None = None) -> str:
        env = dict(os.environ, APT_CONFIG=str(self.conf), LC_ALL="C")
        done = subprocess.run(list(args), capture_output=True, text=True, env=env, cwd=cwd,
                              check=False)
        if done.returncode or (args[0] == "apt-get" and _FETCH_ERRORS.search(done.stderr)):
            text = (done.stderr or done.stdout).strip()
            if _FETCH_ERRORS.search(text):
                raise ArchiveUnreachable(f"the Debian archive cannot be reached: "
                                         f"{text.splitlines()[-1]}")
            raise ImageError(f"{' '.join(args)}: {text[-1500:]}")
        return done.stdout

    def lists_age(self) -> float:
        lists = [p for p in (self.root / "state/lists").glob("*_Packages*") if p.is_file()]
        if not lists:
            return float("inf")
        return time.time() - min(p.stat().st_mtime for p in lists)

    def update(self, max_age: float = LISTS_MAX_AGE) -> None:
        self.configure()
        if self.lists_age() < max_age:
            return
        self._run("apt-get", "update", "-q")

    def depends(self, package: str) -> list[str]:
        out = self._run("apt-cache", "depends", package)
        return re.findall(r"^\s*\|?Depends:\s*(\S+)", out, re.M)

    def version(self, package: str) -> str:
        out = self._run("apt-cache", "show", "--no-all-versions", package)
        match = re.search(r"^Version:\s*(\S+)", out, re.M)
        if not match:
            raise ImageError(f"no version for {package}")
        return match.group(1)

    def versions(self, package: str) -> list[str]:
        """Every version of ``package`` the configured suites offer."""
        out = self._run("apt-cache", "madison", package)
        return [cols[1].strip() for line in out.splitlines()
                if len(cols := line.split("|")) >= 3 and cols[0].strip() == package
                and "Packages" in cols[2]]

    def download(self, packages: list[str], into: Path) -> list[Path]:
        into.mkdir(parents=True, exist_ok=True)
        self._run("apt-get", "download", "-q", *packages, cwd=into)
        return sorted(into.glob("*.deb"))


def extract(deb: Path, into: Path) -> None:
    """``dpkg-deb -x``: unpack only, nothing is installed."""
    into.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["dpkg-deb", "-x", str(deb), str(into)], capture_output=True,
                          text=True, check=False)
    if done.returncode:
        raise ImageError(f"dpkg-deb -x {deb.name}: {done.stderr.strip()}")

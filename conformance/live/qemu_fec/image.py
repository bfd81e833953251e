"""The guest: a Debian kernel, its fec modules and a tiny userland, cached by version.

Two guest flavours (:data:`FLAVOURS`): ``armhf`` (the i.MX6Q SabreLite boards, kernel
``linux-image-armmp``) and ``arm64`` (the i.MX8MP EVK, kernel ``linux-image-arm64``).
:func:`kernel` resolves the kernel through the flavour's meta-package at run time
(versions drift and old ones leave the pool), downloads it and the userland (busybox,
bpftool, ethtool and the libraries they need, found through their Depends) with the private
apt of :mod:`.archive`, and unpacks them under ``<cache>/qemu-fec/<kernel-version>/`` (the
version names the flavour: ``6.12.117+deb13-armmp``, ``6.12.117+deb13-arm64``).  A
completed directory is reused; when the archive cannot be reached the newest completed one
of the flavour is used, and without one the target skips.

:func:`initramfs` writes a gzip'd ``newc`` cpio in Python (no cpio, depmod or xz tools):
busybox, bpftool, ethtool, their libraries, ``fec.ko`` with the closure of its
``depends=`` (read from each module's ``.modinfo``), the providers the board's device
tree waits for (``gpio-mxc``, ``nvmem-imx-ocotp``), the probe object and the guest's init
script.
"""

from __future__ import annotations

import gzip
import io
import lzma
import os
import re
import shutil
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

import attrs

from conformance.live.qemu_fec.archive import ArchiveUnreachable, ImageError, PrivateApt, extract

USERLAND = ("busybox-static", "bpftool", "ethtool")
COMPLETE = ".complete"


@attrs.frozen
class Flavour:
    """One Debian architecture's guest: where its pieces are and what the board needs.

    ``modules`` load in this order after their dependencies: the device tree's GPIO and
    OCOTP providers first (fec defers its probe until they exist), then the driver."""

    arch: str
    meta_package: str
    libdir: str
    loader: str
    dtb: str
    modules: tuple[str, ...]
    #: the suffix of the kernel's version string (``uname -r``) for this flavour
    suffix: str


FLAVOURS = {
    "armhf": Flavour("armhf", "linux-image-armmp", "usr/lib/arm-linux-gnueabihf",
                     "ld-linux-armhf.so.3", "imx6q-sabrelite.dtb",
                     ("gpio-mxc", "nvmem-imx-ocotp", "fec"), "-armmp"),
    # arm64: gpio-mxc is built in; the i.MX8MP tree's ENET node names the OCOTP cell
    # holding the MAC address.
    "arm64": Flavour("arm64", "linux-image-arm64", "usr/lib/aarch64-linux-gnu",
                     "ld-linux-aarch64.so.1", "freescale/imx8mp-evk.dtb",
                     ("nvmem-imx-ocotp", "fec"), "-arm64"),
}
ARMHF = FLAVOURS["armhf"]
#: The armhf flavour's values, by their older names.
META_PACKAGE, MODULES, LIBDIR, LOADER, DTB = (ARMHF.meta_package, ARMHF.modules, ARMHF.libdir,
                                              ARMHF.loader, ARMHF.dtb)


@attrs.frozen
class Kernel:
    """An unpacked guest kernel and userland."""

    version: str
    root: Path
    flavour: Flavour = ARMHF

    @property
    def kern(self) -> Path:
        return self.root / "kern"

    @property
    def userland(self) -> Path:
        return self.root / "ufs"

    @property
    def vmlinuz(self) -> Path:
        # linux-image-* puts it in /boot; 7.x's split linux-binary-* beside the modules.
        boot = self.kern / "boot" / f"vmlinuz-{self.version}"
        return boot if boot.exists() else self.modules / "vmlinuz"

    @property
    def modules(self) -> Path:
        return self.kern / "usr/lib/modules" / self.version

    def dtb(self) -> Path:
        want = self.flavour.dtb
        found = sorted(p for p in self.kern.rglob(Path(want).name)
                       if p.as_posix().endswith(want))
        if not found:
            raise ImageError(f"{want} is not in linux-image-{self.version}")
        return found[0]


def cache_root() -> Path:
    from conformance.live.probe import cache_dir

    return cache_dir() / "qemu-fec"


#: Where Debian 13's kernels of every version are: the release and its backports.
VERSIONED_SUITES = ("trixie", "trixie-backports")
#: The binary packages of one kernel version: 7.x splits the image in three (the device
#: trees are in linux-base-*), earlier ones have the one linux-image-*.
_SPLIT = ("linux-binary-", "linux-modules-", "linux-base-")
KERNEL_PACKAGES = ("linux-image-", *_SPLIT)


def versioned_kernel(version: str, root: Path | None = None, flavour: Flavour = ARMHF
                     ) -> Kernel:
    """Debian's kernel ``version`` (``7.3.4``) of ``flavour``, unpacked (downloaded on
    first use); ImageError when the archive has no such kernel for the architecture."""
    root = root or cache_root()
    abi = f"{version}+deb13{flavour.suffix}"
    k = Kernel(abi, root / abi, flavour)
    if (k.root / COMPLETE).exists():
        return k
    apt = PrivateApt(root / f"apt-{flavour.arch}-versions", VERSIONED_SUITES, arch=flavour.arch)
    apt.update()
    names = set(apt._run("apt-cache", "pkgnames", "linux-").split())
    split = [f"{prefix}{abi}" for prefix in _SPLIT]
    if all(n in names for n in split):
        packages = split
    elif f"linux-image-{abi}" in names:
        packages = [f"linux-image-{abi}"]
    else:
        raise ImageError(f"the archive ({', '.join(VERSIONED_SUITES)}, {flavour.arch}) has no "
                         f"kernel {abi}")
    _fetch(apt, packages, k)
    return k


def kernel(root: Path | None = None, flavour: Flavour = ARMHF) -> Kernel:
    """The current Debian kernel of ``flavour``, unpacked (downloaded on first use)."""
    root = root or cache_root()
    # The armhf lists keep their first home (``apt``), so existing caches stay valid.
    apt = PrivateApt(root / ("apt" if flavour is ARMHF else f"apt-{flavour.arch}"),
                     arch=flavour.arch)
    meta = flavour.meta_package
    try:
        apt.update()
        package = next((d for d in apt.depends(meta) if d.startswith("linux-image-")), None)
        if package is None:
            raise ImageError(f"{meta} depends on no linux-image package")
        version = package.removeprefix("linux-image-")
        k = Kernel(version, root / version, flavour)
        if not (k.root / COMPLETE).exists():
            _fetch(apt, [package], k)
        return k
    except ArchiveUnreachable:
        cached = sorted((p.parent for p in root.glob(f"*{flavour.suffix}/{COMPLETE}")),
                        key=lambda p: p.stat().st_mtime)
        if cached:
            return Kernel(cached[-1].name, cached[-1], flavour)
        raise


def _closure(apt: PrivateApt, seeds: Iterable[str]) -> list[str]:
    todo, seen = list(seeds), set()
    while todo:
        name = todo.pop()
        if name in seen or name.startswith("<"):
            continue
        seen.add(name)
        todo += apt.depends(name)
    return sorted(seen)


def _fetch(apt: PrivateApt, packages: list[str], k: Kernel) -> None:
    """The kernel ``packages`` into ``k.kern`` and the userland's closure into
    ``k.userland``; the directory is complete only once both are there."""
    if k.root.exists():
        shutil.rmtree(k.root)
    debs = k.root / "debs"
    got = apt.download([*packages, *_closure(apt, USERLAND)], debs)
    for deb in got:
        extract(deb, k.kern if deb.name.startswith(KERNEL_PACKAGES) else k.userland)
    shutil.rmtree(debs)
    if not k.vmlinuz.exists():
        raise ImageError(f"{', '.join(packages)}: no {k.vmlinuz.name}")
    (k.root / COMPLETE).write_text(" ".join(packages) + "\n")


# --- modules ------------------------------------------------------------------------------

def _norm(name: str) -> str:
    return name.replace("-", "_")


def module_index(modules: Path) -> dict[str, Path]:
    """Module name (``_`` for ``-``) -> its ``.ko``/``.ko.xz`` under ``modules/kernel``."""
    index = {}
    for path in (modules / "kernel").rglob("*.ko*"):
        index[_norm(path.name.split(".ko")[0])] = path
    return index


def module_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    return lzma.decompress(data) if path.name.endswith(".xz") else data


def module_depends(image: bytes) -> list[str]:
    """The ``depends=`` entry of a module's ``.modinfo`` (what modpost recorded)."""
    match = re.search(rb"(?:^|\x00)depends=([^\x00]*)\x00", image)
    if not match or not match.group(1):
        return []
    return [_norm(d) for d in match.group(1).decode().split(",") if d]


def load_order(modules: Path, wanted: Iterable[str] = ARMHF.modules) -> list[tuple[str, bytes]]:
    """``wanted`` and everything they depend on, each after its dependencies."""
    index = module_index(modules)
    order: list[tuple[str, bytes]] = []
    done: set[str] = set()

    def visit(name: str, chain: tuple[str, ...]) -> None:
        if name in done:
            return
        if name in chain:
            raise ImageError(f"module dependency cycle: {' -> '.join((*chain, name))}")
        path = index.get(name)
        if path is None:
            raise ImageError(f"module {name} is not in {modules}")
        image = module_bytes(path)
        for dep in module_depends(image):
            visit(dep, (*chain, name))
        done.add(name)
        order.append((name, image))

    for name in wanted:
        visit(_norm(name), ())
    return order


# --- cpio ---------------------------------------------------------------------------------

class Cpio:
    """A ``newc`` archive (what the kernel unpacks as an initramfs), built in memory."""

    def __init__(self) -> None:
        self.buf = io.BytesIO()
        self.ino = 1

    def _entry(self, name: str, mode: int, data: bytes = b"") -> None:
        encoded = name.encode() + b"\x00"
        fields = (self.ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(encoded), 0)
        header = b"070701" + b"".join(b"%08X" % f for f in fields)
        self.ino += 1
        self.buf.write(header + encoded)
        self.buf.write(b"\x00" * (-(len(header) + len(encoded)) % 4))
        self.buf.write(data)
        self.buf.write(b"\x00" * (-len(data) % 4))

    def dir(self, name: str) -> None:
        self._entry(name, stat.S_IFDIR | 0o755)

    def file(self, name: str, data: bytes, mode: int = 0o644) -> None:
        self._entry(name, stat.S_IFREG | mode, data)

    def symlink(self, name: str, target: str) -> None:
        self._entry(name, stat.S_IFLNK | 0o777, target.encode())

    def finish(self) -> bytes:
        self._entry("TRAILER!!!", 0)
        return gzip.compress(self.buf.getvalue(), compresslevel=1)


def initramfs(k: Kernel, files: Mapping[str, bytes], init: bytes) -> bytes:
    """The guest's initramfs: userland, modules (``/modules/order``), ``files``, ``/init``."""
    c = Cpio()
    libdir, loader = k.flavour.libdir, k.flavour.loader
    for d in ("bin", "sbin", "dev", "proc", "sys", "tmp", "lib", "usr", "usr/lib", "usr/sbin",
              "usr/bin", libdir, "modules", "etc"):
        c.dir(d)
    libs = k.userland / libdir
    for path in sorted(libs.iterdir()):
        if path.is_symlink():
            c.symlink(f"{libdir}/{path.name}", os.readlink(path))
        elif path.is_file() and ".so" in path.name:
            c.file(f"{libdir}/{path.name}", path.read_bytes(), 0o755)
    c.symlink(f"lib/{loader}", f"../{libdir}/{loader}")
    c.file("bin/busybox", (k.userland / "usr/bin/busybox").read_bytes(), 0o755)
    for tool in ("bpftool", "ethtool"):
        c.file(f"usr/sbin/{tool}", (k.userland / "usr/sbin" / tool).read_bytes(), 0o755)
    order = load_order(k.modules, k.flavour.modules)
    for name, image in order:
        c.file(f"modules/{name}.ko", image)
    c.file("modules/order", "".join(f"{name}\n" for name, _ in order).encode())
    for name, data in files.items():
        c.file(name, data)
    c.file("init", init, 0o755)
    return c.finish()


def legacy_dtb(dtb: bytes) -> bytes:
    """The SabreLite tree with the ENET node's compatible ``fsl,imx6q-fec`` replaced by
    ``fsl,imx27-fec`` (same length): the driver then uses legacy descriptors, no RACC,
    no checksum offload (its imx27 quirks), the spike's way around QEMU garbling frames
    with legacy descriptors and RACC SHIFT16."""
    old, new = b"fsl,imx6q-fec\x00", b"fsl,imx27-fec\x00"
    if dtb.count(old) != 1:
        raise ImageError(f"{DTB}: expected one {old!r}, found {dtb.count(old)}")
    return dtb.replace(old, new)

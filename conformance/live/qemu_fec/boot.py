"""Everything a boot needs, built on the host and cached: the guest probe object, the
initramfs, the device tree of the chosen board variant and the QEMU that has its machine."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import attrs

from conformance.live.probe import SOURCE as PROBE_SOURCE
from conformance.live.qemu_fec import image, qemu
from conformance.live.qemu_fec.archive import ImageError

INIT = Path(__file__).with_name("init.sh")
#: Records and op lists for this many packets per batch (the probe's map sizes).
GUEST_MAX_PKTS = 64
#: The guest probe records no packet bytes: the fec component observes XDP results
#: (verdicts, op return codes, lengths), and transmitted bytes arrive on the wire.
GUEST_FLAGS = ("-DRXO_GUEST", f"-DRXO_MAX_PKTS={GUEST_MAX_PKTS}", "-DRXO_DATA_CAP=0",
               "-DRXO_META_CAP=0")
#: A kernel without BTF (Debian's armhf) cannot resolve the metadata kfuncs: leave them out.
NO_KFUNCS = "-DRXO_NO_KFUNCS"


@attrs.frozen
class Board:
    """A board variant: QEMU's machine and binary, the guest flavour, and whether the
    device tree is patched to ``fsl,imx27-fec`` (legacy descriptors)."""

    machine: str
    qemu: str
    flavour: image.Flavour
    legacy: bool = False
    #: the guest kernel has BTF, so the probe calls the metadata kfuncs; it is loaded
    #: bound to eth0 (``xdpmeta_dev``), so the kernel asks fec's ``xdp_metadata_ops``
    #: (FEC-XDP-001)
    kfuncs: bool = False


BOARDS = {
    "sabrelite": Board("sabrelite", "qemu-system-arm", image.FLAVOURS["armhf"]),
    "sabrelite-legacy": Board("sabrelite", "qemu-system-arm", image.FLAVOURS["armhf"], True),
    # QEMU >= 10.0 (qemu.find fetches it from backports where the host's is older)
    "imx8mp-evk": Board("imx8mp-evk", "qemu-system-aarch64", image.FLAVOURS["arm64"],
                        kfuncs=True),
}


@attrs.frozen
class BootFiles:
    version: str
    machine: str
    legacy: bool
    vmlinuz: Path
    dtb: Path
    initrd: Path
    qemu: qemu.Qemu = attrs.field(factory=lambda: qemu.Qemu("qemu-system-arm"))


def missing_tools(qemu: str | None = "qemu-system-arm") -> str | None:
    """Why the host cannot build or boot the guest, or None.  ``qemu`` None: the board's
    QEMU may come from the archive (:func:`.qemu.find`), it need not be installed."""
    if os.geteuid() != 0:
        return "qemu-fec needs root (a network namespace for QEMU)"
    tools = (("clang", "clang"), ("ip", "iproute2"), ("apt-get", "apt"),
             ("dpkg-deb", "dpkg"))
    for tool, pkg in ((qemu, "qemu-system-arm"), *tools) if qemu else tools:
        if shutil.which(tool) is None:
            return f"qemu-fec needs {tool!r} on PATH (apt: {pkg})"
    if not os.path.exists("/usr/include/bpf/bpf_helpers.h"):
        return "qemu-fec needs libbpf headers (apt: libbpf-dev)"
    return None


def guest_probe(cache: Path, kfuncs: bool = False) -> Path:
    """``rxo_probe.bpf.c`` built for the guest (UAPI headers, no vmlinux.h; the metadata
    kfuncs only with ``kfuncs``: a kernel without BTF cannot resolve them), cached."""
    flags = GUEST_FLAGS if kfuncs else (*GUEST_FLAGS, NO_KFUNCS)
    digest = hashlib.sha256(PROBE_SOURCE.read_bytes() + " ".join(flags).encode())
    obj = cache / f"probe-{digest.hexdigest()[:16]}.bpf.o"
    if obj.exists():
        return obj
    cache.mkdir(parents=True, exist_ok=True)
    arch_inc = next((str(p) for p in Path("/usr/include").glob("*-linux-gnu*")
                     if (p / "asm/types.h").exists()), "/usr/include")
    tmp = obj.with_suffix(f".o.{os.getpid()}")
    done = subprocess.run(["clang", "-O2", "-g", "-target", "bpf", "-mcpu=v3", *flags,
                           f"-I{arch_inc}", "-c", str(PROBE_SOURCE), "-o", str(tmp)],
                          capture_output=True, text=True, check=False)
    if done.returncode:
        raise ImageError(f"clang (guest probe): {done.stderr[-2000:]}")
    tmp.rename(obj)
    return obj


def prepare(board: str = "sabrelite", cache: Path | None = None,
            version: str | None = None) -> BootFiles:
    """Kernel, device tree and initramfs for ``board`` (see :data:`BOARDS`); ``version``
    names Debian's kernel (``7.3.4``), else the suite's current one."""
    if board not in BOARDS:
        raise ImageError(f"unknown board {board!r}: {', '.join(BOARDS)}")
    spec = BOARDS[board]
    machine, legacy = spec.machine, spec.legacy
    cache = cache or image.cache_root()
    emulator = qemu.find(machine, spec.qemu, cache)
    k = (image.versioned_kernel(version, cache, spec.flavour) if version
         else image.kernel(cache, spec.flavour))
    probe = guest_probe(cache, spec.kfuncs)
    init = INIT.read_bytes()
    files = {"probe.o": probe.read_bytes()}
    if spec.kfuncs:
        files["probe.devbound"] = b"eth0\n"  # init.sh: load with xdpmeta_dev eth0
    key = hashlib.sha256(b"".join(files.values()) + "".join(files).encode() + init
                         + " ".join(spec.flavour.modules).encode())
    initrd = k.root / f"initrd-{key.hexdigest()[:16]}.gz"
    if not initrd.exists():
        tmp = initrd.with_suffix(f".{os.getpid()}")
        tmp.write_bytes(image.initramfs(k, files, init))
        tmp.rename(initrd)
    dtb = k.dtb()
    if legacy:
        patched = k.root / "imx6q-sabrelite-imx27-fec.dtb"
        if not patched.exists():
            patched.write_bytes(image.legacy_dtb(dtb.read_bytes()))
        dtb = patched
    return BootFiles(k.version, machine, legacy, k.vmlinuz, dtb, initrd, emulator)

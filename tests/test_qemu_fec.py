"""The qemu-fec target's set-up pieces (no boot) and its guest lifecycle (boots QEMU;
skipped without root, qemu-system-arm, clang or a reachable Debian archive)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conformance.live.qemu_fec import image
from conformance.live.qemu_fec.archive import ArchiveUnreachable, ImageError, host_mirror


@pytest.mark.rule("FEC-RX-001")
def test_cpio_is_newc_that_cpio_lists(tmp_path: Path) -> None:
    """The initramfs writer's archive, read back by GNU cpio (an independent reader)."""
    if shutil.which("cpio") is None:
        pytest.skip("cpio is not installed (apt: cpio)")
    c = image.Cpio()
    c.dir("bin")
    c.file("bin/x", b"abc", 0o755)
    c.symlink("y", "bin/x")
    raw = __import__("gzip").decompress(c.finish())
    listing = subprocess.run(["cpio", "-it", "--quiet"], input=raw, capture_output=True,
                             check=True).stdout.decode().split()
    assert listing == ["bin", "bin/x", "y"]
    subprocess.run(["cpio", "-id", "--quiet"], input=raw, cwd=tmp_path, check=True)
    assert (tmp_path / "bin/x").read_bytes() == b"abc"
    assert os.readlink(tmp_path / "y") == "bin/x"


@pytest.mark.rule("FEC-RX-001")
def test_module_depends_from_modinfo() -> None:
    blob = b"\x7fELF...\x00license=GPL\x00depends=libphy,fixed-phy\x00intree=Y\x00"
    assert image.module_depends(blob) == ["libphy", "fixed_phy"]
    assert image.module_depends(b"\x00depends=\x00") == []


@pytest.mark.rule("FEC-RX-001")
def test_legacy_dtb_swaps_the_compatible_only() -> None:
    dtb = b"head\x00fsl,imx6q-fec\x00tail"
    assert image.legacy_dtb(dtb) == b"head\x00fsl,imx27-fec\x00tail"
    with pytest.raises(ImageError):
        image.legacy_dtb(b"nothing here")


@pytest.mark.rule("FEC-RX-001")
def test_host_mirror_reads_both_source_formats(tmp_path: Path) -> None:
    deb822 = tmp_path / "debian.sources"
    deb822.write_text("Types: deb\nURIs: http://example.invalid/debian\nSuites: x\n")
    line = tmp_path / "sources.list"
    line.write_text("deb [signed-by=/k.gpg] http://example.invalid/debian/ x main\n")
    assert host_mirror((str(deb822),)) == "http://example.invalid/debian"
    assert host_mirror((str(line),)) == "http://example.invalid/debian"
    with pytest.raises(ArchiveUnreachable):
        host_mirror((str(tmp_path / "none"),))


# --- the guest lifecycle --------------------------------------------------------------------

def _boot_files() -> object:
    from conformance.live.qemu_fec import boot

    reason = boot.missing_tools()
    if reason:
        pytest.skip(reason)
    try:
        return boot.prepare("sabrelite")
    except ArchiveUnreachable as exc:
        pytest.skip(str(exc))


@pytest.mark.rule("FEC-RX-001")
def test_guest_boots_answers_and_is_gone_after_close() -> None:
    from conformance.live.qemu_fec import guest

    files = _boot_files()
    g = guest.Guest(kernel=files.vmlinuz, dtb=files.dtb, initrd=files.initrd)  # type: ignore[attr-defined]
    run_dir, ns = g.dir, g.ns
    try:
        assert guest.running_qemus(run_dir)
        assert g.command("cat /sys/class/net/eth0/device/driver/module/drivers/*/uevent "
                         ">/dev/null; basename $(readlink /sys/class/net/eth0/device/driver)"
                         )[-1] == "fec"
    finally:
        g.close()
    assert not guest.running_qemus(run_dir)
    assert not run_dir.exists()
    assert ns is not None and not Path("/run/netns", ns).exists()


@pytest.mark.rule("FEC-RX-001")
def test_sigkilled_run_leaves_nothing_after_the_next_sweep() -> None:
    from conformance.live.qemu_fec import guest

    files = _boot_files()
    script = textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from conformance.live.qemu_fec import guest
        g = guest.Guest(kernel=Path({str(files.vmlinuz)!r}), dtb=Path({str(files.dtb)!r}),
                        initrd=Path({str(files.initrd)!r}))
        print("UP", g.dir, g.ns, flush=True)
        time.sleep(600)
    """)  # type: ignore[attr-defined]
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": os.getcwd()})
    try:
        assert child.stdout is not None
        line = child.stdout.readline().split()
        assert line and line[0] == "UP", line
        run_dir, ns = Path(line[1]), line[2]
        assert guest.running_qemus(run_dir)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        deadline = time.monotonic() + 10
        while guest.running_qemus(run_dir) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not guest.running_qemus(run_dir), "QEMU outlived its SIGKILL'd parent"
        swept = guest.sweep()
        assert str(run_dir) in swept and ns in swept
        assert not run_dir.exists() and not Path("/run/netns", ns).exists()
    finally:
        if child.poll() is None:
            child.kill()

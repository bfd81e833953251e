"""``--target KIND@VERSION``: the live targets in a QEMU guest on Debian's exact kernel.

Unit tests (no network, no QEMU): the spec's parsing, the kernel's package names, the
accelerator's choice, the guest's command line and the sweep of a dead run's leftovers.
Live tests boot a guest through ``rx-oracle conformance`` (one boot per run) and check
that the rules were checked and passed, and that the run leaves no process or directory
behind; they skip only when QEMU/vng are missing or the archive cannot be reached.
Under TCG (no usable KVM, e.g. kvm-pvm) each takes a few minutes.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from guests import kernels_or_skip

from conformance.live import guest_kernel, vm
from conformance.live.qemu_fec.archive import ImageError
from conformance.targets.base import (
    TargetSpec,
    TargetSpecError,
    TargetUnavailable,
    load_target,
    parse_target_spec,
)

# --- spec parsing ---------------------------------------------------------------------


@pytest.mark.parametrize(("spec", "parsed"), [
    ("veth@7.3.4", TargetSpec("veth", version="7.3.4")),
    ("tun@6.12.117", TargetSpec("tun", version="6.12.117")),
    ("zcrx-live@7.3.4+deb13-amd64", TargetSpec("zcrx-live", version="7.3.4+deb13-amd64")),
    ("veth@host", TargetSpec("veth")),
    ("veth", TargetSpec("veth")),
    ("exec:./t --at=x@y", TargetSpec("exec", "./t --at=x@y", ("./t", "--at=x@y"))),
])
def test_parse(spec: str, parsed: TargetSpec) -> None:
    assert parse_target_spec(spec) == parsed


@pytest.mark.parametrize(("spec", "message"), [
    ("veth@7.3", "not a kernel version"),
    ("veth@", "not a kernel version"),
    ("veth@7.3.4-rc1", "not a kernel version"),
    ("tun@6.1.150", "6.1 is not a version the model describes"),
    ("iface@7.3.4", "only veth, tun, zcrx-live run in a guest"),
    ("reference@7.3.4", "only veth, tun, zcrx-live run in a guest"),
])
def test_parse_refuses(spec: str, message: str) -> None:
    with pytest.raises(TargetSpecError, match=message) as info:
        parse_target_spec(spec)
    assert "\n" not in str(info.value)


def test_cli_bad_version_is_one_usage_line() -> None:
    done = subprocess.run([sys.executable, "-m", "conformance.cli", "conformance",
                           "--target", "veth@7.3"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "veth@7.3" in done.stderr


# --- kernel packages ------------------------------------------------------------------


def test_abi() -> None:
    assert guest_kernel.abi("7.3.4") == "7.3.4+deb13-amd64"
    assert guest_kernel.abi("6.12.117+deb13-amd64") == "6.12.117+deb13-amd64"
    with pytest.raises(ValueError, match="not a kernel version"):
        guest_kernel.abi("7.3")


def test_packages_by_series() -> None:
    assert guest_kernel.packages_for("7.3.4+deb13-amd64") == [
        "linux-binary-7.3.4+deb13-amd64", "linux-modules-7.3.4+deb13-amd64"]
    assert guest_kernel.packages_for("6.12.117+deb13-amd64") == [
        "linux-image-6.12.117+deb13-amd64"]


def test_packages_from_archive_names() -> None:
    known = ["linux-image-6.18.15+deb13-amd64", "linux-binary-7.3.4+deb13-amd64",
             "linux-modules-7.3.4+deb13-amd64", "linux-image-6.12.117+deb13-amd64",
             "linux-image-6.12.117+deb13-cloud-amd64", "linux-image-amd64"]
    assert guest_kernel.packages_for("6.18.15+deb13-amd64", known) == [
        "linux-image-6.18.15+deb13-amd64"]
    assert guest_kernel.packages_for("7.3.4+deb13-amd64", known)[0] == (
        "linux-binary-7.3.4+deb13-amd64")
    assert guest_kernel.archive_versions(known) == [
        "6.12.117+deb13-amd64", "6.18.15+deb13-amd64", "7.3.4+deb13-amd64"]
    with pytest.raises(ImageError, match=r"no kernel 7\.2\.1.*it has: 6\.12"):
        guest_kernel.packages_for("7.2.1+deb13-amd64", known)


# --- the VM's command line and clean-up -----------------------------------------------


def test_accelerator_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RX_ORACLE_GUEST_ACCEL", "tcg")
    accel, why = vm.accelerator()
    assert accel == "tcg" and "40x slower" in why
    monkeypatch.setenv("RX_ORACLE_GUEST_ACCEL", "kvm")
    assert vm.accelerator() == ("kvm", "")


def test_guest_command_line(tmp_path: Path) -> None:
    command = vm.guest_command(["--target", "tun"], tmp_path)
    assert "modprobe -a veth tun >&2" in command
    assert command.endswith("-m conformance.cli serve --target tun")
    argv = vm.vng_argv(tmp_path / "vmlinuz", command, tmp_path, "tcg")
    assert "--disable-kvm" in argv and "--force-9p" in argv
    assert f"--rwdir={tmp_path}" in argv and argv[-2:] == ["--exec", command]
    assert "--disable-kvm" not in vm.vng_argv(tmp_path / "vmlinuz", command, tmp_path, "kvm")


def test_missing_tools_names_the_packages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shutil.which", lambda _name: None)
    monkeypatch.setattr(vm, "vng_path", lambda: None)
    reason = vm.missing_tools()
    assert reason is not None
    for package in ("qemu-system-x86", "kmod", "busybox-static", "udev", "virtme-ng"):
        assert package in reason
    with pytest.raises(TargetUnavailable, match="qemu-system-x86"):
        load_target("tun@7.3.4")


def test_sweep_kills_a_dead_runs_leftovers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    monkeypatch.setattr(vm, "RUN_BASE", tmp_path)
    gone = subprocess.Popen(["true"])
    gone.wait()
    run = tmp_path / str(gone.pid)  # a run whose owner is dead
    run.mkdir()
    # The stray says it is up: right after exec its cmdline can still read empty for a
    # moment (the kernel closes close-on-exec fds, which wakes Popen, before it sets up the
    # new argv), and a real leftover has long been running.
    stray = subprocess.Popen([sys.executable, "-c",
                              "import time; print('up', flush=True); time.sleep(600)",
                              str(run / "qemu.pid")], stdout=subprocess.PIPE, text=True)
    try:
        assert stray.stdout is not None and stray.stdout.readline() == "up\n"
        (run / "qemu.pid").write_text(f"{stray.pid}\n")
        assert vm.sweep() == [str(run)]
        assert stray.wait(timeout=10) == -signal.SIGKILL
        assert not run.exists()
    finally:
        stray.kill()


# --- live: a guest really boots -------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent


def _run(target: str, driver: str, report: Path) -> tuple[subprocess.CompletedProcess[str],
                                                          int]:
    proc = subprocess.Popen([sys.executable, "-m", "conformance.cli", "conformance",
                             "--profile", "ci", "--target", target, "--driver", driver,
                             "--report", str(report)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    out, err = proc.communicate(timeout=1500)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), proc.pid


def _check(target: str, driver: str, rules: tuple[str, ...], tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    done, pid = _run(target, driver, report)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    doc = json.loads(report.read_text())
    version = target.partition("@")[2]
    assert doc["kernel"] == version  # KVER-001: the guest's uname -r, not the host's
    verdicts = {r["rule"]: r for r in doc["rules"]}
    for rule in rules:
        assert verdicts[rule]["verdict"] == "pass" and verdicts[rule]["passed"] > 0, rule
    assert not (vm.RUN_BASE / str(pid)).exists()  # nothing left behind
    assert vm.running(vm.RUN_BASE / str(pid)) == []


TUN_RULES = ("TUN-BUF-001", "TUN-BUF-002", "TUN-KF-001", "XDP-ADJ-006")
VETH_RULES = ("VETH-SKB-001", "VETH-SKB-002", "VETH-SKB-003", "VETH-KF-001", "VETH-KF-002",
              "VETH-KF-003", "VETH-KF-004", "VETH-KF-005", "VETH-KF-006", "VETH-STAT-002",
              "VETH-STAT-003")


@pytest.mark.rule(*TUN_RULES)
def test_tun_in_guest_7_3(tmp_path: Path) -> None:
    kernels_or_skip("7.3.4")
    _check("tun@7.3.4", "tun", TUN_RULES, tmp_path)


@pytest.mark.rule(*VETH_RULES)
def test_veth_in_guest_6_12(tmp_path: Path) -> None:
    kernels_or_skip("6.12.117")
    _check("veth@6.12.117", "veth", VETH_RULES, tmp_path)


def test_sigkill_leaves_nothing_after_sweep(tmp_path: Path) -> None:
    """A suite killed mid-boot: its guest goes (stdin EOF, PDEATHSIG), and what is left
    the next run's sweep removes."""
    kernels_or_skip("7.3.4")
    proc = subprocess.Popen([sys.executable, "-m", "conformance.cli", "conformance",
                             "--target", "tun@7.3.4", "--driver", "tun"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    run = vm.RUN_BASE / str(proc.pid)
    deadline = time.monotonic() + 120
    while not (run / "qemu.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert (run / "qemu.pid").exists(), "QEMU never started"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    vm.sweep()
    deadline = time.monotonic() + 30
    while vm.running(run) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert vm.running(run) == [] and not run.exists()


@pytest.mark.rule("CPUMAP-MAP-003", "KFUNC-MAP-004", "KFUNC-ATTACH-004", "KFUNC-ATTACH-005")
@pytest.mark.parametrize("version", ["6.18.15", "7.3.4"])
def test_errno_gates_in_guest(version: str) -> None:
    """Two errno gates on each side, in one guest per kernel: pytest inside the guest
    runs tests/test_live_cpumap.py's refused-program test (48e11bad9a1f, v7.0: a refused
    cpumap entry program reads -ENOMEM before, -EINVAL after) and tests/test_live_attach.py
    (ad27ed7d2309: a refused program attached natively to lo, which has no ndo_bpf,
    reads -EINVAL from the program check before, -EOPNOTSUPP after, as 6.12.118 and 7.3.4
    read).  Each compares the kernel's errno with the model's for the guest's ``uname
    -r``; 6.18.15 is on the old side of both, 7.3.4 on the new side.  The suite's cpumap
    and kfunc targets leave map updates and attaches to other devices out, so this is
    where the gates are seen live."""
    from conformance.live.probe import cache_dir

    kernels_or_skip(version)
    kernel, _ = guest_kernel.kernel(version)
    accel, _ = vm.accelerator()
    cache = cache_dir() / "guest"
    cache.mkdir(parents=True, exist_ok=True)
    tests = ROOT / "tests"
    pytest_line = " ".join([
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(ROOT),
        "-o", "addopts=",
        f"{tests / 'test_live_cpumap.py'}::test_refused_programs_read_the_errno_the_model_gives",
        str(tests / "test_live_attach.py")])
    proc = vm.spawn(vm.vng_argv(kernel.vmlinuz, vm.guest_shell(cache) + "exec " + pytest_line,
                                cache, accel))
    try:
        out, err = proc.communicate(timeout=900)
    finally:
        vm.kill(proc, remove=True)
    assert "5 passed" in out, out[-3000:] + err[-3000:]
    assert vm.running(vm.run_dir()) == []

"""One QEMU guest booted from a Debian kernel with virtme-ng, its command on a pipe.

What it is for: ``--target veth@7.3.4`` (:mod:`conformance.targets.guest`) runs the live
targets inside a guest whose kernel is exactly Debian's, with the host's root filesystem
shared read-only (virtme-ng's 9p root with tmpfs overlays on /etc /lib /home /opt /srv /usr
/var /tmp), so the project and its venv run unchanged in there.

The channel is vng's own stdin and stdout: vng (without ``--verbose``) sends the boot
console to /dev/null, puts the guest command's stdout on its stdout and nothing else, and
QEMU's ``-chardev stdio`` port carries its stdin into the guest command.  So the guest's
``rx-oracle serve`` speaks the exec protocol to the host's suite directly.

The accelerator (:func:`accelerator`): KVM when ``/dev/kvm`` can be used and is not
``kvm-pvm``, else TCG (about 40x slower).  Under kvm-pvm (nested PVM) a kernel that is not a
PVM guest runs in KVM's instruction emulator, which lacks the VEX instructions of the
zstd decompressor, ``cmpxchg16b``, ``xrstor`` and ``int3``: Debian's kernels cannot boot
there.  ``RX_ORACLE_GUEST_ACCEL=kvm|tcg`` overrides.

Nothing is left behind: vng runs in a session (process group) of its own, its temporary
files (``TMPDIR``) and QEMU's pidfile live in ``<tmp>/rx-oracle-guest/<pid>/``; :func:`kill`
kills the whole group and QEMU (pidfile) with deadlines, and removes the directory.  vng
gets SIGKILL when its parent dies (``PR_SET_PDEATHSIG``), and the guest command sees the
end of its stdin and powers the guest off; what a SIGKILL'd run still leaves is removed by
the next run's :func:`sweep`.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import conformance
from conformance.live import netns

RUN_BASE = Path(tempfile.gettempdir()) / "rx-oracle-guest"
PR_SET_PDEATHSIG = 1
CPUS, MEMORY = 2, "2G"
#: host tool -> where it comes from (apt package, or pip for vng)
TOOLS = {"qemu-system-x86_64": "apt-get install qemu-system-x86",
         "depmod": "apt-get install kmod",
         "busybox": "apt-get install busybox-static",
         "udevadm": "apt-get install udev",
         "vng": "pip install 'rx-oracle[guest]' (virtme-ng==1.42)"}
TCG_SLOWDOWN = "about 40x slower than KVM"


def vng_path() -> str | None:
    """``vng`` on PATH, else next to this interpreter (a venv's ``bin``)."""
    found = shutil.which("vng")
    if found:
        return found
    beside = Path(sys.executable).parent / "vng"
    return str(beside) if beside.exists() else None


def missing_tools() -> str | None:
    """What the host lacks to boot a guest, with the package to install; None if nothing."""
    lacking = [f"{tool} ({how})" for tool, how in TOOLS.items()
               if (vng_path() if tool == "vng" else shutil.which(tool)) is None]
    return "guest targets need " + "; ".join(lacking) if lacking else None


def accelerator() -> tuple[str, str]:
    """``("kvm" | "tcg", why)``: why is empty for KVM, else one line saying why TCG."""
    forced = os.environ.get("RX_ORACLE_GUEST_ACCEL", "auto")
    if forced in ("kvm", "tcg"):
        return forced, "" if forced == "kvm" else f"TCG (RX_ORACLE_GUEST_ACCEL=tcg), {TCG_SLOWDOWN}"
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return "tcg", f"no usable /dev/kvm: the guest runs under TCG, {TCG_SLOWDOWN}"
    if Path("/sys/module/kvm_pvm").exists():
        return "tcg", ("/dev/kvm is kvm-pvm (nested PVM), which cannot boot a stock Debian "
                       f"kernel: the guest runs under TCG, {TCG_SLOWDOWN}")
    return "kvm", ""


def run_dir() -> Path:
    return RUN_BASE / str(os.getpid())


def guest_shell(cache: Path) -> str:
    """The start of every guest command: the environment the project runs with from the
    shared root, the cache it may write, and the modules the live targets use."""
    project = Path(conformance.__file__).resolve().parent.parent
    return (f"export RX_ORACLE_CACHE={shlex.quote(str(cache))} TMPDIR=/tmp "
            f"PYTHONDONTWRITEBYTECODE=1 PYTHONPATH={shlex.quote(str(project))}; "
            f"cd /tmp; modprobe -a veth tun >&2; ")


def guest_command(serve_args: list[str], cache: Path) -> str:
    """The shell line the guest runs: modules, then ``rx-oracle serve`` on the pipe."""
    serve = shlex.join([sys.executable, "-m", "conformance.cli", "serve", *serve_args])
    return f"{guest_shell(cache)}exec {serve}"


def vng_argv(vmlinuz: Path, command: str, cache: Path, accel: str) -> list[str]:
    vng = vng_path() or "vng"
    argv = [vng, "--force-9p", "--run", str(vmlinuz), "--cpus", str(CPUS), "--memory", MEMORY,
            f"--rwdir={cache}", f"--qemu-opts=-pidfile {run_dir() / 'qemu.pid'}"]
    if accel == "tcg":
        argv.append("--disable-kvm")
    return [*argv, "--exec", command]


def _die_with_parent() -> None:  # runs in the child between fork and exec
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def spawn(argv: list[str]) -> subprocess.Popen[str]:
    """Start vng in a session of its own, its temporary files in :func:`run_dir`."""
    directory = run_dir()
    directory.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, TMPDIR=str(directory))
    env["PATH"] = f"{Path(argv[0]).parent}:{env.get('PATH', '')}"  # vng execs virtme-run
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, bufsize=1, env=env,
                            start_new_session=True, preexec_fn=_die_with_parent)
    return proc


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _kill_pidfile(directory: Path) -> int | None:
    """Kill the QEMU whose pid the directory records, if it is still that QEMU."""
    try:
        pid = int((directory / "qemu.pid").read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return None
    if f"{directory}/".encode() not in cmdline:
        return None
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    return pid


def _gone(pid: int, deadline: float) -> None:
    while netns.alive(pid) and time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(pid, os.WNOHANG)[0]:
                return
        time.sleep(0.05)


def kill(proc: subprocess.Popen[str] | None, directory: Path | None = None,
         *, remove: bool = False, timeout: float = 10.0) -> None:
    """Kill vng's whole process group and its QEMU, waiting at most ``timeout``."""
    directory = directory or run_dir()
    deadline = time.monotonic() + timeout
    if proc is not None:
        _kill_group(proc.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
    qemu = _kill_pidfile(directory)
    if qemu is not None:
        _gone(qemu, deadline)
    if remove:
        shutil.rmtree(directory, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            (directory / "qemu.pid").unlink()


def leftovers() -> list[Path]:
    """Run directories whose owner process is gone."""
    return netns.dead_runs(RUN_BASE)


def sweep() -> list[str]:
    """Kill what every dead run left (its vng group, its QEMU) and remove its directory."""
    swept = []
    for directory in leftovers():
        for pid in running(directory):  # vng, virtme-run, QEMU: each names the directory
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _kill_pidfile(directory)
        shutil.rmtree(directory, ignore_errors=True)
        swept.append(str(directory))
    return swept


def running(directory: Path) -> list[int]:
    """Pids of processes whose command line names ``directory`` (for the tests)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if f"{directory}/".encode() in (entry / "cmdline").read_bytes():
                    out.append(int(entry.name))
    return out

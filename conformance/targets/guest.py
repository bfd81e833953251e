"""``--target KIND@VERSION``: a live target inside a QEMU guest running Debian's kernel.

``veth@7.3.4``, ``tun@6.12.117``, ``zcrx-live@7.3.4`` (``KIND@host``, or plain ``KIND``, is
the live target on the host's own kernel).  The kernel package is resolved, downloaded and
cached by :mod:`conformance.live.guest_kernel`; one guest boots per run
(:mod:`conformance.live.vm`) with the host's root shared read-only, and runs
``python -m conformance.cli serve --target KIND`` after ``modprobe -a veth tun``.  Its stdin
and stdout are the exec protocol of PROTOCOL.md, so this is an :class:`ExecTarget`: every
scenario is drawn, predicted and judged by the host's suite, and only the kernel work runs
in the guest, many scenarios per boot.  The guest's hello says its ``uname -r``
(``7.3.4+deb13-amd64``): the model predicts for that kernel (KVER-001).

The probe is compiled inside the guest against the guest's BTF, into
``<cache>/guest/`` (a ``--rwdir``, so it persists across boots).  After a crash, hang or
garbage the ExecTarget machinery starts the child again, which here is a reboot: at most
:data:`MAX_BOOTS` boots per run, after that every remaining case is a crash of the target.
"""

from __future__ import annotations

import atexit
import subprocess
import sys
import time

from conformance.live import netns, vm
from conformance.targets.base import TargetUnavailable
from conformance.targets.exec import ExecTarget

#: Boots per run: the first, and two restarts after a target fault.
MAX_BOOTS = 3
#: Booting, plus Python's start-up and the probe's first build in the guest (TCG).
BOOT_TIMEOUT = {"kvm": 120.0, "tcg": 600.0}
#: Per-request floor: one scenario in the guest (the suite's ``--timeout`` if larger).
REQUEST_TIMEOUT = {"kvm": 20.0, "tcg": 90.0}

_live: list[GuestTarget] = []


class GuestTarget(ExecTarget):
    """See the module docstring."""

    def __init__(self, kind: str, version: str, *, timeout: float = 10.0) -> None:
        from conformance.live import guest_kernel
        from conformance.live.probe import cache_dir
        from conformance.live.qemu_fec.archive import ArchiveUnreachable, ImageError

        reason = vm.missing_tools()
        if reason:
            raise TargetUnavailable(f"{kind}@{version}: {reason}")
        vm.sweep()
        self.kind, self.version = kind, version
        self.label = f"live {kind}@{version}"
        self.timings: dict[str, float] = {}
        started = time.monotonic()
        try:
            self.kernel, fetched = guest_kernel.kernel(version)
        except ArchiveUnreachable as exc:
            raise TargetUnavailable(f"{self.label}: the Debian archive is unreachable: "
                                    f"{exc}") from exc
        except ImageError as exc:
            raise TargetUnavailable(f"{self.label}: kernel {version}: {exc}") from exc
        if fetched:
            self.timings["download+unpack"] = time.monotonic() - started
        self.accel, why = vm.accelerator()
        if why:
            print(f"rx-oracle: {self.label}: {why}", file=sys.stderr)
        cache = cache_dir() / "guest"
        cache.mkdir(parents=True, exist_ok=True)
        command = vm.guest_command(["--target", kind], cache)
        self.boots = 0
        self._boot_started = 0.0
        _live.append(self)
        try:
            super().__init__(vm.vng_argv(self.kernel.vmlinuz, command, cache, self.accel),
                             timeout=max(timeout, REQUEST_TIMEOUT[self.accel]),
                             startup_timeout=BOOT_TIMEOUT[self.accel])
        except TargetUnavailable as exc:
            self.close()
            raise TargetUnavailable(f"{self.label}: {exc}") from None
        self.name = self.label

    # -- the ExecTarget hooks: a child is a guest --------------------------------------

    def _spawn(self) -> subprocess.Popen[str]:
        if self.boots >= MAX_BOOTS:
            raise OSError(f"{self.boots} boots in this run: given up")
        self.boots += 1
        if self.boots > 1:
            print(f"rx-oracle: {self.label}: rebooting the guest after a target fault "
                  f"(boot {self.boots} of at most {MAX_BOOTS})", file=sys.stderr)
        self._boot_started = time.monotonic()
        return vm.spawn(self.argv)

    def _start(self) -> None:
        super()._start()
        self.timings.setdefault("boot+hello", time.monotonic() - self._boot_started)
        self.name = self.label

    def _kill(self) -> None:
        proc = self._proc
        if proc is not None:
            vm.kill(proc)
        super()._kill()

    def close(self) -> None:
        try:
            super().close()
        finally:
            vm.kill(None, remove=True)
            if self in _live:
                _live.remove(self)


def _close_all() -> None:
    for target in list(_live):
        target.close()


atexit.register(_close_all)
netns.on_cleanup(_close_all)

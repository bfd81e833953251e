"""What the guest tests share (tests/test_guest_target.py, tests/test_matrix.py): skip,
with the reason, where a Debian kernel cannot be booted here."""

from __future__ import annotations

import os

import pytest

from conformance.live import guest_kernel, vm
from conformance.live.qemu_fec.archive import ArchiveUnreachable


def kernels_or_skip(*versions: str) -> None:
    """Skip unless QEMU and vng are here, we are root, and each kernel can be had (from
    the cache or the archive; downloading it now if need be)."""
    reason = vm.missing_tools()
    if reason:
        pytest.skip(reason)
    if os.geteuid() != 0:
        pytest.skip("guest targets need root (KVM/TCG guest, the host's / shared)")
    for version in versions:
        try:
            guest_kernel.kernel(version)
        except ArchiveUnreachable as exc:
            pytest.skip(f"the Debian archive is unreachable: {exc}")

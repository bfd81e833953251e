"""Python targets that say which kernel they are (tests/test_cli_kernel.py): the reference,
reporting Debian's 6.12.117 armhf kernel, and one reporting a kernel the model lacks."""

from __future__ import annotations

from conformance.targets.base import Capabilities
from conformance.targets.reference import ReferenceTarget


class _ReferenceOn(ReferenceTarget):
    """The reference, with ``kernel`` (a ``uname -r`` string) in its capabilities."""

    kernel = ""

    @property
    def capabilities(self) -> Capabilities:
        caps = super().capabilities
        return Capabilities(caps.components, caps.reports, kernel=self.kernel)


class ReferenceOnDebian612(_ReferenceOn):
    name = "reference on 6.12.117+deb13-armmp"
    kernel = "6.12.117+deb13-armmp"


class ReferenceOnUbuntu68(_ReferenceOn):
    name = "reference on 6.8.0-91-generic"
    kernel = "6.8.0-91-generic"

"""Hypothesis strategies built on scapy, exported for users' own tests.

>>> from hypothesis import given
>>> from conformance.strategies import frames
>>> @given(frames())
... def test_my_parser(frame: bytes) -> None: ...
"""

from conformance.strategies.frames import (
    ethernet_frames,
    frames,
    ip_frames,
    malformed_frames,
    rss_keys,
)

__all__ = ["ethernet_frames", "frames", "ip_frames", "malformed_frames", "rss_keys"]

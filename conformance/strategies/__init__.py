"""Hypothesis strategies built on scapy, exported for users' own tests.

>>> from hypothesis import given
>>> from conformance.strategies import frames
>>> @given(frames())
... def test_my_parser(frame: bytes) -> None: ...

Device configurations and XDP programs come as whole scenarios (``rss_scenarios``,
``kfunc_scenarios``, ``xdp_scenarios``, ``page_pool_scenarios``) and as op lists
(``xdp_programs``).
"""

from typing import Any

from conformance.strategies.frames import (
    ethernet_frames,
    frames,
    ip_frames,
    malformed_frames,
    rss_keys,
)

__all__ = [
    "cpumap_scenarios",
    "ethernet_frames",
    "fec_scenarios",
    "frames",
    "ip_frames",
    "kfunc_scenarios",
    "malformed_frames",
    "mlx5_ring_scenarios",
    "mlx5_scenarios",
    "page_pool_scenarios",
    "rss_keys",
    "rss_scenarios",
    "xdp_programs",
    "xdp_scenarios",
]

#: Scenario and program strategies live beside their components; these names export them.
_LAZY = {
    "rss_scenarios": ("conformance.components.rss", "scenarios"),
    "kfunc_scenarios": ("conformance.components.kfunc", "scenarios"),
    "xdp_scenarios": ("conformance.components.xdp", "scenarios"),
    "xdp_programs": ("conformance.components.xdp", "op_lists"),
    "page_pool_scenarios": ("conformance.components.page_pool", "scenarios"),
    "fec_scenarios": ("conformance.components.fec", "scenarios"),
    "mlx5_scenarios": ("conformance.components.mlx5", "scenarios"),
    # MLX5-RING-001: CQ ring images written byte by byte, for a port of the driver side.
    "mlx5_ring_scenarios": ("conformance.components.mlx5_ring_strategies", "ring_scenarios"),
    "cpumap_scenarios": ("conformance.components.cpumap", "scenarios"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(name)

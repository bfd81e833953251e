"""Deliberately wrong cpumap targets: each breaks one rule of the cpumap area.

Used as ``--target python:wrong_targets_cpumap:NAME`` with tests/ on the path
(tests/test_wrong_targets_cpumap.py).
"""

from __future__ import annotations

from typing import Any

from wrong_targets import _Wrong

from conformance.scenario import Scenario
from reference.xdp.mem import MemType


class MarksOrder0ForRecycle(_Wrong):
    """Marks skbs built from non-page_pool (order-0) frames for recycle and hands their
    pages to a pool on free (breaks SKB-BUILD-003)."""

    BREAKS = ("SKB-BUILD-003",)

    def corrupt(self, scenario: Scenario, observed: dict[str, Any]) -> dict[str, Any]:
        if scenario.component != "cpumap":
            return observed
        if int(scenario.config.get("mem_type", 2)) != MemType.MEM_TYPE_PAGE_ORDER0:
            return observed
        for p in observed["packets"]:
            if p["pp_recycle"] is not None:
                p["pp_recycle"] = True
                if p["free_path"] is not None:
                    p["free_path"] = "page_pool"
        return observed


class RecyclesDirectFromRemoteCpu(_Wrong):
    """Puts pages freed on the cpumap CPU into the source pool's alloc cache, as if the
    remote CPU owned the pool's NAPI context (breaks CPUMAP-SIM-003)."""

    BREAKS = ("CPUMAP-SIM-003",)

    def corrupt(self, scenario: Scenario, observed: dict[str, Any]) -> dict[str, Any]:
        if scenario.component != "cpumap":
            return observed
        cfg = scenario.config
        remote_frees = cfg.get("free_cpu") is None and not cfg.get("pre_v6_4", False)
        to_pool = sum(p["free_path"] == "page_pool" for p in observed["packets"])
        if remote_frees and to_pool:
            observed["direct"]["destination_cpu"] += to_pool
            stats = observed["stats"]
            stats["rx_pp_recycle_cached"] += to_pool
            stats["rx_pp_recycle_ring"] -= to_pool
        return observed


ALL = (MarksOrder0ForRecycle, RecyclesDirectFromRemoteCpu)

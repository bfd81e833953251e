"""Deliberately wrong zcrx targets: each breaks one rule of the zcrx area.

Used as ``--target python:wrong_targets_zcrx:NAME`` with tests/ on the path
(tests/test_wrong_targets_zcrx.py).
"""

from __future__ import annotations

import errno
from typing import Any

from wrong_targets import _Wrong

from conformance.scenario import Scenario
from reference.zcrx import PAGE_SIZE


class HonoursRefillWithZeroUserRefs(_Wrong):
    """Takes a refill entry back although the niov it names has no user reference, as if
    the user owned it (breaks ZCRX-REFILL-003).

    Only the first such entry is changed: what follows it would differ anyway, and the
    suite reports the first differing field.
    """

    BREAKS = ("ZCRX-REFILL-003",)

    def corrupt(self, scenario: Scenario, observed: dict[str, Any]) -> dict[str, Any]:
        if scenario.component != "zcrx":
            return observed
        for record in observed.get("refills", []):
            if record["outcome"] == "skipped:uref0":
                record["outcome"] = "held"
                break
        return observed


class ForwardsDefaultRxBufLen(_Wrong):
    """Always hands the queue the provider's page size, PAGE_SIZE when the user left
    ``rx_buf_len`` at 0, so a driver without QCFG_RX_PAGE_SIZE refuses the registration
    with -EOPNOTSUPP (the bug fixed by 3d17d76d1ffb; breaks ZCRX-BUFLEN-005)."""

    BREAKS = ("ZCRX-BUFLEN-005",)

    def corrupt(self, scenario: Scenario, observed: dict[str, Any]) -> dict[str, Any]:
        if scenario.component != "zcrx":
            return observed
        reg = observed["register"]
        if reg["mp_rx_page_size"] != 0:  # not reached, or the user asked for a size
            return observed
        reg["mp_rx_page_size"] = PAGE_SIZE
        netdev = scenario.config.get("netdev", {})
        if netdev is not None and not netdev.get("qcfg_rx_page_size", False):
            reg["rc"] = -errno.EOPNOTSUPP
            reg["driver_rx_page_size"] = None
            for key in ("rq_entries", "rx_buf_len", "zcrx_id", "offsets", "rq_area_token",
                        "num_niovs"):
                reg[key] = None
            for key in ("refills", "final", "counts", "ledger"):
                observed.pop(key, None)
            observed["events"] = [{"op": ev["op"], "skipped": True}
                                  for ev in observed["events"]]
        return observed


ALL = (HonoursRefillWithZeroUserRefs, ForwardsDefaultRxBufLen)

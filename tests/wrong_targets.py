"""Deliberately wrong targets: small wrappers over the reference that break one rule each.

The suite must flag exactly the broken rule for each of them (tests/test_wrong_targets.py),
which proves that its properties can fail.  Each class names the rule it breaks in
``BREAKS``.  Used as ``--target python:wrong_targets:NAME`` with tests/ on the path.
"""

from __future__ import annotations

import errno
from typing import Any

import attrs

from conformance.scenario import Scenario
from conformance.targets.reference import ReferenceTarget
from reference import packet, rss
from reference.kfuncs import (
    BPF_F_XDP_DEV_BOUND_ONLY,
    BPF_PROG_TYPE_XDP,
    XDP_FLAGS_SKB_MODE,
    XdpRssHashType,
)


class _Wrong(ReferenceTarget):
    BREAKS: tuple[str, ...] = ()

    def run(self, scenario: Scenario) -> dict[str, Any]:
        observed = super().run(scenario)
        return self.corrupt(scenario, observed)

    def corrupt(self, scenario: Scenario, observed: dict[str, Any]) -> dict[str, Any]:
        return observed


class RssTypeWithoutL4(_Wrong):
    """Reports TCP/UDP hashes without the XDP_RSS_L4 bit (breaks RSS-TYPE-001)."""

    BREAKS = ("RSS-TYPE-001",)

    def corrupt(self, scenario: Scenario, observed: dict[str, Any]) -> dict[str, Any]:
        if scenario.component == "rss":
            for p in observed["packets"]:
                p["hash_type"] &= ~int(XdpRssHashType.XDP_RSS_L4)
        return observed


class RssFragmentsWithPorts(_Wrong):
    """Hashes the ports of first fragments, as if they were whole (breaks RSS-IN-003)."""

    BREAKS = ("RSS-IN-003",)

    def corrupt(self, scenario: Scenario, observed: dict[str, Any]) -> dict[str, Any]:
        if scenario.component != "rss":
            return observed
        from conformance.components.rss import config_of

        config = config_of(scenario)
        for frame, p in zip(scenario.frames, observed["packets"], strict=True):
            info = packet.parse(frame)
            if info.is_fragment and info.sport >= 0:
                result = rss.rss_hash(attrs.evolve(info, is_fragment=False), config)
                if result is not None:
                    p["hash"] = result.hash
        return observed


class RssQueueFromHighBits(_Wrong):
    """Indexes the indirection table with the hash's high bits (breaks RSS-RETA-004)."""

    BREAKS = ("RSS-RETA-004",)

    def corrupt(self, scenario: Scenario, observed: dict[str, Any]) -> dict[str, Any]:
        if scenario.component == "rss":
            indir = scenario.config["indir"]
            for p in observed["packets"]:
                if p["hash"] is not None:
                    p["queue"] = indir[(p["hash"] >> 16) % len(indir)]
        return observed


class KfuncDefaultEinval(_Wrong):
    """The default kfunc body returns -EINVAL instead of -EOPNOTSUPP (breaks KFUNC-API-003)."""

    BREAKS = ("KFUNC-API-003",)

    def corrupt(self, scenario: Scenario, observed: dict[str, Any]) -> dict[str, Any]:
        if scenario.component == "kfunc":
            for ev, out in zip(scenario.events, observed["events"], strict=True):
                if ev["op"] == "call" and out["rc"] == -errno.EOPNOTSUPP:
                    out["rc"] = -errno.EINVAL
        return observed


class KfuncBoundInGenericMode(_Wrong):
    """Lets a device-bound program attach in generic (SKB) mode (breaks KFUNC-ATTACH-004).

    Only the first such attach is changed: what follows it would differ anyway, and
    the suite reports the first differing field.
    """

    BREAKS = ("KFUNC-ATTACH-004",)

    def corrupt(self, scenario: Scenario, observed: dict[str, Any]) -> dict[str, Any]:
        if scenario.component != "kfunc":
            return observed
        events = scenario.events
        for ev, out in zip(events, observed["events"], strict=True):
            if ev["op"] != "attach" or not ev.get("flags", 0) & XDP_FLAGS_SKB_MODE:
                continue
            load = events[int(ev["prog"])]
            bound_here = (  # bound only (an offloaded one is KFUNC-ATTACH-001's), XDP
                observed["events"][int(ev["prog"])]["rc"] == 0
                and load.get("prog_ifindex") == ev["ifindex"]
                and load.get("expected_attach_type", 0) == 0
                and load.get("prog_flags", 0) & BPF_F_XDP_DEV_BOUND_ONLY
                and load.get("prog_type", BPF_PROG_TYPE_XDP) == BPF_PROG_TYPE_XDP
            )
            if bound_here and out["rc"] == -errno.EINVAL:
                out["rc"] = 0
                break
        return observed


class XdpInvalidActionPasses(_Wrong):
    """Treats a return value above XDP_REDIRECT as XDP_PASS (breaks XDP-ACT-002)."""

    BREAKS = ("XDP-ACT-002",)

    def corrupt(self, scenario: Scenario, observed: dict[str, Any]) -> dict[str, Any]:
        if scenario.component == "xdp":
            for p in observed["packets"]:
                if p["action"] > 4:
                    p["verdict"], p["warned"] = "XDP_PASS", False
        return observed


class XdpMetaUnaligned(_Wrong):
    """Accepts metadata lengths that are not a multiple of 4 (breaks XDP-ADJ-005)."""

    BREAKS = ("XDP-ADJ-005",)

    def corrupt(self, scenario: Scenario, observed: dict[str, Any]) -> dict[str, Any]:
        if scenario.component == "xdp":
            for p in observed["packets"]:
                for record in p["ops"]:
                    if record["op"] == "adjust_meta" and record["rc"] == -errno.EACCES:
                        record["rc"] = 0
                        return observed  # later fields would differ too; the first suffices
        return observed


class PagePoolLeaksRingPuts(_Wrong):
    """Never returns a page a put would send to the ptr_ring (breaks PP-RECYCLE-006).

    The page stays in flight: no sync, no ring.  Only the first such put is changed; the
    suite reports the first differing field, the put's ``synced``: the sync for the
    device (PP-DMA-001) of a page the ring takes (PP-RECYCLE-006), both named.
    """

    BREAKS = ("PP-DMA-001", "PP-RECYCLE-006")

    def corrupt(self, scenario: Scenario, observed: dict[str, Any]) -> dict[str, Any]:
        if scenario.component != "page_pool":
            return observed
        from conformance.components.page_pool import _run
        from reference.trace import Trace

        traces: list[Trace] = []
        _run(scenario, traces)
        for trace, record in zip(traces, observed["events"], strict=True):
            to_ring = any(e.what == "put into the ptr_ring" for e in trace)
            if to_ring and record.get("synced") is not None:
                record["synced"] = None
                break
        return observed


class FecRecyclesXdpTxOnEnqueue(_Wrong):
    """Recycles the XDP_TX page when it is queued instead of at TX completion
    (breaks FEC-XDP-005): the packet's page is reported recycled, not in the TX ring."""

    BREAKS = ("FEC-XDP-005",)

    def corrupt(self, scenario: Scenario, observed: dict[str, Any]) -> dict[str, Any]:
        if scenario.component == "fec":
            for p in observed["packets"]:
                if p["page"] == "tx_ring":
                    p["page"] = "recycled"
                    return observed  # the first such packet suffices
        return observed


class FecDropSyncsPostLength(_Wrong):
    """Syncs only the length after the program when recycling from the drop path
    (breaks FEC-XDP-002)."""

    BREAKS = ("FEC-XDP-002",)

    def corrupt(self, scenario: Scenario, observed: dict[str, Any]) -> dict[str, Any]:
        if scenario.component != "fec":
            return observed
        from conformance.components.fec import config_of

        sub_len = config_of(scenario).sub_len
        for p in observed["packets"]:
            if p["recycle"] is None:
                continue
            ops = scenario.program_for(p["frame"]) if p["frame"] is not None else None
            length = p["datlen"] - sub_len
            for op, record in zip([o for o in ops or () if o["op"] != "return"], p["ops"],
                                  strict=False):
                if record["rc"] == 0 and op["op"] == "adjust_head":
                    length -= int(op["delta"])
                elif record["rc"] == 0 and op["op"] == "adjust_tail":
                    length += int(op["delta"])
            p["recycle"]["sync"] = length
        return observed


class FecRxBytesAfterXdp(_Wrong):
    """Counts rx_bytes after the XDP program: the frame length the program left (no FCS,
    no pad) and only for packets it passed (breaks FEC-RX-005)."""

    BREAKS = ("FEC-RX-005",)

    def corrupt(self, scenario: Scenario, observed: dict[str, Any]) -> dict[str, Any]:
        if scenario.component != "fec":
            return observed
        from conformance.components.fec import config_of

        sub_len = config_of(scenario).sub_len
        total = 0
        for p in observed["packets"]:
            if p["outcome"] != "ok":
                continue
            if p["verdict"] is None:
                total += p["datlen"]
            elif p["verdict"] == "XDP_PASS":
                total += p["datlen"] - sub_len
        observed["counters"]["rx_bytes"] = total
        return observed


ALL = (
    RssTypeWithoutL4,
    RssFragmentsWithPorts,
    RssQueueFromHighBits,
    KfuncDefaultEinval,
    KfuncBoundInGenericMode,
    XdpInvalidActionPasses,
    XdpMetaUnaligned,
    PagePoolLeaksRingPuts,
    FecRecyclesXdpTxOnEnqueue,
    FecDropSyncsPostLength,
    FecRxBytesAfterXdp,
)

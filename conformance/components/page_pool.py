"""The ``page_pool`` component: a sequence of pool operations and where every page goes.

config:  ``params``: ``{"flags": int, "pool_size": int, "max_len": int, "offset": int,
         "dma_dir": int, "nid": int}`` (``struct page_pool_params``; absent fields 0, but
         ``flags`` defaults to PP_FLAG_DMA_MAP | PP_FLAG_DMA_SYNC_DEV, ``max_len`` to
         4096 and ``dma_dir`` to DMA_FROM_DEVICE), ``napi_cpu`` (the CPU the owning NAPI
         runs on; absent: no NAPI).
events:  ``{"op": "alloc"}``, ``{"op": "put", "alloc": EVENT_INDEX, "sync": int (-1 full,
         0 none, or a length), "direct": bool, "cpu": int (default 0), "softirq": bool
         (default true)}``, ``{"op": "get_page", "alloc": EVENT_INDEX}`` (someone else
         takes a page reference, so the page is no longer recyclable),
         ``{"op": "fail_allocs", "count": int}`` (the page allocator fails the next
         requests), ``{"op": "update_nid", "nid": int}``.
         A ``put`` or ``get_page`` names the ``alloc`` event whose page it returns; one
         naming a failed alloc, or a page already put, does nothing: ``{"rc": -2}``.
observables: ``events[i]``: alloc → ``{"rc": 0, "page": K}`` where K numbers pages in the
         order the pool first hands them out (0, 1, ...), or ``{"rc": -12}``; put →
         ``{"rc": 0, "synced": LEN | null}`` (bytes synced for the device); others
         ``{"rc": 0}``.  ``stats``: the 11 ethtool ``rx_pp_*`` counters; ``inflight``;
         ``pages``: K → where page K is at the end (``alloc_cache``, ``ptr_ring``,
         ``in_flight``, ``released``).
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from conformance.components import Component
from conformance.scenario import Scenario
from reference import page_pool as pp
from reference.page_pool.stats import ethtool_stats
from reference.trace import Trace


def _pool(scenario: Scenario) -> pp.PagePool:
    cfg = scenario.config
    p = dict(cfg.get("params", {}))
    napi = pp.NapiStruct(int(cfg["napi_cpu"])) if cfg.get("napi_cpu") is not None else None
    params = pp.PagePoolParams(
        flags=int(p.get("flags", pp.PP_FLAG_DMA_MAP | pp.PP_FLAG_DMA_SYNC_DEV)),
        pool_size=int(p.get("pool_size", 0)),
        max_len=int(p.get("max_len", 4096)),
        offset=int(p.get("offset", 0)),
        dma_dir=int(p.get("dma_dir", pp.DMA_FROM_DEVICE)),
        nid=int(p.get("nid", 0)),
        napi=napi,
        dev=pp.DmaDevice(),
    )
    created = pp.page_pool_create(params)
    if created.pool is None:
        raise ValueError(f"page_pool_create failed with {created.err}")
    return created.pool


def _run(scenario: Scenario, traces: list[Trace] | None) -> dict[str, Any]:
    pool = _pool(scenario)
    dev = pool.dev
    assert dev is not None
    pages: dict[int, pp.Page] = {}  # alloc event index -> page
    names: dict[int, int] = {}  # pfn -> first-appearance number
    by_name: list[pp.Page] = []
    events: list[dict[str, Any]] = []
    for i, ev in enumerate(scenario.events):
        trace = Trace() if traces is not None else None
        if traces is not None and trace is not None:
            traces.append(trace)
        op = ev["op"]
        if op == "alloc":
            page = pool.alloc_pages(pp.Context.softirq(cpu=0), trace)
            if page is None:
                events.append({"rc": -errno.ENOMEM})
                continue
            if page.pfn not in names:
                names[page.pfn] = len(by_name)
                by_name.append(page)
            pages[i] = page
            events.append({"rc": 0, "page": names[page.pfn]})
        elif op in ("put", "get_page") and int(ev["alloc"]) not in pages:
            events.append({"rc": -errno.ENOENT})  # that alloc failed, or its page is gone
        elif op == "put":
            page = pages.pop(int(ev["alloc"]))
            before = len(dev.syncs_for_device)
            ctx = pp.Context(cpu=int(ev.get("cpu", 0)), in_softirq=bool(ev.get("softirq", True)))
            pool.put_page(page, int(ev.get("sync", -1)), bool(ev.get("direct", False)), ctx, trace)
            synced = [s.size for s in dev.syncs_for_device[before:]]
            events.append({"rc": 0, "synced": synced[0] if synced else None})
        elif op == "get_page":
            pp.get_page(pages[int(ev["alloc"])])
            events.append({"rc": 0})
        elif op == "fail_allocs":
            pool.allocator.fail(int(ev["count"]))
            events.append({"rc": 0})
        elif op == "update_nid":
            pool.update_nid(int(ev["nid"]), trace)
            events.append({"rc": 0})
        else:
            raise ValueError(f"page_pool scenario event {i}: unknown op {op!r}")
    pool.check_conservation()
    where = {}
    for k, page in enumerate(by_name):
        loc = pool.where(page)
        where[str(k)] = loc.value if loc is not None else "released"
    return {"events": events, "stats": ethtool_stats(pool.stats()), "inflight": pool.inflight(),
            "pages": where}


def expected(scenario: Scenario) -> dict[str, Any]:
    return _run(scenario, None)


_STAT_RULES = {
    "rx_pp_alloc_fast": ("PP-ALLOC-001",),
    "rx_pp_alloc_slow": ("PP-ALLOC-004",),
    "rx_pp_alloc_empty": ("PP-ALLOC-002",),
    "rx_pp_alloc_refill": ("PP-ALLOC-003",),
    "rx_pp_alloc_waive": ("PP-NUMA-001",),
    "rx_pp_recycle_cached": ("PP-RECYCLE-004",),
    "rx_pp_recycle_cache_full": ("PP-RECYCLE-005",),
    "rx_pp_recycle_ring": ("PP-RECYCLE-006",),
    "rx_pp_recycle_ring_full": ("PP-RECYCLE-006",),
    "rx_pp_recycle_released_ref": ("PP-RECYCLE-003",),
}


def attribute(scenario: Scenario) -> Callable[[str], tuple[str, ...]]:
    """Stats map to the rule that counts them; an event's fields to the rules it applied."""
    traces: list[Trace] = []
    _run(scenario, traces)

    def rules(path: str) -> tuple[str, ...]:
        if path.startswith("stats."):
            return _STAT_RULES.get(path.removeprefix("stats."), ("PP-STATS-001",))
        if path.startswith("events["):
            index = int(path.removeprefix("events[").partition("]")[0])
            if index < len(traces):
                return tuple([r for r in traces[index].rules() if r.startswith("PP-")][-1:])
        return ()

    return rules


def applied(scenario: Scenario) -> set[str]:
    traces: list[Trace] = []
    _run(scenario, traces)
    return {rule for trace in traces for rule in trace.rules()}


COMPONENT = Component(
    name="page_pool",
    expected=expected,
    attribute=attribute,
    applied=applied,
    field_rules=(
        ("events[*].page", ("PP-ALLOC-001", "PP-ALLOC-004")),
        ("events[*].synced", ("PP-DMA-001",)),
        ("events[*].rc", ("PP-ALLOC-004",)),
        ("stats.*", ("PP-STATS-001",)),
        ("inflight", ("PP-DESTROY-004",)),
        ("pages.*", ("PP-LEDGER-001", "PP-LEDGER-002")),
    ),
)


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    """A small pool (so the ring fills), then a random mix of allocs and puts."""
    pool_size = draw(st.sampled_from([0, 16, 64, 128]))
    max_len = draw(st.sampled_from([1536, 2048, 4096]))
    config: dict[str, Any] = {"params": {"pool_size": pool_size, "max_len": max_len,
                                         "offset": draw(st.sampled_from([0, 256]))}}
    if draw(st.booleans()):
        config["napi_cpu"] = draw(st.sampled_from([0, 1]))
    events: list[dict[str, Any]] = []
    held: list[int] = []
    for _ in range(draw(st.integers(1, 60))):
        kind = draw(st.sampled_from(["alloc", "alloc", "alloc", "put", "put", "put", "burst",
                                     "get_page", "fail", "nid"]))
        if kind == "alloc":
            held.append(len(events))
            events.append({"op": "alloc"})
        elif kind == "burst":  # many allocations then puts: fills and drains cache and ring
            n = draw(st.integers(60, 200))
            start = len(events)
            events.extend({"op": "alloc"} for _ in range(n))
            direct = draw(st.booleans())
            events.extend({"op": "put", "alloc": start + j, "sync": -1, "direct": direct}
                          for j in range(n))
        elif kind == "put" and held:
            idx = held.pop(draw(st.integers(0, len(held) - 1)))
            events.append({"op": "put", "alloc": idx,
                           "sync": draw(st.sampled_from([-1, 0, 64, 1500, 9000])),
                           "direct": draw(st.booleans()), "cpu": draw(st.sampled_from([0, 1])),
                           "softirq": draw(st.booleans() | st.just(True))})
        elif kind == "get_page" and held:
            events.append({"op": "get_page", "alloc": draw(st.sampled_from(held))})
        elif kind == "fail":
            events.append({"op": "fail_allocs", "count": draw(st.integers(1, 2))})
        elif kind == "nid":
            events.append({"op": "update_nid", "nid": draw(st.sampled_from([0, 1]))})
    return Scenario(component="page_pool", config=config, events=tuple(events),
                    rules=("PP-ALLOC-001", "PP-RECYCLE-004", "PP-STATS-001"))

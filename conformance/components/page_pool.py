"""The ``page_pool`` component: a sequence of pool operations and where every page goes.

config:  ``params``: ``{"flags": int, "pool_size": int, "max_len": int, "offset": int,
         "dma_dir": int, "nid": int, "order": int}`` (``struct page_pool_params``; absent
         fields 0, but ``flags`` defaults to PP_FLAG_DMA_MAP | PP_FLAG_DMA_SYNC_DEV,
         ``max_len`` to 4096 and ``dma_dir`` to DMA_FROM_DEVICE), ``napi_cpu`` (the CPU
         the owning NAPI runs on; absent: no NAPI), ``cpuid``
         (``page_pool_create_percpu``'s CPU, as the per-CPU system pools have; absent:
         -1, ``page_pool_create``), ``arch`` (``"x86_64"``, the default, or ``"arm64"``:
         the DMA cache alignment fragments are rounded to, PP-FRAG-002).  Every CPU is
         on NUMA node 0 (``numa_mem_id()``), so a ``NUMA_NO_NODE`` pool (``nid`` -1)
         allocates and refills on node 0 (PP-NUMA-001, PP-NUMA-005).
events:  ``{"op": "alloc"}``, ``{"op": "put", "alloc": EVENT_INDEX, "sync": int (-1 full,
         0 none, or a length), "direct": bool, "cpu": int (default 0), "softirq": bool
         (default true)}``, ``{"op": "get_page", "alloc": EVENT_INDEX}`` (someone else
         takes a page reference, so the page is no longer recyclable),
         ``{"op": "fail_allocs", "count": int}`` (the page allocator fails the next
         requests), ``{"op": "update_nid", "nid": int}``,
         ``{"op": "alloc_frag", "size": int, "truesize": bool}`` (``page_pool_dev_alloc_frag``,
         or ``page_pool_dev_alloc`` with ``truesize``, as drivers call them: one pp
         reference per fragment),
         ``{"op": "ref_page", "alloc": EVENT_INDEX}`` (``page_pool_ref_page``: one more pp
         reference, returned by a ``put`` naming this event), ``{"op": "pfmemalloc",
         "count": int}`` (the next pages the allocator makes come from the emergency
         reserves), ``{"op": "force_nid", "nid": int | null}`` (the allocator's pages come
         from that node whatever is asked), ``{"op": "destroy"}`` (``page_pool_destroy``),
         ``{"op": "release_retry"}`` (one run of the deferred release; ``{"rc": -2}`` when
         none is pending),
         ``{"op": "fragment_page", "alloc": EVENT_INDEX, "nr": int}``
         (``page_pool_fragment_page`` on the fresh page of that alloc: its holder now has
         ``nr`` pp references), ``{"op": "unref_page", "alloc": EVENT_INDEX, "nr": int}``
         (``page_pool_unref_page``: the holder drops ``nr`` of them; answers
         ``remaining``), ``{"op": "put_unrefed", "alloc": EVENT_INDEX, "sync", "direct",
         "cpu", "softirq"}`` (``page_pool_put_unrefed_page`` by the holder whose unref
         left 0, fields as ``put``) (PP-RECYCLE-011), ``{"op": "put_bulk", "allocs":
         [EVENT_INDEX, ...], "cpu", "softirq"}`` (``page_pool_put_netmem_bulk``: each
         named holder returns one reference, at most 16; PP-RECYCLE-009),
         ``{"op": "drop_page", "get": EVENT_INDEX}`` (the mm reference that ``get_page``
         event took is dropped with ``put_page``, PP-PAGE-002),
         ``{"op": "fail_dma_maps", "count": int}`` (``dma_mapping_error`` for the next
         mappings, PP-ALLOC-005), ``{"op": "nid_changed", "nid": int}``
         (``page_pool_nid_changed``, PP-NUMA-004), ``{"op": "use_xdp_mem"}``
         (``page_pool_use_xdp_mem``: one more user, PP-DESTROY-001),
         ``{"op": "napi_owner", "cpu": int}`` (the owning NAPI is now polled on that CPU,
         -1: not scheduled, as after ``napi_disable``; ``{"rc": -2}`` without a NAPI),
         ``{"op": "cycle", "count": int, "direct", "cpu", "softirq"}`` (a refill of
         ``count`` pages, allocated in the NAPI context of CPU 0, then each put back
         full-length in the context given as for ``put``; answers ``got``, how many it
         allocated; its pages are named only when a later event hands one out),
         ``{"op": "enable_direct_recycling", "napi": K | null}``
         (``page_pool_enable_direct_recycling``, as a driver's queue restart calls it:
         attach NAPI instance K, 0..3, or NULL; instance 0 is the config's ``napi_cpu``
         one when given, any other is created at its first naming, not scheduled; the WARN
         of replacing or clearing an attached NAPI is in ``warnings``, PP-DESTROY-008;
         6.12 has no such function: a scenario using it is not applicable there).
         ``update_nid``, ``nid_changed``, ``use_xdp_mem``, ``enable_direct_recycling``
         and ``destroy`` on a pool already freed call nothing: ``{"rc": -2}``.
         A ``put``, ``get_page``, ``ref_page``, ``fragment_page``, ``unref_page`` or
         ``put_unrefed`` names the event whose reference it uses; one naming a failed
         alloc, or a reference already put, does nothing: ``{"rc": -2}``.
observables: ``create``: ``{"rc": 0}``, or the errno ``page_pool_create`` returned
         (PP-INIT-009); then no event runs, ``events`` is empty, ``pages``,
         ``pp_ref_count`` and ``dma_mapped`` are empty and the pool-wide fields null.
         ``events[i]``: alloc → ``{"rc": 0, "page": K}`` where K numbers pages in the
         order the pool first hands them out (0, 1, ...), or ``{"rc": -12}``;
         alloc_frag → also ``offset`` (and ``truesize`` when asked); put → ``{"rc": 0,
         "synced": LEN | null, "sync_offset": OFF | null}`` (bytes synced for the device and
         where, from the page's DMA address; put_unrefed the same); unref_page →
         ``remaining`` (what ``page_pool_unref_page`` returned); destroy and release_retry →
         ``inflight`` and the pool ``state``; others ``{"rc": 0}``.  ``stats``: the 11
         ethtool ``rx_pp_*`` counters; ``inflight``; ``pages``: K → where page K is at the end
         (``alloc_cache``, ``ptr_ring``, ``in_flight``, ``released``); ``pp_ref_count``:
         K → the page's ``pp_ref_count`` while the pool owns it (null once released);
         ``dma_mapped``: K → whether ``page_pool_get_dma_addr`` is non-zero while the pool
         owns the page (null once released; false once unmapped, PP-DMA-004);
         ``dma``: maps, unmaps, syncs for device and the bytes they cover; ``state``;
         ``warnings`` (WARNs the pool hit, and ``page_pool_empty_ring``'s refcount
         ``pr_crit``).
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs
from hypothesis import strategies as st

from conformance.components import Component, kernel_of
from conformance.readable import rc_text, value_text
from conformance.scenario import Scenario
from conformance.targets.base import NotApplicable
from reference import page_pool as pp
from reference.kernel import resolve_kernel
from reference.page_pool.frag import page_pool_dev_alloc, page_pool_dev_alloc_frag
from reference.page_pool.stats import ethtool_stats
from reference.trace import Trace, TraceEvent


def _create(scenario: Scenario, trace: Trace | None = None) -> pp.CreateResult:
    """``page_pool_create`` with the scenario's params (PP-INIT-009); ``trace`` gets the
    creation check that refused them."""
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
        order=int(p.get("order", 0)),
        napi=napi,
        dev=pp.DmaDevice(),
    )
    # PP-INIT-006, PP-INIT-009: without a cpuid the driver calls page_pool_create (which is
    # page_pool_create_percpu with cpuid -1), as most drivers do.
    allocator = pp.PageAllocator(_ARCHES[str(cfg.get("arch", "x86_64"))])
    kernel = resolve_kernel(scenario.kernel)
    if cfg.get("cpuid") is None:
        return pp.page_pool_create(params, allocator=allocator, kernel=kernel, trace=trace)
    return pp.page_pool_create_percpu(params, int(cfg["cpuid"]), allocator=allocator,
                                      kernel=kernel, trace=trace)


def _create_rules(scenario: Scenario) -> tuple[str, ...]:
    """The rules that decided a creation: the check that refused it, its order among the
    others, and the creation result itself (PP-INIT-005, PP-INIT-009)."""
    trace = Trace()
    _create(scenario, trace)
    return (*_pp_rules(trace), "PP-INIT-005", "PP-INIT-009")


#: The ``arch`` config key: the architectures the model has values for (PP-FRAG-002).
_ARCHES = {"x86_64": pp.X86_64, "arm64": pp.ARM64_4K}


def _handle(op: str, pool: pp.PagePool, pages: dict[int, pp.Page], ev: Mapping[str, Any],
            trace: Trace | None) -> tuple[pp.Page, dict[str, Any]] | None:
    """A reference-taking op: the page it took a pp reference on and what the call
    returned besides (a fragment's offset and truesize), or None if it failed."""
    ctx = pp.Context.softirq(cpu=0)
    if op == "alloc":
        page = pp.page_pool_dev_alloc_pages(pool, ctx, trace)
        return None if page is None else (page, {})
    if op == "ref_page":
        page = pages[int(ev["alloc"])]
        pp.page_pool_ref_page(page)
        return page, {}
    size = int(ev["size"])
    if ev.get("truesize"):
        got = page_pool_dev_alloc(pool, size, ctx, trace)
        return None if got is None else (got[0], {"offset": got[1], "truesize": got[2]})
    frag = page_pool_dev_alloc_frag(pool, size, ctx, trace)
    return None if frag is None else (frag[0], {"offset": frag[1]})


#: Ops that call the pool itself: on a freed pool (a destroy with nothing in flight) they
#: answer ``{"rc": -2}`` and call nothing, as no driver can call a pool it freed.
_NEEDS_POOL = ("update_nid", "nid_changed", "use_xdp_mem", "destroy",
               "enable_direct_recycling")

#: Ops that use the reference an earlier event took (its ``alloc`` field names it).
_USES_REF = ("put", "get_page", "ref_page", "fragment_page", "unref_page", "put_unrefed")


def _ctx_of(ev: Mapping[str, Any]) -> pp.Context:
    """The context a put runs in: the event's CPU and softirq state (PP-RECYCLE-002)."""
    return pp.Context(cpu=int(ev.get("cpu", 0)), in_softirq=bool(ev.get("softirq", True)))


def _synced(dev: pp.DmaDevice, before: int, shift: int) -> dict[str, Any]:
    """The first sync for the device since ``before`` (PP-DMA-001): length and offset."""
    synced = dev.syncs_for_device[before:]
    return {"synced": synced[0].size if synced else None,
            "sync_offset": synced[0].addr - (synced[0].pfn << shift) if synced else None}


def _snapshot(pool: pp.PagePool) -> dict[str, Any]:
    """The pool-wide observables after one event, for trace-based attribution."""
    dev = pool.dev
    assert dev is not None
    return {**{f"stats.{k}": v for k, v in ethtool_stats(pool.stats()).items()},
            "dma.maps": dev.maps, "dma.unmaps": dev.unmaps,
            "dma.syncs_for_device": dev.device_syncs,
            "dma.sync_bytes_for_device": sum(s.size for s in dev.syncs_for_device),
            "inflight": pool.inflight(),
            "state": pool.state.value, "warnings": len(pool.warnings)}


def _refused(err: int) -> dict[str, Any]:
    """What a target reports when ``page_pool_create`` failed (PP-INIT-009): the errno, and
    no event run (the driver has no pool to run them on)."""
    return {"create": {"rc": err}, "events": [], "stats": None, "inflight": None,
            "pages": {}, "pp_ref_count": {}, "dma_mapped": {}, "dma": None, "state": None,
            "warnings": None}


def _run(scenario: Scenario, traces: list[Trace] | None,
         snapshots: list[dict[str, Any]] | None = None,
         pfns: list[int] | None = None) -> dict[str, Any]:
    """Run the events; with ``traces``, one trace per event, with ``snapshots`` the
    pool-wide observables after each, with ``pfns`` each page number's pfn."""
    _require_enable(scenario)
    created = _create(scenario)
    if created.pool is None:  # PP-INIT-001..005, 007: refused at creation
        return _refused(created.err)
    pool = created.pool
    # PP-DESTROY-008: the NAPI instances enable_direct_recycling events name; 0 is the
    # config's when it has one.
    napis: dict[int, pp.NapiStruct] = {} if pool.napi is None else {0: pool.napi}
    dev = pool.dev
    assert dev is not None
    shift = pool.arch.page_shift
    pages: dict[int, pp.Page] = {}  # reference-taking event index -> page
    held: dict[int, int] = {}  # reference-taking event index -> pp references its holder has
    gets: dict[int, pp.Page] = {}  # get_page event index -> the page it holds an mm ref on
    names: dict[int, int] = {}  # pfn -> first-appearance number
    by_name: list[pp.Page] = []
    events: list[dict[str, Any]] = []
    for i, ev in enumerate(scenario.events):
        trace = Trace() if traces is not None else None
        if traces is not None and trace is not None:
            traces.append(trace)
        events.append(_event(i, ev, pool, pages, held, gets, names, by_name, shift, trace,
                             napis))
        if snapshots is not None:
            snapshots.append(_snapshot(pool))
    pool.check_conservation()
    where = {}
    refs: dict[str, int | None] = {}
    mapped: dict[str, bool | None] = {}
    for k, page in enumerate(by_name):
        loc = pool.where(page)
        where[str(k)] = loc.value if loc is not None else "released"
        owned = loc is not None and loc is not pp.Loc.RELEASED
        refs[str(k)] = page.pp_ref_count if owned else None
        mapped[str(k)] = bool(pp.page_pool_get_dma_addr(page)) if owned else None  # PP-DMA-004
    if pfns is not None:
        pfns.extend(page.pfn for page in by_name)
    return {"create": {"rc": 0},
            "events": events, "stats": ethtool_stats(pool.stats()), "inflight": pool.inflight(),
            "pages": where, "pp_ref_count": refs, "dma_mapped": mapped,
            "dma": {"maps": dev.maps, "unmaps": dev.unmaps,
                    "syncs_for_device": dev.device_syncs,
                    "sync_bytes_for_device": sum(s.size for s in dev.syncs_for_device)},
            "state": pool.state.value, "warnings": len(pool.warnings)}


#: PP-DESTROY-008: ``page_pool_enable_direct_recycling`` is new in v6.17 (6.12 has only
#: the disable half).
_ENABLE_SINCE = (6, 17)


def _require_enable(scenario: Scenario) -> None:
    """A scenario that calls ``page_pool_enable_direct_recycling`` is not applicable on a
    kernel without it (PP-DESTROY-008)."""
    if not any(ev.get("op") == "enable_direct_recycling" for ev in scenario.events):
        return
    kernel = kernel_of(scenario)
    if kernel.series < _ENABLE_SINCE:
        raise NotApplicable(f"kernel {kernel}: no page_pool_enable_direct_recycling before "
                            "v6.17 (PP-DESTROY-008)")


def _cycle(pool: pp.PagePool, ev: Mapping[str, Any], trace: Trace | None) -> int:
    """A driver's refill of ``count`` buffers all returned at once (``cycle``): that many
    allocations in its NAPI context on CPU 0 (fewer if one fails), then a full-length put
    of each in the event's context.  Its pages get no name (they are not in ``pages``)
    until a later allocation hands one out again.  Returns how many it got."""
    got: list[pp.Page] = []
    alloc_ctx = pp.Context.softirq(cpu=0)
    for _ in range(int(ev["count"])):
        page = pp.page_pool_dev_alloc_pages(pool, alloc_ctx, trace)
        if page is None:
            break
        got.append(page)
    direct, ctx = bool(ev.get("direct", False)), _ctx_of(ev)
    for page in got:
        pp.page_pool_put_full_page(pool, page, direct, ctx, trace)
    return len(got)


def _event(i: int, ev: Mapping[str, Any], pool: pp.PagePool, pages: dict[int, pp.Page],
           held: dict[int, int], gets: dict[int, pp.Page], names: dict[int, int],
           by_name: list[pp.Page], shift: int, trace: Trace | None,
           napis: dict[int, pp.NapiStruct]) -> dict[str, Any]:
    """One event: what it answers (see the module docstring)."""
    dev = pool.dev
    assert dev is not None
    op = ev["op"]
    if op in _USES_REF and int(ev["alloc"]) not in pages:
        return {"rc": -errno.ENOENT}  # that alloc failed, or its page is gone
    if op == "put_bulk":  # PP-RECYCLE-009: the holders still holding return one each
        refs = [int(r) for r in ev["allocs"] if int(r) in pages]
        bulk = [pages[r] for r in refs]
        for r in refs:
            held[r] -= 1
            if not held[r]:
                del pages[r], held[r]
        if bulk:
            pp.page_pool_put_netmem_bulk(bulk, _ctx_of(ev), trace)
        return {"rc": 0}
    if op == "cycle":  # PP-RING-001, PP-INIT-002: count pages out, then every one back
        return {"rc": 0, "got": _cycle(pool, ev, trace)}
    if op == "drop_page":  # PP-PAGE-002: someone else's mm reference goes
        page = gets.pop(int(ev["get"]), None)
        if page is None:
            return {"rc": -errno.ENOENT}
        pp.put_page(page)
        return {"rc": 0}
    if op in ("alloc", "alloc_frag", "ref_page"):
        got = _handle(op, pool, pages, ev, trace)
        if got is None:
            return {"rc": -errno.ENOMEM}
        page, extra = got
        if page.pfn not in names:
            names[page.pfn] = len(by_name)
            by_name.append(page)
        pages[i] = page
        held[i] = 1
        return {"rc": 0, "page": names[page.pfn], **extra}
    if op in ("put", "put_unrefed"):
        ref = int(ev["alloc"])
        page = pages[ref]
        before = len(dev.syncs_for_device)
        sync, direct = int(ev.get("sync", -1)), bool(ev.get("direct", False))
        if op == "put":  # as drivers call it: the full-page helpers for a -1 length
            held[ref] -= 1
            if sync == -1 and direct:
                pp.page_pool_recycle_direct(pool, page, _ctx_of(ev), trace)
            elif sync == -1:
                pp.page_pool_put_full_page(pool, page, False, _ctx_of(ev), trace)
            else:
                pp.page_pool_put_page(pool, page, sync, direct, _ctx_of(ev), trace)
        else:  # PP-RECYCLE-011: the holder whose unref left no reference
            if held[ref]:
                raise ValueError(f"page_pool scenario event {i}: put_unrefed while the "
                                 f"holder of event {ref} still has {held[ref]} reference(s)")
            pp.page_pool_put_unrefed_page(pool, page, sync, direct, _ctx_of(ev), trace)
        if not held[ref]:
            del pages[ref], held[ref]
        return {"rc": 0, **_synced(dev, before, shift)}
    if op == "fragment_page":  # PP-RECYCLE-011: nr references on a fresh page
        ref = int(ev["alloc"])
        pp.page_pool_fragment_page(pages[ref], int(ev["nr"]), trace)
        held[ref] = int(ev["nr"])
        return {"rc": 0}
    if op == "unref_page":  # PP-RECYCLE-011: the holder drops nr of its references
        ref, nr = int(ev["alloc"]), int(ev["nr"])
        if not 1 <= nr <= held[ref]:
            raise ValueError(f"page_pool scenario event {i}: unref_page of {nr} reference(s); "
                             f"the holder of event {ref} has {held[ref]}")
        remaining = pp.page_pool_unref_page(pages[ref], nr, trace)
        held[ref] -= nr
        return {"rc": 0, "remaining": remaining}
    if op in _NEEDS_POOL and pool.state is pp.PoolState.FREED:
        return {"rc": -errno.ENOENT}  # the pool is gone: nothing to call it on
    if op == "get_page":
        pp.get_page(pages[int(ev["alloc"])])
        gets[i] = pages[int(ev["alloc"])]
    elif op == "fail_allocs":
        pool.allocator.fail(int(ev["count"]))
    elif op == "update_nid":
        pp.page_pool_update_nid(pool, int(ev["nid"]), trace)
    elif op == "pfmemalloc":
        pool.allocator.pfmemalloc_next += int(ev["count"])
    elif op == "force_nid":
        nid = ev.get("nid")
        pool.allocator.force_nid = None if nid is None else int(nid)
    elif op == "fail_dma_maps":  # PP-ALLOC-005: dma_mapping_error for the next mappings
        dev.fail_map_next += int(ev["count"])
    elif op == "nid_changed":  # PP-NUMA-004: the NAPI poll's check of numa_mem_id()
        pp.page_pool_nid_changed(pool, int(ev["nid"]), trace)
    elif op == "use_xdp_mem":  # PP-DESTROY-001: the XDP memory model's user reference
        pp.page_pool_use_xdp_mem(pool)
    elif op == "napi_owner":  # PP-RECYCLE-002, PP-DESTROY-008: where the NAPI is polled
        if pool.napi is None:
            return {"rc": -errno.ENOENT}  # a pool without a NAPI instance
        pool.napi.list_owner = int(ev["cpu"])
    elif op == "enable_direct_recycling":  # PP-DESTROY-008: a queue restart attaches a NAPI
        k = ev["napi"]
        napi = None if k is None else napis.setdefault(int(k), pp.NapiStruct())
        pp.page_pool_enable_direct_recycling(pool, napi, trace)
    elif op == "destroy":
        pp.page_pool_destroy(pool, trace)
        return {"rc": 0, "inflight": pp.page_pool_inflight(pool, True),
                "state": pool.state.value}
    elif op == "release_retry":
        if pool.state is not pp.PoolState.DETACHED:
            return {"rc": -errno.ENOENT}  # no deferred release is pending
        inflight = pp.page_pool_release_retry(pool, trace)
        return {"rc": 0, "inflight": inflight, "state": pool.state.value}
    else:
        raise ValueError(f"page_pool scenario event {i}: unknown op {op!r}")
    return {"rc": 0}


def expected(scenario: Scenario) -> dict[str, Any]:
    return _run(scenario, None)


_STAT_RULES = {
    "rx_pp_alloc_fast": ("PP-ALLOC-001",),
    "rx_pp_alloc_slow": ("PP-ALLOC-004",),
    "rx_pp_alloc_empty": ("PP-ALLOC-002",),
    "rx_pp_alloc_refill": ("PP-ALLOC-003",),
    "rx_pp_alloc_waive": ("PP-NUMA-002", "PP-NUMA-001"),
    "rx_pp_recycle_cached": ("PP-RECYCLE-004",),
    "rx_pp_recycle_cache_full": ("PP-RECYCLE-005",),
    "rx_pp_recycle_ring": ("PP-RECYCLE-006",),
    "rx_pp_recycle_ring_full": ("PP-RECYCLE-006", "PP-RING-001", "PP-RING-002",
                                "PP-INIT-002"),
    "rx_pp_recycle_released_ref": ("PP-RECYCLE-003",),
}


#: What decides whether and how much a put syncs for the device: the sync rule, the
#: rules of a put that syncs nothing (not the last reference, not recyclable, after the
#: pool turned syncing off at destroy), and the ptr_ring path whose page is synced.
_SYNC_RULES = ("PP-RECYCLE-001", "PP-RECYCLE-003", "PP-RECYCLE-006", "PP-DESTROY-003",
               "PP-DESTROY-006")


def _pp_rules(events: Iterable[TraceEvent]) -> tuple[str, ...]:
    """The PP- rules of some trace events, each once, in the order applied."""
    return tuple(dict.fromkeys(e.rule for e in events if e.rule.startswith("PP-")))


def _names_pfn(event: TraceEvent, pfn: int) -> bool:
    fields = dict(event.fields)
    return fields.get("pfn") == pfn or pfn in fields.get("pfns", ())  # type: ignore[operator]


#: Why a put did not cache its page: not direct (PP-RECYCLE-002), not recyclable
#: (PP-RECYCLE-003), the cache full (PP-RECYCLE-005).
_NOT_CACHED = ("PP-RECYCLE-002", "PP-RECYCLE-003", "PP-RECYCLE-005")


def _cache_provenance(traces: list[Trace], index: int) -> list[TraceEvent]:
    """Which page the fast path hands out (PP-ALLOC-001, the cache is a stack) was decided
    by whoever put it on top, and by every later put that did not cache its own page
    instead: the events of the last earlier event whose trace names that page (a direct
    put: PP-RECYCLE-002 and PP-RECYCLE-004), then why each put after it left its page out
    of the cache (:data:`_NOT_CACHED`).  Empty when event ``index`` did not pop the cache,
    or no earlier event names the page (a refill's or the slow path's other pages)."""
    popped = [e for e in traces[index] if e.rule == "PP-ALLOC-001"]
    if not popped:
        return []
    pfn = dict(popped[-1].fields).get("pfn")
    if not isinstance(pfn, int):
        return []
    for j in range(index - 1, -1, -1):
        named = [e for e in traces[j] if _names_pfn(e, pfn)]
        if named:
            later = [e for trace in traces[j + 1:index]
                     if not any(t.rule == "PP-RECYCLE-004" for t in trace)
                     for e in trace if e.rule in _NOT_CACHED]
            return [*named, *later]
    return []


def attribute(scenario: Scenario) -> Callable[[str], tuple[str, ...]]:
    """Blame from the reference's own run (its trace, one per event):

    * an event's fields: the rules that event applied (a put's sync: PP-DMA-001 and
      what stopped a sync); the page a fast-path allocation returns also by the rules of
      the event that put it on top of the cache and of the later puts that left theirs
      out (:func:`_cache_provenance`);
    * a pool-wide field (a counter, the DMA counts, ``inflight``, ``state``,
      ``warnings``): the rules of the events that changed it;
    * ``dma_mapped.K``: PP-DMA-004 (the one rule that unmaps and clears the address);
    * ``pages.K`` / ``pp_ref_count.K``: the rules of the last event whose trace names
      page K (where it was put, released or handed out);
    * otherwise (a field the reference never changed) the counter's rule, then the
      static ``field_rules``.
    """
    traces: list[Trace] = []
    snapshots: list[dict[str, Any]] = []
    pfns: list[int] = []
    _run(scenario, traces, snapshots, pfns)
    created = _create(scenario)
    if created.pool is None:  # refused: the creation checks decide everything
        rc_rules = _create_rules(scenario)
        return lambda path: rc_rules
    initial = _snapshot(created.pool)

    def changed(path: str) -> tuple[str, ...]:
        out: dict[str, None] = {}
        before = initial
        for trace, after in zip(traces, snapshots, strict=True):
            if after.get(path) != before.get(path):
                out.update(dict.fromkeys(_pp_rules(trace)))
            before = after
        return tuple(out)

    def rules(path: str) -> tuple[str, ...]:
        if path.startswith("events["):
            index = int(path.removeprefix("events[").partition("]")[0])
            if index >= len(traces):
                return ()
            applied_here = _pp_rules(traces[index])
            if path.endswith((".synced", ".sync_offset")):
                return ("PP-DMA-001", *(r for r in applied_here if r in _SYNC_RULES))
            if path.endswith(".page"):
                return _pp_rules([*traces[index], *_cache_provenance(traces, index)])
            return applied_here
        head, _, key = path.partition(".")
        if head == "dma_mapped":  # mapped at alloc, unmapped on release or scrub
            return ("PP-DMA-004",)
        if head in ("pages", "pp_ref_count") and key.isdigit() and int(key) < len(pfns):
            pfn = pfns[int(key)]
            for trace in reversed(traces):
                named = [e for e in trace if _names_pfn(e, pfn)]
                if named:
                    return _pp_rules(named)
            return ()
        moved = changed(path)
        if moved:
            return moved
        if path.startswith("stats."):
            return _STAT_RULES.get(path.removeprefix("stats."), ("PP-STATS-001", "PP-STATS-003"))
        return ()

    return rules


def applied(scenario: Scenario) -> set[str]:
    traces: list[Trace] = []
    _run(scenario, traces)
    creation = Trace()
    _create(scenario, creation)
    return {rule for trace in (creation, *traces) for rule in trace.rules()}


COMPONENT = Component(
    name="page_pool",
    expected=expected,
    attribute=attribute,
    applied=applied,
    field_rules=(
        ("events[*].page", ("PP-ALLOC-001", "PP-ALLOC-004")),
        ("events[*].synced", ("PP-DMA-001",)),
        ("events[*].sync_offset", ("PP-DMA-001",)),
        ("events[*].offset", ("PP-FRAG-003",)),
        ("events[*].truesize", ("PP-FRAG-006",)),
        ("events[*].inflight", ("PP-DESTROY-004",)),
        ("events[*].state", ("PP-DESTROY-003", "PP-DESTROY-005")),
        ("events[*].rc", ("PP-ALLOC-004",)),
        ("stats.*", ("PP-STATS-001",)),
        ("inflight", ("PP-DESTROY-004",)),
        ("pages.*", ("PP-LEDGER-001", "PP-LEDGER-002")),
        ("pp_ref_count.*", ("PP-RECYCLE-001", "PP-RECYCLE-011", "PP-PAGE-001", "PP-FRAG-007")),
        ("dma.maps", ("PP-ALLOC-005", "PP-DMA-002")),
        ("dma.unmaps", ("PP-DMA-004", "PP-RECYCLE-007")),
        ("dma.syncs_for_device", ("PP-DMA-001", "PP-DMA-002", "PP-DMA-003")),
        ("dma.*", ("PP-DMA-001",)),
        ("state", ("PP-DESTROY-003", "PP-DESTROY-001", "PP-INIT-006")),
        ("warnings", ("PP-DESTROY-007", "PP-DESTROY-008", "PP-FRAG-001")),
    ),
)


# --- teaching -----------------------------------------------------------------------------

#: ``rx-oracle explain --driver page_pool --config '{}'``: a small pool (a 4-slot ring, so
#: it fills) owned by a NAPI instance on CPU 0, syncing 2048 bytes at offset 64.
EXPLAIN_DEFAULTS: dict[str, Any] = {"params": {"pool_size": 4, "max_len": 2048, "offset": 64},
                                    "napi_cpu": 0}

#: The events explain runs when none are given: the slow path's bulk allocation, then a
#: page back by each road (the alloc cache, the ring from another CPU, released because
#: someone holds it), the fast path, and a destroy with a page still in flight.
EXPLAIN_EVENTS: tuple[dict[str, Any], ...] = (
    {"op": "alloc"}, {"op": "alloc"}, {"op": "alloc"},
    {"op": "put", "alloc": 0, "sync": -1, "direct": True},
    {"op": "put", "alloc": 1, "sync": 64, "direct": False, "cpu": 1},
    {"op": "get_page", "alloc": 2},
    {"op": "put", "alloc": 2, "sync": -1, "direct": False},
    {"op": "alloc"},
    {"op": "destroy"},
    {"op": "put", "alloc": 7, "sync": -1, "direct": False, "cpu": 1},
    {"op": "release_retry"},
)

#: The rule behind an event the reference does not trace.
_UNTRACED = {"get_page": "PP-PAGE-002", "fail_allocs": "PP-ALLOC-004",
             "pfmemalloc": "PP-RECYCLE-003", "force_nid": "PP-NUMA-002",
             "ref_page": "PP-RECYCLE-011", "update_nid": "PP-NUMA-003",
             "release_retry": "PP-DESTROY-005", "put": "PP-RECYCLE-001",
             "drop_page": "PP-PAGE-002", "put_bulk": "PP-RECYCLE-009",
             "fragment_page": "PP-RECYCLE-011", "unref_page": "PP-RECYCLE-011",
             "put_unrefed": "PP-RECYCLE-011", "fail_dma_maps": "PP-ALLOC-005",
             "nid_changed": "PP-NUMA-004", "use_xdp_mem": "PP-DESTROY-001",
             "napi_owner": "PP-RECYCLE-002", "cycle": "PP-RING-001",
             "enable_direct_recycling": "PP-DESTROY-008"}


def _params_text(scenario: Scenario) -> str:
    """The pool's ``page_pool_params`` as the driver filled them in, flags and the DMA
    direction by name."""
    cfg = scenario.config
    p = dict(cfg.get("params", {}))
    flags = int(p.get("flags", pp.PP_FLAG_DMA_MAP | pp.PP_FLAG_DMA_SYNC_DEV))
    flag_names = "|".join(n for n, bit in (
        ("PP_FLAG_DMA_MAP", pp.PP_FLAG_DMA_MAP), ("PP_FLAG_DMA_SYNC_DEV", pp.PP_FLAG_DMA_SYNC_DEV),
        ("PP_FLAG_SYSTEM_POOL", pp.PP_FLAG_SYSTEM_POOL),
        ("PP_FLAG_ALLOW_UNREADABLE_NETMEM", pp.PP_FLAG_ALLOW_UNREADABLE_NETMEM),
    ) if flags & bit) or "0"
    direction = {pp.DMA_BIDIRECTIONAL: "DMA_BIDIRECTIONAL", pp.DMA_TO_DEVICE: "DMA_TO_DEVICE",
                 pp.DMA_FROM_DEVICE: "DMA_FROM_DEVICE"}
    dma_dir = int(p.get("dma_dir", pp.DMA_FROM_DEVICE))
    napi = cfg.get("napi_cpu")
    return (f"page_pool: flags {flag_names}, pool_size {p.get('pool_size', 0)}, max_len "
            f"{p.get('max_len', 4096)}, offset {p.get('offset', 0)}, dma_dir "
            f"{direction.get(dma_dir, str(dma_dir))}, nid {p.get('nid', 0)}, "
            + (f"NAPI on CPU {napi}" if napi is not None else "no NAPI") + " (PP-INIT-006)")


def _event_text(ev: Mapping[str, Any], out: Mapping[str, Any]) -> str:
    """What one event asked and what it returned."""
    op = ev["op"]
    rc = f"rc {rc_text(int(out['rc']))}"
    if op in ("alloc", "alloc_frag", "ref_page"):
        asked = {"alloc": "alloc", "ref_page": f"ref_page on the page of event {ev.get('alloc')}",
                 "alloc_frag": f"alloc_frag of {ev.get('size')} bytes"
                 + (" (page_pool_dev_alloc, truesize asked)" if ev.get("truesize") else "")}[op]
        got = "".join(f", {k} {out[k]}" for k in ("page", "offset", "truesize") if k in out)
        return f"{asked} -> {rc}{got}"
    if op == "put":
        sync = int(ev.get("sync", -1))
        sync_text = "-1 (max_len)" if sync == -1 else str(sync)
        asked = (f"put the page of event {ev['alloc']} (dma_sync_size {sync_text}, "
                 f"allow_direct {value_text(bool(ev.get('direct', False)))}, CPU "
                 f"{ev.get('cpu', 0)}, softirq {value_text(bool(ev.get('softirq', True)))})")
        if out.get("synced") is not None:
            return (f"{asked} -> {rc}, synced {out['synced']} bytes for the device at offset "
                    f"{out['sync_offset']}")
        return f"{asked} -> {rc}, no sync"
    if op == "cycle" and "got" in out:
        return (f"cycle of {ev['count']} page(s) out and back -> {rc}, got {out['got']}")
    if op in ("destroy", "release_retry") and "inflight" in out:
        return f"{op} -> {rc}, {out['inflight']} page(s) in flight, pool {out['state']}"
    if op == "get_page":
        return (f"get_page on the page of event {ev['alloc']} (someone else takes an mm "
                f"reference) -> {rc}")
    detail = ", ".join(f"{k} {value_text(v)}" for k, v in ev.items() if k != "op")
    return f"{op}{' ' + detail if detail else ''} -> {rc}"


def explain(scenario: Scenario) -> str:
    """Narrate each pool operation: what it asked, its return code, the page it handed out
    or took back and where that page went, with the deciding rule and the reference's
    trace; then where every page is at the end and the ethtool counters.  Without
    events, :data:`EXPLAIN_EVENTS` run."""
    notes: list[str] = []
    if not scenario.events:
        scenario = attrs.evolve(scenario, events=EXPLAIN_EVENTS)
        notes.append("no --events given: three allocations, a page back by each road, a "
                     "fast-path allocation, and a destroy with a page in flight")
    created = _create(scenario)
    if created.pool is None:  # the parameters are refused before any event runs
        return "\n".join([*notes, _params_text(scenario),
                          f"page_pool_create -> rc {rc_text(created.err)} "
                          f"({', '.join(_create_rules(scenario))})"])
    traces: list[Trace] = []
    observed = _run(scenario, traces)
    lines = [*notes, _params_text(scenario)]
    for i, (ev, out) in enumerate(zip(scenario.events, observed["events"], strict=True)):
        op = str(ev["op"])
        rules = [r for r in traces[i].rules() if r.startswith("PP-")][-1:]
        if int(out["rc"]) == -errno.ENOENT:
            rules = ["PP-DESTROY-005" if op == "release_retry" else "PP-RECYCLE-010"]
        elif not rules and op in _UNTRACED:
            rules = [_UNTRACED[op]]
        if op == "put" and out.get("synced") is not None:
            rules.append("PP-DMA-001")
        why = f" ({', '.join(rules)})" if rules else ""
        lines.append(f"event {i}: {_event_text(ev, out)}{why}")
        lines += ["  " + e.render() for e in traces[i]]
    pages = observed["pages"]
    if pages:
        lines.append("at the end (PP-LEDGER-002): " + ", ".join(
            f"page {k} -> {where}" for k, where in pages.items()))
    lines.append(f"in flight {observed['inflight']}, pool {observed['state']}, DMA maps "
                 f"{observed['dma']['maps']}, unmaps {observed['dma']['unmaps']}, syncs for "
                 f"the device {observed['dma']['syncs_for_device']} (PP-DESTROY-004, "
                 "PP-DMA-001)")
    lines.append("ethtool (PP-STATS-003): " + ", ".join(
        f"{k}={v}" for k, v in observed["stats"].items()))
    return "\n".join(lines)


#: Stop drawing new operations past this many events; one more burst stays below 4096.
_MAX_EVENTS = 3200
_FRAG_SIZES = (1, 64, 256, 1024, 1500, 2047, 2048, 2049, 4095, 4096, 4097)


#: Parameters at the edges of ``page_pool_init``'s checks (PP-INIT-001 .. 005, 007), each
#: next to the nearest one it accepts: unknown flag bits, a mapping pool's direction, sync
#: for device without mapping or length, the order limit (7.3 refuses it at creation), and
#: pool sizes at and above the 16K clamp (PP-INIT-002: accepted, clamped), with the rule
#: that decides each on the default kernel (7.3.4).  No PP_FLAG_ALLOW_UNREADABLE_NETMEM:
#: without a net_device and memory provider the kernel would dereference NULL.
_DMA_BOTH = pp.PP_FLAG_DMA_MAP | pp.PP_FLAG_DMA_SYNC_DEV
U32_MAX = 0xFFFF_FFFF
CREATION_CASES: tuple[tuple[str, dict[str, int]], ...] = (
    ("PP-INIT-001", {"flags": _DMA_BOTH | 1 << 4}), ("PP-INIT-001", {"flags": 1 << 31}),
    ("PP-INIT-001", {"flags": _DMA_BOTH | pp.PP_FLAG_SYSTEM_POOL}),
    ("PP-INIT-003", {"flags": pp.PP_FLAG_DMA_MAP, "dma_dir": pp.DMA_TO_DEVICE}),
    ("PP-INIT-003", {"flags": pp.PP_FLAG_DMA_MAP, "dma_dir": pp.DMA_NONE}),
    ("PP-INIT-003", {"flags": 0, "dma_dir": pp.DMA_TO_DEVICE}),
    ("PP-INIT-004", {"flags": pp.PP_FLAG_DMA_SYNC_DEV}),
    ("PP-INIT-004", {"flags": pp.PP_FLAG_DMA_SYNC_DEV, "max_len": 0}),
    ("PP-INIT-004", {"flags": _DMA_BOTH, "max_len": 0}),
    ("PP-INIT-004", {"flags": pp.PP_FLAG_DMA_MAP, "max_len": 0}),
    ("PP-INIT-005", {"flags": _DMA_BOTH | 1 << 4, "dma_dir": pp.DMA_NONE, "max_len": 0}),
    ("PP-INIT-005", {"flags": pp.PP_FLAG_DMA_SYNC_DEV, "order": 11}),
    ("PP-INIT-007", {"order": 11}), ("PP-INIT-007", {"order": 10}),
    ("PP-INIT-007", {"order": 0xFFFF_FFFF}),
    ("PP-INIT-002", {"pool_size": 16384}), ("PP-INIT-002", {"pool_size": 16385}),
    ("PP-INIT-002", {"pool_size": 32768}), ("PP-INIT-002", {"pool_size": 32769}),
    ("PP-INIT-002", {"pool_size": 0xFFFF_FFFF}),
)


@st.composite
def _pool_config(draw: st.DrawFn) -> dict[str, Any]:
    flags = draw(st.sampled_from([_DMA_BOTH] * 3 + [pp.PP_FLAG_DMA_MAP, 0,
                                                   _DMA_BOTH | pp.PP_FLAG_SYSTEM_POOL]))
    config: dict[str, Any] = {"params": {"pool_size": draw(st.sampled_from([0, 16, 64, 128])),
                                         "max_len": draw(st.sampled_from([1536, 2048, 4096])),
                                         "offset": draw(st.sampled_from([0, 64, 256])),
                                         "flags": flags}}
    if draw(st.booleans()):  # PP-INIT-003: the other direction a mapping pool may have
        config["params"]["dma_dir"] = pp.DMA_BIDIRECTIONAL
    if draw(st.integers(0, 4)) == 0:  # PP-ALLOC-006: compound pages, one per slow call
        config["params"]["order"] = draw(st.sampled_from([1, 2]))
    if draw(st.booleans()):
        config["napi_cpu"] = draw(st.sampled_from([0, 1]))
    if draw(st.integers(0, 2)) == 0:  # PP-RECYCLE-002: a per-CPU pool (system pools)
        config["cpuid"] = draw(st.sampled_from([0, 1]))
    if draw(st.integers(0, 2)) == 0:  # PP-FRAG-002: fragments rounded to a cache line
        config["arch"] = "arm64"
    if draw(st.integers(0, 7)) == 0:  # PP-INIT-*: parameters at a creation check's edge
        config["params"].update(draw(st.sampled_from(CREATION_CASES))[1])
    return config


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    """A small pool (so the ring fills), then a random mix of allocs, fragments, extra
    references and puts, special pages (pfmemalloc, another node) now and then, and
    sometimes a destroy with pages still out, later puts and deferred release retries.
    No ``enable_direct_recycling``: a 6.12 run would skip the whole property on the
    first example holding one (not applicable); :data:`LIFECYCLE` has it."""
    config = draw(_pool_config())
    max_len = int(config["params"]["max_len"])
    syncs = [-1, 0, 1, 64, 1500, max_len - 1, max_len, max_len + 1, 9000]
    events: list[dict[str, Any]] = []
    held: list[int] = []
    gotten: list[int] = []  # get_page events whose mm reference is still held

    def put(idx: int, direct: bool | None = None) -> None:
        events.append({"op": "put", "alloc": idx, "sync": draw(st.sampled_from(syncs)),
                       "direct": draw(st.booleans()) if direct is None else direct,
                       "cpu": draw(st.sampled_from([0, 1])),
                       "softirq": draw(st.booleans() | st.just(True))})

    users = 1  # page_pool_destroy calls it takes to free the pool (PP-DESTROY-001)
    prelude = draw(st.sampled_from(["", "", "", "", "frag_fail", "dma_fail"]))
    if prelude == "frag_fail":  # PP-FRAG-004: a fragment with no page to carve (pool empty)
        events += [{"op": "fail_allocs", "count": 1},
                   {"op": "alloc_frag", "size": draw(st.sampled_from([64, 1024])),
                    "truesize": draw(st.booleans())}]
    elif prelude == "dma_fail":  # PP-ALLOC-005: every page of the first bulk fails to map
        events += [{"op": "fail_dma_maps", "count": 64}, {"op": "alloc"}]
    for _ in range(draw(st.integers(1, 60))):
        if len(events) > _MAX_EVENTS:  # events name earlier events by index (schema: 4096)
            break
        kind = draw(st.sampled_from(["alloc", "alloc", "alloc", "put", "put", "put", "burst",
                                     "get_page", "fail", "nid", "frag", "frag", "ref",
                                     "special", "ring", "unref", "get_page", "drop",
                                     "bulk", "dma_fail", "xdp_mem", "napi", "frag_cycle"]))
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
        elif kind == "ring" and 0 < int(config["params"]["pool_size"]) <= 128:
            # PP-RING-001/002: fill the ring, drain part of it, refill it
            size = int(config["params"]["pool_size"])
            for n in (size + draw(st.sampled_from([0, 8, 70])),
                      draw(st.sampled_from([1, 63, 64, 65, 70]))):
                start = len(events)
                events.extend({"op": "alloc"} for _ in range(n))
                events.extend({"op": "put", "alloc": start + j, "sync": -1, "direct": False,
                               "softirq": False} for j in range(n))
        elif kind == "put" and held:
            put(held.pop(draw(st.integers(0, len(held) - 1))))
        elif kind == "get_page" and held:
            gotten.append(len(events))
            events.append({"op": "get_page", "alloc": draw(st.sampled_from(held))})
        elif kind == "drop" and gotten:  # PP-PAGE-002: the other holder lets go
            events.append({"op": "drop_page",
                           "get": gotten.pop(draw(st.integers(0, len(gotten) - 1)))})
        elif kind == "bulk" and held:  # PP-RECYCLE-009: xdp_return_frame_bulk's flush
            n = draw(st.integers(1, min(16, len(held))))
            chosen = [held.pop(draw(st.integers(0, len(held) - 1))) for _ in range(n)]
            events.append({"op": "put_bulk", "allocs": chosen,
                           "cpu": draw(st.sampled_from([0, 1])),
                           "softirq": draw(st.booleans() | st.just(True))})
        elif kind == "fail":
            events.append({"op": "fail_allocs", "count": draw(st.integers(1, 2))})
        elif kind == "nid":  # PP-NUMA-003 / PP-NUMA-004 (the second updates only on a change)
            events.append({"op": draw(st.sampled_from(["update_nid", "nid_changed"])),
                           "nid": draw(st.sampled_from([0, 1]))})
        elif kind == "dma_fail":  # PP-ALLOC-005: the next mappings fail, then allocations
            events.append({"op": "fail_dma_maps", "count": draw(st.sampled_from([1, 2, 64]))})
            for _ in range(draw(st.integers(1, 3))):
                held.append(len(events))
                events.append({"op": "alloc"})
        elif kind == "xdp_mem":  # PP-DESTROY-001: one more user, one more destroy to free
            users += 1
            events.append({"op": "use_xdp_mem"})
        elif kind == "napi":  # PP-RECYCLE-002: the NAPI moves, or stops (napi_disable)
            events.append({"op": "napi_owner", "cpu": draw(st.sampled_from([-1, 0, 1]))})
        elif kind == "frag_cycle":  # PP-FRAG-005: fragments all back, then one that won't fit
            size = draw(st.sampled_from([1024, 1500, 2048]))
            start = len(events)
            n = draw(st.integers(1, 3))
            events.extend({"op": "alloc_frag", "size": size} for _ in range(n))
            if draw(st.booleans()):  # someone else keeps the page: it cannot be reused
                gotten.append(len(events))
                events.append({"op": "get_page", "alloc": start})
            for j in range(n):
                put(start + j)
            held.append(len(events))
            events.append({"op": "alloc_frag", "size": 4096})
        elif kind == "frag":  # PP-FRAG-*: several fragments, sizes at the page boundaries
            for _ in range(draw(st.integers(1, 4))):
                held.append(len(events))
                events.append({"op": "alloc_frag", "size": draw(st.sampled_from(_FRAG_SIZES)),
                               "truesize": draw(st.booleans())})
        elif kind == "ref" and held:  # PP-RECYCLE-011
            idx = draw(st.sampled_from(held))
            held.append(len(events))
            events.append({"op": "ref_page", "alloc": idx})
        elif kind == "unref":  # PP-RECYCLE-011: a page split among holders, then unref'd
            idx = len(events)
            nr = draw(st.integers(1, 4))
            events += [{"op": "alloc"}, {"op": "fragment_page", "alloc": idx, "nr": nr}]
            left = nr
            while left:
                if draw(st.booleans()):  # one holder returns its reference with a put
                    put(idx)
                    left -= 1
                    continue
                n = draw(st.integers(1, left))
                events.append({"op": "unref_page", "alloc": idx, "nr": n})
                left -= n
            if events[-1]["op"] == "unref_page":  # the last unref left 0: recycle it
                events.append({"op": "put_unrefed", "alloc": idx,
                               "sync": draw(st.sampled_from(syncs)), "direct": draw(st.booleans()),
                               "cpu": draw(st.sampled_from([0, 1])),
                               "softirq": draw(st.booleans() | st.just(True))})
        elif kind == "special":  # PP-RECYCLE-003, PP-NUMA-002: pages the pool must not keep
            if draw(st.booleans()):
                events.append({"op": "pfmemalloc", "count": draw(st.integers(1, 3))})
            else:
                events.append({"op": "force_nid", "nid": draw(st.sampled_from([1, None]))})
    if draw(st.integers(0, 2)) == 0:  # PP-DESTROY-*: destroy with pages in flight
        events.extend({"op": "destroy"} for _ in range(users))
        if draw(st.integers(0, 3)) == 0:  # PP-DESTROY-007: a driver's double destroy (WARN)
            events.append({"op": draw(st.sampled_from(["destroy", "use_xdp_mem"]))})
        for _ in range(draw(st.integers(0, 3))):
            if len(held) > 0 and draw(st.booleans()):
                late = held.pop(draw(st.integers(0, len(held) - 1)))
                put(late, direct=draw(st.booleans()))
            events.append({"op": "release_retry"})
        while len(held) > 0 and draw(st.booleans()):
            put(held.pop())
        events.append({"op": "release_retry"})
    return Scenario(component="page_pool", config=config, events=tuple(events),
                    rules=("PP-ALLOC-001", "PP-RECYCLE-004", "PP-STATS-001"))


# --- fixed scenarios: each creation check and each life-cycle road once -------------------

def creation_scenarios() -> list[Scenario]:
    """:data:`CREATION_CASES` (the ci sample of the property meets only some; each is the
    only road to its errno or its acceptance) as scenarios: the edge parameters, then an
    allocation and its put (run only when the pool is created)."""
    return [Scenario(component="page_pool",
                     config={"params": {"flags": _DMA_BOTH, "max_len": 2048, **patch}},
                     events=({"op": "alloc"}, {"op": "put", "alloc": 0, "sync": -1}),
                     rules=(rule, "PP-INIT-005", "PP-INIT-009"))
            for rule, patch in CREATION_CASES]


_PUT = {"op": "put", "sync": -1}

#: One scenario per life-cycle road the random mix rarely meets: (rule, config, events).
LIFECYCLE: tuple[tuple[str, dict[str, Any], tuple[dict[str, Any], ...]], ...] = (
    ("PP-ALLOC-005", {},  # every page of the bulk fails to map: nothing to hand out
     ({"op": "fail_dma_maps", "count": 64}, {"op": "alloc"}, {"op": "alloc"},
      {**_PUT, "alloc": 2})),
    ("PP-ALLOC-005", {},  # one page of the bulk fails to map, the others are used
     ({"op": "fail_dma_maps", "count": 1}, {"op": "alloc"}, {**_PUT, "alloc": 1})),
    ("PP-ALLOC-006", {"params": {"order": 1}},  # a compound page that fails, then won't map
     ({"op": "fail_allocs", "count": 1}, {"op": "alloc"}, {"op": "fail_dma_maps", "count": 1},
      {"op": "alloc"}, {"op": "alloc"}, {**_PUT, "alloc": 4})),
    ("PP-FRAG-004", {},  # no page to carve a fragment from
     ({"op": "fail_allocs", "count": 1}, {"op": "alloc_frag", "size": 64},
      {"op": "fail_allocs", "count": 1}, {"op": "alloc_frag", "size": 64, "truesize": True})),
    ("PP-FRAG-005", {},  # every fragment back: the full page is reused in place
     ({"op": "alloc_frag", "size": 2048}, {"op": "alloc_frag", "size": 2048},
      {**_PUT, "alloc": 0}, {**_PUT, "alloc": 1}, {"op": "alloc_frag", "size": 2048},
      {**_PUT, "alloc": 4})),
    ("PP-FRAG-005", {},  # every fragment back but someone holds the page: released
     ({"op": "alloc_frag", "size": 2048}, {"op": "get_page", "alloc": 0},
      {**_PUT, "alloc": 0}, {"op": "alloc_frag", "size": 4096}, {"op": "drop_page", "get": 1},
      {**_PUT, "alloc": 3})),
    ("PP-DESTROY-002", {},  # destroy drops the frag bias of a page nobody uses: released
     ({"op": "alloc_frag", "size": 1024}, {**_PUT, "alloc": 0}, {"op": "destroy"})),
    ("PP-DESTROY-007", {},  # destroy twice, then a new XDP user: WARNs, nothing else
     ({"op": "alloc"}, {"op": "destroy"}, {"op": "destroy"}, {"op": "use_xdp_mem"},
      {**_PUT, "alloc": 0}, {"op": "release_retry"}, {"op": "destroy"},
      {"op": "update_nid", "nid": 1})),
    ("PP-DESTROY-001", {},  # a second user: the first destroy only drops it
     ({"op": "use_xdp_mem"}, {"op": "destroy"}, {"op": "alloc"}, {**_PUT, "alloc": 2},
      {"op": "destroy"}, {"op": "nid_changed", "nid": 1})),
    ("PP-DESTROY-008", {"napi_cpu": 0},  # napi_disable before destroy: no WARN
     ({"op": "alloc"}, {"op": "napi_owner", "cpu": 1}, {**_PUT, "alloc": 0, "cpu": 1},
      {"op": "napi_owner", "cpu": -1}, {"op": "destroy"})),
    # queue restarts: the same NAPI, another, none; NAPI 2 is disabled at the destroy
    # (list_owner -1: the model's NAPI has no SCHED bit, PP-DESTROY-008)
    ("PP-DESTROY-008", {"napi_cpu": 0},
     ({"op": "alloc"}, {"op": "enable_direct_recycling", "napi": 0},
      {"op": "enable_direct_recycling", "napi": 1}, {"op": "napi_owner", "cpu": 1},
      {**_PUT, "alloc": 0, "cpu": 1}, {"op": "enable_direct_recycling", "napi": None},
      {"op": "alloc"}, {"op": "enable_direct_recycling", "napi": 2},
      {**_PUT, "alloc": 6, "cpu": 1}, {"op": "destroy"})),
    ("PP-DESTROY-006", {},  # puts after the last destroy: direct stays, the rest is released
     ({"op": "alloc"}, {"op": "alloc"}, {"op": "destroy"}, {**_PUT, "alloc": 0, "direct": True},
      {**_PUT, "alloc": 1}, {"op": "release_retry"})),
    ("PP-NUMA-004", {},  # the same node changes nothing, another flushes the cache
     ({"op": "alloc"}, {**_PUT, "alloc": 0, "direct": True}, {"op": "nid_changed", "nid": 0},
      {"op": "nid_changed", "nid": 1}, {"op": "alloc"})),
    ("PP-INIT-008", {"params": {"flags": _DMA_BOTH | pp.PP_FLAG_SYSTEM_POOL}},
     ({"op": "alloc"}, {**_PUT, "alloc": 0, "direct": True}, {"op": "alloc"},
      {**_PUT, "alloc": 2})),
    ("PP-RECYCLE-003", {"params": {"flags": 0}},  # a pool that maps nothing releases a page
     ({"op": "alloc"}, {"op": "get_page", "alloc": 0}, {**_PUT, "alloc": 0},
      {"op": "napi_owner", "cpu": 0})),
    ("PP-INIT-002", {"params": {"pool_size": 16385}},  # the ring holds the 16K clamp, no more
     ({"op": "cycle", "count": 16386, "softirq": False}, {"op": "alloc"},
      {**_PUT, "alloc": 1})),
    ("PP-DESTROY-003", {},  # pages in the ring at destroy: scrubbed (refcnt invariant holds)
     ({"op": "alloc"}, {"op": "alloc"}, {**_PUT, "alloc": 0, "softirq": False},
      {**_PUT, "alloc": 1, "softirq": False}, {"op": "destroy"})),
    ("PP-RECYCLE-011", {},  # fragment_page at its edge nr 1, then 2 split: unref'd to 0
     ({"op": "alloc"}, {"op": "fragment_page", "alloc": 0, "nr": 1},
      {"op": "unref_page", "alloc": 0, "nr": 1}, {"op": "put_unrefed", "alloc": 0, "sync": -1},
      {"op": "alloc"}, {"op": "fragment_page", "alloc": 4, "nr": 2}, {**_PUT, "alloc": 4},
      {"op": "unref_page", "alloc": 4, "nr": 1},
      {"op": "put_unrefed", "alloc": 4, "sync": -1, "direct": True})),
)

#: The rules of :data:`LIFECYCLE`, in order, for the property's marker.
LIFECYCLE_RULES = tuple(dict.fromkeys(rule for rule, _, _ in LIFECYCLE))


def lifecycle_scenarios() -> list[Scenario]:
    return [Scenario(component="page_pool", config=config, events=events, rules=(rule,))
            for rule, config, events in LIFECYCLE]


def _churn() -> tuple[dict[str, Any], ...]:
    """Refills of several sizes, each all put back to the ring from process context, so
    that the ring's consumer stops short of a batch, reaches the end of the slot array
    and wraps (PP-RING-001, PP-RING-002)."""
    return tuple({"op": "cycle", "count": n, "softirq": False} for n in (64, 20, 40, 100, 7, 70))


#: The roads the random draws miss, each once (the full mutation run's page_pool
#: survivors): (name, rules, config, events).  The rules are those a differing field is
#: blamed on: a ring of the wrong size shows as ``rx_pp_recycle_ring_full``, which the
#: attribution blames on the puts that moved it (PP-RECYCLE-006), not on PP-INIT-002 or
#: PP-RING-001/002, which decided how many fit.
FIXED: tuple[tuple[str, tuple[str, ...], dict[str, Any], tuple[dict[str, Any], ...]], ...] = (
    # PP-INIT-002: pool_size 0 means a ring of 1024, so the 1025th page back is ring_full
    ("default ring size", ("PP-RECYCLE-006",), {},
     ({"op": "cycle", "count": 1025, "softirq": False},)),
    # PP-RING-002: batch 16 only when 16 <= size / 2 (32 and 33 are its edge, 40 is not a
    # multiple of the batch, so the consumer reaches the array's end mid-batch); a ring of
    # one slot still holds one page
    *((f"ring of {n} slots", ("PP-RECYCLE-006", "PP-ALLOC-003"),
       {"params": {"pool_size": n}}, _churn()) for n in (1, 32, 33, 40)),
    # PP-RECYCLE-009: XDP_BULK_QUEUE_SIZE entries is a full bulk, not one too many
    ("bulk of 16", ("PP-RECYCLE-009",), {},
     (*({"op": "alloc"} for _ in range(16)), {"op": "put_bulk", "allocs": list(range(16))})),
    # PP-NUMA-001/005: a NUMA_NO_NODE pool prefers the allocating CPU's node (0), on a
    # page of node 0 as well as against one of node 1
    ("NUMA_NO_NODE pool", ("PP-NUMA-001", "PP-NUMA-002", "PP-NUMA-005", "PP-ALLOC-003"),
     {"params": {"nid": -1}},
     ({"op": "force_nid", "nid": 0}, {"op": "cycle", "count": 64, "softirq": False},
      {"op": "alloc"}, {"op": "force_nid", "nid": 1},
      {"op": "cycle", "count": 130, "softirq": False}, {"op": "alloc"})),
    # PP-NUMA-005: a pool on node 1 allocates there, so its ring pages refill, not waive
    ("pool on node 1", ("PP-NUMA-001", "PP-ALLOC-003"), {"params": {"nid": 1}},
     ({"op": "cycle", "count": 64, "softirq": False}, {"op": "alloc"})),
    # PP-ALLOC-006: a compound page of a NUMA_NO_NODE pool comes from the local node
    ("high order on the local node", ("PP-ALLOC-006", "PP-NUMA-001", "PP-ALLOC-003"),
     {"params": {"nid": -1, "order": 1}},
     ({"op": "alloc"}, {**_PUT, "alloc": 0, "softirq": False}, {"op": "alloc"})),
    # PP-RECYCLE-002 for page_pool_put_unrefed_page: the NAPI's own CPU recycles directly
    ("put_unrefed from the NAPI's CPU", ("PP-RECYCLE-002", "PP-RECYCLE-004", "PP-RECYCLE-011"),
     {"napi_cpu": 0},
     ({"op": "alloc"}, {"op": "fragment_page", "alloc": 0, "nr": 1},
      {"op": "unref_page", "alloc": 0, "nr": 1},
      {"op": "put_unrefed", "alloc": 0, "sync": -1, "direct": False, "cpu": 0})),
    # PP-DMA-001: a -1 length is u32 0xFFFFFFFF, all of a max_len at the u32 top, through
    # each full-length road (put_full_page, recycle_direct, the bulk, a drained frag page)
    ("full-length syncs at max_len 0xFFFFFFFF", ("PP-DMA-001", "PP-RECYCLE-009", "PP-FRAG-005"),
     {"params": {"max_len": U32_MAX, "flags": _DMA_BOTH}},
     ({"op": "alloc"}, {**_PUT, "alloc": 0, "softirq": False}, {"op": "alloc"},
      {**_PUT, "alloc": 2, "direct": True}, {"op": "alloc"}, {"op": "alloc"},
      {"op": "put_bulk", "allocs": [4, 5], "softirq": False},
      {"op": "alloc_frag", "size": 2048}, {"op": "alloc_frag", "size": 2048},
      {**_PUT, "alloc": 7}, {**_PUT, "alloc": 8}, {"op": "alloc_frag", "size": 2048})),
    # PP-DESTROY-008: the last destroy detaches the NAPI, so a later put from its CPU is not
    # direct: the page goes to the ring and the release retry scrubs it
    ("put after destroy from the NAPI's CPU", ("PP-DESTROY-008", "PP-RECYCLE-006"),
     {"napi_cpu": 0},
     ({"op": "alloc"}, {"op": "alloc"}, {"op": "destroy"}, {**_PUT, "alloc": 0, "cpu": 0},
      {"op": "release_retry"})),
    # PP-NUMA-003/004 on a pool waiting for its pages: still callable, nothing to flush
    ("node change on a detached pool", ("PP-NUMA-003", "PP-NUMA-004"), {},
     ({"op": "alloc"}, {"op": "destroy"}, {"op": "update_nid", "nid": 1},
      {"op": "nid_changed", "nid": 0}, {**_PUT, "alloc": 0}, {"op": "release_retry"})),
    # PP-DESTROY-008: attaching a NAPI to a pool that has none does not WARN (v6.17+)
    ("enable_direct_recycling on a pool without NAPI", ("PP-DESTROY-008",), {},
     ({"op": "enable_direct_recycling", "napi": 0}, {"op": "alloc"}, {**_PUT, "alloc": 1})),
)

#: The rules of :data:`FIXED`, in order, for the property's marker.
FIXED_RULES = tuple(dict.fromkeys(rule for _, rules, _, _ in FIXED for rule in rules))


def fixed_scenarios() -> list[tuple[str, Scenario]]:
    return [(name, Scenario(component="page_pool", config=config, events=events, rules=rules))
            for name, rules, config, events in FIXED]

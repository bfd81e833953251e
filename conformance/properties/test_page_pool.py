"""page_pool properties: the same operations give the same pages back in the same order,
the same syncs, the same counters, and leave every page in the same place: also with
fragments (rounded to arm64's cache line too), extra pp references, pages split among
holders and unref'd (``page_pool_fragment_page`` / ``page_pool_unref_page`` /
``page_pool_put_unrefed_page``), bulk puts, another holder's mm reference taken and dropped,
high-order and bidirectional pools, per-CPU pools (``cpuid``), pfmemalloc and foreign-node
pages, and a destroy with pages still in flight followed by late puts and deferred release
retries."""

from __future__ import annotations

import pytest
from hypothesis import given

from conformance.check import TargetSession, check
from conformance.components import page_pool
from conformance.scenario import Scenario

COMPONENT = page_pool.COMPONENT


@pytest.mark.rule("PP-ALLOC-001", "PP-ALLOC-002", "PP-ALLOC-003", "PP-ALLOC-004",
                  "PP-NUMA-001", "PP-NUMA-003", "PP-RECYCLE-002", "PP-RECYCLE-003",
                  "PP-RECYCLE-004", "PP-RECYCLE-005", "PP-RECYCLE-006", "PP-DMA-001",
                  "PP-STATS-001", "PP-DESTROY-004", "PP-LEDGER-001",
                  "PP-LEDGER-002", "PP-RECYCLE-001", "PP-RECYCLE-011", "PP-NUMA-002",
                  "PP-DMA-002", "PP-DMA-004", "PP-FRAG-001", "PP-FRAG-003", "PP-FRAG-004",
                  "PP-FRAG-005", "PP-FRAG-006", "PP-DESTROY-002", "PP-DESTROY-003",
                  "PP-DESTROY-005", "PP-DESTROY-006", "PP-PAGE-001", "PP-ALLOC-005",
                  "PP-DMA-003", "PP-RECYCLE-007", "PP-RING-001", "PP-RING-002",
                  "PP-NUMA-005", "PP-STATS-003", "PP-DESTROY-001", "PP-DESTROY-008",
                  "PP-INIT-002", "PP-INIT-006", "PP-FRAG-007", "PP-FRAG-002",
                  "PP-ALLOC-006", "PP-RECYCLE-009")
@given(scenario=page_pool.scenarios())
def test_page_pool_agrees_with_reference(rx_target: TargetSession, scenario: Scenario) -> None:
    check(rx_target, scenario, COMPONENT)


#: The rules ``page_pool.CREATION_CASES`` decide by, written out so the marker reads
#: statically (``rx-oracle spec``); tests/test_page_pool.py keeps the two equal.
CREATION_RULES = ("PP-INIT-001", "PP-INIT-002", "PP-INIT-003", "PP-INIT-004", "PP-INIT-005",
                  "PP-INIT-007", "PP-INIT-009")


@pytest.mark.rule(*CREATION_RULES)
@pytest.mark.parametrize("scenario", page_pool.creation_scenarios(),
                         ids=[f"{rule}-{i}" for i, (rule, _) in
                              enumerate(page_pool.CREATION_CASES)])
def test_page_pool_each_creation_edge(rx_target: TargetSession, scenario: Scenario) -> None:
    """Each creation check at its edge once (``create.rc``): an unknown flag, a mapping
    pool's direction, sync for device without mapping or length, the order limit, pool
    sizes about the 16K clamp; the random property meets only some of them."""
    check(rx_target, scenario, COMPONENT)


#: ``page_pool.LIFECYCLE_RULES``, written out for the same reason.
LIFECYCLE_RULES = ("PP-ALLOC-005", "PP-ALLOC-006", "PP-FRAG-004", "PP-FRAG-005",
                   "PP-DESTROY-002", "PP-DESTROY-007", "PP-DESTROY-001", "PP-DESTROY-008",
                   "PP-DESTROY-006",
                   "PP-NUMA-004", "PP-INIT-008", "PP-RECYCLE-003", "PP-INIT-002",
                   "PP-DESTROY-003", "PP-RECYCLE-011")


@pytest.mark.rule(*LIFECYCLE_RULES)
@pytest.mark.parametrize("scenario", page_pool.lifecycle_scenarios(),
                         ids=[f"{rule}-{i}" for i, (rule, _, _) in
                              enumerate(page_pool.LIFECYCLE)])
def test_page_pool_each_lifecycle_road(rx_target: TargetSession, scenario: Scenario) -> None:
    """Each road of a pool's life the random mix rarely takes, once: DMA mappings that
    fail, fragments with no page or all returned, a destroy that drops the frag bias,
    double destroy and a late XDP user (WARNs), a second user, NAPI moved and disabled
    before destroy, queue restarts attaching the same, another and no NAPI (v6.17+),
    nid_changed, a system pool, ring pages scrubbed, a page split into
    one pp reference (the edge of ``page_pool_fragment_page``) and into two, unref'd to 0."""
    check(rx_target, scenario, COMPONENT)


#: The rules :func:`page_pool.fixed_scenarios` are blamed on, spelled out for
#: ``rx-oracle spec``; tests/test_page_pool.py keeps the two equal.
FIXED_RULES = ("PP-RECYCLE-006", "PP-ALLOC-003", "PP-RECYCLE-009", "PP-NUMA-001",
               "PP-NUMA-002", "PP-NUMA-005", "PP-ALLOC-006", "PP-RECYCLE-002", "PP-RECYCLE-004",
               "PP-RECYCLE-011", "PP-DMA-001", "PP-FRAG-005", "PP-DESTROY-008", "PP-NUMA-003",
               "PP-NUMA-004")


@pytest.mark.rule(*FIXED_RULES)
@pytest.mark.parametrize("scenario", [s for _, s in page_pool.fixed_scenarios()],
                         ids=[name for name, _ in page_pool.fixed_scenarios()])
def test_page_pool_fixed_edges(rx_target: TargetSession, scenario: Scenario) -> None:
    """Each road the draws miss, once: the default ring of 1024 filled to one past it;
    rings of 1, 32, 33 and 40 slots churned (the consumer batch's edge, an array end met
    mid-batch); a bulk of exactly 16; a NUMA_NO_NODE pool (order 0 and 1) refilling on the
    local node against pages of node 0 and 1; a pool on node 1; a page_pool_put_unrefed_page
    from the NAPI's CPU; full-length syncs (each -1 road) with max_len at the u32 top; a put
    from the NAPI's CPU after the last destroy; a node change on a detached pool;
    page_pool_enable_direct_recycling on a pool without NAPI (v6.17+)."""
    check(rx_target, scenario, COMPONENT)

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

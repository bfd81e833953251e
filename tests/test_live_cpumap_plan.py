"""Which cpumap scenarios the live veth target answers, and how it reads the kernel's
evidence into the component's observables (no kernel needed)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given

from conformance.components import cpumap
from conformance.live.cpumap import Batch, BurstResult
from conformance.scenario import Scenario
from conformance.targets.base import NotApplicable
from conformance.targets.live_cpumap import observables, plan


def _scenario(events: list[dict[str, Any]], **config: Any) -> Scenario:
    return Scenario(component="cpumap", config={"qsize": 64, **config}, events=tuple(events))


DRAINED = [{"op": "rx", "n": 10}, {"op": "kthread", "n": 3}, {"op": "free", "n": 10}]


@pytest.mark.rule("CPUMAP-LIVE-001")
@pytest.mark.parametrize(("events", "config", "reason"), [
    (DRAINED + DRAINED, {}, ""),
    ([{"op": "rx", "n": 10}, {"op": "rx", "n": 5}, {"op": "kthread", "n": 5},
      {"op": "free", "n": 15}], {}, "still queued"),
    ([{"op": "rx", "n": 50}, {"op": "kthread", "n": 9}, {"op": "free", "n": 50}], {},
     "may overflow"),
    ([{"op": "rx", "n": 10}, {"op": "kthread", "n": 1}], {}, "not freed"),
    (DRAINED, {"second_prog": [{"op": "adjust_head", "delta": 4},
                               {"op": "return", "action": 2}]}, "only return a verdict"),
    (DRAINED, {"pre_v6_4": True}, "pre-v6.4"),
    (DRAINED, {"skb_alloc_fail": 1}, "skb head"),
    ([{"op": "fail_allocs", "n": 1}, *DRAINED], {}, "page allocation"),
    (DRAINED, {"cpu_b": 4095}, "not possible"),
])
def test_plan_answers_only_timing_free_schedules(events: list[dict[str, Any]],
                                                 config: dict[str, Any], reason: str) -> None:
    scenario = _scenario(events, **config)
    if not reason:
        assert plan(scenario) == [10, 10]
        return
    with pytest.raises(NotApplicable, match=reason):
        plan(scenario)


@pytest.mark.rule("CPUMAP-LIVE-001")
@given(scenario=cpumap.drained_scenarios())
def test_every_drained_scenario_is_live_runnable(scenario: Scenario) -> None:
    assert sum(plan(scenario)) == sum(int(e["n"]) for e in scenario.events if e["op"] == "rx")


@pytest.mark.rule("CPUMAP-LIVE-001", "CPUMAP-KT-002", "CPUMAP-FATE-001")
def test_fates_come_from_the_socket_the_verdicts_and_the_ring_drops() -> None:
    enq = Batch("enqueue", 7, 4, 0, 1)
    kt = Batch("kthread", 7, 4, 0, 1, xdp_pass=1, xdp_drop=3)
    result = BurstResult(4, 0, (enq, kt), frozenset({0}), {0: 2, 1: 1, 2: 4, 3: 9})
    obs = observables(result, 5, 1)
    assert [p["fate"] for p in obs["packets"]] == [
        "freed", "dropped:prog_drop", "dropped:prog_redirect_failed", "dropped:prog_drop",
        "lost"]
    assert obs["cpumap"]["kthread"] == {"processed": 4, "drops": 0, "xdp_pass": 1,
                                        "xdp_drop": 3, "xdp_redirect": 0}
    assert obs["counts"] == {"received": 4, "freed": 1, "dropped": 3, "queued": 1}
    assert obs["direct"] is None and obs["stats"] is None
    dropped = BurstResult(3, 0, (Batch("enqueue", 7, 3, 1, 1),), frozenset({0, 1}), {})
    assert [p["fate"] for p in observables(dropped, 3, None)["packets"]] == [
        "freed", "freed", "dropped:ring_full"]

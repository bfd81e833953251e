"""cpumap scenarios on the running kernel (``--target veth``, component ``cpumap``).

The model's scenario is a schedule: NAPI polls on CPU A (``rx n``), kthread iterations on
CPU B, stack frees.  The kernel's kthread runs when it is woken, concurrently with the
sender, and veth runs one NAPI poll per frame sent with AF_PACKET, so a schedule is only
reproducible live when its outcome does not depend on that interleaving
(CPUMAP-LIVE-001):

- every ``rx`` burst starts with the model's ring and bulk queues empty (the schedule
  drained the previous burst), and is small enough that the ring cannot fill whatever
  the kthread's timing: at most ``qsize - batch + 1`` frames, ``batch`` being the
  ptr_ring's lazy-clear batch (PP-RING-001), the slots a drained consumer may not have
  cleared yet;
- at the end every frame was freed by the stack or dropped by the entry's program;
- the entry's program, if any, is only a verdict (``[{"op": "return", ...}]``): the live
  second program returns the scenario's verdict;
- nothing the kernel cannot be made to do: no page allocation or skb head failures, no
  pfmemalloc pages, no pre-v6.4 switch, no multi-buffer frames (``frags``).

Any other schedule is *not applicable*.  What the live run reports
(:data:`LIVE_REPORTS`) comes from the kernel: the tracepoint sums (without ``sched``,
which counts wake-ups, one per frame live), the second program's per-frame verdicts, and
which frames reached the socket.  The rest of the component's observables (skb fields,
the source pool's counters and ledger, alloc-cache pushes, GRO flushes) is not checked.
"""

from __future__ import annotations

from typing import Any

from conformance.components import kernel_of
from conformance.components.cpumap import config_of, schedule_of, tracepoint_totals
from conformance.live import cpumap as live
from conformance.live.probe import ProbeError
from conformance.scenario import Scenario
from conformance.targets.base import NotApplicable, TargetError
from reference.cpumap import overflow_free_burst
from reference.cpumap_sim import CpumapSim
from reference.errors import InvalidConfig
from reference.xdp.actions import XdpAction

#: The observables the live cpumap path reports (Capabilities.reports).
LIVE_REPORTS = (
    "packets[*].fate",
    "cpumap.enqueue.processed", "cpumap.enqueue.drops",
    "cpumap.kthread.processed", "cpumap.kthread.drops", "cpumap.kthread.xdp_pass",
    "cpumap.kthread.xdp_drop", "cpumap.kthread.xdp_redirect",
    "counts.received", "counts.freed", "counts.dropped", "counts.queued",
)
_FINAL = ("freed", "dropped:prog_drop", "dropped:prog_redirect_failed")


def verdict_of(scenario: Scenario) -> int | None:
    """The entry program's verdict, None without one; NotApplicable for a program that
    does more than return."""
    prog = scenario.config.get("second_prog")
    if prog is None:
        return None
    ops = list(prog)
    if len(ops) != 1 or ops[0].get("op") != "return":
        raise NotApplicable("live cpumap: the entry's program can only return a verdict")
    return int(ops[0]["action"]) & 0xFFFFFFFF


def plan(scenario: Scenario) -> list[int]:
    """The burst sizes to send, or NotApplicable with the reason (module docstring)."""
    cfg = scenario.config
    if cfg.get("pre_v6_4"):
        raise NotApplicable("live cpumap: the pre-v6.4 switch is not this kernel")
    if "ethertype" in cfg or cfg.get("raw_802_3"):
        raise NotApplicable("live cpumap: the live frames are UDP datagrams over IPv4")
    if int(cfg.get("skb_alloc_fail", 0)):
        raise NotApplicable("live cpumap: skb head allocation failures cannot be injected")
    if any(int(n) for n in cfg.get("frags") or ()):
        raise NotApplicable("live cpumap: the live veth pair sends linear frames only")
    verdict_of(scenario)
    try:
        sim = CpumapSim(config_of(scenario), kernel=kernel_of(scenario))
    except InvalidConfig as exc:
        raise NotApplicable(f"live cpumap: {exc}") from None
    qsize = sim.config.qsize
    if sim.config.cpu_b not in live.possible_cpus():
        raise NotApplicable(f"live cpumap: CPU {sim.config.cpu_b} is not possible here")
    bursts: list[int] = []
    for op, n in schedule_of(scenario):
        if op in ("fail_allocs", "pfmemalloc"):
            raise NotApplicable("live cpumap: page allocation failures and pfmemalloc pages "
                                "cannot be injected")
        if op in ("map_update", "map_delete"):
            raise NotApplicable("live cpumap: the live map has its own slots and the host's "
                                "possible CPUs, not the scenario's max_entries and nr_cpus "
                                "(tests/test_live_cpumap.py compares update errnos live)")
        if op == "update":
            raise NotApplicable("live cpumap: a map update mid-schedule (when the retired "
                                "kthread drains its ring depends on an RCU grace period)")
        if op == "rx" and n:
            if not _drained(sim):
                raise NotApplicable("live cpumap: a burst while the previous one is still "
                                    "queued (the live kthread drains concurrently)")
            if n > overflow_free_burst(qsize):
                raise NotApplicable(f"live cpumap: a burst of {n} may overflow a ring of "
                                    f"{qsize} depending on the kthread's timing")
            bursts.append(n)
        sim.run([(op, n)])
    if sim.rx_alloc_failures or any(f not in _FINAL for f in sim.fates()):
        raise NotApplicable("live cpumap: the schedule leaves frames queued or not freed")
    if sum(bursts) > live.MAX_PKTS:
        raise NotApplicable(f"live cpumap: more than {live.MAX_PKTS} frames")
    return bursts


def _drained(sim: CpumapSim) -> bool:
    entry = sim.entry
    return entry.queue.empty() and not any(bq.q for bq in entry.bulkq.values())


def fate(index: int, result: live.BurstResult, verdict: int | None) -> str:
    """A frame's fate from the kernel's evidence: it reached the socket (the stack freed
    its skb once read: ``freed``); or the entry's program ran for it and did not pass it
    (XDP_REDIRECT without a target fails, CPUMAP-KT-002); or the enqueue tracepoint
    counted ring-full drops; else ``lost``, which the model never predicts."""
    if index in result.received:
        return "freed"
    seen = result.verdicts.get(index)
    if verdict is not None and seen is not None and seen != XdpAction.XDP_PASS:
        return ("dropped:prog_redirect_failed" if seen == XdpAction.XDP_REDIRECT
                else "dropped:prog_drop")
    if any(b.drops for b in result.batches if b.kind == "enqueue"):
        return "dropped:ring_full"
    return "lost"


def observables(result: live.BurstResult, sent: int, verdict: int | None) -> dict[str, Any]:
    enq = [b for b in result.batches if b.kind == "enqueue"]
    kt = [b for b in result.batches if b.kind == "kthread"]
    fates = [fate(i, result, verdict) for i in range(sent)]
    return {
        "packets": [{"fate": f} for f in fates],
        "cpumap": tracepoint_totals(enq, kt, sched=False),
        "counts": {"received": result.redirected, "freed": fates.count("freed"),
                   "dropped": sum(f.startswith("dropped:") for f in fates),
                   "queued": sent - sum(f == "freed" or f.startswith("dropped:")
                                        for f in fates)},
        # Not reported (the module docstring); present because the schema names them.
        **dict.fromkeys(("direct", "stats", "pool", "ledger")),
    }


class LiveCpumap:
    """The cpumap path of a live veth target: one topology, one entry per scenario."""

    def __init__(self) -> None:
        self.path = live.CpumapVeth()

    def run(self, scenario: Scenario) -> dict[str, Any]:
        bursts = plan(scenario)
        verdict = verdict_of(scenario)
        cfg = config_of(scenario)
        try:
            self.path.set_entry(cfg.cpu_b, cfg.qsize, verdict)
            try:
                result: live.BurstResult | None = None
                for n in bursts:
                    self.path.send(n, cfg.frame_len, cpu=cfg.cpu_a)
                    result = self.path.settle()
                if result is None:
                    result = self.path.settle()
            finally:
                self.path.clear_entry(cfg.cpu_b)
        except (OSError, ProbeError) as exc:
            raise TargetError(f"live cpumap: {exc}", "crash") from exc
        return observables(result, sum(bursts), verdict)

    def close(self) -> None:
        self.path.close()

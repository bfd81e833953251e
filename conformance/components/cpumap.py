"""The ``cpumap`` component: page_pool RX on CPU A redirected through a cpumap entry to
CPU B, skbs built there and freed by the stack (reference: ``reference/cpumap_sim.py``).

config:  ``cpu_a`` (0), ``cpu_b`` (1), ``qsize`` (cpumap entry ring), ``pool_size`` (the
         source page_pool's ptr_ring), ``mem_type`` (2 page_pool, 1 order-0),
         ``pre_v6_4`` (kernel before "xdp: recycle Page Pool backed skbs built from XDP
         frames"), ``free_cpu`` (CPU the stack frees skbs on; absent: CPU B),
         ``frame_len``, ``second_prog`` (an op list, as ``program``: the entry's own
         XDP program, run by the kthread), ``skb_alloc_fail`` (the kthread's next N skb
         head allocations fail), ``max_entries`` (the map's slots) and ``nr_cpus`` (CPUs
         0 .. nr_cpus - 1 are possible), each one past the larger CPU when absent;
         ``ethertype`` (the frames' ethertype field, 0x86dd) and ``raw_802_3`` (the
         payload starts 0xFFFF); ``frags`` (a list of frag counts 0..17: the packet
         received i-th is a multi-buffer frame with ``frags[i % len(frags)]`` frag pages
         from the same source, each holding ``frag_len`` bytes, 1..3840, default 3840, at
         the pool's offset 256: frag k of packet i holds bytes counting up modulo 256 from
         ``(17 * i + 5 * k) % 256``; absent or empty: every frame is linear) (CPUMAP-SIM-007).
events:  the schedule: ``{"op": "rx", "n": N}`` (one NAPI poll on CPU A receiving N
         packets, all redirected), ``{"op": "kthread", "n": K}`` (K kthread iterations on
         CPU B), ``{"op": "free", "n": N}`` (the stack frees the N oldest skbs),
         ``{"op": "fail_allocs", "n": N}`` (the page allocator fails the next N requests:
         RX finds no page), ``{"op": "pfmemalloc", "n": N}`` (the page allocator's next N
         pages come from the emergency reserves: ``page_is_pfmemalloc``; the pool never
         recycles them) (SKB-BUILD-001), ``{"op": "update", "n": Q}``
         (``cpu_map_update_elem`` of CPU B's slot with qsize Q and the same program: a
         fresh entry replaces the old one, whose kthread drains the frames still queued
         in its ring before it stops; Q 0 deletes the entry, and an ``rx`` step must not
         follow until an update makes a new one) (CPUMAP-MAP-002);
         ``{"op": "map_update", "key": K, "qsize": Q, "flags": F,
         "prog": {"prog_type": T, "expected_attach_type": A, "dev_bound": B}}``
         (``bpf_map_update_elem`` with any arguments; ``flags`` 0 and no program fd when
         absent; ``prog`` describes the program behind the fd, whose instructions are
         ``second_prog``) and ``{"op": "map_delete", "key": K}`` (``bpf_map_delete_elem``)
         (CPUMAP-MAP-001 .. CPUMAP-MAP-003): a successful one on CPU B's slot acts as
         ``update`` (without ``prog`` the new entry has no program).
observables: ``packets[i]``: ``fate`` (bulk, ring, gro, stack, freed, dropped:REASON),
         ``pp_recycle`` (the skb's mark, null without an skb), ``free_path`` (page_pool or
         put_page for the head page of a freed skb, else null), ``skb`` (null without
         one: ``len``, ``data_len``, ``truesize``, ``headroom`` from the buffer start,
         ``meta_len``, ``protocol``, ``dev`` (the ifindex the frame arrived on),
         ``data``: the sha256 of the linear bytes, first 16 hex digits, ``nr_frags``
         (``skb_shinfo(skb)->nr_frags``), ``frag_data``: the sha256 of the bytes the
         frags cover, in frag order, first 16 hex digits, null without frags,
         ``pfmemalloc`` (``skb->pfmemalloc``), and what the frame cannot carry:
         ``ip_summed``, ``hash``, ``l4_hash``, ``queue_mapping``); ``direct``: alloc-cache
         pushes by CPU (source_cpu, destination_cpu, other); ``cpumap``: tracepoint sums
         (the kthread's with the second program's pass/drop/redirect counts) and GRO
         flushes; ``stats``: the source pool's ``rx_pp_*`` counters; ``pool``:
         hold/release/inflight; ``ledger``: steps checked and problems found; ``counts``;
         ``map_ops``: the return code (0 or -errno) of each ``map_update``/``map_delete``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import attrs
from hypothesis import strategies as st

from conformance.components import Component
from conformance.components.xdp import op_lists
from conformance.scenario import Scenario
from reference.cpumap import overflow_free_burst
from reference.cpumap_sim import FRAG_LEN_MAX, CpumapSim, SimConfig
from reference.kernel import resolve_kernel
from reference.kfuncs import BPF_PROG_TYPE_XDP, BpfProg, LoadedBpfProg, MetadataOps
from reference.page_pool.stats import ethtool_stats
from reference.skb import PageFree, SkBuff, pp_page_of
from reference.trace import Trace
from reference.xdp.mem import MemType


def config_of(scenario: Scenario) -> SimConfig:
    """The engine's configuration (the kernel goes to the engine itself: the kthread
    before v6.15 has no GRO, gates CPUMAP-KT-003 and -004).  ``pre_v6_4`` stays an
    explicit switch: it forces a behaviour older than every supported version."""
    cfg = scenario.config
    free_cpu = cfg.get("free_cpu")
    return SimConfig(
        cpu_a=int(cfg.get("cpu_a", 0)), cpu_b=int(cfg.get("cpu_b", 1)),
        qsize=int(cfg.get("qsize", 64)), pool_size=int(cfg.get("pool_size", 256)),
        mem_type=int(cfg.get("mem_type", MemType.MEM_TYPE_PAGE_POOL)),
        pre_v6_4=bool(cfg.get("pre_v6_4", False)),
        free_cpu=None if free_cpu is None else int(free_cpu),
        frame_len=int(cfg.get("frame_len", 64)),
        second_prog=None if cfg.get("second_prog") is None
        else tuple(dict(op) for op in cfg["second_prog"]),
        max_entries=None if cfg.get("max_entries") is None else int(cfg["max_entries"]),
        nr_cpus=None if cfg.get("nr_cpus") is None else int(cfg["nr_cpus"]),
        ethertype=int(cfg.get("ethertype", 0x86DD)), raw_802_3=bool(cfg.get("raw_802_3", False)),
        frags=tuple(int(n) for n in cfg.get("frags") or ()),
        frag_len=int(cfg.get("frag_len", FRAG_LEN_MAX)),
    )


#: The events that operate on the map itself (CPUMAP-MAP-001 .. 003); their ``n`` is 0.
MAP_OPS = ("map_update", "map_delete")


def schedule_of(scenario: Scenario) -> list[tuple[str, int]]:
    return [(str(ev["op"]), int(ev.get("n", 0))) for ev in scenario.events]


def prog_of(ev: Any) -> LoadedBpfProg | None:
    """The program behind a ``map_update``'s fd: its type, attach type and binding, which
    the map's program check reads (CPUMAP-MAP-003); None without one (fd 0)."""
    prog = ev.get("prog")
    if prog is None:
        return None
    attr = BpfProg(prog_type=int(prog.get("prog_type", BPF_PROG_TYPE_XDP)),
                   expected_attach_type=int(prog.get("expected_attach_type", 0)))
    bound = bool(prog.get("dev_bound", False))
    return LoadedBpfProg(attr=attr, dev_bound=bound, offloaded=False, netdev=None,
                         resolved=MetadataOps())


def run_event(sim: CpumapSim, ev: Any) -> None:
    """One event of the schedule on the engine."""
    op = str(ev["op"])
    if op == "fail_allocs":  # the page allocator fails the next N requests
        sim.allocator.fail(int(ev["n"]))
    elif op == "pfmemalloc":  # the page allocator's next N pages are pfmemalloc
        sim.allocator.pfmemalloc_next += int(ev["n"])
    elif op == "map_update":
        sim.map_update(int(ev["key"]), int(ev["qsize"]), int(ev.get("flags", 0)),
                       prog_of(ev))
        sim.check()
    elif op == "map_delete":
        sim.map_delete(int(ev["key"]))
        sim.check()
    else:
        sim.run([(op, int(ev["n"]))])


def new_sim(scenario: Scenario, trace: Trace | None = None) -> CpumapSim:
    sim = CpumapSim(config_of(scenario), trace, kernel=resolve_kernel(scenario.kernel))
    sim.entry.skb_alloc_fail_next = int(scenario.config.get("skb_alloc_fail", 0))
    return sim


def simulate(scenario: Scenario, trace: Trace | None = None,
             skbs: dict[int, dict[str, Any] | None] | None = None) -> CpumapSim:
    """Run the schedule; with ``skbs``, record each skb as the kthread built it (before
    its page is freed and reused), by packet index."""
    sim = new_sim(scenario, trace)
    for ev in scenario.events:
        run_event(sim, ev)
        if skbs is not None:
            for index, skb in sim._skb_of.items():
                if index not in skbs:
                    skbs[index] = _skb_obs(skb)
    return sim


def _skb_obs(skb: SkBuff | None) -> dict[str, Any] | None:
    """What a developer sees of an skb the kthread built (SKB-BUILD-001/002), its frags
    included (CPUMAP-MB-001)."""
    if skb is None:
        return None
    linear = bytes(skb.head.data[skb.data : skb.data + skb.len - skb.data_len])
    paged = b"".join(f.view() for f in skb.frags)
    return {"len": skb.len, "data_len": skb.data_len, "truesize": skb.truesize,
            "headroom": skb.data - skb.head_start, "meta_len": skb.meta_len,
            "protocol": skb.protocol, "dev": skb.dev,
            "data": hashlib.sha256(linear).hexdigest()[:16], "nr_frags": len(skb.frags),
            "frag_data": hashlib.sha256(paged).hexdigest()[:16] if skb.frags else None,
            "pfmemalloc": skb.pfmemalloc, "ip_summed": skb.ip_summed, "hash": skb.hash,
            "l4_hash": skb.l4_hash, "queue_mapping": skb.queue_mapping}


def tracepoint_totals(enq: Sequence[Any], kt: Sequence[Any],
                      sched: bool = True) -> dict[str, dict[str, int]]:
    """The ``cpumap.enqueue`` / ``cpumap.kthread`` observables: the sums of the
    ``xdp:xdp_cpumap_enqueue`` and ``xdp:xdp_cpumap_kthread`` records, whether the model
    traced them or the live kernel did (``sched`` left out where it depends on timing)."""
    kthread = {"processed": sum(t.processed for t in kt), "drops": sum(t.drops for t in kt)}
    if sched:
        kthread["sched"] = sum(t.sched for t in kt)
    kthread.update({name: sum(getattr(t, name) for t in kt)
                    for name in ("xdp_pass", "xdp_drop", "xdp_redirect")})
    return {"enqueue": {"processed": sum(t.processed for t in enq),
                        "drops": sum(t.drops for t in enq)},
            "kthread": kthread}


def observe(sim: CpumapSim, skbs: dict[int, dict[str, Any] | None] | None = None
            ) -> dict[str, Any]:
    """The observables of a finished run (see the module docstring); ``skbs`` as
    :func:`simulate` recorded them."""
    fates = sim.fates()
    packets = []
    for i, fate in enumerate(fates):
        skb = sim._skb_of.get(i)
        head = sim.head_free.get(i)
        packets.append({"fate": fate, "pp_recycle": None if skb is None else skb.pp_recycle,
                        "free_path": None if head is None else head.path.value,
                        "skb": (skbs or {}).get(i)})
    enq = sim.cpumap.enqueue_traces
    kt = sim.cpumap.kthread_traces
    pool = sim.pool
    return {
        "packets": packets,
        "direct": sim.direct_pushes(),
        "cpumap": {**tracepoint_totals(enq, kt), "gro_flushes": sim.gro_flushes()},
        "stats": ethtool_stats(pool.stats()),
        "pool": {"hold": pool.pages_state_hold_cnt, "release": pool.pages_state_release_cnt,
                 "inflight": pool.inflight()},
        "ledger": {"steps_checked": sim.steps_checked, "problems": len(sim.ledger_problems())},
        "counts": {"received": len(fates), "rx_alloc_failures": sim.rx_alloc_failures,
                   "freed": fates.count("freed"),
                   "dropped": sum(f.startswith("dropped:") for f in fates),
                   "queued": sum(f in ("bulk", "ring", "gro", "stack") for f in fates)},
        "map_ops": list(sim.map_results),
    }


def expected(scenario: Scenario) -> dict[str, Any]:
    skbs: dict[int, dict[str, Any] | None] = {}
    return observe(simulate(scenario, skbs=skbs), skbs)


FIELD_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("packets[*].fate", ("CPUMAP-FATE-001",)),
    ("packets[*].pp_recycle", ("SKB-BUILD-003",)),
    ("packets[*].free_path", ("SKB-FREE-001", "SKB-FREE-002")),
    ("packets[*].skb.protocol", ("SKB-BUILD-002",)),
    ("packets[*].skb.ip_summed", ("SKB-BUILD-002",)),
    ("packets[*].skb.hash", ("SKB-BUILD-002",)),
    ("packets[*].skb.l4_hash", ("SKB-BUILD-002",)),
    ("packets[*].skb.queue_mapping", ("SKB-BUILD-002",)),
    ("packets[*].skb.dev", ("CPUMAP-ENQ-001", "SKB-BUILD-002")),
    ("packets[*].skb.nr_frags", ("SKB-BUILD-001", "CPUMAP-MB-001")),
    ("packets[*].skb.frag_data", ("SKB-BUILD-001", "CPUMAP-SIM-007")),
    ("packets[*].skb*", ("SKB-BUILD-001",)),
    ("direct.*", ("CPUMAP-SIM-003",)),
    ("cpumap.enqueue.*", ("CPUMAP-ENQ-003",)),
    ("cpumap.kthread.xdp_*", ("CPUMAP-KT-002",)),
    ("cpumap.kthread.*", ("CPUMAP-KT-005",)),
    ("cpumap.gro_flushes", ("CPUMAP-KT-004",)),
    ("stats.rx_pp_recycle_*", ("CPUMAP-SIM-004", "SKB-FREE-004")),
    ("stats.*", ("CPUMAP-SIM-004",)),
    ("pool.*", ("CPUMAP-SIM-004",)),
    ("ledger.*", ("CPUMAP-SIM-002",)),
    ("counts.received", ("CPUMAP-SIM-001",)),
    ("counts.rx_alloc_failures", ("CPUMAP-SIM-001", "CPUMAP-SIM-007")),
    ("counts.*", ("CPUMAP-FATE-001",)),
    ("map_ops[*]", ("CPUMAP-MAP-001", "CPUMAP-MAP-002", "CPUMAP-MAP-003")),
)


#: Checked on every scenario by the engine and the observables, whatever the trace says.
ALWAYS_APPLIED = frozenset({"CPUMAP-FATE-001", "CPUMAP-SIM-002", "CPUMAP-SIM-003",
                            "CPUMAP-SIM-004"})


def applied(scenario: Scenario) -> set[str]:
    trace = Trace()
    simulate(scenario, trace)
    return set(trace.rules()) | ALWAYS_APPLIED


#: A packet's fate is decided by the rule of the place the reference left it in.
_FATE_RULES = {"bulk": ("CPUMAP-ENQ-001", "CPUMAP-ENQ-004"), "ring": ("CPUMAP-KT-001",),
               "gro": ("CPUMAP-KT-004",), "stack": ("CPUMAP-KT-004",),
               "freed": ("SKB-FREE-003",), "dropped:ring_full": ("CPUMAP-ENQ-002",),
               "dropped:kmem_alloc": ("CPUMAP-KT-003",)}


def attribute(scenario: Scenario) -> Callable[[str], tuple[str, ...]]:
    """Blame from the reference's own run: a packet's fate by where the reference left it
    (the bulk queue, the ring, GRO, a drop and its reason); the recycle mark of a
    pre-v6.4 page_pool run by the release rule."""
    cfg = config_of(scenario)
    pre = cfg.pre_v6_4 and cfg.mem_type == MemType.MEM_TYPE_PAGE_POOL
    trace = Trace()
    sim = new_sim(scenario, trace)
    map_rules: list[tuple[str, ...]] = []
    for ev in scenario.events:
        mark = len(trace)
        run_event(sim, ev)
        if ev["op"] in MAP_OPS:  # the first map rule the reference's update or delete hit
            map_rules.append(next(((e.rule,) for e in trace.events[mark:]
                                   if e.rule.startswith("CPUMAP-MAP-")), ()))
    fates = sim.fates()
    flushed_by = _flushes(trace)

    def rules(path: str) -> tuple[str, ...]:
        if path.startswith("map_ops["):
            index = int(path.removeprefix("map_ops[").partition("]")[0])
            return map_rules[index] if index < len(map_rules) else ()
        if pre and path.startswith("packets[") and path.endswith(".pp_recycle"):
            return ("SKB-BUILD-004",)
        if path.startswith("packets[") and path.endswith("].fate"):
            index = int(path.removeprefix("packets[").partition("]")[0])
            if index < len(fates):
                fate = fates[index]
                found = _FATE_RULES.get(fate, ("CPUMAP-KT-002",) if fate.startswith(
                    "dropped:prog") else ())
                if fate in ("ring", "dropped:ring_full") and index in flushed_by:
                    found = (*found, flushed_by[index])  # the flush that produced it
                if index in sim.drained:  # a replaced entry's kthread took it, at the update
                    found = ("CPUMAP-MAP-002", "CPUMAP-SIM-006", *found)
                return found
        return ()

    return rules


def _flushes(trace: Trace) -> dict[int, str]:
    """Packet index -> the rule of the flush that moved it from its bulk queue into the
    ring (or found the ring full): CPUMAP-ENQ-001 when a full bulk queue was flushed to make
    room for the next frame, CPUMAP-ENQ-004 when ``xdp_do_flush`` ended the poll."""
    out: dict[int, str] = {}
    pending: list[int] = []
    for event in trace:
        fields = dict(event.fields)
        if event.rule == "CPUMAP-SIM-001":
            pending.append(int(fields["index"]))  # type: ignore[call-overload]
        elif event.rule == "CPUMAP-ENQ-001" and "count" not in fields and pending:
            # the full queue is flushed before the new frame (the last received) joins it
            out.update(dict.fromkeys(pending[:-1], "CPUMAP-ENQ-001"))
            del pending[:-1]
        elif event.rule == "CPUMAP-ENQ-004":
            out.update(dict.fromkeys(pending, "CPUMAP-ENQ-004"))
            pending.clear()
    return out


#: The schedule explain runs when no ``--events`` are given: one poll of four packets,
#: one kthread iteration, the stack frees them all.
EXPLAIN_EVENTS: tuple[dict[str, Any], ...] = ({"op": "rx", "n": 4}, {"op": "kthread", "n": 1},
                                             {"op": "free", "n": 4})

#: A drop's rule, by reason (CPUMAP-FATE-001's ``dropped:REASON``).
_DROP_RULES = {"ring_full": ("CPUMAP-ENQ-002", "CPUMAP-ENQ-003"),
               "kmem_alloc": ("CPUMAP-KT-003",)}
#: The batch-level decisions a step's narration shows; the per-packet ones are narrated
#: packet by packet.
_STEP_RULES = ("CPUMAP-ENQ-003", "CPUMAP-ENQ-004", "CPUMAP-KT-003", "CPUMAP-KT-004",
               "CPUMAP-KT-005", "CPUMAP-MAP-", "CPUMAP-SIM-006")


@attrs.define
class _Story:
    """What happened to each packet, and when (the event index), for the narration."""

    received: dict[int, int] = attrs.Factory(dict)
    built: dict[int, int] = attrs.Factory(dict)
    freed: dict[int, int] = attrs.Factory(dict)
    dropped: dict[int, tuple[int, str, PageFree | None]] = attrs.Factory(dict)


def _config_text(cfg: SimConfig) -> str:
    memory = ("MEM_TYPE_PAGE_POOL" if cfg.mem_type == MemType.MEM_TYPE_PAGE_POOL
              else "MEM_TYPE_PAGE_ORDER0")
    free_cpu = cfg.cpu_b if cfg.free_cpu is None else cfg.free_cpu
    prog = "none" if cfg.second_prog is None else f"{len(cfg.second_prog)} op(s)"
    frags = (f", frags {list(cfg.frags)} of {cfg.frag_len} bytes (CPUMAP-SIM-007)"
             if any(cfg.frags) else "")
    return (f"cpumap: RX on CPU {cfg.cpu_a}, redirected to the entry of CPU {cfg.cpu_b}; "
            f"qsize {cfg.qsize}, source pool_size {cfg.pool_size}, memory {memory}, frame_len "
            f"{cfg.frame_len}, the stack frees on CPU {free_cpu}, second program {prog}, "
            f"pre_v6_4 {'true' if cfg.pre_v6_4 else 'false'} (CPUMAP-SIM-001){frags}")


def _free_text(rec: PageFree, rule: str) -> str:
    where = rec.path.value if rec.outcome is None else f"{rec.path.value} -> {rec.outcome.value}"
    if rec.path.value == "put_page":
        rule = "SKB-FREE-002" if rule == "SKB-FREE-001" else rule
    locality = "; CPUMAP-SIM-003" + (", CPUMAP-KT-006" if rec.outcome is not None else "")
    return f"page on CPU {rec.cpu}: {where} ({rule}{locality})"


def explain(scenario: Scenario) -> str:
    """Narrate the schedule step by step (the batch decisions of each: bulk-queue
    flushes, kthread batches, GRO flushes), then every packet's trip RX → bulk queue →
    ring → kthread → skb → free, each line with the rules that decided it and the event
    at which it happened.  Without events, :data:`EXPLAIN_EVENTS` run."""
    notes: list[str] = []
    if not scenario.events:
        scenario = attrs.evolve(scenario, events=EXPLAIN_EVENTS)
        notes.append("no --events given: rx 4, kthread 1, free 4")
    trace = Trace()
    sim = new_sim(scenario, trace)
    cfg = sim.config
    story = _Story()
    lines = [*notes, _config_text(cfg)]
    for n, (op, count) in enumerate(schedule_of(scenario)):
        mark, drops0, frees0 = len(trace), len(sim.cpumap.drops), len(sim.cpumap.frees)
        frames0, failures0 = len(sim.frames), sim.rx_alloc_failures
        if op == "fail_allocs":
            sim.allocator.fail(count)
            lines.append(f"event {n}: fail_allocs {count} -> the page allocator fails the "
                         f"next {count} request(s) (CPUMAP-SIM-001)")
            continue
        if op == "pfmemalloc":
            sim.allocator.pfmemalloc_next += count
            lines.append(f"event {n}: pfmemalloc {count} -> the page allocator's next {count} "
                         "page(s) come from the reserves (CPUMAP-SIM-001, SKB-BUILD-001)")
            continue
        ev = scenario.events[n]
        run_event(sim, ev)
        if op in MAP_OPS:
            built = [i for i in sim._skb_of if i not in story.built]
            story.built.update(dict.fromkeys(built, n))
            args = f"key {ev['key']}" + (f", qsize {ev['qsize']}, flags {ev.get('flags', 0)}"
                                         + (", a program fd" if ev.get("prog") else "")
                                         if op == "map_update" else "")
            lines.append(f"event {n}: {op} {args} -> {sim.map_results[-1]} "
                         "(CPUMAP-MAP-001, CPUMAP-MAP-002, CPUMAP-MAP-003)")
        elif op == "rx":
            story.received.update(dict.fromkeys(range(frames0, len(sim.frames)), n))
            failed = sim.rx_alloc_failures - failures0
            lines.append(f"event {n}: rx {count} on CPU {cfg.cpu_a} -> "
                         f"{len(sim.frames) - frames0} packet(s) received and redirected"
                         + (f", {failed} found no page" if failed else "")
                         + " (CPUMAP-SIM-001, CPUMAP-ENQ-001)")
        elif op == "kthread":
            built = [i for i in sim._skb_of if i not in story.built]
            story.built.update(dict.fromkeys(built, n))
            lines.append(f"event {n}: kthread {count} on CPU {cfg.cpu_b} -> {len(built)} "
                         "skb(s) built (CPUMAP-KT-001, CPUMAP-KT-005)")
        elif op == "update":
            built = [i for i in sim._skb_of if i not in story.built]
            story.built.update(dict.fromkeys(built, n))
            what = (f"entry of qsize {count} replaces it" if count
                    else "the slot is emptied")
            lines.append(f"event {n}: update CPU {cfg.cpu_b}'s slot -> {what}; the old "
                         f"kthread drains its ring first: {len(built)} skb(s) built "
                         "(CPUMAP-MAP-002, CPUMAP-SIM-006)")
        else:
            freed = [i for i in sim.freed if i not in story.freed]
            story.freed.update(dict.fromkeys(freed, n))
            lines.append(f"event {n}: free {count} -> {len(freed)} skb(s) freed by the stack "
                         "(SKB-FREE-003)")
        frees = list(sim.cpumap.frees[frees0:])
        for frame, reason in sim.cpumap.drops[drops0:]:
            page = pp_page_of(frame.page)
            rec = next((f for f in frees if f.page is page), None)
            if rec is not None:
                frees.remove(rec)
            story.dropped[sim._index[id(frame)]] = (n, reason, rec)
        lines += ["  " + e.render() for e in trace.events[mark:]
                  if e.rule.startswith(_STEP_RULES)]
    fates = sim.fates()
    source = "page_pool page" if cfg.mem_type == MemType.MEM_TYPE_PAGE_POOL else "order-0 page"
    for i, frame in enumerate(sim.frames):
        page = pp_page_of(frame.page)
        nfrags = cfg.frags_of(i)
        with_frags = (f" and {nfrags} frag page(s) of {cfg.frag_len} bytes (CPUMAP-SIM-007)"
                      if nfrags else "")
        lines.append(f"packet {i}: {source} pfn {page.pfn:#x}{with_frags}, received at event "
                     f"{story.received[i]} on CPU {cfg.cpu_a} -> XDP_REDIRECT, bulked for "
                     f"CPU {cfg.cpu_b} (CPUMAP-SIM-001, CPUMAP-ENQ-001)")
        if i in story.dropped:
            n, reason, rec = story.dropped[i]
            rules = _DROP_RULES.get(reason, ("CPUMAP-KT-002",))
            lines.append(f"  dropped at event {n} -> {reason} ({', '.join(rules)})")
            if rec is not None:
                lines.append("  frame returned -> " + _free_text(rec, "SKB-FREE-004"))
        elif i in story.built:
            skb = sim._skb_of[i]
            if cfg.second_prog is not None:
                lines.append("  second program -> XDP_PASS, the frame goes on (CPUMAP-KT-002)")
            lines.append(f"  kthread at event {story.built[i]} on CPU {cfg.cpu_b} -> skb len "
                         f"{skb.len}, protocol {skb.protocol:#06x}, CHECKSUM_NONE, no hash, "
                         "queue 0 (SKB-BUILD-001, SKB-BUILD-002)")
            if skb.frags:
                lines.append(f"  frags -> {len(skb.frags)} frag page(s) in the skb, data_len "
                             f"{skb.data_len}, truesize {skb.truesize}; freed before the head "
                             "(SKB-BUILD-001, CPUMAP-MB-001)")
            if cfg.pre_v6_4 and cfg.mem_type == MemType.MEM_TYPE_PAGE_POOL:
                lines.append("  pre-v6.4 -> page released from its pool, no recycle mark "
                             "(SKB-BUILD-004)")
            else:
                lines.append(f"  pp_recycle -> {'true' if skb.pp_recycle else 'false'} "
                             "(SKB-BUILD-003)")
            if i in story.freed:
                lines.append(f"  freed at event {story.freed[i]} -> "
                             + _free_text(sim.head_free[i], "SKB-FREE-001"))
        lines.append(f"  fate -> {fates[i]} (CPUMAP-FATE-001)")
    summary = ", ".join(f"{f} {fates.count(f)}" for f in sorted(set(fates))) or "none"
    lines.append(f"fates: {summary} (CPUMAP-FATE-001)")
    st_ = sim.pool.stats()
    lines.append(f"source pool: alloc slow {st_.alloc_stats.slow}, refill "
                 f"{st_.alloc_stats.refill}, recycle ring {st_.recycle_stats.ring}, cached "
                 f"{st_.recycle_stats.cached}, released {sim.pool.pages_state_release_cnt} "
                 "(CPUMAP-SIM-004)")
    return "\n".join(lines)


COMPONENT = Component(name="cpumap", expected=expected, field_rules=FIELD_RULES,
                      attribute=attribute, applied=applied)


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    """Offered load, service ratio, a schedule (now and then the entry replaced while
    frames are queued) and the kernel switch."""
    config: dict[str, Any] = {
        "qsize": draw(st.sampled_from([8, 16, 64])),
        "pool_size": draw(st.sampled_from([16, 64, 256])),
        "mem_type": draw(st.sampled_from([int(MemType.MEM_TYPE_PAGE_POOL)] * 3
                                         + [int(MemType.MEM_TYPE_PAGE_ORDER0)])),
        "pre_v6_4": draw(st.booleans()),
    }
    multi_buffer = draw(st.integers(0, 2)) > 0  # two in three: frags, drawn at the end
    if draw(st.integers(0, 3)) == 0:
        config["free_cpu"] = 0  # the stack frees on the source CPU (the pool's NAPI CPU)
    # SKB-BUILD-002: eth_type_trans on each side of 0x0600, raw 802.3 and 802.2 below it.
    if draw(st.integers(0, 3)) == 0:
        config["ethertype"] = draw(st.sampled_from([0x0000, 0x05DC, 0x05FF, 0x0600, 0x0800]))
        config["raw_802_3"] = draw(st.booleans())
    # SKB-BUILD-001: lengths at the engine's bounds and in between.
    config["frame_len"] = draw(st.sampled_from([60, 61, 64, 128, 1499, 1500])
                               | st.integers(60, 1500))
    if draw(st.booleans()):  # CPUMAP-KT-002: a program on the entry, every verdict
        ops = [op for op in draw(op_lists(kfuncs=False)) if op["op"] != "return"]
        action = draw(st.sampled_from([0, 1, 2, 3, 4, 5, 2**32 - 1]))
        config["second_prog"] = [*ops, {"op": "return", "action": action}]
    if draw(st.integers(0, 3)) == 0:  # CPUMAP-KT-003: skb heads that cannot be allocated
        config["skb_alloc_fail"] = draw(st.integers(1, 10))
    load = draw(st.integers(1, 40))  # packets per poll
    ratio = draw(st.sampled_from([0, 1, 2, 4]))  # kthread iterations per poll
    events: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 12))):
        if draw(st.integers(0, 5)) == 0:  # CPUMAP-SIM-001: RX finds no page
            events.append({"op": "fail_allocs", "n": draw(st.integers(1, 3))})
        events.append({"op": "rx", "n": draw(st.integers(0, load))})
        if ratio:
            events.append({"op": "kthread", "n": draw(st.integers(0, ratio))})
        if draw(st.booleans()):
            events.append({"op": "free", "n": draw(st.integers(0, 3 * load))})
        if draw(st.integers(0, 5)) == 0:  # CPUMAP-MAP-002: the entry replaced while
            if draw(st.booleans()):       # frames are queued (or deleted, then made again)
                events.append({"op": "update", "n": 0})
            events.append({"op": "update", "n": draw(st.sampled_from([8, 16, 64]))})
    events.append({"op": "kthread", "n": draw(st.integers(0, 20))})
    events.append({"op": "free", "n": draw(st.integers(0, 200))})
    if multi_buffer:  # CPUMAP-SIM-007, CPUMAP-MB-001: multi-buffer frames
        config.update(frag_config(draw, config.get("second_prog")))
    if draw(st.integers(0, 3)) < (2 if multi_buffer else 1):  # SKB-BUILD-001: pages from
        # the emergency reserves: a page_pool's first slow-path bulk (64 pages, handed out
        # last first) but its last page, so the first packet's frags and not its head, or
        # the whole bulk, or more
        at = draw(st.sampled_from([0, 0, 0, len(events) // 2]))
        n = draw(st.sampled_from([63, 63, 64, 200, 1]) | st.integers(1, 200))
        events.insert(at, {"op": "pfmemalloc", "n": n})
    return Scenario(component="cpumap", config=config, events=tuple(events),
                    rules=("CPUMAP-FATE-001", "CPUMAP-SIM-002"))


def frag_config(draw: st.DrawFn, prog: list[dict[str, Any]] | None) -> dict[str, Any]:
    """Frag counts cycled over the packets (linear frames among them now and then, up to
    MAX_SKB_FRAGS) and a frag length; with a program on the entry, two times in three a tail
    shrink first that releases whole frags, or stops one byte either side (CPUMAP-MB-001,
    XDP-ADJ-009)."""
    frag_len = draw(st.sampled_from([1, 14, 1000, 3840]) | st.integers(1, 3840))
    out: dict[str, Any] = {
        "frags": draw(st.lists(st.sampled_from([0, 1, 1, 2, 3, 17]), min_size=1, max_size=3)),
        "frag_len": frag_len}
    if prog is not None and draw(st.integers(0, 2)) > 0:
        delta = -draw(st.integers(1, 2)) * frag_len + draw(st.sampled_from([-1, 0, 0, 1]))
        out["second_prog"] = [{"op": "adjust_tail", "delta": delta}, *prog]
    return out


@st.composite
def drained_scenarios(draw: st.DrawFn) -> Scenario:
    """Bursts the kthread drains and the stack frees before the next one, each small
    enough that the entry's ring cannot fill, with a verdict-only program or none: the
    schedules whose outcome does not depend on when the kthread runs, so a live kernel
    can reproduce them (CPUMAP-LIVE-001)."""
    qsize = draw(st.sampled_from([8, 16, 33, 64, 256]))
    config: dict[str, Any] = {"qsize": qsize, "pool_size": 256,
                              "frame_len": draw(st.sampled_from([60, 64, 1500])
                                                | st.integers(60, 1500))}
    if draw(st.booleans()):  # CPUMAP-KT-002: every verdict, valid or not
        action = draw(st.sampled_from([0, 1, 2, 3, 4, 5, 2**32 - 1]))
        config["second_prog"] = [{"op": "return", "action": action}]
    events: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 4))):
        n = draw(st.integers(1, min(64, overflow_free_burst(qsize))))
        events += [{"op": "rx", "n": n}, {"op": "kthread", "n": n // 8 + 2},
                   {"op": "free", "n": n}]
    return Scenario(component="cpumap", config=config, events=tuple(events),
                    rules=("CPUMAP-FATE-001", "CPUMAP-LIVE-001"))


#: ``prog_type`` / ``expected_attach_type`` values a program fd in a cpumap value may carry
#: (include/uapi/linux/bpf.h): XDP and two others; BPF_XDP_CPUMAP, BPF_XDP_DEVMAP,
#: BPF_XDP and none.
_PROG_TYPES = (6, 6, 6, 28, 5)
_ATTACH_TYPES = (35, 35, 33, 37, 0)


@st.composite
def map_op_scenarios(draw: st.DrawFn) -> Scenario:
    """CPUMAP-MAP-001 .. 003: map updates and deletes with every argument the checks read
    on each side of its bound (flags around ``BPF_EXIST``, keys around ``max_entries`` and
    the possible CPUs, qsize 0 and around the 16384 limit, program fds of the right and
    wrong type, attach type and binding), between polls so a replaced entry drains queued
    frames.  A block of map operations is followed by an ``update`` of CPU B's slot, so
    whatever it did to that slot, the next poll finds an entry.  Most scenarios send
    frames of 802.3 lengths, raw or 802.2 (SKB-BUILD-002): like map updates, what the live
    veth target cannot send."""
    cpu_b = draw(st.sampled_from([1, 2]))
    nr_cpus = cpu_b + draw(st.integers(1, 2))
    max_entries = nr_cpus + draw(st.sampled_from([0, 1, 3]))
    config: dict[str, Any] = {"cpu_b": cpu_b, "nr_cpus": nr_cpus, "max_entries": max_entries,
                              "qsize": draw(st.sampled_from([8, 16, 64]))}
    if draw(st.booleans()):
        config["second_prog"] = [{"op": "return", "action": draw(st.sampled_from([1, 2, 4]))}]
    if draw(st.integers(0, 2)) == 0:  # CPUMAP-KT-003: some or every skb head of a batch fails
        config["skb_alloc_fail"] = draw(st.sampled_from([1, 3, 8, 20]))
    if draw(st.integers(0, 3)) > 0:  # SKB-BUILD-002: 802.3 lengths, raw or 802.2 (not live)
        config["ethertype"] = draw(st.sampled_from([0x05DC, 0x0000, 0x05FF, 0x0600]))
        config["raw_802_3"] = draw(st.booleans())
    keys = st.sampled_from(sorted({0, cpu_b, nr_cpus - 1, nr_cpus, max_entries - 1,
                                   max_entries, 2**32 - 1}))
    events: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 3))):
        events.append({"op": "rx", "n": draw(st.integers(0, 12))})
        events.append({"op": "kthread", "n": draw(st.integers(0, 1))})
        for _ in range(draw(st.integers(1, 4))):
            if draw(st.integers(0, 4)) == 0:
                events.append({"op": "map_delete", "key": draw(keys)})
                continue
            ev: dict[str, Any] = {"op": "map_update", "key": draw(keys),
                                  "qsize": draw(st.sampled_from(
                                      [0, 1, 8, 16384, 16385, 2**32 - 1]))}
            flags = draw(st.sampled_from([None, None, None, 0, 1, 2, 3, 4, 2**64 - 1]))
            if flags is not None:
                ev["flags"] = flags
            if draw(st.booleans()):  # half of them the program the map takes
                ev["prog"] = ({"prog_type": 6, "expected_attach_type": 35}
                              if draw(st.booleans()) else
                              {"prog_type": draw(st.sampled_from(_PROG_TYPES)),
                               "expected_attach_type": draw(st.sampled_from(_ATTACH_TYPES)),
                               "dev_bound": draw(st.integers(0, 3)) == 0})
            events.append(ev)
        events.append({"op": "update", "n": draw(st.sampled_from([8, 16, 64]))})
    events.append({"op": "rx", "n": draw(st.integers(1, 12))})
    if draw(st.booleans()):  # else the last poll's frames stay in the ring (fate "ring")
        events += [{"op": "kthread", "n": 8}, {"op": "free", "n": 64}]
    return Scenario(component="cpumap", config=config, events=tuple(events),
                    rules=("CPUMAP-MAP-001", "CPUMAP-MAP-003"))


def _case(*steps: tuple[str, int]) -> tuple[dict[str, Any], ...]:
    return tuple({"op": op, "n": n} for op, n in steps)


#: The stale headroom case's program (XDP-ADJ-003): ``adjust_tail`` by -40 shrinks a
#: linear 64-byte frame to 24 bytes but only the frag of a multi-buffer one, so the
#: ``adjust_head(+20)`` after it succeeds on the multi-buffer frame alone (XDP-ADJ-002:
#: 14 bytes must stay); ``adjust_head(-28)`` then puts the multi-buffer frame's start 8
#: bytes into the headroom and the linear frame's 28, and each writes 4 bytes at its
#: start.  A linear frame on a page a multi-buffer frame had before shows that frame's
#: bytes 20 bytes into its own (the headroom is not cleared); on a fresh page, zeroes.
_STALE_HEADROOM_PROG = ({"op": "adjust_tail", "delta": -40}, {"op": "adjust_head", "delta": 20},
                        {"op": "adjust_head", "delta": -28},
                        {"op": "write", "offset": 0, "data": "deadbeef"},
                        {"op": "return", "action": 2})

#: One case per road the random draws (nearly) never take: (rule, config, events).
FIXED_CASES: tuple[tuple[str, dict[str, Any], tuple[dict[str, Any], ...]], ...] = (
    # CPUMAP-KT-004: eight full batches with the ring still holding 8 frames: the 64th
    # packet flushes GRO without an empty ring, so 64 skbs are the stack's and freed.
    ("CPUMAP-KT-004", {"qsize": 128}, _case(("rx", 72), ("kthread", 8), ("free", 100))),
    # CPUMAP-SIM-006: a map_update of CPU B's slot without a program fd, then traffic
    # before any update: the new entry takes the poll's frames and runs no program.
    ("CPUMAP-SIM-006", {"second_prog": [{"op": "return", "action": 1}]},
     (*_case(("rx", 4), ("kthread", 1)), {"op": "map_update", "key": 1, "qsize": 16},
      *_case(("rx", 4), ("kthread", 1), ("free", 8)))),
    # CPUMAP-SIM-006: a map_delete of CPU B's slot drains its ring at once, so the stack
    # frees those skbs before the update that makes a new entry.
    ("CPUMAP-SIM-006", {},
     (*_case(("rx", 4)), {"op": "map_delete", "key": 1}, *_case(("free", 4), ("update", 16)))),
    # CPUMAP-SIM-001: CPU B is CPU 0, the map's first slot.
    ("CPUMAP-SIM-001", {"cpu_a": 1, "cpu_b": 0},
     _case(("rx", 4), ("kthread", 1), ("free", 4))),
    # CPUMAP-MAP-001: without max_entries and nr_cpus the map has slots 0 .. 1 and CPUs
    # 0 .. 1 possible: key 2 is E2BIG.
    ("CPUMAP-MAP-001", {},
     (*_case(("rx", 2)), {"op": "map_update", "key": 2, "qsize": 8},
      *_case(("kthread", 1), ("free", 2)))),
    # CPUMAP-SIM-001: the largest map and machine the engine takes (1024 slots, CPUs).
    ("CPUMAP-SIM-001", {"max_entries": 1024, "nr_cpus": 1024},
     (*_case(("rx", 2)), {"op": "map_update", "key": 1023, "qsize": 8},
      *_case(("kthread", 1), ("free", 2)))),
    # SKB-BUILD-002: the largest ethertype.
    ("SKB-BUILD-002", {"ethertype": 0xFFFF}, _case(("rx", 2), ("kthread", 1), ("free", 2))),
    # CPUMAP-SIM-007: the longest frag list the engine takes (64 counts).
    ("CPUMAP-SIM-007", {"frags": [0, 1, 2, 17] * 16, "frag_len": 100},
     _case(("rx", 5), ("kthread", 1), ("free", 5))),
    # XDP-ADJ-003: headroom a program pushes into holds what the page held before (a
    # recycled page is not cleared): packets 0 (linear) and 1 (one frag) are freed on CPU
    # A, where the pool caches their pages, so packet 2 (linear) gets packet 1's head page.
    ("XDP-ADJ-003", {"frags": [0, 1], "frag_len": 100, "free_cpu": 0,
                     "second_prog": list(_STALE_HEADROOM_PROG)},
     _case(("rx", 2), ("kthread", 1), ("free", 2), ("rx", 1), ("kthread", 1))),
)


def fixed_scenarios() -> list[Scenario]:
    """:data:`FIXED_CASES` as scenarios."""
    return [Scenario(component="cpumap", config=config, events=events, rules=(rule,))
            for rule, config, events in FIXED_CASES]


def fixture_scenarios() -> st.SearchStrategy[Scenario]:
    """What ``rx-oracle fixtures generate`` draws: the traffic scenarios and, one in four,
    map updates and deletes (:func:`map_op_scenarios`), so the corpus meets
    CPUMAP-MAP-001 .. 003's refusals as well as its traffic."""
    return st.one_of(scenarios(), scenarios(), scenarios(), map_op_scenarios())

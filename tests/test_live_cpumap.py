"""The cpumap model against the running kernel: the suite on the live cpumap path, every
map-update errno the model claims, the invariants that hold whatever the kthread's timing,
and nothing left behind (namespaces, programs, links, kthreads), even after SIGKILL.

Skipped, with the reason, unless root with clang, bpftool, libbpf and kernel BTF.
"""

from __future__ import annotations

import errno
import json
import os
import platform
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from conformance.live import env
from reference.cpumap import BPF_NOEXIST, CpuMap, tracepoint_problems
from reference.kernel import gate, parse_kernel
from reference.kfuncs import (
    BPF_F_XDP_DEV_BOUND_ONLY,
    BPF_PROG_TYPE_XDP,
    BPF_XDP,
    BPF_XDP_CPUMAP,
    BpfDevices,
    BpfProg,
    LoadedBpfProg,
    NetDevice,
)

REASON = env.missing()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")

if REASON is None:
    from conformance.live import cpumap as live
    from conformance.live import libbpf, netns

BPF_PROG_TYPE_TRACING = 26  # include/uapi/linux/bpf.h


@pytest.fixture(scope="module")
def path() -> Iterator[live.CpumapVeth]:
    p = live.CpumapVeth()
    try:
        yield p
    finally:
        p.close()


def _model(prog: BpfProg | None = None, ifindex: int = 0) -> tuple[CpuMap, LoadedBpfProg | None]:
    """The model's map for this kernel (KVER-001) beside the live one: 64 slots, this
    machine's possible CPUs; ``prog`` loaded by the model's BPF_PROG_LOAD."""
    kernel = parse_kernel(platform.release(), "uname -r")
    cmap = CpuMap(64, sorted(live.possible_cpus()), kernel=kernel)
    if prog is None:
        return cmap, None
    bpf = BpfDevices()
    if ifindex:
        bpf.register_netdev(NetDevice(ifindex, "veth"))
    out = bpf.prog_load(prog)
    assert out.prog is not None, out
    return cmap, out.prog


@pytest.mark.rule("CPUMAP-MAP-001", "CPUMAP-MAP-002")
@pytest.mark.parametrize(("key", "qsize", "flags"), [
    (1, 64, 0), (1, 16384, 2), (1, 16385, 0), (1, 64, 3), (64, 64, 0), (64, 64, 3),
    (1, 64, BPF_NOEXIST), (63, 64, 0), (63, 16385, 0), (1, 0, 0),
])
def test_update_errnos_as_the_model_says(path: live.CpumapVeth, key: int, qsize: int,
                                         flags: int) -> None:
    """Flags, key, qsize and CPU checks: the live errno is the model's, in its order."""
    if key == 63 and 63 in live.possible_cpus():
        pytest.skip("CPU 63 is possible here: no impossible key below max_entries")
    cmap, _ = _model()
    assert path.update(key, qsize, flags=flags) == cmap.update_elem(key, qsize, flags=flags)
    if qsize == 0 or path.update(1, 0) == 0:  # CPUMAP-MAP-002: qsize 0 empties the slot
        assert path.entry(1) is None


@pytest.mark.rule("CPUMAP-MAP-002")
def test_update_replaces_the_entry_and_zero_deletes(path: live.CpumapVeth) -> None:
    assert path.update(1, 32) == 0 and path.entry(1) == (32, 0)
    assert path.update(1, 128, path.verdict_fd) == 0
    assert path.entry(1) == (128, path.verdict_id)
    assert path.update(1, 0) == 0 and path.entry(1) is None
    assert path.update(1, 0) == 0  # deleting an empty slot is not an error


@pytest.mark.rule("CPUMAP-MAP-003", "KFUNC-MAP-004")
def test_refused_programs_read_the_errno_the_model_gives(path: live.CpumapVeth) -> None:
    """A program with attach type BPF_XDP, a device-bound BPF_XDP_CPUMAP program and a
    program that is not XDP are all refused; before 48e11bad9a1f (gate CPUMAP-MAP-003)
    the update reads -ENOMEM, not the -EINVAL the program check computes."""
    obj_path = live.build()
    # the object's own BPF_XDP program (rxo_cm_redir) and a tracing program (rxo_cm_kt)
    cmap, plain = _model(BpfProg(expected_attach_type=BPF_XDP))
    assert path.update(1, 64, path.redir_fd) == cmap.update_elem(1, 64, prog=plain, ops=())
    cmap, tracing = _model(BpfProg(prog_type=BPF_PROG_TYPE_TRACING))
    kt_fd = path.obj.program("rxo_cm_kt") if path.obj else 0
    fd = libbpf.check(libbpf.lib().bpf_program__fd(kt_fd), "fd")
    assert path.update(1, 64, fd) == cmap.update_elem(1, 64, prog=tracing, ops=())
    with netns.entered(path.ns_r):
        bound = live.load_unusual(obj_path, "rxo_cm_verdict", bind_ifindex=path.ifindex)
    try:
        fd = libbpf.check(bound._lib.bpf_program__fd(bound.program("rxo_cm_verdict")),
                               "fd")
        cmap, dev_bound = _model(BpfProg(expected_attach_type=BPF_XDP_CPUMAP,
                                         prog_flags=BPF_F_XDP_DEV_BOUND_ONLY,
                                         prog_ifindex=path.ifindex), path.ifindex)
        assert dev_bound is not None and dev_bound.dev_bound
        live_rc = path.update(1, 64, fd)
        assert live_rc == cmap.update_elem(1, 64, prog=dev_bound, ops=())
    finally:
        bound.close()
    # what the model predicts for this kernel, said plainly
    refused = -errno.EINVAL if gate(parse_kernel(platform.release(), "uname -r"),
                                    "CPUMAP-MAP-003") else -errno.ENOMEM
    assert live_rc == refused
    cmap, good = _model(BpfProg(prog_type=BPF_PROG_TYPE_XDP, expected_attach_type=BPF_XDP_CPUMAP))
    assert path.update(1, 64, path.verdict_fd) == cmap.update_elem(1, 64, prog=good, ops=()) == 0
    assert path.entry(1) == (64, path.verdict_id)
    path.update(1, 0)


def _run(path: live.CpumapVeth, qsize: int, verdict: int | None,
         bursts: list[int]) -> tuple[live.BurstResult, int]:
    """The kernel's account of the bursts, and how many redirects veth counted."""
    path.set_entry(1, qsize, verdict)
    before = path.counters()["rx_queue_0_xdp_redirect"]
    try:
        result = None
        for n in bursts:
            path.send(n, 64, cpu=0)
            result = path.settle()
        assert result is not None
        return result, path.counters()["rx_queue_0_xdp_redirect"] - before
    finally:
        path.clear_entry(1)


@pytest.mark.rule("CPUMAP-LIVE-001", "CPUMAP-ENQ-001", "CPUMAP-ENQ-002", "CPUMAP-ENQ-003",
                  "CPUMAP-KT-001", "CPUMAP-KT-002", "CPUMAP-KT-005", "VETH-STAT-001")
@pytest.mark.parametrize(("qsize", "verdict", "bursts"), [
    (8, None, [64]), (8, 2, [200]), (16, 1, [40, 40]), (64, 4, [100]), (64, None, [300]),
    (256, 2, [64, 1, 64]), (8, 3, [33]),
])
def test_conservation_whatever_the_timing(path: live.CpumapVeth, qsize: int,
                                          verdict: int | None, bursts: list[int]) -> None:
    """Bursts that may overflow the ring: counts depend on when the kthread runs, but
    each frame is accounted once, enqueued = processed + ring drops, the kthread's
    processed = its drops + the program's pass, drop and redirect, and no batch exceeds
    8 frames (CPUMAP-LIVE-001)."""
    r, veth_redirects = _run(path, qsize, verdict, bursts)
    sent = sum(bursts)
    # CPUMAP-ENQ-001: enqueueing never fails, so veth counts every frame as redirected,
    # ring-full drops included
    assert veth_redirects == sent
    assert tracepoint_problems(*live.traces(r.batches), r.redirected, to_cpu=1) == []
    enq = [b for b in r.batches if b.kind == "enqueue"]
    kt = [b for b in r.batches if b.kind == "kthread"]
    assert r.redirected == sent and r.redirect_failed == 0
    assert all(1 <= b.processed <= 8 and 0 <= b.drops <= b.processed and b.extra == 1
               for b in enq)
    assert all(b.processed <= 8 for b in kt)
    assert all(b.extra == 1 for b in kt if b.processed == 0)  # only a wake-up runs empty
    enqueued = sum(b.processed for b in enq)
    ring_drops = sum(b.drops for b in enq)
    processed = sum(b.processed for b in kt)
    assert enqueued == sent
    assert processed + ring_drops == enqueued
    assert sum(b.drops for b in kt) == 0  # no skb head shortage provoked
    passed = sum(b.xdp_pass for b in kt)
    dropped = sum(b.xdp_drop for b in kt)
    assert sum(b.xdp_redirect for b in kt) == 0  # no redirect target: fails, a drop
    if verdict is None:
        assert passed == dropped == 0
        assert len(r.received) == processed
    else:
        assert passed + dropped == processed
        assert len(r.verdicts) == processed and set(r.verdicts.values()) == {verdict}
        assert set(r.received) <= set(r.verdicts)
        assert len(r.received) == passed == (processed if verdict == 2 else 0)
    # every frame once: at the socket, dropped by the program, or a ring-full drop
    assert len(r.received) + dropped + ring_drops == sent
    assert r.received <= set(range(sent))


@pytest.mark.rule("CPUMAP-LIVE-001", "CPUMAP-FATE-001", "CPUMAP-ENQ-003", "CPUMAP-KT-002",
                  "CPUMAP-KT-005", "SKB-BUILD-002")
def test_conformance_cpumap_live() -> None:
    """The cpumap properties on the live veth target: the drained-burst property runs
    and passes, the others are not applicable (never a pass)."""
    done = subprocess.run([sys.executable, "-m", "conformance.cli", "conformance",
                           "--profile", "ci", "--target", "veth", "--driver", "cpumap",
                           "--report", "/dev/stdout"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "0 fail" in done.stdout and "2 passed, 13 skipped" in done.stdout


def _prog_ids(names: tuple[str, ...]) -> set[int]:
    out = subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True, text=True,
                         check=True).stdout
    return {p["id"] for p in json.loads(out or "[]") if p.get("name") in names}


def _gone(ids: set[int], map_id: int, namespaces: tuple[str, ...],
          timeout: float = 10.0) -> list[str]:
    """What is still there after ``timeout``: programs, the map's kthreads, namespaces."""
    deadline = time.monotonic() + timeout
    while True:
        left = []
        still = ids & _prog_ids(live.PROGRAMS)
        if still:
            left.append(f"programs {sorted(still)}")
        if live.kthreads(map_id):
            left.append(f"kthreads {live.kthreads(map_id)}")
        present = set(os.listdir(netns.NETNS_DIR)) if os.path.isdir(netns.NETNS_DIR) else set()
        if present & set(namespaces):
            left.append(f"namespaces {sorted(present & set(namespaces))}")
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


@pytest.mark.rule("CPUMAP-LIVE-001")
def test_close_leaves_nothing() -> None:
    before = _prog_ids(live.PROGRAMS)
    p = live.CpumapVeth("ef")
    p.set_entry(1, 64, 2)
    p.send(10, 64)
    p.settle()
    ids = _prog_ids(live.PROGRAMS) - before
    assert len(ids) == len(live.PROGRAMS)
    assert live.kthreads(p.map_id)
    map_id, spaces = p.map_id, (p.ns_s, p.ns_r)
    p.close()
    assert _gone(ids, map_id, spaces) == []


_CHILD = """
import sys, time
from conformance.live import cpumap as live
p = live.CpumapVeth()
p.set_entry(1, 64, 2)
p.send(5, 64)
p.settle()
print(p.map_id, p.ns_s, p.ns_r, flush=True)
time.sleep(60)
"""


@pytest.mark.rule("CPUMAP-LIVE-001")
def test_sigkill_leaves_only_what_the_sweep_removes() -> None:
    """After SIGKILL the kernel drops the programs, links and the map with the process's
    fds (its kthread stops); the namespaces stay until the next run's sweep."""
    before = _prog_ids(live.PROGRAMS)
    child = subprocess.Popen([sys.executable, "-c", _CHILD], stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout is not None
        line = child.stdout.readline().split()
        assert line, "the child did not set up"
        map_id, spaces = int(line[0]), (line[1], line[2])
        ids = _prog_ids(live.PROGRAMS) - before
        assert ids and live.kthreads(map_id)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert set(spaces) <= set(netns.leftovers())
    swept = netns.sweep()
    assert set(spaces) <= set(swept)
    assert _gone(ids, map_id, spaces) == []


@pytest.mark.rule("CPUMAP-LIVE-001")
def test_veth_page_pools_are_invisible_to_page_pool_get(path: live.CpumapVeth) -> None:
    """veth creates its pools without a netdev, so the netdev family's page-pool-get
    lists none of them (a documented limit: inflight pages of veth's pools cannot be read
    live); the family itself answers (without CONFIG_PAGE_POOL_STATS)."""
    from conformance.live import page_pool_nl

    path.set_entry(1, 64, 2)
    try:
        path.send(20, 64)
        assert len(path.settle().received) == 20
        with netns.entered(path.ns_r):
            pools = page_pool_nl.page_pools()
        assert [p for p in pools if p.get("ifindex") == path.ifindex] == []
    finally:
        path.clear_entry(1)

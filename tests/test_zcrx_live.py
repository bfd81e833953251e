"""zcrx registration against the running kernel (target ``zcrx-live``): the errno of each
check before the device, veth's refusal (ZCRX-REG-012), and that nothing is left behind:
no namespace, no io_uring fd, no mapping, also after a SIGKILL.  Needs root and a kernel
with zcrx; skips with the reason otherwise."""

from __future__ import annotations

import contextlib
import errno
import os
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import attrs
import pytest

from conformance.components import zcrx
from conformance.live import io_uring, netns
from conformance.scenario import Scenario
from reference.kernel import gate, parse_kernel

ROOT = Path(__file__).resolve().parents[1]


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "zcrx live tests need root"
    return io_uring.unavailable()


pytestmark = pytest.mark.skipif(_why_not() is not None, reason=str(_why_not()))


@pytest.fixture(scope="module")
def target():  # type: ignore[no-untyped-def]
    from conformance.targets.zcrx_live import ZcrxLiveTarget

    t = ZcrxLiveTarget()
    yield t
    t.close()


def _kernel() -> str:
    return str(parse_kernel(platform.release(), "the running kernel"))


def _both(target, config: dict[str, Any]) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """(the kernel's rc, the model's rc for the running kernel) for one registration."""
    base: dict[str, Any] = {"reg": {"rq_entries": 64}, "area": {"len": 65536},
                            "region": {"size": 4096}, "netdev": dict(zcrx.VETH_NETDEV)}
    scenario = Scenario(component="zcrx", config=zcrx._merge(base, config), kernel=_kernel())
    live = target.run(scenario)["register"]["rc"]
    model = zcrx.COMPONENT.expected(scenario)["register"]["rc"]
    return int(live), int(model)


@pytest.mark.rule("ZCRX-REG-012", "ZCRX-REG-010")
def test_veth_is_stopped_by_the_dma_device_check(target) -> None:  # type: ignore[no-untyped-def]
    assert _both(target, {}) == (-errno.EOPNOTSUPP, -errno.EOPNOTSUPP)
    # whatever comes after the device: a queue veth does not have, an empty area
    assert _both(target, {"reg": {"if_rxq": 7}}) == (-errno.EOPNOTSUPP,) * 2
    assert _both(target, {"area": {"len": 0, "addr": 0}}) == (-errno.EOPNOTSUPP,) * 2
    assert _both(target, {"netdev": None, "reg": {"if_idx": 9}}) == (-errno.ENODEV,) * 2


@pytest.mark.rule("ZCRX-REG-001")
def test_without_cap_net_admin_eperm(target) -> None:  # type: ignore[no-untyped-def]
    assert _both(target, {"cap_net_admin": False}) == (-errno.EPERM, -errno.EPERM)
    # the thread that dropped the capability is gone; this process still has it
    assert _both(target, {}) == (-errno.EOPNOTSUPP,) * 2


@pytest.mark.rule("ZCRX-REG-003", "ZCRX-REG-004", "ZCRX-REG-007", "ZCRX-BUFLEN-001")
def test_words_reserved_before_their_features(target) -> None:  # type: ignore[no-untyped-def]
    """The version gates, settled by the running kernel: rx_buf_len (v7.0), the flags
    (ZCRX_REG_IMPORT) and event_desc (v7.1) are reserved words before their release."""
    kernel = parse_kernel(_kernel())
    if gate(kernel, "ZCRX-REG-004"):
        pytest.skip(f"kernel {kernel} has the registration flags")
    assert _both(target, {"reg": {"flags": 1}}) == (-errno.EINVAL,) * 2
    assert _both(target, {"reg": {"flags": 2, "if_idx": 0}}) == (-errno.EINVAL,) * 2
    assert _both(target, {"reg": {"rx_buf_len": 4096}}) == (-errno.EINVAL,) * 2
    assert _both(target, {"reg": {"event_desc": 8}}) == (-errno.EINVAL,) * 2


@pytest.mark.rule("ZCRX-REG-009")
def test_region_overflow_before_the_memory_is_touched(target) -> None:  # type: ignore[no-untyped-def]
    """An overflowing user region is refused before pinning: no memory needed there."""
    reg = {"region": {"flags": 1, "user_addr": (1 << 64) - 4096, "size": 8192}}
    assert _both(target, reg) == (-errno.EOVERFLOW,) * 2


@pytest.mark.rule("ZCRX-REG-012")
def test_data_path_scenarios_are_not_answered(target) -> None:  # type: ignore[no-untyped-def]
    from conformance.targets.base import NotApplicable

    with pytest.raises(NotApplicable, match="ZCRX-REG-012"):
        target.run(Scenario(component="zcrx", events=({"op": "reap"},)))
    with pytest.raises(NotApplicable, match="DMA device"):
        target.run(Scenario(component="zcrx", config={"reg": {"rq_entries": 64}}))
    caps = target.capabilities
    assert caps.components == frozenset({"zcrx"})
    assert not any(p.startswith(("events", "refills", "final", "counts", "ledger"))
                   for p in caps.reports)


def _io_uring_fds() -> int:
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if "io_uring" in os.readlink(f"/proc/self/fd/{fd}"):
                n += 1
        except OSError:
            pass
    return n


def _mapped(addr: int) -> bool:
    for line in Path("/proc/self/maps").read_text().splitlines():
        lo, _, hi = line.split()[0].partition("-")
        if int(lo, 16) <= addr < int(hi, 16):
            return True
    return False


@pytest.mark.rule("ZCRX-REG-012")
def test_each_registration_leaves_no_fd_and_no_mapping(target) -> None:  # type: ignore[no-untyped-def]
    before_fds = _io_uring_fds()
    where = (zcrx.USER_REGION_ADDR, zcrx.DEFAULT_AREA_ADDR)
    assert not any(_mapped(a) for a in where)
    for scenario in zcrx.veth_fault_scenarios()[:40]:
        # NotApplicable and friends: still nothing may stay
        with contextlib.suppress(Exception):
            target.run(attrs.evolve(scenario, kernel=_kernel()))
    assert _io_uring_fds() == before_fds == 0
    # the area and the user regions were mapped where the scenarios put them, and unmapped
    assert not any(_mapped(a) for a in where)


CHILD = """
import os, signal, sys
sys.path.insert(0, {root!r})
from conformance.targets.zcrx_live import ZcrxLiveTarget
t = ZcrxLiveTarget()
print(t.netns, t.peer_netns, flush=True)
sys.stdin.readline()
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.rule("ZCRX-REG-012")
def test_namespaces_are_swept_after_sigkill() -> None:
    """A SIGKILLed run leaves its two namespaces (nothing can catch SIGKILL; the kernel
    closes its rings and mappings); the next run's sweep removes them."""
    child = subprocess.Popen([sys.executable, "-c", CHILD.format(root=str(ROOT))],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdin is not None
    names = child.stdout.readline().split()
    assert len(names) == 2 and all(n.startswith(f"rxo{child.pid}") for n in names)
    child.stdin.write("\n")
    child.stdin.flush()
    assert child.wait(timeout=30) == -signal.SIGKILL
    for _ in range(50):
        if not netns.alive(child.pid):
            break
        time.sleep(0.02)
    assert set(names) <= set(netns.leftovers())
    swept = netns.sweep()
    assert set(names) <= set(swept)
    assert not set(names) & set(os.listdir(netns.NETNS_DIR))


@pytest.mark.rule("ZCRX-REG-012")
def test_close_removes_the_namespaces() -> None:
    from conformance.targets.zcrx_live import ZcrxLiveTarget

    t = ZcrxLiveTarget()
    names = [t.netns, t.peer_netns]
    assert set(names) <= set(os.listdir(netns.NETNS_DIR))
    t.close()
    t.close()  # idempotent
    assert not set(names) & set(os.listdir(netns.NETNS_DIR))

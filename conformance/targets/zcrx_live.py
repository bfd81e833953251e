"""``zcrx-live``: io_uring zcrx registration against the running kernel, on a veth.

Why a target of its own rather than ``--target veth --driver zcrx``: the ``veth`` target
is a BPF probe on a veth pair (clang, bpftool, libbpf, BTF) that answers ``veth``
scenarios; zcrx registration needs none of that, only root and io_uring, and its device
is a single veth end in a namespace of this run.  Keeping it apart lets it run (and its
tests skip) on its own requirements.

The run creates namespace ``rxo<pid>z`` with a veth end at ifindex :data:`VETH_IFINDEX`
(its peer lives in ``rxo<pid>y``, so no other index but the loopback's 1 exists in the
first).  Each scenario is one ``IORING_REGISTER_ZCRX_IFQ`` from a fresh thread inside the
namespace, on a fresh ring with the scenario's setup flags, with the scenario's three
structs (:mod:`conformance.live.io_uring`).  The target reports ``register.rc`` and what
the kernel wrote back; it cannot see the model's internal ``mp_rx_page_size``,
``driver_rx_page_size`` or ``num_niovs``, and it has no data path (veth cannot host a
zcrx queue, ZCRX-REG-012): those fields and every ``events``/``refills``/``final``/
``counts``/``ledger`` field are declared outside ``reports``, so they show as not checked.

Not applicable, by design (never a pass): scenarios with events (a data path); a device
that is not the model's veth (``reference.zcrx.register.VETH``: no DMA device, no queue
management ops, one RX queue, no header/data split), so that only the registration
property written for veth (whose marker names the rules veth decides) runs here and the
area, buffer-length and queue rules never pass on a kernel that cannot reach them; a
device index other than veth's; an ``if_idx``
that is the loopback's or veth's while the scenario says it names nothing; ring flags the
kernel refuses at setup; a user region whose memory this process cannot map where the
scenario puts it.  The area's memory is mapped where the scenario puts it when possible;
on veth the area is never looked at (ZCRX-REG-012).
"""

from __future__ import annotations

import errno
import os
import platform
from collections.abc import Mapping
from typing import Any

from conformance.scenario import Scenario
from conformance.targets.base import Capabilities, NotApplicable, TargetError, TargetUnavailable
from reference.errors import OracleError
from reference.zcrx.register import VETH, NetdevModel

#: veth's index in the run's namespace (the model's ``NetdevModel.ifindex`` default).
VETH_IFINDEX = 2
LOOPBACK_IFINDEX = 1
#: What the kernel exposes of a registration: its result and the written-back structs.
REPORTS = ("register.rc", "register.rq_entries", "register.rx_buf_len", "register.zcrx_id",
           "register.offsets*", "register.rq_area_token")


class ZcrxLiveTarget:
    """See the module docstring."""

    name = "zcrx-live"

    def __init__(self) -> None:
        from conformance.live import io_uring, netns

        reason = io_uring.unavailable()
        if reason:
            raise TargetUnavailable(reason)
        netns.sweep()
        try:
            first, second = _free_letters()
            self.netns = netns.create(first)
            self.peer_netns = netns.create(second)
            netns.ip("link", "add", "rxozv0", "index", str(VETH_IFINDEX), "type", "veth",
                     "peer", "name", "rxozv1", "netns", self.peer_netns, netns=self.netns)
        except OSError as exc:
            self.close()
            raise TargetUnavailable(f"zcrx-live: cannot create the veth namespace: {exc}") \
                from exc

    @property
    def capabilities(self) -> Capabilities:
        # KVER-001: the reference predicts for the kernel that answers.
        return Capabilities(frozenset({"zcrx"}), reports=REPORTS, kernel=platform.release())

    def run(self, scenario: Scenario) -> dict[str, Any]:
        from conformance.components.zcrx import config_of
        from conformance.live import io_uring

        if scenario.component != "zcrx":
            raise NotApplicable("zcrx-live runs zcrx scenarios only")
        if scenario.events:
            raise NotApplicable("zcrx-live registers only: veth cannot host a zcrx queue, "
                                "so there is no data path (ZCRX-REG-012)")
        netdev = scenario.config.get("netdev", {})
        if_idx = int(scenario.config.get("reg", {}).get("if_idx", VETH_IFINDEX))
        _check_device(netdev, if_idx)
        try:
            cfg = config_of(scenario)
        except OracleError as exc:  # the model refuses the input: not a live question
            raise NotApplicable(f"the model refuses this input: {exc}") from exc
        mappings: list[io_uring.Mapping] = []
        try:
            region = cfg.region
            # IORING_MEM_REGION_TYPE_USER: the memory must exist, unless the range wraps
            # past 2^64 (no memory can be there; ZCRX-REG-009 refuses it first).
            if region.flags & 1 and region.user_addr and \
                    region.user_addr + region.size <= 1 << 64:
                m = io_uring.map_at(region.user_addr, max(region.size, 1))
                if m is None:
                    raise NotApplicable(f"region memory at {region.user_addr:#x} cannot be "
                                        "mapped here; the model takes user memory as mapped")
                mappings.append(m)
            area_map = io_uring.map_at(cfg.area.addr, min(cfg.area.len, 1 << 30))
            if area_map is not None:
                mappings.append(area_map)
            call = io_uring.ZcrxCall(cfg.ctx.flags, cfg.reg, cfg.area, region,
                                     cfg.ctx.cap_net_admin)
            out = io_uring.register_in_thread(call, self.netns)
        except OSError as exc:
            raise TargetError(f"zcrx-live: {exc}", "crash") from exc
        finally:
            for m in mappings:
                m.close()
        if out.setup_rc:
            raise NotApplicable(f"the running kernel refuses ring flags {cfg.ctx.flags:#x} at "
                                f"setup: -{errno.errorcode.get(-out.setup_rc, out.setup_rc)}")
        ok = out.rc == 0
        register = {
            "rc": out.rc,
            "rq_entries": out.reg.rq_entries if ok else None,
            "rx_buf_len": out.reg.rx_buf_len if ok else None,
            "zcrx_id": out.reg.zcrx_id if ok else None,
            "offsets": ({"head": out.reg.offsets.head, "tail": out.reg.offsets.tail,
                         "rqes": out.reg.offsets.rqes} if ok else None),
            "rq_area_token": out.area.rq_area_token if ok else None,
        }
        return {"register": register, "events": []}

    def close(self) -> None:
        from conformance.live import netns

        for attr in ("netns", "peer_netns"):
            name = getattr(self, attr, None)
            if name:
                netns.delete(name)
                setattr(self, attr, None)


def _free_letters() -> tuple[str, str]:
    """Two namespace letters no target of this process uses yet (from the end of the
    alphabet: the veth and tun targets take theirs from the start)."""
    from conformance.live import netns

    taken = set(os.listdir(netns.NETNS_DIR)) if os.path.isdir(netns.NETNS_DIR) else set()
    free = [c for c in "zyxwvutsrq" if netns.name_for(c) not in taken]
    if len(free) < 2:
        raise OSError("no free namespace letters left in this process")
    return free[0], free[1]


def _check_device(netdev: Mapping[str, Any] | None, if_idx: int) -> None:
    """NotApplicable unless the live namespace realises the scenario's device: veth (no
    DMA device) at :data:`VETH_IFINDEX`, or no device at ``if_idx``."""
    if netdev is None:
        if if_idx in (LOOPBACK_IFINDEX, VETH_IFINDEX):
            raise NotApplicable(f"if_idx {if_idx} names a device in the live namespace; "
                                "the scenario says none")
        return
    if netdev.get("has_dma_dev", True):
        raise NotApplicable("the scenario's device has a DMA device; the live device is veth, "
                            "which has none (ZCRX-REG-012)")
    defaults = NetdevModel()
    for field in ("queue_mgmt_ops", "real_num_rx_queues", "tcp_data_split"):
        if netdev.get(field, getattr(defaults, field)) != getattr(VETH, field):
            raise NotApplicable(f"the scenario's device is not veth ({field}; ZCRX-REG-012)")
    if int(netdev.get("ifindex", VETH_IFINDEX)) != VETH_IFINDEX:
        raise NotApplicable(f"the live veth has ifindex {VETH_IFINDEX}")
    if if_idx != VETH_IFINDEX and if_idx == LOOPBACK_IFINDEX:
        raise NotApplicable("if_idx 1 is the live namespace's loopback; the scenario says "
                            "no device has it")

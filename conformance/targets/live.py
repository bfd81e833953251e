"""Live kernel targets: the real veth and tun drivers, or an existing interface.

- ``veth``: a veth pair in two fresh namespaces of this run; frames are sent with AF_PACKET
  from one end, the probe runs native on the other (component ``veth``).  It also runs
  component ``cpumap`` on a pair of its own whose receiving end redirects into a real
  cpumap entry (:mod:`conformance.targets.live_cpumap`, set up at the first such scenario).
- ``tun``: a tap device in a fresh namespace; frames are written to its fd (``tun``).
- ``iface:NAME[,peer=PEER][,netns=NS][,peer_netns=NS2]``: an existing interface, probed
  native and device-bound; frames are sent with AF_PACKET from ``PEER`` (by default the
  interface itself cannot send to itself, so ``peer`` is required).  The component, and
  so the predictions, is chosen from the driver name ethtool reports (``veth``, ``tun``);
  a driver without a model implements no component and every property is "not
  applicable".

The probe program (``conformance/live/rxo_probe.bpf.c``) is loaded once and reused across
scenarios: each scenario only rewrites its op-list map.  Requirements: root, clang,
bpftool, libbpf, kernel BTF (:func:`conformance.live.env.missing` says what is missing).
"""

from __future__ import annotations

import platform
import time
from collections.abc import Mapping, Sequence
from typing import Any

from conformance.components.veth import oob_tags
from conformance.components.xdp import PASS_PROGRAM
from conformance.scenario import Scenario
from conformance.targets.base import (
    Capabilities,
    InputNotApplicable,
    NotApplicable,
    TargetError,
    TargetUnavailable,
)

MODELLED_DRIVERS = ("veth", "tun")
#: What the veth component's live runs report: everything it predicts.
VETH_REPORTS = ("packets[*].ops*", "packets[*].action", "packets[*].data", "packets[*].meta",
                "packets[*].len", "counters.*", "attach.*")
RQ_COUNTERS = (*(f"rx_queue_0_{name}" for name in (
    "xdp_packets", "xdp_bytes", "drops", "xdp_redirect", "xdp_drops", "xdp_tx", "xdp_tx_errors")),
    "tx_queue_0_xdp_xmit", "tx_queue_0_xdp_xmit_errors")


def parse_iface(spec: str) -> dict[str, str]:
    name, *opts = spec.split(",")
    out = {"name": name}
    for opt in opts:
        key, sep, value = opt.partition("=")
        if not sep or key not in ("peer", "netns", "peer_netns"):
            raise TargetUnavailable(f"iface option {opt!r}: use peer=, netns=, peer_netns=")
        out[key] = value
    if not name or "peer" not in out:
        raise TargetUnavailable("iface target needs NAME and peer=PEER (the sender)")
    return out


class LiveTarget:
    """One live device for the whole run; see the module docstring."""

    def __init__(self, kind: str, iface: str = "") -> None:
        from conformance.live import env, netns, probe
        from conformance.live.devices import Iface, LiveDevice, TapDevice, VethPair

        reason = env.missing()
        if reason:
            raise TargetUnavailable(reason)
        netns.sweep()
        try:
            obj = probe.build()
            device: LiveDevice
            if kind == "veth":
                device = VethPair(obj)
            elif kind == "tun":
                device = TapDevice(obj)
            else:
                opts = parse_iface(iface)
                device = Iface(obj, opts["name"], opts["peer"], opts.get("netns"),
                               opts.get("peer_netns"))
        except (OSError, probe.ProbeError) as exc:
            raise TargetUnavailable(f"live {kind}: {exc}") from exc
        self.device = device
        self.name = f"live {kind}" + (f":{iface}" if iface else "")
        self.driver = device.driver
        self.kind = kind
        self.cpumap: Any = None
        #: The op kinds the kernel refuses on this device, and why (conformance.live.ops).
        self.refused: dict[str, str] = dict(device.probe.refused)
        #: One line per refusal, printed once with the run's verdicts.
        self.notes: tuple[str, ...] = tuple(
            f"{self.name}: {why}: cases whose XDP program calls it are not applicable"
            for why in self.refused.values())

    @property
    def capabilities(self) -> Capabilities:
        components = frozenset({self.driver}) if self.driver in MODELLED_DRIVERS else frozenset()
        if self.kind != "veth":
            # KVER-001: the reference predicts for the kernel these drivers run in.
            return Capabilities(components, kernel=platform.release())
        from conformance.targets.live_cpumap import LIVE_REPORTS

        return Capabilities(components | {"cpumap"}, VETH_REPORTS + LIVE_REPORTS,
                            kernel=platform.release())

    def run(self, scenario: Scenario) -> dict[str, Any]:
        from conformance.live.probe import MAX_PKTS, ProbeError, decode_record

        if scenario.component == "cpumap" and self.kind == "veth":
            return self._run_cpumap(scenario)
        if scenario.component != self.driver:
            raise NotApplicable(f"{self.name} runs {self.driver!r} scenarios only")
        path = scenario.config.get("path", "skb")
        if path not in ("skb", "xdp_frame") or not scenario.config.get("peer_xdp", True):
            raise NotApplicable(f"{self.name}: only the skb and xdp_frame paths with a peer "
                                "program")
        if path != "skb" and self.kind != "veth":
            raise NotApplicable(f"{self.name}: the xdp_frame path needs the veth pair")
        if scenario.config.get("attach") is not None:
            return self._run_attach(scenario)
        frames = list(scenario.frames)
        oob = oob_tags(scenario) if self.driver == "veth" else [None] * len(frames)
        programs: list[Sequence[Mapping[str, Any]]] = [
            scenario.program_for(i) or PASS_PROGRAM for i in range(len(frames))]
        self._refuse(programs)
        packets: list[dict[str, Any]] = []
        totals = dict.fromkeys(RQ_COUNTERS, 0)
        try:
            if self.kind == "veth":
                self.device.set_path(path)
            for start in range(0, len(frames), MAX_PKTS):
                batch = frames[start:start + MAX_PKTS]
                progs = programs[start:start + MAX_PKTS]
                tags = oob[start:start + MAX_PKTS]
                self.device.probe.prepare(progs)
                self.device.set_vlan(tags[0])
                before = self.device.counters()
                if len(set(tags)) == 1:
                    self.device.send(batch)
                else:  # a tag per frame: the sender's tc program reads it at each send
                    for frame, tag in zip(batch, tags, strict=True):
                        self.device.set_vlan(tag)
                        self.device.send([frame])
                raws = self.device.probe.collect(len(batch))
                after = self._settled(before, len(batch))
                self.device.drain()
                for i, raw in enumerate(raws):
                    packet = decode_record(raw, progs[i])
                    if packet.pop("seq") != i:
                        raise TargetError(f"{self.name}: packets reached XDP out of order",
                                          "garbage")
                    packets.append(packet)
                for key in totals:
                    totals[key] += after.get(key, 0) - before.get(key, 0)
        except (OSError, ProbeError) as exc:
            raise TargetError(f"{self.name}: {exc}", "crash") from exc
        observables: dict[str, Any] = {"packets": packets}
        if self.driver == "veth":
            observables["counters"] = totals
        return observables

    def _refuse(self, programs: Sequence[Sequence[Mapping[str, Any]]]) -> None:
        """Not applicable when an op list calls what this kernel refuses (the probe was
        built without it); every other case runs."""
        from conformance.live.ops import needed

        calls = sorted(needed(programs) & set(self.refused))
        if calls:
            raise InputNotApplicable(f"{self.name}: {self.refused[calls[0]]}")

    def _run_attach(self, scenario: Scenario) -> dict[str, Any]:
        """VETH-MTU-001 on the pair itself: the attach's errno and the peer's max_mtu."""
        from conformance.components.veth import attach_config
        from conformance.live.devices import VethPair
        from conformance.live.probe import ProbeError

        config = attach_config(scenario)
        if not isinstance(self.device, VethPair) or config is None:
            raise NotApplicable(f"{self.name}: attach scenarios need the veth target's pair")
        try:
            rc, max_mtu = self.device.attach_check(*config)
        except (OSError, ProbeError) as exc:
            raise TargetError(f"{self.name}: attach: {exc}", "crash") from exc
        return {"packets": [], "counters": dict.fromkeys(RQ_COUNTERS, 0),
                "attach": {"rc": rc, "peer_max_mtu": max_mtu}}

    def _settled(self, before: dict[str, int], sent: int) -> dict[str, int]:
        """Counters once the NAPI poll that handled the batch has published them
        (veth adds them after its loop, and XDP_TX after flushing to the peer)."""
        if not before:
            return {}
        key = "rx_queue_0_xdp_packets"
        deadline = time.monotonic() + 1.0
        last = self.device.counters()
        while time.monotonic() < deadline:
            time.sleep(0.0005)
            now = self.device.counters()
            if now == last and now.get(key, 0) - before.get(key, 0) >= sent:
                return now
            last = now
        return last

    def _run_cpumap(self, scenario: Scenario) -> dict[str, Any]:
        from conformance.live.probe import ProbeError
        from conformance.targets.live_cpumap import LiveCpumap, plan

        plan(scenario)  # not applicable before anything is set up
        if self.cpumap is None:
            try:
                self.cpumap = LiveCpumap()
            except (OSError, ProbeError) as exc:
                raise TargetError(f"{self.name}: cpumap path: {exc}", "crash") from exc
        result: dict[str, Any] = self.cpumap.run(scenario)
        return result

    def close(self) -> None:
        if getattr(self, "cpumap", None) is not None:
            self.cpumap.close()
            self.cpumap = None
        device = getattr(self, "device", None)
        if device is not None:
            device.close()
            self.device = None  # type: ignore[assignment]

"""The devices a live target probes, each with its own way of injecting frames.

- :class:`VethPair`: two namespaces ``rxo<pid>a``/``rxo<pid>b`` joined by a veth pair;
  frames are sent with AF_PACKET on the ``a`` end and the probe runs on the ``b`` end
  (skb path); ``a`` carries ``rxo_peer`` so XDP_TX from ``b`` is received and dropped,
  and ``rxo_vlan`` on its tc egress to push out-of-band VLAN tags on request.
- :class:`TapDevice`: a tap ``rxo<pid>t`` in its own namespace; frames are written to the
  tap file descriptor (non-blocking, so ``tun_build_skb`` runs the native program).
- :class:`Iface`: an existing interface; frames are sent from a named peer interface.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import struct
import time
from pathlib import Path

from conformance.live import netns
from conformance.live.ethtool import EthtoolStats
from conformance.live.ops import load_probe
from conformance.live.probe import PeerProgram, Probe, ProbeError

TUNSETIFF = 0x400454CA
IFF_TAP = 0x0002
IFF_NO_PI = 0x1000


def _wait_up(ifname: str, ns: str | None, timeout: float = 3.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        state = json.loads(netns.ip("-j", "link", "show", "dev", ifname, netns=ns))[0]
        if state.get("operstate") in ("UP", "UNKNOWN") and "NO-CARRIER" not in state["flags"]:
            return
        if time.monotonic() > deadline:
            raise ProbeError(f"{ifname} did not come up: {state.get('operstate')}")
        time.sleep(0.005)


class LiveDevice:
    """A probed interface: ``driver``, ``send`` a batch, read ``counters``."""

    driver: str
    probe: Probe
    stats: EthtoolStats | None = None

    def send(self, frames: list[bytes]) -> None:
        raise NotImplementedError

    def counters(self) -> dict[str, int]:
        return self.stats.read() if self.stats is not None else {}

    def drain(self) -> None:
        """Discard whatever the device queued towards user space."""

    def set_vlan(self, tag: tuple[int, int] | None) -> None:
        """Send the next frames with this out-of-band (proto, tci) tag, or none."""
        if tag is not None:
            raise ProbeError(f"{self.driver}: no out-of-band VLAN tags on this device")

    def set_path(self, path: str) -> None:
        """How the next frames reach the probe: ``skb`` (sent to it) or ``xdp_frame``."""
        if path != "skb":
            raise ProbeError(f"{self.driver}: only the skb path on this device")

    def close(self) -> None:
        raise NotImplementedError


class VethPair(LiveDevice):
    driver = "veth"

    def __init__(self, obj: Path) -> None:
        self.probe_obj_path = obj
        self.ns_a = netns.create("a")
        self.ns_b = netns.create("b")
        try:
            self.if_a, self.if_b = self.ns_a, self.ns_b
            netns.ip("link", "add", self.if_a, "netns", self.ns_a, "type", "veth",
                     "peer", "name", self.if_b, "netns", self.ns_b)
            netns.ip("link", "set", self.if_a, "up", netns=self.ns_a)
            netns.ip("link", "set", self.if_b, "up", netns=self.ns_b)
            with netns.entered(self.ns_b):
                self.ifindex_b = socket.if_nametoindex(self.if_b)
                self.probe = load_probe(obj, self.ifindex_b)
                self._stat_sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                self.stats = EthtoolStats(self._stat_sock, self.if_b)
                # The xdp_frame path: frames sent from b, bounced by a's rxo_bounce.
                self.tx_b = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
                self.tx_b.bind((self.if_b, 0))
            with netns.entered(self.ns_a):
                self.peer = PeerProgram(obj, socket.if_nametoindex(self.if_a), vlan=True,
                                        bounce=True)
                self.tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
                self.tx.bind((self.if_a, 0))
            self.path = "skb"
            _wait_up(self.if_a, self.ns_a)
            _wait_up(self.if_b, self.ns_b)
        except BaseException:
            self.close()
            raise

    def send(self, frames: list[bytes]) -> None:
        sock = self.tx if self.path == "skb" else self.tx_b
        for frame in frames:
            sock.send(frame)

    def set_vlan(self, tag: tuple[int, int] | None) -> None:
        self.peer.set_vlan(tag)

    def set_path(self, path: str) -> None:
        """``skb``: frames are sent from a, whose ``rxo_peer`` drops what b's XDP_TX sends
        back; ``xdp_frame`` (VETH-FRAME-001): frames are sent from b, and a's
        ``rxo_bounce`` returns them with XDP_TX, so they reach b's program as xdp_frames."""
        if path not in ("skb", "xdp_frame"):
            raise ProbeError(f"veth: no path {path!r}")
        with netns.entered(self.ns_a):
            self.peer.use("rxo_peer" if path == "skb" else "rxo_bounce")
        self.path = path

    def attach_check(self, peer_mtu: int, frags: bool, rx_queues: int = 1,
                     peer_tx_queues: int = 1) -> tuple[int, int]:
        """VETH-MTU-001: with the probe detached (so the receiving end has no program and
        its peer's max_mtu is back to 65535), set the sending end's MTU to ``peer_mtu``
        and attach a plain program (``rxo_peer``, frags-aware or not) to the receiving
        end: the errno and the sending end's ``max_mtu`` after.  Then the probe is
        attached again at MTU 1500.  Queue counts other than one each are tried on a
        pair made for the purpose (:meth:`_attach_check_queues`)."""
        from conformance.live import libbpf

        if (rx_queues, peer_tx_queues) != (1, 1):
            return self._attach_check_queues(peer_mtu, frags, rx_queues, peer_tx_queues)
        with netns.entered(self.ns_b):
            libbpf.xdp_detach(self.ifindex_b)
        self.probe.attached = False
        obj = None
        try:
            netns.ip("link", "set", "dev", self.if_a, "mtu", str(peer_mtu), netns=self.ns_a)
            obj = libbpf.BpfObject(str(self.probe_obj_path))
            fd = obj.load("rxo_peer", others=("rxo_probe", "rxo_bounce", "rxo_vlan"),
                          flags=libbpf.BPF_F_XDP_HAS_FRAGS if frags else 0)
            with netns.entered(self.ns_b):
                try:
                    libbpf.xdp_attach(self.ifindex_b, fd)
                    rc = 0
                except libbpf.BpfError as exc:
                    rc = -(exc.errno or 0)
            link = json.loads(netns.ip("-j", "-d", "link", "show", "dev", self.if_a,
                                       netns=self.ns_a))[0]
            max_mtu = int(link["max_mtu"])
            if rc == 0:
                with netns.entered(self.ns_b):
                    libbpf.xdp_detach(self.ifindex_b)
        finally:
            if obj is not None:
                obj.close()
            netns.ip("link", "set", "dev", self.if_a, "mtu", "1500", netns=self.ns_a)
            with netns.entered(self.ns_b):
                libbpf.xdp_attach(self.ifindex_b, self.probe.fd)
            self.probe.attached = True
        return rc, max_mtu

    def _attach_check_queues(self, peer_mtu: int, frags: bool, rx_queues: int,
                             peer_tx_queues: int) -> tuple[int, int]:
        """VETH-MTU-001 on a second pair: the sending end with ``peer_tx_queues`` tx
        queues at ``peer_mtu``, the receiving end with ``rx_queues`` rx queues, a plain
        program attached to it; the pair is deleted after."""
        from conformance.live import libbpf

        name_a, name_b = "rxoqa", "rxoqb"
        netns.ip("link", "add", name_a, "netns", self.ns_a, "numtxqueues", str(peer_tx_queues),
                 "numrxqueues", "1", "type", "veth", "peer", "name", name_b,
                 "netns", self.ns_b, "numtxqueues", "1", "numrxqueues", str(rx_queues))
        obj = None
        try:
            netns.ip("link", "set", "dev", name_a, "mtu", str(peer_mtu), netns=self.ns_a)
            obj = libbpf.BpfObject(str(self.probe_obj_path))
            fd = obj.load("rxo_peer", others=("rxo_probe", "rxo_bounce", "rxo_vlan"),
                          flags=libbpf.BPF_F_XDP_HAS_FRAGS if frags else 0)
            with netns.entered(self.ns_b):
                ifindex = socket.if_nametoindex(name_b)
                try:
                    libbpf.xdp_attach(ifindex, fd)
                    rc = 0
                except libbpf.BpfError as exc:
                    rc = -(exc.errno or 0)
            link = json.loads(netns.ip("-j", "-d", "link", "show", "dev", name_a,
                                       netns=self.ns_a))[0]
            return rc, int(link["max_mtu"])
        finally:
            if obj is not None:
                obj.close()
            netns.ip("link", "del", name_a, netns=self.ns_a)

    def close(self) -> None:
        for attr in ("tx", "tx_b", "_stat_sock"):
            sock = getattr(self, attr, None)
            if sock is not None:
                sock.close()
        for attr in ("probe", "peer"):
            obj = getattr(self, attr, None)
            if obj is not None:
                try:
                    with netns.entered(self.ns_b if attr == "probe" else self.ns_a):
                        obj.close()
                except OSError:
                    pass
                setattr(self, attr, None)
        netns.delete(self.ns_a)
        netns.delete(self.ns_b)


class TapDevice(LiveDevice):
    driver = "tun"

    def __init__(self, obj: Path) -> None:
        self.ns = netns.create("t")
        self.ifname = self.ns
        self.fd = -1
        try:
            with netns.entered(self.ns):
                self.fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
                ifr = struct.pack("16sH", self.ifname.encode(), IFF_TAP | IFF_NO_PI)
                fcntl.ioctl(self.fd, TUNSETIFF, ifr)
                netns.ip("link", "set", self.ifname, "up", netns=self.ns)
                self.ifindex = socket.if_nametoindex(self.ifname)
                self.probe = load_probe(obj, self.ifindex)
        except BaseException:
            self.close()
            raise

    def send(self, frames: list[bytes]) -> None:
        for frame in frames:
            os.write(self.fd, frame)

    def drain(self) -> None:
        while True:
            try:
                os.read(self.fd, 65536)
            except BlockingIOError:
                return

    def close(self) -> None:
        probe = getattr(self, "probe", None)
        if probe is not None:
            try:
                with netns.entered(self.ns):
                    probe.close()
            except OSError:
                pass
            self.probe = None  # type: ignore[assignment]
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        netns.delete(self.ns)


class Iface(LiveDevice):
    """An interface that already exists (in namespace ``ns`` or this one); frames are
    sent with AF_PACKET from ``peer`` (in ``peer_ns`` or ``ns``)."""

    def __init__(self, obj: Path, name: str, peer: str, ns: str | None = None,
                 peer_ns: str | None = None) -> None:
        self.name, self.ns = name, ns
        self.peer_ns = peer_ns or ns
        self.probe = None  # type: ignore[assignment]
        self.tx: socket.socket | None = None
        with self._in(self.ns):
            self.ifindex = socket.if_nametoindex(name)
            self._stat_sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self.stats = EthtoolStats(self._stat_sock, name)
            self.driver = self.stats.driver
            self.probe = load_probe(obj, self.ifindex)
        try:
            with self._in(self.peer_ns):
                self.tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
                self.tx.bind((peer, 0))
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _in(ns: str | None) -> contextlib.AbstractContextManager[None]:
        return netns.entered(ns) if ns else contextlib.nullcontext()

    def send(self, frames: list[bytes]) -> None:
        assert self.tx is not None
        for frame in frames:
            self.tx.send(frame)

    def close(self) -> None:
        if self.tx is not None:
            self.tx.close()
            self.tx = None
        if self.probe is not None:
            with self._in(self.ns):
                self.probe.close()
            self.probe = None  # type: ignore[assignment]
        self._stat_sock.close()

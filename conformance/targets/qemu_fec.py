"""The real fec driver: Debian's armhf kernel on QEMU's i.MX6Q SabreLite (``--target
qemu-fec``, ``qemu-fec:sabrelite``: extended descriptors and RACC, the board's own
``fsl,imx6q-fec``; ``qemu-fec:sabrelite-legacy``: the device tree patched to
``fsl,imx27-fec``, legacy descriptors, no RACC, no checksum or VLAN offload); and Debian's
arm64 kernel on QEMU's i.MX8MP EVK (``qemu-fec:imx8mp-evk``: QEMU >= 10.0, unpacked from
the archive's backports where the host's is older, :mod:`conformance.live.qemu_fec.qemu`;
``fsl,imx8mp-fec`` with AVB and three queues; its kernel has BTF, so the probe calls the
metadata kfuncs, loaded bound to eth0: FEC-XDP-001 live).

One guest boots per run (:mod:`conformance.live.qemu_fec`, ~7-25 s) and runs every
scenario (~1 s each): the scenario's op lists and a RUN command go to the guest as control
frames on the NIC itself (the console only carries the guest's output, see
:mod:`conformance.live.qemu_fec.guest`); the guest takes the interface down
(``fec_enet_close`` frees the ring, the page_pool and the per-queue XDP counters),
attaches or detaches the probe, sets the RX checksum and VLAN features, brings it up
(``fec_enet_open`` builds a new ring and pool: the fresh device the fec component's
reference starts from), says ARMED, and the host injects the frames through QEMU's
datagram netdev.  Frames the MAC sends come back on the same socket.  Frames the driver
hands to the stack are dropped at tcx ingress by the probe object's control program, so
no protocol answers them and the stack adds no drops of its own to ``rx_dropped``.

Observables (PROTOCOL.md, component ``fec``): ``packets[*].verdict`` and
``packets[*].ops`` (the probe's records, paired with frames by the length each XDP run
started with: a frame the driver takes as an error has none), ``wire`` (frames back at
the host), ``counters`` (the netdev counters, as deltas over the scenario; ``rx_bytes``
as the guest's kernel counts it, FEC-RX-005's version gate), ``ethtool`` (the XDP and page_pool
strings of ``ethtool -S``; absolute, as the device was just opened).  Everything else is
null and declared not reported, so it shows as "not checked": descriptor contents and
ring slots, skbs (QEMU writes no checksum or VLAN status), page_pool internals,
conservation, TX completions and ndo_xdp_xmit.

A scenario the board cannot reproduce (another byte order, ring size, descriptor kind,
injected faults, forced allocation failures, restarts, kfunc calls on the armhf boards,
more than 64 frames)
is "not applicable" (:meth:`QemuFecTarget.supports`); ``fec.board_scenarios`` draws the
ones it can.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from conformance.components import fec
from conformance.live.qemu_fec.guest import CTL_MAGIC, CTL_PROTO
from conformance.scenario import Scenario
from conformance.targets.base import Capabilities, NotApplicable, TargetError, TargetUnavailable
from reference.fec.counters import NetStats
from reference.fec.state import FCS_LEN, PKT_MAXBUF_SIZE, RX_RING_SIZE, TX_RING_SIZE
from reference.xdp.actions import ACTION_NAMES, XdpAction

REPORTS = ("packets[*].verdict", "packets[*].ops*", "wire*", "counters.*", "ethtool.*")
#: What each board variant fixes in the fec config (:mod:`conformance.components.fec`): the
#: quirks of the compatible its device tree names, and the ring sizes fec.h compiles in.
BOARD_CONFIG: dict[str, Mapping[str, Any]] = {
    "sabrelite": fec.IMX6Q,            # fsl,imx6q-fec: extended descriptors, RACC
    "sabrelite-legacy": fec.IMX27,     # the DT patched to fsl,imx27-fec: legacy descriptors
    "imx8mp-evk": fec.IMX8MP,          # fsl,imx8mp-fec -> imx8mq quirks: AVB, 3 TX queues
}
_DEFAULTS = {"arch": "arm64", "byte_order": "little", "bufdesc_ex": True, "racc": True,
             "rx_csum": True, "vlan_rx": True, "rx_ring_size": RX_RING_SIZE,
             "tx_ring_size": TX_RING_SIZE, "xdp_tx_frame": False, "redirect_ok": False,
             "avb": False, "num_tx_queues": 1, "num_rx_queues": 1, "cpu": 0}
_EVENT_OPS = {"rx", "napi", "tx_done", "stack_free"}
_NAPI_WEIGHT = 64
_NETDEV = tuple(NetStats().as_dict())
_OP_OUT = re.compile(r"^[0-9a-f]{2}$")


def verdict_name(action: int) -> str:
    return ACTION_NAMES[action] if action <= XdpAction.XDP_REDIRECT else "UNKNOWN"


class QemuFecTarget:
    """See the module docstring."""

    def __init__(self, board: str = "sabrelite", version: str | None = None) -> None:
        from conformance.live.qemu_fec import boot, guest
        from conformance.live.qemu_fec.archive import ArchiveUnreachable, ImageError

        board = board or "sabrelite"
        if board not in BOARD_CONFIG:
            raise TargetUnavailable(f"qemu-fec board {board!r}: use {', '.join(BOARD_CONFIG)}")
        # imx8mp-evk: QEMU >= 10 may come from the archive (qemu.find), not from PATH
        reason = boot.missing_tools(None if board == "imx8mp-evk" else "qemu-system-arm")
        if reason:
            raise TargetUnavailable(reason)
        guest.sweep()
        self.board = board
        self.name = f"qemu-fec:{board}" + (f"@{version}" if version else "")
        self.fixed = BOARD_CONFIG[board]
        #: the probe calls the metadata kfuncs (a guest kernel with BTF: FEC-XDP-001 live)
        self.kfuncs = boot.BOARDS[board].kfuncs
        try:
            self.files = boot.prepare(board, version=version)
        except ArchiveUnreachable as exc:
            raise TargetUnavailable(str(exc)) from exc
        except ImageError as exc:
            raise TargetUnavailable(f"qemu-fec set-up: {exc}") from exc
        try:
            self.guest: guest.Guest | None = guest.Guest(
                kernel=self.files.vmlinuz, dtb=self.files.dtb, initrd=self.files.initrd,
                machine=self.files.machine, qemu=self.files.qemu.binary,
                qemu_env=self.files.qemu.env)
        except guest.GuestError as exc:
            raise TargetUnavailable(f"qemu-fec boot: {exc}") from exc
        self.kernel_version = self.files.version
        self.scenarios_run = 0
        self.frames_run = 0

    @property
    def fixed_config(self) -> Mapping[str, Any]:
        """The board's fec config (``test_fec_board_agrees_with_reference`` draws it)."""
        return self.fixed

    @property
    def capabilities(self) -> Capabilities:
        # KVER-001: the guest's kernel (the package's version, e.g. 6.12.117+deb13-armmp).
        return Capabilities(frozenset({"fec"}), reports(self.fixed), kernel=self.kernel_version)

    # --- what the board can reproduce -----------------------------------------------------

    def supports(self, scenario: Scenario) -> str | None:
        """None when the board can run ``scenario``; else why not (not applicable)."""
        if scenario.component != "fec":
            return f"{self.name} runs fec scenarios only"
        cfg = {**_DEFAULTS, **scenario.config}
        for key, want in self.fixed.items():
            if cfg.get(key) != want:
                return f"{self.name} has {key}={want!r}, the scenario {cfg.get(key)!r}"
        for key in ("faults", "page_alloc_bulk"):
            if scenario.config.get(key):
                return f"{self.name} cannot inject {key}"
        if int(scenario.config.get("budget", _NAPI_WEIGHT)) != _NAPI_WEIGHT:
            return f"{self.name} polls with NAPI_POLL_WEIGHT {_NAPI_WEIGHT}"
        reason = _events_reason(scenario)
        if reason:
            return f"{self.name}: {reason}"
        for i in range(len(scenario.frames)):
            for op in scenario.program_for(i) or ():
                if op["op"] == "kfunc" and not self.kfuncs:
                    return (f"{self.name}: the guest kernel has no BTF, so a program calling "
                            "a kfunc cannot load")
        for frame in scenario.frames:
            if not self.fixed.get("bufdesc_ex") and len(frame) + FCS_LEN > PKT_MAXBUF_SIZE:
                return (f"{self.name}: QEMU 7.2's ENET with legacy descriptors dies (SIGSEGV, "
                        f"seen) on a frame longer than FTRL ({PKT_MAXBUF_SIZE} bytes with FCS)")
            if is_control_frame(frame):
                return (f"{self.name}: a frame of EtherType 0x{CTL_PROTO:04x} with the control "
                        "magic is the host's control channel, not a scenario frame")
        if len(scenario.frames) > _max_pkts():
            return f"{self.name} runs at most {_max_pkts()} frames per scenario"
        return None

    # --- running a scenario ---------------------------------------------------------------

    def run(self, scenario: Scenario) -> dict[str, Any]:
        from conformance.live.probe import ProbeError, decode_record, encode_program
        from conformance.live.qemu_fec.guest import OP_RECORD, RECORD_HEAD, RUN, GuestError

        reason = self.supports(scenario)
        if reason:
            raise NotApplicable(reason)
        if self.guest is None:
            raise TargetError(f"{self.name} is closed")
        g = self.guest
        frames = list(scenario.frames)
        xdp = scenario.program is not None or bool(scenario.per_packet_programs)
        programs: list[Sequence[Mapping[str, Any]]] = [
            scenario.program_for(i) or () for i in range(len(frames))]
        cfg = {**_DEFAULTS, **scenario.config}
        legacy = self.board == "sabrelite-legacy"
        try:
            out = g.control(RUN, nframes=len(frames), xdp=xdp,
                            rx_csum=None if legacy else bool(cfg["rx_csum"]),
                            vlan_rx=None if legacy else bool(cfg["vlan_rx"]),
                            programs=[encode_program(ops) for ops in programs] if xdp else (),
                            frames=frames, record_bytes=RECORD_HEAD + OP_RECORD * max(
                                (len(ops) for ops in programs), default=0))
            wire = g.receive(0, timeout=0.3, grace=0.1)
        except (GuestError, ProbeError) as exc:
            raise TargetError(f"{self.name}: {exc}") from exc
        armed = out.index(next(line for line in out if line.startswith("RXO-RECORDS")))
        base = _netdev(out[:armed])
        out = out[armed:]
        records, seq = _records(out)
        packets: list[dict[str, Any]] = [{"verdict": None, "ops": []} for _ in frames]
        if xdp:
            # The dump asks for one record per frame; those past the probe's count are
            # left over from an earlier scenario.
            if not 0 <= seq <= len(records):
                raise TargetError(f"{self.name}: the probe ran {seq} times for "
                                  f"{len(frames)} frames")
            for i, raw in match_records(frames, records[:seq]):
                rec = decode_record(raw, programs[i])
                packets[i] = {"verdict": verdict_name(rec["action"]), "ops": rec["ops"]}
        after = _netdev(out)
        self.scenarios_run += 1
        self.frames_run += len(frames)
        return {
            "packets": packets,
            "wire": [f.hex() for f in wire],
            "counters": {k: after.get(k, 0) - base.get(k, 0) for k in _NETDEV},
            "ethtool": _ethtool(out),
            # Not reported (see the module docstring); present because the schema names
            # every observable.
            **dict.fromkeys(("tx_completions", "xdp_xmit", "page_pool", "conservation", "ops",
                             "rx_ring")),
        }

    def close(self) -> None:
        g = getattr(self, "guest", None)
        if g is not None:
            g.close()
            self.guest = None


def match_records(frames: Sequence[bytes], records: Sequence[bytes]
                  ) -> list[tuple[int, bytes]]:
    """Pair the probe's records (in order, one per XDP run) with the frames they came
    from.  A frame the driver takes as an error (truncated, say) never reaches XDP, so
    records and frames can differ in number; the guest probe keeps the length each run
    started with (``rxo_rec.pad``), and a record belongs to the next frame of that
    length.  A frame left without a record reports no verdict."""
    out: list[tuple[int, bytes]] = []
    i = 0
    for raw in records:
        entry = int.from_bytes(raw[28:32], "little")
        while i < len(frames) and len(frames[i]) != entry:
            i += 1
        if i == len(frames):
            raise TargetError(f"a probe record of length {entry} matches no frame left")
        out.append((i, raw))
        i += 1
    return out


def reports(fixed: Mapping[str, Any]) -> tuple[str, ...]:
    """What the board reports (:data:`REPORTS`).  ``counters.rx_bytes`` is among them: the
    reference predicts for the guest's kernel (the target reports it), and the version
    gate of FEC-RX-005 leaves the RACC pad out on 6.12.63 and later, as Debian's kernels
    do.  ``fixed`` (the board) no longer changes the answer; it is kept for callers."""
    del fixed
    return REPORTS


def is_control_frame(frame: bytes) -> bool:
    """What the guest's probe takes for a control frame (``rxo_probe.bpf.c``)."""
    return (frame[12:14] == CTL_PROTO.to_bytes(2, "big")
            and frame[14:18] == CTL_MAGIC.to_bytes(4, "little"))


def _max_pkts() -> int:
    from conformance.live.qemu_fec.boot import GUEST_MAX_PKTS

    return GUEST_MAX_PKTS


def _events_reason(scenario: Scenario) -> str | None:
    """The events must be what a free-running device does by itself: every frame
    received once, NAPI polls that take them all, TX completions, the stack freeing."""
    events = list(scenario.events)
    if not events:
        return None
    ops = [str(e["op"]) for e in events]
    unknown = sorted(set(ops) - _EVENT_OPS)
    if unknown:
        return f"cannot trigger {', '.join(unknown)}"
    if ops.count("rx") != 1 or events[ops.index("rx")].get("frames") is not None:
        return "frames arrive once, all of them"
    after_rx = events[ops.index("rx") + 1:]
    napis = [e for e in after_rx if e["op"] == "napi"]
    if not napis or int(napis[-1].get("budget", _NAPI_WEIGHT)) < len(scenario.frames):
        return "the device polls until every frame is taken"
    if any(e["op"] == "tx_done" and (e.get("count") is not None or e.get("status"))
           for e in events):
        return "TX completes on its own, without errors"
    if "tx_done" not in ops[ops.index("rx"):] or ops[-1] != "stack_free":
        return "TX completes and the stack frees its skbs on its own"
    return None


def _netdev(lines: list[str]) -> dict[str, int]:
    out = {}
    for line in lines:
        if line.startswith("RXO-NETDEV "):
            _, name, value = line.split()
            out[name] = int(value)
    return out


def _ethtool(lines: list[str]) -> dict[str, int]:
    out = {}
    for line in lines:
        if line.startswith("RXO-ETHTOOL "):
            _, name, value = line.split()
            if name.startswith(("rx_xdp_", "tx_xdp_", "rx_pp_")):
                out[name] = int(value)
    return out


def _records(lines: list[str]) -> tuple[list[bytes], int]:
    """The dump's probe records and packet counter.

    ``init.sh``'s ``rxo_dump`` prints, between ``RXO-RECORDS`` and ``RXO-END-RECORDS``, one
    ``bpftool map lookup`` per record (a BTF-less value: ``key:``, hex, ``value:``, hex)
    and then ``seqmap[0]`` (which has BTF: printed as ``"value": N``)."""
    try:
        body = lines[lines.index("RXO-RECORDS") + 1:lines.index("RXO-END-RECORDS")]
    except ValueError:
        return [], -1
    records: list[bytes] = []
    current: list[str] | None = None
    rest: list[str] = []
    for line in body:
        if line.startswith("key:"):
            current = None
        elif line.startswith("value:"):
            current = []
            records.append(b"")
        elif current is not None and all(_OP_OUT.match(t) for t in line.split()):
            current += line.split()
            records[-1] = bytes.fromhex("".join(current))
        else:
            current = None
            rest.append(line)
    match = re.search(r'"value":\s*(\d+)', " ".join(rest))
    return records, int(match.group(1)) if match else -1

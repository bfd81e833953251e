"""What the benchmarks replay, and how: one frame mix, the two XDP programs, streaming
replay helpers over the models' real entry points, scapy's dissection of the same frames,
and the facts about the machine a figure came from.

The helpers call the models' own entry points - mlx5's RX stream
(:class:`reference.mlx5.rx.RxStream`, the loop behind :func:`reference.mlx5.rx.run`) and
the fec driver's NAPI poll (:func:`reference.fec.rx.napi_poll`); nothing here
re-implements a model.  Both models keep per-packet records for the conformance
observables, so the helpers feed them bounded batches and drop each batch's result:
memory stays flat however many packets stream.
"""

from __future__ import annotations

import itertools
import os
import platform
import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw

from conformance.vectors.ms_rss import MS_KEY
from reference import rss
from reference.fec import device as fec_device
from reference.fec import rx as fec_rx
from reference.fec.state import FecConfig, Fep
from reference.mlx5 import ring as mlx5_ring
from reference.mlx5 import rx as mlx5_rx
from reference.mlx5.cq import RqParams
from reference.mlx5.device import DeviceConfig, Mlx5Device, new_ring
from reference.xdp.actions import XdpAction
from reference.xdp.program import VerifiedProgram

if TYPE_CHECKING:
    from pytest_benchmark.fixture import BenchmarkFixture

Program = Sequence[Mapping[str, Any]]

#: The op-list programs of ``reference/xdp/program.py``: return at once.  Loaded once,
#: as a program is attached once: checked here, not again for every packet.
XDP_DROP: Program = VerifiedProgram(({"op": "return", "action": int(XdpAction.XDP_DROP)},))
XDP_PASS: Program = VerifiedProgram(({"op": "return", "action": int(XdpAction.XDP_PASS)},))
PROGRAMS: dict[str, Program] = {"XDP_DROP": XDP_DROP, "XDP_PASS": XDP_PASS}

#: ``NAPI_POLL_WEIGHT``: what a driver's poll handles at most per call.
NAPI_BUDGET = 64
#: Frames per ``mlx5 rx.run`` call (4 NAPI polls): bounds the records one call keeps.
MLX5_CHUNK = 256
#: Frame lengths (without FCS), IMIX-flavoured: mostly small, some MTU-sized.
FRAME_SIZES = (64, 64, 64, 64, 128, 256, 576, 576, 1024, 1500)
MIX_SEED = 7

#: Per-packet cost of the kernel's own XDP_DROP path, in nanoseconds (issue 10, seed 003).
KERNEL_DROP_NS = 38.94


def frame_mix(count: int = 1024, seed: int = MIX_SEED) -> list[bytes]:
    """``count`` scapy-built frames: TCP/UDP over IPv4/IPv6 in turn, lengths from
    :data:`FRAME_SIZES`, a distinct source port each (so RSS spreads them).

    MAC addresses are explicit: scapy never resolves one (no ARP leaves the machine).
    Frames whose headers alone exceed the drawn length keep just their headers.
    """
    rng = random.Random(seed)
    frames = []
    for i in range(count):
        eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
        ipv6 = i % 4 >= 2
        l3: Packet = (IPv6(src="2001:db8::1", dst="2001:db8::2") if ipv6
                      else IP(src="192.0.2.1", dst="192.0.2.2"))
        sport = 1024 + i % 60000
        l4: Packet = (TCP(sport=sport, dport=80, flags="A", seq=i) if i % 2 == 0
                      else UDP(sport=sport, dport=53))
        pkt = eth / l3 / l4
        pad = rng.choice(FRAME_SIZES) - len(pkt)
        frames.append(bytes(pkt / Raw(b"\xa5" * pad) if pad > 0 else pkt))
    return frames


def chunks(frames: Iterable[bytes], size: int) -> Iterator[list[bytes]]:
    """Consecutive lists of ``size`` frames (the last may be shorter)."""
    it = iter(frames)
    while batch := list(itertools.islice(it, size)):
        yield batch


def stream(pool: Sequence[bytes], packets: int) -> Iterator[bytes]:
    """``packets`` frames cycling over ``pool``, never materialised as a list."""
    return itertools.islice(itertools.cycle(pool), packets)


# --- mlx5 -------------------------------------------------------------------------------


@attrs.frozen
class Mlx5Setup:
    """A ConnectX RQ/CQ as the kernel sets one up by default: cyclic RQ, 1024-entry CQ,
    no CQE compression, RSS with the Microsoft key over two rings, linear buffers."""

    device: DeviceConfig = attrs.field(factory=lambda: DeviceConfig(
        rss=rss.RssConfig(key=MS_KEY, indir=rss.default_indir(128, 2))))
    rq: mlx5_rx.RqConfig = attrs.field(factory=mlx5_rx.RqConfig)


MLX5 = Mlx5Setup()


def mlx5_replay(frames: Iterable[bytes], program: Program, *, chunk: int = MLX5_CHUNK,
                budget: int = NAPI_BUDGET, setup: Mlx5Setup = MLX5,
                per_chunk_setup: bool = False) -> int:
    """Replay ``frames`` through one open mlx5 RQ (:func:`reference.mlx5.rx.open_stream`),
    ``chunk`` at a time.

    Each chunk is the device writing its completions and NAPI polling the CQ with
    ``budget`` until it is drained; its :class:`~reference.mlx5.rx.DriverRun` (one record
    per packet) is dropped before the next chunk.  ``per_chunk_setup`` calls
    :func:`reference.mlx5.rx.run` per chunk instead (a fresh RQ, CQ and ring each time).
    Returns the packets handled.
    """

    def program_for(_frame: int) -> Program:
        return program

    handled = 0
    if per_chunk_setup:
        for batch in chunks(frames, chunk):
            handled += len(mlx5_rx.run(setup.device, batch, setup.rq, program_for,
                                       budget).records)
        return handled
    stream = mlx5_rx.open_stream(setup.device, setup.rq, budget, xdp_prog=True)
    for batch in chunks(frames, chunk):
        handled += len(stream.receive(batch, program_for).records)
    return handled


@attrs.frozen
class RingImageChunk:
    """One CQ ring image and its receive buffers, as the device model wrote them for a
    chunk of frames before the first poll (MLX5-RING-004); replayed by the driver alone."""

    image: mlx5_ring.RingImage
    buffers: mlx5_ring.RxBuffers


def mlx5_ring_images(frames: Iterable[bytes], *, chunk: int = MLX5_CHUNK,
                     setup: Mlx5Setup = MLX5) -> list[RingImageChunk]:
    """Each ``chunk`` of frames written once by the device model into a ``chunk``-slot CQ
    (a fresh device each, so WQE ``i`` holds frame ``i``): prepared outside the timing."""
    log = max(1, (chunk - 1).bit_length())
    device = attrs.evolve(setup.device, log_cq_size=log)
    out = []
    for batch in chunks(frames, chunk):
        dev = Mlx5Device(device)
        dev.receive(list(batch))
        ring = new_ring(log)
        dev.write(ring, 0)
        out.append(RingImageChunk(mlx5_ring.RingImage(bytes(ring)), mlx5_ring.RxBuffers(
            {p.wqe_index: p.data for p in dev.placements})))
    return out


def mlx5_ring_replay(images: Sequence[RingImageChunk], program: Program, *,
                     budget: int = NAPI_BUDGET, setup: Mlx5Setup = MLX5) -> int:
    """The driver alone on each image (:func:`reference.mlx5.ring.replay`: CQ reader, RX
    handlers, XDP, skb build); no device model runs.  Returns the CQEs handled."""

    def program_for(_call: int) -> Program:
        return program

    handled = 0
    for chunk in images:
        params = RqParams(log_cq_size=chunk.image.log_cq_size,
                          log_wq_size=setup.device.log_wq_size)
        handled += len(mlx5_ring.replay(chunk.image, chunk.buffers, params, setup.rq,
                                        program_for, budget, xdp_prog=True).records)
    return handled


def mlx5_outcomes(frames: Sequence[bytes], program: Program) -> set[tuple[str, str]]:
    """The (verdict, fate) pairs a program gives on ``frames``: a check, not timed."""
    run = mlx5_rx.run(MLX5.device, frames, MLX5.rq, lambda _i: program, NAPI_BUDGET)
    return {(str(r["verdict"]), str(r["fate"])) for r in run.records}


# --- fec --------------------------------------------------------------------------------


class FecStream:
    """One open fec interface (an i.MX ENET, 256 RX descriptors, XDP attached) that frames
    stream through: the MAC writes a NAPI budget of frames into the RX ring
    (:func:`reference.fec.device.receive`), the driver's ``fec_enet_rx_napi`` runs
    (:func:`reference.fec.rx.napi_poll`), the stack frees what XDP_PASS delivered
    (:func:`reference.fec.rx.stack_free`).

    The models log every DMA sync for the observables: page_pool's in its DMA device,
    fec's own in ``fep.syncs``.  A stream opens the interface with ``record=False``, so
    both keep counts only; ``keep_logs=True`` keeps the logs (memory then grows per
    packet).
    """

    def __init__(self, program: Program, budget: int = NAPI_BUDGET, *,
                 keep_logs: bool = False) -> None:
        self.fep: Fep = fec_rx.fec_enet_open(FecConfig(xdp=True), record=keep_logs)
        self.program = program
        self.budget = budget

    def _program_for(self, _slot: int) -> Program:
        return self.program

    def replay(self, frames: Iterable[bytes]) -> int:
        """Receive and poll ``frames``, one budget at a time; returns the packets handled."""
        fep = self.fep
        handled = 0
        for batch in chunks(frames, self.budget):
            for frame in batch:
                if fec_device.receive(fep, frame).dropped:
                    raise RuntimeError("fec RX ring full: the poll did not keep up")
            records, _ = fec_rx.napi_poll(fep, self.budget, self._program_for)
            handled += len(records)
            fec_rx.stack_free(fep)
        return handled

    def outcomes(self, frames: Sequence[bytes]) -> set[str]:
        """The outcomes of one budget of ``frames``: a check, not timed."""
        for frame in frames[: self.budget]:
            fec_device.receive(self.fep, frame)
        records, _ = fec_rx.napi_poll(self.fep, self.budget, self._program_for)
        fec_rx.stack_free(self.fep)
        return {r.outcome for r in records}


def fec_replay(frames: Iterable[bytes], program: Program) -> int:
    """Open a fec interface and stream ``frames`` through it (see :class:`FecStream`)."""
    return FecStream(program).replay(frames)


# --- the independent yardstick ------------------------------------------------------------


def scapy_dissect(frames: Iterable[bytes]) -> int:
    """``scapy.layers.l2.Ether(raw)`` on each frame: scapy dissects every layer eagerly."""
    n = 0
    for frame in frames:
        Ether(frame)
        n += 1
    return n


# --- the machine ----------------------------------------------------------------------------


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict[str, str]:
    """Where the figures came from."""
    import scapy

    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return {
        "cpu": cpu_model(),
        "cores": f"{os.cpu_count()} online, {usable} usable (load average {load} at start)",
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "kernel": f"{platform.system()} {platform.release()} ({platform.machine()})",
        "scapy": str(scapy.VERSION),
    }


def memory_kib() -> dict[str, int]:
    """This process's resident set now (``VmRSS``) and at its peak (``VmHWM``), in KiB."""
    out: dict[str, int] = {}
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    out[key] = int(value.split()[0])
    except OSError:
        import resource

        out["VmHWM"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return out


def note_per_packet(benchmark: BenchmarkFixture, packets: int) -> None:
    """pytest-benchmark times one call; add the per-packet median to its ``extra_info``."""
    benchmark.extra_info["packets_per_call"] = packets
    meta = benchmark.stats
    if meta is not None:  # None under --benchmark-disable
        benchmark.extra_info["us_per_packet_median"] = round(
            meta.stats.median / packets * 1e6, 2)

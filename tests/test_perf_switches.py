"""The switches the hot-path work added (issue 10) change nothing a model decides:
fec's ``record=False`` keeps counts instead of sync logs, a ``VerifiedProgram`` is
checked once at load, and an mlx5 ``RxStream`` is ``rx.run`` kept open between chunks.

Each is checked against the default path on the same inputs: the default is the
independent reference here, since these switches only say what is kept or re-checked."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether

from reference import rss
from reference.errors import InvalidConfig
from reference.fec import device, rx
from reference.fec.state import FecConfig, Fep
from reference.mlx5 import rx as mlx5_rx
from reference.mlx5.device import DeviceConfig
from reference.xdp.buff import XdpBuff, xdp_init_buff, xdp_prepare_buff
from reference.xdp.memory import Page
from reference.xdp.program import VerifiedProgram, run_program, validate

#: Explicit MACs: scapy never has to resolve one, so no ARP ever leaves the machine.
ETH = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
FRAMES = [bytes(ETH / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=1000 + i, dport=53)
                / (b"x" * (10 + i))) for i in range(6)]
FRAMES += [bytes(ETH / IP(src="10.0.0.1", dst="10.0.0.2") / TCP(sport=2000 + i, dport=80)
                 / (b"y" * i)) for i in range(6)]
#: XDP_TX for even slots (a device sync by fec itself), XDP_DROP and XDP_PASS otherwise.
OPS: dict[int, list[dict[str, Any]]] = {
    0: [{"op": "adjust_tail", "delta": -4}, {"op": "return", "action": 3}],
    1: [{"op": "return", "action": 1}],
    2: [{"op": "return", "action": 2}],
}


def _fec_run(record: bool) -> tuple[Fep, list[Any]]:
    fep = rx.fec_enet_open(FecConfig(xdp=True, rx_ring_size=8, tx_ring_size=64),
                           record=record)
    seen: list[Any] = []
    for start in range(0, len(FRAMES), 4):
        for frame in FRAMES[start : start + 4]:
            device.receive(fep, frame)
        records, done = rx.napi_poll(fep, 64, lambda slot: OPS[slot % 3])
        device.transmit(fep)
        seen += records + done
        rx.stack_free(fep)
    return fep, seen


@pytest.mark.rule("FEC-RX-007", "FEC-XDP-005", "PP-DMA-001")
def test_fec_record_false_keeps_counts_not_logs() -> None:
    logged, with_logs = _fec_run(record=True)
    counted, without = _fec_run(record=False)
    assert without == with_logs  # every record and TX completion alike
    assert logged.syncs.for_cpu and logged.syncs.for_device and logged.dev.syncs_for_device
    assert counted.syncs.for_cpu == counted.syncs.for_device == []
    assert counted.dev.syncs_for_device == counted.dev.syncs_for_cpu == []
    assert (counted.syncs.cpu_syncs, counted.syncs.device_syncs) == (
        len(logged.syncs.for_cpu), len(logged.syncs.for_device))
    assert counted.dev.device_syncs == logged.dev.device_syncs == len(
        logged.dev.syncs_for_device)
    assert logged.syncs.cpu_syncs == len(logged.syncs.for_cpu)
    assert counted.stats == logged.stats and counted.rxq.stats == logged.rxq.stats


def _buff() -> XdpBuff:
    xdp = XdpBuff()
    xdp_init_buff(xdp, 4096, None)
    xdp_prepare_buff(xdp, Page.zeroed(4096), 0, 256, 64, True)
    return xdp


@pytest.mark.rule("XDP-PROG-001")
def test_verified_program_is_checked_at_load_and_runs_the_same() -> None:
    ops: list[dict[str, Any]] = [{"op": "adjust_head", "delta": 4},
                                 {"op": "get_buff_len"}, {"op": "return", "action": 2}]
    program = VerifiedProgram(ops)
    assert list(program) == ops  # the same ops, read-only copies
    with pytest.raises(TypeError):
        program[0]["delta"] = 8  # type: ignore[index]
    ops[0]["delta"] = 8  # the caller's list is not the program
    assert program[0]["delta"] == 4
    assert run_program(program, _buff()) == run_program(
        [{"op": "adjust_head", "delta": 4}, {"op": "get_buff_len"},
         {"op": "return", "action": 2}], _buff())
    bad = [{"op": "kfunc", "name": "rx_nothing"}]
    with pytest.raises(InvalidConfig) as at_load:
        VerifiedProgram(bad)
    with pytest.raises(InvalidConfig) as at_run:
        validate(bad)
    assert str(at_load.value) == str(at_run.value)


def _device() -> DeviceConfig:
    return DeviceConfig(rss=rss.RssConfig(key=bytes(range(40)), indir=rss.default_indir(128, 2)))


@pytest.mark.rule("MLX5-RX-003")
def test_mlx5_stream_is_run_kept_open() -> None:
    def program_for(i: int) -> list[dict[str, Any]]:
        return OPS[1 + i % 2]  # DROP, PASS, DROP, ...

    cfg, rq_cfg = _device(), mlx5_rx.RqConfig()
    first, second = FRAMES[:5], FRAMES[5:]
    stream = mlx5_rx.open_stream(cfg, rq_cfg, 4, xdp_prog=True)
    one = stream.receive(first, program_for)
    assert one == mlx5_rx.run(cfg, first, rq_cfg, program_for, 4)
    two = stream.receive(second, program_for)
    alone = mlx5_rx.run(cfg, second, rq_cfg, program_for, 4,
                        start=len(first))  # the CQ counters a fresh RQ would have to match
    # Frame numbers count from the chunk; the packets meet the same buffers, verdicts
    # and skbs as on an RQ opened for the second chunk alone.
    assert [r["frame"] for r in two.records] == list(range(len(second)))
    assert two.records == alone.records
    assert [c.frame for c in two.completions] == [len(first) + i for i in range(len(second))]
    # Counters and page fates run on; the device logs keep the latest chunk only.
    assert two.pages == {k: one.pages[k] + alone.pages[k] for k in one.pages}
    assert two.counters["rx_xdp_drop"] == one.counters["rx_xdp_drop"] + alone.counters[
        "rx_xdp_drop"]
    assert [p.frame for p in stream.device.placements] == [c.frame for c in two.completions]
    assert attrs.asdict(stream.device.completions[0].cqe) == attrs.asdict(
        two.completions[0].cqe)

"""The op-list interpreter (XDP-PROG-001 .. XDP-PROG-003), hand-worked."""

from __future__ import annotations

import errno

import pytest

from reference import kfuncs
from reference.errors import InvalidConfig
from reference.trace import Trace
from reference.xdp.buff import XdpBuff, xdp_init_buff, xdp_prepare_buff
from reference.xdp.memory import Page
from reference.xdp.program import run_program
from reference.xdp.rxq import XdpRxqInfo

FRAME = bytes(range(64))


def buff(headroom: int = 256, meta_valid: bool = True) -> XdpBuff:
    xdp = XdpBuff()
    xdp_init_buff(xdp, 4096, XdpRxqInfo())
    page = Page.zeroed(4096)
    page.data[headroom : headroom + len(FRAME)] = FRAME
    xdp_prepare_buff(xdp, page, 0, headroom, len(FRAME), meta_valid)
    return xdp


@pytest.mark.rule("XDP-PROG-001")
@pytest.mark.parametrize(
    ("ops", "field"),
    [([{"op": "jump"}], "program[0].op"), ([{"op": "adjust_head"}], "program[0].delta"),
     ([{"op": "kfunc", "name": "rx_csum"}], "program[0].name"),
     ([{"op": "return", "action": 2}, {"op": "write", "offset": 0}], "program[1].data")],
)
def test_ops_outside_the_vocabulary_are_refused_before_running(ops: list[dict[str, object]],
                                                               field: str) -> None:
    xdp = buff()
    with pytest.raises(InvalidConfig) as info:
        run_program(ops, xdp)
    assert info.value.field == field
    assert xdp.linear() == FRAME  # nothing ran


@pytest.mark.rule("XDP-PROG-001", "XDP-PROG-003")
def test_ops_record_helper_results_and_the_first_return_wins() -> None:
    xdp = buff()
    run = run_program([
        {"op": "adjust_head", "delta": 14},     # drop the Ethernet header: 0
        {"op": "adjust_head", "delta": -300},   # past data_hard_start: -EINVAL
        {"op": "get_buff_len"},
        {"op": "return", "action": 1},
        {"op": "adjust_head", "delta": -14},    # never runs
    ], xdp)
    assert run.action == 1
    assert [r["rc"] for r in run.records] == [0, -errno.EINVAL, 0]
    assert run.records[2]["len"] == len(FRAME) - 14
    assert xdp.linear() == FRAME[14:]


@pytest.mark.rule("XDP-PROG-003")
def test_no_return_means_pass_and_actions_are_u32() -> None:
    assert run_program([], buff()).action == 2
    assert run_program([{"op": "return", "action": -1}], buff()).action == 0xFFFFFFFF


@pytest.mark.rule("XDP-PROG-002")
def test_stores_inside_the_window_land_others_are_skipped() -> None:
    xdp = buff()
    run = run_program([
        {"op": "adjust_meta", "delta": -8},
        {"op": "write", "offset": -8, "data": "aabbccdd"},     # into the metadata: ok
        {"op": "write", "offset": -12, "data": "ff"},          # below data_meta: skipped
        {"op": "write", "offset": 62, "data": "0102"},         # last two bytes: ok
        {"op": "write", "offset": 63, "data": "0102"},         # one past data_end: skipped
    ], xdp)
    assert [r["rc"] for r in run.records] == [0, 0, -errno.ERANGE, 0, -errno.ERANGE]
    assert xdp.metadata() == bytes.fromhex("aabbccdd") + bytes(4)
    assert xdp.linear() == FRAME[:62] + b"\x01\x02"


@pytest.mark.rule("XDP-PROG-002")
def test_without_metadata_support_the_window_starts_at_data() -> None:
    run = run_program([{"op": "write", "offset": -1, "data": "00"}], buff(meta_valid=False))
    assert run.records[0]["rc"] == -errno.ERANGE


@pytest.mark.rule("XDP-PROG-001", "KFUNC-API-003", "KFUNC-CALL-001")
def test_kfunc_ops_use_the_resolved_driver_members() -> None:
    ops = kfuncs.MetadataOps(xmo_rx_hash=lambda ctx: kfuncs.RxHash(0, 0xDEADBEEF, 0x19))
    trace = Trace()
    run = run_program([{"op": "kfunc", "name": "rx_hash"}, {"op": "kfunc", "name": "rx_timestamp"}],
                      buff(), metadata_ops=ops, trace=trace)
    assert run.records[0] == {"op": "kfunc", "name": "rx_hash", "rc": 0, "hash": 0xDEADBEEF,
                              "rss_type": 0x19}
    assert run.records[1] == {"op": "kfunc", "name": "rx_timestamp", "rc": -errno.EOPNOTSUPP,
                              "timestamp": None}
    assert run.op_rules == (("KFUNC-API-006", "KFUNC-CALL-001"), ("KFUNC-API-003",))

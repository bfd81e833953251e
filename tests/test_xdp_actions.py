"""enum xdp_action and the driver verdict switch (XDP-ACT-*).

Independent reference: ``enum xdp_action`` in ``include/uapi/linux/bpf.h`` and the
``switch (act)`` of ``drivers/net/ethernet/mellanox/mlx5/core/en/xdp.c:
mlx5e_xdp_handle`` / ``net/core/dev.c: netif_receive_generic_xdp`` (v6.17), re-stated
below as a plain function and compared with the model.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference.errors import InvalidConfig
from reference.trace import Trace
from reference.xdp.actions import (
    ALL_ACTIONS,
    ActionVerdict,
    XdpAction,
    classify_action,
    invalid_action_warning,
)

A = XdpAction


@pytest.mark.rule("XDP-ACT-001")
def test_action_values_from_uapi() -> None:
    assert [(a.name, int(a)) for a in XdpAction] == [
        ("XDP_ABORTED", 0), ("XDP_DROP", 1), ("XDP_PASS", 2), ("XDP_TX", 3),
        ("XDP_REDIRECT", 4)]


@pytest.mark.rule("XDP-ACT-001")
@pytest.mark.parametrize("act", [A.XDP_DROP, A.XDP_PASS, A.XDP_TX, A.XDP_REDIRECT])
def test_supported_action_is_taken_as_is(act: XdpAction) -> None:
    v = classify_action(int(act))
    assert v == (act, False) and not v.exception_traced
    effective, warned = v  # unpacks as (effective action, warned)
    assert (effective, warned) == (act, False)


@pytest.mark.rule("XDP-ACT-002")
@pytest.mark.parametrize("value", [5, 6, 1000, 0x7FFFFFFF, 0xFFFFFFFF])
def test_illegal_values_warn_and_abort(value: int) -> None:
    trace = Trace()
    v = classify_action(value, trace=trace)
    assert v == ActionVerdict(A.XDP_ABORTED, True)
    assert v.exception_traced and v.dropped
    assert invalid_action_warning(value) == "Illegal"
    assert trace.rules() == ["XDP-ACT-002"]


@pytest.mark.rule("XDP-ACT-002")
def test_valid_but_unsupported_action_is_driver_unsupported() -> None:
    no_redirect = frozenset({A.XDP_ABORTED, A.XDP_DROP, A.XDP_PASS, A.XDP_TX})
    assert classify_action(4, no_redirect) == (A.XDP_ABORTED, True)
    assert invalid_action_warning(4) == "Driver unsupported"
    assert classify_action(3, no_redirect) == (A.XDP_TX, False)
    with pytest.raises(InvalidConfig):
        classify_action(2, frozenset({A.XDP_ABORTED, A.XDP_PASS}))


@pytest.mark.rule("XDP-ACT-003")
def test_aborted_traces_drop_does_not() -> None:
    aborted = classify_action(0)
    assert aborted == (A.XDP_ABORTED, False)
    assert aborted.exception_traced and aborted.dropped
    drop = classify_action(1)
    assert not drop.exception_traced and drop.dropped
    assert not classify_action(2).dropped


@pytest.mark.rule("XDP-ACT-004")
def test_verdict_is_the_low_32_bits() -> None:
    assert classify_action(-1) == (A.XDP_ABORTED, True)  # 0xFFFFFFFF
    assert invalid_action_warning(-1) == "Illegal"
    assert classify_action((1 << 32) + 2) == (A.XDP_PASS, False)
    assert classify_action(-(1 << 32)) == (A.XDP_ABORTED, False)  # low bits 0


@pytest.mark.rule("XDP-ACT-005")
@pytest.mark.parametrize("act", [A.XDP_TX, A.XDP_REDIRECT])
def test_failed_transmit_takes_the_abort_path_without_warning(act: XdpAction) -> None:
    trace = Trace()
    v = classify_action(int(act), xmit_failed=True, trace=trace)
    assert v == (A.XDP_ABORTED, False) and v.exception_traced
    assert trace.rules() == ["XDP-ACT-005"]
    assert classify_action(2, xmit_failed=True) == (A.XDP_PASS, False)


def reference_switch(value: int, supported: frozenset[int]) -> tuple[int, bool, bool]:
    """(effective, warned, traced), written as the driver's fall-through switch."""
    act = value % (1 << 32)
    warned = traced = False
    if act in supported and act in (2, 3, 4):
        return act, False, False
    if act not in (0, 1):
        warned = True          # default: bpf_warn_invalid_xdp_action, fallthrough
        traced = True          # case XDP_ABORTED: trace_xdp_exception, fallthrough
    elif act == 0:
        traced = True
    return (0 if traced else 1), warned, traced   # case XDP_DROP


@pytest.mark.rule("XDP-ACT-002", "XDP-ACT-003", "XDP-ACT-004")
@given(value=st.one_of(st.integers(-(1 << 63), (1 << 64) - 1), st.integers(-2, 8)),
       supported=st.sets(st.sampled_from([A.XDP_PASS, A.XDP_TX, A.XDP_REDIRECT])))
def test_switch_matches_the_fall_through_reference(value: int, supported: set[XdpAction]
                                                   ) -> None:
    full = frozenset(supported) | {A.XDP_ABORTED, A.XDP_DROP}
    v = classify_action(value, full)
    effective, warned, traced = reference_switch(value, frozenset(int(a) for a in full))
    assert (int(v.effective), v.warned, v.exception_traced) == (effective, warned, traced)
    assert full <= ALL_ACTIONS

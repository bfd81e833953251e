"""XDP core properties: the same op-list program, run on the same buffers, gives the
reference's return codes, bytes, lengths, verdicts and xdp_frame conversions."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given

from conformance.check import TargetSession, check
from conformance.components import layout_edges, skb_edges, xdp
from conformance.scenario import Scenario

COMPONENT = xdp.COMPONENT


@pytest.mark.rule("XDP-ADJ-002", "XDP-ADJ-003", "XDP-ADJ-004", "XDP-ADJ-005", "XDP-ADJ-006",
                  "XDP-ADJ-007", "XDP-ADJ-008", "XDP-ADJ-009", "XDP-ADJ-010", "XDP-BUFF-008",
                  "XDP-FRAME-002", "XDP-ACT-002", "XDP-ACT-004", "XDP-ACT-005",
                  "XDP-PROG-001", "XDP-PROG-002", "XDP-PROG-003", "XDP-MEM-002", "XDP-MEM-005",
                  "XDP-MEM-006", "XDP-BUFF-007", "KFUNC-API-003",
                  "KFUNC-CALL-001", "XDP-ACT-001", "XDP-ACT-003", "XDP-ADJ-001",
                  "XDP-BUFF-002", "XDP-BUFF-003", "XDP-BUFF-004", "XDP-BUFF-006",
                  "XDP-FRAME-001", "XDP-FRAME-003", "XDP-FRAME-004", "XDP-FRAME-006",
                  "XDP-FRAME-007", "XDP-MEM-001", "XDP-MEM-003", "XDP-MEM-004",
                  "XDP-PROG-004")
@given(scenario=xdp.scenarios())
def test_xdp_program_agrees_with_reference(rx_target: TargetSession, scenario: Scenario) -> None:
    check(rx_target, scenario, COMPONENT)


@pytest.mark.rule("XDP-FRAME-005", "XDP-FRAME-004", "XDP-FRAME-001", "XDP-MEM-002",
                  "XDP-MEM-001", "XDP-ADJ-006", "XDP-ADJ-009", "XDP-FRAME-006",
                  "XDP-FRAME-007", "XDP-MEM-003")
@given(scenario=xdp.scenarios(family="xsk"))
def test_xdp_xsk_queue_agrees_with_reference(rx_target: TargetSession,
                                             scenario: Scenario) -> None:
    """An XSK zero-copy queue: frames copied into an order-0 page up to exactly a page
    (XDP-FRAME-005), buffers freed through the XSK path (XDP-MEM-002)."""
    check(rx_target, scenario, COMPONENT)


@pytest.mark.rule("XDP-FRAME-007", "XDP-MEM-004", "XDP-MEM-003", "XDP-FRAME-003",
                  "XDP-FRAME-004", "XDP-FRAME-006", "XDP-BUFF-006", "XDP-ADJ-010",
                  "XDP-MEM-002", "XDP-MEM-001", "XDP-FRAME-001", "XDP-BUFF-003")
@given(scenario=xdp.scenarios(family="returns"))
def test_xdp_pages_given_back_agree_with_reference(rx_target: TargetSession,
                                                   scenario: Scenario) -> None:
    """The pages a driver gives back after the verdict: converted frames one by one or
    through the bulk queue (XDP-FRAME-007, XDP-MEM-004), dropped buffers
    (XDP-MEM-003), pfmemalloc frags and a missing tailroom on the way."""
    check(rx_target, scenario, COMPONENT)


@pytest.mark.rule("XDP-MEM-005", "XDP-MEM-006", "XDP-MEM-002", "XDP-FRAME-007",
                  "XDP-MEM-003", "XDP-ADJ-008", "XDP-PROG-004")
@pytest.mark.parametrize("scenario", xdp.queue_setup_scenarios())
def test_xdp_each_queue_setup(rx_target: TargetSession, scenario: Scenario) -> None:
    """Every queue set-up, right or wrong, once (a derandomized draw reaches some rarely)."""
    check(rx_target, scenario, COMPONENT)


@pytest.mark.rule("XDP-FRAME-007", "XDP-MEM-004", "XDP-MEM-003", "XDP-MEM-002",
                  "XDP-FRAME-005", "XDP-FRAME-006", "XDP-BUFF-006", "XDP-FRAME-004",
                  "XDP-ADJ-001", "XDP-ADJ-009", "XDP-ADJ-010")
@pytest.mark.parametrize("scenario", xdp.return_scenarios())
def test_xdp_each_way_back(rx_target: TargetSession, scenario: Scenario) -> None:
    """Every frame return on every memory type once, a bulk queue filled past 16, an
    XSK frame at the copy-out page's edge, a pfmemalloc frag shrunk away, and shrinks
    that give frags back and end one byte into the frag before them (XDP-ADJ-009)."""
    check(rx_target, scenario, COMPONENT)



# --- the frame conversion and the memory model at bounds the draws miss (conformance/
# components/skb_edges.py; surviving mutants of reference/xdp/frame.py and mem.py) --------

#: The rules of :func:`skb_edges.xdp_frame_edge_scenarios`, spelled out for ``rx-oracle spec``.
XDP_FRAME_EDGE_RULES = ("XDP-FRAME-002", "XDP-MEM-005")
if XDP_FRAME_EDGE_RULES != skb_edges.XDP_FRAME_EDGE_RULES:
    raise RuntimeError("XDP_FRAME_EDGE_RULES differs from skb_edges.XDP_FRAME_EDGE_RULES")


@pytest.mark.rule(*XDP_FRAME_EDGE_RULES)
@pytest.mark.parametrize("scenario", [s for _, s in skb_edges.xdp_frame_edge_scenarios()],
                         ids=[name for name, _ in skb_edges.xdp_frame_edge_scenarios()])
def test_xdp_frame_and_mem_model_edges(rx_target: TargetSession, scenario: Scenario) -> None:
    """A 40-byte buffer sent with XDP_TX (-ENOSPC: no headroom for the frame), and a
    failed page_pool registration (type written, no id) followed by an unregister or a
    second register: no page_pool is destroyed."""
    check(rx_target, scenario, COMPONENT)

#: The rules :func:`xdp.frag_tailroom_scenarios` aims at, spelled out for ``rx-oracle spec``.
FRAG_TAILROOM_RULES = ("XDP-ADJ-008",)
if FRAG_TAILROOM_RULES != xdp.FRAG_TAILROOM_RULES:
    raise RuntimeError("FRAG_TAILROOM_RULES differs from xdp.FRAG_TAILROOM_RULES")


@pytest.mark.rule(*FRAG_TAILROOM_RULES)
@pytest.mark.parametrize("scenario", [s for _, s in xdp.frag_tailroom_scenarios()],
                         ids=[name for name, _ in xdp.frag_tailroom_scenarios()])
def test_xdp_frag_tailroom_edges(rx_target: TargetSession, scenario: Scenario) -> None:
    """XDP-ADJ-008 on a last frag longer than the queue's ``frag_size``: before
    88b6b7f7b216 (6.12 before .85) the unsigned tailroom wraps and the grow succeeds, from
    it on the signed one is negative (a WARN, -EINVAL); and the exact tailroom of a frag
    that fits.  A random draw registers the queue with its frag pages' size, where the
    two computations agree, so the version gate's side shows only here."""
    check(rx_target, scenario, COMPONENT)


#: The rules :func:`xdp.helper_edge_scenarios` aims at, spelled out for ``rx-oracle spec``.
HELPER_EDGE_RULES = ("XDP-ADJ-001", "XDP-ADJ-003", "XDP-ADJ-005", "XDP-ADJ-006", "XDP-ADJ-008",
                     "XDP-BUFF-003", "XDP-BUFF-007", "XDP-ACT-001")
if HELPER_EDGE_RULES != xdp.HELPER_EDGE_RULES:
    raise RuntimeError("HELPER_EDGE_RULES differs from xdp.HELPER_EDGE_RULES")


@pytest.mark.rule(*HELPER_EDGE_RULES)
@pytest.mark.parametrize("scenario", [s for _, s in xdp.helper_edge_scenarios()],
                         ids=[name for name, _ in xdp.helper_edge_scenarios()])
def test_xdp_helper_edges(rx_target: TargetSession, scenario: Scenario) -> None:
    """A one-byte tail grow after a shrink
    (zeroed), a multi-buffer tail adjusted by 0 on a queue without ``frag_size``
    (-EOPNOTSUPP), a frag grown where ``frag_size`` equals ``frame_sz`` (allowed), 256
    bytes of metadata (-EACCES), MAX_SKB_FRAGS frags, a tail at exactly
    ``xdp_data_hard_end`` sent with XDP_TX (converted, no WARN), and buffers whose
    ``frame_sz`` is 2**31 and 2**32 - 1 (any u32 is taken)."""
    check(rx_target, scenario, COMPONENT)


#: The rules :func:`layout_edges.rxq_scenarios` aims at, spelled out for ``rx-oracle spec``.
RXQ_FRAG_SIZE_RULES = ("XDP-MEM-005",)
if RXQ_FRAG_SIZE_RULES != layout_edges.RXQ_RULES:
    raise RuntimeError("RXQ_FRAG_SIZE_RULES differs from layout_edges.RXQ_RULES")


@pytest.mark.rule(*RXQ_FRAG_SIZE_RULES)
@pytest.mark.parametrize("scenario", [s for _, s in layout_edges.rxq_scenarios()],
                         ids=[name for name, _ in layout_edges.rxq_scenarios()])
def test_xdp_rxq_frag_size_edges(rx_target: TargetSession, scenario: Scenario) -> None:
    """A queue registered with a ``frag_size`` of 2**31 and of U32_MAX (a u32: both
    register; the draws use 0 or a frag page's size)."""
    check(rx_target, scenario, COMPONENT)


# --- reference/xdp/buff.py, helpers.py, memory.py: the frags' edges (branch tri4-buf) -----
#: The rules :func:`buf_edge_scenarios` aims at (``rx-oracle spec`` reads the marker).
BUF_EDGE_RULES = ("XDP-ADJ-008", "XDP-ADJ-009", "XDP-BUFF-007")


def _run(*ops: dict[str, Any]) -> tuple[dict[str, Any], ...]:
    return (*ops, {"op": "get_buff_len"}, {"op": "return", "action": 2})


def buf_edge_scenarios() -> list[tuple[str, Scenario]]:
    """Frag pages of 128 bytes, 100 bytes in the linear part, no zero byte in the frame
    (a byte the kernel zeroes must read 0):

    - the last frag shrunk by one byte and grown by one again: the grow zeroes the byte it
      adds back (XDP-ADJ-008, the ``memset`` of ``bpf_xdp_frags_increase_tail``; the shrink
      leaves the old byte in place, XDP-ADJ-009);
    - a last frag of 99 bytes, so its tailroom (29) is odd, grown by exactly 29 (to the
      end of its page: allowed) and by 30 (-EINVAL), in both the unsigned tailroom of the
      kernels before 88b6b7f7b216 and the signed one after (XDP-ADJ-008);
    - a buffer whose ``frame_sz`` is the shared info's 320 bytes, no headroom and no linear
      part: the shared info sits at the buffer's first byte, and the frags are written
      there (XDP-BUFF-007; a linear part would run into it, which the model refuses);
    - frags cut in 32-byte pieces from pages of 96 bytes (``coalesce_page``): each page's
      first piece takes a new slot and its other two coalesce into that slot, never into
      an earlier page's (XDP-BUFF-007: the kernel compares with the last slot only), so
      200 frag bytes make three slots and give four page references back.
    """
    whole = bytes(i % 250 + 1 for i in range(328))
    config = {"frag_size": 128, "linear_max": 100}
    return [
        ("last frag shrunk by 1, grown by 1", Scenario(
            component="xdp", frames=(whole,), config=config,
            program=_run({"op": "adjust_tail", "delta": -1}, {"op": "adjust_tail", "delta": 1}),
            rules=BUF_EDGE_RULES)),
        ("odd tailroom grown to the page's end", Scenario(
            component="xdp", frames=(whole[:327],) * 2, config=config,
            per_packet_programs={n: _run({"op": "adjust_tail", "delta": 29 + n})
                                 for n in (0, 1)},
            rules=BUF_EDGE_RULES)),
        ("shared info at the buffer's start", Scenario(
            component="xdp", frames=(whole[:100],),
            config={"frame_sz": 320, "headroom": 0, "frag_size": 128, "linear_max": 0},
            program=_run({"op": "adjust_tail", "delta": -4}), rules=BUF_EDGE_RULES)),
        ("frags coalesced within each of three pages", Scenario(
            component="xdp", frames=(whole[:300],),
            config={**config, "coalesce": True, "frag_size": 32, "coalesce_page": 96},
            program=_run({"op": "adjust_tail", "delta": -8}), rules=BUF_EDGE_RULES)),
    ]


@pytest.mark.rule(*BUF_EDGE_RULES)
@pytest.mark.parametrize("scenario", [s for _, s in buf_edge_scenarios()],
                         ids=[name for name, _ in buf_edge_scenarios()])
def test_buf_frag_edges(rx_target: TargetSession, scenario: Scenario) -> None:
    """A frag grown back over a byte a shrink left (zeroed), an odd last-frag tailroom
    grown to exactly the frag page's end and one byte past it, frags written to a shared
    info at the buffer's first byte, and frags that coalesce within each of several
    pages."""
    check(rx_target, scenario, COMPONENT)

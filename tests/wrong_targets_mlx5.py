"""Deliberately wrong mlx5 driver models: each re-runs the reference with one kernel step
changed, so the damage shows wherever the real driver's would (tests/test_wrong_targets_mlx5.py).

Used as ``--target python:wrong_targets_mlx5:NAME`` with tests/ on the path.
"""

from __future__ import annotations

from typing import Any
from unittest import mock

from wrong_targets import _Wrong

from conformance.scenario import Scenario
from reference.mlx5 import cq as mlx5_cq
from reference.mlx5 import rx as mlx5_rx
from reference.mlx5 import skbmeta
from reference.mlx5 import xdp as mlx5_xdp
from reference.mlx5.cqe import mlx5_cqe64
from reference.xdp.memory import Page


class Mlx5StaleDataMeta(_Wrong):
    """Refills the per-RQ buffer without resetting ``data_meta``: the program sees the
    metadata pointer the previous packet left (breaks MLX5-XDP-001)."""

    BREAKS = ("MLX5-XDP-001",)

    def run(self, scenario: Scenario) -> dict[str, Any]:
        original = mlx5_xdp.mlx5e_fill_mxbuf

        def fill(rq: Any, cqe: mlx5_cqe64, page: Page, va: int, headroom: int,
                 frame_sz: int, length: int, mxbuf: mlx5_xdp.Mlx5eXdpBuff,
                 trace: Any = None) -> None:
            stale = mxbuf.data_meta
            original(rq, cqe, page, va, headroom, frame_sz, length, mxbuf, trace)
            mxbuf.data_meta = min(stale, mxbuf.data)  # the skipped reset

        with mock.patch.object(mlx5_xdp, "mlx5e_fill_mxbuf", fill):
            return super().run(scenario)


class Mlx5StaleFlags(_Wrong):
    """Refills the per-RQ buffer without the ``flags = 0`` of ``xdp_init_buff``: after a
    packet with fragments, ``XDP_FLAGS_HAS_FRAGS`` stays set for the next, linear packet
    (breaks MLX5-XDP-001; docs/tour.md shows it with ``replay``, tests/test_tour.py runs it).

    Not in :data:`ALL` yet: the suite catches it under MLX5-XDP-001, but
    ``test_mlx5_rx_hash_on_compressed_sessions`` finds it twice (a hypothesis exception
    group) and the verdict then also fails that property's own rules, MLX5-KF-002 and
    MLX5-KF-003, so "caught under exactly its rule" does not hold for it today."""

    BREAKS = ("MLX5-XDP-001",)

    def run(self, scenario: Scenario) -> dict[str, Any]:
        original = mlx5_xdp.mlx5e_fill_mxbuf

        def fill(rq: Any, cqe: mlx5_cqe64, page: Page, va: int, headroom: int,
                 frame_sz: int, length: int, mxbuf: mlx5_xdp.Mlx5eXdpBuff,
                 trace: Any = None) -> None:
            stale = mxbuf.flags
            original(rq, cqe, page, va, headroom, frame_sz, length, mxbuf, trace)
            mxbuf.flags = stale  # the skipped reset

        with mock.patch.object(mlx5_xdp, "mlx5e_fill_mxbuf", fill):
            return super().run(scenario)


class Mlx5HashKeptOnMiniCqe(_Wrong):
    """Lets ``bpf_xdp_metadata_rx_hash`` see the session title's hash on the later packets
    of a compressed session, as if the mini-CQE no-hash path were skipped for the CQE the
    kfunc reads (breaks MLX5-KF-003).  The CQEs the handlers report are unchanged."""

    BREAKS = ("MLX5-KF-003",)

    def run(self, scenario: Scenario) -> dict[str, Any]:
        correct = super().run(scenario)
        if "xdp" not in correct:
            return correct

        def keep_hash(self: mlx5_cq.Mlx5eRxCq, cqcc: int) -> None:
            self._decompress_cqe(cqcc)

        with mock.patch.object(mlx5_cq.Mlx5eRxCq, "_decompress_cqe_no_hash", keep_hash):
            wrong = super().run(scenario)
        for good, bad in zip(correct["xdp"], wrong["xdp"], strict=True):
            good["ops"] = bad["ops"]
        return correct


class Mlx5CsumCompleteWithXdp(_Wrong):
    """Opens the RQ without ``MLX5E_RQ_STATE_NO_CSUM_COMPLETE`` when an XDP program is
    attached, so packets the program passed keep the CQE's sum as CHECKSUM_COMPLETE
    (breaks MLX5-CSUM-003)."""

    BREAKS = ("MLX5-CSUM-003",)

    def run(self, scenario: Scenario) -> dict[str, Any]:
        original = mlx5_rx.rq_state

        def state(*, rxcsum: bool, xdp_prog: bool, pflag_no_csum_complete: bool,
                  cqe_checksum_full: bool) -> Any:
            return original(rxcsum=rxcsum, xdp_prog=False,
                            pflag_no_csum_complete=pflag_no_csum_complete,
                            cqe_checksum_full=cqe_checksum_full)

        with mock.patch.object(mlx5_rx, "rq_state", state):
            return super().run(scenario)


class Mlx5NoTailPaddingFixup(_Wrong):
    """Adds the in-packet VLAN headers to CHECKSUM_COMPLETE but not the Ethernet padding
    after the IP packet (breaks MLX5-CSUM-009)."""

    BREAKS = ("MLX5-CSUM-009",)

    def run(self, scenario: Scenario) -> dict[str, Any]:
        original = skbmeta._csum_fixup

        def fixup(data: bytes, depth: int, proto: int, csum: int, stats: Any,
                  trace: Any) -> int:
            if proto == skbmeta.ETH_P_IP:
                end = depth + int.from_bytes(data[depth + 2 : depth + 4], "big")
            else:
                end = depth + 40 + int.from_bytes(data[depth + 4 : depth + 6], "big")
            return original(data[: max(end, depth)], depth, proto, csum, stats, trace)

        with mock.patch.object(skbmeta, "_csum_fixup", fixup):
            return super().run(scenario)


ALL = (Mlx5StaleDataMeta, Mlx5HashKeptOnMiniCqe, Mlx5CsumCompleteWithXdp,
       Mlx5NoTailPaddingFixup)

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


ALL = (Mlx5StaleDataMeta, Mlx5HashKeptOnMiniCqe)

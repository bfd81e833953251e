"""The mlx5 properties can fail: each wrong mlx5 driver model is caught under exactly the
rule it breaks (tests/wrong_targets_mlx5.py), the same way tests/test_wrong_targets.py
checks the other components."""

from __future__ import annotations

from pathlib import Path

import pytest
import wrong_targets_mlx5
from test_wrong_targets import run_suite
from wrong_targets import _Wrong


@pytest.mark.rule("MLX5-XDP-001", "MLX5-KF-003", "MLX5-CSUM-003", "MLX5-CSUM-009")
@pytest.mark.parametrize("wrong", wrong_targets_mlx5.ALL, ids=lambda cls: cls.__name__)
def test_wrong_mlx5_target_is_caught_under_its_rule(wrong: type[_Wrong], tmp_path: Path) -> None:
    code, verdicts, output = run_suite(f"python:wrong_targets_mlx5:{wrong.__name__}", [],
                                       tmp_path, ("mlx5",))
    failed = sorted(rule for rule, verdict in verdicts.items() if verdict == "fail")
    assert code == 1, output
    assert failed == sorted(wrong.BREAKS), output


@pytest.mark.rule("MLX5-XDP-001", "MLX5-KF-002", "MLX5-KF-003")
def test_reference_passes_the_mlx5_driver_properties(tmp_path: Path) -> None:
    code, verdicts, output = run_suite("reference", ["MLX5-*"], tmp_path, ("mlx5",))
    assert code == 0, output
    assert verdicts and all(v == "pass" for v in verdicts.values()), verdicts

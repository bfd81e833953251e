"""The cpumap properties can fail: each wrong target in tests/wrong_targets_cpumap.py is
caught under exactly the rule it breaks (run in a child process, as
tests/test_wrong_targets.py does for the other areas)."""

from __future__ import annotations

from pathlib import Path

import pytest
import wrong_targets_cpumap
from test_wrong_targets import run_suite
from wrong_targets import _Wrong


@pytest.mark.rule("SKB-BUILD-003", "CPUMAP-SIM-003")
@pytest.mark.parametrize("wrong", wrong_targets_cpumap.ALL, ids=lambda cls: cls.__name__)
def test_wrong_cpumap_target_is_caught_under_its_rule(wrong: type[_Wrong],
                                                     tmp_path: Path) -> None:
    code, verdicts, output = run_suite(f"python:wrong_targets_cpumap:{wrong.__name__}", [],
                                       tmp_path, ("cpumap",))
    failed = sorted(rule for rule, verdict in verdicts.items() if verdict == "fail")
    assert code == 1, output
    assert failed == sorted(wrong.BREAKS), output


@pytest.mark.rule("CPUMAP-FATE-001", "CPUMAP-SIM-002")
def test_reference_passes_cpumap(tmp_path: Path) -> None:
    code, verdicts, output = run_suite("reference", [], tmp_path, ("cpumap",))
    assert code == 0, output
    assert verdicts and all(v == "pass" for v in verdicts.values()), verdicts

"""The zcrx properties can fail: each wrong target in tests/wrong_targets_zcrx.py is caught
under exactly the rule it breaks (run in a child process, as tests/test_wrong_targets.py
does for the other areas)."""

from __future__ import annotations

from pathlib import Path

import pytest
import wrong_targets_zcrx
from test_wrong_targets import NOT_APPLICABLE_AT_DEFAULT, run_suite
from wrong_targets import _Wrong


@pytest.mark.rule("ZCRX-REFILL-003", "ZCRX-BUFLEN-005")
@pytest.mark.parametrize("wrong", wrong_targets_zcrx.ALL, ids=lambda cls: cls.__name__)
def test_wrong_zcrx_target_is_caught_under_its_rule(wrong: type[_Wrong],
                                                   tmp_path: Path) -> None:
    # Only the properties that check the broken rule's family run (the reference run
    # below covers them all); among those, nothing but the broken rule may fail.
    family = wrong.BREAKS[0].rsplit("-", 1)[0] + "-*"
    code, verdicts, output = run_suite(f"python:wrong_targets_zcrx:{wrong.__name__}",
                                       [family], tmp_path, ("zcrx",))
    failed = sorted(rule for rule, verdict in verdicts.items() if verdict == "fail")
    assert code == 1, output
    assert failed == sorted(wrong.BREAKS), output


@pytest.mark.rule("ZCRX-REG-011", "ZCRX-SIM-005", "ZCRX-OWN-002")
def test_reference_passes_zcrx(tmp_path: Path) -> None:
    code, verdicts, output = run_suite("reference", [], tmp_path, ("zcrx",))
    assert code == 0, output
    assert verdicts and all(v == "pass" for rule, v in verdicts.items()
                            if rule not in NOT_APPLICABLE_AT_DEFAULT), verdicts
    assert {r: verdicts[r] for r in NOT_APPLICABLE_AT_DEFAULT} == {
        r: "not applicable" for r in NOT_APPLICABLE_AT_DEFAULT}


@pytest.mark.rule("ZCRX-REG-003", "ZCRX-REG-007")
def test_reference_passes_zcrx_at_6_18(tmp_path: Path) -> None:
    """At 6.18 the ``event_desc`` cases apply (a reserved word), so every registration
    rule passes (the data path is modelled from v7.0 on, ZCRX-BUFLEN-001)."""
    code, verdicts, output = run_suite("reference", ["ZCRX-REG-*"], tmp_path, ("zcrx",),
                                       kernel="6.18")
    assert code == 0, output
    assert verdicts and all(v == "pass" for v in verdicts.values()), verdicts
    assert verdicts["ZCRX-REG-007"] == "pass"

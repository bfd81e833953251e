"""``--kernel`` end to end: the suite on the reference for each supported version (on a
narrow rule selection, to keep CI short), the version in reports, fixtures and replays,
and the refusal of a version the model does not describe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from conformance import cli
from conformance.fixtures.record import load_line

FRAME = bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / IP(dst="10.0.0.2")
              / UDP(sport=1, dport=2) / (b"x" * 40))


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "conformance.cli", *args], capture_output=True,
                          text=True, timeout=600)


@pytest.mark.rule("KVER-001", "FEC-RX-005", "TUN-BUF-001")
@pytest.mark.parametrize(("kernel", "full"), [("6.12", "6.12.117"), ("6.18", "6.18.44"),
                                              ("7.3", "7.3.4")])
def test_the_suite_passes_on_the_reference_for_each_version(
        tmp_path: Path, kernel: str, full: str) -> None:
    report = tmp_path / "r.json"
    result = _cli("conformance", "--kernel", kernel, "--driver", "fec", "--driver", "tun",
                  "--rules", "FEC-RX-005", "--rules", "TUN-BUF-001", "--report", str(report))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"kernel {full}" in result.stdout
    doc = json.loads(report.read_text())
    assert doc["kernel"] == full
    verdicts = {r["rule"]: r["verdict"] for r in doc["rules"]}
    assert verdicts["FEC-RX-005"] == "pass" and verdicts["TUN-BUF-001"] == "pass"


@pytest.mark.rule("KVER-001", "XDP-ADJ-008")
def test_xdp_at_the_first_6_12_release_skips_what_the_kernel_does_out_of_bounds(
        tmp_path: Path) -> None:
    """6.12.0 computes a multi-buffer frag's tailroom unsigned from the whole frag offset
    (before 88b6b7f7b216): a fixed queue set-up grows a frag past its page there, which
    the model refuses (StateViolation); the scenario is not applicable at that version,
    not a failure of the target (the mutation runner judges survivors at 6.12.0)."""
    report = tmp_path / "r.json"
    result = _cli("conformance", "--kernel", "6.12.0", "--driver", "xdp", "--report",
                  str(report))
    assert result.returncode == 0, result.stdout + result.stderr
    verdicts = {r["rule"]: r["verdict"] for r in json.loads(report.read_text())["rules"]}
    assert "fail" not in verdicts.values() and verdicts["XDP-ADJ-008"] == "pass"


@pytest.mark.rule("KVER-001", "ZCRX-OWN-001", "ZCRX-OWN-002", "ZCRX-OWN-003")
def test_properties_reading_the_answer_themselves_predict_at_the_named_version(
        tmp_path: Path) -> None:
    """The ownership property compares the target's answer itself: at 6.12 (no zcrx) its
    expectation must be 6.12's, so a reference served over exec is skipped there, not
    asked for a scenario it cannot run and failed for the error (every gate-table mutant
    judged at 6.12.117 was 'killed' under ZCRX-OWN by this)."""
    report = tmp_path / "r.json"
    serve = f"exec:{sys.executable} -m conformance.cli serve --target reference"
    result = _cli("conformance", "--kernel", "6.12", "--driver", "zcrx", "--target", serve,
                  "--rules", "ZCRX-OWN-*", "--report", str(report))
    # Nothing could be checked there: not a green run, but the report says why.
    assert result.returncode == 2, result.stdout + result.stderr
    assert "no rule was checked" in result.stderr
    verdicts = {r["rule"]: r["verdict"] for r in json.loads(report.read_text())["rules"]}
    assert {verdicts[f"ZCRX-OWN-00{i}"] for i in (1, 2, 3)} == {"not applicable"}


@pytest.mark.rule("KVER-001", "ZCRX-REG-001", "ZCRX-BUFLEN-001")
def test_zcrx_registration_from_6_15_data_path_from_7_0(tmp_path: Path) -> None:
    """6.12 has no zcrx (the opcode is refused, checked as ZCRX-REG-001's old side); 6.18
    registers (the registration rules are checked) but the data path is described only
    from v7.0 (795663b4d160)."""
    def run(kernel: str, rule: str, status: int = 0) -> dict[str, object]:
        report = tmp_path / f"r{kernel}.json"
        result = _cli("conformance", "--kernel", kernel, "--driver", "zcrx", "--rules",
                      rule, "--report", str(report))
        assert result.returncode == status, result.stdout + result.stderr
        rules = {r["rule"]: r for r in json.loads(report.read_text())["rules"]}
        return dict(rules[rule])
    assert run("6.12", "ZCRX-REG-001")["verdict"] == "pass"
    old_data = run("6.12", "ZCRX-CQE-002", status=2)  # only that rule: nothing checked
    assert old_data["verdict"] == "not applicable"
    assert any("795663b4d160" in str(why) for why in list(old_data["not_applicable_reasons"]))  # type: ignore[call-overload]
    assert run("6.18", "ZCRX-REG-001")["verdict"] == "pass"
    data = run("6.18", "ZCRX-CQE-002", status=2)
    assert data["verdict"] == "not applicable"
    assert any("795663b4d160" in str(why) for why in list(data["not_applicable_reasons"]))  # type: ignore[call-overload]


@pytest.mark.rule("KVER-001", "FEC-RX-005")
def test_replay_and_explain_predict_for_the_named_version(capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    scenario = json.dumps({"component": "fec", "config": {"racc": True},
                           "frames": [FRAME.hex()]})
    assert cli.main(["replay", "--kernel", "6.12.62", scenario]) == 0
    assert "kernel: 6.12.62" in capsys.readouterr().out
    assert cli.main(["replay", scenario]) == 0
    assert "kernel: 7.3.4" in capsys.readouterr().out
    named = json.dumps({"component": "fec", "config": {}, "frames": [FRAME.hex()],
                        "kernel": "6.12"})
    assert cli.main(["replay", named]) == 0
    assert "kernel: 6.12" in capsys.readouterr().out


@pytest.mark.rule("KVER-001", "FEC-RX-005")
def test_fixtures_carry_the_version(tmp_path: Path) -> None:
    out = tmp_path / "fx"
    result = _cli("fixtures", "generate", "--driver", "fec", "--count", "2", "--kernel", "6.12",
                  "--out", str(out))
    assert result.returncode == 0, result.stderr
    lines = (out / "fec.jsonl").read_text().splitlines()
    assert len(lines) == 2
    for n, line in enumerate(lines, 1):
        doc, scenario, _ = load_line(line, f"fec.jsonl:{n}")
        assert scenario.kernel == "6.12.117" and doc["provenance"]["kernel"] == "6.12.117"
        assert "--kernel 6.12.117" in doc["provenance"]["command"]
    verify = _cli("fixtures", "verify", str(out), "--rules", "FEC-RX-005")
    assert verify.returncode == 0, verify.stdout + verify.stderr


@pytest.mark.rule("KVER-002")
@pytest.mark.parametrize("command", [
    ["conformance", "--rules", "FEC-RX-005"],
    ["fixtures", "verify", "fixtures"],
    ["fixtures", "generate", "--out", "{tmp}/fx"],
    ["fixtures", "corpus", "--out", "{tmp}/corpus"],
    ["explain", "--driver", "cpumap"],
    ["replay", '{"component": "rss", "config": {}, "frames": []}'],
])
def test_an_unsupported_version_is_refused(tmp_path: Path, command: list[str]) -> None:
    args = [a.replace("{tmp}", str(tmp_path)) for a in command] + ["--kernel", "6.17"]
    result = _cli(*args)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert lines[0].startswith("rx-oracle: --kernel '6.17': 6.17 is not a version the model "
                               "describes (KVER-002); supported: 6.12 (= 6.12.117), 6.18 "
                               "(= 6.18.44), 7.3 (= 7.3.4)")
    assert not (tmp_path / "fx").exists() and not (tmp_path / "corpus").exists()


@pytest.mark.rule("KVER-002")
def test_a_scenario_naming_an_unsupported_version_is_bad_input() -> None:
    scenario = json.dumps({"component": "fec", "config": {}, "frames": [], "kernel": "5.15"})
    result = _cli("replay", scenario)
    assert result.returncode == 2
    assert "scenario.kernel '5.15': 5.15 is not a version the model describes (KVER-002)" \
        in result.stderr


def _with_tests_path(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    return subprocess.run([sys.executable, "-m", "conformance.cli", *args], capture_output=True,
                          text=True, timeout=600, env=env)


@pytest.mark.rule("KVER-001", "FEC-RX-005")
@pytest.mark.parametrize("target", [
    "python:kernel_targets:ReferenceOnDebian612",
    f"exec:{sys.executable} -m conformance.cli serve "
    "--target python:kernel_targets:ReferenceOnDebian612",
])
def test_a_target_that_reports_its_kernel_is_predicted_for_it(tmp_path: Path,
                                                              target: str) -> None:
    """A target's own kernel (a Python target's capabilities, an exec target's hello) is
    the version the reference predicts for; --kernel overrides it."""
    report = tmp_path / "r.json"
    base = ("conformance", "--target", target, "--driver", "fec", "--rules", "FEC-RX-005",
            "--report", str(report))
    result = _with_tests_path(*base)
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(report.read_text())["kernel"] == "6.12.117"
    result = _with_tests_path(*base, "--kernel", "6.18")
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(report.read_text())["kernel"] == "6.18.44"


@pytest.mark.rule("KVER-002")
def test_a_target_on_an_unsupported_kernel_is_refused_unless_overridden(tmp_path: Path) -> None:
    base = ("conformance", "--target", "python:kernel_targets:ReferenceOnUbuntu68",
            "--driver", "fec", "--rules", "FEC-RX-005")
    result = _with_tests_path(*base)
    assert result.returncode == 2
    assert "the target's kernel '6.8.0-91-generic': 6.8 is not a version the model " \
           "describes (KVER-002)" in result.stderr
    assert _with_tests_path(*base, "--kernel", "7.3").returncode == 0

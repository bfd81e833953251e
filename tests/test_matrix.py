"""The kernel matrix, ``--target KIND@V1,V2,…``: one child run per kernel, one table.

Unit tests: the version list's parsing, each child's command line, the rule × kernel rows
and the matrix's exit status.  A plumbing test runs the matrix through ``rx-oracle
conformance`` with every child pointed at the built-in reference (no guest), and a live
test boots zcrx-live on both sides of ZCRX-REG-001's gate (v6.15) in one command.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest
from guests import kernels_or_skip

from conformance import cli, matrix
from conformance.usage import UsageError

ROOT = Path(__file__).resolve().parents[1]


def _args(**over: object) -> argparse.Namespace:
    base: dict[str, object] = dict(target="veth@6.12.117,7.3.4", driver=["veth"], rules=[],
                                   timeout=10.0, profile="ci", kernel=None, numprocesses=None,
                                   database=None, verbose=False, report=None, junitxml=None,
                                   save_failures=None)
    base.update(over)
    return argparse.Namespace(**base)


@pytest.mark.parametrize(("spec", "targets"), [
    ("veth@6.12.117,7.3.4", ["veth@6.12.117", "veth@7.3.4"]),
    ("zcrx-live@6.12.117, 6.18.15,7.3.4",
     ["zcrx-live@6.12.117", "zcrx-live@6.18.15", "zcrx-live@7.3.4"]),
    ("veth@7.3.4", None),  # one kernel: the ordinary guest run
    ("veth", None),
    ("iface:eth0,peer=eth1", None),
    ("exec:./t --at=a@b,c", None),
])
def test_split(spec: str, targets: list[str] | None) -> None:
    assert matrix.split(spec) == targets


@pytest.mark.parametrize(("spec", "message"), [
    ("veth@6.12.117,,7.3.4", "an empty version"),
    ("veth@7.3.4,7.3.4", "7.3.4 listed twice"),
    ("veth@7.3.4,7.3", "not a kernel version"),
    ("iface@7.3.4,6.12.117", "only veth, tun, zcrx-live run in a guest"),
])
def test_split_refuses(spec: str, message: str) -> None:
    with pytest.raises(UsageError, match=message) as info:
        matrix.split(spec)
    assert "\n" not in str(info.value)


def test_child_argv_passes_the_matrix_options(tmp_path: Path) -> None:
    argv = matrix.child_argv(_args(rules=["VETH-*"], kernel="7.3.4", numprocesses="2",
                                   verbose=True), "veth@7.3.4", tmp_path / "r.json")
    assert argv[:4] == [sys.executable, "-m", "conformance.cli", "conformance"]
    joined = " ".join(argv[4:])
    for part in ("--target veth@7.3.4", "--driver veth", "--rules VETH-*", "--kernel 7.3.4",
                 "-n 2", "--profile ci", f"--report {tmp_path / 'r.json'}", "-v"):
        assert part in joined


def _report(kernel: str, verdicts: dict[str, str]) -> dict[str, object]:
    return {"kernel": kernel, "rules": [{"rule": r, "verdict": v} for r, v in verdicts.items()]}


def test_rows_and_exit() -> None:
    old = matrix.Column("veth@6.12.117", 0,
                        _report("6.12.117", {"A-1": "pass", "B-1": "not applicable"}), "")
    new = matrix.Column("veth@7.3.4", 1, _report("7.3.4", {"A-1": "fail", "C-1": "pass"}), "")
    down = matrix.Column("veth@6.18.15", 2, None, "target error: the archive is unreachable")
    assert matrix.verdict_rows([old, new, down]) == [
        ("A-1", ["pass", "fail", "-"]), ("B-1", ["not applicable", "", "-"]),
        ("C-1", ["", "pass", "-"])]
    assert matrix.matrix_exit([old, new, down]) == 1  # a failure outranks an unchecked kernel
    assert matrix.matrix_exit([old, down]) == 2  # a kernel not checked is not a pass
    assert matrix.matrix_exit([old]) == 0


@pytest.mark.parametrize("option", [["--junitxml", "j.xml"], ["--save-failures", "dir"]])
def test_one_file_options_are_refused(option: list[str], tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "conformance.cli", "conformance",
                           "--target", "veth@6.12.117,7.3.4", *option],
                          capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and option[0] in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_matrix_plumbing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                         capsys: pytest.CaptureFixture[str]) -> None:
    """Each column's child is the reference at that column's kernel (no guest): the table
    has a column per kernel and the matrix report holds each child's report unchanged."""
    real = matrix.child_argv

    def on_reference(args: argparse.Namespace, target: str, report: Path) -> list[str]:
        argv = real(args, target, report)
        i = argv.index("--target")
        return [*argv[:i], "--target", "reference", "--kernel", target.partition("@")[2],
                *argv[i + 2:]]

    monkeypatch.setattr(matrix, "child_argv", on_reference)
    report = tmp_path / "matrix.json"
    code = cli.main(["conformance", "--target", "tun@6.12.117,7.3.4", "--driver", "tun",
                     "--rules", "TUN-BUF-001", "--report", str(report)])
    out = capsys.readouterr()
    assert code == 0, out.err
    doc = json.loads(report.read_text())
    assert doc["format"] == "rx-oracle-matrix"
    assert [(r["target"], r["exit"], r["report"]["kernel"]) for r in doc["runs"]] == [
        ("tun@6.12.117", 0, "6.12.117"), ("tun@7.3.4", 0, "7.3.4")]
    for run in doc["runs"]:
        assert [r["verdict"] for r in run["report"]["rules"]
                if r["rule"] == "TUN-BUF-001"] == ["pass"]
    assert "6.12.117" in out.out and "7.3.4" in out.out and "TUN-BUF-001" in out.out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["matrix.json"]


@pytest.mark.rule("ZCRX-REG-001")
def test_zcrx_live_on_both_sides_of_its_gate(tmp_path: Path) -> None:
    """ZCRX-REG-001's gate (v6.15) in one command: -EINVAL for the opcode at 6.12.117,
    registration at 7.3.4; both columns pass."""
    kernels_or_skip("6.12.117", "7.3.4")
    report = tmp_path / "matrix.json"
    done = subprocess.run([sys.executable, "-m", "conformance.cli", "conformance",
                           "--profile", "ci", "--target", "zcrx-live@6.12.117,7.3.4",
                           "--driver", "zcrx", "--report", str(report)],
                          capture_output=True, text=True, timeout=1500, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    runs = json.loads(report.read_text())["runs"]
    assert [r["report"]["kernel"] for r in runs] == ["6.12.117", "7.3.4"]
    for run in runs:
        verdicts = {r["rule"]: r for r in run["report"]["rules"]}
        assert verdicts["ZCRX-REG-001"]["verdict"] == "pass", run["target"]
        assert verdicts["ZCRX-REG-001"]["passed"] > 0, run["target"]

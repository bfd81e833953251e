"""Inputs a target cannot run, while other inputs of the same property can: a live kernel
that refuses one helper (conformance/live/ops.py) must not cost the properties that
also draw programs without it.

Offline (python targets standing in for such a kernel) and on the live veth pair: the
refused op kind is found by loading one tiny program per op kind, named with the
verifier's own words, and the probe runs every case that does not call it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.live import env
from conformance.live.libbpf import verifier_line
from conformance.live.ops import BY_NAME, OPTIONAL, needed

TESTS = Path(__file__).resolve().parent

#: The end of a real refusal (Firecracker host kernel 6.18.44, bpftool prog load).
REFUSED_LOG = b"""func#0 @0
0: R1=ctx() R10=fp0
0: (b7) r2 = 0                        ; R2_w=0
1: (85) call bpf_xdp_adjust_meta#54
program of this type cannot use helper bpf_xdp_adjust_meta#54
processed 2 insns (limit 1000000) max_states_per_insn 0 total_states 0 peak_states 0 mark_read 0
"""


def test_the_verifier_line_is_the_reason_not_the_statistics() -> None:
    assert verifier_line(REFUSED_LOG) == (
        "program of this type cannot use helper bpf_xdp_adjust_meta#54")
    assert verifier_line(b"processed 0 insns\n\n") == ""


def test_an_op_list_needs_what_runs_before_its_return() -> None:
    programs = [[{"op": "adjust_head", "delta": -4}, {"op": "kfunc", "name": "rx_hash"},
                 {"op": "return", "action": 2}, {"op": "adjust_meta", "delta": -4}],
                [{"op": "write", "offset": 0, "data": "00"}]]
    assert needed(programs) == {"adjust_head", "rx_hash", "write"}
    # Each optional kind has its own macro in the probe's source.
    source = (Path(__file__).parents[1] / "conformance/live/rxo_probe.bpf.c").read_text()
    assert all(f"defined({k.omit})" in source or f"#ifndef {k.omit}" in source
               for k in OPTIONAL)
    assert set(BY_NAME) == {"adjust_head", "adjust_meta", "adjust_tail", "rx_timestamp",
                            "rx_hash", "rx_vlan_tag"}


def _run(target: str, report: Path, *, served: bool = False
         ) -> subprocess.CompletedProcess[str]:
    spec = f"python:faulty_targets:{target}"
    if served:  # the same target behind the exec protocol (not_applicable answers, 1.9)
        spec = f"exec:{sys.executable} -m conformance.cli serve --target {spec}"
    return subprocess.run(
        [sys.executable, "-m", "conformance.cli", "conformance", "--target", spec,
         "--driver", "rss", "--rules", "RSS-TOEP-001", "--report", str(report)],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(TESTS)})


@pytest.mark.rule("RSS-TOEP-001")
@pytest.mark.parametrize("served", [False, True], ids=["python", "exec-serve"])
def test_a_property_draws_past_inputs_the_target_cannot_run(tmp_path: Path,
                                                            served: bool) -> None:
    """Inputs of three frames or more cannot run: the property checks the others and
    passes, and the run says once how many inputs it could not run, and why; the same
    through ``rx-oracle serve`` (how a guest's live target answers)."""
    done = _run("RefusesSomeInputs", tmp_path / "r.json", served=served)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    doc = json.loads((tmp_path / "r.json").read_text())
    verdicts = {r["rule"]: r for r in doc["rules"]}
    assert verdicts["RSS-TOEP-001"]["verdict"] == "pass"
    assert verdicts["RSS-TOEP-001"]["passed"] >= 1
    assert [n for n in doc["notes"] if "refuses-some: 3 frames or more" in n], doc["notes"]
    assert "input(s) not run: " in done.stderr and "refuses-some: 3 frames" in done.stderr


@pytest.mark.rule("RSS-TOEP-001")
@pytest.mark.parametrize("served", [False, True], ids=["python", "exec-serve"])
def test_a_property_none_of_whose_inputs_can_run_is_not_applicable(tmp_path: Path,
                                                                   served: bool) -> None:
    done = _run("RefusesEveryInput", tmp_path / "r.json", served=served)
    doc = json.loads((tmp_path / "r.json").read_text())
    verdicts = {r["rule"]: r for r in doc["rules"]}
    assert verdicts["RSS-TOEP-001"]["verdict"] == "not applicable", done.stdout[-2000:]
    assert any("the kernel refuses everything" in r
               for r in verdicts["RSS-TOEP-001"]["not_applicable_reasons"])
    assert "Traceback" not in done.stderr


LIVE = env.missing()


@pytest.mark.skipif(LIVE is not None, reason=LIVE or "")
def test_the_kernel_names_what_it_refuses() -> None:
    """A kfunc program loaded without a device binding is refused on every kernel that
    has the kfuncs: the error quotes the verifier's reason, not only an errno."""
    from conformance.live import libbpf, ops, probe

    kind = BY_NAME["rx_hash"]
    obj = libbpf.BpfObject(str(ops.try_object(kind, probe.kernel_dir())))
    try:
        with pytest.raises(libbpf.BpfError) as refused:
            obj.load("rxo_try")
    finally:
        obj.close()
    assert "device-bound" in refused.value.verifier_line, refused.value
    assert refused.value.verifier_line in str(refused.value)


@pytest.mark.rule("VETH-SKB-002")
@pytest.mark.skipif(LIVE is not None, reason=LIVE or "")
def test_the_live_veth_target_runs_what_its_kernel_allows() -> None:
    """Whatever this kernel refuses is named once, a case that calls it is not applicable,
    and a case that does not still runs on the real driver."""
    from conformance.scenario import Scenario
    from conformance.targets.base import InputNotApplicable
    from conformance.targets.live import LiveTarget

    frame = bytes.fromhex("020000000002020000000001" "88b5" + "00" * 46)
    target = LiveTarget("veth")
    try:
        assert set(target.refused) <= set(BY_NAME)
        assert len(target.notes) == len(target.refused)
        for name, why in target.refused.items():
            assert BY_NAME[name].call in why
            op = ({"op": "kfunc", "name": name} if BY_NAME[name].kfunc
                  else {"op": name, "delta": 0})
            calling = Scenario("veth", frames=(frame,), program=(op,))
            with pytest.raises(InputNotApplicable, match=BY_NAME[name].call):
                target.run(calling)
        plain = Scenario("veth", frames=(frame,),
                         program=({"op": "get_buff_len"}, {"op": "return", "action": 2}))
        packets = target.run(plain)["packets"]
        assert packets[0]["action"] == 2 and packets[0]["ops"][0]["len"] == len(frame)
    finally:
        target.close()

"""Every fixed case the suite sends is a scenario the published schemas accept.

A target written from PROTOCOL.md and the schemas may refuse what they refuse; a fixed case
outside them would fail a correct target (seen: helper offsets of 2**32 - 4 beside the
program schema's 32-bit ``delta``).  The cases are collected from the suite itself, as
pytest parametrizes them, so a new fixed list is covered without being named here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.scenario import Scenario
from conformance.validate import validate_scenario

ROOT = Path(__file__).resolve().parent.parent

_COLLECT = '''
import json, os
from conformance.scenario import Scenario

def pytest_collection_modifyitems(session, config, items):
    out = {}
    for item in items:
        spec = getattr(item, "callspec", None)
        scenario = spec.params.get("scenario") if spec is not None else None
        if isinstance(scenario, Scenario):
            out[item.nodeid] = scenario.to_json()
    with open(os.environ["RX_FIXED_OUT"], "w") as f:
        json.dump(out, f)
'''


@pytest.mark.rule("XDP-PROG-001", "KVER-001")
def test_every_fixed_case_is_inside_the_published_schemas(tmp_path: Path) -> None:
    (tmp_path / "fixed_plugin.py").write_text(_COLLECT)
    out = tmp_path / "fixed.json"
    env = {**os.environ, "RX_FIXED_OUT": str(out),
           "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--collect-only", "-p", "fixed_plugin",
         "-p", "no:cacheprovider", str(ROOT / "conformance/properties")],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cases = json.loads(out.read_text())
    assert len(cases) > 300  # every component's fixed lists
    refused = {}
    for nodeid, doc in cases.items():
        try:
            validate_scenario(Scenario.from_json(doc))
        except Exception as exc:  # the message is the finding
            refused[nodeid] = str(exc)
    assert refused == {}

"""Scenarios round-trip through JSON and bad documents are refused with a clear error."""

from __future__ import annotations

import json

import pytest
from hypothesis import given

from conformance.components import kfunc, rss, xdp
from conformance.scenario import Scenario, ScenarioError
from conformance.targets.base import NotApplicable, TargetError
from conformance.targets.fixtures import FixturesTarget, load_fixture_line, scenario_key


@given(scenario=rss.scenarios() | kfunc.scenarios() | xdp.scenarios())
def test_scenarios_round_trip_through_json(scenario: Scenario) -> None:
    text = json.dumps(scenario.to_json())
    back = Scenario.from_json(json.loads(text))
    assert back.to_json() == scenario.to_json()
    assert scenario_key(back) == scenario_key(scenario)


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ([], "must be a JSON object"),
        ({"schema": 2, "component": "rss"}, "schema 2"),
        ({"component": ""}, "component"),
        ({"component": "rss", "frames": ["zz"]}, "frames\\[0\\] is not valid hex"),
        ({"component": "rss", "frames": "00"}, "frames must be a list"),
        ({"component": "xdp", "program": [{"delta": 1}]}, "program\\[0\\]"),
        ({"component": "xdp", "per_packet_programs": {"x": []}}, "per_packet_programs"),
        ({"component": "kfunc", "events": [1]}, "events\\[0\\]"),
    ],
)
def test_bad_scenarios_are_refused(doc: object, message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        Scenario.from_json(doc)  # type: ignore[arg-type]


def test_fixture_lines_name_file_and_problem(tmp_path: object) -> None:
    with pytest.raises(TargetError, match=r"f\.jsonl:3: not JSON"):
        load_fixture_line("{", "f.jsonl:3")
    with pytest.raises(TargetError, match="not an rx-oracle-fixture record"):
        load_fixture_line("{}", "f.jsonl:1")


def test_fixtures_target_replays_a_recording(tmp_path: object) -> None:
    from pathlib import Path

    directory = Path(str(tmp_path))
    scenario = Scenario(component="rss", config={"key": "6d" * 40, "indir": [0, 1]},
                        frames=(bytes(60),))
    observed = rss.expected(scenario)
    record = {"format": "rx-oracle-fixture", "version": 1, "scenario": scenario.to_json(),
              "observables": observed}
    (directory / "one.jsonl").write_text(json.dumps(record) + "\n")
    target = FixturesTarget(directory)
    assert target.run(scenario) == observed
    other = Scenario(component="rss", config={"key": "6d" * 40, "indir": [0]}, frames=())
    with pytest.raises(NotApplicable, match="no recording"):  # by design, not a fault
        target.run(other)

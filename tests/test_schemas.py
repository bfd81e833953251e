"""The published schemas (conformance/schemas/) agree with the model and the suite.

Every scenario the suite generates, and every fixture of the corpus, is valid input;
every observable the reference produces is valid output; every ``x-rule`` names a SPEC
rule; each kind of mistake gets one line naming the field, the value and the rule.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
from pathlib import Path
from typing import Any

import attrs
import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import conformance.properties as properties
from conformance.components import registry
from conformance.fixtures.record import load_line
from conformance.scenario import Scenario, to_jsonable
from conformance.validate import (
    SCHEMA_DIR,
    InputError,
    check,
    observables_problem,
    validate_scenario,
)
from reference.errors import OracleError

ROOT = Path(__file__).resolve().parents[1]
SPEC_IDS = set(re.findall(r"^#### ([A-Z0-9]+(?:-[A-Z0-9]+)*-\d{3})", (ROOT / "SPEC.md").read_text(),
                          re.MULTILINE))


def _property_strategies() -> list[tuple[str, st.SearchStrategy[Scenario]]]:
    found = []
    for info in pkgutil.iter_modules(properties.__path__):
        module = importlib.import_module(f"{properties.__name__}.{info.name}")
        for name, fn in sorted(vars(module).items()):
            given_kwargs = getattr(getattr(fn, "hypothesis", None), "_given_kwargs", {})
            if name.startswith("test_") and "scenario" in given_kwargs:
                found.append((f"{info.name}::{name}", given_kwargs["scenario"]))
    return found


STRATEGIES = _property_strategies()


def test_every_property_strategy_is_found() -> None:
    assert len(STRATEGIES) >= 20  # if hypothesis renames its handle, this says so


@pytest.mark.rule("XDP-PROG-001")
@pytest.mark.parametrize(("name", "strategy"), STRATEGIES, ids=[n for n, _ in STRATEGIES])
def test_generated_scenarios_and_reference_answers_are_valid(
    name: str, strategy: st.SearchStrategy[Scenario]
) -> None:
    components = registry()

    @settings(max_examples=25, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def run(scenario: Scenario) -> None:
        validate_scenario(scenario)
        try:
            observables = components[scenario.component].expected(scenario)
        except OracleError:  # a refusal (InvalidConfig) is the reference's own verdict
            return
        assert observables_problem(scenario.component, to_jsonable(observables)) == ""

    run()


def test_the_fixture_corpus_is_valid() -> None:
    count = 0
    for path in sorted((ROOT / "fixtures").rglob("*.jsonl")):
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            if line.strip():
                load_line(line, f"{path.name}:{lineno}")  # validates scenario and observables
                count += 1
    assert count > 50


def test_schema_files_are_valid_and_their_rules_exist() -> None:
    for path in sorted(SCHEMA_DIR.glob("*.schema.json")):
        doc = json.loads(path.read_text())
        jsonschema.Draft202012Validator.check_schema(doc)
        assert doc["$id"] == "urn:rx-oracle:schema:" + path.name.removesuffix(".schema.json")
        for rule in re.findall(r'"x-rule": "([^"]+)"', path.read_text()):
            assert rule in SPEC_IDS, f"{path.name}: x-rule {rule} is not a SPEC rule"
    for name in registry():
        assert (SCHEMA_DIR / f"{name}.config.schema.json").exists(), name
        assert (SCHEMA_DIR / f"{name}.observables.schema.json").exists(), name


@pytest.mark.parametrize(("schema", "value", "message"), [
    ("mlx5.config", {"key": "00" * 40, "indir": [0], "comprssion": "basic"},
     "config.comprssion: unknown key; known keys: budget, compression,"),
    ("mlx5.config", {"key": "00" * 40, "indir": [0], "vlan_strip": "yes"},
     'config.vlan_strip: "yes" is not a boolean'),
    ("fec.config", {"rx_ring_size": 1}, "config.rx_ring_size: 1 is below the minimum 2 (rule "
                                        "FEC-RX-001)"),
    ("fec.events", [{"op": "napi", "budget": -1}], "events[0].budget: -1 is below the minimum 0"),
    ("zcrx.config", {"stream_mib": 100000}, "config.stream_mib: 100000 is above the limit 64"),
    ("cpumap.events", [{"op": "rx", "n": 10**8}], "events[0].n: 100000000 is above the limit"),
    ("program", [{"op": "adjust_head"}], "program[0]: 'delta' is a required property (rule "
                                         "XDP-PROG-001)"),
    ("program", {"op": "return"}, 'program: {"op": "return"} is not a list'),
    ("kfunc.config", {"devices": {"ifindex": 1}}, "config.devices: {"),
])
def test_a_violation_is_one_line_naming_field_value_and_rule(
    schema: str, value: Any, message: str
) -> None:
    where = schema.partition(".")[2] or schema
    with pytest.raises(InputError) as info:
        check(schema, value, where)
    text = str(info.value)
    assert text.startswith(message), text
    assert "\n" not in text and ("rule " in text or "schema " in text)


def test_totals_a_schema_cannot_state_are_limited() -> None:
    events = tuple({"op": "rx", "n": 10_000} for _ in range(11))
    with pytest.raises(InputError, match="at most 100000"):
        validate_scenario(Scenario(component="cpumap", events=events))
    # CPUMAP-SIM-007: the limit counts pages, a packet's head and its frags.
    frags = Scenario(component="cpumap", config={"frags": [0, 17]},
                     events=({"op": "rx", "n": 6000},))
    with pytest.raises(InputError, match="of up to 18 pages each; at most 100000 pages"):
        validate_scenario(frags)
    validate_scenario(attrs.evolve(frags, config={"frags": [0, 3]}))

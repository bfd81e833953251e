"""Field-by-field comparison with masks and capabilities (conformance/observe.py)."""

from __future__ import annotations

from conformance.observe import compare, flatten, matches


def test_flatten_orders_paths_like_the_document() -> None:
    doc = {"packets": [{"hash": 1, "ops": [{"rc": 0}]}], "counters": {"rx": 3}, "empty": []}
    assert list(flatten(doc)) == [
        ("packets[0].hash", 1), ("packets[0].ops[0].rc", 0), ("counters.rx", 3), ("empty", []),
    ]


def test_patterns_treat_brackets_literally_and_star_as_anything() -> None:
    assert matches("packets[12].hash", ["packets[*].hash"])
    assert matches("counters.rx_xdp_drop", ["counters.*"])
    assert not matches("packets[1].hash_type", ["packets[*].hash"])
    assert not matches("packets1.hash", ["packets[*].hash"])


def test_first_mismatch_carries_its_rules_and_order() -> None:
    exp = {"packets": [{"hash": 1, "queue": 2}, {"hash": 3, "queue": 4}]}
    act = {"packets": [{"hash": 1, "queue": 9}, {"hash": 0, "queue": 4}]}
    result = compare(exp, act, rules_for=lambda p: ("RSS-RETA-004",) if p.endswith("queue") else ())
    assert not result.ok
    assert [m.path for m in result.mismatches] == ["packets[0].queue", "packets[1].hash"]
    assert result.first is not None and result.first.rules == ("RSS-RETA-004",)
    assert "expected 2, got 9" in result.first.describe()


def test_masked_and_unreported_fields_are_never_passes() -> None:
    exp = {"a": 1, "b": 2, "c": 3}
    act = {"a": 1, "b": 99}
    result = compare(exp, act, mask=["b"], reports=["a", "b"])
    assert result.ok
    assert result.masked == ("b",) and result.not_checked == ("c",) and result.checked == ("a",)


def test_missing_and_extra_fields_are_mismatches() -> None:
    result = compare({"packets": [{"v": 1}]}, {"packets": [{"v": 1}, {"v": 2}], "x": None})
    assert [m.path for m in result.mismatches] == ["packets[1].v", "x"]
    missing = compare({"a": 1}, {})
    assert missing.first is not None and missing.first.actual is None


def test_bools_are_not_ints() -> None:
    assert not compare({"warned": False}, {"warned": 0}).ok
    assert compare({"n": 5}, {"n": 5}).ok

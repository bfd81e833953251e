"""The error hierarchy names what was wrong (ERR-001, ERR-002)."""

from __future__ import annotations

import pickle

import pytest

from reference.errors import InvalidConfig, MalformedInput, OracleError, StateViolation, Truncated


@pytest.mark.rule("ERR-001")
def test_malformed_input_names_field_offset_value_rule() -> None:
    err = MalformedInput("IHL below 5", field="ipv4.ihl", offset=14, value=3, rule="PKT-001")
    text = str(err)
    for part in ("ipv4.ihl", "offset 14", "3", "PKT-001", "IHL below 5"):
        assert part in text
    assert isinstance(err, ValueError) and isinstance(err, OracleError)
    assert (err.field, err.offset, err.value, err.rule) == ("ipv4.ihl", 14, 3, "PKT-001")


@pytest.mark.rule("ERR-001")
def test_truncated_reports_needed_and_available() -> None:
    err = Truncated(field="tcp.doff", offset=46, needed=20, available=7)
    assert isinstance(err, MalformedInput)
    assert "needs 20 bytes, only 7 available" in str(err)
    assert (err.needed, err.available) == (20, 7)


@pytest.mark.rule("ERR-002")
def test_config_and_state_errors_are_typed() -> None:
    cfg = InvalidConfig("not a power of two", field="ring_size", value=3, rule="PP-INIT-001")
    assert "ring_size=3" in str(cfg) and isinstance(cfg, ValueError)
    st = StateViolation("page is not in flight", obj="page 7", rule="PP-RECYCLE-001")
    assert "page 7" in str(st) and isinstance(st, RuntimeError)


@pytest.mark.rule("ERR-001", "ERR-002")
@pytest.mark.parametrize(
    "err",
    [
        MalformedInput("bad", field="f", offset=1, value=b"\x00", rule="ERR-001"),
        Truncated(field="f", offset=2, needed=4, available=1, rule="ERR-001"),
        InvalidConfig("bad", field="f", value=1, rule="ERR-002"),
        StateViolation("bad", obj="o", rule="ERR-002"),
    ],
)
def test_errors_survive_pickling(err: OracleError) -> None:
    """Errors cross process boundaries (xdist workers, exec targets) intact."""
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is type(err) and str(back) == str(err)

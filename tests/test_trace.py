"""Rule-tagged trace events (TRACE-001)."""

from __future__ import annotations

import pytest

from reference.trace import Trace, emit


@pytest.mark.rule("TRACE-001")
def test_trace_records_rule_and_fields_in_order() -> None:
    trace = Trace()
    emit(trace, "RSS-TOEP-001", "hashed 12 bytes", hash=0x51CCC178)
    emit(None, "RSS-TOEP-001", "not recorded")
    emit(trace, "XDP-ACT-001", "verdict", action="XDP_PASS")
    assert trace.rules() == ["RSS-TOEP-001", "XDP-ACT-001"]
    first = trace.events[0]
    assert first.fields == (("hash", 0x51CCC178),)
    rendered = trace.render().splitlines()
    assert rendered[0].startswith("RSS-TOEP-001") and "0x51ccc178" in rendered[0]
    assert "action=XDP_PASS" in rendered[1]

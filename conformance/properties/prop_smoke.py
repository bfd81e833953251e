import pytest

@pytest.mark.rule("ERR-001")
def test_x() -> None:
    assert True

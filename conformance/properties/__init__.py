"""The conformance properties, one module per area (``test_<area>.py``)."""

"""The conformance properties, one module per area (``prop_<area>.py``)."""

"""Shared test set-up: hypothesis profiles (``ci`` is the default)."""

from conformance.profiles import register_profiles

register_profiles()

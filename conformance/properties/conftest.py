"""Set-up for a conformance run: hypothesis profiles."""

from conformance.profiles import register_profiles

register_profiles()

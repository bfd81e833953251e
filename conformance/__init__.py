"""rx-oracle's conformance suite: point it at an implementation, get per-rule verdicts."""

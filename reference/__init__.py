"""rx-oracle's reference model of Linux NIC driver RX semantics.

The model is sans-I/O (like h11): every function takes bytes, configuration and
events and returns outcomes.  Nothing in this package opens a socket, a file or a
process.  Every behaviour implements a numbered rule of ``SPEC.md``; the rule id is
named in the docstring or comment where the rule is implemented, which is how
``rx-oracle spec ID`` finds the code of a rule (TRACE-002).
"""

__version__ = "0.1.0"

# The kernel version the model predicts for is a parameter: reference/kernel.py (KVER-001).

"""Kernel WARNs as observables of the XDP core.

Where the kernel WARNs and then carries on (returns an errno, resets a structure, leaks a
page), the model does what the kernel then does and reports the WARN as a
:class:`KernelWarn`: a record a caller can collect in a ``warns`` list and a trace event
under the rule that describes the case.  A WARN is a splat in the kernel log, not a
refusal; the caller sees the same return value the kernel's caller sees.

Only cases the kernel survives are reported this way.  A case where the kernel would
dereference NULL or write past a buffer still raises
:class:`~reference.errors.StateViolation`, because the model cannot do what the kernel
then does.
"""

from __future__ import annotations

import attrs

from reference.trace import Trace, emit


@attrs.frozen
class KernelWarn:
    """One WARN the modelled kernel code would print.

    ``function`` is the kernel function that WARNs, ``message`` the condition in the
    words the WARN prints (the log line a test on a real kernel would grep for), ``once``
    whether it is a ``WARN_ONCE`` (printed only the first time per boot; the model reports
    every occurrence), ``rule`` the SPEC rule that describes the case.
    """

    function: str
    message: str
    rule: str
    once: bool = False


def kernel_warn(
    warns: list[KernelWarn] | None,
    trace: Trace | None,
    *,
    rule: str,
    function: str,
    message: str,
    once: bool = False,
    **fields: object,
) -> KernelWarn:
    """Report a WARN: append it to ``warns`` (when given) and trace it under ``rule``."""
    warn = KernelWarn(function, message, rule, once)
    if warns is not None:
        warns.append(warn)
    emit(trace, rule, f"WARN{'_ONCE' if once else ''} in {function}: {message}", **fields)
    return warn

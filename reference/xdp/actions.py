"""``enum xdp_action`` and what a driver does with each verdict (XDP-ACT-001 .. 005).

Drivers switch on the program's return value with the same shape everywhere (generic
XDP in ``net/core/dev.c: netif_receive_generic_xdp``, mlx5 in ``en/xdp.c:
mlx5e_xdp_handle``, devmap, cpumap): the actions they implement have their own case;
every other value falls into ``default``, which calls ``bpf_warn_invalid_xdp_action``
and falls through into the ``XDP_ABORTED`` case (``trace_xdp_exception``), which falls
through into ``XDP_DROP``.  :func:`classify_action` is that switch as a function.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

from reference.errors import InvalidConfig
from reference.trace import Trace, emit


class XdpAction(enum.IntEnum):
    """``enum xdp_action`` (include/uapi/linux/bpf.h) (XDP-ACT-001)."""

    XDP_ABORTED = 0
    XDP_DROP = 1
    XDP_PASS = 2
    XDP_TX = 3
    XDP_REDIRECT = 4


#: Every action a driver can implement.
ALL_ACTIONS: frozenset[XdpAction] = frozenset(XdpAction)
#: Each action's value to its name: what drivers report, looked up without the enum.
ACTION_NAMES: dict[int, str] = {int(a): a.name for a in XdpAction}


class ActionVerdict(NamedTuple):
    """What the driver ends up doing: the effective action and whether it warned.

    ``effective`` is ``XDP_ABORTED`` for every value that lands in the abort path
    (an invalid value, an explicit ABORTED, a failed TX or REDIRECT); such packets are
    dropped and counted as drops.
    """

    effective: XdpAction
    warned: bool

    @property
    def exception_traced(self) -> bool:
        """``trace_xdp_exception`` fires on the abort path (XDP-ACT-003)."""
        return self.effective is XdpAction.XDP_ABORTED

    @property
    def dropped(self) -> bool:
        """The packet is dropped (ABORTED path or DROP)."""
        return self.effective in (XdpAction.XDP_ABORTED, XdpAction.XDP_DROP)


def invalid_action_warning(act: int) -> str:
    """The word ``bpf_warn_invalid_xdp_action`` prints: "Illegal" above ``XDP_REDIRECT``,
    "Driver unsupported" for a valid action the driver has no case for (XDP-ACT-002)."""
    return "Illegal" if (act & 0xFFFFFFFF) > XdpAction.XDP_REDIRECT else "Driver unsupported"


def classify_action(
    value: int,
    supported: frozenset[XdpAction] = ALL_ACTIONS,
    *,
    xmit_failed: bool = False,
    trace: Trace | None = None,
) -> ActionVerdict:
    """The driver's verdict switch (XDP-ACT-002 .. XDP-ACT-005).

    ``value`` is the program's return value, truncated to the u32 the drivers switch on
    (XDP-ACT-004).  ``supported`` lists the actions the driver has a case for (it always
    has ABORTED and DROP).  ``xmit_failed`` says the driver's XDP_TX transmit or
    ``xdp_do_redirect`` failed, which sends a TX or REDIRECT verdict down the abort path
    without a warning (XDP-ACT-005).
    """
    if XdpAction.XDP_ABORTED not in supported or XdpAction.XDP_DROP not in supported:
        raise InvalidConfig("every driver handles XDP_ABORTED and XDP_DROP",
                            field="supported", value=sorted(supported), rule="XDP-ACT-002")
    act = value & 0xFFFFFFFF
    if act not in supported:  # IntEnum members compare equal to their ints
        emit(trace, "XDP-ACT-002", f"{invalid_action_warning(act)} XDP return value, "
             "expect packet loss", act=act)
        return ActionVerdict(XdpAction.XDP_ABORTED, True)
    action = XdpAction(act)
    if xmit_failed and action in (XdpAction.XDP_TX, XdpAction.XDP_REDIRECT):
        emit(trace, "XDP-ACT-005", "transmit failed: abort path", act=act)
        return ActionVerdict(XdpAction.XDP_ABORTED, False)
    emit(trace, "XDP-ACT-003" if action is XdpAction.XDP_ABORTED else "XDP-ACT-001",
         "verdict", action=action.name)
    return ActionVerdict(action, False)

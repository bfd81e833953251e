"""``struct xdp_rxq_info`` and its registration (XDP-MEM-005, XDP-MEM-006).

Every ``xdp_buff`` points at the RX-queue info of the ring it came from: the device,
the queue index, the registered memory model (which decides how buffers are returned,
XDP-MEM-002) and ``frag_size`` (which decides whether a multi-buffer packet's last frag
may grow, XDP-ADJ-008).  Registration lives in ``net/core/xdp.c``.
"""

from __future__ import annotations

import enum
import errno

import attrs

from reference.errors import InvalidConfig, StateViolation
from reference.trace import Trace, emit
from reference.xdp.mem import MemType, XdpMemInfo


class RegState(enum.IntEnum):
    """``REG_STATE_*`` (net/core/xdp.c)."""

    NEW = 0x0
    REGISTERED = 0x1
    UNREGISTERED = 0x2
    UNUSED = 0x3


@attrs.define
class NetDev:
    """The parts of ``struct net_device`` the XDP core reads."""

    ifindex: int
    name: str = "eth0"


@attrs.define
class XdpRxqInfo:
    """``struct xdp_rxq_info`` (include/net/xdp.h).

    Fields a driver model may also set by hand; :func:`xdp_rxq_info_reg` and
    :func:`xdp_rxq_info_reg_mem_model` do it the way the kernel does.
    """

    dev: NetDev | None = None
    queue_index: int = 0
    reg_state: RegState = RegState.NEW
    mem: XdpMemInfo = attrs.field(factory=XdpMemInfo)
    frag_size: int = 0


@attrs.define
class XdpTxqInfo:
    """``struct xdp_txq_info``: only set for devmap egress programs, never on RX."""

    dev: NetDev | None = None


def xdp_rxq_info_reg(
    rxq: XdpRxqInfo,
    dev: NetDev | None,
    queue_index: int,
    frag_size: int = 0,
    *,
    trace: Trace | None = None,
) -> int:
    """``__xdp_rxq_info_reg`` (XDP-MEM-005).

    Clears the whole structure, then records device, queue and ``frag_size``: the memory
    model is back to type 0 (``MEM_TYPE_PAGE_SHARED``) with id 0 until
    :func:`xdp_rxq_info_reg_mem_model` runs.  The three cases the kernel WARNs on raise
    :class:`StateViolation` with ``rxq`` untouched (ERR-002).
    """
    if dev is None:
        raise StateViolation("Missing net_device from driver (-ENODEV)", obj="xdp_rxq_info",
                             rule="XDP-MEM-005")
    if rxq.reg_state == RegState.UNUSED:
        raise StateViolation("Driver promised not to register this (-EINVAL)",
                             obj="xdp_rxq_info", rule="XDP-MEM-005")
    if rxq.reg_state == RegState.REGISTERED:
        # The kernel WARNs, unregisters and carries on; the model flags the driver bug.
        raise StateViolation("Missing unregister", obj="xdp_rxq_info", rule="XDP-MEM-005")
    if not 0 <= frag_size < 1 << 32:
        raise InvalidConfig("frag_size is a u32", field="frag_size", value=frag_size,
                            rule="XDP-MEM-005")
    rxq.dev = dev
    rxq.queue_index = queue_index
    rxq.mem = XdpMemInfo()
    rxq.frag_size = frag_size
    rxq.reg_state = RegState.REGISTERED
    emit(trace, "XDP-MEM-005", "rxq registered", ifindex=dev.ifindex, queue=queue_index,
         frag_size=frag_size)
    return 0


def xdp_rxq_info_unused(rxq: XdpRxqInfo) -> None:
    """``xdp_rxq_info_unused``: the driver promises never to register this queue."""
    rxq.reg_state = RegState.UNUSED


def xdp_rxq_info_reg_mem_model(
    rxq: XdpRxqInfo,
    mem_type: int,
    allocator: object | None,
    *,
    mem_id: int = 1,
    page_pool_compiled_in: bool = True,
    trace: Trace | None = None,
) -> int:
    """``xdp_rxq_info_reg_mem_model`` (XDP-MEM-006).

    Returns 0 or a negative errno.  ``mem_id`` stands in for the id the kernel's cyclic
    IDA would hand out for an allocator (a model convention; the IDA is not modelled).
    """
    if rxq.reg_state != RegState.REGISTERED:
        raise StateViolation("Missing register, driver bug (-EFAULT)", obj="xdp_rxq_info",
                             rule="XDP-MEM-006")
    supported = (page_pool_compiled_in if mem_type == MemType.MEM_TYPE_PAGE_POOL
                 else 0 <= mem_type < MemType.MEM_TYPE_MAX)
    if not supported:
        emit(trace, "XDP-MEM-006", "unsupported memory type", mem_type=mem_type, ret=-95)
        return -errno.EOPNOTSUPP
    # The type is written before the allocator is checked, so a page_pool registration
    # without a pool leaves the type set even though it fails.
    rxq.mem.type = mem_type
    if allocator is None:
        if mem_type == MemType.MEM_TYPE_PAGE_POOL:
            emit(trace, "XDP-MEM-006", "page_pool type needs an allocator", ret=-22)
            return -errno.EINVAL
        return 0
    if not 1 <= mem_id <= 0xFFFD:
        raise InvalidConfig("mem ids come from [1, 0xFFFE)", field="mem_id", value=mem_id,
                            rule="XDP-MEM-006")
    rxq.mem.id = mem_id
    emit(trace, "XDP-MEM-006", "memory model registered", mem_type=mem_type, mem_id=mem_id)
    return 0


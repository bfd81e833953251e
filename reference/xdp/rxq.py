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
from reference.xdp.warn import KernelWarn, kernel_warn


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
    warns: list[KernelWarn] | None = None,
    trace: Trace | None = None,
) -> int:
    """``__xdp_rxq_info_reg`` (XDP-MEM-005).

    Clears the whole structure, then records device, queue and ``frag_size``: the memory
    model is back to type 0 (``MEM_TYPE_PAGE_SHARED``) with id 0 until
    :func:`xdp_rxq_info_reg_mem_model` runs.  The kernel WARNs in three cases and the
    model reports each in ``warns``, then does what the kernel does: a NULL device gives
    -ENODEV and a queue marked unused -EINVAL (``rxq`` untouched in both); a queue that is
    still registered is unregistered first (:func:`xdp_rxq_info_unreg`) and then
    registered anew.
    """
    if dev is None:
        kernel_warn(warns, trace, rule="XDP-MEM-005", function="__xdp_rxq_info_reg",
                    message="Missing net_device from driver", ret=-errno.ENODEV)
        return -errno.ENODEV
    if rxq.reg_state == RegState.UNUSED:
        kernel_warn(warns, trace, rule="XDP-MEM-005", function="__xdp_rxq_info_reg",
                    message="Driver promised not to register this", ret=-errno.EINVAL)
        return -errno.EINVAL
    if not 0 <= frag_size < 1 << 32:
        raise InvalidConfig("frag_size is a u32", field="frag_size", value=frag_size,
                            rule="XDP-MEM-005")
    if rxq.reg_state == RegState.REGISTERED:
        kernel_warn(warns, trace, rule="XDP-MEM-005", function="__xdp_rxq_info_reg",
                    message="Missing unregister, handled but fix driver",
                    mem_type=rxq.mem.type, mem_id=rxq.mem.id)
        xdp_rxq_info_unreg(rxq, warns=warns, trace=trace)
    rxq.dev = dev
    rxq.queue_index = queue_index
    rxq.mem = XdpMemInfo()
    rxq.frag_size = frag_size
    rxq.reg_state = RegState.REGISTERED
    emit(trace, "XDP-MEM-005", "rxq registered", ifindex=dev.ifindex, queue=queue_index,
         frag_size=frag_size)
    return 0


def xdp_rxq_info_unreg(
    rxq: XdpRxqInfo, *, warns: list[KernelWarn] | None = None, trace: Trace | None = None
) -> XdpMemInfo | None:
    """``xdp_rxq_info_unreg`` (XDP-MEM-005; re-registration runs it on a registered queue).

    A queue marked unused is left alone.  Otherwise the memory model of a registered queue
    is reset to type 0, id 0 (``xdp_unreg_mem_model``); a queue that is not registered
    keeps it and the kernel WARNs ("Missing register, driver bug", reported in ``warns``).
    Either way the queue ends UNREGISTERED with no device.  Returns the memory model that
    was dropped when it had an allocator id (for ``MEM_TYPE_PAGE_POOL`` the kernel then
    destroys that page_pool, ``page_pool_destroy``; the model only reports it), else None.
    """
    if rxq.reg_state == RegState.UNUSED:
        return None
    dropped: XdpMemInfo | None = None
    if rxq.reg_state != RegState.REGISTERED:
        kernel_warn(warns, trace, rule="XDP-MEM-005", function="xdp_rxq_info_unreg_mem_model",
                    message="Missing register, driver bug")
    else:
        dropped = attrs.evolve(rxq.mem) if rxq.mem.id else None
        rxq.mem = XdpMemInfo()
    rxq.reg_state = RegState.UNREGISTERED
    rxq.dev = None
    if dropped is not None:
        emit(trace, "XDP-MEM-005", "memory model dropped on unregister",
             mem_type=dropped.type, mem_id=dropped.id,
             page_pool_destroyed=dropped.type == MemType.MEM_TYPE_PAGE_POOL)
    return dropped


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
    warns: list[KernelWarn] | None = None,
    trace: Trace | None = None,
) -> int:
    """``xdp_rxq_info_reg_mem_model`` (XDP-MEM-006).

    Returns 0 or a negative errno.  ``mem_id`` stands in for the id the kernel's cyclic
    IDA would hand out for an allocator (a model convention; the IDA is not modelled).
    An unregistered queue is the kernel's WARN case: reported in ``warns``, -EFAULT, the
    queue untouched.
    """
    if rxq.reg_state != RegState.REGISTERED:
        kernel_warn(warns, trace, rule="XDP-MEM-006", function="xdp_rxq_info_reg_mem_model",
                    message="Missing register, driver bug", ret=-errno.EFAULT)
        return -errno.EFAULT
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



def xdp_md_rxq_fields(rxq: XdpRxqInfo | None) -> tuple[int | None, int]:
    """What a program reads from ``ctx->ingress_ifindex`` and ``ctx->rx_queue_index``
    (XDP-PROG-004): the verifier rewrites both into loads through ``xdp->rxq``
    (``xdp_convert_ctx_access``), so they are the device and queue the driver registered.
    ``ingress_ifindex`` is None where the kernel's load would dereference a NULL ``dev``
    (a queue unregistered, or never registered)."""
    if rxq is None:
        raise StateViolation("xdp->rxq is NULL", obj="xdp_buff", rule="XDP-PROG-004")
    return (rxq.dev.ifindex if rxq.dev is not None else None), rxq.queue_index

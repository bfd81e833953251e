"""Pool parameters, execution context and creation checks (PP-INIT-001 .. PP-INIT-010).

``struct page_pool_params`` (include/net/page_pool/types.h) and the checks of
``page_pool_init`` (net/core/page_pool.c), Kingxukai/linux v6.17-rc3.
"""

from __future__ import annotations

import errno

import attrs

from reference.errors import InvalidConfig
from reference.kernel import DEFAULT_KERNEL, KernelVersion, gate
from reference.trace import Trace, emit

from .constants import (
    DMA_BIDIRECTIONAL,
    DMA_FROM_DEVICE,
    PP_FLAG_ALL,
    PP_FLAG_ALLOW_UNREADABLE_NETMEM,
    PP_FLAG_DMA_MAP,
    PP_FLAG_DMA_SYNC_DEV,
    PP_RING_CLAMP,
    PP_RING_DEFAULT_SIZE,
    PP_RING_SIZE_LIMIT,
    U32_MASK,
)
from .page import DmaDevice


class NapiStruct:
    """The part of ``struct napi_struct`` page_pool reads: ``list_owner``, the CPU the
    NAPI instance is being polled on, -1 when it is not.

    The kernel's NAPI also has a SCHED bit (set while disabled), which
    ``napi_assert_will_not_race`` reads; the model has none, so -1 stands for a disabled
    (or never registered) NAPI, never an enabled idle one (PP-DESTROY-008)."""

    __slots__ = ("list_owner",)

    def __init__(self, list_owner: int = -1) -> None:
        self.list_owner = list_owner


@attrs.frozen
class Context:
    """The execution context of a call (model convention).

    ``cpu`` is ``smp_processor_id()``, ``nid`` is ``numa_mem_id()`` of that CPU,
    ``in_softirq`` / ``in_hardirq`` say what the caller runs in (NAPI poll is softirq),
    ``preempt_rt`` is ``CONFIG_PREEMPT_RT``.  Calls without a context run as
    ``Context()``: CPU 0, node 0, process context.
    """

    cpu: int = 0
    in_softirq: bool = False
    nid: int = 0
    in_hardirq: bool = False
    preempt_rt: bool = False

    @classmethod
    def softirq(cls, cpu: int = 0, nid: int = 0) -> Context:
        return cls(cpu=cpu, in_softirq=True, nid=nid)


PROCESS_CONTEXT = Context()


@attrs.frozen
class PagePoolParams:
    """``struct page_pool_params`` (fast and slow groups).  Fields default to 0 as in a
    zero-initialised kernel struct (so ``dma_dir`` defaults to ``DMA_BIDIRECTIONAL`` and
    ``nid`` to node 0).  ``dev`` is the DMA device; ``napi`` the owning NAPI instance."""

    order: int = 0
    pool_size: int = 0
    nid: int = 0
    dev: DmaDevice | None = None
    napi: NapiStruct | None = None
    dma_dir: int = DMA_BIDIRECTIONAL
    max_len: int = 0
    offset: int = 0
    netdev: object | None = None
    queue_idx: int = 0
    flags: int = 0


def _u32_field(name: str, value: int) -> None:
    if not isinstance(value, int) or not 0 <= value <= U32_MASK:
        raise InvalidConfig("must be an unsigned 32-bit integer", field=name, value=value,
                            rule="PP-INIT-010")


def ring_qsize(params: PagePoolParams, kernel: KernelVersion = DEFAULT_KERNEL) -> int:
    """PP-INIT-002: the ptr_ring size: ``pool_size`` or 1024, clamped to 16384 on kernels
    with "page_pool: Clamp pool size to max 16K pages" (version gate PP-INIT-002)."""
    size = params.pool_size or PP_RING_DEFAULT_SIZE
    return min(size, PP_RING_CLAMP) if gate(kernel, "PP-INIT-002") else size


def page_pool_init_check(params: PagePoolParams, kernel: KernelVersion = DEFAULT_KERNEL,
                         max_page_order: int = 10, trace: Trace | None = None) -> int:
    """The checks of ``page_pool_init`` in kernel order; 0 or a negative errno.

    PP-INIT-001 .. PP-INIT-005.  Version gates: a ring above 32768 is -E2BIG only before
    the 16K clamp (PP-INIT-002); an order above ``MAX_PAGE_ORDER`` is -EINVAL, after the
    other checks, only from 9954464d737d (PP-INIT-007; the model has no memory provider).
    """
    for name in ("order", "pool_size", "max_len", "offset", "flags", "queue_idx"):
        _u32_field(name, getattr(params, name))
    if params.dma_dir not in (0, 1, 2, 3):
        raise InvalidConfig("not an enum dma_data_direction value", field="dma_dir",
                            value=params.dma_dir, rule="PP-INIT-010")
    if params.flags & ~PP_FLAG_ALL:  # PP-INIT-001
        return _refuse(trace, "PP-INIT-001", -errno.EINVAL, "unknown flag", flags=params.flags)
    if ring_qsize(params, kernel) > PP_RING_SIZE_LIMIT:  # PP-INIT-002
        return _refuse(trace, "PP-INIT-002", -errno.E2BIG, "ring too large",
                       pool_size=params.pool_size)
    if params.flags & PP_FLAG_DMA_MAP and params.dma_dir not in (  # PP-INIT-003
        DMA_FROM_DEVICE,
        DMA_BIDIRECTIONAL,
    ):
        return _refuse(trace, "PP-INIT-003", -errno.EINVAL, "mapping pool with direction "
                       "neither DMA_FROM_DEVICE nor DMA_BIDIRECTIONAL", dma_dir=params.dma_dir)
    if params.flags & PP_FLAG_DMA_SYNC_DEV:  # PP-INIT-004
        if not params.flags & PP_FLAG_DMA_MAP:
            return _refuse(trace, "PP-INIT-004", -errno.EINVAL,
                           "PP_FLAG_DMA_SYNC_DEV without PP_FLAG_DMA_MAP")
        if not params.max_len:
            return _refuse(trace, "PP-INIT-004", -errno.EINVAL,
                           "PP_FLAG_DMA_SYNC_DEV with max_len 0")
    if params.flags & PP_FLAG_ALLOW_UNREADABLE_NETMEM and params.netdev is None:
        # PP-INIT-001: after the checks above the kernel reads the memory provider of
        # netdev's RX queue queue_idx; with no netdev that is a NULL dereference (ERR-002).
        raise InvalidConfig("PP_FLAG_ALLOW_UNREADABLE_NETMEM needs the netdev whose RX "
                            "queue page_pool_init reads (none given: a NULL dereference)",
                            field="flags", value=params.flags, rule="PP-INIT-001")
    if gate(kernel, "PP-INIT-007") and params.order > max_page_order:  # PP-INIT-007
        return _refuse(trace, "PP-INIT-007", -errno.EINVAL, "order above MAX_PAGE_ORDER",
                       order=params.order, max_page_order=max_page_order)
    return 0


def _refuse(trace: Trace | None, rule: str, err: int, why: str, **fields: object) -> int:
    """One creation check's refusal: its errno, told to the trace."""
    emit(trace, rule, "page_pool_init refuses: " + why, err=err, **fields)
    return err

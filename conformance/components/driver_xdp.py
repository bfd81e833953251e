"""Shared by the driver components that run an op list on a real driver's buffers
(``veth``, ``tun``): the per-packet run and the paths a live kernel leaves unspecified."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from reference.kfuncs import XdpMetadataOps
from reference.xdp import program as prog
from reference.xdp.buff import XdpBuff, xdp_get_buff_len, xdp_init_buff, xdp_prepare_buff
from reference.xdp.frame import xdp_convert_buff_to_frame, xdp_get_frame_len
from reference.xdp.mem import MemType
from reference.xdp.memory import Page
from reference.xdp.rxq import NetDev, XdpRxqInfo


def run_on_buffer(
    frame: bytes, ops: tuple[Mapping[str, Any], ...], *, headroom: int, frame_sz: int,
    metadata_ops: XdpMetadataOps | None, ctx: Callable[[XdpBuff], object] | None,
    meta_valid: bool = True,
) -> tuple[dict[str, Any], prog.ProgramRun, int | None]:
    """Run ``ops`` on ``frame`` laid out at ``headroom`` in a ``frame_sz`` buffer.

    ``ctx`` builds the driver's per-packet kfunc context from the buffer; ``meta_valid``
    is what the driver's ``xdp_prepare_buff`` call says about metadata support.
    Returns the packet observables, the run, and for XDP_TX/REDIRECT the converted
    frame's length (None when the conversion fails).
    """
    rxq = XdpRxqInfo(dev=NetDev(ifindex=2))
    rxq.mem.type = MemType.MEM_TYPE_PAGE_SHARED
    xdp = XdpBuff()
    xdp_init_buff(xdp, frame_sz, rxq)
    page = Page.zeroed(frame_sz)
    xdp_prepare_buff(xdp, page, 0, headroom, len(frame), meta_valid)
    page.data[headroom : headroom + len(frame)] = frame
    run = prog.run_program(ops, xdp, metadata_ops=metadata_ops,
                           ctx=None if ctx is None else ctx(xdp))
    frame_len: int | None = None
    if run.action in (3, 4):
        xdpf = xdp_convert_buff_to_frame(xdp)
        frame_len = None if xdpf is None else xdp_get_frame_len(xdpf)
    packet = {"ops": list(run.records), "action": run.action, "data": xdp.linear(),
              "meta": xdp.metadata(), "len": xdp_get_buff_len(xdp)}
    return packet, run, frame_len

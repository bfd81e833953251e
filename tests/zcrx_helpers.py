"""Small builders shared by the zcrx tests."""

from __future__ import annotations

from reference.zcrx import (
    AreaMemory,
    DeviceConfig,
    EngineConfig,
    IoUringRegionDesc,
    IoUringZcrxAreaReg,
    IoUringZcrxIfqReg,
    NetdevModel,
    RingCtx,
    ZcrxEngine,
)
from reference.zcrx.uapi import (
    IORING_SETUP_CQE32,
    IORING_SETUP_CQE_MIXED,
    IORING_SETUP_DEFER_TASKRUN,
    IORING_ZCRX_AREA_DMABUF,
)

ADDR = 0x7F00_0000_0000


def make_engine(*, niovs: int = 8, rx_buf_len: int = 0, rq_entries: int = 8,
                placement: str = "packed", gro_segs: int = 1, linear_payload: int = 0,
                cq_entries: int = 4096, pool_size: int = 1024, mixed: bool = False,
                dmabuf: bool = False) -> ZcrxEngine:
    """A registered instance with ``niovs`` niovs of ``rx_buf_len`` (0: 4 KiB)."""
    size = rx_buf_len or 4096
    flags = IORING_SETUP_DEFER_TASKRUN | (IORING_SETUP_CQE_MIXED if mixed
                                          else IORING_SETUP_CQE32)
    area = IoUringZcrxAreaReg(addr=0 if dmabuf else ADDR, len=niovs * size,
                              flags=IORING_ZCRX_AREA_DMABUF if dmabuf else 0,
                              dmabuf_fd=5 if dmabuf else 0)
    # ZCRX-REG-008: 7.3's header (entries at 128) fits every kernel's.
    region = (128 + 16 * rq_entries + 4095) // 4096 * 4096
    cfg = EngineConfig(
        ctx=RingCtx(flags=flags),
        reg=IoUringZcrxIfqReg(if_idx=2, rq_entries=rq_entries, rx_buf_len=rx_buf_len),
        area=area, region=IoUringRegionDesc(size=region),
        netdev=NetdevModel(qcfg_rx_page_size=bool(rx_buf_len)),
        memory=AreaMemory(),
        device=DeviceConfig(placement=placement, gro_segs=gro_segs,
                            linear_payload=linear_payload),
        cq_entries=cq_entries, pool_size=pool_size)
    engine = ZcrxEngine(cfg)
    assert engine.result.ok, engine.result
    return engine

"""reference.zcrx.register: every registration rule gives the kernel's errno (one table
row per rule and errno), in the kernel's order; rq_entries, rx_buf_len and the driver
opt-in; what a successful registration writes back.

Expected errnos are read off ``io_uring/zcrx.c`` (openSUSE/kernel@0719e10d826a:
``io_register_zcrx``, ``io_zcrx_create_area``, ``io_import_area``, ``io_import_umem``,
``io_import_dmabuf``, ``io_area_max_shift``, ``io_pp_zc_init``), ``io_uring/memmap.c:
io_create_region`` and ``net/core/netdev_rx_queue.c: __net_mp_open_rxq`` (v7.0).
"""

from __future__ import annotations

import errno
from typing import Any

import attrs
import pytest

from conformance.components import zcrx as component
from conformance.scenario import Scenario
from reference.errors import InvalidConfig
from reference.kernel import parse_kernel, resolve_kernel
from reference.trace import Trace
from reference.zcrx import register as R
from reference.zcrx.uapi import (
    IORING_SETUP_CLAMP,
    IORING_SETUP_CQE32,
    IORING_SETUP_CQE_MIXED,
    IORING_SETUP_DEFER_TASKRUN,
    IORING_ZCRX_AREA_DMABUF,
    ZCRX_REG_IMPORT,
    ZCRX_REG_NODEV,
    IoUringRegionDesc,
    IoUringZcrxAreaReg,
    IoUringZcrxIfqReg,
)

ADDR = 0x7F00_0000_0000
MIB = 1 << 20


def register(*, ctx: dict[str, Any] | None = None, reg: dict[str, Any] | None = None,
             area: dict[str, Any] | None = None, rd: dict[str, Any] | None = None,
             netdev: dict[str, Any] | bool | None = True,
             chunks: tuple[int, ...] | None = None,
             trace: Trace | None = None, kernel: str | None = None) -> R.RegResult:
    """A valid registration (64 entries, 1 MiB of one segment, bnxt-like driver without
    the opt-in) with some fields replaced."""
    c = R.RingCtx(**(ctx or {}))
    g = IoUringZcrxIfqReg(**{"if_idx": 2, "if_rxq": 0, "rq_entries": 64, **(reg or {})})
    a = IoUringZcrxAreaReg(**{"addr": ADDR, "len": MIB, **(area or {})})
    d = IoUringRegionDesc(**{"size": 4096, **(rd or {})})
    if netdev is True:
        nd: R.NetdevModel | None = R.NetdevModel()
    elif netdev is None or netdev is False:
        nd = None
    else:
        nd = R.NetdevModel(**netdev)
    return R.register_zcrx(c, g, a, d, nd, R.AreaMemory(chunks=chunks), trace=trace,
                           kernel=resolve_kernel(kernel))


E = errno
NODEV = {"flags": ZCRX_REG_NODEV, "if_idx": 0, "if_rxq": 0}
QCFG = {"qcfg_rx_page_size": True}
DMABUF = {"flags": IORING_ZCRX_AREA_DMABUF, "addr": 0, "dmabuf_fd": 7}

#: (rule, what, keyword patch for register(), expected rc)
TABLE: list[tuple[str, str, dict[str, Any], int]] = [
    ("ZCRX-REG-001", "no CAP_NET_ADMIN", {"ctx": {"cap_net_admin": False}}, -E.EPERM),
    ("ZCRX-REG-002", "no DEFER_TASKRUN", {"ctx": {"flags": IORING_SETUP_CQE32}}, -E.EINVAL),
    ("ZCRX-REG-002", "16-byte CQEs", {"ctx": {"flags": IORING_SETUP_DEFER_TASKRUN}},
     -E.EINVAL),
    ("ZCRX-REG-003", "__resv[1] set", {"reg": {"resv": (0, 1)}}, -E.EINVAL),
    ("ZCRX-REG-003", "zcrx_id set", {"reg": {"zcrx_id": 1}}, -E.EINVAL),
    ("ZCRX-REG-004", "unknown flag", {"reg": {"flags": 4}}, -E.EINVAL),
    ("ZCRX-REG-005", "if_rxq -1", {"reg": {"if_rxq": 0xFFFF_FFFF}}, -E.EINVAL),
    ("ZCRX-REG-005", "rq_entries 0", {"reg": {"rq_entries": 0}}, -E.EINVAL),
    ("ZCRX-REG-005", "NODEV with a device", {"reg": {"flags": ZCRX_REG_NODEV}}, -E.EINVAL),
    ("ZCRX-REG-006", "too many entries", {"reg": {"rq_entries": 32769}}, -E.EINVAL),
    ("ZCRX-REG-008", "region too small", {"reg": {"rq_entries": 253}}, -E.EINVAL),
    ("ZCRX-REG-009", "region __resv", {"rd": {"resv": (0, 0, 1, 0)}}, -E.EINVAL),
    ("ZCRX-REG-009", "region flag 2", {"rd": {"flags": 2}}, -E.EINVAL),
    ("ZCRX-REG-009", "USER flag without address", {"rd": {"flags": 1}}, -E.EFAULT),
    ("ZCRX-REG-009", "address without USER flag", {"rd": {"user_addr": 0x1000}}, -E.EFAULT),
    ("ZCRX-REG-009", "mmap_offset set", {"rd": {"mmap_offset": 4096}}, -E.EINVAL),
    ("ZCRX-REG-009", "id set", {"rd": {"id": 3}}, -E.EINVAL),
    ("ZCRX-REG-009", "2^31 pages", {"rd": {"size": 1 << 43}}, -E.E2BIG),
    ("ZCRX-REG-009", "size not page aligned", {"rd": {"size": 4100}}, -E.EINVAL),
    ("ZCRX-REG-009", "address + size overflows",
     {"rd": {"flags": 1, "user_addr": (1 << 64) - 4096, "size": 8192}}, -E.EOVERFLOW),
    ("ZCRX-REG-010", "no such device", {"netdev": None}, -E.ENODEV),
    ("ZCRX-REG-010", "no DMA device", {"netdev": {"has_dma_dev": False}}, -E.EOPNOTSUPP),
    ("ZCRX-BUFLEN-002", "not a power of two", {"reg": {"rx_buf_len": 12288}}, -E.EINVAL),
    ("ZCRX-BUFLEN-002", "below PAGE_SIZE", {"reg": {"rx_buf_len": 2048}}, -E.EINVAL),
    ("ZCRX-BUFLEN-003", "32 KiB on 4 KiB pages",
     {"reg": {"rx_buf_len": 32768}, "netdev": QCFG, "chunks": (4096,) * 256}, -E.ERANGE),
    ("ZCRX-BUFLEN-004", "large buffers without a device",
     {"reg": {**NODEV, "rx_buf_len": 8192}, "netdev": None}, -E.EOPNOTSUPP),
    ("ZCRX-AREA-001", "area flag 2", {"area": {"flags": 2}}, -E.EINVAL),
    ("ZCRX-AREA-001", "rq_area_token set", {"area": {"rq_area_token": 1 << 48}}, -E.EINVAL),
    ("ZCRX-AREA-001", "area __resv2", {"area": {"resv2": (0, 9)}}, -E.EINVAL),
    ("ZCRX-AREA-002", "len 0", {"area": {"len": 0}}, -E.EFAULT),
    ("ZCRX-AREA-002", "len above 1 TiB", {"area": {"len": (1 << 40) + 4096}}, -E.EINVAL),
    ("ZCRX-AREA-002", "range wraps", {"area": {"addr": (1 << 64) - 8192}}, -E.EOVERFLOW),
    ("ZCRX-AREA-003", "addr unaligned", {"area": {"addr": ADDR + 8}}, -E.EINVAL),
    ("ZCRX-AREA-003", "len unaligned", {"area": {"len": MIB + 100}}, -E.EINVAL),
    ("ZCRX-AREA-004", "dmabuf_fd on user memory", {"area": {"dmabuf_fd": 3}}, -E.EINVAL),
    ("ZCRX-AREA-004", "user memory at 0", {"area": {"addr": 0}}, -E.EFAULT),
    ("ZCRX-AREA-004", "dma-buf with an offset", {"area": {**DMABUF, "addr": 4096}},
     -E.EINVAL),
    ("ZCRX-AREA-004", "dma-buf shorter than len", {"area": DMABUF, "chunks": (MIB // 2,)},
     -E.EINVAL),
    ("ZCRX-AREA-004", "dma-buf without a device",
     {"reg": NODEV, "area": DMABUF, "netdev": None}, -E.EINVAL),
    ("ZCRX-QUEUE-001", "no queue management ops", {"netdev": {"queue_mgmt_ops": False}},
     -E.EOPNOTSUPP),
    ("ZCRX-QUEUE-001", "queue out of range", {"reg": {"if_rxq": 4}}, -E.ERANGE),
    ("ZCRX-QUEUE-001", "header split off", {"netdev": {"tcp_data_split": False}}, -E.EINVAL),
    ("ZCRX-QUEUE-001", "hds_thresh set", {"netdev": {"hds_thresh": 256}}, -E.EINVAL),
    ("ZCRX-QUEUE-001", "XDP attached", {"netdev": {"xdp_attached": True}}, -E.EEXIST),
    ("ZCRX-QUEUE-001", "queue already bound", {"netdev": {"rxq_mp_bound": True}}, -E.EEXIST),
    ("ZCRX-BUFLEN-005", "a size on a driver without the opt-in",
     {"reg": {"rx_buf_len": 16384}}, -E.EOPNOTSUPP),
    ("ZCRX-BUFLEN-005", "even PAGE_SIZE, when asked explicitly",
     {"reg": {"rx_buf_len": 4096}}, -E.EOPNOTSUPP),
    ("ZCRX-QUEUE-002", "above the driver's maximum",
     {"reg": {"rx_buf_len": 65536}, "netdev": QCFG}, -E.ERANGE),
    ("ZCRX-QUEUE-002", "driver default invalid",
     {"netdev": {**QCFG, "default_rx_page_size": 3000}}, -E.ERANGE),
    ("ZCRX-QUEUE-003", "driver default 8 KiB, niovs 4 KiB",
     {"netdev": {"default_rx_page_size": 8192}}, -E.EINVAL),
    ("ZCRX-REG-011", "the base registration", {}, 0),
    ("ZCRX-REG-011", "NODEV registration", {"reg": NODEV, "netdev": None}, 0),
    ("ZCRX-REG-011", "dma-buf area", {"area": DMABUF}, 0),
]


@pytest.mark.rule("ZCRX-REG-001", "ZCRX-REG-002", "ZCRX-REG-003", "ZCRX-REG-004",
                  "ZCRX-REG-005", "ZCRX-REG-006", "ZCRX-REG-008", "ZCRX-REG-009",
                  "ZCRX-REG-010", "ZCRX-REG-011", "ZCRX-AREA-001", "ZCRX-AREA-002",
                  "ZCRX-AREA-003", "ZCRX-AREA-004", "ZCRX-BUFLEN-002", "ZCRX-BUFLEN-003",
                  "ZCRX-BUFLEN-004", "ZCRX-BUFLEN-005", "ZCRX-QUEUE-001", "ZCRX-QUEUE-002",
                  "ZCRX-QUEUE-003")
@pytest.mark.parametrize(("rule", "what", "patch", "rc"), TABLE,
                         ids=[f"{r}:{w}" for r, w, _, _ in TABLE])
def test_registration_errno_table(rule: str, what: str, patch: dict[str, Any],
                                  rc: int) -> None:
    trace = Trace()
    res = register(**patch, trace=trace)
    assert res.rc == rc, (what, res.rc, res.rule)
    assert res.rule == rule
    assert rule in trace.rules()


def test_every_rule_with_an_errno_has_a_row() -> None:
    assert {r for r, _, _, rc in TABLE if rc} >= {
        "ZCRX-REG-001", "ZCRX-REG-002", "ZCRX-REG-003", "ZCRX-REG-004", "ZCRX-REG-005",
        "ZCRX-REG-006", "ZCRX-REG-008", "ZCRX-REG-009", "ZCRX-REG-010", "ZCRX-AREA-001",
        "ZCRX-AREA-002", "ZCRX-AREA-003", "ZCRX-AREA-004", "ZCRX-BUFLEN-002",
        "ZCRX-BUFLEN-003", "ZCRX-BUFLEN-004", "ZCRX-BUFLEN-005", "ZCRX-QUEUE-001",
        "ZCRX-QUEUE-002", "ZCRX-QUEUE-003"}


@pytest.mark.rule("ZCRX-REG-001", "ZCRX-REG-002", "ZCRX-BUFLEN-002", "ZCRX-AREA-001")
@pytest.mark.parametrize(("patch", "rc", "rule"), [
    # privilege before ring flags
    ({"ctx": {"cap_net_admin": False, "flags": 0}}, -E.EPERM, "ZCRX-REG-001"),
    # ring flags before reserved words
    ({"ctx": {"flags": 0}, "reg": {"zcrx_id": 5}}, -E.EINVAL, "ZCRX-REG-002"),
    # the region before the device
    ({"rd": {"id": 1}, "netdev": None}, -E.EINVAL, "ZCRX-REG-009"),
    # the device before the buffer size
    ({"netdev": None, "reg": {"rx_buf_len": 3}}, -E.ENODEV, "ZCRX-REG-010"),
    # the buffer size before the area registration
    ({"reg": {"rx_buf_len": 3}, "area": {"flags": 8}}, -E.EINVAL, "ZCRX-BUFLEN-002"),
    # area flags before the range
    ({"area": {"flags": 8, "len": 0}}, -E.EINVAL, "ZCRX-AREA-001"),
    # the area before the queue
    ({"area": {"addr": 0}, "reg": {"if_rxq": 9}}, -E.EFAULT, "ZCRX-AREA-004"),
])
def test_the_first_fault_in_kernel_order_wins(patch: dict[str, Any], rc: int,
                                              rule: str) -> None:
    res = register(**patch)
    assert (res.rc, res.rule) == (rc, rule)


@pytest.mark.rule("ZCRX-REG-006")
@pytest.mark.parametrize(("asked", "clamp", "want"), [
    (1, False, 1), (3, False, 4), (64, False, 64), (100, False, 128), (32768, False, 32768),
    (32769, True, 32768), (1 << 31, True, 32768), (20000, False, 32768),
])
def test_rq_entries_clamped_and_rounded(asked: int, clamp: bool, want: int) -> None:
    flags = IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_CQE32 | (IORING_SETUP_CLAMP if clamp else 0)
    size = (64 + 16 * want + 4095) // 4096 * 4096
    res = register(ctx={"flags": flags}, reg={"rq_entries": asked}, rd={"size": size})
    assert res.rc == 0
    assert res.reg.rq_entries == want


@pytest.mark.rule("ZCRX-REG-008")
def test_region_size_boundary() -> None:
    # 7.3.4: entries at 128.  128 entries: 128 + 16 * 128 = 2176 bytes fit a page
    assert register(reg={"rq_entries": 128}).rc == 0
    # 129 rounds to 256: 128 + 4096 bytes do not (the check uses the rounded count)
    assert register(reg={"rq_entries": 129}).rc == -E.EINVAL
    assert register(reg={"rq_entries": 129}, rd={"size": 8192}).rc == 0
    # 252 entries would fit 4096 bytes exactly with 6.18's header, but they round to 256
    assert register(reg={"rq_entries": 252}).rc == -E.EINVAL
    assert register(reg={"rq_entries": 252}, kernel="6.18").rc == -E.EINVAL


@pytest.mark.rule("ZCRX-REG-008")
def test_refill_offsets_at_both_versions() -> None:
    """6.18.44 (and 7.2.12): head and tail are the adjacent u32s of struct io_uring, so
    tail 4 and the entries at ALIGN(8, 64) = 64.  7.3.4: struct zcrx_rq_hdr puts each on
    a 64-byte cache line, so tail 64, sizeof 128, entries at ALIGN(128, 64) = 128."""
    old, new = R.rq_offsets(parse_kernel("6.18")), R.rq_offsets(parse_kernel("7.3.4"))
    assert (old.head, old.tail, old.rqes) == (0, 4, 64)
    assert (new.head, new.tail, new.rqes) == (0, 64, 128)
    assert R.rq_offsets() == new  # the default kernel is 7.3.4
    # written back on success (NODEV: copied through the area, no device needed)
    nodev = {"flags": ZCRX_REG_NODEV, "if_idx": 0, "if_rxq": 0}
    assert register(reg=nodev, netdev=None).reg.offsets.tail == 64
    assert register(reg={"rq_entries": 64}, kernel="7.3").reg.offsets.rqes == 128


@pytest.mark.rule("ZCRX-REG-008", "ZCRX-REG-009")
@pytest.mark.parametrize(("size", "kernel", "rc", "rule"), [
    # 4 entries: 6.18 needs 64 + 64 = 128 bytes, 7.3.4 needs 128 + 64 = 192.
    (128, "6.18", -E.EFAULT, "ZCRX-REG-009"),   # size fits; the flag without an address
    (128, "7.3.4", -E.EINVAL, "ZCRX-REG-008"),  # the size test comes first and fails
    (192, "7.3.4", -E.EFAULT, "ZCRX-REG-009"),
    (191, "7.3.4", -E.EINVAL, "ZCRX-REG-008"),
])
def test_region_fault_behind_the_larger_header(size: int, kernel: str, rc: int,
                                                rule: str) -> None:
    """A user-flagged region without user_addr (-EFAULT in io_create_region) is reached
    only when the region is large enough for the header of that version."""
    res = register(reg={"rq_entries": 4}, rd={"size": size, "flags": 1}, kernel=kernel)
    assert (res.rc, res.rule) == (rc, rule)


@pytest.mark.rule("ZCRX-AREA-001", "ZCRX-REG-010", "ZCRX-REG-012", "ZCRX-REG-009")
@pytest.mark.parametrize(("kernel", "netdev", "rd", "rc", "rule"), [
    # veth: 6.18 reaches the device (-EOPNOTSUPP); 7.3.4 refuses the token first.
    ("6.18", "veth", {}, -E.EOPNOTSUPP, "ZCRX-REG-010"),
    ("7.3.4", "veth", {}, -E.EINVAL, "ZCRX-AREA-001"),
    # a good device: the token is refused at io_import_area on 6.18, earlier on 7.3.4
    ("6.18", "dev", {}, -E.EINVAL, "ZCRX-AREA-001"),
    ("7.3.4", "dev", {}, -E.EINVAL, "ZCRX-AREA-001"),
    # with a region fault as well: 6.18 reports the region, 7.3.4 the token
    ("6.18", "dev", {"id": 1}, -E.EINVAL, "ZCRX-REG-009"),
    ("6.18", "dev", {"flags": 1}, -E.EFAULT, "ZCRX-REG-009"),
    ("7.3.4", "dev", {"flags": 1}, -E.EINVAL, "ZCRX-AREA-001"),
    # no device at if_idx: 6.18 -ENODEV, 7.3.4 the token
    ("6.18", None, {}, -E.ENODEV, "ZCRX-REG-010"),
    ("7.3.4", None, {}, -E.EINVAL, "ZCRX-AREA-001"),
])
def test_area_token_checked_early_from_7_3(kernel: str, netdev: str | None,
                                           rd: dict[str, Any], rc: int, rule: str) -> None:
    nd: dict[str, Any] | bool | None = (attrs.asdict(R.VETH) if netdev == "veth"
                                         else True if netdev == "dev" else None)
    res = register(area={"rq_area_token": 1 << 48}, rd=rd, netdev=nd, kernel=kernel)
    assert (res.rc, res.rule) == (rc, rule)


@pytest.mark.rule("ZCRX-REG-001")
@pytest.mark.parametrize("ctx", [{}, {"cap_net_admin": False, "flags": 0}])
def test_before_6_15_the_opcode_itself_is_refused(ctx: dict[str, Any]) -> None:
    """Read in 6.12.117 ``io_uring/register.c``: the syscall refuses an opcode that is not
    below ``IORING_REGISTER_LAST`` (31 there; zcrx's is 32) with -EINVAL before it looks
    up the ring, so neither a missing ``CAP_NET_ADMIN`` (-EPERM from 6.15) nor the ring's
    flags are reached; from 6.15 a good registration succeeds."""
    res = register(ctx=ctx, kernel="6.12.117")
    assert (res.rc, res.rule) == (-E.EINVAL, "ZCRX-REG-001")
    assert register(ctx=ctx, kernel="6.18").rc == (-E.EPERM if ctx else 0)


@pytest.mark.rule("ZCRX-REG-011", "ZCRX-BUFLEN-006", "ZCRX-AREA-005")
def test_success_writes_back() -> None:
    res = register(reg={"rq_entries": 100, "rx_buf_len": 0}, rd={"size": 8192})
    assert res.ok and res.rule == "ZCRX-REG-011"
    assert res.reg.rq_entries == 128
    assert (res.reg.offsets.head, res.reg.offsets.tail, res.reg.offsets.rqes) == (0, 64, 128)
    assert res.reg.zcrx_id == 0
    assert res.reg.rx_buf_len == 4096
    assert res.area.rq_area_token == 0
    assert res.num_niovs == MIB // 4096 and res.niov_shift == 12
    # fields the kernel does not touch come back as given
    assert res.reg.if_idx == 2 and res.area.addr == ADDR


@pytest.mark.rule("ZCRX-BUFLEN-001", "ZCRX-BUFLEN-002", "ZCRX-BUFLEN-006")
@pytest.mark.parametrize(("asked", "shift"), [
    (0, 12), (4096, 12), (8192, 13), (32768, 15), (1 << 21, 21),
    (1, -E.EINVAL), (4095, -E.EINVAL), (6144, -E.EINVAL), (2048, -E.EINVAL),
])
def test_rx_buf_len_selection(asked: int, shift: int) -> None:
    assert R.rx_buf_shift(asked) == shift
    if shift > 0:
        res = register(reg={"rx_buf_len": asked},
                       netdev={**QCFG, "max_rx_page_size": 1 << 21},
                       chunks=(2 * MIB,), area={"len": 2 * MIB})
        assert res.ok, res
        assert res.reg.rx_buf_len == 1 << shift
        assert res.num_niovs == (2 * MIB) >> shift


@pytest.mark.rule("ZCRX-BUFLEN-003")
@pytest.mark.parametrize(("chunks", "max_shift"), [
    ((MIB,), 20), ((4096,) * 256, 12), ((2 * MIB, 2 * MIB), 21), ((65536, 8192, 65536), 13),
    ((3 * 4096,), 12), ((32768 * 3,), 15),
])
def test_area_max_shift(chunks: tuple[int, ...], max_shift: int) -> None:
    assert R.io_area_max_shift(chunks) == max_shift
    total = sum(chunks)
    ok = register(reg={"rx_buf_len": 1 << max_shift}, area={"len": total}, chunks=chunks,
                  netdev={**QCFG, "max_rx_page_size": 1 << 21})
    assert ok.rc == 0
    too_big = register(reg={"rx_buf_len": 2 << max_shift}, area={"len": total},
                       chunks=chunks, netdev={**QCFG, "max_rx_page_size": 1 << 22})
    assert (too_big.rc, too_big.rule) == (-E.ERANGE, "ZCRX-BUFLEN-003")


@pytest.mark.rule("ZCRX-BUFLEN-005", "ZCRX-QUEUE-002")
def test_default_size_is_never_forwarded() -> None:
    # a driver without QCFG_RX_PAGE_SIZE: the default registration works; the provider
    # asked for nothing and the driver keeps its own page size
    res = register(reg={"rx_buf_len": 0})
    assert res.ok
    assert res.mp_rx_page_size == 0
    assert res.driver_rx_page_size == 4096
    # with the opt-in and a size asked: it reaches the driver
    big = register(reg={"rx_buf_len": 32768}, netdev=QCFG)
    assert big.ok and big.mp_rx_page_size == 32768 and big.driver_rx_page_size == 32768
    # with the opt-in and nothing asked: the driver's default
    dflt = register(reg={"rx_buf_len": 0}, netdev=QCFG)
    assert dflt.ok and dflt.mp_rx_page_size == 0 and dflt.driver_rx_page_size == 4096


@pytest.mark.rule("ZCRX-BUFLEN-004", "ZCRX-REG-005")
def test_nodev_registration() -> None:
    res = register(reg=NODEV, netdev=None)
    assert res.ok and res.nodev
    assert res.mp_rx_page_size is None and res.driver_rx_page_size is None
    assert res.reg.rx_buf_len == 4096
    assert register(reg={**NODEV, "rx_buf_len": 4096}, netdev=None).ok
    # NODEV with if_idx set is still refused (ZCRX-REG-005)
    assert register(reg={**NODEV, "if_idx": 2}).rc == -E.EINVAL


@pytest.mark.rule("ZCRX-MP-001")
@pytest.mark.parametrize(("kw", "rc"), [
    ({}, 0),
    ({"same_dev": False}, -E.EINVAL),
    ({"dma_map": False}, -E.EOPNOTSUPP),
    ({"dma_sync": False}, -E.EOPNOTSUPP),
    # page_pool_init's DMA check comes before the provider's init is called
    ({"dma_sync": False, "same_dev": False}, -E.EOPNOTSUPP),
    ({"order": 1}, -E.EINVAL),
    ({"dma_dir": 0}, -E.EOPNOTSUPP),
])
def test_pp_zc_init_checks(kw: dict[str, Any], rc: int) -> None:
    from reference.zcrx.pool import pp_zc_init_check

    args: dict[str, Any] = {"order": 0, "niov_shift": 12, "page_shift": 12, **kw}
    assert pp_zc_init_check(**args)[0] == rc
    assert pp_zc_init_check(order=3, niov_shift=15, page_shift=12)[0] == 0


@pytest.mark.rule("ZCRX-REG-004", "ZCRX-REG-007")
def test_inputs_outside_the_model_are_refused() -> None:
    with pytest.raises(InvalidConfig) as err:
        register(reg={"flags": ZCRX_REG_IMPORT})
    assert err.value.rule == "ZCRX-REG-004"
    with pytest.raises(InvalidConfig) as err:
        register(reg={"event_desc": 0x1000})
    assert err.value.rule == "ZCRX-REG-007"
    with pytest.raises(InvalidConfig):
        register(chunks=(4096, 4096))  # user segments that do not add up to len


@pytest.mark.rule("ZCRX-BUFLEN-007")
@pytest.mark.parametrize("knob", R.UNMERGED_KNOBS)
def test_unmerged_rfc_knobs_are_refused(knob: str) -> None:
    with pytest.raises(InvalidConfig) as err:
        component.config_of(Scenario(component="zcrx", config={knob: 32768}))
    assert err.value.rule == "ZCRX-BUFLEN-007"


@pytest.mark.rule("ZCRX-REG-002")
def test_cqe_mixed_is_enough() -> None:
    assert register(ctx={"flags": IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_CQE_MIXED}).ok


def test_result_is_frozen() -> None:
    res = register()
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        res.rc = 1  # type: ignore[misc]


@pytest.mark.rule("ZCRX-BUFLEN-001", "ZCRX-BUFLEN-006", "ZCRX-QUEUE-002", "ZCRX-REG-003",
                  "ZCRX-REG-007")
def test_before_v7_0_the_driver_keeps_its_page_size_and_nothing_is_written_back() -> None:
    """The pre-v7.0 arms of register_zcrx (the ci run judges 7.3 only): a registration on a
    device succeeds without a queue config for the provider (the driver keeps its default
    page size, unvalidated, even with the opt-in) and writes rx_buf_len back as 0; the
    event descriptor's word is still reserved (-EINVAL)."""
    from reference.kernel import resolve_kernel

    old = resolve_kernel("6.18")
    g = IoUringZcrxIfqReg(if_idx=2, if_rxq=0, rq_entries=64)
    a = IoUringZcrxAreaReg(addr=ADDR, len=MIB)
    d = IoUringRegionDesc(size=4096)
    nd = R.NetdevModel(qcfg_rx_page_size=True)
    res = R.register_zcrx(R.RingCtx(), g, a, d, nd, kernel=old)
    assert res.rc == 0 and res.reg.rx_buf_len == 0
    assert res.mp_rx_page_size == 0 and res.driver_rx_page_size == R.PAGE_SIZE
    res = R.register_zcrx(R.RingCtx(), attrs.evolve(g, event_desc=0x1000), a, d, nd,
                          kernel=old)
    assert (res.rc, res.rule) == (-errno.EINVAL, "ZCRX-REG-003")


@pytest.mark.rule("ZCRX-AREA-002")
def test_area_length_limit_moves_from_1_gib_to_1_tib() -> None:
    """Read in 6.12.118 and 7.2.13/7.3.4 ``io_validate_user_buf_range``: before the gate
    every length above 1 GiB is -EFAULT; after it there is no 1 GiB limit and a length
    above 1 TiB is -EINVAL, both before the overflow check."""
    from reference.kernel import resolve_kernel

    before, after = resolve_kernel("6.18"), resolve_kernel("7.3")
    gib, tib, top = 1 << 30, 1 << 40, 1 << 64
    check = R.validate_user_buf_range
    assert [check(ADDR, n, before) for n in (gib, gib + 4096, tib + 4096)] == [
        0, -E.EFAULT, -E.EFAULT]
    assert [check(ADDR, n, after) for n in (gib, gib + 4096, tib, tib + 4096)] == [
        0, 0, 0, -E.EINVAL]
    assert check(top - 4096, tib + 4096, after) == -E.EINVAL  # the cap before the overflow
    assert check(top - 4096, gib, after) == -E.EOVERFLOW
    assert check(ADDR, 0, after) == check(ADDR, 0, before) == -E.EFAULT

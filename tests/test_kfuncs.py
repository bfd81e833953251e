"""Tests for reference/kfuncs.py: XDP RX-metadata kfuncs and the device-bound rules.

Expected values are transcribed from the kernel headers (file and version cited at each
table) or worked out by hand; none is produced by running the code under test.
"""

from __future__ import annotations

import errno
import struct
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scapy.layers.l2 import Dot1AD, Dot1Q, Ether

from reference.errors import InvalidConfig
from reference.kernel import parse_kernel
from reference.kfuncs import (
    BPF_F_SLEEPABLE,
    BPF_F_TOKEN_FD,
    BPF_F_XDP_DEV_BOUND_ONLY,
    BPF_F_XDP_HAS_FRAGS,
    BPF_MAP_TYPE_CPUMAP,
    BPF_MAP_TYPE_DEVMAP,
    BPF_MAP_TYPE_DEVMAP_HASH,
    BPF_MAP_TYPE_PROG_ARRAY,
    BPF_PROG_TYPE_EXT,
    BPF_PROG_TYPE_SCHED_CLS,
    BPF_PROG_TYPE_XDP,
    BPF_XDP,
    BPF_XDP_CPUMAP,
    BPF_XDP_DEVMAP,
    MAX_XDP_METADATA_KFUNC,
    XDP_FLAGS_DRV_MODE,
    XDP_FLAGS_HW_MODE,
    XDP_FLAGS_SKB_MODE,
    XDP_FLAGS_UPDATE_IF_NOEXIST,
    XDP_METADATA_KFUNCS,
    XDP_RSS_TYPES,
    BpfDevices,
    BpfProg,
    LoadedBpfProg,
    MetadataOps,
    NetDevice,
    NetdevXdpRxMetadata,
    RxHash,
    RxTimestamp,
    RxVlanTag,
    XdpMode,
    XdpRssHashType,
    XdpRxMetadata,
    bpf_prog_map_compatible,
    bpf_xdp_metadata_rx_hash,
    bpf_xdp_metadata_rx_timestamp,
    bpf_xdp_metadata_rx_vlan_tag,
    is_valid_rss_hash_type,
    map_update_prog,
    outputs_after,
    rss_hash_type_violations,
    xdp_rx_metadata_features,
)
from reference.trace import Trace

#: Explicit MACs: scapy never has to resolve one, so no ARP ever leaves the machine.
ETH = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")

TS = XdpRxMetadata.XDP_METADATA_KFUNC_RX_TIMESTAMP
HASH = XdpRxMetadata.XDP_METADATA_KFUNC_RX_HASH
VLAN = XdpRxMetadata.XDP_METADATA_KFUNC_RX_VLAN_TAG
ALL = frozenset({TS, HASH, VLAN})
EINVAL, EOPNOTSUPP, ENODATA = -errno.EINVAL, -errno.EOPNOTSUPP, -errno.ENODATA

# --- Transcribed from include/net/xdp.h, Kingxukai/linux v6.17-rc3 (commit 9b44fff6) ------
# Single bits, as BIT(n): name -> n.
HEADER_BITS = {
    "XDP_RSS_L3_IPV4": 0,
    "XDP_RSS_L3_IPV6": 1,
    "XDP_RSS_L3_DYNHDR": 2,
    "XDP_RSS_L4": 3,
    "XDP_RSS_L4_TCP": 4,
    "XDP_RSS_L4_UDP": 5,
    "XDP_RSS_L4_SCTP": 6,
    "XDP_RSS_L4_IPSEC": 7,
    "XDP_RSS_L4_ICMP": 8,
}
# Combined names, as the bits the header ORs together (the _EX names expanded).
HEADER_COMBOS: dict[str, tuple[str, ...]] = {
    "XDP_RSS_TYPE_NONE": (),
    "XDP_RSS_TYPE_L2": (),
    "XDP_RSS_TYPE_L3_IPV4": ("XDP_RSS_L3_IPV4",),
    "XDP_RSS_TYPE_L3_IPV6": ("XDP_RSS_L3_IPV6",),
    "XDP_RSS_TYPE_L3_IPV4_OPT": ("XDP_RSS_L3_IPV4", "XDP_RSS_L3_DYNHDR"),
    "XDP_RSS_TYPE_L3_IPV6_EX": ("XDP_RSS_L3_IPV6", "XDP_RSS_L3_DYNHDR"),
    "XDP_RSS_TYPE_L4_ANY": ("XDP_RSS_L4",),
    "XDP_RSS_TYPE_L4_IPV4_TCP": ("XDP_RSS_L3_IPV4", "XDP_RSS_L4", "XDP_RSS_L4_TCP"),
    "XDP_RSS_TYPE_L4_IPV4_UDP": ("XDP_RSS_L3_IPV4", "XDP_RSS_L4", "XDP_RSS_L4_UDP"),
    "XDP_RSS_TYPE_L4_IPV4_SCTP": ("XDP_RSS_L3_IPV4", "XDP_RSS_L4", "XDP_RSS_L4_SCTP"),
    "XDP_RSS_TYPE_L4_IPV4_IPSEC": ("XDP_RSS_L3_IPV4", "XDP_RSS_L4", "XDP_RSS_L4_IPSEC"),
    "XDP_RSS_TYPE_L4_IPV4_ICMP": ("XDP_RSS_L3_IPV4", "XDP_RSS_L4", "XDP_RSS_L4_ICMP"),
    "XDP_RSS_TYPE_L4_IPV6_TCP": ("XDP_RSS_L3_IPV6", "XDP_RSS_L4", "XDP_RSS_L4_TCP"),
    "XDP_RSS_TYPE_L4_IPV6_UDP": ("XDP_RSS_L3_IPV6", "XDP_RSS_L4", "XDP_RSS_L4_UDP"),
    "XDP_RSS_TYPE_L4_IPV6_SCTP": ("XDP_RSS_L3_IPV6", "XDP_RSS_L4", "XDP_RSS_L4_SCTP"),
    "XDP_RSS_TYPE_L4_IPV6_IPSEC": ("XDP_RSS_L3_IPV6", "XDP_RSS_L4", "XDP_RSS_L4_IPSEC"),
    "XDP_RSS_TYPE_L4_IPV6_ICMP": ("XDP_RSS_L3_IPV6", "XDP_RSS_L4", "XDP_RSS_L4_ICMP"),
    "XDP_RSS_TYPE_L4_IPV6_TCP_EX": (
        "XDP_RSS_L3_IPV6", "XDP_RSS_L4", "XDP_RSS_L4_TCP", "XDP_RSS_L3_DYNHDR"),
    "XDP_RSS_TYPE_L4_IPV6_UDP_EX": (
        "XDP_RSS_L3_IPV6", "XDP_RSS_L4", "XDP_RSS_L4_UDP", "XDP_RSS_L3_DYNHDR"),
    "XDP_RSS_TYPE_L4_IPV6_SCTP_EX": (
        "XDP_RSS_L3_IPV6", "XDP_RSS_L4", "XDP_RSS_L4_SCTP", "XDP_RSS_L3_DYNHDR"),
}
# A few worked by hand (binary sums of the BIT()s above).
HAND_WORKED = {
    "XDP_RSS_TYPE_L4_IPV4_TCP": 0x019,  # 1 + 8 + 16
    "XDP_RSS_TYPE_L4_IPV6_UDP": 0x02A,  # 2 + 8 + 32
    "XDP_RSS_TYPE_L4_IPV4_ICMP": 0x109,  # 1 + 8 + 256
    "XDP_RSS_TYPE_L4_IPV6_SCTP_EX": 0x04E,  # 2 + 4 + 8 + 64
    "XDP_RSS_TYPE_L3_IPV4_OPT": 0x005,  # 1 + 4
}


@pytest.mark.rule("KFUNC-RSS-001")
def test_rss_single_bits_match_header() -> None:
    for name, bit in HEADER_BITS.items():
        assert XdpRssHashType[name] == 1 << bit, name


@pytest.mark.rule("KFUNC-RSS-001")
def test_rss_combined_types_are_ors_of_header_bits() -> None:
    for name, parts in HEADER_COMBOS.items():
        expected = 0
        for part in parts:
            expected |= 1 << HEADER_BITS[part]
        assert XdpRssHashType[name] == expected, name
        assert XDP_RSS_TYPES[name] == expected, name
    for name, value in HAND_WORKED.items():
        assert XdpRssHashType[name] == value, name


@pytest.mark.rule("KFUNC-RSS-001")
def test_rss_enum_has_exactly_the_header_names() -> None:
    assert set(XdpRssHashType.__members__) == set(HEADER_BITS) | set(HEADER_COMBOS)
    assert set(XDP_RSS_TYPES) == set(HEADER_COMBOS)
    assert XdpRssHashType["XDP_RSS_TYPE_L2"] is XdpRssHashType["XDP_RSS_TYPE_NONE"]  # an alias


# --- Transcribed from include/net/xdp.h (XDP_METADATA_KFUNC_xxx, enum xdp_rx_metadata) and
# tools/include/uapi/linux/netdev.h (enum netdev_xdp_rx_metadata), v6.17-rc3 ----------------
HEADER_KFUNC_TABLE = [
    # (enum name, enum value, netdev flag name, netdev value, kfunc, ops member)
    ("XDP_METADATA_KFUNC_RX_TIMESTAMP", 0, "NETDEV_XDP_RX_METADATA_TIMESTAMP", 1,
     "bpf_xdp_metadata_rx_timestamp", "xmo_rx_timestamp"),
    ("XDP_METADATA_KFUNC_RX_HASH", 1, "NETDEV_XDP_RX_METADATA_HASH", 2,
     "bpf_xdp_metadata_rx_hash", "xmo_rx_hash"),
    ("XDP_METADATA_KFUNC_RX_VLAN_TAG", 2, "NETDEV_XDP_RX_METADATA_VLAN_TAG", 4,
     "bpf_xdp_metadata_rx_vlan_tag", "xmo_rx_vlan_tag"),
]


@pytest.mark.rule("KFUNC-API-001")
def test_kfunc_table_matches_header() -> None:
    assert len(XDP_METADATA_KFUNCS) == len(HEADER_KFUNC_TABLE) == MAX_XDP_METADATA_KFUNC
    for row, (ename, evalue, fname, fvalue, kfunc, xmo) in zip(
        XDP_METADATA_KFUNCS, HEADER_KFUNC_TABLE, strict=True
    ):
        assert (row.id.name, int(row.id)) == (ename, evalue)
        assert (row.netdev_flag.name, int(row.netdev_flag)) == (fname, fvalue)
        assert (row.kfunc_name, row.xmo) == (kfunc, xmo)
    assert {m.name: int(m) for m in NetdevXdpRxMetadata} == {r[2]: r[3] for r in HEADER_KFUNC_TABLE}
    # The ops members named by the table are exactly struct xdp_metadata_ops' members.
    assert {f.name for f in attrs.fields(MetadataOps)} == {r[5] for r in HEADER_KFUNC_TABLE}


# --- A fake driver: data when the packet has it, -ENODATA otherwise -------------------------


@attrs.define
class FakeCtx:
    """A driver's per-packet context; the kfunc layer never looks inside."""

    ts: int | None = None
    hash: tuple[int, int] | None = None
    vlan: tuple[int, int] | None = None


@attrs.define
class FakeDriver:
    """Implements XdpMetadataOps with methods; records the contexts it was handed."""

    seen: list[Any] = attrs.field(factory=list)

    def xmo_rx_timestamp(self, ctx: FakeCtx) -> RxTimestamp:
        self.seen.append(ctx)
        return RxTimestamp(ENODATA) if ctx.ts is None else RxTimestamp(0, ctx.ts)

    def xmo_rx_hash(self, ctx: FakeCtx) -> RxHash:
        self.seen.append(ctx)
        return RxHash(ENODATA) if ctx.hash is None else RxHash(0, *ctx.hash)

    def xmo_rx_vlan_tag(self, ctx: FakeCtx) -> RxVlanTag:
        self.seen.append(ctx)
        return RxVlanTag(ENODATA) if ctx.vlan is None else RxVlanTag(0, *ctx.vlan)


def veth_like_vlan(ctx: FakeCtx) -> RxVlanTag:
    """Like veth: __vlan_hwaccel_get_tag() clears the TCI before returning -ENODATA."""
    if ctx.vlan is None:
        return RxVlanTag(ENODATA, vlan_proto=None, vlan_tci=0)
    return RxVlanTag(0, *ctx.vlan)


CALLS = (
    (bpf_xdp_metadata_rx_timestamp, RxTimestamp),
    (bpf_xdp_metadata_rx_hash, RxHash),
    (bpf_xdp_metadata_rx_vlan_tag, RxVlanTag),
)


@pytest.mark.rule("KFUNC-API-003", "KFUNC-API-002")
@pytest.mark.parametrize("ops", [None, MetadataOps()], ids=["no-ops", "all-null"])
def test_default_bodies_return_eopnotsupp_and_write_nothing(ops: MetadataOps | None) -> None:
    for call, cls in CALLS:
        trace = Trace()
        result = call(FakeCtx(ts=1, hash=(2, 3), vlan=(0x8100, 5)), ops, trace)
        assert type(result) is cls
        assert result.rc == EOPNOTSUPP
        assert all(o is None for o in result.outputs())
        assert trace.rules() == ["KFUNC-API-003"]


@pytest.mark.rule("KFUNC-CALL-001", "KFUNC-API-002")
def test_driver_is_dispatched_with_the_context_passed_through() -> None:
    drv = FakeDriver()
    ctx = FakeCtx(ts=0x1122334455667788, hash=(0xDEADBEEF, 0x019), vlan=(0x88A8, 0xA064))
    trace = Trace()
    assert bpf_xdp_metadata_rx_timestamp(ctx, drv, trace) == RxTimestamp(0, 0x1122334455667788)
    assert bpf_xdp_metadata_rx_hash(ctx, drv, trace) == RxHash(0, 0xDEADBEEF, 0x019)
    assert bpf_xdp_metadata_rx_vlan_tag(ctx, drv, trace) == RxVlanTag(0, 0x88A8, 0xA064)
    assert all(seen is ctx for seen in drv.seen) and len(drv.seen) == 3
    assert trace.rules() == ["KFUNC-API-006", "KFUNC-CALL-001"] * 3  # result checked, then used


@pytest.mark.rule("KFUNC-CALL-001", "KFUNC-API-002", "KFUNC-API-005")
def test_enodata_from_driver_leaves_outputs_untouched() -> None:
    drv, ctx = FakeDriver(), FakeCtx()
    prior = {bpf_xdp_metadata_rx_timestamp: (7,), bpf_xdp_metadata_rx_hash: (7, 8),
             bpf_xdp_metadata_rx_vlan_tag: (7, 8)}
    for call, _ in CALLS:
        result = call(ctx, drv)
        assert result.rc == ENODATA
        assert outputs_after(result, prior[call]) == prior[call]


@pytest.mark.rule("KFUNC-API-005")
def test_a_driver_may_write_an_output_on_failure() -> None:
    ops = MetadataOps(xmo_rx_vlan_tag=veth_like_vlan)
    result = bpf_xdp_metadata_rx_vlan_tag(FakeCtx(), ops)
    assert result.rc == ENODATA
    # vlan_proto untouched (prior 0xBEEF kept), vlan_tci cleared to 0 by the driver.
    assert outputs_after(result, (0xBEEF, 0x1234)) == (0xBEEF, 0)
    with pytest.raises(InvalidConfig):
        outputs_after(result, (1,))


@pytest.mark.rule("KFUNC-API-006")
@pytest.mark.parametrize(
    "ops",
    [
        MetadataOps(xmo_rx_timestamp=lambda ctx: RxTimestamp(1, 5)),  # positive rc
        MetadataOps(xmo_rx_timestamp=lambda ctx: RxTimestamp(0)),  # success, nothing written
        MetadataOps(xmo_rx_timestamp=lambda ctx: RxTimestamp(0, 1 << 64)),  # > u64
        MetadataOps(xmo_rx_hash=lambda ctx: RxHash(0, 1 << 32, 0)),  # > u32
        MetadataOps(xmo_rx_hash=lambda ctx: RxHash(0, 5)),  # rss_type missing
        MetadataOps(xmo_rx_vlan_tag=lambda ctx: RxVlanTag(0, 0x8100, 0x10000)),  # > u16
        MetadataOps(xmo_rx_vlan_tag=lambda ctx: RxVlanTag(ENODATA, -1)),  # negative output
    ],
)
def test_unrepresentable_driver_results_are_refused(ops: MetadataOps) -> None:
    with pytest.raises(InvalidConfig) as info:
        for call, _ in CALLS:
            call(None, ops)
    assert info.value.rule == "KFUNC-API-006"


@pytest.mark.rule("KFUNC-CALL-001", "KFUNC-API-006")
@given(
    ts=st.integers(0, 2**64 - 1),
    h=st.integers(0, 2**32 - 1),
    t=st.sampled_from(sorted(set(XDP_RSS_TYPES.values()))),
    proto=st.integers(0, 0xFFFF),
    tci=st.integers(0, 0xFFFF),
)
def test_driver_values_pass_through_unchanged(ts: int, h: int, t: int, proto: int,
                                              tci: int) -> None:
    ctx = FakeCtx(ts=ts, hash=(h, t), vlan=(proto, tci))
    drv = FakeDriver()
    assert bpf_xdp_metadata_rx_timestamp(ctx, drv).outputs() == (ts,)
    assert bpf_xdp_metadata_rx_hash(ctx, drv).outputs() == (h, t)
    assert bpf_xdp_metadata_rx_vlan_tag(ctx, drv).outputs() == (proto, tci)


@pytest.mark.rule("KFUNC-API-004")
@pytest.mark.parametrize("tag", [Dot1Q, Dot1AD])
def test_vlan_proto_is_the_tpid_as_it_lies_on_the_wire(tag: type) -> None:
    # scapy is the independent reference: the TPID field of an 802.1Q/802.1ad frame.
    frame = bytes(Ether(dst="ff:ff:ff:ff:ff:ff", src="02:00:00:00:00:01") / tag(vlan=100))
    wire_tpid = frame[12:14]
    (host_value,) = struct.unpack("!H", wire_tpid)  # be16_to_cpu
    result = RxVlanTag(0, host_value, 100)
    assert result.vlan_proto_bytes() == wire_tpid
    assert host_value in (0x8100, 0x88A8)
    assert RxVlanTag(ENODATA).vlan_proto_bytes() is None


@pytest.mark.rule("KFUNC-API-004")
def test_vlan_tci_is_host_order_with_pcp_dei_vid() -> None:
    # scapy builds the 802.1Q header; the TCI follows the TPID, big-endian on the wire.
    frame = bytes(ETH / Dot1Q(prio=5, dei=1, vlan=0x123))
    tci = int.from_bytes(frame[14:16], "big")
    result = bpf_xdp_metadata_rx_vlan_tag(FakeCtx(vlan=(0x8100, tci)), FakeDriver())
    assert result.vlan_tci is not None
    assert (result.vlan_tci >> 13, (result.vlan_tci >> 12) & 1, result.vlan_tci & 0xFFF) == (
        5, 1, 0x123)


# --- RSS hash type validity ---------------------------------------------------------------


@pytest.mark.rule("KFUNC-RSS-002", "KFUNC-RSS-003")
def test_every_named_type_is_valid() -> None:
    for name, value in XDP_RSS_TYPES.items():
        assert rss_hash_type_violations(value) == [], name


@pytest.mark.rule("KFUNC-RSS-002")
@pytest.mark.parametrize("proto", ["XDP_RSS_L4_TCP", "XDP_RSS_L4_UDP", "XDP_RSS_L4_SCTP",
                                   "XDP_RSS_L4_IPSEC", "XDP_RSS_L4_ICMP"])
def test_l4_protocol_bit_needs_xdp_rss_l4(proto: str) -> None:
    bit = 1 << HEADER_BITS[proto]
    assert not is_valid_rss_hash_type(bit | 1)  # IPv4 + proto, no L4 bit
    assert "L4 protocol bit without XDP_RSS_L4" in rss_hash_type_violations(bit)
    assert is_valid_rss_hash_type(bit | (1 << 3) | 1)


@pytest.mark.rule("KFUNC-RSS-003")
@pytest.mark.parametrize(
    ("value", "valid"),
    [
        (0x200, False),  # BIT(9) is not defined
        (-1, False),
        (0x8 | 0x10 | 0x20, False),  # TCP and UDP
        (0x1 | 0x2, False),  # IPv4 and IPv6
        (0x4, False),  # DYNHDR alone
        (0x4 | 0x8, False),  # DYNHDR + L4 but no family
        (0x1 | 0x4 | 0x8 | 0x10, True),  # IPv4 TCP with options: unnamed, consistent
        (0x8, True),  # L4_ANY
    ],
)
def test_rss_consistency(value: int, valid: bool) -> None:
    assert is_valid_rss_hash_type(value) is valid


def _independent_rss_ok(v: int) -> bool:
    """The KFUNC-RSS-002/-003 rules restated over a bit string (written differently)."""
    bits = format(v, "09b")[::-1]  # bits[i] is BIT(i)
    fam = bits[0:2].count("1")
    protos = bits[4:9].count("1")
    return fam <= 1 and protos <= 1 and (protos == 0 or bits[3] == "1") and (
        bits[2] == "0" or fam == 1)


@pytest.mark.rule("KFUNC-RSS-002", "KFUNC-RSS-003")
@given(st.integers(0, 0x1FF))
def test_rss_validator_agrees_with_independent_restatement(v: int) -> None:
    assert is_valid_rss_hash_type(v) is _independent_rss_ok(v)


# --- Devices used by the load / attach / map tables ----------------------------------------

FULL_OPS = FakeDriver()
HASH_ONLY = MetadataOps(xmo_rx_hash=FakeDriver().xmo_rx_hash)


def world() -> tuple[BpfDevices, dict[str, NetDevice]]:
    devs = {
        "eth0": NetDevice(2, "eth0", FULL_OPS),  # native XDP driver with all three members
        "gen0": NetDevice(3, "gen0", None, has_ndo_bpf=False),  # no native XDP
        "nsim0": NetDevice(4, "nsim0", None, offdev="nsim-A"),  # offload-capable, port 0
        "nsim1": NetDevice(5, "nsim1", None, offdev="nsim-A"),  # same offload device
        "nsim2": NetDevice(6, "nsim2", None, offdev="nsim-B"),  # another offload device
        "noops": NetDevice(7, "noops", None),  # native XDP, no xdp_metadata_ops
        "part0": NetDevice(8, "part0", HASH_ONLY),  # only xmo_rx_hash
        "eth1": NetDevice(9, "eth1", FakeDriver()),
    }
    bpf = BpfDevices()
    for dev in devs.values():
        bpf.register_netdev(dev)
    return bpf, devs


@pytest.mark.rule("KFUNC-API-007")
def test_netlink_rx_metadata_features_follow_the_ops() -> None:
    _, d = world()
    ts, hs, vl = 1, 2, 4  # transcribed uapi values, see HEADER_KFUNC_TABLE
    assert xdp_rx_metadata_features(d["eth0"]) == ts | hs | vl
    assert xdp_rx_metadata_features(d["part0"]) == hs
    assert xdp_rx_metadata_features(d["noops"]) == 0
    assert xdp_rx_metadata_features(NetDevice(1, "x", MetadataOps())) == 0
    # xdp_features (NETDEV_XDP_ACT_*) plays no part.
    assert xdp_rx_metadata_features(NetDevice(1, "x", None, xdp_features=0x7F)) == 0


# --- KFUNC-LOAD-*: table of BPF_PROG_LOAD cases ---------------------------------------------
BO = BPF_F_XDP_DEV_BOUND_ONLY
REQ = "metadata kfuncs require device-bound program\n"
OFF = "metadata kfuncs can't be offloaded\n"

LOAD_CASES: list[tuple[str, tuple[str, ...], BpfProg, int, str]] = [
    # (id, rules, prog, rc, verifier message)
    ("plain-xdp", ("KFUNC-LOAD-002",), BpfProg(), 0, ""),
    ("unknown-flag", ("KFUNC-LOAD-001",), BpfProg(prog_flags=1 << 8), EINVAL, ""),
    ("unknown-flag-before-binding", ("KFUNC-LOAD-001",),
     BpfProg(prog_flags=BO | 1 << 8, prog_ifindex=3), EINVAL, ""),
    ("bound-only-flag-without-ifindex", ("KFUNC-LOAD-002",), BpfProg(prog_flags=BO), 0, ""),
    ("bound-only-flag-without-ifindex-kfunc", ("KFUNC-LOAD-002", "KFUNC-LOAD-005"),
     BpfProg(prog_flags=BO, calls_kfuncs=frozenset({HASH})), EINVAL, REQ),
    ("unbound-xdp-kfunc", ("KFUNC-LOAD-005",),
     BpfProg(calls_kfuncs=frozenset({TS})), EINVAL, REQ),
    ("unbound-cls-kfunc", ("KFUNC-LOAD-005",),
     BpfProg(prog_type=BPF_PROG_TYPE_SCHED_CLS, calls_kfuncs=ALL), EINVAL, REQ),
    ("kprobe-bound", ("KFUNC-LOAD-003",),
     BpfProg(prog_type=2, prog_flags=BO, prog_ifindex=2), EINVAL, ""),
    ("sleepable-bound", ("KFUNC-LOAD-003",),
     BpfProg(prog_flags=BO | BPF_F_SLEEPABLE, prog_ifindex=2), EINVAL, ""),
    ("token-fd-bound", ("KFUNC-LOAD-003",),
     BpfProg(prog_flags=BO | BPF_F_TOKEN_FD, prog_ifindex=2), EINVAL, ""),
    ("frags-offload", ("KFUNC-LOAD-003",),
     BpfProg(prog_flags=BPF_F_XDP_HAS_FRAGS, prog_ifindex=4), EINVAL, ""),
    ("cls-bound-only", ("KFUNC-LOAD-003",),
     BpfProg(prog_type=BPF_PROG_TYPE_SCHED_CLS, prog_flags=BO, prog_ifindex=2), EINVAL, ""),
    ("no-such-ifindex", ("KFUNC-LOAD-003",), BpfProg(prog_flags=BO, prog_ifindex=99),
     EINVAL, ""),
    ("no-ndo-bpf", ("KFUNC-LOAD-003",), BpfProg(prog_flags=BO, prog_ifindex=3), EOPNOTSUPP, ""),
    ("offload-on-plain-nic", ("KFUNC-LOAD-004",), BpfProg(prog_ifindex=2), EINVAL, ""),
    ("offload-on-nsim", ("KFUNC-LOAD-004",), BpfProg(prog_ifindex=4), 0, ""),
    ("offload-kfunc", ("KFUNC-LOAD-005",),
     BpfProg(prog_ifindex=4, calls_kfuncs=frozenset({VLAN})), EINVAL, OFF),
    ("offload-cls", ("KFUNC-LOAD-004",),
     BpfProg(prog_type=BPF_PROG_TYPE_SCHED_CLS, prog_ifindex=5), 0, ""),
    ("offload-cls-kfunc", ("KFUNC-LOAD-005",),
     BpfProg(prog_type=BPF_PROG_TYPE_SCHED_CLS, prog_ifindex=5, calls_kfuncs=ALL), EINVAL, OFF),
    ("bound-all-kfuncs", ("KFUNC-LOAD-002", "KFUNC-LOAD-005"),
     BpfProg(prog_flags=BO, prog_ifindex=2, calls_kfuncs=ALL), 0, ""),
    ("bound-frags", ("KFUNC-LOAD-003",),
     BpfProg(prog_flags=BO | BPF_F_XDP_HAS_FRAGS, prog_ifindex=2), 0, ""),
    ("bound-only-on-nsim", ("KFUNC-LOAD-004",),
     BpfProg(prog_flags=BO, prog_ifindex=4, calls_kfuncs=ALL), 0, ""),
]


@pytest.mark.rule("KFUNC-LOAD-001", "KFUNC-LOAD-002", "KFUNC-LOAD-003", "KFUNC-LOAD-004",
                  "KFUNC-LOAD-005")
@pytest.mark.parametrize(("rules", "prog", "rc", "msg"), [c[1:] for c in LOAD_CASES],
                         ids=[c[0] for c in LOAD_CASES])
def test_prog_load_table(rules: tuple[str, ...], prog: BpfProg, rc: int, msg: str) -> None:
    bpf, _ = world()
    trace = Trace()
    out = bpf.prog_load(prog, trace)
    assert (out.rc, out.msg) == (rc, msg)
    assert (out.prog is None) == (rc != 0)
    if rc:
        assert set(rules) & set(trace.rules())
    if out.prog is not None:
        bound = prog.prog_ifindex != 0
        assert out.prog.dev_bound is bound
        assert out.prog.offloaded is (bound and not prog.prog_flags & BO)


@pytest.mark.rule("KFUNC-LOAD-004")
def test_bound_only_load_registers_and_free_unregisters() -> None:
    bpf, _ = world()
    before = set(bpf.offdevs)
    p1 = bpf.prog_load(BpfProg(prog_flags=BO, prog_ifindex=2)).prog
    p2 = bpf.prog_load(BpfProg(prog_flags=BO, prog_ifindex=2)).prog
    assert p1 is not None and p2 is not None
    assert set(bpf.offdevs) == before | {2} and bpf.offdevs[2].offdev is None
    bpf.prog_free(p1)
    assert 2 in bpf.offdevs
    bpf.prog_free(p2)
    assert set(bpf.offdevs) == before
    # An offload device's entry survives its programs.
    p3 = bpf.prog_load(BpfProg(prog_flags=BO, prog_ifindex=4)).prog
    assert p3 is not None
    bpf.prog_free(p3)
    assert bpf.offdevs[4].offdev == "nsim-A"


@pytest.mark.rule("KFUNC-LOAD-007")
@given(
    prog_type=st.sampled_from([BPF_PROG_TYPE_XDP, BPF_PROG_TYPE_SCHED_CLS, 2]),
    flags=st.sets(st.sampled_from([BO, BPF_F_XDP_HAS_FRAGS, BPF_F_SLEEPABLE, 1 << 8])),
    ifindex=st.sampled_from([0, 2, 3, 4, 7, 99]),
    kfuncs=st.frozensets(st.sampled_from(sorted(ALL))),
)
def test_failed_load_leaves_no_binding(prog_type: int, flags: set[int], ifindex: int,
                                       kfuncs: frozenset[XdpRxMetadata]) -> None:
    bpf, _ = world()
    before = {k: (v.offdev, list(v.progs)) for k, v in bpf.offdevs.items()}
    prog = BpfProg(prog_type=prog_type, prog_flags=sum(flags), prog_ifindex=ifindex,
                   calls_kfuncs=kfuncs)
    out = bpf.prog_load(prog)
    after = {k: (v.offdev, list(v.progs)) for k, v in bpf.offdevs.items()}
    if out.rc != 0:
        assert after == before
    else:
        assert out.prog is not None
        # Any kfunc call implies a bound, non-offloaded program (KFUNC-LOAD-005).
        assert not kfuncs or (out.prog.dev_bound and not out.prog.offloaded)


@pytest.mark.rule("KFUNC-LOAD-006", "KFUNC-API-003", "KFUNC-CALL-001")
def test_calls_resolve_to_the_bound_device_or_the_default() -> None:
    bpf, _ = world()
    ctx = FakeCtx(ts=11, hash=(22, 0x02A), vlan=(0x8100, 33))
    full = bpf.prog_load(BpfProg(prog_flags=BO, prog_ifindex=2, calls_kfuncs=ALL)).prog
    part = bpf.prog_load(BpfProg(prog_flags=BO, prog_ifindex=8, calls_kfuncs=ALL)).prog
    noop = bpf.prog_load(BpfProg(prog_flags=BO, prog_ifindex=7, calls_kfuncs=ALL)).prog
    assert full is not None and part is not None and noop is not None
    assert full.call_rx_timestamp(ctx) == RxTimestamp(0, 11)
    assert full.call_rx_hash(ctx) == RxHash(0, 22, 0x02A)
    assert full.call_rx_vlan_tag(ctx) == RxVlanTag(0, 0x8100, 33)
    # part0 implements only the hash: the other two keep the default body.
    assert part.call_rx_timestamp(ctx) == RxTimestamp(EOPNOTSUPP)
    assert part.call_rx_hash(ctx) == RxHash(0, 22, 0x02A)
    assert part.call_rx_vlan_tag(ctx) == RxVlanTag(EOPNOTSUPP)
    for call in (noop.call_rx_timestamp, noop.call_rx_hash, noop.call_rx_vlan_tag):
        assert call(ctx).rc == EOPNOTSUPP


@pytest.mark.rule("KFUNC-LOAD-006")
def test_resolution_is_a_load_time_snapshot() -> None:
    bpf, d = world()
    only_hash = bpf.prog_load(BpfProg(prog_flags=BO, prog_ifindex=2,
                                      calls_kfuncs=frozenset({HASH}))).prog
    assert only_hash is not None
    assert only_hash.resolved.xmo_rx_timestamp is None  # not called, not resolved
    with pytest.raises(InvalidConfig):
        only_hash.call_rx_timestamp(FakeCtx(ts=1))
    # Giving the device new ops after the load changes nothing for the loaded program.
    before = bpf.prog_load(BpfProg(prog_flags=BO, prog_ifindex=7, calls_kfuncs=ALL)).prog
    assert before is not None
    d["noops"].xdp_metadata_ops = FakeDriver()
    assert before.call_rx_timestamp(FakeCtx(ts=5)).rc == EOPNOTSUPP
    after = bpf.prog_load(BpfProg(prog_flags=BO, prog_ifindex=7, calls_kfuncs=ALL)).prog
    assert after is not None and after.call_rx_timestamp(FakeCtx(ts=5)) == RxTimestamp(0, 5)


# --- KFUNC-ATTACH-*: table of dev_xdp_attach cases ------------------------------------------


def load(bpf: BpfDevices, **kw: Any) -> LoadedBpfProg:
    out = bpf.prog_load(BpfProg(**kw))
    assert out.prog is not None, out
    return out.prog


PROGS: dict[str, dict[str, Any]] = {
    "bound_eth0": {"prog_flags": BO, "prog_ifindex": 2, "calls_kfuncs": ALL},
    "bound_nsim0": {"prog_flags": BO, "prog_ifindex": 4},
    "offl_nsim0": {"prog_ifindex": 4},
    "plain": {},
    "plain_devmap": {"expected_attach_type": BPF_XDP_DEVMAP},
    "plain_cpumap": {"expected_attach_type": BPF_XDP_CPUMAP},
    "cls": {"prog_type": BPF_PROG_TYPE_SCHED_CLS},
}

ATTACH_CASES: list[tuple[str, str, str, str, int, int, str]] = [
    # (id, rule, prog, device, flags, rc, extack)
    ("bound-own-dev-default", "KFUNC-ATTACH-002", "bound_eth0", "eth0", 0, 0, ""),
    ("bound-own-dev-native", "KFUNC-ATTACH-005", "bound_eth0", "eth0", XDP_FLAGS_DRV_MODE, 0,
     ""),
    ("bound-own-dev-generic", "KFUNC-ATTACH-004", "bound_eth0", "eth0", XDP_FLAGS_SKB_MODE,
     EINVAL, "Can't attach device-bound programs in generic mode"),
    ("bound-own-dev-hw", "KFUNC-ATTACH-004", "bound_eth0", "eth0", XDP_FLAGS_HW_MODE, 0, ""),
    ("bound-other-dev", "KFUNC-ATTACH-004", "bound_eth0", "eth1", XDP_FLAGS_DRV_MODE, EINVAL,
     "Program bound to different device"),
    ("bound-other-dev-generic", "KFUNC-ATTACH-004", "bound_eth0", "eth1", XDP_FLAGS_SKB_MODE,
     EINVAL, "Program bound to different device"),
    ("bound-nsim-same-offdev", "KFUNC-ATTACH-003", "bound_nsim0", "nsim1", 0, 0, ""),
    ("bound-nsim-other-offdev", "KFUNC-ATTACH-004", "bound_nsim0", "nsim2", 0, EINVAL,
     "Program bound to different device"),
    ("offloaded-native", "KFUNC-ATTACH-004", "offl_nsim0", "nsim0", XDP_FLAGS_DRV_MODE, EINVAL,
     "Using offloaded program without HW_MODE flag is not supported"),
    ("offloaded-default-mode", "KFUNC-ATTACH-004", "offl_nsim0", "nsim0", 0, EINVAL,
     "Using offloaded program without HW_MODE flag is not supported"),
    ("offloaded-generic", "KFUNC-ATTACH-001", "offl_nsim0", "nsim0", XDP_FLAGS_SKB_MODE,
     EINVAL, "offloaded program fetched for generic mode"),
    ("offloaded-hw", "KFUNC-ATTACH-005", "offl_nsim0", "nsim0", XDP_FLAGS_HW_MODE, 0, ""),
    ("offloaded-hw-sibling-port", "KFUNC-ATTACH-003", "offl_nsim0", "nsim1", XDP_FLAGS_HW_MODE,
     0, ""),
    ("plain-generic-only-dev", "KFUNC-ATTACH-002", "plain", "gen0", 0, 0, ""),
    ("plain-native-no-ndo-bpf", "KFUNC-ATTACH-005", "plain", "gen0", XDP_FLAGS_DRV_MODE,
     -errno.EOPNOTSUPP, "Underlying driver does not support XDP in native mode"),
    ("two-mode-flags", "KFUNC-ATTACH-002", "plain", "eth0",
     XDP_FLAGS_SKB_MODE | XDP_FLAGS_DRV_MODE, EINVAL, "Only one XDP mode flag can be set"),
    ("not-xdp", "KFUNC-ATTACH-001", "cls", "eth0", 0, EINVAL, "not an XDP program"),
    ("devmap-prog", "KFUNC-ATTACH-004", "plain_devmap", "eth0", 0, EINVAL,
     "BPF_XDP_DEVMAP programs can not be attached to a device"),
    ("cpumap-prog", "KFUNC-ATTACH-004", "plain_cpumap", "eth0", 0, EINVAL,
     "BPF_XDP_CPUMAP programs can not be attached to a device"),
]


@pytest.mark.rule("KFUNC-ATTACH-001", "KFUNC-ATTACH-002", "KFUNC-ATTACH-003", "KFUNC-ATTACH-004",
                  "KFUNC-ATTACH-005")
@pytest.mark.parametrize(("rule", "pname", "dname", "flags", "rc", "msg"),
                         [c[1:] for c in ATTACH_CASES], ids=[c[0] for c in ATTACH_CASES])
def test_dev_xdp_attach_table(rule: str, pname: str, dname: str, flags: int, rc: int,
                              msg: str) -> None:
    bpf, d = world()
    prog = load(bpf, **PROGS[pname])
    dev = d[dname]
    trace = Trace()
    out = bpf.dev_xdp_attach(dev, prog, flags, trace)
    assert (out.rc, out.msg) == (rc, msg)
    assert rule in trace.rules() or rc == 0
    if rc == 0:
        assert dev.xdp_state[bpf.dev_xdp_mode(dev, flags)] is prog
    else:
        assert dev.xdp_state == {}


@pytest.mark.rule("KFUNC-ATTACH-002")
def test_mode_selection() -> None:
    _, d = world()
    mode = BpfDevices.dev_xdp_mode
    assert mode(d["eth0"], 0) == XdpMode.XDP_MODE_DRV
    assert mode(d["gen0"], 0) == XdpMode.XDP_MODE_SKB
    assert mode(d["gen0"], XDP_FLAGS_HW_MODE | XDP_FLAGS_SKB_MODE) == XdpMode.XDP_MODE_HW
    assert mode(d["eth0"], XDP_FLAGS_DRV_MODE | XDP_FLAGS_SKB_MODE) == XdpMode.XDP_MODE_DRV


@pytest.mark.rule("KFUNC-ATTACH-004", "KFUNC-ATTACH-002")
def test_attach_checks_that_depend_on_device_state() -> None:
    bpf, d = world()
    plain, bound = load(bpf, **PROGS["plain"]), load(bpf, **PROGS["bound_eth0"])
    eth0 = d["eth0"]
    assert bpf.dev_xdp_attach(eth0, plain, XDP_FLAGS_SKB_MODE).rc == 0
    # Native and generic cannot coexist; this is checked before the device-bound checks.
    out = bpf.dev_xdp_attach(eth0, bound, XDP_FLAGS_DRV_MODE)
    assert out == attrs.evolve(out, rc=-errno.EEXIST,
                               msg="Native and generic XDP can't be active at the same time")
    assert eth0.xdp_state == {XdpMode.XDP_MODE_SKB: plain}
    # UPDATE_IF_NOEXIST with a program in place.
    out = bpf.dev_xdp_attach(eth0, plain, XDP_FLAGS_SKB_MODE | XDP_FLAGS_UPDATE_IF_NOEXIST)
    assert out.rc == -errno.EBUSY
    # Offload port with programs in HW and native mode: an unset mode is ambiguous.
    nsim0 = d["nsim0"]
    offl = load(bpf, **PROGS["offl_nsim0"])
    assert bpf.dev_xdp_attach(nsim0, offl, XDP_FLAGS_HW_MODE).rc == 0
    assert bpf.dev_xdp_attach(nsim0, plain, XDP_FLAGS_DRV_MODE).rc == 0
    out = bpf.dev_xdp_attach(nsim0, plain, 0)
    assert (out.rc, out.msg) == (EINVAL, "More than one program loaded, unset mode is ambiguous")


@pytest.mark.rule("KFUNC-ATTACH-003")
def test_bound_only_programs_on_two_devices_match_each_other() -> None:
    # The source compares two NULL offdev pointers as equal (see SPEC open questions).
    bpf, d = world()
    bound = load(bpf, **PROGS["bound_eth0"])
    assert not bpf.offload_dev_match(bound, d["eth1"])
    other = load(bpf, prog_flags=BO, prog_ifindex=9)  # eth1 gets a bound-only entry
    assert bpf.offload_dev_match(bound, d["eth1"])
    assert bpf.dev_xdp_attach(d["eth1"], bound, XDP_FLAGS_DRV_MODE).rc == 0
    bpf.prog_free(other)
    assert not bpf.offload_dev_match(bound, d["eth1"])
    assert not bpf.offload_dev_match(load(bpf, **PROGS["plain"]), d["eth0"])


@pytest.mark.rule("KFUNC-ATTACH-003")
def test_later_trees_match_other_devices_only_for_offloaded_programs() -> None:
    # kernel/bpf/offload.c: __bpf_offload_dev_match() in 6.12.117 and 7.3.4 returns false
    # for a program that is not offloaded once the device is not its own; v6.17-rc3 lacks
    # that test.  Same world, both readings side by side.
    for fixed in (False, True):
        bpf, d = world()
        bpf.dev_match_requires_offload = fixed
        bound = load(bpf, **PROGS["bound_eth0"])
        load(bpf, prog_flags=BO, prog_ifindex=9)  # eth1: a bound-only entry too
        bound_nsim = load(bpf, **PROGS["bound_nsim0"])
        offl = load(bpf, **PROGS["offl_nsim0"])
        assert bpf.offload_dev_match(bound, d["eth0"])
        assert bpf.offload_dev_match(bound, d["eth1"]) is not fixed
        assert bpf.offload_dev_match(bound_nsim, d["nsim1"]) is not fixed
        assert bpf.offload_dev_match(offl, d["nsim1"])  # ports of one offload device
        assert not bpf.offload_dev_match(offl, d["nsim2"])
        out = bpf.dev_xdp_attach(d["eth1"], bound, XDP_FLAGS_DRV_MODE)
        assert (out.rc, out.msg) == ((EINVAL, "Program bound to different device") if fixed
                                     else (0, ""))


# --- KFUNC-MAP-*: table of program-map insertions -------------------------------------------

MAP_PROGS: dict[str, dict[str, Any]] = {
    "plain": {"expected_attach_type": BPF_XDP},
    "plain_devmap": {"expected_attach_type": BPF_XDP_DEVMAP},
    "plain_cpumap": {"expected_attach_type": BPF_XDP_CPUMAP},
    "bound": {"prog_flags": BO, "prog_ifindex": 2, "calls_kfuncs": ALL},
    "bound_nokfunc": {"prog_flags": BO, "prog_ifindex": 2},
    "bound_devmap": {"prog_flags": BO, "prog_ifindex": 2, "expected_attach_type": BPF_XDP_DEVMAP},
    "bound_cpumap": {"prog_flags": BO, "prog_ifindex": 2, "expected_attach_type": BPF_XDP_CPUMAP},
    "offloaded": {"prog_ifindex": 4},
    "offloaded_devmap": {"prog_ifindex": 4, "expected_attach_type": BPF_XDP_DEVMAP},
    "ext": {"prog_type": BPF_PROG_TYPE_EXT},
    "cls": {"prog_type": BPF_PROG_TYPE_SCHED_CLS},
}
PA, DM, DH, CM = (BPF_MAP_TYPE_PROG_ARRAY, BPF_MAP_TYPE_DEVMAP, BPF_MAP_TYPE_DEVMAP_HASH,
                  BPF_MAP_TYPE_CPUMAP)
MAP_CASES: list[tuple[str, int, int]] = [
    ("plain", PA, 0),
    ("cls", PA, 0),
    ("ext", PA, EINVAL),
    ("bound", PA, EINVAL),
    ("bound_nokfunc", PA, EINVAL),
    ("offloaded", PA, EINVAL),
    ("plain_devmap", DM, 0),
    ("plain_devmap", DH, 0),
    ("plain", DM, EINVAL),
    ("cls", DM, EINVAL),
    ("bound_devmap", DM, EINVAL),
    ("bound_devmap", DH, EINVAL),
    ("offloaded_devmap", DM, EINVAL),
    ("plain_cpumap", CM, 0),
    ("plain", CM, -errno.ENOMEM),
    ("bound_cpumap", CM, -errno.ENOMEM),
    ("cls", CM, -errno.ENOMEM),
]


@pytest.mark.rule("KFUNC-MAP-001", "KFUNC-MAP-002", "KFUNC-MAP-003", "KFUNC-MAP-004")
@pytest.mark.parametrize(("pname", "map_type", "rc"), MAP_CASES,
                         ids=[f"{p}-{m}" for p, m, _ in MAP_CASES])
def test_map_update_prog_table(pname: str, map_type: int, rc: int) -> None:
    """The table is 6.18's; from v7.0 (48e11bad9a1f) a CPUMAP refusal reads -EINVAL."""
    bpf, _ = world()
    assert map_update_prog(map_type, load(bpf, **MAP_PROGS[pname]),
                           kernel=parse_kernel("6.18")) == rc
    newer = -errno.EINVAL if rc == -errno.ENOMEM else rc
    assert map_update_prog(map_type, load(bpf, **MAP_PROGS[pname]),
                           kernel=parse_kernel("7.3")) == newer


@pytest.mark.rule("KFUNC-MAP-001")
def test_no_device_bound_program_is_map_compatible() -> None:
    bpf, _ = world()
    for name, kw in MAP_PROGS.items():
        prog = load(bpf, **kw)
        assert bpf_prog_map_compatible(prog) is (kw.get("prog_ifindex", 0) == 0), name
    with pytest.raises(InvalidConfig):
        map_update_prog(2, load(bpf))  # BPF_MAP_TYPE_ARRAY holds no programs


@pytest.mark.rule("KFUNC-ATTACH-004", "KFUNC-ATTACH-005")
def test_later_trees_check_the_new_program_in_dev_xdp_install() -> None:
    # net/core/dev.c: v6.17-rc3 checks the new program in dev_xdp_attach(), before the
    # ndo_bpf lookup; 6.12.117 and 7.3.4 check it in dev_xdp_install(), which runs only
    # when the program changes and after "Underlying driver does not support XDP in
    # native mode".  A DEVMAP program on a device without ndo_bpf shows the difference.
    for in_install, expected in ((False, (EINVAL, "BPF_XDP_DEVMAP programs can not be "
                                          "attached to a device")),
                                 (True, (-errno.EOPNOTSUPP, "Underlying driver does not "
                                         "support XDP in native mode"))):
        bpf, d = world()
        bpf.attach_checks_in_install = in_install
        prog = load(bpf, **PROGS["plain_devmap"])
        out = bpf.dev_xdp_attach(d["gen0"], prog, XDP_FLAGS_DRV_MODE)
        assert (out.rc, out.msg) == expected
        assert d["gen0"].xdp_state == {}
    # Same outcome for every row of the attach table when the device has ndo_bpf.
    for case in ATTACH_CASES:
        _, _, pname, dname, flags, rc, msg = case
        if dname == "gen0":
            continue
        bpf, d = world()
        bpf.attach_checks_in_install = True
        out = bpf.dev_xdp_attach(d[dname], load(bpf, **PROGS[pname]), flags)
        assert (out.rc, out.msg) == (rc, msg), case[0]

"""XDP RX-metadata kfuncs: the driver plug-in point and the device-bound rules (SPEC: KFUNC-*).

An XDP program reads hardware metadata (RX timestamp, RSS hash and type, stripped VLAN tag)
by calling three kfuncs.  Their bodies in ``net/core/xdp.c`` only return ``-EOPNOTSUPP``;
the real work is done by the driver's ``struct xdp_metadata_ops``, to which the verifier
redirects each call when the program is loaded *device-bound* to that driver's net device.
This module models:

* the constants: ``enum xdp_rss_hash_type``, ``enum xdp_rx_metadata``, the uapi
  ``enum netdev_xdp_rx_metadata`` bits and the ``XDP_METADATA_KFUNC_xxx`` table tying them
  together (KFUNC-API-001, KFUNC-RSS-*);
* the driver interface :class:`XdpMetadataOps` and the kfunc entry points with the default
  bodies (KFUNC-API-*, KFUNC-CALL-001).  The per-packet context is opaque here: whatever a
  driver model passes is handed unchanged to its ops;
* the device-bound life cycle as errno-returning functions: loading (KFUNC-LOAD-*),
  attaching to a device (KFUNC-ATTACH-*) and inserting into program maps (KFUNC-MAP-*).

Kernel read: ``Kingxukai/linux`` at v6.17-rc3 (SPEC.md, area "XDP RX-metadata kfuncs",
lists the files); read again beside 6.12.117 and 7.3.4, see ``docs/readings/xdp-kfunc.md``.
Each driver model (mlx5, fec, veth, tun) implements :class:`XdpMetadataOps`.
"""

from __future__ import annotations

import enum
import errno
from collections.abc import Callable
from typing import Any, Protocol

import attrs

from reference.errors import InvalidConfig
from reference.kernel import DEFAULT_KERNEL, KernelVersion, gate
from reference.trace import Trace, emit

U16_MAX = 0xFFFF
U32_MAX = 0xFFFF_FFFF
U64_MAX = 0xFFFF_FFFF_FFFF_FFFF


# --- Constants ---------------------------------------------------------------------------


class XdpRssHashType(enum.IntFlag):
    """``enum xdp_rss_hash_type`` (include/net/xdp.h), every name (KFUNC-RSS-001).

    The first nine names are single bits; the ``XDP_RSS_TYPE_*`` names are the combinations
    drivers map their hardware RSS types to, and the generic model builds its hash type
    from these bits (RSS-TYPE-001).  ``XDP_RSS_TYPE_L2`` is an alias of ``NONE``.
    """

    XDP_RSS_L3_IPV4 = 1 << 0
    XDP_RSS_L3_IPV6 = 1 << 1
    XDP_RSS_L3_DYNHDR = 1 << 2
    XDP_RSS_L4 = 1 << 3
    XDP_RSS_L4_TCP = 1 << 4
    XDP_RSS_L4_UDP = 1 << 5
    XDP_RSS_L4_SCTP = 1 << 6
    XDP_RSS_L4_IPSEC = 1 << 7
    XDP_RSS_L4_ICMP = 1 << 8

    XDP_RSS_TYPE_NONE = 0
    XDP_RSS_TYPE_L2 = XDP_RSS_TYPE_NONE

    XDP_RSS_TYPE_L3_IPV4 = XDP_RSS_L3_IPV4
    XDP_RSS_TYPE_L3_IPV6 = XDP_RSS_L3_IPV6
    XDP_RSS_TYPE_L3_IPV4_OPT = XDP_RSS_L3_IPV4 | XDP_RSS_L3_DYNHDR
    XDP_RSS_TYPE_L3_IPV6_EX = XDP_RSS_L3_IPV6 | XDP_RSS_L3_DYNHDR

    XDP_RSS_TYPE_L4_ANY = XDP_RSS_L4
    XDP_RSS_TYPE_L4_IPV4_TCP = XDP_RSS_L3_IPV4 | XDP_RSS_L4 | XDP_RSS_L4_TCP
    XDP_RSS_TYPE_L4_IPV4_UDP = XDP_RSS_L3_IPV4 | XDP_RSS_L4 | XDP_RSS_L4_UDP
    XDP_RSS_TYPE_L4_IPV4_SCTP = XDP_RSS_L3_IPV4 | XDP_RSS_L4 | XDP_RSS_L4_SCTP
    XDP_RSS_TYPE_L4_IPV4_IPSEC = XDP_RSS_L3_IPV4 | XDP_RSS_L4 | XDP_RSS_L4_IPSEC
    XDP_RSS_TYPE_L4_IPV4_ICMP = XDP_RSS_L3_IPV4 | XDP_RSS_L4 | XDP_RSS_L4_ICMP

    XDP_RSS_TYPE_L4_IPV6_TCP = XDP_RSS_L3_IPV6 | XDP_RSS_L4 | XDP_RSS_L4_TCP
    XDP_RSS_TYPE_L4_IPV6_UDP = XDP_RSS_L3_IPV6 | XDP_RSS_L4 | XDP_RSS_L4_UDP
    XDP_RSS_TYPE_L4_IPV6_SCTP = XDP_RSS_L3_IPV6 | XDP_RSS_L4 | XDP_RSS_L4_SCTP
    XDP_RSS_TYPE_L4_IPV6_IPSEC = XDP_RSS_L3_IPV6 | XDP_RSS_L4 | XDP_RSS_L4_IPSEC
    XDP_RSS_TYPE_L4_IPV6_ICMP = XDP_RSS_L3_IPV6 | XDP_RSS_L4 | XDP_RSS_L4_ICMP

    XDP_RSS_TYPE_L4_IPV6_TCP_EX = XDP_RSS_TYPE_L4_IPV6_TCP | XDP_RSS_L3_DYNHDR
    XDP_RSS_TYPE_L4_IPV6_UDP_EX = XDP_RSS_TYPE_L4_IPV6_UDP | XDP_RSS_L3_DYNHDR
    XDP_RSS_TYPE_L4_IPV6_SCTP_EX = XDP_RSS_TYPE_L4_IPV6_SCTP | XDP_RSS_L3_DYNHDR


_R = XdpRssHashType
#: Every bit the enum defines; anything else in a reported type is undefined.
XDP_RSS_DEFINED_BITS = 0x1FF
_L3_FAMILY_BITS = (_R.XDP_RSS_L3_IPV4, _R.XDP_RSS_L3_IPV6)
_L4_PROTO_BITS = (
    _R.XDP_RSS_L4_TCP,
    _R.XDP_RSS_L4_UDP,
    _R.XDP_RSS_L4_SCTP,
    _R.XDP_RSS_L4_IPSEC,
    _R.XDP_RSS_L4_ICMP,
)
#: The composed ``XDP_RSS_TYPE_*`` names (aliases included), name -> value.
XDP_RSS_TYPES: dict[str, int] = {
    name: int(member)
    for name, member in XdpRssHashType.__members__.items()
    if name.startswith("XDP_RSS_TYPE_")
}


class XdpRxMetadata(enum.IntEnum):
    """``enum xdp_rx_metadata`` (include/net/xdp.h): one id per metadata kfunc (KFUNC-API-001)."""

    XDP_METADATA_KFUNC_RX_TIMESTAMP = 0
    XDP_METADATA_KFUNC_RX_HASH = 1
    XDP_METADATA_KFUNC_RX_VLAN_TAG = 2


MAX_XDP_METADATA_KFUNC = 3


class NetdevXdpRxMetadata(enum.IntFlag):
    """uapi ``enum netdev_xdp_rx_metadata`` (include/uapi/linux/netdev.h) (KFUNC-API-007)."""

    NETDEV_XDP_RX_METADATA_TIMESTAMP = 1
    NETDEV_XDP_RX_METADATA_HASH = 2
    NETDEV_XDP_RX_METADATA_VLAN_TAG = 4


@attrs.frozen
class MetadataKfunc:
    """One row of ``XDP_METADATA_KFUNC_xxx``: the four names one kfunc is known by."""

    id: XdpRxMetadata
    netdev_flag: NetdevXdpRxMetadata
    kfunc_name: str
    xmo: str  # the struct xdp_metadata_ops member


#: KFUNC-API-001: the kernel's ``XDP_METADATA_KFUNC_xxx`` table, in its order.
XDP_METADATA_KFUNCS: tuple[MetadataKfunc, ...] = (
    MetadataKfunc(
        XdpRxMetadata.XDP_METADATA_KFUNC_RX_TIMESTAMP,
        NetdevXdpRxMetadata.NETDEV_XDP_RX_METADATA_TIMESTAMP,
        "bpf_xdp_metadata_rx_timestamp",
        "xmo_rx_timestamp",
    ),
    MetadataKfunc(
        XdpRxMetadata.XDP_METADATA_KFUNC_RX_HASH,
        NetdevXdpRxMetadata.NETDEV_XDP_RX_METADATA_HASH,
        "bpf_xdp_metadata_rx_hash",
        "xmo_rx_hash",
    ),
    MetadataKfunc(
        XdpRxMetadata.XDP_METADATA_KFUNC_RX_VLAN_TAG,
        NetdevXdpRxMetadata.NETDEV_XDP_RX_METADATA_VLAN_TAG,
        "bpf_xdp_metadata_rx_vlan_tag",
        "xmo_rx_vlan_tag",
    ),
)

# uapi constants used by the device-bound rules (include/uapi/linux/bpf.h, if_link.h).
BPF_PROG_TYPE_SCHED_CLS = 3
BPF_PROG_TYPE_XDP = 6
BPF_PROG_TYPE_EXT = 28
BPF_XDP_DEVMAP = 33
BPF_XDP_CPUMAP = 35
BPF_XDP = 37

BPF_F_STRICT_ALIGNMENT = 1 << 0
BPF_F_ANY_ALIGNMENT = 1 << 1
BPF_F_TEST_RND_HI32 = 1 << 2
BPF_F_TEST_STATE_FREQ = 1 << 3
BPF_F_SLEEPABLE = 1 << 4
BPF_F_XDP_HAS_FRAGS = 1 << 5
BPF_F_XDP_DEV_BOUND_ONLY = 1 << 6
BPF_F_TEST_REG_INVARIANTS = 1 << 7
BPF_F_TOKEN_FD = 1 << 16
#: KFUNC-LOAD-001: every prog_flags bit BPF_PROG_LOAD accepts.
BPF_PROG_LOAD_FLAGS = (
    BPF_F_STRICT_ALIGNMENT
    | BPF_F_ANY_ALIGNMENT
    | BPF_F_TEST_STATE_FREQ
    | BPF_F_SLEEPABLE
    | BPF_F_TEST_RND_HI32
    | BPF_F_XDP_HAS_FRAGS
    | BPF_F_XDP_DEV_BOUND_ONLY
    | BPF_F_TEST_REG_INVARIANTS
    | BPF_F_TOKEN_FD
)

BPF_MAP_TYPE_PROG_ARRAY = 3
BPF_MAP_TYPE_DEVMAP = 14
BPF_MAP_TYPE_CPUMAP = 16
BPF_MAP_TYPE_DEVMAP_HASH = 25

XDP_FLAGS_UPDATE_IF_NOEXIST = 1 << 0
XDP_FLAGS_SKB_MODE = 1 << 1
XDP_FLAGS_DRV_MODE = 1 << 2
XDP_FLAGS_HW_MODE = 1 << 3
XDP_FLAGS_MODES = XDP_FLAGS_SKB_MODE | XDP_FLAGS_DRV_MODE | XDP_FLAGS_HW_MODE


class XdpMode(enum.IntEnum):
    """``enum bpf_xdp_mode`` (include/linux/netdevice.h)."""

    XDP_MODE_SKB = 0
    XDP_MODE_DRV = 1
    XDP_MODE_HW = 2


# --- RSS hash type validation --------------------------------------------------------------


def rss_hash_type_violations(value: int) -> list[str]:
    """Why a driver-reported ``rss_type`` is not a sensible ``xdp_rss_hash_type``.

    Returns an empty list for a valid type.  The one rule the header states (a hash over L4
    carries ``XDP_RSS_L4`` besides the protocol bit) is KFUNC-RSS-002; the other checks are
    the model's reading of the enum's structure (KFUNC-RSS-003).  The kernel checks none
    of this at run time, so this is a tool for driver-model tests, not a kfunc step.
    (KFUNC-RSS-002, KFUNC-RSS-003)
    """
    problems: list[str] = []
    if value < 0 or value & ~XDP_RSS_DEFINED_BITS:
        problems.append("bits outside the defined XDP_RSS_* bits")  # KFUNC-RSS-003
        value &= XDP_RSS_DEFINED_BITS
    protos = [b for b in _L4_PROTO_BITS if value & b]
    if protos and not value & _R.XDP_RSS_L4:
        problems.append("L4 protocol bit without XDP_RSS_L4")  # KFUNC-RSS-002
    if len(protos) > 1:
        problems.append("more than one L4 protocol bit")  # KFUNC-RSS-003
    if all(value & b for b in _L3_FAMILY_BITS):
        problems.append("both XDP_RSS_L3_IPV4 and XDP_RSS_L3_IPV6")  # KFUNC-RSS-003
    if value & _R.XDP_RSS_L3_DYNHDR and not any(value & b for b in _L3_FAMILY_BITS):
        problems.append("XDP_RSS_L3_DYNHDR without an L3 family bit")  # KFUNC-RSS-003
    return problems


def is_valid_rss_hash_type(value: int) -> bool:
    """True if :func:`rss_hash_type_violations` finds nothing (KFUNC-RSS-002, KFUNC-RSS-003)."""
    return not rss_hash_type_violations(value)


# --- Kfunc results and the driver interface ------------------------------------------------


@attrs.frozen
class RxTimestamp:
    """What ``bpf_xdp_metadata_rx_timestamp`` returns: rc and the ``u64 *timestamp`` output.

    ``rc`` is 0 (outputs written), ``-EOPNOTSUPP`` (not implemented) or ``-ENODATA`` (no
    such metadata for this packet) (KFUNC-API-002).  An output is ``None`` when the callee
    did not write it (KFUNC-API-005).  The same holds for :class:`RxHash` and
    :class:`RxVlanTag`.
    """

    rc: int
    timestamp: int | None = None

    def outputs(self) -> tuple[int | None, ...]:
        return (self.timestamp,)


@attrs.frozen
class RxHash:
    """``bpf_xdp_metadata_rx_hash``: rc, ``u32 *hash`` and ``enum xdp_rss_hash_type *rss_type``."""

    rc: int
    hash: int | None = None
    rss_type: int | None = None

    def outputs(self) -> tuple[int | None, ...]:
        return (self.hash, self.rss_type)


@attrs.frozen
class RxVlanTag:
    """``bpf_xdp_metadata_rx_vlan_tag``: rc, ``__be16 *vlan_proto`` and ``u16 *vlan_tci``.

    KFUNC-API-004: ``vlan_proto`` is held as the TPID's numeric value, i.e. what
    ``be16_to_cpu()`` of the stored big-endian word gives (0x8100 for 802.1Q);
    :meth:`vlan_proto_bytes` gives the two bytes as they lie in the program's memory.
    ``vlan_tci`` is host order, all 16 bits (PCP, DEI, VID).
    """

    rc: int
    vlan_proto: int | None = None
    vlan_tci: int | None = None

    def outputs(self) -> tuple[int | None, ...]:
        return (self.vlan_proto, self.vlan_tci)

    def vlan_proto_bytes(self) -> bytes | None:
        return None if self.vlan_proto is None else self.vlan_proto.to_bytes(2, "big")


KfuncResult = RxTimestamp | RxHash | RxVlanTag
TimestampOp = Callable[[Any], RxTimestamp]
HashOp = Callable[[Any], RxHash]
VlanTagOp = Callable[[Any], RxVlanTag]


class XdpMetadataOps(Protocol):
    """``struct xdp_metadata_ops`` (include/net/xdp.h): what a driver model implements.

    Each member takes the driver's per-packet context (opaque to this module) and returns
    the kfunc result.  A member the driver leaves NULL is ``None`` (KFUNC-LOAD-006).
    """

    @property
    def xmo_rx_timestamp(self) -> TimestampOp | None: ...

    @property
    def xmo_rx_hash(self) -> HashOp | None: ...

    @property
    def xmo_rx_vlan_tag(self) -> VlanTagOp | None: ...


@attrs.frozen
class MetadataOps:
    """A plain :class:`XdpMetadataOps` built from functions; unset members are NULL."""

    xmo_rx_timestamp: TimestampOp | None = None
    xmo_rx_hash: HashOp | None = None
    xmo_rx_vlan_tag: VlanTagOp | None = None


def outputs_after(result: KfuncResult, prior: tuple[int, ...]) -> tuple[int, ...]:
    """The program's output variables after the call (KFUNC-API-005).

    The kfunc writes through pointers into the program's variables; what it did not
    write keeps the value ``prior`` gave it.
    """
    outs = result.outputs()
    if len(prior) != len(outs):
        raise InvalidConfig(
            "one prior value per output needed", field="prior", value=prior, rule="KFUNC-API-005"
        )
    return tuple(p if o is None else o for o, p in zip(outs, prior, strict=True))


def _check_result(result: KfuncResult, limits: tuple[int, ...], name: str) -> None:
    """KFUNC-API-006: a driver op's result must be something C code could have produced."""
    if result.rc > 0:
        raise InvalidConfig(
            "kfunc rc must be 0 or a negative errno", field=f"{name}.rc", value=result.rc,
            rule="KFUNC-API-006",
        )
    for value, limit in zip(result.outputs(), limits, strict=True):
        if result.rc == 0 and value is None:
            raise InvalidConfig(
                "a successful op must write every output", field=name, value=result,
                rule="KFUNC-API-006",
            )
        if value is not None and not 0 <= value <= limit:
            raise InvalidConfig(
                "output does not fit its C type", field=name, value=value, rule="KFUNC-API-006"
            )


# --- The kfunc entry points ----------------------------------------------------------------


def bpf_xdp_metadata_rx_timestamp(
    ctx: Any, ops: XdpMetadataOps | None = None, trace: Trace | None = None
) -> RxTimestamp:
    """Read the RX timestamp (KFUNC-CALL-001).

    ``ops`` are the ops the call was resolved against at load time (None if the program
    is not bound to a device with ops).  Without a driver member the default body runs:
    ``-EOPNOTSUPP``, nothing written (KFUNC-API-003).
    """
    op = ops.xmo_rx_timestamp if ops is not None else None
    if op is None:
        emit(trace, "KFUNC-API-003", "default body: driver does not implement rx_timestamp")
        return RxTimestamp(-errno.EOPNOTSUPP)
    result = op(ctx)
    _check_result(result, (U64_MAX,), "xmo_rx_timestamp")
    emit(trace, "KFUNC-API-006", "driver result representable in C", op="xmo_rx_timestamp")
    emit(trace, "KFUNC-CALL-001", "driver xmo_rx_timestamp", rc=result.rc)
    return result


def bpf_xdp_metadata_rx_hash(
    ctx: Any, ops: XdpMetadataOps | None = None, trace: Trace | None = None
) -> RxHash:
    """Read the RX hash and its ``xdp_rss_hash_type`` (KFUNC-CALL-001, KFUNC-API-003)."""
    op = ops.xmo_rx_hash if ops is not None else None
    if op is None:
        emit(trace, "KFUNC-API-003", "default body: driver does not implement rx_hash")
        return RxHash(-errno.EOPNOTSUPP)
    result = op(ctx)
    _check_result(result, (U32_MAX, U32_MAX), "xmo_rx_hash")
    emit(trace, "KFUNC-API-006", "driver result representable in C", op="xmo_rx_hash")
    emit(trace, "KFUNC-CALL-001", "driver xmo_rx_hash", rc=result.rc)
    return result


def bpf_xdp_metadata_rx_vlan_tag(
    ctx: Any, ops: XdpMetadataOps | None = None, trace: Trace | None = None
) -> RxVlanTag:
    """Read the stripped outermost VLAN tag (KFUNC-CALL-001, KFUNC-API-003, KFUNC-API-004)."""
    op = ops.xmo_rx_vlan_tag if ops is not None else None
    if op is None:
        emit(trace, "KFUNC-API-003", "default body: driver does not implement rx_vlan_tag")
        return RxVlanTag(-errno.EOPNOTSUPP)
    result = op(ctx)
    _check_result(result, (U16_MAX, U16_MAX), "xmo_rx_vlan_tag")
    emit(trace, "KFUNC-API-006", "driver result representable in C", op="xmo_rx_vlan_tag")
    emit(trace, "KFUNC-CALL-001", "driver xmo_rx_vlan_tag", rc=result.rc)
    return result


# --- Devices, programs and the device-bound rules ------------------------------------------


@attrs.define(eq=False)
class NetDevice:
    """The parts of ``struct net_device`` the device-bound rules look at.

    ``has_ndo_bpf``: the driver implements ``ndo_bpf`` (native XDP).  ``offdev``: identity
    of the driver's ``bpf_offload_dev`` if it can run programs in hardware (nfp,
    netdevsim), else None.  ``xdp_features`` holds ``NETDEV_XDP_ACT_*`` bits only;
    the RX-metadata capabilities are derived from the ops (KFUNC-API-007).
    """

    ifindex: int
    name: str
    xdp_metadata_ops: XdpMetadataOps | None = None
    has_ndo_bpf: bool = True
    offdev: str | None = None
    xdp_features: int = 0
    xdp_state: dict[XdpMode, LoadedBpfProg] = attrs.field(factory=dict)


def xdp_rx_metadata_features(dev: NetDevice) -> NetdevXdpRxMetadata:
    """The netlink ``xdp-rx-metadata-features`` of ``dev`` (KFUNC-API-007)."""
    features = NetdevXdpRxMetadata(0)
    ops = dev.xdp_metadata_ops
    for row in XDP_METADATA_KFUNCS:
        if ops is not None and getattr(ops, row.xmo) is not None:
            features |= row.netdev_flag
    return features


@attrs.frozen
class BpfProg:
    """The ``BPF_PROG_LOAD`` attributes the device-bound rules depend on.

    ``calls_kfuncs``: the metadata kfuncs the program's instructions call.
    """

    prog_type: int = BPF_PROG_TYPE_XDP
    expected_attach_type: int = 0
    prog_flags: int = 0
    prog_ifindex: int = 0
    calls_kfuncs: frozenset[XdpRxMetadata] = frozenset()


@attrs.frozen(eq=False)
class LoadedBpfProg:
    """A program the model loaded: its attributes, binding and resolved kfuncs.

    ``netdev`` is the bound device (``prog->aux->offload->netdev``) for a device-bound
    program.  ``resolved`` is what each called kfunc was redirected to at load time
    (KFUNC-LOAD-006): only the called kfuncs' members are filled in.
    """

    attr: BpfProg
    dev_bound: bool
    offloaded: bool
    netdev: NetDevice | None
    resolved: MetadataOps

    def call_rx_timestamp(self, ctx: Any, trace: Trace | None = None) -> RxTimestamp:
        self._require(XdpRxMetadata.XDP_METADATA_KFUNC_RX_TIMESTAMP)
        return bpf_xdp_metadata_rx_timestamp(ctx, self.resolved, trace)

    def call_rx_hash(self, ctx: Any, trace: Trace | None = None) -> RxHash:
        self._require(XdpRxMetadata.XDP_METADATA_KFUNC_RX_HASH)
        return bpf_xdp_metadata_rx_hash(ctx, self.resolved, trace)

    def call_rx_vlan_tag(self, ctx: Any, trace: Trace | None = None) -> RxVlanTag:
        self._require(XdpRxMetadata.XDP_METADATA_KFUNC_RX_VLAN_TAG)
        return bpf_xdp_metadata_rx_vlan_tag(ctx, self.resolved, trace)

    def _require(self, kfunc: XdpRxMetadata) -> None:
        if kfunc not in self.attr.calls_kfuncs:
            raise InvalidConfig(
                "the program was loaded without a call to this kfunc",
                field="kfunc", value=kfunc.name, rule="KFUNC-LOAD-006",
            )


@attrs.frozen
class Outcome:
    """An errno-style result: ``rc`` 0 or ``-errno``, plus the kernel's message if any.

    ``msg`` is the verifier log line or the netlink extack text the kernel emits.
    """

    rc: int
    msg: str = ""


@attrs.frozen
class LoadOutcome:
    rc: int
    msg: str = ""
    prog: LoadedBpfProg | None = None


@attrs.define
class _OffloadNetdev:
    """``struct bpf_offload_netdev``: one per device known to kernel/bpf/offload.c."""

    offdev: str | None  # None: created only because a program was bound to the device
    progs: list[LoadedBpfProg] = attrs.field(factory=list)


def _resolve(prog: BpfProg, netdev: NetDevice | None) -> MetadataOps:
    """KFUNC-LOAD-006: redirect each called kfunc to the bound device's ops member."""
    ops = netdev.xdp_metadata_ops if netdev is not None else None
    members: dict[str, Any] = {}
    for row in XDP_METADATA_KFUNCS:
        if row.id in prog.calls_kfuncs and ops is not None:
            members[row.xmo] = getattr(ops, row.xmo)
    return MetadataOps(**members)


@attrs.define
class BpfDevices:
    """The devices BPF syscalls can name by ifindex, plus kernel/bpf/offload.c's ``offdevs``.

    Only the state the device-bound rules need: which devices exist, which have a
    ``bpf_offload_netdev`` entry (and with which offload device), and the programs bound
    to each.
    """

    devices: dict[int, NetDevice] = attrs.field(factory=dict)
    offdevs: dict[int, _OffloadNetdev] = attrs.field(factory=dict)
    #: KFUNC-ATTACH-003: later trees (read in 6.12.117 and 7.3.4, seen live on 6.18.44,
    #: absent from v6.17-rc3) let a program match a device other than its own only when
    #: it is offloaded.  False is v6.17-rc3 as read; True is the behaviour of every
    #: version the model describes (:func:`for_kernel`).
    dev_match_requires_offload: bool = False
    #: KFUNC-ATTACH-004: later trees (6.12.117, 7.3.4, live 6.18.44) check the new program inside
    #: dev_xdp_install(), after the ndo_bpf check and only when the program changes.
    #: False is v6.17 as read (the checks run in dev_xdp_attach()).  The kfunc component
    #: sets it from the version gate KFUNC-ATTACH-004 (:func:`for_kernel`).
    attach_checks_in_install: bool = False

    @classmethod
    def for_kernel(cls, kernel: KernelVersion) -> BpfDevices:
        """The devices of ``kernel``: KFUNC-ATTACH-004's check order from its gate, and
        KFUNC-ATTACH-003's own-device-only match for bound-only programs, which every
        described version has (6.12.117 and 7.3.4 read, 6.18.44 live)."""
        return cls(attach_checks_in_install=gate(kernel, "KFUNC-ATTACH-004"),
                   dev_match_requires_offload=True)

    def register_netdev(self, dev: NetDevice) -> None:
        """Make ``dev`` known; an offload-capable driver also registers it in ``offdevs``."""
        if dev.ifindex in self.devices:
            raise InvalidConfig("ifindex already in use", field="ifindex", value=dev.ifindex)
        self.devices[dev.ifindex] = dev
        if dev.offdev is not None:
            self.offdevs[dev.ifindex] = _OffloadNetdev(dev.offdev)

    # -- BPF_PROG_LOAD ---------------------------------------------------------------------

    def prog_load(self, prog: BpfProg, trace: Trace | None = None) -> LoadOutcome:
        """``bpf_prog_load()`` as far as device binding and metadata kfuncs go.

        Everything else the verifier checks is assumed to pass.  On failure the model's
        state is untouched (KFUNC-LOAD-007).
        """
        if prog.prog_flags & ~BPF_PROG_LOAD_FLAGS:
            emit(trace, "KFUNC-LOAD-001", "unknown prog_flags", prog_flags=prog.prog_flags)
            return LoadOutcome(-errno.EINVAL)
        dev_bound = prog.prog_ifindex != 0  # KFUNC-LOAD-002
        offloaded = False
        netdev: NetDevice | None = None
        if dev_bound:
            rc = self._dev_bound_init_checks(prog, trace)
            if rc:
                return LoadOutcome(rc)
            netdev = self.devices[prog.prog_ifindex]
            offloaded = not prog.prog_flags & BPF_F_XDP_DEV_BOUND_ONLY
        elif prog.prog_flags & BPF_F_XDP_DEV_BOUND_ONLY:
            emit(trace, "KFUNC-LOAD-002", "DEV_BOUND_ONLY without prog_ifindex: not bound")

        if prog.calls_kfuncs:  # KFUNC-LOAD-005: bpf_dev_bound_kfunc_check()
            if not dev_bound:
                msg = "metadata kfuncs require device-bound program\n"
                emit(trace, "KFUNC-LOAD-005", msg.strip())
                return LoadOutcome(-errno.EINVAL, msg)
            if offloaded:
                msg = "metadata kfuncs can't be offloaded\n"
                emit(trace, "KFUNC-LOAD-005", msg.strip())
                return LoadOutcome(-errno.EINVAL, msg)

        loaded = LoadedBpfProg(prog, dev_bound, offloaded, netdev, _resolve(prog, netdev))
        if netdev is not None:  # KFUNC-LOAD-004: __bpf_prog_dev_bound_init() succeeded
            ondev = self.offdevs.setdefault(netdev.ifindex, _OffloadNetdev(None))
            ondev.progs.append(loaded)
        emit(trace, "KFUNC-LOAD-006", "loaded", dev_bound=dev_bound, offloaded=offloaded,
             resolved=[r.xmo for r in XDP_METADATA_KFUNCS
                       if getattr(loaded.resolved, r.xmo) is not None])
        return LoadOutcome(0, "", loaded)

    def _dev_bound_init_checks(self, prog: BpfProg, trace: Trace | None) -> int:
        """``bpf_prog_dev_bound_init()`` refusals, kernel order (KFUNC-LOAD-003, KFUNC-LOAD-004)."""
        flags = prog.prog_flags
        bound_only = bool(flags & BPF_F_XDP_DEV_BOUND_ONLY)
        if prog.prog_type not in (BPF_PROG_TYPE_SCHED_CLS, BPF_PROG_TYPE_XDP):
            why, rc = "only SCHED_CLS and XDP programs can be bound", -errno.EINVAL
        elif flags & ~(BPF_F_XDP_DEV_BOUND_ONLY | BPF_F_XDP_HAS_FRAGS):
            why, rc = "other prog_flags with prog_ifindex", -errno.EINVAL
        elif flags & BPF_F_XDP_HAS_FRAGS and not bound_only:
            why, rc = "HAS_FRAGS needs DEV_BOUND_ONLY (no frags when offloaded)", -errno.EINVAL
        elif prog.prog_type == BPF_PROG_TYPE_SCHED_CLS and bound_only:
            why, rc = "SCHED_CLS cannot be DEV_BOUND_ONLY", -errno.EINVAL
        elif prog.prog_ifindex not in self.devices:
            why, rc = "no device with prog_ifindex", -errno.EINVAL
        elif not self.devices[prog.prog_ifindex].has_ndo_bpf:
            why, rc = "device has no ndo_bpf", -errno.EOPNOTSUPP
        elif not bound_only and (
            prog.prog_ifindex not in self.offdevs
            or self.offdevs[prog.prog_ifindex].offdev is None
        ):
            # KFUNC-LOAD-004: offload needs a device registered by an offload driver.
            emit(trace, "KFUNC-LOAD-004", "offload requested, device cannot offload")
            return -errno.EINVAL
        else:
            return 0
        emit(trace, "KFUNC-LOAD-003", why, rc=rc)
        return rc

    def prog_free(self, prog: LoadedBpfProg) -> None:
        """``bpf_prog_dev_bound_destroy()``: drop the binding (KFUNC-LOAD-004).

        A ``bpf_offload_netdev`` that exists only for bound programs goes away with the
        last one.
        """
        if prog.netdev is None:
            return
        ifindex = prog.netdev.ifindex
        ondev = self.offdevs[ifindex]
        ondev.progs.remove(prog)
        if ondev.offdev is None and not ondev.progs:
            del self.offdevs[ifindex]

    # -- XDP attach ------------------------------------------------------------------------

    def offload_dev_match(self, prog: LoadedBpfProg, dev: NetDevice) -> bool:
        """``bpf_offload_dev_match()`` (KFUNC-ATTACH-003).

        True for the bound device itself, or when both devices have a
        ``bpf_offload_netdev`` entry carrying the same ``offdev`` -- which, as the v6.17
        source reads, includes two devices that are both only bind targets (both NULL).
        With :attr:`dev_match_requires_offload` (later trees) a bound-only program matches
        its own device only.
        """
        if not prog.dev_bound or prog.netdev is None:
            return False
        if prog.netdev is dev:
            return True
        if self.dev_match_requires_offload and not prog.offloaded:
            return False
        ondev1 = self.offdevs.get(prog.netdev.ifindex)
        ondev2 = self.offdevs.get(dev.ifindex)
        return ondev1 is not None and ondev2 is not None and ondev1.offdev == ondev2.offdev

    def dev_xdp_attach(
        self, dev: NetDevice, prog: LoadedBpfProg, flags: int = 0, trace: Trace | None = None
    ) -> Outcome:
        """Attach ``prog`` to ``dev`` through netlink (``dev_change_xdp_fd``) (KFUNC-ATTACH-*).

        Models new-program attachment only (no link, no replace, no detach); checks run in
        the kernel's order and the device is changed only on success.
        """
        if flags & ~(XDP_FLAGS_UPDATE_IF_NOEXIST | XDP_FLAGS_MODES):
            raise InvalidConfig("only mode bits and UPDATE_IF_NOEXIST are modelled",
                                field="flags", value=flags)
        mode = self.dev_xdp_mode(dev, flags)
        # KFUNC-ATTACH-001: bpf_prog_get_type_dev(fd, XDP, attach_drv = mode != SKB)
        if prog.attr.prog_type != BPF_PROG_TYPE_XDP:
            return self._refuse(trace, "KFUNC-ATTACH-001", -errno.EINVAL, "not an XDP program")
        if prog.offloaded and mode == XdpMode.XDP_MODE_SKB:
            return self._refuse(trace, "KFUNC-ATTACH-001", -errno.EINVAL,
                                "offloaded program fetched for generic mode")
        # KFUNC-ATTACH-002
        if bin(flags & XDP_FLAGS_MODES).count("1") > 1:
            return self._refuse(trace, "KFUNC-ATTACH-002", -errno.EINVAL,
                                "Only one XDP mode flag can be set")
        if not flags & XDP_FLAGS_MODES and len(dev.xdp_state) > 1:
            return self._refuse(trace, "KFUNC-ATTACH-002", -errno.EINVAL,
                                "More than one program loaded, unset mode is ambiguous")
        cur = dev.xdp_state.get(mode)
        if flags & XDP_FLAGS_UPDATE_IF_NOEXIST and cur is not None:  # KFUNC-ATTACH-004
            return self._refuse(trace, "KFUNC-ATTACH-004", -errno.EBUSY,
                                "XDP program already attached")
        # KFUNC-ATTACH-004: the checks on the new program.  v6.17 runs them here, in
        # dev_xdp_attach(); later trees run them in dev_xdp_install(), i.e. only when the
        # program changes and after the ndo_bpf check of KFUNC-ATTACH-005.
        changes = prog is not cur
        if prog.dev_bound:
            emit(trace, "KFUNC-ATTACH-003", "bound program matched against the device",
                 match=self.offload_dev_match(prog, dev))
        if not self.attach_checks_in_install:
            refusal = self._new_prog_refusal(dev, prog, mode)
            if refusal is not None:
                return self._refuse(trace, "KFUNC-ATTACH-004", *refusal)
        # KFUNC-ATTACH-005: generic mode is always available; native/HW need ndo_bpf.
        if changes and mode != XdpMode.XDP_MODE_SKB and not dev.has_ndo_bpf:
            return self._refuse(trace, "KFUNC-ATTACH-005", -errno.EOPNOTSUPP,
                                "Underlying driver does not support XDP in native mode")
        if changes and self.attach_checks_in_install:
            refusal = self._new_prog_refusal(dev, prog, mode)
            if refusal is not None:
                return self._refuse(trace, "KFUNC-ATTACH-004", *refusal)
        dev.xdp_state[mode] = prog
        emit(trace, "KFUNC-ATTACH-005", "attached", dev=dev.name, mode=mode.name)
        return Outcome(0)

    def _new_prog_refusal(
        self, dev: NetDevice, prog: LoadedBpfProg, mode: XdpMode
    ) -> tuple[int, str] | None:
        """KFUNC-ATTACH-004 after UPDATE_IF_NOEXIST: the first refusal of the new program,
        in the kernel's order, as (rc, extack message), or None."""
        offload = mode == XdpMode.XDP_MODE_HW
        other = XdpMode.XDP_MODE_DRV if mode == XdpMode.XDP_MODE_SKB else XdpMode.XDP_MODE_SKB
        checks: tuple[tuple[bool, int, str], ...] = (
            (not offload and other in dev.xdp_state,
             -errno.EEXIST, "Native and generic XDP can't be active at the same time"),
            (not offload and prog.offloaded,
             -errno.EINVAL, "Using offloaded program without HW_MODE flag is not supported"),
            (prog.dev_bound and not self.offload_dev_match(prog, dev),
             -errno.EINVAL, "Program bound to different device"),
            (prog.dev_bound and mode == XdpMode.XDP_MODE_SKB,
             -errno.EINVAL, "Can't attach device-bound programs in generic mode"),
            (prog.attr.expected_attach_type == BPF_XDP_DEVMAP,
             -errno.EINVAL, "BPF_XDP_DEVMAP programs can not be attached to a device"),
            (prog.attr.expected_attach_type == BPF_XDP_CPUMAP,
             -errno.EINVAL, "BPF_XDP_CPUMAP programs can not be attached to a device"),
        )
        for failed, rc, msg in checks:
            if failed:
                return rc, msg
        return None

    @staticmethod
    def dev_xdp_mode(dev: NetDevice, flags: int) -> XdpMode:
        """``dev_xdp_mode()`` (KFUNC-ATTACH-002): HW, then DRV, then SKB; unset -> DRV if
        the driver has ``ndo_bpf``, else SKB."""
        if flags & XDP_FLAGS_HW_MODE:
            return XdpMode.XDP_MODE_HW
        if flags & XDP_FLAGS_DRV_MODE:
            return XdpMode.XDP_MODE_DRV
        if flags & XDP_FLAGS_SKB_MODE:
            return XdpMode.XDP_MODE_SKB
        return XdpMode.XDP_MODE_DRV if dev.has_ndo_bpf else XdpMode.XDP_MODE_SKB

    @staticmethod
    def _refuse(trace: Trace | None, rule: str, rc: int, msg: str) -> Outcome:
        emit(trace, rule, msg, rc=rc)
        return Outcome(rc, msg)


# --- Program maps -------------------------------------------------------------------------


def bpf_prog_map_compatible(prog: LoadedBpfProg) -> bool:
    """The device-bound half of ``bpf_prog_map_compatible()`` (KFUNC-MAP-001).

    A device-bound program (bound-only or offloaded) may run anywhere once in a program
    map, so it is never compatible.  The map-owner checks (same type, JIT state, frags)
    are assumed to pass.
    """
    return not prog.dev_bound


def map_update_prog(map_type: int, prog: LoadedBpfProg, trace: Trace | None = None,
                    kernel: KernelVersion = DEFAULT_KERNEL) -> int:
    """Insert ``prog`` into a map of ``map_type``; returns 0 or ``-errno`` (KFUNC-MAP-*).

    For DEVMAP/DEVMAP_HASH/CPUMAP the rest of the value (ifindex, qsize) is assumed valid.
    A CPUMAP refusal reads -ENOMEM before 48e11bad9a1f (v7.0) and -EINVAL from it on
    (version gate KFUNC-MAP-004).
    """
    if map_type == BPF_MAP_TYPE_PROG_ARRAY:  # prog_fd_array_get_ptr()
        ok = prog.attr.prog_type != BPF_PROG_TYPE_EXT and bpf_prog_map_compatible(prog)
        rule, rc = "KFUNC-MAP-002", -errno.EINVAL
    elif map_type in (BPF_MAP_TYPE_DEVMAP, BPF_MAP_TYPE_DEVMAP_HASH):  # __dev_map_alloc_node()
        ok = (
            prog.attr.prog_type == BPF_PROG_TYPE_XDP
            and not prog.offloaded
            and prog.attr.expected_attach_type == BPF_XDP_DEVMAP
            and bpf_prog_map_compatible(prog)
        )
        rule, rc = "KFUNC-MAP-003", -errno.EINVAL
    elif map_type == BPF_MAP_TYPE_CPUMAP:  # __cpu_map_load_bpf_program()
        ok = (
            prog.attr.prog_type == BPF_PROG_TYPE_XDP
            and not prog.offloaded
            and prog.attr.expected_attach_type == BPF_XDP_CPUMAP
            and bpf_prog_map_compatible(prog)
        )
        # KFUNC-MAP-004: the entry allocation's failure reads -ENOMEM, or (gate) its errno.
        rule = "KFUNC-MAP-004"
        rc = -errno.EINVAL if gate(kernel, "KFUNC-MAP-004") else -errno.ENOMEM
    else:
        raise InvalidConfig("not a map type that holds programs", field="map_type",
                            value=map_type)
    if ok:
        return 0
    emit(trace, rule, "program refused by the map", dev_bound=prog.dev_bound, rc=rc)
    return rc

"""Receive-side scaling: the Toeplitz hash, what it is fed, and the indirection table.

SPEC: RSS-*.  A NIC doing RSS reads a few header fields of each received packet, hashes
them with the Toeplitz function under a secret key, reports the 32-bit hash to the driver
(which hands it on as ``skb->hash`` or through the ``bpf_xdp_metadata_rx_hash`` kfunc with
an ``xdp_rss_hash_type``), and picks the receive queue by looking the hash up in an
indirection table.  This module models those three steps with the names ethtool uses
(flow types, ``RXH_*`` field flags, ``RXH_XFRM_*`` input transforms,
``ethtool_rxfh_indir_default``).

Performance: :func:`toeplitz` is table driven.  For each key it builds, once, one
256-entry table per input byte position (the XOR of the key windows of that byte's set
bits), so hashing is one lookup and one XOR per input byte: about 1.5 µs for a 12-byte
IPv4 4-tuple and 3 µs for a 36-byte IPv6 one (CPython 3.11+, one core), against roughly
10 µs for the bit-at-a-time :func:`toeplitz_bitwise`.  Building the tables costs about
1.5 ms per key, paid once (they are cached per key).
"""

from __future__ import annotations

import errno
import functools
from collections.abc import Iterable, Mapping

import attrs

from reference.errors import InvalidConfig, MalformedInput
from reference.kfuncs import XdpRssHashType
from reference.packet import L3, L4, PacketInfo
from reference.trace import Trace, emit

# --- ethtool constants: include/uapi/linux/ethtool.h (RSS-CFG-001) -----------------------

TCP_V4_FLOW = 0x01
UDP_V4_FLOW = 0x02
SCTP_V4_FLOW = 0x03
AH_ESP_V4_FLOW = 0x04
TCP_V6_FLOW = 0x05
UDP_V6_FLOW = 0x06
SCTP_V6_FLOW = 0x07
AH_ESP_V6_FLOW = 0x08
IPV4_FLOW = 0x10
IPV6_FLOW = 0x11

RXH_L2DA = 1 << 1
RXH_VLAN = 1 << 2
RXH_L3_PROTO = 1 << 3
RXH_IP_SRC = 1 << 4
RXH_IP_DST = 1 << 5
RXH_L4_B_0_1 = 1 << 6  # source port for TCP/UDP/SCTP
RXH_L4_B_2_3 = 1 << 7  # destination port for TCP/UDP/SCTP
RXH_GTP_TEID = 1 << 8
RXH_DISCARD = 1 << 31

RXH_XFRM_SYM_XOR = 1 << 0
RXH_XFRM_SYM_OR_XOR = 1 << 1

# include/linux/netdevice.h: size of the random key netdev_rss_key_fill() hands out
# (RSS-CFG-002; the model never invents a random key).
NETDEV_RSS_KEY_LEN = 52

# --- model parameters --------------------------------------------------------------------

_IP_FIELDS = RXH_IP_SRC | RXH_IP_DST
_L4_FIELDS = RXH_L4_B_0_1 | RXH_L4_B_2_3
FOUR_TUPLE = _IP_FIELDS | _L4_FIELDS
TWO_TUPLE = _IP_FIELDS

MAX_INPUT_LEN = 16 + 16 + 2 + 2  # IPv6 addresses and both ports
KEY_MIN_LEN = MAX_INPUT_LEN + 4  # RSS-CFG-002: 40 bytes, the classic Toeplitz key
RSS_INDIR_DEFAULT_SIZE = 128  # RSS-RETA-003

_MASK32 = 0xFFFF_FFFF

# Flow types with ports, keyed by (L3, L4) (RSS-IN-001).
_L4_FLOW_TYPES: dict[tuple[L3, L4], int] = {
    (L3.IPV4, L4.TCP): TCP_V4_FLOW,
    (L3.IPV4, L4.UDP): UDP_V4_FLOW,
    (L3.IPV4, L4.SCTP): SCTP_V4_FLOW,
    (L3.IPV6, L4.TCP): TCP_V6_FLOW,
    (L3.IPV6, L4.UDP): UDP_V6_FLOW,
    (L3.IPV6, L4.SCTP): SCTP_V6_FLOW,
}
_IP_FLOW_TYPES: dict[L3, int] = {L3.IPV4: IPV4_FLOW, L3.IPV6: IPV6_FLOW}
_PORT_FLOW_TYPES = frozenset(_L4_FLOW_TYPES.values())
MODELLED_FLOW_TYPES = _PORT_FLOW_TYPES | frozenset(_IP_FLOW_TYPES.values())

# RSS-CFG-004: 4-tuple for TCP and UDP, 2-tuple for everything else that is IP.
DEFAULT_HASH_FIELDS: Mapping[int, int] = {
    TCP_V4_FLOW: FOUR_TUPLE,
    UDP_V4_FLOW: FOUR_TUPLE,
    SCTP_V4_FLOW: TWO_TUPLE,
    TCP_V6_FLOW: FOUR_TUPLE,
    UDP_V6_FLOW: FOUR_TUPLE,
    SCTP_V6_FLOW: TWO_TUPLE,
    IPV4_FLOW: TWO_TUPLE,
    IPV6_FLOW: TWO_TUPLE,
}

_ADDR_LEN = {L3.IPV4: 4, L3.IPV6: 16}


# --- the Toeplitz function ---------------------------------------------------------------


def _check_key(key: bytes, data_len: int) -> None:
    """RSS-TOEP-001: input bit i uses key bits i..i+31, so the key needs len+4 bytes."""
    if len(key) < data_len + 4:
        raise InvalidConfig(
            f"a Toeplitz key must supply len(data)*8 + 31 bits; {data_len} input bytes "
            f"need at least {data_len + 4} key bytes",
            field="key",
            value=len(key),
            rule="RSS-TOEP-001",
        )


def toeplitz_bitwise(key: bytes, data: bytes) -> int:
    """The Toeplitz hash, one input bit at a time: the readable definition (RSS-TOEP-001).

    Bits are taken most significant first, byte by byte.  For every set input bit i the
    32-bit window of the key that starts at key bit i is XORed into the result.
    """
    _check_key(key, len(data))
    key_int = int.from_bytes(key, "big")
    key_bits = len(key) * 8
    result = 0
    for i in range(len(data) * 8):
        if (data[i >> 3] >> (7 - (i & 7))) & 1:
            result ^= (key_int >> (key_bits - 32 - i)) & _MASK32
    return result


@functools.lru_cache(maxsize=32)
def _byte_tables(key: bytes) -> tuple[tuple[int, ...], ...]:
    """RSS-TOEP-002: per byte position p, table[v] = XOR of the windows of v's set bits."""
    key_int = int.from_bytes(key, "big")
    key_bits = len(key) * 8
    tables = []
    for pos in range(len(key) - 4):
        # window[b] belongs to bit b of the byte counted from its most significant bit.
        window = [(key_int >> (key_bits - 32 - (8 * pos + b))) & _MASK32 for b in range(8)]
        table = [0] * 256
        for value in range(1, 256):
            low = value & -value  # lowest set bit; the rest of value is already tabled
            table[value] = table[value ^ low] ^ window[8 - low.bit_length()]
        tables.append(tuple(table))
    return tuple(tables)


def toeplitz(key: bytes, data: bytes) -> int:
    """The 32-bit Toeplitz hash of ``data`` under ``key`` (RSS-TOEP-001, RSS-TOEP-002).

    The key must be at least ``len(data) + 4`` bytes long: a 40-byte key covers 36 input
    bytes, enough for two IPv6 addresses and two ports.  Raises :class:`InvalidConfig`
    if it is shorter.
    """
    _check_key(key, len(data))
    result = 0
    for table, byte in zip(_byte_tables(bytes(key)), data, strict=False):
        result ^= table[byte]
    return result


# --- configuration -----------------------------------------------------------------------


def ethtool_rxfh_indir_default(index: int, n_rx_rings: int) -> int:
    """RSS-RETA-001: the default indirection entry spreads the rings round-robin."""
    if n_rx_rings <= 0:
        raise InvalidConfig(
            "need at least one RX ring", field="n_rx_rings", value=n_rx_rings, rule="RSS-RETA-001"
        )
    return index % n_rx_rings


def default_indir(size: int, n_rx_rings: int) -> tuple[int, ...]:
    """RSS-RETA-001: the table ethtool installs when asked to reset it to the default."""
    if size <= 0:
        raise InvalidConfig("table needs an entry", field="size", value=size, rule="RSS-RETA-003")
    return tuple(ethtool_rxfh_indir_default(i, n_rx_rings) for i in range(size))


def validate_indir(indir: Iterable[int], n_rx_rings: int) -> int:
    """RSS-RETA-002: 0 if every entry names an existing ring, else -EINVAL."""
    return 0 if all(0 <= entry < n_rx_rings for entry in indir) else -errno.EINVAL


def rxfh_fields_symmetric(fields: int) -> bool:
    """RSS-XFRM-001: only IP and port pairs, each pair complete (ethtool's symmetry test)."""
    return (
        fields & ~FOUR_TUPLE == 0
        and bool(fields & RXH_IP_SRC) == bool(fields & RXH_IP_DST)
        and bool(fields & RXH_L4_B_0_1) == bool(fields & RXH_L4_B_2_3)
    )


def _to_key(key: bytes) -> bytes:
    if not isinstance(key, (bytes, bytearray)) or len(key) < KEY_MIN_LEN:
        raise InvalidConfig(
            f"the RSS key must be at least {KEY_MIN_LEN} bytes (the longest input is "
            f"{MAX_INPUT_LEN} bytes)",
            field="key",
            value=len(key) if isinstance(key, (bytes, bytearray)) else key,
            rule="RSS-CFG-002",
        )
    return bytes(key)


def _to_indir(indir: Iterable[int]) -> tuple[int, ...]:
    table = tuple(indir)
    if not table or any(not isinstance(e, int) or e < 0 for e in table):
        raise InvalidConfig(
            "the indirection table needs at least one entry, all ring numbers >= 0",
            field="indir",
            value=table,
            rule="RSS-RETA-003",
        )
    return table


def _to_fields(fields: Mapping[int, int]) -> tuple[tuple[int, int], ...]:
    """RSS-CFG-003: accept only the flow types and field flags the model implements."""
    for flow_type, rxh in fields.items():
        if flow_type not in MODELLED_FLOW_TYPES:
            raise InvalidConfig(
                "flow type not modelled", field="hash_fields", value=flow_type, rule="RSS-CFG-003"
            )
        allowed = FOUR_TUPLE if flow_type in _PORT_FLOW_TYPES else TWO_TUPLE
        if rxh & ~allowed:
            raise InvalidConfig(
                f"flow type {flow_type:#x} may hash only RXH bits {allowed:#x}",
                field="hash_fields",
                value=rxh,
                rule="RSS-CFG-003",
            )
    return tuple(sorted((int(ft), int(rxh)) for ft, rxh in fields.items()))


@attrs.frozen
class RssConfig:
    """What a device's RSS engine is programmed with (RSS-CFG-002..004, RSS-XFRM-001).

    ``hash_fields`` maps an ethtool flow type to its ``RXH_*`` mask (a flow type left out
    hashes nothing); ``input_xfrm`` is 0, ``RXH_XFRM_SYM_XOR`` or ``RXH_XFRM_SYM_OR_XOR``.
    """

    key: bytes = attrs.field(converter=_to_key)
    indir: tuple[int, ...] = attrs.field(converter=_to_indir)
    hash_fields: tuple[tuple[int, int], ...] = attrs.field(
        default=DEFAULT_HASH_FIELDS, converter=_to_fields
    )
    input_xfrm: int = 0

    def __attrs_post_init__(self) -> None:
        # RSS-XFRM-001: ethtool accepts only these values, and only over symmetric fields.
        if self.input_xfrm not in (0, RXH_XFRM_SYM_XOR, RXH_XFRM_SYM_OR_XOR):
            raise InvalidConfig(
                "input_xfrm must be 0, RXH_XFRM_SYM_XOR or RXH_XFRM_SYM_OR_XOR",
                field="input_xfrm",
                value=self.input_xfrm,
                rule="RSS-XFRM-001",
            )
        if self.input_xfrm:
            for flow_type, rxh in self.hash_fields:
                if not rxfh_fields_symmetric(rxh):
                    raise InvalidConfig(
                        f"symmetric input_xfrm needs symmetric fields (flow type {flow_type:#x})",
                        field="hash_fields",
                        value=rxh,
                        rule="RSS-XFRM-001",
                    )

    @classmethod
    def default(
        cls, key: bytes, n_rx_rings: int, *, indir_size: int = RSS_INDIR_DEFAULT_SIZE
    ) -> RssConfig:
        """Default fields and the default round-robin table over ``n_rx_rings`` rings."""
        return cls(key=key, indir=default_indir(indir_size, n_rx_rings))

    def fields_for(self, flow_type: int) -> int:
        """The RXH mask hashed for ``flow_type`` (0: nothing)."""
        for ft, rxh in self.hash_fields:
            if ft == flow_type:
                return rxh
        return 0


# --- what gets hashed --------------------------------------------------------------------


@attrs.frozen
class RssResult:
    """One packet's RSS outcome (RSS-TYPE-001).

    ``l4`` is the protocol whose ports went into the hash, or None for an address-only
    hash; ``input`` is the exact byte string fed to Toeplitz.
    """

    hash: int
    flow_type: int
    l3: L3
    l4: L4 | None
    input: bytes


def flow_type_of(info: PacketInfo) -> int | None:
    """RSS-IN-001: the ethtool flow type whose field mask applies to this packet."""
    if info.l3 not in _IP_FLOW_TYPES:
        return None
    if not info.is_fragment and info.sport >= 0 and info.dport >= 0:
        port_flow = _L4_FLOW_TYPES.get((info.l3, info.l4))
        if port_flow is not None:
            return port_flow
    return _IP_FLOW_TYPES[info.l3]  # RSS-IN-003: fragments and other protocols


def _port(value: int, name: str) -> bytes:
    """RSS-IN-002: a port in the hash input, 2 bytes big-endian (RSS-IN-005: 0..65535)."""
    if not 0 <= value <= 0xFFFF:
        raise MalformedInput("not a 16-bit port", field=name, value=value, rule="RSS-IN-005")
    return value.to_bytes(2, "big")


def _pair(a: bytes, b: bytes, xfrm: int) -> list[bytes]:
    """RSS-XFRM-002: the two copies a symmetric transform feeds instead of (a, b)."""
    x = bytes(p ^ q for p, q in zip(a, b, strict=True))
    if xfrm == RXH_XFRM_SYM_XOR:
        return [x, x]
    if xfrm == RXH_XFRM_SYM_OR_XOR:
        return [bytes(p | q for p, q in zip(a, b, strict=True)), x]
    return [a, b]


def _input_for(info: PacketInfo, flow_type: int, fields: int, xfrm: int) -> bytes:
    """RSS-IN-002: selected fields in the order src addr, dst addr, src port, dst port."""
    want = _ADDR_LEN[info.l3]
    for name, addr in (("src", info.src), ("dst", info.dst)):
        if len(addr) != want:
            raise MalformedInput(
                f"{info.l3.name} address must be {want} bytes",
                field=name,
                value=len(addr),
                rule="RSS-IN-005",
            )
    if flow_type not in _PORT_FLOW_TYPES:
        fields &= _IP_FIELDS
    if xfrm:
        parts: list[bytes] = []
        if fields & _IP_FIELDS:
            parts += _pair(info.src, info.dst, xfrm)
        if fields & _L4_FIELDS:
            parts += _pair(_port(info.sport, "sport"), _port(info.dport, "dport"), xfrm)
        return b"".join(parts)
    parts = []
    if fields & RXH_IP_SRC:
        parts.append(info.src)
    if fields & RXH_IP_DST:
        parts.append(info.dst)
    if fields & RXH_L4_B_0_1:
        parts.append(_port(info.sport, "sport"))
    if fields & RXH_L4_B_2_3:
        parts.append(_port(info.dport, "dport"))
    return b"".join(parts)


def hash_input(info: PacketInfo, config: RssConfig) -> bytes | None:
    """The exact Toeplitz input for this packet, or None if it is not hashed (RSS-IN-004)."""
    flow_type = flow_type_of(info)
    if flow_type is None:
        return None
    fields = config.fields_for(flow_type)
    if not fields:
        return None
    return _input_for(info, flow_type, fields, config.input_xfrm)


def rss_hash(info: PacketInfo, config: RssConfig, trace: Trace | None = None) -> RssResult | None:
    """Hash one packet as the device would (RSS-IN-001..004); None means "no hash"."""
    flow_type = flow_type_of(info)
    if flow_type is None:
        emit(trace, "RSS-IN-004", "not IP: no RSS hash", ethertype=info.ethertype)
        return None
    fields = config.fields_for(flow_type)
    if not fields:
        emit(trace, "RSS-IN-004", "no fields selected for flow type", flow_type=flow_type)
        return None
    data = _input_for(info, flow_type, fields, config.input_xfrm)
    emit(trace, "RSS-IN-001", "flow type chosen", flow_type=flow_type, fields=fields)
    l4 = info.l4 if flow_type in _PORT_FLOW_TYPES and fields & _L4_FIELDS else None
    value = toeplitz(config.key, data)
    emit(trace, "RSS-TOEP-001", "Toeplitz hash", input=data, hash=value)
    return RssResult(hash=value, flow_type=flow_type, l3=info.l3, l4=l4, input=data)


_XDP_L3 = {L3.IPV4: XdpRssHashType.XDP_RSS_L3_IPV4, L3.IPV6: XdpRssHashType.XDP_RSS_L3_IPV6}
_XDP_L4 = {
    L4.TCP: XdpRssHashType.XDP_RSS_L4_TCP,
    L4.UDP: XdpRssHashType.XDP_RSS_L4_UDP,
    L4.SCTP: XdpRssHashType.XDP_RSS_L4_SCTP,
}


def xdp_rss_hash_type(result: RssResult | None) -> XdpRssHashType:
    """RSS-TYPE-001: the ``enum xdp_rss_hash_type`` value describing this hash.

    An L3 bit, plus ``XDP_RSS_L4`` and the protocol bit when ports were hashed; never
    ``XDP_RSS_L3_DYNHDR`` (whether a device reports options is left to driver models).
    """
    if result is None:
        return XdpRssHashType.XDP_RSS_TYPE_NONE
    value = _XDP_L3[result.l3]
    if result.l4 is not None:
        value |= XdpRssHashType.XDP_RSS_L4 | _XDP_L4[result.l4]
    return value


# --- queue selection ---------------------------------------------------------------------


def queue_for(hash_value: int, indir: tuple[int, ...], trace: Trace | None = None) -> int:
    """RSS-RETA-004: the ring in entry ``hash % len(indir)`` (the hash's low bits)."""
    if not 0 <= hash_value <= _MASK32:
        raise MalformedInput(
            "not a 32-bit hash", field="hash", value=hash_value, rule="RSS-RETA-004"
        )
    if not indir:
        raise InvalidConfig(
            "empty indirection table", field="indir", value=indir, rule="RSS-RETA-003"
        )
    index = hash_value % len(indir)
    emit(trace, "RSS-RETA-004", "indirection lookup", index=index, queue=indir[index])
    return indir[index]


def rx_queue(result: RssResult | None, config: RssConfig, trace: Trace | None = None) -> int:
    """The receive ring RSS picks for a packet's :func:`rss_hash` outcome: the table entry
    of its hash (RSS-RETA-004), or for an unhashed packet entry 0, as if its hash were 0
    (RSS-RETA-005).  The rss component's answer (its ``queue``) is this function's."""
    if result is None:
        emit(trace, "RSS-RETA-005", "unhashed packet takes indirection entry 0")
        return config.indir[0]
    return queue_for(result.hash, config.indir, trace)

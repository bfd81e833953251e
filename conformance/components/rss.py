"""The ``rss`` component: Toeplitz hash, hash type and queue of each frame.

config:  ``key`` (hex, 40 or 52 bytes), ``indir`` (list of ring numbers),
         optional ``hash_fields`` (object: ethtool flow type as a decimal string →
         ``RXH_*`` mask; default: 4-tuple for TCP/UDP, addresses otherwise) and
         ``input_xfrm`` (0, 1 = RXH_XFRM_SYM_XOR, 2 = RXH_XFRM_SYM_OR_XOR).
frames:  well-formed Ethernet frames.
observables: ``packets[i]`` = ``{"hash": int | null, "hash_type": int, "queue": int}``
         where ``hash_type`` is the ``enum xdp_rss_hash_type`` value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
from hypothesis import strategies as st
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment, IPv6ExtHdrHopByHop
from scapy.layers.ipsec import AH
from scapy.layers.l2 import Dot1Q, Ether
from scapy.layers.sctp import SCTP
from scapy.packet import Packet, Raw

from conformance.components import Component, libblame
from conformance.readable import rss_type_name, value_text
from conformance.scenario import Scenario
from conformance.strategies import ip_frames, rss_keys
from conformance.strategies.frames import ethernet_frames, header_cases, header_frames
from conformance.vectors.ms_rss import MS_KEY
from reference import packet, rss
from reference.trace import Trace, emit


def config_of(scenario: Scenario) -> rss.RssConfig:
    cfg = scenario.config
    fields = cfg.get("hash_fields")
    return rss.RssConfig(
        key=bytes.fromhex(str(cfg["key"])),
        indir=tuple(int(q) for q in cfg["indir"]),
        hash_fields=(rss.DEFAULT_HASH_FIELDS if fields is None
                     else {int(k): int(v) for k, v in dict(fields).items()}),
        input_xfrm=int(cfg.get("input_xfrm", 0)),
    )


def expected(scenario: Scenario, trace: Trace | None = None) -> dict[str, Any]:
    """RSS-IN-001..004, RSS-TOEP-001, RSS-TYPE-001, RSS-RETA-004/005 per frame."""
    config = config_of(scenario)
    packets = []
    for frame in scenario.frames:
        info = packet.parse(frame)
        result = rss.rss_hash(info, config, trace)
        if result is not None:
            emit(trace, "RSS-TYPE-001", "hash type", hash_type=rss.xdp_rss_hash_type(result))
        queue = rss.rx_queue(result, config, trace)  # RSS-RETA-004, RSS-RETA-005
        packets.append({
            "hash": None if result is None else result.hash,
            "hash_type": int(rss.xdp_rss_hash_type(result)),
            "queue": queue,
        })
    return {"packets": packets}


def attribute(scenario: Scenario) -> Callable[[str], tuple[str, ...]]:
    """Which rule produced ``packets[i].<field>`` for each frame of this scenario."""
    config = config_of(scenario)
    infos = [packet.parse(frame) for frame in scenario.frames]
    defaults = scenario.config.get("hash_fields") is None

    def rules(path: str) -> tuple[str, ...]:
        index, _, field = path.removeprefix("packets[").partition("].")
        if not index.isdigit() or int(index) >= len(infos):
            return ()
        found = _rules_for_field(infos[int(index)], config, field, defaults)
        if field == "hash" and found[0] in ("RSS-IN-002", "RSS-XFRM-002", "RSS-IN-004"):
            return (*found, *_parsed_input(scenario.frames[int(index)], infos[int(index)],
                                           config))
        return found

    return rules


def _parsed_input(frame: bytes, info: packet.PacketInfo,
                  config: rss.RssConfig) -> tuple[str, ...]:
    """The header walk behind a hash input (libblame): the addresses and ports RSS-IN-002
    hashes, or the walk that found nothing to hash (RSS-IN-004 of a frame with no flow
    type).  A fragment's hash is RSS-IN-003's choice of the address pair, and an unhashed
    flow type the configuration's: no walk is named for them."""
    flow_type = rss.flow_type_of(info)
    if info.is_fragment or (flow_type is not None and not config.fields_for(flow_type)):
        return ()
    return libblame.frame_rules(bytes(frame)).walk


def _rules_for_field(info: packet.PacketInfo, config: rss.RssConfig, field: str,
                     defaults: bool = True) -> tuple[str, ...]:
    flow_type = rss.flow_type_of(info)
    hashed = flow_type is not None and bool(config.fields_for(flow_type))
    if field == "hash":
        if info.is_fragment:  # the flow type of a fragment decides first (IPV4/6_FLOW)
            return ("RSS-IN-003",)
        if not hashed:
            return ("RSS-IN-004",)
        # Which fields entered the input is the configuration's decision: the default
        # table (RSS-CFG-004) or the ethtool mask the scenario gave (RSS-CFG-001/003).
        chosen = ("RSS-CFG-004",) if defaults else ("RSS-CFG-001", "RSS-CFG-003")
        if config.input_xfrm:  # the transform rewrote those fields (RSS-XFRM-002)
            return ("RSS-XFRM-002", *(() if defaults else chosen))
        return ("RSS-IN-002", "RSS-TOEP-001", *chosen)
    if field == "queue":
        return ("RSS-RETA-004",) if hashed else ("RSS-RETA-005",)
    return ()


#: ``rx-oracle explain --driver rss capture.pcap --config '{}'``: the well-known
#: Microsoft key (the published test vectors hash with it) and one ring.
EXPLAIN_DEFAULTS: dict[str, Any] = {"key": MS_KEY.hex(), "indir": [0]}


def explain(scenario: Scenario) -> str:
    """Each frame's path through RSS, one rule-tagged line per decision."""
    cfg = scenario.config
    lines = [f"rss: key {cfg.get('key', '')[:16]}... ({len(cfg.get('key', '')) // 2} bytes), "
             f"indirection table of {len(cfg.get('indir', []))} entries over ring(s) "
             f"{value_text(sorted(set(cfg.get('indir', []))))}, input_xfrm "
             f"{int(cfg.get('input_xfrm', 0)):#x}"
             + (", ethtool hash fields per flow type" if cfg.get("hash_fields") else
                ", default hash fields (RSS-CFG-004)")]
    for i, frame in enumerate(scenario.frames):
        trace = Trace()
        one = attrs.evolve(scenario, frames=(frame,))
        observed = expected(one, trace)["packets"][0]
        hashed = observed["hash"]
        queue_rules = [e.rule for e in trace if e.rule.startswith("RSS-RETA-")][-1:]
        lines.append(f"packet {i}: {len(frame)} bytes -> hash "
                     f"{value_text(hashed, hex_=True)}, hash_type "
                     f"{rss_type_name(observed['hash_type'])}, queue {observed['queue']}"
                     f" ({', '.join(queue_rules or ['RSS-RETA-005'])})")
        lines += ["  " + event.render() for event in trace]
    return "\n".join(lines)


def applied(scenario: Scenario) -> set[str]:
    trace = Trace()
    expected(scenario, trace)
    return set(trace.rules()) | {r for r in libblame.applied(scenario.frames)
                                 if r.startswith("PKT-")}


COMPONENT = Component(
    name="rss",
    expected=expected,
    attribute=attribute,
    applied=applied,
    field_rules=(
        ("packets[*].hash", ("RSS-IN-002", "RSS-TOEP-001")),
        ("packets[*].hash_type", ("RSS-TYPE-001",)),
        ("packets[*].queue", ("RSS-RETA-004",)),
        ("packets", ("RSS-IN-001",)),
    ),
)


@st.composite
def boundary_frames(draw: st.DrawFn) -> bytes:
    """Frames at the edges of what RSS reads (RSS-IN-001..004): ports 0 and 65535 of
    each L4, an IPv4 fragment at offset 1 (8 bytes) and at the last offset, IPv6 behind
    extension headers, IPv6 with no next header, an IPv6 fragment at offset 1; and the
    parser's own choices (libblame): a 0x9100 outer tag walked like 0x8100 (PKT-VLAN-002),
    an IPv6 AH walked as an extension header (PKT-IP6-006)."""
    sport, dport = draw(st.sampled_from([(0, 65535), (65535, 0), (65535, 65535), (1, 0)]))
    l4: Packet = draw(st.sampled_from([TCP(sport=sport, dport=dport, flags="A"),
                                        UDP(sport=sport, dport=dport),
                                        SCTP(sport=sport, dport=dport)]))
    v4 = IP(src="192.0.2.1", dst="198.51.100.7")
    v6 = IPv6(src="2001:db8::1", dst="2001:db8::7")
    kind = draw(st.sampled_from(["v4", "v6", "v6ext", "frag1", "fraglast", "v6none",
                                 "v6frag1", "qinq", "v6ah"]))
    # AH's length counts 4-byte words minus 2: 12 header bytes and a 12-byte ICV are 4.
    ah = AH(nh={TCP: 6, UDP: 17, SCTP: 132}[type(l4)], payloadlen=4, spi=0x100, seq=1,
            icv=b"\0" * 12)
    l3: Packet = {
        "v4": v4 / l4,
        "v6": v6 / l4,
        "v6ext": v6 / IPv6ExtHdrHopByHop() / IPv6ExtHdrDestOpt() / l4,
        "frag1": IP(src="192.0.2.1", dst="198.51.100.7", proto=6, frag=1) / Raw(b"x" * 16),
        "fraglast": IP(src="192.0.2.1", dst="198.51.100.7", proto=17, frag=0x1FFF)
        / Raw(b"y" * 8),
        "v6none": IPv6(src="2001:db8::1", dst="2001:db8::7", nh=59) / Raw(b"z" * 8),
        "v6frag1": v6 / IPv6ExtHdrFragment(offset=1, nh=17) / Raw(b"w" * 16),
        "qinq": Dot1Q(prio=3, vlan=5) / v4 / l4,
        "v6ah": IPv6(src="2001:db8::1", dst="2001:db8::7", nh=51) / ah / l4,
    }[kind]
    eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    if kind == "qinq":
        eth.type = 0x9100  # ETH_P_QINQ1
    return bytes(eth / l3)


_PORT_FLOWS = (rss.TCP_V4_FLOW, rss.UDP_V4_FLOW, rss.SCTP_V4_FLOW, rss.TCP_V6_FLOW,
               rss.UDP_V6_FLOW, rss.SCTP_V6_FLOW)


@st.composite
def hash_field_masks(draw: st.DrawFn, *, symmetric: bool = False) -> dict[str, int]:
    """An ethtool field mask per flow type (RSS-CFG-001, RSS-CFG-003): any subset of the
    address and port flags for the port flows, of the address flags for the plain IP flows;
    a flow type left out hashes nothing.  ``symmetric``: only the masks a symmetric
    ``input_xfrm`` accepts (RSS-XFRM-001: each pair whole or absent), so the transform
    also meets ports-only and addresses-only inputs (RSS-XFRM-002)."""
    both_addr, both_ports = rss.RXH_IP_SRC | rss.RXH_IP_DST, rss.RXH_L4_B_0_1 | rss.RXH_L4_B_2_3
    addr = st.sampled_from([0, both_addr] if symmetric
                           else [0, rss.RXH_IP_SRC, rss.RXH_IP_DST, both_addr])
    ports = st.sampled_from([0, both_ports] if symmetric
                            else [0, rss.RXH_L4_B_0_1, rss.RXH_L4_B_2_3, both_ports])
    out = {}
    for flow in _PORT_FLOWS:
        if draw(st.integers(0, 5)):
            out[str(flow)] = draw(addr) | draw(ports)
    for flow in (rss.IPV4_FLOW, rss.IPV6_FLOW):
        if draw(st.integers(0, 5)):
            out[str(flow)] = draw(addr)
    return out


@st.composite
def scenarios(draw: st.DrawFn, *, symmetric: bool | None = None,
              fragments: bool = False) -> Scenario:
    """RSS scenarios: a key, a table over 1-16 rings, default fields, a few frames
    (only fragments with ``fragments``)."""
    n_rings = draw(st.integers(1, 16))
    size = draw(st.sampled_from([64, 128, 256]))
    xfrm = draw(st.sampled_from([0, 0, rss.RXH_XFRM_SYM_XOR, rss.RXH_XFRM_SYM_OR_XOR])
                if symmetric is None else st.just(rss.RXH_XFRM_SYM_XOR if symmetric else 0))
    kinds = (ip_frames(fragment=True) if fragments
             else st.one_of(ip_frames(), ethernet_frames(), boundary_frames(),
                            st.sampled_from(header_cases()), header_frames()))
    frames = draw(st.lists(kinds, min_size=1, max_size=4))
    config: dict[str, Any] = {"key": draw(rss_keys()).hex(),
                              "indir": list(rss.default_indir(size, n_rings)),
                              "input_xfrm": xfrm}
    if draw(st.integers(0, 2)) == 0:
        config["hash_fields"] = draw(hash_field_masks(symmetric=bool(xfrm)))
    return Scenario(
        component="rss",
        config=config,
        frames=tuple(frames),
        rules=("RSS-IN-002", "RSS-TOEP-001", "RSS-TYPE-001", "RSS-RETA-004"),
    )


def header_scenarios() -> list[Scenario]:
    """Every :func:`~conformance.strategies.frames.header_cases` frame once, in scenarios
    of 16 frames under the default fields, all four tuples, both symmetric transforms,
    ports alone under a transform and half pairs:
    the parser's facts at each boundary (IHL 5/6/15, TCP data offsets, L4 headers ending
    exactly at the datagram's end or one byte short in a first fragment, other protocols,
    extension headers, tags with PCP/DEI set) decide the flow type and the hashed fields
    (RSS-IN-001..003)."""
    cases = header_cases()
    key = MS_KEY.hex()
    four = {str(f): rss.FOUR_TUPLE for f in _PORT_FLOWS}
    four.update({str(rss.IPV4_FLOW): rss.TWO_TUPLE, str(rss.IPV6_FLOW): rss.TWO_TUPLE})
    # Ports alone under a symmetric transform (no address pair enters the input), and a
    # source address with the destination port alone (neither pair whole): RSS-IN-002's
    # and RSS-XFRM-002's field tests each taken both ways.
    ports = {str(f): rss.RXH_L4_B_0_1 | rss.RXH_L4_B_2_3 for f in _PORT_FLOWS}
    halves = {str(f): rss.RXH_IP_SRC | rss.RXH_L4_B_2_3 for f in _PORT_FLOWS}
    halves.update({str(rss.IPV4_FLOW): rss.RXH_IP_SRC, str(rss.IPV6_FLOW): rss.RXH_IP_SRC})
    configs: list[dict[str, Any]] = [
        {}, {"hash_fields": four}, {"input_xfrm": rss.RXH_XFRM_SYM_XOR},
        {"input_xfrm": rss.RXH_XFRM_SYM_OR_XOR, "hash_fields": four},
    ]
    chunks = [(cases[i:i + 16], configs[(i // 16) % len(configs)])
              for i in range(0, len(cases), 16)]
    with_ports = tuple(f for f in cases if packet.parse(f).sport >= 0)[:16]
    chunks += [(with_ports, {"input_xfrm": rss.RXH_XFRM_SYM_XOR, "hash_fields": ports}),
               (with_ports, {"hash_fields": halves})]
    return [Scenario(
        component="rss",
        config={"key": key, "indir": list(rss.default_indir(128, 7)), **extra},
        frames=tuple(frames),
        rules=("RSS-IN-001", "RSS-IN-002", "RSS-IN-003",
               *(("RSS-XFRM-002",) if extra.get("input_xfrm") else ())),
    ) for frames, extra in chunks]


#: The rules :func:`fixed_scenarios` aims at (tests/test_rss's property spells them out).
FIXED_RULES = ("RSS-IN-001", "RSS-IN-002", "RSS-IN-003", "RSS-IN-004", "RSS-RETA-004",
               "RSS-RETA-005", "PKT-VLAN-001", "PKT-IP6-003", "PKT-IP6-004", "PKT-IP6-005")


def fixed_scenarios() -> list[tuple[str, Scenario]]:
    """Edges the random draws miss, each once (the full mutation run's survivors):

    * RSS-IN-001/002: port 0 is a port (a TCP, UDP or SCTP header with source or
      destination port 0 still selects the 4-tuple flow type and hashes the zeros);
    * RSS-RETA-004: a hash of 0xFFFFFFFF is a hash (the key's first 32 bits all ones and an
      address pair whose only set bit is the first: the hash is those 32 bits), indexing
      the table's last entry;
    * PKT-VLAN-001, PKT-IP6-003..005: a header walk that ends exactly where a header
      ends: a frame that stops right after its VLAN tag (one tag, and a QinQ pair), an
      IPv6 datagram that ends right after its Fragment header (No Next Header, or a first
      fragment with no room for its TCP header) or right after an extension header whose
      next header is No Next Header.
    """
    eth = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    v4 = IP(src="192.0.2.1", dst="198.51.100.7")
    v6 = IPv6(src="2001:db8::1", dst="2001:db8::7")
    four = {str(f): rss.FOUR_TUPLE for f in _PORT_FLOWS}
    indir = list(rss.default_indir(128, 7))
    mac = bytes(eth)[:12]
    ports = [bytes(eth / v4 / TCP(sport=0, dport=80, flags="A")),
             bytes(eth / v4 / UDP(sport=0, dport=0)),
             bytes(eth / v4 / SCTP(sport=0, dport=9)),
             bytes(eth / v6 / TCP(sport=0, dport=443, flags="A")),
             bytes(eth / v6 / UDP(sport=0, dport=53)),
             bytes(eth / v4 / TCP(sport=1, dport=0, flags="A"))]
    all_ones = (b"\xff" * 4 + MS_KEY[4:]).hex()
    # Toeplitz input 80 00 00 00 00 00 00 00 (IPv4 2-tuple): the key window at bit 0.
    top_bit = bytes(eth / IP(src="128.0.0.0", dst="0.0.0.0", proto=47) / Raw(b"\0" * 8))
    walk_ends = [
        mac + b"\x81\x00\x20\x05\x08\x06",  # one tag, then nothing
        mac + b"\x88\xa8\x00\x07\x81\x00\x20\x05\x08\x06",  # QinQ, then nothing
        bytes(eth / v6 / IPv6ExtHdrFragment(nh=59, offset=0, m=1)),
        bytes(eth / v6 / IPv6ExtHdrFragment(nh=6, offset=0, m=1)),
        bytes(eth / v6 / IPv6ExtHdrHopByHop(nh=59)),
        bytes(eth / v6 / IPv6ExtHdrDestOpt(nh=59)),
        bytes(eth / v6 / IPv6ExtHdrHopByHop() / IPv6ExtHdrDestOpt(nh=59)),
    ]
    return [
        ("port 0", Scenario(component="rss",
                            config={"key": MS_KEY.hex(), "indir": indir, "hash_fields": four},
                            frames=tuple(ports), rules=("RSS-IN-001", "RSS-IN-002"))),
        ("hash 0xffffffff", Scenario(component="rss", config={"key": all_ones, "indir": indir},
                                     frames=(top_bit,), rules=("RSS-RETA-004",))),
        ("walk ends at a header", Scenario(component="rss",
                                           config={"key": MS_KEY.hex(), "indir": indir},
                                           frames=tuple(walk_ends),
                                           rules=("RSS-IN-003", "RSS-IN-004", "PKT-VLAN-001",
                                                  "PKT-IP6-003", "PKT-IP6-005"))),
    ]

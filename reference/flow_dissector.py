"""The flow dissector as ``skb_get_hash`` runs it (VETH-KF-002, VETH-KF-005, VETH-KF-007).

``__skb_get_hash_net`` (net/core/flow_dissector.c) zeroes a ``struct flow_keys``, fills it
with ``__skb_flow_dissect`` using ``flow_keys_dissector`` (keys CONTROL, BASIC, IPV4/IPV6
addresses, TIPC, PORTS, VLAN, FLOW_LABEL, GRE_KEYID; no CVLAN, no ICMP) and the flag
``FLOW_DISSECTOR_F_STOP_AT_FLOW_LABEL``, then hashes the bytes of the struct from ``basic``
to the end of the addresses actually present (``flow_keys_hash_start``/``_length``) with a
per-boot siphash key, after ordering the addresses and, separately, the ports
(``__flow_hash_consistentify``).  ``skb->l4_hash`` is ``flow_keys_have_l4``: a non-zero
port word or flow label.

This module walks the same states for the headers the model covers: IPv4, IPv6 with
hop-by-hop, routing, destination-options and fragment headers, IP-in-IP and IPv6-in-IP,
802.1Q/802.1ad tags in band and out of band, the 4-byte port word of
``proto_ports_offset``, and the ethertypes whose case records nothing but ``n_proto``.
GRE, MPLS, PPPoE, TIPC, batman-adv and HSR/PRP fill keys it does not model: the result
then says ``covered = False`` (the caller refuses the scenario).  Read in
``/work/ksrc/7.3`` (7.3.4) and ``/work/ksrc/6.12`` (6.12.117); the parts used here are
the same in both and in v6.17-rc3; the FCoE and PTP cases (which step over their own
header) re-read in 6.12.118.
"""

from __future__ import annotations

import struct

import attrs

from reference.errors import InvalidConfig

ETH_HLEN = 14
VLAN_HLEN = 4
ETH_P_IP, ETH_P_IPV6 = 0x0800, 0x86DD
ETH_P_8021Q, ETH_P_8021AD = 0x8100, 0x88A8
ETH_P_802_3, ETH_P_802_2 = 0x0001, 0x0004
ETH_P_802_3_MIN = 0x0600
#: ``VLAN_MAX_DEPTH``: ``__vlan_get_protocol_offset`` gives up on the 8th tag.
VLAN_MAX_DEPTH = 8
#: ``MAX_FLOW_DISSECT_HDRS``: ``skb_flow_dissect_allowed`` stops the walk after 15 restarts.
MAX_FLOW_DISSECT_HDRS = 15
#: Ethertypes whose case fills keys or walks headers the model does not: the walk
#: reaching one says ``covered = False``.  (ARP/RARP, FCoE, PTP and CFM end the walk
#: with only ``n_proto`` recorded; FCoE and PTP first step over their header.)
_UNMODELLED_ETHERTYPES = frozenset({
    0x8864,  # ETH_P_PPP_SES: walks into the PPP payload
    0x88CA,  # ETH_P_TIPC: fills the TIPC address key
    0x8847, 0x8848,  # ETH_P_MPLS_UC/MC: label entries, entropy label
    0x4305,  # ETH_P_BATMAN: walks into the inner Ethernet frame
    0x88FB, 0x892F,  # ETH_P_PRP, ETH_P_HSR: walk past the tag
})
#: ``ETH_P_FCOE``/``FCOE_HEADER_LEN`` (include/scsi/fc/fc_fcoe.h) and ``ETH_P_1588`` with
#: ``sizeof(struct ptp_header)`` (include/linux/ptp_classify.h): the two ethertypes whose
#: case moves ``nhoff`` past a header of their own before out_good (PKT-L4-007).
ETH_P_FCOE, FCOE_HEADER_LEN = 0x8906, 38
ETH_P_1588, PTP_HEADER_LEN = 0x88F7, 34
IPPROTO_IPIP, IPPROTO_IPV6, IPPROTO_GRE, IPPROTO_MPLS = 4, 41, 47, 137
_IPV6_OPT_HDRS = (0, 43, 60)  # NEXTHDR_HOP, NEXTHDR_ROUTING, NEXTHDR_DEST
NEXTHDR_FRAGMENT = 44
#: ``proto_ports_offset`` (include/linux/in.h): TCP, UDP, DCCP, ESP, SCTP, UDP-Lite at 0,
#: AH (its SPI) at 4.
PORTS_OFFSET = {6: 0, 17: 0, 33: 0, 50: 0, 132: 0, 136: 0, 51: 4}


@attrs.frozen
class VlanKey:
    """``struct flow_dissector_key_vlan`` as ``__skb_flow_dissect`` fills it: the VID and
    the priority (never the DEI bit), the TPID that led to the tag and the ethertype after
    it."""

    vlan_id: int
    vlan_priority: int
    vlan_tpid: int
    vlan_eth_type: int


@attrs.frozen
class FlowKeys:
    """The members of ``struct flow_keys`` that ``flow_keys_dissector`` fills and that
    ``__flow_hash_from_keys`` hashes, plus two facts the model needs.

    ``addrs``: the addresses (4 or 16 bytes each; None: ``addr_type`` 0, nothing hashed);
    ``ports``: the 32-bit port word (source in the high half); ``flow_label``: IPv6's
    (``tags``); ``vlan``: the outer tag (the CVLAN key is not in ``flow_keys_dissector``).
    ``fragment`` (``FLOW_DIS_IS_FRAGMENT``) is in ``control``, which is not hashed.
    ``covered``: False when the walk reached a header the model does not dissect.
    """

    n_proto: int
    ip_proto: int = 0
    addrs: tuple[bytes, bytes] | None = None
    ports: int = 0
    flow_label: int = 0
    vlan: VlanKey | None = None
    fragment: bool = False
    covered: bool = True

    @property
    def has_l4(self) -> bool:
        """``flow_keys_have_l4``: a non-zero port word or IPv6 flow label (VETH-KF-002)."""
        return self.ports != 0 or self.flow_label != 0


def eth_type_trans_protocol(frame: bytes) -> int:
    """``eth_type_trans``'s return value (no DSA): an ethertype of at least 0x0600, else
    ``ETH_P_802_3`` when the payload starts 0xFFFF, else ``ETH_P_802_2`` (also when
    fewer than two payload bytes exist: ``skb_header_pointer`` fails)."""
    ethertype = int(struct.unpack_from("!H", frame, 12)[0])
    if ethertype >= ETH_P_802_3_MIN:
        return ethertype
    if frame[ETH_HLEN:ETH_HLEN + 2] == b"\xff\xff":
        return ETH_P_802_3
    return ETH_P_802_2


def af_packet_network_offset(frame: bytes) -> int:
    """Where an AF_PACKET ``SOCK_RAW`` send leaves ``skb->network_header`` (VETH-KF-007).

    ``packet_snd`` sets it just past the Ethernet header; ``packet_parse_headers`` then
    moves it past every in-band 802.1Q/802.1ad tag when ``vlan_get_protocol_and_depth``
    can walk them (``mac_len`` is 0, so the walk starts at ``ETH_HLEN``; it gives up,
    leaving the header at 14, on the 8th tag or when a tag is cut off).  veth forwards
    the skb without touching this offset, so the dissector starts there.
    """
    proto = int(struct.unpack_from("!H", frame, 12)[0])
    if proto not in (ETH_P_8021Q, ETH_P_8021AD):
        return ETH_HLEN
    depth, parse_depth = ETH_HLEN, VLAN_MAX_DEPTH
    while True:
        parse_depth -= 1
        if len(frame) < depth + VLAN_HLEN or parse_depth == 0:
            return ETH_HLEN
        proto = int(struct.unpack_from("!H", frame, depth + 2)[0])
        depth += VLAN_HLEN
        if proto not in (ETH_P_8021Q, ETH_P_8021AD):
            return depth


@attrs.define
class _Walk:
    """The mutable state of one ``__skb_flow_dissect`` run (local variables and keys)."""

    data: bytes
    proto: int
    nhoff: int
    oob_vlan: tuple[int, int] | None
    skb_protocol: int
    ip_proto: int = 0
    addrs: tuple[bytes, bytes] | None = None
    ports: int = 0
    flow_label: int = 0
    vlan: VlanKey | None = None
    vlan_depth: int = 0  # dissector_vlan: 0 = none yet, 1 = VLAN, 2 = CVLAN
    fragment: bool = False
    covered: bool = True
    num_hdrs: int = 0
    #: ``FLOW_DISSECTOR_F_STOP_AT_FLOW_LABEL`` (skb_get_hash) and
    #: ``FLOW_DISSECTOR_F_PARSE_1ST_FRAG`` (eth_get_headlen, PKT-L4-007).
    stop_at_flow_label: bool = True
    parse_1st_frag: bool = False
    first_frag: bool = False  # FLOW_DIS_FIRST_FRAG

    def read(self, offset: int, size: int) -> bytes | None:
        """``__skb_header_pointer`` on the linear data: None past ``hlen``."""
        if offset < 0 or offset + size > len(self.data):
            return None
        return self.data[offset:offset + size]

    def allowed(self) -> bool:
        """``skb_flow_dissect_allowed``."""
        self.num_hdrs += 1
        return self.num_hdrs <= MAX_FLOW_DISSECT_HDRS

    def keys(self) -> FlowKeys:
        return FlowKeys(self.proto, self.ip_proto, self.addrs, self.ports, self.flow_label,
                        self.vlan, self.fragment, self.covered)

    # --- the proto_again switch: "good", "bad", "again" or "continue" -----------------

    def proto_step(self) -> str:
        if self.proto == ETH_P_IP:
            return self._ipv4()
        if self.proto == ETH_P_IPV6:
            return self._ipv6()
        if self.proto in (ETH_P_8021Q, ETH_P_8021AD):
            return self._vlan()
        if self.proto in _UNMODELLED_ETHERTYPES:
            self.covered = False
            return "bad"
        if self.proto in (ETH_P_FCOE, ETH_P_1588):
            # PKT-L4-007: FCoE and PTP step over their own header (the FCoE header, struct
            # ptp_header), out_bad when the frame holds less of it; no key of theirs.
            size = FCOE_HEADER_LEN if self.proto == ETH_P_FCOE else PTP_HEADER_LEN
            if self.read(self.nhoff, size) is None:
                return "bad"
            self.nhoff += size
            return "good"
        if self.proto in (0x0806, 0x8035, 0x8902):
            # ARP/RARP, CFM: their keys are not in the key set, so out_good where they are.
            return "good"
        return "bad"

    def _ipv4(self) -> str:
        iph = self.read(self.nhoff, 20)
        if iph is None or iph[0] & 0x0F < 5:
            return "bad"
        self.nhoff += (iph[0] & 0x0F) * 4
        self.ip_proto = iph[9]
        self.addrs = (iph[12:16], iph[16:20])
        frag_off = int(struct.unpack_from("!H", iph, 6)[0])
        if frag_off & 0x3FFF:  # ip_is_fragment: MF or an offset
            self.fragment = True
            if frag_off & 0x1FFF:  # IP_OFFSET: a later fragment ends the walk
                return "good"
            self.first_frag = True
            return "continue" if self.parse_1st_frag else "good"
        return "continue"

    def _ipv6(self) -> str:
        iph = self.read(self.nhoff, 40)
        if iph is None:
            return "bad"
        self.ip_proto = iph[6]
        self.nhoff += 40
        self.addrs = (iph[8:24], iph[24:40])
        label = int(struct.unpack_from("!I", iph, 0)[0]) & 0xFFFFF
        if label and self.stop_at_flow_label:
            self.flow_label = label
            return "good"
        return "continue"

    def _vlan(self) -> str:
        tpid = self.proto
        tci: int
        if self.vlan_depth == 0 and self.oob_vlan is not None:
            # The out-of-band tag: the ethertype after it is skb->protocol; no bytes read.
            self.proto, tci = self.skb_protocol, self.oob_vlan[1]
        else:
            hdr = self.read(self.nhoff, VLAN_HLEN)
            if hdr is None:
                return "bad"
            tci, self.proto = struct.unpack("!HH", hdr)
            self.nhoff += VLAN_HLEN
        if self.vlan_depth >= 2:
            return "again"  # a third tag: walked, not recorded
        self.vlan_depth += 1
        if self.vlan_depth == 1:  # KEY_VLAN; the second (CVLAN) is not a flow_keys key
            self.vlan = VlanKey(tci & 0x0FFF, tci >> 13, tpid, self.proto)
        return "again"

    # --- the ip_proto_again switch ------------------------------------------------------

    def ip_proto_step(self) -> str:
        if self.ip_proto in (IPPROTO_GRE, IPPROTO_MPLS):
            self.covered = False
            return "bad"
        if self.ip_proto in _IPV6_OPT_HDRS:
            if self.proto != ETH_P_IPV6:
                return "continue"
            opt = self.read(self.nhoff, 2)
            if opt is None:
                return "bad"
            self.ip_proto = opt[0]
            self.nhoff += (opt[1] + 1) << 3
            return "ip_again"
        if self.ip_proto == NEXTHDR_FRAGMENT:
            if self.proto != ETH_P_IPV6:
                return "continue"
            fh = self.read(self.nhoff, 8)
            if fh is None:
                return "bad"
            self.fragment = True
            self.nhoff += 8
            self.ip_proto = fh[0]
            if not int(struct.unpack_from("!H", fh, 2)[0]) & 0xFFF8:  # IP6_OFFSET zero
                self.first_frag = True
                if self.parse_1st_frag:
                    return "ip_again"
            return "good"
        if self.ip_proto == IPPROTO_IPIP:
            self.proto = ETH_P_IP
            return "again"
        if self.ip_proto == IPPROTO_IPV6:
            self.proto = ETH_P_IPV6
            return "again"
        return "continue"

    def dissect_ports(self) -> None:
        """``__skb_flow_dissect_ports``/``skb_flow_get_ports``: rewritten on every pass."""
        poff = PORTS_OFFSET.get(self.ip_proto)
        word = None if poff is None else self.read(self.nhoff + poff, 4)
        self.ports = 0 if word is None else int(struct.unpack("!I", word)[0])


def flow_dissect(data: bytes, *, protocol: int | None = None, nhoff: int = ETH_HLEN,
                 oob_vlan: tuple[int, int] | None = None) -> FlowKeys:
    """``__skb_flow_dissect`` with ``flow_keys_dissector`` and STOP_AT_FLOW_LABEL on an
    skb whose linear data is ``data`` (from the MAC header on).

    ``protocol``: ``skb->protocol`` (default: :func:`eth_type_trans_protocol` of the
    frame); ``nhoff``: ``skb_network_offset`` within ``data``; ``oob_vlan``: the skb's
    hw-accel tag ``(vlan_proto, vlan_tci)``, whose TPID is where the walk starts.
    """
    if protocol is None:
        protocol = eth_type_trans_protocol(data) if len(data) >= ETH_HLEN else 0
    start = oob_vlan[0] if oob_vlan is not None else protocol
    walk = _Walk(data, start, nhoff, oob_vlan, protocol)
    _dissect(walk)
    return walk.keys()


def _dissect(walk: _Walk) -> bool:
    """The ``proto_again`` / ``ip_proto_again`` loop of ``__skb_flow_dissect``; True for
    ``out_good``, False for ``out_bad``.  ``walk.nhoff`` is where it stopped."""
    while True:  # proto_again
        ret = walk.proto_step()
        if ret in ("good", "bad"):
            return ret == "good"
        if ret == "again":
            if walk.allowed():
                continue
            return True
        while True:  # ip_proto_again
            ret = walk.ip_proto_step()
            if ret == "bad":
                return False
            if not walk.fragment:
                walk.dissect_ports()
            if ret == "again" and walk.allowed():
                break
            if ret == "ip_again" and walk.allowed():
                continue
            return True


#: ``__skb_get_poff``: the L4 header length added for a first (or no) fragment, by
#: protocol; TCP takes its data offset instead (at least 20).
L4_HEADER_LEN = {17: 8, 136: 8, 1: 8, 58: 8, 2: 8, 33: 12, 132: 12}


def eth_get_headlen(data: bytes) -> int:
    """PKT-L4-007: ``eth_get_headlen(dev, data, len(data))``: how many of the first
    ``len(data)`` bytes of a frame are headers (L2, L3 and the L4 header).

    Shorter than an Ethernet header: all of it.  Otherwise the basic flow dissector
    (``FLOW_DISSECTOR_F_PARSE_1ST_FRAG``, no flow-label stop) walks from the ethertype at
    offset 14.  A walk that fails gives ``max(thoff, 14)``, where ``thoff`` is where it
    stopped, capped at ``len(data)``; one that succeeds gives ``__skb_get_poff`` (``thoff``
    plus the L4 header for an unfragmented packet or a first fragment), capped at
    ``len(data)``.  A header the model does not dissect (GRE, MPLS, PPPoE, ...) is
    refused with :class:`~reference.errors.InvalidConfig` rather than guessed.
    """
    if len(data) < ETH_HLEN:
        return len(data)
    proto = int(struct.unpack_from("!H", data, 12)[0])
    walk = _Walk(data, proto, ETH_HLEN, None, proto, stop_at_flow_label=False,
                 parse_1st_frag=True)
    good = _dissect(walk)
    if not walk.covered:
        raise InvalidConfig("eth_get_headlen: the flow dissector would walk a header the "
                            "model does not dissect (GRE, MPLS, PPPoE, TIPC, batman-adv, "
                            "HSR)", field="frame", value=data[:64].hex(),
                            rule="PKT-L4-007")
    thoff = min(walk.nhoff, len(data))
    if not good:
        return max(thoff, ETH_HLEN)
    poff = thoff
    if not walk.fragment or walk.first_frag:
        if walk.ip_proto == 6:  # IPPROTO_TCP: doff, if the byte is there
            doff = walk.read(thoff + 12, 1)
            if doff is not None:
                poff += max(20, (doff[0] & 0xF0) >> 2)
        else:
            poff += L4_HEADER_LEN.get(walk.ip_proto, 0)
    return min(poff, len(data))


def flow_key_hash(keys: FlowKeys) -> int:
    """VETH-KF-005: a stand-in for ``skb_get_hash``, equal exactly when the hashed keys
    are equal after ``__flow_hash_consistentify``, never 0.

    The hashed bytes run from ``basic`` to the end of the addresses present: ``n_proto``,
    ``ip_proto``, the flow label, the VLAN key, the ports and the addresses.  The addresses
    are ordered and, independently, the two ports, so both directions of a flow (and a
    flow with only its ports swapped) give the same keys.  The kernel's value is keyed per
    boot; only these equalities are comparable.
    """
    parts: list[bytes] = [keys.n_proto.to_bytes(2, "big"), bytes([keys.ip_proto]),
                          keys.flow_label.to_bytes(4, "big")]
    vlan = keys.vlan or VlanKey(0, 0, 0, 0)  # zeroed by __skb_get_hash_net when absent
    parts.append(struct.pack("!HBHH", vlan.vlan_id, vlan.vlan_priority, vlan.vlan_tpid,
                             vlan.vlan_eth_type))
    ports = [keys.ports >> 16, keys.ports & 0xFFFF]
    if keys.addrs is not None:  # consistentify only with an IPv4 or IPv6 addr_type
        ports.sort()
    parts.append(struct.pack("!HH", *ports))
    if keys.addrs is not None:
        parts += sorted(keys.addrs)
    value = 0x811C9DC5
    for byte in b"".join(parts):
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return value or 1

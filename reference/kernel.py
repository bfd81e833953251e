"""The kernel version the model predicts for, and the version gates (KVER-001, KVER-002).

Behaviour differs between the kernels people run: the 6.12 LTS line (Debian trixie), the
6.18 line (the project's live hosts) and the newest mainline read in full (7.3).  Some
differences arrive in a stable release, so "6.12" is not one behaviour: 6.12.57 and
6.12.117 differ.  This module is the one place that says which side of each change a
version is on.  A *gate* is data: the SPEC rule it belongs to, the commit that changed
the behaviour, the two sides in a few words, and a predicate over :class:`KernelVersion`.
Code asks ``gate(kernel, "FEC-RX-005")`` and so names the rule it implements;
``tests/test_kernel.py`` checks that every gate's rule exists in SPEC.md, names the commit
and describes both sides.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import attrs

from reference.errors import OracleError


@attrs.frozen(order=True)
class KernelVersion:
    """KVER-001: a kernel release as ``major.minor.sublevel`` (extra version dropped)."""

    major: int
    minor: int
    sublevel: int = 0

    @property
    def series(self) -> tuple[int, int]:
        return (self.major, self.minor)

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.sublevel}"


#: KVER-001: the series the model describes, each with the exact tree a bare series
#: means: the tree that was read (6.12 and 7.3 from Debian's ``linux-source-*``
#: packages) or, for 6.18, the release the project's live hosts run (6.18.44), whose
#: values SPEC infers from commit dates and the 6.18.y notes of its second reading.
SUPPORTED: Mapping[tuple[int, int], KernelVersion] = {
    (6, 12): KernelVersion(6, 12, 117),
    (6, 18): KernelVersion(6, 18, 44),
    (7, 3): KernelVersion(7, 3, 4),
}

#: KVER-001: without a version the model predicts for the newest series it describes.
DEFAULT_KERNEL: KernelVersion = max(SUPPORTED.values())

_VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-+~_].*)?")


class UnsupportedKernel(OracleError):
    """KVER-002: a version the model does not describe, or text that is not a version."""

    rule = "KVER-002"


def supported_list() -> str:
    """The supported series and the tree each bare series means, for messages."""
    return ", ".join(f"{m}.{n} (= {v})" for (m, n), v in sorted(SUPPORTED.items()))


def parse_kernel(text: str, field: str = "kernel") -> KernelVersion:
    """KVER-001: ``"6.12"``, ``"6.12.57"``, ``"7.3.4"``, or a ``uname -r`` string such as
    ``"6.18.44-cloud-amd64"`` or ``"6.12.117+deb13-armmp"``.

    A bare series means the tree the model was read from (:data:`SUPPORTED`).  KVER-002:
    a series the model does not describe is refused with the supported list; it is never
    mapped to a neighbour.  ``field`` names the input in the message (``--kernel``,
    ``scenario.kernel``).
    """
    match = _VERSION.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise UnsupportedKernel(
            f"{field} {text!r}: not a kernel version (KVER-002); supported: {supported_list()}")
    major, minor = int(match.group(1)), int(match.group(2))
    tree = SUPPORTED.get((major, minor))
    if tree is None:
        raise UnsupportedKernel(
            f"{field} {text!r}: {major}.{minor} is not a version the model describes "
            f"(KVER-002); supported: {supported_list()}")
    if match.group(3) is None:
        return tree
    return KernelVersion(major, minor, int(match.group(3)))


def same_series(a: str, b: str) -> bool:
    """Whether two version strings name the same series (``6.12.57`` and ``6.12.117``);
    text that does not parse is never the same series as anything."""
    pa, pb = _VERSION.fullmatch(a.strip()), _VERSION.fullmatch(b.strip())
    return bool(pa and pb and pa.group(1, 2) == pb.group(1, 2))


def resolve_kernel(text: str | None) -> KernelVersion:
    """KVER-001: the version a scenario or option names, or the default when it names none."""
    return DEFAULT_KERNEL if not text else parse_kernel(text)


@attrs.frozen
class Since:
    """The versions on the *new* side of a change: every mainline release from
    ``mainline`` on, and within a stable series every sublevel from the one that
    carried the backport (``stable``, as ``(major, minor, sublevel)`` triples)."""

    mainline: tuple[int, int] | None = None
    stable: tuple[tuple[int, int, int], ...] = ()

    def holds(self, kernel: KernelVersion) -> bool:
        for major, minor, sublevel in self.stable:
            if kernel.series == (major, minor):
                return kernel.sublevel >= sublevel
        return self.mainline is not None and kernel.series >= self.mainline

    def describe(self) -> str:
        parts = [f"{m}.{n}.y >= {m}.{n}.{s}" for m, n, s in self.stable]
        if self.mainline is not None:
            parts.insert(0, f"v{self.mainline[0]}.{self.mainline[1]} and later")
        return "; ".join(parts) or "never"


@attrs.frozen
class Gate:
    """One behaviour change: the rule it belongs to, the commit (an id, or the exact
    subject where the id was not found), the behaviour before and after, and which
    versions have the new behaviour."""

    rule: str
    commit: str
    before: str
    after: str
    since: Since


#: Every version gate of the model, by rule id (the table in SPEC.md's "Version
#: differences" lists, one per area).
GATES: Mapping[str, Gate] = {g.rule: g for g in (
    Gate("FEC-RX-005", "ad17e7e92a7c",
         "rx_bytes counts the 2-byte RACC pad (cbd_datlen)",
         "rx_bytes leaves the RACC pad out (cbd_datlen - 2 with FEC_QUIRK_HAS_RACC)",
         Since(mainline=(6, 18), stable=((6, 12, 63),))),
    Gate("FEC-DEV-003", "net: fec: update MAX_FL based on the current MTU",
         "the RCR MAX_FL field is PKT_MAXBUF_SIZE (1984): LG only for a truncated frame",
         "MAX_FL is mtu + VLAN_ETH_HLEN + ETH_FCS_LEN (1522): a longer frame is flagged LG",
         Since(mainline=(6, 18))),
    Gate("FEC-XDP-005", "8a3344bb734f",
         "XDP_TX goes to TX queue cpu % num_tx_queues",
         "XDP_TX goes to the TX queue of the RX queue's index (else cpu % num_tx_queues)",
         Since(mainline=(7, 0))),
    Gate("PP-INIT-002", "page_pool: Clamp pool size to max 16K pages",
         "a pool_size above 32768 is -E2BIG",
         "pool_size is silently clamped to 16384",
         Since(mainline=(6, 18), stable=((6, 12, 63),))),
    Gate("PP-INIT-007", "9954464d737d",
         "no order check: a pool of order > MAX_PAGE_ORDER is created and cannot allocate",
         "order > MAX_PAGE_ORDER without a memory provider is -EINVAL at creation",
         Since(mainline=(6, 19))),
    Gate("XDP-ADJ-008", "88b6b7f7b216",
         "unsigned last-frag tailroom from the whole frag offset",
         "signed tailroom with the frag offset modulo rxq->frag_size, WARN when negative",
         Since(mainline=(7, 0), stable=((6, 12, 85), (6, 18, 0)))),
    Gate("XDP-ADJ-010", "8f12d1137c23",
         "freeing every frag leaves XDP_FLAGS_FRAGS_PF_MEMALLOC set",
         "freeing every frag also clears XDP_FLAGS_FRAGS_PF_MEMALLOC",
         Since(mainline=(6, 18), stable=((6, 12, 58),))),
    Gate("XDP-BUFF-006", "6bffdc0f88f8",
         "no XDP_FLAGS_FRAGS_UNREADABLE flag",
         "XDP_FLAGS_FRAGS_UNREADABLE (BIT(2)) set for a net_iov frag",
         Since(mainline=(6, 18))),
    # 6.18.y seen live: 6.18.15 before, 6.18.44 after.  The first 6.18 release with the
    # backport lies in 6.18.16 .. 6.18.44 and is not pinned (Debian packages none of them).
    Gate("KFUNC-ATTACH-004", "ad27ed7d2309",
         "program checks run in dev_xdp_attach, before the ndo_bpf check",
         "program checks run in dev_xdp_install, after the ndo_bpf -EOPNOTSUPP",
         Since(mainline=(7, 3), stable=((6, 12, 113), (6, 18, 44)))),
    Gate("KFUNC-MAP-004", "48e11bad9a1f",
         "a refused CPUMAP entry program reads -ENOMEM",
         "a refused CPUMAP entry program reads its real errno (-EINVAL)",
         Since(mainline=(7, 0))),
    Gate("CPUMAP-MAP-003", "48e11bad9a1f",
         "a refused second program makes the update read -ENOMEM",
         "the update reads the entry allocation's real errno (-EINVAL for a refused program)",
         Since(mainline=(7, 0))),
    Gate("TUN-BUF-001", "c2315ebb0588",
         "tun_build_skb prepares the buffer without metadata (adjust_meta -ENOTSUPP)",
         "tun_build_skb supports metadata",
         Since(mainline=(6, 15))),
    Gate("ZCRX-REG-001", "io_uring/zcrx: add interface queue and refill queue",
         "no IORING_REGISTER_ZCRX_IFQ (the opcode is unknown)",
         "zcrx registration exists",
         Since(mainline=(6, 15))),
    Gate("ZCRX-BUFLEN-001", "795663b4d160",
         "the rx_buf_len word is __resv2 and must be 0 (-EINVAL); niovs are PAGE_SIZE",
         "rx_buf_len chooses the niov size (0: PAGE_SIZE) and is written back",
         Since(mainline=(7, 0))),
    Gate("ZCRX-AREA-002", "io_uring/rsrc: remove registered buffer 1GB limit",
         "an area above 1 GiB is -EFAULT",
         "no 1 GiB limit; an area above 1 TiB is -EINVAL",
         Since(mainline=(7, 2))),
    Gate("ZCRX-REG-004", "00d91481279f",
         "no registration flags: any non-zero flags is -EINVAL",
         "ZCRX_REG_IMPORT and, later, ZCRX_REG_NODEV are known flags",
         Since(mainline=(6, 19))),
    Gate("ZCRX-REG-007", "not identified (the event/notification descriptor, v7.1 cycle)",
         "the event_desc word is the first of __resv[3] and must be 0 (-EINVAL)",
         "event_desc names a notification descriptor (outside the model)",
         Since(mainline=(7, 1))),
    Gate("ZCRX-REG-008", "io_uring/zcrx: move RQ head/tail to separate cache lines",
         "refill header is two adjacent u32s: tail at 4, entries at 64",
         "head and tail on separate cache lines: tail at 64, entries at 128",
         Since(mainline=(7, 3))),
    Gate("ZCRX-AREA-001", "io_uring/zcrx: add dynamic area creation",
         "a non-zero rq_area_token is refused only in io_import_area",
         "also refused when the area is copied in, before the region and the device",
         Since(mainline=(7, 3))),
    Gate("ZCRX-CQE-005", "98ad5b63f504",
         "a multishot receive is requeued only after more than 20 actor calls",
         "also when an error or a short piece stopped an actor call early",
         Since(mainline=(7, 3), stable=((7, 2, 10),))),
    Gate("MLX5-XDP-001", "b66b76a82c88",
         "each RX handler builds a struct mlx5e_xdp_buff on its stack per CQE",
         "the handlers reuse the per-RQ rq->mxbuf",
         Since(mainline=(6, 16), stable=((6, 12, 57),))),
    Gate("MLX5-XDP-004", "afd5ba577c10",
         "XDP_PASS non-linear skbs keep the frag count from before the program",
         "XDP_PASS non-linear skbs take the frags the program left",
         Since(mainline=(6, 18), stable=((6, 12, 57),))),
    Gate("MLX5-XDP-002", "399f030cd612",
         "striding non-linear skbs copy min(256, len) bytes and pull XDP_PASS skbs to 256",
         "they copy only the headers (eth_get_headlen) and pull XDP_PASS skbs to ETH_HLEN",
         Since(mainline=(7, 2))),
    Gate("MLX5-RX-002", "7ed7a576f20a",
         "striding non-linear RQs pass packets longer than hw_mtu",
         "they drop them unless LRO (lro_num_seg > 1), counting oversize_pkts_sw_drop",
         Since(mainline=(7, 0))),
    Gate("CPUMAP-KT-003", "cpumap: switch to napi_skb_cache_get_bulk()",
         "kmem_cache_alloc_bulk is all or nothing: a batch short of one skb head gets none",
         "napi_skb_cache_get_bulk hands out the heads it has; only the frames without one "
         "go back",
         Since(mainline=(6, 15))),
    Gate("CPUMAP-KT-004", "cpumap: switch to GRO from netif_receive_skb_list()",
         "the kthread passes each batch to netif_receive_skb_list() (no GRO)",
         "the kthread runs GRO per entry, flushed every 64 packets or when the ring empties",
         Since(mainline=(6, 15))),
)}


def gate(kernel: KernelVersion, rule: str) -> bool:
    """Whether ``kernel`` has the new behaviour of the change recorded under ``rule``."""
    return GATES[rule].since.holds(kernel)

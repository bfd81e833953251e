"""A deterministic two-CPU scenario: page_pool RX on CPU A, XDP_REDIRECT into a cpumap
entry on CPU B, skbs built and freed on CPU B (rules CPUMAP-SIM-*, CPUMAP-FATE-001).

The engine runs a *schedule*, a list of steps, each on one CPU:

* ``("rx", n)``: one NAPI poll on CPU A receiving ``n`` packets.  Each packet takes a
  page (page_pool with NAPI owner A, or an order-0 page when the source's memory type
  is ``MEM_TYPE_PAGE_ORDER0``), becomes an ``xdp_buff``, its program returns
  XDP_REDIRECT and the frame goes to ``cpu_map_enqueue``; the poll ends with
  ``xdp_do_flush`` (``__cpu_map_flush``).
* ``("kthread", k)``: ``k`` iterations of the cpumap kthread on CPU B.
* ``("free", n)``: the stack frees the ``n`` oldest skbs passed up (``napi_consume_skb``)
  on ``free_cpu`` (B by default), in softirq.
* ``("update", q)``: ``cpu_map_update_elem`` on CPU B's slot with ``qsize`` ``q`` and the
  same program: a fresh entry replaces the old one, whose kthread drains its ring before
  it stops; ``q`` 0 deletes the entry (CPUMAP-MAP-002, CPUMAP-SIM-006).

With ``frags`` a packet also takes frag pages from the same source and is a multi-buffer
``xdp_buff`` (CPUMAP-SIM-007): its frame carries them through the cpumap, the skb and
every return path (CPUMAP-MB-001).

After every step the engine checks page conservation across CPUs (CPUMAP-SIM-002).
The pool's counters then follow CPUMAP-SIM-004, and a schedule where CPU B keeps up
reproduces the seed's steady states under both kernel switches (CPUMAP-SIM-005).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from reference import page_pool as pp
from reference.cpumap import DROP_REASONS, CpuMap, CpuMapEntry
from reference.errors import InvalidConfig
from reference.kernel import DEFAULT_KERNEL, KernelVersion
from reference.kfuncs import LoadedBpfProg
from reference.skb import FreePath, PageFree, SkBuff, napi_consume_skb, pp_page_of
from reference.trace import Trace, emit
from reference.xdp.actions import XdpAction
from reference.xdp.arch import X86_64, xdp_semantics
from reference.xdp.buff import XdpBuff, xdp_buff_add_frag, xdp_init_buff, xdp_prepare_buff
from reference.xdp.frame import (
    XdpFrame,
    xdp_convert_buff_to_frame,
    xdp_frame_has_frags,
    xdp_get_shared_info_from_frame,
)
from reference.xdp.mem import MemType, XdpMemInfo
from reference.xdp.memory import Page as XPage
from reference.xdp.rxq import NetDev, XdpRxqInfo

PAGE_SIZE = 4096
XDP_PACKET_HEADROOM = 256
DEV_RX_IFINDEX = 2
#: CPUMAP-SIM-007: a frag holds at most what the source pool maps for the device, its
#: ``max_len`` (the page after the pool's ``offset``); at most ``MAX_SKB_FRAGS`` per frame.
FRAG_LEN_MAX = PAGE_SIZE - XDP_PACKET_HEADROOM
MAX_FRAGS = X86_64.max_skb_frags

#: Where a received packet is (CPUMAP-FATE-001): exactly one at every step.
FATES = ("bulk", "ring", "gro", "stack", "freed", *(f"dropped:{r}" for r in DROP_REASONS))


@attrs.frozen
class SimConfig:
    """What a scenario fixes (CPUMAP-SIM-001)."""

    cpu_a: int = 0
    cpu_b: int = 1
    qsize: int = 64
    pool_size: int = 256
    mem_type: int = MemType.MEM_TYPE_PAGE_POOL
    pre_v6_4: bool = False
    free_cpu: int | None = None  # None: CPU B
    frame_len: int = 64
    second_prog: tuple[dict[str, Any], ...] | None = None
    #: The map's ``max_entries`` and the machine's possible CPUs (0 .. ``nr_cpus`` - 1),
    #: which the map update checks read (CPUMAP-MAP-001); None: one past the larger CPU.
    max_entries: int | None = None
    nr_cpus: int | None = None
    #: SKB-BUILD-002: the frames' ethertype field, and whether the payload starts 0xFFFF
    #: (raw 802.3, which ``eth_type_trans`` tells from 802.2 below 0x0600).
    ethertype: int = 0x86DD
    raw_802_3: bool = False
    #: CPUMAP-SIM-007: the frag pages of each frame (the packet received i-th carries
    #: ``frags[i % len(frags)]``; empty: every frame is linear) and the bytes in each frag.
    frags: tuple[int, ...] = ()
    frag_len: int = FRAG_LEN_MAX

    def frags_of(self, index: int) -> int:
        """How many frag pages the packet received ``index``-th carries (CPUMAP-SIM-007)."""
        return self.frags[index % len(self.frags)] if self.frags else 0

    def __attrs_post_init__(self) -> None:
        top = max(self.cpu_a, self.cpu_b)
        for name in ("max_entries", "nr_cpus"):
            value = getattr(self, name)
            if value is not None and not top < value <= 1024:
                raise InvalidConfig("the map slots and the possible CPUs hold both CPUs "
                                    "(at most 1024)", field=name, value=value,
                                    rule="CPUMAP-SIM-001")
        if self.cpu_a == self.cpu_b:
            raise InvalidConfig("source and destination CPUs must differ", field="cpu_b",
                                value=self.cpu_b, rule="CPUMAP-SIM-001")
        if self.mem_type not in (MemType.MEM_TYPE_PAGE_POOL, MemType.MEM_TYPE_PAGE_ORDER0):
            raise InvalidConfig("source memory is page_pool or order-0", field="mem_type",
                                value=self.mem_type, rule="CPUMAP-SIM-001")
        if not 0 <= self.ethertype <= 0xFFFF:
            raise InvalidConfig("an ethertype is 16 bits", field="ethertype",
                                value=self.ethertype, rule="CPUMAP-SIM-001")
        if not 60 <= self.frame_len <= 1500:
            raise InvalidConfig("frame length 60..1500", field="frame_len",
                                value=self.frame_len, rule="CPUMAP-SIM-001")
        if len(self.frags) > 64 or any(not 0 <= n <= MAX_FRAGS for n in self.frags):
            raise InvalidConfig(f"at most 64 frag counts of 0..{MAX_FRAGS} (MAX_SKB_FRAGS)",
                                field="frags", value=self.frags, rule="CPUMAP-SIM-007")
        if not 1 <= self.frag_len <= FRAG_LEN_MAX:
            raise InvalidConfig(f"a frag holds 1..{FRAG_LEN_MAX} bytes (the pool's max_len)",
                                field="frag_len", value=self.frag_len, rule="CPUMAP-SIM-007")


def _frame_bytes(index: int, length: int, ethertype: int = 0x86DD,
                 raw_802_3: bool = False) -> bytes:
    """An Ethernet frame of ``length`` bytes carrying its index (content is opaque to
    everything this area models except ``eth_type_trans``, which reads the ethertype and,
    below 0x0600, the payload's first two bytes: 0xFFFF with ``raw_802_3``)."""
    head = (b"\x02\x00\x00\x00\x00\x01" + b"\x02\x00\x00\x00\x00\x02"
            + ethertype.to_bytes(2, "big"))
    body = (b"\xff\xff" if raw_802_3 else b"") + index.to_bytes(4, "big")
    return (head + body).ljust(length, b"\x00")


#: 4096 bytes counting up modulo 256, from which every frag's bytes are cut.
_FRAG_PATTERN = bytes(range(256)) * 16


def _frag_bytes(index: int, k: int, length: int) -> bytes:
    """The ``length`` bytes frag ``k`` of packet ``index`` holds (CPUMAP-SIM-007): bytes
    counting up modulo 256 from ``(17 * index + 5 * k) % 256``, so each frag of each
    packet reads differently."""
    start = (17 * index + 5 * k) % 256
    return _FRAG_PATTERN[start : start + length]


def frame_pages(frame: XdpFrame) -> list[XPage]:
    """The pages a frame holds (CPUMAP-SIM-002): its frags when ``XDP_FLAGS_HAS_FRAGS`` is
    set, then the head page."""
    pages: list[XPage] = []
    if xdp_frame_has_frags(frame):
        pages = [f.page for f in xdp_get_shared_info_from_frame(frame).valid_frags()]
    pages.append(frame.page)
    return pages


class CpumapSim:
    """The engine (CPUMAP-SIM-001).  Read its state through the attributes; every step
    keeps the cross-CPU ledger (CPUMAP-SIM-002) and the frame fates (CPUMAP-FATE-001)."""

    def __init__(self, config: SimConfig, trace: Trace | None = None,
                 kernel: KernelVersion = DEFAULT_KERNEL) -> None:
        self.config = config
        self.trace = trace
        self.allocator = pp.PageAllocator()
        self.napi = pp.NapiStruct(list_owner=config.cpu_a)
        created = pp.page_pool_create(
            pp.PagePoolParams(flags=pp.PP_FLAG_DMA_MAP | pp.PP_FLAG_DMA_SYNC_DEV,
                              pool_size=config.pool_size, max_len=PAGE_SIZE
                              - XDP_PACKET_HEADROOM, offset=XDP_PACKET_HEADROOM,
                              dma_dir=pp.DMA_FROM_DEVICE, napi=self.napi,
                              dev=pp.DmaDevice(record=False)),
            allocator=self.allocator)
        assert created.pool is not None
        self.pool: pp.PagePool = created.pool
        self.rxq = XdpRxqInfo(dev=NetDev(DEV_RX_IFINDEX), mem=XdpMemInfo(type=config.mem_type))
        self.kernel = kernel
        top = max(config.cpu_a, config.cpu_b) + 1
        self.cpumap = CpuMap(config.max_entries or top, range(config.nr_cpus or top),
                             pre_v6_4=config.pre_v6_4, kernel=kernel)
        rc = self.cpumap.update_elem(config.cpu_b, config.qsize)
        if rc:
            raise InvalidConfig("cpumap entry refused", field="qsize", value=config.qsize,
                                rule="CPUMAP-MAP-001")
        entry = self.cpumap.lookup(config.cpu_b)
        assert entry is not None
        self.entry: CpuMapEntry = entry
        if config.second_prog is not None:
            entry.prog = config.second_prog
        self._xpages: dict[int, XPage] = {}
        self.frames: list[XdpFrame] = []  # received packet index -> its frame
        self._index: dict[int, int] = {}  # id(frame) -> packet index
        self._skb_of: dict[int, SkBuff] = {}  # packet index -> skb
        self._skb_index: dict[int, int] = {}  # id(skb) -> packet index
        self.freed: set[int] = set()
        self.rx_alloc_failures = 0
        self.frees: list[PageFree] = []  # stack frees
        #: CPUMAP-SIM-007: pages a packet took before one of its pages could not be had,
        #: given back by the driver in its poll on CPU A.
        self.rx_frees: list[PageFree] = []
        #: CPUMAP-SIM-002: the order-0 pages taken from the page allocator, by pfn, until
        #: they are freed and held by nobody.
        self._order0: dict[int, pp.Page] = {}
        self.head_free: dict[int, PageFree] = {}  # packet index -> how its head page went
        self.steps_checked = 0
        #: CPUMAP-SIM-006: whether CPU B's slot is empty (an update with qsize 0), and the
        #: packets a replaced entry's kthread took off its ring while it stopped.
        self.slot_empty = False
        self.drained: set[int] = set()
        #: CPUMAP-MAP-001 .. 003: the return code of every ``map_update``/``map_delete``.
        self.map_results: list[int] = []

    # ------------------------------------------------------------------ memory

    def _xpage(self, page: pp.Page) -> XPage:
        """The bytes of a page (one bytearray per pfn, as the memory itself)."""
        x = self._xpages.get(page.pfn)
        if x is None or x.handle is not page:
            # page_is_pfmemalloc: the page came from the emergency reserves (SKB-BUILD-001)
            x = self._xpages[page.pfn] = XPage.zeroed(PAGE_SIZE, pfmemalloc=page.pfmemalloc,
                                                       handle=page)
        return x

    def _take_pages(self, count: int, ctx: pp.Context) -> list[pp.Page] | None:
        """The ``count`` pages of one packet, head first (CPUMAP-SIM-001, CPUMAP-SIM-007):
        from the source pool, or order-0 pages from the page allocator.  When one cannot
        be had the packet is lost, and the driver gives back in its poll the pages it
        already took: ``page_pool_put_full_page`` with direct recycling allowed, or
        ``put_page``."""
        taken: list[pp.Page] = []
        for _ in range(count):
            if self.config.mem_type == MemType.MEM_TYPE_PAGE_POOL:
                page = self.pool.alloc_pages(ctx)
            else:
                page = self.allocator.alloc_pages_node(0, 0, 0)
                if page is not None:
                    self._order0[page.pfn] = page
            if page is None:
                for back in taken:
                    if self.config.mem_type == MemType.MEM_TYPE_PAGE_POOL:
                        outcome = self.pool.put_full_page(back, True, ctx)
                        self.rx_frees.append(PageFree(back, FreePath.PAGE_POOL, outcome, ctx.cpu))
                    else:
                        pp.put_page(back)
                        self.rx_frees.append(PageFree(back, FreePath.PUT_PAGE, None, ctx.cpu))
                trace = self.trace
                if trace is not None and taken:
                    emit(trace, "CPUMAP-SIM-007", "a page of the packet could not be "
                         "had: the pages it took go back", pages=len(taken))
                return None
            taken.append(page)
        return taken

    def _ctx(self, cpu: int) -> pp.Context:
        return pp.Context.softirq(cpu=cpu)

    # ------------------------------------------------------------------ steps

    def rx(self, n: int) -> None:
        """One NAPI poll on CPU A receiving ``n`` packets (CPUMAP-SIM-001)."""
        if self.slot_empty and n:
            raise InvalidConfig("a poll redirecting into an empty cpumap slot is not "
                                "modelled", field="schedule", value="rx",
                                rule="CPUMAP-SIM-006")
        ctx = self._ctx(self.config.cpu_a)
        cfg = self.config
        for _ in range(n):
            index = len(self.frames)
            pages = self._take_pages(1 + cfg.frags_of(index), ctx)
            if pages is None:
                self.rx_alloc_failures += 1
                continue
            page = pages[0]
            xpage = self._xpage(page)
            data = _frame_bytes(index, cfg.frame_len, cfg.ethertype, cfg.raw_802_3)
            start = XDP_PACKET_HEADROOM
            xpage.data[start : start + len(data)] = data
            xdp = XdpBuff()
            xdp_init_buff(xdp, PAGE_SIZE, self.rxq)
            xdp_prepare_buff(xdp, xpage, 0, XDP_PACKET_HEADROOM, len(data), True)
            for k, frag_page in enumerate(pages[1:]):
                # CPUMAP-SIM-007: a frag buffer of the same source, its bytes at the pool's
                # offset, its truesize the whole page.
                xfrag = self._xpage(frag_page)
                xfrag.data[start : start + cfg.frag_len] = _frag_bytes(index, k, cfg.frag_len)
                added = xdp_buff_add_frag(xdp, xfrag, start, cfg.frag_len, PAGE_SIZE,
                                          kernel=xdp_semantics(self.kernel), trace=self.trace)
                assert added  # at most MAX_SKB_FRAGS, each in its own page
            trace = self.trace
            if trace is not None and len(pages) > 1:
                emit(trace, "CPUMAP-SIM-007", "multi-buffer packet", index=index,
                     frags=len(pages) - 1, frag_len=cfg.frag_len)
            # The source program (frags-aware when the packet has frags) returns
            # XDP_REDIRECT into the cpumap entry of CPU B.
            frame = xdp_convert_buff_to_frame(xdp)
            assert frame is not None  # 256 bytes of headroom always hold the frame
            self.frames.append(frame)
            self._index[id(frame)] = index
            emit(self.trace, "CPUMAP-SIM-001", "packet received and redirected", index=index,
                 pfn=page.pfn, action=int(XdpAction.XDP_REDIRECT))
            self.cpumap.cpu_map_enqueue(self.entry, frame, DEV_RX_IFINDEX, ctx, self.trace)
        self.cpumap.flush(ctx, self.trace)  # xdp_do_flush at the end of the poll

    def kthread(self, k: int) -> None:
        """``k`` kthread iterations on CPU B."""
        for _ in range(k):
            self._kthread_once(self.entry)

    def _kthread_once(self, entry: CpuMapEntry) -> bool:
        """One iteration of ``entry``'s kthread; False when it found its ring empty."""
        run = self.cpumap.kthread_run_once(entry, self.trace)
        if run is None:
            return False
        for frame, skb in zip(run.frames, run.skbs, strict=True):
            index = self._index[id(frame)]
            self._skb_of[index] = skb
            self._skb_index[id(skb)] = index
        return True

    def update(self, qsize: int) -> None:
        """``cpu_map_update_elem`` of CPU B's slot (CPUMAP-MAP-002, CPUMAP-SIM-006).

        The old entry leaves the map at once; after an RCU grace period its kthread is
        told to stop and first empties its ring (``cpu_map_kthread_run`` loops until the
        ring is empty), which the model runs here, to completion.  Its skbs are already
        the stack's, so they join the skbs the stack holds; the per-CPU skb cache
        (``skb_alloc_fail``) is CPU B's, whichever entry's kthread asks it.  The new entry
        gets the same program."""
        rc = self.cpumap.update_elem(self.config.cpu_b, qsize, trace=self.trace)
        if rc:
            raise InvalidConfig("cpumap entry refused", field="qsize", value=qsize,
                                rule="CPUMAP-MAP-001")
        self._replaced()

    def map_update(self, key: int, qsize: int, flags: int = 0,
                   prog: LoadedBpfProg | None = None) -> int:
        """``bpf_map_update_elem`` on the map, any arguments (CPUMAP-MAP-001 ..
        CPUMAP-MAP-003): the return code is recorded in :attr:`map_results`.  A
        successful update of CPU B's slot is the ``update`` step (the new entry runs
        ``second_prog``: ``prog`` stands for the fd's program, whose attributes decide
        whether the map takes it, and without ``prog`` the new entry has no program);
        one of another slot makes an entry nothing redirects to."""
        ops = self.config.second_prog if prog is not None else None
        rc = self.cpumap.update_elem(key, qsize, prog=prog, ops=ops, flags=flags,
                                     trace=self.trace)
        self.map_results.append(rc)
        if rc == 0 and key == self.config.cpu_b:
            self._replaced(keep_prog=prog is not None)
        return rc

    def map_delete(self, key: int) -> int:
        """``bpf_map_delete_elem`` on the map (CPUMAP-MAP-002), recorded as
        :meth:`map_update`; deleting CPU B's slot is an ``update`` with qsize 0."""
        rc = self.cpumap.delete_elem(key, trace=self.trace)
        self.map_results.append(rc)
        if rc == 0 and key == self.config.cpu_b:
            self._replaced()
        return rc

    def _replaced(self, keep_prog: bool = True) -> None:
        """CPU B's slot was just updated or cleared: the old entry's kthread drains its
        ring and stops, and the stack's skbs follow the new entry (CPUMAP-SIM-006)."""
        old = self.entry
        was_empty = self.slot_empty
        if not was_empty:  # the retired kthread drains its ring, then stops
            seen = {id(f) for f in old.queue}
            while self._kthread_once(old):
                pass
            self.drained.update(self._index[i] for i in seen)
            emit(self.trace, "CPUMAP-MAP-002", "replaced entry's kthread drained its ring",
                 frames=len(seen))
        new = self.cpumap.lookup(self.config.cpu_b)
        self.slot_empty = new is None
        if new is None:
            return
        if keep_prog and self.config.second_prog is not None:
            new.prog = self.config.second_prog
        new.stack = old.stack + new.stack
        old.stack = []
        new.skb_alloc_fail_next = old.skb_alloc_fail_next
        old.skb_alloc_fail_next = 0
        self.entry = new

    def gro_flushes(self) -> int:
        """GRO flushes of every kthread CPU B ran, the replaced entries' included."""
        return sum(e.gro_flushes for e in self.cpumap.entries_on(self.config.cpu_b))

    def free(self, n: int) -> None:
        """The stack frees the ``n`` oldest skbs passed up, on ``free_cpu``."""
        cpu = self.config.cpu_b if self.config.free_cpu is None else self.config.free_cpu
        ctx = self._ctx(cpu)
        stack = self.entry.stack
        for _ in range(min(n, len(stack))):
            skb = stack.pop(0)
            released = napi_consume_skb(skb, 64, ctx, self.trace)
            self.frees.extend(released)
            index = self._skb_index[id(skb)]
            self.freed.add(index)
            self.head_free[index] = released[-1]

    def run(self, schedule: Sequence[tuple[str, int]]) -> None:
        for kind, count in schedule:
            if kind == "rx":
                self.rx(count)
            elif kind == "kthread":
                self.kthread(count)
            elif kind == "free":
                self.free(count)
            elif kind == "update":
                self.update(count)
            else:
                raise InvalidConfig("unknown step", field="schedule", value=kind,
                                    rule="CPUMAP-SIM-001")
            self.check()

    # ------------------------------------------------------------------ observation

    def fates(self) -> list[str]:
        """Where each received packet is (CPUMAP-FATE-001)."""
        where: dict[int, str] = {}
        for bq in self.entry.bulkq.values():
            for f in bq.q:
                where[self._index[id(f)]] = "bulk"
        for f in self.entry.queue:
            where[self._index[id(f)]] = "ring"
        for frame, reason in self.cpumap.drops:
            where[self._index[id(frame)]] = f"dropped:{reason}"
        skb_state = {id(s): "gro" for s in self.entry.gro}
        skb_state.update({id(s): "stack" for s in self.entry.stack})
        for index, skb in self._skb_of.items():
            where[index] = "freed" if index in self.freed else skb_state[id(skb)]
        return [where.get(i, "?") for i in range(len(self.frames))]

    def holders(self) -> dict[int, list[str]]:
        """pfn -> every place outside the pool that holds the page (CPUMAP-SIM-002)."""
        out: dict[int, list[str]] = {}

        def add(xpage: XPage, place: str) -> None:
            out.setdefault(pp_page_of(xpage).pfn, []).append(place)

        for bq in self.entry.bulkq.values():
            for f in bq.q:
                for xpage in frame_pages(f):
                    add(xpage, f"bulkq[{bq.cpu}]")
        for f in self.entry.queue:
            for xpage in frame_pages(f):
                add(xpage, "cpumap_ring")
        for s in self.entry.gro:
            for xpage in s.pages():
                add(xpage, "gro")
        for s in self.entry.stack:
            for xpage in s.pages():
                add(xpage, "stack")
        return out

    def ledger_problems(self) -> list[str]:
        """CPUMAP-SIM-002: each page in exactly one place across both CPUs, a frame's or an
        skb's frag pages with it; an order-0 page held while it lives, never after."""
        problems = pp.conservation_problems(self.pool, full=True)
        holders = self.holders()
        pages = {p.pfn: p for p in self.pool.pages()}
        for pfn, places in holders.items():
            if len(places) != 1:
                problems.append(f"page {pfn:#x} held by {places}")
        for pfn, page in pages.items():
            loc = page.loc
            held = pfn in holders
            if loc is pp.Loc.IN_FLIGHT and not held:
                problems.append(f"page {pfn:#x} in flight from the pool but held by nobody")
            if loc in (pp.Loc.ALLOC_CACHE, pp.Loc.PTR_RING) and held:
                problems.append(f"page {pfn:#x} parked in the pool and held by {holders[pfn]}")
            if loc is pp.Loc.RELEASED and held and page.refcount != 1:
                problems.append(f"released page {pfn:#x} held with refcount {page.refcount}")
            if loc is pp.Loc.RELEASED and not held and page.refcount != 0:
                problems.append(f"released page {pfn:#x} neither held nor freed")
        for pfn, page in list(self._order0.items()):
            held = pfn in holders
            if held and page.refcount != 1:
                problems.append(f"order-0 page {pfn:#x} held with refcount {page.refcount}")
            elif not held and page.refcount:
                problems.append(f"order-0 page {pfn:#x} neither held nor freed")
            elif not held:
                del self._order0[pfn]  # freed for good: a pfn is never handed out again
        return problems

    def check(self) -> None:
        problems = self.ledger_problems()
        if problems:
            raise AssertionError("cross-CPU page ledger broken:\n  " + "\n  ".join(problems))
        self.steps_checked += 1

    def direct_pushes(self) -> dict[str, int]:
        """Alloc-cache pushes by where they happened (CPUMAP-SIM-003), from the free
        records of the stack, the cpumap drops and the recycle-stats total."""
        a, b = self.config.cpu_a, self.config.cpu_b
        out = {"source_cpu": 0, "destination_cpu": 0, "other": 0}
        for rec in [*self.frees, *self.cpumap.frees, *self.rx_frees]:
            if rec.outcome in (pp.PutOutcome.CACHED,):
                key = ("source_cpu" if rec.cpu == a else
                       "destination_cpu" if rec.cpu == b else "other")
                out[key] += 1
        return out

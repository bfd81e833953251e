"""A stateful machine over a zcrx instance: traffic, receives, an honest user, a
careless one (double returns, foreign and malformed entries), driver refills, queue
restarts and a final shutdown.  After every step ownership and conservation hold."""

from __future__ import annotations

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)
from zcrx_helpers import make_engine

from reference.zcrx import HONOURED, IORING_ZCRX_AREA_SHIFT, IoUringZcrxRqe, ZcrxEngine

pytestmark = pytest.mark.rule("ZCRX-SIM-005", "ZCRX-OWN-001", "ZCRX-OWN-002",
                              "ZCRX-OWN-003", "ZCRX-SCRUB-002", "ZCRX-MP-005")


class ZcrxMachine(RuleBasedStateMachine):
    engine: ZcrxEngine

    @initialize(size=st.sampled_from([0, 8192, 32768]), niovs=st.integers(4, 80),
                rq=st.sampled_from([4, 8, 32]),
                placement=st.sampled_from(["packed", "per_packet"]),
                gro=st.sampled_from([1, 2, 3]), linear=st.sampled_from([0, 0, 7]),
                cq=st.sampled_from([3, 4096]), pool_size=st.sampled_from([2, 1024]))
    def setup(self, size: int, niovs: int, rq: int, placement: str, gro: int, linear: int,
              cq: int, pool_size: int) -> None:
        self.engine = make_engine(niovs=niovs, rx_buf_len=size, rq_entries=rq,
                                  placement=placement, gro_segs=gro, linear_payload=linear,
                                  cq_entries=cq, pool_size=pool_size)

    def _live(self) -> bool:
        return self.engine.active

    @precondition(_live)
    @rule(payloads=st.lists(st.sampled_from([1, 100, 1448, 4096, 9000]), min_size=1,
                            max_size=6))
    def rx(self, payloads: list[int]) -> None:
        self.engine.rx_segments(payloads)

    @precondition(_live)
    @rule(length=st.sampled_from([0, 0, 700, 5000]))
    def recv(self, length: int) -> None:
        res = self.engine.recv(length)
        assert res.rc != 0
        assert all(c.res > 0 for c in res.cqes)

    @precondition(_live)
    @rule()
    def reap(self) -> None:
        self.engine.reap()

    @precondition(lambda self: self._live() and self.engine.cqes)
    @rule(data=st.data(), twice=st.booleans())
    def give_back(self, data: st.DataObject, twice: bool) -> None:
        k = data.draw(st.integers(0, len(self.engine.cqes) - 1))
        rqe = self.engine.user_rqe_for(k)
        self.engine.user_write([rqe, rqe] if twice else [rqe])

    @precondition(_live)
    @rule(kind=st.sampled_from(["pad", "area", "index", "any"]), idx=st.integers(0, 100))
    def scribble(self, kind: str, idx: int) -> None:
        shift = self.engine.ifq.niov_shift  # type: ignore[union-attr]
        off = idx << shift
        rqe = {"pad": IoUringZcrxRqe(off=off, pad=1),
               "area": IoUringZcrxRqe(off=off | (2 << IORING_ZCRX_AREA_SHIFT)),
               "index": IoUringZcrxRqe(off=(idx + 5000) << shift),
               "any": IoUringZcrxRqe(off=off)}[kind]
        self.engine.user_write([rqe])

    @precondition(_live)
    @rule(n=st.integers(1, 70))
    def driver_refill(self, n: int) -> None:
        self.engine.alloc(n)

    @precondition(_live)
    @rule()
    def restart(self) -> None:
        self.engine.restart()

    @precondition(_live)
    @rule()
    def shutdown(self) -> None:
        ifq = self.engine.ifq
        assert ifq is not None
        before = sum(ifq.area.user_refs)
        assert self.engine.shutdown() == before
        assert ifq.area.free_count == ifq.area.num_niovs
        assert all(p.inflight() == 0 for p in self.engine.pools)

    @rule()
    def idle(self) -> None:
        """Always possible (also after shutdown): time passes, nothing happens."""

    @invariant()
    def ownership_and_conservation_hold(self) -> None:
        engine = getattr(self, "engine", None)
        if engine is None:
            return
        assert engine.problems() == []
        ifq = engine.ifq
        assert ifq is not None
        assert min(ifq.area.user_refs) >= 0
        ledger = engine.ledger()
        assert all(h <= g for h, g in zip(ledger.honoured, ledger.granted, strict=True))
        assert sum(ledger.honoured) == sum(1 for r in ifq.refills if r.outcome in HONOURED)
        rq = ifq.rq
        assert (rq.tail - rq.head) & 0xFFFF_FFFF <= rq.nr_entries


TestZcrxMachine = ZcrxMachine.TestCase

"""Which modules of ``reference/`` are mutated, and which components' properties check each.

A mutant only needs the properties that can reach the mutated code: running the whole
suite for each mutant would cost ten times more and measure nothing new.  The table
below maps each reference module to the conformance components whose properties
exercise it: the component that owns the module first (its *primary* component, the
row the mutant is counted under in the summary), then, when the module is shared,
the cheapest other components that import it (cost measured per component with
``exec:rx-oracle serve``, 2026-12: kfunc 1.5 s, cpumap 1.7 s, xdp 1.9 s, tun 1.9 s,
rss 2.4 s, fec 2.5 s, veth 2.7 s, page_pool 2.9 s, zcrx 2.9 s, mlx5 5.0 s).
``tests/test_mutation.py`` checks the table against the static import graph: every
component listed for a module imports it, directly or not.  The first sample showed two
sets too small (``conformance/MUTANTS.md``): a kfuncs.py mutant only rss could see (the
hash-type enum) and a packet.py one only mlx5 could (IPv6 header offsets); both sets
grew.  A later sample found one more: ``XDP_RSS_L4_IPSEC``'s value is reported only by
mlx5 (MLX5-KF-002 maps the CQE's IPSEC L4 type to it), so mlx5 checks kfuncs.py too.
The full run's kfuncs.py triage found cpumap missing: its entry program goes through
``map_update_prog``'s CPUMAP branch (KFUNC-MAP-004), so cpumap checks kfuncs.py too; its
page_pool triage found fec missing there (its descriptors carry the pool's ``dma_addr`` and
its TX fates are the pool's put outcomes, FEC-TX-007): 13 page_pool survivors fec kills.
The xdp triage found fec missing for ``xdp/arch.py`` (only fec builds the 32-bit ARM
layout: its ``skb_shared_info``, ``skb_frag_t`` and ``xdp_frame`` sizes) and for
``xdp/rxq.py`` (fec registers its page_pool memory model with the default arguments), and
tun for ``xdp/arch.py`` (its ``buflen`` is ``align_up``'s).
The buffer modules' triage found cpumap and mlx5 missing: cpumap keeps one page per pfn
across recycling, so a head page's shared info is stale when it comes back (a first frag
that does not reset ``xdp_frags_size``: SKB-BUILD-001), its program adjusts multi-buffer
frames (CPUMAP-MB-001), and mlx5's fragment pages take ``Page.zeroed``'s defaults (a
pfmemalloc default shows in its buffer's flags, MLX5-XDP-001).

| reference module | components | why |
|---|---|---|
| ``mlx5/*`` | mlx5 | only the mlx5 driver model uses it |
| ``fec/*`` | fec | likewise fec |
| ``zcrx/*`` | zcrx | likewise zcrx |
| ``cpumap.py``, ``cpumap_sim.py``, ``skb.py`` | cpumap | only cpumap builds skbs from frames |
| ``tun.py`` | tun | |
| ``veth.py`` | veth, tun | tun's XDP path is veth's |
| ``flow_dissector.py`` | veth, mlx5 | rx_hash's flow keys; mlx5's eth_get_headlen |
| ``rss.py`` | rss, mlx5 | mlx5 hashes with it |
| ``packet.py`` | rss, fec, mlx5 | the frame walk; the drivers' checksum and CQE paths |
| ``checksum.py`` | fec, mlx5 | both drivers' checksum offload |
| ``kfuncs.py`` | kfunc, cpumap, xdp, veth, rss, mlx5 | dispatch, ops, hash types, map updates |
| ``xdp/frame.py``, ``xdp/mem.py`` | xdp, cpumap | frame conversion and memory return feed cpumap |
| ``xdp/buff.py`` | xdp, veth, mlx5, cpumap | mlx5 reuses its buffer per RQ; cpumap its pages |
| ``xdp/arch.py`` | xdp, veth, fec, tun | fec's 32-bit ARM layout; tun's ``buflen`` (``align_up``) |
| ``xdp/rxq.py`` | xdp, veth, fec | fec registers its queue with the defaults |
| ``xdp/helpers.py`` | xdp, veth, cpumap, mlx5 | their programs adjust frags too |
| ``xdp/memory.py`` | xdp, veth, cpumap, mlx5 | recycled and fragment pages |
| ``xdp/*`` (the rest) | xdp, veth | the generic buffer path and veth's |
| ``page_pool/*`` | page_pool, cpumap, fec | cpumap recycles; fec reports DMA addresses, put fates |
| ``kernel.py`` | fec, tun, kfunc, xdp, page_pool, cpumap, zcrx, mlx5 | their version gates |

A mutant of ``kernel.py`` (the version gates) is judged at the kernel versions where the
mutated gate table answers differently from the pristine one
(:mod:`conformance.mutation.gates`): the ci run judges the default kernel only, and a
gate moved by one release shows only on the other side of it.

Not mutated: ``reference/__init__.py`` (version strings), ``trace.py`` (explanations,
never an observable) and ``errors.py`` (exception messages and pickling: the suite never
sends what the reference refuses, so no exec target can show them).
"""

from __future__ import annotations

import fnmatch
from pathlib import Path

PACKAGE = "reference"

EXCLUDED = frozenset({"reference/__init__.py", "reference/trace.py", "reference/errors.py"})

#: (glob over paths relative to the project root, components): the first match wins.
TABLE: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("reference/mlx5/*", ("mlx5",)),
    ("reference/fec/*", ("fec",)),
    ("reference/zcrx/*", ("zcrx",)),
    ("reference/cpumap.py", ("cpumap",)),
    ("reference/cpumap_sim.py", ("cpumap",)),
    ("reference/skb.py", ("cpumap",)),
    ("reference/tun.py", ("tun",)),
    ("reference/veth.py", ("veth", "tun")),
    ("reference/flow_dissector.py", ("veth", "mlx5")),
    ("reference/rss.py", ("rss", "mlx5")),
    ("reference/packet.py", ("rss", "fec", "mlx5")),
    ("reference/checksum.py", ("fec", "mlx5")),
    ("reference/kfuncs.py", ("kfunc", "cpumap", "xdp", "veth", "rss", "mlx5")),
    ("reference/kernel.py", ("fec", "tun", "kfunc", "xdp", "page_pool", "cpumap", "zcrx",
                             "mlx5")),
    ("reference/xdp/frame.py", ("xdp", "cpumap")),
    ("reference/xdp/mem.py", ("xdp", "cpumap")),
    ("reference/xdp/buff.py", ("xdp", "veth", "mlx5", "cpumap")),
    ("reference/xdp/arch.py", ("xdp", "veth", "fec", "tun")),
    ("reference/xdp/rxq.py", ("xdp", "veth", "fec")),
    ("reference/xdp/helpers.py", ("xdp", "veth", "cpumap", "mlx5")),
    ("reference/xdp/memory.py", ("xdp", "veth", "cpumap", "mlx5")),
    ("reference/xdp/*", ("xdp", "veth")),
    ("reference/page_pool/*", ("page_pool", "cpumap", "fec")),
)


def components_for(path: str) -> tuple[str, ...]:
    """The components that check ``path`` (relative to the project root); () if none."""
    for pattern, components in TABLE:
        if fnmatch.fnmatchcase(path, pattern):
            return components
    return ()


def mutated_modules(root: Path) -> list[str]:
    """Every module of ``reference/`` that is mutated, as paths relative to ``root``."""
    found = []
    for file in sorted((root / PACKAGE).rglob("*.py")):
        rel = file.relative_to(root).as_posix()
        if rel not in EXCLUDED and "__pycache__" not in rel:
            found.append(rel)
    return found


def module_name(path: str) -> str:
    """``reference/page_pool/__init__.py`` -> ``reference.page_pool``."""
    dotted = path.removesuffix(".py").replace("/", ".")
    return dotted.removesuffix(".__init__")

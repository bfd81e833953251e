"""Whether a kill falls under a rule of the mutated function.

A mutant's own rules are the ones its enclosing function names (:class:`~conformance.
mutation.mutator.Mutant`).  Some of those rules no target can see directly, and SPEC.md says
so under the rule with an ``*Outside view:*`` line; when that line reads *checked through
X* or *checked as X*, the rules X are how a fault in the rule shows from outside (SPEC.md's
preface).  RSS-TOEP-002, the byte tables of the Toeplitz hash, is checked through
RSS-TOEP-001, the hash a target reports: a mutant of the tables that fails RSS-TOEP-001 was
caught by the rule SPEC.md names as its observer, so it counts as a kill under its own rule.

Only the rules before the line's first colon are read (what follows explains, and may name
other rules in passing); ``A .. B`` and ``A … B`` stand for every rule from A to B in SPEC.md
order.  The mapping is read from the checkout's SPEC.md, so a re-judged run (``rx-oracle
mutate --rejudge``) uses the SPEC.md of the day.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from conformance.spectrace import ID_RE, ROOT, load_rules

#: An ``*Outside view:*`` line naming observers: the text up to its first colon.
_OUTSIDE = re.compile(
    r"\*Outside view:\*\s*checked (?:through|as) (?P<what>.*?)(?::|\*Source:\*|$)", re.DOTALL)
#: ``PP-RECYCLE-003/004/005``: one id, then more numbers of the same area.
_SLASHED = re.compile(rf"(?P<a>{ID_RE.pattern})(?P<more>(?:/[0-9]{{3}}\b)+)")
#: ``CSUM-001..010``, ``FEC-BD-001 .. 006``, ``XDP-ADJ-007 .. XDP-ADJ-010``,
#: ``PKT-ETH-001 … PKT-L4-006``: every rule from the first to the last in SPEC.md order.
_RANGE = re.compile(rf"(?P<a>{ID_RE.pattern})\s*(?:\.\.\.?|…)\s*"
                    rf"(?P<b>{ID_RE.pattern}|[0-9]{{3}}\b)")


def ids_in(text: str, root: Path = ROOT) -> tuple[str, ...]:
    """The rule ids ``text`` names, in order, with the shorthands code and SPEC.md use
    (``X-003/004``, ``X-001..005``, ``X-001 .. Y-006``) spelt out; a range or a slashed
    number is kept only where SPEC.md has the rules it stands for."""
    order, where = _order(root)
    found: list[tuple[int, str]] = [(m.start(), m.group()) for m in ID_RE.finditer(text)]
    for m in _SLASHED.finditer(text):
        area = m.group("a")[:-3]
        found += [(m.start(), area + n) for n in m.group("more").split("/")[1:]
                  if area + n in where]
    for m in _RANGE.finditer(text):
        a, b = m.group("a"), m.group("b")
        b = a[:-3] + b if len(b) == 3 else b
        if a in where and b in where and where[a] <= where[b]:
            found += [(m.start(), rid) for rid in order[where[a]:where[b] + 1]]
    return tuple(dict.fromkeys(rid for _, rid in sorted(found, key=lambda f: f[0])))


@functools.cache
def _order(root: Path) -> tuple[tuple[str, ...], Mapping[str, int]]:
    """SPEC.md's rule ids in order, and each one's place (read once per checkout)."""
    order = tuple(load_rules(root))
    return order, {rid: i for i, rid in enumerate(order)}


@functools.cache
def observers(root: Path = ROOT) -> Mapping[str, frozenset[str]]:
    """Rule id -> the rules its ``*Outside view:* checked through/as`` line names."""
    rules = load_rules(root)
    found: dict[str, frozenset[str]] = {}
    for rid, rule in rules.items():
        m = _OUTSIDE.search(rule.text)
        if not m:
            continue
        ids = set(ids_in(m.group("what"), root))
        ids.discard(rid)
        if ids:
            found[rid] = frozenset(ids)
    return found


def own_rules(rules: Iterable[str], root: Path = ROOT) -> frozenset[str]:
    """A mutated function's rules and the rules that observe them from outside."""
    seen = observers(root)
    own = set(rules)
    for rid in list(own):
        own |= seen.get(rid, frozenset())
    return frozenset(own)


def under_own_rule(rules: Iterable[str], failed: Iterable[str],
                   root: Path = ROOT) -> bool | None:
    """Whether a failed rule is one of ``rules`` or an observer of one; None when either is
    empty (a function naming no rule, a kill without a failed rule: nothing to judge)."""
    names, fails = tuple(rules), set(failed)
    if not names or not fails:
        return None
    return bool(fails & own_rules(names, root))

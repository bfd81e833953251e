"""Reach: the missed branches of reference/ sorted into refusal, explanation, justified
and open (conformance/mutation/unreached.py), and the justification file kept honest.

The sorting is checked on a hand-written module and a hand-written coverage report; the
justification file must name modules, functions and lines that exist, each with a reason.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.mutation import unreached

ROOT = Path(__file__).resolve().parent.parent

MODULE = '''\
def f(x, trace=None):
    if x < 0:
        raise ValueError(x)
    if trace is not None:
        trace.append(x)
    if x > 10:
        return 1
    return 0


def g(x):
    if x:
        return 2
    return 3
'''


def test_missed_branches_are_sorted(tmp_path: Path) -> None:
    (tmp_path / "reference").mkdir()
    (tmp_path / "reference" / "m.py").write_text(MODULE)
    doc = {"files": {"reference/m.py": {"missing_branches": [[2, 3], [4, 5], [6, 7],
                                                             [12, 13]]}}}
    just = [unreached.Justification(path="reference/m.py", function="g",
                                    reason="no scenario needs it")]
    got = {(b.source, b.dest): (b.kind, b.function)
           for b in unreached.classify(doc, tmp_path, just)}
    assert got == {(2, 3): (unreached.REFUSAL, "f"), (4, 5): (unreached.EXPLANATION, "f"),
                   (6, 7): (unreached.OPEN, "f"), (12, 13): (unreached.JUSTIFIED_KIND, "g")}
    text = unreached.report(unreached.classify(doc, tmp_path, just))
    assert "| reference/m.py | 4 | 1 | 1 | 1 | 1 |" in text
    assert "`reference/m.py:6` in `f`, to line 7: `if x > 10:`" in text


CALLS = '''\
class C:
    def used(self):
        return 1

    def unused(self):
        """Docstring: not a statement the run could execute."""
        return 2


def helper(x):
    return x + 1


def outer():
    def inner():
        return 4
    return inner
'''


def test_a_function_nothing_calls_is_a_missed_branch(tmp_path: Path) -> None:
    """``C.unused`` and ``helper`` have no branch of their own, so coverage lists none
    missed; their never-run bodies count as one missed branch each, from the ``def`` to
    the first statement. ``outer`` counts once (``inner`` is inside it)."""
    (tmp_path / "reference").mkdir()
    (tmp_path / "reference" / "c.py").write_text(CALLS)
    doc = {"files": {"reference/c.py": {"missing_branches": [],
                                        "missing_lines": [7, 11, 15, 16, 17]}}}
    just = [unreached.Justification(path="reference/c.py", function="helper",
                                    reason="a library helper no component calls")]
    got = {(b.source, b.dest): (b.kind, b.function)
           for b in unreached.classify(doc, tmp_path, just)}
    assert got == {(5, 7): (unreached.OPEN, "C.unused"),
                   (10, 11): (unreached.JUSTIFIED_KIND, "helper"),
                   (14, 15): (unreached.OPEN, "outer")}


def test_a_justification_narrowed_to_a_line(tmp_path: Path) -> None:
    (tmp_path / "reference").mkdir()
    (tmp_path / "reference" / "m.py").write_text(MODULE)
    doc = {"files": {"reference/m.py": {"missing_branches": [[6, 7], [6, 8]]}}}
    just = [unreached.Justification(path="reference/m.py", function="f",
                                    code="if x > 10:", reason="a boundary never drawn")]
    kinds = {b.kind for b in unreached.classify(doc, tmp_path, just)}
    assert kinds == {unreached.JUSTIFIED_KIND}
    assert unreached.stale(just, tmp_path) == []
    gone = [unreached.Justification(path="reference/m.py", function="f", code="if y:",
                                    reason="a line that is not there")]
    assert unreached.stale(gone, tmp_path) == gone


def test_the_justifications_name_what_exists() -> None:
    entries = unreached.load()
    assert entries, "the justification file is empty"
    stale = unreached.stale(entries, ROOT)
    assert not stale, ("unreached.toml names functions or lines that no longer exist: "
                       + "; ".join(f"{j.path} {j.function} {j.code!r}" for j in stale))


def test_a_malformed_justification_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "unreached.toml"
    path.write_text('[[unreached]]\npath = "reference/x.py"\nfunction = "f"\n')
    with pytest.raises(unreached.JustificationError) as info:
        unreached.load(path)
    assert "unreached/0" in str(info.value) and "\n" not in str(info.value)

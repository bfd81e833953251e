"""Gate mutants are judged where the mutated gate table disagrees with the pristine one
(conformance/mutation/gates.py), not at the default kernel only.

Hand-worked: XDP-ADJ-010's backport is 6.12.58 (KVER gate table, reference/kernel.py); a
mutant moving it to 6.12.59 answers differently at 6.12.58 only, so that version must be
among those the mutant is judged at; a mutant outside kernel.py is judged at the default.
"""

from __future__ import annotations

from pathlib import Path

from conformance.mutation import gates, runner, sampling
from conformance.mutation.mutator import Mutant

ROOT = Path(__file__).resolve().parent.parent


def _gate_mutant(original: str, replacement: str, near: str) -> Mutant:
    source = (ROOT / gates.GATED).read_text()
    line = next(i for i, text in enumerate(source.splitlines(), 1) if near in text)
    for m in sampling.candidates(ROOT, [gates.GATED]):
        if m.line in range(line, line + 5) and m.original == original \
                and m.replacement == replacement:
            return m
    raise AssertionError(f"no mutant {original} -> {replacement} near {near}")


def test_a_moved_backport_is_judged_where_it_moved() -> None:
    m = _gate_mutant("58", "(59)", 'Gate("XDP-ADJ-010"')
    versions = gates.kernels_for(m, ROOT)
    assert "6.12.58" in versions
    assert all(v.startswith("6.12.") for v in versions)


def test_other_modules_are_judged_at_every_tree_newest_first_unless_told_not_to() -> None:
    """Every supported tree, newest first, then 6.18.0 and 6.12.0: the first 6.18 release
    answers KFUNC-ATTACH-004's gate otherwise than 6.18.44, the first 6.12 release
    PP-INIT-002's otherwise than 6.12.117 (7.3.0 answers every gate as its tree does)."""
    m = Mutant(path="reference/rss.py", line=1, col=0, end_line=1, end_col=1,
               operator="int", original="1", replacement="(2)")
    assert gates.kernels_for(m, ROOT) == ("7.3.4", "6.18.44", "6.12.117", "6.18.0", "6.12.0")
    assert gates.kernels_for(m, ROOT, default_only=True) == ()


def test_a_refusal_only_older_trees_make_is_killed_at_an_older_tree() -> None:
    """KFUNC-ATTACH-004: 6.17 and older check a new program in dev_xdp_attach(), before
    the ndo_bpf check; 6.12.112 (before the 6.12.113 backport) takes that arm
    (reference/kernel.py), 7.3.4 does not. The mutant dropping the early check therefore
    passes at the default kernel and fails at 6.12.112.  No supported tree takes the arm
    since 6.18.44 was seen live with the later order."""
    m = next(m for m in sampling.candidates(ROOT, ["reference/kfuncs.py"])
             if m.operator == "stmt" and m.function == "BpfDevices.dev_xdp_attach"
             and m.code == "refusal = self._new_prog_refusal(dev, prog, mode)"
             and m.description.startswith("if body"))
    result = runner.run_mutant(m, ("kfunc",), root=ROOT, kernels=("7.3.4", "6.12.112"))
    assert result.outcome == runner.KILLED
    assert result.kernels == ("7.3.4", "6.12.112")  # the default run let it through
    assert "KFUNC-ATTACH-004" in result.failed_rules


def test_a_parser_that_reads_full_versions_as_the_tree_is_judged_where_that_differs() -> None:
    """KVER-001: a full version means that release, a bare series the tree read. The
    mutant that flips the test for "no sublevel given" reads 6.12.0 as 6.12.117, which
    answers PP-INIT-002's gate otherwise (and 6.18.0 as 6.18.44, which answers
    KFUNC-ATTACH-004's otherwise), so it is judged at releases other than the trees
    (before, it was judged at the three trees only, where it cannot show)."""
    m = next(m for m in sampling.candidates(ROOT, [gates.GATED])
             if m.function == "parse_kernel" and m.operator == "cmp"
             and m.original == "match.group(3) is None")
    versions = gates.kernels_for(m, ROOT)
    assert versions and not set(versions) & {"6.12.117", "6.18.44", "7.3.4"}
    assert "6.12.0" in versions and "6.18.0" in versions


def test_an_entry_changed_everywhere_is_judged_in_each_series() -> None:
    """ZCRX-BUFLEN-001's entry with its after-text and Since swapped raises at every
    version; at 6.12 zcrx predicts only the registration's -EINVAL (ZCRX-REG-001 is v6.15),
    never the buffer length, so the versions must not all be 6.12 releases (keeping only
    the three oldest would judge it where it cannot show)."""
    m = next(m for m in sampling.candidates(ROOT, [gates.GATED])
             if m.operator == "args" and m.original.startswith('Gate("ZCRX-BUFLEN-001"')
             and "arguments 4 and 5" in m.description)
    versions = gates.kernels_for(m, ROOT)
    assert {v.rsplit(".", 1)[0] for v in versions} == {"7.3", "6.18", "6.12"}


def test_a_function_that_reads_a_gate_is_judged_at_the_older_trees_too() -> None:
    """register_zcrx keeps ZCRX-BUFLEN-001's answer in ``large_buffers`` and tests it on
    later lines: a mutant there may differ only at 6.18, though the default kernel runs
    its line, so the run does not settle it at the default kernel alone."""
    def at(function: str) -> Mutant:
        return Mutant(path="reference/zcrx/register.py", line=1, col=0, end_line=1,
                      end_col=1, operator="int", original="1", replacement="(2)",
                      function=function)

    assert gates.reads_a_gate(at("register_zcrx"), ROOT)
    assert gates.reads_a_gate(at("validate_user_buf_range"), ROOT)  # ZCRX-AREA-002
    assert not gates.reads_a_gate(at("io_area_max_shift"), ROOT)
    assert not gates.reads_a_gate(at(""), ROOT)

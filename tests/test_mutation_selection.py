"""Selection: each mutant is run against the properties that execute its line, at the
kernels where some property does (conformance/mutation/selection.py).

Hand-worked: a line run only inside property P is P's alone; a line run at import may
matter to every property (run them all); a line no property runs at some kernel cannot
be seen there (skip that kernel); no data for a kernel means run everything.  The real
plugin is checked on a coverage run of the tun component, and the runner is checked to
kill a real mutant with its selection as it does without.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.mutation import runner, sampling, selection
from conformance.mutation.mutator import Mutant
from reference.kernel import DEFAULT_KERNEL

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = str(DEFAULT_KERNEL)


def _mutant(line: int, end_line: int | None = None, path: str = "reference/rss.py") -> Mutant:
    return Mutant(path=path, line=line, col=0, end_line=end_line or line,
                  end_col=1, operator="int", original="1", replacement="(2)", stmt_line=line)


def _line_of(path: str, start: str) -> int:
    text = (ROOT / path).read_text().splitlines()
    return next(i for i, t in enumerate(text, 1) if t.startswith(start))


SEL = selection.Selection({
    DEFAULT: {"reference/rss.py": {
        10: frozenset({"test_rss.py::test_a"}),
        11: frozenset({"test_rss.py::test_b", "test_veth.py::test_c"}),
        12: frozenset({selection.ANYWHERE, "test_rss.py::test_a"}),
    }},
    "6.12.117": {"reference/rss.py": {}},
}, {
    DEFAULT: {"PP-INIT-002": frozenset({"test_page_pool.py::test_p", "test_xdp.py::test_x"})},
    "6.12.117": {},
})


def test_a_line_run_by_some_properties_selects_those_of_the_checking_components() -> None:
    assert SEL.properties(_mutant(10), DEFAULT, ("rss",)) == ("test_rss.py::test_a",)
    assert SEL.properties(_mutant(11), DEFAULT, ("rss",)) == ("test_rss.py::test_b",)
    assert SEL.properties(_mutant(10, 11), DEFAULT, ("rss", "veth")) == (
        "test_rss.py::test_a", "test_rss.py::test_b", "test_veth.py::test_c")


def test_a_gate_table_mutant_runs_what_asks_for_its_gate() -> None:
    """A mutant inside one ``Gate(rule, ...)`` of ``GATES`` changes only what
    ``gate(kernel, rule)`` answers, so only the properties that asked for that rule can
    see it (every gate call runs the one line of ``gate``: lines cannot tell them apart)."""
    kernel_py = "reference/kernel.py"
    entry = _line_of(kernel_py, '    Gate("PP-INIT-002"')
    since = next(i for i in range(entry, entry + 6)
                 if "Since(" in (ROOT / kernel_py).read_text().splitlines()[i - 1])
    mutant = _mutant(since, path=kernel_py)
    assert selection.gate_entry(mutant, ROOT) == "PP-INIT-002"
    assert SEL.properties(mutant, DEFAULT, ("page_pool",)) == ("test_page_pool.py::test_p",)
    assert SEL.properties(mutant, "6.12.117", ("page_pool",)) == ()
    assert SEL.properties(mutant, "6.18.44", ("page_pool",)) is None  # not measured there
    supported = _mutant(_line_of(kernel_py, "    (6, 12): KernelVersion("), path=kernel_py)
    assert selection.gate_entry(supported, ROOT) is None
    assert selection.gate_entry(_mutant(10), ROOT) is None


def test_the_plugin_records_the_gates_each_property_asks_for(tmp_path: Path) -> None:
    """PP-INIT-002 (the ring clamp) is asked for by the page_pool properties that create
    a pool, under their own node ids."""
    data = tmp_path / ".coverage"
    command = [*selection.coverage_command(runner.sys.executable, ROOT, data, None),
               "--driver", "page_pool", "--rules", "PP-INIT-00*"]
    selection.run_coverage(command, ROOT)
    gates = selection.read_gates(data)
    assert any(c.startswith("test_page_pool.py::") for c in gates["PP-INIT-002"])
    assert all("::" in c or c == selection.ANYWHERE for cs in gates.values() for c in cs)


def test_a_line_run_outside_any_property_or_an_unmeasured_kernel_runs_everything() -> None:
    assert SEL.properties(_mutant(12), DEFAULT, ("rss",)) is None
    assert SEL.properties(_mutant(10), "6.18.44", ("rss",)) is None


def test_a_line_no_property_runs_is_skipped_at_that_kernel_and_survives_unrun() -> None:
    assert SEL.properties(_mutant(13), DEFAULT, ("rss",)) == ()
    assert SEL.properties(_mutant(10), "6.12.117", ("rss",)) == ()
    plan = runner._plan(_mutant(10), ("rss",), (DEFAULT, "6.18.44", "6.12.117"), SEL, ROOT)
    assert plan == [(DEFAULT, ("test_rss.py::test_a",)), ("6.18.44", None)]
    result = runner.run_mutant(_mutant(13), ("rss",), root=ROOT, kernels=(DEFAULT, "6.12.117"),
                               selection=SEL)
    assert result.outcome == runner.SURVIVED and result.kernels == ()
    assert result.cpu_seconds == 0.0 and selection.SELECTION in result.detail


def test_the_data_round_trips_and_a_stale_one_is_not_used(tmp_path: Path) -> None:
    (tmp_path / selection.SELECTION).write_text(json.dumps(SEL.to_json(selection.digest(ROOT))))
    assert selection.load(tmp_path, ROOT) == SEL
    (tmp_path / selection.SELECTION).write_text(json.dumps(SEL.to_json("0" * 64)))
    assert selection.load(tmp_path, ROOT) is None
    damaged = SEL.to_json(selection.digest(ROOT))
    damaged["kernels"] = {DEFAULT: {"contexts": [], "lines": {"reference/rss.py": {"10": [3]}},
                                    "gates": {}}}
    (tmp_path / selection.SELECTION).write_text(json.dumps(damaged))
    assert selection.load(tmp_path, ROOT) is None
    with pytest.raises(ValueError, match="past the 0 listed"):
        selection.Selection.from_json(damaged)
    damaged["kernels"] = {DEFAULT: {"contexts": ["a"], "lines": {"reference/rss.py": {"x": [0]}},
                                    "gates": {}}}
    with pytest.raises(ValueError, match=f"kernels/{DEFAULT}/lines/reference/rss.py"):
        selection.Selection.from_json(damaged)
    (tmp_path / selection.SELECTION).write_text(json.dumps(damaged))
    assert selection.load(tmp_path, ROOT) is None
    (tmp_path / selection.SELECTION).write_text("[1, 2")
    assert selection.load(tmp_path, ROOT) is None


def test_the_plugin_names_each_property_and_leaves_import_lines_to_all(tmp_path: Path) -> None:
    """TUN-BUF-001: tun_can_build_skb's body runs inside test_tun.py's property; its def
    line runs at import (the empty context)."""
    data = tmp_path / ".coverage"
    command = selection.coverage_command(runner.sys.executable, ROOT, data, None)
    selection.run_coverage([*command, "--driver", "tun"], ROOT)
    lines = selection.read_contexts(data, ROOT)["reference/tun.py"]
    source = (ROOT / "reference/tun.py").read_text().splitlines()
    def_line = next(i for i, t in enumerate(source, 1) if t.startswith("def tun_can_build_skb"))
    assert lines[def_line] == {selection.ANYWHERE}
    body = lines[def_line + 1] | lines.get(def_line + 2, frozenset())
    assert body and all(c.startswith("test_tun.py::") for c in body if c)


def test_a_selected_run_kills_what_the_whole_run_kills() -> None:
    """RSS-RETA-004 (the indirection table's lookup): a mutant refusing a hash of 0 is
    detected the same way whether every rss property runs or only those executing its
    line."""
    m = next(m for m in sampling.candidates(ROOT, ["reference/rss.py"])
             if m.function == "queue_for" and m.replacement.startswith("(0 < hash_value"))
    whole = runner.run_mutant(m, ("rss",), root=ROOT)
    data = Path(runner.tempfile.mkdtemp()) / ".coverage"
    command = selection.coverage_command(runner.sys.executable, ROOT, data, None)
    selection.run_coverage([*command, "--driver", "rss"], ROOT)
    chosen = selection.Selection({DEFAULT: selection.read_contexts(data, ROOT)})
    props = chosen.properties(m, DEFAULT, ("rss",))
    assert props, "the line runs inside some rss property"
    selected = runner.run_mutant(m, ("rss",), root=ROOT, selection=chosen)
    assert whole.outcome == selected.outcome != runner.SURVIVED
    assert set(selected.failed_rules) <= set(whole.failed_rules)


def test_a_module_constant_is_shown_by_the_lines_that_read_it() -> None:
    """PP-INIT-002: PP_RING_SIZE_LIMIT acts only where page_pool_init compares the pool
    size with it (params.py), a line the gate opens at 6.12.0..6.12.62 alone; a function
    body line is its own; a constant of a module read by name at run time (vars(kfuncs)
    in the kfunc component) could show anywhere."""
    const = "reference/page_pool/constants.py"
    limit = _mutant(_line_of(const, "PP_RING_SIZE_LIMIT"), path=const)
    readers = selection.showing_lines(limit, ROOT)
    assert readers and {p for p, _ in readers} == {"reference/page_pool/params.py"}
    params = (ROOT / "reference/page_pool/params.py").read_text().splitlines()
    assert all("PP_RING_SIZE_LIMIT" in params[line - 1] for _, line in readers)
    body = _mutant(_line_of("reference/rss.py", "def queue_for") + 2)
    assert selection.showing_lines(body, ROOT) == {("reference/rss.py", body.line)}
    kfuncs = "reference/kfuncs.py"
    flag = _mutant(_line_of(kfuncs, "XDP_FLAGS_SKB_MODE"), path=kfuncs)
    assert selection.showing_lines(flag, ROOT) is None


def test_a_reference_failing_its_own_suite_at_a_kernel_stops_the_measurement() -> None:
    """Every mutant judged at a kernel where the pristine reference fails would be
    'killed' there; the coverage run refuses instead (a wrong target stands in for it)."""
    command = [*selection.coverage_command(runner.sys.executable, ROOT,
                                           Path(runner.tempfile.mkdtemp()) / ".c", "6.18.44"),
               "--driver", "rss", "--target", "python:tests.wrong_targets:RssQueueFromHighBits"]
    try:
        selection.run_coverage(command, ROOT, "6.18.44")
    except RuntimeError as exc:
        assert "fails its own suite at kernel 6.18.44" in str(exc)
        assert "RSS-RETA-004" in str(exc)
    else:
        raise AssertionError("a failing run was taken as a measurement")

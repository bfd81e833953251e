"""Golden fixtures: determinism, the committed corpus, its manifest, schema and replay.

Independent references: the JSON Schema in fixtures/ (validated with jsonschema),
scapy's pcapng reader for the .pcapng companions, the published Microsoft RSS values
(fixtures/vectors), and the reference target replaying the corpus.
"""

from __future__ import annotations

import difflib
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from scapy.utils import PcapNgReader

from conformance.fixtures.generate import generate, versions
from conformance.fixtures.manifest import manifest_problems, write_manifest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fixtures"
TESTS = ROOT / "tests"


def _records(directory: Path) -> list[tuple[Path, dict[str, object]]]:
    return [(path, json.loads(line)) for path in sorted(directory.rglob("*.jsonl"))
            for line in path.read_text().splitlines() if line.strip()]


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "conformance.cli", *args], capture_output=True,
                          text=True, timeout=900, env=env)


@pytest.mark.rule("RSS-TOEP-001")
def test_generation_is_deterministic_and_streams_pcapng(tmp_path: Path) -> None:
    for run in ("a", "b"):
        generate(tmp_path / run, components=["rss", "xdp"], count=6, seed_value=11)
    for name in ("rss.jsonl", "rss.pcapng", "xdp.jsonl", "xdp.pcapng"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    records = [json.loads(line) for line in (tmp_path / "a" / "rss.jsonl").read_text().splitlines()]
    assert len(records) == 6
    frames = [(r["id"], i, f) for r in records for i, f in enumerate(r["scenario"]["frames"])]
    packets = list(PcapNgReader(str(tmp_path / "a" / "rss.pcapng")))
    assert len(packets) == len(frames)
    for packet, (fid, i, frame) in zip(packets, frames, strict=True):
        assert bytes(packet).hex() == frame
        assert packet.comment == f"{fid} frames[{i}]".encode()


def test_a_different_seed_gives_different_fixtures(tmp_path: Path) -> None:
    generate(tmp_path / "a", components=["rss"], count=4, seed_value=1)
    generate(tmp_path / "b", components=["rss"], count=4, seed_value=2)
    assert (tmp_path / "a/rss.jsonl").read_bytes() != (tmp_path / "b/rss.jsonl").read_bytes()


def test_committed_records_follow_the_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((CORPUS / "fixture.schema.json").read_text())
    records = _records(CORPUS)
    assert records
    for _path, record in records:
        jsonschema.validate(record, schema)


def test_committed_files_match_the_manifest() -> None:
    assert manifest_problems(CORPUS) == []


def test_manifest_names_a_changed_file(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text("x\n")
    write_manifest(tmp_path)
    (tmp_path / "a.jsonl").write_text("y\n")
    (tmp_path / "b.jsonl").write_text("")
    assert manifest_problems(tmp_path) == [
        "a.jsonl: content differs from its sha256 in MANIFEST",
        "b.jsonl: not listed in MANIFEST",
    ]


@pytest.mark.rule("RSS-TOEP-001", "RSS-IN-002")
def test_published_vectors_are_in_the_corpus_with_their_source() -> None:
    vectors = [r for _, r in _records(CORPUS / "vectors")]
    assert len(vectors) == 16
    assert all("verifying-the-rss-hash-calculation" in str(r["provenance"]) for r in vectors)
    hashes = {r["observables"]["packets"][0]["hash"] for r in vectors}  # type: ignore[index]
    assert 0x51CCC178 in hashes and 0x02D1FEEF in hashes  # first IPv4, last IPv6 row


def test_corpus_covers_every_rule_the_properties_check() -> None:
    covered: set[str] = set()
    for _, record in _records(CORPUS):
        covered.update(record["rules"])  # type: ignore[arg-type]
    checked: set[str] = set()
    for path in (ROOT / "conformance" / "properties").glob("test_*.py"):
        for marker in re.finditer(r"mark\.rule\(([^)]*)\)", path.read_text(), re.S):
            checked.update(re.findall(r'"([A-Z0-9-]+)"', marker.group(1)))
    assert sorted(checked - covered) == []


def test_corpus_has_not_drifted(tmp_path: Path) -> None:
    first = json.loads((CORPUS / "rss.jsonl").read_text().splitlines()[0])
    recorded = first["provenance"]["versions"]
    if recorded != versions():
        pytest.skip(f"corpus made with {recorded}, installed {versions()}: bytes may differ")
    out = tmp_path / "fixtures"
    shutil.copytree(CORPUS, out, ignore=shutil.ignore_patterns("*.jsonl", "*.pcapng",
                                                                "MANIFEST"))
    result = _cli("fixtures", "corpus", "--out", str(out))
    assert result.returncode == 0, result.stderr
    for new in sorted(out.rglob("*")):
        if new.is_dir():
            continue
        old = CORPUS / new.relative_to(out)
        assert old.exists(), f"corpus lacks {old.relative_to(ROOT)}: run rx-oracle fixtures corpus"
        if old.read_bytes() != new.read_bytes():
            diff = "".join(list(difflib.unified_diff(
                io.StringIO(old.read_text(errors="replace")).readlines(),
                io.StringIO(new.read_text(errors="replace")).readlines(),
                str(old.relative_to(ROOT)), "regenerated", n=0))[:12])
            pytest.fail(f"{old.relative_to(ROOT)} drifted; `rx-oracle fixtures corpus` "
                        f"rewrites it:\n{diff[:3000]}")


@pytest.mark.rule("RSS-TOEP-001", "XDP-ADJ-002", "KFUNC-API-003", "PP-ALLOC-001")
def test_verify_passes_on_the_reference(tmp_path: Path) -> None:
    result = _cli("fixtures", "verify", str(CORPUS), "--report", str(tmp_path / "r.json"))
    assert result.returncode == 0, result.stdout + result.stderr
    verdicts = json.loads((tmp_path / "r.json").read_text())["rules"]
    assert verdicts and all(v["verdict"] == "pass" for v in verdicts)


@pytest.mark.rule("RSS-TYPE-001")
def test_a_one_byte_edit_fails_naming_file_and_field(tmp_path: Path) -> None:
    copy = tmp_path / "fixtures"
    shutil.copytree(CORPUS, copy)
    target = copy / "rss.jsonl"
    lines = target.read_text().splitlines(keepends=True)
    # Any recorded non-zero hash type, bumped by one: the corpus changes when it is
    # regenerated, so the line is found rather than named.
    found = next((i, m) for i, line in enumerate(lines)
                 if (m := re.search(r'"hash_type":([1-9][0-9]*)', line)))
    index, match = found
    edited = int(match.group(1)) + 1
    lines[index] = lines[index].replace(match.group(0), f'"hash_type":{edited}', 1)
    target.write_text("".join(lines))
    result = _cli("fixtures", "verify", str(copy))
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert f"rss.jsonl:{index + 1}" in output
    assert f"hash_type: expected {edited}" in output
    assert "rss.jsonl: content differs from its sha256 in MANIFEST" in output


@pytest.mark.rule("RSS-TYPE-001")
def test_a_wrong_target_fails_verify_under_its_rule(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    result = _cli("fixtures", "verify", str(CORPUS), "--target",
                  "python:wrong_targets:RssTypeWithoutL4", "--report", str(tmp_path / "r.json"),
                  env=env)
    assert result.returncode == 1, result.stdout + result.stderr
    verdicts = json.loads((tmp_path / "r.json").read_text())["rules"]
    assert sorted(v["rule"] for v in verdicts if v["verdict"] == "fail") == ["RSS-TYPE-001"]


@pytest.mark.rule("RSS-TYPE-001")
def test_saved_failures_are_fixtures_that_verify_replays(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    saved = tmp_path / "failures"
    run = _cli("conformance", "--driver", "rss", "--target",
               "python:wrong_targets:RssTypeWithoutL4", "--save-failures", str(saved), env=env)
    assert run.returncode == 1, run.stdout + run.stderr
    files = sorted(saved.glob("*.jsonl"))
    assert files and files[0].name.startswith("RSS-TYPE-001-")
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((CORPUS / "fixture.schema.json").read_text())
    for _, record in _records(saved):
        jsonschema.validate(record, schema)
    assert _cli("fixtures", "verify", str(saved)).returncode == 0  # the reference agrees
    again = _cli("fixtures", "verify", str(saved), "--target",
                 "python:wrong_targets:RssTypeWithoutL4", env=env)
    assert again.returncode == 1  # and the wrong target still fails it

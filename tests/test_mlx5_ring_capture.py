"""Captured mlx5 rings: the text and JSON formats, and ``explain --driver mlx5 --ring``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.components import mlx5
from conformance.ring_capture import RingFileError, dump_text, load_ring
from conformance.scenario import Scenario
from reference.mlx5 import cqe as C
from tests.test_mlx5_ring import FRAME, err_slot, ring, slot


def _image() -> Scenario:
    return ring(slot(byte_cnt=len(FRAME), rss_hash_result=0x1234, rss_hash_type=0x44),
                err_slot(C.MLX5_CQE_RESP_ERR, 0x05, wqe_counter=1), log=2)


@pytest.mark.rule("MLX5-RING-001", "MLX5-RING-002")
def test_text_and_json_forms_load_the_same_ring(tmp_path: Path) -> None:
    image = _image()
    config = dict(image.config)
    events = [dict(e) for e in image.events]
    text = tmp_path / "ring.txt"
    text.write_text(dump_text(config, events))
    assert load_ring(text) == (config, events)
    record = tmp_path / "ring.json"
    record.write_text(json.dumps({"cc": 0, "config": config,
                                  "slots": events[0]["slots"],
                                  "buffers": {"0": FRAME.hex()}}))
    assert load_ring(record) == (config, events)
    whole = tmp_path / "scenario.json"
    whole.write_text(json.dumps(image.to_json()))
    assert load_ring(whole) == (config, events)


@pytest.mark.rule("MLX5-RING-001")
@pytest.mark.parametrize(("text", "message"), [
    ("slot 0 00\nslot 2 00\n", "without gaps"),
    ("slot 0 zz\n", "not hex"),
    ("cc x\n", "not an integer"),
    ("  00\n", "continuation"),
    ("frobnicate 1\n", "expected cc, config, slot or buffer"),
    ("slot 0 00\nslot 0 00\n", "given twice"),
])
def test_bad_ring_files_name_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(RingFileError, match=message):
        load_ring(path)


@pytest.mark.rule("MLX5-RING-001", "MLX5-RING-006", "TRACE-001")
def test_explain_narrates_a_captured_ring(tmp_path: Path) -> None:
    image = _image()
    path = tmp_path / "ring.txt"
    path.write_text(dump_text(dict(image.config), [dict(e) for e in image.events]))
    result = subprocess.run([sys.executable, "-m", "conformance.cli", "explain", "--driver",
                             "mlx5", "--ring", str(path)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "mlx5 ring image: 4 slots, cc 0" in out
    assert "slot 0 (counter 0): owner 0 -> new; format plain, opcode 2" in out
    assert "slot 2 (counter 2): owner 1 -> not new" in out
    assert "error CQE: opcode 14, syndrome 0x05" in out
    assert "RQ recovery queued (MLX5-RING-006)" in out
    assert "rx_wqe_err=1" in out and "rx_packets=1" in out
    assert mlx5.run(image)["cc"] == 2  # what the narration's last line says
    assert "consumer counter after the last poll: 2" in out
    bad = subprocess.run([sys.executable, "-m", "conformance.cli", "explain", "--driver",
                          "rss", "--ring", str(path)], capture_output=True, text=True,
                         timeout=120)
    assert bad.returncode != 0 and "--driver mlx5" in bad.stderr


@pytest.mark.rule("MLX5-RING-001", "MLX5-RING-006")
def test_the_readme_example_ring_is_this_image_and_explains() -> None:
    """``examples/mlx5-ring.txt`` (README) is :func:`_image` written by ``dump_text``, and
    its narration shows the packet and then the error CQE that queues recovery."""
    root = Path(__file__).resolve().parent.parent
    example = root / "examples" / "mlx5-ring.txt"
    image = _image()
    assert example.read_text() == dump_text(dict(image.config), [dict(e) for e in image.events])
    result = subprocess.run([sys.executable, "-m", "conformance.cli", "explain", "--driver",
                             "mlx5", "--ring", str(example)], capture_output=True, text=True,
                            timeout=120, cwd=root)
    assert result.returncode == 0, result.stderr
    assert "packet 1 (frame 1, error):" in result.stdout
    assert "MLX5-RX-002        error CQE starts RQ recovery  [syndrome=5]" in result.stdout

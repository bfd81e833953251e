"""Summarise what pytest collects, in a separate pytest process.

Some tests ask about the suite's own items (their rule markers, the rules a fixed case
credits, the scenarios it sends): :func:`collect` runs ``pytest --collect-only`` over
``paths`` with a small plugin that hands the collected items to ``summarize`` (a
``module:function`` importable from ``tests/``) and returns its JSON result."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

_PLUGIN = '''
import importlib, json, os

def pytest_collection_modifyitems(session, config, items):
    module, _, name = os.environ["RX_COLLECT_SUMMARY"].partition(":")
    summarize = getattr(importlib.import_module(module), name)
    with open(os.environ["RX_COLLECT_OUT"], "w") as f:
        json.dump(summarize(items), f)
'''


def collect(tmp: Path, summarize: str, *paths: str) -> Any:
    """``summarize(items)`` of the items pytest collects from ``paths`` (relative to the
    project root), as JSON gives it back."""
    (tmp / "rx_collect_plugin.py").write_text(_PLUGIN)
    out = tmp / "collected.json"
    env = {**os.environ, "RX_COLLECT_SUMMARY": summarize, "RX_COLLECT_OUT": str(out),
           "PYTHONPATH": os.pathsep.join([str(tmp), str(ROOT / "tests"),
                                          os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "rx_collect_plugin",
         "-p", "no:cacheprovider", *paths],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.exists(), proc.stdout[-2000:] + proc.stderr[-2000:]
    return json.loads(out.read_text())

"""reference.zcrx.uapi against a C compiler: the zcrx ABI as gcc lays it out.

An independent reference for ZCRX-UAPI-001 .. ZCRX-UAPI-007 (and the setup and CQE flag
values of ZCRX-REG-002): a small C program includes ``<linux/io_uring.h>`` and prints
``sizeof`` of every struct and ``offsetof``/``sizeof`` of every field the model's
``KERNEL_LAYOUT`` names, plus the constants, and the numbers are compared with
``reference/zcrx/uapi.py``.

Three sources, three tests:

* the installed header (Debian's ``linux-libc-dev``).  Bookworm ships 6.1, which has no
  zcrx (the structs appeared in v6.15) and no ``io_uring_region_desc`` (v6.13); Debian
  offers nothing newer to a bookworm machine (``linux-libc-dev`` 6.1.x, ``liburing-dev``
  2.3, whose own copy of the header is of late 2022), so on this machine and in CI that
  test skips and says why;
* a committed transcription of what gcc printed for the v7.3 uapi headers (Debian
  linux-source-7.3, 7.3.4: ``include/uapi/linux/io_uring/zcrx.h`` and
  ``include/uapi/linux/io_uring.h``), checked against the model wherever the tests run;
* where that kernel tree is on disk (``RX_ORACLE_KSRC_7_3``, default ``/work/ksrc/7.3``;
  not in CI), gcc is run on its headers again and must print the transcription exactly.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from reference.zcrx import uapi
from reference.zcrx.uapi import (
    IoUringRegionDesc,
    IoUringZcrxAreaReg,
    IoUringZcrxCqe,
    IoUringZcrxIfqReg,
    IoUringZcrxOffsets,
    IoUringZcrxRqe,
)

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")

CLASSES: dict[str, Any] = {
    "io_uring_zcrx_rqe": IoUringZcrxRqe, "io_uring_zcrx_cqe": IoUringZcrxCqe,
    "io_uring_zcrx_offsets": IoUringZcrxOffsets, "io_uring_zcrx_area_reg": IoUringZcrxAreaReg,
    "io_uring_zcrx_ifq_reg": IoUringZcrxIfqReg, "io_uring_region_desc": IoUringRegionDesc,
}
#: The C constants and the model's value for each (ZCRX-UAPI-004/005/006/007, ZCRX-REG-002,
#: ZCRX-CQE-002).
CONSTANTS: dict[str, int] = {
    "IORING_ZCRX_AREA_SHIFT": uapi.IORING_ZCRX_AREA_SHIFT,
    "IORING_ZCRX_AREA_MASK": uapi.IORING_ZCRX_AREA_MASK,
    "IORING_ZCRX_AREA_DMABUF": uapi.IORING_ZCRX_AREA_DMABUF,
    "ZCRX_REG_IMPORT": uapi.ZCRX_REG_IMPORT,
    "ZCRX_REG_NODEV": uapi.ZCRX_REG_NODEV,
    "ZCRX_FEATURE_RX_PAGE_SIZE": uapi.ZCRX_FEATURE_RX_PAGE_SIZE,
    "ZCRX_FEATURE_EVENT": uapi.ZCRX_FEATURE_EVENT,
    "IORING_SETUP_CLAMP": uapi.IORING_SETUP_CLAMP,
    "IORING_SETUP_CQE32": uapi.IORING_SETUP_CQE32,
    "IORING_SETUP_DEFER_TASKRUN": uapi.IORING_SETUP_DEFER_TASKRUN,
    "IORING_SETUP_CQE_MIXED": uapi.IORING_SETUP_CQE_MIXED,
    "IORING_CQE_F_MORE": uapi.IORING_CQE_F_MORE,
    "IORING_CQE_F_32": uapi.IORING_CQE_F_32,
    "IORING_MEM_REGION_TYPE_USER": uapi.IORING_MEM_REGION_TYPE_USER,
    # the CQE a zcrx completion extends (ZCRX-UAPI-002)
    "sizeof(struct io_uring_cqe)": 16,
}
RULES = ("ZCRX-UAPI-001", "ZCRX-UAPI-002", "ZCRX-UAPI-003", "ZCRX-UAPI-004", "ZCRX-UAPI-005",
         "ZCRX-UAPI-006", "ZCRX-UAPI-007", "ZCRX-REG-002")

#: What gcc 12.2 (x86-64) printed for Debian linux-source-7.3 (7.3.4),
#: include/uapi/linux/io_uring/zcrx.h and include/uapi/linux/io_uring.h, through the
#: program :func:`c_program` writes: struct -> (sizeof, {field: (offsetof, sizeof)}).
#: Written down from that program's output (2026-12-02) and re-checked against it by
#: :func:`test_v7_3_tree_reproduces_transcription`; not derived from the model.
V7_3_STRUCTS: dict[str, tuple[int, dict[str, tuple[int, int]]]] = {
    "io_uring_zcrx_rqe": (16, {"off": (0, 8), "len": (8, 4), "__pad": (12, 4)}),
    "io_uring_zcrx_cqe": (16, {"off": (0, 8), "__pad": (8, 8)}),
    "io_uring_zcrx_offsets": (32, {"head": (0, 4), "tail": (4, 4), "rqes": (8, 4),
                                   "__resv2": (12, 4), "__resv": (16, 16)}),
    "io_uring_zcrx_area_reg": (48, {"addr": (0, 8), "len": (8, 8), "rq_area_token": (16, 8),
                                    "flags": (24, 4), "dmabuf_fd": (28, 4),
                                    "__resv2": (32, 16)}),
    "io_uring_zcrx_ifq_reg": (96, {"if_idx": (0, 4), "if_rxq": (4, 4), "rq_entries": (8, 4),
                                   "flags": (12, 4), "area_ptr": (16, 8),
                                   "region_ptr": (24, 8), "offsets": (32, 32),
                                   "zcrx_id": (64, 4), "rx_buf_len": (68, 4),
                                   "event_desc": (72, 8), "__resv": (80, 16)}),
    "io_uring_region_desc": (64, {"user_addr": (0, 8), "size": (8, 8), "flags": (16, 4),
                                  "id": (20, 4), "mmap_offset": (24, 8), "__resv": (32, 32)}),
}
V7_3_CONSTANTS: dict[str, int] = {
    "IORING_ZCRX_AREA_SHIFT": 48,
    "IORING_ZCRX_AREA_MASK": 0xFFFF_0000_0000_0000,
    "IORING_ZCRX_AREA_DMABUF": 1,
    "ZCRX_REG_IMPORT": 1,
    "ZCRX_REG_NODEV": 2,
    "ZCRX_FEATURE_RX_PAGE_SIZE": 1,
    "ZCRX_FEATURE_EVENT": 2,
    "IORING_SETUP_CLAMP": 16,
    "IORING_SETUP_CQE32": 2048,
    "IORING_SETUP_DEFER_TASKRUN": 8192,
    "IORING_SETUP_CQE_MIXED": 262144,
    "IORING_CQE_F_MORE": 2,
    "IORING_CQE_F_32": 32768,
    "IORING_MEM_REGION_TYPE_USER": 1,
    "sizeof(struct io_uring_cqe)": 16,
}

KSRC_7_3 = Path(os.environ.get("RX_ORACLE_KSRC_7_3", "/work/ksrc/7.3"))


def c_program() -> str:
    """The C source: one ``S`` line per struct, one ``F`` line per field, one ``C`` line
    per constant, all from the model's field names (so a renamed field fails to compile)."""
    lines = ["#include <stdio.h>", "#include <stddef.h>", "#include <linux/io_uring.h>",
             "#define FSZ(s, f) sizeof(((struct s *)0)->f)", "int main(void) {"]
    for name, cls in CLASSES.items():
        lines.append(f'  printf("S {name} %zu\\n", sizeof(struct {name}));')
        for field, _off, _size in cls.KERNEL_LAYOUT:
            lines.append(f'  printf("F {name} {field} %zu %zu\\n", '
                         f"offsetof(struct {name}, {field}), FSZ({name}, {field}));")
    for const in CONSTANTS:
        lines.append(f'  printf("C {const} %llu\\n", (unsigned long long)({const}));')
    lines += ["  return 0;", "}"]
    return "\n".join(lines) + "\n"


Layout = tuple[dict[str, tuple[int, dict[str, tuple[int, int]]]], dict[str, int]]


def compile_and_run(tmp: Path, include_dirs: list[Path]) -> tuple[Layout | None, str]:
    """Build and run the program; ``(None, gcc's first error)`` when it does not build."""
    src = tmp / "zcrx_layout.c"
    exe = tmp / "zcrx_layout"
    src.write_text(c_program())
    cmd = ["gcc", "-std=gnu11", "-Wall", "-o", str(exe), str(src)]
    cmd[1:1] = [f"-I{d}" for d in include_dirs]
    built = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if built.returncode:
        first = next((ln for ln in built.stderr.splitlines() if "error:" in ln), built.stderr)
        return None, first.split("error:", 1)[-1].strip()
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    structs: dict[str, tuple[int, dict[str, tuple[int, int]]]] = {}
    consts: dict[str, int] = {}
    for line in out.splitlines():
        kind, rest = line.split(" ", 1)
        if kind == "S":
            name, size = rest.split()
            structs[name] = (int(size), {})
        elif kind == "F":
            name, field, off, size = rest.split()
            structs[name][1][field] = (int(off), int(size))
        else:
            const, value = rest.rsplit(" ", 1)
            consts[const] = int(value)
    return (structs, consts), ""


def model_layout() -> Layout:
    structs = {name: (cls.SIZE, {f: (o, s) for f, o, s in cls.KERNEL_LAYOUT})
               for name, cls in CLASSES.items()}
    return structs, dict(CONSTANTS)


def assert_matches_model(layout: Layout) -> None:
    structs, consts = layout
    m_structs, m_consts = model_layout()
    for name, (size, fields) in m_structs.items():
        assert structs[name][0] == size, f"sizeof(struct {name})"
        for field, where in fields.items():
            assert structs[name][1][field] == where, f"struct {name}.{field} (offset, size)"
        # the model's packer agrees with the size gcc reports
        assert len(CLASSES[name]().pack()) == structs[name][0]
    assert consts == m_consts


@pytest.mark.rule(*RULES)
def test_installed_header_matches_model(tmp_path: Path) -> None:
    """``<linux/io_uring.h>`` as installed; skips, naming the reason, when it predates zcrx."""
    layout, err = compile_and_run(tmp_path, [])
    if layout is None:
        version = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "linux-libc-dev"],
                                 capture_output=True, text=True, check=False).stdout
        pytest.skip("the installed <linux/io_uring.h> (linux-libc-dev "
                    f"{version or 'unknown'}) lacks the zcrx ABI (v6.15+, rx_buf_len v7.0+, "
                    f"event_desc v7.1+): {err}")
    assert_matches_model(layout)


@pytest.mark.rule(*RULES)
def test_v7_3_transcription_matches_model() -> None:
    """The committed gcc output for the v7.3 headers equals the model's layouts."""
    assert_matches_model((V7_3_STRUCTS, V7_3_CONSTANTS))


@pytest.mark.rule(*RULES)
def test_v7_3_tree_reproduces_transcription(tmp_path: Path) -> None:
    """Where the Debian linux-source-7.3 tree is on disk, gcc on its uapi headers prints
    the committed transcription exactly (the kernel's own ``<linux/io_uring.h>`` and
    ``<linux/io_uring/zcrx.h>`` shadow the installed ones; ``<linux/types.h>`` and the
    rest still come from linux-libc-dev)."""
    uapi_dir = KSRC_7_3 / "include" / "uapi" / "linux"
    if not (uapi_dir / "io_uring" / "zcrx.h").is_file():
        pytest.skip(f"no v7.3 kernel tree at {KSRC_7_3} (set RX_ORACLE_KSRC_7_3)")
    inc = tmp_path / "inc" / "linux"
    (inc / "io_uring").mkdir(parents=True)
    shutil.copy(uapi_dir / "io_uring.h", inc / "io_uring.h")
    for header in (uapi_dir / "io_uring").glob("*.h"):
        shutil.copy(header, inc / "io_uring" / header.name)
    layout, err = compile_and_run(tmp_path, [tmp_path / "inc"])
    assert layout is not None, err
    assert layout == (V7_3_STRUCTS, V7_3_CONSTANTS)

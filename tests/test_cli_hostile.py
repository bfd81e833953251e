"""The command line under hostile outputs, inputs and targets: a verdict, or one line.

Each case runs ``rx-oracle`` in a subprocess, as a user would, from a scratch directory
and without ``PYTHONPATH`` (``python -P``: the working directory is not put on
``sys.path`` for us, as it is not for the installed ``rx-oracle`` script).  A user's
mistake or a target that cannot run must end with exit status 2 and exactly one line on
stderr naming the option or field and the value, never a traceback, and nothing may be
written but the files the user named.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
#: The quickest real run: one rss property, a few seconds.
QUICK = ["conformance", "--driver", "rss", "--rules", "RSS-CFG-001"]


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _run(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-P", "-m", "conformance.cli", *args],
                          capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env=_env())


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


def _one_line(proc: subprocess.CompletedProcess[str], *wanted: str) -> str:
    """Exit 2, exactly one line on stderr, holding each of ``wanted``."""
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    for text in wanted:
        assert text in lines[0], (text, lines[0])
    return lines[0]


def _refused(tmp: Path, *args: str, wanted: tuple[str, ...], named: tuple[str, ...] = ()
             ) -> str:
    """Run from ``tmp``: one line, exit 2, and no file appears there but ``named``."""
    before = _files(tmp)
    line = _one_line(_run(*args, cwd=tmp), *wanted)
    assert _files(tmp) - before <= set(named), _files(tmp) - before
    return line


# --- output files -------------------------------------------------------------------


def test_report_to_dev_null_is_written_through(tmp_path: Path) -> None:
    """A character device (/dev/null) is written through: exit 0, still a device."""
    proc = _run(*QUICK, "--report", "/dev/null", "--junitxml", "/dev/null", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert _files(tmp_path) == set()


def test_report_to_dev_stdout_redirected_to_a_file(tmp_path: Path) -> None:
    """/dev/stdout redirected to a regular file is written through, after the table: the
    file is not replaced by one holding the report alone."""
    out = tmp_path / "out.txt"
    with out.open("w") as fh:
        proc = subprocess.run([sys.executable, "-P", "-m", "conformance.cli", *QUICK,
                               "--report", "/dev/stdout"], stdout=fh, stderr=subprocess.PIPE,
                              text=True, timeout=120, cwd=tmp_path, env=_env())
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    table, _, report = text.partition('{\n  "format"')
    assert "rules:" in table and '"rx-oracle-report"' in report
    assert _files(tmp_path) == {"out.txt"}


def test_report_to_a_fifo_is_written_through(tmp_path: Path) -> None:
    """A FIFO is written through to its reader, and stays a FIFO."""
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    proc = _run(*QUICK, "--report", str(fifo), cwd=tmp_path)
    reader.join(30)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(got[0])["format"] == "rx-oracle-report"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert _files(tmp_path) == {"report.fifo"}


def test_symlink_to_a_device_is_not_replaced(tmp_path: Path) -> None:
    """--html through a symlink to /dev/null writes the device; the link stays a link."""
    link = tmp_path / "out.html"
    link.symlink_to("/dev/null")
    proc = _run("explain", "--driver", "cpumap", "--html", str(link), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and os.readlink(link) == "/dev/null"
    assert _files(tmp_path) == {"out.html"}


def test_report_to_a_directory_is_refused_up_front(tmp_path: Path) -> None:
    """A directory as --report: one line before anything runs."""
    (tmp_path / "d").mkdir()
    _refused(tmp_path, *QUICK, "--report", "d", wanted=("--report d", "is a directory"))


def test_two_options_naming_one_file_are_refused(tmp_path: Path) -> None:
    """--report and --junitxml on the same file, by name or through a symlink."""
    _refused(tmp_path, *QUICK, "--report", "out", "--junitxml", "./out",
             wanted=("--junitxml out", "the same file as --report out"))
    (tmp_path / "real").write_text("")
    (tmp_path / "alias").symlink_to("real")
    _refused(tmp_path, *QUICK, "--report", "real", "--junitxml", "alias",
             wanted=("--junitxml alias", "the same file as --report real"))


def test_a_full_device_is_enospc_in_one_line(tmp_path: Path) -> None:
    """/dev/full as --report (after a run) and as --html: ENOSPC, one line, exit 2."""
    _refused(tmp_path, *QUICK, "--report", "/dev/full",
             wanted=("--report /dev/full", "ENOSPC"))
    _refused(tmp_path, "explain", "--driver", "cpumap", "--html", "/dev/full",
             wanted=("--html /dev/full", "ENOSPC"))


def test_a_failed_temp_file_write_leaves_no_tmp(tmp_path: Path) -> None:
    """A write error on the temp file (fsync made to fail with EROFS) is one line, and
    neither the temp file nor the output is left behind."""
    code = ("import errno, os, sys\n"
            "def fail(fd): raise OSError(errno.EROFS, os.strerror(errno.EROFS))\n"
            "os.fsync = fail\n"
            "from conformance.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    proc = subprocess.run([sys.executable, "-P", "-c", code, "explain", "--driver", "cpumap",
                           "--html", "page.html"], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, env=_env())
    _one_line(proc, "--html page.html", "EROFS")
    assert _files(tmp_path) == set()


def test_a_failure_that_cannot_be_saved_ends_the_run(tmp_path: Path) -> None:
    """--save-failures whose fixture write fails (fsync made to fail with ENOSPC): the
    failure is not lost silently: one line, exit 2, no temp file in the directory.  The
    wrong target is named by its file path (python:FILE.py:OBJECT)."""
    code = ("import errno, os, sys\n"
            "def fail(fd): raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))\n"
            "os.fsync = fail\n"
            "from conformance.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    wrong = Path(__file__).with_name("wrong_targets.py")
    proc = subprocess.run([sys.executable, "-P", "-c", code, "conformance", "--driver", "rss",
                           "--rules", "RSS-RETA-004", "--target",
                           f"python:{wrong}:RssQueueFromHighBits", "--save-failures",
                           "saved"], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env=_env())
    _one_line(proc, "--save-failures saved", "ENOSPC")
    assert _files(tmp_path) <= {"saved"}


def test_save_failures_through_a_symlink_loop_is_refused(tmp_path: Path) -> None:
    """--save-failures naming a symlink loop: ELOOP in one line, before the run."""
    (tmp_path / "loop").symlink_to("loop")
    _refused(tmp_path, *QUICK, "--save-failures", "loop", wanted=("--save-failures loop",
                                                                  "ELOOP"))


# --- user input ---------------------------------------------------------------------


@pytest.mark.parametrize("value", ["1e300", "nan", "-1", "0", "86401"])
def test_timeout_out_of_range(tmp_path: Path, value: str) -> None:
    """--timeout must be in (0, 86400] seconds."""
    _refused(tmp_path, *QUICK, "--timeout", value, wanted=("--timeout", "(0, 86400]"))


def test_config_from_an_endless_or_huge_file(tmp_path: Path) -> None:
    """@/dev/zero and a 17 MiB @FILE are refused at the 16 MiB bound."""
    _refused(tmp_path, "explain", "--driver", "cpumap", "--config", "@/dev/zero",
             wanted=("--config @/dev/zero", "16 MiB"))
    big = tmp_path / "big.json"
    with big.open("wb") as fh:
        fh.truncate(17 * 1024 * 1024)
    _refused(tmp_path, "explain", "--driver", "cpumap", "--config", "@big.json",
             wanted=("--config @big.json", "16 MiB"))


def test_replay_of_a_frame_the_reference_refuses(tmp_path: Path) -> None:
    """A 1-byte veth frame is the scenario's fault: a usage error, not exit 1."""
    _refused(tmp_path, "replay", '{"component": "veth", "frames": ["00"]}',
             wanted=("bad scenario", "VETH-SKB-001", "frames[0]"))


def test_pcapng_block_claiming_4_gib(tmp_path: Path) -> None:
    """A pcapng block length beyond the file's end is one line naming the block."""
    from scapy.layers.inet import IP
    from scapy.layers.l2 import Ether
    from scapy.utils import wrpcapng

    path = tmp_path / "huge.pcapng"
    wrpcapng(str(path), [Ether() / IP()])
    data = bytearray(path.read_bytes())
    shb = int.from_bytes(data[4:8], "little")
    idb = int.from_bytes(data[shb + 4:shb + 8], "little")
    data[shb + idb + 4:shb + idb + 8] = (0xFFFFFFFC).to_bytes(4, "little")
    path.write_bytes(data)
    _refused(tmp_path, "explain", "--driver", "rss", "huge.pcapng",
             wanted=("huge.pcapng", "4294967292 bytes"))


# --- fixture sets -------------------------------------------------------------------


def _fixture_set(tmp: Path) -> Path:
    """A fixture directory holding one good rss record."""
    directory = tmp / "set"
    directory.mkdir()
    line = (FIXTURES / "rss.jsonl").read_text().splitlines()[0]
    (directory / "good.jsonl").write_text(line + "\n")
    return directory


def test_fixtures_dir_with_a_fifo_does_not_hang(tmp_path: Path) -> None:
    """A FIFO named *.jsonl is refused by name; nothing waits for a writer."""
    directory = _fixture_set(tmp_path)
    os.mkfifo(directory / "pipe.jsonl")
    proc = _run("fixtures", "verify", "set", cwd=tmp_path, timeout=60)
    _one_line(proc, "pipe.jsonl", "FIFO")


@pytest.mark.parametrize("bad", ["dangling", "loop", "directory", "latin1"])
def test_fixtures_dir_with_a_bad_entry(tmp_path: Path, bad: str) -> None:
    """A dangling symlink, a symlink loop, a directory named x.jsonl, non-UTF-8 bytes: one
    line naming it,
    for ``fixtures verify`` and for a ``fixtures:DIR`` target alike."""
    directory = _fixture_set(tmp_path)
    entry = directory / "x.jsonl"
    wanted = {"dangling": "a symlink to nothing", "loop": "ELOOP", "directory": "is a directory",
              "latin1": "not UTF-8"}[bad]
    if bad == "dangling":
        entry.symlink_to("nowhere.jsonl")
    elif bad == "loop":
        entry.symlink_to("x.jsonl")
    elif bad == "directory":
        entry.mkdir()
    else:
        entry.write_bytes(b'{"caf\xe9": 1}\n')
    _refused(tmp_path, "fixtures", "verify", "set", wanted=("x.jsonl", wanted))
    _refused(tmp_path, *QUICK, "--target", "fixtures:set", wanted=("x.jsonl", wanted))


def test_fixture_the_reference_refuses_is_bad_input(tmp_path: Path) -> None:
    """A record whose frame the reference refuses is the set's fault, named by file and
    line, not a failure of the reference."""
    directory = _fixture_set(tmp_path)
    doc = json.loads((FIXTURES / "veth.jsonl").read_text().splitlines()[0])
    doc["scenario"]["frames"] = ["00"]
    (directory / "veth.jsonl").write_text(json.dumps(doc) + "\n")
    _refused(tmp_path, "fixtures", "verify", "set",
             wanted=("veth.jsonl:1", "the reference refuses", "VETH-SKB-001"))


# --- targets ------------------------------------------------------------------------

TARGET = """\
from conformance.targets.base import Capabilities
from conformance.targets.reference import ReferenceTarget


class Target:
    name = "hostile"

    def __init__(self):
        self.inner = ReferenceTarget()

    @property
    def capabilities(self):
        return {capabilities}

    def run(self, scenario):
        return self.inner.run(scenario)

    def close(self):
        pass
"""


def _target(tmp: Path, capabilities: str, name: str = "hostile.py") -> None:
    (tmp / name).write_text(TARGET.format(capabilities=capabilities))


@pytest.mark.parametrize("name", ["rsss", "RSS"])
def test_unknown_component_is_a_target_error(tmp_path: Path, name: str) -> None:
    """A component that does not exist (a typo, the wrong case) is named with the known."""
    _target(tmp_path, f"Capabilities(frozenset({{{name!r}}}))")
    _refused(tmp_path, *QUICK, "--target", "python:hostile.py:Target",
             wanted=(repr(name), "no such component", "known: ", "rss"))


def test_unknown_component_in_an_exec_hello(tmp_path: Path) -> None:
    """An exec target whose hello names "rsss": a target error naming it, exit 2."""
    (tmp_path / "hello.py").write_text(
        "import json, sys\n"
        "print(json.dumps({'type': 'hello', 'protocol': 1, 'name': 'typo',\n"
        "                  'capabilities': {'components': ['rsss'], 'reports': ['*']}}),\n"
        "      flush=True)\n"
        "sys.stdin.read()\n")
    _refused(tmp_path, *QUICK, "--target", f"exec:{sys.executable} hello.py",
             wanted=("'rsss'", "no such component", "known: "))


def test_no_rule_checked_is_not_green(tmp_path: Path) -> None:
    """A target implementing none of the selected components: exit 2, not 394 skips."""
    _target(tmp_path, 'Capabilities(frozenset({"xdp"}))')
    proc = _run(*QUICK, "--target", "python:hostile.py:Target", cwd=tmp_path)
    _one_line(proc, "no rule was checked", "python:hostile.py:Target")


@pytest.mark.parametrize(("capabilities", "wanted"), [
    ('{"components": ["rss"]}', "capabilities is a dict"),
    ('1 / 0', "ZeroDivisionError"),
])
def test_capabilities_not_an_object_or_raising(tmp_path: Path, capabilities: str,
                                               wanted: str) -> None:
    """capabilities as a plain dict, or raising: one line, not pytest errors."""
    _target(tmp_path, capabilities)
    _refused(tmp_path, *QUICK, "--target", "python:hostile.py:Target",
             wanted=("python:hostile.py:Target", wanted))


@pytest.mark.parametrize("spec", ["python:mine:Target", "python:./ports/mine.py:Target"])
def test_python_target_found_from_the_working_directory(tmp_path: Path, spec: str) -> None:
    """python:MODULE:OBJECT finds MODULE in the current directory, and a file path
    (anything with / or ending .py) is loaded from the file; no PYTHONPATH."""
    _target(tmp_path, 'Capabilities(frozenset({"rss"}))', "mine.py")
    (tmp_path / "ports").mkdir()
    _target(tmp_path / "ports", 'Capabilities(frozenset({"rss"}))', "mine.py")
    before = _files(tmp_path)
    proc = _run(*QUICK, "--target", spec, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert _files(tmp_path) == before  # no __pycache__ either


def test_python_target_that_fails_to_import(tmp_path: Path) -> None:
    """A module raising on import: one line with the exception's last line."""
    (tmp_path / "broken.py").write_text("raise RuntimeError('first\\nsecond line')\n")
    _refused(tmp_path, *QUICK, "--target", "python:broken:Target",
             wanted=("'broken:Target'", "RuntimeError: second line"))


def test_sigterm_ends_the_run_cleanly(tmp_path: Path) -> None:
    """SIGTERM during a run: the target is closed, one line, exit 2."""
    (tmp_path / "slow.py").write_text(
        "import pathlib, time\n"
        "from conformance.targets.base import Capabilities\n"
        "from conformance.targets.reference import ReferenceTarget\n"
        "class Target:\n"
        "    name = 'slow'\n"
        "    capabilities = Capabilities(frozenset({'rss'}))\n"
        "    def run(self, scenario):\n"
        "        pathlib.Path('running').touch()\n"
        "        time.sleep(0.2)\n"
        "        return ReferenceTarget().run(scenario)\n"
        "    def close(self):\n"
        "        pathlib.Path('closed').touch()\n")
    proc = subprocess.Popen([sys.executable, "-P", "-m", "conformance.cli", *QUICK,
                             "--target", "python:slow:Target"], cwd=tmp_path, env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (tmp_path / "running").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    _one_line(done, "terminated (SIGTERM)")
    assert (tmp_path / "closed").exists()

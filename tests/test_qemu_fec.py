"""The qemu-fec target's set-up pieces (no boot) and its guest lifecycle (boots QEMU;
skipped without root, qemu-system-arm, clang or a reachable Debian archive)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import attrs
import pytest

from conformance.live.qemu_fec import image
from conformance.live.qemu_fec.archive import ArchiveUnreachable, ImageError, host_mirror


@pytest.mark.rule("FEC-RX-001")
def test_cpio_is_newc_that_cpio_lists(tmp_path: Path) -> None:
    """The initramfs writer's archive, read back by GNU cpio (an independent reader)."""
    if shutil.which("cpio") is None:
        pytest.skip("cpio is not installed (apt: cpio)")
    c = image.Cpio()
    c.dir("bin")
    c.file("bin/x", b"abc", 0o755)
    c.symlink("y", "bin/x")
    raw = __import__("gzip").decompress(c.finish())
    listing = subprocess.run(["cpio", "-it", "--quiet"], input=raw, capture_output=True,
                             check=True).stdout.decode().split()
    assert listing == ["bin", "bin/x", "y"]
    subprocess.run(["cpio", "-id", "--quiet"], input=raw, cwd=tmp_path, check=True)
    assert (tmp_path / "bin/x").read_bytes() == b"abc"
    assert os.readlink(tmp_path / "y") == "bin/x"


@pytest.mark.rule("FEC-RX-001")
def test_module_depends_from_modinfo() -> None:
    blob = b"\x7fELF...\x00license=GPL\x00depends=libphy,fixed-phy\x00intree=Y\x00"
    assert image.module_depends(blob) == ["libphy", "fixed_phy"]
    assert image.module_depends(b"\x00depends=\x00") == []


@pytest.mark.rule("FEC-RX-001")
def test_legacy_dtb_swaps_the_compatible_only() -> None:
    dtb = b"head\x00fsl,imx6q-fec\x00tail"
    assert image.legacy_dtb(dtb) == b"head\x00fsl,imx27-fec\x00tail"
    with pytest.raises(ImageError):
        image.legacy_dtb(b"nothing here")


@pytest.mark.rule("FEC-RX-001")
def test_qemu_machine_listing_and_versions(tmp_path: Path) -> None:
    """imx8mp-evk needs QEMU >= 10: a binary counts only when its ``-machine help`` lists
    the machine (a name that merely starts the same does not); Debian versions compare by
    their upstream major, epoch or not."""
    from conformance.live.qemu_fec import qemu

    fake = tmp_path / "qemu-system-aarch64"
    fake.write_text("#!/bin/sh\necho 'Supported machines are:'\n"
                    "echo 'imx8mp-evk-x   something else'\necho 'imx25-pdk   ARM i.MX25'\n")
    fake.chmod(0o755)
    assert not qemu.has_machine(str(fake), "imx8mp-evk")
    assert qemu.has_machine(str(fake), "imx25-pdk")
    assert not qemu.has_machine(str(tmp_path / "none"), "imx25-pdk")
    assert qemu._major("1:10.0.2+ds-2+deb13u1~bpo12+1") == 10
    assert qemu._major("1:7.2+dfsg-7+deb12u18") == 7
    assert max(["1:7.2+dfsg-7", "1:10.0.2+ds-2"], key=qemu._version_key) == "1:10.0.2+ds-2"
    release = tmp_path / "os-release"
    release.write_text('NAME="Debian"\nVERSION_CODENAME=bookworm\n')
    assert qemu.host_codename(str(release)) == "bookworm"


@pytest.mark.rule("FEC-RX-001")
def test_host_mirror_reads_both_source_formats(tmp_path: Path) -> None:
    deb822 = tmp_path / "debian.sources"
    deb822.write_text("Types: deb\nURIs: http://example.invalid/debian\nSuites: x\n")
    line = tmp_path / "sources.list"
    line.write_text("deb [signed-by=/k.gpg] http://example.invalid/debian/ x main\n")
    assert host_mirror((str(deb822),)) == "http://example.invalid/debian"
    assert host_mirror((str(line),)) == "http://example.invalid/debian"
    with pytest.raises(ArchiveUnreachable):
        host_mirror((str(tmp_path / "none"),))


# --- the guest lifecycle --------------------------------------------------------------------

def _boot_files() -> object:
    from conformance.live.qemu_fec import boot

    reason = boot.missing_tools()
    if reason:
        pytest.skip(reason)
    try:
        return boot.prepare("sabrelite")
    except ArchiveUnreachable as exc:
        pytest.skip(str(exc))


@pytest.mark.rule("FEC-RX-001")
def test_guest_boots_answers_and_is_gone_after_close() -> None:
    from conformance.live.qemu_fec import guest

    files = _boot_files()
    g = guest.Guest(kernel=files.vmlinuz, dtb=files.dtb, initrd=files.initrd)  # type: ignore[attr-defined]
    run_dir, ns = g.dir, g.ns
    try:
        assert guest.running_qemus(run_dir)
        info = g.control(guest.INFO)
        assert "RXO-INFO driver fec" in info
        assert any(line.startswith("RXO-INFO compatible fsl,imx6q-fec") for line in info)
    finally:
        g.close()
    assert not guest.running_qemus(run_dir)
    assert not run_dir.exists()
    assert ns is not None and not Path("/run/netns", ns).exists()


@pytest.mark.rule("FEC-RX-001")
def test_sigkilled_run_leaves_nothing_after_the_next_sweep() -> None:
    from conformance.live.qemu_fec import guest

    files = _boot_files()
    script = textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from conformance.live.qemu_fec import guest
        g = guest.Guest(kernel=Path({str(files.vmlinuz)!r}), dtb=Path({str(files.dtb)!r}),
                        initrd=Path({str(files.initrd)!r}))
        print("UP", g.dir, g.ns, flush=True)
        time.sleep(600)
    """)  # type: ignore[attr-defined]
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": os.getcwd()})
    try:
        assert child.stdout is not None
        line = child.stdout.readline().split()
        assert line and line[0] == "UP", line
        run_dir, ns = Path(line[1]), line[2]
        assert guest.running_qemus(run_dir)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        deadline = time.monotonic() + 10
        while guest.running_qemus(run_dir) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not guest.running_qemus(run_dir), "QEMU outlived its SIGKILL'd parent"
        swept = guest.sweep()
        assert str(run_dir) in swept and ns in swept
        assert not run_dir.exists() and not Path("/run/netns", ns).exists()
    finally:
        if child.poll() is None:
            child.kill()


# --- the target: records, control frames, one scenario end to end ---------------------------

def _record(entry_len: int) -> bytes:
    """A guest probe record head: seq, nrec, action, lengths; ``pad`` = entry length."""
    import struct

    return struct.pack("<8I", 0, 0, 2, entry_len, 0, entry_len, 0, entry_len)


@pytest.mark.rule("FEC-XDP-001", "FEC-RX-004")
def test_records_pair_with_frames_by_entry_length() -> None:
    """A frame the driver takes as an error has no XDP run: its record is missing and the
    next record belongs to the next frame of the length it started with."""
    from conformance.targets.base import TargetError
    from conformance.targets.qemu_fec import match_records

    frames = [bytes(60), bytes(1980), bytes(70)]
    records = [_record(60), _record(70)]
    assert [i for i, _ in match_records(frames, records)] == [0, 2]
    assert [i for i, _ in match_records(frames, [_record(60)] * 1)] == [0]
    with pytest.raises(TargetError):
        match_records(frames, [_record(70), _record(60)])


@pytest.mark.rule("FEC-RX-001")
def test_a_control_frame_is_not_a_scenario_frame() -> None:
    """EtherType 0x88b5 alone is a scenario frame (the frame strategies draw it); with the
    control magic after the header it is the host's control channel: not applicable."""
    from conformance.live.qemu_fec.guest import CTL_MAGIC
    from conformance.targets.qemu_fec import is_control_frame

    head = bytes(12) + b"\x88\xb5"
    assert not is_control_frame(head + bytes(46))
    assert is_control_frame(head + CTL_MAGIC.to_bytes(4, "little") + bytes(42))
    assert not is_control_frame(bytes(12) + b"\x08\x00" + CTL_MAGIC.to_bytes(4, "little"))


@pytest.mark.rule("FEC-RX-001", "FEC-RX-005")
def test_board_scenarios_keep_the_board_fixed() -> None:
    """Every drawn scenario has the board's quirks and full-size rings (fec.h: 256 RX,
    1024 TX), default events and no faults, and the reference runs it."""
    from hypothesis import given, settings

    from conformance.components import fec

    @settings(max_examples=30, deadline=None, database=None, derandomize=True)
    @given(scenario=fec.board_scenarios(fec.IMX27))
    def run(scenario: object) -> None:
        config = scenario.config  # type: ignore[attr-defined]
        assert {k: config[k] for k in fec.IMX27} == dict(fec.IMX27)
        assert config["rx_ring_size"] == 256 and config["tx_ring_size"] == 1024
        assert not scenario.events and "faults" not in config  # type: ignore[attr-defined]
        assert len(fec.expected(scenario)["packets"]) == len(scenario.frames)  # type: ignore[arg-type,attr-defined]

    run()


def _udp_frame(payload: int) -> bytes:
    eth = bytes.fromhex("020000000001" "020000000003" "0800")
    ip = bytes.fromhex("4500") + (28 + payload).to_bytes(2, "big") + bytes.fromhex(
        "0000400040110000" "c0000201" "c0000202")
    udp = (1234).to_bytes(2, "big") + (5678).to_bytes(2, "big") + (8 + payload).to_bytes(
        2, "big") + bytes(2)
    return eth + ip + udp + bytes(range(payload))


def _target(board: str) -> object:
    from conformance.live.qemu_fec import boot
    from conformance.targets.base import TargetUnavailable
    from conformance.targets.qemu_fec import QemuFecTarget

    # imx8mp-evk: QEMU >= 10 may come from the archive, none need be installed
    reason = boot.missing_tools(None if board == "imx8mp-evk" else "qemu-system-arm")
    if reason:
        pytest.skip(reason)
    try:
        return QemuFecTarget(board)
    except TargetUnavailable as exc:
        if "archive" in str(exc).lower() or "QEMU >= " in str(exc):
            pytest.skip(str(exc))
        raise


@pytest.mark.rule("FEC-XDP-001", "FEC-XDP-005", "FEC-TX-003", "FEC-RX-005", "FEC-STATS-003")
def test_one_scenario_round_trips_and_the_target_leaves_nothing() -> None:
    """PASS, DROP, ABORTED and an XDP_TX of a rewritten frame through the real driver: the
    verdicts as programmed, the transmitted frame back byte-exact, ABORTED counted in
    rx_xdp_drop (fec_enet_run_xdp, 6.12.117: ABORTED falls through to DROP), four frames
    counted; then the same observables as the reference.  After close: no QEMU, no run
    directory, no namespace."""
    from conformance.components import fec
    from conformance.live.qemu_fec import guest
    from conformance.scenario import Scenario, to_jsonable

    target = _target("sabrelite")
    g = target.guest  # type: ignore[attr-defined]
    run_dir, ns = g.dir, g.ns
    try:
        frame = _udp_frame(40)
        programs = {0: ({"op": "return", "action": 2},),
                    1: ({"op": "return", "action": 1},),
                    2: ({"op": "write", "offset": 0, "data": "0a0b0c0d0e0f"},
                        {"op": "return", "action": 3}),
                    3: ({"op": "return", "action": 0},)}
        scenario = Scenario(component="fec", config=dict(fec.IMX6Q), frames=(frame,) * 4,
                            program=({"op": "return", "action": 2},),
                            per_packet_programs=programs)
        got = to_jsonable(target.run(scenario))  # type: ignore[attr-defined]
        assert [p["verdict"] for p in got["packets"]] == [
            "XDP_PASS", "XDP_DROP", "XDP_TX", "XDP_ABORTED"]
        assert got["wire"] == [(bytes.fromhex("0a0b0c0d0e0f") + frame[6:]).hex()]
        assert got["counters"]["rx_packets"] == 4
        assert {k: got["ethtool"][k] for k in ("rx_xdp_pass", "rx_xdp_drop", "rx_xdp_tx")} == {
            "rx_xdp_pass": 1, "rx_xdp_drop": 2, "rx_xdp_tx": 1}
        want = to_jsonable(fec.expected(scenario))
        for key in ("wire", "ethtool"):
            assert got[key] == want[key], key
        assert [(p["verdict"], p["ops"]) for p in got["packets"]] == [
            (p["verdict"], p["ops"]) for p in want["packets"]]
    finally:
        target.close()  # type: ignore[attr-defined]
    assert not guest.running_qemus(run_dir)
    assert not run_dir.exists()
    assert ns is not None and not Path("/run/netns", ns).exists()


@pytest.mark.rule("FEC-RX-001")
def test_a_failed_run_is_a_target_error_and_leaves_nothing() -> None:
    """QEMU dies under a scenario: the run is a target fault, not a hang or a pass, and
    closing the target leaves no QEMU, run directory or namespace behind."""
    from conformance.components import fec
    from conformance.live.qemu_fec import guest
    from conformance.scenario import Scenario
    from conformance.targets.base import TargetError

    target = _target("sabrelite")
    g = target.guest  # type: ignore[attr-defined]
    run_dir, ns = g.dir, g.ns
    try:
        assert g.proc is not None
        os.kill(g.proc.pid, signal.SIGKILL)
        scenario = Scenario(component="fec", config=dict(fec.IMX6Q), frames=(_udp_frame(8),))
        with pytest.raises(TargetError, match="QEMU exited"):
            target.run(scenario)  # type: ignore[attr-defined]
    finally:
        target.close()  # type: ignore[attr-defined]
    assert not guest.running_qemus(run_dir)
    assert not run_dir.exists()
    assert ns is not None and not Path("/run/netns", ns).exists()


@pytest.mark.rule("FEC-RX-017", "XDP-BUFF-001", "XDP-ADJ-002", "XDP-ADJ-006")
def test_the_real_driver_has_32_bit_arm_buffer_geometry() -> None:
    """Debian's armhf kernel reserves 256 bytes of shared info and 32 of xdp_frame: the
    real driver lets a program grow the tail and the head to exactly those bounds (frames
    0 and 2) and refuses one byte more (frames 1 and 3), where an arm64 layout (320, 40)
    would have refused frame 0's growth.  The reference with ``arch`` armhf agrees."""
    from conformance.components import fec
    from conformance.scenario import Scenario, to_jsonable

    frame = _udp_frame(40)
    start = 256 + 2  # headroom and the RACC pad
    programs = {}
    for i, (reserved, xdp_frame, past) in enumerate([(256, 32, 0), (256, 32, 1),
                                                     (320, 40, 0), (320, 40, 1)]):
        programs[i] = ({"op": "adjust_tail", "delta": 4096 - reserved - start - len(frame) + past},
                       {"op": "adjust_head", "delta": -(start - xdp_frame) - past},
                       {"op": "return", "action": 1})
    scenario = Scenario(component="fec", config=dict(fec.IMX6Q), frames=(frame,) * 4,
                        program=({"op": "return", "action": 2},), per_packet_programs=programs)
    target = _target("sabrelite")
    try:
        got = to_jsonable(target.run(scenario))  # type: ignore[attr-defined]
    finally:
        target.close()  # type: ignore[attr-defined]
    rcs = [[op["rc"] for op in p["ops"]] for p in got["packets"]]
    assert rcs == [[0, 0], [-22, -22], [0, 0], [0, 0]]
    want = to_jsonable(fec.expected(scenario))
    assert rcs == [[op["rc"] for op in p["ops"]] for p in want["packets"]]


@pytest.mark.rule("FEC-DEV-003", "FEC-RX-004")
def test_the_shift16_pad_counts_toward_the_frame_limit() -> None:
    """On the RACC board a 1979-byte frame (1985 bytes with FCS and pad) is already cut to
    1984 and flagged LG: the pad counts toward FTRL/MAX_FL.  1977 and 1978 bytes pass."""
    from conformance.components import fec
    from conformance.scenario import Scenario, to_jsonable

    eth = bytes.fromhex("020000000001" "020000000003" "88b5")
    frames = tuple(eth + bytes(n - len(eth)) for n in (1977, 1978, 1979, 1980, 1982))
    scenario = Scenario(component="fec", config=dict(fec.IMX6Q), frames=frames,
                        program=({"op": "return", "action": 1},))
    target = _target("sabrelite")
    try:
        got = to_jsonable(target.run(scenario))  # type: ignore[attr-defined]
    finally:
        target.close()  # type: ignore[attr-defined]
    assert [p["verdict"] for p in got["packets"]] == ["XDP_DROP", "XDP_DROP", None, None, None]
    assert got["counters"]["rx_length_errors"] == 3
    # The board's kernel (6.12.y: MAX_FL is FTRL's 1984 there, FEC-DEV-003's gate), not
    # the default, whose MAX_FL of 1522 makes every one of these frames a length error.
    kernel = str(target.kernel_version).split("+")[0]  # type: ignore[attr-defined]
    assert kernel.startswith("6.12."), kernel
    want = to_jsonable(fec.expected(attrs.evolve(scenario, kernel=kernel)))
    assert [p["verdict"] for p in want["packets"]] == [p["verdict"] for p in got["packets"]]
    assert want["counters"]["rx_length_errors"] == 3


@pytest.mark.rule("FEC-RX-017", "FEC-RX-018", "FEC-XDP-001", "FEC-XDP-005", "FEC-STATS-004",
                  "XDP-BUFF-001", "XDP-ADJ-002")
def test_imx8mp_evk_runs_the_arm64_driver() -> None:
    """The i.MX8MP EVK board (QEMU >= 10; skipped where none can be had): Debian's arm64
    kernel binds fec to ``fsl,imx8mp-fec``.  Its buffer geometry is arm64's (320 bytes of
    shared info, 40 of xdp_frame: frame 0 grows to exactly those bounds, frame 1 one byte
    past is refused); the metadata kfuncs, loaded bound to eth0, each return -EOPNOTSUPP
    and write nothing (fec has no xdp_metadata_ops); XDP_TX comes back on the wire; the
    three RX queues' pools add up in ethtool (3 x 252 fast allocations at open).  The
    reference with the board's config agrees.  After close nothing is left."""
    from conformance.components import fec
    from conformance.live.qemu_fec import guest
    from conformance.scenario import Scenario, to_jsonable

    frame = _udp_frame(40)
    start = 256 + 2  # headroom and the RACC pad
    programs: dict[int, tuple[dict[str, object], ...]] = {}
    for i, past in enumerate((0, 1)):
        programs[i] = ({"op": "adjust_tail", "delta": 4096 - 320 - start - len(frame) + past},
                       {"op": "adjust_head", "delta": -(start - 40) - past},
                       {"op": "return", "action": 1})
    programs[2] = ({"op": "kfunc", "name": "rx_timestamp"}, {"op": "kfunc", "name": "rx_hash"},
                   {"op": "kfunc", "name": "rx_vlan_tag"}, {"op": "return", "action": 2})
    programs[3] = ({"op": "write", "offset": 0, "data": "0a0b0c0d0e0f"},
                   {"op": "return", "action": 3})
    scenario = Scenario(component="fec", config=dict(fec.IMX8MP), frames=(frame,) * 4,
                        program=({"op": "return", "action": 2},), per_packet_programs=programs)
    target = _target("imx8mp-evk")
    g = target.guest  # type: ignore[attr-defined]
    run_dir, ns = g.dir, g.ns
    try:
        info = g.control(guest.INFO)
        assert any(line.startswith("RXO-INFO compatible fsl,imx8mp-fec") for line in info)
        assert any(line.startswith("RXO-INFO kernel ") and line.endswith("-arm64")
                   for line in info)
        got = to_jsonable(target.run(scenario))  # type: ignore[attr-defined]
    finally:
        target.close()  # type: ignore[attr-defined]
    assert not guest.running_qemus(run_dir)
    assert not run_dir.exists()
    assert ns is not None and not Path("/run/netns", ns).exists()
    ops = [p["ops"] for p in got["packets"]]
    assert [[op["rc"] for op in o] for o in ops[:2]] == [[0, 0], [-22, -22]]
    assert [op["rc"] for op in ops[2]] == [-95, -95, -95]
    assert all(v is None for op in ops[2] for k, v in op.items() if k not in ("op", "name", "rc"))
    assert got["wire"] == [(bytes.fromhex("0a0b0c0d0e0f") + frame[6:]).hex()]
    assert got["ethtool"]["rx_pp_alloc_fast"] >= 3 * 252
    want = to_jsonable(fec.expected(scenario))
    for key in ("wire", "ethtool"):
        assert got[key] == want[key], key
    assert [(p["verdict"], p["ops"]) for p in got["packets"]] == [
        (p["verdict"], p["ops"]) for p in want["packets"]]


@pytest.mark.rule("FEC-XDP-005", "FEC-RX-005")
@pytest.mark.parametrize(("spec", "parsed"), [
    ("qemu-fec", ("", "")),
    ("qemu-fec:imx8mp-evk", ("imx8mp-evk", "")),
    ("qemu-fec:imx8mp-evk@7.3.4", ("imx8mp-evk", "7.3.4")),
    ("qemu-fec:sabrelite@6.12.117", ("sabrelite", "6.12.117")),
])
def test_a_board_names_its_kernel_version(spec: str, parsed: tuple[str, str]) -> None:
    """``qemu-fec:BOARD@VERSION`` boots Debian's kernel of that version, so a fec gate
    (FEC-XDP-005 at v7.0, FEC-RX-005) is seen on the side the board's current kernel is
    not on."""
    from conformance.targets.base import parse_target_spec

    got = parse_target_spec(spec)
    assert (got.kind, got.argument, got.version) == ("qemu-fec", *parsed)


@pytest.mark.rule("KVER-002")
@pytest.mark.parametrize(("spec", "message"), [
    ("qemu-fec:imx8mp-evk@7.3", "not a kernel version"),
    ("qemu-fec:imx8mp-evk@7.3.4+deb13-arm64", "not a kernel version"),
    ("qemu-fec:imx8mp-evk@6.1.150", "6.1 is not a version the model describes"),
])
def test_a_board_version_that_does_not_parse_is_one_line(spec: str, message: str) -> None:
    from conformance.targets.base import TargetSpecError, parse_target_spec

    with pytest.raises(TargetSpecError, match=message) as info:
        parse_target_spec(spec)
    assert "\n" not in str(info.value)


@pytest.mark.rule("FEC-RX-001")
def test_a_split_kernel_keeps_vmlinuz_beside_its_modules(tmp_path: Path) -> None:
    """7.x's linux-binary-* has ``usr/lib/modules/VERSION/vmlinuz``, no ``/boot``."""
    from conformance.live.qemu_fec import image

    k = image.Kernel("7.3.4+deb13-arm64", tmp_path, image.FLAVOURS["arm64"])
    k.modules.mkdir(parents=True)
    assert k.vmlinuz == k.modules / "vmlinuz"
    (k.kern / "boot").mkdir()
    (k.kern / "boot" / "vmlinuz-7.3.4+deb13-arm64").write_bytes(b"")
    assert k.vmlinuz == k.kern / "boot" / "vmlinuz-7.3.4+deb13-arm64"

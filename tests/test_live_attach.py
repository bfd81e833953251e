"""The XDP attach order of KFUNC-ATTACH-004 / -005 against the running kernel.

Gate KFUNC-ATTACH-004 (ad27ed7d2309) moves the checks on the new program from
``dev_xdp_attach()`` (before the ``ndo_bpf`` lookup) into ``dev_xdp_install()`` (after
it).  Read in Debian's trees: in 6.12.118 and 7.3.4 ``dev_xdp_attach()`` refuses a
native attach to a driver without ``ndo_bpf`` with -EOPNOTSUPP and only then calls
``dev_xdp_install()``, whose first step is the program checks (6.12.118 carries that
block twice, the fix applied in two stable releases; the first copy decides).  The
order shows only when both refusals apply, so each test attaches, in native mode
(``XDP_FLAGS_DRV_MODE``, netlink through ``bpf_xdp_attach``), a program the program
checks refuse to the loopback device, whose ops have no ``ndo_bpf`` (``loopback_ops``
in ``drivers/net/loopback.c`` of both trees).  Before the gate the program check's
-EINVAL comes first; after it, -EOPNOTSUPP.

Everything happens in one namespace of this process (``lo`` is its own loopback, the
veth pair a bound program binds to lives there too), deleted on every exit path.

Skipped, with the reason, unless root with clang, bpftool, libbpf and kernel BTF.
"""

from __future__ import annotations

import errno
import platform
import socket
from collections.abc import Iterator

import attrs
import pytest

from conformance.live import env
from reference.kernel import gate, parse_kernel
from reference.kfuncs import (
    BPF_F_XDP_DEV_BOUND_ONLY,
    BPF_XDP,
    BPF_XDP_CPUMAP,
    XDP_FLAGS_DRV_MODE,
    XDP_FLAGS_SKB_MODE,
    BpfDevices,
    BpfProg,
    NetDevice,
)

REASON = env.missing()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")

if REASON is None:
    from conformance.live import cpumap as live
    from conformance.live import libbpf, netns

#: ``lo`` is ifindex 1 in every network namespace (``loopback_net_init`` registers it first).
LO_IFINDEX = 1


@attrs.define
class AttachWorld:
    """The namespace, the veth end a bound program binds to, and the loaded objects."""

    ns: str
    veth_ifindex: int
    objects: list[libbpf.BpfObject] = attrs.field(factory=list)

    def load(self, program: str, bind_ifindex: int = 0) -> int:
        """Load ``program`` of ``rxo_cpumap.bpf.o`` alone (bound to ``bind_ifindex``
        with ``BPF_F_XDP_DEV_BOUND_ONLY`` if given); its fd."""
        with netns.entered(self.ns):  # prog_ifindex names a device of this namespace
            obj = live.load_unusual(live.build(), program, bind_ifindex=bind_ifindex)
        self.objects.append(obj)
        return libbpf.check(obj._lib.bpf_program__fd(obj.program(program)), "fd")

    def attach(self, ifindex: int, fd: int, flags: int) -> int:
        """``bpf_xdp_attach`` (RTM_SETLINK with IFLA_XDP) in the namespace: 0 or -errno."""
        with netns.entered(self.ns):
            return int(libbpf.lib().bpf_xdp_attach(ifindex, fd, flags, None))


@pytest.fixture(scope="module")
def world() -> Iterator[AttachWorld]:
    ns = netns.create("x")
    objects: list[libbpf.BpfObject] = []
    try:
        netns.ip("link", "add", f"{ns}v", "type", "veth", "peer", "name", f"{ns}w",
                 netns=ns)
        with netns.entered(ns):
            w = AttachWorld(ns, socket.if_nametoindex(f"{ns}v"), objects)
            assert socket.if_indextoname(LO_IFINDEX) == "lo"
        yield w
    finally:
        for obj in objects:
            obj.close()
        netns.delete(ns)


def _model_rc(world: AttachWorld, prog: BpfProg, flags: int) -> int:
    """The model's errno for this kernel (KVER-001): lo without ndo_bpf, veth with it."""
    bpf = BpfDevices.for_kernel(parse_kernel(platform.release(), "uname -r"))
    lo = NetDevice(LO_IFINDEX, "lo", has_ndo_bpf=False)
    bpf.register_netdev(lo)
    bpf.register_netdev(NetDevice(world.veth_ifindex, "veth"))
    loaded = bpf.prog_load(prog).prog
    assert loaded is not None
    return bpf.dev_xdp_attach(lo, loaded, flags).rc


def _checks_in_install() -> bool:
    return gate(parse_kernel(platform.release(), "uname -r"), "KFUNC-ATTACH-004")


@pytest.mark.rule("KFUNC-ATTACH-004", "KFUNC-ATTACH-005")
@pytest.mark.parametrize(("program", "bound", "attach_type", "prog_check"), [
    # expected_attach_type BPF_XDP_CPUMAP: "can not be attached to a device"
    ("rxo_cm_verdict", False, BPF_XDP_CPUMAP, -errno.EINVAL),
    # bound-only to the veth end, attached to lo: "Program bound to different device"
    ("rxo_cm_redir", True, BPF_XDP, -errno.EINVAL),
])
def test_native_attach_to_lo_shows_the_check_order(world: AttachWorld, program: str,
                                                   bound: bool, attach_type: int,
                                                   prog_check: int) -> None:
    """A refused program, native mode, a device without ndo_bpf: the kernel's errno is
    the model's for ``uname -r``, and it names the side of gate KFUNC-ATTACH-004 the
    kernel is on (-EINVAL of the program check before ad27ed7d2309, -EOPNOTSUPP of the
    ndo_bpf check after; 6.12.118 and 7.3.4 read as after)."""
    bind = world.veth_ifindex if bound else 0
    fd = world.load(program, bind_ifindex=bind)
    live_rc = world.attach(LO_IFINDEX, fd, XDP_FLAGS_DRV_MODE)
    prog = BpfProg(expected_attach_type=attach_type, prog_ifindex=bind,
                   prog_flags=BPF_F_XDP_DEV_BOUND_ONLY if bound else 0)
    assert live_rc == _model_rc(world, prog, XDP_FLAGS_DRV_MODE)
    side = "after" if _checks_in_install() else "before"
    expected = -errno.EOPNOTSUPP if side == "after" else prog_check
    assert live_rc == expected, (
        f"{platform.release()} is {side} ad27ed7d2309 by the gate, so -{errno.errorcode[-expected]}"
        f" was expected; the kernel said -{errno.errorcode.get(-live_rc, str(live_rc))}")


@pytest.mark.rule("KFUNC-ATTACH-005")
def test_lo_has_no_ndo_bpf(world: AttachWorld) -> None:
    """The control for the device: a program every check accepts (plain BPF_XDP) is
    refused in native mode on lo with -EOPNOTSUPP on both sides of the gate."""
    fd = world.load("rxo_cm_redir")
    live_rc = world.attach(LO_IFINDEX, fd, XDP_FLAGS_DRV_MODE)
    assert live_rc == _model_rc(world, BpfProg(expected_attach_type=BPF_XDP),
                                XDP_FLAGS_DRV_MODE) == -errno.EOPNOTSUPP


@pytest.mark.rule("KFUNC-ATTACH-004")
def test_generic_mode_runs_the_program_checks_on_both_sides(world: AttachWorld) -> None:
    """The control for the program: generic mode always has its install hook, so the
    BPF_XDP_CPUMAP program is refused with -EINVAL on lo whichever function checks it."""
    fd = world.load("rxo_cm_verdict")
    live_rc = world.attach(LO_IFINDEX, fd, XDP_FLAGS_SKB_MODE)
    assert live_rc == _model_rc(world, BpfProg(expected_attach_type=BPF_XDP_CPUMAP),
                                XDP_FLAGS_SKB_MODE) == -errno.EINVAL

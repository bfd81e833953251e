"""Raw io_uring through ctypes: a ring, ``IORING_REGISTER_ZCRX_IFQ``, anonymous memory.

The zcrx live target needs three system calls and no liburing: ``io_uring_setup`` (a ring
with the flags a scenario names; ``IORING_SETUP_SINGLE_ISSUER`` is added whenever
``IORING_SETUP_DEFER_TASKRUN`` is asked for, because setup refuses the latter alone),
``io_uring_register`` with ``IORING_REGISTER_ZCRX_IFQ`` and one argument, and ``close``.
The registration's three structs are packed by :mod:`reference.zcrx.uapi` into ctypes
buffers whose addresses go into ``area_ptr`` and ``region_ptr``; after the call the same
buffers are unpacked again, so what the kernel wrote back is read through the same
layouts the model uses (ZCRX-UAPI-004..006).

A ring created with ``SINGLE_ISSUER`` belongs to the thread that created it, and
``capable()`` and the device lookup use the calling thread's credentials and network
namespace: :func:`register_in_thread` runs setup, register and close in one fresh
thread, optionally inside a namespace and without ``CAP_NET_ADMIN`` (capabilities are
per thread, so the rest of the process keeps them).  Every fd and mapping is released
before that thread ends, on every path; nothing outlives the call.
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import platform
import threading
from collections.abc import Callable
from typing import Any

import attrs

from reference.zcrx.uapi import (
    IORING_SETUP_CQE32,
    IORING_SETUP_DEFER_TASKRUN,
    IoUringRegionDesc,
    IoUringZcrxAreaReg,
    IoUringZcrxIfqReg,
)

#: ``include/uapi/asm-generic/unistd.h`` (x86-64 uses the same numbers for io_uring).
SYS_IO_URING_SETUP = 425
SYS_IO_URING_REGISTER = 427
SYS_CAPGET, SYS_CAPSET = ({"x86_64": (125, 126)}.get(platform.machine(), (90, 91)))
#: ``include/uapi/linux/io_uring.h``.
IORING_REGISTER_ZCRX_IFQ = 32
IORING_SETUP_SINGLE_ISSUER = 1 << 12
#: ``struct io_uring_params`` is 120 bytes; ``flags`` is the third u32.
IO_URING_PARAMS_SIZE = 120
_PARAMS_FLAGS_OFFSET = 8
#: ``include/uapi/linux/capability.h``.
CAP_NET_ADMIN = 12
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
MAP_FIXED_NOREPLACE = 0x100000
PAGE_SIZE = mmap.PAGESIZE

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_MAP_FAILED = ctypes.c_void_p(-1).value


class IoUringError(OSError):
    """A system call the harness needs failed (not a registration's errno: those are
    results)."""


def _syscall(nr: int, *args: Any) -> int:
    rc = int(_libc.syscall(ctypes.c_long(nr), *args))
    return -ctypes.get_errno() if rc < 0 else rc


def io_uring_setup(flags: int, entries: int = 8) -> int:
    """A ring with ``flags`` (plus SINGLE_ISSUER with DEFER_TASKRUN); the fd, or -errno."""
    if flags & IORING_SETUP_DEFER_TASKRUN:
        flags |= IORING_SETUP_SINGLE_ISSUER
    params = ctypes.create_string_buffer(IO_URING_PARAMS_SIZE)
    ctypes.c_uint32.from_buffer(params, _PARAMS_FLAGS_OFFSET).value = flags
    return _syscall(SYS_IO_URING_SETUP, ctypes.c_uint(entries), params)


def io_uring_register(fd: int, opcode: int, arg: int, nr_args: int) -> int:
    """``io_uring_register``: its result, or -errno."""
    return _syscall(SYS_IO_URING_REGISTER, ctypes.c_int(fd), ctypes.c_uint(opcode),
                    ctypes.c_void_p(arg), ctypes.c_uint(nr_args))


class Mapping:
    """Anonymous private memory, unmapped by :meth:`close` (idempotent)."""

    def __init__(self, length: int, at: int = 0) -> None:
        self.length = (max(length, 1) + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1)
        flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | (MAP_FIXED_NOREPLACE if at else 0)
        addr = _libc.mmap(ctypes.c_void_p(at or None), self.length,
                          mmap.PROT_READ | mmap.PROT_WRITE, flags, -1, 0)
        if addr in (None, _MAP_FAILED) or (at and addr != at):
            err = ctypes.get_errno()
            if addr not in (None, _MAP_FAILED):
                _libc.munmap(ctypes.c_void_p(addr), self.length)
            raise IoUringError(err or errno.EEXIST, f"mmap {self.length} bytes at {at:#x}")
        self.addr: int = addr

    def close(self) -> None:
        if self.addr:
            _libc.munmap(ctypes.c_void_p(self.addr), self.length)
            self.addr = 0


def map_at(addr: int, length: int) -> Mapping | None:
    """Memory that makes ``[addr, addr + length)`` readable, placed where a scenario
    says (``MAP_FIXED_NOREPLACE`` at the page below ``addr``); ``None`` when that range
    cannot be had (outside the user address space, or taken): the kernel then meets
    unmapped memory there, which is what such an address means anyway."""
    if not addr or length <= 0 or addr + length > 1 << 47:
        return None
    base = addr & ~(PAGE_SIZE - 1)
    try:
        return Mapping(addr + length - base, at=base)
    except IoUringError:
        return None


@attrs.frozen
class ZcrxCall:
    """One ``IORING_REGISTER_ZCRX_IFQ`` as issued: the ring's setup flags, the three
    structs, and whether the caller keeps ``CAP_NET_ADMIN``."""

    setup_flags: int
    reg: IoUringZcrxIfqReg
    area: IoUringZcrxAreaReg
    region: IoUringRegionDesc
    cap_net_admin: bool = True


@attrs.frozen
class ZcrxOutcome:
    """What the kernel answered: ``setup_rc`` (the ring fd was refused: -errno, else 0),
    ``rc`` (the registration's result) and the three structs as read back afterwards."""

    setup_rc: int
    rc: int
    reg: IoUringZcrxIfqReg
    area: IoUringZcrxAreaReg
    region: IoUringRegionDesc


def _drop_cap_net_admin() -> None:
    """Clear CAP_NET_ADMIN from this thread's effective set (capset acts per thread)."""
    header = (ctypes.c_uint32 * 2)(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    if _syscall(SYS_CAPGET, header, data) < 0:
        raise IoUringError(ctypes.get_errno(), "capget")
    data[0] &= ~(1 << CAP_NET_ADMIN) & 0xFFFF_FFFF  # effective, low word
    if _syscall(SYS_CAPSET, header, data) < 0:
        raise IoUringError(ctypes.get_errno(), "capset")


def register_zcrx(call: ZcrxCall) -> ZcrxOutcome:
    """Set up a ring, register, read the structs back, close the ring (this thread)."""
    area_buf = ctypes.create_string_buffer(call.area.pack(), IoUringZcrxAreaReg.SIZE)
    region_buf = ctypes.create_string_buffer(call.region.pack(), IoUringRegionDesc.SIZE)
    reg = attrs.evolve(call.reg, area_ptr=ctypes.addressof(area_buf),
                       region_ptr=ctypes.addressof(region_buf))
    reg_buf = ctypes.create_string_buffer(reg.pack(), IoUringZcrxIfqReg.SIZE)
    fd = io_uring_setup(call.setup_flags)
    if fd < 0:
        return ZcrxOutcome(fd, 0, call.reg, call.area, call.region)
    try:
        if not call.cap_net_admin:
            _drop_cap_net_admin()
        rc = io_uring_register(fd, IORING_REGISTER_ZCRX_IFQ, ctypes.addressof(reg_buf), 1)
    finally:
        os.close(fd)
    back = IoUringZcrxIfqReg.unpack(reg_buf.raw)
    # The pointers are the harness's, not the scenario's: give back the caller's.
    back = attrs.evolve(back, area_ptr=call.reg.area_ptr, region_ptr=call.reg.region_ptr)
    return ZcrxOutcome(0, rc, back, IoUringZcrxAreaReg.unpack(area_buf.raw),
                       IoUringRegionDesc.unpack(region_buf.raw))


def in_thread(fn: Callable[[], Any], netns_name: str | None = None) -> Any:
    """Run ``fn`` in a fresh thread (inside ``netns_name`` if given) and return its result
    or raise its exception.  The thread's namespace and capabilities die with it."""
    box: dict[str, Any] = {}

    def body() -> None:
        try:
            if netns_name is None:
                box["value"] = fn()
                return
            from conformance.live import netns

            target = os.open(os.path.join(netns.NETNS_DIR, netns_name), os.O_RDONLY)
            try:
                if _libc.setns(target, netns.CLONE_NEWNET):
                    raise IoUringError(ctypes.get_errno(), f"setns {netns_name}")
            finally:
                os.close(target)
            box["value"] = fn()
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=body, name="rxo-zcrx", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box.get("value")


def register_in_thread(call: ZcrxCall, netns_name: str | None = None) -> ZcrxOutcome:
    """:func:`register_zcrx` in its own thread (see the module docstring)."""
    out = in_thread(lambda: register_zcrx(call), netns_name)
    assert isinstance(out, ZcrxOutcome)
    return out


def unavailable() -> str | None:
    """Why zcrx registration cannot be tried here (None: it can): root and io_uring
    enabled.  A kernel that does not know ``IORING_REGISTER_ZCRX_IFQ`` (before v6.15: the
    syscall answers -EINVAL) can be tried: that -EINVAL is ZCRX-REG-001's old side.  One
    built without zcrx (-EOPNOTSUPP) cannot: the model has no such configuration."""
    if os.geteuid() != 0:
        return "zcrx live needs root (CAP_NET_ADMIN, network namespaces)"
    try:
        with open("/proc/sys/kernel/io_uring_disabled") as f:
            if f.read().strip() not in ("0", ""):
                return "io_uring is disabled (/proc/sys/kernel/io_uring_disabled is not 0)"
    except FileNotFoundError:
        pass
    fd = io_uring_setup(0)
    if fd < 0:
        return f"io_uring_setup fails: {errno.errorcode.get(-fd, fd)} (no io_uring)"
    os.close(fd)
    rc = in_thread(_probe_opcode)
    if rc in (-errno.EFAULT, -errno.EINVAL):
        return None
    if rc == -errno.EOPNOTSUPP:
        return "the kernel has io_uring but not zcrx (CONFIG_IO_URING_ZCRX is not set)"
    return (f"the kernel answers a zcrx registration probe with -"
            f"{errno.errorcode.get(-rc, str(rc))} ({rc}), not -EFAULT (zcrx), -EINVAL (no "
            "such opcode) or -EOPNOTSUPP (built without zcrx)")


def _probe_opcode() -> int:
    """Register with an argument pointer to nothing, on a ring zcrx accepts: a kernel with
    zcrx fails copying the argument (-EFAULT), a kernel built without it answers
    -EOPNOTSUPP, one that predates the opcode -EINVAL."""
    fd = io_uring_setup(IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_CQE32)
    if fd < 0:
        return fd
    try:
        return io_uring_register(fd, IORING_REGISTER_ZCRX_IFQ, PAGE_SIZE, 1)
    finally:
        os.close(fd)

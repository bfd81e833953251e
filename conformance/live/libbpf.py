"""The handful of libbpf calls the probe needs, through ctypes on the system libbpf.so.1."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import Callable

BPF_F_XDP_HAS_FRAGS = 1 << 5
BPF_F_XDP_DEV_BOUND_ONLY = 1 << 6
XDP_FLAGS_DRV_MODE = 1 << 2
BPF_ANY = 0

RingCallback = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)


def _load() -> ctypes.CDLL:
    name = ctypes.util.find_library("bpf") or "libbpf.so.1"
    lib = ctypes.CDLL(name, use_errno=True)
    vp, cp, i, u32 = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint32
    sigs: dict[str, tuple[object, list[object]]] = {
        "bpf_object__open_file": (vp, [cp, vp]),
        "bpf_object__find_program_by_name": (vp, [vp, cp]),
        "bpf_program__set_ifindex": (None, [vp, u32]),
        "bpf_program__set_flags": (i, [vp, u32]),
        "bpf_program__set_autoload": (i, [vp, ctypes.c_bool]),
        "bpf_object__load": (i, [vp]),
        "bpf_object__close": (None, [vp]),
        "bpf_program__fd": (i, [vp]),
        "bpf_object__find_map_fd_by_name": (i, [vp, cp]),
        "bpf_xdp_attach": (i, [i, i, u32, vp]),
        "bpf_xdp_detach": (i, [i, u32, vp]),
        "bpf_map_update_elem": (i, [i, vp, vp, ctypes.c_uint64]),
        "ring_buffer__new": (vp, [i, RingCallback, vp, vp]),
        "ring_buffer__consume": (i, [vp]),
        "ring_buffer__poll": (i, [vp, i]),
        "ring_buffer__free": (None, [vp]),
        "bpf_tc_hook_create": (i, [vp]),
        "bpf_tc_attach": (i, [vp, vp]),
        "bpf_program__set_log_buf": (i, [vp, vp, ctypes.c_size_t]),
        "libbpf_set_print": (vp, [vp]),
    }
    for fname, (restype, argtypes) in sigs.items():
        fn = getattr(lib, fname)
        fn.restype = restype
        fn.argtypes = argtypes
    # libbpf's own messages go to stderr by default; a refused load is reported through
    # BpfError with the verifier's words instead (LOG_SIZE below), so they are dropped.
    lib.libbpf_set_print(ctypes.cast(_QUIET, ctypes.c_void_p))
    return lib


#: libbpf's print callback (level, format, va_list): says nothing.
_PrintFn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
_QUIET = _PrintFn(lambda _level, _fmt, _args: 0)
#: The verifier log kept for each program loaded.  libbpf asks the kernel for it only
#: when a load fails (it retries with log level 1 into this buffer).
LOG_SIZE = 1 << 20


_LIB: ctypes.CDLL | None = None


def lib() -> ctypes.CDLL:
    global _LIB
    if _LIB is None:
        _LIB = _load()
    return _LIB


class BpfError(OSError):
    """A libbpf call failed; ``verifier_line`` is the verifier's last word on a refused
    program (empty when the kernel gave no log)."""

    verifier_line: str = ""


def verifier_line(log: bytes) -> str:
    """The line of a verifier log that says why: the last one before the statistics the
    verifier appends (``processed N insns``, ``verification time``, stack depths)."""
    lines = [line.strip() for line in log.decode(errors="replace").splitlines()]
    for line in reversed(lines):
        if line and not line.startswith(("processed ", "verification time", "stack depth",
                                         "-- END", "-- BEGIN")):
            return line
    return ""


def check(rc: int, what: str) -> int:
    if rc < 0:
        err = -rc if rc < -1 else ctypes.get_errno()
        raise BpfError(err, f"{what}: {os.strerror(err)}")
    return rc


class BpfObject:
    """One opened object file; ``load`` loads the named programs (others not autoloaded),
    binding ``bound`` to ``ifindex`` (BPF_F_XDP_DEV_BOUND_ONLY + prog_ifindex)."""

    def __init__(self, path: str) -> None:
        self._lib = lib()
        self.ptr = self._lib.bpf_object__open_file(path.encode(), None)
        if not self.ptr:
            raise BpfError(ctypes.get_errno(), f"bpf_object__open_file({path})")

    def program(self, name: str) -> int:
        prog = self._lib.bpf_object__find_program_by_name(self.ptr, name.encode())
        if not prog:
            raise BpfError(0, f"no program {name}")
        return int(prog)

    def load_all(self, names: tuple[str, ...], others: tuple[str, ...]) -> dict[str, int]:
        """Load ``names`` unbound (``others`` not autoloaded); their fds by name."""
        for name in others:
            self._lib.bpf_program__set_autoload(self.program(name), False)
        self._object_load(names)
        return {name: check(self._lib.bpf_program__fd(self.program(name)), "fd")
                for name in names}

    def load(self, keep: str, *, others: tuple[str, ...] = (), bind_ifindex: int = 0,
             flags: int = 0) -> int:
        """Load ``keep`` (``others`` not autoloaded), bound to ``bind_ifindex`` if given,
        with the extra ``prog_flags`` ``flags`` (``BPF_F_XDP_HAS_FRAGS``)."""
        for name in others:
            self._lib.bpf_program__set_autoload(self.program(name), False)
        prog = self.program(keep)
        if bind_ifindex:
            self._lib.bpf_program__set_ifindex(prog, bind_ifindex)
            flags |= BPF_F_XDP_DEV_BOUND_ONLY
        if flags:
            check(self._lib.bpf_program__set_flags(prog, flags), "set_flags")
        self._object_load((keep,))
        return check(self._lib.bpf_program__fd(prog), "bpf_program__fd")

    def _object_load(self, names: tuple[str, ...]) -> None:
        """``bpf_object__load``; a refusal raises :class:`BpfError` naming the program and
        quoting the verifier's last line."""
        logs = {name: ctypes.create_string_buffer(LOG_SIZE) for name in names}
        for name, buf in logs.items():
            self._lib.bpf_program__set_log_buf(self.program(name), buf, LOG_SIZE)
        rc = self._lib.bpf_object__load(self.ptr)
        if rc >= 0:
            return
        err = -rc if rc < -1 else ctypes.get_errno()
        for name, buf in logs.items():
            line = verifier_line(buf.value)
            if line:
                exc = BpfError(err, f"the kernel refused program {name}: {line!r} "
                                    f"(bpf_object__load: {os.strerror(err)})")
                exc.verifier_line = line
                raise exc
        raise BpfError(err, f"bpf_object__load: {os.strerror(err)}")

    def map_fd(self, name: str) -> int:
        return check(self._lib.bpf_object__find_map_fd_by_name(self.ptr, name.encode()),
                     f"map {name}")

    def close(self) -> None:
        if self.ptr:
            self._lib.bpf_object__close(self.ptr)
            self.ptr = None


def xdp_attach(ifindex: int, fd: int) -> None:
    check(lib().bpf_xdp_attach(ifindex, fd, XDP_FLAGS_DRV_MODE, None), "bpf_xdp_attach")


def xdp_detach(ifindex: int) -> None:
    lib().bpf_xdp_detach(ifindex, XDP_FLAGS_DRV_MODE, None)


def map_update(fd: int, key: bytes, value: bytes) -> None:
    kbuf = ctypes.create_string_buffer(key, len(key))
    vbuf = ctypes.create_string_buffer(value, len(value))
    check(lib().bpf_map_update_elem(fd, kbuf, vbuf, BPF_ANY), "bpf_map_update_elem")


class RingBuffer:
    """A BPF ring buffer whose records are handed, as bytes, to ``sink``."""

    def __init__(self, map_fd: int, sink: Callable[[bytes], None]) -> None:
        def _cb(_ctx: int | None, data: int | None, size: int) -> int:
            sink(ctypes.string_at(data or 0, size))
            return 0

        self._cb = RingCallback(_cb)  # keep a reference: libbpf calls it later
        self.ptr = lib().ring_buffer__new(map_fd, self._cb, None, None)
        if not self.ptr:
            raise BpfError(ctypes.get_errno(), "ring_buffer__new")

    def poll(self, timeout_ms: int) -> int:
        return int(lib().ring_buffer__poll(self.ptr, timeout_ms))

    def consume(self) -> int:
        return int(lib().ring_buffer__consume(self.ptr))

    def close(self) -> None:
        if self.ptr:
            lib().ring_buffer__free(self.ptr)
            self.ptr = None


BPF_TC_EGRESS = 1 << 1


class _TcHook(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t), ("ifindex", ctypes.c_int),
                ("attach_point", ctypes.c_int), ("parent", ctypes.c_uint32)]


class _TcOpts(ctypes.Structure):
    _fields_ = [("sz", ctypes.c_size_t), ("prog_fd", ctypes.c_int), ("flags", ctypes.c_uint32),
                ("prog_id", ctypes.c_uint32), ("handle", ctypes.c_uint32),
                ("priority", ctypes.c_uint32)]


def tc_attach_egress(ifindex: int, fd: int) -> None:
    """A clsact qdisc on ``ifindex`` and ``fd`` as a direct-action egress filter."""
    hook = _TcHook(ctypes.sizeof(_TcHook), ifindex, BPF_TC_EGRESS, 0)
    rc = lib().bpf_tc_hook_create(ctypes.byref(hook))
    if rc not in (0, -17):  # -EEXIST: the qdisc is there already
        check(rc, "bpf_tc_hook_create")
    opts = _TcOpts(ctypes.sizeof(_TcOpts), fd, 0, 0, 1, 1)
    check(lib().bpf_tc_attach(ctypes.byref(hook), ctypes.byref(opts)), "bpf_tc_attach")

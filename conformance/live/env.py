"""Can this machine run live targets?  One answer with the reason when not."""

from __future__ import annotations

import ctypes.util
import os
import shutil

BTF_PATH = "/sys/kernel/btf/vmlinux"


def missing() -> str | None:
    """None when root, clang, bpftool, ip, kernel BTF and libbpf are all there; else why not."""
    if os.geteuid() != 0:
        return "live targets need root (netns, veth, BPF)"
    for tool in ("clang", "bpftool", "ip"):
        if shutil.which(tool) is None:
            return f"live targets need {tool!r} on PATH (apt: clang, bpftool, iproute2)"
    if not os.path.exists(BTF_PATH):
        return f"live targets need kernel BTF ({BTF_PATH}, CONFIG_DEBUG_INFO_BTF)"
    if ctypes.util.find_library("bpf") is None and not os.path.exists(
        "/usr/lib/x86_64-linux-gnu/libbpf.so.1"
    ):
        return "live targets need libbpf.so.1 (apt: libbpf1)"
    if not os.path.exists("/usr/include/bpf/bpf_helpers.h"):
        return "live targets need libbpf headers (apt: libbpf-dev)"
    return None

"""Readable text for ``rx-oracle explain``: return codes by their kernel names, configs as
``key=value``, enum members by name (TRACE-001).

A student reads explain's output beside the kernel source, so what it prints looks like
what the kernel or its tools print: ``-ENODATA`` rather than ``-61``, ``XDP_PASS`` rather
than ``<XdpAction.XDP_PASS: 2>``, ``flags=0x40`` rather than ``{'flags': 64}``.  Every
component's ``explain`` formats through these helpers, so no Python repr reaches a reader
(tests/test_explain_all.py checks every component's output for one).
"""

from __future__ import annotations

import enum
import errno
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from conformance.observe import matches


def errno_name(rc: int) -> str:
    """The kernel's name of a negative errno, without the sign: ``EOPNOTSUPP`` rather than
    Python's preferred alias ``ENOTSUP`` (the same value on Linux)."""
    if rc == -errno.EOPNOTSUPP:
        return "EOPNOTSUPP"
    return _KERNEL_ERRNOS.get(-rc) or errno.errorcode.get(-rc, str(-rc))


#: Kernel-internal errnos (include/linux/errno.h) that user space never sees by name, so
#: Python's errno module does not know them; BPF helpers return them to programs.
_KERNEL_ERRNOS = {512: "ERESTARTSYS", 524: "ENOTSUPP"}


def rc_text(rc: int | None) -> str:
    """A return code as the kernel documents it: ``0``, or ``-ENODATA`` (its number after)."""
    if rc is None:
        return "none"
    if rc >= 0:
        return str(rc)
    return f"-{errno_name(rc)} ({rc})"


def value_text(value: Any, *, hex_: bool = False) -> str:
    """One value, readably: enum members by name, booleans and None as JSON spells them,
    bytes as hex, mappings as ``key=value`` in parentheses, sequences in brackets, attrs
    instances by their fields; ``hex_`` prints integers in hex."""
    if isinstance(value, enum.Enum):  # a config spelling ("little"), else the kernel's name
        return value.value if isinstance(value.value, str) else str(value.name)
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value:#x}" if hex_ else str(value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex() or "(empty)"
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return "(" + config_text(value) + ")"
    if attrs.has(type(value)):
        return "(" + config_text(attrs.asdict(value, recurse=False)) + ")"
    if isinstance(value, Iterable):
        return "[" + ", ".join(value_text(v, hex_=hex_) for v in value) + "]"
    return str(value)


def config_text(config: Mapping[str, Any], hex_keys: Iterable[str] = ()) -> str:
    """A config as ``key=value, …`` in its own order; keys in ``hex_keys`` print their
    integers in hex (flags, protocols, TCIs: what the kernel prints in hex)."""
    hexed = set(hex_keys)
    if not config:
        return "(defaults)"
    return ", ".join(f"{k}={value_text(v, hex_=k in hexed)}" for k, v in config.items())


def rss_type_name(rss_type: int) -> str:
    """An ``enum xdp_rss_hash_type`` value by its composed ``XDP_RSS_TYPE_*`` name
    (KFUNC-RSS-001), with the value in hex; undefined bits print as hex alone."""
    from reference.kfuncs import XDP_RSS_TYPES

    for name, value in XDP_RSS_TYPES.items():  # NONE before its alias L2
        if value == rss_type:
            return f"{name} ({rss_type:#x})"
    return f"{rss_type:#x}"


def vlan_tci_text(tci: int) -> str:
    """A TCI in hex with its three fields, as ``ip link``/tcpdump readers think of it."""
    return f"{tci:#06x} (PCP {tci >> 13}, DEI {(tci >> 12) & 1}, VID {tci & 0xFFF})"


def kfunc_result_text(name: str, record: Mapping[str, Any]) -> str:
    """One metadata kfunc call: its return code (KFUNC-API-002) and, on success, the
    values it wrote; on failure the outputs carry no promise (KFUNC-API-005), so only
    what the callee wrote anyway is shown."""
    rc = int(record["rc"])
    parts: list[str] = []
    if record.get("timestamp") is not None:
        parts.append(f"timestamp {record['timestamp']}")
    if record.get("hash") is not None:
        parts.append(f"hash {int(record['hash']):#010x}")
    if record.get("rss_type") is not None:
        parts.append(f"rss_type {rss_type_name(int(record['rss_type']))}")
    if record.get("vlan_proto") is not None:
        parts.append(f"vlan_proto {int(record['vlan_proto']):#06x}")
    if record.get("vlan_tci") is not None:
        parts.append(f"vlan_tci {vlan_tci_text(int(record['vlan_tci']))}")
    wrote = ", ".join(parts)
    if rc == 0:
        return f"{name} -> rc 0, {wrote}" if wrote else f"{name} -> rc 0"
    return f"{name} -> rc {rc_text(rc)}" + (f"; wrote anyway {wrote}" if wrote else "")


def xdp_action_text(action: int) -> str:
    """An ``enum xdp_action`` value by name with its number, ``XDP_PASS (2)``; a value
    outside the enum (which the driver treats as an abort, XDP-ACT-002) by its number."""
    from reference.xdp.actions import ACTION_NAMES

    name = ACTION_NAMES.get(action)
    return f"{name} ({action})" if name else f"{action} (no such XDP action)"


#: How a failure message names an observable field's value, by path glob (the syntax of
#: :func:`conformance.observe.matches`): the fields the observables schemas give errno
#: values (return codes ``rc``; fec's XDP_TX ``err``), XDP actions, RSS hash types.
#: The first matching glob wins; a field matching none prints as a plain value.
FIELD_TEXTS: tuple[tuple[str, Callable[[int], str]], ...] = (
    ("*.rc", rc_text),
    ("*.err", rc_text),
    ("*errno*", rc_text),
    ("*].action", xdp_action_text),
    ("*.rss_type", rss_type_name),
)


def field_text(path: str) -> Callable[[int], str] | None:
    """The formatter :data:`FIELD_TEXTS` names for the field at ``path``, if any."""
    return next((text for glob, text in FIELD_TEXTS if matches(path, (glob,))), None)

"""The netdev generic netlink family's ``page-pool-get`` dump, over a raw socket.

Works without ``CONFIG_PAGE_POOL_STATS`` (only ``page-pool-stats-get`` needs it).  A pool
is listed only if its driver gave it a netdev (``page_pool_params.netdev``); pools created
without one, as veth's are, are invisible to the family (``net/core/page_pool_user.c:
page_pool_list()``), so a live run cannot read veth's inflight pages this way
(CPUMAP-LIVE-001).  The dump covers the calling thread's network namespace.
"""

from __future__ import annotations

import os
import socket
import struct
from typing import Any

NETLINK_GENERIC = 16
GENL_ID_CTRL = 0x10
CTRL_CMD_GETFAMILY = 3
CTRL_ATTR_FAMILY_ID = 1
CTRL_ATTR_FAMILY_NAME = 2
NLM_F_REQUEST = 0x1
NLM_F_DUMP = 0x300
NLMSG_ERROR = 2
NLMSG_DONE = 3
#: include/uapi/linux/netdev.h
NETDEV_CMD_PAGE_POOL_GET = 5
PAGE_POOL_ATTRS = {1: "id", 2: "ifindex", 3: "napi-id", 4: "inflight", 5: "inflight-mem",
                   6: "detach-time"}
_NLMSG = struct.Struct("=IHHII")
_GENL = struct.Struct("=BBH")
_NLA = struct.Struct("=HH")


def _attr(kind: int, payload: bytes) -> bytes:
    raw = _NLA.pack(_NLA.size + len(payload), kind) + payload
    return raw + bytes(-len(raw) % 4)


def _attrs(data: bytes) -> dict[int, bytes]:
    out = {}
    off = 0
    while off + _NLA.size <= len(data):
        length, kind = _NLA.unpack_from(data, off)
        if length < _NLA.size:
            break
        out[kind & 0x3FFF] = data[off + _NLA.size:off + length]
        off += (length + 3) & ~3
    return out


def _request(sock: socket.socket, family: int, cmd: int, flags: int, body: bytes = b""
             ) -> list[bytes]:
    """Send one request; the genetlink payloads of every reply until done."""
    payload = _GENL.pack(cmd, 1, 0) + body
    sock.send(_NLMSG.pack(_NLMSG.size + len(payload), family, NLM_F_REQUEST | flags, 1, 0)
              + payload)
    replies: list[bytes] = []
    while True:
        data = sock.recv(1 << 16)
        off = 0
        while off + _NLMSG.size <= len(data):
            length, kind, _, _, _ = _NLMSG.unpack_from(data, off)
            body_ = data[off + _NLMSG.size:off + length]
            if kind == NLMSG_DONE:
                return replies
            if kind == NLMSG_ERROR:
                err = struct.unpack_from("=i", body_)[0]
                if err:
                    raise OSError(-err, os.strerror(-err))
                return replies
            replies.append(body_[_GENL.size:])
            if not flags & NLM_F_DUMP:
                return replies
            off += (length + 3) & ~3


def page_pools() -> list[dict[str, Any]]:
    """Every page pool the netdev family lists in this namespace, attributes by name."""
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC) as sock:
        sock.bind((0, 0))
        reply = _request(sock, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 0,
                         _attr(CTRL_ATTR_FAMILY_NAME, b"netdev\0"))
        family = struct.unpack("=H", _attrs(reply[0])[CTRL_ATTR_FAMILY_ID][:2])[0]
        pools = []
        for raw in _request(sock, family, NETDEV_CMD_PAGE_POOL_GET, NLM_F_DUMP):
            attrs = _attrs(raw)
            pool: dict[str, Any] = {}
            for kind, name in PAGE_POOL_ATTRS.items():
                if kind in attrs:
                    value = attrs[kind]
                    pool[name] = int.from_bytes(value[:8], "little")
            pools.append(pool)
        return pools

"""``ethtool -S`` in-process: ETHTOOL_GSTRINGS / ETHTOOL_GSTATS through SIOCETHTOOL."""

from __future__ import annotations

import ctypes
import fcntl
import socket
import struct

SIOCETHTOOL = 0x8946
ETHTOOL_GDRVINFO = 0x03
ETHTOOL_GSTRINGS = 0x1B
ETHTOOL_GSTATS = 0x1D
ETH_SS_STATS = 1
ETH_GSTRING_LEN = 32
_DRVINFO_SIZE = 196
_N_STATS_OFFSET = 4 + 32 * 5 + 12 + 4  # struct ethtool_drvinfo.n_stats


class EthtoolStats:
    """Statistics of one interface; the socket must be created in its namespace."""

    def __init__(self, sock: socket.socket, ifname: str) -> None:
        self.sock = sock
        self.ifname = ifname
        drv = ctypes.create_string_buffer(struct.pack("<I", ETHTOOL_GDRVINFO), _DRVINFO_SIZE)
        self._ioctl(drv)
        self.driver = drv.raw[4:36].rstrip(b"\0").decode()
        self.n = struct.unpack_from("<I", drv.raw, _N_STATS_OFFSET)[0]
        strings = ctypes.create_string_buffer(
            struct.pack("<III", ETHTOOL_GSTRINGS, ETH_SS_STATS, self.n),
            12 + self.n * ETH_GSTRING_LEN)
        self._ioctl(strings)
        raw = strings.raw[12:]
        self.names = [raw[i * ETH_GSTRING_LEN:(i + 1) * ETH_GSTRING_LEN].split(b"\0")[0]
                      .decode() for i in range(self.n)]

    def _ioctl(self, buf: ctypes.Array[ctypes.c_char]) -> None:
        ifreq = struct.pack("16sP", self.ifname.encode(), ctypes.addressof(buf))
        fcntl.ioctl(self.sock.fileno(), SIOCETHTOOL, bytearray(ifreq))

    def read(self) -> dict[str, int]:
        buf = ctypes.create_string_buffer(struct.pack("<II", ETHTOOL_GSTATS, self.n),
                                          8 + 8 * self.n)
        self._ioctl(buf)
        values = struct.unpack_from(f"<{self.n}Q", buf.raw, 8)
        return dict(zip(self.names, values, strict=True))

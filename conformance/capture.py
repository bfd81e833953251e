"""Reading a user's capture for ``explain``: Ethernet frames as bytes, exactly as captured.

The frames are taken raw (scapy's raw pcap/pcapng readers), never re-built through
scapy's ``Ether``: re-building fills in defaults, so a 0-byte frame would become a
14-byte header and a raw-IP capture would be parsed as Ethernet.  Anything that is not
a readable capture of Ethernet frames is refused with one line naming the file, the
frame and what is wrong; a frame the capture cut short (snap length) is kept with a note.
"""

from __future__ import annotations

import logging
import struct
from pathlib import Path

import attrs

#: ``LINKTYPE_ETHERNET`` (DLT_EN10MB), the only link type the models receive.
LINKTYPE_ETHERNET = 1
#: Larger than any frame a modelled device receives (a 9 KiB jumbo frame plus tags).
MAX_FRAME = 65535


#: pcapng's Section Header Block type, and the byte-order magic inside it.
PCAPNG_SHB = 0x0A0D0D0A
PCAPNG_BOM = 0x1A2B3C4D


class CaptureError(ValueError):
    """A capture that cannot be explained: the message is the one line the user sees."""


@attrs.frozen
class Capture:
    frames: tuple[bytes, ...]
    #: One line per frame that needs a word (cut short by the snap length).
    notes: tuple[str, ...] = ()


def read_capture(path: Path) -> Capture:
    """The frames of a pcap or pcapng file, or :class:`CaptureError`."""
    from scapy.error import Scapy_Exception
    from scapy.utils import RawPcapReader

    if not path.is_file():
        raise CaptureError(f"{path}: no such file")
    if path.stat().st_size == 0:
        raise CaptureError(f"{path}: the file is empty, not a pcap or pcapng capture")
    _check_pcapng_blocks(path)
    scapy_log = logging.getLogger("scapy.runtime")
    level = scapy_log.level
    scapy_log.setLevel(logging.ERROR)  # scapy warns on stderr about truncation: we say it
    try:
        reader = RawPcapReader(str(path))
    except (Scapy_Exception, OSError, EOFError, ValueError) as exc:
        raise CaptureError(f"{path}: not a pcap or pcapng capture ({exc})") from None
    frames: list[bytes] = []
    notes: list[str] = []
    try:
        for index, (data, meta) in enumerate(reader):
            linktype = getattr(meta, "linktype", getattr(reader, "linktype", LINKTYPE_ETHERNET))
            if linktype != LINKTYPE_ETHERNET:
                raise CaptureError(f"{path}: frame {index} has link type {linktype}; only "
                                   f"Ethernet captures (link type {LINKTYPE_ETHERNET}) are "
                                   "explained")
            caplen = getattr(meta, "caplen", len(data))
            if len(data) < caplen:
                raise CaptureError(f"{path}: frame {index} is truncated: the file ends after "
                                   f"{len(data)} of its {caplen} captured bytes")
            if len(data) > MAX_FRAME:
                raise CaptureError(f"{path}: frame {index} is {len(data)} bytes, longer than "
                                   f"any received frame ({MAX_FRAME})")
            wirelen = getattr(meta, "wirelen", len(data))
            if wirelen > len(data):
                notes.append(f"frame {index}: the capture kept {len(data)} of its {wirelen} "
                             "bytes (snap length); the model sees only those")
            frames.append(bytes(data))
    except CaptureError:
        raise
    except (Scapy_Exception, OSError, EOFError, ValueError) as exc:
        raise CaptureError(f"{path}: unreadable after frame {len(frames)}: {exc}") from None
    finally:
        reader.close()
        scapy_log.setLevel(level)
    if not frames:
        raise CaptureError(f"{path}: the capture holds no frames")
    return Capture(tuple(frames), tuple(notes))


def _check_pcapng_blocks(path: Path) -> None:
    """Every pcapng block's length fits in the file, before scapy reads a byte of it.

    scapy allocates what a block header claims: a corrupt length of 4 GiB would be a
    4 GiB read (or a MemoryError) instead of one line.  A pcap file passes unchanged."""
    size = path.stat().st_size
    with path.open("rb") as fh:
        if fh.read(4) != PCAPNG_SHB.to_bytes(4, "little"):
            return  # not pcapng (the type is a palindrome: either byte order)
        order = "<"
        offset = 0
        while offset + 8 <= size:
            fh.seek(offset)
            head = fh.read(12)
            kind = int.from_bytes(head[:4], "little")
            if kind == PCAPNG_SHB and len(head) == 12:
                order = "<" if head[8:12] == PCAPNG_BOM.to_bytes(4, "little") else ">"
            (length,) = struct.unpack(order + "I", head[4:8])
            if length < 12 or length % 4 or offset + length > size:
                raise CaptureError(f"{path}: the pcapng block at byte {offset} claims "
                                   f"{length} bytes; the file has {size - offset} from there "
                                   "(a block is 12 or more bytes, a multiple of 4, inside "
                                   "the file)")
            offset += length

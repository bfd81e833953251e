"""Reading a user's capture for ``explain``: Ethernet frames as bytes, exactly as captured.

The frames are taken raw (scapy's raw pcap/pcapng readers), never re-built through
scapy's ``Ether``: re-building fills in defaults, so a 0-byte frame would become a
14-byte header and a raw-IP capture would be parsed as Ethernet.  Anything that is not
a readable capture of Ethernet frames is refused with one line naming the file, the
frame and what is wrong; a frame the capture cut short (snap length) is kept with a note.
"""

from __future__ import annotations

import logging
from pathlib import Path

import attrs

#: ``LINKTYPE_ETHERNET`` (DLT_EN10MB), the only link type the models receive.
LINKTYPE_ETHERNET = 1
#: Larger than any frame a modelled device receives (a 9 KiB jumbo frame plus tags).
MAX_FRAME = 65535


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

"""The picture every component gets: each frame's bytes laid out in its receive buffer.

An XDP-capable driver hands the program a buffer with ``XDP_PACKET_HEADROOM`` (256 bytes)
in front of the frame (XDP-BUFF-001) and reserves room for ``struct skb_shared_info`` at
the end of the buffer (XDP-BUFF-002), so ``bpf_xdp_adjust_head`` and ``_tail`` have room
to move and an skb can be built around the buffer.  The frame itself is cut into the
headers :func:`reference.packet.parse` finds.  For a scenario without frames (kfunc calls,
a page_pool schedule) the picture is the scenario's events in order.
"""

from __future__ import annotations

from typing import Any

from conformance.html.svg import Figure, Svg
from conformance.scenario import Scenario
from reference import packet
from reference.errors import OracleError
from reference.xdp.arch import X86_64, XDP_PACKET_HEADROOM

PAGE = 4096
SCALE = 0.22  # pixels per byte: a 4 KiB page is 900 pixels wide
MAX_FRAMES = 12


def layers(frame: bytes) -> list[tuple[str, str, int]]:
    """(kind, label, length) of each part of a frame, outermost first."""
    try:
        info = packet.parse(frame)
    except OracleError:
        return [("payload", "unparsed", len(frame))]
    out = [("eth", "Ethernet", 14)]
    out += [("vlan", f"VLAN {v.tci & 0xFFF}", 4) for v in info.vlans]
    at = info.l3_offset
    if info.l3 is not packet.L3.NONE and info.l3_hdr_len:
        out.append(("l3", info.l3.name, info.l3_hdr_len))
        at += info.l3_hdr_len
    if info.l4_offset >= 0 and info.l4_hdr_len:
        out.append(("l4", info.l4.name, info.l4_hdr_len))
        at = info.l4_offset + info.l4_hdr_len
    if len(frame) > at:
        out.append(("payload", "payload", len(frame) - at))
    return out


def buffer_figure(frames: tuple[bytes, ...]) -> Figure:
    svg = Svg("each frame in its receive buffer")
    shinfo = X86_64.shinfo_reserved
    y = 20.0
    svg.text(0, 12, "offset 0", size=10)
    svg.text(PAGE * SCALE + 60, 12, f"{PAGE}", size=10, anchor="end")
    for i, frame in enumerate(frames[:MAX_FRAMES]):
        x = 60.0
        svg.text(0, y + 15, f"frame {i}", size=11)
        svg.cell(x, y, XDP_PACKET_HEADROOM * SCALE, 22, "headroom", "headroom",
                 tip=f"XDP_PACKET_HEADROOM: {XDP_PACKET_HEADROOM} bytes")
        x += XDP_PACKET_HEADROOM * SCALE
        for kind, label, n in layers(frame):
            w = n * SCALE if kind == "payload" else max(n * SCALE, len(label) * 6.2 + 6)
            svg.cell(x, y, w, 22, kind, label if w > len(label) * 6 else "",
                     tip=f"{label}: {n} bytes")
            x += w
        tail = PAGE - XDP_PACKET_HEADROOM - len(frame) - shinfo
        if tail > 0:
            svg.cell(x, y, tail * SCALE, 22, "tailroom", "tailroom",
                     tip=f"tailroom: {tail} bytes")
            x += tail * SCALE
        svg.cell(x, y, shinfo * SCALE, 22, "shinfo", "shinfo",
                 tip=f"skb_shared_info reserved: {shinfo} bytes")
        y += 30
    if len(frames) > MAX_FRAMES:
        svg.text(0, y + 12, f"... and {len(frames) - MAX_FRAMES} more frame(s)")
        y += 20
    svg.legend(0, y + 6, [("headroom", "headroom"), ("eth", "Ethernet"), ("vlan", "VLAN tag"),
                          ("l3", "IP header"), ("l4", "L4 header"), ("payload", "payload"),
                          ("tailroom", "tailroom"), ("shinfo", "skb_shared_info")])
    return Figure("Buffer layout", "each frame as the driver hands it to XDP: 256 bytes of "
                  "headroom, the frame's headers and payload, the tailroom, and the room "
                  "reserved for skb_shared_info at the end of a 4 KiB page (drawn to scale, "
                  "but each header is widened to fit its name; hover for its length)", svg.markup())


def events_figure(events: tuple[Any, ...]) -> Figure:
    svg = Svg("the scenario's events in order")
    x = 0.0
    for i, ev in enumerate(events):
        op = str(ev.get("op", ev.get("kfunc", "?"))) if isinstance(ev, dict) else str(ev)
        w = max(len(op) * 7 + 16, 40)
        svg.cell(x, 10, w, 26, "sw", op, tip=f"event {i}: {ev}")
        svg.text(x + w / 2, 50, str(i), size=10, anchor="middle")
        x += w + 6
    if not events:
        svg.cell(0, 10, 160, 26, "hw", "no events")
    return Figure("Events", "the scenario's events, in the order the reference runs them "
                  "(hover for the full event)", svg.markup())


def figures(scenario: Scenario) -> list[Figure]:
    out = []
    if scenario.frames:
        out.append(buffer_figure(scenario.frames))
    if scenario.events or not scenario.frames:
        out.append(events_figure(tuple(scenario.events)))
    return out

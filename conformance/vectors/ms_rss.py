"""Microsoft's published Toeplitz verification vectors, transcribed as test data.

Primary source: "Verifying the RSS Hash Calculation", Windows driver documentation
(learn.microsoft.com/windows-hardware/drivers/network/verifying-the-rss-hash-calculation),
read from its source file ``windows-driver-docs-pr/network/verifying-the-rss-hash-calculation.md``
in ``MicrosoftDocs/windows-driver-docs`` at commit 088014e6eeaf46b4631e7e9d0faafc2dfb08db9e
(page dated 04/20/2017).

Cross-check: the same five IPv4 and three IPv6 rows, with the same hashes, are in DPDK's
``app/test/test_thash.c`` (``v4_tbl`` / ``v6_tbl``, ``DPDK/dpdk`` at commit
0c9da7555da8c8373dfd69f798f832723ae6de71), whose comment attributes them to the Intel 82599
datasheet, section 7.1.2.8.3 "RSS Verification Suite".  Every value below was compared
against both sources by hand.

Mind the column order: the tables list the DESTINATION first, then the source.  The hash
input is nevertheless source address, destination address, source port, destination port
(network byte order), so the test code reorders.  "IPv4 only" / "IPv6 only" is the hash of
the two addresses; "with TCP" adds the two ports.  The IPv6 rows use ports like the IPv4
rows except the third, whose source port is 44251 in both sources.
"""

from __future__ import annotations

from typing import NamedTuple

# The 40-byte secret key of the verification suite (both sources, byte for byte).
MS_KEY = bytes(
    [
        0x6D, 0x5A, 0x56, 0xDA, 0x25, 0x5B, 0x0E, 0xC2,
        0x41, 0x67, 0x25, 0x3D, 0x43, 0xA3, 0x8F, 0xB0,
        0xD0, 0xCA, 0x2B, 0xCB, 0xAE, 0x7B, 0x30, 0xB4,
        0x77, 0xCB, 0x2D, 0xA3, 0x80, 0x30, 0xF2, 0x0C,
        0x6A, 0x42, 0xB7, 0x3B, 0xBE, 0xAC, 0x01, 0xFA,
    ]
)  # fmt: skip


class Vector(NamedTuple):
    """One table row, in the table's own column order (destination first)."""

    dst: str
    dport: int
    src: str
    sport: int
    hash_l3: int  # "IPv4 only" / "IPv6 only"
    hash_l3l4: int  # "IPv4 with TCP" / "IPv6 with TCP"


IPV4_VECTORS: tuple[Vector, ...] = (
    Vector("161.142.100.80", 1766, "66.9.149.187", 2794, 0x323E8FC2, 0x51CCC178),
    Vector("65.69.140.83", 4739, "199.92.111.2", 14230, 0xD718262A, 0xC626B0EA),
    Vector("12.22.207.184", 38024, "24.19.198.95", 12898, 0xD2D0A5DE, 0x5C2B394A),
    Vector("209.142.163.6", 2217, "38.27.205.30", 48228, 0x82989176, 0xAFC7327F),
    Vector("202.188.127.2", 1303, "153.39.163.191", 44251, 0x5D1809C5, 0x10E828A2),
)

IPV6_VECTORS: tuple[Vector, ...] = (
    Vector("3ffe:2501:200:3::1", 1766, "3ffe:2501:200:1fff::7", 2794, 0x2CC18CD5, 0x40207D3D),
    Vector("ff02::1", 4739, "3ffe:501:8::260:97ff:fe40:efab", 14230, 0x0F0C461C, 0xDDE51BBF),
    Vector(
        "fe80::200:f8ff:fe21:67cf",
        38024,
        "3ffe:1900:4545:3:200:f8ff:fe21:67cf",
        44251,
        0x4B61E985,
        0x02D1FEEF,
    ),
)

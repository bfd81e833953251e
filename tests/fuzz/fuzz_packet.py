"""Long-running coverage-guided fuzzing of ``reference.packet.parse`` (PKT-001).

Run it by hand, for as long as you like::

    pip install atheris
    python tests/fuzz/fuzz_packet.py            # add libFuzzer flags, e.g. -max_total_time=600

The property is the one the hypothesis tests check briefly: for any bytes, ``parse``
returns a PacketInfo or raises MalformedInput (Truncated included), and the checksum
helpers accept whatever ``parse`` returned.  Any other exception is a crash libFuzzer
reports with the input that caused it.

The file name does not start with ``test_``, so pytest never collects it, and atheris
is imported only when the file runs as a program.
"""

from __future__ import annotations

import sys


def check_one(data: bytes) -> None:
    """The fuzz target: parse, then run the checksum helpers on what parse returned."""
    from reference.checksum import complete_csum_of, complete_validates_l4, l4_checksum_status
    from reference.errors import MalformedInput
    from reference.packet import parse

    try:
        info = parse(data)
    except MalformedInput:
        return
    l4_checksum_status(data, info)
    complete_validates_l4(data, info, complete_csum_of(data))


def main() -> None:
    import atheris

    with atheris.instrument_imports():
        import reference.checksum
        import reference.packet  # noqa: F401

    atheris.Setup(sys.argv, check_one)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

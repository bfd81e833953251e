"""``rx-oracle conformance`` as the mutation runner starts it: optionally without shrinking.

Most mutants are killed, and on a failure hypothesis shrinks every failing example to a
minimal one: tens of seconds per mutant spent on reproducers nobody reads (a kill of an
rss mutant took 44 s with shrinking, 1.7 s without).  Generation is unchanged (the
derandomized ``ci`` profile), so whether a mutant is killed is the same as under
``rx-oracle conformance``; only which field differs first, and so which rules the
report fails, can differ (an unshrunk example may break several fields at once).

Usage: ``python -m conformance.mutation.suite [--shrink] CONFORMANCE-ARGS...``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str]) -> int:
    args = list(argv)
    if "--shrink" in args:
        args.remove("--shrink")
    else:
        from hypothesis import Phase, settings

        from conformance import profiles

        profiles.PROFILES["ci"] = settings(
            profiles.PROFILES["ci"], phases=(Phase.explicit, Phase.reuse, Phase.generate))
    from conformance.cli import main as cli_main

    return cli_main(["conformance", *args])


if __name__ == "__main__":  # pragma: no cover - run as a module by the runner
    sys.exit(main(sys.argv[1:]))

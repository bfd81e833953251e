"""``rx-oracle conformance`` as the mutation runner starts it: optionally without shrinking.

Most mutants are killed, and on a failure hypothesis shrinks every failing example to a
minimal one: tens of seconds per mutant spent on reproducers nobody reads (a kill of an
rss mutant took 44 s with shrinking, 1.7 s without).  Generation is unchanged (the
derandomized ``ci`` profile), so whether a mutant is killed is the same as under
``rx-oracle conformance``; only which field differs first, and so which rules the
report fails, can differ (an unshrunk example may break several fields at once).

With ``--first-failure`` the run stops at the first property that fails (pytest's
``-x``): a killed mutant is known by then, and the properties after it are not run (the
report says ``skip`` for their rules).  The report then names only that property's
rules, so the share of kills under a rule of the mutated function is measured without it
(the seeded sample); a full run may use it (about a fifth less CPU time).

Usage: ``python -m conformance.mutation.suite [--shrink] [--first-failure] CONFORMANCE-ARGS...``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def main(argv: Sequence[str]) -> int:
    from hypothesis import Phase, settings

    from conformance import cli, profiles

    args = list(argv)
    ci, whole_suite = profiles.PROFILES["ci"], cli.run_suite
    if "--shrink" in args:
        args.remove("--shrink")
    else:
        profiles.PROFILES["ci"] = settings(ci, phases=(Phase.explicit, Phase.reuse,
                                                       Phase.generate))
    if "--first-failure" in args:
        args.remove("--first-failure")

        def up_to_first_failure(args: argparse.Namespace, paths: list[str],
                                extra: Sequence[str] = ()) -> int:
            return whole_suite(args, paths, [*extra, "-x"])

        cli.run_suite = up_to_first_failure
    try:
        return cli.main(["conformance", *args])
    finally:  # the same process may run the suite again (tests do)
        profiles.PROFILES["ci"], cli.run_suite = ci, whole_suite


if __name__ == "__main__":  # pragma: no cover - run as a module by the runner
    sys.exit(main(sys.argv[1:]))

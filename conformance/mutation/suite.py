"""``rx-oracle conformance`` as the mutation runner starts it: optionally without shrinking.

Most mutants are killed, and on a failure hypothesis shrinks every failing example to a
minimal one: tens of seconds per mutant spent on reproducers nobody reads (a kill of an
rss mutant took 44 s with shrinking, 1.7 s without).  Generation is unchanged (the
derandomized ``ci`` profile), so whether a mutant is killed is the same as under
``rx-oracle conformance``; only which field differs first, and so which rules the
report fails, can differ (an unshrunk example may break several fields at once).

With ``--first-failure`` the run stops at the first property that fails (pytest's
``-x``): a killed mutant is known by then, and the properties after it are not run (the
report has no verdict for the rules only they name).  The report then names only that property's
rules, so the share of kills under a rule of the mutated function is measured without it
(the seeded sample); a full run may use it (about a fifth less CPU time).

The target is not started once beforehand to see that it runs (``rx-oracle
conformance`` does, for a clear exit status): a mutant whose target cannot start is
unavailable inside the run as well, the same exit status for one process start less.

``--property NODEID`` (repeatable) runs only those properties instead of the
``--driver`` components' files: the ones that execute the mutated line
(:mod:`conformance.mutation.selection`).  ``--contexts`` loads the plugin that names each
property's lines for coverage (:mod:`conformance.mutation.contexts`).

Usage: ``python -m conformance.mutation.suite [--shrink] [--first-failure]
[--property NODEID]... [--contexts] CONFORMANCE-ARGS...``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def _own_options() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--shrink", action="store_true")
    p.add_argument("--first-failure", action="store_true")
    p.add_argument("--contexts", action="store_true")
    p.add_argument("--gate-log", type=str, default=None)
    p.add_argument("--property", action="append", default=[], dest="properties")
    return p


def main(argv: Sequence[str]) -> int:
    from hypothesis import Phase, settings

    from conformance import cli, profiles
    from conformance.usage import UsageError

    own, rest = _own_options().parse_known_args(list(argv))
    args = cli._parser().parse_args(["conformance", *rest])
    extra = [*(["-x"] if own.first_failure else []),
             *(["-p", "conformance.mutation.contexts"] if own.contexts else [])]
    if own.gate_log is not None:
        from pathlib import Path

        from conformance.mutation import contexts

        contexts.GATE_LOG = Path(own.gate_log)
    ci = profiles.PROFILES["ci"]
    if not own.shrink:
        profiles.PROFILES["ci"] = settings(ci, phases=(Phase.explicit, Phase.reuse,
                                                       Phase.generate))
    try:
        return cli.conformance(args, properties=own.properties, extra=extra,
                               probe_target=False)
    except UsageError as exc:
        print(f"rx-oracle: {exc}", file=sys.stderr)
        return cli.EXIT_ERROR
    finally:  # the same process may run the suite again (tests do)
        profiles.PROFILES["ci"] = ci


if __name__ == "__main__":  # pragma: no cover - run as a module by the runner
    sys.exit(main(sys.argv[1:]))

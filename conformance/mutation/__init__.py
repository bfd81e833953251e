"""Mutation testing: how many deliberate bugs in ``reference/`` does the suite catch?

The suite's pass on the reference proves little by itself: a suite with no assertions
passes too.  Its *power* is how many wrong implementations it rejects.  This package
makes wrong implementations on purpose (mutants of ``reference/``: one small semantic
change each), serves each one as a target over the exec protocol, and runs the
conformance properties that exercise the mutated module against it.  The fraction
rejected (the kill rate) is the measured power; each survivor is either an equivalent
mutant or a gap in the suite.

Why a small AST mutator of our own rather than mutmut or cosmic-ray: both own the test
runner (they run a command per mutant and read its exit status, patch files in place or
through an import hook in the process under test) and mutate the module the tests
import.  Here the process under test must stay pristine (the suite predicts with the
real reference) and only the *target* process may see the mutant; we also want our own
outcome columns (a crash is not a clean kill), to skip what no observable can show
(trace text, ``raise`` messages, annotations) and to attribute kills to the rules a
mutated function names.  Six operators over ``ast`` in a few hundred lines fit that better than
bending either tool.

Modules: :mod:`.mutator` (the operators), :mod:`.scope` (which modules are mutated and
which components check them), :mod:`.sampling` (a seeded sample spread over components),
:mod:`.runner` (one process per mutant), :mod:`.suite` (the suite without shrinking),
:mod:`.report` (JSON lines and the markdown summary), :mod:`.reach` (branch coverage of
the ci run), :mod:`.cli` (``rx-oracle mutate``).  Figures and the triage of survivors:
``conformance/MUTANTS.md``.
"""

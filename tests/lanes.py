"""Measurements that no interpreter changes run once per CI run, not once per interpreter.

``.ci/run`` runs the suite on every Python 3.9-3.13 it finds.  Most tests check behaviour
that can differ between interpreters and run on each.  A few recompute documented figures
from the shared data, time regular expressions or kill processes at random moments: their
result does not depend on the interpreter, and running them five times would push CI past
its 15 minutes.  ``.ci/run`` sets ``REFEREE_ONCE_ON`` to the interpreter that runs them (the
newest it found) for every other interpreter; there the tests marked ``@once_per_ci`` skip,
and the skip reason names that interpreter.  Without the variable (``make test`` by hand,
or the one interpreter that runs them) every test runs.
"""
import os
import unittest

ONCE_ON = os.environ.get("REFEREE_ONCE_ON", "").strip()


def once_per_ci(obj):
    """Skip ``obj`` (a test or a TestCase) when another interpreter of this CI run runs it."""
    reason = "interpreter-independent measurement: run once per CI run, on python %s" % ONCE_ON
    return unittest.skipIf(bool(ONCE_ON), reason)(obj)

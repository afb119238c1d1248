#!/usr/bin/env python3
"""Run the test suite with the standard library's unittest and print one closing line.

Usage: python3 tests/run.py [--all] [-v] [-k PATTERN] [TEST_MODULE ...]

Two tiers (``make test`` and ``make test-all``):

* the default, fast suite: every test except those listed in ``tests/slow.txt`` (the ones
  that recompute figures from ``../shared/data`` or a peer, kill processes, time regexes or
  build large indexes); it needs nothing but a fresh clone and finishes in about a minute of CPU;
* ``--all``: every test, as ``.ci/run`` runs it.  Tests that need ``../shared/data`` (or
  ``MINI_RAG_DATA``) or a peer in a throwaway virtualenv skip there when it is missing, each
  skip line naming what is missing.

One line per test module as it ends (``tests.test_x: N tests, X.X s CPU, Y.Y s wall``), then
one line per skip reason with its count and the tests it skipped, then the closing line
``tests: N passed, N failed, N skipped``.  Exit status: 0 when every test passed (skips
allowed), 1 otherwise, 5 when no test ran.
"""
import argparse
import io
import os
import sys
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SLOW_LIST = os.path.join(ROOT, "tests", "slow.txt")


def slow_entries(path=SLOW_LIST):
    """The test ids (module, module.Class or module.Class.test) of the slow tier, one per line;
    ``#`` starts a comment."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.split("#", 1)[0].strip()
            if line:
                out.append(line)
    return out


def is_slow(test_id: str, entries) -> bool:
    return any(test_id == e or test_id.startswith(e + ".") for e in entries)


def _tests(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from _tests(t)
        else:
            yield t


def _cpu() -> float:
    t = os.times()
    return t[0] + t[1] + t[2] + t[3]      # this process and its finished children


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all", action="store_true", help="the whole suite (make test-all, CI), slow tier included")
    ap.add_argument("-v", "--verbose", action="store_true", help="print each test's name")
    ap.add_argument("-k", dest="pattern", action="append", default=[],
                    help="only run tests whose id contains PATTERN (repeatable)")
    ap.add_argument("modules", nargs="*", help="test modules, e.g. tests.test_corpus (default: all)")
    args = ap.parse_args(argv)

    os.chdir(ROOT)
    sys.path.insert(0, ROOT)
    loader = unittest.TestLoader()
    if args.pattern:
        loader.testNamePatterns = ["*%s*" % p for p in args.pattern]
    if args.modules:
        suite = loader.loadTestsFromNames(args.modules)
    else:
        suite = loader.discover("tests", pattern="test_*.py", top_level_dir=ROOT)
    tests = list(_tests(suite))
    if not args.all and not args.modules:
        slow = slow_entries()
        tests = [t for t in tests if not is_slow(t.id(), slow)]
    by_module = {}
    for t in tests:
        by_module.setdefault(t.id().rsplit(".", 2)[0] if t.id().count(".") >= 2 else t.id(), []).append(t)
    failures, errors, skipped, unexpected, run = [], [], [], [], 0
    for module, group in by_module.items():
        cpu, wall = _cpu(), time.monotonic()
        stream = sys.stderr if args.verbose else io.StringIO()     # a module's report only when it fails
        result = unittest.TextTestRunner(verbosity=2 if args.verbose else 0, stream=stream).run(
            unittest.TestSuite(group))
        if not args.verbose and not result.wasSuccessful():
            sys.stderr.write(stream.getvalue())
        print("%s: %d tests, %.1f s CPU, %.1f s wall%s" % (
            module, result.testsRun, _cpu() - cpu, time.monotonic() - wall,
            "" if result.wasSuccessful() else ", FAILED"), flush=True)
        failures += result.failures
        errors += result.errors
        skipped += result.skipped
        unexpected += result.unexpectedSuccesses
        run += result.testsRun

    # A failing subTest is reported once per subtest; count each test method once.
    def owner(test):
        return getattr(test, "test_case", test).id()
    failed = len({owner(t) for t, _ in failures + errors} | {owner(t) for t in unexpected})
    nskipped = len({owner(t) for t, _ in skipped})
    passed = run - failed - nskipped
    for line in skip_lines(skipped, owner):
        print(line)
    print("python %s" % sys.version.split()[0])
    print("tests: %d passed, %d failed, %d skipped" % (passed, failed, nskipped))
    if run == 0:
        return 5
    return 0 if failed == 0 else 1


def skip_lines(skipped, owner=lambda t: t.id()):
    """One line per skip reason, most frequent first, then by reason: the count, the reason
    and the skipped tests (each once, in name order)."""
    by_reason = {}
    for test, reason in skipped:
        by_reason.setdefault(" ".join(str(reason).split()), set()).add(owner(test))
    return ["skipped %d: %s: %s" % (len(ids), reason, ", ".join(sorted(ids)))
            for reason, ids in sorted(by_reason.items(), key=lambda kv: (-len(kv[1]), kv[0]))]


if __name__ == "__main__":
    sys.exit(main())

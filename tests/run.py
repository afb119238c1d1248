#!/usr/bin/env python3
"""Run the test suite with the standard library's unittest and print one closing line.

Usage: python3 tests/run.py [-v] [-k PATTERN] [TEST_MODULE ...]

The closing line is ``tests: N passed, N failed, N skipped`` so that CI logs say what ran;
above it, one line per skip reason with its count and the tests it skipped
(``skipped 2: <reason>: tests.test_x.Case.test_a, ...``).
Exit status: 0 when every test passed (skips allowed), 1 otherwise, 5 when no test ran.
"""
import argparse
import os
import sys
import unittest


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-v", "--verbose", action="store_true", help="print each test's name")
    ap.add_argument("-k", dest="pattern", action="append", default=[],
                    help="only run tests whose id contains PATTERN (repeatable)")
    ap.add_argument("modules", nargs="*", help="test modules, e.g. tests.test_corpus (default: all)")
    args = ap.parse_args(argv)

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.chdir(root)
    sys.path.insert(0, root)
    loader = unittest.TestLoader()
    if args.pattern:
        loader.testNamePatterns = ["*%s*" % p for p in args.pattern]
    if args.modules:
        suite = loader.loadTestsFromNames(args.modules)
    else:
        suite = loader.discover("tests", pattern="test_*.py", top_level_dir=root)
    runner = unittest.TextTestRunner(verbosity=2 if args.verbose else 1, stream=sys.stderr)
    result = runner.run(suite)
    # A failing subTest is reported once per subtest; count each test method once.
    def owner(test):
        return getattr(test, "test_case", test).id()
    failed = len({owner(t) for t, _ in result.failures + result.errors}
                 | {owner(t) for t in result.unexpectedSuccesses})
    skipped = len({owner(t) for t, _ in result.skipped})
    passed = result.testsRun - failed - skipped
    for line in skip_lines(result.skipped, owner):
        print(line)
    print("python %s" % sys.version.split()[0])
    print("tests: %d passed, %d failed, %d skipped" % (passed, failed, skipped))
    if result.testsRun == 0:
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

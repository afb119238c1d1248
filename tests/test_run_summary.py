"""tests/run.py's closing lines name every skip reason with its tests (issue 31 item 4)."""
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import run  # noqa: E402


class _T(unittest.TestCase):
    def runTest(self):
        pass


def case(name):
    t = _T()
    t.id = lambda: name
    return t


class SkipLines(unittest.TestCase):
    CASES = (
        ([], []),
        ([(case("a.B.t1"), "no data")], ["skipped 1: no data: a.B.t1"]),
        ([(case("a.B.t2"), "no  data\n"), (case("a.B.t1"), "no data"), (case("c.D.t"), "jq not found"),
          (case("a.B.t1"), "no data")],
         ["skipped 2: no data: a.B.t1, a.B.t2", "skipped 1: jq not found: c.D.t"]),
    )

    def test_reasons_counted_and_named(self):
        for skipped, want in self.CASES:
            with self.subTest(skipped=[r for _, r in skipped]):
                self.assertEqual(run.skip_lines(skipped), want)


class NoMissingDataSkips(unittest.TestCase):
    """The proofs' data ships in tests/data: the trec_eval golden files and seed 002's reference."""

    def test_vendored_files_present_with_licence_notes(self):
        for folder, names in (("trec_eval_test", ("LICENSE.md", "SOURCE.md", "qrels.test", "results.test",
                                                  "results.trunc", "out.test", "out.test.a", "out.test.aq",
                                                  "out.test.aqc", "out.test.meas_params")),
                              ("seed002", ("SOURCE.md", "reference_score_eval.py"))):
            for name in names:
                path = os.path.join(ROOT, "tests", "data", folder, name)
                with self.subTest(path=path):
                    self.assertTrue(os.path.isfile(path))
                    self.assertLess(os.path.getsize(path), 100000)


if __name__ == "__main__":
    unittest.main()

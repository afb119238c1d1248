"""tests/run.py's two tiers (issue 42 item 2): every line of tests/slow.txt names tests that
exist, and the fast tier is the rest."""
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import run  # noqa: E402


def all_ids():
    suite = unittest.TestLoader().discover(os.path.join(ROOT, "tests"), pattern="test_*.py", top_level_dir=ROOT)
    return [t.id() for t in run._tests(suite)]


class Tiers(unittest.TestCase):
    def test_is_slow_matches_whole_dotted_parts(self):
        entries = ["tests.test_a", "tests.test_b.Case", "tests.test_c.Case.test_x"]
        table = [("tests.test_a.Case.test_y", True), ("tests.test_ab.Case.test_y", False),
                 ("tests.test_b.Case.test_z", True), ("tests.test_b.Casey.test_z", False),
                 ("tests.test_c.Case.test_x", True), ("tests.test_c.Case.test_xy", False)]
        for test_id, slow in table:
            with self.subTest(test_id=test_id):
                self.assertIs(run.is_slow(test_id, entries), slow)

    def test_every_slow_entry_names_existing_tests(self):
        ids = all_ids()
        for entry in run.slow_entries():
            with self.subTest(entry=entry):
                self.assertTrue(any(run.is_slow(i, [entry]) for i in ids), "%s names no test" % entry)

    def test_comments_and_blank_lines_are_ignored(self):
        import tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as fh:
            fh.write("# a comment\n\ntests.test_a  # why\n   \ntests.test_b.Case\n")
        try:
            self.assertEqual(run.slow_entries(fh.name), ["tests.test_a", "tests.test_b.Case"])
        finally:
            os.unlink(fh.name)


if __name__ == "__main__":
    unittest.main()

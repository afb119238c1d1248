"""make validate (bench/validate.py, issue 41 item 5): the rates by hand, the skip without the
shared data (exit 0, one line naming the folder, nothing written), and (slow tier, skipped
without ../shared/data) docs/validation.md's table equal to a fresh run."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))
import validate  # noqa: E402

DOC = os.path.join(ROOT, "docs", "validation.md")


class Rates(unittest.TestCase):
    def test_by_hand(self):
        # people: 1 1 1 0 0 0 0 0 ; verdict: 1 1 0 1 0 0 0 0  -> tp 2, fn 1, fp 1, tn 4
        r = validate.rates([1, 1, 1, 0, 0, 0, 0, 0], [1, 1, 0, 1, 0, 0, 0, 0])
        self.assertEqual((r["n"], r["positives"]), (8, 3))
        self.assertEqual(r["agreement"], 6 / 8)
        self.assertEqual((r["precision"], r["recall"], r["fpr"], r["flagged"]), (2 / 3, 2 / 3, 1 / 5, 3 / 8))
        self.assertAlmostEqual(r["balanced_accuracy"], (2 / 3 + 4 / 5) / 2)

    def test_undefined_parts_are_empty(self):
        r = validate.rates([0, 0], [0, 0])            # no positive, nothing flagged
        self.assertEqual((r["recall"], r["precision"], r["balanced_accuracy"], r["fpr"]), (None, None, None, 0.0))
        row = validate.render([("v", "s", "h", "m", r)]).splitlines()[2]
        self.assertEqual(row, "| v | s | h | m | 2 | 0 | 1.000 |  |  |  | 0.000 | 0.000 |")


class Skip(unittest.TestCase):
    def test_without_the_data(self):
        tmp = tempfile.mkdtemp(prefix="validate_")
        self.addCleanup(shutil.rmtree, tmp, True)
        doc = os.path.join(tmp, "validation.md")
        shutil.copy(DOC, doc)
        missing = os.path.join(tmp, "no-such-folder")
        env = dict(os.environ, MINI_RAG_DATA=missing)
        p = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "validate.py"), "--docs", doc], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "validate: skipped: the shared labelled data folder %s is not there "
                                   "(set MINI_RAG_DATA)\n" % missing)
        with open(DOC, encoding="utf-8") as a, open(doc, encoding="utf-8") as b:
            self.assertEqual(a.read(), b.read())

    def test_make_target(self):
        with open(os.path.join(ROOT, "Makefile"), encoding="utf-8") as fh:
            self.assertIn("validate:\n\t@$(PYTHON) bench/validate.py --docs docs/validation.md\n", fh.read())
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
            self.assertTrue("## How far to trust each verdict" in fh.read() and True)
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
            self.assertTrue("(docs/validation.md)" in fh.read())


class Documented(unittest.TestCase):
    """The committed table is a fresh run's (slow tier: about 10 s of CPU)."""

    def test_table_is_current(self):
        if not os.path.isdir(os.path.join(validate.DATA, "chatgpt_refusals")):
            self.skipTest("%s not found" % validate.DATA)
        with open(DOC, encoding="utf-8") as fh:
            block = fh.read().split(validate.BEGIN, 1)[1].split(validate.END, 1)[0]
        self.assertEqual(block, "\n" + validate.table(), "docs/validation.md is stale: run make validate")


if __name__ == "__main__":
    unittest.main()

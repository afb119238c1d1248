"""The quick sample of the generated bad-input suite (bench/fuzz_inputs.py --quick; the
whole suite is make bench-badinputs): every case exits 2, loses no data, never hangs."""
import os
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, ROOT)

import fuzz_inputs  # noqa: E402


class QuickSuite(unittest.TestCase):
    def test_every_kind(self):
        suite = fuzz_inputs.Suite(quick=True)
        try:
            results = suite.all()
        finally:
            import shutil
            shutil.rmtree(suite.dir, True)
        kinds, total = fuzz_inputs.summary(results)
        self.assertGreaterEqual(total["cases"], 150)
        self.assertEqual(set(kinds), {"output-on-input", "output-foreign", "output-special", "regex", "partial",
                                      "index", "config", "http", "generator"})
        self.assertGreaterEqual(sum(kinds[k]["cases"] for k in ("config", "http", "generator")), 30)
        bad = [r for r in results if not r["ok"]]
        self.assertEqual(bad, [], bad[:5])
        self.assertEqual((total["data_lost"], total["hangs"], total["exit_3"]), (0, 0, 0))


if __name__ == "__main__":
    unittest.main()

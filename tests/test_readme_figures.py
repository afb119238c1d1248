"""The README's "Current figures" are the output of a fresh `make eval`, not typed by hand."""
import os
import subprocess
import sys
import tempfile
import unittest
from tests.lanes import once_per_ci  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class ReadmeFigures(unittest.TestCase):
    @once_per_ci
    def test_figures_match_a_fresh_eval(self):
        if not os.path.isfile(os.path.join(ROOT, "gold", "gold.jsonl")):
            self.skipTest("gold/gold.jsonl not present")
        with tempfile.TemporaryDirectory() as tmp:
            proc = subprocess.run([sys.executable, "-m", "mini_rag", "eval", "--runs", tmp], cwd=ROOT,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
            self.assertIn(proc.returncode, (0, 1), proc.stderr)
            check = subprocess.run([sys.executable, os.path.join("tools", "update_readme.py"), "--check",
                                    "--report", os.path.join(tmp, "report.json")], cwd=ROOT,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
            self.assertEqual(check.returncode, 0,
                             "README figures are stale: run `make eval && python3 tools/update_readme.py`")


if __name__ == "__main__":
    unittest.main()

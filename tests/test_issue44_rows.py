"""Issue 44's acceptance on the table's rows at full size (slow tier, tests/slow.txt).

* Each row of the table (bench/hostile_rows.py writes it as gold + trace + gates file) ends in a
  clean result, in a process of its own: exit 0 with the report written, at most 2 s of CPU and
  200 MB for a row under 1 MB (the 5 MB row: bounded memory too), no traceback.
* Among 1,000 good rows a hostile row changes neither the exit status nor the good rows' verdicts.
* Accepted gates-file patterns search in linear time: the issue's accepted shapes, the built-in
  citation patterns and 300 generated patterns that the check accepts, each on inputs built
  from its own characters (tests/regex_audit.py) at 25,000 and 100,000 characters, CPU time
  growing at most 8x (a quadratic search grows 16x) or staying under 20 ms.
"""
import json
import os
import random
import re
import shutil
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "tests"))

import score_eval as se  # noqa: E402
import hostile_rows  # noqa: E402
import regex_audit  # noqa: E402
from test_issue44 import ACCEPTED  # noqa: E402

CPU_LIMIT = 2.0
MB_LIMIT = 200.0


class TableRows(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="issue44_rows_")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def measure(self, row, good):
        d = tempfile.mkdtemp(dir=self.dir)
        argv = [sys.executable, os.path.join(ROOT, "score_eval.py")] + hostile_rows.write_case(d, row, good)
        got = hostile_rows.measure(argv, 60)
        size = os.path.getsize(os.path.join(d, "trace.jsonl")) + os.path.getsize(os.path.join(d, "gold.jsonl"))
        report = None
        if os.path.exists(os.path.join(d, "report.json")):
            with open(os.path.join(d, "report.json"), encoding="utf-8") as fh:
                report = json.load(fh)
        return got, report, size

    def test_each_row_alone(self):
        for name, (what, build) in hostile_rows.ROWS.items():
            with self.subTest(row=name):
                got, report, size = self.measure(build(1.0), 0)
                self.assertEqual(got["exit"], 0, got["message"])
                self.assertFalse(got["traceback"])
                self.assertIsNotNone(report)
                self.assertLessEqual(got["peak_mb"], MB_LIMIT, what)
                if size < (1 << 20):
                    self.assertLessEqual(got["cpu"], CPU_LIMIT, what)

    def test_one_row_among_1000_good_ones(self):
        bases = {}
        for name, (what, build) in hostile_rows.ROWS.items():
            with self.subTest(row=name):
                row = build(1.0)
                if row["gates"] not in bases:
                    bases[row["gates"]] = self.measure(hostile_rows._row(
                        "The finance team approves refunds [1].", ["the finance team"], gates=row["gates"]), 1000)
                (base, base_report, _) = bases[row["gates"]]
                got, report, _ = self.measure(row, 1000)
                self.assertEqual(got["exit"], base["exit"], got["message"])
                self.assertEqual(report["counts"]["gold_items"], 1001)
                good = ["G%d" % n for n in range(1000)]
                self.assertEqual([report["items"][q] for q in good], [base_report["items"][q] for q in good])


def _generated(n: int, seed: int = 44):
    """``n`` random small patterns over a few characters, classes, repeats, groups and anchors."""
    rnd = random.Random(seed)
    atoms = ["a", "b", "x", "[ab]", "[^a]", r"\w", r"\s", ".", r"\d", " ", ",", r"\[", r"[^\]]", r"[^,]"]
    quant = ["", "", "", "*", "+", "?", "{0,3}", "{1,5}", "{2}", "{0,40}"]

    def gen(depth=0):
        out = []
        for _ in range(rnd.randint(1, 6)):
            r = rnd.random()
            if r < 0.15 and depth < 2:
                out.append("(?:%s)%s" % ("|".join(gen(depth + 1) for _ in range(rnd.randint(1, 3))), rnd.choice(quant)))
            elif r < 0.2:
                out.append(rnd.choice([r"\b", "^", "(?<=,)", "$"]))
            else:
                out.append(rnd.choice(atoms) + rnd.choice(quant))
        return "".join(out)
    while n:
        p = gen()
        try:
            re.compile(p, re.I)
        except re.error:
            continue
        n -= 1
        yield p


class AcceptedRegexesAreLinear(unittest.TestCase):
    def check(self, pattern):
        small, _ = regex_audit.worst_time(pattern, re.I, 25_000, 2.0)
        large, sample = regex_audit.worst_time(pattern, re.I, 100_000, 4.0)
        self.assertTrue(large < 0.02 or large <= 8 * max(small, 1e-3),
                        "%r: %.3f s at 25,000 characters, %.3f s at 100,000 (%r...)" % (pattern, small, large, sample))

    def test_listed_and_builtin(self):
        for pattern in ACCEPTED + list(se.CITATION_PATTERNS):
            with self.subTest(pattern=pattern[:40]):
                self.check(pattern)

    def test_generated_patterns_the_check_accepts(self):
        accepted = [p for p in _generated(300) if se.regex_problem(p) is None]
        self.assertGreater(len(accepted), 100)
        for pattern in accepted:
            with self.subTest(pattern=pattern):
                self.check(pattern)


if __name__ == "__main__":
    unittest.main()

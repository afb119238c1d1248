"""--baseline REPORT: deltas, the paired exact test on flipped items, regression and slice gates."""
import json
import math
import sys
import unittest
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import score_eval  # noqa: E402
from tests.test_score_eval import TempDir, gold_row, trace_row, write_jsonl, run_cli  # noqa: E402

GATES = """[baseline]
pass_rate = { min = 0.0 }

[regression]
alpha = 0.05
no_regression_slices = [%s]
slice_metrics = ["pass_rate"]
slice_max_drop = 0.0

[regression.max_drop]
pass_rate = 0.02
"""


def exact_p(worse, better):
    """Independent: two-sided sign test with Fractions, 2 * P(X <= min) for X ~ Bin(n, 1/2)."""
    n = worse + better
    if n == 0:
        return 1.0
    tail = sum(Fraction(math.comb(n, i), 2 ** n) for i in range(min(worse, better) + 1))
    return float(min(Fraction(1), 2 * tail))


class PairedTest(unittest.TestCase):
    def test_exact_values(self):
        cases = [((0, 0), 1.0), ((5, 0), 2 / 2 ** 5), ((0, 5), 2 / 2 ** 5), ((3, 1), 2 * (1 + 4) / 2 ** 4),
                 ((6, 0), 2 / 2 ** 6), ((1, 1), 1.0), ((10, 2), 2 * (1 + 12 + 66) / 2 ** 12)]
        for (w, b), want in cases:
            with self.subTest(worse=w, better=b):
                self.assertAlmostEqual(score_eval.exact_paired_p(w, b), want, places=12)

    def test_large_n_log_space_matches_fractions(self):
        for w, b in ((700, 640), (1100, 1000), (600, 601)):
            with self.subTest(worse=w, better=b):
                self.assertAlmostEqual(score_eval.exact_paired_p(w, b), exact_p(w, b), places=9)


class Baseline(TempDir):
    """20 answerable items: 10 'conflict', 10 'other'; the baseline passes all of them."""

    def setUp(self):
        super().setUp()
        self.gold = [gold_row("C%d" % i, True, ["alpha"], ["c"], category="conflict") for i in range(10)] + \
                    [gold_row("O%d" % i, True, ["alpha"], ["c"], category="other") for i in range(10)]
        write_jsonl(self.dir / "gold.jsonl", self.gold)
        self.base = self.report([], "base.json")

    def report(self, failing, name, slices='"conflict"'):
        (self.dir / "gates.toml").write_text(GATES % slices)
        trace = [trace_row(g["qid"], "not in context" if g["qid"] in failing else "alpha", ["c"], ["c"])
                 for g in self.gold]
        write_jsonl(self.dir / "trace.jsonl", trace)
        argv = ["--gold", "gold.jsonl", "--trace", "trace.jsonl", "--out", name, "--full"]
        if name != "base.json":
            argv += ["--baseline", "base.json"]
        return run_cli(argv, cwd=self.dir)

    def gate(self, rep, name):
        return [g for g in rep["gate_results"] if g["gate"] == name][0]

    def test_significant_drop_fails(self):
        code, rep, err = self.report(["O%d" % i for i in range(6)], "cand.json")
        self.assertEqual(code, 1)
        g = self.gate(rep, "regression:pass_rate")
        self.assertEqual((g["kind"], g["worse"], g["better"]), ("regression", 6, 0))
        self.assertAlmostEqual(g["value"], 6 / 20)
        self.assertAlmostEqual(g["p_value"], round(2 / 2 ** 6, 4))
        self.assertFalse(g["pass"])
        self.assertIn("pass_rate worsened by 0.3 (> 0.02) and the paired exact test gives p = 0.0312 < 0.05",
                      g["reason"])
        reg = rep["regression"]
        self.assertEqual(reg["matched_items"], 20)
        self.assertAlmostEqual(reg["metrics"]["pass_rate"]["delta"], -6 / 20)
        self.assertAlmostEqual(reg["categories"]["other"]["pass_rate"]["delta"], -6 / 10)
        self.assertEqual(reg["categories"]["conflict"]["pass_rate"]["delta"], 0.0)
        self.assertTrue(self.gate(rep, "slice:conflict:pass_rate")["pass"])

    def test_drop_not_significant_passes(self):
        code, rep, _ = self.report(["O%d" % i for i in range(4)], "cand.json")   # p = 2/16
        g = self.gate(rep, "regression:pass_rate")
        self.assertAlmostEqual(g["p_value"], 2 / 2 ** 4)
        self.assertTrue(g["pass"])
        self.assertEqual(code, 0)

    def test_slice_must_not_regress(self):
        code, rep, _ = self.report(["C0"], "cand.json")
        g = self.gate(rep, "slice:conflict:pass_rate")
        self.assertFalse(g["pass"])
        self.assertAlmostEqual(g["value"], 1 / 10)
        self.assertEqual(g["reason"], "pass_rate on slice 'conflict' worsened by 0.1 (allowed 0)")
        self.assertTrue(self.gate(rep, "regression:pass_rate")["pass"])        # 1 flip: p = 1.0
        self.assertEqual(code, 1)

    def test_unchanged_slice_with_a_repeating_decimal_passes(self):
        # pass_rate 2/3 in both runs: the baseline report holds 0.6667, this run 0.666...;
        # an unchanged slice must not count as a drop of 0.0000333.
        self.gold = [gold_row("T%d" % i, True, ["alpha"], ["c"], category="third") for i in range(3)]
        write_jsonl(self.dir / "gold.jsonl", self.gold)
        self.base = self.report(["T0"], "base.json", slices='"third"')
        code, rep, _ = self.report(["T0"], "cand.json", slices='"third"')
        g = self.gate(rep, "slice:third:pass_rate")
        self.assertEqual((g["pass"], g["value"]), (True, 0.0))
        self.assertEqual(code, 0)

    def test_missing_slice_fails(self):
        code, rep, _ = self.report([], "cand.json", slices='"conflict", "stale"')
        g = self.gate(rep, "slice:stale:pass_rate")
        self.assertEqual((g["pass"], g["reason"]), (False, "slice 'stale' is in neither this run nor the baseline"))
        self.assertEqual(code, 1)

    def test_no_baseline_no_regression_gates(self):
        code, rep, _ = self.report(["O%d" % i for i in range(6)], "base.json")
        self.assertEqual([g["kind"] for g in rep["gate_results"]], ["threshold"])
        self.assertIsNone(rep["regression"])

    def test_bad_baseline(self):
        (self.dir / "bad.json").write_text(json.dumps({"metrics": {}}))
        code, rep, err = run_cli(["--gold", "gold.jsonl", "--trace", "trace.jsonl", "--baseline", "bad.json"],
                                 cwd=self.dir)
        self.assertEqual((code, rep), (2, None))
        self.assertEqual(err.strip().splitlines()[-1], 'bad.json: not a score_eval report (needs "metrics" and "items"), got keys ["metrics"]')
        (self.dir / "bad.json").write_text("nope")
        code, _, err = run_cli(["--gold", "gold.jsonl", "--trace", "trace.jsonl", "--baseline", "bad.json"],
                               cwd=self.dir)
        self.assertEqual(code, 2)
        self.assertIn("bad.json: baseline report is not JSON", err)


if __name__ == "__main__":
    unittest.main()

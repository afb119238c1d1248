"""Paired significance tests for IR --baseline (issue 31 item 8): Student's paired t-test and
the randomization (sign-flip) test, by hand and against scipy (skips without it)."""
import json
import os
import random
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import score_eval  # noqa: E402
from tests.test_score_eval import run_cli  # noqa: E402
from tests.test_score_eval_reports import peer_python, run_peer  # noqa: E402

DATA = ROOT / "tests" / "data" / "trec_eval_test"


class ByHand(unittest.TestCase):
    def test_t_test(self):
        # diffs 1, 2, 3: mean 2, sd 1, t = 2 / (1 / sqrt 3) = 2 sqrt 3; df 2: p = 1 - t / sqrt(t^2 + 2)
        t, p = score_eval.paired_t([1.0, 2.0, 3.0])
        self.assertAlmostEqual(t, 2 * 3 ** 0.5, places=12)
        self.assertAlmostEqual(p, 1 - t / (t * t + 2) ** 0.5, places=10)     # Student t, 2 df, closed form
        # one pair: undefined; all zero: no difference
        self.assertEqual(score_eval.paired_t([0.5]), (None, None))
        self.assertEqual(score_eval.paired_t([0.0, 0.0, 0.0]), (0.0, 1.0))
        # 1 df: p = 1 - 2 atan(|t|) / pi (Cauchy)
        import math
        t, p = score_eval.paired_t([1.0, 3.0])
        self.assertAlmostEqual(p, 1 - 2 * math.atan(abs(t)) / math.pi, places=10)

    def test_randomization_exact(self):
        # 8 sign patterns of (1, 2, 3): |sum| >= 6 only for +++ and ---
        self.assertEqual(score_eval.randomization_p([1.0, 2.0, 3.0]), 2 / 8)
        # (1, -1): sums 0, 2, -2, 0; observed 0: every pattern is at least as extreme
        self.assertEqual(score_eval.randomization_p([1.0, -1.0]), 1.0)
        self.assertIsNone(score_eval.randomization_p([]))

    def test_randomization_sampled_is_deterministic(self):
        diffs = [((i * 37) % 11 - 4) / 10.0 for i in range(40)]
        self.assertEqual(score_eval.randomization_p(diffs), score_eval.randomization_p(list(diffs)))

    def test_ir_baseline_report(self):
        with tempfile.TemporaryDirectory() as tmp:
            base = Path(tmp) / "base.json"
            code, _, err = run_cli(["--qrels", DATA / "qrels.test", "--run", DATA / "results.trunc", "--gates", "none",
                                    "-m", "map", "--out", base], cwd=tmp)
            self.assertEqual(code, 0, err)
            code, rep, err = run_cli(["--qrels", DATA / "qrels.test", "--run", DATA / "results.test", "--gates", "none",
                                      "-m", "map", "--baseline", base, "--full"], cwd=tmp)
            self.assertEqual(code, 0, err)
            sig = rep["regression"]["significance"]["map"]
            # trec_eval's own per-topic AP (out.test.aq vs out.test.aqc): 301 same, 302 +0.4175, 303 -0.1865
            self.assertEqual(sig["n"], 3)
            self.assertAlmostEqual(sig["mean_delta"], (0.0 + 0.4175 - 0.1865) / 3, delta=0.0002)
            self.assertEqual(sig["p_randomization"], 1.0)


class AgainstScipy(unittest.TestCase):
    def test_random_pairs(self):
        exe = peer_python("scipy")
        if exe is None:
            self.skipTest("scipy not importable (python3 -m venv runs/.peers && runs/.peers/bin/pip install scipy)")
        rng = random.Random(31)
        cases = []
        for n in (2, 3, 5, 8, 12, 30, 200):
            a = [rng.random() for _ in range(n)]
            b = [min(1.0, max(0.0, x + rng.gauss(0.03, 0.2))) for x in a]
            cases.append([x - y for x, y in zip(b, a)])
        code = ("import json, sys\nimport numpy as np\nfrom scipy import stats\nout = []\n"
                "for d in json.load(sys.stdin):\n"
                "    r = stats.ttest_rel(np.array(d), np.zeros(len(d)))\n"
                "    ex = None\n"
                "    if len(d) <= 12:\n"
                "        ex = stats.permutation_test((np.array(d),), lambda x, axis: np.mean(x, axis=axis),\n"
                "                 permutation_type='samples', n_resamples=10**6, alternative='two-sided').pvalue\n"
                "    out.append([float(r.statistic), float(r.pvalue), None if ex is None else float(ex)])\n"
                "print(json.dumps(out))\n")
        want = run_peer(exe, code, cases)
        for diffs, (t, p, exact) in zip(cases, want):
            with self.subTest(n=len(diffs)):
                got_t, got_p = score_eval.paired_t(diffs)
                self.assertAlmostEqual(got_t, t, places=9)
                self.assertAlmostEqual(got_p, p, places=9)
                if exact is not None:
                    self.assertAlmostEqual(score_eval.randomization_p(diffs), exact, places=9)


if __name__ == "__main__":
    unittest.main()

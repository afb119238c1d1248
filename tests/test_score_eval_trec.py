"""--qrels/--run reproduce trec_eval's own expected outputs (tests/data/trec_eval_test).

Every value of P_k, recall_k, ndcg_cut_k, success_k and recip_rank in out.test, out.test.aq
(per topic and all), out.test.aqc (-c, truncated run), out.test.meas_params and
out.test.a is compared to 4 decimals.  Skips when the data directory is absent.
"""
import json
import os
import re
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.test_score_eval import run_cli  # noqa: E402

DATA = ROOT / "tests" / "data" / "trec_eval_test"    # vendored with its licence note (SOURCE.md)
OURS = {"P": "P@{}", "recall": "R@{}", "ndcg_cut": "nDCG@{}", "success": "Success@{}"}


def expected(path):
    """{(measure name in our registry, topic): value} for the measures we implement."""
    out = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) != 3:
            continue
        measure, topic, value = parts
        if measure == "recip_rank":
            out[("RR", topic)] = float(value)
            continue
        m = re.fullmatch(r"(P|recall|ndcg_cut|success)_(\d+)", measure)
        if m:
            out[(OURS[m.group(1)].format(m.group(2)), topic)] = float(value)
    return out


class TrecEvalGolden(unittest.TestCase):
    def setUp(self):
        self.dir = Path(tempfile.mkdtemp(prefix="score_eval_trec_"))
        self.addCleanup(shutil.rmtree, self.dir, True)

    def ours(self, run, ks):
        items = self.dir / "items.jsonl"
        code, rep, err = run_cli(["--qrels", DATA / "qrels.test", "--run", DATA / run, "--k", ",".join(map(str, ks)),
                                  "--gates", "RR=0", "--items", items])
        self.assertEqual(code, 0, err)
        got = {(name, "all"): e["value"] for name, e in rep["metrics"].items()}
        for line in items.read_text().splitlines():
            row = json.loads(line)
            for name, value in (row["retrieval"] or {}).items():
                got[(name, row["qid"])] = value
        return got, rep

    def compare(self, run, out_file):
        want = expected(DATA / out_file)
        self.assertGreaterEqual(len(want), 10)
        ks = sorted({int(n.split("@")[1]) for n, _ in want if "@" in n})
        got, rep = self.ours(run, ks)
        for key, value in sorted(want.items()):
            with self.subTest(file=out_file, measure=key[0], topic=key[1]):
                self.assertIn(key, got)
                self.assertAlmostEqual(got[key], value, places=4)
        return rep

    def test_out_test(self):
        self.compare("results.test", "out.test")

    def test_out_test_a(self):
        self.compare("results.test", "out.test.a")

    def test_out_test_aq_per_topic(self):
        self.compare("results.test", "out.test.aq")

    def test_out_test_aqc_missing_topic_scores_zero(self):
        rep = self.compare("results.trunc", "out.test.aqc")
        self.assertEqual(rep["counts"]["missing_traces"], 1)   # topic 302 is not in the truncated run

    def test_out_test_meas_params(self):
        self.compare("results.test", "out.test.meas_params")

    def test_bad_trec_lines(self):
        qrels = self.dir / "q"
        run = self.dir / "r"
        cases = [
            ("301 0 D1\n", "1 Q0 D1 1 2.0 x\n", "q:1: qrels line needs 4 fields (topic iter docno rel), got '301 0 D1'"),
            ("301 0 D1 yes\n", "1 Q0 D1 1 2.0 x\n", "q:1: relevance must be an integer, got 'yes'"),
            ("301 0 D1 1\n", "301 Q0 D1 1 high x\n", "r:1: score must be a number, got 'high'"),
            ("301 0 D1 1\n", "301 Q0 D1 1 1.0 x\n301 Q0 D1 2 0.5 x\n", "r:2: duplicate docno for topic 301, got 'D1'"),
            ("301 0 D1 1\n", "301 Q0 D1\n", "r:1: run line needs 6 fields (topic Q0 docno rank score tag), got '301 Q0 D1'"),
        ]
        for q, r, message in cases:
            with self.subTest(message=message):
                qrels.write_text(q)
                run.write_text(r)
                code, rep, err = run_cli(["--qrels", "q", "--run", "r", "--gates", "RR=0"], cwd=self.dir)
                self.assertEqual((code, rep), (2, None))
                self.assertEqual(err.strip(), message)


if __name__ == "__main__":
    unittest.main()

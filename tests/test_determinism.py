"""Determinism (issue 4 item 7): byte-identical traces and eval reports whatever PYTHONHASHSEED.

Two subprocesses per check, with different hash seeds, on the fixture corpus and gold.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "guards")
SEEDS = ("0", "12345")


def run(args, seed):
    env = dict(os.environ, PYTHONHASHSEED=seed)
    return subprocess.run([sys.executable, "-m", "mini_rag"] + args, cwd=ROOT, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def read(path):
    with open(path, "rb") as fh:
        return fh.read()


class Determinism(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mini_rag_det_")
        self.config = os.path.join(self.tmp, "config.toml")
        with open(self.config, "w", encoding="utf-8") as fh:
            fh.write('[corpus]\npath = "%s"\n[index]\npath = "%s"\n'
                     % (os.path.join(FIX, "corpus"), os.path.join(self.tmp, "index.json.gz")))

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_run_traces_identical(self):
        outputs = []
        for seed in SEEDS:
            out = os.path.join(self.tmp, "trace.%s.jsonl" % seed)
            # a fresh index per run, so index building is covered too
            if os.path.exists(os.path.join(self.tmp, "index.json.gz")):
                os.remove(os.path.join(self.tmp, "index.json.gz"))
            p = run(["run", "--gold", os.path.join(FIX, "gold.jsonl"), "--out", out, "--config", self.config], seed)
            self.assertEqual(p.returncode, 0, p.stderr)
            outputs.append(read(out))
        self.assertEqual(outputs[0], outputs[1])
        self.assertGreater(len(outputs[0]), 1000)

    @unittest.skipUnless(os.path.isfile(os.path.join(ROOT, "score_eval.py")), "score_eval.py not present yet")
    def test_eval_reports_identical(self):
        runs = os.path.join(self.tmp, "runs")
        seen = []
        for seed in SEEDS:
            p = run(["eval", "--config", self.config, "--runs", runs, "--gold", os.path.join(FIX, "gold.jsonl"),
                     "--perturb", os.path.join(FIX, "gold_perturb.jsonl"),
                     "--gates", os.path.join(FIX, "gates.toml")], seed)
            self.assertIn(p.returncode, (0, 1), p.stderr)
            seen.append((p.stdout, read(os.path.join(runs, "report.json")), read(os.path.join(runs, "report.md")),
                         read(os.path.join(runs, "trace.perturb.jsonl"))))
        self.assertEqual(seen[0], seen[1])


if __name__ == "__main__":
    unittest.main()

"""SIGKILL at random moments: every output is the old file or the new one, never half of
one, and the next run leaves no temp file behind (issue 18).

The scorer (report, items and Markdown) and ``index`` are each killed at 20 moments drawn
from a seeded generator over their measured run time.  Two runs with different inputs give
two known versions of every output; after each kill every output must equal one of them.
"""
import glob
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from tests.lanes import once_per_ci  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KILLS = 20
SEED = 18


def _read(path):
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        return None


@once_per_ci
@unittest.skipUnless(hasattr(signal, "SIGKILL"), "needs SIGKILL")
class KillAtRandomMoments(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="kill_")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def run_once(self, argv):
        t0 = time.monotonic()
        proc = subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.assertIn(proc.returncode, (0, 1), proc.stderr.decode("utf-8", "replace"))
        return time.monotonic() - t0

    def kill_during(self, argv, after):
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(after)
        proc.send_signal(signal.SIGKILL)
        proc.wait()

    def check(self, versions, outputs, argvs, seconds, manifest=None):
        rng = random.Random(SEED)
        for n in range(KILLS):
            which = rng.randrange(2)
            self.kill_during(argvs[which], rng.uniform(0, seconds))
            for path in outputs:
                with self.subTest(kill=n, output=os.path.basename(path)):
                    self.assertIn(_read(path), versions[path], "torn or missing output")
            if manifest and os.path.exists(manifest):    # a manifest vouches for a complete set
                with open(manifest, encoding="utf-8") as fh:
                    hashes = json.load(fh)["sha256"]
                self.assertEqual(sorted(hashes), sorted(os.path.basename(p) for p in outputs))
                for path in outputs:
                    self.assertEqual(hashlib.sha256(_read(path)).hexdigest(), hashes[os.path.basename(path)])
        self.run_once(argvs[0])           # the next run sweeps what the killed ones left
        self.assertEqual(glob.glob(os.path.join(self.dir, ".*.ragtmp")), [])
        for path in outputs:
            self.assertEqual(_read(path), versions[path][0])

    def test_scorer(self):
        gold = os.path.join(self.dir, "gold.jsonl")
        trace = os.path.join(self.dir, "trace.jsonl")
        with open(gold, "w", encoding="utf-8") as g, open(trace, "w", encoding="utf-8") as t:
            for i in range(1500):
                qid = "Q%d" % i
                g.write(json.dumps({"qid": qid, "answerable": i % 3 > 0, "gold_claim_substr": ["claim %d" % i],
                                    "gold_citations": ["d%d#p1" % i], "category": "c%d" % (i % 7)}) + "\n")
                t.write(json.dumps({"qid": qid, "retrieved_ids": ["d%d#p1" % i, "x#p1"],
                                    "answer_json": {"claim": "the claim %d" % i if i % 5 else "not in context",
                                                    "citations": ["d%d#p1" % i]}}) + "\n")
        outputs = [os.path.join(self.dir, n) for n in ("report.json", "items.jsonl", "report.md")]
        manifest = os.path.join(self.dir, "manifest.json")
        argvs = [[sys.executable, os.path.join(ROOT, "score_eval.py"), "--gold", gold, "--trace", trace,
                  "--gates", "precision=0.5", "--k", k, "--out", outputs[0], "--items", outputs[1],
                  "--markdown", outputs[2], "--manifest", manifest] for k in ("5", "1,5")]
        seconds = max(self.run_once(argvs[1]), 0.05)
        versions = {p: [] for p in outputs}
        for argv in (argvs[1], argvs[0]):
            self.run_once(argv)
            for p in outputs:
                versions[p].insert(0, _read(p))
        self.assertNotEqual(versions[outputs[0]][0], versions[outputs[0]][1])
        self.check(versions, outputs, argvs, seconds, manifest)
        self.assertTrue(os.path.exists(manifest))

    def test_index(self):
        index = os.path.join(self.dir, "index.json.gz")
        corpora = [os.path.join(ROOT, "tests", "fixtures", "corpus"),
                   os.path.join(ROOT, "tests", "fixtures", "gold", "corpus")]
        argvs = [[sys.executable, "-m", "mini_rag", "index", "--force", "--corpus", c, "--index", index]
                 for c in corpora]
        seconds = max(self.run_once(argvs[1]), 0.05)
        versions = {index: []}
        for argv in (argvs[1], argvs[0]):
            self.run_once(argv)
            versions[index].insert(0, _read(index))
        self.assertNotEqual(versions[index][0], versions[index][1])
        self.check(versions, [index], argvs, seconds)


if __name__ == "__main__":
    unittest.main()

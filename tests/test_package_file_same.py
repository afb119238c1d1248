"""The package and the one file are the same scorer (issue 40): ``python3 -m referee`` and
``python3 score_eval.py`` on the same inputs write the same bytes, every output (JSON, Markdown,
HTML, JUnit, CSV, metrics CSV, items), the same stdout, stderr and exit status; a shard run
(--partial) writes the same partial, and ``merge`` of those partials the same report.

Each command runs in a fresh folder of its own with the same relative output names, so the paths
the report names are the same for both.  The inputs are committed (examples/seed, examples/llm,
trec_eval's test files), and gold/ with mini_rag's trace of it: ``make eval``'s
runs/trace.baseline.jsonl when it is there, else one the test writes with ``mini_rag eval`` into
a temporary folder (CI runs the tests before ``make eval``, so the case never skips)."""
import base64
import json
import os
import subprocess
import sys
import tempfile
import unittest
from array import array

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FILE = os.path.join(ROOT, "score_eval.py")
SEED = os.path.join(ROOT, "examples", "seed")
LLM = os.path.join(ROOT, "examples", "llm")
TREC = os.path.join(ROOT, "tests", "data", "trec_eval_test")
GATES = os.path.join(ROOT, "gates.toml")
ALL_OUTPUTS = ["--out", "report.json", "--markdown", "report.md", "--html", "report.html",
               "--junit", "junit.xml", "--junit-items", "--csv", "items.csv", "--metrics-csv", "metrics.csv",
               "--items", "items.jsonl"]


def _run(which: str, argv, cwd: str):
    """(exit status, stdout, stderr) of the package (``which`` = "package") or the file."""
    env = dict(os.environ, PYTHONPATH=ROOT, PYTHONHASHSEED="0")
    head = [sys.executable, "-m", "referee"] if which == "package" else [sys.executable, FILE]
    p = subprocess.run(head + list(argv), cwd=cwd, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=300)
    return p.returncode, p.stdout, p.stderr


def _eval_trace(tmp: str) -> str:
    """mini_rag's trace of gold/gold.jsonl, written by ``mini_rag eval`` under ``tmp``."""
    env = dict(os.environ, PYTHONPATH=ROOT, PYTHONHASHSEED="0")
    p = subprocess.run([sys.executable, "-m", "mini_rag", "eval", "--out-dir", tmp, "--index",
                        os.path.join(tmp, "index.json.gz"), "--perturb", "none", "--quiet"],
                       cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    assert p.returncode in (0, 1), p.stderr.decode("utf-8", "replace")[-2000:]
    return os.path.join(tmp, "trace.baseline.jsonl")


def _files(folder: str) -> dict:
    out = {}
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as fh:
            out[name] = fh.read()
    return out


def _unpack_calls(doc: dict) -> list:
    arr = array(doc["calls"]["type"])
    arr.frombytes(base64.b64decode(doc["calls"]["data"]))
    return list(arr)


def _qids(path: str) -> list:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line)["qid"] for line in fh if line.strip()]


class PackageAndFile(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def folder(self, name: str) -> str:
        path = os.path.join(self.tmp.name, name)
        os.makedirs(path, exist_ok=True)
        return path

    def both(self, argv, tag: str, steps=()):
        """Run ``steps`` (earlier commands, e.g. shard runs) then ``argv`` with the package and
        with the file, each in its own folder; assert every byte is the same; return the
        package's (exit status, files)."""
        seen = {}
        for which in ("package", "file"):
            cwd = self.folder("%s-%s" % (tag, which))
            results = [_run(which, step, cwd) for step in steps] + [_run(which, argv, cwd)]
            seen[which] = (results, _files(cwd))
        (p_results, p_files), (f_results, f_files) = seen["package"], seen["file"]
        self.assertEqual(sorted(p_files), sorted(f_files))
        for name in p_files:
            with self.subTest(tag=tag, output=name):
                self.assertTrue(p_files[name] == f_files[name], "%s differs between package and file" % name)
        for i, (p, f) in enumerate(zip(p_results, f_results)):
            with self.subTest(tag=tag, command=i):
                self.assertEqual(p[0], f[0], "exit status: %s" % p[2][-2000:])
                self.assertTrue(p[1] == f[1], "stdout differs")
                self.assertEqual(p[2].decode("utf-8"), f[2].decode("utf-8"))
        return p_results[-1][0], p_files

    def test_every_output_of_examples_seed(self):
        code, files = self.both(["--gold", os.path.join(SEED, "gold.jsonl"), "--trace", os.path.join(SEED, "trace.jsonl"),
                                 "--chunks", os.path.join(SEED, "chunks.jsonl"), "--gates-file", GATES,
                                 "--dataset", "seed"] + ALL_OUTPUTS, "seed")
        self.assertEqual(code, 0)
        self.assertEqual(len(files), 7)
        report = json.loads(files["report.json"])
        self.assertEqual(report["counts"]["gold_items"], len(_qids(os.path.join(SEED, "gold.jsonl"))))

    def test_every_output_of_examples_llm(self):
        code, files = self.both(["--gold", os.path.join(LLM, "gold.jsonl"), "--trace", os.path.join(LLM, "trace.jsonl"),
                                 "--chunks", os.path.join(LLM, "chunks.jsonl"), "--gates-file",
                                 os.path.join(LLM, "gates.toml"), "--dataset", "llm", "--k", "1,5"] + ALL_OUTPUTS, "llm")
        self.assertIn(code, (0, 1))
        self.assertEqual(len(files), 7)

    def test_every_output_of_the_eval_trace(self):
        trace = os.path.join(ROOT, "runs", "trace.baseline.jsonl")
        with tempfile.TemporaryDirectory() as tmp:
            if not os.path.exists(trace):
                trace = _eval_trace(tmp)
            self._eval_trace_same(trace)

    def _eval_trace_same(self, trace):
        code, files = self.both(["--gold", os.path.join(ROOT, "gold", "gold.jsonl"), "--trace", trace,
                                 "--gates-file", GATES, "--dataset", "baseline", "--k", "1,3,5,10"] + ALL_OUTPUTS, "eval")
        self.assertEqual(len(files), 7)
        self.assertEqual(json.loads(files["report.json"])["counts"]["gold_items"],
                         len(_qids(os.path.join(ROOT, "gold", "gold.jsonl"))))

    def test_partial_is_the_same_and_records_the_rows(self):
        """A shard run through the package records its rows exactly as the file does (the
        recording Scorer is passed to run, not swapped in one module's globals)."""
        gold, trace = os.path.join(SEED, "gold.jsonl"), os.path.join(SEED, "trace.jsonl")
        code, files = self.both(["--gold", gold, "--trace", trace, "--gates", "none", "--partial", "p.json"], "partial")
        self.assertEqual(code, 0)
        doc = json.loads(files["p.json"])
        gold_qids = _qids(gold)
        # the rows' items in row order, as positions in the gold file (derived from the inputs here)
        self.assertEqual(_unpack_calls(doc), [gold_qids.index(q) for q in _qids(trace) if q in gold_qids])
        self.assertEqual(doc["stats"]["rows"], len(_qids(trace)))

    def test_partial_to_stdout_and_trec_partial(self):
        self.both(["--gold", os.path.join(LLM, "gold.jsonl"), "--trace", os.path.join(LLM, "trace.jsonl"),
                   "--gates", "none", "--partial", "-"], "partial-stdout")
        code, files = self.both(["--qrels", os.path.join(TREC, "qrels.test"), "--run", os.path.join(TREC, "results.test"),
                                 "--gates", "none", "--partial", "p.json"], "partial-trec")
        self.assertEqual(code, 0)
        self.assertTrue(_unpack_calls(json.loads(files["p.json"])))

    def test_merge_of_shards_is_the_same(self):
        """Two shards of examples/llm's trace, each run with --partial, then merged: the same
        partials and the same report, items and Markdown from the package and the file."""
        with open(os.path.join(LLM, "trace.jsonl"), encoding="utf-8") as fh:
            lines = fh.readlines()
        shards = []
        for j, part in enumerate((lines[:3], lines[3:])):
            shards.append(os.path.join(self.tmp.name, "shard%d.jsonl" % j))
            with open(shards[-1], "w", encoding="utf-8") as fh:
                fh.writelines(part)
        gold = os.path.join(LLM, "gold.jsonl")
        steps = [["--gold", gold, "--trace", s, "--k", "1,5", "--gates", "none", "--partial", "p%d.json" % j]
                 for j, s in enumerate(shards)]
        code, files = self.both(["merge", "p0.json", "p1.json", "--trace", os.path.join(LLM, "trace.jsonl"),
                                 "--gates", "none", "--out", "report.json", "--items", "items.jsonl",
                                 "--markdown", "report.md"], "merge", steps)
        self.assertEqual(code, 0)
        self.assertEqual(json.loads(files["report.json"])["counts"]["trace_rows"], len(lines))


if __name__ == "__main__":
    unittest.main()

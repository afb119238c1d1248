"""Issue 42, the scorer's side: nothing to score is an input error, a rate threshold outside
[0, 1] is a typo, and the scorer never replaces another command's output without --force.

Each test is a table; the expected outcome (exit status, what the message names, which file
must stay unchanged) follows from the rule the issue states.
"""
import contextlib
import hashlib
import io
import json
import os
import shutil
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import score_eval  # noqa: E402

TREC = os.path.join(ROOT, "tests", "data", "trec_eval_test")
GOLD = [{"qid": q, "question": "q " + q, "answerable": True, "gold_claim_substr": ["within 30 days"],
         "gold_citations": ["d#p1"]} for q in ("Q1", "Q2")]
ROW = {"qid": "Q1", "retrieved_ids": ["d#p1"], "retrieved_scores": [1.0],
       "answer_json": {"claim": "within 30 days", "citations": ["d#p1"]}}


def sha(path):
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="issue42_")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.gold = self.write("gold.jsonl", "".join(json.dumps(g) + "\n" for g in GOLD))

    def path(self, *names):
        return os.path.join(self.dir, *names)

    def write(self, name, text):
        p = self.path(name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w", encoding="utf-8") as fh:
            fh.write(text)
        return p

    def main(self, argv):
        out, err = io.StringIO(), io.StringIO()
        old = os.getcwd()
        os.chdir(self.dir)                     # no gates.toml here: only the gates the case gives
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = score_eval.main([str(a) for a in argv])
        finally:
            os.chdir(old)
        return code, out.getvalue(), err.getvalue()


class NothingToScore(Base):
    GATES = (["--gates", "none"], [], ["--gates", "precision=0.1"], ["--gates-file", "G"])

    def test_empty_or_unmatched_trace_is_exit_2_whatever_the_gates(self):
        gates = self.write("g.toml", "[baseline]\nprecision = { min = 0.0 }\n")
        table = [  # (trace content, start of the one stderr line)
            ("", "trace.jsonl: the trace is empty (0 rows): nothing to score against "),
            ("\n\n", "trace.jsonl: the trace is empty (0 rows)"),
            (json.dumps(dict(ROW, qid="Z9")) + "\n" + json.dumps(dict(ROW, qid="Z8")) + "\n",
             "trace.jsonl: no row names a gold qid of %s (2 rows; theirs e.g. \"Z9\", \"Z8\"; the gold qids are e.g. "
             "\"Q1\", \"Q2\"): wrong file?" % self.gold),
        ]
        for content, message in table:
            trace = self.write("trace.jsonl", content)
            for flags in self.GATES:
                flags = [gates if f == "G" else f for f in flags]
                with self.subTest(content=content[:20], gates=flags):
                    code, out, err = self.main(["--gold", self.gold, "--trace", "trace.jsonl", "--quiet"] + flags)
                    self.assertEqual((code, out), (2, ""))
                    lines = err.strip().splitlines()
                    self.assertEqual(len(lines), 1, err)
                    self.assertTrue(lines[0].startswith(message), lines[0])
        # one row matching one gold qid: scored (the other item counts as missing), not an error
        self.write("trace.jsonl", json.dumps(ROW) + "\n")
        code, _, err = self.main(["--gold", self.gold, "--trace", "trace.jsonl", "--gates", "none", "--quiet"])
        self.assertEqual(code, 0, err)

    def test_trec_run_empty_or_unmatched_is_exit_2(self):
        qrels = os.path.join(TREC, "qrels.test")
        for content, message in (("", "run.txt: the run is empty (0 lines): nothing to score against "),
                                 ("999 Q0 d1 1 1.0 t\n", "run.txt: no line names a qrels topic of %s (1 lines; "
                                                         "theirs e.g. \"999\"; the qrels topics are e.g. \"301\", \"302\", "
                                                         "\"303\"): wrong file?" % qrels)):
            self.write("run.txt", content)
            for flags in (["--gates", "none"], ["--gates", "map=0.1"], ["--average", "judged", "--format", "trec"]):
                with self.subTest(content=content, flags=flags):
                    code, out, err = self.main(["--qrels", qrels, "--run", "run.txt", "--quiet"] + flags)
                    self.assertEqual((code, out), (2, ""))
                    self.assertTrue(err.startswith(message), err)


class RateThresholds(Base):
    def test_gates_file_threshold_outside_0_1(self):
        trace = self.write("trace.jsonl", json.dumps(ROW) + "\n")
        table = [  # (gate line, error or None when accepted)
            ("precision = { min = 8.0 }", "g.toml:2: gate 'precision' min must be from 0 to 1 (precision is a rate), got 8"),
            ("hallucination = { max = -0.1 }", "g.toml:2: gate 'hallucination' max must be from 0 to 1 "
                                               "(hallucination is a rate), got -0.1"),
            ('"nDCG@5" = { min = 1.5 }', "g.toml:2: gate 'nDCG@5' min must be from 0 to 1 (nDCG@K is a value "
                                        "from 0 to 1), got 1.5"),
            ("precision = { min = 1.0 }", None),                 # the bounds themselves are fine
            ("under_refusal = { max = 0 }", None),
            ("cost_per_item = { max = 8.0 }", None),             # a cost, not a rate
            ("latency_p95 = { max = 800 }", None),
            ("fallback_used_count = { max = 3 }", None),
        ]
        for line, error in table:
            with self.subTest(line=line):
                self.write("g.toml", "[baseline]\n%s\n" % line)
                code, _, err = self.main(["--gold", self.gold, "--trace", trace, "--gates-file", "g.toml", "--quiet"])
                if error is None:
                    self.assertIn(code, (0, 1), err)
                else:
                    self.assertEqual((code, err.strip()), (2, error))

    def test_gates_string_and_trec_measures(self):
        trace = self.write("trace.jsonl", json.dumps(ROW) + "\n")
        qrels, run = os.path.join(TREC, "qrels.test"), os.path.join(TREC, "results.test")
        table = [  # (inputs, --gates, error or None)
            ("qa", "precision=8", "--gates: threshold for 'precision' must be from 0 to 1 (precision is a rate), got 8"),
            ("qa", "warn:chr>=1.01", "--gates: threshold for 'chr' must be from 0 to 1 (chr is a rate), got 1.01"),
            ("qa", "precision>=1", None),
            ("ir", "map=2", "--gates: threshold for 'map' must be from 0 to 1 (map is a value from 0 to 1), got 2"),
            ("ir", "ndcg_cut.10>=0.3,utility>=-500,num_ret>=100", None),   # utility and counts are not rates
        ]
        for inputs, gates, error in table:
            with self.subTest(gates=gates):
                argv = ["--gold", self.gold, "--trace", trace] if inputs == "qa" else ["--qrels", qrels, "--run", run]
                code, _, err = self.main(argv + ["--gates", gates, "--quiet"])
                if error is None:
                    self.assertIn(code, (0, 1), err)
                else:
                    self.assertEqual((code, err.strip()), (2, error))


class OtherCommandsOutputs(Base):
    """A folder as make eval leaves it (runs/: its combined report.json, report.md, merged
    report.html, per-dataset reports, manifest.json): the scorer refuses every one of them."""

    def make_eval_folder(self):
        seed = os.path.join(ROOT, "examples", "seed")
        runs = self.path("runs")
        os.makedirs(runs)
        base = ["--gold", os.path.join(seed, "gold.jsonl"), "--trace", os.path.join(seed, "trace.jsonl"),
                "--gates", "none", "--quiet"]
        code, _, err = self.main(base + ["--out", "runs/report.seed.json", "--markdown", "runs/report.seed.md",
                                         "--html", "runs/report.seed.html", "--items", "runs/items.seed.jsonl"])
        self.assertEqual(code, 0, err)
        with open(self.path("runs", "report.seed.json"), encoding="utf-8") as fh:
            report = json.load(fh)
        self.write("runs/report.json", json.dumps({"pass": True, "datasets": {"seed": report}}, indent=2) + "\n")
        self.write("runs/report.md", "# mini_rag eval report\n\n**PASS**\n")
        code, _, err = self.main(["merge-html", "runs/report.html", "runs/report.seed.html"])
        self.assertEqual(code, 0, err)
        files = [self.path("runs", n) for n in ("report.seed.json", "report.seed.md", "report.seed.html",
                                                 "items.seed.jsonl", "report.json", "report.md", "report.html")]
        score_eval.write_manifest(self.path("runs", "manifest.json"), files)
        return base, files

    def test_scorer_refuses_make_evals_files(self):
        base, files = self.make_eval_folder()
        before = {f: sha(f) for f in files}
        eval_cmd = "written by python -m mini_rag eval (make eval); refusing to replace another command's output"
        listed = "is listed in runs/manifest.json, the output set python -m mini_rag eval (make eval) wrote"
        table = [  # (flags, what the message says)
            (["--out", "runs/report.json"], "--out runs/report.json: is a mini_rag eval report, " + eval_cmd),
            (["--markdown", "runs/report.md"], "--markdown runs/report.md: is a mini_rag eval Markdown report, " + eval_cmd),
            (["--html", "runs/report.html"], "--html runs/report.html: is a page of merged score_eval HTML reports, "
                                             "written by score_eval.py merge-html"),
            (["--out", "runs/report.seed.json"], "--out runs/report.seed.json: " + listed),
            (["--items", "runs/items.seed.jsonl"], "--items runs/items.seed.jsonl: " + listed),
            (["--out", "runs/report.json", "--markdown", "runs/report.md", "--html", "runs/report.html"],
             "--out runs/report.json: is a mini_rag eval report"),        # the README's old example
        ]
        for flags, message in table:
            with self.subTest(flags=flags):
                code, out, err = self.main(base + flags)
                self.assertEqual((code, out), (2, ""))
                self.assertTrue(err.startswith(message), err)
                self.assertIn("--force", err)
                self.assertEqual({f: sha(f) for f in files}, before)

    def test_own_folder_force_and_make_evals_own_scorer(self):
        base, files = self.make_eval_folder()
        own = ["--out", "runs/own/report.json", "--markdown", "runs/own/report.md", "--html", "runs/own/report.html"]
        for _ in range(2):                   # a folder of one's own, written twice: fine
            code, _, err = self.main(base + own)
            self.assertEqual(code, 0, err)
        # with its own manifest, twice: the set is rewritten, not refused
        for _ in range(2):
            code, _, err = self.main(base + own + ["--manifest", "runs/own/manifest.json"])
            self.assertEqual(code, 0, err)
        # make eval removes its manifest before its scorer subprocess writes report.<dataset>.*
        os.remove(self.path("runs", "manifest.json"))
        code, _, err = self.main(base + ["--out", "runs/report.seed.json", "--markdown", "runs/report.seed.md",
                                         "--html", "runs/report.seed.html", "--items", "runs/items.seed.jsonl"])
        self.assertEqual(code, 0, err)
        code, _, err = self.main(["merge-html", "runs/report.html", "runs/report.seed.html"])
        self.assertEqual(code, 0, err)
        # --force replaces another command's file
        before = sha(self.path("runs", "report.json"))
        code, _, err = self.main(base + ["--out", "runs/report.json", "--force"])
        self.assertEqual(code, 0, err)
        self.assertNotEqual(sha(self.path("runs", "report.json")), before)


if __name__ == "__main__":
    unittest.main()

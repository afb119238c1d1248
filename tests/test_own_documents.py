"""README "Evaluate your own documents": its three commands, run exactly as written on a
corpus written in 2023 (not gold/), give answers, not "stale" refusals, and report the
as_of they used (issue 19 item 3)."""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

DOCS = {
    "expenses.md": ("expenses", "Travel and Expenses Policy", "2023-02-01",
                    ["Employees must submit expense reports within 45 days of the trip end date.",
                     "Receipts are required for every expense above 25 euros."]),
    "leave.md": ("leave", "Annual Leave Policy", "2023-06-15",
                 ["Full-time employees receive 28 days of paid annual leave per year.",
                  "Up to five unused leave days may be carried over into the next year."]),
    "laptops.md": ("laptops", "Laptop Handbook", "2023-09-30",
                   ["Company laptops are replaced every four years.",
                    "Lost laptops must be reported to the IT service desk within 24 hours."]),
}
GOLD = [
    {"qid": "L1", "question": "How many days of paid annual leave does the leave policy give full-time employees?",
     "answerable": True, "gold_claim_substr": ["28 days"], "gold_citations": ["leave#p1"]},
    {"qid": "E1", "question": "What is the expense policy deadline for submitting expense reports?",
     "answerable": True, "gold_claim_substr": ["within 45 days"], "gold_citations": ["expenses#p1"]},
    {"qid": "T1", "question": "How often are company laptops replaced?",
     "answerable": True, "gold_claim_substr": ["every four years"], "gold_citations": ["laptops#p1"]},
    {"qid": "X1", "question": "What is the company's stock ticker symbol?",
     "answerable": False, "gold_claim_substr": [], "gold_citations": []},
]
NEWEST = "2023-09-30"


def readme_commands():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        text = fh.read()
    section = text.split("## Evaluate your own documents", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [line for line in block.splitlines() if line.strip()]


class OwnDocuments(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="own_docs_")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        os.makedirs(os.path.join(self.tmp, "mydocs"))
        for name, (doc_id, title, date, paragraphs) in DOCS.items():
            with open(os.path.join(self.tmp, "mydocs", name), "w", encoding="utf-8") as fh:
                fh.write("---\ndoc_id: %s\ntitle: %s\neffective: %s\n---\n\n# %s\n\n%s\n"
                         % (doc_id, title, date, title, "\n\n".join(paragraphs)))
        with open(os.path.join(self.tmp, "mygold.jsonl"), "w", encoding="utf-8") as fh:
            fh.write("".join(json.dumps(r) + "\n" for r in GOLD))
        shutil.copy(os.path.join(ROOT, "gates.toml"), self.tmp)     # a clone has it next to mydocs/
        shutil.copytree(os.path.join(ROOT, "configs"), os.path.join(self.tmp, "configs"))

    def run_readme(self, line):
        argv = shlex.split(line)
        self.assertEqual(argv[:3], ["python3", "-m", "mini_rag"])
        env = dict(os.environ, PYTHONPATH=ROOT)
        return subprocess.run([sys.executable] + argv[1:], cwd=self.tmp, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, timeout=300)

    def test_the_three_commands(self):
        commands = readme_commands()
        self.assertEqual([shlex.split(c)[3] for c in commands], ["index", "ask", "eval"])
        index, ask, ev = (self.run_readme(c) for c in commands)
        self.assertEqual(index.returncode, 0, index.stderr)
        self.assertIn("3 documents", index.stdout)
        self.assertIn("corpus-neutral defaults", index.stderr)
        self.assertEqual(ask.returncode, 0, ask.stderr)
        self.assertEqual(ask.stdout.splitlines()[:2], [
            "ANSWER:", "1. Full-time employees receive 28 days of paid annual leave per year. (leave, p1, leave#p1)"])
        self.assertIn("as_of %s: the newest document date in the corpus" % NEWEST, ask.stderr)
        self.assertEqual(ev.returncode, 0, ev.stderr)
        summary = json.loads(ev.stdout)
        self.assertEqual(summary["as_of"], NEWEST)
        self.assertIs(summary["pass"], True)
        self.assertEqual(summary["datasets"]["perturb"]["files"]["gold"],
                         os.path.join("runs", "mydocs", "gold_perturb.generated.jsonl"))
        self.assertIn("perturbation set generated from mygold.jsonl", ev.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "runs", "trace.baseline.jsonl")))
        with open(os.path.join(self.tmp, "runs", "mydocs", "trace.baseline.jsonl"), encoding="utf-8") as fh:
            rows = [json.loads(line) for line in fh]
        decisions = {r["qid"]: r["decision"] for r in rows}
        self.assertEqual(decisions, {"L1": "ANSWER", "E1": "ANSWER", "T1": "ANSWER", "X1": "ABSTAIN"})
        for r in rows:
            self.assertEqual(r["signals"]["as_of"], NEWEST)
            self.assertFalse([x for x in r["reasons"] if "stale" in x], r)

    def test_committed_config_would_refuse_as_stale(self):
        """The contrast: the committed corpus's as_of (2026-11-01) makes these documents stale."""
        line = readme_commands()[1] + " --config configs/default.toml --index runs/committed.json.gz"
        p = self.run_readme(line)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.splitlines()[0], "not in context")
        self.assertIn("As of 2026-11-01", p.stdout)



class ResolveRules(unittest.TestCase):
    """mini_rag.commands.runconfig: which defaults a command gets (in-process, stderr captured)."""

    def resolve(self, *args, **kw):
        import contextlib
        import io
        sys.path.insert(0, ROOT)
        from mini_rag.commands import runconfig
        err = io.StringIO()
        old = os.getcwd()
        os.chdir(ROOT)
        try:
            with contextlib.redirect_stderr(err):
                return runconfig.resolve(*args, **kw), err.getvalue()
        finally:
            os.chdir(old)

    def test_rules(self):
        from mini_rag.config import load_config
        from mini_rag.commands.runconfig import own_index_path
        committed = load_config(os.path.join(ROOT, "configs", "default.toml"))
        cfg, err = self.resolve(None)                                   # make eval: unchanged
        self.assertEqual(cfg, committed)
        self.assertIn("using the config configs/default.toml", err)
        cfg, err = self.resolve(None, "elsewhere")                      # own corpus: neutral
        self.assertEqual((cfg["guards"]["as_of"], cfg["guards"]["freshness_days"], cfg["risk"]["high"]),
                         ("", 0, []))
        self.assertEqual(cfg["index"]["path"], own_index_path("elsewhere"))
        self.assertEqual(cfg["retrieval"], committed["retrieval"])
        self.assertIn("corpus elsewhere: corpus-neutral defaults", err)
        cfg, err = self.resolve("configs/default.toml", "elsewhere", "i.json.gz")   # a config file decides
        self.assertEqual((cfg["guards"]["as_of"], cfg["index"]["path"], cfg["corpus"]["path"]),
                         ("2026-11-01", "i.json.gz", "elsewhere"))
        self.assertEqual(err, "")
        cfg, err = self.resolve(None, "gold/corpus", quiet=True)      # the committed corpus named
        self.assertEqual((cfg, err), (committed, ""))

    def test_as_of_without_dates(self):
        from types import SimpleNamespace as S
        from mini_rag.config import NO_DATE_AS_OF, resolve_as_of
        config = {"guards": {"as_of": ""}}
        self.assertEqual(resolve_as_of(config, S(chunks=[S(effective="")]), quiet=True), NO_DATE_AS_OF)
        config = {"guards": {"as_of": ""}}
        chunks = [S(effective="2023-01-02"), S(effective=""), S(effective="2023-03-04")]
        self.assertEqual(resolve_as_of(config, S(chunks=chunks), quiet=True), "2023-03-04")
        self.assertEqual(resolve_as_of({"guards": {"as_of": "2020-01-01"}}, S(chunks=chunks)), "2020-01-01")


    def test_freshness_window_zero_is_off(self):
        from mini_rag.guard.guards import check_freshness
        cited = [("d#p1", "d", "2023-01-01", {})]
        for window, stale in ((0, False), (730, True), (2000, False)):
            with self.subTest(window=window):
                guards = {"as_of": "2026-11-01", "freshness_days_high_risk": window, "freshness_days": window}
                self.assertIs(check_freshness(cited, "high", guards).stale, stale)
        review = [("d#p1", "d", "2023-01-01", {"review_by": "2024-01-01"})]   # the document's own date still counts
        guards = {"as_of": "2026-11-01", "freshness_days_high_risk": 0, "freshness_days": 0}
        self.assertIs(check_freshness(review, "high", guards).stale, True)


class NoHiddenConfig(unittest.TestCase):
    """Every default file a command reads is named on stderr; --gates none scores without gates."""

    def test_defaults_are_named_and_gates_none(self):
        fix = os.path.join(ROOT, "tests", "fixtures")
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, PYTHONPATH=ROOT)
            shutil.copytree(os.path.join(ROOT, "configs"), os.path.join(tmp, "configs"))
            shutil.copy(os.path.join(ROOT, "gates.toml"), tmp)
            argv = [sys.executable, "-m", "mini_rag", "eval", "--corpus", os.path.join(fix, "corpus"),
                    "--gold", os.path.join(fix, "gold", "gold.jsonl"), "--perturb", "none"]

            def run(*extra):
                return subprocess.run(argv + list(extra), cwd=tmp, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
            p = run()
            self.assertIn(p.returncode, (0, 1), p.stderr)
            self.assertIn("mini_rag: a gold set of your own: using the packaged gates", p.stderr)
            self.assertIn("--perturb none: the perturbation set is skipped", p.stderr)
            self.assertEqual(list(json.loads(p.stdout)["datasets"]), ["baseline"])
            p = run("--gates", "gates.toml")
            self.assertIn(p.returncode, (0, 1), p.stderr)
            with open(os.path.join(tmp, "runs", "corpus", "report.baseline.json"), encoding="utf-8") as fh:
                self.assertEqual(json.load(fh)["inputs"]["gates"], "gates.toml")
            p = run("--gates", "none")
            self.assertEqual(p.returncode, 0, p.stderr)
            short = json.loads(p.stdout)
            self.assertEqual((short["pass"], short["failed_gates"]), (True, []))
            self.assertNotIn("gates.toml", p.stderr)
            with open(os.path.join(tmp, "runs", "corpus", "report.baseline.json"), encoding="utf-8") as fh:
                self.assertEqual(json.load(fh)["gate_results"], [])
            p = subprocess.run([sys.executable, "-m", "mini_rag", "search", "refund", "--k", "1",
                                "--index", os.path.join(tmp, "i.json.gz")], cwd=tmp, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
            self.assertIn("mini_rag: using the config configs/default.toml", p.stderr)


class OwnRuns(unittest.TestCase):
    """Issue 31 item 3: an own-corpus eval writes to runs/<corpus name>/ (never over the
    repository's runs/), is judged by the packaged user gates unless --gates names a file, and
    those gates are score_eval's fallback; `init` writes them."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="own_runs_")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.env = dict(os.environ, PYTHONPATH=ROOT)

    def run_cli(self, *argv):
        return subprocess.run([sys.executable, "-m", "mini_rag"] + list(argv), cwd=self.tmp, env=self.env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=300)

    def test_own_corpus_keeps_its_outputs_apart(self):
        fix = os.path.join(ROOT, "tests", "fixtures")
        os.makedirs(os.path.join(self.tmp, "runs"))
        sentinel = os.path.join(self.tmp, "runs", "trace.baseline.jsonl")
        with open(sentinel, "w", encoding="utf-8") as fh:
            fh.write("the repository's trace\n")
        shutil.copy(os.path.join(ROOT, "gates.toml"), self.tmp)
        p = self.run_cli("eval", "--corpus", os.path.join(fix, "corpus"), "--gold", os.path.join(fix, "gold", "gold.jsonl"),
                         "--perturb", "none")
        self.assertIn(p.returncode, (0, 1), p.stderr)
        with open(sentinel, encoding="utf-8") as fh:
            self.assertEqual(fh.read(), "the repository's trace\n")
        report_path = os.path.join(self.tmp, "runs", "corpus", "report.baseline.json")
        with open(report_path, encoding="utf-8") as fh:
            report = json.load(fh)
        from mini_rag.commands.cmd_init import USER_GATES
        self.assertEqual(report["inputs"]["gates"], USER_GATES)
        self.assertEqual([g["gate"] for g in report["gate_results"]],
                         ["precision", "chr", "under_refusal", "over_refusal"])
        p = self.run_cli("eval", "--corpus", os.path.join(fix, "corpus"), "--gold", os.path.join(fix, "gold", "gold.jsonl"),
                         "--perturb", "none", "--out-dir", "elsewhere", "--quiet")
        self.assertIn(p.returncode, (0, 1), p.stderr)
        self.assertTrue(os.path.isfile(os.path.join(self.tmp, "elsewhere", "report.baseline.json")))

    def test_packaged_gates_are_score_evals_fallback(self):
        sys.path.insert(0, ROOT)
        import score_eval
        from mini_rag.commands.cmd_init import USER_GATES
        _, file_gates, _ = score_eval.load_gates_file(USER_GATES, "baseline")
        fallback, _ = score_eval.parse_gates_string(score_eval.DEFAULT_GATES)
        as_pairs = lambda gates: sorted((g.ref.metric.name, g.op, g.threshold) for g in gates)   # noqa: E731
        self.assertEqual(as_pairs(file_gates), as_pairs(fallback))
        _, perturb, _ = score_eval.load_gates_file(USER_GATES, "perturb")
        self.assertEqual(as_pairs(perturb), as_pairs(fallback))

    def test_init_writes_once(self):
        from mini_rag.commands.cmd_init import USER_GATES
        p = self.run_cli("init")
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(self.tmp, "gates.toml"), encoding="utf-8") as fh, open(USER_GATES, encoding="utf-8") as ref:
            self.assertEqual(fh.read(), ref.read())
        p = self.run_cli("init")
        self.assertEqual((p.returncode, p.stderr), (2, "mini_rag: %s: already exists (--force to overwrite)\n"
                                                    % os.path.join(".", "gates.toml")))
        self.assertEqual(self.run_cli("init", "--force").returncode, 0)


if __name__ == "__main__":
    unittest.main()

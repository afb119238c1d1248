"""The answering commands (mini_rag/commands/cmd_answer.py) as a user runs them: ask, run, eval.

Each test runs ``python -m mini_rag`` in a subprocess against the fixture corpus
tests/fixtures/guards/corpus with a throwaway config and index in a temp folder.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from mini_rag.trace import TRACE_KEYS  # noqa: E402

FIX = os.path.join(ROOT, "tests", "fixtures", "guards")
HAVE_SCORER = os.path.isfile(os.path.join(ROOT, "score_eval.py"))


def write_config(folder, extra=""):
    path = os.path.join(folder, "config.toml")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write('[corpus]\npath = "%s"\n[index]\npath = "%s"\n%s'
                 % (os.path.join(FIX, "corpus"), os.path.join(folder, "index.json.gz"), extra))
    return path


def mini_rag(*args, env=None):
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "mini_rag"] + list(args), cwd=ROOT, env=full_env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)


class CliTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mini_rag_cli_")
        self.config = write_config(self.tmp)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


class Ask(CliTest):
    def test_answer_text_form(self):
        p = mini_rag("ask", "Are promotional purchases refundable?", "--config", self.config)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "ANSWER:\n"
                                   "1. Promotional purchases are non-refundable. "
                                   "(refund-policy, refund-policy#p3)\n"
                                   "CONFIDENCE: High\n")

    def test_refusal_text_form(self):
        p = mini_rag("ask", "Can we store social security numbers in plaintext?", "--config", self.config)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertEqual(len(lines), 2)
        self.assertEqual(lines[0], "not in context")
        self.assertTrue(lines[1].startswith("I can't answer definitively because the retrieved sources conflict."))

    def test_refusal_token_from_config(self):
        config = write_config(self.tmp, '[answer]\nrefusal = "Not found in provided PDFs"\n')
        p = mini_rag("ask", "What is the capital of France?", "--config", config)
        self.assertEqual(p.stdout.splitlines()[0], "Not found in provided PDFs")

    def test_json_is_the_trace_row(self):
        p = mini_rag("ask", "Are promotional purchases refundable?", "--json", "--config", self.config)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.count("\n"), 1)
        row = json.loads(p.stdout)
        self.assertEqual(tuple(row), TRACE_KEYS)
        self.assertEqual(row["answer_json"], {"claim": "Promotional purchases are non-refundable.",
                                              "citations": ["refund-policy#p3"]})

    def test_debug_goes_to_stderr(self):
        plain = mini_rag("ask", "Are promotional purchases refundable?", "--config", self.config)
        p = mini_rag("ask", "Are promotional purchases refundable?", "--debug", "--config", self.config)
        self.assertEqual(p.stdout, plain.stdout)
        self.assertIn('FACTS:\n- "Promotional purchases are non-refundable." (pdf="refund-policy", page=1, '
                      'chunk_id="refund-policy#p3", score=', p.stderr)
        self.assertIn("DECISION: ANSWER []", p.stderr)

    def test_bad_input_exit_2(self):
        cases = [
            (["ask", " ", "--config", self.config], "mini_rag: question must not be empty, got ' '\n"),
            (["ask", "x", "--config", os.path.join(self.tmp, "missing.toml")],
             "mini_rag: %s: cannot read config: No such file or directory\n" % os.path.join(self.tmp, "missing.toml")),
        ]
        for argv, err in cases:
            with self.subTest(argv=argv[:2]):
                p = mini_rag(*argv)
                self.assertEqual((p.returncode, p.stdout, p.stderr), (2, "", err))


class Run(CliTest):
    def test_one_row_per_gold_item_in_order(self):
        out = os.path.join(self.tmp, "trace.jsonl")
        p = mini_rag("run", "--gold", os.path.join(FIX, "gold.jsonl"), "--out", out, "--config", self.config)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "")
        with open(out, encoding="utf-8") as fh:
            rows = [json.loads(line) for line in fh]
        self.assertEqual([r["qid"] for r in rows], ["G%d" % i for i in range(1, 9)])
        self.assertTrue(all(tuple(r) == TRACE_KEYS for r in rows))
        decisions = {r["qid"]: r["decision"] for r in rows}
        self.assertEqual((decisions["G4"], decisions["G5"], decisions["G6"]), ("ABSTAIN",) * 3)

    def test_timings_flag(self):
        out = os.path.join(self.tmp, "trace.jsonl")
        p = mini_rag("run", "--gold", os.path.join(FIX, "gold_perturb.jsonl"), "--out", out,
                     "--config", self.config, "--timings")
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out, encoding="utf-8") as fh:
            rows = [json.loads(line) for line in fh]
        self.assertTrue(all(list(r)[-1] == "timings_ms" for r in rows))

    def test_bad_gold_reports_every_line(self):
        gold = os.path.join(self.tmp, "gold.jsonl")
        with open(gold, "w", encoding="utf-8") as fh:
            fh.write('{"qid": "A", "question": "ok?"}\n{"qid": "", "question": "x"}\n'
                     '{"qid": "A", "question": 3}\nnot json\n')
        out = os.path.join(self.tmp, "trace.jsonl")
        p = mini_rag("run", "--gold", gold, "--out", out, "--config", self.config)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr, "mini_rag: %s:4: invalid JSON (Expecting value), got 'not json'\n" % gold)
        with open(gold, "w", encoding="utf-8") as fh:
            fh.write('{"qid": "A", "question": "ok?"}\n{"qid": "", "question": "x"}\n{"qid": "A", "question": 3}\n')
        p = mini_rag("run", "--gold", gold, "--out", out, "--config", self.config)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr.splitlines(), [
            "mini_rag: %s:2: qid must be a non-empty string, got ''" % gold,
            "%s:3: duplicate qid (first on line 1), got 'A'" % gold,
            "%s:3: question must be a non-empty string, got 3" % gold])
        self.assertFalse(os.path.exists(out))


@unittest.skipUnless(HAVE_SCORER, "score_eval.py is not in the repository yet")
class Eval(CliTest):
    def run_eval(self, gates):
        runs = os.path.join(self.tmp, "runs")
        return runs, mini_rag("eval", "--config", self.config, "--runs", runs,
                              "--gold", os.path.join(FIX, "gold.jsonl"),
                              "--perturb", os.path.join(FIX, "gold_perturb.jsonl"), "--gates", gates)

    def test_pass_prints_report_json(self):
        runs, p = self.run_eval(os.path.join(FIX, "gates.toml"))
        self.assertEqual(p.returncode, 0, p.stderr)
        short = json.loads(p.stdout)             # the compact summary (issue 19)
        with open(os.path.join(runs, "report.json"), encoding="utf-8") as fh:
            report = json.load(fh)               # the full combined report
        self.assertEqual(list(report), ["pass", "datasets", "as_of"])
        self.assertEqual(list(report["datasets"]), ["baseline", "perturb"])
        self.assertIs(report["pass"], True)
        self.assertEqual(list(short), ["pass", "version", "as_of", "failed_gates", "datasets", "reports", "operating_point"])
        self.assertIs(short["pass"], True)
        self.assertEqual(short["reports"]["json"], os.path.join(runs, "report.json"))
        base = report["datasets"]["baseline"]
        self.assertEqual(short["datasets"]["baseline"]["metrics"]["pass_rate"],
                         {k: base["metrics"]["pass_rate"][k] for k in ("value", "count", "n", "ci")})
        self.assertLess(len(p.stdout.splitlines()), 150)
        self.assertIn("eval: PASS (baseline passes, perturb passes)", p.stderr)
        for name in ("trace.baseline.jsonl", "trace.perturb.jsonl", "report.baseline.json",
                     "report.perturb.json", "report.md", "items.baseline.jsonl"):
            self.assertTrue(os.path.isfile(os.path.join(runs, name)), name)
        with open(os.path.join(runs, "report.md"), encoding="utf-8") as fh:
            md = fh.read()
        self.assertTrue(md.startswith("# mini_rag eval report\n\n**PASS**: baseline passes, perturb passes."))
        self.assertIn("| conflict | 1.0000 (2/2) | 1.0000 (1/1) |", md)

    def test_failed_gate_exit_1(self):
        gates = os.path.join(self.tmp, "strict.toml")
        with open(gates, "w", encoding="utf-8") as fh:
            # a gate no sound run can pass: at least half of the shipped claims hallucinated
            fh.write("[baseline]\nhallucination = { min = 0.5 }\n[perturb]\nhallucination = { min = 0.5 }\n")
        _, p = self.run_eval(gates)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIs(json.loads(p.stdout)["pass"], False)

    def test_missing_gold_exit_2(self):
        runs = os.path.join(self.tmp, "runs")
        p = mini_rag("eval", "--config", self.config, "--runs", runs,
                     "--gold", os.path.join(self.tmp, "none.jsonl"), "--gates", os.path.join(FIX, "gates.toml"))
        self.assertEqual((p.returncode, p.stdout), (2, ""))
        self.assertEqual(p.stderr, "mini_rag: %s: cannot read: no such file\n" % os.path.join(self.tmp, "none.jsonl"))


class EvalFailsClosed(CliTest):
    """Issue 31 item 1: a missing default gold set is exit 2 with its path (the seed example
    never stands in for it); the seed example runs only with --dataset seed."""

    def clone(self, with_gates=True):
        work = os.path.join(self.tmp, "clone")
        os.makedirs(work)
        shutil.copytree(os.path.join(ROOT, "examples"), os.path.join(work, "examples"))
        if with_gates:
            shutil.copy(os.path.join(ROOT, "gates.toml"), work)
        return work

    def run_in(self, work, *argv):
        env = dict(os.environ, PYTHONPATH=ROOT)
        return subprocess.run([sys.executable, "-m", "mini_rag"] + list(argv), cwd=work, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)

    def test_missing_default_gold_is_exit_2_with_the_path(self):
        p = self.run_in(self.clone(), "eval", "--config", self.config)
        self.assertEqual((p.returncode, p.stdout), (2, ""))
        self.assertIn("mini_rag: %s: cannot read: no such file" % os.path.join("gold", "gold.jsonl"), p.stderr)
        self.assertNotIn("falls back", p.stderr)

    def test_missing_default_gates_is_exit_2_with_the_path(self):
        p = self.run_in(self.clone(with_gates=False), "eval", "--dataset", "seed")
        self.assertEqual((p.returncode, p.stdout), (2, ""))
        self.assertIn("mini_rag: gates.toml: cannot read gates file: no such file", p.stderr)

    def test_missing_named_corpus_is_exit_2_with_the_path(self):
        missing = os.path.join(self.tmp, "no-such-docs")
        p = self.run_in(self.clone(), "ask", "what is it?", "--corpus", missing)
        self.assertEqual((p.returncode, p.stdout), (2, ""))
        self.assertIn("mini_rag: %s: corpus not found" % missing, p.stderr)

    @unittest.skipUnless(HAVE_SCORER, "score_eval.py not in the repository")
    def test_seed_example_only_when_asked(self):
        p = self.run_in(self.clone(), "eval", "--dataset", "seed")
        self.assertEqual(p.returncode, 0, p.stderr)
        report = json.loads(p.stdout)
        self.assertEqual(list(report["datasets"]), ["seed"])
        self.assertEqual(report["datasets"]["seed"]["dataset"], "seed")
        self.assertIs(report["pass"], True)


class Help(unittest.TestCase):
    def test_every_flag_has_help(self):
        from mini_rag.commands.cli import build_parser
        parser = build_parser()
        sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
        for name in ("ask", "run", "eval", "compare"):
            with self.subTest(command=name):
                for action in sub.choices[name]._actions:
                    self.assertTrue(action.help, "%s %s has no help" % (name, action.option_strings))


if __name__ == "__main__":
    unittest.main()

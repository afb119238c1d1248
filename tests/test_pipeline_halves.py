"""The pipeline's two halves (mini_rag/pipeline.py): the retrieval half decides before the
generator is called; a generator failure is that item's BLOCK ``generator_error:<kind>``;
the trace keeps ``decided_by`` and ``validation``.  Also ``run`` with a generator command
that fails on one item of three (mini_rag/commands/cmd_answer.py)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from mini_rag.answer.generator import CommandGenerator, GeneratorError, Generator  # noqa: E402
from mini_rag.pipeline import Pipeline  # noqa: E402
from test_pipeline import Fixed, TopFact, fixture_config, fixture_retriever, row_of  # noqa: E402
from test_cli_answer import mini_rag, write_config  # noqa: E402


class Counting(Generator):
    """TopFact that counts its calls."""
    name = "counting"

    def __init__(self):
        self.calls = 0

    def generate(self, question, facts, context):
        self.calls += 1
        return TopFact().generate(question, facts, context)


class Failing(Generator):
    name = "failing"

    def __init__(self, kind):
        self.kind = kind

    def generate(self, question, facts, context):
        raise GeneratorError(self.kind, "generator command 'llm': %s" % self.kind)


def pipeline(generator, cfg=None):
    cfg = cfg or fixture_config()
    return Pipeline(cfg, retriever=fixture_retriever(cfg), generator=generator)


class Halves(unittest.TestCase):
    def test_generator_calls_counted(self):
        # (question, decided_by, decision, reasons, generator calls)
        cases = [
            ("What is the capital of France?", "retrieval", "ABSTAIN", ["low_confidence:no_hits"], 0),
            ("What colour is the logo of the plans page?", "retrieval", "ABSTAIN",
             ["low_confidence:answer_refused:no_evidence"], 0),
            ("Who approves invoices?", "answer", "ANSWER", [], 1),
            ("Can we store social security numbers in plaintext?", "answer", "ABSTAIN",
             ["conflict:polarity:encryption-standard#p1:security-policy-legacy#p1"], 1),
        ]
        for question, half, decision, reasons, calls in cases:
            with self.subTest(question):
                gen = Counting()
                r = pipeline(gen).answer(question)
                self.assertEqual((r.row["decided_by"], r.row["decision"], r.row["reasons"]),
                                 (half, decision, reasons))
                self.assertEqual((gen.calls, r.generator_called), (calls, calls > 0))

    def test_too_few_hits_decides_before_generation(self):
        cfg = fixture_config()
        cfg["guards"]["min_chunks"] = 3
        gen = Counting()
        r = pipeline(gen, cfg).answer("Who approves invoices?")       # 2 hits < 3
        self.assertEqual(len(r.retrieval.hits), 2)
        self.assertEqual((r.row["decision"], r.row["reasons"], r.row["decided_by"], gen.calls),
                         ("ABSTAIN", ["low_confidence:too_few_hits"], "retrieval", 0))

    def test_generator_failure_blocks_the_item(self):
        for kind in ("exit_status", "timeout", "unparsable_output"):
            with self.subTest(kind):
                r = pipeline(Failing(kind)).answer("Who approves invoices?")
                self.assertEqual((r.row["decision"], r.row["reasons"]), ("BLOCK", ["generator_error:%s" % kind]))
                self.assertEqual(r.generator_error, kind)
                self.assertEqual(r.row["answer_json"], {"claim": "not in context", "citations": []})
                self.assertEqual(r.row["validation"], {"citation_valid": False,
                                                       "errors": ["generator command 'llm': %s" % kind],
                                                       "warnings": []})
                self.assertIn(kind.replace("_", " "), r.row["message"])

    def test_validation_kept_in_trace(self):
        def make(fs):
            bad = row_of(fs[0], sentence="Zebras gallop.")          # shares no keyword with its chunk
            return {"answer_sentences": [bad, {"sentence": "x", "pdf": "nowhere", "page": 1,
                                               "chunk_id": "nowhere#p0"}], "confidence": "High"}
        row = pipeline(Fixed(make)).answer("When does the staff cafeteria open?").row
        self.assertEqual(row["decision"], "BLOCK")
        self.assertEqual(row["validation"]["citation_valid"], False)
        self.assertEqual(row["validation"]["errors"], ["citation 'nowhere#p0' does not match any retrieved chunk"])
        self.assertEqual(row["validation"]["warnings"], [
            "sentence 1 shares no keyword with its cited chunk 'cafeteria#p1'",
            "answer_sentences[1]: (pdf='nowhere', page=1, chunk_id='nowhere#p0') is not a phase B fact"])
        ok = pipeline(TopFact()).answer("When does the staff cafeteria open?").row
        self.assertEqual(ok["validation"], {"citation_valid": True, "errors": [], "warnings": []})


class SentenceCitationRule(unittest.TestCase):
    """At most max_sentences sentences, at most max_citations distinct chunks; sentences
    citing the same chunk share it (generator.py)."""

    def test_rule(self):
        q = "When does the staff cafeteria open?"
        cfg = fixture_config()
        cfg["guards"]["max_citations"] = 1
        cfg["answer"]["max_sentences"] = 2
        two = lambda fs: {"answer_sentences": [row_of(fs[0], sentence="The cafeteria opens at 8 am."),  # noqa: E731
                                               row_of(fs[0])], "confidence": "High"}
        cases = [
            ("two sentences, one chunk", two, "ANSWER", 2, [], []),
            ("an exact repeat is dropped", lambda fs: {"answer_sentences": [row_of(fs[0]), row_of(fs[0])],
                                                       "confidence": "High"}, "ANSWER", 1, [],
             ["answer_sentences[1]: duplicate (pdf='cafeteria', page=1, chunk_id='cafeteria#p1') dropped"]),
            ("a third sentence is dropped", lambda fs: {"answer_sentences": two(fs)["answer_sentences"] + [
                row_of(fs[0], sentence="Opens at 8 am on weekdays.")], "confidence": "High"}, "ANSWER", 2, [],
             ["answer_sentences[2]: more than 2 sentences, dropped"]),
            ("two distinct chunks, limit 1", lambda fs: {"answer_sentences": [row_of(f) for f in fs[:2]],
                                                         "confidence": "High"}, "BLOCK", 0,
             ["2 citations, at most 1 allowed"], []),
        ]
        for name, make, decision, n_sentences, errors, warnings in cases:
            with self.subTest(name):
                r = pipeline(Fixed(make), cfg).answer(q)
                self.assertGreaterEqual(len(r.facts_b), 2)
                self.assertEqual(r.row["decision"], decision, r.row["reasons"])
                self.assertEqual(len(r.answer.sentences) if decision == "ANSWER" else 0, n_sentences)
                self.assertEqual(r.row["validation"]["errors"], errors)
                self.assertEqual(r.row["validation"]["warnings"], warnings)
                if decision == "ANSWER":
                    self.assertEqual(r.row["answer_json"]["citations"], ["cafeteria#p1"])


class QuestionFirst(unittest.TestCase):
    class Words:
        @staticmethod
        def analyze(text):
            return text.lower().replace(".", "").split()

    @staticmethod
    def pair(a, b, snippet_a, snippet_b):
        from mini_rag.guard.conflicts import ConflictPair
        return ConflictPair("numeric", "day", a.split("#")[0], a, snippet_a, b.split("#")[0], b, snippet_b, "r")

    def test_order(self):
        from mini_rag.guard.decision import conflict_message
        from mini_rag.pipeline import question_first
        q = ["pro", "plan", "refund", "days"]               # 4 terms: "about" needs 2 held by both sides
        off = self.pair("a#p1", "b#p1", "Free tier refunds take 5 days.", "Free tier refunds take 9 days.")
        about = self.pair("a#p2", "b#p2", "Pro plan refund in 30 days.", "Pro plan refund in 14 days.")
        about2 = self.pair("a#p3", "b#p3", "Pro plan: 30 days.", "Pro plan: 60 days.")
        cases = [
            ("about the question first", [off, about], [], [about, off]),
            ("a cited side first", [about, off], ["b#p1"], [off, about]),
            ("ties keep the detector's order", [about2, about], [], [about2, about]),
            ("one pair", [off], [], [off]),
        ]
        for name, pairs, cited, expected in cases:
            with self.subTest(name):
                self.assertEqual(question_first(pairs, q, self.Words, cited), expected)
        message = conflict_message(question_first([off, about], q, self.Words, []))
        self.assertIn("Source A (a, a#p2)", message)
        self.assertIn("(1 more conflicting pair.)", message)


class CommandKinds(unittest.TestCase):
    def test_kinds(self):
        from test_generator import FACTS, Q, command, context
        cases = [
            ("import sys; sys.exit(3)", 20, "exit_status"),
            ("print('not json')", 20, "unparsable_output"),
            ("print('[1, 2]')", 20, "unparsable_output"),
            ("import time; time.sleep(5)", 0.3, "timeout"),
        ]
        for script, timeout, kind in cases:
            with self.subTest(kind=kind, script=script):
                with self.assertRaises(GeneratorError) as cm:
                    CommandGenerator(command(script), timeout).generate(Q, FACTS, context())
                self.assertEqual(cm.exception.kind, kind)
        with self.assertRaises(GeneratorError) as cm:
            CommandGenerator(["/nonexistent/mini-rag-generator"]).generate(Q, FACTS, context())
        self.assertEqual(cm.exception.kind, "not_found")

    def test_request_carries_both_limits(self):
        from test_generator import FACTS, Q, command, context
        script = "import json, sys; r = json.load(sys.stdin); print(json.dumps([r['max_sentences'], r['max_citations']]))"
        with self.assertRaises(GeneratorError):                   # a list is no phase C object ...
            CommandGenerator(command(script), 20).generate(Q, FACTS, context())
        script = ("import json, sys; r = json.load(sys.stdin); "
                  "print(json.dumps({'limits': [r['max_sentences'], r['max_citations']]}))")
        self.assertEqual(CommandGenerator(command(script), 20).generate(Q, FACTS, context())["limits"], [6, 5])


# Answers with the first fact; exits 3 when the question mentions invoices.
FLAKY = """import json, sys
req = json.load(sys.stdin)
if "invoices" in req["question"]:
    sys.stderr.write("model overloaded\\n")
    sys.exit(3)
f = req["facts"][0]
print(json.dumps({"answer_sentences": [{"sentence": f["quote"], "pdf": f["pdf"], "page": f["page"],
                                        "chunk_id": f["chunk_id"]}], "confidence": "High"}))
"""


class RunGoesOn(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mini_rag_halves_")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_one_failing_item_of_three(self):
        script = os.path.join(self.tmp, "flaky.py")
        with open(script, "w", encoding="utf-8") as fh:
            fh.write(FLAKY)
        config = write_config(self.tmp, '[answer]\ngenerator = "command"\ngenerator_command = [%s, %s]\n'
                              % (json.dumps(sys.executable), json.dumps(script)))
        gold = os.path.join(self.tmp, "gold.jsonl")
        with open(gold, "w", encoding="utf-8") as fh:
            for qid, q in (("G1", "When does the staff cafeteria open?"), ("G2", "Who approves invoices?"),
                           ("G3", "Is the cafeteria menu vegan?")):
                fh.write(json.dumps({"qid": qid, "question": q}) + "\n")
        out = os.path.join(self.tmp, "trace.jsonl")
        p = mini_rag("run", "--gold", gold, "--out", out, "--config", config)
        self.assertEqual(p.returncode, 1, p.stderr)
        with open(out, encoding="utf-8") as fh:
            rows = [json.loads(line) for line in fh]
        self.assertEqual([r["qid"] for r in rows], ["G1", "G2", "G3"])
        self.assertEqual([r["decision"] for r in rows], ["ANSWER", "BLOCK", "ANSWER"])
        self.assertEqual(rows[1]["reasons"], ["generator_error:exit_status"])
        self.assertIn("model overloaded", rows[1]["validation"]["errors"][0])
        self.assertIn("wrote 3 trace rows", p.stderr)
        self.assertIn("1 of 3 items BLOCKed by generator_error", p.stderr)
        p = mini_rag("ask", "Who approves invoices?", "--config", config)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertEqual(p.stdout, "not in context\nI can't provide an answer because the answer generator "
                                   "failed (exit status).\n")
        self.assertIn("exited with status 3: model overloaded", p.stderr)


if __name__ == "__main__":
    unittest.main()

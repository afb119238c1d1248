"""Issue 17 item 3: the question is analyzed once (mini_rag/question.py).

Fixture: tests/fixtures/guards/corpus (13 chunks).  The record's fields are derived by
hand below (idf as Lucene's formula, ``ln(1 + (N - df + 0.5) / (df + 0.5))`` with N
the 13 searchable chunks: the 21 chunks less the 8 headings standing alone); the
pipeline is checked to read the record rather than analyze the question again.
"""
import copy
import json
import math
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from mini_rag.answer import answerability as am  # noqa: E402
from mini_rag.guard import guards  # noqa: E402
from mini_rag import pipeline as pipeline_mod  # noqa: E402
from mini_rag.text.analysis import Analyzer  # noqa: E402
from mini_rag.config import DEFAULTS  # noqa: E402
from mini_rag.text.corpus import load_chunks  # noqa: E402
from mini_rag.answer.facts import phase_a  # noqa: E402
from mini_rag.answer.generator import ExtractiveGenerator  # noqa: E402
from mini_rag.indexing.index import build_index  # noqa: E402
from mini_rag.pipeline import Pipeline  # noqa: E402
from mini_rag.question import analyze_question  # noqa: E402
from mini_rag.records import Retrieval  # noqa: E402
from mini_rag.answer.relevance import phase_b_detail  # noqa: E402
from mini_rag.search.retrieve import Retriever  # noqa: E402
from mini_rag.answer.synthesize import phase_c  # noqa: E402

CORPUS = os.path.join(ROOT, "tests", "fixtures", "guards", "corpus")
_INDEX = []

QUESTIONS = [
    "Hi there! How many days do customers have to request a refnd? Thanks!",
    "Is there a gym on the Pro plan in 2024?",
    "What is the refund window and are promotional purchases refundable?",
    "Can we NOT store SSNs from Germany?",
    "How long are customer invoices retained?",
    "Can we store social security numbers in plaintext?",
    "What is the API rate limit for our plan?",
]


def setup():
    """(config, retriever, analyzer) over the fixture corpus, the index built once per run."""
    cfg = copy.deepcopy(DEFAULTS)
    cfg["corpus"]["path"] = CORPUS
    if not _INDEX:
        _INDEX.append(build_index(load_chunks(CORPUS)))
    r = Retriever(_INDEX[0], cfg)
    return cfg, r, r.index.analyzer


def lucene_idf(df, n):
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


class Fields(unittest.TestCase):
    def setUp(self):
        self.cfg, self.r, self.an = setup()

    def qa(self, question):
        return analyze_question(question, self.an, self.r.index, self.cfg, retriever=self.r)

    def test_framing_typos_terms_and_idf(self):
        qa = self.qa(QUESTIONS[0])
        n = self.r.index.num_searchable
        self.assertEqual((self.r.index.num_chunks, n), (21, 13))
        self.assertEqual(qa.asked, QUESTIONS[0])
        self.assertEqual(qa.text, "How many days do customers have to request a refnd?")
        # "refnd" is one deletion from the corpus word "refund"; "many" (stem "mani", not
        # indexed) is one slip from "may" -- the retriever's corrections, as it records them
        self.assertEqual(qa.corrections, {"refnd": "refund", "many": "may"})
        self.assertEqual(qa.analyzed, ["mani", "day", "custom", "request", "refnd"])
        self.assertEqual(qa.query_terms, ["may", "day", "custom", "request", "refund"])
        # content terms: corrected, "may" is scaffold
        self.assertEqual(qa.terms, ["day", "custom", "request", "refund"])
        self.assertEqual(qa.doc_freq, {"day": 3, "custom": 3, "request": 2, "refund": 5})
        for t, df in qa.doc_freq.items():
            self.assertAlmostEqual(qa.idf[t], lucene_idf(df, n), places=9)
        self.assertEqual(qa.absent, [])
        self.assertEqual(qa.question_type, "duration")          # "how many days"
        self.assertEqual(qa.variants, [qa.text])
        self.assertEqual((qa.negated, qa.marked, qa.years), (False, [], []))

    def test_table_of_question_fields(self):
        # (question, terms, absent, type, negated, marked, years, qualifiers)
        cases = [
            ("Is there a gym on the Pro plan in 2024?", ["gym", "pro", "plan", "2024"],
             ["gym", "pro", "2024"], "polarity", False, ["2024", "pro"], ["2024"], ["pro"]),
            ("Can we NOT store SSNs from Germany?", ["store", "ssns", "germani"], ["ssns", "germani"],
             "polarity", True, ["germany", "not", "ssns"], [], []),
            ("How long are customer invoices retained?", ["custom", "invoic", "retain"], [],
             "duration", False, [], [], []),
            ("Which edition applies on the Enterprise tier in 1999 and 2031.5?", ["edit", "appli", "enterpris", "tier", "1999", "2031.5"],
             ["edit", "appli", "tier", "1999", "2031.5"], None, False,
             ["1999", "2031", "5", "enterprise"], ["1999"], ["enterprise"]),
        ]
        for question, terms, absent, kind, neg, marked, years, quals in cases:
            with self.subTest(question=question):
                qa = self.qa(question)
                self.assertEqual(qa.terms, terms)
                self.assertEqual(qa.absent, absent)
                self.assertEqual(qa.question_type, kind)
                self.assertEqual(qa.negated, neg)
                self.assertEqual(qa.marked, marked)
                self.assertEqual(qa.years, years)
                self.assertEqual(sorted(qa.qualifiers), quals)

    def test_parts(self):
        qa = self.qa("What is the refund window and are promotional purchases refundable?")
        self.assertEqual([(p.text, p.terms) for p in qa.b_parts],
                         [("What is the refund window", ["refund", "window"]),
                          ("are promotional purchases refundable", ["promot", "purchas", "refund"])])
        self.assertEqual([(p.text, p.question_type) for p in qa.parts],
                         [("What is the refund window", "duration"),
                          ("are promotional purchases refundable", "polarity")])
        # "What is the X": X's head word is the answer's category
        self.assertEqual(qa.parts[0].category, ["refund"])
        gym = self.qa("Is there a gym on the Pro plan in 2024?").parts[0]
        self.assertEqual(gym.subject, ("gym", "gym"))
        self.assertEqual(gym.names, [("Pro", ["pro"]), ("2024", ["2024"])])

    def test_without_an_index(self):
        # the module docstring's example: no index, no retriever: idf 1.0, nothing absent
        qa = analyze_question("Hi! How many days do we keep audit logs?", Analyzer())
        self.assertEqual(qa.text, "How many days do we keep audit logs?")
        self.assertEqual(qa.terms, ["day", "keep", "audit", "log"])
        self.assertEqual(qa.idf, {"day": 1.0, "keep": 1.0, "audit": 1.0, "log": 1.0})
        self.assertEqual((qa.doc_freq, qa.absent, qa.corrections), ({}, [], {}))

    def test_doctests(self):
        import doctest
        import mini_rag.question
        self.assertEqual(doctest.testmod(mini_rag.question).failed, 0)

    def test_framing_kept_when_switched_off(self):
        cfg = copy.deepcopy(self.cfg)
        cfg["answer"]["strip_framing"] = False
        cfg["answer"]["scenario_split"] = False      # else "Thanks!" is a situation and the ask is read
        qa = analyze_question("Thanks! Is there a gym?", self.an, self.r.index, cfg, retriever=self.r)
        self.assertEqual(qa.text, "Thanks! Is there a gym?")

    def test_to_json_round_trips_through_json(self):
        qa = self.qa(QUESTIONS[1])
        d = qa.to_json()
        self.assertEqual(json.loads(json.dumps(d, sort_keys=True)), d)
        self.assertEqual(d["qualifiers"], ["pro"])
        self.assertEqual(d["parts"][0]["subject"], ["gym", "gym"])
        self.assertEqual(d["idf"]["gym"], round(lucene_idf(0, 13), 6))


class ReadOnce(unittest.TestCase):
    """During Pipeline.answer, nothing after analyze_question analyzes the question text."""

    def setUp(self):
        self.cfg, self.r, self.an = setup()
        self.calls = []
        self.inside = [0]
        self.texts = set()
        orig_analyze = Analyzer.analyze
        orig_aq = pipeline_mod.analyze_question
        test = self

        def analyze(analyzer, text, *a, **k):
            if not test.inside[0] and text in test.texts:
                test.calls.append(text)
            return orig_analyze(analyzer, text, *a, **k)

        def aq(*a, **k):
            test.inside[0] += 1
            try:
                qa = orig_aq(*a, **k)
            finally:
                test.inside[0] -= 1
            test.texts = {qa.asked, qa.text} | {p.text for p in qa.parts + qa.b_parts}
            return qa
        Analyzer.analyze = analyze
        pipeline_mod.analyze_question = aq
        self.addCleanup(setattr, Analyzer, "analyze", orig_analyze)
        self.addCleanup(setattr, pipeline_mod, "analyze_question", orig_aq)

    def test_no_stage_analyzes_the_question_again(self):
        for switch in (False, True):
            cfg = copy.deepcopy(self.cfg)
            cfg["answer"]["answerability"] = switch
            p = Pipeline(cfg, retriever=self.r)
            for q in QUESTIONS:
                with self.subTest(question=q, answerability=switch):
                    self.calls.clear()
                    p.answer(q, qid="Q")
                    self.assertTrue(self.texts)
                    self.assertEqual(self.calls, [])

    def test_the_counter_sees_a_stage_without_the_record(self):
        # the same stage called the old way (no qa) analyzes the question: the test can fail
        q = QUESTIONS[4]
        qa = pipeline_mod.analyze_question(q, self.an, self.r.index, self.cfg, retriever=self.r)
        retrieval = self.r.retrieve(qa.text, qa=qa)
        self.calls.clear()
        phase_b_detail(qa.text, phase_a(retrieval), retrieval, self.r.index, self.cfg, qa=qa)
        self.assertEqual(self.calls, [])
        phase_b_detail(qa.text, phase_a(retrieval), retrieval, self.r.index, self.cfg)
        self.assertIn(qa.text, self.calls)


class SameResults(unittest.TestCase):
    """Each stage gives the same result with the record as with the question string."""

    def setUp(self):
        self.cfg, self.r, self.an = setup()

    def test_each_stage(self):
        idx = self.r.index
        for q in QUESTIONS:
            with self.subTest(question=q):
                qa = analyze_question(q, self.an, idx, self.cfg, retriever=self.r)
                text = qa.text
                old = self.r.retrieve(text)
                new = self.r.retrieve(text, qa=qa)
                self.assertEqual(new.to_json(), old.to_json())
                self.assertEqual(qa.corrections, old.corrections)
                facts = phase_a(old)
                self.assertEqual(phase_b_detail(text, facts, old, idx, self.cfg, qa=qa),
                                 phase_b_detail(text, facts, old, idx, self.cfg))
                self.assertEqual(phase_c(text, facts, old, idx, self.cfg, qa=qa).to_json(),
                                 phase_c(text, facts, old, idx, self.cfg).to_json())
                ans = phase_c(text, facts, old, idx, self.cfg)
                feats = lambda cands: [(c.chunk_id, c.sentence, c.features) for c in cands]  # noqa: E731
                self.assertEqual(feats(am.candidates(text, old, ans, idx, self.an, qa=qa)),
                                 feats(am.candidates(text, old, ans, idx, self.an)))
                self.assertEqual(guards.classify_risk(text, self.an, self.cfg["risk"], terms=qa.analyzed),
                                 guards.classify_risk(text, self.an, self.cfg["risk"]))
                ctx = {h.chunk_id: (h.heading, h.title) for h in old.hits}
                self.assertEqual(
                    guards.check_ambiguity(text, facts, self.an, self.cfg["clarify"], self.cfg["guards"],
                                           context=ctx, retrieval=old, bridges=qa.bridges, qa=qa),
                    guards.check_ambiguity(text, facts, self.an, self.cfg["clarify"], self.cfg["guards"],
                                           context=ctx, retrieval=old, bridges=qa.bridges))

    def test_generator_reads_the_record_from_its_context(self):
        idx = self.r.index
        q = QUESTIONS[4]
        qa = analyze_question(q, self.an, idx, self.cfg, retriever=self.r)
        retrieval = self.r.retrieve(qa.text, qa=qa)
        facts = phase_a(retrieval)
        gen = ExtractiveGenerator(idx, self.cfg)
        ctx = {"retrieval": retrieval, "config": self.cfg}
        self.assertEqual(gen.generate(qa.text, facts, dict(ctx, analysis=qa)), gen.generate(qa.text, facts, ctx))

    def test_a_retriever_that_corrects_on_its_own(self):
        # a stub retriever (no qa parameter) whose retrieval corrects "refnd": the pipeline
        # analyzes again with the retrieval's corrections, so phase B reads "refund"
        real = self.r
        seen = []

        class Stub:
            index = real.index

            def retrieve(self, question):
                seen.append(question)
                return real.retrieve(question)

        p = Pipeline(self.cfg, retriever=Stub())
        res = p.answer("Hi! Can customers request a refnd?", qid="S")
        self.assertEqual(seen, ["Can customers request a refnd?"])
        qa = p.analyze("Hi! Can customers request a refnd?")
        self.assertEqual(qa.corrections, {})               # no retriever correction yet
        fixed, qa2 = p._retrieve(qa, None)
        self.assertEqual(qa2.corrections, {"refnd": "refund"})
        self.assertEqual(qa2.terms, ["custom", "request", "refund"])
        self.assertEqual(res.row["corrections"], {"refnd": "refund"})


class ScenarioVariant(unittest.TestCase):
    """Issue 30: a scenario question is also retrieved as its ask plus the situation's rarest
    corpus words (by document frequency in the fixture index, then the word)."""

    def test_variant_and_hits(self):
        cfg, r, an = setup()
        situation = "My manager is new and asked me about our encryption rules last week."
        ask = "How many days do customers have to request a refund?"
        qa = analyze_question("%s %s" % (situation, ask), an, r.index, cfg, retriever=r)
        ask_terms = set(an.analyze(ask))
        words = {}
        for w in situation.replace(".", " ").split():
            t = an.analyze(w)
            if len(t) == 1 and t[0] not in ask_terms and r.index.doc_freq(t[0]) > 0:
                words.setdefault(t[0], (r.index.doc_freq(t[0]), w.lower()))
        picked = sorted(sorted(words.values())[:3], key=lambda p: p[1])
        self.assertTrue(picked)
        self.assertEqual(qa.text, ask)                                  # the stages read the ask
        self.assertEqual(qa.variants, [ask] + r.expansions(ask) + [ask + " " + " ".join(w for _, w in picked)])
        self.assertEqual(qa.variant_terms[-1], r.query_terms(qa.variants[-1], {}))
        off = copy.deepcopy(cfg)
        off["answer"]["scenario_split"] = False
        whole = "%s %s" % (situation, ask)
        got = analyze_question(whole, an, r.index, off, retriever=r)
        self.assertEqual((got.text, got.variants), (whole, [whole] + r.expansions(whole)))
        # an ask pointing back into the situation is read whole, the ask a variant of its own
        back = analyze_question("Our invoices are old. Can they be deleted?", an, r.index, cfg, retriever=r)
        self.assertEqual(back.text, "Our invoices are old. Can they be deleted?")
        self.assertIn("Can they be deleted?", back.variants)
        single = analyze_question(ask, an, r.index, cfg, retriever=r)
        self.assertEqual(single.variants, [ask] + r.expansions(ask))


if __name__ == "__main__":
    unittest.main()

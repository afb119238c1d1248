"""Issue 17: document scope, the naive baseline, the answerability features and the fit.

Expected values are derived by hand from a three-document corpus written here.
"""
import copy
import json
import math
import os
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

from mini_rag.answer import answerability as am  # noqa: E402
from mini_rag.config import DEFAULTS  # noqa: E402
from mini_rag.text.corpus import load_chunks  # noqa: E402
from mini_rag.errors import MiniRagError  # noqa: E402
from mini_rag.indexing.index import build_index  # noqa: E402
from mini_rag.pipeline import Pipeline  # noqa: E402
from mini_rag.search.retrieve import Retriever  # noqa: E402
from mini_rag.answer.synthesize import Answer  # noqa: E402

DOCS = [
    {"_id": "alpha", "title": "", "text": "The cafe opens at 8 am on weekdays.\n\nParking is free for visitors."},
    {"_id": "beta", "title": "", "text": "The cafe opens at 10 am on Sundays.\n\nBikes are stored in the yard."},
    {"_id": "gamma", "title": "", "text": "Visitors sign in at the front desk. Badges are returned on exit."},
]


_FIXTURE = []


def _setup():
    """(config, index) over DOCS, built once per test run (the corpus file in a temp folder)."""
    if not _FIXTURE:
        d = tempfile.mkdtemp()
        path = os.path.join(d, "corpus.jsonl")
        with open(path, "w", encoding="utf-8") as fh:
            for row in DOCS:
                fh.write(json.dumps(row) + "\n")
        cfg = copy.deepcopy(DEFAULTS)
        cfg["corpus"]["path"] = path
        _FIXTURE.append((cfg, build_index(load_chunks(path))))
    cfg, index = _FIXTURE[0]
    return copy.deepcopy(cfg), index


class FixtureCase(unittest.TestCase):
    """A retriever over DOCS for the class."""

    @classmethod
    def setUpClass(cls):
        cls.cfg, cls.index = _setup()
        cls.r = Retriever(cls.index, cls.cfg)


class DocScope(FixtureCase):

    def test_search_is_restricted_to_the_document(self):
        # "cafe opens" is in alpha#p0 and beta#p0 only; scoped to beta, only beta's chunk.
        self.assertEqual([h.chunk_id for h in self.r.search("cafe opens", 5)], ["alpha#p0", "beta#p0"])
        self.assertEqual([h.chunk_id for h in self.r.search("cafe opens", 5, doc_scope="beta")], ["beta#p0"])

    def test_retrieve_and_pipeline_carry_the_scope(self):
        got = self.r.retrieve("When does the cafe open?", doc_scope="beta")
        self.assertEqual({h.doc_id for h in got.hits}, {"beta"})
        row = Pipeline(self.cfg, retriever=self.r).answer("When does the cafe open?", qid="q", doc_scope="beta").row
        self.assertEqual(row["doc_scope"], "beta")
        self.assertTrue(all(c.startswith("beta#") for c in row["retrieved_ids"]))
        # without a scope the row has no doc_scope key (traces stay as they were)
        self.assertNotIn("doc_scope", Pipeline(self.cfg, retriever=self.r).answer("When does the cafe open?").row)

    def test_unknown_document_is_an_error(self):
        with self.assertRaises(MiniRagError):
            self.r.search("cafe", 5, doc_scope="nope")


class NaiveBaseline(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        from naive_baseline import Naive
        cfg, index = _setup()
        cls.naive = Naive(Retriever(index, cfg))

    def test_cover_rule(self):
        # question stems {park, free}: both in "Parking is free for visitors." -> share 1.0
        row = self.naive.answer("Is parking free?", "q1")
        self.assertEqual(row["answer_json"], {"claim": "Parking is free for visitors.", "citations": ["alpha#p1"]})
        # stems {bike, park, yard}: the top chunk beta#p1 holds bike and yard -> 2/3 >= 0.6
        row = self.naive.answer("Are bikes parked in the yard?", "q2")
        self.assertEqual(row["answer_json"]["citations"], ["beta#p1"])
        # stems {gym, locker, badg}: gamma's best sentence holds 1 of 3 -> refused
        row = self.naive.answer("Where is the gym locker badge?", "q3")
        self.assertEqual(row["answer_json"], {"claim": "not in context", "citations": []})

    def test_scope(self):
        row = self.naive.answer("When does the cafe open?", "q", doc_scope="beta")
        self.assertEqual(row["retrieved_ids"], ["beta#p0"])


class Features(FixtureCase):

    def test_hand_derived_features(self):
        retrieval = self.r.retrieve("Is parking free?")
        cands = am.candidates("Is parking free?", retrieval, Answer(sentences=[], refused=True),
                              self.index, self.index.analyzer)
        top = [c for c in cands if c.chunk_id == "alpha#p1"]
        self.assertEqual(len(top), 1)
        f = top[0].features
        # question terms {park, free}; sentence terms {park, free, visitor}
        self.assertEqual(f["cov"], 1.0)
        self.assertEqual(f["wcov"], 1.0)
        self.assertAlmostEqual(f["novel"], 1 / 3)
        self.assertEqual(f["prox"], 1.0)           # 2 matched terms in a span of 2 tokens
        self.assertEqual(f["rules_refused"], 1.0)
        self.assertEqual(f["rules"], 0.0)
        self.assertEqual(f["negation"], 0.0)
        self.assertEqual(f["bigram"], 1.0)         # (park, free) adjacent in both
        self.assertEqual(f["absent"], 0.0)
        self.assertEqual(set(f), set(am.FEATURES))

    def test_absent_term_counts_at_the_largest_idf(self):
        n = self.index.num_searchable
        idf = am._idf_table(self.index, ["park", "zzzunseen"])
        self.assertAlmostEqual(idf["zzzunseen"], math.log(1 + (n + 0.5) / 0.5))
        self.assertAlmostEqual(idf["park"], math.log(1 + (n - 1 + 0.5) / 1.5))

    def test_marked_words_and_negation(self):
        self.assertEqual(am._marked_words("When did Tesla move to New York in 1884?"),
                         ["1884", "new", "tesla", "york"])
        self.assertTrue(am._negated("Which river does not flow north?"))
        self.assertFalse(am._negated("Which river flows north?"))


class Model(unittest.TestCase):
    def test_choose_prob_and_decide(self):
        ranker = {k: 0.0 for k in am.FEATURES if k != "bias"}
        ranker["cov"] = 2.0
        gate = {k: 0.0 for k in am.GATE_FEATURES}
        gate["bias"], gate["cov"] = -1.0, 2.0
        m = am.Model(ranker, gate, threshold=0.6, high=0.9)
        # three candidates with cov 1, 0.5, 0: scores 2, 1, 0; the first wins, its softmax
        # share is e^2 / (e^2 + e^1 + e^0), its margin (2 - 1) / 5
        feats = [dict.fromkeys(am.FEATURES, 0.0) for _ in range(3)]
        for f, c in zip(feats, (1.0, 0.5, 0.0)):
            f["cov"], f["bias"] = c, 1.0
        i, g = m.choose(feats)
        self.assertEqual(i, 0)
        e = math.e
        self.assertAlmostEqual(g["share"], e ** 2 / (e ** 2 + e + 1))
        self.assertAlmostEqual(g["rmargin"], 0.2)
        self.assertAlmostEqual(m.prob(g), 1 / (1 + math.exp(-1.0)))      # gate: -1 + 2 * 1
        self.assertEqual(m.choose([]), (None, None))
        cfg, index = _setup()
        r = Retriever(index, cfg)
        retrieval = r.retrieve("Is parking free?")
        got = am.decide("Is parking free?", retrieval, Answer(sentences=[], refused=True), index,
                        index.analyzer, model=m)
        self.assertFalse(got.refused)
        self.assertEqual(got.sentences[0].sentence, "Parking is free for visitors.")
        self.assertEqual(got.confidence, "Medium")   # 0.731 < high 0.9
        strict = am.Model(ranker, gate, threshold=0.8, high=0.9)
        got = am.decide("Is parking free?", retrieval, Answer(sentences=[], refused=True), index,
                        index.analyzer, model=strict)
        self.assertEqual((got.refused, got.reasons), (True, ["below_answerability"]))

    def test_committed_model_loads(self):
        m = am.load_model()
        self.assertEqual(set(m.gate), set(am.GATE_FEATURES))
        self.assertTrue(0.0 < m.threshold < 1.0)

    def test_bad_model_file(self):
        d = tempfile.mkdtemp()
        for body in ('{"format": 1}', '{"format": 2, "ranker": {}, "gate": {}}', "not json"):
            p = os.path.join(d, "m%d.json" % len(body))
            with open(p, "w") as fh:
                fh.write(body)
            with self.assertRaises(MiniRagError) as cm:
                am.load_model(p)
            self.assertIn(p, str(cm.exception))


class Fit(unittest.TestCase):
    def test_ranker_prefers_the_feature_of_the_correct_candidates(self):
        # Two candidates per question, the correct one always has cov 1, the other 0: the
        # conditional logit's weight on cov grows positive (and stays finite with l2 > 0).
        import fit_answerability as F
        one = dict.fromkeys(am.FEATURES, 0.0)
        good, bad = dict(one, cov=1.0), dict(one)
        rows = [{"answerable": True, "items": [(good, 1), (bad, 0)]}] * 3 + \
               [{"answerable": True, "items": [(good, 0), (bad, 1)]}]
        w = F.rank_fit([rows], 0.0)
        # 3 of 4 questions pick cov: P(good) = e^w / (e^w + 1) = 3/4 -> w = log 3
        self.assertAlmostEqual(w["cov"], math.log(3.0), places=6)

    def test_bias_only_fit_is_the_logit_of_the_mean(self):
        # Features all zero but the bias: the MLE is p = mean(y), w_bias = log(p / (1 - p)).
        import fit_answerability as F
        zero = {k: 0.0 for k in am.FEATURES}
        zero["bias"] = 1.0
        rows = [{"answerable": True, "items": [(zero, 1)]}] * 3 + [{"answerable": True, "items": [(zero, 0)]}]
        w = F.fit([rows], 0.0)
        self.assertAlmostEqual(w["bias"], math.log(3.0), places=6)

    def test_solve(self):
        import fit_answerability as F
        x = F._solve([[2.0, 1.0], [1.0, 3.0]], [3.0, 5.0])   # 2a + b = 3, a + 3b = 5
        self.assertAlmostEqual(x[0], 0.8)
        self.assertAlmostEqual(x[1], 1.4)

    def test_metrics_by_hand(self):
        import fit_answerability as F
        # (answerable, p, correct): ship at t = 0.5 -> items 1, 2, 4 shipped
        outs = [(True, 0.9, True), (True, 0.6, False), (True, 0.2, True), (False, 0.7, False), (False, 0.1, False)]
        m = F.metrics(outs, 0.5)
        self.assertAlmostEqual(m["precision"], 1 / 3)
        self.assertAlmostEqual(m["under_refusal"], 1 / 2)
        self.assertAlmostEqual(m["over_refusal"], 1 / 3)
        self.assertAlmostEqual(m["pass_rate"], 2 / 5)


if __name__ == "__main__":
    unittest.main()

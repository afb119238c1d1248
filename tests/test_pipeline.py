"""The pipeline (mini_rag/pipeline.py) end to end on tests/fixtures/guards/corpus.

Most cases plug in a stub generator that copies the top phase-B fact verbatim, so each
guard and the decision are tested without depending on phase C's sentence choice; one
case runs the real extractive generator.
"""
import copy
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from mini_rag.config import DEFAULTS  # noqa: E402
from mini_rag.text.corpus import load_chunks  # noqa: E402
from mini_rag.answer.generator import Generator  # noqa: E402
from mini_rag.indexing.index import build_index  # noqa: E402
from mini_rag.pipeline import Pipeline  # noqa: E402
from mini_rag.search.retrieve import Retriever  # noqa: E402
from mini_rag.trace import TRACE_KEYS  # noqa: E402

CORPUS = os.path.join(ROOT, "tests", "fixtures", "guards", "corpus")
_INDEX = []


def fixture_config():
    cfg = copy.deepcopy(DEFAULTS)
    cfg["corpus"]["path"] = CORPUS
    return cfg


def fixture_retriever(cfg):
    if not _INDEX:
        _INDEX.append(build_index(load_chunks(CORPUS)))
    return Retriever(_INDEX[0], cfg)


class TopFact(Generator):
    """Cites the first phase-B fact's whole text as one sentence."""
    name = "top-fact"

    def generate(self, question, facts, context):
        f = facts[0]
        return {"answer_sentences": [{"sentence": f.quote, "pdf": f.pdf, "page": f.page,
                                      "chunk_id": f.chunk_id}], "confidence": "High"}


class Fixed(Generator):
    """Returns rows built from the facts by ``make(facts)``."""
    name = "fixed"

    def __init__(self, make):
        self.make = make

    def generate(self, question, facts, context):
        return self.make(facts)


def row_of(f, **extra):
    d = {"sentence": f.quote, "pdf": f.pdf, "page": f.page, "chunk_id": f.chunk_id}
    d.update(extra)
    return d


class Decisions(unittest.TestCase):
    def answer(self, question, generator=None, cfg=None):
        cfg = cfg or fixture_config()
        p = Pipeline(cfg, retriever=fixture_retriever(cfg), generator=generator or TopFact())
        return p.answer(question, qid="T1")

    def test_table(self):
        cases = [
            ("numeric conflict", "How many days do customers have to request a refund?", "ABSTAIN",
             "conflict:numeric:refund-policy#p1:refund-policy-2019#p1"),
            ("polarity conflict", "Can we store social security numbers in plaintext?", "ABSTAIN",
             "conflict:polarity:encryption-standard#p1:security-policy-legacy#p1"),
            ("stale, high risk", "How long are customer invoices retained?", "ABSTAIN",
             "stale_sources:invoice-retention-2020#p1"),
            ("old document, low risk", "When does the staff cafeteria open?", "ANSWER", None),
            ("variant", "Can we downgrade without penalties?", "CLARIFY", "ambiguous:variant"),
            ("variant named", "What is the downgrade penalty on the Enterprise plan?", "ANSWER", None),
            ("nothing retrieved", "What is the capital of France?", "ABSTAIN", "low_confidence:no_hits"),
        ]
        for name, q, decision, reason in cases:
            with self.subTest(name):
                r = self.answer(q)
                row = r.row
                self.assertEqual(row["decision"], decision, row["reasons"])
                self.assertEqual(row["reasons"][:1], [reason] if reason else [])
                if decision == "ANSWER":
                    self.assertEqual(row["answer_json"]["citations"], [r.facts_b[0].chunk_id])
                    self.assertEqual(row["cited_chunks"], {r.facts_b[0].chunk_id: r.facts_b[0].quote})
                    self.assertEqual(row["message"], "")
                else:
                    self.assertEqual(row["answer_json"], {"claim": "not in context", "citations": []})
                    self.assertEqual(row["cited_chunks"], {})
                    self.assertEqual(row["confidence"], "Low")
                    self.assertTrue(row["message"])

    def test_conflict_row_names_both_sources(self):
        row = self.answer("Can we store social security numbers in plaintext?").row
        self.assertEqual(row["conflicts"], [{"kind": "polarity", "axis": "permission",
                                             "a": "encryption-standard#p1", "b": "security-policy-legacy#p1",
                                             "reason": "permission: neg vs pos",
                                             "evidence": {
                                                 "a": "Social security numbers must not be stored in plaintext.",
                                                 "b": "Social security numbers may be stored in plaintext "
                                                      "on the internal file server."}}])
        self.assertIn("encryption-standard", row["message"])
        self.assertIn("security-policy-legacy", row["message"])
        self.assertEqual(row["risk"]["level"], "high")

    def test_block_rules(self):
        q = "When does the staff cafeteria open?"
        cases = [
            ("cites a chunk that was not retrieved",
             lambda fs: {"answer_sentences": [row_of(fs[0], chunk_id="plans#p3")], "confidence": "High"},
             "invalid_citations:citation 'plans#p3' does not match any retrieved chunk"),
            ("a sentence without a citation",
             lambda fs: {"answer_sentences": [{"sentence": "Opens at 8.", "pdf": "cafeteria", "page": 1}],
                         "confidence": "High"},
             "invalid_citations:sentence 1 has no citation"),
        ]
        for name, make, reason in cases:
            with self.subTest(name):
                row = self.answer(q, Fixed(make)).row
                self.assertEqual(row["decision"], "BLOCK")
                self.assertEqual(row["reasons"][0], reason)
                self.assertEqual(row["answer_json"], {"claim": "not in context", "citations": []})

    def test_more_than_max_citations_blocks(self):
        cfg = fixture_config()
        cfg["guards"]["max_citations"] = 1
        make = lambda fs: {"answer_sentences": [row_of(f) for f in fs[:2]], "confidence": "High"}  # noqa: E731
        r = self.answer("Who handles refunds and when are approved refunds paid?", Fixed(make), cfg)
        self.assertGreaterEqual(len(r.facts_b), 2)
        self.assertEqual(r.row["decision"], "BLOCK")
        self.assertIn("invalid_citations:2 citations, at most 1 allowed", r.row["reasons"])

    def test_generator_refusal_is_low_confidence(self):
        make = lambda fs: {"answer_sentences": [], "confidence": "Low", "refused": True,  # noqa: E731
                           "reasons": ["below_threshold"]}
        row = self.answer("When does the staff cafeteria open?", Fixed(make)).row
        self.assertEqual((row["decision"], row["reasons"]), ("ABSTAIN", ["low_confidence:answer_refused:below_threshold"]))

    def test_refusal_token_from_config(self):
        cfg = fixture_config()
        cfg["answer"]["refusal"] = "Not found in provided PDFs"
        row = self.answer("What is the capital of France?", cfg=cfg).row
        self.assertEqual(row["answer_json"]["claim"], "Not found in provided PDFs")

    def test_extractive_generator_end_to_end(self):
        cfg = fixture_config()
        p = Pipeline(cfg, retriever=fixture_retriever(cfg))
        row = p.answer("When does the staff cafeteria open?", qid="E1").row
        self.assertEqual(row["decision"], "ANSWER", row["reasons"])
        self.assertEqual(row["answer_json"]["citations"], ["cafeteria#p1"])
        self.assertIn("8 am", row["answer_json"]["claim"])
        # verbatim: every answer sentence is a substring of its cited chunk
        self.assertIn(row["answer_json"]["claim"], row["cited_chunks"]["cafeteria#p1"])


class Row(unittest.TestCase):
    def test_keys_and_parallel_scores(self):
        cfg = fixture_config()
        p = Pipeline(cfg, retriever=fixture_retriever(cfg), generator=TopFact())
        r = p.answer("How many days do customers have to request a refund?", qid="Q7")
        self.assertEqual(tuple(r.row), TRACE_KEYS)
        self.assertEqual(r.row["qid"], "Q7")
        self.assertEqual(r.row["retrieved_ids"], [h.chunk_id for h in r.retrieval.hits])
        self.assertEqual(r.row["retrieved_scores"], [h.similarity for h in r.retrieval.hits])
        self.assertEqual(r.row["signals"], r.retrieval.signals)
        timed = p.answer("How many days do customers have to request a refund?", qid="Q7", timings=True).row
        self.assertEqual(tuple(timed), TRACE_KEYS + ("timings_ms",))
        self.assertEqual(sorted(timed["timings_ms"]), ["answer", "guards", "retrieve", "total"])
        del timed["timings_ms"]
        self.assertEqual(timed, r.row)


if __name__ == "__main__":
    unittest.main()

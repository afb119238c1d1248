"""Background term weights (issue 43 item 2): a term's weight does not change when unrelated
documents are added to the index.

Expected values are derived by hand from the committed ``mini_rag/data/background_en.txt``
(SCOWL levels; tools/build_background.py): it lists 52,923 terms, 2,099 at level 10, 3,092 at
20, 10,476 at 35, 2,021 at 40, 7,752 at 50, 2,627 at 55, 4,365 at 60 and 20,491 at 70.  SCOWL
puts "agreement" and "court" at level 10, "confidential" at 20, "subpoena" at 40.  So
"agreement" ranks 2,099 / 2 = 1,049.5 and weighs ln(1,050.5); "subpoena" ranks 2,099 + 3,092 +
10,476 + 2,021 / 2 = 16,677.5 and weighs ln(16,678.5); an unlisted term ranks 2 x 52,923 =
105,846 and weighs ln(105,847).

A question scoped to a document adds 1.25 (``DOC_IDF_WEIGHT``) x the term's BM25 idf within
the document, ln(1 + (n - df + 0.5) / (df + 0.5)): in the three-chunk NDA below "subpoena" is in
one chunk (ln(1 + 2.5 / 1.5) = ln(8 / 3)), "recipient" in two (ln(1.6)), "witness" in none
(ln(8)).
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

from mini_rag.config import DEFAULTS  # noqa: E402
from mini_rag.errors import MiniRagError  # noqa: E402
from mini_rag.indexing.background import (DOC_IDF_WEIGHT, Background, DocumentView, answer_index,  # noqa: E402
                                          level_idf, load_levels, scoped_index, scoped_retriever)
from mini_rag.indexing.index import build_index  # noqa: E402
from mini_rag.pipeline import Pipeline  # noqa: E402
from mini_rag.search.retrieve import Retriever  # noqa: E402
from mini_rag.text.analysis import Analyzer  # noqa: E402
from mini_rag.text.corpus import load_chunks  # noqa: E402

NDA = {"_id": "nda", "title": "", "text": (
    "The Recipient shall keep the Confidential Information secret.\n\n"
    "The Recipient may disclose Confidential Information when a court issues a subpoena, after notice.\n\n"
    "This agreement ends after three years.")}
# Unrelated documents that use the question's words (court, subpoena, agreement, witness) often.
OTHERS = [
    {"_id": "court-1", "title": "", "text": "A court may issue a subpoena to a witness. The court keeps the agreement."},
    {"_id": "court-2", "title": "", "text": "Every subpoena names a court. A witness answers the subpoena in court."},
    {"_id": "court-3", "title": "", "text": "The court reads the agreement of the parties about the subpoena."},
]
QUESTION = "May the Recipient disclose Confidential Information to a witness under a subpoena from a court?"


def _index(docs):
    d = tempfile.mkdtemp()
    path = os.path.join(d, "corpus.jsonl")
    with open(path, "w", encoding="utf-8") as fh:
        for row in docs:
            fh.write(json.dumps(row) + "\n")
    return path, build_index(load_chunks(path))


def _pipeline(docs, **answer):
    path, index = _index(docs)
    cfg = copy.deepcopy(DEFAULTS)
    cfg["corpus"]["path"] = path
    cfg["answer"].update(answer)
    return Pipeline(cfg, retriever=Retriever(index, cfg))


class Levels(unittest.TestCase):

    def test_committed_file(self):
        levels = load_levels()
        self.assertEqual(len(levels), 52923)
        counts = {}
        for level in levels.values():
            counts[level] = counts.get(level, 0) + 1
        self.assertEqual(counts, {10: 2099, 20: 3092, 35: 10476, 40: 2021, 50: 7752, 55: 2627, 60: 4365, 70: 20491})
        self.assertEqual((levels["agreement"], levels["court"], levels["confidenti"], levels["subpoena"]),
                         (10, 10, 20, 40))

    def test_background_weights(self):
        w = Background(None)
        self.assertAlmostEqual(w.background_idf("agreement"), math.log(1050.5), places=12)
        self.assertAlmostEqual(w.background_idf("subpoena"), math.log(16678.5), places=12)
        self.assertAlmostEqual(w.background_idf("cnli99"), math.log(105847.0), places=12)
        self.assertEqual(level_idf({"a": 10, "b": 10, "c": 35}), {10: math.log(2.0), 35: math.log(3.5)})

    def test_other_analyzer_reads_the_default_terms(self):
        # an index analyzed without stemming holds "subpoenas"; the table is keyed by "subpoena"
        plain = Analyzer(stemmer="none")
        self.assertEqual(plain.analyze("subpoenas"), ["subpoenas"])

        class Unstemmed:
            analyzer = plain
        w = Background(Unstemmed())
        self.assertEqual(w.level("subpoenas"), 40)
        self.assertAlmostEqual(w.background_idf("subpoenas"), math.log(16678.5), places=12)

    def test_bad_line_names_the_file_and_line(self):
        d = tempfile.mkdtemp()
        path = os.path.join(d, "bg.txt")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write("# notice\n10 a b\nten c\n")
        with self.assertRaises(MiniRagError) as cm:
            load_levels(path)
        self.assertIn("bg.txt:3:", str(cm.exception))

    def test_modes(self):
        _, index = _index([NDA])
        self.assertIs(answer_index(index, {"answer": {"term_weights": "index"}}), index)
        self.assertIs(scoped_index(index, "nda"), index)
        self.assertEqual(DEFAULTS["answer"]["term_weights"], "document")
        w = answer_index(index, DEFAULTS)
        self.assertIsInstance(w, Background)
        self.assertIsInstance(scoped_index(w, "nda"), DocumentView)
        self.assertIs(scoped_index(w, None), index)          # an unscoped question reads the index


class Independence(unittest.TestCase):
    """The same scoped question, asked of an index of its contract alone and of one with three
    unrelated documents added."""

    def test_document_weights(self):
        _, crowded = _index([NDA] + OTHERS)
        v = Background(crowded).view("nda")
        self.assertEqual(DOC_IDF_WEIGHT, 1.25)
        # "recipient" and "witness" are at level 20: rank 2,099 + 3,092 / 2 = 3,645
        for term, bg, own in (("subpoena", 16678.5, 8 / 3), ("recipi", 3646.0, 1.6), ("wit", 3646.0, 8.0)):
            self.assertAlmostEqual(v.idf(term), math.log(bg) + 1.25 * math.log(own), places=12)

    def test_weights_do_not_move(self):
        _, alone = _index([NDA])
        _, crowded = _index([NDA] + OTHERS)
        a, b = Background(alone).view("nda"), Background(crowded).view("nda")
        for term in ("court", "subpoena", "agreement", "confidenti", "recipi", "disclos", "wit", "cnli99"):
            self.assertEqual(a.idf(term), b.idf(term), term)
            self.assertEqual(a.doc_freq(term), b.doc_freq(term), term)
        # the index's own idf does move: the test could fail
        self.assertNotEqual(alone.idf("subpoena"), crowded.idf("subpoena"))

    def test_view_is_the_document_alone(self):
        _, crowded = _index([NDA] + OTHERS)
        w = Background(crowded)
        v = w.view("nda")
        self.assertEqual([c.chunk_id for c in v.chunks], ["nda#p0", "nda#p1", "nda#p2"])
        # subpoena: nda#p1 only (the index: also court-1, court-2, court-3); witness: no chunk
        # of nda but an English word; cnli99: nowhere, no English word
        for term, want in (("subpoena", 1), ("court", 1), ("recipi", 2), ("wit", 1), ("cnli99", 0)):
            self.assertEqual(v.doc_freq(term), want, term)
        self.assertEqual((crowded.doc_freq("subpoena"), crowded.doc_freq("wit")), (4, 2))
        self.assertIs(w.view("nda"), v)                     # built once per document

    def test_same_decision(self):
        one = _pipeline([NDA], term_weights="document").answer(QUESTION, doc_scope="nda")
        many = _pipeline([NDA] + OTHERS, term_weights="document").answer(QUESTION, doc_scope="nda")
        p1, p2 = one.answer.detail["parts"][0], many.answer.detail["parts"][0]
        self.assertEqual(p1["idf"], p2["idf"])
        self.assertEqual(p1["key_terms"], p2["key_terms"])
        self.assertEqual(one.row["answer_json"], many.row["answer_json"])
        self.assertEqual(one.row["decision"], many.row["decision"])

    def test_index_weights_differ(self):
        one = _pipeline([NDA], term_weights="index").answer(QUESTION, doc_scope="nda")
        many = _pipeline([NDA] + OTHERS, term_weights="index").answer(QUESTION, doc_scope="nda")
        self.assertNotEqual(one.answer.detail["parts"][0]["idf"], many.answer.detail["parts"][0]["idf"])

    def test_unscoped_question_reads_the_index(self):
        a = _pipeline([NDA] + OTHERS, term_weights="index").answer(QUESTION)
        b = _pipeline([NDA] + OTHERS, term_weights="document").answer(QUESTION)
        self.assertEqual(a.answer.detail["parts"][0]["idf"], b.answer.detail["parts"][0]["idf"])

    def test_other_documents_examples_do_not_bridge(self):
        # court-4 lists examples of "parties" ("third parties, such as agents, consultants and
        # advisors"): with the index's weights the question's "agents" and "consultants" (two of
        # its examples, and not the class word) are bridged to "parties" in the crowded index
        # only; with the document's view in neither
        example = {"_id": "court-4", "title": "", "text": (
            "The court may hear third parties, such as agents, consultants and advisors.")}
        question = "May the Recipient tell agents and consultants about the Confidential Information?"
        for weights, differ in (("index", True), ("document", False)):
            one = _pipeline([NDA], term_weights=weights).analyze(question, "nda")
            many = _pipeline([NDA, example], term_weights=weights).analyze(question, "nda")
            self.assertEqual(one.bridges != many.bridges, differ, weights)
            self.assertNotIn("agent", one.bridges)

    def test_english_word_is_no_typo(self):
        # "count" is not in the index; the index's "counti" is one edit away
        docs = [{"_id": "d", "title": "", "text": "The counties keep the register of every county."}]
        path, index = _index(docs)
        cfg = copy.deepcopy(DEFAULTS)
        fixes = {}
        Retriever(index, cfg).query_terms("count", fixes)
        self.assertEqual(fixes, {"count": "counti"})
        fixes = {}
        known = scoped_retriever(Retriever(index, cfg), Background(index), "d")
        self.assertEqual(known.query_terms("count", fixes), ["count"])
        self.assertEqual(fixes, {})
        # "cuonty" is no English word: corrected as before
        self.assertEqual(known.query_terms("cuonty", fixes), ["counti"])
        self.assertEqual(fixes, {"cuonty": "counti"})
        # an unscoped question, or index weights: the retriever itself
        self.assertIsInstance(scoped_retriever(Retriever(index, cfg), Background(index), None), Retriever)
        self.assertIsInstance(scoped_retriever(Retriever(index, cfg), index, "d"), Retriever)


if __name__ == "__main__":
    unittest.main()

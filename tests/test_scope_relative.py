"""Rule 2b of synthesize.py (issue 30): a question scoped to one document (``doc_scope``) is
also on topic where that document holds as much of the key terms as any other document does.

Expected values are derived by hand.  In both corpora below each of the question's three
content terms (ledger, archiv, quarter) is in the same number of chunks, so they weigh the
same idf: all three are key terms and a chunk's key coverage is the share of them it holds.
"""
import copy
import json
import os
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from mini_rag.config import DEFAULTS  # noqa: E402
from mini_rag.indexing.index import build_index  # noqa: E402
from mini_rag.pipeline import Pipeline  # noqa: E402
from mini_rag.search.retrieve import Retriever  # noqa: E402
from mini_rag.text.corpus import load_chunks  # noqa: E402

QUESTION = "Is the ledger archived quarterly?"
# Each term in two chunks: "one" holds ledger and archived (2 of 3), so do "two" (ledger,
# quarterly) and "three" (archived, quarterly).  No document holds all three.
PARAPHRASED = [
    {"_id": "one", "title": "", "text": "The ledger is archived by the clerk."},
    {"_id": "two", "title": "", "text": "The ledger is reviewed every quarter by the auditor."},
    {"_id": "three", "title": "", "text": "Invoices are archived every quarter by the bookkeeper."},
]
# The same with a fourth document holding all three terms (each term now in three chunks).
STATED = PARAPHRASED + [{"_id": "four", "title": "", "text": "The ledger is archived every quarter by the treasurer."}]


def _pipeline(docs, **answer):
    d = tempfile.mkdtemp()
    path = os.path.join(d, "corpus.jsonl")
    with open(path, "w", encoding="utf-8") as fh:
        for row in docs:
            fh.write(json.dumps(row) + "\n")
    cfg = copy.deepcopy(DEFAULTS)
    cfg["corpus"]["path"] = path
    cfg["answer"]["term_weights"] = "index"    # rule 2b reads the other documents: index weights only
    cfg["answer"].update(answer)
    return Pipeline(cfg, retriever=Retriever(build_index(load_chunks(path)), cfg))


def _part(result):
    return result.answer.detail["parts"][0]


class ScopeRelative(unittest.TestCase):

    def test_terms_weigh_the_same(self):
        part = _part(_pipeline(PARAPHRASED).answer(QUESTION, doc_scope="one"))
        self.assertEqual(sorted(part["key_terms"]), ["archiv", "ledger", "quarter"])
        self.assertEqual(len(set(part["idf"].values())), 1)

    def test_no_document_states_it_whole(self):
        # "one" holds 2/3 of K (< 0.7, rule 2 refuses); the other documents' best is 2/3 too,
        # and 2/3 >= 0.5: rule 2b puts "one#p0" on topic.
        res = _pipeline(PARAPHRASED).answer(QUESTION, doc_scope="one")
        part = _part(res)
        self.assertAlmostEqual(part["key_coverage"], 2 / 3, places=4)
        self.assertAlmostEqual(part["other_key_coverage"], 2 / 3, places=4)
        self.assertEqual(part["outcome"], "answered")
        self.assertEqual(res.row["answer_json"]["citations"], ["one#p0"])
        self.assertEqual(res.row["answer_json"]["claim"], "The ledger is archived by the clerk.")

    def test_another_document_states_it_whole(self):
        # "four" holds all of K: 2/3 < 1.0, so "one" is not as close as the corpus comes.
        res = _pipeline(STATED).answer(QUESTION, doc_scope="one")
        part = _part(res)
        self.assertAlmostEqual(part["other_key_coverage"], 1.0)
        self.assertEqual(part["outcome"], "key_terms_not_covered")
        self.assertEqual(res.row["answer_json"]["citations"], [])

    def test_off_under_document_weights(self):
        # [answer] term_weights = "document" (the default, issue 43): a scoped question's decision
        # does not depend on the other documents, so rule 2b never reads them
        part = _part(_pipeline(PARAPHRASED, term_weights="document").answer(QUESTION, doc_scope="one"))
        self.assertNotIn("other_key_coverage", part)
        self.assertEqual(part["outcome"], "key_terms_not_covered")

    def test_switched_off(self):
        part = _part(_pipeline(PARAPHRASED, scope_relative=False).answer(QUESTION, doc_scope="one"))
        self.assertEqual(part["outcome"], "key_terms_not_covered")
        self.assertNotIn("other_key_coverage", part)

    def test_floor(self):
        # the scoped document must still hold scope_min_key_coverage of K: 2/3 < 0.7
        part = _part(_pipeline(PARAPHRASED, scope_min_key_coverage=0.7).answer(QUESTION, doc_scope="one"))
        self.assertEqual(part["outcome"], "key_terms_not_covered")

    def test_unscoped_question_is_not_read_against_others(self):
        # without a scope nothing changes: the best chunk holds 2/3 < 0.7 and rule 2b is not read
        part = _part(_pipeline(PARAPHRASED).answer(QUESTION))
        self.assertEqual(part["outcome"], "key_terms_not_covered")
        self.assertNotIn("other_key_coverage", part)


if __name__ == "__main__":
    unittest.main()

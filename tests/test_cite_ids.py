"""Citation markers whose ids hold words and signs (issue 41, item 2).

A table of ids in the shapes real systems use (file paths, URLs with "&", UUIDs, ids with "and",
"or", "to", dots, slashes and colons), each read from the text against the retrieved list RET
below (expected ids worked out by hand: numbers are 1-based ranks into RET); then mini_rag's own
answers to a sample of the gold set (every fourth question, answered afresh) rewritten with
inline ids of every shape, or ranks, score the same precision, chr and citation_validity as the
plain trace (bench/bench_cite_ids.py runs the same check on all of ``make eval``'s answers).
"""
import json
import os
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))
import score_eval  # noqa: E402

RET = ["billing-and-invoicing#p8",                           # 1
       "docs/billing/refund-policy.md#p2",                   # 2
       "https://kb.example.com/billing/faq?v=2&lang=en#p4",  # 3
       "3f2a1c9e-5b7d-4e2a-9c1b-0d8e7f6a5b4c",               # 4
       "doc-and-faq#p3",                                     # 5
       "a.b/c:12",                                           # 6
       "how-to-pay-or-not#p1"]                               # 7
KNOWN = {"Travel & Expenses, part 3": "a chunk known from --chunks, not retrieved",
         "and-more#p1": "an id that begins with a separator word"}

# (shape, text, expected citations, expected bad markers); every claim reads "Fees apply."
IDS = [
    ("id with 'and'", "Fees apply [billing-and-invoicing#p8].", ["billing-and-invoicing#p8"], []),
    ("id with 'and', parentheses", "Fees apply (billing-and-invoicing#p8).", ["billing-and-invoicing#p8"], []),
    ("id with 'and', (Source: X)", "Fees apply (Source: billing-and-invoicing#p8).", ["billing-and-invoicing#p8"], []),
    ("file path", "Fees apply [docs/billing/refund-policy.md#p2].", ["docs/billing/refund-policy.md#p2"], []),
    ("URL with &", "Fees apply [https://kb.example.com/billing/faq?v=2&lang=en#p4].", [RET[2]], []),
    ("UUID", "Fees apply [3f2a1c9e-5b7d-4e2a-9c1b-0d8e7f6a5b4c].", [RET[3]], []),
    ("doc-and-faq#p3", "Fees apply [doc-and-faq#p3].", ["doc-and-faq#p3"], []),
    ("a.b/c:12", "Fees apply [a.b/c:12].", ["a.b/c:12"], []),
    ("'or' and 'to'", "Fees apply [how-to-pay-or-not#p1].", ["how-to-pay-or-not#p1"], []),
    ("known id with blanks, & and a comma", "Fees apply [Travel & Expenses, part 3].", ["Travel & Expenses, part 3"], []),
    ("known id starting with 'and'", "Fees apply [and-more#p1].", ["and-more#p1"], []),
    ("document id with 'and'", "Fees apply [billing-and-invoicing].", ["billing-and-invoicing#p8"], []),
    # lists, ranges and ranks next to such ids
    ("list, comma", "Fees apply [doc-and-faq#p3, a.b/c:12].", ["doc-and-faq#p3", "a.b/c:12"], []),
    ("list, 'and'", "Fees apply [billing-and-invoicing#p8 and doc-and-faq#p3].", [RET[0], RET[4]], []),
    ("list, '&'", "Fees apply [doc-and-faq#p3 & https://kb.example.com/billing/faq?v=2&lang=en#p4].",
     [RET[4], RET[2]], []),
    ("list, ';' with a known id", "Fees apply [Travel & Expenses, part 3; billing-and-invoicing#p8].",
     ["Travel & Expenses, part 3", RET[0]], []),
    ("id and rank", "Fees apply [billing-and-invoicing#p8, 6].", [RET[0], RET[5]], []),
    ("chained ids", "Fees apply [doc-and-faq#p3][a.b/c:12].", ["doc-and-faq#p3", "a.b/c:12"], []),
    ("rank range", "Fees apply [1-3].", RET[:3], []),
    ("ranks, 'and'", "Fees apply [2 and 7].", [RET[1], RET[6]], []),
    ("(Sources: X; Y)", "Fees apply (Sources: billing-and-invoicing#p8; how-to-pay-or-not#p1).", [RET[0], RET[6]], []),
    ("Sources: list", "Fees apply.\n\nSources:\n- billing-and-invoicing#p8\n- Travel & Expenses, part 3",
     [RET[0], "Travel & Expenses, part 3"], []),
    # ids that name no chunk: one bad marker, the id read whole
    ("unknown id with 'and'", "Fees apply [billing-and-invoicing#p99].", [], ["[billing-and-invoicing#p99]"]),
    ("unknown id with '&' in a list", "Fees apply [q&a#p9, 1].", [RET[0]], ["[q&a#p9, 1]"]),
    ("rank past the retrieved", "Fees apply [9].", [], ["[9]"]),
]

# Bracketed prose with the same words: no marker.
PLAIN = ["Fees apply [rock and roll].", "Fees apply [terms & conditions].", "Fees apply [x,doc#p42].",
         "Fees apply (see the billing and invoicing policy)."]


class IdShapes(unittest.TestCase):
    def test_table(self):
        self.assertGreaterEqual(len(IDS), 20)
        for shape, text, cits, bad in IDS:
            with self.subTest(shape=shape):
                rd = score_eval.read_citations(text, RET, (KNOWN,))
                self.assertEqual(rd.claim, "Fees apply.")
                self.assertEqual(rd.citations, cits)
                self.assertEqual(rd.bad, bad)

    def test_prose_untouched(self):
        for text in PLAIN:
            with self.subTest(text=text):
                rd = score_eval.read_citations(text, RET, (KNOWN,))
                self.assertEqual((rd.claim, rd.citations, rd.bad), (text, [], []))

    def test_join_is_bounded(self):
        # in a list, an id is joined across at most MAX_ID_JOIN (8) separators: with nine "and"s
        # its pieces are read apart, "p0-" is no reference and the brackets stay text; alone in
        # its marker it is read whole
        self.assertEqual(score_eval.MAX_ID_JOIN, 8)
        eight = "-and-".join("p%d" % n for n in range(9)) + "#x"
        nine = "-and-".join("p%d" % n for n in range(10)) + "#x"
        for cid in (eight, nine):
            self.assertEqual(score_eval.read_citations("A [%s]." % cid, [cid]).citations, [cid])
        self.assertEqual(score_eval.read_citations("A [%s, 1]." % eight, [eight]).citations, [eight])
        rd = score_eval.read_citations("A [%s, 1]." % nine, [nine])
        self.assertEqual((rd.claim, rd.citations, rd.bad), ("A [%s, 1]." % nine, [], []))

    def test_linear_on_hostile_lists(self):
        import time
        for text in ("[" + "a and " * 33 + "] ") * 5000, "Sources:\n" + "x&" * 100000, \
                "Sources: [1]\n" + "a-and-b and " * 20000:
            t0 = time.perf_counter()
            score_eval.read_citations(text, RET, (KNOWN,))
            self.assertLess(time.perf_counter() - t0, 5.0)


def _sample_trace(tmp, every=4):
    """mini_rag's answers to every ``every``-th gold question, from a fresh index in ``tmp``."""
    from mini_rag.config import load_config
    from mini_rag.pipeline import open_pipeline
    config = load_config()
    config["corpus"]["path"] = os.path.join(ROOT, "gold", "corpus")
    config["index"]["path"] = os.path.join(tmp, "index.json.gz")
    with open(os.path.join(ROOT, "gold", "gold.jsonl"), encoding="utf-8") as fh:
        gold = [json.loads(line) for line in fh if line.strip()][::every]
    pipe = open_pipeline(config, quiet=True)
    trace = [pipe.answer(g["question"], qid=g["qid"], doc_scope=g.get("doc_scope")).row for g in gold]
    return gold, trace


class MiniRagRewritten(unittest.TestCase):
    def test_same_figures(self):
        import bench_cite_ids as bench
        with tempfile.TemporaryDirectory() as tmp:
            gold, trace = _sample_trace(tmp)
        cited = [r for r in trace if r["answer_json"].get("citations")]
        self.assertGreater(len(cited), 30)
        self.assertTrue(any(len(r["answer_json"]["citations"]) > 1 for r in cited))
        self.assertTrue(any("-and-" in c for r in cited for c in r["answer_json"]["citations"]))
        plain, rows = bench.table(gold, trace, 0.005)
        self.assertGreater(plain["precision"], 0.5)
        self.assertEqual(len(rows), len(bench.SHAPES) * len(bench.STYLES))
        for shape, style, got, worst in rows:
            with self.subTest(shape=shape, style=style):
                self.assertLessEqual(worst, 0.005, (got, plain))

    def test_rewrite_moves_every_citation_into_the_text(self):
        import bench_cite_ids as bench
        gold = [{"qid": "Q", "question": "q", "answerable": True, "gold_claim_substr": ["fee"],
                 "gold_citations": ["billing-and-invoicing#p8"]}]
        trace = [{"qid": "Q", "retrieved_ids": ["x#p1", "billing-and-invoicing#p8", "doc#p2"],
                  "answer_json": {"claim": "A fee applies.", "citations": ["billing-and-invoicing#p8", "doc#p2"]}}]
        g, t = bench.rewrite(gold, trace, "a.b/c:12", "ranks")
        self.assertEqual(g[0]["gold_citations"], ["billing.and.invoicing/c:8"])
        self.assertEqual(t[0]["retrieved_ids"], ["x/c:1", "billing.and.invoicing/c:8", "doc/c:2"])
        self.assertEqual(t[0]["answer_json"], {"claim": "A fee applies [2-3].", "citations": []})
        g, t = bench.rewrite(gold, trace, "doc-and-faq#p3", "(Source: id; id)")
        self.assertEqual(t[0]["answer_json"]["claim"],
                         "A fee applies (Source: billing-and-invoicing-and-faq#p8; doc-and-faq#p2).")


if __name__ == "__main__":
    unittest.main()

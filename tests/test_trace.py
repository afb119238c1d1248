"""The trace row and the contract's text form (mini_rag/trace.py)."""
import json
import os
import sys
import unittest
from types import SimpleNamespace as S

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from mini_rag.fileio import dumps_jsonl  # noqa: E402
from mini_rag.trace import TRACE_KEYS, build_row, format_text  # noqa: E402

HITS = [S(chunk_id="b#p2", similarity=0.75), S(chunk_id="a#p0", similarity=0.5)]


def row(**over):
    args = dict(qid="Q1", question="How long?", hits=HITS, claim="Kept 30 days.", citations=["b#p2"],
                cited_chunks={"a#p0": "other", "b#p2": "Logs are kept 30 days."}, decision="ANSWER",
                reasons=[], message="", confidence="High", fallback_used=False, expansions=[],
                corrections={"zeta": "z", "alpha": "a"}, risk={"level": "low", "matched": []},
                conflicts=[], signals={"max": 0.75, "hit_count": 2})
    args.update(over)
    return build_row(**args)


class BuildRow(unittest.TestCase):
    def test_keys_in_contract_order(self):
        self.assertEqual(TRACE_KEYS, ("qid", "q", "retrieved_ids", "retrieved_scores", "answer_json",
                                      "cited_chunks", "decision", "reasons", "message", "confidence",
                                      "fallback_used", "expansions", "corrections", "risk", "conflicts",
                                      "signals", "decided_by", "validation"))
        self.assertEqual(tuple(row()), TRACE_KEYS)
        self.assertEqual(tuple(row(timings_ms={"total": 1.0})), TRACE_KEYS + ("timings_ms",))

    def test_values(self):
        r = row()
        self.assertEqual(r["retrieved_ids"], ["b#p2", "a#p0"])           # rank order kept
        self.assertEqual(r["retrieved_scores"], [0.75, 0.5])
        self.assertEqual(r["answer_json"], {"claim": "Kept 30 days.", "citations": ["b#p2"]})
        self.assertEqual(r["cited_chunks"], {"b#p2": "Logs are kept 30 days."})   # cited ones only
        self.assertEqual(list(r["corrections"]), ["alpha", "zeta"])      # sorted by key

    def test_serialized_line(self):
        line = dumps_jsonl([row(qid="Q\u00e9")])
        self.assertTrue(line.startswith('{"qid":"Q\u00e9","q":"How long?","retrieved_ids":["b#p2","a#p0"],'))
        self.assertTrue(line.endswith("\n") and line.count("\n") == 1)
        self.assertEqual(json.loads(line)["qid"], "Q\u00e9")


class TextForm(unittest.TestCase):
    def test_table(self):
        s1 = S(sentence="Logs are kept\n30 days.", pdf="logs", page=2, chunk_id="logs#p4")
        s2 = S(sentence="Backups 90 days.", pdf="bk", page=1, chunk_id="bk#p0")
        cases = [
            ("answer", ("ANSWER", [s1, s2], "Medium", "not in context", ""),
             "ANSWER:\n1. Logs are kept 30 days. (logs, p2, logs#p4)\n2. Backups 90 days. (bk, p1, bk#p0)\n"
             "CONFIDENCE: Medium"),
            ("abstain", ("ABSTAIN", [], "Low", "not in context", "Sources conflict."),
             "not in context\nSources conflict."),
            ("contract refusal text", ("CLARIFY", [s1], "Low", "Not found in provided PDFs", "Which plan?"),
             "Not found in provided PDFs\nWhich plan?"),
            ("no message", ("BLOCK", [], "Low", "not in context", ""), "not in context"),
        ]
        for name, args, want in cases:
            with self.subTest(name):
                self.assertEqual(format_text(*args), want)

    def test_plain_text_and_pages(self):
        """Issue 42 item 7: sentences as plain text; the page only for a document with pages."""
        md = S(sentence="1. Run `npm ci` with the **staff** account.", pdf="guide/install", page=1,
               chunk_id="guide/install#p3")
        pdf = S(sentence="* Logs are kept [30 days](#retention).", pdf="logs", page=2, chunk_id="logs#p4")
        cases = [
            ("no paging known: every page", None,
             "1. Run npm ci with the staff account. (guide/install, p1, guide/install#p3)\n"
             "2. Logs are kept 30 days. (logs, p2, logs#p4)"),
            ("logs has pages", {"logs"},
             "1. Run npm ci with the staff account. (guide/install, guide/install#p3)\n"
             "2. Logs are kept 30 days. (logs, p2, logs#p4)"),
            ("none has pages", set(),
             "1. Run npm ci with the staff account. (guide/install, guide/install#p3)\n"
             "2. Logs are kept 30 days. (logs, logs#p4)"),
        ]
        for name, paged, want in cases:
            with self.subTest(name):
                self.assertEqual(format_text("ANSWER", [md, pdf], "High", "not in context", paged=paged),
                                 "ANSWER:\n%s\nCONFIDENCE: High" % want)

    def test_markup_only_for_markdown_and_rest(self):
        """A sentence of a document in ``markup`` is shown as plain text, any other as written
        (a text file's "1." or "*" is its content)."""
        md = S(sentence="1. Run `npm ci`.", pdf="guide", page=1, chunk_id="guide#p3")
        txt = S(sentence="4. *Confidential* means data.", pdf="nda", page=1, chunk_id="nda#p2")
        got = format_text("ANSWER", [md, txt], "High", "not in context", paged=set(), markup={"guide"})
        self.assertEqual(got, "ANSWER:\n1. Run npm ci. (guide, guide#p3)\n"
                              "2. 4. *Confidential* means data. (nda, nda#p2)\nCONFIDENCE: High")
        from mini_rag.answer.synthesize import Answer, AnswerSentence
        answer = Answer([AnswerSentence(md.sentence, "guide", 1, "guide#p3"),
                         AnswerSentence(txt.sentence, "nda", 1, "nda#p2")], "High")
        self.assertEqual(answer.claim("not in context", {"guide"}), "Run npm ci. 4. *Confidential* means data.")
        self.assertEqual(answer.claim("not in context", frozenset()), "1. Run `npm ci`. 4. *Confidential* means data.")
        self.assertEqual(answer.claim("not in context"), "Run npm ci. Confidential means data.")

    def test_markup_documents_from_the_manifest(self):
        """The documents of a saved index whose file is .md or .rst (matched by content hash);
        .txt files, BEIR rows and an unreadable manifest give none."""
        import shutil
        import tempfile
        from mini_rag.config import load_config
        from mini_rag.trace import markup_documents
        from mini_rag.indexing.index import build_or_load
        tmp = tempfile.mkdtemp(prefix="markup_docs_")
        self.addCleanup(shutil.rmtree, tmp, True)
        files = {"docs/guide.md": "# Guide\n\n1. Run it.\n", "docs/sub/ref.rst": "Ref\n===\n\n* A **b**.\n",
                 "docs/nda.txt": "4. Confidential means data.\n", "docs/same.txt": "# Guide\n\n1. Run it.\n",
                 "beir.jsonl": '{"_id": "d1", "title": "T", "text": "1. Run it."}\n'}
        for rel, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
            with open(os.path.join(tmp, rel), "w", encoding="utf-8") as fh:
                fh.write(text)
        for corpus, want in (("docs", {"guide", "sub/ref"}), ("beir.jsonl", set())):
            with self.subTest(corpus=corpus):
                config = load_config(None)
                config["corpus"]["path"] = os.path.join(tmp, corpus)
                config["index"]["path"] = os.path.join(tmp, corpus + ".index.json.gz")
                with open(os.devnull, "w") as log:
                    build_or_load(config, log=log)
                got = markup_documents(config["index"]["path"])
                self.assertEqual(got, want)        # same.txt has guide.md's bytes: its own name tells
        self.assertEqual(markup_documents(os.path.join(tmp, "missing.json.gz")), frozenset())

    def test_paged_documents(self):
        """A document has pages when its last chunk is past page 1 (a form feed); chunks of a
        document are consecutive in the index."""
        from mini_rag.trace import paged_documents
        chunks = [S(chunk_id="a#p0", doc_id="a", page=1), S(chunk_id="a#p1", doc_id="a", page=1),
                  S(chunk_id="b#p0", doc_id="b", page=1), S(chunk_id="b#p1", doc_id="b", page=1),
                  S(chunk_id="b#p2", doc_id="b", page=2), S(chunk_id="c#p0", doc_id="c", page=1)]
        ids = {c.chunk_id: n for n, c in enumerate(chunks)}
        index = S(chunks=chunks, position=lambda cid: ids.get(cid, -1))
        self.assertEqual(paged_documents(index, ["a#p1", "b#p0", "c#p0", "zz#p9"]), {"b"})
        self.assertEqual(paged_documents(index, ["b#p2"]), {"b"})
        self.assertEqual(paged_documents(index, []), set())


if __name__ == "__main__":
    unittest.main()

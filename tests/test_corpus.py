"""Corpus loading and the chunking rule (mini_rag/text/corpus.py), on tests/fixtures/corpus.

The fixture has: front matter with an extra key, a UTF-8 BOM and CRLF line ends
(alpha.md); a .txt file with form feeds, a page boundary inside a paragraph run and
capitals / numbered / title-case headings (beta.txt); a file without a Markdown title
(gamma-note.md).  Expected values are read off the files by hand.
"""
import json
import os
import shutil
import tempfile
import unittest
from pathlib import Path

from mini_rag.text.corpus import chunk_document, corpus_files, load_chunks, load_corpus
from mini_rag.errors import MiniRagError

FIXTURE = str(Path(__file__).resolve().parent / "fixtures" / "corpus")


class ChunkIds(unittest.TestCase):
    def setUp(self):
        self.chunks = {c.chunk_id: c for c in load_chunks(FIXTURE)}

    def test_ids_pages_headings(self):
        # (chunk_id, page, is_heading, nearest heading, source line)
        table = [
            ("alpha-guide#p0", 1, True, "Alpha Refund Guide", 9),
            ("alpha-guide#p1", 1, False, "Alpha Refund Guide", 11),
            ("alpha-guide#p2", 1, True, "Exceptions", 15),      # two blank lines = one split
            ("alpha-guide#p3", 1, False, "Exceptions", 17),
            ("alpha-guide#p4", 1, False, "Exceptions", 20),
            ("beta#p0", 1, True, "RETENTION SCHEDULE", 1),      # capitals, .txt
            ("beta#p1", 1, False, "RETENTION SCHEDULE", 3),
            ("beta#p2", 2, True, "3.1 Deletion", 5),            # numbered, after a form feed
            ("beta#p3", 2, False, "3.1 Deletion", 7),
            ("beta#p4", 2, False, "3.1 Deletion", 11),          # three blank lines = one split
            ("beta#p5", 3, True, "Data Subject Requests", 12),  # title case, form feed ends a line
            ("beta#p6", 3, False, "Data Subject Requests", 14),
            ("gamma-note#p0", 1, False, "", 6),
            ("gamma-note#p1", 1, False, "", 8),
        ]
        self.assertEqual(sorted(self.chunks), sorted(row[0] for row in table))
        for cid, page, is_heading, heading, line in table:
            with self.subTest(chunk=cid):
                c = self.chunks[cid]
                self.assertEqual((c.page, c.is_heading, c.heading, c.line),
                                 (page, is_heading, heading, line))
                self.assertEqual(cid, "%s#p%d" % (c.doc_id, c.ordinal))

    def test_text_rule(self):
        table = [
            ("alpha-guide#p1", "Refunds are issued within 30 days of the purchase date."),  # CRLF joined
            ("alpha-guide#p3", "- Gift cards are non-refundable.\n- Promotional credits expire."),
            ("beta#p1", "Invoices are kept for seven years. Payroll records are kept for six years."),
            ("beta#p4", "Audit logs are retained for one year."),
        ]
        for cid, text in table:
            with self.subTest(chunk=cid):
                self.assertEqual(self.chunks[cid].text, text)
                self.assertNotIn("\r", self.chunks[cid].text)
                self.assertNotIn("\ufeff", self.chunks[cid].text)

    def test_front_matter(self):
        docs = {d.doc_id: d for d in load_corpus(FIXTURE)}
        self.assertEqual(sorted(docs), ["alpha-guide", "beta", "gamma-note"])
        table = [
            ("alpha-guide", "Alpha Refund Guide", "FDA", "2024-01-15", {"owner": "billing"}),
            ("beta", "beta", "", "", {}),                       # defaults: file name, no title
            ("gamma-note", "Continuous Manufacturing Note", "ICH", "2022-06-01", {}),
        ]
        for doc_id, title, authority, effective, meta in table:
            with self.subTest(doc=doc_id):
                d = docs[doc_id]
                self.assertEqual((d.title, d.authority, d.effective, d.metadata),
                                 (title, authority, effective, meta))
                for c in load_chunks(FIXTURE):
                    if c.doc_id == doc_id:
                        self.assertEqual((c.title, c.authority, c.effective), (title, authority, effective))

    def test_corpus_files_hashes(self):
        files = corpus_files(FIXTURE)
        self.assertEqual([f for f, _ in files], ["alpha.md", "beta.txt", "gamma-note.md"])
        self.assertTrue(all(len(h) == 64 for _, h in files))


class LongParagraphs(unittest.TestCase):
    def test_max_chunk_chars_splits_at_sentence_ends(self):
        docs = {d.doc_id: d for d in load_corpus(FIXTURE)}
        # beta#p1 is 74 characters: two sentences of 34 and 39 characters.
        chunks = chunk_document(docs["beta"], max_chunk_chars=40)
        ids = [c.chunk_id for c in chunks]
        self.assertIn("beta#p1.0", ids)
        self.assertIn("beta#p1.1", ids)
        self.assertIn("beta#p3", ids)                      # fits: keeps its plain id
        by_id = {c.chunk_id: c.text for c in chunks}
        self.assertEqual(by_id["beta#p1.0"], "Invoices are kept for seven years.")
        self.assertEqual(by_id["beta#p1.1"], "Payroll records are kept for six years.")


    def test_overlong_paragraph_is_always_cut(self):
        from mini_rag.text.corpus import MAX_PARAGRAPH_CHARS, parse_text_document
        self.assertEqual(MAX_PARAGRAPH_CHARS, 20000)
        # 5,000 words of 9 characters plus a space, no sentence end: 49,999 characters.
        # Cut at the last space at or before 20,000: 2,000 words (19,999 chars) per piece.
        words = ["w%08d" % i for i in range(5000)]
        doc = parse_text_document("# T\n\nintro.\n\n" + " ".join(words) + "\n", "t.md", "t")
        chunks = chunk_document(doc)
        by_id = {c.chunk_id: c.text for c in chunks}
        self.assertEqual(sorted(by_id), ["t#p0", "t#p1", "t#p2.0", "t#p2.1", "t#p2.2"])
        self.assertEqual([len(by_id["t#p2.%d" % m]) for m in range(3)], [19999, 19999, 9999])
        self.assertEqual(" ".join(by_id["t#p2.%d" % m] for m in range(3)), " ".join(words))
        # one 25,000-character word: cut at the limit itself
        doc = parse_text_document("x" * 25000 + "\n", "u.md", "u")
        self.assertEqual([len(c.text) for c in chunk_document(doc)], [20000, 5000])


class BeirJsonl(unittest.TestCase):
    def test_rows_pages_and_metadata(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "corpus.jsonl")
            rows = [{"_id": "d2", "title": "Two", "text": "first page\fsecond page\n\nsecond para",
                     "metadata": {"authority": "EMA", "effective": "2021-02-03", "k": 1}},
                    {"_id": 7, "title": "", "text": "plain"}]
            with open(path, "w", encoding="utf-8") as fh:
                fh.write("\n".join(json.dumps(r) for r in rows) + "\n")
            chunks = load_chunks(path)
            self.assertEqual([(c.chunk_id, c.page) for c in chunks],
                             [("7#p0", 1), ("d2#p0", 1), ("d2#p1", 2), ("d2#p2", 2)])
            self.assertEqual((chunks[1].authority, chunks[1].effective, chunks[1].metadata),
                             ("EMA", "2021-02-03", {"k": 1}))
            self.assertEqual(chunks[0].title, "")              # no title: the id is not indexed as one


class Errors(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def write(self, name, data: bytes):
        path = os.path.join(self.tmp, name)
        with open(path, "wb") as fh:
            fh.write(data)
        return path

    def test_error_messages(self):
        table = [
            ("unclosed", {"a.md": b"---\ntitle: x\n\nbody\n"}, "a.md:1: front matter opened with '---' is never closed"),
            ("bad line", {"a.md": b"---\ntitle x\n---\nbody\n"}, "a.md:2: front matter line must be 'key: value', got 'title x'"),
            ("bad date", {"a.md": b"---\neffective: 2024-13-01\n---\nbody\n"},
             "a.md:1: effective must be an ISO date YYYY-MM-DD, got '2024-13-01'"),
            ("twice", {"a.md": b"---\ntitle: x\ntitle: y\n---\nb\n"}, "a.md:3: front matter key 'title' given twice"),
            ("not utf-8", {"a.md": b"ok\n\xff\n"}, "a.md:2: not UTF-8 text, got byte 0xff"),
            ("duplicate id", {"a.md": b"---\ndoc_id: same\n---\nx\n", "b.md": b"---\ndoc_id: same\n---\ny\n"},
             "doc_id 'same' is already used by"),
            ("bad id", {"a.md": b"---\ndoc_id: a b\n---\nx\n"},
             "doc_id must be non-empty without '#' or white space, got 'a b'"),
        ]
        for label, files, message in table:
            with self.subTest(case=label):
                for f in os.listdir(self.tmp):
                    os.unlink(os.path.join(self.tmp, f))
                for name, data in files.items():
                    self.write(name, data)
                with self.assertRaises(MiniRagError) as cm:
                    load_corpus(self.tmp)
                self.assertIn(message, str(cm.exception))

    def test_missing_and_empty(self):
        missing = os.path.join(self.tmp, "nope")
        with self.assertRaises(MiniRagError) as cm:
            load_corpus(missing)
        self.assertEqual(str(cm.exception),
                         "%s: corpus not found (give a folder of .md/.rst/.txt files or a .jsonl file)" % missing)
        with self.assertRaises(MiniRagError) as cm:
            load_corpus(self.tmp)
        self.assertEqual(str(cm.exception), "%s: corpus folder has no .md, .rst or .txt files" % self.tmp)

    def test_jsonl_errors(self):
        table = [
            (b'{"_id": "a", "text": "x"}\n{oops\n', ":2: invalid JSON"),
            (b'[1, 2]\n', ":1: a corpus row must be a JSON object"),
            (b'{"_id": true, "text": "x"}\n', ":1: '_id' must be a string, got True"),
            (b'{"_id": "a", "text": 3}\n', ":1: 'text' and 'title' must be strings"),
        ]
        for data, message in table:
            with self.subTest(message=message):
                path = self.write("c.jsonl", data)
                with self.assertRaises(MiniRagError) as cm:
                    load_corpus(path)
                self.assertIn(path + message, str(cm.exception))


if __name__ == "__main__":
    unittest.main()

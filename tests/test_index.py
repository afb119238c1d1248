"""The inverted index (mini_rag/indexing/index.py): BM25 and TF-IDF weights computed by hand,
tie order, persistence (hash, gzip determinism) and stale-index detection."""
import copy
import io
import math
import os
import shutil
import tempfile
import unittest
from pathlib import Path

from mini_rag.text.analysis import Analyzer
from mini_rag.config import DEFAULTS
from mini_rag.errors import MiniRagError
from mini_rag.indexing.index import build_index, build_or_load, load_index, read_manifest, save_index
from mini_rag.records import Chunk
from mini_rag.search.retrieve import Retriever

FIXTURE = str(Path(__file__).resolve().parent / "fixtures" / "corpus")
PLAIN = Analyzer(stopwords="none", stemmer="none")


def chunk(cid, text, **kw):
    doc = cid.split("#")[0]
    return Chunk(chunk_id=cid, doc_id=doc, ordinal=int(cid.split("#p")[1]), page=1, text=text, **kw)


def three_docs():
    # dl = 3, 2, 4 terms; N = 3; avgdl = 3.
    return [chunk("d1#p0", "apple banana apple"),
            chunk("d2#p0", "banana cherry"),
            chunk("d3#p0", "cherry cherry cherry date")]


def config(**retrieval):
    cfg = copy.deepcopy(DEFAULTS)
    cfg["retrieval"].update(retrieval)
    return cfg


class Bm25ByHand(unittest.TestCase):
    def test_three_documents(self):
        index = build_index(three_docs(), PLAIN, k1=1.2, b=0.75)
        self.assertEqual((index.num_chunks, index.avgdl), (3, 3.0))
        idf_apple = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))     # df 1
        idf_cherry = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))    # df 2
        self.assertAlmostEqual(index.idf("apple"), idf_apple, places=15)
        self.assertAlmostEqual(index.idf("cherry"), idf_cherry, places=15)
        self.assertAlmostEqual(index.idf("zebra"), math.log(1 + 3.5 / 0.5), places=15)  # df 0
        expected = {
            # tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
            "d1#p0": idf_apple * 2 * 2.2 / (2 + 1.2 * (0.25 + 0.75 * 3 / 3)),
            "d2#p0": idf_cherry * 1 * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 2 / 3)),
            "d3#p0": idf_cherry * 3 * 2.2 / (3 + 1.2 * (0.25 + 0.75 * 4 / 3)),
        }
        hits = Retriever(index, config()).search("apple cherry", k=10)
        self.assertEqual([h.chunk_id for h in hits], ["d1#p0", "d3#p0", "d2#p0"])
        ceiling = idf_apple + idf_cherry
        for h in hits:
            with self.subTest(chunk=h.chunk_id):
                self.assertAlmostEqual(h.score, expected[h.chunk_id], places=12)
                self.assertAlmostEqual(h.similarity, expected[h.chunk_id] / ceiling, places=12)
                self.assertEqual(h.rank, [x.chunk_id for x in hits].index(h.chunk_id) + 1)

    def test_query_term_frequency_and_unknown_terms(self):
        index = build_index(three_docs(), PLAIN)
        r = Retriever(index, config())
        once = {h.chunk_id: h for h in r.search("apple", 3)}
        twice = {h.chunk_id: h for h in r.search("apple apple zebra", 3)}
        self.assertAlmostEqual(twice["d1#p0"].score, 2 * once["d1#p0"].score, places=12)
        # zebra (df 0) stays in the similarity's denominator
        ceiling = 2 * index.idf("apple") + math.log(1 + 3.5 / 0.5)
        self.assertAlmostEqual(twice["d1#p0"].similarity, twice["d1#p0"].score / ceiling, places=12)

    def test_no_shared_term(self):
        r = Retriever(build_index(three_docs(), PLAIN), config())
        self.assertEqual(r.search("zebra", 5), [])
        self.assertEqual(r.search("", 5), [])

    def test_tfidf_cosine(self):
        index = build_index(three_docs(), PLAIN)
        hits = Retriever(index, config(scoring="tfidf")).search("apple cherry", 3)
        idf = lambda df: math.log((1 + 3) / (1 + df)) + 1
        # d1: apple tf 2 (df 1), banana tf 1 (df 2); query: apple, cherry (tf 1 each)
        d1 = [(1 + math.log(2)) * idf(1), idf(2)]
        q = [idf(1), idf(2)]
        cos_d1 = d1[0] * q[0] / (math.sqrt(d1[0] ** 2 + d1[1] ** 2) * math.sqrt(q[0] ** 2 + q[1] ** 2))
        by_id = {h.chunk_id: h for h in hits}
        self.assertAlmostEqual(by_id["d1#p0"].score, cos_d1, places=12)
        self.assertAlmostEqual(by_id["d1#p0"].similarity, cos_d1, places=12)


class TieOrder(unittest.TestCase):
    def test_score_then_chunk_id(self):
        # Same text, so same score: the order must be chunk_id ascending, not corpus order.
        chunks = [chunk("b#p0", "same words"), chunk("c#p0", "same words"),
                  chunk("a#p1", "same words"), chunk("a#p0", "other")]
        r = Retriever(build_index(chunks, PLAIN), config())
        table = [(1, ["a#p1"]), (2, ["a#p1", "b#p0"]), (3, ["a#p1", "b#p0", "c#p0"]),
                 (9, ["a#p1", "b#p0", "c#p0"])]
        for k, ids in table:
            with self.subTest(k=k):
                self.assertEqual([h.chunk_id for h in r.search("same", k)], ids)

    def test_heading_chunks_are_not_searchable(self):
        chunks = [chunk("d#p0", "# Refunds", is_heading=True, heading="Refunds"),
                  chunk("d#p1", "Money back within 30 days.", heading="Refunds")]
        index = build_index(chunks, PLAIN)
        self.assertEqual(index.num_searchable, 1)
        hits = Retriever(index, config()).search("refunds", 5)
        self.assertEqual([h.chunk_id for h in hits], ["d#p1"])   # found through its heading
        self.assertEqual(index.chunk("d#p0").text, "# Refunds")  # still citable


class Persistence(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.corpus = os.path.join(self.tmp, "corpus")
        shutil.copytree(FIXTURE, self.corpus)
        self.cfg = copy.deepcopy(DEFAULTS)
        self.cfg["index"]["path"] = os.path.join(self.tmp, "index.json.gz")
        self.cfg["corpus"]["path"] = self.corpus

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def build(self, **kw):
        log = io.StringIO()
        index = build_or_load(self.cfg, log=log, **kw)
        return index, log.getvalue()

    def test_round_trip_and_determinism(self):
        index, log = self.build()
        self.assertEqual(log, "")
        path = self.cfg["index"]["path"]
        with open(path, "rb") as fh:
            first = fh.read()
        self.assertEqual(first[:2], b"\x1f\x8b")
        save_index(index, path)
        with open(path, "rb") as fh:
            self.assertEqual(fh.read(), first)              # byte-identical rewrite
        loaded = load_index(path)
        self.assertEqual([c.to_json() for c in loaded.chunks], [c.to_json() for c in index.chunks])
        q = "refund within 30 days"
        a = [(h.chunk_id, h.score) for h in Retriever(index, self.cfg).search(q, 5)]
        b = [(h.chunk_id, h.score) for h in Retriever(loaded, self.cfg).search(q, 5)]
        self.assertEqual(a, b)                               # bit-identical scores
        m = read_manifest(path)
        self.assertEqual((m["format_version"], m["stats"]["documents"], m["stats"]["chunks"]), (5, 3, 14))
        self.assertEqual(m["scoring"]["k1"], 1.5)                # configs/default.toml
        self.assertEqual(m["scoring"]["idf"], "ln(1 + (N - df + 0.5) / (df + 0.5))")
        self.assertEqual(sorted(m["documents"]), ["alpha-guide", "beta", "gamma-note"])
        self.assertEqual(m["analysis"], Analyzer().settings())

    def test_up_to_date_is_loaded_not_rebuilt(self):
        self.build()
        index, log = self.build()
        self.assertEqual(log, "")
        self.assertFalse(hasattr(index, "reused_chunks"))

    def test_stale_detection(self):
        self.build()
        beta = os.path.join(self.corpus, "beta.txt")
        with open(beta, "a", encoding="utf-8") as fh:
            fh.write("\nA new paragraph about invoices.\n")
        index, log = self.build()
        self.assertIn("is stale: 1 file changed (beta.txt); rebuilding", log)
        # alpha (5 chunks) and gamma-note (2) are reused; beta's 7 + 1 are analyzed again.
        self.assertEqual((index.num_chunks, index.reused_chunks), (15, 7))
        self.assertIn("beta#p7", [c.chunk_id for c in index.chunks])

        with open(os.path.join(self.corpus, "delta.md"), "w", encoding="utf-8") as fh:
            fh.write("Delta text.\n")
        os.unlink(os.path.join(self.corpus, "gamma-note.md"))
        index, log = self.build()
        self.assertIn("1 file added (delta.md); 1 file removed (gamma-note.md)", log)
        self.assertEqual(index.reused_chunks, 13)

        self.cfg["index"]["k1"] = 0.9
        index, log = self.build()
        self.assertIn("scoring settings differ (k1)", log)
        self.assertEqual(index.k1, 0.9)

        self.cfg["analysis"]["stemmer"] = "none"
        index, log = self.build()
        self.assertIn("analysis settings differ (stemmer", log)
        self.assertEqual(index.reused_chunks, 0)            # other analysis: nothing reused

        other = os.path.join(self.tmp, "other")
        shutil.copytree(FIXTURE, other)
        index, log = self.build(corpus_path=other)
        self.assertIn("it was built for corpus %r, not %r" % (self.corpus, other), log)

    def test_corrupt_or_foreign_files_are_never_used(self):
        self.build()
        path = self.cfg["index"]["path"]
        plain = os.path.join(self.tmp, "plain.json")
        index = load_index(path)
        save_index(index, plain)
        with open(plain, "rb") as fh:
            data = fh.read()
        # one byte of the chunk records (zlib blocks) changed
        sec = {s["name"]: s for s in read_manifest(plain)["sections"]}["chunks"]
        at = data.index(b"\n") + 1 + sec["offset"] + sec["length"] // 2
        edited = data[:at] + bytes([data[at] ^ 0x20]) + data[at + 1:]
        table = [
            ("edited body", edited, "plain.json: section 'chunks' does not match its crc32 (page 0,"),
            ("not an index", b'{"a": 1}\n', "plain.json:1: not a mini_rag index, got format None"),
            ("not json", b"hello\n", "plain.json:1: not a mini_rag index (the first line is not a JSON manifest)"),
            ("old version", data.replace(b'"format_version":5', b'"format_version":0', 1),
             "plain.json:1: index format version must be 1, 3, 4 or 5, got 0"),
        ]
        for label, data, message in table:
            with self.subTest(case=label):
                with open(plain, "wb") as fh:
                    fh.write(data)
                with self.assertRaises(MiniRagError) as cm:
                    load_index(plain)
                self.assertIn(message, str(cm.exception))
        # build_or_load refuses an unusable file, never uses or replaces it (issue 33): a
        # damaged section says to rebuild with 'index --force' ...
        save_index(index, path)
        with open(path, "rb") as fh:
            data = fh.read()
        with open(path, "wb") as fh:
            fh.write(data[:-10])
        with self.assertRaises(MiniRagError) as cm:
            self.build()
        self.assertIn("%s: not a readable index file" % path, str(cm.exception))
        self.assertIn("index --force", str(cm.exception))
        index, log = self.build(force=True)
        self.assertEqual(index.num_chunks, 14)
        # ... and a file that is no index at all is not replaced but by --force.
        with open(path, "wb") as fh:
            fh.write(b"garbage")
        with self.assertRaises(MiniRagError) as cm:
            self.build()
        self.assertIn("exists and is not a mini_rag index", str(cm.exception))
        with open(path, "rb") as fh:
            self.assertEqual(fh.read(), b"garbage")
        index, log = self.build(force=True)
        self.assertEqual(index.num_chunks, 14)

    def test_format_one_is_read_and_upgraded(self):
        from mini_rag.indexing.index import index_bytes
        index, _ = self.build()
        path = self.cfg["index"]["path"]
        old_bytes = index_bytes(index)
        with open(path, "wb") as fh:
            fh.write(old_bytes)
        self.assertEqual(read_manifest(path)["format_version"], 1)
        again, log = self.build()
        self.assertIn("has format version 1; saving it as version 5", log)
        self.assertEqual(read_manifest(path)["format_version"], 5)
        q = "refund within 30 days"
        self.assertEqual([(h.chunk_id, h.score) for h in Retriever(again, self.cfg).search(q, 5)],
                         [(h.chunk_id, h.score) for h in Retriever(index, self.cfg).search(q, 5)])
        _, log = self.build()
        self.assertEqual(log, "")

    def test_missing_corpus(self):
        self.cfg["corpus"]["path"] = os.path.join(self.tmp, "nope")
        with self.assertRaises(MiniRagError) as cm:
            self.build()
        self.assertIn("nope: corpus not found", str(cm.exception))


if __name__ == "__main__":
    unittest.main()


class GarbageCollectorPause(unittest.TestCase):
    def test_state_restored(self):
        import gc
        chunks = [Chunk(chunk_id="d#p0", doc_id="d", ordinal=0, page=1, text="apple banana")]
        was = gc.isenabled()
        try:
            for enabled in (True, False):
                with self.subTest(enabled=enabled):
                    (gc.enable if enabled else gc.disable)()
                    index = build_index(chunks)
                    index.prepare("tfidf")
                    self.assertEqual(gc.isenabled(), enabled)
                    self.assertEqual(index.doc_freq("appl"), 1)
        finally:
            (gc.enable if was else gc.disable)()

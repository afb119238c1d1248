"""Index format 3 (mini_rag/indexing/index.py, store.py, postings.py) and pruned top-k (retrieve.py): the
pruned and dense rankings equal the exhaustive one to the bit, on generated data with ties, repeated
query terms, a scope filter and both scoring functions, and on the shared collections
(../shared/data; skipped when absent); a saved index loads to the same postings,
weights and rankings; format 1 files are still read; damaged files are refused."""
import copy
import json
import os
import random
import shutil
import tempfile
import unittest
from pathlib import Path

from mini_rag.config import DEFAULTS
from mini_rag.text.corpus import chunk_document, load_corpus
from mini_rag.errors import MiniRagError
from mini_rag.indexing.index import build_index, index_bytes, load_index, read_manifest, save_index
from mini_rag.records import Chunk
from mini_rag.search.retrieve import Retriever
from tests.lanes import once_per_ci  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("MINI_RAG_DATA") or ROOT.parent / "shared" / "data")
COLLECTIONS = ["beir/scifact", "classic/cranfield", "classic/cisi", "classic/medline"]


def generated_chunks(n=1500, seed=5):
    """Zipfian made-up words; every 50th chunk repeats an earlier one (equal scores, so
    ties at the cut are broken by chunk_id), authorities alternate."""
    rng = random.Random(seed)
    words = ["w%s%s" % (chr(97 + i % 26), chr(97 + i // 26 % 26)) for i in range(600)]
    weights = [1.0 / (r + 1) for r in range(len(words))]
    texts = []
    for i in range(n):
        if i % 50 == 49:
            texts.append(texts[rng.randrange(len(texts))])
        else:
            texts.append(" ".join(rng.choices(words, weights, k=rng.randint(3, 40))))
    return [Chunk(chunk_id="d%04d#p%d" % (i // 3, i % 3), doc_id="d%04d" % (i // 3), ordinal=i % 3,
                  page=1, text=t, authority="A" if i % 2 else "B") for i, t in enumerate(texts)], words


def cfg(**retrieval):
    c = copy.deepcopy(DEFAULTS)
    c["retrieval"].update(retrieval)
    return c


def both(retriever, terms, k, scope="MIXED", alternatives=None):
    """(pruned, exhaustive) rankings of the same query; pruned is the MaxScore path's
    ranking when it equals the dense path's (``_dense_scores``), else both, so that any
    difference between the three paths fails the caller's comparison."""
    out = []
    for pruning, prune_min, dense_ratio in ((True, 0, 0), (True, 1 << 60, 1 << 60), (False, 0, 0)):
        retriever.pruning, retriever.prune_min, retriever.dense_ratio = pruning, prune_min, dense_ratio
        out.append(retriever.rank_terms(terms, k, scope, alternatives))
    retriever.pruning = True
    pruned, dense, full = out
    return (pruned if pruned == dense else (pruned, dense)), full


class PrunedEqualsExhaustive(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.chunks, cls.words = generated_chunks()
        cls.index = build_index(cls.chunks)

    def test_generated_queries(self):
        rng = random.Random(11)
        analyze = self.index.analyzer.analyze
        for scoring in ("bm25", "tfidf"):
            r = Retriever(self.index, cfg(scoring=scoring))
            for q in range(60):
                # Mixed rare and common words, some repeated (query tf > 1), an unknown one.
                words = rng.sample(self.words[:40], 2) + rng.sample(self.words, rng.randint(0, 4))
                words += words[:q % 3] + (["zzunknown"] if q % 7 == 0 else [])
                terms = analyze(" ".join(words))
                for k in (1, 3, 10, 100):
                    for scope in ("MIXED", "A"):
                        with self.subTest(scoring=scoring, q=q, k=k, scope=scope):
                            pruned, full = both(r, terms, k, scope)
                            self.assertEqual(pruned, full)
                            self.assertEqual(len(full), min(k, len(full)))

    def test_ties_at_the_cut_follow_chunk_id(self):
        r = Retriever(self.index, cfg())
        dup = self.chunks[49].text                  # chunk 49 repeats an earlier chunk
        terms = self.index.analyzer.analyze(dup)
        pruned, full = both(r, terms, 2)
        self.assertEqual(pruned, full)
        self.assertEqual(pruned[0][1], pruned[1][1])                        # a tie ...
        ids = [self.chunks[p].chunk_id for p, _s, _sim in pruned]
        self.assertEqual(ids, sorted(ids))                                  # ... by chunk_id

    def test_top_k_selection_with_many_ties(self):
        """_top against a plain sort on (score descending, chunk_id ascending)."""
        r = Retriever(self.index, cfg())
        rng = random.Random(3)
        tie = self.index.tie_rank
        for case in range(40):
            n = rng.choice((5, 50, 700, 1500))
            acc = {p: float(rng.randint(1, 6 if case % 2 else 10 ** 6)) for p in rng.sample(range(len(self.chunks)), n)}
            for k in (1, 2, 10, 100, 600):
                with self.subTest(case=case, n=n, k=k):
                    want = sorted(acc.items(), key=lambda kv: (-kv[1], tie[kv[0]]))[:k]
                    self.assertEqual(r._top(acc, k), want)

    def test_alternatives_weighted(self):
        r = Retriever(self.index, cfg())
        a, b, c = (self.index.analyzer.analyze(w)[0] for w in self.words[30:33])
        alts = {a: [((b,), 0.5)], c: [((a, b), 0.25)]}
        for k in (1, 5, 50):
            with self.subTest(k=k):
                pruned, full = both(r, [a, c, self.words[2]], k, "MIXED", alts)
                self.assertEqual(pruned, full)

    def test_retrieve_flow_unchanged(self):
        """The QA contract flow (threshold, fallback, MMR, expansion) on top of either core."""
        on, dense = Retriever(self.index, cfg()), Retriever(self.index, cfg())
        off = Retriever(self.index, cfg(pruning=False))
        on.prune_min = 0
        dense.prune_min, dense.dense_ratio = 1 << 60, 1 << 60
        for words in (self.words[5:8], self.words[100:103], ["what", "is", self.words[3]]):
            q = " ".join(words)
            self.assertEqual(on.retrieve(q).to_json(), off.retrieve(q).to_json())
            self.assertEqual(dense.retrieve(q).to_json(), off.retrieve(q).to_json())


class NumpyPath(unittest.TestCase):
    """[retrieval] numpy: the same rankings, floats included (skipped without numpy)."""

    def test_same_ranking(self):
        try:
            import numpy  # noqa: F401
        except ImportError:
            self.skipTest("numpy is not installed")
        chunks, words = generated_chunks(800, seed=9)
        built = build_index(chunks)
        tmp = tempfile.mkdtemp()
        try:
            save_index(built, os.path.join(tmp, "i.idx"))
            loaded = load_index(os.path.join(tmp, "i.idx"))
            rng = random.Random(4)
            for label, index in (("built", built), ("loaded", loaded)):
                for scoring in ("bm25", "tfidf"):
                    r = Retriever(index, cfg(scoring=scoring, numpy=True))
                    self.assertTrue(r.use_numpy(True))
                    a, b = (index.analyzer.analyze(w)[0] for w in words[20:22])
                    for q in range(40):
                        terms = index.analyzer.analyze(" ".join(rng.sample(words[:30], 2) + rng.sample(words, 3)))
                        alts = {terms[0]: [((a,), 0.5), ((a, b), 0.25)]} if q % 2 and scoring == "bm25" else None
                        for k in (1, 10, 100):
                            for scope in ("MIXED", "B"):
                                with self.subTest(index=label, scoring=scoring, q=q, k=k, scope=scope):
                                    r.use_numpy(True)
                                    got = r.rank_terms(terms, k, scope, alts)
                                    r.use_numpy(False)
                                    self.assertEqual(got, r.rank_terms(terms, k, scope, alts))
                                    self.assertTrue(all(type(p) is int and type(s) is float for p, s, _ in got))
        finally:
            shutil.rmtree(tmp)


@once_per_ci
class SharedCollections(unittest.TestCase):
    """Every test query of the shared collections, pruned == dense == exhaustive at k = 10 and 100."""

    def test_collections(self):
        found = [name for name in COLLECTIONS if (DATA / name / "corpus.jsonl").exists()]
        if not found:
            self.skipTest("no shared collection under %s (set MINI_RAG_DATA)" % DATA)
        for name in found:
            folder = DATA / name
            chunks = []
            for d in load_corpus(str(folder / "corpus.jsonl")):
                chunks.extend(chunk_document(d))
            index = build_index(chunks)
            r = Retriever(index, cfg())
            queries = []
            with open(folder / "queries.jsonl", encoding="utf-8") as fh:
                queries = [json.loads(line)["text"] for line in fh if line.strip()]
            for text in queries[:300]:
                terms = index.analyzer.analyze(text)
                for k in (10, 100):
                    pruned, full = both(r, terms, k)
                    if pruned != full:
                        self.fail("%s: query %r, k=%d: pruned %r != exhaustive %r"
                                  % (name, text, k, pruned[:3], full[:3]))


class FormatThree(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.chunks, self.words = generated_chunks(300, seed=2)
        self.chunks.append(Chunk(chunk_id="h#p0", doc_id="h", ordinal=0, page=1, text="Heading",
                                 is_heading=True, metadata={"k": "v"}))
        self.index = build_index(self.chunks)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_round_trip_plain_and_gzip(self):
        ref = Retriever(self.index, cfg())
        for name in ("i.idx", "i.json.gz"):
            with self.subTest(file=name):
                path = os.path.join(self.tmp, name)
                size = save_index(self.index, path)
                self.assertEqual(os.path.getsize(path), size)
                loaded = load_index(path)
                self.assertEqual(loaded.vocabulary, self.index.vocabulary)
                for t in self.index.vocabulary:
                    self.assertEqual(list(loaded.postings(t)[0]), self.index.postings(t)[0])
                    self.assertEqual(list(loaded.postings(t)[1]), self.index.postings(t)[1])
                    self.assertEqual(list(loaded._freqs[t]), self.index._freqs[t])
                    self.assertEqual(loaded.max_weights()[t], max(self.index.postings(t)[1]))
                self.assertEqual([c.to_json() for c in loaded.chunks],
                                 [c.to_json() for c in self.index.chunks])
                self.assertEqual(loaded.chunks[-1].metadata, {"k": "v"})
                self.assertEqual(loaded.chunk("d0003#p1").chunk_id, "d0003#p1")
                self.assertEqual(loaded.position("nope"), -1)
                self.assertEqual((loaded.avgdl, loaded.num_searchable), (self.index.avgdl, self.index.num_searchable))
                for pos in (0, 7, len(self.chunks) - 1):
                    self.assertEqual(loaded.terms(pos), self.index.terms(pos))
                # tfidf weights are computed from the stored tf: the same floats.
                self.assertEqual({t: list(w) for t, w in loaded.prepare("tfidf").items()},
                                 self.index.prepare("tfidf"))
                got = Retriever(loaded, cfg())
                for q in (self.words[:3], self.words[10:12] * 2, self.words[200:204]):
                    terms = self.index.analyzer.analyze(" ".join(q))
                    self.assertEqual(got.rank_terms(terms, 10), ref.rank_terms(terms, 10))
                # Saving a loaded index writes the same bytes.
                with open(path, "rb") as fh:
                    first = fh.read()
                again = os.path.join(self.tmp, "again-" + name)
                save_index(loaded, again)
                with open(again, "rb") as fh:
                    self.assertEqual(fh.read(), first)

    def test_manifest_lists_sections(self):
        path = os.path.join(self.tmp, "i.idx")
        save_index(self.index, path)
        m = read_manifest(path)
        self.assertEqual(m["format_version"], 5)
        names = [s["name"] for s in m["sections"]]
        self.assertEqual(names[:3], ["vocabulary", "chunk_ids", "chunks"])
        for s in m["sections"]:
            self.assertEqual((s["offset"] % 8, len(s["sha256"])), (0, 64))
        with open(path, "rb") as fh:
            self.assertEqual(len(fh.readline()) % 8, 0)         # the body starts aligned

    def test_format_one_still_read(self):
        path = os.path.join(self.tmp, "old.json")
        with open(path, "wb") as fh:
            fh.write(index_bytes(self.index))
        self.assertEqual(read_manifest(path)["format_version"], 1)
        old = load_index(path)
        terms = self.index.analyzer.analyze(" ".join(self.words[:4]))
        self.assertEqual(Retriever(old, cfg()).rank_terms(terms, 10),
                         Retriever(self.index, cfg()).rank_terms(terms, 10))

    def test_damaged_files_refused(self):
        path = os.path.join(self.tmp, "i.idx")
        save_index(self.index, path)
        with open(path, "rb") as fh:
            data = fh.read()
        head, body = data.split(b"\n", 1)
        flip = bytearray(body)
        flip[len(flip) // 2] ^= 0x01
        table = [
            ("truncated", data[:-20], "lies outside the file (truncated?)"),
            ("flipped byte", head + b"\n" + bytes(flip), "does not match its"),
            ("future version", head.replace(b'"format_version":5', b'"format_version":6') + b"\n" + body,
             "index format version must be 1, 3, 4 or 5, got 6"),
            ("retired version", head.replace(b'"format_version":5', b'"format_version":2') + b"\n" + body,
             "index format version must be 1, 3, 4 or 5, got 2; rebuild it with"),
            ("section missing", head.replace(b'"name":"bm25_max"', b'"name":"other"') + b"\n" + body,
             "index has no section bm25_max"),
        ]
        bad = os.path.join(self.tmp, "bad.idx")
        for label, content, message in table:
            with self.subTest(case=label):
                with open(bad, "wb") as fh:
                    fh.write(content)
                with self.assertRaises(MiniRagError) as cm:
                    load_index(bad)
                self.assertIn(message, str(cm.exception))
                self.assertIn("bad.idx", str(cm.exception))


if __name__ == "__main__":
    unittest.main()


class BlockMaxScore(unittest.TestCase):
    """MaxScore with the non-essential terms looked up block by block (block maxima skip
    blocks): the same ranking, scores and tie order as the exhaustive scorer, on built and
    loaded indexes, with 128-posting blocks and with 4-posting blocks (many blocks a term)."""

    def check(self, index, words, seed, rounds):
        rng = random.Random(seed)
        analyze = index.analyzer.analyze
        r = Retriever(index, cfg())
        calls = []
        lookups = r._block_lookups

        def counted(*args):
            out = lookups(*args)
            calls.append(len(out[0]))
            return out
        r._block_lookups = counted
        for q in range(rounds):
            # common words (long lists, non-essential) with a few rarer ones, some repeated
            words_q = rng.sample(words[:12], rng.randint(2, 5)) + rng.sample(words[12:], rng.randint(0, 3))
            words_q += words_q[:q % 2]
            terms = analyze(" ".join(words_q))
            for k in (1, 5, 10, 40):
                for scope in ("MIXED", "A"):
                    with self.subTest(seed=seed, q=q, k=k, scope=scope):
                        pruned, full = both(r, terms, k, scope)
                        self.assertEqual(pruned, full)
        self.assertTrue(calls, "the block lookups never ran")
        return calls

    @once_per_ci            # ~7 s; the same float sums on every interpreter (tests/lanes.py)
    def test_built_and_loaded(self):
        import mini_rag.indexing.index as index_mod
        import mini_rag.indexing.postings as postings_mod
        chunks, words = generated_chunks(2400, seed=17)
        tmp = tempfile.mkdtemp()
        try:
            for block in (128, 4):
                old = postings_mod.BLOCK
                postings_mod.BLOCK = index_mod.BLOCK = block
                try:
                    built = build_index(chunks)
                    path = os.path.join(tmp, "b%d.idx" % block)
                    save_index(built, path)
                    loaded = load_index(path)
                    self.assertEqual(read_manifest(path)["blocks"]["postings"], block)
                    for label, index in (("built", built), ("loaded", loaded)):
                        with self.subTest(block=block, index=label):
                            self.check(index, words, block, 25)
                    # the block maxima bound every weight of their block
                    store = loaded._store
                    for t in loaded.vocabulary[:50]:
                        i = loaded.term_id(t)
                        for j in range(store.term_blocks[i], store.term_blocks[i + 1]):
                            self.assertEqual(max(loaded.block_weights(i, j).values()), store.block_max[j])
                finally:
                    postings_mod.BLOCK = index_mod.BLOCK = old
        finally:
            shutil.rmtree(tmp)


class StoredBytes(unittest.TestCase):
    """The same corpus gives the same index file whatever PYTHONHASHSEED; sections whose
    hashes match but whose blocks are damaged are errors naming the file."""

    SCRIPT = ("import sys; sys.path.insert(0, %r); from tests.test_scale import generated_chunks; "
              "from mini_rag.indexing.index import build_index, save_index; "
              "save_index(build_index(generated_chunks(400, seed=3)[0]), sys.argv[1])")

    def test_hash_seed_does_not_matter(self):
        import subprocess
        import sys
        tmp = tempfile.mkdtemp()
        try:
            out = []
            for seed in ("0", "1", "987"):
                path = os.path.join(tmp, "i%s.idx" % seed)
                env = dict(os.environ, PYTHONHASHSEED=seed)
                subprocess.run([sys.executable, "-c", self.SCRIPT % str(ROOT), path], env=env, check=True)
                with open(path, "rb") as fh:
                    out.append(fh.read())
            self.assertEqual(out[0], out[1])
            self.assertEqual(out[0], out[2])
        finally:
            shutil.rmtree(tmp)

    def test_damaged_blocks(self):
        from mini_rag.indexing import index as index_mod
        from mini_rag.indexing.store import write_sections
        chunks, words = generated_chunks(300, seed=2)
        index = build_index(chunks)
        tmp = tempfile.mkdtemp()
        try:
            path = os.path.join(tmp, "bad.idx")
            manifest = {"format": index_mod.FORMAT, "format_version": index_mod.FORMAT_VERSION,
                        "chunk_fields": list(index_mod.CHUNK_FIELDS),
                        "blocks": {"postings": index_mod.BLOCK, "chunks": index_mod.CHUNK_BLOCK},
                        "scoring": index.settings(), "analysis": index.analyzer.settings()}
            parts = {name: bytes(memoryview(v).cast("B")) if not isinstance(v, bytes) else v
                     for name, _, v, _ in index_mod._section_bytes(index)}
            kinds = dict(index_mod.SECTIONS)
            t0 = index.term_id(index.analyzer.analyze(words[0])[0])
            first = index._store.block_start[index._store.term_blocks[t0]]

            def zero_gap(data):
                b = bytearray(data)          # the term's second gap (1-byte gaps): 0, not ascending
                b[first + 1] = 0
                return bytes(b)
            cases = [
                ("block format", "block_format", lambda d: bytes([9]) + d[1:],
                 "block formats be 0..8", "load"),
                ("term blocks", "df", lambda d: bytes([d[0] + 1]) + d[1:], "ceil(df / 128) blocks", "load"),
                ("gap of 0", "postings", zero_gap, "positions must ascend", "query"),
                ("chunk block", "chunks", lambda d: b"x" * len(d), "chunk block 0", "chunk"),
            ]
            for label, name, edit, message, when in cases:
                with self.subTest(case=label):
                    sections = [(n, kinds[n], edit(parts[n]) if n == name else parts[n], None)
                                for n, _ in index_mod.SECTIONS]
                    write_sections(path, manifest, sections, False, index_mod.PAGED)
                    with self.assertRaises(MiniRagError) as cm:
                        loaded = load_index(path)
                        if when == "query":
                            loaded.postings(loaded.vocabulary[t0])
                        elif when == "chunk":
                            loaded.chunks[0]
                    self.assertIn(message, str(cm.exception))
                    self.assertIn(path, str(cm.exception))
        finally:
            shutil.rmtree(tmp)


class WeightsAreTheFormula(unittest.TestCase):
    """Every BM25 weight, of a whole term and of one block, built and loaded, is the float
    of ``idf * (tf * (k1 + 1)) / (tf + norm)`` (the decoding and length-class lookups of
    postings.py / Index._bm25 change nothing): more than 256 distinct chunk lengths (two-byte
    length classes), tf above 255, terms of one block and of many."""

    def test_weights(self):
        from mini_rag.indexing.index import bm25_idf
        rng = random.Random(11)
        words = ["w%s%s" % (chr(97 + i % 26), chr(97 + i // 26 % 26)) for i in range(300)]
        texts = []
        for i in range(700):
            n = 1 + (i * 7) % 400                     # 400 distinct lengths
            texts.append(" ".join(rng.choices(words[:40] if i % 3 else words, k=n)))
        texts.append(" ".join(["wzz"] * 300 + ["wyy"] * 2))
        chunks = [Chunk(chunk_id="c%04d" % i, doc_id="c%04d" % i, ordinal=0, page=1, text=t)
                  for i, t in enumerate(texts)]
        built = build_index(chunks)
        tmp = tempfile.mkdtemp()
        try:
            path = os.path.join(tmp, "w.idx")
            save_index(built, path)
            loaded = load_index(path)
            for label, index in (("built", built), ("loaded", loaded)):
                norm = index.norms()
                k1p1 = index.k1 + 1.0
                self.assertGreater(len(set(index.lengths)), 256)
                store = index._store
                for term in index.vocabulary:
                    i = index.term_id(term)
                    pos, ws = index.postings(term)
                    tfs = index._freqs[term]
                    idf = bm25_idf(index.num_searchable, len(pos))
                    want = [idf * (tf * k1p1) / (tf + norm[p]) for p, tf in zip(pos, tfs)]
                    with self.subTest(index=label, term=term):
                        self.assertEqual([w.hex() for w in ws], [w.hex() for w in want])
                        got = {}
                        for j in range(store.term_blocks[i], store.term_blocks[i + 1]):
                            got.update(index.block_weights(i, j))
                        self.assertEqual(list(got), pos)
                        self.assertEqual([w.hex() for w in got.values()], [w.hex() for w in want])
                self.assertEqual(max(index._freqs["wzz"]), 300)
        finally:
            shutil.rmtree(tmp)

"""Index format 4's lazy verification (mini_rag/indexing/store.py, index.py): the large
sections are hashed page by page and each page is checked when first read, chunk_ids when
first read, the others when the file is opened.  A damaged byte anywhere is an error naming
the file and the section (and the page) when the bytes it lies in are read, never data;
lazy and eager checking (a gzip'd file, or an index small enough to be checked whole when
loaded) refuse the same files; format 3 files are still read."""
import io
import json
import os
import shutil
import tempfile
import unittest
from unittest import mock

from mini_rag.errors import MiniRagError
from mini_rag.indexing import index as index_mod
from mini_rag.indexing import store
from mini_rag.indexing.index import build_index, load_index, read_manifest, save_index
from mini_rag.search.retrieve import Retriever
from tests.test_scale import cfg, generated_chunks


def lazy():
    """Loading checks no postings or chunk records whole (as for an index of over
    ``FULL_CHECK_POSTINGS`` postings)."""
    return mock.patch.object(index_mod, "FULL_CHECK_POSTINGS", -1)


class PageDigests(unittest.TestCase):
    def test_pages(self):
        import hashlib
        data = bytes(range(256)) * 40                     # 10,240 bytes: pages of 4096, 4096, 2048
        got = store.page_digests(data)
        self.assertEqual(got, b"".join(hashlib.sha256(data[a:a + 4096]).digest() for a in (0, 4096, 8192)))
        self.assertEqual(store.page_digests(b""), b"")
        self.assertEqual(store.page_digests(data, 8), b"".join(hashlib.sha256(data[a:a + 8]).digest()
                                                            for a in range(0, len(data), 8)))


class LazyVerification(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.chunks, cls.words = generated_chunks(3000, seed=23)
        cls.index = build_index(cls.chunks)
        cls.path = os.path.join(cls.tmp, "i.idx")
        save_index(cls.index, cls.path)
        with open(cls.path, "rb") as fh:
            cls.data = fh.read()
        cls.head = cls.data.index(b"\n") + 1
        cls.secs = {s["name"]: s for s in read_manifest(cls.path)["sections"]}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def flipped(self, name, at, suffix=".idx"):
        """A copy of the index with byte ``at`` of section ``name`` changed."""
        pos = self.head + self.secs[name]["offset"] + at
        data = bytearray(self.data)
        data[pos] ^= 0x40
        path = os.path.join(self.tmp, "bad-%s-%d%s" % (name, at, suffix))
        if suffix.endswith(".gz"):
            import gzip
            with gzip.open(path, "wb") as fh:
                fh.write(bytes(data))
        else:
            with open(path, "wb") as fh:
                fh.write(bytes(data))
        return path

    def read_all(self, index):
        """Every posting and chunk record of a loaded index."""
        for t in index.vocabulary:
            index.postings(t)
        return [c.chunk_id for c in index.chunks]

    def test_manifest(self):
        self.assertEqual(read_manifest(self.path)["format_version"], 4)
        names = list(self.secs)
        self.assertEqual(names, index_mod.section_names(4))
        digests = self.data[self.head + self.secs["pages"]["offset"]:][:self.secs["pages"]["length"]]
        at = 0
        for name in index_mod.PAGED:
            sec = self.secs[name]
            body = self.data[self.head + sec["offset"]:self.head + sec["offset"] + sec["length"]]
            n = -(-sec["length"] // store.PAGE) * 32
            self.assertEqual(sec["pages"], {"size": store.PAGE, "at": at})
            self.assertEqual(digests[at:at + n], store.page_digests(body))
            at += n
        self.assertEqual(at, len(digests))
        self.assertNotIn("pages", self.secs["chunk_ids"])

    def test_damaged_page_is_an_error_when_read(self):
        for name in index_mod.PAGED:
            sec = self.secs[name]
            at = sec["length"] - 10 if name == "chunks" else sec["length"] // 2
            page = at // store.PAGE
            with self.subTest(section=name):
                path = self.flipped(name, at)
                with lazy():
                    loaded = load_index(path)                # loads: the page is not read yet
                # the first term and the first chunk lie in the first page: read fine
                self.assertEqual(loaded.postings(loaded.vocabulary[0]), self.index.postings(self.index.vocabulary[0]))
                self.assertEqual(loaded.chunks[0].to_json(), self.chunks[0].to_json())
                with self.assertRaises(MiniRagError) as cm:
                    self.read_all(loaded)
                msg = str(cm.exception)
                self.assertIn("%s: section %r does not match its sha256 (page %d, bytes %d..%d of the section)"
                              % (path, name, page, page * store.PAGE, (page + 1) * store.PAGE - 1), msg)
                self.assertIn("index --force", msg)
                with self.assertRaises(MiniRagError):        # and again: never served later
                    self.read_all(loaded)

    def test_lazy_and_eager_agree(self):
        """The same files refused, with the same section named, whether pages are checked
        when read (plain file, large index), all when loaded (an index checked whole when
        loaded) or when opened (gzip'd file); an intact file gives the same data all ways."""
        cases = []
        for name in ("vocabulary", "chunk_ids", "chunks", "lengths", "block_max", "postings", "pages"):
            length = self.secs[name]["length"]
            for at in sorted({0, length // 3, length - 1}):
                cases.append((name, at))
        q = self.index.analyzer.analyze(" ".join(self.words[:3] + self.words[300:302]))
        want = Retriever(self.index, cfg()).rank_terms(q, 10)
        for name, at in cases + [(None, None)]:
            with self.subTest(section=name, at=at):
                outcomes = []
                for way in ("lazy", "eager", "gzip"):
                    path = self.flipped(name, at, ".idx.gz" if way == "gzip" else ".idx") if name else (
                        self.path if way != "gzip" else self.gz())
                    try:
                        if way == "lazy":
                            with lazy():
                                loaded = load_index(path)
                        else:
                            loaded = load_index(path)
                        ids = self.read_all(loaded)
                        loaded.chunk(self.chunks[-1].chunk_id)       # chunk_ids read
                        outcomes.append(("ok", ids == [c.chunk_id for c in self.chunks],
                                         Retriever(loaded, cfg()).rank_terms(q, 10) == want))
                    except MiniRagError as exc:
                        msg = str(exc)
                        self.assertIn(os.path.basename(path), msg)
                        self.assertIn("index --force", msg)
                        outcomes.append(("refused", "section %r does not match its sha256" % name in msg
                                         or name == "pages" and "does not match its sha256" in msg))
                if name is None:
                    self.assertEqual(outcomes, [("ok", True, True)] * 3)
                else:
                    self.assertEqual(outcomes, [("refused", True)] * 3)

    def gz(self):
        path = os.path.join(self.tmp, "i.idx.gz")
        if not os.path.exists(path):
            save_index(self.index, path)
        return path

    def test_chunk_ids_checked_when_first_read(self):
        path = self.flipped("chunk_ids", 5)
        with lazy():
            loaded = load_index(path)
        self.assertEqual(loaded.chunks[3].chunk_id, self.chunks[3].chunk_id)     # the records: fine
        with self.assertRaises(MiniRagError) as cm:
            loaded.chunk(self.chunks[3].chunk_id)
        self.assertIn("%s: section 'chunk_ids' does not match its sha256" % path, str(cm.exception))

    def test_saving_a_loaded_index_checks_its_pages(self):
        with lazy():
            loaded = load_index(self.path)
        again = os.path.join(self.tmp, "again.idx")
        save_index(loaded, again)
        with open(again, "rb") as fh:
            self.assertEqual(fh.read(), self.data)                    # the same bytes
        path = self.flipped("postings", 7)
        with lazy():
            loaded = load_index(path)
        with self.assertRaises(MiniRagError) as cm:
            save_index(loaded, again)
        self.assertIn("section 'postings' does not match its sha256 (page 0,", str(cm.exception))

    def test_format_3_still_read_and_upgraded(self):
        """A format 3 file (every section hashed whole, checked when loaded) is read, ranks
        the same, and build_or_load saves it again as format 4."""
        manifest = json.loads(self.data[:self.head])
        manifest["format_version"] = 3
        manifest.pop("sections")
        sections = [(n, kind, v, None) for n, kind, v, _ in index_mod._section_bytes(self.index)]
        old = os.path.join(self.tmp, "v3.idx")
        store.write_sections(old, manifest, sections, False)
        m = read_manifest(old)
        self.assertEqual((m["format_version"], [s["name"] for s in m["sections"]]),
                         (3, index_mod.section_names(3)))
        self.assertTrue(all("pages" not in s for s in m["sections"]))
        q = self.index.analyzer.analyze(" ".join(self.words[5:9]))
        with lazy():
            loaded = load_index(old)
        self.assertEqual(Retriever(loaded, cfg()).rank_terms(q, 10), Retriever(self.index, cfg()).rank_terms(q, 10))
        self.assertEqual(self.read_all(loaded), [c.chunk_id for c in self.chunks])
        # damaged: refused when loaded (format 3 hashes every section whole)
        data = bytearray(open(old, "rb").read())
        sec = {s["name"]: s for s in m["sections"]}["postings"]
        data[data.index(b"\n") + 1 + sec["offset"] + 3] ^= 1
        bad = os.path.join(self.tmp, "v3-bad.idx")
        with open(bad, "wb") as fh:
            fh.write(bytes(data))
        with lazy(), self.assertRaises(MiniRagError) as cm:
            load_index(bad)
        self.assertIn("section 'postings' does not match its sha256 (truncated", str(cm.exception))
        # saved again as format 4: the same bytes as a built index's
        again = os.path.join(self.tmp, "v4.idx")
        save_index(loaded, again)
        with open(again, "rb") as fh:
            self.assertEqual(fh.read(), self.data)


class LazyStructure(unittest.TestCase):
    """The structure checks a large index makes when a part is first used rather than when
    loaded (the tie ranks, a term's upper bound, N and avgdl): the same answers as the
    built index, and a crafted file (hashes matching) refused when that part is used; an
    index checked whole when loaded refuses it when loaded."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.chunks, cls.words = generated_chunks(1200, seed=29)
        cls.index = build_index(cls.chunks)
        cls.parts = {name: bytes(memoryview(v).cast("B")) if not isinstance(v, bytes) else v
                     for name, _, v, _ in index_mod._section_bytes(cls.index)}
        cls.path = os.path.join(cls.tmp, "i.idx")
        save_index(cls.index, cls.path)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def crafted(self, name, edit):
        import array
        kinds = dict(index_mod.SECTIONS)
        a = array.array(store.TYPECODES[kinds[name]])
        a.frombytes(self.parts[name])
        edit(a)
        manifest = read_manifest(self.path)
        manifest.pop("sections")
        sections = [(n, kinds[n], a.tobytes() if n == name else self.parts[n], None) for n, _ in index_mod.SECTIONS]
        path = os.path.join(self.tmp, "crafted-%s.idx" % name)
        store.write_sections(path, manifest, sections, False, index_mod.PAGED)
        return path

    def test_same_as_built(self):
        with lazy():
            loaded = load_index(self.path)
        self.assertEqual((loaded.num_searchable, loaded.avgdl), (self.index.num_searchable, self.index.avgdl))
        self.assertEqual(list(loaded.tie_rank), self.index.tie_rank)
        self.assertEqual({t: loaded.max_weights()[t] for t in loaded.vocabulary}, dict(self.index.max_weights()))
        r, ref = Retriever(loaded, cfg()), Retriever(self.index, cfg())
        for q in (self.words[:4], self.words[2:3] * 3, self.words[100:106]):
            terms = self.index.analyzer.analyze(" ".join(q))
            self.assertEqual(r.rank_terms(terms, 20), ref.rank_terms(terms, 20))

    def test_tie_rank_checked_when_first_used(self):
        path = self.crafted("tie_rank", lambda a: a.__setitem__(0, a[1]))
        with lazy():
            loaded = load_index(path)
        with self.assertRaises(MiniRagError) as cm:
            Retriever(loaded, cfg()).rank_terms(["wzz"] + self.index.analyzer.analyze(self.words[0]), 5000)
        self.assertIn("%s: not a valid index (tie_rank must be a permutation of the 1200 chunk positions)" % path,
                      str(cm.exception))
        with self.assertRaises(MiniRagError):
            load_index(path)                                  # checked whole when loaded

    def test_term_bound_checked_when_first_looked_up(self):
        t = self.index.term_id(self.index.analyzer.analyze(self.words[1])[0])
        path = self.crafted("bm25_max", lambda a: a.__setitem__(t, a[t] * 2))
        with lazy():
            loaded = load_index(path)
        other = loaded.vocabulary[t + 1]
        self.assertEqual(loaded.max_weights()[other], self.index.max_weights()[other])
        with self.assertRaises(MiniRagError) as cm:
            loaded.max_weights()[loaded.vocabulary[t]]
        self.assertIn("%s: not a valid index (term %d: its largest weight must be the largest of its block maxima"
                      % (path, t), str(cm.exception))
        with self.assertRaises(MiniRagError):
            load_index(path)

    def test_block_maxima_not_finite(self):
        path = self.crafted("block_max", lambda a: a.__setitem__(0, float("nan")))
        with lazy():
            loaded = load_index(path)
        with self.assertRaises(MiniRagError) as cm:
            loaded.max_weights()[loaded.vocabulary[0]]
        self.assertIn("term 0: its largest weight must be the largest of its block maxima, finite numbers >= 0",
                      str(cm.exception))


class Upgrade(unittest.TestCase):
    def test_build_or_load_saves_format_3_as_4(self):
        import copy
        from mini_rag.config import DEFAULTS
        from mini_rag.indexing.index import build_or_load
        fixture = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "corpus")
        tmp = tempfile.mkdtemp()
        try:
            c = copy.deepcopy(DEFAULTS)
            c["corpus"]["path"] = fixture
            c["index"]["path"] = path = os.path.join(tmp, "i.idx")
            index = build_or_load(c, log=io.StringIO())
            with open(path, "rb") as fh:
                data = fh.read()
            manifest = read_manifest(path)
            manifest["format_version"] = 3
            manifest.pop("sections")
            sections = [(n, kind, v, None) for n, kind, v, _ in index_mod._section_bytes(index)]
            store.write_sections(path, manifest, sections, False)
            log = io.StringIO()
            again = build_or_load(c, log=log)
            self.assertIn("has format version 3; saving it as version 4", log.getvalue())
            with open(path, "rb") as fh:
                self.assertEqual(fh.read(), data)
            self.assertEqual([h.chunk_id for h in Retriever(again, c).search("refund within 30 days", 5)],
                             [h.chunk_id for h in Retriever(index, c).search("refund within 30 days", 5)])
        finally:
            shutil.rmtree(tmp)


if __name__ == "__main__":
    unittest.main()

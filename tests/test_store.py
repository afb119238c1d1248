"""Index formats 4 and 5's lazy verification (mini_rag/indexing/store.py, index.py): the large
sections are hashed page by page and each page is checked when first read, chunk_ids when
first read, the others when the file is opened.  A damaged byte anywhere is an error naming
the file and the section (and the page) when the bytes it lies in are read, never data;
lazy and eager checking (a gzip'd file, or an index small enough to be checked whole when
loaded) refuse the same files; format 3 and 4 files are still read.  Format 5 hashes a page by
its CRC-32 (4 bytes), format 4 by its sha256 (32 bytes)."""
import io
import json
import os
import re
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
        import struct
        import zlib
        data = bytes(range(256)) * 40                     # 10,240 bytes: pages of 4096, 4096, 2048
        self.assertEqual(store.page_digests(data, kind="sha256"),
                         b"".join(hashlib.sha256(data[a:a + 4096]).digest() for a in (0, 4096, 8192)))
        self.assertEqual(store.page_digests(b"", kind="sha256"), b"")
        self.assertEqual(store.page_digests(data, 8, "sha256"), b"".join(hashlib.sha256(data[a:a + 8]).digest()
                                                                      for a in range(0, len(data), 8)))
        # format 5's: the CRC-32 of each page, 4 bytes little-endian
        self.assertEqual(store.page_digests(data), b"".join(struct.pack("<I", zlib.crc32(data[a:a + 4096]))
                                                            for a in (0, 4096, 8192)))
        self.assertEqual(store.page_digests(b""), b"")
        self.assertEqual(store.page_digests(data, 8), b"".join(struct.pack("<I", zlib.crc32(data[a:a + 8]))
                                                            for a in range(0, len(data), 8)))
        # a known value: CRC-32 of "123456789" is 0xCBF43926 (the check value of the standard)
        self.assertEqual(store.page_digests(b"123456789"), bytes([0x26, 0x39, 0xF4, 0xCB]))
        with self.assertRaises(ValueError):
            store.page_digests(data, kind="md5")


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
        self.assertEqual(read_manifest(self.path)["format_version"], 5)
        names = list(self.secs)
        self.assertEqual(names, index_mod.section_names(5))
        digests = self.data[self.head + self.secs["pages"]["offset"]:][:self.secs["pages"]["length"]]
        at = 0
        for name in index_mod.PAGED:
            sec = self.secs[name]
            body = self.data[self.head + sec["offset"]:self.head + sec["offset"] + sec["length"]]
            n = -(-sec["length"] // store.PAGE) * 4
            self.assertEqual(sec["pages"], {"size": store.PAGE, "at": at, "hash": "crc32"})
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
                self.assertIn("%s: section %r does not match its crc32 (page %d, bytes %d..%d of the section)"
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
                        outcomes.append(("refused", re.search(r"section %r does not match its (sha256|crc32)"
                                                              % name, msg) is not None
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
        self.assertIn("section 'postings' does not match its crc32 (page 0,", str(cm.exception))

    def test_format_3_still_read_and_upgraded(self):
        """A format 3 file (every section hashed whole, checked when loaded) is read, ranks
        the same, and build_or_load saves it again as format 5."""
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
        # saved again as format 5: the same bytes as a built index's
        again = os.path.join(self.tmp, "v5-from-3.idx")
        save_index(loaded, again)
        with open(again, "rb") as fh:
            self.assertEqual(fh.read(), self.data)

    def format_4(self, name="v4.idx"):
        """This index as format 4 wrote it: the same sections, their pages hashed by sha256."""
        manifest = json.loads(self.data[:self.head])
        manifest["format_version"] = 4
        manifest.pop("sections")
        sections = [(n, kind, v, None) for n, kind, v, _ in index_mod._section_bytes(self.index)]
        path = os.path.join(self.tmp, name)
        store.write_sections(path, manifest, sections, False, index_mod.PAGED, "sha256")
        return path

    def test_format_4_still_read_and_upgraded(self):
        """A format 4 file (pages hashed by sha256) is read, ranks the same, refuses a
        damaged page naming it, and is saved again as format 5 (the built index's bytes)."""
        import hashlib
        old = self.format_4()
        m = read_manifest(old)
        secs = {s["name"]: s for s in m["sections"]}
        self.assertEqual((m["format_version"], list(secs)), (4, index_mod.section_names(4)))
        with open(old, "rb") as fh:
            data = fh.read()
        head = data.index(b"\n") + 1
        pages = data[head + secs["pages"]["offset"]:][:secs["pages"]["length"]]
        at = 0
        for name in index_mod.PAGED:
            sec = secs[name]
            self.assertEqual(sec["pages"], {"size": 4096, "at": at})     # no "hash": sha256
            body = data[head + sec["offset"]:head + sec["offset"] + sec["length"]]
            want = b"".join(hashlib.sha256(body[a:a + 4096]).digest() for a in range(0, len(body), 4096))
            self.assertEqual(pages[at:at + len(want)], want)
            self.assertEqual(sec["sha256"], hashlib.sha256(want).hexdigest())
            at += len(want)
        q = self.index.analyzer.analyze(" ".join(self.words[5:9] + self.words[200:202]))
        with lazy():
            loaded = load_index(old)
        self.assertEqual(Retriever(loaded, cfg()).rank_terms(q, 10), Retriever(self.index, cfg()).rank_terms(q, 10))
        self.assertEqual(self.read_all(loaded), [c.chunk_id for c in self.chunks])
        again = os.path.join(self.tmp, "v5-from-4.idx")
        save_index(loaded, again)
        with open(again, "rb") as fh:
            self.assertEqual(fh.read(), self.data)
        # a damaged page of a format 4 file: an error naming the section, the page and sha256
        bad = bytearray(data)
        sec = secs["postings"]
        bad[head + sec["offset"] + 4096 + 17] ^= 0x01
        path = os.path.join(self.tmp, "v4-bad.idx")
        with open(path, "wb") as fh:
            fh.write(bytes(bad))
        with lazy():
            loaded = load_index(path)
        with self.assertRaises(MiniRagError) as cm:
            self.read_all(loaded)
        self.assertIn("%s: section 'postings' does not match its sha256 (page 1, bytes 4096..8191 of the section)"
                      % path, str(cm.exception))

    def test_page_hash_must_be_the_formats(self):
        """Format 4 pages are hashed by sha256, format 5's by crc32: a manifest claiming the
        other (its digests matching) is refused when loaded, naming the file."""
        sections = [(n, kind, v, None) for n, kind, v, _ in index_mod._section_bytes(self.index)]
        for version, page_hash in ((4, "crc32"), (5, "sha256")):
            with self.subTest(version=version):
                manifest = json.loads(self.data[:self.head])
                manifest["format_version"] = version
                manifest.pop("sections")
                path = os.path.join(self.tmp, "mixed-%d.idx" % version)
                store.write_sections(path, manifest, sections, False, index_mod.PAGED, page_hash)
                with lazy(), self.assertRaises(MiniRagError) as cm:
                    load_index(path)
                self.assertIn("%s: not a valid index (format %d pages sections chunks, postings by %s"
                              % (path, version, index_mod.PAGE_HASH_OF[version]), str(cm.exception))
        # an unknown page hash: a malformed entry, refused when opened
        manifest = json.loads(self.data[:self.head])
        manifest["sections"][index_mod.section_names(5).index("postings")]["pages"]["hash"] = "md5"
        line = json.dumps(manifest, separators=(",", ":")).encode("utf-8")
        line += b" " * (-(len(line) + 1) % 8) + b"\n"
        path = os.path.join(self.tmp, "md5.idx")
        with open(path, "wb") as fh:
            fh.write(line + self.data[self.head:])
        with self.assertRaises(MiniRagError) as cm:
            load_index(path)
        self.assertIn("%s:1: malformed section entry" % path, str(cm.exception))


class SaveFlushing(unittest.TestCase):
    """write_sections sends a large file to the disk while writing it (store._Flusher): the
    same bytes as plain writes, fdatasync called on the file meanwhile, and the atomic
    write's own fsync still made before the rename."""

    def test_same_bytes_and_early_flushes(self):
        tmp = tempfile.mkdtemp()
        try:
            parts = [("a", "bytes", os.urandom(10000), None), ("b", "u32", bytes(4 * 3001), None),
                     ("c", "bytes", os.urandom(70001), None)]
            calls = []
            real = os.fdatasync
            with mock.patch.object(store._Flusher, "FLUSH", 4096), \
                    mock.patch.object(os, "fdatasync", lambda fd: (calls.append(fd), real(fd))[1]):
                size, table = store.write_sections(os.path.join(tmp, "f.idx"), {"x": 1}, parts, False, ("c",))
            self.assertGreater(len(calls), 0)
            size2, table2 = store.write_sections(os.path.join(tmp, "g.idx"), {"x": 1}, parts, False, ("c",))
            with open(os.path.join(tmp, "f.idx"), "rb") as f, open(os.path.join(tmp, "g.idx"), "rb") as g:
                self.assertEqual(f.read(), g.read())
            self.assertEqual((size, table), (size2, table2))
            # not a regular file (a pipe, a BytesIO): plain writes, no thread
            buf = io.BytesIO()
            flusher = store._Flusher(buf)
            self.assertIsNone(flusher._thread)
            with flusher:
                flusher.write(b"abc")
            self.assertEqual(buf.getvalue(), b"abc")
        finally:
            shutil.rmtree(tmp)


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
    def test_build_or_load_saves_formats_3_and_4_as_5(self):
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
            for version, paged, page_hash in ((3, (), "sha256"), (4, index_mod.PAGED, "sha256")):
                manifest = read_manifest(path)
                manifest["format_version"] = version
                manifest.pop("sections")
                sections = [(n, kind, v, None) for n, kind, v, _ in index_mod._section_bytes(index)]
                store.write_sections(path, manifest, sections, False, paged, page_hash)
                self.assertEqual(read_manifest(path)["format_version"], version)
                log = io.StringIO()
                again = build_or_load(c, log=log)
                self.assertIn("has format version %d; saving it as version 5" % version, log.getvalue())
                with open(path, "rb") as fh:
                    self.assertEqual(fh.read(), data)
                self.assertEqual([h.chunk_id for h in Retriever(again, c).search("refund within 30 days", 5)],
                                 [h.chunk_id for h in Retriever(index, c).search("refund within 30 days", 5)])
        finally:
            shutil.rmtree(tmp)


if __name__ == "__main__":
    unittest.main()

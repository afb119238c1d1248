"""Stage 2: the inverted index, with per-posting weights and a JSON manifest.

Every chunk of the corpus becomes a bag of terms (``Analyzer.analyze`` of its *indexed
text*, below).  The index keeps, for every term, the postings list of chunks that contain
it (ascending chunk position) with the term frequency, and turns those into per-posting
weights once, when the index is built or loaded.  A query never looks at a chunk that
shares no term with it (see ``retrieve.py``).

Public API
==========

================================  ==========================================================
``build_index(chunks, ...)``      chunks -> :class:`Index` (analysis + postings + weights)
``build_or_load(config)``         the index at ``[index] path``, rebuilt when stale
``load_index(path)``              read an index file (manifest and section hashes checked)
``save_index(index, path)``       write it atomically (gzip when the path ends in ``.gz``)
``Index.block_weights(i, j)``     ``{position: weight}`` of one postings block (MaxScore)
``Index.max_weights(scoring)``    ``{term: largest posting weight}`` (pruning's bounds)
``Index.chunks``                  list of :class:`~mini_rag.records.Chunk`, corpus order
``Index.chunk(chunk_id)``         one chunk by id (MiniRagError when unknown)
``Index.idf(term)``               BM25 idf (Lucene's), defined for df = 0 too
``Index.doc_freq(term)``          number of chunks containing the term
``Index.has_term(term)``          term in the vocabulary?
``Index.vocabulary``              sorted list of every term
``Index.num_chunks``              number of chunks (``num_searchable``: N, those with a term)
``Index.terms(position)``         ``{term: tf}`` of one chunk (its analyzed bag of words)
``Index.postings(term, scoring)`` ``(positions, weights)`` lists, never copied
================================  ==========================================================

Indexed text of a chunk
-----------------------
``title``, the document's front-matter ``description`` (when it has one), the headings of
the chunk's section path below the top one other than its own heading (the top heading
stands for the document, as the title does; a tab's label counts as a heading), then ``heading`` (only when the chunk is not itself the
heading and the heading differs from the title), then ``text`` (a table's: its words as
written, ``Chunk.indexed``, each header once rather than once a row), joined by newlines.  The title is
repeated in every chunk of a document so that a question naming the document finds
all its paragraphs; the heading gives a paragraph the topic its section states once.
A chunk that is a heading standing alone (``Chunk.is_heading``) gets no terms: it is
kept (its id stays citable) but never retrieved, since it states nothing and its words
already count in every paragraph under it.

Scoring functions (weights per posting)
---------------------------------------
``bm25`` (default): Okapi BM25 with Lucene's idf, as in Lucene's ``BM25Similarity``
(Lucene >= 6) and the ``lucene`` variant of bm25s (Kamphuis et al., "Which BM25 Do You
Mean? A Large-Scale Reproducibility Study of Scoring Variants", ECIR 2020)::

    idf(t)    = ln(1 + (N - df + 0.5) / (df + 0.5))
    w(t, c)   = idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))

with ``dl`` the number of terms of the chunk's indexed text, ``N`` the number of
searchable chunks (at least one term; a heading standing alone has none, see below),
``avgdl`` the mean ``dl`` over them, ``k1 = 1.5`` and ``b = 0.75`` by default (rank_bm25's and
bm25s's defaults, inside the 1.2-2.0 range of Robertson & Zaragoza, "The Probabilistic
Relevance Framework: BM25 and Beyond", 2009, section 3.3; Lucene uses 1.2).
Unlike Lucene, document lengths are exact (no 1-byte length encoding), and the
``(k1 + 1)`` factor is kept, so a term seen once in a chunk of average length weighs
exactly ``idf(t)`` (the retriever's similarity rule relies on that).  The idf is never
negative (no epsilon floor as in rank_bm25) and is defined for df = 0.

``tfidf``: cosine of sublinear TF-IDF vectors (SMART ``ltc``; idf as scikit-learn's
``smooth_idf``)::

    idf(t)    = ln((1 + N) / (1 + df)) + 1
    w(t, c)   = (1 + ln tf) * idf(t) / || c ||      (|| c ||: Euclidean norm of the chunk)

Persistence
-----------
Format 5 (``save_index``): one line of compact JSON, the manifest, then binary sections
(``store.py``: each with its type, offset, length and sha256 in the manifest; the chunk
records and postings, ``PAGED``, hashed in 4 KiB pages, a CRC-32 each, whose digests are a
last section, ``pages``); the whole
file gzip'd when the path ends in ``.gz`` (deterministic: fixed header, mtime 0).  The
manifest records the format version, the corpus path and the sha256 of every corpus
file, the chunking, analysis and scoring settings, a content hash per document and
counts: reading only the first line is enough to tell whether the index is stale.  The
sections (``SECTIONS``) hold the vocabulary, the chunk ids, the chunk records (JSON
lines in zlib blocks of ``postings.CHUNK_BLOCK``), chunk lengths and tie-break ranks, and
the inverted index itself, compressed (``postings.py``): per term its df, largest BM25
weight and blocks of ``postings.BLOCK`` postings (delta-coded positions and term
frequencies, each block's last position and largest weight for MaxScore).  The stored
form is made once, when the index is built: ``save_index`` writes the sections as the
index holds them (a loaded index: as read), nothing is encoded again, and the same
corpus gives the same bytes whatever ``PYTHONHASHSEED``.  Loading builds nothing and
makes no pass over every chunk: a plain file stays open, its small sections are read and
checked (sha256, ``validate_sections``); each page of the paged sections is checked when
first read, the chunk ids when first read, the tie ranks, a term's upper bound, N and
avgdl when first used (an index of at most ``FULL_CHECK_POSTINGS`` postings is checked
whole when loaded, :meth:`Index.check_all`); a
term's postings are decoded (and checked) when a query asks for them, its BM25 weights
computed from the stored tf with the build's formula (the same floats; a bounded cache
keeps recent ones); chunks are decoded when first asked for; a chunk's bag of terms is
analyzed again from its text when needed (the same bag: same text, same analyzer).
Format 1 (two JSON lines; per-chunk term bags, postings rebuilt on load), format 3
(the same sections, each checked against its sha256 when loaded) and format 4 (as 5, the
pages hashed by sha256) are still read, and :func:`build_or_load` saves them again as
format 5; format 2 (uncompressed arrays) is
not: :func:`build_or_load` rebuilds such an index, :func:`load_index` refuses it naming
the file.

Staleness: :func:`build_or_load` compares the manifest with the corpus on disk and the
configured settings.  A changed, added or removed file, another corpus path or other
settings make it rebuild, saying on stderr what was stale; the term counts of chunks
whose document and indexed text are unchanged are reused (only global statistics are
recomputed).  A file that is not an index, has another format version or a body that
does not match its hash is an error, never used.
"""
from __future__ import annotations

import array
import collections
import dataclasses
import functools
import itertools
from itertools import compress, repeat
from operator import itemgetter
import operator
import gc
import gzip
import hashlib
import json
import json.encoder
import math
import os
import re
import struct
import sys
import zlib
from collections.abc import Mapping, Sequence as SequenceABC
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..text.analysis import Analyzer
from ..text.corpus import VERSION_RULE, chunk_document, corpus_files, load_corpus
from ..errors import MiniRagError
from ..records import Chunk
from .postings import BLOCK, CHUNK_BLOCK, ChunkBlocks, Postings, PostingsWriter, encode_chunk_blocks
from .store import PAGE_HASH, PAGES, TYPECODES, LazyArray, SectionFile, page_digests, write_sections

FORMAT = "mini_rag-index"
FORMAT_VERSION = 5
#: Versions load_index reads: 1 (per-chunk term bags, rebuilt on load), 3 (sections, each
#: checked against its sha256 when loaded), 4 (the same sections, the large ones hashed
#: page by page, sha256, and each page checked when first read; ``store.py``) and 5 (as 4,
#: the pages hashed by CRC-32).
READABLE_VERSIONS = (1, 3, 4, 5)
#: The page hash of each paged format (``store.PAGE_HASHES``).
PAGE_HASH_OF = {4: "sha256", 5: "crc32"}
#: Versions no longer read: ``build_or_load`` rebuilds such an index, ``load_index`` refuses it.
RETIRED_VERSIONS = (2,)
SCORINGS = ("bm25", "tfidf")
BM25_VARIANT = "lucene"
BM25_IDF = "ln(1 + (N - df + 0.5) / (df + 0.5))"
TFIDF_IDF = "ln((1 + N) / (1 + df)) + 1"
INDEXED_FIELDS = "title + heading (when not the chunk itself and not the title) + text"
CHUNKING_RULE = "mini_rag-paragraphs-5"   # 2: paragraphs over corpus.MAX_PARAGRAPH_CHARS are cut; 3: text/markup.py blocks, section paths; 4: tables read as rows with their header; 5: a reST domain directive reading as code is code
MAX_MANIFEST_BYTES = 64 * 1024 * 1024   # line 1 once decompressed (file hashes of the corpus)
MAX_INDEX_BYTES = 1 << 30               # line 2 once decompressed: 1 GiB; more is refused, not read
MAX_DECLARED_BYTES = 1 << 36            # format 3: the most a manifest may describe (64 GiB)
MAX_CHUNK_BLOCK_BYTES = 1 << 28         # one block of chunk records once decompressed
#: A loaded index of at most this many postings is decoded and checked whole when loaded;
#: a larger one term by term (and block by block) when a query first reads it.
FULL_CHECK_POSTINGS = 1 << 20
_NOT_ONE = bytes([0, 0] + [1] * 254)     # bytes.translate: tf != 1 -> 1
_BLOCK_FORMATS = bytes(range(9))         # bytes.translate deletes them: what is left is no format


def _gc_paused(func):
    """Run ``func`` with Python's cyclic garbage collector paused (restored afterwards).

    Building an index allocates millions of small containers (term tuples, bags, postings
    lists) that never form reference cycles; reference counting frees them all the same.
    With the collector running, every few hundred allocations it re-traverses the growing
    heap for nothing: about a quarter of SciFact's build time.  Nothing else changes.
    """
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return func(*args, **kwargs)
        finally:
            if was_enabled:
                gc.enable()
    return wrapper


_CHUNK_ID = operator.attrgetter("chunk_id")


def indexed_text(chunk: Chunk) -> str:
    """The text whose terms represent a chunk (see "Indexed text" in the module docstring)."""
    parts = []
    if chunk.title:
        parts.append(chunk.title)
    description = (chunk.metadata or {}).get("description")
    if isinstance(description, str) and description:
        parts.append(description)
    for above in (chunk.section or [])[1:]:
        if above not in (chunk.title, chunk.heading):
            parts.append(above)
    if chunk.heading and not chunk.is_heading and chunk.heading != chunk.title:
        parts.append(chunk.heading)
    parts.append(chunk.indexed or chunk.text)
    return "\n".join(parts)


def bm25_idf(n: int, df: int) -> float:
    """Lucene's BM25 idf; positive for every 0 <= df <= N."""
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def tfidf_idf(n: int, df: int) -> float:
    """Smoothed idf (scikit-learn's ``smooth_idf=True``); positive for every df."""
    return math.log((1.0 + n) / (1.0 + df)) + 1.0


class Index:
    """An inverted index over chunks.  Build with :func:`build_index`, never directly."""

    @_gc_paused
    def __init__(self, chunks: List[Chunk], chunk_terms: List[Dict[str, int]],
                 analyzer: Analyzer, k1: float = 1.5, b: float = 0.75,
                 manifest: Optional[Dict[str, Any]] = None) -> None:
        if k1 < 0 or not 0.0 <= b <= 1.0:
            raise MiniRagError("BM25 needs k1 >= 0 and 0 <= b <= 1, got k1=%r b=%r" % (k1, b))
        self.analyzer = analyzer
        self.chunks = chunks
        self.k1 = float(k1)
        self.b = float(b)
        self.manifest: Dict[str, Any] = manifest or {}
        self._terms = chunk_terms
        self.num_chunks = len(chunks)
        ids = list(map(_CHUNK_ID, chunks))
        self._by_id = dict(zip(ids, range(len(ids))))
        if len(self._by_id) != len(chunks):
            dup = [c.chunk_id for c in chunks if self._by_id.get(c.chunk_id) is None]
            raise MiniRagError("duplicate chunk ids in the index, got %r" % dup[:3])
        # Postings: term -> (positions ascending, term frequencies).  Built chunk by chunk
        # in corpus order, so every list is sorted by position without a sort.
        # All C-level calls per chunk: a term's lists are made on first sight (defaultdict)
        # and every posting appended by map(list.append, ...), consumed by a 0-length deque.
        positions: Dict[str, List[int]] = collections.defaultdict(list)
        freqs: Dict[str, List[int]] = collections.defaultdict(list)
        lengths = list(map(sum, map(dict.values, chunk_terms)))
        append, drain, plists, flists = list.append, collections.deque(maxlen=0).extend, \
            positions.__getitem__, freqs.__getitem__
        for pos, bag in enumerate(chunk_terms):
            drain(map(append, map(plists, bag), repeat(pos)))
            drain(map(append, map(flists, bag), bag.values()))
        self.lengths = lengths
        # N and avgdl count searchable chunks only (those with at least one term): a bare
        # heading or a chunk of stopwords must not dilute the collection statistics.
        n = sum(1 for n in lengths if n)
        # fsum: the exact mean, whatever the order of the additions.
        self._num_searchable, self._avgdl = n, (math.fsum(lengths) / n if n else 0.0)
        self._stats_pending = False
        self._weights: Dict[str, Any] = {}
        self._max_weights: Dict[str, Any] = {}
        self._chunk_ids = None
        self._mapped = None         # a loaded index: its open SectionFile
        self._norm: Optional[List[float]] = None
        self._norm_of: Dict[int, float] = {}
        self._tables: Dict[float, List[float]] = {}
        self._dls: List[int] = []
        # Tie-break rank: chunks ordered by chunk_id (code point order).  Rankings sort
        # on (score descending, chunk_id ascending); comparing these ints is the same.
        order = sorted(range(len(chunks)), key=ids.__getitem__)
        tie = [0] * len(chunks)
        collections.deque(map(tie.__setitem__, order, range(len(order))), 0)
        self.tie_rank = tie
        # The stored form (postings.py), made once here: saving writes it as it is.
        vocab = sorted(positions)
        writer = PostingsWriter()
        n = self.num_searchable
        for term in vocab:
            pos_list, tfs = positions[term], freqs[term]
            writer.add(pos_list, tfs, self._bm25(bm25_idf(n, len(pos_list)), pos_list, tfs))
        del positions, freqs
        store = Postings("index", self.num_chunks, writer.df, writer.term_blocks, writer.block_last,
                         writer.block_start, writer.block_format, writer.block_max, writer.data())
        self._attach(vocab, store, writer.term_max)
        self._chunk_data, self._chunk_offsets = encode_chunk_blocks(list(_chunk_lines(chunks)))
        # The large sections are sealed as they are made: their bytes never change, so
        # their digests (page by page for the paged ones) are computed once, here, not by
        # every save.
        self._ids_json = _dumps(ids).encode("utf-8")
        self._digests = {"chunk_ids": hashlib.sha256(self._ids_json).hexdigest(),
                         "chunks": page_digests(self._chunk_data), "postings": page_digests(store.data)}

    @property
    def num_searchable(self) -> int:
        """N: the chunks with at least one term (a loaded index counts them when first
        asked for)."""
        if self._stats_pending:
            self._length_stats()
        return self._num_searchable

    @property
    def avgdl(self) -> float:
        """The mean length of the searchable chunks (a loaded index's computed when first
        asked for)."""
        if self._stats_pending:
            self._length_stats()
        return self._avgdl

    def _length_stats(self) -> None:
        lengths = self.lengths.tolist() if hasattr(self.lengths, "tolist") else list(self.lengths)
        n = len(lengths) - lengths.count(0)
        # float(sum(ints)): the exact sum rounded once, the same float as the build's math.fsum
        self._avgdl = float(sum(lengths)) / n if n else 0.0
        self._num_searchable, self._stats_pending = n, False

    @property
    def tie_rank(self):
        """Each chunk's rank in chunk_id order (code point order): rankings sort on (score
        descending, chunk_id ascending), and comparing these ints is the same.  A loaded
        index's is checked to be a permutation of the chunk positions when first asked for
        (a MiniRagError naming the file otherwise)."""
        if self._tie_path is not None:
            tie = self._mapped.array("tie_rank")             # read (and its sha256 checked) now
            if self.num_chunks and not _permutation(tie, self.num_chunks):
                raise MiniRagError("%s: not a valid index (tie_rank must be a permutation of the %d chunk positions); "
                                   "rebuild it with 'python -m mini_rag index --force'"
                                   % (self._tie_path, self.num_chunks))
            self._tie_rank, self._tie_path = tie, None
        return self._tie_rank

    @tie_rank.setter
    def tie_rank(self, value) -> None:
        self._tie_rank, self._tie_path = value, None

    def _attach(self, vocab: List[str], store: Postings, term_max, checked: bool = True) -> None:
        """Set the lookups over the stored postings (a built and a loaded index alike;
        ``checked=False``: a term's upper bound is checked against its block maxima when
        first looked up, :meth:`_term_bound`)."""
        self._vocabulary = vocab
        self._tid = dict(zip(vocab, range(len(vocab))))
        self._store = store
        self._cache: Dict[int, Tuple[List[int], List[int]]] = {}
        self._wcache: Dict[int, List[float]] = {}
        self._cached = 0
        self._positions = _TermMap(self._tid, lambda i: self._decoded(i)[0])
        self._freqs = _TermMap(self._tid, lambda i: self._decoded(i)[1])
        self._weights = {"bm25": _TermMap(self._tid, self._bm25_of)}
        self._max_weights = {"bm25": _PerTerm(self._tid, term_max, None if checked else self._term_bound)}
        self._bound_ok = bytearray(0 if checked else len(vocab))

    def _term_bound(self, i: int) -> float:
        """Term ``i``'s stored largest weight (MaxScore's upper bound), checked when first
        looked up: the largest of its block maxima, which are finite and >= 0."""
        top = self._max_weights["bm25"].data[i]
        if not self._bound_ok[i]:
            store = self._store
            blocks = store.block_max[store.term_blocks[i]:store.term_blocks[i + 1]].tolist()
            if not (blocks and math.isfinite(sum(blocks)) and min(blocks) >= 0.0 and max(blocks) == top):
                raise MiniRagError("%s: not a valid index (term %d: its largest weight must be the largest of its "
                                   "block maxima, finite numbers >= 0); rebuild it with "
                                   "'python -m mini_rag index --force'" % (store.path, i))
            self._bound_ok[i] = 1
        return top

    #: Decoded postings kept in memory (a bounded cache: the commonest terms of a large
    #: index hold hundreds of thousands of postings).
    CACHE_POSTINGS = 1 << 22

    def _decoded(self, i: int) -> Tuple[List[int], List[int]]:
        got = self._cache.get(i)
        if got is None:
            got = self._store.decode(i)
            self._keep(len(got[0]))
            self._cache[i] = got
        return got

    def _keep(self, n: int) -> None:
        """Count ``n`` more postings cached; past the budget, the oldest terms go first."""
        self._cached += n
        if self._cached > self.CACHE_POSTINGS:
            for cache in (self._cache, self._wcache):
                for i in list(itertools.islice(cache, len(cache) // 2 + 1)):
                    self._cached -= len(cache.pop(i)[0] if cache is self._cache else cache.pop(i))
            if self._cached > self.CACHE_POSTINGS:
                self._cache.clear()
                self._wcache.clear()
                self._cached = n

    def norms(self) -> List[float]:
        """``k1 * (1 - b + b * dl / avgdl)`` of every chunk (BM25's length normalisation),
        computed once per distinct length (the same float for the same length)."""
        if self._norm is None:
            k1, b = self.k1, self.b
            avgdl = self.avgdl or 1.0
            dls = self._dls = list(self.lengths)
            table = {dl: k1 * (1.0 - b + b * dl / avgdl) for dl in set(dls)}
            self._norm = list(map(table.__getitem__, dls))
            self._norm_of = table
            # Each chunk's length class (the rank of its length among the distinct ones),
            # one byte a chunk when there are at most 256 lengths (two otherwise): what
            # _bm25 looks up per posting, compact enough to stay in the CPU caches.
            self._lengths_by_class = sorted(table)
            rank = dict(zip(self._lengths_by_class, range(len(table))))
            classes = map(rank.__getitem__, dls)
            self._dl_class = bytes(classes) if len(table) <= 256 else array.array(
                "H" if len(table) <= 1 << 16 else "L", classes)
            self._tables = {}
        return self._norm

    def _bm25_of(self, i: int) -> List[float]:
        ws = self._wcache.get(i)
        if ws is None:
            pos_list, tfs = self._decoded(i)
            ws = self._bm25(bm25_idf(self.num_searchable, len(pos_list)), pos_list, tfs)
            store = self._store
            b0, b1 = store.term_blocks[i], store.term_blocks[i + 1]
            n = len(ws)
            tops = list(map(max, map(ws.__getitem__, map(slice, range(0, n, BLOCK), range(BLOCK, n + BLOCK, BLOCK)))))
            if tops != store.block_max[b0:b1].tolist() or max(tops) != self._max_weights["bm25"].data[i]:
                raise self._bad_weights(i)
            self._keep(len(ws))
            self._wcache[i] = ws
        return ws

    def _bad_weights(self, i: int) -> MiniRagError:
        return MiniRagError("%s: not a valid index (the stored block maxima of term %d are not its weights' "
                            "maxima); rebuild it with 'python -m mini_rag index --force'" % (self._store.path, i))

    def _bm25(self, idf: float, pos_list: Sequence[int], tfs: Sequence[int]) -> List[float]:
        """``idf * (tf * (k1 + 1)) / (tf + norm[p])`` for every posting, the float of the
        build's formula.  Where tf = 1 it is ``(idf * (1 * (k1 + 1))) / (1 + norm[p])``, a
        function of the chunk's length alone: computed once per distinct length
        (:meth:`_length_table`) and looked up at C speed (the same operations on the same
        values, so the same float); the other postings one by one."""
        k1p1, norm = self.k1 + 1.0, self.norms()
        n = len(pos_list)
        table = self._tables.get(idf)
        if table is None and n > 2 * len(self._norm_of):
            table = self._length_table(idf)
        if table is not None and n > 1:
            # two itemgetter calls for the whole list: length classes, then their weights
            ws = list(itemgetter(*itemgetter(*pos_list)(self._dl_class))(table))
        else:
            c = idf * (1 * k1p1)
            ws = [c / (1 + norm[p]) for p in pos_list]
        if tfs.count(1) != n:
            try:
                others = bytes(tfs).translate(_NOT_ONE)     # 1 where tf != 1, found by memchr
            except ValueError:                              # a tf above 255
                for j in compress(range(n), map(operator.ne, tfs, repeat(1))):
                    tf = tfs[j]
                    ws[j] = idf * (tf * k1p1) / (tf + norm[pos_list[j]])
                return ws
            j = others.find(1)
            while j >= 0:
                tf = tfs[j]
                ws[j] = idf * (tf * k1p1) / (tf + norm[pos_list[j]])
                j = others.find(1, j + 1)
        return ws

    #: Length tables kept (:meth:`_length_table`), one per idf, all together at most this
    #: many floats (1,024 tables of 1,024 distinct lengths).
    TABLE_FLOATS = 1 << 20

    def _length_table(self, idf: float) -> List[float]:
        """``table[k]``: the weight of a posting with tf = 1 in a chunk of length class
        ``k`` (the k-th smallest length) for a term of this idf,
        ``(idf * (1 * (k1 + 1))) / (1 + norm)``; kept for the next blocks of the same term."""
        table = self._tables.get(idf)
        if table is None:
            self.norms()
            c = idf * (1 * (self.k1 + 1.0))
            norm_of = self._norm_of
            table = [c / (1 + norm_of[dl]) for dl in self._lengths_by_class]
            if (len(self._tables) + 1) * len(table) > self.TABLE_FLOATS:
                self._tables.clear()
            self._tables[idf] = table
        return table

    def block_weights(self, i: int, j: int) -> Dict[int, float]:
        """``{position: bm25 weight}`` of block ``j`` of term ``i`` (the same floats as
        the whole term's weights)."""
        pos_list, tfs = self._store.block(i, j)
        idf = bm25_idf(self.num_searchable, self._store.df[i])
        self._length_table(idf)
        ws = self._bm25(idf, pos_list, tfs)
        if max(ws) != self._store.block_max[j]:
            raise self._bad_weights(i)
        return dict(zip(pos_list, ws))

    def check_all(self) -> None:
        """Decode and check every term's postings, weights and block maxima, every chunk
        record and the chunk ids (a loaded index; ``load_index`` calls it for indexes of at
        most ``FULL_CHECK_POSTINGS`` postings, larger ones are checked term by term when
        read)."""
        total = 0
        for i in range(len(self._vocabulary)):
            self._cache.pop(i, None)
            self._wcache.pop(i, None)
            self._bm25_of(i)
            total += sum(self._decoded(i)[1])
            self._cache.pop(i, None)
            self._wcache.pop(i, None)
        self._cached = 0
        if total != sum(self.lengths):
            raise MiniRagError("%s: not a valid index (term frequencies sum to %d, the chunk lengths to %d); "
                               "rebuild it with 'python -m mini_rag index --force'"
                               % (self._store.path, total, sum(self.lengths)))
        self.tie_rank
        for i in range(len(self._bound_ok)):
            self._term_bound(i)
        for c in self.chunks:
            if type(c.chunk_id) is not str:
                raise MiniRagError("%s: not a valid index (a chunk record without a chunk id); rebuild it with "
                                   "'python -m mini_rag index --force'" % self._store.path)
        self._ids()

    def term_id(self, term: str) -> int:
        """The term's number in :attr:`vocabulary`, -1 when it is not indexed."""
        return self._tid.get(term, -1)

    # ------------------------------------------------------------ lookups

    def chunk(self, chunk_id: str) -> Chunk:
        pos = self._ids().get(chunk_id)
        if pos is None:
            raise MiniRagError("unknown chunk id, got %r" % chunk_id)
        return self.chunks[pos]

    def position(self, chunk_id: str) -> int:
        """0-based position of a chunk in :attr:`chunks` (KeyError-free: -1 when unknown)."""
        return self._ids().get(chunk_id, -1)

    def _ids(self) -> Dict[str, int]:
        """``{chunk_id: position}`` (a loaded index builds it on first need)."""
        if self._by_id is None:
            ids = self._chunk_ids() if self._chunk_ids is not None else [c.chunk_id for c in self.chunks]
            self._by_id = dict(zip(ids, range(len(ids))))
        return self._by_id

    def doc_freq(self, term: str) -> int:
        i = self._tid.get(term)
        return self._store.df[i] if i is not None else 0

    def idf(self, term: str) -> float:
        """BM25 (Lucene) idf of a term; a term not in the index gets the df = 0 value."""
        return bm25_idf(self.num_searchable, self.doc_freq(term))

    def tfidf_idf(self, term: str) -> float:
        return tfidf_idf(self.num_searchable, self.doc_freq(term))

    def has_term(self, term: str) -> bool:
        return term in self._tid

    @property
    def vocabulary(self) -> List[str]:
        """Every indexed term, sorted (code point order)."""
        return self._vocabulary

    def terms(self, position: int) -> Dict[str, int]:
        """``{term: tf}`` of the chunk at ``position`` (do not modify)."""
        return self._terms[position]

    def settings(self) -> Dict[str, Any]:
        return scoring_settings(self.k1, self.b)

    # ------------------------------------------------------------ weights

    @_gc_paused
    def prepare(self, scoring: str = "bm25") -> Mapping:
        """Per-posting weights of a scoring function: ``{term: weights}`` (``bm25``: each
        term's computed from its stored tf when first asked for, a bounded cache keeping
        them; ``tfidf``: computed once for every term)."""
        table = self._weights.get(scoring)
        if table is not None:
            return table
        if scoring not in SCORINGS:
            raise MiniRagError("scoring must be one of %s, got %r" % (", ".join(SCORINGS), scoring))
        n = self.num_searchable
        table = {}
        idfs = {t: tfidf_idf(n, self.doc_freq(t)) for t in self.vocabulary}
        # Each chunk's squared weights gathered from the postings (a loaded index has
        # no bags at hand); fsum: a norm independent of the order of the chunk's terms.
        squares: List[List[float]] = [[] for _ in range(self.num_chunks)]
        for term, pos_list in self._positions.items():
            idf = idfs[term]
            for p, tf in zip(pos_list, self._freqs[term]):
                squares[p].append(((1.0 + math.log(tf)) * idf) ** 2)
        norms = [math.sqrt(math.fsum(sq)) or 1.0 for sq in squares]
        del squares
        for term, pos_list in self._positions.items():
            idf = idfs[term]
            table[term] = [(1.0 + math.log(tf)) * idf / norms[p]
                           for p, tf in zip(pos_list, self._freqs[term])]
        self._weights[scoring] = table
        return table

    def max_weights(self, scoring: str = "bm25") -> Mapping:
        """``{term: largest posting weight}``: the per-term upper bounds of pruned top-k
        (stored in the index for ``bm25``, computed once otherwise)."""
        table = self._max_weights.get(scoring)
        if table is None:
            weights = self.prepare(scoring)
            table = self._max_weights[scoring] = {t: max(ws) for t, ws in weights.items()}
        return table

    def postings(self, term: str, scoring: str = "bm25") -> Tuple[List[int], List[float]]:
        """``(positions, weights)`` of a term; two empty lists for an unknown term."""
        table = self._weights.get(scoring) or self.prepare(scoring)
        w = table.get(term)
        if w is None:
            return [], []
        return self._positions[term], w


class _TermMap(Mapping):
    """``term -> fetch(term id)`` over the vocabulary's ids (decoding is ``fetch``'s)."""

    __slots__ = ("_ids", "_fetch")

    def __init__(self, ids: Dict[str, int], fetch) -> None:
        self._ids, self._fetch = ids, fetch

    def __getitem__(self, term: str):
        return self._fetch(self._ids[term])

    def get(self, term: str, default=None):
        i = self._ids.get(term)
        return default if i is None else self._fetch(i)

    def __contains__(self, term: object) -> bool:
        return term in self._ids

    def __iter__(self):
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


class _PerTerm(_TermMap):
    """``term -> one number`` of an array indexed by term id (``fetch``: by a function of
    the term id instead, e.g. one checking it)."""

    __slots__ = ("data",)

    def __init__(self, ids: Dict[str, int], data, fetch=None) -> None:
        super().__init__(ids, fetch or data.__getitem__)
        self.data = data


# ---------------------------------------------------------------- building

def scoring_settings(k1: float, b: float) -> Dict[str, Any]:
    return {"function": "bm25", "variant": BM25_VARIANT, "idf": BM25_IDF,
            "tf": "tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))",
            "k1": float(k1), "b": float(b), "tfidf_idf": TFIDF_IDF,
            "fields": INDEXED_FIELDS}


@_gc_paused
def analyze_chunks(chunks: Sequence[Chunk], analyzer: Analyzer, progress=None) -> List[Dict[str, int]]:
    """The bag of terms of every chunk, as ``{term: tf}`` in first-occurrence order."""
    out = []
    counts = analyzer.term_counts
    for i, c in enumerate(chunks):
        # A heading standing alone is not searchable by itself: it states nothing, and its
        # words are indexed with every paragraph under it (see indexed_text).
        out.append({} if c.is_heading else counts(indexed_text(c)))
        if progress is not None and i % 256 == 0:
            progress.update(i)
    return out


def build_index(chunks: List[Chunk], analyzer: Optional[Analyzer] = None, k1: float = 1.5,
                b: float = 0.75, manifest: Optional[Dict[str, Any]] = None,
                chunk_terms: Optional[List[Dict[str, int]]] = None, progress=None) -> Index:
    """Analyze ``chunks`` (unless ``chunk_terms`` are given) and index them."""
    analyzer = analyzer or Analyzer()
    if chunk_terms is None:
        chunk_terms = analyze_chunks(chunks, analyzer, progress)
    return Index(list(chunks), chunk_terms, analyzer, k1, b, manifest)


def analyzer_from_config(config: Dict[str, Any]) -> Analyzer:
    a = config["analysis"]
    return Analyzer(stopwords=a["stopwords"], stemmer=a["stemmer"])


def _manifest(config: Dict[str, Any], corpus_path: str, files, docs, analyzer: Analyzer,
              chunks: List[Chunk], num_terms: int, num_postings: int) -> Dict[str, Any]:
    from .. import __version__
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "mini_rag_version": __version__,
        "corpus": {"path": corpus_path, "files": [list(f) for f in files]},
        "chunking": {"rule": CHUNKING_RULE, "versions": VERSION_RULE,
                     "max_chunk_chars": config["corpus"]["max_chunk_chars"]},
        "analysis": analyzer.settings(),
        "scoring": scoring_settings(config["index"]["k1"], config["index"]["b"]),
        "documents": {d.doc_id: d.content_hash for d in docs},
        "stats": {"documents": len(docs), "chunks": len(chunks), "terms": num_terms,
                  "postings": num_postings},
    }


def _expected(config: Dict[str, Any], corpus_path: str, files, analyzer: Analyzer) -> Dict[str, Any]:
    """The manifest fields an up-to-date index must have."""
    return {
        "corpus": {"path": corpus_path, "files": [list(f) for f in files]},
        "chunking": {"rule": CHUNKING_RULE, "versions": VERSION_RULE,
                     "max_chunk_chars": config["corpus"]["max_chunk_chars"]},
        "analysis": analyzer.settings(),
        "scoring": scoring_settings(config["index"]["k1"], config["index"]["b"]),
    }


def stale_reasons(manifest: Dict[str, Any], expected: Dict[str, Any]) -> List[str]:
    """Why an index with ``manifest`` does not serve ``expected`` ([] when it does)."""
    reasons = []
    old_c, new_c = manifest.get("corpus") or {}, expected["corpus"]
    if old_c.get("path") != new_c["path"]:
        reasons.append("it was built for corpus %r, not %r" % (old_c.get("path"), new_c["path"]))
    else:
        old = dict(tuple(f) for f in old_c.get("files") or [])
        new = dict(tuple(f) for f in new_c["files"])
        changed = sorted(f for f in new if f in old and old[f] != new[f])
        added = sorted(f for f in new if f not in old)
        removed = sorted(f for f in old if f not in new)
        for label, names in (("changed", changed), ("added", added), ("removed", removed)):
            if names:
                shown = ", ".join(names[:5]) + (" ..." if len(names) > 5 else "")
                reasons.append("%d file%s %s (%s)" % (len(names), "" if len(names) == 1 else "s",
                                                      label, shown))
    for key in ("chunking", "analysis", "scoring"):
        old_s, new_s = manifest.get(key) or {}, expected[key]
        if old_s != new_s:
            diff = sorted(k for k in set(old_s) | set(new_s) if old_s.get(k) != new_s.get(k))
            reasons.append("%s settings differ (%s)" % (key, ", ".join(diff)))
    return reasons


def build_from_config(config: Dict[str, Any], corpus_path: Optional[str] = None,
                      reuse: Optional[Index] = None, progress=None) -> Index:
    """Read the corpus, chunk it and index it; reuse ``reuse``'s term counts where valid."""
    corpus_path = corpus_path or config["corpus"]["path"]
    files = corpus_files(corpus_path)
    docs = load_corpus(corpus_path)
    analyzer = analyzer_from_config(config)
    max_chars = config["corpus"]["max_chunk_chars"]
    chunks: List[Chunk] = []
    for d in docs:
        chunks.extend(chunk_document(d, max_chars))
    # Reuse: an unchanged document (same content hash) under the same analysis settings
    # yields the same chunk text, hence the same bag of terms.  Indexed text is compared
    # too, so a change in the chunking code can never leave an old bag in place.
    old_bags: Dict[str, Tuple[str, Dict[str, int]]] = {}
    if reuse is not None and reuse.manifest.get("analysis") == analyzer.settings():
        old_docs = reuse.manifest.get("documents") or {}
        new_docs = {d.doc_id: d.content_hash for d in docs}
        for pos, c in enumerate(reuse.chunks):
            if old_docs.get(c.doc_id) and old_docs.get(c.doc_id) == new_docs.get(c.doc_id):
                old_bags[c.chunk_id] = (indexed_text(c), reuse.terms(pos))
    bags: List[Optional[Dict[str, int]]] = []
    todo = []
    for i, c in enumerate(chunks):
        old = old_bags.get(c.chunk_id)
        if old is not None and old[0] == indexed_text(c):
            bags.append(old[1])
        else:
            bags.append(None)
            todo.append(i)
    fresh = analyze_chunks([chunks[i] for i in todo], analyzer, progress)
    for i, bag in zip(todo, fresh):
        bags[i] = bag
    index = Index(chunks, bags, analyzer, config["index"]["k1"], config["index"]["b"])  # type: ignore[arg-type]
    index.manifest = _manifest(config, corpus_path, files, docs, analyzer, chunks,
                               len(index.vocabulary), sum(index._store.df))
    index.reused_chunks = len(chunks) - len(todo)  # type: ignore[attr-defined]
    return index


# ---------------------------------------------------------------- persistence

def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def index_bytes(index: Index) -> bytes:
    """The format 1 serialization of an index (two JSON lines, uncompressed): still read
    by :func:`load_index`; written only to test that."""
    vocab = index.vocabulary
    tid = {t: i for i, t in enumerate(vocab)}
    rows = []
    for pos in range(index.num_chunks):
        bag = index.terms(pos)
        flat: List[int] = []
        for t in sorted(bag, key=tid.__getitem__):
            flat.append(tid[t])
            flat.append(bag[t])
        rows.append(flat)
    body = {"chunks": [c.to_json() for c in index.chunks], "vocabulary": vocab, "chunk_terms": rows}
    body_line = _dumps(body).encode("utf-8")
    manifest = dict(index.manifest)
    manifest.pop("sections", None)
    manifest.setdefault("format", FORMAT)
    manifest["format_version"] = 1
    manifest.setdefault("scoring", index.settings())
    manifest.setdefault("analysis", index.analyzer.settings())
    manifest["body_sha256"] = hashlib.sha256(body_line).hexdigest()
    return _dumps(manifest).encode("utf-8") + b"\n" + body_line + b"\n"


#: Sections of format 3, in file order: (name, type).  Postings are stored term by term
#: in vocabulary order, in blocks (``postings.py``); chunk records in zlib blocks.
SECTIONS = (("vocabulary", "json"), ("chunk_ids", "json"), ("chunks", "bytes"),
            ("chunk_blocks", "u64"), ("lengths", "u32"), ("tie_rank", "u32"),
            ("df", "u32"), ("term_blocks", "u64"), ("block_last", "u32"), ("block_start", "u64"),
            ("block_format", "u8"), ("block_max", "f64"), ("bm25_max", "f64"), ("postings", "bytes"))
#: Sections hashed page by page (formats 4 and 5: each page checked when first read), their page
#: digests in a last section, ``pages`` (``store.py``); sections read only when needed
#: (``chunk_ids``: ``Index.chunk`` and ``position``; ``tie_rank``: the first tie), checked
#: against their sha256 then.
PAGED = ("chunks", "postings")
DEFERRED = ("chunk_ids", "tie_rank")


def section_names(version: int) -> List[str]:
    """The sections of a format 3, 4 or 5 index, in file order."""
    return [name for name, _ in SECTIONS] + ([PAGES] if version >= 4 else [])


#: A stored chunk record is the JSON array of these fields' values (``Chunk`` order).
CHUNK_FIELDS = tuple(f.name for f in dataclasses.fields(Chunk))
_BATCH = 8192


def _chunk_lines(chunks: Sequence[Chunk]):
    """The chunks as JSON lines (``CHUNK_FIELDS`` values, an array, ending in a newline),
    a batch at a time.  Arrays rather than ``to_json()`` objects, built by C-level maps."""
    get = operator.attrgetter(*CHUNK_FIELDS)
    encode_all = _records_encoder(get(chunks[0]) if len(chunks) else None)
    for start in range(0, len(chunks), _BATCH):
        for line in map(str.encode, map("%s\n".__mod__, encode_all(map(get, chunks[start:start + _BATCH])))):
            yield line


def _records_encoder(sample):
    """``encode_all(records) -> iterator of str``, each the text of
    ``json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode(record)``: with
    that encoder's C function made once rather than once a record (what ``encode`` does),
    by C-level maps, when the json module has one and it gives ``sample`` the same text;
    otherwise ``map(encode, records)``."""
    encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    slow = functools.partial(map, encode)
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None or sample is None:
        return slow
    join = "".join
    try:
        one = make({}, encode.__self__.default, json.encoder.encode_basestring, None, ":", ",",
                   False, False, True)

        def fast(records):
            return map(join, map(one, records, repeat(0)))
        if next(fast([sample])) != encode(sample):
            return slow                                 # pragma: no cover - another json module
    except Exception:                                   # pragma: no cover - another json module
        return slow
    return fast


def _section_bytes(index: Index):
    """``(name, type, bytes-like)`` of every section of ``index``, in file order: what the
    index holds already (encoded when it was built, or as read from its file)."""
    store = index._store
    sf = index._mapped
    if sf is not None:
        ids, vocab = sf.raw("chunk_ids"), sf.raw("vocabulary")
    else:
        ids, vocab = index._ids_json, _dumps(index.vocabulary).encode("utf-8")
    data = {"vocabulary": vocab, "chunk_ids": ids,
            "chunks": index._chunk_data, "chunk_blocks": index._chunk_offsets,
            "lengths": index.lengths, "tie_rank": index.tie_rank,
            "df": store.df, "term_blocks": store.term_blocks, "block_last": store.block_last,
            "block_start": store.block_start, "block_format": store.block_format,
            "block_max": store.block_max, "bm25_max": index._max_weights["bm25"].data,
            "postings": store.data}
    for name, kind in SECTIONS:
        value = data[name]
        if isinstance(value, LazyArray):
            value = value[0:len(value)]
        elif isinstance(value, list):
            value = array.array(TYPECODES[kind], value)
        yield name, kind, value, index._digests.get(name)


@_gc_paused
def save_index(index: Index, path: str) -> int:
    """Write the index atomically (format 5, gzip'd when the path ends in ``.gz``): its
    sections as the index holds them, nothing encoded again; returns the bytes written."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    manifest = {k: v for k, v in index.manifest.items() if k not in ("sections", "body_sha256")}
    manifest.setdefault("format", FORMAT)
    manifest["format_version"] = FORMAT_VERSION
    manifest["chunk_fields"] = list(CHUNK_FIELDS)
    manifest["blocks"] = {"postings": BLOCK, "chunks": CHUNK_BLOCK}
    manifest.setdefault("scoring", index.settings())
    manifest.setdefault("analysis", index.analyzer.settings())
    size, sections = write_sections(path, manifest, list(_section_bytes(index)), path.endswith(".gz"), PAGED)
    manifest["sections"] = sections
    index.manifest = manifest
    return size


def _open(path: str):
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise MiniRagError("%s: cannot read index: %s" % (path, exc.strerror)) from None
    magic = fh.read(2)
    fh.seek(0)
    if magic == b"\x1f\x8b":
        fh.close()                      # GzipFile(fileobj=...) would leave it open on close
        return gzip.open(path, "rb")
    return fh


def read_manifest(path: str) -> Dict[str, Any]:
    """The manifest line of an index file (the body is not read)."""
    with _open(path) as fh:
        line = _read_line(fh, path, 1, MAX_MANIFEST_BYTES)
    return _parse_manifest(line, path)


def _read_line(fh, path: str, lineno: int, limit: int) -> bytes:
    """One line of an index file, decompressing at most ``limit`` bytes (a gzip bomb stops
    there)."""
    try:
        line = fh.readline(limit + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise MiniRagError("%s: not a readable index file (%s)" % (path, exc)) from None
    if len(line) > limit:
        raise MiniRagError("%s:%d: index line longer than %d bytes once decompressed (limit: "
                           "MAX_INDEX_BYTES); not an index this tool wrote" % (path, lineno, limit))
    return line


def _loads_index_line(line: bytes, path: str, lineno: int) -> Any:
    """JSON of one index line; no RecursionError, no integer beyond the digit limit, no
    lone surrogate (each an error naming ``path:line``)."""
    try:
        obj = json.loads(line.decode("utf-8"), parse_int=_index_int)
    except RecursionError:
        raise MiniRagError("%s:%d: index JSON nested too deeply" % (path, lineno)) from None
    except ValueError as exc:
        if lineno == 1:
            raise
        raise MiniRagError("%s:%d: index body is not valid JSON (%s)" % (path, lineno, str(exc)[:80])) from None
    if _SURROGATE.search(line):
        try:
            json.dumps(obj, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise MiniRagError("%s:%d: index holds a lone surrogate escape (\\ud800-\\udfff)"
                               % (path, lineno)) from None
    return obj


_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")


def _index_int(text: str) -> int:
    if len(text) > 20:
        raise ValueError("integer longer than 20 digits")
    return int(text)


def _parse_manifest(line: bytes, path: str) -> Dict[str, Any]:
    try:
        manifest = _loads_index_line(line, path, 1)
    except (UnicodeDecodeError, ValueError):
        raise MiniRagError("%s:1: not a mini_rag index (the first line is not a JSON manifest), got %r"
                           % (path, line[:40])) from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise MiniRagError("%s:1: not a mini_rag index, got format %r"
                           % (path, manifest.get("format") if isinstance(manifest, dict) else manifest))
    if manifest.get("format_version") not in READABLE_VERSIONS:
        raise MiniRagError("%s:1: index format version must be %s, got %r; rebuild it with "
                           "'python -m mini_rag index --force'"
                           % (path, ", ".join(map(str, READABLE_VERSIONS[:-1])) + " or %d" % READABLE_VERSIONS[-1],
                              manifest.get("format_version")))
    return manifest


@_gc_paused
def load_index(path: str) -> Index:
    """Read an index file; its manifest, section (or body) hashes and settings are checked.

    Formats 3, 4 and 5 are ready when read: the small sections are read, postings and weights are
    read term by term when a query asks for them, chunks are decoded when first asked for.  Format 1 is rebuilt
    from its term bags (the older, slower way; saving it again writes format 5).
    """
    fh = _open(path)
    try:
        first = _read_line(fh, path, 1, MAX_MANIFEST_BYTES)
        manifest = _parse_manifest(first, path)
        if manifest["format_version"] == 1:
            return _load_v1(path, fh, manifest)
    except BaseException:
        fh.close()
        raise
    fh.close()
    raw = open(path, "rb")
    try:
        sf = SectionFile(path, first, raw, _declared_size(manifest, len(first), path))
        sf.check(manifest, DEFERRED)
        return _load_v3(path, sf, manifest)
    except BaseException:
        raw.close()
        raise


def _declared_size(manifest: Dict[str, Any], head: int, path: str) -> int:
    """The size a format 2 file decompresses to, by its manifest: the manifest line plus
    the end of its last section (padded), at most MAX_DECLARED_BYTES."""
    end = 0
    for sec in manifest.get("sections") or []:
        try:
            end = max(end, int(sec["offset"]) + int(sec["length"]))
        except (KeyError, TypeError, ValueError):
            raise MiniRagError("%s:1: malformed section entry, got %r" % (path, sec)) from None
    size = head + end + 64
    if size > MAX_DECLARED_BYTES:
        raise MiniRagError("%s:1: the manifest describes %d bytes, more than %d; not an index this "
                           "tool wrote" % (path, size, MAX_DECLARED_BYTES))
    return size


def _load_v1(path: str, fh, manifest: Dict[str, Any]) -> Index:
    with fh:
        body_line = _read_line(fh, path, 2, MAX_INDEX_BYTES).rstrip(b"\n")
    if hashlib.sha256(body_line).hexdigest() != manifest.get("body_sha256"):
        raise MiniRagError("%s:2: index body does not match the manifest's body_sha256 "
                           "(truncated or edited); rebuild it with 'python -m mini_rag index --force'"
                           % path)
    body = validate_index(manifest, _loads_index_line(body_line, path, 2), path)
    analyzer = Analyzer.from_settings(manifest.get("analysis"))
    vocab = body["vocabulary"]
    bags = []
    for flat in body["chunk_terms"]:
        bags.append({vocab[flat[i]]: flat[i + 1] for i in range(0, len(flat), 2)})
    chunks = [Chunk.from_json(c) for c in body["chunks"]]
    scoring = manifest.get("scoring") or {}
    return Index(chunks, bags, analyzer, scoring.get("k1", 1.5), scoring.get("b", 0.75), manifest)


_CHUNK_TYPES = (("chunk_id", str), ("doc_id", str), ("ordinal", int), ("page", int), ("text", str),
                ("title", str), ("heading", str), ("is_heading", bool), ("authority", str),
                ("effective", str), ("line", int), ("metadata", dict), ("section", list), ("kind", str),
                ("indexed", str))


def validate_index(manifest: Dict[str, Any], body: Any, path: str) -> Dict[str, Any]:
    """Check a parsed index against the format before anything uses it: a body whose hash
    matches but whose structure is wrong (hand-made or from a buggy writer) is an error
    naming the file, never a KeyError, IndexError or TypeError later.  Returns ``body``."""
    def bad(what: str) -> MiniRagError:
        return MiniRagError("%s: not a valid index (%s); rebuild it with 'python -m mini_rag index --force'"
                            % (path, what))
    scoring = manifest.get("scoring")
    if not isinstance(scoring, dict):
        raise bad("manifest scoring must be an object")
    for key, lo, hi in (("k1", 0.0, 1000.0), ("b", 0.0, 1.0)):
        v = scoring.get(key, 1.5 if key == "k1" else 0.75)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (math.isfinite(v) and lo <= v <= hi):
            raise bad("scoring %s must be a finite number from %s to %s, got %r" % (key, lo, hi, v))
    if not isinstance(body, dict):
        raise bad("the body must be an object")
    chunks, vocab, rows = body.get("chunks"), body.get("vocabulary"), body.get("chunk_terms")
    if not isinstance(chunks, list) or not isinstance(vocab, list) or not isinstance(rows, list):
        raise bad("the body needs lists chunks, vocabulary and chunk_terms")
    if len(rows) != len(chunks):
        raise bad("%d chunk_terms rows for %d chunks" % (len(rows), len(chunks)))
    if not all(type(t) is str for t in vocab) or len(set(vocab)) != len(vocab):
        raise bad("vocabulary must be distinct strings")
    names = {name for name, _ in _CHUNK_TYPES}
    for n, c in enumerate(chunks):
        if not isinstance(c, dict) or not (set(c) == names or set(c) == names - {"indexed"}):   # indexed: since chunking rule 4
            raise bad("chunk %d must be an object with keys %s" % (n, ", ".join(sorted(names))))
        for name, typ in _CHUNK_TYPES:
            v = c.get(name, "")
            if type(v) is not typ or (typ is int and v < 0):
                raise bad("chunk %d: %s must be %s, got %r" % (n, name, typ.__name__, v))
    n_vocab = len(vocab)
    for n, flat in enumerate(rows):
        if not isinstance(flat, list) or len(flat) % 2 or not set(map(type, flat)) <= {int}:
            raise bad("chunk_terms row %d must be a list of [term id, tf] integer pairs" % n)
        if flat and not (min(flat[0::2]) >= 0 and max(flat[0::2]) < n_vocab and min(flat[1::2]) >= 1):
            raise bad("chunk_terms row %d: term ids must be in 0..%d and tf >= 1" % (n, n_vocab - 1))
    return body


class _LazyChunks(SequenceABC):
    """The chunks of a loaded index, each decoded from its JSON line (in its zlib block,
    ``postings.ChunkBlocks``) when first asked for (a bounded cache keeps the recent ones)."""

    CACHE = 1 << 16

    def __init__(self, blocks: ChunkBlocks, path: str = "index") -> None:
        self._blocks, self._path = blocks, path
        self._n = blocks.n
        self._cache: Dict[int, Chunk] = {}

    def __len__(self) -> int:
        return self._n

    def _decode(self, i: int) -> Chunk:
        raw = self._blocks.line(i)
        try:
            c = Chunk(*json.loads(raw))
        except (ValueError, TypeError, RecursionError):
            raise MiniRagError("%s: not a valid index (chunk record %d is not a chunk, got %r); rebuild it with "
                               "'python -m mini_rag index --force'" % (self._path, i, raw[:60])) from None
        return c

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError("chunk position out of range")
        c = self._cache.get(i)
        if c is None:
            if len(self._cache) >= self.CACHE:
                self._cache.clear()
            c = self._cache[i] = self._decode(i)
        return c

    def __iter__(self):
        cache = self._cache
        for i in range(self._n):
            c = cache.get(i)
            yield c if c is not None else self._decode(i)


class _LazyBags(SequenceABC):
    """Each chunk's ``{term: tf}``, analyzed again from its text when asked for: the same
    bag the build made (same text, same analyzer), not stored in the file."""

    def __init__(self, chunks: Sequence[Chunk], analyzer: Analyzer) -> None:
        self._chunks, self._analyzer = chunks, analyzer
        self._cache: Dict[int, Dict[str, int]] = {}

    def __len__(self) -> int:
        return len(self._chunks)

    def __getitem__(self, pos):
        bag = self._cache.get(pos)
        if bag is None:
            c = self._chunks[pos]
            bag = {} if c.is_heading else self._analyzer.term_counts(indexed_text(c))
            if len(self._cache) >= _LazyChunks.CACHE:
                self._cache.clear()
            self._cache[pos] = bag
        return bag


def _rises(arr, first: int, last: int) -> bool:
    """``arr`` non-decreasing from ``first`` to ``last`` (C-level comparisons)."""
    if not len(arr) or arr[0] != first or arr[-1] != last:
        return False
    items = arr.tolist()
    return items == sorted(items)          # timsort: one C comparison per item on a sorted list


def _permutation(arr, n: int) -> bool:
    """``arr`` holds each of 0..n-1 once (``len(arr) == n``): each item marks its place in
    a bytearray (one C-level call per item; an item >= n raises IndexError), none left."""
    marks = bytearray(n)
    try:
        collections.deque(map(marks.__setitem__, arr.tolist(), repeat(1)), 0)
    except IndexError:
        return False
    return marks.find(0) < 0


def validate_sections(path: str, manifest: Dict[str, Any], sf: SectionFile, vocab, parts: Dict[str, Any]) -> None:
    """The structure of a format 3, 4 or 5 index, beyond its hashes (issue 33: sections whose
    hashes match can still be swapped, hand-made or from a buggy writer), with no pass over
    every chunk or block: sections in the format's order without overlap; the vocabulary
    distinct sorted strings; sizes that agree; term and chunk block offsets rising from 0
    to their end, the postings' block offsets from 0 to their section's end; as many blocks
    per term as its df needs; block formats in range.  Checked when first used instead: a
    block's offsets, end (in range) and postings when read (``postings.py``), a term's
    block maxima and largest weight when looked up or weighted, the tie ranks (a
    permutation) at the first tie; so a damaged index is an error naming the file, never
    a wrong answer."""
    def bad(what: str) -> MiniRagError:
        return MiniRagError("%s: not a valid index (%s); rebuild it with 'python -m mini_rag index --force'"
                            % (path, what))
    secs = manifest.get("sections") or []
    names = [sec.get("name") for sec in secs if isinstance(sec, dict)]
    want = section_names(manifest.get("format_version"))
    if names != want:
        raise bad("sections must be %s in this order, got %s" % (", ".join(want), names))
    end = 0
    for sec, (name, kind) in zip(secs, SECTIONS):
        if sec.get("type") != kind:
            raise bad("section %s must be of type %s, got %r" % (name, kind, sec.get("type")))
        if int(sec["offset"]) < end:
            raise bad("section %s overlaps the one before it" % name)
        end = int(sec["offset"]) + int(sec["length"])
    if len(secs) > len(SECTIONS) and (secs[-1].get("type") != "bytes" or int(secs[-1]["offset"]) < end):
        raise bad("section %s must be of type bytes, after the others" % PAGES)
    hashes = [(sec.get("pages") or {}).get("hash", "sha256") for sec in secs if "pages" in sec]
    want_hash = PAGE_HASH_OF.get(manifest.get("format_version"))
    if [sec.get("name") for sec in secs if "pages" in sec] != (list(PAGED) if want_hash else []) \
            or set(hashes) - {want_hash}:
        raise bad("format %s pages sections %s by %s, got %s by %s" % (
            manifest.get("format_version"), ", ".join(PAGED) if want_hash else "none", want_hash,
            [sec.get("name") for sec in secs if "pages" in sec], sorted(set(hashes))))
    if manifest.get("blocks") != {"postings": BLOCK, "chunks": CHUNK_BLOCK}:
        raise bad("blocks must be %r, got %r" % ({"postings": BLOCK, "chunks": CHUNK_BLOCK}, manifest.get("blocks")))
    if not isinstance(vocab, list) or not set(map(type, vocab)) <= {str} or not all(
            map(operator.lt, vocab, itertools.islice(vocab, 1, None))):
        raise bad("the vocabulary must be distinct strings in code point order")
    p = parts
    n, nt, nb = len(p["lengths"]), len(vocab), len(p["block_last"])
    if not (sf.sections["tie_rank"]["length"] == 4 * n and len(p["df"]) == len(p["bm25_max"]) == nt
            and len(p["term_blocks"]) == nt + 1 and len(p["block_start"]) == nb + 1
            and len(p["block_format"]) == len(p["block_max"]) == nb
            and len(p["chunk_blocks"]) == -(-n // CHUNK_BLOCK) + 1):
        raise bad("sections disagree on their sizes")
    for name, total in (("term_blocks", nb), ("chunk_blocks", sf.sections["chunks"]["length"])):
        if not _rises(p[name], 0, total):
            raise bad("%s must rise from 0 to %d" % (name, total))
    # block_start: its ends here, each block's size (so rising) when the block is read
    starts, total = p["block_start"], sf.sections["postings"]["length"]
    if not len(starts) or starts[0] != 0 or starts[-1] != total:
        raise bad("block_start must rise from 0 to %d" % total)
    # C-level calls over lists (``tolist`` once): no Python code per item
    tbl, dfl = p["term_blocks"].tolist(), p["df"].tolist()
    if nt and (min(dfl) < 1 or list(map(operator.sub, itertools.islice(tbl, 1, None), tbl))
               != list(map(operator.floordiv, map(operator.add, dfl, repeat(BLOCK - 1)), repeat(BLOCK)))):
        raise bad("every term needs df >= 1 and ceil(df / %d) blocks" % BLOCK)
    # block ends (below the number of chunks, rising) are checked when their block is read,
    # a term's block maxima and largest weight when it is first looked up (Index._term_bound)
    # or its weights computed
    if bytes(p["block_format"]).translate(None, _BLOCK_FORMATS):
        raise bad("block ends must name one of the %d chunks and block formats be 0..8" % n)
    # tie_rank: checked to be a permutation when first used (Index.tie_rank)


def _chunk_ids(path: str, sf: SectionFile, n: int):
    """The chunk ids of a loaded index, read and checked when first needed."""
    ids = sf.json("chunk_ids")
    if not isinstance(ids, list) or len(ids) != n or not set(map(type, ids)) <= {str} or len(set(ids)) != n:
        raise MiniRagError("%s: not a valid index (chunk_ids must be %d distinct strings); rebuild it with "
                           "'python -m mini_rag index --force'" % (path, n))
    return ids


def _load_v3(path: str, sf: SectionFile, manifest: Dict[str, Any]) -> Index:
    missing = [name for name, _ in SECTIONS if name not in sf.sections]
    if missing:
        raise MiniRagError("%s:1: index has no section %s; rebuild it with "
                           "'python -m mini_rag index --force'" % (path, ", ".join(missing)))
    if manifest.get("chunk_fields") != list(CHUNK_FIELDS):
        raise MiniRagError("%s:1: index chunk records have fields %r, this version reads %r; rebuild "
                           "it with 'python -m mini_rag index --force'"
                           % (path, manifest.get("chunk_fields"), list(CHUNK_FIELDS)))
    vocab = sf.json("vocabulary")
    parts = {name: sf.array(name) for name, kind in SECTIONS if kind in TYPECODES and name not in DEFERRED}
    validate_sections(path, manifest, sf, vocab, parts)
    scoring = manifest.get("scoring") or {}
    index = Index([], [], Analyzer.from_settings(manifest.get("analysis")),
                  scoring.get("k1", 1.5), scoring.get("b", 0.75), manifest)
    n = len(parts["lengths"])
    chunk_data = sf.lazy("chunks")
    index._chunk_data, index._chunk_offsets = chunk_data, parts["chunk_blocks"]
    index.chunks = _LazyChunks(ChunkBlocks(path, n, parts["chunk_blocks"], chunk_data, MAX_CHUNK_BLOCK_BYTES),
                               path)  # type: ignore[assignment]
    index.num_chunks = n
    index._by_id = None
    index._chunk_ids = lambda: _chunk_ids(path, sf, n)
    index._terms = _LazyBags(index.chunks, index.analyzer)        # type: ignore[assignment]
    index.lengths = parts["lengths"]                             # type: ignore[assignment]
    index._stats_pending = True          # N and avgdl: from the lengths when first asked for
    index._tie_rank, index._tie_path = None, path     # read and checked when first used
    index._norm = None
    store = Postings(path, n, parts["df"], parts["term_blocks"], parts["block_last"], parts["block_start"],
                     parts["block_format"], parts["block_max"], sf.lazy("postings"))
    index._attach(vocab, store, parts["bm25_max"], checked=False)
    index._mapped = sf
    # the sections' digests as checked (the paged ones page by page, each page checked when
    # read, by the save too): saving it again reuses them
    index._digests = {name: sf.page_digests(name, PAGE_HASH) if name in PAGED else sec["sha256"]
                      for name, sec in sf.sections.items()}
    if sum(parts["df"]) <= FULL_CHECK_POSTINGS:
        index.check_all()
    return index


def _damaged_hint(read, path: str):
    """``read(path)``, its error ending with how to rebuild the index when it does not say so."""
    try:
        return read(path)
    except MiniRagError as exc:
        text = str(exc)
        if "index --force" in text:
            raise
        raise MiniRagError("%s; rebuild it with 'python -m mini_rag index --force'" % text) from None


def _retired_version(path: str) -> int:
    """The format version of a mini_rag index of a version no longer read (0 otherwise)."""
    try:
        with _open(path) as fh:
            manifest = json.loads(_read_line(fh, path, 1, MAX_MANIFEST_BYTES))
    except (MiniRagError, ValueError, OSError, EOFError, zlib.error):
        return 0
    if isinstance(manifest, dict) and manifest.get("format") == FORMAT:
        version = manifest.get("format_version")
        if type(version) is int and version in RETIRED_VERSIONS:
            return version
    return 0


def check_index_path(path: str, corpus_path: str, files, force: bool = False) -> None:
    """The output policy for ``[index] path`` (issue 33), before anything is read or written:
    it must not be the corpus or one of its files, nor a folder, device or FIFO, and an
    existing file there must be a mini_rag index (``index --force`` replaces anything else)."""
    from ..fileio import check_outputs
    if not isinstance(path, str) or not path or "\x00" in path:
        raise MiniRagError("[index] path must be a file path, got %r" % (path,))
    if os.path.isdir(corpus_path):
        inputs = [("corpus file", os.path.join(corpus_path, rel)) for rel, _ in files or ()]
    else:
        inputs = [("corpus", corpus_path)]
    check_outputs([("index", path, "index")], inputs, force)


def build_or_load(config: Dict[str, Any], corpus_path: Optional[str] = None, force: bool = False,
                  log=None, progress=None) -> Index:
    """The index for ``config`` (and ``corpus_path``, default ``[corpus] path``).

    Loads ``[index] path`` when its manifest matches the corpus files and the settings;
    otherwise rebuilds it (reusing unchanged documents' term counts), tells ``log``
    (default stderr) why, and saves it.  ``force`` rebuilds from scratch.
    """
    log = log if log is not None else sys.stderr
    corpus_path = corpus_path or config["corpus"]["path"]
    path = config["index"]["path"]
    files = corpus_files(corpus_path)
    check_index_path(path, corpus_path, files, force)
    expected = _expected(config, corpus_path, files, analyzer_from_config(config))
    old: Optional[Index] = None
    if os.path.exists(path) and not force and os.path.getsize(path) > 0:
        # a damaged index is refused (exit 2), never used and never silently replaced:
        # 'index --force' rebuilds it (issue 33)
        retired = _retired_version(path)
        manifest = {} if retired else _damaged_hint(read_manifest, path)
        reasons = (["it has format version %d, this version writes %d" % (retired, FORMAT_VERSION)]
                   if retired else stale_reasons(manifest, expected))
        if (not retired and manifest.get("format_version") in (3, 4, FORMAT_VERSION)
                and manifest.get("blocks") != {"postings": BLOCK, "chunks": CHUNK_BLOCK}):
            reasons.append("its block sizes %r differ from this version's" % (manifest.get("blocks"),))
            retired = FORMAT_VERSION          # not read: rebuilt from the corpus
        if not reasons:
            index = _damaged_hint(load_index, path)
            if manifest.get("format_version") != FORMAT_VERSION:
                print("mini_rag: index %s has format version %s; saving it as version %d"
                      % (path, manifest.get("format_version"), FORMAT_VERSION), file=log)
                save_index(index, path)
            return index
        print("mini_rag: index %s is stale: %s; rebuilding" % (path, "; ".join(reasons)), file=log)
        try:
            old = None if retired else load_index(path)
        except MiniRagError:
            old = None
    index = build_from_config(config, corpus_path, reuse=old, progress=progress)
    save_index(index, path)
    return index


__all__ = ["Index", "build_index", "build_or_load", "build_from_config", "load_index",
           "save_index", "read_manifest", "stale_reasons", "indexed_text", "bm25_idf", "tfidf_idf"]

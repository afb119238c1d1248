"""Compressed postings and chunk records of index format 3: encoded once when the index is
built, written by ``save_index`` as they are, decoded a term (or a block) at a time.

Postings
--------
A term's postings (chunk positions ascending, term frequencies) are cut into blocks of
``BLOCK`` postings (the last block of a term may be shorter), as Lucene and PISA do.  In a
block, positions are stored as gaps (delta coding: the first gap of a term is its first
position, every other gap is the distance to the previous position, so >= 1) and term
frequencies as they are, each as a little-endian array of the narrowest of 1, 2 or 4
bytes holding the block's largest value (byte-aligned frame of reference: the gaps of a
common term fit in one byte, a rare term's in two or four).  Decoding is C-level array
casts and one ``itertools.accumulate`` per term: no Python code per posting.

Per block, in arrays indexed by block number: ``block_last`` (its last position: the
skip list a lookup bisects), ``block_start`` (byte offset in the postings data; one more
entry than blocks), ``block_format`` (``3 * gap width code + tf width code``, codes 0, 1,
2 for 1, 2, 4 bytes) and ``block_max`` (its largest BM25 weight: MaxScore's block upper
bound).  Per term: ``df`` and ``term_blocks`` (its first block; one more entry than
terms).  Every decoded block is checked (length, ascending positions ending at its
``block_last``, positions below the number of chunks, tf >= 1), so a damaged file is an
error naming it, never a wrong ranking.

Chunk records
-------------
The chunks' JSON lines, ``CHUNK_BLOCK`` chunks a block, each block compressed with zlib
(level 1, as Lucene's stored fields compress blocks): chunk ``i`` is line ``i %
CHUNK_BLOCK`` of block ``i // CHUNK_BLOCK``.
"""
from __future__ import annotations

import array
import json
import operator
import sys
import zlib
from bisect import bisect_left
from itertools import accumulate, chain, islice, repeat
from operator import add, mul
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..errors import MiniRagError

BLOCK = 128
CHUNK_BLOCK = 16
CHUNK_LEVEL = 1
_CODES = ("B", "H", "I")
_WIDTHS = (1, 2, 4)
#: ``bytes.translate`` tables from a block format (0..8) to its gap / tf width in bytes and
#: array typecode (formats above 8 are refused before these are read).
_GAP_WIDTH = bytes(_WIDTHS[min(f, 8) // 3] for f in range(256))
_TF_WIDTH = bytes(_WIDTHS[min(f, 8) % 3] for f in range(256))
_GAP_CODE = bytes(ord(_CODES[min(f, 8) // 3]) for f in range(256))
_TF_CODE = bytes(ord(_CODES[min(f, 8) % 3]) for f in range(256))
_LITTLE = sys.byteorder == "little"
_sub = operator.sub
_tolist = memoryview.tolist


def _width_code(top: int) -> int:
    return 0 if top < 0x100 else (1 if top < 0x10000 else 2)


def _le(code: str, values) -> bytes:
    arr = array.array(code, values)
    if not _LITTLE:                                     # pragma: no cover - big-endian hosts
        arr.byteswap()
    return arr.tobytes()


def _view(raw, code: str):
    """A little-endian byte slice as a sequence of unsigned ints."""
    if _LITTLE:
        return memoryview(raw).cast(code)
    arr = array.array(code, bytes(raw))                 # pragma: no cover - big-endian hosts
    arr.byteswap()
    return arr


class PostingsWriter:
    """Encodes terms in vocabulary order into the arrays and data described above."""

    def __init__(self) -> None:
        self.df = array.array("I")
        self.term_blocks = array.array("Q", [0])
        self.block_last = array.array("I")
        self.block_start = array.array("Q", [0])
        self.block_format = array.array("B")
        self.block_max = array.array("d")
        self.term_max = array.array("d")
        self._parts: List[bytes] = []
        self._size = 0

    def add(self, positions: Sequence[int], tfs: Sequence[int], weights: Sequence[float]) -> None:
        n = len(positions)
        gaps = list(map(_sub, positions, chain((0,), positions)))
        parts, starts = self._parts, self.block_start
        size = self._size
        for a in range(0, n, BLOCK):
            b = min(n, a + BLOCK)
            g, t = gaps[a:b], tfs[a:b]
            gc, tc = _width_code(max(g)), _width_code(max(t))
            blob = _le(_CODES[gc], g) + _le(_CODES[tc], t)
            parts.append(blob)
            size += len(blob)
            starts.append(size)
            self.block_last.append(positions[b - 1])
            self.block_format.append(3 * gc + tc)
            self.block_max.append(max(weights[a:b]))
        self._size = size
        self.df.append(n)
        self.term_blocks.append(len(self.block_last))
        self.term_max.append(max(weights))

    def data(self) -> bytes:
        out = b"".join(self._parts)
        self._parts = [out]
        return out


def encode_chunk_blocks(lines: Sequence[bytes]) -> Tuple[bytes, "array.array"]:
    """The chunk lines (each ending in ``\\n``) in zlib blocks; returns the data and the
    block offsets (one more than blocks)."""
    offsets = array.array("Q", [0])
    parts = []
    size = 0
    for a in range(0, len(lines), CHUNK_BLOCK):
        blob = zlib.compress(b"".join(lines[a:a + CHUNK_BLOCK]), CHUNK_LEVEL)
        parts.append(blob)
        size += len(blob)
        offsets.append(size)
    return b"".join(parts), offsets


class Postings:
    """Reads the arrays and data of :class:`PostingsWriter` (in memory or sections of an
    open file): whole terms, single blocks, and the weights of either."""

    def __init__(self, path: str, num_chunks: int, df, term_blocks, block_last, block_start,
                 block_format, block_max, data) -> None:
        self.path = path
        self.num_chunks = num_chunks
        self.df, self.term_blocks = df, term_blocks
        self.block_last, self.block_start = block_last, block_start
        self.block_format, self.block_max = block_format, block_max
        self.data = data

    def _bad(self, what: str) -> MiniRagError:
        return MiniRagError("%s: not a valid index (%s); rebuild it with 'python -m mini_rag index --force'"
                            % (self.path, what))

    def _split(self, raw, off: int, j: int, n: int):
        """Gap and tf views of block ``j`` (``n`` postings) at ``raw[off:]``; checked."""
        f = self.block_format[j]
        if f > 8:
            raise self._bad("block %d has an unknown format %d" % (j, f))
        gw, tw = _WIDTHS[f // 3], _WIDTHS[f % 3]
        size = self.block_start[j + 1] - self.block_start[j]
        if size != n * (gw + tw):
            raise self._bad("block %d holds %d bytes, not %d" % (j, size, n * (gw + tw)))
        gaps = _view(raw[off:off + n * gw], _CODES[f // 3])
        tfs = _view(raw[off + n * gw:off + size], _CODES[f % 3])
        return gaps, tfs

    def _count(self, i: int, j: int) -> int:
        """Postings in block ``j`` of term ``i``."""
        b0 = self.term_blocks[i]
        return min(BLOCK, self.df[i] - (j - b0) * BLOCK)

    def decode(self, i: int) -> Tuple[List[int], List[int]]:
        """Term ``i``'s positions and term frequencies, as lists.

        All of a term's blocks at once, in C-level calls (no Python code per block or per
        posting): each block's gap and tf slices are cut by ``map(slice, ...)`` over the
        block starts and widths, cast by ``memoryview.cast`` to their width and chained;
        the checks of :meth:`block` are made on the whole term (block sizes, ascending
        positions, tf >= 1, every block ending at its ``block_last``, positions below the
        number of chunks)."""
        b0, b1 = self.term_blocks[i], self.term_blocks[i + 1]
        df = self.df[i]
        nb = b1 - b0
        if nb != -(-df // BLOCK) or not df:
            raise self._bad("term %d has %d blocks for %d postings" % (i, nb, df))
        starts = self.block_start[b0:b1 + 1]
        if not isinstance(starts, list):
            starts = starts.tolist()
        base = starts[0]
        raw = self.data[base:starts[-1]]
        if not isinstance(raw, memoryview):
            raw = memoryview(raw)
        fmts = bytes(self.block_format[b0:b1])
        if max(fmts) > 8:
            j = b0 + next(x for x, f in enumerate(fmts) if f > 8)
            raise self._bad("block %d has an unknown format %d" % (j, self.block_format[j]))
        gws, tws = fmts.translate(_GAP_WIDTH), fmts.translate(_TF_WIDTH)
        ns = [BLOCK] * nb
        ns[-1] = df - (nb - 1) * BLOCK
        rel = list(map(_sub, starts, repeat(base, nb + 1)))
        gend = list(map(add, rel, map(mul, ns, gws)))
        sizes = list(map(_sub, islice(rel, 1, None), rel))
        if sizes != list(map(mul, ns, map(add, gws, tws))):
            j = b0 + next(x for x in range(nb) if sizes[x] != ns[x] * (gws[x] + tws[x]))
            f = fmts[j - b0]
            n = ns[j - b0]
            raise self._bad("block %d holds %d bytes, not %d" % (j, sizes[j - b0], n * (_WIDTHS[f // 3] + _WIDTHS[f % 3])))
        if _LITTLE:
            cut = raw.__getitem__
            gap_parts = list(map(cut, map(slice, rel, gend)))
            tf_parts = list(map(cut, map(slice, gend, islice(rel, 1, None))))
            # 1-byte values (the common terms' blocks): joined bytes, checked by memchr
            if gws.count(1) == nb:
                gaps = b"".join(gap_parts)
                bad_gap = gaps.find(0, 1)
            else:
                gaps = list(chain.from_iterable(map(_tolist, map(memoryview.cast, gap_parts,
                                                                 fmts.translate(_GAP_CODE).decode("ascii")))))
                bad_gap = gaps.index(0, 1) if 0 in islice(gaps, 1, None) else -1
            if tws.count(1) == nb:
                tf_bytes = b"".join(tf_parts)
                bad_tf = tf_bytes.find(0)
                tfs = list(tf_bytes)
            else:
                tfs = list(chain.from_iterable(map(_tolist, map(memoryview.cast, tf_parts,
                                                                fmts.translate(_TF_CODE).decode("ascii")))))
                bad_tf = tfs.index(0) if 0 in tfs else -1
        else:                                           # pragma: no cover - big-endian hosts
            gaps, tfs = [], []
            for x in range(nb):
                f = fmts[x]
                gaps.extend(_view(raw[rel[x]:gend[x]], _CODES[f // 3]))
                tfs.extend(_view(raw[gend[x]:rel[x + 1]], _CODES[f % 3]))
            bad_gap = gaps.index(0, 1) if 0 in islice(gaps, 1, None) else -1
            bad_tf = tfs.index(0) if 0 in tfs else -1
        if bad_gap >= 0 or bad_tf >= 0:
            at = min(x for x in (bad_gap, bad_tf) if x >= 0)
            raise self._bad("block %d: positions must ascend and tf be >= 1" % (b0 + at // BLOCK))
        positions = list(accumulate(gaps))
        # every block ends at its block_last (so positions ascend across blocks too)
        ends = positions[BLOCK - 1::BLOCK]
        if len(ends) < nb:
            ends.append(positions[-1])
        if ends != self.block_last[b0:b1].tolist() or positions[-1] >= self.num_chunks:
            raise self._bad("term %d: postings disagree with their block ends" % i)
        return positions, tfs

    def block(self, i: int, j: int) -> Tuple[List[int], List[int]]:
        """Block ``j`` of term ``i``: its positions and term frequencies."""
        b0 = self.term_blocks[i]
        n = self._count(i, j)
        start = self.block_start[j]
        raw = self.data[start:self.block_start[j + 1]]
        g, t = self._split(raw, 0, j, n)
        if (j > b0 and not g[0]) or 0 in g[1:] or 0 in t:
            raise self._bad("block %d: positions must ascend and tf be >= 1" % j)
        base = self.block_last[j - 1] if j > b0 else 0
        positions = list(accumulate(g, initial=base))
        del positions[0]
        if positions[-1] != self.block_last[j] or positions[-1] >= self.num_chunks:
            raise self._bad("block %d: postings disagree with its block end" % j)
        return positions, list(t)

    def find_blocks(self, i: int, cands: Sequence[int]) -> Dict[int, List[int]]:
        """``{block: [candidates it may hold]}`` for ascending ``cands`` (those past the
        term's last position are dropped)."""
        b0, b1 = self.term_blocks[i], self.term_blocks[i + 1]
        last = self.block_last
        out: Dict[int, List[int]] = {}
        j = b0
        for p in cands:
            if last[j] < p:
                j = bisect_left(last, p, j, b1)
                if j == b1:
                    break
            lst = out.get(j)
            if lst is None:
                out[j] = [p]
            else:
                lst.append(p)
        return out


class ChunkBlocks:
    """Chunk records stored in zlib blocks: ``line(i)`` is chunk ``i``'s JSON bytes (the
    last few blocks decompressed are kept)."""

    CACHE = 16

    def __init__(self, path: str, n: int, offsets, data, limit: int) -> None:
        self.path, self.n, self.offsets, self.data, self.limit = path, n, offsets, data, limit
        self._cache: Dict[int, List[bytes]] = {}

    def lines(self, b: int) -> List[bytes]:
        got = self._cache.get(b)
        if got is None:
            raw = bytes(self.data[self.offsets[b]:self.offsets[b + 1]])
            try:
                d = zlib.decompressobj()
                text = d.decompress(raw, self.limit)
                if d.unconsumed_tail or not d.eof:
                    raise zlib.error("block larger than %d bytes or truncated" % self.limit)
            except zlib.error as exc:
                raise MiniRagError("%s: not a valid index (chunk block %d: %s); rebuild it with "
                                   "'python -m mini_rag index --force'" % (self.path, b, exc)) from None
            got = text.split(b"\n")
            want = min(CHUNK_BLOCK, self.n - b * CHUNK_BLOCK)
            if len(got) != want + 1 or got[-1]:
                raise MiniRagError("%s: not a valid index (chunk block %d holds %d records, not %d); rebuild it "
                                   "with 'python -m mini_rag index --force'" % (self.path, b, len(got) - 1, want))
            if len(self._cache) >= self.CACHE:
                self._cache.clear()
            self._cache[b] = got
        return got

    def line(self, i: int) -> bytes:
        return self.lines(i // CHUNK_BLOCK)[i % CHUNK_BLOCK]


__all__ = ["BLOCK", "CHUNK_BLOCK", "PostingsWriter", "Postings", "ChunkBlocks", "encode_chunk_blocks"]

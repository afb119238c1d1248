"""The dense index: one unit vector per chunk, stored beside the BM25 index.

File (``[embed] index_path``; default: the BM25 index's path with ``.json.gz`` / ``.json``
replaced by ``.dense``): line 1 is a compact JSON manifest, then ``rows * dim`` float32
little-endian numbers (row-major), nothing else.  The manifest::

    {"format": "mini_rag-dense", "format_version": 2, "model_sha256": ..., "max_seq_length": 256,
     "dim": 384, "dtype": "<f4", "text": ..., "keys": [sha256 of each row's text, ...],
     "rows": N, "body_sha256": sha256 of the binary part}

A row is the encoding of a chunk's indexed text (``index.indexed_text``: title, heading,
text); ``keys`` are the sha256 of those texts, so chunks with equal text share a row and a
chunk's row is found by its content, whatever its position.  Headings standing alone are
not encoded (as in BM25, they are never retrieved).

``build_or_load`` reads the file when the model's sha256 and ``max_seq_length`` match and
reuses every row whose key is still wanted: only new or changed chunks are encoded
(progress with rate and ETA on stderr); the file is rewritten atomically when anything
changed, and every 2 minutes during a long encode (a checkpoint: an interrupted build
resumes from the rows already saved).  A file that is not a dense index, has another format version, a wrong size or
a body that does not match its hash is reported and rebuilt, never used.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from typing import Any, Dict, List, Optional

from ..errors import MiniRagError
from ..fileio import atomic_write_bytes
from ..indexing.index import Index, indexed_text

FORMAT = "mini_rag-dense"
#: 2: every row is a function of its text alone (``Encoder.encode``, issue 32); a version 1
#: file's rows depended, by ~1e-7, on which texts shared their batch, so it is rebuilt.
FORMAT_VERSION = 2
CHECKPOINT_TEXTS = 64
CHECKPOINT_SECONDS = 120.0
TEXT_RULE = "index.indexed_text: title + heading (when not the chunk itself and not the title) + text"


def dense_path(config: Dict[str, Any]) -> str:
    """Where the dense index of ``config`` lives."""
    explicit = (config.get("embed") or {}).get("index_path") or ""
    if explicit:
        return explicit
    base = config["index"]["path"]
    for ext in (".json.gz", ".json", ".gz"):
        if base.endswith(ext):
            base = base[:-len(ext)]
            break
    return base + ".dense"


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class DenseIndex:
    """Unit vectors of an index's chunks: ``matrix`` (rows, dim) and ``row_of[position]``
    (-1 for a chunk that is not encoded)."""

    def __init__(self, matrix, keys: List[str], row_of: List[int], manifest: Dict[str, Any]) -> None:
        self.matrix = matrix
        self.keys = keys
        self.row_of = row_of
        self.manifest = manifest
        self.encoded = 0          # rows encoded by the last build (0: all reused or loaded)


class EncodeProgress:
    """``encoding chunks: done/total (pct), rate/s, ETA``, on stderr: redrawn in place on a
    terminal (at most every 0.2 s, after 1 s), one line every 30 s otherwise."""

    def __init__(self, total: int, label: str = "encoding chunks", stream=None) -> None:
        self.total, self.label = total, label
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        self.tty = bool(isatty and isatty())
        self.start = time.monotonic()
        self.last = self.start
        self.shown = False

    def line(self, done: int, now: float) -> str:
        elapsed = max(now - self.start, 1e-9)
        rate = done / elapsed
        eta = (self.total - done) / rate if rate > 0 else 0.0
        return "%s: %d/%d (%.0f%%), %.1f/s, elapsed %s, ETA %s" % (
            self.label, done, self.total, 100.0 * done / max(self.total, 1), rate,
            _clock(elapsed), _clock(eta))

    def __call__(self, done: int) -> None:
        now = time.monotonic()
        if self.tty:
            if now - self.start >= 1.0 and now - self.last >= 0.2:
                self.stream.write("\r" + self.line(done, now) + "\x1b[K")
                self.stream.flush()
                self.last, self.shown = now, True
        elif now - self.last >= 30.0:
            self.stream.write(self.line(done, now) + "\n")
            self.stream.flush()
            self.last = now

    def close(self, done: int) -> None:
        if self.shown:
            self.stream.write("\r" + self.line(done, time.monotonic()) + "\x1b[K\n")
            self.stream.flush()


def _clock(seconds: float) -> str:
    s = int(round(seconds))
    return "%d:%02d:%02d" % (s // 3600, s // 60 % 60, s % 60) if s >= 3600 else "%d:%02d" % (s // 60, s % 60)


def _expected(encoder) -> Dict[str, Any]:
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "model_sha256": encoder.sha256,
            "max_seq_length": encoder.max_seq_length, "dim": encoder.dim, "dtype": "<f4",
            "text": TEXT_RULE}


def read_dense(path: str):
    """``(manifest, matrix)`` of a dense index file (MiniRagError when it is not one)."""
    import numpy as np
    try:
        with open(path, "rb") as fh:
            first = fh.readline()
            body = fh.read()
    except OSError as exc:
        raise MiniRagError("%s: cannot read dense index: %s" % (path, exc.strerror)) from None
    try:
        manifest = json.loads(first.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise MiniRagError("%s:1: not a dense index (no JSON manifest)" % path) from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise MiniRagError("%s:1: not a mini_rag dense index" % path)
    if manifest.get("format_version") != FORMAT_VERSION:
        raise MiniRagError("%s:1: dense index format version must be %d, got %r"
                           % (path, FORMAT_VERSION, manifest.get("format_version")))
    rows, dim, keys = manifest.get("rows"), manifest.get("dim"), manifest.get("keys")
    if (not isinstance(rows, int) or not isinstance(dim, int) or rows < 0 or dim < 1
            or not isinstance(keys, list) or len(keys) != rows or manifest.get("dtype") != "<f4"):
        raise MiniRagError("%s:1: dense index manifest has bad rows, dim, keys or dtype" % path)
    if len(body) != rows * dim * 4:
        raise MiniRagError("%s: dense index body has %d bytes, expected %d x %d x 4 = %d"
                           % (path, len(body), rows, dim, rows * dim * 4))
    if hashlib.sha256(body).hexdigest() != manifest.get("body_sha256"):
        raise MiniRagError("%s: dense index body does not match its body_sha256 (truncated or edited)" % path)
    matrix = np.frombuffer(body, dtype="<f4").reshape(rows, dim) if rows else np.zeros((0, dim), "<f4")
    return manifest, matrix


def dense_bytes(manifest: Dict[str, Any], matrix) -> bytes:
    body = matrix.astype("<f4").tobytes()
    manifest = dict(manifest, rows=int(matrix.shape[0]), body_sha256=hashlib.sha256(body).hexdigest())
    return json.dumps(manifest, separators=(",", ":")).encode("utf-8") + b"\n" + body


def build_or_load(index: Index, encoder, path: str, log=None, progress: bool = True) -> DenseIndex:
    """The dense index of ``index``'s chunks at ``path``, encoding only what is missing."""
    import numpy as np
    log = log if log is not None else sys.stderr
    expected = _expected(encoder)
    texts: Dict[str, str] = {}
    chunk_keys: List[Optional[str]] = []
    for c in index.chunks:
        if c.is_heading:
            chunk_keys.append(None)
            continue
        text = indexed_text(c)
        key = text_key(text)
        texts.setdefault(key, text)
        chunk_keys.append(key)
    wanted = list(texts)                      # first-appearance order, a fixed order
    old: Dict[str, Any] = {}
    old_keys: List[str] = []
    if os.path.exists(path):
        try:
            manifest, matrix = read_dense(path)
        except MiniRagError as exc:
            print("mini_rag: dense index %s is unusable, rebuilding: %s" % (path, exc), file=log)
        else:
            same = {k: v for k, v in expected.items() if manifest.get(k) != v}
            if same:
                print("mini_rag: dense index %s was built with other settings (%s); re-encoding"
                      % (path, ", ".join(sorted(same))), file=log)
            else:
                old_keys = manifest["keys"]
                old = {k: i for i, k in enumerate(old_keys)}
                old_matrix = matrix
    todo = [k for k in wanted if k not in old]
    matrix = np.zeros((len(wanted), encoder.dim), dtype=np.float32)
    for i, k in enumerate(wanted):
        j = old.get(k)
        if j is not None:
            matrix[i] = old_matrix[j]
    if todo:
        if old:
            print("mini_rag: dense index %s: encoding %d new or changed chunks (%d reused)"
                  % (path, len(todo), len(wanted) - len(todo)), file=log)
        bar = EncodeProgress(len(todo), stream=log) if progress else None
        pos = {k: i for i, k in enumerate(wanted)}
        have = [k for k in wanted if k in old]
        saved = time.monotonic()
        # Slices of CHECKPOINT_TEXTS; every CHECKPOINT_SECONDS the rows so far are saved,
        # so an interrupted encode of a large corpus resumes where it stopped.
        for start in range(0, len(todo), CHECKPOINT_TEXTS):
            part = todo[start:start + CHECKPOINT_TEXTS]
            vecs = encoder.encode([texts[k] for k in part],
                                  progress=(lambda n, s=start: bar(s + n)) if bar is not None else None)
            for k, v in zip(part, vecs):
                matrix[pos[k]] = v
            have.extend(part)
            if start + len(part) < len(todo) and time.monotonic() - saved >= CHECKPOINT_SECONDS:
                rows = [pos[k] for k in have]
                atomic_write_bytes(path, dense_bytes(dict(expected, keys=list(have)), matrix[rows]))
                saved = time.monotonic()
        if bar is not None:
            bar.close(len(todo))
    manifest = dict(expected, keys=wanted)
    if todo or old_keys != wanted:
        atomic_write_bytes(path, dense_bytes(manifest, matrix))
    row = {k: i for i, k in enumerate(wanted)}
    dense = DenseIndex(matrix, wanted, [row[k] if k is not None else -1 for k in chunk_keys], manifest)
    dense.encoded = len(todo)
    return dense


__all__ = ["DenseIndex", "build_or_load", "read_dense", "dense_bytes", "dense_path", "text_key",
           "EncodeProgress", "FORMAT", "FORMAT_VERSION"]

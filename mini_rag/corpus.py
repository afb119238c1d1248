"""Stage 1: read a corpus and cut it into chunks, the units that answers cite.

Two corpus forms are read:

* a folder of ``.md`` / ``.txt`` files (searched recursively, hidden folders skipped), each
  with optional front matter between two ``---`` lines at the top::

      ---
      doc_id: refund-policy-v3
      title: Refund Policy
      authority: SOPS
      effective: 2026-03-01
      owner: billing            # any other key is kept in ``metadata``
      ---

  ``doc_id`` defaults to the file name without its extension; ``title`` to the first
  Markdown ``# heading``, else the doc_id; ``effective`` must be an ISO date.
* a JSONL file in BEIR form: one ``{"_id", "title", "text", "metadata"}`` object a line.
  A row without a title has none (its ``_id`` is an identifier, not words to index).
  ``metadata.authority`` and ``metadata.effective`` are lifted like front-matter keys.

The chunking rule (users write gold citations against it, so it is exact):

1. The body is the text after the front matter.  A UTF-8 byte-order mark is dropped and
   CRLF / CR line ends become LF.
2. A form feed (``\\f``, how ``pdftotext`` marks pages) starts a new page; pages are
   numbered from 1.  A document without form feeds is all page 1.
3. Within a page, runs of blank lines (lines of only white space) separate paragraphs; a
   page boundary also ends a paragraph.  No chunk is empty.
4. Paragraph N of the document (0-based, counted across pages) has the id
   ``<doc_id>#p<N>``.  A heading that stands alone between blank lines is a paragraph of
   its own, so it has its own id.
5. The chunk text is the paragraph's lines, each stripped of surrounding white space; a
   line that starts a list item (``-``, ``*``, ``+``, ``1.``, ``1)``) or a table row
   (``|``), or that follows a Markdown heading line, keeps its line break; every other
   line is joined to the one before it with one space (so a sentence wrapped across
   lines reads as one line).
6. Headings: in any file, a one-line paragraph ``#``...``######`` followed by text is a
   Markdown heading (its text is the heading, without the ``#`` marks).  In a ``.txt``
   file a one-line paragraph of at most 80 characters that does not end with
   ``. ? ! ; : ,`` is also a heading when it is numbered (``3.``, ``3.1``, ``Section 4``),
   in capitals (``RETENTION SCHEDULE``), or in title case (every word longer than three
   letters capitalized).  A paragraph whose first line is a Markdown heading stays one
   chunk, and that heading counts as the nearest.  Every chunk records the nearest
   heading at or before it.
7. Optional (off by default): with ``max_chunk_chars > 0`` a paragraph longer than that
   is cut at sentence ends into pieces of at most that length (a single longer sentence
   stays whole); the pieces of paragraph N are ``<doc_id>#p<N>.<M>``, M from 0.
   A paragraph that fits keeps its plain ``#p<N>`` id.  Always: a paragraph longer than
   ``MAX_PARAGRAPH_CHARS`` (20,000; a page of text is about 3,000) is cut so, and a piece
   still longer (one endless sentence, a file on one line) at its last white space
   before the limit, else at the limit: answering reads every sentence of a chunk, so
   a chunk's size bounds the work of a question.

Documents are returned sorted by doc_id; a doc_id may not contain ``#`` or white space
and must be unique across the corpus.
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import re
import stat
import sys
from typing import Iterator, List, Tuple

from .errors import MiniRagError
from .fileio import MAX_LINE_BYTES, iter_lines, json_error, json_row
from .records import Chunk, Document

TEXT_SUFFIXES = (".md", ".txt")
#: A document's ``policy:`` (front matter or BEIR metadata): how answers may use its text
#: (seed 004's source policies; the scorer checks them).  Kept in ``metadata``, so every
#: chunk and hit carries it, and the trace's ``cited_chunks`` passes it on.
SOURCE_POLICIES = ("summarize", "quote_only", "no_use")
KNOWN_KEYS = ("doc_id", "title", "authority", "effective")

_FRONT_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)\s*:\s*(.*)$")
_ATX = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
_STRUCTURED = re.compile(r"^(?:[-*+]\s|\d+[.)]\s|\|)")
_NUMBERED_HEADING = re.compile(r"^(?:\d+(?:\.\d+)*\.?|[A-Z]\.|(?:section|article|part|chapter)\s+\w+)\s+\S",
                               re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9])")
_BAD_ID = re.compile(r"[#\s]")


# ---------------------------------------------------------------- reading

def _decode(data: bytes, path: str) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise MiniRagError("%s:%d: not UTF-8 text, got byte 0x%02x"
                           % (path, line, data[exc.start])) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _check_date(value: str, where: str, key: str) -> str:
    try:
        datetime.date.fromisoformat(value)
    except ValueError:
        raise MiniRagError("%s: %s must be an ISO date YYYY-MM-DD, got %r" % (where, key, value)) from None
    return value


def _check_id(doc_id: str, where: str) -> str:
    if not doc_id or _BAD_ID.search(doc_id):
        raise MiniRagError("%s: doc_id must be non-empty without '#' or white space, got %r"
                           % (where, doc_id))
    return doc_id


def _check_policy(meta: dict, where: str) -> None:
    policy = meta.get("policy")
    if policy is not None and policy not in SOURCE_POLICIES:
        raise MiniRagError("%s: policy must be one of %s, got %r" % (where, ", ".join(SOURCE_POLICIES), policy))


def _unquote(v: str) -> str:
    v = v.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
        return v[1:-1]
    return v


def parse_text_document(text: str, path: str, default_id: str, content_hash: str = "") -> Document:
    """Parse one ``.md``/``.txt`` file's text (already decoded) into a Document."""
    lines = text.split("\n")
    meta = {}
    body_start = 0
    if lines and lines[0].strip() == "---":
        end = None
        for i in range(1, len(lines)):
            if lines[i].strip() == "---":
                end = i
                break
        if end is None:
            raise MiniRagError("%s:1: front matter opened with '---' is never closed" % path)
        for i in range(1, end):
            raw = lines[i].strip()
            if not raw or raw.startswith("#"):
                continue
            m = _FRONT_KEY.match(raw)
            if not m:
                raise MiniRagError("%s:%d: front matter line must be 'key: value', got %r"
                                   % (path, i + 1, raw))
            key = m.group(1).lower()
            if key in meta:
                raise MiniRagError("%s:%d: front matter key %r given twice" % (path, i + 1, key))
            meta[key] = _unquote(m.group(2))
        body_start = end + 1
    where = "%s:1" % path
    _check_policy(meta, where)
    doc_id = _check_id(meta.pop("doc_id", "") or default_id, where)
    effective = meta.pop("effective", "")
    if effective:
        _check_date(effective, where, "effective")
    body = "\n".join(lines[body_start:])
    title = meta.pop("title", "")
    if not title:
        for line in lines[body_start:]:
            m = _ATX.match(line.strip())
            if m:
                title = m.group(1)
                break
    return Document(doc_id=doc_id, title=title or doc_id, path=path,
                    pages=body.split("\f"), body_line=body_start + 1,
                    authority=meta.pop("authority", ""), effective=effective,
                    metadata=meta, content_hash=content_hash)


def _iter_text_files(root: str) -> Iterator[str]:
    """The corpus folder's ``.md``/``.txt`` files that are safe to read, sorted per folder.

    Only regular files are read.  A symlink is followed only when it ends at a regular
    file inside the folder; a symlink that leaves the folder, dangles or loops, a FIFO,
    a device or a socket is skipped with a warning naming it (reading a FIFO would hang,
    a device never ends, a link out of the folder would index what nobody chose).
    Symlinked folders are never entered (os.walk does not follow them), so no loop."""
    real_root = os.path.realpath(root)
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            if not d.startswith(".") and os.path.islink(os.path.join(dirpath, d)):
                _skip(os.path.join(dirpath, d), "a symlinked folder (not followed)")
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".")
                             and not os.path.islink(os.path.join(dirpath, d)))
        for name in sorted(filenames):
            if name.lower().endswith(TEXT_SUFFIXES) and not name.startswith("."):
                path = os.path.join(dirpath, name)
                why = _unsafe(path, real_root)
                if why:
                    _skip(path, why)
                else:
                    yield path


def _unsafe(path: str, real_root: str) -> str:
    """Why ``path`` must not be read ('' when it is a regular file we may read)."""
    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            target = os.path.realpath(path)
            if os.path.commonpath([real_root, target]) != real_root:
                return "a symlink pointing outside the corpus folder (to %s)" % target
            st = os.stat(path)
    except (OSError, ValueError) as exc:
        return "a dangling or looping symlink (%s)" % (getattr(exc, "strerror", None) or exc)
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file (a FIFO, device or socket)"
    return ""


_WARNED: set = set()


def _skip(path: str, why: str) -> None:
    """One warning on stderr per skipped path and process."""
    if path not in _WARNED:
        _WARNED.add(path)
        print("mini_rag: warning: %s: skipped, %s" % (path, why), file=sys.stderr)


def corpus_files(path: str) -> List[Tuple[str, str]]:
    """``(relative path, sha256)`` of every file the corpus is read from, sorted.

    The index manifest stores this list, so a changed, added or removed file is noticed.
    """
    if os.path.isdir(path):
        files = list(_iter_text_files(path))
    elif os.path.isfile(path):
        files = [path]
    else:
        raise MiniRagError("%s: corpus not found (give a folder of .md/.txt files or a .jsonl file)"
                           % path)
    out = []
    for f in files:
        with open(f, "rb") as fh:
            digest = hashlib.sha256(fh.read()).hexdigest()
        rel = os.path.relpath(f, path) if os.path.isdir(path) else os.path.basename(f)
        out.append((rel.replace(os.sep, "/"), digest))
    return sorted(out)


def _read_bytes(path: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise MiniRagError("%s: cannot read corpus file: %s" % (path, exc.strerror)) from None


def _load_jsonl(path: str) -> List[Document]:
    docs = []
    for lineno, raw in iter_lines(path, "corpus file"):
        where = "%s:%d" % (path, lineno)
        if raw is None:
            raise MiniRagError("%s: line longer than %d bytes" % (where, MAX_LINE_BYTES))
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise MiniRagError("%s: not UTF-8 text, got byte 0x%02x" % (where, raw[exc.start])) from None
        if lineno == 1 and line.startswith("\ufeff"):
            line = line[1:]
        if not line.strip():
            continue
        try:
            row = json_row(line)
        except ValueError as exc:
            raise MiniRagError("%s: %s, got %r" % (where, json_error(exc), line[:60])) from None
        if not isinstance(row, dict):
            raise MiniRagError("%s: a corpus row must be a JSON object, got %r" % (where, line[:60]))
        doc_id = row.get("_id", row.get("doc_id"))
        if not isinstance(doc_id, (str, int)) or isinstance(doc_id, bool):
            raise MiniRagError("%s: '_id' must be a string, got %r" % (where, doc_id))
        body = row.get("text", "")
        title = row.get("title", "") or ""
        if not isinstance(body, str) or not isinstance(title, str):
            raise MiniRagError("%s: 'text' and 'title' must be strings, got %r" % (where, type(body).__name__))
        meta = row.get("metadata") or {}
        if not isinstance(meta, dict):
            raise MiniRagError("%s: 'metadata' must be an object, got %r" % (where, meta))
        meta = dict(meta)
        _check_policy(meta, where)
        authority = meta.pop("authority", "")
        effective = meta.pop("effective", "")
        if effective:
            _check_date(str(effective), where, "effective")
        docs.append(Document(doc_id=_check_id(str(doc_id), where), title=title,
                             path=where, pages=body.replace("\r\n", "\n").split("\f"),
                             authority=str(authority or ""), effective=str(effective or ""),
                             metadata=meta,
                             content_hash=hashlib.sha256(line.encode("utf-8")).hexdigest()))
    return docs


def load_corpus(path: str) -> List[Document]:
    """Read a folder of ``.md``/``.txt`` files or a BEIR ``.jsonl`` file; sorted by doc_id."""
    if os.path.isdir(path):
        docs = []
        for f in _iter_text_files(path):
            data = _read_bytes(f)
            stem = os.path.splitext(os.path.basename(f))[0]
            docs.append(parse_text_document(_decode(data, f), f, stem,
                                            hashlib.sha256(data).hexdigest()))
        if not docs:
            raise MiniRagError("%s: corpus folder has no .md or .txt files" % path)
    elif os.path.isfile(path):
        docs = _load_jsonl(path)
        if not docs:
            raise MiniRagError("%s: corpus file has no documents" % path)
    else:
        raise MiniRagError("%s: corpus not found (give a folder of .md/.txt files or a .jsonl file)"
                           % path)
    seen = {}
    for d in docs:
        if d.doc_id in seen:
            raise MiniRagError("%s: doc_id %r is already used by %s" % (d.path, d.doc_id, seen[d.doc_id]))
        seen[d.doc_id] = d.path
    docs.sort(key=lambda d: d.doc_id)
    return docs


# ---------------------------------------------------------------- chunking

def _join_lines(lines: List[str]) -> str:
    out = lines[0]
    for prev, line in zip(lines, lines[1:]):
        out += ("\n" if _STRUCTURED.match(line) or _ATX.match(prev) else " ") + line
    return out


def _heading_text(text: str, is_txt: bool) -> str:
    """The heading's text when a one-line paragraph is a heading (rule 6), else ''."""
    if "\n" in text:
        return ""
    m = _ATX.match(text)
    if m:
        return m.group(1)
    if not is_txt or len(text) > 80 or text[-1] in ".?!;:,":
        return ""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return ""
    if _NUMBERED_HEADING.match(text):    # before the list test: "1. Purpose" is numbered
        return text
    if _STRUCTURED.match(text):
        return ""
    if len(letters) >= 2 and all(c.isupper() for c in letters):
        return text
    words = [w for w in re.split(r"[\s/-]+", text) if len(w) > 3 and w[0].isalpha()]
    if words and all(w[0].isupper() for w in words):
        return text
    return ""


MAX_PARAGRAPH_CHARS = 20000


def _hard_cut(piece: str, limit: int) -> List[str]:
    """``piece`` cut into parts of at most ``limit`` characters, at white space if any."""
    out = []
    while len(piece) > limit:
        cut = piece.rfind(" ", 0, limit + 1)
        if cut <= 0:
            cut = limit
        out.append(piece[:cut].rstrip())
        piece = piece[cut:].lstrip()
    if piece:
        out.append(piece)
    return out


def split_sentences(text: str, max_chars: int) -> List[str]:
    """Greedy packing of a paragraph's sentences into pieces of at most ``max_chars``."""
    pieces, cur = [], ""
    for sent in _SENTENCE_END.split(text):
        if cur and len(cur) + 1 + len(sent) > max_chars:
            pieces.append(cur)
            cur = sent
        else:
            cur = sent if not cur else cur + " " + sent
    if cur:
        pieces.append(cur)
    return pieces


def chunk_document(doc: Document, max_chunk_chars: int = 0) -> List[Chunk]:
    """Cut one document into chunks by the rule in this module's docstring."""
    is_txt = doc.path.lower().endswith(".txt")
    chunks: List[Chunk] = []
    ordinal = 0
    heading = ""
    line_no = doc.body_line
    for page_no, page in enumerate(doc.pages, 1):
        para: List[str] = []
        start = 0

        def flush():
            nonlocal ordinal, heading
            text = _join_lines(para)
            head = _heading_text(text, is_txt)
            first = _ATX.match(para[0])
            if head or first:
                heading = head or first.group(1)
            pieces = [text]
            if max_chunk_chars > 0 and len(text) > max_chunk_chars and not head:
                pieces = split_sentences(text, max_chunk_chars)
            if len(text) > MAX_PARAGRAPH_CHARS:
                if len(pieces) == 1:
                    pieces = split_sentences(text, MAX_PARAGRAPH_CHARS)
                pieces = [part for p in pieces for part in _hard_cut(p, MAX_PARAGRAPH_CHARS)]
            for m, piece in enumerate(pieces):
                cid = "%s#p%d" % (doc.doc_id, ordinal)
                if len(pieces) > 1:
                    cid += ".%d" % m
                chunks.append(Chunk(chunk_id=cid, doc_id=doc.doc_id, ordinal=ordinal,
                                    page=page_no, text=piece, title=doc.title, heading=heading,
                                    is_heading=bool(head), authority=doc.authority,
                                    effective=doc.effective, line=start,
                                    metadata=doc.metadata))
            ordinal += 1

        lines = page.split("\n")
        for i, raw in enumerate(lines):
            line = raw.strip()
            if line:
                if not para:
                    start = line_no + i
                para.append(line)
            elif para:
                flush()
                para = []
        if para:
            flush()
        line_no += len(lines) - 1   # the form feed sits inside a line, not after one
    return chunks


def load_chunks(path: str, max_chunk_chars: int = 0) -> List[Chunk]:
    """All chunks of a corpus, documents in doc_id order, chunks in document order."""
    out: List[Chunk] = []
    for doc in load_corpus(path):
        out.extend(chunk_document(doc, max_chunk_chars))
    return out

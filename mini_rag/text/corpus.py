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
   lines reads as one line).  A table (text/markup.py: a Markdown pipe table with its
   ``|---|`` rule, a reST table) is one paragraph whose text is its rows read with their
   header, one line a row (``Vehicle: Bicycle; Mileage rate: £0.12``,
   ``markup.read_table``); its indexed words (``Chunk.indexed``) are the table as
   written, each header once.
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

Versions (issue 17, failure class 3).  A document's status and successor come from its
front matter (``status:``, ``superseded_by:``; BEIR ``metadata``) and, when a key is
absent there, from its text; front matter always wins.  The text read is the title
(front matter ``title`` or the first ``#`` heading), the doc_id, and the *head*: the
first ``VERSION_HEAD_LINES`` (15) non-blank lines of the body, at most
``VERSION_HEAD_CHARS`` (2,000) characters -- where a status banner is written, so that
prose further down ("this system was replaced by ...") is never read as the document's
status.  Each head line is stripped of Markdown marks (``#``, ``*``, ``_``, ``>``, ``|``,
``-``) and split into sentences.  The rules, exactly (case-insensitive):

* **status line**: a line ``Status: WORDS`` (also ``Document status``, ``Policy
  status``, ``**Status:**``, a dash instead of the colon), regex
  ``^(?:document |policy )?status[*_\\s]*[:\\u2013\\u2014-][*_\\s]*([a-z][a-z -]{0,40})``.
  The status is the first word of WORDS (``no longer in force`` reads ``withdrawn``,
  ``in force`` / ``in effect`` read ``current``, ``replaced`` reads ``superseded``); a
  word that is no status (:data:`STATUS_WORDS`: superseded, replaced, withdrawn, revoked,
  repealed, rescinded, retired, archived, obsolete, expired, deprecated, current, active,
  effective, approved, draft) is ignored.
* **self-declaration**: a sentence that starts with ``This`` or ``The present`` followed
  by one document noun (:data:`DOC_NOUNS`: policy, edition, version, document, standard,
  procedure, SOP, guide, ...) and then, within 60 characters and with no conditional
  or modal word (if, unless, upon, when, after, until, once, where, will, shall, may,
  might, would, could, should, can) before it, one of

  - ``superseded by X`` / ``replaced by X``: status ``superseded``, successor text X
    (up to the sentence end);
  - ``withdrawn``, ``revoked``, ``repealed``, ``rescinded``, ``retired``, ``archived``,
    ``obsolete``, ``no longer in force`` / ``in effect`` / ``valid`` / ``current`` /
    ``applicable``: that status (``no longer ...`` reads ``withdrawn``);
  - ``replaces X`` / ``supersedes X``: the document is the successor of X
    (``predecessor_text``; its own status is not changed).

  A line that *starts* with ``Superseded by X`` or ``Replaced by X`` counts too.
* **title**: a status word (superseded, withdrawn, obsolete, archived, retired, revoked,
  repealed, rescinded) inside parentheses or brackets of the title, as in
  ``SOP-QA-014 (version 3, superseded)``.
* **editions**: in the title, the doc_id and the head, ``v``/``version``/``edition``/
  ``revision``/``rev``/``release`` followed by a number (``v2.3``, ``Version 4``,
  ``Edition 2026.1``: read ``v2.3``, ``v4``, ``v2026.1``), regex
  ``\\b(?:v|version|edition|revision|rev|release)\\.?\\s?(\\d[\\d.]{0,10})``, and, in the
  title and doc_id only, years 1900-2099 (``2019``).

Successor and predecessor texts are resolved to doc ids across the corpus
(:func:`resolve_versions`): a text that contains another document's doc_id names it;
else the text's editions pick the one other document of the same *family* (doc_id or
title equal once editions, years, parentheses and the words legacy/old/new/current/
superseded are removed) that has one of those editions.  A resolved successor becomes
``metadata["superseded_by"]``; a resolved predecessor ``X`` of document D makes X
``superseded`` by D when X's front matter says nothing.  Nothing is guessed when the text
does not resolve: the status stays as read and the successor stays text only.

What was read and where is kept in ``metadata["versions_read"]`` (so every chunk and hit
carries it): ``{"status": [value, source], "superseded_by": [value, source],
"successor_text": [text, source], "predecessor_text": [text, source], "supersedes":
[doc_id, source], "editions": [...], "status_in_text": [value, source]}`` (``supersedes``
only once the predecessor text resolved; ``status_in_text`` only when a status line of the
text lost to the front matter) where a source is ``front_matter``, ``title``,
``body:LINE`` (1-based line of the file; for a JSONL row
the body line) or ``corpus:DOC`` (inferred from document DOC's declaration).  A document
whose only version facts are its front matter's, with no edition, has no ``versions_read``.
"""
from __future__ import annotations

import datetime
import functools
import hashlib
import json
import os
import re
import stat
import sys
from typing import Iterator, List, Tuple

from ..errors import MiniRagError
from ..fileio import MAX_LINE_BYTES, iter_lines, json_error, json_row
from ..records import Chunk, Document
from .markup import blocks, read_table

TEXT_SUFFIXES = (".md", ".rst", ".txt")
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
        last = None
        for i in range(1, end):
            raw = lines[i].strip()
            if not raw or raw.startswith("#"):
                continue
            if last is not None and (lines[i][:1].isspace() or raw.startswith("- ")):
                item = _unquote(raw[2:] if raw.startswith("- ") else raw)   # a YAML list item or folded line
                meta[last] = (meta[last] + (", " if raw.startswith("- ") and meta[last] else " ") + item).strip()
                continue
            m = _FRONT_KEY.match(raw)
            if not m:
                raise MiniRagError("%s:%d: front matter line must be 'key: value', got %r"
                                   % (path, i + 1, raw))
            key = m.group(1).lower()
            if key in meta:
                raise MiniRagError("%s:%d: front matter key %r given twice" % (path, i + 1, key))
            value = m.group(2).strip()
            meta[key] = "" if value in ("|", ">", "|-", ">-") else _unquote(value)
            last = key
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
        title = _first_heading(lines[body_start:], _syntax(path))
    read_versions(meta, title, doc_id, body, body_start + 1)
    return Document(doc_id=doc_id, title=title or doc_id, path=path,
                    pages=body.split("\f"), body_line=body_start + 1,
                    authority=meta.pop("authority", ""), effective=effective,
                    metadata=meta, content_hash=content_hash)


def _first_heading(lines: List[str], syntax: str) -> str:
    """The body's first heading: a Markdown ``#`` line outside fenced code, or (reST) the
    first underlined title; '' when none."""
    if syntax == "rst":
        for block in blocks(lines, "rst"):
            if block.kind == "heading":
                return block.lines[0]
        return ""
    fence = ""
    for line in lines:
        s = line.strip()
        if syntax == "md" and (s.startswith("```") or s.startswith("~~~")):
            mark = s[:3]
            fence = "" if fence == mark else (fence or mark)
            continue
        m = None if fence else _ATX.match(s)
        if m:
            return m.group(1)
    return ""


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
                why = _unsafe(path, real_root) or _unreadable(path, name)
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


#: Limits of a corpus folder (issue 33): a larger file is skipped with a warning, a larger
#: corpus is refused; a file with NUL bytes in its first 8 KiB is binary and skipped.
MAX_CORPUS_FILE_BYTES = 16 << 20
MAX_CORPUS_BYTES = 1 << 30
_BINARY_PROBE = 8192


def _unreadable(path: str, name: str) -> str:
    """Why a regular corpus file is skipped: a name that is not UTF-8, over the per-file
    limit, binary, or unreadable ('' when it is fine)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "its file name is not UTF-8 (a document id must be text)"
    try:
        size = os.stat(path).st_size
        if size > MAX_CORPUS_FILE_BYTES:
            return "larger than %d bytes (MAX_CORPUS_FILE_BYTES), got %d bytes" % (MAX_CORPUS_FILE_BYTES, size)
        with open(path, "rb") as fh:
            head = fh.read(_BINARY_PROBE)
    except OSError as exc:
        return "cannot be read (%s)" % (exc.strerror or exc)
    if b"\x00" in head:
        return "a binary file (NUL bytes), not text"
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
        raise MiniRagError("%s: corpus not found (give a folder of .md/.rst/.txt files or a .jsonl file)"
                           % path)
    out = []
    total = 0
    for f in files:
        digest = hashlib.sha256()
        try:
            with open(f, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    total += len(block)
                    if total > MAX_CORPUS_BYTES:
                        raise MiniRagError("%s: corpus larger than %d bytes (MAX_CORPUS_BYTES) at %s"
                                           % (path, MAX_CORPUS_BYTES, f))
                    digest.update(block)
        except OSError as exc:
            raise MiniRagError("%s: cannot read corpus file: %s" % (f, exc.strerror or exc)) from None
        digest = digest.hexdigest()
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
        body = body.replace("\r\n", "\n")
        read_versions(meta, title, str(doc_id), body, 1)
        docs.append(Document(doc_id=_check_id(str(doc_id), where), title=title,
                             path=where, pages=body.split("\f"),
                             authority=str(authority or ""), effective=str(effective or ""),
                             metadata=meta,
                             content_hash=hashlib.sha256(line.encode("utf-8")).hexdigest()))
    return docs


def path_doc_id(path: str, root: str) -> str:
    """A file's default doc_id: its path relative to the corpus folder, ``/``-separated,
    without its extension, white space runs made ``-`` (``guide/index``, ``faq``)."""
    rel = os.path.splitext(os.path.relpath(path, root))[0].replace(os.sep, "/")
    return "-".join(rel.split())


def load_corpus(path: str) -> List[Document]:
    """Read a folder of ``.md``/``.txt`` files or a BEIR ``.jsonl`` file; sorted by doc_id."""
    if os.path.isdir(path):
        docs = []
        for f in _iter_text_files(path):
            data = _read_bytes(f)
            docs.append(parse_text_document(_decode(data, f), f, path_doc_id(f, path),
                                            hashlib.sha256(data).hexdigest()))
        if not docs:
            raise MiniRagError("%s: corpus folder has no .md, .rst or .txt files" % path)
    elif os.path.isfile(path):
        docs = _load_jsonl(path)
        if not docs:
            raise MiniRagError("%s: corpus file has no documents" % path)
    else:
        raise MiniRagError("%s: corpus not found (give a folder of .md/.rst/.txt files or a .jsonl file)"
                           % path)
    seen = {}
    for d in docs:
        if d.doc_id in seen:
            raise MiniRagError("%s: doc_id %r is already used by %s" % (d.path, d.doc_id, seen[d.doc_id]))
        seen[d.doc_id] = d.path
    docs.sort(key=lambda d: d.doc_id)
    resolve_versions(docs)
    return docs


# ---------------------------------------------------------------- versions

#: Rule version of the reading below; the index manifest records it, so an index built
#: before a change of these rules is rebuilt (its chunks carry the old metadata).
VERSION_RULE = "mini_rag-versions-1"
VERSION_HEAD_LINES = 15
VERSION_HEAD_CHARS = 2000
#: Status words, as read, to the status recorded.
STATUS_WORDS = {
    "superseded": "superseded", "replaced": "superseded", "withdrawn": "withdrawn",
    "revoked": "revoked", "repealed": "repealed", "rescinded": "rescinded",
    "retired": "retired", "archived": "archived", "obsolete": "obsolete",
    "expired": "expired", "deprecated": "deprecated", "current": "current",
    "active": "current", "effective": "current", "approved": "current", "draft": "draft",
}
_STATUS_VALUES = frozenset(STATUS_WORDS.values())
#: The nouns a document calls itself by in a self-declaration ("This edition was ...").
DOC_NOUNS = ("policy", "edition", "version", "document", "standard", "procedure", "sop",
             "guideline", "guidelines", "guidance", "note", "notice", "schedule", "page",
             "manual", "handbook", "circular", "memo", "memorandum", "directive",
             "specification", "revision", "release", "summary", "instruction", "rule",
             "rules", "terms", "faq", "plan", "statement", "bulletin", "annex", "appendix", "guide",
             "charter", "code", "framework", "checklist")

#: ``status`` values of a document that is no longer in force.
OUT_OF_FORCE = frozenset({"superseded", "withdrawn", "retired", "obsolete", "archived", "revoked",
                          "repealed", "rescinded", "expired", "deprecated"})


def out_of_force(metadata: dict) -> bool:
    """True when a document's metadata says it is no longer in force: a successor
    (``superseded_by``) or a status of :data:`OUT_OF_FORCE` (any case)."""
    successor = str((metadata or {}).get("superseded_by") or "").strip()
    status = str((metadata or {}).get("status") or "").strip().casefold()
    return bool(successor) or status in OUT_OF_FORCE


_MARKS = " \t#*_>|-"
_STATUS_LINE = re.compile(r"^(?:document |policy )?status[*_\s]*[:\u2013\u2014-][*_\s]*([a-z][a-z -]{0,40})",
                          re.IGNORECASE)
_SELF = re.compile(r"^(?:this|the present)\s+(" + "|".join(DOC_NOUNS) + r")\b", re.IGNORECASE)
_CONDITIONAL = re.compile(r"\b(?:if|unless|upon|when|after|until|once|where|will|shall|may|might|would|"
                          r"could|should|can)\b", re.IGNORECASE)
_SUCCESSOR = re.compile(r"\b(?:superseded|replaced)\s+by\s+(.{1,160})", re.IGNORECASE)
_LEAD_SUCCESSOR = re.compile(r"^(?:superseded|replaced)\s+by\s*:?\s+(.{1,160})", re.IGNORECASE)
_PREDECESSOR = re.compile(r"\b(?:replaces|supersedes)\s+(.{1,160})", re.IGNORECASE)
_OUT_WORD = re.compile(r"\b(withdrawn|revoked|repealed|rescinded|retired|archived|obsolete|superseded)\b"
                       r"|\bno\s+longer\s+(?:in\s+force|in\s+effect|valid|current|applicable)\b",
                       re.IGNORECASE)
_TITLE_STATUS = re.compile(r"\b(superseded|withdrawn|obsolete|archived|retired|revoked|repealed|rescinded)\b",
                           re.IGNORECASE)
_EDITION = re.compile(r"\b(?:v|version|edition|revision|rev|release)\.?\s?(\d[\d.]{0,10})", re.IGNORECASE)
_EDITION_YEAR = re.compile(r"(?<![\d.])((?:19|20)\d\d)(?![\d])")
_BRACKETED = re.compile(r"\([^()]{0,80}\)|\[[^\[\]]{0,80}\]")
_HEAD_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
#: Words removed from a title or doc_id to get its family key.
_FAMILY_DROP = frozenset("legacy old new current superseded withdrawn obsolete archived retired "
                         "draft final updated revised edition version revision rev release v".split())


def editions_in(text: str, years: bool = True) -> List[str]:
    """Edition markers of ``text``, normalized, in first-occurrence order.

    >>> editions_in("Information Security Policy (legacy v2.3), Edition 2026.1 of 2019, Version 4.0")
    ['v2.3', 'v2026.1', 'v4', '2019']
    """
    out: List[str] = []
    spans = []
    for m in _EDITION.finditer(text):
        spans.append(m.span())
        tag = "v" + m.group(1).rstrip(".")
        while tag.endswith(".0"):                    # "v4.0" is "v4"
            tag = tag[:-2]
        if tag not in out:
            out.append(tag)
    if years:
        for m in _EDITION_YEAR.finditer(text):
            inside = any(a <= m.start() < b for a, b in spans)
            if not inside and m.group(1) not in out:
                out.append(m.group(1))
    return out


@functools.lru_cache(maxsize=4096)
def family_key(text: str) -> str:
    """``text`` (a title or doc_id) without editions, years, parentheses and version words:
    two editions of one document share it (``api-rate-limits-2021`` and
    ``api-rate-limits-2026`` -> ``api rate limits``)."""
    text = _BRACKETED.sub(" ", text)
    text = _EDITION.sub(" ", text)
    text = _EDITION_YEAR.sub(" ", text)
    words = [w for w in re.split(r"[^0-9a-z]+", text.lower()) if w and w not in _FAMILY_DROP]
    return " ".join(words)


def _status_word(words: str) -> str:
    words = words.strip().lower()
    if words.startswith("no longer"):
        return "withdrawn"
    if words.startswith(("in force", "in effect")):
        return "current"
    first = words.split(" ", 1)[0] if words else ""
    return STATUS_WORDS.get(first, first)


def _cut_sentence(text: str) -> str:
    """``text`` up to its first sentence end (a ``.`` followed by space, or ``;``)."""
    m = re.search(r"[.;!?](?:\s|$)|;", text)
    return (text[:m.start()] if m else text).strip().rstrip(".,")


def read_versions(meta: dict, title: str, doc_id: str, body: str, first_line: int) -> None:
    """Fill ``meta`` (a document's metadata, front matter already in it) with the status,
    successor and editions its text declares, by the rules in the module docstring.
    Front matter wins: a key it gives is never overwritten.  Records what was read in
    ``meta["versions_read"]``."""
    found: dict = {}
    if meta.get("status"):
        found["status"] = [str(meta["status"]), "front_matter"]
    if meta.get("superseded_by"):
        found["superseded_by"] = [str(meta["superseded_by"]), "front_matter"]
    editions = editions_in(title)
    for tag in editions_in(doc_id.replace("-", " ").replace("_", " ")):
        if tag not in editions:
            editions.append(tag)
    if "status" not in found and title:
        for m in _TITLE_STATUS.finditer(title):
            before = title[:m.start()]
            if before.rfind("(") > before.rfind(")") or before.rfind("[") > before.rfind("]"):
                found["status"] = [_status_word(m.group(1)), "title"]    # "(version 3, superseded)"
                break
    for lineno, line, joined in _head(body, first_line):
        where = "body:%d" % lineno
        m = _STATUS_LINE.match(line)
        if m and "status_in_text" not in found:
            word = _status_word(m.group(1))
            if word in _STATUS_VALUES:                   # "Status: the order ships" is no status
                found["status_in_text"] = [word, where]
                found.setdefault("status", [word, where])
        m = _LEAD_SUCCESSOR.match(line)
        if m and "successor_text" not in found:
            found["successor_text"] = [_cut_sentence(m.group(1)), where]
            found.setdefault("status", ["superseded", where])
            continue
        if joined is None:
            continue
        for sentence in _HEAD_SENTENCE.split(joined):
            if not _self_declaration(sentence, where, found):
                for tag in editions_in(sentence, years=False):
                    if tag not in editions:
                        editions.append(tag)
    if editions:
        found["editions"] = editions
    if found.get("status_in_text") == found.get("status"):
        found.pop("status_in_text", None)                 # read from the text, said once
    if "status" in found and not meta.get("status"):
        meta["status"] = found["status"][0]
    if set(found) - {"status", "superseded_by"} or any(v[1] != "front_matter" for k, v in found.items()
                                                       if k in ("status", "superseded_by")):
        meta["versions_read"] = found


def _head(body: str, first_line: int) -> Iterator[Tuple[int, str, "str | None"]]:
    """The body's head, by line: ``(file line, line without Markdown marks, paragraph)``
    where ``paragraph`` (the line and the following non-blank head lines joined with
    spaces) is given on a paragraph's first line only, None on the others."""
    lines: List[Tuple[int, str]] = []
    used = 0
    for offset, raw in enumerate(body.split("\n")):
        line = raw.strip(_MARKS)
        if not line:
            lines.append((first_line + offset, ""))
            continue
        used += len(line)
        if len(lines) - sum(1 for _, t in lines if not t) >= VERSION_HEAD_LINES or used > VERSION_HEAD_CHARS:
            break
        lines.append((first_line + offset, line))
    for i, (lineno, line) in enumerate(lines):
        if not line:
            continue
        joined = None
        if i == 0 or not lines[i - 1][1]:
            parts = []
            for _, t in lines[i:]:
                if not t:
                    break
                parts.append(t)
            joined = " ".join(parts)
        yield lineno, line, joined


def _self_declaration(sentence: str, where: str, found: dict) -> bool:
    """Read one head sentence that starts with "This <document noun>" (module docstring);
    True when it names a successor or a predecessor (its editions are not this one's)."""
    m = _SELF.match(sentence)
    if not m:
        return False
    rest = sentence[m.end():m.end() + 200]
    cond = _CONDITIONAL.search(rest)
    limit = min(cond.start() if cond else len(rest), 60)
    succ = _SUCCESSOR.search(rest)
    if succ and succ.start() < limit:
        if "successor_text" not in found:
            found["successor_text"] = [_cut_sentence(succ.group(1)), where]
            found.setdefault("status", ["superseded", where])
        return True
    pred = _PREDECESSOR.search(rest)
    if pred and pred.start() < limit:
        if "predecessor_text" not in found:
            found["predecessor_text"] = [_cut_sentence(pred.group(1)), where]
        return True
    out = _OUT_WORD.search(rest, 0, limit)
    if out and "status" not in found:
        found["status"] = [_status_word(out.group(1) or "no longer"), where]
    return False


def resolve_versions(docs: List[Document]) -> None:
    """Resolve the successor / predecessor texts :func:`read_versions` kept to doc ids
    (module docstring); front matter is never overwritten."""
    todo = [d for d in docs if ("successor_text" in (d.metadata.get("versions_read") or {})
                                or "predecessor_text" in (d.metadata.get("versions_read") or {}))]
    if not todo:
        return
    by_id = {d.doc_id: d for d in docs}
    families: dict = {}
    for d in docs:
        for key in {family_key(d.doc_id), family_key(d.title)}:
            if key:
                families.setdefault(key, []).append(d)
    for d in todo:
        read = d.metadata["versions_read"]
        declared_current = (read.get("status", ["", ""])[1] == "front_matter"
                            and str(d.metadata.get("status", "")).casefold() not in OUT_OF_FORCE)
        if "successor_text" in read and not d.metadata.get("superseded_by") and not declared_current:
            text, where = read["successor_text"]
            other = _resolve(text, d, by_id, families)
            if other is not None:
                d.metadata["superseded_by"] = other.doc_id
                read["superseded_by"] = [other.doc_id, where]
        if "predecessor_text" in read:
            text, where = read["predecessor_text"]
            other = _resolve(text, d, by_id, families)
            if other is not None:
                read["supersedes"] = [other.doc_id, where]
                old_read = other.metadata.setdefault("versions_read", {})
                if not other.metadata.get("status"):
                    other.metadata["status"] = "superseded"
                    old_read["status"] = ["superseded", "corpus:" + d.doc_id]
                if not other.metadata.get("superseded_by"):
                    other.metadata["superseded_by"] = d.doc_id
                    old_read["superseded_by"] = [d.doc_id, "corpus:" + d.doc_id]


def _resolve(text: str, doc: Document, by_id: dict, families: dict) -> "Document | None":
    """The document ``text`` names (not ``doc`` itself), or None."""
    for word in re.split(r"[\s,;:()]+", text):
        word = word.strip(".'\"")
        if word in by_id and word != doc.doc_id:
            return by_id[word]
    wanted = set(editions_in(text))
    if not wanted:
        return None
    kin: List[Document] = []
    for key in {family_key(doc.doc_id), family_key(doc.title)}:
        for other in families.get(key, ()) if key else ():
            if other is not doc and other not in kin:
                kin.append(other)
    hits = [o for o in kin if wanted & set((o.metadata.get("versions_read") or {}).get("editions", ()))]
    return hits[0] if len(hits) == 1 else None


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


def _syntax(path: str) -> str:
    low = path.lower()
    return "md" if low.endswith(".md") else "rst" if low.endswith(".rst") else "txt"


def _heading_level(text: str, atx: "re.Match | None", is_txt: bool) -> int:
    """A heading's level: the number of ``#`` of a Markdown heading, else 1."""
    if atx is not None:
        return len(text) - len(text.lstrip("#"))
    return 1


def chunk_document(doc: Document, max_chunk_chars: int = 0) -> List[Chunk]:
    """Cut one document into chunks by the rule in this module's docstring."""
    is_txt = doc.path.lower().endswith(".txt")
    syntax = _syntax(doc.path)
    chunks: List[Chunk] = []
    ordinal = 0
    heading = ""
    section: List[Tuple[int, str]] = []      # (level, heading) from the top down
    line_no = doc.body_line

    def enter(level: int, text: str) -> None:
        while section and section[-1][0] >= level:
            section.pop()
        section.append((level, text))

    for page_no, page in enumerate(doc.pages, 1):
        lines = page.split("\n")
        for block in blocks(lines, syntax):
            start = line_no + block.start
            para = block.lines
            kind = block.kind
            if kind == "heading":
                text = para[0]
                head = text
                heading = text
                enter(block.level, text)
            elif kind == "text":
                text = _join_lines(para)
                head = _heading_text(text, is_txt)
                first = _ATX.match(para[0])
                if head or first:
                    heading = head or first.group(1)
                    enter(_heading_level(para[0], first, is_txt), heading)
            elif kind == "table":             # one row a line, each with its header
                text = "\n".join(read_table(para) or para)
                head = ""
                indexed = "\n".join(para)          # the words as written: each header once
            else:                             # code: lines as written
                text = "\n".join(para)
                head = ""
            pieces = [text]
            if kind != "table":
                indexed = ""
            if max_chunk_chars > 0 and len(text) > max_chunk_chars and not head and kind != "code":
                pieces = split_sentences(text, max_chunk_chars)
            if len(text) > MAX_PARAGRAPH_CHARS:
                if len(pieces) == 1:
                    pieces = split_sentences(text, MAX_PARAGRAPH_CHARS)
                pieces = [part for p in pieces for part in _hard_cut(p, MAX_PARAGRAPH_CHARS)]
            path = [h for _, h in section] + list(block.context)
            for m, piece in enumerate(pieces):
                cid = "%s#p%d" % (doc.doc_id, ordinal)
                if len(pieces) > 1:
                    cid += ".%d" % m
                chunks.append(Chunk(chunk_id=cid, doc_id=doc.doc_id, ordinal=ordinal,
                                    page=page_no, text=piece, title=doc.title, heading=heading,
                                    is_heading=bool(head), authority=doc.authority,
                                    effective=doc.effective, line=start,
                                    metadata=doc.metadata, section=list(path),
                                    kind="heading" if head else kind,
                                    indexed=indexed if len(pieces) == 1 else ""))
            ordinal += 1
        line_no += len(lines) - 1   # the form feed sits inside a line, not after one
    return chunks


def load_chunks(path: str, max_chunk_chars: int = 0) -> List[Chunk]:
    """All chunks of a corpus, documents in doc_id order, chunks in document order."""
    out: List[Chunk] = []
    for doc in load_corpus(path):
        out.extend(chunk_document(doc, max_chunk_chars))
    return out

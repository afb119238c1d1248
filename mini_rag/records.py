"""Plain records passed between the stages of mini_rag.

Each stage reads and returns these; each serializes to JSON with ``to_json()`` and back
with ``from_json()`` so that any stage's output can be written, inspected and replayed.

=================  ==========================================================  ===========
record             what it is                                                  made by
=================  ==========================================================  ===========
Document           one source file (or BEIR row) with its front matter          corpus
Chunk              one paragraph of a document, the unit that is cited          corpus
Hit                one retrieved chunk with its scores                          retrieve
Retrieval          the hits of one question plus the retrieval signals          retrieve
Fact               phase A: a quote with (pdf, page, chunk_id, score)           facts
=================  ==========================================================  ===========

The question's analysis, read by every stage after it, is ``question.QuestionAnalysis``
(``to_json()`` too).
"""
from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, field, is_dataclass
from typing import Any, Dict, List


@dataclass
class Document:
    doc_id: str
    title: str
    path: str                      # file path, or "path:line" for a JSONL row
    pages: List[str]               # body text per page (page 1 first), front matter removed
    body_line: int = 1             # 1-based line of the body's first line in the file
    authority: str = ""
    effective: str = ""            # ISO date "YYYY-MM-DD" or ""
    metadata: Dict[str, Any] = field(default_factory=dict)   # every other front-matter key
    content_hash: str = ""         # sha256 of the bytes the document was read from

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class Chunk:
    chunk_id: str                  # "<doc_id>#p<N>" or "<doc_id>#p<N>.<M>"
    doc_id: str
    ordinal: int                   # N: 0-based paragraph number across the whole document
    page: int                      # 1-based page (form feeds start pages)
    text: str
    title: str = ""
    heading: str = ""              # nearest heading at or before this chunk ("" when none)
    is_heading: bool = False       # the chunk is a heading standing alone
    authority: str = ""
    effective: str = ""
    line: int = 0                  # 1-based line in the source file where the chunk starts
    metadata: Dict[str, Any] = field(default_factory=dict)
    section: List[str] = field(default_factory=list)   # the headings above it, top first (its own last)
    kind: str = "text"             # "text" | "heading" | "code" | "table" (text/markup.py)
    indexed: str = ""              # words indexed in place of text when text is a reading of them (a table: its rows as written)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "Chunk":
        return cls(**d)


_ATOMS = frozenset((str, int, float, bool, type(None)))


def _json_copy(value: Any) -> Any:
    """A deep copy of JSON-like data, as ``dataclasses.asdict`` copies a field's value
    (dicts, lists and tuples rebuilt, strings and numbers shared, anything else deep-copied)."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is dict:
        return {k if type(k) in _ATOMS else _json_copy(k): v if type(v) in _ATOMS else _json_copy(v)
                for k, v in value.items()}
    if kind is list:
        return [v if type(v) in _ATOMS else _json_copy(v) for v in value]
    if isinstance(value, dict):
        return type(value)((_json_copy(k), _json_copy(v)) for k, v in value.items())
    if isinstance(value, list):
        return type(value)(_json_copy(v) for v in value)
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return type(value)(_json_copy(v) for v in value)
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    return copy.deepcopy(value)


@dataclass
class Hit:
    chunk_id: str
    doc_id: str
    rank: int                      # 1-based rank in the final list
    score: float                   # raw ranking score (BM25 or cosine, see retrieve.py)
    similarity: float              # score in [0, 1] that the thresholds compare against
    page: int
    text: str
    title: str = ""
    heading: str = ""
    authority: str = ""
    effective: str = ""
    query: str = ""                # the query variant (original or expansion) that scored best
    metadata: Dict[str, Any] = field(default_factory=dict)
    section: List[str] = field(default_factory=list)   # the chunk's section path (Chunk.section)

    def to_json(self) -> dict:
        return asdict(self)

    def copy(self) -> "Hit":
        """An independent copy: ``Hit.from_json(hit.to_json())`` without the dict between
        (``metadata`` and ``section`` copied the way ``asdict`` copies them)."""
        return Hit(self.chunk_id, self.doc_id, self.rank, self.score, self.similarity, self.page, self.text,
                   self.title, self.heading, self.authority, self.effective, self.query,
                   _json_copy(self.metadata), _json_copy(self.section))

    @classmethod
    def from_json(cls, d: dict) -> "Hit":
        return cls(**d)


@dataclass
class Retrieval:
    question: str
    hits: List[Hit]                # accepted hits, final order (after threshold, fallback, MMR)
    candidates: List[Hit] = field(default_factory=list)   # top_k before thresholds, for traces
    fallback_used: bool = False
    expansions: List[str] = field(default_factory=list)    # expanded query strings that were run
    scope: str = "MIXED"
    query_terms: List[str] = field(default_factory=list)   # analyzed terms after typo correction
    corrections: Dict[str, str] = field(default_factory=dict)  # query token -> index term used
    alternatives: Dict[str, List[str]] = field(default_factory=dict)  # query term -> other terms that counted
    signals: Dict[str, Any] = field(default_factory=dict)  # max, mean, gap, hit_count, freshness...
    joined: Dict[str, str] = field(default_factory=dict)   # a hit joined after its lead-in (not ranked) -> the lead-in's chunk id

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "Retrieval":
        d = dict(d)
        d["hits"] = [Hit.from_json(h) for h in d.get("hits", [])]
        d["candidates"] = [Hit.from_json(h) for h in d.get("candidates", [])]
        return cls(**d)


@dataclass
class Fact:
    """Phase A output, the QA contract's Fact: quote, pdf, page, chunk_id, score."""
    quote: str
    pdf: str                       # the document name (doc_id)
    page: int
    chunk_id: str
    score: float

    def key(self):
        return (self.pdf, self.page, self.chunk_id)

    def to_json(self) -> dict:
        return asdict(self)


__all__ = ["Document", "Chunk", "Hit", "Retrieval", "Fact"]

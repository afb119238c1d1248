"""Term weights that do not depend on the index's other documents (issue 43, item 2).

The answering stages weigh a question's terms by the index's idf (``Index.idf``) and call a
term no chunk holds *unknown* (``doc_freq == 0``).  Both change when unrelated documents are
added: a question scoped to one contract gets other key terms, and other refusals, in an index
of one contract than in an index of 33.  With ``[answer] term_weights = "document"`` a question
scoped to one document (``doc_scope``) is answered from that document's own view of the index,
:class:`DocumentView` (question analysis, phase B, phase C and the conflict guard read it;
retrieval keeps the index's BM25 weights):

* ``idf(t) = background(t) + DOC_IDF_WEIGHT * ln(1 + (n - df + 0.5) / (df + 0.5))``, ``n``
  the document's chunks and ``df`` those holding ``t`` (BM25's idf within the document: a term
  the document repeats in every clause, "Confidential Information" in an NDA, says little about
  which clause answers).  ``background(t)`` is the term's rarity in general English, from
  SCOWL's size levels (``mini_rag/data/background_en.txt``, built by
  ``tools/build_background.py``; its source and licence are in its header; 10: the commonest
  words ... 70: a large dictionary's).  A term's *rank* is the number of listed terms of lower
  levels plus half of those of its own level (its median rank, the terms of one level taken as
  equally common); a term of no level (a name, a code, jargon) ranks at twice the number of
  listed terms; ``background(t) = ln(1 + rank)``, as Zipf's law gives ``-ln p`` up to a
  constant.
* ``doc_freq(t)``: ``df``, but at least 1 for a term of the background (``known``): an English
  word the document does not use is a word the question is about, not the asker's noise,
  whether or not another document of the index happens to use it.
* ``chunks``: the document's, so the corpus's glossary definitions, listed examples and
  abbreviations that bridge the question's terms are the document's own.
* everything else (analyzer, ``chunk(id)``) is the index's.

An index of that document alone gives the same view, whatever else another index holds.  Rule
2b of synthesize.py (a scoped question compared with the other documents' best hits) is off
under it: it reads the other documents by design.  An unscoped question reads the index as
before (its scope is the whole index).  A scoped question's typo correction leaves a word of
the background alone (:class:`KnownWords`): "count" is not a typo of another document's
"counti".

The table is keyed by the default analyzer's terms (Snowball stop words, Porter2); with other
analyzer settings a term is looked up by the default analyzer's term of it.

>>> levels = {"inform": 10, "parti": 10, "subpoena": 40, "court": 10}
>>> w = Background(None, levels=levels)
>>> [round(w.background_idf(t), 4) for t in ("inform", "subpoena", "xq9")]   # ln(1 + 1.5), ln(1 + 3.5), ln(1 + 8)
[0.9163, 1.5041, 2.1972]
"""
from __future__ import annotations

import math
import os
import threading
from typing import Any, Dict, Optional

from ..errors import MiniRagError

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "background_en.txt")
#: The ``[answer] term_weights`` values.
TERM_WEIGHTS = ("index", "document")

_LOCK = threading.Lock()
_LEVELS: Dict[str, Dict[str, int]] = {}


def load_levels(path: str = DATA) -> Dict[str, int]:
    """``{term: level}`` of the background file (read once per process and path)."""
    with _LOCK:
        got = _LEVELS.get(path)
        if got is not None:
            return got
        out: Dict[str, int] = {}
        try:
            with open(path, encoding="utf-8") as fh:
                for line_no, line in enumerate(fh, 1):
                    if line.startswith("#") or not line.strip():
                        continue
                    head, _, rest = line.partition(" ")
                    if not head.isdigit():
                        raise MiniRagError("%s:%d: want 'LEVEL term term ...', got %r" % (path, line_no, line[:40]))
                    for term in rest.split():
                        out.setdefault(term, int(head))
        except OSError as exc:
            raise MiniRagError("%s: cannot read the background term list: %s" % (path, exc.strerror))
        _LEVELS[path] = out
        return out


def level_idf(levels: Dict[str, int]) -> Dict[int, float]:
    """``{level: ln(1 + median rank)}`` (the module docstring's ``idf``)."""
    count: Dict[int, int] = {}
    for level in levels.values():
        count[level] = count.get(level, 0) + 1
    out, below = {}, 0
    for level in sorted(count):
        out[level] = math.log(1.0 + below + count[level] / 2.0)
        below += count[level]
    return out


def _default_term(analyzer: Any) -> Any:
    """``term -> the default analyzer's term`` for an index analyzed otherwise, else None."""
    if analyzer is None:
        return None
    from ..text.analysis import Analyzer
    default = Analyzer()
    if getattr(analyzer, "settings", None) and analyzer.settings() == default.settings():
        return None

    def lookup(term: str) -> str:
        got = default.analyze(term.casefold())
        return got[0] if len(got) == 1 else term
    return lookup


class Background:
    """The background weights over ``index`` (which may be None) and the per-document views.

    ``levels``: ``{term: level}`` (default: :func:`load_levels`).  Thread-safe: the views are
    built under a lock and read-only once built, so one instance serves every thread of
    ``serve``."""

    def __init__(self, index: Any, levels: Optional[Dict[str, int]] = None) -> None:
        self.index = index
        self._levels = levels
        self._to_default = _default_term(getattr(index, "analyzer", None))
        self._lock = threading.Lock()              # the views
        self._table_lock = threading.Lock()        # the weights
        self._views: Dict[str, DocumentView] = {}
        self._table: Optional[tuple] = None

    def _weights(self) -> tuple:
        """(levels, {level: weight}, an unlisted term's weight), read when first needed (an
        index whose questions are never scoped never reads the file)."""
        table = self._table
        if table is None:
            with self._table_lock:
                if self._table is None:
                    levels = load_levels() if self._levels is None else self._levels
                    self._table = (levels, level_idf(levels), math.log(1.0 + 2.0 * len(levels)))
                table = self._table
        return table

    @property
    def levels(self) -> Dict[str, int]:
        return self._weights()[0]

    def level(self, term: str) -> Optional[int]:
        """The background level of ``term``, None when the background does not list it."""
        levels = self._weights()[0]
        got = levels.get(term)
        if got is None and self._to_default is not None:
            got = levels.get(self._to_default(term))
        return got

    def known(self, term: str) -> bool:
        """Is ``term`` a general-English word (listed by the background)?"""
        return self.level(term) is not None

    def background_idf(self, term: str) -> float:
        got = self.level(term)
        _, weights, unlisted = self._weights()
        return unlisted if got is None else weights[got]

    def view(self, doc_id: str) -> "DocumentView":
        """The view of one document (module docstring), built once per document; the last
        :data:`VIEWS_KEPT` are kept."""
        with self._lock:
            got = self._views.pop(doc_id, None)
            if got is None:
                got = DocumentView(self, doc_id)
            self._views[doc_id] = got            # most recently used last
            while len(self._views) > VIEWS_KEPT:
                del self._views[next(iter(self._views))]
            return got


#: The weight of the document's own idf next to the background's (the module docstring's
#: ``DOC_IDF_WEIGHT``).  Fitted on ContractNLI's fit half (even contracts) at the committed
#: thresholds, for the best pass rate (see docs/answering.md: 0.5 .. 2 tried).
DOC_IDF_WEIGHT = 1.25
#: Document views kept per :class:`Background` (each holds one document's term counts).
VIEWS_KEPT = 64


class DocumentView:
    """One document of the index, as the module docstring says."""

    def __init__(self, background: Background, doc_id: str) -> None:
        self._background = background
        self._index = background.index
        self.doc_id = doc_id
        chunks, df = [], {}                       # type: ignore[var-annotated]
        index = self._index
        for pos, chunk in enumerate(getattr(index, "chunks", None) or ()):
            if chunk.doc_id == doc_id:
                chunks.append(chunk)
                for term in index.terms(pos):
                    df[term] = df.get(term, 0) + 1
        self.chunks = chunks
        self._df: Dict[str, int] = df

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_index", "_background"):
            raise AttributeError(name)
        return getattr(self._index, name)

    def known(self, term: str) -> bool:
        return self._background.known(term)

    def idf(self, term: str) -> float:
        n, df = len(self.chunks), self._df.get(term, 0)
        return self._background.background_idf(term) + DOC_IDF_WEIGHT * math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def doc_freq(self, term: str) -> int:
        df = self._df.get(term, 0)
        return 1 if df == 0 and self._background.known(term) else df


class KnownWords:
    """A retriever whose typo correction leaves a general-English word alone (a scoped
    question's, under ``[answer] term_weights = "document"``): "count" is no typo of another
    document's "counti".  Everything else is the retriever's."""

    def __init__(self, retriever: Any, background: Background) -> None:
        self._retriever = retriever
        self._known = background.known

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_retriever", "_known"):
            raise AttributeError(name)
        return getattr(self._retriever, name)

    def query_terms(self, text: str, corrections: Optional[Dict[str, str]] = None) -> Any:
        return self._retriever.query_terms(text, corrections, keep=self._known)


def scoped_retriever(retriever: Any, weights: Any, doc_scope: Optional[str]) -> Any:
    """The retriever a question's analysis reads: :class:`KnownWords` over ``retriever`` for a
    scoped question under a :class:`Background` (one that corrects typos), else ``retriever``."""
    if doc_scope and isinstance(weights, Background) and callable(getattr(retriever, "query_terms", None)):
        return KnownWords(retriever, weights)
    return retriever


def scoped_index(weights: Any, doc_scope: Optional[str]) -> Any:
    """What a question reads as the index: with ``weights`` a :class:`Background` (``[answer]
    term_weights = "document"``), the view of ``doc_scope``'s document, or the index itself for
    an unscoped question; else ``weights`` (the index)."""
    if isinstance(weights, Background):
        return weights.view(doc_scope) if doc_scope else weights.index
    return weights


def answer_index(index: Any, config: Dict[str, Any]) -> Any:
    """What the pipeline keeps for the answering stages under ``config``'s ``[answer]
    term_weights``: a :class:`Background` over ``index`` ("document"), else ``index``."""
    mode = config.get("answer", {}).get("term_weights", "index")
    if mode == "document" and index is not None:
        return Background(index)
    return index

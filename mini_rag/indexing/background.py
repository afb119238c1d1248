"""Term weights that do not depend on the index's other documents (issue 43, item 2).

The answering stages weigh a question's terms by the index's idf (``Index.idf``) and call a
term no chunk holds *unknown* (``doc_freq == 0``).  Both change when unrelated documents are
added: a question scoped to one contract gets other key terms, and other refusals, in an index
of one contract than in an index of 33.  With ``[answer] term_weights = "background"`` the
answering stages (question analysis, phase B, phase C, the conflict guard) read the index
through :class:`BackgroundIndex` instead:

* ``idf(t)``: the term's rarity in general English, from SCOWL's size levels
  (``mini_rag/data/background_en.txt``, built by ``tools/build_background.py``; its source and
  licence are in its header; 10: the commonest words ... 70: a large dictionary's).  A term's
  *rank* is the number of listed terms of lower levels plus half of those of its own level
  (its median rank, the terms of one level taken as equally common); a term of no level (a
  name, a code, jargon) ranks at twice the number of listed terms.  ``idf(t) = ln(1 + rank)``,
  as Zipf's law gives ``-ln p`` up to a constant.  Nothing about the index enters it.
* ``doc_freq(t)``: the index's document frequency, but at least 1 for a term of the background
  (``known``): an English word the documents do not use is a word the question is about, not
  the asker's noise, whether or not another document of the index happens to use it.
* everything else (chunks, analyzer, the glossary tables) is the index's.

A question scoped to one document (``doc_scope``) reads :meth:`BackgroundIndex.scoped`: the
same weights, and the document's own ``chunks`` (so the corpus's glossary definitions, listed
examples and abbreviations that bridge its terms are that document's) and ``doc_freq`` (the
number of the document's chunks holding the term, at least 1 for a background word).  An
index of that document alone gives the same view, whatever else another index holds.

Retrieval keeps the index's BM25 weights; with the option on, its typo correction leaves a
word of the background alone (``known``): "count" is not a typo of another document's
"counti".

The table is keyed by the default analyzer's terms (Snowball stop words, Porter2); with other
analyzer settings a term is looked up by the default analyzer's term of it.

>>> levels = {"inform": 10, "parti": 10, "subpoena": 40, "court": 10}
>>> w = BackgroundIndex(None, levels=levels)
>>> [round(w.idf(t), 4) for t in ("inform", "subpoena", "xq9")]   # ln(1 + 1.5), ln(1 + 3.5), ln(1 + 8)
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
TERM_WEIGHTS = ("index", "background")

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


class BackgroundIndex:
    """The index, with ``idf`` and ``doc_freq`` as the module docstring says.

    ``levels``: ``{term: level}`` (default: :func:`load_levels`).  Read-only after
    construction, so one instance serves every thread of ``serve``."""

    def __init__(self, index: Any, levels: Optional[Dict[str, int]] = None) -> None:
        self._index = index
        self.levels = load_levels() if levels is None else levels
        self._to_default = _default_term(getattr(index, "analyzer", None))
        self._idf = level_idf(self.levels)
        self._unlisted = math.log(1.0 + 2.0 * len(self.levels))
        self._lock = threading.Lock()
        self._scoped: Dict[str, "ScopedBackground"] = {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_index":
            raise AttributeError(name)
        return getattr(self._index, name)

    def level(self, term: str) -> Optional[int]:
        """The background level of ``term``, None when the background does not list it."""
        got = self.levels.get(term)
        if got is None and self._to_default is not None:
            got = self.levels.get(self._to_default(term))
        return got

    def known(self, term: str) -> bool:
        return self.level(term) is not None

    def idf(self, term: str) -> float:
        got = self.level(term)
        return self._unlisted if got is None else self._idf[got]

    def doc_freq(self, term: str) -> int:
        df = int(self._index.doc_freq(term))
        return 1 if df == 0 and self.known(term) else df

    def scoped(self, doc_id: str) -> "ScopedBackground":
        """The view of one document (module docstring), built once per document; the last
        :data:`SCOPED_KEEP` are kept."""
        with self._lock:
            got = self._scoped.pop(doc_id, None)
            if got is None:
                got = ScopedBackground(self, doc_id)
            self._scoped[doc_id] = got            # most recently used last
            while len(self._scoped) > SCOPED_KEEP:
                del self._scoped[next(iter(self._scoped))]
            return got


#: Scoped views kept per :class:`BackgroundIndex` (each holds one document's term counts).
SCOPED_KEEP = 64


class ScopedBackground(BackgroundIndex):
    """One document of the index, as :meth:`BackgroundIndex.scoped` says."""

    def __init__(self, parent: BackgroundIndex, doc_id: str) -> None:
        self._index = parent._index
        self.levels = parent.levels
        self._to_default = parent._to_default
        self._idf = parent._idf
        self._unlisted = parent._unlisted
        self.doc_id = doc_id
        index = self._index
        chunks, df = [], {}                       # type: ignore[var-annotated]
        for pos, chunk in enumerate(getattr(index, "chunks", None) or ()):
            if chunk.doc_id == doc_id:
                chunks.append(chunk)
                for term in index.terms(pos):
                    df[term] = df.get(term, 0) + 1
        self.chunks = chunks
        self._df: Dict[str, int] = df

    def doc_freq(self, term: str) -> int:
        df = self._df.get(term, 0)
        return 1 if df == 0 and self.known(term) else df


def scoped_index(weights: Any, doc_scope: Optional[str]) -> Any:
    """What a question scoped to ``doc_scope`` reads: the scoped view of background weights
    (:meth:`BackgroundIndex.scoped`), else ``weights`` itself."""
    if doc_scope and isinstance(weights, BackgroundIndex) and not isinstance(weights, ScopedBackground):
        return weights.scoped(doc_scope)
    return weights


def answer_index(index: Any, config: Dict[str, Any]) -> Any:
    """What the answering stages read as the index under ``config``'s ``[answer] term_weights``."""
    mode = config.get("answer", {}).get("term_weights", "index")
    if mode == "background" and index is not None:
        return BackgroundIndex(index)
    return index

"""Term weights that do not depend on the index's other documents (issue 43, item 2): measured, not landed.

The answering stages weigh a question's terms by the index's idf and call a term the corpus
never uses *unknown* (``doc_freq == 0``).  Both change when unrelated documents are added: a
ContractNLI question scoped to one contract gets other key terms, and other refusals, in an
index of one contract than in one of 33 (``bench_index_independence.py``).

:class:`BackgroundView` wraps an index for the answering stages (question analysis, phase B,
phase C, the guards; retrieval keeps the real index):

* ``idf(t)``: the term's rarity in general English, ``ln(1 + rank)`` with ``rank`` the best
  frequency rank of a word with that stem in the background list; a term the list lacks weighs
  ``ln(1 + largest rank) + 1``;
* ``doc_freq(t)``: with a scope (a document), the number of that document's chunks holding
  ``t``; without one the index's; either way at least 1 for a term of the background list
  (``known_by_background``), so that an English word absent from the documents is a word the
  question is about, not the asker's own noise.

The background list: the 126,136 words of wordninja 2.0.0 (PyPI sdist, sha256 :data:`SHA256`;
MIT licence, github.com/keredson/wordninja), ranked by their frequency in English Wikipedia.
Each alphabetic word is analyzed with the project's default analyzer (Snowball stop words,
Porter2); a stem keeps the best rank of its words (81,993 stems).  The sdist is not part of the
repository: ``pip download --no-deps wordninja==2.0.0 -d runs/wheels`` (else the benches that
use this say so and skip it).
"""
from __future__ import annotations

import gzip
import hashlib
import io
import math
import os
import tarfile
from typing import Any, Dict, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SDIST = os.path.join(ROOT, "runs", "wheels", "wordninja-2.0.0.tar.gz")
SHA256 = "1a1cc7ec146ad19d6f71941ee82aef3d31221700f0d8bf844136cf8df79d281a"
MEMBER = "wordninja-2.0.0/wordninja/wordninja_words.txt.gz"
_RANKS: Optional[Dict[str, int]] = None


def available() -> bool:
    return os.path.isfile(SDIST)


def ranks() -> Dict[str, int]:
    """{stem: best rank} of the background list (derived once per process from the sdist)."""
    global _RANKS
    if _RANKS is None:
        with open(SDIST, "rb") as fh:
            data = fh.read()
        if hashlib.sha256(data).hexdigest() != SHA256:
            raise ValueError("%s: sha256 is not wordninja 2.0.0's" % SDIST)
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            words = gzip.decompress(tar.extractfile(MEMBER).read()).decode("utf-8").split()
        from mini_rag.text.analysis import Analyzer
        analyze = Analyzer().analyze
        out: Dict[str, int] = {}
        for rank, word in enumerate(words, 1):
            if word.isalpha():
                terms = analyze(word)
                if len(terms) == 1:
                    out.setdefault(terms[0], rank)
        _RANKS = out
    return _RANKS


class BackgroundView:
    """The index, with ``idf`` and ``doc_freq`` as the module docstring says; ``scope``: a doc_id."""

    def __init__(self, index: Any, scope: Optional[str] = None, known_by_background: bool = True) -> None:
        self._index = index
        self.scope = scope
        self.known_by_background = known_by_background
        self._ranks = ranks()
        self._top = math.log(1.0 + max(self._ranks.values())) + 1.0
        self._doc_terms: Dict[str, Dict[str, int]] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._index, name)

    def idf(self, term: str) -> float:
        r = self._ranks.get(term)
        return self._top if r is None else math.log(1.0 + r)

    def _scope_df(self, term: str) -> int:
        doc = self.scope
        if doc not in self._doc_terms:
            df: Dict[str, int] = {}
            index = self._index
            for pos, chunk in enumerate(index.chunks):
                if chunk.doc_id == doc:
                    for t in index.terms(pos):
                        df[t] = df.get(t, 0) + 1
            self._doc_terms[doc] = df
        return self._doc_terms[doc].get(term, 0)

    def doc_freq(self, term: str) -> int:
        df = self._scope_df(term) if self.scope else int(self._index.doc_freq(term))
        if df == 0 and self.known_by_background and term in self._ranks:
            return 1
        return df

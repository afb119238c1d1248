"""Synonyms and related word forms from WordNet's own files, read with the standard library.

WordNet 3.0 (Princeton University; Debian and Ubuntu package it as ``wordnet-base``, which
puts its database in ``/usr/share/wordnet``) groups the words of English into *synsets*,
sets of words with one meaning, in frequency order for each word.  Plain-language and formal
words of one meaning ("keep" / "retain"), British and American spellings ("licence" /
"license", "colour" / "color") and words of different parts of speech formed from one
another ("oral" / "orally", "disclose" / "disclosure") are all there.  This module reads the
database where it lies; nothing of it is committed (its licence is in
``docs/wordnet.md``).  It is optional, like the MiniLM wheel: ``[answer] wordnet`` names the
folder (``"auto"``: ``$MINI_RAG_WORDNET``, else the Debian folder), and when the setting is
empty or the folder is absent every answer is what it is without it.  Off by default: on
the held-out halves it does not pay (``docs/wordnet.md``).

=====================  ===========================================================
``open_wordnet(spec)``  a :class:`WordNet` for ``""`` / ``"auto"`` / a folder, or None
``WordNet.lemmas``      the base forms of a word (``morphy``: exception lists, then
                        WordNet's suffix rules), per part of speech
``WordNet.related``     a word's synonyms (its first ``senses`` synsets), with
                        ``derived`` their derivationally related forms, and its other
                        spellings in any sense (``spelling_variant``: licence / license)
``wordnet_bridges``     ``{question term: [alternative term sets]}`` for the answering
                        stage (``relevance.expansion_bridges``), like
                        ``synonyms.synonym_bridges``; retrieval does not use them
=====================  ===========================================================

Reading: ``index.noun`` / ``.verb`` / ``.adj`` / ``.adv`` are sorted text files, one lemma a
line (``lemma pos synset_cnt p_cnt [ptr_symbol...] sense_cnt tagsense_cnt offset...``); the
offsets are byte positions of the lemma's synsets in ``data.POS``, most frequent sense
first.  A lemma is found by binary search over the file (seek and read one line at a time,
as WordNet's own ``bin_search``), and a synset by one seek: memory stays bounded whatever
the database's size (lines longer than :data:`MAX_LINE` bytes are refused), and a lookup
reads about twenty lines.  Results are kept in small LRU caches.  A file that does not
parse is an error naming the file and the byte offset.

>>> import os
>>> wn = open_wordnet(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "tests", "data", "wordnet"))
>>> wn.lemmas("kept")
[('v', 'keep')]
>>> sorted(wn.related("keep", senses=1))
['retain']
"""
from __future__ import annotations

import difflib
import functools
import os
import re
from typing import Dict, FrozenSet, List, Optional, Sequence, Tuple

from ..errors import MiniRagError
from .synonyms import Synonym

__all__ = ["WordNet", "open_wordnet", "spelling_variant", "wordnet_bridges", "configured_bridges", "DEBIAN_PATH", "ENV_PATH", "POS"]

#: Where Debian's and Ubuntu's ``wordnet-base`` installs the database.
DEBIAN_PATH = "/usr/share/wordnet"
#: An environment variable naming the folder (read with ``[answer] wordnet = "auto"``).
ENV_PATH = "MINI_RAG_WORDNET"
#: WordNet's parts of speech and their file suffixes (adjective satellites ``s`` live in adj).
POS = (("n", "noun"), ("v", "verb"), ("a", "adj"), ("r", "adv"))
#: The longest line read from a database file (WordNet 3.0's longest is about 12 KB).
MAX_LINE = 1 << 16
_LEMMA = re.compile(r"[a-z0-9][a-z0-9_.'-]{0,79}")

#: WordNet's detachment rules (``morph.c``): suffix, replacement, per part of speech.
_RULES = {
    "n": (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"),
          ("men", "man"), ("ies", "y")),
    "v": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"), ("ing", "")),
    "a": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "r": (),
}


class _Sorted:
    """One sorted WordNet text file (an index or an exception list), searched by key."""

    def __init__(self, path: str):
        self.path = path
        self._f = open(path, "rb")
        self._size = os.fstat(self._f.fileno()).st_size

    def _line(self) -> bytes:
        line = self._f.readline(MAX_LINE)
        if len(line) >= MAX_LINE and not line.endswith(b"\n"):
            raise MiniRagError("%s: byte %d: a line longer than %d bytes" % (self.path, self._f.tell(), MAX_LINE))
        return line

    def find(self, key: bytes) -> Optional[bytes]:
        """The line whose first field is ``key`` (without its newline), else None: binary
        search for the first line starting at or after a position whose key is >= ``key``."""
        lo, hi = 0, self._size
        while lo < hi:
            mid = (lo + hi) // 2
            self._f.seek(mid - 1 if mid else 0)
            if mid:
                self._line()                     # to the first line starting at or after mid
            line = self._line()
            if not line or line.split(b" ", 1)[0] >= key:
                hi = mid
            else:
                lo = mid + 1
        self._f.seek(lo - 1 if lo else 0)
        if lo:
            self._line()
        line = self._line()
        return line.rstrip(b"\r\n") if line.split(b" ", 1)[0] == key else None

    def close(self) -> None:
        self._f.close()


class WordNet:
    """A WordNet database folder (``index.POS``, ``data.POS`` and optionally ``POS.exc``)."""

    def __init__(self, folder: str):
        self.folder = folder
        self._index: Dict[str, _Sorted] = {}
        self._data: Dict[str, object] = {}
        self._exc: Dict[str, _Sorted] = {}
        for pos, name in POS:
            index, data = os.path.join(folder, "index." + name), os.path.join(folder, "data." + name)
            if os.path.isfile(index) and os.path.isfile(data):
                self._index[pos] = _Sorted(index)
                self._data[pos] = open(data, "rb")
                exc = os.path.join(folder, name + ".exc")
                if os.path.isfile(exc):
                    self._exc[pos] = _Sorted(exc)
        if not self._index:
            raise MiniRagError("%s: no WordNet database (index.noun and data.noun, ...)" % folder)
        self.lemmas = functools.lru_cache(maxsize=8192)(self._lemmas)
        self.related = functools.lru_cache(maxsize=8192)(self._related)
        self._synset = functools.lru_cache(maxsize=8192)(self._read_synset)

    def close(self) -> None:
        for f in list(self._index.values()) + list(self._exc.values()) + list(self._data.values()):
            f.close()

    def __del__(self) -> None:
        self.close()

    def senses(self, pos: str, lemma: str, tagged: bool = False) -> Tuple[int, ...]:
        """The synset offsets of ``lemma`` in ``pos``, most frequent sense first (none: ());
        with ``tagged``, only the senses seen in WordNet's sense-tagged texts (the index's
        ``tagsense_cnt`` first ones: "limited" as a noun, an express train, has none)."""
        if pos not in self._index or not _LEMMA.fullmatch(lemma):
            return ()
        line = self._index[pos].find(lemma.encode("ascii"))
        if line is None:
            return ()
        fields = line.split()
        try:
            n_ptr = int(fields[3])
            n_sense, n_tagged = int(fields[2]), int(fields[5 + n_ptr])
            offsets = tuple(int(x) for x in fields[6 + n_ptr:6 + n_ptr + n_sense])
        except (ValueError, IndexError):
            offsets = ()
        if not offsets or len(offsets) != n_sense:
            raise MiniRagError("%s: the entry of %r does not parse" % (self._index[pos].path, lemma))
        return offsets[:n_tagged] if tagged else offsets

    def _lemmas(self, word: str) -> List[Tuple[str, str]]:
        """``[(pos, base form)]`` of ``word`` (lower case; spaces as ``_``) that WordNet holds:
        the word itself, its exception-list bases, then its suffix-rule bases (``morphy``)."""
        word = word.casefold().replace(" ", "_")
        out: List[Tuple[str, str]] = []
        if not _LEMMA.fullmatch(word):
            return out
        for pos, _name in POS:
            bases = [word]
            if pos in self._exc:
                line = self._exc[pos].find(word.encode("ascii"))
                if line is not None:
                    bases.extend(b.decode("ascii", "replace") for b in line.split()[1:])
            bases.extend(word[:len(word) - len(suf)] + rep for suf, rep in _RULES[pos]
                         if word.endswith(suf) and len(word) > len(suf) + 1)
            for base in dict.fromkeys(bases):
                if (pos, base) not in out and self.senses(pos, base):
                    out.append((pos, base))
        return out

    def _read_synset(self, pos: str, offset: int) -> Tuple[Tuple[str, ...], Tuple[Tuple[str, str, int, int, int], ...]]:
        """(words, pointers) of the synset at ``offset`` of ``data.POS``: words without their
        adjective markers ("long(a)"), pointers as (symbol, pos, offset, source, target)."""
        f = self._data[pos]
        path = os.path.join(self.folder, "data." + dict(POS)[pos])
        f.seek(offset)
        line = f.readline(MAX_LINE)
        fields = line.split(b"|", 1)[0].split()
        try:
            if int(fields[0]) != offset:
                raise ValueError
            n_words = int(fields[3], 16)
            words = tuple(re.sub(r"\([a-z]{1,2}\)$", "", w.decode("ascii", "replace")).casefold()
                          for w in fields[4:4 + 2 * n_words:2])
            at = 4 + 2 * n_words
            n_ptr = int(fields[at])
            pointers = []
            for i in range(n_ptr):
                sym, off, p, st = fields[at + 1 + 4 * i:at + 5 + 4 * i]
                pointers.append((sym.decode("ascii"), p.decode("ascii"), int(off), int(st[:2], 16), int(st[2:], 16)))
        except (ValueError, IndexError):
            raise MiniRagError("%s: byte %d: not a synset line" % (path, offset)) from None
        if len(words) != n_words:
            raise MiniRagError("%s: byte %d: not a synset line" % (path, offset))
        return words, tuple(pointers)

    def _related(self, word: str, senses: int = 1, derived: bool = False, tagged: bool = False,
                 mutual: bool = False) -> Tuple[str, ...]:
        """The other words of the first ``senses`` synsets of each of ``word``'s lemmas (in
        lemma, sense and synset order, each once, ``_`` as a space; with ``tagged``, of the
        senses seen in sense-tagged text only); with ``derived``, also the derivationally
        related forms (``+`` pointers) of ``word``'s own sense.  With ``mutual``, a word
        counts only when the synset is among its own first ``senses`` too: "part" is not
        "share" (a portion is not what "part" mostly means), "retain" is "keep"."""
        out: Dict[str, None] = {}
        lemmas = self.lemmas(word)
        own = {base for _pos, base in lemmas}

        def offer(pos: str, offset: int, other: str) -> None:
            if not mutual or offset in self.senses(pos, other, tagged)[:senses]:
                out.setdefault(other.replace("_", " "))
        for pos, base in lemmas:
            for offset in self.senses(pos, base, tagged)[:senses]:
                words, pointers = self._synset(pos, offset)
                for w in words:
                    offer(pos, offset, w)
                if not derived or base not in words:
                    continue
                number = words.index(base) + 1
                for sym, p, off, source, target in pointers:
                    if sym == "+" and source == number and p in self._data:
                        targets = self._synset(p, off)[0]
                        if 0 < target <= len(targets):
                            offer(p, off, targets[target - 1])
        for pos, base in lemmas:                 # spellings of the same word, in any of its senses
            for offset in self.senses(pos, base):
                for w in self._synset(pos, offset)[0]:
                    if spelling_variant(base, w):
                        out.setdefault(w)
        return tuple(w for w in out if w not in own and w.replace(" ", "_") not in own)


def spelling_variant(a: str, b: str) -> bool:
    """``b`` is another spelling of ``a``: two words of one synset (the caller's part) that
    begin alike (three letters), differ in length by at most two letters and share at least
    80% of their letters in order (``difflib``'s ratio): "licence" / "license", "colour" /
    "color", "analyse" / "analyze", "centre" / "center", "catalogue" / "catalog".  Phrases
    are not spellings.

    >>> [spelling_variant("licence", w) for w in ("license", "permit", "licence")]
    [True, False, False]
    """
    if a == b or "_" in a + b or a[:3] != b[:3] or abs(len(a) - len(b)) > 2:
        return False
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio() >= 0.8


def open_wordnet(spec: str) -> Optional[WordNet]:
    """The database ``spec`` names: ``""`` none; ``"auto"`` ``$MINI_RAG_WORDNET`` when set,
    else :data:`DEBIAN_PATH`, None when that folder has no database; a folder must hold one
    (else an error naming it).  Opened once per folder."""
    if not spec:
        return None
    if spec == "auto":
        folder = os.environ.get(ENV_PATH) or DEBIAN_PATH
        if not os.path.isfile(os.path.join(folder, "index.noun")) and not os.path.isfile(
                os.path.join(folder, "index.verb")):
            return None
        return _open(os.path.abspath(folder))
    return _open(os.path.abspath(spec))


@functools.lru_cache(maxsize=4)
def _open(folder: str) -> WordNet:
    if not os.path.isdir(folder):
        raise MiniRagError("[answer] wordnet: %s: no such folder" % folder)
    return WordNet(folder)


_WORD = re.compile(r"[a-z0-9]+(?:[-'][a-z0-9]+)*")


def wordnet_bridges(question: str, q_terms: Sequence[str], analyzer, wordnet: WordNet,
                    senses: int = 1, derived: bool = False, tagged: bool = False,
                    mutual: bool = False, longest: int = 3) -> Dict[str, List[FrozenSet[str]]]:
    """``{question term: [alternative term sets]}`` from WordNet: each word of the question
    (and each run of up to ``longest`` words that WordNet holds as one lemma, "court order")
    is covered by the other words of its first ``senses`` synsets (:meth:`WordNet.related`),
    analyzed as the question is; a run bridges each of its terms.  An alternative holding
    the term itself, or analyzing to nothing, is left out."""
    have = set(q_terms)
    words = _WORD.findall(question.casefold())
    out: Dict[str, List[FrozenSet[str]]] = {}
    for n in range(1, longest + 1):
        for i in range(len(words) - n + 1):
            run = words[i:i + n]
            terms = [t for t in dict.fromkeys(analyzer.analyze(" ".join(run))) if t in have]
            if not terms or (n > 1 and not wordnet.lemmas("_".join(run))):
                continue
            for other in wordnet.related("_".join(run), senses, derived, tagged, mutual):
                alt = Synonym(analyzer.analyze(other))
                for term in terms:
                    if alt and term not in alt and alt not in out.setdefault(term, []):
                        out[term].append(alt)
            for term in terms:
                if term in out and not out[term]:
                    del out[term]
    return out


def configured_bridges(question: str, q_terms: Sequence[str], analyzer,
                       answer_cfg: Dict[str, object]) -> Dict[str, List[FrozenSet[str]]]:
    """:func:`wordnet_bridges` with the ``[answer] wordnet*`` settings; ``{}`` when
    ``[answer] wordnet`` is empty or names ``"auto"`` and no database is installed."""
    wn = open_wordnet(str(answer_cfg.get("wordnet", "") or ""))
    if wn is None:
        return {}
    return wordnet_bridges(question, q_terms, analyzer, wn, senses=int(answer_cfg.get("wordnet_senses", 1)),
                           derived=bool(answer_cfg.get("wordnet_derived", False)),
                           tagged=bool(answer_cfg.get("wordnet_tagged", True)),
                           mutual=bool(answer_cfg.get("wordnet_mutual", True)))

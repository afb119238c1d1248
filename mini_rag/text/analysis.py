"""Text analysis: the one place where text becomes index and query terms.

Indexing and querying must analyse text identically, so every stage that needs
terms (the index, the retriever, term-overlap checks) goes through an
:class:`Analyzer`, and the analyzer's :meth:`Analyzer.settings` are written into
the index manifest so that an index built with other settings is detected.

Public API
==========

==============================  ==================================================
``tokenize(text)``              Unicode-aware tokens, in order; never drops a token.
``ENGLISH_STOPWORDS``           frozenset: the Snowball English stop list (174 words).
``Analyzer(...)``               tokenize -> drop short tokens -> drop stopwords -> stem
                                -> add the parts of hyphenated codes.
``Analyzer.analyze(text)``      list of terms in text order (repeats kept).
``Analyzer.term_counts(text)``  ``{term: count}`` in first-occurrence order.
``Analyzer.settings()``         JSON-serializable dict for the index manifest.
``Analyzer.from_settings(d)``   rebuild an analyzer from a manifest; rejects a
                                manifest written by a different tokenizer, stop list
                                or stemmer version (:class:`MiniRagError`).
``content_terms(text, a)``      distinct terms in first-occurrence order.
==============================  ==================================================

>>> tokenize("WH-12 ships 1,000 non-refundable units at 99.9% (ISO-27001).")
['wh-12', 'ships', '1000', 'non', 'refundable', 'units', 'at', '99.9', 'iso-27001']
>>> Analyzer().analyze("The customer's refunds were not processed")
['custom', 'refund', 'process']

Tokenizer rule (``tokenize``), exactly
--------------------------------------

1. Normalize: Unicode NFKC (fullwidth ``Ｑ１３`` -> ``Q13``, ligature ``ﬁ`` -> ``fi``,
   ``²`` -> ``2``), then ``str.casefold()`` when ``lowercase`` (``Straße`` ->
   ``strasse``), then the apostrophes U+2019, U+2018 and U+02BC become ``'``.
2. Find every match of ``TOKEN_PATTERN`` (below), left to right.  A *run* is one or
   more Unicode letters or digits (``[^\\W_]``: underscore and punctuation split),
   where combining marks (categories Mn, Mc, Me) continue a run, so Devanagari,
   Arabic with harakat, etc. stay whole.  A *part* is runs joined by single inner
   apostrophes (``customer's``, ``o'neill``, ``don't``; an apostrophe at either end
   is not part of a token).  A *group* is parts joined by single ``-``, ``/`` or
   ``.`` characters, or by a ``,`` that has a digit before it and exactly three
   digits after it (a thousands separator).
3. A group that contains a digit is one token, with thousands commas removed:
   codes and numbers ``wh-12``, ``2-8``, ``iso-27001``, ``q13``, ``2.5``,
   ``1,000`` -> ``1000``, ``2024-01-15``, ``24/7``, ``covid-19``.  A group without a
   digit is split at its ``-``, ``/`` and ``.``: ``non-refundable`` -> ``non``,
   ``refundable``; ``and/or`` -> ``and``, ``or``; ``e.g.`` -> ``e``, ``g``.
4. Everything else is a separator and is dropped, including ``%``, currency signs
   and a decimal comma (``99.9%`` -> ``99.9``; ``2,5`` -> ``2``, ``5``).  Tokens
   of any length are kept; dropping is the stopword filter's and ``min_token_len``'s
   job.  Scripts written without spaces (Chinese, Thai) are not segmented: a run of
   them is one token.

Analyzer steps, in order
------------------------

1. ``tokenize`` (with the analyzer's ``lowercase``).
2. Drop tokens shorter than ``min_token_len`` characters (default 1: keep all).
3. Drop stopwords (``stopwords="english"``).  Negations (``no``, ``nor``, ``not``)
   are in the Snowball list and are dropped: for ranking they are noise, and the
   answering stage reads raw text, not terms, when polarity matters.
4. Stem (``stemmer="english"``, :mod:`mini_rag.text.stem`, Snowball English 3.1.x) every
   token that contains no digit.  Codes and numbers are not stemmed, but a trailing
   possessive is removed from them (``covid-19's`` -> ``covid-19``).
5. Code parts (``code_parts=True``, the default): right after a code token that
   contains ``-`` or ``/``, also emit its parts, each put through steps 2-4 (parts
   without a digit are also split at ``.``): ``p53-dependent`` -> ``p53-dependent``,
   ``p53``, ``depend``; ``wh-12`` -> ``wh-12``, ``wh``, ``12``.  The whole code still
   matches exactly (and, being rarer, weighs more), while a question that writes only
   ``p53`` still finds ``p53-dependent``.  Measured with BM25 (k1=1.2, b=0.75,
   Lucene idf): SciFact test nDCG@10 0.6825 without parts, 0.6879 with them;
   Cranfield, CISI and Medline move by less than 0.002.

Determinism: the output depends only on the text and the settings.  Caches only
save time.  Which characters are letters or combining marks comes from the
running Python's ``unicodedata`` (Unicode 13.0 on Python 3.9, 15.1 on 3.13); the
versions differ only for characters assigned in between.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter
from itertools import chain
from typing import Any, Dict, List, Optional, Tuple

from ..errors import MiniRagError
from .stem import ALGORITHM as STEMMER_ALGORITHM
from .stem import stem as _stem

__all__ = [
    "Analyzer",
    "ENGLISH_STOPWORDS",
    "TOKENIZER_VERSION",
    "TOKEN_PATTERN",
    "content_terms",
    "tokenize",
]

#: Bumped whenever the tokenizer rule above changes; recorded in the manifest.
TOKENIZER_VERSION = "mini_rag-tokenizer-1"

# The Snowball English stop list, https://snowballstem.org/algorithms/english/stop.txt
# (snowballstem/snowball-website, algorithms/english/stop.txt): every uncommented
# entry, 174 words.  Not in it, on purpose upstream: "us" (United States), the
# auxiliaries will/shall/can/may/might/must (homonyms), and "never".
ENGLISH_STOPWORDS = frozenset("""
i me my myself we our ours ourselves you your yours yourself yourselves
he him his himself she her hers herself it its itself they them their theirs
themselves what which who whom this that these those
am is are was were be been being have has had having do does did doing
would should could ought
i'm you're he's she's it's we're they're i've you've we've they've
i'd you'd he'd she'd we'd they'd i'll you'll he'll she'll we'll they'll
isn't aren't wasn't weren't hasn't haven't hadn't doesn't don't didn't
won't wouldn't shan't shouldn't can't cannot couldn't mustn't
let's that's who's what's here's there's when's where's why's how's
a an the and but if or because as until while
of at by for with about against between into through during before after
above below to from up down in out on off over under
again further then once here there when where why how
all any both each few more most other some such
no nor not only own same so than too very
""".split())


def _stopword_digest(words) -> str:
    """sha256 of the sorted list, one word per line: the manifest's identity check."""
    return hashlib.sha256("\n".join(sorted(words)).encode("utf-8")).hexdigest()


_ENGLISH_STOPWORDS_SHA256 = _stopword_digest(ENGLISH_STOPWORDS)


def _combining_mark_class() -> str:
    """Regex class body for every combining mark (Mn, Mc, Me) in U+0300..U+1FFFF.

    Built from ``unicodedata`` at import (about 25 ms) instead of a hand-kept
    table, which would silently miss scripts.  Nothing below U+0300 is a mark.
    """
    category = unicodedata.category
    ranges = []
    start = None
    for cp in range(0x300, 0x20000):
        if category(chr(cp))[0] == "M":
            if start is None:
                start = cp
        elif start is not None:
            ranges.append((start, cp - 1))
            start = None
    if start is not None:
        ranges.append((start, 0x1FFFF))
    return "".join(re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
                   for a, b in ranges)


#: The token regex, with the placeholder ``{MARKS}`` standing for every combining
#: mark (see _combining_mark_class).  This exact string is recorded in the manifest.
TOKEN_PATTERN = (
    r"[^\W_]+(?:[{MARKS}]+[^\W_]*)*"                 # run
    r"(?:'[^\W_]+(?:[{MARKS}]+[^\W_]*)*)*"           # ... 'run  (part)
    r"(?:(?:[-/.]|(?<=\d),(?=\d\d\d(?!\d)))"         # joiner: - / . or 1,000-comma
    r"[^\W_]+(?:[{MARKS}]+[^\W_]*)*"
    r"(?:'[^\W_]+(?:[{MARKS}]+[^\W_]*)*)*)*"         # ... joined part (group)
)

_TOKEN_RE = re.compile(TOKEN_PATTERN.replace("{MARKS}", _combining_mark_class()))
_JOINERS_RE = re.compile(r"[-/.]")
_HAS_DIGIT = re.compile(r"\d").search
_CURLY_APOSTROPHES = ("\u2019", "\u2018", "\u02bc")
# Characters stripped from the edges of a white-space-delimited piece before testing
# whether the rest is one plain token (Analyzer._piece_terms).  None is a letter, digit
# or combining mark, so at the edge of a piece each is a separator (tested).
_EDGE_SEPARATORS = "'\"()[]{}<>.,;:!?-/*%$#@&+=~^|\\`\u201c\u201d\u00ab\u00bb\u2026\u2013\u2014"


def _normalize(text: str, lowercase: bool) -> str:
    text = unicodedata.normalize("NFKC", text)
    if lowercase:
        text = text.casefold()
    for ch in _CURLY_APOSTROPHES:
        if ch in text:
            text = text.replace(ch, "'")
    return text


def _split_group(raw: str) -> List[str]:
    """Step 3 of the rule for one regex match that is not a plain word."""
    if _HAS_DIGIT(raw):
        return [raw.replace(",", "")] if "," in raw else [raw]
    return _JOINERS_RE.split(raw)


def tokenize(text: str, lowercase: bool = True) -> List[str]:
    """Split *text* into tokens by the rule in the module docstring.

    >>> tokenize("Café ＱＡ: ’Q13’, 2-8 °C, GDPR-17 and/or e-mail")
    ['café', 'qa', 'q13', '2-8', 'c', 'gdpr-17', 'and', 'or', 'e', 'mail']
    """
    if not isinstance(text, str):
        raise MiniRagError(f"tokenize: text must be a str, got {type(text).__name__}")
    out: List[str] = []
    append = out.append
    for raw in _TOKEN_RE.findall(_normalize(text, lowercase)):
        if raw.isalnum():
            append(raw)  # the common case: a plain word or number
        elif "'" in raw and not _JOINERS_RE.search(raw) and "," not in raw:
            append(raw)  # customer's, don't
        else:
            out.extend(_split_group(raw))
    return out


_CHOICES = {
    "stopwords": ("english", "none"),
    "stemmer": ("english", "none"),
}
_SETTING_KEYS = (
    "tokenizer", "token_pattern", "normalization", "lowercase", "min_token_len",
    "stopwords", "stopwords_count", "stopwords_sha256", "stemmer", "stemmer_version",
    "code_parts",
)
_REQUIRED_KEYS = ("lowercase", "stopwords", "stemmer", "min_token_len", "code_parts")
_CODE_SPLIT_RE = re.compile(r"[-/]")


class Analyzer:
    """Text -> list of index/query terms.  See the module docstring for the steps.

    Parameters: ``lowercase`` (case-fold before tokenizing; default True),
    ``stopwords`` (``"english"`` or ``"none"``), ``stemmer`` (``"english"`` or
    ``"none"``), ``min_token_len`` (drop tokens with fewer characters; default 1),
    ``code_parts`` (also emit the parts of codes such as ``wh-12``; default True).

    With ``lowercase=False`` terms keep their case; the stopword test uses the
    case-folded token, and only tokens that are already lower case are stemmed
    (the Snowball algorithm is defined on lower-case words).

    >>> a = Analyzer(stopwords="none", stemmer="none")
    >>> a.analyze("The WH-12 pumps")
    ['the', 'wh-12', 'wh', '12', 'pumps']
    >>> Analyzer.from_settings(a.settings()) == a
    True
    """

    # White-space-delimited piece -> tuple of terms, and raw regex match -> tuple of
    # terms; each is cleared when it reaches this size.  Distinct pieces are few
    # compared with token occurrences (SciFact: 87,000 of 1.1 million), so hits dominate.
    CACHE_SIZE = 500_000
    # Whole text -> tuple of terms (:meth:`analyze`): the answering stages analyze the same
    # chunk texts, sentences and claims question after question.  Cleared when it holds
    # TEXT_CACHE_SIZE texts or TEXT_CACHE_CHARS characters; a text longer than
    # TEXT_CACHE_MAX characters is never kept.
    TEXT_CACHE_SIZE = 20_000
    TEXT_CACHE_CHARS = 8_000_000
    TEXT_CACHE_MAX = 20_000

    def __init__(self, lowercase: bool = True, stopwords: str = "english",
                 stemmer: str = "english", min_token_len: int = 1,
                 code_parts: bool = True) -> None:
        for name, flag in (("lowercase", lowercase), ("code_parts", code_parts)):
            if not isinstance(flag, bool):
                raise MiniRagError(f"analysis setting '{name}' must be true or false, got {flag!r}")
        for name, value in (("stopwords", stopwords), ("stemmer", stemmer)):
            if value not in _CHOICES[name]:
                allowed = ", ".join(repr(c) for c in _CHOICES[name])
                raise MiniRagError(f"analysis setting '{name}' must be one of {allowed}, got {value!r}")
        if isinstance(min_token_len, bool) or not isinstance(min_token_len, int) or min_token_len < 1:
            raise MiniRagError(
                f"analysis setting 'min_token_len' must be an integer >= 1, got {min_token_len!r}")
        self.lowercase = lowercase
        self.stopwords = stopwords
        self.stemmer = stemmer
        self.min_token_len = min_token_len
        self.code_parts = code_parts
        self._stop = ENGLISH_STOPWORDS if stopwords == "english" else frozenset()
        self._cache: Dict[str, Tuple[str, ...]] = {}
        self._raw_cache: Dict[str, Tuple[str, ...]] = {}
        self._text_cache: Dict[str, Tuple[str, ...]] = {}
        self._text_chars = 0

    # -- identity -------------------------------------------------------------

    def settings(self) -> Dict[str, Any]:
        """Everything that determines the terms, as a JSON-serializable dict.

        Written into the index manifest; :meth:`from_settings` reverses it.
        """
        english = self.stopwords == "english"
        return {
            "tokenizer": TOKENIZER_VERSION,
            "token_pattern": TOKEN_PATTERN,
            "normalization": "NFKC",
            "lowercase": self.lowercase,
            "min_token_len": self.min_token_len,
            "stopwords": self.stopwords,
            "stopwords_count": len(self._stop),
            "stopwords_sha256": _ENGLISH_STOPWORDS_SHA256 if english else _stopword_digest(()),
            "stemmer": self.stemmer,
            "stemmer_version": STEMMER_ALGORITHM if self.stemmer == "english" else None,
            "code_parts": self.code_parts,
        }

    @classmethod
    def from_settings(cls, settings: Dict[str, Any]) -> "Analyzer":
        """Rebuild the analyzer recorded in a manifest, or raise MiniRagError.

        Every recorded value must equal what this code would write for the same
        choices; a difference (an index built by another tokenizer version, stop
        list or stemmer version) is reported, never silently accepted.  All
        problems are reported together, one per line.
        """
        if not isinstance(settings, dict):
            raise MiniRagError(f"analysis settings must be a JSON object, got {type(settings).__name__}")
        unknown = sorted(k for k in settings if k not in _SETTING_KEYS)
        missing = [k for k in _REQUIRED_KEYS if k not in settings]
        problems = [f"unknown analysis setting {k!r}" for k in unknown]
        problems += [f"missing analysis setting {k!r}" for k in missing]
        if problems:
            raise MiniRagError("\n".join(problems))
        analyzer = cls(lowercase=settings["lowercase"], stopwords=settings["stopwords"],
                       stemmer=settings["stemmer"], min_token_len=settings["min_token_len"],
                       code_parts=settings["code_parts"])
        expected = analyzer.settings()
        for key in _SETTING_KEYS:
            if key in settings and settings[key] != expected[key]:
                problems.append(
                    f"analysis setting {key!r} was {settings[key]!r} when the index was built, "
                    f"this mini_rag uses {expected[key]!r}; rebuild the index")
        if problems:
            raise MiniRagError("\n".join(problems))
        return analyzer

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Analyzer):
            return NotImplemented
        return self.settings() == other.settings()

    def __hash__(self) -> int:
        return hash((self.lowercase, self.stopwords, self.stemmer, self.min_token_len,
                     self.code_parts))

    def __repr__(self) -> str:
        return (f"Analyzer(lowercase={self.lowercase!r}, stopwords={self.stopwords!r}, "
                f"stemmer={self.stemmer!r}, min_token_len={self.min_token_len!r}, "
                f"code_parts={self.code_parts!r})")

    # -- analysis -------------------------------------------------------------

    def _terms_of(self, raw: str) -> Tuple[str, ...]:
        """Steps 2-5 for one regex match (which may split into several tokens)."""
        if raw.isalpha():
            # The common case, a plain word (no digit, so no code parts): steps 2-4 inline.
            if len(raw) < self.min_token_len:
                return ()
            if self._stop and (raw if self.lowercase else raw.casefold()) in self._stop:
                return ()
            if self.stemmer == "english" and (self.lowercase or raw == raw.lower()):
                raw = _stem(raw)
            return (raw,) if raw else ()
        if raw.isalnum() or ("'" in raw and not _JOINERS_RE.search(raw) and "," not in raw):
            tokens = [raw]
        else:
            tokens = _split_group(raw)
        terms: List[str] = []
        for tok in tokens:
            self._add_term(tok, terms)
            if self.code_parts and _HAS_DIGIT(tok) and _CODE_SPLIT_RE.search(tok):
                if self.stemmer == "english" and tok.endswith("'s"):
                    tok = tok[:-2]
                for part in _CODE_SPLIT_RE.split(tok):
                    if _HAS_DIGIT(part):
                        self._add_term(part, terms)
                    else:
                        for piece in _JOINERS_RE.split(part):
                            self._add_term(piece, terms)
        return tuple(terms)

    def _add_term(self, tok: str, terms: List[str]) -> None:
        """Steps 2-4 for one token: length filter, stopword filter, stemming."""
        if len(tok) < self.min_token_len:  # also drops "" left by a split
            return
        if self._stop and (tok if self.lowercase else tok.casefold()) in self._stop:
            return
        if self.stemmer == "english":
            if _HAS_DIGIT(tok):
                # Codes are not stemmed, but "covid-19's" means "covid-19".
                if tok.endswith("'s"):
                    tok = tok[:-2]
            elif self.lowercase or tok == tok.lower():
                tok = _stem(tok)
        if tok:
            terms.append(tok)

    def _raw_terms(self, raw: str) -> Tuple[str, ...]:
        """Steps 2-5 for one regex match, through the bounded match cache."""
        terms = self._raw_cache.get(raw)
        if terms is None:
            terms = self._terms_of(raw)
            if len(self._raw_cache) >= self.CACHE_SIZE:
                self._raw_cache.clear()
            self._raw_cache[raw] = terms
        return terms

    def _piece_terms(self, piece: str) -> Tuple[str, ...]:
        """Terms of one white-space-delimited piece of normalized text.

        A piece that is a plain word or number with separators around it (``(cells,``)
        is that one regex match, found without running the regex: the characters of
        ``_EDGE_SEPARATORS`` are never part of a token at the edge of a piece (a joiner
        or an apostrophe needs a letter or digit on both sides).
        """
        core = piece.strip(_EDGE_SEPARATORS)
        if not core:
            return ()
        if core.isalnum():
            return self._raw_terms(core)
        raws = _TOKEN_RE.findall(piece)
        if len(raws) == 1:
            return self._raw_terms(raws[0])
        return tuple(chain.from_iterable(map(self._raw_terms, raws)))

    def analyze(self, text: str) -> List[str]:
        """Terms of *text* in order, repeats kept (term frequencies need them).

        >>> Analyzer().analyze("Refunds: 2 refunded orders, 1,000 units (WH-12).")
        ['refund', '2', 'refund', 'order', '1000', 'unit', 'wh-12', 'wh', '12']

        How it is fast: no token match crosses white space (white space is neither a
        letter, a digit, a combining mark nor a joiner), so the regex matches of a
        text are those of its white-space-delimited pieces, in order.  Each distinct
        piece's terms are computed once and cached (``piece -> tuple of terms``); a
        text whose pieces are all cached is answered by one C-level
        ``chain.from_iterable(map(cache.__getitem__, pieces))``, with no Python code
        per token; a whole text analyzed before comes from a bounded text cache
        (``TEXT_CACHE_*``).  The caches never change a result (tests compare with the plain
        rule on every white-space character and on edge cases).
        """
        if not isinstance(text, str):
            raise MiniRagError(f"analyze: text must be a str, got {type(text).__name__}")
        known = self._text_cache.get(text)
        if known is not None:
            return list(known)
        pieces = _normalize(text, self.lowercase).split()
        cache = self._cache
        try:
            out = list(chain.from_iterable(map(cache.__getitem__, pieces)))
        except KeyError:
            out = self._fill(pieces)
        if len(text) <= self.TEXT_CACHE_MAX:
            if len(self._text_cache) >= self.TEXT_CACHE_SIZE or \
                    self._text_chars + len(text) > self.TEXT_CACHE_CHARS:
                self._text_cache.clear()
                self._text_chars = 0
            self._text_cache[text] = tuple(out)
            self._text_chars += len(text)
        return out

    def _fill(self, pieces: List[str]) -> List[str]:
        """Terms of ``pieces``, computing and caching the pieces not seen before."""
        cache = self._cache
        get = cache.get
        piece_terms = self._piece_terms
        out: List[str] = []
        for piece in pieces:
            terms = get(piece)
            if terms is None:
                if len(cache) >= self.CACHE_SIZE:
                    cache.clear()  # clear-when-full: cheaper than eviction; results unchanged
                terms = cache[piece] = piece_terms(piece)
            out += terms
        return out

    __call__ = analyze

    def term_counts(self, text: str) -> Dict[str, int]:
        """``{term: count}`` of *text*, in first-occurrence order: ``Counter(analyze(text))``
        without the intermediate list (the index's bag of words)."""
        if not isinstance(text, str):
            raise MiniRagError(f"analyze: text must be a str, got {type(text).__name__}")
        pieces = _normalize(text, self.lowercase).split()
        try:
            return dict(Counter(chain.from_iterable(map(self._cache.__getitem__, pieces))))
        except KeyError:
            return dict(Counter(self._fill(pieces)))


def content_terms(text: str, analyzer: Optional[Analyzer] = None) -> List[str]:
    """Distinct terms of *text* in first-occurrence order (for term-overlap checks).

    >>> content_terms("Refund the refunded order")
    ['refund', 'order']
    """
    terms = (analyzer or _DEFAULT).analyze(text)
    return list(dict.fromkeys(terms))


_DEFAULT = Analyzer()

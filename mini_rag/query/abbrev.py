"""Abbreviations a corpus defines, so that ``CCB`` and ``Change Control Board`` match.

A document that writes "approved by the Change Control Board (CCB)" and later "the CCB
meets weekly" answers "When does the Change Control Board meet?", but no stem of the
question is in the answering sentence.  The definitions are found the way Schwartz and
Hearst do it ("A simple algorithm for identifying abbreviation definitions in biomedical
text", Pacific Symposium on Biocomputing 2003):

* a *short form* is a parenthesised token of 2 to 10 characters with at least two capital
  letters, or the token just before a parenthesis that holds at least two words: both
  ``Change Control Board (CCB)`` and ``RPO (recovery point objective)`` define one;
* its *long form* is taken from the words on the other side of the parenthesis (at most
  ``min(len(short) + 5, 2 * len(short))`` of them, within the sentence): the letters of
  the short form are matched right to left against the long form's characters, the first
  one at the start of a word (``_match``); the long form starts at the word where the
  first letter matched.  No match, no definition: "(see below)" defines nothing; nor
  does a long form of one word ("per workspace (WS)").

``abbreviation_table(index)`` scans every chunk once per index and caches the result; the
answering stage (``relevance.expansion_bridges``) turns it into bridges: a question's
short form is covered by a chunk holding all terms of one of its long forms, and a
question holding a whole long form is covered, term by term, by a chunk holding the short
form.  Retrieval does not use it: ranking stays plain BM25.
"""

import re
import weakref
from typing import Any, Dict, FrozenSet, List, Optional, Tuple

__all__ = ["find_abbreviations", "abbreviation_table"]

_PAREN = re.compile(r"\(([^()]{1,120})\)")
_TOKEN = re.compile(r"[^\s()]+")
_SENTENCE_END = re.compile(r"[.!?;:]\s|\n\s*\n")


def _is_short_form(token: str) -> bool:
    """2-10 characters, starting with a letter or digit, at least two capitals, no spaces."""
    return (2 <= len(token) <= 10 and token[0].isalnum() and " " not in token
            and sum(1 for c in token if c.isupper()) >= 2)


def _match(short: str, long: str) -> Optional[str]:
    """The part of ``long`` that ``short`` abbreviates, or None (Schwartz & Hearst's rule).

    >>> _match("CCB", "approved by the Change Control Board")
    'Change Control Board'
    >>> _match("HTTP", "the protocol") is None
    True
    """
    s = len(short) - 1
    i = len(long) - 1
    while s >= 0:
        c = short[s].lower()
        if not c.isalnum():
            s -= 1
            continue
        while i >= 0 and (long[i].lower() != c or (s == 0 and i > 0 and long[i - 1].isalnum())):
            i -= 1
        if i < 0:
            return None
        i -= 1
        s -= 1
    start = long.rfind(" ", 0, i + 1) + 1
    out = long[start:].strip()
    return out or None


def _clean(token: str) -> str:
    return token.strip(".,;:!?\"'`*_[]{}<>")


def find_abbreviations(text: str) -> List[Tuple[str, str]]:
    """``(short, long)`` for every abbreviation ``text`` defines, in text order.

    >>> find_abbreviations("Major changes go to the Change Control Board (CCB). The CCB meets.")
    [('CCB', 'Change Control Board')]
    >>> find_abbreviations("**RPO (recovery point objective)**: the maximum data loss.")
    [('RPO', 'recovery point objective')]
    """
    out = []
    for m in _PAREN.finditer(text):
        inside = " ".join(m.group(1).split())
        before = text[:m.start()]
        cut = max((e.end() for e in _SENTENCE_END.finditer(before)), default=0)
        words = [w for w in (_clean(t) for t in _TOKEN.findall(before[cut:])) if w]
        inner_words = [w for w in (_clean(t) for t in inside.split()) if w]
        if len(inner_words) == 1 and _is_short_form(inner_words[0]):
            short = inner_words[0]
            window = words[-min(len(short) + 5, 2 * len(short)):]
            long = _match(short, " ".join(window))
            if long and long.casefold() != short.casefold() and " " in long:
                out.append((short, long))
        elif len(inner_words) >= 2 and words and _is_short_form(words[-1]):
            short = words[-1]
            inner = " ".join(inner_words[:min(len(short) + 5, 2 * len(short))])
            # The long form must start the parenthesis: match against it, anchored left.
            long = _match(short, inner)
            if long and inner.startswith(long.split(" ", 1)[0]) and long.casefold() != short.casefold():
                out.append((short, long))
    return out


_CACHE: "weakref.WeakKeyDictionary[Any, Dict[str, List[FrozenSet[str]]]]" = weakref.WeakKeyDictionary()


def abbreviation_table(index: Any, analyzer: Any = None) -> Dict[str, List[FrozenSet[str]]]:
    """``{short-form term: [long-form term sets]}`` over every chunk of ``index``.

    Terms are ``analyzer``'s (the index's by default); a short form that analyzes to no
    term or to more than one, and a long form whose terms are only stopwords, are skipped.
    Alternatives are sorted, so the table does not depend on chunk order.
    """
    analyzer = analyzer or getattr(index, "analyzer", None)
    chunks = getattr(index, "chunks", None)
    if analyzer is None or chunks is None:
        return {}
    return cached_per_index(_CACHE, index, lambda: _build_table(chunks, analyzer))


def cached_per_index(cache: "weakref.WeakKeyDictionary[Any, Any]", index: Any, build):
    """``cache[index]``, made by ``build()`` the first time; an index that cannot be a
    weak key (a plain object of a test) is built for every call."""
    try:
        cached = cache.get(index)
    except TypeError:
        cached = None
    if cached is not None:
        return cached
    out = build()
    try:
        cache[index] = out
    except TypeError:
        pass
    return out


def _build_table(chunks: Any, analyzer: Any) -> Dict[str, List[FrozenSet[str]]]:
    table: Dict[str, set] = {}
    for chunk in chunks:
        text = getattr(chunk, "text", "")
        if "(" not in text:
            continue
        for short, long in find_abbreviations(text):
            s_terms = analyzer.analyze(short)
            l_terms = frozenset(t for t in analyzer.analyze(long) if t not in s_terms)
            if len(s_terms) != 1 or not l_terms:
                continue
            table.setdefault(s_terms[0], set()).add(l_terms)
    return {s: sorted(alts, key=sorted) for s, alts in sorted(table.items())}

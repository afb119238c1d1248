"""English (Porter2) stemmer: the current Snowball English algorithm, Snowball 3.1.x.

This module reduces one lower-case English word to its stem.  It implements the
algorithm published at https://snowballstem.org/algorithms/english/stemmer.html
as of Snowball 3.1.0 / 3.1.1 (``algorithms/english.sbl`` git blob
``d9be6bbdc03924eabd96fa601f262c9de37805f0`` in snowballstem/snowball), written
here from the published description, not translated from generated code.  It
reproduces ``snowball-data/english/output.txt`` for every one of the 42,649 words
of ``english/voc.txt`` (checked by ``tests/test_stem.py``).

This is *not* the "classic" Porter2 of 2006-2021 that most older ports implement.
The Snowball 3.0/3.1 changes it includes:

* undoubling in step 1b is not done after exactly ``a``, ``e`` or ``o``
  (``added`` -> ``add``, not ``ad``);
* ``-ogist`` -> ``-og`` in step 2 (``geologist`` -> ``geolog``);
* R1 exceptions for words starting ``gener commun arsen emerg inter later organ
  past univers`` (``university`` -> ``universiti``, ``internal`` -> ``internal``);
* ``past`` counts as a short syllable (``pasted`` -> ``paste``);
* ``-ing`` exceptions inside step 1b: consonant + ``ying`` -> ``ie`` (``vying``
  -> ``vie``), and ``inning outing canning herring earring evening`` are kept;
* ``-eed`` exceptions inside step 1b: ``proceed exceed succeed`` are kept;
* whole-word exceptions ``skis skies idly gently ugly early only singly`` and the
  invariants ``sky news howe atlas cosmos bias andes``.

Public functions
================

=====================  ============================================================
``stem(word)``         Porter2 stem of one lower-case word (no cache).
``Stemmer()``          callable object with a bounded dict cache; use it to stem
                       millions of tokens (unique words are few).
``ALGORITHM``          the version string recorded in index manifests.
=====================  ============================================================

>>> [stem(w) for w in ("consign", "generously", "dying", "skies", "news", "evening")]
['consign', 'generous', 'die', 'sky', 'news', 'evening']
>>> Stemmer()("universities")
'universiti'

Input must already be lower case (``mini_rag.text.analysis`` case-folds first).  Letters
outside a-z are treated as non-vowels, as the Snowball implementation does; an
upper-case ``Y`` in the input would be taken for the algorithm's internal marker, so
callers must not pass upper case.  Words of one or two characters are returned
unchanged.
"""

from __future__ import annotations

import re

__all__ = ["ALGORITHM", "Stemmer", "stem"]

#: Recorded in the index manifest so that an index built with another stemmer
#: version is detected as stale.
ALGORITHM = "snowball-english-3.1.1 (english.sbl d9be6bbdc03924eabd96fa601f262c9de37805f0)"

_VOWELS = frozenset("aeiouy")
# A short syllable's final non-vowel may not be w, x or Y (Y = a y marked as consonant).
_NOT_SHORT_FINAL = frozenset("aeiouywxY")
_DOUBLES = ("bb", "dd", "ff", "gg", "mm", "nn", "pp", "rr", "tt")
_VALID_LI = frozenset("cdeghkmnrt")

# R1 starts right after the first vowel followed by a non-vowel.  'Y' and "'" are
# non-vowels, which the negated class gives for free.
_VC = re.compile(r"[aeiouy][^aeiouy]")

# Words whose R1 is set to "the remainder after this prefix", so that the prefix is
# never stemmed into (generate/general/generous stay apart).  Checked longest first;
# no prefix here is a prefix of another, so order only matters for speed.
_R1_PREFIXES = ("univers", "commun", "arsen", "emerg", "gener", "inter", "later",
                "organ", "past")

# Whole-word exceptions, looked up before anything else (Snowball's exception1).
_EXCEPTIONS = {
    "skis": "ski",
    "skies": "sky",
    "idly": "idl",
    "gently": "gentl",
    "ugly": "ugli",
    "early": "earli",
    "only": "onli",
    "singly": "singl",
    "sky": "sky",
    "news": "news",
    "howe": "howe",
    "atlas": "atlas",
    "cosmos": "cosmos",
    "bias": "bias",
    "andes": "andes",
}

# Step 1b: what precedes -ing / -eed when the word must be left alone.
_ING_KEEP = frozenset(("inn", "out", "cann", "herr", "earr", "even"))
_EED_KEEP = frozenset(("proc", "exc", "succ"))

# Steps 2 and 3: (suffix, replacement), longest suffix first so that the first match
# is the longest, as Snowball's `among` requires.  A replacement of None marks a
# suffix with an extra condition handled in code.
_STEP2 = sorted([
    ("tional", "tion"), ("enci", "ence"), ("anci", "ance"), ("abli", "able"),
    ("entli", "ent"), ("izer", "ize"), ("ization", "ize"), ("ational", "ate"),
    ("ation", "ate"), ("ator", "ate"), ("alism", "al"), ("aliti", "al"),
    ("alli", "al"), ("fulness", "ful"), ("ousli", "ous"), ("ousness", "ous"),
    ("iveness", "ive"), ("iviti", "ive"), ("biliti", "ble"), ("bli", "ble"),
    ("ogist", "og"), ("ogi", None), ("fulli", "ful"), ("lessli", "less"),
    ("li", None),
], key=lambda pair: -len(pair[0]))

_STEP3 = sorted([
    ("tional", "tion"), ("ational", "ate"), ("alize", "al"), ("icate", "ic"),
    ("iciti", "ic"), ("ical", "ic"), ("ful", ""), ("ness", ""), ("ative", None),
], key=lambda pair: -len(pair[0]))

_STEP4 = sorted([
    "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment",
    "ent", "ism", "ate", "iti", "ous", "ive", "ize", "ion",
], key=lambda s: -len(s))


def _by_last_letter(entries, suffix_of):
    """``{last letter: entries ending in it}``, each list in the original (longest-first)
    order: a step looks only at the suffixes its word can end with."""
    table: dict = {}
    for e in entries:
        table.setdefault(suffix_of(e)[-1], []).append(e)
    return {ch: tuple(lst) for ch, lst in table.items()}


_STEP2_BY_LAST = _by_last_letter(_STEP2, lambda e: e[0])
_STEP3_BY_LAST = _by_last_letter(_STEP3, lambda e: e[0])
_STEP4_BY_LAST = _by_last_letter(_STEP4, lambda e: e)
_NONE: tuple = ()


def _ends_short_syllable(w: str, end: int) -> bool:
    """True if w[:end] ends in a short syllable.

    Either (a) non-vowel, vowel, non-vowel other than w/x/Y; or (b) the whole of
    w[:end] is vowel + non-vowel; or (c) w[:end] is exactly "past" (Snowball 3.0).
    """
    if end >= 3:
        if (w[end - 1] not in _NOT_SHORT_FINAL and w[end - 2] in _VOWELS
                and w[end - 3] not in _VOWELS):
            return True
        return end == 4 and w.startswith("past")
    return end == 2 and w[0] in _VOWELS and w[1] not in _VOWELS


def _step1b(w: str, p1: int) -> str:
    """Remove -eed/-eedly/-ed/-edly/-ing/-ingly, then tidy the stem's end."""
    if w.endswith("eedly"):
        cut = len(w) - 5
    elif w.endswith("eed"):
        cut = len(w) - 3
    else:
        cut = -1
    if cut >= 0:
        # The longest suffix is -eed(ly); -ed(ly) is never tried for it.
        if w[:cut] in _EED_KEEP or cut < p1:
            return w
        return w[:cut] + "ee"

    if w.endswith("ed"):
        cut = len(w) - 2
    elif w.endswith("edly"):
        cut = len(w) - 4
    elif w.endswith("ing"):
        cut = len(w) - 3
        stem_part = w[:cut]
        # dying -> die, vying -> vie; inning, outing, evening... stay as they are.
        if cut == 2 and stem_part[1] == "y" and stem_part[0] not in _VOWELS:
            return stem_part[0] + "ie"
        if stem_part in _ING_KEEP:
            return w
    elif w.endswith("ingly"):
        cut = len(w) - 5
    else:
        return w

    stem_part = w[:cut]
    for ch in stem_part:
        if ch in _VOWELS:
            break
    else:
        return w  # no vowel before the suffix: not a suffix (e.g. "bed", "sing")
    w = stem_part
    if w.endswith(("at", "bl", "iz")):
        return w + "e"
    if w.endswith(_DOUBLES):
        # Undouble (hopp -> hop) unless the whole stem is a/e/o + double (add, egg, off).
        if len(w) == 3 and w[0] in "aeo":
            return w
        return w[:-1]
    if p1 >= len(w) and _ends_short_syllable(w, len(w)):
        return w + "e"  # hop -> hope
    return w


def stem(word: str) -> str:
    """Return the Snowball English (3.1.x) stem of *word*, which must be lower case.

    >>> stem("generously"), stem("added"), stem("geologists"), stem("there's")
    ('generous', 'add', 'geolog', 'there')
    """
    exc = _EXCEPTIONS.get(word)
    if exc is not None:
        return exc
    if len(word) < 3:
        return word

    w = word[1:] if word[0] == "'" else word
    if not w:
        return w

    # Mark consonant y: initial y, and y after a vowel, become 'Y'.
    has_y = "y" in w
    if has_y:
        chars = list(w)
        if chars[0] == "y":
            chars[0] = "Y"
        for i in range(1, len(chars)):
            if chars[i] == "y" and chars[i - 1] in _VOWELS:
                chars[i] = "Y"
        w = "".join(chars)
        has_y = "Y" in w

    # Regions R1 and R2 (as start offsets; offset == len(w) means empty region).
    n = len(w)
    p1 = -1
    if w[0] in "ucaegiolp":  # cheap pre-filter on the exception prefixes' initials
        for prefix in _R1_PREFIXES:
            if w.startswith(prefix):
                p1 = len(prefix)
                break
    if p1 < 0:
        m = _VC.search(w)
        p1 = m.end() if m else n
    m = _VC.search(w, p1)
    p2 = m.end() if m else n

    # Step 0: the longest of ' 's 's' is removed.
    if w.endswith("'"):
        w = w[:-3] if w.endswith("'s'") else w[:-1]
    elif w.endswith("'s"):
        w = w[:-2]

    # Step 1a.
    if w.endswith("s"):
        if w.endswith("sses"):
            w = w[:-2]
        elif w.endswith(("ied", "ies")):
            w = w[:-2] if len(w) > 4 else w[:-1]
        elif w.endswith(("us", "ss")):
            pass
        else:
            # Delete s if a vowel occurs before the letter preceding it (gaps, not gas).
            for ch in w[:-2]:
                if ch in _VOWELS:
                    w = w[:-1]
                    break
    elif w.endswith("ied"):
        w = w[:-2] if len(w) > 4 else w[:-1]

    # Step 1b.
    if w.endswith(("ed", "edly", "ing", "ingly")):
        w = _step1b(w, p1)

    # Step 1c: y/Y -> i after a non-vowel that is not the first letter (cry -> cri).
    if len(w) > 2 and w[-1] in "yY" and w[-2] not in _VOWELS:
        w = w[:-1] + "i"

    # Step 2: longest suffix; acts only if that suffix lies in R1.
    if w:
        for suffix, repl in _STEP2_BY_LAST.get(w[-1], _NONE):
            if w.endswith(suffix):
                cut = len(w) - len(suffix)
                if cut >= p1:
                    if repl is not None:
                        w = w[:cut] + repl
                    elif suffix == "ogi":
                        if cut > 0 and w[cut - 1] == "l":
                            w = w[:cut] + "og"
                    elif cut > 0 and w[cut - 1] in _VALID_LI:  # "li"
                        w = w[:cut]
                break

    # Step 3: longest suffix, in R1; -ative only in R2.
    if w:
        for suffix, repl in _STEP3_BY_LAST.get(w[-1], _NONE):
            if w.endswith(suffix):
                cut = len(w) - len(suffix)
                if cut >= p1:
                    if repl is not None:
                        w = w[:cut] + repl
                    elif cut >= p2:  # "ative"
                        w = w[:cut]
                break

    # Step 4: longest suffix, in R2; -ion only after s or t.
    if w:
        for suffix in _STEP4_BY_LAST.get(w[-1], _NONE):
            if w.endswith(suffix):
                cut = len(w) - len(suffix)
                if cut >= p2:
                    if suffix != "ion" or (cut > 0 and w[cut - 1] in "st"):
                        w = w[:cut]
                break

    # Step 5: -e in R2, or in R1 when not after a short syllable; -l after l in R2.
    last = w[-1:] if w else ""
    if last == "e":
        cut = len(w) - 1
        if cut >= p2 or (cut >= p1 and not _ends_short_syllable(w, cut)):
            w = w[:cut]
    elif last == "l":
        cut = len(w) - 1
        if cut >= p2 and w[cut - 1] == "l":
            w = w[:cut]

    if has_y:
        w = w.replace("Y", "y")
    return w


class Stemmer:
    """:func:`stem` with a bounded dict cache.

    Indexing stems millions of tokens drawn from a vocabulary of a few hundred
    thousand words, so a cache hit is the common case.  When the cache reaches
    *cache_size* entries it is cleared rather than evicted one by one: cheaper per
    call, and the results never depend on the cache (stemming is a pure function).

    >>> s = Stemmer(cache_size=2)
    >>> s("running"), s("runs"), s("ran")
    ('run', 'run', 'ran')
    """

    __slots__ = ("_cache", "_cache_size")

    algorithm = ALGORITHM

    def __init__(self, cache_size: int = 200_000) -> None:
        if cache_size < 0:
            raise ValueError(f"cache_size must be >= 0, got {cache_size!r}")
        self._cache: dict = {}
        self._cache_size = cache_size

    def __call__(self, word: str) -> str:
        result = self._cache.get(word)
        if result is None:
            result = stem(word)
            if self._cache_size:
                if len(self._cache) >= self._cache_size:
                    self._cache.clear()
                self._cache[word] = result
        return result

    stem = __call__

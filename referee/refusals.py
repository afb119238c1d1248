"""Reading 2: refusals decided by the answer's bottom line (refusal, partial refusal, answer)."""
from __future__ import annotations

import math
import re

from .base import REFUSAL
from .lexicon import (_CLAUSE_RX, _COMMIT_RX, _CONCLUSION_RX, _CONTRAST_RX, _DECLINE_SOURCES,
    _DECLINE_TRIGGERS, _DISCLAIMER_SOURCES, _DISCLAIMER_TRIGGERS, _EN_FUNCTION, _GENERIC_RX, _HEDGE_RX,
    _PASSAGE_RX, _POINTER_SOURCES, _PRECISION_RX, _TOKEN_LABEL_RX)
from .text import split_sentences

# ---- reading 2: refusals
# A response is a refusal when what it asserts is that it cannot answer and it gives no
# substantive answer; a caveat inside an answer keeps it an answer; a response that answers
# part and declines part is a partial refusal (an answer for the seed's metrics).  How it is
# read (docs/refusals.md has the figures on labelled real LLM output):
#   1. the token: the claim is the refusal token once Markdown, quotes, a label ("Answer:")
#      and closing punctuation are taken off ("**Not in context.**");
#   2. fast path: no decline cue in the text -> an answer;
#   3. sentences: each is a decline (a cue below, or a [scorer] refusal/cutoff pattern), a
#      pleasantry or pointer elsewhere ("you can check the official website"), or content;
#      declines and pointers only -> a refusal; no decline -> an answer;
#   4. both: the bottom line decides (read_refusal): content first is an answer unless a
#      firm decline concludes it; a decline first is a refusal unless a contrast ("but",
#      "however") brings content after it; an answer with a firm decline after its content
#      is a partial refusal;
#   5. an English response that opens with a decline or a disclaimer and goes on with content
#      is decided by REFUSAL_MODEL instead (fitted on labelled LLM output; below).
# Sentences are cut by split_sentences (one splitter with reading 4), then by line.
# Texts longer than REFUSAL_WINDOW characters are read as their first and last halves of
# it: a response asserts its bottom line at its start or its end.

REFUSAL_WINDOW = 4000
KIND_ANSWER, KIND_REFUSAL, KIND_PARTIAL = "answer", "refusal", "partial_refusal"
READERS = ("builtin", "exact")

# The decline, disclaimer and pointer cues, their trigger words and the cue words of
# REFUSAL_MODEL's features are word data: lexicon.py, with the data that justified them.
_DIGIT_RX = re.compile(r"\d")
_PROPER_RX = re.compile(r"(?<=[a-z,;:)] )[A-Z][a-z]+")
_TOKEN_TRIM_RX = re.compile(r"^[\s*_`~>#\"'\u2018\u2019\u201c\u201d\u00ab\u00bb()\[\]-]+|[\s*_`~\"'\u2018\u2019\u201c\u201d\u00ab\u00bb()\[\].!?,;:-]+$")
_WORDS_RX = re.compile(r"[^\W\d_]{2,}")
_BULLET_RX = re.compile(r"^\s*(?:[-*\u2022]|\d{1,3}[.)])\s+")
_DECLINE_GROUPS: tuple = ()      # (trigger words, compiled cues) per group: compiled when first read


def _decline_groups() -> tuple:
    global _DECLINE_GROUPS
    if not _DECLINE_GROUPS:
        _DECLINE_GROUPS = tuple((frozenset(_DECLINE_TRIGGERS[g].split()),
                                 re.compile("|".join("(?:%s)" % s for s in src), re.I | re.M))
                                for g, src in _DECLINE_SOURCES.items())
    return _DECLINE_GROUPS


_POINTER_RX = re.compile("|".join("(?:%s)" % s for s in _POINTER_SOURCES), re.I | re.M)
_DISCLAIMER_RX = re.compile("|".join("(?:%s)" % s for s in _DISCLAIMER_SOURCES), re.I | re.M)

# Punctuation to spaces (apostrophes and "/" kept: "can't", "n/a"), to split a text into words.
_SPLIT_TABLE = str.maketrans({c: " " for c in "!\"#$%&()*+,-.:;<=>?@[\\]^_`{|}~\u201c\u201d\u2018\u00ab\u00bb\u2013\u2014\u2026\u00bf\u00a1"})
_SPLIT_BYTES = bytes(32 if c in _SPLIT_TABLE and c < 128 else c for c in range(256))    # _SPLIT_TABLE on ASCII


_ANY_TRIGGER = frozenset(" ".join(_DECLINE_TRIGGERS.values()).split()) | _DISCLAIMER_TRIGGERS


def _decline_rxs(low: str) -> tuple:
    """The decline-cue groups whose trigger words the lower-cased text holds, and whether the
    disclaimer cues may apply."""
    words = (low.encode().translate(_SPLIT_BYTES).decode() if low.isascii() else low.translate(_SPLIT_TABLE)).split()
    if "n't" in low or "n\u2019t" in low:
        words.append("not")
    elif _ANY_TRIGGER.isdisjoint(words):     # no trigger word at all (most answers): no group
        return (), False
    words = set(words)
    groups = tuple(rx for trig, rx in (_DECLINE_GROUPS or _decline_groups()) if not trig.isdisjoint(words))
    return groups, not _DISCLAIMER_TRIGGERS.isdisjoint(words)


# _SPLIT_BYTES with the ASCII separators str.split() splits at and bytes.split() does not
# (\x1c-\x1f): the bytes words of an ASCII text are then its str words (plain_answer)
_SPLIT_WS_BYTES = bytes(32 if 0x1c <= c <= 0x1f else b for c, b in enumerate(_SPLIT_BYTES))
_ANY_TRIGGER_BYTES = frozenset(w.encode() for w in _ANY_TRIGGER if w.isascii())


def plain_answer(text: str, low: str, token: str, first: str) -> bool:
    """Whether ``read_refusal(text, token)`` is surely ``(answer, "", 0)``, found without the
    reader: ``text`` (stripped; ``low``: its lower-cased form) is ASCII, at most REFUSAL_WINDOW
    characters, holds no trigger word of any decline cue (_decline_rxs: its words, no "n't"),
    and cannot be the token (refusal_layout's "token" case needs ``first``, the token's first
    word, in a text at most 60 characters longer than the token).  False proves nothing."""
    if len(text) > REFUSAL_WINDOW or not low.isascii() or "n't" in low or low == token:
        return False
    if len(text) <= len(token) + 60 and (not token or first in low):
        return False
    return _ANY_TRIGGER_BYTES.isdisjoint(low.encode().translate(_SPLIT_WS_BYTES).split())


def token_form(text: str) -> str:
    """The claim with Markdown, quotes, a leading label and closing punctuation taken off, lower-cased."""
    t = text.strip()
    if len(t) > 200:
        return t.lower()
    prev = None
    while prev != t:
        prev = t
        t = _TOKEN_TRIM_RX.sub("", t)
        t = _TOKEN_LABEL_RX.sub("", t)
    return " ".join(t.lower().split())


def sentences(text: str) -> List[str]:
    """Sentences (``split_sentences``) and lines of ``text``; a contrast clause (", but ...") is a
    unit of its own; list bullets and Markdown emphasis are taken off."""
    out = []
    for start, end in split_sentences(text):
        for part in text[start:end].split("\n"):
            part = _BULLET_RX.sub("", part).strip(" \t*_#>")
            if _WORDS_RX.search(part):
                out.extend(c for c in _CLAUSE_RX.split(part) if c)
    return out


def refusal_layout(text, token: str = REFUSAL, extra=()) -> Tuple[str, List[str], List[str], int]:
    """How a response is laid out for the refusal reading: (case, sentences, kinds, pattern).

    case: "empty", "token" (the refusal token in any dress), "none" (no decline cue),
    "declines" (declines and pointers only) or "mixed" (declines and content); kinds per
    sentence: D decline, M pointer or pleasantry, C content; pattern: the index + 1 of the
    first ``extra`` (source, regex) pair that marked a decline (0: none)."""
    t = (text or "").strip()
    if not t:
        return "empty", [], [], 0
    tok = token.strip().lower()
    low = t.lower()
    if low == tok or (len(t) <= len(tok) + 60 and (not tok or tok.split(None, 1)[0] in low)   # (its first word: cheap)
                      and tok in " ".join(low.split()) and token_form(t) == tok):
        return "token", [], [], 0
    if len(t) > REFUSAL_WINDOW:
        half = REFUSAL_WINDOW // 2
        t = t[:half] + "\n" + t[-half:]
    groups, disclaim = _decline_rxs(low if len(t) <= REFUSAL_WINDOW else t.lower())
    if not groups and not disclaim and not extra:
        return "none", [], [], 0
    if (not any(rx.search(t) for rx in groups) and not (disclaim and _DISCLAIMER_RX.search(t))
            and not any(rx.search(t) for _, rx in extra)):
        cut = split_sentences(t[:300])
        first = t[cut[0][0]:cut[0][1]].strip() if len(cut) > 1 else t   # a cue that is a whole sentence: "Unknown. ..."
        if first == t or not any(rx.search(first) for rx in groups):
            return "none", [], [], 0
    sents = sentences(t)
    kinds = []
    pat = 0
    for s in sents:
        m = next((n for n, (_, rx) in enumerate(extra, 1) if rx.search(s)), 0) if extra else 0
        if m:
            kinds.append("D")
            pat = pat or m
        elif any(rx.search(s) for rx in groups):
            kinds.append("D")
        elif disclaim and _DISCLAIMER_RX.search(s):
            kinds.append("K")
        elif _POINTER_RX.search(s):
            kinds.append("M")
        else:
            kinds.append("C")
    if "D" not in kinds and "K" not in kinds:
        return "none", sents, kinds, 0
    return ("mixed" if "C" in kinds else "declines"), sents, kinds, pat


# The bottom line of a mixed English response (declines and content) is weighed by a logistic
# model over refusal_features: where the declines sit, whether the content opens with a
# contrast, carries a number or a name, hedges, points elsewhere, and the words of the
# declining and the content sentences.  Fitted on the fit halves of the labelled sets (and the
# written English rows) by ``make fit-refusal`` (bench/fit_refusal.py writes
# bench/refusal_fit.json; ``--check`` refits and verifies the numbers below byte for byte).
# A response that is not English (few English function words) keeps the rules above: the
# model has no features for it.  Figures: docs/refusals.md.
# Fitted by `make fit-refusal` (bench/fit_refusal.py; copied from bench/refusal_fit.json).
REFUSAL_MODEL = {"bias": 1.467212, "english": 0.1, "threshold": 0.42,
                 "weights": {
                             "content_commits": -0.180891, "content_concludes": -0.324767,
                             "content_digit": -0.768654, "content_generic": 0.243396,
                             "content_name": 0.659084, "content_share": -0.656985,
                             "content_sources": -0.364365, "content_words": -0.519401, "contrast": -1.861348,
                             "decline_hedge": -0.216656, "decline_precision": -0.141984,
                             "first_decline": 0.747063, "first_disclaimer": -0.747063,
                             "last_decline": 1.350169, "last_firm": 0.254163,
                             "last_firm_conclusion": 0.090279, "pointer": 0.060465}}
_FEATURE_WORD_RX = re.compile(r"[a-z][a-z'’]+")


def english_share(words: List[str]) -> float:
    """Share of ``words`` (lower-cased) that are common English function words."""
    return sum(1 for w in words if w in _EN_FUNCTION) / len(words) if words else 0.0


def refusal_features(sents: List[str], kinds: List[str]) -> Dict[str, float]:
    """Features of a mixed response (sentences and their kinds, as refusal_layout gives them)
    for REFUSAL_MODEL: structural ones by name, and "d:WORD" / "c:WORD" for the words of the
    declining (and disclaimer) sentences and of the content sentences."""
    core = [(s, k) for s, k in zip(sents, kinds) if k != "M"]
    dec = [s for s, k in core if k in "DK"]
    con = [s for s, k in core if k == "C"]
    f = {}
    if core:
        first, last = core[0], core[-1]
        f["first_decline"] = 1.0 if first[1] == "D" else 0.0
        f["first_disclaimer"] = 1.0 if first[1] == "K" else 0.0
        f["last_decline"] = 1.0 if last[1] in "DK" else 0.0
        firm = last[1] == "D" and not _HEDGE_RX.search(last[0]) and not _PRECISION_RX.search(last[0])
        f["last_firm"] = 1.0 if firm else 0.0
        f["last_firm_conclusion"] = 1.0 if firm and _CONCLUSION_RX.match(last[0]) else 0.0
        i = next((n for n, (_, k) in enumerate(core) if k == "C"), None)
        f["contrast"] = 1.0 if i is not None and i > 0 and _CONTRAST_RX.match(core[i][0]) else 0.0
        f["content_share"] = len(con) / len(core)
    f["content_digit"] = 1.0 if any(_DIGIT_RX.search(s) for s in con) else 0.0
    f["content_name"] = 1.0 if any(_PROPER_RX.search(s) for s in con) else 0.0
    f["content_generic"] = 1.0 if any(_GENERIC_RX.search(s) for s in con) else 0.0
    f["decline_hedge"] = 1.0 if dec and all(_HEDGE_RX.search(s) for s in dec) else 0.0
    f["decline_precision"] = 1.0 if any(_PRECISION_RX.search(s) for s in dec) else 0.0
    f["pointer"] = 1.0 if "M" in kinds else 0.0
    f["content_commits"] = 1.0 if any(_COMMIT_RX.search(s) for s in con) else 0.0
    f["content_concludes"] = 1.0 if any(_CONCLUSION_RX.match(s) for s in con) else 0.0
    f["content_sources"] = 1.0 if any(_PASSAGE_RX.search(s) for s in con) else 0.0
    cw = _FEATURE_WORD_RX.findall(" ".join(con).lower())
    f["content_words"] = min(len(cw), 100) / 100.0
    for w in set(_FEATURE_WORD_RX.findall(" ".join(dec).lower())):
        f["d:" + w] = 1.0
    for w in set(cw):
        f["c:" + w] = 1.0
    return f


def weighed_layout(case: str, sents: List[str], kinds: List[str], english: float) -> bool:
    """Whether REFUSAL_MODEL decides a response of this layout: mixed, opening with a decline or a
    disclaimer, English."""
    if case != "mixed" or next(k for k in kinds if k != "M") == "C":
        return False
    return english_share(_FEATURE_WORD_RX.findall(" ".join(sents).lower())) >= english


def refusal_score(feats: Dict[str, float], model: Optional[dict] = None) -> float:
    """REFUSAL_MODEL's probability that a response with ``feats`` is a refusal."""
    model = model or REFUSAL_MODEL
    w = model["weights"]
    z = model["bias"] + math.fsum(w[k] * v for k, v in feats.items() if k in w)
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))


def read_refusal(text, token: str = REFUSAL, extra=(), model: Optional[dict] = None) -> Tuple[str, str, int]:
    """(kind, reason, pattern) for one response: kind is answer / refusal / partial_refusal;
    reason a short text for the items file ("" for an answer without a caveat); pattern
    as in ``refusal_layout``.  The bottom line of a response holding both declines and
    content (sentences without pointers and pleasantries):

    * it leads with content: an answer, unless its last sentence is a firm decline that
      concludes ("Therefore, the answer cannot be determined ..."): a refusal; an answer
      whose last sentence is a firm decline is a partial refusal;
    * it leads with a decline or a disclaimer: a refusal, unless its first content opens
      with a contrast ("I cannot confirm the exact date, but it was in 1998") and it does
      not end with a decline (other than one about precision): an answer.

    A firm decline is a decline that neither hedges (_HEDGE_RX: "no definitive answer",
    "difficult to say", "not explicitly stated") nor doubts only precision (_PRECISION_RX)."""
    case, sents, kinds, pat = refusal_layout(text, token, extra)
    if case == "token":
        return KIND_REFUSAL, "the refusal token", 0
    if case in ("empty", "none"):
        return KIND_ANSWER, "", 0
    quote = next(s for s, k in zip(sents, kinds) if k in "DK")[:60]
    if case == "declines":
        return KIND_REFUSAL, "declines, answers nothing: " + quote, pat
    core = [(s, k) for s, k in zip(sents, kinds) if k != "M"]
    firm = [k == "D" and not _HEDGE_RX.search(s) and not _PRECISION_RX.search(s) for s, k in core]
    model = model or REFUSAL_MODEL
    if model["weights"] and weighed_layout(case, sents, kinds, model["english"]):
        p = refusal_score(refusal_features(sents, kinds), model)
        if p >= model["threshold"]:
            return KIND_REFUSAL, "its bottom line declines (%.2f): %s" % (p, quote), pat
        return KIND_ANSWER, "declines, then answers: " + quote, 0
    if core[0][1] == "C":
        last = core[-1][0]
        if firm[-1] and _CONCLUSION_RX.match(last):
            return KIND_REFUSAL, "concludes that it cannot answer: " + last[:60], pat
        if firm[-1]:
            return KIND_PARTIAL, "answers, then declines: " + last[:60], pat
        return KIND_ANSWER, "answer with a caveat: " + quote, 0
    if core[-1][1] == "D" and not _PRECISION_RX.search(core[-1][0]):
        return KIND_REFUSAL, "declines first and last: " + quote, pat
    if _CONTRAST_RX.match(next(s for s, k in core if k == "C")):
        return KIND_ANSWER, "declines, then answers: " + quote, 0
    return KIND_REFUSAL, "declines; what follows does not answer: " + quote, pat

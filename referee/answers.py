"""Reading 3: answer normalisation and matching against short gold answers."""
from __future__ import annotations

import re
import unicodedata
from collections import Counter
from typing import NamedTuple

from .lexicon import (STOPWORDS, UNITS, _ARTICLES, _MONTHS, _MONTH_NAMES, _MONTH_SET, _ONES, _ORDINALS,
    _SCALES, _SUFFIXES, _TENS)

# ---- reading 3: answer normalisation
# A response is matched against short gold answers (gold ``gold_answers``) after both sides go
# through one normaliser, ``answer_tokens``: NFKC and accents folded on Latin letters, words
# glued by a stripped link split ("byCyndi" -> "by Cyndi", "in1996" -> "in 1996"), case,
# punctuation and articles dropped, number words and digits one form ("twenty-one" -> 21,
# "3 million" -> 3000000, "first" -> 1, "1,000" -> 1000, "5th" -> 5), units one word ("km" /
# "kilometres", "%" / "percent", "$" / "dollars"), dates one order ("1998-03-05", "5 March 1998"
# and "March 5, 1998" give the same words; "Sept." is September) and word forms lightly stemmed
# (plural and possessive endings).  ``match_answer`` then applies the rule documented in
# docs/answer_correctness.md.  The rule's numbers below were fitted on the fit half of
# EVOUNA-NQ (questions with an even number) by ``make bench-answer-correct`` (bench/
# bench_answer_correct.py --fit); the held-out half's figures are in that document.  Each
# normalisation has a name in ANSWER_NORMS so that the benchmark can switch it off (ablation).
ANSWER_NORMS = ("unicode", "glue", "numbers", "ordinals", "thousands", "units", "dates", "stems",
                "prefix", "alternatives", "question", "years")
_ALL_NORMS = frozenset(ANSWER_NORMS)
ANSWER_PREFIX = 4          # fitted: two words of >= 4 letters match when their first 4 letters do
ANSWER_PART = 0.5          # fitted: a >= ANSWER_PART_MIN-word gold matches with this share of its key words
ANSWER_PART_MIN = 3        # ... (and its last key word); fewer words must all be present
MAX_ANSWER_CHARS = 20000   # limit: characters of a response (and of a gold answer) that are matched

_GLUE_RX = re.compile(r"(?<=[a-z])(?=[A-Z][a-z])|(?<=[^\W\d_])(?=\d)|(?<=\d)(?=[^\W\d_]{2})")
_ISO_RX = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_POSS_RX = re.compile(r"['\u2019]s\b")
_ANS_TOKEN_RX = re.compile(r"\d+(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|[^\W\d_]+|[%$€£°]")
_PAREN_RX = re.compile(r"\([^()]*\)")


def _fold_accents(text: str) -> str:
    """Accents dropped from Latin letters only (a base letter below U+0250 plus combining marks);
    other scripts are left alone, where a mark can be a vowel."""
    out = []
    for ch in text:
        if ch < "\x80":
            out.append(ch)
            continue
        d = unicodedata.normalize("NFD", ch)
        if len(d) > 1 and d[0] < "\u0250" and all(unicodedata.combining(c) for c in d[1:]):
            out.append(d[0])
        else:
            out.append(ch)
    return "".join(out)


def _iso_date(m) -> str:
    y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
    if 1 <= mo <= 12 and 1 <= d <= 31:
        return "%d %s %d" % (d, _MONTH_NAMES[mo - 1], y)
    return m.group(0)


def _light_stem(w: str) -> str:
    """Plural endings: "cities" -> "city", "boxes" -> "box", "cells" -> "cell" ("glass", "bus" kept)."""
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 4 and (w.endswith(("sses", "xes", "zes", "ches", "shes"))):
        return w[:-2]
    if len(w) > 3 and w[-1] == "s" and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


def _number_words(raw: List[str], i: int) -> Tuple[str, int]:
    """The value of the run of number words starting at raw[i] ("twenty one", "one hundred and
    five", "two million") and the index after it."""
    total = cur = 0
    j, n = i, len(raw)
    while j < n:
        x = raw[j]
        if x in _ONES:
            cur += _ONES[x]
        elif x in _TENS:
            cur += _TENS[x]
        elif x == "hundred" and j > i:
            cur = max(cur, 1) * 100
        elif x in _SCALES and j > i:
            total += max(cur, 1) * _SCALES[x]
            cur = 0
        elif x == "and" and j > i and j + 1 < n and (raw[j + 1] in _ONES or raw[j + 1] in _TENS):
            pass
        else:
            break
        j += 1
    return str(total + cur), j


def answer_tokens(text: str, norms: frozenset = _ALL_NORMS) -> List[str]:
    """The normalised words of ``text`` for answer matching (see the section's comment)."""
    text = text[:MAX_ANSWER_CHARS]
    if "unicode" in norms:
        text = unicodedata.normalize("NFKC", text)
    if "glue" in norms:
        text = _GLUE_RX.sub(" ", text)
    text = text.casefold()
    if "unicode" in norms and not text.isascii():
        text = _fold_accents(text)
    if "stems" in norms:
        text = _POSS_RX.sub(" ", text)
    if "dates" in norms and "-" in text:
        text = _ISO_RX.sub(_iso_date, text)
    raw = _ANS_TOKEN_RX.findall(text)
    out: List[str] = []
    i, n = 0, len(raw)
    numbers, units, dates, stems = "numbers" in norms, "units" in norms, "dates" in norms, "stems" in norms
    while i < n:
        w = raw[i]
        if w[0].isdigit():
            if "," in w and "thousands" in norms:
                w = w.replace(",", "")
            if numbers and i + 1 < n and raw[i + 1] in _SCALES and raw[i + 1] != "hundred":
                v = float(w.replace(",", "")) * _SCALES[raw[i + 1]]
                w = str(int(v)) if v == int(v) else repr(v)
                i += 1
            if numbers and i + 1 < n and raw[i + 1] in _SUFFIXES:
                i += 1
            out.append(w)
            i += 1
            continue
        if numbers and (w in _ONES or w in _TENS):
            w, i = _number_words(raw, i)
            out.append(w)
            continue
        i += 1
        if w in _ARTICLES:
            continue
        if "ordinals" in norms and w in _ORDINALS:
            out.append(_ORDINALS[w])
            continue
        if dates and w in _MONTHS:
            w = _MONTHS[w]
        if units and w in UNITS:
            w = UNITS[w]
        elif stems:
            w = _light_stem(w)
        out.append(w)
    return out


def _is_year(t: str) -> bool:
    return len(t) == 4 and t.isdigit() and "1000" <= t <= "2100"


def _dates_in(toks: List[str]) -> List[Tuple[str, Optional[str], str]]:
    """(month, day or None, year) of each year preceded (within 3 words) by a month name."""
    out = []
    for i, t in enumerate(toks):
        if _is_year(t):
            win = toks[max(0, i - 3):i]
            months = [w for w in win if w in _MONTH_SET]
            if months:
                days = [w for w in win if w.isdigit() and len(w) <= 2]
                out.append((months[-1], days[-1] if days else None, t))
    return out


def _contains_run(hay: List[str], needle: List[str]) -> bool:
    k = len(needle)
    first = needle[0]
    for i in range(len(hay) - k + 1):
        if hay[i] == first and hay[i:i + k] == needle:
            return True
    return False


def gold_variants(gold: str, norms: frozenset = _ALL_NORMS) -> List[str]:
    """A gold answer and, with "alternatives", the gold without a parenthesised aside and each
    side of " or " ("hit points or health points")."""
    out = [gold]
    if "alternatives" in norms:
        bare = " ".join(_PAREN_RX.sub(" ", gold).split())
        if bare and bare != gold:
            out.append(bare)
        for g in list(out):
            if " or " in g:
                out.extend(p.strip() for p in g.split(" or ") if p.strip())
    return out


class AnswerMatch(NamedTuple):
    correct: bool
    recall: float       # share of the best gold answer's key words found in the response
    f1: float           # token F1 (SQuAD-style, normalised words) against the best gold answer
    gold: int           # index of the best gold answer in the list given


def match_answer(response: str, golds, question: Optional[str] = None,
                 norms: frozenset = _ALL_NORMS, partial: bool = True,
                 words: Optional[List[str]] = None) -> AnswerMatch:
    """The response against short gold answers (the rule of docs/answer_correctness.md).

    A gold answer (or one of its variants) matches when, no date in the response contradicting
    a year-rule match:
      1. its normalised words occur in order, contiguous, in the response; or
      2. every key word occurs (key words: the gold's words less stopwords and, when the
         question is known, less the question's words; numbers compared exactly, other words
         of >= ANSWER_PREFIX letters by their first ANSWER_PREFIX letters); or
      3. (``partial``) it has >= ANSWER_PART_MIN key words, the last one occurs, and the first
         one or >= ANSWER_PART of them occur ("Zachary Quinto" for "Zachary John Quinto"); or
      4. (``partial``) it names a year (not a word of the question) and the response names it
         and no other month or day of that year ("2005" for "May 3, 2005", not "May 30, 2017" for "January 2017").
    Rules 2-3 also need every number of the gold in the response.  Best gold: correct first,
    then recall, then F1.  ``words``: answer_tokens(response, norms) when the caller has them
    (the scorer: Response.answer_words)."""
    a = answer_tokens(response, norms) if words is None else words
    aset = set(a)
    pre = ANSWER_PREFIX if "prefix" in norms else 0
    apre = {t[:pre] for t in a if pre and len(t) >= pre and not t[0].isdigit()} if pre else set()
    q = set(answer_tokens(question, norms)) if question and "question" in norms else set()
    counts = Counter(a)
    adates = None
    best = AnswerMatch(False, 0.0, 0.0, -1)
    for gi, gold in enumerate(golds):
        for g in gold_variants(gold, norms):
            gt = answer_tokens(g, norms)
            if not gt:
                continue
            common = sum((counts & Counter(gt)).values())
            f1 = 2.0 * common / (len(a) + len(gt)) if common else 0.0
            key = [t for t in gt if t not in STOPWORDS or (t in _MONTH_SET and "dates" in norms)] or gt
            key = [t for t in key if t not in q] or key
            hit = [t in aset or (len(t) >= pre > 0 and not t[0].isdigit() and t[:pre] in apre) for t in key]
            recall = sum(hit) / len(key)
            nums = all(t in aset for t in gt if t[0].isdigit())
            ok = _contains_run(a, gt) or (nums and recall == 1.0)
            if not ok and partial:
                if nums and len(key) >= ANSWER_PART_MIN and hit[-1] and (hit[0] or recall >= ANSWER_PART - 1e-9):
                    ok = True
                elif "years" in norms:
                    years = [t for t in gt if _is_year(t) and t not in q]
                    if years and aset.issuperset(years):
                        if adates is None:
                            adates = _dates_in(a)
                        ok = True
                        for (m, d, y) in _dates_in(gt):
                            same = [x for x in adates if x[2] == y]
                            if same and not any(x[0] == m and (d is None or x[1] is None or x[1] == d)
                                                for x in same):
                                ok = False
            cand = AnswerMatch(ok, recall, f1, gi)
            if (cand.correct, cand.recall, cand.f1) > (best.correct, best.recall, best.f1):
                best = cand
    return best

"""Reading 4: sentences, meta-language and grounding of each sentence in the chunks."""
from __future__ import annotations

import math
import re
import unicodedata
from typing import Dict, NamedTuple, Tuple

from .lexicon import (INTRO_WORDS, META_WORDS, MONTH_NUMBERS, STOPWORDS, UNITS, _CLOCK, _G_CLAUSE_RX,
    _LEADIN_RX, _META_SENT_RX, _MODAL, _NEG, _NUM_RX, _NUM_WORDS, _SCALE)
from .fmt import _fmt_num
from .text import split_sentences
from .citations import read_citations
from .refusals import _DIGIT_RX
from .answers import _ISO_RX

# ---- reading 4: sentences, meta-language and grounding
# A generated answer is checked sentence by sentence (issue 29).  Each sentence, without
# citation markers, list numbers and lead-ins about the sources ("Based on the passages
# provided, ..."), is set aside when it only talks about the answer or the sources (meta:
# "The context does not mention X", "I hope this helps"; a clause of it declining to answer,
# "I could not find X, but ...", is set aside and the rest is checked); every other sentence
# is matched, order-insensitively, against the texts of the cited chunks (the retrieved ones
# when none is cited).  Support is lexical and explainable (grounding_features): content
# words with word forms folded (fold_word), numbers / amounts / dates / units normalised
# (number_values) and required, capitalised names required, negation and modality compared
# with the chunk sentence that supports the sentence best.  A number or a name found in no
# chunk makes the sentence unsupported whatever its score; otherwise the sentence is
# unsupported when GROUNDING_MODEL's logistic score (probability that people would flag it)
# reaches its threshold.  The weights and the threshold are fitted on the fit half of
# FaithBench (people's hallucination spans) by ``make fit-grounding``
# (bench/fit_grounding.py, which writes bench/grounding_fit.json; ``--check`` refits and
# verifies the numbers below byte for byte).  Figures: docs/grounding.md.

GROUNDING_MODES = ("strict", "sentences")
MAX_GROUND_SENTENCES = 200      # sentences checked per answer (the rest are not read)
MAX_GROUND_CHARS = 100_000      # characters of one answer, and of one chunk, that grounding reads
# Meta words and lead-ins, number / month / unit words, negation and modal words: lexicon.py.

# Fitted by `make fit-grounding` (bench/fit_grounding.py; copied from bench/grounding_fit.json).
GROUNDING_MODEL = {"bias": -0.077089, "share_cut": 0.7, "threshold": 0.455,
                   "weights": [-0.945472, 0.164798, -0.852188, -0.865722, 0.035412, 0.653727, 0.003054]}

_ENUM_RX = re.compile(r"^\(?\d{1,2}[.)] ")          # a list number that opens a sentence
_LISTNUM_RX = re.compile(r"(?m)^[ \t]{0,8}(?:[-*\u2022]|\(?\d{1,2}[.)]|\(?[a-z][.)])[ \t]{1,8}")


def claim_without_markers(text: str, patterns: Optional[tuple] = None) -> str:
    """The claim without citation markers and a sources list, for grounding: reading 1's
    reader with ``patterns`` (None: the built-in ones; (): none).  The scorer grounds a claim
    it has already read (Response.sentences: nothing read again); this is for direct calls."""
    return read_citations(text, (), (), patterns).claim


_TIME_RX = re.compile(r"\b(\d{1,2}):(\d{2})\b")
_WORD_RX = re.compile(r"[^\W\d_]+(?:[\x27\u2019-][^\W\d_]+)*")


_FOLDS: Dict[str, str] = {}


def fold_word(word: str) -> str:
    """A word's folded form: lower case, possessive and plural / verb endings removed, a
    final e dropped ("stays" / "stay", "moved" / "moving" / "move", "studies" / "study")."""
    got = _FOLDS.get(word)
    if got is None:
        if len(_FOLDS) > 200000:          # bounded: a stream of distinct words must not grow it
            _FOLDS.clear()
        got = _FOLDS[word] = _fold(word)
    return got


def _fold(w: str) -> str:
    w = _plain(w)
    if w.endswith("'s"):
        w = w[:-2]
    w = w.rstrip("'")
    n = len(w)
    if n > 4 and w.endswith(("ies", "ied")):
        w = w[:-3] + "y"
    elif n > 4 and w.endswith("sses"):
        w = w[:-2]
    elif n > 4 and w.endswith(("ches", "shes", "xes", "zes")):
        w = w[:-2]
    elif n > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    elif n > 5 and w.endswith("ing"):
        w = w[:-3]
    elif n > 4 and w.endswith("ed"):
        w = w[:-2]
    elif n > 5 and w.endswith("ly"):
        w = w[:-2]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    return w


def _sig(num: str) -> int:
    """Significant digits as written: all digits of a decimal or of an integer below 10000
    (years, counts); a larger integer's trailing zeros are taken as rounding ("38,900")."""
    digits = num.replace(",", "").replace(".", "").lstrip("0")
    if "." not in num and float(num.replace(",", "")) >= 10000:
        digits = digits.rstrip("0")
    return max(1, len(digits))


def number_values(text: str) -> List[Tuple[str, float, int, str]]:
    """The numbers of ``text`` as (as written, value, significant digits, unit): thousands
    separators removed, scale words applied ("$160 million" = 160000000), currency symbols,
    percent and units named; ISO dates give year, month and day.  Number words are left to
    content words (they are often not quantities: "one of the ...")."""
    out = []
    for m in _ISO_RX.finditer(text):
        for g, unit in ((1, ""), (2, "month"), (3, "")):
            out.append((m.group(0), float(m.group(g)), len(m.group(g).lstrip("0")) or 1, unit))
    text = _ISO_RX.sub(" ", text)
    for m in _TIME_RX.finditer(text):                  # 2:00 pm is the hour 2 (and 30 minutes)
        out.append((m.group(0), float(m.group(1)), len(m.group(1)), "time"))
        if m.group(2) != "00":
            out.append((m.group(0), float(m.group(2)), 2, "time"))
    text = _TIME_RX.sub(" ", text)
    for m in _NUM_RX.finditer(text):
        num = m.group("num")
        # a digit run inside a word (COVID-19's 19 is a number; "B2B" is not) and list markers
        if m.start("num") > 0 and text[m.start("num") - 1].isalpha():
            continue
        try:
            value = float(num.replace(",", ""))
        except ValueError:      # pragma: no cover - the pattern only matches numbers
            continue
        unit = ""
        if m.group("cur"):
            unit = UNITS[m.group("cur")]
        elif m.group("pct"):
            unit = "percent"
        scale = (m.group("scale") or "").lower()
        if scale and not (len(scale) == 1 and not m.group("cur")):   # "5 m" is metres, "$5m" millions
            value *= _SCALE[scale]
        elif scale == "m":
            unit = "m"
        out.append((m.group(0).strip(), value, _sig(num), unit))
    return out


def _number_supported(value: float, sig: int, support: List[float]) -> bool:
    """The value, or a chunk value rounded to the sentence's significant digits ("$181.7
    million" for 181,674,817; "about 200" for 196)."""
    for w in support:
        if w == value:
            return True
        if w and value:
            mag = math.floor(math.log10(abs(w)))
            q = 10.0 ** (mag - sig + 1)
            if abs(math.floor(w / q + 0.5) * q - value) <= 1e-9 * abs(value):
                return True
    return False


class _Chunkset:
    """What the chunks of one answer support: folded words, number values, and each chunk
    sentence's folded words with its negation and modality (for the best-aligned sentence)."""
    __slots__ = ("words", "numbers", "sents", "pairs")

    def __init__(self, texts: List[str]):
        self.words: set = set()
        self.numbers: List[float] = []
        self.sents: List[Tuple[frozenset, Dict[str, frozenset], frozenset]] = []
        for t in texts:
            t = t[:MAX_GROUND_CHARS]
            self.numbers.extend(v for _, v, _, _ in number_values(t))
            for s, e in split_sentences(t):
                sent = t[s:e]
                low = _words(sent)
                folded = frozenset(fold_word(w) for w in low)
                self.words |= folded
                self.words.update(w for w in low)
                self.sents.append((folded, _marks(sent), _neg_zone(low)))
            for w in _WORD_RX.findall(t):
                low = _plain(w)
                if low in _NUM_WORDS:              # "eight silver" supports "8 silver"
                    self.numbers.append(float(_NUM_WORDS[low]))

        self.numbers = sorted(set(self.numbers))
        self.words.update(_num_key(v) for v in self.numbers)


def _marks(text: str) -> Dict[str, frozenset]:
    """Negation and modality by the word they bear on: for each negator or modal (written in
    lower case: "May" is a month or a name), the next content word (folded) within three
    words gets "not" or the modal's class ("must submit" -> {"submit": {"must"}}, "may not
    apply" -> {"apply": {"may", "not"}})."""
    out: Dict[str, set] = {}
    raw = _WORD_RX.findall(text)
    words = [_plain(w) for w in raw]
    for i, w in enumerate(words):
        mark = "not" if w in _NEG or w.endswith("n't") else (_MODAL.get(w) if raw[i].islower() else None)
        if mark is None:
            continue
        for v in words[i + 1:i + 4]:
            if v in _NEG or v in _MODAL or v in STOPWORDS or len(v) < 3:
                continue
            out.setdefault(fold_word(v), set()).add(mark)
            break
    return {k: frozenset(v) for k, v in out.items()}


def _neg_zone(words: List[str]) -> frozenset:
    """Folded words at most five words after or two before a negator: a negation in one text
    agrees with the other when the word it bears on lies in the other's zone."""
    out = set()
    for i, w in enumerate(words):
        if w in _NEG or w.endswith("n't"):
            out.update(fold_word(v) for v in words[max(0, i - 2):i + 6])
    return frozenset(out)


def _num_key(v: float) -> str:
    return "#%r" % v


def _plain(text: str) -> str:
    """Lower case without accents ("Café" / "cafe")."""
    text = text.lower().replace("\u2019", "'")
    if text.isascii():
        return text
    return "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))


def _words(text: str) -> List[str]:
    return _WORD_RX.findall(_plain(text))


_CHUNKSETS: Dict[Tuple[str, ...], _Chunkset] = {}


def chunkset(texts: List[str]) -> _Chunkset:
    """The support of ``texts``, cached (bounded) by the texts themselves."""
    key = tuple(texts)
    cs = _CHUNKSETS.get(key)
    if cs is None:
        if len(_CHUNKSETS) > 4096:
            _CHUNKSETS.clear()
        cs = _CHUNKSETS[key] = _Chunkset(texts)
    return cs


def meta_kind(sentence: str) -> Optional[str]:
    """Why a sentence is set aside (it talks only about the answer or the sources), or None.
    A sentence ending in a colon introduces what follows: it is meta when its words are
    words about the answer (INTRO_WORDS too: "Here is a concise summary of the passage:")."""
    if _META_SENT_RX.search(sentence):
        return "meta"
    rest = _LEADIN_RX.sub("", sentence, count=1)
    intro = rest.rstrip().endswith(":")
    words = [w for w in _words(rest) if w not in STOPWORDS and w not in META_WORDS and len(w) > 1
             and not (intro and w in INTRO_WORDS)]
    if not words and not _DIGIT_RX.search(rest):
        return "meta"
    return None


def checked_text(sentence: str) -> Optional[str]:
    """The part of ``sentence`` that makes a claim: its lead-in about the sources removed and
    its clauses that decline or talk about the sources set aside; None when nothing is left."""
    parts = [p for p in _G_CLAUSE_RX.split(sentence) if p and p.strip()]
    if len(parts) > 1:
        keep = [p for p in parts if meta_kind(p) is None]
        if not keep:
            return None
        if len(keep) < len(parts):
            sentence = ", ".join(keep)
    elif meta_kind(sentence) is not None:
        return None
    return _LEADIN_RX.sub("", sentence, count=1).strip() or None


ALIGNED_SHARE = 0.6     # share of a sentence's content words in one chunk sentence that makes it "copied"
# feature order of GROUNDING_MODEL["weights"]
GROUND_FEATURES = ("unsupported_share", "unsupported_words", "best_sentence_share", "pair_share",
                   "negation_mismatch", "modality_mismatch", "content_words")


def grounding_features(text: str, cs: _Chunkset) -> Tuple[List[float], List[str], List[str], List[str]]:
    """(features in GROUND_FEATURES order, missing numbers / names as written, unsupported
    content words, negation / modality differences from the copied chunk sentence) of one
    checked sentence against the chunks' support."""
    missing: List[str] = []
    why: List[str] = []
    for raw, value, sig, unit in number_values(text):
        if unit == "month" and any(cs.words.__contains__(m) for m, v in MONTH_NUMBERS.items() if v == value):
            continue                               # 2021-03-05 and "March 5, 2021"
        if not _number_supported(value, sig, cs.numbers) and raw not in missing:
            missing.append(raw)
    stripped = _NUM_RX.sub(" ", text)
    toks = _WORD_RX.findall(stripped)
    content: List[str] = []
    unsup: List[str] = []
    first = True
    caps = sum(1 for t in toks if t[0].isupper())
    title = caps > 3 and caps * 2 > len(toks)          # a heading in title case: no names read
    for tok in toks:
        low = _plain(tok)
        initial, first = first or title, False
        if low in _CLOCK:
            continue
        if low in STOPWORDS or low in META_WORDS or len(low) < 3 and not tok.isupper():
            continue
        f = fold_word(low)
        if low in _NEG or low in _MODAL:
            continue
        ok = f in cs.words or low in cs.words or (low in _NUM_WORDS and _num_key(float(_NUM_WORDS[low])) in cs.words)
        if not ok and "-" in low:
            ok = all(fold_word(p) in cs.words or p in cs.words for p in low.split("-") if p)
        if not ok and f in MONTH_NUMBERS:
            ok = any(m in cs.words for m, v in MONTH_NUMBERS.items() if v == MONTH_NUMBERS[f])
        content.append(f)
        if not ok:
            unsup.append(tok)
            if tok[0].isupper() and not initial and low not in MONTH_NUMBERS or (len(tok) > 1 and tok.isupper()):
                missing.append(tok)
    n = len(content)
    fs = frozenset(content)
    best = 0.0
    bsent = None
    pair = 0.0
    if fs:
        for words, marks, zone in cs.sents:
            share = len(fs & words) / len(fs)
            if share > best:
                best, bsent = share, (words, marks, zone)
        pairs = [(a, b) for a, b in zip(content, content[1:]) if a != b]
        if pairs:
            together = sum(1 for a, b in pairs if any(a in w and b in w for w, _, _ in cs.sents))
            pair = together / len(pairs)
        else:
            pair = best
    # negation and modality are compared with the chunk sentence the sentence copies (most of
    # its content words in one chunk sentence), word by word: "may" for "must", "not" added
    # or dropped on a word both sentences have
    neg_mis = mod_mis = 0.0
    if bsent is not None and best >= ALIGNED_SHARE:
        words, cmarks, czone = bsent
        smarks = _marks(text)
        szone = _neg_zone(_words(text))
        for head in sorted(set(smarks) | set(cmarks)):      # sorted: the same words in the same order
            if head not in fs or head not in words:
                continue
            a, b = smarks.get(head, frozenset()), cmarks.get(head, frozenset())
            if ("not" in a and head not in czone) or ("not" in b and head not in szone):
                neg_mis = 1.0
                why.append("negation of %r differs from the chunk" % head)
            # the sentence's own modal must be the chunk's: "must" for "may" or for a plain
            # statement, "may" for "must"; a hedge ("may", "could") on a fact the chunk
            # states plainly claims less, not more
            am, bm = a - {"not"}, b - {"not"}
            if am and am != bm and not (not bm and am <= {"may"}):
                mod_mis = 1.0
                why.append("modality of %r differs from the chunk (%s / %s)" % (
                    head, "+".join(sorted(a - {"not"})) or "none", "+".join(sorted(b - {"not"})) or "none"))
    feats = [len(unsup) / n if n else 0.0, float(len(unsup)), best, pair, neg_mis, mod_mis, float(n)]
    return feats, missing, unsup, why


def _model_score(feats: List[float], model: dict) -> float:
    z = model["bias"] + math.fsum(w * x for w, x in zip(model["weights"], feats))
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))


def _blank(m) -> str:
    return " " * len(m.group(0))


def answer_sentences(claim: str, patterns: Optional[tuple] = None) -> List[Tuple[int, int, str, Optional[str]]]:
    """(start, end, sentence, checked text or None when set aside) of each sentence of an
    answer, offsets into the claim as read by reading 1 with ``patterns`` (markers and a sources
    list removed; list numbers blanked, not removed; the two are the same text when the claim
    holds no marker).  ``patterns`` as in claim_without_markers: () for a claim already read."""
    body = claim_without_markers(claim[:MAX_GROUND_CHARS], patterns)
    body = _LISTNUM_RX.sub(_blank, body)
    out = []
    for s, e in split_sentences(body)[:MAX_GROUND_SENTENCES]:
        sent = _ENUM_RX.sub("", " ".join(body[s:e].split()))
        out.append((s, e, sent, checked_text(sent)))
    return out


class Grounding(NamedTuple):
    checked: int
    supported: int
    unsupported: List[dict]    # {"sentence", "score", "missing", "why"}
    set_aside: int


def ground(claim: str, texts: List[str], model: Optional[dict] = None, sentences=None) -> Grounding:
    """Check each sentence of ``claim`` against ``texts`` (the evidence chunks).
    ``sentences``: answer_sentences of the claim when the caller has read them (the scorer:
    Response.sentences, of a claim read with the [scorer] citation patterns), else read here."""
    model = model or GROUNDING_MODEL
    cs = chunkset(texts)
    checked = supported = aside = 0
    bad: List[dict] = []
    for _, _, sent, text in (answer_sentences(claim) if sentences is None else sentences):
        if text is None:
            aside += 1
            continue
        feats, missing, unsup, flips = grounding_features(text, cs)
        if not feats[6] and not missing and not flips:
            aside += 1          # no content word, number or name ("No.", "Yes."): nothing to check
            continue
        support = 1.0 - _model_score(feats, model)
        checked += 1
        mostly = feats[0] > model["share_cut"]
        if missing or flips or mostly or support <= 1.0 - model["threshold"]:
            why = []
            if missing:
                why.append("%s found in no chunk" % ", ".join(missing[:10]))
            why.extend(flips[:3])
            if mostly:
                why.append("%d of its %d content words found in no chunk" % (round(feats[1]), round(feats[6])))
            if support <= 1.0 - model["threshold"]:
                why.append("support %.3f at or below %s" % (support, _fmt_num(round(1.0 - model["threshold"], 4))))
            bad.append({"sentence": sent[:300], "support": round(support, 4), "missing": missing[:10],
                        "unsupported_words": unsup[:10], "why": "; ".join(why)})
        else:
            supported += 1
    return Grounding(checked, supported, bad, aside)

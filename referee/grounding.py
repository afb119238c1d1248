"""Reading 4: sentences, meta-language and grounding of each sentence in the chunks."""
from __future__ import annotations

import json
import math
import re
import unicodedata
from bisect import bisect_left, bisect_right
from collections import Counter
from typing import Dict, NamedTuple, Tuple

from .lexicon import (INTRO_WORDS, META_WORDS, MONTH_NUMBERS, STOPWORDS, UNITS, _CLOCK, _G_CLAUSE_RX,
    _LEADIN_RX, _META_SENT_RX, _MODAL, _NEG, _NUM_RX, _NUM_WORDS, _SCALE)
from .fmt import _fmt_num
from .text import problem_text, read_problem, split_sentences
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
# reaches its threshold.  A chunk that is a JSON record is read field by field
# (structured_text), and an answer written from one (data-to-text) gets the model's
# "structured" weights and operating point.  The weights and thresholds are fitted on the fit
# halves of FaithBench and RAGTruth (people's hallucination spans) by ``make fit-grounding``
# (bench/fit_grounding.py, which writes bench/grounding_fit.json; ``--check`` refits and
# verifies the numbers below byte for byte).  Figures: docs/grounding.md.

GROUNDING_MODES = ("strict", "sentences")
MAX_GROUND_SENTENCES = 200      # sentences checked per answer (the rest are not read)
MAX_GROUND_CHARS = 100_000      # characters of one answer, and of one chunk, that grounding reads
MAX_NUMBER_DIGITS = 17          # significant digits a number is compared to (a double holds no more)
MAX_NUMBER_PROBES = 16          # chunk numbers tried per rounding cell of a sentence's number
GROUND_WORK = 50                # limit: chunk-sentence look-ups per character an answer's grounding reads
# Meta words and lead-ins, number / month / unit words, negation and modal words: lexicon.py.

# Fitted by `make fit-grounding` (bench/fit_grounding.py; copied from bench/grounding_fit.json).
GROUNDING_MODEL = {"bias": -1.075577, "share_cut": 0.6, "threshold": 0.46,
                   "weights": [-0.798433, 0.146558, -0.789178, -0.252742, 0.047479, 0.659302, 0.010067, 0.903203],
                   "structured": {"bias": -4.368732, "share_cut": 0.7, "threshold": 0.18,
                                  "weights": [0.090379, 0.184617, 0.398492, -0.091483, 2.283528, -0.097746,
                                              -0.109913, 2.513362]}}

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
    return max(1, min(len(digits), MAX_NUMBER_DIGITS))


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
        if value > 1e300:       # past a double (a 309-digit number): not read as a number
            read_problem("a number of %d digits could not be read" % len(num))
            continue
        unit = ""
        if m.group("cur"):
            unit = UNITS[m.group("cur")]
        elif m.group("pct"):
            unit = "percent"
        scale = (m.group("scale") or "").lower()
        if scale and not (len(scale) == 1 and not m.group("cur")):   # "5 m" is metres, "$5m" millions
            value = min(value * _SCALE[scale], 1e300)
        elif scale == "m":
            unit = "m"
        out.append((m.group(0).strip(), value, _sig(num), unit))
    return out


def _number_supported(value: float, sig: int, support: List[float]) -> bool:
    """The value, or a chunk value rounded to the sentence's significant digits ("$181.7
    million" for 181,674,817; "about 200" for 196).  ``support``: sorted, not negative.  Only
    the chunk values that can round to ``value`` are tried (bisect): those of its magnitude
    within half a rounding step of it, and those one magnitude below that round up to it
    ("996" to "1000"); at most MAX_NUMBER_PROBES of each."""
    i = bisect_left(support, value)
    if i < len(support) and support[i] == value:
        return True
    if not value or value < 0:
        return False
    sig = max(1, min(sig, MAX_NUMBER_DIGITS))
    mag = math.floor(math.log10(value))
    q = 10.0 ** (mag - sig + 1)
    tol = 1e-8 * value
    for lo, hi in ((max(value - q / 2, 10.0 ** mag * (1 - 1e-12)), value + q / 2), (value - q / 20, value)):
        j = bisect_left(support, lo - tol)
        end = min(bisect_right(support, hi + tol), j + MAX_NUMBER_PROBES)
        for w in support[j:end]:
            if w > 0 and _rounds_to(w, sig, value):
                return True
    return False


def _rounds_to(w: float, sig: int, value: float) -> bool:
    """Whether chunk value ``w`` rounded to ``sig`` significant digits is ``value``."""
    mag = math.floor(math.log10(w))
    q = 10.0 ** (mag - sig + 1)
    return abs(math.floor(w / q + 0.5) * q - value) <= 1e-9 * abs(value)


class _Chunkset:
    """What the chunks of one answer support: folded words, number values, and each chunk
    sentence's folded words with its negation and modality (for the best-aligned sentence),
    a sentence written twice kept once; ``index``: each folded word's chunk sentences (their
    numbers in ``sents``), so a sentence of the answer is compared with the chunk sentences
    that share a word with it, never with all of them."""
    __slots__ = ("words", "numbers", "sents", "pairs", "index", "acronyms", "structured", "texts")

    def __init__(self, texts: List[str]):
        self.words: set = set()
        self.numbers: List[float] = []
        self.sents: List[Tuple[frozenset, Dict[str, frozenset], frozenset]] = []
        self.index: Dict[str, List[int]] = {}
        self.acronyms: Optional[set] = None      # read when a sentence first has an all-capitals word in no chunk
        self.texts: List[str] = []
        self.pairs: set = set()         # adjacent content words (folded, _pair_keys) of each chunk sentence
        seen = set()
        self.structured = False         # a chunk is a JSON record: the answer is data-to-text
        for t in texts:
            t0 = t[:MAX_GROUND_CHARS]
            t = structured_text(t0)
            self.structured = self.structured or t is not t0
            self.texts.append(t)
            self.numbers.extend(v for _, v, _, _ in number_values(t))
            for s, e in split_sentences(t):
                low, entry, key, pairs = _chunk_sentence(t[s:e])
                folded = entry[0]
                self.words |= folded
                self.words.update(low)
                self.pairs.update(pairs)
                if key in seen:         # the same sentence again aligns no better and pairs nothing new
                    continue
                seen.add(key)
                for w in folded:
                    self.index.setdefault(w, []).append(len(self.sents))
                self.sents.append(entry)
            for w in _WORD_RX.findall(t):
                low = _plain(w)
                if low in _NUM_WORDS:              # "eight silver" supports "8 silver"
                    self.numbers.append(float(_NUM_WORDS[low]))

        self.numbers = sorted(set(self.numbers))
        self.words.update(_num_key(v) for v in self.numbers)


_CAMEL_RX = re.compile(r"(?<=[a-z])(?=[A-Z])|_+")
_RECORD_RX = re.compile(r"\s*[\[{]")
_HM_RX = re.compile(r"\b([01]?\d|2[0-3]):([0-5]?\d)\b")
MAX_STRUCT_DEPTH = 20           # levels of a JSON chunk read as fields (deeper values are left out)


def structured_text(text: str) -> str:
    """A chunk that is a JSON object or array (a record, as data-to-text answers are written
    from) read as sentences, one per field: "<key words>: <value>." with the path's keys split
    into words ("OutdoorSeating" -> "Outdoor Seating", with the joined pair "outdoorseating"
    dropped in as "takeout" for "Take Out"), true as "yes", false as "no <key words>" (a
    negation an answer must not drop), null left out, a 24-hour clock time also written as
    its 12-hour time ("16:30" -> "16:30 4:30 pm"); any other text unchanged."""
    if not _RECORD_RX.match(text):
        return text
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return text
    out: List[str] = []
    _fields(data, [], out, 0)
    return "\n\n".join(out) if out else text


def _key_words(key: str) -> Tuple[List[str], List[str]]:
    """A key's words ("OutdoorSeating" -> Outdoor, Seating) and its adjacent words joined
    ("outdoorseating")."""
    parts = [p for p in _CAMEL_RX.split(key) if p]
    return parts, ["%s%s" % (a.lower(), b.lower()) for a, b in zip(parts, parts[1:])]


def _clock12(m) -> str:
    h, mi = int(m.group(1)), int(m.group(2))
    return "%d:%02d %d:%02d %s" % (h, mi, h % 12 or 12, mi, "am" if h < 12 else "pm")


def _fields(x, path: List[Tuple[List[str], List[str]]], out: List[str], depth: int) -> None:
    """Append the sentences of value ``x`` at ``path`` (each key's words and joined words) to
    ``out``; a false field's negation bears on its key's last word, the head of the compound
    ("Outdoor outdoorseating no Seating")."""
    if depth > MAX_STRUCT_DEPTH or x is None:
        return
    if isinstance(x, dict):
        for k, v in x.items():
            _fields(v, path + [_key_words(str(k))], out, depth + 1)
        return
    if isinstance(x, list):
        for v in x:
            _fields(v, path, out, depth + 1)
        return
    words = [w for parts, joined in path for w in parts + joined]
    if isinstance(x, str) and x.strip().lower() in ("no", "none", "false"):
        x = False
    if isinstance(x, bool):
        parts, joined = path[-1] if path else ([], [])
        head = [w for p, j in path[:-1] for w in p + j]
        if x:
            out.append("%s." % " ".join(words + ["yes"]))
        else:
            out.append("%s." % " ".join(head + parts[:-1] + joined + ["no"] + parts[-1:]))
        return
    value = str(x)
    if isinstance(x, str) and len(value) < 40:
        value = _HM_RX.sub(_clock12, value)
    if words:
        value = "%s: %s" % (" ".join(words), value)
    out.append(value + ("" if value.rstrip().endswith((".", "!", "?")) else "."))


def _chunk_sentence(sent: str) -> tuple:
    """What one chunk sentence supports: (its words, (folded words, negation / modality marks,
    negation zone), the key of that entry, its adjacent content-word pairs)."""
    low = _words(sent)
    entry = (frozenset(fold_word(w) for w in low), _marks(sent), _neg_zone(low))
    return low, entry, (entry[0], frozenset(entry[1].items()), entry[2]), _pair_keys(_content_seq(sent))


def _content_seq(text: str) -> List[str]:
    """The folded content words of ``text`` in order, as grounding_features reads a sentence's
    (numbers, stopwords, meta, negation, modal and clock words and short words left out)."""
    if _DIGIT_RX.search(text):
        text = _without_numbers(text)
    toks = _WORD_RX.findall(text)
    if len(_CONTENT) > 200000:          # bounded, as _FOLDS
        _CONTENT.clear()
    for tok in toks:
        if tok not in _CONTENT:
            _CONTENT[tok] = _content_word(tok)
    return [c for c in map(_CONTENT.__getitem__, toks) if c]


_DIGITS_RX = re.compile(r"\d+")


def _without_numbers(text: str) -> str:
    """``_NUM_RX.sub(" ", text)`` for the words it leaves: each number (with its percent and
    scale words) blanked, the pattern tried only where a run of digits starts (left to right,
    as sub finds them), not at every character."""
    parts = []
    pos = 0
    for d in _DIGITS_RX.finditer(text):
        if d.start() < pos:
            continue
        m = _NUM_RX.match(text, d.start())
        if m is None:
            continue
        parts.append(text[pos:m.start()])
        parts.append(" ")
        pos = m.end()
    parts.append(text[pos:])
    return "".join(parts)


def _content_word(tok: str) -> str:
    """A word's folded form when it is a content word, else ""."""
    low = _plain(tok)
    if low in _CLOCK or low in STOPWORDS or low in META_WORDS or len(low) < 3 and not tok.isupper() \
            or low in _NEG or low in _MODAL:
        return ""
    return fold_word(low)


_CONTENT: Dict[str, str] = {}


_RUN_JOINERS = frozenset(("of", "and", "the", "for", "de"))
MAX_ACRONYM = 6         # letters of an acronym read from a run of capitalised words


def _acronyms(text: str) -> set:
    """The acronyms a text's names support, lower case: the initials of each run of 2 to
    MAX_ACRONYM capitalised words separated by spaces only ("United Nations Security
    Council" -> "un", "unsc", "nsc", ...), with and without the joining words of, and, the,
    for, de ("Department of Justice" -> "doj" and "dj")."""
    out: set = set()
    run: List[Tuple[str, bool]] = []       # (initial, joining word)
    end = -1
    for m in _WORD_RX.finditer(text):
        w = m.group(0)
        joined = end >= 0 and m.start() > end and text[end:m.start()].isspace()
        if not joined:
            _run_acronyms(run, out)
            run = []
        if w[0].isupper() and not w.isupper() or (w.isupper() and len(w) == 1):
            run.append((w[0].lower(), False))
        elif w in _RUN_JOINERS and run:
            run.append((w[0], True))
        else:
            _run_acronyms(run, out)
            run = []
        end = m.end()
    _run_acronyms(run, out)
    return out


def _run_acronyms(run: List[Tuple[str, bool]], out: set) -> None:
    while run and run[-1][1]:
        run = run[:-1]
    run = run[:4 * MAX_ACRONYM]
    for i in range(len(run)):
        if run[i][1]:
            continue
        for j in range(i + 2, min(len(run), i + 2 * MAX_ACRONYM) + 1):
            if run[j - 1][1]:
                continue
            part = run[i:j]
            full = "".join(c for c, _ in part)
            caps = "".join(c for c, joiner in part if not joiner)
            for a in (full, caps):
                if 2 <= len(a) <= MAX_ACRONYM:
                    out.add(a)


def _name_found(tok: str, low: str, cs: "_Chunkset") -> bool:
    """Whether a capitalised word found in no chunk is still a name the chunks hold: an
    acronym of a run of their capitalised words ("UN" for "United Nations"), or a form
    derived from a chunk word of at least five letters by at most three more letters making
    up at most 30% of it ("Venezuelan" / "Venezuela", "Pennsylvanians" / "Pennsylvania")."""
    if tok.isupper():
        if cs.acronyms is None:
            cs.acronyms = set().union(*[_acronyms(t) for t in cs.texts])
        if low in cs.acronyms:
            return True
    n = len(low)
    return any(low[:n - k] in cs.words for k in (1, 2, 3) if n - k >= 5 and n - k >= 0.7 * n)


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
                   "negation_mismatch", "modality_mismatch", "content_words", "novel_pairs")


class _Budget(Exception):
    """Grounding's work budget ran out (the answer's grounding is unknown)."""


def _best_sentence(fs: frozenset, cs: _Chunkset, work: Optional[list]) -> tuple:
    """(share, (words, marks, zone)) of the first chunk sentence holding the most of ``fs``
    (share 0.0 and None when none holds any), from the index: only the chunk sentences that
    hold a word of ``fs`` are counted.  ``work``: [look-ups left], spent (None: no limit)."""
    counts: Counter = Counter()
    for w in fs:
        ids = cs.index.get(w)
        if ids:
            if work is not None:
                work[0] -= len(ids)
                if work[0] < 0:
                    raise _Budget()
            counts.update(ids)
    if not counts:
        return 0.0, None
    top = max(counts.values())
    first = min(k for k, c in counts.items() if c == top)
    return top / len(fs), cs.sents[first]


def _together(a: str, b: str, cs: _Chunkset, work: Optional[list]) -> bool:
    """Whether one chunk sentence holds both folded words ``a`` and ``b`` (sorted index lists
    walked side by side)."""
    x, y = cs.index.get(a), cs.index.get(b)
    if not x or not y:
        return False
    if len(x) > len(y):
        x, y = y, x
    found = False
    if len(y) > 8 * len(x):              # one short list: look each of its entries up
        steps = 0
        for k in x:
            steps += 1
            if y[min(bisect_left(y, k), len(y) - 1)] == k:
                found = True
                break
    else:
        i = j = 0
        while i < len(x) and j < len(y):
            if x[i] == y[j]:
                found = True
                break
            if x[i] < y[j]:
                i += 1
            else:
                j += 1
        steps = i + j + 1
    if work is not None:
        work[0] -= steps
        if work[0] < 0:
            raise _Budget()
    return found


def grounding_features(text: str, cs: _Chunkset, work: Optional[list] = None) -> Tuple[List[float], List[str], List[str], List[str]]:
    """(features in GROUND_FEATURES order, missing numbers / names as written, unsupported
    content words, negation / modality differences from the copied chunk sentence) of one
    checked sentence against the chunks' support.  ``work``: [chunk-sentence look-ups left]
    for the whole answer, spent here; _Budget when it runs out (None: no limit)."""
    missing: List[str] = []
    why: List[str] = []
    shown = set()
    for raw, value, sig, unit in number_values(text):
        if unit == "month" and any(cs.words.__contains__(m) for m, v in MONTH_NUMBERS.items() if v == value):
            continue                               # 2021-03-05 and "March 5, 2021"
        if raw not in shown and not _number_supported(value, sig, cs.numbers):
            missing.append(raw)
            shown.add(raw)
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
        ok = ok or tok[0].isupper() and _name_found(tok, low, cs)
        content.append(f)
        if not ok:
            unsup.append(tok)
            if tok[0].isupper() and not initial and low not in MONTH_NUMBERS or (len(tok) > 1 and tok.isupper()):
                missing.append(tok)
    n = len(content)
    fs = frozenset(content)
    best, bsent, pair = 0.0, None, 0.0
    if fs:
        best, bsent = _best_sentence(fs, cs, work)
        pairs = [(a, b) for a, b in zip(content, content[1:]) if a != b]
        if pairs:
            together = sum(1 for a, b in pairs if _together(a, b, cs, work))
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
    feats = [len(unsup) / n if n else 0.0, float(len(unsup)), best, pair, neg_mis, mod_mis, float(n),
             _novel_share(content, cs)]
    return feats, missing, unsup, why


def _novel_share(content: List[str], cs: _Chunkset) -> float:
    """novel_pairs: the share of adjacent content words (folded, in order) that are adjacent in
    no chunk sentence (0.0 without a pair)."""
    pairs = _pair_keys(content)
    return sum(1 for ab in pairs if ab not in cs.pairs) / len(pairs) if pairs else 0.0


def _pair_keys(seq: List[str]) -> List[str]:
    """Adjacent words as one string each ("a b": a folded word holds no space), not tuples:
    strings are not tracked by the garbage collector, and chunk sets hold many."""
    return list(map(" ".join, zip(seq, seq[1:])))


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
    unknown: str = ""          # why the answer's grounding could not be read ("": it was)


def ground(claim: str, texts: List[str], model: Optional[dict] = None, sentences=None) -> Grounding:
    """Check each sentence of ``claim`` against ``texts`` (the evidence chunks).
    ``sentences``: answer_sentences of the claim when the caller has read them (the scorer:
    Response.sentences, of a claim read with the [scorer] citation patterns), else read here.
    Never raises on text: an answer whose grounding cannot be read (its look-ups past
    GROUND_WORK per character read, or any error) is unknown (``unknown`` says why;
    read_problem names it)."""
    try:
        return _ground(claim, texts, model, sentences)
    except _Budget:
        why = "grounding passed its work limit (%d look-ups per character)" % GROUND_WORK
    except Exception as exc:          # noqa: BLE001 - a reader's bug must not end the run (issue 44)
        why = problem_text("grounding", exc)
    read_problem(why)
    return Grounding(0, 0, [], 0, why)


def _ground(claim: str, texts: List[str], model: Optional[dict], sentences) -> Grounding:
    """ground; the look-ups of chunk sentences are limited to GROUND_WORK per character of
    the answer and the chunks it reads (a cap no real answer comes near)."""
    model = model or GROUNDING_MODEL
    cs = chunkset(texts)
    if cs.structured and "structured" in model:
        model = model["structured"]      # its own operating point: written from a record, not prose
    checked = supported = aside = 0
    bad: List[dict] = []
    work = [GROUND_WORK * (min(len(claim), MAX_GROUND_CHARS) + sum(min(len(t), MAX_GROUND_CHARS) for t in texts)) + 10000]
    for _, _, sent, text in (answer_sentences(claim) if sentences is None else sentences):
        if text is None:
            aside += 1
            continue
        feats, missing, unsup, flips = grounding_features(text, cs, work)
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

"""Stage 3: ranked retrieval over the index, and the QA contract's retrieval rules.

Public API
==========

===================================  =======================================================
``Retriever(index, config)``         a retriever over an :class:`~mini_rag.indexing.index.Index`
``Retriever.search(query, k)``       plain ranking: the k best chunks as :class:`Hit`
``Retriever.rank(terms, k)``         the same ranking of analyzed terms, as
                                     ``(position, score)`` pairs (no records built)
``Retriever.retrieve(question)``     the QA contract flow -> :class:`Retrieval`
``open_retriever(config)``           ``Retriever(build_or_load(config), config)``
``similarity_ceiling(...)``          the denominator of the BM25 similarity (below)
===================================  =======================================================

Ranking (``search``)
--------------------
The query is analyzed like the chunks.  For each distinct query term its postings are
added into a score accumulator, term at a time, with the per-posting weights computed
at index time (``index.py``), multiplied by the term's count in the query when it is
more than 1 (``tfidf``: by its query weight).  Terms are added in a fixed order
(longest postings list first, then term), so a chunk's score is the same sum in the same
order on every run and Python version.  Only chunks that share a term with the query are
ever touched.  The top k are selected exactly (``_top``: a sampled score threshold, then
C-level sorts); **ties are broken by chunk_id ascending**
(code point order), here and in every list this module returns.

Three faster paths give the same ranking, every score equal to the float: *pruned top-k*
(``[retrieval] pruning``, on by default, used from ``PRUNE_MIN`` postings a query:
MaxScore with the per-term upper bounds stored in the index, candidates re-summed in
the order above, see ``_pruned_scores``), below that *dense* top-k for a small index
(also under ``pruning``, when the index has at most ``DENSE_RATIO`` chunks per posting
of the query: one float per chunk added in the order above, MaxScore's essential terms
for the candidates, see ``_dense_scores``) and *numpy* (``[retrieval] numpy``, off by
default, used only when numpy imports: ``bincount`` adds the same weights in the same
order, see ``_rank_numpy``).  A scope filter (``allowed`` positions) applies to the
candidates of every path before the top k are chosen.

Similarity in [0, 1] (what the thresholds compare)
--------------------------------------------------
``bm25``: the BM25 score divided by the score of a *reference chunk* that contains every
query term exactly once and has the average length, clipped to 1::

    similarity = min(1, bm25(q, c) / sum_t qtf(t) * idf(t))

Because a term seen once in a chunk of average length weighs exactly ``idf(t)``, the
denominator is that reference score.  It reads as "the share of the question's idf mass
that the chunk matches": a paragraph that contains the rare words of the question scores
high, one that shares only a common word scores low.  A query term that is not in the
index (after typo correction) still counts in the denominator with the idf of df = 0 (the
largest there is): a question about something the corpus never mentions cannot reach the
threshold on its common words alone.  Within one query the similarity is the BM25 score
times a constant, so thresholds cut the ranking, they never reorder it.

``tfidf``: the cosine itself (SMART ltc.ltc, idf as in ``index.py``), the query vector
including unknown terms at df = 0.

The QA contract flow (``retrieve``), seed 001, every value from ``[retrieval]``
--------------------------------------------------------------------------------
1. Analyze the question; correct typos (below).  Find each term's *alternatives*
   (``alternatives``, ``bm25`` only): its verb/noun variants (``derive.py``: retain ~
   retention) at ``derivation_weight`` of its weight, the members of its synonym groups
   (``synonyms.py``: kept ~ retain) at ``synonym_weight``, and their variants at the
   product.  In the accumulator such a term weighs, in each chunk, the largest of its
   own weight and its alternatives' (an alternative of several terms: the smallest of
   their weights, in chunks holding all of them), never their sum; the similarity's
   denominator stays the question's own idf mass.  A question asking how long tickets
   are *kept* thus finds the table headed *Retention period*, below a chunk that says
   *kept* itself.  ``search`` ranks without them.
2. Expansion: each ``[expansion.NAME]`` rule (in name order) whose ``match`` phrase occurs
   in the question (case-insensitive, white space collapsed, whole words) yields one
   variant per ``add`` phrase that is not already in the question: the question with the
   matched phrase replaced by the added one.  The original question always runs first.
3. Each variant retrieves its ``top_k`` best chunks within the authority scope
   (``authority_scope``: ``MIXED`` keeps every chunk, any other value keeps chunks whose
   authority equals it, case-insensitively).  Results are merged by (doc_id, page,
   chunk_id) keeping the best similarity (an earlier variant wins a tie); the ``top_k``
   best of the merge (similarity, then the variant's own score: clipped similarities
   of 1.0 keep the ranking's order, then chunk_id) are the *candidates*.  With
   ``[retrieval] mode`` ``dense`` or ``hybrid``, each variant's ranking, scores and
   similarities come from ``embed/hybrid.py`` instead (docs/embeddings.md).
4. Threshold: candidates with similarity >= ``min_similarity`` are accepted.
5. Fallback, when nothing was accepted (``fallback_only_if_empty = true``; with false it
   is also tried when something was): if the top candidate has similarity >=
   ``fallback_min_similarity`` and passes the gate, every candidate with similarity >=
   ``fallback_min_similarity`` is accepted and ``fallback_used`` is true.  The gate:
   at least one analyzed term of the question or of an expansion that ran appears among
   the analyzed terms of the top candidate's doc_id (``-``, ``_``, ``.`` read as spaces)
   or title: the question names the document.
6. MMR (``use_mmr``): accepted hits are reordered by maximal marginal relevance,
   repeatedly taking the hit maximizing ``lambda * similarity - (1 - lambda) * max
   cos(hit, already taken)`` with ``lambda = mmr_lambda`` and cos the TF-IDF cosine of
   the two chunks' bags of terms (tie: chunk_id).  Otherwise similarity order.
   ``max_context_chunks`` is applied by the answering stage, not here.
7. A lead-in's list: an accepted hit whose last line introduces a list or a table
   (``text.shape.list_after``: a prose chunk ending with ``:`` followed, in its document,
   by chunks opening with a list item, or a table) brings that list's chunks (at most
   :data:`LIST_CHUNKS`) into the hits, after every ranked hit (the retriever's ranking is never
   displaced: a trace's rank measures stay the retriever's), with its similarity, score and
   query: they are the rest of what it says, even when they share no word with the question.
   A chunk already among the hits stays where it is.  Joined chunks get the ranks after the hits;
   ``Retrieval.joined`` maps each joined chunk to its lead-in's.  The answering stage
   judges a joined chunk by its lead-in's (``relevance``: kept when the lead-in is, never
   counted against ``max_context_chunks``; ``synthesize``: on topic when the lead-in is).
8. Signals over the accepted hits (seed 000), taken before step 7 (a joined chunk was not
   ranked): ``max``, ``mean`` of similarity (0.0 when there is no hit), ``gap`` = best
   minus second best (``None`` with fewer than two), ``hit_count``, ``candidate_count``,
   ``threshold`` used, ``oldest_effective`` / ``newest_effective`` among hits with a date
   (``None`` when none), ``as_of`` from ``[guards] as_of`` and ``oldest_age_days`` (as_of
   minus oldest_effective).

Typo correction (``retrieve`` only; ``search`` ranks the query as written)
-------------------------------------------------------------------------
A query token (``analysis.tokenize``) whose analyzed terms are not all in the index,
that has no digit (codes and numbers are never changed) and has 4 or more characters,
is replaced by the corpus word (a token of some chunk's indexed text whose terms are
all indexed) within edit distance 1, or 2 for tokens of 8 or more characters; distance
is ``typo_distance``, the optimal string alignment distance under a typist's error model
(insert, delete, swap two adjacent characters: 1; substitute: 1 for neighbouring QWERTY
keys, 2 for two vowels, never for other keys; the first character must be right or
swapped with the second), so a real word is rarely taken for a slip of another (``fast``
stays, it is not ``last``; ``properly`` is not ``property``).
Comparing words before stemming finds a typo anywhere in the word
(``requirments`` -> ``requirements``).  Among candidates the smallest distance wins,
then the highest document frequency of the word's term (a stopword counts as more
frequent than any term), then the smallest word.  A typo of a stopword (``whta``) is
corrected to no term at all, so it no longer counts against the similarity.
Candidates come from a deletion-neighbourhood map of the corpus words (SymSpell's idea),
built on first need, so a query never scans the vocabulary.  ``Retrieval.corrections``
maps each corrected token to the term(s) used, space-separated (``""`` for a stopword).
Caveat: a real word that the corpus does not contain can still be one slip from a
corpus word (``fine`` -> ``find``: ``e`` and ``d`` are neighbours); the similarity
threshold and the answering stage's evidence checks must still reject it.
"""
from __future__ import annotations

import datetime
import heapq
import math
import re
from bisect import bisect_left, bisect_right
from collections import Counter
from itertools import compress, islice, repeat
from operator import add, itemgetter, mul
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from ..errors import MiniRagError
from ..text.analysis import ENGLISH_STOPWORDS, tokenize
from ..text.shape import list_after
from ..indexing.index import Index, bm25_idf, build_or_load, indexed_text, tfidf_idf
from ..query import derive, synonyms
from ..records import Hit, Retrieval

#: ``{query term: [(alternative terms, share of weight)]}`` (``Retriever.alternatives``).
Alternatives = Dict[str, List[Tuple[Tuple[str, ...], float]]]

_HAS_DIGIT = re.compile(r"\d").search
#: Postings of a query from which pruned top-k is tried (``Retriever.prune_min``).
PRUNE_MIN = 50000
#: Below PRUNE_MIN postings, scores go into a list of one float per chunk (``_dense_scores``)
#: when the index has at most this many chunks per posting of the query.
DENSE_RATIO = 8
_SPACES = re.compile(r"\s+")
_ID_SEPARATORS = re.compile(r"[-_.]+")


# ---------------------------------------------------------------- helpers

#: At most this many chunks of a lead-in's list join the hits after it (step 7).
LIST_CHUNKS = 3


def _alignment(a: str, b: str, limit: int, sub_cost) -> int:
    """Optimal string alignment distance with substitution cost ``sub_cost(x, y)``;
    ``limit + 1`` once it must exceed ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2: List[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            x, y = a[i - 1], b[j - 1]
            v = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (0 if x == y else sub_cost(x, y)))
            if i > 1 and j > 1 and x == b[j - 2] and a[i - 2] == y:
                v = min(v, prev2[j - 2] + 1)
            cur[j] = v
        if min(cur) > limit:
            return limit + 1
        prev2, prev = prev, cur
    return prev[-1] if prev[-1] <= limit else limit + 1


def osa_distance(a: str, b: str, limit: int = 2) -> int:
    """Optimal string alignment distance, or ``limit + 1`` once it must exceed ``limit``.

    >>> osa_distance("refnud", "refund"), osa_distance("polcy", "policy")
    (1, 1)
    """
    return _alignment(a, b, limit, lambda x, y: 1)


# QWERTY neighbours (same row and the rows above and below), for typo_distance.
_ROWS = ("1234567890", "qwertyuiop", "asdfghjkl", "zxcvbnm")
_NEIGHBOURS: Dict[str, frozenset] = {}
for _r, _row in enumerate(_ROWS):
    for _c, _ch in enumerate(_row):
        _near = set()
        for _dr in (-1, 0, 1):
            if 0 <= _r + _dr < len(_ROWS):
                # rows are staggered: a key touches columns c-1..c+1 of its neighbours
                _near.update(_ROWS[_r + _dr][max(0, _c - 1):_c + 2])
        _near.discard(_ch)
        _NEIGHBOURS[_ch] = frozenset(_near)


_VOWELS = frozenset("aeiouy")


def _key_slip(x: str, y: str) -> int:
    """A wrong character: 1 for a neighbouring key, 2 for one vowel for another (a spelling
    slip: ``seperate``), else 3: no slip at all."""
    if x in _NEIGHBOURS.get(y, ()):
        return 1
    return 2 if x in _VOWELS and y in _VOWELS else 3


def typo_distance(typed: str, word: str, limit: int = 2) -> int:
    """How many keystroke slips turn ``word`` into ``typed``, or ``limit + 1`` if more.

    The optimal string alignment distance under a typist's error model: an extra or a
    missing character and two swapped neighbours cost 1; a wrong character costs 1 when
    its key touches the intended one on a QWERTY keyboard (``polixy`` for ``policy``), 2
    when both are vowels (``seperate``), and is no slip otherwise, not even as a missing
    plus an extra character: a real word is rarely a slip of another (``fast`` is not
    ``last``, ``tell`` is not ``well``, ``properly`` is not ``property``).  The first
    character must be right, or swapped with the second: slips at the start of a word are rare, and a word that differs
    there is a different word (``bread``/``read``, ``recertify``/``certify``).

    >>> typo_distance("refnud", "refund"), typo_distance("polixy", "policy")
    (1, 1)
    >>> typo_distance("fast", "last"), typo_distance("tell", "well"), typo_distance("hte", "the")
    (3, 3, 1)
    >>> typo_distance("seperate", "separate"), typo_distance("properly", "property")
    (2, 3)
    """
    if not typed or not word:
        return limit + 1
    if typed[0] != word[0] and not (len(typed) > 1 and len(word) > 1 and typed[0] == word[1]
                                    and typed[1] == word[0]):
        return limit + 1
    differ = [(x, y) for x, y in zip(typed, word) if x != y] if len(typed) == len(word) else []
    if len(differ) == 1 and _key_slip(*differ[0]) > 2:
        return limit + 1      # one wrong letter, far from the right key: a different word
    return _alignment(typed, word, limit, _key_slip)


def _deletes(word: str, depth: int) -> List[str]:
    """Every string made by deleting 1..depth characters of ``word`` (distinct, sorted)."""
    out = set()
    frontier = {word}
    for _ in range(depth):
        nxt = set()
        for w in frontier:
            for i in range(len(w)):
                nxt.add(w[:i] + w[i + 1:])
        out |= nxt
        frontier = nxt
    return sorted(out)


#: Budgets of typo correction (issue 33): a longer token is no typo of a word (English words
#: stop near 30 letters) and is left as it is; the 2-deletion neighbourhood of a 2,000-letter
#: token was 2 million strings (18.7 s, 3.9 GB for one question).  At most MAX_TYPO_CANDIDATES
#: corpus words are compared with one token.
MAX_TYPO_WORD = 32
MAX_TYPO_CANDIDATES = 500


def max_edits(term: str) -> int:
    """Edits allowed when correcting ``term``: 0 (< 4 chars, has a digit or longer than
    MAX_TYPO_WORD), 1, or 2 (>= 8)."""
    if _HAS_DIGIT(term) or len(term) < 4 or len(term) > MAX_TYPO_WORD:
        return 0
    return 2 if len(term) >= 8 else 1


def _norm_phrase(text: str) -> str:
    return _SPACES.sub(" ", text.casefold()).strip()


def _phrase_re(phrase: str):
    words = [re.escape(w) for w in _norm_phrase(phrase).split(" ") if w]
    return re.compile(r"(?<!\w)" + r"\s+".join(words) + r"(?!\w)", re.IGNORECASE)


def similarity_ceiling(index: Index, qtf: Dict[str, int]) -> float:
    """``sum_t qtf(t) * idf(t)`` over the distinct query terms (unknown terms: df = 0)."""
    n = index.num_searchable
    return math.fsum(q * bm25_idf(n, index.doc_freq(t)) for t, q in qtf.items())


def _cosine(a: Dict[str, int], b: Dict[str, int], idf) -> float:
    """TF-IDF (ltc) cosine of two bags of terms; 0.0 when either is empty."""
    if not a or not b:
        return 0.0
    return _ltc_cosine(_ltc(a, idf), _ltc(b, idf))


def _ltc(bag: Dict[str, int], idf) -> Tuple[Dict[str, float], float]:
    """``({term: (1 + log tf) * idf}, the vector's norm)`` of a bag of terms: what
    :func:`_cosine` needs of one side, so a chunk's vector can be computed once."""
    w = {t: (1.0 + math.log(tf)) * idf(t) for t, tf in bag.items()}
    return w, math.sqrt(math.fsum(v * v for v in w.values()))


def _ltc_cosine(a: Tuple[Dict[str, float], float], b: Tuple[Dict[str, float], float]) -> float:
    """The cosine of two :func:`_ltc` vectors (0.0 when either is empty).  ``math.fsum``
    is correctly rounded whatever the order, so walking the smaller vector gives the
    same float as walking either."""
    wa, wb = a[0], b[0]
    if not wa or not wb:
        return 0.0
    if len(wb) < len(wa):
        wa, wb = wb, wa
    dot = math.fsum(v * wb[t] for t, v in wa.items() if t in wb)
    if dot == 0.0:
        return 0.0
    return min(1.0, dot / (a[1] * b[1]))


def _kth_largest(acc: Dict[int, float], k: int, allowed=None) -> float:
    """A lower bound of the k-th largest score of ``acc`` (within ``allowed``), 0.0 when
    there are fewer than k: the exact value, or a sampled one shown to have >= k scores
    at or above it (both valid thresholds for pruning)."""
    vals: Any = acc.values() if allowed is None else [s for p, s in acc.items() if p in allowed]
    n = len(vals)
    if n < k or k <= 0:
        return 0.0
    if n > 8 * k + 64:
        step = n // (4 * k)
        sample = sorted(islice(vals, 0, None, step), reverse=True)
        th = sample[min(len(sample), -(-k // step) + 1) - 1]
        if sum(map(th.__le__, vals)) >= k:
            return th
    return heapq.nlargest(k, vals)[-1]


# ---------------------------------------------------------------- retriever

class Retriever:
    """Ranked retrieval and the QA contract flow over one index and one config."""

    def __init__(self, index: Index, config: Optional[Dict[str, Any]] = None) -> None:
        if config is None:
            from ..config import load_config
            config = load_config()
        self.index = index
        self.config = config
        r = config["retrieval"]
        self.scoring = r["scoring"]
        self.top_k = r["top_k"]
        if self.top_k < 1:
            raise MiniRagError("[retrieval] top_k must be >= 1, got %r" % self.top_k)
        self._weights = index.prepare(self.scoring)
        self._positions = index._positions
        self._scopes: Dict[str, frozenset] = {}
        self._typo_map: Optional[Dict[str, List[str]]] = None
        self._surface: Dict[str, Tuple[str, ...]] = {}
        self._ltc_cache: Dict[str, Tuple[Dict[str, float], float]] = {}
        self._rules = self._compile_rules(config.get("expansion") or {})
        self._alt_weights = {}
        for key in ("derivation_weight", "synonym_weight"):
            w = r.get(key, 0.0)
            if isinstance(w, bool) or not isinstance(w, (int, float)) or not 0.0 <= w <= 1.0:
                raise MiniRagError("[retrieval] %s must be a number from 0 to 1, got %r" % (key, w))
            self._alt_weights[key] = float(w)
        self._extra_groups = tuple((config.get("answer") or {}).get("synonym_groups") or ())
        # Pruned top-k (exact, see _pruned_scores); False scores every chunk that shares a term.
        self.pruning = bool(r.get("pruning", True))
        # Below this many postings the exhaustive sum (all C-level) is faster than pruning's
        # bookkeeping; the two give the same ranking, so this only decides speed.
        self.prune_min = PRUNE_MIN
        # Below prune_min: dense scoring when chunks <= dense_ratio * postings (same ranking).
        self.dense_ratio = DENSE_RATIO
        # Optional numpy scoring (same ranking, same floats): only when asked and importable.
        self._np: Any = None
        self._np_tie: Any = None
        self._np_cache: Dict[Any, Any] = {}
        self._np_masks: Dict[int, Any] = {}
        if r.get("numpy", False):
            self.use_numpy(True)
        self.fusion = None    # dense / hybrid ranking, set by embed.hybrid.attach (mode != "bm25")

    @property
    def _tie(self):
        """The index's tie ranks (a loaded index checks them when first asked for)."""
        return self.index.tie_rank

    def use_numpy(self, on: bool = True) -> bool:
        """Score with numpy from now on (``on``), when numpy imports; returns whether it does."""
        self._np = None
        if on:
            try:
                import numpy
            except ImportError:
                return False
            self._np = numpy
        return self._np is not None

    # ------------------------------------------------------------ ranking core

    def _accumulate(self, qtf: Dict[str, int], alternatives: Optional[Alternatives] = None) -> Dict[int, float]:
        """Scores of every chunk sharing a term with the query (the hot loop)."""
        positions, weights = self._positions, self._weights
        if alternatives and self.scoring == "bm25":
            positions, weights = self._with_alternatives(qtf, alternatives)
        terms = [t for t in qtf if t in weights]
        if not terms:
            return {}
        # Longest postings first (built at C speed by dict()), then by term: a fixed order.
        terms.sort(key=lambda t: (-len(positions[t]), t))
        mult = self._multipliers(qtf, terms)
        acc: Dict[int, float] = {}
        get = acc.get
        for i, t in enumerate(terms):
            pos, ws = positions[t], weights[t]
            m = mult.get(t)
            if m is not None:
                ws = list(map(mul, ws, repeat(m)))
            if i == 0:
                acc.update(zip(pos, ws))
            else:
                # acc[p] = acc.get(p, 0.0) + w for every posting, in C.  Positions in one
                # postings list are distinct, so each read precedes its own write.
                acc.update(zip(pos, map(add, map(get, pos, repeat(0.0)), ws)))
        return acc

    def _multipliers(self, qtf: Dict[str, int], terms: Sequence[str]) -> Dict[str, float]:
        """``{term: factor}`` applied to a term's posting weights (absent: 1, none applied)."""
        if self.scoring == "tfidf":
            n = self.index.num_searchable
            qw = {t: (1.0 + math.log(q)) * tfidf_idf(n, self.index.doc_freq(t)) for t, q in qtf.items()}
            qnorm = math.sqrt(math.fsum(v * v for v in qw.values()))
            return {t: qw[t] / qnorm for t in terms}
        return {t: float(qtf[t]) for t in terms if qtf[t] != 1}

    def _pruned_scores(self, qtf: Dict[str, int], k: int, allowed=None,
                       alternatives: Optional[Alternatives] = None) -> Dict[int, float]:
        """Exact scores of a set of chunks that holds the k best (ties at the cut included)
        within ``allowed``: what :meth:`_top` needs, without scoring every chunk.

        MaxScore (Turtle & Flood, 1995) term at a time, exact to the bit:

        1. Terms are added rarest first into partial sums.  Before a term, when the
           postings left are many, ``theta`` (a lower bound of the k-th best score: the
           k-th best partial sum) is compared with ``rest``, the sum of the upper bounds
           (largest posting weight times the query factor, stored in the index) of the
           terms left.  When ``rest < theta`` a chunk holding none of the terms added so
           far cannot reach the k best: the rest of the terms (the *non-essential* ones,
           the longest lists) are never scanned.
        2. Candidates: chunks whose partial sum plus ``rest`` reaches ``theta``.
        3. ``bm25`` without alternatives: the non-essential terms are looked up for the
           candidates only, block by block (``postings.py``), largest upper bound first.
           A block whose largest weight (``block_max``) cannot lift any of its candidates
           to ``theta`` (with the upper bounds of the terms still to look up) is never
           decoded, and its candidates are dropped; so is any candidate whose sum so far
           plus those bounds falls below ``theta``.
        4. Each remaining candidate's score is summed again in the exhaustive order
           (longest postings first, then term), so every float equals the one
           :meth:`_exhaustive_scores` computes.
        Margins of 1e-9 (relative) keep steps 1 to 3 safe from rounding.
        """
        positions, weights, bounds = self._bounded_postings(qtf, alternatives)
        size = self._sizer(positions)
        terms = [t for t in qtf if t in weights and size(t)]
        if not terms:
            return {}
        canonical = sorted(terms, key=lambda t: (-size(t), t))
        mult = self._multipliers(qtf, terms)
        order = canonical[::-1]
        ubs = [bounds[t] * mult.get(t, 1.0) for t in order]
        lens = [size(t) for t in order]
        rest, left = [0.0] * (len(order) + 1), [0] * (len(order) + 1)
        for i in range(len(order) - 1, -1, -1):
            rest[i] = rest[i + 1] + ubs[i]
            left[i] = left[i + 1] + lens[i]
        acc: Dict[int, float] = {}
        get = acc.get
        cut, theta = len(order), 0.0
        for i, t in enumerate(order):
            if i and 4 * left[i] >= len(acc):
                theta = _kth_largest(acc, k, allowed)
                if rest[i] < theta * (1.0 - 1e-9):
                    cut = i
                    break
            pos, ws = positions[t], weights[t]
            m = mult.get(t)
            if m is not None:
                ws = map(mul, ws, repeat(m))
            acc.update(zip(pos, map(add, map(get, pos, repeat(0.0)), ws)))
        if cut == len(order):
            theta = _kth_largest(acc, k, allowed)
        floor = theta * (1.0 - 1e-9) - rest[cut] * (1.0 + 1e-9)
        cands = list(compress(acc, map(floor.__le__, acc.values()))) if floor > 0.0 else list(acc)
        if allowed is not None:
            cands = [p for p in cands if p in allowed]
        cands.sort()
        found: Dict[str, Dict[int, float]] = {}
        if cut < len(order) and not alternatives and self.scoring == "bm25" and cands:
            cands, found = self._block_lookups(order[cut:], ubs[cut:], mult, cands, acc, theta, k)
        scores = dict.fromkeys(cands, 0.0)
        for t in canonical:
            m = mult.get(t)
            wmap = found.get(t)
            if wmap is not None:
                got = [(p, wmap[p]) for p in cands if p in wmap]
            else:
                pos, ws = positions[t], weights[t]
                if len(cands) * 16 < len(pos):
                    n = len(pos)
                    got = []
                    lo = 0
                    for p in cands:                     # ascending: each search starts at the last
                        lo = bisect_left(pos, p, lo)
                        if lo == n:
                            break
                        if pos[lo] == p:
                            got.append((p, ws[lo]))
                else:
                    wmap = dict(zip(pos, ws))
                    got = [(p, wmap[p]) for p in cands if p in wmap]
            for p, w in got:
                scores[p] = scores[p] + (w if m is None else w * m)
        return scores

    def _block_lookups(self, late: Sequence[str], late_ubs: Sequence[float], mult: Dict[str, float],
                       cands: List[int], acc: Dict[int, float], theta: float, k: int):
        """Step 3 of :meth:`_pruned_scores`: the weights of the non-essential terms
        ``late`` for the candidates (ascending), largest upper bound first, block by block.
        In each block, a candidate whose sum so far plus the block's largest weight plus
        the upper bounds of the terms still to look up stays below ``theta`` is dropped
        unread (C-level filter); a block left with no candidate is never decoded.  Returns
        the candidates left (ascending) and ``{term: {position: weight}}``.

        First ``theta`` is raised: the whole scores of the 4k candidates with the best
        partial sums (their non-essential weights read from the blocks that hold them)
        are real scores, so their k-th best is a lower bound of the k-th best score."""
        index = self.index
        store = index._store
        last, block_max, term_blocks = store.block_last, store.block_max, store.term_blocks
        tids = [index.term_id(t) for t in late]
        sums = list(map(acc.__getitem__, cands))
        memo: Dict[Tuple[int, int], Dict[int, float]] = {}     # blocks read in both passes

        def block_weights(tid: int, j: int) -> Dict[int, float]:
            bw = memo.get((tid, j))
            if bw is None:
                bw = memo[tid, j] = index.block_weights(tid, j)
            return bw
        if len(cands) > 4 * k:
            cutv = sorted(sums, reverse=True)[4 * k - 1]
            best = list(compress(cands, map(cutv.__le__, sums)))
            whole = dict(zip(best, map(acc.__getitem__, best)))
            for t, tid in zip(late, tids):
                m = mult.get(t, 1.0)
                for j, ps in store.find_blocks(tid, best).items():
                    bw = block_weights(tid, j)
                    for p in ps:
                        w = bw.get(p)
                        if w is not None:
                            whole[p] += w * m
            theta = max(theta, sorted(whole.values(), reverse=True)[k - 1] * (1.0 - 1e-9))
        limit = theta * (1.0 - 1e-9)
        todo = sorted(range(len(late)), key=lambda i: (-late_ubs[i], late[i]))
        after = [0.0] * (len(todo) + 1)
        for x in range(len(todo) - 1, -1, -1):
            after[x] = after[x + 1] + late_ubs[todo[x]] * (1.0 + 1e-9)
        keep0 = list(map((limit - after[0]).__le__, sums))
        cands, sums = list(compress(cands, keep0)), list(compress(sums, keep0))
        found: Dict[str, Dict[int, float]] = {}
        for x, i in enumerate(todo):
            t, tid = late[i], tids[i]
            m = mult.get(t, 1.0)
            r = after[x + 1]
            wt: Dict[int, float] = {}
            kept_c: List[int] = []
            kept_s: List[float] = []
            n, lo = len(cands), 0
            for j in range(term_blocks[tid], term_blocks[tid + 1]):
                if lo == n:
                    break
                hi = bisect_right(cands, last[j], lo)
                if hi == lo:
                    continue
                thr = limit - r - block_max[j] * m * (1.0 + 1e-9)
                ss = sums[lo:hi]
                mask = list(map(thr.__le__, ss))
                if not any(mask):
                    lo = hi
                    continue                        # the block is never decoded
                kc, ks = list(compress(cands[lo:hi], mask)), list(compress(ss, mask))
                lo = hi
                bw = block_weights(tid, j)
                wt.update(bw)
                ks = list(map(add, ks, map(mul, map(bw.get, kc, repeat(0.0)), repeat(m))))
                live = list(map((limit - r).__le__, ks))
                kept_c.extend(compress(kc, live))
                kept_s.extend(compress(ks, live))
            for q in range(lo, n):                  # past the term's last posting
                if sums[q] + r >= limit:
                    kept_c.append(cands[q])
                    kept_s.append(sums[q])
            cands, sums = kept_c, kept_s
            found[t] = wt
        return cands, found

    def _sizer(self, positions):
        """``term -> number of postings`` of ``positions`` (the index's: its df, nothing decoded)."""
        if positions is self._positions:
            return self.index.doc_freq
        return lambda t: len(positions[t])

    def _bounded_postings(self, qtf: Dict[str, int], alternatives: Optional[Alternatives]):
        """``(positions, weights, bounds)`` by term: the index's, or with ``alternatives``
        (``bm25``) the merged lists of :meth:`_with_alternatives` and their largest weights."""
        positions, weights = self._positions, self._weights
        bounds = self.index.max_weights(self.scoring)
        if alternatives and self.scoring == "bm25":
            positions, weights = self._with_alternatives(qtf, alternatives)
            bounds = {t: (max(weights[t], default=0.0) if t in alternatives else bounds[t])
                      for t in weights}
        return positions, weights, bounds

    def _dense_scores(self, qtf: Dict[str, int], k: int, allowed=None,
                      alternatives: Optional[Alternatives] = None) -> Dict[int, float]:
        """Exact scores of a set of chunks that holds the k best (ties at the cut included)
        within ``allowed``, for a small index: the contract of :meth:`_pruned_scores`.

        1. Every posting is added into a list of one float per chunk, in the exhaustive
           order (longest postings first, then term), ``s[p] += w``: the same additions
           as :meth:`_accumulate`'s, so the same floats, at about half the cost of a dict.
        2. ``theta``, a lower bound of the k-th best score: the k-th best score among
           the chunks of the terms with the largest upper bounds (at least 2k chunks).
        3. MaxScore's split: the terms with the smallest upper bounds whose sum stays
           below ``theta`` are *non-essential*: a chunk holding none of the others
           scores below ``theta`` and cannot be among the k best.  Candidates: the
           chunks of the essential terms scoring at least ``theta``.
        Margins of 1e-9 (relative) keep step 3 safe from rounding.
        """
        positions, weights, bounds = self._bounded_postings(qtf, alternatives)
        terms = [t for t in qtf if t in weights and len(positions[t])]
        if not terms:
            return {}
        terms.sort(key=lambda t: (-len(positions[t]), t))
        mult = self._multipliers(qtf, terms)
        s = [0.0] * self.index.num_chunks
        for t in terms:
            m = mult.get(t)
            if m is None:
                for p, w in zip(positions[t], weights[t]):
                    s[p] += w
            else:
                for p, w in zip(positions[t], weights[t]):
                    s[p] += w * m
        ubs = {t: bounds[t] * mult.get(t, 1.0) for t in terms}
        by_bound = sorted(terms, key=lambda t: (ubs[t], t))
        pool: set = set()
        for t in reversed(by_bound):
            pool.update(positions[t])
            if len(pool) >= 2 * k:
                break
        if allowed is not None:
            pool &= allowed
        theta = sorted(map(s.__getitem__, pool), reverse=True)[k - 1] if len(pool) >= k > 0 else 0.0
        limit, total, cut = theta * (1.0 - 1e-9), 0.0, 0
        for t in by_bound:
            total += ubs[t] * (1.0 + 1e-9)
            if total >= limit:
                break
            cut += 1
        cands = set().union(*[positions[t] for t in by_bound[cut:]])
        if allowed is not None:
            cands &= allowed
        if len(cands) < 2:
            return {p: s[p] for p in cands}
        return {p: v for p, v in zip(cands, itemgetter(*cands)(s)) if v >= theta}

    def _with_alternatives(self, qtf: Dict[str, int], alternatives: Alternatives):
        """Postings and weights where a query term with alternatives holds, for each chunk,
        the largest of its own weight and each alternative's weight times its share (an
        alternative of several terms weighs the smallest of theirs, in chunks holding all)."""
        positions: Dict[str, Any] = {}
        weights: Dict[str, Any] = {}
        for t in sorted(qtf):
            alts = alternatives.get(t)
            if not alts:
                if t in self._weights:
                    positions[t], weights[t] = self._positions[t], self._weights[t]
                continue
            best: Dict[int, float] = dict(zip(self._positions[t], self._weights[t])) if t in self._weights else {}
            for alt_terms, share in alts:
                maps = [dict(zip(self._positions[a], self._weights[a])) for a in alt_terms]
                common = set(maps[0]).intersection(*maps[1:]) if len(maps) > 1 else maps[0]
                for p in common:
                    w = share * min(m[p] for m in maps)
                    if w > best.get(p, 0.0):
                        best[p] = w
            order = sorted(best)
            positions[t] = order
            weights[t] = [best[p] for p in order]
        return positions, weights

    def alternatives(self, question: str, terms: Sequence[str]) -> Alternatives:
        """``{query term: [(alternative terms, share)]}``: what else counts for a term.

        * ``derivation_weight``: each variant of the term by ``derive.variants`` that the
          index holds ("retained" -> ``retent``, as in "Retention period").
        * ``synonym_weight``: each member of a synonym group holding the term
          (``synonyms.synonym_bridges``, with ``[answer] synonym_groups``) whose terms the
          index all holds, and, at the product of the two shares, the derivational
          variants of a one-term member ("kept" -> ``retain`` -> ``retent``).
        A term of the query is never its own alternative.  Only ``retrieve`` uses them.
        """
        dw, sw = self._alt_weights["derivation_weight"], self._alt_weights["synonym_weight"]
        have = self.index.has_term
        qset = set(terms)
        syn = (synonyms.synonym_bridges(question, list(qset), self.index.analyzer, self._extra_groups)
               if sw > 0.0 else {})
        out: Alternatives = {}
        for t in sorted(qset):
            alts: List[Tuple[Tuple[str, ...], float]] = []
            seen = {(t,)}

            def offer(alt: Tuple[str, ...], share: float) -> None:
                if alt not in seen and not (len(alt) == 1 and alt[0] in qset) and all(map(have, alt)):
                    seen.add(alt)
                    alts.append((alt, share))
            if dw > 0.0:
                for v in derive.variants(t):
                    offer((v,), dw)
            for group_alt in syn.get(t, ()):
                alt = tuple(sorted(group_alt))
                offer(alt, sw)
                if dw > 0.0 and len(alt) == 1:
                    for v in derive.variants(alt[0]):
                        offer((v,), sw * dw)
            if alts:
                out[t] = alts
        return out

    def _top(self, acc: Dict[int, float], k: int) -> List[Tuple[int, float]]:
        """The k best ``(position, score)``: score descending, then chunk_id ascending.

        Exact, and all in C-level calls (no Python code per accumulator):

        1. When there are many more accumulators than k, a threshold ``theta`` is read
           off a strided sample of the scores, chosen so that about 2k scores (and
           surely at least k) are >= it; only those chunks are kept.  Whether at least
           k were kept is checked, and when not (possible only for an unlucky sample),
           every chunk is kept.  Either way every chunk of the true top k, ties at the
           cut included, is kept: when >= k scores are >= theta, the k-th best is too.
        2. The kept chunks are sorted by score descending.  When two of the k best (or
           the k-th and the next) have equal scores, they are sorted by tie rank
           (chunk_id order) first and then stably by score: the order (score
           descending, chunk_id ascending).
        """
        if not acc or k <= 0:
            return []
        n = len(acc)
        keys = None
        if n > 4 * k + 64:
            step = n // (4 * k)
            sample = sorted(islice(acc.values(), 0, None, step), reverse=True)
            # ~k / step of the sample are expected among the top k; twice that plus a
            # margin puts theta near the 2k-th best score.
            theta = sample[min(len(sample), 2 * (-(-k // step)) + 8) - 1]
            keys = list(compress(acc, map(theta.__le__, acc.values())))
            if len(keys) < k:
                keys = None
        if keys is None:
            keys = list(acc)
        score = acc.__getitem__
        keys.sort(key=score, reverse=True)
        head = list(map(score, keys[:k + 1]))
        if len(set(head)) < len(head):
            # A tie within the k best or at the cut: each run of equal scores that starts
            # among the k best is put in chunk_id order (a run is contiguous, scores
            # being sorted; the run at the cut is sorted whole, so the cut is right).
            tie, n, i = self._tie.__getitem__, len(keys), 0
            while i < k and i < n:
                s, j = head[i], i + 1
                while j < n and score(keys[j]) == s:
                    j += 1
                if j - i > 1:
                    keys[i:j] = sorted(keys[i:j], key=tie)
                i = j
        del keys[k:]
        return list(zip(keys, map(score, keys)))

    def _scope_filter(self, scope: str, doc_scope: Optional[str] = None) -> Optional[frozenset]:
        """Positions allowed by the authority ``scope`` and the document ``doc_scope``
        (one doc_id: "ask this document"), or None when both allow every chunk."""
        allowed = None
        if scope and scope.upper() != "MIXED":
            key = scope.casefold()
            allowed = self._scopes.get(key)
            if allowed is None:
                allowed = frozenset(i for i, c in enumerate(self.index.chunks)
                                    if c.authority.casefold() == key)
                self._scopes[key] = allowed
        if doc_scope:
            key = "doc\0" + doc_scope
            docs = self._scopes.get(key)
            if docs is None:
                docs = frozenset(i for i, c in enumerate(self.index.chunks) if c.doc_id == doc_scope)
                if not docs:
                    raise MiniRagError("doc_scope %r names no document of the index" % doc_scope)
                self._scopes[key] = docs
            allowed = docs if allowed is None else allowed & docs
        return allowed

    def rank(self, terms: Sequence[str], k: int, scope: str = "MIXED",
             doc_scope: Optional[str] = None) -> List[Tuple[int, float]]:
        """``(position, score)`` of the k best chunks for analyzed ``terms``: the ranking
        core that :meth:`rank_terms`, :meth:`search` and :meth:`retrieve` all use, with
        nothing added (``index.chunks[position]`` is the chunk)."""
        qtf = dict(Counter(terms))
        return self._rank(qtf, k, scope, doc_scope=doc_scope)

    def _rank(self, qtf: Dict[str, int], k: int, scope: str,
              alternatives: Optional[Alternatives] = None,
              doc_scope: Optional[str] = None) -> List[Tuple[int, float]]:
        allowed = self._scope_filter(scope, doc_scope)
        if self._np is not None:
            return self._rank_numpy(qtf, k, allowed, alternatives)
        if self.pruning:
            total = self._postings_total(qtf)
            if total >= self.prune_min:
                return self._top(self._pruned_scores(qtf, k, allowed, alternatives), k)
            if self.index.num_chunks <= self.dense_ratio * total:
                return self._top(self._dense_scores(qtf, k, allowed, alternatives), k)
        return self._top(self._exhaustive_scores(qtf, allowed, alternatives), k)

    def _rank_numpy(self, qtf: Dict[str, int], k: int, allowed=None,
                    alternatives: Optional[Alternatives] = None) -> List[Tuple[int, float]]:
        """:meth:`_top` of :meth:`_exhaustive_scores`, with numpy (``[retrieval] numpy``).

        The query terms' postings are concatenated in the exhaustive order (longest first,
        then term) and summed per chunk by ``numpy.bincount``, which adds each chunk's
        weights one by one in input order starting from 0.0: the same float additions in
        the same order as the dict accumulator, so the same scores to the bit.  Then the
        k best (ties at the cut included) by ``argpartition``, ordered by (score
        descending, chunk_id ascending) by ``lexsort``.
        """
        np = self._np
        positions, weights = self._positions, self._weights
        if alternatives and self.scoring == "bm25":
            positions, weights = self._with_alternatives(qtf, alternatives)
        terms = [t for t in qtf if t in weights and len(positions[t])]
        if not terms or k <= 0:
            return []
        terms.sort(key=lambda t: (-len(positions[t]), t))
        mult = self._multipliers(qtf, terms)
        pos_parts, w_parts = [], []
        for t in terms:
            pos_parts.append(self._np_view(positions[t], np.uint32))
            w = self._np_view(weights[t], np.float64)
            m = mult.get(t)
            w_parts.append(w * m if m is not None else w)
        pos = np.concatenate(pos_parts) if len(pos_parts) > 1 else pos_parts[0]
        scores = np.bincount(pos, weights=np.concatenate(w_parts) if len(w_parts) > 1 else w_parts[0],
                             minlength=self.index.num_chunks)
        touched = np.zeros(self.index.num_chunks, dtype=bool)
        touched[pos] = True
        if allowed is not None:
            touched &= self._np_allowed(allowed)
        cand = np.flatnonzero(touched)
        cs = scores[cand]
        if len(cand) > k:
            theta = -np.partition(-cs, k - 1)[k - 1]
            keep = cs >= theta
            cand, cs = cand[keep], cs[keep]
        if self._np_tie is None:
            self._np_tie = np.asarray(self._tie, dtype=np.int64)
        order = np.lexsort((self._np_tie[cand], -cs))[:k]
        return list(zip(cand[order].tolist(), cs[order].tolist()))

    def _np_view(self, seq, dtype):
        """A numpy array of a postings list: zero-copy for a loaded index's views, else
        converted once and kept (bounded by the vocabulary)."""
        np = self._np
        if isinstance(seq, memoryview):
            return np.frombuffer(seq, dtype=dtype)
        key = (id(seq), dtype)
        hit = self._np_cache.get(key)
        if hit is None or hit[0] is not seq:
            if len(self._np_cache) >= 1 << 18:     # alternatives' lists are made per query
                self._np_cache.clear()
            hit = self._np_cache[key] = (seq, np.asarray(seq, dtype=dtype))
        return hit[1]

    def _np_allowed(self, allowed):
        mask = self._np_masks.get(id(allowed))
        if mask is None or mask[0] is not allowed:
            m = self._np.zeros(self.index.num_chunks, dtype=bool)
            m[sorted(allowed)] = True
            mask = self._np_masks[id(allowed)] = (allowed, m)
        return mask[1]

    def _postings_total(self, qtf: Dict[str, int]) -> int:
        """Postings the exhaustive path would add for ``qtf`` (alternatives not counted)."""
        df = self.index.doc_freq
        return sum(df(t) for t in qtf)

    def _exhaustive_scores(self, qtf: Dict[str, int], allowed=None,
                           alternatives: Optional[Alternatives] = None) -> Dict[int, float]:
        """Every chunk sharing a term with the query (within ``allowed`` positions, when
        given): the reference the pruned path must equal."""
        acc = self._accumulate(qtf, alternatives)
        if allowed is not None:
            acc = {p: s for p, s in acc.items() if p in allowed}
        return acc

    def rank_terms(self, terms: Sequence[str], k: int, scope: str = "MIXED",
                   alternatives: Optional[Alternatives] = None,
                   doc_scope: Optional[str] = None) -> List[Tuple[int, float, float]]:
        """``(position, score, similarity)`` of the k best chunks for analyzed ``terms``
        (and their ``alternatives``, see :meth:`alternatives`)."""
        qtf = dict(Counter(terms))
        top = self._rank(qtf, k, scope, alternatives, doc_scope)
        to_sim = self._to_similarity(qtf)
        return [(p, s, to_sim(s)) for p, s in top]

    def _ranked(self, text: str, terms: Sequence[str], k: int, scope: str = "MIXED",
                alternatives: Optional[Alternatives] = None,
                doc_scope: Optional[str] = None) -> List[Tuple[int, float, float]]:
        """:meth:`rank_terms`, or the dense / hybrid ranking of ``text`` when
        ``[retrieval] mode`` is not ``bm25`` (``embed/hybrid.py``)."""
        if self.fusion is None:
            return self.rank_terms(terms, k, scope, alternatives, doc_scope)
        return self.fusion.rank(self, text, terms, k, scope, alternatives, doc_scope)

    def _to_similarity(self, qtf: Dict[str, int]):
        """The function from a score for ``qtf`` to its similarity in [0, 1] (module doc)."""
        if self.scoring == "tfidf":
            return lambda s: min(1.0, s)
        ceiling = similarity_ceiling(self.index, qtf)
        if ceiling <= 0.0:
            return lambda s: 0.0
        return lambda s: min(1.0, s / ceiling)

    def _hit(self, pos: int, score: float, sim: float, rank: int, query: str) -> Hit:
        c = self.index.chunks[pos]
        return Hit(chunk_id=c.chunk_id, doc_id=c.doc_id, rank=rank, score=score, similarity=sim,
                   page=c.page, text=c.text, title=c.title, heading=c.heading,
                   authority=c.authority, effective=c.effective, query=query,
                   metadata=dict(c.metadata), section=list(c.section))

    def search(self, query: str, k: int = 10, scope: str = "MIXED",
               doc_scope: Optional[str] = None) -> List[Hit]:
        """Plain ranking of ``query`` (no thresholds, expansion or typo correction)."""
        terms = self.index.analyzer.analyze(query)
        return [self._hit(p, s, sim, r, query)
                for r, (p, s, sim) in enumerate(self._ranked(query, terms, k, scope, doc_scope=doc_scope), 1)]

    # ------------------------------------------------------------ typo correction

    def _build_typo_map(self) -> None:
        """Surface words of the corpus and their deletion neighbourhoods, built on first need.

        ``_surface``: every distinct token of the chunks' indexed text (``tokenize``) whose
        analyzed terms are all indexed, with those terms.  ``_typo_map``: deletion string ->
        surface words producing it (1 deletion for words of 3+ characters, 2 for 6+: enough
        for every query token the rule corrects).
        """
        analyze = self.index.analyzer.analyze
        lowercase = self.index.analyzer.lowercase
        surface: Dict[str, Tuple[str, ...]] = {}
        seen = set()
        for c in self.index.chunks:
            for tok in tokenize(indexed_text(c), lowercase):
                if tok in seen:
                    continue
                seen.add(tok)
                if _HAS_DIGIT(tok) or len(tok) < 3 or len(tok) > MAX_TYPO_WORD + 2:
                    continue
                terms = tuple(analyze(tok))
                # A stopword has no terms: a typo of it ("whta") is corrected to nothing.
                if all(self.index.has_term(t) for t in terms):
                    surface[tok] = terms
        if self.index.analyzer.stopwords == "english":
            for word in ENGLISH_STOPWORDS:
                surface.setdefault(word, ())
        m: Dict[str, List[str]] = {}
        for word in sorted(surface):                 # sorted, so each list is sorted
            depth = 2 if len(word) >= 6 else 1
            for d in [word] + _deletes(word, depth):
                lst = m.get(d)
                if lst is None:
                    m[d] = [word]
                else:
                    lst.append(word)
        self._surface = surface
        self._typo_map = m

    def correct(self, token: str) -> Optional[Tuple[str, ...]]:
        """The indexed terms replacing a query token whose terms are not all indexed, or None.

        The token is compared with the corpus's own words (before stemming), so a typo
        anywhere in the word is found: ``requirments`` -> ``requirements`` -> ``requir``.
        """
        limit = max_edits(token)
        if not limit:
            return None
        if self._typo_map is None:
            self._build_typo_map()
        best = None
        tried = set()
        for d in [token] + _deletes(token, limit):
            for cand in self._typo_map.get(d, ()):  # type: ignore[union-attr]
                if cand in tried or cand == token:
                    continue
                if len(tried) >= MAX_TYPO_CANDIDATES:
                    break
                tried.add(cand)
                dist = typo_distance(token, cand, limit)
                if dist > limit:
                    continue
                terms = self._surface[cand]
                # A stopword counts as the most frequent word there is.
                df = self.index.doc_freq(terms[0]) if terms else self.index.num_chunks + 1
                key = (dist, -df, cand)
                if best is None or key < best[0]:
                    best = (key, terms)
        return best[1] if best else None

    def query_terms(self, text: str, corrections: Optional[Dict[str, str]] = None,
                    keep: Optional[Callable[[str], bool]] = None) -> List[str]:
        """Analyzed terms of ``text``; with ``corrections`` (a dict), typos are corrected
        and recorded in it as ``token -> "term ..."``; a token whose terms ``keep`` all
        accepts is never a typo (``background.KnownWords``: a general-English word)."""
        analyzer = self.index.analyzer
        if corrections is None or not self.config["retrieval"].get("typo_correction", True):
            return analyzer.analyze(text)
        out: List[str] = []
        has_term = self.index.has_term
        for tok in tokenize(text, analyzer.lowercase):
            terms = analyzer.analyze(tok)
            if not all(has_term(t) for t in terms) and not (keep is not None and terms and all(keep(t) for t in terms)):
                fix = self.correct(tok)
                if fix is not None:
                    corrections[tok] = " ".join(fix)
                    terms = list(fix)
            out.extend(terms)
        return out

    # ------------------------------------------------------------ QA contract flow

    @staticmethod
    def _compile_rules(rules: Dict[str, Any]):
        out = []
        for name in sorted(rules):
            rule = rules[name]
            out.append((name, _phrase_re(rule["match"]), [p for p in rule["add"]]))
        return out

    def expansions(self, question: str) -> List[str]:
        """Expanded variants of ``question`` (rule 2 of the module docstring), in order."""
        norm = _norm_phrase(question)
        out: List[str] = []
        for _name, pattern, adds in self._rules:
            if not pattern.search(norm):
                continue
            for phrase in adds:
                if _phrase_re(phrase).search(norm):
                    continue          # "if missing": the question already says it
                # The pattern ignores case and spacing, so it matches the question as typed.
                variant = pattern.sub(lambda _m, p=phrase: p, question)
                if variant not in out and variant != question:
                    out.append(variant)
        return out

    def _gate(self, pos: int, terms: Iterable[str]) -> bool:
        """Fallback gate: a query term is among the doc_id's or title's analyzed terms."""
        c = self.index.chunks[pos]
        analyze = self.index.analyzer.analyze
        names = set(analyze(_ID_SEPARATORS.sub(" ", c.doc_id))) | set(analyze(c.title))
        return any(t in names for t in terms)

    #: Chunks whose TF-IDF vector :meth:`_mmr` keeps (:attr:`_ltc_cache`, cleared when full).
    LTC_CACHE_SIZE = 20_000

    def _chunk_ltc(self, chunk_id: str) -> Tuple[Dict[str, float], float]:
        """The chunk's TF-IDF (ltc) vector and norm (``_ltc``), computed once per chunk:
        it depends on the index alone, not on the question."""
        v = self._ltc_cache.get(chunk_id)
        if v is None:
            idx = self.index
            if len(self._ltc_cache) >= self.LTC_CACHE_SIZE:
                self._ltc_cache.clear()
            v = self._ltc_cache[chunk_id] = _ltc(idx.terms(idx.position(chunk_id)), idx.tfidf_idf)
        return v

    def _mmr(self, hits: List[Hit], lam: float) -> List[Hit]:
        vecs = {h.chunk_id: self._chunk_ltc(h.chunk_id) for h in hits}
        pair: Dict[Tuple[str, str], float] = {}

        def cos(a: str, b: str) -> float:
            key = (a, b) if a < b else (b, a)
            v = pair.get(key)
            if v is None:
                v = pair[key] = _ltc_cosine(vecs[a], vecs[b])
            return v

        remaining = sorted(hits, key=lambda h: (-h.similarity, h.chunk_id))
        chosen: List[Hit] = []
        while remaining:
            best, best_key = 0, None
            for i, h in enumerate(remaining):
                red = max((cos(h.chunk_id, s.chunk_id) for s in chosen), default=0.0)
                key = (-(lam * h.similarity - (1.0 - lam) * red), h.chunk_id)
                if best_key is None or key < best_key:
                    best, best_key = i, key
            chosen.append(remaining.pop(best))
        return chosen

    #: ``retrieve`` takes the question's analysis (``question.QuestionAnalysis``) as ``qa``.
    accepts_analysis = True

    def retrieve(self, question: str, doc_scope: Optional[str] = None, qa: Any = None) -> Retrieval:
        """Run the QA contract's retrieval flow for one question (see module docstring);
        ``doc_scope`` (a doc_id) restricts every ranking to that document's chunks.
        ``qa`` (``question.analyze_question`` of ``question`` with this retriever) gives
        the corrected terms, corrections, expansion variants and their alternatives
        already computed."""
        r = self.config["retrieval"]
        top_k = r["top_k"]
        scope = r["authority_scope"] or "MIXED"
        if qa is not None:
            corrections: Dict[str, str] = dict(qa.corrections)
            terms = list(qa.query_terms)
            variants = list(qa.variants)
        else:
            corrections = {}
            terms = self.query_terms(question, corrections)
            variants = [question] + self.expansions(question)
        merged: Dict[Tuple[str, int, str], Tuple[float, float, int, str]] = {}
        gate_terms: List[str] = list(terms)
        alternatives: Dict[str, List[str]] = {}
        for vi, variant in enumerate(variants):
            vterms = terms if vi == 0 else (qa.variant_terms[vi] if qa is not None
                                            else self.query_terms(variant, corrections))
            if vi:
                gate_terms.extend(vterms)
            alts = self.alternatives(variant, vterms) if qa is None else qa.alternatives[vi]
            for t, lst in alts.items():
                bucket = alternatives.setdefault(t, [])
                bucket.extend(" ".join(a) for a, _ in lst if " ".join(a) not in bucket)
            for pos, score, sim in self._ranked(variant, vterms, top_k, scope, alts, doc_scope):
                c = self.index.chunks[pos]
                key = (c.doc_id, c.page, c.chunk_id)
                old = merged.get(key)
                if old is None or sim > old[0]:
                    merged[key] = (sim, score, pos, variant)
        ranked = sorted(merged.values(), key=lambda v: (-v[0], -v[1], self.index.chunks[v[2]].chunk_id))[:top_k]
        candidates = [self._hit(pos, score, sim, i, variant)
                      for i, (sim, score, pos, variant) in enumerate(ranked, 1)]
        threshold = r["min_similarity"]
        accepted = [h for h in candidates if h.similarity >= threshold]
        fallback_used = False
        if candidates and (not accepted or not r["fallback_only_if_empty"]):
            fb = r["fallback_min_similarity"]
            top = candidates[0]
            if top.similarity >= fb and self._gate(ranked[0][2], gate_terms):
                extra = [h for h in candidates if h.similarity >= fb]
                if len(extra) > len(accepted):
                    accepted, fallback_used, threshold = extra, True, fb
        hits = [h.copy() for h in accepted]
        if r["use_mmr"] and len(hits) > 1:
            hits = self._mmr(hits, r["mmr_lambda"])
        signals = self.signals(hits, threshold, len(candidates))
        joined: Dict[str, str] = {}
        hits = self._with_lists(hits, joined)
        for i, h in enumerate(hits, 1):
            h.rank = i
        return Retrieval(question=question, hits=hits, candidates=candidates,
                         fallback_used=fallback_used, expansions=variants[1:], scope=scope,
                         query_terms=list(dict.fromkeys(terms)), corrections=corrections,
                         alternatives={t: alternatives[t] for t in sorted(alternatives)},
                         signals=signals, joined=joined)

    def _with_lists(self, hits: List[Hit], joined: Dict[str, str]) -> List[Hit]:
        """Step 7 of the module docstring: the hits in their ranked order, then the chunks of
        the lists they introduce that are not hits already, in their lead-ins' order (ranks are
        left to the caller: the retrieved ranking is never displaced, so rank measures on a
        trace are the retriever's); ``joined`` gets ``{joined chunk id: its lead-in's chunk id}``."""
        chunks = self.index.chunks
        seen = {h.chunk_id for h in hits}
        out: List[Hit] = list(hits)
        for h in hits:
            for k in list_after(chunks, self.index.position(h.chunk_id), LIST_CHUNKS):
                if chunks[k].chunk_id not in seen:
                    seen.add(chunks[k].chunk_id)
                    joined[chunks[k].chunk_id] = h.chunk_id
                    out.append(self._hit(k, h.score, h.similarity, h.rank, h.query))
        return out

    def signals(self, hits: List[Hit], threshold: float, candidate_count: int) -> Dict[str, Any]:
        """Seed 000's retrieval quality signals over the accepted hits."""
        sims = sorted((h.similarity for h in hits), reverse=True)
        dates = sorted(h.effective for h in hits if h.effective)
        as_of = self.config.get("guards", {}).get("as_of", "")
        age = None
        if dates and as_of:
            try:
                age = (datetime.date.fromisoformat(as_of) - datetime.date.fromisoformat(dates[0])).days
            except ValueError:
                raise MiniRagError("[guards] as_of must be an ISO date YYYY-MM-DD, got %r" % as_of) from None
        return {
            "max": sims[0] if sims else 0.0,
            "mean": math.fsum(sims) / len(sims) if sims else 0.0,
            "gap": sims[0] - sims[1] if len(sims) > 1 else None,
            "hit_count": len(sims),
            "candidate_count": candidate_count,
            "threshold": threshold,
            "oldest_effective": dates[0] if dates else None,
            "newest_effective": dates[-1] if dates else None,
            "as_of": dated_as_of(as_of),
            "oldest_age_days": age,
        }


def open_retriever(config: Dict[str, Any], corpus_path: Optional[str] = None,
                   force: bool = False, progress=None) -> Retriever:
    """A retriever over the configured index, rebuilt first when stale (with its dense
    index too when ``[retrieval] mode`` is ``dense`` or ``hybrid``)."""
    retriever = Retriever(build_or_load(config, corpus_path, force=force, progress=progress), config)
    if config["retrieval"].get("mode", "bm25") != "bm25":
        from ..embed.hybrid import attach
        attach(retriever, config)
    return retriever


__all__ = ["Retriever", "open_retriever", "osa_distance", "similarity_ceiling", "max_edits"]


def dated_as_of(as_of: str) -> Optional[str]:
    """``as_of`` as shown in traces and reports: None when unset or when the corpus has no
    dated document (config.NO_DATE_AS_OF is an internal stand-in, never a date to print)."""
    from ..config import NO_DATE_AS_OF
    return None if not as_of or as_of == NO_DATE_AS_OF else as_of

#!/usr/bin/env python3
"""score_eval.py: score a RAG system's traces against a gold set and enforce committed gates.

One standard-library file; copy it into any repository.  It reads a gold JSONL and a trace
JSONL (seed 002's contracts), computes every metric in the registry below, checks them
against the gates of one dataset section of ``gates.toml`` (or a ``--gates`` string), prints
one JSON object on stdout and exits

    0  every gate passed,
    1  a gate failed,
    2  usage or input error (each bad line reported as ``path:line: what is wrong, got <value>``).

Usage (seed 002's command works unchanged)::

    python score_eval.py --gold G --trace T --k 5 --gates precision=0.80,chr=0.75,under=0.05,over=0.10
    python score_eval.py --gold G --trace T --dataset baseline --gates-file gates.toml \\
        --k 1,5,10 --out R.json --markdown R.md --items I.jsonl [--baseline OLD.json]
    python score_eval.py --qrels QRELS --run RUN --k 5,10 --gates nDCG@10=0.3   # TREC files
    python score_eval.py --qrels QRELS --run RUN --format trec -m map -m ndcg_cut.10 -q   # as trec_eval
    python score_eval.py --gold G --trace T --gates "precision=0.8,warn:pass_rate=0.97,monitor:nDCG@10" \
        --weights '{"faithfulness": 0.4}' --html R.html --junit R.xml --csv I.csv --metrics-csv M.csv
    python score_eval.py calibrate --human H.jsonl --auto A.jsonl [--field NAME] [--bins 0.5]
    python score_eval.py merge-html OUT.html A.html B.html

Gates have tiers (``block`` sets the exit status, ``warn`` and ``monitor`` only report); a
weighted scorecard over seed 004's stages (``STAGES``) gives a run and each item an overall score.
    python score_eval.py --trace T --chunks C --gates answer_relevance=0.5   # no gold: reference-free
    python score_eval.py --gold G --trace SHARD1 --k 1,5 --partial P1.json      # one shard ...
    python score_eval.py merge P1.json P2.json --trace T --gates-file gates.toml  # ... the report

Pipeline, top to bottom: constants and the error class -> metric registry -> TOML subset
reader and gates config -> line readers (records with line numbers) -> per-item judging
(no I/O) -> aggregation (rates, Wilson intervals, categories, failure modes) -> gates and
regressions against a baseline report -> output (JSON, Markdown, items JSONL) -> main().

Python API (stable): ``main(argv=None) -> int`` and ``parse_toml(text, path) -> dict``.

>>> parse_toml('[baseline]\\nprecision = { min = 0.8 }\\n')
{'baseline': {'precision': {'min': 0.8}}}
"""
from __future__ import annotations

import argparse
import csv
import difflib
import html
import io
import json
import math
import os
import random
import re
import stat
import sys
import tempfile
import time
import traceback
from array import array
from bisect import bisect_left
from collections import Counter
from functools import partial
from itertools import compress
from typing import Dict, List, NamedTuple, Optional, Tuple

try:  # Python 3.11+; older versions use only the subset reader below.
    import tomllib as _tomllib
except ImportError:  # pragma: no cover - depends on the interpreter
    _tomllib = None

# --------------------------------------------------------------------------- constants

REFUSAL = "not in context"            # seed 002's refusal token (compared after strip + lower)
DEFAULT_GATES = "precision=0.80,chr=0.75,under=0.05,over=0.10"   # seed 002's suggested gates
DEFAULT_GATES_FILE = "gates.toml"
MAX_ERRORS = 20                       # bad lines listed one by one, the rest only counted
MAX_CITATIONS = 5                     # seed 000: an answer cites at most five chunks
DECISIONS = ("ANSWER", "ABSTAIN", "CLARIFY", "BLOCK")
Z95 = 1.959963984540054               # two-sided 95% normal quantile
NO_CATEGORY = "(none)"
SCHEMA = "score_eval/1"
__version__ = "0.1.0"                 # also in every JSON report ("version"); pyproject.toml has the same
# Gate tiers (seed 004's layered gates): only "block" gates set the exit status; "warn" gates
# are listed first in every output (they are the failures a passing run would hide);
# "monitor" gates only report their value.
TIERS = ("block", "warn", "monitor")
_TIER_ORDER = {"warn": 0, "block": 1, "monitor": 2}

# Limits on untrusted input (README "Limits and exit codes"); each breach is a path:line: error, exit 2.
MAX_LINE_BYTES = 16 * 1024 * 1024     # one input line (a JSONL row, a TREC line); --max-line-bytes
MAX_JSON_DEPTH = 64                   # nesting of arrays/objects in one JSON row
MAX_NUMBER_CHARS = 100                # digits of one integer in JSON or TOML (Python's int limit is 4300)
MAX_K = 10000                         # largest rank cutoff for --k and metric names
TMP_SUFFIX = ".ragtmp"                # temp files of an atomic write: .<name>.<pid>.<random>.ragtmp
EXIT_PASS, EXIT_GATE, EXIT_INPUT, EXIT_INTERNAL = 0, 1, 2, 3
_LIMITS = {"line_bytes": MAX_LINE_BYTES}   # this run's values (main sets them from the options)

# Words that carry no claim of their own; everything else of >= 3 letters in a shipped claim
# must occur in a cited chunk.  Negations (no, not, never) are deliberately NOT here: a claim
# that adds "not" to its source says the opposite of it.
STOPWORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before
being below between both but by can could did do does doing down during each either else
for from further had has have having he her here hers him his how i if in into is it its
itself just let may me might more most must my nor of off on once only or other ought our
ours out over own per same shall she should so some such than that the their theirs them
then there these they this those through thus to too under until up upon us very via was
we were what when where whether which while who whom whose why will with within without
would yet you your yours
""".split())

_TOKEN_RX = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+")


class ScoreError(ValueError):
    """Bad input; ``str(err)`` is the whole message (one or more ``path:line: ...`` lines)."""


# --------------------------------------------------------------------------- metric registry


class Metric(NamedTuple):
    """One registry entry.  ``K`` in a name is a rank cutoff filled from ``--k`` or a gate."""
    name: str
    kind: str        # "rate" (binary per item, Wilson CI), "mean" (per-item mean, normal CI), "count"
    better: str      # "higher" or "lower": the direction of a bare ``--gates name=value``
    definition: str
    fields: str      # input fields read
    undefined: str   # what an empty denominator gives (text for the docs)
    empty: object    # ... and as a value (None = not measured)
    gold: bool = True   # needs gold labels; False = reference-free (scored from a trace alone)
    needs: str = ""     # per-row work beyond the seed's verdicts (a key of NEEDS); "" = always computed


# Per-item verdict flags (bits).  The report's "items" map stores them as letters so that a
# later run can pair its items with this one (--baseline).
FLAG_LETTERS = "tsachpvxmedofugnzr" + "lwkjyqCDSTLMRV" + "PXIAKGU"
(F_TRACE, F_SHIP, F_ANS, F_CONT, F_HIT, F_PASS, F_VALID, F_HALL, F_HMEAS, F_EXPREF, F_DEC,
 F_DECOK, F_FB, F_FBUSED, F_GOLD, F_NOTRET, F_GOLDRET, F_REC,
 F_NOLAB, F_PROSE, F_CUTOFF, F_POLREJ, F_POLV, F_SRCV, F_REQCONF, F_OKCONF, F_REQSTALE, F_OKSTALE,
 F_REQCLAR, F_OKCLAR, F_REQDOCS, F_OKDOCS,
 F_PARTIAL, F_CITTEXT, F_BADMARK, F_GANS, F_ANSOK, F_GMEAS, F_UNSUP) = [1 << i for i in range(len(FLAG_LETTERS))]
FLAG_MEANINGS = (
    ("t", "a trace row exists for the item"),
    ("s", "shipped: the claim is not the refusal token (a missing trace or null claim ships)"),
    ("a", "gold answerable is true"),
    ("c", "containment: a gold substring of >= 5 characters is in the claim (vacuous for [])"),
    ("h", "citation hit: citations within retrieved_ids and overlapping gold_citations"),
    ("p", "item passes (pass_rate)"),
    ("v", "citation_validity holds for the shipped answer"),
    ("x", "hallucinated shipped claim"),
    ("m", "hallucination was measurable for the item (chunk text known)"),
    ("e", "expected to refuse (expected_decision != ANSWER, else answerable false)"),
    ("d", "decision compared (gold expected_decision and trace decision both present)"),
    ("o", "decision matched"),
    ("f", "the trace carries fallback_used"),
    ("u", "fallback_used is true"),
    ("g", "the item has gold citations (enters the retrieval means)"),
    ("n", "a citation is not in retrieved_ids"),
    ("z", "some gold citation is anywhere in retrieved_ids"),
    ("r", "seed recall at the first k: every gold citation in the top k"),
    ("l", "no gold labels (reference-free item: label-based metrics and modes skip it)"),
    ("w", "refused in prose: the claim matches a [scorer] refusal or cutoff pattern"),
    ("k", "training-cutoff excuse: the claim matches a [scorer] cutoff pattern"),
    ("j", "gold expects a policy rejection (expected_behavior reject with rejection_reason)"),
    ("y", "policy violation (a [policy.*] pattern in the shipped claim, or a policy rejection shipped)"),
    ("q", "source-policy violation (quote_only paraphrased, no_use cited or reproduced)"),
    ("C", "gold required_behavior must_surface_conflict"),
    ("D", "... met: right decision and a conflict reason code"),
    ("S", "gold required_behavior must_detect_staleness"),
    ("T", "... met: right decision and a staleness reason code"),
    ("L", "gold required_behavior must_clarify"),
    ("M", "... met: right decision and a CLARIFY decision or clarification reason code"),
    ("R", "gold required_citation_doc_ids given"),
    ("V", "... met: every listed document cited"),
    ("P", "partial refusal: the response answers part of the question and declines the rest"),
    ("X", "citations read from the text (the row's citations list was empty or absent)"),
    ("I", "a citation marker in the text resolves to no retrieved chunk"),
    ("A", "gold_answers given (answer correctness measured)"),
    ("K", "answer_correct: the shipped answer matches a gold answer"),
    ("G", "grounding checked sentence by sentence (a shipped answer with known chunk text)"),
    ("U", "unsupported answer: at least one checked sentence is not supported by the chunks"),
)

M = Metric
REGISTRY: Tuple[Metric, ...] = (
    M("precision", "rate", "higher",
      "shipped answerable items with containment and citation hit / shipped items |S|",
      "answer_json.claim, citations, retrieved_ids; gold answerable, gold_claim_substr, gold_citations",
      "1.0 when nothing shipped", 1.0),
    M("chr", "rate", "higher",
      "shipped answerable items with a citation hit / all shipped items |S| (seed 002)",
      "answer_json.citations, retrieved_ids; gold answerable, gold_citations",
      "1.0 when nothing shipped", 1.0),
    M("under_refusal", "rate", "lower",
      "unanswerable items that shipped an answer / unanswerable items |U|",
      "answer_json.claim; gold answerable", "0.0 when no unanswerable item", 0.0),
    M("over_refusal", "rate", "lower",
      "answerable items refused / answerable items |A|",
      "answer_json.claim; gold answerable", "0.0 when no answerable item", 0.0),
    M("recall@K", "rate", "higher",
      "seed 002, all-or-nothing: answerable items whose gold citations are ALL in the first K "
      "retrieved_ids (trace order; vacuously true for []) / |A|; `recall@k` is K = first --k",
      "retrieved_ids; gold answerable, gold_citations", "0.0 when no answerable item", 0.0),
    M("pass_rate", "rate", "higher",
      "items that pass / all items; answerable passes when shipped with containment and "
      "citation hit, unanswerable when refused (QA contract)",
      "answer_json; gold answerable, gold_claim_substr, gold_citations", "never empty", None),
    M("correct_refusal", "rate", "higher",
      "refusals of unanswerable items / all refusals |R| (refusal precision)",
      "answer_json.claim; gold answerable", "1.0 when nothing refused", 1.0),
    M("incorrect_refusal", "rate", "lower",
      "refusals of answerable items / all refusals |R| (share of refusals that were wrong; "
      "over_refusal divides by |A| instead)",
      "answer_json.claim; gold answerable", "0.0 when nothing refused", 0.0),
    M("hallucination", "rate", "lower",
      "shipped claims with no citation, a citation outside retrieved_ids, or a number or "
      "content word (>= 3 letters, not a stopword) found in no cited chunk's text / |S|",
      "answer_json, retrieved_ids, cited_chunks or --chunks",
      "0.0 when nothing shipped; null (gate fails) without chunk text", 0.0, gold=False),
    M("citation_validity", "rate", "higher",
      "shipped answers whose citations are unique, at most 5 and all in retrieved_ids / |S| "
      "(seed 000)", "answer_json.citations, retrieved_ids", "1.0 when nothing shipped", 1.0, gold=False),
    M("false_accept_rate", "rate", "lower",
      "shipped among items expected to refuse (expected_decision != ANSWER, else answerable "
      "false) / items expected to refuse (seed 000)",
      "answer_json.claim; gold expected_decision, answerable", "0.0 when none expected to refuse", 0.0),
    M("false_refuse_rate", "rate", "lower",
      "refused among items expected to answer / items expected to answer (seed 000)",
      "answer_json.claim; gold expected_decision, answerable", "0.0 when none expected to answer", 0.0),
    M("decision_accuracy", "rate", "higher",
      "trace decision == gold expected_decision / items having both",
      "decision; gold expected_decision", "null (not measured) when no item has both", None),
    M("fallback_used_count", "count", "lower",
      "items whose trace says fallback_used = true (QA contract)",
      "fallback_used", "null (not measured) when no trace carries fallback_used", None, gold=False),
    M("fallback_used_rate", "rate", "lower",
      "fallback_used true / items whose trace carries fallback_used",
      "fallback_used", "null (not measured) when no trace carries fallback_used", None, gold=False),
    M("fallback_used_rate_answerable", "rate", "lower",
      "fallback_used true / answerable items whose trace carries fallback_used",
      "fallback_used; gold answerable", "null (not measured) when no answerable trace carries it", None),
    M("P@K", "mean", "higher",
      "trec_eval P_K: gold citations in the top K of the ranking / K, mean over items with gold "
      "citations", "retrieved_ids, retrieved_scores; gold_citations",
      "null when no item has gold citations", None),
    M("R@K", "mean", "higher",
      "trec_eval recall_K: fraction of the item's gold citations in the top K (not seed's "
      "all-or-nothing recall@K)", "retrieved_ids, retrieved_scores; gold_citations",
      "null when no item has gold citations", None),
    M("Success@K", "rate", "higher",
      "trec_eval success_K: any gold citation in the top K", "retrieved_ids, retrieved_scores; gold_citations",
      "null when no item has gold citations", None),
    M("RR", "mean", "higher",
      "trec_eval recip_rank: 1 / rank of the first gold citation, 0 when none is retrieved",
      "retrieved_ids, retrieved_scores; gold_citations", "null when no item has gold citations", None),
    M("RR@K", "mean", "higher",
      "reciprocal rank counting only the top K", "retrieved_ids, retrieved_scores; gold_citations",
      "null when no item has gold citations", None),
    M("nDCG@K", "mean", "higher",
      "trec_eval ndcg_cut_K: sum gain/log2(rank+1) over the top K, divided by the same for the "
      "ideal order of all gold citations (gain 1; qrels relevance level with --qrels)",
      "retrieved_ids, retrieved_scores; gold_citations", "null when no item has gold citations", None),
    # Issue 20: prose refusals, reference-free metrics, policies, decisions for the right reason,
    # latency and cost.  Computed by _extra_metrics (below the judging code).
    M("refusal_rate", "rate", "lower",
      "items refused (the refusal token, or a [scorer] refusal_patterns / cutoff_patterns match) "
      "/ all items", "answer_json.claim", "null when there are no items", None, gold=False),
    M("rejection_calibration", "rate", "higher",
      "items whose answer/refuse behaviour matches the label (expected_behavior, else "
      "expected_decision != ANSWER, else answerable false means refuse) / labelled items (seed 004)",
      "answer_json.claim; gold expected_behavior, expected_decision, answerable",
      "null when no item is labelled", None),
    M("policy_compliance", "rate", "higher",
      "judged items without a policy violation / judged items; judged = shipped items plus items "
      "gold says to reject for a policy (expected_behavior reject + rejection_reason); a violation "
      "is a shipped claim matching a [policy.*] pattern, or a policy rejection that shipped",
      "answer_json.claim; [policy.*] patterns; gold expected_behavior, rejection_reason",
      "1.0 when nothing is judged; null when no [policy.*] is configured and no gold policy "
      "rejection exists", 1.0, gold=False),
    M("source_policy_compliance", "rate", "higher",
      "shipped items without a source-policy violation / shipped items: a quote_only chunk's "
      "sentences must be verbatim, a no_use chunk may be neither cited nor reproduced (8+ "
      "consecutive words)", "answer_json, retrieved_ids, cited_chunks {text, policy} or --chunks "
      "policy", "1.0 when nothing shipped (a chunk without policy is summarize)", 1.0, gold=False),
    M("answer_relevance", "mean", "higher",
      "share of the question's content terms (numbers, words of >= 3 letters not stopwords; final "
      "s folded) that occur in the shipped claim, mean over shipped items (lexical)",
      "q, answer_json.claim", "null when no shipped item has a question with content terms",
      None, gold=False, needs="relevance"),
    M("context_relevance", "mean", "higher",
      "share of retrieved chunks sharing a content term with the question, mean over items whose "
      "retrieved chunks' texts are all known", "q, retrieved_ids, cited_chunks or --chunks",
      "null when no item has a question, retrieved chunks and all their texts", None, gold=False,
      needs="relevance"),
    M("citation_coverage", "rate", "higher",
      "items whose citations name every document of gold required_citation_doc_ids (doc id = "
      "chunk id before '#') / items listing them (seed 000)",
      "answer_json.citations; gold required_citation_doc_ids",
      "null when no item lists required_citation_doc_ids", None),
    M("conflict_correct_rate", "rate", "higher",
      "must_surface_conflict items with the right decision (expected_decision or "
      "acceptable_decisions; without a trace decision: refused) and a reason whose code (text "
      "before ':') starts with 'conflict' / those items (seed 000)",
      "decision, reasons, answer_json.claim; gold required_behavior, expected_decision, "
      "acceptable_decisions", "null when no item requires it", None),
    M("staleness_correct_rate", "rate", "higher",
      "must_detect_staleness items with the right decision and a reason whose code starts with "
      "'stale' / those items (seed 000)",
      "decision, reasons, answer_json.claim; gold required_behavior, expected_decision, "
      "acceptable_decisions", "null when no item requires it", None),
    M("clarify_correct_rate", "rate", "higher",
      "must_clarify items with the right decision and a CLARIFY decision or a reason whose code "
      "starts with 'ambiguous' or 'clarif' / those items",
      "decision, reasons; gold required_behavior, expected_decision, acceptable_decisions",
      "null when no item requires it", None),
    M("latency_p50", "quantile", "lower",
      "median of timings_ms.total in ms (nearest rank: the ceil(0.50 n)-th smallest)",
      "timings_ms.total", "null when no trace row carries timings_ms.total", None, gold=False),
    M("latency_p95", "quantile", "lower",
      "95th percentile of timings_ms.total in ms (nearest rank: the ceil(0.95 n)-th smallest)",
      "timings_ms.total", "null when no trace row carries timings_ms.total", None, gold=False),
    M("cost_per_item", "mean", "lower",
      "sum of cost / trace rows carrying cost (any currency unit, as written)",
      "cost", "null when no trace row carries cost", None, gold=False),
)
del M
_BY_NAME = {m.name: m for m in REGISTRY}
ALIASES = {"under": "under_refusal", "over": "over_refusal"}   # seed 002's --gates names
_FAMILIES = ("P", "R", "Success", "RR", "nDCG", "recall")
_PARAM_RX = re.compile(r"(P|R|Success|RR|nDCG|recall)@([1-9][0-9]{0,5})")
# Per-row work that only some metrics read (a registry entry's ``needs``).  The seed's metrics
# are always computed; a need is computed when something asks for one of its metrics: a gate, a
# [regression] metric, a [weights] stage of the gates file or --weights, a per-item output
# (--items, --html, --csv, --junit-items), --compute, a --baseline comparison, a --partial
# shard, or reference-free mode (no gold labels: these are what there is to measure).
NEEDS = {"relevance": "content terms of q, the claim and the retrieved chunks' texts"}
NOT_COMPUTED = ("not computed: nothing asked for it (a gate, [regression], a [weights] stage, --items/--html/"
                "--csv, or --compute %s)")


def needs_for(metrics) -> set:
    """The NEEDS keys of the registry entries ``metrics`` (Metric or MetricRef)."""
    return {getattr(m, "metric", m).needs for m in metrics} - {""}


SEED_ONLY = ("precision", "chr", "under_refusal", "over_refusal", "pass_rate", "correct_refusal",
             "incorrect_refusal", "hallucination", "citation_validity", "false_accept_rate",
             "false_refuse_rate", "decision_accuracy", "fallback_used_count", "fallback_used_rate",
             "fallback_used_rate_answerable")


# --------------------------------------------------------------------------- retrieval measures
#
# One implementation per measure of the registry's retrieval families, used by QA mode
# (Scorer._retrieval: P@K, R@K, Success@K, RR, RR@K, nDCG@K) and by TREC mode (trec_query: P_K,
# recall_K, success_K, recip_rank, ndcg_cut_K) alike.  Both reduce a ranking to ``positions``:
# the 0-based ranks of its relevant documents, ascending, with ``gains``, their levels (1 for a
# plain gold citation; the qrels level >= 1 with --qrels).

_DISC: List[float] = []


def _disc(n: int) -> List[float]:
    """1 / log2(rank + 1) for ranks 1..n (trec_eval's nDCG discount)."""
    while len(_DISC) < n:
        _DISC.append(1.0 / math.log2(len(_DISC) + 2))
    return _DISC


def relevant_positions(ranking: List[str], rel) -> Tuple[List[int], List[int]]:
    """(0-based ranks of the documents of ``rel`` in ``ranking``, their gains); ``rel`` maps an
    id to its level (>= 1), or is a collection of ids (gain 1 each)."""
    positions: List[int] = []
    gains: List[int] = []
    if type(rel) is dict:
        get = rel.get
        for pos, d in enumerate(ranking):
            g = get(d)
            if g is not None:
                positions.append(pos)
                gains.append(g)
    else:
        for pos, d in enumerate(ranking):
            if d in rel:
                positions.append(pos)
                gains.append(1)
    return positions, gains


def hits_at(positions: List[int], k: int) -> int:
    """Relevant documents in the top ``k``."""
    return bisect_left(positions, k)


def measure_p(hits: int, k: int) -> float:
    """P@K / trec_eval P_K: relevant documents in the top K / K."""
    return hits / k


def measure_r(hits: int, nrel: int) -> float:
    """R@K / trec_eval recall_K: relevant documents in the top K / all relevant (0 when none)."""
    return hits / nrel if nrel else 0.0


def measure_success(hits: int) -> float:
    """Success@K / trec_eval success_K: 1 when a relevant document is in the top K."""
    return 1.0 if hits else 0.0


def measure_rr(positions: List[int], k: Optional[int] = None) -> float:
    """RR (k None) / RR@K / trec_eval recip_rank: 1 / rank of the first relevant document,
    0 when none is retrieved (within the top k)."""
    if positions and (k is None or positions[0] < k):
        return 1.0 / (positions[0] + 1)
    return 0.0


def ideal_gains(levels) -> List[int]:
    """The ideal ranking's gains: the positive levels, largest first."""
    return sorted((g for g in levels if g > 0), reverse=True)


def ideal_dcg(ideal: List[int], k: int) -> float:
    """DCG of the top ``k`` of the ideal ranking (``ideal``: gains largest first)."""
    disc = _disc(k)
    total = 0.0
    for pos, gain in enumerate(ideal[:k]):
        total += gain * disc[pos]
    return total


def measure_ndcg(positions: List[int], gains: List[int], k: int, idcg: float) -> float:
    """nDCG@K / trec_eval ndcg_cut_K: sum of gain / log2(rank + 1) over the top K, divided by
    ``idcg`` (ideal_dcg of the same K); 0 when nothing is relevant."""
    disc = _disc(k)
    dcg = 0.0
    for pos, gain in zip(positions, gains):
        if pos >= k:
            break
        dcg += gain * disc[pos]
    return dcg / idcg if idcg else 0.0


class MetricRef(NamedTuple):
    """A parsed metric name: registry entry plus cutoff (None for 'recall@k' = first --k)."""
    spelled: str
    metric: Metric
    k: Optional[int]

    def key(self, k0: int) -> str:
        """The name under which the report lists the value."""
        if "@K" not in self.metric.name:
            return self.metric.name
        return self.metric.name.replace("@K", "@%d" % (self.k if self.k is not None else k0))


def parse_metric(name: str) -> MetricRef:
    """Resolve a metric name (or seed alias) to the registry; suggest the closest on failure."""
    spelled = name
    name = ALIASES.get(name, name)
    if name in _BY_NAME and "@K" not in name:
        return MetricRef(spelled, _BY_NAME[name], None)
    if name == "recall@k":
        return MetricRef(spelled, _BY_NAME["recall@K"], None)
    m = _PARAM_RX.fullmatch(name)
    if m:
        return MetricRef(spelled, _BY_NAME[m.group(1) + "@K"], int(m.group(2)))
    ref = trec_ref(spelled)     # trec_eval's names (map, ndcg_cut.10): IR mode only
    if ref is not None:
        return ref
    raise ScoreError("unknown metric %r%s" % (spelled, _suggest(spelled)))


def _suggest(name: str) -> str:
    digits = re.search(r"@(\d+)", name)
    k = digits.group(1) if digits else "5"
    names = [m.name.replace("@K", "@" + k) for m in REGISTRY] + list(ALIASES) + ["recall@k"]
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.5)
    if not close:
        lowered = {n.lower(): n for n in names}
        close = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.5)
        close = [lowered[c] for c in close]
    return "; did you mean %r?" % close[0] if close else ""


def metric_table_markdown() -> str:
    """The README metric table, generated from the registry (tests keep the README in sync)."""
    rows = ["| metric | kind | better | needs gold | definition | fields read | when undefined |",
            "|---|---|---|---|---|---|---|"]
    for m in REGISTRY:
        rows.append("| `%s` | %s | %s | %s | %s | %s | %s |" % (
            m.name, m.kind, m.better, "yes" if m.gold else "no", m.definition.replace("|", "\\|"), m.fields,
            m.undefined))
    return "\n".join(rows) + "\n"


def _metric_help() -> str:
    lines = ["metrics (K = any cutoff, e.g. P@5; seed aliases: under, over, recall@k):"]
    for m in REGISTRY:
        lines.append("  %-30s %s" % (m.name, m.definition))
    lines.append("")
    lines.append("exit status: 0 all gates pass, 1 a gate failed, 2 usage or input error")
    return "\n".join(lines)


# --------------------------------------------------------------------------- TOML subset


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_INT_RX = re.compile(r"[+-]?(?:0|[1-9](?:_?[0-9])*)")
_FLOAT_RX = re.compile(r"[+-]?(?:0|[1-9](?:_?[0-9])*)(?:\.[0-9](?:_?[0-9])*)?(?:[eE][+-]?[0-9](?:_?[0-9])*)?")
_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}


class _TomlLine:
    """A cursor over one line of TOML for the subset reader."""

    def __init__(self, text: str, path: str, lineno: int):
        self.s, self.i, self.path, self.lineno = text, 0, path, lineno

    def fail(self, what: str) -> ScoreError:
        rest = self.s[self.i:self.i + 30]
        return ScoreError("%s:%d: %s, got %r" % (self.path, self.lineno, what, rest or "end of line"))

    def ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i] in " \t":
            self.i += 1

    def peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def end(self) -> None:
        self.ws()
        if self.i < len(self.s) and self.s[self.i] != "#":
            raise self.fail("unexpected text after the value")

    def key(self) -> str:
        self.ws()
        if self.peek() == '"':
            return self.basic_string()
        if self.peek() == "'":
            return self.literal_string()
        m = _BARE_KEY.match(self.s, self.i)
        if not m:
            raise self.fail("expected a key")
        self.i = m.end()
        if self.peek() == "@":
            raise self.fail('a key with "@" must be quoted, e.g. "%s@..."' % m.group(0))
        return m.group(0)

    def dotted_key(self) -> List[str]:
        parts = [self.key()]
        self.ws()
        while self.peek() == ".":
            self.i += 1
            parts.append(self.key())
            self.ws()
        return parts

    def basic_string(self) -> str:
        if self.s.startswith('"""', self.i):
            raise self.fail("multi-line strings are outside the supported TOML subset")
        self.i += 1
        out = []
        while True:
            if self.i >= len(self.s):
                raise self.fail("unterminated string")
            c = self.s[self.i]
            if c == '"':
                self.i += 1
                return "".join(out)
            if c == "\\":
                e = self.s[self.i + 1:self.i + 2]
                if e in _ESCAPES:
                    out.append(_ESCAPES[e])
                    self.i += 2
                    continue
                if e in ("u", "U"):
                    width = 4 if e == "u" else 8
                    hexa = self.s[self.i + 2:self.i + 2 + width]
                    if len(hexa) != width or not all(h in "0123456789abcdefABCDEF" for h in hexa):
                        raise self.fail("bad unicode escape")
                    code = int(hexa, 16)
                    if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                        raise self.fail("bad unicode escape")
                    out.append(chr(code))
                    self.i += 2 + width
                    continue
                raise self.fail("bad escape in string")
            if (ord(c) < 0x20 and c != "\t") or c == "\x7f":
                raise self.fail("control character in string")
            out.append(c)
            self.i += 1

    def literal_string(self) -> str:
        if self.s.startswith("'''", self.i):
            raise self.fail("multi-line strings are outside the supported TOML subset")
        j = self.s.find("'", self.i + 1)
        if j < 0:
            raise self.fail("unterminated string")
        text = self.s[self.i + 1:j]
        if any((ord(c) < 0x20 and c != "\t") or c == "\x7f" for c in text):
            raise self.fail("control character in string")
        self.i = j + 1
        return text

    def value(self, nested: bool = False):
        self.ws()
        c = self.peek()
        if c == '"':
            return self.basic_string()
        if c == "'":
            return self.literal_string()
        if c == "[":
            return self.array()
        if c == "{":
            if nested:
                raise self.fail("inline tables inside arrays or inline tables are outside the supported TOML subset")
            return self.inline_table()
        for word, val in (("true", True), ("false", False)):
            if self.s.startswith(word, self.i) and not _BARE_KEY.match(self.s[self.i + len(word):self.i + len(word) + 1]):
                self.i += len(word)
                return val
        m = _FLOAT_RX.match(self.s, self.i)
        if m and m.end() > self.i:
            tail = self.s[m.end():m.end() + 1]
            if tail and (tail.isalnum() or tail in ":-_."):
                raise self.fail("dates, times, hex/octal/binary and special numbers are outside the supported TOML subset")
            text = m.group(0)
            self.i = m.end()
            if len(text) > MAX_NUMBER_CHARS:
                raise self.fail("numbers are limited to %d characters" % MAX_NUMBER_CHARS)
            if _INT_RX.fullmatch(text):
                return int(text.replace("_", ""))
            return float(text.replace("_", ""))
        raise self.fail("expected a string, number, boolean, array or inline table")

    def array(self) -> list:
        self.i += 1
        out = []
        while True:
            self.ws()
            if self.peek() == "]":
                self.i += 1
                return out
            if not self.peek() or self.peek() == "#":
                raise self.fail("arrays must close on the same line in the supported TOML subset")
            out.append(self.value(nested=True))
            self.ws()
            if self.peek() == ",":
                self.i += 1
            elif self.peek() != "]":
                raise self.fail("expected ',' or ']' in array")

    def inline_table(self) -> dict:
        self.i += 1
        out: dict = {}
        self.ws()
        if self.peek() == "}":
            self.i += 1
            return out
        while True:
            parts = self.dotted_key()
            if len(parts) != 1:
                raise self.fail("dotted keys are outside the supported TOML subset")
            if parts[0] in out:
                raise self.fail("duplicate key %r" % parts[0])
            self.ws()
            if self.peek() != "=":
                raise self.fail("expected '=' after key")
            self.i += 1
            out[parts[0]] = self.value(nested=True)
            self.ws()
            if self.peek() == ",":
                self.i += 1
                continue
            if self.peek() == "}":
                self.i += 1
                return out
            raise self.fail("expected ',' or '}' in inline table")


def _toml_subset(text: str, path: str) -> Tuple[dict, Dict[Tuple[str, ...], int]]:
    """Parse the documented TOML subset; also return the line of every table and key.

    Subset: comments, ``[table]`` and ``[dotted.table]`` headers, ``key = value`` with bare or
    quoted keys, basic and literal one-line strings, integers, floats, booleans, one-line
    arrays, one-line inline tables.  Anything else raises ScoreError with path:line.
    """
    root: dict = {}
    lines: Dict[Tuple[str, ...], int] = {}
    explicit = set()
    inline = set()
    current: dict = root
    prefix: Tuple[str, ...] = ()
    if text.startswith("\ufeff"):
        text = text[1:]
    for lineno, raw in enumerate(text.split("\n"), 1):
        if raw.endswith("\r"):
            raw = raw[:-1]
        cur = _TomlLine(raw, path, lineno)
        cur.ws()
        c = cur.peek()
        if not c or c == "#":
            continue
        if c == "[":
            if raw[cur.i:].startswith("[["):
                raise cur.fail("arrays of tables are outside the supported TOML subset")
            cur.i += 1
            parts = tuple(cur.dotted_key())
            cur.ws()
            if cur.peek() != "]":
                raise cur.fail("expected ']' to close the table header")
            cur.i += 1
            cur.end()
            if parts in explicit:
                raise cur.fail("table [%s] defined twice" % ".".join(parts))
            node = root
            for depth, part in enumerate(parts):
                sub = parts[:depth + 1]
                if part in node:
                    nxt = node[part]
                    if not isinstance(nxt, dict) or sub in inline:
                        raise cur.fail("key %r is already a value, not a table" % part)
                else:
                    nxt = node[part] = {}
                    lines.setdefault(sub, lineno)
                node = nxt
            explicit.add(parts)
            lines[parts] = lineno
            current, prefix = node, parts
            continue
        parts = cur.dotted_key()
        if len(parts) != 1:
            raise cur.fail("dotted keys are outside the supported TOML subset")
        key = parts[0]
        cur.ws()
        if cur.peek() != "=":
            raise cur.fail("expected '=' after key")
        cur.i += 1
        val = cur.value()
        cur.end()
        if key in current:
            raise cur.fail("duplicate key %r" % key)
        current[key] = val
        lines[prefix + (key,)] = lineno
        if isinstance(val, dict):
            inline.add(prefix + (key,))
            for sub in val:
                lines[prefix + (key, sub)] = lineno
    return root, lines


def parse_toml(text: str, path: str = "<string>") -> dict:
    """Parse a gates file; raise ScoreError ``path:line: ...`` on anything outside the subset.

    The subset reader runs first on every version, so a file is accepted or rejected (with the
    same message) on 3.9 and 3.13 alike; on 3.11+ tomllib then reads it and its dict is returned
    (tests check that both readers give identical dicts)."""
    return _parse_toml_lines(text, path)[0]


def _parse_toml_lines(text: str, path: str) -> Tuple[dict, Dict[Tuple[str, ...], int]]:
    try:
        data, lines = _toml_subset(text, path)
    except RecursionError:
        raise ScoreError("%s: arrays nested too deeply (more than Python's recursion limit)" % path) from None
    if _tomllib is None:
        return data, lines
    try:
        return _tomllib.loads(text[1:] if text.startswith("\ufeff") else text), lines
    except _tomllib.TOMLDecodeError as exc:   # the subset reader missed a TOML rule
        msg = str(exc)
        m = re.search(r"line (\d+)", msg)
        raise ScoreError("%s:%s: invalid TOML: %s" % (path, m.group(1) if m else "1", msg)) from None


# --------------------------------------------------------------------------- gates config


class Gate(NamedTuple):
    ref: MetricRef
    op: Optional[str]    # ">=" or "<="; None for a monitor gate without a bound
    threshold: Optional[float]
    message: Optional[str]
    shown: str           # value shown in the report's seed "gates" map
    tier: str = "block"  # "block" sets the exit status; "warn" and "monitor" only report


class Regression(NamedTuple):
    alpha: float
    max_drop: Tuple[Tuple[MetricRef, float], ...]
    slices: Tuple[str, ...]
    slice_metrics: Tuple[MetricRef, ...]
    slice_max_drop: float


_RESERVED = ("scorer", "regression", "weights", "policy")


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def load_gates_file(path: str, dataset: Optional[str]) -> Tuple[str, List[Gate], Optional[Regression]]:
    """Read gates.toml: [scorer] refusal, one [<dataset>] table of gates, [regression].

    ``dataset=None`` (a --gates string replaces the file's gates) reads only the refusal
    token and the regression section."""
    try:
        with open_input(path, "gates file") as fh:
            data = fh.read(MAX_LINE_BYTES + 1)
        if len(data) > MAX_LINE_BYTES:
            raise ScoreError("%s: gates file longer than %d bytes" % (path, MAX_LINE_BYTES))
        text = data.decode("utf-8")
    except OSError as exc:
        raise ScoreError("%s: cannot read gates file: %s" % (path, exc.strerror)) from None
    except UnicodeDecodeError as exc:
        raise ScoreError("%s: not UTF-8, got byte 0x%02x" % (path, exc.object[exc.start])) from None
    doc, lines = _parse_toml_lines(text, path)
    errors: List[str] = []

    def where(*key: str) -> str:
        for n in range(len(key), 0, -1):
            if key[:n] in lines:
                return "%s:%d" % (path, lines[key[:n]])
        return path

    refusal = REFUSAL
    for top, val in doc.items():
        if not isinstance(val, dict):
            errors.append("%s: top-level key %r must be a table ([%s]), got %s" % (where(top), top, top, _show(val)))
    scorer = doc.get("scorer", {})
    if isinstance(scorer, dict):
        for key, val in scorer.items():
            if key in _RULE_KEYS:      # read by load_rules
                continue
            if key != "refusal":
                errors.append("%s: unknown [scorer] key %r; known: refusal, refusal_patterns, cutoff_patterns, got %s" % (where("scorer", key), key, _show(val)))
            elif not isinstance(val, str) or not val.strip():
                errors.append("%s: [scorer] refusal must be a non-empty string, got %s" % (where("scorer", key), _show(val)))
            else:
                refusal = val
    datasets = sorted(k for k, v in doc.items() if k not in _RESERVED and isinstance(v, dict))
    if dataset is not None and (dataset not in doc or dataset in _RESERVED):
        errors.append("%s: no [%s] section; datasets in the file: %s" % (path, dataset, ", ".join(datasets) or "none"))
    gates: List[Gate] = []
    section = doc.get(dataset) if dataset is not None and dataset not in _RESERVED else None
    for key, val in (section if isinstance(section, dict) else {}).items():
        loc = where(dataset, key)
        try:
            ref = parse_metric(key)
        except ScoreError as exc:
            errors.append("%s: [%s] %s" % (loc, dataset, exc))
            continue
        if not isinstance(val, dict):
            errors.append("%s: gate %r must be an inline table like { min = 0.8 } or { max = 0.05 }, got %s"
                          % (loc, key, _show(val)))
            continue
        extra = sorted(set(val) - {"min", "max", "message", "tier"})
        bounds = [b for b in ("min", "max") if b in val]
        tier = val.get("tier", "block")
        if extra:
            errors.append("%s: gate %r has unknown keys %s; known: min, max, message, tier, got %s"
                          % (loc, key, ", ".join(extra), _show(val)))
        elif tier not in TIERS:
            errors.append("%s: gate %r tier must be one of %s, got %s" % (loc, key, ", ".join(TIERS), _show(tier)))
        elif tier == "monitor" and not bounds and isinstance(val.get("message", ""), str):
            gates.append(Gate(ref, None, None, val.get("message"), "monitor", "monitor"))
        elif len(bounds) != 1:
            errors.append("%s: gate %r needs exactly one of min or max, got %s" % (loc, key, _show(val)))
        elif not _num(val[bounds[0]]):
            errors.append("%s: gate %r %s must be a number, got %s" % (loc, key, bounds[0], _show(val[bounds[0]])))
        elif "message" in val and not isinstance(val["message"], str):
            errors.append("%s: gate %r message must be a string, got %s" % (loc, key, _show(val["message"])))
        else:
            op = ">=" if bounds[0] == "min" else "<="
            thr = float(val[bounds[0]])
            gates.append(Gate(ref, op, thr, val.get("message"), "%s%s" % (op, _fmt_num(thr)), tier))
    regression = None
    reg = doc.get("regression")
    if isinstance(reg, dict):
        regression = _regression_config(reg, where, errors)
    if errors:
        raise ScoreError("\n".join(errors))
    return refusal, gates, regression


def _regression_config(reg: dict, where, errors: List[str]) -> Optional[Regression]:
    known = ("alpha", "max_drop", "no_regression_slices", "slice_metrics", "slice_max_drop")
    for key, val in reg.items():
        if key not in known:
            errors.append("%s: unknown [regression] key %r; known: %s, got %s"
                          % (where("regression", key), key, ", ".join(known), _show(val)))
    alpha = reg.get("alpha", 0.05)
    if not _num(alpha) or not 0 < alpha < 1:
        errors.append("%s: [regression] alpha must be a number in (0, 1), got %s" % (where("regression", "alpha"), _show(alpha)))
    drops = []
    max_drop = reg.get("max_drop", {})
    if not isinstance(max_drop, dict):
        errors.append("%s: [regression] max_drop must be a table of metric = margin, got %s"
                      % (where("regression", "max_drop"), _show(max_drop)))
        max_drop = {}
    for key, val in max_drop.items():
        loc = where("regression", "max_drop", key)
        try:
            ref = parse_metric(key)
        except ScoreError as exc:
            errors.append("%s: [regression.max_drop] %s" % (loc, exc))
            continue
        if ref.metric.kind != "rate" or ref.metric.name not in _PAIRED:
            errors.append("%s: [regression.max_drop] %r has no per-item yes/no verdict for the paired "
                          "test; use one of %s, got %r" % (loc, key, ", ".join(sorted(_PAIRED)), key))
        elif not _num(val) or val < 0:
            errors.append("%s: [regression.max_drop] %s must be a number >= 0, got %s" % (loc, key, _show(val)))
        else:
            drops.append((ref, float(val)))
    slices = reg.get("no_regression_slices", [])
    if not isinstance(slices, list) or not all(isinstance(s, str) for s in slices):
        errors.append("%s: no_regression_slices must be an array of category names, got %s"
                      % (where("regression", "no_regression_slices"), _show(slices)))
        slices = []
    smetrics = []
    for key in reg.get("slice_metrics", ["pass_rate"]) if isinstance(reg.get("slice_metrics", []), list) else [None]:
        try:
            smetrics.append(parse_metric(key if isinstance(key, str) else repr(key)))
        except ScoreError as exc:
            errors.append("%s: slice_metrics: %s" % (where("regression", "slice_metrics"), exc))
    sdrop = reg.get("slice_max_drop", 0.0)
    if not _num(sdrop) or sdrop < 0:
        errors.append("%s: slice_max_drop must be a number >= 0, got %s" % (where("regression", "slice_max_drop"), _show(sdrop)))
        sdrop = 0.0
    return Regression(float(alpha) if _num(alpha) else 0.05, tuple(drops), tuple(slices), tuple(smetrics), float(sdrop))


_RULE_KEYS = ("refusal_patterns", "cutoff_patterns")
SOURCE_POLICIES = ("summarize", "quote_only", "no_use")
_QUANT_RX = re.compile(r"\{\d*(?:,\d*)?\}")


class Rules(NamedTuple):
    """Prose refusals and policies from the gates file (issue 20); each pattern as (source, regex)."""
    refusal: tuple = ()
    cutoff: tuple = ()
    policies: tuple = ()      # (name, message, ((source, regex), ...)), in file order

    def refuses(self, claim: str) -> int:
        """F_PROSE | F_CUTOFF bits for a claim that matches a refusal or cutoff pattern."""
        bits = 0
        if _any_search(self.cutoff, claim):
            bits = F_PROSE | F_CUTOFF
        elif _any_search(self.refusal, claim):
            bits = F_PROSE
        return bits


_ANY_RX: Dict[tuple, tuple] = {}


def _any_search(patterns: tuple, text: str) -> bool:
    """Whether any (source, regex) of ``patterns`` matches ``text``: one search of their
    alternation, compiled once per pattern list (each regex alone when they cannot be joined),
    skipped when an ASCII text holds none of the literals that every match needs."""
    if not patterns:
        return False
    entry = _ANY_RX.get(patterns)
    if entry is None:
        try:
            rx = re.compile("|".join("(?:%s)" % src for src, _ in patterns), re.IGNORECASE)
        except re.error:     # e.g. a group name used twice: search them one by one
            rx = None
        lits: Optional[set] = set()
        for src, _ in patterns:
            need = _required_literals(src)
            if need is None:
                lits = None
                break
            lits |= need
        if len(_ANY_RX) > 64:
            _ANY_RX.clear()
        entry = _ANY_RX[patterns] = (rx, tuple(sorted(lits)) if lits is not None else None)
    rx, lits = entry
    if lits is not None and text.isascii():
        low = text.lower()
        if not any(lit in low for lit in lits):
            return False
    if rx is None:
        return any(r.search(text) for _, r in patterns)
    return rx.search(text) is not None


def _required_literals(pattern: str) -> Optional[set]:
    """Lower-case ASCII strings one of which every match of ``pattern`` contains (in an ASCII
    text, whatever the case), or None when the pattern has no such set that was found.  From
    the regex parser's tree: a run of ASCII literals, a group, an alternation (the union of
    its branches' sets, each needed), a repeat of at least one; of a sequence's candidates the
    one whose shortest string is longest.  Anything else (classes, lookarounds) needs nothing."""
    try:
        try:
            from re import _parser as parser      # Python 3.11+
        except ImportError:
            import sre_parse as parser            # Python 3.9, 3.10
        return _literal_factors(list(parser.parse(pattern, re.IGNORECASE)))
    except Exception:       # a parser that changed shape: skip nothing
        return None


def _literal_factors(items: list) -> Optional[set]:
    best: Optional[set] = None
    run: List[str] = []

    def consider(cands: Optional[set]) -> None:
        nonlocal best
        if cands and all(cands) and (best is None or min(map(len, cands)) > min(map(len, best))):
            best = cands
    for op, av in items + [(None, None)]:
        name = getattr(op, "name", None)
        if name == "LITERAL" and av < 128:
            run.append(chr(av).lower())
            continue
        if run:
            consider({"".join(run)})
            run = []
        if name == "SUBPATTERN":
            consider(_literal_factors(list(av[-1])))
        elif name == "BRANCH":
            alts = [_literal_factors(list(a)) for a in av[1]]
            if all(a is not None for a in alts):
                consider(set().union(*alts))
        elif name in ("MAX_REPEAT", "MIN_REPEAT") and av[0] >= 1:
            consider(_literal_factors(list(av[2])))
    return best


def regex_problem(pattern: str) -> Optional[str]:
    """Why ``pattern`` may take more than linear time, or None.

    Rejected: a quantified group (``*``, ``+``, ``{m,n}``) whose body holds a quantifier
    (``(a+)+``, ``(?:x*y)*``) and backreferences (``\\1``, ``(?P=name)``).  Character
    classes and escapes are skipped; ``?`` on a group is harmless and allowed."""
    stack: List[bool] = []        # per open group: does its body hold a quantifier?
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 < n and pattern[i + 1] in "123456789":
                return "backreferences are not allowed"
            i += 2
            continue
        if c == "[":
            j = i + 1
            if j < n and pattern[j] == "^":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            i = j + 1
            continue
        if c == "(":
            i += 1
            if pattern.startswith("?P=", i) or pattern.startswith("?(", i):
                return "backreferences are not allowed"
            if pattern.startswith("?P<", i):
                i = pattern.find(">", i) + 1 or n
            elif pattern.startswith("?<=", i) or pattern.startswith("?<!", i):
                i += 3
            elif pattern.startswith("?", i):
                i += 1
            stack.append(False)
            continue
        quant = c in "*+" or (c == "{" and _QUANT_RX.match(pattern, i))
        if c == ")":
            inner = stack.pop() if stack else False
            i += 1
            q = pattern[i] if i < n else ""
            repeated = (q != "" and q in "*+") or (q == "{" and _QUANT_RX.match(pattern, i))
            if repeated and inner:
                return "nested quantifiers (a quantified group holding a quantifier) are not allowed"
            if stack and (inner or repeated or q == "?"):
                stack[-1] = True
            continue
        if (quant or c == "?") and stack:
            stack[-1] = True
        i += 1
    return None


def _compile_patterns(values, where: str, what: str, errors: List[str]) -> tuple:
    if not isinstance(values, list) or not all(isinstance(v, str) and v for v in values):
        errors.append("%s: %s must be an array of non-empty regex strings, got %s" % (where, what, _show(values)))
        return ()
    out = []
    for src in values:
        problem = regex_problem(src)
        if problem is None:
            try:
                out.append((src, re.compile(src, re.IGNORECASE)))
                continue
            except re.error as exc:
                problem = "does not compile (%s)" % exc
        errors.append("%s: %s: regex %s, got %s" % (where, what, problem, _show(src)))
    return tuple(out)


def load_rules(path: str) -> Rules:
    """``[scorer] refusal_patterns / cutoff_patterns`` and ``[policy.<name>]`` of a gates file."""
    try:
        with open(path, "rb") as fh:
            text = fh.read().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return Rules()         # load_gates_file has already reported it
    doc, lines = _parse_toml_lines(text, path)
    errors: List[str] = []

    def where(*key: str) -> str:
        for n in range(len(key), 0, -1):
            if key[:n] in lines:
                return "%s:%d" % (path, lines[key[:n]])
        return path

    scorer = doc.get("scorer") if isinstance(doc.get("scorer"), dict) else {}
    pats = {k: _compile_patterns(scorer[k], where("scorer", k), "[scorer] " + k, errors)
            for k in _RULE_KEYS if k in scorer}
    policies = []
    table = doc.get("policy", {})
    if not isinstance(table, dict):
        errors.append("%s: policy must be tables [policy.<name>], got %s" % (where("policy"), _show(table)))
        table = {}
    for name, body in table.items():
        loc = where("policy", name)
        if not isinstance(body, dict):
            errors.append("%s: [policy] %r must be a table [policy.%s] with patterns = [...], got %s"
                          % (loc, name, name, _show(body)))
            continue
        extra = sorted(set(body) - {"patterns", "message"})
        if extra:
            errors.append("%s: [policy.%s] has unknown keys %s; known: patterns, message, got %s"
                          % (loc, name, ", ".join(extra), _show(body)))
            continue
        if "patterns" not in body:
            errors.append("%s: [policy.%s] needs patterns = [...], got %s" % (loc, name, _show(body)))
            continue
        msg = body.get("message", "")
        if not isinstance(msg, str):
            errors.append("%s: [policy.%s] message must be a string, got %s" % (where("policy", name, "message"), name, _show(msg)))
            continue
        compiled = _compile_patterns(body["patterns"], where("policy", name, "patterns"), "[policy.%s] patterns" % name, errors)
        policies.append((name, msg, compiled))
    if errors:
        raise ScoreError("\n".join(errors))
    return Rules(pats.get("refusal_patterns", ()), pats.get("cutoff_patterns", ()), tuple(policies))


def parse_gates_string(text: str) -> Tuple[List[Gate], Dict[str, str]]:
    """Seed 002's ``name=value,...`` (direction from the registry); ``name>=v`` / ``name<=v`` too.

    A ``warn:``, ``monitor:`` or ``block:`` prefix sets the gate's tier (default block);
    ``monitor:name`` without a threshold only reports the value."""
    gates, shown, errors = [], {}, []
    for part in text.split(","):
        tier, part = _tier_prefix(part)
        if tier == "monitor" and re.fullmatch(r"\s*[^=<>\s]+\s*", part):
            try:
                ref = parse_metric(part.strip())
            except ScoreError as exc:
                errors.append("--gates: %s" % exc)
                continue
            shown[part.strip()] = "monitor"
            gates.append(Gate(ref, None, None, None, "monitor", "monitor"))
            continue
        m = re.fullmatch(r"\s*([^=<>\s]+)\s*(>=|<=|=)\s*(\S*)\s*", part)
        if not m:
            errors.append("--gates: expected name=value, got %r" % part)
            continue
        name, op, value = m.groups()
        try:
            ref = parse_metric(name)
        except ScoreError as exc:
            errors.append("--gates: %s" % exc)
            continue
        try:
            thr = float(value)
            if not math.isfinite(thr):
                raise ValueError
        except ValueError:
            errors.append("--gates: threshold for %r must be a number, got %r" % (name, value))
            continue
        if op == "=":
            op = ">=" if ref.metric.better == "higher" else "<="
        key, val = part.split("=", 1) if "=" in part else (part, "")
        if key.endswith((">", "<")):
            key = key[:-1]
        shown[key] = val
        gates.append(Gate(ref, op, thr, None, val, tier))
    if errors:
        raise ScoreError("\n".join(errors))
    return gates, shown


def _tier_prefix(part: str) -> Tuple[str, str]:
    """Split ``warn:precision=0.8`` into ("warn", "precision=0.8"); no prefix is "block"."""
    m = re.match(r"\s*(block|warn|monitor):", part)
    return (m.group(1), part[m.end():]) if m else ("block", part)


# --------------------------------------------------------------------------- readers


def _show(value, limit: int = 80) -> str:
    """An input value as it would look in JSON, shortened for messages."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


class _Errors:
    """Collects ``path:line: ...`` messages; keeps MAX_ERRORS, counts the rest."""

    def __init__(self, limit: int):
        self.limit, self.lines, self.count = limit, [], 0

    def add(self, msg: str) -> None:
        self.count += 1
        if len(self.lines) < self.limit:
            self.lines.append(msg)

    def text(self) -> str:
        out = list(self.lines)
        if self.count > len(self.lines):
            out.append("... and %d more errors" % (self.count - len(self.lines)))
        return "\n".join(out)


class _JsonLimit(ValueError):
    """A JSON row that parses but breaks a limit (depth, digits, lone surrogate)."""


_JSON_SPECIAL = re.compile(r'[\[\]{}"\\]')
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _json_depth(text: str) -> int:
    """Deepest nesting of arrays/objects in a JSON text, brackets inside strings ignored.

    Linear: one pass over the brackets, quotes and backslashes only."""
    depth = deepest = 0
    in_string = escaped = False
    last = -2
    for m in _JSON_SPECIAL.finditer(text):
        c, pos = m.group(), m.start()
        if in_string:
            if escaped and pos == last + 1:
                escaped = False
            elif c == "\\":
                escaped, last = True, pos
            elif c == '"':
                in_string = False
            continue
        if c == '"':
            in_string, escaped = True, False
        elif c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth -= 1
    return deepest


def _parse_int(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS:
        raise _JsonLimit("an integer longer than %d digits, got %s..." % (MAX_NUMBER_CHARS, text[:20]))
    return int(text)


_JSON_DECODE = json.JSONDecoder(parse_int=_parse_int).decode   # built once: json.loads(..., parse_int=) builds one per call


def json_row(text: str):
    """``json.loads`` with limits: nesting <= MAX_JSON_DEPTH (checked before parsing, so no
    RecursionError), integers <= MAX_NUMBER_CHARS digits, no lone surrogate (\\ud800) in a
    string (it could not be written out).  Raises ValueError (``_JsonLimit`` for a limit)."""
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and _json_depth(text) > MAX_JSON_DEPTH:
        raise _JsonLimit("JSON nested deeper than %d levels" % MAX_JSON_DEPTH)
    obj = _JSON_DECODE(text) if text[:1] != "\ufeff" else json.loads(text)   # json.loads's BOM message
    if "\\u" in text and _SURROGATE_ESCAPE.search(text):
        try:
            json.dumps(obj, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise _JsonLimit("a lone surrogate escape (\\ud800-\\udfff) in a string") from None
    return obj


def _jsonl(path: str, errors: _Errors, notes: List[str]):
    """Yield (lineno, object) for each non-blank line; bad lines go to ``errors``.

    Reads bytes so that a non-UTF-8 line is reported with its line number; a UTF-8
    byte-order mark on the first line and CRLF line ends are accepted."""
    for lineno, line in _decoded_lines(path, errors):
        if lineno == 1 and line.startswith("\ufeff"):
            line = line[1:]
            notes.append("%s:1: UTF-8 byte-order mark ignored" % path)
        if not line or line.isspace():
            continue
        try:
            obj = json_row(line)
        except _JsonLimit as exc:
            errors.add("%s:%d: %s" % (path, lineno, exc))
            continue
        except ValueError as exc:
            errors.add("%s:%d: invalid JSON (%s), got %s" % (path, lineno, str(exc).split(":")[0],
                                                           _show(line.strip(), 60)))
            continue
        if type(obj) is not dict:
            errors.add("%s:%d: expected a JSON object, got %s" % (path, lineno, _show(obj, 60)))
            continue
        yield lineno, obj


def open_input(path: str, what: str = ""):
    """A binary file object for ``path``; ``-`` is stdin.  Anything but a regular file (a FIFO,
    a device such as /dev/zero, a folder) is refused: it could hang or never end."""
    what = " " + what if what else ""
    if path == "-":
        return os.fdopen(os.dup(sys.stdin.fileno()), "rb")
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise ScoreError("%s: cannot read%s: not a regular file (%s); give a file, or - for stdin"
                             % (path, what, _file_kind(st.st_mode)))
        return open(path, "rb")
    except OSError as exc:
        raise ScoreError("%s: cannot read%s: %s" % (path, what, exc.strerror or exc)) from None


def _file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a special file"


def iter_lines(path: str, what: str = "", limit: Optional[int] = None):
    """Yield (lineno, bytes) for each line of ``path`` (``-``: stdin), line end included;
    a line longer than ``limit`` bytes (default --max-line-bytes) yields (lineno, None),
    and is skipped without ever holding more than the limit in memory."""
    limit = limit or _LIMITS["line_bytes"]
    with open_input(path, what) as fh:
        readline = fh.readline
        lineno = 0
        while True:
            raw = readline(limit + 1)
            if not raw:
                return
            lineno += 1
            if len(raw) > limit and not (len(raw) == limit + 1 and raw.endswith(b"\n")):
                while raw and not raw.endswith(b"\n"):
                    raw = readline(limit + 1)
                yield lineno, None
                continue
            yield lineno, raw


def _raw_lines(path: str, errors: "_Errors", what: str = ""):
    """iter_lines with each over-long line reported to ``errors``."""
    for lineno, raw in iter_lines(path, what):
        if raw is None:
            errors.add("%s:%d: line longer than %d bytes (--max-line-bytes)" % (path, lineno, _LIMITS["line_bytes"]))
        else:
            yield lineno, raw


def _decoded_lines(path: str, errors: "_Errors"):
    """Yield (lineno, text) for each line of ``path`` that is UTF-8; the others go to ``errors``."""
    for lineno, raw in _raw_lines(path, errors):
        try:
            yield lineno, raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            errors.add("%s:%d: not UTF-8 (byte 0x%02x at column %d), got %r"
                       % (path, lineno, raw[exc.start], exc.start + 1, raw[:60]))


_IS_STR = str.__instancecheck__
_NUM_TYPES = frozenset((int, float))


def _str_list(v) -> bool:
    return type(v) is list and all(map(_IS_STR, v))


def _num_list(v) -> bool:
    """A list of finite numbers (JSON's NaN/Infinity and booleans rejected)."""
    return type(v) is list and set(map(type, v)) <= _NUM_TYPES and all(map(math.isfinite, v))


class Gold:
    """The gold set, held compactly: one slot per item in file order."""

    def __init__(self):
        self.qids: List[str] = []
        self.index: Dict[str, int] = {}
        self.lines: List[int] = []
        self.subs: list = []           # tuple of lower-cased substrings (len >= 5) | True (vacuous) | None
        self.rel: list = []            # tuple of gold citation ids, or {id: gain} from qrels
        self.base = array("Q")         # flags known from gold alone: a, e, g (+ issue 20's l, j, C, S, L, R)
        self.cat = array("I")          # index into self.categories
        self.categories: List[str] = []
        self.expected = bytearray()    # 0 = absent, else 1 + DECISIONS.index
        self.trec = False
        self.acceptable: Dict[int, frozenset] = {}   # acceptable_decisions (alternates), by item
        self.req_docs: Dict[int, frozenset] = {}     # required_citation_doc_ids, by item
        self.reject_reason: Dict[int, str] = {}      # rejection_reason of a policy rejection
        self.unlabelled = False                      # every row without labels: reference-free

    def __len__(self) -> int:
        return len(self.qids)

    def category_id(self, name: str, ids: Dict[str, int]) -> int:
        i = ids.get(name)
        if i is None:
            i = ids[name] = len(self.categories)
            self.categories.append(name)
        return i


def read_gold(path: str, by: str, errors: _Errors, notes: List[str]) -> Gold:
    gold = Gold()
    cat_ids: Dict[str, int] = {}
    intern: Dict[str, str] = {}
    unlabelled: List[int] = []
    labelled: List[int] = []
    for lineno, row in _jsonl(path, errors, notes):
        qid = row.get("qid")
        if "qid" not in row:
            errors.add("%s:%d: missing \"qid\", got %s" % (path, lineno, _show(row, 60)))
            continue
        if type(qid) is not str or not qid:
            errors.add("%s:%d: \"qid\" must be a non-empty string, got %s" % (path, lineno, _show(qid)))
            continue
        bad = False
        ans = row.get("answerable")
        if not _has_labels(row):        # issue 20: a row without labels is reference-free
            unlabelled.append(lineno)
            ans = False
        elif type(ans) is not bool:
            errors.add("%s:%d: \"answerable\" must be true or false, got %s" % (path, lineno, _show(ans)))
            bad = True
        subs = row.get("gold_claim_substr")
        if subs is not None and not _str_list(subs):
            errors.add("%s:%d: \"gold_claim_substr\" must be a list of strings, got %s" % (path, lineno, _show(subs)))
            bad = True
        cits = row.get("gold_citations")
        if cits is not None and not _str_list(cits):
            errors.add("%s:%d: \"gold_citations\" must be a list of strings, got %s" % (path, lineno, _show(cits)))
            bad = True
        cat = row.get(by, NO_CATEGORY)
        if cat is None:
            cat = NO_CATEGORY
        if type(cat) is not str:
            errors.add("%s:%d: %s must be a string, got %s" % (path, lineno, json.dumps(by), _show(cat)))
            bad = True
        exp = row.get("expected_decision")
        if exp is not None and exp not in DECISIONS:
            errors.add("%s:%d: \"expected_decision\" must be one of %s, got %s"
                       % (path, lineno, ", ".join(DECISIONS), _show(exp)))
            bad = True
        extra = _gold_extras(row, path, lineno, errors)
        if qid in gold.index:
            errors.add("%s:%d: duplicate qid (first on line %d), got %s"
                       % (path, lineno, gold.lines[gold.index[qid]], _show(qid)))
            continue
        if bad or extra is None:
            continue
        if not unlabelled or unlabelled[-1] != lineno:
            labelled.append(lineno)
        gold.index[qid] = len(gold.qids)
        gold.qids.append(qid)
        gold.lines.append(lineno)
        # Seed rule: a substring counts when its lower-cased form has >= 5 characters; []
        # is vacuously contained, a missing list contains nothing.
        if subs == []:
            gold.subs.append(True)
        elif subs is None:
            gold.subs.append(None)
        else:
            gold.subs.append(tuple(s for s in (x.lower() for x in subs) if len(s) >= 5))
        rel = tuple(intern.setdefault(c, c) for c in dict.fromkeys(cits or ()))
        gold.rel.append(rel)
        expect_refuse = (exp != "ANSWER") if exp is not None else (not ans)
        bits, behaviour = extra
        if behaviour is not None:       # seed 004's expected_behavior overrides the decision label
            expect_refuse = behaviour == "reject"
        if unlabelled and unlabelled[-1] == lineno:
            bits, expect_refuse = F_NOLAB, False
        elif bits or behaviour is not None or "acceptable_decisions" in row:
            _store_gold_extras(gold, len(gold.qids) - 1, row)
        gold.base.append((F_ANS if ans else 0) | (F_EXPREF if expect_refuse else 0) | (F_GOLD if rel else 0) | bits)
        gold.cat.append(gold.category_id(cat, cat_ids))
        gold.expected.append(0 if exp is None else 1 + DECISIONS.index(exp))
    if unlabelled and labelled:
        errors.add("%s:%d: gold mixes labelled and unlabelled rows (line %d has labels, line %d none: no "
                   "answerable, gold_* or expected_* field); label every row or none, got %d unlabelled"
                   % (path, unlabelled[0], labelled[0], unlabelled[0], len(unlabelled)))
    gold.unlabelled = bool(unlabelled) and not labelled
    if not gold.qids and not errors.count:
        errors.add("%s: no gold items (the file is empty), got 0 rows" % path)
    return gold


# Gold fields of issue 20 (seeds 000 and 004); any one of these makes a row "labelled".
LABEL_FIELDS = ("answerable", "gold_claim_substr", "gold_citations", "expected_decision", "expected_behavior",
                "rejection_reason", "required_behavior", "acceptable_decisions", "required_citation_doc_ids")
REQUIRED_BEHAVIORS = {"must_surface_conflict": F_REQCONF, "must_detect_staleness": F_REQSTALE,
                      "must_clarify": F_REQCLAR}


_LABELS = frozenset(LABEL_FIELDS)
_EXTRA_GOLD = frozenset(LABEL_FIELDS[4:])


def _has_labels(row: dict) -> bool:
    return not _LABELS.isdisjoint(row)


def _gold_extras(row: dict, path: str, lineno: int, errors: _Errors):
    """(flag bits, expected_behavior or None) from the issue-20 gold fields, or None when bad."""
    if _EXTRA_GOLD.isdisjoint(row):
        return 0, None
    bits, bad = 0, False
    beh = row.get("expected_behavior")
    if beh is not None and beh not in ("answer", "reject"):
        errors.add('%s:%d: "expected_behavior" must be "answer" or "reject", got %s' % (path, lineno, _show(beh)))
        bad = True
    reason = row.get("rejection_reason")
    if reason is not None and (type(reason) is not str or not reason):
        errors.add('%s:%d: "rejection_reason" must be a non-empty string, got %s' % (path, lineno, _show(reason)))
        bad = True
    elif reason is not None and beh == "reject":
        bits |= F_POLREJ
    req = row.get("required_behavior")
    names: list = []
    if type(req) is str:
        names = [req]
    elif type(req) is dict and all(type(v) is bool for v in req.values()):
        names = [k for k, v in req.items() if v]      # seed 000: {"must_surface_conflict": true}
    elif _str_list(req):
        names = req
    elif req is not None:
        errors.add('%s:%d: "required_behavior" must be a name, a list of names or an object of name: '
                   'true/false, got %s' % (path, lineno, _show(req)))
        bad = True
    for name in names:
        if name not in REQUIRED_BEHAVIORS:
            errors.add('%s:%d: "required_behavior" %s is unknown; known: %s, got %s'
                       % (path, lineno, json.dumps(name), ", ".join(REQUIRED_BEHAVIORS), _show(req)))
            bad = True
        else:
            bits |= REQUIRED_BEHAVIORS[name]
    acc = row.get("acceptable_decisions")
    if acc is not None and not (_str_list(acc) and all(a in DECISIONS for a in acc)):
        errors.add('%s:%d: "acceptable_decisions" must be a list of %s, got %s'
                   % (path, lineno, ", ".join(DECISIONS), _show(acc)))
        bad = True
    docs = row.get("required_citation_doc_ids")
    if docs is not None and not (_str_list(docs) and all(docs)):
        errors.add('%s:%d: "required_citation_doc_ids" must be a list of document ids, got %s'
                   % (path, lineno, _show(docs)))
        bad = True
    elif docs:
        bits |= F_REQDOCS
    return None if bad else (bits, beh)


def _store_gold_extras(gold: Gold, i: int, row: dict) -> None:
    if row.get("acceptable_decisions"):
        gold.acceptable[i] = frozenset(row["acceptable_decisions"])
    if row.get("required_citation_doc_ids"):
        gold.req_docs[i] = frozenset(row["required_citation_doc_ids"])
    if row.get("rejection_reason") is not None and row.get("expected_behavior") == "reject":
        gold.reject_reason[i] = row["rejection_reason"]


def gold_from_trace(path: str, by: str) -> Gold:
    """Reference-free mode (``--trace`` alone): the trace's qids, first-seen order, no labels.

    Bad rows are skipped here; ``score_trace`` reads the file again and reports them."""
    gold = Gold()
    gold.unlabelled = True
    cat_ids: Dict[str, int] = {}
    quiet = _Errors(0)
    for lineno, row in _jsonl(path, quiet, []):
        qid = row.get("qid") or row.get("q_id")
        if type(qid) is not str or qid in gold.index:
            continue
        cat = row.get(by)
        gold.index[qid] = len(gold.qids)
        gold.qids.append(qid)
        gold.lines.append(lineno)
        gold.subs.append(None)
        gold.rel.append(())
        gold.base.append(F_NOLAB)
        gold.cat.append(gold.category_id(cat if type(cat) is str else NO_CATEGORY, cat_ids))
        gold.expected.append(0)
    if not gold.qids and not quiet.count:
        raise ScoreError("%s: no trace rows with a qid (the file is empty), got 0 rows" % path)
    return gold


def read_chunks(path: str, errors: _Errors, notes: List[str],
                policies: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """--chunks FILE: JSONL of {"id", "text"} (BEIR's {"_id", "text"} too); an optional
    "policy" (summarize, quote_only, no_use) goes to ``policies``."""
    chunks: Dict[str, str] = {}
    for lineno, row in _jsonl(path, errors, notes):
        pol = row.get("policy")
        if pol is not None and pol not in SOURCE_POLICIES:
            errors.add('%s:%d: "policy" must be one of %s, got %s' % (path, lineno, ", ".join(SOURCE_POLICIES), _show(pol)))
            continue
        if pol is not None and pol != "summarize" and policies is not None:
            policies[str(row.get("id", row.get("_id", row.get("chunk_id"))))] = pol
        cid = row.get("id", row.get("_id", row.get("chunk_id")))
        text = row.get("text")
        if type(cid) is not str or not cid:
            errors.add("%s:%d: \"id\" (or \"_id\") must be a non-empty string, got %s" % (path, lineno, _show(cid)))
        elif type(text) is not str:
            errors.add("%s:%d: \"text\" must be a string, got %s" % (path, lineno, _show(text)))
        else:
            chunks[cid] = text
    return chunks


def read_qrels(path: str, errors: _Errors) -> Gold:
    """TREC qrels ``topic iter docno rel``: relevance >= 1 is relevant, the level is the gain."""
    gold = Gold()
    gold.trec = True
    gold.judgments: List[Dict[str, int]] = []
    rels: Dict[str, Dict[str, int]] = {}
    first_line: Dict[str, int] = {}
    for lineno, parts in _text_lines(path, errors):
        if len(parts) != 4:
            errors.add("%s:%d: qrels line needs 4 fields (topic iter docno rel), got %r" % (path, lineno, " ".join(parts)))
            continue
        topic, _, doc, rel = parts
        try:
            if len(rel) > MAX_NUMBER_CHARS:
                raise ValueError
            level = int(rel)
        except ValueError:
            errors.add("%s:%d: relevance must be an integer, got %r" % (path, lineno, rel))
            continue
        judged = rels.setdefault(topic, {})
        first_line.setdefault(topic, lineno)
        if doc in judged:
            errors.add("%s:%d: duplicate judgment for topic %s, got %r" % (path, lineno, topic, doc))
            continue
        judged[doc] = level
    cat_ids: Dict[str, int] = {}
    for topic in sorted(rels, key=lambda t: first_line[t]):
        gains = {d: g for d, g in rels[topic].items() if g >= 1}
        gold.index[topic] = len(gold.qids)
        gold.qids.append(topic)
        gold.lines.append(first_line[topic])
        gold.subs.append(None)
        gold.rel.append(gains)
        gold.judgments.append(rels[topic])     # every level, for the trec_eval measures (bpref)
        gold.base.append(F_GOLD if gains else 0)
        gold.cat.append(gold.category_id(NO_CATEGORY, cat_ids))
        gold.expected.append(0)
    if not gold.qids and not errors.count:
        errors.add("%s: no judgments (the file is empty), got 0 lines" % path)
    return gold


def read_run(path: str, errors: _Errors) -> Dict[str, Tuple[List[float], List[str]]]:
    """TREC run ``topic Q0 docno rank score tag [...]``; the rank column is ignored."""
    run: Dict[str, Tuple[List[float], List[str]]] = {}
    seen: Dict[str, set] = {}
    for lineno, parts in _text_lines(path, errors):
        if len(parts) < 6:
            errors.add("%s:%d: run line needs 6 fields (topic Q0 docno rank score tag), got %r" % (path, lineno, " ".join(parts)))
            continue
        topic, doc = parts[0], parts[2]
        try:
            score = float(parts[4])
            if not math.isfinite(score):
                raise ValueError
        except ValueError:
            errors.add("%s:%d: score must be a number, got %r" % (path, lineno, parts[4]))
            continue
        docs = seen.setdefault(topic, set())
        if doc in docs:
            errors.add("%s:%d: duplicate docno for topic %s, got %r" % (path, lineno, topic, doc))
            continue
        docs.add(doc)
        scores, ids = run.setdefault(topic, ([], []))
        scores.append(score)
        ids.append(doc)
    return run


def _text_lines(path: str, errors: _Errors):
    for lineno, line in _decoded_lines(path, errors):
        if lineno == 1:
            line = line.lstrip("\ufeff")
        parts = line.split()
        if parts:
            yield lineno, parts


# --------------------------------------------------------------------------- reading what a system wrote
# One reading of a response, used by every verdict (refusal, containment, answer correctness,
# citations, grounding, relevance).  Sub-sections, in the order a response is read:
#   1. citation markers and sources lists read out of the text (the claim without them);
#   2. refusals decided by the answer's bottom line (refusal / partial refusal / answer);
#   3. answer normalisation and matching against short gold answers;
#   4. sentences and meta-language (sentences that only talk about the answer or the sources).


# ---- reading 1: citations in the text


# ---- reading 2: refusals


# ---- reading 3: answer normalisation


# ---- reading 4: sentences, meta-language and grounding


# --------------------------------------------------------------------------- judging


def tokens(text: str) -> set:
    """Lower-cased word and number tokens; "1,000" and "1000" are the same number."""
    found = set(_TOKEN_RX.findall(text.lower()))
    if "," in text:
        found = {t.replace(",", "") for t in found}
    return found


def unsupported_tokens(claim: str, texts: List[str], cache: Optional[dict] = None) -> List[str]:
    """Numbers and content words of ``claim`` that occur in none of ``texts`` (sorted)."""
    support: set = set()
    for t in texts:
        if cache is not None:
            toks = cache.get(t)
            if toks is None:
                toks = cache[t] = frozenset(tokens(t))
        else:
            toks = tokens(t)
        if len(texts) == 1:
            support = toks
        else:
            support |= toks
    return sorted(tok for tok in tokens(claim).difference(support)
                  if tok[0].isdigit() or (len(tok) >= 3 and tok not in STOPWORDS))


class Scorer:
    """Per-item verdicts, stored compactly (arrays) so memory grows with the gold set only."""

    def __init__(self, gold: Gold, ks: List[int], refusal: str, chunks: Optional[Dict[str, str]],
                 rules: Optional[Rules] = None, chunk_policies: Optional[Dict[str, str]] = None):
        n = len(gold)
        self.gold, self.ks, self.refusal = gold, ks, refusal.strip().lower()
        self.chunks = chunks
        self.chunk_tokens: dict = {}
        self.k0 = ks[0]
        self.flags = array("Q", bytes(8 * n))
        self._init_extra(rules, chunk_policies)
        self.seed_rec = {k: bytearray(n) for k in ks}
        self.hits = {k: array("I", bytes(4 * n)) for k in ks}
        self.rec = {k: array("d", bytes(8 * n)) for k in ks}
        self.ndcg = {k: array("d", bytes(8 * n)) for k in ks}
        self.rrk = {k: array("d", bytes(8 * n)) for k in ks}
        self.rr = array("d", bytes(8 * n))
        self.unsupported: Dict[int, List[str]] = {}
        self.no_text: Dict[int, str] = {}
        self.idcg: Dict[Tuple[int, int], float] = {}
        _disc(max(ks) + 1)

    # ---- one item
    def judge(self, i: int, claim, cits, ret, scores, cited, decision, fallback, present: bool) -> None:
        gold = self.gold
        f = gold.base[i]
        if i in self.no_text:       # a later (duplicate) row replaces an earlier verdict
            del self.no_text[i]
        if i in self.unsupported:
            del self.unsupported[i]
        if present:
            f |= F_TRACE
        rel = gold.rel[i]
        ret = ret or []
        if not gold.trec:
            claim = (claim or "").strip()
            cits = cits or []
            retset = set(ret)
            in_ret = retset.issuperset(cits)
            shipped = claim.lower() != self.refusal
            prose = self.rules.refuses(claim) if shipped and self.prose_rules else 0   # issue 20: in prose
            if prose:
                f |= prose
                shipped = False
            # seed 002: hit needs citations within retrieved_ids and overlap with gold; with no
            # gold citations only an empty citation list hits.
            if rel:
                hit = in_ret and not set(cits).isdisjoint(rel)
            else:
                hit = in_ret and not cits
            subs = gold.subs[i]
            if subs is True:
                cont = True
            elif subs:
                low = claim.lower()
                cont = any(s in low for s in subs)
            else:
                cont = False
            if rel and not retset.isdisjoint(rel):
                f |= F_GOLDRET
            if shipped:
                f |= F_SHIP
                if cont:
                    f |= F_CONT
                if hit:
                    f |= F_HIT
                if not in_ret:
                    f |= F_NOTRET
                if in_ret and len(cits) <= MAX_CITATIONS and len(set(cits)) == len(cits):
                    f |= F_VALID
                if not cits or not in_ret:
                    f |= F_HALL | F_HMEAS
                else:
                    texts = []
                    cache = None
                    for c in dict.fromkeys(cits):
                        t = cited.get(c) if cited else None
                        if t is None and self.chunks is not None:
                            t = self.chunks.get(c)
                            cache = self.chunk_tokens
                        if t is None:
                            self.no_text[i] = c
                            break
                        texts.append(t)
                    else:
                        f |= F_HMEAS
                        bad = unsupported_tokens(claim, texts, cache)
                        if bad:
                            f |= F_HALL
                            self.unsupported[i] = bad
                if f & F_ANS and cont and hit:
                    f |= F_PASS
            elif not f & F_ANS:
                f |= F_PASS
            exp = gold.expected[i]
            if exp and decision is not None:
                f |= F_DEC
                dec = decision.strip().upper()
                if dec == DECISIONS[exp - 1] or dec in gold.acceptable.get(i, ()):
                    f |= F_DECOK
            if fallback is not None:
                f |= F_FB
                if fallback:
                    f |= F_FBUSED
            for k in self.ks:
                top = ret[:k]
                self.seed_rec[k][i] = (rel[0] in top) if len(rel) == 1 else all(c in top for c in rel)
            if self.seed_rec[self.k0][i]:
                f |= F_REC
        if rel:
            self._retrieval(i, rel, ret, scores)
            if gold.trec and ret:
                f |= F_GOLDRET if not set(rel).isdisjoint(ret) else 0
        self.flags[i] = f

    def _retrieval(self, i: int, rel, ret, scores) -> None:
        # trec_eval order: score descending, then id descending; otherwise the trace's order.
        if scores is not None and not all(map(float.__gt__, map(float, scores), scores[1:])):
            ranked = [d for _, d in sorted(zip(scores, ret), reverse=True)]   # (strictly descending: as given)
        else:
            ranked = ret
        if len(set(ranked)) != len(ranked):
            ranked = list(dict.fromkeys(ranked))   # a repeated id counts once, at its best rank
        positions, gains = relevant_positions(ranked, rel)
        nrel = len(rel)
        graded = type(rel) is dict
        self.rr[i] = measure_rr(positions)
        if graded:
            ideal = ideal_gains(rel.values())
        for k in self.ks:
            hits = hits_at(positions, k)
            if graded:
                idcg = ideal_dcg(ideal, k)
            else:      # gain 1 each: the ideal DCG depends on (nrel, k) only
                idcg = self.idcg.get((nrel, k))
                if idcg is None:
                    idcg = self.idcg[(nrel, k)] = ideal_dcg([1] * nrel, k)
            self.hits[k][i] = hits
            self.rec[k][i] = measure_r(hits, nrel)
            self.ndcg[k][i] = measure_ndcg(positions, gains, k, idcg)
            self.rrk[k][i] = measure_rr(positions, k)

    # ---- issue 20: policies, decisions for the right reason, reference-free measures
    def _init_extra(self, rules: Optional[Rules], chunk_policies: Optional[Dict[str, str]]) -> None:
        n = len(self.gold)
        self.rules = rules or Rules()
        self.prose_rules = bool(self.rules.refusal or self.rules.cutoff)
        self.chunk_policies = chunk_policies or {}
        self.evidence: Dict[int, List[dict]] = {}       # violations, by item (only failing items)
        nan = array("d", [math.nan])
        self.answer_rel = nan * n
        self.context_rel = nan * n
        self.latency = nan * n
        self.cost = nan * n
        self.term_cache: Dict[str, frozenset] = {}
        self.needs = set(NEEDS)      # what run() found asked for (see NEEDS); everything by default
        self.flags_seen = bytearray(n)
        # items with a question and retrieved chunks whose texts are not all known (no context value)
        self.context_lack = bytearray(n)
        # policy_compliance is measured when a [policy.*] exists or gold names a policy rejection
        self.policy_measured = bool(self.rules.policies) or any(b & F_POLREJ for b in self.gold.base)

    def judge_extra(self, i: int, claim, cits, ret, cited, cited_pol, decision, extra) -> None:
        """Issue 20's per-item verdicts, after ``judge`` set the seed flags of item ``i``."""
        q, reasons, total, cost = extra
        f = self.flags[i]
        if i in self.evidence:
            del self.evidence[i]
        if self.flags_seen[i]:       # a duplicate row replaces the earlier verdict
            for arr in (self.answer_rel, self.context_rel, self.latency, self.cost):
                arr[i] = math.nan
        self.flags_seen[i] = 1
        claim = (claim or "").strip()
        cits = cits or []
        ret = ret or []
        if total is not None:
            self.latency[i] = total
        if cost is not None:
            self.cost[i] = cost
        found: List[dict] = []
        if f & F_CUTOFF:
            m = next(rx.search(claim) for _, rx in self.rules.cutoff if rx.search(claim))
            found.append({"mode": "training_cutoff_excuse", "words": m.group(0)[:80]})
        if f & F_SHIP:
            for name, msg, pats in self.rules.policies:
                if not _any_search(pats, claim):      # one search per policy; its pattern only on a match
                    continue
                for src, rx in pats:
                    m = rx.search(claim)
                    if m:
                        found.append({"mode": "policy_violation", "policy": name, "pattern": src,
                                      "words": m.group(0)[:80], "message": msg})
                        break
            if f & F_POLREJ:
                found.append({"mode": "policy_violation", "policy": self.gold.reject_reason.get(i, ""),
                              "gold": "expected_behavior reject: the answer shipped"})
            if any(e["mode"] == "policy_violation" for e in found):
                f |= F_POLV
            if cited_pol or self.chunk_policies:
                src_found = source_violations(claim, cits, ret, self._texts(cited, cits, ret),
                                              self._policies(cited_pol, cits, ret))
                if src_found:
                    f |= F_SRCV
                    found.extend(src_found)
        # decisions for the right reason (seed 000): the right outcome, and the reason code
        if f & (F_REQCONF | F_REQSTALE | F_REQCLAR):
            dec = decision.strip().upper() if decision is not None else None
            if dec is not None and self.gold.expected[i]:
                right = bool(f & F_DECOK)
            elif dec is not None and i in self.gold.acceptable:
                right = dec in self.gold.acceptable[i]
            else:
                right = not f & F_SHIP if f & F_EXPREF else bool(f & F_SHIP)
            codes = [r.split(":", 1)[0].strip().lower() for r in reasons or ()]
            if right and f & F_REQCONF and any(c.startswith("conflict") for c in codes):
                f |= F_OKCONF
            if right and f & F_REQSTALE and any(c.startswith("stale") for c in codes):
                f |= F_OKSTALE
            if right and f & F_REQCLAR and (dec == "CLARIFY" or any(c.startswith(("ambiguous", "clarif")) for c in codes)):
                f |= F_OKCLAR
        if f & F_REQDOCS and self.gold.req_docs[i] <= {c.split("#", 1)[0] for c in cits}:
            f |= F_OKDOCS
        # reference-free relevance (lexical)
        self.context_lack[i] = 0
        if q and "relevance" in self.needs:
            qt = content_terms(q)
            if qt and f & F_SHIP:
                self.answer_rel[i] = len(qt & content_terms(claim)) / len(qt)
            # context relevance needs every retrieved chunk's text: --chunks, or all of them cited
            if qt and ret and (self.chunks is not None or (cited and len(cited) >= len(ret))):
                texts = self._texts(cited, ret, ())
                if len(texts) == len(set(ret)):
                    hit = sum(1 for c in ret if not qt.isdisjoint(self._terms(texts[c])))
                    self.context_rel[i] = hit / len(ret)
            if qt and ret and self.context_rel[i] != self.context_rel[i]:
                self.context_lack[i] = 1
        if found:
            self.evidence[i] = found
        self.flags[i] = f

    def _terms(self, text: str) -> frozenset:
        t = self.term_cache.get(text)
        if t is None:
            if len(self.term_cache) > 100000:     # bounded: a trace of distinct texts must not grow it
                self.term_cache.clear()
            t = self.term_cache[text] = content_terms(text)
        return t

    def _texts(self, cited, cits, ret) -> Dict[str, str]:
        """Known chunk texts of ``cits`` and ``ret``: the trace's cited_chunks, then --chunks."""
        out = {}
        for c in list(cits) + list(ret):
            t = cited.get(c) if cited else None
            if t is None and self.chunks is not None:
                t = self.chunks.get(c)
            if t is not None:
                out[c] = t
        return out

    def _policies(self, cited_pol, cits, ret) -> Dict[str, str]:
        out = {}
        for c in list(cits) + list(ret):
            p = (cited_pol or {}).get(c) or self.chunk_policies.get(c)
            if p and p != "summarize":
                out[c] = p
        return out


def content_terms(text: str) -> frozenset:
    """Numbers and content words (>= 3 letters, not stopwords) of ``text``, a final "s" folded."""
    out = set()
    for tok in tokens(text) - STOPWORDS:
        if tok[0].isdigit():
            out.add(tok)
        elif len(tok) > 3 and tok[-1] == "s" and tok[-2] != "s":
            out.add(tok[:-1])
        elif len(tok) >= 3:
            out.add(tok)
    return frozenset(out)


_SENT_RX = re.compile(r"(?<=[.!?])\s+")
NO_USE_RUN = 8      # consecutive words of a no_use chunk that make a reproduction


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def source_violations(claim: str, cits: List[str], ret: List[str], texts: Dict[str, str],
                      policies: Dict[str, str]) -> List[dict]:
    """Source-policy violations of one shipped claim (seed 004's SourcePolicyStage, lexical).

    ``no_use``: citing the chunk, or reproducing NO_USE_RUN consecutive words of it (any
    retrieved or cited chunk whose text is known).  ``quote_only``: each claim sentence is
    attributed to the cited chunks holding it verbatim (case and white space normalized),
    else to the cited chunks sharing most content terms with it; a sentence attributed to a
    quote_only chunk that does not hold it verbatim is a violation."""
    out: List[dict] = []
    for c in dict.fromkeys(cits):
        if policies.get(c) == "no_use":
            out.append({"mode": "source_policy_violation", "rule": "no_use", "chunk": c, "how": "cited"})
    words = _TOKEN_RX.findall(claim.lower())
    grams = {tuple(words[j:j + NO_USE_RUN]) for j in range(len(words) - NO_USE_RUN + 1)}
    for c in dict.fromkeys(list(cits) + list(ret)):
        if policies.get(c) != "no_use" or c not in texts or not grams:
            continue
        cw = _TOKEN_RX.findall(texts[c].lower())
        for j in range(len(cw) - NO_USE_RUN + 1):
            g = tuple(cw[j:j + NO_USE_RUN])
            if g in grams:
                out.append({"mode": "source_policy_violation", "rule": "no_use", "chunk": c,
                            "how": "reproduced", "words": " ".join(g)})
                break
    quoted = [c for c in dict.fromkeys(cits) if policies.get(c) == "quote_only"]
    if quoted:
        known = [c for c in dict.fromkeys(cits) if c in texts]
        normed = {c: _norm(texts[c]) for c in known}
        for sent in _SENT_RX.split(claim):
            ns = _norm(sent).rstrip(".!?;:")
            if not ns or any(ns in normed[c] for c in known):
                continue
            st = content_terms(sent)
            shared = {c: len(st & content_terms(texts[c])) for c in known}
            best = max(shared.values(), default=0)
            for c in quoted:
                if c not in shared or shared[c] == best:
                    out.append({"mode": "source_policy_violation", "rule": "quote_only", "chunk": c,
                                "how": "not verbatim", "sentence": sent[:120]})
                    break
    return out


def _cited_with_policies(cited):
    """cited_chunks whose values may be ``{"text", "policy"}``: (id -> text, id -> policy), or
    (None, the bad value) when a value is neither text nor such an object."""
    if type(cited) is not dict:
        return None, cited
    texts, pols = {}, {}
    for cid, v in cited.items():
        if type(v) is str:
            texts[cid] = v
        elif (type(v) is dict and type(v.get("text")) is str and set(v) <= {"text", "policy"}
              and v.get("policy", "summarize") in SOURCE_POLICIES):
            texts[cid] = v["text"]
            if v.get("policy", "summarize") != "summarize":
                pols[cid] = v["policy"]
        else:
            return None, {cid: v}
    return texts, pols


def _trace_extras(row: dict, path: str, lineno: int, errors: _Errors):
    """(q, reasons, timings_ms.total, cost) of a trace row, checked; None when one is bad."""
    q = row.get("q")
    if q is not None and type(q) is not str:
        errors.add('%s:%d: "q" must be a string, got %s' % (path, lineno, _show(q)))
        return None
    reasons = row.get("reasons")
    if reasons is not None and not _str_list(reasons):
        errors.add('%s:%d: "reasons" must be a list of strings, got %s' % (path, lineno, _show(reasons)))
        return None
    tm = row.get("timings_ms")
    total = None
    if tm is not None:
        total = tm.get("total") if type(tm) is dict else tm
        if type(tm) is not dict or (total is not None and not (_num(total) and total >= 0)):
            errors.add('%s:%d: "timings_ms" must be an object whose "total" is a number >= 0, got %s'
                       % (path, lineno, _show(tm)))
            return None
    cost = row.get("cost")
    if cost is not None and not (_num(cost) and cost >= 0):
        errors.add('%s:%d: "cost" must be a number >= 0, got %s' % (path, lineno, _show(cost)))
        return None
    return q, reasons, (float(total) if total is not None else None), (float(cost) if cost is not None else None)


def score_trace(path: str, scorer: Scorer, errors: _Errors, notes: List[str]) -> Dict[str, object]:
    """Stream the trace file once, judging each row against its gold item (last row wins)."""
    index = scorer.gold.index
    seen = bytearray(len(scorer.gold))
    judge = scorer.judge
    rows = unknown = dup = 0
    unknown_ex: List[str] = []
    dup_ex: List[str] = []
    lines = _jsonl(path, errors, notes)
    if getattr(scorer, "progress", False):
        lines = _progress_rows(lines, "score_eval: %s" % path)
    for lineno, row in lines:
        rows += 1
        get = row.get
        qid = get("qid") or get("q_id")    # seed 002 accepts either spelling
        if type(qid) is not str:
            if not qid:
                errors.add("%s:%d: missing \"qid\" (or \"q_id\"), got %s" % (path, lineno, _show(row, 60)))
            else:
                errors.add("%s:%d: \"qid\" must be a string, got %s" % (path, lineno, _show(qid)))
            continue
        aj = get("answer_json")
        claim = cits = None
        if aj is not None:
            if type(aj) is not dict:
                errors.add("%s:%d: \"answer_json\" must be an object, got %s" % (path, lineno, _show(aj)))
                continue
            claim = aj.get("claim")
            cits = aj.get("citations")
            if claim is not None and type(claim) is not str:
                errors.add("%s:%d: \"answer_json.claim\" must be a string, got %s" % (path, lineno, _show(claim)))
                continue
            if cits is not None and not _str_list(cits):
                errors.add("%s:%d: \"answer_json.citations\" must be a list of strings, got %s" % (path, lineno, _show(cits)))
                continue
        ret = get("retrieved_ids")
        if ret is not None and not _str_list(ret):
            errors.add("%s:%d: \"retrieved_ids\" must be a list of strings, got %s" % (path, lineno, _show(ret)))
            continue
        scores = get("retrieved_scores")
        if scores is not None and (not _num_list(scores) or len(scores) != len(ret or ())):
            errors.add("%s:%d: \"retrieved_scores\" must be a list of numbers as long as \"retrieved_ids\" (%d), got %s"
                       % (path, lineno, len(ret or ()), _show(scores)))
            continue
        cited = get("cited_chunks")
        cited_pol = None
        if cited is not None and (type(cited) is not dict or not all(type(v) is str for v in cited.values())):
            cited, cited_pol = _cited_with_policies(cited)     # issue 20: {"text", "policy"} values
            if cited is None:
                errors.add("%s:%d: \"cited_chunks\" must be an object of id -> text or {\"text\", \"policy\"} "
                           "(policy one of %s), got %s" % (path, lineno, ", ".join(SOURCE_POLICIES), _show(cited_pol)))
                continue
        extra = _trace_extras(row, path, lineno, errors)
        if extra is None:
            continue
        decision = get("decision")
        if decision is not None and type(decision) is not str:
            errors.add("%s:%d: \"decision\" must be a string, got %s" % (path, lineno, _show(decision)))
            continue
        fallback = get("fallback_used")
        if fallback is not None and type(fallback) is not bool:
            errors.add("%s:%d: \"fallback_used\" must be true or false, got %s" % (path, lineno, _show(fallback)))
            continue
        i = index.get(qid)
        if i is None:
            unknown += 1
            if len(unknown_ex) < 5:
                unknown_ex.append(qid)
            continue
        if seen[i]:
            dup += 1
            if len(dup_ex) < 5:
                dup_ex.append(qid)
        seen[i] = 1
        judge(i, claim, cits, ret, scores, cited, decision, fallback, True)
        scorer.judge_extra(i, claim, cits, ret, cited, cited_pol, decision, extra)
    # The gold set owns the query set: an item without a trace row is judged on an empty row
    # (seed 002: a shipped answer with an empty claim; retrieval scores 0).
    missing = 0
    i = seen.find(0)
    while i >= 0:
        missing += 1
        judge(i, None, None, None, None, None, None, None, False)
        i = seen.find(0, i + 1)
    return {"rows": rows, "unknown": unknown, "unknown_ex": unknown_ex,
            "duplicates": dup, "duplicate_ex": dup_ex, "missing": missing}


PROGRESS_ROWS = 100_000      # progress on stderr only past this many trace rows
PROGRESS_EVERY = (1.0, 30.0)  # seconds between two progress lines: on a terminal, off one


def _progress_rows(rows, label: str, stream=None):
    """Pass ``rows`` through; past PROGRESS_ROWS rows, write ``label: N rows, R/s`` to stderr
    (redrawn in place on a terminal; one plain line at most every 30 s off one)."""
    stream = stream if stream is not None else sys.stderr
    tty = bool(getattr(stream, "isatty", None) and stream.isatty())
    every = PROGRESS_EVERY[0] if tty else PROGRESS_EVERY[1]
    start = time.monotonic()
    last = start
    drawn = False
    n = 0
    for n, item in enumerate(rows, 1):
        yield item
        if n & 0x3FFF == 0 and n >= PROGRESS_ROWS:
            now = time.monotonic()
            if now - last >= every:
                last = now
                text = "%s: %d rows, %.0f/s" % (label, n, n / max(now - start, 1e-9))
                stream.write(("\r%s\x1b[K" % text) if tty else text + "\n")
                stream.flush()
                drawn = tty
    if drawn:
        stream.write("\r%s: %d rows\x1b[K\n" % (label, n))
        stream.flush()


def score_run(run: Dict[str, Tuple[List[float], List[str]]], scorer: Scorer) -> Dict[str, object]:
    index = scorer.gold.index
    unknown = sorted(t for t in run if t not in index)
    missing = 0
    for i, qid in enumerate(scorer.gold.qids):
        entry = run.get(qid)
        if entry is None:
            missing += 1   # the qrels own the query set: a forgotten topic scores 0 (trec_eval -c)
            scorer.judge(i, None, None, [], None, None, None, None, False)
        else:
            scorer.judge(i, None, None, entry[1], entry[0], None, None, None, True)
    return {"rows": sum(len(v[1]) for v in run.values()), "unknown": len(unknown), "unknown_ex": unknown[:5],
            "duplicates": 0, "duplicate_ex": [], "missing": missing}


# --------------------------------------------------------------------------- trec_eval measures
#
# With --qrels/--run the scorer also computes trec_eval's own measures under trec_eval's names
# (``-m map -m ndcg_cut.10``, ``--measures map,P.5``) and can print them as trec_eval does
# (``--format trec``: ``measure<TAB>qid|all<TAB>value``, ``-q`` adds one block per query).
# Conventions are trec_eval's: a document is relevant when its level is >= 1, the ranking is
# score descending then docno descending, every qrels topic counts (a topic the run forgot
# scores 0, trec_eval -c), "all" is the mean over topics (the sum for the num_* counts).


class TrecMeasure(NamedTuple):
    """One trec_eval measure: its name, default cutoffs (() = none), how "all" is formed
    ("mean" or "sum"), and a one-line description."""
    name: str
    cutoffs: Tuple[int, ...]
    total: str
    description: str


_TREC_CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
TREC_MEASURES: Tuple[TrecMeasure, ...] = (
    TrecMeasure("num_ret", (), "sum", "documents retrieved"),
    TrecMeasure("num_rel", (), "sum", "relevant documents in the qrels (level >= 1)"),
    TrecMeasure("num_rel_ret", (), "sum", "relevant documents retrieved"),
    TrecMeasure("map", (), "mean", "average precision: the sum of the precision at the rank of each "
                "relevant retrieved document / num_rel (0 when num_rel is 0)"),
    TrecMeasure("Rprec", (), "mean", "precision after num_rel documents (0 when num_rel is 0)"),
    TrecMeasure("bpref", (), "mean", "binary preference: mean over the relevant documents of 1 - "
                "min(judged non-relevant ranked above it, R) / min(R, N); unretrieved ones add 0"),
    TrecMeasure("recip_rank", (), "mean", "1 / rank of the first relevant document, 0 when none is retrieved"),
    TrecMeasure("P", _TREC_CUTS, "mean", "relevant documents in the top K / K"),
    TrecMeasure("recall", _TREC_CUTS, "mean", "relevant documents in the top K / num_rel (0 when num_rel is 0)"),
    TrecMeasure("ndcg_cut", _TREC_CUTS, "mean", "sum of level / log2(rank + 1) over the top K, divided "
                "by the same for the ideal ordering of the qrels (0 when nothing is relevant)"),
    TrecMeasure("success", (1, 5, 10), "mean", "1 when a relevant document is in the top K, else 0"),
)
_TREC_BY_NAME = {m.name: m for m in TREC_MEASURES}
TREC_DEFAULT = ("num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "bpref", "recip_rank", "P")


def _trec_split(spec: str):
    """``"P.5,10"`` -> (P, [5, 10]); ``"P_5"`` -> (P, [5]); ``"map"`` -> (map, []); None when
    ``spec`` names no measure of TREC_MEASURES (a cutoff is 1 to 6 ASCII digits, no leading 0)."""
    name, dot, params = spec.strip().partition(".")
    if not dot and name not in _TREC_BY_NAME:
        head, _, tail = name.rpartition("_")
        if head in _TREC_BY_NAME and tail:
            name, params = head, tail
    measure = _TREC_BY_NAME.get(name)
    if measure is None or (dot and not params):
        return None
    cuts: List[int] = []
    for p in params.split(",") if params else []:
        if not (p.isascii() and p.isdigit() and p[0] != "0" and len(p) <= 6):
            return None
        cuts.append(int(p))
    if cuts and not measure.cutoffs:
        return None
    return measure, cuts


def parse_trec_measures(specs: List[str]) -> List[str]:
    """trec_eval ``-m`` specs (``map``, ``P.5,10``, ``ndcg_cut.10``; ``P`` alone = its default
    cutoffs) -> output names in order, without repeats (``P_5``, ``P_10``, ...).

    >>> parse_trec_measures(["map", "P.5,10", "ndcg_cut.10"])
    ['map', 'P_5', 'P_10', 'ndcg_cut_10']
    """
    out: List[str] = []
    errors: List[str] = []
    for spec in specs:
        parsed = _trec_split(spec)
        if parsed is None:
            close = difflib.get_close_matches(spec.partition(".")[0], list(_TREC_BY_NAME), n=1)
            errors.append("-m: unknown trec_eval measure %r%s; known: %s" % (
                spec, "; did you mean %r?" % close[0] if close else "", ", ".join(_TREC_BY_NAME)))
            continue
        measure, cuts = parsed
        cuts = cuts or list(measure.cutoffs)
        for name in (["%s_%d" % (measure.name, c) for c in cuts] if measure.cutoffs else [measure.name]):
            if name not in out:
                out.append(name)
    if errors:
        raise ScoreError("\n".join(errors))
    return out


def _measure_specs(m_flags: Optional[List[str]], measures: Optional[str]) -> List[str]:
    """``-m`` values, then ``--measures a,b.5,10`` split on commas (a bare number joins the
    spec before it, so ``P.5,10`` survives the split)."""
    specs = list(m_flags or [])
    for part in (measures.split(",") if measures else []):
        if part.strip().isdigit() and specs and "." in specs[-1]:
            specs[-1] += "," + part.strip()
        else:
            specs.append(part.strip())
    return specs


def trec_ref(name: str) -> Optional["MetricRef"]:
    """A gate on one trec_eval measure (``map``, ``ndcg_cut.10`` or ``ndcg_cut_10``), or None."""
    parsed = _trec_split(name)
    if parsed is None or len(parsed[1]) != (1 if parsed[0].cutoffs else 0):
        return None
    measure, cuts = parsed
    key = "%s_%d" % (measure.name, cuts[0]) if cuts else measure.name
    return MetricRef(name, Metric(key, "mean", "higher", measure.description, "qrels, run",
                                  "0 when the topic has no relevant document", None), None)


def trec_query(ranking: List[str], judged: Dict[str, int], names: List[str]) -> Dict[str, float]:
    """Every measure of ``names`` for one topic.  ``ranking``: docnos, best first;
    ``judged``: qrels level per docno (>= 1 relevant, 0 judged non-relevant, < 0 unjudged).

    >>> v = trec_query(["a", "b", "c"], {"a": 0, "b": 1, "d": 2}, ["map", "P_2", "bpref", "ndcg_cut_3"])
    >>> v["map"] == (1 / 2) / 2, v["P_2"], v["bpref"] == (1 - 1 / 1) / 2
    (True, 0.5, True)
    """
    rel_total = sum(1 for g in judged.values() if g >= 1)
    nonrel_total = sum(1 for g in judged.values() if g == 0)
    cuts = {n: int(n.rsplit("_", 1)[1]) for n in names if n.rsplit("_", 1)[-1].isdigit()}
    depth = len(ranking)
    positions: List[int] = []    # 0-based ranks of the relevant retrieved documents
    gains: List[int] = []
    ap = bpref = 0.0
    found = nonrel = 0
    get = judged.get
    for rank, doc in enumerate(ranking, 1):
        level = get(doc)
        if level is None:
            continue
        if level >= 1:
            found += 1
            ap += found / rank
            bpref += 1.0 - (min(nonrel, rel_total) / min(rel_total, nonrel_total) if nonrel else 0.0)
            positions.append(rank - 1)
            gains.append(level)
        elif level == 0:
            nonrel += 1
    ideal = ideal_gains(judged.values()) if any(n.startswith("ndcg") for n in names) else []
    upto = partial(hits_at, positions)

    out: Dict[str, float] = {}
    for name in names:
        family = name.rsplit("_", 1)[0] if name in cuts else name
        k = cuts.get(name, 0)
        if family == "num_ret":
            v = float(depth)
        elif family == "num_rel":
            v = float(rel_total)
        elif family == "num_rel_ret":
            v = float(found)
        elif family == "map":
            v = ap / rel_total if rel_total else 0.0
        elif family == "Rprec":
            v = upto(rel_total) / rel_total if rel_total else 0.0
        elif family == "bpref":
            v = bpref / rel_total if rel_total else 0.0
        elif family == "recip_rank":
            v = measure_rr(positions)
        elif family == "P":
            v = measure_p(upto(k), k)
        elif family == "recall":
            v = measure_r(upto(k), rel_total)
        elif family == "success":
            v = measure_success(upto(k))
        else:   # ndcg_cut
            v = measure_ndcg(positions, gains, k, ideal_dcg(ideal, k))
        out[name] = v
    return out


def trec_help() -> str:
    """The ``--help`` lines of the trec_eval measures, from TREC_MEASURES."""
    lines = ["trec_eval measures (--qrels/--run; -m NAME or -m NAME.K1,K2; --format trec prints NAME_K):"]
    for m in TREC_MEASURES:
        spec = m.name + (".K (default K: %s)" % ",".join(map(str, m.cutoffs)) if m.cutoffs else "")
        lines.append("  %-30s %s" % (spec, m.description))
    return "\n".join(lines)


def trec_evaluate(gold: "Gold", run: Dict[str, Tuple[List[float], List[str]]],
                  names: List[str]) -> Tuple[Dict[str, Dict[str, float]], Dict[str, float]]:
    """(per topic {name: value} in qrels topic order, "all" {name: value})."""
    per: Dict[str, Dict[str, float]] = {}
    for qid, judged in zip(gold.qids, gold.judgments):
        scores, ids = run.get(qid, ([], []))
        ranking = [d for _, d in sorted(zip(scores, ids), reverse=True)]
        per[qid] = trec_query(ranking, judged, names)
    n = len(per)
    total = {}
    for name in names:
        s = math.fsum(v[name] for v in per.values())
        family = name.rsplit("_", 1)[0] if name.rsplit("_", 1)[-1].isdigit() else name
        total[name] = s if _TREC_BY_NAME[family].total == "sum" else (s / n if n else 0.0)
    return per, total


def trec_metric_entries(per: Dict[str, Dict[str, float]], total: Dict[str, float]) -> Dict[str, dict]:
    """Report ``metrics`` entries for the trec measures (mean with a normal 95% interval)."""
    out = {}
    n = len(per)
    for name, value in total.items():
        values = [v[name] for v in per.values()]
        ci = None if name.startswith("num_") else _normal_ci(math.fsum(values), math.fsum(x * x for x in values), n)
        out[name] = _entry(value, None, n, ci)
    return out


def render_trec(per: Dict[str, Dict[str, float]], total: Dict[str, float], per_query: bool,
                num_q: bool) -> str:
    """trec_eval's output: ``"%-22s\\t%s\\t%.4f"`` lines (counts as integers), per topic
    (sorted as trec_eval sorts them) with ``-q``, then ``all``."""
    lines = []

    def line(name, qid, v):
        lines.append("%-22s\t%s\t%s" % (name, qid, "%d" % v if name.startswith("num_") else "%.4f" % v))

    if per_query:
        for qid in sorted(per):
            for name, v in per[qid].items():
                line(name, qid, v)
    if num_q:
        line("num_q", "all", len(per))
    for name, v in total.items():
        line(name, "all", v)
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- aggregation


def wilson(count: int, n: int) -> Optional[List[float]]:
    """Wilson score 95% interval for count/n (None when n == 0)."""
    if n == 0:
        return None
    p = count / n
    z2 = Z95 * Z95
    den = 1 + z2 / n
    center = (p + z2 / (2 * n)) / den
    half = Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / den
    return [max(0.0, center - half), min(1.0, center + half)]


def _normal_ci(values_sum: float, sq_sum: float, n: int) -> Optional[List[float]]:
    if n == 0:
        return None
    mean = values_sum / n
    var = max(0.0, sq_sum / n - mean * mean) * n / (n - 1) if n > 1 else 0.0
    half = Z95 * math.sqrt(var / n)
    return [max(0.0, mean - half), min(1.0, mean + half)]


def _has(bits: int):
    return lambda f: f & bits == bits


# name -> (denominator predicate, numerator predicate) on an item's flags
_PAIRED = {
    "precision": (_has(F_SHIP), _has(F_ANS | F_CONT | F_HIT)),
    "chr": (_has(F_SHIP), _has(F_ANS | F_HIT)),
    "under_refusal": (lambda f: not f & F_ANS, _has(F_SHIP)),
    "over_refusal": (_has(F_ANS), lambda f: not f & F_SHIP),
    "pass_rate": (lambda f: True, _has(F_PASS)),
    "correct_refusal": (lambda f: not f & F_SHIP, lambda f: not f & F_ANS),
    "incorrect_refusal": (lambda f: not f & F_SHIP, _has(F_ANS)),
    "hallucination": (_has(F_SHIP), _has(F_HALL)),
    "citation_validity": (_has(F_SHIP), _has(F_VALID)),
    "false_accept_rate": (_has(F_EXPREF), _has(F_SHIP)),
    "false_refuse_rate": (lambda f: not f & F_EXPREF, lambda f: not f & F_SHIP),
    "decision_accuracy": (_has(F_DEC), _has(F_DECOK)),
    "fallback_used_rate": (_has(F_FB), _has(F_FBUSED)),
    "fallback_used_rate_answerable": (_has(F_FB | F_ANS), _has(F_FBUSED)),
    "recall@K": (_has(F_ANS), _has(F_REC)),      # paired only at the first k
}


def _entry(value, count, n, ci, reason=None) -> dict:
    return {"value": value, "count": count, "n": n, "ci": ci, "reason": reason}


def aggregate(scorer: Scorer, idx, trec: bool) -> Dict[str, dict]:
    """Every registry metric (families at every k) over the items ``idx``; unrounded."""
    flags = scorer.flags
    combos = Counter(map(flags.__getitem__, idx))
    out: Dict[str, dict] = {}

    def rate(name: str):
        den, num = _PAIRED[name]
        n = c = 0
        for f, cnt in combos.items():
            if den(f):
                n += cnt
                if num(f):
                    c += cnt
        return c, n

    gidx = list(compress(idx, map(lambda f: f & F_GOLD, map(flags.__getitem__, idx))))
    ng = len(gidx)
    aidx = None   # answerable items, for the seed's recall@K
    for m in REGISTRY:
        if m.name in EXTRA_METRICS:
            continue
        if m.name in SEED_ONLY or m.name == "recall@K":
            names = [m.name] if m.name != "recall@K" else ["recall@%d" % k for k in scorer.ks]
            for name in names:
                if trec:    # --qrels/--run carry no answers: only retrieval metrics exist
                    continue
                if name.startswith("recall@"):
                    if aidx is None:
                        aidx = list(compress(idx, map(lambda f: f & F_ANS, map(flags.__getitem__, idx))))
                    c, n = sum(map(scorer.seed_rec[int(name[7:])].__getitem__, aidx)), len(aidx)
                    out[name] = _entry(c / n if n else m.empty, c, n, wilson(c, n))
                    continue
                if name == "fallback_used_count":
                    with_field = sum(cnt for f, cnt in combos.items() if f & F_FB)
                    c = sum(cnt for f, cnt in combos.items() if f & F_FBUSED)
                    out[name] = (_entry(c, c, with_field, None) if with_field else
                                 _entry(None, None, 0, None, "not measured: no trace row carries fallback_used"))
                    continue
                c, n = rate(name)
                reason = None
                value = c / n if n else m.empty
                if name == "hallucination":
                    unmeasured = sum(cnt for f, cnt in combos.items() if f & F_SHIP and not f & F_HMEAS)
                    if unmeasured:
                        first = min((i for i in idx if i in scorer.no_text), default=None)
                        where = "" if first is None else " (first: qid %s, chunk %s)" % (
                            scorer.gold.qids[first], scorer.no_text[first])
                        reason = ("not measured: no chunk text for %d of %d shipped claims%s; give the trace "
                                  "cited_chunks or --chunks FILE" % (unmeasured, n, where))
                        value = None
                elif name.startswith("fallback_used_rate") and n == 0:
                    reason = ("not measured: no trace row carries fallback_used" if name == "fallback_used_rate"
                              else "not measured: no answerable item's trace carries fallback_used")
                elif name == "decision_accuracy" and n == 0:
                    reason = "not measured: no item has both gold expected_decision and trace decision"
                elif name == "pass_rate" and n == 0:
                    reason = "not measured: no items"
                out[name] = _entry(value if reason is None else None, c, n,
                                   wilson(c, n) if reason is None else None, reason)
            continue
        # retrieval families over items with gold citations
        base = m.name.split("@")[0]
        ks = [None] if m.name == "RR" else scorer.ks
        for k in ks:
            name = m.name if k is None else "%s@%d" % (base, k)
            if ng == 0:
                out[name] = _entry(None, None, 0, None, "not measured: no item has gold citations")
                continue
            if base == "P":
                vals = [measure_p(h, k) for h in map(scorer.hits[k].__getitem__, gidx)]
            elif base == "R":
                vals = list(map(scorer.rec[k].__getitem__, gidx))
            elif base == "nDCG":
                vals = list(map(scorer.ndcg[k].__getitem__, gidx))
            elif base == "RR":
                vals = list(map((scorer.rr if k is None else scorer.rrk[k]).__getitem__, gidx))
            else:  # Success
                c = int(sum(map(measure_success, map(scorer.hits[k].__getitem__, gidx))))
                out[name] = _entry(c / ng, c, ng, wilson(c, ng))
                continue
            total = math.fsum(vals)
            out[name] = _entry(total / ng, None, ng, _normal_ci(total, math.fsum(v * v for v in vals), ng))
    if not trec:
        out.update(_extra_metrics(scorer, idx, combos))
        if scorer.gold.unlabelled:
            _skip_gold_metrics(out)
    return out


EXTRA_METRICS = ("refusal_rate", "rejection_calibration", "policy_compliance", "source_policy_compliance",
                 "answer_relevance", "context_relevance", "citation_coverage", "conflict_correct_rate",
                 "staleness_correct_rate", "clarify_correct_rate", "latency_p50", "latency_p95", "cost_per_item")
# name -> (denominator predicate, numerator predicate), like _PAIRED
_EXTRA_RATES = {
    "refusal_rate": (lambda f: True, lambda f: not f & F_SHIP),
    "rejection_calibration": (lambda f: not f & F_NOLAB, lambda f: bool(f & F_SHIP) != bool(f & F_EXPREF)),
    "policy_compliance": (lambda f: f & (F_SHIP | F_POLREJ), lambda f: not f & F_POLV),
    "source_policy_compliance": (_has(F_SHIP), lambda f: not f & F_SRCV),
    "citation_coverage": (_has(F_REQDOCS), _has(F_OKDOCS)),
    "conflict_correct_rate": (_has(F_REQCONF), _has(F_OKCONF)),
    "staleness_correct_rate": (_has(F_REQSTALE), _has(F_OKSTALE)),
    "clarify_correct_rate": (_has(F_REQCLAR), _has(F_OKCLAR)),
}
_PAIRED.update(_EXTRA_RATES)     # per-item yes/no verdicts: --baseline pairs them too
_EMPTY_WHY = {"refusal_rate": "no items", "rejection_calibration": "no item is labelled",
              "citation_coverage": "no gold item lists required_citation_doc_ids",
              "conflict_correct_rate": "no gold item has required_behavior must_surface_conflict",
              "staleness_correct_rate": "no gold item has required_behavior must_detect_staleness",
              "clarify_correct_rate": "no gold item has required_behavior must_clarify"}
_SKIPPED = "skipped: needs gold labels (reference-free mode: no --gold, or gold rows without labels)"


def nearest_rank(sorted_values: List[float], p: float) -> float:
    """The ceil(p * n)-th smallest value (1-based; p in (0, 1]); the list must be non-empty."""
    return sorted_values[max(1, math.ceil(p * len(sorted_values) - 1e-9)) - 1]


def _extra_metrics(scorer: Scorer, idx, combos: Counter) -> Dict[str, dict]:
    """Issue 20's metrics over the items ``idx`` (``combos``: their flags, counted)."""
    out: Dict[str, dict] = {}
    for name, (den, num) in _EXTRA_RATES.items():
        n = c = 0
        for f, cnt in combos.items():
            if den(f):
                n += cnt
                if num(f):
                    c += cnt
        m = _BY_NAME[name]
        if name == "policy_compliance" and not scorer.policy_measured:
            out[name] = _entry(None, c, n, None, "not measured: no [policy.*] patterns in the gates file "
                                                 "and no gold policy rejection")
        elif n == 0 and m.empty is None:
            out[name] = _entry(None, 0, 0, None, "not measured: " + _EMPTY_WHY[name])
        else:
            out[name] = _entry(c / n if n else m.empty, c, n, wilson(c, n))
    for name, arr, what in (("answer_relevance", scorer.answer_rel, "no shipped item has a question (q) with content terms"),
                            ("context_relevance", scorer.context_rel, "no item has a question, retrieved chunks and all "
                                                                      "their texts (give --chunks)")):
        if _BY_NAME[name].needs not in scorer.needs:
            out[name] = _entry(None, None, 0, None, NOT_COMPUTED % name)
            continue
        vals = [v for v in map(arr.__getitem__, idx) if v == v]
        total = math.fsum(vals)
        out[name] = (_entry(total / len(vals), None, len(vals), _normal_ci(total, math.fsum(v * v for v in vals), len(vals)))
                     if vals else _entry(None, None, 0, None, "not measured: " + what))
    lat = sorted(v for v in map(scorer.latency.__getitem__, idx) if v == v)
    for name, p in (("latency_p50", 0.50), ("latency_p95", 0.95)):
        out[name] = (_entry(nearest_rank(lat, p), None, len(lat), None) if lat else
                     _entry(None, None, 0, None, "not measured: no trace row carries timings_ms.total"))
    cost = [v for v in map(scorer.cost.__getitem__, idx) if v == v]
    out["cost_per_item"] = (_entry(math.fsum(cost) / len(cost), None, len(cost), None) if cost else
                            _entry(None, None, 0, None, "not measured: no trace row carries cost"))
    return {m.name: out[m.name] for m in REGISTRY if m.name in out}


def _skip_gold_metrics(out: Dict[str, dict]) -> None:
    """Reference-free mode: every metric whose registry entry needs gold is skipped, with why."""
    for name in out:
        if parse_metric(name).metric.gold:
            out[name] = _entry(None, None, None, None, _SKIPPED)


# Severity order: an item's primary failure mode is its first label in this order.
MODE_ORDER = ("missing_trace", "policy_violation", "source_policy_violation", "training_cutoff_excuse",
              "under_refusal", "false_acceptance", "citation_not_retrieved", "hallucination", "retrieval_miss",
              "over_refusal", "false_rejection", "conflict_not_surfaced", "staleness_not_detected",
              "clarification_missed", "required_citation_missing", "citation_miss", "claim_miss",
              "decision_mismatch")


def all_modes(f: int, trec: bool) -> List[str]:
    """Every failure label that applies to an item with flags ``f``, most severe first."""
    out = []
    if not f & F_TRACE:
        out.append("missing_trace")
    if f & F_GOLD and not f & F_GOLDRET and (trec or f & F_ANS):
        out.append("retrieval_miss")      # no gold citation was retrieved at all
    if not trec:
        out += _extra_modes(f)
        if f & F_SHIP:
            if not f & (F_ANS | F_NOLAB):
                out.append("under_refusal")
            if f & F_NOTRET:
                out.append("citation_not_retrieved")
            if f & F_HALL:
                out.append("hallucination")
            if f & F_ANS and not f & F_HIT:
                out.append("citation_miss")
            if f & F_ANS and not f & F_CONT:
                out.append("claim_miss")
        elif f & F_ANS:
            out.append("over_refusal")
        if f & F_DEC and not f & F_DECOK:
            out.append("decision_mismatch")
    return sorted(out, key=MODE_ORDER.index)


def _extra_modes(f: int) -> List[str]:
    """Issue 20's failure labels (seed 004's rejection calibration, policies; seed 000's
    decisions for the right reason)."""
    out = []
    if f & F_POLV:
        out.append("policy_violation")
    if f & F_SRCV:
        out.append("source_policy_violation")
    if f & F_CUTOFF:
        out.append("training_cutoff_excuse")
    if not f & F_NOLAB:
        if f & F_SHIP and f & F_EXPREF:
            out.append("false_acceptance")
        if not f & (F_SHIP | F_EXPREF | F_CUTOFF):
            out.append("false_rejection")
    for req, ok, mode in ((F_REQCONF, F_OKCONF, "conflict_not_surfaced"), (F_REQSTALE, F_OKSTALE, "staleness_not_detected"),
                          (F_REQCLAR, F_OKCLAR, "clarification_missed"), (F_REQDOCS, F_OKDOCS, "required_citation_missing")):
        if f & req and not f & ok:
            out.append(mode)
    return out


def failure_mode(f: int, trec: bool) -> Optional[str]:
    """The item's primary failure mode, or None when nothing is wrong with it."""
    labels = all_modes(f, trec)
    return labels[0] if labels else None


def flag_string(f: int) -> str:
    return "".join(ch for bit, ch in enumerate(FLAG_LETTERS) if f >> bit & 1)


def flag_int(s: str) -> int:
    f = 0
    for ch in s:
        pos = FLAG_LETTERS.find(ch)
        if pos < 0:
            raise ValueError(ch)
        f |= 1 << pos
    return f


# --------------------------------------------------------------------------- gates, regression


def check_gates(gates, metrics: Dict[str, dict], k0: int) -> List[dict]:
    results = []
    for g in gates:
        key = g.ref.key(k0)
        entry = metrics.get(key)
        value = entry["value"] if entry else None
        reason = None
        if entry is None:
            reason = "not measured: %s was not computed" % key
        elif value is None:
            reason = entry["reason"]
        if g.op is None:    # a monitor gate without a bound: nothing to fail
            ok = True
        else:
            ok = value is not None and (value >= g.threshold if g.op == ">=" else value <= g.threshold)
        if value is not None and not ok:
            reason = "%s = %s, needs %s %s" % (key, _fmt_num(round(value, 4)), g.op, _fmt_num(g.threshold))
        results.append({"gate": g.ref.spelled, "kind": "threshold", "metric": key, "op": g.op,
                        "threshold": g.threshold, "value": _r(value), "pass": ok,
                        "reason": reason, "message": g.message if value is not None and not ok else None,
                        "p_value": None, "worse": None, "better": None, "tier": g.tier})
    return results


def order_by_tier(gate_results: List[dict]) -> List[dict]:
    """Warn gates first, then block, then monitor; file order within a tier (stable sort).
    Regression and slice gates have no tier of their own and block."""
    for g in gate_results:
        g.setdefault("tier", "block")
    return sorted(gate_results, key=lambda g: _TIER_ORDER[g["tier"]])


def blocking_pass(gate_results: List[dict]) -> bool:
    """The run passes when no block gate failed (warn and monitor gates never fail it)."""
    return all(g["pass"] for g in gate_results if g["tier"] == "block")


def exact_paired_p(worse: int, better: int) -> float:
    """Two-sided exact (binomial, p = 1/2) test on the items that flipped (McNemar exact)."""
    n = worse + better
    if n == 0:
        return 1.0
    m = min(worse, better)
    if n <= 1000:
        tail = sum(math.comb(n, i) for i in range(m + 1)) / 2 ** n
    else:   # log space: exact integers of this size would be slow
        logs = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) - n * math.log(2)
                for i in range(m + 1)]
        top = max(logs)
        tail = math.exp(top) * math.fsum(math.exp(v - top) for v in logs)
    return min(1.0, 2 * tail)


def _paired_counts(name: str, base_flags: Dict[str, int], cur: Dict[str, int], qids, higher: bool):
    den, num = _PAIRED[name]
    worse = better = 0
    for q in qids:
        b, c = base_flags.get(q), cur.get(q)
        if b is None or c is None or not den(b) or not den(c):
            continue
        vb, vc = bool(num(b)), bool(num(c))
        if vb == vc:
            continue
        if (vb and not vc) == higher:
            worse += 1
        else:
            better += 1
    return worse, better


def load_baseline(path: str) -> dict:
    errors = _Errors(MAX_ERRORS)
    raw = b"".join(r for _, r in _raw_lines(path, errors, "baseline report"))
    if errors.count:
        raise ScoreError(errors.text())
    try:
        data = json_row(raw.decode("utf-8-sig"))
    except _JsonLimit as exc:
        raise ScoreError("%s: %s" % (path, exc)) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ScoreError("%s: baseline report is not JSON (%s), got a file of another kind" % (path, str(exc).split(":")[0])) from None
    if type(data) is not dict or type(data.get("items")) is not dict or type(data.get("metrics")) is not dict:
        raise ScoreError("%s: not a score_eval report (needs \"metrics\" and \"items\"), got keys %s"
                         % (path, _show(sorted(data) if type(data) is dict else type(data).__name__)))
    items = {}
    for q, s in data["items"].items():
        try:
            items[q] = flag_int(s)
        except (ValueError, TypeError):
            raise ScoreError("%s: item %s has unknown verdict flags, got %s" % (path, _show(q), _show(s))) from None
    data["_flags"] = items
    return data


def compare(base: dict, path: str, metrics: Dict[str, dict], categories: Dict[str, dict],
            cur_flags: Dict[str, int], reg: Optional[Regression], k0: int) -> Tuple[dict, List[dict]]:
    """``metrics``/``categories`` are this run's unrounded values; the baseline's are rounded."""
    """Deltas per metric and category, paired exact tests, regression and slice gates."""
    bflags = base["_flags"]
    matched = [q for q in cur_flags if q in bflags]
    out_metrics = {}
    for name, entry in metrics.items():
        b = base["metrics"].get(name)
        bv = b.get("value") if isinstance(b, dict) else None
        cv = entry["value"]
        row = {"baseline": bv, "current": _r(cv), "delta": _r(cv - bv) if _num(bv) and _num(cv) else None}
        pname = "recall@K" if name == "recall@%d" % k0 else name
        if pname in _PAIRED and (pname != "recall@K" or base.get("k") == k0):
            higher = _BY_NAME[pname].better == "higher"
            worse, better = _paired_counts(pname, bflags, cur_flags, matched, higher)
            row.update({"worse": worse, "better": better, "p_value": _r(exact_paired_p(worse, better))})
        out_metrics[name] = row
    out_cats = {}
    bcats = base.get("categories") if isinstance(base.get("categories"), dict) else {}
    for cat in sorted(set(categories) | set(bcats)):
        cm = categories.get(cat, {}).get("metrics", {})
        bm = bcats.get(cat, {}).get("metrics", {}) if isinstance(bcats.get(cat), dict) else {}
        row = {}
        for name in sorted(set(cm) | set(bm), key=_metric_sort_key):
            cv = cm.get(name, {}).get("value")
            bv = bm.get(name, {}).get("value") if isinstance(bm.get(name), dict) else None
            row[name] = {"baseline": bv, "current": _r(cv),
                         "delta": _r(cv - bv) if _num(bv) and _num(cv) else None}
        out_cats[cat] = row
    gate_results = []
    if reg is not None:
        for ref, margin in reg.max_drop:
            key = ref.key(k0)
            pname = ref.metric.name if "@K" not in ref.metric.name else "recall@K"
            higher = ref.metric.better == "higher"
            cv = metrics.get(key, {}).get("value")
            b = base["metrics"].get(key)
            bv = b.get("value") if isinstance(b, dict) else None
            res = {"gate": "regression:" + key, "kind": "regression", "metric": key, "op": "max_drop",
                   "threshold": margin, "value": None, "pass": False, "reason": None, "message": None,
                   "p_value": None, "worse": None, "better": None}
            if cv is None or not _num(bv):
                res["reason"] = "not measured: %s missing in %s" % (key, "the baseline" if not _num(bv) else "this run")
            else:
                # The baseline report holds values rounded to 4 decimals: compare like with like.
                cv = round(cv, 4)
                drop = (bv - cv) if higher else (cv - bv)
                worse, better = _paired_counts(pname, bflags, cur_flags, matched, higher)
                p = exact_paired_p(worse, better)
                res.update({"value": _r(drop), "p_value": _r(p), "worse": worse, "better": better})
                res["pass"] = not (drop > margin + 1e-12 and p < reg.alpha)
                if not res["pass"]:
                    res["reason"] = ("%s worsened by %s (> %s) and the paired exact test gives p = %s < %s"
                                     % (key, _fmt_num(round(drop, 4)), _fmt_num(margin), _fmt_num(round(p, 4)),
                                        _fmt_num(reg.alpha)))
            gate_results.append(res)
        for cat in reg.slices:
            for ref in reg.slice_metrics:
                key = ref.key(k0)
                cv = categories.get(cat, {}).get("metrics", {}).get(key, {}).get("value")
                bcat = bcats.get(cat) if isinstance(bcats.get(cat), dict) else None
                bv = bcat.get("metrics", {}).get(key, {}).get("value") if bcat else None
                res = {"gate": "slice:%s:%s" % (cat, key), "kind": "slice", "metric": key, "op": "max_drop",
                       "threshold": reg.slice_max_drop, "value": None, "pass": False, "reason": None,
                       "message": None, "p_value": None, "worse": None, "better": None}
                if cat not in categories and bcat is None:
                    res["reason"] = "slice %r is in neither this run nor the baseline" % cat
                elif cat not in categories:
                    res["reason"] = "slice %r is in the baseline but not in this run" % cat
                elif bcat is None:
                    res["pass"], res["reason"] = True, "new slice: not in the baseline"
                elif cv is None or not _num(bv):
                    res["reason"] = "not measured: %s[%s] has no value" % (key, cat)
                else:
                    higher = ref.metric.better == "higher"
                    cv = round(cv, 4)   # the baseline's value is rounded to 4 decimals
                    drop = (bv - cv) if higher else (cv - bv)
                    res["value"] = _r(drop)
                    res["pass"] = drop <= reg.slice_max_drop + 1e-12
                    if not res["pass"]:
                        res["reason"] = "%s on slice %r worsened by %s (allowed %s)" % (
                            key, cat, _fmt_num(round(drop, 4)), _fmt_num(reg.slice_max_drop))
                gate_results.append(res)
    summary = {"baseline": path, "matched_items": len(matched),
               "only_in_baseline": sum(1 for q in bflags if q not in cur_flags),
               "only_in_current": len(cur_flags) - len(matched),
               "metrics": out_metrics, "categories": out_cats}
    return summary, gate_results


# --------------------------------------------------------------------------- weighted scorecard

# Seed 004's stages and the registry metric that scores each: the one table of the mapping.
# A stage whose metric is not in the registry or was not measured in this run (or, see
# scorecard_gaps, measured on only part of the items it should judge) is left out of
# the overall score and the other weights are renormalized (the report names it).  A metric
# where lower is better scores 1 - value.  Default weights are seed 004's pack defaults; gate
# stages are the ones seed 004 marks is_gate (a stage whose metric a block gate checks is one too).
class Stage(NamedTuple):
    name: str
    metric: str       # registry name; "recall@K" means the first --k
    weight: float     # default weight
    gate: bool


STAGES: Tuple[Stage, ...] = (
    Stage("retrieval", "recall@K", 0.10, False),
    Stage("context_relevance", "context_relevance", 0.10, False),
    Stage("faithfulness", "hallucination", 0.20, False),
    Stage("answer_relevance", "answer_relevance", 0.15, False),
    Stage("citation", "chr", 0.15, False),
    Stage("source_policy", "source_policy_compliance", 0.10, True),
    Stage("policy_compliance", "policy_compliance", 0.10, True),
    Stage("rejection_calibration", "rejection_calibration", 0.10, False),
)
STAGE_ALIASES = {"groundedness": "faithfulness"}
WEIGHT_SUM_TOLERANCE = 0.05     # |sum - 1| above this: normalized with a warning
WEIGHT_MAX = 0.60               # one stage above this (after normalization): error
GATE_STAGE_MIN = 0.05           # a gate stage below this: warning


def _stage_ref(stage: Stage) -> Optional[MetricRef]:
    """The stage's metric, or None when the registry does not (yet) have it."""
    if stage.metric == "recall@K":
        return parse_metric("recall@k")
    m = _BY_NAME.get(stage.metric)
    return MetricRef(stage.metric, m, None) if m is not None and "@K" not in m.name else None


def _stage_name(name: str) -> str:
    name = STAGE_ALIASES.get(name, name)
    if name not in {s.name for s in STAGES}:
        close = difflib.get_close_matches(name, [s.name for s in STAGES] + list(STAGE_ALIASES), n=1, cutoff=0.5)
        raise ScoreError("unknown stage %r%s; stages: %s" % (
            name, "; did you mean %r?" % close[0] if close else "", ", ".join(s.name for s in STAGES)))
    return name


def _weights_from_file(path: str) -> Tuple[Dict[str, float], List[str]]:
    """The ``[weights]`` table of a gates file: stage = weight (stage names or aliases)."""
    with open(path, "rb") as fh:     # load_gates_file has already read and checked it
        text = fh.read().decode("utf-8")
    doc, lines = _parse_toml_lines(text, path)
    table = doc.get("weights")
    if table is None:
        return {}, []
    loc = "%s:%d" % (path, lines.get(("weights",), 0))
    if not isinstance(table, dict):
        return {}, ["%s: [weights] must be a table of stage = weight, got %s" % (loc, _show(table))]
    return _check_weights(table, lambda k: "%s:%d: [weights]" % (path, lines.get(("weights", k), 0)))


def _check_weights(table: dict, where) -> Tuple[Dict[str, float], List[str]]:
    out, errors = {}, []
    for key, val in table.items():
        try:
            name = _stage_name(str(key))
        except ScoreError as exc:
            errors.append("%s %s" % (where(key), exc))
            continue
        if not _num(val) or val < 0:
            errors.append("%s weight of %r must be a number >= 0, got %s" % (where(key), key, _show(val)))
            continue
        out[name] = float(val)
    return out, errors


def resolve_weights(gates_file: Optional[str], cli: Optional[str], gates) -> Tuple[Dict[str, float], List[str]]:
    """Seed defaults <- the gates file's [weights] <- ``--weights JSON``; validated, normalized.

    Returns (weights summing to 1, warnings).  Errors (exit 2): a negative or non-number
    weight, an unknown stage, all weights 0, one stage above WEIGHT_MAX after normalization.
    Warnings: the sum is off 1 by more than WEIGHT_SUM_TOLERANCE (then normalized), a gate
    stage below GATE_STAGE_MIN."""
    weights = {s.name: s.weight for s in STAGES}
    errors: List[str] = []
    if gates_file is not None:
        got, errs = _weights_from_file(gates_file)
        weights.update(got)
        errors += errs
    if cli is not None:
        try:
            table = json.loads(cli)
        except ValueError as exc:
            table = None
            errors.append("--weights: not JSON (%s), got %s" % (str(exc).split(":")[0], _show(cli)))
        if table is not None and not isinstance(table, dict):
            errors.append("--weights: expected a JSON object of stage: weight, got %s" % _show(table))
        elif table is not None:
            got, errs = _check_weights(table, lambda k: "--weights:")
            weights.update(got)
            errors += errs
    if errors:
        raise ScoreError("\n".join(errors))
    total = math.fsum(weights.values())
    if total <= 0:
        raise ScoreError("weights: all stage weights are 0; at least one must be > 0, got %s" % _show(weights))
    warnings = []
    if abs(total - 1.0) > WEIGHT_SUM_TOLERANCE:
        warnings.append("weights sum to %s, not 1 (tolerance %s); normalized to sum 1"
                        % (_fmt_num(round(total, 4)), _fmt_num(WEIGHT_SUM_TOLERANCE)))
    weights = {k: v / total for k, v in weights.items()}
    heavy = [k for k, v in weights.items() if v > WEIGHT_MAX + 1e-12]
    if heavy:
        raise ScoreError("\n".join("weights: stage %r weighs %s after normalization, above %s: one stage would "
                                   "dominate the overall score" % (k, _fmt_num(round(weights[k], 4)), _fmt_num(WEIGHT_MAX))
                                   for k in heavy))
    gated = {g.ref.metric.name for g in gates if g.tier == "block"}
    for s in STAGES:
        if (s.gate or s.metric in gated) and weights[s.name] < GATE_STAGE_MIN - 1e-12:
            warnings.append("weights: gate stage %r weighs %s, below %s: too low for a gate stage"
                            % (s.name, _fmt_num(round(weights[s.name], 4)), _fmt_num(GATE_STAGE_MIN)))
    return weights, warnings


def _oriented(ref: MetricRef, value):
    return None if value is None else (1.0 - value if ref.metric.better == "lower" else value)


def scorecard_gaps(scorer: "Scorer") -> Dict[str, str]:
    """Stage metric -> why the scorecard leaves it out although the metric has a value: its
    value covers only part of the items it should judge (context_relevance without the
    texts of some item's retrieved chunks), so it would stand for a biased subset."""
    lack = sum(getattr(scorer, "context_lack", b""))
    if not lack:
        return {}
    have = sum(1 for v in scorer.context_rel if v == v)
    return {"context_relevance": "not measured: the retrieved chunks' texts are unknown for %d of %d items with a "
                                 "question and retrieved chunks (context_relevance covers only the other %d); give "
                                 "--chunks FILE" % (lack, lack + have, have)}


def scorecard(weights: Dict[str, float], metrics: Dict[str, dict], k0: int,
              gaps: Optional[Dict[str, str]] = None) -> dict:
    """The run's stage scores and weighted overall score (unmeasured stages renormalized away;
    ``gaps``: metric -> reason for a metric that has a value but is left out, see scorecard_gaps)."""
    stages: Dict[str, dict] = {}
    used = 0.0
    acc = []
    for s in STAGES:
        ref = _stage_ref(s)
        key = ref.key(k0) if ref else s.metric
        entry = metrics.get(key) if ref else None
        reason = None
        if ref is None:
            reason = "not measured: %r is not a registry metric" % s.metric
        elif ref.metric.kind == "count":
            reason = "not measured: %r is a count, not a score in [0, 1]" % key
        elif entry is None or entry["value"] is None:
            reason = (entry or {}).get("reason") or "not measured: %s was not computed" % key
        elif gaps and key in gaps:
            reason = gaps[key]
        score = None if reason else _oriented(ref, entry["value"])
        stages[s.name] = {"metric": key, "weight": round(weights[s.name], 4), "effective_weight": None,
                          "score": score, "n": entry["n"] if entry and not reason else None, "reason": reason}
        if score is not None and weights[s.name] > 0:
            used += weights[s.name]
            acc.append((s.name, score))
    overall = math.fsum(weights[k] * v for k, v in acc) / used if used else None
    for k, _ in acc:
        stages[k]["effective_weight"] = round(weights[k] / used, 4)
    for st in stages.values():
        st["score"] = _r(st["score"])
    left_out = [k for k, st in stages.items() if st["effective_weight"] is None]
    note = ("stages not measured, left out of the overall score (the other weights renormalized): %s"
            % ", ".join(left_out)) if left_out else "every stage measured"
    return {"overall": _r(overall), "stages": stages, "not_measured": left_out, "note": note}


# issue 20's per-item means: metric -> the Scorer array holding each item's value (NaN: none)
_ITEM_MEANS = {"answer_relevance": "answer_rel", "context_relevance": "context_rel"}


class ItemStages:
    """Per-item stage scores and overall score, for the stages the run measured.

    An item's stage score is its verdict on the stage metric (1 or 0 for a rate, oriented so
    higher is better; the per-item value for P/R/nDCG/RR families and for the per-item means
    in ``_ITEM_MEANS``); None when the item is not in the metric's denominator (for a mean:
    the item has no value, e.g. no chunk text) or the metric has no per-item verdict.  The
    item's overall is the weighted mean over its scored stages (renormalized per item)."""

    def __init__(self, scorer: "Scorer", card: dict, weights: Dict[str, float]):
        self.scorer, self.weights = scorer, weights
        self.stages = []
        for s in STAGES:
            if card["stages"][s.name]["effective_weight"] is None:
                continue
            ref = _stage_ref(s)
            self.stages.append((s.name, ref, "recall@K" if ref.metric.name == "recall@K" else ref.metric.name))
        # stages scored from the verdict flags alone give the same answer for equal flags
        self.by_flags = all(pname in _PAIRED for _, _, pname in self.stages)
        self.cache: Dict[int, dict] = {}

    def _score(self, i: int, f: int, ref: MetricRef, pname: str):
        if pname in _ITEM_MEANS:
            v = getattr(self.scorer, _ITEM_MEANS[pname])[i]
            return None if v != v else _oriented(ref, v)     # NaN: the item has no value
        if pname in _PAIRED:
            den, num = _PAIRED[pname]
            if not den(f) or (pname == "hallucination" and not f & F_HMEAS):
                return None
            return _oriented(ref, 1.0 if num(f) else 0.0)
        base = ref.metric.name.split("@")[0]
        if not f & F_GOLD or base not in ("P", "R", "nDCG", "RR", "Success"):
            return None
        sc, k = self.scorer, ref.k if ref.k is not None else self.scorer.k0
        if base == "RR":
            return sc.rr[i] if "@" not in ref.metric.name else sc.rrk[k][i]
        return {"P": lambda: sc.hits[k][i] / k, "R": lambda: sc.rec[k][i], "nDCG": lambda: sc.ndcg[k][i],
                "Success": lambda: 1.0 if sc.hits[k][i] else 0.0}[base]()

    def __call__(self, i: int) -> dict:
        f = self.scorer.flags[i]
        if self.by_flags:
            hit = self.cache.get(f)
            if hit is None:
                hit = self.cache[f] = self._card(i, f)
            return {"stages": dict(hit["stages"]), "overall": hit["overall"]}
        return self._card(i, f)

    def _card(self, i: int, f: int) -> dict:
        scores = {name: self._score(i, f, ref, pname) for name, ref, pname in self.stages}
        used = [(self.weights[k], v) for k, v in scores.items() if v is not None and self.weights[k] > 0]
        total = math.fsum(w for w, _ in used)
        overall = math.fsum(w * v for w, v in used) / total if total else None
        return {"stages": {k: _r(v) for k, v in scores.items()}, "overall": _r(overall)}



# --------------------------------------------------------------------------- output


def _r(v):
    """Round a reported float to 4 decimals as the seed does (gates use unrounded values)."""
    if isinstance(v, float):
        return round(v, 4)
    return v


def _fmt_num(v) -> str:
    return ("%.4f" % v).rstrip("0").rstrip(".") if isinstance(v, float) else str(v)


def _rounded(entry: dict) -> dict:
    out = dict(entry)
    out["value"] = _r(entry["value"])
    if entry["ci"] is not None:
        out["ci"] = [round(x, 4) for x in entry["ci"]]
    return out


def _metric_sort_key(name: str):
    base, _, k = name.partition("@")
    for pos, m in enumerate(REGISTRY):
        if m.name == name or m.name.split("@")[0] == base and ("@K" in m.name) == bool(k):
            return (pos, int(k) if k.isdigit() else 0)
    return (len(REGISTRY), 0)


def atomic_write(path: str, text: str) -> None:
    """``write_output`` of ``text`` as UTF-8."""
    write_output(path, text.encode("utf-8"))


def write_output(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a crash leaves the old file or the new one, never half.

    ``-`` is stdout.  A symlink is resolved and its target replaced; a device, FIFO or socket
    is written directly (never renamed over).  A regular file is written to a temp file in
    the target's folder (``.<name>.<pid>.<random>.ragtmp``), fsynced, given mode
    0666 & ~umask and renamed into place.  Every OS error is a ScoreError naming the path."""
    if path == "-":
        buf = getattr(sys.stdout, "buffer", None)
        if buf is None:                       # a text-only stream (tests, IDEs)
            sys.stdout.write(data.decode("utf-8"))
        else:
            sys.stdout.flush()
            buf.write(data)
            buf.flush()
        return
    write_output_with(path, lambda fh: fh.write(data))


def write_output_with(path: str, write) -> None:
    """:func:`write_output` of content produced piece by piece: ``write(fh)`` writes it to
    the binary file (the temp file, or the device in place); ``-`` is stdout's buffer."""
    if path == "-":
        sys.stdout.flush()
        write(sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return
    target = os.path.realpath(path)
    try:
        try:
            st = os.stat(target)
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise ScoreError("%s: cannot write: it is a folder" % path)
        if st is not None and not stat.S_ISREG(st.st_mode):
            with open(target, "wb") as fh:          # a device or FIFO: written in place
                write(fh)
            return
        folder = os.path.dirname(target)
        os.makedirs(folder, exist_ok=True)
        sweep_temp_files(folder)
        fd, tmp = tempfile.mkstemp(prefix=".%s.%d." % (os.path.basename(target), os.getpid()),
                                   suffix=TMP_SUFFIX, dir=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                write(fh)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o666 & ~_umask())
            os.replace(tmp, target)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError as exc:
        raise ScoreError("%s: cannot write: %s" % (path, exc.strerror or exc)) from None


def write_manifest(path: str, files: List[str]) -> None:
    """Write, last, the manifest of a set of outputs: each file's sha256 as written.  A reader
    tells a complete set (every hash matches) from a torn one (a run killed midway removed
    the old manifest first and never wrote the new one)."""
    import hashlib
    hashes = {}
    here = os.path.dirname(os.path.abspath(path))
    for f in files:
        try:
            with open(f, "rb") as fh:
                hashes[os.path.relpath(os.path.abspath(f), here).replace(os.sep, "/")] = \
                    hashlib.sha256(fh.read()).hexdigest()
        except OSError as exc:
            raise ScoreError("%s: cannot read back for the manifest: %s" % (f, exc.strerror)) from None
    atomic_write(path, json.dumps({"schema": "output-set/1", "sha256": hashes}, indent=2) + "\n")


def remove_output(path: str) -> None:
    """Remove an earlier manifest before a new set is written (missing is fine)."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise ScoreError("%s: cannot remove: %s" % (path, exc.strerror)) from None


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_STARTED = time.time()


def sweep_temp_files(folder: str) -> int:
    """Remove ``*.ragtmp`` files in ``folder`` left by killed runs: their process is gone and
    they are older than this one.  Returns how many were removed (errors are ignored)."""
    removed = 0
    try:
        names = [n for n in os.listdir(folder) if n.endswith(TMP_SUFFIX) and n.startswith(".")]
    except OSError:
        return 0
    for name in names:
        parts = name.split(".")
        pid = int(parts[-3]) if len(parts) >= 4 and parts[-3].isdigit() else 0
        full = os.path.join(folder, name)
        try:
            if pid == os.getpid() or os.lstat(full).st_mtime >= _STARTED or _alive(pid):
                continue
            os.unlink(full)
            removed += 1
        except OSError:
            pass
    return removed


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:          # exists, owned by someone else
        return True
    return True


def render_json(report: dict, items: Dict[str, str]) -> str:
    """indent=2 like the seed; the per-item map goes last on one line (fast for big sets)."""
    head = json.dumps(report, indent=2, ensure_ascii=False)
    return head[:-2] + ',\n  "items": ' + json.dumps(items, ensure_ascii=False, separators=(",", ":")) + "\n}\n"


def render_markdown(report: dict, worst: List[dict]) -> str:
    mark = {True: "PASS", False: "FAIL"}
    out = ["# score_eval report: %s" % md_text(report["dataset"]), "",
           "**%s**: %d of %d gates pass." % (mark[report["pass"]],
                                               sum(1 for g in report["gate_results"] if g["pass"]),
                                               len(report["gate_results"])), ""]
    c = report["counts"]
    out.append("Gold items: %d; trace rows: %d; missing traces: %d; unknown trace rows: %d; duplicate "
               "trace rows: %d." % (c["gold_items"], c["trace_rows"], c["missing_traces"],
                                    c["unknown_trace_rows"], c["duplicate_trace_rows"]))
    out += ["", "## Gates", "", "| | gate | value | needs | note |", "|---|---|---|---|---|"]
    for g in report["gate_results"]:
        need = "" if g["op"] is None else "%s %s" % (g["op"], _fmt_num(g["threshold"]))
        note = (g["reason"] or "") + ((" " + g["message"]) if g.get("message") else "")
        out.append("| %s | `%s`%s | %s | %s | %s |" % (_markdown_mark(g), g["gate"], _markdown_tier(g),
                                                    _cell(g["value"]), need, md_text(note)))
    card = report.get("scorecard")
    if card:
        out += ["", "Weighted overall score: %s (%s)." % (_cell(card["overall"]), card["note"])]
    out += ["", "## Metrics", "", "| metric | value | count / n | 95% CI |", "|---|---|---|---|"]
    for name, e in report["metrics"].items():
        frac = "" if e["n"] is None else ("%s / %d" % (e["count"], e["n"]) if e["count"] is not None else "n = %d" % e["n"])
        ci = "" if e["ci"] is None else "%.4f - %.4f" % tuple(e["ci"])
        out.append("| `%s` | %s | %s | %s |" % (name, _cell(e["value"]) if e["value"] is not None else
                                                 "null (%s)" % e["reason"], frac, ci))
    cats = report["categories"]
    if cats:
        cols = [n for n in ("pass_rate", "precision", "chr", "hallucination", "over_refusal", "under_refusal",
                            "recall@%d" % report["k"], "nDCG@%d" % report["k"]) if n in report["metrics"]]
        out += ["", "## Categories", "", "| category | items | " + " | ".join(cols) + " |",
                "|---|---|" + "---|" * len(cols)]
        for cat, block in cats.items():
            out.append("| %s | %d | %s |" % (md_text(cat), block["items"], " | ".join(
                _cell(block["metrics"].get(col, {}).get("value")) for col in cols)))
    out += ["", "## Failure modes", ""]
    if report["failure_modes"]:
        out += ["| mode | items |", "|---|---|"]
        out += ["| %s | %d |" % kv for kv in report["failure_modes"].items()]
    else:
        out.append("No failing items.")
    if worst:
        out += ["", "## Worst items (up to %d)" % len(worst), "", "| qid | category | failure mode | all labels |",
                "|---|---|---|---|"]
        for w in worst:
            out.append("| %s | %s | %s | %s |" % (md_text(w["qid"]), md_text(w["category"]), w["failure_mode"],
                                                ", ".join(w["labels"])))
    reg = report.get("regression")
    if reg:
        out += ["", "## Against the baseline", "", "Baseline: %s; %d items paired." % (md_text(reg["baseline"]), reg["matched_items"]),
                "", "| metric | baseline | current | delta | worse | better | p |", "|---|---|---|---|---|---|---|"]
        for name, r in reg["metrics"].items():
            out.append("| `%s` | %s | %s | %s | %s | %s | %s |" % (
                name, _cell(r["baseline"]), _cell(r["current"]), _cell(r["delta"]), r.get("worse", ""),
                r.get("better", ""), _cell(r.get("p_value"))))
    if report["warnings"]:
        out += ["", "## Warnings", ""] + ["- %s" % md_text(w) for w in report["warnings"]]
    return "\n".join(out) + "\n"


def _markdown_mark(g: dict) -> str:
    if g.get("tier") == "monitor":
        return "📊"
    return "✅" if g["pass"] else ("⚠️" if g.get("tier") == "warn" else "❌")


def _markdown_tier(g: dict) -> str:
    return "" if g.get("tier", "block") == "block" else " (%s)" % g["tier"]


_MD_SPECIAL = {"|": "\\|", "`": "\\`", "<": "&lt;", ">": "&gt;", "&": "&amp;", "\r": " ", "\n": " ",
               "\\": "\\\\", "*": "\\*", "_": "\\_", "[": "\\[", "]": "\\]", "#": "\\#"}
_MD_RX = re.compile("[|`<>&\r\n\\\\*_\\[\\]#]")


def md_text(value) -> str:
    """Text from the input made inert in Markdown: table pipes, code ticks, raw HTML
    (``<`` ``>`` ``&``), emphasis, links and headings escaped; a newline becomes a space."""
    return _MD_RX.sub(lambda m: _MD_SPECIAL[m.group()], _CONTROL.sub("?", str(value)))


def _cell(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, float):
        return "%.4f" % v
    return str(v)


# --------------------------------------------------------------------------- reports: HTML, JUnit, CSV

HTML_ITEMS = 2000        # items in the HTML drill-down (failing first); the rest are counted
HTML_TEXT = 3000         # characters of one claim or chunk text shown before "[... N more]"
_CTRL_RX = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")
_TIER_MARK = {"block": "BLOCK", "warn": "WARN", "monitor": "MONITOR"}
_HTML_BEGIN, _HTML_END = "<!--score_eval:section-->", "<!--/score_eval:section-->"


def _inert(text) -> str:
    """Text with control characters, lone surrogates and XML non-characters made visible
    (``\\x07``), so it is printable, encodable as UTF-8 and valid in XML 1.0."""
    text = "" if text is None else str(text)
    return _CTRL_RX.sub(lambda m: "\\x%02x" % ord(m.group(0)) if ord(m.group(0)) < 0x100 else
                        "\\u%04x" % ord(m.group(0)), text)


def _h(text) -> str:
    """Escaped for HTML text and attribute values (html.escape with quotes)."""
    return html.escape(_inert(text), quote=True)


def _clip(text: str, limit: int = HTML_TEXT) -> str:
    return text if len(text) <= limit else text[:limit] + " [... %d more characters]" % (len(text) - limit)


def _num_text(v) -> str:
    return "null" if v is None else ("%.4f" % v if isinstance(v, float) else str(v))


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0;background:#f5f6f8;color:#1d232b}
main{max-width:1180px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:24px;margin:8px 0 4px}h2{font-size:20px;margin:28px 0 8px}h3{font-size:16px;margin:22px 0 6px}
section.dataset{background:#fff;border:1px solid #d7dbe0;border-radius:8px;padding:4px 20px 20px;margin:18px 0}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}
th,td{border:1px solid #d7dbe0;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#eef1f4}td.n{text-align:right;font-variant-numeric:tabular-nums}
.verdict{display:inline-block;font-weight:700;font-size:18px;padding:6px 14px;border-radius:6px;color:#fff}
.pass{background:#1a7f37}.fail{background:#cf222e}.warnbg{background:#9a6700}
.tier{display:inline-block;font-size:11px;font-weight:700;padding:1px 6px;border-radius:4px;color:#fff}
.t-block{background:#57606a}.t-warn{background:#bf8700}.t-monitor{background:#0969da}
.ok{color:#1a7f37;font-weight:700}.bad{color:#cf222e;font-weight:700}.warn{color:#9a6700;font-weight:700}
.muted{color:#57606a}details.item{border:1px solid #d7dbe0;border-radius:6px;margin:4px 0;padding:2px 10px;background:#fbfcfd}
details.item[open]{background:#fff}summary{cursor:pointer;padding:3px 0}
dl{display:grid;grid-template-columns:150px 1fr;gap:3px 12px;margin:6px 0}dt{font-weight:600;color:#57606a}dd{margin:0}
blockquote{margin:3px 0 6px;padding:4px 10px;border-left:3px solid #0969da;background:#f6f8fa;white-space:pre-wrap}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
.claim{white-space:pre-wrap}nav a{margin-right:14px}
"""


def _html_page(title: str, body: str) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"generator\" content=\"score_eval\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<title>%s</title>\n<style>%s</style>\n</head>\n<body>\n<main>\n%s</main>\n</body>\n</html>\n"
            % (_h(title), _CSS, body))


def _interval_svg(value, ci) -> str:
    """A 0..1 axis with the 95% interval as a bar and the value as a dot."""
    if not isinstance(value, (int, float)) or not 0 <= value <= 1:
        return ""
    w, pad = 180, 4
    x = lambda v: pad + (w - 2 * pad) * min(1.0, max(0.0, v))
    parts = ['<svg width="%d" height="14" role="img" aria-label="interval">' % w,
             '<line x1="%d" y1="7" x2="%d" y2="7" stroke="#d0d7de" stroke-width="2"/>' % (pad, w - pad)]
    if ci:
        parts.append('<rect x="%.1f" y="3" width="%.1f" height="8" fill="#9ec5fe" rx="2"/>'
                     % (x(ci[0]), max(1.0, x(ci[1]) - x(ci[0]))))
    parts.append('<circle cx="%.1f" cy="7" r="3.5" fill="#0550ae"/></svg>' % x(value))
    return "".join(parts)


def _bars_svg(rows: List[Tuple[str, int]]) -> str:
    """Horizontal bar chart of (label, count)."""
    if not rows:
        return '<p class="ok">No failing items.</p>'
    top = max(c for _, c in rows) or 1
    lw, bw, h = 210, 420, 22
    out = ['<svg width="%d" height="%d" role="img" aria-label="failure modes">' % (lw + bw + 60, h * len(rows) + 4)]
    for n, (label, c) in enumerate(rows):
        y = n * h + 2
        out.append('<text x="%d" y="%d" text-anchor="end" font-size="12" fill="#1d232b">%s</text>'
                   % (lw - 8, y + 15, _h(label)))
        out.append('<rect x="%d" y="%d" width="%.1f" height="%d" fill="#cf222e" rx="2"/>'
                   % (lw, y + 3, max(2.0, bw * c / top), h - 6))
        out.append('<text x="%.1f" y="%d" font-size="12" fill="#1d232b">%d</text>' % (lw + max(2.0, bw * c / top) + 6, y + 15, c))
    out.append("</svg>")
    return "".join(out)


def _item_texts(args, scorer: Scorer, wanted) -> Dict[int, dict]:
    """Question, gold substrings and citations, claim, citations with their text and the
    ranking of the items ``wanted``, read again from the (already validated) input files."""
    out: Dict[int, dict] = {i: {} for i in wanted}
    index, sink, notes = scorer.gold.index, _Errors(1), []
    for _, row in _jsonl(args.gold, sink, notes):
        i = index.get(row.get("qid"))
        if i in out:
            out[i].update({"question": row.get("question"), "gold_claim_substr": row.get("gold_claim_substr"),
                           "gold_citations": row.get("gold_citations"), "expected_decision": row.get("expected_decision")})
    for _, row in _jsonl(args.trace, sink, notes):
        i = index.get(row.get("qid") or row.get("q_id"))
        if i not in out:
            continue
        aj = row.get("answer_json") if type(row.get("answer_json")) is dict else {}
        cited = row.get("cited_chunks") if type(row.get("cited_chunks")) is dict else {}
        cits = aj.get("citations") or []
        texts = []
        for c in cits:
            t = cited.get(c)
            if t is None and scorer.chunks is not None:
                t = scorer.chunks.get(c)
            texts.append((c, t))
        out[i].update({"claim": aj.get("claim"), "citations": texts, "retrieved_ids": row.get("retrieved_ids") or [],
                       "decision": row.get("decision"), "trace_question": row.get("q")})
    return out


def _html_items(args, scorer: Scorer, trec: bool, stages: ItemStages) -> Tuple[str, int]:
    order = []
    for i, f in enumerate(scorer.flags):
        mode = failure_mode(f, trec)
        order.append((MODE_ORDER.index(mode) if mode else len(MODE_ORDER), i))
    order.sort()
    shown = [i for _, i in order[:HTML_ITEMS]]
    texts = {} if trec else _item_texts(args, scorer, set(shown))
    meaning = dict(FLAG_MEANINGS)
    parts = []
    for i in shown:
        rec = _item_record(scorer, i, trec)
        card = stages(i)
        t = texts.get(i, {})
        status = rec["failure_mode"] or "ok"
        cls = "bad" if rec["failure_mode"] else "ok"
        rows = []
        q = t.get("question") if t.get("question") is not None else t.get("trace_question")
        if q is not None:
            rows.append(("Question", '<span class="claim">%s</span>' % _h(_clip(str(q)))))
        if not trec:
            claim = t.get("claim")
            rows.append(("Claim", '<span class="claim">%s</span>' % _h(_clip(str(claim))) if claim is not None
                         else '<span class="muted">(no claim)</span>'))
            if t.get("decision") is not None:
                rows.append(("Decision", "%s (expected %s)" % (_h(t["decision"]), _h(t.get("expected_decision")))))
            cites = t.get("citations") or []
            rows.append(("Citations", "".join(
                "<div><code>%s</code>%s</div>" % (_h(c), "<blockquote>%s</blockquote>" % _h(_clip(str(txt)))
                                                 if txt is not None else ' <span class="muted">(no text)</span>')
                for c, txt in cites) or '<span class="muted">none</span>'))
            subs = t.get("gold_claim_substr")
            rows.append(("Gold substrings", ", ".join("<code>%s</code>" % _h(s) for s in subs) if subs else
                         '<span class="muted">%s</span>' % ("[] (vacuous)" if subs == [] else "none")))
            rows.append(("Gold citations", ", ".join("<code>%s</code>" % _h(c) for c in t.get("gold_citations") or [])
                         or '<span class="muted">none</span>'))
            rows.append(("Retrieved", ", ".join("<code>%s</code>" % _h(c) for c in t.get("retrieved_ids", [])[:20])
                         or '<span class="muted">none</span>'))
            if rec.get("unsupported"):
                rows.append(("Unsupported", ", ".join("<code>%s</code>" % _h(w) for w in rec["unsupported"])))
        if rec["retrieval"]:
            rows.append(("Retrieval", " ".join("%s=%s" % (_h(k), _num_text(v)) for k, v in rec["retrieval"].items())))
        rows.append(("Labels", _h(", ".join(rec["labels"])) or '<span class="muted">none</span>'))
        rows.append(("Flags", "<code>%s</code> <span class=\"muted\">%s</span>" % (
            _h(rec["flags"]), _h("; ".join(meaning[ch] for ch in rec["flags"])))))
        rows.append(("Stage scores", " ".join("%s=%s" % (_h(k), _num_text(v)) for k, v in card["stages"].items())
                     + " &middot; overall=%s" % _num_text(card["overall"])))
        parts.append('<details class="item"><summary><code>%s</code> &middot; %s &middot; <span class="%s">%s</span>'
                     '</summary>\n<dl>%s</dl></details>\n' % (
                         _h(rec["qid"]), _h(rec["category"]), cls, _h(status),
                         "".join("<dt>%s</dt><dd>%s</dd>" % (_h(k), v) for k, v in rows)))
    return "".join(parts), len(scorer.flags) - len(shown)


def render_html_section(report: dict, items_html: str = "", hidden: int = 0) -> str:
    """One dataset's report as an HTML <section> (every input string escaped)."""
    ds = str(report.get("dataset"))
    anchor = "ds-" + re.sub(r"[^A-Za-z0-9_-]", "_", ds)
    gates = report["gate_results"]
    out = ['<section class="dataset" id="%s" data-dataset="%s" data-pass="%s">' % (
        _h(anchor), _h(ds), "true" if report["pass"] else "false")]
    blocked = sum(1 for g in gates if g["tier"] == "block" and not g["pass"])
    out.append('<h2>Dataset %s</h2>\n<p><span class="verdict %s">%s</span> &nbsp; %d of %d block gates pass; '
               '%d warn gates failed; %d monitored.</p>' % (
                   _h(ds), "pass" if report["pass"] else "fail", "PASS" if report["pass"] else "FAIL",
                   sum(1 for g in gates if g["tier"] == "block") - blocked, sum(1 for g in gates if g["tier"] == "block"),
                   report.get("warnings_failed", 0), sum(1 for g in gates if g["tier"] == "monitor")))
    c = report["counts"]
    out.append('<p class="muted">Gold items: %d; trace rows: %d; missing traces: %d; unknown trace rows: %d; '
               'duplicate trace rows: %d; k = %s.</p>' % (c["gold_items"], c["trace_rows"], c["missing_traces"],
                                                       c["unknown_trace_rows"], c["duplicate_trace_rows"], _h(report["k"])))
    out.append("<h3>Gates</h3>\n<table><tr><th>tier</th><th>result</th><th>gate</th><th>value</th><th>needs</th>"
               "<th>note</th></tr>")
    for g in gates:
        res = ('<span class="ok">pass</span>' if g["pass"] else
               '<span class="%s">%s</span>' % ("warn" if g["tier"] != "block" else "bad",
                                              "warn" if g["tier"] == "warn" else "fail"))
        if g["tier"] == "monitor" and g["op"] is None:
            res = '<span class="muted">reported</span>'
        need = "" if g["op"] is None else "%s %s" % (_h(g["op"]), _h(_fmt_num(g["threshold"])))
        note = (g["reason"] or "") + ((" " + g["message"]) if g.get("message") else "")
        out.append('<tr><td><span class="tier t-%s">%s</span></td><td>%s</td><td><code>%s</code></td>'
                   '<td class="n">%s</td><td>%s</td><td>%s</td></tr>' % (
                       _h(g["tier"]), _TIER_MARK.get(g["tier"], "BLOCK"), res, _h(g["gate"]),
                       _h(_num_text(g["value"])), need, _h(note)))
    out.append("</table>")
    card = report.get("scorecard")
    if card:
        out.append("<h3>Weighted scorecard</h3>\n<p>Overall score: <strong>%s</strong>. %s.</p>" % (
            _h(_num_text(card["overall"])), _h(card["note"])))
        out.append("<table><tr><th>stage</th><th>metric</th><th>weight</th><th>effective weight</th><th>score</th>"
                   "<th></th><th>n</th><th>note</th></tr>")
        for name, st in card["stages"].items():
            out.append('<tr><td>%s</td><td><code>%s</code></td><td class="n">%s</td><td class="n">%s</td>'
                       '<td class="n">%s</td><td>%s</td><td class="n">%s</td><td>%s</td></tr>' % (
                           _h(name), _h(st["metric"]), _h(_num_text(st["weight"])),
                           _h(_num_text(st["effective_weight"])), _h(_num_text(st["score"])),
                           _interval_svg(st["score"], None), _h(_num_text(st["n"])), _h(st["reason"] or "")))
        out.append("</table>")
    out.append("<h3>Metrics</h3>\n<table><tr><th>metric</th><th>value</th><th>count / n</th><th>95% CI</th>"
               "<th>interval (0 to 1)</th></tr>")
    for name, e in report["metrics"].items():
        frac = "" if e["n"] is None else ("%s / %d" % (e["count"], e["n"]) if e["count"] is not None else "n = %d" % e["n"])
        ci = "" if e["ci"] is None else "%.4f &ndash; %.4f" % tuple(e["ci"])
        kind = _BY_NAME.get(name) or _BY_NAME.get(re.sub(r"@\d+$", "@K", name))
        svg = _interval_svg(e["value"], e["ci"]) if kind is None or kind.kind != "count" else ""
        val = _h(_num_text(e["value"])) if e["value"] is not None else '<span class="muted">null: %s</span>' % _h(e["reason"])
        out.append('<tr><td><code>%s</code></td><td class="n">%s</td><td class="n">%s</td><td class="n">%s</td>'
                   '<td>%s</td></tr>' % (_h(name), val, _h(frac), ci, svg))
    out.append("</table>")
    cats = report.get("categories") or {}
    if cats:
        cols = [n for n in ("pass_rate", "precision", "chr", "hallucination", "over_refusal", "under_refusal",
                            "recall@%s" % report["k"], "nDCG@%s" % report["k"]) if n in report["metrics"]]
        out.append("<h3>Categories</h3>\n<table><tr><th>category</th><th>items</th>%s</tr>"
                   % "".join("<th><code>%s</code></th>" % _h(col) for col in cols))
        for cat, block in cats.items():
            out.append('<tr><td>%s</td><td class="n">%d</td>%s</tr>' % (_h(cat), block["items"], "".join(
                '<td class="n">%s</td>' % _h(_num_text(block["metrics"].get(col, {}).get("value"))) for col in cols)))
        out.append("</table>")
    out.append("<h3>Failure modes</h3>\n" + _bars_svg(list(report["failure_modes"].items())))
    reg = report.get("regression")
    if reg:
        out.append("<h3>Against the baseline</h3>\n<p>Baseline <code>%s</code>; %d items paired.</p>"
                   % (_h(reg["baseline"]), reg["matched_items"]))
        out.append("<table><tr><th>metric</th><th>baseline</th><th>current</th><th>delta</th><th>worse</th>"
                   "<th>better</th><th>p</th></tr>")
        for name, r in reg["metrics"].items():
            d = r.get("delta")
            cls = "" if not isinstance(d, (int, float)) or d == 0 else (
                "ok" if (d > 0) == ((_BY_NAME.get(name) or _BY_NAME.get(re.sub(r"@\d+$", "@K", name)) or
                                    _BY_NAME["precision"]).better == "higher") else "bad")
            out.append('<tr><td><code>%s</code></td><td class="n">%s</td><td class="n">%s</td><td class="n %s">%s</td>'
                       '<td class="n">%s</td><td class="n">%s</td><td class="n">%s</td></tr>' % (
                           _h(name), _h(_num_text(r["baseline"])), _h(_num_text(r["current"])), cls,
                           _h(_num_text(d)), _h(r.get("worse", "")), _h(r.get("better", "")),
                           _h(_num_text(r.get("p_value")) if "p_value" in r else "")))
        out.append("</table>")
    if report.get("warnings"):
        out.append("<h3>Warnings</h3>\n<ul>%s</ul>" % "".join("<li>%s</li>" % _h(w) for w in report["warnings"]))
    if items_html:
        out.append("<h3>Items</h3>\n<p class=\"muted\">Failing items first (most severe mode first), then the rest "
                   "in gold order; open an item for its question, claim, cited text and verdict flags; the browser's "
                   "find searches them.%s</p>\n%s" % (
                       " %d more items not shown (see --items or --csv)." % hidden if hidden else "", items_html))
    out.append("</section>\n")
    return "\n".join(out)


def render_html(report: dict, items_html: str = "", hidden: int = 0) -> str:
    title = "score_eval report: %s" % report.get("dataset")
    body = "<h1>%s</h1>\n%s\n%s%s\n" % (_h(title), _HTML_BEGIN, render_html_section(report, items_html, hidden), _HTML_END)
    return _html_page(title, body)


_SECTION_RX = re.compile(r'<section class="dataset" id="([^"]*)" data-dataset="([^"]*)" data-pass="(true|false)">')


def merge_html(texts: List[Tuple[str, str]]) -> str:
    """One page from several ``--html`` reports (path, text): their dataset sections in order.

    Every piece of input text inside a section is escaped, so the section markers (HTML
    comments) cannot occur inside one: splitting on them is safe."""
    sections, toc, ok = [], [], True
    for path, text in texts:
        if '<meta name="generator" content="score_eval">' not in text or text.count(_HTML_BEGIN) != 1 \
                or text.count(_HTML_END) != 1:
            raise ScoreError("%s: not a score_eval --html report (section markers missing), got %s"
                             % (path, _show(text[:60])))
        sec = text.split(_HTML_BEGIN, 1)[1].split(_HTML_END, 1)[0]
        m = _SECTION_RX.search(sec)
        if not m:
            raise ScoreError("%s: not a score_eval --html report (no dataset section), got %s" % (path, _show(sec[:60])))
        ok = ok and m.group(3) == "true"
        toc.append('<a href="#%s">%s: <span class="%s">%s</span></a>' % (
            m.group(1), m.group(2), "ok" if m.group(3) == "true" else "bad", "pass" if m.group(3) == "true" else "FAIL"))
        sections.append(sec)
    body = ('<h1>score_eval report</h1>\n<p><span class="verdict %s">%s</span></p>\n<nav>%s</nav>\n%s\n%s%s\n' % (
        "pass" if ok else "fail", "PASS" if ok else "FAIL", " ".join(toc), _HTML_BEGIN, "".join(sections), _HTML_END))
    return _html_page("score_eval report", body)


def _x(text) -> str:
    """Escaped for an XML 1.0 attribute or text node."""
    return html.escape(_inert(text), quote=True).replace("\n", "&#10;").replace("\r", "&#13;").replace("\t", "&#9;")


def render_junit(report: dict, items: Optional[List[dict]] = None) -> str:
    """JUnit XML: <testsuites> with one <testsuite> (the dataset), one <testcase> per gate.

    block failures are <failure>; warn failures are <skipped> with a ``tier=warn`` property;
    monitor gates pass and carry their value as properties.  With ``items`` (--junit-items)
    a second testsuite ``<dataset>.items`` has one testcase per item, failing items failed."""
    ds = str(report.get("dataset"))
    suites = []
    cases, fails, skips = [], 0, 0
    for g in report["gate_results"]:
        props = [("tier", g["tier"]), ("metric", g["metric"]), ("value", _num_text(g["value"])),
                 ("op", g["op"] or ""), ("threshold", "" if g["threshold"] is None else _fmt_num(g["threshold"]))]
        body = "<properties>%s</properties>" % "".join(
            '<property name="%s" value="%s"/>' % (_x(k), _x(v)) for k, v in props)
        note = (g["reason"] or "") + ((" " + g["message"]) if g.get("message") else "")
        if not g["pass"] and g["tier"] == "block":
            fails += 1
            body += '<failure message="%s" type="gate">%s</failure>' % (_x(note), _x(note))
        elif not g["pass"] and g["tier"] == "warn":
            skips += 1
            body += '<skipped message="%s"/>' % _x("warn gate failed (does not block): " + note)
        cases.append('    <testcase classname="%s" name="%s">%s</testcase>' % (
            _x("score_eval.%s.%s" % (ds, g["tier"])), _x(g["gate"]), body))
    suites.append(('<testsuite name="%s" tests="%d" failures="%d" errors="0" skipped="%d">\n'
                   '    <properties><property name="pass" value="%s"/><property name="warnings_failed" value="%d"/>'
                   '<property name="overall_score" value="%s"/></properties>\n%s\n  </testsuite>'
                   % (_x(ds), len(cases), fails, skips, "true" if report["pass"] else "false",
                      report.get("warnings_failed", 0), _num_text((report.get("scorecard") or {}).get("overall")),
                      "\n".join(cases)), len(cases), fails, skips))
    if items is not None:
        icases, ifails = [], 0
        for rec in items:
            body = ""
            if rec["failure_mode"]:
                ifails += 1
                body = '<failure message="%s" type="item">%s</failure>' % (
                    _x(rec["failure_mode"]), _x("labels: %s; flags: %s" % (", ".join(rec["labels"]), rec["flags"])))
            icases.append('    <testcase classname="%s" name="%s">%s</testcase>' % (
                _x("score_eval.%s.items.%s" % (ds, rec["category"])), _x(rec["qid"]), body))
        suites.append(('<testsuite name="%s" tests="%d" failures="%d" errors="0" skipped="0">\n%s\n  </testsuite>'
                       % (_x(ds + ".items"), len(icases), ifails, "\n".join(icases)), len(icases), ifails, 0))
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="score_eval" tests="%d" failures="%d" '
            'errors="0" skipped="%d">\n  %s\n</testsuites>\n' % (
                sum(s[1] for s in suites), sum(s[2] for s in suites), sum(s[3] for s in suites),
                "\n  ".join(s[0] for s in suites)))


def _csv_cell(v):
    """Numbers as they are; text made inert and kept from being read as a spreadsheet formula."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return _num_text(v) if isinstance(v, float) else str(v)
    text = _inert(v)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def _csv_text(header: List[str], rows) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow(header)
    for row in rows:
        w.writerow([_csv_cell(v) for v in row])
    return buf.getvalue()


def render_items_csv(scorer: Scorer, trec: bool, stages: ItemStages) -> str:
    names = [name for name, _, _ in stages.stages]
    head = ["qid", "category", "line", "pass", "answerable", "shipped", "failure_mode", "labels", "flags"]
    head += ["stage:" + n for n in names] + ["overall"]

    def rows():
        for i in range(len(scorer.gold)):
            rec = _item_record(scorer, i, trec)
            card = stages(i)
            yield ([rec["qid"], rec["category"], rec["line"], rec.get("pass"), rec.get("answerable"),
                    rec.get("shipped"), rec["failure_mode"] or "", ";".join(rec["labels"]), rec["flags"]]
                   + [card["stages"][n] for n in names] + [card["overall"]])
    return _csv_text(head, rows())


def render_metrics_csv(report: dict) -> str:
    rows = []
    for name, e in report["metrics"].items():
        ci = e["ci"] or [None, None]
        rows.append([name, e["value"], e["count"], e["n"], ci[0], ci[1], e["reason"] or ""])
    return _csv_text(["metric", "value", "count", "n", "ci_low", "ci_high", "reason"], rows)


def append_step_summary(path: str, text: str) -> Optional[str]:
    """Append to $GITHUB_STEP_SUMMARY (a regular file or a new one); never a symlink, FIFO or
    device.  Returns a warning instead of writing when the path is not a regular file."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        return "GITHUB_STEP_SUMMARY %s: cannot read: %s; summary not written" % (path, exc.strerror)
    if st is not None and not stat.S_ISREG(st.st_mode):
        return "GITHUB_STEP_SUMMARY %s is not a regular file; summary not written" % path
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
        with os.fdopen(fd, "a", encoding="utf-8", newline="\n") as fh:
            fh.write(text if text.endswith("\n") else text + "\n")
    except OSError as exc:
        return "GITHUB_STEP_SUMMARY %s: cannot append: %s; summary not written" % (path, exc.strerror)
    return None


def write_reports(args, report: dict, scorer: Scorer, trec: bool, stages: ItemStages) -> None:
    """--html, --junit [--junit-items], --csv, --metrics-csv and $GITHUB_STEP_SUMMARY."""
    if args.html:
        items_html, hidden = _html_items(args, scorer, trec, stages)
        atomic_write(args.html, render_html(report, items_html, hidden))
    if args.junit:
        items = [_item_record(scorer, i, trec) for i in range(len(scorer.gold))] if args.junit_items else None
        atomic_write(args.junit, render_junit(report, items))
    if args.csv:
        atomic_write(args.csv, render_items_csv(scorer, trec, stages))
    if args.metrics_csv:
        atomic_write(args.metrics_csv, render_metrics_csv(report))
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        problem = append_step_summary(summary, render_markdown(report, _worst(scorer, trec)))
        if problem:
            sys.stderr.write("score_eval: warning: %s\n" % problem)


# --------------------------------------------------------------------------- judge calibration

CALIBRATE_USAGE = ("score_eval.py calibrate --human H.jsonl --auto A.jsonl [--field NAME] [--bins 0.5] "
                   "[--min-kappa 0.8] [--bootstrap 1000] [--seed 0] [--out FILE]")


def pearson(x: List[float], y: List[float]) -> Optional[float]:
    """Pearson's r; None when either side has no variance (or n < 2)."""
    n = len(x)
    if n < 2:
        return None
    mx, my = math.fsum(x) / n, math.fsum(y) / n
    sxy = math.fsum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = math.fsum((a - mx) ** 2 for a in x)
    syy = math.fsum((b - my) ** 2 for b in y)
    if sxx <= 0 or syy <= 0:
        return None
    return max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))


def midranks(x: List[float]) -> List[float]:
    """Ranks 1..n, tied values sharing the mean of their ranks (as scipy's rankdata 'average')."""
    order = sorted(range(len(x)), key=x.__getitem__)
    ranks = [0.0] * len(x)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and x[order[j + 1]] == x[order[i]]:
            j += 1
        for t in range(i, j + 1):
            ranks[order[t]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman(x: List[float], y: List[float]) -> Optional[float]:
    """Spearman's rho: Pearson's r of the mid-ranks."""
    return pearson(midranks(x), midranks(y))


def cohen_kappa(a: list, b: list) -> Optional[float]:
    """Cohen's kappa (po - pe) / (1 - pe) on labels; None when pe = 1 (one shared category)."""
    n = len(a)
    if n == 0:
        return None
    po = sum(1 for u, v in zip(a, b) if u == v) / n
    ca, cb = Counter(a), Counter(b)
    pe = math.fsum(ca[k] * cb[k] for k in ca) / (n * n)
    if pe >= 1.0:
        return None
    return (po - pe) / (1 - pe)


def mean_abs_error(x: List[float], y: List[float]) -> Optional[float]:
    return math.fsum(abs(a - b) for a, b in zip(x, y)) / len(x) if x else None


def bin_score(v: float, width: float) -> float:
    """The nearest multiple of ``width`` (halves round up): width 0.5 maps 0.74 -> 0.5, 0.75 -> 1.0."""
    return round(math.floor(v / width + 0.5 + 1e-9) * width, 10)


def _percentile(sorted_vals: List[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default 'linear' method)."""
    pos = (len(sorted_vals) - 1) * q
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def calibration_stats(human: List[float], auto: List[float], width: float, resamples: int, seed: int) -> dict:
    """Pearson, Spearman, Cohen's kappa on binned scores and MAE, each with a percentile
    bootstrap 95% interval from ``resamples`` resamples of the pairs drawn by
    ``random.Random(seed)`` (the same draws for every statistic; resamples on which a
    statistic is undefined are skipped and counted)."""
    hb = [bin_score(v, width) for v in human]
    ab = [bin_score(v, width) for v in auto]
    stats = {"pearson": lambda ix: pearson([human[i] for i in ix], [auto[i] for i in ix]),
             "spearman": lambda ix: spearman([human[i] for i in ix], [auto[i] for i in ix]),
             "kappa": lambda ix: cohen_kappa([hb[i] for i in ix], [ab[i] for i in ix]),
             "mae": lambda ix: mean_abs_error([human[i] for i in ix], [auto[i] for i in ix])}
    n = len(human)
    whole = list(range(n))
    draws: Dict[str, List[float]] = {k: [] for k in stats}
    rng = random.Random(seed)
    for _ in range(resamples if n else 0):
        ix = [rng.randrange(n) for _ in whole]
        for k, fn in stats.items():
            v = fn(ix)
            if v is not None:
                draws[k].append(v)
    out = {}
    for k, fn in stats.items():
        v = fn(whole)
        vals = sorted(draws[k])
        ci = [round(_percentile(vals, 0.025), 4), round(_percentile(vals, 0.975), 4)] if vals else None
        reason = None
        if v is None:
            reason = ("undefined: both raters put every item in one bin" if k == "kappa"
                      else "undefined: a rater gives every item the same score" if n > 1 else "undefined: fewer than 2 items")
        out[k] = {"value": _r(v), "ci": ci, "undefined_resamples": resamples - len(vals) if n else 0, "reason": reason}
    labels = sorted(set(hb) | set(ab))
    out["confusion"] = {"labels": labels, "rows_human_cols_auto": [
        [sum(1 for u, w in zip(hb, ab) if u == a and w == b) for b in labels] for a in labels]}
    return out


def _field_value(row: dict, field: str):
    """``field`` may be dotted (``scorecard.stages.faithfulness``) to reach a nested value."""
    cur = row
    for part in field.split("."):
        if type(cur) is not dict or part not in cur:
            return None
        cur = cur[part]
    return cur


def read_scores(path: str, field: str, key: str, errors: _Errors) -> Tuple[Dict[str, float], int]:
    """{id: score} from a JSONL; true/false count as 1/0; a null or absent score is skipped."""
    out: Dict[str, float] = {}
    lines: Dict[str, int] = {}
    skipped = 0
    for lineno, row in _jsonl(path, errors, []):
        qid = row.get(key)
        if type(qid) is not str or not qid:
            errors.add("%s:%d: %s must be a non-empty string, got %s" % (path, lineno, json.dumps(key), _show(qid)))
            continue
        if qid in lines:
            errors.add("%s:%d: duplicate %s (first on line %d), got %s" % (path, lineno, key, lines[qid], _show(qid)))
            continue
        lines[qid] = lineno
        v = _field_value(row, field)
        if v is None:
            skipped += 1
        elif isinstance(v, bool):
            out[qid] = 1.0 if v else 0.0
        elif _num(v):
            out[qid] = float(v)
        else:
            errors.add("%s:%d: %s must be a number, true/false or null, got %s" % (path, lineno, json.dumps(field), _show(v)))
    return out, skipped


def calibrate(argv: List[str]) -> int:
    """``score_eval.py calibrate``: agreement of an automatic scorer with human labels."""
    ap = argparse.ArgumentParser(prog="score_eval.py calibrate", description=calibrate.__doc__.split(": ", 1)[1])
    ap.add_argument("--human", required=True, help="JSONL of human labels: {qid, <field>: score}")
    ap.add_argument("--auto", required=True, help="JSONL of automatic scores (any scorer; e.g. --items output)")
    ap.add_argument("--field", default="score", help="score field in both files, dotted for nested (default score)")
    ap.add_argument("--human-field", help="score field of --human (default --field)")
    ap.add_argument("--auto-field", help="score field of --auto (default --field), e.g. scorecard.stages.faithfulness")
    ap.add_argument("--key", default="qid", help="field pairing the rows of both files (default qid)")
    ap.add_argument("--bins", type=float, default=0.5, help="bin width for Cohen's kappa: each score goes to the "
                                                            "nearest multiple (default 0.5: bins 0, 0.5, 1)")
    ap.add_argument("--min-kappa", type=float, default=0.8, help="kappa a judge needs to be gateable (default 0.8, seed 004)")
    ap.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for the 95%% intervals (default 1000)")
    ap.add_argument("--seed", type=int, default=0, help="seed of random.Random for the bootstrap (default 0)")
    ap.add_argument("--out", help="also write the JSON result to this file (atomically)")
    try:
        args = ap.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    if not (math.isfinite(args.bins) and args.bins > 0):
        raise ScoreError("calibrate: --bins must be a positive bin width, got %r" % args.bins)
    if not 0 <= args.bootstrap <= 100000:
        raise ScoreError("calibrate: --bootstrap must be between 0 and 100000, got %r" % args.bootstrap)
    errors = _Errors(MAX_ERRORS)
    hf, af = args.human_field or args.field, args.auto_field or args.field
    human, hskip = read_scores(args.human, hf, args.key, errors)
    auto, askip = read_scores(args.auto, af, args.key, errors)
    if errors.count:
        raise ScoreError(errors.text())
    ids = [q for q in human if q in auto]
    if not ids:
        raise ScoreError("calibrate: no %s has a score in both files (fields %r and %r), got %d human and %d automatic "
                         "scores" % (args.key, hf, af, len(human), len(auto)))
    hv, av = [human[q] for q in ids], [auto[q] for q in ids]
    stats = calibration_stats(hv, av, args.bins, args.bootstrap, args.seed)
    kappa = stats["kappa"]["value"]
    result = {"n": len(ids), "human": args.human, "auto": args.auto, "field": {"human": hf, "auto": af},
              "unpaired": {"human_only": sum(1 for q in human if q not in auto),
                           "auto_only": sum(1 for q in auto if q not in human),
                           "human_no_score": hskip, "auto_no_score": askip},
              "bins": {"width": args.bins, "rule": "each score goes to the nearest multiple of the width (halves up)",
                       "labels": stats["confusion"]["labels"]},
              "pearson": stats["pearson"], "spearman": stats["spearman"], "kappa": stats["kappa"], "mae": stats["mae"],
              "confusion": stats["confusion"]["rows_human_cols_auto"],
              "bootstrap": {"resamples": args.bootstrap, "seed": args.seed, "interval": "percentile 2.5 and 97.5"},
              "min_kappa": args.min_kappa, "gateable": kappa is not None and kappa >= args.min_kappa}
    text = json.dumps(result, indent=2, ensure_ascii=False) + "\n"
    if args.out:
        atomic_write(args.out, text)
    sys.stdout.write(text)
    if not result["gateable"]:
        sys.stderr.write("score_eval: calibrate: kappa = %s, needs >= %s: the scorer is not calibrated well enough "
                         "to gate on\n" % (_cell(kappa), _fmt_num(args.min_kappa)))
    return 0 if result["gateable"] else 1


def merge_html_main(argv: List[str]) -> int:
    """``score_eval.py merge-html OUT IN.html...``: one page from several --html reports."""
    ap = argparse.ArgumentParser(prog="score_eval.py merge-html", description=merge_html_main.__doc__.split(": ", 1)[1])
    ap.add_argument("out", help="the page to write (atomically)")
    ap.add_argument("inputs", nargs="+", help="--html reports, one dataset section each, in page order")
    try:
        args = ap.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    texts = []
    for path in args.inputs:
        try:
            with open(path, "rb") as fh:
                texts.append((path, fh.read().decode("utf-8")))
        except OSError as exc:
            raise ScoreError("%s: cannot read: %s" % (path, exc.strerror)) from None
        except UnicodeDecodeError as exc:
            raise ScoreError("%s: not UTF-8, got byte 0x%02x" % (path, exc.object[exc.start])) from None
    atomic_write(args.out, merge_html(texts))
    return 0


SUBCOMMANDS = {"calibrate": calibrate, "merge-html": merge_html_main}


# --------------------------------------------------------------------------- main


def _parse_ks(text: str) -> List[int]:
    ks = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit() or len(part) > 6 or not 1 <= int(part) <= MAX_K:
            raise ScoreError("--k: cutoffs must be integers from 1 to %d separated by commas, got %r"
                             % (MAX_K, text))
        if int(part) not in ks:
            ks.append(int(part))
    return ks


def _trec_names(args, trec: bool) -> List[str]:
    """The trec_eval measures to compute (IR mode); the IR-only flags are refused otherwise."""
    if not trec:
        if args.m or args.measures or args.format == "trec" or args.per_query:
            raise ScoreError("usage: -m, --measures, --format trec and -q need --qrels and --run")
        return []
    specs = _measure_specs(args.m, args.measures)
    return parse_trec_measures(specs or list(TREC_DEFAULT))


def _note(args, text: str) -> None:
    """A note on stderr (which default file or gates apply), unless --quiet."""
    if not args.quiet:
        sys.stderr.write("score_eval: %s\n" % text)


def _has_table(path: str, name: str) -> bool:
    """Whether the TOML file has a ``[name]`` table (True when unreadable: the reader reports it)."""
    try:
        with open(path, "rb") as fh:
            text = fh.read().decode("utf-8")
        doc, _ = _parse_toml_lines(text, path)
    except (OSError, UnicodeDecodeError, ScoreError):
        return True
    return isinstance(doc.get(name), dict)


def _check_gate_modes(gates, trec: bool, trec_names: List[str]) -> None:
    """IR mode gates retrieval measures only; trec_eval names need IR mode.  Adds the trec
    measures that gates name to ``trec_names``."""
    errors = []
    for g in gates:
        is_trec = g.ref.metric not in REGISTRY
        if trec and (g.ref.metric.name in SEED_ONLY or g.ref.metric.name == "recall@K"):
            errors.append("gate %r needs answers (--gold/--trace); --qrels/--run measure retrieval only: "
                          "put IR gates in an [ir] table or --gates, got %r" % (g.ref.spelled, g.ref.spelled))
        elif not trec and is_trec:
            errors.append("gate %r is a trec_eval measure, computed only with --qrels/--run, got %r"
                          % (g.ref.spelled, g.ref.spelled))
        elif is_trec and g.ref.metric.name not in trec_names:
            trec_names.append(g.ref.metric.name)
    if errors:
        raise ScoreError("\n".join(errors))


def _asked_needs(args, gates, regression, gates_file: Optional[str]) -> set:
    """The NEEDS this run must compute: those of the metrics named by gates, [regression],
    configured [weights] stages (the gates file's table or --weights; seed 004's defaults alone
    do not ask), --compute; all of them with a per-item output, --baseline or --partial."""
    if (args.items or args.html or args.csv or args.junit_items or args.baseline
            or getattr(args, "partial", None) or getattr(args, "merge", None)):
        return set(NEEDS)
    refs = [g.ref for g in gates]
    if regression:
        refs += [r for r, _ in regression.max_drop] + list(regression.slice_metrics)
    needs = needs_for(refs)
    if args.weights is not None or (gates_file is not None and _has_table(gates_file, "weights")):
        weights, _ = resolve_weights(gates_file, args.weights, gates)
        needs |= needs_for(_BY_NAME[s.metric] for s in STAGES if weights[s.name] > 0 and s.metric in _BY_NAME)
    for name in (args.compute.split(",") if args.compute else []):
        name = name.strip()
        if name == "all":
            needs |= set(NEEDS)
        else:
            needs |= needs_for([parse_metric(name)])
    return needs


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="score_eval.py", description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_metric_help() + "\n\n" + trec_help())
    ap.add_argument("--gold", help="gold JSONL (qid, answerable, gold_claim_substr, gold_citations, ...)")
    ap.add_argument("--trace", help="trace JSONL (qid, retrieved_ids, answer_json {claim, citations}, ...); streamed")
    ap.add_argument("--qrels", help="TREC qrels file (topic iter docno rel), instead of --gold")
    ap.add_argument("--run", help="TREC run file (topic Q0 docno rank score tag), instead of --trace")
    ap.add_argument("--k", default="5", help="rank cutoffs, comma-separated (default 5); the first is the seed's k")
    ap.add_argument("--gates", help="seed-style gates 'precision=0.80,chr=0.75,under=0.05,over=0.10' "
                                    "(also name>=v / name<=v); replaces the dataset's file gates; "
                                    "'none': no gates (exit 0 unless the input is bad)")
    ap.add_argument("--gates-file", help="TOML gates file (default ./gates.toml; without it and without "
                                         "--gates, seed 002's default gates apply)")
    ap.add_argument("--dataset", help="section of the gates file to check (default baseline; ir with --qrels/--run, "
                                      "where a file without [ir] means no gates)")
    ap.add_argument("--refusal", help="refusal token (default from [scorer] refusal, else 'not in context'); "
                                      "compared after strip + lower-case")
    ap.add_argument("--chunks", help="JSONL of {id, text} chunks (BEIR {_id, text} too) for the hallucination check")
    ap.add_argument("--by", default="category", help="gold field for the per-category breakdown (default category)")
    ap.add_argument("--baseline", help="an earlier report (JSON from --out/stdout) to compare against")
    ap.add_argument("--out", help="also write the JSON report to this file (atomically)")
    ap.add_argument("--markdown", help="write a human report (gates, metrics, categories, failure modes, worst items)")
    ap.add_argument("--items", help="write one JSON line per gold item with its verdicts")
    ap.add_argument("--compute", metavar="NAMES", help="also compute these optional metrics (comma-separated, or "
                    "'all'): those not every run needs, e.g. answer_relevance, context_relevance (computed anyway "
                    "when a gate, [regression], a [weights] stage or a per-item output names them)")
    ap.add_argument("--weights", help="JSON object of stage weights for the scorecard, e.g. '{\"faithfulness\": 0.4}' "
                                      "(over the gates file's [weights], over seed 004's defaults)")
    ap.add_argument("--html", help="write a self-contained HTML report (no JavaScript, no network)")
    ap.add_argument("--junit", help="write JUnit XML: one testsuite for the dataset, one testcase per gate")
    ap.add_argument("--junit-items", action="store_true", help="with --junit: add a testsuite with one testcase per item")
    ap.add_argument("--csv", help="write one CSV row per item (verdicts, failure mode, stage scores)")
    ap.add_argument("--metrics-csv", help="write one CSV row per metric (value, count, n, 95%% CI)")
    ap.add_argument("--max-errors", type=int, default=MAX_ERRORS, help="bad lines listed before the rest are only "
                                                                       "counted (default %d)" % MAX_ERRORS)
    ap.add_argument("-m", action="append", metavar="MEASURE",
                    help="with --qrels/--run: a trec_eval measure to compute, trec_eval's spelling "
                         "(map, Rprec, bpref, recip_rank, P.5,10, recall.10, ndcg_cut.10, success.1, num_ret, "
                         "num_rel, num_rel_ret; P alone = its default cutoffs); repeatable")
    ap.add_argument("--measures", metavar="M1,M2",
                    help="the same as several -m, comma-separated: map,ndcg_cut.10,P.5")
    ap.add_argument("--format", choices=("json", "trec"), default="json",
                    help="stdout: json (the report, default) or trec (trec_eval's measure<TAB>qid|all<TAB>value "
                         "lines; --qrels/--run only)")
    ap.add_argument("-q", dest="per_query", action="store_true",
                    help="with --format trec: one line per topic and measure before the 'all' lines (trec_eval -q)")
    ap.add_argument("--quiet", action="store_true",
                    help="no progress lines and no notes on stderr (past 100,000 trace rows the scorer "
                         "reports progress; errors and gate failures are still printed)")
    ap.add_argument("--version", action="version", version="score_eval.py " + __version__,
                    help="print the version and exit")
    ap.add_argument("--manifest", metavar="FILE", help="after --out/--items/--markdown, write FILE naming each "
                                                        "with its sha256 (removed first: no manifest = torn set)")
    ap.add_argument("--max-line-bytes", type=int, default=MAX_LINE_BYTES, metavar="N",
                    help="longest input line accepted, in bytes (default %d = 16 MiB)" % MAX_LINE_BYTES)
    ap.add_argument("--debug", action="store_true",
                    help="on an internal error (exit 3), print the traceback instead of saving it to a file")
    ap.add_argument("--partial", metavar="OUT.json",
                    help="shard run: write this shard's verdicts to OUT.json ('-': stdout) for "
                         "'score_eval.py merge P1.json P2.json ...' instead of a report")
    ap.add_argument("--print-metric-table", action="store_true",
                    help="print the README metric table (Markdown, from the registry) and exit")
    return ap


def run(args) -> int:
    if args.print_metric_table:
        sys.stdout.write(metric_table_markdown())
        return 0
    trec = bool(args.qrels or args.run)
    if trec and (args.gold or args.trace):
        raise ScoreError("usage: give --gold/--trace or --qrels/--run, not both")
    if trec and not (args.qrels and args.run):
        raise ScoreError("usage: --qrels and --run go together")
    if not trec and not args.trace:
        raise ScoreError("usage: --trace is required (with --gold, or alone for the reference-free metrics), "
                         "or --qrels and --run")
    ks = _parse_ks(args.k)
    trec_names = _trec_names(args, trec)
    dataset_given = args.dataset is not None
    if not dataset_given:
        args.dataset = "ir" if trec else "baseline"
    no_gates = args.gates is not None and args.gates.strip().lower() == "none"
    if args.junit_items and not args.junit:
        raise ScoreError("usage: --junit-items needs --junit FILE")
    stdin_inputs = [o for o in ("gold", "trace", "qrels", "run", "chunks", "baseline", "gates_file")
                    if getattr(args, o) == "-"]
    if len(stdin_inputs) > 1:
        raise ScoreError("usage: only one input can be - (stdin), got %s"
                         % ", ".join("--" + o.replace("_", "-") for o in stdin_inputs))
    if not 1 <= args.max_line_bytes <= 1 << 40:
        raise ScoreError("--max-line-bytes: must be from 1 to 2**40, got %d" % args.max_line_bytes)
    _LIMITS["line_bytes"] = args.max_line_bytes
    # 1. gates and the refusal token
    refusal, file_gates, regression, gates_source = REFUSAL, [], None, None
    gates_file = args.gates_file
    if gates_file is None and not no_gates and os.path.exists(DEFAULT_GATES_FILE):
        gates_file = DEFAULT_GATES_FILE
        _note(args, "using the gates file %s found in the current folder "
                    "(--gates-file FILE to choose another, --gates none for no gates)" % gates_file)
    if gates_file is not None:
        section = args.dataset if args.gates is None else None
        if trec and not dataset_given and section and not _has_table(gates_file, section):
            _note(args, "%s has no [%s] table: no gates apply to this IR run" % (gates_file, section))
            section = None
        refusal, file_gates, regression = load_gates_file(gates_file, section)
        gates_source = gates_file
    rules = load_rules(gates_file) if gates_file is not None else Rules()
    if no_gates:
        gates, shown, gates_source = [], {}, "none"
    elif args.gates is not None:
        gates, shown = parse_gates_string(args.gates)
        gates_source = "--gates"
    elif gates_file is not None:
        gates, shown = file_gates, {g.ref.spelled: g.shown for g in file_gates}
    elif trec:      # IR mode: only IR gates apply ([ir] or --gates); none means exit 0
        gates, shown = [], {}
    else:
        gates, shown = parse_gates_string(DEFAULT_GATES)
        gates_source = "seed default"
        _note(args, "no gates file: seed 002's default gates apply (%s)" % DEFAULT_GATES)
    _check_gate_modes(gates, trec, trec_names)
    weights, weight_warnings = resolve_weights(gates_file, args.weights, gates)
    if args.refusal is not None:
        if not args.refusal.strip():
            raise ScoreError("--refusal: must be a non-empty string, got %r" % args.refusal)
        refusal = args.refusal
    # cutoffs named by gates are computed too
    for ref in [g.ref for g in gates] + ([r for r, _ in regression.max_drop] + list(regression.slice_metrics)
                                         if regression else []):
        if ref.k is not None and ref.k not in ks:
            ks.append(ref.k)
    ks = ks[:1] + sorted(ks[1:])
    needs = _asked_needs(args, gates, regression, gates_file)
    # 2. read and judge
    errors = _Errors(max(1, args.max_errors))
    notes: List[str] = []
    chunks = None
    chunk_policies: Dict[str, str] = {}
    if args.chunks and not getattr(args, "merge", None):
        chunks = read_chunks(args.chunks, errors, notes, chunk_policies)
    if getattr(args, "merge", None):          # shards' partials (merge_partials)
        gold, scorer, stats = merge_partials(args.merge, args, ks, refusal, errors, notes, rules)
    elif trec:
        gold = read_qrels(args.qrels, errors)
        runs = read_run(args.run, errors) if not errors.count else {}
        if errors.count:
            raise ScoreError(errors.text())
        scorer = Scorer(gold, ks, refusal, chunks)
        stats = score_run(runs, scorer)
    else:
        gold = read_gold(args.gold, args.by, errors, notes) if args.gold else gold_from_trace(args.trace, args.by)
        if errors.count:
            raise ScoreError(errors.text())
        scorer = Scorer(gold, ks, refusal, chunks, rules, chunk_policies)
        scorer.needs = set(NEEDS) if gold.unlabelled else needs
        scorer.progress = not args.quiet
        stats = score_trace(args.trace, scorer, errors, notes)
        if errors.count:
            raise ScoreError(errors.text())
    if getattr(args, "partial", None):        # a shard run writes its verdicts, no report
        return write_partial(args, gold, scorer, stats, notes)
    baseline = load_baseline(args.baseline) if args.baseline else None
    # 3. aggregate
    n = len(gold)
    everything = range(n)
    metrics = aggregate(scorer, everything, trec)
    if trec:
        if getattr(args, "merge", None):      # trec_eval's measures read the rankings again
            runs = merged_runs(args.merge, errors)
        trec_per, trec_all = trec_evaluate(gold, runs, trec_names)
        metrics.update(trec_metric_entries(trec_per, trec_all))
    order = sorted(everything, key=gold.cat.__getitem__)
    categories: Dict[str, dict] = {}
    start = 0
    while start < n:
        cid = gold.cat[order[start]]
        end = start
        while end < n and gold.cat[order[end]] == cid:
            end += 1
        idx = order[start:end]
        categories[gold.categories[cid]] = {"items": len(idx), "metrics": aggregate(scorer, idx, trec)}
        start = end
    categories = {c: categories[c] for c in sorted(categories)}
    flags = scorer.flags
    by_flags = Counter(flags)      # verdicts depend on flags only: count each distinct value once
    modes: Counter = Counter()
    for f, cnt in by_flags.items():
        mode = failure_mode(f, trec)
        if mode is not None:
            modes[mode] += cnt
    failure_modes = {m: modes[m] for m in sorted(modes, key=lambda m: (-modes[m], MODE_ORDER.index(m)))}
    k0 = ks[0]
    gate_results = check_gates(gates, metrics, k0)
    fstr_cache: Dict[int, str] = {}
    item_flags = {}
    for qid, f in zip(gold.qids, flags):
        s = fstr_cache.get(f)
        if s is None:
            s = fstr_cache[f] = flag_string(f)
        item_flags[qid] = s
    regression_block = None
    if baseline is not None:
        cur = {q: f for q, f in zip(gold.qids, flags)}
        regression_block, reg_gates = compare(baseline, args.baseline, metrics, categories, cur, regression, k0)
        gate_results += reg_gates
    # 4. warnings
    warnings = list(notes) + weight_warnings
    if stats["unknown"]:
        warnings.append("%d trace rows name qids not in the gold set and were not scored (e.g. %s)"
                        % (stats["unknown"], ", ".join(stats["unknown_ex"])))
    if stats["duplicates"]:
        warnings.append("%d duplicate trace rows: the last row per qid was scored (e.g. %s)"
                        % (stats["duplicates"], ", ".join(stats["duplicate_ex"])))
    if stats["missing"]:
        warnings.append("%d gold items have no trace row; each counts as %s" % (
            stats["missing"], "an empty ranking" if trec else "a shipped answer with an empty claim"))
    skipped = sorted(name for name, e in metrics.items() if e["reason"] == _SKIPPED)
    if skipped:
        warnings.append("reference-free mode: %d metrics need gold labels and were skipped (%s)"
                        % (len(skipped), ", ".join(skipped)))
    for name, e in metrics.items():
        if e["reason"] and not trec and e["reason"] != _SKIPPED and name not in EXTRA_METRICS:
            warnings.append("%s: %s" % (name, e["reason"]))
    gate_results = order_by_tier(gate_results)
    all_pass = blocking_pass(gate_results)
    # 5. report
    m0 = metrics
    shipped_n = sum(c for f, c in by_flags.items() if f & F_SHIP)
    report: dict = {}
    if not trec:
        report.update({
            "answered": shipped_n,                       # |S|
            "refused": n - shipped_n,                    # |R|
            "answerable": m0["over_refusal"]["n"],       # |A|
            "unanswerable": m0["under_refusal"]["n"],    # |U|
            "precision": _r(m0["precision"]["value"]),
            "chr": _r(m0["chr"]["value"]),
            "under_refusal": _r(m0["under_refusal"]["value"]),
            "over_refusal": _r(m0["over_refusal"]["value"]),
            "recall@k": _r(m0["recall@%d" % k0]["value"]),
        })
    report.update({"k": k0, "gates": shown, "pass": all_pass, "schema": SCHEMA, "version": __version__,
                   "dataset": args.dataset,
                   "inputs": {"gold": args.gold, "trace": args.trace, "qrels": args.qrels, "run": args.run,
                              "chunks": args.chunks, "gates": gates_source, "refusal": refusal,
                              "k": ks, "by": args.by},
                   "counts": {"gold_items": n, "trace_rows": stats["rows"],
                              "matched_items": n - stats["missing"], "missing_traces": stats["missing"],
                              "unknown_trace_rows": stats["unknown"],
                              "duplicate_trace_rows": stats["duplicates"],
                              "items_with_gold_citations": sum(c for f, c in by_flags.items() if f & F_GOLD),
                              "items_without_gold_citations": sum(c for f, c in by_flags.items() if not f & F_GOLD)},
                   "metrics": {k: _rounded(v) for k, v in metrics.items()},
                   "gate_results": gate_results,
                   "categories": {c: {"items": b["items"], "metrics": {k: _rounded(v) for k, v in b["metrics"].items()}}
                                  for c, b in categories.items()},
                   "failure_modes": failure_modes,
                   "regression": regression_block,
                   "warnings": warnings})
    report["warnings_failed"] = sum(1 for g in gate_results if g["tier"] == "warn" and not g["pass"])
    report["scorecard"] = scorecard(weights, metrics, k0, scorecard_gaps(scorer))
    if not trec:
        report["reference_free"] = gold.unlabelled
        report["skipped_metrics"] = {name: _SKIPPED for name in skipped}
    text = render_json(report, item_flags)
    for w in warnings:
        sys.stderr.write("score_eval: warning: %s\n" % terminal_safe(w))
    for g in gate_results:
        if not g["pass"] and g["tier"] != "monitor":
            sys.stderr.write(terminal_safe("score_eval: %sgate failed: %s: %s%s\n" % (
                "warn " if g["tier"] == "warn" else "", g["gate"], g["reason"],
                (" " + g["message"]) if g.get("message") else "")))
    if args.manifest:
        remove_output(args.manifest)
    if args.out:
        atomic_write(args.out, text)
    stages = ItemStages(scorer, report["scorecard"], weights)
    if args.items:
        atomic_write(args.items, "".join(_item_lines(scorer, trec, stages)))
    if args.markdown:
        atomic_write(args.markdown, render_markdown(report, _worst(scorer, trec)))
    if args.format == "trec":
        text = render_trec(trec_per, trec_all, args.per_query, num_q=not (args.m or args.measures))
    write_reports(args, report, scorer, trec, stages)
    outputs = (args.out, args.items, args.markdown, args.html, args.junit, args.csv, args.metrics_csv)
    if args.manifest:
        write_manifest(args.manifest, [p for p in outputs if p and p != "-"])
    if "-" not in outputs:
        sys.stdout.write(text)
        sys.stdout.flush()
    return EXIT_PASS if all_pass else EXIT_GATE


def _item_record(scorer: Scorer, i: int, trec: bool) -> dict:
    gold, f = scorer.gold, scorer.flags[i]
    rec = {"qid": gold.qids[i], "category": gold.categories[gold.cat[i]], "line": gold.lines[i],
           "failure_mode": failure_mode(f, trec), "labels": all_modes(f, trec), "flags": flag_string(f),
           "trace": bool(f & F_TRACE)}
    if not trec:
        rec.update({"answerable": bool(f & F_ANS), "shipped": bool(f & F_SHIP), "containment": bool(f & F_CONT),
                    "citation_hit": bool(f & F_HIT), "pass": bool(f & F_PASS),
                    "citation_valid": bool(f & F_VALID) if f & F_SHIP else None,
                    "hallucination": bool(f & F_HALL) if f & F_SHIP and f & F_HMEAS else None,
                    "unsupported": scorer.unsupported.get(i, []) if f & F_HALL else [],
                    "recall@k": bool(f & F_REC)})
        rec.update(_extra_item(scorer, i, f))
    if f & F_GOLD:
        ret = {"RR": round(scorer.rr[i], 4)}
        for k in scorer.ks:
            ret["P@%d" % k] = round(measure_p(scorer.hits[k][i], k), 4)
            ret["R@%d" % k] = round(scorer.rec[k][i], 4)
            ret["nDCG@%d" % k] = round(scorer.ndcg[k][i], 4)
            ret["RR@%d" % k] = round(scorer.rrk[k][i], 4)
            ret["Success@%d" % k] = int(measure_success(scorer.hits[k][i]))
        rec["retrieval"] = ret
    else:
        rec["retrieval"] = None
    return rec


def _extra_item(scorer: Scorer, i: int, f: int) -> dict:
    """Issue 20's per-item fields of the --items file."""
    def num(arr):
        v = arr[i]
        return round(v, 4) if v == v else None
    return {"refused_by": None if f & F_SHIP else ("pattern" if f & F_PROSE else "token"),
            "evidence": scorer.evidence.get(i, []), "answer_relevance": num(scorer.answer_rel),
            "context_relevance": num(scorer.context_rel), "latency_ms": num(scorer.latency),
            "cost": num(scorer.cost)}


def _item_lines(scorer: Scorer, trec: bool, stages: Optional[ItemStages] = None):
    for i in range(len(scorer.gold)):
        rec = _item_record(scorer, i, trec)
        if stages is not None:
            rec["scorecard"] = stages(i)
        yield json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n"


def _worst(scorer: Scorer, trec: bool, limit: int = 20) -> List[dict]:
    """Failing items, most severe mode first (MODE_ORDER), then gold file order."""
    failing = []
    rank: Dict[int, int] = {}
    for i, f in enumerate(scorer.flags):
        r = rank.get(f)
        if r is None:
            mode = failure_mode(f, trec)
            r = rank[f] = -1 if mode is None else MODE_ORDER.index(mode)
        if r >= 0:
            failing.append((r, i))
    failing.sort()
    return [_item_record(scorer, i, trec) for _, i in failing[:limit]]


# --------------------------------------------------------------------------- shards: --partial and merge
#
# A shard run (``--partial OUT.json``) judges its slice of the trace rows and writes, instead
# of a report, the verdicts it made: for every gold item it saw, the item's slots of every
# per-item container of the Scorer (arrays, per-cutoff arrays, sparse maps), found
# generically so a metric added to the Scorer merges with no code here; the order in which
# its rows named items (to count duplicates across shards exactly); its row counts and
# notes.  ``merge P1 ... Pn`` reads the gold set again (its sha256 must match), takes each
# item's verdict from the last shard that saw it (last row wins, as in one run when the
# shards are consecutive pieces of the trace), judges the items no shard saw as missing,
# and then aggregates, gates, compares and prints through the very code of a single run:
# the output is byte-identical to one run over all the rows.  TREC runs shard by topic.

PARTIAL_FORMAT = "score_eval-partial"
PARTIAL_VERSION = 1
_PARTIAL_ARGS = ("gold", "trace", "qrels", "run", "k", "by", "refusal", "chunks", "dataset")


class _RecordingScorer(Scorer):
    """A Scorer that also records which items the rows named, in row order."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.calls = array("I")

    def judge(self, i, *rest):
        if rest[-1]:                               # present: a row named the item
            self.calls.append(i)
        super().judge(i, *rest)


def _per_item(scorer: Scorer):
    """``(name, key, container, kind)`` of every per-item container of a Scorer: ``kind``
    is "array" (one slot per item; ``key`` a cutoff or None) or "sparse" (a dict keyed by
    item position)."""
    n = len(scorer.gold)
    for name, v in sorted(vars(scorer).items()):
        if name == "calls" or name == "gold":
            continue
        if isinstance(v, (array, bytearray)) and len(v) == n:
            yield name, None, v, "array"
        elif isinstance(v, dict):
            vals = list(v.values())
            if vals and all(isinstance(x, (array, bytearray)) and len(x) == n for x in vals):
                for key in sorted(v):
                    yield name, key, v[key], "array"
            elif all(type(key) is int for key in v) and not any(isinstance(x, (array, bytearray)) for x in vals):
                yield name, None, v, "sparse"


def _pack(arr) -> dict:
    import base64
    if isinstance(arr, bytearray):
        return {"type": "bytes", "data": base64.b64encode(bytes(arr)).decode("ascii")}
    if sys.byteorder != "little":                  # pragma: no cover - big-endian hosts
        arr = array(arr.typecode, arr)
        arr.byteswap()
    return {"type": arr.typecode, "data": base64.b64encode(arr.tobytes()).decode("ascii")}


def _unpack(d: dict, path: str):
    import base64
    try:
        raw = base64.b64decode(d["data"].encode("ascii"), validate=True)
        if d["type"] == "bytes":
            return bytearray(raw)
        out = array(d["type"])
        out.frombytes(raw)
    except (KeyError, TypeError, ValueError, AttributeError):   # binascii.Error is a ValueError
        raise ScoreError("%s: malformed packed array in a partial, got %s" % (path, _show(d, 60))) from None
    if sys.byteorder != "little":                  # pragma: no cover - big-endian hosts
        out.byteswap()
    return out


def _sha256_file(path: str) -> str:
    import hashlib
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except OSError as exc:
        raise ScoreError("%s: cannot read: %s" % (path, exc.strerror)) from None
    return h.hexdigest()


def write_partial(args, gold: "Gold", scorer: Scorer, stats: dict, notes: List[str]) -> int:
    """The ``--partial`` output of a shard run (see the section comment); exit status 0."""
    calls = getattr(scorer, "calls", None)
    if calls is None:                              # pragma: no cover - run() always records
        raise ScoreError("--partial: internal error, the shard's rows were not recorded")
    seen = sorted(set(calls))
    idx = array("I", seen)
    fields = []
    for name, key, cont, kind in _per_item(scorer):
        if kind == "array":
            sub = bytearray(cont[i] for i in seen) if isinstance(cont, bytearray) \
                else array(cont.typecode, [cont[i] for i in seen])
            fields.append({"name": name, "key": key, "kind": kind, "values": _pack(sub)})
        else:
            fields.append({"name": name, "key": None, "kind": kind,
                           "values": [[i, cont[i]] for i in seen if i in cont]})
    source = args.gold or args.qrels
    doc = {"format": PARTIAL_FORMAT, "version": PARTIAL_VERSION, "schema": SCHEMA,
           "args": {a: getattr(args, a) for a in _PARTIAL_ARGS},
           "gold_sha256": _sha256_file(source), "gold_items": len(gold), "ks": scorer.ks,
           "stats": stats, "notes": notes, "items": _pack(idx), "calls": _pack(calls), "fields": fields}
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n"
    if args.partial == "-":
        sys.stdout.write(text)
    else:
        atomic_write(args.partial, text)
    return 0


def _read_partial(path: str) -> dict:
    try:
        with open(path, "rb") as fh:
            doc = json.loads(fh.read().decode("utf-8"))
    except OSError as exc:
        raise ScoreError("%s: cannot read: %s" % (path, exc.strerror)) from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise ScoreError("%s:1: not a partial (invalid JSON: %s)" % (path, str(exc).split(":")[0])) from None
    if type(doc) is not dict or doc.get("format") != PARTIAL_FORMAT:
        raise ScoreError("%s:1: not a score_eval partial, got format %s"
                         % (path, _show(doc.get("format") if type(doc) is dict else doc)))
    if doc.get("version") != PARTIAL_VERSION or doc.get("schema") != SCHEMA:
        raise ScoreError("%s:1: partial version must be %d (%s), got %s"
                         % (path, PARTIAL_VERSION, SCHEMA, _show([doc.get("version"), doc.get("schema")])))
    for key in ("args", "gold_sha256", "gold_items", "ks", "stats", "notes", "items", "calls", "fields"):
        if key not in doc:
            raise ScoreError("%s:1: partial has no %r" % (path, key))
    return doc


def merged_runs(paths: List[str], errors: "_Errors") -> dict:
    """The rankings of TREC shards (split by topic), read again from the run files their
    partials name, for trec_eval's measures (which the partials do not carry)."""
    runs: dict = {}
    for p in paths:
        run_path = _read_partial(p)["args"].get("run")
        if not isinstance(run_path, str) or not run_path:
            raise ScoreError("%s: the partial names no run file" % p)
        runs.update(read_run(run_path, errors))
    if errors.count:
        raise ScoreError(errors.text())
    return runs


def merge_partials(paths: List[str], args, ks: List[int], refusal: str, errors: "_Errors",
                   notes: List[str], rules: Optional["Rules"] = None):
    """``(gold, scorer, stats)`` of the union of the shards' rows (see the section comment)."""
    docs = [_read_partial(p) for p in paths]
    trec = bool(args.qrels)
    source = args.gold or args.qrels
    first = docs[0]
    for p, d in zip(paths, docs):
        same = {a: d["args"].get(a) for a in _PARTIAL_ARGS if a not in ("trace", "run")}
        want = {a: first["args"].get(a) for a in same}
        if same != want or d["gold_sha256"] != first["gold_sha256"]:
            diff = sorted(a for a in same if same[a] != want[a]) or ["gold file content"]
            raise ScoreError("%s: shard differs from %s in %s; every shard must score the same gold "
                             "set with the same options" % (p, paths[0], ", ".join(diff)))
    if _sha256_file(source) != first["gold_sha256"]:
        raise ScoreError("%s: the gold file changed since the partials were written (sha256 differs)" % source)
    gold = read_qrels(source, errors) if trec else read_gold(source, args.by, errors, [])
    if errors.count:
        raise ScoreError(errors.text())
    if first["ks"] != ks:
        raise ScoreError("merge: the shards computed cutoffs %s, the gates need %s; run the shards with "
                         "--k %s" % (first["ks"], ks, ",".join(map(str, ks))))
    scorer = Scorer(gold, ks, refusal, None, rules)
    slots = {(name, key): (cont, kind) for name, key, cont, kind in _per_item(scorer)}
    n = len(gold)
    seen = bytearray(n)
    rows = unknown = dup = 0
    unknown_ex: List[str] = []
    unknown_topics: set = set()
    dup_ex: List[str] = []
    # Notes made before the trace (chunks, gold) are the same in every shard: kept once.
    prefix = docs[0]["notes"]
    for d in docs[1:]:
        common = 0
        while common < min(len(prefix), len(d["notes"])) and prefix[common] == d["notes"][common]:
            common += 1
        prefix = prefix[:common]
    notes.extend(prefix)
    for d in docs:
        notes.extend(d["notes"][len(prefix):])
    for p, d in zip(paths, docs):
        s = d["stats"]
        rows += s["rows"]
        unknown += s["unknown"]
        if trec:
            unknown_topics.update(s["unknown_ex"])
        else:
            unknown_ex.extend(s["unknown_ex"])
        for i in _unpack(d["calls"], p):          # replay the rows' order: duplicates as one run
            if i >= n:
                raise ScoreError("%s: item position %d out of range (%d gold items)" % (p, i, n))
            if seen[i]:
                dup += 1
                if len(dup_ex) < 5:
                    dup_ex.append(gold.qids[i])
            seen[i] = 1
        items = _unpack(d["items"], p)
        for f in d["fields"]:
            key = (f["name"], f["key"])
            if key not in slots:
                raise ScoreError("%s: the partial holds %s%s, which this scorer does not have (another "
                                 "version wrote it?)" % (p, f["name"], "" if f["key"] is None else "[%s]" % f["key"]))
            cont, kind = slots[key]
            if kind == "array":
                values = _unpack(f["values"], p)
                if len(values) != len(items):
                    raise ScoreError("%s: %s holds %d values for %d items" % (p, f["name"], len(values), len(items)))
                for i, v in zip(items, values):
                    cont[i] = v
            else:
                for i in items:
                    cont.pop(i, None)
                for i, v in f["values"]:
                    cont[i] = v
    missing = 0
    i = seen.find(0)
    while i >= 0:
        missing += 1
        scorer.judge(i, None, None, None if not trec else [], None, None, None, None, False)
        i = seen.find(0, i + 1)
    if trec:
        unknown_ex = sorted(unknown_topics)
    stats = {"rows": rows, "unknown": unknown, "unknown_ex": unknown_ex[:5],
             "duplicates": dup, "duplicate_ex": dup_ex, "missing": missing}
    return gold, scorer, stats


def merge_main(argv: List[str]) -> int:
    """``score_eval.py merge P1.json P2.json ... [options]``: one report from shard partials."""
    ap = argparse.ArgumentParser(
        prog="score_eval.py merge",
        description="Combine the --partial outputs of shard runs (in trace order) into the report one "
                    "run over all their rows prints, gates and --baseline comparison included.")
    ap.add_argument("partials", nargs="+", help="partial JSON files written by --partial, in trace order")
    ap.add_argument("--trace", help="trace name shown in the report's inputs (default: the shards' names, "
                                    "comma-separated)")
    for flag in ("--gates", "--gates-file", "--baseline", "--out", "--markdown", "--items"):
        ap.add_argument(flag, help="as for a single run")
    ap.add_argument("--dataset", help="as for a single run (default: the shards')")
    ap.add_argument("--max-errors", type=int, default=MAX_ERRORS, help="as for a single run")
    try:
        margs = ap.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    try:
        first = _read_partial(margs.partials[0])
        args = build_parser().parse_args([])
        for a in _PARTIAL_ARGS:
            setattr(args, a, first["args"].get(a))
        trec = bool(args.qrels)
        names = margs.trace or ",".join(_read_partial(p)["args"].get("run" if trec else "trace") or ""
                                        for p in margs.partials)
        if trec:
            args.run = names
        else:
            args.trace = names
        for a in ("gates", "gates_file", "baseline", "out", "markdown", "items", "max_errors"):
            setattr(args, a, getattr(margs, a))
        if margs.dataset is not None:
            args.dataset = margs.dataset
        args.merge = margs.partials
        return run(args)
    except ScoreError as exc:
        sys.stderr.write("%s\n" % exc)
        return 2
    except BrokenPipeError:
        return 1


def partial_main(args) -> int:
    """A shard run: ``run`` with a Scorer that records the rows' items (see --partial)."""
    global Scorer
    plain = Scorer
    Scorer = _RecordingScorer
    try:
        return run(args)
    finally:
        Scorer = plain


def main(argv: Optional[List[str]] = None) -> int:
    """The command line; returns the exit status (0 pass, 1 a gate failed, 2 usage or input
    error, 3 internal error) and never raises."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        return _main(argv)
    except KeyboardInterrupt:
        sys.stderr.write("score_eval: interrupted\n")
        return 130
    except Exception:   # a bug, never a verdict: exit 3, the traceback saved or (--debug) shown
        return internal_error("score_eval", "--debug" in argv)


def _main(argv: List[str]) -> int:
    bad = [a for a in argv if _has_surrogate(a)]
    if bad:
        sys.stderr.write("score_eval: usage: argument is not valid UTF-8, got %s\n" % ascii(bad[0]))
        return EXIT_INPUT
    if argv and argv[0] in SUBCOMMANDS:
        try:
            return SUBCOMMANDS[argv[0]](argv[1:])
        except ScoreError as exc:
            sys.stderr.write(terminal_safe("%s\n" % exc))
            return EXIT_INPUT
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["merge"]:
        return merge_main(argv[1:])
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:   # argparse already printed usage / help
        return exc.code if isinstance(exc.code, int) else EXIT_INPUT
    try:
        return partial_main(args) if args.partial else run(args)
    except ScoreError as exc:
        sys.stderr.write(terminal_safe("%s\n" % exc))
        return EXIT_INPUT
    except BrokenPipeError:   # e.g. `| head`: the report was not delivered
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        sys.stderr.write("score_eval: stdout closed before the report was written\n")
        return EXIT_INPUT


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """Control characters (ESC and the rest of C0/C1, DEL; not tab or newline) shown as
    ``\\xNN`` so input text cannot move the cursor or recolor a terminal; lone surrogates too."""
    text = _CONTROL.sub(lambda m: "\\x%02x" % ord(m.group()), text)
    return text.encode("utf-8", "backslashreplace").decode("utf-8") if _has_surrogate(text) else text


def internal_error(prog: str, debug: bool) -> int:
    """Report the exception being handled as an internal error: one stderr line naming it
    and where its traceback was saved (a file in the system temp folder), or the traceback
    itself when ``debug``.  Returns EXIT_INTERNAL."""
    etype, exc, tb = sys.exc_info()
    where = ""
    frames = traceback.extract_tb(tb) if tb is not None else []
    if frames:
        where = " at %s:%d" % (os.path.basename(frames[-1].filename), frames[-1].lineno)
    name = etype.__name__ if etype is not None else "error"
    text = "".join(traceback.format_exception(etype, exc, tb))
    if debug:
        sys.stderr.write(text)
        sys.stderr.write("%s: internal error (exit 3): %s%s\n" % (prog, name, where))
        return EXIT_INTERNAL
    try:
        fd, saved = tempfile.mkstemp(prefix="%s-crash-" % prog, suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as fh:
            fh.write(text)
        note = "traceback in %s" % saved
    except OSError:
        note = "traceback could not be saved; rerun with --debug"
    sys.stderr.write("%s: internal error (exit 3, a bug, not a verdict): %s%s; %s\n" % (prog, name, where, note))
    return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())

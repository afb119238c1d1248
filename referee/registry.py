"""The measures: one object per measure (name, definition, direction, what it reads from the
per-item verdicts, how it aggregates, its empty value and why), the registry that lists them
in the order of the docs, and the per-item verdict flags the measures read."""
from __future__ import annotations

import re
from typing import NamedTuple, Tuple

# --------------------------------------------------------------------------- measures
#
# A run judges each item once (judge.Scorer: verdict flags and per-item values); a measure
# then says which of those it reads and how it sums them over a set of items (the whole gold
# set, one category).  aggregate.aggregate carries out the declarations below; the docs' metric
# table, the --help list and the README table are printed from them (names.py).


class Measure(NamedTuple):
    """One measure.  ``K`` in a name is a rank cutoff filled from ``--k`` or a gate.

    What it reads, one of:
      ``items``   (denominator, numerator) predicates on an item's verdict flags: a yes/no
                  verdict per item (the ones --baseline pairs item by item, see PAIRED);
      ``values``  the Scorer's per-item values (an array, NaN where the item has none; a dict of
                  arrays by cutoff for a ``@K`` family; "hits": hit counts by cutoff; "seed_rec":
                  seed 002's recall by cutoff); ``over`` chooses the items ("gold": with gold
                  citations, "answerable"; "": every item with a value), ``hit`` a flag that
                  counts an item of a rate over values.
    How it aggregates (``kind``): "rate" = count / n with a Wilson 95% interval; "mean" = the
    mean with a normal 95% interval (none when ``ci`` is false); "quantile" = nearest rank at
    ``quantile``; "count" = how many items (no interval).
    When it is not measured, the value is None and ``reason`` says why: ``requires`` (a Scorer
    attribute that must be true, and the reason when it is not), ``lacks`` (a Scorer map item ->
    chunk id of items without chunk text, and the reason while one of the items is in it), then
    ``why_empty`` when nothing was measured and ``empty`` is None (``empty`` is the value of an
    empty denominator otherwise).
    ``needs`` names per-row work beyond the seed's verdicts (a key of NEEDS): a run does it only
    when something asks for one of its measures, and a measure not computed is left out of
    the report.  ``group`` is its place in the report (0: the seed's verdicts and retrieval, 1:
    issue 20 and 29's measures, 2: answer correctness), ``ir`` whether IR mode (--qrels/--run)
    has it too."""
    name: str
    kind: str        # "rate", "mean", "quantile" or "count" (see above)
    better: str      # "higher" or "lower": the direction of a bare ``--gates name=value``
    definition: str
    fields: str      # input fields read
    undefined: str   # what an empty denominator gives (text for the docs)
    empty: object    # ... and as a value (None = not measured)
    gold: bool = True   # needs gold labels; False = reference-free (scored from a trace alone)
    needs: str = ""     # per-row work beyond the seed's verdicts (a key of NEEDS); "" = always computed
    items: Optional[tuple] = None   # (denominator, numerator) predicates on an item's flags
    values: str = ""    # else the Scorer's per-item values it aggregates
    over: str = ""      # "gold", "answerable" or "" (every item with a value)
    hit: int = 0        # a rate over values: the flag that counts an item
    quantile: float = 0.0
    ci: bool = True     # a mean: with a normal interval
    why_empty: str = ""             # the reason when nothing was measured (``empty`` None)
    requires: tuple = ()            # (Scorer attribute, reason when it is false)
    lacks: tuple = ()               # (Scorer map of items without chunk text, reason template)
    hint: tuple = ()                # (Scorer attribute, text added to why_empty when it is false)
    group: int = 0
    ir: bool = False


# Per-item verdict flags (bits).  The report's "items" map stores them as letters so that a
# later run can pair its items with this one (--baseline).
FLAG_LETTERS = "tsachpvxmedofugnzr" + "lwkjyqCDSTLMRV" + "PXIAKGU"
(F_TRACE, F_SHIP, F_ANS, F_CONT, F_HIT, F_PASS, F_VALID, F_HALL, F_HMEAS, F_EXPREF, F_DEC,
 F_DECOK, F_FB, F_FBUSED, F_GOLD, F_NOTRET, F_GOLDRET, F_REC,
 F_NOLAB, F_PROSE, F_CUTOFF, F_POLREJ, F_POLV, F_SRCV, F_REQCONF, F_OKCONF, F_REQSTALE, F_OKSTALE,
 F_REQCLAR, F_OKCLAR, F_REQDOCS, F_OKDOCS,
 F_PARTIAL, F_CITTEXT, F_BADMARK, F_GANS, F_ANSOK, F_GMEAS, F_UNSUP) = [1 << i for i in range(len(FLAG_LETTERS))]
F_REFUSED = 1 << 62        # internal: reading 2's "not shipped" (Refusal.flags; never stored in the flags)
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
    ("w", "refused in prose: a refusal that is not the bare token (the refusal reader; with refusal_reader "
          "\"exact\", a [scorer] refusal or cutoff pattern match)"),
    ("k", "training-cutoff excuse: a refusal whose claim matches a [scorer] cutoff pattern"),
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

def _has(bits: int):
    """The predicate "every bit of ``bits`` is set" on an item's flags."""
    return lambda f: f & bits == bits


def _all(f: int) -> bool:
    return True


def _shipped(f: int) -> bool:
    return bool(f & F_SHIP)


def _refused(f: int) -> bool:
    return not f & F_SHIP


# The reasons shared by several measures.
_NO_GOLD_CITATIONS = "not measured: no item has gold citations"
_NO_FALLBACK = "not measured: no trace row carries fallback_used"
_GROUNDING_OFF = ('not computed: set [scorer] grounding = "sentences" in the gates file, or gate faithfulness / '
                  'unsupported_answer_rate (tier = "monitor" to report only)')
_GROUNDING_LACKS = ("ground_no_text", "not measured: no chunk text for %(lack)d shipped answers (first: qid %(qid)s, "
                    "chunk %(chunk)s); give the trace cited_chunks or --chunks FILE")

M = Measure
REGISTRY: Tuple[Measure, ...] = (
    M("precision", "rate", "higher",
      "shipped answerable items with containment and citation hit / shipped items |S|",
      "answer_json.claim, citations, retrieved_ids; gold answerable, gold_claim_substr, gold_citations",
      "1.0 when nothing shipped", 1.0, items=(_shipped, _has(F_ANS | F_CONT | F_HIT))),
    M("chr", "rate", "higher",
      "shipped answerable items with a citation hit / all shipped items |S| (seed 002)",
      "answer_json.citations, retrieved_ids; gold answerable, gold_citations",
      "1.0 when nothing shipped", 1.0, items=(_shipped, _has(F_ANS | F_HIT))),
    M("under_refusal", "rate", "lower",
      "unanswerable items that shipped an answer / unanswerable items |U|",
      "answer_json.claim; gold answerable", "0.0 when no unanswerable item", 0.0,
      items=(lambda f: not f & F_ANS, _shipped)),
    M("over_refusal", "rate", "lower",
      "answerable items refused / answerable items |A|",
      "answer_json.claim; gold answerable", "0.0 when no answerable item", 0.0,
      items=(_has(F_ANS), _refused)),
    # the seed's recall is read from Scorer.seed_rec at every cutoff; its flag (F_REC) is the
    # first cutoff's, which --baseline pairs
    M("recall@K", "rate", "higher",
      "seed 002, all-or-nothing: answerable items whose gold citations are ALL in the first K "
      "retrieved_ids (trace order; vacuously true for []) / |A|; `recall@k` is K = first --k",
      "retrieved_ids; gold answerable, gold_citations", "0.0 when no answerable item", 0.0,
      items=(_has(F_ANS), _has(F_REC)), values="seed_rec", over="answerable"),
    M("pass_rate", "rate", "higher",
      "items that pass / all items; answerable passes when shipped with containment and "
      "citation hit, unanswerable when refused (QA contract)",
      "answer_json; gold answerable, gold_claim_substr, gold_citations", "never empty", None,
      items=(_all, _has(F_PASS)), why_empty="not measured: no items"),
    M("correct_refusal", "rate", "higher",
      "refusals of unanswerable items / all refusals |R| (refusal precision)",
      "answer_json.claim; gold answerable", "1.0 when nothing refused", 1.0,
      items=(_refused, lambda f: not f & F_ANS)),
    M("incorrect_refusal", "rate", "lower",
      "refusals of answerable items / all refusals |R| (share of refusals that were wrong; "
      "over_refusal divides by |A| instead)",
      "answer_json.claim; gold answerable", "0.0 when nothing refused", 0.0,
      items=(_refused, _has(F_ANS))),
    M("hallucination", "rate", "lower",
      "shipped claims with no citation, a citation outside retrieved_ids, or a number or "
      "content word (>= 3 letters, not a stopword) found in no cited chunk's text / |S|",
      "answer_json, retrieved_ids, cited_chunks or --chunks",
      "0.0 when nothing shipped; null (gate fails) without chunk text", 0.0, gold=False,
      items=(_shipped, _has(F_HALL)),
      lacks=("no_text", "not measured: no chunk text for %(lack)d of %(n)d shipped claims (first: qid %(qid)s, "
                        "chunk %(chunk)s); give the trace cited_chunks or --chunks FILE")),
    # Issue 29: grounding of generated text, sentence by sentence (reading 4).  Computed unless
    # the gates file says [scorer] grounding = "strict" and no gate / regression names one (issue 41);
    # without a gates file, when something asks for it (``needs``: issue 40's seed command does not).
    M("faithfulness", "mean", "higher",
      "supported sentences / checked sentences of a shipped answer (meta sentences set aside; each "
      "sentence matched to the cited chunks, the retrieved ones when none is cited), mean over shipped "
      "answers with a checked sentence", "answer_json, retrieved_ids, cited_chunks or --chunks",
      "null when no shipped answer has a checked sentence, or without chunk text", None, gold=False,
      values="faith", requires=("grounding_on", _GROUNDING_OFF), lacks=_GROUNDING_LACKS,
      why_empty="not measured: no shipped answer has a checked sentence", group=1, needs="grounding"),
    M("unsupported_answer_rate", "rate", "lower",
      "shipped answers with at least one unsupported sentence (a number or name found in no chunk, "
      "negation or modality changed, or a support score at or below the fitted bar) / checked answers",
      "answer_json, retrieved_ids, cited_chunks or --chunks",
      "0.0 when nothing shipped; null (gate fails) without chunk text", 0.0, gold=False,
      items=(_has(F_GMEAS), _has(F_UNSUP)), requires=("grounding_on", _GROUNDING_OFF), lacks=_GROUNDING_LACKS,
      group=1, needs="grounding"),
    M("citation_validity", "rate", "higher",
      "shipped answers whose citations are unique, at most 5 and all in retrieved_ids, and whose "
      "text holds no citation marker that resolves to nothing / |S| (seed 000)",
      "answer_json.citations (empty or absent: the markers in the claim), retrieved_ids",
      "1.0 when nothing shipped", 1.0, gold=False, items=(_shipped, _has(F_VALID))),
    M("false_accept_rate", "rate", "lower",
      "shipped among items expected to refuse (expected_decision != ANSWER, else answerable "
      "false) / items expected to refuse (seed 000)",
      "answer_json.claim; gold expected_decision, answerable", "0.0 when none expected to refuse", 0.0,
      items=(_has(F_EXPREF), _shipped)),
    M("false_refuse_rate", "rate", "lower",
      "refused among items expected to answer / items expected to answer (seed 000)",
      "answer_json.claim; gold expected_decision, answerable", "0.0 when none expected to answer", 0.0,
      items=(lambda f: not f & F_EXPREF, _refused)),
    M("decision_accuracy", "rate", "higher",
      "trace decision == gold expected_decision / items having both",
      "decision; gold expected_decision", "null (not measured) when no item has both", None,
      items=(_has(F_DEC), _has(F_DECOK)),
      why_empty="not measured: no item has both gold expected_decision and trace decision"),
    M("fallback_used_count", "count", "lower",
      "items whose trace says fallback_used = true (QA contract)",
      "fallback_used", "null (not measured) when no trace carries fallback_used", None, gold=False,
      items=(_has(F_FB), _has(F_FBUSED)), why_empty=_NO_FALLBACK),
    M("fallback_used_rate", "rate", "lower",
      "fallback_used true / items whose trace carries fallback_used",
      "fallback_used", "null (not measured) when no trace carries fallback_used", None, gold=False,
      items=(_has(F_FB), _has(F_FBUSED)), why_empty=_NO_FALLBACK),
    M("fallback_used_rate_answerable", "rate", "lower",
      "fallback_used true / answerable items whose trace carries fallback_used",
      "fallback_used; gold answerable", "null (not measured) when no answerable trace carries it", None,
      items=(_has(F_FB | F_ANS), _has(F_FBUSED)),
      why_empty="not measured: no answerable item's trace carries fallback_used"),
    # The rank measures (retrieval.py computes them per item, for QA and IR mode alike).
    M("P@K", "mean", "higher",
      "trec_eval P_K: gold citations in the top K of the ranking / K, mean over items with gold "
      "citations", "retrieved_ids, retrieved_scores; gold_citations",
      "null when no item has gold citations", None, needs="ranks", values="hits", over="gold",
      why_empty=_NO_GOLD_CITATIONS, ir=True),
    M("R@K", "mean", "higher",
      "trec_eval recall_K: fraction of the item's gold citations in the top K (not seed's "
      "all-or-nothing recall@K)", "retrieved_ids, retrieved_scores; gold_citations",
      "null when no item has gold citations", None, needs="ranks", values="rec", over="gold",
      why_empty=_NO_GOLD_CITATIONS, ir=True),
    M("Success@K", "rate", "higher",
      "trec_eval success_K: any gold citation in the top K", "retrieved_ids, retrieved_scores; gold_citations",
      "null when no item has gold citations", None, needs="ranks", values="hits", over="gold",
      why_empty=_NO_GOLD_CITATIONS, ir=True),
    M("RR", "mean", "higher",
      "trec_eval recip_rank: 1 / rank of the first gold citation, 0 when none is retrieved",
      "retrieved_ids, retrieved_scores; gold_citations", "null when no item has gold citations", None,
      needs="ranks", values="rr", over="gold", why_empty=_NO_GOLD_CITATIONS, ir=True),
    M("RR@K", "mean", "higher",
      "reciprocal rank counting only the top K", "retrieved_ids, retrieved_scores; gold_citations",
      "null when no item has gold citations", None, needs="ranks", values="rrk", over="gold",
      why_empty=_NO_GOLD_CITATIONS, ir=True),
    M("nDCG@K", "mean", "higher",
      "trec_eval ndcg_cut_K: sum gain/log2(rank+1) over the top K, divided by the same for the "
      "ideal order of all gold citations (gain 1; qrels relevance level with --qrels)",
      "retrieved_ids, retrieved_scores; gold_citations", "null when no item has gold citations", None,
      needs="ranks", values="ndcg", over="gold", why_empty=_NO_GOLD_CITATIONS, ir=True),
    # Issue 20: prose refusals, reference-free metrics, policies, decisions for the right reason,
    # latency and cost.
    M("refusal_rate", "rate", "lower",
      "items refused (the refusal token in any dress, or a response whose bottom line is that it cannot "
      "answer: the refusal reader, docs/refusals.md) / all items", "answer_json.claim",
      "null when there are no items", None, gold=False, items=(_all, _refused),
      why_empty="not measured: no items", group=1),
    M("partial_refusal_rate", "rate", "lower",
      "items whose response answers part of the question and declines the rest (shipped: an answer for "
      "every other metric) / all items", "answer_json.claim", "null when there are no items", None, gold=False,
      items=(_all, _has(F_PARTIAL)), why_empty="not measured: no items", group=1),
    M("rejection_calibration", "rate", "higher",
      "items whose answer/refuse behaviour matches the label (expected_behavior, else "
      "expected_decision != ANSWER, else answerable false means refuse) / labelled items (seed 004)",
      "answer_json.claim; gold expected_behavior, expected_decision, answerable",
      "null when no item is labelled", None,
      items=(lambda f: not f & F_NOLAB, lambda f: bool(f & F_SHIP) != bool(f & F_EXPREF)),
      why_empty="not measured: no item is labelled", group=1),
    M("policy_compliance", "rate", "higher",
      "judged items without a policy violation / judged items; judged = shipped items plus items "
      "gold says to reject for a policy (expected_behavior reject + rejection_reason); a violation "
      "is a shipped claim matching a [policy.*] pattern, or a policy rejection that shipped",
      "answer_json.claim; [policy.*] patterns; gold expected_behavior, rejection_reason",
      "1.0 when nothing is judged; null when no [policy.*] is configured and no gold policy "
      "rejection exists", 1.0, gold=False,
      items=(lambda f: f & (F_SHIP | F_POLREJ), lambda f: not f & F_POLV),
      requires=("policy_measured", "not measured: no [policy.*] patterns in the gates file and no gold policy "
                                   "rejection"), group=1),
    M("source_policy_compliance", "rate", "higher",
      "shipped items without a source-policy violation / shipped items: a quote_only chunk's "
      "sentences must be verbatim, a no_use chunk may be neither cited nor reproduced (8+ "
      "consecutive words)", "answer_json, retrieved_ids, cited_chunks {text, policy} or --chunks "
      "policy", "1.0 when nothing shipped (a chunk without policy is summarize)", 1.0, gold=False,
      items=(_shipped, lambda f: not f & F_SRCV), group=1),
    M("answer_relevance", "mean", "higher",
      "share of the question's content terms (numbers, words of >= 3 letters not stopwords; final "
      "s folded) that occur in the shipped claim, mean over shipped items (lexical)",
      "q, answer_json.claim", "null when no shipped item has a question with content terms",
      None, gold=False, needs="relevance", values="answer_rel",
      why_empty="not measured: no shipped item has a question (q) with content terms", group=1),
    M("context_relevance", "mean", "higher",
      "share of retrieved chunks sharing a content term with the question, mean over items whose "
      "retrieved chunks' texts are all known", "q, retrieved_ids, cited_chunks or --chunks",
      "null when no item has a question, retrieved chunks and all their texts", None, gold=False,
      needs="relevance", values="context_rel",
      why_empty="not measured: no item has a question, retrieved chunks and all their texts (give --chunks)",
      group=1),
    M("citation_coverage", "rate", "higher",
      "items whose citations name every document of gold required_citation_doc_ids (doc id = "
      "chunk id before '#') / items listing them (seed 000)",
      "answer_json.citations; gold required_citation_doc_ids",
      "null when no item lists required_citation_doc_ids", None, items=(_has(F_REQDOCS), _has(F_OKDOCS)),
      why_empty="not measured: no gold item lists required_citation_doc_ids", group=1),
    M("conflict_correct_rate", "rate", "higher",
      "must_surface_conflict items with the right decision (expected_decision or "
      "acceptable_decisions; without a trace decision: refused) and a reason whose code (text "
      "before ':') starts with 'conflict' / those items (seed 000)",
      "decision, reasons, answer_json.claim; gold required_behavior, expected_decision, "
      "acceptable_decisions", "null when no item requires it", None, items=(_has(F_REQCONF), _has(F_OKCONF)),
      why_empty="not measured: no gold item has required_behavior must_surface_conflict", group=1),
    M("staleness_correct_rate", "rate", "higher",
      "must_detect_staleness items with the right decision and a reason whose code starts with "
      "'stale' / those items (seed 000)",
      "decision, reasons, answer_json.claim; gold required_behavior, expected_decision, "
      "acceptable_decisions", "null when no item requires it", None, items=(_has(F_REQSTALE), _has(F_OKSTALE)),
      why_empty="not measured: no gold item has required_behavior must_detect_staleness", group=1),
    M("clarify_correct_rate", "rate", "higher",
      "must_clarify items with the right decision and a CLARIFY decision or a reason whose code "
      "starts with 'ambiguous' or 'clarif' / those items",
      "decision, reasons; gold required_behavior, expected_decision, acceptable_decisions",
      "null when no item requires it", None, items=(_has(F_REQCLAR), _has(F_OKCLAR)),
      why_empty="not measured: no gold item has required_behavior must_clarify", group=1),
    M("latency_p50", "quantile", "lower",
      "median of timings_ms.total in ms (nearest rank: the ceil(0.50 n)-th smallest)",
      "timings_ms.total", "null when no trace row carries timings_ms.total", None, gold=False,
      values="latency", quantile=0.50, why_empty="not measured: no trace row carries timings_ms.total", group=1),
    M("latency_p95", "quantile", "lower",
      "95th percentile of timings_ms.total in ms (nearest rank: the ceil(0.95 n)-th smallest)",
      "timings_ms.total", "null when no trace row carries timings_ms.total", None, gold=False,
      values="latency", quantile=0.95, why_empty="not measured: no trace row carries timings_ms.total", group=1),
    M("cost_per_item", "mean", "lower",
      "sum of cost / trace rows carrying cost (any currency unit, as written)",
      "cost", "null when no trace row carries cost", None, gold=False, values="cost", ci=False,
      why_empty="not measured: no trace row carries cost", group=1),
    # Issue 28: answer correctness beyond the substring (reading 3, docs/answer_correctness.md).
    # Both are over the items with an answer_f1 (NaN: refused, or nothing to match).
    M("answer_correct_rate", "rate", "higher",
      "shipped answers that match a gold answer after normalisation (answer_correct) / shipped "
      "items with gold_answers; when a gate names answer_correct_rate or answer_f1, shipped "
      "answerable items without gold_answers are matched on gold_claim_substr too (no partial match)",
      "answer_json.claim; gold gold_answers, question (gold_claim_substr, answerable)",
      "null when no shipped item has gold answers", None, values="answer_f1", hit=F_ANSOK,
      why_empty="not measured: no shipped item has gold_answers",
      hint=("answer_substr", " (gate answer_correct_rate to match gold_claim_substr)"), group=2),
    M("answer_f1", "mean", "higher",
      "token F1 of the shipped claim against its best gold answer (normalised words), mean over the "
      "items of answer_correct_rate",
      "answer_json.claim; gold gold_answers (gold_claim_substr)",
      "null when no shipped item has gold answers", None, values="answer_f1",
      why_empty="not measured: no shipped item has gold_answers",
      hint=("answer_substr", " (gate answer_correct_rate to match gold_claim_substr)"), group=2),
)
del M
_BY_NAME = {m.name: m for m in REGISTRY}
#: The order of a report's metrics: the registry's, group by group.
REPORT_ORDER: Tuple[Measure, ...] = tuple(sorted(REGISTRY, key=lambda m: m.group))
ALIASES = {"under": "under_refusal", "over": "over_refusal"}   # seed 002's --gates names
_FAMILIES = ("P", "R", "Success", "RR", "nDCG", "recall")
_PARAM_RX = re.compile(r"(P|R|Success|RR|nDCG|recall)@([1-9][0-9]{0,5})")
# Per-row work that only some measures read (a measure's ``needs``), done when something asks
# for one of its measures: a gate, a [regression] metric, a [weights] stage of the scorecard when
# the scorecard is reported, --compute, an output beside the JSON report (--items, --markdown,
# --html, --csv, --metrics-csv, --junit), a --baseline comparison, a --partial shard, or
# reference-free mode (no gold labels: these are what there is to measure).  Seed 002's command
# asks for none (issue 40).
NEEDS = {"relevance": "content terms of q, the claim and the retrieved chunks' texts",
         "ranks": "the rank measures of each item's retrieved_ids against its gold citations, at every cutoff",
         "grounding": "each shipped answer's sentences matched against its chunks' texts (a gates file asks "
                      "for it unless it says [scorer] grounding = \"strict\")"}
NOT_COMPUTED = ("not computed: nothing asked for it (a gate, [regression], a [weights] stage, --items/--html/"
                "--csv, or --compute %s)")


def needs_for(metrics) -> set:
    """The NEEDS keys of the measures ``metrics`` (Measure or MetricRef)."""
    return {getattr(m, "metric", m).needs for m in metrics} - {""}


#: The measures that need answers (--gold/--trace): an IR run (--qrels/--run) refuses a gate on one.
SEED_ONLY = tuple(m.name for m in REGISTRY if m.group == 0 and not m.ir and m.name != "recall@K")
#: name -> (denominator, numerator) of the measures with a yes/no verdict per item: --baseline pairs
#: them item by item, the scorecard scores an item by them.
_PAIRED = {m.name: m.items for m in REGISTRY if m.items is not None and m.kind == "rate"}

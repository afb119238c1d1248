"""One analysis of the question, read by every later stage (Lucene's analysis chain, spaCy's ``Doc``).

The question is analyzed once, before retrieval, into a :class:`QuestionAnalysis`;
retrieval (``Retriever.retrieve(..., qa=)``), phase B (``relevance.phase_b(..., qa=)``),
phase C (the generator's ``context["analysis"]``, ``synthesize.phase_c(..., qa=)``),
the answerability model (``answerability.candidates(..., qa=)``) and the guards
(risk and ambiguity; conflicts through the record's terms and bridges) read its fields
instead of analyzing the question text again.  Every function those stages exported keeps working with a question string
alone: the record is an optional extra argument, and without it each computes what it
needs as before, so the results are the same either way.

The analysis runs first but is built from the later stages' readers (``relevance``,
``synthesize``, ``asked``, ``answerability``, ``conflicts``), so the module sits next to
``pipeline.py``, above them in the import order (``tests/test_stage_order.py``), not in
``query/``, whose modules it reads too.

==================================================  ===============================================
``analyze_question(question, analyzer, index,        :class:`QuestionAnalysis` of ``question`` (as
config, retriever=None, corrections=None)``          asked); framing stripped when ``[answer]
                                                     strip_framing`` is on
``QuestionAnalysis.to_json()``                       the record as JSON (sets sorted)
``QuestionPart``                                     one part of the question (phase B or C)
==================================================  ===============================================

Fields (``text`` is the question with its framing stripped, what every stage reads):

* ``asked``, ``text``: the question as asked; without greetings and asides (``framing``).
* ``analyzed``: ``analyzer.analyze(text)``, every term in order, not corrected (risk
  keywords and answerability's bigrams match on them).
* ``query_terms``, ``corrections``: the terms retrieval ranks, in order, each typo the
  retriever corrects replaced (``Retriever.query_terms``); ``corrections`` maps a token to
  the index terms used instead, including tokens of the expansion variants.
* ``variants``, ``variant_terms``, ``alternatives``: the question then its expansions
  (``[expansion.*]`` rules, ``Retriever.expansions``), each with its corrected terms and
  the derivations and synonyms the index holds for them (``Retriever.alternatives``).
* ``terms``: the content terms (``relevance.question_terms``: corrected, distinct, in
  order, question scaffold removed); ``idf`` their weights (``relevance.term_weights``),
  ``doc_freq`` their document frequency and ``absent`` those no chunk contains.
* ``question_type`` (``synthesize.question_type``), ``echo`` (``synthesize.echo_words``),
  ``negated`` and ``marked`` (answerability's negation cue and capitalized words and
  numbers past the first word), ``words`` (lower-case words, as the ambiguity guard reads
  them), ``years`` (four-digit years named), ``qualifiers`` (the plan / tier / region
  names the question scopes itself to: ``conflicts.qualifiers`` with ``[clarify]``
  ``dimension_values`` and ``dimension_nouns``), ``task_request`` (a joke or poem is
  asked for), ``asks_revisions`` (revisions, versions, history: phase B keeps revision
  tables), ``quantities`` (percentages and amounts, ``synonyms.question_quantities``).
* ``bridges``: ``relevance.expansion_bridges`` of the question (term -> alternative term
  sets: derivations, abbreviations, glossary, synonyms, numbers, expansion rules).
* ``b_parts``: phase B's parts (``split_question(text)``) with their content terms;
  ``parts``: phase C's (``split_question`` of the text with misspelt cue words written
  out, ``synthesize.cue_spelling``), each with its terms, type, echo words, answer
  category and light / type words (never key terms), whether it asks for a whole list,
  its names and codes with their terms, and the subject of "is there X".

>>> from mini_rag.text.analysis import Analyzer
>>> qa = analyze_question("Hi! How many days do we keep audit logs?", Analyzer())
>>> qa.text, qa.terms, qa.question_type
('How many days do we keep audit logs?', ['day', 'keep', 'audit', 'log'], 'duration')
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, List, Optional, Tuple

from .guard import conflicts as _conf
from .answer.answerability import _marked_words, _negated
from .query.framing import situation_segments, split_scenario, strip_framing
from .records import Retrieval
from .answer.relevance import Bridges, asks_revisions, expansion_bridges, question_terms, split_question, term_weights
from .query.synonyms import question_quantities
from .answer.asked import asked_kind
from .answer.synthesize import (asked_subject, category_terms, cue_spelling, echo_words, general_terms, is_enumeration,
                                is_task_request, name_words, question_type)

__all__ = ["QuestionAnalysis", "QuestionPart", "analyze_question"]

_YEAR = re.compile(r"(?<![\w.])(?:1[89]|20|21)\d\d(?!\w|\.\d)")


@dataclass
class QuestionPart:
    """One part of a question with several (``relevance.split_question``)."""
    text: str
    terms: List[str]                          # relevance.question_terms of the part
    # phase C parts only (synthesize):
    question_type: Optional[str] = None       # question_type
    echo: FrozenSet[str] = frozenset()        # echo_words
    category: List[str] = field(default_factory=list)   # category_terms: the answer's category
    general: List[str] = field(default_factory=list)    # general_terms: light and type words
    enumeration: bool = False                 # is_enumeration: asks for a whole list
    names: List[Tuple[str, List[str]]] = field(default_factory=list)   # name_words: names, codes
    subject: Tuple[str, ...] = ()             # asked_subject: "is there X" subject, head terms
    asked: Optional[str] = None               # asked.asked_kind: the kind of value asked (issue 30)

    def to_json(self) -> Dict[str, Any]:
        return {"text": self.text, "terms": list(self.terms), "question_type": self.question_type,
                "echo": sorted(self.echo), "category": list(self.category), "general": list(self.general),
                "enumeration": self.enumeration, "names": [[w, list(t)] for w, t in self.names],
                "subject": list(self.subject), "asked": self.asked}


@dataclass
class QuestionAnalysis:
    """The question analyzed once; see the module docstring for each field."""
    asked: str
    text: str
    analyzed: List[str]
    query_terms: List[str]
    corrections: Dict[str, str]
    variants: List[str]
    variant_terms: List[List[str]]
    alternatives: List[Dict[str, List[Tuple[Tuple[str, ...], float]]]]
    terms: List[str]
    idf: Dict[str, float]
    doc_freq: Dict[str, int]
    absent: List[str]
    question_type: Optional[str]
    echo: FrozenSet[str]
    negated: bool
    marked: List[str]
    words: List[str]
    years: List[str]
    qualifiers: FrozenSet[str]
    task_request: bool
    asks_revisions: bool
    quantities: List[Tuple[str, str, float]]
    bridges: Bridges
    b_parts: List[QuestionPart] = field(default_factory=list)
    parts: List[QuestionPart] = field(default_factory=list)

    def to_json(self) -> Dict[str, Any]:
        """The record as JSON: sets and bridge alternatives as sorted lists."""
        return {
            "asked": self.asked, "text": self.text, "analyzed": list(self.analyzed),
            "query_terms": list(self.query_terms), "corrections": dict(sorted(self.corrections.items())),
            "variants": list(self.variants), "variant_terms": [list(v) for v in self.variant_terms],
            "alternatives": [{t: [[list(a), share] for a, share in alts[t]] for t in sorted(alts)}
                             for alts in self.alternatives],
            "terms": list(self.terms), "idf": {t: round(self.idf[t], 6) for t in self.terms},
            "doc_freq": {t: self.doc_freq[t] for t in self.terms if t in self.doc_freq},
            "absent": list(self.absent), "question_type": self.question_type,
            "echo": sorted(self.echo), "negated": self.negated, "marked": list(self.marked),
            "words": list(self.words), "years": list(self.years), "qualifiers": sorted(self.qualifiers),
            "task_request": self.task_request, "asks_revisions": self.asks_revisions,
            "quantities": [list(q) for q in self.quantities],
            "bridges": {t: [sorted(alt) for alt in self.bridges[t]] for t in sorted(self.bridges)},
            "b_parts": [{"text": p.text, "terms": list(p.terms)} for p in self.b_parts],
            "parts": [p.to_json() for p in self.parts],
        }


def _retrieval_terms(text: str, analyzer: Any, retriever: Any, corrections: Optional[Dict[str, str]]):
    """(query terms, corrections, variants, variant terms, alternatives): what ``Retriever.retrieve`` ranks, computed as it would (typos corrected across
    the question and its expansion variants in one dict; each variant's alternatives by
    ``Retriever.alternatives``).  Without a retriever that corrects (a stub), the
    analyzer's terms and the ``corrections`` given."""
    if corrections is None and callable(getattr(retriever, "query_terms", None)) and \
            callable(getattr(retriever, "expansions", None)):
        fixes: Dict[str, str] = {}
        terms = retriever.query_terms(text, fixes)
        variants = [text] + retriever.expansions(text)
        vterms = [terms] + [retriever.query_terms(v, fixes) for v in variants[1:]]
        alts = getattr(retriever, "alternatives", None)
        valts = [alts(v, vt) for v, vt in zip(variants, vterms)] if callable(alts) else [{} for _ in variants]
        return terms, fixes, variants, vterms, valts
    terms = analyzer.analyze(text)
    return terms, dict(corrections or {}), [text], [terms], [{}]


def _phase_c_part(part: str, shim: Retrieval, analyzer: Any, index: Any) -> QuestionPart:
    """One part as phase C reads it (``synthesize._answer_part``): with the index's
    analyzer for names, subject, category and general terms, as there."""
    kind = question_type(part)
    own = getattr(index, "analyzer", None)
    return QuestionPart(part, question_terms(part, shim, analyzer), kind, echo_words(part),
                        category=category_terms(part, index), general=general_terms(part, kind, own),
                        enumeration=is_enumeration(part), names=name_words(part, own) if own is not None else [],
                        subject=asked_subject(part, own), asked=asked_kind(part, kind))


#: Situation terms a scenario question's retrieval variant keeps (the rarest in the corpus).
SITUATION_TERMS = 3


def _scenario_text(text: str, clarify: Dict[str, Any]) -> Tuple[str, str, str]:
    """(what the stages read, the situation, the ask) of a question.  A scenario question
    (``framing.split_scenario``) is read as its ask, after the situation's sentences that name
    a plan, region or product (``[clarify]`` dimension values and nouns); an ask holding a
    ``[clarify] vague_referents`` word ("Can they be deleted?") points back into the situation
    and the whole question is read.  Anything else: (text, "", text)."""
    situation, ask = split_scenario(text)
    if not situation:
        return text, "", text
    referents = {w.lower() for w in clarify.get("vague_referents", [])}
    if any(w in referents for w in re.findall(r"[a-z']+", ask.lower())):
        return text, situation, ask
    values, nouns = clarify.get("dimension_values", []), clarify.get("dimension_nouns", [])
    keep = [seg for seg in situation_segments(situation) if _conf.qualifiers(seg, values, nouns)]
    return " ".join(keep + [ask]), situation, ask


def _situation_variant(ask, situation, terms, fixes, variants, vterms, valts, analyzer, index, retriever) -> None:
    """Two more retrieval variants for a scenario question (``framing.split_scenario``: a few
    sentences of the asker's situation, then the question): its ask alone (unless it is
    already a variant), and its ask with the situation's :data:`SITUATION_TERMS` rarest words
    the corpus holds (document frequency, then the word).  A chunk keeps its best similarity
    over the variants, so retrieval weighs the ask (the whole question's many terms no longer
    dilute every similarity below the threshold) and keeps the situation's distinctive terms.
    Appended in place; nothing without a retriever that corrects."""
    if not (callable(getattr(retriever, "query_terms", None)) and index is not None):
        return
    have = set(analyzer.analyze(ask))
    df_of = getattr(index, "doc_freq", None)
    scored = {}
    for word in re.findall(r"[A-Za-z][A-Za-z'-]*", situation):
        got = analyzer.analyze(word)
        if len(got) != 1 or got[0] in have or df_of is None or df_of(got[0]) <= 0:
            continue
        scored.setdefault(got[0], (df_of(got[0]), word.lower()))
    picked = sorted(scored.values())[:SITUATION_TERMS]
    alts = getattr(retriever, "alternatives", None)
    texts = [ask] if ask not in variants else []
    if picked:
        texts.append("%s %s" % (ask, " ".join(w for _df, w in sorted(picked, key=lambda p: p[1]))))
    for vtext in texts:
        vt = retriever.query_terms(vtext, fixes)
        variants.append(vtext)
        vterms.append(vt)
        valts.append(alts(vtext, vt) if callable(alts) else {})


def analyze_question(question: str, analyzer: Any, index: Any = None, config: Optional[Dict[str, Any]] = None,
                     retriever: Any = None, corrections: Optional[Dict[str, str]] = None) -> QuestionAnalysis:
    """The :class:`QuestionAnalysis` of ``question`` (as asked).

    ``analyzer`` must be the index's (``relevance.analyzer_of``); ``retriever`` (a
    ``retrieve.Retriever``) corrects typos and expands the question; ``corrections``
    (token -> index terms, ``Retrieval.corrections``) replaces the retriever's when
    given (a retriever that does not correct, or a retrieval already run).
    """
    cfg = config or {}
    text = question
    if cfg.get("answer", {}).get("strip_framing", True):
        text = strip_framing(question)
    clarify = cfg.get("clarify", {})
    situation, ask = "", text
    if cfg.get("answer", {}).get("scenario_split", True):
        text, situation, ask = _scenario_text(text, clarify)
    terms_q, fixes, variants, vterms, valts = _retrieval_terms(text, analyzer, retriever, corrections)
    if situation and corrections is None:
        _situation_variant(ask, situation, terms_q, fixes, variants, vterms, valts, analyzer, index, retriever)
    shim = Retrieval(question=text, hits=[], corrections=fixes)
    content = question_terms(text, shim, analyzer)
    idf = term_weights(content, index)
    df_of = getattr(index, "doc_freq", None)
    doc_freq = {t: int(df_of(t)) for t in content} if df_of is not None else {}
    cue_text = cue_spelling(text, shim, analyzer)
    b_parts = [QuestionPart(p, question_terms(p, shim, analyzer)) for p in split_question(text)]
    parts = [_phase_c_part(p, shim, analyzer, index) for p in split_question(cue_text)]
    return QuestionAnalysis(
        asked=question, text=text, analyzed=analyzer.analyze(text), query_terms=list(terms_q),
        corrections=fixes, variants=variants, variant_terms=vterms, alternatives=valts,
        terms=content, idf=idf, doc_freq=doc_freq, absent=[t for t in content if doc_freq.get(t, 1) == 0],
        question_type=question_type(text), echo=echo_words(text), negated=_negated(text),
        marked=_marked_words(text), words=re.findall(r"[a-z']+", text.lower()),
        years=list(dict.fromkeys(_YEAR.findall(text))),
        qualifiers=_conf.qualifiers(text, clarify.get("dimension_values", []), clarify.get("dimension_nouns", [])),
        task_request=is_task_request(text), asks_revisions=asks_revisions(text),
        quantities=question_quantities(text),
        bridges=expansion_bridges(text, cfg, analyzer, index, fixes),
        b_parts=b_parts, parts=parts)

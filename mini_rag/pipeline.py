"""The pipeline: one question in, one trace row out, every stage wired in order.

====  ==========================  ====================================================
step  stage                       module
====  ==========================  ====================================================
0     the question                ``framing.strip_framing``: greetings, thanks and asides
                                  dropped (``[answer] strip_framing``); the trace
                                  keeps the question as asked
1     retrieve                    ``retrieve.Retriever.retrieve`` -> Retrieval
2     phase A: facts              ``facts.phase_a``
3     phase B: filter             ``relevance.phase_b``
4     phase C: answer             the generator (``generator.get_generator``), its raw
                                  output then ``validate_synthesis`` (via
                                  ``generator.generate_answer``)
5     guards                      citations (on the generator's *raw* output, so a
                                  generator that cites what it was not given is BLOCKed
                                  rather than silently repaired), conflicts among the
                                  phase B facts, risk, freshness of the cited chunks,
                                  ambiguity, low confidence
6     decision                    ``decision.decide`` (seed 000's precedence)
7     trace row                   ``trace.build_row``; a non-ANSWER decision ships the
                                  refusal token (``[answer] refusal``) and no citations
====  ==========================  ====================================================

Use::

    from mini_rag.config import load_config
    from mini_rag.pipeline import Pipeline
    p = Pipeline(load_config())                    # opens (or rebuilds) the index
    row = p.answer("How long are audit logs kept?", qid="A1").row
    print(row["decision"], row["answer_json"])

Nothing here reads a clock unless ``timings=True`` (then ``timings_ms`` is added to the
row; it is the only field that differs between two runs).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from . import answerability
from . import conflicts as conflicts_mod
from . import decision as decision_mod
from . import guards
from .facts import phase_a
from .framing import strip_framing
from .generator import Generator, generate_answer, get_generator
from .records import Fact, Hit, Retrieval
from .relevance import analyzer_of, expansion_bridges, phase_b, question_terms
from .synthesize import Answer
from .trace import build_row

__all__ = ["Pipeline", "Result"]


@dataclass
class Result:
    """Everything one question produced; ``row`` is the trace row."""
    row: Dict[str, Any]
    retrieval: Retrieval
    facts_a: List[Fact]
    facts_b: List[Fact]
    answer: Answer
    decision: decision_mod.Decision
    citation_check: guards.CitationCheck
    validator_errors: List[str] = field(default_factory=list)


class _Recorder(Generator):
    """Wraps a generator to keep its raw output for the citation guard."""

    def __init__(self, inner: Generator) -> None:
        self.inner = inner
        self.name = inner.name
        self.payload: Any = None

    def generate(self, question, facts, context):
        self.payload = self.inner.generate(question, facts, context)
        return self.payload


def _versions(hits) -> List[Tuple[str, str]]:
    """(old doc id, new doc id) for each hit whose front matter names ``superseded_by``."""
    out = set()
    for h in hits:
        newer = (h.metadata or {}).get("superseded_by")
        if isinstance(newer, str) and newer.strip():
            out.add((h.doc_id, newer.strip()))
    return sorted(out)


class Pipeline:
    """``Pipeline(config, retriever=None, generator=None)``; ``answer(question, qid)``.

    Without ``retriever`` the configured index is opened (rebuilt when stale) with
    ``retrieve.open_retriever``; without ``generator`` the one ``[answer] generator``
    names.  Tests pass stubs for either.
    """

    def __init__(self, config: Dict[str, Any], retriever: Any = None,
                 generator: Optional[Generator] = None) -> None:
        self.config = config
        if retriever is None:
            from .retrieve import open_retriever
            retriever = open_retriever(config)
        self.retriever = retriever
        self.index = getattr(retriever, "index", None)
        self.analyzer = analyzer_of(self.index, config)
        self.generator = generator if generator is not None else get_generator(config, self.index)
        self.refusal = config["answer"]["refusal"]
        guards.parse_date(config["guards"]["as_of"], "config [guards] as_of")   # fail early

    def answer(self, question: str, qid: str = "", timings: bool = False,
               doc_scope: Optional[str] = None) -> Result:
        """Answer ``question``; ``doc_scope`` (a doc_id) restricts retrieval to one document."""
        cfg = self.config
        clock = time.perf_counter if timings else (lambda: 0.0)
        t0 = clock()
        asked = question
        if cfg["answer"].get("strip_framing", True):
            question = strip_framing(question)         # "Hi there! ... Thanks!": framing.py
        # 1. retrieve
        retrieval = (self.retriever.retrieve(question, doc_scope=doc_scope) if doc_scope
                     else self.retriever.retrieve(question))
        t1 = clock()
        # 2-3. phase A, phase B
        facts_a = phase_a(retrieval)
        facts_b = phase_b(question, facts_a, retrieval, self.index, cfg)
        # 4. phase C through the generator, raw output kept
        recorder = _Recorder(self.generator)
        answer, validator_errors = generate_answer(
            recorder, question, facts_b, {"retrieval": retrieval, "config": cfg},
            int(cfg["answer"]["max_sentences"]))
        if cfg["answer"].get("answerability", False) and self.generator.name == "extractive":
            # The fitted model weighs phase C's choice against every sentence of the best
            # hits and decides whether to ship (answerability.py).
            answer = answerability.decide(question, retrieval, answer, self.index, self.analyzer)
            recorder.payload = {"refused": answer.refused, "answer_sentences": [
                {"sentence": s.sentence, "chunk_id": s.chunk_id} for s in answer.sentences]}
        t2 = clock()
        # 5. guards
        hits_by_id: Dict[str, Hit] = {h.chunk_id: h for h in retrieval.hits}
        raw_citations, raw_sentences = _raw_citations(recorder.payload)
        check = guards.validate_citations(
            raw_citations, [h.chunk_id for h in retrieval.hits], is_refusal=not raw_citations,
            max_citations=int(cfg["guards"]["max_citations"]), sentences=raw_sentences,
            chunk_texts={cid: h.text for cid, h in hits_by_id.items()}, analyzer=self.analyzer)
        q_terms = question_terms(question, retrieval, self.analyzer)
        bridges = expansion_bridges(question, cfg, self.analyzer, self.index, retrieval.corrections)
        citations = answer.citations()
        # Conflicts: among every accepted hit (phase A), about what the answer cites.
        pairs = conflicts_mod.find_conflicts(
            q_terms, facts_a, self.analyzer, cfg["guards"], cfg["clarify"],
            context={cid: "%s\n%s" % (h.heading, h.title) for cid, h in hits_by_id.items()},
            question=question, anchor=citations, versions=_versions(retrieval.hits), bridges=bridges)
        risk = guards.classify_risk(question, self.analyzer, cfg["risk"])
        cited = [(cid, hits_by_id[cid].doc_id, hits_by_id[cid].effective, hits_by_id[cid].metadata)
                 for cid in citations if cid in hits_by_id]
        fresh = guards.check_freshness(cited, risk.level, cfg["guards"])
        ambiguity = guards.check_ambiguity(
            question, facts_b, self.analyzer, cfg["clarify"], cfg["guards"],
            context={cid: (h.heading, h.title) for cid, h in hits_by_id.items()},
            anchor=citations, retrieval=retrieval, bridges=bridges)
        low = guards.low_confidence(len(retrieval.hits), answer.refused or not answer.sentences,
                                    answer.reasons, cfg["guards"])
        # 6. decision
        verdict = decision_mod.decide(decision_mod.Signals(
            citation_errors=check.errors, conflicts=pairs, low_confidence=low, risk=risk.level,
            stale_sources=fresh.sources, as_of=fresh.as_of, ambiguity_kind=ambiguity.kind,
            ambiguity_detail=ambiguity.detail))
        t3 = clock()
        # 7. trace row
        if verdict.decision == decision_mod.ANSWER:
            claim, shipped = answer.claim(self.refusal), citations
            confidence = answer.confidence
        else:
            claim, shipped, confidence = self.refusal, [], "Low"
        timing = None
        if timings:
            timing = {"retrieve": _ms(t1 - t0), "answer": _ms(t2 - t1), "guards": _ms(t3 - t2),
                      "total": _ms(t3 - t0)}
        row = build_row(
            qid=qid, question=asked, hits=retrieval.hits, claim=claim, citations=shipped,
            cited_chunks={cid: hits_by_id[cid].text for cid in shipped if cid in hits_by_id},
            decision=verdict.decision, reasons=verdict.reasons, message=verdict.message,
            confidence=confidence, fallback_used=retrieval.fallback_used,
            expansions=retrieval.expansions, corrections=retrieval.corrections,
            risk=risk.to_json(), conflicts=[c.compact() for c in pairs],
            signals=retrieval.signals, timings_ms=timing, doc_scope=doc_scope)
        return Result(row, retrieval, facts_a, facts_b, answer, verdict, check, validator_errors)


def _raw_citations(payload: Any):
    """(citations, sentences) as the generator declared them; ([], []) for a refusal.

    A generator's own refusal (``"refused": true``) declares nothing, whatever rows it
    sent.  A row that is not an object, or has no string ``chunk_id``, is a missing
    citation (``None``) -- on a non-refusal that BLOCKs.
    """
    if not isinstance(payload, dict) or payload.get("refused") is True:
        return [], []
    rows = payload.get("answer_sentences")
    if not isinstance(rows, list):
        return [], []
    cites, sentences = [], []
    for row in rows:
        if isinstance(row, dict):
            cid = row.get("chunk_id")
            cites.append(cid if isinstance(cid, str) and cid else None)
            s = row.get("sentence")
            sentences.append(s if isinstance(s, str) else "")
        else:
            cites.append(None)
            sentences.append("")
    return cites, sentences


def _ms(seconds: float) -> float:
    return round(seconds * 1000.0, 3)

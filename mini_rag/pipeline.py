"""The pipeline: one question in, one trace row out, every stage wired in order.

====  ==========================  ====================================================
step  stage                       module
====  ==========================  ====================================================
0     the question                ``question.analyze_question``, once: framing
                                  stripped (``framing.strip_framing``, ``[answer]
                                  strip_framing``; the trace keeps the question as
                                  asked), terms, typo corrections, idf, answer type,
                                  qualifiers, bridges; every later stage reads this
                                  record instead of analyzing the question again
1     retrieve                    ``retrieve.Retriever.retrieve`` -> Retrieval
2     phase A: facts              ``facts.phase_a``
3     phase B: filter             ``relevance.phase_b``
4     retrieval half              guards that need only the retrieval
                                  (``retrieval_half``): no hits, fewer than
                                  ``min_chunks``, no phase B evidence (what the
                                  authority scope and phase B's relevance filter left).
                                  When one fires the generator is **not called** and the
                                  row says ``decided_by: "retrieval"``
5     phase C: answer             the generator (``generator.get_generator``), its raw
                                  output then ``validate_synthesis`` (via
                                  ``generator.generate_answer``).  A generator failure
                                  (exit status, timeout, unparsable output) is that
                                  item's BLOCK ``generator_error:<kind>``, never the end
                                  of a run
6     answer half: guards         citations (on the generator's *raw* output, so a
                                  generator that cites what it was not given is BLOCKed
                                  rather than silently repaired), conflicts among the
                                  phase B facts, risk, freshness of the cited chunks,
                                  ambiguity, low confidence
7     decision                    ``decision.decide`` (seed 000's precedence)
8     trace row                   ``trace.build_row``; a non-ANSWER decision ships the
                                  refusal token (``[answer] refusal``) and no citations;
                                  ``decided_by`` names the half that decided,
                                  ``validation`` keeps the citation check and the
                                  validator's messages, each conflict pair keeps its
                                  evidence snippets
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

from .answer import answerability
from .guard import conflicts as conflicts_mod
from .guard import decision as decision_mod
from .guard import guards
from .answer.facts import phase_a
from .answer.generator import Generator, GeneratorError, generate_answer, get_generator
from .question import QuestionAnalysis, analyze_question
from .records import Fact, Hit, Retrieval
from .answer.relevance import analyzer_of, phase_b
from .answer.synthesize import Answer
from .indexing.background import answer_index, scoped_index, scoped_retriever
from .trace import build_row

__all__ = ["Pipeline", "Result", "conflict_json", "open_pipeline", "question_first", "retrieval_half",
           "validation_json"]


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
    generator_called: bool = False
    generator_error: str = ""          # GeneratorError.kind when the generator failed


class _Recorder(Generator):
    """Wraps a generator to keep its raw output for the citation guard."""

    def __init__(self, inner: Generator) -> None:
        self.inner = inner
        self.name = inner.name
        self.payload: Any = None
        self.calls = 0

    def generate(self, question, facts, context):
        self.calls += 1
        self.payload = self.inner.generate(question, facts, context)
        return self.payload


def _versions(hits) -> List[Tuple[str, str]]:
    """(old doc id, new doc id) for each hit whose metadata names ``superseded_by`` (front
    matter, or read from its text by corpus.py) or whose text says it supersedes another
    document (``versions_read["supersedes"]``)."""
    out = set()
    for v in conflicts_mod.doc_versions(hits).values():
        if v.successor:
            out.add((v.doc_id, v.successor))
        if v.predecessor:
            out.add((v.predecessor, v.doc_id))
    return sorted(out)


def _version_facts(question: str, facts: List[Fact], hits, guards_cfg: Dict[str, Any]) -> List[Fact]:
    """Phase B's facts without the ones of versions the question did not ask for
    (issue 17: "a question about the rule in force answers from the in-force version; a
    question that names an edition answers from that one").

    * The question names an edition (``conflicts.named_editions``) that a document among
      the hits has: facts of the *other* versions of that document (linked by
      ``superseded_by`` / ``supersedes`` or of one family) are dropped.
    * Else, when the question asks for the rule in force (``conflicts.asks_in_force``) or
      ``[guards] conflicts_with_superseded`` is false: facts of a document no longer in
      force are dropped when a version of it that is in force has facts too (when only the
      old version speaks to the question it stays, and the freshness guard says so).

    Facts keep their order; nothing is dropped when no document has version information.
    """
    dv = conflicts_mod.doc_versions(hits)
    if not facts or not any(v.successor or v.predecessor or not v.in_force for v in dv.values()):
        return facts
    present = {f.pdf for f in facts}

    def kin(a, b) -> bool:
        return (b.doc_id in (a.successor, a.predecessor) or a.doc_id in (b.successor, b.predecessor)
                or (a.family != "" and a.family == b.family and a.editions != b.editions))

    named = conflicts_mod.named_editions(question)
    chosen = [v for v in dv.values() if v.doc_id in present and v.editions & named
              and any(kin(v, o) for o in dv.values() if o is not v)]
    if chosen:
        drop = {o.doc_id for o in dv.values() if o not in chosen and any(kin(c, o) for c in chosen)}
    elif conflicts_mod.asks_in_force(question) or not guards_cfg.get("conflicts_with_superseded", True):
        drop = {v.doc_id for v in dv.values() if not v.in_force and any(
            o.in_force and o.doc_id in present and kin(v, o) for o in dv.values())}
    else:
        return facts
    kept = [f for f in facts if f.pdf not in drop]
    return kept if kept else facts


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
            from .search.retrieve import open_retriever
            retriever = open_retriever(config)
        self.retriever = retriever
        self.index = getattr(retriever, "index", None)
        # what the answering stages read as the index: itself, or per question the view of its
        # document ([answer] term_weights, indexing/background.scoped_index); retrieval keeps the index
        self.weights = answer_index(self.index, config)
        self.analyzer = analyzer_of(self.index, config)
        self.generator = generator if generator is not None else get_generator(config, self.index)
        self.refusal = config["answer"]["refusal"]
        guards.parse_date(config["guards"]["as_of"], "config [guards] as_of")   # fail early
        self._markup: Optional[frozenset] = None

    @property
    def markup_docs(self) -> frozenset:
        """The documents whose sentences are shipped as plain text (Markdown and reST files,
        ``trace.markup_documents`` of ``[index] path``; read once)."""
        if getattr(self, "_markup", None) is None:
            from .trace import markup_documents
            self._markup = markup_documents(self.config["index"]["path"])
        return self._markup

    def analyze(self, question: str, doc_scope: Optional[str] = None) -> QuestionAnalysis:
        """The :class:`~mini_rag.question.QuestionAnalysis` of ``question`` (as asked) that
        :meth:`answer` builds first, with this pipeline's analyzer, index (its term weights for
        ``doc_scope``: ``background.scoped_index``) and retriever."""
        return analyze_question(question, self.analyzer, scoped_index(self.weights, doc_scope), self.config,
                                retriever=scoped_retriever(self.retriever, self.weights, doc_scope))

    def _retrieve(self, qa: QuestionAnalysis,
                  doc_scope: Optional[str]) -> Tuple[Retrieval, QuestionAnalysis]:
        """Step 1: the retriever's ``retrieve`` of ``qa.text`` (given ``qa`` when it takes
        it), and ``qa`` -- analyzed again with the retrieval's typo corrections when a
        retriever that does not take ``qa`` (a test stub) corrected on its own."""
        kwargs: Dict[str, Any] = {"doc_scope": doc_scope} if doc_scope else {}
        if getattr(self.retriever, "accepts_analysis", False):
            kwargs["qa"] = qa
        retrieval = self.retriever.retrieve(qa.text, **kwargs)
        if retrieval.corrections != qa.corrections:
            qa = analyze_question(qa.asked, self.analyzer, scoped_index(self.weights, doc_scope), self.config,
                                  corrections=retrieval.corrections)
        return retrieval, qa

    def facts(self, question: str, retrieval: Retrieval, qa: QuestionAnalysis,
              doc_scope: Optional[str] = None) -> Tuple[List[Fact], List[Fact]]:
        """Steps 2-3: phase A's facts, and phase B's without the versions the question did
        not ask for (:func:`_version_facts`)."""
        facts_a = phase_a(retrieval)
        facts_b = phase_b(question, facts_a, retrieval, scoped_index(self.weights, doc_scope), self.config, qa=qa)
        return facts_a, _version_facts(question, facts_b, retrieval.hits, self.config["guards"])

    def conflicts(self, question: str, facts_a: List[Fact], retrieval: Retrieval,
                  qa: QuestionAnalysis, citations: List[str], doc_scope: Optional[str] = None) -> List[Any]:
        """The conflict guard's pairs among every accepted hit (phase A), about what the
        answer cites (``citations``), with the version and subject rules of conflicts.py."""
        cfg = self.config
        weights = scoped_index(self.weights, doc_scope)
        return conflicts_mod.find_conflicts(
            qa.terms, facts_a, self.analyzer, cfg["guards"], cfg["clarify"],
            context={h.chunk_id: "%s\n%s" % (h.heading, h.title) for h in retrieval.hits},
            question=question, anchor=citations, versions=_versions(retrieval.hits), bridges=qa.bridges,
            doc_versions=conflicts_mod.doc_versions(retrieval.hits), idf=getattr(weights, "idf", None))

    def answer(self, question: str, qid: str = "", timings: bool = False,
               doc_scope: Optional[str] = None) -> Result:
        """Answer ``question``; ``doc_scope`` (a doc_id) restricts retrieval to one document."""
        cfg = self.config
        clock = time.perf_counter if timings else (lambda: 0.0)
        t0 = clock()
        asked = question
        # 0. the question, analyzed once ("Hi there! ... Thanks!" stripped: framing.py)
        qa = self.analyze(asked, doc_scope)
        question = qa.text
        # 1. retrieve
        retrieval, qa = self._retrieve(qa, doc_scope)
        t1 = clock()
        # 2-3. phase A, phase B
        facts_a, facts_b = self.facts(question, retrieval, qa, doc_scope)
        # 4. the retrieval half decides first: the generator is only called when it may answer
        early = retrieval_half(len(retrieval.hits), facts_b, cfg["guards"])
        # 5. phase C through the generator, raw output kept
        recorder = _Recorder(self.generator)
        failure: Optional[GeneratorError] = None
        validator_errors: List[str] = []
        if early is not None:
            answer = Answer(sentences=[], confidence="Low", refused=True,
                            reasons=[] if facts_b else ["no_evidence"])
        else:
            try:
                context: Dict[str, Any] = {"retrieval": retrieval, "config": cfg, "analysis": qa,
                                           "index": scoped_index(self.weights, doc_scope)}
                if doc_scope and cfg["answer"].get("scope_relative", True) and self.generator.name == "extractive" \
                        and self.weights is self.index:
                    # rule 2b of synthesize.py: the question retrieved over the whole corpus, for
                    # what the other documents hold of it (retrieved only if rule 2 asks); not
                    # with background term weights, whose decisions do not depend on other documents
                    context["reference"] = lambda: self._retrieve(qa, None)[0]
                answer, validator_errors = generate_answer(
                    recorder, question, facts_b, context, int(cfg["answer"]["max_sentences"]))
            except GeneratorError as exc:
                failure = exc
                answer = Answer(sentences=[], confidence="Low", refused=True, reasons=["generator_error"])
            else:
                if cfg["answer"].get("answerability", False) and self.generator.name == "extractive":
                    # The fitted model weighs phase C's choice against every sentence of the
                    # best hits and decides whether to ship (answerability.py).
                    answer = answerability.decide(question, retrieval, answer, self.index, self.analyzer,
                                                  config=cfg, qa=qa)
                    recorder.payload = {"refused": answer.refused, "answer_sentences": [
                        {"sentence": s.sentence, "chunk_id": s.chunk_id} for s in answer.sentences]}
        t2 = clock()
        # 6. the answer half: guards
        hits_by_id: Dict[str, Hit] = {h.chunk_id: h for h in retrieval.hits}
        raw_citations, raw_sentences = _raw_citations(recorder.payload)
        check = guards.validate_citations(
            raw_citations, [h.chunk_id for h in retrieval.hits], is_refusal=not raw_citations,
            max_citations=int(cfg["guards"]["max_citations"]), sentences=raw_sentences,
            chunk_texts={cid: h.text for cid, h in hits_by_id.items()}, analyzer=self.analyzer)
        q_terms, bridges = qa.terms, qa.bridges
        citations = answer.citations()
        pairs = self.conflicts(question, facts_a, retrieval, qa, citations, doc_scope)
        risk = guards.classify_risk(question, self.analyzer, cfg["risk"], terms=qa.analyzed)
        cited = [(cid, hits_by_id[cid].doc_id, hits_by_id[cid].effective, hits_by_id[cid].metadata)
                 for cid in citations if cid in hits_by_id]
        fresh = guards.check_freshness(cited, risk.level, cfg["guards"], question=question)
        ambiguity = guards.check_ambiguity(
            question, facts_b, self.analyzer, cfg["clarify"], cfg["guards"],
            context={cid: (h.heading, h.title) for cid, h in hits_by_id.items()},
            anchor=citations, retrieval=retrieval, bridges=bridges, qa=qa)
        low = early if early is not None else guards.low_confidence(
            len(retrieval.hits), answer.refused or not answer.sentences, answer.reasons, cfg["guards"])
        # 7. decision
        pairs = question_first(pairs, q_terms, self.analyzer, citations)
        verdict = decision_mod.decide(decision_mod.Signals(
            citation_errors=check.errors, conflicts=pairs, low_confidence=low, risk=risk.level,
            stale_sources=fresh.sources, as_of=fresh.as_of, ambiguity_kind=ambiguity.kind,
            ambiguity_detail=ambiguity.detail))
        if failure is not None:
            verdict = generator_failed(failure)
        t3 = clock()
        # 8. trace row
        if verdict.decision == decision_mod.ANSWER:
            claim, shipped = answer.claim(self.refusal, self.markup_docs), citations
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
            risk=risk.to_json(), conflicts=[conflict_json(c) for c in pairs],
            signals=retrieval.signals, timings_ms=timing, doc_scope=doc_scope,
            decided_by="retrieval" if early is not None else "answer",
            validation=validation_json(check, validator_errors, failure), joined=retrieval.joined)
        return Result(row, retrieval, facts_a, facts_b, answer, verdict, check, validator_errors,
                      generator_called=recorder.calls > 0,
                      generator_error=failure.kind if failure is not None else "")


def _raw_citations(payload: Any):
    """(citations, sentences) as the generator declared them; ([], []) for a refusal.

    A generator's own refusal (``"refused": true``) declares nothing, whatever rows it
    sent.  A row that is not an object, or has no string ``chunk_id``, is a missing
    citation (``None``) -- on a non-refusal that BLOCKs.  Sentences citing the same chunk
    share it (generator.py's sentence/citation rule): one citation, their texts joined.
    """
    if not isinstance(payload, dict) or payload.get("refused") is True:
        return [], []
    rows = payload.get("answer_sentences")
    if not isinstance(rows, list):
        return [], []
    cites, sentences = [], []
    slot: Dict[str, int] = {}
    for row in rows:
        if isinstance(row, dict):
            cid = row.get("chunk_id")
            s = row.get("sentence")
            s = s if isinstance(s, str) else ""
            if isinstance(cid, str) and cid in slot:
                sentences[slot[cid]] += " " + s
                continue
            cites.append(cid if isinstance(cid, str) and cid else None)
            sentences.append(s)
            if cites[-1] is not None:
                slot[cid] = len(cites) - 1
        else:
            cites.append(None)
            sentences.append("")
    return cites, sentences


def _ms(seconds: float) -> float:
    return round(seconds * 1000.0, 3)


# ------------------------------------------------------------------ the two halves

def retrieval_half(hit_count: int, facts_b: List[Fact], guards_cfg: Dict[str, Any]) -> Optional[List[str]]:
    """The low-confidence reasons the retrieval alone gives, or None to call the generator.

    Decides before generation when nothing could be answered: no accepted hit, fewer than
    ``[guards] min_chunks``, or no phase B fact (the authority scope and phase B's
    relevance filter left no evidence).  The reasons are the ones the answer half would
    give for the same item (``no_hits``, ``too_few_hits``, ``answer_refused:no_evidence``),
    so deciding early changes no trace but ``decided_by``.
    """
    early = guards.low_confidence(hit_count, not facts_b, ["no_evidence"], guards_cfg)
    return early or None


def generator_failed(exc: GeneratorError) -> decision_mod.Decision:
    """BLOCK ``generator_error:<kind>``: no answer text came back that could be checked."""
    return decision_mod.Decision(
        decision_mod.BLOCK, ["generator_error:%s" % exc.kind],
        "I can't provide an answer because the answer generator failed (%s)." % exc.kind.replace("_", " "))


#: A conflict pair is *about the question* when both snippets hold at least this share of
#: the question's terms.
ABOUT_QUESTION_SHARE = 0.5


def question_first(pairs: List[Any], q_terms: List[str], analyzer: Any, cited: List[str]) -> List[Any]:
    """Conflict pairs, the ones about the question first (the message names the first).

    Two classes go first, in this order: a pair with a side the answer cites, and a
    pair about the question (both snippets hold at least :data:`ABOUT_QUESTION_SHARE`
    of the question's distinct terms).  Within a class the detector's order (chunk ids)
    is kept: a stable sort on two yes/no keys.
    """
    if len(pairs) < 2:
        return list(pairs)
    wanted = set(q_terms)
    need = ABOUT_QUESTION_SHARE * len(wanted)
    cited_set = set(cited)

    def key(pair: Any) -> Tuple[bool, bool]:
        both = wanted & set(analyzer.analyze(pair.snippet_a)) & set(analyzer.analyze(pair.snippet_b))
        return (not {pair.chunk_a, pair.chunk_b} & cited_set, not (wanted and len(both) >= need))
    return sorted(pairs, key=key)


def conflict_json(pair: Any) -> Dict[str, Any]:
    """A conflict pair in the trace: the compact form plus both evidence snippets."""
    out = pair.compact()
    out["evidence"] = {"a": pair.snippet_a, "b": pair.snippet_b}
    return out


def validation_json(check: guards.CitationCheck, validator_errors: List[str],
                    failure: Optional[GeneratorError] = None) -> Dict[str, Any]:
    """``{citation_valid, errors, warnings}`` (seed 000): the citation check's errors (and
    the generator's failure), its warnings and the contract validator's dropped rows."""
    errors = list(check.errors)
    if failure is not None:
        errors.append(str(failure))
    return {"citation_valid": check.valid and failure is None, "errors": errors,
            "warnings": list(check.warnings) + list(validator_errors)}


def open_pipeline(config: Dict[str, Any], quiet: bool = False, progress=None) -> Pipeline:
    """Open (or rebuild) the index, resolve ``as_of`` (``config.resolve_as_of``), and return
    the Pipeline (``run``, ``eval``, ``serve``)."""
    from .config import resolve_as_of
    from .search.retrieve import open_retriever
    retriever = open_retriever(config, progress=progress)
    resolve_as_of(config, retriever.index, quiet)
    return Pipeline(config, retriever=retriever)

"""The QA contract's two validators (seed 001) for JSON produced outside mini_rag.

A plugged-in generator (an LLM, a command, see ``generator.py``) may return phase B
``relevant_facts`` or phase C ``answer_sentences``.  Nothing it returns is trusted: these
validators keep only rows that point at evidence mini_rag itself retrieved, and report
every rejected row.  Both return ``(result, errors)``; they never raise on bad payloads
(a bad payload is the generator's failure, which the pipeline records and refuses on).

==============================================  =============================================
``validate_relevant_facts(payload, a_facts)``   ``(list[Fact], errors)``: ``_validate_relevant_facts``
``validate_synthesis(payload, b_facts, n=6)``   ``(Answer, errors)``: ``_validate_synthesis``
==============================================  =============================================

Rules of ``validate_relevant_facts`` (payload ``{"relevant_facts": [...]}``), in order:

1. the payload must be a JSON object and ``relevant_facts`` a list, else no facts;
2. each row must be an object with ``pdf`` (non-empty string), ``page`` (integer >= 1,
   not a boolean) and ``chunk_id`` (non-empty string), else the row is dropped;
3. the key ``(pdf, page, chunk_id)`` must be the key of a phase A fact, else dropped;
4. a key seen before in this payload is dropped (the first one is kept);
5. a kept row becomes the phase A fact itself: its ``score`` is inherited and its
   ``quote`` is the phase A quote (the row's own ``quote``, if any, is ignored, so an
   external filter cannot alter the evidence text).

Rules of ``validate_synthesis`` (payload ``{"answer_sentences": [...], "confidence": ...}``):

1. the payload must be a JSON object and ``answer_sentences`` a list, else refused;
2. each row must be an object with ``pdf``, ``page``, ``chunk_id`` as above and
   ``sentence`` (a string with a non-space character), else dropped;
3. the key must be the key of a phase B fact, else dropped;
4. a row repeating an earlier row's key *and* sentence is dropped (the first one is
   kept); two different sentences from one chunk are both kept and share its citation
   (the sentence/citation rule of ``generator.py``: at most 6 sentences, at most 5
   distinct cited chunks);
5. at most ``max_sentences`` (6) rows are accepted; later valid rows are dropped;
6. no accepted row -> a refused :class:`Answer` with reason ``no_valid_sentence``
   (shipped as the refusal text, ``Not found in provided PDFs`` in the contract);
7. ``confidence`` is normalized to ``High``, ``Medium`` or ``Low`` (case and surrounding
   white space ignored); anything else, or a missing value, becomes ``Low``.

The sentence text is kept as given (stripped of surrounding white space).  Whether it is
verbatim evidence is not the contract validator's question; the guards and the scorer's
hallucination check look at that.

>>> from mini_rag.records import Fact
>>> a = [Fact("Refunds take 5 days.", "refunds", 1, "refunds#p2", 0.75)]
>>> facts, errors = validate_relevant_facts(
...     {"relevant_facts": [{"pdf": "refunds", "page": 1, "chunk_id": "refunds#p2"},
...                         {"pdf": "refunds", "page": "1", "chunk_id": "refunds#p2"}]}, a)
>>> [f.score for f in facts], errors
([0.75], ["relevant_facts[1]: page must be an integer >= 1, got '1'"])
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ..records import Fact
from .synthesize import Answer, AnswerSentence, CONFIDENCE_LEVELS

__all__ = ["validate_relevant_facts", "validate_synthesis", "normalize_confidence"]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _row_key(row: Any, where: str, errors: List[str], need_sentence: bool) -> Optional[tuple]:
    """The row's ``(pdf, page, chunk_id)``, or None after appending why it is invalid."""
    if not isinstance(row, dict):
        errors.append("%s: must be an object, got %s" % (where, _short(row)))
        return None
    bad = len(errors)
    pdf, page, chunk_id = row.get("pdf"), row.get("page"), row.get("chunk_id")
    if not isinstance(pdf, str) or not pdf.strip():
        errors.append("%s: pdf must be a non-empty string, got %s" % (where, _short(pdf)))
    if isinstance(page, bool) or not isinstance(page, int) or page < 1:
        errors.append("%s: page must be an integer >= 1, got %s" % (where, _short(page)))
    if not isinstance(chunk_id, str) or not chunk_id.strip():
        errors.append("%s: chunk_id must be a non-empty string, got %s" % (where, _short(chunk_id)))
    if need_sentence:
        sentence = row.get("sentence")
        if not isinstance(sentence, str) or not sentence.strip():
            errors.append("%s: sentence must be a non-empty string, got %s" % (where, _short(sentence)))
    if len(errors) > bad:
        return None
    return (pdf, page, chunk_id)


def _rows(payload: Any, name: str, errors: List[str]) -> Optional[list]:
    if not isinstance(payload, dict):
        errors.append("payload must be a JSON object with %r, got %s" % (name, _short(payload)))
        return None
    rows = payload.get(name)
    if not isinstance(rows, list):
        errors.append("%s must be a list, got %s" % (name, _short(rows)))
        return None
    return rows


def _key_text(key: tuple) -> str:
    return "(pdf=%r, page=%d, chunk_id=%r)" % key


def validate_relevant_facts(payload: Any, phase_a_facts: List[Fact]) -> Tuple[List[Fact], List[str]]:
    """The contract's ``_validate_relevant_facts``: see the module docstring's rules 1-5.

    Returns the accepted facts in payload order and one message per rejected row.
    """
    errors: List[str] = []
    rows = _rows(payload, "relevant_facts", errors)
    if rows is None:
        return [], errors
    known: Dict[tuple, Fact] = {}
    for fact in phase_a_facts:
        known.setdefault(fact.key(), fact)
    out: List[Fact] = []
    seen = set()
    for i, row in enumerate(rows):
        where = "relevant_facts[%d]" % i
        key = _row_key(row, where, errors, need_sentence=False)
        if key is None:
            continue
        if key not in known:
            errors.append("%s: %s is not a phase A fact" % (where, _key_text(key)))
            continue
        if key in seen:
            errors.append("%s: duplicate %s dropped" % (where, _key_text(key)))
            continue
        seen.add(key)
        out.append(known[key])
    return out, errors


def normalize_confidence(value: Any) -> Optional[str]:
    """``High``/``Medium``/``Low`` for any casing and surrounding space, else None."""
    if isinstance(value, str):
        wanted = value.strip().lower()
        for level in CONFIDENCE_LEVELS:
            if level.lower() == wanted:
                return level
    return None


def validate_synthesis(payload: Any, phase_b_facts: List[Fact],
                       max_sentences: int = 6) -> Tuple[Answer, List[str]]:
    """The contract's ``_validate_synthesis``: see the module docstring's rules 1-7.

    Returns the :class:`Answer` (refused with reason ``no_valid_sentence`` when no row is
    accepted) and one message per rejected row or normalized value.
    """
    errors: List[str] = []
    rows = _rows(payload, "answer_sentences", errors)
    confidence = "Low"
    if isinstance(payload, dict):
        raw = payload.get("confidence")
        confidence = normalize_confidence(raw) or "Low"
        if normalize_confidence(raw) is None:
            errors.append("confidence must be High, Medium or Low, got %s; using Low" % _short(raw))
    known = set(f.key() for f in phase_b_facts)
    sentences: List[AnswerSentence] = []
    seen = set()
    for i, row in enumerate(rows or []):
        where = "answer_sentences[%d]" % i
        key = _row_key(row, where, errors, need_sentence=True)
        if key is None:
            continue
        if key not in known:
            errors.append("%s: %s is not a phase B fact" % (where, _key_text(key)))
            continue
        text = row["sentence"].strip()
        if (key, text) in seen:
            errors.append("%s: duplicate %s dropped" % (where, _key_text(key)))
            continue
        if len(sentences) >= max_sentences:
            errors.append("%s: more than %d sentences, dropped" % (where, max_sentences))
            continue
        seen.add((key, text))
        sentences.append(AnswerSentence(sentence=row["sentence"].strip(), pdf=key[0],
                                        page=key[1], chunk_id=key[2]))
    if not sentences:
        return Answer(sentences=[], confidence="Low", refused=True,
                      reasons=["no_valid_sentence"]), errors
    return Answer(sentences=sentences, confidence=confidence), errors

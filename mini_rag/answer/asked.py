"""The asked value (issue 30, item 2): what kind of value a question asks for, and whether a
sentence states one near the question's focus.

A sentence that names the topic but not the asked kind of value does not answer the
question ("What is the fee for a late return?" is not answered by "A fee may be charged
under the agreement").  ``synthesize.value_match`` already asks whether a sentence states a
value of the question's type *anywhere*; this module adds

* :func:`asked_kind`: the kind of value asked, from the question part's text and its
  ``question_type`` (``synthesize.question_type``): ``amount``, ``duration``, ``count``,
  ``date``, ``time``, ``code`` (a form, code or reference number), ``person`` (a person,
  role or organization), ``place``, ``yesno`` or ``procedure``; None when the question asks
  for no particular kind (a "what" about a thing);
* :func:`value_spans`: where a sentence states a value of that kind (character spans; a
  value made only of the question's own words does not count, as in ``value_match``);
* :func:`near_focus`: whether one of those values lies within ``window`` words of a focus
  term of the question (its key terms, as the sentence writes them or a bridge of them).

The window is fitted on the fit halves (``mini_rag/data/asked_value.json``, with the command
that produced it); phase C uses both as a ranking feature and as a guard (see
``synthesize._answer_part``, rule 3b).

>>> asked_kind("Where was the treaty signed?", None), asked_kind("What time does the office open?", "date")
('place', 'time')
>>> asked_kind("Which form must be filed?", None), asked_kind("How many seats are there?", "number")
('code', 'count')
"""
from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, FrozenSet, List, Optional, Sequence, Tuple

from . import values

__all__ = ["KINDS", "asked_kind", "value_spans", "near_focus", "focus_gap", "load_params", "DATA_FILE"]

#: The kinds of value a question may ask for.
KINDS = ("amount", "duration", "count", "date", "time", "code", "person", "place", "yesno", "procedure")

DATA_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "asked_value.json")

_I = re.IGNORECASE
_TIME_Q = re.compile(r"\b(?:what|which)\s+time\s+(?:of\s+(?:the\s+)?day\s+)?(?:do|does|did|is|are|will|should|must|can)\b|"
                     r"\bat\s+what\s+(?:time|hour)\b|\bwhat\s+hours?\b|\b(?:opening|closing|business|office)\s+hours\b", _I)
_CODE_Q = re.compile(r"\b(?:which|what)\s+(?:\w+\s+){0,2}?(?:form|forms|code|codes|template|reference|"
                     r"identifier|id|ticket\s+type|document\s+number|form\s+number|section|clause|article|"
                     r"standard|regulation)\b", _I)
_PLACE_Q = re.compile(r"^\W*where\b|[,;]\s*where\b|\bwhere\s+(?:is|are|was|were|do|does|did|can|should|must|"
                      r"will|would|could)\b|"
                      r"\b(?:which|what)\s+(?:\w+\s+)?(?:country|countries|city|cities|state|states|region|"
                      r"regions|place|places|location|locations|continent|island|river|town|province|county|"
                      r"nation|area|site|building|office|address)\b", _I)
_PROCEDURE_Q = re.compile(r"^\W*how\s+(?:do|does|did|can|could|should|would|to|must|may|is|are)\b(?!\s+(?:much|many|long|often))|"
                          r"\bwhat\s+(?:\w+\s+)?(?:steps?|procedure|process)\b|\bhow\s+to\b", _I)
#: question_type -> kind, when no cue above says otherwise.
_FROM_TYPE = {"amount": "amount", "duration": "duration", "frequency": "duration", "date": "date",
              "number": "count", "percentage": "count", "person": "person", "organization": "person",
              "polarity": "yesno"}


def asked_kind(part: str, question_type: Optional[str]) -> Optional[str]:
    """The kind of value ``part`` asks for (one of :data:`KINDS`), None when none in particular.

    The cues, first match wins: a time of day ("what time", "at what hour", "opening
    hours"), a form or code ("which form", "what code"), a place ("where", "which
    country / city / office"), a procedure ("how do I", "what steps"); else the
    ``question_type``'s kind (frequency is a duration, a percentage a count, an
    organization a person or role).
    """
    if _TIME_Q.search(part):
        return "time"
    if question_type in ("amount", "duration", "frequency", "percentage", "number"):
        return _FROM_TYPE[question_type]
    if _CODE_Q.search(part):
        return "code"
    if _PLACE_Q.search(part):
        return "place"
    if question_type in _FROM_TYPE:
        return _FROM_TYPE[question_type]
    if _PROCEDURE_Q.search(part):
        return "procedure"
    return None


_TIME_OF_DAY = re.compile(r"\b\d{1,2}[:.]\d{2}\b|\b\d{1,2}\s*(?:a\.m\.|p\.m\.|am\b|pm\b|o'clock\b)|"
                          r"\b(?:noon|midday|midnight|morning|afternoon|evening|night|overnight)\b", _I)
#: A code: a word of letters and digits starting with a letter ("SUP-12", "W-9", "Q3D"; a
#: match without a digit is dropped by value_spans), or a form / section number after its name.
#: Every run is bounded, so the scan stays linear.
_CODE = re.compile(r"\b(?:form|section|clause|article|code|schedule|appendix|annex|exhibit)\s{1,5}[A-Z0-9][\w.-]{0,40}|"
                   r"(?<![\w-])[A-Za-z][\w-]{0,40}(?![\w-])")
_PLACE = re.compile(r"\b(?:in|at|from|to|near|across|throughout|within|outside|inside|into|on)\s+(?:the\s+)?"
                    r"[A-Z][\w'-]+|(?<=[a-z,;:)]\s)[A-Z][a-z][\w'-]*|\b(?:online|remotely|on[\s-]site|"
                    r"headquarters|office|offices|portal|website|intranet)\b")
_PROCEDURE = re.compile(r"\b(?:must|should|shall|may|can|need\s+to|needs\s+to|has\s+to|have\s+to|is\s+to|are\s+to|"
                        r"by\s+\w+ing|through|via|using|submit\w*|send\w*|contact\w*|complete\w*|file[sd]?|"
                        r"request\w*|apply|applies|applied|fill\w*|call\w*|email\w*|log\w*|sign\w*)\b|"
                        r"^\s*(?:[-*\u2022]|\d{1,2}[.)])\s", _I)


def _pattern(kind: str):
    """The compiled pattern of the kinds this module reads itself; None for the others."""
    return {"time": _TIME_OF_DAY, "code": _CODE, "place": _PLACE, "procedure": _PROCEDURE}.get(kind)


_WORD = re.compile(r"\w+")


def value_spans(kind: Optional[str], sentence: str, echo: FrozenSet[str] = frozenset()) -> List[Tuple[int, int]]:
    """``(start, end)`` of each value of ``kind`` that ``sentence`` states, a value made only of
    the question's own words (``echo``) excluded.  The kinds ``synthesize`` already reads
    (amount, duration, count, date, person, yesno) use its patterns (``values.py``); a
    ``count`` is any number, a ``person`` a role word or a name."""
    if kind is None:
        return []
    if kind == "amount":
        pats = [values.CURRENCY]
    elif kind == "duration":
        pats = [values.DURATION, values.FREQUENCY]
    elif kind == "count":
        pats = [values.NUMBER, values.PERCENT]
    elif kind == "date":
        pats = [values.DATE, values.DURATION]
    elif kind == "person":
        pats = [values.ROLE, values.PROPER]
    elif kind == "yesno":
        pats = [values.POLARITY]
    else:
        pats = [_pattern(kind)]
    out = []
    for pat in pats:
        for m in pat.finditer(sentence):
            if kind == "code" and not any(c.isdigit() for c in m.group(0)):
                continue
            words = _WORD.findall(m.group(0))
            if words and all(w.casefold() in echo for w in words):
                continue
            out.append((m.start(), m.end()))
    if kind == "amount" and not out and values.PRICE_WORD.search(sentence):
        out = [(m.start(), m.end()) for m in values.NUMBER.finditer(sentence)
               if not all(w.casefold() in echo for w in _WORD.findall(m.group(0)))]
    return sorted(set(out))


def near_focus(kind: Optional[str], sentence: str, focus: Sequence[str], analyzer: Any, window: int,
               echo: FrozenSet[str] = frozenset(), bridges: Optional[Dict[str, Any]] = None) -> Optional[bool]:
    """Does ``sentence`` state a value of ``kind`` within ``window`` words of a focus term?
    (:func:`focus_gap` at most ``window``; see there.)  None when no kind is asked."""
    if kind is None:
        return None
    gap = focus_gap(kind, sentence, focus, analyzer, echo, bridges)
    return gap is not None and gap <= window


def focus_gap(kind: str, sentence: str, focus: Sequence[str], analyzer: Any,
              echo: FrozenSet[str] = frozenset(), bridges: Optional[Dict[str, Any]] = None) -> Optional[int]:
    """The fewest words between a value of ``kind`` that ``sentence`` states and a focus term.

    ``focus``: the question's key terms (analyzed); a word of the sentence is a focus word
    when it analyzes to one of them or to every term of one of their one-term bridges.
    Returns the fewest words between a value of ``kind`` and a focus word (0 when they
    touch or overlap); None when the sentence states no value of the kind; 0 when it names
    no focus term (a pronoun refers back: "It lasts 30 days"; then any value counts)."""
    spans = value_spans(kind, sentence, echo)
    if not spans:
        return None
    stand = set(focus)
    for t in focus:
        for alt in (bridges or {}).get(t, ()):
            if len(alt) == 1:
                stand.update(alt)
    words = [(m.start(), m.end()) for m in _WORD.finditer(sentence)]
    marks = [i for i, (a, b) in enumerate(words) if any(t in stand for t in analyzer.analyze(sentence[a:b]))]
    if not marks:
        return 0
    best = len(words)
    for a, b in spans:
        inside = [i for i, (wa, wb) in enumerate(words) if wa < b and wb > a]
        if not inside:
            inside = [min(range(len(words)), key=lambda i: abs(words[i][0] - a))] if words else [0]
        lo, hi = min(inside), max(inside)
        for i in marks:
            best = min(best, 0 if lo <= i <= hi else (lo - i - 1 if i < lo else i - hi - 1))
    return best


_PARAMS: Dict[str, Any] = {}


def load_params(path: str = DATA_FILE) -> Dict[str, Any]:
    """The fitted numbers of ``asked_value.json`` (``window``, the kinds the guard applies to),
    read once; the defaults when the file is absent."""
    if path not in _PARAMS:
        params = {"window": 8, "guard_kinds": [], "feature_kinds": []}
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as fh:
                params.update(json.load(fh))
        _PARAMS[path] = params
    return _PARAMS[path]

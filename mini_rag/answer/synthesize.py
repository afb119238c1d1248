"""Phase C of the QA contract (seed 001): choose answer sentences, copied verbatim, or refuse.

The extractive, rule-based claim generator.  Its output has the contract's phase C shape
(``answer_sentences`` with one citation each, ``confidence``), the same shape an LLM
plugged in through ``generator.py`` must return.

==============================================  ==============================================
``phase_c(question, facts, retrieval, index,    :class:`Answer`: sentences or a refusal
config)``
``split_sentences(text)``                       verbatim sentence units of a chunk text
``question_type(question)``                     expected answer type, see the cue table
``value_match(kind, sentence)``                 1.0 / 0.5 / 0.0: does a sentence state one?
``split_question(question)``                    the parts of a two-part question
``format_answer(answer, refusal)``              the contract's text form
``AnswerSentence``, ``Answer``                  the records (``to_json``)
==============================================  ==============================================

Rules, in order, for each part of the question (``split_question``: a question splits at
``?`` and ``;`` and before ``and``/``but``/``or`` followed by a question word or an
auxiliary verb, so "What is X and does it apply to Y?" has two parts):

1. Terms.  ``Q`` = the part's content terms (``relevance.question_terms``: analyzed,
   typo-corrected, question scaffold removed), weighted by idf (``Index.idf``), a term
   no higher than its commonest one-word synonym (``_concept_weights``: "staff member"
   weighs what "employee" does, so a paraphrase does not make key terms of plain
   words).  A term no chunk contains (df = 0) is *unknown*: the asker's own word, which no document can
   match.  No content terms -> refuse ``no_question_terms``.
   Names: a word of the question written as a name or code (a capital not at the
   start, an acronym, a digit: ``Germany``, ``HIPAA``, ``Q3D``) whose terms are all
   unknown -> refuse ``unknown_name`` (``unknown_names``): the question is about
   something the corpus never mentions.  Likewise the subject of "is there / are there"
   (``unknown_subject``): "Is there parking available at the Leeds office?" -> refuse
   ``unknown_subject`` when no chunk uses "parking", however well "Leeds office" matches.
   Before all this, a request for a joke, poem, story, song or riddle (``is_task_request``)
   -> refuse ``task_request``: no document answers it.
   The *key terms* ``K`` are the known terms of ``Q`` whose idf is at least ``[answer]
   key_idf_ratio`` (0.6) times the largest idf among them: the rarest terms the corpus
   knows, which carry what the question is specifically about.  Never key (they still
   weigh in the question share): the answer's category (``category_terms``), light
   verbs, indefinite pronouns and vague quantities (``LIGHT_WORDS``: "come with", "get a
   laptop", "several records" is asked about records) and the
   words naming the asked type (``TYPE_WORDS``: "cost" in a "how much" question;
   "mandatory" or "allowed" in a yes/no question, answered by "must" or "are exempt").
2. Topic.  A fact is *on topic* when its chunk (its text, heading, document title and
   document scope statement, "This procedure covers requests ... under the GDPR":
   ``glossary.scope_table``; expansion rules bridge terms, see ``relevance``) holds an
   idf-weighted share of ``K`` of at least ``[answer] min_key_coverage`` (0.7) and a
   share of the whole of ``Q``, unknown terms included, of at least ``[answer]
   min_question_share`` (0.3).
   A number of the question is also held by a bound an evidence fact states that it
   satisfies ("a 50% discount" by "a discount of 40% or more": ``synonyms.range_bridges``).
   A question asking for a value (rule 3) may relax the first share to ``[answer]
   min_key_coverage_typed`` for a chunk with a sentence that states a value of the
   asked type (``value_match`` = 1) and holds that share of ``K`` by itself (with its
   chunk's heading, document title and scope statement, which scope it): "How long do
   we hang on to closed support tickets?" is answered by "Support tickets are kept for 24
   months after closure" though "hang" has no counterpart.  It is off by default (0.7, the
   same as ``min_key_coverage``): at 0.6 it answers 5 more baseline gold items, but on
   SQuAD 2.0 it answers more of the unanswerable near-misses than it recovers (pass
   rate 0.4558 -> 0.4529, precision 0.4194 -> 0.4181).
   2b. A question scoped to one document (``doc_scope``) with no fact on topic: its facts
   are also compared with the other documents' best hits for the same question, retrieved
   over the whole corpus (``phase_c``'s ``reference``).  A fact is on topic when it holds
   at least ``[answer] scope_min_key_coverage`` (0.5) of ``K`` and at least as much of
   ``K`` as the best of those hits (with their own question share of at least
   ``min_question_share``): when no document of the corpus states the question in its
   words, the asker paraphrased, and the scoped document is as close as the corpus comes
   ("Can information conveyed verbally ...?" against contracts that say "orally").  When
   another document holds more of ``K``, the words exist and this document lacks them: the
   refusal stands.  ``[answer] scope_relative = false`` turns it off; an unscoped question
   is never read this way.  (Issue 30, measured on ContractNLI's fit half, the only external
   set with scoped questions: over-refusal 0.654 -> 0.562, precision 0.576 -> 0.583,
   under-refusal 0.152 -> 0.157; see docs/answering.md.)
   No fact on topic -> refuse ``key_terms_not_covered`` (the near-miss rule: the corpus
   talks about the subject but not about the thing the question names; and a question
   mostly made of words the corpus never uses is not about the corpus).
3. Answer type.  When the question asks for a value (``question_type`` is ``number``,
   ``amount``, ``duration``, ``frequency``, ``date``, ``percentage`` or
   ``organization``) and no sentence of
   an on-topic fact states one (``value_match`` > 0) -> refuse ``answer_type_missing``.
   "How often" asks for a frequency ("every 3 months", "quarterly", "twice a year", "at
   each login"), not any duration: a "20-minute module" does not say how often.
   A value made only of the question's own words does not count (``Black Friday`` is
   not a date for "When does the Black Friday promotion start?"), nor does a digit
   inside a code (``SEV-1``, ``Q9``, ``SOP-MFG-007``: names, not numbers).
3b. The asked value (issue 30).  The question part's asked kind (``asked.asked_kind``, from
   the question analysis: amount, duration, count, date, time, code, person, place, yes/no,
   procedure) is in the trace's part detail (``asked_kind``).  For the kinds
   ``mini_rag/data/asked_value.json`` guards (fitted on the fit halves and gold by
   ``bench/fit_asked_value.py``), the chosen sentence must state a value of that kind within
   its ``window`` words of a question term that is not the answer's category or a light or
   type word (``asked.near_focus``): the best candidate scoring at
   least the best's score minus its ``margin`` that does is chosen, and when none does ->
   refuse ``asked_value_missing`` (the sentences name the topic, not the asked value).
   ``[answer] asked_value = false`` turns the rule off.
4. Score every sentence of every on-topic fact (headings, table rules and text-free
   units excluded, and glossary entries defining a term the question does not name:
   "**Service credit**: a discount given when Halvard misses an uptime commitment" says
   nothing about what uptime Halvard commits to) as the weighted sum (weights
   ``[answer] weight_*``, which sum to 1) of four parts, each in [0, 1]:

   * coverage = 0.7 x (idf-weighted share of ``Q`` in the sentence) + 0.3 x (the same
     share in its chunk, heading, title and scope statement): a sentence is judged
     mostly by its own words, partly by its chunk's, because pronouns refer back ("It
     lasts 30 days");
   * type = ``value_match`` of the expected type (1 when the question has no cue);
   * proximity = ``m / w`` for the ``m`` >= 2 distinct question terms in the sentence
     (a term is also found where the sentence holds a one-word bridge of it: "kept" for
     "retained") and ``w`` the length (in terms) of the shortest span containing all of them;
     0.5 for a single matched term, 0 for none;
   * retrieval = the fact's score (the hit's similarity).

   With a value-type question only sentences that state a value may be the first
   sentence; with a definition question ("What does RPO stand for?", "How does ICH Q9
   define risk?", "What is a legal hold?"), only sentences that define, when there are
   any: a definition verb (means, refers to, stands for, is defined as), an abbreviation
   beside its expansion, or a question word as the subject of "is a / is the" or of a
   glossary entry ("**Legal hold**: ...").  Ties: higher score, then earlier fact (retrieval rank), then earlier
   sentence.
5. Threshold.  The best sentence says its matter is undecided (``is_pending``: "is
   being reviewed", "not yet final", "are planned") -> refuse ``answer_pending``: the
   documents mention the subject and say there is no answer yet.  The best sentence
   sends the reader elsewhere (``is_deferral``: "is not summarized here", "have their
   own quotas") -> refuse ``answer_elsewhere``.  The best score below
   ``[answer] min_score`` (0.3) -> refuse ``below_threshold``.
6. More sentences.  Another candidate is added, best first, when its score is within
   ``[answer] extra_sentence_margin`` (0.15) of the best and it contains a key term no
   chosen sentence contains; at most ``[answer] max_extra_sentences`` (2) per part.  A
   candidate that is a list's lead-in (ending with ``:``) is added only with an item of its
   list, right before it (``_add_extra``): never alone, never after its item.
   When the question asks for a whole list (``is_enumeration``: "What are the four
   elements of ...", "List the ...") and the best sentence is a list item, the answer is
   that list's items instead, in text order, at most ``[answer] max_sentences``.
   6b. A yes/no question answered by a rule (the best sentence states no exception) also
   gets the first sentence of the same document, in retrieval order, that states an
   exception or a condition (``is_exception``: except, unless, exempt, only if / with,
   provided that, does not apply, a sentence opening with "however") and shares a key
   term with the rule: "Is any connection allowed to use something other than TLS 1.2?"
   is answered by the rule and by "The only exception to the TLS requirement is ...".
7. Confidence (of the part): ``High`` when the best score is >= ``confidence_high``
   (0.7) and exceeds the runner-up sentence by >= ``confidence_margin`` (0.1);
   ``Medium`` when >= ``confidence_medium`` (0.45); else ``Low``.

The answer is the parts that were answered, in question order (the whole answer's
confidence is the lowest of theirs); it is refused only when no part is answered, with
each part's reason.  At most ``[answer] max_sentences`` (6) sentences in all, from at most
``[guards] max_citations`` (5) chunks, so the answer never fails citation validation.
Sentences of one chunk are emitted as one :class:`AnswerSentence` (joined with one
space, in text order) because the contract allows one row per ``(pdf, page,
chunk_id)``; each sentence is a verbatim substring of its fact's quote.

>>> split_sentences("Refunds take 2.5 days, e.g. for cards. See Sec. 4 below! Done?")
['Refunds take 2.5 days, e.g. for cards.', 'See Sec. 4 below!', 'Done?']
>>> [question_type(q) for q in ("How long are logs kept?", "When does it renew?",
...                             "How much does Pro cost?", "Can I export data?")]
['duration', 'date', 'amount', 'polarity']
"""
from __future__ import annotations

import functools
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Container, Dict, List, Optional, Sequence, Tuple

from ..records import Fact, Retrieval
from .facts import phase_a
from ..text.memo import text_memo
from ..text.shape import prose
from .relevance import (_AUX, Bridges, _hit_map, _scaffold, analyzer_of, chunk_context, covered,
                        expansion_bridges, question_terms, split_question, term_weights, weighted_share)
from ..query.glossary import entry_term, scope_table
from ..query.synonyms import Equivalent, Synonym, range_bridges
from . import asked as asked_mod
from . import docshape
from .values import (CALENDAR_DATE as _CALENDAR_DATE, CURRENCY as _CURRENCY, DATE as _DATE, DURATION as _DURATION,
                     FREQUENCY as _FREQUENCY, NUMBER as _NUMBER, PERCENT as _PERCENT, POLARITY as _POLARITY,
                     PRICE_WORD as _PRICE_WORD, PROPER as _PROPER, ROLE as _ROLE)

__all__ = ["AnswerSentence", "Answer", "phase_c", "split_sentences", "sentence_spans",
           "question_type", "cue_spelling", "CUE_WORDS", "value_match", "echo_words", "is_pending", "is_deferral", "is_task_request",
           "unknown_subject", "asked_subject", "unknown_names", "name_words", "split_question",
           "format_answer",
           "REFUSAL_REASONS", "CONFIDENCE_LEVELS", "VALUE_TYPES", "SENTENCE_SHARE"]

CONFIDENCE_LEVELS = ("High", "Medium", "Low")

#: Why phase C refused, in the order the rules test them.
REFUSAL_REASONS = ("task_request", "unknown_name", "unknown_subject", "no_evidence", "no_question_terms",
                   "key_terms_not_covered", "answer_type_missing", "asked_value_missing", "answer_pending",
                   "answer_elsewhere",
                   "below_threshold", "no_valid_sentence")

#: Question types that ask for a value; the others (definition, person, polarity) only rank.
VALUE_TYPES = ("number", "amount", "duration", "frequency", "date", "percentage", "organization")

#: Share of a sentence's coverage that comes from its own words (the rest: its chunk's).
SENTENCE_SHARE = 0.7


# ------------------------------------------------------------------ records

@dataclass
class AnswerSentence:
    """One answer sentence copied verbatim from a fact, with its one citation."""
    sentence: str
    pdf: str
    page: int
    chunk_id: str

    def key(self):
        return (self.pdf, self.page, self.chunk_id)

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class Answer:
    """Phase C output: the contract's ``answer_sentences`` + ``confidence``, plus why.

    ``refused`` is True when no sentence is shipped; ``reasons`` then names why (see
    REFUSAL_REASONS).  ``detail`` carries the numbers the outcome rested on (terms, key
    terms, coverage, question type, scores) for the trace.
    """
    sentences: List[AnswerSentence]
    confidence: str = "Low"
    refused: bool = False
    reasons: List[str] = field(default_factory=list)
    detail: Dict[str, Any] = field(default_factory=dict)

    def claim(self, refusal: str, markup: Optional[Container[str]] = None) -> str:
        """The claim shipped in the trace: the sentences joined by one space, or ``refusal``.
        A sentence of a Markdown or reST document (its doc id in ``markup``; ``None``: every
        document) is shipped as plain text (``shape.prose``: no list markers, emphasis, link
        syntax or heading marks; code spans as their text; a list's items joined into the line
        of their lead-in, ``a; b``); one of a plain text document
        or a BEIR row as written.  The sentences themselves stay verbatim."""
        if self.refused or not self.sentences:
            return refusal
        return " ".join(prose(s.sentence) if markup is None or s.pdf in markup else s.sentence
                        for s in self.sentences)

    def citations(self) -> List[str]:
        """The cited chunk ids in sentence order, each once ([] when refused)."""
        if self.refused:
            return []
        return list(dict.fromkeys(s.chunk_id for s in self.sentences))

    def to_json(self) -> dict:
        return {"answer_sentences": [s.to_json() for s in self.sentences],
                "confidence": self.confidence, "refused": self.refused,
                "reasons": list(self.reasons), "detail": self.detail}

    @classmethod
    def from_json(cls, d: dict) -> "Answer":
        return cls(sentences=[AnswerSentence(**s) for s in d.get("answer_sentences", [])],
                   confidence=d.get("confidence", "Low"), refused=bool(d.get("refused", False)),
                   reasons=list(d.get("reasons", [])), detail=dict(d.get("detail", {})))


def format_answer(answer: Answer, refusal: str, paged: Optional[Container[str]] = None,
                  markup: Optional[Container[str]] = None) -> str:
    """The contract's text form: ``ANSWER:``, numbered sentences (as plain text for the
    documents in ``markup``, see ``Answer.claim``) with ``(pdf, p<page>, <chunk_id>)``, then
    ``CONFIDENCE: <level>``; a refused answer is the refusal text alone.  ``paged``: the
    documents that have pages (a form feed); any other document's citation is ``(pdf,
    <chunk_id>)``, without the page that is always 1 (``None``: every citation shows its page).

    >>> a = Answer([AnswerSentence("Refunds take **5 days**.", "refunds", 1, "refunds#p2")], "High")
    >>> print(format_answer(a, "not in context"))
    ANSWER:
    1. Refunds take 5 days. (refunds, p1, refunds#p2)
    CONFIDENCE: High
    >>> print(format_answer(a, "not in context", paged=()).splitlines()[1])
    1. Refunds take 5 days. (refunds, refunds#p2)
    """
    if answer.refused or not answer.sentences:
        return refusal
    lines = ["ANSWER:"]
    for n, s in enumerate(answer.sentences, 1):
        page = "" if paged is not None and s.pdf not in paged else "p%d, " % s.page
        text = prose(s.sentence) if markup is None or s.pdf in markup else s.sentence
        lines.append("%d. %s (%s, %s%s)" % (n, " ".join(text.split()), s.pdf, page, s.chunk_id))
    lines.append("CONFIDENCE: %s" % answer.confidence)
    return "\n".join(lines)


# ------------------------------------------------------------------ sentence splitting

# Words after which a period does not end a sentence (lower case, inner dots kept).
_ABBREVIATIONS = frozenset(
    "e.g i.e cf vs v viz al approx appx ca mr mrs ms dr prof sr jr st no nos nr art sec secs "
    "fig figs eq eqs ch chap vol vols p pp para ref refs dept est inc ltd co corp bros "
    "jan feb mar apr jun jul aug sep sept oct nov dec mon tue wed thu fri sat sun "
    "u.s u.k e.u u.n min max incl excl resp".split())

_UNIT_LINE = re.compile(r"^(?:[-*+\u2022]\s|\d+[.)]\s|\||#)")
_BOUNDARY = re.compile(r"[.!?][\"'\u201d\u2019)\]]*(?=\s+[\"'\u201c\u2018(\[]?[A-Z0-9])")
_WORD_BEFORE = re.compile(r"([A-Za-z][A-Za-z.]{0,60})\.$")


def _is_boundary(text: str, end: int) -> bool:
    """Is the punctuation run ending at ``end`` (exclusive) a sentence end?"""
    punct_at = end - 1
    while punct_at >= 0 and text[punct_at] not in ".!?":
        punct_at -= 1
    if text[punct_at] in "!?":
        return True
    m = _WORD_BEFORE.search(text, 0, punct_at + 1)
    if not m:
        return True
    word = m.group(1)
    if len(word) == 1 and word.isupper():
        return False          # an initial: "J. Smith"
    return word.lower().rstrip(".") not in _ABBREVIATIONS


def sentence_spans(text: str) -> List[Tuple[int, int]]:
    """``(start, end)`` offsets of the sentence units of ``text``, in order.

    A line that is a list item (``-``, ``*``, ``+``, ``1.``, ``1)``), a table row (``|``)
    or a Markdown heading (``#``) is one unit.  Other lines split after ``.``, ``!`` or
    ``?`` (and closing quotes/brackets) when white space and then a capital, a digit or
    an opening quote/bracket follow, except after an abbreviation (``e.g.``, ``Sec.``,
    ``No.``...) or an initial (``J.``).  Decimals (``2.5``) and codes (``v1.2``) never
    split: no white space follows their dot.  Units are stripped of white space.
    Computed once per text (a bounded memo, ``text.memo``); a new list each call.
    """
    return list(_sentence_spans(text))


@text_memo()
def _sentence_spans(text: str) -> Tuple[Tuple[int, int], ...]:
    """:func:`sentence_spans`, as a tuple."""
    spans: List[Tuple[int, int]] = []
    offset = 0
    for line in text.split("\n"):
        start = offset
        offset += len(line) + 1
        lead = len(line) - len(line.lstrip())
        body = line.strip()
        if not body:
            continue
        b0 = start + lead
        if _UNIT_LINE.match(body):
            spans.append((b0, b0 + len(body)))
            continue
        s = 0
        for m in _BOUNDARY.finditer(body):
            if _is_boundary(body, m.end()):
                piece = body[s:m.end()]
                if piece.strip():
                    a = s + (len(piece) - len(piece.lstrip()))
                    spans.append((b0 + a, b0 + m.end()))
                s = m.end()
        piece = body[s:]
        if piece.strip():
            a = s + (len(piece) - len(piece.lstrip()))
            spans.append((b0 + a, b0 + len(body)))
    return tuple(spans)


def split_sentences(text: str) -> List[str]:
    """The sentence units of ``text`` (see ``sentence_spans``), each a substring of it."""
    return [text[a:b] for a, b in sentence_spans(text)]


# ------------------------------------------------------------------ question types

# _AUX (the auxiliary verbs) comes from relevance, which splits questions into parts
_I = re.IGNORECASE

#: The question-type cue table: (type, pattern), first match wins.
QUESTION_CUES: Tuple[Tuple[str, "re.Pattern[str]"], ...] = (
    # "When someone signs several records, must every signing ...?": an opening clause,
    # then a yes/no question
    ("polarity", re.compile(r"^\W*(?:when|whenever|if|once|after|before|while|with|without|for|at|on|in|"
                            r"during|under|given|since|as)\b[^?;,]*,\s*" + _AUX + r"\b", _I)),
    ("definition", re.compile(r"\bstands?\s+for\b|\bwhat\s+(?:does|do)\s+.+\s+mean\b|\bmeaning\s+of\b|"
                              r"\bwhat\s+(?:counts|qualifies|is\s+considered|are\s+considered)\s+as\b|"
                              r"\bdefin(?:e|es|ed|ition|itions)\b|\bwhat\s+is\s+meant\s+by\b|"
                              r"^\W*what\s+(?:is|are)\s+(?:an?\s+)?(?!(?:the|this|that|these|those|our|your|my|"
                              r"their|its)\b)[\w-]+(?:\s+[\w-]+){0,2}\W*$", _I)),
    ("percentage", re.compile(r"\bpercent(?:age)?s?\b|%|\b(?:what|which|how\s+much\s+of\s+(?:a|the))\s+"
                              r"(?:\w+\s+){0,2}?(?:proportion|fraction|share)\b", _I)),
    ("amount", re.compile(r"\bhow\s+much\b.*\b(?:costs?|costing|charged?|charges|pay|paid|price[sd]?|fees?|"
                          r"spen[dt]|worth|owe[sd]?|money)\b|\bhow\s+much\s+money\b|"
                          r"\b(?:what|which)\s+(?:is\s+|are\s+|was\s+|were\s+)?(?:the\s+)?(?:\w+\s+){0,3}?"
                          r"(?:price|prices|cost|costs|fee|fees|charge|charges|amount|salary|budget|"
                          r"deposit|premium)\b", _I)),
    ("frequency", re.compile(r"\bhow\s+(?:often|frequently|regularly)\b|\bhow\s+many\s+times\b|"
                             r"\b(?:what|which)\s+(?:is\s+|are\s+)?(?:the\s+)?(?:\w+\s+){0,3}?"
                             r"(?:frequency|interval|intervals|cadence)\b|\bat\s+what\s+(?:interval|frequency)", _I)),
    ("duration", re.compile(r"\bhow\s+(?:long|soon|quickly)\b|"
                            r"\bhow\s+(?:many|much)\s+(?:\w+\s+)?(?:seconds|minutes|hours|days|weeks|months|"
                            r"years|decades|centuries|time)\b|"
                            r"\b(?:within|in|after|for)\s+(?:what|which)\s+(?:\w+\s+)?(?:period|time|timeframe)\b|"
                            r"\b(?:what|which)\s+(?:is\s+|are\s+|was\s+)?(?:the\s+)?(?:\w+\s+){0,3}?"
                            r"(?:period|periods|duration|timeframe|time\s+frame|window|lifetime|"
                            r"interval|frequency|length\s+of\s+time)\b|"
                            r"\b(?:what|which)\s+(?:is|are|was|were)\s+(?:the\s+|a\s+|an\s+)?(?:\w+\s+){0,3}?"
                            r"times?(?=\s*(?:$|[?,;.]|(?:of|for|in|on|at|to|from|between|after|before|"
                            r"until|when|that|is|are|was|do|does|will|should|must|can)\b))", _I)),
    ("date", re.compile(r"^\W*when\b|[,;]\s*when\b|\bwhen\s+" + _AUX + r"\b|\bby\s+when\b|\bdeadline\b|"
                        r"\bat\s+what\s+(?:point|stage|moment)\b|"
                        r"\b(?:what|which)\s+(?:\w+\s+)?(?:date|dates|day|year|month|time|century|decade|era)\b",
                        _I)),
    ("number", re.compile(r"\bhow\s+(?:many|much|large|big|high|low|far|old|tall|fast|heavy|wide|deep|"
                          r"small|short|long)\b|"
                          r"\b(?:what|which)\s+(?:is\s+|are\s+|was\s+|were\s+)?(?:the\s+)?(?:\w+\s+){0,3}?"
                          r"(?:number|numbers|maximum|minimum|max|min|limit|limits|count|total|size|cap|"
                          r"threshold|quota|rate|ratio|version|population|capacity|score)\b", _I)),
    ("organization", re.compile(r"\b(?:which|what)\s+(?:\w+\s+)?(?:firms?|vendors?|suppliers?|providers?|"
                                r"compan(?:y|ies)|banks?|insurers?|auditors?|contractors?|manufacturers?|"
                                r"brands?|airlines?)\b", _I)),
    ("person", re.compile(r"^\W*(?:who|whom|whose)\b|[,;]\s*who\b|"
                          r"\b(?:which|what)\s+(?:\w+\s+)?(?:team|person|people|department|role|group|"
                          r"committee|officer|manager|owner|individual|company|organi[sz]ation|firm|vendor|"
                          r"supplier|provider|contractor|auditor|agency|body|regulator|authority)\b", _I)),
    ("polarity", re.compile(r"^\W*" + _AUX + r"\b", _I)),
)


#: The words of QUESTION_CUES a misspelling may hide ("How does ICH Q9 deffine risk?").
CUE_WORDS = ("define defined defines definition meaning means stand stands often frequently "
             "regularly long soon quickly many much deadline percentage percent proportion cost "
             "costs price fee fees minimum maximum limit number duration period frequency interval "
             "date year month day").split()


@functools.lru_cache(maxsize=16)
def _cue_terms(analyzer) -> Dict[str, str]:
    """``{term: cue word}`` for the CUE_WORDS that analyze to one term (once per analyzer)."""
    by_term: Dict[str, str] = {}
    for word in CUE_WORDS:
        terms = analyzer.analyze(word)
        if len(terms) == 1:
            by_term.setdefault(terms[0], word)
    return by_term


def cue_spelling(question: str, retrieval: Optional[Retrieval], analyzer) -> str:
    """``question`` with the misspelt cue words the retriever corrected written out, so
    that its type is read as meant: "deffine", corrected to the term of "define", is
    "define".  Other words are left as typed (their corrections apply to the terms)."""
    corrections = (retrieval.corrections or {}) if retrieval is not None else {}
    if not corrections:
        return question
    by_term = _cue_terms(analyzer)

    def fix(m: "re.Match[str]") -> str:
        fixed = corrections.get(m.group(0), corrections.get(m.group(0).casefold()))
        return by_term.get(str(fixed), m.group(0)) if fixed else m.group(0)
    return re.sub(r"[^\W\d_]+", fix, question)


def question_type(question: str) -> Optional[str]:
    """The answer type a question asks for, by the first matching cue of QUESTION_CUES.

    ``percentage``, ``amount``, ``duration``, ``frequency``, ``date``, ``number`` and
    ``organization`` (which firm / vendor / supplier / company) ask for a value;
    ``definition`` (stand for / define / what is a ...), ``person`` (who / which
    team) and ``polarity`` (a yes/no question starting with an auxiliary verb) only rank
    sentences.  None when no cue matches.
    """
    for kind, pattern in QUESTION_CUES:
        if pattern.search(question):
            return kind
    return None


_WORD = re.compile(r"\w+")
#: A sentence that defines: a definition verb, a glossary entry ("**Term**: ..."), an
#: abbreviation with its expansion ("RPO (recovery point objective)"), or a subject that
#: is a question word followed by "is a / is the" ("Risk is the combination of ...").
_DEFINITION_VERB = re.compile(r"\b(?:means|mean|meaning|(?:is|are)\s+defined\s+as|defined\s+as|refers?\s+to|"
                              r"stands?\s+for|denotes?|(?:is|are)\s+(?:also\s+)?(?:known|called)\b)", _I)
_DEFINIENDUM = re.compile(r"^\W{0,20}(?:(?:an?|the)\s{1,20})?([\w-]{1,60}(?:\s{1,20}[\w-]{1,60}){0,4}?)\s{0,20}(?:\*\*)?\s{0,20}(?:\([^()]{0,200}\)\s{0,20})?"
                          r"(?:\*\*)?\s{0,20}(?::\s|(?:is|are)\s{1,20}(?:an?|the|any|that|when|where)\b)", _I)
_ABBREVIATION = re.compile(r"\b[A-Z][A-Za-z0-9]{0,30}[A-Z]\w{0,30}\s{0,5}\([^()]{3,300}\)|\([A-Z][A-Za-z0-9]{0,30}[A-Z]\w{0,30}\)")


def _defines(sentence: str, echo: frozenset) -> bool:
    """Does ``sentence`` define something the question names (see ``_DEFINITION_VERB``)?"""
    if _DEFINITION_VERB.search(sentence) or _ABBREVIATION.search(sentence):
        return True
    m = _DEFINIENDUM.match(sentence)
    if not m:
        return False
    words = [w.casefold() for w in _WORD.findall(m.group(1))]
    return any(w in echo or w.rstrip("s") in echo or w + "s" in echo for w in words)


def echo_words(question: str) -> frozenset:
    """The question's own words (case-folded), which a value must not merely repeat."""
    return frozenset(w.casefold() for w in _WORD.findall(question))


def _states(pattern: "re.Pattern[str]", sentence: str, echo: frozenset) -> bool:
    """Does ``pattern`` match ``sentence`` somewhere other than in the question's own words?

    A match counts when it holds a word the question does not (``24 hours`` for "How long
    are logs kept?"), or no word at all (``%``).  "When does the Black Friday promotion
    start?" is not answered by a sentence naming "Black Friday offers" (its only date word
    is the question's), nor "When will records go live on line CM-2?" by "planned for line
    CM-2" (its only number is the question's).
    """
    for m in pattern.finditer(sentence):
        words = _WORD.findall(m.group(0))
        if not words or any(w.casefold() not in echo for w in words):
            return True
    return False


def value_match(kind: Optional[str], sentence: str, echo: frozenset = frozenset()) -> float:
    """1.0 when ``sentence`` states a value of ``kind``; 0.5 when it states only some
    number (``kind`` is a value type other than number and frequency: a bare number is
    no rate); 0.0 otherwise.

    ``echo``: the question's words (``echo_words``); a value made only of them is the
    question repeated, not an answer, and does not count (see ``_states``).
    No kind -> 1.0 (nothing asked, nothing missing).  For ``person`` and ``polarity``
    1.0 when a role/name or a modal/polarity word is present, else 0.0; for
    ``organization`` 1.0 when a name is (a capitalized word not opening the sentence,
    not the question's): "an independent firm" names no firm.  A calendar date
    ("until 2027-06-30") states no ``number``: it is a time, not a count or a size.
    """
    if kind is None:
        return 1.0
    if kind == "definition":
        return 1.0 if _defines(sentence, echo) else 0.0
    if kind == "person":
        return 1.0 if (_ROLE.search(sentence) or _PROPER.search(sentence)) else 0.0
    if kind == "organization":
        return 1.0 if _states(_PROPER, sentence, echo) else 0.0
    if kind == "polarity":
        return 1.0 if _POLARITY.search(sentence) else 0.0
    has_number = _states(_NUMBER, sentence, echo)
    if kind == "number":
        # a calendar date ("until 2027-06-30") is a time, not a count or a size
        return 1.0 if _states(_NUMBER, _CALENDAR_DATE.sub(" ", sentence), echo) else 0.0
    if kind == "percentage":
        full = _states(_PERCENT, sentence, echo)
    elif kind == "amount":
        full = _states(_CURRENCY, sentence, echo) or (has_number and bool(_PRICE_WORD.search(sentence)))
    elif kind == "duration":
        full = _states(_DURATION, sentence, echo)
    elif kind == "frequency":
        full = _states(_FREQUENCY, sentence, echo)
    elif kind == "date":
        full = _states(_DATE, sentence, echo) or _states(_DURATION, sentence, echo)
    else:
        full = False
    if full:
        return 1.0
    return 0.5 if has_number and kind != "frequency" else 0.0


#: A sentence saying the matter is not settled yet: it mentions the topic, it answers nothing.
PENDING = re.compile(
    r"\b(?:is|are|was|were)\s+(?:currently\s+|still\s+)?(?:being|under)\s+(?:reviewed|review|"
    r"discussed|discussion|considered|consideration|evaluated|evaluation|assessed|assessment|defined|"
    r"decided|drafted|negotiated|negotiation|developed|development|investigated|investigation)\b|"
    r"\bnot\s+yet\b|\byet\s+to\s+be\b|"
    r"\bha(?:s|ve)\s+not\s+(?:yet\s+)?been\s+(?:decided|set|defined|determined|agreed|announced|"
    r"confirmed|finali[sz]ed|published|scheduled|approved)\b|"
    r"\b(?:is|are)\s+(?:currently\s+|still\s+)?(?:planned|proposed)\b(?!\s+(?:and|or|by)\b)|"
    r"\b(?:is|are)\s+(?:currently\s+|still\s+)?(?:pending|undecided|in\s+draft)\b|"
    r"\bto\s+be\s+(?:decided|determined|confirmed|announced|defined|agreed|scheduled)\b|"
    r"\b(?:tbd|tba|tbc)\b", _I)


#: A sentence that sends the reader elsewhere: the subject is mentioned, not answered here.
DEFERRAL = re.compile(
    r"\bnot\s+(?:summari[sz]ed|described|covered|addressed|discussed|detailed|repeated|reproduced)\s+"
    r"(?:here|in\s+this\s+(?:document|policy|note|section|guide|summary|page))\b|"
    r"\b(?:outside|beyond)\s+the\s+scope\s+of\s+this\b|"
    r"\bha(?:s|ve)\s+(?:its|their)\s+own\s+(?:\w+\s+){0,2}?(?:quotas?|limits?|rules?|terms|polic(?:y|ies)|"
    r"procedures?|requirements?|schedules?)\b", _I)


def is_deferral(sentence: str) -> bool:
    """Does ``sentence`` send the reader elsewhere ("is covered by ICH Q1B and is not
    summarized here", "have their own quotas")?

    >>> is_deferral("Photostability testing is covered by ICH Q1B and is not summarized here.")
    True
    >>> is_deferral("Exports are limited to 20 jobs per day.")
    False
    """
    return bool(DEFERRAL.search(sentence))


#: A question asking for a whole list: "What are the four elements of ...", "List the ...".
ENUMERATION = re.compile(
    r"\b(?:what|which)\s+are\s+the\s+(?:\w+\s+){0,2}?(?:\d+|two|three|four|five|six|seven|eight|nine|ten)\s+\w+|"
    r"^\W*(?:please\s+)?(?:list|enumerate)\b|^\W*(?:please\s+)?name\s+(?:all|every|each|\d+|two|three|four|five)\b|"
    r"\b(?:what|which)\s+are\s+the\s+(?:\w+\s+){0,2}?(?:types|kinds|elements|components|steps|stages|phases|"
    r"principles|categories|criteria|parts|classes)\b", _I)
_LIST_ITEM = re.compile(r"^\s*(?:[-*\u2022]|\d{1,2}[.)])\s+\S")


def is_enumeration(question: str) -> bool:
    """Does ``question`` ask for a whole list ("What are the four elements of ICH Q10?")?

    >>> is_enumeration("What are the four elements of the ICH Q10 quality system?")
    True
    >>> is_enumeration("What is the first element?")
    False
    """
    return bool(ENUMERATION.search(question))


#: A sentence that narrows a rule: an exception, a condition, an exemption.
_EXCEPTION = re.compile(r"\b(?:except|excepting|exception|exceptions|unless|exempt|exempted|exemption|"
                        r"exemptions|notwithstanding|only\s+(?:if|when|where|with|after|for|once|until)|"
                        r"provided\s+that|(?:does|do)\s+not\s+apply)\b|,\s*provided\b|^\W*however\b", _I)


def is_exception(sentence: str) -> bool:
    """Does ``sentence`` state an exception or a condition to a rule?

    >>> is_exception("The only exception to the TLS requirement is the payroll transfer.")
    True
    >>> is_exception("Validation may be completed after approval, provided the dossier has a scheme.")
    True
    >>> is_exception("Data in transit must use TLS 1.2 or higher.")
    False
    """
    return bool(_EXCEPTION.search(sentence))


def is_pending(sentence: str) -> bool:
    """Does ``sentence`` say its matter is undecided ("is being reviewed", "not yet final",
    "are planned", "to be announced")?

    >>> is_pending("The classification of such data is being reviewed."), is_pending("Logs are kept.")
    (True, False)
    """
    return bool(PENDING.search(sentence))


# ------------------------------------------------------------------ scoring

def _stand_ins(q_set: Any, bridges: Bridges) -> Dict[str, str]:
    """``{term: question term}``: each question term for itself, and each one-word bridge
    for the first question term (in sorted order) it bridges."""
    out: Dict[str, str] = {}
    for q in sorted(q_set):
        for alt in (bridges or {}).get(q, ()):
            if len(alt) == 1:
                out.setdefault(next(iter(alt)), q)
    out.update((q, q) for q in q_set)
    return out


def _proximity(stand_ins: Dict[str, str], sent_terms: Sequence[str]) -> float:
    """m / w over the shortest span holding all m matched distinct question terms, each
    found as itself or as a one-word bridge (``_stand_ins``)."""
    positions = [(i, stand_ins[t]) for i, t in enumerate(sent_terms) if t in stand_ins]
    distinct = {t for _, t in positions}
    m = len(distinct)
    if m == 0:
        return 0.0
    if m == 1:
        return 0.5
    best = len(sent_terms)
    counts: Dict[str, int] = {}
    have = 0
    left = 0
    for right in range(len(positions)):
        t = positions[right][1]
        counts[t] = counts.get(t, 0) + 1
        if counts[t] == 1:
            have += 1
        while have == m:
            width = positions[right][0] - positions[left][0] + 1
            best = min(best, width)
            lt = positions[left][1]
            counts[lt] -= 1
            if counts[lt] == 0:
                have -= 1
            left += 1
    return m / best


@dataclass
class _Unit:
    fact_idx: int
    sent_idx: int
    start: int
    text: str
    terms: List[str]
    term_set: frozenset


@dataclass
class _FactInfo:
    fact: Fact
    chunk_terms: frozenset
    units: List[_Unit]
    scope_terms: frozenset = frozenset()     # the chunk's heading, document title and scope statement
    lead_in: str = ""                        # the lead-in of the list the chunk is part of (docshape)
    joined: str = ""                         # the lead-in's chunk id when retrieval joined this chunk after it


def _corpus_bridged(term: str, bridges: Optional[Bridges], evidence: Sequence[frozenset] = ()) -> bool:
    """Does one of the corpus's own bridges (a derivation, an abbreviation, an expansion
    rule) lead from ``term``, or a synonym that an ``evidence`` fact's terms hold ("MFA",
    which the evidence writes "multi-factor authentication")?"""
    return any(not isinstance(alt, Synonym) or any(alt <= terms for terms in evidence)
               for alt in (bridges or {}).get(term, ()))


def _known_terms(q_terms: Sequence[str], index: Any, bridges: Bridges,
                 evidence: Sequence[frozenset] = ()) -> List[str]:
    """The question terms the corpus has seen (or that an expansion rule bridges).

    A term no chunk contains cannot tell one chunk from another, so it never decides
    which fact is on topic; it still weighs in the share of the question a fact covers.
    A term bridged only by a synonym group is known when an ``evidence`` fact's terms
    hold one of its synonyms: a synonym can make a word count, never make it missing.
    """
    df = getattr(index, "doc_freq", None)
    if df is None:
        return list(q_terms)
    return [t for t in q_terms if df(t) > 0 or _corpus_bridged(t, bridges, evidence)]


_NAME_TOKEN = re.compile(r"\b(?:[A-Z][\w'-]*[A-Z0-9][\w'-]*|[A-Za-z]*\d[\w'-]*)\b|(?<=\w\s)[A-Z][a-z][\w'-]*")


_CATEGORY = re.compile(r"^\W*(?:which|what)\s+(?:(?:is|are|was|were)\s+)?(?:the\s+|a\s+|an\s+)?"
                       r"((?:[a-z][\w-]*\s+){0,3})", re.I)
_MEASURE = frozenset("maximum minimum max min total typical average exact".split())
_PHRASE_END = frozenset("of for in on at to per by from with that which who is are was were do does did "
                        "can could may must should will would has have had".split())
#: Words that open a clause: the word before one ends a verb phrase ("What extra step
#: applies when ...": "applies" is the verb, "step" the head).
_CLAUSE_START = frozenset("when if where while whenever unless once before after because".split())


def category_terms(question: str, index: Any) -> List[str]:
    """The answer's category in a "Which X ...?" / "What is the [maximum] X of ...?" question.

    After "which", X is the next word.  After "what", X is the noun phrase that follows
    (up to three words, ended by a preposition or an auxiliary; three words followed by
    a clause opener such as "when" or "if" end in the verb, which is dropped; a longer
    run keeps only its first word); its last word is the head.
    The head and any measure word (maximum, minimum, total, ...) name the kind of value
    asked for, which the sentence stating the value need not repeat ("Which algorithm
    hashes passwords?" -> "... salted hashes computed with Argon2id"; "What is the
    maximum page size ...?" -> "at most 500 records per page").  They never count as key
    terms (they still weigh in the question share).
    """
    m = _CATEGORY.match(question)
    analyzer = getattr(index, "analyzer", None)
    if not m or analyzer is None:
        return []
    words = m.group(1).split()
    rest = question[m.end():].split()
    cut = next((i for i, w in enumerate(words) if w.lower() in _PHRASE_END), None)
    if question.lstrip(" \t\"'(").lower().startswith("which"):
        words = words[:1]          # "Which X verb ...": X is one word
    elif cut is not None:
        words = words[:cut]
    elif len(words) > 1 and rest and rest[0].lower() in _CLAUSE_START:
        words = words[:-1]
    elif not rest or rest[0].lower() not in _PHRASE_END:
        words = words[:1]
    if not words:
        return []
    picked = [w for w in words[:-1] if w.lower() in _MEASURE] + [words[-1]]
    return list(dict.fromkeys(t for w in picked for t in analyzer.analyze(w)))


#: Words that never say what a question is about: light verbs, whose meaning comes from
#: their object ("get a laptop", "come with", "make sure"), indefinite pronouns, and vague
#: quantities ("several records" asks about records, not about how many).
LIGHT_WORDS = frozenset((
    "get gets got gotten getting come comes came coming make makes made making take takes took "
    "taken taking give gives gave given giving go goes went gone going put puts putting "
    "show shows showed shown showing bring brings brought bringing let lets want wants wanted "
    "like likes liked look looks looked seem seems seemed turn turns turned "
    "someone somebody anyone anybody everyone everybody something anything everything us "
    "several multiple various numerous"
).split())

#: Words that name the kind of value asked for, by question type: the sentence stating
#: the value need not repeat them ("How much does storage cost?" -> "USD 20 per month").
TYPE_WORDS = {
    "amount": frozenset("cost costs price prices priced fee fees charge charges charged pay paid "
                        "amount amounts".split()),
    "duration": frozenset("time times period periods duration durations".split()),
    "date": frozenset("date dates day days time".split()),
    "number": frozenset("number numbers amount total count".split()),
    "percentage": frozenset("percent percentage percentages share proportion".split()),
    # a yes/no question's modality: the answer says "must", "exempt" or "may" instead
    "polarity": frozenset("mandatory compulsory obligatory optional required necessary allowed "
                          "permitted forbidden prohibited".split()),
}


def general_terms(question: str, kind: Optional[str], analyzer: Any) -> List[str]:
    """Terms of ``question``'s light words and of the words naming its answer type
    (``LIGHT_WORDS``, ``TYPE_WORDS``); they are never key terms (rule 1)."""
    if analyzer is None:
        return []
    out = []
    words = LIGHT_WORDS | TYPE_WORDS.get(kind or "", frozenset())
    for w in _WORD.findall(question):
        if w.casefold() in words:
            out.extend(analyzer.analyze(w))
    return list(dict.fromkeys(out))


def _casing_marks_names(question: str, scaffold) -> bool:
    """Do capitals in ``question`` mark names?  Not when it has no lower-case letter
    ("WHEN SOMEONE QUITS ...") or writes a question word in mixed case ("wHaT is ...",
    "WHat lONg-TeRM ..."): a question word is never a name, so its odd capitals say the
    whole question was typed without regard to case."""
    if not any(c.islower() for c in question):
        return False
    for w in re.findall(r"[^\W\d_]+", question):
        if w.casefold() in scaffold and not (w.islower() or w.istitle() or w.isupper()):
            return False
    return True


def name_words(question: str, analyzer: Any) -> List[Tuple[str, List[str]]]:
    """The words of ``question`` written as names or codes (see :func:`unknown_names`),
    each with its analyzed terms, question scaffold removed, in question order."""
    scaffold = _scaffold(analyzer)
    cased = _casing_marks_names(question, scaffold)
    out = []
    for m in _NAME_TOKEN.finditer(question):
        if not cased and not any(c.isdigit() for c in m.group(0)):
            continue            # "WHEN SOMEONE QUITS": capitals that mark nothing
        out.append((m.group(0), [t for t in analyzer.analyze(m.group(0)) if t not in scaffold]))
    return out


def unknown_names(question: str, index: Any, bridges: Optional[Bridges] = None,
                  evidence: Sequence[frozenset] = (),
                  names: Optional[Sequence[Tuple[str, List[str]]]] = None) -> List[str]:
    """Names and codes in ``question`` whose every term the corpus has never seen.

    A name is a word written with a capital not at the start of the question
    (``Germany``, ``GraphQL``), an acronym (``HIPAA``) or a word with a digit (``401k``,
    ``Q3D``).  When the corpus knows none of its terms, the question asks about
    something the documents do not cover, however well its other words match.  In a
    question written mostly in capitals or in random case ("WHEN SOMEONE QUITS ...")
    capitals mark nothing, and only words with a digit are names; question scaffold
    ("Is it OK to ...") is never a name.  A name the corpus writes otherwise is known:
    through one of its own bridges, or through a synonym that an ``evidence`` fact's
    terms hold ("MFA" and "multi-factor authentication").  ``names``: the question's
    :func:`name_words` when already known (``question.QuestionPart.names``).
    """
    df = getattr(index, "doc_freq", None)
    analyzer = getattr(index, "analyzer", None)
    if df is None or analyzer is None:
        return []
    out = []
    for word, terms in (name_words(question, analyzer) if names is None else names):
        if terms and all(df(t) == 0 and not _corpus_bridged(t, bridges, evidence) for t in terms):
            out.append(word)
    return list(dict.fromkeys(out))


_EXISTENTIAL = re.compile(r"^\W*(?:is|are)\s+there\s+(?:(?:an?|any|some)\s+)?((?:[\w-]+\s+){0,3}?[\w-]+?)"
                          r"(?=\s+(?:for|at|in|on|to|of|with|without|available|offered|provided|that|which|"
                          r"who|when|if|from|by|per|after|before|during)\b|\s*[?.!]|\s*$)", _I)


def asked_subject(question: str, analyzer: Any) -> Tuple[str, ...]:
    """``(subject, head term, ...)`` of an existential question ("Is there parking
    available ...?": ``("parking", "park")``, see :func:`unknown_subject`), else ``()``."""
    m = _EXISTENTIAL.match(question)
    if analyzer is None or not m:
        return ()
    return (m.group(1),) + tuple(analyzer.analyze(m.group(1).split()[-1]))


def unknown_subject(question: str, index: Any, bridges: Optional[Bridges] = None,
                    subject: Optional[Tuple[str, ...]] = None) -> Optional[str]:
    """The subject of an existential question ("Is there parking available at the Leeds
    office?") when the corpus has never seen its head word, else None.

    The subject is the noun phrase after "is there / are there (a, any)" up to a
    preposition, "available", a relative word or the end; its head is its last word.  If
    the documents never use that word, they cannot say whether there is one, however
    well "Leeds office" matches.  ``subject``: the question's :func:`asked_subject` when
    already known (``question.QuestionPart.subject``).
    """
    df = getattr(index, "doc_freq", None)
    analyzer = getattr(index, "analyzer", None)
    if df is None or analyzer is None:
        return None
    found = asked_subject(question, analyzer) if subject is None else subject
    if not found:
        return None
    terms = [t for t in found[1:] if not _corpus_bridged(t, bridges)]
    if terms and all(df(t) == 0 for t in terms):
        return found[0]
    return None


#: A request for entertainment or free writing: no document answers it.
TASK_REQUEST = re.compile(
    r"^\W*(?:(?:please|can\s+you|could\s+you|would\s+you)\s+)?(?:tell|write|compose|sing|make\s+up|"
    r"give|invent|recite)\s+(?:me\s+|us\s+)?(?:an?\s+|some\s+|another\s+)?(?:\w+\s+){0,2}?"
    r"(?:jokes?|poems?|story|stories|songs?|riddles?|haikus?|limericks?|puns?|raps?)\b", _I)


def is_task_request(question: str) -> bool:
    """Is ``question`` a request for a joke, poem, story, song or riddle?

    >>> is_task_request("Tell me a joke about databases."), is_task_request("Tell me the refund window.")
    (True, False)
    """
    return bool(TASK_REQUEST.search(question))


_TABLE_RULE = re.compile(r"[ \t]{0,40}(?:\|[ \t]{0,40})?:?-{2,400}:?[ \t]{0,40}(?:\|[ \t]{0,40}:?-{2,400}:?[ \t]{0,40})*(?:\|[ \t]{0,40})?(?:\n|$)")


def _is_table_header(text: str, end: int) -> bool:
    """Is the unit ending at ``end`` a table's header row?  A header names the columns; it
    states nothing.  It is the line before ``|---|---|``; in a table written without that
    rule, the first of two or more ``|`` rows when it holds no digit."""
    line_start = text.rfind("\n", 0, end) + 1
    line = text[line_start:end]
    if not line.lstrip().startswith("|"):
        return False
    nl = text.find("\n", end)
    if nl < 0 or text[end:nl].strip() != "":
        return False
    if _TABLE_RULE.match(text, nl + 1):
        return True
    after = text[nl + 1:].split("\n", 1)[0].lstrip()
    before = text[:line_start].rstrip("\n").rsplit("\n", 1)[-1].lstrip() if line_start else ""
    return (after.startswith("|") and not before.startswith("|")
            and not any(c.isdigit() for c in line))


def _is_candidate(text: str) -> bool:
    """Headings and units without a letter or digit are never answer sentences."""
    return not text.lstrip().startswith("#") and any(c.isalnum() for c in text)


def _prepare(facts: Sequence[Fact], retrieval: Retrieval, index: Any, analyzer) -> List[_FactInfo]:
    hits = _hit_map(retrieval)
    scopes = scope_table(index, analyzer)
    infos = []
    for fi, fact in enumerate(facts):
        heading, title, _ = chunk_context(fact.chunk_id, retrieval, index, hits)
        scope_terms = frozenset(analyzer.analyze(heading + "\n" + title)) | scopes.get(fact.pdf, frozenset())
        chunk_terms = frozenset(analyzer.analyze(fact.quote)) | scope_terms
        units = []
        label = docshape.entry_label(fact.quote)
        label_terms = frozenset(analyzer.analyze(label)) if label else frozenset()
        for si, (a, b) in enumerate(sentence_spans(fact.quote)):
            text = fact.quote[a:b]
            if not _is_candidate(text) or _is_table_header(fact.quote, b):
                continue
            terms = analyzer.analyze(text)
            # an entry's later sentences are about its label ("The default is `5`.")
            units.append(_Unit(fi, si, a, text, terms, frozenset(terms) | (label_terms if si else frozenset())))
        infos.append(_FactInfo(fact, chunk_terms, units, scope_terms,
                               joined=(getattr(retrieval, "joined", None) or {}).get(fact.chunk_id, "")))
    # a list's items carry their lead-in's words, as they carry their heading's (docshape.py)
    for fi, lead in docshape.lead_in_of([f.chunk_id for f in facts], index).items():
        lead_terms = frozenset(analyzer.analyze(lead))
        info = infos[fi]
        info.scope_terms = info.scope_terms | lead_terms
        info.chunk_terms = info.chunk_terms | lead_terms
        info.lead_in = lead
    return infos


def _stated_exception(best: _Unit, infos: List[_FactInfo], key: Sequence[str],
                      bridges: Bridges) -> Optional[_Unit]:
    """Rule 6b: the first sentence of the best sentence's document (facts in retrieval
    order) that states an exception (``is_exception``) and shares a key term with it."""
    doc = infos[best.fact_idx].fact.pdf
    shared = [t for t in key if covered(t, best.term_set, bridges)]
    for info in infos:
        if info.fact.pdf != doc:
            continue
        for unit in info.units:
            if unit is not best and is_exception(unit.text) and \
                    any(covered(t, unit.term_set, bridges) for t in shared):
                return unit
    return None


def _entry_about(text: str, q_set: Any, analyzer: Any) -> bool:
    """False for a glossary entry defining a term the question does not name: "**Service
    credit**: a discount given when Halvard misses an uptime commitment" mentions uptime
    in passing, it says nothing about what uptime Halvard commits to."""
    term = entry_term(text)
    if term is None or analyzer is None:
        return True
    return any(t in q_set for t in analyzer.analyze(term))


def _joined_coverage(coverage: List[float], infos: List[_FactInfo]) -> List[float]:
    """Rule 2 for a list retrieval joined after its lead-in (retrieve.py step 7): it is on
    topic exactly when its lead-in's chunk is (its coverage is the lead-in's; 0 when the
    lead-in is not among the facts): the list is answered from, never the reason to answer."""
    by_id = {info.fact.chunk_id: c for info, c in zip(infos, coverage)}
    return [by_id.get(info.joined, 0.0) if info.joined else c for info, c in zip(infos, coverage)]


def _r(x: float) -> float:
    return round(x, 6)


def _concept_weights(q_terms: Sequence[str], index: Any, bridges: Bridges) -> Dict[str, float]:
    """The question terms' idf, each no higher than the idf of its most common one-term
    equivalent the index holds: a synonym group is one concept, as frequent as its
    commonest word (a synonym operator's document frequency is that of the union of its
    members').  "departing staff member" weighs "staff" and "member" as "employee"."""
    weights = term_weights(q_terms, index)
    idf = getattr(index, "idf", None)
    df = getattr(index, "doc_freq", None)
    if idf is None or df is None:
        return weights
    for t in q_terms:
        for alt in bridges.get(t, ()):
            if isinstance(alt, Equivalent) and len(alt) == 1:
                a = next(iter(alt))
                if df(a) > 0:
                    weights[t] = min(weights[t], max(0.0, float(idf(a))))
    return weights


def _asked_pick(pool: List[tuple], kind: str, key: Sequence[str], analyzer: Any, echo: frozenset,
                bridges: Bridges, params: Dict[str, Any]) -> Optional[tuple]:
    """Rule 3b: the best candidate of ``pool`` (scored, best first) that states a value of the
    asked ``kind`` within ``params["window"]`` words of a focus term (``asked.near_focus``;
    ``key``: the question's terms but its answer category and light and type words),
    among those scoring at least the best's score minus ``params["margin"]``; None when none
    does (the sentences name the topic, not the asked value)."""
    floor = pool[0][0] - float(params.get("margin", 0.0))
    window = int(params["window"])
    for cand in pool:
        if cand[0] < floor:
            break
        if asked_mod.near_focus(kind, cand[3].text, key, analyzer, window, echo, bridges) is not False:
            return cand
    return None


def _add_extra(lead: tuple, chosen: List[tuple], scored: List[tuple], infos: List[_FactInfo],
               index: Any, room: int) -> None:
    """Rule 6: the extra sentence ``lead`` is appended to ``chosen``, unless it is a lead-in
    (a unit ending with ``:``): a lead-in as an extra sentence is added only
    with an item of its list (``docshape.list_after``) and before it: right before the first
    chosen item of its list when one is chosen already, else with the best item after it when
    both fit in ``room``; a lead-in whose list is not among the candidates is not added."""
    if not docshape.is_lead_in(lead[3].text):
        chosen.append(lead)
        return
    listed = docshape.list_after(lead, scored, infos, index)
    if not listed:
        return
    mine = [k for k, c in enumerate(chosen) if c in listed]
    if mine:
        chosen.insert(mine[0], lead)
    elif room >= 2:
        chosen.extend((lead, min(listed, key=lambda s: (-s[0], s[1], s[2]))))


def _answer_part(part: str, q_terms: List[str], infos: List[_FactInfo], index: Any,
                 bridges: Bridges, cfg: Dict[str, Any], analyzed: Any = None,
                 others: Optional[Callable[[], Sequence[frozenset]]] = None) -> Dict[str, Any]:
    """Rules 1-7 for one question part: a dict with outcome, chosen units and numbers.
    ``analyzed``: the part's ``question.QuestionPart`` (its type and echo words);
    ``others``: for a question scoped to one document (rule 2b), a function giving the chunk
    terms of the other documents' best hits (called only when rule 2 finds nothing on topic)."""
    kind = question_type(part) if analyzed is None else analyzed.question_type
    out: Dict[str, Any] = {"part": part, "terms": list(q_terms), "question_type": kind}
    if not q_terms:
        out["outcome"] = "no_question_terms"
        return out
    weights = _concept_weights(q_terms, index, bridges)
    known = _known_terms(q_terms, index, bridges, [info.chunk_terms for info in infos])
    out["unknown_terms"] = [t for t in q_terms if t not in known]
    # 1b. a name or code the corpus has never seen: the question is about something else
    names = unknown_names(part, index, bridges, [info.chunk_terms for info in infos],
                          names=None if analyzed is None else analyzed.names)
    if names:
        out["unknown_names"] = names
        out["outcome"] = "unknown_name"
        return out
    subject = unknown_subject(part, index, bridges, subject=None if analyzed is None else analyzed.subject)
    if subject:
        out["unknown_subject"] = subject
        out["outcome"] = "unknown_subject"
        return out
    if analyzed is None:
        category = set(category_terms(part, index))
        category.update(general_terms(part, kind, getattr(index, "analyzer", None)))
    else:
        category = set(analyzed.category) | set(analyzed.general)
    known = [t for t in known if t not in category] or known
    top = max([weights[t] for t in known] or [0.0])
    ratio = float(cfg["key_idf_ratio"])
    key = [t for t in known if weights[t] >= ratio * top] if top > 0 else list(known)
    out["key_terms"] = key
    out["idf"] = {t: _r(weights[t]) for t in q_terms}

    # 2. on-topic facts: the rarest known terms, and enough of the whole question
    min_share = float(cfg["min_question_share"])
    coverage = []
    for info in infos:
        kc = (weighted_share(key, weights, info.chunk_terms, bridges) if top > 0 else
              (1.0 if key and all(covered(t, info.chunk_terms, bridges) for t in key) else 0.0))
        qs = weighted_share(q_terms, weights, info.chunk_terms, bridges)
        coverage.append(kc if qs >= min_share else 0.0)
    coverage = _joined_coverage(coverage, infos)
    out["key_coverage"] = _r(max(coverage)) if coverage else 0.0
    min_cov = float(cfg["min_key_coverage"])
    typed_min = float(cfg.get("min_key_coverage_typed", min_cov))
    echo = echo_words(part) if analyzed is None else analyzed.echo

    def typed_on_topic(info: _FactInfo) -> bool:
        # rule 2's relaxation: a sentence states the asked value and holds typed_min of K
        return any(value_match(kind, u.text, echo) >= 1.0 and
                   weighted_share(key, weights, u.term_set | info.scope_terms, bridges) >= typed_min
                   for u in info.units)

    relax = kind in VALUE_TYPES and typed_min < min_cov
    on_topic = [i for i, c in enumerate(coverage)
                if c >= min_cov or (relax and c >= typed_min and typed_on_topic(infos[i]))]
    other_terms = others() if not on_topic and others is not None and top > 0 else ()
    if other_terms:
        # 2b. a scoped question: as much of K as any other document holds is as close as the
        # corpus's words come to the question's
        best_other = max([weighted_share(key, weights, terms, bridges) for terms in other_terms
                          if weighted_share(q_terms, weights, terms, bridges) >= min_share] or [0.0])
        out["other_key_coverage"] = _r(best_other)
        scope_min = float(cfg["scope_min_key_coverage"])
        on_topic = [i for i, c in enumerate(coverage) if c >= scope_min and c >= best_other]
    if not on_topic:
        out["outcome"] = "key_terms_not_covered"
        return out

    # 3.-4. candidates and scores
    wc, wt, wp, wr = (float(cfg["weight_coverage"]), float(cfg["weight_type"]),
                      float(cfg["weight_proximity"]), float(cfg["weight_retrieval"]))
    q_set = set(q_terms)
    stand_ins = _stand_ins(q_set, bridges)
    analyzer = analyzer_of(index, {})
    scored = []   # (score, fact_idx, sent_idx, unit, type_match)
    for i in on_topic:
        info = infos[i]
        chunk_share = weighted_share(q_terms, weights, info.chunk_terms, bridges)
        for unit in info.units:
            if not _entry_about(unit.text, q_set, analyzer):
                continue
            sent_share = weighted_share(q_terms, weights, unit.term_set, bridges)
            cov = SENTENCE_SHARE * sent_share + (1.0 - SENTENCE_SHARE) * chunk_share
            tm = value_match(kind, unit.text, echo)
            prox = _proximity(stand_ins, unit.terms)
            score = wc * cov + wt * tm + wp * prox + wr * max(0.0, min(1.0, info.fact.score))
            scored.append((score, unit.fact_idx, unit.sent_idx, unit, tm))
    scored = docshape.shaped(part, scored, analyzer, wt)
    scored.sort(key=lambda s: (-s[0], s[1], s[2]))
    if not scored:
        out["outcome"] = "key_terms_not_covered"
        return out
    pool = scored
    if kind == "definition":
        pool = [s for s in scored if s[4] > 0.0] or scored
    if kind in VALUE_TYPES:
        pool = [s for s in scored if s[4] > 0.0]
        if not pool:
            out["outcome"] = "answer_type_missing"
            return out
    best = pool[0]
    # 3b. the asked value (issue 30): the chosen sentence states the asked kind near the focus
    asked_k = asked_mod.asked_kind(part, kind) if analyzed is None else analyzed.asked
    if asked_k is not None and cfg.get("asked_value", True):
        out["asked_kind"] = asked_k
        params = asked_mod.load_params()
        if asked_k in params["guard_kinds"]:
            focus = [t for t in q_terms if t not in category] or key
            pick = _asked_pick(pool, asked_k, focus, analyzer, echo, bridges, params)
            if pick is None:
                out["outcome"] = "asked_value_missing"
                return out
            best = pick
    if docshape.introduces_list(best[3].text, infos[best[1]].fact.quote, infos[best[1]].fact.chunk_id, index) \
            and not docshape.list_after(best, scored, infos, index):
        # a lead-in whose list is not in the evidence says nothing: the next candidate answers
        best = next((s for s in pool if not docshape.is_lead_in(s[3].text)), best)
    runner = next((s[0] for s in scored if s is not best), 0.0)
    out["best_score"] = _r(best[0])
    out["runner_up"] = _r(runner)
    if is_pending(best[3].text):
        out["outcome"] = "answer_pending"
        return out
    if is_deferral(best[3].text):
        out["outcome"] = "answer_elsewhere"
        return out
    if best[0] < float(cfg["min_score"]):
        out["outcome"] = "below_threshold"
        return out

    # 6. extra sentences that bring key terms the chosen ones lack; a list asked for whole
    chosen = [best]
    enumerated = (is_enumeration(part) if analyzed is None else analyzed.enumeration) and \
        bool(_LIST_ITEM.match(best[3].text))
    if enumerated:
        # the best unit's list, in text order, at most max_sentences items (best among them)
        items = sorted((s for s in scored if s[1] == best[1] and _LIST_ITEM.match(s[3].text)),
                       key=lambda s: s[2])[:int(cfg["max_sentences"])]
        chosen = items if best in items else [best] + items[:-1]
    listed = [] if enumerated or not docshape.is_lead_in(best[3].text) else docshape.list_after(best, scored, infos, index)
    if listed:
        # a lead-in is shipped with its list: the list asked for whole, else its best item
        enumerated = is_enumeration(part) if analyzed is None else analyzed.enumeration
        chosen = [best] + (listed[:int(cfg["max_sentences"]) - 1] if enumerated else
                           [min(listed, key=lambda s: (-s[0], s[1], s[2]))])
        enumerated = True
    have = set(t for t in key if covered(t, best[3].term_set, bridges))
    for cand in scored:
        if enumerated or len(chosen) > int(cfg["max_extra_sentences"]):
            break
        if cand is best or cand[0] < best[0] - float(cfg["extra_sentence_margin"]):
            continue
        new = [t for t in key if t not in have and covered(t, cand[3].term_set, bridges)]
        if new:
            _add_extra(cand, chosen, scored, infos, index, int(cfg["max_extra_sentences"]) + 1 - len(chosen))
            have.update(new)
    if kind == "polarity" and not enumerated and not is_exception(best[3].text):
        extra = _stated_exception(best[3], infos, key, bridges)
        if extra is not None and all(c[3] is not extra for c in chosen):
            chosen.append((0.0, extra.fact_idx, extra.sent_idx, extra, 0.0))

    # 7. confidence
    margin = best[0] - runner
    if best[0] >= float(cfg["confidence_high"]) and margin >= float(cfg["confidence_margin"]):
        confidence = "High"
    elif best[0] >= float(cfg["confidence_medium"]):
        confidence = "Medium"
    else:
        confidence = "Low"
    out.update(outcome="answered", confidence=confidence,
               chosen=[{"chunk_id": infos[c[1]].fact.chunk_id, "sentence": c[2], "score": _r(c[0]),
                        "type_match": c[4]} for c in chosen])
    out["_units"] = [c[3] for c in chosen]
    return out


def _cfg(config: Dict[str, Any]) -> Dict[str, Any]:
    from ..config import DEFAULTS   # defaults for keys a partial config dict leaves out
    merged = dict(DEFAULTS["answer"])
    merged.update(config.get("answer", {}))
    return merged


def _chunk_text(units: Sequence[_Unit]) -> str:
    """The chosen units of one chunk, in text order, joined by one space; a list item keeps a
    line of its own, so the claim reads it without its marker (``shape.prose``)."""
    text = ""
    for u in units:
        text += ("\n" if docshape.is_item(u.text) else " ") + u.text if text else u.text
    return text


def phase_c(question: str, facts: List[Fact], retrieval: Retrieval, index: Any,
            config: Dict[str, Any], qa: Any = None,
            reference: Optional[Callable[[], Retrieval]] = None) -> Answer:
    """The extractive answer to ``question`` from the phase B ``facts`` (rules 1-7 above);
    ``qa`` (``question.analyze_question`` of ``question``) gives its bridges and parts;
    ``reference``: for a question scoped to one document, a function giving the same question
    retrieved over the whole corpus (rule 2b reads its hits of the other documents; it is
    called at most once, and only when rule 2 finds nothing on topic)."""
    cfg = _cfg(config)
    if (is_task_request(question) if qa is None else qa.task_request):
        return Answer(sentences=[], confidence="Low", refused=True, reasons=["task_request"],
                      detail={"parts": []})
    if not facts:
        return Answer(sentences=[], confidence="Low", refused=True, reasons=["no_evidence"],
                      detail={"parts": []})
    analyzer = analyzer_of(index, config)
    bridges = (qa.bridges if qa is not None else
               expansion_bridges(question, config, analyzer, index, retrieval.corrections if retrieval else None))
    ranges = (range_bridges(question, [f.quote for f in facts], analyzer,
                            asked=None if qa is None else qa.quantities) if cfg.get("synonyms", True) else {})
    if ranges:
        # a number of the question within a bound the evidence states ("50%" and "40% or more")
        bridges = {t: list(alts) for t, alts in bridges.items()}
        for term, alts in ranges.items():
            bridges.setdefault(term, []).extend(alts)
    infos = _prepare(facts, retrieval, index, analyzer)
    others = None
    if reference is not None and cfg.get("scope_relative", True):
        found: List[List[frozenset]] = []

        def others() -> List[frozenset]:
            # rule 2b's other documents, retrieved and prepared once, when first needed
            if not found:
                ref = reference()
                scoped = {f.pdf for f in facts}
                joined = getattr(ref, "joined", None) or {}   # a joined list was not ranked
                other_facts = [f for f in phase_a(ref) if f.pdf not in scoped and f.chunk_id not in joined]
                found.append([info.chunk_terms for info in _prepare(other_facts, ref, index, analyzer)])
            return found[0]
    parts = []
    if qa is not None:
        for qp in qa.parts:
            parts.append(_answer_part(qp.text, list(qp.terms), infos, index, bridges, cfg, qp, others))
    for part in (split_question(cue_spelling(question, retrieval, analyzer)) if qa is None else ()):
        q_terms = question_terms(part, retrieval, analyzer)
        parts.append(_answer_part(part, q_terms, infos, index, bridges, cfg, others=others))

    answered = [p for p in parts if p["outcome"] == "answered"]
    if not answered:
        reasons = list(dict.fromkeys(p["outcome"] for p in parts))
        return Answer(sentences=[], confidence="Low", refused=True, reasons=reasons,
                      detail={"parts": parts})

    # Gather the chosen units in part order, at most max_sentences, each once.
    # Citations are capped too (seed 000: at most 5), so a unit from a further chunk waits.
    max_cites = int(config.get("guards", {}).get("max_citations", 5))
    units: List[_Unit] = []
    seen = set()
    cited = set()
    for p in answered:
        for u in p.pop("_units"):
            if (u.fact_idx, u.sent_idx) in seen or len(units) >= int(cfg["max_sentences"]):
                continue
            if u.fact_idx not in cited and len(cited) >= max_cites:
                continue
            seen.add((u.fact_idx, u.sent_idx))
            cited.add(u.fact_idx)
            units.append(u)
    # One AnswerSentence per chunk: join a chunk's sentences in text order.
    by_fact: Dict[int, List[_Unit]] = {}
    order: List[int] = []
    for u in units:
        if u.fact_idx not in by_fact:
            order.append(u.fact_idx)
            by_fact[u.fact_idx] = []
        by_fact[u.fact_idx].append(u)
    sentences = []
    for fi in order:
        fact = infos[fi].fact
        text = _chunk_text(sorted(by_fact[fi], key=lambda u: u.start))
        sentences.append(AnswerSentence(sentence=text, pdf=fact.pdf, page=fact.page, chunk_id=fact.chunk_id))
    rank = {level: n for n, level in enumerate(CONFIDENCE_LEVELS)}
    confidence = max((p["confidence"] for p in answered), key=lambda c: rank[c])
    for p in parts:
        p.pop("_units", None)
    return Answer(sentences=sentences, confidence=confidence, refused=False, reasons=[],
                  detail={"parts": parts})

"""Phase B of the QA contract (seed 001): keep the facts that can support an answer.

Input: the phase A facts (one per accepted hit, in rank order).  Output: a sub-list of
them, same order, same records.  Each rule below is one documented function; the first
rule that fires drops a fact and names the reason (``phase_b_detail``).

=====================================================  ========================================
``phase_b(question, facts, retrieval, index, config)``  ``list[Fact]`` kept, retrieval order
``phase_b_detail(...)``                                 ``(kept, dropped)``; dropped rows are
                                                        ``{"chunk_id", "reason"[, "of"]}``
``question_terms(question, retrieval, analyzer)``       the question's content terms
``term_weights(terms, index)``                          ``{term: idf}`` (1.0 without an index)
``expansion_bridges(question, config, analyzer)``       term -> alternative term sets
``covered(term, terms, bridges)``                       is a question term present?
``weighted_share(q_terms, weights, terms, bridges)``    IDF-weighted share of q_terms present
=====================================================  ========================================

Steps, in order (``reason`` in parentheses):

1. Noise, looking at the fact alone:

   a. ``is_artifact`` (``artifact``): fewer than 2 word tokens, or letters are under
      40% of the non-space characters (numbers-only rows, dot leaders, rules).
   b. ``is_page_furniture`` (``page_header``): a one-line page header or footer: a page
      number (``Page 3``, ``Page 3 of 10``, ``- 3 -``, ``3/10``), or exactly the
      document's title.
   c. ``is_boilerplate`` (``boilerplate``): once stock phrases (``intentionally left
      blank``, ``all rights reserved``, ``page N of M``, ``confidential``, ...) are
      removed, fewer than 3 word tokens remain.
   d. ``is_bare_heading`` (``heading``): the chunk is a heading standing alone (the
      index's ``Chunk.is_heading``), or a single line that reads as a heading (starts
      with ``#``; or at most 8 words, no ``. ! ? ; :`` at its end, and numbered, in
      capitals, or in title case).
   d'. ``chunk_kind`` (``code``): the chunk is a code block (fenced, literal or a code
      directive; ``Chunk.kind``): found by retrieval, never shipped as a sentence; but a
      command synopsis, one line after a shell prompt (``$ pip install Jinja2``,
      ``docshape.is_synopsis``), is kept: its line may be the answer.
   e. ``is_revision_table`` (``revision_table``): a table (most lines start with ``|``)
      whose header row names revisions/versions/changes/authors, or any fact under a
      ``Revision history`` / ``Change log`` / ``Document history`` heading; kept when
      the question itself asks about revisions, versions, changes or history.

2. Relevance, against the question:

   a. ``fact_overlap`` (``off_topic``): the IDF-weighted share of the question's
      content terms found in the fact's words, its heading, its document title (a
      document's own name is the contract's "doc hint") and its document's scope
      statement ("This procedure covers ...", ``glossary.scope_table``) is below
      ``[answer] min_fact_overlap`` (0.15).  A question without content terms keeps
      every fact.
   b. ``code_check`` (``code_mismatch``): when the question names a code (a term with a
      letter and a digit: ``WH-12``, ``Q13``, ``ISO-27001``) and some fact contains one
      of the question's codes, facts that contain none are dropped: a different
      product/standard code is a different subject.

3. ``near_duplicate`` (``duplicate``, with ``of`` the fact kept): two facts are near-
   identical when their normalized keys (tokens, case-folded, punctuation dropped)
   are equal, or their token sets have Jaccard >= ``[answer] dedup_jaccard`` (0.9) and
   differ in no number/code token and no polarity word (so ``30 days`` vs ``90 days``,
   or ``may`` vs ``may not``, stay apart for the conflict guard).  Of a near-identical
   pair the one holding more of the question (``fact_overlap``) is kept, then the higher
   score, then the smaller chunk_id.
4. ``cap`` (``over_limit``): at most ``[retrieval] max_context_chunks`` (6) survivors,
   kept in retrieval order: each part's best facts first when the question has several
   parts, then those holding most of the question, retrieval order breaking ties
   (``_within_limit``).
5. A lead-in's list (``lead_in_dropped``, with ``of`` its lead-in): a chunk retrieval
   joined after the lead-in that introduces it (``Retrieval.joined``, retrieve.py step 7)
   is the rest of what the lead-in says: it is not held to ``min_fact_overlap`` and not
   counted against the cap; it is kept when its lead-in's chunk is kept, and dropped
   otherwise (noise, duplicates and codes are checked on it as on any fact).

Question terms (``question_terms``): the question analyzed by the index's analyzer,
each term replaced by the retriever's typo correction when it made one, distinct, in
order, minus the *scaffold* terms that frame a question rather than name its subject
(``many``, ``much``, ``long``, ``often``, the modals ``can``/``may``/``must``...,
``tell``, ``explain``, ``exactly``..., and the definition frames ``stand`` (for),
``define``, ``mean``, ``refer`` (to)).  Term weights are the index's BM25 idf
(``Index.idf``, Lucene's, never negative and defined for an unseen term), so a term the
corpus has never seen weighs most.  A configured expansion rule (``[expansion.NAME]``)
whose ``match`` phrase is in the question *bridges* each of the phrase's terms: such a
term also counts as present where all terms of one of the rule's ``add`` phrases are.
A question term is also bridged to its derivational variants the corpus contains
(``derive.variants``: ``retain`` -> ``retent`` of *retention*; ``[answer]
derivations``).

>>> from mini_rag.text.analysis import Analyzer
>>> from mini_rag.records import Retrieval
>>> question_terms("How many days do we keep audit logs?", Retrieval("q", []), Analyzer())
['day', 'keep', 'audit', 'log']
"""
from __future__ import annotations

import functools
import re
from typing import Any, Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple

from ..query.abbrev import abbreviation_table
from ..text.analysis import Analyzer, tokenize
from ..text.memo import text_memo
from ..query.derive import variants
from ..query.glossary import definition_bridges, definition_table, example_bridges, example_table, scope_table
from ..records import Fact, Hit, Retrieval
from ..query.synonyms import Synonym, comparative_bridges, number_bridges, synonym_bridges, unit_bridges
from ..query.synonyms import quantity_bridges
from ..query.wordnet import configured_bridges
from .docshape import is_synopsis

__all__ = ["phase_b", "phase_b_detail", "asks_revisions", "question_terms", "corrected_terms", "split_question", "term_weights",
           "expansion_bridges", "covered", "weighted_share", "analyzer_of", "chunk_context", "is_artifact",
           "is_bare_heading", "is_boilerplate", "is_page_furniture", "is_revision_table",
           "fact_overlap", "question_codes", "near_duplicate", "SCAFFOLD_WORDS"]

Bridges = Dict[str, List[FrozenSet[str]]]

#: Words that frame a question rather than name its subject (analyzed like the question).
SCAFFOLD_WORDS = (
    "what which who whom whose when where why how "
    "many much long often far old kind type sort "
    "can could may might must shall should will would need needs "
    "do does did done tell know explain describe please exactly currently actually "
    "usually typically generally specifically also still ever really thing things "
    "something anything way mean means meaning happen happens get per "
    "stand define defined definition refer refers according instead afterwards afterward "
    "ok okay take takes took acronym abbreviation "
    "someone somebody anyone anybody everyone everybody nobody everything nothing"
).split()

#: "How soon", "how big": the adjective after "how" frames the question (a time, a size).
_HOW_FRAME = re.compile(r"\bhow\s+(?:soon|quickly|quick|fast|frequently|regularly|early|late|big|large|"
                        r"small|high|low|tall|heavy|wide|deep|short|far|old)\b", re.IGNORECASE)

#: "What counts as a deviation?" asks what a deviation is.
_WHAT_FRAME = re.compile(r"\bwhat\s+(?:counts|count|qualifies|qualify|is\s+considered|are\s+considered|"
                         r"is\s+regarded|are\s+regarded)\s+as\b", re.IGNORECASE)

#: "At what point ...", "what's the deadline for ...": the question asks when.
_WHEN_FRAME = re.compile(r"\bat\s+what\s+(?:point|stage|moment)(?:\s+in\s+time)?\b|"
                         r"\b(?:what|which)(?:'s|\s+is|\s+are|\s+was)?\s+(?:the\s+)?deadlines?\b",
                         re.IGNORECASE)

_AUX = (r"(?:is|are|was|were|am|do|does|did|can|could|may|might|must|shall|should|will|would|"
        r"has|have|had)")
#: Where a question splits into parts: at ? and ;, and before and / but / or / also that
#: open a new question (a question word, maybe after a preposition, or an auxiliary verb).
_PART_SPLIT = re.compile(r"[?;]+|(?<!\s)(?:\s{0,20},)?\s{1,20}(?:and|but|or|also)\s{1,20}(?=(?:(?:in|on|at|by|for|from|to|with|under|"
                         r"since|until|after|before|during|of)\s+(?:what|which|whom|whose|how)|what|when|where|who|"
                         r"whom|whose|which|why|how|" + _AUX[3:-1] + r")\b)", re.IGNORECASE)

_POLARITY_WORDS = frozenset(
    "not no never non none nor cannot can't cant mustn't won't don't doesn't isn't aren't "
    "may might can must shall should without except unless only prohibited forbidden "
    "allowed permitted required optional mandatory refundable".split())


# ------------------------------------------------------------------ shared helpers

def analyzer_of(index: Any, config: Optional[Dict[str, Any]] = None) -> Analyzer:
    """The index's analyzer (queries must be analyzed like the index), else the config's."""
    analyzer = getattr(index, "analyzer", None)
    if isinstance(analyzer, Analyzer):
        return analyzer
    settings = (config or {}).get("analysis", {})
    return Analyzer(stopwords=settings.get("stopwords", "english"),
                    stemmer=settings.get("stemmer", "english"))


@functools.lru_cache(maxsize=16)
def _scaffold(analyzer: Analyzer) -> FrozenSet[str]:
    """SCAFFOLD_WORDS as written and as ``analyzer`` analyzes them (once per analyzer)."""
    out = set()
    for word in SCAFFOLD_WORDS:
        out.update(analyzer.analyze(word))
        out.add(word)
    return frozenset(out)


def question_terms(question: str, retrieval: Optional[Retrieval], analyzer: Analyzer) -> List[str]:
    """The question's content terms: analyzed, typo-corrected, distinct, scaffold removed.

    A term is replaced by the retriever's correction of the token it came from
    (``Retrieval.corrections``, token -> space-separated index terms).
    """
    scaffold = _scaffold(analyzer)
    framed = _WHEN_FRAME.sub("when", _WHAT_FRAME.sub("what is", _HOW_FRAME.sub("how", question)))
    terms = corrected_terms(framed, retrieval.corrections if retrieval else None, analyzer)
    return list(dict.fromkeys(t for t in terms if t not in scaffold))


def corrected_terms(text: str, corrections: Optional[Dict[str, str]], analyzer: Analyzer) -> List[str]:
    """The analyzed terms of ``text``, each replaced by the retriever's correction of the
    token it came from (``Retrieval.corrections``: token -> the index terms used instead,
    space-separated, ``""`` for a misspelt stop word).

    >>> corrected_terms("an expensive prseent", {"prseent": "present"}, Analyzer())
    ['expens', 'present']
    """
    fixes: Dict[str, List[str]] = {}
    for raw, fixed in sorted((corrections or {}).items()):
        for term in analyzer.analyze(raw) or [raw.casefold()]:
            fixes[term] = str(fixed).split()
    return [t for term in analyzer.analyze(text) for t in fixes.get(term, [term])]


def split_question(question: str) -> List[str]:
    """The parts of a question, each answered on its own (phase C) and each given its best
    evidence (phase B); never empty for a non-empty text.

    >>> split_question("What is the refund window and does it apply to gift cards?")
    ['What is the refund window', 'does it apply to gift cards']
    >>> split_question("What does ALCOA+ add, and in what year was it first used?")
    ['What does ALCOA+ add', 'in what year was it first used']
    """
    parts = [p.strip() for p in _PART_SPLIT.split(question)]
    parts = [p for p in parts if any(c.isalnum() for c in p)]
    return parts or [question.strip()]


def term_weights(terms: Iterable[str], index: Any) -> Dict[str, float]:
    """``{term: weight}``: the index's idf, or 1.0 for every term when there is no index."""
    idf = getattr(index, "idf", None)
    return {t: (max(0.0, float(idf(t))) if idf else 1.0) for t in terms}


def _abbreviation_bridges(q_terms: List[str], table: Dict[str, List[FrozenSet[str]]],
                          bridges: Bridges) -> None:
    """Add the corpus's abbreviations (``abbrev``): a short form in the question is covered
    by one of its long forms; a long form wholly in the question, term by term, by its
    short form."""
    have = set(q_terms)
    for term in q_terms:
        for long in table.get(term, ()):
            bridges.setdefault(term, []).append(long)
    for short in sorted(table):
        if short in have:
            continue
        for long in table[short]:
            if long <= have:
                for term in sorted(long):
                    bridges.setdefault(term, []).append(frozenset([short]))


def expansion_bridges(question: str, config: Optional[Dict[str, Any]], analyzer: Analyzer,
                      index: Any = None, corrections: Optional[Dict[str, str]] = None) -> Bridges:
    """term -> alternative term sets, from expansion rules whose match phrase is in the
    question; with ``index`` and ``[answer] derivations`` on, also each question term's
    derivational variants (``derive.variants``) that the index contains; with
    ``[answer] abbreviations`` / ``definitions`` / ``examples`` on, the corpus's own
    abbreviations (``abbrev``), glossary definitions and listed examples (``glossary``);
    with ``[answer] synonyms`` on, plain-language synonyms and numbers in words or digits (``synonyms``).  The
    question's terms are read with the retriever's typo ``corrections``, so a misspelt
    word still has its variants and synonyms ("prseent" those of "present")."""
    terms = corrected_terms(question, corrections, analyzer)
    folded = " ".join(question.casefold().split())
    bridges: Bridges = {}
    df = getattr(index, "doc_freq", None)
    answer_cfg = (config or {}).get("answer", {})
    use_synonyms = answer_cfg.get("synonyms", True)
    if df is not None and answer_cfg.get("derivations", True):
        for term in terms:
            for v in variants(term):
                if df(v) > 0:
                    bridges.setdefault(term, []).append(frozenset([v]))
    if index is not None and answer_cfg.get("abbreviations", True):
        _abbreviation_bridges(terms, abbreviation_table(index), bridges)
    synonyms: Bridges = {}
    if use_synonyms:
        groups = synonym_bridges(question, terms, analyzer, answer_cfg.get("synonym_groups", ()))
        for term, alts in configured_bridges(question, terms, analyzer, answer_cfg).items():
            groups[term] = groups.get(term, []) + [a for a in alts if a not in groups.get(term, [])]
        for term, alts in groups.items():
            for alt in alts:
                synonyms.setdefault(term, []).append(alt)
                if len(alt) == 1 and df is not None and answer_cfg.get("derivations", True):
                    synonyms[term].extend(Synonym([v]) for v in variants(next(iter(alt))) if df(v) > 0)
    if index is not None and answer_cfg.get("definitions", True):
        scaffold = _scaffold(analyzer)
        content = [t for t in terms if t not in scaffold]
        # a definition holds a question term in another form ("lose": "may be lost")
        forms = {t: [next(iter(a)) for a in bridges.get(t, []) + synonyms.get(t, []) if len(a) == 1]
                 for t in content}
        for term, alts in definition_bridges(content, definition_table(index, analyzer), forms=forms).items():
            bridges.setdefault(term, []).extend(alts)
        if answer_cfg.get("examples", True):
            for term, alts in example_bridges(content, example_table(index, analyzer), forms=forms).items():
                bridges.setdefault(term, []).extend(alts)
    for term, alts in synonyms.items():
        bridges.setdefault(term, []).extend(alts)
    if use_synonyms:
        for make in (number_bridges, unit_bridges, comparative_bridges) + (
                (quantity_bridges,) if answer_cfg.get("quantities", True) else ()):
            for term, alts in make(question, terms, analyzer).items():
                bridges.setdefault(term, []).extend(alts)
    rules = (config or {}).get("expansion", {})
    for name in sorted(rules):
        rule = rules[name]
        match = " ".join(str(rule.get("match", "")).casefold().split())
        if not match or match not in folded:
            continue
        alternatives = [frozenset(analyzer.analyze(a)) for a in rule.get("add", [])]
        alternatives = [a for a in alternatives if a]
        for term in analyzer.analyze(match):
            bridges.setdefault(term, []).extend(alternatives)
    return bridges


def covered(term: str, terms: Any, bridges: Optional[Bridges] = None) -> bool:
    """``term`` is in ``terms`` (a set), or all terms of one of its bridges are."""
    if term in terms:
        return True
    return any(alt <= terms for alt in (bridges or {}).get(term, ()))


def weighted_share(q_terms: Sequence[str], weights: Dict[str, float], terms: Any,
                   bridges: Optional[Bridges] = None) -> float:
    """Sum of the weights of ``q_terms`` present in ``terms`` over the sum of all their weights.

    0.0 when ``q_terms`` is empty or all weights are 0 (nothing to match is no match).
    """
    total = sum(weights.get(t, 0.0) for t in q_terms)
    if total <= 0.0:
        return 0.0
    return sum(weights.get(t, 0.0) for t in q_terms if covered(t, terms, bridges)) / total


def _hit_map(retrieval: Optional[Retrieval]) -> Dict[str, Hit]:
    out: Dict[str, Hit] = {}
    if retrieval is not None:
        for hit in list(retrieval.hits) + list(retrieval.candidates):
            out.setdefault(hit.chunk_id, hit)
    return out


def chunk_context(chunk_id: str, retrieval: Optional[Retrieval], index: Any,
                  _hits: Optional[Dict[str, Hit]] = None) -> Tuple[str, str, bool]:
    """``(heading, title, is_heading)`` of a chunk: from its hit, else from the index.

    ``heading`` is the nearest heading, then (one a line) the other headings of the chunk's
    section path below the top one that differ from it and from the title (the top heading
    stands for the document, as the title does): the words a documentation page states once
    for everything under them ("Default paths", a tab's "Linux")."""
    hits = _hits if _hits is not None else _hit_map(retrieval)
    is_heading = False
    chunk = None
    getter = getattr(index, "chunk", None)
    if getter is not None:
        try:
            chunk = getter(chunk_id)
        except Exception:   # an index that does not know the id: the hit is all we have
            chunk = None
    if chunk is not None:
        is_heading = bool(getattr(chunk, "is_heading", False))
    hit = hits.get(chunk_id)
    if hit is not None:
        heading, title = hit.heading or "", hit.title or ""
    elif chunk is not None:
        heading, title = chunk.heading or "", chunk.title or ""
    else:
        return "", "", is_heading
    above = [h for h in (getattr(chunk, "section", None) or [])[1:] if h not in (heading, title)]
    if above:
        heading = "\n".join([heading] + above)
    return heading, title, is_heading


def chunk_kind(chunk_id: str, index: Any) -> str:
    """The chunk's kind in the index (``text``, ``heading``, ``code``, ``table``; ``text`` when
    the index does not know it).  A code block is indexed, so a question finds it, but it is
    never a fact: it is no sentence to ship as an answer."""
    getter = getattr(index, "chunk", None)
    if getter is None:
        return "text"
    try:
        chunk = getter(chunk_id)
    except Exception:
        return "text"
    return getattr(chunk, "kind", "text") or "text"


# ------------------------------------------------------------------ 1. noise rules

_WORD = re.compile(r"[^\W\d_]", re.UNICODE)


@text_memo()
def is_artifact(text: str) -> bool:
    """Fewer than 2 word tokens, or letters under 40% of the non-space characters."""
    if len(tokenize(text)) < 2:
        return True
    chars = [c for c in text if not c.isspace()]
    letters = sum(1 for c in chars if _WORD.match(c))
    return letters < 0.4 * len(chars)


_NUMBERED = re.compile(r"^(?:\d+(?:\.\d+)*\.?|[A-Z]\.|(?:section|article|part|chapter|appendix)\s+\w+)\s+\S",
                       re.IGNORECASE)


def is_bare_heading(text: str, chunk_is_heading: bool = False) -> bool:
    """The chunk is a heading alone: flagged by the index, or one heading-like line."""
    if chunk_is_heading:
        return True
    line = text.strip()
    if "\n" in line or not line:
        return False
    if line.startswith("#"):
        return True
    words = line.split()
    if len(words) > 8 or line[-1] in ".!?;:":
        return False
    if _NUMBERED.match(line):
        return True
    letters = [c for c in line if c.isalpha()]
    if letters and all(c.isupper() for c in letters) and len(letters) > 1:
        return True
    long_words = [w for w in words if len(w.strip("()[]\"',")) > 3]
    return bool(long_words) and all(w.strip("()[]\"',")[:1].isupper() for w in long_words) \
        and words[0][:1].isupper()


_BOILERPLATE = re.compile(
    r"(?:this\s+page\s+(?:is\s+)?(?:has\s+been\s+)?intentionally\s+left\s+blank"
    r"|(?:page\s+)?intentionally\s+left\s+blank"
    r"|all\s+rights\s+reserved"
    r"|copyright\s*(?:\(c\)|\u00a9)?\s*\d{4}(?:\s*[-\u2013]\s*\d{4})?"
    r"|\u00a9\s*\d{4}"
    r"|(?:strictly\s+)?(?:proprietary\s+and\s+)?confidential(?:\s+and\s+proprietary)?"
    r"|(?:for\s+)?internal\s+use\s+only"
    r"|do\s+not\s+(?:distribute|copy|print)"
    r"|(?:printed\s+copies\s+are\s+)?uncontrolled(?:\s+(?:when|if)\s+printed)?"
    r"|page\s+\d+\s+of\s+\d+"
    r"|continued\s+on\s+(?:the\s+)?next\s+page"
    r"|(?:table\s+of\s+)?contents"
    r"|end\s+of\s+document"
    r"|draft(?:\s+for\s+review)?)",
    re.IGNORECASE)


@text_memo()
def is_boilerplate(text: str) -> bool:
    """Stock phrases removed, fewer than 3 word tokens remain (and some phrase was there)."""
    stripped, n = _BOILERPLATE.subn(" ", text)
    return n > 0 and len(tokenize(stripped)) < 3


_PAGE_NUMBER = re.compile(r"^(?:page\s*\d+(?:\s*(?:of|/)\s*\d+)?|[-\u2013\u2014]\s*\d+\s*[-\u2013\u2014]|\d+\s*/\s*\d+|\d+)$",
                          re.IGNORECASE)


def is_page_furniture(text: str, title: str = "") -> bool:
    """One line that is a page number (``Page 3``, ``- 3 -``) or exactly the document title."""
    line = " ".join(text.split())
    if not line or "\n" in text.strip():
        return False
    if _PAGE_NUMBER.match(line):
        return True
    return bool(title) and line.casefold() == " ".join(title.split()).casefold()


_REVISION_HEADER = re.compile(r"\b(?:revision|revisions|rev|version|versions|ver|change|changes|changed|"
                              r"changelog|history|amendment|amendments|author|approved)\b", re.IGNORECASE)
_REVISION_HEADING = re.compile(r"\b(?:revision|version|change|document|amendment)\s+(?:history|log|record|records)\b"
                               r"|\bchange\s*log\b|\brevisions\b", re.IGNORECASE)
_REVISION_QUESTION = re.compile(r"\b(?:revis\w*|rev|version\w*|chang\w*|histor\w*|amend\w*|updat\w*)\b",
                                re.IGNORECASE)


def asks_revisions(question: str) -> bool:
    """Does ``question`` ask about revisions, versions, changes or history?"""
    return bool(question and _REVISION_QUESTION.search(question))


def is_revision_table(text: str, heading: str = "", question: str = "", kind: str = "text") -> bool:
    """A revision/version/change table or a fact under a revision-history heading.

    Never noise when the question asks about revisions, versions, changes or history.
    A table chunk (``kind`` ``table``) is read as rows ``Header: value; ...``
    (text/markup.read_table): its header is its first row's names.
    """
    if asks_revisions(question):
        return False
    if heading and _REVISION_HEADING.search(heading):
        return True
    lines = [ln.strip() for ln in text.split("\n") if ln.strip()]
    if kind == "table" and lines:
        return bool(_REVISION_HEADER.search(" ".join(p.split(": ", 1)[0] for p in lines[0].split("; ") if ": " in p)))
    rows = [ln for ln in lines if ln.startswith("|")]
    if not rows or len(rows) * 2 < len(lines):
        return False
    return bool(_REVISION_HEADER.search(rows[0]))


# ------------------------------------------------------------------ 2. relevance rules

def fact_overlap(q_terms: Sequence[str], weights: Dict[str, float], fact_terms: Any,
                 bridges: Optional[Bridges] = None) -> float:
    """IDF-weighted share of the question's terms in the fact (+ heading, title, scope)."""
    return weighted_share(q_terms, weights, fact_terms, bridges)


def question_codes(q_terms: Sequence[str]) -> List[str]:
    """Terms with both a letter and a digit (``wh-12``, ``q13``): product/standard codes."""
    return [t for t in q_terms if any(c.isdigit() for c in t) and any(c.isalpha() for c in t)]


# ------------------------------------------------------------------ 3. de-duplication

@text_memo()
def _dedup_tokens(text: str) -> Tuple[str, FrozenSet[str]]:
    """(the normalized key: tokens joined by spaces, the set of tokens) of a text."""
    tokens = tokenize(text)
    return " ".join(tokens), frozenset(tokens)


def near_duplicate(a: str, b: str, threshold: float) -> bool:
    """Equal normalized keys, or Jaccard >= threshold with no number/code/polarity difference."""
    (ka, sa), (kb, sb) = _dedup_tokens(a), _dedup_tokens(b)
    if ka == kb:
        return True
    union = sa | sb
    if not union:
        return True
    if len(sa & sb) / len(union) < threshold:
        return False
    for tok in sa ^ sb:
        if any(c.isdigit() for c in tok) or tok in _POLARITY_WORDS:
            return False
    return True


# ------------------------------------------------------------------ the phase

def _within_limit(question: str, pairs: List[Tuple[Fact, FrozenSet[str]]], overlap: List[float],
                  limit: int, retrieval: Optional[Retrieval], analyzer: Analyzer, index: Any,
                  bridges: Bridges, qa: Any = None) -> FrozenSet[int]:
    """The positions in ``pairs`` (facts in retrieval order, with their terms and
    ``overlap``, their ``fact_overlap`` with the whole question) of at most ``limit``
    facts to keep: those that hold most of the question (synonyms and other bridges
    included; retrieval order on a tie), so "How often do staff have to redo the awareness course?" keeps "The training
    is repeated every 12 months" though it ranks eighth.  Before them, each part of a
    question with several (``split_question``) keeps the facts that speak most to it (the
    largest overlap with the part's terms; on a tie the first ones, at most ``limit //
    (parts + 1)`` per part), so "How long is the refund window, and is there a processing
    fee?" keeps its refund-window chunk though the fee chunks hold more of the whole.
    ``qa`` (the question's analysis) gives the parts and their terms (``b_parts``)."""
    reserved: List[int] = []
    parts = ([(p.text, p.terms) for p in qa.b_parts] if qa is not None
             else [(p, None) for p in split_question(question)])
    share = max(1, limit // (len(parts) + 1))     # the rest of the slots go in retrieval order
    if len(parts) > 1:
        for part, p_terms in parts:
            if p_terms is None:
                p_terms = question_terms(part, retrieval, analyzer)
            if not p_terms:
                continue
            weights = term_weights(p_terms, index)
            scores = [round(fact_overlap(p_terms, weights, terms, bridges), 9) for _, terms in pairs]
            top = max(scores)
            tied = [i for i, sc in enumerate(scores) if top > 0 and sc == top]
            reserved.extend(i for i in tied[:share] if i not in reserved)
    chosen = set(reserved[:limit])
    for i in sorted(range(len(pairs)), key=lambda i: (-round(overlap[i], 6), i)):
        if len(chosen) >= limit:
            break
        chosen.add(i)
    return frozenset(chosen)


def _with_riders(keep_idx: List[int], riders: List[int], survivors: List[Tuple[Fact, FrozenSet[str]]],
                 joined: Dict[str, str], dropped: List[Dict[str, str]]) -> List[int]:
    """Step 5: ``keep_idx`` and the ``riders`` (positions in ``survivors`` of the chunks
    retrieval joined after their lead-in, ``joined``: chunk id -> lead-in's chunk id) whose
    lead-in is kept, in order; the others are added to ``dropped`` (``lead_in_dropped``)."""
    kept_ids = {survivors[i][0].chunk_id for i in keep_idx}
    out = list(keep_idx)
    for i in riders:
        cid = survivors[i][0].chunk_id
        if joined[cid] in kept_ids:
            out.append(i)
        else:
            dropped.append({"chunk_id": cid, "reason": "lead_in_dropped", "of": joined[cid]})
    return sorted(out)


def phase_b(question: str, facts: List[Fact], retrieval: Retrieval, index: Any,
            config: Dict[str, Any], qa: Any = None) -> List[Fact]:
    """Noise removed, question-relevant, de-duplicated, at most max_context_chunks facts."""
    return phase_b_detail(question, facts, retrieval, index, config, qa=qa)[0]


def _shape_reason(fact: Fact, heading: str, title: str, is_heading: bool, question: str, index: Any,
                  qa: Any = None) -> Optional[str]:
    """Phase B's first reasons, read off the fact's text and place alone (module docstring):
    artifact, page_header, boilerplate, heading, code, revision_table; None for none."""
    if is_artifact(fact.quote):
        return "artifact"
    if is_page_furniture(fact.quote, title):
        return "page_header"
    if is_boilerplate(fact.quote):
        return "boilerplate"
    if is_bare_heading(fact.quote, is_heading):
        return "heading"
    if chunk_kind(fact.chunk_id, index) == "code" and not is_synopsis(fact.quote):
        return "code"
    if (is_revision_table(fact.quote, heading, question, chunk_kind(fact.chunk_id, index)) if qa is None
            else not qa.asks_revisions and is_revision_table(fact.quote, heading, kind=chunk_kind(fact.chunk_id, index))):
        return "revision_table"
    return None


def phase_b_detail(question: str, facts: List[Fact], retrieval: Retrieval, index: Any,
                   config: Dict[str, Any], qa: Any = None) -> Tuple[List[Fact], List[Dict[str, str]]]:
    """``(kept facts, dropped)``; see the module docstring for the steps and reasons.
    ``qa`` (``question.analyze_question`` of ``question``) gives its terms, weights,
    bridges and parts instead of analyzing ``question`` here."""
    answer_cfg = config.get("answer", {})
    min_overlap = float(answer_cfg.get("min_fact_overlap", 0.15))
    dedup = float(answer_cfg.get("dedup_jaccard", 0.9))
    limit = int(config.get("retrieval", {}).get("max_context_chunks", 6))
    analyzer = analyzer_of(index, config)
    if qa is not None:
        q_terms, weights, bridges = qa.terms, qa.idf, qa.bridges
    else:
        q_terms = question_terms(question, retrieval, analyzer)
        weights = term_weights(q_terms, index)
        bridges = expansion_bridges(question, config, analyzer, index, retrieval.corrections)
    hits = _hit_map(retrieval)
    scopes = scope_table(index, analyzer)
    joined = getattr(retrieval, "joined", None) or {}

    dropped: List[Dict[str, str]] = []
    survivors: List[Tuple[Fact, FrozenSet[str]]] = []
    for fact in facts:
        heading, title, is_heading = chunk_context(fact.chunk_id, retrieval, index, hits)
        reason = _shape_reason(fact, heading, title, is_heading, question, index, qa)
        terms = frozenset(analyzer.analyze(fact.quote + "\n" + heading + "\n" + title)) | \
            scopes.get(fact.pdf, frozenset())
        if reason is None and q_terms and fact.chunk_id not in joined \
                and fact_overlap(q_terms, weights, terms, bridges) < min_overlap:
            reason = "off_topic"
        if reason is not None:
            dropped.append({"chunk_id": fact.chunk_id, "reason": reason})
        else:
            survivors.append((fact, terms))

    codes = question_codes(q_terms)
    if codes and any(any(c in terms for c in codes) for _, terms in survivors):
        kept_code = []
        for fact, terms in survivors:
            if any(c in terms for c in codes):
                kept_code.append((fact, terms))
            else:
                dropped.append({"chunk_id": fact.chunk_id, "reason": "code_mismatch"})
        survivors = kept_code

    # De-duplicate best-first: of two near-identical facts the one whose text, heading and
    # title hold more of the question survives (a FAQ's copy of a rule loses to the rule
    # under its "Refund window" heading), then the higher score, then the smaller chunk_id.
    overlap = [fact_overlap(q_terms, weights, terms, bridges) if q_terms else 0.0 for _, terms in survivors]
    order = sorted(range(len(survivors)),
                   key=lambda i: (-round(overlap[i], 9), -survivors[i][0].score, survivors[i][0].chunk_id))
    keep_idx: List[int] = []
    for i in order:
        fact = survivors[i][0]
        twin = next((j for j in keep_idx if near_duplicate(survivors[j][0].quote, fact.quote, dedup)), None)
        if twin is None:
            keep_idx.append(i)
        else:
            dropped.append({"chunk_id": fact.chunk_id, "reason": "duplicate",
                            "of": survivors[twin][0].chunk_id})
    riders = [i for i in sorted(keep_idx) if survivors[i][0].chunk_id in joined]   # step 5
    keep_idx = sorted(set(keep_idx) - set(riders))
    if len(keep_idx) > limit:
        capped = _within_limit(question, [survivors[i] for i in keep_idx], [overlap[i] for i in keep_idx],
                               limit, retrieval, analyzer, index, bridges, qa)
        dropped.extend({"chunk_id": survivors[i][0].chunk_id, "reason": "over_limit"}
                       for n, i in enumerate(keep_idx) if n not in capped)
        keep_idx = [i for n, i in enumerate(keep_idx) if n in capped]
    keep_idx = _with_riders(keep_idx, riders, survivors, joined, dropped)
    kept = [survivors[i][0] for i in keep_idx]
    position = {f.chunk_id: n for n, f in enumerate(facts)}
    dropped.sort(key=lambda d: (position.get(d["chunk_id"], len(facts)), d["chunk_id"]))
    return kept, dropped

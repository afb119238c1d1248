"""Guard stage: checks on an answer before it ships (seed 000/003, docs/decision_policy.md).

Each guard is a pure function of its inputs (no I/O, no clock) and returns a small record
that the decision stage (:mod:`mini_rag.guard.decision`) reads and the trace records.

==============================  =================================================================
function                        rule
==============================  =================================================================
``validate_citations(...)``     ids among the retrieved chunks, unique, at most ``max_citations``,
                                none missing on a non-refusal -> errors (BLOCK); a sentence that
                                shares no keyword with its cited chunk -> warning only
``classify_risk(q, ...)``       high / medium / low from keyword phrases on analyzed terms
``check_freshness(...)``        cited chunks superseded, or stale at ``as_of`` (review_by, else effective age)
``check_ambiguity(...)``        vague reference, or evidence that varies by plan/region/product
``low_confidence(...)``         no hits, fewer than ``min_chunks`` hits, or phase C refused
==============================  =================================================================

Conflicts between documents are in :mod:`mini_rag.guard.conflicts`.  Config sections: ``[guards]``
(as_of, max_citations, min_chunks, freshness_days_high_risk, freshness_days,
conflict_min_shared_terms, variant_min_overlap, parallel_min_similarity), ``[risk]`` (high,
medium) and ``[clarify]`` (vague_referents, vague_max_terms, dimension_values,
dimension_nouns, possessives).
"""
from __future__ import annotations

import collections
import datetime
import difflib
import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from . import conflicts as _conf
from ..text import corpus as _corpus
from ..errors import MiniRagError
from ..answer.relevance import covered, question_terms

__all__ = [
    "AmbiguityResult",
    "CitationCheck",
    "FreshnessResult",
    "RiskResult",
    "check_ambiguity",
    "check_freshness",
    "classify_risk",
    "low_confidence",
    "parse_date",
    "validate_citations",
]

RISK_LEVELS = ("low", "medium", "high")          # ascending


# ------------------------------------------------------------------ citations

@dataclass
class CitationCheck:
    valid: bool
    errors: List[str] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)


def validate_citations(citations: Sequence[Any], retrieved_ids: Sequence[str], is_refusal: bool,
                       max_citations: int = 5, sentences: Optional[Sequence[str]] = None,
                       chunk_texts: Optional[Dict[str, str]] = None, analyzer=None) -> CitationCheck:
    """Seed 000/003's citation rules, on the citations as the generator declared them
    (one per answer sentence, in order; a missing one is ``None`` or ``""``).

    Errors (each makes the decision BLOCK), in this order:

    * ``answer has no citations`` -- a non-refusal that cites nothing;
    * ``sentence N has no citation`` -- a cited slot that is empty or not a string;
    * ``citation 'X' does not match any retrieved chunk``;
    * ``duplicate citation 'X'``;
    * ``N citations, at most M allowed`` (counted over distinct ids).

    A refusal may cite nothing.  Warning (non-blocking): ``sentence N shares no keyword
    with its cited chunk 'X'`` -- computed when ``sentences``, ``chunk_texts`` and
    ``analyzer`` are given, on analyzed terms.

    >>> validate_citations(["a#p0", "a#p0"], ["a#p0"], False).errors
    ["duplicate citation 'a#p0'"]
    """
    errors: List[str] = []
    warnings: List[str] = []
    retrieved = set(retrieved_ids)
    if not is_refusal and not citations:
        errors.append("answer has no citations")
    seen: Set[str] = set()                      # a set: linear in the citations (issue 44)
    for i, cid in enumerate(citations, 1):
        if not isinstance(cid, str) or not cid:
            errors.append("sentence %d has no citation" % i)
            continue
        if cid not in retrieved:
            errors.append("citation %r does not match any retrieved chunk" % cid)
        if cid in seen:
            errors.append("duplicate citation %r" % cid)
        else:
            seen.add(cid)
    if len(seen) > max_citations:
        errors.append("%d citations, at most %d allowed" % (len(seen), max_citations))
    if sentences is not None and chunk_texts is not None and analyzer is not None:
        for i, (sentence, cid) in enumerate(zip(sentences, citations), 1):
            text = chunk_texts.get(cid) if isinstance(cid, str) else None
            if text is None:
                continue
            if not set(analyzer.analyze(sentence)) & set(analyzer.analyze(text)):
                warnings.append("sentence %d shares no keyword with its cited chunk %r" % (i, cid))
    return CitationCheck(not errors, errors, warnings)


# ------------------------------------------------------------------ risk

@dataclass
class RiskResult:
    level: str                                   # "high" | "medium" | "low"
    matched: List[str] = field(default_factory=list)   # keyword phrases that decided it

    def to_json(self) -> dict:
        return asdict(self)


def classify_risk(question: str, analyzer, risk: Dict[str, List[str]],
                  terms: Optional[Sequence[str]] = None) -> RiskResult:
    """Risk class of a question from the ``[risk]`` keyword lists.

    Each keyword phrase is analyzed like the question (so ``limits`` matches ``limit``
    and ``deletion`` matches ``deleted``) and matches where its terms occur
    consecutively in the question's analyzed terms.  Longer matches take their
    positions first, so "rate limit" (medium) claims the "limit" that would otherwise
    match the high-risk "limit"; among equal lengths high beats medium.  The level is
    the highest level among the matches that keep at least one position; no match is
    ``low``.  ``matched`` lists those phrases, sorted.

    >>> from mini_rag.text.analysis import Analyzer
    >>> classify_risk("What is the API rate limit?", Analyzer(), {"high": ["limit"], "medium": ["rate limit"]}).level
    'medium'

    ``terms``: the question's analyzed terms when already known (``QuestionAnalysis.analyzed``).
    """
    terms = analyzer.analyze(question) if terms is None else list(terms)
    matches: List[Tuple[int, int, int, str]] = []       # (-length, -level, start, phrase)
    for level_name in ("high", "medium"):
        level = RISK_LEVELS.index(level_name)
        for phrase in risk.get(level_name, []):
            pterms = analyzer.analyze(phrase)
            n = len(pterms)
            if not n:
                continue
            for start in range(len(terms) - n + 1):
                if terms[start:start + n] == pterms:
                    matches.append((-n, -level, start, phrase))
    matches.sort()
    taken = [False] * len(terms)
    best = 0
    kept = set()
    for neg_len, neg_level, start, phrase in matches:
        span = range(start, start - neg_len)
        if all(taken[i] for i in span):
            continue
        for i in span:
            taken[i] = True
        best = max(best, -neg_level)
        kept.add(phrase)
    return RiskResult(RISK_LEVELS[best], sorted(kept))


# ------------------------------------------------------------------ freshness

_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def parse_date(value: Any, where: str = "date") -> datetime.date:
    """An ISO ``YYYY-MM-DD`` date (``datetime.date`` values pass through)."""
    if isinstance(value, datetime.date):
        return value
    if isinstance(value, str) and _ISO.match(value.strip()):
        try:
            return datetime.date.fromisoformat(value.strip())
        except ValueError:
            pass
    raise MiniRagError("%s must be a date YYYY-MM-DD, got %r" % (where, value))


@dataclass
class FreshnessResult:
    stale: bool                                  # some cited chunk is stale for this risk level
    threshold_days: int                          # the effective-age limit applied
    as_of: str
    sources: List[Dict[str, Any]] = field(default_factory=list)   # one per stale cited chunk

    def to_json(self) -> dict:
        return asdict(self)


#: ``status`` values of a document that is no longer in force (front matter, or read from
#: its text by mini_rag.text.corpus).
OUT_OF_FORCE = _corpus.OUT_OF_FORCE


def check_freshness(cited: Sequence[Tuple[str, str, str, Dict[str, Any]]], risk_level: str,
                    guards: Dict[str, Any], question: str = "") -> FreshnessResult:
    """Staleness of the chunks an answer cites, at the configured ``as_of`` date.

    ``cited`` holds ``(chunk_id, doc_id, effective, metadata)`` per cited chunk.  A chunk
    is stale when (decision_policy.md rule 4):

    0. its document says it is no longer in force: its front matter names a successor
       (``superseded_by``) or its ``status`` is superseded, withdrawn, retired, obsolete
       or archived (rule ``superseded``: stale at every risk level and any date);
    1. its document has ``review_by`` and ``as_of`` is after that date (a ``review_by``
       that is not a YYYY-MM-DD date counts as stale: nothing vouches for the document);
    2. otherwise, its ``effective`` date is more than ``freshness_days_high_risk`` (365)
       days before ``as_of`` for a high-risk question, ``freshness_days`` (730) otherwise
       (a window of 0 is off: a corpus of one's own has none unless configured);
    3. a chunk with neither date is not stale (there is nothing to measure).

    Exception (issue 17, "a question that names an edition answers from that one"): a
    chunk of a document no longer in force whose editions (``metadata["versions_read"]
    ["editions"]``, read by mini_rag.text.corpus) include one that ``question`` names
    (``conflicts.named_editions``: "in the 2019 policy", "under v2.3") is not stale: the
    question asked for that old edition.  Rules 1 and 2 still apply to a document in force.

    Staleness is computed for every risk level (the trace shows it); only the decision
    stage decides that low-risk questions are answered from old documents anyway.
    """
    as_of = parse_date(guards.get("as_of"), "config [guards] as_of")
    limit = int(guards["freshness_days_high_risk"] if risk_level == "high" else guards["freshness_days"])
    sources: List[Dict[str, Any]] = []
    named = _conf.named_editions(question) if question else frozenset()
    for chunk_id, doc_id, effective, metadata in cited:
        review_by = (metadata or {}).get("review_by")
        row: Optional[Dict[str, Any]] = None
        successor = str((metadata or {}).get("superseded_by") or "").strip()
        if _corpus.out_of_force(metadata) and _asked_edition(metadata, named):
            continue                                   # the question asked for this old edition
        if _corpus.out_of_force(metadata):
            row = {"rule": "superseded", "by": successor}
        elif review_by not in (None, ""):
            try:
                due = parse_date(review_by)
            except MiniRagError:
                row = {"rule": "invalid_review_by", "date": str(review_by)}
            else:
                if as_of > due:
                    row = {"rule": "review_by", "date": due.isoformat()}
        elif effective:
            try:
                eff = parse_date(effective)
            except MiniRagError:
                row = {"rule": "invalid_effective", "date": str(effective)}
            else:
                age = (as_of - eff).days
                if limit > 0 and age > limit:          # 0: no freshness window (off)
                    row = {"rule": "effective", "date": eff.isoformat(), "age_days": age}
        if row is not None:
            sources.append(dict([("chunk_id", chunk_id), ("doc_id", doc_id)] + sorted(row.items())))
    return FreshnessResult(bool(sources), limit, as_of.isoformat(), sources)


def _asked_edition(metadata: Optional[Dict[str, Any]], named) -> bool:
    """True when the document's editions (as mini_rag.text.corpus read them) meet ``named``."""
    if not named:
        return False
    read = (metadata or {}).get("versions_read") or {}
    editions = read.get("editions") if isinstance(read, dict) else None
    return bool(isinstance(editions, list) and named & set(editions))


# ------------------------------------------------------------------ ambiguity

@dataclass
class AmbiguityResult:
    ambiguous: bool
    kind: str = ""                               # "" | "vague_reference" | "variant"
    detail: Dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict:
        return asdict(self)


# Modal verbs are not stopwords for the analyzer, but they name nothing.
_MODALS = ("can", "may", "must", "will", "shall", "might", "need", "ought")
_NEGATION = re.compile(r"\b(?:no|not|never|none|without|cannot|can't|non)\b|n't\b", re.IGNORECASE)


def check_ambiguity(question: str, facts: Sequence, analyzer, clarify: Dict[str, Any],
                    guards: Dict[str, Any], context: Optional[Dict[str, Tuple[str, str]]] = None,
                    anchor: Sequence[str] = (), retrieval=None,
                    bridges: Optional[Dict[str, List[frozenset]]] = None, qa: Any = None) -> AmbiguityResult:
    """Does answering need a choice the user has not made?  (decision_policy.md rule 5)

    (a) **Vague reference**: the question contains one of ``vague_referents`` (it, that,
        this, ... as whole words) and has at most ``vague_max_terms`` (2) content terms
        (analyzed terms minus modal verbs).  "Is it allowed?" and "What is the limit for
        that?" point at something never named; "Is it allowed to store SSNs in
        plaintext?" names its subject (3 content terms) and is not vague.

    (b) **Variant dependence**: split the evidence ``facts`` (phase B) into units (list
        items, table rows, sentences).  A unit *speaks to the question* when it, its
        chunk's heading and its document's title together contain at least
        ``ceil(variant_min_overlap * n)`` of the question's n content terms (qualifier
        words excluded; the heading scopes a paragraph such as "The Pro plan allows 600
        requests per minute." under "Rate limits") and the unit states a value: a
        quantity, or a polarity cue (may/can/allowed/no/not/without/...).  Its
        qualifiers are the plan / tier / region / product names that the unit or its
        heading names (:func:`mini_rag.guard.conflicts.qualifiers` with ``dimension_values``
        and ``dimension_nouns``).  The question is ambiguous when two such units have
        different non-empty qualifier sets and different values, and the question names
        none of the qualifiers of the units that speak to it.  Different values: both
        units state quantities with a common unit and different values for it (a count
        and a distance are not the same quantity); or not both state quantities and
        they differ in negation or in stating one ("no penalty" vs "a penalty of 20%").
        One unit that holds every content term of the question, names two or more
        qualifiers and states two different values in one unit ("kept for 30 days on
        the Free plan and for 90 days on the Pro plan") is ambiguous on its own, under
        the same condition on the question.
        ``anchor``: the chunk ids the answer cites; when given, one unit of the pair
        (or the enumerating unit) must come from them -- the answer itself is scoped to
        a variant the question did not name.
        ``context`` maps a chunk id to its (heading, title).

    (c) **Parallel variants** (``_parallel_variants``): the cited unit and another unit of
        the same document are the same sentence about two variants, and the question names
        neither.  Units here must hold the question's terms themselves (heading and title
        not counted), so the other rows of a cited table do not pair.

    (d) **Stated dependence** (``_stated_dependence``): the cited section says the answer
        depends on something ("depend on the market", "varies by region", "depends on
        whether the process is standard or non-standard") and the question names none of
        the variants (the section's table rows, the sides of "whether"), and does not ask
        whether something holds always, ever or for every case ("it depends" answers that).
        A table whose header cells name plans, regions or markets ("| Change class |
        United States (FDA) | European Union (EMA) |") is a second set of variants the
        question must choose from too; and a cited chunk under a heading that splits its
        section by variant ("Downgrades and cancellation by plan") states the dependence
        itself, its variants being the list items' leading names, the table rows, and the
        plans (regions, ...) that open the section's paragraphs among every accepted hit
        (``retrieval``), not only phase B's ("Pro plans carry a monthly uptime commitment
        of 99.5%." under "Commitments by plan").

    ``retrieval``: its typo corrections apply to the question's terms ("mnth" is "month").
    ``bridges`` (``relevance.expansion_bridges``): a unit holds a question term through
    one of its alternatives ("min" by "minimum"), and a question names what a synonym of
    its terms names ("app logs" names the row "Application logs").

    (a) is checked first; with it, a variant named only by an owner ("our plan", "my
    tier", "this region": one of ``vague_referents`` or ``possessives`` right before one
    of ``dimension_nouns``) when the question names no qualifier: the asker has a
    variant in mind and has not said which.  ``detail`` carries the referent, or the
    qualifiers found.
    """
    values = clarify.get("dimension_values", [])
    nouns = clarify.get("dimension_nouns", [])
    modal_terms = set()
    for m in _MODALS:
        modal_terms.update(analyzer.analyze(m))
    # the question's content terms: scaffold (how long, what, ...) and modals removed
    # (``qa``: the question's analysis, whose terms, words and qualifiers are read here)
    q_terms = [t for t in (question_terms(question, retrieval, analyzer) if qa is None else qa.terms)
               if t not in modal_terms]

    words = re.findall(r"[a-z']+", question.lower()) if qa is None else list(qa.words)
    referents = [w for w in clarify.get("vague_referents", []) if w.lower() in words]
    if referents and len(set(q_terms)) <= int(clarify.get("vague_max_terms", 2)):
        return AmbiguityResult(True, "vague_reference", {"referents": sorted(referents),
                                                        "content_terms": sorted(set(q_terms))})

    q_quals = _conf.qualifiers(question, values, nouns) if qa is None else qa.qualifiers
    owners = {w.lower() for w in list(clarify.get("vague_referents", [])) + list(clarify.get("possessives", []))}
    noun_set = {n.lower() for n in nouns}
    unnamed = [" ".join(words[i:i + 2]) for i in range(len(words) - 1)
               if words[i] in owners and words[i + 1].rstrip("s") in noun_set]
    if unnamed and not q_quals:
        # "How much storage is included in our plan?": which plan is ours, the question
        # does not say, and the documents answer per plan
        return AmbiguityResult(True, "vague_reference", {"referents": sorted(set(unnamed)),
                                                        "content_terms": sorted(set(q_terms))})
    qual_terms = set()
    for v in values:
        qual_terms.update(analyzer.analyze(v))
    for n in nouns:
        qual_terms.update(analyzer.analyze(n))
    needed_terms = set(q_terms) - qual_terms
    if not needed_terms:
        return AmbiguityResult(False)
    need = max(1, math.ceil(float(guards.get("variant_min_overlap", 0.5)) * len(needed_terms)))
    def held(terms) -> set:
        return {t for t in needed_terms if covered(t, terms, bridges)}
    asked = set(analyzer.analyze(question) if qa is None else qa.analyzed) | set(q_terms)
    asked |= {next(iter(alt)) for t in q_terms for alt in (bridges or {}).get(t, ()) if len(alt) == 1}

    speaking: List[Tuple[frozenset, Tuple, str]] = []     # (qualifiers, value signature, chunk id)
    on_point: List[Tuple[str, str, str, int]] = []         # (document, chunk id, unit, terms held): (c)
    for fact in facts:
        heading, title = (context or {}).get(fact.chunk_id, ("", ""))
        scope_terms = set(analyzer.analyze(heading + "\n" + title)) if (heading or title) else set()
        heading_quals = _conf.qualifiers(heading, values, nouns) if heading else frozenset()
        for unit in _conf.evidence_units(fact.quote):
            unit_terms = set(analyzer.analyze(unit))
            present = held(scope_terms | unit_terms)
            if len(present) < need:
                continue
            on_unit = len(held(unit_terms))
            if on_unit >= need:
                on_point.append((fact.pdf, fact.chunk_id, unit, on_unit))
            qty = tuple(sorted(set(_conf.unit_quantities(unit, analyzer))))
            negated = bool(_NEGATION.search(unit))
            if not qty and not negated and not _conf.polarity(unit):
                continue                                    # states no value
            quals = _conf.qualifiers(unit, values, nouns) | heading_quals
            if quals:
                speaking.append((quals, (qty, negated), fact.chunk_id))
            if (len(quals) >= 2 and present == needed_terms and not (q_quals & quals)
                    and _enumerates(qty) and (not anchor or fact.chunk_id in anchor)):
                # one unit lists the variants itself: "30 days on the Free plan and 90
                # days on the Pro plan"
                return AmbiguityResult(True, "variant", {"qualifiers": sorted(quals),
                                                         "chunks": [fact.chunk_id]})
    all_quals = sorted(set().union(*[q for q, _, _ in speaking])) if speaking else []
    if q_quals & set(all_quals):
        return AmbiguityResult(False)
    for i, (qa, va, ca) in enumerate(speaking):
        for qb, vb, cb in speaking[i + 1:]:
            if anchor and ca not in anchor and cb not in anchor:
                continue
            if qa != qb and _values_differ(va, vb):
                return AmbiguityResult(True, "variant", {"qualifiers": all_quals,
                                                         "chunks": sorted({ca, cb})})
    if anchor:
        pair = _parallel_variants(on_point, anchor, asked, analyzer,
                                  float(guards.get("parallel_min_similarity", 0.5)))
        if pair:
            return AmbiguityResult(True, "variant", pair)
        if not _UNIVERSAL & set(words):
            stated = _stated_dependence(facts, anchor, held, need, asked, q_quals, (values, nouns),
                                        analyzer, context, retrieval)
            if stated:
                return AmbiguityResult(True, "variant", stated)
    return AmbiguityResult(False)


#: "... depend on the market", "... varies by region", "... differ depending on whether ...".
_DEPENDS = re.compile(r"\b(?:depends?|depending|dependent|vary|varies|varying|differs?|differing)\s+"
                      r"(?:on|upon|by|between|across|according\s+to)\b", re.IGNORECASE)
#: "Must X always ...?", "Does every ...?": the question asks whether a rule holds in general;
#: "it depends" is its answer, not a reason to ask back.
_UNIVERSAL = frozenset("always every all ever never any each".split())
_DEPENDS_ASKED = re.compile(r"\b(?:depend\w*|vari\w*|differ\w*)\b")
_WHETHER = re.compile(r"\bwhether\s+(?P<a>[^,;.]*?)\s+or\s+(?P<b>[\w-]+)", re.IGNORECASE)


def _variant_names(text: str, unit: str) -> List[str]:
    """The variants a stated dependence chooses between: the first cells of the data rows
    of the tables in ``text`` (the chunk, pipe lines or a table chunk's rows as the corpus
    reader wrote them, ``conflicts.read_rows``; the caller adds the tables of its section), and
    the two sides of "whether A or B" in the stating ``unit`` (the last word of A, the
    word B; "or not" names no second variant)."""
    names: List[str] = []
    block: List[str] = []
    rows = _conf.read_rows(text)                     # a table chunk as the corpus reader wrote it
    if rows is not None:
        first = max(rows, key=len)[0][0]             # the first column's header (the fullest row's)
        names.extend(row[0][1] for row in rows if row[0][0] == first)
        text = ""
    for line in text.split("\n") + [""]:
        line = line.strip()
        if line.startswith("|"):
            block.append(line)
            continue
        rows = [r for r in block if not _conf._TABLE_RULE.match(r)]
        names.extend(_conf._cells(r)[0] for r in rows[1:] if _conf._cells(r)[0])   # rows[0]: the header
        block = []
    m = _WHETHER.search(unit)
    if m:
        names.append(m.group("a").split()[-1] if m.group("a").split() else "")
        if m.group("b").lower() != "not":
            names.append(m.group("b"))
    return [n for n in names if n]


def _by_dimension(nouns: Sequence[str]) -> "re.Pattern[str]":
    """A heading that splits its section by variant: "Limits by plan", "Fees per region"."""
    alt = "|".join(re.escape(n) for n in sorted(nouns, key=len, reverse=True)) or "(?!)"
    return re.compile(r"\b(?:by|per|for\s+each)\s+(?:%s)(?:s|es)?\b" % alt, re.IGNORECASE)


def _column_variants(text: str, dimensions: Tuple[Sequence[str], Sequence[str]]) -> List[str]:
    """The variants a table lays out as columns: the header cells after the first that
    name a plan, region, market, ... ("| Change class | United States (FDA) | European
    Union (EMA) |", or a table chunk's rows as read: "Change class: Minor; United States
    (FDA): Annual report; ..."); a header of attributes ("| Tier | RPO | RTO |") names none."""
    names: List[str] = []
    rows = _conf.read_rows(text)                     # a table chunk as the corpus reader wrote it
    if rows is not None:
        heads = [head for head, _ in max(rows, key=len)[1:]]
        return [h for n, h in enumerate(heads) if _conf.qualifiers(h, *dimensions) and h not in heads[:n]]
    lines = [line.strip() for line in text.split("\n")]
    for i, line in enumerate(lines):
        if not line.startswith("|") or (i and lines[i - 1].startswith("|")):
            continue                                         # only the first row of a table
        cells = [c for c in _conf._cells(line)[1:] if _conf.qualifiers(c, *dimensions)]
        names.extend(c for c in cells if c not in names)
    return names


def _list_variants(text: str, dimensions: Tuple[Sequence[str], Sequence[str]]) -> List[str]:
    """The variants a list names, one per item that starts with one ("- Pro plan, monthly
    billing: ..." names ``pro``), each once."""
    names: List[str] = []
    for line in text.split("\n"):
        m = _LIST_LEAD.match(line)
        if not m:
            continue
        quals = sorted(_conf.qualifiers(m.group(1), *dimensions))
        if quals and quals[0] not in names:
            names.append(quals[0])
    return names


def _lead_variant(text: str, dimensions: Tuple[Sequence[str], Sequence[str]]) -> List[str]:
    """The variant a paragraph opens with, in its first five words ("Pro plans carry a
    monthly uptime commitment of 99.5%." names ``pro``), as a one-item list, or []."""
    quals = sorted(_conf.qualifiers(" ".join(text.split()[:5]), *dimensions))
    return quals[:1]


_LIST_LEAD = re.compile(r"^\s*(?:[-*\u2022]|\d{1,2}[.)])\s+([^:,;]{1,60})[:,;]")


def _unchosen(names: List[str], asked: set, q_quals: frozenset,
              dimensions: Tuple[Sequence[str], Sequence[str]], analyzer) -> bool:
    """Are there two variants or more, and does the question name none of them?"""
    if len(names) < 2:
        return False                                         # no variants to choose between
    if q_quals and any(_conf.qualifiers(n, *dimensions) for n in names):
        return False                                         # the question names a plan, region, ...
    term_sets = [set(analyzer.analyze(n)) for n in names]
    seen = collections.Counter(t for ts in term_sets for t in ts)
    own = [{t for t in ts if seen[t] == 1} for ts in term_sets]
    return not any((mine & asked) if mine else (ts and ts <= asked) for ts, mine in zip(term_sets, own))


def _stated_dependence(facts: Sequence, anchor: Sequence[str], held, need: int, asked: set,
                       q_quals: frozenset, dimensions: Tuple[Sequence[str], Sequence[str]], analyzer,
                       context: Optional[Dict[str, Tuple[str, str]]], retrieval=None) -> Optional[Dict[str, Any]]:
    """Rule (d): the cited section says the answer depends on something the question leaves open.

    A unit of a cited chunk, or of another chunk under the same heading of the same
    document (the sentence that introduces a cited table), that states a dependence
    ("Retention periods for executed batch records depend on the market", "The data
    required depend on whether the process is standard or non-standard") and speaks to
    the question: it, its heading and its title hold ``need`` of the question's terms
    (``held``), one of them before the dependence cue (the thing that depends is what is
    asked).  It makes the question ambiguous when the question names none of the
    variants (``_variant_names``; a variant is named by a term no other variant has, or,
    when it has none, by all of its terms: "standard process" beside "non-standard
    process").  There must be two variants or more: a dependence whose variants the
    section does not list is prose ("the complexity of a problem depends on the model"),
    not a choice to offer.  A qualifier in the question (``q_quals``: a plan, a region,
    ...) names a variant when the variants are qualifiers too ("for the US market"
    against rows "United States", "European Union"); it does not when they are of
    another kind (the "EU dossier" when the data depend on whether the process is
    standard).  A question that asks about the dependence itself ("What does the price
    depend on?") is not ambiguous.
    """
    if _DEPENDS_ASKED.search(" ".join(sorted(asked))):
        return None                                          # "What does X depend on?" asks it
    anchored = set(anchor)
    sections = {(f.pdf, (context or {}).get(f.chunk_id, ("", ""))[0]) for f in facts if f.chunk_id in anchored}
    by_noun = _by_dimension(dimensions[1])
    siblings: Dict[Tuple[str, str], List[str]] = {}
    for hit in (getattr(retrieval, "hits", None) or ()):      # every accepted hit, in rank order
        siblings.setdefault((hit.doc_id, hit.heading or ""), []).append(hit.text)
    for fact in facts:
        heading, title = (context or {}).get(fact.chunk_id, ("", ""))
        if fact.chunk_id not in anchored and not (heading and (fact.pdf, heading) in sections):
            continue
        scope = set(analyzer.analyze(heading + "\n" + title)) if (heading or title) else set()
        m = by_noun.search(heading) if (heading and fact.chunk_id in anchored) else None
        if (m and held(set(analyzer.analyze(heading[:m.start()])))
                and len(held(set(analyzer.analyze(fact.quote)) | scope)) >= need):
            # "## Downgrades and cancellation by plan": the section answers per variant
            names = _variant_names(fact.quote, "") + _list_variants(fact.quote, dimensions)
            for text in [fact.quote] + siblings.get((fact.pdf, heading), []):
                # the section's paragraphs, each about one variant ("Pro plans carry ...")
                names.extend(n for n in _lead_variant(text, dimensions) if n not in names)
            if _unchosen(names, asked, q_quals, dimensions, analyzer):
                return {"qualifiers": sorted({n.lower() for n in names}), "chunks": [fact.chunk_id],
                        "dependence": m.group().lower()}
        for unit in _conf.evidence_units(fact.quote):
            m = _DEPENDS.search(unit)
            if not m:
                continue
            if (len(held(set(analyzer.analyze(unit)) | scope)) < need
                    or not held(set(analyzer.analyze(unit[:m.start()])))):
                continue
            names = _variant_names(fact.quote, unit)
            columns = _column_variants(fact.quote, dimensions)
            for other in facts:                              # the table the sentence introduces
                if other is not fact and heading and other.pdf == fact.pdf and \
                        (context or {}).get(other.chunk_id, ("", ""))[0] == heading:
                    names.extend(n for n in _variant_names(other.quote, "") if n not in names)
                    columns.extend(n for n in _column_variants(other.quote, dimensions) if n not in columns)
            for group in (names, columns):
                if _unchosen(group, asked, q_quals, dimensions, analyzer):
                    return {"qualifiers": sorted({n.lower() for n in group}), "chunks": [fact.chunk_id],
                            "dependence": unit[m.start():m.end()].lower()}
    return None


_WORDS = re.compile(r"\w[\w.,:/°±%+-]*\w|\w|[%°±]")


def _parallel_variants(units: Sequence[Tuple[str, str, str, int]], anchor: Sequence[str], q_terms: set,
                       analyzer, min_similarity: float) -> Optional[Dict[str, Any]]:
    """Rule (c): two units of one document that say the same thing about different variants.

    The cited unit (of the cited chunks' units, one holding the most question terms) and
    another unit of the same document, both speaking to the question,
    whose word sequences match (``difflib`` ratio >= ``min_similarity``) except in two or
    more places that carry content -- one names the variant, another states its value:
    "On CM-1, material is diverted from 90 seconds before ..." and "On CM-2, material is
    diverted from 4 minutes before ...".  When the question holds no term of any of those
    places, it has not said which variant it means.  Two documents are never paired here
    (that is a conflict, :mod:`mini_rag.guard.conflicts`).
    """
    anchored = set(anchor)
    best = max([n for _, c, _, n in units if c in anchored] or [0])
    tokens = [[w.casefold() for w in _WORDS.findall(u)] for _, _, u, _ in units]
    for i, (doc_a, chunk_a, _, held) in enumerate(units):
        if chunk_a not in anchored or held < best:
            continue
        for j, (doc_b, chunk_b, _, _) in enumerate(units):
            if j == i or doc_b != doc_a or tokens[j] == tokens[i]:
                continue
            sm = difflib.SequenceMatcher(None, tokens[i], tokens[j], autojunk=False)
            if sm.ratio() < min_similarity:
                continue
            places = []
            for op, a1, a2, b1, b2 in sm.get_opcodes():
                if op == "equal":
                    continue
                words = tokens[i][a1:a2] + tokens[j][b1:b2]
                terms = set(analyzer.analyze(" ".join(words)))
                if not terms and not any(any(c.isdigit() for c in w) for w in words):
                    continue                                 # "a" vs "the": no content
                if terms & q_terms:
                    places = []
                    break                                    # the question picks a side
                places.append((" ".join(tokens[i][a1:a2]), " ".join(tokens[j][b1:b2])))
            if len(places) >= 2:
                return {"qualifiers": sorted({places[0][0], places[0][1]} - {""}),
                        "chunks": sorted({chunk_a, chunk_b})}
    return None


def _by_unit(qty: Tuple) -> Dict[str, set]:
    """``{unit: {values}}`` of a unit's quantities."""
    out: Dict[str, set] = {}
    for value, unit in qty:
        out.setdefault(unit, set()).add(value)
    return out


def _enumerates(qty: Tuple) -> bool:
    """Does one unit state two different values in the same unit (30 days ... 90 days)?"""
    return any(len(v) >= 2 for v in _by_unit(qty).values())


def _values_differ(a: Tuple, b: Tuple) -> bool:
    """Two units give different values for the same asked quantity: when both state
    quantities, they share a unit and the values for it differ (60 vs 300 requests per
    minute; a count and a distance are not the same quantity); otherwise only one
    states a quantity, or their negation differs ("no penalty" vs "a penalty of 20%")."""
    (qa, na), (qb, nb) = a, b
    if qa and qb:
        units_a, units_b = _by_unit(qa), _by_unit(qb)
        return any(units_a[u] != units_b[u] for u in set(units_a) & set(units_b))
    return na != nb or bool(qa) != bool(qb)


# ------------------------------------------------------------------ low confidence

def low_confidence(hit_count: int, refused: bool, refusal_reasons: Sequence[str],
                   guards: Dict[str, Any]) -> List[str]:
    """Reasons for ABSTAIN (low confidence), empty when confident enough.

    * ``no_hits``: nothing was accepted above the similarity threshold (after fallback);
    * ``too_few_hits``: fewer than ``min_chunks`` accepted hits.  The default is 1, not
      seed 000's 2: under the QA contract every accepted hit has already passed
      ``min_similarity`` (0.20, fallback 0.18), and one paragraph can fully answer a
      question (one sentence, one citation), so demanding two would refuse every fact
      stated once in the corpus;
    * ``answer_refused:<reason>``: phase C (or the plugged-in generator, after
      validation) produced no answer -- the evidence does not cover the question's key
      terms, lacks the asked kind of value, or is below its threshold.
    """
    reasons: List[str] = []
    min_chunks = int(guards.get("min_chunks", 1))
    if hit_count == 0:
        reasons.append("no_hits")
    elif hit_count < min_chunks:
        reasons.append("too_few_hits")
    if refused and hit_count > 0:
        if refusal_reasons:
            reasons.extend("answer_refused:%s" % r for r in refusal_reasons)
        else:
            reasons.append("answer_refused")
    return reasons

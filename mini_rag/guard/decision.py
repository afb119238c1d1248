"""Decision stage: ANSWER, ABSTAIN, CLARIFY or BLOCK, by seed 000's precedence.

The guards (:mod:`mini_rag.guard.guards`, :mod:`mini_rag.guard.conflicts`) each say what they found;
this stage applies docs/decision_policy.md's precedence, first match wins:

====  =========  ===================  =====================================================
step  decision   reason prefix        when
====  =========  ===================  =====================================================
1     BLOCK      ``invalid_citations``  the answer's citations failed validation
2     ABSTAIN    ``conflict``           chunks of different documents contradict each other
3     ABSTAIN    ``low_confidence``     no / too few hits, or phase C refused
4     ABSTAIN    ``stale_sources``      cited evidence stale and the question is high/medium risk,
                                        or cited evidence superseded (any risk)
5     CLARIFY    ``ambiguous``          vague reference, or the answer depends on a variant
6     ANSWER                            otherwise
====  =========  ===================  =====================================================

``reasons`` lists every rule that fired, in precedence order (so the trace shows that a
question was both low-confidence and vague), each as ``"<prefix>"`` or
``"<prefix>:<detail>"``; ``decision`` is the first one's.  ``message`` is the text for a
person: for a conflict it names both sources and quotes them (seed 000: surface the
conflict, never choose silently).  Every non-ANSWER decision ships the refusal token as
the claim with no citations (done by the pipeline).

>>> decide(Signals(citation_errors=["duplicate citation 'a#p0'"], low_confidence=["no_hits"])).decision
'BLOCK'
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, Sequence

__all__ = ["ANSWER", "ABSTAIN", "BLOCK", "CLARIFY", "Decision", "Signals", "decide", "DECISIONS"]

ANSWER, ABSTAIN, CLARIFY, BLOCK = "ANSWER", "ABSTAIN", "CLARIFY", "BLOCK"
DECISIONS = (ANSWER, ABSTAIN, CLARIFY, BLOCK)

MESSAGES = {
    "invalid_citations": "I can't provide a cited answer because the citations couldn't be "
                         "verified against the retrieved documents.",
    "low_confidence": "I don't have enough reliable evidence in the retrieved documents to "
                      "answer this safely.",
    "stale_sources": "The sources this answer would rest on are out of date, so I can't answer "
                     "confidently.",
    "vague_reference": "Could you say what you are asking about? The question refers to "
                       "something it does not name.",
    "variant": "The answer depends on a choice the question does not make. Could you say which "
               "one you mean",
}


@dataclass
class Signals:
    """What the guards found; the decision's only input."""
    citation_errors: List[str] = field(default_factory=list)
    conflicts: List[Any] = field(default_factory=list)          # conflicts.ConflictPair
    low_confidence: List[str] = field(default_factory=list)     # guards.low_confidence reasons
    risk: str = "low"
    stale_sources: List[Dict[str, Any]] = field(default_factory=list)
    as_of: str = ""
    ambiguity_kind: str = ""                                    # "" | "vague_reference" | "variant"
    ambiguity_detail: Dict[str, Any] = field(default_factory=dict)


@dataclass
class Decision:
    decision: str
    reasons: List[str]
    message: str

    def to_json(self) -> dict:
        return asdict(self)


def decide(s: Signals) -> Decision:
    """Apply the precedence table above to ``s``."""
    fired: List[tuple] = []                    # (decision, [reasons], message)
    if s.citation_errors:
        fired.append((BLOCK, ["invalid_citations:%s" % e for e in s.citation_errors],
                      MESSAGES["invalid_citations"]))
    if s.conflicts:
        fired.append((ABSTAIN, ["conflict:%s:%s:%s" % (c.kind, c.chunk_a, c.chunk_b) for c in s.conflicts],
                      conflict_message(s.conflicts)))
    if s.low_confidence:
        fired.append((ABSTAIN, ["low_confidence:%s" % r for r in s.low_confidence],
                      MESSAGES["low_confidence"]))
    if s.stale_sources and (s.risk in ("high", "medium") or
                            any(src.get("rule") == "superseded" for src in s.stale_sources)):
        fired.append((ABSTAIN, ["stale_sources:%s" % src["chunk_id"] for src in s.stale_sources],
                      stale_message(s.stale_sources, s.as_of, s.risk)))
    if s.ambiguity_kind:
        fired.append((CLARIFY, ["ambiguous:%s" % s.ambiguity_kind],
                      clarify_message(s.ambiguity_kind, s.ambiguity_detail)))
    if not fired:
        return Decision(ANSWER, [], "")
    reasons: List[str] = []
    for _, rs, _ in fired:
        reasons.extend(rs)
    return Decision(fired[0][0], reasons, fired[0][2])


def conflict_message(pairs: Sequence[Any]) -> str:
    """Names both sources of the first pair and quotes them; counts the rest."""
    c = pairs[0]
    msg = ("I can't answer definitively because the retrieved sources conflict. "
           "Source A (%s, %s) says: \"%s\" Source B (%s, %s) says: \"%s\" "
           "Please confirm which source is authoritative." % (
               c.doc_a, c.chunk_a, c.snippet_a, c.doc_b, c.chunk_b, c.snippet_b))
    if len(pairs) > 1:
        msg += " (%d more conflicting pair%s.)" % (len(pairs) - 1, "" if len(pairs) == 2 else "s")
    return msg


def stale_message(sources: Sequence[Dict[str, Any]], as_of: str, risk: str) -> str:
    parts = []
    for src in sources:
        if src["rule"] == "superseded":
            parts.append("%s is no longer in force%s" % (src["doc_id"], " (superseded by %s)" % src["by"]
                                                         if src.get("by") else ""))
        elif src["rule"] == "review_by":
            parts.append("%s was due for review by %s" % (src["doc_id"], src["date"]))
        elif src["rule"] == "effective":
            parts.append("%s is effective since %s (%d days)" % (src["doc_id"], src["date"], src["age_days"]))
        else:
            parts.append("%s has an unreadable date %r" % (src["doc_id"], src["date"]))
    if risk not in ("high", "medium"):           # only a superseded source stops a low-risk answer
        return "%s As of %s, %s; an answer needs sources that are in force." % (
            MESSAGES["stale_sources"], as_of, "; ".join(_unique(parts)))
    return "%s As of %s, %s; this %s-risk question needs current sources." % (
        MESSAGES["stale_sources"], as_of, "; ".join(_unique(parts)), risk)


def clarify_message(kind: str, detail: Optional[Dict[str, Any]] = None) -> str:
    if kind == "variant":
        quals = (detail or {}).get("qualifiers", [])
        return MESSAGES["variant"] + (" (the documents distinguish: %s)?" % ", ".join(quals) if quals else "?")
    return MESSAGES["vague_reference"]


def _unique(items: Sequence[str]) -> List[str]:
    out: List[str] = []
    for x in items:
        if x not in out:
            out.append(x)
    return out

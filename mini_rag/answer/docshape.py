"""Answers shaped like documentation (issue 43 item 4): a list item, a definition-list entry,
a table row or an inline code span can be the answer; a list's lead-in is not the answer
when its list is there; "what does X do" prefers the document's own one-line definition.

Phase C (synthesize.py) scores every sentence unit of the on-topic chunks; this module gives
it three readings of the documents' shapes, each a property of the text (no word of any
test question):

=============================  ==============================================================
``lead_in_of(ids, index)``     for each fact whose chunk is a table or opens with a list
                               item: the lead-in of its list (the paragraph right before the
                               list or table, in the same document, ending with ``:``), found
                               through the index's chunk order; the items and rows carry the
                               lead-in's words as their context, as a heading's are carried
``entry_label(text)``          the label of a definition-list entry or glossary entry the
                               chunk is (```name`: ...``, ``**Name**: ...``, one label in the
                               chunk): its sentences after the first carry the label's words
``is_lead_in(text)``           a unit ending with one ``:`` (not a literal block's ``::``)
``introduces_list(...)``       a lead-in followed by its list (or table): phase C never ships
                               it alone; with no item of its list in the evidence, the next
                               candidate is the answer
``is_item(text)``              a list item (``-``, ``*``, ``+``, ``\u2022``, ``1.``, ``a)``)
``asks_literal(question)``     the question asks for a name written as code: an option,
                               flag, command, argument, setting, variable, method, function,
                               filter, ... ("which option ...", "what is the command to ..."),
                               or how to do something ("how do I ...")
``has_literal(text)``          the unit writes a literal: an inline code span, ``--flag``,
                               ``name()``, ``ENV_NAME``, or is a synopsis line
``is_synopsis(text)``          a one-line code block after a shell prompt (``$ pip install
                               x``): phase B keeps it as a fact (relevance.py), other code
                               blocks are never shipped
``asked_subject(question)``    X of "what does X do / what is X / what are X"
``defines_subject(text, ...)`` the unit opens with X and goes on to say what it is: X then
                               ``is`` / ``are`` / a verb in ``-s`` / ``:`` / a dash, or a table
                               row or definition entry labelled X
=============================  ==============================================================

``is_item``, ``is_lead_in`` (and ``last_unit``) live in the text stage (``text/shape.py``),
where retrieval reads them too: a retrieved lead-in brings the chunks of its list into the
evidence right after it (``search/retrieve.py`` step 7, ``Retrieval.joined``), so the list is
there to be shipped with its lead-in even when it shares no word with the question.

The literal and definition readings only rank: a unit that has the shape gets the type
weight once more, and only when some on-topic unit has it (so evidence without code spans,
as in SQuAD or the gold policies, is scored as before).
"""
from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Sequence

from ..text.markup import plain_text
from ..text.shape import is_item, is_lead_in, last_unit as _last_unit, list_after as list_after_chunk

__all__ = ["shaped", "list_after", "is_item", "is_lead_in", "introduces_list", "lead_in_of", "entry_label", "is_synopsis", "asks_literal", "has_literal", "asked_subject",
           "defines_subject"]

_LITERAL = re.compile(r"`[^`\n]{1,200}`|(?<![\w-])--[A-Za-z][\w-]{0,60}|\b[A-Za-z_][\w.]{0,60}\(\)|"
                      r"\b[A-Z][A-Z0-9]{1,30}_[A-Z0-9_]{1,60}\b")
#: Nouns of the things documentation writes as code.
LITERAL_NOUNS = frozenset((
    "option", "options", "flag", "flags", "switch", "command", "commands", "argument", "arguments",
    "parameter", "parameters", "setting", "settings", "variable", "variables", "method", "methods",
    "function", "functions", "filter", "filters", "attribute", "attributes", "class", "decorator",
    "keyword", "directive", "modifier", "exception", "field", "hook", "property"))
_WH = frozenset(("which", "what"))
_HOW = re.compile(r"^\W{0,5}how\s+(?:do|can|should|would)\s+(?:i|you|we|one)\b", re.IGNORECASE)
_SUBJECT = re.compile(r"(?:^|[,;:]\s{0,5})what\s+(does|do|is|are)\s+", re.IGNORECASE)
_ENDS = (" do", " mean", " stand for")
_ARTICLES = ("a ", "an ", "the ")
_WORD = re.compile(r"\S+")
_DASHES = frozenset(("-", "\u2013", "\u2014", ":"))
_COPULA = frozenset(("is", "are"))
#: What follows "X is" in a definition ("X is a ...", "X is the ...", "X is used to ...").
_DEFINING = frozenset(("a", "an", "the", "one", "used"))


def lead_in_of(chunk_ids: Sequence[str], index: Any, limit: int = 40) -> Dict[int, str]:
    """``{i: lead-in text}`` for each chunk id of ``chunk_ids`` whose chunk is a table or opens
    with a list item and whose list (the list-item chunks right before it in the same document, at most
    ``limit``) follows a chunk ending with a lead-in (:func:`is_lead_in`).  An index without
    chunk order (a test stub) gives ``{}``."""
    chunks = getattr(index, "chunks", None)
    position = getattr(index, "position", None)
    if chunks is None or position is None:
        return {}
    out: Dict[int, str] = {}
    for i, cid in enumerate(chunk_ids):
        pos = position(cid)
        if pos < 0 or not (is_item(chunks[pos].text) or getattr(chunks[pos], "kind", "text") == "table"):
            continue
        doc = chunks[pos].doc_id
        j = pos - 1
        while j >= 0 and pos - j <= limit and chunks[j].doc_id == doc and is_item(chunks[j].text) \
                and not is_lead_in(_last_unit(chunks[j].text)):
            j -= 1
        if j >= 0 and chunks[j].doc_id == doc and getattr(chunks[j], "kind", "text") == "text":
            last = _last_unit(chunks[j].text)
            if is_lead_in(last):
                out[i] = last
    return out


def introduces_list(unit: str, chunk_text: str, chunk_id: str, index: Any) -> bool:
    """Is the lead-in ``unit`` (of the chunk ``chunk_id``) followed by its list: item lines
    after it in its chunk, or, when it ends the chunk, a list-item or table chunk next in the
    same document?"""
    if not is_lead_in(unit):
        return False
    at = chunk_text.rfind(unit.strip())
    rest = [ln for ln in chunk_text[at + len(unit.strip()):].split("\n") if ln.strip()] if at >= 0 else []
    if rest:
        return is_item(rest[0])
    chunks = getattr(index, "chunks", None)
    position = getattr(index, "position", None)
    if chunks is None or position is None:
        return False
    pos = position(chunk_id)
    return pos >= 0 and bool(list_after_chunk(chunks, pos, 1))


_LABEL = re.compile(r"`([^`\n]{1,80})`[ \t]{0,3}:[ \t]|\*\*([^*\n]{1,80})\*\*[ \t]{0,3}:[ \t]")


def entry_label(text: str) -> str:
    """The label of the entry the chunk is (```truncate.leeway`: Configures ...``, ``**Legal
    hold**: an instruction ...``): a code or strong label then ``:``, opening the chunk and the
    only such label in it; '' otherwise."""
    labels = list(_LABEL.finditer(text))
    if len(labels) != 1 or labels[0].start() != 0:
        return ""
    return labels[0].group(1) or labels[0].group(2) or ""


_PROMPT = re.compile(r"^\$[ \t]{1,4}[A-Za-z_.]")


def is_synopsis(text: str) -> bool:
    """A command synopsis: a code block of one line written after a shell prompt (``$ pip
    install Jinja2``), at most 200 characters.  It may be shipped as the answer's text, as a
    sentence is; a code block of more lines never is."""
    t = text.strip()
    return "\n" not in t and len(t) <= 200 and bool(_PROMPT.match(t))


def asks_literal(question: str) -> bool:
    """Does the question ask for a name written as code (module docstring)?"""
    if _HOW.match(question):
        return True
    words = [w.casefold() for w in re.findall(r"[A-Za-z]+", question)]
    for k, w in enumerate(words):
        if w in _WH and any(x in LITERAL_NOUNS for x in words[k + 1:k + 5]):
            return True
    return False


def has_literal(text: str) -> bool:
    """Does the unit write a literal: a code span, ``--flag``, ``name()`` or ``ENV_NAME``?"""
    return bool(_LITERAL.search(text)) or is_synopsis(text)


def asked_subject(question: str) -> Optional[str]:
    """X of "what does X do / mean / stand for ...?", "what is X?", "what are X?" (at most six
    words; None otherwise)."""
    q = question.strip().rstrip("?!. \t")
    m = _SUBJECT.search(q)
    if not m:
        return None
    rest = q[m.end():]
    if m.group(1).casefold() in ("does", "do"):
        low = rest.casefold()
        cuts = [low.rfind(e) for e in _ENDS if low.rfind(e) > 0]
        if not cuts:
            return None
        rest = rest[:max(cuts)]
    for art in _ARTICLES:
        if rest.casefold().startswith(art):
            rest = rest[len(art):]
    rest = rest.strip()
    return rest if rest and len(rest.split()) <= 6 else None


def defines_subject(text: str, subject_terms: Sequence[str], analyzer: Any) -> bool:
    """Does the unit open with the subject and say what it is (module docstring)?

    The subject's terms must all be among the analyzed words of the unit's first words (no
    more than two words besides them: a table row's or entry's label, an article); the word
    after them must be ``is`` / ``are`` and then ``a``, ``an``, ``the``, ``one`` or ``used``,
    a colon or a dash, or a verb in ``-s``, or the last
    of them ends with ``:`` or ``;`` (an entry or a row read with its header)."""
    want = set(subject_terms)
    if not want:
        return False
    words = _WORD.findall(plain_text(text))
    seen: set = set()
    for k, word in enumerate(words[:len(want) + 3]):
        seen.update(analyzer.analyze(word))
        if want <= seen:
            if word.endswith((":", ";")):
                return k + 1 < len(words)
            if k + 1 >= len(words):
                return False
            nxt = words[k + 1].casefold().strip("`*_,")
            if nxt in _COPULA:
                return k + 2 < len(words) and words[k + 2].casefold() in _DEFINING
            return nxt in _DASHES or (nxt.isalpha() and len(nxt) > 3 and nxt.endswith("s")
                                      and not nxt.endswith("ss"))
    return False


def shape_bonus(units: List[Any], literal: bool, subject_terms: Sequence[str],
                analyzer: Any) -> Dict[int, float]:
    """``{id(unit): 0 or 1}``: 1 for a unit with the asked shape (a literal when ``literal``,
    the subject's own definition when ``subject_terms``), only when one of ``units`` has it;
    ``{}`` when none does."""
    out: Dict[int, float] = {}
    for u in units:
        hit = (literal and has_literal(u.text)) or \
            (bool(subject_terms) and defines_subject(u.text, subject_terms, analyzer))
        out[id(u)] = 1.0 if hit else 0.0
    return out if any(out.values()) else {}


def shaped(part: str, scored: List[tuple], analyzer: Any, wt: float) -> List[tuple]:
    """Phase C's candidates ``(score, fact_idx, sent_idx, unit, type_match)`` with the shapes
    read: a question asking for a literal gives the units writing one the type weight
    (``wt``) once more; "what does X do" gives it to X's own one-line
    definition (which then also counts as a definition).  Only when some unit has the shape."""
    literal = asks_literal(part)
    subject = asked_subject(part)
    subject_terms = analyzer.analyze(subject) if subject and analyzer is not None else []
    if not scored or not (literal or subject_terms):
        return scored
    bonus = shape_bonus([s[3] for s in scored], literal, subject_terms, analyzer)
    if not bonus:
        return scored
    return [(s[0] + wt * bonus[id(s[3])], s[1], s[2], s[3],
             max(s[4], bonus[id(s[3])]) if subject_terms else s[4]) for s in scored]


def list_after(best: tuple, scored: List[tuple], infos: List[Any], index: Any) -> List[tuple]:
    """The scored list items right after the lead-in ``best``, in text order: the items after it
    in its own chunk, and the units of the list-item or table chunks whose lead-in it is
    (``lead_in`` of synthesize's ``_FactInfo``).  ``scored``: phase C's candidates."""
    lead = best[3].text.strip()
    doc = infos[best[1]].fact.pdf
    position = getattr(index, "position", None)
    units = infos[best[1]].units
    same = []
    for u in units[units.index(best[3]) + 1:] if best[3] in units else []:
        if not is_item(u.text):
            break
        same.append(u)
    out = []
    for s in scored:
        info = infos[s[1]]
        if s[1] == best[1] and s[3] in same:
            out.append(s)
        elif s[1] != best[1] and info.fact.pdf == doc and info.lead_in and info.lead_in.strip().endswith(lead):
            out.append(s)       # an item, or a row of the table, the lead-in introduces
    pos = (lambda cid: position(cid)) if position is not None else (lambda cid: 0)
    return sorted(out, key=lambda s: (pos(infos[s[1]].fact.chunk_id), s[1], s[2]))

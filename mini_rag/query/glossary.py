"""Definitions and scope a corpus states, so that "a card dispute" finds "the chargeback notice".

A policy set usually defines its own vocabulary once ("**Chargeback**: a payment reversed
by a card issuer after the cardholder disputes the charge.") and then uses the defined
word everywhere else.  People ask in the words of the definition: "By when must our
evidence for a card dispute reach the processor?" is answered by "Evidence for a dispute
must be submitted within 7 days of the chargeback notice", which has no "card".

* ``find_definitions(text)`` finds the definitions a text states: a glossary entry (a
  line opening with a bold term and a colon or dash, ``**Term**: definition``) and a
  sentence opening with its subject and a definition verb (``Term means ...``, ``Term is
  defined as ...``, ``Term refers to ...``).  The term is at most six words; a
  parenthesised short form after it ("**RPO (recovery point objective)**") is the term
  too.
* ``definition_table(index)`` scans every chunk once per index (cached) and returns each
  definition as (the term's alternatives, the definition's terms).
* ``definition_bridges(q_terms, table)`` gives the answering stage its bridges: when the
  question holds ``min_shared`` (2) or more distinct terms of one definition and none of
  the term's alternatives whole, each of those question terms is also covered by the
  defined term ("card" and "dispute" -> ``chargeback``).  Like synonyms, a definition can
  only make a question term count, never make it required.

* ``find_scope(text)`` / ``scope_table(index)``: a document's *scope statement*, the
  sentence that says what the whole document is about ("This procedure covers requests
  from individuals to access ... their personal data under the GDPR", "This policy
  applies to every customer", "The SOP applies to the Leiden and Raleigh sites": "This"
  or "The", at most two words, a document noun such as policy, procedure, standard,
  SOP, guidance, note or summary, then covers / applies to / sets out / describes /
  governs / summarizes).  Every fact of that document is read with the statement's
  terms, as it is with the document's title: "How many days do we have to answer a
  GDPR access request?" is answered by "Halvard responds to data subject requests within
  30 calendar days", whose document says it is about GDPR access requests.

* ``find_examples(text)`` / ``example_table(index)``: the kinds a text lists by example
  (Hearst's patterns: "X such as A, B and C", "X, e.g. A or B", "X including A and B":
  each of A, B and C is a kind of X).  ``example_bridges(q_terms, table)``: a question
  that names ``min_examples`` (2) or more of one list's examples is asking about their
  class, so each of those question terms is also covered by the class's head word.
  "Must every signing use both the ID code and the password?" names both examples of
  "identification components, such as an identification code and a password" and is
  answered by "only the first signing must use all signature components".  One example
  is not enough: "What is the minimum password length?" is about passwords, not about
  components.

``[answer] definitions = false`` turns the definition bridges off, ``[answer] examples =
false`` the example bridges; the scope statements are always read.

>>> find_definitions("**Chargeback**: a payment reversed by a card issuer after the cardholder disputes the charge.")
[('Chargeback', 'a payment reversed by a card issuer after the cardholder disputes the charge.')]
>>> find_definitions("Risk means the combination of the probability of harm and its severity.")
[('Risk', 'the combination of the probability of harm and its severity.')]
>>> find_definitions("The Pro plan means more seats.")
[]
"""
from __future__ import annotations

import re
import weakref
from typing import Any, Dict, FrozenSet, List, Optional, Sequence, Tuple

from .abbrev import cached_per_index
from .synonyms import Synonym

__all__ = ["find_definitions", "definition_table", "definition_bridges", "entry_term", "find_scope", "scope_table",
           "find_examples", "example_table", "example_bridges"]

#: "**Term**: definition" or "**Term** - definition", a glossary line (optionally a list item).
_ENTRY = re.compile(r"^[ \t]*(?:[-*][ \t]+)?\*\*([^*\n]{1,80}?)\*\*[ \t]*[:\u2013\u2014-][ \t]*(\S[^\n]*(?:\n(?![ \t]*\n)"
                    r"(?![ \t]*(?:[-*][ \t]+)?\*\*)[^\n]+)*)", re.MULTILINE)
#: "Term means ...": a sentence opening with its subject (a capital, at most six words).
_PROSE = re.compile(r"(?:^|(?<=[.!?]\s))([A-Z][\w-]*(?:[ \t]+[\w-]+){0,5}?)(?:[ \t]*\([^()]{1,60}\))?[ \t]+"
                    r"(?:means|is\s+defined\s+as|are\s+defined\s+as|refers\s+to|denotes)[ \t]+([^.!?]+[.!?]?)",
                    re.MULTILINE)
_PAREN = re.compile(r"\s{0,20}\(([^()]{1,60})\)\s{0,20}")
_MAX_TERM_WORDS = 6


def find_definitions(text: str) -> List[Tuple[str, str]]:
    """``[(term, definition)]`` stated in ``text``, in text order (see the module doc).

    A prose subject opening with an article or a determiner ("The Pro plan means ...")
    is a statement about one thing, not a definition, and is skipped.
    """
    out: List[Tuple[str, str]] = []
    for m in _ENTRY.finditer(text):
        term, body = m.group(1).strip(), " ".join(m.group(2).split())
        if term and body and len(_PAREN.sub(" ", term).split()) <= _MAX_TERM_WORDS:
            out.append((term, body))
    for m in _PROSE.finditer(text):
        term, body = m.group(1).strip(), " ".join(m.group(2).split())
        if term.split()[0].lower() in _DETERMINERS or not body:
            continue
        out.append((term, body))
    return out


def entry_term(text: str) -> Optional[str]:
    """The term ``text`` defines when it opens with a glossary entry ("**Term**: ..."), else None.

    >>> entry_term("**Service credit**: a discount on a future invoice.")
    'Service credit'
    >>> entry_term("Service credits are paid monthly.") is None
    True
    """
    m = _ENTRY.match(text)
    return m.group(1).strip() if m else None


_DETERMINERS = frozenset("a an the this that these those its their our your my his her each every "
                         "any some all no it they we you he she there".split())

_CACHE: "weakref.WeakKeyDictionary[Any, List[Tuple[List[FrozenSet[str]], FrozenSet[str]]]]" = \
    weakref.WeakKeyDictionary()


def _alternatives(term: str, analyzer: Any) -> List[FrozenSet[str]]:
    """The term's term sets: without its parenthesis, and the parenthesis alone
    ("RPO (recovery point objective)" -> {rpo}, {recoveri, point, object})."""
    alts = []
    for part in [_PAREN.sub(" ", term)] + _PAREN.findall(term):
        terms = frozenset(analyzer.analyze(part))
        if terms and terms not in alts:
            alts.append(terms)
    return alts


def definition_table(index: Any, analyzer: Any = None) -> List[Tuple[List[FrozenSet[str]], FrozenSet[str]]]:
    """``[(term alternatives, definition terms)]`` over every chunk of ``index``, in chunk
    order, each definition once; cached per index."""
    return _per_index(_CACHE, index, analyzer, _build_table, [])


def _per_index(cache: Any, index: Any, analyzer: Any, build: Any, empty: Any) -> Any:
    """``build(chunks, analyzer)`` over ``index``'s chunks, cached per index; ``empty``
    when there is no analyzer (``analyzer`` or the index's) or no chunks."""
    analyzer = analyzer or getattr(index, "analyzer", None)
    chunks = getattr(index, "chunks", None)
    if analyzer is None or chunks is None:
        return empty
    return cached_per_index(cache, index, lambda: build(chunks, analyzer))


def _build_table(chunks: Any, analyzer: Any) -> List[Tuple[List[FrozenSet[str]], FrozenSet[str]]]:
    out: List[Tuple[List[FrozenSet[str]], FrozenSet[str]]] = []
    seen = set()
    for chunk in chunks:
        text = getattr(chunk, "text", "")
        for term, body in find_definitions(text):
            alts = _alternatives(term, analyzer)
            terms = frozenset(analyzer.analyze(body)) - frozenset().union(*alts) if alts else frozenset()
            key = (tuple(sorted(tuple(sorted(a)) for a in alts)), terms)
            if alts and terms and key not in seen:
                seen.add(key)
                out.append((alts, terms))
    return out


def definition_bridges(q_terms: Sequence[str],
                       table: Sequence[Tuple[List[FrozenSet[str]], FrozenSet[str]]],
                       min_shared: int = 2,
                       forms: Optional[Dict[str, Sequence[str]]] = None) -> Dict[str, List[FrozenSet[str]]]:
    """``{question term: [defined term sets]}``: the question holds ``min_shared`` or more
    distinct terms of a definition, and none of its term's alternatives whole.  A question
    term is in a definition when the definition holds it or one of its other ``forms``
    (term -> one-term variants: "lose" is in "... may be lost", "fail" in "after a
    failure").

    >>> table = [([frozenset({"chargeback"})], frozenset({"payment", "card", "disput", "revers"}))]
    >>> definition_bridges(["card", "disput", "evid"], table)
    {'card': [Synonym({'chargeback'})], 'disput': [Synonym({'chargeback'})]}
    >>> definition_bridges(["card", "chargeback"], table)
    {}
    >>> definition_bridges(["card", "contest"], table)
    {}
    >>> definition_bridges(["card", "contest"], table, forms={"contest": ["disput"]})
    {'card': [Synonym({'chargeback'})], 'contest': [Synonym({'chargeback'})]}
    """
    have = set(q_terms)
    forms = forms or {}
    out: Dict[str, List[FrozenSet[str]]] = {}
    for alts, terms in table:
        shared = [t for t in dict.fromkeys(q_terms) if t in terms or any(f in terms for f in forms.get(t, ()))]
        if len(shared) < min_shared or any(alt <= have for alt in alts):
            continue
        for t in shared:
            bucket = out.setdefault(t, [])
            for alt in alts:
                syn = Synonym(alt)
                if syn not in bucket:
                    bucket.append(syn)
    return out


#: "This policy applies to ...", "The SOP covers ...": a document's statement of its scope.
_SCOPE = re.compile(r"(?:^|(?<=[.!?]\s))(?:This|The)\s+(?:[\w-]+\s+){0,2}?(?:policy|procedure|standard|sop|guideline|"
                    r"guidance|document|page|note|summary|plan|schedule|annex|section)\s+(?:covers|applies\s+to|"
                    r"sets\s+out|describes|governs|summari[sz]es)\s+([^.!?]+)", re.IGNORECASE | re.MULTILINE)
_SCOPE_CACHE: "weakref.WeakKeyDictionary[Any, Dict[str, FrozenSet[str]]]" = weakref.WeakKeyDictionary()


def find_scope(text: str) -> List[str]:
    """What a text says its document covers: the object of "This policy applies to ..."."""
    return [" ".join(m.group(1).split()) for m in _SCOPE.finditer(text)]


def scope_table(index: Any, analyzer: Any = None) -> Dict[str, FrozenSet[str]]:
    """``{doc_id: terms of its scope statements}`` over every chunk of ``index``; cached."""
    return _per_index(_SCOPE_CACHE, index, analyzer, _build_scope, {})


def _build_scope(chunks: Any, analyzer: Any) -> Dict[str, FrozenSet[str]]:
    out: Dict[str, FrozenSet[str]] = {}
    for chunk in chunks:
        for scope in find_scope(getattr(chunk, "text", "")):
            doc = getattr(chunk, "doc_id", "")
            out[doc] = out.get(doc, frozenset()) | frozenset(analyzer.analyze(scope))
    return out


#: "X such as A, B and C", "X, e.g. A or B", "X including A and B": the class word, then
#: the list up to the end of the clause.
_EXAMPLES = re.compile(r"\b([A-Za-z][\w-]*),?\s+(?:such\s+as|e\.g\.,?|including)\s+([^.;:()!?|]+)",
                       re.IGNORECASE)
_LIST_SPLIT = re.compile(r"(\s{0,20},\s{0,20}(?:and\s{1,20}|or\s{1,20})?|\s{1,20}(?:and|or)\s{1,20})", re.IGNORECASE)
_MAX_EXAMPLE_WORDS = 4
_EXAMPLES_CACHE: "weakref.WeakKeyDictionary[Any, List[Tuple[FrozenSet[str], List[FrozenSet[str]]]]]" = \
    weakref.WeakKeyDictionary()


def find_examples(text: str) -> List[Tuple[str, List[str]]]:
    """``[(class word, [examples])]`` that ``text`` lists, in text order.  The examples lose
    their articles; the list ends with the item after its "and" or "or" (without one, the
    first item is the list), or before an item longer than four words.

    >>> find_examples("Signatures use two components, such as an identification code and a password.")
    [('components', ['identification code', 'password'])]
    >>> find_examples("Removable media such as USB drives, SD cards or phones are blocked.")
    [('media', ['USB drives', 'SD cards', 'phones are blocked'])]
    >>> find_examples("Services delivered, such as workshops, are not refunded.")
    [('delivered', ['workshops'])]
    >>> find_examples("There is no such assurance.")
    []
    """
    out: List[Tuple[str, List[str]]] = []
    for m in _EXAMPLES.finditer(" ".join(text.split())):
        parts = _LIST_SPLIT.split(m.group(2).strip())
        seps = [sep.strip(" ,").casefold() for sep in parts[1::2]]
        end = next((i + 1 for i, sep in enumerate(seps) if sep in ("and", "or")), 0)
        items: List[str] = []
        for raw in parts[0:2 * end + 1:2]:
            words = raw.split()
            while words and words[0].casefold() in _DETERMINERS:
                words = words[1:]
            if len(words) > _MAX_EXAMPLE_WORDS:
                break
            if words:
                items.append(" ".join(words))
        if items:
            out.append((m.group(1), items))
    return out


def example_table(index: Any, analyzer: Any = None) -> List[Tuple[FrozenSet[str], List[FrozenSet[str]]]]:
    """``[(class terms, [example term sets])]`` over every chunk of ``index``, in chunk
    order, each list once; lists whose class word is a stop word or with fewer than two
    examples are left out; cached per index."""
    return _per_index(_EXAMPLES_CACHE, index, analyzer, _build_examples, [])


def _build_examples(chunks: Any, analyzer: Any) -> List[Tuple[FrozenSet[str], List[FrozenSet[str]]]]:
    out: List[Tuple[FrozenSet[str], List[FrozenSet[str]]]] = []
    seen = set()
    for chunk in chunks:
        for word, items in find_examples(getattr(chunk, "text", "")):
            cls = frozenset(analyzer.analyze(word))
            examples = list(dict.fromkeys(e for e in (frozenset(analyzer.analyze(i)) - cls for i in items) if e))
            key = (cls, tuple(tuple(sorted(e)) for e in examples))
            if cls and len(examples) >= 2 and key not in seen:
                seen.add(key)
                out.append((cls, examples))
    return out


_LOOKUPS: Dict[int, Tuple[Any, Dict[str, List[int]]]] = {}
#: Example tables whose term lookup :func:`_example_lookup` keeps (one per index in use).
LOOKUP_TABLES = 16


def _example_lookup(table: Sequence[Tuple[FrozenSet[str], List[FrozenSet[str]]]]) -> Dict[str, List[int]]:
    """``{term: positions in table of the lists with an example holding it}``, built once per
    table (a table is built once per index and never changed)."""
    got = _LOOKUPS.get(id(table))
    if got is not None and got[0] is table:
        return got[1]
    where: Dict[str, List[int]] = {}
    for i, (_cls, examples) in enumerate(table):
        for example in examples:
            for term in example:
                got_i = where.setdefault(term, [])
                if not got_i or got_i[-1] != i:
                    got_i.append(i)
    if len(_LOOKUPS) >= LOOKUP_TABLES:
        _LOOKUPS.clear()
    _LOOKUPS[id(table)] = (table, where)
    return where


def example_bridges(q_terms: Sequence[str], table: Sequence[Tuple[FrozenSet[str], List[FrozenSet[str]]]],
                    min_examples: int = 2,
                    forms: Optional[Dict[str, Sequence[str]]] = None) -> Dict[str, List[FrozenSet[str]]]:
    """``{question term: [class term sets]}``: the question names ``min_examples`` or more
    examples of one list (every term of an example is a question term or one of its other
    ``forms``) and not the class word itself; each question term naming one of them is
    covered by the class word.

    >>> table = [(frozenset({"compon"}), [frozenset({"identif", "code"}), frozenset({"password"})])]
    >>> example_bridges(["id", "code", "password", "session"], table, forms={"id": ["identif"]})
    {'id': [Synonym({'compon'})], 'code': [Synonym({'compon'})], 'password': [Synonym({'compon'})]}
    >>> example_bridges(["password", "length"], table)
    {}
    >>> example_bridges(["code", "password"], table)
    {}
    """
    have = set(q_terms)
    forms = forms or {}
    out: Dict[str, List[FrozenSet[str]]] = {}
    # Only a list with an example holding a question term or one of its forms can be
    # named (any other example reaches none of its terms); visited in table order.
    where = _example_lookup(table)
    visit = set()
    for t in have:
        visit.update(where.get(t, ()))
        for f in forms.get(t, ()):
            visit.update(where.get(f, ()))
    for cls, examples in (table[i] for i in sorted(visit)):
        if cls <= have:
            continue
        naming: List[str] = []
        held = 0
        for example in examples:
            hits = [t for t in dict.fromkeys(q_terms)
                    if t in example or any(f in example for f in forms.get(t, ()))]
            reached = {x for x in example if x in have or any(x in forms.get(t, ()) for t in hits)}
            if reached == example:
                held += 1
                naming.extend(t for t in hits if t not in naming)
        if held < min_examples:
            continue
        syn = Synonym(cls)
        for t in naming:
            bucket = out.setdefault(t, [])
            if syn not in bucket:
                bucket.append(syn)
    return out

"""Guard stage: contradictions between evidence chunks of different documents.

Seed 000's conflict detector, restated as rules that do not depend on any corpus.  The
input is the phase-B facts (the evidence the answer may rest on, already filtered to the
question); the output is a list of :class:`ConflictPair`, each naming both sources with
an evidence snippet, which the decision stage turns into ``ABSTAIN`` (policy rule 2).

===========================  ==========================================================
function                     what it does
===========================  ==========================================================
``evidence_units(text)``     a chunk's claims: list items, table rows and sentences
``read_rows(text)``          a table chunk's rows as the corpus reader wrote them, or None
``polarity(unit)``           ``{axis: "pos"|"neg"}`` for the three polarity axes
``quantities(unit)``         ``[(value, unit)]``: numbers that carry a unit
``qualifiers(unit, ...)``    plan / tier / region / product names a unit is scoped to
``find_conflicts(...)``      the pairs of contradicting units, sorted, one per chunk pair
===========================  ==========================================================

The rule, exactly.  Two evidence units *a* and *b* conflict when all of these hold:

1. They come from chunks of **different documents** (chunks of one document never
   conflict: a document that states two values states them for two cases).
2. They are about **the same subject**:

   a. each contains at least one question term (analyzed, so ``limits`` = ``limit``);
   b. their *topic terms* (analyzed terms minus numbers, units, modal and polarity words)
      share at least ``guards.conflict_min_shared_terms`` terms (default 2) -- sharing
      only a unit ("days") or only a polarity word ("may") is not a shared subject;
   c. both chunks (text, heading and document title), or else both units, speak to the
      same part of the question: of the question terms either contains, both contain at
      least ``guards.conflict_min_agreement`` (0.67) -- Jaccard of the two sets.  The
      unit test catches two sentences that agree though a heading adds a question word
      to one chunk only ("Passwords must be at least 8 characters long" under no
      heading, "... 14 characters long" under "Password length").  A pair where
      one side leaves most of the subject out is about something else (the exception
      rule: asked "Are promotional purchases refundable?", "Promotional purchases are
      non-refundable" {promotional, purchase, refund} and a general refund rule
      {refund} agree on 1/3 of the terms: the narrower rule does not conflict with the
      general one), while a paraphrase on one side ("sign-in" vs "login") still pairs.
      Two versions of one policy (``versions``: one document's front matter names the
      other in ``superseded_by``) are the same subject by construction: rule c does not
      apply to them, so the old version's narrower permission ("may copy Confidential
      data to a password-protected USB drive for a customer visit") meets the new
      version's general prohibition;
   d. they are not scoped to different variants: when both name qualifiers (``Free`` vs
      ``Enterprise`` plan, ``EU`` vs ``US``) and the qualifier sets differ, the units
      describe two variants -- that is the ambiguity guard's business, not a conflict;
   e. neither is scoped to variants the question excludes: when the question names
      qualifiers, a unit whose qualifiers are all different ones is about another variant
      (asked about the Pro plan, two documents disagreeing on the Free plan do not
      conflict on the question).

3. They **contradict**, in one of two ways:

   * *polarity*: on one axis, one unit is positive and the other negative.  Axes:
     ``permission`` (may / can / is allowed / is permitted  vs  must not / may not /
     cannot / is prohibited / is forbidden / is not allowed / never; "may be" or "can
     be" before a word that is no past participle, as in "records that may be relevant",
     says what is possible and takes no side), ``refund``
     (refundable / eligible for a refund  vs  non-refundable / not refundable / no
     refunds) and ``encryption`` (stored in plaintext / unencrypted  vs  encrypted, or a
     negated plaintext).  A unit carrying both signs on an axis ("may ... but must not
     ...") makes no claim on that axis.
   * *numeric*: both state values with the same unit (``30 days``; ``1000 requests per
     hour``; ``20%``; ``$5``) and the value sets for that unit are disjoint.  Numbers
     that are part of codes (``AES-256``, ``WH-12``), dates, and bare years (1900-2099
     with no unit or currency) are not quantities.

   f. the pair is about the **asked subject**: with ``idf`` given, the question terms the
      two chunks hold between them (text, heading and title, bridges counted) carry at
      least ``guards.conflict_min_subject`` (0.5) of the question's idf mass (polarity and
      modal words left out; a question term absent from the corpus weighs the most, as
      its idf says).  Two sentences sharing "maximum" and "size" do not conflict on a
      question about the maximum size of a laptop screen when neither holds "laptop" or
      "screen" (issue 17, failure class 4); a pair where one side says "at least 8
      characters" and the other "minimum length of 14 characters" still covers
      "minimum password length" between them.

4. When the answer's citations are given (``anchor``), one side is a cited chunk: a
   disagreement the answer does not rest on is not a reason to withhold it (asked
   about promotional purchases, the answer cites "Promotional purchases are
   non-refundable"; two versions disagreeing on the general refund window are beside
   it).  The pipeline passes every accepted hit, not only phase B's capped list, so the
   superseded version ranked seventh still meets the current one.

5. **Versions** (``doc_versions``: each document's status, successor and editions as
   :mod:`mini_rag.text.corpus` read them from front matter or text).  A pair of two versions
   of one policy -- linked by ``superseded_by`` / ``supersedes``, or of one family
   (:func:`mini_rag.text.corpus.family_key`) -- does not conflict when

   a. the question names an edition (:func:`named_editions`: ``in the 2019 policy``,
      ``under v2.3``, ``version 3``) that one side has and the other has not: the
      question chose that side;
   b. one side is no longer in force (``status`` superseded, withdrawn, ... or a
      successor named) and the other is, and either the question asks for the rule in
      force (:data:`IN_FORCE_CUES`: current, currently, now, today, in force, in effect,
      latest, ...) or ``guards.conflicts_with_superseded`` is false.  With its default
      (true, seed 000's behaviour: "Source A says ... Source B says ... confirm which
      source is authoritative") a plain question still surfaces the disagreement.
   c. Otherwise (both in force, or both out of force) rules 1-4 apply unchanged.

Each pair of chunks is reported once (the first contradiction found in unit order,
polarity before numeric), and pairs are sorted by (chunk id of a, chunk id of b) with
``a < b``, so the output does not depend on retrieval order or hash seeds.

False positives make answerable questions abstain, so every condition above errs towards
"no conflict"; the tests (tests/test_conflicts.py) hold one fixture per condition.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Callable, Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple

from ..text.corpus import editions_in, family_key, out_of_force
from ..answer.relevance import covered
from ..text.memo import text_memo

__all__ = [
    "ConflictPair",
    "DocVersion",
    "asks_in_force",
    "doc_versions",
    "evidence_units",
    "find_conflicts",
    "named_editions",
    "polarity",
    "quantities",
    "qualifiers",
    "read_rows",
    "topic_terms",
]

# -------------------------------------------------------------- evidence units

# A sentence ends at . ! ? followed by space and an upper-case letter, digit, quote or
# bracket; "e.g. the", "2.5 days" and "v2.1" do not end sentences.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9])")
_ABBREV_END = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|approx|incl|no|fig|sec|art|dr|mr|ms|mrs|st)\.|\b[A-Z]\.)$",
                         re.IGNORECASE)


def evidence_units(text: str) -> List[str]:
    """Split chunk text into claims: each line is a unit when the chunk keeps line
    breaks (list items, table rows), and each line is split into sentences.

    A Markdown table (a header row, a ``|---|`` separator, data rows) yields one unit per
    data row, each cell followed by its column header in lower case, so that a value
    carries its unit and a row its variant: ``| Pro | 300 |`` under ``| Plan |
    Requests per minute |`` reads ``| Pro plan | 300 requests per minute |``.

    >>> evidence_units("Refunds take 14 days. See e.g. Annex B.\\n- Pro plan: 30 days")
    ['Refunds take 14 days.', 'See e.g. Annex B.', '- Pro plan: 30 days']
    >>> evidence_units("| Plan | Requests per minute |\\n|---|---|\\n| Free | 60 |\\n| Pro | 300 |")
    ['| Free plan | 60 requests per minute |', '| Pro plan | 300 requests per minute |']

    A table chunk as the corpus reader gives it (``Chunk.kind`` ``table``: one line per
    row, ``Header: value; Header: value``, :func:`mini_rag.text.markup.read_table`; a
    Markdown pipe table and a reST grid or simple table read alike) yields the same units:
    each line a row, each value followed by its header in lower case
    (:func:`read_rows` says when a text is such a reading).

    >>> evidence_units("Plan: Free; Requests per minute: 60\\nPlan: Pro; Requests per minute: 300")
    ['| Free plan | 60 requests per minute |', '| Pro plan | 300 requests per minute |']

    Computed once per text (:func:`_evidence_units`, a bounded memo, ``text.memo``); a new
    list each call.
    """
    return list(_evidence_units(text))


@text_memo()
def _evidence_units(text: str) -> Tuple[str, ...]:
    """:func:`evidence_units`, as a tuple."""
    rows = read_rows(text)
    if rows is not None:
        return tuple("| " + " | ".join("%s %s" % (cell, head.lower()) if head else cell
                                       for head, cell in row) + " |" for row in rows)
    units: List[str] = []
    lines = [line.strip() for line in text.split("\n")]
    header: Optional[List[str]] = None
    for i, line in enumerate(lines):
        if not line:
            header = None
            continue
        if line.startswith("|"):
            if _TABLE_RULE.match(line):
                header = _cells(lines[i - 1]) if i > 0 and lines[i - 1].startswith("|") else None
                if header is not None and units and units[-1] == lines[i - 1]:
                    units.pop()                       # the header row is not a claim
                continue
            if header is not None:
                cells = _cells(line)
                parts = []
                for n, cell in enumerate(cells):
                    head = header[n] if n < len(header) else ""
                    parts.append("%s %s" % (cell, head.lower()) if cell and head else cell)
                units.append("| " + " | ".join(parts) + " |")
                continue
            units.append(line)
            continue
        header = None
        pieces = _SENTENCE_END.split(line)
        merged: List[str] = []
        for piece in pieces:
            if merged and _ABBREV_END.search(merged[-1]):
                merged[-1] = merged[-1] + " " + piece
            else:
                merged.append(piece)
        units.extend(p.strip() for p in merged if p.strip())
    return tuple(units)


_TABLE_RULE = re.compile(r"^\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?$")
#: A column name in a read row: a few words, no list marker, no sentence end before ": ".
_READ_HEAD = re.compile(r"(?!\d{1,3}[.)]\s)[^\s\-*+\u2022][^;]{0,59}(?<![.!?])")


def read_rows(text: str) -> Optional[List[List[Tuple[str, str]]]]:
    """The rows of a table as the corpus reader writes a table chunk's text
    (:func:`mini_rag.text.markup.read_table`: one line per row, its non-empty cells
    ``Header: value`` joined by ``"; "``, a cell under an empty header alone), as
    ``[(header, value)]`` per row (header ``""`` for a cell alone), or None when ``text``
    is no such reading.

    The text is a reading when every non-blank line is a row: each of its parts
    ``Header: value`` (:data:`_READ_HEAD`: up to 60 characters, not starting with a list
    marker, not ending a sentence); only the first part of a row may stand alone (a
    table whose first column has no header), a later one is the cell before it
    continued (a cell holding ``"; "``); at least one row has two named cells; and the
    rows name no more columns between them than the fullest row holds (one header above
    them all).  Prose ("Note: refunds take 14 days; see Annex B.") and
    lists ("- Pro plan: 30 days") are not readings.

    >>> read_rows("Plan: Pro; Requests per minute: 300\\nPlan: Free")
    [[('Plan', 'Pro'), ('Requests per minute', '300')], [('Plan', 'Free')]]
    >>> read_rows("Retention; United States: 5 years; European Union: 10 years")
    [[('', 'Retention'), ('United States', '5 years'), ('European Union', '10 years')]]
    >>> read_rows("Note: refunds take 14 days; see Annex B."), read_rows("- Pro plan: 30 days; Free plan: 7 days")
    (None, None)
    """
    rows: List[List[Tuple[str, str]]] = []
    heads: Set[str] = set()
    widest = 0
    for line in text.split("\n"):
        line = line.strip()
        if not line:
            continue
        row: List[Tuple[str, str]] = []
        for n, part in enumerate(line.split("; ")):
            head, sep, value = part.partition(": ")
            if sep and value.strip() and _READ_HEAD.fullmatch(head):
                row.append((head, value.strip()))
            elif n == 0 and part.strip() and not sep:
                row.append(("", part.strip()))
            elif row and row[-1][0] and part.strip():
                row[-1] = (row[-1][0], row[-1][1] + "; " + part.strip())   # a cell holding "; "
            else:
                return None
        named = [h for h, _ in row if h]
        if not named:
            return None
        heads.update(named)
        widest = max(widest, len(named))
        rows.append(row)
    if not rows or widest < 2 or len(heads) > widest:
        return None
    return rows


def _cells(row: str) -> List[str]:
    inner = row.strip()
    if inner.startswith("|"):
        inner = inner[1:]
    if inner.endswith("|"):
        inner = inner[:-1]
    return [c.strip() for c in inner.split("|")]


# -------------------------------------------------------------- polarity

_NEG_CUES = r"(?:must\s+not|may\s+not|shall\s+not|should\s+not|cannot|can\s*not|can't|mustn't|" \
            r"is\s+not\s+(?:allowed|permitted)|are\s+not\s+(?:allowed|permitted)|not\s+(?:be\s+)?(?:allowed|permitted)|" \
            r"prohibited|forbidden|never|disallowed)"
_POS_CUES = r"(?:may|can|is\s+allowed|are\s+allowed|is\s+permitted|are\s+permitted|allowed|permitted)"

_AXES: Tuple[Tuple[str, "re.Pattern[str]", "re.Pattern[str]"], ...] = (
    ("permission",
     re.compile(r"\b" + _POS_CUES + r"\b(?!\s+not\b)", re.IGNORECASE),
     re.compile(r"\b" + _NEG_CUES + r"\b", re.IGNORECASE)),
    ("refund",
     re.compile(r"(?<!non-)(?<!non)(?<!not )\brefundable\b|\beligible\s+for\s+an?\s+(?:full\s+|partial\s+)?refund"
                r"|\brefunds?\s+(?:is|are)\s+(?:available|issued|allowed|permitted)", re.IGNORECASE),
     re.compile(r"\bnon-?\s?refundable\b|\bnot\s+refundable\b|\bno\s+refunds?\b"
                r"|\bnot\s+eligible\s+for\s+an?\s+(?:full\s+|partial\s+)?refund"
                r"|\brefunds?\s+(?:is|are)\s+not\b", re.IGNORECASE)),
)
# "may be relevant", "can be up to": a modal before "be" and a word that is no past
# participle says what is possible, not what is allowed ("may be deleted" is a permission).
_EPISTEMIC = re.compile(r"\b(?:may|might|can|could)\s+(?:also\s+|well\s+|still\s+)?be\s+(?!(?:[a-z]+(?:ed|en|wn)|"
                        r"kept|held|sent|paid|made|done|sold|bought|left|lost|found|brought|built|told|spent|"
                        r"set|put|cut|shut|run|read|shared|met|won|hit|let|bound|taught|caught|sought|"
                        r"dealt|meant|heard|led|fed|laid|split|spread|struck|stuck|hung)\b)[a-z]", re.IGNORECASE)
_PLAINTEXT = re.compile(r"\b(?:plain\s?text|unencrypted|clear\s?text|in\s+the\s+clear)\b", re.IGNORECASE)
_ENCRYPTED = re.compile(r"\bencrypt(?:ed|ion|s)?\b", re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:not|never|no|cannot|can't|mustn't|prohibited|forbidden)\b", re.IGNORECASE)

# Words that carry polarity, modality or the axis itself: they never count as the subject.
POLARITY_WORDS = ("may", "can", "cannot", "must", "shall", "should", "will", "might", "not", "no",
                  "never", "allowed", "allow", "permitted", "permit", "prohibited", "prohibit",
                  "forbidden", "forbid", "disallowed", "refundable", "refund", "refunds", "non",
                  "eligible", "plaintext", "unencrypted", "encrypted", "encryption", "encrypt",
                  "clear", "text", "plain")


def polarity(unit: str) -> Dict[str, str]:
    """``{axis: "pos" | "neg"}`` for each axis on which ``unit`` takes one side
    (:func:`_polarity`, computed once per text: a bounded memo); a new dict each call.

    >>> polarity("SSNs must not be stored in plaintext.")
    {'permission': 'neg', 'encryption': 'encrypted'}
    >>> polarity("Promotional purchases are non-refundable.")
    {'refund': 'neg'}
    >>> polarity("Records that may be relevant to an audit."), polarity("Records may be deleted.")
    ({}, {'permission': 'pos'})
    """
    return dict(_polarity(unit))


@text_memo()
def _polarity(unit: str) -> Tuple[Tuple[str, str], ...]:
    """:func:`polarity`'s items, in its order."""
    out: Dict[str, str] = {}
    for axis, pos_re, neg_re in _AXES:
        neg = bool(neg_re.search(unit))
        rest = neg_re.sub(" ", unit)                      # "may not" is not also "may"
        if axis == "permission":
            rest = _EPISTEMIC.sub(" ", rest)
        pos = bool(pos_re.search(rest))
        if neg != pos:
            out[axis] = "neg" if neg else "pos"
    plain = bool(_PLAINTEXT.search(unit))
    if plain:
        out["encryption"] = "encrypted" if _NEGATION.search(unit) else "plaintext"
    elif _ENCRYPTED.search(unit) and not _NEGATION.search(unit):
        out["encryption"] = "encrypted"
    return tuple(out.items())


# -------------------------------------------------------------- quantities

# ISO 4217 codes read like their sign: "USD 500" is "$500".
_CURRENCY_CODES = {"USD": "$", "EUR": "\u20ac", "GBP": "\u00a3", "JPY": "JPY", "CHF": "CHF",
                   "CAD": "CAD", "AUD": "AUD", "CNY": "CNY", "INR": "INR", "SEK": "SEK",
                   "NOK": "NOK", "DKK": "DKK", "NZD": "NZD", "SGD": "SGD", "HKD": "HKD"}
_NUMBER = re.compile(
    r"(?<![\w\-./])(?P<cur>[$\u20ac\u00a3]\s?|\b(?:" + "|".join(_CURRENCY_CODES) + r")\s?)?(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?![\w\-]|[./]\d)(?P<pct>\s?%|\s+percent\b)?")
_WORD = re.compile(r"\s*([A-Za-z][A-Za-z']*)")
_PER = re.compile(r"\s*(?:per\s+|/\s*)([A-Za-z][A-Za-z']*)")
#: A business (working) day is another unit than a calendar day: "10 business days" and
#: "14 days" can be the same length of time.
_BUSINESS = frozenset(("business", "working"))
# Modifiers skipped between a number and its unit ("30 calendar days" = "30 days").
UNIT_MODIFIERS = frozenset("calendar business working consecutive full additional more "
                           "extra total maximum minimum max min".split())


@text_memo()
def unit_quantities(unit: str, analyzer) -> Tuple[Tuple[str, str], ...]:
    """:func:`quantities` of ``unit`` with units stemmed by ``analyzer`` (:func:`_stemmer`),
    computed once per text and analyzer (a bounded memo): the conflict and ambiguity
    guards read the same claims question after question."""
    return tuple(quantities(unit, _stemmer(analyzer)))


def quantities(unit: str, stem=None) -> List[Tuple[str, str]]:
    """``(value, unit)`` for each number in ``unit`` that carries a unit.

    The value is normalized (``1,000`` -> ``1000``, ``2.50`` -> ``2.5``).  The unit is
    ``%`` for percentages, the currency sign for amounts (``USD`` reads as ``$``), else the first word after the
    number (modifiers such as "calendar" skipped), stemmed with ``stem`` when given,
    plus ``/word`` for a following "per word" or "/word".  In "30 or 60 days" and "2 to
    8 hours" the first number takes the unit of the second.  Year-like numbers (1900-2099)
    are dates unless they are amounts, percentages or rates; numbers with no unit word
    (section numbers, "in 2021,") are dropped, and so are identifiers: a number right
    after a label word ("Section 4.2", "version 2", "Article 17") or a capitals code
    ("ISO 27001", "SOC 2").

    >>> quantities("The limit is 1,000 requests per hour, 99.9% uptime, $5 per user.")
    [('1000', 'requests/hour'), ('99.9', '%'), ('5', '$/user')]
    """
    out: List[Tuple[str, str]] = []
    pending: List[str] = []          # "30 or 60 days": 30 takes the unit of the next number
    for m in _NUMBER.finditer(unit):
        # the label is searched in a window before the number, the unit in one after it:
        # linear in the sentence (searching the whole prefix made 9,500 numbers take 60 s)
        if not m.group("cur") and _label_before(unit, m.start()):
            continue                                  # "ISO 27001", "Section 4.2": identifiers
        value = _norm_number(m.group("num"))
        rest = unit[m.end():m.end() + _WINDOW]
        if m.group("pct"):
            name = "%"
        elif m.group("cur"):
            cur = m.group("cur").strip()
            name = _CURRENCY_CODES.get(cur, cur)
        else:
            name = ""
            pos = 0
            business = ""
            for _ in range(3):                       # skip up to two modifiers
                w = _WORD.match(rest, pos)
                if not w:
                    break
                word = w.group(1).lower()
                pos = w.end()
                if word in UNIT_MODIFIERS:
                    if word in _BUSINESS:
                        business = "business "
                    continue
                name = business + (stem(word) if stem else word)
                rest = rest[pos:]
                break
            if not name or name in _NOT_UNITS:
                if _JOINED.match(unit, m.end()):
                    pending.append(value)
                else:
                    pending = []
                continue
        per = _PER.match(rest)
        if per:
            second = per.group(1).lower()
            name = "%s/%s" % (name, stem(second) if stem else second)
        elif _YEAR.fullmatch(value) and not (m.group("pct") or m.group("cur")):
            pending = []
            continue                                  # "2021 policy": a date, not a quantity
        out.extend((v, name) for v in pending)
        pending = []
        out.append((value, name))
    return out


#: Characters after a number searched for its unit.
_WINDOW = 256
_LABEL_WORDS = frozenset("section sections article clause version chapter part annex appendix step table figure "
                         "fig item rule no number level phase form page p v class grade schedule tier stage "
                         "exhibit".split())
_CODE_WORD = re.compile(r"[A-Z]{2,}[A-Za-z]*")


def _label_before(text: str, end: int) -> bool:
    """Whether a label word ("Section", "no.") or a capitals code word ("ISO", "SOC") ends
    right before ``end`` (then spaces, an optional ``.`` and ``#``): _LABEL_BEFORE read
    backwards from the number, in time bounded by the word's length."""
    k = end
    while k > 0 and text[k - 1].isspace():
        k -= 1
    if k > 0 and text[k - 1] == "#":
        k -= 1
        while k > 0 and text[k - 1].isspace():
            k -= 1
    if k > 0 and text[k - 1] == ".":
        k -= 1
    stop = k
    while k > 0 and stop - k < _WINDOW and ("a" <= text[k - 1] <= "z" or "A" <= text[k - 1] <= "Z"):
        k -= 1
    if k == stop or (k > 0 and (text[k - 1].isalnum() or text[k - 1] == "_")):
        return False
    word = text[k:stop]
    return word.lower() in _LABEL_WORDS or _CODE_WORD.fullmatch(word) is not None
# A number right after a label word or an all-capitals code word is an identifier.
_LABEL_BEFORE = re.compile(r"(?:(?i:\b(?:section|sections|article|clause|version|chapter|part|annex|appendix|"
                           r"step|table|figure|fig|item|rule|no|number|level|phase|form|page|p|v|class|grade|"
                           r"schedule|tier|stage|exhibit))|\b[A-Z]{2,}[A-Za-z]*)\.?\s*#?\s*$")
# "30 or 60 days", "2 to 8 hours": the first number shares the second's unit.
_JOINED = re.compile(r"\s*(?:or|and|to|-|\u2013)\s*[$\u20ac\u00a3]?\d")
# Words after a number that are not units ("within 30 and 60", "in 2021 the").
_NOT_UNITS = frozenset("and or to the a an of in on at by for with from than is are was were "
                       "be it this that these those".split())
# A year-like number is a date unless it is an amount, a percentage or a rate ("2000 requests per hour").
_YEAR = re.compile(r"(?:19|20)\d\d")


def _norm_number(s: str) -> str:
    s = s.replace(",", "")
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return s


# -------------------------------------------------------------- qualifiers

def qualifiers(unit: str, values: Sequence[str], nouns: Sequence[str]) -> FrozenSet[str]:
    """The variants ``unit`` is scoped to, lower-cased.

    A qualifier is (1) a word of ``values`` (an entry written in capitals, such as
    ``US``, matches only in capitals, so the pronoun "us" is not the region; other
    entries match in any case; an entry of several words whose initials are another
    entry is that entry: "United States" is ``us`` when ``US`` is listed), or (2) a capitalized word right before one of ``nouns``
    ("Growth plan", "Gold tier": the name of a plan the list does not know).

    >>> sorted(qualifiers("On the Enterprise plan, EU data stays in Frankfurt.", ["enterprise", "EU"], ["plan"]))
    ['enterprise', 'eu']
    """
    return _qualifiers(unit, tuple(values), tuple(nouns))


@text_memo()
def _qualifiers(unit: str, values: Tuple[str, ...], nouns: Tuple[str, ...]) -> FrozenSet[str]:
    """:func:`qualifiers`, computed once per text and configured lists (a bounded memo)."""
    value_res, noun_re = _qualifier_patterns(values, nouns)
    found: Set[str] = set()
    for v, rx in value_res:
        if rx.search(unit):
            found.add(v.lower())
    if noun_re is not None:
        for m in noun_re.finditer(unit):
            word = m.group(1)
            if m.start() == 0 or word.lower() in _NOT_NAMES:
                continue                              # sentence-initial capital is not a name
            found.add(word.lower())
    return frozenset(found)


_QUAL_CACHE: Dict[Tuple[Tuple[str, ...], Tuple[str, ...]], Tuple[list, Optional["re.Pattern[str]"]]] = {}


def _qualifier_patterns(values: Tuple[str, ...], nouns: Tuple[str, ...]):
    got = _QUAL_CACHE.get((values, nouns))
    if got is None:
        value_res = []
        initialisms = {v for v in values if v and v.isupper() and len(v) > 1}
        for v in values:
            if v:
                flags = 0 if (v.isupper() and len(v) > 1) else re.IGNORECASE
                # "United States" is the qualifier "US" when "US" is configured too
                initials = "".join(w[0] for w in v.split()).upper()
                name = initials if len(v.split()) > 1 and initials in initialisms else v
                value_res.append((name, re.compile(r"(?<![\w-])" + re.escape(v) + r"(?![\w-])", flags)))
        noun_re = None
        if nouns:
            noun_re = re.compile(r"\b([A-Z][A-Za-z0-9+]*)\s+(?:%s)s?\b" % "|".join(re.escape(n) for n in nouns))
        got = _QUAL_CACHE[(values, nouns)] = (value_res, noun_re)
    return got


_NOT_NAMES = frozenset("the a an this that each every your our their any all new current old "
                       "same other which what".split())


# -------------------------------------------------------------- topic terms

def topic_terms(unit: str, analyzer, drop: Iterable[str] = ()) -> Set[str]:
    """Analyzed terms of ``unit`` minus numbers, polarity/modal words and ``drop``."""
    excluded = _polarity_terms(analyzer) | set(drop)
    return {t for t in analyzer.analyze(unit)
            if t not in excluded and not any(ch.isdigit() for ch in t)}


_POLARITY_CACHE: Dict[int, FrozenSet[str]] = {}


def _polarity_terms(analyzer) -> FrozenSet[str]:
    key = id(analyzer)
    got = _POLARITY_CACHE.get(key)
    if got is None:
        terms: Set[str] = set()
        for w in POLARITY_WORDS:
            terms.update(analyzer.analyze(w))
        got = _POLARITY_CACHE[key] = frozenset(terms)
    return got


# -------------------------------------------------------------- versions

@dataclass(frozen=True)
class DocVersion:
    """One document's version facts, as the corpus reader recorded them."""
    doc_id: str
    in_force: bool
    editions: FrozenSet[str]
    successor: str = ""                 # superseded_by doc id ("" when none)
    predecessor: str = ""               # the doc id its text says it supersedes
    family: str = ""                    # corpus.family_key of the doc_id


def doc_versions(hits: Iterable) -> Dict[str, DocVersion]:
    """``{doc_id: DocVersion}`` for the documents of ``hits`` (anything with ``doc_id`` and
    ``metadata``), from the metadata :mod:`mini_rag.text.corpus` filled."""
    out: Dict[str, DocVersion] = {}
    for h in hits:
        if h.doc_id in out:
            continue
        meta = getattr(h, "metadata", None) or {}
        read = meta.get("versions_read") or {}
        succ = meta.get("superseded_by")
        pred = read.get("supersedes")
        out[h.doc_id] = DocVersion(
            h.doc_id, not out_of_force(meta), frozenset(read.get("editions") or ()),
            succ.strip() if isinstance(succ, str) else "",
            pred[0] if isinstance(pred, list) and pred and isinstance(pred[0], str) else "",
            family_key(h.doc_id))
    return out


#: Words by which a question asks for the rule in force (rule 5b).
IN_FORCE_CUES = ("current", "currently", "now", "today", "in force", "in effect", "latest",
                 "presently", "at present", "these days", "nowadays", "still")
_IN_FORCE = re.compile(r"\b(?:" + "|".join(c.replace(" ", r"\s+") for c in IN_FORCE_CUES) + r")\b",
                       re.IGNORECASE)


def asks_in_force(question: str) -> bool:
    """True when the question asks for the rule in force (:data:`IN_FORCE_CUES`).

    >>> asks_in_force("What is the current password length?"), asks_in_force("What is the password length?")
    (True, False)
    """
    return bool(_IN_FORCE.search(question))


def named_editions(question: str) -> FrozenSet[str]:
    """The editions a question names, normalized as the corpus reader's
    (:func:`mini_rag.text.corpus.editions_in`).

    >>> sorted(named_editions("What did the 2019 policy say, under v2.3?"))
    ['2019', 'v2.3']
    """
    return frozenset(editions_in(question))


def _versions_apart(da: Optional[DocVersion], db: Optional[DocVersion], linked: bool,
                    named: FrozenSet[str], in_force_asked: bool, with_superseded: bool) -> bool:
    """Rule 5: True when two documents' units must not conflict because they are two
    versions and the question or the corpus picks one of them."""
    if da is None or db is None:
        return False
    related = (linked or db.doc_id in (da.successor, da.predecessor)
               or da.doc_id in (db.successor, db.predecessor)
               or (da.family != "" and da.family == db.family and da.editions != db.editions))
    if not related and da.in_force == db.in_force:
        return False
    if related and named and bool(da.editions & named) != bool(db.editions & named):
        return True                                    # 5a: the question chose one edition
    if da.in_force != db.in_force and (in_force_asked or not with_superseded):
        return True                                    # 5b: the in-force version answers
    return False


# -------------------------------------------------------------- detection

@dataclass
class ConflictPair:
    kind: str            # "polarity" | "numeric"
    axis: str            # polarity axis, or the unit of the numeric values
    doc_a: str
    chunk_a: str
    snippet_a: str
    doc_b: str
    chunk_b: str
    snippet_b: str
    reason: str

    def to_json(self) -> dict:
        return asdict(self)

    def compact(self) -> dict:
        """The trace's form: kind, axis, both chunk ids, the reason."""
        return {"kind": self.kind, "axis": self.axis, "a": self.chunk_a, "b": self.chunk_b,
                "reason": self.reason}


@dataclass
class _Unit:
    text: str
    doc: str
    chunk: str
    chunk_terms: FrozenSet[str]
    topic: Set[str]
    qterms: Set[str]
    quals: FrozenSet[str]
    pol: Dict[str, str]
    qty: Dict[str, Set[str]]


def find_conflicts(question_terms: Sequence[str], facts: Sequence, analyzer,
                   guards: Optional[dict] = None, clarify: Optional[dict] = None,
                   context: Optional[Dict[str, str]] = None, question: str = "",
                   anchor: Sequence[str] = (), versions: Iterable[Tuple[str, str]] = (),
                   bridges: Optional[Dict[str, List[FrozenSet[str]]]] = None,
                   doc_versions: Optional[Dict[str, DocVersion]] = None,
                   idf: Optional[Callable[[str], float]] = None) -> List[ConflictPair]:
    """Contradicting unit pairs among ``facts`` (records.Fact: quote, pdf = doc id,
    chunk_id), by the rule in the module docstring.  ``question_terms`` are the
    question's analyzed terms; ``guards`` and ``clarify`` are the config sections
    (``conflict_min_shared_terms``; ``dimension_values``, ``dimension_nouns``);
    ``context`` maps a chunk id to its heading and document title (rule 2c);
    ``question`` is the question's text, for the qualifiers it names (rule 2e);
    ``anchor``, when given, the chunk ids the answer cites: only pairs with a side among
    them are reported (rule 4); ``versions``, (old doc id, new doc id) pairs of one
    policy's versions (rule 2c); ``bridges``, the answering stage's (``relevance.
    expansion_bridges``): a question term is held by a unit that holds all terms of one
    of its alternatives ("min" by "minimum"); ``doc_versions``, each document's
    :class:`DocVersion` (rule 5; :func:`doc_versions` of the hits); ``idf``, a term's idf
    in the index (rule 2f; without it rule 2f is not applied)."""
    related = {frozenset(v) for v in versions}
    guards = guards or {}
    clarify = clarify or {}
    min_shared = int(guards.get("conflict_min_shared_terms", 2))
    values = clarify.get("dimension_values", [])
    nouns = clarify.get("dimension_nouns", [])
    qset = set(question_terms) - _polarity_terms(analyzer)
    def held(terms) -> Set[str]:
        """The question terms ``terms`` holds, itself or through a bridge."""
        return {t for t in qset if covered(t, terms, bridges)}
    q_quals = qualifiers(question, values, nouns) if question else frozenset()
    named = named_editions(question) if question else frozenset()
    in_force_asked = asks_in_force(question) if question else False
    with_superseded = bool(guards.get("conflicts_with_superseded", True))
    dv = doc_versions or {}
    min_subject = float(guards.get("conflict_min_subject", 0.5))
    weights = {t: max(float(idf(t)), 0.0) for t in sorted(qset)} if idf is not None else {}
    subject_mass = sum(weights.values())

    def subject_share(terms) -> float:
        """Sums in sorted term order: the same float whatever the hash seed."""
        return sum(weights[t] for t in sorted(held(terms))) / subject_mass if subject_mass > 0 else 1.0

    polarity_terms = _polarity_terms(analyzer)
    units: List[_Unit] = []
    seen_chunks: Set[str] = set()
    for fact in facts:
        if fact.chunk_id in seen_chunks:
            continue
        seen_chunks.add(fact.chunk_id)
        chunk_terms: Set[str] = set(analyzer.analyze((context or {}).get(fact.chunk_id, "")))
        pending: List[Tuple[str, List[str]]] = []
        for text in evidence_units(fact.quote):
            terms = analyzer.analyze(text)
            chunk_terms.update(terms)
            if held(set(terms)):                       # a unit without a question term never pairs
                pending.append((text, terms))
        frozen = frozenset(chunk_terms)
        for text, terms in pending:
            qty: Dict[str, Set[str]] = {}
            for value, unit_name in unit_quantities(text, analyzer):
                qty.setdefault(unit_name, set()).add(value)
            pol = polarity(text)
            if not pol and not qty:
                continue                               # states nothing that could contradict
            drop = set(polarity_terms)
            for name in qty:
                drop.update(t for part in name.split("/") for t in analyzer.analyze(part))
            topic = {t for t in terms if t not in drop and not any(ch.isdigit() for ch in t)}
            quals = qualifiers(text, values, nouns)
            if q_quals and quals and not (quals & q_quals):
                continue                               # rule 2e: another variant than asked
            units.append(_Unit(text, fact.pdf, fact.chunk_id, frozen, topic, held(topic),
                               quals, pol, qty))

    # Rule 2c: both chunks speak to the same part of the question.
    min_agreement = float(guards.get("conflict_min_agreement", 0.67))
    found: Dict[Tuple[str, str], ConflictPair] = {}
    for i, a in enumerate(units):
        if not a.qterms:
            continue
        for b in units[i + 1:]:
            if b.doc == a.doc or not b.qterms:
                continue
            if anchor and a.chunk not in anchor and b.chunk not in anchor:
                continue                               # rule 4: not about the answer
            first, second = (a, b) if a.chunk < b.chunk else (b, a)
            key = (first.chunk, second.chunk)
            linked = frozenset((a.doc, b.doc)) in related
            if key in found or not _same_subject(first, second, min_shared, held, min_agreement, linked):
                continue
            if weights and subject_share(a.chunk_terms | b.chunk_terms) < min_subject:
                continue                               # rule 2f: not about the asked subject
            if _versions_apart(dv.get(a.doc), dv.get(b.doc), linked, named, in_force_asked,
                               with_superseded):
                continue                               # rule 5: the version asked for answers
            pair = _contradiction(first, second)
            if pair is not None:
                found[key] = pair
    return [found[k] for k in sorted(found)]


def _same_subject(a: _Unit, b: _Unit, min_shared: int, held, min_agreement: float,
                  versions: bool = False) -> bool:
    if len(a.topic & b.topic) < min_shared:
        return False
    qa, qb = held(a.chunk_terms), held(b.chunk_terms)
    if (not versions and len(qa & qb) < min_agreement * len(qa | qb) and
            len(a.qterms & b.qterms) < min_agreement * len(a.qterms | b.qterms)):
        return False                                   # rule 2c: they speak to different parts
    if a.quals and b.quals and a.quals != b.quals:
        return False                                   # rule 2d: two variants
    return True


def _contradiction(a: _Unit, b: _Unit) -> Optional[ConflictPair]:
    for axis in ("permission", "refund", "encryption"):
        pa, pb = a.pol.get(axis), b.pol.get(axis)
        if pa and pb and pa != pb:
            return _pair("polarity", axis, a, b, "%s: %s vs %s" % (axis, pa, pb))
    for name in sorted(set(a.qty) & set(b.qty)):
        va, vb = a.qty[name], b.qty[name]
        if va.isdisjoint(vb):
            return _pair("numeric", name, a, b, "%s %s vs %s %s" % (
                "/".join(sorted(va, key=_num_key)), name, "/".join(sorted(vb, key=_num_key)), name))
    return None


def _num_key(v: str):
    try:
        return (float(v), v)
    except ValueError:
        return (float("inf"), v)


def _pair(kind: str, axis: str, a: _Unit, b: _Unit, reason: str) -> ConflictPair:
    return ConflictPair(kind, axis, a.doc, a.chunk, _snippet(a.text), b.doc, b.chunk, _snippet(b.text), reason)


def _snippet(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3].rstrip() + "..."


def _stemmer(analyzer):
    """A one-word stem function from the analyzer (units compare by stem: hour = hours)."""
    def stem(word: str) -> str:
        terms = analyzer.analyze(word)
        return terms[0] if terms else word.lower()
    return stem

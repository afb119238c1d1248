"""Gold tooling: derive a perturbation gold set from any gold file, deterministically.

A perturbed row is its source row with the question rewritten the way real users write
it, every gold field (``answerable``, ``gold_claim_substr``, ``gold_citations``,
``category``, ``expected_decision``, ``notes``...) unchanged, a new qid
``<source_qid>-<kind>`` and two added keys, ``source_qid`` and ``perturbation``.

Public API
==========

=====================================  ==============================================
``KINDS``                              registry: kind name -> :class:`Kind`
``perturb_question(q, qid, kind, c)``  one kind applied to one question, or None when
                                       the kind does not apply to it
``perturb_rows(rows, kinds, n, c)``    perturbed rows for a list of gold rows
``parse_kinds(text)``                  ``"typo,casing"`` -> validated tuple of names
``expansion_rules(config)``            the ``[expansion.*]`` rules as (match, add) pairs
``run_perturb(...)``                   the ``perturb`` command: read, perturb, append
                                       hand-written paraphrases, write atomically
=====================================  ==============================================

>>> perturb_question("How long are audit logs kept?", "Q-1", "expansion", ())
>>> perturb_question("Is approval required?", "Q-1", "synonym", ())
'Is approval needed?'

Kinds (each one edit, so a failure points at one cause)
-------------------------------------------------------

``typo``        one adjacent swap, deletion or duplication inside one lower-case word of
                at least 5 letters that is not a function word; the first and last
                letters stay (so the word is still recognisable, as real typos are).
``casing``      the whole question in lower case, in upper case, or in a seeded random
                mix of cases.
``word_order``  a trailing prepositional phrase moves to the front ("What is X for Y?"
                -> "For Y, what is X?"), or the two clauses around a single comma swap.
``synonym``     one word or phrase replaced from ``SYNONYMS``, a small table of general
                English synonyms and abbreviations (never derived from any corpus).
``distractor``  an irrelevant clause prepended or appended ("Quick question before my
                meeting: ..."), from ``DISTRACTORS``.
``expansion``   a phrase that a configured query expansion rule adds is replaced by the
                rule's ``match`` phrase ("continuous manufacturing" -> "continuous
                processing"), so the item is answerable only through the expansion.

Invariants: digits, codes (any token containing a digit: ``SEC-04``, ``ICH Q13``'s
``Q13``, ``99.9``) and quoted text are never changed (a kind that would change one does
not apply); no kind adds a plan, region or product qualifier; every output differs from
its input.

Determinism
-----------

All choices come from ``sha256((qid + kind).encode("utf-8"))`` (draw 0 is that digest,
draw i > 0 is ``sha256(digest + str(i))``), never from ``hash()`` or global random state,
so the output is byte-identical on every run, machine and Python version.  Kinds are
assigned "round robin by hash": items are visited in order of ``sha256(qid)`` (ties by
file position) and each takes, among the kinds that apply to its question, the ones used
least so far (ties by ``sha256(qid + kind)``).  So every kind is about equally frequent,
and a rare kind (``expansion``) is taken by every item it applies to.  Rows are written
in the source file's order, the kinds of one item in registry order.
"""
from __future__ import annotations

import difflib
import hashlib
import re
import sys
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

from ..errors import MiniRagError
from ..fileio import atomic_write_text, dumps_jsonl, join_errors, read_jsonl

Rules = Sequence[Tuple[str, Sequence[str]]]   # expansion rules: (match phrase, phrases it adds)


# ---------------------------------------------------------------- seeded choices

class _Rng:
    """A stream of integers from sha256(qid + kind); see the module docstring."""

    def __init__(self, qid: str, kind: str) -> None:
        self._digest = hashlib.sha256((qid + kind).encode("utf-8")).digest()
        self._i = 0

    def draw(self) -> int:
        if self._i == 0:
            d = self._digest
        else:
            d = hashlib.sha256(self._digest + str(self._i).encode("ascii")).digest()
        self._i += 1
        return int.from_bytes(d, "big")

    def below(self, n: int) -> int:
        return self.draw() % n

    def choice(self, seq):
        return seq[self.below(len(seq))]


# ---------------------------------------------------------------- protected text

_QUOTED = re.compile(r'"[^"\n]*"|\u201c[^\u201c\u201d\n]*\u201d|\u2018[^\u2018\u2019\n]*\u2019|(?<!\w)\'[^\'\n]+\'(?!\w)')
# A token group as the analyzer sees it: letter/digit runs joined by ' - / . (see analysis.py).
_GROUP = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*(?:[-/.,][^\W_]+(?:['\u2019][^\W_]+)*)*")
_DIGIT = re.compile(r"\d")


def protected_spans(text: str) -> List[Tuple[int, int]]:
    """(start, end) of quoted text and of codes (token groups containing a digit), sorted."""
    spans = [m.span() for m in _QUOTED.finditer(text)]
    for m in _GROUP.finditer(text):
        if _DIGIT.search(m.group()):
            spans.append(m.span())
    return sorted(spans)


def _overlaps(start: int, end: int, spans: List[Tuple[int, int]]) -> bool:
    return any(s < end and start < e for s, e in spans)


def _protected_texts(text: str) -> List[str]:
    return sorted(text[s:e] for s, e in protected_spans(text))


def _keeps_protected(before: str, after: str) -> bool:
    """Every quoted text and code of ``before`` still occurs, as many times, in ``after``."""
    for piece in set(_protected_texts(before)):
        if after.count(piece) < before.count(piece):
            return False
    return True


# ---------------------------------------------------------------- small text helpers

# Words that may start a sentence without being proper nouns: they are lower-cased when
# word_order moves them away from the front.
_COMMON_STARTERS = frozenset("""
a after all an any are at before by can could did do does during each every for from has
have how if in is may must on once our please should since that the there these this
those to under unless was we were what when where which while who whom whose why will
with within without would you your
""".split())

# Function words of five letters or more: a typo in them tests nothing.
_FUNCTION_WORDS = frozenset("""
about above after again against among because before being below between could doing
during either every having itself might other ought should their theirs there these
they'd those through under until where which while whose within without would yours
""".split())


# Number words are numbers: a typo must not turn "three" into "there".
_NUMBER_WORDS = frozenset("""
three seven eight eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen
nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million
billion first second third fourth fifth sixth seventh eighth ninth tenth twice thrice
dozen
""".split())

# A trailing phrase holding one of these is a clause, not a prepositional phrase
# ("in a batch record be fixed"), and moving it would break the sentence.
_CLAUSE_WORDS = frozenset("""
be is are was were been being do does did have has had can could will would shall should
must may might that which who whom whose what when where why how if whether than to
""".split())
_TAIL_STOP = frozenset("always never ever still also only already usually normally typically "
                       "not even".split())
_COPULAS = frozenset("be is are was were been being".split())
# A PP after one of these (past the first word) belongs to a subordinate clause.
_SUBORDINATORS = frozenset("if when whenever because unless while although though whether that "
                           "which who whom".split())
# A clause moved around a comma must be adverbial: it starts with one of these.
_ADVERBIAL_START = frozenset("""
if when whenever once after before while since unless although though because for under
in on at during within according from with without across between as given per
""".split())


def _decap(text: str) -> str:
    m = re.match(r"[A-Za-z]+", text)
    word = m.group() if m else ""
    if word.lower() in _COMMON_STARTERS and word[0].isupper() \
            and (len(word) == 1 or word[1:].islower()):
        return text[0].lower() + text[1:]
    return text


def _cap(text: str) -> str:
    return text[0].upper() + text[1:] if text and text[0].islower() else text


def _match_case(src: str, repl: str) -> str:
    if len(src) > 1 and src.isupper():
        return repl.upper()
    if src[:1].isupper():
        return repl[:1].upper() + repl[1:]
    return repl


def _fix_article(before: str, word: str) -> str:
    """``before`` (the text in front of ``word``) with a trailing a/an agreeing with word."""
    m = re.search(r"\b([Aa]n?)(\s+)$", before)
    if not m:
        return before
    art = "an" if word[:1].lower() in "aeiou" else "a"
    art = art.capitalize() if m.group(1)[0].isupper() else art
    return before[:m.start(1)] + art + m.group(2)


def _split_end(text: str) -> Tuple[str, str]:
    """(text without its final punctuation and spaces, that ending)."""
    i = len(text)          # a loop, not re.search(r"[\s?.!]*$"): that is quadratic on long runs
    while i and (text[i - 1] in "?.!" or text[i - 1].isspace()):
        i -= 1
    return text[:i], text[i:]


def _last_sentence_start(body: str, spans: List[Tuple[int, int]]) -> int:
    start = 0
    for m in re.finditer(r"[.?!]\s+", body):
        if not _overlaps(m.start(), m.end(), spans):
            start = m.end()
    return start


def _words(text: str) -> List[str]:
    return text.split()


# ---------------------------------------------------------------- the kinds

def _typo(q: str, rng: _Rng, rules: Rules) -> Optional[str]:
    spans = protected_spans(q)
    cands = [m for m in re.finditer(r"[^\W\d_]+", q)
             if len(m.group()) >= 5 and re.fullmatch(r"[a-z]+", m.group())
             and m.group() not in _FUNCTION_WORDS and m.group() not in _NUMBER_WORDS
             and not _overlaps(m.start(), m.end(), spans)]
    if not cands:
        return None
    m = rng.choice(cands)
    w = m.group()
    op = rng.choice(("swap", "delete", "duplicate"))
    swaps = [i for i in range(1, len(w) - 2) if w[i] != w[i + 1]]
    if op == "swap" and not swaps:
        op = "delete"
    if op == "swap":
        i = rng.choice(swaps)
        new = w[:i] + w[i + 1] + w[i] + w[i + 2:]
    else:
        i = 1 + rng.below(len(w) - 2)          # never the first or last letter
        new = w[:i] + w[i + 1:] if op == "delete" else w[:i] + w[i] + w[i:]
    return q[:m.start()] + new + q[m.end():]


def _casing(q: str, rng: _Rng, rules: Rules) -> Optional[str]:
    spans = protected_spans(q)
    variants = ("lower", "upper", "random")
    first = rng.below(len(variants))
    bits = rng.draw()
    for step in range(len(variants)):
        variant = variants[(first + step) % len(variants)]
        out = []
        for i, ch in enumerate(q):
            if variant == "random":
                new = ch.upper() if (bits >> (i % 256)) & 1 else ch.lower()
            else:
                new = ch.lower() if variant == "lower" else ch.upper()
            # Only one-to-one case changes: str.upper() turns "ß" into "SS".
            out.append(new if len(new) == 1 and not _overlaps(i, i + 1, spans) else ch)
        new_q = "".join(out)
        if new_q != q:
            return new_q
    return None


_PREPOSITIONS = ("under", "for", "during", "after", "before", "within", "in", "on", "at",
                 "from", "with", "without", "across", "between", "according to")


def _word_order(q: str, rng: _Rng, rules: Rules) -> Optional[str]:
    body, end = _split_end(q)
    spans = protected_spans(body)
    start = _last_sentence_start(body, spans)
    prefix, sent = body[:start], body[start:]
    spans = [(s - start, e - start) for s, e in spans if s >= start]
    options: List[str] = []
    commas = [m.start() for m in re.finditer(r",", sent) if not _overlaps(m.start(), m.end(), spans)]
    if len(commas) == 1:
        a, b = sent[:commas[0]].strip(), sent[commas[0] + 1:].strip()
        if len(_words(a)) >= 2 and len(_words(b)) >= 2 and \
                (_words(a)[0].lower() in _ADVERBIAL_START or _words(b)[0].lower() in _ADVERBIAL_START):
            options.append(_cap(b) + ", " + _decap(a))
    if not commas:
        pat = r"\b(?:%s)\b" % "|".join(p.replace(" ", r"\s+") for p in _PREPOSITIONS)
        for m in re.finditer(pat, sent, re.IGNORECASE):
            head, tail = sent[:m.start()].strip(), sent[m.start():].strip()
            rest = [w.lower() for w in re.findall(r"[^\W\d_]+", sent[m.end():])]
            if 3 <= len(_words(head)) and 2 <= len(_words(tail)) <= 7 \
                    and not _overlaps(m.start(), m.end(), spans) \
                    and (m.start() == 0 or sent[m.start() - 1].isspace()) \
                    and sent[m.end():m.end() + 1] not in ("-", "/") \
                    and not _SUBORDINATORS.intersection(w.lower() for w in _words(head)[1:]) \
                    and (not rest or rest[0] not in _PREPOSITIONS) \
                    and not _CLAUSE_WORDS.intersection(rest) \
                    and not _TAIL_STOP.intersection(rest) \
                    and not any(len(w) > 4 and w.endswith("ed") for w in rest) \
                    and _words(head)[-1].lower() not in _COPULAS | _TAIL_STOP:
                options.append(_cap(tail) + ", " + _decap(head))
    if not options:
        return None
    return prefix + rng.choice(options) + end


# General English synonyms and abbreviations, as users type them.  Never derived from a
# corpus.  (pattern, replacement); patterns are whole words, case-insensitive.
SYNONYMS: Tuple[Tuple[str, str], ...] = (
    ("maximum", "max"),
    ("minimum", "min"),
    ("information", "info"),
    ("approximately", "approx."),
    (r"(?<!for )how long(?!.*\bfor\W*$)", "for how long"),     # not "for how long ... for?"
    (r"(?<=to )purchase", "buy"),
    ("purchased", "bought"),
    ("employees", "staff"),
    ("employee", "staff member"),
    ("personnel", "staff"),
    ("customers", "clients"),
    ("customer", "client"),
    ("required", "needed"),
    ("requirements", "rules"),
    ("documents", "docs"),
    ("documentation", "docs"),
    ("permitted", "allowed"),
    ("additional", "extra"),
    ("immediately", "right away"),
    ("assistance", "help"),
    ("obtain", "get"),
    ("terminate", "end"),
    ("terminated", "ended"),
    ("prior to", "before"),
    ("regarding", "about"),
    ("concerning", "about"),
    ("retained", "kept"),
    ("modify", "change"),
    ("modified", "changed"),
    ("organization", "org"),
    ("application", "app"),
    ("applications", "apps"),
    ("department", "dept."),
    ("frequently", "often"),
    ("utilize", "use"),
)


def _synonym(q: str, rng: _Rng, rules: Rules) -> Optional[str]:
    spans = protected_spans(q)
    cands = []
    for pattern, repl in SYNONYMS:
        for m in re.finditer(r"\b%s\b" % pattern, q, re.IGNORECASE):
            if not _overlaps(m.start(), m.end(), spans):
                cands.append((m.start(), m.end(), repl))
    if not cands:
        return None
    s, e, repl = rng.choice(sorted(cands))
    new = _match_case(q[s:e], repl)
    return _fix_article(q[:s], new) + new + q[e:]


# Irrelevant clauses: no plan, region, product, customer type or corpus topic in them.
DISTRACTORS: Tuple[Tuple[str, str], ...] = (
    ("prefix", "Quick question before my meeting: "),
    ("prefix", "Sorry if this was asked already: "),
    ("prefix", "Hi there! "),
    ("prefix", "One more thing: "),
    ("inner", ", asking for a colleague"),
    ("inner", ", if you happen to know"),
    ("suffix", " Thanks in advance!"),
    ("suffix", " Cheers."),
)


def _distractor(q: str, rng: _Rng, rules: Rules) -> Optional[str]:
    where, clause = rng.choice(DISTRACTORS)
    if where == "prefix":
        return clause + q
    body, end = _split_end(q)
    if where == "inner":
        return body + clause + (end or "")
    return body + (end.rstrip() or "?") + clause


# The asker's situation before the question (issue 30's scenario questions): general
# sentences about why one asks, with no plan, region, product, customer type or corpus topic.
SCENARIOS: Tuple[str, ...] = (
    "I'm new on the team and still finding my way around the documents.",
    "My manager asked me to check this before our meeting tomorrow.",
    "We are putting together a short summary for an internal review.",
    "A colleague and I remembered this differently, so I want to be sure.",
    "I read about this a while ago but cannot remember the details.",
    "I'm preparing notes for a presentation next week.",
)


def _scenario(q: str, rng: _Rng, rules: Rules) -> Optional[str]:
    first = rng.choice(SCENARIOS)
    rest = [s for s in SCENARIOS if s != first]
    two = rng.choice((False, True))
    return " ".join([first] + ([rng.choice(rest)] if two else []) + [q])


def _expansion(q: str, rng: _Rng, rules: Rules) -> Optional[str]:
    spans = protected_spans(q)
    cands = []
    for match, adds in rules:
        for phrase in adds:
            if _DIGIT.search(phrase) or not phrase.strip():
                continue     # a code is not phrasing; swapping it would change the question
            pat = r"\b%s\b" % r"\s+".join(re.escape(w) for w in phrase.split())
            for m in re.finditer(pat, q, re.IGNORECASE):
                if not _overlaps(m.start(), m.end(), spans) \
                        and not re.search(r"\b%s\b" % re.escape(match), q, re.IGNORECASE):
                    cands.append((m.start(), m.end(), match))
    if not cands:
        return None
    s, e, repl = rng.choice(sorted(cands))
    new = _match_case(q[s:e], repl)
    return _fix_article(q[:s], new) + new + q[e:]


class Kind(NamedTuple):
    name: str
    description: str
    apply: Callable[[str, _Rng, Rules], Optional[str]]


KINDS: Dict[str, Kind] = {k.name: k for k in (
    Kind("typo", "one adjacent swap, deletion or duplication in one lower-case word of 5+ letters",
         _typo),
    Kind("casing", "the question in lower, upper or seeded random casing", _casing),
    Kind("word_order", "a trailing prepositional phrase moved to the front, or two clauses "
         "swapped around a comma", _word_order),
    Kind("synonym", "one word replaced from a general English synonym/abbreviation table",
         _synonym),
    Kind("distractor", "an irrelevant clause prepended or appended", _distractor),
    Kind("expansion", "a phrase a query-expansion rule adds replaced by the rule's match phrase",
         _expansion),
    Kind("scenario", "one or two sentences of the asker's situation (SCENARIOS) before the question",
         _scenario),
)}
#: The kinds ``perturb`` applies without ``--kinds``: every kind but ``scenario`` (opt-in, issue 30;
#: the committed gold_perturb.jsonl is made without it).
DEFAULT_KINDS: Tuple[str, ...] = tuple(k for k in KINDS if k != "scenario")


# ---------------------------------------------------------------- applying

def parse_kinds(text: str) -> Tuple[str, ...]:
    """``"typo, casing"`` -> ("typo", "casing") in registry order; unknown names raise."""
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise MiniRagError("--kinds: give at least one kind, got %r" % text)
    for n in names:
        if n not in KINDS:
            close = difflib.get_close_matches(n, list(KINDS), n=1)
            hint = "; did you mean %r?" % close[0] if close else ""
            raise MiniRagError("--kinds: unknown perturbation kind %r%s (known: %s)"
                               % (n, hint, ", ".join(KINDS)))
    return tuple(k for k in KINDS if k in names)


def expansion_rules(config: dict) -> Tuple[Tuple[str, Tuple[str, ...]], ...]:
    """The config's ``[expansion.NAME]`` rules as (match, add) pairs, by rule name."""
    table = config.get("expansion", {})
    return tuple((table[name]["match"], tuple(table[name]["add"])) for name in sorted(table))


def perturb_question(question: str, qid: str, kind: str, rules: Rules) -> Optional[str]:
    """``question`` perturbed by ``kind`` (seeded by qid + kind), or None if it does not apply.

    None also when the result would equal the question or alter a code or quoted text.
    """
    out = KINDS[kind].apply(question, _Rng(qid, kind), rules)
    if out is None or out == question or not out.strip() or not _keeps_protected(question, out):
        return None
    return out


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def perturb_rows(rows: Sequence[dict], kinds: Sequence[str], per_item: int,
                 rules: Rules) -> List[dict]:
    """Perturbed rows, ``per_item`` kinds per source row where that many apply.

    Rows need string ``qid`` and ``question`` (the caller validates).  See the module
    docstring for how kinds are assigned.
    """
    chosen: Dict[int, List[Tuple[str, str]]] = {}
    counts = {k: 0 for k in kinds}
    for i in sorted(range(len(rows)), key=lambda i: (_sha(rows[i]["qid"]), i)):
        qid, question = rows[i]["qid"], rows[i]["question"]
        options = {}
        for k in kinds:
            out = perturb_question(question, qid, k, rules)
            if out is not None:
                options[k] = out
        picked = sorted(options, key=lambda k: (counts[k], _sha(qid + k)))[:per_item]
        for k in picked:
            counts[k] += 1
        chosen[i] = [(k, options[k]) for k in kinds if k in picked]
    out_rows = []
    for i, row in enumerate(rows):
        for kind, question in chosen[i]:
            new = dict(row)
            new["qid"] = "%s-%s" % (row["qid"], kind)
            new["question"] = question
            new["source_qid"] = row["qid"]
            new["perturbation"] = kind
            out_rows.append(new)
    return out_rows


# ---------------------------------------------------------------- the command

def _nonempty_str(v) -> bool:
    return isinstance(v, str) and bool(v.strip())


def _read_gold(path: str, errors: List[str], seen: Dict[str, str]) -> List[Tuple[int, dict]]:
    """Rows of one gold file; bad qids/questions and qids already in ``seen`` go to errors."""
    rows = read_jsonl(path)
    for lineno, row in rows:
        qid = row.get("qid")
        if isinstance(qid, str) and qid in seen:
            errors.append("%s:%d: qid already used by %s, got %r" % (path, lineno, seen[qid], qid))
        elif isinstance(qid, str):
            seen[qid] = "%s:%d" % (path, lineno)
        for key in ("qid", "question"):
            if not _nonempty_str(row.get(key)):
                errors.append("%s:%d: %s must be a non-empty string, got %r"
                              % (path, lineno, key, row.get(key)))
    return rows


def run_perturb(gold: Sequence[str], out: str, paraphrases: Sequence[str] = (),
                kinds: Sequence[str] = DEFAULT_KINDS, per_item: int = 1,
                rules: Rules = ()) -> Dict[str, int]:
    """The ``perturb`` command; returns the number of rows written per perturbation kind.

    ``gold`` is one or more gold files, read as their concatenation in the order given.
    """
    if not 1 <= per_item <= len(kinds):
        raise MiniRagError("--per-item must be between 1 and the number of kinds (%d), got %d"
                           % (len(kinds), per_item))
    errors: List[str] = []
    seen: Dict[str, str] = {}          # qid -> where it is first used
    gold_rows: List[dict] = []
    for path in gold:
        gold_rows.extend(row for _, row in _read_gold(path, errors, seen))
    if errors:
        raise MiniRagError(join_errors(errors))
    sources = dict(seen)
    rows = perturb_rows(gold_rows, kinds, per_item, rules)
    for r in rows:
        if r["qid"] in seen:
            errors.append("%s: perturbed qid %r collides with a gold qid" % (seen[r["qid"]], r["qid"]))
        seen[r["qid"]] = "the perturbed row of %s" % r["source_qid"]
    para_rows = []
    for path in paraphrases:
        for lineno, row in _read_gold(path, errors, seen):
            for key in ("source_qid", "perturbation"):
                if not _nonempty_str(row.get(key)):
                    errors.append("%s:%d: a paraphrase row needs %s (a non-empty string), got %r"
                                  % (path, lineno, key, row.get(key)))
            src = row.get("source_qid")
            if _nonempty_str(src) and src not in sources:
                errors.append("%s:%d: source_qid is not a qid of %s, got %r"
                              % (path, lineno, " + ".join(gold), src))
            para_rows.append(row)
    if errors:
        raise MiniRagError(join_errors(errors))
    atomic_write_text(out, dumps_jsonl(rows + para_rows))
    counts: Dict[str, int] = {}
    for r in rows + para_rows:
        counts[r["perturbation"]] = counts.get(r["perturbation"], 0) + 1
    return counts


def main_perturb(args) -> int:
    from ..config import load_config
    rules = expansion_rules(load_config(args.config))
    kinds = parse_kinds(args.kinds) if args.kinds is not None else DEFAULT_KINDS
    counts = run_perturb(args.gold, args.out, args.paraphrases or (), kinds, args.per_item, rules)
    total = sum(counts.values())
    print("perturb: wrote %d rows to %s (%s)"
          % (total, args.out, ", ".join("%s=%d" % kv for kv in sorted(counts.items()))),
          file=sys.stderr)
    return 0

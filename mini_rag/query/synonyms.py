"""Plain-language synonyms, so that "How long do we keep tickets?" finds "are retained".

People ask in everyday words; policies and guidance are written in formal ones.  The
groups below pair the two registers the way plain-language writing guides list them
("retain" -> "keep", "terminate" -> "end", "prior to" -> "before"), plus a few phrasal
verbs ("hold on to", "cut off", "give back") and everyday nouns with their formal
equivalents ("staff" / "personnel"), the short forms people type ("app", "min", "info")
and British and American spellings that stemming keeps apart ("licence" / "license").
They are general English, written for this module, never derived from a corpus or a
gold set.

Words with several everyday senses are left out on purpose ("leave" is also a holiday,
"fire" also flames, "support" also a team, "free" also a plan,
"minor" also a child, "withdraw" also cancelling a purchase, "longer" also "no longer",
"fee" and "charge" differ in many price lists), and so are words whose stem is a more
general word ("yearly" stems to "year"): a bridge that fires on the wrong sense lets a
sentence cover a question it does not answer.  A few appear only on the narrow side of
a kinds line (below), whose broad side has one sense: "present > gift" lets "Gifts must
be declared" answer a question about an expensive present, while "present your badge"
in the evidence covers no question about gifts.

``synonym_bridges(question, q_terms, analyzer, extra)`` gives the answering stage
(``relevance.expansion_bridges``) its bridges: a question term of a group is also
covered by a sentence holding every term of another member of that group.  A member of
several words is a *phrase*: it bridges only when it appears in the question as written
("cut off" names revoking, "cut" alone does not), and it covers a question term only
when none of its words is a stop word (``make sure`` can, ``cut off`` cannot).
``number_bridges`` does the same for numbers: "five thousand" is covered by "5,000" and
"72" by "seventy-two" (``spelled_numbers``: a small count with no unit after it, as in
"the four elements", is left alone).
A line ``narrow, ... > broad, ...`` lists *kinds*: a card is a payment method, a
test environment a non-production one, a higher or longer one an increase.  A rule stated for the broad word covers the
narrow one ("refunds go back to the original payment method" answers "... on my card?"),
never the other way round, and two narrow words are not each other.
``unit_bridges``: a length of time asked without a number ("unpaid for weeks", "how many
days") is covered by a sentence that names another unit ("21 days").
``comparative_bridges``: a comparative the stemmer keeps whole ("riskier than") is
covered by its base ("lower-risk").
Retrieval uses the groups at ``[retrieval] synonym_weight`` of a term's weight
(``Retriever.alternatives``; 0 turns that off).  ``[answer] synonyms =
false`` turns them off; ``[answer] synonym_groups`` adds a corpus's own groups, each a
comma-separated string like the lines below.

>>> from mini_rag.text.analysis import Analyzer
>>> b = synonym_bridges("How long do we keep tickets?", ["keep", "ticket"], Analyzer())
>>> sorted(sorted(alt) for alt in b["keep"])
[['kept'], ['preserv'], ['retain']]
"""
from __future__ import annotations

import functools
import re
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple

__all__ = ["GROUPS", "Synonym", "Equivalent", "parse_groups", "synonym_bridges", "spelled_numbers", "number_bridges",
           "unit_bridges", "comparative_bridges", "stated_bounds", "question_quantities", "range_bridges",
           "quantity_bridges"]

#: One group per line: words and phrases with one meaning.  ``#`` starts a comment.
GROUPS = """
# verbs: formal = plain
begin, start, commence, initiate
finish, complete, conclude
end, terminate, cease, discontinue
keep, kept, retain, preserve, hold on to
tell, inform, notify, report
ask, request, inquire, enquire
get, got, obtain, acquire
lose, lost
give, gave, provide, furnish
send, sent, submit, transmit, hand in
return, give back, send back, hand back, bring back
buy, bought, purchase
help, assist
use, utilize, utilise
show, demonstrate
change, modify, alter, amend
fix, correct, rectify, remedy
check, verify
choose, chose, chosen, select, pick, opt
need, require
mandatory, compulsory, obligatory, required
allow, permit
ban, prohibit, forbid, forbidden
delete, erase, purge, get rid of
revoke, cut off, take away
turn off, disable, deactivate, switch off
turn on, enable, activate, switch on
quit, resign, resignation
hire, recruit, new hire, new joiner, new starter
raise, increase, boost
lower, reduce, decrease, cut down
redo, repeat, retake
replace, take over, substitute, get a new
find out, discover, determine
set up, configure, establish
carry out, perform, conduct
look into, investigate
sign up, register, enrol, enroll
put off, postpone, defer, delay
speed up, expedite, accelerate
make sure, ensure
pay back, repay
stop, halt
urgent, emergency
try, attempt
answer, respond, reply
fill in, fill out, complete
# adjectives and adverbs
extra, additional, supplementary
enough, sufficient, adequate
wrong, incorrect, erroneous, inaccurate
broken, damaged, faulty, defective
lost, missing
big, bigger, large, larger
small, smaller
annual, annually, every year
monthly, every month
daily, every day
weekly, every week
main, primary, principal
guarantee, guaranteed, promise, promised, commitment
# nouns: everyday = formal
staff, staff member, employee, personnel, workforce
boss, manager, supervisor
job, role
charity, charities, nonprofit, non-profit, not-for-profit
leak, breach
dollar, dollars, usd
euro, euros, eur
mistake, error
phone, mobile phone, smartphone, cell phone
email, e-mail
salary, wage, remuneration
law, legislation, statute
internet, public network
regulator, supervisory authority, regulatory authority, data protection authority
discount, price reduction, rebate, reduced price
refund, money back
discount code, promo code, promotional code, coupon, coupon code, voucher code
customer, client
# short forms people type
application, app
minimum, min
maximum, max
minute, mins
hour, hr, hrs
year, yr, yrs
information, info
identification, id
documentation, document, docs
organization, organisation, org
department, dept
approximately, approx
administrator, admin
configuration, config
environment, env
authentication, auth
manager, mgr
management, mgmt
account, acct
promotion, promotional, promo
# kinds: "narrow > broad", a rule about the broad word covers the narrow one, not back
card, credit card, debit card, bank card, bank transfer, wire transfer > payment method
laptop, phone, smartphone, tablet, desktop > device
staging, test environment, development environment, sandbox > non-production, non-production environment
penetration test, penetration testing, pentest, vulnerability scan > security test, security testing
higher, greater, larger, bigger, faster > increase
lower, smaller, slower, fewer > decrease, reduction
present, presents > gift, gifts
threaten, endanger, jeopardise, jeopardize > harm
design, designed > nominal
half-price, half price, half off > discount
raise as, raised as, log as > record, recorded
# abbreviations everyone writes without spelling out
mfa, multi-factor authentication, multifactor authentication
2fa, two-factor authentication
sso, single sign-on
vpn, virtual private network
pii, personally identifiable information
hr, human resources
faq, frequently asked questions
# spelling: British = American (Snowball stems them apart)
licence, license
analyse, analyze
organise, organize
recognise, recognize
minimise, minimize
prioritise, prioritize
centre, center
colour, color
behaviour, behavior
defence, defense
programme, program
catalogue, catalog
fulfil, fulfill
judgement, judgment
modelling, modeling
travelling, traveling
"""

_WORD = re.compile(r"[a-z0-9]+(?:[-'][a-z0-9]+)*")


class Synonym(frozenset):
    """An alternative term set that comes from a synonym group.  It covers a question
    term like any bridge; unlike the corpus's own bridges (derivations, abbreviations,
    expansion rules), it does not by itself make a word the corpus never uses a term
    the answer must hold (``synthesize``: a synonym can only help)."""
    __slots__ = ()


class Equivalent(Synonym):
    """A synonym of one meaning: another member of the same group, not a broad word of a
    kinds line.  The answering stage weighs a question term no higher than the idf of its
    commonest equivalent (``synthesize``): "staff member" says what "employee" says."""
    __slots__ = ()


def parse_groups(text: str) -> List[List[str]]:
    """The groups of ``text``: one per non-blank line, members split on commas, ``#``
    comments dropped, members folded and whitespace-normalized; one-member lines dropped.
    A line ``narrow, ... > broad, ...`` is a group whose members after ``>`` are marked
    with a leading ``>``: they cover the narrow ones and are covered by none.

    >>> parse_groups("keep, retain  # plain\\ncard > payment method")
    [['keep', 'retain'], ['card', '>payment method']]
    """
    out: List[List[str]] = []
    for line in text.splitlines():
        line = line.split("#", 1)[0]
        narrow, _, broad = line.partition(">")
        members = [" ".join(m.casefold().split()) for m in narrow.split(",")]
        members = list(dict.fromkeys(m for m in members if m))
        wide = [">" + m for m in (" ".join(b.casefold().split()) for b in broad.split(",")) if m] if broad else []
        if members and (wide or len(members) >= 2):
            out.append(members + list(dict.fromkeys(wide)))
    return out


_BUILTIN = parse_groups(GROUPS)


@functools.lru_cache(maxsize=16)
def _analyzed_groups(analyzer, extra: Tuple[str, ...]) -> List[List[Tuple[str, Tuple[str, ...], bool, bool, bool]]]:
    """Each group's members as (words joined by spaces, terms, every word survived
    analysis, one word with one term, broad: covers only), analyzed once per analyzer
    and extra groups."""
    out = []
    for group in _BUILTIN + parse_groups("\n".join(extra)):
        members = []
        for member in group:
            words = _WORD.findall(member)
            terms = tuple(analyzer.analyze(member))
            whole = bool(words) and all(analyzer.analyze(w) for w in words)   # "multi-factor": 2 terms
            members.append((" ".join(words), terms, whole, len(words) == 1 and len(terms) == 1,
                            member.startswith(">")))
        out.append(members)
    return out


@functools.lru_cache(maxsize=16)
def _group_lookup(analyzer, extra: Tuple[str, ...]):
    """``({term: group positions}, {term: [(group position, words)]})`` of
    :func:`_analyzed_groups`: the groups a one-word member's term is in, and the phrase
    members (the rest, neither empty nor broad) holding a term, so :func:`synonym_bridges`
    visits only the groups a question touches."""
    by_term: Dict[str, List[int]] = {}
    phrases: Dict[str, List[Tuple[int, str]]] = {}
    for g, analyzed in enumerate(_analyzed_groups(analyzer, extra)):
        for words, terms, _whole, single, broad in analyzed:
            if not terms or broad:
                continue
            if single:
                got = by_term.setdefault(terms[0], [])
                if g not in got:
                    got.append(g)
            else:
                for t in dict.fromkeys(terms):
                    phrases.setdefault(t, []).append((g, words))
    return by_term, phrases


def synonym_bridges(question: str, q_terms: Sequence[str], analyzer,
                    extra: Iterable[str] = ()) -> Dict[str, List[FrozenSet[str]]]:
    """``{question term: [alternative term sets]}`` from the groups (and ``extra`` lines).

    A one-word member bridges the question term it analyzes to; a phrase (or a word
    that analyzes to several terms, such as "e-mail") bridges each of its terms when the
    question contains it word for word.  The alternatives are the group's other members
    whose words all survive analysis.
    """
    folded = " " + " ".join(_WORD.findall(question.casefold())) + " "
    have = set(q_terms)
    out: Dict[str, List[FrozenSet[str]]] = {}
    extra = tuple(extra)
    groups = _analyzed_groups(analyzer, extra)
    by_term, phrases = _group_lookup(analyzer, extra)
    # Only the groups with a member the question holds can bridge (in group order).
    touched = {g for t in have for g in by_term.get(t, ())}
    touched.update(g for t in have for g, words in phrases.get(t, ())
                   if g not in touched and " %s " % words in folded)
    for analyzed in (groups[g] for g in sorted(touched)):
        sources: List[Tuple[str, int]] = []          # (question term, index of its member)
        for i, (words, terms, _whole, single, broad) in enumerate(analyzed):
            if not terms or broad:
                continue
            if single:
                if terms[0] in have:
                    sources.append((terms[0], i))
            elif " %s " % words in folded:
                sources.extend((t, i) for t in terms if t in have)
        kinds = any(m[4] for m in analyzed)         # a narrow word: only its broad words cover it
        for term, i in sources:
            for j, (_words, terms, whole, _single, broad) in enumerate(analyzed):
                alt = Synonym(terms) if kinds else Equivalent(terms)
                if j == i or not whole or not terms or term in alt or (kinds and not broad):
                    continue
                bucket = out.setdefault(term, [])
                if alt not in bucket:
                    bucket.append(alt)
    return out


# ------------------------------------------------------------------ numbers in words

_UNITS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen".split())}
_TENS = {w: 10 * i for i, w in enumerate(
    "twenty thirty forty fifty sixty seventy eighty ninety".split(), 2)}
_SCALES = {"thousand": 1000, "million": 10 ** 6, "billion": 10 ** 9}
_NUMBER_TOKEN = re.compile(r"[a-z]+|\d+(?:,\d{3})*(?:\.\d+)?|\S")


def _spelled_value(words: Sequence[str]) -> int:
    """The value of a run of number words ("five thousand" = 5000, "twenty four" = 24)."""
    total = current = 0
    for w in words:
        if w in _UNITS:
            current += _UNITS[w]
        elif w in _TENS:
            current += _TENS[w]
        elif w == "hundred":
            current = max(current, 1) * 100
        else:
            total += max(current, 1) * _SCALES[w]
            current = 0
    return total + current


#: A unit after a small spelled number makes it a quantity ("five-day", "three years").
_UNIT_AFTER = re.compile(r"\s{0,20}(?:-\s{0,20})?(?:(?:business|calendar|working)\s{1,20})?(?:seconds?|minutes?|hours?|days?|weeks?|"
                         r"months?|years?|decades?|percent|per\s+cent|dollars?|euros?|pounds?|times|"
                         r"kilo\w*|kg|grams?|metres?|meters?|miles?|users?|seats?|characters?)\b")


def spelled_numbers(text: str) -> List[Tuple[List[str], str]]:
    """The quantities ``text`` spells out, each as (its words, its digits).

    A run of number words joined by spaces, hyphens or "and" inside a number ("one
    hundred and five") is one number.  A run below ten without a scale word is a
    quantity only when a unit follows it ("five-day", "three years"): "the four
    elements" or "one session" counts things the evidence need not number.

    >>> spelled_numbers("Refunds over five thousand dollars, a twenty-four hour window")
    [(['five', 'thousand'], '5000'), (['twenty', 'four'], '24')]
    >>> spelled_numbers("the four elements of a five-day campaign")
    [(['five'], '5')]
    """
    folded = text.casefold()
    out: List[Tuple[List[str], str]] = []
    run: List[str] = []
    tokens = [(m.group(), m.end()) for m in _NUMBER_TOKEN.finditer(folded)]
    end = 0
    for i, (tok, tok_end) in enumerate(tokens + [("", len(folded))]):
        if tok in _UNITS or tok in _TENS or tok == "hundred" or tok in _SCALES:
            run.append(tok)
            end = tok_end
            continue
        if tok == "-" and run:
            continue
        if tok == "and" and run and run[-1] in ("hundred",) + tuple(_SCALES) and \
                i + 1 < len(tokens) and (tokens[i + 1][0] in _UNITS or tokens[i + 1][0] in _TENS):
            continue
        if run:
            value = _spelled_value(run)
            if value >= 10 or _UNIT_AFTER.match(folded, end):
                out.append((run, str(value)))
            run = []
    return out


def number_bridges(question: str, q_terms: Sequence[str], analyzer) -> Dict[str, List[FrozenSet[str]]]:
    """``{question term: [alternative term sets]}`` for numbers written in words or in
    digits: "five thousand" is covered by "5,000" (each of its words by the term 5000),
    "72" by "seventy-two" when that is how the evidence writes it (a number up to
    ninety-nine written in digits is covered by its words)."""
    have = set(q_terms)
    out: Dict[str, List[FrozenSet[str]]] = {}
    for words, digits in spelled_numbers(question):
        alt = Synonym(analyzer.analyze(digits))
        if not alt:
            continue
        for word in words:
            for term in analyzer.analyze(word):
                if term in have and alt not in out.setdefault(term, []):
                    out[term].append(alt)
    names = {v: k for k, v in _UNITS.items()}
    names.update({v: k for k, v in _TENS.items()})
    for term in q_terms:
        if term.isdigit() and 0 < int(term) < 100 and str(int(term)) == term:
            n = int(term)
            words = [names[n]] if n in names else [names[n - n % 10], names[n % 10]]
            alt = Synonym(t for w in words for t in analyzer.analyze(w))
            if alt:
                out.setdefault(term, []).append(alt)
    return out


#: A plural time unit; a vague length of time when no number comes before it ("for weeks").
_TIME_UNITS = ("seconds", "minutes", "hours", "days", "weeks", "months", "years")
_PLURAL_UNIT = re.compile(r"((?<!\S)\S{1,100}\s{1,20})?\b(" + "|".join(_TIME_UNITS) + r")\b")


def unit_bridges(question: str, q_terms: Sequence[str], analyzer) -> Dict[str, List[FrozenSet[str]]]:
    """``{question term: [alternative term sets]}`` for a length of time asked without a
    number: "unpaid for weeks" or "how many days" is covered by a sentence that names
    another unit ("21 days", "within 2 weeks").  "After 3 weeks" names one length, and
    "14 days" may or may not be it, so a unit after a number bridges nothing.

    >>> from mini_rag.text.analysis import Analyzer
    >>> sorted(sorted(a)[0] for a in unit_bridges("Unpaid for weeks?", ["unpaid", "week"], Analyzer())["week"])
    ['day', 'hour', 'minut', 'month', 'second', 'year']
    >>> unit_bridges("Unpaid for 3 weeks?", ["unpaid", "3", "week"], Analyzer())
    {}
    """
    have = set(q_terms)
    out: Dict[str, List[FrozenSet[str]]] = {}
    for m in _PLURAL_UNIT.finditer(question.casefold()):
        before = (m.group(1) or "").strip().strip("-").rsplit("-", 1)[-1]     # "twenty-one" -> "one"
        if before and (any(c.isdigit() for c in before) or before in _UNITS or before in _TENS or
                       before in _SCALES or before in ("hundred", "dozen")):
            continue
        for term in analyzer.analyze(m.group(2)):
            if term not in have:
                continue
            bucket = out.setdefault(term, [])
            for other in _TIME_UNITS:
                alt = Synonym(analyzer.analyze(other))
                if alt and term not in alt and alt not in bucket:
                    bucket.append(alt)
    return out


#: A comparative: "riskier than", "longer than", "safer than".
_COMPARATIVE = re.compile(r"\b([a-z]{2,}?)(ier|er)\s+than\b")


def comparative_bridges(question: str, q_terms: Sequence[str], analyzer) -> Dict[str, List[FrozenSet[str]]]:
    """``{question term: [alternative term sets]}`` for a comparative the stemmer keeps
    whole: "riskier than" is covered by "risk" or "risky", "safer than" by "safe",
    "bigger than" by "big".  Only before "than", where "-er" is sure to be the
    comparative ("user", "order" and "computer" are no comparatives).

    >>> from mini_rag.text.analysis import Analyzer
    >>> comparative_bridges("Is a longer run riskier than a faster one?", ["longer", "run", "riskier", "faster"], Analyzer())
    {'riskier': [Synonym({'riski'}), Synonym({'risk'})]}
    """
    have = set(q_terms)
    out: Dict[str, List[FrozenSet[str]]] = {}
    for m in _COMPARATIVE.finditer(question.casefold()):
        base, suffix = m.group(1), m.group(2)
        bases = [base + "y", base] if suffix == "ier" else [base, base + "e"]
        if suffix == "er" and len(base) > 2 and base[-1] == base[-2]:
            bases.append(base[:-1])                  # bigger -> big
        for term in analyzer.analyze(m.group(1) + m.group(2)):
            if term not in have:
                continue
            bucket = out.setdefault(term, [])
            for b in bases:
                alt = Synonym(analyzer.analyze(b))
                if len(alt) == 1 and term not in alt and alt not in bucket:
                    bucket.append(alt)
            if not bucket:
                del out[term]
    return out


# ------------------------------------------------------------------ numbers within a stated range

_NUM = r"(?:usd|eur|gbp|\$|\u20ac|\u00a3)?\s{0,20}(\d[\d,]{0,30}(?:\.\d{1,30})?)"
#: "40% or more", "5 or fewer", "USD 5,000 and above": a bound, then its direction.
_BOUND_AFTER = re.compile(_NUM + r"\s{0,20}(?:%|percent|per\s{1,20}cent)?\s{0,20}(?:[a-z]{1,40}\s{1,20})?"
                          r"(?:or|and)\s+(more|higher|greater|above|over|up|less|fewer|lower|below|under)\b",
                          re.IGNORECASE)
#: "at least 40%", "more than 5", "above USD 5,000", "up to 20", "no more than 3".
_BOUND_BEFORE = re.compile(r"\b(at\s+least|no\s+less\s+than|not\s+less\s+than|more\s+than|greater\s+than|"
                           r"over|above|exceeding|in\s+excess\s+of|at\s+most|up\s+to|no\s+more\s+than|"
                           r"not\s+more\s+than|less\s+than|fewer\s+than|below|under|not\s+exceeding)\s+" + _NUM,
                           re.IGNORECASE)
_UP = frozenset("more higher greater above over up".split())
_CUE_OP = dict([(c, ">=") for c in ("at least", "no less than", "not less than")] +
               [(c, "<=") for c in ("at most", "up to", "no more than", "not more than", "not exceeding")] +
               [(c, ">") for c in ("more than", "greater than", "over", "above", "exceeding", "in excess of")])


def _value(text: str) -> float:
    return float(text.replace(",", ""))


def stated_bounds(text: str) -> List[Tuple[str, str, float]]:
    """The numeric bounds ``text`` states, each as (the number as written, ``">="``,
    ``">"``, ``"<="`` or ``"<"``, its value).

    >>> stated_bounds("Purchases with a discount of 40% or more are non-refundable.")
    [('40', '>=', 40.0)]
    >>> stated_bounds("Refunds above USD 5,000 need approval; up to 20 seats.")
    [('5,000', '>', 5000.0), ('20', '<=', 20.0)]
    """
    return [(written, op, value) for _, written, op, value in _bounds(text)]


def _bounds(text: str) -> List[Tuple[int, str, str, float]]:
    """``stated_bounds`` with where each number starts in ``text``, in text order."""
    out: List[Tuple[int, str, str, float]] = []
    for m in _BOUND_AFTER.finditer(text):
        op = ">=" if m.group(2).lower() in _UP else "<="
        out.append((m.start(1), m.group(1), op, _value(m.group(1))))
    for m in _BOUND_BEFORE.finditer(text):
        op = _CUE_OP.get(" ".join(m.group(1).lower().split()), "<")    # less than, fewer than, below, under
        out.append((m.start(2), m.group(2), op, _value(m.group(2))))
    return sorted(set(out))


_PERCENT_AFTER = re.compile(r"\s{0,20}(?:%|percent\b|per\s{1,20}cent\b)", re.IGNORECASE)
_MONEY_BEFORE = re.compile(r"(?:usd|eur|gbp|\$|\u20ac|\u00a3)\s*$", re.IGNORECASE)
_MONEY_AFTER = re.compile(r"\s{0,20}(?:usd|eur|gbp|dollars?|euros?|pounds?)\b", re.IGNORECASE)


def _kind(text: str, start: int, end: int) -> str:
    """What the number at ``text[start:end]`` measures, when that is plain: ``%`` or ``$``."""
    if _PERCENT_AFTER.match(text, end):
        return "%"
    if _MONEY_BEFORE.search(text[max(0, start - 5):start]) or _MONEY_AFTER.match(text, end):
        return "$"
    return ""


def question_quantities(question: str) -> List[Tuple[str, str, float]]:
    """The percentages and amounts of money in ``question``: (number as written, ``%`` or
    ``$``, value).  "five thousand dollars" is read through ``spelled_numbers``.

    >>> question_quantities("With a 50% discount, is a refund over five thousand dollars allowed in 2024?")
    [('50', '%', 50.0), ('five thousand', '$', 5000.0)]
    """
    out = []
    for m in re.finditer(r"\d[\d,]*(?:\.\d+)?", question):
        kind = _kind(question, m.start(), m.end())
        if kind:
            out.append((m.start(), m.group(), kind, _value(m.group())))
    folded = question.casefold()
    for words, digits in spelled_numbers(question):
        m = re.search(r"\b" + r"[\s-]+(?:and\s+)?".join(map(re.escape, words)) + r"\b", folded)
        kind = _kind(folded, m.start(), m.end()) if m else ""
        if kind:
            out.append((m.start(), " ".join(words), kind, float(digits)))
    return [(w, k, v) for _, w, k, v in sorted(out)]


def range_bridges(question: str, texts: Iterable[str], analyzer,
                  asked: Optional[List[Tuple[str, str, float]]] = None) -> Dict[str, List[FrozenSet[str]]]:
    """``{question term: [bound term sets]}``: a percentage or an amount of money in the
    question is covered by a bound of the same kind in ``texts`` (the evidence) that it
    satisfies: "a 50% discount" by "a discount of 40% or more", "a refund over five
    thousand dollars" by "refunds above USD 4,000".  Numbers of other kinds (years,
    counts) are left alone: "in 1962" is not "over 1,000".  ``asked``: the question's
    ``question_quantities`` when already known (``QuestionAnalysis.quantities``)."""
    asked = question_quantities(question) if asked is None else asked
    out: Dict[str, List[FrozenSet[str]]] = {}
    if not asked:
        return out
    for text in texts:
        for at, written, op, bound in _bounds(text):
            kind = _kind(text, at, at + len(written))
            alt = Synonym(analyzer.analyze(written))
            for q_written, q_kind, n in asked:
                holds = {">=": n >= bound, ">": n > bound, "<=": n <= bound, "<": n < bound}[op]
                if not (holds and kind and kind == q_kind and alt):
                    continue
                for term in analyzer.analyze(q_written):
                    if term not in alt and alt not in out.setdefault(term, []):
                        out[term].append(alt)
    return {t: alts for t, alts in out.items() if alts}


# ------------------------------------------------------------------ one length of time in other units

#: Each time unit in days (a month and a year only against each other and against the units
#: that divide them exactly: "12 months" is a year, "30 days" is not surely a month).
_UNIT_DAYS = {"second": 1.0 / 86400, "minute": 1.0 / 1440, "hour": 1.0 / 24, "day": 1.0, "week": 7.0,
              "fortnight": 14.0}
_UNIT_MONTHS = {"month": 1.0, "quarter": 3.0, "year": 12.0, "decade": 120.0}
#: A count unit: a dozen is 12.
_COUNT_WORDS = {"dozen": 12, "fortnight": 1}
_QUANTITY = re.compile(
    r"(?:(?P<num>(?<![\d.])\d{1,9}(?:\.\d{1,6})?|a|an|one|half\s{1,5}an?|half|" + "|".join(sorted(list(_UNITS) + list(_TENS), key=len, reverse=True))
    + r")(?:[\s-]{1,3}(?P<num2>" + "|".join(sorted(_UNITS, key=len, reverse=True)) + r"))?[\s-]{1,3})?"
    r"(?P<unit>seconds?|minutes?|hours?|days?|weeks?|fortnights?|months?|quarters?|years?|decades?)\b")


def _quantity_value(num: Optional[str], num2: Optional[str]) -> Optional[float]:
    if num is None:
        return None
    if num[0].isdigit():
        return float(num)
    if num in ("a", "an", "one"):
        return 1.0
    if num.startswith("half"):
        return 0.5
    return float(_UNITS.get(num, _TENS.get(num, 0)) + (_UNITS.get(num2, 0) if num2 else 0))


def _number_text(value: float) -> Optional[str]:
    """``value`` written as the analyzer keeps a number: a whole number below 1000 in digits
    ("14"), else None (nobody writes a fortnight as 20160 minutes)."""
    if value <= 0 or abs(value - round(value)) > 1e-9 or value >= 1000:
        return None
    return str(int(round(value)))


def quantity_bridges(question: str, q_terms: Sequence[str], analyzer) -> Dict[str, List[FrozenSet[str]]]:
    """``{question term: [alternative term sets]}`` for a length of time the question names
    in one unit and the evidence may name in another (issue 30, item 4): "a fortnight" is
    covered by "14 days" or "2 weeks", "two weeks" by "14 days", "48 hours" by "2 days",
    "half a year" by "6 months", "one year" by "12 months".  Every term of the quantity (its
    number and its unit) is covered by a sentence holding the number and the unit of an
    equivalent; only whole numbers are equivalents, and a month converts to years and
    quarters, never to days or weeks (a month has no fixed number of days).

    >>> from mini_rag.text.analysis import Analyzer
    >>> sorted(sorted(a) for a in quantity_bridges("Is it kept for a fortnight?", ["kept", "fortnight"], Analyzer())["fortnight"])
    [['14', 'day'], ['2', 'week'], ['336', 'hour']]
    >>> sorted(sorted(a) for a in quantity_bridges("within 48 hours", ["48", "hour"], Analyzer())["48"])
    [['2', 'day']]
    >>> sorted(sorted(a) for a in quantity_bridges("kept for half a year", ["kept", "half", "year"], Analyzer())["year"])
    [['2', 'quarter'], ['6', 'month']]
    """
    have = set(q_terms)
    out: Dict[str, List[FrozenSet[str]]] = {}
    for m in _QUANTITY.finditer(question.casefold()):
        unit = m.group("unit").rstrip("s") if m.group("unit") != "hours" else "hour"
        value = _quantity_value(m.group("num"), m.group("num2"))
        if value is None:
            if unit != "fortnight":
                continue            # a bare unit ("for weeks"): unit_bridges reads it
            value = 1.0
        table = _UNIT_DAYS if unit in _UNIT_DAYS else _UNIT_MONTHS
        base = value * table[unit]
        alts = []
        for other, size in sorted(table.items()):
            if other == unit:
                continue
            number = _number_text(base / size)
            if number is None:
                continue
            if other == "fortnight" and number == "1":
                alt = Synonym(analyzer.analyze(other))       # "a fortnight": the unit is the quantity
            else:
                alt = Synonym(analyzer.analyze(number) + analyzer.analyze(other))
            if len(alt) == 2 or (other == "fortnight" and len(alt) == 1):
                alts.append(alt)
        if not alts:
            continue
        for term in analyzer.analyze(m.group(0)):
            if term not in have:
                continue
            bucket = out.setdefault(term, [])
            bucket.extend(a for a in alts if a not in bucket and term not in a)
            if not bucket:
                del out[term]
    return out

"""The scorer's word data: every word list, cue pattern and number / month / unit table that the
readings (citations, refusals, answers, sentences and grounding) and judging read, in one place.

The readers (text, citations, refusals, answers, grounding, judge) are logic over the names
defined here.  Each group says which reader reads it and what data justified it: a fit half of a
labelled set (the rule or model was chosen there, the held-out half only reported), a check (the
list was run on data and the figure recorded, nothing fitted), or "origin not recorded" when
neither the commit, the CHANGELOG nor docs/*.md says where the words came from.  A word added
here changes verdicts: measure it on the fit half named in its group (never on a held-out half
or on gold/gold_perturb.jsonl), report the held-out half next to a baseline.

One number table (NUMBER_WORDS), one month table (MONTH_NUMBERS) and one unit table (UNITS).
Answer matching (reading 3) and grounding (reading 4) read different parts of the number and
month tables; their views are derived below, each as it was fitted (widening a view changes
verdicts).  tests/test_lexicon.py checks the tables on hand-chosen inputs, and that no other
module of the package defines a list of ten or more plain words.
"""
from __future__ import annotations

import re
from typing import Dict

# --------------------------------------------------------------------------- stopwords
# Words that carry no claim of their own; everything else of >= 3 letters in a shipped claim
# must occur in a cited chunk.  Negations (no, not, never) are deliberately NOT here: a claim
# that adds "not" to its source says the opposite of it.
# Read by: judge (hallucination, answer_relevance, quote_only attribution: docs/design.md's
# "content word"), answers (a gold answer's key words; match_answer keeps month names, which paid
# on EVOUNA-NQ's fit half, a5ff547) and grounding (content words).
# Justified by: origin not recorded (in the first scorer, 588f443).
STOPWORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before
being below between both but by can could did do does doing down during each either else
for from further had has have having he her here hers him his how i if in into is it its
itself just let may me might more most must my nor of off on once only or other ought our
ours out over own per same shall she should so some such than that the their theirs them
then there these they this those through thus to too under until up upon us very via was
we were what when where whether which while who whom whose why will with within without
would yet you your yours
""".split())

# --------------------------------------------------------------------------- numbers
# The one number table: each number word once, with its value and its kind.
#   cardinal            zero ... nineteen, twenty ... ninety
#   scale               hundred ... trillion: multiplies the number before it ("3 million")
#   scale_abbreviation  k, m, mn, b, bn, tn after an amount ("$5m", "3bn"; grounding only)
#   ordinal             first ... twelfth
#   amount              dozen 12, half 0.5, twice 2, double 2 (grounding only)
# Justified by: answer normalisation's words (cardinal, scale, ordinal) were written for reading 3
# (430a397); the normalisations that read them were each kept by the ablation on EVOUNA-NQ's fit
# half (docs/answer_correctness.md: with "numbers" off fit agreement 0.9013, with "ordinals" off
# 0.9031, all on 0.9049).  Grounding's words (amount, scale_abbreviation, the ordinals up to
# tenth) were written for reading 4 (a661360, docs/grounding.md: "eight silver" supports
# "8 silver", "$160 million" = 160000000); which data suggested them is not recorded; the model
# that weighs them was fitted on FaithBench's fit half.
NUMBER_WORDS: Dict[str, tuple] = dict(
    [(w, (n, "cardinal")) for n, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen".split())]
    + [(w, (10 * n, "cardinal")) for n, w in enumerate(
        "twenty thirty forty fifty sixty seventy eighty ninety".split(), 2)]
    + [(w, (10 ** e, "scale")) for w, e in (("hundred", 2), ("thousand", 3), ("million", 6),
                                            ("billion", 9), ("trillion", 12))]
    + [(w, (10 ** e, "scale_abbreviation")) for w, e in (("k", 3), ("m", 6), ("mn", 6), ("b", 9),
                                                         ("bn", 9), ("tn", 12))]
    + [(w, (n, "ordinal")) for n, w in enumerate(
        "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth".split(), 1)]
    + [("dozen", (12, "amount")), ("half", (0.5, "amount")), ("twice", (2, "amount")),
       ("double", (2, "amount"))])
# Answer normalisation's view (answers.answer_tokens): a run of cardinals and scales is one number
# ("twenty one" -> 21, "one hundred and five" -> 105), a digit run followed by a scale word is
# multiplied ("3 million" -> 3000000), an ordinal is its number ("first" -> "1"); values stay
# integers (a number is written back as str(int)).  No amount word, no scale abbreviation: "5 m"
# is five metres (UNITS), not five million.
_ONES = {w: v for w, (v, kind) in NUMBER_WORDS.items() if kind == "cardinal" and v < 20}
_TENS = {w: v for w, (v, kind) in NUMBER_WORDS.items() if kind == "cardinal" and v >= 20}
_SCALES = {w: v for w, (v, kind) in NUMBER_WORDS.items() if kind == "scale"}
_ORDINALS = {w: str(v) for w, (v, kind) in NUMBER_WORDS.items() if kind == "ordinal"}
_SUFFIXES = frozenset(("st", "nd", "rd", "th"))     # "5th" -> 5 (origin as the ordinals)
# Grounding's view (grounding: a number word of a chunk supports that number): every cardinal and
# amount word, "hundred" and "thousand" alone, ordinals up to tenth, as written in a661360 (a
# million alone, "eleventh", "twelfth" are not read: adding them would change verdicts).
_NUM_WORDS = {w: v for w, (v, kind) in NUMBER_WORDS.items()
              if kind in ("cardinal", "amount") or (kind == "scale" and v <= 1000)
              or (kind == "ordinal" and v <= 10)}
# ... and its scales after a written amount (number_values: "$160 million", "$5m"; "5 m" is metres)
_SCALE = {w: float(v) for w, (v, kind) in NUMBER_WORDS.items()
          if kind in ("scale", "scale_abbreviation") and v >= 1000}
# Grounding's number pattern: an optional currency symbol (UNITS), the digits, percent, a scale of
# _SCALE (the test checks that its alternatives are _SCALE's words).
_NUM_RX = re.compile(
    r"(?P<cur>[$\u00a3\u20ac\u00a5])?\s?(?P<num>\d{1,3}(?:,\d\d\d)+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?:\s?(?P<pct>%|percent\b|per cent\b))?(?:\s?(?P<scale>thousand|million|billion|trillion|bn|mn|tn|k|m|b)\b)?",
    re.IGNORECASE)

# --------------------------------------------------------------------------- months
# The one month table: names in order, and each spelling (name, three-letter abbreviation,
# "sept") with its number.  Justified by: the calendar; answers' abbreviations (430a397, the
# "dates" normalisation kept by EVOUNA-NQ's fit-half ablation: off, fit agreement 0.9047 against
# 0.9049) and grounding's (a661360) were the same spellings.
_MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
                "october", "november", "december")
MONTH_NUMBERS = dict([(m, n) for n, m in enumerate(_MONTH_NAMES, 1)]
                     + [(m[:3], n) for n, m in enumerate(_MONTH_NAMES, 1)] + [("sept", 9)])
# answers: a spelling -> the month's name ("sept" -> "september"; a name maps to itself)
_MONTHS = {s: _MONTH_NAMES[n - 1] for s, n in MONTH_NUMBERS.items()}
_MONTH_SET = frozenset(_MONTH_NAMES)

# --------------------------------------------------------------------------- units
# The one unit table: a spelling -> the name of its class.  Answer normalisation replaces a word
# by its class name (both sides of a match go through it; the names themselves also meet other
# words: a class name of >= 4 letters matches by its first four letters, ANSWER_PREFIX, so the
# names are kept as fitted).  Grounding reads the class of a currency symbol ($ £ € ¥) before an
# amount (number_values' unit: "dollar", "pound", "euro", "yen"); its own table (a661360) had
# ISO codes and more spellings (day, week, month, m2, "per cent"), but only the four symbols
# were ever read, and no verdict reads a currency's name.  "£" and "lb" are one class, as answer
# normalisation was fitted ("pound" is both).  Justified by: written for reading 3 (430a397); the
# "units" normalisation kept by EVOUNA-NQ's fit-half ablation (off: fit agreement 0.9042 against
# 0.9049); yen added with grounding's "¥" (a661360; answers never reads "¥" nor adds "jpy").
UNITS: Dict[str, str] = {w: canon for canon, spellings in (
    ("km", "km kms kilometre kilometres kilometer kilometers"),
    ("m", "metre metres meter meters"), ("cm", "cm centimetre centimetres centimeter centimeters"),
    ("mm", "mm millimetre millimetres millimeter millimeters"),
    ("kg", "kg kgs kilogram kilograms kilogramme kilogrammes"), ("g", "gram grams gramme grammes"),
    ("pound", "lb lbs pound pounds \u00a3 gbp"), ("mile", "mi mile miles"), ("ft", "ft foot feet"),
    ("percent", "% percent percentage pct"), ("dollar", "$ usd dollar dollars"),
    ("euro", "\u20ac eur euro euros"), ("yen", "\u00a5 yen"), ("degree", "\u00b0 degree degrees"),
    ("celsius", "celsius centigrade"), ("fahrenheit", "fahrenheit"), ("mph", "mph"), ("kmh", "kmh kph"),
    ("hour", "hr hrs hour hours"), ("minute", "min mins minute minutes"), ("year", "yr yrs year years"))
    for w in spellings.split()}
# Articles dropped from answers (answer normalisation, SQuAD's; 430a397).
_ARTICLES = frozenset(("a", "an", "the"))

# --------------------------------------------------------------------------- sentences
# Abbreviations a sentence does not end after (text.split_sentences, readings 2 and 4): titles,
# company forms, Latin, "No." (only before a number: "No. 5" is a number, "No. Digital ..." an
# answer, dd887c9) and the months' abbreviations (from the month table).  Justified by: origin
# not recorded (written with reading 4, a661360; "No." before a number only in dd887c9, FaithBench
# figures unchanged; the refusal reader's split checked on tests/test_score_eval_refusal.py's
# hand cases, 674d8fd).
_ABBREV = frozenset("mr mrs ms dr prof st jr sr inc ltd co corp vs etc e.g i.e no nos fig approx u.s "
                    "u.k gen gov sen rep rev mt ft".split()) | frozenset(
                        s for s in MONTH_NUMBERS if s not in _MONTH_SET)
_NUMBER_ABBREV = frozenset(("no", "nos"))     # abbreviations only before a number

# --------------------------------------------------------------------------- citations (reading 1)
# The built-in citation patterns (what each named group means: citations.py); a gates file's
# [scorer] citation_patterns replace them.  Justified by: the marker shapes listed by issue 28
# item 1 (cae9b6f); a check, not a fit: 0 false markers on 17,578 real LLM responses that cite
# nothing (bench/cite_markers_real.py over RefChecker, EVOUNA NQ and FaithBench; docs/llm.md).
CITATION_PATTERNS = (
    r"\^?\[\^?(?P<ref>[^\[\]\n]{1,200})\]",                     # [1] [1, 3] [1-3] [1][2] [doc#p3] ^[1] [^1]
    "\u3010(?P<cite>[^\u3010\u3011\\n]{1,200})\u3011",           # 【1†source】
    r"<sup>(?P<ref>[^<>\n]{1,100})</sup>",                        # <sup>1</sup> <sup>[1]</sup>
    r"\((?:sources?|references?|refs?|citations?|cited)[ \t]*:[ \t]*(?P<cite>[^()\n]{1,200})\)",   # (Source: X)
    r"\((?P<ref>(?:sources?|docs?|documents?|passages?|chunks?|contexts?)[ \t]{0,8}(?:#[ \t]{0,8})?\d[^()\n]{0,100})\)",  # (Source 2)
    r"\((?P<doc>[^()\n,]{1,120}),[ \t]*(?:(?P<abbr>pp?\.?|pg\.?)|pages?)[ \t]*(?P<page>\d{1,5})(?:[ \t]*[-\u2013][ \t]*\d{1,5})?\)",  # (X, p. 3)
    r"\((?P<ids>[^()\n]{1,200})\)",                              # (doc#p3) (doc#p3, doc#p5)
    r"(?m)(?:^|(?<=[.!?])[ \t]+)[ \t>*_#]{0,8}(?P<sources>sources?|references?|citations?|works cited)"
    r"(?:[ \t]+used)?[ \t*_]{0,4}(?::|$)",                       # Sources: / References: list
)
# per built-in pattern, in the same order: one of these characters must be in the text
_CITE_NEEDS = ("[", "\u3010", "<", "(", "(", "(", "(", ":\n")
# a reference inside a marker: "3", "Doc 3", "Source 2-4" (the same nouns as the (Source 2) pattern)
_CITE_NUM = re.compile(r"(?:(?:sources?|docs?|documents?|passages?|chunks?|contexts?|refs?|references?|citations?)"
                       r"[ \t]*#?[ \t]*)?([1-9]\d{0,2})(?:[ \t]*[-\u2013\u2014][ \t]*([1-9]\d{0,2}))?", re.I)

# --------------------------------------------------------------------------- refusals (reading 2)
# Decline cues, disclaimers, pointers and their trigger words (refusals.refusal_layout), and the
# cue words of REFUSAL_MODEL's features (refusals.refusal_features).  Justified by: the rules
# were chosen by their figures on the fit half of hand-labelled real LLM output (bench/labels/:
# 371 RefChecker and EVOUNA responses; 5878f62, docs/refusals.md "Data"), the dev half reported;
# the German, French, Spanish, Portuguese, Italian and Dutch families are translations of the
# English ones, corrected on the written set tests/data/refusal_written.jsonl (three translation
# bugs, docs/refusals.md: not a clean held-out set).  A word two languages share is written once
# (difícil es/pt, difficile fr/it, generalmente es/it, documents en/fr).
_APOS = "['\u2019]"
# Decline cues: sentences that say the response cannot answer.  English families, and the
# same families in German, French, Spanish, Portuguese, Italian and Dutch.
_DECLINE_SOURCES = {
    "en_first": (
        # en: first-person inability / lack
        r"\bi (?:cannot|can ?not|can" + _APOS + r"t|could not|couldn" + _APOS + r"t|was unable to|am unable to|"
        r"am not able to|was not able to|wasn" + _APOS + r"t able to|(?:would|will) not be able to|won" + _APOS
        + r"t be able to) (?:answer|provide|find|determine|say|tell|confirm|give|locate|access|know|see|help|"
        r"assist|comply|share|offer|identify|verify|predict|be certain|be sure|speak|comment|respond|browse|"
        r"watch|fulfil|fulfill|do that|do this|discuss|support|create|write|generate|accurately)\b",
        r"\bi" + _APOS + r"m (?:unable|not able) to\b",
        r"\bunable to (?:answer|determine|provide|find|say|tell|confirm|locate|identify|verify|give|respond|help|assist)\b",
        r"\bi (?:do not|don" + _APOS + r"t|did not|didn" + _APOS + r"t) (?:know|find|see|have (?:any |enough |sufficient |specific |the |that |this |an |)(?:relevant |specific |precise |exact |reliable |further |more )?(?:information|data|details|knowledge|context|answer|records?)\b)",
        r"\bi (?:have no|lack|had no) (?:information|knowledge|data|details|access|way|means|context)\b",
        r"\bi(?: am|" + _APOS + r"m) not (?:sure|certain|aware|able|allowed|permitted|programmed)\b",
        r"\bi (?:must|have to|will have to) (?:decline|refuse)\b",
        r"\bi (?:won" + _APOS + r"t|will not|shall not) (?:help|assist|provide|answer|do|comply|create|write|generate|share|give|engage|support)\b",
        r"\b(?:can" + _APOS + r"t|cannot|can not|unable to) (?:help|assist) (?:you )?with (?:that|this|it|your request|the request)\b",
        r"\bnot (?:something|a request|a topic) (?:i|that i) can\b",
        r"\bagainst (?:my|our|the) (?:guidelines|policies|policy|principles|programming|rules)\b",
        r"^(?:i" + _APOS + r"m|i am) (?:sorry|afraid i|afraid that i|afraid,? but)\b",
        r"^(?:sorry|apologies|regrettably|i apologi[sz]e)(?:[,.!:]|$| but\b| i\b| we\b| to\b| that\b| for\b)",
        r"^unfortunately,? (?:i|we|the (?:provided |given )?(?:passages?|context|documents?|text|sources?|information)|there is no|there are no|none of|no )",
    ),
    "en": (
        # en: the sources do not say
        r"\b(?:passages?|context|documents?|texts?|sources?|excerpts?|articles?|paragraphs?|materials?|search results|"
        r"information provided|provided information|information given|reference|snippets?|records?|data provided)"
        r"(?: provided| given| available| available to me| retrieved| supplied| shared)? "
        r"(?:do|does|did)(?: not|n" + _APOS + r"t) (?:seem to |appear to )?(?:provide|contain|mention|specify|state|include|say|give|"
        r"answer|address|offer|discuss|describe|indicate|reveal|tell|cover|list|explain|clarify|establish|have|"
        r"identify|name|confirm|support|show|report|detail|define)\b",
        r"\bnothing in the (?:provided |given |retrieved |available )?(?:context|documents?|sources?|passages?|texts?|excerpts?) (?:addresses|answers|mentions|covers|says|states|explains)\b",
        r"\bi can only (?:answer|help|respond)\b",
        r"\bthere (?:is|are|was|were)n" + _APOS + r"t (?:enough|any|sufficient|much) (?:relevant |specific )?(?:information|context|data|details|mention|evidence)\b",
        r"\bnone of the (?:provided |given |retrieved |available )?(?:passages?|documents?|sources?|texts?|excerpts?|results?|information)\b",
        r"\bnot (?:explicitly |specifically |directly |clearly |actually |expressly )?(?:stated|mentioned|specified|provided|given|"
        r"addressed|listed|included|indicated|described|covered|found|available|present|answered|discussed|defined|named|identified|disclosed|known) "
        r"(?:in|within|by|from) (?:the|any|these|this|those) (?:provided |given |available |retrieved |above |following )?"
        r"(?:passages?|context|documents?|texts?|sources?|excerpts?|articles?|paragraphs?|information|materials?|data|search results)\b",
        r"\b(?:is|are|was|were) not (?:mentioned|specified|stated)\b",
        r"\b(?:is|are|was|were) not (?:explicitly|specifically|directly|clearly|expressly) (?:stated|mentioned|specified|provided|given|addressed|indicated|described|answered|defined|known)\b",
        r"\b(?:there is|there" + _APOS + r"s|there are|there was|there were|we have|i have found|i found|i see) (?:no|not (?:enough|any|a|much)|insufficient|little) "
        r"(?:specific |clear |direct |definitive |explicit |relevant |further |additional |such |precise |exact |conclusive |concrete |definite |single |reliable |mention|information|answer|data|details|indication|record|reference|way|context)",
        r"\bno (?:specific |relevant |further |additional |clear |definitive |direct |explicit )?(?:information|details|data|mention|answer|record|indication) "
        r"(?:is |was |were |has been |could be |can be )?(?:available|provided|given|found|mentioned|stated|about|on|regarding|in the|for|to|that|of|was|is|concerning)\b",
        r"\b(?:not enough|insufficient|inadequate|lack of|limited|no) (?:relevant |specific |sufficient )?(?:information|context|details|data|evidence) (?:to|is|was|in|about|on|for|available|provided|given|regarding)\b",
        r"\bno (?:clear|direct|conclusive|definitive|explicit) evidence (?:in|from|within) the\b",
        r"\bwithout (?:more|additional|further|specific|any|the|more specific) (?:information|context|details|data|specifics)\b",
        r"\b(?:please )?(?:provide|give|share) (?:me )?(?:more|additional|further|some more) (?:information|context|details)\b",
        r"\b(?:please specify|could you (?:please )?(?:clarify|specify|provide)|can you (?:please )?(?:clarify|specify|provide more))\b",
        # en: impersonal impossibility
        r"\b(?:it is|it" + _APOS + r"s|it was|it remains|it would be|this is) (?:not possible|impossible|not clear|unclear|uncertain|unknown|difficult|hard|not feasible|not easy|challenging|tricky) "
        r"(?:for me )?to (?:determine|say|know|tell|answer|estimate|identify|provide|confirm|conclude|predict|quantify|pinpoint|find|state|ascertain|establish|verify|assess|give|infer|specify|draw)\b",
        r"\b(?:it is|it" + _APOS + r"s|it was|it remains|remains|is) (?:still |currently |therefore |thus |also )?(?:unclear|not clear|uncertain|unknown|not known|undetermined|unspecified|not specified|not certain|inconclusive) (?:whether|if|what|who|how|when|where|which|why|from|based|given|as to|at this|in the)\b",
        r"\b(?:cannot|can" + _APOS + r"t|can not|could not|couldn" + _APOS + r"t) (?:be )?(?:definitively |accurately |reliably |conclusively |precisely |clearly |confidently )?(?:be )?(?:determined|answered|confirmed|established|ascertained|known|inferred|concluded|verified|predicted|found)\b",
        r"\bthe (?:answer|information|question) (?:to (?:this|the|your) question )?(?:is|remains) (?:unknown|unclear|inconclusive|not (?:provided|given|known|available|stated|clear|mentioned|specified|in the|found|included))\b",
        r"\b(?:is|remains|are|is therefore) (?:inconclusive|undetermined)\b",
        r"\b(?:is|are|falls?|lies) (?:outside|beyond) (?:the scope|my (?:scope|knowledge|capabilities|abilities|training))\b",
        r"\bthere is no (?:one|single|simple|definitive|clear|straightforward|exact|specific|universal) answer\b",
        r"^(?:unknown|unclear|not sure|no answer|n/?a|not available|not known|no information|cannot answer|cannot say|can" + _APOS + r"t say|i don" + _APOS + r"t know|no idea|not specified|not mentioned|not provided|not stated|not found|insufficient information|no data)[.!]?$",
    ),
    "de": (
        # de
        r"\bich (?:kann|konnte|könnte|vermag)\b[^.!?\n]{0,60}\b(?:nicht|keine[nmrs]?)\b",
        r"\b(?:kann|konnte|könnte) ich\b[^.!?\n]{0,60}\b(?:nicht|keine[nmrs]?)\b",
        r"\bich (?:weiß|weiss) (?:es |das |leider )?nicht\b",
        r"\bich bin (?:mir )?(?:leider )?nicht (?:sicher|in der lage|befugt)\b",
        r"\bich habe (?:leider )?(?:keine|nicht genug|nicht genügend) (?:informationen|angaben|daten|kenntnis|zugriff|hinweise|antwort)\b",
        r"\bich (?:fand|finde|habe)\b[^.!?\n]{0,40}\bkeine (?:informationen|angaben|hinweise|daten)\b",
        r"^(?:es tut mir leid|entschuldigung|leider)\b",
        r"\b(?:dokumente?n?|unterlagen|quellen?|passagen?|texte?n?|kontext|abschnitte?n?|auszüge?n?|informationen)\b[^.!?\n]{0,40}\b(?:enthalten|nennen|erwähnen|geben|liefern|beantworten|sagen|machen|beinhalten)\b[^.!?\n]{0,40}\b(?:nicht|keine[nmrs]?)\b",
        r"\b(?:nicht|nirgends) (?:explizit |ausdrücklich |eindeutig |konkret |direkt )?(?:angegeben|erwähnt|genannt|ersichtlich|enthalten|beantwortet|bekannt|spezifiziert|festgelegt|aufgeführt|beschrieben)\b",
        r"\bkeine (?:konkreten |genauen |näheren |weiteren |relevanten |ausreichenden |spezifischen )?(?:informationen|angaben|hinweise|daten|antwort|erwähnung|aussage)\b",
        r"\b(?:lässt|liess|ließ) sich\b[^.!?\n]{0,40}\bnicht (?:beantworten|bestimmen|sagen|feststellen|ermitteln|klären)\b",
        r"\b(?:kann|können) (?:daher |deshalb |leider )?(?:nicht|keine)\b[^.!?\n]{0,40}\b(?:beantwortet|bestimmt|gesagt|festgestellt|ermittelt) werden\b",
        r"\b(?:ist|bleibt|sind) (?:leider |daher |somit )?(?:unklar|unbekannt|nicht bekannt|nicht klar|nicht möglich)\b",
        r"\bnicht möglich,? (?:zu|das|dies|diese|die|eine)\b",
        r"\bdabei kann ich\b[^.!?\n]{0,30}\bnicht helfen\b",
    ),
    "fr": (
        # fr
        r"\bje ne\b[^.!?\n]{0,50}\b(?:pas|aucune?|point)\b",
        r"\bje n" + _APOS + r"(?:ai|arrive|étais|avais|trouve)\b[^.!?\n]{0,50}\b(?:pas|aucune?)\b",
        r"^(?:désolée?|je suis désolée?|malheureusement|hélas|pardon)\b",
        r"\b(?:documents?|passages?|contexte|sources?|textes?|extraits?|informations)\b[^.!?\n]{0,40}\bne\b[^.!?\n]{0,40}\b(?:pas|aucune?|nulle part)\b",
        r"\b(?:n" + _APOS + r"(?:est|a)|ne (?:sont|figure|figurent)) (?:pas|nulle part) (?:explicitement |clairement |précisément |directement )?(?:mentionnée?s?|précisée?s?|indiquée?s?|fournie?s?|spécifiée?s?|donnée?s?|connue?s?|claire?s?|été (?:mentionnée?s?|précisée?s?|indiquée?s?|trouvée?s?))\b",
        r"\baucune? (?:information|mention|donnée|réponse|indication|précision|trace)\b",
        r"\b(?:il n" + _APOS + r"est pas possible|il est impossible|il est difficile|c" + _APOS + r"est impossible|impossible) (?:de|d" + _APOS + r")\s?(?:déterminer|dire|répondre|savoir|confirmer|trouver|préciser|établir|affirmer|identifier|indiquer)\b",
        r"\b(?:on ne (?:peut|sait) pas|ne peut pas être (?:déterminée?|confirmée?|établie?))\b",
        r"\b(?:pas assez|trop peu) d" + _APOS + r"informations?\b|\binformations? insuffisantes?\b",
        r"\b(?:reste|est|demeure) (?:inconnue?|incertaine?|floue?|pas claire?)\b",
        r"\bil n" + _APOS + r"y a (?:pas|aucune?)\b[^.!?\n]{0,30}\b(?:information|mention|réponse|donnée|indication|précision)s?\b",
    ),
    "es": (
        # es
        r"\bno (?:puedo|pude|podría|sé|tengo|encontré|he encontrado|logré|estoy (?:seguro|segura|en condiciones)|dispongo|me es posible|cuento con)\b",
        r"^(?:lo siento|lo lamento|disculpa|disculpe|lamentablemente|desafortunadamente|perdón)\b",
        r"\b(?:documentos?|pasajes?|contexto|fuentes?|textos?|fragmentos?|información proporcionada)\b[^.!?\n]{0,40}\bno (?:mencionan?|contienen?|incluyen?|especifican?|indican?|proporcionan?|dicen?|responden?|dan|da|aportan?|ofrecen?|precisan?)\b",
        r"\bno (?:se (?:menciona|especifica|indica|proporciona|encuentra|dice|precisa|puede (?:determinar|saber|decir|responder|confirmar|establecer))|está (?:claro|especificado|indicado|mencionado)|es posible (?:determinar|saber|decir|responder|confirmar|establecer|precisar)|consta|hay (?:información|datos|suficiente|ninguna (?:información|mención|respuesta|indicación)|mención|respuesta|indicación|detalles))\b",
        r"\b(?:es|resulta) (?:imposible|difícil) (?:determinar|saber|decir|responder|confirmar|precisar|establecer)\b",
        r"\b(?:información|datos) insuficientes?\b|\bsin (?:más |suficiente )?información\b",
        r"\b(?:sigue siendo|es|resulta) (?:desconocido|desconocida|incierto|incierta|poco claro)\b",
        r"\bninguna (?:información|mención|respuesta|indicación)\b",
    ),
    "pt": (
        # pt
        r"\bnão (?:posso|pude|consigo|consegui|sei|tenho|encontrei|estou (?:seguro|segura|certo|certa|em condições)|disponho|me é possível)\b",
        r"^(?:desculpe|desculpa|lamento|infelizmente|sinto muito|peço desculpa)\b",
        r"\b(?:documentos?|passagens?|contexto|fontes?|textos?|trechos?|excertos?|informações fornecidas)\b[^.!?\n]{0,40}\bnão (?:mencionam?|contêm|contém|incluem?|especificam?|indicam?|fornecem?|dizem|diz|respondem?|trazem?|informam?|apresentam?)\b",
        r"\bnão (?:é (?:possível|claro) (?:determinar|saber|dizer|responder|confirmar|precisar|estabelecer|afirmar)?|se pode (?:determinar|saber|dizer|responder|confirmar)|está (?:claro|especificado|indicado|mencionado)|há (?:informação|informações|dados|menção|resposta|indicação|detalhes)|existe(?:m)? (?:informação|informações|dados|menção)|é (?:mencionado|mencionada|especificado|especificada|indicado|indicada|informado|informada))\b",
        r"\b(?:é|seria) (?:impossível|difícil) (?:determinar|saber|dizer|responder|confirmar|precisar|afirmar)\b",
        r"\binformações insuficientes\b|\bsem (?:mais )?informações\b",
        r"\b(?:permanece|é|continua) (?:desconhecido|desconhecida|incerto|incerta)\b",
        r"\bnenhuma (?:informação|menção|resposta|indicação)\b",
    ),
    "it": (
        # it
        r"\bnon (?:posso|riesco|sono in grado|sono (?:sicuro|sicura|certo|certa)|so|lo so|ho (?:trovato|informazioni|accesso|dati|elementi|modo)|dispongo)\b",
        r"^(?:mi dispiace|purtroppo|spiacente|mi scuso|scusa|scusi)\b",
        r"\b(?:documenti|passaggi|passi|contesto|fonti|testi|estratti|informazioni fornite)\b[^.!?\n]{0,40}\bnon (?:menzionano|contengono|includono|specificano|indicano|forniscono|dicono|rispondono|riportano|citano|precisano)\b",
        r"\bnon (?:è (?:possibile|chiaro|specificato|indicato|menzionato|noto|dato)|si può (?:determinare|dire|sapere|stabilire|rispondere)|(?:viene|vengono) (?:menzionat[oaie]|specificat[oaie]|indicat[oaie]|riportat[oaie])|c" + _APOS + r"è (?:alcuna|nessuna|traccia|menzione|informazione)|ci sono (?:informazioni|dati|elementi))\b",
        r"\b(?:è )?(?:impossibile|difficile) (?:determinare|dire|rispondere|sapere|stabilire|confermare|precisare)\b",
        r"\binformazioni insufficienti\b|\bsenza (?:ulteriori )?informazioni\b",
        r"\b(?:resta|rimane|è) (?:sconosciut[oa]|incert[oa]|poco chiar[oa]|ignot[oa])\b",
        r"\bnessuna (?:informazione|menzione|risposta|indicazione)\b",
    ),
    "nl": (
        # nl
        r"\bik (?:kan|kon|weet|heb|vond|vind|ben)\b[^.!?\n]{0,50}\b(?:niet|geen)\b",
        r"\b(?:kan|kon|weet|heb|vond|vind|ben) ik\b[^.!?\n]{0,50}\b(?:niet|geen)\b",
        r"^(?:het spijt me|helaas|sorry|excuses)(?:[,.!:]|$| maar\b| ik\b| we\b)",
        r"\b(?:documenten|passages|context|bronnen|teksten|tekst|fragmenten|informatie)\b[^.!?\n]{0,40}\b(?:vermelden|bevatten|noemen|geven|zeggen|beantwoorden|specificeren|vermeldt|bevat|noemt|geeft|zegt)\b[^.!?\n]{0,30}\b(?:niet|geen)\b",
        r"\b(?:wordt|worden|staat|is|zijn) (?:niet|nergens) (?:expliciet |duidelijk |specifiek )?(?:vermeld|genoemd|gespecificeerd|aangegeven|beschreven|bekend|duidelijk|te vinden)\b",
        r"\bgeen (?:specifieke |concrete |verdere |relevante )?(?:informatie|gegevens|vermelding|antwoord|aanwijzing)\b",
        r"\b(?:niet mogelijk|onmogelijk) (?:om|te)\b[^.!?\n]{0,30}\b(?:bepalen|zeggen|beantwoorden|vast te stellen|weten)\b",
        r"\bniet (?:te|met zekerheid te) (?:bepalen|zeggen|beantwoorden|achterhalen)\b",
        r"\bonvoldoende (?:informatie|gegevens)\b",
        r"\b(?:blijft|is) (?:onbekend|onduidelijk)\b",
    ),
}
# Disclaimers: what the system says about itself, not about the question ("As an AI language
# model, I do not have access to real-time information"); alone they decline nothing.
_DISCLAIMER_SOURCES = (
    r"\b(?:do not|don" + _APOS + r"t|does not|doesn" + _APOS + r"t) have (?:access to |the ability to access |any )?(?:real-?time|current|up-to-date|live|the latest|recent|latest|browsing|personal|the most recent|future|updated)\b",
    r"\bas an ai(?: language model| assistant| model)?\b",
    r"\b(?:my|the) (?:knowledge|training) (?:cut-?off|data|ends|only goes|is limited|extends)\b",
    r"\bi (?:do not|don" + _APOS + r"t|cannot|can" + _APOS + r"t) (?:have the ability to )?(?:browse|access|search) the (?:internet|web)\b",
    r"\bals (?:ki|künstliche intelligenz|sprachmodell)\b|\ben tant qu" + _APOS + r"(?:ia|intelligence artificielle|modèle de langage)\b|"
    r"\bcomo (?:ia|modelo de lenguaje|modelo de linguagem|uma ia|una ia)\b|\bin quanto (?:ia|modello linguistico)\b|\bals (?:ai|taalmodel)\b",
)
# Sentences that carry no answer: pointers elsewhere and pleasantries.
_POINTER_SOURCES = (
    r"\byou (?:can|could|may|might|should|will need to|would need to|need to) (?:try |also |easily |always )?(?:check|visit|consult|contact|look|search|refer|find out|call|ask|verify)\b",
    r"\b(?:it is|it" + _APOS + r"s|i would|i" + _APOS + r"d) (?:best|recommended|advisable|a good idea|always a good idea|recommend(?:ed)?|suggest(?:ed)?|important) (?:to )?(?:check|consult|contact|verify|refer|look|visit|keep an eye|search|confirm)",
    r"^(?:please )?(?:check|consult|contact|refer to|visit|look up|search for)\b",
    r"\b(?:i hope this helps|let me know if|feel free to|if you have (?:any )?(?:other|more|additional|further) questions|happy to help|i would be happy to)\b",
    r"^(?:sure|certainly|of course)[!.,]",
    r"\bfor (?:the most )?(?:accurate|up-to-date|current|latest) (?:and up-to-date )?information\b",
    r"\b(?:sie können|du kannst|bitte (?:prüfen|wenden|schauen|kontaktieren))\b|\bwenden sie sich an\b",
    r"\b(?:vous pouvez|je vous (?:recommande|conseille|suggère)|veuillez (?:consulter|vérifier|contacter))\b",
    r"\b(?:puede|puedes|le recomiendo|te recomiendo|le sugiero|consulte|consulta) (?:consultar|revisar|verificar|contactar|el|la|los|las|con)\b",
    r"\b(?:você pode|recomendo|sugiro|consulte|verifique) (?:consultar|verificar|contatar|o|a|os|as|com)\b",
    r"\b(?:puoi|può|le consiglio|ti consiglio|consulti|consulta|verifica) (?:consultare|verificare|contattare|il|la|i|le|con)\b",
    r"\b(?:u kunt|je kunt|raadpleeg|neem contact op|controleer)\b",
)
# Declines that hedge rather than refuse: no single / definitive answer, hard to say, not
# stated explicitly, unclear whether (with _PRECISION_RX: "the exact number is not given").
_HEDGE_RX = re.compile(
    r"\bno (?:one|single|simple|definitive|clear|straightforward|exact|universal|direct|conclusive|explicit|definite) (?:answer|evidence|statement|mention|information)\b|"
    r"\b(?:difficult|hard|challenging|tricky) to\b|\bnot (?:explicitly|specifically|directly|clearly|expressly)\b|"
    r"\b(?:unclear|uncertain|not clear|inconclusive|not sure|not certain|mixed)\b|"
    r"\b(?:schwer|schwierig|nicht eindeutig|difficile|pas clair|difícil|no está claro|não está claro|non è chiaro|moeilijk|niet duidelijk)\b", re.I)
_CONTRAST_RX = re.compile(
    r"^(?:however|but|though|although|that said|nevertheless|nonetheless|still|yet|even so|instead|on the other hand|"
    r"aber|jedoch|allerdings|dennoch|trotzdem|mais|cependant|toutefois|néanmoins|pourtant|pero|sin embargo|no obstante|"
    r"aunque|mas|porém|contudo|no entanto|todavia|embora|ma|tuttavia|però|comunque|eppure|maar|echter|toch|wel)\b", re.I)
_CONCLUSION_RX = re.compile(
    r"^(?:therefore|thus|so|hence|overall|in summary|in conclusion|to summarize|in short|ultimately|consequently|as a result|"
    r"accordingly|based on (?:this|the|these|that)|daher|deshalb|also|somit|insgesamt|folglich|zusammenfassend|donc|par conséquent|"
    r"en résumé|en conclusion|ainsi|por lo tanto|por tanto|en resumen|en conclusión|así que|portanto|por isso|em resumo|assim|"
    r"quindi|pertanto|in sintesi|in conclusione|dunque|dus|daarom|kortom|concluderend|samenvattend)\b", re.I)
_PRECISION_RX = re.compile(
    r"\b(?:exact|exactly|precise|precisely|definitive|definitively|definite|conclusive|conclusively|"
    r"certain|certainty|for sure|for certain|100%|"
    r"genau|genaue[nmrs]?|exakt|exakte[nmrs]?|konkret|konkrete[nmrs]?|sicher|mit sicherheit|précis|précise|précisément|exacte?|exactement|certitude|"
    r"exacto|exacta|exactamente|preciso|precisa|certeza|específic[oa]|exato|exata|exatamente|precisamente|"
    r"esatt[oa]|esattamente|precis[oa]|certezza|specific[oa]|precies|precieze|exacte|zekerheid|specifiek)\b", re.I)
_GENERIC_RX = re.compile(
    r"\b(?:generally|general|typically|usually|often|vary|varies|varying|depend|depends|depending|various|variety|"
    r"common|commonly|several|many|some|any time|in most|normally|im allgemeinen|allgemein|normalerweise|hängt|variiert|"
    r"en général|généralement|dépend|varie|en general|generalmente|depende|varía|em geral|varia|in generale|dipende|"
    r"in het algemeen|meestal|hangt|varieert)\b", re.I)
# the refusal token's dress (refusals.token_form): a label before it ("Answer:", "Antwort:", ...);
# the written set's six dressings of the token (5878f62)
_TOKEN_LABEL_RX = re.compile(r"^(?:final answer|answer|response|output|result|reply|claim|antwort|réponse|respuesta|resposta|risposta|antwoord)\s*[:\-\u2013\u2014]\s*", re.I)
# a contrast clause is a sentence unit of its own (refusals.sentences: ", but ...")
_CLAUSE_RX = re.compile(r"[,;]\s+(?=(?:but|however|though|although|yet|aber|jedoch|mais|cependant|pero|sin embargo|mas|porém|ma|però|tuttavia|maar)\b)", re.I)
# Trigger words (refusals._decline_rxs): each group of cues runs only on a text holding one of
# its trigger words (speed: one big alternation costs ~0.3 ms per response).  Justified by: speed,
# not data (5878f62, 2fe89dc); tests/test_score_eval_refusal.py checks on every labelled and
# written response that a trigger never hides a cue.  The disclaimer cues' triggers follow.
_DECLINE_TRIGGERS = {
    "en_first": "i i'm i\u2019m sorry apologies apologize apologise regrettably unfortunately afraid unable",
    "en": "nothing only isn't isn\u2019t aren't aren\u2019t wasn't wasn\u2019t not no cannot unable unclear unknown uncertain impossible difficult hard challenging tricky insufficient "
          "inadequate lack limited without please clarify specify against outside beyond inconclusive undetermined "
          "none n/a unspecified can't can\u2019t couldn't couldn\u2019t don't don\u2019t doesn't doesn\u2019t didn't "
          "didn\u2019t",
    "de": "nicht kein keine keinen keinem keiner keines leid leider entschuldigung unklar unbekannt nirgends",
    "fr": "ne pas aucun aucune désolé désolée malheureusement hélas pardon impossible difficile insuffisant "
          "insuffisante insuffisants insuffisantes inconnu inconnue incertain incertaine floue flou",
    "es": "siento lamento disculpa disculpe lamentablemente desafortunadamente perdón imposible difícil insuficiente "
          "insuficientes sin desconocido desconocida incierto incierta ninguna puedo pude podría sé tengo encontré "
          "estoy dispongo cuento se está es consta hay documento documentos pasaje pasajes contexto fuente fuentes "
          "texto textos fragmento fragmentos",
    "pt": "não desculpe desculpa lamento infelizmente muito impossível difícil sem desconhecido desconhecida incerto "
          "incerta nenhuma informações documento documentos passagem passagens contexto fonte fontes texto textos "
          "trecho trechos excerto excertos",
    "it": "non dispiace purtroppo spiacente scuso scusa scusi impossibile difficile insufficienti senza sconosciuto "
          "sconosciuta incerto incerta chiaro chiara ignoto ignota nessuna documenti passaggi passi contesto fonti "
          "testi estratti",
    "nl": "niet geen spijt helaas sorry excuses onmogelijk onvoldoende onbekend onduidelijk nergens",
}
_DISCLAIMER_TRIGGERS = frozenset("ai ki ia knowledge training sprachmodell taalmodel modelo modello "
                                 "don't don\u2019t doesn't doesn\u2019t cannot can't can\u2019t not".split())
# Cue words of REFUSAL_MODEL's features (ba53ba7; the rule above also reads _HEDGE_RX,
# _PRECISION_RX, _CONTRAST_RX and _CONCLUSION_RX).  Justified by: the model's weights and
# threshold were fitted on the fit halves above plus the written English rows (make fit-refusal,
# 5-fold cross-validation by question; docs/refusals.md); which words were tried for each feature
# is not recorded.  English function words, none a word of de fr es pt it nl: a mixed response
# is weighed by the model when at least REFUSAL_MODEL["english"] of its words are these.
_EN_FUNCTION = frozenset("the of and to that it this not be for with are were from have has does there what "
                         "which by or its their would could should about".split())
_COMMIT_RX = re.compile(r"\b(?:likely|probably|possibly|appears?|seems?|suggests?|suggesting|indicates?|implies|"
                        r"approximately|roughly|estimated|around|about|may be|might be|could be|would be)\b", re.I)
# the content names the sources ("content_sources")
_PASSAGE_RX = re.compile(r"\b(?:passages?|context|documents?|text|sources?|excerpts?|dokumente?n?|quellen?|fuentes?|fontes?|fonti|documenti|bronnen|documenten)\b", re.I)

# --------------------------------------------------------------------------- grounding (reading 4)
# Meta-language: words, lead-ins and sentences about the sources or the answer, not about the
# world (grounding.meta_kind, checked_text), negation and modality (grounding._marks), clock
# words.  Justified by: written with reading 4 (a661360; INTRO_WORDS with 4167193; "May" the
# month is no modal, c1e4c05); which data suggested the words is not recorded.  The model over
# the features they feed (negation_mismatch, modality_mismatch, ...) was fitted on FaithBench's
# fit half (make fit-grounding); a check of the meta filter on RefChecker's 1,400 real RAG answers
# (docs/grounding.md: 141 of 4,245 sentences set aside, 842 lead-ins removed).
# Words about the sources or the answer (not claims about the world): never required.
META_WORDS = frozenset("""
passage passages text texts article articles context contexts document documents source sources
excerpt excerpts snippet snippets summary summarize summarise summarizes summarises summarized summarised
information info provided provide provides providing given mention mentions mentioned mentioning
discuss discusses discussed discussing state states stated stating says said say according based
describe describes described describing detail details detailed highlight highlights highlighted
note notes noted noting indicate indicates indicated indicating report reports reported reporting
suggest suggests suggested explain explains explained answer answers question questions therefore
overall additionally also however furthermore moreover specifically specific regarding available
retrieved refer refers referenced reference references cite cites cited writes wrote written
""".split())
# ... and, in a sentence that ends in a colon (it introduces a list or a summary), these too
INTRO_WORDS = frozenset("""
here concise brief short core key main important following below pieces piece points point topics topic
aspects aspect parts part unrelated separate distinct different two three several overview breakdown
extract extracted would were
""".split())
_LEADIN_RX = re.compile(
    r"^ ?(?:(?:in summary|to summarize|to summarise|in conclusion|overall|in short|additionally|also|"
    r"furthermore|moreover|however|therefore|thus|so|yes|no|sure|certainly|of course), )*"
    r"(?:(?:based (?:on|upon)|according to|as (?:stated|mentioned|described|noted|shown|indicated) in|"
    r"from|per|in|given) (?:the |these |this |those |my )?(?:provided |given |available |retrieved |above |"
    r"following |information in the |information (?:provided |given )?(?:in|from) the )?"
    r"(?:passages?|context|contexts|documents?|sources?|texts?|excerpts?|articles?|information|snippets?|"
    r"search results?|results?)(?: provided| given| above| available| retrieved)? ?[,:]? ?)?"
    r"(?:(?:the |this |these )?(?:passages?|context|documents?|sources?|texts?|excerpts?|articles?|summary)"
    r"(?: provided| given| above)? (?:also )?(?:says?|states?|mentions?|notes?|explains?|indicates?|"
    r"suggests?|describes?|reports?|shows?|highlights?|discusses?|provides? information (?:about|on)|"
    r"is about|talks about|tells us)(?: that)? ?[,:]? ?)?", re.IGNORECASE)
_META_SENT_RX = re.compile(
    r"\b(?:passages?|context|documents?|sources?|texts?|excerpts?|articles?|information)\b"
    r"(?: provided| given| available| retrieved| above)? (?:does|do|did) (?:not|n[\x27\u2019]t) "
    r"(?:mention|say|state|specify|include|contain|provide|discuss|address|cover|give|describe|indicate|"
    r"explain|answer)|\bno (?:information|mention|details?) (?:is |was |are )?(?:given |provided |available )?"
    r"(?:about|on|of|regarding|in)\b|\bi hope (?:this|that) helps\b|\blet me know\b|\bfeel free to\b|"
    r"\bi (?:could not|couldn[\x27\u2019]t|cannot|can[\x27\u2019]t|can not|was unable to|am unable to|"
    r"do not|don[\x27\u2019]t) (?:find|see|locate|determine|answer|tell|confirm|say|know|provide)\b|"
    r"\b(?:cannot|can[\x27\u2019]t|can not) be (?:determined|answered|found|confirmed)\b|"
    r"\b(?:is|are) not (?:mentioned|specified|stated|provided|given|included|discussed) in\b|"
    r"\bhere(?: is|[\x27\u2019]s| are) (?:a |an |the |my )?(?:[a-z]+ )?(?:[a-z]+ )?(?:summary|summaries|answer|"
    r"overview|key points?|main points?|breakdown|response)\b", re.IGNORECASE)
# contrastive connectors: a declining clause before or after one is set aside, the rest checked
_G_CLAUSE_RX = re.compile(r",? ?\b(?:but|however|although|though|yet|whereas)\b,? ?|; ?", re.IGNORECASE)
# clock words after a time ("2 pm", "GMT"): no content word (grounding_features)
_CLOCK = frozenset(("am", "pm", "a.m", "p.m", "gmt", "utc", "bst", "est", "pst", "cet"))
# negators: "not" on the next content word, and the words near it (grounding._marks, _neg_zone)
_NEG = frozenset("not no never none nothing nobody neither nor without cannot n't isn't aren't wasn't weren't "
                 "don't doesn't didn't won't wouldn't can't couldn't shouldn't hasn't haven't hadn't".split())
# modal words and their class, read in lower case only ("May" is a month or a name, c1e4c05)
_MODAL = {"must": "must", "shall": "must", "required": "must", "require": "must", "requires": "must",
          "requiring": "must", "mandatory": "must", "obliged": "must", "obligatory": "must",
          "may": "may", "might": "may", "could": "may", "possibly": "may", "possible": "may", "perhaps": "may",
          "maybe": "may", "potential": "may", "potentially": "may", "likely": "may", "probably": "may",
          "optional": "may", "should": "should", "recommended": "should"}

#!/usr/bin/env python3
"""score_eval.py: score a RAG system's traces against a gold set and enforce committed gates.

One standard-library file; copy it into any repository.  It reads a gold JSONL and a trace
JSONL (seed 002's contracts), computes every metric in the registry below, checks them
against the gates of one dataset section of ``gates.toml`` (or a ``--gates`` string), prints
one JSON object on stdout and exits

    0  every gate passed,
    1  a gate failed,
    2  usage or input error (each bad line reported as ``path:line: what is wrong, got <value>``).

Usage (seed 002's command works unchanged)::

    python score_eval.py --gold G --trace T --k 5 --gates precision=0.80,chr=0.75,under=0.05,over=0.10
    python score_eval.py --gold G --trace T --dataset baseline --gates-file gates.toml \\
        --k 1,5,10 --out R.json --markdown R.md --items I.jsonl [--baseline OLD.json]
    python score_eval.py --qrels QRELS --run RUN --k 5,10 --gates nDCG@10=0.3   # TREC files
    python score_eval.py --qrels QRELS --run RUN --format trec -m map -m ndcg_cut.10 -q   # as trec_eval
    python score_eval.py --gold G --trace T --gates "precision=0.8,warn:pass_rate=0.97,monitor:nDCG@10" \
        --weights '{"faithfulness": 0.4}' --html R.html --junit R.xml --csv I.csv --metrics-csv M.csv
    python score_eval.py calibrate --human H.jsonl --auto A.jsonl [--field NAME] [--bins 0.5]
    python score_eval.py merge-html OUT.html A.html B.html

Gates have tiers (``block`` sets the exit status, ``warn`` and ``monitor`` only report); a
weighted scorecard over seed 004's stages (``STAGES``) gives a run and each item an overall score.
    python score_eval.py --trace T --chunks C --gates answer_relevance=0.5   # no gold: reference-free
    python score_eval.py --gold G --trace SHARD1 --k 1,5 --partial P1.json      # one shard ...
    python score_eval.py merge P1.json P2.json --trace T --gates-file gates.toml  # ... the report

Pipeline, top to bottom: constants and the error class -> metric registry -> TOML subset
reader and gates config -> line readers (records with line numbers) -> per-item judging
(no I/O) -> aggregation (rates, Wilson intervals, categories, failure modes) -> gates and
regressions against a baseline report -> output (JSON, Markdown, items JSONL) -> main().

Python API (stable): ``main(argv=None) -> int`` and ``parse_toml(text, path) -> dict``.

>>> parse_toml('[baseline]\\nprecision = { min = 0.8 }\\n')
{'baseline': {'precision': {'min': 0.8}}}
"""
from __future__ import annotations

if __name__ == "__main__":                # Ctrl-C while the module loads: exit 130, no traceback
    import os as _os                      # imported whole before the handler exists: an import
    import signal as _signal              # inside it could meet a half-initialised module

    def _early_interrupt(signum, frame):
        _os.write(2, b"score_eval: interrupted\n")
        _os._exit(130)
    if _signal.getsignal(_signal.SIGINT) is not _signal.SIG_IGN:
        _signal.signal(_signal.SIGINT, _early_interrupt)

import argparse
import contextlib
import csv
import difflib
import gc
import heapq
import html
import io
import json
import json.scanner
import math
import os
import random
import re
import stat
import sys
import tempfile
import time
import traceback
import unicodedata
from array import array
from bisect import bisect_left, bisect_right
from collections import Counter
from fractions import Fraction
from functools import partial
from itertools import compress, count, filterfalse
from operator import gt, mul
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

# Contents: generated from referee/ by tools/build_single_file.py (make single-file); edit
# the modules there, never this file.  Each module starts at the line given:
#
#     79  referee/base.py
#    131  referee/lexicon.py
#    607  referee/registry.py
#   1003  referee/fmt.py
#   1036  referee/stats.py
#   1083  referee/retrieval.py
#   1183  referee/tomlsub.py
#   1463  referee/inputs.py
#   1870  referee/text.py
#   1997  referee/citations.py
#   2387  referee/refusals.py
#   2686  referee/answers.py
#   2959  referee/grounding.py
#   3699  referee/treccalc.py
#   4109  referee/trec.py
#   4756  referee/names.py
#   4838  referee/aggregate.py
#   5099  referee/config.py
#   5957  referee/contracts.py
#   6378  referee/response.py
#   6523  referee/judge.py
#   7478  referee/gates.py
#   7705  referee/scorecard.py
#   7964  referee/outputs.py
#   8501  referee/reports.py
#   9135  referee/calibration.py
#   9364  referee/shards.py
#   9713  referee/run.py
#  10378  referee/cli.py



# =========================================================================== referee/base.py
# Constants of the contracts (seed 002's refusal token, exit codes, input limits) and the error class.

# --------------------------------------------------------------------------- constants

REFUSAL = "not in context"            # seed 002's refusal token (compared after strip + lower)
DEFAULT_GATES = "precision=0.80,chr=0.75,under=0.05,over=0.10"   # seed 002's suggested gates
DEFAULT_GATES_FILE = "gates.toml"
MAX_ERRORS = 20                       # bad lines listed one by one, the rest only counted
MAX_CITATIONS = 5                     # seed 000: an answer cites at most five chunks
DECISIONS = ("ANSWER", "ABSTAIN", "CLARIFY", "BLOCK")
Z95 = 1.959963984540054               # two-sided 95% normal quantile
NO_CATEGORY = "(none)"
SCHEMA = "score_eval/1"
DESCRIPTION = "score_eval.py: score a RAG system's traces against a gold set and enforce committed gates."
__version__ = "0.1.0"                 # also in every JSON report ("version"); pyproject.toml has the same
# Gate tiers (seed 004's layered gates): only "block" gates set the exit status; "warn" gates
# are listed first in every output (they are the failures a passing run would hide);
# "monitor" gates only report their value.
TIERS = ("block", "warn", "monitor")
_TIER_ORDER = {"warn": 0, "block": 1, "monitor": 2}

# Limits on untrusted input (README "Limits and exit codes"); each breach is a path:line: error, exit 2.
MAX_LINE_BYTES = 16 * 1024 * 1024     # one input line (a JSONL row, a TREC line); --max-line-bytes
MAX_JSON_DEPTH = 64                   # nesting of arrays/objects in one JSON row
MAX_NUMBER_CHARS = 100                # digits of one integer in JSON or TOML (Python's int limit is 4300)
MAX_K = 10000                         # largest rank cutoff for --k and metric names
TMP_SUFFIX = ".ragtmp"                # temp files of an atomic write: .<name>.<pid>.<random>.ragtmp
EXIT_PASS, EXIT_GATE, EXIT_INPUT, EXIT_INTERNAL = 0, 1, 2, 3
MAX_INPUT_BYTES = 4 << 30              # one input file or stdin, in bytes; --max-input-bytes
MAX_INPUT_LINES = 10_000_000          # one input file, in lines; --max-input-lines
MAX_STDIN_LINES = 1_000_000           # stdin, in lines (an endless generator stops sooner); --max-input-lines
MAX_BAD_LINES = 10_000                # reading stops after this many bad lines in one run
MAX_CATEGORIES = 1_000                # distinct values of the --by field
MAX_SMALL_FILE_BYTES = 1 << 20        # a gates file (TOML), read whole
_LIMITS = {"line_bytes": MAX_LINE_BYTES, "input_bytes": MAX_INPUT_BYTES,
           "input_lines": MAX_INPUT_LINES, "stdin_lines": MAX_STDIN_LINES}   # this run's values (from the options)
_GROUNDING = {"mode": "strict"}            # this run's [scorer] grounding (the failure label follows it)

_TOKEN_RX = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+")
# _TOKEN_RX on a lower-cased ASCII text without the regex engine (tokens, unsupported_tokens):
# its words are the runs of a-z (every other byte to a space), its numbers are in the runs of
# digits, "." and "," (a run of digits alone is one number; other runs go to _NUMBER_RX).
_LETTER_BYTES = bytes(c if 97 <= c <= 122 else 32 for c in range(256))
_NUMBER_BYTES = bytes(c if 48 <= c <= 57 or c in b".," else 32 for c in range(256))
_NUMBER_RX = re.compile(r"\d+(?:[.,]\d+)*")


class ScoreError(ValueError):
    """Bad input; ``str(err)`` is the whole message (one or more ``path:line: ...`` lines)."""


# =========================================================================== referee/lexicon.py
# The scorer's word data: every word list, cue pattern and number / month / unit table that the
# readings (citations, refusals, answers, sentences and grounding) and judging read, in one place.
#
# The readers (text, citations, refusals, answers, grounding, judge) are logic over the names
# defined here.  Each group says which reader reads it and what data justified it: a fit half of a
# labelled set (the rule or model was chosen there, the held-out half only reported), a check (the
# list was run on data and the figure recorded, nothing fitted), or "origin not recorded" when
# neither the commit, the CHANGELOG nor docs/*.md says where the words came from.  A word added
# here changes verdicts: measure it on the fit half named in its group (never on a held-out half
# or on gold/gold_perturb.jsonl), report the held-out half next to a baseline.
#
# One number table (NUMBER_WORDS), one month table (MONTH_NUMBERS) and one unit table (UNITS).
# Answer matching (reading 3) and grounding (reading 4) read different parts of the number and
# month tables; their views are derived below, each as it was fitted (widening a view changes
# verdicts).  tests/test_lexicon.py checks the tables on hand-chosen inputs, and that no other
# module of the package defines a list of ten or more plain words.

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


# =========================================================================== referee/registry.py
# The measures: one object per measure (name, definition, direction, what it reads from the
# per-item verdicts, how it aggregates, its empty value and why), the registry that lists them
# in the order of the docs, and the per-item verdict flags the measures read.

# --------------------------------------------------------------------------- measures
#
# A run judges each item once (judge.Scorer: verdict flags and per-item values); a measure
# then says which of those it reads and how it sums them over a set of items (the whole gold
# set, one category).  aggregate.aggregate carries out the declarations below; the docs' metric
# table, the --help list and the README table are printed from them (names.py).


class Measure(NamedTuple):
    """One measure.  ``K`` in a name is a rank cutoff filled from ``--k`` or a gate.

    What it reads, one of:
      ``items``   (denominator, numerator) predicates on an item's verdict flags: a yes/no
                  verdict per item (the ones --baseline pairs item by item, see PAIRED);
      ``values``  the Scorer's per-item values (an array, NaN where the item has none; a dict of
                  arrays by cutoff for a ``@K`` family; "hits": hit counts by cutoff; "seed_rec":
                  seed 002's recall by cutoff); ``over`` chooses the items ("gold": with gold
                  citations, "answerable"; "": every item with a value), ``hit`` a flag that
                  counts an item of a rate over values.
    How it aggregates (``kind``): "rate" = count / n with a Wilson 95% interval; "mean" = the
    mean with a normal 95% interval (none when ``ci`` is false); "quantile" = nearest rank at
    ``quantile``; "count" = how many items (no interval).
    When it is not measured, the value is None and ``reason`` says why: ``requires`` (a Scorer
    attribute that must be true, and the reason when it is not), ``lacks`` (a Scorer map item ->
    chunk id of items without chunk text, and the reason while one of the items is in it), then
    ``why_empty`` when nothing was measured and ``empty`` is None (``empty`` is the value of an
    empty denominator otherwise).
    ``needs`` names per-row work beyond the seed's verdicts (a key of NEEDS): a run does it only
    when something asks for one of its measures, and a measure not computed is left out of
    the report.  ``group`` is its place in the report (0: the seed's verdicts and retrieval, 1:
    issue 20 and 29's measures, 2: answer correctness), ``ir`` whether IR mode (--qrels/--run)
    has it too."""
    name: str
    kind: str        # "rate", "mean", "quantile" or "count" (see above)
    better: str      # "higher" or "lower": the direction of a bare ``--gates name=value``
    definition: str
    fields: str      # input fields read
    undefined: str   # what an empty denominator gives (text for the docs)
    empty: object    # ... and as a value (None = not measured)
    gold: bool = True   # needs gold labels; False = reference-free (scored from a trace alone)
    needs: str = ""     # per-row work beyond the seed's verdicts (a key of NEEDS); "" = always computed
    items: Optional[tuple] = None   # (denominator, numerator) predicates on an item's flags
    values: str = ""    # else the Scorer's per-item values it aggregates
    over: str = ""      # "gold", "answerable" or "" (every item with a value)
    hit: int = 0        # a rate over values: the flag that counts an item
    quantile: float = 0.0
    ci: bool = True     # a mean: with a normal interval
    why_empty: str = ""             # the reason when nothing was measured (``empty`` None)
    requires: tuple = ()            # (Scorer attribute, reason when it is false)
    lacks: tuple = ()               # (Scorer map of items without chunk text, reason template)
    hint: tuple = ()                # (Scorer attribute, text added to why_empty when it is false)
    group: int = 0
    ir: bool = False


# Per-item verdict flags (bits).  The report's "items" map stores them as letters so that a
# later run can pair its items with this one (--baseline).
FLAG_LETTERS = "tsachpvxmedofugnzr" + "lwkjyqCDSTLMRV" + "PXIAKGU"
(F_TRACE, F_SHIP, F_ANS, F_CONT, F_HIT, F_PASS, F_VALID, F_HALL, F_HMEAS, F_EXPREF, F_DEC,
 F_DECOK, F_FB, F_FBUSED, F_GOLD, F_NOTRET, F_GOLDRET, F_REC,
 F_NOLAB, F_PROSE, F_CUTOFF, F_POLREJ, F_POLV, F_SRCV, F_REQCONF, F_OKCONF, F_REQSTALE, F_OKSTALE,
 F_REQCLAR, F_OKCLAR, F_REQDOCS, F_OKDOCS,
 F_PARTIAL, F_CITTEXT, F_BADMARK, F_GANS, F_ANSOK, F_GMEAS, F_UNSUP) = [1 << i for i in range(len(FLAG_LETTERS))]
F_REFUSED = 1 << 62        # internal: reading 2's "not shipped" (Refusal.flags; never stored in the flags)
FLAG_MEANINGS = (
    ("t", "a trace row exists for the item"),
    ("s", "shipped: the claim is not the refusal token (a missing trace or null claim ships)"),
    ("a", "gold answerable is true"),
    ("c", "containment: a gold substring of >= 5 characters is in the claim (vacuous for [])"),
    ("h", "citation hit: citations within retrieved_ids and overlapping gold_citations"),
    ("p", "item passes (pass_rate)"),
    ("v", "citation_validity holds for the shipped answer"),
    ("x", "hallucinated shipped claim"),
    ("m", "hallucination was measurable for the item (chunk text known)"),
    ("e", "expected to refuse (expected_decision != ANSWER, else answerable false)"),
    ("d", "decision compared (gold expected_decision and trace decision both present)"),
    ("o", "decision matched"),
    ("f", "the trace carries fallback_used"),
    ("u", "fallback_used is true"),
    ("g", "the item has gold citations (enters the retrieval means)"),
    ("n", "a citation is not in retrieved_ids"),
    ("z", "some gold citation is anywhere in retrieved_ids"),
    ("r", "seed recall at the first k: every gold citation in the top k"),
    ("l", "no gold labels (reference-free item: label-based metrics and modes skip it)"),
    ("w", "refused in prose: a refusal that is not the bare token (the refusal reader; with refusal_reader "
          "\"exact\", a [scorer] refusal or cutoff pattern match)"),
    ("k", "training-cutoff excuse: a refusal whose claim matches a [scorer] cutoff pattern"),
    ("j", "gold expects a policy rejection (expected_behavior reject with rejection_reason)"),
    ("y", "policy violation (a [policy.*] pattern in the shipped claim, or a policy rejection shipped)"),
    ("q", "source-policy violation (quote_only paraphrased, no_use cited or reproduced)"),
    ("C", "gold required_behavior must_surface_conflict"),
    ("D", "... met: right decision and a conflict reason code"),
    ("S", "gold required_behavior must_detect_staleness"),
    ("T", "... met: right decision and a staleness reason code"),
    ("L", "gold required_behavior must_clarify"),
    ("M", "... met: right decision and a CLARIFY decision or clarification reason code"),
    ("R", "gold required_citation_doc_ids given"),
    ("V", "... met: every listed document cited"),
    ("P", "partial refusal: the response answers part of the question and declines the rest"),
    ("X", "citations read from the text (the row's citations list was empty or absent)"),
    ("I", "a citation marker in the text resolves to no retrieved chunk"),
    ("A", "gold_answers given (answer correctness measured)"),
    ("K", "answer_correct: the shipped answer matches a gold answer"),
    ("G", "grounding checked sentence by sentence (a shipped answer with known chunk text)"),
    ("U", "unsupported answer: at least one checked sentence is not supported by the chunks"),
)

def _has(bits: int):
    """The predicate "every bit of ``bits`` is set" on an item's flags."""
    return lambda f: f & bits == bits


def _all(f: int) -> bool:
    return True


def _shipped(f: int) -> bool:
    return bool(f & F_SHIP)


def _refused(f: int) -> bool:
    return not f & F_SHIP


# The reasons shared by several measures.
_NO_GOLD_CITATIONS = "not measured: no item has gold citations"
_NO_FALLBACK = "not measured: no trace row carries fallback_used"
_GROUNDING_OFF = ('not computed: set [scorer] grounding = "sentences" in the gates file, or gate faithfulness / '
                  'unsupported_answer_rate (tier = "monitor" to report only)')
_GROUNDING_LACKS = ("ground_no_text", "not measured: no chunk text for %(lack)d shipped answers (first: qid %(qid)s, "
                    "chunk %(chunk)s); give the trace cited_chunks or --chunks FILE")

M = Measure
REGISTRY: Tuple[Measure, ...] = (
    M("precision", "rate", "higher",
      "shipped answerable items with containment and citation hit / shipped items |S|",
      "answer_json.claim, citations, retrieved_ids; gold answerable, gold_claim_substr, gold_citations",
      "1.0 when nothing shipped", 1.0, items=(_shipped, _has(F_ANS | F_CONT | F_HIT))),
    M("chr", "rate", "higher",
      "shipped answerable items with a citation hit / all shipped items |S| (seed 002)",
      "answer_json.citations, retrieved_ids; gold answerable, gold_citations",
      "1.0 when nothing shipped", 1.0, items=(_shipped, _has(F_ANS | F_HIT))),
    M("under_refusal", "rate", "lower",
      "unanswerable items that shipped an answer / unanswerable items |U|",
      "answer_json.claim; gold answerable", "0.0 when no unanswerable item", 0.0,
      items=(lambda f: not f & F_ANS, _shipped)),
    M("over_refusal", "rate", "lower",
      "answerable items refused / answerable items |A|",
      "answer_json.claim; gold answerable", "0.0 when no answerable item", 0.0,
      items=(_has(F_ANS), _refused)),
    # the seed's recall is read from Scorer.seed_rec at every cutoff; its flag (F_REC) is the
    # first cutoff's, which --baseline pairs
    M("recall@K", "rate", "higher",
      "seed 002, all-or-nothing: answerable items whose gold citations are ALL in the first K "
      "retrieved_ids (trace order; vacuously true for []) / |A|; `recall@k` is K = first --k",
      "retrieved_ids; gold answerable, gold_citations", "0.0 when no answerable item", 0.0,
      items=(_has(F_ANS), _has(F_REC)), values="seed_rec", over="answerable"),
    M("pass_rate", "rate", "higher",
      "items that pass / all items; answerable passes when shipped with containment and "
      "citation hit, unanswerable when refused (QA contract)",
      "answer_json; gold answerable, gold_claim_substr, gold_citations", "never empty", None,
      items=(_all, _has(F_PASS)), why_empty="not measured: no items"),
    M("correct_refusal", "rate", "higher",
      "refusals of unanswerable items / all refusals |R| (refusal precision)",
      "answer_json.claim; gold answerable", "1.0 when nothing refused", 1.0,
      items=(_refused, lambda f: not f & F_ANS)),
    M("incorrect_refusal", "rate", "lower",
      "refusals of answerable items / all refusals |R| (share of refusals that were wrong; "
      "over_refusal divides by |A| instead)",
      "answer_json.claim; gold answerable", "0.0 when nothing refused", 0.0,
      items=(_refused, _has(F_ANS))),
    M("hallucination", "rate", "lower",
      "shipped claims with no citation, a citation outside retrieved_ids, or a number or "
      "content word (>= 3 letters, not a stopword) found in no cited chunk's text / |S|",
      "answer_json, retrieved_ids, cited_chunks or --chunks",
      "0.0 when nothing shipped; null (gate fails) without chunk text", 0.0, gold=False,
      items=(_shipped, _has(F_HALL)),
      lacks=("no_text", "not measured: no chunk text for %(lack)d of %(n)d shipped claims (first: qid %(qid)s, "
                        "chunk %(chunk)s); give the trace cited_chunks or --chunks FILE")),
    # Issue 29: grounding of generated text, sentence by sentence (reading 4).  Computed unless
    # the gates file says [scorer] grounding = "strict" and no gate / regression names one (issue 41);
    # without a gates file, when something asks for it (``needs``: issue 40's seed command does not).
    M("faithfulness", "mean", "higher",
      "supported sentences / checked sentences of a shipped answer (meta sentences set aside; each "
      "sentence matched to the cited chunks, the retrieved ones when none is cited), mean over shipped "
      "answers with a checked sentence", "answer_json, retrieved_ids, cited_chunks or --chunks",
      "null when no shipped answer has a checked sentence, or without chunk text", None, gold=False,
      values="faith", requires=("grounding_on", _GROUNDING_OFF), lacks=_GROUNDING_LACKS,
      why_empty="not measured: no shipped answer has a checked sentence", group=1, needs="grounding"),
    M("unsupported_answer_rate", "rate", "lower",
      "shipped answers with at least one unsupported sentence (a number or name found in no chunk, "
      "negation or modality changed, or a support score at or below the fitted bar) / checked answers",
      "answer_json, retrieved_ids, cited_chunks or --chunks",
      "0.0 when nothing shipped; null (gate fails) without chunk text", 0.0, gold=False,
      items=(_has(F_GMEAS), _has(F_UNSUP)), requires=("grounding_on", _GROUNDING_OFF), lacks=_GROUNDING_LACKS,
      group=1, needs="grounding"),
    M("citation_validity", "rate", "higher",
      "shipped answers whose citations are unique, at most 5 and all in retrieved_ids, and whose "
      "text holds no citation marker that resolves to nothing / |S| (seed 000)",
      "answer_json.citations (empty or absent: the markers in the claim), retrieved_ids",
      "1.0 when nothing shipped", 1.0, gold=False, items=(_shipped, _has(F_VALID))),
    M("false_accept_rate", "rate", "lower",
      "shipped among items expected to refuse (expected_decision != ANSWER, else answerable "
      "false) / items expected to refuse (seed 000)",
      "answer_json.claim; gold expected_decision, answerable", "0.0 when none expected to refuse", 0.0,
      items=(_has(F_EXPREF), _shipped)),
    M("false_refuse_rate", "rate", "lower",
      "refused among items expected to answer / items expected to answer (seed 000)",
      "answer_json.claim; gold expected_decision, answerable", "0.0 when none expected to answer", 0.0,
      items=(lambda f: not f & F_EXPREF, _refused)),
    M("decision_accuracy", "rate", "higher",
      "trace decision == gold expected_decision / items having both",
      "decision; gold expected_decision", "null (not measured) when no item has both", None,
      items=(_has(F_DEC), _has(F_DECOK)),
      why_empty="not measured: no item has both gold expected_decision and trace decision"),
    M("fallback_used_count", "count", "lower",
      "items whose trace says fallback_used = true (QA contract)",
      "fallback_used", "null (not measured) when no trace carries fallback_used", None, gold=False,
      items=(_has(F_FB), _has(F_FBUSED)), why_empty=_NO_FALLBACK),
    M("fallback_used_rate", "rate", "lower",
      "fallback_used true / items whose trace carries fallback_used",
      "fallback_used", "null (not measured) when no trace carries fallback_used", None, gold=False,
      items=(_has(F_FB), _has(F_FBUSED)), why_empty=_NO_FALLBACK),
    M("fallback_used_rate_answerable", "rate", "lower",
      "fallback_used true / answerable items whose trace carries fallback_used",
      "fallback_used; gold answerable", "null (not measured) when no answerable trace carries it", None,
      items=(_has(F_FB | F_ANS), _has(F_FBUSED)),
      why_empty="not measured: no answerable item's trace carries fallback_used"),
    # The rank measures (retrieval.py computes them per item, for QA and IR mode alike).
    M("P@K", "mean", "higher",
      "trec_eval P_K: gold citations in the top K of the ranking / K, mean over items with gold "
      "citations", "retrieved_ids, retrieved_scores; gold_citations",
      "null when no item has gold citations", None, needs="ranks", values="hits", over="gold",
      why_empty=_NO_GOLD_CITATIONS, ir=True),
    M("R@K", "mean", "higher",
      "trec_eval recall_K: fraction of the item's gold citations in the top K (not seed's "
      "all-or-nothing recall@K)", "retrieved_ids, retrieved_scores; gold_citations",
      "null when no item has gold citations", None, needs="ranks", values="rec", over="gold",
      why_empty=_NO_GOLD_CITATIONS, ir=True),
    M("Success@K", "rate", "higher",
      "trec_eval success_K: any gold citation in the top K", "retrieved_ids, retrieved_scores; gold_citations",
      "null when no item has gold citations", None, needs="ranks", values="hits", over="gold",
      why_empty=_NO_GOLD_CITATIONS, ir=True),
    M("RR", "mean", "higher",
      "trec_eval recip_rank: 1 / rank of the first gold citation, 0 when none is retrieved",
      "retrieved_ids, retrieved_scores; gold_citations", "null when no item has gold citations", None,
      needs="ranks", values="rr", over="gold", why_empty=_NO_GOLD_CITATIONS, ir=True),
    M("RR@K", "mean", "higher",
      "reciprocal rank counting only the top K", "retrieved_ids, retrieved_scores; gold_citations",
      "null when no item has gold citations", None, needs="ranks", values="rrk", over="gold",
      why_empty=_NO_GOLD_CITATIONS, ir=True),
    M("nDCG@K", "mean", "higher",
      "trec_eval ndcg_cut_K: sum gain/log2(rank+1) over the top K, divided by the same for the "
      "ideal order of all gold citations (gain 1; qrels relevance level with --qrels)",
      "retrieved_ids, retrieved_scores; gold_citations", "null when no item has gold citations", None,
      needs="ranks", values="ndcg", over="gold", why_empty=_NO_GOLD_CITATIONS, ir=True),
    # Issue 20: prose refusals, reference-free metrics, policies, decisions for the right reason,
    # latency and cost.
    M("refusal_rate", "rate", "lower",
      "items refused (the refusal token in any dress, or a response whose bottom line is that it cannot "
      "answer: the refusal reader, docs/refusals.md) / all items", "answer_json.claim",
      "null when there are no items", None, gold=False, items=(_all, _refused),
      why_empty="not measured: no items", group=1),
    M("partial_refusal_rate", "rate", "lower",
      "items whose response answers part of the question and declines the rest (shipped: an answer for "
      "every other metric) / all items", "answer_json.claim", "null when there are no items", None, gold=False,
      items=(_all, _has(F_PARTIAL)), why_empty="not measured: no items", group=1),
    M("rejection_calibration", "rate", "higher",
      "items whose answer/refuse behaviour matches the label (expected_behavior, else "
      "expected_decision != ANSWER, else answerable false means refuse) / labelled items (seed 004)",
      "answer_json.claim; gold expected_behavior, expected_decision, answerable",
      "null when no item is labelled", None,
      items=(lambda f: not f & F_NOLAB, lambda f: bool(f & F_SHIP) != bool(f & F_EXPREF)),
      why_empty="not measured: no item is labelled", group=1),
    M("policy_compliance", "rate", "higher",
      "judged items without a policy violation / judged items; judged = shipped items plus items "
      "gold says to reject for a policy (expected_behavior reject + rejection_reason); a violation "
      "is a shipped claim matching a [policy.*] pattern, or a policy rejection that shipped",
      "answer_json.claim; [policy.*] patterns; gold expected_behavior, rejection_reason",
      "1.0 when nothing is judged; null when no [policy.*] is configured and no gold policy "
      "rejection exists", 1.0, gold=False,
      items=(lambda f: f & (F_SHIP | F_POLREJ), lambda f: not f & F_POLV),
      requires=("policy_measured", "not measured: no [policy.*] patterns in the gates file and no gold policy "
                                   "rejection"), group=1),
    M("source_policy_compliance", "rate", "higher",
      "shipped items without a source-policy violation / shipped items: a quote_only chunk's "
      "sentences must be verbatim, a no_use chunk may be neither cited nor reproduced (8+ "
      "consecutive words)", "answer_json, retrieved_ids, cited_chunks {text, policy} or --chunks "
      "policy", "1.0 when nothing shipped (a chunk without policy is summarize)", 1.0, gold=False,
      items=(_shipped, lambda f: not f & F_SRCV), group=1),
    M("answer_relevance", "mean", "higher",
      "share of the question's content terms (numbers, words of >= 3 letters not stopwords; final "
      "s folded) that occur in the shipped claim, mean over shipped items (lexical)",
      "q, answer_json.claim", "null when no shipped item has a question with content terms",
      None, gold=False, needs="relevance", values="answer_rel",
      why_empty="not measured: no shipped item has a question (q) with content terms", group=1),
    M("context_relevance", "mean", "higher",
      "share of retrieved chunks sharing a content term with the question, mean over items whose "
      "retrieved chunks' texts are all known", "q, retrieved_ids, cited_chunks or --chunks",
      "null when no item has a question, retrieved chunks and all their texts", None, gold=False,
      needs="relevance", values="context_rel",
      why_empty="not measured: no item has a question, retrieved chunks and all their texts (give --chunks)",
      group=1),
    M("citation_coverage", "rate", "higher",
      "items whose citations name every document of gold required_citation_doc_ids (doc id = "
      "chunk id before '#') / items listing them (seed 000)",
      "answer_json.citations; gold required_citation_doc_ids",
      "null when no item lists required_citation_doc_ids", None, items=(_has(F_REQDOCS), _has(F_OKDOCS)),
      why_empty="not measured: no gold item lists required_citation_doc_ids", group=1),
    M("conflict_correct_rate", "rate", "higher",
      "must_surface_conflict items with the right decision (expected_decision or "
      "acceptable_decisions; without a trace decision: refused) and a reason whose code (text "
      "before ':') starts with 'conflict' / those items (seed 000)",
      "decision, reasons, answer_json.claim; gold required_behavior, expected_decision, "
      "acceptable_decisions", "null when no item requires it", None, items=(_has(F_REQCONF), _has(F_OKCONF)),
      why_empty="not measured: no gold item has required_behavior must_surface_conflict", group=1),
    M("staleness_correct_rate", "rate", "higher",
      "must_detect_staleness items with the right decision and a reason whose code starts with "
      "'stale' / those items (seed 000)",
      "decision, reasons, answer_json.claim; gold required_behavior, expected_decision, "
      "acceptable_decisions", "null when no item requires it", None, items=(_has(F_REQSTALE), _has(F_OKSTALE)),
      why_empty="not measured: no gold item has required_behavior must_detect_staleness", group=1),
    M("clarify_correct_rate", "rate", "higher",
      "must_clarify items with the right decision and a CLARIFY decision or a reason whose code "
      "starts with 'ambiguous' or 'clarif' / those items",
      "decision, reasons; gold required_behavior, expected_decision, acceptable_decisions",
      "null when no item requires it", None, items=(_has(F_REQCLAR), _has(F_OKCLAR)),
      why_empty="not measured: no gold item has required_behavior must_clarify", group=1),
    M("latency_p50", "quantile", "lower",
      "median of timings_ms.total in ms (nearest rank: the ceil(0.50 n)-th smallest)",
      "timings_ms.total", "null when no trace row carries timings_ms.total", None, gold=False,
      values="latency", quantile=0.50, why_empty="not measured: no trace row carries timings_ms.total", group=1),
    M("latency_p95", "quantile", "lower",
      "95th percentile of timings_ms.total in ms (nearest rank: the ceil(0.95 n)-th smallest)",
      "timings_ms.total", "null when no trace row carries timings_ms.total", None, gold=False,
      values="latency", quantile=0.95, why_empty="not measured: no trace row carries timings_ms.total", group=1),
    M("cost_per_item", "mean", "lower",
      "sum of cost / trace rows carrying cost (any currency unit, as written)",
      "cost", "null when no trace row carries cost", None, gold=False, values="cost", ci=False,
      why_empty="not measured: no trace row carries cost", group=1),
    # Issue 28: answer correctness beyond the substring (reading 3, docs/answer_correctness.md).
    # Both are over the items with an answer_f1 (NaN: refused, or nothing to match).
    M("answer_correct_rate", "rate", "higher",
      "shipped answers that match a gold answer after normalisation (answer_correct) / shipped "
      "items with gold_answers; when a gate names answer_correct_rate or answer_f1, shipped "
      "answerable items without gold_answers are matched on gold_claim_substr too (no partial match)",
      "answer_json.claim; gold gold_answers, question (gold_claim_substr, answerable)",
      "null when no shipped item has gold answers", None, values="answer_f1", hit=F_ANSOK,
      why_empty="not measured: no shipped item has gold_answers",
      hint=("answer_substr", " (gate answer_correct_rate to match gold_claim_substr)"), group=2),
    M("answer_f1", "mean", "higher",
      "token F1 of the shipped claim against its best gold answer (normalised words), mean over the "
      "items of answer_correct_rate",
      "answer_json.claim; gold gold_answers (gold_claim_substr)",
      "null when no shipped item has gold answers", None, values="answer_f1",
      why_empty="not measured: no shipped item has gold_answers",
      hint=("answer_substr", " (gate answer_correct_rate to match gold_claim_substr)"), group=2),
)
del M
_BY_NAME = {m.name: m for m in REGISTRY}
#: The order of a report's metrics: the registry's, group by group.
REPORT_ORDER: Tuple[Measure, ...] = tuple(sorted(REGISTRY, key=lambda m: m.group))
ALIASES = {"under": "under_refusal", "over": "over_refusal"}   # seed 002's --gates names
_FAMILIES = ("P", "R", "Success", "RR", "nDCG", "recall")
_PARAM_RX = re.compile(r"(P|R|Success|RR|nDCG|recall)@([1-9][0-9]{0,5})")
# Per-row work that only some measures read (a measure's ``needs``), done when something asks
# for one of its measures: a gate, a [regression] metric, a [weights] stage of the scorecard when
# the scorecard is reported, --compute, an output beside the JSON report (--items, --markdown,
# --html, --csv, --metrics-csv, --junit), a --baseline comparison, a --partial shard, or
# reference-free mode (no gold labels: these are what there is to measure).  Seed 002's command
# asks for none (issue 40).
NEEDS = {"relevance": "content terms of q, the claim and the retrieved chunks' texts",
         "ranks": "the rank measures of each item's retrieved_ids against its gold citations, at every cutoff",
         "grounding": "each shipped answer's sentences matched against its chunks' texts (a gates file asks "
                      "for it unless it says [scorer] grounding = \"strict\")"}
NOT_COMPUTED = ("not computed: nothing asked for it (a gate, [regression], a [weights] stage, --items/--html/"
                "--csv, or --compute %s)")


def needs_for(metrics) -> set:
    """The NEEDS keys of the measures ``metrics`` (Measure or MetricRef)."""
    return {getattr(m, "metric", m).needs for m in metrics} - {""}


#: The measures that need answers (--gold/--trace): an IR run (--qrels/--run) refuses a gate on one.
SEED_ONLY = tuple(m.name for m in REGISTRY if m.group == 0 and not m.ir and m.name != "recall@K")
#: name -> (denominator, numerator) of the measures with a yes/no verdict per item: --baseline pairs
#: them item by item, the scorecard scores an item by them.
_PAIRED = {m.name: m.items for m in REGISTRY if m.items is not None and m.kind == "rate"}


# =========================================================================== referee/fmt.py
# Number formatting shared by every output (rounding, the gate-value form, metric ordering).

# --------------------------------------------------------------------------- output


def _r(v):
    """Round a reported float to 4 decimals as the seed does (gates use unrounded values)."""
    if isinstance(v, float):
        return round(v, 4)
    return v


def _fmt_num(v) -> str:
    return ("%.4f" % v).rstrip("0").rstrip(".") if isinstance(v, float) else str(v)


def _rounded(entry: dict) -> dict:
    out = dict(entry)
    out["value"] = _r(entry["value"])
    if entry["ci"] is not None:
        out["ci"] = [round(x, 4) for x in entry["ci"]]
    return out


def _metric_sort_key(name: str):
    base, _, k = name.partition("@")
    for pos, m in enumerate(REGISTRY):
        if m.name == name or m.name.split("@")[0] == base and ("@K" in m.name) == bool(k):
            return (pos, int(k) if k.isdigit() else 0)
    return (len(REGISTRY), 0)


# =========================================================================== referee/stats.py
# Intervals: Wilson for rates, normal intervals for means, and the per-metric entry of a report.

# --------------------------------------------------------------------------- aggregation


def wilson(count: int, n: int) -> Optional[List[float]]:
    """Wilson score 95% interval for count/n (None when n == 0)."""
    if n == 0:
        return None
    p = count / n
    z2 = Z95 * Z95
    den = 1 + z2 / n
    center = (p + z2 / (2 * n)) / den
    half = Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / den
    return [max(0.0, center - half), min(1.0, center + half)]


def _sample_ci(vals: List[float], total: float) -> Optional[List[float]]:
    """_normal_ci of the values ``vals`` (``total``: math.fsum of them)."""
    return _normal_ci(total, math.fsum(map(mul, vals, vals)), len(vals))


def _normal_ci(values_sum: float, sq_sum: float, n: int) -> Optional[List[float]]:
    if n == 0:
        return None
    mean = values_sum / n
    var = max(0.0, sq_sum / n - mean * mean) * n / (n - 1) if n > 1 else 0.0
    half = Z95 * math.sqrt(var / n)
    return [max(0.0, mean - half), min(1.0, mean + half)]


def _counted_sums(counts: Dict[float, int]) -> Tuple[float, float]:
    """(math.fsum of the values, math.fsum of their squares) of a multiset given as value ->
    count (few distinct values in [0, 1]: a rank measure over many items), without listing it: both sums
    are exact (Fraction) and rounded once, as math.fsum rounds, so the floats are the same."""
    total = sq = Fraction(0)
    for v, c in counts.items():
        total += Fraction(v) * c
        sq += Fraction(v * v) * c
    return float(total), float(sq)


def _entry(value, count, n, ci, reason=None) -> dict:
    return {"value": value, "count": count, "n": n, "ci": ci, "reason": reason}


# =========================================================================== referee/retrieval.py
# Retrieval measures (P@K, R@K, Success@K, RR, nDCG@K) on a ranking reduced to the positions
# of its relevant documents; QA mode and TREC mode share them.

# --------------------------------------------------------------------------- retrieval measures
#
# One implementation per measure of the registry's retrieval families, used by QA mode
# (Scorer._retrieval: P@K, R@K, Success@K, RR, RR@K, nDCG@K) and by TREC mode (trec_query: P_K,
# recall_K, success_K, recip_rank, ndcg_cut_K) alike.  Both reduce a ranking to ``positions``:
# the 0-based ranks of its relevant documents, ascending, with ``gains``, their levels (1 for a
# plain gold citation; the qrels level >= 1 with --qrels).

_DISC: List[float] = []


def _disc(n: int) -> List[float]:
    """1 / log2(rank + 1) for ranks 1..n (trec_eval's nDCG discount)."""
    while len(_DISC) < n:
        _DISC.append(1.0 / math.log2(len(_DISC) + 2))
    return _DISC


def relevant_positions(ranking: List[str], rel) -> Tuple[List[int], List[int]]:
    """(0-based ranks of the documents of ``rel`` in ``ranking``, their gains); ``rel`` maps an
    id to its level (>= 1), or is a collection of ids (gain 1 each)."""
    if type(rel) is dict:      # levels >= 1 (truthy); an id not in ``rel`` gives None
        levels = list(map(rel.get, ranking))
        return list(compress(range(len(levels)), levels)), list(filter(None, levels))
    positions = list(compress(range(len(ranking)), map(rel.__contains__, ranking)))
    gains = [1] * len(positions)
    return positions, gains


def hits_at(positions: List[int], k: int) -> int:
    """Relevant documents in the top ``k``."""
    return bisect_left(positions, k)


def measure_p(hits: int, k: int) -> float:
    """P@K / trec_eval P_K: relevant documents in the top K / K."""
    return hits / k


def measure_r(hits: int, nrel: int) -> float:
    """R@K / trec_eval recall_K: relevant documents in the top K / all relevant (0 when none)."""
    return hits / nrel if nrel else 0.0


def measure_success(hits: int) -> float:
    """Success@K / trec_eval success_K: 1 when a relevant document is in the top K."""
    return 1.0 if hits else 0.0


def measure_rr(positions: List[int], k: Optional[int] = None) -> float:
    """RR (k None) / RR@K / trec_eval recip_rank: 1 / rank of the first relevant document,
    0 when none is retrieved (within the top k)."""
    if positions and (k is None or positions[0] < k):
        return 1.0 / (positions[0] + 1)
    return 0.0


def ideal_gains(levels) -> List[int]:
    """The ideal ranking's gains: the positive levels, largest first."""
    return sorted((g for g in levels if g > 0), reverse=True)


def ideal_dcg(ideal: List[int], k: int) -> float:
    """DCG of the top ``k`` of the ideal ranking (``ideal``: gains largest first)."""
    disc = _disc(k)
    total = 0.0
    for pos, gain in enumerate(ideal[:k]):
        total += gain * disc[pos]
    return total


def measure_ndcg(positions: List[int], gains: List[int], k: int, idcg: float) -> float:
    """nDCG@K / trec_eval ndcg_cut_K: sum of gain / log2(rank + 1) over the top K, divided by
    ``idcg`` (ideal_dcg of the same K); 0 when nothing is relevant."""
    disc = _disc(k)
    dcg = 0.0
    for pos, gain in zip(positions, gains):
        if pos >= k:
            break
        dcg += gain * disc[pos]
    return dcg / idcg if idcg else 0.0


class MetricRef(NamedTuple):
    """A parsed metric name: registry entry plus cutoff (None for 'recall@k' = first --k)."""
    spelled: str
    metric: Measure
    k: Optional[int]

    def key(self, k0: int) -> str:
        """The name under which the report lists the value."""
        if "@K" not in self.metric.name:
            return self.metric.name
        return self.metric.name.replace("@K", "@%d" % (self.k if self.k is not None else k0))


# =========================================================================== referee/tomlsub.py
# The TOML subset gates files are written in (tomllib when the interpreter has it, else this reader).

try:  # Python 3.11+; older versions use only the subset reader below.
    import tomllib as _tomllib
except ImportError:  # pragma: no cover - depends on the interpreter
    _tomllib = None

# --------------------------------------------------------------------------- TOML subset


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_INT_RX = re.compile(r"[+-]?(?:0|[1-9](?:_?[0-9])*)")
_FLOAT_RX = re.compile(r"[+-]?(?:0|[1-9](?:_?[0-9])*)(?:\.[0-9](?:_?[0-9])*)?(?:[eE][+-]?[0-9](?:_?[0-9])*)?")
_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}


class _TomlLine:
    """A cursor over one line of TOML for the subset reader."""

    def __init__(self, text: str, path: str, lineno: int):
        self.s, self.i, self.path, self.lineno = text, 0, path, lineno

    def fail(self, what: str) -> ScoreError:
        rest = self.s[self.i:self.i + 30]
        return ScoreError("%s:%d: %s, got %r" % (self.path, self.lineno, what, rest or "end of line"))

    def ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i] in " \t":
            self.i += 1

    def peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def end(self) -> None:
        self.ws()
        if self.i < len(self.s) and self.s[self.i] != "#":
            raise self.fail("unexpected text after the value")

    def key(self) -> str:
        self.ws()
        if self.peek() == '"':
            return self.basic_string()
        if self.peek() == "'":
            return self.literal_string()
        m = _BARE_KEY.match(self.s, self.i)
        if not m:
            raise self.fail("expected a key")
        self.i = m.end()
        if self.peek() == "@":
            raise self.fail('a key with "@" must be quoted, e.g. "%s@..."' % m.group(0))
        return m.group(0)

    def dotted_key(self) -> List[str]:
        parts = [self.key()]
        self.ws()
        while self.peek() == ".":
            self.i += 1
            parts.append(self.key())
            self.ws()
        return parts

    def basic_string(self) -> str:
        if self.s.startswith('"""', self.i):
            raise self.fail("multi-line strings are outside the supported TOML subset")
        self.i += 1
        out = []
        while True:
            if self.i >= len(self.s):
                raise self.fail("unterminated string")
            c = self.s[self.i]
            if c == '"':
                self.i += 1
                return "".join(out)
            if c == "\\":
                e = self.s[self.i + 1:self.i + 2]
                if e in _ESCAPES:
                    out.append(_ESCAPES[e])
                    self.i += 2
                    continue
                if e in ("u", "U"):
                    width = 4 if e == "u" else 8
                    hexa = self.s[self.i + 2:self.i + 2 + width]
                    if len(hexa) != width or not all(h in "0123456789abcdefABCDEF" for h in hexa):
                        raise self.fail("bad unicode escape")
                    code = int(hexa, 16)
                    if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                        raise self.fail("bad unicode escape")
                    out.append(chr(code))
                    self.i += 2 + width
                    continue
                raise self.fail("bad escape in string")
            if (ord(c) < 0x20 and c != "\t") or c == "\x7f":
                raise self.fail("control character in string")
            out.append(c)
            self.i += 1

    def literal_string(self) -> str:
        if self.s.startswith("'''", self.i):
            raise self.fail("multi-line strings are outside the supported TOML subset")
        j = self.s.find("'", self.i + 1)
        if j < 0:
            raise self.fail("unterminated string")
        text = self.s[self.i + 1:j]
        if any((ord(c) < 0x20 and c != "\t") or c == "\x7f" for c in text):
            raise self.fail("control character in string")
        self.i = j + 1
        return text

    def value(self, nested: bool = False):
        self.ws()
        c = self.peek()
        if c == '"':
            return self.basic_string()
        if c == "'":
            return self.literal_string()
        if c == "[":
            return self.array()
        if c == "{":
            if nested:
                raise self.fail("inline tables inside arrays or inline tables are outside the supported TOML subset")
            return self.inline_table()
        for word, val in (("true", True), ("false", False)):
            if self.s.startswith(word, self.i) and not _BARE_KEY.match(self.s[self.i + len(word):self.i + len(word) + 1]):
                self.i += len(word)
                return val
        m = _FLOAT_RX.match(self.s, self.i)
        if m and m.end() > self.i:
            tail = self.s[m.end():m.end() + 1]
            if tail and (tail.isalnum() or tail in ":-_."):
                raise self.fail("dates, times, hex/octal/binary and special numbers are outside the supported TOML subset")
            text = m.group(0)
            self.i = m.end()
            if len(text) > MAX_NUMBER_CHARS:
                raise self.fail("numbers are limited to %d characters" % MAX_NUMBER_CHARS)
            if _INT_RX.fullmatch(text):
                return int(text.replace("_", ""))
            return float(text.replace("_", ""))
        raise self.fail("expected a string, number, boolean, array or inline table")

    def array(self) -> list:
        self.i += 1
        out = []
        while True:
            self.ws()
            if self.peek() == "]":
                self.i += 1
                return out
            if not self.peek() or self.peek() == "#":
                raise self.fail("arrays must close on the same line in the supported TOML subset")
            out.append(self.value(nested=True))
            self.ws()
            if self.peek() == ",":
                self.i += 1
            elif self.peek() != "]":
                raise self.fail("expected ',' or ']' in array")

    def inline_table(self) -> dict:
        self.i += 1
        out: dict = {}
        self.ws()
        if self.peek() == "}":
            self.i += 1
            return out
        while True:
            parts = self.dotted_key()
            if len(parts) != 1:
                raise self.fail("dotted keys are outside the supported TOML subset")
            if parts[0] in out:
                raise self.fail("duplicate key %r" % parts[0])
            self.ws()
            if self.peek() != "=":
                raise self.fail("expected '=' after key")
            self.i += 1
            out[parts[0]] = self.value(nested=True)
            self.ws()
            if self.peek() == ",":
                self.i += 1
                continue
            if self.peek() == "}":
                self.i += 1
                return out
            raise self.fail("expected ',' or '}' in inline table")


def _toml_subset(text: str, path: str) -> Tuple[dict, Dict[Tuple[str, ...], int]]:
    """Parse the documented TOML subset; also return the line of every table and key.

    Subset: comments, ``[table]`` and ``[dotted.table]`` headers, ``key = value`` with bare or
    quoted keys, basic and literal one-line strings, integers, floats, booleans, one-line
    arrays, one-line inline tables.  Anything else raises ScoreError with path:line.
    """
    root: dict = {}
    lines: Dict[Tuple[str, ...], int] = {}
    explicit = set()
    inline = set()
    current: dict = root
    prefix: Tuple[str, ...] = ()
    if text.startswith("\ufeff"):
        text = text[1:]
    for lineno, raw in enumerate(text.split("\n"), 1):
        if raw.endswith("\r"):
            raw = raw[:-1]
        cur = _TomlLine(raw, path, lineno)
        cur.ws()
        c = cur.peek()
        if not c or c == "#":
            continue
        if c == "[":
            if raw[cur.i:].startswith("[["):
                raise cur.fail("arrays of tables are outside the supported TOML subset")
            cur.i += 1
            parts = tuple(cur.dotted_key())
            cur.ws()
            if cur.peek() != "]":
                raise cur.fail("expected ']' to close the table header")
            cur.i += 1
            cur.end()
            if parts in explicit:
                raise cur.fail("table [%s] defined twice" % ".".join(parts))
            node = root
            for depth, part in enumerate(parts):
                sub = parts[:depth + 1]
                if part in node:
                    nxt = node[part]
                    if not isinstance(nxt, dict) or sub in inline:
                        raise cur.fail("key %r is already a value, not a table" % part)
                else:
                    nxt = node[part] = {}
                    lines.setdefault(sub, lineno)
                node = nxt
            explicit.add(parts)
            lines[parts] = lineno
            current, prefix = node, parts
            continue
        parts = cur.dotted_key()
        if len(parts) != 1:
            raise cur.fail("dotted keys are outside the supported TOML subset")
        key = parts[0]
        cur.ws()
        if cur.peek() != "=":
            raise cur.fail("expected '=' after key")
        cur.i += 1
        val = cur.value()
        cur.end()
        if key in current:
            raise cur.fail("duplicate key %r" % key)
        current[key] = val
        lines[prefix + (key,)] = lineno
        if isinstance(val, dict):
            inline.add(prefix + (key,))
            for sub in val:
                lines[prefix + (key, sub)] = lineno
    return root, lines


def parse_toml(text: str, path: str = "<string>") -> dict:
    """Parse a gates file; raise ScoreError ``path:line: ...`` on anything outside the subset.

    The subset reader runs first on every version, so a file is accepted or rejected (with the
    same message) on 3.9 and 3.13 alike; on 3.11+ tomllib then reads it and its dict is returned
    (tests check that both readers give identical dicts)."""
    return _parse_toml_lines(text, path)[0]


def _parse_toml_lines(text: str, path: str) -> Tuple[dict, Dict[Tuple[str, ...], int]]:
    try:
        data, lines = _toml_subset(text, path)
    except RecursionError:
        raise ScoreError("%s: arrays nested too deeply (more than Python's recursion limit)" % path) from None
    if _tomllib is None:
        return data, lines
    try:
        return _tomllib.loads(text[1:] if text.startswith("\ufeff") else text), lines
    except _tomllib.TOMLDecodeError as exc:   # the subset reader missed a TOML rule
        msg = str(exc)
        m = re.search(r"line (\d+)", msg)
        raise ScoreError("%s:%s: invalid TOML: %s" % (path, m.group(1) if m else "1", msg)) from None


# =========================================================================== referee/inputs.py
# Reading input files: size and line limits, JSON rows with depth and number caps, line batches,
# RAGAS-style rows, and the error collector that names ``path:line``.

# --------------------------------------------------------------------------- readers


def _show(value, limit: int = 80) -> str:
    """An input value as it would look in JSON, shortened for messages."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


class _Errors:
    """Collects ``path:line: ...`` messages; keeps MAX_ERRORS, counts the rest."""

    def __init__(self, limit: int):
        self.limit, self.lines, self.count = limit, [], 0

    def add(self, msg: str) -> None:
        self.count += 1
        if len(self.lines) < self.limit:
            self.lines.append(msg)
        if self.count >= MAX_BAD_LINES:      # a stream of garbage: stop reading it
            raise ScoreError(self.text() + "\n%s stopped reading after %d bad lines" % (msg.split(":")[0], self.count))

    def text(self) -> str:
        out = list(self.lines)
        if self.count > len(self.lines):
            out.append("... and %d more errors" % (self.count - len(self.lines)))
        return "\n".join(out)


class JsonLimit(ValueError):
    """A JSON row that parses but breaks a limit (depth, digits, lone surrogate)."""


_JSON_SPECIAL = re.compile(r'[\[\]{}"\\]')
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _json_depth(text: str) -> int:
    """Deepest nesting of arrays/objects in a JSON text, brackets inside strings ignored.

    Linear: one pass over the brackets, quotes and backslashes only."""
    depth = deepest = 0
    in_string = escaped = False
    last = -2
    for m in _JSON_SPECIAL.finditer(text):
        c, pos = m.group(), m.start()
        if in_string:
            if escaped and pos == last + 1:
                escaped = False
            elif c == "\\":
                escaped, last = True, pos
            elif c == '"':
                in_string = False
            continue
        if c == '"':
            in_string, escaped = True, False
        elif c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth -= 1
    return deepest


_NO_VALUE = object()


def _parse_int(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS:
        raise JsonLimit("an integer longer than %d digits, got %s..." % (MAX_NUMBER_CHARS, text[:20]))
    return int(text)


_JSON_DECODER = json.JSONDecoder(parse_int=_parse_int)   # built once: json.loads(..., parse_int=) builds one per call
_JSON_DECODE = _JSON_DECODER.decode
_JSON_SCAN = json.scanner.make_scanner(_JSON_DECODER)     # what decode() runs, without its two Python frames


def json_row(text: str):
    """``json.loads`` with limits: nesting <= MAX_JSON_DEPTH (checked before parsing, so no
    RecursionError), integers <= MAX_NUMBER_CHARS digits, no lone surrogate (\\ud800) in a
    string (it could not be written out).  Raises ValueError (``JsonLimit`` for a limit)."""
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and _json_depth(text) > MAX_JSON_DEPTH:
        raise JsonLimit("JSON nested deeper than %d levels" % MAX_JSON_DEPTH)
    obj = _NO_VALUE
    if text[:1] == "{":        # an object row, as JSONL rows are: decode()'s scan, called directly
        try:
            obj, end = _JSON_SCAN(text, 0)
        except (StopIteration, ValueError):
            obj = _NO_VALUE             # decode() below raises the same error with its message
        else:
            if end != len(text) and text[end:].strip(" \t\n\r"):
                obj = _NO_VALUE         # extra data: decode()'s message
    if obj is _NO_VALUE:
        obj = _JSON_DECODE(text) if text[:1] != "\ufeff" else json.loads(text)   # json.loads's BOM message
    # "\\" first: one memchr over the row, where "\\u" is a slower two-character search (most rows hold no escape)
    if "\\" in text and "\\u" in text and _SURROGATE_ESCAPE.search(text):
        try:
            json.dumps(obj, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise JsonLimit("a lone surrogate escape (\\ud800-\\udfff) in a string") from None
    return obj


def _jsonl(path: str, errors: _Errors, notes: List[str]):
    """Yield (lineno, object) for each non-blank line; bad lines go to ``errors``.

    Reads bytes so that a non-UTF-8 line is reported with its line number; a UTF-8
    byte-order mark on the first line and CRLF line ends are accepted.  A block of lines
    (iter_line_batches) is decoded in one call when it is all UTF-8 and holds no over-long
    line; otherwise line by line, as _decoded_lines does."""
    for first, lines, ended in iter_line_batches(path):
        texts = None
        if None not in lines:
            try:
                texts = b"\n".join(lines).decode("utf-8").split("\n")    # no line holds a "\n"
            except UnicodeDecodeError:
                pass
        numbered = zip(count(first), texts) if texts is not None else _batch_lines(path, errors, first, lines, ended)
        for lineno, line in numbered:
            if lineno == 1 and line.startswith("\ufeff"):
                line = line[1:]
                notes.append("%s:1: UTF-8 byte-order mark ignored" % path)
            if not line or line.isspace():
                continue
            try:
                obj = json_row(line)
            except ValueError as exc:
                if texts is not None and ended:     # the message of the line as read, line end included
                    line += "\n"
                    try:
                        json_row(line)
                    except ValueError as again:
                        exc = again
                if isinstance(exc, JsonLimit):
                    errors.add("%s:%d: %s" % (path, lineno, exc))
                else:
                    errors.add("%s:%d: invalid JSON (%s), got %s" % (path, lineno, str(exc).split(":")[0],
                                                                   _show(line.strip(), 60)))
                continue
            if type(obj) is not dict:
                errors.add("%s:%d: expected a JSON object, got %s" % (path, lineno, _show(obj, 60)))
                continue
            if path in _RAGAS_PATHS:      # issue 28: a RAGAS-style row, read as gold + trace row
                obj = ragas_row(obj, path, lineno, errors)
                if obj is None:
                    continue
            yield lineno, obj


def _batch_lines(path: str, errors: "_Errors", first: int, lines: list, ended: bool):
    """(lineno, text) of a batch's lines that are UTF-8, line end included (iter_lines'
    lines); an over-long or non-UTF-8 line goes to ``errors`` when it is reached."""
    for lineno, raw in enumerate(lines, first):
        if raw is None:
            errors.add("%s:%d: line longer than %d bytes (--max-line-bytes)" % (path, lineno, _LIMITS["line_bytes"]))
            continue
        if ended:
            raw += b"\n"
        try:
            yield lineno, raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            errors.add("%s:%d: not UTF-8 (byte 0x%02x at column %d), got %r"
                       % (path, lineno, raw[exc.start], exc.start + 1, raw[:60]))


# Issue 28: RAGAS-style rows ({user_input | question, response | answer, retrieved_contexts |
# contexts, reference | ground_truth}, no qid), read with --format ragas or detected.  Each row
# becomes one row that is both its gold row and its trace row: qid "row-<line>", contexts
# "ctx-1".."ctx-N" in rank order (retrieved_ids; their texts in cited_chunks, so that a citation
# by rank "[1]" names ctx-1 and grounding has the text), the reference as gold_answers.  A row
# says whether it is answerable only with an "answerable" field; without one, the gold is
# unlabelled (the seed's label-based metrics are skipped) and the answer metrics are measured.
_RAGAS_PATHS: set = set()
_RAGAS_FIELDS = (("user_input", "question"), ("response", "answer"), ("retrieved_contexts", "contexts"),
                 ("reference", "ground_truth"))


def _first_field(row: dict, names) -> Tuple[Optional[str], object]:
    for name in names:
        if name in row:
            return name, row[name]
    return None, None


def looks_ragas(row: dict) -> bool:
    """A row with no qid and a question field plus a response or contexts field of RAGAS."""
    if "qid" in row or "q_id" in row:
        return False
    return _first_field(row, _RAGAS_FIELDS[0])[0] is not None and (
        _first_field(row, _RAGAS_FIELDS[1])[0] is not None or _first_field(row, _RAGAS_FIELDS[2])[0] is not None)


def ragas_row(row: dict, path: str, lineno: int, errors: _Errors) -> Optional[dict]:
    """The gold + trace row of one RAGAS-style row; None (error recorded) when a field is bad."""
    out = {"qid": "row-%d" % lineno}
    name, q = _first_field(row, _RAGAS_FIELDS[0])
    if q is not None and type(q) is not str:
        errors.add("%s:%d: \"%s\" must be a string, got %s" % (path, lineno, name, _show(q)))
        return None
    name, resp = _first_field(row, _RAGAS_FIELDS[1])
    if resp is not None and type(resp) is not str:
        errors.add("%s:%d: \"%s\" must be a string, got %s" % (path, lineno, name, _show(resp)))
        return None
    name, ctx = _first_field(row, _RAGAS_FIELDS[2])
    if ctx is not None and not _str_list(ctx):
        errors.add("%s:%d: \"%s\" must be a list of strings, got %s" % (path, lineno, name, _show(ctx)))
        return None
    name, ref = _first_field(row, _RAGAS_FIELDS[3] + ("ground_truths",))
    if type(ref) is str:
        ref = [ref] if ref.strip() else None
    elif ref is not None and not (_str_list(ref) and all(r.strip() for r in ref)):
        errors.add("%s:%d: \"%s\" must be a string or a list of non-empty strings, got %s"
                   % (path, lineno, name, _show(ref)))
        return None
    ids = ["ctx-%d" % (k + 1) for k in range(len(ctx or ()))]
    if q is not None:
        out["question"] = out["q"] = q
    if ref:
        out["gold_answers"] = list(ref)
    for key in ("answerable", "category", "citations"):
        if key in row:
            out[key] = row[key]
    aj = {"claim": resp}
    if "citations" in row:
        aj["citations"] = row["citations"]
    out["answer_json"] = aj
    out["retrieved_ids"] = ids
    out["cited_chunks"] = dict(zip(ids, ctx or ()))
    return out


def ragas_layout(path: str) -> bool:
    """True when the first row of ``path`` looks like a RAGAS row (see ``looks_ragas``); stdin
    ("-") is read once, so it is never sniffed: give --format ragas."""
    if path == "-" or not os.path.isfile(path):
        return False
    try:
        for _, row in _jsonl(path, _Errors(1), []):
            return looks_ragas(row)
    except (OSError, ScoreError):
        return False
    return False


def open_input(path: str, what: str = ""):
    """A binary file object for ``path``; ``-`` is stdin.  Anything but a regular file (a FIFO,
    a device such as /dev/zero, a folder) is refused: it could hang or never end."""
    what = " " + what if what else ""
    if path == "-":
        return os.fdopen(os.dup(sys.stdin.fileno()), "rb")
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise ScoreError("%s: cannot read%s: not a regular file (%s); give a file, or - for stdin"
                             % (path, what, _file_kind(st.st_mode)))
        return open(path, "rb")
    except OSError as exc:
        raise ScoreError("%s: cannot read%s: %s" % (path, what, exc.strerror or exc)) from None


def _file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a special file"


READ_BLOCK = 1 << 20     # bytes read at a time by iter_line_batches


def iter_line_batches(path: str, what: str = "", limit: Optional[int] = None):
    """Yield (lineno of the first line, lines, ended) for ``path`` (``-``: stdin), a block of
    READ_BLOCK bytes at a time: ``lines`` are the block's lines as bytes without their line
    end ("\\r" kept), None for a line longer than ``limit`` bytes (default --max-line-bytes),
    which is skipped without ever holding more than the limit in memory; ``ended`` is False
    only for the last batch when the file's last line has no line end.  The input limits
    (--max-input-bytes / --max-input-lines) stop reading with a ScoreError."""
    limit = limit or _LIMITS["line_bytes"]
    max_bytes, max_lines = _LIMITS["input_bytes"], _LIMITS["input_lines" if path != "-" else "stdin_lines"]
    total = 0
    lineno = 0                   # lines yielded so far
    carry = b""                  # the start of a line not yet ended (at most ``limit`` bytes)
    skipped = 0                  # bytes of an over-long line not yet ended (0: none)

    def too_many(count):
        return ScoreError("%s: %s more than %s (--max-input-%s); stopped reading"
                          % (path, "input is" if path != "-" else "stdin gave",
                             "%d bytes" % max_bytes if count is None else "%d lines" % max_lines,
                             "bytes" if count is None else "lines"))

    with open_input(path, what) as fh:
        read = fh.read
        while True:
            data = read(READ_BLOCK)
            if not data:
                break
            total += len(data)
            if total > max_bytes:
                raise too_many(None)
            lines: list = []
            if skipped:
                nl = data.find(b"\n")
                if nl < 0:
                    skipped += len(data)
                    if skipped > max(4 * limit, 1 << 26):   # no line end coming
                        raise ScoreError("%s:%d: line longer than %d bytes (--max-line-bytes), and %d bytes "
                                         "without a line end; stopped reading" % (path, lineno + 1, limit, skipped))
                    continue
                lines.append(None)
                skipped = 0
                data = data[nl + 1:]
            parts = (carry + data).split(b"\n") if carry else data.split(b"\n")
            carry = parts.pop()
            if len(carry) > limit:
                skipped, carry = len(carry), b""
            if parts and max(map(len, parts)) > limit:
                parts = [None if len(x) > limit else x for x in parts]
            lines += parts
            if lineno + len(lines) > max_lines:
                raise too_many(lineno + len(lines))
            if lines:
                yield lineno + 1, lines, True
                lineno += len(lines)
        if skipped or carry:
            if lineno + 1 > max_lines:
                raise too_many(lineno + 1)
            yield lineno + 1, [None if skipped else carry], False


def iter_lines(path: str, what: str = "", limit: Optional[int] = None):
    """Yield (lineno, bytes) for each line of ``path`` (``-``: stdin), line end included;
    a line longer than ``limit`` bytes (default --max-line-bytes) yields (lineno, None),
    and is skipped without ever holding more than the limit in memory."""
    for lineno, lines, ended in iter_line_batches(path, what, limit):
        for raw in lines:
            yield lineno, (None if raw is None else raw + b"\n" if ended else raw)
            lineno += 1


def _raw_lines(path: str, errors: "_Errors", what: str = ""):
    """iter_lines with each over-long line reported to ``errors``."""
    for lineno, raw in iter_lines(path, what):
        if raw is None:
            errors.add("%s:%d: line longer than %d bytes (--max-line-bytes)" % (path, lineno, _LIMITS["line_bytes"]))
        else:
            yield lineno, raw


def _decoded_lines(path: str, errors: "_Errors"):
    """Yield (lineno, text) for each line of ``path`` that is UTF-8; the others go to ``errors``."""
    for lineno, raw in _raw_lines(path, errors):
        try:
            yield lineno, raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            errors.add("%s:%d: not UTF-8 (byte 0x%02x at column %d), got %r"
                       % (path, lineno, raw[exc.start], exc.start + 1, raw[:60]))


_IS_STR = str.__instancecheck__
_NUM_TYPES = frozenset((int, float))


def _str_list(v) -> bool:
    return type(v) is list and all(map(_IS_STR, v))


def _num_list(v) -> bool:
    """A list of finite numbers (JSON's NaN/Infinity and booleans rejected)."""
    return type(v) is list and set(map(type, v)) <= _NUM_TYPES and all(map(math.isfinite, v))


def _text_line_batches(path: str, errors: _Errors):
    """(lineno of the first line, lines as text) a block at a time (iter_line_batches); a
    line that is over-long or not UTF-8 goes to ``errors`` and is read as a blank line."""
    for first, lines, _ in iter_line_batches(path):
        try:
            if None in lines:
                raise ValueError
            texts = b"\n".join(lines).decode("utf-8").split("\n")
        except ValueError:          # (UnicodeDecodeError too) line by line, naming each bad one
            texts = []
            for k, raw in enumerate(lines):
                lineno = first + k
                if raw is None:
                    errors.add("%s:%d: line longer than %d bytes (--max-line-bytes)" % (path, lineno, _LIMITS["line_bytes"]))
                    texts.append("")
                    continue
                try:
                    texts.append(raw.decode("utf-8"))
                except UnicodeDecodeError as exc:
                    errors.add("%s:%d: not UTF-8 (byte 0x%02x at column %d), got %r"
                               % (path, lineno, raw[exc.start], exc.start + 1, raw[:60]))
                    texts.append("")
        if first == 1:
            texts[0] = texts[0].lstrip("\ufeff")
        yield first, texts


# =========================================================================== referee/text.py
# Reading what a system wrote, part 0: the sentence splitter shared by the refusal reading and
# grounding; the text form the refusal and citation readers read; what a reader could not read.

# ---- sentences (readings 2 and 4)
# One splitter for every reading that goes sentence by sentence: the refusal reading (reading 2,
# ``sentences``: also every line, bullets stripped, contrast clauses apart) and grounding
# (reading 4, ``answer_sentences``).
_SPLIT_RX = re.compile(r"[.!?]{1,8}[\"\u201d\u2019')\]]{0,4}\s+|:[ \t\n]{1,8}(?=[A-Z])|\n[ \t]{0,8}\n|"
                       r"\n(?=[ \t]{0,8}(?:[-*\u2022]|\d{1,2}[.)])\s)")


def split_sentences(text: str) -> List[Tuple[int, int]]:
    """(start, end) offsets of the sentences of ``text``: a break after . ! ? followed by
    white space (not after a known abbreviation, an initial or a number's decimal point),
    at a blank line, and before a list item on its own line."""
    out = []
    start = 0
    n = len(text)
    for m in _SPLIT_RX.finditer(text):
        end = m.start()
        word = text[max(start, end - 12):end + 1].split()
        last = word[-1].lower().rstrip(".") if word else ""
        if text[end:end + 1] == "." and (last in _ABBREV or (len(last) == 1 and last.isalpha())):
            if last not in _NUMBER_ABBREV or text[m.end():m.end() + 1].isdigit():
                continue                               # "No. 5" is a number; "No. Digital ..." an answer
        if text[end:end + 1] in ".)" and last.isdigit() and len(last) <= 2 and _only_word(text, start, end, last):
            continue                                   # "2. Corrective action ...": a list number

        if m.end() < n and text[m.end()].islower() and text[end:end + 1] == ".":
            continue
        if text[start:m.end()].strip():
            out.append((start, m.end()))
        start = m.end()
    if text[start:].strip():
        out.append((start, n))
    return out


_NONSPACE_RX = re.compile(r"\S")


def _only_word(text: str, start: int, end: int, last: str) -> bool:
    """Whether ``text[start:end].strip() == last``, found without copying the slice (a long
    sentence with many "12." in it would copy it once per candidate break)."""
    m = _NONSPACE_RX.search(text, start, end)
    first = m.start() if m else end
    return end - first == len(last) and text[first:end] == last and (first == start or text[first - 1].isspace())


# ---- what a reader could not read (issue 44)
# No text raises out of a reader of what a system wrote: a value a reader cannot read (a
# number past its digit cap, markers past MAX_MARKERS, work past a reader's budget, any
# error) is left unknown for the row and named here; score_trace turns each name into a
# warning naming the trace row (file:line and qid).  Bounded: a caller that never takes them
# (mini_rag, the server, a benchmark) keeps at most MAX_READ_PROBLEMS.
READ_PROBLEMS: List[str] = []
MAX_READ_PROBLEMS = 20


def read_problem(text: str) -> None:
    """Record that a reader could not read something of the current row (once per text)."""
    if len(READ_PROBLEMS) < MAX_READ_PROBLEMS and text not in READ_PROBLEMS:
        READ_PROBLEMS.append(text)


def take_read_problems() -> List[str]:
    """The problems recorded since the last call, and forget them."""
    out = READ_PROBLEMS[:]
    del READ_PROBLEMS[:]
    return out


MAX_UNREAD_NOTES = 20        # rows named one by one in the warnings when a reader could not read their text


def note_unread(path: str, lineno: int, qid: str, notes: List[str], unread: List[int]) -> None:
    """A warning naming the row whose text a reader could not read in full (issue 44): what was
    left unknown or unread; after MAX_UNREAD_NOTES rows, only counted (``unread``: [rows, index
    of the note that counts the rest, -1 before there is one])."""
    problems = take_read_problems()
    unread[0] += 1
    if unread[0] <= MAX_UNREAD_NOTES:
        notes.append("%s:%d: qid %s: %s" % (path, lineno, _show(qid, 60), "; ".join(problems)))
        return
    more = "%s: %d more trace rows hold text a reader could not read in full (the first %d are named above)" % (
        path, unread[0] - MAX_UNREAD_NOTES, MAX_UNREAD_NOTES)
    if unread[1] < 0:
        unread[1] = len(notes)
        notes.append(more)
    else:
        notes[unread[1]] = more


def problem_text(what: str, exc: BaseException) -> str:
    """``what`` could not be read, with the exception's kind and first words (no traceback)."""
    msg = " ".join(str(exc).split())[:80]
    return "%s could not be read (%s%s)" % (what, type(exc).__name__, ": " + msg if msg else "")


# ---- text forms (issue 44 item 5)
# The refusal and the citation readers read a text in one form: Unicode spaces (no-break,
# thin, ideographic ...) as " ", apostrophes (U+2018, U+02BC, U+FF07, backtick) as "'",
# fullwidth brackets, parentheses and separators as ASCII, and decimal digits of any script
# ("١", "１") as ASCII digits.  One character becomes one character, so an offset
# into the form is an offset into the text.  An ASCII text other than one with a backtick is
# its own form.
_FORM_TABLE = str.maketrans({**{c: " " for c in "\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
                                               "\u2007\u2008\u2009\u200a\u202f\u205f\u3000"},
                             **{c: "'" for c in "\u2018\u02bc\uff07`"},
                             "\uff3b": "[", "\uff3d": "]", "\uff08": "(", "\uff09": ")", "\uff0c": ",",
                             "\uff1b": ";", "\uff1a": ":", "\uff03": "#", "\uff0d": "-"})
_UDIGIT_RX = re.compile(r"[^\x00-\x7f](?<=\d)")


def text_form(text: str) -> str:
    """``text`` in the form the refusal and citation readers read (see above); same length."""
    if text.isascii():
        return text.replace("`", "'") if "`" in text else text
    text = text.translate(_FORM_TABLE)
    return _UDIGIT_RX.sub(_ascii_digit, text)


def _ascii_digit(m) -> str:
    return chr(48 + unicodedata.decimal(m.group(), 0))


# =========================================================================== referee/citations.py
# Reading 1: citation markers and sources lists read out of a claim (the claim without them).

# ---- reading 1: citations in the text
#
# An LLM names its sources in its prose: inline markers ("[1]", "[1, 3]", "[doc#p3]",
# "(Source: X)", "【1†source】", "<sup>1</sup>", ...) and a trailing "Sources:" list.
# read_citations() finds them with the citation patterns (CITATION_PATTERNS, or the gates
# file's [scorer] citation_patterns, which replace them; [] reads none), resolves each
# reference to chunk ids and returns the claim without the markers and the list.  Every
# verdict reads that claim.  A pattern says what its match holds by its named group:
#   ref      a reference list ("1", "1, 3", "1-3", "doc#p3", "Source 2"); the match is a
#            marker only when every reference in it has the shape of one (ordinary bracketed
#            text such as "[sic]" or "[2019]" is left alone);
#   ids      the same, chunk or document ids only (no bare numbers: "(1)" is list numbering);
#   cite     an explicit citation ("(Source: X)"): always a marker, X must resolve;
#   doc, page  "(X, p. 3)": chunk X#p3 (or X#3), else the retrieved chunks of document X;
#            unresolved, a marker only when the group abbr matched ("p.", not "page");
#   sources  the header of a sources list: the rest of the text is the list, one reference
#            a line (or comma-separated on one line); it counts only when one of its items
#            has the shape of a reference.
# A pattern without these groups is explicit: its first group (else the whole match) is
# the reference.  A reference resolves to: a retrieved id or a known chunk id (cited_chunks,
# --chunks) as written, read whole whatever words and signs it holds ("[billing-and-invoicing#p8]",
# "[docs/a.md#p2, https://x.org/?a=1&b=2#p4]": a list is split at , ; & "and" only where the
# pieces do not join into a chunk or document id); a number N (1 to 3 digits, "Doc N", "Source N", a range "N-M" of at
# most 20) to the N-th of retrieved_ids; a document id (the chunk id before "#") to its
# retrieved chunks.  Anything else that is a marker (an id-like "x#y" that names no chunk,
# "[7]" with five retrieved) resolves to nothing: a bad marker (F_BADMARK).

_CITE_TRIGGER = re.compile("[\\[(\u3010<:\\n]")    # no such character: the built-in patterns find nothing
_CITE_TRIGGER_CHARS = "[(\u3010<:\n\uff3b\uff08\uff1a"   # the same and their fullwidth forms (text_form), looked for without the regex engine (Scorer.read)
_CITE_GROUPS = ("ref", "ids", "cite", "doc", "page", "abbr", "sources")
_CITE_SPLIT = re.compile(r"([,;&]|\band\b)")
MAX_ID_JOIN = 8              # an id read whole may hold up to 8 of the separators above ("billing-and-invoicing#p8")
_CITE_ITEM_NUM = re.compile(r"([1-9]\d{0,2})[.)](?:\s|$)")       # "1. Title", "2) Title"
_CITE_BRACKET_NUM = re.compile(r"\[\^?([1-9]\d{0,2})\]")
MAX_CITE_RANGE = 20          # "[1-20]" is read; a wider range is a bad marker
MAX_MARKERS = 1000           # limit: markers read per response; the rest stay in the claim (a warning names the row)


class Reading(NamedTuple):
    """A response read by read_citations."""
    claim: str               # the text without markers and sources list (unchanged when none)
    citations: List[str]     # chunk ids read, in order of first mention, each once
    bad: List[str]           # markers (or list items) that resolve to nothing, as written


_CITATION_RX = tuple((src, re.compile(src, re.IGNORECASE)) for src in CITATION_PATTERNS)


def citation_patterns() -> tuple:
    """The built-in CITATION_PATTERNS as (source, regex) pairs, compiled as the gates file's are."""
    return _CITATION_RX


def citation_pattern_problem(src: str, rx) -> Optional[str]:
    """Why a [scorer] citation_patterns entry cannot be used (beyond regex_problem), or None."""
    names = set(rx.groupindex)
    unknown = sorted(names - set(_CITE_GROUPS))
    if unknown:
        return "unknown named group %s; known: %s" % (", ".join(unknown), ", ".join(_CITE_GROUPS))
    if ("doc" in names) != ("page" in names):
        return "groups doc and page go together"
    return None


def read_citations(text: str, retrieved, known=(), patterns: Optional[tuple] = None) -> Reading:
    """Citations read from ``text`` (module comment above).  ``retrieved``: the row's
    retrieved_ids (rank order); ``known``: containers of further chunk ids (``in`` tested);
    ``patterns``: (source, regex) pairs, None for the built-in ones.  Never raises on text: a
    text it cannot read has no citations (read_problem names it)."""
    try:
        return _read_citations(text, retrieved, known, patterns)
    except Exception as exc:          # noqa: BLE001 - a reader's bug must not end the run (issue 44)
        read_problem(problem_text("citation markers", exc))
        return Reading(text, [], [])


def _read_citations(text: str, retrieved, known, patterns: Optional[tuple]) -> Reading:
    """read_citations: the text is read in its text_form (fullwidth brackets, any script's
    digits); offsets into it are offsets into the text, which the claim is cut from.  Time
    linear in the text: the candidates of every pattern are merged as they are found (never
    all held), a sources list is looked for once per line (_first_list), and at most
    MAX_MARKERS markers are read."""
    needs: tuple = ()
    form = text if text.isascii() else text_form(text)
    if patterns is None:
        patterns = citation_patterns()
        if not _CITE_TRIGGER.search(form):
            return Reading(text, [], [])
        needs = _CITE_NEEDS
    if not patterns or not text:
        return Reading(text, [], [])
    res = _Resolver(retrieved, known)
    streams = []          # per pattern: (start, -end, order, match), in order
    head = None           # (start, end, items) of the sources list
    for order, (_, rx) in enumerate(patterns):
        if needs and not any(ch in form for ch in needs[order]):
            continue
        if "sources" in rx.groupindex:
            got = _first_list(form, rx, res, head[0] if head is not None else None)
            if got is not None:
                head = got
            continue
        streams.append(_candidates(rx, form, order))
    cut = head[0] if head is not None else len(text)
    cits: Dict[str, None] = {}
    bad: Dict[str, None] = {}
    parts = []
    pos = last = read = 0
    for start, neg_end, _, m in heapq.merge(*streams):
        end = -neg_end
        if start < last or end > cut:
            continue
        refs = _marker_refs(m, res)
        if refs is None:
            continue
        read += 1
        if read > MAX_MARKERS:
            read_problem("citation markers past the first %d were not read (they stay in the claim)" % MAX_MARKERS)
            break
        s = start
        while s > pos and text[s - 1] in " \t":
            s -= 1
        if s > pos:
            parts.append(text[pos:s])
        pos = last = end
        for ok, v in refs:
            (cits if ok else bad)[v] = None
    if not read and head is None:
        return Reading(text, [], [])
    parts.append(text[pos:cut])
    if head is not None:
        for ok, v in head[2]:
            (cits if ok else bad)[v] = None
    claim = "".join(parts).strip()
    if head is not None and text[head[1]:].strip():          # prose after the list stays
        claim = (claim + "\n\n" + text[head[1]:].strip()).strip()
    return Reading(claim, list(cits), list(bad))


def _candidates(rx, text: str, order: int):
    """(start, -end, order, match) of each match of ``rx`` in ``text``, in order (the sort key
    of the candidates of every pattern: earliest, then longest, then the pattern listed first)."""
    for m in rx.finditer(text):
        yield m.start(), -m.end(), order, m


def _first_list(text: str, rx, res, before: Optional[int]):
    """(start, end, references) of the first header of ``rx`` in ``text`` (before offset
    ``before``) whose list has an item with a reference's shape, None when none has.  A
    header's list is every line after it, so a header is tried only when the rest of its
    own line or a later line has that shape (_source_line, read once per line): a text of
    thousands of headers costs one pass.  The rests of lines after headers on one line are
    read up to a budget of characters (a warning names the row past it)."""
    shaped: Optional[List[int]] = None      # starts of the lines that have a reference's shape
    budget = 4 * len(text) + 4096
    for m in rx.finditer(text):
        if before is not None and m.start() >= before:
            break
        eol = text.find("\n", m.end())
        eol = len(text) if eol < 0 else eol
        budget -= eol - m.end()
        if budget < 0:
            read_problem("sources lists past %d characters of headers were not read" % (4 * len(text) + 4096))
            return None
        rest = text[m.end():eol].strip()
        if not (rest and _source_line(rest, res)):
            if shaped is None:
                shaped = _shaped_lines(text, res)
            if bisect_left(shaped, eol + 1) == len(shaped):
                continue                       # no line after the header has a reference's shape
        items = _source_items(text[m.end():], res)
        if items is not None:
            return (m.start(), m.end() + items[1], items[0])
    return None


def _shaped_lines(text: str, res) -> List[int]:
    """Start offsets of the lines of ``text`` that have a reference's shape (_source_line)."""
    out = []
    pos = 0
    for raw in text.split("\n"):
        ln = raw.strip()
        if ln and _source_line(ln, res):
            out.append(pos)
        pos += len(raw) + 1
    return out


class _Resolver:
    """References of one response resolved against its retrieved and known chunk ids."""

    def __init__(self, retrieved, known):
        self.ret = list(retrieved or ())
        self.retset = set(self.ret)
        self.known = [k for k in known if k]
        self.docs: Optional[Dict[str, List[str]]] = None

    def chunk(self, ref: str) -> bool:
        return ref in self.retset or any(ref in k for k in self.known)

    def doc(self, ref: str) -> List[str]:
        if self.docs is None:
            self.docs = {}
            for c in self.ret:
                self.docs.setdefault(c.split("#", 1)[0], []).append(c)
        return self.docs.get(ref, [])

    def rank(self, a: int, b: int, written: str) -> list:
        if b < a or b - a >= MAX_CITE_RANGE:
            return [(False, written)]
        return [(True, self.ret[n - 1]) if n <= len(self.ret) else (False, written) for n in range(a, b + 1)]

    def ref(self, piece: str, numbers: bool = True):
        """[(resolved?, id or text)] for one reference, None when it has no reference's shape."""
        p = piece.strip().strip("[]^\"'`*").strip()
        if "\u2020" in p:                      # 【1†source】
            p = p.split("\u2020", 1)[0].strip()
        if not p:
            return None
        if self.chunk(p):
            return [(True, p)]
        if numbers:
            m = _CITE_NUM.fullmatch(p)
            if m:
                a = int(m.group(1))
                return self.rank(a, int(m.group(2)) if m.group(2) else a, piece.strip())
        if "#" not in p:
            ids = self.doc(p)
            if ids:
                return [(True, c) for c in ids]
        elif not any(ch.isspace() for ch in p) and not p.startswith("#") and not p.endswith("#"):
            return [(False, piece.strip())]       # names a chunk that was not retrieved
        return None

    def whole(self, span: str):
        """[(True, id)] when ``span`` names a retrieved or known chunk or a retrieved
        document as written, whatever words and signs it holds; else None."""
        p = span.strip().strip("[]^\"'`*").strip()
        if not p:
            return None
        if self.chunk(p):
            return [(True, p)]
        ids = self.doc(p) if "#" not in p else []
        return [(True, c) for c in ids] or None

    def pieces(self, body: str, numbers: bool = True):
        """(written, references or None), one by one, of a reference list.  It is split at
        commas, semicolons, "&" and "and" unless it names a chunk or document whole; when a
        piece resolves to nothing, pieces joined across up to MAX_ID_JOIN separators that name
        a chunk or document as written are one id ("[billing-and-invoicing#p8, 2]"), the
        longest first, and an unresolved piece joined by "and" or "&" to its neighbours
        without blanks into an id-like "x#y" ("[q-and-a#p9]") is one unresolved id."""
        parts = _CITE_SPLIT.split(body)            # piece, separator, piece, ...
        if len(parts) > 1:
            r = self.whole(body)
            if r is not None:
                yield body.strip(), r
                return
        simple = []
        for piece in parts[::2]:
            r = self.ref(piece, numbers) if piece.strip() else []      # "6, 7, and 9"
            if r is None or not all(ok for ok, _ in r):
                break
            if r:
                simple.append((piece.strip(), r))
        else:
            yield from simple
            return
        yield from self._joined(parts, numbers)

    def _joined(self, parts, numbers):
        i, n = 0, len(parts)
        while i < n:
            hit = None
            for j in range(min(n - 1, i + 2 * MAX_ID_JOIN), i, -2):
                span = "".join(parts[i:j + 1])
                r = self.whole(span)
                if r is not None:
                    hit = (j, span, r)
                    break
            if hit is None and not parts[i].strip():
                i += 2
                continue
            if hit is None:
                r = self.ref(parts[i], numbers)
                hit = (i, parts[i], r) if r is not None else (_id_like(parts, i) or (i, parts[i], None))
            yield hit[1].strip(), hit[2]
            i = hit[0] + 2

    def refs(self, body: str, numbers: bool = True):
        out = []
        for _, r in self.pieces(body, numbers):
            if r is None:
                return None
            out.extend(r)
        return out or None


def _id_like(parts, i):
    """(index of the last piece, span, [(False, span)]) for the longest span from piece i whose
    pieces are joined by "and" or "&" without blanks into an id's shape ("x#y"), or None."""
    best = None
    for j in range(i + 2, min(len(parts), i + 2 * MAX_ID_JOIN + 1), 2):
        if parts[j - 1].strip().lower() not in ("&", "and"):
            break
        span = "".join(parts[i:j + 1]).strip()
        if any(ch.isspace() for ch in span):
            break
        if "#" in span and not span.startswith("#") and not span.endswith("#"):
            best = (j, span, [(False, span)])
    return best


def _marker_refs(m, res: _Resolver):
    """[(resolved?, id or text)] of one pattern match, or None when it is no marker."""
    g = m.groupdict()
    written = m.group(0).strip()
    if g.get("doc") is not None:
        d, page = g["doc"].strip(), g["page"]
        for cid in ("%s#p%s" % (d, page), "%s#%s" % (d, page), "%s#page%s" % (d, page)):
            if res.chunk(cid):
                return [(True, cid)]
        ids = res.doc(d)
        if ids:
            return [(True, c) for c in ids]
        # "(Handbook, p. 3)" names a source that resolves to nothing; "(for example, page 3)" is prose
        return [(False, written)] if g.get("abbr") is not None else None
    if g.get("ref") is not None or g.get("ids") is not None:
        refs = res.refs(g["ref"], True) if g.get("ref") is not None else res.refs(g["ids"], False)
        return None if refs is None else [r if r[0] else (False, written) for r in refs]
    body = g.get("cite")
    if body is None:
        body = m.group(1) if m.re.groups else m.group(0)
    out = []
    for piece, r in res.pieces(body):
        out.extend(r or [(False, piece)])
    return out or [(False, written)]


def _source_items(body: str, res: _Resolver):
    """(references, length of the list) of a sources list (``body``: the text after its
    header), or None when no item has the shape of a reference (then it is prose, not a
    list).  The list ends at a line after a blank line that is no reference ("Let me know
    if ..."): that text stays in the claim."""
    out: list = []
    shaped = False
    pos = 0
    blank = False
    end = len(body)
    for raw in body.split("\n"):
        start, pos = pos, pos + len(raw) + 1
        ln = raw.strip()
        if not ln:
            blank = True
            continue
        after_blank, blank = blank, False
        got = _source_line(ln, res)
        if got:
            shaped = True
            out.extend(got)
        elif after_blank and shaped:
            end = start
            break
        else:
            out.append((False, ln.lstrip("-*\u2022+> \t")[:80]))
    return (out, end) if shaped else None


def _source_line(ln: str, res: _Resolver) -> list:
    """The references of one line of a sources list (``ln``: stripped, not empty); empty when
    it has no reference's shape."""
    item = ln.lstrip("-*\u2022+> \t")
    whole = res.refs(item)
    if whole is not None:                 # "[1], [3]", "doc#p3; doc#p5", "1-2"
        return whole
    got = []
    for tok in item.split():
        r = res.ref(tok.strip("()[]<>{}\"'`*.,;:"), numbers=False)
        if r is not None:
            got.extend(r)
    if not got:
        nums = _CITE_BRACKET_NUM.findall(item) or [m.group(1) for m in [_CITE_ITEM_NUM.match(item)] if m]
        for n in nums:
            got.extend(res.rank(int(n), int(n), "[%s]" % n))
    return got


# =========================================================================== referee/refusals.py
# Reading 2: refusals decided by the answer's bottom line (refusal, partial refusal, answer).

# ---- reading 2: refusals
# A response is a refusal when what it asserts is that it cannot answer and it gives no
# substantive answer; a caveat inside an answer keeps it an answer; a response that answers
# part and declines part is a partial refusal (an answer for the seed's metrics).  How it is
# read (docs/refusals.md has the figures on labelled real LLM output):
#   1. the token: the claim is the refusal token once Markdown, quotes, a label ("Answer:")
#      and closing punctuation are taken off ("**Not in context.**");
#   2. fast path: no decline cue in the text -> an answer;
#   3. sentences: each is a decline (a cue below, or a [scorer] refusal/cutoff pattern), a
#      pleasantry or pointer elsewhere ("you can check the official website"), or content;
#      declines and pointers only -> a refusal; no decline -> an answer;
#   4. both: the bottom line decides (read_refusal): content first is an answer unless a
#      firm decline concludes it; a decline first is a refusal unless a contrast ("but",
#      "however") brings content after it; an answer with a firm decline after its content
#      is a partial refusal;
#   5. an English response that opens with a decline or a disclaimer and goes on with content
#      is decided by REFUSAL_MODEL instead (fitted on labelled LLM output; below).
# Sentences are cut by split_sentences (one splitter with reading 4), then by line.
# Texts longer than REFUSAL_WINDOW characters are read as their first and last halves of
# it: a response asserts its bottom line at its start or its end.

REFUSAL_WINDOW = 4000
KIND_ANSWER, KIND_REFUSAL, KIND_PARTIAL = "answer", "refusal", "partial_refusal"
READERS = ("builtin", "exact")

# The decline, disclaimer and pointer cues, their trigger words and the cue words of
# REFUSAL_MODEL's features are word data: lexicon.py, with the data that justified them.
_DIGIT_RX = re.compile(r"\d")
_PROPER_RX = re.compile(r"(?<=[a-z,;:)] )[A-Z][a-z]+")
_TOKEN_TRIM_RX = re.compile(r"^[\s*_`~>#\"'\u2018\u2019\u201c\u201d\u00ab\u00bb()\[\]-]+|[\s*_`~\"'\u2018\u2019\u201c\u201d\u00ab\u00bb()\[\].!?,;:-]+$")
_WORDS_RX = re.compile(r"[^\W\d_]{2,}")
_BULLET_RX = re.compile(r"^\s*(?:[-*\u2022]|\d{1,3}[.)])\s+")
_DECLINE_GROUPS: tuple = ()      # (trigger words, compiled cues) per group: compiled when first read


def _decline_groups() -> tuple:
    global _DECLINE_GROUPS
    if not _DECLINE_GROUPS:
        _DECLINE_GROUPS = tuple((frozenset(_DECLINE_TRIGGERS[g].split()),
                                 re.compile("|".join("(?:%s)" % s for s in src), re.I | re.M))
                                for g, src in _DECLINE_SOURCES.items())
    return _DECLINE_GROUPS


_POINTER_RX = re.compile("|".join("(?:%s)" % s for s in _POINTER_SOURCES), re.I | re.M)
_DISCLAIMER_RX = re.compile("|".join("(?:%s)" % s for s in _DISCLAIMER_SOURCES), re.I | re.M)

# Punctuation to spaces (apostrophes and "/" kept: "can't", "n/a"), to split a text into words.
_SPLIT_TABLE = str.maketrans({c: " " for c in "!\"#$%&()*+,-.:;<=>?@[\\]^_`{|}~\u201c\u201d\u2018\u00ab\u00bb\u2013\u2014\u2026\u00bf\u00a1"})
_SPLIT_BYTES = bytes(32 if c in _SPLIT_TABLE and c < 128 else c for c in range(256))    # _SPLIT_TABLE on ASCII


_ANY_TRIGGER = frozenset(" ".join(_DECLINE_TRIGGERS.values()).split()) | _DISCLAIMER_TRIGGERS


def _decline_rxs(low: str) -> tuple:
    """The decline-cue groups whose trigger words the lower-cased text holds, and whether the
    disclaimer cues may apply."""
    words = (low.encode().translate(_SPLIT_BYTES).decode() if low.isascii() else low.translate(_SPLIT_TABLE)).split()
    if "n't" in low or "n\u2019t" in low:
        words.append("not")
    elif _ANY_TRIGGER.isdisjoint(words):     # no trigger word at all (most answers): no group
        return (), False
    words = set(words)
    groups = tuple(rx for trig, rx in (_DECLINE_GROUPS or _decline_groups()) if not trig.isdisjoint(words))
    return groups, not _DISCLAIMER_TRIGGERS.isdisjoint(words)


# _SPLIT_BYTES with the ASCII separators str.split() splits at and bytes.split() does not
# (\x1c-\x1f): the bytes words of an ASCII text are then its str words (plain_answer)
_SPLIT_WS_BYTES = bytes(32 if 0x1c <= c <= 0x1f else b for c, b in enumerate(_SPLIT_BYTES))
_ANY_TRIGGER_BYTES = frozenset(w.encode() for w in _ANY_TRIGGER if w.isascii())


def plain_answer(text: str, low: str, token: str, first: str) -> bool:
    """Whether ``read_refusal(text, token)`` is surely ``(answer, "", 0)``, found without the
    reader: ``text`` (stripped; ``low``: its lower-cased form) is ASCII, at most REFUSAL_WINDOW
    characters, holds no trigger word of any decline cue (_decline_rxs: its words, no "n't"),
    and cannot be the token (refusal_layout's "token" case needs ``first``, the token's first
    word, in a text at most 60 characters longer than the token).  False proves nothing."""
    if len(text) > REFUSAL_WINDOW or not low.isascii() or "n't" in low or "`" in low or low == token:
        return False
    if len(text) <= len(token) + 60 and (not token or first in low):
        return False
    return _ANY_TRIGGER_BYTES.isdisjoint(low.encode().translate(_SPLIT_WS_BYTES).split())


def token_form(text: str) -> str:
    """The claim with Markdown, quotes, a leading label and closing punctuation taken off, lower-cased."""
    t = text.strip()
    if len(t) > 200:
        return t.lower()
    prev = None
    while prev != t:
        prev = t
        t = _TOKEN_TRIM_RX.sub("", t)
        t = _TOKEN_LABEL_RX.sub("", t)
    return " ".join(t.lower().split())


def sentences(text: str) -> List[str]:
    """Sentences (``split_sentences``) and lines of ``text``; a contrast clause (", but ...") is a
    unit of its own; list bullets and Markdown emphasis are taken off."""
    out = []
    for start, end in split_sentences(text):
        for part in text[start:end].split("\n"):
            part = _BULLET_RX.sub("", part).strip(" \t*_#>")
            if _WORDS_RX.search(part):
                out.extend(c for c in _CLAUSE_RX.split(part) if c)
    return out


def refusal_layout(text, token: str = REFUSAL, extra=()) -> Tuple[str, List[str], List[str], int]:
    """How a response is laid out for the refusal reading: (case, sentences, kinds, pattern).

    case: "empty", "token" (the refusal token in any dress), "none" (no decline cue),
    "declines" (declines and pointers only) or "mixed" (declines and content); kinds per
    sentence: D decline, M pointer or pleasantry, C content; pattern: the index + 1 of the
    first ``extra`` (source, regex) pair that marked a decline (0: none).  The text is read in
    its text_form (Unicode spaces, apostrophes, fullwidth forms, any script's digits)."""
    t = text_form((text or "").strip())
    if not t:
        return "empty", [], [], 0
    tok = token.strip().lower()
    low = t.lower()
    if low == tok or (len(t) <= len(tok) + 60 and (not tok or tok.split(None, 1)[0] in low)   # (its first word: cheap)
                      and tok in " ".join(low.split()) and token_form(t) == tok):
        return "token", [], [], 0
    if len(t) > REFUSAL_WINDOW:
        half = REFUSAL_WINDOW // 2
        t = t[:half] + "\n" + t[-half:]
    groups, disclaim = _decline_rxs(low if len(t) <= REFUSAL_WINDOW else t.lower())
    if not groups and not disclaim and not extra:
        return "none", [], [], 0
    if (not any(rx.search(t) for rx in groups) and not (disclaim and _DISCLAIMER_RX.search(t))
            and not any(rx.search(t) for _, rx in extra)):
        cut = split_sentences(t[:300])
        first = t[cut[0][0]:cut[0][1]].strip() if len(cut) > 1 else t   # a cue that is a whole sentence: "Unknown. ..."
        if first == t or not any(rx.search(first) for rx in groups):
            return "none", [], [], 0
    sents = sentences(t)
    kinds = []
    pat = 0
    for s in sents:
        m = next((n for n, (_, rx) in enumerate(extra, 1) if rx.search(s)), 0) if extra else 0
        if m:
            kinds.append("D")
            pat = pat or m
        elif any(rx.search(s) for rx in groups):
            kinds.append("D")
        elif disclaim and _DISCLAIMER_RX.search(s):
            kinds.append("K")
        elif _POINTER_RX.search(s):
            kinds.append("M")
        else:
            kinds.append("C")
    if "D" not in kinds and "K" not in kinds:
        return "none", sents, kinds, 0
    return ("mixed" if "C" in kinds else "declines"), sents, kinds, pat


# The bottom line of a mixed English response (declines and content) is weighed by a logistic
# model over refusal_features: where the declines sit, whether the content opens with a
# contrast, carries a number or a name, hedges, points elsewhere, and the words of the
# declining and the content sentences.  Fitted on the fit halves of the labelled sets (and the
# written English rows) by ``make fit-refusal`` (bench/fit_refusal.py writes
# bench/refusal_fit.json; ``--check`` refits and verifies the numbers below byte for byte).
# A response that is not English (few English function words) keeps the rules above: the
# model has no features for it.  Figures: docs/refusals.md.
# Fitted by `make fit-refusal` (bench/fit_refusal.py; copied from bench/refusal_fit.json).
REFUSAL_MODEL = {"bias": 1.467212, "english": 0.1, "threshold": 0.42,
                 "weights": {
                             "content_commits": -0.180891, "content_concludes": -0.324767,
                             "content_digit": -0.768654, "content_generic": 0.243396,
                             "content_name": 0.659084, "content_share": -0.656985,
                             "content_sources": -0.364365, "content_words": -0.519401, "contrast": -1.861348,
                             "decline_hedge": -0.216656, "decline_precision": -0.141984,
                             "first_decline": 0.747063, "first_disclaimer": -0.747063,
                             "last_decline": 1.350169, "last_firm": 0.254163,
                             "last_firm_conclusion": 0.090279, "pointer": 0.060465}}
_FEATURE_WORD_RX = re.compile(r"[a-z][a-z'’]+")


def english_share(words: List[str]) -> float:
    """Share of ``words`` (lower-cased) that are common English function words."""
    return sum(1 for w in words if w in _EN_FUNCTION) / len(words) if words else 0.0


def refusal_features(sents: List[str], kinds: List[str]) -> Dict[str, float]:
    """Features of a mixed response (sentences and their kinds, as refusal_layout gives them)
    for REFUSAL_MODEL: structural ones by name, and "d:WORD" / "c:WORD" for the words of the
    declining (and disclaimer) sentences and of the content sentences."""
    core = [(s, k) for s, k in zip(sents, kinds) if k != "M"]
    dec = [s for s, k in core if k in "DK"]
    con = [s for s, k in core if k == "C"]
    f = {}
    if core:
        first, last = core[0], core[-1]
        f["first_decline"] = 1.0 if first[1] == "D" else 0.0
        f["first_disclaimer"] = 1.0 if first[1] == "K" else 0.0
        f["last_decline"] = 1.0 if last[1] in "DK" else 0.0
        firm = last[1] == "D" and not _HEDGE_RX.search(last[0]) and not _PRECISION_RX.search(last[0])
        f["last_firm"] = 1.0 if firm else 0.0
        f["last_firm_conclusion"] = 1.0 if firm and _CONCLUSION_RX.match(last[0]) else 0.0
        i = next((n for n, (_, k) in enumerate(core) if k == "C"), None)
        f["contrast"] = 1.0 if i is not None and i > 0 and _CONTRAST_RX.match(core[i][0]) else 0.0
        f["content_share"] = len(con) / len(core)
    f["content_digit"] = 1.0 if any(_DIGIT_RX.search(s) for s in con) else 0.0
    f["content_name"] = 1.0 if any(_PROPER_RX.search(s) for s in con) else 0.0
    f["content_generic"] = 1.0 if any(_GENERIC_RX.search(s) for s in con) else 0.0
    f["decline_hedge"] = 1.0 if dec and all(_HEDGE_RX.search(s) for s in dec) else 0.0
    f["decline_precision"] = 1.0 if any(_PRECISION_RX.search(s) for s in dec) else 0.0
    f["pointer"] = 1.0 if "M" in kinds else 0.0
    f["content_commits"] = 1.0 if any(_COMMIT_RX.search(s) for s in con) else 0.0
    f["content_concludes"] = 1.0 if any(_CONCLUSION_RX.match(s) for s in con) else 0.0
    f["content_sources"] = 1.0 if any(_PASSAGE_RX.search(s) for s in con) else 0.0
    cw = _FEATURE_WORD_RX.findall(" ".join(con).lower())
    f["content_words"] = min(len(cw), 100) / 100.0
    for w in set(_FEATURE_WORD_RX.findall(" ".join(dec).lower())):
        f["d:" + w] = 1.0
    for w in set(cw):
        f["c:" + w] = 1.0
    return f


def weighed_layout(case: str, sents: List[str], kinds: List[str], english: float) -> bool:
    """Whether REFUSAL_MODEL decides a response of this layout: mixed, opening with a decline or a
    disclaimer, English."""
    if case != "mixed" or next(k for k in kinds if k != "M") == "C":
        return False
    return english_share(_FEATURE_WORD_RX.findall(" ".join(sents).lower())) >= english


def refusal_score(feats: Dict[str, float], model: Optional[dict] = None) -> float:
    """REFUSAL_MODEL's probability that a response with ``feats`` is a refusal."""
    model = model or REFUSAL_MODEL
    w = model["weights"]
    z = model["bias"] + math.fsum(w[k] * v for k, v in feats.items() if k in w)
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))


def read_refusal(text, token: str = REFUSAL, extra=(), model: Optional[dict] = None) -> Tuple[str, str, int]:
    """_read_refusal; never raises on text: a response it cannot read is read as an answer
    (read_problem names it)."""
    try:
        return _read_refusal(text, token, extra, model)
    except Exception as exc:          # noqa: BLE001 - a reader's bug must not end the run (issue 44)
        read_problem(problem_text("the refusal reading", exc))
        return KIND_ANSWER, "", 0


def _read_refusal(text, token: str, extra, model: Optional[dict]) -> Tuple[str, str, int]:
    """(kind, reason, pattern) for one response: kind is answer / refusal / partial_refusal;
    reason a short text for the items file ("" for an answer without a caveat); pattern
    as in ``refusal_layout``.  The bottom line of a response holding both declines and
    content (sentences without pointers and pleasantries):

    * it leads with content: an answer, unless its last sentence is a firm decline that
      concludes ("Therefore, the answer cannot be determined ..."): a refusal; an answer
      whose last sentence is a firm decline is a partial refusal;
    * it leads with a decline or a disclaimer: a refusal, unless its first content opens
      with a contrast ("I cannot confirm the exact date, but it was in 1998") and it does
      not end with a decline (other than one about precision): an answer.

    A firm decline is a decline that neither hedges (_HEDGE_RX: "no definitive answer",
    "difficult to say", "not explicitly stated") nor doubts only precision (_PRECISION_RX)."""
    case, sents, kinds, pat = refusal_layout(text, token, extra)
    if case == "token":
        return KIND_REFUSAL, "the refusal token", 0
    if case in ("empty", "none"):
        return KIND_ANSWER, "", 0
    quote = next(s for s, k in zip(sents, kinds) if k in "DK")[:60]
    if case == "declines":
        return KIND_REFUSAL, "declines, answers nothing: " + quote, pat
    core = [(s, k) for s, k in zip(sents, kinds) if k != "M"]
    firm = [k == "D" and not _HEDGE_RX.search(s) and not _PRECISION_RX.search(s) for s, k in core]
    model = model or REFUSAL_MODEL
    if model["weights"] and weighed_layout(case, sents, kinds, model["english"]):
        p = refusal_score(refusal_features(sents, kinds), model)
        if p >= model["threshold"]:
            return KIND_REFUSAL, "its bottom line declines (%.2f): %s" % (p, quote), pat
        return KIND_ANSWER, "declines, then answers: " + quote, 0
    if core[0][1] == "C":
        last = core[-1][0]
        if firm[-1] and _CONCLUSION_RX.match(last):
            return KIND_REFUSAL, "concludes that it cannot answer: " + last[:60], pat
        if firm[-1]:
            return KIND_PARTIAL, "answers, then declines: " + last[:60], pat
        return KIND_ANSWER, "answer with a caveat: " + quote, 0
    if core[-1][1] == "D" and not _PRECISION_RX.search(core[-1][0]):
        return KIND_REFUSAL, "declines first and last: " + quote, pat
    if _CONTRAST_RX.match(next(s for s, k in core if k == "C")):
        return KIND_ANSWER, "declines, then answers: " + quote, 0
    return KIND_REFUSAL, "declines; what follows does not answer: " + quote, pat


# =========================================================================== referee/answers.py
# Reading 3: answer normalisation and matching against short gold answers.

# ---- reading 3: answer normalisation
# A response is matched against short gold answers (gold ``gold_answers``) after both sides go
# through one normaliser, ``answer_tokens``: NFKC and accents folded on Latin letters, words
# glued by a stripped link split ("byCyndi" -> "by Cyndi", "in1996" -> "in 1996"), case,
# punctuation and articles dropped, number words and digits one form ("twenty-one" -> 21,
# "3 million" -> 3000000, "first" -> 1, "1,000" -> 1000, "5th" -> 5), units one word ("km" /
# "kilometres", "%" / "percent", "$" / "dollars"), dates one order ("1998-03-05", "5 March 1998"
# and "March 5, 1998" give the same words; "Sept." is September) and word forms lightly stemmed
# (plural and possessive endings).  ``match_answer`` then applies the rule documented in
# docs/answer_correctness.md.  The rule's numbers below were fitted on the fit half of
# EVOUNA-NQ (questions with an even number) by ``make bench-answer-correct`` (bench/
# bench_answer_correct.py --fit); the held-out half's figures are in that document.  Each
# normalisation has a name in ANSWER_NORMS so that the benchmark can switch it off (ablation).
ANSWER_NORMS = ("unicode", "glue", "numbers", "ordinals", "thousands", "units", "dates", "stems",
                "prefix", "alternatives", "question", "years")
_ALL_NORMS = frozenset(ANSWER_NORMS)
ANSWER_PREFIX = 4          # fitted: two words of >= 4 letters match when their first 4 letters do
ANSWER_PART = 0.5          # fitted: a >= ANSWER_PART_MIN-word gold matches with this share of its key words
ANSWER_PART_MIN = 3        # ... (and its last key word); fewer words must all be present
MAX_ANSWER_CHARS = 20000   # limit: characters of a response (and of a gold answer) that are matched
MAX_NUMBER_VALUE = 10 ** 18   # limit: a run of number words stops before a word that would pass it
MAX_SCALED_DIGITS = 15     # limit: a number of more characters is not multiplied by a scale word ("million")

_GLUE_RX = re.compile(r"(?<=[a-z])(?=[A-Z][a-z])|(?<=[^\W\d_])(?=\d)|(?<=\d)(?=[^\W\d_]{2})")
_ISO_RX = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_POSS_RX = re.compile(r"['\u2019]s\b")
_ANS_TOKEN_RX = re.compile(r"\d+(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|[^\W\d_]+|[%$€£°]")
_PAREN_RX = re.compile(r"\([^()]*\)")


def _fold_accents(text: str) -> str:
    """Accents dropped from Latin letters only (a base letter below U+0250 plus combining marks);
    other scripts are left alone, where a mark can be a vowel."""
    out = []
    for ch in text:
        if ch < "\x80":
            out.append(ch)
            continue
        d = unicodedata.normalize("NFD", ch)
        if len(d) > 1 and d[0] < "\u0250" and all(unicodedata.combining(c) for c in d[1:]):
            out.append(d[0])
        else:
            out.append(ch)
    return "".join(out)


def _iso_date(m) -> str:
    y, mo, d = int(m.group(1)), int(m.group(2)), int(m.group(3))
    if 1 <= mo <= 12 and 1 <= d <= 31:
        return "%d %s %d" % (d, _MONTH_NAMES[mo - 1], y)
    return m.group(0)


def _light_stem(w: str) -> str:
    """Plural endings: "cities" -> "city", "boxes" -> "box", "cells" -> "cell" ("glass", "bus" kept)."""
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 4 and (w.endswith(("sses", "xes", "zes", "ches", "shes"))):
        return w[:-2]
    if len(w) > 3 and w[-1] == "s" and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


def _number_words(raw: List[str], i: int) -> Tuple[str, int]:
    """The value of the run of number words starting at raw[i] ("twenty one", "one hundred and
    five", "two million") and the index after it."""
    total = cur = 0
    j, n = i, len(raw)
    while j < n:
        x = raw[j]
        if x in _ONES:
            cur += _ONES[x]
        elif x in _TENS:
            cur += _TENS[x]
        elif x == "hundred" and j > i:
            if max(cur, 1) * 100 + total > MAX_NUMBER_VALUE:
                break                       # "one hundred hundred ... hundred": the run ends here
            cur = max(cur, 1) * 100
        elif x in _SCALES and j > i:
            if total + max(cur, 1) * _SCALES[x] > MAX_NUMBER_VALUE:
                break
            total += max(cur, 1) * _SCALES[x]
            cur = 0
        elif x == "and" and j > i and j + 1 < n and (raw[j + 1] in _ONES or raw[j + 1] in _TENS):
            pass
        else:
            break
        j += 1
    return str(total + cur), j


def answer_tokens(text: str, norms: frozenset = _ALL_NORMS) -> List[str]:
    """The normalised words of ``text`` for answer matching (see the section's comment)."""
    text = text[:MAX_ANSWER_CHARS]
    if "unicode" in norms:
        text = unicodedata.normalize("NFKC", text)
    if "glue" in norms:
        text = _GLUE_RX.sub(" ", text)
    text = text.casefold()
    if "unicode" in norms and not text.isascii():
        text = _fold_accents(text)
    if "stems" in norms:
        text = _POSS_RX.sub(" ", text)
    if "dates" in norms and "-" in text:
        text = _ISO_RX.sub(_iso_date, text)
    raw = _ANS_TOKEN_RX.findall(text)
    out: List[str] = []
    i, n = 0, len(raw)
    numbers, units, dates, stems = "numbers" in norms, "units" in norms, "dates" in norms, "stems" in norms
    while i < n:
        w = raw[i]
        if w[0].isdigit():
            if "," in w and "thousands" in norms:
                w = w.replace(",", "")
            if numbers and i + 1 < n and raw[i + 1] in _SCALES and raw[i + 1] != "hundred" \
                    and len(w) <= MAX_SCALED_DIGITS:
                v = float(w.replace(",", "")) * _SCALES[raw[i + 1]]
                w = str(int(v)) if v == int(v) else repr(v)
                i += 1
            if numbers and i + 1 < n and raw[i + 1] in _SUFFIXES:
                i += 1
            out.append(w)
            i += 1
            continue
        if numbers and (w in _ONES or w in _TENS):
            w, i = _number_words(raw, i)
            out.append(w)
            continue
        i += 1
        if w in _ARTICLES:
            continue
        if "ordinals" in norms and w in _ORDINALS:
            out.append(_ORDINALS[w])
            continue
        if dates and w in _MONTHS:
            w = _MONTHS[w]
        if units and w in UNITS:
            w = UNITS[w]
        elif stems:
            w = _light_stem(w)
        out.append(w)
    return out


def _is_year(t: str) -> bool:
    return len(t) == 4 and t.isdigit() and "1000" <= t <= "2100"


def _dates_in(toks: List[str]) -> List[Tuple[str, Optional[str], str]]:
    """(month, day or None, year) of each year preceded (within 3 words) by a month name."""
    out = []
    for i, t in enumerate(toks):
        if _is_year(t):
            win = toks[max(0, i - 3):i]
            months = [w for w in win if w in _MONTH_SET]
            if months:
                days = [w for w in win if w.isdigit() and len(w) <= 2]
                out.append((months[-1], days[-1] if days else None, t))
    return out


def gold_variants(gold: str, norms: frozenset = _ALL_NORMS) -> List[str]:
    """A gold answer and, with "alternatives", the gold without a parenthesised aside and each
    side of " or " ("hit points or health points")."""
    out = [gold]
    if "alternatives" in norms:
        bare = " ".join(_PAREN_RX.sub(" ", gold).split())
        if bare and bare != gold:
            out.append(bare)
        for g in list(out):
            if " or " in g:
                out.extend(p.strip() for p in g.split(" or ") if p.strip())
    return out


def _dates_by_year(dates: List[Tuple[str, Optional[str], str]]) -> Dict[str, tuple]:
    """_dates_in's dates by year: (months, months named without a day, (month, day) pairs)."""
    out: Dict[str, tuple] = {}
    for m, d, y in dates:
        months, dayless, days = out.setdefault(y, (set(), set(), set()))
        months.add(m)
        if d is None:
            dayless.add(m)
        else:
            days.add((m, d))
    return out


class AnswerMatch(NamedTuple):
    correct: bool
    recall: float       # share of the best gold answer's key words found in the response
    f1: float           # token F1 (SQuAD-style, normalised words) against the best gold answer
    gold: int           # index of the best gold answer in the list given


def match_answer(response: str, golds, question: Optional[str] = None,
                 norms: frozenset = _ALL_NORMS, partial: bool = True,
                 words: Optional[List[str]] = None) -> AnswerMatch:
    """_match_answer; never raises on text: a response or gold answer it cannot read gives a
    match of unknown value (NaN recall and F1: not measured; read_problem names it)."""
    try:
        return _match_answer(response, golds, question, norms, partial, words)
    except Exception as exc:          # noqa: BLE001 - a reader's bug must not end the run (issue 44)
        read_problem(problem_text("the answer against its gold answers", exc))
        return AnswerMatch(False, math.nan, math.nan, -1)


def _match_answer(response: str, golds, question: Optional[str], norms: frozenset, partial: bool,
                  words: Optional[List[str]]) -> AnswerMatch:
    """The response against short gold answers (the rule of docs/answer_correctness.md).

    A gold answer (or one of its variants) matches when, no date in the response contradicting
    a year-rule match:
      1. its normalised words occur in order, contiguous, in the response; or
      2. every key word occurs (key words: the gold's words less stopwords and, when the
         question is known, less the question's words; numbers compared exactly, other words
         of >= ANSWER_PREFIX letters by their first ANSWER_PREFIX letters); or
      3. (``partial``) it has >= ANSWER_PART_MIN key words, the last one occurs, and the first
         one or >= ANSWER_PART of them occur ("Zachary Quinto" for "Zachary John Quinto"); or
      4. (``partial``) it names a year (not a word of the question) and the response names it
         and no other month or day of that year ("2005" for "May 3, 2005", not "May 30, 2017" for "January 2017").
    Rules 2-3 also need every number of the gold in the response.  Best gold: correct first,
    then recall, then F1.  ``words``: answer_tokens(response, norms) when the caller has them
    (the scorer: Response.answer_words).  Rule 1 needs every word of the gold, so rule 2 holds
    whenever it does: only rule 2 is checked.  Time linear in the response and the gold
    answers: each variant's words are looked up, never searched for in the response."""
    a = answer_tokens(response, norms) if words is None else words
    aset = set(a)
    pre = ANSWER_PREFIX if "prefix" in norms else 0
    apre = {t[:pre] for t in a if pre and len(t) >= pre and not t[0].isdigit()} if pre else set()
    q = set(answer_tokens(question, norms)) if question and "question" in norms else set()
    counts = Counter(a)
    adates = None
    best = AnswerMatch(False, 0.0, 0.0, -1)
    seen: Dict[str, List[str]] = {}
    for gi, gold in enumerate(golds):
        for g in gold_variants(gold, norms):
            gt = seen.get(g)
            if gt is None:
                gt = seen[g] = answer_tokens(g, norms)
            if not gt:
                continue
            common = sum(min(c, counts[t]) for t, c in Counter(gt).items() if t in counts)
            f1 = 2.0 * common / (len(a) + len(gt)) if common else 0.0
            key = [t for t in gt if t not in STOPWORDS or (t in _MONTH_SET and "dates" in norms)] or gt
            key = [t for t in key if t not in q] or key
            hit = [t in aset or (len(t) >= pre > 0 and not t[0].isdigit() and t[:pre] in apre) for t in key]
            recall = sum(hit) / len(key)
            nums = all(t in aset for t in gt if t[0].isdigit())
            ok = nums and recall == 1.0
            if not ok and partial:
                if nums and len(key) >= ANSWER_PART_MIN and hit[-1] and (hit[0] or recall >= ANSWER_PART - 1e-9):
                    ok = True
                elif "years" in norms:
                    years = [t for t in gt if _is_year(t) and t not in q]
                    if years and aset.issuperset(years):
                        if adates is None:
                            adates = _dates_by_year(_dates_in(a))
                        ok = True
                        for (m, d, y) in _dates_in(gt):
                            same = adates.get(y)     # (months, months without a day, (month, day)s)
                            if same and not (m in same[1] or (m in same[0] if d is None else (m, d) in same[2])):
                                ok = False
            cand = AnswerMatch(ok, recall, f1, gi)
            if (cand.correct, cand.recall, cand.f1) > (best.correct, best.recall, best.f1):
                best = cand
    return best


# =========================================================================== referee/grounding.py
# Reading 4: sentences, meta-language and grounding of each sentence in the chunks.

# ---- reading 4: sentences, meta-language and grounding
# A generated answer is checked sentence by sentence (issue 29).  Each sentence, without
# citation markers, list numbers and lead-ins about the sources ("Based on the passages
# provided, ..."), is set aside when it only talks about the answer or the sources (meta:
# "The context does not mention X", "I hope this helps"; a clause of it declining to answer,
# "I could not find X, but ...", is set aside and the rest is checked); every other sentence
# is matched, order-insensitively, against the texts of the cited chunks (the retrieved ones
# when none is cited).  Support is lexical and explainable (grounding_features): content
# words with word forms folded (fold_word), numbers / amounts / dates / units normalised
# (number_values) and required, capitalised names required, negation and modality compared
# with the chunk sentence that supports the sentence best.  A number or a name found in no
# chunk makes the sentence unsupported whatever its score; otherwise the sentence is
# unsupported when GROUNDING_MODEL's logistic score (probability that people would flag it)
# reaches its threshold.  A chunk that is a JSON record is read field by field
# (structured_text), and an answer written from one (data-to-text) gets the model's
# "structured" weights and operating point.  The weights and thresholds are fitted on the fit
# halves of FaithBench and RAGTruth (people's hallucination spans) by ``make fit-grounding``
# (bench/fit_grounding.py, which writes bench/grounding_fit.json; ``--check`` refits and
# verifies the numbers below byte for byte).  Figures: docs/grounding.md.

GROUNDING_MODES = ("strict", "sentences")
MAX_GROUND_SENTENCES = 200      # sentences checked per answer (the rest are not read)
MAX_GROUND_CHARS = 100_000      # characters of one answer, and of one chunk, that grounding reads
MAX_NUMBER_DIGITS = 17          # significant digits a number is compared to (a double holds no more)
MAX_NUMBER_PROBES = 16          # chunk numbers tried per rounding cell of a sentence's number
GROUND_WORK = 50                # limit: chunk-sentence look-ups per character an answer's grounding reads
# Meta words and lead-ins, number / month / unit words, negation and modal words: lexicon.py.

# Fitted by `make fit-grounding` (bench/fit_grounding.py; copied from bench/grounding_fit.json).
GROUNDING_MODEL = {"bias": -1.075577, "share_cut": 0.6, "threshold": 0.46,
                   "weights": [-0.798433, 0.146558, -0.789178, -0.252742, 0.047479, 0.659302, 0.010067, 0.903203],
                   "structured": {"bias": -4.368732, "share_cut": 0.7, "threshold": 0.18,
                                  "weights": [0.090379, 0.184617, 0.398492, -0.091483, 2.283528, -0.097746,
                                              -0.109913, 2.513362]}}

_ENUM_RX = re.compile(r"^\(?\d{1,2}[.)] ")          # a list number that opens a sentence
_LISTNUM_RX = re.compile(r"(?m)^[ \t]{0,8}(?:[-*\u2022]|\(?\d{1,2}[.)]|\(?[a-z][.)])[ \t]{1,8}")


def claim_without_markers(text: str, patterns: Optional[tuple] = None) -> str:
    """The claim without citation markers and a sources list, for grounding: reading 1's
    reader with ``patterns`` (None: the built-in ones; (): none).  The scorer grounds a claim
    it has already read (Response.sentences: nothing read again); this is for direct calls."""
    return read_citations(text, (), (), patterns).claim


_TIME_RX = re.compile(r"\b(\d{1,2}):(\d{2})\b")
_WORD_RX = re.compile(r"[^\W\d_]+(?:[\x27\u2019-][^\W\d_]+)*")


_FOLDS: Dict[str, str] = {}


def fold_word(word: str) -> str:
    """A word's folded form: lower case, possessive and plural / verb endings removed, a
    final e dropped ("stays" / "stay", "moved" / "moving" / "move", "studies" / "study")."""
    got = _FOLDS.get(word)
    if got is None:
        if len(_FOLDS) > 200000:          # bounded: a stream of distinct words must not grow it
            _FOLDS.clear()
        got = _FOLDS[word] = _fold(word)
    return got


def _fold(w: str) -> str:
    w = _plain(w)
    if w.endswith("'s"):
        w = w[:-2]
    w = w.rstrip("'")
    n = len(w)
    if n > 4 and w.endswith(("ies", "ied")):
        w = w[:-3] + "y"
    elif n > 4 and w.endswith("sses"):
        w = w[:-2]
    elif n > 4 and w.endswith(("ches", "shes", "xes", "zes")):
        w = w[:-2]
    elif n > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    elif n > 5 and w.endswith("ing"):
        w = w[:-3]
    elif n > 4 and w.endswith("ed"):
        w = w[:-2]
    elif n > 5 and w.endswith("ly"):
        w = w[:-2]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    return w


def _sig(num: str) -> int:
    """Significant digits as written: all digits of a decimal or of an integer below 10000
    (years, counts); a larger integer's trailing zeros are taken as rounding ("38,900")."""
    digits = num.replace(",", "").replace(".", "").lstrip("0")
    if "." not in num and float(num.replace(",", "")) >= 10000:
        digits = digits.rstrip("0")
    return max(1, min(len(digits), MAX_NUMBER_DIGITS))


def number_values(text: str) -> List[Tuple[str, float, int, str]]:
    """The numbers of ``text`` as (as written, value, significant digits, unit): thousands
    separators removed, scale words applied ("$160 million" = 160000000), currency symbols,
    percent and units named; ISO dates give year, month and day.  Number words are left to
    content words (they are often not quantities: "one of the ...")."""
    out = []
    for m in _ISO_RX.finditer(text):
        for g, unit in ((1, ""), (2, "month"), (3, "")):
            out.append((m.group(0), float(m.group(g)), len(m.group(g).lstrip("0")) or 1, unit))
    text = _ISO_RX.sub(" ", text)
    for m in _TIME_RX.finditer(text):                  # 2:00 pm is the hour 2 (and 30 minutes)
        out.append((m.group(0), float(m.group(1)), len(m.group(1)), "time"))
        if m.group(2) != "00":
            out.append((m.group(0), float(m.group(2)), 2, "time"))
    text = _TIME_RX.sub(" ", text)
    for m in _NUM_RX.finditer(text):
        num = m.group("num")
        # a digit run inside a word (COVID-19's 19 is a number; "B2B" is not) and list markers
        if m.start("num") > 0 and text[m.start("num") - 1].isalpha():
            continue
        try:
            value = float(num.replace(",", ""))
        except ValueError:      # pragma: no cover - the pattern only matches numbers
            continue
        if value > 1e300:       # past a double (a 309-digit number): not read as a number
            read_problem("a number of %d digits could not be read" % len(num))
            continue
        unit = ""
        if m.group("cur"):
            unit = UNITS[m.group("cur")]
        elif m.group("pct"):
            unit = "percent"
        scale = (m.group("scale") or "").lower()
        if scale and not (len(scale) == 1 and not m.group("cur")):   # "5 m" is metres, "$5m" millions
            value = min(value * _SCALE[scale], 1e300)
        elif scale == "m":
            unit = "m"
        out.append((m.group(0).strip(), value, _sig(num), unit))
    return out


def _number_supported(value: float, sig: int, support: List[float]) -> bool:
    """The value, or a chunk value rounded to the sentence's significant digits ("$181.7
    million" for 181,674,817; "about 200" for 196).  ``support``: sorted, not negative.  Only
    the chunk values that can round to ``value`` are tried (bisect): those of its magnitude
    within half a rounding step of it, and those one magnitude below that round up to it
    ("996" to "1000"); at most MAX_NUMBER_PROBES of each."""
    i = bisect_left(support, value)
    if i < len(support) and support[i] == value:
        return True
    if not value or value < 0:
        return False
    sig = max(1, min(sig, MAX_NUMBER_DIGITS))
    mag = math.floor(math.log10(value))
    q = 10.0 ** (mag - sig + 1)
    tol = 1e-8 * value
    for lo, hi in ((max(value - q / 2, 10.0 ** mag * (1 - 1e-12)), value + q / 2), (value - q / 20, value)):
        j = bisect_left(support, lo - tol)
        end = min(bisect_right(support, hi + tol), j + MAX_NUMBER_PROBES)
        for w in support[j:end]:
            if w > 0 and _rounds_to(w, sig, value):
                return True
    return False


def _rounds_to(w: float, sig: int, value: float) -> bool:
    """Whether chunk value ``w`` rounded to ``sig`` significant digits is ``value``."""
    mag = math.floor(math.log10(w))
    q = 10.0 ** (mag - sig + 1)
    return abs(math.floor(w / q + 0.5) * q - value) <= 1e-9 * abs(value)


class _Chunkset:
    """What the chunks of one answer support: folded words, number values, and each chunk
    sentence's folded words with its negation and modality (for the best-aligned sentence),
    a sentence written twice kept once; ``index``: each folded word's chunk sentences (their
    numbers in ``sents``), so a sentence of the answer is compared with the chunk sentences
    that share a word with it, never with all of them."""
    __slots__ = ("words", "numbers", "sents", "pairs", "index", "acronyms", "structured", "texts")

    def __init__(self, texts: List[str]):
        self.words: set = set()
        self.numbers: List[float] = []
        self.sents: List[Tuple[frozenset, Dict[str, frozenset], frozenset]] = []
        self.index: Dict[str, List[int]] = {}
        self.acronyms: Optional[set] = None      # read when a sentence first has an all-capitals word in no chunk
        self.texts: List[str] = []
        self.pairs: set = set()         # adjacent content words (folded, _pair_keys) of each chunk sentence
        seen = set()
        self.structured = False         # a chunk is a JSON record: the answer is data-to-text
        for t in texts:
            t0 = t[:MAX_GROUND_CHARS]
            t = structured_text(t0)
            self.structured = self.structured or t is not t0
            self.texts.append(t)
            self.numbers.extend(v for _, v, _, _ in number_values(t))
            for s, e in split_sentences(t):
                low, entry, key, pairs = _chunk_sentence(t[s:e])
                folded = entry[0]
                self.words |= folded
                self.words.update(low)
                self.pairs.update(pairs)
                if key in seen:         # the same sentence again aligns no better and pairs nothing new
                    continue
                seen.add(key)
                for w in folded:
                    self.index.setdefault(w, []).append(len(self.sents))
                self.sents.append(entry)
            for w in _WORD_RX.findall(t):
                low = _plain(w)
                if low in _NUM_WORDS:              # "eight silver" supports "8 silver"
                    self.numbers.append(float(_NUM_WORDS[low]))

        self.numbers = sorted(set(self.numbers))
        self.words.update(_num_key(v) for v in self.numbers)


_CAMEL_RX = re.compile(r"(?<=[a-z])(?=[A-Z])|_+")
_RECORD_RX = re.compile(r"\s*[\[{]")
_HM_RX = re.compile(r"\b([01]?\d|2[0-3]):([0-5]?\d)\b")
MAX_STRUCT_DEPTH = 20           # levels of a JSON chunk read as fields (deeper values are left out)


def structured_text(text: str) -> str:
    """A chunk that is a JSON object or array (a record, as data-to-text answers are written
    from) read as sentences, one per field: "<key words>: <value>." with the path's keys split
    into words ("OutdoorSeating" -> "Outdoor Seating", with the joined pair "outdoorseating"
    dropped in as "takeout" for "Take Out"), true as "yes", false as "no <key words>" (a
    negation an answer must not drop), null left out, a 24-hour clock time also written as
    its 12-hour time ("16:30" -> "16:30 4:30 pm"); any other text unchanged."""
    if not _RECORD_RX.match(text):
        return text
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return text
    out: List[str] = []
    _fields(data, [], out, 0)
    return "\n\n".join(out) if out else text


def _key_words(key: str) -> Tuple[List[str], List[str]]:
    """A key's words ("OutdoorSeating" -> Outdoor, Seating) and its adjacent words joined
    ("outdoorseating")."""
    parts = [p for p in _CAMEL_RX.split(key) if p]
    return parts, ["%s%s" % (a.lower(), b.lower()) for a, b in zip(parts, parts[1:])]


def _clock12(m) -> str:
    h, mi = int(m.group(1)), int(m.group(2))
    return "%d:%02d %d:%02d %s" % (h, mi, h % 12 or 12, mi, "am" if h < 12 else "pm")


def _fields(x, path: List[Tuple[List[str], List[str]]], out: List[str], depth: int) -> None:
    """Append the sentences of value ``x`` at ``path`` (each key's words and joined words) to
    ``out``; a false field's negation bears on its key's last word, the head of the compound
    ("Outdoor outdoorseating no Seating")."""
    if depth > MAX_STRUCT_DEPTH or x is None:
        return
    if isinstance(x, dict):
        for k, v in x.items():
            _fields(v, path + [_key_words(str(k))], out, depth + 1)
        return
    if isinstance(x, list):
        for v in x:
            _fields(v, path, out, depth + 1)
        return
    words = [w for parts, joined in path for w in parts + joined]
    if isinstance(x, str) and x.strip().lower() in ("no", "none", "false"):
        x = False
    if isinstance(x, bool):
        parts, joined = path[-1] if path else ([], [])
        head = [w for p, j in path[:-1] for w in p + j]
        if x:
            out.append("%s." % " ".join(words + ["yes"]))
        else:
            out.append("%s." % " ".join(head + parts[:-1] + joined + ["no"] + parts[-1:]))
        return
    value = str(x)
    if isinstance(x, str) and len(value) < 40:
        value = _HM_RX.sub(_clock12, value)
    if words:
        value = "%s: %s" % (" ".join(words), value)
    out.append(value + ("" if value.rstrip().endswith((".", "!", "?")) else "."))


def _chunk_sentence(sent: str) -> tuple:
    """What one chunk sentence supports: (its words, (folded words, negation / modality marks,
    negation zone), the key of that entry, its adjacent content-word pairs)."""
    low = _words(sent)
    entry = (frozenset(fold_word(w) for w in low), _marks(sent), _neg_zone(low))
    return low, entry, (entry[0], frozenset(entry[1].items()), entry[2]), _pair_keys(_content_seq(sent))


def _content_seq(text: str) -> List[str]:
    """The folded content words of ``text`` in order, as grounding_features reads a sentence's
    (numbers, stopwords, meta, negation, modal and clock words and short words left out)."""
    if _DIGIT_RX.search(text):
        text = _without_numbers(text)
    toks = _WORD_RX.findall(text)
    if len(_CONTENT) > 200000:          # bounded, as _FOLDS
        _CONTENT.clear()
    for tok in toks:
        if tok not in _CONTENT:
            _CONTENT[tok] = _content_word(tok)
    return [c for c in map(_CONTENT.__getitem__, toks) if c]


_DIGITS_RX = re.compile(r"\d+")


def _without_numbers(text: str) -> str:
    """``_NUM_RX.sub(" ", text)`` for the words it leaves: each number (with its percent and
    scale words) blanked, the pattern tried only where a run of digits starts (left to right,
    as sub finds them), not at every character."""
    parts = []
    pos = 0
    for d in _DIGITS_RX.finditer(text):
        if d.start() < pos:
            continue
        m = _NUM_RX.match(text, d.start())
        if m is None:
            continue
        parts.append(text[pos:m.start()])
        parts.append(" ")
        pos = m.end()
    parts.append(text[pos:])
    return "".join(parts)


def _content_word(tok: str) -> str:
    """A word's folded form when it is a content word, else ""."""
    low = _plain(tok)
    if low in _CLOCK or low in STOPWORDS or low in META_WORDS or len(low) < 3 and not tok.isupper() \
            or low in _NEG or low in _MODAL:
        return ""
    return fold_word(low)


_CONTENT: Dict[str, str] = {}


_RUN_JOINERS = frozenset(("of", "and", "the", "for", "de"))
MAX_ACRONYM = 6         # letters of an acronym read from a run of capitalised words


def _acronyms(text: str) -> set:
    """The acronyms a text's names support, lower case: the initials of each run of 2 to
    MAX_ACRONYM capitalised words separated by spaces only ("United Nations Security
    Council" -> "un", "unsc", "nsc", ...), with and without the joining words of, and, the,
    for, de ("Department of Justice" -> "doj" and "dj")."""
    out: set = set()
    run: List[Tuple[str, bool]] = []       # (initial, joining word)
    end = -1
    for m in _WORD_RX.finditer(text):
        w = m.group(0)
        joined = end >= 0 and m.start() > end and text[end:m.start()].isspace()
        if not joined:
            _run_acronyms(run, out)
            run = []
        if w[0].isupper() and not w.isupper() or (w.isupper() and len(w) == 1):
            run.append((w[0].lower(), False))
        elif w in _RUN_JOINERS and run:
            run.append((w[0], True))
        else:
            _run_acronyms(run, out)
            run = []
        end = m.end()
    _run_acronyms(run, out)
    return out


def _run_acronyms(run: List[Tuple[str, bool]], out: set) -> None:
    while run and run[-1][1]:
        run = run[:-1]
    run = run[:4 * MAX_ACRONYM]
    for i in range(len(run)):
        if run[i][1]:
            continue
        for j in range(i + 2, min(len(run), i + 2 * MAX_ACRONYM) + 1):
            if run[j - 1][1]:
                continue
            part = run[i:j]
            full = "".join(c for c, _ in part)
            caps = "".join(c for c, joiner in part if not joiner)
            for a in (full, caps):
                if 2 <= len(a) <= MAX_ACRONYM:
                    out.add(a)


def _name_found(tok: str, low: str, cs: "_Chunkset") -> bool:
    """Whether a capitalised word found in no chunk is still a name the chunks hold: an
    acronym of a run of their capitalised words ("UN" for "United Nations"), or a form
    derived from a chunk word of at least five letters by at most three more letters making
    up at most 30% of it ("Venezuelan" / "Venezuela", "Pennsylvanians" / "Pennsylvania")."""
    if tok.isupper():
        if cs.acronyms is None:
            cs.acronyms = set().union(*[_acronyms(t) for t in cs.texts])
        if low in cs.acronyms:
            return True
    n = len(low)
    return any(low[:n - k] in cs.words for k in (1, 2, 3) if n - k >= 5 and n - k >= 0.7 * n)


def _marks(text: str) -> Dict[str, frozenset]:
    """Negation and modality by the word they bear on: for each negator or modal (written in
    lower case: "May" is a month or a name), the next content word (folded) within three
    words gets "not" or the modal's class ("must submit" -> {"submit": {"must"}}, "may not
    apply" -> {"apply": {"may", "not"}})."""
    out: Dict[str, set] = {}
    raw = _WORD_RX.findall(text)
    words = [_plain(w) for w in raw]
    for i, w in enumerate(words):
        mark = "not" if w in _NEG or w.endswith("n't") else (_MODAL.get(w) if raw[i].islower() else None)
        if mark is None:
            continue
        for v in words[i + 1:i + 4]:
            if v in _NEG or v in _MODAL or v in STOPWORDS or len(v) < 3:
                continue
            out.setdefault(fold_word(v), set()).add(mark)
            break
    return {k: frozenset(v) for k, v in out.items()}


def _neg_zone(words: List[str]) -> frozenset:
    """Folded words at most five words after or two before a negator: a negation in one text
    agrees with the other when the word it bears on lies in the other's zone."""
    out = set()
    for i, w in enumerate(words):
        if w in _NEG or w.endswith("n't"):
            out.update(fold_word(v) for v in words[max(0, i - 2):i + 6])
    return frozenset(out)


def _num_key(v: float) -> str:
    return "#%r" % v


def _plain(text: str) -> str:
    """Lower case without accents ("Café" / "cafe")."""
    text = text.lower().replace("\u2019", "'")
    if text.isascii():
        return text
    return "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))


def _words(text: str) -> List[str]:
    return _WORD_RX.findall(_plain(text))


_CHUNKSETS: Dict[Tuple[str, ...], _Chunkset] = {}


def chunkset(texts: List[str]) -> _Chunkset:
    """The support of ``texts``, cached (bounded) by the texts themselves."""
    key = tuple(texts)
    cs = _CHUNKSETS.get(key)
    if cs is None:
        if len(_CHUNKSETS) > 4096:
            _CHUNKSETS.clear()
        cs = _CHUNKSETS[key] = _Chunkset(texts)
    return cs


def meta_kind(sentence: str) -> Optional[str]:
    """Why a sentence is set aside (it talks only about the answer or the sources), or None.
    A sentence ending in a colon introduces what follows: it is meta when its words are
    words about the answer (INTRO_WORDS too: "Here is a concise summary of the passage:")."""
    if _META_SENT_RX.search(sentence):
        return "meta"
    rest = _LEADIN_RX.sub("", sentence, count=1)
    intro = rest.rstrip().endswith(":")
    words = [w for w in _words(rest) if w not in STOPWORDS and w not in META_WORDS and len(w) > 1
             and not (intro and w in INTRO_WORDS)]
    if not words and not _DIGIT_RX.search(rest):
        return "meta"
    return None


def checked_text(sentence: str) -> Optional[str]:
    """The part of ``sentence`` that makes a claim: its lead-in about the sources removed and
    its clauses that decline or talk about the sources set aside; None when nothing is left."""
    parts = [p for p in _G_CLAUSE_RX.split(sentence) if p and p.strip()]
    if len(parts) > 1:
        keep = [p for p in parts if meta_kind(p) is None]
        if not keep:
            return None
        if len(keep) < len(parts):
            sentence = ", ".join(keep)
    elif meta_kind(sentence) is not None:
        return None
    return _LEADIN_RX.sub("", sentence, count=1).strip() or None


ALIGNED_SHARE = 0.6     # share of a sentence's content words in one chunk sentence that makes it "copied"
# feature order of GROUNDING_MODEL["weights"]
GROUND_FEATURES = ("unsupported_share", "unsupported_words", "best_sentence_share", "pair_share",
                   "negation_mismatch", "modality_mismatch", "content_words", "novel_pairs")


class _Budget(Exception):
    """Grounding's work budget ran out (the answer's grounding is unknown)."""


def _best_sentence(fs: frozenset, cs: _Chunkset, work: Optional[list]) -> tuple:
    """(share, (words, marks, zone)) of the first chunk sentence holding the most of ``fs``
    (share 0.0 and None when none holds any), from the index: only the chunk sentences that
    hold a word of ``fs`` are counted.  ``work``: [look-ups left], spent (None: no limit)."""
    counts: Counter = Counter()
    for w in fs:
        ids = cs.index.get(w)
        if ids:
            if work is not None:
                work[0] -= len(ids)
                if work[0] < 0:
                    raise _Budget()
            counts.update(ids)
    if not counts:
        return 0.0, None
    top = max(counts.values())
    first = min(k for k, c in counts.items() if c == top)
    return top / len(fs), cs.sents[first]


def _together(a: str, b: str, cs: _Chunkset, work: Optional[list]) -> bool:
    """Whether one chunk sentence holds both folded words ``a`` and ``b`` (sorted index lists
    walked side by side)."""
    x, y = cs.index.get(a), cs.index.get(b)
    if not x or not y:
        return False
    if len(x) > len(y):
        x, y = y, x
    found = False
    if len(y) > 8 * len(x):              # one short list: look each of its entries up
        steps = 0
        for k in x:
            steps += 1
            if y[min(bisect_left(y, k), len(y) - 1)] == k:
                found = True
                break
    else:
        i = j = 0
        while i < len(x) and j < len(y):
            if x[i] == y[j]:
                found = True
                break
            if x[i] < y[j]:
                i += 1
            else:
                j += 1
        steps = i + j + 1
    if work is not None:
        work[0] -= steps
        if work[0] < 0:
            raise _Budget()
    return found


def grounding_features(text: str, cs: _Chunkset, work: Optional[list] = None) -> Tuple[List[float], List[str], List[str], List[str]]:
    """(features in GROUND_FEATURES order, missing numbers / names as written, unsupported
    content words, negation / modality differences from the copied chunk sentence) of one
    checked sentence against the chunks' support.  ``work``: [chunk-sentence look-ups left]
    for the whole answer, spent here; _Budget when it runs out (None: no limit)."""
    missing: List[str] = []
    why: List[str] = []
    shown = set()
    for raw, value, sig, unit in number_values(text):
        if unit == "month" and any(cs.words.__contains__(m) for m, v in MONTH_NUMBERS.items() if v == value):
            continue                               # 2021-03-05 and "March 5, 2021"
        if raw not in shown and not _number_supported(value, sig, cs.numbers):
            missing.append(raw)
            shown.add(raw)
    stripped = _NUM_RX.sub(" ", text)
    toks = _WORD_RX.findall(stripped)
    content: List[str] = []
    unsup: List[str] = []
    first = True
    caps = sum(1 for t in toks if t[0].isupper())
    title = caps > 3 and caps * 2 > len(toks)          # a heading in title case: no names read
    for tok in toks:
        low = _plain(tok)
        initial, first = first or title, False
        if low in _CLOCK:
            continue
        if low in STOPWORDS or low in META_WORDS or len(low) < 3 and not tok.isupper():
            continue
        f = fold_word(low)
        if low in _NEG or low in _MODAL:
            continue
        ok = f in cs.words or low in cs.words or (low in _NUM_WORDS and _num_key(float(_NUM_WORDS[low])) in cs.words)
        if not ok and "-" in low:
            ok = all(fold_word(p) in cs.words or p in cs.words for p in low.split("-") if p)
        if not ok and f in MONTH_NUMBERS:
            ok = any(m in cs.words for m, v in MONTH_NUMBERS.items() if v == MONTH_NUMBERS[f])
        ok = ok or tok[0].isupper() and _name_found(tok, low, cs)
        content.append(f)
        if not ok:
            unsup.append(tok)
            if tok[0].isupper() and not initial and low not in MONTH_NUMBERS or (len(tok) > 1 and tok.isupper()):
                missing.append(tok)
    n = len(content)
    fs = frozenset(content)
    best, bsent, pair = 0.0, None, 0.0
    if fs:
        best, bsent = _best_sentence(fs, cs, work)
        pairs = [(a, b) for a, b in zip(content, content[1:]) if a != b]
        if pairs:
            together = sum(1 for a, b in pairs if _together(a, b, cs, work))
            pair = together / len(pairs)
        else:
            pair = best
    # negation and modality are compared with the chunk sentence the sentence copies (most of
    # its content words in one chunk sentence), word by word: "may" for "must", "not" added
    # or dropped on a word both sentences have
    neg_mis = mod_mis = 0.0
    if bsent is not None and best >= ALIGNED_SHARE:
        words, cmarks, czone = bsent
        smarks = _marks(text)
        szone = _neg_zone(_words(text))
        for head in sorted(set(smarks) | set(cmarks)):      # sorted: the same words in the same order
            if head not in fs or head not in words:
                continue
            a, b = smarks.get(head, frozenset()), cmarks.get(head, frozenset())
            if ("not" in a and head not in czone) or ("not" in b and head not in szone):
                neg_mis = 1.0
                why.append("negation of %r differs from the chunk" % head)
            # the sentence's own modal must be the chunk's: "must" for "may" or for a plain
            # statement, "may" for "must"; a hedge ("may", "could") on a fact the chunk
            # states plainly claims less, not more
            am, bm = a - {"not"}, b - {"not"}
            if am and am != bm and not (not bm and am <= {"may"}):
                mod_mis = 1.0
                why.append("modality of %r differs from the chunk (%s / %s)" % (
                    head, "+".join(sorted(a - {"not"})) or "none", "+".join(sorted(b - {"not"})) or "none"))
    feats = [len(unsup) / n if n else 0.0, float(len(unsup)), best, pair, neg_mis, mod_mis, float(n),
             _novel_share(content, cs)]
    return feats, missing, unsup, why


def _novel_share(content: List[str], cs: _Chunkset) -> float:
    """novel_pairs: the share of adjacent content words (folded, in order) that are adjacent in
    no chunk sentence (0.0 without a pair)."""
    pairs = _pair_keys(content)
    return sum(1 for ab in pairs if ab not in cs.pairs) / len(pairs) if pairs else 0.0


def _pair_keys(seq: List[str]) -> List[str]:
    """Adjacent words as one string each ("a b": a folded word holds no space), not tuples:
    strings are not tracked by the garbage collector, and chunk sets hold many."""
    return list(map(" ".join, zip(seq, seq[1:])))


def _model_score(feats: List[float], model: dict) -> float:
    z = model["bias"] + math.fsum(w * x for w, x in zip(model["weights"], feats))
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))


def _blank(m) -> str:
    return " " * len(m.group(0))


def answer_sentences(claim: str, patterns: Optional[tuple] = None) -> List[Tuple[int, int, str, Optional[str]]]:
    """(start, end, sentence, checked text or None when set aside) of each sentence of an
    answer, offsets into the claim as read by reading 1 with ``patterns`` (markers and a sources
    list removed; list numbers blanked, not removed; the two are the same text when the claim
    holds no marker).  ``patterns`` as in claim_without_markers: () for a claim already read."""
    body = claim_without_markers(claim[:MAX_GROUND_CHARS], patterns)
    body = _LISTNUM_RX.sub(_blank, body)
    out = []
    for s, e in split_sentences(body)[:MAX_GROUND_SENTENCES]:
        sent = _ENUM_RX.sub("", " ".join(body[s:e].split()))
        out.append((s, e, sent, checked_text(sent)))
    return out


class Grounding(NamedTuple):
    checked: int
    supported: int
    unsupported: List[dict]    # {"sentence", "score", "missing", "why"}
    set_aside: int
    unknown: str = ""          # why the answer's grounding could not be read ("": it was)


def ground(claim: str, texts: List[str], model: Optional[dict] = None, sentences=None) -> Grounding:
    """Check each sentence of ``claim`` against ``texts`` (the evidence chunks).
    ``sentences``: answer_sentences of the claim when the caller has read them (the scorer:
    Response.sentences, of a claim read with the [scorer] citation patterns), else read here.
    Never raises on text: an answer whose grounding cannot be read (its look-ups past
    GROUND_WORK per character read, or any error) is unknown (``unknown`` says why;
    read_problem names it)."""
    try:
        return _ground(claim, texts, model, sentences)
    except _Budget:
        why = "grounding passed its work limit (%d look-ups per character)" % GROUND_WORK
    except Exception as exc:          # noqa: BLE001 - a reader's bug must not end the run (issue 44)
        why = problem_text("grounding", exc)
    read_problem(why)
    return Grounding(0, 0, [], 0, why)


def _ground(claim: str, texts: List[str], model: Optional[dict], sentences) -> Grounding:
    """ground; the look-ups of chunk sentences are limited to GROUND_WORK per character of
    the answer and the chunks it reads (a cap no real answer comes near)."""
    model = model or GROUNDING_MODEL
    cs = chunkset(texts)
    if cs.structured and "structured" in model:
        model = model["structured"]      # its own operating point: written from a record, not prose
    checked = supported = aside = 0
    bad: List[dict] = []
    work = [GROUND_WORK * (min(len(claim), MAX_GROUND_CHARS) + sum(min(len(t), MAX_GROUND_CHARS) for t in texts)) + 10000]
    for _, _, sent, text in (answer_sentences(claim) if sentences is None else sentences):
        if text is None:
            aside += 1
            continue
        feats, missing, unsup, flips = grounding_features(text, cs, work)
        if not feats[6] and not missing and not flips:
            aside += 1          # no content word, number or name ("No.", "Yes."): nothing to check
            continue
        support = 1.0 - _model_score(feats, model)
        checked += 1
        mostly = feats[0] > model["share_cut"]
        if missing or flips or mostly or support <= 1.0 - model["threshold"]:
            why = []
            if missing:
                why.append("%s found in no chunk" % ", ".join(missing[:10]))
            why.extend(flips[:3])
            if mostly:
                why.append("%d of its %d content words found in no chunk" % (round(feats[1]), round(feats[6])))
            if support <= 1.0 - model["threshold"]:
                why.append("support %.3f at or below %s" % (support, _fmt_num(round(1.0 - model["threshold"], 4))))
            bad.append({"sentence": sent[:300], "support": round(support, 4), "missing": missing[:10],
                        "unsupported_words": unsup[:10], "why": "; ".join(why)})
        else:
            supported += 1
    return Grounding(checked, supported, bad, aside)


# =========================================================================== referee/treccalc.py
# trec_eval's measures computed from one topic's relevance list (trec_eval's "res_rels"): the
# measures of ``-m all_trec`` beyond the ranking core of trec.py (infAP, Rprec_mult, utility,
# 11pt_avg, binG, G, gain-parameterised ndcg, ndcg_rel, Rndcg, map_cut, relative_P, set_*,
# num_nonrel_judged_ret, rbp, rbp_resid, unj, relstring).

# --------------------------------------------------------------------------- trec_eval's res_rels
#
# Each definition below follows trec_eval 10.0's (its m_<name>.c): written from those
# definitions, not copied.  A topic is its retrieved documents in trec_eval's order (score
# descending, then docno descending), cut to -M documents, each mapped to its qrels level:
# the level (>= 0) when judged, UNJUDGED (-2) when the qrels list it with a negative level
# (in the pool, not judged), NONPOOL (-1) when the qrels do not list it.  ``rel_level`` (-l)
# is the least level that is relevant.  Gains (ndcg, ndcg_rel, Rndcg, G, rbp) are the levels
# unless ``level=gain`` parameters change them; the ideal ordering takes every judged
# document of the topic by gain, largest first, while the gain is positive.

NONPOOL, UNJUDGED = -1, -2
INFAP_EPSILON = 0.00001                 # trec_eval's INFAP_EPSILON


class TopicRels:
    """One topic for trec_eval's measures: ``rels`` (each retrieved document's value, see
    above), ``counts`` (judged documents per level >= 0), the relevant ones (num_rel) and the
    relevant retrieved ones (num_rel_ret) at ``rel_level``."""
    __slots__ = ("rels", "counts", "max_level", "rel_level", "num_ret", "num_rel", "num_rel_ret")

    def __init__(self, ranking: List[str], judged: Dict[str, int], rel_level: int = 1) -> None:
        get = judged.get
        self.rels = [NONPOOL if g is None else (g if g >= 0 else UNJUDGED) for g in map(get, ranking)]
        counts: Dict[int, int] = {}
        for g in judged.values():
            if g >= 0:
                counts[g] = counts.get(g, 0) + 1
        self.counts = counts
        self.max_level = max(counts) if counts else -1
        self.rel_level = rel_level
        self.num_ret = len(self.rels)
        self.num_rel = sum(c for g, c in counts.items() if g >= rel_level)
        self.num_rel_ret = sum(1 for r in self.rels if r >= rel_level)


def _lround(x: float) -> int:
    """C's lround for x >= 0: nearest integer, halves away from zero."""
    whole = math.floor(x)
    return int(whole) + (1 if x - whole >= 0.5 else 0)


def infap(t: TopicRels) -> float:
    """infAP (Yilmaz and Aslam): at each judged relevant document at 0-based rank j > 0, 1/(j+1)
    + j/(j+1) * (judged above / j) * (relevant above + eps) / (judged above + 2 eps), where
    documents outside the pool count in "above" for the first ratio only as rank, and those in
    the pool but unjudged in neither ratio's judged part; / num_rel."""
    total = 0.0
    nonrel = rel = unjudged = 0
    for j, r in enumerate(t.rels):
        if r == NONPOOL:
            continue
        if r == UNJUDGED:
            unjudged += 1
            continue
        if r < t.rel_level:
            nonrel += 1
            continue
        rel += 1
        if j == 0:
            total += 1.0
        else:
            fj = float(j)
            total += 1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * ((rel - 1 + nonrel + unjudged) / fj) * \
                ((rel - 1 + INFAP_EPSILON) / (rel - 1 + nonrel + 2 * INFAP_EPSILON))
    return total / t.num_rel if t.num_rel else total


def bpref_value(t: TopicRels) -> float:
    """bpref at ``rel_level`` (gm_bpref's per-topic value): judged non-relevant are the levels
    from 0 below rel_level."""
    num_nonrel = sum(c for g, c in t.counts.items() if g < t.rel_level)
    total = 0.0
    nonrel = 0
    for r in t.rels:
        if r < 0:
            continue
        if r < t.rel_level:
            nonrel += 1
        elif nonrel:
            total += 1.0 - min(nonrel, t.num_rel) / min(num_nonrel, t.num_rel)
        else:
            total += 1.0
    return total / t.num_rel if t.num_rel else total


def rprec_mult(t: TopicRels, mult: float) -> float:
    """Precision after int(mult * num_rel + 0.9) documents (trec_eval's rounding), documents past
    the ranking counting as non-relevant; 0 when that cutoff is 0."""
    cut = int(mult * t.num_rel + 0.9)
    if cut <= 0:
        return 0.0
    top = t.rels[:cut]
    return sum(1 for r in top if r >= t.rel_level) / cut


def utility(t: TopicRels, params: Tuple[float, ...]) -> float:
    """p1 * relevant retrieved + p2 * non-relevant retrieved + p3 * relevant not retrieved +
    p4 * (-N 0 + relevant retrieved - retrieved - relevant): trec_eval's contingency utility."""
    a = t.num_rel_ret
    return (params[0] * a + params[1] * (t.num_ret - a) + params[2] * (t.num_rel - a)
            + params[3] * (0 + a - t.num_ret - t.num_rel))


def pt_avg(t: TopicRels, levels: Tuple[float, ...]) -> float:
    """Interpolated precision averaged over recall levels (11pt_avg): level L is reached at
    lround(L * num_rel) relevant documents; a level past the relevant retrieved adds 0; levels
    reached add the best precision at or after the rank that reaches them (level 0: the best
    precision of the ranking)."""
    cuts = [_lround(p * t.num_rel) for p in levels]
    cur = len(cuts) - 1
    while cur >= 0 and cuts[cur] > t.num_rel_ret:
        cur -= 1
    best = t.num_rel_ret / t.num_ret if t.num_ret else 0.0
    found = t.num_rel_ret
    total = 0.0
    i = t.num_ret
    while i > 0 and found > 0:
        best = max(best, found / i)
        if t.rels[i - 1] >= t.rel_level:
            while cur >= 0 and found == cuts[cur]:
                total += best
                cur -= 1
            found -= 1
        i -= 1
    for _ in range(cur + 1):                # (one addition each, as trec_eval sums them)
        total += best
    return total / len(levels)


def bin_g(t: TopicRels) -> float:
    """binG: mean over the relevant documents of 1 / log2(2 + non-relevant ranked above)."""
    total = 0.0
    found = 0
    for i, r in enumerate(t.rels):
        if r >= t.rel_level:
            found += 1
            total += 1.0 / math.log2(3 + i - found)
    return total / t.num_rel if found else 0.0


class Gains:
    """Gain per level: the level itself, or a ``level=gain`` parameter; ``ideal`` is the ideal
    ordering's gains (the topic's judged documents by gain, largest first, while positive),
    ``top`` the largest gain (where trec_eval's walk down the ideal ordering starts)."""
    __slots__ = ("gain_of", "ideal", "top", "low", "high")

    def __init__(self, t: TopicRels, pairs: Tuple[Tuple[int, float], ...] = ()) -> None:
        given = dict(pairs)
        gain_of = {lvl: float(lvl) for lvl in range(t.max_level + 1) if lvl not in given} \
            if t.max_level <= 4096 else {lvl: float(lvl) for lvl in t.counts if lvl not in given}
        gain_of.update(given)
        entries = sorted(((g, t.counts.get(lvl, 0)) for lvl, g in gain_of.items()), key=lambda e: e[0])
        ideal: List[float] = []
        for g, n in reversed(entries):
            if n and g <= 0:
                break
            ideal.extend([g] * n)
        self.gain_of = gain_of
        self.ideal = ideal
        self.top = entries[-1][0] if entries else 0.0
        self.low = entries[0][0] if entries else 0.0
        self.high = self.top

    def of(self, r: int) -> float:
        return self.gain_of.get(r, 0.0)


def _dcg_parts(t: TopicRels, gains: Gains) -> Tuple[List[float], List[float]]:
    """(the ranking's gain at each rank, each rank's discount 1 / log2(rank + 1)) up to
    max(retrieved, ideal length)."""
    n = max(t.num_ret, len(gains.ideal))
    return [gains.of(r) for r in t.rels], [1.0 / math.log2(i + 2) for i in range(n)]


def ndcg_gains(t: TopicRels, gains: Gains) -> float:
    """nDCG with gains: the whole ranking's DCG / the ideal ordering's (0 when the ideal is 0)."""
    got, _ = _dcg_parts(t, gains)
    dcg = ideal = 0.0
    for i, g in enumerate(got):
        if g != 0:
            dcg += g / math.log2(i + 2)
    for i, g in enumerate(gains.ideal):
        ideal += g / math.log2(i + 2)
    return dcg / ideal if ideal > 0.0 else 0.0


def ndcg_rel(t: TopicRels, gains: Gains) -> float:
    """nDCG averaged over the relevant documents (positive gain): at each one retrieved, the
    nDCG at its rank; each one not retrieved, the nDCG at the end of the ranking."""
    dcg = ideal = total = 0.0
    n_ideal = len(gains.ideal)
    n_rel_ret = 0
    for i, r in enumerate(t.rels):
        g = gains.of(r)
        if g != 0:
            dcg += g / math.log2(i + 2)
        if i < n_ideal:
            ideal += gains.ideal[i] / math.log2(i + 2)
        if g > 0 and ideal > 0.0:
            total += dcg / ideal
            n_rel_ret += 1
    for i in range(t.num_ret, n_ideal):
        ideal += gains.ideal[i] / math.log2(i + 2)
    if ideal <= 0.0:
        return 0.0
    total += (n_ideal - n_rel_ret) * dcg / ideal
    return total / n_ideal if total > 0.0 else 0.0


def rndcg(t: TopicRels, gains: Gains) -> float:
    """nDCG averaged at the ranks where the ideal ordering's gain changes (and at the end of
    the ranking when it ends first); 0 when nothing is relevant."""
    if t.num_rel == 0:
        return 0.0
    ideal_list = gains.ideal
    n_ideal = len(ideal_list)
    dcg = ideal = total = 0.0
    points = 0
    old = cur = gains.top
    i = 0
    while i < t.num_ret and cur > 0.0:
        cur = ideal_list[i] if i < n_ideal else 0.0
        if cur != old:
            if ideal > 0.0:
                total += dcg / ideal
                points += 1
            old = cur
        g = gains.of(t.rels[i])
        if g != 0:
            dcg += g / math.log2(i + 2)
        if cur > 0.0:
            ideal += cur / math.log2(i + 2)
        i += 1
    if i < t.num_ret:
        for j in range(i, t.num_ret):
            g = gains.of(t.rels[j])
            if g != 0:
                dcg += g / math.log2(j + 2)
        if ideal > 0.0:
            total += dcg / ideal
            points += 1
    while cur > 0.0:
        cur = ideal_list[i] if i < n_ideal else 0.0
        if cur != old:
            if ideal > 0.0:
                total += dcg / ideal
                points += 1
            old = cur
        if cur > 0.0:
            ideal += cur / math.log2(i + 2)
        i += 1
    return total / points if points else 0.0


def g_measure(t: TopicRels, gains: Gains) -> float:
    """G: each retrieved document's gain / log2(2 + ideal cost so far - gain so far), summed,
    / the ideal ordering's total gain; the cost of a rank is the ideal gain there, at least 1."""
    ideal_list = gains.ideal
    n_ideal = len(ideal_list)
    got = cost = total = ideal_sum = 0.0
    cur = gains.top
    i = 0
    while i < t.num_ret and cur > 0.0:
        g = gains.of(t.rels[i])
        got += g
        cur = ideal_list[i] if i < n_ideal else 0.0
        if cur > 0.0:
            ideal_sum += cur
        cost += cur if cur >= 1.0 else 1.0
        if g != 0:
            total += g / math.log2(2 + cost - got)
        i += 1
    while i < t.num_ret:
        g = gains.of(t.rels[i])
        got += g
        cost += 1.0
        if g != 0:
            total += g / math.log2(2 + cost - got)
        i += 1
    for j in range(i, n_ideal):
        ideal_sum += ideal_list[j]
    return total / ideal_sum if ideal_sum > 0.0 else 0.0


def map_cut(t: TopicRels, k: int) -> float:
    """Average precision over the top k (relevant documents below k add 0) / num_rel."""
    if t.num_rel == 0:
        return 0.0
    total = 0.0
    found = 0
    for i, r in enumerate(t.rels[:k]):
        if r >= t.rel_level:
            found += 1
            total += found / (i + 1)
    return total / t.num_rel


def relative_p(t: TopicRels, k: int) -> float:
    """Relevant in the top k / min(k, num_rel): precision up to R, recall after."""
    if t.num_rel == 0:
        return 0.0
    return sum(1 for r in t.rels[:k] if r >= t.rel_level) / min(k, t.num_rel)


def unjudged_at(t: TopicRels, k: int) -> float:
    """unj_k: documents in the top k the qrels do not judge (not listed, or listed unjudged) / k."""
    return sum(1 for r in t.rels[:k] if r < 0) / k


def set_measure(t: TopicRels, family: str, x: float = 1.0) -> float:
    """The unranked measures of the whole retrieved set: set_P, set_relative_P, set_recall,
    set_map (rel_ret^2 / (ret * rel)) and set_F (x + 1) P R / (x P + R)."""
    a, ret, rel = t.num_rel_ret, t.num_ret, t.num_rel
    if family == "set_P":
        return a / ret if ret else 0.0
    if family == "set_relative_P":
        return a / min(ret, rel) if ret and rel else 0.0
    if family == "set_recall":
        return a / rel if rel else 0.0
    if family == "set_map":
        return (float(a) * float(a)) / (float(ret) * float(rel)) if ret and rel else 0.0
    if not a:                               # set_F
        return 0.0
    p, r = a / ret, a / rel
    return (x + 1.0) * p * r / (x * p + r)


def rbp(t: TopicRels, gains: Gains, p: float) -> float:
    """Rank-biased precision (1 - p) sum gain * p^(rank - 1), gains scaled to [0, 1] when one
    lies outside it ((g - least) / (largest - least))."""
    low, high = min(gains.gain_of.values(), default=0.0), max(gains.gain_of.values(), default=0.0)
    scale = low < 0 or high > 1
    total = 0.0
    weight = 1.0
    for r in t.rels:
        g = gains.of(r)
        if scale and r in gains.gain_of:
            g = (g - low) / (high - low)
        if g != 0:
            total += g * weight
        weight *= p
    return (1.0 - p) * total


def rbp_resid(t: TopicRels, p: float) -> float:
    """RBP's residual: p^retrieved + (1 - p) sum over the unjudged retrieved of p^(rank - 1), 0
    when every retrieved document is judged (trec_eval's definition)."""
    total = 0.0
    weight = 1.0
    unjudged = 0
    for r in t.rels:
        if r < 0:
            unjudged += 1
            total += weight
        weight *= p
    return weight + (1.0 - p) * total if unjudged else 0.0


def relstring(t: TopicRels, length: int) -> str:
    """The first ``length`` retrieved documents' levels, one character each: 0-9, '>' above 9,
    '-' not in the qrels, '.' listed unjudged."""
    out = []
    for r in t.rels[:max(0, length)]:
        out.append(">" if r > 9 else str(r) if r >= 0 else "-" if r == NONPOOL else ".")
    return "".join(out)


def extra_measure(t: TopicRels, family: str, cut: Optional[float], k: Optional[int], param):
    """The value of one measure of this module (``param``: the parsed parameters)."""
    if family == "infAP":
        return infap(t)
    if family == "gm_bpref":
        return bpref_value(t)
    if family == "Rprec_mult":
        return rprec_mult(t, cut)
    if family == "utility":
        return utility(t, param)
    if family == "11pt_avg":
        return pt_avg(t, param)
    if family == "binG":
        return bin_g(t)
    if family in ("G", "ndcg", "ndcg_rel", "Rndcg"):
        gains = Gains(t, param)
        return {"G": g_measure, "ndcg": ndcg_gains, "ndcg_rel": ndcg_rel, "Rndcg": rndcg}[family](t, gains)
    if family == "map_cut":
        return map_cut(t, k)
    if family == "relative_P":
        return relative_p(t, k)
    if family == "unj":
        return unjudged_at(t, k)
    if family.startswith("set_"):
        return set_measure(t, family, param[0] if param else 1.0)
    if family == "num_nonrel_judged_ret":
        return float(sum(1 for r in t.rels if 0 <= r < t.rel_level))
    if family in ("rbp", "rbp_resid"):
        levels = tuple((lvl, g) for lvl, g in param if lvl != "p")
        p = dict((k2, v) for k2, v in param if k2 == "p").get("p", 0.9)
        return rbp(t, Gains(t, levels), p) if family == "rbp" else rbp_resid(t, p)
    if family == "relstring":
        return relstring(t, int(param[0]) if param else 10)
    raise ValueError("not a measure of treccalc: %r" % family)


# =========================================================================== referee/trec.py
# trec_eval's measures (TREC mode: qrels and a run) and their names.

# --------------------------------------------------------------------------- trec_eval measures
#
# With --qrels/--run the scorer also computes trec_eval's own measures under trec_eval's names
# (``-m map -m ndcg_cut.10``, ``--measures map,P.5``) and can print them as trec_eval does
# (``--format trec``: ``measure<TAB>qid|all<TAB>value``, ``-q`` adds one block per query).
# Conventions are trec_eval's: a document is relevant when its level is >= 1 (-l N: >= N), the
# ranking is score descending then docno descending (-M N keeps its first N), every qrels
# topic counts (a topic the run forgot scores 0: trec_eval -c, which -c and --average all
# ask for and is the default), "all" is the mean over topics (the sum for the num_* counts,
# the geometric mean for gm_*).  Every measure of trec_eval 10.0's ``-m all_trec`` is here;
# its output equals trec_eval's expected outputs (tests/data/trec_eval_test) line for line.


class TrecMeasure(NamedTuple):
    """One trec_eval measure: its name, default cutoffs (() = none), how "all" is formed
    ("mean", "sum", "geomean": trec_eval's geometric mean with each value floored at GM_FLOOR,
    "text": runid, "count": num_q, "none": relstring, printed per topic only), a one-line
    description, whether -q prints it per topic, its parameters ("" none; "cut": integer
    cutoffs, NAME_K; "level": decimal cutoffs, NAME_0.20; "list": numbers, "pairs":
    level=gain, both printed NAME_<parameters as given>), a "list" measure's default numbers,
    and the direction of a bare gate on it."""
    name: str
    cutoffs: Tuple[float, ...]
    total: str
    description: str
    per_topic: bool = True
    param: str = ""
    defaults: Tuple[float, ...] = ()
    better: str = "higher"


_TREC_CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
_RECALL_LEVELS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
_R_MULTS = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)
GM_FLOOR = 0.00001                      # trec_eval's MIN_GEO_MEAN
_GAINS = " (gains: the levels, or level=gain parameters, e.g. NAME.1=3,2=9)"
T = TrecMeasure
#: The registry of trec_eval measures, in trec_eval 10.0's own output order (its measure
#: table): lines are printed in this order whatever the order of -m.
TREC_MEASURES: Tuple[TrecMeasure, ...] = (
    T("runid", (), "text", "the run's tag (the 6th field of its last line), all only", per_topic=False),
    T("num_q", (), "count", "topics evaluated (every qrels topic with --average all), all only", per_topic=False),
    T("num_ret", (), "sum", "documents retrieved"),
    T("num_rel", (), "sum", "relevant documents in the qrels (level >= 1, or -l)"),
    T("num_rel_ret", (), "sum", "relevant documents retrieved"),
    T("map", (), "mean", "average precision: the sum of the precision at the rank of each "
      "relevant retrieved document / num_rel (0 when num_rel is 0)"),
    T("gm_map", (), "geomean", "geometric mean over topics of average precision, each floored "
      "at 0.00001 (all only, as trec_eval)", per_topic=False),
    T("Rprec", (), "mean", "precision after num_rel documents (0 when num_rel is 0)"),
    T("bpref", (), "mean", "binary preference: mean over the relevant documents of 1 - "
      "min(judged non-relevant ranked above it, R) / min(R, N); unretrieved ones add 0"),
    T("recip_rank", (), "mean", "1 / rank of the first relevant document, 0 when none is retrieved"),
    T("iprec_at_recall", _RECALL_LEVELS, "mean", "interpolated precision at recall level L (0 to 1): "
      "the highest precision at any rank holding at least floor(L * num_rel + 0.5) relevant "
      "documents (trec_eval's rounding), 0 when none", param="level"),
    T("P", _TREC_CUTS, "mean", "relevant documents in the top K / K", param="cut"),
    T("relstring", (), "none", "the levels of the first N (default 10) documents, one character each "
      "(0-9, > above 9, - not in the qrels, . unjudged), per topic only", param="list", defaults=(10.0,)),
    T("recall", _TREC_CUTS, "mean", "relevant documents in the top K / num_rel (0 when num_rel is 0)",
      param="cut"),
    T("infAP", (), "mean", "inferred average precision (Yilmaz and Aslam) for sampled judgments"),
    T("gm_bpref", (), "geomean", "geometric mean over topics of bpref, each floored at 0.00001 (all only)",
      per_topic=False),
    T("Rprec_mult", _R_MULTS, "mean", "precision after int(M * num_rel + 0.9) documents", param="level"),
    T("utility", (), "mean", "p1 * relevant retrieved + p2 * non-relevant retrieved + p3 * relevant not "
      "retrieved + p4 * (-relevant not retrieved - non-relevant retrieved); default 1,-1,0,0",
      param="list", defaults=(1.0, -1.0, 0.0, 0.0)),
    T("11pt_avg", (), "mean", "interpolated precision averaged over the recall levels 0, 0.1, ..., 1 "
      "(or the numbers given), a level reached at lround(L * num_rel) relevant documents",
      param="list", defaults=_RECALL_LEVELS),
    T("binG", (), "mean", "mean over the relevant documents of 1 / log2(2 + non-relevant ranked above)"),
    T("G", (), "mean", "each document's gain / log2(2 + ideal gain so far - gain so far), summed, / the "
      "ideal total gain" + _GAINS, param="pairs"),
    T("ndcg", (), "mean", "sum of level / log2(rank + 1) over the whole ranking, divided by the "
      "same for the ideal ordering of the qrels (0 when nothing is relevant)" + _GAINS, param="pairs"),
    T("ndcg_rel", (), "mean", "nDCG averaged over the relevant documents (an unretrieved one: the "
      "nDCG of the whole ranking)" + _GAINS, param="pairs"),
    T("Rndcg", (), "mean", "nDCG averaged at the ranks where the ideal gain changes" + _GAINS, param="pairs"),
    T("ndcg_cut", _TREC_CUTS, "mean", "sum of level / log2(rank + 1) over the top K, divided "
      "by the same for the ideal ordering of the qrels (0 when nothing is relevant)", param="cut"),
    T("map_cut", _TREC_CUTS, "mean", "average precision over the top K", param="cut"),
    T("relative_P", _TREC_CUTS, "mean", "relevant documents in the top K / min(K, num_rel)", param="cut"),
    T("success", (1, 5, 10), "mean", "1 when a relevant document is in the top K, else 0", param="cut"),
    T("set_P", (), "mean", "relevant retrieved / retrieved"),
    T("set_relative_P", (), "mean", "relevant retrieved / min(retrieved, num_rel)"),
    T("set_recall", (), "mean", "relevant retrieved / num_rel"),
    T("set_map", (), "mean", "relevant retrieved squared / (retrieved * num_rel)"),
    T("set_F", (), "mean", "(x + 1) P R / (x P + R) of the retrieved set, x 1 by default", param="list",
      defaults=(1.0,)),
    T("num_nonrel_judged_ret", (), "sum", "judged non-relevant documents retrieved"),
    T("rbp", (), "mean", "rank-biased precision (1 - p) sum gain p^(rank - 1), p 0.9 (rbp.p=0.95)" + _GAINS,
      param="pairs"),
    T("rbp_resid", (), "mean", "rbp's residual: p^retrieved + (1 - p) sum over the unjudged retrieved of "
      "p^(rank - 1), 0 when all are judged", param="pairs", better="lower"),
    T("unj", (5, 10, 20), "mean", "documents in the top K the qrels do not judge / K", param="cut",
      better="lower"),
)
del T
_TREC_BY_NAME = {m.name: m for m in TREC_MEASURES}
_TREC_ORDER = {m.name: i for i, m in enumerate(TREC_MEASURES)}
_BY_LENGTH = sorted(_TREC_BY_NAME, key=len, reverse=True)
#: trec_eval's nicknames for sets of measures.
TREC_NICKNAMES: Dict[str, Tuple[str, ...]] = {
    "official": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                 "recip_rank", "iprec_at_recall", "P"),
    "all_trec": tuple(m.name for m in TREC_MEASURES),
    "set": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P", "set_recall",
            "set_relative_P", "set_map", "set_F"),
}
#: trec_eval's default (no -m): its "official" measures.
TREC_DEFAULT = TREC_NICKNAMES["official"]
#: -m all_trec: every measure above with its default cutoffs.
TREC_ALL = TREC_NICKNAMES["all_trec"]
#: Measures computed by trec_query itself (the others: treccalc.extra_measure).
_CORE = frozenset(("num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
                   "iprec_at_recall", "P", "recall", "ndcg_cut", "success"))


def _float_param(measure: TrecMeasure) -> bool:
    return measure.param == "level"


def trec_name(measure: TrecMeasure, cut: Optional[float]) -> str:
    """The output name: ``P_5``, ``iprec_at_recall_0.10``, ``map``."""
    if cut is None:
        return measure.name
    return "%s_%.2f" % (measure.name, cut) if _float_param(measure) else "%s_%d" % (measure.name, cut)


def _split_output_name(name: str) -> Tuple[Optional[str], str]:
    """``ndcg_cut_10`` -> (ndcg_cut, "10"); ``utility_2,-1,0,0`` -> (utility, "2,-1,0,0"): the
    longest measure name the output name starts with, and the rest; (None, "") if none."""
    for fam in _BY_LENGTH:
        if name.startswith(fam + "_") and len(name) > len(fam) + 1 and _TREC_BY_NAME[fam].param:
            return fam, name[len(fam) + 1:]
    return None, ""


def _trec_family(name: str) -> Tuple[str, Any]:
    """``P_5`` -> (P, 5); ``iprec_at_recall_0.10`` -> (iprec_at_recall, 0.1); ``map`` -> (map,
    None); ``utility_2,-1,0,0`` -> (utility, "2,-1,0,0")."""
    got = _FAMILY_OF.get(name)
    if got is None:
        got = (name, None)
        if name not in _TREC_BY_NAME:
            fam, tail = _split_output_name(name)
            if fam is not None:
                kind = _TREC_BY_NAME[fam].param
                got = (fam, float(tail) if kind in ("cut", "level") else tail)
        _remember(name, got)
    return got


def _remember(name: str, got: Tuple[str, Any]) -> None:
    if len(_FAMILY_OF) < 4096:         # names come from -m and the registry: few
        _FAMILY_OF.setdefault(name, got)


_FAMILY_OF: Dict[str, Tuple[str, Any]] = {}


def trec_sort_key(name: str) -> Tuple[int, float]:
    """trec_eval's line order: the measure's place in TREC_MEASURES, then its cutoff."""
    family, cut = _trec_family(name)
    return _TREC_ORDER.get(family, len(_TREC_ORDER)), cut if isinstance(cut, (int, float)) else -1.0


_NUMBER = r"[-+]?(?:[0-9]{1,12}(?:\.[0-9]{0,12})?|\.[0-9]{1,12})"


def _numbers(text: str) -> Optional[Tuple[float, ...]]:
    """``"1,-1,0,0"`` -> (1.0, -1.0, 0.0, 0.0); None when a part is not a plain decimal number."""
    parts = text.split(",")
    if not all(re.fullmatch(_NUMBER, p) for p in parts):
        return None
    return tuple(float(p) for p in parts)


def _pairs(text: str) -> Optional[Tuple[Tuple[Any, float], ...]]:
    """``"1=3,2=9,p=0.95"`` -> ((1, 3.0), (2, 9.0), ("p", 0.95)); None when malformed or a key repeats."""
    out = []
    for part in text.split(","):
        key, eq, value = part.partition("=")
        if not eq or not re.fullmatch(_NUMBER, value) or not re.fullmatch(r"[0-9]{1,6}|p", key):
            return None
        out.append((key if key == "p" else int(key), float(value)))
    return tuple(out) if len({k for k, _ in out}) == len(out) else None


def _list_ok(measure: TrecMeasure, values: Optional[Tuple[float, ...]]) -> bool:
    """The numbers a "list" measure takes: utility 4, set_F 1 (>= 0), relstring 1 (0 to 10000),
    11pt_avg 1 to 100 recall levels from 0 to 1."""
    if values is None:
        return False
    if measure.name == "utility":
        return len(values) == 4
    if measure.name == "11pt_avg":
        return 1 <= len(values) <= 100 and all(0.0 <= v <= 1.0 for v in values)
    return len(values) == 1 and 0.0 <= values[0] <= (10000.0 if measure.name == "relstring" else 1e6)


def _cutoffs(measure: TrecMeasure, params: str) -> Optional[List[float]]:
    """The cutoffs of ``P.5,10`` (integers from 1, a fraction dropped as trec_eval does:
    23.4 -> 23) or ``iprec_at_recall..1,.5`` (decimals: recall levels 0 to 1, Rprec_mult's
    multiples 0 to 1000); None when one is malformed."""
    cuts: List[float] = []
    for p in params.split(","):
        if measure.param == "level":
            rx = r"(?:0|1)?(?:\.[0-9]{1,6})?" if measure.name == "iprec_at_recall" else r"[0-9]{0,4}(?:\.[0-9]{1,6})?"
            if not re.fullmatch(rx, p) or p in ("", "."):
                return None
            v = float(p)
            if v > (1.0 if measure.name == "iprec_at_recall" else 1000.0):
                return None
            cuts.append(v)
        elif re.fullmatch(r"[1-9][0-9]{0,5}(?:\.[0-9]*)?", p):
            cuts.append(int(p.partition(".")[0]))
        else:
            return None
    return cuts


def _trec_split(spec: str):
    """``"P.5,10"`` -> (P, [5, 10], ""); ``"P_5"`` -> (P, [5], ""); ``"map"`` -> (map, [], "");
    ``"iprec_at_recall..10,.5"`` -> (iprec_at_recall, [0.1, 0.5], ""); ``"utility.2,-1,0,0"`` ->
    (utility, [], "2,-1,0,0"); ``"ndcg.1=3,2=9"`` -> (ndcg, [], "1=3,2=9"); None when ``spec``
    names no measure of TREC_MEASURES or its parameters are not the measure's."""
    spec = spec.strip()
    name, dot, params = spec.partition(".")
    measure = _TREC_BY_NAME.get(name)
    if measure is None:                     # the output spelling: P_5, utility_2,-1,0,0
        fam, params = _split_output_name(spec)
        if fam is None:
            return None
        measure, dot = _TREC_BY_NAME[fam], "."
    if dot and not params or params and not measure.param:
        return None
    if not params:
        return measure, [], ""
    if measure.param in ("cut", "level"):
        cuts = _cutoffs(measure, params)
        return None if cuts is None else (measure, cuts, "")
    ok = _pairs(params) is not None if measure.param == "pairs" else _list_ok(measure, _numbers(params))
    return (measure, [], params) if ok else None


def _unknown(spec: str) -> str:
    close = difflib.get_close_matches(spec.partition(".")[0], list(_TREC_BY_NAME) + list(TREC_NICKNAMES), n=1)
    measure = _TREC_BY_NAME.get(spec.strip().partition(".")[0])
    hint = ""
    if measure is not None and measure.param in ("cut", "level"):
        hint = " (%s takes %s cutoffs, e.g. %s.%s)" % (measure.name, "decimal" if measure.param == "level"
                                                    else "integer", measure.name, "0.2,0.5" if measure.param
                                                    == "level" else "5,10")
    elif measure is not None and measure.param:
        hint = " (%s takes %s)" % (measure.name, "level=gain pairs, e.g. %s.1=1,2=3" % measure.name
                                   if measure.param == "pairs" else "numbers: %s" % trec_help_params(measure))
    elif measure is not None:
        hint = " (%s takes no parameters)" % measure.name
    return "-m: unknown trec_eval measure %r%s%s; known: %s, %s" % (
        spec, "; did you mean %r?" % close[0] if close and measure is None else "", hint,
        ", ".join(_TREC_BY_NAME), ", ".join(TREC_NICKNAMES))


def trec_help_params(measure: TrecMeasure) -> str:
    return ",".join("%g" % v for v in measure.defaults)


def parse_trec_measures(specs: List[str]) -> List[str]:
    """trec_eval ``-m`` specs (``map``, ``P.5,10``, ``ndcg_cut.10``, ``utility.2,-1,0,0``; a
    nickname: ``official``, ``all_trec``, ``set``) -> output names, without repeats, in
    trec_eval's line order (``trec_sort_key``), whatever the order of the specs.  As trec_eval:
    a measure named without parameters has its defaults (``P``: P_5 ... P_1000); parameters
    given replace them (several -m of one cutoff measure add up).

    >>> parse_trec_measures(["ndcg_cut.10", "P.10,5", "map"])
    ['map', 'P_5', 'P_10', 'ndcg_cut_10']
    """
    errors: List[str] = []
    marked = set()
    cuts_of: Dict[str, List[float]] = {}
    text_of: Dict[str, str] = {}
    for spec in specs:
        if spec.strip() in TREC_NICKNAMES:
            marked.update(TREC_NICKNAMES[spec.strip()])
            continue
        parsed = _trec_split(spec)
        if parsed is None:
            errors.append(_unknown(spec))
            continue
        measure, cuts, text = parsed
        marked.add(measure.name)
        if cuts:
            cuts_of.setdefault(measure.name, []).extend(cuts)
        elif text:
            if text_of.setdefault(measure.name, text) != text:
                errors.append("-m: %s is given two sets of parameters, %r and %r; give one" % (
                    measure.name, text_of[measure.name], text))
    if errors:
        raise ScoreError("\n".join(errors))
    out: List[str] = []
    for m in TREC_MEASURES:
        if m.name not in marked:
            continue
        if m.param in ("cut", "level"):
            for c in cuts_of.get(m.name) or m.cutoffs:
                name = trec_name(m, c)
                if name not in out:
                    out.append(name)
                    _remember(name, (m.name, c))
        else:
            out.append(m.name + "_" + text_of[m.name] if m.name in text_of else m.name)
    return sorted(out, key=trec_sort_key)


def _measure_specs(m_flags: Optional[List[str]], measures: Optional[str]) -> List[str]:
    """``-m`` values, then ``--measures a,b.5,10`` split on commas (a part that is a parameter,
    a number or ``level=gain``, joins the spec before it, so ``P.5,10`` and
    ``utility.2,-1,0,0`` survive the split)."""
    specs = list(m_flags or [])
    for part in (measures.split(",") if measures else []):
        param = re.fullmatch(r"\s*(?:%s|[0-9]+=\S*|p=\S*)\s*" % _NUMBER, part)
        if param and specs and "." in specs[-1]:
            specs[-1] += "," + part.strip()
        else:
            specs.append(part.strip())
    return specs


def trec_ref(name: str) -> Optional["MetricRef"]:
    """A gate on one trec_eval measure (``map``, ``ndcg_cut.10`` or ``ndcg_cut_10``), or None
    (runid, num_q and relstring are not values to gate)."""
    parsed = _trec_split(name)
    if parsed is None:
        return None
    measure, cuts, text = parsed
    if measure.total in ("text", "count", "none") or len(cuts) != (1 if measure.param in ("cut", "level") else 0):
        return None
    key = trec_name(measure, cuts[0]) if cuts else measure.name + ("_" + text if text else "")
    return MetricRef(name, Measure(key, "mean", measure.better, measure.description, "qrels, run",
                                   "0 when the topic has no relevant document", None), None)


def trec_plan(names: List[str]) -> List[Tuple[str, str, Optional[float], Optional[int], Any]]:
    """(name, family, cutoff, integer cutoff, parameters) per measure name (cutoffs None for a
    measure without one; parameters: a "list" measure's numbers, a "pairs" measure's pairs):
    trec_query's work on the names, done once per run by trec_evaluate."""
    plan = []
    for name in names:
        family, level = _trec_family(name)
        measure = _TREC_BY_NAME[family]
        param: Any = None
        if measure.param == "list":
            param = _numbers(level) if isinstance(level, str) else measure.defaults
        elif measure.param == "pairs":
            param = _pairs(level) if isinstance(level, str) else ()
        if isinstance(level, str):
            level = None
        plan.append((name, family, level, None if level is None else int(level), param))
    return plan


def trec_query(ranking: List[str], judged: Dict[str, int], names: List[str],
               plan: Optional[list] = None, rel_level: int = 1) -> Dict[str, Any]:
    """Every measure of ``names`` for one topic.  ``ranking``: docnos, best first;
    ``judged``: qrels level per docno (>= ``rel_level`` relevant, 0 judged non-relevant, < 0
    unjudged).  relstring's value is its string; runid and num_q are trec_evaluate's.

    >>> v = trec_query(["a", "b", "c"], {"a": 0, "b": 1, "d": 2}, ["map", "P_2", "bpref", "ndcg_cut_3"])
    >>> v["map"] == (1 / 2) / 2, v["P_2"], v["bpref"] == (1 - 1 / 1) / 2
    (True, 0.5, True)
    """
    rel_total = sum(1 for g in judged.values() if g >= rel_level)
    nonrel_total = sum(1 for g in judged.values() if 0 <= g < rel_level)
    depth = len(ranking)
    positions: List[int] = []    # 0-based ranks of the relevant retrieved documents
    gains: List[int] = []
    points: List[Tuple[int, float]] = []     # (relevant so far, precision) at each relevant retrieved document
    ap = bpref = 0.0
    found = nonrel = 0
    for rank in compress(range(1, depth + 1), map(judged.__contains__, ranking)):   # judged documents only
        level = judged[ranking[rank - 1]]
        if level >= rel_level:
            found += 1
            ap += found / rank
            points.append((found, found / rank))
            bpref += 1.0 - (min(nonrel, rel_total) / min(rel_total, nonrel_total) if nonrel else 0.0)
            positions.append(rank - 1)
            gains.append(level)
        elif level >= 0:
            nonrel += 1
    ideal = ideal_gains(judged.values()) if any(n.startswith("ndcg") for n in names) else []
    if rel_level != 1 and ideal:            # nDCG's gains are the levels >= 1 whatever -l
        gpos, ggains = relevant_positions(ranking, {d: g for d, g in judged.items() if g >= 1})
    else:
        gpos, ggains = positions, gains
    upto = partial(hits_at, positions)
    topic = None
    out: Dict[str, Any] = {}
    for name, family, level, k, param in plan or trec_plan(names):
        if family in ("runid", "num_q"):
            continue
        if family == "num_ret":
            v = float(depth)
        elif family == "num_rel":
            v = float(rel_total)
        elif family == "num_rel_ret":
            v = float(found)
        elif family in ("map", "gm_map"):
            v = ap / rel_total if rel_total else 0.0
        elif family == "iprec_at_recall":     # level L is reached at floor(L * R + 0.5) relevant documents
            need = math.floor(level * rel_total + 0.5)
            v = max((p for f, p in points if f >= need), default=0.0) if rel_total else 0.0
        elif family == "ndcg" and not param:  # the whole ranking against the ideal of every relevant document
            v = measure_ndcg(gpos, ggains, depth, ideal_dcg(ideal, len(ideal)))
        elif family == "Rprec":
            v = upto(rel_total) / rel_total if rel_total else 0.0
        elif family == "bpref":
            v = bpref / rel_total if rel_total else 0.0
        elif family == "recip_rank":
            v = measure_rr(positions)
        elif family == "P":
            v = measure_p(upto(k), k)
        elif family == "recall":
            v = measure_r(upto(k), rel_total)
        elif family == "success":
            v = measure_success(upto(k))
        elif family == "ndcg_cut":
            v = measure_ndcg(gpos, ggains, k, ideal_dcg(ideal, k))
        else:                                 # trec_eval's other measures (treccalc)
            topic = topic or TopicRels(ranking, judged, rel_level)
            v = extra_measure(topic, family, level, k, param)
        out[name] = v
    return out


def trec_help() -> str:
    """The ``--help`` lines of the trec_eval measures, from TREC_MEASURES."""
    lines = ["trec_eval measures (--qrels/--run; -m NAME or -m NAME.K1,K2; --format trec prints NAME_K; "
             "-m official (the default), all_trec, set):"]
    for m in TREC_MEASURES:
        spec = m.name + (".K (default K: %s)" % ",".join("%g" % c for c in m.cutoffs) if m.cutoffs else "")
        extra = " (default %s.%s)" % (m.name, trec_help_params(m)) if m.param == "list" else ""
        lines.append("  %-30s %s%s" % (spec, m.description, extra))
    return "\n".join(lines)


def trec_evaluate(gold: "Gold", run: Dict[str, Tuple[List[float], List[str]]], names: List[str],
                  average: str = "all", rel_level: int = 1,
                  max_docs: Optional[int] = None) -> Tuple[Dict[str, Dict[str, Any]], Dict[str, Any]]:
    """(per topic {name: value} in qrels topic order, "all" {name: value}).

    ``average="all"`` (default, trec_eval -c): every qrels topic counts, a topic the run
    forgot scores 0 (its utility too, as trec_eval).  ``"judged"`` (plain trec_eval): only
    the qrels topics the run has.  ``run`` is read_run's: each topic's documents already in
    trec_eval's order; ``max_docs`` (-M) keeps the first so many of each; ``rel_level`` (-l):
    the least relevant level.  "all" holds runid (the run's ``runid``) and num_q when asked."""
    per: Dict[str, Dict[str, Any]] = {}
    plan = trec_plan(names)
    forgot = [p[0] for p in plan if p[1] == "utility"]
    for qid, judged in zip(gold.qids, gold.judgments):
        got = run.get(qid)
        if got is None and average == "judged":
            continue
        ranking = got[1] if got is not None else []           # read_run's order is trec_eval's
        if max_docs is not None and len(ranking) > max_docs:
            ranking = ranking[:max_docs]
        per[qid] = values = trec_query(ranking, judged, names, plan, rel_level)
        if got is None:
            values.update(dict.fromkeys(forgot, 0.0))
    n = len(per)
    total: Dict[str, Any] = {}
    for name in names:
        kind = _TREC_BY_NAME[_trec_family(name)[0]].total
        if kind == "text":
            total[name] = getattr(run, "runid", "")
        elif kind == "count":
            total[name] = n
        elif kind == "geomean":
            total[name] = math.exp(math.fsum(math.log(max(v[name], GM_FLOOR)) for v in per.values()) / n) if n else 0.0
        elif kind != "none":
            s = math.fsum(v[name] for v in per.values())
            total[name] = s if kind == "sum" else (s / n if n else 0.0)
    return per, total


def trec_metric_entries(per: Dict[str, Dict[str, Any]], total: Dict[str, Any]) -> Dict[str, dict]:
    """Report ``metrics`` entries for the trec measures (mean with a normal 95% interval);
    runid and num_q are not values (the report's counts hold the topics)."""
    out = {}
    n = len(per)
    for name, value in total.items():
        if not isinstance(value, float):
            continue
        values = [v[name] for v in per.values()]
        ci = None if name.startswith("num_") or name.startswith("gm_") else \
            _normal_ci(math.fsum(values), math.fsum(x * x for x in values), n)
        if ci is not None and _trec_family(name)[0] == "utility":    # not within [0, 1]: not clipped
            half = Z95 * math.sqrt(max(0.0, math.fsum(x * x for x in values) / n - value * value)
                                   * n / (n - 1) / n) if n > 1 else 0.0
            ci = [value - half, value + half]
        out[name] = _entry(value, None, n, ci)
    return out


def render_trec(per: Dict[str, Dict[str, Any]], total: Dict[str, Any], per_query: bool) -> str:
    """trec_eval's output: ``"%-22s\\t%s\\t%.4f"`` lines (counts as integers, runid as it is,
    relstring quoted), per topic (sorted as trec_eval sorts them) with ``-q``, then ``all``;
    each block in trec_eval's measure order."""
    lines = []

    def line(name, qid, v):
        if isinstance(v, str):
            text = "'%s'" % v if qid != "all" else v
        else:
            text = "%d" % v if name.startswith("num_") else "%.4f" % v
        lines.append("%-22s\t%s\t%s" % (name, qid, text))

    if per_query:
        for qid in sorted(per):
            values = per[qid]
            for name in sorted(values, key=trec_sort_key):
                if _TREC_BY_NAME[_trec_family(name)[0]].per_topic:
                    line(name, qid, values[name])
    for name in sorted(total, key=trec_sort_key):
        line(name, "all", total[name])
    return "\n".join(lines) + "\n"


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularized incomplete beta (Lentz's method)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 301):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def paired_t(diffs: List[float]) -> Tuple[Optional[float], Optional[float]]:
    """(t, two-sided p) of Student's paired t-test on the differences (scipy's ttest_rel);
    (None, None) with fewer than 2 pairs; t = 0, p = 1 when every difference is 0."""
    n = len(diffs)
    if n < 2:
        return None, None
    mean = math.fsum(diffs) / n
    var = math.fsum((d - mean) ** 2 for d in diffs) / (n - 1)
    if var == 0.0:
        return (0.0, 1.0) if mean == 0.0 else (math.copysign(math.inf, mean), 0.0)
    t = mean / math.sqrt(var / n)
    df = n - 1
    return t, min(1.0, _betainc(df / 2.0, 0.5, df / (df + t * t)))


RANDOMIZATION_EXACT_MAX = 16          # up to 2**16 sign patterns are enumerated
RANDOMIZATION_SAMPLES = 10000         # past that: this many random patterns, seeded
RANDOMIZATION_SEED = 0


def randomization_p(diffs: List[float]) -> Optional[float]:
    """Two-sided p of the paired randomization (sign-flip) test on the mean difference: the
    share of sign patterns whose |mean| is at least the observed one.  Exact (every pattern)
    for up to RANDOMIZATION_EXACT_MAX pairs, else RANDOMIZATION_SAMPLES patterns drawn with
    random.Random(RANDOMIZATION_SEED), the observed one counted (p = (hits + 1) / (samples + 1)):
    deterministic.  None without pairs."""
    n = len(diffs)
    if n == 0:
        return None
    observed = abs(math.fsum(diffs)) - 1e-12 * max(1.0, math.fsum(abs(d) for d in diffs))
    if n <= RANDOMIZATION_EXACT_MAX:
        hits = 0
        for mask in range(1 << n):
            total = math.fsum(-d if mask >> i & 1 else d for i, d in enumerate(diffs))
            hits += abs(total) >= observed
        return hits / float(1 << n)
    rng = random.Random(RANDOMIZATION_SEED)
    hits = 0
    for _ in range(RANDOMIZATION_SAMPLES):
        total = math.fsum(d if rng.random() < 0.5 else -d for d in diffs)
        hits += abs(total) >= observed
    return (hits + 1) / (RANDOMIZATION_SAMPLES + 1)


def trec_per_topic(per: Dict[str, Dict[str, float]]) -> Dict[str, Dict[str, float]]:
    """``{measure: {topic: value}}`` for the report (what a later --baseline pairs against);
    measures that have no per-topic value (gm_map) are left out."""
    out: Dict[str, Dict[str, float]] = {}
    for qid, values in per.items():
        for name, v in values.items():
            if _TREC_BY_NAME[_trec_family(name)[0]].per_topic and not name.startswith("num_") \
                    and not isinstance(v, str):
                out.setdefault(name, {})[qid] = v
    return out


def trec_significance(cur: Dict[str, Dict[str, float]], base: Any) -> Dict[str, dict]:
    """Per trec measure in both reports' ``trec_per_topic``: the topics paired, the mean
    difference (this run - baseline), the paired t-test (t, p) and the randomization test's p."""
    out: Dict[str, dict] = {}
    if not isinstance(base, dict):
        return out
    for name, values in cur.items():
        old = base.get(name)
        if not isinstance(old, dict):
            continue
        topics = [q for q in values if isinstance(old.get(q), (int, float)) and not isinstance(old.get(q), bool)]
        diffs = [values[q] - float(old[q]) for q in topics]
        t, p = paired_t(diffs)
        out[name] = {"n": len(diffs), "mean_delta": _r(math.fsum(diffs) / len(diffs)) if diffs else None,
                     "t": None if t is None or math.isinf(t) else _r(t), "p_t_test": None if p is None else _r(p),
                     "p_randomization": None if not diffs else _r(randomization_p(diffs))}
    return out


# =========================================================================== referee/names.py
# Metric names: parsing a gate's metric name (registry, parameterised families, trec_eval names),
# suggestions for a misspelt one and the metric table of the docs.

# --------------------------------------------------------------------------- retrieval measures
#
# One implementation per measure of the registry's retrieval families, used by QA mode
# (Scorer._retrieval: P@K, R@K, Success@K, RR, RR@K, nDCG@K) and by TREC mode (trec_query: P_K,
# recall_K, success_K, recip_rank, ndcg_cut_K) alike.  Both reduce a ranking to ``positions``:
# the 0-based ranks of its relevant documents, ascending, with ``gains``, their levels (1 for a
# plain gold citation; the qrels level >= 1 with --qrels).


def parse_metric(name: str) -> MetricRef:
    """Resolve a metric name (or seed alias) to the registry; suggest the closest on failure."""
    spelled = name
    name = ALIASES.get(name, name)
    if name in _BY_NAME and "@K" not in name:
        return MetricRef(spelled, _BY_NAME[name], None)
    if name == "recall@k":
        return MetricRef(spelled, _BY_NAME["recall@K"], None)
    m = _PARAM_RX.fullmatch(name)
    if m:
        return MetricRef(spelled, _BY_NAME[m.group(1) + "@K"], int(m.group(2)))
    ref = trec_ref(spelled)     # trec_eval's names (map, ndcg_cut.10): IR mode only
    if ref is not None:
        return ref
    raise ScoreError("unknown metric %r%s" % (spelled, _suggest(spelled)))


def _suggest(name: str) -> str:
    digits = re.search(r"@(\d+)", name)
    k = digits.group(1) if digits else "5"
    names = [m.name.replace("@K", "@" + k) for m in REGISTRY] + list(ALIASES) + ["recall@k"]
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.5)
    if not close:
        lowered = {n.lower(): n for n in names}
        close = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.5)
        close = [lowered[c] for c in close]
    return "; did you mean %r?" % close[0] if close else ""


def aggregates(m) -> str:
    """How the measure ``m`` sums its items, in words (the metric table's "kind" column)."""
    if m.kind == "rate":
        return "rate, Wilson 95% CI"
    if m.kind == "mean":
        return "mean, normal 95% CI" if m.ci else "mean"
    return "quantile (nearest rank)" if m.kind == "quantile" else m.kind


def computed_when(m) -> str:
    """When a run computes the measure ``m`` (the metric table's "computed" column)."""
    if m.needs:
        return "when asked (%s)" % m.needs
    if m.requires and m.requires[0] == "grounding_on":
        return "when asked (grounding)"
    return "always"


def metric_table_markdown() -> str:
    """The metric table of README.md and docs/design.md, generated from the registry
    (tools/metric_tables.py writes it there; tests keep both in sync)."""
    rows = ["| metric | kind | better | needs gold | computed | definition | fields read | when undefined |",
            "|---|---|---|---|---|---|---|---|"]
    for m in REGISTRY:
        rows.append("| `%s` | %s | %s | %s | %s | %s | %s | %s |" % (
            m.name, aggregates(m), m.better, "yes" if m.gold else "no", computed_when(m),
            m.definition.replace("|", "\\|"), m.fields, m.undefined))
    return "\n".join(rows) + "\n"


def _metric_help() -> str:
    lines = ["metrics (K = any cutoff, e.g. P@5; seed aliases: under, over, recall@k; * computed only when asked: "
             "a gate, --compute, the scorecard or an output beside the JSON report):"]
    for m in REGISTRY:
        lines.append("  %-30s %s" % (m.name + (" *" if computed_when(m) != "always" else ""), m.definition))
    lines.append("")
    lines.append("exit status: 0 all gates pass, 1 a gate failed, 2 usage or input error")
    return "\n".join(lines)


# =========================================================================== referee/aggregate.py
# Aggregation: the measures of the registry carried out over a set of items (rates and means
# with intervals, quantiles, counts); categories and failure modes.

# --------------------------------------------------------------------------- aggregation
#
# aggregate() asks every measure of the run (REPORT_ORDER, families at every cutoff) for its
# entry over the items ``idx``; how a measure is summed follows from what it reads (its
# ``items`` predicates on the flags, or its ``values``) and its ``kind``.  _Items holds what
# several measures share (the flags counted, the items with gold citations, ...), computed once.

ANSWER_METRICS = tuple(m.name for m in REGISTRY if m.group == 2)
EXTRA_METRICS = tuple(m.name for m in REGISTRY if m.group == 1)
_SKIPPED = "skipped: needs gold labels (reference-free mode: no --gold, or gold rows without labels)"


def aggregate(scorer: Scorer, idx, trec: bool, memo: Optional[dict] = None) -> Dict[str, dict]:
    """Every measure this run computes (families at every k) over the items ``idx``; unrounded.
    IR mode (``trec``) has the rank measures only; a measure whose ``needs`` the run did not
    compute is left out.  ``memo``: a dict the calls of one run share (the whole gold set first,
    then its categories), so that a per-item value no item has is not looked for again."""
    items = _Items(scorer, idx, {} if memo is None else memo)
    out: Dict[str, dict] = {}
    for m in REPORT_ORDER:
        if (trec and not m.ir) or (m.needs and m.needs not in scorer.needs):
            continue
        if "@K" not in m.name:
            out[m.name] = items.entry(m, None)
            continue
        for k in scorer.ks:
            out[m.name.replace("@K", "@%d" % k)] = items.entry(m, k)
    if not trec and scorer.gold.unlabelled:
        _skip_gold_metrics(out)
    return out


def not_computed(scorer: Scorer) -> Dict[str, dict]:
    """The entries of the measures this run did not compute (their ``needs`` not asked for):
    the scorecard says why a stage that weighs one is left out."""
    return {m.name: _entry(None, None, 0, None, NOT_COMPUTED % m.name)
            for m in REGISTRY if m.needs and m.needs not in scorer.needs and "@K" not in m.name}


class _Items:
    """The items of one aggregate() call, and what several measures read of them."""

    def __init__(self, scorer: Scorer, idx, memo: dict):
        self.scorer, self.idx, self.memo = scorer, idx, memo
        flags = scorer.flags
        self.whole = idx == range(len(flags))      # every item: the arrays are read as they are
        self.combos = Counter(flags if self.whole else map(flags.__getitem__, idx))   # each distinct flags value, counted
        self.subsets: Dict[str, list] = {}
        self.hits: Dict[int, Counter] = {}     # k -> how many items have each number of hits (P@K, Success@K)
        self.vals: Dict[str, list] = {}

    def entry(self, m: Measure, k: Optional[int]) -> dict:
        if m.values in ("", "seed_rec") and m.items is not None:
            return self._flags(m, k)
        if m.over == "gold":
            return self._ranks(m, k)
        return self._values(m)

    def subset(self, over: str) -> list:
        """The items with gold citations ("gold") or answerable ("answerable"), in order."""
        got = self.subsets.get(over)
        if got is None:
            bit = F_GOLD if over == "gold" else F_ANS
            flags = self.scorer.flags
            got = self.subsets[over] = list(compress(self.idx, map(bit.__and__, flags if self.whole else
                                                                    map(flags.__getitem__, self.idx))))
        return got

    def count(self, den, num) -> Tuple[int, int]:
        """(items meeting ``num`` among those meeting ``den``, items meeting ``den``)."""
        n = c = 0
        for f, cnt in self.combos.items():
            if den(f):
                n += cnt
                if num(f):
                    c += cnt
        return c, n

    def unmeasured(self, m: Measure, n: int) -> Optional[str]:
        """Why ``m`` has no value although items entered it (``requires``, ``lacks``), or None."""
        sc = self.scorer
        if m.requires and not getattr(sc, m.requires[0]):
            return m.requires[1]
        missing = getattr(sc, m.lacks[0]) if m.lacks else None
        if missing:
            lack = [i for i in self.idx if i in missing]
            if lack:
                return m.lacks[1] % {"lack": len(lack), "n": n, "qid": sc.gold.qids[lack[0]], "chunk": missing[lack[0]]}
        return None

    def _flags(self, m: Measure, k: Optional[int]) -> dict:
        """A yes/no verdict per item: a rate (Wilson interval) or a count."""
        if m.values == "seed_rec":       # seed 002's recall at cutoff k, over the answerable items
            aidx = self.subset(m.over)
            c, n = sum(map(self.scorer.seed_rec[k].__getitem__, aidx)), len(aidx)
        else:
            c, n = self.count(*m.items)
        if m.kind == "count":
            return _entry(c, c, n, None) if n else _entry(None, None, 0, None, m.why_empty)
        reason = self.unmeasured(m, n)
        if reason is None and not n and m.empty is None:
            reason = m.why_empty
        if reason is not None:
            return _entry(None, c, n, None, reason)
        return _entry(c / n if n else m.empty, c, n, wilson(c, n))

    def _ranks(self, m: Measure, k: Optional[int]) -> dict:
        """A rank measure over the items with gold citations: a mean (normal interval), or
        Success@K's rate; P@K and Success@K from the items counted by their number of hits."""
        gidx = self.subset("gold")
        ng = len(gidx)
        if ng == 0:
            return _entry(None, None, 0, None, m.why_empty)
        if m.values == "hits":
            hits = self.hits.get(k)
            if hits is None:
                hits = self.hits[k] = Counter(map(self.scorer.hits[k].__getitem__, gidx))
            if m.kind == "rate":
                c = ng - hits[0]        # measure_success: 1 for hits > 0
                return _entry(c / ng, c, ng, wilson(c, ng))
            total, sq = _counted_sums({measure_p(h, k): c for h, c in hits.items()})
            return _entry(total / ng, None, ng, _normal_ci(total, sq, ng))
        arr = getattr(self.scorer, m.values)
        vals = list(map((arr if k is None else arr[k]).__getitem__, gidx))
        total = math.fsum(vals)
        return _entry(total / ng, None, ng, _sample_ci(vals, total))

    def _values(self, m: Measure) -> dict:
        """A per-item value (NaN: none): a mean, a quantile, or a rate of the items whose flags
        have ``m.hit`` among those with a value."""
        vals = self.vals.get(m.values)
        if vals is None:
            arr = getattr(self.scorer, m.values)
            if self.memo.get(m.values) is False:     # no item of the run has a value
                vals = []
            elif self.whole:
                vals = list(filterfalse(math.isnan, arr))
                self.memo[m.values] = bool(vals)
            else:
                vals = list(filterfalse(math.isnan, map(arr.__getitem__, self.idx)))
            self.vals[m.values] = vals
        n = len(vals)
        reason = self.unmeasured(m, n)
        if reason is not None:
            return _entry(None, None, n, None, reason)
        if not n:
            hint = m.hint and not getattr(self.scorer, m.hint[0])
            return _entry(None, None, 0, None, m.why_empty + (m.hint[1] if hint else ""))
        if m.kind == "quantile":
            srt = self.vals.get("sorted " + m.values)
            if srt is None:
                srt = self.vals["sorted " + m.values] = sorted(vals)
            return _entry(nearest_rank(srt, m.quantile), None, n, None)
        if m.kind == "rate":
            arr, flags = getattr(self.scorer, m.values), self.scorer.flags
            c = sum(1 for i in self.idx if flags[i] & m.hit and arr[i] == arr[i])
            return _entry(c / n, c, n, wilson(c, n))
        total = math.fsum(vals)
        return _entry(total / n, None, n, _sample_ci(vals, total) if m.ci else None)


def nearest_rank(sorted_values: List[float], p: float) -> float:
    """The ceil(p * n)-th smallest value (1-based; p in (0, 1]); the list must be non-empty."""
    return sorted_values[max(1, math.ceil(p * len(sorted_values) - 1e-9)) - 1]


def _skip_gold_metrics(out: Dict[str, dict]) -> None:
    """Reference-free mode: every metric whose registry entry needs gold is skipped, with why
    (answer metrics stay when rows carry gold_answers but no other label, e.g. RAGAS references)."""
    for name in out:
        if name in ANSWER_METRICS and out[name]["n"]:
            continue
        if parse_metric(name).metric.gold:
            out[name] = _entry(None, None, None, None, _SKIPPED)


# Severity order: an item's primary failure mode is its first label in this order.
MODE_ORDER = ("missing_trace", "policy_violation", "source_policy_violation", "training_cutoff_excuse",
              "under_refusal", "false_acceptance", "citation_not_retrieved", "hallucination", "unsupported_answer",
              "retrieval_miss",
              "over_refusal", "false_rejection", "conflict_not_surfaced", "staleness_not_detected",
              "clarification_missed", "required_citation_missing", "citation_miss", "claim_miss",
              "decision_mismatch")


def all_modes(f: int, trec: bool) -> List[str]:
    """Every failure label that applies to an item with flags ``f``, most severe first."""
    out = []
    if not f & F_TRACE:
        out.append("missing_trace")
    if f & F_GOLD and not f & F_GOLDRET and (trec or f & F_ANS):
        out.append("retrieval_miss")      # no gold citation was retrieved at all
    if not trec:
        out += _extra_modes(f)
        if f & F_SHIP:
            if not f & (F_ANS | F_NOLAB):
                out.append("under_refusal")
            if f & F_NOTRET:
                out.append("citation_not_retrieved")
            # issue 29: the label follows [scorer] grounding, like the hallucination gate
            if f & F_HALL and _GROUNDING["mode"] != "sentences":
                out.append("hallucination")
            if f & F_UNSUP:
                out.append("unsupported_answer")
            if f & F_ANS and not f & F_HIT:
                out.append("citation_miss")
            if f & F_ANS and not f & F_CONT:
                out.append("claim_miss")
        elif f & F_ANS:
            out.append("over_refusal")
        if f & F_DEC and not f & F_DECOK:
            out.append("decision_mismatch")
    return sorted(out, key=MODE_ORDER.index)


def _extra_modes(f: int) -> List[str]:
    """Issue 20's failure labels (seed 004's rejection calibration, policies; seed 000's
    decisions for the right reason)."""
    out = []
    if f & F_POLV:
        out.append("policy_violation")
    if f & F_SRCV:
        out.append("source_policy_violation")
    if f & F_CUTOFF:
        out.append("training_cutoff_excuse")
    if not f & F_NOLAB:
        if f & F_SHIP and f & F_EXPREF:
            out.append("false_acceptance")
        if not f & (F_SHIP | F_EXPREF | F_CUTOFF):
            out.append("false_rejection")
    for req, ok, mode in ((F_REQCONF, F_OKCONF, "conflict_not_surfaced"), (F_REQSTALE, F_OKSTALE, "staleness_not_detected"),
                          (F_REQCLAR, F_OKCLAR, "clarification_missed"), (F_REQDOCS, F_OKDOCS, "required_citation_missing")):
        if f & req and not f & ok:
            out.append(mode)
    return out


def failure_mode(f: int, trec: bool) -> Optional[str]:
    """The item's primary failure mode, or None when nothing is wrong with it."""
    labels = all_modes(f, trec)
    return labels[0] if labels else None


def flag_string(f: int) -> str:
    return "".join(ch for bit, ch in enumerate(FLAG_LETTERS) if f >> bit & 1)


def flag_int(s: str) -> int:
    f = 0
    for ch in s:
        pos = FLAG_LETTERS.find(ch)
        if pos < 0:
            raise ValueError(ch)
        f |= 1 << pos
    return f


# =========================================================================== referee/config.py
# The gates file: dataset sections, gate tiers, [scorer] settings (patterns, readers, grounding),
# [policy.*], [regression] and [weights].

# --------------------------------------------------------------------------- gates config


class Gate(NamedTuple):
    ref: MetricRef
    op: Optional[str]    # ">=" or "<="; None for a monitor gate without a bound
    threshold: Optional[float]
    message: Optional[str]
    shown: str           # value shown in the report's seed "gates" map
    tier: str = "block"  # "block" sets the exit status; "warn" and "monitor" only report


class Regression(NamedTuple):
    alpha: float
    max_drop: Tuple[Tuple[MetricRef, float], ...]
    slices: Tuple[str, ...]
    slice_metrics: Tuple[MetricRef, ...]
    slice_max_drop: float


_RESERVED = ("scorer", "regression", "weights", "policy")


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


#: Means whose values lie in [0, 1], as the rates' do.
_UNIT_MEANS = frozenset(("faithfulness", "P@K", "R@K", "RR", "RR@K", "nDCG@K", "answer_relevance",
                         "context_relevance", "answer_f1"))


def unit_interval(ref: MetricRef) -> bool:
    """Whether the gated metric's values lie in [0, 1] (a rate, a [0, 1] mean, a trec_eval measure
    other than the num_* counts and utility): a threshold outside it is a typo (issue 42)."""
    m = ref.metric
    if m in REGISTRY:
        return m.kind == "rate" or m.name in _UNIT_MEANS
    family = _trec_family(m.name)[0]
    return not family.startswith("num_") and family != "utility"


def _unit_problem(ref: MetricRef, thr: float) -> str:
    """'' when ``thr`` may bound ``ref``, else why not."""
    if 0.0 <= thr <= 1.0 or not unit_interval(ref):
        return ""
    return "must be from 0 to 1 (%s is %s), got %s" % (
        ref.metric.name, "a rate" if ref.metric.kind == "rate" else "a value from 0 to 1", _fmt_num(thr))


_GATES_DOCS: Dict[tuple, tuple] = {}


def gates_doc(path: str) -> Tuple[dict, Dict[Tuple[str, ...], int]]:
    """``(document, key -> line)`` of a gates file, read once per run (``-`` is stdin) and at
    most MAX_SMALL_FILE_BYTES long.  It used to be read and parsed four times (gates, the
    [ir] check, rules, weights), each parse running the subset reader and tomllib: a 10 MB
    file took 14 s; now a file over 1 MiB is refused before it is parsed."""
    try:
        st = os.stat(path) if path != "-" else None
        key = (path, st.st_ino, st.st_size, st.st_mtime_ns) if st is not None else (path,)
    except OSError:
        key = (path, None)
    cached = _GATES_DOCS.get(key)
    if cached is not None:
        return cached
    try:
        with open_input(path, "gates file") as fh:
            data = fh.read(MAX_SMALL_FILE_BYTES + 1)
        if len(data) > MAX_SMALL_FILE_BYTES:
            raise ScoreError("%s: gates file larger than %d bytes (MAX_SMALL_FILE_BYTES); a gates file is "
                             "a few kilobytes" % (path, MAX_SMALL_FILE_BYTES))
        text = data.decode("utf-8")
    except OSError as exc:
        raise ScoreError("%s: cannot read gates file: %s" % (path, exc.strerror)) from None
    except UnicodeDecodeError as exc:
        raise ScoreError("%s: not UTF-8, got byte 0x%02x" % (path, exc.object[exc.start])) from None
    _GATES_DOCS.clear()
    cached = _GATES_DOCS[key] = _parse_toml_lines(text, path)
    return cached


def key_line(path: str, lines: Dict[tuple, int], *key: str) -> str:
    """``path:line`` of the longest prefix of the TOML key ``key`` that ``lines`` (key -> line)
    knows, else ``path`` alone: where an error about that key points."""
    for n in range(len(key), 0, -1):
        if key[:n] in lines:
            return "%s:%d" % (path, lines[key[:n]])
    return path


def load_gates_file(path: str, dataset: Optional[str]) -> Tuple[str, List[Gate], Optional[Regression]]:
    """Read gates.toml: [scorer] refusal, one [<dataset>] table of gates, [regression].

    ``dataset=None`` (a --gates string replaces the file's gates) reads only the refusal
    token and the regression section."""
    doc, lines = gates_doc(path)
    errors: List[str] = []
    where = partial(key_line, path, lines)

    refusal = REFUSAL
    for top, val in doc.items():
        if not isinstance(val, dict):
            errors.append("%s: top-level key %r must be a table ([%s]), got %s" % (where(top), top, top, _show(val)))
    scorer = doc.get("scorer", {})
    if isinstance(scorer, dict):
        for key, val in scorer.items():
            if key in _RULE_KEYS or key == "grounding":      # read by load_rules
                continue
            if key != "refusal":
                errors.append("%s: unknown [scorer] key %r; known: refusal, refusal_patterns, cutoff_patterns, citation_patterns, refusal_reader, grounding, got %s" % (where("scorer", key), key, _show(val)))
            elif not isinstance(val, str) or not val.strip():
                errors.append("%s: [scorer] refusal must be a non-empty string, got %s" % (where("scorer", key), _show(val)))
            else:
                refusal = val
    datasets = sorted(k for k, v in doc.items() if k not in _RESERVED and isinstance(v, dict))
    if dataset is not None and (dataset not in doc or dataset in _RESERVED):
        errors.append("%s: no [%s] section; datasets in the file: %s" % (path, dataset, ", ".join(datasets) or "none"))
    gates: List[Gate] = []
    section = doc.get(dataset) if dataset is not None and dataset not in _RESERVED else None
    for key, val in (section if isinstance(section, dict) else {}).items():
        loc = where(dataset, key)
        try:
            ref = parse_metric(key)
        except ScoreError as exc:
            errors.append("%s: [%s] %s" % (loc, dataset, exc))
            continue
        if not isinstance(val, dict):
            errors.append("%s: gate %r must be an inline table like { min = 0.8 } or { max = 0.05 }, got %s"
                          % (loc, key, _show(val)))
            continue
        extra = sorted(set(val) - {"min", "max", "message", "tier"})
        bounds = [b for b in ("min", "max") if b in val]
        tier = val.get("tier", "block")
        if extra:
            errors.append("%s: gate %r has unknown keys %s; known: min, max, message, tier, got %s"
                          % (loc, key, ", ".join(extra), _show(val)))
        elif tier not in TIERS:
            errors.append("%s: gate %r tier must be one of %s, got %s" % (loc, key, ", ".join(TIERS), _show(tier)))
        elif tier == "monitor" and not bounds and isinstance(val.get("message", ""), str):
            gates.append(Gate(ref, None, None, val.get("message"), "monitor", "monitor"))
        elif len(bounds) != 1:
            errors.append("%s: gate %r needs exactly one of min or max, got %s" % (loc, key, _show(val)))
        elif not _num(val[bounds[0]]):
            errors.append("%s: gate %r %s must be a number, got %s" % (loc, key, bounds[0], _show(val[bounds[0]])))
        elif "message" in val and not isinstance(val["message"], str):
            errors.append("%s: gate %r message must be a string, got %s" % (loc, key, _show(val["message"])))
        elif _unit_problem(ref, float(val[bounds[0]])):
            errors.append("%s: gate %r %s %s" % (loc, key, bounds[0], _unit_problem(ref, float(val[bounds[0]]))))
        else:
            op = ">=" if bounds[0] == "min" else "<="
            thr = float(val[bounds[0]])
            gates.append(Gate(ref, op, thr, val.get("message"), "%s%s" % (op, _fmt_num(thr)), tier))
    regression = None
    reg = doc.get("regression")
    if isinstance(reg, dict):
        regression = _regression_config(reg, where, errors)
    if errors:
        raise ScoreError("\n".join(errors))
    return refusal, gates, regression


def _regression_config(reg: dict, where, errors: List[str]) -> Optional[Regression]:
    known = ("alpha", "max_drop", "no_regression_slices", "slice_metrics", "slice_max_drop")
    for key, val in reg.items():
        if key not in known:
            errors.append("%s: unknown [regression] key %r; known: %s, got %s"
                          % (where("regression", key), key, ", ".join(known), _show(val)))
    alpha = reg.get("alpha", 0.05)
    if not _num(alpha) or not 0 < alpha < 1:
        errors.append("%s: [regression] alpha must be a number in (0, 1), got %s" % (where("regression", "alpha"), _show(alpha)))
    drops = []
    max_drop = reg.get("max_drop", {})
    if not isinstance(max_drop, dict):
        errors.append("%s: [regression] max_drop must be a table of metric = margin, got %s"
                      % (where("regression", "max_drop"), _show(max_drop)))
        max_drop = {}
    for key, val in max_drop.items():
        loc = where("regression", "max_drop", key)
        try:
            ref = parse_metric(key)
        except ScoreError as exc:
            errors.append("%s: [regression.max_drop] %s" % (loc, exc))
            continue
        if ref.metric.kind != "rate" or ref.metric.name not in _PAIRED:
            errors.append("%s: [regression.max_drop] %r has no per-item yes/no verdict for the paired "
                          "test; use one of %s, got %r" % (loc, key, ", ".join(sorted(_PAIRED)), key))
        elif not _num(val) or val < 0:
            errors.append("%s: [regression.max_drop] %s must be a number >= 0, got %s" % (loc, key, _show(val)))
        else:
            drops.append((ref, float(val)))
    slices = reg.get("no_regression_slices", [])
    if not isinstance(slices, list) or not all(isinstance(s, str) for s in slices):
        errors.append("%s: no_regression_slices must be an array of category names, got %s"
                      % (where("regression", "no_regression_slices"), _show(slices)))
        slices = []
    smetrics = []
    for key in reg.get("slice_metrics", ["pass_rate"]) if isinstance(reg.get("slice_metrics", []), list) else [None]:
        try:
            smetrics.append(parse_metric(key if isinstance(key, str) else repr(key)))
        except ScoreError as exc:
            errors.append("%s: slice_metrics: %s" % (where("regression", "slice_metrics"), exc))
    sdrop = reg.get("slice_max_drop", 0.0)
    if not _num(sdrop) or sdrop < 0:
        errors.append("%s: slice_max_drop must be a number >= 0, got %s" % (where("regression", "slice_max_drop"), _show(sdrop)))
        sdrop = 0.0
    return Regression(float(alpha) if _num(alpha) else 0.05, tuple(drops), tuple(slices), tuple(smetrics), float(sdrop))


_RULE_KEYS = ("refusal_patterns", "cutoff_patterns", "citation_patterns", "refusal_reader")
SOURCE_POLICIES = ("summarize", "quote_only", "no_use")
_QUANT_RX = re.compile(r"\{\d*(?:,\d*)?\}")
MAX_PATTERN_CHARS = 2000       # one user regex (refusal, cutoff and policy patterns)


class Rules(NamedTuple):
    """Prose refusals and policies from the gates file (issue 20); each pattern as (source, regex).

    ``reader`` (``[scorer] refusal_reader``): "builtin" reads refusals with ``read_refusal``
    (the patterns are extra decline wordings); "exact" is seed 002's token comparison, with
    the patterns matched anywhere (``refuses``, issue 20's meaning)."""
    refusal: tuple = ()
    cutoff: tuple = ()
    policies: tuple = ()      # (name, message, ((source, regex), ...)), in file order
    reader: str = "builtin"
    grounding: str = "strict"  # issue 29: what a hallucination gate checks ("strict" | "sentences")
    # issue 41: sentence grounding computed with "strict" too: by default (no gates file, or one
    # without [scorer] grounding), or because a gate names it; off when the file says "strict"
    ground: bool = True
    citations: Optional[tuple] = None   # [scorer] citation_patterns; None: CITATION_PATTERNS

    def refuses(self, claim: str) -> int:
        """F_PROSE | F_CUTOFF bits for a claim that matches a refusal or cutoff pattern."""
        bits = 0
        if _any_search(self.cutoff, claim):
            bits = F_PROSE | F_CUTOFF
        elif _any_search(self.refusal, claim):
            bits = F_PROSE
        return bits


_ANY_RX: Dict[tuple, tuple] = {}
_ANY_BY_ID: Dict[int, tuple] = {}


def _any_search(patterns: tuple, text: str) -> bool:
    """Whether any (source, regex) of ``patterns`` matches ``text``: one search of their
    alternation, compiled once per pattern list (each regex alone when they cannot be joined),
    skipped when an ASCII text holds none of the literals that every match needs."""
    if not patterns:
        return False
    rx, lits = _any_entry(patterns)
    if lits is not None and text.isascii():
        low = text.lower()
        if not any(map(low.__contains__, lits)):
            return False
    if rx is None:
        return any(r.search(text) for _, r in patterns)
    return rx.search(text) is not None


def _literals_absent(patterns: tuple, text: str) -> bool:
    """True when no pattern of ``patterns`` can match ``text`` or any part of it: an ASCII text
    that holds none of the literals one of which every match needs (False: it may match)."""
    lits = _any_entry(patterns)[1]
    if lits is None or not text.isascii():
        return False
    low = text.lower()
    return not any(map(low.__contains__, lits))


def _any_entry(patterns: tuple) -> tuple:
    """(the alternation of ``patterns`` or None, their required literals or None), cached;
    first by the tuple's identity (hashing the tuple hashes each compiled pattern's code,
    once per row otherwise), the tuple kept alive so that its id is not reused."""
    seen = _ANY_BY_ID.get(id(patterns))
    if seen is not None and seen[0] is patterns:
        return seen[1]
    entry = _ANY_RX.get(patterns)
    if entry is None:
        try:
            rx = re.compile("|".join("(?:%s)" % src for src, _ in patterns), re.IGNORECASE)
        except re.error:     # e.g. a group name used twice: search them one by one
            rx = None
        lits: Optional[set] = set()
        for src, _ in patterns:
            need = _required_literals(src)
            if need is None:
                lits = None
                break
            lits |= need
        if len(_ANY_RX) > 64:
            _ANY_RX.clear()
        entry = _ANY_RX[patterns] = (rx, tuple(sorted(lits)) if lits is not None else None)
    if len(_ANY_BY_ID) > 64:
        _ANY_BY_ID.clear()
    _ANY_BY_ID[id(patterns)] = (patterns, entry)
    return entry


def _required_literals(pattern: str) -> Optional[set]:
    """Lower-case ASCII strings one of which every match of ``pattern`` contains (in an ASCII
    text, whatever the case), or None when the pattern has no such set that was found.  From
    the regex parser's tree: a run of ASCII literals, a group, an alternation (the union of
    its branches' sets, each needed), a repeat of at least one; of a sequence's candidates the
    one whose shortest string is longest.  Anything else (classes, lookarounds) needs nothing."""
    try:
        return _literal_factors(list(_sre().parse(pattern, re.IGNORECASE)))
    except Exception:       # a parser that changed shape: skip nothing
        return None


def _literal_factors(items: list) -> Optional[set]:
    best: Optional[set] = None
    run: List[str] = []

    def consider(cands: Optional[set]) -> None:
        nonlocal best
        if cands and all(cands) and (best is None or min(map(len, cands)) > min(map(len, best))):
            best = cands
    for op, av in items + [(None, None)]:
        name = getattr(op, "name", None)
        if name == "LITERAL" and av < 128:
            run.append(chr(av).lower())
            continue
        if run:
            consider({"".join(run)})
            run = []
        if name == "SUBPATTERN":
            consider(_literal_factors(list(av[-1])))
        elif name == "BRANCH":
            alts = [_literal_factors(list(a)) for a in av[1]]
            if all(a is not None for a in alts):
                consider(set().union(*alts))
        elif name in ("MAX_REPEAT", "MIN_REPEAT") and av[0] >= 1:
            consider(_literal_factors(list(av[2])))
    return best


def _class_end(pattern: str, i: int) -> int:
    """The index after the character class that opens at ``pattern[i]`` ("[")."""
    n = len(pattern)
    j = i + 1
    if j < n and pattern[j] == "^":
        j += 1
    if j < n and pattern[j] == "]":
        j += 1
    while j < n and pattern[j] != "]":
        j += 2 if pattern[j] == "\\" else 1
    return j + 1


def regex_problem(pattern: str) -> Optional[str]:
    """Why ``pattern`` may take more than linear time, or None.

    Rejected: a quantified group (``*``, ``+``, ``{m,n}``) whose body holds a quantifier
    (``(a+)+``, ``(?:x*y)*``), backreferences (``\\1``, ``(?P=name)``), a repeated group
    whose alternatives overlap (``(a|ab)*``, ``(\\w|\\d)+``) and adjacent unbounded
    repetitions over common characters (``a*a*b``, ``.*.*=``): see _overlap_problem.  Character
    classes and escapes are skipped; ``?`` on a group is harmless and allowed.  Then what a
    search does at each start (_scan_problem): an unbounded repeat must follow a character
    it cannot take or end the pattern, and a try has at most MAX_REGEX_WAYS ways to go."""
    if len(pattern) > MAX_PATTERN_CHARS:
        return "longer than %d characters" % MAX_PATTERN_CHARS
    stack: List[bool] = []        # per open group: does its body hold a quantifier?
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 < n and pattern[i + 1] in "123456789":
                return "backreferences are not allowed"
            i += 2
            continue
        if c == "[":
            i = _class_end(pattern, i)
            continue
        if c == "(":
            i += 1
            if pattern.startswith("?P=", i) or pattern.startswith("?(", i):
                return "backreferences are not allowed"
            if pattern.startswith("?P<", i):
                i = pattern.find(">", i) + 1 or n
            elif pattern.startswith("?<=", i) or pattern.startswith("?<!", i):
                i += 3
            elif pattern.startswith("?", i):
                i += 1
            stack.append(False)
            continue
        quant = c in "*+" or (c == "{" and _QUANT_RX.match(pattern, i))
        if c == ")":
            inner = stack.pop() if stack else False
            i += 1
            q = pattern[i] if i < n else ""
            repeated = (q != "" and q in "*+") or (q == "{" and _QUANT_RX.match(pattern, i))
            if repeated and inner:
                return "nested quantifiers (a quantified group holding a quantifier) are not allowed"
            if stack and (inner or repeated or q == "?"):
                stack[-1] = True
            continue
        if (quant or c == "?") and stack:
            stack[-1] = True
        i += 1
    return _overlap_problem(pattern) or _scan_problem(pattern)


# Overlapping repetition (issue 33): nested quantifiers are not the only exponential or
# polynomial shapes.  A repeated alternation whose branches can start with the same character
# (``(a|a)*``, ``(a|ab)*``, ``(\w|\d)+``) matches one string in exponentially many ways, and
# two unbounded repetitions side by side that can take the same characters (``a*a*a*b``,
# ``.*.*=``, ``\s*\s*x``) split a string in polynomially many ways; a failing match tries them
# all.  The pattern is read with the re module's own parser; the characters each piece can
# start with are computed on a probe alphabet (ASCII and a few non-ASCII letters, digits and
# spaces), so two character sets overlap when some probe character is in both.

_PROBES = [chr(c) for c in range(128)] + list("\u00e9\u00c9\u00df\u0131\u017f\u212a\u00a0\u2028\u0663\u4e2d\u0301")
_CLASS_RX = {"CATEGORY_DIGIT": re.compile(r"\d"), "CATEGORY_NOT_DIGIT": re.compile(r"\D"),
             "CATEGORY_SPACE": re.compile(r"\s"), "CATEGORY_NOT_SPACE": re.compile(r"\S"),
             "CATEGORY_WORD": re.compile(r"\w"), "CATEGORY_NOT_WORD": re.compile(r"\W")}


def _sre():
    """re's own pattern parser: ``re._parser`` on Python 3.11+, ``re.sre_parse`` on 3.9 and 3.10
    (the same standard-library module; read from ``re`` so no deprecated name is imported)."""
    return getattr(re, "_parser", None) or getattr(re, "sre_parse")


def _chars(op: str, av, fold: bool) -> frozenset:
    """The probe characters one single-character node matches."""
    def one(ch):
        if op == "LITERAL":
            return ch == chr(av) or (fold and ch.lower() == chr(av).lower())
        if op == "NOT_LITERAL":
            return not (ch == chr(av) or (fold and ch.lower() == chr(av).lower()))
        if op == "ANY":
            return ch != "\n"
        hit, neg = False, False
        for iop, iav in av:                     # IN: a character class
            name = str(iop)
            if name == "NEGATE":
                neg = True
            elif name == "LITERAL":
                hit = hit or ch == chr(iav) or (fold and ch.lower() == chr(iav).lower())
            elif name == "RANGE":
                lo, hi = iav
                hit = hit or lo <= ord(ch) <= hi or (fold and (lo <= ord(ch.lower()) <= hi or lo <= ord(ch.upper()[0]) <= hi))
            elif name == "CATEGORY":
                rx = _CLASS_RX.get(str(iav))
                hit = hit or (rx.match(ch) is not None if rx else True)
            else:                               # anything else: assume it may match
                hit = True
        return hit != neg
    return frozenset(ch for ch in _PROBES if one(ch))


def _first(seq, fold: bool) -> Tuple[frozenset, bool]:
    """``(characters a match of the node list can start with, can it match empty)``."""
    out: frozenset = frozenset()
    for op, av in seq:
        first, nullable = _first_node(str(op), av, fold)
        out |= first
        if not nullable:
            return out, False
    return out, True


def _first_node(op: str, av, fold: bool) -> Tuple[frozenset, bool]:
    if op in ("LITERAL", "NOT_LITERAL", "ANY", "IN"):
        return _chars(op, av, fold), False
    if op == "SUBPATTERN":
        add, _del = (av[1], av[2]) if len(av) == 4 else (0, 0)
        return _first(av[-1], fold or bool(add & re.IGNORECASE))
    if op == "BRANCH":
        firsts = [_first(b, fold) for b in av[1]]
        return frozenset().union(*(f for f, _ in firsts)), any(n for _, n in firsts)
    if op in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
        first, nullable = _first(av[2], fold)
        return first, nullable or av[0] == 0
    if op == "ATOMIC_GROUP":
        return _first(av, fold)
    return frozenset(), True                    # anchors, lookarounds: match empty


def _overlap_problem(pattern: str) -> Optional[str]:
    parser = _sre()
    try:
        tree = parser.parse(pattern, re.IGNORECASE)
    except (re.error, RecursionError, OverflowError, ValueError):
        return None                             # the compile step reports it
    maxrepeat = getattr(parser, "MAXREPEAT", 4294967295)
    fold = True                                 # user patterns run with re.IGNORECASE

    def walk(seq) -> Optional[str]:
        items = list(seq)
        for n, (op, av) in enumerate(items):
            name = str(op)
            if name in ("MAX_REPEAT", "MIN_REPEAT"):
                lo, hi, body = av
                if lo < hi:             # bounded or not (issue 44): a?a? splits "a" two ways
                    mine = _last(body, fold)
                    for later_op, later_av in items[n + 1:]:
                        lname = str(later_op)
                        if lname in ("MAX_REPEAT", "MIN_REPEAT") and later_av[0] < later_av[1]:
                            if mine & _first(later_av[2], fold)[0]:
                                return ("adjacent repetitions that can take the same characters (like a*a* or "
                                        ".*.*) are not allowed")
                        if not _first_node(lname, later_av, fold)[1]:
                            break
                problem = walk(body)
            elif name == "SUBPATTERN":
                problem = walk(av[-1])
            elif name == "BRANCH":
                problem = next((p for p in map(walk, av[1]) if p), None)
            elif name in ("ASSERT", "ASSERT_NOT"):
                problem = walk(av[1])
            else:
                problem = None
            if problem:
                return problem
        return None
    try:
        return _alternation_problem(pattern, parser) or walk(tree)
    except RecursionError:
        return "nested too deeply"


def _alternation_problem(pattern: str, parser) -> Optional[str]:
    r"""A repeated group (``*``, ``+``, ``{m,n}`` with n > 1) whose alternatives overlap: two
    can start with the same character, or one can match empty.  Read from the text, as the
    parser merges ``(\w|\d)`` into one class and factors ``(a|ab)`` into ``a(|b)``."""
    groups: List[Tuple[int, List[int]]] = []   # open group: (start, positions of its top-level |)
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i = _class_end(pattern, i)
            continue
        if c == "(":
            groups.append((i, []))
        elif c == "|" and groups:
            groups[-1][1].append(i)
        elif c == ")" and groups:
            start, bars = groups.pop()
            q = pattern[i + 1:i + 2]
            m = _QUANT_RX.match(pattern, i + 1)
            repeated = q in ("*", "+") or (m is not None and m.group() not in ("{0}", "{1}", "{0,1}", "{,1}"))
            if repeated and bars:
                body_start = start + 1
                if pattern.startswith("?", body_start):
                    head = re.match(r"\?(?:P<[^>]*>|<[^>=!]*>|[aiLmsux-]*:|:)", pattern[body_start:])
                    body_start += head.end() if head else 1
                cuts = [body_start - 1] + bars + [i]
                branches = [pattern[cuts[k] + 1:cuts[k + 1]] for k in range(len(cuts) - 1)]
                firsts = []
                for b in branches:
                    try:
                        firsts.append(_first(parser.parse(b, re.IGNORECASE), True))
                    except (re.error, RecursionError, OverflowError, ValueError):
                        firsts.append((frozenset(_PROBES), True))
                if any(nl for _, nl in firsts):
                    return "an alternative that can match empty under a repetition is not allowed"
                for a in range(len(firsts)):
                    for b in range(a + 1, len(firsts)):
                        if firsts[a][0] & firsts[b][0]:
                            return ("overlapping alternatives under a repetition (%r and %r can start with "
                                    "the same character) are not allowed" % (branches[a], branches[b]))
        i += 1
    return None


def _last(seq, fold: bool) -> frozenset:
    """The characters a match of the node list can end with (through nodes that match empty)."""
    out: frozenset = frozenset()
    for op, av in reversed(list(seq)):
        op = str(op)
        if op in ("LITERAL", "NOT_LITERAL", "ANY", "IN"):
            return out | _chars(op, av, fold)
        if op == "SUBPATTERN":
            out |= _last(av[-1], fold)
        elif op == "BRANCH":
            out |= frozenset().union(*(_last(b, fold) for b in av[1]))
        elif op in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            out |= _last(av[2], fold)
        elif op == "ATOMIC_GROUP":
            out |= _last(av, fold)
        if not _first_node(op, av, fold)[1]:
            return out
    return out


def _all_chars(seq, fold: bool) -> frozenset:
    """Every character a match of the node list can hold."""
    out: frozenset = frozenset()
    for op, av in seq:
        op = str(op)
        if op in ("LITERAL", "NOT_LITERAL", "ANY", "IN"):
            out |= _chars(op, av, fold)
        elif op == "SUBPATTERN":
            out |= _all_chars(av[-1], fold)
        elif op == "BRANCH":
            out = out.union(*(_all_chars(b, fold) for b in av[1]))
        elif op in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            out |= _all_chars(av[2], fold)
        elif op == "ATOMIC_GROUP":
            out |= _all_chars(av, fold)
    return out


# What one try costs (issue 44).  re.search tries a pattern at every start, so a pattern is
# linear only when each try does bounded work or reads characters no other try reads again.
# An unbounded repeat (``*``, ``+``, ``{n,}``) that can take the character before it reads the
# rest of the text from every start: ``.*x``, ``\d+%`` on a long number, ``\[[^\]]+\]`` on
# "[[[[": quadratic.  One that follows a character it cannot take (``,[ \t]*``, ``\b\w+``,
# ``\[[^\][]*\]``) reads a run no other try reads; one that ends the pattern stops the search
# once reached; one in a pattern anchored at a line start (``(?m)^Sources:.*$``) that cannot
# take a line end is read by one try per line.  Bounded repeats and alternatives multiply the ways a try can go ("a?" x 28,
# "(?:a|a)" x 20): at most MAX_REGEX_WAYS, a repeat counting once when what follows it cannot
# start with a character it takes (the backtracking into it then fails at once).
MAX_REGEX_WAYS = 10_000
_WAYS_CAP = 10 ** 12
_NONWORD = frozenset(ch for ch in _PROBES if not re.match(r"\w", ch))


class _ScanRefused(Exception):
    pass


def _scan_problem(pattern: str) -> Optional[str]:
    """Why a search with ``pattern`` may take more than linear time (see the comment above), or None."""
    parser = _sre()
    try:
        tree = parser.parse(pattern, re.IGNORECASE)
    except (re.error, RecursionError, OverflowError, ValueError):
        return None                             # the compile step reports it
    multiline = bool(getattr(tree, "state", None) and tree.state.flags & re.MULTILINE)
    items = list(tree)
    # a try starts only after these characters (None: anywhere), while no unbounded repeat came before
    anchor = None
    if items and str(items[0][0]) == "AT" and str(items[0][1]) in ("AT_BEGINNING", "AT_BEGINNING_STRING"):
        anchor = frozenset("\n") if multiline and str(items[0][1]) == "AT_BEGINNING" else frozenset()
    try:
        ways = _scan_ways(items, None, frozenset(), True, {"multiline": multiline, "anchor": anchor})
    except _ScanRefused as exc:
        return str(exc)
    except RecursionError:
        return "nested too deeply"
    if ways > MAX_REGEX_WAYS:
        return ("too many ways to try at each start (alternatives and repeats that can stop at many lengths: "
                "more than %d)" % MAX_REGEX_WAYS)
    return None


def _scan_ways(items: list, prev: Optional[frozenset], after: frozenset, tail: bool, ctx: dict) -> int:
    """The ways a try of the node list can go, refusing an unguarded unbounded repeat.  ``prev``:
    the characters that can come just before (None: any); ``after``: those that can start what
    follows; ``tail``: nothing follows (the pattern ends); ``ctx``: the pattern's multiline flag
    and ``anchor``, the characters a try can start after when the pattern opens with ``^`` or
    ``\\A`` (None: anywhere, or an unbounded repeat came before)."""
    follow = [after] * (len(items) + 1)        # follow[i]: what can start the text after item i - 1
    for i in range(len(items) - 1, -1, -1):
        first, nullable = _first_node(str(items[i][0]), items[i][1], True)
        follow[i] = first | follow[i + 1] if nullable else first
    ways = 1
    for i, (op, av) in enumerate(items):
        op = str(op)
        last_item = tail and i == len(items) - 1
        w = 1
        if op == "SUBPATTERN":
            w = _scan_ways(list(av[-1]), prev, follow[i + 1], last_item, ctx)
        elif op == "ATOMIC_GROUP":
            w = _scan_ways(list(av), prev, follow[i + 1], last_item, ctx)
        elif op == "BRANCH":
            w = sum(_scan_ways(list(b), prev, follow[i + 1], last_item, ctx) for b in av[1])
        elif op in ("ASSERT", "ASSERT_NOT"):
            anchor, ctx["anchor"] = ctx["anchor"], None
            w = _scan_ways(list(av[1]), None, frozenset(), False, ctx)
            ctx["anchor"] = anchor
        elif op in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            w = _repeat_ways(av, prev, follow[i + 1], last_item, ctx)
        ways = min(_WAYS_CAP, ways * w)
        # what can come before the next item
        if op == "AT":
            where = str(av)
            if where == "AT_BEGINNING":
                prev = frozenset("\n") if ctx["multiline"] else frozenset()
            elif where == "AT_BEGINNING_STRING":
                prev = frozenset()
            elif where == "AT_BOUNDARY":
                prev = _NONWORD if prev is None else prev | _NONWORD     # before a word character
            elif where != "AT_END" and where != "AT_END_STRING":
                prev = None
        elif op == "ASSERT" and av[0] < 0:      # (?<=X): the character before is one X ends with
            prev = _last(av[1], True) or prev
        elif op != "ASSERT_NOT" and op != "ASSERT":
            last = _last([(op, av)], True)
            nullable = _first_node(op, av, True)[1]
            prev = (None if prev is None else prev | last) if nullable else last
    return ways


def _repeat_ways(av, prev: Optional[frozenset], after: frozenset, tail: bool, ctx: dict) -> int:
    lo, hi, body = av
    body = list(body)
    takes = _all_chars(body, True)
    again = None if prev is None else prev | _last(body, True)      # before a later round: the body's end
    anchor, ctx["anchor"] = ctx["anchor"], None
    inner = _scan_ways(body, again, _first(body, True)[0] | after, tail and hi == 1, ctx)
    if hi == getattr(_sre(), "MAXREPEAT", 4294967295):
        if not tail and (prev is None or prev & takes) and (anchor is None or anchor & takes):
            raise _ScanRefused("an unbounded repeat (like .* or [^\\]]+) that can take the character before it "
                               "is not allowed: a search reads the rest of the text from every start (bound it, "
                               "{0,200}, or let it follow a character it cannot take)")
        return inner
    ctx["anchor"] = anchor
    if lo == hi:
        return min(_WAYS_CAP, inner ** min(hi, 64))
    if inner == 1 and not (after & _first(body, True)[0]):
        return 1                                # where it stops is where the next node can start
    if inner == 1:
        return hi - lo + 1
    total = 0
    for k in range(lo, hi + 1):
        total += inner ** min(k, 64)
        if total >= _WAYS_CAP:
            return _WAYS_CAP
    return total


def _compile_patterns(values, where: str, what: str, errors: List[str]) -> tuple:
    if not isinstance(values, list) or not all(isinstance(v, str) and v for v in values):
        errors.append("%s: %s must be an array of non-empty regex strings, got %s" % (where, what, _show(values)))
        return ()
    out = []
    for src in values:
        problem = regex_problem(src)
        if problem is None:
            try:
                out.append((src, re.compile(src, re.IGNORECASE)))
                continue
            except re.error as exc:
                problem = "does not compile (%s)" % exc
        errors.append("%s: %s: regex %s, got %s" % (where, what, problem, _show(src)))
    return tuple(out)


def load_rules(path: str) -> Rules:
    """``[scorer] refusal_patterns / cutoff_patterns`` and ``[policy.<name>]`` of a gates file."""
    doc, lines = gates_doc(path)
    errors: List[str] = []
    where = partial(key_line, path, lines)

    scorer = doc.get("scorer") if isinstance(doc.get("scorer"), dict) else {}
    pats = {k: _compile_patterns(scorer[k], where("scorer", k), "[scorer] " + k, errors)
            for k in _RULE_KEYS[:3] if k in scorer}
    reader = scorer.get("refusal_reader", "builtin")
    if reader not in READERS:
        errors.append("%s: [scorer] refusal_reader must be one of %s, got %s"
                      % (where("scorer", "refusal_reader"), ", ".join('"%s"' % r for r in READERS), _show(reader)))
    grounding = scorer.get("grounding", "strict")
    if grounding not in GROUNDING_MODES:
        errors.append("%s: [scorer] grounding must be one of %s, got %s" % (
            where("scorer", "grounding"), ", ".join('"%s"' % g for g in GROUNDING_MODES), _show(grounding)))
    policies = []
    table = doc.get("policy", {})
    if not isinstance(table, dict):
        errors.append("%s: policy must be tables [policy.<name>], got %s" % (where("policy"), _show(table)))
        table = {}
    for name, body in table.items():
        loc = where("policy", name)
        if not isinstance(body, dict):
            errors.append("%s: [policy] %r must be a table [policy.%s] with patterns = [...], got %s"
                          % (loc, name, name, _show(body)))
            continue
        extra = sorted(set(body) - {"patterns", "message"})
        if extra:
            errors.append("%s: [policy.%s] has unknown keys %s; known: patterns, message, got %s"
                          % (loc, name, ", ".join(extra), _show(body)))
            continue
        if "patterns" not in body:
            errors.append("%s: [policy.%s] needs patterns = [...], got %s" % (loc, name, _show(body)))
            continue
        msg = body.get("message", "")
        if not isinstance(msg, str):
            errors.append("%s: [policy.%s] message must be a string, got %s" % (where("policy", name, "message"), name, _show(msg)))
            continue
        compiled = _compile_patterns(body["patterns"], where("policy", name, "patterns"), "[policy.%s] patterns" % name, errors)
        policies.append((name, msg, compiled))
    for src, rx in pats.get("citation_patterns", ()):
        problem = citation_pattern_problem(src, rx)
        if problem:
            errors.append("%s: [scorer] citation_patterns: regex %s, got %s" % (where("scorer", "citation_patterns"), problem, _show(src)))
    if errors:
        raise ScoreError("\n".join(errors))
    return Rules(pats.get("refusal_patterns", ()), pats.get("cutoff_patterns", ()), tuple(policies), reader, grounding,
                 ground="grounding" not in scorer, citations=pats.get("citation_patterns"))


def parse_gates_string(text: str) -> Tuple[List[Gate], Dict[str, str]]:
    """Seed 002's ``name=value,...`` (direction from the registry); ``name>=v`` / ``name<=v`` too.

    A ``warn:``, ``monitor:`` or ``block:`` prefix sets the gate's tier (default block);
    ``monitor:name`` without a threshold only reports the value."""
    gates, shown, errors = [], {}, []
    for part in text.split(","):
        tier, part = _tier_prefix(part)
        if tier == "monitor" and re.fullmatch(r"\s*[^=<>\s]+\s*", part):
            try:
                ref = parse_metric(part.strip())
            except ScoreError as exc:
                errors.append("--gates: %s" % exc)
                continue
            shown[part.strip()] = "monitor"
            gates.append(Gate(ref, None, None, None, "monitor", "monitor"))
            continue
        m = re.fullmatch(r"\s*([^=<>\s]+)\s*(>=|<=|=)\s*(\S*)\s*", part)
        if not m:
            errors.append("--gates: expected name=value, got %r" % part)
            continue
        name, op, value = m.groups()
        try:
            ref = parse_metric(name)
        except ScoreError as exc:
            errors.append("--gates: %s" % exc)
            continue
        try:
            thr = float(value)
            if not math.isfinite(thr):
                raise ValueError
        except ValueError:
            errors.append("--gates: threshold for %r must be a number, got %r" % (name, value))
            continue
        if _unit_problem(ref, thr):
            errors.append("--gates: threshold for %r %s" % (name, _unit_problem(ref, thr)))
            continue
        if op == "=":
            op = ">=" if ref.metric.better == "higher" else "<="
        key, val = part.split("=", 1) if "=" in part else (part, "")
        if key.endswith((">", "<")):
            key = key[:-1]
        shown[key] = val
        gates.append(Gate(ref, op, thr, None, val, tier))
    if errors:
        raise ScoreError("\n".join(errors))
    return gates, shown


def _tier_prefix(part: str) -> Tuple[str, str]:
    """Split ``warn:precision=0.8`` into ("warn", "precision=0.8"); no prefix is "block"."""
    m = re.match(r"\s*(block|warn|monitor):", part)
    return (m.group(1), part[m.end():]) if m else ("block", part)


# =========================================================================== referee/contracts.py
# The data contracts: gold rows, trace rows, chunks, TREC qrels and runs, each read into records
# with their line numbers.

# --------------------------------------------------------------------------- readers


class Gold:
    """The gold set, held compactly: one slot per item in file order."""

    def __init__(self):
        self.qids: List[str] = []
        self.index: Dict[str, int] = {}
        self.lines: List[int] = []
        self.subs: list = []           # tuple of lower-cased substrings (len >= 5) | True (vacuous) | None
        self.rel: list = []            # tuple of gold citation ids, or {id: gain} from qrels
        self.base = array("Q")         # flags known from gold alone: a, e, g (+ issue 20's l, j, C, S, L, R)
        self.cat = array("I")          # index into self.categories
        self.categories: List[str] = []
        self.expected = bytearray()    # 0 = absent, else 1 + DECISIONS.index
        self.trec = False
        self.acceptable: Dict[int, frozenset] = {}   # acceptable_decisions (alternates), by item
        self.req_docs: Dict[int, frozenset] = {}     # required_citation_doc_ids, by item
        self.reject_reason: Dict[int, str] = {}      # rejection_reason of a policy rejection
        self.unlabelled = False                      # every row without labels: reference-free
        self.answers: Dict[int, tuple] = {}          # issue 28: gold_answers, by item
        self.questions: Dict[int, str] = {}          # ... and the question of those items

    def __len__(self) -> int:
        return len(self.qids)

    def category_id(self, name: str, ids: Dict[str, int], where: str = "") -> int:
        i = ids.get(name)
        if i is None:
            if len(self.categories) >= MAX_CATEGORIES:
                raise ScoreError("%s: the per-category field (--by) has more than %d distinct values, got %s; "
                                 "choose a field with fewer values" % (where or "gold", MAX_CATEGORIES, _show(name, 60)))
            i = ids[name] = len(self.categories)
            self.categories.append(name)
        return i


def _check_gold_row(row: dict, path: str, lineno: int, by: str, errors: _Errors):
    """``(qid, labelled, bad, fields)``: the row's qid, whether it has a label field (issue 20:
    a row without one is reference-free), whether a field is bad (each bad one is reported with
    its line; the row is left out) and ``fields``, the checked values ``_add_gold_item`` stores:
    (answerable, gold_claim_substr, gold_citations, gold_answers, category, expected_decision,
    (flag bits, expected_behavior) of the issue-20 fields).  None when the row has no usable qid."""
    qid = row.get("qid")
    if "qid" not in row:
        errors.add("%s:%d: missing \"qid\", got %s" % (path, lineno, _show(row, 60)))
        return None
    if type(qid) is not str or not qid:
        errors.add("%s:%d: \"qid\" must be a non-empty string, got %s" % (path, lineno, _show(qid)))
        return None
    bad = False
    ans = row.get("answerable")
    labelled = not _LABELS.isdisjoint(row)      # issue 20: a row without labels is reference-free
    if not labelled:
        ans = False
    elif type(ans) is not bool:
        errors.add("%s:%d: \"answerable\" must be true or false, got %s" % (path, lineno, _show(ans)))
        bad = True
    subs = row.get("gold_claim_substr")
    if subs is not None and not _str_list(subs):
        errors.add("%s:%d: \"gold_claim_substr\" must be a list of strings, got %s" % (path, lineno, _show(subs)))
        bad = True
    cits = row.get("gold_citations")
    if cits is not None and not _str_list(cits):
        errors.add("%s:%d: \"gold_citations\" must be a list of strings, got %s" % (path, lineno, _show(cits)))
        bad = True
    golds = _gold_answers(row, path, lineno, errors) if "gold_answers" in row else None
    if golds is False:
        bad = True
    cat = row.get(by, NO_CATEGORY)
    if cat is None:
        cat = NO_CATEGORY
    if type(cat) is not str:
        errors.add("%s:%d: %s must be a string, got %s" % (path, lineno, json.dumps(by), _show(cat)))
        bad = True
    exp = row.get("expected_decision")
    if exp is not None and exp not in DECISIONS:
        errors.add("%s:%d: \"expected_decision\" must be one of %s, got %s"
                   % (path, lineno, ", ".join(DECISIONS), _show(exp)))
        bad = True
    extra = (0, None) if _EXTRA_GOLD.isdisjoint(row) else _gold_extras(row, path, lineno, errors)
    if extra is None:
        bad = True
    return qid, labelled, bad, (ans, subs, cits, golds, cat, exp, extra)


def _substrings(subs: Optional[list]):
    """Seed rule: a substring counts when its lower-cased form has >= 5 characters; [] is
    vacuously contained (True), a missing list contains nothing (None)."""
    if subs == []:
        return True
    if subs is None:
        return None
    if len(subs) == 1:          # the usual one substring: no list to build
        low = subs[0].lower()
        return (low,) if len(low) >= 5 else ()
    return tuple([s for s in map(str.lower, subs) if len(s) >= 5])


def _add_gold_item(gold: Gold, qid: str, labelled: bool, fields: tuple, row: dict, path: str, lineno: int,
                   cat_ids: Dict[str, int], intern: Dict[str, str]) -> None:
    """Append a checked row (``fields`` from _check_gold_row) to the gold set: its substrings,
    citation ids (interned), the flags known from gold alone, category and expected decision."""
    ans, subs, cits, golds, cat, exp, (bits, behaviour) = fields
    i = len(gold.qids)
    gold.index[qid] = i
    gold.qids.append(qid)
    gold.lines.append(lineno)
    gold.subs.append(_substrings(subs))
    if not cits:
        rel = ()
    elif len(cits) == 1:
        rel = (intern.setdefault(cits[0], cits[0]),)
    else:
        rel = tuple([intern.setdefault(c, c) for c in dict.fromkeys(cits)])
    gold.rel.append(rel)
    expect_refuse = (exp != "ANSWER") if exp is not None else (not ans)
    if behaviour is not None:       # seed 004's expected_behavior overrides the decision label
        expect_refuse = behaviour == "reject"
    if not labelled:
        bits, expect_refuse = F_NOLAB, False
    elif bits or behaviour is not None or "acceptable_decisions" in row:
        _store_gold_extras(gold, i, row)
    if golds:
        _store_gold_answers(gold, i, golds, row.get("question"))
        bits |= F_GANS
    gold.base.append((F_ANS if ans else 0) | (F_EXPREF if expect_refuse else 0) | (F_GOLD if rel else 0) | bits)
    cid = cat_ids.get(cat)      # a known category: no per-row location text
    gold.cat.append(cid if cid is not None else gold.category_id(cat, cat_ids, "%s:%d" % (path, lineno)))
    gold.expected.append(0 if exp is None else 1 + DECISIONS.index(exp))


def read_gold(path: str, by: str, errors: _Errors, notes: List[str]) -> Gold:
    """The gold set of a gold JSONL, in file order: every row checked (each bad field reported
    with its line, a bad row left out), a qid given twice refused, and the rows all labelled or
    all without labels (reference-free, issue 20), never a mix."""
    gold = Gold()
    cat_ids: Dict[str, int] = {}
    intern: Dict[str, str] = {}
    unlabelled: List[int] = []
    labelled = 0            # the line of the first labelled row (0: none yet)
    for lineno, row in _jsonl(path, errors, notes):
        checked = _check_gold_row(row, path, lineno, by, errors)
        if checked is None:
            continue
        qid, has_labels, bad, fields = checked
        if not has_labels:
            unlabelled.append(lineno)
        if qid in gold.index:
            errors.add("%s:%d: duplicate qid (first on line %d), got %s"
                       % (path, lineno, gold.lines[gold.index[qid]], _show(qid)))
            continue
        if bad:
            continue
        if not labelled and has_labels:
            labelled = lineno
        _add_gold_item(gold, qid, has_labels, fields, row, path, lineno, cat_ids, intern)
    if unlabelled and labelled:
        errors.add("%s:%d: gold mixes labelled and unlabelled rows (line %d has labels, line %d none: no "
                   "answerable, gold_* or expected_* field); label every row or none, got %d unlabelled"
                   % (path, unlabelled[0], labelled, unlabelled[0], len(unlabelled)))
    gold.unlabelled = bool(unlabelled) and not labelled
    if not gold.qids and not errors.count:
        errors.add("%s: no gold items (the file is empty), got 0 rows" % path)
    return gold


# Gold fields of issue 20 (seeds 000 and 004); any one of these makes a row "labelled".
LABEL_FIELDS = ("answerable", "gold_claim_substr", "gold_citations", "expected_decision", "expected_behavior",
                "rejection_reason", "required_behavior", "acceptable_decisions", "required_citation_doc_ids")
REQUIRED_BEHAVIORS = {"must_surface_conflict": F_REQCONF, "must_detect_staleness": F_REQSTALE,
                      "must_clarify": F_REQCLAR}


_LABELS = frozenset(LABEL_FIELDS)
_EXTRA_GOLD = frozenset(LABEL_FIELDS[4:])


def _has_labels(row: dict) -> bool:
    return not _LABELS.isdisjoint(row)


def _gold_extras(row: dict, path: str, lineno: int, errors: _Errors):
    """(flag bits, expected_behavior or None) from the issue-20 gold fields, or None when bad."""
    if _EXTRA_GOLD.isdisjoint(row):
        return 0, None
    bits, bad = 0, False
    beh = row.get("expected_behavior")
    if beh is not None and beh not in ("answer", "reject"):
        errors.add('%s:%d: "expected_behavior" must be "answer" or "reject", got %s' % (path, lineno, _show(beh)))
        bad = True
    reason = row.get("rejection_reason")
    if reason is not None and (type(reason) is not str or not reason):
        errors.add('%s:%d: "rejection_reason" must be a non-empty string, got %s' % (path, lineno, _show(reason)))
        bad = True
    elif reason is not None and beh == "reject":
        bits |= F_POLREJ
    req = row.get("required_behavior")
    names: list = []
    if type(req) is str:
        names = [req]
    elif type(req) is dict and all(type(v) is bool for v in req.values()):
        names = [k for k, v in req.items() if v]      # seed 000: {"must_surface_conflict": true}
    elif _str_list(req):
        names = req
    elif req is not None:
        errors.add('%s:%d: "required_behavior" must be a name, a list of names or an object of name: '
                   'true/false, got %s' % (path, lineno, _show(req)))
        bad = True
    for name in names:
        if name not in REQUIRED_BEHAVIORS:
            errors.add('%s:%d: "required_behavior" %s is unknown; known: %s, got %s'
                       % (path, lineno, json.dumps(name), ", ".join(REQUIRED_BEHAVIORS), _show(req)))
            bad = True
        else:
            bits |= REQUIRED_BEHAVIORS[name]
    acc = row.get("acceptable_decisions")
    if acc is not None and not (_str_list(acc) and all(a in DECISIONS for a in acc)):
        errors.add('%s:%d: "acceptable_decisions" must be a list of %s, got %s'
                   % (path, lineno, ", ".join(DECISIONS), _show(acc)))
        bad = True
    docs = row.get("required_citation_doc_ids")
    if docs is not None and not (_str_list(docs) and all(docs)):
        errors.add('%s:%d: "required_citation_doc_ids" must be a list of document ids, got %s'
                   % (path, lineno, _show(docs)))
        bad = True
    elif docs:
        bits |= F_REQDOCS
    return None if bad else (bits, beh)


def _gold_answers(row: dict, path: str, lineno: int, errors: _Errors):
    """Issue 28: the row's ``gold_answers`` (a tuple), None when absent, False when bad."""
    golds = row.get("gold_answers")
    if golds is None:
        return None
    if not (_str_list(golds) and golds and all(g.strip() for g in golds)):
        errors.add('%s:%d: "gold_answers" must be a non-empty list of non-empty strings, got %s'
                   % (path, lineno, _show(golds)))
        return False
    return tuple(golds)


def _store_gold_answers(gold: Gold, i: int, golds: tuple, question) -> None:
    gold.answers[i] = golds
    if type(question) is str and question:
        gold.questions[i] = question


def _store_gold_extras(gold: Gold, i: int, row: dict) -> None:
    if row.get("acceptable_decisions"):
        gold.acceptable[i] = frozenset(row["acceptable_decisions"])
    if row.get("required_citation_doc_ids"):
        gold.req_docs[i] = frozenset(row["required_citation_doc_ids"])
    if row.get("rejection_reason") is not None and row.get("expected_behavior") == "reject":
        gold.reject_reason[i] = row["rejection_reason"]


def gold_from_trace(path: str, by: str) -> Gold:
    """Reference-free mode (``--trace`` alone): the trace's qids, first-seen order, no labels.

    Bad rows are skipped here; ``score_trace`` reads the file again and reports them."""
    gold = Gold()
    gold.unlabelled = True
    cat_ids: Dict[str, int] = {}
    quiet = _Errors(0)
    for lineno, row in _jsonl(path, quiet, []):
        qid = row.get("qid") or row.get("q_id")
        if type(qid) is not str or qid in gold.index:
            continue
        cat = row.get(by)
        gold.index[qid] = len(gold.qids)
        gold.qids.append(qid)
        gold.lines.append(lineno)
        gold.subs.append(None)
        gold.rel.append(())
        gold.base.append(F_NOLAB)
        gold.cat.append(gold.category_id(cat if type(cat) is str else NO_CATEGORY, cat_ids, "%s:%d" % (path, lineno)))
        gold.expected.append(0)
    if not gold.qids and not quiet.count:
        raise ScoreError("%s: no trace rows with a qid (the file is empty), got 0 rows" % path)
    return gold


def read_chunks(path: str, errors: _Errors, notes: List[str],
                policies: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """--chunks FILE: JSONL of {"id", "text"} (BEIR's {"_id", "text"} too); an optional
    "policy" (summarize, quote_only, no_use) goes to ``policies``."""
    chunks: Dict[str, str] = {}
    for lineno, row in _jsonl(path, errors, notes):
        pol = row.get("policy")
        if pol is not None and pol not in SOURCE_POLICIES:
            errors.add('%s:%d: "policy" must be one of %s, got %s' % (path, lineno, ", ".join(SOURCE_POLICIES), _show(pol)))
            continue
        if pol is not None and pol != "summarize" and policies is not None:
            policies[str(row.get("id", row.get("_id", row.get("chunk_id"))))] = pol
        cid = row.get("id", row.get("_id", row.get("chunk_id")))
        text = row.get("text")
        if type(cid) is not str or not cid:
            errors.add("%s:%d: \"id\" (or \"_id\") must be a non-empty string, got %s" % (path, lineno, _show(cid)))
        elif type(text) is not str:
            errors.add("%s:%d: \"text\" must be a string, got %s" % (path, lineno, _show(text)))
        else:
            chunks[cid] = text
    return chunks


def read_qrels(path: str, errors: _Errors) -> Gold:
    """TREC qrels ``topic iter docno rel``: relevance >= 1 is relevant, the level is the gain."""
    gold = Gold()
    gold.trec = True
    gold.judgments: List[Dict[str, int]] = []
    rels: Dict[str, Dict[str, int]] = {}
    first_line: Dict[str, int] = {}
    last = None
    for first, lines in _text_line_batches(path, errors):     # (one loop, no generator per line)
        lineno = first - 1
        for line in lines:
            lineno += 1
            parts = line.split()
            if len(parts) != 4:
                if parts:
                    errors.add("%s:%d: qrels line needs 4 fields (topic iter docno rel), got %r"
                               % (path, lineno, " ".join(parts)))
                continue
            topic, _, doc, rel = parts
            try:
                if len(rel) > MAX_NUMBER_CHARS:
                    raise ValueError
                level = int(rel)
            except ValueError:
                errors.add("%s:%d: relevance must be an integer, got %r" % (path, lineno, rel))
                continue
            if topic != last:
                last = topic
                judged = rels.get(topic)
                if judged is None:
                    judged = rels[topic] = {}
                    first_line[topic] = lineno
            if doc in judged:
                errors.add("%s:%d: duplicate judgment for topic %s, got %r" % (path, lineno, topic, doc))
                continue
            judged[doc] = level
    cat_ids: Dict[str, int] = {}
    for topic in sorted(rels, key=lambda t: first_line[t]):
        gains = {d: g for d, g in rels[topic].items() if g >= 1}
        gold.index[topic] = len(gold.qids)
        gold.qids.append(topic)
        gold.lines.append(first_line[topic])
        gold.subs.append(None)
        gold.rel.append(gains)
        gold.judgments.append(rels[topic])     # every level, for the trec_eval measures (bpref)
        gold.base.append(F_GOLD if gains else 0)
        gold.cat.append(gold.category_id(NO_CATEGORY, cat_ids))
        gold.expected.append(0)
    if not gold.qids and not errors.count:
        errors.add("%s: no judgments (the file is empty), got 0 lines" % path)
    return gold


_INF = float("inf")


class RunRankings(dict):
    """read_run's result: topic -> (scores, docnos); ``runid``: the tag of the run's last line
    (trec_eval's runid)."""
    runid = ""


def read_run(path: str, errors: _Errors) -> Dict[str, Tuple[List[float], List[str]]]:
    """TREC run ``topic Q0 docno rank score tag [...]``; the rank column is ignored.  Each
    topic's (scores, docnos) in trec_eval's order: score descending, then docno descending.
    (A run has a million lines: one loop over blocks of lines, no generator per line.)"""
    entries: Dict[str, Dict[str, float]] = {}     # topic -> {docno: score}, in the run's order
    last = None
    tag = ""
    for first, lines in _text_line_batches(path, errors):
        lineno = first - 1
        for line in lines:
            lineno += 1
            parts = line.split()
            if len(parts) < 6:
                if parts:
                    errors.add("%s:%d: run line needs 6 fields (topic Q0 docno rank score tag), got %r"
                               % (path, lineno, " ".join(parts)))
                continue
            topic, doc = parts[0], parts[2]
            try:
                score = float(parts[4])
                if not -_INF < score < _INF:      # (NaN fails too)
                    raise ValueError
            except ValueError:
                errors.add("%s:%d: score must be a number, got %r" % (path, lineno, parts[4]))
                continue
            if topic != last:          # a run's lines come topic by topic: look the topic up once
                last = topic
                docs = entries.get(topic)
                if docs is None:
                    docs = entries[topic] = {}
            if doc in docs:
                errors.add("%s:%d: duplicate docno for topic %s, got %r" % (path, lineno, topic, doc))
                continue
            docs[doc] = score
            tag = parts[5]
    run = RunRankings()
    run.runid = tag
    for topic, docs in entries.items():
        scores = list(docs.values())
        if all(map(float.__gt__, scores, scores[1:])):    # strictly descending: already in order
            run[topic] = (scores, list(docs))
        else:
            pairs = sorted(zip(scores, docs), reverse=True)
            run[topic] = ([s for s, _ in pairs], [d for _, d in pairs])
    return run


# =========================================================================== referee/response.py
# The response record: what a system wrote in one trace row, read once; every verdict reads it.

# ---- the response record
# ``ResponseReader.read`` is the one place a trace row's claim is read.  It runs the readings in
# order: reading 1 (citations in the text, with the [scorer] citation_patterns) gives the claim
# without markers that every later reading and verdict reads; reading 2 (the refusal reading:
# the token, the built-in reader or the exact one, the [scorer] decline and cutoff patterns);
# reading 3 (answer normalisation) and reading 4 (sentences and what grounding checks of each)
# are read on first use, since most rows match no gold answer and most runs ground nothing.
# The numbers and words of the claim (judge.tokens: the hallucination check and answer
# relevance) are kept on the record by the first verdict that needs them.


class Refusal(NamedTuple):
    """Reading 2 of a response: whether it declines."""
    kind: str = KIND_ANSWER          # answer / refusal / partial_refusal
    reason: str = ""                 # why ("" for an answer read without a caveat)
    flags: int = 0                   # as judge's flags: F_REFUSED (not shipped) | F_PROSE | F_CUTOFF | F_PARTIAL
    cutoff: Optional[str] = None     # the training-cutoff excuse's words (F_CUTOFF)


_READ_AS_ANSWER = Refusal()
_THE_TOKEN = Refusal(KIND_REFUSAL, "the refusal token", F_REFUSED)
_EXACT_TOKEN = Refusal(KIND_REFUSAL, "", F_REFUSED)        # the exact reader gives no reason


class Response:
    """One trace row's response as every verdict reads it (built by ``ResponseReader.read``)."""
    __slots__ = ("claim", "low", "citations", "text_citations", "bad_marks", "refusal", "tokens",
                 "_words", "_sentences")

    def __init__(self, claim: str, citations: List[str], text_citations: Optional[List[str]], bad_marks):
        self.claim = claim                    # without citation markers and sources list, stripped
        self.low = claim.lower()
        self.citations = citations            # the row's list, else the citations read from the text
        self.text_citations = text_citations  # the citations read when they replaced an empty list, else None
        self.bad_marks = bad_marks            # markers that resolve to nothing, as written
        self.refusal: Refusal = _READ_AS_ANSWER    # reading 2 (ResponseReader.read sets it)
        self.tokens: Optional[set] = None     # judge.tokens(claim), kept by the first verdict that reads them
        # _words and _sentences: set on first use (answer_words, sentences)

    @property
    def answer_words(self) -> Optional[List[str]]:
        """Reading 3: the claim's normalised words (``answer_tokens``), read on first use; None
        when they cannot be read (match_answer reads them again, and names the problem)."""
        try:
            return self._words
        except AttributeError:
            try:
                self._words = answer_tokens(self.claim)
            except Exception:         # noqa: BLE001 - issue 44: no text raises out of a reader
                self._words = None
            return self._words

    @property
    def sentences(self) -> List[Tuple[int, int, str, Optional[str]]]:
        """Reading 4: ``answer_sentences`` of the claim (its markers are already out: none is
        read again), read on first use."""
        try:
            return self._sentences
        except AttributeError:
            try:
                self._sentences = answer_sentences(self.claim, ())
            except Exception:         # noqa: BLE001 - issue 44: ground reads them again, and names the problem
                self._sentences = None
            return self._sentences


class ResponseReader:
    """The settings of every reading of a response: the [scorer] citation patterns, the known
    chunk ids (--chunks), the refusal token and the refusal reader with its patterns."""

    def __init__(self, refusal: str, rules: Optional[Rules] = None, chunks: Optional[Dict[str, str]] = None):
        self.rules = rules = rules or Rules()
        self.cite_patterns = rules.citations          # None: the built-in patterns; (): none
        self.chunks = chunks
        self.token = refusal.strip().lower()
        self.token_first = self.token.split(None, 1)[0] if self.token else ""   # plain_answer's
        self.prose_rules = bool(rules.refusal or rules.cutoff)
        self.declines = rules.refusal + rules.cutoff  # decline wordings for the built-in reader

    def read(self, claim: Optional[str], cits: Optional[List[str]], ret, cited, present: bool = True) -> Response:
        """The record of one row: its ``answer_json`` claim and citations (None when absent),
        ``retrieved_ids`` and ``cited_chunks``; ``present``: False for an item without a row."""
        resp = None
        # reading 1: the claim loses its markers and sources list; an empty or absent citations
        # list is replaced by the citations read from the text (with each bad marker as written:
        # a citation outside retrieved_ids)
        pats = self.cite_patterns
        if claim and pats != () and (pats is not None or any(map(claim.__contains__, _CITE_TRIGGER_CHARS))):
            rd = read_citations(claim, ret, (cited, self.chunks), pats)
            if rd.citations or rd.bad:
                resp = (Response(rd.claim, cits, None, rd.bad) if cits else
                        Response(rd.claim, rd.citations + rd.bad, rd.citations, rd.bad))
        if resp is None:
            resp = Response((claim or "").strip(), cits or [], None, ())
        # reading 2, of the claim reading 1 left; readings 3 and 4 on first use (Response)
        resp.refusal = self.refusal(resp.claim, resp.low, present)
        return resp

    def refusal(self, claim: str, low: str, present: bool) -> Refusal:
        """Reading 2 of a claim read by reading 1 (``low``: lower-cased).  An item without a
        row is read only by the exact reader (seed 002: an empty claim)."""
        rules = self.rules
        if rules.reader == "exact":
            if low == self.token:
                return _EXACT_TOKEN
            bits = rules.refuses(claim) if self.prose_rules else 0     # issue 20: matched anywhere
            if not bits:
                return _READ_AS_ANSWER
            return Refusal(KIND_REFUSAL, "", bits | F_REFUSED, self._cutoff_words(claim) if bits & F_CUTOFF else None)
        if not present:
            return _READ_AS_ANSWER
        if low == self.token:       # fast path: exactly the token (read_refusal's first case)
            return _THE_TOKEN
        extra = self.declines
        # [scorer] patterns a claim cannot match (none of their required literals; a claim the
        # reader reads whole) are left out of the reading: they would mark nothing
        if extra and len(claim) <= REFUSAL_WINDOW and _literals_absent(extra, claim):
            extra = ()
        if not extra and plain_answer(claim, low, self.token, self.token_first):
            return _READ_AS_ANSWER     # fast path: no decline cue can apply (read_refusal's "none" case)
        kind, reason, pat = read_refusal(claim, self.token, extra)
        if reason and pat:
            reason = "%s [pattern %d]" % (reason, pat)
        if kind == KIND_ANSWER:
            return Refusal(kind, reason)
        if kind == KIND_PARTIAL:
            return Refusal(kind, reason, F_PARTIAL)
        if reason == "the refusal token":
            return _THE_TOKEN
        cutoff = self._cutoff_words(claim) if rules.cutoff else None
        return Refusal(kind, reason, F_REFUSED | F_PROSE | (F_CUTOFF if cutoff is not None else 0), cutoff)

    def _cutoff_words(self, claim: str) -> Optional[str]:
        """The words of the first [scorer] cutoff pattern that matches (its first 80
        characters), None when none does."""
        for _, rx in self.rules.cutoff:
            m = rx.search(claim)
            if m:
                return m.group(0)[:80]
        return None


# =========================================================================== referee/judge.py
# Judging: per-item verdicts (flags) from one gold row and one trace row; no I/O.

# --------------------------------------------------------------------------- judging


def tokens(text: str) -> set:
    """Lower-cased word and number tokens; "1,000" and "1000" are the same number."""
    low = text.lower()
    if low.isascii():       # _TOKEN_RX's tokens by byte translations (_LETTER_BYTES)
        raw = low.encode()
        found = set(ascii_words(raw))
        for part in raw.translate(_NUMBER_BYTES).split():
            if part.isdigit():
                found.add(part.decode())
            elif part.strip(b".,"):
                found.update(_NUMBER_RX.findall(part.decode()))
    else:
        found = set(_TOKEN_RX.findall(low))
    if "," in text:
        found = {t.replace(",", "") for t in found}
    return found


def ascii_words(raw: bytes) -> List[str]:
    """The words _TOKEN_RX finds in a lower-cased ASCII text (``raw``: its bytes): runs of a-z."""
    return raw.translate(_LETTER_BYTES).decode().split()


WORD_SET_CHARS = 2000     # unsupported_tokens: ASCII texts up to this size have their words listed
LOOKUP_TOKENS = 32        # unsupported_tokens: past this many wanted tokens the texts are tokenized once


def unsupported_tokens(claim: str, texts: List[str], cache: Optional[dict] = None,
                       claim_tokens: Optional[set] = None, copy_checked: bool = False) -> List[str]:
    """Numbers and content words of ``claim`` that occur in none of ``texts`` (sorted);
    ``claim_tokens``: tokens(claim) when the caller has them; ``copy_checked``: the caller
    found that ``copied_from`` is False.  Without a ``cache`` an ASCII
    text is not tokenized: each wanted number is looked up in it (``_token_in``), and each wanted
    word too unless the texts are short (WORD_SET_CHARS): then in the set of their words.  Past
    LOOKUP_TOKENS wanted tokens the texts are tokenized once (a look-up reads a text each time)."""
    if not copy_checked and copied_from(claim, texts):
        return []
    if claim_tokens is None:
        claim_tokens = tokens(claim)
    wanted = [tok for tok in claim_tokens if tok[0].isdigit() or (len(tok) >= 3 and tok not in STOPWORDS)]
    if not wanted:
        return []
    if cache is None and len(wanted) <= LOOKUP_TOKENS and all(map(str.isascii, texts)):
        lows = [t.lower() for t in texts]
        words = None
        if sum(map(len, lows)) <= WORD_SET_CHARS:
            words = set(ascii_words(lows[0].encode())) if len(lows) == 1 else \
                {w for low in lows for w in ascii_words(low.encode())}
        bad = []
        for tok in wanted:
            if words is not None and not tok[0].isdigit():     # a word: one of the texts' words
                if tok not in words:
                    bad.append(tok)
                continue
            for n, low in enumerate(lows):
                found = _token_in(low, tok)
                if found is None:           # a number in a text with a comma: its tokens decide
                    found = tok in tokens(texts[n])
                if found:
                    break
            else:
                bad.append(tok)
        return sorted(bad)
    support: set = set()
    for t in texts:
        if cache is not None:
            toks = cache.get(t)
            if toks is None:
                toks = cache[t] = frozenset(tokens(t))
        else:
            toks = tokens(t)
        if len(texts) == 1:
            support = toks
        else:
            support |= toks
    return sorted(tok for tok in wanted if tok not in support)


_NOT_ALNUM = "".join(chr(c) for c in range(128) if not chr(c).isalnum())
_WORD_GOES_ON = frozenset("abcdefghijklmnopqrstuvwxyz")      # a word token goes on across these
_NUMBER_GOES_ON = frozenset("0123456789.,")                  # a number may (_TOKEN_RX)


def copied_from(claim: str, texts: List[str], low: Optional[str] = None) -> bool:
    """Whether ``_copied`` shows that an ASCII ``claim`` is copied from one of ``texts`` (then
    none of its tokens is unsupported: nothing to tokenize).  False proves nothing.
    ``low``: claim.lower() when the caller has it (Response.low)."""
    if not claim.isascii():
        return False
    core = (claim.lower() if low is None else low).strip(_NOT_ALNUM)
    for t in texts:
        if _copied(core, t):
            return True
    return False


def _copied(core: str, text: str) -> bool:
    """Whether every token of an ASCII claim is one of tokens(text), shown the cheap way: its
    ``core`` (lower-cased, without its leading and trailing non-alphanumerics, which hold no
    token) occurs in the ASCII ``text`` (case folded) between characters that cannot go on its
    first and last token.  False proves nothing."""
    if not core or not text.isascii():
        return False
    low = text.lower()
    p = low.find(core)
    if p < 0:
        return False
    e = p + len(core)
    return ((p == 0 or low[p - 1] not in (_WORD_GOES_ON if core[0].isalpha() else _NUMBER_GOES_ON))
            and (e == len(low) or low[e] not in (_WORD_GOES_ON if core[-1].isalpha() else _NUMBER_GOES_ON)))


def _token_in(low: str, tok: str) -> Optional[bool]:
    """Whether ``tok`` (one of tokens(some text)) is one of tokens(text) for an ASCII text,
    ``low`` = text.lower(), without tokenizing it: an occurrence that _TOKEN_RX would match
    whole.  A word is a maximal run of letters; a number starts after no digit (nor a digit and
    "." or ",") and ends before none (nor "." or "," and a digit).  None (undecided) for a
    number when the text has a comma (tokens() drops commas: "1,000" is 1000)."""
    size, end = len(tok), len(low)
    p = low.find(tok)
    if p < 0:
        return None if tok[0].isdigit() and "," in low else False
    if tok[0].isdigit():
        if "," in low:
            return None
        while p >= 0:
            e = p + size
            if ((p == 0 or not (low[p - 1].isdigit() or (low[p - 1] == "." and p >= 2 and low[p - 2].isdigit())))
                    and (e == end or not (low[e].isdigit() or (low[e] == "." and e + 1 < end and low[e + 1].isdigit())))):
                return True
            p = low.find(tok, p + 1)
        return False
    while p >= 0:
        e = p + size
        if (p == 0 or not low[p - 1].isalpha()) and (e == end or not low[e].isalpha()):
            return True
        p = low.find(tok, p + 1)
    return False


#: The most rankings ``Scorer._retrieval`` keeps measures of (cleared when full).
MEASURE_MEMO_LIMIT = 100000


def strictly_decreasing(values) -> bool:
    """Whether every value is larger than the next (an empty or one-value list is)."""
    return all(map(gt, values, values[1:]))

class Scorer:
    """Per-item verdicts, stored compactly (arrays) so memory grows with the gold set only."""

    def __init__(self, gold: Gold, ks: List[int], refusal: str, chunks: Optional[Dict[str, str]],
                 rules: Optional[Rules] = None, chunk_policies: Optional[Dict[str, str]] = None):
        n = len(gold)
        self.gold, self.ks = gold, ks
        self.chunks = chunks
        self.chunk_tokens: dict = {}
        self.k0 = ks[0]
        self.flags = array("Q", bytes(8 * n))
        # readings 1-4 of a row, with the [scorer] patterns: respond(claim, cits, ret, cited) -> Response
        self.reader = ResponseReader(refusal, rules, chunks)
        self.respond = self.reader.read
        self._init_extra(rules, chunk_policies)
        self._init_answers()
        self.seed_rec = {k: bytearray(n) for k in ks}
        self.hits = {k: array("I", bytes(4 * n)) for k in ks}
        self.rec = {k: array("d", bytes(8 * n)) for k in ks}
        self.ndcg = {k: array("d", bytes(8 * n)) for k in ks}
        self.rrk = {k: array("d", bytes(8 * n)) for k in ks}
        self.k_arrays = [(self.hits[k], self.rec[k], self.ndcg[k], self.rrk[k]) for k in ks]   # _retrieval's, in ks order
        self.rr = array("d", bytes(8 * n))
        self.unsupported: Dict[int, List[str]] = {}
        self.no_text: Dict[int, str] = {}
        self.text_cits: Dict[int, List[str]] = {}             # citations read from the text, by item
        self.bad_marks: Dict[int, List[str]] = {}             # markers that resolve to nothing, by item
        self.idcg: Dict[Tuple[int, int], float] = {}
        self.measure_memo: Dict[tuple, tuple] = {}            # _retrieval: (positions, nrel) -> measures
        _disc(max(ks) + 1)

    # ---- one item
    def judge(self, i: int, resp: Optional[Response], ret, scores, cited, decision, fallback, present: bool) -> None:
        """The seed's verdicts on item ``i`` (flags, rank measures, answer correctness) from its
        row's response record ``resp`` (score_trace), or from no row (``present`` False: an
        empty claim, seed 002; ``resp`` None, built here) or a TREC ranking (``resp`` None)."""
        gold = self.gold
        f = gold.base[i]
        if i in self.no_text:       # a later (duplicate) row replaces an earlier verdict
            del self.no_text[i]
        if i in self.unsupported:
            del self.unsupported[i]
        if present:
            f |= F_TRACE
        rel = gold.rel[i]
        ret = ret or []
        if gold.trec:
            self.flags[i] = self._judge_ranking(i, f, rel, ret, scores)
            return
        if resp is None:
            resp = self.respond(None, None, ret, cited, present)
        reason, refused = resp.refusal.reason, resp.refusal.flags      # reading 2: shipped or not, and why
        if i in self.refusal_reason:
            del self.refusal_reason[i]
        if reason:
            self.refusal_reason[i] = reason
        f |= refused & ~F_REFUSED
        cits = resp.citations
        citset = set(cits)
        retset = set(ret)
        in_ret = retset.issuperset(citset)
        # seed 002: hit needs citations within retrieved_ids and overlap with gold; with no
        # gold citations only an empty citation list hits.
        if rel:
            hit = in_ret and not citset.isdisjoint(rel)
        else:
            hit = in_ret and not cits
        subs = gold.subs[i]
        if subs is True:
            cont = True
        elif subs:
            cont = any(map(resp.low.__contains__, subs))
        else:
            cont = False
        if rel and not retset.isdisjoint(rel):
            f |= F_GOLDRET
        if not refused & F_REFUSED:
            f = self._judge_shipped(i, f, resp, citset, in_ret, hit, cont, cited)
        elif not f & F_ANS:
            f |= F_PASS
        exp = gold.expected[i]
        if exp and decision is not None:
            f |= F_DEC
            dec = decision.strip().upper()
            if dec == DECISIONS[exp - 1] or dec in gold.acceptable.get(i, ()):
                f |= F_DECOK
        if fallback is not None:
            f |= F_FB
            if fallback:
                f |= F_FBUSED
        # seed recall at k: every gold citation among the first k retrieved_ids (trace order),
        # vacuously for none: whether the last one to appear appears within k
        if not rel:
            need = 0
        elif retset.issuperset(rel):
            need = max(map(ret.index, rel)) + 1 if len(rel) > 1 else ret.index(rel[0]) + 1
        else:
            need = math.inf
        for k in self.ks:
            self.seed_rec[k][i] = need <= k
        if need <= self.k0:
            f |= F_REC
        if rel and "ranks" in self.needs:     # when asked (NEEDS); retset tells whether the ids are distinct
            self._retrieval(i, rel, ret, scores, len(retset) == len(ret))
        if gold.answers or self.answer_substr:    # else nothing to match: K never set
            f = self._judge_answer(i, resp, f)
        if resp.text_citations is not None or resp.bad_marks or self.text_cits or self.bad_marks:
            f = self._mark_read(i, resp, f)
        self.flags[i] = f

    def _judge_ranking(self, i: int, f: int, rel, ret: List[str], scores) -> int:
        """TREC mode: the rank measures of item ``i``'s ranking, and whether it retrieved a
        relevant document (F_GOLDRET)."""
        if rel and "ranks" in self.needs:     # when asked (NEEDS)
            self._retrieval(i, rel, ret, scores, len(set(ret)) == len(ret))
            if ret and not set(rel).isdisjoint(ret):
                f |= F_GOLDRET
        return f

    def _judge_shipped(self, i: int, f: int, resp: Response, citset: set, in_ret: bool, hit: bool, cont: bool,
                       cited) -> int:
        """The seed's flags of a shipped response: content, citation hit and validity, and
        hallucination: its numbers and content words against the cited texts (F_HMEAS, F_HALL
        with ``unsupported[i]``; not measured when a cited chunk has no text: ``no_text[i]``)."""
        cits = resp.citations
        f |= F_SHIP
        if cont:
            f |= F_CONT
        if hit:
            f |= F_HIT
        if not in_ret:
            f |= F_NOTRET
        if in_ret and len(cits) <= MAX_CITATIONS and len(citset) == len(cits):
            f |= F_VALID
        if f & F_ANS and cont and hit:
            f |= F_PASS
        if not cits or not in_ret:
            return f | F_HALL | F_HMEAS
        texts = []
        cache = None
        for c in dict.fromkeys(cits):
            t = cited.get(c) if cited else None
            if t is None and self.chunks is not None:
                t = self.chunks.get(c)
                cache = self.chunk_tokens
            if t is None:
                self.no_text[i] = c
                return f
            texts.append(t)
        f |= F_HMEAS
        # a claim copied from a cited text is not tokenized (judge_extra then looks its
        # question's terms up in it: terms_in_text)
        if not copied_from(resp.claim, texts, resp.low):
            bad = unsupported_tokens(resp.claim, texts, cache, self._claim_tokens(resp), True)
            if bad:
                f |= F_HALL
                self.unsupported[i] = bad
        return f

    def _claim_tokens(self, resp: Response) -> set:
        """tokens(claim), kept on the record: the hallucination check and answer_relevance
        read the same numbers and words."""
        if resp.tokens is None:
            resp.tokens = tokens(resp.claim)
        return resp.tokens

    # ---- issue 28: answer correctness (reading 3)
    def _init_answers(self) -> None:
        n = len(self.gold)
        nan = array("d", [math.nan])
        self.answer_f1 = nan * n            # NaN = not measured (refused, or no gold answers)
        self.answer_recall = nan * n
        # gold_claim_substr is matched (normalised) only when asked: a gate names an answer
        # metric (run() sets this); gold_answers are always matched.
        self.answer_substr = False

    def _judge_answer(self, i: int, resp: Response, f: int) -> int:
        """answer_correct of item ``i``'s shipped claim (flags K; answer_f1/answer_recall)."""
        self.answer_f1[i] = self.answer_recall[i] = math.nan
        f &= ~F_ANSOK
        if not f & F_SHIP:
            return f
        golds = self.gold.answers.get(i)
        if golds is not None:
            m = match_answer(resp.claim, golds, self.gold.questions.get(i), words=resp.answer_words)
        elif self.answer_substr and f & F_ANS and type(self.gold.subs[i]) is tuple and self.gold.subs[i]:
            m = match_answer(resp.claim, self.gold.subs[i], None, partial=False, words=resp.answer_words)
        else:
            return f
        self.answer_f1[i] = m.f1
        self.answer_recall[i] = m.recall
        return f | F_ANSOK if m.correct else f

    def _mark_read(self, i: int, resp: Response, f: int) -> int:
        """F_CITTEXT / F_BADMARK of item ``i`` from reading 1 (a bad marker makes the citations
        invalid even when the row's own list is used); an earlier row's reading goes."""
        self.text_cits.pop(i, None)
        self.bad_marks.pop(i, None)
        if resp.text_citations is not None:
            f |= F_CITTEXT
            self.text_cits[i] = resp.text_citations
        if resp.bad_marks:
            f = (f | F_BADMARK) & ~F_VALID
            self.bad_marks[i] = resp.bad_marks
        return f

    def _retrieval(self, i: int, rel, ret, scores, distinct: bool) -> None:
        """The rank measures of item ``i`` at every k; ``distinct``: whether ``ret``'s ids are
        distinct (the caller knows: QA mode has their set already)."""
        # trec_eval order: score descending, then id descending; otherwise the trace's order.
        # Scores that strictly decrease already give that order (no tie for the ids to break).
        if scores is not None and not strictly_decreasing(scores):
            ranked = [d for _, d in sorted(zip(scores, ret), reverse=True)]
        else:
            ranked = ret
        if not distinct:                           # ranked: ret, perhaps reordered
            ranked = list(dict.fromkeys(ranked))   # a repeated id counts once, at its best rank
        if type(rel) is dict:
            positions, gains = relevant_positions(ranked, rel)
            rr, per_k = self._measures(positions, gains, len(rel), ideal_gains(rel.values()))
        else:       # gain 1 each: the measures depend on (positions, number of gold ids) only
            if len(rel) == 1:       # one gold id (most items): its rank, if retrieved
                key = ((ranked.index(rel[0]),) if rel[0] in ranked else (), 1)
            else:
                key = (tuple(relevant_positions(ranked, rel)[0]), len(rel))
            found = self.measure_memo.get(key)
            if found is None:
                if len(self.measure_memo) >= MEASURE_MEMO_LIMIT:   # bounded: long rankings must not grow it
                    self.measure_memo.clear()
                positions = list(key[0])
                found = self.measure_memo[key] = self._measures(positions, [1] * len(positions), key[1], None)
            rr, per_k = found
        self.rr[i] = rr
        for (hits_k, rec_k, ndcg_k, rrk_k), (_, hits, rec, ndcg, rrk) in zip(self.k_arrays, per_k):
            hits_k[i] = hits
            rec_k[i] = rec
            ndcg_k[i] = ndcg
            rrk_k[i] = rrk

    def _measures(self, positions: List[int], gains: List[int], nrel: int, ideal: Optional[List[int]]) -> tuple:
        """(RR, ((k, hits, R@k, nDCG@k, RR@k) for each k)) of one ranking's relevant
        ``positions``; ``ideal``: the ideal gains of graded relevance (None: gain 1 each)."""
        per_k = []
        for k in self.ks:
            hits = hits_at(positions, k)
            if ideal is not None:
                idcg = ideal_dcg(ideal, k)
            else:      # gain 1 each: the ideal DCG depends on (nrel, k) only
                idcg = self.idcg.get((nrel, k))
                if idcg is None:
                    idcg = self.idcg[(nrel, k)] = ideal_dcg([1] * nrel, k)
            per_k.append((k, hits, measure_r(hits, nrel), measure_ndcg(positions, gains, k, idcg),
                          measure_rr(positions, k)))
        return measure_rr(positions), tuple(per_k)

    # ---- issue 20: policies, decisions for the right reason, reference-free measures
    def _init_extra(self, rules: Optional[Rules], chunk_policies: Optional[Dict[str, str]]) -> None:
        n = len(self.gold)
        self.rules = rules or Rules()
        self.refusal_reason: Dict[int, str] = {}     # why an item was read as it was (refusals, caveats)
        self.chunk_policies = chunk_policies or {}
        self.evidence: Dict[int, List[dict]] = {}       # violations, by item (only failing items)
        nan = array("d", [math.nan])
        self.answer_rel = nan * n
        self.context_rel = nan * n
        self.latency = nan * n
        self.cost = nan * n
        self.term_cache: Dict[str, frozenset] = {}
        self.needs = set(NEEDS)      # what run() found asked for (see NEEDS); everything by default
        self.flags_seen = bytearray(n)
        # issue 29: grounding sentence by sentence (reading 4)
        self.grounding_on = self.rules.ground or self.rules.grounding == "sentences"
        self.faith = nan * n                               # supported / checked sentences, per item
        self.unsup_sents: Dict[int, List[dict]] = {}       # unsupported sentences, by item
        self.ground_no_text: Dict[int, str] = {}           # shipped item -> a chunk id without text
        # items with a question and retrieved chunks whose texts are not all known (no context value)
        self.context_lack = bytearray(n)
        # policy_compliance is measured when a [policy.*] exists or gold names a policy rejection
        self.policy_measured = bool(self.rules.policies) or any(b & F_POLREJ for b in self.gold.base)
        # every [policy.*] pattern in one tuple: a claim without any of their required literals
        # (_literals_absent) matches no policy
        self.policy_patterns = tuple(p for _, _, pats in self.rules.policies for p in pats)

    def judge_extra(self, i: int, resp: Response, ret, cited, cited_pol, decision, extra) -> None:
        """Issue 20's per-item verdicts, after ``judge`` set the seed flags of item ``i`` from
        the same response record ``resp``."""
        q, reasons, total, cost = extra
        f = self.flags[i]
        if i in self.evidence:
            del self.evidence[i]
        if self.flags_seen[i]:       # a duplicate row replaces the earlier verdict
            for arr in (self.answer_rel, self.context_rel, self.latency, self.cost, self.faith):
                arr[i] = math.nan
            self.unsup_sents.pop(i, None)
            self.ground_no_text.pop(i, None)
        self.flags_seen[i] = 1
        ret = ret or []
        if total is not None:
            self.latency[i] = total
        if cost is not None:
            self.cost[i] = cost
        if f & F_CUTOFF or (f & F_SHIP and (self.rules.policies or f & F_POLREJ or cited_pol or self.chunk_policies)):
            f = self._violations(i, f, resp, ret, cited, cited_pol)      # evidence[i]
        if f & (F_REQCONF | F_REQSTALE | F_REQCLAR | F_REQDOCS):
            f = self._right_reasons(i, f, resp.citations, decision, reasons)
        # reference-free relevance (lexical)
        self.context_lack[i] = 0
        if not q or "relevance" not in self.needs:
            pass
        elif not f & F_SHIP and not (ret and (self.chunks is not None or (cited and len(cited) >= len(ret)))):
            # no answer relevance and no context relevance to measure: whether q has a term
            # decides context_lack alone (has_content_terms: cheaper than the terms)
            if ret and has_content_terms(q):
                self.context_lack[i] = 1
        else:
            qt = content_terms(q)
            if qt and f & F_SHIP:
                toks = resp.tokens      # the claim's tokens when judge read them, else a lookup
                found_terms = terms_in(qt, toks) if toks is not None else terms_in_text(qt, resp.claim, resp.low)
                self.answer_rel[i] = found_terms / len(qt)
            # context relevance needs every retrieved chunk's text: --chunks, or all of them cited
            if qt and ret and (self.chunks is not None or (cited and len(cited) >= len(ret))):
                texts = self._texts(cited, ret, ())
                if len(texts) == len(set(ret)):
                    hit = sum(1 for c in ret if not qt.isdisjoint(self._terms(texts[c])))
                    self.context_rel[i] = hit / len(ret)
            if qt and ret and self.context_rel[i] != self.context_rel[i]:
                self.context_lack[i] = 1
        if self.grounding_on and f & F_SHIP:
            f = self._ground(i, f, resp, ret, cited)
        self.flags[i] = f

    def _violations(self, i: int, f: int, resp: Response, ret: List[str], cited, cited_pol) -> int:
        """The failure modes of item ``i`` (``evidence[i]``): the training-cutoff excuse (reading
        2's words), a shipped answer's [policy.*] matches and a gold policy rejection (F_POLV),
        source policies (F_SRCV)."""
        found: List[dict] = []
        claim = resp.claim
        if f & F_CUTOFF:
            found.append({"mode": "training_cutoff_excuse", "words": resp.refusal.cutoff})
        if f & F_SHIP:
            policies = self.rules.policies
            if policies and _literals_absent(self.policy_patterns, claim):
                policies = ()
            for name, msg, pats in policies:
                if not _any_search(pats, claim):      # one search per policy; its pattern only on a match
                    continue
                for src, rx in pats:
                    m = rx.search(claim)
                    if m:
                        found.append({"mode": "policy_violation", "policy": name, "pattern": src,
                                      "words": m.group(0)[:80], "message": msg})
                        break
            if f & F_POLREJ:
                found.append({"mode": "policy_violation", "policy": self.gold.reject_reason.get(i, ""),
                              "gold": "expected_behavior reject: the answer shipped"})
            if found and any(e["mode"] == "policy_violation" for e in found):
                f |= F_POLV
            if cited_pol or self.chunk_policies:
                cits = resp.citations
                src_found = source_violations(claim, cits, ret, self._texts(cited, cits, ret),
                                              self._policies(cited_pol, cits, ret))
                if src_found:
                    f |= F_SRCV
                    found.extend(src_found)
        if found:
            self.evidence[i] = found
        return f

    def _right_reasons(self, i: int, f: int, cits: List[str], decision, reasons) -> int:
        """Decisions for the right reason (seed 000): the right outcome and the reason code
        (F_OKCONF / F_OKSTALE / F_OKCLAR); the required documents cited (F_OKDOCS)."""
        if f & (F_REQCONF | F_REQSTALE | F_REQCLAR):
            dec = decision.strip().upper() if decision is not None else None
            if dec is not None and self.gold.expected[i]:
                right = bool(f & F_DECOK)
            elif dec is not None and i in self.gold.acceptable:
                right = dec in self.gold.acceptable[i]
            else:
                right = not f & F_SHIP if f & F_EXPREF else bool(f & F_SHIP)
            codes = [r.split(":", 1)[0].strip().lower() for r in reasons or ()]
            if right and f & F_REQCONF and any(c.startswith("conflict") for c in codes):
                f |= F_OKCONF
            if right and f & F_REQSTALE and any(c.startswith("stale") for c in codes):
                f |= F_OKSTALE
            if right and f & F_REQCLAR and (dec == "CLARIFY" or any(c.startswith(("ambiguous", "clarif")) for c in codes)):
                f |= F_OKCLAR
        if f & F_REQDOCS and self.gold.req_docs[i] <= {c.split("#", 1)[0] for c in cits}:
            f |= F_OKDOCS
        return f

    def _ground(self, i: int, f: int, resp: Response, ret, cited) -> int:
        """Issue 29: each sentence of a shipped answer (reading 4: Response.sentences) against its
        cited chunks (retrieved ones when none is cited); sets F_GMEAS / F_UNSUP, faith[i] and
        unsup_sents[i]."""
        texts = []
        # a marker that resolves to nothing (citation_validity already fails it) is no evidence
        marks = frozenset(resp.bad_marks)
        cits = [c for c in resp.citations if c not in marks]
        for c in dict.fromkeys(cits or ret):
            t = cited.get(c) if cited else None
            if t is None and self.chunks is not None:
                t = self.chunks.get(c)
            if t is None:
                self.ground_no_text[i] = c
                return f
            texts.append(t)
        g = ground(resp.claim, texts, sentences=resp.sentences)
        if g.unknown:               # not measured (score_trace names the row in a warning)
            return f
        f |= F_GMEAS
        if g.checked:
            self.faith[i] = g.supported / g.checked
        if g.unsupported:
            f |= F_UNSUP
            self.unsup_sents[i] = g.unsupported
        return f

    def _terms(self, text: str) -> frozenset:
        t = self.term_cache.get(text)
        if t is None:
            if len(self.term_cache) > 100000:     # bounded: a trace of distinct texts must not grow it
                self.term_cache.clear()
            t = self.term_cache[text] = content_terms(text)
        return t

    def _texts(self, cited, cits, ret) -> Dict[str, str]:
        """Known chunk texts of ``cits`` and ``ret``: the trace's cited_chunks, then --chunks."""
        out = {}
        for c in list(cits) + list(ret):
            t = cited.get(c) if cited else None
            if t is None and self.chunks is not None:
                t = self.chunks.get(c)
            if t is not None:
                out[c] = t
        return out

    def _policies(self, cited_pol, cits, ret) -> Dict[str, str]:
        out = {}
        for c in list(cits) + list(ret):
            p = (cited_pol or {}).get(c) or self.chunk_policies.get(c)
            if p and p != "summarize":
                out[c] = p
        return out


def content_term(tok: str) -> Optional[str]:
    """The content term of one token (not a stopword): a number as it is, a word of >= 3
    letters with a final "s" folded (not "ss"); None for a shorter word."""
    if tok[0].isdigit():
        return tok
    if len(tok) > 3 and tok[-1] == "s" and tok[-2] != "s":
        return tok[:-1]
    return tok if len(tok) >= 3 else None


def content_terms(text: str) -> frozenset:
    """Numbers and content words (>= 3 letters, not stopwords) of ``text``, a final "s" folded."""
    low = text.lower()
    if low.isascii() and "," not in low:     # tokens()' byte translations, each word folded as read
        raw = low.encode()
        terms = {w[:-1] if len(w) > 3 and w[-1] == "s" and w[-2] != "s" else w
                 for w in ascii_words(raw) if len(w) >= 3 and w not in STOPWORDS}
        for part in raw.translate(_NUMBER_BYTES).split():
            if part.isdigit():
                terms.add(part.decode())
            elif part.strip(b"."):
                terms.update(_NUMBER_RX.findall(part.decode()))
        return frozenset(terms)
    out = frozenset(map(content_term, tokens(text) - STOPWORDS))
    return out - {None} if None in out else out


def has_content_terms(text: str) -> bool:
    """bool(content_terms(text)) without building them: an ASCII text has one when it holds a
    word of >= 3 letters that is not a stopword, or a digit (every number is a term)."""
    low = text.lower()
    if not low.isascii():
        return bool(content_terms(text))
    raw = low.encode()
    if any(len(w) >= 3 and w not in STOPWORDS for w in ascii_words(raw)):
        return True
    return bool(raw.translate(_NUMBER_BYTES).strip(b" .,"))


def terms_in(terms: frozenset, toks: set) -> int:
    """len(terms & content_terms(text)) from ``toks`` = tokens(text), without building the
    text's terms: a term is the content term of the token itself or of the token + "s"."""
    n = 0
    for t in terms:
        for tok in (t, t + "s"):
            if tok in toks and tok not in STOPWORDS and content_term(tok) == t:
                n += 1
                break
    return n


def terms_in_text(terms: frozenset, text: str, low: Optional[str] = None) -> int:
    """terms_in(terms, tokens(text)) without tokenizing an ASCII text: each term, and the term
    + "s" when that folds to it, looked up with ``_token_in`` (tokens() decides a number in a
    text with a comma).  ``low``: text.lower() when the caller has it (Response.low)."""
    if low is None:
        low = text.lower()
    if not low.isascii():
        return terms_in(terms, tokens(text))
    n = 0
    comma = "," in low
    for t in terms:
        if t not in low and not (comma and t[0].isdigit()):
            continue        # neither t nor t + "s" is in the text (a comma may hide a number: "1,000")
        for tok in (t, t + "s"):
            if tok in STOPWORDS or content_term(tok) != t:
                continue
            found = _token_in(low, tok)
            if found is None:
                return terms_in(terms, tokens(text))
            if found:
                n += 1
                break
    return n


_SENT_RX = re.compile(r"(?<=[.!?])\s+")
NO_USE_RUN = 8      # consecutive words of a no_use chunk that make a reproduction


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def source_violations(claim: str, cits: List[str], ret: List[str], texts: Dict[str, str],
                      policies: Dict[str, str]) -> List[dict]:
    """Source-policy violations of one shipped claim (seed 004's SourcePolicyStage, lexical).

    ``no_use``: citing the chunk, or reproducing NO_USE_RUN consecutive words of it (any
    retrieved or cited chunk whose text is known).  ``quote_only``: each claim sentence is
    attributed to the cited chunks holding it verbatim (case and white space normalized),
    else to the cited chunks sharing most content terms with it; a sentence attributed to a
    quote_only chunk that does not hold it verbatim is a violation."""
    out: List[dict] = []
    for c in dict.fromkeys(cits):
        if policies.get(c) == "no_use":
            out.append({"mode": "source_policy_violation", "rule": "no_use", "chunk": c, "how": "cited"})
    words = _TOKEN_RX.findall(claim.lower())
    grams = {tuple(words[j:j + NO_USE_RUN]) for j in range(len(words) - NO_USE_RUN + 1)}
    for c in dict.fromkeys(list(cits) + list(ret)):
        if policies.get(c) != "no_use" or c not in texts or not grams:
            continue
        cw = _TOKEN_RX.findall(texts[c].lower())
        for j in range(len(cw) - NO_USE_RUN + 1):
            g = tuple(cw[j:j + NO_USE_RUN])
            if g in grams:
                out.append({"mode": "source_policy_violation", "rule": "no_use", "chunk": c,
                            "how": "reproduced", "words": " ".join(g)})
                break
    quoted = [c for c in dict.fromkeys(cits) if policies.get(c) == "quote_only"]
    if quoted:
        known = [c for c in dict.fromkeys(cits) if c in texts]
        normed = {c: _norm(texts[c]) for c in known}
        for sent in _SENT_RX.split(claim):
            ns = _norm(sent).rstrip(".!?;:")
            if not ns or any(ns in normed[c] for c in known):
                continue
            st = content_terms(sent)
            shared = {c: len(st & content_terms(texts[c])) for c in known}
            best = max(shared.values(), default=0)
            for c in quoted:
                if c not in shared or shared[c] == best:
                    out.append({"mode": "source_policy_violation", "rule": "quote_only", "chunk": c,
                                "how": "not verbatim", "sentence": sent[:120]})
                    break
    return out


def _cited_with_policies(cited):
    """cited_chunks whose values may be ``{"text", "policy"}``: (id -> text, id -> policy), or
    (None, the bad value) when a value is neither text nor such an object."""
    if type(cited) is not dict:
        return None, cited
    texts, pols = {}, {}
    for cid, v in cited.items():
        if type(v) is str:
            texts[cid] = v
        elif (type(v) is dict and type(v.get("text")) is str and set(v) <= {"text", "policy"}
              and v.get("policy", "summarize") in SOURCE_POLICIES):
            texts[cid] = v["text"]
            if v.get("policy", "summarize") != "summarize":
                pols[cid] = v["policy"]
        else:
            return None, {cid: v}
    return texts, pols


def _trace_extras(row: dict, path: str, lineno: int, errors: _Errors):
    """(q, reasons, timings_ms.total, cost) of a trace row, checked; None when one is bad."""
    q = row.get("q")
    if q is not None and type(q) is not str:
        errors.add('%s:%d: "q" must be a string, got %s' % (path, lineno, _show(q)))
        return None
    reasons = row.get("reasons")
    if reasons is not None and not _str_list(reasons):
        errors.add('%s:%d: "reasons" must be a list of strings, got %s' % (path, lineno, _show(reasons)))
        return None
    tm = row.get("timings_ms")
    total = None
    if tm is not None:
        total = tm.get("total") if type(tm) is dict else tm
        if type(tm) is not dict or (total is not None and not (_num(total) and total >= 0)):
            errors.add('%s:%d: "timings_ms" must be an object whose "total" is a number >= 0, got %s'
                       % (path, lineno, _show(tm)))
            return None
    cost = row.get("cost")
    if cost is not None and not (_num(cost) and cost >= 0):
        errors.add('%s:%d: "cost" must be a number >= 0, got %s' % (path, lineno, _show(cost)))
        return None
    return q, reasons, (float(total) if total is not None else None), (float(cost) if cost is not None else None)


@contextlib.contextmanager
def gc_paused():
    """The cyclic garbage collector paused for a block that makes no reference cycles (reading
    and judging rows: JSON objects, strings, tuples, arrays): without the pause it walks the
    gold set's growing lists again and again while their rows are read (3% of the CPU time at
    300k rows, issue 32).  Garbage is still freed by reference counting; any cycle that did
    form is collected when the collector runs again after the block."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _trace_fields(row: dict, path: str, lineno: int, errors: _Errors):
    """(qid, claim, citations, retrieved_ids, retrieved_scores, cited_chunks texts, their
    policies, _trace_extras, decision, fallback_used) of one trace row, checked; None when a
    field is bad (reported to ``errors``)."""
    get = row.get
    qid = get("qid") or get("q_id")    # seed 002 accepts either spelling
    if type(qid) is not str:
        if not qid:
            errors.add("%s:%d: missing \"qid\" (or \"q_id\"), got %s" % (path, lineno, _show(row, 60)))
        else:
            errors.add("%s:%d: \"qid\" must be a string, got %s" % (path, lineno, _show(qid)))
        return None
    aj = get("answer_json")
    claim = cits = None
    if aj is not None:
        if type(aj) is not dict:
            errors.add("%s:%d: \"answer_json\" must be an object, got %s" % (path, lineno, _show(aj)))
            return None
        claim = aj.get("claim")
        cits = aj.get("citations")
        if claim is not None and type(claim) is not str:
            errors.add("%s:%d: \"answer_json.claim\" must be a string, got %s" % (path, lineno, _show(claim)))
            return None
        if cits is not None and not (type(cits) is list and all(map(_IS_STR, cits))):     # _str_list inline: per row
            errors.add("%s:%d: \"answer_json.citations\" must be a list of strings, got %s" % (path, lineno, _show(cits)))
            return None
    ret = get("retrieved_ids")
    if ret is not None and not (type(ret) is list and all(map(_IS_STR, ret))):
        errors.add("%s:%d: \"retrieved_ids\" must be a list of strings, got %s" % (path, lineno, _show(ret)))
        return None
    scores = get("retrieved_scores")
    if scores is not None and (not _num_list(scores) or len(scores) != len(ret or ())):
        errors.add("%s:%d: \"retrieved_scores\" must be a list of numbers as long as \"retrieved_ids\" (%d), got %s"
                   % (path, lineno, len(ret or ()), _show(scores)))
        return None
    cited = get("cited_chunks")
    cited_pol = None
    if cited is not None and (type(cited) is not dict or not all(map(_IS_STR, cited.values()))):
        cited, cited_pol = _cited_with_policies(cited)     # issue 20: {"text", "policy"} values
        if cited is None:
            errors.add("%s:%d: \"cited_chunks\" must be an object of id -> text or {\"text\", \"policy\"} "
                       "(policy one of %s), got %s" % (path, lineno, ", ".join(SOURCE_POLICIES), _show(cited_pol)))
            return None
    extra = _trace_extras(row, path, lineno, errors)
    if extra is None:
        return None
    decision = get("decision")
    if decision is not None and type(decision) is not str:
        errors.add("%s:%d: \"decision\" must be a string, got %s" % (path, lineno, _show(decision)))
        return None
    fallback = get("fallback_used")
    if fallback is not None and type(fallback) is not bool:
        errors.add("%s:%d: \"fallback_used\" must be true or false, got %s" % (path, lineno, _show(fallback)))
        return None
    return qid, claim, cits, ret, scores, cited, cited_pol, extra, decision, fallback


def score_trace(path: str, scorer: Scorer, errors: _Errors, notes: List[str]) -> Dict[str, object]:
    """Stream the trace file once, judging each row against its gold item (last row wins):
    each row is checked (_trace_fields), read once into a Response (scorer.respond) and judged."""
    index = scorer.gold.index
    seen = bytearray(len(scorer.gold))
    respond, judge, judge_extra = scorer.respond, scorer.judge, scorer.judge_extra     # bound once, not per row
    rows = unknown = dup = 0
    unknown_ex: List[str] = []
    dup_ex: List[str] = []
    progress = _RowProgress("score_eval: %s" % path) if getattr(scorer, "progress", False) else None
    unread = [0, -1, take_read_problems()]   # note_unread's (problems left before this trace dropped)
    for lineno, row in _jsonl(path, errors, notes):
        if progress is not None and rows and rows & 0x3FFF == 0:
            progress.tick(rows)         # after the row ``rows`` (as _progress_rows does)
        rows += 1
        fields = _trace_fields(row, path, lineno, errors)
        if fields is None:
            continue
        qid, claim, cits, ret, scores, cited, cited_pol, extra, decision, fallback = fields
        i = index.get(qid)
        if i is None:
            unknown += 1
            if len(unknown_ex) < 5:
                unknown_ex.append(qid)
            continue
        if seen[i]:
            dup += 1
            if len(dup_ex) < 5:
                dup_ex.append(qid)
        seen[i] = 1
        resp = respond(claim, cits, ret, cited)       # readings 1-4 (response.py), once per row
        judge(i, resp, ret, scores, cited, decision, fallback, True)
        judge_extra(i, resp, ret, cited, cited_pol, decision, extra)
        if READ_PROBLEMS:
            note_unread(path, lineno, qid, notes, unread)
    if progress is not None:
        if rows and rows & 0x3FFF == 0:
            progress.tick(rows)
        progress.close(rows)
    # The gold set owns the query set: an item without a trace row is judged on an empty row
    # (seed 002: a shipped answer with an empty claim; retrieval scores 0).
    missing = 0
    i = seen.find(0)
    while i >= 0:
        missing += 1
        judge(i, None, None, None, None, None, None, False)
        i = seen.find(0, i + 1)
    return {"rows": rows, "unknown": unknown, "unknown_ex": unknown_ex,
            "duplicates": dup, "duplicate_ex": dup_ex, "missing": missing}


PROGRESS_ROWS = 100_000      # progress on stderr only past this many trace rows
PROGRESS_EVERY = (1.0, 30.0)  # seconds between two progress lines: on a terminal, off one


class _RowProgress:
    """Past PROGRESS_ROWS rows, ``label: N rows, R/s`` on stderr (redrawn in place on a
    terminal; one plain line at most every 30 s off one); ``tick(n)`` every 16,384 rows."""

    def __init__(self, label: str, stream=None):
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", None) and self.stream.isatty())
        self.every = PROGRESS_EVERY[0] if self.tty else PROGRESS_EVERY[1]
        self.label = label
        self.start = self.last = time.monotonic()
        self.drawn = False

    def tick(self, n: int) -> None:
        if n >= PROGRESS_ROWS:
            now = time.monotonic()
            if now - self.last >= self.every:
                self.last = now
                text = "%s: %d rows, %.0f/s" % (self.label, n, n / max(now - self.start, 1e-9))
                self.stream.write(("\r%s\x1b[K" % text) if self.tty else text + "\n")
                self.stream.flush()
                self.drawn = self.tty

    def close(self, n: int) -> None:
        if self.drawn:
            self.stream.write("\r%s: %d rows\x1b[K\n" % (self.label, n))
            self.stream.flush()


def _progress_rows(rows, label: str, stream=None):
    """Pass ``rows`` through with a _RowProgress (score_trace ticks its own, without this
    generator in its loop)."""
    progress = _RowProgress(label, stream)
    n = 0
    for n, item in enumerate(rows, 1):
        yield item
        if n & 0x3FFF == 0:
            progress.tick(n)
    progress.close(n)


def score_run(run: Dict[str, Tuple[List[float], List[str]]], scorer: Scorer) -> Dict[str, object]:
    index = scorer.gold.index
    unknown = sorted(t for t in run if t not in index)
    missing = 0
    for i, qid in enumerate(scorer.gold.qids):
        entry = run.get(qid)
        if entry is None:
            missing += 1   # the qrels own the query set: a forgotten topic scores 0 (trec_eval -c)
            scorer.judge(i, None, [], None, None, None, None, False)
        else:
            scorer.judge(i, None, entry[1], None, None, None, None, True)   # read_run's order is trec_eval's
    return {"rows": sum(len(v[1]) for v in run.values()), "unknown": len(unknown), "unknown_ex": unknown[:5],
            "duplicates": 0, "duplicate_ex": [], "missing": missing}


# =========================================================================== referee/gates.py
# Gates and regressions: each gate checked against the report, deltas and paired tests against
# a baseline report.

# --------------------------------------------------------------------------- gates, regression


def check_gates(gates, metrics: Dict[str, dict], k0: int, grounding: str = "strict") -> List[dict]:
    """Each gate against its metric; with [scorer] grounding = "sentences" a hallucination
    gate checks unsupported_answer_rate (issue 29: the grounding check for generated text)."""
    results = []
    for g in gates:
        key = g.ref.key(k0)
        if grounding == "sentences" and key == "hallucination":
            key = "unsupported_answer_rate"
        entry = metrics.get(key)
        value = entry["value"] if entry else None
        reason = None
        if entry is None:
            reason = "not measured: %s was not computed" % key
        elif value is None:
            reason = entry["reason"]
        if g.op is None:    # a monitor gate without a bound: nothing to fail
            ok = True
        else:
            ok = value is not None and (value >= g.threshold if g.op == ">=" else value <= g.threshold)
        if value is not None and not ok:
            reason = "%s = %s, needs %s %s" % (key, _fmt_num(round(value, 4)), g.op, _fmt_num(g.threshold))
        results.append({"gate": g.ref.spelled, "kind": "threshold", "metric": key, "op": g.op,
                        "threshold": g.threshold, "value": _r(value), "pass": ok,
                        "reason": reason, "message": g.message if value is not None and not ok else None,
                        "p_value": None, "worse": None, "better": None, "tier": g.tier})
    return results


def order_by_tier(gate_results: List[dict]) -> List[dict]:
    """Warn gates first, then block, then monitor; file order within a tier (stable sort).
    Regression and slice gates have no tier of their own and block."""
    for g in gate_results:
        g.setdefault("tier", "block")
    return sorted(gate_results, key=lambda g: _TIER_ORDER[g["tier"]])


def blocking_pass(gate_results: List[dict]) -> bool:
    """The run passes when no block gate failed (warn and monitor gates never fail it)."""
    return all(g["pass"] for g in gate_results if g["tier"] == "block")


def exact_paired_p(worse: int, better: int) -> float:
    """Two-sided exact (binomial, p = 1/2) test on the items that flipped (McNemar exact)."""
    n = worse + better
    if n == 0:
        return 1.0
    m = min(worse, better)
    if n <= 1000:
        tail = sum(math.comb(n, i) for i in range(m + 1)) / 2 ** n
    else:   # log space: exact integers of this size would be slow
        logs = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) - n * math.log(2)
                for i in range(m + 1)]
        top = max(logs)
        tail = math.exp(top) * math.fsum(math.exp(v - top) for v in logs)
    return min(1.0, 2 * tail)


def _paired_counts(name: str, base_flags: Dict[str, int], cur: Dict[str, int], qids, higher: bool):
    den, num = _PAIRED[name]
    worse = better = 0
    for q in qids:
        b, c = base_flags.get(q), cur.get(q)
        if b is None or c is None or not den(b) or not den(c):
            continue
        vb, vc = bool(num(b)), bool(num(c))
        if vb == vc:
            continue
        if (vb and not vc) == higher:
            worse += 1
        else:
            better += 1
    return worse, better


def load_baseline(path: str) -> dict:
    errors = _Errors(MAX_ERRORS)
    raw = b"".join(r for _, r in _raw_lines(path, errors, "baseline report"))
    if errors.count:
        raise ScoreError(errors.text())
    try:
        data = json_row(raw.decode("utf-8-sig"))
    except JsonLimit as exc:
        raise ScoreError("%s: %s" % (path, exc)) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ScoreError("%s: baseline report is not JSON (%s), got a file of another kind" % (path, str(exc).split(":")[0])) from None
    if type(data) is not dict or type(data.get("items")) is not dict or type(data.get("metrics")) is not dict:
        raise ScoreError("%s: not a score_eval report (needs \"metrics\" and \"items\"), got keys %s"
                         % (path, _show(sorted(data) if type(data) is dict else type(data).__name__)))
    items = {}
    for q, s in data["items"].items():
        try:
            items[q] = flag_int(s)
        except (ValueError, TypeError):
            raise ScoreError("%s: item %s has unknown verdict flags, got %s" % (path, _show(q), _show(s))) from None
    data["_flags"] = items
    return data


def _metric_deltas(base: dict, metrics: Dict[str, dict], bflags: Dict[str, int], cur_flags: Dict[str, int],
                   matched: List[str], k0: int) -> Dict[str, dict]:
    """Each metric's baseline value, current value and delta; for the metrics with per-item
    verdicts, the items that got worse and better and the paired exact test's p-value."""
    out_metrics = {}
    for name, entry in metrics.items():
        b = base["metrics"].get(name)
        bv = b.get("value") if isinstance(b, dict) else None
        cv = entry["value"]
        row = {"baseline": bv, "current": _r(cv), "delta": _r(cv - bv) if _num(bv) and _num(cv) else None}
        pname = "recall@K" if name == "recall@%d" % k0 else name
        if pname in _PAIRED and (pname != "recall@K" or base.get("k") == k0):
            higher = _BY_NAME[pname].better == "higher"
            worse, better = _paired_counts(pname, bflags, cur_flags, matched, higher)
            row.update({"worse": worse, "better": better, "p_value": _r(exact_paired_p(worse, better))})
        out_metrics[name] = row
    return out_metrics


def _category_deltas(categories: Dict[str, dict], bcats: dict) -> Dict[str, dict]:
    """Per category (this run's or the baseline's), each metric's baseline, current value and delta."""
    out_cats = {}
    for cat in sorted(set(categories) | set(bcats)):
        cm = categories.get(cat, {}).get("metrics", {})
        bm = bcats.get(cat, {}).get("metrics", {}) if isinstance(bcats.get(cat), dict) else {}
        row = {}
        for name in sorted(set(cm) | set(bm), key=_metric_sort_key):
            cv = cm.get(name, {}).get("value")
            bv = bm.get(name, {}).get("value") if isinstance(bm.get(name), dict) else None
            row[name] = {"baseline": bv, "current": _r(cv),
                         "delta": _r(cv - bv) if _num(bv) and _num(cv) else None}
        out_cats[cat] = row
    return out_cats


def _regression_gates(base: dict, metrics: Dict[str, dict], bflags: Dict[str, int], cur_flags: Dict[str, int],
                      matched: List[str], reg: Regression, k0: int) -> List[dict]:
    """[regression] max_drop: a metric fails when it worsened by more than its margin and the
    paired exact test on the flipped items says so (p < alpha)."""
    gate_results = []
    for ref, margin in reg.max_drop:
        key = ref.key(k0)
        pname = ref.metric.name if "@K" not in ref.metric.name else "recall@K"
        higher = ref.metric.better == "higher"
        cv = metrics.get(key, {}).get("value")
        b = base["metrics"].get(key)
        bv = b.get("value") if isinstance(b, dict) else None
        res = {"gate": "regression:" + key, "kind": "regression", "metric": key, "op": "max_drop",
               "threshold": margin, "value": None, "pass": False, "reason": None, "message": None,
               "p_value": None, "worse": None, "better": None}
        if cv is None or not _num(bv):
            res["reason"] = "not measured: %s missing in %s" % (key, "the baseline" if not _num(bv) else "this run")
        else:
            # The baseline report holds values rounded to 4 decimals: compare like with like.
            cv = round(cv, 4)
            drop = (bv - cv) if higher else (cv - bv)
            worse, better = _paired_counts(pname, bflags, cur_flags, matched, higher)
            p = exact_paired_p(worse, better)
            res.update({"value": _r(drop), "p_value": _r(p), "worse": worse, "better": better})
            res["pass"] = not (drop > margin + 1e-12 and p < reg.alpha)
            if not res["pass"]:
                res["reason"] = ("%s worsened by %s (> %s) and the paired exact test gives p = %s < %s"
                                 % (key, _fmt_num(round(drop, 4)), _fmt_num(margin), _fmt_num(round(p, 4)),
                                    _fmt_num(reg.alpha)))
        gate_results.append(res)
    return gate_results


def _slice_gates(categories: Dict[str, dict], bcats: dict, reg: Regression, k0: int) -> List[dict]:
    """[regression] slices: each slice metric of each named category may drop by at most
    slice_max_drop; a slice new in this run passes, one missing from it fails."""
    gate_results = []
    for cat in reg.slices:
        for ref in reg.slice_metrics:
            key = ref.key(k0)
            cv = categories.get(cat, {}).get("metrics", {}).get(key, {}).get("value")
            bcat = bcats.get(cat) if isinstance(bcats.get(cat), dict) else None
            bv = bcat.get("metrics", {}).get(key, {}).get("value") if bcat else None
            res = {"gate": "slice:%s:%s" % (cat, key), "kind": "slice", "metric": key, "op": "max_drop",
                   "threshold": reg.slice_max_drop, "value": None, "pass": False, "reason": None,
                   "message": None, "p_value": None, "worse": None, "better": None}
            if cat not in categories and bcat is None:
                res["reason"] = "slice %r is in neither this run nor the baseline" % cat
            elif cat not in categories:
                res["reason"] = "slice %r is in the baseline but not in this run" % cat
            elif bcat is None:
                res["pass"], res["reason"] = True, "new slice: not in the baseline"
            elif cv is None or not _num(bv):
                res["reason"] = "not measured: %s[%s] has no value" % (key, cat)
            else:
                higher = ref.metric.better == "higher"
                cv = round(cv, 4)   # the baseline's value is rounded to 4 decimals
                drop = (bv - cv) if higher else (cv - bv)
                res["value"] = _r(drop)
                res["pass"] = drop <= reg.slice_max_drop + 1e-12
                if not res["pass"]:
                    res["reason"] = "%s on slice %r worsened by %s (allowed %s)" % (
                        key, cat, _fmt_num(round(drop, 4)), _fmt_num(reg.slice_max_drop))
            gate_results.append(res)
    return gate_results


def compare(base: dict, path: str, metrics: Dict[str, dict], categories: Dict[str, dict],
            cur_flags: Dict[str, int], reg: Optional[Regression], k0: int) -> Tuple[dict, List[dict]]:
    """Deltas per metric and category, paired exact tests, regression and slice gates.
    ``metrics``/``categories`` are this run's unrounded values; the baseline's are rounded."""
    bflags = base["_flags"]
    matched = [q for q in cur_flags if q in bflags]
    out_metrics = _metric_deltas(base, metrics, bflags, cur_flags, matched, k0)
    bcats = base.get("categories") if isinstance(base.get("categories"), dict) else {}
    out_cats = _category_deltas(categories, bcats)
    gate_results = []
    if reg is not None:
        gate_results = (_regression_gates(base, metrics, bflags, cur_flags, matched, reg, k0)
                        + _slice_gates(categories, bcats, reg, k0))
    summary = {"baseline": path, "matched_items": len(matched),
               "only_in_baseline": sum(1 for q in bflags if q not in cur_flags),
               "only_in_current": len(cur_flags) - len(matched),
               "metrics": out_metrics, "categories": out_cats}
    return summary, gate_results


# =========================================================================== referee/scorecard.py
# The weighted scorecard over seed 004's stages: an overall score per run and per item.

# --------------------------------------------------------------------------- weighted scorecard

# Seed 004's stages and the registry metric that scores each: the one table of the mapping.
# A stage whose metric is not in the registry or was not measured in this run (or, see
# scorecard_gaps, measured on only part of the items it should judge) is left out of
# the overall score and the other weights are renormalized (the report names it).  A metric
# where lower is better scores 1 - value.  Default weights are seed 004's pack defaults; gate
# stages are the ones seed 004 marks is_gate (a stage whose metric a block gate checks is one too).
#: The rank cutoff of the scorecard's retrieval stage (recall@5, seed 002's k), whatever --k
#: says: one trace has one overall score, whoever computes it (make eval passes --k 1,5,10,
#: a plain run --k 5).  Always computed in QA mode; IR mode uses the first --k.
SCORECARD_K = 5


class Stage(NamedTuple):
    name: str
    metric: str       # registry name; "recall@K" means recall@SCORECARD_K (IR mode: the first --k)
    weight: float     # default weight
    gate: bool


STAGES: Tuple[Stage, ...] = (
    Stage("retrieval", "recall@K", 0.10, False),
    Stage("context_relevance", "context_relevance", 0.10, False),
    Stage("faithfulness", "hallucination", 0.20, False),
    Stage("answer_relevance", "answer_relevance", 0.15, False),
    Stage("citation", "chr", 0.15, False),
    Stage("source_policy", "source_policy_compliance", 0.10, True),
    Stage("policy_compliance", "policy_compliance", 0.10, True),
    Stage("rejection_calibration", "rejection_calibration", 0.10, False),
)
STAGE_ALIASES = {"groundedness": "faithfulness"}
# Issue 29: with [scorer] grounding = "sentences" the faithfulness stage scores the metric
# faithfulness (sentence grounding); with "strict" (default) it scores 1 - hallucination.
STAGE_GROUNDING = {"sentences": {"faithfulness": "faithfulness"}}


def stages_for(grounding: str = "strict") -> Tuple[Stage, ...]:
    """STAGES with the faithfulness stage's metric chosen by [scorer] grounding."""
    swap = STAGE_GROUNDING.get(grounding, {})
    return tuple(s._replace(metric=swap.get(s.name, s.metric)) for s in STAGES)
WEIGHT_SUM_TOLERANCE = 0.05     # |sum - 1| above this: normalized with a warning
WEIGHT_MAX = 0.60               # one stage above this (after normalization): error
WEIGHT_LIMIT = 1e6              # a weight above this is refused (their sum must stay finite)
GATE_STAGE_MIN = 0.05           # a gate stage below this: warning


def _stage_ref(stage: Stage) -> Optional[MetricRef]:
    """The stage's metric, or None when the registry does not (yet) have it."""
    if stage.metric == "recall@K":
        return parse_metric("recall@k")
    m = _BY_NAME.get(stage.metric)
    return MetricRef(stage.metric, m, None) if m is not None and "@K" not in m.name else None


def _stage_name(name: str) -> str:
    name = STAGE_ALIASES.get(name, name)
    if name not in {s.name for s in STAGES}:
        close = difflib.get_close_matches(name, [s.name for s in STAGES] + list(STAGE_ALIASES), n=1, cutoff=0.5)
        raise ScoreError("unknown stage %r%s; stages: %s" % (
            name, "; did you mean %r?" % close[0] if close else "", ", ".join(s.name for s in STAGES)))
    return name


def _weights_from_file(path: str) -> Tuple[Dict[str, float], List[str]]:
    """The ``[weights]`` table of a gates file: stage = weight (stage names or aliases)."""
    doc, lines = gates_doc(path)     # load_gates_file has already read and checked it
    table = doc.get("weights")
    if table is None:
        return {}, []
    loc = "%s:%d" % (path, lines.get(("weights",), 0))
    if not isinstance(table, dict):
        return {}, ["%s: [weights] must be a table of stage = weight, got %s" % (loc, _show(table))]
    return _check_weights(table, lambda k: "%s:%d: [weights]" % (path, lines.get(("weights", k), 0)))


def _check_weights(table: dict, where) -> Tuple[Dict[str, float], List[str]]:
    out, errors = {}, []
    for key, val in table.items():
        try:
            name = _stage_name(str(key))
        except ScoreError as exc:
            errors.append("%s %s" % (where(key), exc))
            continue
        if not _num(val) or not 0 <= val <= WEIGHT_LIMIT:
            errors.append("%s weight of %r must be a number from 0 to %g, got %s"
                          % (where(key), key, WEIGHT_LIMIT, _show(val)))
            continue
        out[name] = float(val)
    return out, errors


def resolve_weights(gates_file: Optional[str], cli: Optional[str], gates) -> Tuple[Dict[str, float], List[str]]:
    """Seed defaults <- the gates file's [weights] <- ``--weights JSON``; validated, normalized.

    Returns (weights summing to 1, warnings).  Errors (exit 2): a negative or non-number
    weight, an unknown stage, all weights 0, one stage above WEIGHT_MAX after normalization.
    Warnings: the sum is off 1 by more than WEIGHT_SUM_TOLERANCE (then normalized), a gate
    stage below GATE_STAGE_MIN."""
    weights = {s.name: s.weight for s in STAGES}
    errors: List[str] = []
    if gates_file is not None:
        got, errs = _weights_from_file(gates_file)
        weights.update(got)
        errors += errs
    if cli is not None:
        try:
            table = json.loads(cli)
        except ValueError as exc:
            table = None
            errors.append("--weights: not JSON (%s), got %s" % (str(exc).split(":")[0], _show(cli)))
        if table is not None and not isinstance(table, dict):
            errors.append("--weights: expected a JSON object of stage: weight, got %s" % _show(table))
        elif table is not None:
            got, errs = _check_weights(table, lambda k: "--weights:")
            weights.update(got)
            errors += errs
    if errors:
        raise ScoreError("\n".join(errors))
    total = math.fsum(weights.values())
    source = "--weights" if cli is not None else ("%s: [weights]" % gates_file if gates_file is not None else "weights")
    if total <= 0:
        raise ScoreError("%s: all stage weights are 0; at least one must be > 0, got %s" % (source, _show(weights)))
    warnings = []
    if abs(total - 1.0) > WEIGHT_SUM_TOLERANCE:
        warnings.append("weights sum to %s, not 1 (tolerance %s); normalized to sum 1"
                        % (_fmt_num(round(total, 4)), _fmt_num(WEIGHT_SUM_TOLERANCE)))
    weights = {k: v / total for k, v in weights.items()}
    heavy = [k for k, v in weights.items() if v > WEIGHT_MAX + 1e-12]
    if heavy:
        raise ScoreError("\n".join("%s: stage %r weighs %s after normalization, above %s: one stage would "
                                   "dominate the overall score" % (source, k, _fmt_num(round(weights[k], 4)),
                                                                   _fmt_num(WEIGHT_MAX))
                                   for k in heavy))
    gated = {g.ref.metric.name for g in gates if g.tier == "block"}
    for s in STAGES:
        if (s.gate or s.metric in gated) and weights[s.name] < GATE_STAGE_MIN - 1e-12:
            warnings.append("weights: gate stage %r weighs %s, below %s: too low for a gate stage"
                            % (s.name, _fmt_num(round(weights[s.name], 4)), _fmt_num(GATE_STAGE_MIN)))
    return weights, warnings


def _oriented(ref: MetricRef, value):
    return None if value is None else (1.0 - value if ref.metric.better == "lower" else value)


def scorecard_gaps(scorer: "Scorer") -> Dict[str, str]:
    """Stage metric -> why the scorecard leaves it out although the metric has a value: its
    value covers only part of the items it should judge (context_relevance without the
    texts of some item's retrieved chunks), so it would stand for a biased subset."""
    lack = sum(getattr(scorer, "context_lack", b""))
    if not lack:
        return {}
    have = sum(1 for v in scorer.context_rel if v == v)
    return {"context_relevance": "not measured: the retrieved chunks' texts are unknown for %d of %d items with a "
                                 "question and retrieved chunks (context_relevance covers only the other %d); give "
                                 "--chunks FILE" % (lack, lack + have, have)}


def scorecard(weights: Dict[str, float], metrics: Dict[str, dict], k0: int,
              gaps: Optional[Dict[str, str]] = None, grounding: str = "strict") -> dict:
    """The run's stage scores and weighted overall score (unmeasured stages renormalized away;
    ``gaps``: metric -> reason for a metric that has a value but is left out, see scorecard_gaps)."""
    stages: Dict[str, dict] = {}
    used = 0.0
    acc = []
    for s in stages_for(grounding):
        ref = _stage_ref(s)
        key = ref.key(k0) if ref else s.metric
        entry = metrics.get(key) if ref else None
        reason = None
        if ref is None:
            reason = "not measured: %r is not a registry metric" % s.metric
        elif ref.metric.kind == "count":
            reason = "not measured: %r is a count, not a score in [0, 1]" % key
        elif entry is None or entry["value"] is None:
            reason = (entry or {}).get("reason") or "not measured: %s was not computed" % key
        elif gaps and key in gaps:
            reason = gaps[key]
        score = None if reason else _oriented(ref, entry["value"])
        stages[s.name] = {"metric": key, "weight": round(weights[s.name], 4), "effective_weight": None,
                          "score": score, "n": entry["n"] if entry and not reason else None, "reason": reason}
        if score is not None and weights[s.name] > 0:
            used += weights[s.name]
            acc.append((s.name, score))
    overall = math.fsum(weights[k] * v for k, v in acc) / used if used else None
    for k, _ in acc:
        stages[k]["effective_weight"] = round(weights[k] / used, 4)
    for st in stages.values():
        st["score"] = _r(st["score"])
    left_out = [k for k, st in stages.items() if st["effective_weight"] is None]
    note = ("stages not measured, left out of the overall score (the other weights renormalized): %s"
            % ", ".join(left_out)) if left_out else "every stage measured"
    return {"overall": _r(overall), "k": k0, "stages": stages, "not_measured": left_out, "note": note}


# issue 20's per-item means: metric -> the Scorer array holding each item's value (NaN: none)
_ITEM_MEANS = {"answer_relevance": "answer_rel", "context_relevance": "context_rel", "faithfulness": "faith"}


class ItemStages:
    """Per-item stage scores and overall score, for the stages the run measured.

    An item's stage score is its verdict on the stage metric (1 or 0 for a rate, oriented so
    higher is better; the per-item value for P/R/nDCG/RR families and for the per-item means
    in ``_ITEM_MEANS``); None when the item is not in the metric's denominator (for a mean:
    the item has no value, e.g. no chunk text) or the metric has no per-item verdict.  The
    item's overall is the weighted mean over its scored stages (renormalized per item)."""

    def __init__(self, scorer: "Scorer", card: dict, weights: Dict[str, float]):
        self.scorer, self.weights = scorer, weights
        self.stages = []
        for s in stages_for(getattr(scorer.rules, "grounding", "strict")):
            if card["stages"][s.name]["effective_weight"] is None:
                continue
            ref = _stage_ref(s)
            self.stages.append((s.name, ref, "recall@K" if ref.metric.name == "recall@K" else ref.metric.name))
        # stages scored from the verdict flags alone give the same answer for equal flags
        self.by_flags = all(pname in _PAIRED for _, _, pname in self.stages)
        self.cache: Dict[int, dict] = {}

    def _score(self, i: int, f: int, ref: MetricRef, pname: str):
        if pname in _ITEM_MEANS:
            v = getattr(self.scorer, _ITEM_MEANS[pname])[i]
            return None if v != v else _oriented(ref, v)     # NaN: the item has no value
        if pname in _PAIRED:
            den, num = _PAIRED[pname]
            if not den(f) or (pname == "hallucination" and not f & F_HMEAS):
                return None
            return _oriented(ref, 1.0 if num(f) else 0.0)
        base = ref.metric.name.split("@")[0]
        if not f & F_GOLD or base not in ("P", "R", "nDCG", "RR", "Success"):
            return None
        sc, k = self.scorer, ref.k if ref.k is not None else self.scorer.k0
        if base == "RR":
            return sc.rr[i] if "@" not in ref.metric.name else sc.rrk[k][i]
        return {"P": lambda: sc.hits[k][i] / k, "R": lambda: sc.rec[k][i], "nDCG": lambda: sc.ndcg[k][i],
                "Success": lambda: 1.0 if sc.hits[k][i] else 0.0}[base]()

    def __call__(self, i: int) -> dict:
        f = self.scorer.flags[i]
        if self.by_flags:
            hit = self.cache.get(f)
            if hit is None:
                hit = self.cache[f] = self._card(i, f)
            return {"stages": dict(hit["stages"]), "overall": hit["overall"]}
        return self._card(i, f)

    def _card(self, i: int, f: int) -> dict:
        scores = {name: self._score(i, f, ref, pname) for name, ref, pname in self.stages}
        used = [(self.weights[k], v) for k, v in scores.items() if v is not None and self.weights[k] > 0]
        total = math.fsum(w for w, _ in used)
        overall = math.fsum(w * v for w, v in used) / total if total else None
        return {"stages": {k: _r(v) for k, v in scores.items()}, "overall": _r(overall)}


# =========================================================================== referee/outputs.py
# The output policy: what may be written where (never a device, FIFO, symlink, input or another
# command's output), atomic writes, JSON and Markdown rendering.

# --------------------------------------------------------------------------- the output policy
# One rule for every command of both tools (issue 33): before anything is written, each output
# path is resolved (symlinks followed) and refused, naming both, when it is an input of the
# command, another output of it, a folder, or an existing non-empty file that is not of the
# output's kind (a report only replaces a report, an index an index).  ``force`` (--force) is
# the only way to replace a foreign file; it never allows an output over an input.  A device,
# FIFO or socket is written in place (stdout-like use, never replaced), except where the output
# must be a regular file (an index, a partial, the files a manifest lists).

_SNIFF_BYTES = 1 << 16


def _first_line(head: bytes) -> bytes:
    return head.lstrip(b"\xef\xbb\xbf").split(b"\n", 1)[0]


def _score_eval_html(h: bytes) -> bool:
    return h.startswith(b"<!DOCTYPE html>") and b'content="score_eval"' in h


OUTPUT_KINDS = {
    # kind: (what it is, does the head of an existing file look like one?)
    # (a report's "schema" is a top-level key; mini_rag eval's report.json nests reports deeper)
    "report": ("a score_eval JSON report", lambda h: h.lstrip().startswith(b"{") and b'\n  "schema": "score_eval/1"' in h),
    "items": ("a score_eval items JSONL file", lambda h: b'"qid"' in _first_line(h) and b'"flags"' in _first_line(h)),
    "markdown": ("a score_eval Markdown report", lambda h: h.startswith(b"# score_eval report")),
    "html": ("a score_eval HTML report", _score_eval_html),
    "report-html": ("a score_eval HTML report of one run", lambda h: _score_eval_html(h)
                    and b"<title>score_eval report: " in h),
    "merged-html": ("a page of merged score_eval HTML reports", lambda h: _score_eval_html(h)
                    and b"<title>score_eval report</title>" in h),
    "eval-markdown": ("a mini_rag eval Markdown report", lambda h: h.startswith(b"# mini_rag eval")),
    "junit": ("a JUnit XML report", lambda h: h.startswith(b"<?xml") and b"<testsuites" in h),
    "csv": ("a score_eval CSV file", lambda h: h.startswith(b"qid,category,") or h.startswith(b"metric,value,")),
    "manifest": ("an output-set manifest", lambda h: b'"schema": "output-set/1"' in h),
    "partial": ("a score_eval partial", lambda h: h.startswith(b'{"format":"' + PARTIAL_FORMAT.encode() + b'"')),
    "trace": ("a trace JSONL file", lambda h: b'"retrieved_ids"' in _first_line(h)),
    "perturb": ("a perturbation gold set", lambda h: b'"perturbation"' in _first_line(h) and b'"qid"' in _first_line(h)),
    "index": ("a mini_rag index", lambda h: h.startswith(b"{") and b'"mini_rag-index"' in _first_line(h)),
    "eval-report": ("a mini_rag eval report", lambda h: h.lstrip().startswith(b"{") and b'"datasets"' in h),
}
REGULAR_KINDS = ("index", "partial")
#: The command that writes each kind, named when an output would replace another command's file.
_WRITERS = {
    "report": "score_eval.py --out", "items": "score_eval.py --items", "markdown": "score_eval.py --markdown",
    "report-html": "score_eval.py --html", "junit": "score_eval.py --junit", "csv": "score_eval.py --csv",
    "partial": "score_eval.py --partial", "merged-html": "score_eval.py merge-html (python -m mini_rag eval "
    "writes its report.html with it)", "eval-report": "python -m mini_rag eval (make eval)",
    "eval-markdown": "python -m mini_rag eval (make eval)", "manifest": "score_eval.py --manifest or "
    "python -m mini_rag eval", "trace": "python -m mini_rag run", "perturb": "python -m mini_rag perturb",
    "index": "python -m mini_rag index",
}


#: The output kinds in the order a file's head is tested against them: the most specific first.
_SNIFF_ORDER = ("report", "items", "trace", "perturb", "partial", "index", "manifest", "eval-report",
                "eval-markdown", "markdown", "merged-html", "report-html", "junit", "csv")


def _written_by(head: bytes) -> Optional[str]:
    """The kind of an existing file's head (most specific first), None when it is none of them."""
    for kind in _SNIFF_ORDER:
        if OUTPUT_KINDS[kind][1](head):
            return kind
    return None


def _file_head(path: str, size: int = _SNIFF_BYTES) -> bytes:
    """The first ``size`` bytes of a regular file (decompressed when it is gzip)."""
    with open(path, "rb") as fh:
        head = fh.read(size)
    if head[:2] == b"\x1f\x8b":             # gzip: what it starts with, even when truncated
        import zlib
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, size)
        except zlib.error:
            pass
    return head


def _identity(path: str):
    """``(dev, inode)`` of an existing path (symlinks followed), else its resolved path."""
    try:
        st = os.stat(path)
        return (st.st_dev, st.st_ino)
    except (OSError, ValueError):
        return os.path.realpath(path)


def check_outputs(outputs, inputs, force: bool = False) -> None:
    """Apply the output policy (see above).  ``outputs``: ``(label, path, kind)``; ``inputs``:
    ``(label, path)``; ``None`` and ``-`` are skipped.  A ScoreError names both paths."""
    ins = []
    for label, path in inputs:
        if path and path != "-":
            ins.append((label, path, _identity(path)))
    seen = []
    for label, path, kind in outputs:
        if not path or path == "-":
            continue
        if "\x00" in path:
            raise ScoreError("%s %r: a path cannot hold a NUL character" % (label, path))
        ident = _identity(path)
        for in_label, in_path, in_ident in ins:
            if ident == in_ident:
                raise ScoreError("%s %s: is the input %s %s (the same file); writing it would destroy the "
                                 "input: choose another output path" % (label, path, in_label, in_path))
        for out_label, out_path, out_ident in seen:
            if ident == out_ident:
                raise ScoreError("%s %s: is also the output %s %s (the same file); each output needs "
                                 "its own path" % (label, path, out_label, out_path))
        seen.append((label, path, ident))
        try:
            st = os.stat(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise ScoreError("%s %s: cannot write: %s" % (label, path, exc.strerror or exc)) from None
        if stat.S_ISDIR(st.st_mode):
            raise ScoreError("%s %s: cannot write: it is a folder" % (label, path))
        what = OUTPUT_KINDS.get(kind, (kind, None))[0]
        if not stat.S_ISREG(st.st_mode):
            if kind in REGULAR_KINDS:
                raise ScoreError("%s %s: is %s, not a regular file; %s is written to a regular file"
                                 % (label, path, _file_kind(st.st_mode), what))
            continue
        if st.st_size == 0 or force or kind not in OUTPUT_KINDS:
            continue
        try:
            head = _file_head(path)
        except OSError as exc:
            raise ScoreError("%s %s: cannot read what it holds: %s" % (label, path, exc.strerror or exc)) from None
        if not OUTPUT_KINDS[kind][1](head):
            found = _written_by(head)
            hint = "'python -m mini_rag index --force'" if kind == "index" else "--force"
            if found is not None:
                raise ScoreError("%s %s: is %s, written by %s; refusing to replace another command's output "
                                 "(it is not %s): choose another path, or %s to replace it"
                                 % (label, path, OUTPUT_KINDS[found][0], _WRITERS[found], what, hint))
            raise ScoreError("%s %s: exists and is not %s (it starts %s); refusing to replace it: "
                             "choose another path, or %s to replace it"
                             % (label, path, what, _show(head[:40].decode("utf-8", "replace"), 60), hint))


SET_MANIFEST = "manifest.json"     # the name of an output set's manifest (make eval's runs/manifest.json)


def check_output_sets(outputs, force: bool = False) -> None:
    """An existing output listed in the ``manifest.json`` of its folder belongs to the output set
    another command wrote (make eval's runs/: each file's sha256): replacing it would break
    that set, so it is refused, naming both, unless ``force`` or that manifest is itself an
    output of this command (it is rewritten)."""
    if force:
        return
    own = {_identity(p) for _, p, _ in outputs if p and p != "-"}
    listings: Dict[str, Optional[set]] = {}
    for label, path, kind in outputs:
        if not path or path == "-" or kind == "manifest" or not os.path.isfile(path):
            continue
        folder = os.path.dirname(os.path.abspath(path))
        manifest = os.path.join(folder, SET_MANIFEST)
        if manifest not in listings:
            listings[manifest] = None if _identity(manifest) in own else _set_listing(manifest)
        listed = listings[manifest]
        if listed and os.path.relpath(os.path.abspath(path), folder).replace(os.sep, "/") in listed:
            shown = os.path.join(os.path.dirname(path), SET_MANIFEST)
            raise ScoreError("%s %s: is listed in %s, the output set %s wrote (a sha256 per file); replacing "
                             "it would break that set: choose another path (a folder of your own, e.g. "
                             "runs/own/), or --force to replace it" % (label, path, shown, _set_writer(folder, listed)))


def _set_listing(manifest: str) -> Optional[set]:
    """The files an output-set manifest lists (None when it is absent, too big or not one)."""
    try:
        if not os.path.isfile(manifest) or os.path.getsize(manifest) > MAX_SMALL_FILE_BYTES:
            return None
        with open(manifest, "rb") as fh:
            doc = json.loads(fh.read().decode("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("schema") != "output-set/1" or not isinstance(doc.get("sha256"), dict):
        return None
    return set(doc["sha256"])


def _set_writer(folder: str, listed: set) -> str:
    """Who wrote a set: make eval's lists its combined report.json, a mini_rag eval report."""
    try:
        if "report.json" in listed and OUTPUT_KINDS["eval-report"][1](_file_head(os.path.join(folder, "report.json"))):
            return _WRITERS["eval-report"]
    except OSError:
        pass
    return "a score_eval.py --manifest run"


def manifest_listable(outputs) -> None:
    """The files a manifest lists are read back for their sha256: each must be a regular file
    (or not exist yet); a device such as /dev/zero would never end."""
    for label, path in outputs:
        if not path or path == "-":
            continue
        try:
            st = os.stat(path)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            raise ScoreError("%s %s: is %s; --manifest lists regular files only (give a file, or no --manifest)"
                             % (label, path, _file_kind(st.st_mode)))


def atomic_write(path: str, text: str) -> None:
    """``write_output`` of ``text`` as UTF-8."""
    write_output(path, text.encode("utf-8"))


def write_output(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a crash leaves the old file or the new one, never half.

    ``-`` is stdout.  A symlink is resolved and its target replaced; a device, FIFO or socket
    is written directly (never renamed over).  A regular file is written to a temp file in
    the target's folder (``.<name>.<pid>.<random>.ragtmp``), fsynced, given mode
    0666 & ~umask and renamed into place.  Every OS error is a ScoreError naming the path."""
    if path == "-":
        buf = getattr(sys.stdout, "buffer", None)
        if buf is None:                       # a text-only stream (tests, IDEs)
            sys.stdout.write(data.decode("utf-8"))
        else:
            sys.stdout.flush()
            buf.write(data)
            buf.flush()
        return
    write_output_with(path, lambda fh: fh.write(data))


def write_output_with(path: str, write) -> None:
    """:func:`write_output` of content produced piece by piece: ``write(fh)`` writes it to
    the binary file (the temp file, or the device in place); ``-`` is stdout's buffer."""
    if path == "-":
        sys.stdout.flush()
        write(sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return
    target = os.path.realpath(path)
    try:
        try:
            st = os.stat(target)
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise ScoreError("%s: cannot write: it is a folder" % path)
        if st is not None and not stat.S_ISREG(st.st_mode):
            # a device or FIFO: written in place, never replaced; a FIFO nobody reads is an
            # error (ENXIO), not a hang
            flags = os.O_WRONLY | (os.O_NONBLOCK if stat.S_ISFIFO(st.st_mode) else 0)
            try:
                fd = os.open(target, flags)
            except OSError as exc:
                if exc.errno == getattr(__import__("errno"), "ENXIO", -1):
                    raise ScoreError("%s: cannot write: a FIFO with no reader" % path) from None
                raise
            if flags & os.O_NONBLOCK:
                os.set_blocking(fd, True)
            with os.fdopen(fd, "wb") as fh:
                write(fh)
            return
        folder = os.path.dirname(target)
        os.makedirs(folder, exist_ok=True)
        sweep_temp_files(folder)
        fd, tmp = _temp_file(folder, os.path.basename(target))
        try:
            with os.fdopen(fd, "wb") as fh:
                write(fh)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o666 & ~_umask())
            os.replace(tmp, target)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError as exc:
        raise ScoreError("%s: cannot write: %s" % (path, exc.strerror or exc)) from None


def write_manifest(path: str, files: List[str]) -> None:
    """Write, last, the manifest of a set of outputs: each file's sha256 as written.  A reader
    tells a complete set (every hash matches) from a torn one (a run killed midway removed
    the old manifest first and never wrote the new one)."""
    import hashlib
    hashes = {}
    here = os.path.dirname(os.path.abspath(path))
    for f in files:
        try:
            with open(f, "rb") as fh:
                hashes[os.path.relpath(os.path.abspath(f), here).replace(os.sep, "/")] = \
                    hashlib.sha256(fh.read()).hexdigest()
        except OSError as exc:
            raise ScoreError("%s: cannot read back for the manifest: %s" % (f, exc.strerror)) from None
    atomic_write(path, json.dumps({"schema": "output-set/1", "sha256": hashes}, indent=2) + "\n")


def remove_output(path: str) -> None:
    """Remove an earlier manifest before a new set is written (missing is fine).  Only a
    regular file is removed (a symlink's target); a device, FIFO or socket is left alone."""
    target = os.path.realpath(path)
    try:
        if not stat.S_ISREG(os.stat(target).st_mode):
            return
        os.unlink(target)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise ScoreError("%s: cannot remove: %s" % (path, exc.strerror)) from None


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_STARTED = time.time()


def _temp_tag(stem: str) -> str:
    """The record a temp file's name carries that this project made it (issue 44): a hash of
    the rest of its name, which no name a user gives a file has by chance."""
    import hashlib
    return hashlib.sha256(("rag-referee temp file\0" + stem).encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _temp_file(folder: str, base: str) -> Tuple[int, str]:
    """(fd, path) of a new temp file ``.<base>.<pid>.<random>.<tag>.ragtmp`` in ``folder``,
    created exclusively with mode 0600; ``tag`` records that this project made it (_temp_tag)."""
    import secrets
    for _ in range(100):
        stem = "%s.%d.%s" % (base, os.getpid(), secrets.token_hex(4))
        path = os.path.join(folder, ".%s.%s%s" % (stem, _temp_tag(stem), TMP_SUFFIX))
        try:
            return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600), path
        except FileExistsError:
            continue
    raise FileExistsError("no free temp file name in %s" % folder)


def own_temp_pid(name: str) -> int:
    """The process id in the name of a temp file this project made (``_temp_file``), 0 for any
    other name (a user's ``x.ragtmp`` included)."""
    if not (name.startswith(".") and name.endswith(TMP_SUFFIX)):
        return 0
    parts = name[1:-len(TMP_SUFFIX)].rsplit(".", 3)
    if len(parts) != 4 or not parts[1].isdigit() or len(parts[2]) != 8:
        return 0
    stem = "%s.%s.%s" % tuple(parts[:3])
    return int(parts[1]) if parts[3] == _temp_tag(stem) and int(parts[1]) > 0 else 0


def sweep_temp_files(folder: str) -> int:
    """Remove the temp files in ``folder`` that killed runs of this project left: only names it
    made (own_temp_pid: never a user's file because it ends in ``.ragtmp``), whose process is
    gone, older than this run.  Returns how many were removed (errors are ignored)."""
    removed = 0
    try:
        names = [n for n in os.listdir(folder) if n.endswith(TMP_SUFFIX) and n.startswith(".")]
    except OSError:
        return 0
    for name in names:
        pid = own_temp_pid(name)
        if not pid:
            continue
        full = os.path.join(folder, name)
        try:
            if pid == os.getpid() or os.lstat(full).st_mtime >= _STARTED or pid_alive(pid):
                continue
            os.unlink(full)
            removed += 1
        except OSError:
            pass
    return removed


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:          # exists, owned by someone else
        return True
    return True


def render_json(report: dict, items: Dict[str, str]) -> str:
    """indent=2 like the seed; the per-item map goes last on one line (fast for big sets)."""
    head = json.dumps(report, indent=2, ensure_ascii=False)
    return head[:-2] + ',\n  "items": ' + json.dumps(items, ensure_ascii=False, separators=(",", ":")) + "\n}\n"


def render_markdown(report: dict, worst: List[dict]) -> str:
    mark = {True: "PASS", False: "FAIL"}
    out = ["# score_eval report: %s" % md_text(report["dataset"]), "",
           "**%s**: %d of %d gates pass." % (mark[report["pass"]],
                                               sum(1 for g in report["gate_results"] if g["pass"]),
                                               len(report["gate_results"])), ""]
    c = report["counts"]
    out.append("Gold items: %d; trace rows: %d; missing traces: %d; unknown trace rows: %d; duplicate "
               "trace rows: %d." % (c["gold_items"], c["trace_rows"], c["missing_traces"],
                                    c["unknown_trace_rows"], c["duplicate_trace_rows"]))
    out += ["", "## Gates", "", "| | gate | value | needs | note |", "|---|---|---|---|---|"]
    for g in report["gate_results"]:
        need = "" if g["op"] is None else "%s %s" % (g["op"], _fmt_num(g["threshold"]))
        note = (g["reason"] or "") + ((" " + g["message"]) if g.get("message") else "")
        out.append("| %s | `%s`%s | %s | %s | %s |" % (_markdown_mark(g), g["gate"], _markdown_tier(g),
                                                    _cell(g["value"]), need, md_text(note)))
    card = report.get("scorecard")
    if card:
        out += ["", "Weighted overall score: %s (%s)." % (_cell(card["overall"]), card["note"])]
    out += ["", "## Metrics", "", "| metric | value | count / n | 95% CI |", "|---|---|---|---|"]
    for name, e in report["metrics"].items():
        frac = "" if e["n"] is None else ("%s / %d" % (e["count"], e["n"]) if e["count"] is not None else "n = %d" % e["n"])
        ci = "" if e["ci"] is None else "%.4f - %.4f" % tuple(e["ci"])
        out.append("| `%s` | %s | %s | %s |" % (name, _cell(e["value"]) if e["value"] is not None else
                                                 "null (%s)" % _md_reason(e["reason"]), frac, ci))
    cats = report["categories"]
    if cats:
        cols = [n for n in ("pass_rate", "precision", "chr", "hallucination", "over_refusal", "under_refusal",
                            "recall@%d" % report["k"], "nDCG@%d" % report["k"]) if n in report["metrics"]]
        out += ["", "## Categories", "", "| category | items | " + " | ".join(cols) + " |",
                "|---|---|" + "---|" * len(cols)]
        for cat, block in cats.items():
            out.append("| %s | %d | %s |" % (md_text(cat), block["items"], " | ".join(
                _cell(block["metrics"].get(col, {}).get("value")) for col in cols)))
    out += ["", "## Failure modes", ""]
    if report["failure_modes"]:
        out += ["| mode | items |", "|---|---|"]
        out += ["| %s | %d |" % kv for kv in report["failure_modes"].items()]
    else:
        out.append("No failing items.")
    if worst:
        out += ["", "## Worst items (up to %d)" % len(worst), "", "| qid | category | failure mode | all labels |",
                "|---|---|---|---|"]
        for w in worst:
            out.append("| %s | %s | %s | %s |" % (md_text(w["qid"]), md_text(w["category"]), w["failure_mode"],
                                                ", ".join(w["labels"])))
    reg = report.get("regression")
    if reg:
        out += ["", "## Against the baseline", "", "Baseline: %s; %d items paired." % (md_text(reg["baseline"]), reg["matched_items"]),
                "", "| metric | baseline | current | delta | worse | better | p |", "|---|---|---|---|---|---|---|"]
        for name, r in reg["metrics"].items():
            out.append("| `%s` | %s | %s | %s | %s | %s | %s |" % (
                name, _cell(r["baseline"]), _cell(r["current"]), _cell(r["delta"]), r.get("worse", ""),
                r.get("better", ""), _cell(r.get("p_value"))))
    if report["warnings"]:
        out += ["", "## Warnings", ""] + ["- %s" % md_text(w) for w in report["warnings"]]
    return "\n".join(out) + "\n"


def _markdown_mark(g: dict) -> str:
    if g.get("tier") == "monitor":
        return "📊"
    return "✅" if g["pass"] else ("⚠️" if g.get("tier") == "warn" else "❌")


def _markdown_tier(g: dict) -> str:
    return "" if g.get("tier", "block") == "block" else " (%s)" % g["tier"]


_MD_SPECIAL = {"|": "\\|", "`": "\\`", "<": "&lt;", ">": "&gt;", "&": "&amp;", "\r": " ", "\n": " ",
               "\\": "\\\\", "*": "\\*", "_": "\\_", "[": "\\[", "]": "\\]", "#": "\\#"}
_MD_RX = re.compile("[|`<>&\r\n\\\\*_\\[\\]#]")


def md_text(value) -> str:
    """Text from the input made inert in Markdown: table pipes, code ticks, raw HTML
    (``<`` ``>`` ``&``), emphasis, links and headings escaped; a newline becomes a space."""
    return _MD_RX.sub(lambda m: _MD_SPECIAL[m.group()], _CONTROL.sub("?", str(value)))


_MD_REASON_RX = re.compile(r"[|`<>&\r\n\\]|\](?=\()")


def _md_reason(value) -> str:
    """A metric's reason, which may quote input (a qid, a chunk id), inert in a Markdown table
    cell: raw HTML, cell pipes, code ticks, backslashes and links (``](``) escaped; the rest
    (underscores, ``[scorer]``) as written, as it reads in the JSON report."""
    return _MD_REASON_RX.sub(lambda m: "\\]" if m.group() == "]" else _MD_SPECIAL[m.group()],
                             _CONTROL.sub("?", str(value)))


def _cell(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, float):
        return "%.4f" % v
    return str(v)

# --------------------------------------------------------------------------- shards: --partial and merge
#
# A shard run (``--partial OUT.json``) judges its slice of the trace rows and writes, instead
# of a report, the verdicts it made: for every gold item it saw, the item's slots of every
# per-item container of the Scorer (arrays, per-cutoff arrays, sparse maps), found
# generically so a metric added to the Scorer merges with no code here; the order in which
# its rows named items (to count duplicates across shards exactly); its row counts and
# notes.  ``merge P1 ... Pn`` reads the gold set again (its sha256 must match), takes each
# item's verdict from the last shard that saw it (last row wins, as in one run when the
# shards are consecutive pieces of the trace), judges the items no shard saw as missing,
# and then aggregates, gates, compares and prints through the very code of a single run:
# the output is byte-identical to one run over all the rows.  TREC runs shard by topic.

PARTIAL_FORMAT = "score_eval-partial"


def has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """Control characters (ESC and the rest of C0/C1, DEL; not tab or newline) shown as
    ``\\xNN`` so input text cannot move the cursor or recolor a terminal; lone surrogates too."""
    text = _CONTROL.sub(lambda m: "\\x%02x" % ord(m.group()), text)
    return text.encode("utf-8", "backslashreplace").decode("utf-8") if has_surrogate(text) else text


# =========================================================================== referee/reports.py
# Reports: HTML, JUnit and CSV, and the per-item records they share.

# --------------------------------------------------------------------------- reports: HTML, JUnit, CSV

HTML_ITEMS = 2000        # items in the HTML drill-down (failing first); the rest are counted
HTML_TEXT = 3000         # characters of one claim or chunk text shown before "[... N more]"
_CTRL_RX = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")
_TIER_MARK = {"block": "BLOCK", "warn": "WARN", "monitor": "MONITOR"}
_HTML_BEGIN, _HTML_END = "<!--score_eval:section-->", "<!--/score_eval:section-->"


def _inert(text) -> str:
    """Text with control characters, lone surrogates and XML non-characters made visible
    (``\\x07``), so it is printable, encodable as UTF-8 and valid in XML 1.0."""
    text = "" if text is None else str(text)
    return _CTRL_RX.sub(lambda m: "\\x%02x" % ord(m.group(0)) if ord(m.group(0)) < 0x100 else
                        "\\u%04x" % ord(m.group(0)), text)


def _h(text) -> str:
    """Escaped for HTML text and attribute values (html.escape with quotes)."""
    return html.escape(_inert(text), quote=True)


def _clip(text: str, limit: int = HTML_TEXT) -> str:
    return text if len(text) <= limit else text[:limit] + " [... %d more characters]" % (len(text) - limit)


def _num_text(v) -> str:
    return "null" if v is None else ("%.4f" % v if isinstance(v, float) else str(v))


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0;background:#f5f6f8;color:#1d232b}
main{max-width:1180px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:24px;margin:8px 0 4px}h2{font-size:20px;margin:28px 0 8px}h3{font-size:16px;margin:22px 0 6px}
section.dataset{background:#fff;border:1px solid #d7dbe0;border-radius:8px;padding:4px 20px 20px;margin:18px 0}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}
th,td{border:1px solid #d7dbe0;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#eef1f4}td.n{text-align:right;font-variant-numeric:tabular-nums}
.verdict{display:inline-block;font-weight:700;font-size:18px;padding:6px 14px;border-radius:6px;color:#fff}
.pass{background:#1a7f37}.fail{background:#cf222e}.warnbg{background:#9a6700}
.tier{display:inline-block;font-size:11px;font-weight:700;padding:1px 6px;border-radius:4px;color:#fff}
.t-block{background:#57606a}.t-warn{background:#bf8700}.t-monitor{background:#0969da}
.ok{color:#1a7f37;font-weight:700}.bad{color:#cf222e;font-weight:700}.warn{color:#9a6700;font-weight:700}
.muted{color:#57606a}details.item{border:1px solid #d7dbe0;border-radius:6px;margin:4px 0;padding:2px 10px;background:#fbfcfd}
details.item[open]{background:#fff}summary{cursor:pointer;padding:3px 0}
dl{display:grid;grid-template-columns:150px 1fr;gap:3px 12px;margin:6px 0}dt{font-weight:600;color:#57606a}dd{margin:0}
blockquote{margin:3px 0 6px;padding:4px 10px;border-left:3px solid #0969da;background:#f6f8fa;white-space:pre-wrap}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
.claim{white-space:pre-wrap}nav a{margin-right:14px}
"""


def _html_page(title: str, body: str) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"generator\" content=\"score_eval\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<title>%s</title>\n<style>%s</style>\n</head>\n<body>\n<main>\n%s</main>\n</body>\n</html>\n"
            % (_h(title), _CSS, body))


def _interval_svg(value, ci) -> str:
    """A 0..1 axis with the 95% interval as a bar and the value as a dot."""
    if not isinstance(value, (int, float)) or not 0 <= value <= 1:
        return ""
    w, pad = 180, 4
    x = lambda v: pad + (w - 2 * pad) * min(1.0, max(0.0, v))
    parts = ['<svg width="%d" height="14" role="img" aria-label="interval">' % w,
             '<line x1="%d" y1="7" x2="%d" y2="7" stroke="#d0d7de" stroke-width="2"/>' % (pad, w - pad)]
    if ci:
        parts.append('<rect x="%.1f" y="3" width="%.1f" height="8" fill="#9ec5fe" rx="2"/>'
                     % (x(ci[0]), max(1.0, x(ci[1]) - x(ci[0]))))
    parts.append('<circle cx="%.1f" cy="7" r="3.5" fill="#0550ae"/></svg>' % x(value))
    return "".join(parts)


def _bars_svg(rows: List[Tuple[str, int]]) -> str:
    """Horizontal bar chart of (label, count)."""
    if not rows:
        return '<p class="ok">No failing items.</p>'
    top = max(c for _, c in rows) or 1
    lw, bw, h = 210, 420, 22
    out = ['<svg width="%d" height="%d" role="img" aria-label="failure modes">' % (lw + bw + 60, h * len(rows) + 4)]
    for n, (label, c) in enumerate(rows):
        y = n * h + 2
        out.append('<text x="%d" y="%d" text-anchor="end" font-size="12" fill="#1d232b">%s</text>'
                   % (lw - 8, y + 15, _h(label)))
        out.append('<rect x="%d" y="%d" width="%.1f" height="%d" fill="#cf222e" rx="2"/>'
                   % (lw, y + 3, max(2.0, bw * c / top), h - 6))
        out.append('<text x="%.1f" y="%d" font-size="12" fill="#1d232b">%d</text>' % (lw + max(2.0, bw * c / top) + 6, y + 15, c))
    out.append("</svg>")
    return "".join(out)


def _item_texts(args, scorer: Scorer, wanted) -> Dict[int, dict]:
    """Question, gold substrings and citations, claim, citations with their text and the
    ranking of the items ``wanted``, read again from the (already validated) input files."""
    out: Dict[int, dict] = {i: {} for i in wanted}
    index, sink, notes = scorer.gold.index, _Errors(1), []
    # reference-free runs have no gold file; a RAGAS file is its own gold (issue 28)
    gold_path = args.gold or (args.trace if args.trace in _RAGAS_PATHS else None)
    for _, row in (_jsonl(gold_path, sink, notes) if gold_path else ()):
        i = index.get(row.get("qid"))
        if i in out:
            out[i].update({"question": row.get("question"), "gold_claim_substr": row.get("gold_claim_substr"),
                           "gold_citations": row.get("gold_citations"), "expected_decision": row.get("expected_decision")})
    for _, row in _jsonl(args.trace, sink, notes):
        i = index.get(row.get("qid") or row.get("q_id"))
        if i not in out:
            continue
        aj = row.get("answer_json") if type(row.get("answer_json")) is dict else {}
        cited = row.get("cited_chunks") if type(row.get("cited_chunks")) is dict else {}
        cits = aj.get("citations") or []
        texts = []
        for c in cits:
            t = cited.get(c)
            if t is None and scorer.chunks is not None:
                t = scorer.chunks.get(c)
            texts.append((c, t))
        out[i].update({"claim": aj.get("claim"), "citations": texts, "retrieved_ids": row.get("retrieved_ids") or [],
                       "decision": row.get("decision"), "trace_question": row.get("q")})
    return out


def _html_items(args, scorer: Scorer, trec: bool, stages: ItemStages) -> Tuple[str, int]:
    order = []
    for i, f in enumerate(scorer.flags):
        mode = failure_mode(f, trec)
        order.append((MODE_ORDER.index(mode) if mode else len(MODE_ORDER), i))
    order.sort()
    shown = [i for _, i in order[:HTML_ITEMS]]
    texts = {} if trec else _item_texts(args, scorer, set(shown))
    meaning = dict(FLAG_MEANINGS)
    parts = []
    for i in shown:
        rec = _item_record(scorer, i, trec)
        card = stages(i)
        t = texts.get(i, {})
        status = rec["failure_mode"] or "ok"
        cls = "bad" if rec["failure_mode"] else "ok"
        rows = []
        q = t.get("question") if t.get("question") is not None else t.get("trace_question")
        if q is not None:
            rows.append(("Question", '<span class="claim">%s</span>' % _h(_clip(str(q)))))
        if not trec:
            claim = t.get("claim")
            rows.append(("Claim", '<span class="claim">%s</span>' % _h(_clip(str(claim))) if claim is not None
                         else '<span class="muted">(no claim)</span>'))
            if t.get("decision") is not None:
                rows.append(("Decision", "%s (expected %s)" % (_h(t["decision"]), _h(t.get("expected_decision")))))
            cites = t.get("citations") or []
            rows.append(("Citations", "".join(
                "<div><code>%s</code>%s</div>" % (_h(c), "<blockquote>%s</blockquote>" % _h(_clip(str(txt)))
                                                 if txt is not None else ' <span class="muted">(no text)</span>')
                for c, txt in cites) or '<span class="muted">none</span>'))
            subs = t.get("gold_claim_substr")
            rows.append(("Gold substrings", ", ".join("<code>%s</code>" % _h(s) for s in subs) if subs else
                         '<span class="muted">%s</span>' % ("[] (vacuous)" if subs == [] else "none")))
            rows.append(("Gold citations", ", ".join("<code>%s</code>" % _h(c) for c in t.get("gold_citations") or [])
                         or '<span class="muted">none</span>'))
            rows.append(("Retrieved", ", ".join("<code>%s</code>" % _h(c) for c in t.get("retrieved_ids", [])[:20])
                         or '<span class="muted">none</span>'))
            if rec.get("unsupported"):
                rows.append(("Unsupported", ", ".join("<code>%s</code>" % _h(w) for w in rec["unsupported"])))
        if rec["retrieval"]:
            rows.append(("Retrieval", " ".join("%s=%s" % (_h(k), _num_text(v)) for k, v in rec["retrieval"].items())))
        rows.append(("Labels", _h(", ".join(rec["labels"])) or '<span class="muted">none</span>'))
        rows.append(("Flags", "<code>%s</code> <span class=\"muted\">%s</span>" % (
            _h(rec["flags"]), _h("; ".join(meaning[ch] for ch in rec["flags"])))))
        rows.append(("Stage scores", " ".join("%s=%s" % (_h(k), _num_text(v)) for k, v in card["stages"].items())
                     + " &middot; overall=%s" % _num_text(card["overall"])))
        parts.append('<details class="item"><summary><code>%s</code> &middot; %s &middot; <span class="%s">%s</span>'
                     '</summary>\n<dl>%s</dl></details>\n' % (
                         _h(rec["qid"]), _h(rec["category"]), cls, _h(status),
                         "".join("<dt>%s</dt><dd>%s</dd>" % (_h(k), v) for k, v in rows)))
    return "".join(parts), len(scorer.flags) - len(shown)


def _html_gates(gates: List[dict]) -> List[str]:
    """The Gates table: each gate's tier, result, metric, value, bound and note."""
    out = ["<h3>Gates</h3>\n<table><tr><th>tier</th><th>result</th><th>gate</th><th>value</th><th>needs</th>"
           "<th>note</th></tr>"]
    for g in gates:
        res = ('<span class="ok">pass</span>' if g["pass"] else
               '<span class="%s">%s</span>' % ("warn" if g["tier"] != "block" else "bad",
                                              "warn" if g["tier"] == "warn" else "fail"))
        if g["tier"] == "monitor" and g["op"] is None:
            res = '<span class="muted">reported</span>'
        need = "" if g["op"] is None else "%s %s" % (_h(g["op"]), _h(_fmt_num(g["threshold"])))
        note = (g["reason"] or "") + ((" " + g["message"]) if g.get("message") else "")
        out.append('<tr><td><span class="tier t-%s">%s</span></td><td>%s</td><td><code>%s</code></td>'
                   '<td class="n">%s</td><td>%s</td><td>%s</td></tr>' % (
                       _h(g["tier"]), _TIER_MARK.get(g["tier"], "BLOCK"), res, _h(g["gate"]),
                       _h(_num_text(g["value"])), need, _h(note)))
    out.append("</table>")
    return out


def _html_scorecard(card: dict) -> List[str]:
    """The weighted scorecard: the overall score, then each stage's weight and score."""
    out = ["<h3>Weighted scorecard</h3>\n<p>Overall score: <strong>%s</strong>. %s.</p>" % (
        _h(_num_text(card["overall"])), _h(card["note"]))]
    out.append("<table><tr><th>stage</th><th>metric</th><th>weight</th><th>effective weight</th><th>score</th>"
               "<th></th><th>n</th><th>note</th></tr>")
    for name, st in card["stages"].items():
        out.append('<tr><td>%s</td><td><code>%s</code></td><td class="n">%s</td><td class="n">%s</td>'
                   '<td class="n">%s</td><td>%s</td><td class="n">%s</td><td>%s</td></tr>' % (
                       _h(name), _h(st["metric"]), _h(_num_text(st["weight"])),
                       _h(_num_text(st["effective_weight"])), _h(_num_text(st["score"])),
                       _interval_svg(st["score"], None), _h(_num_text(st["n"])), _h(st["reason"] or "")))
    out.append("</table>")
    return out


def _html_metrics(metrics: Dict[str, dict]) -> List[str]:
    """The Metrics table: value, count / n, 95% interval and its drawing (none for counts)."""
    out = ["<h3>Metrics</h3>\n<table><tr><th>metric</th><th>value</th><th>count / n</th><th>95% CI</th>"
           "<th>interval (0 to 1)</th></tr>"]
    for name, e in metrics.items():
        frac = "" if e["n"] is None else ("%s / %d" % (e["count"], e["n"]) if e["count"] is not None else "n = %d" % e["n"])
        ci = "" if e["ci"] is None else "%.4f &ndash; %.4f" % tuple(e["ci"])
        kind = _BY_NAME.get(name) or _BY_NAME.get(re.sub(r"@\d+$", "@K", name))
        svg = _interval_svg(e["value"], e["ci"]) if kind is None or kind.kind != "count" else ""
        val = _h(_num_text(e["value"])) if e["value"] is not None else '<span class="muted">null: %s</span>' % _h(e["reason"])
        out.append('<tr><td><code>%s</code></td><td class="n">%s</td><td class="n">%s</td><td class="n">%s</td>'
                   '<td>%s</td></tr>' % (_h(name), val, _h(frac), ci, svg))
    out.append("</table>")
    return out


def _html_categories(report: dict, cats: Dict[str, dict]) -> List[str]:
    """The Categories table: items and the main metrics of each category."""
    cols = [n for n in ("pass_rate", "precision", "chr", "hallucination", "over_refusal", "under_refusal",
                        "recall@%s" % report["k"], "nDCG@%s" % report["k"]) if n in report["metrics"]]
    out = ["<h3>Categories</h3>\n<table><tr><th>category</th><th>items</th>%s</tr>"
           % "".join("<th><code>%s</code></th>" % _h(col) for col in cols)]
    for cat, block in cats.items():
        out.append('<tr><td>%s</td><td class="n">%d</td>%s</tr>' % (_h(cat), block["items"], "".join(
            '<td class="n">%s</td>' % _h(_num_text(block["metrics"].get(col, {}).get("value"))) for col in cols)))
    out.append("</table>")
    return out


def _html_regression(reg: dict) -> List[str]:
    """Against the baseline: each metric's baseline, current value, delta (coloured by the
    metric's direction), flipped items and paired p-value."""
    out = ["<h3>Against the baseline</h3>\n<p>Baseline <code>%s</code>; %d items paired.</p>"
           % (_h(reg["baseline"]), reg["matched_items"])]
    out.append("<table><tr><th>metric</th><th>baseline</th><th>current</th><th>delta</th><th>worse</th>"
               "<th>better</th><th>p</th></tr>")
    for name, r in reg["metrics"].items():
        d = r.get("delta")
        cls = "" if not isinstance(d, (int, float)) or d == 0 else (
            "ok" if (d > 0) == ((_BY_NAME.get(name) or _BY_NAME.get(re.sub(r"@\d+$", "@K", name)) or
                                _BY_NAME["precision"]).better == "higher") else "bad")
        out.append('<tr><td><code>%s</code></td><td class="n">%s</td><td class="n">%s</td><td class="n %s">%s</td>'
                   '<td class="n">%s</td><td class="n">%s</td><td class="n">%s</td></tr>' % (
                       _h(name), _h(_num_text(r["baseline"])), _h(_num_text(r["current"])), cls,
                       _h(_num_text(d)), _h(r.get("worse", "")), _h(r.get("better", "")),
                       _h(_num_text(r.get("p_value")) if "p_value" in r else "")))
    out.append("</table>")
    return out


def render_html_section(report: dict, items_html: str = "", hidden: int = 0) -> str:
    """One dataset's report as an HTML <section> (every input string escaped)."""
    ds = str(report.get("dataset"))
    anchor = "ds-" + re.sub(r"[^A-Za-z0-9_-]", "_", ds)
    gates = report["gate_results"]
    out = ['<section class="dataset" id="%s" data-dataset="%s" data-pass="%s">' % (
        _h(anchor), _h(ds), "true" if report["pass"] else "false")]
    blocked = sum(1 for g in gates if g["tier"] == "block" and not g["pass"])
    out.append('<h2>Dataset %s</h2>\n<p><span class="verdict %s">%s</span> &nbsp; %d of %d block gates pass; '
               '%d warn gates failed; %d monitored.</p>' % (
                   _h(ds), "pass" if report["pass"] else "fail", "PASS" if report["pass"] else "FAIL",
                   sum(1 for g in gates if g["tier"] == "block") - blocked, sum(1 for g in gates if g["tier"] == "block"),
                   report.get("warnings_failed", 0), sum(1 for g in gates if g["tier"] == "monitor")))
    c = report["counts"]
    out.append('<p class="muted">Gold items: %d; trace rows: %d; missing traces: %d; unknown trace rows: %d; '
               'duplicate trace rows: %d; k = %s.</p>' % (c["gold_items"], c["trace_rows"], c["missing_traces"],
                                                       c["unknown_trace_rows"], c["duplicate_trace_rows"], _h(report["k"])))
    out += _html_gates(gates)
    if report.get("scorecard"):
        out += _html_scorecard(report["scorecard"])
    out += _html_metrics(report["metrics"])
    if report.get("categories"):
        out += _html_categories(report, report["categories"])
    out.append("<h3>Failure modes</h3>\n" + _bars_svg(list(report["failure_modes"].items())))
    if report.get("regression"):
        out += _html_regression(report["regression"])
    if report.get("warnings"):
        out.append("<h3>Warnings</h3>\n<ul>%s</ul>" % "".join("<li>%s</li>" % _h(w) for w in report["warnings"]))
    if items_html:
        out.append("<h3>Items</h3>\n<p class=\"muted\">Failing items first (most severe mode first), then the rest "
                   "in gold order; open an item for its question, claim, cited text and verdict flags; the browser's "
                   "find searches them.%s</p>\n%s" % (
                       " %d more items not shown (see --items or --csv)." % hidden if hidden else "", items_html))
    out.append("</section>\n")
    return "\n".join(out)


def render_html(report: dict, items_html: str = "", hidden: int = 0) -> str:
    title = "score_eval report: %s" % report.get("dataset")
    body = "<h1>%s</h1>\n%s\n%s%s\n" % (_h(title), _HTML_BEGIN, render_html_section(report, items_html, hidden), _HTML_END)
    return _html_page(title, body)


_SECTION_RX = re.compile(r'<section class="dataset" id="([^"]*)" data-dataset="([^"]*)" data-pass="(true|false)">')


def merge_html(texts: List[Tuple[str, str]]) -> str:
    """One page from several ``--html`` reports (path, text): their dataset sections in order.

    Every piece of input text inside a section is escaped, so the section markers (HTML
    comments) cannot occur inside one: splitting on them is safe."""
    sections, toc, ok = [], [], True
    for path, text in texts:
        if '<meta name="generator" content="score_eval">' not in text or text.count(_HTML_BEGIN) != 1 \
                or text.count(_HTML_END) != 1:
            raise ScoreError("%s: not a score_eval --html report (section markers missing), got %s"
                             % (path, _show(text[:60])))
        sec = text.split(_HTML_BEGIN, 1)[1].split(_HTML_END, 1)[0]
        m = _SECTION_RX.search(sec)
        if not m:
            raise ScoreError("%s: not a score_eval --html report (no dataset section), got %s" % (path, _show(sec[:60])))
        ok = ok and m.group(3) == "true"
        toc.append('<a href="#%s">%s: <span class="%s">%s</span></a>' % (
            m.group(1), m.group(2), "ok" if m.group(3) == "true" else "bad", "pass" if m.group(3) == "true" else "FAIL"))
        sections.append(sec)
    body = ('<h1>score_eval report</h1>\n<p><span class="verdict %s">%s</span></p>\n<nav>%s</nav>\n%s\n%s%s\n' % (
        "pass" if ok else "fail", "PASS" if ok else "FAIL", " ".join(toc), _HTML_BEGIN, "".join(sections), _HTML_END))
    return _html_page("score_eval report", body)


def _x(text) -> str:
    """Escaped for an XML 1.0 attribute or text node."""
    return html.escape(_inert(text), quote=True).replace("\n", "&#10;").replace("\r", "&#13;").replace("\t", "&#9;")


#: The registry metrics an item failure counts against (render_junit: an item fails in JUnit
#: only when one of its failure labels counts against a block gate that failed).  A label
#: not listed here counts against every metric (fail closed).
MODE_METRICS: Dict[str, Tuple[str, ...]] = {
    "policy_violation": ("policy_compliance",),
    "source_policy_violation": ("source_policy_compliance",),
    "training_cutoff_excuse": ("false_refuse_rate", "incorrect_refusal", "refusal_rate", "rejection_calibration",
                               "pass_rate", "over_refusal"),
    "under_refusal": ("under_refusal", "precision", "pass_rate", "correct_refusal", "refusal_rate",
                      "rejection_calibration", "false_accept_rate"),
    "false_acceptance": ("false_accept_rate", "rejection_calibration", "pass_rate", "decision_accuracy"),
    "citation_not_retrieved": ("citation_validity", "precision", "chr", "pass_rate"),
    "hallucination": ("hallucination",),
    "unsupported_answer": ("unsupported_answer_rate", "faithfulness"),
    "retrieval_miss": ("recall@K", "P@K", "R@K", "Success@K", "RR", "RR@K", "nDCG@K", "context_relevance"),
    "over_refusal": ("over_refusal", "incorrect_refusal", "pass_rate", "refusal_rate", "false_refuse_rate",
                     "rejection_calibration"),
    "false_rejection": ("false_refuse_rate", "incorrect_refusal", "rejection_calibration", "decision_accuracy"),
    "conflict_not_surfaced": ("conflict_correct_rate", "decision_accuracy"),
    "staleness_not_detected": ("staleness_correct_rate", "decision_accuracy"),
    "clarification_missed": ("clarify_correct_rate", "decision_accuracy"),
    "required_citation_missing": ("citation_coverage",),
    "citation_miss": ("chr", "precision", "pass_rate"),
    "claim_miss": ("precision", "pass_rate", "answer_relevance"),
    "decision_mismatch": ("decision_accuracy",),
}


def _failed_block_metrics(report: dict) -> Optional[set]:
    """Registry names of the metrics whose block gates failed; None when a failed block gate
    names no registry metric (a regression gate, say): then every item failure counts."""
    out = set()
    for g in report.get("gate_results") or []:
        if g["pass"] or g["tier"] != "block":
            continue
        try:
            out.add(parse_metric(str(g.get("metric") or "")).metric.name)
        except (ScoreError, AttributeError, KeyError, ValueError):
            return None
    return out


def block_relevant(labels: List[str], failed: Optional[set]) -> List[str]:
    """The failure labels that count against a failed block gate's metric (MODE_METRICS)."""
    if failed is None:
        return list(labels)
    return [m for m in labels if m == "missing_trace" and failed
            or (m not in MODE_METRICS and failed) or set(MODE_METRICS.get(m, ())) & failed]


def render_junit(report: dict, items: Optional[List[dict]] = None) -> str:
    """JUnit XML: <testsuites> with one <testsuite> (the dataset) holding the block and monitor
    gates, and one ``<dataset>.warnings`` holding the warn gates, one <testcase> per gate.

    A failed block gate is a <failure> in the dataset's suite.  A warn gate never fails a test
    (issue 42: a run that exits 0 has failures="0"): it passes with its value, threshold and
    ``passed`` as properties, and a failed one says so in a <system-out> line.  Monitor gates
    pass and carry their value as properties.  With ``items`` (--junit-items) a ``<dataset>.items``
    suite has one testcase per item: an item is a <failure> only when one of its failure
    labels counts against a block gate that failed (``MODE_METRICS``); other failing items
    pass with their labels as properties."""
    ds = str(report.get("dataset"))
    suites = []
    groups: Dict[str, List[str]] = {"main": [], "warn": []}
    fails = {"main": 0, "warn": 0}
    for g in report["gate_results"]:
        group = "warn" if g["tier"] == "warn" else "main"
        props = [("tier", g["tier"]), ("metric", g["metric"]), ("value", _num_text(g["value"])),
                 ("op", g["op"] or ""), ("threshold", "" if g["threshold"] is None else _fmt_num(g["threshold"]))]
        body = "<properties>%s</properties>" % "".join(
            '<property name="%s" value="%s"/>' % (_x(k), _x(v)) for k, v in props)
        note = (g["reason"] or "") + ((" " + g["message"]) if g.get("message") else "")
        if not g["pass"] and g["tier"] == "block":
            fails[group] += 1
            body += '<failure message="%s" type="gate">%s</failure>' % (_x(note), _x(note))
        elif g["tier"] == "warn":
            body = body.replace("</properties>", '<property name="passed" value="%s"/></properties>'
                                % ("true" if g["pass"] else "false"))
            if not g["pass"]:
                body += "<system-out>%s</system-out>" % _x("warn gate failed (does not block): " + note)
        groups[group].append('    <testcase classname="%s" name="%s">%s</testcase>' % (
            _x("score_eval.%s.%s" % (ds, g["tier"])), _x(g["gate"]), body))
    cases = groups["main"]
    suites.append(('<testsuite name="%s" tests="%d" failures="%d" errors="0" skipped="0">\n'
                   '    <properties><property name="pass" value="%s"/><property name="warnings_failed" value="%d"/>'
                   '<property name="overall_score" value="%s"/></properties>\n%s\n  </testsuite>'
                   % (_x(ds), len(cases), fails["main"], "true" if report["pass"] else "false",
                      report.get("warnings_failed", 0), _num_text((report.get("scorecard") or {}).get("overall")),
                      "\n".join(cases)), len(cases), fails["main"], 0))
    if groups["warn"]:
        suites.append(('<testsuite name="%s" tests="%d" failures="%d" errors="0" skipped="0">\n'
                       '    <properties><property name="blocks" value="false"/></properties>\n%s\n  </testsuite>'
                       % (_x(ds + ".warnings"), len(groups["warn"]), fails["warn"], "\n".join(groups["warn"])),
                       len(groups["warn"]), fails["warn"], 0))
    if items is not None:
        failed = _failed_block_metrics(report)
        icases, ifails = [], 0
        for rec in items:
            body = ""
            relevant = block_relevant(rec["labels"], failed) if rec["failure_mode"] else []
            if relevant:
                ifails += 1
                body = '<failure message="%s" type="item">%s</failure>' % (
                    _x(relevant[0]), _x("labels: %s; flags: %s" % (", ".join(rec["labels"]), rec["flags"])))
            elif rec["failure_mode"]:
                body = '<properties><property name="labels" value="%s"/><property name="blocks" value="false"/>' \
                       '</properties>' % _x(", ".join(rec["labels"]))
            icases.append('    <testcase classname="%s" name="%s">%s</testcase>' % (
                _x("score_eval.%s.items.%s" % (ds, rec["category"])), _x(rec["qid"]), body))
        suites.append(('<testsuite name="%s" tests="%d" failures="%d" errors="0" skipped="0">\n%s\n  </testsuite>'
                       % (_x(ds + ".items"), len(icases), ifails, "\n".join(icases)), len(icases), ifails, 0))
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="score_eval" tests="%d" failures="%d" '
            'errors="0" skipped="%d">\n  %s\n</testsuites>\n' % (
                sum(x[1] for x in suites), sum(x[2] for x in suites), sum(x[3] for x in suites),
                "\n  ".join(x[0] for x in suites)))


def _csv_cell(v):
    """Numbers as they are; text made inert and kept from being read as a spreadsheet formula."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return _num_text(v) if isinstance(v, float) else str(v)
    text = _inert(v)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def _csv_text(header: List[str], rows) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow(header)
    for row in rows:
        w.writerow([_csv_cell(v) for v in row])
    return buf.getvalue()


def render_items_csv(scorer: Scorer, trec: bool, stages: ItemStages) -> str:
    names = [name for name, _, _ in stages.stages]
    head = ["qid", "category", "line", "pass", "answerable", "shipped", "failure_mode", "labels", "flags"]
    head += ["stage:" + n for n in names] + ["overall"]

    def rows():
        for i in range(len(scorer.gold)):
            rec = _item_record(scorer, i, trec)
            card = stages(i)
            yield ([rec["qid"], rec["category"], rec["line"], rec.get("pass"), rec.get("answerable"),
                    rec.get("shipped"), rec["failure_mode"] or "", ";".join(rec["labels"]), rec["flags"]]
                   + [card["stages"][n] for n in names] + [card["overall"]])
    return _csv_text(head, rows())


def render_metrics_csv(report: dict) -> str:
    rows = []
    for name, e in report["metrics"].items():
        ci = e["ci"] or [None, None]
        rows.append([name, e["value"], e["count"], e["n"], ci[0], ci[1], e["reason"] or ""])
    return _csv_text(["metric", "value", "count", "n", "ci_low", "ci_high", "reason"], rows)


def append_step_summary(path: str, text: str) -> Optional[str]:
    """Append to $GITHUB_STEP_SUMMARY (a regular file or a new one); never a symlink, FIFO or
    device.  Returns a warning instead of writing when the path is not a regular file."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        return "GITHUB_STEP_SUMMARY %s: cannot read: %s; summary not written" % (path, exc.strerror)
    if st is not None and not stat.S_ISREG(st.st_mode):
        return "GITHUB_STEP_SUMMARY %s is not a regular file; summary not written" % path
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
        with os.fdopen(fd, "a", encoding="utf-8", newline="\n") as fh:
            fh.write(text if text.endswith("\n") else text + "\n")
    except OSError as exc:
        return "GITHUB_STEP_SUMMARY %s: cannot append: %s; summary not written" % (path, exc.strerror)
    return None


def write_reports(args, report: dict, scorer: Scorer, trec: bool, stages: ItemStages) -> None:
    """--html, --junit [--junit-items], --csv, --metrics-csv and $GITHUB_STEP_SUMMARY."""
    if args.html:
        items_html, hidden = _html_items(args, scorer, trec, stages)
        atomic_write(args.html, render_html(report, items_html, hidden))
    if args.junit:
        items = [_item_record(scorer, i, trec) for i in range(len(scorer.gold))] if args.junit_items else None
        atomic_write(args.junit, render_junit(report, items))
    if args.csv:
        atomic_write(args.csv, render_items_csv(scorer, trec, stages))
    if args.metrics_csv:
        atomic_write(args.metrics_csv, render_metrics_csv(report))
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        problem = append_step_summary(summary, render_markdown(report, _worst(scorer, trec)))
        if problem:
            sys.stderr.write(terminal_safe("score_eval: warning: %s\n" % problem))

# --------------------------------------------------------------------------- main


def _item_record(scorer: Scorer, i: int, trec: bool) -> dict:
    gold, f = scorer.gold, scorer.flags[i]
    rec = {"qid": gold.qids[i], "category": gold.categories[gold.cat[i]], "line": gold.lines[i],
           "failure_mode": failure_mode(f, trec), "labels": all_modes(f, trec), "flags": flag_string(f),
           "trace": bool(f & F_TRACE)}
    if not trec:
        rec.update({"answerable": bool(f & F_ANS), "shipped": bool(f & F_SHIP), "containment": bool(f & F_CONT),
                    "citation_hit": bool(f & F_HIT), "pass": bool(f & F_PASS),
                    "citation_valid": bool(f & F_VALID) if f & F_SHIP else None,
                    "hallucination": bool(f & F_HALL) if f & F_SHIP and f & F_HMEAS else None,
                    "unsupported": scorer.unsupported.get(i, []) if f & F_HALL else [],
                    "recall@k": bool(f & F_REC)})
        rec.update(_extra_item(scorer, i, f))
        rec.update(_ground_item(scorer, i, f))
        rec.update(_reading_item(scorer, i, f))
    if f & F_GOLD:
        ret = {"RR": round(scorer.rr[i], 4)}
        for k in scorer.ks:
            ret["P@%d" % k] = round(measure_p(scorer.hits[k][i], k), 4)
            ret["R@%d" % k] = round(scorer.rec[k][i], 4)
            ret["nDCG@%d" % k] = round(scorer.ndcg[k][i], 4)
            ret["RR@%d" % k] = round(scorer.rrk[k][i], 4)
            ret["Success@%d" % k] = int(measure_success(scorer.hits[k][i]))
        rec["retrieval"] = ret
    else:
        rec["retrieval"] = None
    return rec


def _extra_item(scorer: Scorer, i: int, f: int) -> dict:
    """Issue 20's per-item fields of the --items file."""
    def num(arr):
        v = arr[i]
        return round(v, 4) if v == v else None
    reason = scorer.refusal_reason.get(i)
    if f & F_SHIP:
        by = None
    elif not f & F_PROSE:
        by = "token"
    elif scorer.rules.reader == "exact" or (reason and reason.endswith("]")):
        by = "pattern"
    else:
        by = "reader"
    kind = None
    if f & F_TRACE:
        kind = KIND_PARTIAL if f & F_PARTIAL else (KIND_ANSWER if f & F_SHIP else KIND_REFUSAL)
    return {"refused_by": by, "refusal_kind": kind, "refusal_reason": reason,
            "evidence": scorer.evidence.get(i, []), "answer_relevance": num(scorer.answer_rel),
            "context_relevance": num(scorer.context_rel), "latency_ms": num(scorer.latency),
            "cost": num(scorer.cost),
            "answer_correct": bool(f & F_ANSOK) if scorer.answer_f1[i] == scorer.answer_f1[i] else None,
            "answer_f1": num(scorer.answer_f1), "answer_recall": num(scorer.answer_recall)}


def _ground_item(scorer: Scorer, i: int, f: int) -> dict:
    """Issue 29's per-item fields: null when the answer was not checked."""
    v = scorer.faith[i]
    return {"unsupported_answer": bool(f & F_UNSUP) if f & F_GMEAS else None,
            "unsupported_sentences": scorer.unsup_sents.get(i, []) if f & F_UNSUP else [],
            "faithfulness": round(v, 4) if v == v else None}


def _reading_item(scorer: Scorer, i: int, f: int) -> dict:
    """Reading 1's per-item fields of the --items file."""
    return {"citations_from": ("text" if f & F_CITTEXT else "trace") if f & F_TRACE else None,
            "citations_read": scorer.text_cits.get(i, []), "bad_markers": scorer.bad_marks.get(i, [])}


def _item_lines(scorer: Scorer, trec: bool, stages: Optional[ItemStages] = None):
    for i in range(len(scorer.gold)):
        rec = _item_record(scorer, i, trec)
        if stages is not None:
            rec["scorecard"] = stages(i)
        yield json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n"


def _worst(scorer: Scorer, trec: bool, limit: int = 20) -> List[dict]:
    """Failing items, most severe mode first (MODE_ORDER), then gold file order."""
    failing = []
    rank: Dict[int, int] = {}
    for i, f in enumerate(scorer.flags):
        r = rank.get(f)
        if r is None:
            mode = failure_mode(f, trec)
            r = rank[f] = -1 if mode is None else MODE_ORDER.index(mode)
        if r >= 0:
            failing.append((r, i))
    failing.sort()
    return [_item_record(scorer, i, trec) for _, i in failing[:limit]]


# =========================================================================== referee/calibration.py
# Judge calibration: agreement of an automatic judge with people's labels (the ``calibrate``
# and ``merge-html`` subcommands).

# --------------------------------------------------------------------------- judge calibration

CALIBRATE_USAGE = ("score_eval.py calibrate --human H.jsonl --auto A.jsonl [--field NAME] [--bins 0.5] "
                   "[--min-kappa 0.8] [--bootstrap 1000] [--seed 0] [--out FILE]")


def pearson(x: List[float], y: List[float]) -> Optional[float]:
    """Pearson's r; None when either side has no variance (or n < 2)."""
    n = len(x)
    if n < 2:
        return None
    mx, my = math.fsum(x) / n, math.fsum(y) / n
    sxy = math.fsum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = math.fsum((a - mx) ** 2 for a in x)
    syy = math.fsum((b - my) ** 2 for b in y)
    if sxx <= 0 or syy <= 0:
        return None
    return max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))


def midranks(x: List[float]) -> List[float]:
    """Ranks 1..n, tied values sharing the mean of their ranks (as scipy's rankdata 'average')."""
    order = sorted(range(len(x)), key=x.__getitem__)
    ranks = [0.0] * len(x)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and x[order[j + 1]] == x[order[i]]:
            j += 1
        for t in range(i, j + 1):
            ranks[order[t]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman(x: List[float], y: List[float]) -> Optional[float]:
    """Spearman's rho: Pearson's r of the mid-ranks."""
    return pearson(midranks(x), midranks(y))


def cohen_kappa(a: list, b: list) -> Optional[float]:
    """Cohen's kappa (po - pe) / (1 - pe) on labels; None when pe = 1 (one shared category)."""
    n = len(a)
    if n == 0:
        return None
    po = sum(1 for u, v in zip(a, b) if u == v) / n
    ca, cb = Counter(a), Counter(b)
    pe = math.fsum(ca[k] * cb[k] for k in ca) / (n * n)
    if pe >= 1.0:
        return None
    return (po - pe) / (1 - pe)


def mean_abs_error(x: List[float], y: List[float]) -> Optional[float]:
    return math.fsum(abs(a - b) for a, b in zip(x, y)) / len(x) if x else None


def bin_score(v: float, width: float) -> float:
    """The nearest multiple of ``width`` (halves round up): width 0.5 maps 0.74 -> 0.5, 0.75 -> 1.0."""
    return round(math.floor(v / width + 0.5 + 1e-9) * width, 10)


def _percentile(sorted_vals: List[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default 'linear' method)."""
    pos = (len(sorted_vals) - 1) * q
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def calibration_stats(human: List[float], auto: List[float], width: float, resamples: int, seed: int) -> dict:
    """Pearson, Spearman, Cohen's kappa on binned scores and MAE, each with a percentile
    bootstrap 95% interval from ``resamples`` resamples of the pairs drawn by
    ``random.Random(seed)`` (the same draws for every statistic; resamples on which a
    statistic is undefined are skipped and counted)."""
    hb = [bin_score(v, width) for v in human]
    ab = [bin_score(v, width) for v in auto]
    stats = {"pearson": lambda ix: pearson([human[i] for i in ix], [auto[i] for i in ix]),
             "spearman": lambda ix: spearman([human[i] for i in ix], [auto[i] for i in ix]),
             "kappa": lambda ix: cohen_kappa([hb[i] for i in ix], [ab[i] for i in ix]),
             "mae": lambda ix: mean_abs_error([human[i] for i in ix], [auto[i] for i in ix])}
    n = len(human)
    whole = list(range(n))
    draws: Dict[str, List[float]] = {k: [] for k in stats}
    rng = random.Random(seed)
    for _ in range(resamples if n else 0):
        ix = [rng.randrange(n) for _ in whole]
        for k, fn in stats.items():
            v = fn(ix)
            if v is not None:
                draws[k].append(v)
    out = {}
    for k, fn in stats.items():
        v = fn(whole)
        vals = sorted(draws[k])
        ci = [round(_percentile(vals, 0.025), 4), round(_percentile(vals, 0.975), 4)] if vals else None
        reason = None
        if v is None:
            reason = ("undefined: both raters put every item in one bin" if k == "kappa"
                      else "undefined: a rater gives every item the same score" if n > 1 else "undefined: fewer than 2 items")
        out[k] = {"value": _r(v), "ci": ci, "undefined_resamples": resamples - len(vals) if n else 0, "reason": reason}
    labels = sorted(set(hb) | set(ab))
    out["confusion"] = {"labels": labels, "rows_human_cols_auto": [
        [sum(1 for u, w in zip(hb, ab) if u == a and w == b) for b in labels] for a in labels]}
    return out


def _field_value(row: dict, field: str):
    """``field`` may be dotted (``scorecard.stages.faithfulness``) to reach a nested value."""
    cur = row
    for part in field.split("."):
        if type(cur) is not dict or part not in cur:
            return None
        cur = cur[part]
    return cur


def read_scores(path: str, field: str, key: str, errors: _Errors) -> Tuple[Dict[str, float], int]:
    """{id: score} from a JSONL; true/false count as 1/0; a null or absent score is skipped."""
    out: Dict[str, float] = {}
    lines: Dict[str, int] = {}
    skipped = 0
    for lineno, row in _jsonl(path, errors, []):
        qid = row.get(key)
        if type(qid) is not str or not qid:
            errors.add("%s:%d: %s must be a non-empty string, got %s" % (path, lineno, json.dumps(key), _show(qid)))
            continue
        if qid in lines:
            errors.add("%s:%d: duplicate %s (first on line %d), got %s" % (path, lineno, key, lines[qid], _show(qid)))
            continue
        lines[qid] = lineno
        v = _field_value(row, field)
        if v is None:
            skipped += 1
        elif isinstance(v, bool):
            out[qid] = 1.0 if v else 0.0
        elif _num(v):
            out[qid] = float(v)
        else:
            errors.add("%s:%d: %s must be a number, true/false or null, got %s" % (path, lineno, json.dumps(field), _show(v)))
    return out, skipped


def calibrate(argv: List[str]) -> int:
    """``score_eval.py calibrate``: agreement of an automatic scorer with human labels."""
    ap = argparse.ArgumentParser(prog="score_eval.py calibrate", description=calibrate.__doc__.split(": ", 1)[1])
    ap.add_argument("--human", required=True, help="JSONL of human labels: {qid, <field>: score}")
    ap.add_argument("--auto", required=True, help="JSONL of automatic scores (any scorer; e.g. --items output)")
    ap.add_argument("--field", default="score", help="score field in both files, dotted for nested (default score)")
    ap.add_argument("--human-field", help="score field of --human (default --field)")
    ap.add_argument("--auto-field", help="score field of --auto (default --field), e.g. scorecard.stages.faithfulness")
    ap.add_argument("--key", default="qid", help="field pairing the rows of both files (default qid)")
    ap.add_argument("--bins", type=float, default=0.5, help="bin width for Cohen's kappa: each score goes to the "
                                                            "nearest multiple (default 0.5: bins 0, 0.5, 1)")
    ap.add_argument("--min-kappa", type=float, default=0.8, help="kappa a judge needs to be gateable (default 0.8, seed 004)")
    ap.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for the 95%% intervals (default 1000)")
    ap.add_argument("--seed", type=int, default=0, help="seed of random.Random for the bootstrap (default 0)")
    ap.add_argument("--out", help="also write the JSON result to this file (atomically)")
    try:
        args = ap.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    if not (math.isfinite(args.bins) and args.bins > 0):
        raise ScoreError("calibrate: --bins must be a positive bin width, got %r" % args.bins)
    if not 0 <= args.bootstrap <= 100000:
        raise ScoreError("calibrate: --bootstrap must be between 0 and 100000, got %r" % args.bootstrap)
    errors = _Errors(MAX_ERRORS)
    hf, af = args.human_field or args.field, args.auto_field or args.field
    human, hskip = read_scores(args.human, hf, args.key, errors)
    auto, askip = read_scores(args.auto, af, args.key, errors)
    if errors.count:
        raise ScoreError(errors.text())
    ids = [q for q in human if q in auto]
    if not ids:
        raise ScoreError("calibrate: no %s has a score in both files (fields %r and %r), got %d human and %d automatic "
                         "scores" % (args.key, hf, af, len(human), len(auto)))
    hv, av = [human[q] for q in ids], [auto[q] for q in ids]
    stats = calibration_stats(hv, av, args.bins, args.bootstrap, args.seed)
    kappa = stats["kappa"]["value"]
    result = {"n": len(ids), "human": args.human, "auto": args.auto, "field": {"human": hf, "auto": af},
              "unpaired": {"human_only": sum(1 for q in human if q not in auto),
                           "auto_only": sum(1 for q in auto if q not in human),
                           "human_no_score": hskip, "auto_no_score": askip},
              "bins": {"width": args.bins, "rule": "each score goes to the nearest multiple of the width (halves up)",
                       "labels": stats["confusion"]["labels"]},
              "pearson": stats["pearson"], "spearman": stats["spearman"], "kappa": stats["kappa"], "mae": stats["mae"],
              "confusion": stats["confusion"]["rows_human_cols_auto"],
              "bootstrap": {"resamples": args.bootstrap, "seed": args.seed, "interval": "percentile 2.5 and 97.5"},
              "min_kappa": args.min_kappa, "gateable": kappa is not None and kappa >= args.min_kappa}
    text = json.dumps(result, indent=2, ensure_ascii=False) + "\n"
    if args.out:
        atomic_write(args.out, text)
    sys.stdout.write(text)
    if not result["gateable"]:
        sys.stderr.write("score_eval: calibrate: kappa = %s, needs >= %s: the scorer is not calibrated well enough "
                         "to gate on\n" % (_cell(kappa), _fmt_num(args.min_kappa)))
    return 0 if result["gateable"] else 1


def merge_html_main(argv: List[str]) -> int:
    """``score_eval.py merge-html OUT IN.html...``: one page from several --html reports."""
    ap = argparse.ArgumentParser(prog="score_eval.py merge-html", description=merge_html_main.__doc__.split(": ", 1)[1])
    ap.add_argument("out", help="the page to write (atomically)")
    ap.add_argument("inputs", nargs="+", help="--html reports, one dataset section each, in page order")
    try:
        args = ap.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    check_outputs([("merge-html OUT", args.out, "html")], [("input", p) for p in args.inputs])
    texts = []
    for path in args.inputs:
        try:
            with open_input(path, "HTML report") as fh:
                texts.append((path, fh.read().decode("utf-8")))
        except OSError as exc:
            raise ScoreError("%s: cannot read: %s" % (path, exc.strerror)) from None
        except UnicodeDecodeError as exc:
            raise ScoreError("%s: not UTF-8, got byte 0x%02x" % (path, exc.object[exc.start])) from None
    atomic_write(args.out, merge_html(texts))
    return 0


SUBCOMMANDS = {"calibrate": calibrate, "merge-html": merge_html_main}


# =========================================================================== referee/shards.py
# Shards: ``--partial`` writes one shard's items, ``merge`` combines shards into the one report.

# --------------------------------------------------------------------------- shards: --partial and merge
#
# A shard run (``--partial OUT.json``) judges its slice of the trace rows and writes, instead
# of a report, the verdicts it made: for every gold item it saw, the item's slots of every
# per-item container of the Scorer (arrays, per-cutoff arrays, sparse maps), found
# generically so a metric added to the Scorer merges with no code here; the order in which
# its rows named items (to count duplicates across shards exactly); its row counts and
# notes.  ``merge P1 ... Pn`` reads the gold set again (its sha256 must match), takes each
# item's verdict from the last shard that saw it (last row wins, as in one run when the
# shards are consecutive pieces of the trace), judges the items no shard saw as missing,
# and then aggregates, gates, compares and prints through the very code of a single run:
# the output is byte-identical to one run over all the rows.  TREC runs shard by topic.

PARTIAL_VERSION = 1
_PARTIAL_ARGS = ("gold", "trace", "qrels", "run", "k", "by", "refusal", "chunks", "dataset")


class _RecordingScorer(Scorer):
    """A Scorer that also records which items the rows named, in row order."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.calls = array("I")

    def judge(self, i, *rest):
        if rest[-1]:                               # present: a row named the item
            self.calls.append(i)
        super().judge(i, *rest)


def _per_item(scorer: Scorer):
    """``(name, key, container, kind)`` of every per-item container of a Scorer: ``kind``
    is "array" (one slot per item; ``key`` a cutoff or None) or "sparse" (a dict keyed by
    item position)."""
    n = len(scorer.gold)
    for name, v in sorted(vars(scorer).items()):
        if name == "calls" or name == "gold":
            continue
        if isinstance(v, (array, bytearray)) and len(v) == n:
            yield name, None, v, "array"
        elif isinstance(v, dict):
            vals = list(v.values())
            if vals and all(isinstance(x, (array, bytearray)) and len(x) == n for x in vals):
                for key in sorted(v):
                    yield name, key, v[key], "array"
            elif all(type(key) is int for key in v) and not any(isinstance(x, (array, bytearray)) for x in vals):
                yield name, None, v, "sparse"


def _pack(arr) -> dict:
    import base64
    if isinstance(arr, bytearray):
        return {"type": "bytes", "data": base64.b64encode(bytes(arr)).decode("ascii")}
    if sys.byteorder != "little":                  # pragma: no cover - big-endian hosts
        arr = array(arr.typecode, arr)
        arr.byteswap()
    return {"type": arr.typecode, "data": base64.b64encode(arr.tobytes()).decode("ascii")}


def _unpack(d: dict, path: str):
    import base64
    try:
        raw = base64.b64decode(d["data"].encode("ascii"), validate=True)
        if d["type"] == "bytes":
            return bytearray(raw)
        out = array(d["type"])
        out.frombytes(raw)
    except (KeyError, TypeError, ValueError, AttributeError):   # binascii.Error is a ValueError
        raise ScoreError("%s: malformed packed array in a partial, got %s" % (path, _show(d, 60))) from None
    if sys.byteorder != "little":                  # pragma: no cover - big-endian hosts
        out.byteswap()
    return out


def _sha256_file(path: str) -> str:
    import hashlib
    h = hashlib.sha256()
    try:
        with open_input(path, "file") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except OSError as exc:
        raise ScoreError("%s: cannot read: %s" % (path, exc.strerror)) from None
    return h.hexdigest()


def write_partial(args, gold: "Gold", scorer: Scorer, stats: dict, notes: List[str]) -> int:
    """The ``--partial`` output of a shard run (see the section comment); exit status 0."""
    calls = getattr(scorer, "calls", None)
    if calls is None:                              # pragma: no cover - run() always records
        raise ScoreError("--partial: internal error, the shard's rows were not recorded")
    seen = sorted(set(calls))
    idx = array("I", seen)
    fields = []
    for name, key, cont, kind in _per_item(scorer):
        if kind == "array":
            sub = bytearray(cont[i] for i in seen) if isinstance(cont, bytearray) \
                else array(cont.typecode, [cont[i] for i in seen])
            fields.append({"name": name, "key": key, "kind": kind, "values": _pack(sub)})
        else:
            fields.append({"name": name, "key": None, "kind": kind,
                           "values": [[i, cont[i]] for i in seen if i in cont]})
    source = args.gold or args.qrels
    doc = {"format": PARTIAL_FORMAT, "version": PARTIAL_VERSION, "schema": SCHEMA,
           "args": {a: getattr(args, a) for a in _PARTIAL_ARGS},
           "gold_sha256": _sha256_file(source), "gold_items": len(gold), "ks": scorer.ks,
           "stats": stats, "notes": notes, "items": _pack(idx), "calls": _pack(calls), "fields": fields}
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n"
    if args.partial == "-":
        sys.stdout.write(text)
    else:
        atomic_write(args.partial, text)
    return 0


MAX_PARTIAL_BYTES = 1 << 30       # one --partial file


def _read_partial(path: str) -> dict:
    """A partial, validated as data before anything uses it: a regular file (never a FIFO or
    a device) of at most MAX_PARTIAL_BYTES, the shape written by write_partial, and the
    files it names regular files."""
    try:
        with open_input(path, "partial") as fh:
            data = fh.read(MAX_PARTIAL_BYTES + 1)
    except OSError as exc:
        raise ScoreError("%s: cannot read: %s" % (path, exc.strerror)) from None
    if path == "-":
        raise ScoreError("-: a partial must be a file, not stdin")
    if len(data) > MAX_PARTIAL_BYTES:
        raise ScoreError("%s: partial larger than %d bytes (MAX_PARTIAL_BYTES)" % (path, MAX_PARTIAL_BYTES))
    try:
        doc = json_row(data.decode("utf-8"))
    except JsonLimit as exc:
        raise ScoreError("%s:1: not a partial (%s)" % (path, exc)) from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise ScoreError("%s:1: not a partial (invalid JSON: %s)" % (path, str(exc).split(":")[0])) from None
    if type(doc) is not dict or doc.get("format") != PARTIAL_FORMAT:
        raise ScoreError("%s:1: not a score_eval partial, got format %s"
                         % (path, _show(doc.get("format") if type(doc) is dict else doc)))
    if doc.get("version") != PARTIAL_VERSION or doc.get("schema") != SCHEMA:
        raise ScoreError("%s:1: partial version must be %d (%s), got %s"
                         % (path, PARTIAL_VERSION, SCHEMA, _show([doc.get("version"), doc.get("schema")])))
    for key in ("args", "gold_sha256", "gold_items", "ks", "stats", "notes", "items", "calls", "fields"):
        if key not in doc:
            raise ScoreError("%s:1: partial has no %r" % (path, key))
    problem = _partial_shape(doc)
    if problem:
        raise ScoreError("%s:1: malformed partial: %s" % (path, problem))
    for a in ("gold", "qrels", "trace", "run", "chunks"):
        named = doc["args"].get(a)
        if a in ("gold", "qrels", "run") and isinstance(named, str) and named not in ("", "-"):
            try:
                st = os.stat(named)
            except OSError as exc:
                raise ScoreError("%s: the partial names --%s %s, which cannot be read: %s"
                                 % (path, a, named, exc.strerror)) from None
            if not stat.S_ISREG(st.st_mode):
                raise ScoreError("%s: the partial names --%s %s, which is %s, not a regular file"
                                 % (path, a, named, _file_kind(st.st_mode)))
    return doc


def _partial_shape(doc: dict) -> Optional[str]:
    """What is wrong with the shape of a partial's fields, or None."""
    args = doc["args"]
    if type(args) is not dict:
        return "args must be an object, got %s" % _show(args)
    for a in _PARTIAL_ARGS:
        v = args.get(a)
        if v is not None and not isinstance(v, str) and a != "k":
            return "args.%s must be a string or null, got %s" % (a, _show(v))
        if isinstance(v, str) and "\x00" in v:
            return "args.%s holds a NUL character" % a
    if not (args.get("gold") or args.get("qrels")):
        return "args names neither a gold nor a qrels file"
    if not (isinstance(doc["gold_sha256"], str) and re.fullmatch(r"[0-9a-f]{64}", doc["gold_sha256"])):
        return "gold_sha256 must be 64 hex digits, got %s" % _show(doc["gold_sha256"])
    if type(doc["gold_items"]) is not int or doc["gold_items"] < 0:
        return "gold_items must be an integer >= 0, got %s" % _show(doc["gold_items"])
    if type(doc["ks"]) is not list or not doc["ks"] or not all(type(k) is int and 1 <= k <= MAX_K for k in doc["ks"]):
        return "ks must be a list of cutoffs 1..%d, got %s" % (MAX_K, _show(doc["ks"]))
    st = doc["stats"]
    if type(st) is not dict or not all(type(st.get(k)) is int and st.get(k) >= 0
                                       for k in ("rows", "unknown", "duplicates", "missing")) \
            or not all(_str_list(st.get(k)) for k in ("unknown_ex", "duplicate_ex")):
        return "stats must hold counts rows, unknown, duplicates, missing and lists unknown_ex, duplicate_ex"
    if not _str_list(doc["notes"]):
        return "notes must be a list of strings"
    for key in ("items", "calls"):
        v = doc[key]
        if type(v) is not dict or v.get("type") != "I" or not isinstance(v.get("data"), str):
            return "%s must be a packed array of type I, got %s" % (key, _show(v, 60))
    if type(doc["fields"]) is not list:
        return "fields must be a list, got %s" % _show(doc["fields"], 60)
    for f in doc["fields"]:
        if type(f) is not dict or not isinstance(f.get("name"), str) or f.get("kind") not in ("array", "sparse") \
                or not (f.get("key") is None or type(f.get("key")) in (int, str)):
            return "each field must be an object with a name and kind array or sparse, got %s" % _show(f, 60)
        if f["kind"] == "array" and (type(f.get("values")) is not dict or not isinstance(f["values"].get("type"), str)
                                     or not isinstance(f["values"].get("data"), str)):
            return "field %s: values must be a packed array, got %s" % (f["name"], _show(f.get("values"), 60))
        if f["kind"] == "sparse" and (type(f.get("values")) is not list
                                      or not all(type(p) is list and len(p) == 2 and type(p[0]) is int
                                                 for p in f["values"])):
            return "field %s: values must be a list of [item, value] pairs" % f["name"]
    return None


def merged_runs(paths: List[str], errors: "_Errors") -> dict:
    """The rankings of TREC shards (split by topic), read again from the run files their
    partials name, for trec_eval's measures (which the partials do not carry)."""
    runs = RunRankings()
    for p in paths:
        run_path = _read_partial(p)["args"].get("run")
        if not isinstance(run_path, str) or not run_path:
            raise ScoreError("%s: the partial names no run file" % p)
        part = read_run(run_path, errors)
        runs.update(part)
        runs.runid = part.runid or runs.runid
    if errors.count:
        raise ScoreError(errors.text())
    return runs


def _check_same_shards(paths: List[str], docs: List[dict], source: str) -> None:
    """Every shard scored the same gold set with the same options, and the gold file is the one
    they read (its sha256)."""
    first = docs[0]
    for p, d in zip(paths, docs):
        same = {a: d["args"].get(a) for a in _PARTIAL_ARGS if a not in ("trace", "run")}
        want = {a: first["args"].get(a) for a in same}
        if same != want or d["gold_sha256"] != first["gold_sha256"]:
            diff = sorted(a for a in same if same[a] != want[a]) or ["gold file content"]
            raise ScoreError("%s: shard differs from %s in %s; every shard must score the same gold "
                             "set with the same options" % (p, paths[0], ", ".join(diff)))
    if _sha256_file(source) != first["gold_sha256"]:
        raise ScoreError("%s: the gold file changed since the partials were written (sha256 differs)" % source)


def _shard_notes(docs: List[dict]) -> List[str]:
    """The shards' notes: those made before the trace (chunks, gold), the same in every shard,
    kept once; then each shard's own, in shard order."""
    prefix = docs[0]["notes"]
    for d in docs[1:]:
        common = 0
        while common < min(len(prefix), len(d["notes"])) and prefix[common] == d["notes"][common]:
            common += 1
        prefix = prefix[:common]
    notes = list(prefix)
    for d in docs:
        notes.extend(d["notes"][len(prefix):])
    return notes


def _load_fields(p: str, d: dict, items, slots: dict, n: int) -> None:
    """Copy a shard's values of its ``items`` into the merged scorer's per-item containers
    (``slots``: (name, key) -> (container, kind)), each field checked against this scorer's."""
    for f in d["fields"]:
        key = (f["name"], f.get("key"))
        if key not in slots:
            raise ScoreError("%s: the partial holds %s%s, which this scorer does not have (another "
                             "version wrote it?)" % (p, f["name"], "" if key[1] is None else "[%s]" % key[1]))
        cont, kind = slots[key]
        if kind != f["kind"]:
            raise ScoreError("%s: malformed partial: field %s must be of kind %s, got %s" % (p, f["name"], kind, f["kind"]))
        if kind == "array":
            values = _unpack(f["values"], p)
            if len(values) != len(items):
                raise ScoreError("%s: %s holds %d values for %d items" % (p, f["name"], len(values), len(items)))
            if type(values) is not type(cont) or getattr(values, "typecode", None) != getattr(cont, "typecode", None):
                raise ScoreError("%s: malformed partial: field %s has values of type %s, this scorer's are %s"
                                 % (p, f["name"], f["values"].get("type"), getattr(cont, "typecode", "bytes")))
            for i, v in zip(items, values):
                cont[i] = v
        else:
            for i in items:
                cont.pop(i, None)
            for i, v in f["values"]:
                if not 0 <= i < n:
                    raise ScoreError("%s: item position %d out of range (%d gold items)" % (p, i, n))
                cont[i] = v


def _judge_unseen(scorer: Scorer, seen: bytearray, trec: bool) -> int:
    """Judge the items no shard's rows named as missing (as one run does); returns how many."""
    missing = 0
    i = seen.find(0)
    while i >= 0:
        missing += 1
        scorer.judge(i, None, None if not trec else [], None, None, None, None, False)
        i = seen.find(0, i + 1)
    return missing


def merge_partials(paths: List[str], args, ks: List[int], refusal: str, errors: "_Errors",
                   notes: List[str], rules: Optional["Rules"] = None):
    """``(gold, scorer, stats)`` of the union of the shards' rows (see the section comment)."""
    docs = [_read_partial(p) for p in paths]
    trec = bool(args.qrels)
    source = args.gold or args.qrels
    first = docs[0]
    _check_same_shards(paths, docs, source)
    gold = read_qrels(source, errors) if trec else read_gold(source, args.by, errors, [])
    if errors.count:
        raise ScoreError(errors.text())
    if first["ks"] != ks:
        raise ScoreError("%s: merge: the shards computed cutoffs %s, the gates need %s; run the shards with "
                         "--k %s" % (paths[0], first["ks"], ks, ",".join(map(str, ks))))
    scorer = Scorer(gold, ks, refusal, None, rules)
    slots = {(name, key): (cont, kind) for name, key, cont, kind in _per_item(scorer)}
    n = len(gold)
    seen = bytearray(n)
    rows = unknown = dup = 0
    unknown_ex: List[str] = []
    unknown_topics: set = set()
    dup_ex: List[str] = []
    notes.extend(_shard_notes(docs))
    for p, d in zip(paths, docs):
        s = d["stats"]
        rows += s["rows"]
        unknown += s["unknown"]
        if trec:
            unknown_topics.update(s["unknown_ex"])
        else:
            unknown_ex.extend(s["unknown_ex"])
        for i in _unpack(d["calls"], p):          # replay the rows' order: duplicates as one run
            if i >= n:
                raise ScoreError("%s: item position %d out of range (%d gold items)" % (p, i, n))
            if seen[i]:
                dup += 1
                if len(dup_ex) < 5:
                    dup_ex.append(gold.qids[i])
            seen[i] = 1
        items = _unpack(d["items"], p)
        if items and max(items) >= n:
            raise ScoreError("%s: item position %d out of range (%d gold items)" % (p, max(items), n))
        _load_fields(p, d, items, slots, n)
    missing = _judge_unseen(scorer, seen, trec)
    if trec:
        unknown_ex = sorted(unknown_topics)
    stats = {"rows": rows, "unknown": unknown, "unknown_ex": unknown_ex[:5],
             "duplicates": dup, "duplicate_ex": dup_ex, "missing": missing}
    return gold, scorer, stats


# =========================================================================== referee/run.py
# One scoring run: the argument parser, the run from inputs to outputs, and the summary.

# --------------------------------------------------------------------------- main


def _parse_ks(text: str) -> List[int]:
    ks = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit() or len(part) > 6 or not 1 <= int(part) <= MAX_K:
            raise ScoreError("--k: cutoffs must be integers from 1 to %d separated by commas, got %r"
                             % (MAX_K, text))
        if int(part) not in ks:
            ks.append(int(part))
    return ks


def _trec_names(args, trec: bool) -> List[str]:
    """The trec_eval measures to compute (IR mode); the IR-only flags are refused otherwise."""
    if not trec:
        if args.m or args.measures or args.format == "trec" or args.per_query or args.average != "all" \
                or args.complete or args.rel_level is not None or args.max_docs is not None:
            raise ScoreError("usage: -m, --measures, --format trec, -q, -c, -l, -M and --average need --qrels and --run")
        return []
    if args.complete and args.average != "all":
        raise ScoreError("usage: -c (average over every qrels topic) contradicts --average %s" % args.average)
    for flag, value in (("-l", args.rel_level), ("-M", args.max_docs)):
        if value is not None and not 1 <= value <= 1 << 40:
            raise ScoreError("%s: must be an integer from 1, got %d" % (flag, value))
    specs = _measure_specs(args.m, args.measures)
    return parse_trec_measures(specs or list(TREC_DEFAULT))


def _note(args, text: str) -> None:
    """A note on stderr (which default file or gates apply), unless --quiet."""
    if not args.quiet:
        sys.stderr.write(terminal_safe("score_eval: %s\n" % text))


def _has_table(path: str, name: str) -> bool:
    """Whether the TOML file has a ``[name]`` table (True when unreadable: the reader reports it)."""
    try:
        doc, _ = gates_doc(path)
    except ScoreError:
        return True
    return isinstance(doc.get(name), dict)


def _check_gate_modes(gates, trec: bool, trec_names: List[str]) -> None:
    """IR mode gates retrieval measures only; trec_eval names need IR mode.  Adds the trec
    measures that gates name to ``trec_names``."""
    errors = []
    for g in gates:
        is_trec = g.ref.metric not in REGISTRY
        if trec and (g.ref.metric.name in SEED_ONLY or g.ref.metric.name == "recall@K"):
            errors.append("gate %r needs answers (--gold/--trace); --qrels/--run measure retrieval only: "
                          "put IR gates in an [ir] table or --gates, got %r" % (g.ref.spelled, g.ref.spelled))
        elif not trec and is_trec:
            errors.append("gate %r is a trec_eval measure, computed only with --qrels/--run, got %r"
                          % (g.ref.spelled, g.ref.spelled))
        elif is_trec and g.ref.metric.name not in trec_names:
            trec_names.append(g.ref.metric.name)
    if errors:
        raise ScoreError("\n".join(errors))


def _asked(args, gates, regression, gates_file: Optional[str], weights: Dict[str, float],
           trec: bool) -> Tuple[set, bool]:
    """What this run computes beyond the seed's verdicts (issue 40): the NEEDS of the measures
    named by its gates, [regression] and --compute, and whether it reports the weighted
    scorecard (then also the NEEDS of its weighted stages, so one trace gets one overall score
    whoever computes it).  The scorecard is asked for by a gates file, --weights, or --compute
    scorecard; everything by --compute all, an output beside the JSON report (--items,
    --markdown, --html, --csv, --metrics-csv, --junit, $GITHUB_STEP_SUMMARY), --baseline or a
    --partial shard.  Seed 002's command (--gates, no gates file) asks for nothing: its JSON
    report holds every measure read off the verdicts, none of the others.  IR mode (``trec``)
    measures rankings only: its rank measures and scorecard are always computed."""
    names = [n.strip() for n in args.compute.split(",")] if args.compute else []
    refs = [parse_metric(n) for n in names if n not in ("all", "scorecard")] + [g.ref for g in gates]
    if (trec or "all" in names or args.items or args.markdown or args.html or args.csv or args.junit
            or args.metrics_csv or args.baseline or os.environ.get("GITHUB_STEP_SUMMARY")
            or getattr(args, "partial", None)):
        return set(NEEDS), True
    needs = needs_for(refs + _regression_refs(regression))
    if gates_file is not None:          # grounding by default (issue 41), "strict" in the file turns it off
        needs.add("grounding")
    card = gates_file is not None or args.weights is not None or "scorecard" in names
    if card:
        needs |= needs_for(_BY_NAME[s.metric] for s in STAGES if weights[s.name] > 0 and s.metric in _BY_NAME)
    return needs, card


def check_matched(args, gold, stats: dict, trec: bool) -> None:
    """An empty trace (run), or one whose rows name no gold qid (qrels topic), is an input error
    whatever the gates (issue 42): there is nothing to score, a verdict would be about nothing."""
    n = len(gold)
    if not n or stats["missing"] < n:
        return
    path, rows, key = (args.run, "lines", "qrels topic") if trec else (args.trace, "rows", "gold qid")
    source = args.qrels if trec else args.gold
    if not stats["rows"]:
        raise ScoreError("%s: the %s is empty (0 %s): nothing to score against %s"
                         % (path, "run" if trec else "trace", rows, source))
    raise ScoreError("%s: no %s names a %s of %s (%d %s; theirs e.g. %s; the %s are e.g. %s): wrong file?"
                     % (path, rows[:-1], key, source, stats["rows"], rows,
                        ", ".join(_show(q, 40) for q in stats["unknown_ex"][:3]), key + "s",
                        ", ".join(_show(q, 40) for q in gold.qids[:3])))


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="score_eval.py", description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_metric_help() + "\n\n" + trec_help())
    ap.add_argument("--gold", help="gold JSONL (qid, answerable, gold_claim_substr, gold_citations, ...)")
    ap.add_argument("--trace", help="trace JSONL (qid, retrieved_ids, answer_json {claim, citations}, ...); streamed")
    ap.add_argument("--qrels", help="TREC qrels file (topic iter docno rel), instead of --gold")
    ap.add_argument("--run", help="TREC run file (topic Q0 docno rank score tag), instead of --trace")
    ap.add_argument("--k", default="5", help="rank cutoffs, comma-separated (default 5); the first is the seed's k")
    ap.add_argument("--gates", help="seed-style gates 'precision=0.80,chr=0.75,under=0.05,over=0.10' "
                                    "(also name>=v / name<=v); replaces the dataset's file gates; "
                                    "'none': no gates (exit 0 unless the input is bad)")
    ap.add_argument("--gates-file", help="TOML gates file (default ./gates.toml; without it and without "
                                         "--gates, seed 002's default gates apply)")
    ap.add_argument("--dataset", help="section of the gates file to check (default baseline; ir with --qrels/--run, "
                                      "where a file without [ir] means no gates)")
    ap.add_argument("--refusal", help="refusal token (default from [scorer] refusal, else 'not in context'); "
                                      "compared after strip + lower-case")
    ap.add_argument("--chunks", help="JSONL of {id, text} chunks (BEIR {_id, text} too) for the hallucination check")
    ap.add_argument("--by", default="category", help="gold field for the per-category breakdown (default category)")
    ap.add_argument("--baseline", help="an earlier report (JSON from --out/stdout) to compare against")
    ap.add_argument("--out", help="also write the JSON report to this file (atomically); stdout then gets the "
                                  "compact summary (--full for the whole report)")
    ap.add_argument("--summary", action="store_true",
                    help="stdout: the compact summary (verdict, gates, overall score, files) instead of the report")
    ap.add_argument("--full", action="store_true", help="stdout: the whole JSON report even with --out")
    ap.add_argument("--markdown", help="write a human report (gates, metrics, categories, failure modes, worst items)")
    ap.add_argument("--items", help="write one JSON line per gold item with its verdicts")
    ap.add_argument("--compute", metavar="NAMES", help="also compute these optional measures (comma-separated), "
                    "which seed 002's command does not: e.g. answer_relevance, nDCG@10; 'scorecard' (the weighted "
                    "scorecard), 'all'; a gate, [regression], the scorecard or an output beside the JSON asks too")
    ap.add_argument("--weights", help="JSON object of stage weights for the scorecard, e.g. '{\"faithfulness\": 0.4}' "
                                      "(over the gates file's [weights], over seed 004's defaults)")
    ap.add_argument("--html", help="write a self-contained HTML report (no JavaScript, no network)")
    ap.add_argument("--junit", help="write JUnit XML: one testsuite for the dataset, one testcase per gate")
    ap.add_argument("--junit-items", action="store_true", help="with --junit: add a testsuite with one testcase per item")
    ap.add_argument("--csv", help="write one CSV row per item (verdicts, failure mode, stage scores)")
    ap.add_argument("--metrics-csv", help="write one CSV row per metric (value, count, n, 95%% CI)")
    ap.add_argument("--max-errors", type=int, default=MAX_ERRORS, help="bad lines listed before the rest are only "
                                                                       "counted (default %d)" % MAX_ERRORS)
    _add_trec_flags(ap)
    ap.add_argument("--quiet", action="store_true",
                    help="no progress lines and no notes on stderr (past 100,000 trace rows the scorer "
                         "reports progress; errors and gate failures are still printed)")
    ap.add_argument("--version", action="version", version="score_eval.py " + __version__,
                    help="print the version and exit")
    ap.add_argument("--manifest", metavar="FILE", help="after --out/--items/--markdown, write FILE naming each "
                                                        "with its sha256 (removed first: no manifest = torn set)")
    ap.add_argument("--force", action="store_true",
                    help="replace an existing output file that is not of the output's kind (never an input)")
    _add_input_limit_flags(ap)
    ap.add_argument("--debug", action="store_true",
                    help="on an internal error (exit 3), print the traceback instead of saving it to a file")
    ap.add_argument("--partial", metavar="OUT.json",
                    help="shard run: write this shard's verdicts to OUT.json ('-': stdout) for "
                         "'score_eval.py merge P1.json P2.json ...' instead of a report")
    ap.add_argument("--print-metric-table", action="store_true",
                    help="print the README metric table (Markdown, from the registry) and exit")
    return ap


def _add_trec_flags(ap: argparse.ArgumentParser) -> None:
    """The flags of IR mode (--qrels/--run): trec_eval's measures, their topics, its output format
    (and --format ragas, the other reading of the trace)."""
    ap.add_argument("-m", action="append", metavar="MEASURE",
                    help="with --qrels/--run: a trec_eval measure to compute, trec_eval's spelling "
                         "(map, Rprec, bpref, recip_rank, P.5,10, recall.10, ndcg_cut.10, success.1, num_ret, "
                         "utility.2,-1,0,0, ndcg.1=3,2=9 ...; P alone = its default cutoffs; official, all_trec, "
                         "set: trec_eval's sets; the list is below); repeatable")
    ap.add_argument("--measures", metavar="M1,M2",
                    help="the same as several -m, comma-separated: map,ndcg_cut.10,P.5")
    ap.add_argument("--average", choices=("all", "judged"), default="all",
                    help="with --qrels/--run, the trec_eval measures' topics: all (every qrels topic, a topic the "
                         "run forgot scores 0: trec_eval -c; default) or judged (the qrels topics the run has: "
                         "plain trec_eval)")
    ap.add_argument("--format", choices=("json", "trec", "ragas"), default="json",
                    help="stdout: json (the report, default) or trec (trec_eval's measure<TAB>qid|all<TAB>value "
                         "lines; --qrels/--run only); ragas: the trace is RAGAS-style rows (user_input/question, "
                         "response/answer, retrieved_contexts/contexts, reference/ground_truth; no qid), gold "
                         "derived from it without --gold; JSON report (also detected, with a note)")
    ap.add_argument("-q", dest="per_query", action="store_true",
                    help="with --format trec: one line per topic and measure before the 'all' lines (trec_eval -q)")
    ap.add_argument("-c", dest="complete", action="store_true",
                    help="with --qrels/--run: trec_eval -c, average over every qrels topic, a topic the run "
                         "forgot scoring 0 (this tool's default, --average all; accepted for trec_eval's "
                         "command lines)")
    ap.add_argument("-l", dest="rel_level", type=int, metavar="N",
                    help="with --qrels/--run: trec_eval -l, the least qrels level that is relevant for the "
                         "trec_eval measures (default 1; their nDCG gains stay the levels)")
    ap.add_argument("-M", dest="max_docs", type=int, metavar="N",
                    help="with --qrels/--run: trec_eval -M, the trec_eval measures read the first N documents "
                         "of each topic (in trec_eval's order) and drop the rest")


def _add_input_limit_flags(ap: argparse.ArgumentParser) -> None:
    """The bounds on what a run reads: bytes of one input, lines of one input, bytes of one line."""
    ap.add_argument("--max-input-bytes", type=int, default=MAX_INPUT_BYTES, metavar="N",
                    help="largest input (a file or stdin) read, in bytes (default %d = 4 GiB)" % MAX_INPUT_BYTES)
    ap.add_argument("--max-input-lines", type=int, default=None, metavar="N",
                    help="most lines read from one input (default %d for a file, %d for stdin)"
                         % (MAX_INPUT_LINES, MAX_STDIN_LINES))
    ap.add_argument("--max-line-bytes", type=int, default=MAX_LINE_BYTES, metavar="N",
                    help="longest input line accepted, in bytes (default %d = 16 MiB)" % MAX_LINE_BYTES)


_RUN_OUTPUTS = (("out", "report"), ("markdown", "markdown"), ("items", "items"), ("html", "report-html"),
                ("junit", "junit"), ("csv", "csv"), ("metrics_csv", "csv"), ("partial", "partial"),
                ("manifest", "manifest"))
_RUN_INPUTS = ("gold", "trace", "qrels", "run", "chunks", "baseline", "gates_file")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def check_run_outputs(args) -> None:
    """The output policy for a scoring run (or a merge): before anything is read or written."""
    inputs = [(_flag(a), getattr(args, a, None)) for a in _RUN_INPUTS]
    if getattr(args, "gates_file", None) is None and os.path.exists(DEFAULT_GATES_FILE):
        inputs.append(("the gates file", DEFAULT_GATES_FILE))
    inputs += [("partial", p) for p in getattr(args, "merge", None) or []]
    outputs = [(_flag(a), getattr(args, a, None), kind) for a, kind in _RUN_OUTPUTS]
    check_outputs(outputs, inputs, getattr(args, "force", False))
    check_output_sets(outputs, getattr(args, "force", False))      # e.g. make eval's runs/ (issue 42)
    if getattr(args, "manifest", None):
        manifest_listable([(label, path) for label, path, kind in outputs if kind != "manifest"])


class RunSetup(NamedTuple):
    """What one run checks and computes, settled from the flags and the gates file before any
    input is read (``configure``)."""
    trec: bool                      # IR mode (--qrels/--run)
    ks: List[int]                   # the cutoffs computed; the first is the seed's k
    trec_names: List[str]           # the trec_eval measures computed (IR mode)
    gates: list                     # the gates checked (config.Gate)
    shown: dict                     # the report's "gates": each gate as spelled, with its bound
    source: Optional[str]           # where the gates come from: a file, "--gates", "none", "seed default"
    refusal: str                    # the refusal token
    regression: Optional[Regression]    # the gates file's [regression] (with --baseline)
    rules: Rules                    # [scorer] rules: refusal reader, grounding, citation patterns
    weights: dict                   # the scorecard's stage weights
    weight_warnings: List[str]      # what resolving the weights warned about
    needs: set                      # the NEEDS computed (registry)
    card: bool                      # whether the scorecard is reported (asked for)


def _run_mode(args) -> bool:
    """Whether the run is in IR mode (--qrels/--run) rather than on answers (--gold/--trace)."""
    trec = bool(args.qrels or args.run)
    if trec and (args.gold or args.trace):
        raise ScoreError("usage: give --gold/--trace or --qrels/--run, not both")
    if trec and not (args.qrels and args.run):
        raise ScoreError("usage: --qrels and --run go together")
    if not trec and not args.trace:
        raise ScoreError("usage: --trace is required (with --gold, or alone for the reference-free metrics), "
                         "or --qrels and --run")
    return trec


def _check_flag_values(args) -> None:
    """--junit-items needs --junit; at most one input is stdin; the input limits (set in _LIMITS)."""
    if args.junit_items and not args.junit:
        raise ScoreError("usage: --junit-items needs --junit FILE")
    stdin_inputs = [o for o in ("gold", "trace", "qrels", "run", "chunks", "baseline", "gates_file")
                    if getattr(args, o) == "-"]
    if len(stdin_inputs) > 1:
        raise ScoreError("usage: only one input can be - (stdin), got %s"
                         % ", ".join("--" + o.replace("_", "-") for o in stdin_inputs))
    if not 1 <= args.max_line_bytes <= 1 << 40:
        raise ScoreError("--max-line-bytes: must be from 1 to 2**40, got %d" % args.max_line_bytes)
    _LIMITS["line_bytes"] = args.max_line_bytes
    _LIMITS.update(input_bytes=MAX_INPUT_BYTES, input_lines=MAX_INPUT_LINES, stdin_lines=MAX_STDIN_LINES)
    for name in ("bytes", "lines"):
        value = getattr(args, "max_input_" + name, None)
        if value is None:
            continue
        if not 1 <= value <= 1 << 50:
            raise ScoreError("--max-input-%s: must be from 1 to 2**50, got %d" % (name, value))
        _LIMITS["input_" + name] = value
        if name == "lines":
            _LIMITS["stdin_lines"] = value


def _read_gates_file(args, trec: bool, dataset_given: bool, no_gates: bool):
    """``(gates_file, refusal, file_gates, regression, source)``: the gates file the run reads
    (--gates-file, else ./gates.toml unless --gates none; None: no file) and what it holds: the
    refusal token, the gates of the dataset's table (none when --gates replaces them) and
    [regression]."""
    refusal, file_gates, regression, gates_source = REFUSAL, [], None, None
    gates_file = args.gates_file
    if gates_file is None and not no_gates and os.path.exists(DEFAULT_GATES_FILE):
        gates_file = DEFAULT_GATES_FILE
        _note(args, "using the gates file %s found in the current folder "
                    "(--gates-file FILE to choose another, --gates none for no gates)" % gates_file)
    if gates_file is not None:
        section = args.dataset if args.gates is None else None
        if trec and not dataset_given and section and not _has_table(gates_file, section):
            _note(args, "%s has no [%s] table: no gates apply to this IR run" % (gates_file, section))
            section = None
        refusal, file_gates, regression = load_gates_file(gates_file, section)
        gates_source = gates_file
    return gates_file, refusal, file_gates, regression, gates_source


def _select_gates(args, trec: bool, no_gates: bool, gates_file: Optional[str], file_gates: list,
                  gates_source: Optional[str]):
    """``(gates, shown, source)``: --gates none, else --gates, else the file's, else (no file)
    seed 002's defaults; IR mode without a file has none."""
    if no_gates:
        return [], {}, "none"
    if args.gates is not None:
        gates, shown = parse_gates_string(args.gates)
        return gates, shown, "--gates"
    if gates_file is not None:
        return file_gates, {g.ref.spelled: g.shown for g in file_gates}, gates_source
    if trec:        # IR mode: only IR gates apply ([ir] or --gates); none means exit 0
        return [], {}, gates_source
    gates, shown = parse_gates_string(DEFAULT_GATES)
    _note(args, "no gates file: seed 002's default gates apply (%s)" % DEFAULT_GATES)
    return gates, shown, "seed default"


def _regression_refs(regression: Optional[Regression]) -> list:
    """The metrics [regression] names: its max_drop metrics, then its slice metrics."""
    return [r for r, _ in regression.max_drop] + list(regression.slice_metrics) if regression else []


def _grounding_rules(rules: Rules, gates, regression: Optional[Regression]) -> Rules:
    """issue 29: grounding sentence by sentence costs a pass over each answer's sentences; a gates
    file that says [scorer] grounding = "strict" turns it off unless a gate / regression names it
    (issue 41: computed by default, with no gates file or no [scorer] grounding)."""
    named = {g.ref.metric.name for g in gates} | {r.metric.name for r in _regression_refs(regression)}
    if named & {"faithfulness", "unsupported_answer_rate"}:
        rules = rules._replace(ground=True)
    return rules


def _run_cutoffs(ks: List[int], trec: bool, gates, regression: Optional[Regression]) -> List[int]:
    """--k's cutoffs (the first stays the seed's k), the scorecard's (SCORECARD_K) and those the
    gates name, the added ones sorted."""
    if not trec and SCORECARD_K not in ks:
        ks.append(SCORECARD_K)
    for ref in [g.ref for g in gates] + _regression_refs(regression):
        if ref.k is not None and ref.k not in ks:
            ks.append(ref.k)
    return ks[:1] + sorted(ks[1:])


def configure(args) -> RunSetup:
    """The run's setup from its flags and gates file, every usage error raised before an input
    is read (the output policy included: check_run_outputs)."""
    trec = _run_mode(args)
    ks = _parse_ks(args.k)
    trec_names = _trec_names(args, trec)
    dataset_given = args.dataset is not None
    if not dataset_given:
        args.dataset = "ir" if trec else "baseline"
    no_gates = args.gates is not None and args.gates.strip().lower() == "none"
    _check_flag_values(args)
    check_run_outputs(args)
    gates_file, refusal, file_gates, regression, gates_source = _read_gates_file(args, trec, dataset_given, no_gates)
    rules = load_rules(gates_file) if gates_file is not None else Rules()
    _GROUNDING["mode"] = rules.grounding
    gates, shown, gates_source = _select_gates(args, trec, no_gates, gates_file, file_gates, gates_source)
    _check_gate_modes(gates, trec, trec_names)
    rules = _grounding_rules(rules, gates, regression)
    weights, weight_warnings = resolve_weights(gates_file, args.weights, gates)
    if args.refusal is not None:
        if not args.refusal.strip():
            raise ScoreError("--refusal: must be a non-empty string, got %r" % args.refusal)
        refusal = args.refusal
    ks = _run_cutoffs(ks, trec, gates, regression)
    needs, card = _asked(args, gates, regression, gates_file, weights, trec)
    if "grounding" not in needs:        # nothing asks for the sentence check (seed 002's command)
        rules = rules._replace(ground=False)
    return RunSetup(trec, ks, trec_names, gates, shown, gates_source, refusal, regression, rules,
                    weights, weight_warnings, needs, card)


def _read_and_judge(args, setup: RunSetup, errors: _Errors, notes: List[str], scorer_class: type):
    """``(gold, scorer, stats, runs)``: the gold set (or qrels) read and every trace row (or
    ranking) judged by a ``scorer_class``; a merge takes the verdicts from the shards' partials.
    ``runs``: the TREC rankings read (None otherwise)."""
    ks, refusal, rules = setup.ks, setup.refusal, setup.rules
    chunks, runs = None, None
    chunk_policies: Dict[str, str] = {}
    if args.chunks and not getattr(args, "merge", None):
        chunks = read_chunks(args.chunks, errors, notes, chunk_policies)
    if getattr(args, "merge", None):          # shards' partials (merge_partials)
        gold, scorer, stats = merge_partials(args.merge, args, ks, refusal, errors, notes, rules)
        scorer.needs = set(NEEDS) if gold.unlabelled else setup.needs     # the shards computed everything
    elif setup.trec:
        gold = read_qrels(args.qrels, errors)
        runs = read_run(args.run, errors) if not errors.count else {}
        if errors.count:
            raise ScoreError(errors.text())
        scorer = scorer_class(gold, ks, refusal, chunks)
        stats = score_run(runs, scorer)
    else:
        if args.format == "ragas" or (args.format == "json" and ragas_layout(args.trace)):
            if args.format != "ragas":
                _note(args, "%s: rows have RAGAS-style fields and no qid: read as --format ragas (ids row-<line>, "
                            "contexts ctx-1..ctx-N, reference as gold_answers)" % args.trace)
            _RAGAS_PATHS.add(args.trace)
        with gc_paused():      # reading and judging make no reference cycles
            if args.gold:
                gold = read_gold(args.gold, args.by, errors, notes)
            elif args.trace in _RAGAS_PATHS:
                gold = read_gold(args.trace, args.by, errors, notes)
            else:
                gold = gold_from_trace(args.trace, args.by)
            if errors.count:
                raise ScoreError(errors.text())
            scorer = scorer_class(gold, ks, refusal, chunks, rules, chunk_policies)
            scorer.needs = set(NEEDS) if gold.unlabelled else setup.needs
            scorer.progress = not args.quiet
            scorer.answer_substr = any(g.ref.metric.name in ANSWER_METRICS for g in setup.gates)   # issue 28
            stats = score_trace(args.trace, scorer, errors, notes)
        if errors.count:
            raise ScoreError(errors.text())
    return gold, scorer, stats, runs


def _category_metrics(gold, scorer: Scorer, trec: bool, memo: dict) -> Dict[str, dict]:
    """Each category's items and metrics, categories sorted by name (``memo``: aggregate's)."""
    order = sorted(range(len(gold)), key=gold.cat.__getitem__)     # items by category, file order within one
    categories: Dict[str, dict] = {}
    start = 0
    for cid, size in sorted(Counter(gold.cat).items()):
        idx = order[start:start + size]
        categories[gold.categories[cid]] = {"items": len(idx), "metrics": aggregate(scorer, idx, trec, memo)}
        start += size
    return {c: categories[c] for c in sorted(categories)}


def _failure_modes(by_flags: Counter, trec: bool) -> Dict[str, int]:
    """Items per failure mode, the most frequent first (MODE_ORDER breaks ties)."""
    modes: Counter = Counter()
    for f, cnt in by_flags.items():
        mode = failure_mode(f, trec)
        if mode is not None:
            modes[mode] += cnt
    return {m: modes[m] for m in sorted(modes, key=lambda m: (-modes[m], MODE_ORDER.index(m)))}


def _item_flags(qids: List[str], flags) -> Dict[str, str]:
    """Each item's verdict flags as the report's string (one flag_string per distinct value)."""
    fstr_cache: Dict[int, str] = {}
    item_flags = {}
    for qid, f in zip(qids, flags):
        s = fstr_cache.get(f)
        if s is None:
            s = fstr_cache[f] = flag_string(f)
        item_flags[qid] = s
    return item_flags


def _run_warnings(warnings: List[str], stats: dict, metrics: Dict[str, dict], trec: bool):
    """``(warnings, skipped)``: ``warnings`` with what the rows and the metrics add (unknown,
    duplicate and missing rows; metrics skipped or null); ``skipped``: the metrics that
    reference-free mode skipped."""
    if stats["unknown"]:
        warnings.append("%d trace rows name qids not in the gold set and were not scored (e.g. %s)"
                        % (stats["unknown"], ", ".join(stats["unknown_ex"])))
    if stats["duplicates"]:
        warnings.append("%d duplicate trace rows: the last row per qid was scored (e.g. %s)"
                        % (stats["duplicates"], ", ".join(stats["duplicate_ex"])))
    if stats["missing"]:
        warnings.append("%d gold items have no trace row; each counts as %s" % (
            stats["missing"], "an empty ranking" if trec else "a shipped answer with an empty claim"))
    skipped = sorted(name for name, e in metrics.items() if e["reason"] == _SKIPPED)
    if skipped:
        warnings.append("reference-free mode: %d metrics need gold labels and were skipped (%s)"
                        % (len(skipped), ", ".join(skipped)))
    for name, e in metrics.items():
        if e["reason"] and not trec and e["reason"] != _SKIPPED and name not in EXTRA_METRICS \
                and name not in ANSWER_METRICS:
            warnings.append("%s: %s" % (name, e["reason"]))
    return warnings, skipped


def _seed_fields(m0: Dict[str, dict], by_flags: Counter, n: int, k0: int) -> dict:
    """The report's top-level fields of seed 002 (answers only)."""
    shipped_n = sum(c for f, c in by_flags.items() if f & F_SHIP)
    return {
        "answered": shipped_n,                       # |S|
        "refused": n - shipped_n,                    # |R|
        "answerable": m0["over_refusal"]["n"],       # |A|
        "unanswerable": m0["under_refusal"]["n"],    # |U|
        "precision": _r(m0["precision"]["value"]),
        "chr": _r(m0["chr"]["value"]),
        "under_refusal": _r(m0["under_refusal"]["value"]),
        "over_refusal": _r(m0["over_refusal"]["value"]),
        "recall@k": _r(m0["recall@%d" % k0]["value"]),
    }


def _report_counts(n: int, stats: dict, by_flags: Counter) -> dict:
    """The report's "counts": gold items, trace rows and how they matched."""
    return {"gold_items": n, "trace_rows": stats["rows"],
            "matched_items": n - stats["missing"], "missing_traces": stats["missing"],
            "unknown_trace_rows": stats["unknown"],
            "duplicate_trace_rows": stats["duplicates"],
            "items_with_gold_citations": sum(c for f, c in by_flags.items() if f & F_GOLD),
            "items_without_gold_citations": sum(c for f, c in by_flags.items() if not f & F_GOLD)}


def _print_problems(report: dict) -> None:
    """The warnings and the failed block and warn gates, one stderr line each."""
    for w in report["warnings"]:
        sys.stderr.write("score_eval: warning: %s\n" % terminal_safe(w))
    for g in report["gate_results"]:
        if not g["pass"] and g["tier"] != "monitor":
            sys.stderr.write(terminal_safe("score_eval: %sgate failed: %s: %s%s\n" % (
                "warn " if g["tier"] == "warn" else "", g["gate"], g["reason"],
                (" " + g["message"]) if g.get("message") else "")))


def _write_run_outputs(args, report: dict, item_flags: Dict[str, str], scorer: Scorer, setup: RunSetup,
                       trec_result) -> None:
    """Problems on stderr; the files asked for (--out, --items, --markdown, then --html, --junit,
    --csv, --metrics-csv; --manifest removed first and written last); on stdout the report, its
    summary or trec_eval's lines (``trec_result``: (per topic, all)), unless a file is stdout."""
    trec = setup.trec
    # (trec_eval's text format on stdout and no --out: the JSON report is never shown, not rendered)
    text = render_json(report, item_flags) if args.out or args.format != "trec" else ""
    _print_problems(report)
    if args.manifest:
        remove_output(args.manifest)
    if args.out:
        atomic_write(args.out, text)
    stages = ItemStages(scorer, report["scorecard"], setup.weights) if "scorecard" in report else None
    if args.items:
        atomic_write(args.items, "".join(_item_lines(scorer, trec, stages)))
    if args.markdown:
        atomic_write(args.markdown, render_markdown(report, _worst(scorer, trec)))
    if args.format == "trec":
        text = render_trec(trec_result[0], trec_result[1], args.per_query)
    write_reports(args, report, scorer, trec, stages)
    outputs = (args.out, args.items, args.markdown, args.html, args.junit, args.csv, args.metrics_csv)
    if args.manifest:
        write_manifest(args.manifest, [p for p in outputs if p and p != "-"])
    if "-" not in outputs:
        compact = args.format != "trec" and not args.full and (args.summary or bool(args.out))
        sys.stdout.write(render_summary(report, outputs) if compact else text)
        sys.stdout.flush()


def run(args, scorer_class: type = Scorer) -> int:
    """One scoring run (or a merge of shards' partials, ``args.merge``): set up, read and judge,
    aggregate, gate, report.  ``scorer_class`` judges the rows: a shard run (--partial) passes
    shards._RecordingScorer, which also records the items its rows name."""
    _GATES_DOCS.clear()                   # a gates file is read once per run, never across runs
    if args.print_metric_table:
        sys.stdout.write(metric_table_markdown())
        return 0
    # 1. gates, the refusal token, cutoffs and what to compute
    setup = configure(args)
    trec, k0 = setup.trec, setup.ks[0]
    # 2. read and judge
    errors = _Errors(max(1, args.max_errors))
    notes: List[str] = []
    gold, scorer, stats, runs = _read_and_judge(args, setup, errors, notes, scorer_class)
    if getattr(args, "partial", None):        # a shard run writes its verdicts, no report
        return write_partial(args, gold, scorer, stats, notes)
    check_matched(args, gold, stats, trec)
    baseline = load_baseline(args.baseline) if args.baseline else None
    # 3. aggregate
    n = len(gold)
    memo: dict = {}         # what the aggregate calls over the gold set and its categories share
    metrics = aggregate(scorer, range(n), trec, memo)
    trec_per = trec_all = None
    if trec:
        if getattr(args, "merge", None):      # trec_eval's measures read the rankings again
            runs = merged_runs(args.merge, errors)
        trec_per, trec_all = trec_evaluate(gold, runs, setup.trec_names, args.average, args.rel_level or 1,
                                           args.max_docs)
        metrics.update(trec_metric_entries(trec_per, trec_all))
    categories = _category_metrics(gold, scorer, trec, memo)
    by_flags = Counter(scorer.flags)      # verdicts depend on flags only: count each distinct value once
    failure_modes = _failure_modes(by_flags, trec)
    gate_results = check_gates(setup.gates, metrics, k0, setup.rules.grounding)
    item_flags = _item_flags(gold.qids, scorer.flags)
    regression_block = None
    if baseline is not None:
        cur = {q: f for q, f in zip(gold.qids, scorer.flags)}
        regression_block, reg_gates = compare(baseline, args.baseline, metrics, categories, cur, setup.regression, k0)
        gate_results += reg_gates
        if trec:        # paired tests per trec_eval measure, topic by topic (ranx / trec_eval users' tests)
            regression_block["significance"] = trec_significance(trec_per_topic(trec_per),
                                                                 baseline.get("trec_per_topic"))
    # 4. warnings
    warnings, skipped = _run_warnings(list(notes) + setup.weight_warnings, stats, metrics, trec)
    gate_results = order_by_tier(gate_results)
    all_pass = blocking_pass(gate_results)
    # 5. report
    report: dict = {} if trec else _seed_fields(metrics, by_flags, n, k0)
    report.update({"k": k0, "gates": setup.shown, "pass": all_pass, "schema": SCHEMA, "version": __version__,
                   "dataset": args.dataset,
                   "inputs": {"gold": args.gold, "trace": args.trace, "qrels": args.qrels, "run": args.run,
                              "chunks": args.chunks, "gates": setup.source, "refusal": setup.refusal,
                              "k": setup.ks, "by": args.by},
                   "counts": _report_counts(n, stats, by_flags),
                   "metrics": {k: _rounded(v) for k, v in metrics.items()},
                   "gate_results": gate_results,
                   "categories": {c: {"items": b["items"], "metrics": {k: _rounded(v) for k, v in b["metrics"].items()}}
                                  for c, b in categories.items()},
                   "failure_modes": failure_modes,
                   "regression": regression_block,
                   "warnings": warnings})
    report["warnings_failed"] = sum(1 for g in gate_results if g["tier"] == "warn" and not g["pass"])
    if setup.card or gold.unlabelled:      # (reference-free mode: what there is to measure, all of it)
        report["scorecard"] = scorecard(setup.weights, {**not_computed(scorer), **metrics}, SCORECARD_K if not trec
                                        else k0, scorecard_gaps(scorer), setup.rules.grounding)
    if trec:
        report["trec_per_topic"] = trec_per_topic(trec_per)
    else:
        report["reference_free"] = gold.unlabelled
        report["skipped_metrics"] = {name: _SKIPPED for name in skipped}
    # 6. outputs
    _write_run_outputs(args, report, item_flags, scorer, setup, (trec_per, trec_all))
    return EXIT_PASS if all_pass else EXIT_GATE


def render_summary(report: dict, outputs: Tuple[Optional[str], ...] = ()) -> str:
    """The compact stdout (--summary; the default when --out holds the full report): the
    verdict, each gate's value and verdict, the overall score with its k, counts, and the
    files written.  A few dozen lines whatever the number of items."""
    names = ("out", "items", "markdown", "html", "junit", "csv", "metrics_csv")
    card = report.get("scorecard")
    short = {"pass": report["pass"], "dataset": report.get("dataset"), "schema": report.get("schema"),
             "version": report.get("version"),
             "counts": {k: report["counts"][k] for k in ("gold_items", "trace_rows", "missing_traces")
                        if k in (report.get("counts") or {})},
             "gates": [{"gate": g["gate"], "tier": g["tier"], "value": g["value"], "pass": g["pass"]}
                       for g in report.get("gate_results") or []],
             "failed": ["%s%s: %s" % ("(warn) " if g["tier"] == "warn" else "", g["gate"], g["reason"])
                        for g in report.get("gate_results") or [] if not g["pass"] and g["tier"] != "monitor"],
             "overall": (card or {}).get("overall"), "overall_k": (card or {}).get("k"),
             "files": {n: p for n, p in zip(names, outputs) if p}}
    if card is None:        # the run did not ask for the scorecard (see _asked)
        del short["overall"], short["overall_k"]
    lines = ["{"]
    keys = list(short)
    for i, k in enumerate(keys):
        v = short[k]
        if k == "gates":
            body = ",\n".join("    " + json.dumps(g, ensure_ascii=False) for g in v)
            lines.append('  "gates": [%s]%s' % ("\n" + body + "\n  " if v else "", "," if i < len(keys) - 1 else ""))
        else:
            lines.append("  %s: %s%s" % (json.dumps(k), json.dumps(v, ensure_ascii=False),
                                        "," if i < len(keys) - 1 else ""))
    return "\n".join(lines) + "\n}\n"


# =========================================================================== referee/cli.py
# The command line: ``main`` (exit 0 pass, 1 a gate failed, 2 bad input, 3 internal error; it never
# raises), subcommands and the internal-error handler.

# --------------------------------------------------------------------------- shards: --partial and merge
#
# A shard run (``--partial OUT.json``) judges its slice of the trace rows and writes, instead
# of a report, the verdicts it made: for every gold item it saw, the item's slots of every
# per-item container of the Scorer (arrays, per-cutoff arrays, sparse maps), found
# generically so a metric added to the Scorer merges with no code here; the order in which
# its rows named items (to count duplicates across shards exactly); its row counts and
# notes.  ``merge P1 ... Pn`` reads the gold set again (its sha256 must match), takes each
# item's verdict from the last shard that saw it (last row wins, as in one run when the
# shards are consecutive pieces of the trace), judges the items no shard saw as missing,
# and then aggregates, gates, compares and prints through the very code of a single run:
# the output is byte-identical to one run over all the rows.  TREC runs shard by topic.


def merge_main(argv: List[str]) -> int:
    """``score_eval.py merge P1.json P2.json ... [options]``: one report from shard partials."""
    ap = argparse.ArgumentParser(
        prog="score_eval.py merge",
        description="Combine the --partial outputs of shard runs (in trace order) into the report one "
                    "run over all their rows prints, gates and --baseline comparison included.")
    ap.add_argument("partials", nargs="+", help="partial JSON files written by --partial, in trace order")
    ap.add_argument("--trace", help="trace name shown in the report's inputs (default: the shards' names, "
                                    "comma-separated)")
    for flag in ("--gates", "--gates-file", "--baseline", "--out", "--markdown", "--items"):
        ap.add_argument(flag, help="as for a single run")
    ap.add_argument("--force", action="store_true", help="as for a single run")
    ap.add_argument("--dataset", help="as for a single run (default: the shards')")
    ap.add_argument("--max-errors", type=int, default=MAX_ERRORS, help="as for a single run")
    ap.add_argument("--summary", action="store_true", help="as for a single run")
    ap.add_argument("--full", action="store_true", help="as for a single run")
    try:
        margs = ap.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    try:
        first = _read_partial(margs.partials[0])
        args = build_parser().parse_args([])
        for a in _PARTIAL_ARGS:
            setattr(args, a, first["args"].get(a))
        trec = bool(args.qrels)
        names = margs.trace or ",".join(_read_partial(p)["args"].get("run" if trec else "trace") or ""
                                        for p in margs.partials)
        if trec:
            args.run = names
        else:
            args.trace = names
        for a in ("gates", "gates_file", "baseline", "out", "markdown", "items", "max_errors", "summary", "full", "force"):
            setattr(args, a, getattr(margs, a))
        if margs.dataset is not None:
            args.dataset = margs.dataset
        args.merge = margs.partials
        return run(args)
    except ScoreError as exc:
        sys.stderr.write(terminal_safe("%s\n" % exc))
        return 2
    except BrokenPipeError:
        return 1


def partial_main(args) -> int:
    """A shard run: ``run`` with a Scorer that records the rows' items (see --partial).  The
    class is passed to ``run``, never swapped in a module's globals: the package and the one
    file behave the same."""
    return run(args, scorer_class=_RecordingScorer)


def main(argv: Optional[List[str]] = None) -> int:
    """The command line; returns the exit status (0 pass, 1 a gate failed, 2 usage or input
    error, 3 internal error) and never raises."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        _interrupts_raise()
        return _main(argv)
    except KeyboardInterrupt:
        sys.stderr.write("score_eval: interrupted\n")
        return 130
    except Exception:   # a bug, never a verdict: exit 3, the traceback saved or (--debug) shown
        return internal_error("score_eval", "--debug" in argv)


def _interrupts_raise() -> None:
    """From here on Ctrl-C raises KeyboardInterrupt (main turns it into exit 130); before,
    the handler set at the top of the file exits 130 while the module loads."""
    import signal
    if threading_main() and signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def threading_main() -> bool:
    import threading
    return threading.current_thread() is threading.main_thread()


def _main(argv: List[str]) -> int:
    bad = [a for a in argv if has_surrogate(a)]
    if bad:
        sys.stderr.write("score_eval: usage: argument is not valid UTF-8, got %s\n" % ascii(bad[0]))
        return EXIT_INPUT
    if argv and argv[0] in SUBCOMMANDS:
        try:
            return SUBCOMMANDS[argv[0]](argv[1:])
        except ScoreError as exc:
            sys.stderr.write(terminal_safe("%s\n" % exc))
            return EXIT_INPUT
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["merge"]:
        return merge_main(argv[1:])
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:   # argparse already printed usage / help
        return exc.code if isinstance(exc.code, int) else EXIT_INPUT
    try:
        return partial_main(args) if args.partial else run(args)
    except ScoreError as exc:
        sys.stderr.write(terminal_safe("%s\n" % exc))
        return EXIT_INPUT
    except BrokenPipeError:   # e.g. `| head`: the report was not delivered
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        sys.stderr.write("score_eval: stdout closed before the report was written\n")
        return EXIT_INPUT


def internal_error(prog: str, debug: bool) -> int:
    """Report the exception being handled as an internal error: one stderr line naming it
    and where its traceback was saved (a file in the system temp folder), or the traceback
    itself when ``debug``.  Returns EXIT_INTERNAL."""
    etype, exc, tb = sys.exc_info()
    where = ""
    frames = traceback.extract_tb(tb) if tb is not None else []
    if frames:
        where = " at %s:%d" % (os.path.basename(frames[-1].filename), frames[-1].lineno)
    name = etype.__name__ if etype is not None else "error"
    text = "".join(traceback.format_exception(etype, exc, tb))
    if debug:
        sys.stderr.write(text)
        sys.stderr.write("%s: internal error (exit 3): %s%s\n" % (prog, name, where))
        return EXIT_INTERNAL
    try:
        fd, saved = tempfile.mkstemp(prefix="%s-crash-" % prog, suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as fh:
            fh.write(text)
        note = "traceback in %s" % saved
    except OSError:
        note = "traceback could not be saved; rerun with --debug"
    sys.stderr.write("%s: internal error (exit 3, a bug, not a verdict): %s%s; %s\n" % (prog, name, where, note))
    return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())

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

import argparse
import difflib
import json
import math
import os
import re
import sys
import tempfile
from array import array
from collections import Counter
from itertools import compress
from typing import Dict, List, NamedTuple, Optional, Tuple

try:  # Python 3.11+; older versions use only the subset reader below.
    import tomllib as _tomllib
except ImportError:  # pragma: no cover - depends on the interpreter
    _tomllib = None

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

# Words that carry no claim of their own; everything else of >= 3 letters in a shipped claim
# must occur in a cited chunk.  Negations (no, not, never) are deliberately NOT here: a claim
# that adds "not" to its source says the opposite of it.
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

_TOKEN_RX = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+")


class ScoreError(ValueError):
    """Bad input; ``str(err)`` is the whole message (one or more ``path:line: ...`` lines)."""


# --------------------------------------------------------------------------- metric registry


class Metric(NamedTuple):
    """One registry entry.  ``K`` in a name is a rank cutoff filled from ``--k`` or a gate."""
    name: str
    kind: str        # "rate" (binary per item, Wilson CI), "mean" (per-item mean, normal CI), "count"
    better: str      # "higher" or "lower": the direction of a bare ``--gates name=value``
    definition: str
    fields: str      # input fields read
    undefined: str   # what an empty denominator gives (text for the docs)
    empty: object    # ... and as a value (None = not measured)


# Per-item verdict flags (bits).  The report's "items" map stores them as letters so that a
# later run can pair its items with this one (--baseline).
FLAG_LETTERS = "tsachpvxmedofugnzr"
(F_TRACE, F_SHIP, F_ANS, F_CONT, F_HIT, F_PASS, F_VALID, F_HALL, F_HMEAS, F_EXPREF, F_DEC,
 F_DECOK, F_FB, F_FBUSED, F_GOLD, F_NOTRET, F_GOLDRET, F_REC) = [1 << i for i in range(len(FLAG_LETTERS))]
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
)

M = Metric
REGISTRY: Tuple[Metric, ...] = (
    M("precision", "rate", "higher",
      "shipped answerable items with containment and citation hit / shipped items |S|",
      "answer_json.claim, citations, retrieved_ids; gold answerable, gold_claim_substr, gold_citations",
      "1.0 when nothing shipped", 1.0),
    M("chr", "rate", "higher",
      "shipped answerable items with a citation hit / all shipped items |S| (seed 002)",
      "answer_json.citations, retrieved_ids; gold answerable, gold_citations",
      "1.0 when nothing shipped", 1.0),
    M("under_refusal", "rate", "lower",
      "unanswerable items that shipped an answer / unanswerable items |U|",
      "answer_json.claim; gold answerable", "0.0 when no unanswerable item", 0.0),
    M("over_refusal", "rate", "lower",
      "answerable items refused / answerable items |A|",
      "answer_json.claim; gold answerable", "0.0 when no answerable item", 0.0),
    M("recall@K", "rate", "higher",
      "seed 002, all-or-nothing: answerable items whose gold citations are ALL in the first K "
      "retrieved_ids (trace order; vacuously true for []) / |A|; `recall@k` is K = first --k",
      "retrieved_ids; gold answerable, gold_citations", "0.0 when no answerable item", 0.0),
    M("pass_rate", "rate", "higher",
      "items that pass / all items; answerable passes when shipped with containment and "
      "citation hit, unanswerable when refused (QA contract)",
      "answer_json; gold answerable, gold_claim_substr, gold_citations", "never empty", None),
    M("correct_refusal", "rate", "higher",
      "refusals of unanswerable items / all refusals |R| (refusal precision)",
      "answer_json.claim; gold answerable", "1.0 when nothing refused", 1.0),
    M("incorrect_refusal", "rate", "lower",
      "refusals of answerable items / all refusals |R| (share of refusals that were wrong; "
      "over_refusal divides by |A| instead)",
      "answer_json.claim; gold answerable", "0.0 when nothing refused", 0.0),
    M("hallucination", "rate", "lower",
      "shipped claims with no citation, a citation outside retrieved_ids, or a number or "
      "content word (>= 3 letters, not a stopword) found in no cited chunk's text / |S|",
      "answer_json, retrieved_ids, cited_chunks or --chunks",
      "0.0 when nothing shipped; null (gate fails) without chunk text", 0.0),
    M("citation_validity", "rate", "higher",
      "shipped answers whose citations are unique, at most 5 and all in retrieved_ids / |S| "
      "(seed 000)", "answer_json.citations, retrieved_ids", "1.0 when nothing shipped", 1.0),
    M("false_accept_rate", "rate", "lower",
      "shipped among items expected to refuse (expected_decision != ANSWER, else answerable "
      "false) / items expected to refuse (seed 000)",
      "answer_json.claim; gold expected_decision, answerable", "0.0 when none expected to refuse", 0.0),
    M("false_refuse_rate", "rate", "lower",
      "refused among items expected to answer / items expected to answer (seed 000)",
      "answer_json.claim; gold expected_decision, answerable", "0.0 when none expected to answer", 0.0),
    M("decision_accuracy", "rate", "higher",
      "trace decision == gold expected_decision / items having both",
      "decision; gold expected_decision", "null (not measured) when no item has both", None),
    M("fallback_used_count", "count", "lower",
      "items whose trace says fallback_used = true (QA contract)",
      "fallback_used", "null (not measured) when no trace carries fallback_used", None),
    M("fallback_used_rate", "rate", "lower",
      "fallback_used true / items whose trace carries fallback_used",
      "fallback_used", "null (not measured) when no trace carries fallback_used", None),
    M("fallback_used_rate_answerable", "rate", "lower",
      "fallback_used true / answerable items whose trace carries fallback_used",
      "fallback_used; gold answerable", "null (not measured) when no answerable trace carries it", None),
    M("P@K", "mean", "higher",
      "trec_eval P_K: gold citations in the top K of the ranking / K, mean over items with gold "
      "citations", "retrieved_ids, retrieved_scores; gold_citations",
      "null when no item has gold citations", None),
    M("R@K", "mean", "higher",
      "trec_eval recall_K: fraction of the item's gold citations in the top K (not seed's "
      "all-or-nothing recall@K)", "retrieved_ids, retrieved_scores; gold_citations",
      "null when no item has gold citations", None),
    M("Success@K", "rate", "higher",
      "trec_eval success_K: any gold citation in the top K", "retrieved_ids, retrieved_scores; gold_citations",
      "null when no item has gold citations", None),
    M("RR", "mean", "higher",
      "trec_eval recip_rank: 1 / rank of the first gold citation, 0 when none is retrieved",
      "retrieved_ids, retrieved_scores; gold_citations", "null when no item has gold citations", None),
    M("RR@K", "mean", "higher",
      "reciprocal rank counting only the top K", "retrieved_ids, retrieved_scores; gold_citations",
      "null when no item has gold citations", None),
    M("nDCG@K", "mean", "higher",
      "trec_eval ndcg_cut_K: sum gain/log2(rank+1) over the top K, divided by the same for the "
      "ideal order of all gold citations (gain 1; qrels relevance level with --qrels)",
      "retrieved_ids, retrieved_scores; gold_citations", "null when no item has gold citations", None),
)
del M
_BY_NAME = {m.name: m for m in REGISTRY}
ALIASES = {"under": "under_refusal", "over": "over_refusal"}   # seed 002's --gates names
_FAMILIES = ("P", "R", "Success", "RR", "nDCG", "recall")
_PARAM_RX = re.compile(r"(P|R|Success|RR|nDCG|recall)@([1-9][0-9]{0,5})")
SEED_ONLY = ("precision", "chr", "under_refusal", "over_refusal", "pass_rate", "correct_refusal",
             "incorrect_refusal", "hallucination", "citation_validity", "false_accept_rate",
             "false_refuse_rate", "decision_accuracy", "fallback_used_count", "fallback_used_rate",
             "fallback_used_rate_answerable")


class MetricRef(NamedTuple):
    """A parsed metric name: registry entry plus cutoff (None for 'recall@k' = first --k)."""
    spelled: str
    metric: Metric
    k: Optional[int]

    def key(self, k0: int) -> str:
        """The name under which the report lists the value."""
        if "@K" not in self.metric.name:
            return self.metric.name
        return self.metric.name.replace("@K", "@%d" % (self.k if self.k is not None else k0))


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


def metric_table_markdown() -> str:
    """The README metric table, generated from the registry (tests keep the README in sync)."""
    rows = ["| metric | kind | better | definition | fields read | when undefined |",
            "|---|---|---|---|---|---|"]
    for m in REGISTRY:
        rows.append("| `%s` | %s | %s | %s | %s | %s |" % (
            m.name, m.kind, m.better, m.definition.replace("|", "\\|"), m.fields, m.undefined))
    return "\n".join(rows) + "\n"


def _metric_help() -> str:
    lines = ["metrics (K = any cutoff, e.g. P@5; seed aliases: under, over, recall@k):"]
    for m in REGISTRY:
        lines.append("  %-30s %s" % (m.name, m.definition))
    lines.append("")
    lines.append("exit status: 0 all gates pass, 1 a gate failed, 2 usage or input error")
    return "\n".join(lines)


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
    data, lines = _toml_subset(text, path)
    if _tomllib is None:
        return data, lines
    try:
        return _tomllib.loads(text[1:] if text.startswith("\ufeff") else text), lines
    except _tomllib.TOMLDecodeError as exc:   # the subset reader missed a TOML rule
        msg = str(exc)
        m = re.search(r"line (\d+)", msg)
        raise ScoreError("%s:%s: invalid TOML: %s" % (path, m.group(1) if m else "1", msg)) from None


# --------------------------------------------------------------------------- gates config


class Gate(NamedTuple):
    ref: MetricRef
    op: str              # ">=" or "<="
    threshold: float
    message: Optional[str]
    shown: str           # value shown in the report's seed "gates" map


class Regression(NamedTuple):
    alpha: float
    max_drop: Tuple[Tuple[MetricRef, float], ...]
    slices: Tuple[str, ...]
    slice_metrics: Tuple[MetricRef, ...]
    slice_max_drop: float


_RESERVED = ("scorer", "regression")


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def load_gates_file(path: str, dataset: Optional[str]) -> Tuple[str, List[Gate], Optional[Regression]]:
    """Read gates.toml: [scorer] refusal, one [<dataset>] table of gates, [regression].

    ``dataset=None`` (a --gates string replaces the file's gates) reads only the refusal
    token and the regression section."""
    try:
        with open(path, "rb") as fh:
            text = fh.read().decode("utf-8")
    except OSError as exc:
        raise ScoreError("%s: cannot read gates file: %s" % (path, exc.strerror)) from None
    except UnicodeDecodeError as exc:
        raise ScoreError("%s: not UTF-8, got byte 0x%02x" % (path, exc.object[exc.start])) from None
    doc, lines = _parse_toml_lines(text, path)
    errors: List[str] = []

    def where(*key: str) -> str:
        for n in range(len(key), 0, -1):
            if key[:n] in lines:
                return "%s:%d" % (path, lines[key[:n]])
        return path

    refusal = REFUSAL
    for top, val in doc.items():
        if not isinstance(val, dict):
            errors.append("%s: top-level key %r must be a table ([%s]), got %s" % (where(top), top, top, _show(val)))
    scorer = doc.get("scorer", {})
    if isinstance(scorer, dict):
        for key, val in scorer.items():
            if key != "refusal":
                errors.append("%s: unknown [scorer] key %r; known: refusal, got %s" % (where("scorer", key), key, _show(val)))
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
        extra = sorted(set(val) - {"min", "max", "message"})
        bounds = [b for b in ("min", "max") if b in val]
        if extra:
            errors.append("%s: gate %r has unknown keys %s; known: min, max, message, got %s"
                          % (loc, key, ", ".join(extra), _show(val)))
        elif len(bounds) != 1:
            errors.append("%s: gate %r needs exactly one of min or max, got %s" % (loc, key, _show(val)))
        elif not _num(val[bounds[0]]):
            errors.append("%s: gate %r %s must be a number, got %s" % (loc, key, bounds[0], _show(val[bounds[0]])))
        elif "message" in val and not isinstance(val["message"], str):
            errors.append("%s: gate %r message must be a string, got %s" % (loc, key, _show(val["message"])))
        else:
            op = ">=" if bounds[0] == "min" else "<="
            thr = float(val[bounds[0]])
            gates.append(Gate(ref, op, thr, val.get("message"), "%s%s" % (op, _fmt_num(thr))))
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


def parse_gates_string(text: str) -> Tuple[List[Gate], Dict[str, str]]:
    """Seed 002's ``name=value,...`` (direction from the registry); ``name>=v`` / ``name<=v`` too."""
    gates, shown, errors = [], {}, []
    for part in text.split(","):
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
        if op == "=":
            op = ">=" if ref.metric.better == "higher" else "<="
        key, val = part.split("=", 1) if "=" in part else (part, "")
        if key.endswith((">", "<")):
            key = key[:-1]
        shown[key] = val
        gates.append(Gate(ref, op, thr, None, val))
    if errors:
        raise ScoreError("\n".join(errors))
    return gates, shown


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

    def text(self) -> str:
        out = list(self.lines)
        if self.count > len(self.lines):
            out.append("... and %d more errors" % (self.count - len(self.lines)))
        return "\n".join(out)


def _jsonl(path: str, errors: _Errors, notes: List[str]):
    """Yield (lineno, object) for each non-blank line; bad lines go to ``errors``.

    Reads bytes so that a non-UTF-8 line is reported with its line number; a UTF-8
    byte-order mark on the first line and CRLF line ends are accepted."""
    loads = json.loads
    for lineno, line in _decoded_lines(path, errors):
        if lineno == 1 and line.startswith("\ufeff"):
            line = line[1:]
            notes.append("%s:1: UTF-8 byte-order mark ignored" % path)
        if not line or line.isspace():
            continue
        try:
            obj = loads(line)
        except ValueError as exc:
            errors.add("%s:%d: invalid JSON (%s), got %s" % (path, lineno, str(exc).split(":")[0],
                                                           _show(line.strip(), 60)))
            continue
        if type(obj) is not dict:
            errors.add("%s:%d: expected a JSON object, got %s" % (path, lineno, _show(obj, 60)))
            continue
        yield lineno, obj


def _decoded_lines(path: str, errors: "_Errors"):
    """Yield (lineno, text) for each line of ``path`` that is UTF-8; the others go to ``errors``."""
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise ScoreError("%s: cannot read: %s" % (path, exc.strerror)) from None
    with fh:
        for lineno, raw in enumerate(fh, 1):
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


class Gold:
    """The gold set, held compactly: one slot per item in file order."""

    def __init__(self):
        self.qids: List[str] = []
        self.index: Dict[str, int] = {}
        self.lines: List[int] = []
        self.subs: list = []           # tuple of lower-cased substrings (len >= 5) | True (vacuous) | None
        self.rel: list = []            # tuple of gold citation ids, or {id: gain} from qrels
        self.base = array("I")         # flags known from gold alone: a, e, g
        self.cat = array("I")          # index into self.categories
        self.categories: List[str] = []
        self.expected = bytearray()    # 0 = absent, else 1 + DECISIONS.index
        self.trec = False

    def __len__(self) -> int:
        return len(self.qids)

    def category_id(self, name: str, ids: Dict[str, int]) -> int:
        i = ids.get(name)
        if i is None:
            i = ids[name] = len(self.categories)
            self.categories.append(name)
        return i


def read_gold(path: str, by: str, errors: _Errors, notes: List[str]) -> Gold:
    gold = Gold()
    cat_ids: Dict[str, int] = {}
    intern: Dict[str, str] = {}
    for lineno, row in _jsonl(path, errors, notes):
        qid = row.get("qid")
        if "qid" not in row:
            errors.add("%s:%d: missing \"qid\", got %s" % (path, lineno, _show(row, 60)))
            continue
        if type(qid) is not str or not qid:
            errors.add("%s:%d: \"qid\" must be a non-empty string, got %s" % (path, lineno, _show(qid)))
            continue
        bad = False
        ans = row.get("answerable")
        if type(ans) is not bool:
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
        if qid in gold.index:
            errors.add("%s:%d: duplicate qid (first on line %d), got %s"
                       % (path, lineno, gold.lines[gold.index[qid]], _show(qid)))
            continue
        if bad:
            continue
        gold.index[qid] = len(gold.qids)
        gold.qids.append(qid)
        gold.lines.append(lineno)
        # Seed rule: a substring counts when its lower-cased form has >= 5 characters; []
        # is vacuously contained, a missing list contains nothing.
        if subs == []:
            gold.subs.append(True)
        elif subs is None:
            gold.subs.append(None)
        else:
            gold.subs.append(tuple(s for s in (x.lower() for x in subs) if len(s) >= 5))
        rel = tuple(intern.setdefault(c, c) for c in dict.fromkeys(cits or ()))
        gold.rel.append(rel)
        expect_refuse = (exp != "ANSWER") if exp is not None else (not ans)
        gold.base.append((F_ANS if ans else 0) | (F_EXPREF if expect_refuse else 0) | (F_GOLD if rel else 0))
        gold.cat.append(gold.category_id(cat, cat_ids))
        gold.expected.append(0 if exp is None else 1 + DECISIONS.index(exp))
    if not gold.qids and not errors.count:
        errors.add("%s: no gold items (the file is empty), got 0 rows" % path)
    return gold


def read_chunks(path: str, errors: _Errors, notes: List[str]) -> Dict[str, str]:
    """--chunks FILE: JSONL of {"id", "text"} (BEIR's {"_id", "text"} too)."""
    chunks: Dict[str, str] = {}
    for lineno, row in _jsonl(path, errors, notes):
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
    rels: Dict[str, Dict[str, int]] = {}
    first_line: Dict[str, int] = {}
    for lineno, parts in _text_lines(path, errors):
        if len(parts) != 4:
            errors.add("%s:%d: qrels line needs 4 fields (topic iter docno rel), got %r" % (path, lineno, " ".join(parts)))
            continue
        topic, _, doc, rel = parts
        try:
            level = int(rel)
        except ValueError:
            errors.add("%s:%d: relevance must be an integer, got %r" % (path, lineno, rel))
            continue
        judged = rels.setdefault(topic, {})
        first_line.setdefault(topic, lineno)
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
        gold.base.append(F_GOLD if gains else 0)
        gold.cat.append(gold.category_id(NO_CATEGORY, cat_ids))
        gold.expected.append(0)
    if not gold.qids and not errors.count:
        errors.add("%s: no judgments (the file is empty), got 0 lines" % path)
    return gold


def read_run(path: str, errors: _Errors) -> Dict[str, Tuple[List[float], List[str]]]:
    """TREC run ``topic Q0 docno rank score tag [...]``; the rank column is ignored."""
    run: Dict[str, Tuple[List[float], List[str]]] = {}
    seen: Dict[str, set] = {}
    for lineno, parts in _text_lines(path, errors):
        if len(parts) < 6:
            errors.add("%s:%d: run line needs 6 fields (topic Q0 docno rank score tag), got %r" % (path, lineno, " ".join(parts)))
            continue
        topic, doc = parts[0], parts[2]
        try:
            score = float(parts[4])
            if not math.isfinite(score):
                raise ValueError
        except ValueError:
            errors.add("%s:%d: score must be a number, got %r" % (path, lineno, parts[4]))
            continue
        docs = seen.setdefault(topic, set())
        if doc in docs:
            errors.add("%s:%d: duplicate docno for topic %s, got %r" % (path, lineno, topic, doc))
            continue
        docs.add(doc)
        scores, ids = run.setdefault(topic, ([], []))
        scores.append(score)
        ids.append(doc)
    return run


def _text_lines(path: str, errors: _Errors):
    for lineno, line in _decoded_lines(path, errors):
        if lineno == 1:
            line = line.lstrip("\ufeff")
        parts = line.split()
        if parts:
            yield lineno, parts


# --------------------------------------------------------------------------- judging


def tokens(text: str) -> set:
    """Lower-cased word and number tokens; "1,000" and "1000" are the same number."""
    found = set(_TOKEN_RX.findall(text.lower()))
    if "," in text:
        found = {t.replace(",", "") for t in found}
    return found


def unsupported_tokens(claim: str, texts: List[str], cache: Optional[dict] = None) -> List[str]:
    """Numbers and content words of ``claim`` that occur in none of ``texts`` (sorted)."""
    support: set = set()
    for t in texts:
        if cache is not None:
            toks = cache.get(t)
            if toks is None:
                toks = cache[t] = frozenset(tokens(t))
        else:
            toks = tokens(t)
        support |= toks
    out = []
    for tok in tokens(claim):
        if tok in support:
            continue
        if tok[0].isdigit() or (len(tok) >= 3 and tok not in STOPWORDS):
            out.append(tok)
    return sorted(out)


_DISC: List[float] = []


def _disc(n: int) -> List[float]:
    """1 / log2(rank + 1) for ranks 1..n (trec_eval's nDCG discount)."""
    while len(_DISC) < n:
        _DISC.append(1.0 / math.log2(len(_DISC) + 2))
    return _DISC


class Scorer:
    """Per-item verdicts, stored compactly (arrays) so memory grows with the gold set only."""

    def __init__(self, gold: Gold, ks: List[int], refusal: str, chunks: Optional[Dict[str, str]]):
        n = len(gold)
        self.gold, self.ks, self.refusal = gold, ks, refusal.strip().lower()
        self.chunks = chunks
        self.chunk_tokens: dict = {}
        self.k0 = ks[0]
        self.flags = array("I", bytes(4 * n))
        self.seed_rec = {k: bytearray(n) for k in ks}
        self.hits = {k: array("I", bytes(4 * n)) for k in ks}
        self.rec = {k: array("d", bytes(8 * n)) for k in ks}
        self.ndcg = {k: array("d", bytes(8 * n)) for k in ks}
        self.rrk = {k: array("d", bytes(8 * n)) for k in ks}
        self.rr = array("d", bytes(8 * n))
        self.unsupported: Dict[int, List[str]] = {}
        self.no_text: Dict[int, str] = {}
        self.idcg: Dict[Tuple[int, int], float] = {}
        _disc(max(ks) + 1)

    # ---- one item
    def judge(self, i: int, claim, cits, ret, scores, cited, decision, fallback, present: bool) -> None:
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
        if not gold.trec:
            claim = (claim or "").strip()
            cits = cits or []
            retset = set(ret)
            in_ret = retset.issuperset(cits)
            shipped = claim.lower() != self.refusal
            # seed 002: hit needs citations within retrieved_ids and overlap with gold; with no
            # gold citations only an empty citation list hits.
            if rel:
                hit = in_ret and not set(cits).isdisjoint(rel)
            else:
                hit = in_ret and not cits
            subs = gold.subs[i]
            if subs is True:
                cont = True
            elif subs:
                low = claim.lower()
                cont = any(s in low for s in subs)
            else:
                cont = False
            if rel and not retset.isdisjoint(rel):
                f |= F_GOLDRET
            if shipped:
                f |= F_SHIP
                if cont:
                    f |= F_CONT
                if hit:
                    f |= F_HIT
                if not in_ret:
                    f |= F_NOTRET
                if in_ret and len(cits) <= MAX_CITATIONS and len(set(cits)) == len(cits):
                    f |= F_VALID
                if not cits or not in_ret:
                    f |= F_HALL | F_HMEAS
                else:
                    texts = []
                    cache = None
                    for c in dict.fromkeys(cits):
                        t = cited.get(c) if cited else None
                        if t is None and self.chunks is not None:
                            t = self.chunks.get(c)
                            cache = self.chunk_tokens
                        if t is None:
                            self.no_text[i] = c
                            break
                        texts.append(t)
                    else:
                        f |= F_HMEAS
                        bad = unsupported_tokens(claim, texts, cache)
                        if bad:
                            f |= F_HALL
                            self.unsupported[i] = bad
                if f & F_ANS and cont and hit:
                    f |= F_PASS
            elif not f & F_ANS:
                f |= F_PASS
            exp = gold.expected[i]
            if exp and decision is not None:
                f |= F_DEC
                if decision.strip().upper() == DECISIONS[exp - 1]:
                    f |= F_DECOK
            if fallback is not None:
                f |= F_FB
                if fallback:
                    f |= F_FBUSED
            for k in self.ks:
                top = set(ret[:k])
                self.seed_rec[k][i] = all(c in top for c in rel)
            if self.seed_rec[self.k0][i]:
                f |= F_REC
        if rel:
            self._retrieval(i, rel, ret, scores)
            if gold.trec and ret:
                f |= F_GOLDRET if not set(rel).isdisjoint(ret) else 0
        self.flags[i] = f

    def _retrieval(self, i: int, rel, ret, scores) -> None:
        # trec_eval order: score descending, then id descending; otherwise the trace's order.
        if scores is not None:
            ranked = [d for _, d in sorted(zip(scores, ret), reverse=True)]
        else:
            ranked = ret
        if len(set(ranked)) != len(ranked):
            ranked = list(dict.fromkeys(ranked))   # a repeated id counts once, at its best rank
        graded = type(rel) is dict
        positions = [(pos, rel[d] if graded else 1) for pos, d in enumerate(ranked) if d in rel]
        nrel = len(rel)
        disc = _DISC
        first = positions[0][0] if positions else -1
        self.rr[i] = 1.0 / (first + 1) if positions else 0.0
        if graded:
            ideal = sorted(rel.values(), reverse=True)
        for k in self.ks:
            hits = 0
            dcg = 0.0
            for pos, gain in positions:
                if pos >= k:
                    break
                hits += 1
                dcg += gain * disc[pos]
            if graded:
                idcg = 0.0
                for pos, gain in enumerate(ideal[:k]):
                    idcg += gain * disc[pos]
            else:
                idcg = self.idcg.get((nrel, k))
                if idcg is None:
                    idcg = self.idcg[(nrel, k)] = math.fsum(disc[:min(nrel, k)])
            self.hits[k][i] = hits
            self.rec[k][i] = hits / nrel
            self.ndcg[k][i] = dcg / idcg
            self.rrk[k][i] = 1.0 / (first + 1) if 0 <= first < k else 0.0


def score_trace(path: str, scorer: Scorer, errors: _Errors, notes: List[str]) -> Dict[str, object]:
    """Stream the trace file once, judging each row against its gold item (last row wins)."""
    index = scorer.gold.index
    seen = bytearray(len(scorer.gold))
    judge = scorer.judge
    rows = unknown = dup = 0
    unknown_ex: List[str] = []
    dup_ex: List[str] = []
    for lineno, row in _jsonl(path, errors, notes):
        rows += 1
        get = row.get
        qid = get("qid") or get("q_id")    # seed 002 accepts either spelling
        if type(qid) is not str:
            if not qid:
                errors.add("%s:%d: missing \"qid\" (or \"q_id\"), got %s" % (path, lineno, _show(row, 60)))
            else:
                errors.add("%s:%d: \"qid\" must be a string, got %s" % (path, lineno, _show(qid)))
            continue
        aj = get("answer_json")
        claim = cits = None
        if aj is not None:
            if type(aj) is not dict:
                errors.add("%s:%d: \"answer_json\" must be an object, got %s" % (path, lineno, _show(aj)))
                continue
            claim = aj.get("claim")
            cits = aj.get("citations")
            if claim is not None and type(claim) is not str:
                errors.add("%s:%d: \"answer_json.claim\" must be a string, got %s" % (path, lineno, _show(claim)))
                continue
            if cits is not None and not _str_list(cits):
                errors.add("%s:%d: \"answer_json.citations\" must be a list of strings, got %s" % (path, lineno, _show(cits)))
                continue
        ret = get("retrieved_ids")
        if ret is not None and not _str_list(ret):
            errors.add("%s:%d: \"retrieved_ids\" must be a list of strings, got %s" % (path, lineno, _show(ret)))
            continue
        scores = get("retrieved_scores")
        if scores is not None and (not _num_list(scores) or len(scores) != len(ret or ())):
            errors.add("%s:%d: \"retrieved_scores\" must be a list of numbers as long as \"retrieved_ids\" (%d), got %s"
                       % (path, lineno, len(ret or ()), _show(scores)))
            continue
        cited = get("cited_chunks")
        if cited is not None and (type(cited) is not dict or not all(type(v) is str for v in cited.values())):
            errors.add("%s:%d: \"cited_chunks\" must be an object of id -> text, got %s" % (path, lineno, _show(cited)))
            continue
        decision = get("decision")
        if decision is not None and type(decision) is not str:
            errors.add("%s:%d: \"decision\" must be a string, got %s" % (path, lineno, _show(decision)))
            continue
        fallback = get("fallback_used")
        if fallback is not None and type(fallback) is not bool:
            errors.add("%s:%d: \"fallback_used\" must be true or false, got %s" % (path, lineno, _show(fallback)))
            continue
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
        judge(i, claim, cits, ret, scores, cited, decision, fallback, True)
    # The gold set owns the query set: an item without a trace row is judged on an empty row
    # (seed 002: a shipped answer with an empty claim; retrieval scores 0).
    missing = 0
    i = seen.find(0)
    while i >= 0:
        missing += 1
        judge(i, None, None, None, None, None, None, None, False)
        i = seen.find(0, i + 1)
    return {"rows": rows, "unknown": unknown, "unknown_ex": unknown_ex,
            "duplicates": dup, "duplicate_ex": dup_ex, "missing": missing}


def score_run(run: Dict[str, Tuple[List[float], List[str]]], scorer: Scorer) -> Dict[str, object]:
    index = scorer.gold.index
    unknown = sorted(t for t in run if t not in index)
    missing = 0
    for i, qid in enumerate(scorer.gold.qids):
        entry = run.get(qid)
        if entry is None:
            missing += 1   # the qrels own the query set: a forgotten topic scores 0 (trec_eval -c)
            scorer.judge(i, None, None, [], None, None, None, None, False)
        else:
            scorer.judge(i, None, None, entry[1], entry[0], None, None, None, True)
    return {"rows": sum(len(v[1]) for v in run.values()), "unknown": len(unknown), "unknown_ex": unknown[:5],
            "duplicates": 0, "duplicate_ex": [], "missing": missing}


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


def _normal_ci(values_sum: float, sq_sum: float, n: int) -> Optional[List[float]]:
    if n == 0:
        return None
    mean = values_sum / n
    var = max(0.0, sq_sum / n - mean * mean) * n / (n - 1) if n > 1 else 0.0
    half = Z95 * math.sqrt(var / n)
    return [max(0.0, mean - half), min(1.0, mean + half)]


def _has(bits: int):
    return lambda f: f & bits == bits


# name -> (denominator predicate, numerator predicate) on an item's flags
_PAIRED = {
    "precision": (_has(F_SHIP), _has(F_ANS | F_CONT | F_HIT)),
    "chr": (_has(F_SHIP), _has(F_ANS | F_HIT)),
    "under_refusal": (lambda f: not f & F_ANS, _has(F_SHIP)),
    "over_refusal": (_has(F_ANS), lambda f: not f & F_SHIP),
    "pass_rate": (lambda f: True, _has(F_PASS)),
    "correct_refusal": (lambda f: not f & F_SHIP, lambda f: not f & F_ANS),
    "incorrect_refusal": (lambda f: not f & F_SHIP, _has(F_ANS)),
    "hallucination": (_has(F_SHIP), _has(F_HALL)),
    "citation_validity": (_has(F_SHIP), _has(F_VALID)),
    "false_accept_rate": (_has(F_EXPREF), _has(F_SHIP)),
    "false_refuse_rate": (lambda f: not f & F_EXPREF, lambda f: not f & F_SHIP),
    "decision_accuracy": (_has(F_DEC), _has(F_DECOK)),
    "fallback_used_rate": (_has(F_FB), _has(F_FBUSED)),
    "fallback_used_rate_answerable": (_has(F_FB | F_ANS), _has(F_FBUSED)),
    "recall@K": (_has(F_ANS), _has(F_REC)),      # paired only at the first k
}


def _entry(value, count, n, ci, reason=None) -> dict:
    return {"value": value, "count": count, "n": n, "ci": ci, "reason": reason}


def aggregate(scorer: Scorer, idx, trec: bool) -> Dict[str, dict]:
    """Every registry metric (families at every k) over the items ``idx``; unrounded."""
    flags = scorer.flags
    combos = Counter(map(flags.__getitem__, idx))
    out: Dict[str, dict] = {}

    def rate(name: str):
        den, num = _PAIRED[name]
        n = c = 0
        for f, cnt in combos.items():
            if den(f):
                n += cnt
                if num(f):
                    c += cnt
        return c, n

    gidx = list(compress(idx, map(lambda f: f & F_GOLD, map(flags.__getitem__, idx))))
    ng = len(gidx)
    aidx = None   # answerable items, for the seed's recall@K
    for m in REGISTRY:
        if m.name in SEED_ONLY or m.name == "recall@K":
            names = [m.name] if m.name != "recall@K" else ["recall@%d" % k for k in scorer.ks]
            for name in names:
                if trec:    # --qrels/--run carry no answers: only retrieval metrics exist
                    continue
                if name.startswith("recall@"):
                    if aidx is None:
                        aidx = list(compress(idx, map(lambda f: f & F_ANS, map(flags.__getitem__, idx))))
                    c, n = sum(map(scorer.seed_rec[int(name[7:])].__getitem__, aidx)), len(aidx)
                    out[name] = _entry(c / n if n else m.empty, c, n, wilson(c, n))
                    continue
                if name == "fallback_used_count":
                    with_field = sum(cnt for f, cnt in combos.items() if f & F_FB)
                    c = sum(cnt for f, cnt in combos.items() if f & F_FBUSED)
                    out[name] = (_entry(c, c, with_field, None) if with_field else
                                 _entry(None, None, 0, None, "not measured: no trace row carries fallback_used"))
                    continue
                c, n = rate(name)
                reason = None
                value = c / n if n else m.empty
                if name == "hallucination":
                    unmeasured = sum(cnt for f, cnt in combos.items() if f & F_SHIP and not f & F_HMEAS)
                    if unmeasured:
                        first = min((i for i in idx if i in scorer.no_text), default=None)
                        where = "" if first is None else " (first: qid %s, chunk %s)" % (
                            scorer.gold.qids[first], scorer.no_text[first])
                        reason = ("not measured: no chunk text for %d of %d shipped claims%s; give the trace "
                                  "cited_chunks or --chunks FILE" % (unmeasured, n, where))
                        value = None
                elif name.startswith("fallback_used_rate") and n == 0:
                    reason = ("not measured: no trace row carries fallback_used" if name == "fallback_used_rate"
                              else "not measured: no answerable item's trace carries fallback_used")
                elif name == "decision_accuracy" and n == 0:
                    reason = "not measured: no item has both gold expected_decision and trace decision"
                elif name == "pass_rate" and n == 0:
                    reason = "not measured: no items"
                out[name] = _entry(value if reason is None else None, c, n,
                                   wilson(c, n) if reason is None else None, reason)
            continue
        # retrieval families over items with gold citations
        base = m.name.split("@")[0]
        ks = [None] if m.name == "RR" else scorer.ks
        for k in ks:
            name = m.name if k is None else "%s@%d" % (base, k)
            if ng == 0:
                out[name] = _entry(None, None, 0, None, "not measured: no item has gold citations")
                continue
            if base == "P":
                vals = [h / k for h in map(scorer.hits[k].__getitem__, gidx)]
            elif base == "R":
                vals = list(map(scorer.rec[k].__getitem__, gidx))
            elif base == "nDCG":
                vals = list(map(scorer.ndcg[k].__getitem__, gidx))
            elif base == "RR":
                vals = list(map((scorer.rr if k is None else scorer.rrk[k]).__getitem__, gidx))
            else:  # Success
                c = sum(1 for h in map(scorer.hits[k].__getitem__, gidx) if h)
                out[name] = _entry(c / ng, c, ng, wilson(c, ng))
                continue
            total = math.fsum(vals)
            out[name] = _entry(total / ng, None, ng, _normal_ci(total, math.fsum(v * v for v in vals), ng))
    return out


# Severity order: an item's primary failure mode is its first label in this order.
MODE_ORDER = ("missing_trace", "under_refusal", "citation_not_retrieved", "hallucination", "retrieval_miss",
              "over_refusal", "citation_miss", "claim_miss", "decision_mismatch")


def all_modes(f: int, trec: bool) -> List[str]:
    """Every failure label that applies to an item with flags ``f``, most severe first."""
    out = []
    if not f & F_TRACE:
        out.append("missing_trace")
    if f & F_GOLD and not f & F_GOLDRET and (trec or f & F_ANS):
        out.append("retrieval_miss")      # no gold citation was retrieved at all
    if not trec:
        if f & F_SHIP:
            if not f & F_ANS:
                out.append("under_refusal")
            if f & F_NOTRET:
                out.append("citation_not_retrieved")
            if f & F_HALL:
                out.append("hallucination")
            if f & F_ANS and not f & F_HIT:
                out.append("citation_miss")
            if f & F_ANS and not f & F_CONT:
                out.append("claim_miss")
        elif f & F_ANS:
            out.append("over_refusal")
        if f & F_DEC and not f & F_DECOK:
            out.append("decision_mismatch")
    return sorted(out, key=MODE_ORDER.index)


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


# --------------------------------------------------------------------------- gates, regression


def check_gates(gates, metrics: Dict[str, dict], k0: int) -> List[dict]:
    results = []
    for g in gates:
        key = g.ref.key(k0)
        entry = metrics.get(key)
        value = entry["value"] if entry else None
        reason = None
        if entry is None:
            reason = "not measured: %s was not computed" % key
        elif value is None:
            reason = entry["reason"]
        ok = value is not None and (value >= g.threshold if g.op == ">=" else value <= g.threshold)
        if value is not None and not ok:
            reason = "%s = %s, needs %s %s" % (key, _fmt_num(round(value, 4)), g.op, _fmt_num(g.threshold))
        results.append({"gate": g.ref.spelled, "kind": "threshold", "metric": key, "op": g.op,
                        "threshold": g.threshold, "value": _r(value), "pass": ok,
                        "reason": reason, "message": g.message if value is not None and not ok else None,
                        "p_value": None, "worse": None, "better": None})
    return results


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
    try:
        with open(path, "rb") as fh:
            data = json.loads(fh.read().decode("utf-8-sig"))
    except OSError as exc:
        raise ScoreError("%s: cannot read baseline report: %s" % (path, exc.strerror)) from None
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


def compare(base: dict, path: str, metrics: Dict[str, dict], categories: Dict[str, dict],
            cur_flags: Dict[str, int], reg: Optional[Regression], k0: int) -> Tuple[dict, List[dict]]:
    """``metrics``/``categories`` are this run's unrounded values; the baseline's are rounded."""
    """Deltas per metric and category, paired exact tests, regression and slice gates."""
    bflags = base["_flags"]
    matched = [q for q in cur_flags if q in bflags]
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
    out_cats = {}
    bcats = base.get("categories") if isinstance(base.get("categories"), dict) else {}
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
    gate_results = []
    if reg is not None:
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
    summary = {"baseline": path, "matched_items": len(matched),
               "only_in_baseline": sum(1 for q in bflags if q not in cur_flags),
               "only_in_current": len(cur_flags) - len(matched),
               "metrics": out_metrics, "categories": out_cats}
    return summary, gate_results


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


def atomic_write(path: str, text: str) -> None:
    """Write to a temp file in the target's folder, then os.replace() it into place."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def render_json(report: dict, items: Dict[str, str]) -> str:
    """indent=2 like the seed; the per-item map goes last on one line (fast for big sets)."""
    head = json.dumps(report, indent=2, ensure_ascii=False)
    return head[:-2] + ',\n  "items": ' + json.dumps(items, ensure_ascii=False, separators=(",", ":")) + "\n}\n"


def render_markdown(report: dict, worst: List[dict]) -> str:
    mark = {True: "PASS", False: "FAIL"}
    out = ["# score_eval report: %s" % report["dataset"], "",
           "**%s**: %d of %d gates pass." % (mark[report["pass"]],
                                               sum(1 for g in report["gate_results"] if g["pass"]),
                                               len(report["gate_results"])), ""]
    c = report["counts"]
    out.append("Gold items: %d; trace rows: %d; missing traces: %d; unknown trace rows: %d; duplicate "
               "trace rows: %d." % (c["gold_items"], c["trace_rows"], c["missing_traces"],
                                    c["unknown_trace_rows"], c["duplicate_trace_rows"]))
    out += ["", "## Gates", "", "| | gate | value | needs | note |", "|---|---|---|---|---|"]
    for g in report["gate_results"]:
        need = "%s %s" % (g["op"], _fmt_num(g["threshold"]))
        note = (g["reason"] or "") + ((" " + g["message"]) if g.get("message") else "")
        out.append("| %s | `%s` | %s | %s | %s |" % ("✅" if g["pass"] else "❌", g["gate"],
                                                    _cell(g["value"]), need, note.replace("|", "\\|")))
    out += ["", "## Metrics", "", "| metric | value | count / n | 95% CI |", "|---|---|---|---|"]
    for name, e in report["metrics"].items():
        frac = "" if e["n"] is None else ("%s / %d" % (e["count"], e["n"]) if e["count"] is not None else "n = %d" % e["n"])
        ci = "" if e["ci"] is None else "%.4f - %.4f" % tuple(e["ci"])
        out.append("| `%s` | %s | %s | %s |" % (name, _cell(e["value"]) if e["value"] is not None else
                                                 "null (%s)" % e["reason"], frac, ci))
    cats = report["categories"]
    if cats:
        cols = [n for n in ("pass_rate", "precision", "chr", "hallucination", "over_refusal", "under_refusal",
                            "recall@%d" % report["k"], "nDCG@%d" % report["k"]) if n in report["metrics"]]
        out += ["", "## Categories", "", "| category | items | " + " | ".join(cols) + " |",
                "|---|---|" + "---|" * len(cols)]
        for cat, block in cats.items():
            out.append("| %s | %d | %s |" % (cat, block["items"], " | ".join(
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
            out.append("| %s | %s | %s | %s |" % (w["qid"], w["category"], w["failure_mode"], ", ".join(w["labels"])))
    reg = report.get("regression")
    if reg:
        out += ["", "## Against the baseline", "", "Baseline: `%s`; %d items paired." % (reg["baseline"], reg["matched_items"]),
                "", "| metric | baseline | current | delta | worse | better | p |", "|---|---|---|---|---|---|---|"]
        for name, r in reg["metrics"].items():
            out.append("| `%s` | %s | %s | %s | %s | %s | %s |" % (
                name, _cell(r["baseline"]), _cell(r["current"]), _cell(r["delta"]), r.get("worse", ""),
                r.get("better", ""), _cell(r.get("p_value"))))
    if report["warnings"]:
        out += ["", "## Warnings", ""] + ["- %s" % w for w in report["warnings"]]
    return "\n".join(out) + "\n"


def _cell(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, float):
        return "%.4f" % v
    return str(v)


# --------------------------------------------------------------------------- main


def _parse_ks(text: str) -> List[int]:
    ks = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit() or int(part) < 1:
            raise ScoreError("--k: cutoffs must be positive integers separated by commas, got %r" % text)
        if int(part) not in ks:
            ks.append(int(part))
    return ks


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="score_eval.py", description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_metric_help())
    ap.add_argument("--gold", help="gold JSONL (qid, answerable, gold_claim_substr, gold_citations, ...)")
    ap.add_argument("--trace", help="trace JSONL (qid, retrieved_ids, answer_json {claim, citations}, ...); streamed")
    ap.add_argument("--qrels", help="TREC qrels file (topic iter docno rel), instead of --gold")
    ap.add_argument("--run", help="TREC run file (topic Q0 docno rank score tag), instead of --trace")
    ap.add_argument("--k", default="5", help="rank cutoffs, comma-separated (default 5); the first is the seed's k")
    ap.add_argument("--gates", help="seed-style gates 'precision=0.80,chr=0.75,under=0.05,over=0.10' "
                                    "(also name>=v / name<=v); replaces the dataset's file gates")
    ap.add_argument("--gates-file", help="TOML gates file (default ./gates.toml; without it and without "
                                         "--gates, seed 002's default gates apply)")
    ap.add_argument("--dataset", default="baseline", help="section of the gates file to check (default baseline)")
    ap.add_argument("--refusal", help="refusal token (default from [scorer] refusal, else 'not in context'); "
                                      "compared after strip + lower-case")
    ap.add_argument("--chunks", help="JSONL of {id, text} chunks (BEIR {_id, text} too) for the hallucination check")
    ap.add_argument("--by", default="category", help="gold field for the per-category breakdown (default category)")
    ap.add_argument("--baseline", help="an earlier report (JSON from --out/stdout) to compare against")
    ap.add_argument("--out", help="also write the JSON report to this file (atomically)")
    ap.add_argument("--markdown", help="write a human report (gates, metrics, categories, failure modes, worst items)")
    ap.add_argument("--items", help="write one JSON line per gold item with its verdicts")
    ap.add_argument("--max-errors", type=int, default=MAX_ERRORS, help="bad lines listed before the rest are only "
                                                                       "counted (default %d)" % MAX_ERRORS)
    ap.add_argument("--partial", metavar="OUT.json",
                    help="shard run: write this shard's verdicts to OUT.json ('-': stdout) for "
                         "'score_eval.py merge P1.json P2.json ...' instead of a report")
    ap.add_argument("--print-metric-table", action="store_true",
                    help="print the README metric table (Markdown, from the registry) and exit")
    return ap


def run(args) -> int:
    if args.print_metric_table:
        sys.stdout.write(metric_table_markdown())
        return 0
    trec = bool(args.qrels or args.run)
    if trec and (args.gold or args.trace):
        raise ScoreError("usage: give --gold/--trace or --qrels/--run, not both")
    if trec and not (args.qrels and args.run):
        raise ScoreError("usage: --qrels and --run go together")
    if not trec and not (args.gold and args.trace):
        raise ScoreError("usage: --gold and --trace are required (or --qrels and --run)")
    ks = _parse_ks(args.k)
    # 1. gates and the refusal token
    refusal, file_gates, regression, gates_source = REFUSAL, [], None, None
    gates_file = args.gates_file
    if gates_file is None and os.path.exists(DEFAULT_GATES_FILE):
        gates_file = DEFAULT_GATES_FILE
    if gates_file is not None:
        refusal, file_gates, regression = load_gates_file(
            gates_file, args.dataset if args.gates is None else None)
        gates_source = gates_file
    if args.gates is not None:
        gates, shown = parse_gates_string(args.gates)
        gates_source = "--gates"
    elif gates_file is not None:
        gates, shown = file_gates, {g.ref.spelled: g.shown for g in file_gates}
    else:
        gates, shown = parse_gates_string(DEFAULT_GATES)
        gates_source = "seed default"
    if args.refusal is not None:
        if not args.refusal.strip():
            raise ScoreError("--refusal: must be a non-empty string, got %r" % args.refusal)
        refusal = args.refusal
    # cutoffs named by gates are computed too
    for ref in [g.ref for g in gates] + ([r for r, _ in regression.max_drop] + list(regression.slice_metrics)
                                         if regression else []):
        if ref.k is not None and ref.k not in ks:
            ks.append(ref.k)
    ks = ks[:1] + sorted(ks[1:])
    # 2. read and judge
    errors = _Errors(max(1, args.max_errors))
    notes: List[str] = []
    chunks = None
    if args.chunks and not getattr(args, "merge", None):
        chunks = read_chunks(args.chunks, errors, notes)
    if getattr(args, "merge", None):          # shards' partials (merge_partials)
        gold, scorer, stats = merge_partials(args.merge, args, ks, refusal, errors, notes)
    elif trec:
        gold = read_qrels(args.qrels, errors)
        runs = read_run(args.run, errors) if not errors.count else {}
        if errors.count:
            raise ScoreError(errors.text())
        scorer = Scorer(gold, ks, refusal, chunks)
        stats = score_run(runs, scorer)
    else:
        gold = read_gold(args.gold, args.by, errors, notes)
        if errors.count:
            raise ScoreError(errors.text())
        scorer = Scorer(gold, ks, refusal, chunks)
        stats = score_trace(args.trace, scorer, errors, notes)
        if errors.count:
            raise ScoreError(errors.text())
    if getattr(args, "partial", None):        # a shard run writes its verdicts, no report
        return write_partial(args, gold, scorer, stats, notes)
    baseline = load_baseline(args.baseline) if args.baseline else None
    # 3. aggregate
    n = len(gold)
    everything = range(n)
    metrics = aggregate(scorer, everything, trec)
    order = sorted(everything, key=gold.cat.__getitem__)
    categories: Dict[str, dict] = {}
    start = 0
    while start < n:
        cid = gold.cat[order[start]]
        end = start
        while end < n and gold.cat[order[end]] == cid:
            end += 1
        idx = order[start:end]
        categories[gold.categories[cid]] = {"items": len(idx), "metrics": aggregate(scorer, idx, trec)}
        start = end
    categories = {c: categories[c] for c in sorted(categories)}
    flags = scorer.flags
    by_flags = Counter(flags)      # verdicts depend on flags only: count each distinct value once
    modes: Counter = Counter()
    for f, cnt in by_flags.items():
        mode = failure_mode(f, trec)
        if mode is not None:
            modes[mode] += cnt
    failure_modes = {m: modes[m] for m in sorted(modes, key=lambda m: (-modes[m], MODE_ORDER.index(m)))}
    k0 = ks[0]
    gate_results = check_gates(gates, metrics, k0)
    fstr_cache: Dict[int, str] = {}
    item_flags = {}
    for qid, f in zip(gold.qids, flags):
        s = fstr_cache.get(f)
        if s is None:
            s = fstr_cache[f] = flag_string(f)
        item_flags[qid] = s
    regression_block = None
    if baseline is not None:
        cur = {q: f for q, f in zip(gold.qids, flags)}
        regression_block, reg_gates = compare(baseline, args.baseline, metrics, categories, cur, regression, k0)
        gate_results += reg_gates
    # 4. warnings
    warnings = list(notes)
    if stats["unknown"]:
        warnings.append("%d trace rows name qids not in the gold set and were not scored (e.g. %s)"
                        % (stats["unknown"], ", ".join(stats["unknown_ex"])))
    if stats["duplicates"]:
        warnings.append("%d duplicate trace rows: the last row per qid was scored (e.g. %s)"
                        % (stats["duplicates"], ", ".join(stats["duplicate_ex"])))
    if stats["missing"]:
        warnings.append("%d gold items have no trace row; each counts as %s" % (
            stats["missing"], "an empty ranking" if trec else "a shipped answer with an empty claim"))
    for name, e in metrics.items():
        if e["reason"] and not trec:
            warnings.append("%s: %s" % (name, e["reason"]))
    all_pass = all(g["pass"] for g in gate_results)
    # 5. report
    m0 = metrics
    report: dict = {}
    if not trec:
        report.update({
            "answered": m0["precision"]["n"],            # |S|
            "refused": n - m0["precision"]["n"],         # |R|
            "answerable": m0["over_refusal"]["n"],       # |A|
            "unanswerable": m0["under_refusal"]["n"],    # |U|
            "precision": _r(m0["precision"]["value"]),
            "chr": _r(m0["chr"]["value"]),
            "under_refusal": _r(m0["under_refusal"]["value"]),
            "over_refusal": _r(m0["over_refusal"]["value"]),
            "recall@k": _r(m0["recall@%d" % k0]["value"]),
        })
    report.update({"k": k0, "gates": shown, "pass": all_pass, "schema": SCHEMA, "dataset": args.dataset,
                   "inputs": {"gold": args.gold, "trace": args.trace, "qrels": args.qrels, "run": args.run,
                              "chunks": args.chunks, "gates": gates_source, "refusal": refusal,
                              "k": ks, "by": args.by},
                   "counts": {"gold_items": n, "trace_rows": stats["rows"],
                              "matched_items": n - stats["missing"], "missing_traces": stats["missing"],
                              "unknown_trace_rows": stats["unknown"],
                              "duplicate_trace_rows": stats["duplicates"],
                              "items_with_gold_citations": sum(c for f, c in by_flags.items() if f & F_GOLD),
                              "items_without_gold_citations": sum(c for f, c in by_flags.items() if not f & F_GOLD)},
                   "metrics": {k: _rounded(v) for k, v in metrics.items()},
                   "gate_results": gate_results,
                   "categories": {c: {"items": b["items"], "metrics": {k: _rounded(v) for k, v in b["metrics"].items()}}
                                  for c, b in categories.items()},
                   "failure_modes": failure_modes,
                   "regression": regression_block,
                   "warnings": warnings})
    text = render_json(report, item_flags)
    for w in warnings:
        sys.stderr.write("score_eval: warning: %s\n" % w)
    for g in gate_results:
        if not g["pass"]:
            sys.stderr.write("score_eval: gate failed: %s: %s%s\n" % (
                g["gate"], g["reason"], (" " + g["message"]) if g.get("message") else ""))
    if args.out:
        atomic_write(args.out, text)
    if args.items:
        atomic_write(args.items, "".join(_item_lines(scorer, trec)))
    if args.markdown:
        atomic_write(args.markdown, render_markdown(report, _worst(scorer, trec)))
    sys.stdout.write(text)
    sys.stdout.flush()
    return 0 if all_pass else 1


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
    if f & F_GOLD:
        ret = {"RR": round(scorer.rr[i], 4)}
        for k in scorer.ks:
            ret["P@%d" % k] = round(scorer.hits[k][i] / k, 4)
            ret["R@%d" % k] = round(scorer.rec[k][i], 4)
            ret["nDCG@%d" % k] = round(scorer.ndcg[k][i], 4)
            ret["RR@%d" % k] = round(scorer.rrk[k][i], 4)
            ret["Success@%d" % k] = 1 if scorer.hits[k][i] else 0
        rec["retrieval"] = ret
    else:
        rec["retrieval"] = None
    return rec


def _item_lines(scorer: Scorer, trec: bool):
    for i in range(len(scorer.gold)):
        yield json.dumps(_item_record(scorer, i, trec), ensure_ascii=False, separators=(",", ":")) + "\n"


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
        with open(path, "rb") as fh:
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


def _read_partial(path: str) -> dict:
    try:
        with open(path, "rb") as fh:
            doc = json.loads(fh.read().decode("utf-8"))
    except OSError as exc:
        raise ScoreError("%s: cannot read: %s" % (path, exc.strerror)) from None
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
    return doc


def merge_partials(paths: List[str], args, ks: List[int], refusal: str, errors: "_Errors",
                   notes: List[str]):
    """``(gold, scorer, stats)`` of the union of the shards' rows (see the section comment)."""
    docs = [_read_partial(p) for p in paths]
    trec = bool(args.qrels)
    source = args.gold or args.qrels
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
    gold = read_qrels(source, errors) if trec else read_gold(source, args.by, errors, [])
    if errors.count:
        raise ScoreError(errors.text())
    if first["ks"] != ks:
        raise ScoreError("merge: the shards computed cutoffs %s, the gates need %s; run the shards with "
                         "--k %s" % (first["ks"], ks, ",".join(map(str, ks))))
    scorer = Scorer(gold, ks, refusal, None)
    slots = {(name, key): (cont, kind) for name, key, cont, kind in _per_item(scorer)}
    n = len(gold)
    seen = bytearray(n)
    rows = unknown = dup = 0
    unknown_ex: List[str] = []
    unknown_topics: set = set()
    dup_ex: List[str] = []
    # Notes made before the trace (chunks, gold) are the same in every shard: kept once.
    prefix = docs[0]["notes"]
    for d in docs[1:]:
        common = 0
        while common < min(len(prefix), len(d["notes"])) and prefix[common] == d["notes"][common]:
            common += 1
        prefix = prefix[:common]
    notes.extend(prefix)
    for d in docs:
        notes.extend(d["notes"][len(prefix):])
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
        for f in d["fields"]:
            key = (f["name"], f["key"])
            if key not in slots:
                raise ScoreError("%s: the partial holds %s%s, which this scorer does not have (another "
                                 "version wrote it?)" % (p, f["name"], "" if f["key"] is None else "[%s]" % f["key"]))
            cont, kind = slots[key]
            if kind == "array":
                values = _unpack(f["values"], p)
                if len(values) != len(items):
                    raise ScoreError("%s: %s holds %d values for %d items" % (p, f["name"], len(values), len(items)))
                for i, v in zip(items, values):
                    cont[i] = v
            else:
                for i in items:
                    cont.pop(i, None)
                for i, v in f["values"]:
                    cont[i] = v
    missing = 0
    i = seen.find(0)
    while i >= 0:
        missing += 1
        scorer.judge(i, None, None, None if not trec else [], None, None, None, None, False)
        i = seen.find(0, i + 1)
    if trec:
        unknown_ex = sorted(unknown_topics)
    stats = {"rows": rows, "unknown": unknown, "unknown_ex": unknown_ex[:5],
             "duplicates": dup, "duplicate_ex": dup_ex, "missing": missing}
    return gold, scorer, stats


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
    ap.add_argument("--dataset", help="as for a single run (default: the shards')")
    ap.add_argument("--max-errors", type=int, default=MAX_ERRORS, help="as for a single run")
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
        for a in ("gates", "gates_file", "baseline", "out", "markdown", "items", "max_errors"):
            setattr(args, a, getattr(margs, a))
        if margs.dataset is not None:
            args.dataset = margs.dataset
        args.merge = margs.partials
        return run(args)
    except ScoreError as exc:
        sys.stderr.write("%s\n" % exc)
        return 2
    except BrokenPipeError:
        return 1


def partial_main(args) -> int:
    """A shard run: ``run`` with a Scorer that records the rows' items (see --partial)."""
    global Scorer
    plain = Scorer
    Scorer = _RecordingScorer
    try:
        return run(args)
    finally:
        Scorer = plain


def main(argv: Optional[List[str]] = None) -> int:
    """The command line; returns the exit status and never raises on bad input."""
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["merge"]:
        return merge_main(argv[1:])
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:   # argparse already printed usage / help
        return exc.code if isinstance(exc.code, int) else 2
    try:
        return partial_main(args) if args.partial else run(args)
    except ScoreError as exc:
        sys.stderr.write("%s\n" % exc)
        return 2
    except BrokenPipeError:   # e.g. `| head`; nothing left to say
        return 1


if __name__ == "__main__":
    sys.exit(main())

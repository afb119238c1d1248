"""The gates file: dataset sections, gate tiers, [scorer] settings (patterns, readers, grounding),
[policy.*], [regression] and [weights]."""
from __future__ import annotations

import math
import os
import re
from functools import partial
from typing import Dict, NamedTuple

from .base import MAX_SMALL_FILE_BYTES, REFUSAL, ScoreError, TIERS
from .registry import F_CUTOFF, F_PROSE, REGISTRY, _PAIRED
from .fmt import _fmt_num
from .retrieval import MetricRef
from .trec import _trec_family
from .tomlsub import _parse_toml_lines
from .inputs import _show, open_input
from .citations import citation_pattern_problem
from .refusals import READERS
from .grounding import GROUNDING_MODES
from .names import parse_metric

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

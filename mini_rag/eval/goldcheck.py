"""Gold tooling: check gold files against the gold contract and the corpus they cite.

A gold file is JSONL, one question a line (seed 002's format plus ``category`` and
``expected_decision``; perturbed rows add ``source_qid`` and ``perturbation``)::

    {"qid": "POL-001", "question": "...", "answerable": true,
     "gold_claim_substr": ["90 days"], "gold_citations": ["retention-schedule#p4"],
     "category": "answerable_numeric", "expected_decision": "ANSWER", "notes": "..."}

Public API
==========

=====================================  ==============================================
``read_gold(path)``                    ``(rows, problems)``: every line parsed or
                                       reported, never stopping at the first bad one
``check_rows(path, rows, chunks, s)``  the problems of one file's rows
``check_files(paths, chunks, source)`` a :class:`Report` over several files
``unknown_citations(path, rows, ix, c)``  the citations naming no chunk of an index (eval)
``CATEGORY_RULES``                     documented category -> (answerable, decision)
=====================================  ==============================================

Checks, each reported as ``path:line: what is wrong, got <value>``
------------------------------------------------------------------

1. The line is UTF-8 (a byte-order mark and CRLF line ends are accepted) and one JSON
   object.
2. ``qid`` is a non-empty string, unique within its file; ``question`` a non-empty
   string; ``answerable`` true or false; ``gold_claim_substr`` and ``gold_citations``
   lists of strings.
3. Answerable items have at least one citation and at least one substring, and every
   substring has at least ``MIN_SUBSTR`` characters (5, the scorer's containment rule);
   unanswerable items have neither.
4. Every cited chunk id exists in the corpus (chunked by ``mini_rag.text.corpus``), is cited
   once, and every substring occurs, case-insensitively, in at least one cited chunk as an
   answer quotes it: a chunk of a Markdown or reST document read as plain text
   (``markup.plain_text``: answers are shipped without Markdown markup, so ``**must**`` in a
   substring never matches; the message says so), one of a text file or BEIR row as written.
5. ``category`` and ``expected_decision``, when present, are strings;
   ``expected_decision`` is one of ``DECISIONS``; ``answerable`` true goes with ANSWER
   and false with anything else; a category listed in ``docs/decision_policy.md``
   (``CATEGORY_RULES``) has that table's answerable value and decision.  Other category
   names are accepted: the checker works on any gold file.
6. A perturbed row (one with ``source_qid`` or ``perturbation``) has both, as non-empty
   strings; given the baseline file (``--source``), its ``source_qid`` is a qid there,
   its gold fields (``GOLD_FIELDS``) equal the source row's, and its question differs.

Problems are listed in file order, by line within a file, all of them.
"""
from __future__ import annotations

import difflib
import json
from typing import Container, Dict, List, NamedTuple, Optional, Sequence, Tuple

from ..errors import MiniRagError
from ..fileio import scan_jsonl
from ..text.markup import plain_text

MIN_SUBSTR = 5
DECISIONS = ("ANSWER", "ABSTAIN", "CLARIFY", "BLOCK")
GOLD_FIELDS = ("answerable", "gold_claim_substr", "gold_citations", "category", "expected_decision")

# docs/decision_policy.md, "Gold categories": category -> (answerable, expected_decision).
CATEGORY_RULES: Dict[str, Tuple[bool, str]] = {
    "answerable_direct": (True, "ANSWER"),
    "answerable_paraphrase": (True, "ANSWER"),
    "answerable_numeric": (True, "ANSWER"),
    "answerable_exception": (True, "ANSWER"),
    "answerable_partial": (True, "ANSWER"),
    "unanswerable_absent": (False, "ABSTAIN"),
    "unanswerable_near_miss": (False, "ABSTAIN"),
    "conflict": (False, "ABSTAIN"),
    "stale": (False, "ABSTAIN"),
    "ambiguous": (False, "CLARIFY"),
    "out_of_scope": (False, "ABSTAIN"),
}


class Problem(NamedTuple):
    path: str
    line: int
    message: str      # "what is wrong, got <value>"

    def __str__(self) -> str:
        return "%s:%d: %s" % (self.path, self.line, self.message)


class Report(NamedTuple):
    problems: List[Problem]
    files: int
    rows: int
    answerable: int
    categories: Dict[str, int]     # category -> rows ("(none)" for rows without one)

    def ok_line(self) -> str:
        cats = " ".join("%s=%d" % kv for kv in sorted(self.categories.items()))
        return ("check-gold: OK, %d file%s, %d rows, %d answerable; categories: %s"
                % (self.files, "" if self.files == 1 else "s", self.rows, self.answerable, cats or "-"))

    def problem_line(self) -> str:
        bad = len({p.path for p in self.problems})
        return ("check-gold: %d problem%s in %d of %d file%s (%d rows read)"
                % (len(self.problems), "" if len(self.problems) == 1 else "s", bad, self.files,
                   "" if self.files == 1 else "s", self.rows))


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# ---------------------------------------------------------------- reading

def read_gold(path: str) -> Tuple[List[Tuple[int, dict]], List[Problem]]:
    """``(line, object)`` for every good line and a Problem for every bad one.

    Raises MiniRagError only when the file cannot be read at all.
    """
    rows, bad = scan_jsonl(path, "a gold row", "gold file")
    return rows, [Problem(path, lineno, msg) for lineno, msg in bad]


# ---------------------------------------------------------------- checking

def _keys(row: dict) -> str:
    return "[%s]" % ", ".join(repr(k) for k in sorted(row))


def _hint(chunk_id: str, chunks: Dict[str, str]) -> str:
    """Where an unknown chunk id went wrong: the document's id range, or a close doc_id."""
    doc = chunk_id.split("#", 1)[0]
    ids = [c for c in chunks if c.split("#", 1)[0] == doc]
    if ids:
        return " (%s has %s to %s)" % (doc, ids[0], ids[-1])
    docs = sorted({c.split("#", 1)[0] for c in chunks})
    close = difflib.get_close_matches(doc, docs, n=1, cutoff=0.8)
    return " (no document %r; did you mean %r?)" % (doc, close[0]) if close else ""


def _is_str_list(v) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _nonempty_str(v) -> bool:
    return isinstance(v, str) and bool(v.strip())


def _cited_problems(subs: Optional[List[str]], cites: Optional[List[str]], chunks: Dict[str, str],
                    markup: Optional[Container[str]] = None) -> List[str]:
    """Check 4: every citation names a chunk, once; every substring is in a cited chunk's text as
    an answer quotes it (plain text for a chunk of a Markdown or reST document: ``markup``, its
    chunk ids; ``None``: every chunk)."""
    out: List[str] = []
    found = []
    seen = set()
    for c in cites or ():
        if c in seen:
            out.append("chunk cited twice in gold_citations, got %r" % c)
            continue
        seen.add(c)
        if c in chunks:
            found.append(plain_text(chunks[c]) if markup is None or c in markup else chunks[c])
        else:
            out.append("cited chunk is not in the corpus%s, got %r" % (_hint(c, chunks), c))
    if found:
        texts = [t.casefold() for t in found]
        raw = [chunks[c].casefold() for c in cites or () if c in chunks]
        for s in subs or ():
            if len(s.strip()) >= MIN_SUBSTR and not any(s.casefold() in t for t in texts):
                if any(s.casefold() in t for t in raw):
                    out.append("gold_claim_substr occurs in a cited chunk only with its Markdown markup; answers "
                               "are shipped as plain text, so write it without (%s), got %s"
                               % (_show(plain_text(s)), _show(s)))
                else:
                    out.append("gold_claim_substr occurs in no cited chunk (case-insensitive), got %s" % _show(s))
    return out


def _perturbed_problems(row: dict, source: Optional[Dict[str, dict]]) -> List[str]:
    """Check 6: a perturbed row has source_qid and perturbation; given the source file, its gold
    fields equal the source row's and its question differs."""
    out: List[str] = []
    if "source_qid" in row or "perturbation" in row:
        for key in ("source_qid", "perturbation"):
            if key not in row:
                out.append("a perturbed row needs both source_qid and perturbation, got no %s" % key)
            elif not _nonempty_str(row[key]):
                out.append("%s must be a non-empty string, got %s" % (key, _show(row[key])))
        src_qid = row.get("source_qid")
        if source is not None and _nonempty_str(src_qid):
            src = source.get(src_qid)
            if src is None:
                out.append("source_qid is not a qid of the source file, got %r" % src_qid)
            else:
                for key in GOLD_FIELDS:
                    if row.get(key) != src.get(key):
                        out.append("%s differs from source row %r (%s), got %s"
                                   % (key, src_qid, _show(src.get(key)), _show(row.get(key))))
                if row.get("question") == src.get("question"):
                    out.append("question is the same as source row %r's, got %s"
                               % (src_qid, _show(row.get("question"))))
    return out


def _check_row(row: dict, chunks: Dict[str, str],
               source: Optional[Dict[str, dict]], markup: Optional[Container[str]] = None) -> List[str]:
    """The problems of one row, as messages without the ``path:line:`` prefix."""
    out: List[str] = []
    for key in ("qid", "question"):
        if key not in row:
            out.append("missing key %r, got keys %s" % (key, _keys(row)))
        elif not _nonempty_str(row[key]):
            out.append("%s must be a non-empty string, got %s" % (key, _show(row[key])))
    answerable = row.get("answerable")
    if "answerable" not in row:
        out.append("missing key 'answerable', got keys %s" % _keys(row))
    elif not isinstance(answerable, bool):
        out.append("answerable must be true or false, got %s" % _show(answerable))
        answerable = None
    lists = {}
    for key in ("gold_claim_substr", "gold_citations"):
        if key not in row:
            out.append("missing key %r, got keys %s" % (key, _keys(row)))
        elif not _is_str_list(row[key]):
            out.append("%s must be a list of strings, got %s" % (key, _show(row[key])))
        else:
            lists[key] = row[key]
    subs, cites = lists.get("gold_claim_substr"), lists.get("gold_citations")

    # 3. answerable items carry gold, unanswerable ones none.
    if answerable is True:
        if cites is not None and not cites:
            out.append("an answerable item needs at least one gold_citations entry, got []")
        if subs is not None and not subs:
            out.append("an answerable item needs at least one gold_claim_substr, got []")
    elif answerable is False:
        if cites:
            out.append("an unanswerable item must have no gold_citations, got %s" % _show(cites))
        if subs:
            out.append("an unanswerable item must have no gold_claim_substr, got %s" % _show(subs))
    for s in subs or ():
        if len(s.strip()) < MIN_SUBSTR:
            out.append("gold_claim_substr must have at least %d characters, got %s" % (MIN_SUBSTR, _show(s)))

    # 4. citations exist; substrings occur in a cited chunk.
    out.extend(_cited_problems(subs, cites, chunks, markup))

    # 5. category and decision.
    category, decision = row.get("category"), row.get("expected_decision")
    if "category" in row and not _nonempty_str(category):
        out.append("category must be a non-empty string, got %s" % _show(category))
        category = None
    if "expected_decision" in row:
        if decision not in DECISIONS:
            out.append("expected_decision must be one of %s, got %s" % (", ".join(DECISIONS), _show(decision)))
            decision = None
        elif answerable is True and decision != "ANSWER":
            out.append("an answerable item must expect ANSWER, got %s" % _show(decision))
        elif answerable is False and decision == "ANSWER":
            out.append("an unanswerable item must not expect ANSWER, got %s" % _show(decision))
    if category in CATEGORY_RULES:
        want_ans, want_dec = CATEGORY_RULES[category]
        if isinstance(answerable, bool) and answerable != want_ans:
            out.append("category %r requires answerable %s (docs/decision_policy.md), got %s"
                       % (category, json.dumps(want_ans), json.dumps(answerable)))
        if decision is not None and "expected_decision" in row and decision != want_dec:
            out.append("category %r requires expected_decision %s (docs/decision_policy.md), got %s"
                       % (category, want_dec, _show(decision)))

    # 6. perturbed rows.
    out.extend(_perturbed_problems(row, source))
    return out


def check_rows(path: str, rows: Sequence[Tuple[int, dict]], chunks: Dict[str, str],
               source: Optional[Dict[str, dict]] = None, markup: Optional[Container[str]] = None) -> List[Problem]:
    """Problems of one file's parsed rows (duplicate qids included), by line.  ``markup``: the
    chunk ids of Markdown and reST documents, whose substrings are matched as plain text
    (``None``: every chunk's)."""
    problems: List[Problem] = []
    first: Dict[str, int] = {}
    for lineno, row in rows:
        qid = row.get("qid")
        if isinstance(qid, str) and qid.strip():
            if qid in first:
                problems.append(Problem(path, lineno, "duplicate qid, first used at line %d, got %r"
                                        % (first[qid], qid)))
            else:
                first[qid] = lineno
        for msg in _check_row(row, chunks, source, markup):
            problems.append(Problem(path, lineno, msg))
    return problems


def unknown_citations(path: str, rows: Sequence[Tuple[int, dict]], index, corpus: str) -> List[Problem]:
    """A Problem for every ``gold_citations`` entry of ``rows`` that names no chunk of
    ``index`` (``eval`` checks before answering: such a row could never be cited right, and
    the scorer would count it silently against the system).  Rows whose gold_citations is
    not a list of strings are left to the scorer's own check."""
    problems: List[Problem] = []
    ids: Optional[List[str]] = None
    for lineno, row in rows:
        cites = row.get("gold_citations")
        if not _is_str_list(cites):
            continue
        for c in cites:
            if index.position(c) >= 0:
                continue
            if ids is None:                     # only when one is missing: the corpus's ids, once
                ids = [ch.chunk_id for ch in index.chunks]
            hint = _hint(c, ids).strip()[1:-1]
            problems.append(Problem(path, lineno, "gold_citations names no chunk of the corpus %s (%s'search "
                                    "--scope DOC' lists a document's chunk ids), got %r"
                                    % (corpus, hint + "; " if hint else "", c)))
    return problems


def load_source(path: str) -> Dict[str, dict]:
    """qid -> row of a baseline gold file; a file that does not parse is an error."""
    rows, problems = read_gold(path)
    if problems:
        raise MiniRagError("\n".join(str(p) for p in problems)
                           + "\n%s: the --source file must parse cleanly" % path)
    out: Dict[str, dict] = {}
    for _, row in rows:
        qid = row.get("qid")
        if isinstance(qid, str) and qid not in out:
            out[qid] = row
    return out


def check_files(paths: Sequence[str], chunks: Dict[str, str],
                source: Optional[Dict[str, dict]] = None, markup: Optional[Container[str]] = None) -> Report:
    """Read and check every file; problems in file order, then by line (stable)."""
    problems: List[Problem] = []
    n_rows = n_ans = 0
    cats: Dict[str, int] = {}
    for path in paths:
        rows, bad = read_gold(path)
        found = bad + check_rows(path, rows, chunks, source, markup)
        if not rows and not bad:     # an empty gold set checks nothing: never "OK"
            found.append(Problem(path, 1, "no gold rows, got an empty file"))
        problems.extend(sorted(found, key=lambda p: p.line))
        for _, row in rows:
            n_rows += 1
            n_ans += row.get("answerable") is True
            cat = row.get("category")
            key = cat if isinstance(cat, str) and cat.strip() else "(none)"
            cats[key] = cats.get(key, 0) + 1
    return Report(problems, len(paths), n_rows, n_ans, cats)

"""The data contracts: gold rows, trace rows, chunks, TREC qrels and runs, each read into records
with their line numbers."""
from __future__ import annotations

import json
from array import array

from .base import DECISIONS, MAX_CATEGORIES, MAX_NUMBER_CHARS, NO_CATEGORY, ScoreError
from .registry import (F_ANS, F_EXPREF, F_GANS, F_GOLD, F_NOLAB, F_POLREJ, F_REQCLAR, F_REQCONF,
    F_REQDOCS, F_REQSTALE)
from .inputs import _Errors, _jsonl, _show, _str_list, _text_line_batches
from .config import SOURCE_POLICIES

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

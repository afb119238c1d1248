#!/usr/bin/env python3
"""Issue 41 item 3: refusal models that read the question, tried on both labelled sets (an experiment).

Usage: python3 bench/refusal_question.py        (MINI_RAG_DATA, or ../shared/data)

Nothing here is used by score_eval.py: no design below passed the bar to ship it (no held-out
figure worse than the committed reader's, on both sets); docs/refusals.md has the table and why.

Rows: the labelled RAG responses of bench/labels (refchecker: no question in the rows; evouna:
the NQ question) and chatgpt_refusals' ``refusal_strict`` (the prompt is the question; the
shared file holds the even ids: id number divisible by 4 = fit, the other even ids = held
out).  Fit rows: their fit halves (and, for the designs on every row, the written English rows
of tests/data/refusal_written.jsonl, as ``make fit-refusal`` does); held-out rows are read
once per design, after its choices were made on the fit rows.

Each design is a logistic regression (``fit_refusal.fit_logistic``, bias not penalised) over a
few dozen structural features (no word features), on the rows ``score_eval.weighed_layout``
gives the model (English, a decline or disclaimer first, then content; ``all`` designs: every
mixed English response).  Its penalty (0.3, 1, 3) and threshold (0.05 ... 0.95) are the pair
with the fewest 5-fold cross-validated errors on the fit rows (misses + answers refused, every
row not weighed read by the rules; ties: fewer answers refused, then the first penalty and
lowest threshold); folds by question as ``make fit-refusal`` (chatgpt: id number // 4).

Designs:
* ``all rows``: one model on every fit row (RefChecker's without a question).
* ``question rows``: the model reads only rows that carry a question (evouna, chatgpt_refusals);
  a row without one keeps score_eval's reader (so RefChecker's rows and the written set read
  as today).
* ``question residual``: as ``question rows``, the features added to the committed model: its
  logit (less its threshold's) is each row's fixed offset, the new weights and the bias are
  penalised (1, 3, 10, 30), the threshold is on that logit (-3.0 ... 3.0 by 0.1).

Features (``question_features``): score_eval.refusal_features' structural ones; the number of
sentences; where the last decline sits; the share of sentences, and of words, that are content
after the first decline; content sentences that address the reader ("you") or speak of the
system ("I"); with ``lecture``, content sentences that lecture (LECTURE_RX); and with a
question: the share of its content words (6-letter stems) found in the content after the
decline and in the declines, the share of content sentences after the decline that share one,
whether the content holds what the question asks for (``question_kind``: a number for "how
many", a year or month for "when", a name for "who/where/which", a "yes"/"no" for a yes-no
question) and, for a request ("write ...", "explain ..."), how long the content after the
decline is.
"""
from __future__ import annotations

import json
import math
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

import bench_refusal as br  # noqa: E402
import fit_refusal as fr  # noqa: E402
import refusal_data as rd  # noqa: E402
import score_eval as se  # noqa: E402
from referee.lexicon import STOPWORDS  # noqa: E402

_WORD_RX = re.compile(r"[a-z0-9][a-z0-9'\u2019]+")
_YEAR_RX = re.compile(r"\b(?:1[0-9]{3}|20[0-9]{2})s?\b")
_MONTH_RX = re.compile(r"\b(?:january|february|march|april|may|june|july|august|september|october|november|december)\b", re.I)
_NUMBER_RX = re.compile(r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|hundred|thousand|"
                        r"million|billion|dozen|half)\b", re.I)
_NAME_RX = re.compile(r"(?<=[a-z,;:)] )[A-Z][a-z]+|^[A-Z][a-z]+ [A-Z][a-z]+")
_YESNO_RX = re.compile(r"^(?:yes|no)\b", re.I)
_YESNO_Q_RX = re.compile(r"^(?:is|are|was|were|do|does|did|can|could|should|would|will|has|have|had|am)\b", re.I)
_REQUEST_Q_RX = re.compile(r"^(?:please )?(?:write|create|generate|compose|draft|make|give|tell|list|describe|explain|"
                           r"summarize|summarise|provide|imagine|pretend|act|rewrite|translate|help)\b", re.I)
_NUMBER_Q_RX = re.compile(r"^(?:how (?:many|much|long|old|far|tall|big|often)|what (?:percentage|number|amount))\b")
_DATE_Q_RX = re.compile(r"^(?:when|what (?:year|date|day|month|time|century))\b")
_NAME_Q_RX = re.compile(r"^(?:who|whom|whose|where|which)\b")
_YOU_RX = re.compile(r"\b(?:you|your|yourself)\b", re.I)
_SELF_RX = re.compile(r"\b(?:i|i'm|i\u2019m|my|me)\b", re.I)
LECTURE_RX = re.compile(r"\b(?:should|important|appropriate|inappropriate|respect|respectful|ethical|unethical|harmful|"
                        r"harm|offensive|encourage|recommend)\b", re.I)
PENALTIES = (0.3, 1.0, 3.0)
RESIDUAL_PENALTIES = (1.0, 3.0, 10.0, 30.0)
RESIDUAL_THRESHOLDS = [round(-3.0 + 0.1 * i, 1) for i in range(61)]     # logit above the committed boundary


def content_stems(text: str) -> list:
    """The content words of ``text`` (lower-cased, >= 3 characters, not STOPWORDS), as their first 6 letters."""
    return [w[:6] for w in _WORD_RX.findall(text.lower()) if w not in STOPWORDS and len(w) >= 3]


def question_kind(question: str) -> str:
    """What the question asks for: number, date, name, yesno, request, explain, what or other."""
    q = question.strip().lower()
    if _NUMBER_Q_RX.match(q):
        return "number"
    if _DATE_Q_RX.match(q):
        return "date"
    if _NAME_Q_RX.match(q):
        return "name"
    if _YESNO_Q_RX.match(q):
        return "yesno"
    if _REQUEST_Q_RX.match(q):
        return "request"
    if re.match(r"^(?:why|how)\b", q):
        return "explain"
    return "what" if re.match(r"^what\b", q) else "other"


def kind_found(kind: str, sents: list):
    """Whether ``sents`` hold what a question of ``kind`` asks for (None: a kind with no such test)."""
    s = " ".join(sents)
    if kind == "number":
        return bool(_NUMBER_RX.search(s))
    if kind == "date":
        return bool(_YEAR_RX.search(s) or _MONTH_RX.search(s))
    if kind == "name":
        return bool(_NAME_RX.search(s) or any(_NAME_RX.search(x) for x in sents))
    if kind == "yesno":
        return any(_YESNO_RX.match(x) for x in sents)
    return None


def _share(sents: list, rx) -> float:
    return sum(1 for s in sents if rx.search(s)) / len(sents) if sents else 0.0


def question_features(sents: list, kinds: list, question, lecture: bool = False) -> dict:
    """The features of a mixed response (refusal_layout's sentences and kinds; at least one
    decline or disclaimer) for the designs above; ``question``: the row's question or None."""
    f = {k: v for k, v in se.refusal_features(sents, kinds).items() if ":" not in k}
    core = [(s, k) for s, k in zip(sents, kinds) if k != "M"]
    con = [s for s, k in core if k == "C"]
    dec = [s for s, k in core if k in "DK"]
    n = len(core)
    first = next((i for i, (_, k) in enumerate(core) if k in "DK"), 0)
    last = max(i for i, (_, k) in enumerate(core) if k in "DK")
    after = [s for s, k in core[first + 1:] if k == "C"]
    f["n_core"] = min(n, 20) / 20.0
    f["last_decline_pos"] = last / max(n - 1, 1)
    f["after_share"] = len(after) / n
    words_after = sum(len(_WORD_RX.findall(s)) for s in after)
    words_all = sum(len(_WORD_RX.findall(s)) for s, _ in core)
    f["after_word_share"] = words_after / words_all if words_all else 0.0
    f["content_you"] = _share(con, _YOU_RX)
    f["content_self"] = _share(con, _SELF_RX)
    if lecture:
        f["content_norm"] = _share(con, LECTURE_RX)
    if question:
        f.update(_asked(after, dec, question, words_after))
    return f


def _asked(after: list, dec: list, question: str, words_after: int) -> dict:
    f = {"has_q": 1.0}
    qw = set(content_stems(question))
    if qw:
        f["q_cover_after"] = len(qw & set(content_stems(" ".join(after)))) / len(qw)
        f["q_cover_decline"] = len(qw & set(content_stems(" ".join(dec)))) / len(qw)
        f["q_sent_share"] = (sum(1 for s in after if qw & set(content_stems(s))) / len(after)) if after else 0.0
    kind = question_kind(question)
    got = kind_found(kind, after)
    if got is not None:
        f["q_type_found"] = 1.0 if got else 0.0
        f["q_type_missing"] = 0.0 if got else 1.0
    if kind == "request":
        f["q_request"] = 1.0
        f["q_request_long"] = min(words_after, 300) / 300.0
    return f


# ---- rows
def _num(rid: str) -> int:
    return int(rid.rsplit("-", 1)[1])


def labels_rows(split: str) -> list:
    """bench/labels rows of ``split`` (fit / dev): src, id, text, question (evouna) or None, y."""
    questions = {}
    with open(os.path.join(rd.DATA, rd.SETS["evouna"][0]), encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            questions[r["id"]] = r["question"]
    return [{"src": name, "id": rid, "text": text, "q": questions.get(rid), "y": label == "refusal",
             "fold": fr.group_of(rid) % fr.FOLDS}
            for name in sorted(rd.SETS) for rid, _, text, label in rd.labelled(name, split)]


def chatgpt_rows(half: str) -> list:
    """chatgpt_refusals' refusal_strict rows of ``half`` (fit: id number divisible by 4; held: the other even ids)."""
    rest = 0 if half == "fit" else 2
    with open(os.path.join(rd.DATA, fr.CHATGPT), encoding="utf-8") as fh:
        data = [json.loads(line) for line in fh if line.strip()]
    return [{"src": "chatgpt", "id": r["id"], "text": r["text"], "q": r["prompt"], "y": bool(r["refusal_strict"]),
             "fold": (_num(r["id"]) // 4) % fr.FOLDS}
            for r in data if _num(r["id"]) % 4 == rest and r["refusal_strict"] is not None]


def written_rows() -> list:
    return [{"src": "written", "id": "w%d" % n, "text": r["text"], "q": None, "y": r["label"] == "refusal",
             "fold": n % fr.FOLDS} for n, r in enumerate(rd.written()) if r["lang"] == "en"]


# ---- fitting and figures
def prepare(rows: list, feats) -> list:
    """Each row with ``weighed`` (the model decides it), ``feats`` and ``rule`` (the rules' verdict)."""
    out = []
    for r in rows:
        case, sents, kinds, _ = se.refusal_layout(r["text"])
        weighed = se.weighed_layout(case, sents, kinds, fr.ENGLISH)
        out.append(dict(r, weighed=weighed, feats=feats(sents, kinds, r["q"]) if weighed else None,
                        structural=se.refusal_features(sents, kinds) if weighed else None,
                        rule=se.read_refusal(r["text"], model=fr.REFUSAL_OFF)[0] == "refusal"))
    return out


def train(rows: list, l2: float, residual: bool = False) -> dict:
    """The model of ``rows``' features; ``residual``: fitted on top of the committed model (its
    logit, less its threshold's, is each row's offset; its 17 features are left out here)."""
    vocab = sorted(set(k for r in rows for k in _own(r["feats"], residual)))
    index = {k: i for i, k in enumerate(vocab)}
    xs = [sorted((index[k], v) for k, v in _own(r["feats"], residual).items() if v) for r in rows]
    ys = [1.0 if r["y"] else 0.0 for r in rows]
    if residual:
        bias, weights = fit_offset(xs, [committed_offset(r) for r in rows], ys, l2)
    else:
        bias, weights = fr.fit_logistic(xs, ys, l2)
    return {"bias": bias, "weights": dict(zip(vocab, weights)), "residual": residual}


def _own(feats: dict, residual: bool) -> dict:
    return {k: v for k, v in feats.items() if k not in STRUCTURAL} if residual else feats


def _logit(p: float) -> float:
    return math.log(p / (1.0 - p))


def committed_offset(r: dict) -> float:
    """The committed model's logit of a weighed row less its threshold's: 0 on its decision boundary."""
    return _logit(se.refusal_score(r["structural"])) - _logit(se.REFUSAL_MODEL["threshold"])


def fit_offset(xs, offsets, ys, l2: float, iters: int = 30):
    """(bias, weights) of an L2-penalised logistic regression with a fixed offset per row, Newton;
    the bias is penalised too (the fit stays near the offset's model)."""
    d = 1 + max((i for x in xs for i, _ in x), default=-1) + 1
    w = [0.0] * d
    for _ in range(iters):
        g = [0.0] * d
        h = [[0.0] * d for _ in range(d)]
        for x, off, y in zip(xs, offsets, ys):
            xx = [(0, 1.0)] + [(i + 1, v) for i, v in x]
            p = 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, off + math.fsum(w[i] * v for i, v in xx)))))
            for i, vi in xx:
                g[i] += (p - y) * vi
                for j, vj in xx:
                    h[i][j] += p * (1 - p) * vi * vj
        for i in range(d):
            g[i] += l2 * w[i]
            h[i][i] += l2
        step = fr._solve(h, g)
        w = [a - b for a, b in zip(w, step)]
        if max(abs(x) for x in step) < 1e-10:
            break
    return w[0], w[1:]


def score(r: dict, model: dict) -> float:
    """The probability of a refusal; for a residual model, the logit above the committed boundary."""
    z = model["bias"] + sum(model["weights"].get(k, 0.0) * v for k, v in _own(r["feats"], model["residual"]).items())
    if model["residual"]:
        return committed_offset(r) + z
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))


def verdict(r: dict, p, t: float) -> bool:
    return (p >= t) if r["weighed"] else r["rule"]


def cross_validate(rows: list, l2: float, residual: bool) -> list:
    probs = [None] * len(rows)
    for k in range(fr.FOLDS):
        model = train([r for r in rows if r["weighed"] and r["fold"] != k], l2, residual)
        for n, r in enumerate(rows):
            if r["weighed"] and r["fold"] == k:
                probs[n] = score(r, model)
    return probs


def choose(rows: list, residual: bool = False):
    """(penalty, threshold, out-of-fold scores) with the fewest cross-validated errors."""
    best = None
    for l2 in (RESIDUAL_PENALTIES if residual else PENALTIES):
        probs = cross_validate(rows, l2, residual)
        for t in (RESIDUAL_THRESHOLDS if residual else fr.THRESHOLDS):
            miss = sum(1 for r, p in zip(rows, probs) if r["y"] and not verdict(r, p, t))
            fp = sum(1 for r, p in zip(rows, probs) if not r["y"] and verdict(r, p, t))
            if best is None or (miss + fp, fp) < best[0]:
                best = ((miss + fp, fp), l2, t, probs)
    return best[1], best[2], best[3]


def rate(pairs) -> tuple:
    """(recall, answers refused, missed, refused answers, refusals, answers) of (label, verdict) pairs."""
    pos = sum(1 for y, _ in pairs if y)
    neg = len(pairs) - pos
    tp = sum(1 for y, v in pairs if y and v)
    fp = sum(1 for y, v in pairs if v and not y)
    return tp / pos, fp / neg, pos - tp, fp, pos, neg


def structural(sents: list, kinds: list, question) -> dict:
    """score_eval.refusal_features without its word features (the 17 of the committed model)."""
    return {k: v for k, v in se.refusal_features(sents, kinds).items() if ":" not in k}


DESIGNS = (     # (name, rows the model reads: "all" or "question" (+ " residual"), features)
    ("all rows: structural (the reader's 17 features), refitted", "all", structural),
    ("all rows: + layout and question features", "all", question_features),
    ("all rows: + layout, question and lecture features", "all",
     lambda s, k, q: question_features(s, k, q, lecture=True)),
    ("question rows: structural (17 features)", "question", structural),
    ("question rows: + layout and question features", "question", question_features),
    ("question rows: + layout, question and lecture features", "question",
     lambda s, k, q: question_features(s, k, q, lecture=True)),
    ("question rows: the committed model + layout and question features (residual)", "question residual",
     question_features),
)
STRUCTURAL = frozenset(se.REFUSAL_MODEL["weights"])     # the committed model's 17 features


def reader(r: dict) -> bool:
    return se.read_refusal(r["text"])[0] == "refusal"


def run_design(feats, rows_read: str, fit: dict, held: dict, written: list) -> dict:
    """Penalty, threshold and the figures of one design: cross-validated on each fit set, then
    the final model (refitted on every fit row it reads) once on each held-out set and the written rows."""
    reads = (lambda r: True) if rows_read == "all" else (lambda r: r["q"] is not None)
    residual = rows_read.endswith("residual")
    train_rows = [r for name in sorted(fit) for r in fit[name] if reads(r)] + (written if rows_read == "all" else [])
    rows = prepare(train_rows, feats)
    l2, t, probs = choose(rows, residual)
    model = train([r for r in rows if r["weighed"]], l2, residual)
    oof = {(r["src"], r["id"]): verdict(r, p, t) for r, p in zip(rows, probs)}
    out = {"penalty": l2, "threshold": t}
    for name, part in sorted(fit.items()):
        out["fit " + name] = rate([(r["y"], oof[(r["src"], r["id"])] if reads(r) else reader(r)) for r in part])

    def final(r):
        if not reads(r):
            return reader(r)
        p = prepare([r], feats)[0]
        return verdict(p, score(p, model) if p["weighed"] else None, t)
    for name, part in sorted(held.items()):
        out["held " + name] = rate([(r["y"], final(r)) for r in part])
    out["written"] = rate([(r["y"], final(r)) for r in written])
    return out


def baseline(fn, fit: dict, held: dict, written: list) -> dict:
    out = {"fit " + k: rate([(r["y"], fn(r)) for r in v]) for k, v in fit.items()}
    out.update({"held " + k: rate([(r["y"], fn(r)) for r in v]) for k, v in held.items()})
    out["written"] = rate([(r["y"], fn(r)) for r in written])
    return out


COLUMNS = ("fit labels", "fit chatgpt", "held labels", "held chatgpt", "written")


def _cell(f: tuple) -> str:
    return "%.3f / %.3f (%d, %d)" % f[:4]


def table() -> str:
    fit = {"labels": labels_rows("fit"), "chatgpt": chatgpt_rows("fit")}
    held = {"labels": labels_rows("dev"), "chatgpt": chatgpt_rows("held")}
    written = written_rows()
    lines = ["| design | penalty | threshold | bench/labels fit (CV) | chatgpt_refusals fit (CV) | bench/labels dev "
             "(held out) | chatgpt_refusals held out | written English rows |", "|---|---|---|---|---|---|---|---|"]
    for name, fn in (("score_eval reader (committed)", reader), ("prefix list (baseline)", lambda r: br.prefix(r["text"]) == "refusal")):
        f = baseline(fn, fit, held, written)
        lines.append("| %s | | | %s |" % (name, " | ".join(_cell(f[c]) for c in COLUMNS)))
    for name, rows_read, feats in DESIGNS:
        f = run_design(feats, rows_read, fit, held, written)
        lines.append("| %s | %s | %s | %s |" % (name, f["penalty"], f["threshold"], " | ".join(_cell(f[c]) for c in COLUMNS)))
        sys.stderr.write(".")
        sys.stderr.flush()
    sys.stderr.write("\n")
    return "\n".join(lines) + "\n"


def main() -> int:
    if not (rd.available("refchecker") and rd.available("evouna") and os.path.exists(os.path.join(rd.DATA, fr.CHATGPT))):
        print("refusal_question: %s not found: skipped" % rd.DATA)
        return 0
    sys.stdout.write("cells: recall / answers refused (refusals missed, answers refused)\n\n" + table())
    return 0


if __name__ == "__main__":
    sys.exit(main())

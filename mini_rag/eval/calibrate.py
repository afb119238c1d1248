"""Calibration: the answer/refuse operating point chosen on a sample of the user's questions (issue 43).

``python -m mini_rag calibrate --gold G`` (:mod:`mini_rag.commands.cmd_calibrate`) answers a
small labelled sample of the user's own questions (20 to 100 is the intended size) at every
candidate operating point, scores each with ``score_eval.py`` under the user's gates, and
writes the chosen point into a config (:mod:`mini_rag.calibration`).

=========================================  ===============================================
``candidate_points(mode, default)``        the candidate ``[answer]`` values of a mode
``default_point(mode)``                    the committed point of a mode
``mode_of(config)``                        which decision a config's answers go through
``read_sample(path)``                      the labelled sample (every row needs
                                           ``answerable``: true or false); file:line errors
``sample_rows(pipelines, gold, mode, pts)`` the trace rows of every candidate point
``score_point(...)``                       one point's figures and gate verdict (the scorer)
``choose(table, default)``                 the chosen row of the table (the objective)
``figures(metrics)``                       the figures written into the config
=========================================  ===============================================

**Candidates.**  With ``[answer] answerability = false`` (the default) the decision is phase
C's rules, and the candidates are the grid :data:`RULE_GRID` of its two coverage thresholds
(``min_key_coverage``: the idf share of the question's key terms the evidence chunk must hold;
``min_question_share``: the share of all its terms).  With the fitted answerability model on,
the candidates are its threshold from 0 to 0.8 in steps of 0.02 (:data:`THRESHOLDS`), under the
key of the model that decides (``answerability_threshold``, or ``answerability_embed_threshold``
with embeddings).  A rule point is answered afresh; the model's points come from one run at
threshold 0: a question ships at ``t`` when it shipped at 0 and its probability (rounded to 4
places in the answer's detail) is at least ``t``, since the chosen sentence and the guards do not
depend on the threshold.

**Objective** (:func:`choose`).  Among the points whose figures pass every blocking gate of the
user's gates file, the one of highest pass rate; when none passes (the usual case on a corpus
whose questions the rules answer badly), the one of highest pass rate all the same, and the
config says that no point passed.  Ties go to the committed default point, then to the point
nearest it (the sum of the differences of its values), then to the earlier candidate.  Pass
rate counts an answerable question answered with a gold claim and citation and an unanswerable
question refused: the user's own mix of the two weighs the two kinds of error.

The figures written are the scorer's, each ``{value, count, n, low, high}`` with its Wilson 95%
interval: on 50 questions a pass rate of 0.6 has an interval of about +-0.13, which is the
honest size of what a sample that small can promise.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..calibration import POINT_KEYS
from ..errors import MiniRagError
from ..fileio import atomic_write_text, dumps_jsonl, scorer
from .evaluate import read_gold

__all__ = ["RULE_GRID", "THRESHOLDS", "FIGURES", "MIN_SAMPLE", "MAX_SAMPLE", "candidate_points", "default_point", "mode_of",
           "read_sample", "sample_rows", "cut_rows", "score_point", "choose", "figures", "OBJECTIVE"]

#: phase C's coverage thresholds: every pair is a candidate (the committed point, 0.7 / 0.3, among them).
RULE_GRID = {"min_key_coverage": (0.4, 0.5, 0.6, 0.7, 0.8, 0.9),
             "min_question_share": (0.2, 0.3, 0.4, 0.5)}
#: The answerability model's threshold: 0.00, 0.02, ..., 0.80.
THRESHOLDS = tuple(round(0.02 * i, 2) for i in range(41))
#: The figures of a point (the scorer's metric names), in the order they are shown.
FIGURES = ("pass_rate", "precision", "chr", "under_refusal", "over_refusal")
MIN_SAMPLE = 20
MAX_SAMPLE = 1000
OBJECTIVE = ("highest pass rate among the points passing every blocking gate; when none passes, highest pass "
             "rate; ties: the committed point, then the nearest to it")


def mode_of(config: Dict[str, Any]) -> str:
    """``"rules"``, or with ``[answer] answerability`` on the model that decides
    (``"model"`` or ``"model+embed"``; loads the encoder when one is configured)."""
    if not config["answer"].get("answerability", False):
        return "rules"
    from ..answer.answerability import deciding_model
    return deciding_model(config)


def default_point(mode: str) -> Dict[str, float]:
    """The committed operating point of ``mode``: the rules' thresholds of ``config.DEFAULTS``, or
    the threshold fitted into the model's file."""
    if mode == "rules":
        from ..config import DEFAULTS
        return {k: float(DEFAULTS["answer"][k]) for k in POINT_KEYS["rules"]}
    from ..answer import answerability
    path = answerability.EMBED_MODEL_PATH if mode == "model+embed" else answerability.MODEL_PATH
    return {POINT_KEYS[mode][0]: float(answerability.load_model(path).threshold)}


def candidate_points(mode: str, default: Optional[Dict[str, float]] = None) -> List[Dict[str, float]]:
    """The candidate ``[answer]`` values of ``mode``, in a fixed order: :data:`RULE_GRID` or
    :data:`THRESHOLDS`, with ``default`` (the committed point) in its place when it is not on them."""
    if mode == "rules":
        points = [{"min_key_coverage": k, "min_question_share": q}
                  for k in RULE_GRID["min_key_coverage"] for q in RULE_GRID["min_question_share"]]
    else:
        (key,) = POINT_KEYS[mode]
        points = [{key: t} for t in THRESHOLDS]
    if default is not None and default not in points:
        points = sorted(points + [dict(default)], key=lambda p: tuple(p[k] for k in sorted(p)))
    return points


def read_sample(path: str) -> List[Tuple[int, dict]]:
    """The labelled sample: gold rows (``read_gold``'s checks) each with ``answerable`` true or
    false (and ``doc_scope``, when given, a document id), at least :data:`MIN_SAMPLE` and at most :data:`MAX_SAMPLE` of them, both kinds present.
    Every bad row is reported as ``path:line: ...`` (MiniRagError, exit 2)."""
    rows = read_gold(path)
    errors = []
    for line, row in rows:
        if not isinstance(row.get("answerable"), bool):
            errors.append("%s:%d: answerable must be true or false (calibration needs every question labelled), "
                          "got %s" % (path, line, json.dumps(row.get("answerable"))))
        scope = row.get("doc_scope")
        if scope is not None and not (isinstance(scope, str) and scope):
            errors.append("%s:%d: doc_scope must be a non-empty string, got %s" % (path, line, json.dumps(scope)))
    if errors:
        raise MiniRagError("\n".join(errors))
    if not MIN_SAMPLE <= len(rows) <= MAX_SAMPLE:
        raise MiniRagError("%s: calibration needs %d to %d labelled questions, got %d"
                           % (path, MIN_SAMPLE, MAX_SAMPLE, len(rows)))
    kinds = {row["answerable"] for _, row in rows}
    if len(kinds) < 2:
        raise MiniRagError("%s: calibration needs answerable and unanswerable questions, got only %s ones"
                           % (path, "answerable" if True in kinds else "unanswerable"))
    return rows


def cut_rows(rows: Sequence[dict], probs: Sequence[Optional[float]], t: float, refusal: str) -> List[dict]:
    """The model's rows at threshold ``t`` from its rows at threshold 0: a row whose probability
    is below ``t`` is refused (ABSTAIN, the refusal text, no citation)."""
    out = []
    for row, p in zip(rows, probs):
        if p is not None and p < t:
            row = dict(row, answer_json={"claim": refusal, "citations": []}, decision="ABSTAIN")
        out.append(row)
    return out


def sample_rows(pipeline_for: Callable[[Dict[str, float]], Any], gold: Sequence[Tuple[int, dict]], mode: str,
                points: Sequence[Dict[str, float]], refusal: str) -> List[List[dict]]:
    """The trace rows of the sample at each point.  ``pipeline_for(values)``: a pipeline whose
    config has those ``[answer]`` values.  Rules: one run per point; a model: one run at
    threshold 0, cut at each point (:func:`cut_rows`)."""
    def run(pipe) -> Tuple[List[dict], List[Optional[float]]]:
        rows, probs = [], []
        for _, g in gold:
            res = pipe.answer(g["question"], qid=g.get("qid", g.get("q_id")), doc_scope=g.get("doc_scope"))
            rows.append(res.row)
            probs.append(res.answer.detail.get("answerability"))
        return rows, probs
    if mode == "rules":
        return [run(pipeline_for(p))[0] for p in points]
    (key,) = POINT_KEYS[mode]
    rows, probs = run(pipeline_for({key: 0.0}))
    return [cut_rows(rows, probs, p[key], refusal) for p in points]


def score_point(gold_path: str, rows: Sequence[dict], work: str, tag: str, gates: str, dataset: str,
                refusal: str) -> Dict[str, Any]:
    """Score one point's rows with ``score_eval.py`` (in this process) under ``gates`` (a file,
    or ``"none"``): ``{"metrics": {name: {value, count, n, ci}}, "passes": bool, "failed": [...]}``."""
    trace = os.path.join(work, "trace.%s.jsonl" % tag)
    report = os.path.join(work, "report.%s.json" % tag)
    atomic_write_text(trace, dumps_jsonl(rows))
    argv = ["--gold", gold_path, "--trace", trace, "--dataset", dataset, "--k", "5", "--out", report,
            "--refusal", refusal]
    argv += ["--gates", "none"] if gates == "none" else ["--gates-file", gates]
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        status = scorer().main(argv)
    if status not in (0, 1):
        raise MiniRagError("score_eval.py exited with status %d scoring %s:\n%s" % (status, trace, err.getvalue().strip()))
    with open(report, encoding="utf-8") as fh:
        rep = json.load(fh)
    metrics = {m: {k: rep["metrics"][m].get(k) for k in ("value", "count", "n", "ci")}
               for m in FIGURES if m in rep.get("metrics", {})}
    failed = [g.get("reason") or g.get("gate") for g in rep.get("gate_results") or []
              if not g.get("pass") and g.get("tier", "block") == "block"]
    return {"metrics": metrics, "passes": not failed, "failed": failed}


def _distance(point: Dict[str, float], default: Dict[str, float]) -> float:
    return sum(abs(v - default.get(k, v)) for k, v in point.items())


def choose(table: Sequence[Dict[str, Any]], default: Dict[str, float]) -> int:
    """The index of the chosen row of ``table`` (rows ``{"point", "metrics", "passes"}``): see the
    module docstring's objective.  A pass rate that was not measured counts as -1."""
    if not table:
        raise ValueError("choose: no candidate point")

    def key(i: int):
        row = table[i]
        pr = (row["metrics"].get("pass_rate") or {}).get("value")
        return (0 if row["passes"] else 1, -(pr if pr is not None else -1.0),
                0 if row["point"] == default else 1, round(_distance(row["point"], default), 9), i)
    return min(range(len(table)), key=key)


def figures(metrics: Dict[str, Dict[str, Any]]) -> Dict[str, Dict[str, Any]]:
    """The scorer's figures as ``[calibration.expected]`` writes them: ``{value, count, n, low,
    high}`` (value and interval left out when the metric was not measurable on the sample)."""
    out = {}
    for m in FIGURES:
        f = metrics.get(m)
        if not f:
            continue
        entry: Dict[str, Any] = {}
        if f.get("value") is not None:
            entry["value"] = round(float(f["value"]), 4)
        entry["count"] = int(f.get("count") or 0)
        entry["n"] = int(f.get("n") or 0)
        if f.get("ci"):
            entry["low"], entry["high"] = round(float(f["ci"][0]), 4), round(float(f["ci"][1]), 4)
        out[m] = entry
    return out

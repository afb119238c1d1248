#!/usr/bin/env python3
"""Bench: score_eval.py's answer_correct against people's judgments (EVOUNA-NQ).

Usage: python3 bench/bench_answer_correct.py [--data FILE] [--fit] [--ablate] [--docs FILE]

Data: ../shared/data/evouna_nq/nq.jsonl (15,428 answers of five QA systems to 3,178 NQ
questions, each judged correct or not by people; see its SOURCE.md).  Nothing from it is
copied into the repository: this script reads it where it lies.

Split by question: the number at the end of ``qid`` ("evouna-nq-<n>") even = fit half, odd =
held-out half.  Every choice of the rule (its numbers, which normalisations stay) is made on
the fit half; the held-out half is only reported (and, for the ablation, checked not to get
worse when a normalisation is kept).

- default: the rule as shipped in score_eval.py (ANSWER_PREFIX, ANSWER_PART, ANSWER_PART_MIN,
  every normalisation of ANSWER_NORMS) on both halves, per model, next to the plain substring
  rule (upstream EVOUNA ``lexical_match``: SQuAD-normalised gold is a substring of the
  SQuAD-normalised answer).
- ``--fit``: grid over the rule's numbers on the fit half; prints the fit-half figures of each
  and the choice: the highest fit agreement among settings whose fit precision of "correct" is
  at least 0.97 (the acceptance bar).  The chosen numbers are the constants in
  score_eval.py.
- ``--ablate``: each normalisation switched off in turn (fit and held-out).
- ``--docs FILE``: rewrites the generated section of FILE (docs/answer_correctness.md) between
  ``<!-- bench-answer-correct:begin -->`` and ``<!-- bench-answer-correct:end -->``.

Exit status 0; 2 when the data file is missing.
"""
import argparse
import json
import re
import string
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import score_eval as se  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "evouna_nq" / "nq.jsonl"
MODELS = ("fid", "gpt35", "chatgpt", "gpt4", "newbing")
BEGIN, END = "<!-- bench-answer-correct:begin -->", "<!-- bench-answer-correct:end -->"
MIN_FIT_PRECISION = 0.97


def load(path: Path):
    with path.open(encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    fit = [r for r in rows if int(r["qid"].rsplit("-", 1)[1]) % 2 == 0]
    held = [r for r in rows if int(r["qid"].rsplit("-", 1)[1]) % 2 == 1]
    return fit, held


_PUNCT = set(string.punctuation)
_ART = re.compile(r"\b(a|an|the)\b")


def squad_norm(s: str) -> str:
    s = s.lower()
    s = "".join(ch for ch in s if ch not in _PUNCT)
    s = _ART.sub(" ", s)
    return " ".join(s.split())


def substring_rule(r) -> bool:
    a = squad_norm(r["answer"])
    return any(squad_norm(g) in a for g in r["gold_answers"] if squad_norm(g))


def our_rule(norms=se._ALL_NORMS, partial=True):
    def pred(r) -> bool:
        return se.match_answer(r["answer"], r["gold_answers"], r["question"], norms, partial).correct
    return pred


def confusion(rows, pred):
    tp = fp = fn = tn = 0
    for r in rows:
        p, h = pred(r), r["human_correct"]
        if p and h:
            tp += 1
        elif p:
            fp += 1
        elif h:
            fn += 1
        else:
            tn += 1
    n = tp + fp + fn + tn
    return {"n": n, "agreement": (tp + tn) / n if n else None,
            "precision": tp / (tp + fp) if tp + fp else None,
            "recall": tp / (tp + fn) if tp + fn else None}


def per_model(rows, pred):
    out = {"all": confusion(rows, pred)}
    for m in MODELS:
        out[m] = confusion([r for r in rows if r["model"] == m], pred)
    return out


def _f(v, places: int = 3) -> str:
    return "-" if v is None else "%.*f" % (places, v)


def table(title: str, ours: dict, base: dict) -> str:
    lines = ["%s" % title, "",
             "| model | answers | agreement | precision of correct | recall of correct | substring agreement "
             "| substring precision | substring recall |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for m in ("all",) + MODELS:
        o, b = ours[m], base[m]
        lines.append("| %s | %d | %s | %s | %s | %s | %s | %s |" % (
            m, o["n"], _f(o["agreement"]), _f(o["precision"]), _f(o["recall"]),
            _f(b["agreement"]), _f(b["precision"]), _f(b["recall"])))
    return "\n".join(lines) + "\n"


def fit_grid(fit):
    saved = (se.ANSWER_PREFIX, se.ANSWER_PART, se.ANSWER_PART_MIN)
    results = []
    try:
        for prefix in (0, 4, 5, 6):
            for part in (0.5, 2.0 / 3.0, 0.75):
                for pmin in (3, 4):
                    se.ANSWER_PREFIX, se.ANSWER_PART, se.ANSWER_PART_MIN = prefix, part, pmin
                    norms = se._ALL_NORMS if prefix else se._ALL_NORMS - {"prefix"}
                    c = confusion(fit, our_rule(norms))
                    results.append(((prefix, round(part, 4), pmin), c))
                    print("prefix=%d part=%.3f part_min=%d  fit agreement %.4f precision %.4f recall %.4f"
                          % (prefix, part, pmin, c["agreement"], c["precision"], c["recall"]), flush=True)
    finally:
        se.ANSWER_PREFIX, se.ANSWER_PART, se.ANSWER_PART_MIN = saved
    ok = [(c["agreement"], k) for k, c in results if c["precision"] >= MIN_FIT_PRECISION]
    best = max(ok)[1] if ok else None
    print("chosen (highest fit agreement with fit precision >= %.3f): prefix=%s part=%s part_min=%s"
          % ((MIN_FIT_PRECISION,) + (best if best else (None, None, None))))
    return best


def ablation(fit, held):
    lines = ["Ablation: each normalisation (or rule part) switched off alone; agreement / precision "
             "of correct, fit half and held-out half.", "",
             "| switched off | fit agreement | fit precision | held-out agreement | held-out precision |",
             "|---|---:|---:|---:|---:|"]
    rows = [("(nothing: the shipped rule)", se._ALL_NORMS, True)]
    rows += [(name, se._ALL_NORMS - {name}, True) for name in se.ANSWER_NORMS]
    rows.append(("partial rules 3-4", se._ALL_NORMS, False))
    rows.append(("everything (contiguous match of plain words)", frozenset(), False))
    for name, norms, partial in rows:
        a, b = confusion(fit, our_rule(norms, partial)), confusion(held, our_rule(norms, partial))
        lines.append("| %s | %s | %s | %s | %s |" % (name, _f(a["agreement"], 4), _f(a["precision"], 4),
                                                      _f(b["agreement"], 4), _f(b["precision"], 4)))
        print(lines[-1], flush=True)
    return "\n".join(lines) + "\n"


def write_docs(path: Path, section: str) -> None:
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        text = head + BEGIN + "\n" + section + END + tail
    else:
        text = text + "\n" + BEGIN + "\n" + section + END + "\n"
    tmp = path.with_name("." + path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--fit", action="store_true", help="grid over the rule's numbers on the fit half")
    ap.add_argument("--ablate", action="store_true", help="each normalisation switched off in turn")
    ap.add_argument("--docs", metavar="FILE", default=None, help="rewrite the generated section of FILE")
    args = ap.parse_args(argv)
    path = Path(args.data)
    if not path.is_file():
        print("bench_answer_correct: %s not found (needs ../shared/data/evouna_nq)" % path, file=sys.stderr)
        return 2
    fit, held = load(path)
    if args.fit:
        fit_grid(fit)
    rule = our_rule()
    section = ("Rule as shipped: ANSWER_PREFIX = %d, ANSWER_PART = %.4f, ANSWER_PART_MIN = %d; "
               "split by question number (even = fit, odd = held-out).\n\n"
               % (se.ANSWER_PREFIX, se.ANSWER_PART, se.ANSWER_PART_MIN))
    section += table("Held-out half (odd question numbers), next to the plain substring rule:",
                     per_model(held, rule), per_model(held, substring_rule)) + "\n"
    section += table("Fit half (even question numbers):", per_model(fit, rule), per_model(fit, substring_rule))
    print(section)
    if args.ablate:
        section += "\n" + ablation(fit, held)
    if args.docs:
        write_docs(ROOT / args.docs, section)
    return 0


if __name__ == "__main__":
    sys.exit(main())

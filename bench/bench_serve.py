#!/usr/bin/env python3
"""HTTP benchmark of ``mini_rag serve``: concurrent ``POST /answer`` on loopback.  Run by
``make bench-serve``.

Usage::

    python3 bench/bench_serve.py [--requests 2000] [--clients 8] [--warmup 100]
                                 [--gold gold/gold.jsonl] [--config FILE] [--out FILE]

The server runs in its own process (``python -m mini_rag serve --port 0 --quiet``, the
committed configuration: the gold corpus and its index), so its memory is its own.  The
questions are the gold set's, in gold order, repeated until ``--requests`` are sent;
``--clients`` threads share them, each on one keep-alive connection (``http.client``).

Two phases: the first ``--warmup`` requests, then the rest.  The server's resident memory
(``VmRSS`` of ``/proc/<pid>/status``) is read after each; the target is that memory after
the run stays within 10% of memory after the warm-up (nothing grows per request).  Every
request is checked: status 200, a JSON body, and the same decision, answer and citations
as every other response to that question (an answer that changes under concurrency is an
error).  Latency is per request, client side (send to last byte); requests/s is
requests over the wall time of both phases.

Output: a table on stdout, details in ``runs/bench/serve.json``.  Exit status 0 when the
targets hold (0 errors, memory within 10%), 1 when one is missed, 2 for bad arguments or
a server that does not start.  Without gold/gold.jsonl the benchmark is skipped (exit 0).
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MEMORY_TOLERANCE = 0.10


def rss_kb(pid: int) -> int:
    """Resident memory of ``pid`` in KiB (Linux ``/proc``); 0 when unavailable."""
    try:
        with open("/proc/%d/status" % pid, encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def start_server(config):
    argv = [sys.executable, "-m", "mini_rag", "serve", "--port", "0", "--quiet"]
    if config:
        argv += ["--config", config]
    proc = subprocess.Popen(argv, cwd=str(ROOT), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            universal_newlines=True)
    deadline = time.monotonic() + 300
    lines = []
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line)
        m = re.search(r"listening on http://([^:/]+):(\d+)/", line)
        if m:
            threading.Thread(target=proc.stderr.read, daemon=True).start()   # drain the rest
            return proc, m.group(1), int(m.group(2))
    proc.kill()
    raise SystemExit("bench_serve: the server did not start:\n%s" % "".join(lines))


def run_phase(host, port, questions, start, count, clients, latencies, errors, seen, lock):
    """Send requests ``start .. start+count-1`` (question ``i % len(questions)``) from
    ``clients`` threads, each on its own keep-alive connection."""
    todo = iter(range(start, start + count))

    def client():
        conn = http.client.HTTPConnection(host, port, timeout=120)
        while True:
            with lock:
                i = next(todo, None)
            if i is None:
                break
            q = questions[i % len(questions)]
            body = json.dumps({"query": q}).encode("utf-8")
            t0 = time.perf_counter()
            try:
                conn.request("POST", "/answer", body, {"Content-Type": "application/json"})
                resp = conn.getresponse()
                data = resp.read()
                elapsed = time.perf_counter() - t0
                if resp.status != 200:
                    raise ValueError("status %d: %s" % (resp.status, data[:200]))
                got = json.loads(data.decode("utf-8"))
                key = (got["decision"], got["answer"], tuple(got["citations"]))
            except Exception as exc:                     # counted, the run goes on
                with lock:
                    errors.append("request %d (%r): %s" % (i, q[:60], exc))
                conn.close()
                conn = http.client.HTTPConnection(host, port, timeout=120)
                continue
            with lock:
                latencies.append(elapsed)
                first = seen.setdefault(q, key)
                if first != key:
                    errors.append("request %d (%r): answer differs from an earlier one" % (i, q[:60]))
        conn.close()

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def percentile(values, p):
    """Nearest-rank percentile (p in 0..100) of a non-empty list."""
    ordered = sorted(values)
    k = max(1, -(-len(ordered) * p // 100))          # ceil(n * p / 100), at least 1
    return ordered[int(k) - 1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=2000, help="POST /answer requests in all (default 2000)")
    ap.add_argument("--clients", type=int, default=8, help="concurrent client threads (default 8)")
    ap.add_argument("--warmup", type=int, default=100,
                    help="requests before the first memory reading (default 100)")
    ap.add_argument("--gold", default=str(ROOT / "gold" / "gold.jsonl"), help="questions (gold JSONL)")
    ap.add_argument("--config", help="server config (default: the server's, configs/default.toml)")
    ap.add_argument("--out", default=str(ROOT / "runs" / "bench" / "serve.json"), help="JSON report")
    args = ap.parse_args(argv)
    if args.requests < 1 or args.clients < 1 or not 0 < args.warmup < args.requests:
        print("bench_serve: need requests >= 1, clients >= 1 and 0 < warmup < requests", file=sys.stderr)
        return 2
    if not os.path.isfile(args.gold):
        print("bench_serve: %s not present; skipped" % args.gold, file=sys.stderr)
        return 0
    with open(args.gold, encoding="utf-8") as fh:
        questions = [json.loads(line)["question"] for line in fh if line.strip()]
    proc, host, port = start_server(args.config)
    latencies, errors, seen, lock = [], [], {}, threading.Lock()
    try:
        rss_start = rss_kb(proc.pid)
        t0 = time.perf_counter()
        run_phase(host, port, questions, 0, args.warmup, args.clients, latencies, errors, seen, lock)
        rss_warm = rss_kb(proc.pid)
        run_phase(host, port, questions, args.warmup, args.requests - args.warmup, args.clients,
                  latencies, errors, seen, lock)
        wall = time.perf_counter() - t0
        rss_end = rss_kb(proc.pid)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
    growth = (rss_end - rss_warm) / rss_warm if rss_warm else None
    report = {
        "requests": args.requests, "clients": args.clients, "questions": len(questions),
        "errors": len(errors), "error_examples": errors[:5],
        "wall_s": round(wall, 3), "requests_per_s": round(len(latencies) / wall, 2) if wall else None,
        "latency_ms": {"p50": round(percentile(latencies, 50) * 1000, 1) if latencies else None,
                       "p95": round(percentile(latencies, 95) * 1000, 1) if latencies else None,
                       "p99": round(percentile(latencies, 99) * 1000, 1) if latencies else None,
                       "mean": round(statistics.mean(latencies) * 1000, 1) if latencies else None},
        "server_rss_mb": {"start": round(rss_start / 1024, 1), "after_warmup": round(rss_warm / 1024, 1),
                          "after_run": round(rss_end / 1024, 1)},
        "rss_growth_after_warmup": round(growth, 4) if growth is not None else None,
        "python": sys.version.split()[0], "cpus": os.cpu_count(),
    }
    ok_errors = not errors
    ok_memory = growth is not None and growth <= MEMORY_TOLERANCE
    report["targets"] = {"zero_errors": ok_errors, "memory_within_10pct": ok_memory}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=2)
        fh.write("\n")
    os.replace(tmp, args.out)
    lat = report["latency_ms"]
    mem = report["server_rss_mb"]
    print("mini_rag serve: %d POST /answer from %d clients on loopback (%d gold questions)"
          % (args.requests, args.clients, len(questions)))
    print("  errors            %d   %s" % (len(errors), "ok" if ok_errors else "MISSED (target 0)"))
    print("  latency p50 / p95 %s / %s ms (p99 %s, mean %s)" % (lat["p50"], lat["p95"], lat["p99"], lat["mean"]))
    print("  throughput        %s requests/s (%.1f s wall)" % (report["requests_per_s"], wall))
    print("  server RSS        %.1f MB after %d requests, %.1f MB after %d: %+.1f%%   %s"
          % (mem["after_warmup"], args.warmup, mem["after_run"], args.requests,
             100.0 * (growth or 0.0), "ok" if ok_memory else "MISSED (target <= +10%)"))
    print("  details           %s" % os.path.relpath(args.out, str(ROOT)))
    for e in errors[:5]:
        print("  error: %s" % e, file=sys.stderr)
    return 0 if ok_errors and ok_memory else 1


if __name__ == "__main__":
    sys.exit(main())

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

Then a hostile phase (``--hostile-seconds``, 30 by default; issue 33): 64 clients each
sending a body one byte every 3 s (from loopback addresses 127.0.0.2-9), 20 requests
declaring a 64 MiB body, and two threads asking questions of one 2,000-letter word, while
one thread times ``GET /health`` and two time normal ``POST /answer``: both must keep
p95 under 1 s with 0 errors.  Every loop stops by itself at the phase's end.

Output: a table on stdout, details in ``runs/bench/serve.json``.  Exit status 0 when the
targets hold (0 errors, memory within 10%, the hostile phase's p95s), 1 when one is missed, 2 for bad arguments or
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


HOSTILE_SLOW = 64          # clients sending a body one byte every SLOW_GAP seconds
HOSTILE_OVERSIZED = 20     # requests declaring a body over the server's --max-body
HOSTILE_LONG_WORDS = 2     # threads asking questions of one 2,000-letter word
SLOW_GAP = 3.0
P95_TARGET_S = 1.0


def _connect(host, port, source):
    """A socket to the server from loopback address ``source`` (127.0.0.1 when it cannot bind)."""
    import socket
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(30)
    try:
        s.bind((source, 0))
    except OSError:
        pass
    s.connect((host, port))
    return s


def _status(s):
    data = b""
    try:
        while b"\r\n" not in data:
            block = s.recv(4096)
            if not block:
                break
            data += block
    except OSError:
        return None
    return int(data.split(b" ")[1]) if data.startswith(b"HTTP/") else None


def hostile_phase(host, port, questions, seconds):
    """Hostile clients for ``seconds`` (every loop stops by itself at the deadline) while one
    thread times GET /health and two time normal POST /answer; returns the figures."""
    import random
    import socket
    deadline = time.monotonic() + seconds
    lock = threading.Lock()
    stats = {"health": [], "answer": [], "health_errors": 0, "answer_errors": 0,
             "slow_statuses": {}, "oversized_statuses": {}, "long_word_statuses": {}}

    def count(key, status):
        with lock:
            stats[key][str(status)] = stats[key].get(str(status), 0) + 1

    def slow(i):
        source = "127.0.0.%d" % (2 + i % 8)             # 8 per address: within the per-client cap
        while time.monotonic() < deadline:
            try:
                s = _connect(host, port, source)
                s.sendall(b"POST /answer HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
                          b"Content-Length: 200\r\n\r\n")
                s.settimeout(SLOW_GAP)
                status = None
                while time.monotonic() < deadline and status is None:
                    s.sendall(b" ")
                    try:
                        data = s.recv(4096)
                        status = int(data.split(b" ")[1]) if data.startswith(b"HTTP/") else "closed"
                    except socket.timeout:
                        continue
                s.close()
                if status is not None:
                    count("slow_statuses", status)
            except OSError as exc:
                count("slow_statuses", type(exc).__name__)
                time.sleep(0.5)

    def oversized():
        for _ in range(HOSTILE_OVERSIZED):
            if time.monotonic() >= deadline:
                break
            try:
                s = _connect(host, port, "127.0.0.10")
                s.sendall(b"POST /answer HTTP/1.1\r\nHost: bench\r\nContent-Length: %d\r\n\r\n" % (64 << 20)
                          + b"x" * 65536)
                count("oversized_statuses", _status(s))
                s.close()
            except OSError as exc:
                count("oversized_statuses", type(exc).__name__)
            time.sleep(0.2)

    def long_words(seed):
        rng = random.Random(seed)
        while time.monotonic() < deadline:
            word = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(2000))
            conn = http.client.HTTPConnection(host, port, timeout=60)
            try:
                conn.request("POST", "/answer", json.dumps({"query": word}), {"Content-Type": "application/json"})
                resp = conn.getresponse()
                resp.read()
                count("long_word_statuses", resp.status)
            except Exception as exc:
                count("long_word_statuses", type(exc).__name__)
            finally:
                conn.close()

    def timed(path, key, body_of):
        i = 0
        while time.monotonic() < deadline:
            conn = http.client.HTTPConnection(host, port, timeout=30)
            t0 = time.perf_counter()
            try:
                body = body_of(i)
                if body is None:
                    conn.request("GET", path)
                else:
                    conn.request("POST", path, body, {"Content-Type": "application/json"})
                resp = conn.getresponse()
                resp.read()
                ok = resp.status == 200
            except Exception:
                ok = False
            finally:
                conn.close()
            with lock:
                if ok:
                    stats[key].append(time.perf_counter() - t0)
                else:
                    stats[key + "_errors"] += 1
            i += 1
            time.sleep(0.1)

    threads = [threading.Thread(target=slow, args=(i,)) for i in range(HOSTILE_SLOW)]
    threads.append(threading.Thread(target=oversized))
    threads += [threading.Thread(target=long_words, args=(i,)) for i in range(HOSTILE_LONG_WORDS)]
    threads.append(threading.Thread(target=timed, args=("/health", "health", lambda i: None)))
    threads += [threading.Thread(target=timed, args=("/answer", "answer", lambda i, k=k: json.dumps(
        {"query": questions[(2 * i + k) % len(questions)]}))) for k in range(2)]
    for t in threads:
        t.daemon = True
        t.start()
    for t in threads:
        t.join(seconds + 90)
    out = {"seconds": seconds, "slow_clients": HOSTILE_SLOW, "oversized_bodies": HOSTILE_OVERSIZED,
           "long_word_threads": HOSTILE_LONG_WORDS}
    for key in ("health", "answer"):
        lat = stats[key]
        out[key] = {"requests": len(lat), "errors": stats[key + "_errors"],
                    "p50_ms": round(percentile(lat, 50) * 1000, 1) if lat else None,
                    "p95_ms": round(percentile(lat, 95) * 1000, 1) if lat else None}
    for key in ("slow_statuses", "oversized_statuses", "long_word_statuses"):
        out[key] = dict(sorted(stats[key].items()))
    out["ok"] = all(out[k]["errors"] == 0 and out[k]["p95_ms"] is not None and out[k]["p95_ms"] < P95_TARGET_S * 1000
                    for k in ("health", "answer"))
    return out


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
    ap.add_argument("--hostile-seconds", type=float, default=30.0,
                    help="length of the hostile phase (64 slow clients, 20 oversized bodies, long-word "
                         "questions) during which /health and /answer are timed; 0 skips it (default 30)")
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
        hostile = hostile_phase(host, port, questions, args.hostile_seconds) if args.hostile_seconds > 0 else None
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
    report["hostile"] = hostile
    ok_hostile = hostile is None or hostile["ok"]
    report["targets"] = {"zero_errors": ok_errors, "memory_within_10pct": ok_memory,
                         "hostile_p95_under_1s": ok_hostile}
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
    if hostile is not None:
        print("  hostile phase     %.0f s: %d slow clients, %d oversized bodies, %d long-word threads"
              % (hostile["seconds"], hostile["slow_clients"], hostile["oversized_bodies"], hostile["long_word_threads"]))
        for key, label in (("health", "GET /health"), ("answer", "POST /answer")):
            h = hostile[key]
            print("    %-13s  %d requests, %d errors, p50 %s ms, p95 %s ms   %s"
                  % (label, h["requests"], h["errors"], h["p50_ms"], h["p95_ms"],
                     "ok" if h["errors"] == 0 and h["p95_ms"] is not None and h["p95_ms"] < P95_TARGET_S * 1000
                     else "MISSED (target p95 < 1 s, 0 errors)"))
        print("    slow bodies got %s; oversized got %s; long words got %s"
              % (hostile["slow_statuses"], hostile["oversized_statuses"], hostile["long_word_statuses"]))
    for e in errors[:5]:
        print("  error: %s" % e, file=sys.stderr)
    return 0 if ok_errors and ok_memory and ok_hostile else 1


if __name__ == "__main__":
    sys.exit(main())

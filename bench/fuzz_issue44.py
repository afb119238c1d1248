"""Issue 44's classes of bad input for bench/fuzz_inputs.py: config settings, HTTP bodies and
connections, command generators.  Each function yields the cases of one class; fuzz_inputs
runs them (``Suite.configs``, ``Suite.http``, ``Suite.generators``)."""
from __future__ import annotations

import json
import os
import socket
import threading
import time

from mini_rag.config import CHOICES, DEFAULTS, NON_EMPTY, RANGES

SHORT_TIMEOUT = 1.0


# ------------------------------------------------------------------ config

def _toml(value):
    """A Python number as TOML."""
    return repr(value) if isinstance(value, float) else str(value)


def bad_settings():
    """``(section, key, TOML value)`` for every key crossed with the errors it can have:
    a wrong type, each end of its range overstepped, infinity, an unknown choice, an empty path
    or list item, a malformed date or hash."""
    cases = []
    for section, table in DEFAULTS.items():
        if section == "expansion":
            continue
        for key, default in table.items():
            if isinstance(default, bool):
                wrong = ['"yes"', "1"]
            elif isinstance(default, float):
                wrong = ['"x"', "true", "1e999"]            # inf (nan is not in 3.9's TOML subset)
            elif isinstance(default, int):
                wrong = ['"x"', "1.5"]
            elif isinstance(default, list):
                wrong = ['"x"', "[1]", '[""]', '["ok", "  "]']
            else:
                wrong = ["1", "[]"]
            cases += [(section, key, w) for w in wrong]
            if (section, key) in RANGES:
                lo, hi = RANGES[(section, key)]
                step = 1 if isinstance(default, int) else 0.5
                cases += [(section, key, _toml(type(default)(lo - step))), (section, key, _toml(type(default)(hi + step)))]
            if (section, key) in CHOICES:
                cases += [(section, key, '"zz-unknown"'), (section, key, '"%s"' % CHOICES[(section, key)][0].upper())]
            if (section, key) in NON_EMPTY:
                cases += [(section, key, '""'), (section, key, '"  "')]
    cases += [("embed", "sha256", '"xyz"'), ("embed", "sha256", '"%s"' % ("g" * 64)),
              ("guards", "as_of", '"2026-02-30"'), ("guards", "as_of", '"26-1-1"'), ("guards", "as_of", '"tomorrow"'),
              ("embed", "max_seq_length", "1"), ("expansion", "match", '""'), ("expansion", "add", '[""]')]
    return cases


# ------------------------------------------------------------------ HTTP

def _status(server, data, want, source="127.0.0.1", timeout=8.0):
    """``(2, message)`` when the answer's status is in ``want`` with a JSON body; ``(3, ...)``
    when the connection is closed or reset unanswered or the server says 500."""
    from test_serve import raw_request
    try:
        status, headers, body = raw_request(server, data, source=source, timeout=timeout)
    except socket.timeout:
        return None, "no answer within %g s" % timeout
    except (OSError, ValueError) as exc:
        return 3, "connection ended unanswered: %r" % exc
    try:
        json.loads(body)
    except ValueError:
        return 3, "status %d with a body that is not JSON" % status
    if status == 503 and headers.get("retry-after") is None:
        return 1, "503 without Retry-After"
    return (2 if status in want else 3 if status == 500 else 1), "status %d: %s" % (status, body[:120])


def _idle_then(server, n, request, want):
    socks = []
    try:
        for _ in range(n):
            socks.append(socket.create_connection((server.host, server.port), timeout=5))
        time.sleep(0.2)
        return _status(server, request, want)
    finally:
        for s in socks:
            s.close()


def _burst(server, n=200):
    from test_serve import post
    results, go = [], threading.Event()

    def one():
        go.wait(10)
        results.append(_status(server, post("/answer", {"query": "Who approves invoices?"}), (200, 503)))
    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    go.set()
    for t in threads:
        t.join(9)
    bad = [r for r in results if r[0] != 2]
    if len(results) < n:
        return None, "%d of %d answered" % (len(results), n)
    return (2, "%d answers, all 200 or 503 with Retry-After" % n) if not bad else (bad[0][0], bad[0][1])


def http_cases(quick):
    """``(name, fn)`` over one server on 127.0.0.1 (closed when the cases are used up)."""
    from test_serve import Server, post
    from mini_rag.commands.serve import MAX_JSON_DEPTH
    server = Server(access_log=False)
    deep = MAX_JSON_DEPTH + 1
    bodies = [("null", b"null"), ("true", b"true"), ("number", b"-1.5e3"), ("string", b'"x"'), ("array", b"[]"),
              ("500k-deep arrays", b"[" * 500000 + b"]" * 500000),
              ("100k-deep in a field", b'{"query": ' + b"[" * 100000 + b"]" * 100000 + b"}"),
              ("50k-deep objects", b'{"a":' * 50000 + b"1" + b"}" * 50000),
              ("200k unclosed", b"[" * 200000), ("deep then an open string", b'["x", ' + b"{" * 200000 + b'"y'),
              ("one over the depth", b'{"query": ' + b"[" * deep + b"]" * deep + b"}"),
              ("not UTF-8", b'{"query": "\xff"}'), ("bad JSON", b'{"query": ')]
    try:
        for name, raw in bodies[::3] if quick else bodies:
            for path in ("/answer", "/validate"):
                yield "%s %s" % (path, name), lambda raw=raw, path=path: _status(server, post(path, raw), (400,))
        yield "40 idle connections, then /health", lambda: _idle_then(
            server, 40, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n", (200,))
        yield "40 idle connections, then /answer", lambda: _idle_then(
            server, 40, post("/answer", {"query": "Who approves invoices?"}), (200,))
        yield "/validate 90,000 distinct citations", lambda: _status(server, post("/validate", {
            "answer": "x", "citations": ["c%06d" % i for i in range(90000)],
            "retrieved_chunks": [{"chunk_id": "c000001", "text": "x"}]}), (200,))
        yield "burst of 200 /answer", lambda: _burst(server)
    finally:
        server.close()


# ------------------------------------------------------------------ command generators

def _alive(pid):
    from test_generator import _alive as alive
    return alive(pid)


def _generate(script, timeout, want, pidfile):
    from test_generator import FACTS, Q, context
    from mini_rag.answer.generator import CommandGenerator, GeneratorError
    t0 = time.monotonic()
    try:
        CommandGenerator(["sh", "-c", script], timeout).generate(Q, FACTS, context())
        return 1, "no error"
    except GeneratorError as exc:
        took = time.monotonic() - t0
        if exc.kind != want:
            return 1, "%s, not %s: %s" % (exc.kind, want, exc)
        if took > timeout + 3:
            return None, "%s after %.1f s" % (exc.kind, took)
        if pidfile and os.path.exists(pidfile):
            with open(pidfile) as fh:
                pid = int(fh.read() or 0)
            deadline = time.monotonic() + 3
            while pid and _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if pid and _alive(pid):
                return 1, "process %d of the generator outlived it" % pid
        return 2, str(exc)


def generator_cases(quick, folder):
    """``(name, fn)``: command generators that misbehave; each must fail with the kind wanted,
    on time, leaving no process of its group behind."""
    timeout = 0.5 if quick else SHORT_TIMEOUT
    pid = os.path.join(folder, "generator.pid")
    table = [
        ("sleep in sh", "sleep 30", "timeout", False),
        ("a grandchild sleeps", "sleep 30 & echo $! > %s; wait" % pid, "timeout", True),
        ("a child holds stdout after exit", "echo '{}'; sleep 30 & echo $! > %s" % pid, "timeout", True),
        ("ignores SIGTERM", "trap '' TERM; sleep 30 & echo $! > %s; wait" % pid, "timeout", True),
        ("nested shells", "sh -c 'sleep 30 & echo $! > %s; wait'" % pid, "timeout", True),
        ("floods stdout", "yes", "output_too_large", False),
        ("exits 3", "cat > /dev/null; exit 3", "exit_status", False),
        ("prints null", "cat > /dev/null; echo null", "unparsable_output", False),
        ("prints 500k-deep JSON", "cat > /dev/null; head -c 500000 /dev/zero | tr '\\000' '['", "unparsable_output",
         False),
        ("prints a 5,000-digit number", "cat > /dev/null; printf '{\"confidence\": 1'; head -c 5000 /dev/zero | "
                                        "tr '\\000' '7'; echo '}'", "unparsable_output", False),
    ]
    for name, script, want, has_pid in table[:3] + table[5:] if quick else table:
        if os.path.exists(pid):
            os.unlink(pid)
        yield name, lambda script=script, want=want, has_pid=has_pid: _generate(script, timeout, want,
                                                                              pid if has_pid else None)

"""The HTTP API (mini_rag/commands/serve.py), started in-process on an ephemeral loopback port over
the fixture corpus tests/fixtures/guards/corpus and called with urllib / http.client."""
import http.client
import io
import json
import os
import socket
import sys
import threading
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from mini_rag.pipeline import Pipeline  # noqa: E402
from mini_rag.commands.serve import ROUTES, Service, make_server, openapi  # noqa: E402
from test_pipeline import fixture_config, fixture_retriever  # noqa: E402
from test_pipeline_halves import Counting  # noqa: E402

CONFLICT_Q = "Can we store social security numbers in plaintext?"
ANSWER_Q = "Who approves invoices?"
NO_HITS_Q = "What is the capital of France?"
QUESTIONS = [CONFLICT_Q, ANSWER_Q, NO_HITS_Q, "When does the staff cafeteria open?",
             "How long are customer invoices retained?", "Is the cafeteria menu vegan?",
             "How many days do customers have to request a refund?", "Are promotional purchases refundable?"]


class Server:
    """A server over the fixture corpus on 127.0.0.1:<free port>, run in a thread."""

    def __init__(self, generator=None, **options):
        cfg = fixture_config()
        self.generator = generator or Counting()
        self.service = Service(cfg, Pipeline(cfg, retriever=fixture_retriever(cfg), generator=self.generator))
        self.log = io.StringIO()
        options.setdefault("debug_routes", True)
        self.httpd = make_server(self.service, "127.0.0.1", 0, log_stream=self.log, **options)
        self.host, self.port = self.httpd.server_address[:2]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path):
        return "http://%s:%d%s" % (self.host, self.port, path)

    def call(self, method, path, body=None, raw=None, headers=None):
        """(status, parsed JSON body, headers) with urllib; errors are returned, not raised."""
        data = raw if raw is not None else (json.dumps(body).encode("utf-8") if body is not None else None)
        req = urllib.request.Request(self.url(path), data=data, method=method,
                                     headers=dict({"Content-Type": "application/json"}, **(headers or {})))
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.status, json.loads(resp.read().decode("utf-8")), resp.headers
        except urllib.error.HTTPError as exc:
            with exc:
                return exc.code, json.loads(exc.read().decode("utf-8")), exc.headers

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


class ServeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server()

    @classmethod
    def tearDownClass(cls):
        cls.server.close()

    def call(self, *args, **kw):
        return self.server.call(*args, **kw)


class Routes(ServeTest):
    def test_answer_shape_and_conflict_pairs(self):
        status, body, headers = self.call("POST", "/answer", {"query": CONFLICT_Q, "top_k": 5})
        self.assertEqual(status, 200)
        self.assertEqual(headers["Content-Type"], "application/json; charset=utf-8")
        self.assertEqual(list(body), ["query", "decision", "answer", "citations", "confidence", "retrieval",
                                      "retrieval_quality", "validation", "conflicts", "reasons", "message",
                                      "decided_by", "signals", "risk"])
        self.assertEqual((body["decision"], body["citations"], body["decided_by"]), ("ABSTAIN", [], "answer"))
        self.assertEqual(body["answer"], body["message"])
        self.assertIn("encryption-standard", body["answer"])
        self.assertEqual(body["retrieval"]["top_k"], 5)
        self.assertLessEqual(len(body["retrieval"]["chunks"]), 5)
        self.assertEqual(set(body["retrieval"]["chunks"][0]),
                         {"doc_id", "chunk_id", "rank", "timestamp", "similarity", "title", "heading", "section", "text"})
        self.assertEqual(body["conflicts"], {
            "conflict_detected": True, "conflict_type": "polarity",
            "pairs": [{"chunk_a": {"doc_id": "encryption-standard", "chunk_id": "encryption-standard#p1"},
                       "chunk_b": {"doc_id": "security-policy-legacy", "chunk_id": "security-policy-legacy#p1"},
                       "reason": "permission: neg vs pos",
                       "evidence_snippets": {
                           "a": "Social security numbers must not be stored in plaintext.",
                           "b": "Social security numbers may be stored in plaintext on the internal file server."},
                       "conflict_type": "polarity", "axis": "permission"}],
            "summary": "Polarity conflict detected: 1 conflicting pair(s) found"})
        q = body["retrieval_quality"]
        self.assertEqual(set(q), {"confidence", "freshness", "top_doc_ids", "top_timestamps"})
        self.assertEqual(q["confidence"]["hit_count"], len(body["retrieval"]["chunks"]))
        self.assertEqual(q["top_doc_ids"], [c["doc_id"] for c in body["retrieval"]["chunks"]])
        self.assertEqual(body["signals"], {"retrieval_confidence_max": q["confidence"]["max"],
                                           "retrieval_hit_count": q["confidence"]["hit_count"],
                                           "freshness_violation": q["freshness"]["freshness_violation"]})
        self.assertEqual(body["risk"]["risk_level"], "high")

    def test_answer_same_as_pipeline(self):
        status, body, _ = self.call("POST", "/answer", {"query": ANSWER_Q})
        row = self.server.service.base.answer(ANSWER_Q).row
        self.assertEqual(status, 200)
        self.assertEqual((body["decision"], body["answer"], body["citations"], body["reasons"], body["validation"]),
                         (row["decision"], row["answer_json"]["claim"], row["answer_json"]["citations"],
                          row["reasons"], row["validation"]))
        self.assertEqual(body["decision"], "ANSWER")

    def test_doc_scope_names_one_document(self):
        # the conflict question retrieves both sides; scoped to one document, only its chunks
        status, body, _ = self.call("POST", "/answer", {"query": CONFLICT_Q, "doc_scope": "encryption-standard"})
        self.assertEqual(status, 200)
        self.assertEqual({c["doc_id"] for c in body["retrieval"]["chunks"]}, {"encryption-standard"})
        self.assertFalse(body["conflicts"]["conflict_detected"])
        status, body, _ = self.call("GET", "/debug/retrieval?q=plaintext&doc_scope=security-policy-legacy")
        self.assertEqual({c["doc_id"] for c in body["retrieval"]["chunks"]}, {"security-policy-legacy"})

    def test_parameters_change_the_pipeline(self):
        # both hits are the cafeteria guide's, effective 2018-05-01, 3106 days before as_of
        # 2026-11-01: stale at the configured 730 days, not at 36500 (a low-risk question is
        # answered either way)
        q = "When does the staff cafeteria open?"
        _, stale, _ = self.call("POST", "/answer", {"query": q})
        _, fresh, _ = self.call("POST", "/answer", {"query": q, "freshness_days": 36500})
        old = {k: stale["retrieval_quality"]["freshness"][k]
               for k in ("freshness_violation", "freshness_violation_count", "freshness_days")}
        new = {k: fresh["retrieval_quality"]["freshness"][k]
               for k in ("freshness_violation", "freshness_violation_count", "freshness_days")}
        self.assertEqual([c["chunk_id"] for c in stale["retrieval"]["chunks"]], ["cafeteria#p1", "cafeteria#p2"])
        self.assertEqual(old, {"freshness_violation": True, "freshness_violation_count": 2, "freshness_days": 730})
        self.assertEqual(stale["retrieval_quality"]["freshness"]["stale"][0]["age_days"], 3106)
        self.assertEqual(new, {"freshness_violation": False, "freshness_violation_count": 0, "freshness_days": 36500})
        self.assertEqual((stale["decision"], fresh["decision"]), ("ANSWER", "ANSWER"))
        _, one, _ = self.call("POST", "/answer", {"query": CONFLICT_Q, "top_k": 1})
        self.assertEqual(len(one["retrieval"]["chunks"]), 1)
        authorities = self.server.service.authorities
        self.assertTrue(authorities)
        _, scoped, _ = self.call("GET", "/debug/retrieval?" + urllib.parse.urlencode(
            {"q": CONFLICT_Q, "doc_scope": authorities[0].lower()}))
        self.assertEqual(scoped["retrieval"]["doc_scope"], authorities[0])

    def test_validate(self):
        chunks = [{"doc_id": "d", "chunk_id": "d#p%d" % i, "text": "SSNs must be encrypted at rest %d." % i}
                  for i in range(7)]
        ok = "SSNs must be encrypted at rest."
        cases = [
            ("valid", ok, ["d#p1"], True, [], []),
            ("unknown id", ok, ["fake#p0"], False, ["citation 'fake#p0' does not match any retrieved chunk"],
             ["the answer shares no keyword with its cited chunks"]),
            ("duplicate", ok, ["d#p1", "d#p1"], False, ["duplicate citation 'd#p1'"], []),
            ("six citations", ok, ["d#p%d" % i for i in range(6)], False, ["6 citations, at most 5 allowed"], []),
            ("no citations", ok, [], False, ["answer has no citations"], []),
            ("refusal may cite nothing", "not in context", [], True, [], []),
            ("no shared keyword", "Zebras gallop.", ["d#p0"], True, [],
             ["the answer shares no keyword with its cited chunks"]),
        ]
        for name, answer, citations, valid, errors, warnings in cases:
            with self.subTest(name):
                status, body, _ = self.call("POST", "/validate", {"answer": answer, "citations": citations,
                                                                  "retrieved_chunks": chunks})
                self.assertEqual(status, 200)
                self.assertEqual(body, {"citation_valid": valid, "errors": errors, "warnings": warnings})

    def test_debug_routes_never_call_the_generator(self):
        before = self.server.generator.calls
        q = urllib.parse.quote(CONFLICT_Q)
        _, r, _ = self.call("GET", "/debug/retrieval?q=%s&top_k=3" % q)
        self.assertEqual(list(r), ["query", "retrieval", "retrieval_quality"])
        self.assertEqual(r["retrieval"]["top_k"], 3)
        _, c, _ = self.call("GET", "/debug/conflicts?q=%s" % q)
        self.assertEqual(list(c), ["query", "retrieval", "retrieval_quality", "conflicts"])
        self.assertEqual([(p["chunk_a"]["chunk_id"], p["chunk_b"]["chunk_id"]) for p in c["conflicts"]["pairs"]],
                         [("encryption-standard#p1", "security-policy-legacy#p1")])
        _, d, _ = self.call("GET", "/debug/decision?q=%s" % q)
        self.assertEqual(d["validation"], None)
        self.assertEqual((d["decision_result"]["decision"], d["decision_result"]["would_call_generator"]),
                         (None, True))
        _, n, _ = self.call("GET", "/debug/decision?q=%s" % urllib.parse.quote(NO_HITS_Q))
        self.assertEqual({k: n["decision_result"][k] for k in ("decision", "decided_by", "reasons")},
                         {"decision": "ABSTAIN", "decided_by": "retrieval", "reasons": ["low_confidence:no_hits"]})
        self.assertEqual(self.server.generator.calls, before)

    def test_health_and_docs(self):
        status, h, _ = self.call("GET", "/health")
        self.assertEqual((status, h["status"], h["generator"]), (200, "ok", "counting"))
        _, d, _ = self.call("GET", "/docs")
        corpus = os.path.join(ROOT, "tests", "fixtures", "guards", "corpus")
        names = sorted(os.path.splitext(n)[0] for n in os.listdir(corpus))
        self.assertEqual([x["doc_id"] for x in d["documents"]], names)
        self.assertEqual(d["count"], len(names))
        self.assertEqual(sum(x["chunks"] for x in d["documents"]), h["chunks"])
        self.assertEqual(set(d["documents"][0]), {"doc_id", "title", "effective", "authority", "chunks"})

    def test_openapi_matches_the_routes(self):
        status, spec, _ = self.call("GET", "/openapi.json")
        self.assertEqual(status, 200)
        self.assertEqual(spec, openapi())
        self.assertTrue(spec["openapi"].startswith("3."))
        in_spec = {(m.upper(), p) for p, ops in spec["paths"].items() for m in ops}
        self.assertEqual(in_spec, set(ROUTES))
        # the server dispatches only through ROUTES; no handler method is left out of it
        handlers = {n[len("_route_"):] for n in dir(self.server.httpd.RequestHandlerClass) if n.startswith("_route_")}
        self.assertEqual(handlers, {name for name, _, _ in ROUTES.values()})
        # every route in the spec answers; every other method on its path is 405
        for path, ops in spec["paths"].items():
            for method in ("GET", "POST", "PUT", "DELETE"):
                with self.subTest(method=method, path=path):
                    if method.lower() in ops:
                        body = {"query": ANSWER_Q} if path == "/answer" else \
                            {"answer": "x", "citations": [], "retrieved_chunks": []} if method == "POST" else None
                        status, _, _ = self.call(method, path + ("?q=refund" if "debug" in path else ""), body)
                        self.assertEqual(status, 200)
                    else:
                        status, err, headers = self.call(method, path, {} if method != "GET" else None)
                        self.assertEqual(status, 405)
                        self.assertEqual(headers["Allow"], ", ".join(sorted(m.upper() for m in ops)))
                        self.assertIn("not allowed", err["error"])


class Errors(ServeTest):
    def test_400(self):
        cases = [
            ("bad JSON", "/answer", b'{"query": ', "body is not JSON"),
            ("not an object", "/answer", b'["query"]', "the body must be one JSON object, got array"),
            ("missing field", "/answer", b'{}', "missing field 'query'"),
            ("wrong type", "/answer", b'{"query": 3}', "query must be a string, got 3"),
            ("empty query", "/answer", b'{"query": " "}', "query must be a non-empty string, got ' '"),
            ("unknown field", "/answer", b'{"query": "x", "topk": 3}',
             "unknown field 'topk' (known: doc_scope, freshness_days, query, top_k); did you mean 'top_k'?"),
            ("top_k bool", "/answer", b'{"query": "x", "top_k": true}',
             "top_k must be an integer from 1 to 100, got True"),
            ("top_k too big", "/answer", b'{"query": "x", "top_k": 101}',
             "top_k must be an integer from 1 to 100, got 101"),
            ("unknown scope", "/answer", b'{"query": "x", "doc_scope": "NASA"}', "doc_scope must be a doc_id, MIXED or one"),
            ("citations not strings", "/validate", b'{"answer": "x", "citations": [1], "retrieved_chunks": []}',
             "citations[0] must be a string, got 1"),
            ("chunk without id", "/validate", b'{"answer": "x", "citations": [], "retrieved_chunks": [{}]}',
             "retrieved_chunks[0] must be an object with a non-empty string chunk_id"),
            ("not UTF-8", "/answer", b'{"query": "\xff"}', "body must be UTF-8"),
        ]
        for name, path, raw, message in cases:
            with self.subTest(name):
                status, body, _ = self.call("POST", path, raw=raw)
                self.assertEqual(status, 400)
                self.assertTrue(body["error"].startswith(message), body["error"])
        for name, query, message in [("no q", "top_k=3", "missing field 'q'"),
                                     ("q twice", "q=a&q=b", "parameter 'q' given 2 times"),
                                     ("bad top_k", "q=a&top_k=x", "top_k must be an integer, got 'x'"),
                                     ("unknown", "q=a&k=3", "unknown field 'k'")]:
            with self.subTest(name):
                status, body, _ = self.call("GET", "/debug/retrieval?" + query)
                self.assertEqual(status, 400)
                self.assertTrue(body["error"].startswith(message), body["error"])

    def test_404(self):
        status, body, _ = self.call("GET", "/nowhere")
        self.assertEqual((status, body), (404, {"error": "no route '/nowhere'"}))

    def test_411_and_413(self):
        conn = http.client.HTTPConnection(self.server.host, self.server.port, timeout=10)
        conn.putrequest("POST", "/answer")
        conn.putheader("Content-Length", str((1 << 20) + 1))     # the default limit is 1 MiB
        conn.endheaders()
        resp = conn.getresponse()
        self.assertEqual((resp.status, json.loads(resp.read())),
                         (413, {"error": "body of 1048577 bytes is over the limit of 1048576 bytes"}))
        conn.close()
        conn = http.client.HTTPConnection(self.server.host, self.server.port, timeout=10)
        conn.putrequest("POST", "/answer")
        conn.endheaders()
        resp = conn.getresponse()
        self.assertEqual((resp.status, json.loads(resp.read())), (411, {"error": "Content-Length required"}))
        conn.close()

    def test_413_body_sent(self):
        small = Server(max_body=1000)
        try:
            status, body, _ = small.call("POST", "/answer", raw=b'{"query": "%s"}' % (b"x" * 2000))
            self.assertEqual((status, body["error"]), (413, "body of %d bytes is over the limit of 1000 bytes" % (len('{"query": "') + 2000 + len('"}'))))
            status, _, _ = small.call("POST", "/answer", {"query": ANSWER_Q})
            self.assertEqual(status, 200)                              # the server goes on
        finally:
            small.close()

    def test_500_logged_not_sent(self):
        def boom(body):
            raise RuntimeError("secret detail")
        service = self.server.service
        service.answer = boom
        try:
            status, body, _ = self.call("POST", "/answer", {"query": "x"})
        finally:
            del service.answer
        self.assertEqual((status, body), (500, {"error": "internal error"}))
        log = self.server.log.getvalue()
        self.assertIn("Traceback", log)
        self.assertIn("RuntimeError: secret detail", log)

    def test_access_log_and_timeout(self):
        self.call("GET", "/health")
        self.assertRegex(self.server.log.getvalue(), r"127\.0\.0\.1 - GET /health 200 \d+ [\d.]+ms\n")
        quick = Server(timeout=0.3)
        try:
            with socket.create_connection((quick.host, quick.port), timeout=10) as s:
                t0 = time.monotonic()
                self.assertEqual(s.recv(100), b"")                     # closed: nothing was sent
                self.assertLess(time.monotonic() - t0, 5)
        finally:
            quick.close()


class Blocking(Counting):
    """Counting, but waits for ``release`` first (a slow LLM)."""
    name = "blocking"

    def __init__(self):
        super().__init__()
        self.entered = threading.Event()
        self.release = threading.Event()

    def generate(self, question, facts, context):
        self.entered.set()
        self.release.wait(30)
        return super().generate(question, facts, context)


class InFlightBound(unittest.TestCase):
    def test_503_over_max_requests(self):
        gen = Blocking()
        server = Server(generator=gen, max_requests=1)
        try:
            slow = []
            t = threading.Thread(target=lambda: slow.append(server.call("POST", "/answer", {"query": ANSWER_Q})))
            t.start()
            self.assertTrue(gen.entered.wait(30))
            status, body, _ = server.call("POST", "/answer", {"query": ANSWER_Q})
            self.assertEqual((status, body), (503, {"error": "server busy: more than 1 requests in flight"}))
            # /health takes no slot: it answers however busy the server is (issue 33)
            self.assertEqual(server.call("GET", "/health")[0], 200)
            gen.release.set()
            t.join(30)
            self.assertEqual(slow[0][0], 200)
            # the slot is free again once the handler thread has finished (it releases the
            # slot after the response is sent, so the client can be a moment ahead of it)
            deadline = time.monotonic() + 10
            status = server.call("POST", "/answer", {"query": ANSWER_Q})[0]
            while status == 503 and time.monotonic() < deadline:
                time.sleep(0.05)
                status = server.call("POST", "/answer", {"query": ANSWER_Q})[0]
            self.assertEqual(status, 200)
        finally:
            gen.release.set()
            server.close()


class Concurrency(ServeTest):
    def test_eight_threads_same_as_sequential(self):
        sequential = {q: self.call("POST", "/answer", {"query": q})[1] for q in QUESTIONS}
        results, errors = [], []

        def client(n):
            try:
                for i in range(len(QUESTIONS)):
                    q = QUESTIONS[(n + i) % len(QUESTIONS)]
                    results.append((q, self.call("POST", "/answer", {"query": q})))
            except Exception as exc:                               # pragma: no cover - reported below
                errors.append(exc)
        threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(errors, [])
        self.assertEqual(len(results), 8 * len(QUESTIONS))
        for q, (status, body, _) in results:
            self.assertEqual(status, 200)
            self.assertEqual(body, sequential[q], q)
        self.assertEqual({sequential[q]["decision"] for q in QUESTIONS}, {"ANSWER", "ABSTAIN"})


def _check_schema(test, value, schema, where="$"):
    """A small OpenAPI 3.0 subset check: type (with nullable), enum, required, properties, items."""
    if value is None:
        test.assertTrue(schema.get("nullable"), "%s: null where %s is not nullable" % (where, schema.get("type")))
        return
    types = {"object": dict, "array": list, "string": str, "boolean": bool, "integer": int, "number": (int, float)}
    t = schema.get("type")
    if t:
        test.assertIsInstance(value, types[t], where)
        if t in ("integer", "number"):
            test.assertNotIsInstance(value, bool, where)
    if "enum" in schema:
        test.assertIn(value, schema["enum"], where)
    if t == "object":
        for key in schema.get("required", []):
            test.assertIn(key, value, "%s: required %r missing" % (where, key))
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                _check_schema(test, value[key], sub, where + "." + key)
    if t == "array":
        for i, item in enumerate(value):
            _check_schema(test, item, schema.get("items", {}), "%s[%d]" % (where, i))


class Issue31Server(unittest.TestCase):
    """Issue 31 item 7: debug routes off by default, an optional bearer token, a non-loopback
    bind only with --allow-remote, typed response schemas in OpenAPI."""

    def start(self, **options):
        server = Server(**options)
        self.addCleanup(server.close)
        return server

    def test_debug_routes_off_unless_asked(self):
        server = self.start(debug_routes=False)
        status, body, _ = server.call("GET", "/debug/retrieval?q=refund")
        self.assertEqual(status, 404)
        self.assertIn("--debug-routes", body["error"])
        self.assertEqual(server.call("GET", "/health")[0], 200)

    def test_bearer_token(self):
        server = self.start(token="s3cret-token")
        body = {"query": QUESTIONS[0]}
        for headers, want in (({}, 401), ({"Authorization": "Bearer wrong"}, 401),
                              ({"Authorization": "Basic s3cret-token"}, 401),
                              ({"Authorization": "Bearer s3cret-token"}, 200)):
            with self.subTest(headers=headers):
                status, got, hdrs = server.call("POST", "/answer", body, headers=headers)
                self.assertEqual(status, want, got)
                if want == 401:
                    self.assertEqual(hdrs.get("WWW-Authenticate"), 'Bearer realm="mini_rag"')
        self.assertEqual(server.call("GET", "/health")[0], 200)              # liveness stays open
        self.assertEqual(server.call("GET", "/docs")[0], 401)

    def test_bind_rules(self):
        from mini_rag.commands.serve import check_bind
        from mini_rag.errors import MiniRagError
        for host in ("127.0.0.1", "127.0.0.2", "::1", "localhost", "[::1]"):
            with self.subTest(host=host):
                self.assertIsNone(check_bind(host, False))
        for host in ("0.0.0.0", "192.168.1.5", "::", "example.com"):
            with self.subTest(host=host):
                with self.assertRaises(MiniRagError) as cm:
                    check_bind(host, False)
                self.assertIn("--allow-remote", str(cm.exception))
                self.assertIn("reachable from other machines", check_bind(host, True))

    def test_cli_refuses_remote_bind_and_bad_token_files(self):
        import subprocess
        import tempfile
        env = dict(os.environ, PYTHONPATH=ROOT)
        with tempfile.TemporaryDirectory() as tmp:
            empty = os.path.join(tmp, "empty")
            open(empty, "w").close()
            for argv, want in ((["--host", "0.0.0.0"], "is not a loopback address"),
                               (["--token-file", os.path.join(tmp, "none")], "cannot read --token-file"),
                               (["--token-file", empty], "must hold one token")):
                with self.subTest(argv=argv):
                    p = subprocess.run([sys.executable, "-m", "mini_rag", "serve", "--port", "0"] + argv, cwd=tmp,
                                       env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       universal_newlines=True, timeout=60)
                    self.assertEqual(p.returncode, 2)
                    self.assertIn(want, p.stderr)

    def test_openapi_responses_are_typed_and_met(self):
        spec = openapi()
        for path, ops in spec["paths"].items():
            for method, op in ops.items():
                schema = op["responses"]["200"]["content"]["application/json"]["schema"]
                with self.subTest(route=(method, path)):
                    self.assertEqual(schema["type"], "object")
                    self.assertTrue(schema.get("properties"), "untyped 200 response")
        server = self.start()
        for method, path, body in (("POST", "/answer", {"query": QUESTIONS[0]}),
                                   ("POST", "/validate", {"answer": "x", "citations": [], "retrieved_chunks": []}),
                                   ("GET", "/debug/retrieval?q=refund", None), ("GET", "/debug/conflicts?q=refund", None),
                                   ("GET", "/debug/decision?q=refund", None), ("GET", "/health", None),
                                   ("GET", "/docs", None), ("GET", "/openapi.json", None)):
            with self.subTest(route=(method, path)):
                status, got, _ = server.call(method, path, body)
                self.assertEqual(status, 200, got)
                op = spec["paths"][path.split("?")[0]][method.lower()]
                _check_schema(self, got, op["responses"]["200"]["content"]["application/json"]["schema"])



def raw_request(server, data, source="127.0.0.1", timeout=20):
    """Send ``data`` on a new connection from ``source``; (status, headers, body) of the answer.
    A reset or a closed connection without an answer raises (ConnectionError, ValueError)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.bind((source, 0))
        s.connect((server.host, server.port))
        s.sendall(data)
        buf = b""
        while True:
            head, sep, rest = buf.partition(b"\r\n\r\n")
            if sep:
                headers = {}
                for line in head.split(b"\r\n")[1:]:
                    k, _, v = line.partition(b":")
                    headers[k.strip().lower().decode()] = v.strip().decode()
                if len(rest) >= int(headers.get("content-length", 0)):
                    return int(head.split(b" ")[1]), headers, rest
            block = s.recv(65536)
            if not block:
                raise ValueError("connection closed unanswered after %d bytes" % len(buf))
            buf += block


def post(path, body):
    data = body if isinstance(body, bytes) else json.dumps(body).encode("utf-8")
    return (b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
            % (path.encode(), len(data))) + data


def depth_by_hand(text):
    """Deepest nesting of [ and { outside strings, by a character-by-character state machine
    (an independent implementation of serve._too_deep's measure); in a string a backslash
    escapes the next character."""
    depth = deepest = 0
    in_string = escaped = False
    for c in text:
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth = max(0, depth - 1)                # a close with nothing open closes nothing
    return deepest


class CountedStr(str):
    """A string that counts the equality tests made on it (a list membership test makes one per
    element; a set or dict lookup none unless hashes collide)."""
    calls = [0]
    __hash__ = str.__hash__

    def __eq__(self, other):
        CountedStr.calls[0] += 1
        return str.__eq__(self, other)


class Issue44Bodies(ServeTest):
    """Issue 44 item 4: bodies that are JSON but not an object, nested JSON, /validate's cost."""

    def test_json_but_not_an_object_is_400_at_once(self):
        for raw, kind in ((b"null", "null"), (b"3", "number"), (b"-0.5e3", "number"), (b'"x"', "string"),
                          (b"[]", "array"), (b"true", "boolean"), (b"false", "boolean")):
            for path in ("/answer", "/validate"):
                with self.subTest(body=raw, path=path):
                    t0 = time.monotonic()
                    status, _, body = raw_request(self.server, post(path, raw))
                    self.assertEqual((status, json.loads(body)),
                                     (400, {"error": "the body must be one JSON object, got %s" % kind}))
                    self.assertLess(time.monotonic() - t0, 2.0)       # was 408 after 10 s for null

    def test_deep_json_is_400(self):
        from mini_rag.commands.serve import MAX_JSON_DEPTH
        want = {"error": "body nests arrays and objects more than %d deep" % MAX_JSON_DEPTH}
        for name, raw in (("500k arrays", b"[" * 500000 + b"]" * 500000),
                          ("in a field", b'{"query": ' + b"[" * 100000 + b"]" * 100000 + b"}"),
                          ("objects", b'{"a":' * 50000 + b"1" + b"}" * 50000),
                          ("unclosed", b"[" * 200000),
                          ("unclosed after a string", b'["x", ' + b"{" * 200000 + b'"y'),
                          ("just over", b'{"query": ' + b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH + b"}")):
            with self.subTest(name):
                status, _, body = raw_request(self.server, post("/answer", raw))
                self.assertEqual((status, json.loads(body)), (400, want))
        # at the limit, and brackets inside strings (escaped quotes too), are not nesting
        for raw, error in ((b'{"query": ' + b"[" * (MAX_JSON_DEPTH - 1) + b"]" * (MAX_JSON_DEPTH - 1) + b"}",
                            "query must be a string, got [[[["),
                           (b'{"query": "[[[[\\"[[[[' + b"[" * 3000 + b'"}', None)):
            with self.subTest(raw=raw[:30]):
                status, _, body = raw_request(self.server, post("/answer", raw))
                if error:
                    self.assertEqual(status, 400)
                    self.assertTrue(json.loads(body)["error"].startswith(error), body[:100])
                else:
                    self.assertEqual(status, 200, body[:200])

    def test_depth_check_agrees_with_a_state_machine(self):
        import random
        from mini_rag.commands.serve import _too_deep
        rng = random.Random(44)

        def value(depth):
            if depth == 0 or rng.random() < 0.3:
                return rng.choice(["a[", '"]{', "\\", "\\\"[", "x" * rng.randint(0, 3), 1, None, True, "é["])
            if rng.random() < 0.5:
                return [value(depth - 1) for _ in range(rng.randint(0, 3))]
            return {rng.choice(["k", "[", "{\\"]) + str(i): value(depth - 1) for i in range(rng.randint(0, 3))}
        documents = [json.dumps(value(rng.randint(0, 9))) for _ in range(2000)]
        documents += ['"[[[["', '"\\"[[[["', '"\\\\"', '[["]"]]', "[" * 10 + "]" * 10, "[]" * 40 + "[[[]]]"]
        for text in documents:                       # JSON: exact
            for limit in (1, 2, 3, 5):
                with self.subTest(text=text[:60], limit=limit):
                    self.assertEqual(_too_deep(text, limit), depth_by_hand(text) > limit)
        alphabet = ['[', ']', '{', '}', '"', '\\', 'a', ',', ':', '1']
        for _ in range(3000):                        # any text: never refused at or under the limit,
            text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80)))   # always over twice it
            for limit in (1, 2, 3, 5):
                deepest = depth_by_hand(text)
                if deepest <= limit:
                    self.assertFalse(_too_deep(text, limit), (text, limit))
                if deepest > 2 * limit:
                    self.assertTrue(_too_deep(text, limit), (text, limit))

    def test_validate_is_linear_in_citations(self):
        # equality tests on the citations: a list membership test per citation made n*(n-1)/2
        service = self.server.service
        counts = {}
        for n in (500, 2000):
            cits = [CountedStr("c%06d" % i) for i in range(n)]
            CountedStr.calls[0] = 0
            out = service.validate({"answer": "x", "citations": cits,
                                    "retrieved_chunks": [{"chunk_id": "c000001", "text": "x"}]})
            counts[n] = CountedStr.calls[0]
            self.assertEqual(len(out["errors"]), (n - 1) + 1)           # n-1 unmatched + over max_citations
        self.assertLessEqual(counts[2000], 4 * counts[500] + 100, counts)
        self.assertLess(counts[2000], 2000 * 5, counts)                 # the list made 1,999,000

    def test_validate_90000_citations(self):
        cits = ["c%06d" % i for i in range(90000)]
        t0 = time.monotonic()
        status, _, body = raw_request(self.server, post("/validate", {
            "answer": "x", "citations": cits, "retrieved_chunks": [{"chunk_id": "c000001", "text": "x"}]}), timeout=60)
        out = json.loads(body)
        self.assertEqual((status, out["citation_valid"], len(out["errors"])), (200, False, 90000))
        self.assertEqual(out["errors"][-1], "90000 citations, at most 5 allowed")
        self.assertLess(time.monotonic() - t0, 20)                      # was 72-95 s


class Issue44Connections(unittest.TestCase):
    """Issue 44 item 4: the caps count work, not sockets; /health is never refused; idle
    connections time out or make room; a burst gets 200 or 503 with Retry-After, never a reset."""

    def setUp(self):
        self.socks = []
        self.addCleanup(lambda: [s.close() for s in self.socks])

    def start(self, **options):
        server = Server(**options)
        self.addCleanup(server.close)
        return server

    def idle(self, server, n, source="127.0.0.1"):
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.settimeout(10)
            s.bind((source, 0))
            s.connect((server.host, server.port))
            self.socks.append(s)
        deadline = time.monotonic() + 5                  # bounded: until the server has them all
        while len(server.httpd._conns) < n and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.socks[-n:]

    def test_idle_connections_do_not_count(self):
        server = self.start(max_per_client=4)
        self.idle(server, 40)                            # 10x the per-client cap, all from 127.0.0.1
        self.assertEqual(len(server.httpd._conns), 40)
        for path, body in (("/health", None), ("/answer", {"query": ANSWER_Q}), ("/docs", None)):
            with self.subTest(path=path):
                self.assertEqual(server.call("POST" if body else "GET", path, body)[0], 200)

    def test_work_cap_per_address_and_health(self):
        gen = Blocking()
        server = self.start(generator=gen, max_per_client=2)
        try:
            held = []
            threads = [threading.Thread(target=lambda: held.append(raw_request(
                server, post("/answer", {"query": ANSWER_Q}), timeout=40))) for _ in range(2)]
            for t in threads:
                t.start()
            deadline = time.monotonic() + 10
            while server.httpd._work.get("127.0.0.1", 0) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            status, headers, body = raw_request(server, post("/validate", {
                "answer": "x", "citations": [], "retrieved_chunks": []}))
            self.assertEqual((status, headers.get("retry-after"), json.loads(body)),
                             (503, "1", {"error": "too many requests in progress from 127.0.0.1 (at most 2)"}))
            for _ in range(20):                          # liveness is never counted nor refused
                self.assertEqual(raw_request(server, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")[0], 200)
            status, _, _ = raw_request(server, post("/validate", {"answer": "x", "citations": [],
                                                                 "retrieved_chunks": []}), source="127.0.0.2")
            self.assertEqual(status, 200)                # another address has its own budget
        finally:
            gen.release.set()
        for t in threads:
            t.join(40)
        self.assertEqual(sorted(r[0] for r in held), [200, 200])
        deadline = time.monotonic() + 5                  # the handler gives its unit back just after
        while server.httpd._work and time.monotonic() < deadline:   # the client has its answer
            time.sleep(0.01)
        self.assertEqual(server.httpd._work, {})

    def test_idle_connections_time_out(self):
        server = self.start(header_timeout=0.5)
        s, = self.idle(server, 1)
        t0 = time.monotonic()
        self.assertEqual(s.recv(100), b"")
        self.assertLess(time.monotonic() - t0, 4)
        deadline = time.monotonic() + 5
        while server.httpd._conns and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertEqual(len(server.httpd._conns), 0)

    def test_connection_cap_closes_the_oldest_idle(self):
        server = self.start(max_connections=8)
        socks = self.idle(server, 8)
        status, _, _ = raw_request(server, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertEqual(status, 200)
        self.assertEqual(socks[0].recv(100), b"")        # the oldest made room
        self.assertLessEqual(len(server.httpd._conns), 8)

    def burst(self, server, n=200):
        results, go = [], threading.Event()

        def one():
            go.wait(10)
            try:
                status, headers, _ = raw_request(server, post("/answer", {"query": ANSWER_Q}), timeout=60)
                results.append((status, headers.get("retry-after")))
            except (OSError, ValueError) as exc:
                results.append((type(exc).__name__, None))
        threads = [threading.Thread(target=one) for _ in range(n)]
        for t in threads:
            t.start()
        go.set()
        return results, threads

    def test_burst_gets_200_or_503_never_a_reset(self):
        server = self.start(access_log=False)
        results, threads = self.burst(server)
        for t in threads:
            t.join(90)
        self.assertEqual(len(results), 200)
        self.assertEqual({r for r in results if r not in ((200, None), (503, "1"))}, set())

    def test_burst_over_the_work_cap(self):
        gen = Blocking()
        server = self.start(generator=gen, access_log=False)     # 16 per address, 64 slots
        try:
            results, threads = self.burst(server)
            deadline = time.monotonic() + 60             # the 184 refused answer while 16 are held
            while len(results) < 184 and time.monotonic() < deadline:
                time.sleep(0.02)
        finally:
            gen.release.set()
        for t in threads:
            t.join(90)
        import collections
        self.assertEqual(collections.Counter(results), {(503, "1"): 184, (200, None): 16})


if __name__ == "__main__":
    unittest.main()

"""Command ``serve``: seed 000's HTTP API on the standard library.

``python -m mini_rag serve [--host 127.0.0.1] [--port 8000] [--config FILE]`` loads the
index once (rebuilt first when stale, like every other command) and answers on a
``http.server.ThreadingHTTPServer``; every request thread reads the same index and
pipeline, which nothing writes after start-up.

===========================  ===============================================================
route                        what it returns
===========================  ===============================================================
``POST /answer``             ``{query, top_k?, freshness_days?, doc_scope?}`` -> the
                             pipeline's decision in seed 000's shape (decision, answer,
                             citations, retrieval, retrieval_quality, validation, conflicts,
                             reasons, signals, risk) plus ``decided_by`` and ``message``
``POST /validate``           ``{answer, citations, retrieved_chunks}`` -> ``{citation_valid,
                             errors, warnings}`` (seed 000/003's citation rules)
``GET /debug/retrieval``     ``?q=&top_k=&freshness_days=&doc_scope=``: retrieval and its
                             quality signals; the generator is never called
``GET /debug/conflicts``     ... plus the conflicts among the phase B evidence
``GET /debug/decision``      ... plus risk and the retrieval half's decision (``null`` when
                             the generator would be asked)
``GET /health``              ``{"status": "ok", ...}``
``GET /docs``                the documents loaded: ids, titles, dates, chunk counts
``GET /openapi.json``        an OpenAPI 3.0 description of these routes (:data:`ROUTES`)
===========================  ===============================================================

Request parameters, for ``/answer`` and the debug routes (each optional):

* ``top_k``: integer 1..:data:`MAX_TOP_K`, the candidates retrieved (``[retrieval] top_k``);
* ``freshness_days``: integer 1..36500, the age after which an effective date is stale,
  for every risk level (``[guards] freshness_days`` and ``freshness_days_high_risk``);
* ``doc_scope``: one document's ``doc_id`` (answer from that document only, as a gold
  row's ``doc_scope`` and ``ask --scope``), or ``"MIXED"`` or one authority of the corpus
  (``[retrieval] authority_scope``); ``GET /docs`` lists both.

A request that changes one of them is answered by a pipeline built for those values
over the same index (at most :data:`MAX_VARIANTS` are kept, least recently used first
out).  Unknown fields and parameters are errors, with the closest known name.

Errors are JSON ``{"error": "..."}``: 400 bad JSON, a body that is not one JSON object
or nests arrays and objects more than :data:`MAX_JSON_DEPTH` deep, a missing or wrongly
typed field, an unknown parameter; 404 unknown path; 405 known path, other method
(``Allow`` says which); 411 a POST without ``Content-Length``; 413 a body over
``--max-body`` bytes (default 1 MiB); 503 (with ``Retry-After``) more than
``--max-requests`` requests in flight, or more than ``--max-per-client`` in progress from
one address (``/health`` is never refused); 500 anything
else, logged with its traceback on stderr, never sent to the client.  The server binds
to loopback unless ``--host`` says otherwise; a client that sends nothing for
``--timeout`` seconds is disconnected.  One access-log line per request on stderr
(``--quiet`` turns it off).
"""
from __future__ import annotations

import collections
import copy
import difflib
import hmac
import io
import ipaddress
import json
import os
import re
import socket
import sys
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import parse_qs, urlsplit

from ..guard import guards
from ..errors import MiniRagError
from ..pipeline import Pipeline, retrieval_half, conflict_json, question_first
from ..search.retrieve import dated_as_of
from .serve_api import (DEBUG_PATHS, ERROR_STATUSES, MAX_TOP_K, OPEN_PATHS,  # noqa: F401
                        RESPONSES, ROUTES, openapi)

__all__ = ["ROUTES", "Service", "ApiError", "make_server", "openapi", "register", "cmd_serve"]

DEFAULT_MAX_BODY = 1 << 20
DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_REQUESTS = 64
#: Connection budgets (issues 33 and 44): a request's line and headers must arrive within
#: HEADER_TIMEOUT seconds (an idle keep-alive connection is closed then), its body within
#: BODY_TIMEOUT (else 408), at most MAX_HEAD_BYTES of them (else 431).  The caps count work,
#: not sockets: a request is work once its body is read; one client address has at most
#: DEFAULT_MAX_PER_CLIENT requests in work (more get 503 with Retry-After), /health is never
#: counted nor refused, and /health, /docs and /openapi.json take none of the --max-requests
#: slots.  At most DEFAULT_MAX_CONNECTIONS connections are open: a new one closes the oldest
#: that is not working (idle first), so idle or slow sockets cannot lock anyone out.
HEADER_TIMEOUT = 10.0
BODY_TIMEOUT = 10.0
MAX_HEAD_BYTES = 64 * 1024
DEFAULT_MAX_PER_CLIENT = 16
DEFAULT_MAX_CONNECTIONS = 256
#: Listen backlog: a burst of connections waits in the kernel's queue, never reset (issue 44).
LISTEN_BACKLOG = 1024
#: Seconds a refused or timed-out client has for its unread bytes to be drained before the
#: socket closes (closing with unread bytes makes the kernel send a reset, losing the answer).
LINGER_SECONDS = 2.0
#: Seconds a client told 503 is asked to wait (Retry-After).
RETRY_AFTER = 1
#: Deepest nesting of arrays and objects accepted in a body (the API's bodies need 3).
MAX_JSON_DEPTH = 32
_SLOTLESS = ("health", "docs", "openapi")
MAX_QUERY_CHARS = 4000
MAX_VARIANTS = 8
PARAMS = ("top_k", "freshness_days", "doc_scope")


class ApiError(MiniRagError):
    """A request the API refuses: ``status`` and a one-line message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _unknown(kind: str, name: str, known) -> ApiError:
    close = difflib.get_close_matches(name, sorted(known), n=1)
    return ApiError(400, "unknown %s %r (known: %s)%s" % (kind, name, ", ".join(sorted(known)),
                                                         "; did you mean %r?" % close[0] if close else ""))


# ------------------------------------------------------------------ the routes' logic

class Service:
    """What the routes compute, without HTTP (tests call it directly too).

    ``Service(config)`` opens the index through :class:`~mini_rag.pipeline.Pipeline`;
    ``pipeline=`` passes one already built (tests).  Thread-safe: the pipelines are only
    read, and the variant cache is guarded by a lock.
    """

    def __init__(self, config: Dict[str, Any], pipeline: Optional[Pipeline] = None) -> None:
        self.config = config
        self.base = pipeline if pipeline is not None else Pipeline(config)
        self.index = self.base.index
        self._variants: "collections.OrderedDict[Tuple, Pipeline]" = collections.OrderedDict()
        self._lock = threading.Lock()
        chunks = list(getattr(self.index, "chunks", []) or [])
        self.authorities = sorted({c.authority for c in chunks if c.authority})
        docs: Dict[str, Dict[str, Any]] = {}
        for c in chunks:
            d = docs.setdefault(c.doc_id, {"doc_id": c.doc_id, "title": c.title, "effective": c.effective,
                                           "authority": c.authority, "chunks": 0})
            d["chunks"] += 1
        self.documents = [docs[k] for k in sorted(docs)]
        self._doc_ids = frozenset(docs)
        self.chunk_count = len(chunks)

    # -------------------------------------------------------------- parameters

    def pipeline_for(self, raw: Dict[str, Any]) -> Pipeline:
        """The pipeline for a request's ``top_k``, ``freshness_days`` and ``doc_scope``: the
        configured one when it gives none of them, else one built (and kept) for them."""
        top_k = _int_field(raw, "top_k", 1, MAX_TOP_K)
        fresh = _int_field(raw, "freshness_days", 1, 36500)
        scope = raw.get("doc_scope")
        if scope is not None and self.document_scope(raw) is not None:
            scope = None                          # one document: answer() passes it on
        if scope is not None:
            if not isinstance(scope, str) or not scope.strip():
                raise ApiError(400, "doc_scope must be a non-empty string, got %s" % _short(scope))
            known = {a.casefold(): a for a in self.authorities}
            if scope.upper() != "MIXED" and scope.casefold() not in known:
                raise ApiError(400, "doc_scope must be a doc_id, MIXED or one of the corpus's authorities "
                               "(%s), got %r" % (", ".join(self.authorities) or "none", scope))
            scope = "MIXED" if scope.upper() == "MIXED" else known[scope.casefold()]
        key = (top_k, fresh, scope)
        if key == (None, None, None):
            return self.base
        with self._lock:
            p = self._variants.get(key)
            if p is not None:
                self._variants.move_to_end(key)
                return p
            cfg = copy.deepcopy(self.config)
            if top_k is not None:
                cfg["retrieval"]["top_k"] = top_k
            if scope is not None:
                cfg["retrieval"]["authority_scope"] = scope
            if fresh is not None:
                cfg["guards"]["freshness_days"] = cfg["guards"]["freshness_days_high_risk"] = fresh
            retriever = type(self.base.retriever)(self.index, cfg)
            p = Pipeline(cfg, retriever=retriever, generator=self.base.generator)
            self._variants[key] = p
            while len(self._variants) > MAX_VARIANTS:
                self._variants.popitem(last=False)
            return p

    def document_scope(self, raw: Dict[str, Any]) -> Optional[str]:
        """The request's ``doc_scope`` when it names a document of the corpus, else None."""
        scope = raw.get("doc_scope")
        return scope if isinstance(scope, str) and scope in self._doc_ids else None

    # -------------------------------------------------------------- routes

    def answer(self, body: Dict[str, Any]) -> Dict[str, Any]:
        _check_fields(body, required={"query": str}, optional=PARAMS)
        query = _query(body["query"])
        p = self.pipeline_for(body)
        result = p.answer(query, doc_scope=self.document_scope(body))
        row = result.row
        hits = result.retrieval.hits
        docs = {h.chunk_id: h.doc_id for h in hits}
        shipped = row["answer_json"]["citations"]
        out = {"query": query, "decision": row["decision"],
               "answer": row["answer_json"]["claim"] if row["decision"] == "ANSWER" else row["message"],
               "citations": shipped, "confidence": row["confidence"]}
        out.update(_retrieval_json(p, result.retrieval, row["risk"]["level"], result.retrieval.question))
        out["validation"] = row["validation"]
        out["conflicts"] = _conflicts_json(row["conflicts"], docs)
        out["reasons"] = row["reasons"]
        out["message"] = row["message"]
        out["decided_by"] = row["decided_by"]
        out["signals"] = _signals(out["retrieval_quality"])
        out["risk"] = {"risk_level": row["risk"]["level"], "matched_keywords": row["risk"]["matched"]}
        return out

    def validate(self, body: Dict[str, Any]) -> Dict[str, Any]:
        _check_fields(body, required={"answer": str, "citations": list, "retrieved_chunks": list}, optional=())
        answer = body["answer"]
        citations = body["citations"]
        for i, c in enumerate(citations):
            if not isinstance(c, str):
                raise ApiError(400, "citations[%d] must be a string, got %s" % (i, _short(c)))
        texts: Dict[str, str] = {}
        for i, chunk in enumerate(body["retrieved_chunks"]):
            if not isinstance(chunk, dict) or not isinstance(chunk.get("chunk_id"), str) or not chunk["chunk_id"]:
                raise ApiError(400, "retrieved_chunks[%d] must be an object with a non-empty string chunk_id, "
                                    "got %s" % (i, _short(chunk)))
            text = chunk.get("text", "")
            if not isinstance(text, str):
                raise ApiError(400, "retrieved_chunks[%d].text must be a string, got %s" % (i, _short(text)))
            texts.setdefault(chunk["chunk_id"], text)
        refusal = self.config["answer"]["refusal"]
        is_refusal = not answer.strip() or answer.strip().casefold() == refusal.casefold()
        check = guards.validate_citations(citations, list(texts), is_refusal=is_refusal,
                                          max_citations=int(self.config["guards"]["max_citations"]))
        warnings = list(check.warnings)
        analyzer = self.base.analyzer
        cited_terms = set()
        for c in dict.fromkeys(citations):
            cited_terms.update(analyzer.analyze(texts.get(c, "")))
        if citations and not is_refusal and not set(analyzer.analyze(answer)) & cited_terms:
            warnings.append("the answer shares no keyword with its cited chunks")
        return {"citation_valid": check.valid, "errors": check.errors, "warnings": warnings}

    def debug(self, what: str, query_args: Dict[str, Any]) -> Dict[str, Any]:
        _check_fields(query_args, required={"q": str}, optional=PARAMS)
        query = _query(query_args["q"])
        p = self.pipeline_for(query_args)
        cfg = p.config
        doc = self.document_scope(query_args)
        qa = p.analyze(query, doc)             # the question analyzed once, as Pipeline.answer does
        asked = qa.text
        retrieval, qa = p._retrieve(qa, doc)
        risk = guards.classify_risk(asked, p.analyzer, cfg["risk"], terms=qa.analyzed)
        out: Dict[str, Any] = {"query": query}
        out.update(_retrieval_json(p, retrieval, risk.level, asked))
        if what == "retrieval":
            return out
        facts_a, facts_b = p.facts(asked, retrieval, qa, doc)
        q_terms = qa.terms
        # as the pipeline computes them for an answer that cites nothing (no generator here)
        pairs = p.conflicts(asked, facts_a, retrieval, qa, [], doc)
        pairs = question_first(pairs, q_terms, p.analyzer, [])
        out["conflicts"] = _conflicts_json([conflict_json(c) for c in pairs],
                                           {h.chunk_id: h.doc_id for h in retrieval.hits})
        if what == "conflicts":
            return out
        early = retrieval_half(len(retrieval.hits), facts_b, cfg["guards"])
        out["risk"] = {"risk_level": risk.level, "matched_keywords": risk.matched}
        out["validation"] = None
        decision = None
        if early is not None:
            from ..guard.decision import Signals, decide
            decision = decide(Signals(low_confidence=early, risk=risk.level))
        out["decision_result"] = {
            "decision": decision.decision if decision else None,
            "decided_by": "retrieval" if decision else None,
            "reasons": decision.reasons if decision else [],
            "user_message": decision.message if decision else "",
            "would_call_generator": decision is None,
            "phase_b_facts": [f.chunk_id for f in facts_b],
            "thresholds": {"min_similarity": retrieval.signals.get("threshold"),
                           "min_chunks": int(cfg["guards"].get("min_chunks", 1)),
                           "freshness_days": out["retrieval_quality"]["freshness"]["freshness_days"],
                           "max_citations": int(cfg["guards"]["max_citations"])},
            "signals": _signals(out["retrieval_quality"]),
            "risk": out["risk"],
        }
        out["question_analysis"] = qa.to_json()
        return out

    def health(self) -> Dict[str, Any]:
        return {"status": "ok", "documents": len(self.documents), "chunks": self.chunk_count,
                "generator": getattr(self.base.generator, "name", "")}

    def docs(self) -> Dict[str, Any]:
        return {"count": len(self.documents), "authorities": self.authorities, "documents": self.documents}


# ------------------------------------------------------------------ response shapes

def _retrieval_json(p: Pipeline, retrieval: Any, risk_level: str, question: str = "") -> Dict[str, Any]:
    """Seed 000's ``retrieval`` and ``retrieval_quality``; freshness over every hit (an old
    edition the question names is not stale, as in ``Pipeline.answer``)."""
    hits = retrieval.hits
    chunks = [{"doc_id": h.doc_id, "chunk_id": h.chunk_id, "rank": h.rank, "timestamp": h.effective or None,
               "similarity": h.similarity, "title": h.title, "heading": h.heading,
               "section": list(getattr(h, "section", []) or []), "text": h.text}
              for h in hits]
    fresh = guards.check_freshness([(h.chunk_id, h.doc_id, h.effective, h.metadata) for h in hits],
                                   risk_level, p.config["guards"], question=question)
    s = retrieval.signals
    return {
        "retrieval": {"top_k": int(p.config["retrieval"]["top_k"]), "doc_scope": retrieval.scope,
                      "chunks": chunks},
        "retrieval_quality": {
            "confidence": {"max": s.get("max"), "mean": s.get("mean"), "gap": s.get("gap"),
                           "hit_count": s.get("hit_count")},
            "freshness": {"oldest_timestamp": s.get("oldest_effective"),
                          "newest_timestamp": s.get("newest_effective"),
                          "freshness_violation_count": len(fresh.sources),
                          "freshness_violation": fresh.stale, "freshness_days": fresh.threshold_days,
                          "as_of": dated_as_of(fresh.as_of), "stale": fresh.sources},
            "top_doc_ids": [h.doc_id for h in hits],
            "top_timestamps": [h.effective or None for h in hits],
        },
    }


def _signals(quality: Dict[str, Any]) -> Dict[str, Any]:
    return {"retrieval_confidence_max": quality["confidence"]["max"],
            "retrieval_hit_count": quality["confidence"]["hit_count"],
            "freshness_violation": quality["freshness"]["freshness_violation"]}


def _conflicts_json(pairs: List[Dict[str, Any]], docs: Dict[str, str]) -> Dict[str, Any]:
    """Seed 000's conflicts object from the trace's pairs (``pipeline.conflict_json``)."""
    out = [{"chunk_a": {"doc_id": docs.get(c["a"], c["a"].split("#")[0]), "chunk_id": c["a"]},
            "chunk_b": {"doc_id": docs.get(c["b"], c["b"].split("#")[0]), "chunk_id": c["b"]},
            "reason": c["reason"], "evidence_snippets": dict(c["evidence"]),
            "conflict_type": c["kind"], "axis": c["axis"]} for c in pairs]
    kinds = sorted({c["kind"] for c in pairs})
    return {"conflict_detected": bool(out), "conflict_type": kinds[0] if len(kinds) == 1 else
            ("mixed" if kinds else None), "pairs": out,
            "summary": ("%s conflict detected: %d conflicting pair(s) found" % (
                (kinds[0] if len(kinds) == 1 else "mixed").capitalize(), len(out)))
            if out else "No conflicts detected"}


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _query(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ApiError(400, "query must be a non-empty string, got %s" % _short(value))
    if len(value) > MAX_QUERY_CHARS:
        raise ApiError(400, "query must be at most %d characters, got %d" % (MAX_QUERY_CHARS, len(value)))
    return value


def _int_field(raw: Dict[str, Any], name: str, low: int, high: int) -> Optional[int]:
    """``raw[name]`` as an integer in [low, high]; None when absent."""
    if name not in raw:
        return None
    value = raw[name]
    if isinstance(value, str):                       # a query-string parameter
        try:
            value = int(value.strip())
        except ValueError:
            raise ApiError(400, "%s must be an integer, got %s" % (name, _short(raw[name]))) from None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ApiError(400, "%s must be an integer from %d to %d, got %s" % (name, low, high, _short(value)))
    return value


def _check_fields(body: Any, required: Dict[str, type], optional) -> None:
    if not isinstance(body, dict):
        raise ApiError(400, "the body must be one JSON object, got %s" % _json_type(body))
    known = set(required) | set(optional)
    for name in body:
        if name not in known:
            raise _unknown("field", name, known)
    for name, typ in required.items():
        if name not in body:
            raise ApiError(400, "missing field %r" % name)
        if not isinstance(body[name], typ):
            raise ApiError(400, "%s must be a %s, got %s" % (name, {str: "string", list: "list"}[typ],
                                                              _short(body[name])))


# ------------------------------------------------------------------ HTTP

class _Handler(BaseHTTPRequestHandler):
    """One request: route, parse, call the service, write JSON.  Set up by make_server."""
    protocol_version = "HTTP/1.1"
    server_version = "mini_rag"
    sys_version = ""
    service: Service
    max_body: int = DEFAULT_MAX_BODY
    log_stream: Any = sys.stderr
    slots: threading.BoundedSemaphore

    # ---- connection (issue 33): every read has a deadline, one address a connection cap
    def setup(self) -> None:
        super().setup()
        self._pending = b""

    def _recv(self, deadline: float) -> bytes:
        left = deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout()
        self.connection.settimeout(left)
        return self.connection.recv(65536)

    def handle_one_request(self) -> None:
        """http.server's request reading, with the line and headers read under one deadline."""
        self.close_connection = True
        self._started = time.perf_counter()
        deadline = time.monotonic() + min(self.header_timeout, self.timeout or self.header_timeout)
        buf = self._pending
        self.server.mark(self.connection, "reading" if buf else "idle")
        end = _HEAD_END.search(buf)
        try:
            while end is None:
                if len(buf) > MAX_HEAD_BYTES:
                    self.command, self.path, self.request_version = None, "-", "HTTP/1.0"
                    self._send(431, {"error": "request line and headers over %d bytes" % MAX_HEAD_BYTES}, close=True)
                    return
                data = self._recv(deadline)
                if not data:
                    return
                if not buf:
                    self.server.mark(self.connection, "reading")
                buf += data
                end = _HEAD_END.search(buf)
        except (socket.timeout, OSError):
            if buf.strip():
                self.command, self.path, self.request_version = None, "-", "HTTP/1.0"
                try:
                    self._send(408, {"error": "request headers not received within %g seconds"
                                     % self.header_timeout}, close=True)
                except OSError:
                    pass
            return
        head, self._pending = buf[:end.end()], buf[end.end():]
        line_end = head.find(b"\n") + 1
        self.raw_requestline = head[:line_end]
        saved, self.rfile = self.rfile, io.BytesIO(head[line_end:])
        try:
            if not self.parse_request():
                return
        finally:
            self.rfile = saved
        method = getattr(self, "do_" + self.command, None)
        if method is None:
            self.send_error(501, "unsupported method %r" % self.command)
            return
        method()
        self.wfile.flush()

    def _read_body(self, n: int) -> bytes:
        """``n`` body bytes within BODY_TIMEOUT seconds, else 408."""
        deadline = time.monotonic() + self.body_timeout
        data, self._pending = self._pending[:n], self._pending[n:]
        parts, got = [data], len(data)
        try:
            while got < n:
                block = self._recv(deadline)
                if not block:
                    break
                if got + len(block) > n:
                    block, self._pending = block[:n - got], block[n - got:]
                parts.append(block)
                got += len(block)
        except socket.timeout:
            raise ApiError(408, "body not received within %g seconds (%d of %d bytes)"
                           % (self.body_timeout, got, n)) from None
        return b"".join(parts)

    # ---- dispatch (http.server calls do_<METHOD>; each is _dispatch, set below the class)
    def _dispatch(self, method: str) -> None:
        self._started = time.perf_counter()
        self._consumed = False                           # the request body was read
        path = urlsplit(self.path).path
        route = ROUTES.get((method, path))
        self._body = None
        slot = route is not None and route[0] not in _SLOTLESS
        try:
            if slot and method == "POST":                # read (bounded) before taking a slot
                self._body = self._json_body()
        except ApiError as exc:
            self._send(exc.status, {"error": str(exc)}, close=not self._consumed or exc.status == 408)
            return
        addr = self.client_address[0]
        counted = path != "/health"                      # liveness is never counted nor refused
        if counted and not self.server.begin_work(self.connection, addr):
            self._send(503, {"error": "too many requests in progress from %s (at most %d)"
                             % (addr, self.server.max_per_client)}, close=not self._consumed, retry=True)
            return
        if slot and not self.slots.acquire(blocking=False):
            if counted:
                self.server.end_work(self.connection, addr)
            self._send(503, {"error": "server busy: more than %d requests in flight" % self.server.max_requests},
                       close=True, retry=True)
            return
        try:
            if route is None:
                allowed = sorted(m for m, p in ROUTES if p == path)
                if allowed:
                    raise ApiError(405, "method %s not allowed on %s; use %s" % (method, path, ", ".join(allowed)))
                raise ApiError(404, "no route %s" % _short(path))
            self._authorize(path)
            body = getattr(self, "_route_" + route[0])()
            self._send(200, body)
        except ApiError as exc:
            self._send(exc.status, {"error": str(exc)},
                       allow=sorted(m for m, p in ROUTES if p == path) if exc.status == 405 else None,
                       authenticate=exc.status == 401,
                       close=method != "GET" and not self._consumed)   # unread bytes end the connection
        except MiniRagError as exc:                      # the pipeline refused this input
            self._send(400, {"error": str(exc)})
        except Exception:                                # never a traceback to the client
            self.log_stream.write("mini_rag serve: internal error on %s %s\n%s"
                                  % (method, _printable(self.path), traceback.format_exc()))
            self._send(500, {"error": "internal error"}, close=True)
        finally:
            if slot:
                self.slots.release()
            if counted:
                self.server.end_work(self.connection, addr)

    def _authorize(self, path: str) -> None:
        """404 for a debug route the server does not serve; 401 without the bearer token."""
        if path in DEBUG_PATHS and not getattr(self.server, "debug_routes", False):
            raise ApiError(404, "no route %s (the debug routes are off: serve --debug-routes)" % path)
        token = getattr(self.server, "token", None)
        if token and path not in OPEN_PATHS:
            given = self.headers.get("Authorization", "")
            scheme, _, value = given.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode("utf-8", "replace"),
                                                                      token.encode("utf-8")):
                raise ApiError(401, "missing or wrong bearer token (Authorization: Bearer <token>)")

    # ---- routes
    def _route_answer(self) -> Dict[str, Any]:
        return self.service.answer(self._body if self._consumed else self._json_body())

    def _route_validate(self) -> Dict[str, Any]:
        return self.service.validate(self._body if self._consumed else self._json_body())

    def _route_debug_retrieval(self) -> Dict[str, Any]:
        return self.service.debug("retrieval", self._query_args())

    def _route_debug_conflicts(self) -> Dict[str, Any]:
        return self.service.debug("conflicts", self._query_args())

    def _route_debug_decision(self) -> Dict[str, Any]:
        return self.service.debug("decision", self._query_args())

    def _route_health(self) -> Dict[str, Any]:
        return self.service.health()

    def _route_docs(self) -> Dict[str, Any]:
        return self.service.docs()

    def _route_openapi(self) -> Dict[str, Any]:
        return openapi()

    # ---- input
    def _json_body(self) -> Any:
        if self.headers.get("Transfer-Encoding"):
            raise ApiError(411, "chunked bodies are not accepted; send Content-Length")
        length = self.headers.get("Content-Length")
        if length is None:
            raise ApiError(411, "Content-Length required")
        try:
            n = int(length)
        except ValueError:
            raise ApiError(400, "Content-Length must be an integer, got %s" % _short(length)) from None
        if n < 0:
            raise ApiError(400, "Content-Length must be >= 0, got %d" % n)
        if n > self.max_body:
            raise ApiError(413, "body of %d bytes is over the limit of %d bytes" % (n, self.max_body))
        data = self._read_body(n)
        self._consumed = True
        if len(data) != n:
            raise ApiError(400, "body ended after %d of %d bytes" % (len(data), n))
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ApiError(400, "body must be UTF-8") from None
        if _too_deep(text, MAX_JSON_DEPTH):
            raise ApiError(400, "body nests arrays and objects more than %d deep" % MAX_JSON_DEPTH)
        try:
            body = json.loads(text)
        except RecursionError:                           # not expected under the depth check
            raise ApiError(400, "body nests arrays and objects more than %d deep" % MAX_JSON_DEPTH) from None
        except ValueError as exc:
            raise ApiError(400, "body is not JSON: %s" % exc) from None
        if not isinstance(body, dict):                   # at once: never read the body twice
            raise ApiError(400, "the body must be one JSON object, got %s" % _json_type(body))
        return body

    def _query_args(self) -> Dict[str, str]:
        query = urlsplit(self.path).query
        try:
            parsed = parse_qs(query, keep_blank_values=True, strict_parsing=bool(query), errors="strict")
        except (ValueError, UnicodeDecodeError) as exc:
            raise ApiError(400, "bad query string: %s" % exc) from None
        out: Dict[str, str] = {}
        for name, values in parsed.items():
            if len(values) > 1:
                raise ApiError(400, "parameter %r given %d times" % (name, len(values)))
            out[name] = values[0]
        return out

    # ---- output
    def _send(self, status: int, body: Any, allow: Optional[List[str]] = None, close: bool = False,
              authenticate: bool = False, retry: bool = False) -> None:
        data = (json.dumps(body, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        if allow:
            self.send_header("Allow", ", ".join(allow))
        if authenticate:
            self.send_header("WWW-Authenticate", 'Bearer realm="mini_rag"')
        if retry:
            self.send_header("Retry-After", str(RETRY_AFTER))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.server.access_log:                       # logged before the body goes out
            started = getattr(self, "_started", None)
            ms = (time.perf_counter() - started) * 1000.0 if started is not None else 0.0
            self.log_stream.write("%s - %s %s %d %d %.1fms\n" % (
                self.client_address[0], self.command or "-", _printable(getattr(self, "path", "") or "-"),
                status, len(data), ms))
        if self.command != "HEAD":
            self.wfile.write(data)

    def log_request(self, code: Any = "-", size: Any = "-") -> None:
        pass                                             # one line per request, written by _send

    def send_error(self, code: int, message: Optional[str] = None, explain: Optional[str] = None) -> None:
        """http.server's own errors (bad request line, unknown method, ...), as JSON."""
        self._send(code, {"error": message or self.responses.get(code, ("error",))[0]}, close=True)

    def log_message(self, format: str, *args: Any) -> None:   # http.server's own errors (400, timeouts)
        if self.server.access_log:
            self.log_stream.write("%s - %s\n" % (self.client_address[0], _printable(format % args)))


for _method in ("GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"):
    setattr(_Handler, "do_" + _method, lambda self, m=_method: self._dispatch(m))


def _printable(text: str) -> str:
    """Untrusted text for the log: control characters escaped, at most 300 characters."""
    out = "".join(c if c.isprintable() else "\\x%02x" % ord(c) if ord(c) < 256 else "\\u%04x" % ord(c)
                  for c in text[:300])
    return out + ("..." if len(text) > 300 else "")


_HEAD_END = re.compile(rb"\r?\n\r?\n")


#: A JSON string: a quote, then characters that are not a quote or a backslash, or a backslash
#: and any character, then the closing quote when there is one (so a match never fails once
#: started, and the scan is linear); the first characters of the two branches are disjoint.
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"?', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_OPEN_CLOSE = str.maketrans("[{]}", "(())")


def _too_deep(text: str, limit: int) -> bool:
    """Whether JSON ``text`` nests arrays and objects more than ``limit`` deep, found in
    linear time before parsing (json.loads recurses, and a 500k-deep body used to end the
    connection unanswered, issue 44): strings dropped, brackets kept, then innermost pairs
    removed ``limit`` times; a pair left, or more than ``limit`` brackets never closed, means
    deeper.  Exact on JSON; on text that is not JSON, json.loads then recurses at most
    ``2 * limit`` deep before it refuses the text."""
    if text.count("[") + text.count("{") <= limit:
        return False
    pairs = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text)).translate(_OPEN_CLOSE)
    for _ in range(limit):
        shorter = pairs.replace("()", "")
        if len(shorter) == len(pairs):
            break
        pairs = shorter
    return "()" in pairs or pairs.count("(") > limit


def _json_type(value: Any) -> str:
    """JSON's name for a parsed value's type (null, boolean, number, string, array, object)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "string", list: "array"}.get(type(value), "object")


class _Server(ThreadingHTTPServer):
    """The HTTP server with issue 44's connection accounting: the open connections (oldest
    first, each ``idle``, ``reading`` or ``working``) and the requests in work per address."""
    daemon_threads = True
    access_log = True
    max_requests = DEFAULT_MAX_REQUESTS
    debug_routes = False                  # serve --debug-routes
    token: Optional[str] = None           # serve --token-file
    max_per_client = DEFAULT_MAX_PER_CLIENT
    max_connections = DEFAULT_MAX_CONNECTIONS
    request_queue_size = LISTEN_BACKLOG

    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        self._conns: "collections.OrderedDict[Any, str]" = collections.OrderedDict()
        self._work: Dict[str, int] = {}
        self._clients_lock = threading.Lock()

    # ---- connections: at most max_connections open, the oldest not working closed first
    def process_request(self, request: Any, client_address: Any) -> None:
        with self._clients_lock:
            if len(self._conns) >= self.max_connections:
                victim = self._victim()
                if victim is not None:
                    self._conns.pop(victim)
                    try:
                        victim.shutdown(socket.SHUT_RDWR)   # its thread sees the end and finishes
                    except OSError:
                        pass
            self._conns[request] = "idle"
        super().process_request(request, client_address)

    def _victim(self) -> Any:
        """The oldest idle connection, else the oldest still reading a request; None when all work."""
        for wanted in ("idle", "reading"):
            for conn, state in self._conns.items():
                if state == wanted:
                    return conn
        return None

    def mark(self, conn: Any, state: str) -> None:
        with self._clients_lock:
            if conn in self._conns:
                self._conns[conn] = state

    def shutdown_request(self, request: Any) -> None:
        """Forget the connection, send our end, drain what the client still sends (bounded), close."""
        with self._clients_lock:
            self._conns.pop(request, None)
        try:
            request.shutdown(socket.SHUT_WR)
            _linger(request, LINGER_SECONDS, MAX_HEAD_BYTES + self.RequestHandlerClass.max_body)
        except OSError:
            pass
        self.close_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away (reset, broken pipe, closed for a newer one) is no error to
        print; anything else is logged with its traceback."""
        if isinstance(sys.exc_info()[1], OSError):
            return
        stream = getattr(self.RequestHandlerClass, "log_stream", None) or sys.stderr
        stream.write("mini_rag serve: internal error with %s\n%s" % (client_address[0], traceback.format_exc()))

    # ---- work: requests past their body, per client address
    def begin_work(self, conn: Any, addr: str) -> bool:
        """Count a request of ``addr`` in work; False (not counted) when it already has the most."""
        with self._clients_lock:
            n = self._work.get(addr, 0)
            if n >= self.max_per_client:
                return False
            self._work[addr] = n + 1
            if conn in self._conns:
                self._conns[conn] = "working"
            return True

    def end_work(self, conn: Any, addr: str) -> None:
        with self._clients_lock:
            n = self._work.get(addr, 0) - 1
            if n > 0:
                self._work[addr] = n
            else:
                self._work.pop(addr, None)
            if conn in self._conns:
                self._conns[conn] = "idle"


def _linger(sock: Any, seconds: float, most: int) -> None:
    """Read and drop what the peer sends until it closes, ``seconds`` pass or ``most`` bytes came."""
    deadline = time.monotonic() + seconds
    got = 0
    while got < most:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        sock.settimeout(left)
        block = sock.recv(65536)
        if not block:
            return
        got += len(block)


def make_server(service: Service, host: str = "127.0.0.1", port: int = 8000,
                max_body: int = DEFAULT_MAX_BODY, timeout: float = DEFAULT_TIMEOUT,
                max_requests: int = DEFAULT_MAX_REQUESTS, access_log: bool = True,
                log_stream: Any = None, debug_routes: bool = False,
                token: Optional[str] = None, max_per_client: int = DEFAULT_MAX_PER_CLIENT,
                header_timeout: float = HEADER_TIMEOUT, body_timeout: float = BODY_TIMEOUT,
                max_connections: int = DEFAULT_MAX_CONNECTIONS) -> ThreadingHTTPServer:
    """A bound server (``port=0``: any free port, see ``server.server_address``); call
    ``serve_forever()`` to run it and ``shutdown()`` then ``server_close()`` to stop."""
    handler = type("Handler", (_Handler,), {
        "service": service, "max_body": int(max_body), "timeout": float(timeout),
        "log_stream": log_stream if log_stream is not None else sys.stderr,
        "slots": threading.BoundedSemaphore(int(max_requests)),
        "header_timeout": float(header_timeout), "body_timeout": float(body_timeout)})
    server = _Server((host, port), handler)
    server.access_log = bool(access_log)
    server.max_requests = int(max_requests)
    server.debug_routes = bool(debug_routes)
    server.token = token or None
    server.max_per_client = int(max_per_client)
    server.max_connections = max(1, int(max_connections))
    return server


# ------------------------------------------------------------------ command line

def register(subparsers) -> None:
    s = subparsers.add_parser("serve", help="seed 000's HTTP API (stdlib http.server)",
                              description="Serve POST /answer, POST /validate, /health, /docs and /openapi.json "
                                          "(GET /debug/* with --debug-routes); the index is loaded once.")
    s.add_argument("--host", default="127.0.0.1",
                   help="address to bind (default: 127.0.0.1, loopback only; another needs --allow-remote)")
    s.add_argument("--allow-remote", action="store_true",
                   help="allow a non-loopback --host (prints a warning; use --token-file on a shared network)")
    s.add_argument("--token-file", metavar="FILE",
                   help="require 'Authorization: Bearer <token>' on every route but /health; the token is the "
                        "file's content, stripped (at most %d bytes)" % MAX_TOKEN_BYTES)
    s.add_argument("--debug-routes", action="store_true",
                   help="serve GET /debug/retrieval, /debug/conflicts and /debug/decision (off by default: "
                        "they show retrieval internals and chunk texts)")
    s.add_argument("--port", type=int, default=8000, help="port to bind; 0 picks a free one (default: 8000)")
    s.add_argument("--config", metavar="FILE", help="TOML config overriding the defaults "
                                                    "(default: configs/default.toml when present)")
    s.add_argument("--corpus", metavar="DIR|FILE",
                   help="corpus folder of .md/.rst/.txt files or BEIR .jsonl file (default: [corpus] path); "
                        "a corpus of one's own gets corpus-neutral defaults, as for ask and eval")
    s.add_argument("--index", dest="index_path", metavar="FILE",
                   help="index file (default: [index] path, or runs/index-<hash>.json.gz for a corpus of one's own)")
    s.add_argument("--max-body", type=int, default=DEFAULT_MAX_BODY, metavar="BYTES",
                   help="largest request body accepted; larger ones get 413 (default: 1 MiB)")
    s.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help="drop a client that sends nothing for this long (default: %g)" % DEFAULT_TIMEOUT)
    s.add_argument("--max-requests", type=int, default=DEFAULT_MAX_REQUESTS, metavar="N",
                   help="requests in flight at once; more get 503 (default: %d)" % DEFAULT_MAX_REQUESTS)
    s.add_argument("--quiet", action="store_true", help="no access log on stderr")
    s.add_argument("--max-per-client", type=int, default=DEFAULT_MAX_PER_CLIENT, metavar="N",
                   help="requests one client address may have in progress (idle connections and /health "
                        "do not count); more get 503 (default: %d)" % DEFAULT_MAX_PER_CLIENT)
    s.add_argument("--max-connections", type=int, default=DEFAULT_MAX_CONNECTIONS, metavar="N",
                   help="open connections; a new one past this closes the oldest idle one (default: %d)"
                        % DEFAULT_MAX_CONNECTIONS)
    s.set_defaults(func=cmd_serve)


MAX_TOKEN_BYTES = 4096


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address or ``localhost`` (names are never resolved)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, allow_remote: bool) -> Optional[str]:
    """None for a loopback ``host``; the warning to print for another with ``allow_remote``;
    MiniRagError without it."""
    if is_loopback(host):
        return None
    if not allow_remote:
        raise MiniRagError("--host %s is not a loopback address: the API would answer the network; "
                           "add --allow-remote to mean it (and --token-file to require a token)" % host)
    return "mini_rag serve: warning: listening on %s, reachable from other machines" % host


def read_token(path: str) -> str:
    """The bearer token: the file's content stripped; an error names the file."""
    try:
        st = os.stat(path)
        if not os.path.isfile(path):
            raise MiniRagError("%s: --token-file must be a regular file" % path)
        if st.st_size > MAX_TOKEN_BYTES:
            raise MiniRagError("%s: --token-file is over %d bytes" % (path, MAX_TOKEN_BYTES))
        with open(path, "rb") as fh:
            data = fh.read(MAX_TOKEN_BYTES + 1)
    except OSError as exc:
        raise MiniRagError("%s: cannot read --token-file: %s" % (path, exc.strerror)) from None
    try:
        token = data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise MiniRagError("%s: --token-file is not UTF-8 text" % path) from None
    if not token or any(c.isspace() or not c.isprintable() for c in token):
        raise MiniRagError("%s: --token-file must hold one token: printable, no white space inside" % path)
    return token


def cmd_serve(args) -> int:
    from ..pipeline import open_pipeline
    from .runconfig import resolve
    for name, value, low in (("--port", args.port, 0), ("--max-body", args.max_body, 1),
                             ("--max-requests", args.max_requests, 1)):
        if value < low or (name == "--port" and value > 65535):
            raise MiniRagError("%s must be %s, got %d" % (name, "0..65535" if name == "--port" else ">= 1", value))
    if not args.timeout > 0:
        raise MiniRagError("--timeout must be > 0 seconds, got %r" % args.timeout)
    warning = check_bind(args.host, args.allow_remote)
    token = read_token(args.token_file) if args.token_file else None
    config = resolve(args.config, args.corpus, args.index_path)
    service = Service(config, pipeline=open_pipeline(config))
    try:
        server = make_server(service, args.host, args.port, args.max_body, args.timeout, args.max_requests,
                             access_log=not args.quiet, debug_routes=args.debug_routes, token=token,
                             max_per_client=max(1, args.max_per_client),
                             max_connections=max(1, args.max_connections))
    except OSError as exc:
        raise MiniRagError("cannot listen on %s:%d: %s" % (args.host, args.port, exc.strerror or exc)) from None
    if warning:
        print(warning + ("; a bearer token is required" if token
                         else "; anyone who can reach it can ask (--token-file requires a token)"),
              file=sys.stderr, flush=True)
    host, port = server.server_address[:2]
    print("mini_rag serve: %d documents, %d chunks; listening on http://%s:%d/ (Ctrl-C stops)%s"
          % (len(service.documents), service.chunk_count, host, port,
             "; debug routes on" if args.debug_routes else ""), file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("mini_rag serve: stopped", file=sys.stderr)
    finally:
        server.server_close()
    return 0

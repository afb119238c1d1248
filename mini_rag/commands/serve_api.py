"""The API's routes and OpenAPI 3.0 description, for ``serve`` (mini_rag/commands/serve.py).

:data:`ROUTES` maps (method, path) to the request handler's route name; :data:`RESPONSES`
types each route's 200 body; :func:`openapi` builds the description the server sends on
``GET /openapi.json`` (tests check the two agree).  Split out of serve.py so each module
stays under 1,000 lines; serve.py re-exports every name.
"""
from __future__ import annotations

from typing import Any, Dict, Tuple

__all__ = ["MAX_TOP_K", "RESPONSES", "DEBUG_PATHS", "OPEN_PATHS", "ROUTES", "ERROR_STATUSES", "openapi"]

MAX_TOP_K = 100

_Q_PARAMS = [
    {"name": "q", "in": "query", "required": True, "schema": {"type": "string"}, "description": "the question"},
    {"name": "top_k", "in": "query", "required": False,
     "schema": {"type": "integer", "minimum": 1, "maximum": MAX_TOP_K}, "description": "candidates retrieved"},
    {"name": "freshness_days", "in": "query", "required": False,
     "schema": {"type": "integer", "minimum": 1, "maximum": 36500},
     "description": "age in days after which an effective date is stale"},
    {"name": "doc_scope", "in": "query", "required": False, "schema": {"type": "string"},
     "description": "MIXED or one authority (GET /docs lists them)"},
]
_ANSWER_BODY = {"type": "object", "required": ["query"], "additionalProperties": False, "properties": {
    "query": {"type": "string"}, "top_k": {"type": "integer", "minimum": 1, "maximum": MAX_TOP_K},
    "freshness_days": {"type": "integer", "minimum": 1, "maximum": 36500}, "doc_scope": {"type": "string"}}}
_VALIDATE_BODY = {"type": "object", "required": ["answer", "citations", "retrieved_chunks"],
                  "additionalProperties": False, "properties": {
                      "answer": {"type": "string"}, "citations": {"type": "array", "items": {"type": "string"}},
                      "retrieved_chunks": {"type": "array", "items": {
                          "type": "object", "required": ["chunk_id"],
                          "properties": {"chunk_id": {"type": "string"}, "text": {"type": "string"}}}}}}

_STR_LIST = {"type": "array", "items": {"type": "string"}}
_NULL_STR = {"type": "string", "nullable": True}
_NUM = {"type": "number", "nullable": True}
_CHUNK = {"type": "object", "required": ["doc_id", "chunk_id", "rank", "similarity", "text"], "properties": {
    "doc_id": {"type": "string"}, "chunk_id": {"type": "string"}, "rank": {"type": "integer"},
    "timestamp": _NULL_STR, "similarity": {"type": "number"}, "title": {"type": "string"},
    "heading": {"type": "string"}, "section": _STR_LIST, "text": {"type": "string"}}}
_RETRIEVAL = {"type": "object", "required": ["top_k", "doc_scope", "chunks"], "properties": {
    "top_k": {"type": "integer"}, "doc_scope": {"type": "string"}, "chunks": {"type": "array", "items": _CHUNK}}}
_QUALITY = {"type": "object", "required": ["confidence", "freshness", "top_doc_ids", "top_timestamps"], "properties": {
    "confidence": {"type": "object", "properties": {"max": _NUM, "mean": _NUM, "gap": _NUM,
                                                    "hit_count": {"type": "integer", "nullable": True}}},
    "freshness": {"type": "object", "properties": {
        "oldest_timestamp": _NULL_STR, "newest_timestamp": _NULL_STR,
        "freshness_violation_count": {"type": "integer"}, "freshness_violation": {"type": "boolean"},
        "freshness_days": {"type": "integer", "nullable": True}, "as_of": _NULL_STR,
        "stale": {"type": "array", "items": {"type": "object", "required": ["chunk_id", "doc_id", "rule"],
                                             "properties": {"chunk_id": {"type": "string"},
                                                            "doc_id": {"type": "string"},
                                                            "rule": {"type": "string"},
                                                            "by": {"type": "string"}}}}}},
    "top_doc_ids": _STR_LIST, "top_timestamps": {"type": "array", "items": _NULL_STR}}}
_VALIDATION = {"type": "object", "required": ["citation_valid", "errors", "warnings"], "properties": {
    "citation_valid": {"type": "boolean"}, "errors": _STR_LIST, "warnings": _STR_LIST}}
_CONFLICTS = {"type": "object", "required": ["conflict_detected", "pairs", "summary"], "properties": {
    "conflict_detected": {"type": "boolean"}, "conflict_type": _NULL_STR, "summary": {"type": "string"},
    "pairs": {"type": "array", "items": {"type": "object", "properties": {
        "chunk_a": {"type": "object"}, "chunk_b": {"type": "object"}, "reason": {"type": "string"},
        "evidence_snippets": {"type": "object"}, "conflict_type": {"type": "string"}, "axis": {"type": "string"}}}}}}
_RISK = {"type": "object", "required": ["risk_level", "matched_keywords"], "properties": {
    "risk_level": {"type": "string"}, "matched_keywords": _STR_LIST}}
_SIGNALS = {"type": "object", "properties": {"retrieval_confidence_max": _NUM,
                                             "retrieval_hit_count": {"type": "integer", "nullable": True},
                                             "freshness_violation": {"type": "boolean"}}}
_DECISIONS = ["ANSWER", "ABSTAIN", "CLARIFY", "BLOCK"]
#: The 200 response body of each route (typed: the client generators' and tests' contract).
RESPONSES: Dict[str, Dict[str, Any]] = {
    "answer": {"type": "object", "required": ["query", "decision", "answer", "citations", "confidence", "retrieval",
                                              "retrieval_quality", "validation", "conflicts", "reasons", "message",
                                              "decided_by", "signals", "risk"], "properties": {
        "query": {"type": "string"}, "decision": {"type": "string", "enum": _DECISIONS},
        "answer": {"type": "string"}, "citations": _STR_LIST, "confidence": {"type": "string"},
        "retrieval": _RETRIEVAL, "retrieval_quality": _QUALITY, "validation": _VALIDATION,
        "conflicts": _CONFLICTS, "reasons": _STR_LIST, "message": {"type": "string"},
        "decided_by": {"type": "string"}, "signals": _SIGNALS, "risk": _RISK}},
    "validate": _VALIDATION,
    "debug_retrieval": {"type": "object", "required": ["query", "retrieval", "retrieval_quality"], "properties": {
        "query": {"type": "string"}, "retrieval": _RETRIEVAL, "retrieval_quality": _QUALITY}},
    "debug_conflicts": {"type": "object", "required": ["query", "retrieval", "retrieval_quality", "conflicts"],
                        "properties": {"query": {"type": "string"}, "retrieval": _RETRIEVAL,
                                       "retrieval_quality": _QUALITY, "conflicts": _CONFLICTS}},
    "debug_decision": {"type": "object", "required": ["query", "retrieval", "retrieval_quality", "conflicts", "risk",
                                                      "decision_result", "question_analysis"], "properties": {
        "query": {"type": "string"}, "retrieval": _RETRIEVAL, "retrieval_quality": _QUALITY,
        "conflicts": _CONFLICTS, "risk": _RISK, "validation": {"type": "object", "nullable": True},
        "decision_result": {"type": "object", "properties": {
            "decision": {"type": "string", "enum": _DECISIONS, "nullable": True},
            "decided_by": _NULL_STR, "reasons": _STR_LIST, "user_message": {"type": "string"},
            "would_call_generator": {"type": "boolean"}, "phase_b_facts": _STR_LIST,
            "thresholds": {"type": "object"}, "signals": _SIGNALS, "risk": _RISK}},
        "question_analysis": {"type": "object"}}},
    "health": {"type": "object", "required": ["status", "documents", "chunks", "generator"], "properties": {
        "status": {"type": "string", "enum": ["ok"]}, "documents": {"type": "integer"},
        "chunks": {"type": "integer"}, "generator": {"type": "string"}}},
    "docs": {"type": "object", "required": ["count", "authorities", "documents"], "properties": {
        "count": {"type": "integer"}, "authorities": _STR_LIST,
        "documents": {"type": "array", "items": {"type": "object", "required": ["doc_id", "title", "chunks"],
                                                 "properties": {"doc_id": {"type": "string"},
                                                                "title": {"type": "string"},
                                                                "effective": {"type": "string"},
                                                                "authority": {"type": "string"},
                                                                "chunks": {"type": "integer"}}}}}},
    "openapi": {"type": "object", "required": ["openapi", "info", "paths"], "properties": {
        "openapi": {"type": "string"}, "info": {"type": "object"}, "paths": {"type": "object"}}},
}
#: Routes served only with ``serve --debug-routes`` (they show retrieval internals and chunk texts).
DEBUG_PATHS = frozenset(("/debug/retrieval", "/debug/conflicts", "/debug/decision"))
#: Routes answered without the bearer token (``--token-file``): liveness only.
OPEN_PATHS = frozenset(("/health",))

#: (method, path) -> (handler name on the request handler, summary, OpenAPI details).
ROUTES: Dict[Tuple[str, str], Tuple[str, str, Dict[str, Any]]] = {
    ("POST", "/answer"): ("answer", "Answer a question: retrieval, guards, generator, decision (seed 000 shape)",
                          {"requestBody": _ANSWER_BODY}),
    ("POST", "/validate"): ("validate", "Validate citations against retrieved chunks (seed 000/003 rules)",
                            {"requestBody": _VALIDATE_BODY}),
    ("GET", "/debug/retrieval"): ("debug_retrieval", "Retrieval and its quality signals; no generator call",
                                  {"parameters": _Q_PARAMS}),
    ("GET", "/debug/conflicts"): ("debug_conflicts", "Retrieval, quality signals and conflicts among the "
                                                     "phase B evidence; no generator call", {"parameters": _Q_PARAMS}),
    ("GET", "/debug/decision"): ("debug_decision", "Risk, conflicts and the retrieval half's decision; "
                                                   "no generator call", {"parameters": _Q_PARAMS}),
    ("GET", "/health"): ("health", "Liveness: documents and chunks loaded", {}),
    ("GET", "/docs"): ("docs", "The documents loaded: ids, titles, dates, authorities, chunk counts", {}),
    ("GET", "/openapi.json"): ("openapi", "This description", {}),
}
ERROR_STATUSES = {400: "bad request: bad JSON, a missing, unknown or wrongly typed field",
                  401: "missing or wrong bearer token (serve --token-file)",
                  404: "unknown path (the debug routes without serve --debug-routes)", 405: "method not allowed on this path",
                  411: "POST without Content-Length", 413: "body over the size limit",
                  500: "internal error (logged on the server)",
                  503: "too many requests in flight, or in progress from one address (Retry-After: when to retry)"}


def openapi() -> Dict[str, Any]:
    """The OpenAPI 3.0 description of :data:`ROUTES` (tests check the two agree)."""
    paths: Dict[str, Dict[str, Any]] = {}
    error = {"description": "", "content": {"application/json": {"schema": {
        "type": "object", "required": ["error"], "properties": {"error": {"type": "string"}}}}}}
    for (method, path), (name, summary, extra) in sorted(ROUTES.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        op: Dict[str, Any] = {"operationId": name, "summary": summary,
                              "responses": {"200": {"description": "OK", "content": {
                                  "application/json": {"schema": RESPONSES[name]}}}}}
        if path not in OPEN_PATHS:
            op["security"] = [{}, {"bearer": []}]        # the token only when the server has one
        if "parameters" in extra:
            op["parameters"] = extra["parameters"]
        if "requestBody" in extra:
            op["requestBody"] = {"required": True, "content": {"application/json": {"schema": extra["requestBody"]}}}
        for status, why in sorted(ERROR_STATUSES.items()):
            op["responses"][str(status)] = dict(error, description=why)
        paths.setdefault(path, {})[method.lower()] = op
    return {"openapi": "3.0.3",
            "info": {"title": "mini_rag serve", "version": "1",
                     "description": "Seed 000's RAG API: answers with citations, guards and decisions. "
                                    "The /debug routes exist only with serve --debug-routes."},
            "paths": paths,
            "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}}}

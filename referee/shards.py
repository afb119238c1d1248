"""Shards: ``--partial`` writes one shard's items, ``merge`` combines shards into the one report."""
from __future__ import annotations

import json
import os
import re
import stat
import sys
from array import array

from .base import MAX_K, SCHEMA, ScoreError
from .inputs import _Errors, JsonLimit, _file_kind, _show, _str_list, json_row, open_input
from .config import Rules
from .contracts import Gold, RunRankings, read_gold, read_qrels, read_run
from .judge import Scorer
from .outputs import PARTIAL_FORMAT, atomic_write

# --------------------------------------------------------------------------- shards: --partial and merge
#
# A shard run (``--partial OUT.json``) judges its slice of the trace rows and writes, instead
# of a report, the verdicts it made: for every gold item it saw, the item's slots of every
# per-item container of the Scorer (arrays, per-cutoff arrays, sparse maps), found
# generically so a metric added to the Scorer merges with no code here; the order in which
# its rows named items (to count duplicates across shards exactly); its row counts and
# notes.  ``merge P1 ... Pn`` reads the gold set again (its sha256 must match), takes each
# item's verdict from the last shard that saw it (last row wins, as in one run when the
# shards are consecutive pieces of the trace), judges the items no shard saw as missing,
# and then aggregates, gates, compares and prints through the very code of a single run:
# the output is byte-identical to one run over all the rows.  TREC runs shard by topic.

PARTIAL_VERSION = 1
_PARTIAL_ARGS = ("gold", "trace", "qrels", "run", "k", "by", "refusal", "chunks", "dataset")


class _RecordingScorer(Scorer):
    """A Scorer that also records which items the rows named, in row order."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.calls = array("I")

    def judge(self, i, *rest):
        if rest[-1]:                               # present: a row named the item
            self.calls.append(i)
        super().judge(i, *rest)


def _per_item(scorer: Scorer):
    """``(name, key, container, kind)`` of every per-item container of a Scorer: ``kind``
    is "array" (one slot per item; ``key`` a cutoff or None) or "sparse" (a dict keyed by
    item position)."""
    n = len(scorer.gold)
    for name, v in sorted(vars(scorer).items()):
        if name == "calls" or name == "gold":
            continue
        if isinstance(v, (array, bytearray)) and len(v) == n:
            yield name, None, v, "array"
        elif isinstance(v, dict):
            vals = list(v.values())
            if vals and all(isinstance(x, (array, bytearray)) and len(x) == n for x in vals):
                for key in sorted(v):
                    yield name, key, v[key], "array"
            elif all(type(key) is int for key in v) and not any(isinstance(x, (array, bytearray)) for x in vals):
                yield name, None, v, "sparse"


def _pack(arr) -> dict:
    import base64
    if isinstance(arr, bytearray):
        return {"type": "bytes", "data": base64.b64encode(bytes(arr)).decode("ascii")}
    if sys.byteorder != "little":                  # pragma: no cover - big-endian hosts
        arr = array(arr.typecode, arr)
        arr.byteswap()
    return {"type": arr.typecode, "data": base64.b64encode(arr.tobytes()).decode("ascii")}


def _unpack(d: dict, path: str):
    import base64
    try:
        raw = base64.b64decode(d["data"].encode("ascii"), validate=True)
        if d["type"] == "bytes":
            return bytearray(raw)
        out = array(d["type"])
        out.frombytes(raw)
    except (KeyError, TypeError, ValueError, AttributeError):   # binascii.Error is a ValueError
        raise ScoreError("%s: malformed packed array in a partial, got %s" % (path, _show(d, 60))) from None
    if sys.byteorder != "little":                  # pragma: no cover - big-endian hosts
        out.byteswap()
    return out


def _sha256_file(path: str) -> str:
    import hashlib
    h = hashlib.sha256()
    try:
        with open_input(path, "file") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except OSError as exc:
        raise ScoreError("%s: cannot read: %s" % (path, exc.strerror)) from None
    return h.hexdigest()


def write_partial(args, gold: "Gold", scorer: Scorer, stats: dict, notes: List[str]) -> int:
    """The ``--partial`` output of a shard run (see the section comment); exit status 0."""
    calls = getattr(scorer, "calls", None)
    if calls is None:                              # pragma: no cover - run() always records
        raise ScoreError("--partial: internal error, the shard's rows were not recorded")
    seen = sorted(set(calls))
    idx = array("I", seen)
    fields = []
    for name, key, cont, kind in _per_item(scorer):
        if kind == "array":
            sub = bytearray(cont[i] for i in seen) if isinstance(cont, bytearray) \
                else array(cont.typecode, [cont[i] for i in seen])
            fields.append({"name": name, "key": key, "kind": kind, "values": _pack(sub)})
        else:
            fields.append({"name": name, "key": None, "kind": kind,
                           "values": [[i, cont[i]] for i in seen if i in cont]})
    source = args.gold or args.qrels
    doc = {"format": PARTIAL_FORMAT, "version": PARTIAL_VERSION, "schema": SCHEMA,
           "args": {a: getattr(args, a) for a in _PARTIAL_ARGS},
           "gold_sha256": _sha256_file(source), "gold_items": len(gold), "ks": scorer.ks,
           "stats": stats, "notes": notes, "items": _pack(idx), "calls": _pack(calls), "fields": fields}
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n"
    if args.partial == "-":
        sys.stdout.write(text)
    else:
        atomic_write(args.partial, text)
    return 0


MAX_PARTIAL_BYTES = 1 << 30       # one --partial file


def _read_partial(path: str) -> dict:
    """A partial, validated as data before anything uses it: a regular file (never a FIFO or
    a device) of at most MAX_PARTIAL_BYTES, the shape written by write_partial, and the
    files it names regular files."""
    try:
        with open_input(path, "partial") as fh:
            data = fh.read(MAX_PARTIAL_BYTES + 1)
    except OSError as exc:
        raise ScoreError("%s: cannot read: %s" % (path, exc.strerror)) from None
    if path == "-":
        raise ScoreError("-: a partial must be a file, not stdin")
    if len(data) > MAX_PARTIAL_BYTES:
        raise ScoreError("%s: partial larger than %d bytes (MAX_PARTIAL_BYTES)" % (path, MAX_PARTIAL_BYTES))
    try:
        doc = json_row(data.decode("utf-8"))
    except JsonLimit as exc:
        raise ScoreError("%s:1: not a partial (%s)" % (path, exc)) from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise ScoreError("%s:1: not a partial (invalid JSON: %s)" % (path, str(exc).split(":")[0])) from None
    if type(doc) is not dict or doc.get("format") != PARTIAL_FORMAT:
        raise ScoreError("%s:1: not a score_eval partial, got format %s"
                         % (path, _show(doc.get("format") if type(doc) is dict else doc)))
    if doc.get("version") != PARTIAL_VERSION or doc.get("schema") != SCHEMA:
        raise ScoreError("%s:1: partial version must be %d (%s), got %s"
                         % (path, PARTIAL_VERSION, SCHEMA, _show([doc.get("version"), doc.get("schema")])))
    for key in ("args", "gold_sha256", "gold_items", "ks", "stats", "notes", "items", "calls", "fields"):
        if key not in doc:
            raise ScoreError("%s:1: partial has no %r" % (path, key))
    problem = _partial_shape(doc)
    if problem:
        raise ScoreError("%s:1: malformed partial: %s" % (path, problem))
    for a in ("gold", "qrels", "trace", "run", "chunks"):
        named = doc["args"].get(a)
        if a in ("gold", "qrels", "run") and isinstance(named, str) and named not in ("", "-"):
            try:
                st = os.stat(named)
            except OSError as exc:
                raise ScoreError("%s: the partial names --%s %s, which cannot be read: %s"
                                 % (path, a, named, exc.strerror)) from None
            if not stat.S_ISREG(st.st_mode):
                raise ScoreError("%s: the partial names --%s %s, which is %s, not a regular file"
                                 % (path, a, named, _file_kind(st.st_mode)))
    return doc


def _partial_shape(doc: dict) -> Optional[str]:
    """What is wrong with the shape of a partial's fields, or None."""
    args = doc["args"]
    if type(args) is not dict:
        return "args must be an object, got %s" % _show(args)
    for a in _PARTIAL_ARGS:
        v = args.get(a)
        if v is not None and not isinstance(v, str) and a != "k":
            return "args.%s must be a string or null, got %s" % (a, _show(v))
        if isinstance(v, str) and "\x00" in v:
            return "args.%s holds a NUL character" % a
    if not (args.get("gold") or args.get("qrels")):
        return "args names neither a gold nor a qrels file"
    if not (isinstance(doc["gold_sha256"], str) and re.fullmatch(r"[0-9a-f]{64}", doc["gold_sha256"])):
        return "gold_sha256 must be 64 hex digits, got %s" % _show(doc["gold_sha256"])
    if type(doc["gold_items"]) is not int or doc["gold_items"] < 0:
        return "gold_items must be an integer >= 0, got %s" % _show(doc["gold_items"])
    if type(doc["ks"]) is not list or not doc["ks"] or not all(type(k) is int and 1 <= k <= MAX_K for k in doc["ks"]):
        return "ks must be a list of cutoffs 1..%d, got %s" % (MAX_K, _show(doc["ks"]))
    st = doc["stats"]
    if type(st) is not dict or not all(type(st.get(k)) is int and st.get(k) >= 0
                                       for k in ("rows", "unknown", "duplicates", "missing")) \
            or not all(_str_list(st.get(k)) for k in ("unknown_ex", "duplicate_ex")):
        return "stats must hold counts rows, unknown, duplicates, missing and lists unknown_ex, duplicate_ex"
    if not _str_list(doc["notes"]):
        return "notes must be a list of strings"
    for key in ("items", "calls"):
        v = doc[key]
        if type(v) is not dict or v.get("type") != "I" or not isinstance(v.get("data"), str):
            return "%s must be a packed array of type I, got %s" % (key, _show(v, 60))
    if type(doc["fields"]) is not list:
        return "fields must be a list, got %s" % _show(doc["fields"], 60)
    for f in doc["fields"]:
        if type(f) is not dict or not isinstance(f.get("name"), str) or f.get("kind") not in ("array", "sparse") \
                or not (f.get("key") is None or type(f.get("key")) in (int, str)):
            return "each field must be an object with a name and kind array or sparse, got %s" % _show(f, 60)
        if f["kind"] == "array" and (type(f.get("values")) is not dict or not isinstance(f["values"].get("type"), str)
                                     or not isinstance(f["values"].get("data"), str)):
            return "field %s: values must be a packed array, got %s" % (f["name"], _show(f.get("values"), 60))
        if f["kind"] == "sparse" and (type(f.get("values")) is not list
                                      or not all(type(p) is list and len(p) == 2 and type(p[0]) is int
                                                 for p in f["values"])):
            return "field %s: values must be a list of [item, value] pairs" % f["name"]
    return None


def merged_runs(paths: List[str], errors: "_Errors") -> dict:
    """The rankings of TREC shards (split by topic), read again from the run files their
    partials name, for trec_eval's measures (which the partials do not carry)."""
    runs = RunRankings()
    for p in paths:
        run_path = _read_partial(p)["args"].get("run")
        if not isinstance(run_path, str) or not run_path:
            raise ScoreError("%s: the partial names no run file" % p)
        part = read_run(run_path, errors)
        runs.update(part)
        runs.runid = part.runid or runs.runid
    if errors.count:
        raise ScoreError(errors.text())
    return runs


def _check_same_shards(paths: List[str], docs: List[dict], source: str) -> None:
    """Every shard scored the same gold set with the same options, and the gold file is the one
    they read (its sha256)."""
    first = docs[0]
    for p, d in zip(paths, docs):
        same = {a: d["args"].get(a) for a in _PARTIAL_ARGS if a not in ("trace", "run")}
        want = {a: first["args"].get(a) for a in same}
        if same != want or d["gold_sha256"] != first["gold_sha256"]:
            diff = sorted(a for a in same if same[a] != want[a]) or ["gold file content"]
            raise ScoreError("%s: shard differs from %s in %s; every shard must score the same gold "
                             "set with the same options" % (p, paths[0], ", ".join(diff)))
    if _sha256_file(source) != first["gold_sha256"]:
        raise ScoreError("%s: the gold file changed since the partials were written (sha256 differs)" % source)


def _shard_notes(docs: List[dict]) -> List[str]:
    """The shards' notes: those made before the trace (chunks, gold), the same in every shard,
    kept once; then each shard's own, in shard order."""
    prefix = docs[0]["notes"]
    for d in docs[1:]:
        common = 0
        while common < min(len(prefix), len(d["notes"])) and prefix[common] == d["notes"][common]:
            common += 1
        prefix = prefix[:common]
    notes = list(prefix)
    for d in docs:
        notes.extend(d["notes"][len(prefix):])
    return notes


def _load_fields(p: str, d: dict, items, slots: dict, n: int) -> None:
    """Copy a shard's values of its ``items`` into the merged scorer's per-item containers
    (``slots``: (name, key) -> (container, kind)), each field checked against this scorer's."""
    for f in d["fields"]:
        key = (f["name"], f.get("key"))
        if key not in slots:
            raise ScoreError("%s: the partial holds %s%s, which this scorer does not have (another "
                             "version wrote it?)" % (p, f["name"], "" if key[1] is None else "[%s]" % key[1]))
        cont, kind = slots[key]
        if kind != f["kind"]:
            raise ScoreError("%s: malformed partial: field %s must be of kind %s, got %s" % (p, f["name"], kind, f["kind"]))
        if kind == "array":
            values = _unpack(f["values"], p)
            if len(values) != len(items):
                raise ScoreError("%s: %s holds %d values for %d items" % (p, f["name"], len(values), len(items)))
            if type(values) is not type(cont) or getattr(values, "typecode", None) != getattr(cont, "typecode", None):
                raise ScoreError("%s: malformed partial: field %s has values of type %s, this scorer's are %s"
                                 % (p, f["name"], f["values"].get("type"), getattr(cont, "typecode", "bytes")))
            for i, v in zip(items, values):
                cont[i] = v
        else:
            for i in items:
                cont.pop(i, None)
            for i, v in f["values"]:
                if not 0 <= i < n:
                    raise ScoreError("%s: item position %d out of range (%d gold items)" % (p, i, n))
                cont[i] = v


def _judge_unseen(scorer: Scorer, seen: bytearray, trec: bool) -> int:
    """Judge the items no shard's rows named as missing (as one run does); returns how many."""
    missing = 0
    i = seen.find(0)
    while i >= 0:
        missing += 1
        scorer.judge(i, None, None if not trec else [], None, None, None, None, False)
        i = seen.find(0, i + 1)
    return missing


def merge_partials(paths: List[str], args, ks: List[int], refusal: str, errors: "_Errors",
                   notes: List[str], rules: Optional["Rules"] = None):
    """``(gold, scorer, stats)`` of the union of the shards' rows (see the section comment)."""
    docs = [_read_partial(p) for p in paths]
    trec = bool(args.qrels)
    source = args.gold or args.qrels
    first = docs[0]
    _check_same_shards(paths, docs, source)
    gold = read_qrels(source, errors) if trec else read_gold(source, args.by, errors, [])
    if errors.count:
        raise ScoreError(errors.text())
    if first["ks"] != ks:
        raise ScoreError("%s: merge: the shards computed cutoffs %s, the gates need %s; run the shards with "
                         "--k %s" % (paths[0], first["ks"], ks, ",".join(map(str, ks))))
    scorer = Scorer(gold, ks, refusal, None, rules)
    slots = {(name, key): (cont, kind) for name, key, cont, kind in _per_item(scorer)}
    n = len(gold)
    seen = bytearray(n)
    rows = unknown = dup = 0
    unknown_ex: List[str] = []
    unknown_topics: set = set()
    dup_ex: List[str] = []
    notes.extend(_shard_notes(docs))
    for p, d in zip(paths, docs):
        s = d["stats"]
        rows += s["rows"]
        unknown += s["unknown"]
        if trec:
            unknown_topics.update(s["unknown_ex"])
        else:
            unknown_ex.extend(s["unknown_ex"])
        for i in _unpack(d["calls"], p):          # replay the rows' order: duplicates as one run
            if i >= n:
                raise ScoreError("%s: item position %d out of range (%d gold items)" % (p, i, n))
            if seen[i]:
                dup += 1
                if len(dup_ex) < 5:
                    dup_ex.append(gold.qids[i])
            seen[i] = 1
        items = _unpack(d["items"], p)
        if items and max(items) >= n:
            raise ScoreError("%s: item position %d out of range (%d gold items)" % (p, max(items), n))
        _load_fields(p, d, items, slots, n)
    missing = _judge_unseen(scorer, seen, trec)
    if trec:
        unknown_ex = sorted(unknown_topics)
    stats = {"rows": rows, "unknown": unknown, "unknown_ex": unknown_ex[:5],
             "duplicates": dup, "duplicate_ex": dup_ex, "missing": missing}
    return gold, scorer, stats

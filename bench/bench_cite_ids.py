#!/usr/bin/env python3
"""mini_rag's answers rewritten with inline citation markers, in the id shapes real systems use,
scored against the plain trace (issue 41, item 2).

Usage: python3 bench/bench_cite_ids.py [--gold gold/gold.jsonl] [--trace runs/trace.baseline.jsonl]
                                       [--tol 0.005]

Every chunk id of the gold set and the trace (gold_citations, retrieved_ids, answer_json.citations,
cited_chunks) is renamed into one SHAPE (mini_rag's own ids such as ``billing-and-invoicing#p8``,
a file path, a URL, a UUID, ``doc-and-faq#p3``, ``a.b/c:12``, a title with words and blanks); each
shipped answer's citations list is then emptied and its citations written into the text in one
STYLE (``[id][id]``, ``[id, id]``, ``(Source: id; id)``, ranks ``[1][3]`` / ``[1-2]``, a trailing
``Sources:`` list).  precision, chr and citation_validity of every rewritten trace must equal the
plain trace's within --tol; the table goes to stdout, exit 1 when one differs (2: a file is
missing; run ``make eval`` first).  tests/test_cite_ids.py runs the same check on a sample.
"""
import argparse
import contextlib
import io
import json
import os
import re
import sys
import tempfile
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import score_eval  # noqa: E402

KEYS = ("precision", "chr", "citation_validity")
_CHUNK = re.compile(r"(.+)#p(\d+)")


def _split(cid):
    m = _CHUNK.fullmatch(cid)
    return (m.group(1), m.group(2)) if m else (cid, "0")


def _title(doc):
    return " ".join(w.capitalize() for w in doc.split("-"))


SHAPES = {
    "mini_rag ids": lambda d, n: "%s#p%s" % (d, n),
    "path": lambda d, n: "docs/policies/%s.md#p%s" % (d, n),
    "URL": lambda d, n: "https://kb.example.com/%s/?v=2&lang=en#p%s" % (d, n),
    "UUID": lambda d, n: str(uuid.uuid5(uuid.NAMESPACE_URL, "%s#p%s" % (d, n))),
    "doc-and-faq#p3": lambda d, n: "%s-and-faq#p%s" % (d, n),
    "a.b/c:12": lambda d, n: "%s/c:%s" % (d.replace("-", "."), n),
    "words and blanks": lambda d, n: "%s & FAQ, part %s or to be read" % (_title(d), n),
}


def _marker(style, ids, ret):
    ranks = [ret.index(c) + 1 for c in ids]
    if style == "[id][id]":
        return "".join("[%s]" % c for c in ids)
    if style == "[id, id]":
        return "[%s]" % ", ".join(ids)
    if style == "(Source: id; id)":
        return "(Source: %s)" % "; ".join(ids)
    if style == "ranks":
        if len(ranks) > 1 and ranks == list(range(ranks[0], ranks[0] + len(ranks))):
            return "[%d-%d]" % (ranks[0], ranks[-1])
        return "".join("[%d]" % r for r in ranks)
    raise ValueError(style)


STYLES = ("[id][id]", "[id, id]", "(Source: id; id)", "ranks", "Sources: list")


def rewrite(gold, trace, shape, style):
    """(gold rows, trace rows) with ids renamed into ``shape`` and citations written in ``style``."""
    rename = SHAPES[shape]

    def new(cid):
        return rename(*_split(cid))

    g2 = []
    for g in gold:
        g = dict(g)
        g["gold_citations"] = [new(c) for c in g.get("gold_citations") or []]
        g2.append(g)
    t2 = []
    for r in trace:
        r = json.loads(json.dumps(r))
        r["retrieved_ids"] = [new(c) for c in r.get("retrieved_ids") or []]
        r["cited_chunks"] = {new(c): t for c, t in (r.get("cited_chunks") or {}).items()}
        aj = r["answer_json"]
        ids = [new(c) for c in aj.get("citations") or []]
        if ids and all(c in r["retrieved_ids"] for c in ids):
            claim = aj["claim"].rstrip()
            if style == "Sources: list":
                aj["claim"] = "%s\n\nSources:\n%s" % (claim, "\n".join("- " + c for c in ids))
            else:
                end = "." if claim.endswith(".") else ""
                aj["claim"] = "%s %s%s" % (claim[:len(claim) - len(end)], _marker(style, ids, r["retrieved_ids"]), end)
            ids = []
        aj["citations"] = ids
        t2.append(r)
    return g2, t2


def _write(path, rows):
    with open(path, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")


def figures(gold, trace, tmp, name):
    """precision, chr, citation_validity (and the shipped count) of ``trace`` against ``gold``."""
    g, t = os.path.join(tmp, name + ".gold.jsonl"), os.path.join(tmp, name + ".trace.jsonl")
    _write(g, gold)
    _write(t, trace)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = score_eval.main(["--gold", g, "--trace", t, "--gates-file", os.path.join(ROOT, "gates.toml"),
                                "--gates", "none"])
    if code != 0:
        raise RuntimeError("score_eval exited %d: %s" % (code, err.getvalue().strip()))
    m = json.loads(out.getvalue())["metrics"]
    return {k: m[k]["value"] for k in KEYS}


def table(gold, trace, tol):
    """[(shape, style, figures, worst difference)] and the plain figures."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        plain = figures(gold, trace, tmp, "plain")
        for shape in SHAPES:
            for style in STYLES:
                g, t = rewrite(gold, trace, shape, style)
                got = figures(g, t, tmp, "rewritten")
                worst = max(abs((got[k] or 0.0) - (plain[k] or 0.0)) for k in KEYS)
                rows.append((shape, style, got, worst))
    return plain, rows


def read_jsonl(path):
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gold", default=os.path.join(ROOT, "gold", "gold.jsonl"))
    ap.add_argument("--trace", default=os.path.join(ROOT, "runs", "trace.baseline.jsonl"))
    ap.add_argument("--tol", type=float, default=0.005)
    args = ap.parse_args(argv)
    for p in (args.gold, args.trace):
        if not os.path.isfile(p):
            sys.stderr.write("%s: missing (run `make eval` first)\n" % p)
            return 2
    plain, rows = table(read_jsonl(args.gold), read_jsonl(args.trace), args.tol)
    print("| id shape | citations written as | precision | chr | citation_validity | largest difference |")
    print("|---|---|---:|---:|---:|---:|")
    print("| (plain trace: citations list) | | %s | %s | %s | |" % tuple(plain[k] for k in KEYS))
    for shape, style, got, worst in rows:
        print("| %s | `%s` | %s | %s | %s | %.4f |" % ((shape, style) + tuple(got[k] for k in KEYS) + (worst,)))
    bad = [r for r in rows if r[3] > args.tol]
    print("%d of %d rewritten traces within %.3f of the plain trace" % (len(rows) - len(bad), len(rows), args.tol))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

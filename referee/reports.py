"""Reports: HTML, JUnit and CSV, and the per-item records they share."""
from __future__ import annotations

import csv
import html
import io
import json
import os
import re
import stat
import sys
from typing import Dict, Tuple

from .base import ScoreError
from .registry import (FLAG_MEANINGS, F_ANS, F_ANSOK, F_CITTEXT, F_CONT, F_GMEAS, F_GOLD, F_HALL,
    F_HIT, F_HMEAS, F_PARTIAL, F_PASS, F_PROSE, F_REC, F_SHIP, F_TRACE, F_UNSUP, F_VALID, _BY_NAME)
from .fmt import _fmt_num
from .retrieval import measure_p, measure_success
from .inputs import _Errors, _RAGAS_PATHS, _jsonl, _show
from .refusals import KIND_ANSWER, KIND_PARTIAL, KIND_REFUSAL
from .names import parse_metric
from .aggregate import MODE_ORDER, all_modes, failure_mode, flag_string
from .judge import Scorer
from .scorecard import ItemStages
from .outputs import atomic_write, render_markdown, terminal_safe

# --------------------------------------------------------------------------- reports: HTML, JUnit, CSV

HTML_ITEMS = 2000        # items in the HTML drill-down (failing first); the rest are counted
HTML_TEXT = 3000         # characters of one claim or chunk text shown before "[... N more]"
_CTRL_RX = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")
_TIER_MARK = {"block": "BLOCK", "warn": "WARN", "monitor": "MONITOR"}
_HTML_BEGIN, _HTML_END = "<!--score_eval:section-->", "<!--/score_eval:section-->"


def _inert(text) -> str:
    """Text with control characters, lone surrogates and XML non-characters made visible
    (``\\x07``), so it is printable, encodable as UTF-8 and valid in XML 1.0."""
    text = "" if text is None else str(text)
    return _CTRL_RX.sub(lambda m: "\\x%02x" % ord(m.group(0)) if ord(m.group(0)) < 0x100 else
                        "\\u%04x" % ord(m.group(0)), text)


def _h(text) -> str:
    """Escaped for HTML text and attribute values (html.escape with quotes)."""
    return html.escape(_inert(text), quote=True)


def _clip(text: str, limit: int = HTML_TEXT) -> str:
    return text if len(text) <= limit else text[:limit] + " [... %d more characters]" % (len(text) - limit)


def _num_text(v) -> str:
    return "null" if v is None else ("%.4f" % v if isinstance(v, float) else str(v))


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0;background:#f5f6f8;color:#1d232b}
main{max-width:1180px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:24px;margin:8px 0 4px}h2{font-size:20px;margin:28px 0 8px}h3{font-size:16px;margin:22px 0 6px}
section.dataset{background:#fff;border:1px solid #d7dbe0;border-radius:8px;padding:4px 20px 20px;margin:18px 0}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}
th,td{border:1px solid #d7dbe0;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#eef1f4}td.n{text-align:right;font-variant-numeric:tabular-nums}
.verdict{display:inline-block;font-weight:700;font-size:18px;padding:6px 14px;border-radius:6px;color:#fff}
.pass{background:#1a7f37}.fail{background:#cf222e}.warnbg{background:#9a6700}
.tier{display:inline-block;font-size:11px;font-weight:700;padding:1px 6px;border-radius:4px;color:#fff}
.t-block{background:#57606a}.t-warn{background:#bf8700}.t-monitor{background:#0969da}
.ok{color:#1a7f37;font-weight:700}.bad{color:#cf222e;font-weight:700}.warn{color:#9a6700;font-weight:700}
.muted{color:#57606a}details.item{border:1px solid #d7dbe0;border-radius:6px;margin:4px 0;padding:2px 10px;background:#fbfcfd}
details.item[open]{background:#fff}summary{cursor:pointer;padding:3px 0}
dl{display:grid;grid-template-columns:150px 1fr;gap:3px 12px;margin:6px 0}dt{font-weight:600;color:#57606a}dd{margin:0}
blockquote{margin:3px 0 6px;padding:4px 10px;border-left:3px solid #0969da;background:#f6f8fa;white-space:pre-wrap}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
.claim{white-space:pre-wrap}nav a{margin-right:14px}
"""


def _html_page(title: str, body: str) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"generator\" content=\"score_eval\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<title>%s</title>\n<style>%s</style>\n</head>\n<body>\n<main>\n%s</main>\n</body>\n</html>\n"
            % (_h(title), _CSS, body))


def _interval_svg(value, ci) -> str:
    """A 0..1 axis with the 95% interval as a bar and the value as a dot."""
    if not isinstance(value, (int, float)) or not 0 <= value <= 1:
        return ""
    w, pad = 180, 4
    x = lambda v: pad + (w - 2 * pad) * min(1.0, max(0.0, v))
    parts = ['<svg width="%d" height="14" role="img" aria-label="interval">' % w,
             '<line x1="%d" y1="7" x2="%d" y2="7" stroke="#d0d7de" stroke-width="2"/>' % (pad, w - pad)]
    if ci:
        parts.append('<rect x="%.1f" y="3" width="%.1f" height="8" fill="#9ec5fe" rx="2"/>'
                     % (x(ci[0]), max(1.0, x(ci[1]) - x(ci[0]))))
    parts.append('<circle cx="%.1f" cy="7" r="3.5" fill="#0550ae"/></svg>' % x(value))
    return "".join(parts)


def _bars_svg(rows: List[Tuple[str, int]]) -> str:
    """Horizontal bar chart of (label, count)."""
    if not rows:
        return '<p class="ok">No failing items.</p>'
    top = max(c for _, c in rows) or 1
    lw, bw, h = 210, 420, 22
    out = ['<svg width="%d" height="%d" role="img" aria-label="failure modes">' % (lw + bw + 60, h * len(rows) + 4)]
    for n, (label, c) in enumerate(rows):
        y = n * h + 2
        out.append('<text x="%d" y="%d" text-anchor="end" font-size="12" fill="#1d232b">%s</text>'
                   % (lw - 8, y + 15, _h(label)))
        out.append('<rect x="%d" y="%d" width="%.1f" height="%d" fill="#cf222e" rx="2"/>'
                   % (lw, y + 3, max(2.0, bw * c / top), h - 6))
        out.append('<text x="%.1f" y="%d" font-size="12" fill="#1d232b">%d</text>' % (lw + max(2.0, bw * c / top) + 6, y + 15, c))
    out.append("</svg>")
    return "".join(out)


def _item_texts(args, scorer: Scorer, wanted) -> Dict[int, dict]:
    """Question, gold substrings and citations, claim, citations with their text and the
    ranking of the items ``wanted``, read again from the (already validated) input files."""
    out: Dict[int, dict] = {i: {} for i in wanted}
    index, sink, notes = scorer.gold.index, _Errors(1), []
    # reference-free runs have no gold file; a RAGAS file is its own gold (issue 28)
    gold_path = args.gold or (args.trace if args.trace in _RAGAS_PATHS else None)
    for _, row in (_jsonl(gold_path, sink, notes) if gold_path else ()):
        i = index.get(row.get("qid"))
        if i in out:
            out[i].update({"question": row.get("question"), "gold_claim_substr": row.get("gold_claim_substr"),
                           "gold_citations": row.get("gold_citations"), "expected_decision": row.get("expected_decision")})
    for _, row in _jsonl(args.trace, sink, notes):
        i = index.get(row.get("qid") or row.get("q_id"))
        if i not in out:
            continue
        aj = row.get("answer_json") if type(row.get("answer_json")) is dict else {}
        cited = row.get("cited_chunks") if type(row.get("cited_chunks")) is dict else {}
        cits = aj.get("citations") or []
        texts = []
        for c in cits:
            t = cited.get(c)
            if t is None and scorer.chunks is not None:
                t = scorer.chunks.get(c)
            texts.append((c, t))
        out[i].update({"claim": aj.get("claim"), "citations": texts, "retrieved_ids": row.get("retrieved_ids") or [],
                       "decision": row.get("decision"), "trace_question": row.get("q")})
    return out


def _html_items(args, scorer: Scorer, trec: bool, stages: ItemStages) -> Tuple[str, int]:
    order = []
    for i, f in enumerate(scorer.flags):
        mode = failure_mode(f, trec)
        order.append((MODE_ORDER.index(mode) if mode else len(MODE_ORDER), i))
    order.sort()
    shown = [i for _, i in order[:HTML_ITEMS]]
    texts = {} if trec else _item_texts(args, scorer, set(shown))
    meaning = dict(FLAG_MEANINGS)
    parts = []
    for i in shown:
        rec = _item_record(scorer, i, trec)
        card = stages(i)
        t = texts.get(i, {})
        status = rec["failure_mode"] or "ok"
        cls = "bad" if rec["failure_mode"] else "ok"
        rows = []
        q = t.get("question") if t.get("question") is not None else t.get("trace_question")
        if q is not None:
            rows.append(("Question", '<span class="claim">%s</span>' % _h(_clip(str(q)))))
        if not trec:
            claim = t.get("claim")
            rows.append(("Claim", '<span class="claim">%s</span>' % _h(_clip(str(claim))) if claim is not None
                         else '<span class="muted">(no claim)</span>'))
            if t.get("decision") is not None:
                rows.append(("Decision", "%s (expected %s)" % (_h(t["decision"]), _h(t.get("expected_decision")))))
            cites = t.get("citations") or []
            rows.append(("Citations", "".join(
                "<div><code>%s</code>%s</div>" % (_h(c), "<blockquote>%s</blockquote>" % _h(_clip(str(txt)))
                                                 if txt is not None else ' <span class="muted">(no text)</span>')
                for c, txt in cites) or '<span class="muted">none</span>'))
            subs = t.get("gold_claim_substr")
            rows.append(("Gold substrings", ", ".join("<code>%s</code>" % _h(s) for s in subs) if subs else
                         '<span class="muted">%s</span>' % ("[] (vacuous)" if subs == [] else "none")))
            rows.append(("Gold citations", ", ".join("<code>%s</code>" % _h(c) for c in t.get("gold_citations") or [])
                         or '<span class="muted">none</span>'))
            rows.append(("Retrieved", ", ".join("<code>%s</code>" % _h(c) for c in t.get("retrieved_ids", [])[:20])
                         or '<span class="muted">none</span>'))
            if rec.get("unsupported"):
                rows.append(("Unsupported", ", ".join("<code>%s</code>" % _h(w) for w in rec["unsupported"])))
        if rec["retrieval"]:
            rows.append(("Retrieval", " ".join("%s=%s" % (_h(k), _num_text(v)) for k, v in rec["retrieval"].items())))
        rows.append(("Labels", _h(", ".join(rec["labels"])) or '<span class="muted">none</span>'))
        rows.append(("Flags", "<code>%s</code> <span class=\"muted\">%s</span>" % (
            _h(rec["flags"]), _h("; ".join(meaning[ch] for ch in rec["flags"])))))
        rows.append(("Stage scores", " ".join("%s=%s" % (_h(k), _num_text(v)) for k, v in card["stages"].items())
                     + " &middot; overall=%s" % _num_text(card["overall"])))
        parts.append('<details class="item"><summary><code>%s</code> &middot; %s &middot; <span class="%s">%s</span>'
                     '</summary>\n<dl>%s</dl></details>\n' % (
                         _h(rec["qid"]), _h(rec["category"]), cls, _h(status),
                         "".join("<dt>%s</dt><dd>%s</dd>" % (_h(k), v) for k, v in rows)))
    return "".join(parts), len(scorer.flags) - len(shown)


def _html_gates(gates: List[dict]) -> List[str]:
    """The Gates table: each gate's tier, result, metric, value, bound and note."""
    out = ["<h3>Gates</h3>\n<table><tr><th>tier</th><th>result</th><th>gate</th><th>value</th><th>needs</th>"
           "<th>note</th></tr>"]
    for g in gates:
        res = ('<span class="ok">pass</span>' if g["pass"] else
               '<span class="%s">%s</span>' % ("warn" if g["tier"] != "block" else "bad",
                                              "warn" if g["tier"] == "warn" else "fail"))
        if g["tier"] == "monitor" and g["op"] is None:
            res = '<span class="muted">reported</span>'
        need = "" if g["op"] is None else "%s %s" % (_h(g["op"]), _h(_fmt_num(g["threshold"])))
        note = (g["reason"] or "") + ((" " + g["message"]) if g.get("message") else "")
        out.append('<tr><td><span class="tier t-%s">%s</span></td><td>%s</td><td><code>%s</code></td>'
                   '<td class="n">%s</td><td>%s</td><td>%s</td></tr>' % (
                       _h(g["tier"]), _TIER_MARK.get(g["tier"], "BLOCK"), res, _h(g["gate"]),
                       _h(_num_text(g["value"])), need, _h(note)))
    out.append("</table>")
    return out


def _html_scorecard(card: dict) -> List[str]:
    """The weighted scorecard: the overall score, then each stage's weight and score."""
    out = ["<h3>Weighted scorecard</h3>\n<p>Overall score: <strong>%s</strong>. %s.</p>" % (
        _h(_num_text(card["overall"])), _h(card["note"]))]
    out.append("<table><tr><th>stage</th><th>metric</th><th>weight</th><th>effective weight</th><th>score</th>"
               "<th></th><th>n</th><th>note</th></tr>")
    for name, st in card["stages"].items():
        out.append('<tr><td>%s</td><td><code>%s</code></td><td class="n">%s</td><td class="n">%s</td>'
                   '<td class="n">%s</td><td>%s</td><td class="n">%s</td><td>%s</td></tr>' % (
                       _h(name), _h(st["metric"]), _h(_num_text(st["weight"])),
                       _h(_num_text(st["effective_weight"])), _h(_num_text(st["score"])),
                       _interval_svg(st["score"], None), _h(_num_text(st["n"])), _h(st["reason"] or "")))
    out.append("</table>")
    return out


def _html_metrics(metrics: Dict[str, dict]) -> List[str]:
    """The Metrics table: value, count / n, 95% interval and its drawing (none for counts)."""
    out = ["<h3>Metrics</h3>\n<table><tr><th>metric</th><th>value</th><th>count / n</th><th>95% CI</th>"
           "<th>interval (0 to 1)</th></tr>"]
    for name, e in metrics.items():
        frac = "" if e["n"] is None else ("%s / %d" % (e["count"], e["n"]) if e["count"] is not None else "n = %d" % e["n"])
        ci = "" if e["ci"] is None else "%.4f &ndash; %.4f" % tuple(e["ci"])
        kind = _BY_NAME.get(name) or _BY_NAME.get(re.sub(r"@\d+$", "@K", name))
        svg = _interval_svg(e["value"], e["ci"]) if kind is None or kind.kind != "count" else ""
        val = _h(_num_text(e["value"])) if e["value"] is not None else '<span class="muted">null: %s</span>' % _h(e["reason"])
        out.append('<tr><td><code>%s</code></td><td class="n">%s</td><td class="n">%s</td><td class="n">%s</td>'
                   '<td>%s</td></tr>' % (_h(name), val, _h(frac), ci, svg))
    out.append("</table>")
    return out


def _html_categories(report: dict, cats: Dict[str, dict]) -> List[str]:
    """The Categories table: items and the main metrics of each category."""
    cols = [n for n in ("pass_rate", "precision", "chr", "hallucination", "over_refusal", "under_refusal",
                        "recall@%s" % report["k"], "nDCG@%s" % report["k"]) if n in report["metrics"]]
    out = ["<h3>Categories</h3>\n<table><tr><th>category</th><th>items</th>%s</tr>"
           % "".join("<th><code>%s</code></th>" % _h(col) for col in cols)]
    for cat, block in cats.items():
        out.append('<tr><td>%s</td><td class="n">%d</td>%s</tr>' % (_h(cat), block["items"], "".join(
            '<td class="n">%s</td>' % _h(_num_text(block["metrics"].get(col, {}).get("value"))) for col in cols)))
    out.append("</table>")
    return out


def _html_regression(reg: dict) -> List[str]:
    """Against the baseline: each metric's baseline, current value, delta (coloured by the
    metric's direction), flipped items and paired p-value."""
    out = ["<h3>Against the baseline</h3>\n<p>Baseline <code>%s</code>; %d items paired.</p>"
           % (_h(reg["baseline"]), reg["matched_items"])]
    out.append("<table><tr><th>metric</th><th>baseline</th><th>current</th><th>delta</th><th>worse</th>"
               "<th>better</th><th>p</th></tr>")
    for name, r in reg["metrics"].items():
        d = r.get("delta")
        cls = "" if not isinstance(d, (int, float)) or d == 0 else (
            "ok" if (d > 0) == ((_BY_NAME.get(name) or _BY_NAME.get(re.sub(r"@\d+$", "@K", name)) or
                                _BY_NAME["precision"]).better == "higher") else "bad")
        out.append('<tr><td><code>%s</code></td><td class="n">%s</td><td class="n">%s</td><td class="n %s">%s</td>'
                   '<td class="n">%s</td><td class="n">%s</td><td class="n">%s</td></tr>' % (
                       _h(name), _h(_num_text(r["baseline"])), _h(_num_text(r["current"])), cls,
                       _h(_num_text(d)), _h(r.get("worse", "")), _h(r.get("better", "")),
                       _h(_num_text(r.get("p_value")) if "p_value" in r else "")))
    out.append("</table>")
    return out


def render_html_section(report: dict, items_html: str = "", hidden: int = 0) -> str:
    """One dataset's report as an HTML <section> (every input string escaped)."""
    ds = str(report.get("dataset"))
    anchor = "ds-" + re.sub(r"[^A-Za-z0-9_-]", "_", ds)
    gates = report["gate_results"]
    out = ['<section class="dataset" id="%s" data-dataset="%s" data-pass="%s">' % (
        _h(anchor), _h(ds), "true" if report["pass"] else "false")]
    blocked = sum(1 for g in gates if g["tier"] == "block" and not g["pass"])
    out.append('<h2>Dataset %s</h2>\n<p><span class="verdict %s">%s</span> &nbsp; %d of %d block gates pass; '
               '%d warn gates failed; %d monitored.</p>' % (
                   _h(ds), "pass" if report["pass"] else "fail", "PASS" if report["pass"] else "FAIL",
                   sum(1 for g in gates if g["tier"] == "block") - blocked, sum(1 for g in gates if g["tier"] == "block"),
                   report.get("warnings_failed", 0), sum(1 for g in gates if g["tier"] == "monitor")))
    c = report["counts"]
    out.append('<p class="muted">Gold items: %d; trace rows: %d; missing traces: %d; unknown trace rows: %d; '
               'duplicate trace rows: %d; k = %s.</p>' % (c["gold_items"], c["trace_rows"], c["missing_traces"],
                                                       c["unknown_trace_rows"], c["duplicate_trace_rows"], _h(report["k"])))
    out += _html_gates(gates)
    if report.get("scorecard"):
        out += _html_scorecard(report["scorecard"])
    out += _html_metrics(report["metrics"])
    if report.get("categories"):
        out += _html_categories(report, report["categories"])
    out.append("<h3>Failure modes</h3>\n" + _bars_svg(list(report["failure_modes"].items())))
    if report.get("regression"):
        out += _html_regression(report["regression"])
    if report.get("warnings"):
        out.append("<h3>Warnings</h3>\n<ul>%s</ul>" % "".join("<li>%s</li>" % _h(w) for w in report["warnings"]))
    if items_html:
        out.append("<h3>Items</h3>\n<p class=\"muted\">Failing items first (most severe mode first), then the rest "
                   "in gold order; open an item for its question, claim, cited text and verdict flags; the browser's "
                   "find searches them.%s</p>\n%s" % (
                       " %d more items not shown (see --items or --csv)." % hidden if hidden else "", items_html))
    out.append("</section>\n")
    return "\n".join(out)


def render_html(report: dict, items_html: str = "", hidden: int = 0) -> str:
    title = "score_eval report: %s" % report.get("dataset")
    body = "<h1>%s</h1>\n%s\n%s%s\n" % (_h(title), _HTML_BEGIN, render_html_section(report, items_html, hidden), _HTML_END)
    return _html_page(title, body)


_SECTION_RX = re.compile(r'<section class="dataset" id="([^"]*)" data-dataset="([^"]*)" data-pass="(true|false)">')


def merge_html(texts: List[Tuple[str, str]]) -> str:
    """One page from several ``--html`` reports (path, text): their dataset sections in order.

    Every piece of input text inside a section is escaped, so the section markers (HTML
    comments) cannot occur inside one: splitting on them is safe."""
    sections, toc, ok = [], [], True
    for path, text in texts:
        if '<meta name="generator" content="score_eval">' not in text or text.count(_HTML_BEGIN) != 1 \
                or text.count(_HTML_END) != 1:
            raise ScoreError("%s: not a score_eval --html report (section markers missing), got %s"
                             % (path, _show(text[:60])))
        sec = text.split(_HTML_BEGIN, 1)[1].split(_HTML_END, 1)[0]
        m = _SECTION_RX.search(sec)
        if not m:
            raise ScoreError("%s: not a score_eval --html report (no dataset section), got %s" % (path, _show(sec[:60])))
        ok = ok and m.group(3) == "true"
        toc.append('<a href="#%s">%s: <span class="%s">%s</span></a>' % (
            m.group(1), m.group(2), "ok" if m.group(3) == "true" else "bad", "pass" if m.group(3) == "true" else "FAIL"))
        sections.append(sec)
    body = ('<h1>score_eval report</h1>\n<p><span class="verdict %s">%s</span></p>\n<nav>%s</nav>\n%s\n%s%s\n' % (
        "pass" if ok else "fail", "PASS" if ok else "FAIL", " ".join(toc), _HTML_BEGIN, "".join(sections), _HTML_END))
    return _html_page("score_eval report", body)


def _x(text) -> str:
    """Escaped for an XML 1.0 attribute or text node."""
    return html.escape(_inert(text), quote=True).replace("\n", "&#10;").replace("\r", "&#13;").replace("\t", "&#9;")


#: The registry metrics an item failure counts against (render_junit: an item fails in JUnit
#: only when one of its failure labels counts against a block gate that failed).  A label
#: not listed here counts against every metric (fail closed).
MODE_METRICS: Dict[str, Tuple[str, ...]] = {
    "policy_violation": ("policy_compliance",),
    "source_policy_violation": ("source_policy_compliance",),
    "training_cutoff_excuse": ("false_refuse_rate", "incorrect_refusal", "refusal_rate", "rejection_calibration",
                               "pass_rate", "over_refusal"),
    "under_refusal": ("under_refusal", "precision", "pass_rate", "correct_refusal", "refusal_rate",
                      "rejection_calibration", "false_accept_rate"),
    "false_acceptance": ("false_accept_rate", "rejection_calibration", "pass_rate", "decision_accuracy"),
    "citation_not_retrieved": ("citation_validity", "precision", "chr", "pass_rate"),
    "hallucination": ("hallucination",),
    "unsupported_answer": ("unsupported_answer_rate", "faithfulness"),
    "retrieval_miss": ("recall@K", "P@K", "R@K", "Success@K", "RR", "RR@K", "nDCG@K", "context_relevance"),
    "over_refusal": ("over_refusal", "incorrect_refusal", "pass_rate", "refusal_rate", "false_refuse_rate",
                     "rejection_calibration"),
    "false_rejection": ("false_refuse_rate", "incorrect_refusal", "rejection_calibration", "decision_accuracy"),
    "conflict_not_surfaced": ("conflict_correct_rate", "decision_accuracy"),
    "staleness_not_detected": ("staleness_correct_rate", "decision_accuracy"),
    "clarification_missed": ("clarify_correct_rate", "decision_accuracy"),
    "required_citation_missing": ("citation_coverage",),
    "citation_miss": ("chr", "precision", "pass_rate"),
    "claim_miss": ("precision", "pass_rate", "answer_relevance"),
    "decision_mismatch": ("decision_accuracy",),
}


def _failed_block_metrics(report: dict) -> Optional[set]:
    """Registry names of the metrics whose block gates failed; None when a failed block gate
    names no registry metric (a regression gate, say): then every item failure counts."""
    out = set()
    for g in report.get("gate_results") or []:
        if g["pass"] or g["tier"] != "block":
            continue
        try:
            out.add(parse_metric(str(g.get("metric") or "")).metric.name)
        except (ScoreError, AttributeError, KeyError, ValueError):
            return None
    return out


def block_relevant(labels: List[str], failed: Optional[set]) -> List[str]:
    """The failure labels that count against a failed block gate's metric (MODE_METRICS)."""
    if failed is None:
        return list(labels)
    return [m for m in labels if m == "missing_trace" and failed
            or (m not in MODE_METRICS and failed) or set(MODE_METRICS.get(m, ())) & failed]


def render_junit(report: dict, items: Optional[List[dict]] = None) -> str:
    """JUnit XML: <testsuites> with one <testsuite> (the dataset) holding the block and monitor
    gates, and one ``<dataset>.warnings`` holding the warn gates, one <testcase> per gate.

    A failed block gate is a <failure> in the dataset's suite.  A warn gate never fails a test
    (issue 42: a run that exits 0 has failures="0"): it passes with its value, threshold and
    ``passed`` as properties, and a failed one says so in a <system-out> line.  Monitor gates
    pass and carry their value as properties.  With ``items`` (--junit-items) a ``<dataset>.items``
    suite has one testcase per item: an item is a <failure> only when one of its failure
    labels counts against a block gate that failed (``MODE_METRICS``); other failing items
    pass with their labels as properties."""
    ds = str(report.get("dataset"))
    suites = []
    groups: Dict[str, List[str]] = {"main": [], "warn": []}
    fails = {"main": 0, "warn": 0}
    for g in report["gate_results"]:
        group = "warn" if g["tier"] == "warn" else "main"
        props = [("tier", g["tier"]), ("metric", g["metric"]), ("value", _num_text(g["value"])),
                 ("op", g["op"] or ""), ("threshold", "" if g["threshold"] is None else _fmt_num(g["threshold"]))]
        body = "<properties>%s</properties>" % "".join(
            '<property name="%s" value="%s"/>' % (_x(k), _x(v)) for k, v in props)
        note = (g["reason"] or "") + ((" " + g["message"]) if g.get("message") else "")
        if not g["pass"] and g["tier"] == "block":
            fails[group] += 1
            body += '<failure message="%s" type="gate">%s</failure>' % (_x(note), _x(note))
        elif g["tier"] == "warn":
            body = body.replace("</properties>", '<property name="passed" value="%s"/></properties>'
                                % ("true" if g["pass"] else "false"))
            if not g["pass"]:
                body += "<system-out>%s</system-out>" % _x("warn gate failed (does not block): " + note)
        groups[group].append('    <testcase classname="%s" name="%s">%s</testcase>' % (
            _x("score_eval.%s.%s" % (ds, g["tier"])), _x(g["gate"]), body))
    cases = groups["main"]
    suites.append(('<testsuite name="%s" tests="%d" failures="%d" errors="0" skipped="0">\n'
                   '    <properties><property name="pass" value="%s"/><property name="warnings_failed" value="%d"/>'
                   '<property name="overall_score" value="%s"/></properties>\n%s\n  </testsuite>'
                   % (_x(ds), len(cases), fails["main"], "true" if report["pass"] else "false",
                      report.get("warnings_failed", 0), _num_text((report.get("scorecard") or {}).get("overall")),
                      "\n".join(cases)), len(cases), fails["main"], 0))
    if groups["warn"]:
        suites.append(('<testsuite name="%s" tests="%d" failures="%d" errors="0" skipped="0">\n'
                       '    <properties><property name="blocks" value="false"/></properties>\n%s\n  </testsuite>'
                       % (_x(ds + ".warnings"), len(groups["warn"]), fails["warn"], "\n".join(groups["warn"])),
                       len(groups["warn"]), fails["warn"], 0))
    if items is not None:
        failed = _failed_block_metrics(report)
        icases, ifails = [], 0
        for rec in items:
            body = ""
            relevant = block_relevant(rec["labels"], failed) if rec["failure_mode"] else []
            if relevant:
                ifails += 1
                body = '<failure message="%s" type="item">%s</failure>' % (
                    _x(relevant[0]), _x("labels: %s; flags: %s" % (", ".join(rec["labels"]), rec["flags"])))
            elif rec["failure_mode"]:
                body = '<properties><property name="labels" value="%s"/><property name="blocks" value="false"/>' \
                       '</properties>' % _x(", ".join(rec["labels"]))
            icases.append('    <testcase classname="%s" name="%s">%s</testcase>' % (
                _x("score_eval.%s.items.%s" % (ds, rec["category"])), _x(rec["qid"]), body))
        suites.append(('<testsuite name="%s" tests="%d" failures="%d" errors="0" skipped="0">\n%s\n  </testsuite>'
                       % (_x(ds + ".items"), len(icases), ifails, "\n".join(icases)), len(icases), ifails, 0))
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="score_eval" tests="%d" failures="%d" '
            'errors="0" skipped="%d">\n  %s\n</testsuites>\n' % (
                sum(x[1] for x in suites), sum(x[2] for x in suites), sum(x[3] for x in suites),
                "\n  ".join(x[0] for x in suites)))


def _csv_cell(v):
    """Numbers as they are; text made inert and kept from being read as a spreadsheet formula."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return _num_text(v) if isinstance(v, float) else str(v)
    text = _inert(v)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def _csv_text(header: List[str], rows) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    w.writerow(header)
    for row in rows:
        w.writerow([_csv_cell(v) for v in row])
    return buf.getvalue()


def render_items_csv(scorer: Scorer, trec: bool, stages: ItemStages) -> str:
    names = [name for name, _, _ in stages.stages]
    head = ["qid", "category", "line", "pass", "answerable", "shipped", "failure_mode", "labels", "flags"]
    head += ["stage:" + n for n in names] + ["overall"]

    def rows():
        for i in range(len(scorer.gold)):
            rec = _item_record(scorer, i, trec)
            card = stages(i)
            yield ([rec["qid"], rec["category"], rec["line"], rec.get("pass"), rec.get("answerable"),
                    rec.get("shipped"), rec["failure_mode"] or "", ";".join(rec["labels"]), rec["flags"]]
                   + [card["stages"][n] for n in names] + [card["overall"]])
    return _csv_text(head, rows())


def render_metrics_csv(report: dict) -> str:
    rows = []
    for name, e in report["metrics"].items():
        ci = e["ci"] or [None, None]
        rows.append([name, e["value"], e["count"], e["n"], ci[0], ci[1], e["reason"] or ""])
    return _csv_text(["metric", "value", "count", "n", "ci_low", "ci_high", "reason"], rows)


def append_step_summary(path: str, text: str) -> Optional[str]:
    """Append to $GITHUB_STEP_SUMMARY (a regular file or a new one); never a symlink, FIFO or
    device.  Returns a warning instead of writing when the path is not a regular file."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        return "GITHUB_STEP_SUMMARY %s: cannot read: %s; summary not written" % (path, exc.strerror)
    if st is not None and not stat.S_ISREG(st.st_mode):
        return "GITHUB_STEP_SUMMARY %s is not a regular file; summary not written" % path
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
        with os.fdopen(fd, "a", encoding="utf-8", newline="\n") as fh:
            fh.write(text if text.endswith("\n") else text + "\n")
    except OSError as exc:
        return "GITHUB_STEP_SUMMARY %s: cannot append: %s; summary not written" % (path, exc.strerror)
    return None


def write_reports(args, report: dict, scorer: Scorer, trec: bool, stages: ItemStages) -> None:
    """--html, --junit [--junit-items], --csv, --metrics-csv and $GITHUB_STEP_SUMMARY."""
    if args.html:
        items_html, hidden = _html_items(args, scorer, trec, stages)
        atomic_write(args.html, render_html(report, items_html, hidden))
    if args.junit:
        items = [_item_record(scorer, i, trec) for i in range(len(scorer.gold))] if args.junit_items else None
        atomic_write(args.junit, render_junit(report, items))
    if args.csv:
        atomic_write(args.csv, render_items_csv(scorer, trec, stages))
    if args.metrics_csv:
        atomic_write(args.metrics_csv, render_metrics_csv(report))
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        problem = append_step_summary(summary, render_markdown(report, _worst(scorer, trec)))
        if problem:
            sys.stderr.write(terminal_safe("score_eval: warning: %s\n" % problem))

# --------------------------------------------------------------------------- main


def _item_record(scorer: Scorer, i: int, trec: bool) -> dict:
    gold, f = scorer.gold, scorer.flags[i]
    rec = {"qid": gold.qids[i], "category": gold.categories[gold.cat[i]], "line": gold.lines[i],
           "failure_mode": failure_mode(f, trec), "labels": all_modes(f, trec), "flags": flag_string(f),
           "trace": bool(f & F_TRACE)}
    if not trec:
        rec.update({"answerable": bool(f & F_ANS), "shipped": bool(f & F_SHIP), "containment": bool(f & F_CONT),
                    "citation_hit": bool(f & F_HIT), "pass": bool(f & F_PASS),
                    "citation_valid": bool(f & F_VALID) if f & F_SHIP else None,
                    "hallucination": bool(f & F_HALL) if f & F_SHIP and f & F_HMEAS else None,
                    "unsupported": scorer.unsupported.get(i, []) if f & F_HALL else [],
                    "recall@k": bool(f & F_REC)})
        rec.update(_extra_item(scorer, i, f))
        rec.update(_ground_item(scorer, i, f))
        rec.update(_reading_item(scorer, i, f))
    if f & F_GOLD:
        ret = {"RR": round(scorer.rr[i], 4)}
        for k in scorer.ks:
            ret["P@%d" % k] = round(measure_p(scorer.hits[k][i], k), 4)
            ret["R@%d" % k] = round(scorer.rec[k][i], 4)
            ret["nDCG@%d" % k] = round(scorer.ndcg[k][i], 4)
            ret["RR@%d" % k] = round(scorer.rrk[k][i], 4)
            ret["Success@%d" % k] = int(measure_success(scorer.hits[k][i]))
        rec["retrieval"] = ret
    else:
        rec["retrieval"] = None
    return rec


def _extra_item(scorer: Scorer, i: int, f: int) -> dict:
    """Issue 20's per-item fields of the --items file."""
    def num(arr):
        v = arr[i]
        return round(v, 4) if v == v else None
    reason = scorer.refusal_reason.get(i)
    if f & F_SHIP:
        by = None
    elif not f & F_PROSE:
        by = "token"
    elif scorer.rules.reader == "exact" or (reason and reason.endswith("]")):
        by = "pattern"
    else:
        by = "reader"
    kind = None
    if f & F_TRACE:
        kind = KIND_PARTIAL if f & F_PARTIAL else (KIND_ANSWER if f & F_SHIP else KIND_REFUSAL)
    return {"refused_by": by, "refusal_kind": kind, "refusal_reason": reason,
            "evidence": scorer.evidence.get(i, []), "answer_relevance": num(scorer.answer_rel),
            "context_relevance": num(scorer.context_rel), "latency_ms": num(scorer.latency),
            "cost": num(scorer.cost),
            "answer_correct": bool(f & F_ANSOK) if scorer.answer_f1[i] == scorer.answer_f1[i] else None,
            "answer_f1": num(scorer.answer_f1), "answer_recall": num(scorer.answer_recall)}


def _ground_item(scorer: Scorer, i: int, f: int) -> dict:
    """Issue 29's per-item fields: null when the answer was not checked."""
    v = scorer.faith[i]
    return {"unsupported_answer": bool(f & F_UNSUP) if f & F_GMEAS else None,
            "unsupported_sentences": scorer.unsup_sents.get(i, []) if f & F_UNSUP else [],
            "faithfulness": round(v, 4) if v == v else None}


def _reading_item(scorer: Scorer, i: int, f: int) -> dict:
    """Reading 1's per-item fields of the --items file."""
    return {"citations_from": ("text" if f & F_CITTEXT else "trace") if f & F_TRACE else None,
            "citations_read": scorer.text_cits.get(i, []), "bad_markers": scorer.bad_marks.get(i, [])}


def _item_lines(scorer: Scorer, trec: bool, stages: Optional[ItemStages] = None):
    for i in range(len(scorer.gold)):
        rec = _item_record(scorer, i, trec)
        if stages is not None:
            rec["scorecard"] = stages(i)
        yield json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n"


def _worst(scorer: Scorer, trec: bool, limit: int = 20) -> List[dict]:
    """Failing items, most severe mode first (MODE_ORDER), then gold file order."""
    failing = []
    rank: Dict[int, int] = {}
    for i, f in enumerate(scorer.flags):
        r = rank.get(f)
        if r is None:
            mode = failure_mode(f, trec)
            r = rank[f] = -1 if mode is None else MODE_ORDER.index(mode)
        if r >= 0:
            failing.append((r, i))
    failing.sort()
    return [_item_record(scorer, i, trec) for _, i in failing[:limit]]

#!/usr/bin/env python3
"""Write the README's "Current figures" section from runs/report.json (made by ``make eval``).

Usage: python3 tools/update_readme.py [--report runs/report.json] [--readme README.md] [--check]

The section between ``<!-- figures:begin -->`` and ``<!-- figures:end -->`` is replaced by
tables built only from the report: the gates per dataset (categories are in runs/report.md).
With ``--check`` nothing is written; exit 1 when the README differs from the report.
"""
import argparse
import json
import os
import sys

BEGIN, END = "<!-- figures:begin -->", "<!-- figures:end -->"
HEADLINE = ("pass_rate", "precision", "chr", "under_refusal", "over_refusal", "incorrect_refusal",
            "hallucination", "fallback_used_rate_answerable", "citation_validity", "recall@5")


def _value(metrics, name):
    m = metrics.get(name)
    if isinstance(m, dict):
        return m.get("value"), m.get("n")
    return m, None


def _fmt(v):
    return "n/a" if v is None else ("%.4f" % v if isinstance(v, float) else str(v))


def render(report):
    out = ["Overall: **%s**." % ("pass" if report.get("pass") else "FAIL"), ""]
    for ds, rep in report["datasets"].items():
        out.append("**%s** (%s items): %s" % (ds, rep.get("counts", {}).get("gold", rep.get("answerable", 0)
                                                                            + rep.get("unanswerable", 0)),
                                             "pass" if rep.get("pass") else "FAIL"))
        out.append("")
        out.append("| gate | value | threshold | verdict |")
        out.append("|---|---|---|---|")
        for g in rep.get("gate_results", []):
            need = "%s %s" % (g["op"], _fmt(g.get("threshold"))) if g.get("op") else "(%s)" % g.get("tier")
            out.append("| %s | %s | %s | %s |" % (g["gate"], _fmt(g.get("value")), need,
                                                 "reported" if not g.get("op") else "pass" if g["pass"] else "FAIL"))
        out.append("")
    out.append("Per-category figures: `runs/report.md` after `make eval`.")
    out.append("")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--report", default=os.path.join("runs", "report.json"), help="report written by make eval")
    ap.add_argument("--readme", default="README.md", help="README to update")
    ap.add_argument("--check", action="store_true", help="only compare; exit 1 when out of date")
    args = ap.parse_args(argv)
    try:
        with open(args.report, encoding="utf-8") as fh:
            report = json.load(fh)
        with open(args.readme, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, ValueError) as exc:
        print("update_readme: %s" % exc, file=sys.stderr)
        return 2
    if BEGIN not in text or END not in text:
        print("update_readme: %s: markers %s / %s not found" % (args.readme, BEGIN, END), file=sys.stderr)
        return 2
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = head + BEGIN + "\n" + render(report) + "\n" + END + tail
    if args.check:
        if new != text:
            print("update_readme: README figures differ from %s" % args.report, file=sys.stderr)
            return 1
        return 0
    if new != text:
        tmp = args.readme + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(new)
        os.replace(tmp, args.readme)
    return 0


if __name__ == "__main__":
    sys.exit(main())

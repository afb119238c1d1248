"""Metric names: parsing a gate's metric name (registry, parameterised families, trec_eval names),
suggestions for a misspelt one and the metric table of the docs."""
from __future__ import annotations

import difflib
import re

from .base import ScoreError
from .registry import ALIASES, REGISTRY, _BY_NAME, _PARAM_RX
from .retrieval import MetricRef
from .trec import trec_ref

# --------------------------------------------------------------------------- retrieval measures
#
# One implementation per measure of the registry's retrieval families, used by QA mode
# (Scorer._retrieval: P@K, R@K, Success@K, RR, RR@K, nDCG@K) and by TREC mode (trec_query: P_K,
# recall_K, success_K, recip_rank, ndcg_cut_K) alike.  Both reduce a ranking to ``positions``:
# the 0-based ranks of its relevant documents, ascending, with ``gains``, their levels (1 for a
# plain gold citation; the qrels level >= 1 with --qrels).


def parse_metric(name: str) -> MetricRef:
    """Resolve a metric name (or seed alias) to the registry; suggest the closest on failure."""
    spelled = name
    name = ALIASES.get(name, name)
    if name in _BY_NAME and "@K" not in name:
        return MetricRef(spelled, _BY_NAME[name], None)
    if name == "recall@k":
        return MetricRef(spelled, _BY_NAME["recall@K"], None)
    m = _PARAM_RX.fullmatch(name)
    if m:
        return MetricRef(spelled, _BY_NAME[m.group(1) + "@K"], int(m.group(2)))
    ref = trec_ref(spelled)     # trec_eval's names (map, ndcg_cut.10): IR mode only
    if ref is not None:
        return ref
    raise ScoreError("unknown metric %r%s" % (spelled, _suggest(spelled)))


def _suggest(name: str) -> str:
    digits = re.search(r"@(\d+)", name)
    k = digits.group(1) if digits else "5"
    names = [m.name.replace("@K", "@" + k) for m in REGISTRY] + list(ALIASES) + ["recall@k"]
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.5)
    if not close:
        lowered = {n.lower(): n for n in names}
        close = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.5)
        close = [lowered[c] for c in close]
    return "; did you mean %r?" % close[0] if close else ""


def aggregates(m) -> str:
    """How the measure ``m`` sums its items, in words (the metric table's "kind" column)."""
    if m.kind == "rate":
        return "rate, Wilson 95% CI"
    if m.kind == "mean":
        return "mean, normal 95% CI" if m.ci else "mean"
    return "quantile (nearest rank)" if m.kind == "quantile" else m.kind


def computed_when(m) -> str:
    """When a run computes the measure ``m`` (the metric table's "computed" column)."""
    if m.needs:
        return "when asked (%s)" % m.needs
    if m.requires and m.requires[0] == "grounding_on":
        return "when asked (grounding)"
    return "always"


def metric_table_markdown() -> str:
    """The metric table of README.md and docs/design.md, generated from the registry
    (tools/metric_tables.py writes it there; tests keep both in sync)."""
    rows = ["| metric | kind | better | needs gold | computed | definition | fields read | when undefined |",
            "|---|---|---|---|---|---|---|---|"]
    for m in REGISTRY:
        rows.append("| `%s` | %s | %s | %s | %s | %s | %s | %s |" % (
            m.name, aggregates(m), m.better, "yes" if m.gold else "no", computed_when(m),
            m.definition.replace("|", "\\|"), m.fields, m.undefined))
    return "\n".join(rows) + "\n"


def _metric_help() -> str:
    lines = ["metrics (K = any cutoff, e.g. P@5; seed aliases: under, over, recall@k; * computed only when asked: "
             "a gate, --compute, the scorecard or an output beside the JSON report):"]
    for m in REGISTRY:
        lines.append("  %-30s %s" % (m.name + (" *" if computed_when(m) != "always" else ""), m.definition))
    lines.append("")
    lines.append("exit status: 0 all gates pass, 1 a gate failed, 2 usage or input error")
    return "\n".join(lines)

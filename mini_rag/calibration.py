"""The ``[calibration]`` record of a config, and which operating point a run uses (issue 43).

``python -m mini_rag calibrate`` (:mod:`mini_rag.eval.calibrate`) chooses the answer/refuse
operating point on a small labelled sample of the user's own questions and writes it into
a config file: the chosen values in ``[answer]`` (where every run reads them) and a
``[calibration]`` table saying where they came from::

    [answer]
    min_key_coverage = 0.6
    min_question_share = 0.3

    [calibration]
    mode = "rules"
    gold = "my_questions.jsonl"
    gold_sha256 = "<64 hex>"
    sample = 50
    answerable = 31
    unanswerable = 19
    gates = "gates.toml"
    objective = "..."
    candidates = 24
    passes_gates = false
    point = {min_key_coverage = 0.6, min_question_share = 0.3}

    [calibration.expected]          # the chosen point's figures on the sample, Wilson 95%
    pass_rate = {value = 0.62, count = 31, n = 50, low = 0.48, high = 0.74}

    [calibration.defaults]          # the committed defaults' figures on the same sample
    pass_rate = {value = 0.54, count = 27, n = 50, low = 0.40, high = 0.67}

This module has no dependency inside the package but :mod:`mini_rag.errors` (the config
reader calls :func:`check_record`):

=====================================  ================================================
``check_record(origin, table)``        the ``[calibration]`` table validated (MiniRagError
                                       naming the file and key), a plain dict
``operating_point(config)``            which operating point a run under ``config`` uses:
                                       the committed defaults, values set by hand, or a
                                       calibration (and whether the values still match it)
``describe(op)``                       that, in one line
``config_toml(raw, answer, record)``   the text of a config file: ``raw`` (a base
                                       config's tables) with ``answer`` laid over its
                                       ``[answer]`` and ``record`` as ``[calibration]``
=====================================  ================================================
"""
from __future__ import annotations

import json
import math
import re
from typing import Any, Dict, List, Optional

from .errors import MiniRagError

__all__ = ["MODES", "POINT_KEYS", "RECORD_KEYS", "FIGURE_KEYS", "check_record", "operating_point", "describe",
           "config_toml", "toml_value"]

#: The decision a calibration tunes, and the ``[answer]`` keys of its operating point.
POINT_KEYS: Dict[str, tuple] = {
    "rules": ("min_key_coverage", "min_question_share"),
    "model": ("answerability_threshold",),
    "model+embed": ("answerability_embed_threshold",),
}
MODES = tuple(POINT_KEYS)
#: Scalar keys of ``[calibration]`` and their types.
RECORD_KEYS: Dict[str, type] = {
    "mode": str, "gold": str, "gold_sha256": str, "corpus": str, "sample": int, "answerable": int,
    "unanswerable": int, "gates": str, "dataset": str, "objective": str, "candidates": int,
    "passes_gates": bool,
}
#: Keys of one figure ``{value, count, n, low, high}`` (``value``, ``low``, ``high`` absent when
#: the metric was not measurable on the sample, e.g. precision when nothing shipped).
FIGURE_KEYS = ("value", "count", "n", "low", "high")
_FIGURE_TABLES = ("expected", "defaults")
_HEX64 = re.compile(r"[0-9a-f]{64}\Z")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _figure(where: str, fig: Any) -> Dict[str, Any]:
    if not isinstance(fig, dict):
        raise MiniRagError("%s must be a table {value, count, n, low, high}, got %r" % (where, fig))
    out: Dict[str, Any] = {}
    for key, v in fig.items():
        if key not in FIGURE_KEYS:
            raise MiniRagError("%s: unknown key %r (known: %s)" % (where, key, ", ".join(FIGURE_KEYS)))
        if key in ("count", "n"):
            if not (isinstance(v, int) and not isinstance(v, bool) and v >= 0):
                raise MiniRagError("%s %s must be a whole number of at least 0, got %r" % (where, key, v))
        elif not (_is_number(v) and 0.0 <= v <= 1.0):
            raise MiniRagError("%s %s must be a number from 0 to 1, got %r" % (where, key, v))
        out[key] = v
    if "n" not in out or "count" not in out:
        raise MiniRagError("%s needs count and n" % where)
    return out


def check_record(origin: str, table: Any) -> Dict[str, Any]:
    """``[calibration]`` of config file ``origin``, validated; an empty table is no calibration."""
    if not isinstance(table, dict):
        raise MiniRagError("%s: [calibration] must be a table, got %r" % (origin, table))
    out: Dict[str, Any] = {}
    for key, value in table.items():
        where = "%s: [calibration] %s" % (origin, key)
        if key in RECORD_KEYS:
            kind = RECORD_KEYS[key]
            ok = isinstance(value, kind) and (kind is bool or not isinstance(value, bool))
            if not ok or (kind is int and value < 0):
                raise MiniRagError("%s must be %s, got %r" % (where, {str: "a string", int: "a whole number of at "
                                                                       "least 0", bool: "true or false"}[kind], value))
            out[key] = value
        elif key == "point":
            if not isinstance(value, dict) or not value:
                raise MiniRagError("%s must be a table of [answer] values, got %r" % (where, value))
            for k, v in value.items():
                if not _is_number(v):
                    raise MiniRagError("%s %s must be a number, got %r" % (where, k, v))
            out[key] = {k: float(v) for k, v in value.items()}
        elif key in _FIGURE_TABLES:
            if not isinstance(value, dict):
                raise MiniRagError("%s must be a table of figures, got %r" % (where, value))
            out[key] = {m: _figure("%s.%s" % (where, m), f) for m, f in value.items()}
        else:
            known = sorted(list(RECORD_KEYS) + ["point"] + list(_FIGURE_TABLES))
            raise MiniRagError("%s: unknown key %r in [calibration] (known: %s)" % (origin, key, ", ".join(known)))
    if not out:
        return out
    for need in ("mode", "point", "sample"):
        if need not in out:
            raise MiniRagError("%s: [calibration] needs %s (written by `python -m mini_rag calibrate`)" % (origin, need))
    if out["mode"] not in POINT_KEYS:
        raise MiniRagError("%s: [calibration] mode must be one of %s, got %r" % (origin, ", ".join(MODES), out["mode"]))
    if sorted(out["point"]) != sorted(POINT_KEYS[out["mode"]]):
        raise MiniRagError("%s: [calibration] point of mode %s must set %s, got %s" % (
            origin, out["mode"], ", ".join(POINT_KEYS[out["mode"]]), ", ".join(sorted(out["point"]))))
    if "gold_sha256" in out and not _HEX64.match(out["gold_sha256"]):
        raise MiniRagError("%s: [calibration] gold_sha256 must be 64 lower-case hex digits, got %r"
                           % (origin, out["gold_sha256"]))
    return out


def _mode_of(config: Dict[str, Any], decider: Optional[str]) -> str:
    if not config["answer"].get("answerability", False):
        return "rules"
    return decider or "model"


def operating_point(config: Dict[str, Any], defaults: Dict[str, Any], decider: Optional[str] = None) -> Dict[str, Any]:
    """Which answer/refuse operating point a run under ``config`` uses.

    ``defaults``: the committed configuration's (``config.DEFAULTS``).  ``decider``: with
    ``[answer] answerability`` on, which model decides (``answerability.deciding_model``;
    default ``"model"``).  Returns ``{"source", "mode", "values"}`` and, for a calibration,
    ``"calibration"`` (the record) and ``"matches"`` (its point equals the values in use):
    ``source`` is ``"defaults"`` (every value of the mode as committed, no calibration),
    ``"config"`` (set by hand) or ``"calibrated"``.  A threshold of -1 is the model file's own.
    """
    mode = _mode_of(config, decider)
    values = {k: float(config["answer"][k]) for k in POINT_KEYS[mode]}
    record = config.get("calibration") or {}
    out: Dict[str, Any] = {"mode": mode, "values": values}
    if record:
        out["source"] = "calibrated"
        out["calibration"] = record
        out["matches"] = record.get("mode") == mode and all(
            abs(record["point"].get(k, float("nan")) - v) < 1e-12 for k, v in values.items())
    elif all(values[k] == float(defaults["answer"][k]) for k in values):
        out["source"] = "defaults"
    else:
        out["source"] = "config"
    return out


def _values_text(values: Dict[str, float]) -> str:
    return ", ".join("%s %s" % (k, "fitted" if v < 0 else "%g" % v) for k, v in sorted(values.items()))


def _fig_text(fig: Optional[Dict[str, Any]]) -> str:
    if not fig or fig.get("value") is None:
        return "n/a"
    if fig.get("low") is None:
        return "%.3f" % fig["value"]
    return "%.3f [%.3f, %.3f]" % (fig["value"], fig["low"], fig["high"])


def describe(op: Dict[str, Any]) -> str:
    """``op`` (:func:`operating_point`) in one line, for ``eval``'s summary on stderr."""
    what = {"rules": "phase C's rules", "model": "the answerability model",
            "model+embed": "the answerability model with embeddings"}[op["mode"]]
    head = "operating point: %s, %s" % (what, _values_text(op["values"]))
    if op["source"] == "defaults":
        return head + " (the committed defaults; no calibration)"
    if op["source"] == "config":
        return head + " (set in the config; no calibration)"
    rec = op["calibration"]
    exp = rec.get("expected") or {}
    text = "%s (calibrated on %d questions of %s: expected pass rate %s, precision %s, under-refusal %s, " \
           "over-refusal %s)" % (head, rec.get("sample", 0), rec.get("gold", "?"), _fig_text(exp.get("pass_rate")),
                                 _fig_text(exp.get("precision")), _fig_text(exp.get("under_refusal")),
                                 _fig_text(exp.get("over_refusal")))
    if not op["matches"]:
        text += "; warning: the config's values are not the calibrated point (%s %s): the expected figures do " \
                "not apply" % (rec.get("mode"), _values_text(rec.get("point") or {}))
    return text


# ------------------------------------------------------------------ writing a config file

def toml_value(value: Any) -> str:
    """One TOML value: a string, a finite number, a boolean, a list of those, or a table
    (written inline)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("TOML: a number must be finite, got %r" % value)
        return repr(value)
    if isinstance(value, str):
        # JSON's escapes are TOML's, except that TOML also escapes DEL
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join("%s = %s" % (_key(k), toml_value(v)) for k, v in value.items()) + "}"
    raise ValueError("TOML: cannot write %r" % (value,))


_BARE = re.compile(r"[A-Za-z0-9_-]+\Z")


def _key(key: str) -> str:
    return key if _BARE.match(key) else toml_value(key)


def _table(lines: List[str], name: str, table: Dict[str, Any]) -> None:
    scalars = [(k, v) for k, v in table.items() if not isinstance(v, dict)]
    subs = [(k, v) for k, v in table.items() if isinstance(v, dict)]
    lines.append("[%s]" % name)
    lines.extend("%s = %s" % (_key(k), toml_value(v)) for k, v in scalars)
    lines.append("")
    for k, v in subs:
        _table(lines, "%s.%s" % (name, _key(k)), v)


def config_toml(raw: Dict[str, Any], answer: Dict[str, Any], record: Dict[str, Any], header: str = "") -> str:
    """A config file: ``raw`` (a base config file's tables, as read; its comments are not
    kept) with ``answer`` laid over ``[answer]`` and ``record`` as ``[calibration]``
    (``expected`` and ``defaults`` as sub-tables of figures, the rest inline).  ``header``:
    comment lines put first.  Deterministic: tables in ``raw``'s order, then ``[answer]``
    and ``[calibration]`` when ``raw`` had none."""
    doc: Dict[str, Any] = {k: dict(v) if isinstance(v, dict) else v for k, v in raw.items() if k != "calibration"}
    doc.setdefault("answer", {}).update(answer)
    lines = ["# " + line if line else "#" for line in header.splitlines()]
    if lines:
        lines.append("")
    for name, table in doc.items():
        if name == "expansion":
            for rule, body in table.items():
                _table(lines, "expansion.%s" % _key(rule), body)
            continue
        _table(lines, _key(name), table)
    rec = {k: v for k, v in record.items() if k not in _FIGURE_TABLES}
    lines.append("[calibration]")
    lines.extend("%s = %s" % (_key(k), toml_value(v)) for k, v in rec.items())
    lines.append("")
    for name in _FIGURE_TABLES:
        if name in record:
            lines.append("[calibration.%s]" % name)
            lines.extend("%s = %s" % (_key(m), toml_value(f)) for m, f in record[name].items())
            lines.append("")
    return "\n".join(lines)

"""Number formatting shared by every output (rounding, the gate-value form, metric ordering)."""
from __future__ import annotations


from .registry import REGISTRY

# --------------------------------------------------------------------------- output


def _r(v):
    """Round a reported float to 4 decimals as the seed does (gates use unrounded values)."""
    if isinstance(v, float):
        return round(v, 4)
    return v


def _fmt_num(v) -> str:
    return ("%.4f" % v).rstrip("0").rstrip(".") if isinstance(v, float) else str(v)


def _rounded(entry: dict) -> dict:
    out = dict(entry)
    out["value"] = _r(entry["value"])
    if entry["ci"] is not None:
        out["ci"] = [round(x, 4) for x in entry["ci"]]
    return out


def _metric_sort_key(name: str):
    base, _, k = name.partition("@")
    for pos, m in enumerate(REGISTRY):
        if m.name == name or m.name.split("@")[0] == base and ("@K" in m.name) == bool(k):
            return (pos, int(k) if k.isdigit() else 0)
    return (len(REGISTRY), 0)

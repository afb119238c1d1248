"""Intervals: Wilson for rates, normal intervals for means, and the per-metric entry of a report."""
from __future__ import annotations

import math
from fractions import Fraction
from operator import mul

from .base import Z95

# --------------------------------------------------------------------------- aggregation


def wilson(count: int, n: int) -> Optional[List[float]]:
    """Wilson score 95% interval for count/n (None when n == 0)."""
    if n == 0:
        return None
    p = count / n
    z2 = Z95 * Z95
    den = 1 + z2 / n
    center = (p + z2 / (2 * n)) / den
    half = Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / den
    return [max(0.0, center - half), min(1.0, center + half)]


def _sample_ci(vals: List[float], total: float) -> Optional[List[float]]:
    """_normal_ci of the values ``vals`` (``total``: math.fsum of them)."""
    return _normal_ci(total, math.fsum(map(mul, vals, vals)), len(vals))


def _normal_ci(values_sum: float, sq_sum: float, n: int) -> Optional[List[float]]:
    if n == 0:
        return None
    mean = values_sum / n
    var = max(0.0, sq_sum / n - mean * mean) * n / (n - 1) if n > 1 else 0.0
    half = Z95 * math.sqrt(var / n)
    return [max(0.0, mean - half), min(1.0, mean + half)]


def _counted_sums(counts: Dict[float, int]) -> Tuple[float, float]:
    """(math.fsum of the values, math.fsum of their squares) of a multiset given as value ->
    count (few distinct values in [0, 1]: a rank measure over many items), without listing it: both sums
    are exact (Fraction) and rounded once, as math.fsum rounds, so the floats are the same."""
    total = sq = Fraction(0)
    for v, c in counts.items():
        total += Fraction(v) * c
        sq += Fraction(v * v) * c
    return float(total), float(sq)


def _entry(value, count, n, ci, reason=None) -> dict:
    return {"value": value, "count": count, "n": n, "ci": ci, "reason": reason}

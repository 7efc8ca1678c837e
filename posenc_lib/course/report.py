"""Formatting numbers for the notebooks' printed lines and tables.

Small helpers, so that a notebook prints the same text on every machine: a difference that is
pure floating-point rounding is shown as a bound (its exact digits depend on the CPU and the
BLAS library), a table's columns are turned into text with a chosen format, and repeated
measurements (one per seed) are shown as "mean ± std".

The series' one rule for comparing trained models (:func:`clearly_ahead`): with 3 or more seeds per
setting, A is ahead of B when the gap of their means exceeds twice the larger of the two standard
deviations (ddof=1). An ordering the prose states is asserted with this rule; a gap that fails it is
reported as "within the seed spread", never as a ranking.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import pandas as pd

__all__ = ["rounding", "formatted", "mean_std", "rule_margin", "clearly_ahead"]


def rounding(x: float) -> str:
    """A difference shown as "< 1e-12" or "< 1e-6" when it is rounding noise, else with 2 significant digits.

    x: a real number or a one-element tensor (``float(x)`` must work).
    """
    try:
        value = abs(float(x))
    except (TypeError, ValueError):
        raise TypeError(f"x must be a real number or a one-element tensor, got {type(x).__name__}") from None
    return "< 1e-12" if value < 1e-12 else "< 1e-6" if value < 1e-6 else f"{value:.2g}"


def formatted(df: pd.DataFrame, formats: Mapping[str, str | Callable[[object], str]]) -> pd.DataFrame:
    """A copy of ``df`` with the given columns turned into text.

    formats: column -> a ``"{:.3f}"``-style pattern or a function of one value. Columns not
    named stay as they are.
    """
    missing = [col for col in formats if col not in df.columns]
    if missing:
        raise ValueError(f"formats names columns that df does not have: {missing}; columns are {list(df.columns)}")
    return df.assign(**{col: df[col].map(f.format if isinstance(f, str) else f) for col, f in formats.items()})


def _mean_sd(name: str, values: Sequence[float], minimum: int) -> tuple[float, float]:
    """Mean and ddof=1 standard deviation of ``values``, which must hold at least ``minimum`` numbers."""
    data = [float(v) for v in values]
    if len(data) < minimum:
        raise ValueError(f"{name} must hold at least {minimum} measurements (one per seed), got {len(data)}")
    mean = sum(data) / len(data)
    return mean, (sum((v - mean) ** 2 for v in data) / (len(data) - 1)) ** 0.5


def rule_margin(a: Sequence[float], b: Sequence[float], higher_is_better: bool = True) -> tuple[float, float]:
    """The two numbers the series' rule compares: ``(gap, threshold)``.

    a, b: one measurement per seed (at least 3 each). ``gap = mean(a) - mean(b)``, negated when lower
    is better (so a positive gap means ``a`` is ahead); ``threshold = 2 * max(std(a), std(b))``,
    ddof=1 standard deviations. For printing how far a verdict is from flipping.
    """
    (mean_x, std_x), (mean_y, std_y) = _mean_sd("a", a, 3), _mean_sd("b", b, 3)
    gap = (mean_x - mean_y) if higher_is_better else (mean_y - mean_x)
    return gap, 2 * max(std_x, std_y)


def clearly_ahead(a: Sequence[float], b: Sequence[float], higher_is_better: bool = True) -> bool:
    """The series' rule: is setting ``a`` ahead of ``b`` by more than twice the larger seed spread?

    a, b: one measurement per seed (at least 3 each), e.g. accuracies or perplexities.
    higher_is_better: True for accuracy-like numbers, False for losses and perplexities.
    Returns ``gap > threshold`` of :func:`rule_margin`.
    """
    gap, threshold = rule_margin(a, b, higher_is_better)
    return gap > threshold


def mean_std(values: Sequence[float], digits: int = 3) -> str:
    """"mean ± std" of repeated measurements (e.g. one per seed), std with ddof=1, rounded to ``digits`` decimals."""
    mean, std = _mean_sd("values", values, 2)
    return f"{mean:.{digits}f} ± {std:.{digits}f}"

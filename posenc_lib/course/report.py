"""Formatting numbers for the notebooks' printed lines and tables.

Small helpers, so that a notebook prints the same text on every machine: a difference that is
pure floating-point rounding is shown as a bound (its exact digits depend on the CPU and the
BLAS library), a table's columns are turned into text with a chosen format, and repeated
measurements (one per seed) are shown as "mean ± std".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import pandas as pd

__all__ = ["rounding", "formatted", "mean_std"]


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


def mean_std(values: Sequence[float], digits: int = 3) -> str:
    """"mean ± std" of repeated measurements (e.g. one per seed), std with ddof=1, rounded to ``digits`` decimals."""
    data = [float(v) for v in values]
    if len(data) < 2:
        raise ValueError(f"values must hold at least 2 measurements to give a spread, got {len(data)}")
    mean = sum(data) / len(data)
    std = (sum((v - mean) ** 2 for v in data) / (len(data) - 1)) ** 0.5
    return f"{mean:.{digits}f} ± {std:.{digits}f}"

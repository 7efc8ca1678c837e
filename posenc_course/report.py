"""Formatting numbers for the notebooks' printed lines and tables.

Small helpers, so that a notebook prints the same text on every machine: a difference that is
pure floating-point rounding is shown as a bound (its exact digits depend on the CPU and the
BLAS library), a table's columns are turned into text with a chosen format, and repeated
measurements (one per seed) are shown as "mean ± std".

The series' rule for comparing trained models is :func:`compare` (docs/comparison.md): A is ahead
of B when the gap clears both the seed spread and a floor on the size of the effect; otherwise the
two are "not separated", which never means "the same". Given the two arms' names it prints as a
sentence that names them in the order given ("sinusoid ahead of the drowning table by 0.90
(needed 0.14)"). :func:`clearly_ahead` and :func:`rule_margin` are shorthands of it.
:func:`checked` prints the one line a hidden check cell shows (or nothing, after
``show_checks(False)``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

__all__ = ["rounding", "formatted", "mean_std", "format_gap", "Verdict", "compare", "checked", "show_checks",
           "rule_margin", "clearly_ahead"]


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


def mean_std(values: Sequence[float], digits: int = 3) -> str:
    """"mean ± std" of repeated measurements (e.g. one per seed), std with ddof=1, rounded to ``digits`` decimals."""
    mean, std = _mean_sd("values", values, 2)
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def format_gap(x: float) -> str:
    """A gap or a bar as a verdict prints it: 2 decimals from 0.1 up ("0.90", "12.35"), 2 significant digits
    below ("0.028", "0.0012"), and "< 0.001" under a thousandth (where rounding, not training, sets the digits)."""
    size = abs(x)
    return f"{x:.2f}" if size >= 0.095 else f"{x:.2g}" if size >= 0.001 else "< 0.001"  # 0.0996: "0.10"


@dataclass(frozen=True)
class Verdict:
    """The outcome of :func:`compare`: which setting is ahead, and by how much it cleared (or missed) the bar.

    gap: the mean advantage of A over B in the metric's units (positive favours A; for a lower-is-better
    metric the sign is flipped, so positive still favours A). Paired: the mean per-seed difference.
    spread: twice the larger seed standard deviation (unpaired), or twice the standard deviation of the
    per-seed differences (paired). floor: the smallest gap that counts, in the metric's units.
    names: the two arms' names, A's first, or None. With names, ``str(verdict)`` is :meth:`sentence`;
    without, the older form "A ahead (gap +0.12; spread 0.04, floor 0.02)".
    """

    gap: float
    spread: float
    floor: float
    paired: bool
    names: tuple[str, str] | None = None

    @property
    def bar(self) -> float:
        """What ``|gap|`` must exceed: the larger of the spread and the floor."""
        return max(self.spread, self.floor)

    @property
    def a_ahead(self) -> bool:
        return self.gap > self.bar

    @property
    def b_ahead(self) -> bool:
        return -self.gap > self.bar

    @property
    def separated(self) -> bool:
        return self.a_ahead or self.b_ahead

    @property
    def margin(self) -> float:
        """``|gap| - bar``: positive when separated, and how far the verdict is from flipping."""
        return abs(self.gap) - self.bar

    def sentence(self, a: str, b: str) -> str:
        """The verdict as the prose states it, naming A then B: "a ahead of b by 0.90 (needed 0.14)",
        "a behind b by 0.31 (needed 0.05)", "a and b not separated (gap 0.01, needed 0.14)"; a paired
        comparison says so ("(paired, needed 0.14)"). The gap and the bar are in the metric's units, the
        gap as a size (which arm it favours is in the words); "needed" is the bar, max(spread, floor)."""
        needed = f"({'paired, ' if self.paired else ''}needed {format_gap(self.bar)})"
        if self.a_ahead:
            return f"{a} ahead of {b} by {format_gap(self.gap)} {needed}"
        if self.b_ahead:
            return f"{a} behind {b} by {format_gap(-self.gap)} {needed}"
        return f"{a} and {b} not separated (gap {format_gap(abs(self.gap))}, {needed[1:]}"

    def __str__(self) -> str:
        if self.names is not None:
            return self.sentence(*self.names)
        kind = "paired, " if self.paired else ""
        numbers = f"gap {self.gap:+.3g}; {kind}spread {self.spread:.3g}, floor {self.floor:.3g}"
        word = "A ahead" if self.a_ahead else "B ahead" if self.b_ahead else "not separated"
        return f"{word} ({numbers})"


def compare(a: Sequence[float], b: Sequence[float], *, higher_is_better: bool = True,
            paired: bool = False, floor: float = 0.02, relative: bool = False,
            names: tuple[str, str] | None = None) -> Verdict:
    """The series' comparison rule: is setting A ahead of B, B ahead of A, or are they not separated?

    a, b: one measurement per seed (at least 3 each), e.g. accuracies or perplexities.
    higher_is_better: True for accuracies, False for losses and perplexities.
    paired: True when a[i] and b[i] share seed i (the same initial weights and batches, or one trained
        model measured two ways): the rule then reads the per-seed differences, which cancel what a
        seed shares. a and b must then have the same length.
    floor: the smallest effect that counts. Absolute (in the metric's units; 0.02 = two points of
        accuracy) unless ``relative``, then a fraction of B's mean (0.02 = 2% of a perplexity).
    names: (A's name, B's name) as the prose names them; ``print(verdict)`` then prints the sentence
        "A ahead of B by 0.90 (needed 0.14)" (:meth:`Verdict.sentence`). The documented form.

    A is ahead when its mean advantage exceeds both twice the seed spread (the larger standard
    deviation of the two settings, ddof=1; paired: of the differences) and the floor. Anything
    else is "not separated": the seeds cannot tell, which is not "the same".
    """
    for name, value in (("higher_is_better", higher_is_better), ("paired", paired), ("relative", relative)):
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be True or False, got {value!r}")
    if not isinstance(floor, (int, float)) or isinstance(floor, bool) or not floor >= 0:
        raise ValueError(f"floor must be a number >= 0, got {floor!r}")
    if names is not None and not (isinstance(names, tuple) and len(names) == 2
                                  and all(isinstance(n, str) and n.strip() for n in names)):
        raise ValueError(f"names must be None or a pair of non-empty strings (A's name, B's name), got {names!r}")
    sign = 1.0 if higher_is_better else -1.0
    (mean_a, sd_a), (mean_b, sd_b) = _mean_sd("a", a, 3), _mean_sd("b", b, 3)
    if paired:
        if len(a) != len(b):
            raise ValueError(f"paired comparison needs one measurement of a and b per seed, got {len(a)} and {len(b)}")
        _, sd_diff = _mean_sd("a - b", [float(x) - float(y) for x, y in zip(a, b)], 3)
        spread = 2 * sd_diff
    else:
        spread = 2 * max(sd_a, sd_b)
    return Verdict(gap=sign * (mean_a - mean_b), spread=spread,
                   floor=floor * abs(mean_b) if relative else float(floor), paired=paired, names=names)


def clearly_ahead(a: Sequence[float], b: Sequence[float], higher_is_better: bool = True, *,
                  paired: bool = False, floor: float = 0.02, relative: bool = False) -> bool:
    """Whether A is ahead of B by the series' rule: ``compare(a, b, ...).a_ahead``.

    The same arguments as :func:`compare`; for a perplexity or a loss pass ``higher_is_better=False,
    relative=True`` (a floor of 2% of B's mean).
    """
    return compare(a, b, higher_is_better=higher_is_better, paired=paired, floor=floor, relative=relative).a_ahead


def rule_margin(a: Sequence[float], b: Sequence[float], higher_is_better: bool = True, *,
                paired: bool = False, floor: float = 0.02, relative: bool = False) -> tuple[float, float]:
    """``(gap, bar)`` of :func:`compare`: A is ahead when ``gap > bar``. For printing how far a verdict is from flipping."""
    verdict = compare(a, b, higher_is_better=higher_is_better, paired=paired, floor=floor, relative=relative)
    return verdict.gap, verdict.bar


#: Whether :func:`checked` prints its line (see :func:`show_checks`).
_show_checks = True


def show_checks(show: bool = True) -> None:
    """Whether the check cells of this notebook print their ``checked: ...`` line (default: they do).

    ``show_checks(False)``, once near the top of a notebook, leaves a check cell with no output when
    every check held, the quietest form a reader can have: a check that fails still stops the cell
    with its AssertionError, so a silent check cell means that every claim held. A reader who wants
    the lines back runs ``show_checks(True)`` and the cells again.
    """
    if not isinstance(show, bool):
        raise TypeError(f"show must be True or False, got {show!r}")
    global _show_checks
    _show_checks = show


def checked(what: str, *more: str) -> None:
    """Print the one line a hidden check cell shows: ``checked: <what>`` (several claims: ``checked: a; b; c``).

    One check cell per section, ending with one call that names the section's claims, gives one
    line per section. After ``show_checks(False)`` it prints nothing. Returns None, so a cell that
    ends with this call prints the line and nothing else.
    """
    claims = (what, *more)
    bad = [c for c in claims if not isinstance(c, str) or not c.strip()]
    if bad:
        raise ValueError(f"what must be a non-empty description of what was checked, got {bad[0]!r}")
    if _show_checks:
        print("checked: " + "; ".join(claims))

"""posenc_lib.course.report: rounding noise shown as a bound, table columns formatted."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from posenc_lib.course.report import clearly_ahead, formatted, mean_std, rounding, rule_margin


@pytest.mark.parametrize(("x", "text"), [(0.0, "< 1e-12"), (3e-13, "< 1e-12"), (2e-9, "< 1e-6"),
                                         (torch.tensor(4e-7), "< 1e-6"), (0.01234, "0.012"), (-5.0, "5")])
def test_rounding(x, text):
    assert rounding(x) == text


def test_rounding_rejects_non_numbers():
    with pytest.raises(TypeError, match="real number"):
        rounding(None)


def test_formatted_pattern_and_function():
    df = pd.DataFrame({"a": [0.12345, 1.0], "b": [1e-15, 0.5], "c": [1, 2]})
    out = formatted(df, {"a": "{:.2f}", "b": rounding})
    assert out["a"].tolist() == ["0.12", "1.00"] and out["b"].tolist() == ["< 1e-12", "0.5"]
    assert out["c"].tolist() == [1, 2] and df["a"].iloc[0] == 0.12345  # others kept, input unchanged


def test_formatted_names_missing_columns():
    with pytest.raises(ValueError, match="columns that df does not have"):
        formatted(pd.DataFrame({"a": [1]}), {"z": "{:.1f}"})


def test_mean_std_uses_the_sample_std():
    assert mean_std([1.0, 2.0, 3.0]) == "2.000 ± 1.000"
    assert mean_std([0.5, 0.5], digits=2) == "0.50 ± 0.00"


def test_mean_std_needs_two_values():
    with pytest.raises(ValueError, match="at least 2"):
        mean_std([1.0])


def test_clearly_ahead_needs_a_gap_over_twice_the_larger_spread():
    a, b = [0.9, 0.92, 0.94], [0.8, 0.82, 0.84]   # gap 0.10, both std 0.02: 0.10 > 0.04
    assert clearly_ahead(a, b) and not clearly_ahead(b, a)
    wide = [0.7, 0.82, 0.94]                       # std 0.12: the same gap is within the spread
    assert not clearly_ahead([x + 0.1 for x in wide], wide)   # gap 0.10 < 2 * 0.12


def test_clearly_ahead_for_losses_prefers_the_lower():
    low, high = [1.0, 1.1, 1.2], [2.0, 2.1, 2.2]
    assert clearly_ahead(low, high, higher_is_better=False)
    assert not clearly_ahead(high, low, higher_is_better=False)


def test_clearly_ahead_names_a_short_argument():
    with pytest.raises(ValueError, match="b must hold at least 3"):
        clearly_ahead([1.0, 2.0, 3.0], [1.0, 2.0])


def test_rule_margin_gives_the_gap_and_threshold_the_rule_compares():
    gap, threshold = rule_margin([3.0, 4.0, 5.0], [1.0, 1.5, 2.0])   # means 4 and 1.5, stds 1 and 0.5
    assert gap == pytest.approx(2.5) and threshold == pytest.approx(2.0)
    gap, threshold = rule_margin([3.0, 4.0, 5.0], [1.0, 1.5, 2.0], higher_is_better=False)
    assert gap == pytest.approx(-2.5) and threshold == pytest.approx(2.0)
    with pytest.raises(ValueError, match="a must hold at least 3"):
        rule_margin([1.0, 2.0], [1.0, 2.0, 3.0])

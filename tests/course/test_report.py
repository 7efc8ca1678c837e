"""posenc_course.report: rounding noise shown as a bound, table columns formatted."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from posenc_course.report import clearly_ahead, compare, formatted, mean_std, rounding, rule_margin


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


def test_clearly_ahead_is_compare_with_its_floor():
    """The first edition's spread-only rule called 1.00 ahead of 0.99 when every seed sat at the ceiling
    (05 §7); the shorthand now says what compare says: not separated, the gap is under the floor."""
    rope, t5 = [1.0, 1.0, 1.0], [0.9931, 0.9920, 0.9906]
    assert not clearly_ahead(rope, t5) and not compare(rope, t5).separated
    assert clearly_ahead(rope, t5, floor=0.005)
    low, high = [10.0, 10.01, 10.02], [10.1, 10.11, 10.12]   # 1% apart: under a 2% relative floor
    assert not clearly_ahead(low, high, higher_is_better=False, relative=True)
    assert clearly_ahead(low, high, higher_is_better=False, relative=True, floor=0.005)
    for a, b in [([0.9, 0.92, 0.94], [0.8, 0.82, 0.84]), ([0.7, 0.82, 0.94], [0.6, 0.72, 0.84])]:
        assert clearly_ahead(a, b) == compare(a, b).a_ahead


def test_rule_margin_gives_the_gap_and_threshold_the_rule_compares():
    gap, threshold = rule_margin([3.0, 4.0, 5.0], [1.0, 1.5, 2.0])   # means 4 and 1.5, stds 1 and 0.5
    assert gap == pytest.approx(2.5) and threshold == pytest.approx(2.0)
    gap, bar = rule_margin([1.0, 1.0, 1.0], [0.99, 0.99, 0.99])      # no spread: the bar is the floor
    assert gap == pytest.approx(0.01) and bar == pytest.approx(0.02)
    gap, threshold = rule_margin([3.0, 4.0, 5.0], [1.0, 1.5, 2.0], higher_is_better=False)
    assert gap == pytest.approx(-2.5) and threshold == pytest.approx(2.0)
    with pytest.raises(ValueError, match="a must hold at least 3"):
        rule_margin([1.0, 2.0], [1.0, 2.0, 3.0])


# --- the comparison rule (compare) -------------------------------------------------------------

from posenc_course.report import Verdict, checked, format_gap, show_checks  # noqa: E402


def test_compare_needs_the_gap_to_clear_the_spread_and_the_floor():
    ceiling, near = [1.0, 1.0, 1.0], [0.99, 0.99, 0.99]  # seeds agree, the gap is negligible
    verdict = compare(ceiling, near)
    assert not verdict.separated and verdict.bar == 0.02 and verdict.margin < 0
    assert compare([0.9, 0.91, 0.92], [0.5, 0.52, 0.48]).a_ahead
    assert compare([0.5, 0.52, 0.48], [0.9, 0.91, 0.92]).b_ahead


def test_compare_a_wide_spread_is_not_separated_and_says_so():
    verdict = compare([0.9, 0.5, 0.7], [0.6, 0.55, 0.5])
    assert not verdict.separated and str(verdict).startswith("not separated")


def test_compare_lower_is_better_flips_the_sign_and_a_relative_floor_scales_with_b():
    verdict = compare([10.0, 10.1, 9.9], [12.0, 12.1, 11.9], higher_is_better=False, relative=True)
    assert verdict.a_ahead and verdict.gap == pytest.approx(2.0) and verdict.floor == pytest.approx(0.24)
    assert not compare([10.0, 10.01, 9.99], [10.1, 10.11, 10.09], higher_is_better=False, relative=True).separated


def test_compare_paired_reads_per_seed_differences():
    a, b = [0.60, 0.80, 0.70], [0.55, 0.75, 0.65]  # a leads by 0.05 on every seed
    assert not compare(a, b).separated  # the seeds' own spread hides it
    verdict = compare(a, b, paired=True)
    assert verdict.a_ahead and verdict.paired and verdict.spread == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("kwargs, error, pattern", [
    (dict(a=[1, 2], b=[1, 2, 3]), ValueError, "a must hold at least 3"),
    (dict(a=[1, 2, 3], b=[1, 2, 3, 4], paired=True), ValueError, "paired comparison needs"),
    (dict(a=[1, 2, 3], b=[1, 2, 3], floor=-1), ValueError, "floor must be a number >= 0, got -1"),
    (dict(a=[1, 2, 3], b=[1, 2, 3], paired=1), TypeError, "paired must be True or False, got 1"),
    (dict(a=[1, 2, 3], b=[1, 2, 3], names=("A",)), ValueError, "names must be None or a pair of non-empty strings"),
    (dict(a=[1, 2, 3], b=[1, 2, 3], names=["A", "B"]), ValueError, "names must be None or a pair"),
])
def test_compare_rejects_bad_input(kwargs, error, pattern):
    a, b = kwargs.pop("a"), kwargs.pop("b")
    with pytest.raises(error, match=pattern):
        compare(a, b, **kwargs)


def test_verdict_str_names_the_outcome_and_its_numbers():
    assert str(Verdict(gap=0.1, spread=0.04, floor=0.02, paired=True)) == (
        "A ahead (gap +0.1; paired, spread 0.04, floor 0.02)")


# --- the verdict as a sentence (issue #50) ------------------------------------------------------
@pytest.mark.parametrize(("a", "b", "kwargs", "sentence"), [
    ([1.5, 1.6, 1.55], [0.6, 0.7, 0.65], {}, "sinusoid ahead of the drowning table by 0.90 (needed 0.10)"),
    ([0.6, 0.7, 0.65], [1.5, 1.6, 1.55], {}, "sinusoid behind the drowning table by 0.90 (needed 0.10)"),
    ([0.61, 0.7, 0.65], [0.6, 0.7, 0.65], {},
     "sinusoid and the drowning table not separated (gap 0.0033, needed 0.10)"),
    ([0.61, 0.71, 0.66], [0.6, 0.7, 0.65], {"paired": True},
     "sinusoid and the drowning table not separated (gap 0.01, paired, needed 0.02)"),
    ([1.0, 1.1, 1.05], [1.5, 1.6, 1.55], {"higher_is_better": False, "relative": True},
     "sinusoid ahead of the drowning table by 0.50 (needed 0.10)"),
    ([0.71, 0.72, 0.73], [0.60, 0.61, 0.62], {"paired": True},
     "sinusoid ahead of the drowning table by 0.11 (paired, needed 0.02)"),
])
def test_a_named_verdict_prints_a_sentence_with_both_arms_in_the_order_given(a, b, kwargs, sentence):
    verdict = compare(a, b, names=("sinusoid", "the drowning table"), **kwargs)
    assert str(verdict) == sentence == verdict.sentence("sinusoid", "the drowning table")
    assert verdict == compare(a, b, **kwargs).__class__(**{**compare(a, b, **kwargs).__dict__,
                                                         "names": ("sinusoid", "the drowning table")})


def test_an_unnamed_verdict_keeps_the_older_form_and_its_properties():
    verdict = compare([1.5, 1.6, 1.55], [0.6, 0.7, 0.65])
    assert verdict.a_ahead and not verdict.b_ahead and str(verdict).startswith("A ahead (gap +0.9;")


@pytest.mark.parametrize(("x", "shown"), [(0.9, "0.90"), (12.345, "12.35"), (0.0284, "0.028"), (-0.0785, "-0.079"),
                                          (0.0012, "0.0012"), (2e-17, "< 0.001"), (0.0, "< 0.001"),
                                          (0.09999, "0.10"), (0.0949, "0.095")])
def test_format_gap(x, shown):
    assert format_gap(x) == shown


# --- checked lines -------------------------------------------------------------------------------
def test_checked_prints_one_line_and_returns_none(capsys):
    assert checked("3 orderings hold by the rule") is None
    assert capsys.readouterr().out == "checked: 3 orderings hold by the rule\n"
    with pytest.raises(ValueError, match="what must be a non-empty"):
        checked(" ")


def test_a_sections_claims_collapse_into_one_line(capsys):
    checked("3 orderings hold by the rule", "the table matches the library")
    assert capsys.readouterr().out == "checked: 3 orderings hold by the rule; the table matches the library\n"
    with pytest.raises(ValueError, match="what must be a non-empty"):
        checked("fine", "")


def test_show_checks_false_silences_checked_until_turned_back_on(capsys):
    try:
        show_checks(False)
        assert checked("3 orderings hold by the rule") is None
        assert capsys.readouterr().out == ""
        with pytest.raises(ValueError, match="what must be a non-empty"):  # a bad call is still an error
            checked("")
    finally:
        show_checks(True)
    checked("back")
    assert capsys.readouterr().out == "checked: back\n"
    with pytest.raises(TypeError, match="show must be True or False"):
        show_checks("no")

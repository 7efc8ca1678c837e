"""The notebook 08 checkers accept the worked solutions, reject typical wrong answers, and print [to do] on stubs (tests/course/test_exercises_common.py)."""

from __future__ import annotations

import math

import pytest
import torch

from posenc_course.exercises import ExerciseFailure
from posenc_course.exercises.nb08 import check_exercise_1, check_exercise_2, check_exercise_3

pytestmark = pytest.mark.usefixtures("strict_checkers")  # wrong answers raise ExerciseFailure

# ---------------------------------------------------------------- exercise 1: Llama 3's bands


def llama3_frequencies(inv_freq, factor, low, high, original):
    wavelength = 2 * math.pi / inv_freq
    smooth = (original / wavelength - low) / (high - low)
    blended = (1 - smooth) * inv_freq / factor + smooth * inv_freq
    out = torch.where(wavelength > original / low, inv_freq / factor, inv_freq)
    middle = (wavelength >= original / high) & (wavelength <= original / low)
    return torch.where(middle, blended, out)


def test_ex1_accepts_solution(capsys):
    check_exercise_1(llama3_frequencies)
    assert "[passed] Exercise 1" in capsys.readouterr().out


@pytest.mark.parametrize(("wrong", "hint"), [
    (lambda f, s, lo, hi, o: f / s, "PI"),
    (lambda f, s, lo, hi, o: f.clone(), "unscaled"),
    (lambda f, s, lo, hi, o: torch.where(2 * math.pi / f > o / lo, f / s, f), "blend"),  # no band
    (lambda f, s, lo, hi, o: torch.where(2 * math.pi / f > o / hi, f / s, f), "blend"),  # the band divided, not blended
    (lambda f, s, lo, hi, o: torch.where(2 * math.pi / f < o / hi, f / s, f), "above original/low"),  # backwards
    (lambda f, s, lo, hi, o: f[:-1], "shape"),
    (lambda f, s, lo, hi, o: None, "tensor of shape"),
])
def test_ex1_rejects_wrong(wrong, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_1(wrong)


# ---------------------------------------------------------------- exercise 2: which coordinate each pair reads


def pair_axes(n_pairs, section, interleaved):
    if not interleaved:
        return [axis for axis, count in enumerate(section) for _ in range(count)]
    return [1 if i % 3 == 1 and i < 3 * section[1] else 2 if i % 3 == 2 and i < 3 * section[2] else 0 for i in range(n_pairs)]


def test_ex2_accepts_solution(capsys):
    check_exercise_2(pair_axes)
    assert "[passed] Exercise 2" in capsys.readouterr().out


@pytest.mark.parametrize(("wrong", "hint"), [
    (lambda n, s, inter: [a for a, c in enumerate(s) for _ in range(c)], "sectioned order"),  # never interleaves
    (lambda n, s, inter: [i % 3 for i in range(n)], "section's number of pairs"),  # cycles to the end
    (lambda n, s, inter: pair_axes(n, s, inter)[:-1], "one axis per pair"),
    (lambda n, s, inter: "thw", "list of"),
    (lambda n, s, inter: list(reversed(pair_axes(n, s, inter))), "expected"),
])
def test_ex2_rejects_wrong(wrong, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_2(wrong)


# ---------------------------------------------------------------- exercise 3: SmolLM3's NoPE layers


def no_rope_layers(n_layers, interval):
    return [int((layer + 1) % interval != 0) for layer in range(n_layers)]


def test_ex3_accepts_solution(capsys):
    check_exercise_3(no_rope_layers)
    assert "[passed] Exercise 3" in capsys.readouterr().out


@pytest.mark.parametrize(("wrong", "hint"), [
    (lambda n, k: [int((layer + 1) % k == 0) for layer in range(n)], "wrong way round"),
    (lambda n, k: [int(layer % k != 0) for layer in range(n)], "off by one"),
    (lambda n, k: [1] * n, "expected"),
    (lambda n, k: no_rope_layers(n, k)[:-1], "one flag per layer"),
    (lambda n, k: None, "list of"),
])
def test_ex3_rejects_wrong(wrong, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_3(wrong)

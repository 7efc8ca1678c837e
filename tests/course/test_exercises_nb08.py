"""The notebook 08 checkers accept the right answers, reject typical wrong ones with their own hint, and print [to do] on stubs (tests/course/test_exercises_common.py)."""

from __future__ import annotations

import math

import pytest

from posenc_course.exercises import ExerciseFailure
from posenc_course.exercises.nb08 import check_exercise_1, check_exercise_2, check_exercise_3
from posenc_lib.rotary.rope import rope_inv_freq

pytestmark = pytest.mark.usefixtures("strict_checkers")  # wrong answers raise ExerciseFailure

# ---------------------------------------------------------------- exercise 1: predict the pairs Llama 3.1 keeps

KEPT = int((2 * math.pi / rope_inv_freq(128, 500000.0).double() < 8192 / 4).sum())  # what the notebook computes


def test_ex1_accepts_a_prediction_within_two(capsys):
    assert KEPT == 29
    for guess in (27, 29, 31):
        check_exercise_1(guess, KEPT)
    assert capsys.readouterr().out.count("[passed] Exercise 1") == 3


@pytest.mark.parametrize(("guess", "hint"), [(10, "too low.*many pairs"), (50, "too high.*before its middle"),
                                             ("29", "must be a number")])
def test_ex1_rejects_a_wrong_count(guess, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_1(guess, KEPT)


# ---------------------------------------------------------------- exercise 2: the M-RoPE order for a 40 x 40 grid


def test_ex2_accepts_interleaved(capsys):
    check_exercise_2("d")
    assert "[passed] Exercise 2" in capsys.readouterr().out


@pytest.mark.parametrize(("letter", "hint"), [("a", "hardly turn"), ("b", "20 pairs, sectioned 24"),
                                              ("c", "which axis gets which")])
def test_ex2_rejects_each_wrong_option_with_its_own_hint(letter, hint, second_try):
    with pytest.raises(ExerciseFailure, match=hint):
        second_try(check_exercise_2, letter)


# ---------------------------------------------------------------- exercise 3: design, a config's frequencies


def inv_freq_of(config):
    p, d = config.rope_parameters, config.head_dim
    theta = rope_inv_freq(d, p["rope_theta"])
    if p["rope_type"] == "linear":
        return theta / p["factor"]
    if p["rope_type"] == "llama3":
        wavelength = 2 * math.pi / theta
        lo, hi = p["low_freq_factor"], p["high_freq_factor"]
        gamma = ((p["original_max_position_embeddings"] / wavelength - lo) / (hi - lo)).clamp(0, 1)
        return (1 - gamma) * theta / p["factor"] + gamma * theta
    return theta


def test_ex3_accepts_a_reader_of_every_config(capsys):
    check_exercise_3(inv_freq_of)
    assert "[passed] Exercise 3" in capsys.readouterr().out


@pytest.mark.parametrize(("wrong", "hint"), [
    (lambda c: rope_inv_freq(c.head_dim, 10000.0), "base 10,000"),
    (lambda c: rope_inv_freq(c.head_dim, c.rope_parameters["rope_theta"]), "plain frequencies"),
    (lambda c: rope_inv_freq(c.head_dim, c.rope_parameters["rope_theta"]) / c.rope_parameters.get("factor", 1.0),
     "linear scaling"),
    (lambda c: inv_freq_of(c)[:-1], "head_dim // 2"),
    (lambda c: inv_freq_of(c).tolist(), "return a tensor"),
])
def test_ex3_rejects_wrong(wrong, hint):
    with pytest.raises(ExerciseFailure, match=hint):
        check_exercise_3(wrong)


def _library_reader(config):
    from posenc_lib.interop import hf_config

    return hf_config.rotary_scheme(config).inv_freq


def _model_reader(config):
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    return LlamaRotaryEmbedding(config).inv_freq


def _rotary_pe_reader(config):
    from posenc_lib.rotary.rope import RotaryPE

    return RotaryPE(config.head_dim, scaling=config.rope_parameters).inv_freq


def _transformers_init(config):
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    kind = config.rope_parameters["rope_type"]
    return ROPE_INIT_FUNCTIONS[kind](config)[0] if kind in ROPE_INIT_FUNCTIONS else inv_freq_of(config)


@pytest.mark.parametrize(("shortcut", "name"), [(_library_reader, "rope_frequencies"),
                                                (_model_reader, "LlamaRotaryEmbedding"),
                                                (_rotary_pe_reader, "rope_frequencies"),
                                                (_transformers_init, "ROPE_INIT_FUNCTIONS")])
def test_ex3_refuses_the_ready_made_readers(shortcut, name):
    with pytest.raises(ExerciseFailure, match=f"your reader called .*{name}"):
        check_exercise_3(shortcut)


def test_ex3_leaves_the_readers_working_after_a_refusal(capsys):
    with pytest.raises(ExerciseFailure):
        check_exercise_3(_model_reader)
    check_exercise_3(inv_freq_of)
    assert "[passed] Exercise 3" in capsys.readouterr().out
    from posenc_lib.interop import hf_config

    assert hf_config.rotary_scheme(_llama_config_for_test()).inv_freq.numel() == 8


def _llama_config_for_test():
    from posenc_course.exercises.nb08 import _llama_config

    return _llama_config(dict(hidden_size=64, num_attention_heads=4, head_dim=16),
                         {"rope_type": "default", "rope_theta": 10000.0})

"""Checkers for notebook 02 (learnable absolute encoding).

Each checker and the function it expects::

    check_exercise_1(predicted, actual)  predict, then run: the accuracy of section 4's model with the
                                         inputs at positions 1-12 instead of 0-11
    check_exercise_2(letter)  explain why: no row past max_len, and no generalisation past the training length
    check_exercise_3(fn)  fn(pe, new_max_len) -> a new LearnablePE of new_max_len rows, row p = pe row (p mod max_len)
    check_exercise_4(fn)  fn(d_model) -> std of N(0, std) token embeddings that, once multiplied by sqrt(d_model),
                          have the same mean squared norm as a sinusoidal row (d_model / 2)
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from posenc_course.exercises import Exercise, checker, choice, prediction
from posenc_course.i18n import N_, _
from posenc_lib.embeddings.learnable import LearnablePE
from posenc_lib.embeddings.sinusoidal import sinusoidal_table

__all__ = ["check_exercise_1", "check_exercise_2", "check_exercise_3", "check_exercise_4"]


check_exercise_1 = prediction(
    N_("Exercise 1 (predict the accuracy at positions 1-12)"), variable="predicted_shift", tolerance=0.15,
    too_high=N_("Only one row (12) is untrained, but that is not what matters: every trained row now sits "
                "under the token of the next rank. The model reads each token one rank too high."),
    too_low=N_("A shift by one moves each answer to the neighbouring rank, and sorted sequences of 12 tokens "
               "from 16 often repeat a value, so the neighbouring rank often holds the same token."),
    why=N_("The table tied 'rank p' to row p. At positions 1-12 the token at index p gets row p+1 and the "
           "model outputs the (p+1)-th smallest token: right only where two neighbouring ranks hold the "
           "same value. An absolute encoding ties what the model learns to the index itself."),
)

check_exercise_2 = choice(
    N_("Exercise 2 (why past max_len, and past the training length)"),
    options={
        "a": N_("Rows past max_len would be zero vectors, which LayerNorm cannot normalise; the sinusoid "
                "fails at 12-23 because its values there exceed 1."),
        "b": N_("The sinusoid generalises past the training length because its rows are smooth and defined "
                "for every p; only the learnable table, which has no row there, fails."),
        "c": N_("The table has no row from max_len on; the sinusoid has one, but the model only learned "
                "what the vectors of positions 0-11 mean."),
        "d": N_("Both fail because position ids beyond the training length overflow their integer type and "
                "wrap round to rows the model has seen."),
    },
    answer="c",
    why=N_("A table is a lookup: no index, no row (section 5's ValueError). The sinusoid computes a vector "
           "for any p, but what the model learned is tied to the vectors it was trained on; at positions "
           "12-23 both encodings score below the model without position (section 8). Encodings that depend "
           "on the distance only (03, 05) attack that."),
    hints={
        "a": N_("no row exists to be zero: the lookup itself fails (section 5's ValueError); and sines and "
                "cosines stay within [-1, 1] at every position."),
        "b": N_("section 8 measures the sinusoidal model at positions 12-23: it fails there too, below the "
                "model without any position. Defined is not the same as learned."),
        "d": N_("the ids are int64 numbers below 24; nothing overflows. The failure is in what the model "
                "learned, not in the arithmetic."),
    },
    nudge=N_("Look at section 8's accuracy at positions 12-23 for both encodings, and ask what the model saw "
             "there during training."),
)


@checker(N_("Exercise 3 (extend a table by copying)"))
def check_exercise_3(ex: Exercise, fn: Callable[[LearnablePE, int], LearnablePE]) -> None:
    """fn(pe, new_max_len) must return a new, independent LearnablePE whose row p is pe.weight[p % pe.max_len]."""
    torch.manual_seed(5)
    for old_len, new_len, d in [(4, 10, 3), (6, 6, 2), (8, 16, 8)]:
        pe = LearnablePE(d, old_len, init_std=0.5)
        before = pe.weight.detach().clone()
        new = ex.call(fn, pe, new_len)
        ex.expect(isinstance(new, LearnablePE), _("return a LearnablePE, got {type}").format(type=type(new).__name__))
        ex.expect(new is not pe, _("return a new module; the trained one must stay as it is"))
        ex.expect(torch.equal(pe.weight.detach(), before), _("the original table was modified; copy its rows instead"))
        ex.expect(new.max_len == new_len and tuple(new.weight.shape) == (new_len, d),
                  _("for new_max_len={new_len}, d_model={d} expected max_len {new_len} and weight shape ({new_len}, "
                    "{d}), got max_len {got_len} and shape {got_shape}").format(
                      new_len=new_len, d=d, got_len=new.max_len, got_shape=tuple(new.weight.shape)))
        ex.expect(isinstance(new.weight, torch.nn.Parameter) and new.weight.requires_grad,
                  _("the new weight must be a trainable nn.Parameter (the copied rows are a starting point)"))
        want = before[torch.arange(new_len) % old_len]
        got = new.weight.detach()
        ex.expect(torch.equal(got[:old_len], before), _("the first max_len rows must be the trained rows, unchanged"))
        ex.expect(torch.equal(got, want), _("row p must be a copy of row p % {old_len} (positions {old_len}.. start "
                                            "again at row 0, as Longformer initialised its longer table)").format(
                                                old_len=old_len))
        with torch.no_grad():
            new.weight.add_(1.0)
        ex.expect(torch.equal(pe.weight.detach(), before),
                  _("the new table shares memory with the old one; copy the data (clone) into a new parameter"))
    ex.passed(_("rows copied periodically into a new, independent table for 3 sizes"))


@checker(N_("Exercise 4 (matching the scales)"))
def check_exercise_4(ex: Exercise, fn: Callable[[int], float]) -> None:
    """fn(d_model) must return 1 / sqrt(2 d_model): then sqrt(d)-scaled token rows match sinusoidal rows in mean norm."""
    for d in (16, 64, 512):
        std = ex.call(fn, d)
        ex.expect(isinstance(std, (int, float)) and not isinstance(std, bool),
                  _("return a Python float, got {type}").format(type=type(std).__name__))
        want = 1.0 / math.sqrt(2 * d)
        if math.isclose(std, want, rel_tol=1e-6):
            continue
        ex.expect(not math.isclose(std, 1.0 / math.sqrt(d), rel_tol=1e-6),
                  _("d_model^-1/2 is the initialisation of Vaswani et al.: the scaled token rows then have squared "
                    "norm d_model = {d}, but a sinusoidal row has squared norm d_model/2 = {half} (each sin/cos pair "
                    "adds sin^2 + cos^2 = 1)").format(d=d, half=d // 2))
        ex.expect(not math.isclose(std, 1.0 / math.sqrt(2), rel_tol=1e-6),
                  _("this ignores the multiplication by sqrt(d_model) and the d_model entries of a row"))
        table = sinusoidal_table(8, d, dtype=torch.float64)
        target = table.pow(2).sum(-1).mean().item()
        ex.fail(_("for d_model={d}: token rows with std {std:.5g}, times sqrt(d_model), have mean squared norm "
                  "std^2 * d_model^2 = {norm:.4g}; a sinusoidal row has {target:.4g}").format(
                    d=d, std=std, norm=std**2 * d * d, target=target))
    ex.passed(_("std = 1/sqrt(2 d_model) for d_model in (16, 64, 512)"))

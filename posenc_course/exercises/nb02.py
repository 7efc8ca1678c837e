"""Checkers for notebook 02 (learnable absolute encoding).

Each checker and the function it expects::

    check_exercise_1(predicted, actual)  predict, then run: the accuracy of section 4's model with the
                                         inputs at positions 1-12 instead of 0-11
    check_exercise_2(letter)  explain why: what the test at positions 12-23 shows (absolute reading, not length)
    check_exercise_3(fn)  design: fn(pe, new_max_len) -> a new LearnablePE of new_max_len rows that keeps pe's rows and
                          starts the new ones at their scale, neighbours alike, no two the same, continuing from
                          the last trained row
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
    N_("Exercise 1 (predict the accuracy at positions 1-12)"), variable="predicted_shift", tolerance=0.1,
    too_high=N_("Only one row (12) is untrained, but that is not what matters: every trained row now sits "
                "under the token of the next rank. The model reads each token one rank too high."),
    too_low=N_("A shift by one moves each answer to the neighbouring rank, and sorted sequences of 12 tokens "
               "from 16 often repeat a value, so the neighbouring rank often holds the same token."),
    why=N_("The table tied 'rank p' to row p. At positions 1-12 the token at index p gets row p+1 and the "
           "model outputs the (p+1)-th smallest token: right only where two neighbouring ranks hold the "
           "same value. An absolute encoding ties what the model learns to the index itself."),
)

check_exercise_2 = choice(
    N_("Exercise 2 (what the shifted test shows)"),
    options={
        "a": N_("Neither encoding extrapolates in length: on inputs of 24 tokens both would fail the same way at "
                "positions 12-23."),
        "b": N_("Both models read each rank off the absolute index, so even a perfect reading of positions 12-23 "
                "gives wrong ranks."),
        "c": N_("Rows 12-23 of the learnable table are random, and the sinusoid's vectors at 12-23 are too small "
                "for the model to notice."),
        "d": N_("Neither model learned to sort: each memorised which token stands at which position in the "
                "training sequences."),
    },
    answer="b",
    why=N_("The target at the slot of position 12 is still the smallest token: ranks count from the start of the "
           "sequence. A model that learned 'row p means rank p' answers rank 12 there, right for position 12, wrong "
           "for this input. So the test shows that both encodings tie the answer to absolute positions; it cannot "
           "tell whether unseen vectors are a problem too, and it is not a longer input, which would keep "
           "positions 0-11 where they were."),
    hints={
        "a": N_("the inputs are as long as in training (12 tokens); only their positions moved. A longer input "
                "would keep positions 0-11 where they were, and section 8 does not test one."),
        "c": N_("a sinusoidal row has the same norm, sqrt(d/2), at every position (section 7): nothing about "
                "positions 12-23 is small."),
        "d": N_("the same models get about 0.95 of the tokens of unseen test sequences right at positions 0-11 "
                "(section 6): they sort sequences they never saw."),
    },
    nudge=N_("Compare what moved in this test with what a longer input would move, and ask what the targets are "
             "counted from."),
)


def _trained_like(max_len: int, d: int, seed: int) -> LearnablePE:
    """A table with the structure of a trained one (section 4): rows of similar size, neighbours alike."""
    pe = LearnablePE(d, max_len)
    noise = torch.randn(max_len, d, generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        pe.weight.copy_(0.3 * sinusoidal_table(max_len, d, base=100.0) + 0.02 * noise)
    return pe


def _neighbour_cosine(rows: torch.Tensor) -> float:
    """Mean cosine similarity of consecutive rows."""
    return torch.nn.functional.cosine_similarity(rows[1:], rows[:-1], dim=-1).mean().item()


@checker(N_("Exercise 3 (design new rows for a longer table)"))
def check_exercise_3(ex: Exercise, fn: Callable[[LearnablePE, int], LearnablePE]) -> None:
    """fn(pe, new_max_len) must return a new, independent, trainable LearnablePE whose first rows are pe's and whose
    new rows have the old rows' scale, neighbours alike (mean cosine >= 0.5) but not equal, the first new row alike
    to the last trained one (cosine >= 0.5)."""
    for old_len, new_len, d, seed in [(12, 24, 16, 0), (8, 20, 16, 1), (6, 6, 8, 2)]:
        pe = _trained_like(old_len, d, seed)
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
                  _("the new weight must be a trainable nn.Parameter (the new rows are a starting point)"))
        got = new.weight.detach().clone()
        ex.expect(torch.equal(got[:old_len], before), _("the first max_len rows must be the trained rows, unchanged"))
        with torch.no_grad():
            new.weight.add_(1.0)
        ex.expect(torch.equal(pe.weight.detach(), before),
                  _("the new table shares memory with the old one; copy the data (clone) into a new parameter"))
        if new_len == old_len:
            continue
        rows, size = got[old_len:], before.norm(dim=1).mean().item()
        norms = rows.norm(dim=1)
        ex.expect(bool((norms >= 0.5 * size).all() and (norms <= 2 * size).all()),
                  _("your new rows have norms from {low:.3f} to {high:.3f}, the trained rows about {size:.3f}: a new "
                    "row should start at the scale of the rows the model knows (section 3)").format(
                      low=norms.min().item(), high=norms.max().item(), size=size))
        alike = _neighbour_cosine(rows)
        ex.expect(alike >= 0.5, _("neighbouring new rows have a mean cosine of {alike:.2f}, as unrelated as random "
                                  "rows; the trained rows' neighbours have {old:.2f} (section 4): start the new rows "
                                  "with that order").format(alike=alike, old=_neighbour_cosine(before)))
        gap = (rows[1:] - rows[:-1]).norm(dim=1).min().item()
        ex.expect(gap >= 0.1 * size, _("two neighbouring new rows are only {gap:.3g} apart: the positions they stand "
                                       "for would look the same to the model").format(gap=gap))
        join = torch.nn.functional.cosine_similarity(got[old_len - 1], got[old_len], dim=0).item()
        ex.expect(join >= 0.5, _("at the join, the last trained row and the first new row have a cosine of {join:.2f}, "
                                 "as if the position jumped far away: the first new row should continue from the "
                                 "last trained one").format(join=join))
    ex.passed(_("the trained rows kept, the new rows at their scale, ordered, distinct from their neighbours and "
                "continuing from the last trained row, in a new trainable table (3 sizes)"))


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

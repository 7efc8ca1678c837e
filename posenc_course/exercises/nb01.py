"""Checkers for notebook 01 (sinusoidal encoding).

Each checker and what it expects::

    check_exercise_1(predicted, actual)  predict, then run: how many of the 32 sin/cos pairs
                                         (d = 64, base 10000) complete a full turn within 512
                                         positions (wavelength <= 512)
    check_exercise_2(letter)             explain why: a sine *and* a cosine per frequency
    check_exercise_3(fn)                 fn(k, d_model) -> the shift matrix of the concat layout:
                                         PE(p+k) = M @ PE(p)
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from posenc_course.exercises import Exercise, checker, choice, prediction
from posenc_course.i18n import N_, _
from posenc_lib.embeddings.sinusoidal import sinusoidal_table

__all__ = ["check_exercise_1", "check_exercise_2", "check_exercise_3"]

check_exercise_1 = prediction(
    N_("Exercise 1 (predict the pairs that turn within 512 positions)"), variable="predicted_turns", tolerance=0,
    too_low=N_("The wavelengths grow by the same factor 10000^(2/64), about 1.33, from one pair to the next, "
               "starting at 2 pi = 6.28 for pair 0: more of them stay under 512 than a doubling ladder would "
               "allow."),
    too_high=N_("The last pair's wavelength is nearly 10000 x 2 pi: the ladder passes 512 about half way up."),
    why=N_("Pair i turns fully when 2 pi 10000^(2i/64) <= 512, that is i <= 32 log(512 / 2 pi) / log 10000, "
           "about 15.3: pairs 0 to 15. The wavelengths are evenly spaced on a log scale from 2 pi to nearly "
           "10000 x 2 pi, and 512 sits near the middle of that scale."),
)

check_exercise_2 = choice(
    N_("Exercise 2 (why a sine and a cosine per frequency)"),
    options={
        "a": N_("With both, a shift by k turns every pair by the same angle k theta_i whatever p is, so one "
                "matrix M_k maps PE(p) to PE(p+k)."),
        "b": N_("Without the cosine the values would not stay between -1 and 1, and a code that grows with p "
                "would swamp the token embeddings."),
        "c": N_("The cosines make the table trainable, so the model can adapt half of the code to its task "
                "while the sines stay fixed."),
        "d": N_("The cosines carry the low frequencies and the sines the high ones, so together they cover "
                "every wavelength from 2 pi to 10000 * 2 pi."),
    },
    answer="a",
    why=N_("The pair (sin p theta, cos p theta) is a point on a circle; a shift by k is a rotation of that "
           "point by k theta, and the rotation does not depend on p. From the sine alone, sin((p+k) theta) "
           "also needs cos(p theta), which the vector would not hold. Section 6 builds M_k from these "
           "rotations, and RoPE (03) applies the same rotations to queries and keys."),
    hints={
        "b": N_("a sine is bounded by 1 as well; boundedness is what the waves fixed about the integer p "
                "(section 1), with or without the cosine."),
        "c": N_("the table is a buffer, not a parameter (section 8): nothing in it is trained, sines or "
                "cosines."),
        "d": N_("the sine and the cosine of one pair share one frequency theta_i; the frequency changes from "
                "pair to pair (sections 1 and 4)."),
    },
    nudge=N_("Section 6 finds one matrix M_k that moves every position by k: ask what that matrix needs to "
             "find in the vector."),
)


def _as_float64(ex: Exercise, answer: object, shape: tuple[int, ...]) -> Tensor:
    """The learner's tensor as float64, after checking that it is a tensor of the right shape."""
    ex.expect(isinstance(answer, Tensor), _("return a torch.Tensor, got {type}").format(type=type(answer).__name__))
    ex.expect(answer.dtype.is_floating_point,
              _("return a floating-point tensor, got dtype {dtype}").format(dtype=answer.dtype))
    ex.expect(tuple(answer.shape) == shape,
              _("expected shape {shape}, got {got_shape}").format(shape=shape, got_shape=tuple(answer.shape)))
    return answer.detach().to("cpu", torch.float64)


@checker(N_("Exercise 3 (shift matrix, concatenated layout)"))
def check_exercise_3(ex: Exercise, fn: Callable[[int, int], Tensor]) -> None:
    """fn(k, d_model) must return M with concat_table[p + k] = M @ concat_table[p] for every p."""
    n = 200
    for k, d_model in [(1, 4), (5, 16), (-7, 16), (40, 32), (0, 8)]:
        m = _as_float64(ex, ex.call(fn, k, d_model), (d_model, d_model))
        table = sinusoidal_table(n, d_model, layout="half", dtype=torch.float64)
        p = torch.arange(max(0, -k), n - max(0, k))
        err = (table[p + k] - table[p] @ m.T).abs().max().item()
        if err > 1e-5:
            transposed = (table[p + k] - table[p] @ m).abs().max().item()
            ex.expect(transposed > 1e-5, _("for k={k} your matrix is the transpose of M_k: PE(p+k) = M_k @ PE(p) "
                                           "treats PE(p) as a column vector").format(k=k))
            backwards = (table[p] - table[p + k] @ m.T).abs().max().item()
            ex.expect(backwards > 1e-5, _("for k={k} your matrix shifts by -k instead of +k (check the signs of "
                                          "sin)").format(k=k))
        ex.expect(err <= 1e-5, _("for k={k}, d_model={d_model}: max |PE(p+k) - M PE(p)| = {err:.3g}, expected < 1e-5 "
                                 "(in the concat layout, sin_i sits in column i and cos_i in column i + "
                                 "d_model/2)").format(k=k, d_model=d_model, err=err))
    ex.passed(_("PE(p+k) = M_k PE(p) holds for 5 offsets, negative and zero included"))

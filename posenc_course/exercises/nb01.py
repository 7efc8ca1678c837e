"""Checkers for notebook 01 (sinusoidal encoding).

Each checker and what it expects::

    check_exercise_1(predicted, actual)  predict, then run: how many of the 32 sin/cos pairs
                                         (d = 64, base 10000) complete a full turn within 512
                                         positions (wavelength <= 512)
    check_exercise_2(letter)             explain why: a sine *and* a cosine per frequency
    check_exercise_3(theta)              design: 8 frequencies for a 64-position context, checked for
                                         three properties (no aliasing, the slowest pair used, distinct rows)
"""

from __future__ import annotations

import torch
from torch import Tensor

from posenc_course.exercises import Exercise, checker, choice, prediction
from posenc_course.i18n import N_, _

__all__ = ["CONTEXT", "PAIRS", "check_exercise_1", "check_exercise_2", "check_exercise_3"]

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
        "a": N_("With both, the code of p + k is one fixed linear function of the code of p, for every p; a "
                "sine alone cannot give that."),
        "b": N_("With a sine alone, position 0 would get the zero vector, and a model could not tell the first "
                "token from a padded slot."),
        "c": N_("With a sine alone, two positions far apart could get the same code, because each sine repeats "
                "itself after its wavelength."),
        "d": N_("A sine is an odd function, sin(-x) = -sin(x), so a sine alone could never tell the position p "
                "from the position -p."),
    },
    answer="a",
    why=N_("The pair (sin p theta, cos p theta) is a point on a circle; a shift by k is a rotation of that "
           "point by k theta, and the rotation does not depend on p. From the sine alone, sin((p+k) theta) "
           "also needs cos(p theta), which the vector would not hold. Section 6 builds M_k from these "
           "rotations, and RoPE (03) applies the same rotations to queries and keys."),
    hints={
        "b": N_("a zero row is still unlike every other row, and the token embedding, not the position code, "
                "tells a pad from a word: nothing is lost there."),
        "c": N_("two positions share a sine-only code only if every sine agrees at both, and the slowest ones, "
                "with wavelengths in the thousands, do not."),
        "d": N_("an odd function does tell p from -p (it flips the sign); the even one, which cannot, is the "
                "cosine, and positions are never negative anyway."),
    },
    nudge=N_("Try to compute sin((p+k) theta) from the numbers stored at position p alone, with one rule for "
             "every p: what else would you need?"),
)


def _as_float64(ex: Exercise, answer: object, shape: tuple[int, ...]) -> Tensor:
    """The learner's tensor as float64, after checking that it is a tensor of the right shape."""
    ex.expect(isinstance(answer, Tensor), _("return a torch.Tensor, got {type}").format(type=type(answer).__name__))
    ex.expect(answer.dtype.is_floating_point,
              _("return a floating-point tensor, got dtype {dtype}").format(dtype=answer.dtype))
    ex.expect(tuple(answer.shape) == shape,
              _("expected shape {shape}, got {got_shape}").format(shape=shape, got_shape=tuple(answer.shape)))
    return answer.detach().to("cpu", torch.float64)


#: Exercise 3's context and width: 64 positions, d_model = 16 (8 sin/cos pairs).
CONTEXT, PAIRS = 64, 8


@checker(N_("Exercise 3 (design the frequencies for a 64-position context)"))
def check_exercise_3(ex: Exercise, theta: object) -> None:
    """``theta``: 8 frequencies (radians per position) with 0 < theta < pi, the slowest turning between a quarter
    and a half turn over 64 positions (pi/2 <= 63 min(theta) < pi), and the 64 rows of the resulting sin/cos table
    at least 0.5 apart."""
    theta = _as_float64(ex, theta, (PAIRS,))
    ex.expect(bool((theta > 0).all() and (theta < torch.pi).all()),
              _("every frequency must lie strictly between 0 and pi, got {theta}: at pi or faster, a pair cannot tell a "
                "step forward from a step back").format(theta=[round(t, 4) for t in theta.tolist()]))
    slowest = (CONTEXT - 1) * theta.min().item()
    ex.expect(slowest >= torch.pi / 2,
              _("your slowest pair turns by {angle:.3f} rad over the 64 positions, less than a quarter turn (pi/2): it "
                "is nearly constant there, a wasted pair (base 10000 gives 0.02 rad)").format(angle=slowest))
    ex.expect(slowest < torch.pi,
              _("your slowest pair turns by {angle:.3f} rad over the 64 positions, half a turn (pi) or more: no pair "
                "then orders the positions from first to last").format(angle=slowest))
    angles = torch.arange(CONTEXT, dtype=torch.float64)[:, None] * theta
    table = torch.cat([angles.sin(), angles.cos()], dim=1)  # (64, 16)
    distance = torch.cdist(table, table) + torch.eye(CONTEXT) * 1e9
    closest = distance.min().item()
    i, j = divmod(int(distance.argmin()), CONTEXT)
    ex.expect(closest >= 0.5, _("positions {i} and {j} are only {closest:.3f} apart: spread the frequencies so that "
                                "every pair of positions differs in some pair").format(i=i, j=j, closest=closest))
    ex.passed(_("no pair aliases, the slowest turns {angle:.2f} rad (between pi/2 and pi) over the context, and any "
                "two of the 64 positions are at least {closest:.2f} apart").format(angle=slowest, closest=closest))

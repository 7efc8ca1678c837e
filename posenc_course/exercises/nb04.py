"""Checkers for notebook 04 (position in vision Transformers).

Each checker and the function it expects::

    check_exercise_1(fn)     design: fn(grid_h, grid_w) -> (grid_h*grid_w, 4) fixed position vectors with
                             the properties of a 2-D code (checked as properties, not against one answer)
    check_exercise_2(predicted, actual)  predict, then run: how many patches of the 4x4 grid the 1-D
                             sinusoid rates more similar to (1, 3) than (2, 3), the patch right below
    check_exercise_3(value)  the exact bag-of-patches ceiling of RelativeDirection(grid_h=3, grid_w=6)
    check_exercise_4(letter) explain why: with a mean over the patch tokens instead of the class token,
                             RoPE's A-B offset reaches the classifier
    check_exercise_5(predicted, actual)  predict, then run: the slowest axial-RoPE pair's turn
                             (rad) across a 40-patch side with base 100 and head_dim 8
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from posenc_course.data import RelativeDirection
from posenc_course.exercises import Exercise, checker, choice, prediction
from posenc_course.i18n import N_, _
from posenc_lib.grid import grid_coordinates

__all__ = ["check_exercise_1", "check_exercise_2", "check_exercise_3", "check_exercise_4", "check_exercise_5"]


def _neighbour_contrast(table: Tensor, grid_h: int, grid_w: int) -> float:
    """Mean cosine similarity of grid neighbours minus that of patches 3 or more steps apart (section 5)."""
    unit = torch.nn.functional.normalize(table.double(), dim=-1)
    sim = unit @ unit.T
    r, c = (t[0] for t in grid_coordinates(torch.arange(grid_h * grid_w)[None], grid_h, grid_w))
    dist = (r[:, None] - r[None]).abs() + (c[:, None] - c[None]).abs()
    return (sim[dist == 1].mean() - sim[dist >= 3].mean()).item()


@checker(N_("Exercise 1 (design: a 2-D table four numbers wide)"))
def check_exercise_1(ex: Exercise, fn: Callable[[int, int], Tensor]) -> None:
    """fn(grid_h, grid_w) -> (grid_h*grid_w, 4) fixed position vectors, patches row-major, with the properties:
    every patch distinct; grid neighbours more similar (cosine) than patches 3+ steps apart, by more than 0.2;
    the patch below the end of a row more similar to it than the start of the next row (section 1's blind spot)."""
    for grid_h, grid_w in [(4, 4), (3, 5), (5, 3)]:
        got = ex.call(fn, grid_h, grid_w)
        n = grid_h * grid_w
        ex.expect(isinstance(got, Tensor), _("return a torch.Tensor, got {type}").format(type=type(got).__name__))
        ex.expect(tuple(got.shape) == (n, 4),
                  _("for a {grid_h}x{grid_w} grid expected shape ({n}, 4), got {shape}").format(
                      grid_h=grid_h, grid_w=grid_w, n=n, shape=tuple(got.shape)))
        table = got.detach().double()
        ex.expect(bool(torch.isfinite(table).all()) and bool((table.norm(dim=-1) > 1e-6).all()),
                  _("every patch needs a finite, non-zero vector"))
        gaps = torch.cdist(table, table) + torch.eye(n, dtype=torch.float64)
        ex.expect(float(gaps.min()) > 1e-3,
                  _("on a {grid_h}x{grid_w} grid two patches get the same vector: the model could not tell them "
                    "apart").format(grid_h=grid_h, grid_w=grid_w))
        contrast = _neighbour_contrast(table, grid_h, grid_w)
        ex.expect(contrast > 0.2,
                  _("on a {grid_h}x{grid_w} grid neighbours are only {contrast:.2f} more similar than patches 3+ "
                    "steps apart (need > 0.2): nearby patches should get nearby vectors").format(
                      grid_h=grid_h, grid_w=grid_w, contrast=contrast))
        unit = torch.nn.functional.normalize(table, dim=-1)
        end = grid_w - 1  # the end of row 0
        ex.expect(float(unit[end] @ unit[end + grid_w]) > float(unit[end] @ unit[end + 1]),
                  _("the start of the next row is at least as similar to the end of a row as the patch right "
                    "below it: that is a 1-D code's blind spot (section 1)"))
    ex.passed(_("distinct patches, neighbours similar, no wrap-around, on three grids"))


check_exercise_2 = prediction(
    N_("Exercise 2 (predict how many patches the 1-D sinusoid puts closer than the one below)"),
    variable="predicted_count", tolerance=1.5,
    too_low=N_("The sinusoid knows only the index: patch (2, 3) is 4 tokens from (1, 3), so every patch 1 to 3 "
               "tokens away, on either side, and some farther ones, look closer to it."),
    too_high=N_("Not every patch looks closer: the similarity mostly falls with the index distance (it rises a "
                "little again at 5-6 tokens), and the patches farthest away in the index are not closer than (2, 3)."),
    why=N_("The 1-D sinusoid's similarity depends on the index distance only. (2, 3) is 4 tokens from (1, 3); "
           "the six patches 1-3 tokens away on either side look closer, and so do four at 5-6 tokens, where "
           "the similarity of a 32-wide sinusoid has not yet fallen below its value at 4 (the patch 4 tokens "
           "away on the other side ties). The patch right below, a neighbour in the image, comes after most "
           "of the grid."),
)


@checker(N_("Exercise 3 (bag-of-patches ceiling on a wide canvas)"))
def check_exercise_3(ex: Exercise, value: float) -> None:
    """value must be RelativeDirection(grid_h=3, grid_w=6).bag_of_patches_ceiling(), computed by hand."""
    ex.expect(isinstance(value, (int, float)) and not isinstance(value, bool),
              _("give a number (a float between 0 and 1), got {type}").format(type=type(value).__name__))
    want = RelativeDirection(3, 6).bag_of_patches_ceiling()
    if 1 < value <= 100:  # a percentage
        ex.fail((_("give the ceiling as a fraction between 0 and 1, not a percentage: {value:g} % as a fraction: "
                   "{fraction:g} (that is the right value)") if math.isclose(value / 100, want, abs_tol=1e-9) else
                 _("give the ceiling as a fraction between 0 and 1, not a percentage: {value:g} % as a fraction: "
                   "{fraction:g}")).format(value=value, fraction=value / 100))
    ex.expect(not math.isclose(value, 0.25, abs_tol=1e-9),
              _("0.25 holds on a square grid; on a 3x6 canvas the four classes are not equally frequent"))
    ex.expect(not math.isclose(value, 0.5, abs_tol=1e-9),
              _("the best constant guess is one class, not the two horizontal classes together"))
    ex.expect(math.isclose(value, want, abs_tol=1e-9),
              _("got {value!r}; count the allowed (A, B) pairs of each class and divide the largest count by the "
                "total").format(value=value))
    ex.passed(_("{ceiling:.3f}: a bag of patches can still beat 1/4 when the classes are unbalanced").format(ceiling=want))


check_exercise_4 = choice(
    N_("Exercise 4 (whether RoPE's offset reaches a mean-pooled readout)"),
    options={
        "a": N_("Yes: each patch's output mixes values with weights set by patch-to-patch scores, which depend "
                "on the A-B offset; the mean keeps them."),
        "b": N_("No: a mean over the patches forgets which patch was where, so no position at all, absolute "
                "or relative, can reach the classifier."),
        "c": N_("No: RoPE does not rotate the values, so no patch's output carries any position, and the "
                "mean of those outputs carries none either."),
        "d": N_("Only with a base above 100: at base 100 the pairs barely turn across a 4x4 grid, so every "
                "offset between two patches gives the same scores."),
    },
    answer="a",
    why=N_("After the layer, patch A's token is a mix of the values weighted by A's scores, and its score "
           "against B compares A's query and B's key turned by their own (r, c): a function of the offset "
           "between them (03's proof). The mean of the patch tokens keeps that mix, so the classifier can read "
           "the offset. With the class token, only its own row reaches the classifier, and its unrotated query "
           "meets each key's absolute place: RoPE acts as an absolute code."),
    hints={
        "b": N_("the mean forgets the order of what it averages, but each patch token already holds what its "
                "attention weights picked up."),
        "c": N_("the values are not rotated, but the weights that mix them come from rotated queries and keys."),
        "d": N_("section 2 chose base 100 so that even the slowest pair turns by a useful angle across the "
                "grid; the fast pairs turn far more."),
    },
    nudge=N_("Ask what a patch token holds after the attention layer, and whether the mean passes it on."),
)

check_exercise_5 = prediction(
    N_("Exercise 5 (predict the slowest pair's turn across a 40-patch side)"), variable="predicted_turn",
    tolerance=0.2,
    too_low=N_("With head_dim 8 there are only two frequencies per axis: the slowest is 100^(-1/2) = 0.1 "
               "rad per patch, and 39 steps separate the first and last patch."),
    too_high=N_("The slowest frequency is 100^(-1/2) = 0.1 rad per patch, not 1; offsets reach 39, not 40."),
    why=N_("theta_min = 100^(-(d_h/4 - 1)/(d_h/4)) = 100^(-1/2) = 0.1 rad per patch, times the largest "
           "offset 39: 3.9 rad, more than half a turn. On a 40x40 grid the slowest pair is no longer "
           "slow: a pair meant to tell far patches apart starts to wrap, and a larger base (or more "
           "frequencies per axis) suits a larger grid."),
)

"""Checkers for notebook 04 (position in vision Transformers).

Each checker and the function it expects::

    check_exercise_1(fn)     fn(index, grid_w) -> (rows, cols) of row-major patch indices
    check_exercise_2(fn)     fn(rows, cols, inv_freq) -> (seq, 2 * len(inv_freq)) axial 2-D RoPE angles
                             in the order of Heo et al.'s code (column pairs first, then row pairs)
    check_exercise_3(value)  the exact bag-of-patches ceiling of RelativeDirection(grid_h=3, grid_w=6)
    check_exercise_4(fn)     fn(grid_h, grid_w, d_model) -> (grid_h*grid_w, d_model) 2-D sin-cos table in
                             MAE's channel order (the column's half first), from the formula
    check_exercise_5(letter) explain why: a one-layer class-token ViT with RoPE behaves like an
                             absolute code
    check_exercise_6(predicted, actual)  predict, then run: the slowest axial-RoPE pair's turn
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
from posenc_lib.embeddings.tables_2d import sincos_2d_table
from posenc_lib.grid import grid_coordinates
from posenc_lib.rotary.rope_2d import AxialRoPE2D

__all__ = [
    "check_exercise_1", "check_exercise_2", "check_exercise_3", "check_exercise_4", "check_exercise_5",
    "check_exercise_6",
]


@checker(N_("Exercise 1 (row and column of a patch)"))
def check_exercise_1(ex: Exercise, fn: Callable[[Tensor, int], tuple[Tensor, Tensor]]) -> None:
    """fn(index (n,) int64, grid_w) must return (rows, cols), two int tensors like index."""
    for grid_h, grid_w in [(4, 4), (3, 5), (6, 2), (1, 7)]:
        index = torch.arange(grid_h * grid_w)
        got = ex.call(fn, index.clone(), grid_w)
        ex.expect(isinstance(got, tuple) and len(got) == 2 and all(isinstance(t, Tensor) for t in got),
                  _("return a pair of tensors (rows, cols), got {type}").format(type=type(got).__name__))
        rows, cols = grid_coordinates(index[None], grid_h, grid_w)
        got_rows, got_cols = (t.reshape(-1).long() for t in got)
        if torch.equal(got_rows, rows[0]) and torch.equal(got_cols, cols[0]):
            continue
        ex.expect(not (torch.equal(got_rows, cols[0]) and torch.equal(got_cols, rows[0])),
                  _("rows and columns are swapped: return (rows, cols), rows first"))
        ex.expect(grid_h == grid_w or not torch.equal(got_rows, index // grid_h),
                  _("on a {grid_h}x{grid_w} grid a row holds grid_w={grid_w} patches: divide by grid_w").format(
                      grid_h=grid_h, grid_w=grid_w))
        bad = (got_rows != rows[0]) | (got_cols != cols[0])
        i = int(bad.nonzero()[0])
        ex.fail(_("on a {grid_h}x{grid_w} grid, patch index {i} is at (row {row}, col {col}), you returned "
                  "({got_row}, {got_col})").format(grid_h=grid_h, grid_w=grid_w, i=i, row=int(rows[0, i]),
                                                   col=int(cols[0, i]), got_row=int(got_rows[i]),
                                                   got_col=int(got_cols[i])))
    ex.passed(_("row-major order on four grids, a non-square one included"))


def _library_angles(rows: Tensor, cols: Tensor, inv_freq: Tensor) -> Tensor:
    """Angles read back from the library: rotate unit pairs (1, 0) and take atan2 of the result."""
    c = inv_freq.numel()
    head_dim, grid_w = 4 * c, int(cols.max()) + 1
    grid_h = int(rows.max()) + 1
    scheme = AxialRoPE2D(head_dim, grid_h, grid_w)
    scheme.inv_freq.copy_(inv_freq)
    x = torch.cat([torch.ones(2 * c), torch.zeros(2 * c)]).double().expand(1, 1, len(rows), -1)
    out = scheme.rotate_qk(x, x, (rows * grid_w + cols)[None])[0][0, 0]
    return torch.atan2(out[:, 2 * c :], out[:, : 2 * c])


@checker(N_("Exercise 2 (axial 2-D RoPE angles)"))
def check_exercise_2(ex: Exercise, fn: Callable[[Tensor, Tensor, Tensor], Tensor]) -> None:
    """fn(rows, cols, inv_freq) -> (seq, 2c) angles: column pairs first (as Heo et al.'s code), then row pairs."""
    for grid_h, grid_w, c in [(3, 5, 2), (4, 4, 4), (2, 6, 3)]:
        rows, cols = (t[0] for t in grid_coordinates(torch.arange(grid_h * grid_w)[None], grid_h, grid_w))
        inv_freq = 100.0 ** (-torch.arange(c, dtype=torch.float64) / c)
        got = ex.call(fn, rows.clone(), cols.clone(), inv_freq.clone())
        ex.expect(isinstance(got, Tensor), _("return a torch.Tensor, got {type}").format(type=type(got).__name__))
        ex.expect(tuple(got.shape) == (len(rows), 2 * c),
                  _("for {n} patches and {c} frequencies expected shape ({n}, {width}), got {shape}").format(
                      n=len(rows), c=c, width=2 * c, shape=tuple(got.shape)))
        got = got.detach().double()
        want = _library_angles(rows, cols, inv_freq)
        same = lambda a, b: bool(torch.allclose(a.cos(), b.cos(), atol=1e-6) and torch.allclose(a.sin(), b.sin(), atol=1e-6))  # noqa: E731
        if same(got, want):
            continue
        swapped = torch.cat([want[:, c:], want[:, :c]], dim=1)
        ex.expect(not same(got, swapped), _("the halves are in the other order: Heo et al.'s code turns the "
                                            "first half of the pairs by the column (x) index, the second half by the "
                                            "row (y) index"))
        ex.fail(_("on a {grid_h}x{grid_w} grid, patch (row {row}, col {col}) should turn by {want}, you gave "
                  "{got}").format(grid_h=grid_h, grid_w=grid_w, row=int(rows[-1]), col=int(cols[-1]),
                                  want=[round(v, 4) for v in want[-1].tolist()],
                                  got=[round(v, 4) for v in got[-1].tolist()]))
    ex.passed(_("equal to the angles AxialRoPE2D turns by, on three grids"))


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


@checker(N_("Exercise 4 (2-D sin-cos table in MAE's order)"))
def check_exercise_4(ex: Exercise, fn: Callable[[int, int, int], Tensor]) -> None:
    """fn(grid_h, grid_w, d_model) -> (grid_h*grid_w, d_model): [sin(c w) | cos(c w) | sin(r w) | cos(r w)], base 10000."""
    for grid_h, grid_w, d in [(4, 4, 32), (3, 5, 16), (2, 6, 8)]:
        got = ex.call(fn, grid_h, grid_w, d)
        ex.expect(isinstance(got, Tensor), _("return a torch.Tensor, got {type}").format(type=type(got).__name__))
        ex.expect(tuple(got.shape) == (grid_h * grid_w, d),
                  _("for a {grid_h}x{grid_w} grid and d_model={d} expected shape ({n}, {d}), got {shape}").format(
                      grid_h=grid_h, grid_w=grid_w, d=d, n=grid_h * grid_w, shape=tuple(got.shape)))
        got = got.detach().double()
        rows_first = sincos_2d_table(grid_h, grid_w, d, dtype=torch.float64)
        want = torch.cat([rows_first[:, d // 2 :], rows_first[:, : d // 2]], dim=1)
        if torch.allclose(got, want, atol=1e-5):
            continue
        ex.expect(not torch.allclose(got, rows_first, atol=1e-5),
                  _("this is the row-first order (Hugging Face's builder); MAE's first half encodes the column"))
        ex.expect(not torch.allclose(got.reshape(grid_h, grid_w, d).transpose(0, 1).reshape(-1, d), want, atol=1e-5),
                  _("the patches are in column-major order: patch (r, c) is row r * grid_w + c"))
        bad = int((got - want).abs().amax(dim=0).argmax())
        ex.fail(_("on a {grid_h}x{grid_w} grid with d_model={d}, channel {channel} differs; patch (0, 1) should be "
                  "{want}... you gave {got}...").format(grid_h=grid_h, grid_w=grid_w, d=d, channel=bad,
                                                        want=[round(v, 4) for v in want[1, :4].tolist()],
                                                        got=[round(v, 4) for v in got[1, :4].tolist()]))
    ex.passed(_("equal to MAE's get_2d_sincos_pos_embed order on three grids"))


check_exercise_5 = choice(
    N_("Exercise 5 (why a one-layer class-token ViT uses RoPE as an absolute code)"),
    options={
        "a": N_("Only the class token's scores reach the classifier; its query is unrotated, so each score "
                "reads the key's own (r, c), not the A-B offset."),
        "b": N_("RoPE rotates the values as well as the keys, so the class token's output carries each "
                "patch's absolute angle, not the offset between A and B."),
        "c": N_("Base 100 is too small for RoPE to express offsets on a 4x4 grid: the slowest pairs barely "
                "turn, so every offset gives the same scores."),
        "d": N_("The class token is rotated by the mean position of all patches, which cancels the offsets."),
    },
    answer="a",
    why=N_("Only the class token's row of attention reaches the classifier; its query sits unrotated at "
           "(0, 0), so each score compares it with a key turned by that patch's own (r, c): a function of the "
           "patch's absolute place, never of the A-B offset. The offset between two patches enters a score "
           "only when one patch's query meets the other's key, and in one layer read from the class token "
           "those scores are computed and discarded. A second layer (or a readout from the patches) is where "
           "RoPE's offset could matter."),
    hints={
        "b": N_("RoPE turns queries and keys only; values are not rotated (section 2's inline code)."),
        "c": N_("base 100 was chosen so that even the slowest pair turns by a useful angle across the grid "
                "(section 2 prints it)."),
        "d": N_("the class token gets angle 0: it is never rotated (section 2)."),
    },
    nudge=N_("Follow the one row of attention that reaches the classifier: whose query is it, and which "
             "angle does that query carry?"),
)

check_exercise_6 = prediction(
    N_("Exercise 6 (predict the slowest pair's turn across a 40-patch side)"), variable="predicted_turn",
    tolerance=0.2,
    too_low=N_("With head_dim 8 there are only two frequencies per axis: the slowest is 100^(-1/2) = 0.1 "
               "rad per patch, and 39 steps separate the first and last patch."),
    too_high=N_("The slowest frequency is 100^(-1/2) = 0.1 rad per patch, not 1; offsets reach 39, not 40."),
    why=N_("theta_min = 100^(-(d_h/4 - 1)/(d_h/4)) = 100^(-1/2) = 0.1 rad per patch, times the largest "
           "offset 39: 3.9 rad, more than half a turn. On a 40x40 grid the slowest pair is no longer "
           "slow: a pair meant to tell far patches apart starts to wrap, and a larger base (or more "
           "frequencies per axis) suits a larger grid."),
)

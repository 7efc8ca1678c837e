"""Checkers for notebook 01 (sinusoidal encoding).

Each checker and the function it expects::

    check_exercise_1(fn)  fn(max_len, d_model) -> the concat-layout table [sin | cos], (max_len, d_model)
    check_exercise_2(fn)  fn(d_model, base, length) -> how many sin/cos pairs complete a full turn
                          within ``length`` positions (wavelength <= length)
    check_exercise_3(fn)  fn(k, d_model) -> the shift matrix of the concat layout: PE(p+k) = M @ PE(p)
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from posenc_course.exercises import Exercise, checker
from posenc_lib.embeddings.sinusoidal import sinusoidal_frequencies, sinusoidal_table

__all__ = ["check_exercise_1", "check_exercise_2", "check_exercise_3"]


def _as_float64(ex: Exercise, answer: object, shape: tuple[int, ...]) -> Tensor:
    """The learner's tensor as float64, after checking that it is a tensor of the right shape."""
    ex.expect(isinstance(answer, Tensor), f"return a torch.Tensor, got {type(answer).__name__}")
    ex.expect(answer.dtype.is_floating_point, f"return a floating-point tensor, got dtype {answer.dtype}")
    ex.expect(tuple(answer.shape) == shape, f"expected shape {shape}, got {tuple(answer.shape)}")
    return answer.detach().to("cpu", torch.float64)


@checker("Exercise 1 (concatenated table)")
def check_exercise_1(ex: Exercise, fn: Callable[[int, int], Tensor]) -> None:
    """fn(max_len, d_model) must return the concatenated [sin | cos] table of positions 0..max_len-1."""
    for max_len, d_model in [(1, 2), (7, 4), (50, 16), (300, 64)]:
        got = _as_float64(ex, ex.call(fn, max_len, d_model), (max_len, d_model))
        want = sinusoidal_table(max_len, d_model, layout="concat", dtype=torch.float64)
        if torch.allclose(got, want, rtol=0, atol=1e-5):
            continue
        inter = sinusoidal_table(max_len, d_model, layout="interleaved", dtype=torch.float64)
        ex.expect(not torch.allclose(got, inter, rtol=0, atol=1e-5),
                  "this is the interleaved layout (sin, cos, sin, cos, ...); put all sines first, then all cosines")
        ex.expect(not torch.allclose(got, torch.cat([want[:, d_model // 2 :], want[:, : d_model // 2]], 1),
                                     rtol=0, atol=1e-5), "sines and cosines are swapped: sines come first")
        from_one = sinusoidal_table(max_len + 1, d_model, layout="concat", dtype=torch.float64)[1:]
        ex.expect(not torch.allclose(got, from_one, rtol=0, atol=1e-5),
                  "the rows are shifted by one: positions count from 0, so row 0 is [0, ..., 0, 1, ..., 1]")
        bad = (got - want).abs().argmax().item()
        row, col = divmod(bad, d_model)
        ex.fail(f"for max_len={max_len}, d_model={d_model}, entry [{row}, {col}] is "
                f"{got[row, col].item():.6f}, expected {want[row, col].item():.6f} "
                f"(frequency of pair i is 10000^(-2i/d_model))")
    ex.passed("matches sinusoidal_table(..., layout='concat') for 4 sizes")


def _full_turns(d_model: int, base: float, length: float) -> int:
    wavelengths = 2 * math.pi / sinusoidal_frequencies(d_model, base)
    return int((wavelengths <= length).sum())


@checker("Exercise 2 (pairs that turn fully)")
def check_exercise_2(ex: Exercise, fn: Callable[[int, float, int], int]) -> None:
    """fn(d_model, base, length) must count the pairs whose wavelength 2*pi/w_i is <= length."""
    cases = [(64, 10000.0, 512), (64, 10000.0, 6), (64, 10000.0, 7), (128, 10000.0, 2048), (128, 500000.0, 2048),
             (16, 100.0, 10**6)]
    for d_model, base, length in cases:
        got = ex.call(fn, d_model, base, length)
        ex.expect(isinstance(got, int) and not isinstance(got, bool),
                  f"return a Python int (use int(...)), got {type(got).__name__}")
        want = _full_turns(d_model, base, length)
        hint = f"for d_model={d_model}, base={base:g}, length={length} expected {want}, got {got}"
        if got == d_model // 2 - want:
            hint += " - did you count the pairs that do NOT complete a turn?"
        elif got == want - 1 or got == want + 1:
            hint += " - off by one: pair i=0 has wavelength exactly 2*pi, and compare with <="
        ex.expect(got == want, hint)
    ex.passed(f"{len(cases)} cases, e.g. {_full_turns(64, 10000.0, 512)} of 32 pairs turn within 512 positions")


@checker("Exercise 3 (shift matrix, concatenated layout)")
def check_exercise_3(ex: Exercise, fn: Callable[[int, int], Tensor]) -> None:
    """fn(k, d_model) must return M with concat_table[p + k] = M @ concat_table[p] for every p."""
    n = 200
    for k, d_model in [(1, 4), (5, 16), (-7, 16), (40, 32), (0, 8)]:
        m = _as_float64(ex, ex.call(fn, k, d_model), (d_model, d_model))
        table = sinusoidal_table(n, d_model, layout="concat", dtype=torch.float64)
        p = torch.arange(max(0, -k), n - max(0, k))
        err = (table[p + k] - table[p] @ m.T).abs().max().item()
        if err > 1e-5:
            transposed = (table[p + k] - table[p] @ m).abs().max().item()
            ex.expect(transposed > 1e-5, f"for k={k} your matrix is the transpose of M_k: "
                      "PE(p+k) = M_k @ PE(p) treats PE(p) as a column vector")
            backwards = (table[p] - table[p + k] @ m.T).abs().max().item()
            ex.expect(backwards > 1e-5, f"for k={k} your matrix shifts by -k instead of +k (check the signs of sin)")
        ex.expect(err <= 1e-5, f"for k={k}, d_model={d_model}: max |PE(p+k) - M PE(p)| = {err:.3g}, "
                  "expected < 1e-5 (in the concat layout, sin_i sits in column i and cos_i in column i + d_model/2)")
    ex.passed("PE(p+k) = M_k PE(p) holds for 5 offsets, negative and zero included")

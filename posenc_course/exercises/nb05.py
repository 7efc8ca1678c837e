"""Checkers for notebook 05 (relative biases, conditional encodings, no encoding).

1. ``my_alibi_slopes(n_heads)``: ALiBi's head slopes, including head counts that are not a power of two.
2. ``my_swin_index(window_h, window_w)``: the row of Swin's bias table used by each (query, key) pair.
3. ``first_shared_distance``: the smallest distance that T5's default buckets no longer tell apart
   from its neighbour.
4. explain why (a letter): compact ALiBi is wrong without the causal mask.
5. predict, then run: with 8 heads, the steepest ALiBi head's softmax factor for distance 3
   (distance 0 being 1).

Each checker compares the answer with the library (itself tested against Hugging Face
``transformers``) and prints a hint when it is wrong.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from posenc_course.exercises import Exercise, checker, choice, prediction
from posenc_course.i18n import N_, _
from posenc_lib.score_bias.alibi import alibi_slopes
from posenc_lib.score_bias.swin import swin_relative_position_index
from posenc_lib.score_bias.t5 import t5_relative_bucket

__all__ = ["check_exercise_1", "check_exercise_2", "check_exercise_3", "check_exercise_4", "check_exercise_5"]


def _as_float64(ex: Exercise, out: Any, n: int) -> Tensor:
    try:
        t = torch.as_tensor(out, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError) as error:
        ex.fail(_("return a tensor (or list) of {n} slopes, got {type} ({error})").format(
            n=n, type=type(out).__name__, error=error))
    ex.expect(t.shape == (n,), _("for n_heads={n} return {n} slopes, shape ({n},), got shape {shape}").format(
        n=n, shape=tuple(t.shape)))
    return t


@checker(N_("Exercise 1 (ALiBi slopes)"))
def check_exercise_1(ex: Exercise, my_alibi_slopes: Callable[[int], Any]) -> None:
    """my_alibi_slopes(n) must equal alibi_slopes(n) for powers of two and for other head counts."""
    for n in (1, 2, 4, 8, 16, 32):
        got = _as_float64(ex, ex.call(my_alibi_slopes, n), n)
        want = alibi_slopes(n).double()
        ex.expect(torch.allclose(got, want, rtol=1e-5, atol=0),
                  _("for n_heads={n} (a power of two) the slopes are 2^(-8h/n) for h = 1..n, i.e. {want}...; got "
                    "{got}...").format(n=n, want=want[:3].tolist(), got=got[:3].tolist()))
    for n in (3, 5, 6, 12, 20, 24, 40):
        got = _as_float64(ex, ex.call(my_alibi_slopes, n), n)
        want = alibi_slopes(n).double()
        if torch.allclose(got, torch.tensor([2.0 ** (-8 * h / n) for h in range(1, n + 1)], dtype=torch.float64)):
            ex.fail(_("n_heads={n} is not a power of two: 2^(-8h/n) is not the paper's rule; take the slopes of the "
                      "power of two below ({below}), then every other slope of the next power of two").format(
                          n=n, below=2 ** math.floor(math.log2(n))))
        ex.expect(torch.allclose(got, want, rtol=1e-5, atol=0),
                  _("for n_heads={n} expected {want}, got {got}").format(
                      n=n, want=[round(v, 5) for v in want.tolist()], got=[round(v, 5) for v in got.tolist()]))
    ex.passed(_("the slopes match for 1-32 heads, powers of two or not"))


@checker(N_("Exercise 2 (Swin relative position index)"))
def check_exercise_2(ex: Exercise, my_swin_index: Callable[[int, int], Any]) -> None:
    """my_swin_index(h, w) must equal swin_relative_position_index(h, w) for square and rectangular windows."""
    for h, w in ((2, 2), (3, 3), (7, 7), (2, 4), (4, 3)):
        out = ex.call(my_swin_index, h, w)
        want = swin_relative_position_index(h, w)
        ex.expect(isinstance(out, Tensor) and out.shape == want.shape,
                  _("for a {h}x{w} window return a ({n}, {n}) tensor, got {got}").format(
                      h=h, w=w, n=h * w, got=tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__))
        ex.expect(not out.dtype.is_floating_point,
                  _("an index must be an integer tensor, got dtype {dtype}").format(dtype=out.dtype))
        if torch.equal(out, want.t()):
            ex.fail(_("you get the transpose: Swin uses the query's coordinates minus the key's, (r_i - r_j, "
                      "c_i - c_j)"))
        if out.min() < 0:
            ex.fail(_("some entries are negative: shift both differences by (window - 1) before combining them"))
        if h != w and torch.equal(out, ((want // (2 * w - 1)) * (2 * h - 1) + want % (2 * w - 1))):
            ex.fail(_("the row difference must be multiplied by the number of column offsets, 2*window_w - 1"))
        ex.expect(torch.equal(out, want),
                  _("for a {h}x{w} window the index differs in {wrong} of {total} entries; row part (r_i - r_j + h - "
                    "1) * (2w - 1) plus column part (c_i - c_j + w - 1)").format(
                      h=h, w=w, wrong=int((out != want).sum()), total=want.numel()))
    ex.passed(_("the index matches for square and rectangular windows"))


@checker(N_("Exercise 3 (where T5's exact buckets end)"))
def check_exercise_3(ex: Exercise, first_shared_distance: Any) -> None:
    """The smallest distance d >= 0 whose bucket (bidirectional, 32 buckets, max_distance 128) equals that of d + 1."""
    d = torch.arange(0, 200)
    buckets = t5_relative_bucket(-d, bidirectional=True, num_buckets=32, max_distance=128)
    answer = int(torch.nonzero(buckets[:-1] == buckets[1:])[0])
    ex.expect(isinstance(first_shared_distance, int) and not isinstance(first_shared_distance, bool),
              _("give a whole number (an int), got {value!r}").format(value=first_shared_distance))
    ex.expect(first_shared_distance != 16, _("16 is the number of buckets per direction; bidirectional T5 gives "
                                             "half of those to exact distances"))
    ex.expect(first_shared_distance != 128,
              _("128 (max_distance) is where the log-spaced buckets end, not where they begin"))
    ex.expect(first_shared_distance == answer,
              _("d = {d} and d + 1 fall in buckets {bucket} and {next_bucket}").format(
                  d=first_shared_distance, bucket=int(buckets[first_shared_distance]),
                  next_bucket=int(buckets[first_shared_distance + 1]))
              if 0 <= first_shared_distance < 199 else _("look at distances 0-199"))
    ex.passed(_("distances 0-{last} have their own bucket; from {answer} on, neighbours share (log spacing)").format(
        last=answer - 1, answer=answer))


check_exercise_4 = choice(
    N_("Exercise 4 (why compact ALiBi needs the causal mask)"),
    options={
        "a": N_("The compact form m_h j is not exact in float32: the large products m_h j lose digits that "
                "the full bias keeps."),
        "b": N_("SDPA refuses a (heads, 1, L) bias without is_causal, so without the mask the compact bias is "
                "never applied."),
        "c": N_("Without the mask, keys after the query count, and there -m|i - j| falls with j while m j "
                "rises."),
        "d": N_("Without the mask each key has a mirror image on the other side of the query, so the slopes "
                "must be doubled."),
    },
    answer="c",
    why=N_("-m|i - j| equals m j - m i only for j <= i. The term -m i is one constant per query row, which "
           "the softmax ignores; for keys after the query the sign of j flips, the bias differs from the full "
           "one by more than a constant per row, and no per-key vector can follow it. Section 2 measures the "
           "gap without the mask."),
    hints={
        "a": N_("in float32 the two forms agree to rounding under the mask (section 2 and its deep dive); the "
                "precision caveat is bf16 at long lengths, and it does not explain a gap of 0.1 at L = 24."),
        "b": N_("SDPA broadcasts a (heads, 1, L) float mask without complaint; it computes the wrong "
                "attention, silently."),
        "d": N_("the slopes are the same with or without the mask; what changes is which keys count."),
    },
    nudge=N_("Write -m|i - j| once for a key before the query and once for a key after it, and compare "
             "each with m j."),
)

check_exercise_5 = prediction(
    N_("Exercise 5 (predict ALiBi's weight at distance 3, 8 heads)"), variable="predicted_weight",
    tolerance=0.03,
    too_high=N_("With 8 heads the steepest slope is 2^(-8/8) = 1/2, twice that of 4 heads: the factor "
                "is exp(-3/2)."),
    too_low=N_("The factor is exp(-m d) with m = 1/2 and d = 3, not a power of 1/2."),
    why=N_("m_1 = 2^(-8/n) = 1/2 for n = 8, so distance 3 gets exp(-1.5) = 0.22 of the weight of "
           "distance 0: a clear recency preference, still no peak at distance 3."),
)

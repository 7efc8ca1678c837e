"""Checkers for notebook 05 (relative biases, conditional encodings, no encoding).

1. ``my_alibi_slopes(n_heads)``: ALiBi's head slopes, including head counts that are not a power of two.
2. predict, then run: how many (query, key) pairs of a 7 x 7 Swin window share the table row of
   offset (dr, dc) = (2, -3).
3. predict, then run: how many rows of its 32-row bias table section 7's T5 decoder, trained on
   24-token sequences, ever changes.
4. explain why (a letter): compact ALiBi is wrong without the causal mask.
5. explain why (a letter): one ALiBi head cannot put its largest weight on the key 3 back in a
   one-layer decoder on random tokens.
6. design ``my_buckets(distance)``: a causal bucketing with 16 buckets whose last bucket starts
   exactly at max_distance = 64, unlike T5's (section 1). The checker checks properties (exact
   buckets for 0-7, never decreasing, every bucket used, bucket 15 from 64 on and not before), so
   many designs pass.

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

__all__ = ["check_exercise_1", "check_exercise_2", "check_exercise_3", "check_exercise_4", "check_exercise_5",
           "check_exercise_6"]


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


check_exercise_2 = prediction(
    N_("Exercise 2 (predict how many pairs share one Swin table row)"), variable="predicted_pairs",
    tolerance=0,
    too_high=N_("Both patches must lie in the window: a query near the wrong edge has no key 2 rows up and 3 "
                "columns to the right."),
    too_low=N_("Count the query positions that leave room for such a key, rows and columns separately, and "
               "multiply."),
    why=N_("The pair needs the key 2 rows above the query and 3 columns to its right: 7 - 2 = 5 query rows "
           "and 7 - 3 = 4 query columns leave room, 5 x 4 = 20 pairs. A row of the table is shared by "
           "(M - |dr|)(M - |dc|) pairs: 49 for offset (0, 0), one for a corner: the near offsets get the "
           "most training signal."),
)


check_exercise_3 = prediction(
    N_("Exercise 3 (predict how many T5 bias rows training changes)"), variable="predicted_rows",
    tolerance=0,
    too_high=N_("A 24-token sequence has distances 0-23 only, and a row changes only if some distance falls "
                "in its bucket."),
    too_low=N_("Distances 0-15 already have 16 buckets of their own, and 16-23 reach log-spaced ones too."),
    why=N_("Causal T5 gives distances 0-15 one bucket each (16 rows); 16-23 fall into the log-spaced buckets "
           "16, 17 and 18. No distance in a 24-token sequence reaches buckets 19-31, so their rows get no "
           "gradient and keep their initial values: run on longer sequences, the model meets biases it never "
           "trained (06 returns to this)."),
)

check_exercise_4 = choice(
    N_("Exercise 4 (why compact ALiBi needs the causal mask)"),
    options={
        "a": N_("In float32 the large products m_h j lose digits that the full bias keeps, and the mask hides "
                "that error."),
        "b": N_("Full minus compact is -m i for a key before the query but m i - 2m j for one after it, which "
                "varies with j."),
        "c": N_("A softmax ignores a constant added to its row only when some entries of that row are masked "
                "to -inf."),
        "d": N_("Without is_causal, SDPA drops a (heads, 1, L) bias that does not have the full (heads, L, L) "
                "shape of the scores."),
    },
    answer="b",
    why=N_("For j <= i, -m(i - j) = m j - m i: the compact bias plus -m i, one constant per query row, which "
           "the softmax ignores. For j > i the full bias is m i - m j, which differs from m j by m i - 2m j: not "
           "a constant per row, so no per-key vector can follow it. Section 2 measures the gap without the "
           "mask."),
    hints={
        "a": N_("in float32 the two forms agree to rounding under the mask (section 2 and its deep dive); the "
                "precision caveat is bf16 at long lengths, and it does not explain the gap section 2 prints at L = 24."),
        "c": N_("softmax(s + c) = softmax(s) for any constant c added to a whole row, masked entries or not."),
        "d": N_("SDPA broadcasts a (heads, 1, L) float mask without complaint; it computes the wrong "
                "attention, silently."),
    },
    nudge=N_("Subtract the compact bias from the full one for a key after the query, not only for a key "
             "before it."),
)

check_exercise_5 = choice(
    N_("Exercise 5 (can one ALiBi head peak at distance 3?)"),
    options={
        "a": N_("No: in one layer the keys carry no position, and the head's own term -m d favours the "
                "nearest key."),
        "b": N_("Yes: training can make the query's content score the key 3 back highest, since that key "
                "holds the answer."),
        "c": N_("No: the causal mask hides the key 3 back from the query, so the head never sees the "
                "answer at all."),
        "d": N_("Yes: the head whose penalty reaches -1 near distance 3 (slope about 1/3) gives that "
                "distance its largest weight."),
    },
    answer="a",
    why=N_("In one layer a key is its token's embedding alone, and with random tokens nothing in the content "
           "marks the key 3 back. The only position input is -m d, which falls with the distance for every "
           "m > 0, so on average each head's weights fall with the distance too (section 7 prints 1, 0.78, "
           "0.61, 0.47 for the steepest head). Whether the four heads together could form a peak is the "
           "question section 7 leaves open."),
    hints={
        "b": N_("the content score of a key depends on its token only; with random tokens the token 3 back "
                "is no more likely to be any one token than the token 2 back."),
        "c": N_("the mask hides keys after the query; from position 3 on, the key 3 back is visible."),
        "d": N_("exp(-m d) falls with d for every slope m > 0: the penalty reaching -1 somewhere does not "
                "make that distance the largest weight."),
    },
    nudge=N_("Ask what, in one layer on random tokens, could make the key 3 back look different from the "
             "key 2 back."),
)


#: Exercise 6's bucketing: 16 causal buckets, distances 0-7 exact, the last bucket from MAX_DISTANCE on.
BUCKETS, EXACT, MAX_DISTANCE = 16, 8, 64


@checker(N_("Exercise 6 (design buckets whose last one starts at max_distance)"))
def check_exercise_6(ex: Exercise, my_buckets: Callable[[Tensor], Any]) -> None:
    """my_buckets(distance) -> bucket ids: exact below EXACT, never decreasing, every bucket used,
    bucket BUCKETS - 1 exactly from MAX_DISTANCE on."""
    distance = torch.arange(0, 5 * MAX_DISTANCE)
    got = ex.call(my_buckets, distance.clone())
    ex.expect(isinstance(got, Tensor) and got.shape == distance.shape and not got.dtype.is_floating_point,
              _("return an integer tensor of bucket ids with the shape of `distance` {shape}, got {got}").format(
                  shape=tuple(distance.shape),
                  got=(tuple(got.shape), got.dtype) if isinstance(got, Tensor) else type(got).__name__))
    got = got.long()
    ex.expect(bool(((got >= 0) & (got < BUCKETS)).all()),
              _("bucket ids must lie in 0..{last}, got {lo}..{hi}").format(
                  last=BUCKETS - 1, lo=int(got.min()), hi=int(got.max())))
    ex.expect(torch.equal(got[:EXACT], distance[:EXACT]),
              _("distances 0-{last} must each have their own bucket, bucket = distance").format(last=EXACT - 1))
    down = (got.diff() < 0).nonzero()
    if len(down):
        d = int(down[0])
        ex.fail(_("distance {d1} gets bucket {b1}, below distance {d}'s {b}: buckets must never decrease with the "
                  "distance").format(d=d, b=int(got[d]), d1=d + 1, b1=int(got[d + 1])))
    unused = sorted(set(range(BUCKETS)) - set(got.tolist()))
    ex.expect(not unused, _("buckets {unused} are never used: spread the distances {exact}-{last} over every bucket "
                            "before the last").format(unused=unused, exact=EXACT, last=MAX_DISTANCE - 1))
    first_last = int((got == BUCKETS - 1).nonzero()[0])
    if first_last < MAX_DISTANCE:
        ex.fail(_("the last bucket starts at distance {d}, before max_distance = {m}: that is T5's rounding "
                  "(section 1); distances {d}-{m1} should still be told apart").format(
                      d=first_last, m=MAX_DISTANCE, m1=MAX_DISTANCE - 1))
    ex.expect(first_last == MAX_DISTANCE,
              _("the last bucket starts at distance {d}: every distance from max_distance = {m} on must share "
                "it").format(d=first_last, m=MAX_DISTANCE))
    sizes = torch.bincount(got[EXACT:MAX_DISTANCE], minlength=BUCKETS)[EXACT:BUCKETS - 1]
    ex.passed(_("exact to {last}, the last bucket from {m} on; distances per bucket between: {sizes}").format(
        last=EXACT - 1, m=MAX_DISTANCE, sizes=sizes.tolist()))

"""Checkers for notebook 03 (RoPE).

1. predict, then run: the score at offset 5 of a vector of two pairs, a fast one (theta = 0.4)
   and a slow one (theta = 0.004), with itself.
2. explain why: shifting every position changes nothing, a decode step with the offset forgotten breaks
   the model.
3. ``interleaved_to_half(weight, n_heads)``: a q/k projection converted between layouts.
4. design: ``grouped_positions(length)``, position ids that keep a long input's order and show
   the last query of a RoPE decoder only distances it saw in training (checked as properties,
   then by running section 5's decoder with them).

Each checker tests the answer on fresh random inputs (fixed seeds) against the library or a
property, and prints a hint when it is wrong.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from posenc_course.exercises import Exercise, checker, choice, prediction
from posenc_course.i18n import N_, _
from posenc_lib.models import TinyTransformer
from posenc_lib.rotary.rope import RotaryPE, apply_rope, convert_qk_weight, rope_cos_sin, rope_inv_freq

__all__ = ["check_exercise_1", "check_exercise_2", "check_exercise_3", "check_exercise_4"]


check_exercise_1 = prediction(
    N_("Exercise 1 (predict the score at offset 5)"), variable="predicted_score", tolerance=0.08,
    too_high=N_("The fast pair turns by 5 x 0.4 = 2 rad, more than a right angle, so its half of the score "
                "is negative: the slow pair alone cannot keep the score near 1."),
    too_low=N_("The slow pair turns by only 5 x 0.004 = 0.02 rad: its half of the score stays almost 0.5, "
               "whatever the fast pair does."),
    why=N_("Each pair carries half of |x|^2 = 1. The score is the sum over pairs of (its share) x cos(offset x "
           "theta): 0.5 cos(2) + 0.5 cos(0.02) = -0.208 + 0.500 = 0.292. Fast pairs swing, slow pairs set the "
           "level (the explorer of section 2)."),
)

check_exercise_2 = choice(
    N_("Exercise 2 (why a shift changes nothing and a forgotten offset breaks the model)"),
    options={
        "a": N_("Position 100 lies beyond the training length, where RoPE extrapolates; position 0 was never met "
                "by a query with cached keys in training."),
        "b": N_("Shifting moves every query and key together, so each offset m - n stays; the decode step moves "
                "the new query alone, changing its offsets."),
        "c": N_("The cache holds unrotated keys, so a decode step rotates them again by the new token's position, "
                "and position 0 undoes the rotation they needed."),
        "d": N_("Shifting by 100 turns each pair by a whole number of turns, so every rotation comes back to where "
                "it started; positions 0 and 31 differ by part of a turn."),
    },
    answer="b",
    why=N_("The score of a query at m and a key at n depends on m - n only (section 1). Adding 100 to every "
           "position keeps every m - n, so nothing changes. The forgotten offset puts the new query at 0 while the "
           "cached keys keep 0..30: the key 3 back now sits at offset -28, a distance the model never used."),
    hints={
        "a": N_("the model was trained at positions 0-31 only, yet the shift by 100 changes nothing: what does "
                "the score depend on?"),
        "c": N_("section 5 says the cached keys are already rotated by their own positions; nothing rotates them "
                "again."),
        "d": N_("pair 0 turns by 100 rad for a shift of 100, which is not a whole number of turns (2 pi = 6.28); "
                "the reason lies in what the score depends on."),
    },
    nudge=N_("Write the offset m - n between the new query and the key 3 back, once after the shift and once with "
             "the offset forgotten."),
)


def _scores(w_q: Tensor, w_k: Tensor, n_heads: int, layout: str, x: Tensor) -> Tensor:
    """RoPE attention scores (batch, heads, seq, seq) of inputs x (batch, seq, d_in) projected by w_q, w_k."""
    b, s, _ = x.shape
    q = (x @ w_q.T).view(b, s, n_heads, -1).transpose(1, 2)
    k = (x @ w_k.T).view(b, s, n_heads, -1).transpose(1, 2)
    cos, sin = rope_cos_sin(torch.arange(s)[None], rope_inv_freq(q.shape[-1]))
    return apply_rope(q, cos, sin, layout) @ apply_rope(k, cos, sin, layout).transpose(-2, -1)


@checker(N_("Exercise 3 (interleaved_to_half)"))
def check_exercise_3(ex: Exercise, interleaved_to_half: Callable[[Tensor, int], Tensor]) -> None:
    """interleaved_to_half(weight (n_heads*head_dim, d_in), n_heads) -> the weight for the half layout."""
    gen = torch.Generator().manual_seed(4)
    for n_heads, head_dim, d_in in [(2, 8, 12), (4, 16, 32), (1, 6, 5)]:
        w_q = torch.randn(n_heads * head_dim, d_in, generator=gen)
        w_k = torch.randn(n_heads * head_dim, d_in, generator=gen)
        out_q = ex.call(interleaved_to_half, w_q.clone(), n_heads)
        out_k = ex.call(interleaved_to_half, w_k.clone(), n_heads)
        ex.expect(isinstance(out_q, Tensor) and out_q.shape == w_q.shape,
                  _("return a tensor of the input's shape {shape}, got {got}").format(
                      shape=tuple(w_q.shape),
                      got=tuple(out_q.shape) if isinstance(out_q, Tensor) else type(out_q).__name__))
        ex.expect(not torch.equal(out_q, w_q),
                  _("the weight came back unchanged; the half layout needs its rows reordered"))
        global_perm = torch.cat([torch.arange(0, n_heads * head_dim, 2), torch.arange(1, n_heads * head_dim, 2)])
        if n_heads > 1 and torch.equal(out_q, w_q[global_perm]):
            ex.fail(_("you reordered all rows at once; reorder within each head (reshape to (n_heads, head_dim, "
                      "d_in))"))
        backwards = convert_qk_weight(w_q, n_heads, to="interleaved")
        if head_dim > 4 and torch.equal(out_q, backwards):
            ex.fail(_("that is the inverse permutation (half -> interleaved); take the even rows first, then the "
                      "odd"))
        x = torch.randn(2, 7, d_in, generator=gen)
        want = _scores(w_q, w_k, n_heads, "interleaved", x)
        got = _scores(out_q, out_k, n_heads, "half", x)
        ex.expect(torch.allclose(got, want, atol=1e-4, rtol=1e-4),
                  _("with n_heads={n_heads}, head_dim={head_dim} the half-layout scores differ from the interleaved "
                    "ones by up to {gap:.3g}").format(n_heads=n_heads, head_dim=head_dim,
                                                      gap=(got - want).abs().max().item()))
    ex.passed(_("attention scores of the converted weights match the interleaved model"))


@checker(N_("Exercise 4 (design: grouped position ids)"))
def check_exercise_4(ex: Exercise, grouped_positions: Callable[[int], Tensor], decoder: TinyTransformer | None = None,
                     train_len: int = 32, lag: int = 3) -> None:
    """grouped_positions(length) -> (1, length) int64 ids; checked as properties, then on ``decoder``.

    The properties, for every length tried: non-decreasing ids (the order of the input is kept); the
    last query sees every key at a distance below ``train_len`` (seen in training); the key ``lag``
    back at distance exactly ``lag``, and no other key at that distance. Then the decoder (section 5's,
    trained at ``train_len`` on the lag task) must answer the last query of random sequences of 64,
    128 and 256 tokens with these ids.
    """
    for length in (train_len, 40, 64, 128, 256):
        ids = ex.call(grouped_positions, length)
        ex.expect(isinstance(ids, Tensor) and ids.dtype == torch.long,
                  _("return an int64 tensor, got {got}").format(
                      got=ids.dtype if isinstance(ids, Tensor) else type(ids).__name__))
        ex.expect(ids.shape == (1, length), _("for length={length} return shape (1, {length}), got {shape}").format(
            length=length, shape=tuple(ids.shape)))
        ids = ids[0]
        ex.expect(bool((ids[1:] >= ids[:-1]).all()),
                  _("with length={length} the ids go down somewhere: keep the order of the input (each id at "
                    "least the one before it)").format(length=length))
        distance = ids[-1] - ids  # what the last query sees of every key
        ex.expect(int(distance.max()) < train_len,
                  _("with length={length} the first key is {far} ids before the last query; the decoder saw "
                    "distances up to {top} only").format(length=length, far=int(distance.max()),
                                                         top=train_len - 1))
        ex.expect(int(distance[-1 - lag]) == lag,
                  _("with length={length} the key {lag} back is at distance {got}; the answer lies there, so it "
                    "must stay at {lag}").format(length=length, lag=lag, got=int(distance[-1 - lag])))
        at_lag = int((distance == lag).sum())
        ex.expect(at_lag == 1,
                  _("with length={length}, {n} keys sit at distance {lag}: the query cannot tell the answer from "
                    "the others").format(length=length, n=at_lag, lag=lag))
    ex.expect(isinstance(decoder, TinyTransformer),
              _("pass section 5's trained decoder as the second argument: check_exercise_4(grouped_positions, model)"))
    vocab = decoder.head.out_features
    gen = torch.Generator().manual_seed(7)
    for length in (64, 128, 256):
        tokens = torch.randint(0, vocab, (256, length), generator=gen)
        with torch.no_grad():
            logits = decoder(tokens, positions=ex.call(grouped_positions, length))
        acc = (logits[:, -1].argmax(-1) == tokens[:, -1 - lag]).float().mean().item()
        ex.expect(acc > 0.9, _("with these ids the decoder answers {acc:.2f} of the last queries at {length} "
                               "tokens").format(acc=acc, length=length))
    ex.passed(_("order kept, every distance seen in training, and the decoder answers the last query at 64, 128 "
                "and 256 tokens"))

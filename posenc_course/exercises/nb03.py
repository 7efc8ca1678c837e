"""Checkers for notebook 03 (RoPE).

1. predict, then run: the score of one unit pair with itself at offset 5 (theta = 0.4).
2. explain why: RoPE rotates queries and keys, never values.
3. ``interleaved_to_half(weight, n_heads)``: a q/k projection converted between layouts.
4. ``decode_positions(cache_len, n_new)``: the positions of the tokens of a KV-cache decode step.

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
    N_("Exercise 1 (predict the score at offset 5)"), variable="predicted_score", tolerance=0.1,
    too_high=N_("Five steps of 0.4 rad turn the key by 2 rad, more than a right angle (about 1.57 rad): the "
                "two unit vectors now point more apart than across, so their dot product is negative."),
    too_low=N_("The score of two unit vectors is the cosine of the angle between them; 2 rad is less than "
               "pi, so they are not opposite and the score stays above -1."),
    why=N_("Query and key are the same unit vector; at offset 5 the key is turned 5 x 0.4 = 2 rad further "
           "than the query, and the score is cos(2) = -0.416, whatever the two absolute positions are."),
)

check_exercise_2 = choice(
    N_("Exercise 2 (why RoPE rotates q and k, not v)"),
    options={
        "a": N_("Rotating v would change the norms of the values, so the layer's output would grow or shrink "
                "with the position of each key."),
        "b": N_("Rotating v too would make the layer slower and its cache larger, and nothing else would "
                "change."),
        "c": N_("Values have a different head_dim from queries and keys, so a rotation built for q and k "
                "does not fit them."),
        "d": N_("Rotated values would carry each key's absolute position into the output; the offset is "
                "needed only in the scores."),
    },
    answer="d",
    why=N_("Relative position enters through the scores, <R_m q, R_n k> = q^T R_(n-m) k. The values are "
           "mixed by those weights and passed on; rotating them by their own position n would stamp an "
           "absolute angle on the output. Section 5 measures it: shifted positions change nothing with q "
           "and k rotated, and change the output once v is rotated too."),
    hints={
        "a": N_("a rotation keeps every norm (section 1); the trouble is the absolute angle it would add."),
        "b": N_("section 5 measures more than speed: with v rotated, the layer's output changes when every "
                "position shifts by the same amount."),
        "c": N_("in this library and in LLaMA, q, k and v heads share one head_dim; the reason is what a "
                "rotated value would carry, not its shape."),
    },
    nudge=N_("Section 5 shifts every position by the same amount: ask which part of the layer's output would "
             "notice if v were rotated too."),
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


@checker(N_("Exercise 4 (decode_positions)"))
def check_exercise_4(ex: Exercise, decode_positions: Callable[[int, int], Tensor]) -> None:
    """decode_positions(cache_len, n_new) -> (1, n_new) int64 positions cache_len .. cache_len + n_new - 1."""
    for cache_len, n_new in [(0, 1), (0, 4), (5, 1), (31, 1), (7, 3)]:
        out = ex.call(decode_positions, cache_len, n_new)
        ex.expect(isinstance(out, Tensor) and out.dtype == torch.long,
                  _("return an int64 tensor, got {got}").format(
                      got=out.dtype if isinstance(out, Tensor) else type(out).__name__))
        ex.expect(out.shape == (1, n_new), _("for n_new={n_new} return shape (1, {n_new}), got {shape}").format(
            n_new=n_new, shape=tuple(out.shape)))
        want = torch.arange(cache_len, cache_len + n_new)[None]
        if cache_len > 0 and torch.equal(out, want - cache_len):
            ex.fail(_("positions restart at 0, but the cache already holds {cache_len} tokens at positions "
                      "0..{last}: the new tokens come after them").format(cache_len=cache_len, last=cache_len - 1))
        ex.expect(torch.equal(out, want),
                  _("with cache_len={cache_len}, n_new={n_new} expected {want}, got {got}").format(
                      cache_len=cache_len, n_new=n_new, want=want.tolist(), got=out.tolist()))
    # the property it serves: a cached decode equals full recomputation in a RoPE model
    with torch.random.fork_rng():  # a fixed model without touching the caller's random state
        torch.manual_seed(5)
        model = TinyTransformer(20, 20, d_model=16, n_heads=2, n_layers=2, causal=True, pool="none",
                                scheme=RotaryPE(head_dim=8)).eval()
    tokens = torch.randint(0, 20, (2, 12), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        full = model(tokens)[:, -3:]
        cache = model.new_cache()
        model(tokens[:, :9], positions=ex.call(decode_positions, 0, 9), cache=cache)
        step = model(tokens[:, 9:], positions=ex.call(decode_positions, 9, 3), cache=cache)
    ex.expect(torch.allclose(step, full, atol=1e-5),
              _("a cached decode with these positions differs from full recomputation"))
    ex.passed(_("a cached decode step with these positions equals full recomputation"))

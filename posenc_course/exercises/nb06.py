"""Checkers for notebook 06 (length extrapolation).

1. ``perplexity_curve(losses, lengths)``: perplexity of the first n positions, for each n.
2. ``ntk_inv_freq(head_dim, base, factor)``: NTK-aware RoPE frequencies (base * s^(d/(d-2))).
3. ``sink_window_mask(seq_len, window, sink)``: the causal window + first tokens mask of section 6.

Each checker tests the answer on fixed inputs against the library or a property, and prints
a hint when it is wrong.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from posenc_course.exercises import Exercise, checker, choice, prediction
from posenc_course.i18n import N_, _
from posenc_lib.analysis.lm_metrics import perplexity_at
from posenc_lib.attention import allowed_keys
from posenc_lib.models import TinyTransformer
from posenc_lib.rotary.scaling import rope_frequencies
from posenc_lib.score_bias.alibi import ALiBi

__all__ = ["check_exercise_1", "check_exercise_2", "check_exercise_3", "check_exercise_4", "check_exercise_5"]


@checker(N_("Exercise 1 (perplexity from per-position losses)"))
def check_exercise_1(ex: Exercise, perplexity_curve: Callable[[Tensor, list[int]], list[float]]) -> None:
    """perplexity_curve(losses, lengths) -> [exp(mean(losses[:n])) for n in lengths]."""
    gen = torch.Generator().manual_seed(6)
    losses = 2.0 + torch.rand(256, generator=gen) + torch.linspace(0, 1, 256)  # rising, as past L
    lengths = [32, 64, 128, 256]
    got = ex.call(perplexity_curve, losses.clone(), lengths)
    want = perplexity_at(losses, lengths)
    try:
        values = [float(v) for v in got]
    except (TypeError, ValueError):
        ex.fail(_("return a list of {n} numbers, got {type}").format(n=len(lengths), type=type(got).__name__))
    ex.expect(len(values) == len(lengths), _("return one perplexity per length ({n}), got {got}").format(
        n=len(lengths), got=len(values)))
    if math.isclose(values[0], math.exp(losses[:32].sum().item()), rel_tol=1e-4):
        ex.fail(_("exp of the *sum* of the losses: perplexity is exp of their *mean*"))
    if all(math.isclose(v, losses[:n].mean().item(), rel_tol=1e-4) for v, n in zip(values, lengths)):
        ex.fail(_("that is the mean loss (nats); perplexity is exp(mean loss)"))
    if all(math.isclose(v, losses[:n].exp().mean().item(), rel_tol=1e-4) for v, n in zip(values, lengths)):
        ex.fail(_("mean of exp(loss) weights bad positions too much: take exp of the mean loss"))
    if all(math.isclose(v, math.exp(losses[n - 1].item()), rel_tol=1e-4) for v, n in zip(values, lengths)):
        ex.fail(_("that is the loss at position n-1 only; average over the first n positions"))
    ex.expect(all(math.isclose(v, w, rel_tol=1e-5) for v, w in zip(values, want)),
              _("for lengths {lengths} expected {want}, got {got}").format(
                  lengths=lengths, want=[round(w, 4) for w in want], got=[round(v, 4) for v in values]))
    ex.passed(_("exp(mean loss of the first n positions), as perplexity_at computes it"))


@checker(N_("Exercise 2 (NTK-aware frequencies)"))
def check_exercise_2(ex: Exercise, ntk_inv_freq: Callable[[int, float, float], Tensor]) -> None:
    """ntk_inv_freq(head_dim, base, factor) -> (head_dim/2,) base'^(-2i/head_dim), base' = base * factor^(d/(d-2))."""
    for head_dim, base, factor in [(16, 10000.0, 8.0), (64, 10000.0, 2.0), (128, 500000.0, 4.0)]:
        got = ex.call(ntk_inv_freq, head_dim, base, factor)
        want = rope_frequencies(head_dim, {"rope_type": "ntk", "factor": factor, "rope_theta": base})[0]
        ex.expect(isinstance(got, Tensor) and got.shape == want.shape,
                  _("for head_dim={head_dim} return a tensor of shape {shape}, got {got}").format(
                      head_dim=head_dim, shape=tuple(want.shape),
                      got=tuple(got.shape) if isinstance(got, Tensor) else type(got).__name__))
        got = got.double()
        plain = rope_frequencies(head_dim, {"rope_theta": base})[0].double()
        if torch.allclose(got, plain / factor, rtol=1e-4):
            ex.fail(_("that divides every frequency by the factor: linear interpolation (PI), not NTK-aware"))
        if torch.allclose(got, plain, rtol=1e-4):
            ex.fail(_("these are the unscaled frequencies; the base must grow to base * factor^(d/(d-2))"))
        naive = 1.0 / (base * factor) ** (torch.arange(0, head_dim, 2).double() / head_dim)
        if torch.allclose(got, naive, rtol=1e-4):
            ex.fail(_("base * factor leaves the slowest pair short of 1/factor: the exponent is d/(d-2)"))
        ex.expect(torch.allclose(got, want.double(), rtol=1e-4),
                  _("for head_dim={head_dim}, base={base}, factor={factor} the frequencies differ from NTK-aware "
                    "scaling (first values expected {want}, got {got})").format(
                      head_dim=head_dim, base=base, factor=factor, want=want[:3].tolist(), got=got[:3].tolist()))
    ex.passed(_("pair 0 unchanged, the slowest pair divided by the factor"))


@checker(N_("Exercise 3 (window + first tokens mask)"))
def check_exercise_3(ex: Exercise, sink_window_mask: Callable[[int, int, int], Tensor]) -> None:
    """sink_window_mask(seq_len, window, sink) -> (seq_len, seq_len) bool: j <= i and (i - j < window or j < sink)."""
    for seq_len, window, sink in [(12, 3, 2), (40, 8, 0), (64, 16, 16)]:
        got = ex.call(sink_window_mask, seq_len, window, sink)
        want = allowed_keys(seq_len, window=window, sink=sink)
        ex.expect(isinstance(got, Tensor) and got.dtype == torch.bool and got.shape == want.shape,
                  _("return a bool tensor of shape {shape}, got {got}").format(
                      shape=tuple(want.shape),
                      got=(tuple(got.shape), got.dtype) if isinstance(got, Tensor) else type(got).__name__))
        ex.expect(not (got & ~torch.ones_like(got).tril()).any(),
                  _("a query sees a later key: the mask must be causal (j <= i), also for the first tokens"))
        ex.expect(bool(got.diagonal().all()), _("every query must see itself (distance 0 is in the window)"))
        if not torch.equal(got, want):
            first = int((got != want).any(1).nonzero()[0])
            ex.fail(_("for seq_len={seq_len}, window={window}, sink={sink}: {wrong} entries differ (query {first} is "
                      "the first wrong row)").format(seq_len=seq_len, window=window, sink=sink,
                                                     wrong=(got != want).sum().item(), first=first))
    # it does what section 6 needs in a model: same outputs as the library mask
    model = TinyTransformer(10, 10, 16, 2, 1, scheme=ALiBi(2), causal=True, pool="none")
    tokens = torch.randint(0, 10, (2, 24), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        same = torch.allclose(model(tokens, attn_mask=ex.call(sink_window_mask, 24, 4, 4)[None, None]),
                              model(tokens, attn_mask=allowed_keys(24, window=4, sink=4)[None, None]))
    ex.expect(same, _("the mask gives other model outputs than the library's allowed_keys"))
    ex.passed(_("causal, the last `window` keys plus the first `sink` tokens"))


check_exercise_4 = prediction(
    N_("Exercise 4 (predict how many pairs YaRN keeps at L0 = 4096)"), variable="predicted_kept", tolerance=0,
    too_low=N_("At L0 = 4096 the fast pairs turn hundreds of times within the original context: more of "
               "them pass the 32 turns of beta_fast than at L0 = 32."),
    too_high=N_("Only pairs that turn at least 32 times within L0 (wavelength up to 4096 / 32 = 128) are kept, "
                "and the rounding moves the ramp's start down to a whole index."),
    why=N_("Pair i makes 4096 / (2 pi 10000^(2i/16)) turns within L0; that is 32 turns at the fractional index "
           "8 log(4096 / (32 x 2 pi)) / log 10000, about 2.6, rounded down to 2: pairs 0, 1 and 2 are kept. At "
           "L0 = 32 the same index is negative and rounds to 0: pair 0 only."),
)

check_exercise_5 = choice(
    N_("Exercise 5 (why zero-shot PI is bad already at L)"),
    options={
        "a": N_("At L the sequence has more keys than in training, so attention spreads thinner and loses "
                "the nearby characters."),
        "b": N_("PI divides every frequency by s, pair 0 included: neighbouring characters now differ by "
                "angles never seen."),
        "c": N_("PI multiplies cos and sin by an attention factor that the model never saw, which sharpens "
                "every score."),
        "d": N_("PI changes the model's weights, which then have to be trained again before they work "
                "together."),
    },
    answer="b",
    why=N_("Every pair's new/old ratio is 1/s (section 7): the fast pairs that tell neighbouring characters apart "
           "turn s times slower, so even inside L the model sees rotations it never saw. NTK-aware and YaRN keep "
           "pair 0 and cost little at L."),
    hints={
        "a": N_("At L there are exactly as many keys as in training; the number of keys is the same for plain "
                "RoPE."),
        "c": N_("That is YaRN's 0.1 ln s + 1 factor; PI has none."),
        "d": N_("RoPE has no weights: `with_scheme` changes only the frequencies (section 3)."),
    },
    nudge=N_("Look at section 7's new/old frequency ratio of each pair under PI, and ask what happens to the "
             "fastest pair."),
)

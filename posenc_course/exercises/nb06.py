"""Checkers for notebook 06 (length extrapolation).

1. Predict, then run: how many of 8 RoPE pairs YaRN keeps as they are at L0 = 4096.
2. Explain why: zero-shot PI is worse than plain RoPE already at L.
3. Explain why: what ALiBi's flat curve shows, given the Kneser-Ney floors of sections 2 and 4.
4. Design ``rescale(theta, L0, factor)``: new RoPE frequencies that keep the pairs that turned fully
   within L0, with no pair faster than the one before (properties checked on the notebook's head at
   L0 = 32 and on a production head at L0 = 4096). Then the checker measures the design's cost: it
   applies it to the notebook's three trained RoPE models, no training, and passes a design ahead
   of NTK-aware scaling at 8 L0 and not behind YaRN at L0, by the series' rule, paired by seed.
   Many designs pass; the checker prints what each costs.

Each checker prints a hint when the answer is wrong.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import Tensor

from posenc_course.exercises import Exercise, checker, choice, prediction
from posenc_course.i18n import N_, _
from posenc_course.report import compare
from posenc_lib.analysis.lm_metrics import per_position_loss, perplexity_at
from posenc_lib.models import with_scheme
from posenc_lib.rotary.rope import RotaryPE
from posenc_lib.rotary.scaling import rope_frequencies

__all__ = ["check_exercise_1", "check_exercise_2", "check_exercise_3", "check_exercise_4"]


check_exercise_1 = prediction(
    N_("Exercise 1 (predict how many pairs YaRN keeps at L0 = 4096)"), variable="predicted_kept", tolerance=0,
    too_low=N_("At L0 = 4096 the fast pairs turn hundreds of times within the original context: more of "
               "them pass the 32 turns of beta_fast than at L0 = 32."),
    too_high=N_("Only pairs that turn at least 32 times within L0 (wavelength up to 4096 / 32 = 128) are kept, "
                "and the rounding moves the ramp's start down to a whole index."),
    why=N_("Pair i makes 4096 / (2 pi 10000^(2i/16)) turns within L0; that is 32 turns at the fractional index "
           "8 log(4096 / (32 x 2 pi)) / log 10000, about 2.6, rounded down to 2: pairs 0, 1 and 2 are kept. At "
           "L0 = 32 the same index is negative and rounds to 0: pair 0 only."),
)

check_exercise_2 = choice(
    N_("Exercise 2 (why zero-shot PI is bad already at L)"),
    options={
        "a": N_("At L the sequence has more keys than in training, so attention spreads thinner and loses "
                "the nearby characters."),
        "b": N_("PI slows every pair, pair 0 included: each distance now shows angles that in training "
                "meant another distance."),
        "c": N_("PI multiplies cos and sin by an attention factor that the model never saw, which sharpens "
                "every score."),
        "d": N_("PI changes the model's weights, which then have to be trained again before they work "
                "together."),
    },
    answer="b",
    why=N_("Every pair's new/old ratio is 1/s (section 7), so at every distance each pair shows an angle the "
           "model learned for another distance (pair 0 slowed by 8 still stays within angles it saw). Section "
           "7's control shows the cost, not why: slowing pair 0 alone costs at L, and so does slowing pairs 2-7 "
           "alone; why the slow pairs cost is open. NTK-aware keeps pair 0 and costs little at L; YaRN keeps "
           "pair 0 too but slows its neighbours, and pays at L (section 4)."),
    hints={
        "a": N_("At L there are exactly as many keys as in training; the number of keys is the same for plain "
                "RoPE."),
        "c": N_("That is YaRN's 0.1 ln s + 1 factor; PI has none."),
        "d": N_("RoPE has no weights: `with_scheme` changes only the frequencies (section 3)."),
    },
    nudge=N_("Look at section 7's new/old frequency ratio of each pair under PI, and at its control: which "
             "pairs cost when they alone are slowed?"),
)

check_exercise_3 = choice(
    N_("Exercise 3 (what ALiBi's flat curve shows)"),
    options={
        "a": N_("That ALiBi probably gains a little from the longer input: its perplexity at 8L is somewhat "
                "lower than at L."),
        "b": N_("Nothing at all: a model not ahead of the 6-gram at L learned too little for its curve past L "
                "to mean anything."),
        "c": N_("That ALiBi's bias silences far keys so strongly that it is a 6-gram by construction, however "
                "it is trained."),
        "d": N_("That nothing breaks past L on these windows; whether it could use far context, this test "
                "cannot tell."),
    },
    answer="d",
    why=N_("The floors say which question the curves answer. Inside L no model is shown to do better than the "
           "6-gram further into the window (section 2), and past L ALiBi's small decline is the 6-gram's own, "
           "which comes from its first positions (section 4; Press et al., Appendix B.2). A flat curve shows "
           "that nothing breaks past L, not that the longer input is used."),
    hints={
        "a": N_("The 6-gram, which reads five characters at every length, declines as much from L to 8L, and "
                "from position 4 on it rises (section 4): the decline comes from the first positions, not from "
                "reading the longer input."),
        "b": N_("Whether a model breaks past L depends on its encoding, at any quality: the sinusoid and RoPE "
                "break at 6-gram quality, ALiBi does not (section 4)."),
        "c": N_("ALiBi's gentlest head has slope 1/256: within 32 characters it barely penalises any key, so "
                "nothing in the bias makes it a 6-gram. Section 2 shows only that no model here, RoPE and T5 "
                "bias included, does better than the 6-gram further into the window."),
    },
    nudge=N_("Compare ALiBi's perplexity from L to 8L with the 6-gram's own, and recall what section 2 measured "
             "inside L."),
)


def _check_design(ex: Exercise, rescale: Callable, head_dim: int, original: int, factor: float) -> Tensor:
    """The properties: one positive frequency per pair, the pairs that turned fully within L0 kept, the order."""
    theta = rope_frequencies(head_dim, None)[0]
    got = ex.call(rescale, theta.clone(), original, factor)
    ex.expect(isinstance(got, Tensor) and got.shape == theta.shape,
              _("return a tensor of shape {shape} (one frequency per pair), got {got}").format(
                  shape=tuple(theta.shape),
                  got=tuple(got.shape) if isinstance(got, Tensor) else type(got).__name__))
    new, theta = got.double(), theta.double()
    ex.expect(bool(torch.isfinite(new).all() and (new > 0).all()),
              _("every frequency must be a positive finite number"))
    turned = 2 * math.pi / theta <= original  # pairs that completed a turn within L0: every angle seen
    moved = turned & ~torch.isclose(new, theta, rtol=1e-5, atol=0)
    if bool(moved.any()):
        i = int(moved.nonzero()[0])
        ex.fail(_("with head_dim={head_dim} and L0={original}, pair {i} completes a full turn within L0, so it "
                  "took every angle in training; your design moves it (new/old {ratio:.3g}) "
                  "(section 7). Keep such pairs exactly").format(
                      head_dim=head_dim, original=original, i=i, ratio=float(new[i] / theta[i])))
    faster = (new[1:] > new[:-1] * (1 + 1e-6)).nonzero()
    if len(faster):
        i = int(faster[0])
        ex.fail(_("pair {j} turns faster than pair {i}: keep the order of the frequencies (pair 0 the fastest), "
                  "or the pairs no longer span the scales from a character to the whole context").format(
                      i=i, j=i + 1))
    return new


def _perplexities(models: Sequence, inputs: Tensor, targets: Tensor, scaling: dict | None,
                  lengths: Sequence[int]) -> np.ndarray:
    """(seeds, lengths): perplexity of each trained RoPE model with its frequencies rescaled."""
    rope = RotaryPE(16, scaling=scaling)  # the notebook's head
    with torch.no_grad():
        return np.array([perplexity_at(per_position_loss(with_scheme(m, rope), inputs, targets), lengths)
                         for m in models])


@checker(N_("Exercise 4 (design a rescaling for 8 times the training length)"))
def check_exercise_4(ex: Exercise, rescale: Callable[[Tensor, int, float], Tensor], models: Sequence | None = None,
                     inputs: Tensor | None = None, targets: Tensor | None = None) -> None:
    """rescale(theta, L0, factor) -> new frequencies: pairs with a full turn within L0 unchanged, no pair faster
    than the one before; then, on the trained RoPE models (one per seed) and the windows (n, 8 L0), ahead of
    NTK-aware at 8 L0 and not behind YaRN at L0, by the series' rule, paired by seed."""
    new = _check_design(ex, rescale, 16, 32, 8.0)  # this notebook's head
    _check_design(ex, rescale, 128, 4096, 8.0)  # a production head: the design must not be tied to 8 pairs
    ex.expect(models is not None and inputs is not None and targets is not None,
              _("pass the trained RoPE models and the evaluation windows: "
                "check_exercise_4(rescale, models, inputs, targets)"))
    theta = rope_frequencies(16, None)[0].double()
    L0, lengths = 32, [32, inputs.shape[1]]
    divisors = (theta / new).tolist()
    yours = _perplexities(models, inputs, targets, {
        "rope_type": "longrope", "short_factor": divisors, "long_factor": divisors,
        "original_max_position_embeddings": L0, "factor": 1.0}, lengths)  # factor 1: no attention factor
    ntk = _perplexities(models, inputs, targets, {"rope_type": "ntk", "factor": 8.0}, lengths)
    yarn = _perplexities(models, inputs, targets, {"rope_type": "yarn", "factor": 8.0,
                                                   "original_max_position_embeddings": L0}, lengths)
    far = compare(yours[:, 1], ntk[:, 1], higher_is_better=False, paired=True, relative=True)
    near = compare(yours[:, 0], yarn[:, 0], higher_is_better=False, paired=True, relative=True)
    cost = _("perplexity {l:.2f} at L and {f:.2f} at 8L (NTK-aware: {nl:.2f}, {nf:.2f}; YaRN: {yl:.2f}, "
             "{yf:.2f}); new/old per pair: {ratios}").format(
        l=yours[:, 0].mean(), f=yours[:, 1].mean(), nl=ntk[:, 0].mean(), nf=ntk[:, 1].mean(),
        yl=yarn[:, 0].mean(), yf=yarn[:, 1].mean(), ratios=[round(float(r), 3) for r in new / theta])
    if not far.a_ahead:
        ex.fail(_("your design is not ahead of NTK-aware at 8L by the rule: {cost}. Which pairs meet angles past L "
                  "that they never took in training, and how much slowing do they need?").format(cost=cost))
    if near.b_ahead:
        ex.fail(_("your design costs more than YaRN at L by the rule: {cost}. Which pairs need slowing, and by "
                  "how much?").format(cost=cost))
    ex.passed(_("the fast pairs kept, ahead of NTK-aware at 8L and not behind YaRN at L: {cost}").format(
        cost=cost))

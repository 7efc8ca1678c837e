"""Checkers for notebook 00, "Permutation blindness".

Exercise 1 (predict, then run): the exact best accuracy of a bag-of-words model on a lopsided
  "who did what" task, :data:`LOPSIDED_TASK`.
Exercise 2 (explain why): why a causal decoder without positions is not permutation-equivariant.
Exercise 3 (implement): undo a shuffle (inverse permutation) and use it to show a 2-layer encoder
  is equivariant.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from posenc_course.data import WhoDidWhat
from posenc_course.exercises import Exercise, checker, choice, prediction
from posenc_course.i18n import N_, _
from posenc_lib.models import TinyTransformer

__all__ = ["LOPSIDED_TASK", "check_exercise_1", "check_exercise_2", "check_exercise_3"]

#: The task of exercise 1. Agents are only ever the cat or the dog; the mouse can only be chased, seen, bitten or fed.
LOPSIDED_TASK = WhoDidWhat(agents=("cat", "dog"), patients=("cat", "dog", "mouse"), held_out_pairs=())

check_exercise_1 = prediction(
    N_("Exercise 1 (predict the ceiling of a lopsided task)"), variable="predicted_ceiling", tolerance=0.01,
    too_low=N_("0.5 would be right if both animals of every bag were equally likely agents. Here the mouse is "
               "never an agent: what can a bag-of-words model conclude from a bag that contains 'mouse'?"),
    too_high=N_("Only bags with a mouse name their agent; in the bag {cat, dog} both are equally likely agents, "
                "and no bag of words can do better than a coin there."),
    why=N_("Half the sentences pair the cat and the dog (agent a coin flip: right 1/2), half pair one of them "
           "with the mouse (the agent is whichever is not the mouse: right always): 1/2 * 1/2 + 1/2 * 1 = 0.75."),
)

check_exercise_2 = choice(
    N_("Exercise 2 (why a causal decoder is not equivariant)"),
    options={
        "a": N_("The softmax of a row depends on the order of the row's entries, so shuffling the keys changes "
                "each token's weights."),
        "b": N_("The decoder has learned positions during training, and a shuffle moves each token away from "
                "the place it learned."),
        "c": N_("Floating-point rounding differs from one order of the tokens to another, and the decoder adds "
                "up its rows in a new order after a shuffle."),
        "d": N_("The mask is fixed in index space: after a shuffle, a token sees a different set of earlier "
                "tokens."),
    },
    answer="d",
    why=N_("The mask lets slot t see slots 0..t, whatever tokens stand there. Shuffle the tokens and the set a "
           "token attends to changes, so its output changes, not only its place. The mask itself carries order, "
           "which is why decoders without any encoding can still learn positions (the open-ended experiment, "
           "and 05)."),
    hints={
        "a": N_("a row-wise softmax does not care in which order the entries come (section 1 uses exactly "
                "this): the encoder, with the same softmax, has a gap at rounding level."),
        "b": N_("both models are untrained (fresh random weights); the gap is there before any training."),
        "c": N_("rounding differences are near 1e-16 in float64, as the encoder's gap shows; the decoder's "
                "gap is of the order of the outputs themselves."),
    },
    nudge=N_("The encoder in the same cell has the same softmax, the same rounding and no training either: "
             "look for what only the decoder has."),
)


def _encoder(causal: bool, seed: int = 0) -> TinyTransformer:
    """A small float64 2-layer model without positions (encoder, or causal decoder)."""
    torch.manual_seed(seed)
    return TinyTransformer(vocab_size=11, n_outputs=3, d_model=16, n_heads=4, n_layers=2, causal=causal).double().eval()


def _permutations(seq: int, count: int, seed: int) -> list[Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return [torch.randperm(seq, generator=gen) for _ in range(count)]


@checker(N_("Exercise 3 (undo a shuffle)"))
def check_exercise_3(ex: Exercise, inverse_permutation: Callable[[Tensor], Tensor]) -> None:
    """``inverse_permutation(perm)`` must return ``inv`` (int64) with ``perm[inv] == inv[perm] == arange``."""
    for seq in (1, 2, 5, 9):
        for perm in _permutations(seq, 4, seed=seq):
            inv = ex.call(inverse_permutation, perm.clone())
            ex.expect(isinstance(inv, Tensor), _("return a torch.Tensor, got {type}").format(type=type(inv).__name__))
            ex.expect(inv.dtype == torch.long and inv.shape == perm.shape,
                      _("return an int64 tensor of shape {shape}, got dtype {dtype}, shape {got_shape}").format(
                          shape=tuple(perm.shape), dtype=inv.dtype, got_shape=tuple(inv.shape)))
            ex.expect(torch.equal(perm[inv], torch.arange(seq)) and torch.equal(inv[perm], torch.arange(seq)),
                      _("for perm={perm} you returned {inv}, but perm[inv] = {composed} is not 0..{last}. Position "
                        "inv[j] must hold the index i where perm[i] == j.").format(
                          perm=perm.tolist(), inv=inv.tolist(), composed=perm[inv].tolist(), last=seq - 1))
    model = _encoder(causal=False)
    tokens = torch.randint(0, 11, (3, 9), generator=torch.Generator().manual_seed(1))
    reference = model.features(tokens)
    worst = 0.0
    with torch.no_grad():
        for perm in _permutations(9, 5, seed=2):
            restored = model.features(tokens[:, perm])[:, ex.call(inverse_permutation, perm)]
            worst = max(worst, (restored - reference).abs().max().item())
    ex.expect(worst < 1e-12, _("un-shuffled outputs differ from the originals by {worst:.2e}").format(worst=worst))
    ex.passed(_("shuffle -> 2-layer encoder -> un-shuffle reproduces every output (max |diff| < 1e-12)"))

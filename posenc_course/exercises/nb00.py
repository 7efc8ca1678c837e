"""Checkers for notebook 00, "Permutation blindness".

Exercise 1: undo a shuffle (inverse permutation) and use it to show a 2-layer encoder is equivariant.
Exercise 2: measure the equivariance gap; a causal mask breaks permutation equivariance.
Exercise 3: the exact best accuracy of a bag-of-words model on a lopsided "who did what" task.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from posenc_course.data import WhoDidWhat
from posenc_course.exercises import Exercise, checker
from posenc_lib.models import TinyTransformer

__all__ = ["EXERCISE_3_TASK", "check_exercise_1", "check_exercise_2", "check_exercise_3"]

#: The task of exercise 3. Agents are only ever the cat or the dog; the mouse can only be chased, seen, bitten or fed.
EXERCISE_3_TASK = WhoDidWhat(agents=("cat", "dog"), patients=("cat", "dog", "mouse"), held_out_pairs=())


def _encoder(causal: bool, seed: int = 0) -> TinyTransformer:
    """A small float64 2-layer model without positions (encoder, or causal decoder)."""
    torch.manual_seed(seed)
    return TinyTransformer(vocab_size=11, n_outputs=3, d_model=16, n_heads=4, n_layers=2, causal=causal).double().eval()


def _permutations(seq: int, count: int, seed: int) -> list[Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return [torch.randperm(seq, generator=gen) for _ in range(count)]


@checker("Exercise 1 (undo a shuffle)")
def check_exercise_1(ex: Exercise, inverse_permutation: Callable[[Tensor], Tensor]) -> None:
    """``inverse_permutation(perm)`` must return ``inv`` (int64) with ``perm[inv] == inv[perm] == arange``."""
    for seq in (1, 2, 5, 9):
        for perm in _permutations(seq, 4, seed=seq):
            inv = ex.call(inverse_permutation, perm.clone())
            ex.expect(isinstance(inv, Tensor), f"return a torch.Tensor, got {type(inv).__name__}")
            ex.expect(inv.dtype == torch.long and inv.shape == perm.shape,
                      f"return an int64 tensor of shape {tuple(perm.shape)}, got dtype {inv.dtype}, shape {tuple(inv.shape)}")
            ex.expect(torch.equal(perm[inv], torch.arange(seq)) and torch.equal(inv[perm], torch.arange(seq)),
                      f"for perm={perm.tolist()} you returned {inv.tolist()}, but perm[inv] = {perm[inv].tolist()} "
                      f"is not 0..{seq - 1}. Position inv[j] must hold the index i where perm[i] == j.")
    model = _encoder(causal=False)
    tokens = torch.randint(0, 11, (3, 9), generator=torch.Generator().manual_seed(1))
    reference = model.features(tokens)
    worst = 0.0
    with torch.no_grad():
        for perm in _permutations(9, 5, seed=2):
            restored = model.features(tokens[:, perm])[:, ex.call(inverse_permutation, perm)]
            worst = max(worst, (restored - reference).abs().max().item())
    ex.expect(worst < 1e-12, f"un-shuffled outputs differ from the originals by {worst:.2e}")
    ex.passed("shuffle -> 2-layer encoder -> un-shuffle reproduces every output (max |diff| < 1e-12)")


def _reference_gap(model: TinyTransformer, tokens: Tensor, perm: Tensor) -> float:
    with torch.no_grad():
        return (model.features(tokens[:, perm]) - model.features(tokens)[:, perm]).abs().max().item()


@checker("Exercise 2 (a causal mask breaks the symmetry)")
def check_exercise_2(ex: Exercise, equivariance_gap: Callable[[TinyTransformer, Tensor, Tensor], float]) -> None:
    """``equivariance_gap(model, tokens, perm)`` = ``max |f(tokens[:, perm]) - f(tokens)[:, perm]|`` over the features."""
    tokens = torch.randperm(11, generator=torch.Generator().manual_seed(3))[:8].unsqueeze(0)  # 8 distinct tokens
    gaps = {}
    for causal in (False, True):
        model = _encoder(causal)
        for perm in [torch.arange(8), *_permutations(8, 3, seed=4)]:
            got, want = ex.call(equivariance_gap, model, tokens, perm), _reference_gap(model, tokens, perm)
            ex.expect(isinstance(got, float), f"return a Python float (use .item()), got {type(got).__name__}")
            ex.expect(abs(got - want) <= 1e-9 + 1e-6 * want,
                      f"for {'a causal' if causal else 'an encoder'} model and perm={perm.tolist()} the gap is "
                      f"{want:.3e}, you returned {got:.3e}. Compare model.features(tokens[:, perm]) with "
                      f"model.features(tokens)[:, perm].")
            gaps.setdefault(causal, []).append(want)
    ex.expect(max(gaps[False]) < 1e-12 and min(gaps[True][1:]) > 1e-3, "unexpected gaps; rerun the cell")
    ex.passed(f"encoder gap < 1e-12 for every shuffle; causal decoder gap {min(gaps[True][1:]):.2f} or more "
                    f"for every non-identity shuffle tried")


@checker("Exercise 3 (bag-of-words ceiling of a lopsided task)")
def check_exercise_3(ex: Exercise, ceiling: float) -> None:
    """``ceiling`` = best expected accuracy of any bag-of-words model on :data:`EXERCISE_3_TASK`."""
    ex.expect(isinstance(ceiling, (int, float)) and not isinstance(ceiling, bool),
              f"give a number between 0 and 1, got {type(ceiling).__name__}")
    exact = EXERCISE_3_TASK.bag_of_words_ceiling()
    ex.expect(abs(ceiling - 0.5) > 1e-6 or abs(exact - 0.5) < 1e-6,
              "0.5 would be right if both entities were equally likely agents. Here the mouse is never "
              "an agent: what can a bag-of-words model conclude from a bag that contains 'mouse'?")
    ex.expect(abs(ceiling - exact) < 1e-6,
              f"you gave {ceiling:.4f}. Group sentences by their bag of tokens; within a bag the best guess is "
              f"the most likely agent. Weight each bag by its probability (agent uniform, then patient uniform "
              f"among the others).")
    ex.passed(f"ceiling {exact:.4f}, above the 0.5 of the symmetric task")

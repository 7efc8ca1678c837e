"""Checkers for notebook 00, "Permutation blindness".

Exercise 1 (predict, then run): the exact best accuracy of a bag-of-words model on a lopsided
  "who did what" task, :data:`LOPSIDED_TASK`.
Exercise 2 (explain why): why a causal decoder without positions is not permutation-equivariant.
Exercise 3 (design): agents and patients for a task whose bag-of-words ceiling is in [0.8, 1): the
  checker computes the ceiling of the learner's task.
"""

from __future__ import annotations

from posenc_course.data import WhoDidWhat
from posenc_course.exercises import Exercise, checker, choice, prediction
from posenc_course.i18n import N_, _

__all__ = ["ANIMALS", "LOPSIDED_TASK", "check_exercise_1", "check_exercise_2", "check_exercise_3"]

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
    N_("Exercise 2 (why the decoder's gap is large)"),
    options={
        "a": N_("The decoder reads its answer at the last slot, and a shuffle puts a different token into that "
                "slot."),
        "b": N_("LayerNorm normalises over the whole sequence, so its statistics change when the tokens are put "
                "in another order."),
        "c": N_("Floating-point sums depend on the order of their terms, and after a shuffle the decoder adds up "
                "its rows in a new order."),
        "d": N_("The mask is fixed in index space: after a shuffle, a token sees a different set of earlier "
                "tokens."),
    },
    answer="d",
    why=N_("The mask lets slot t see slots 0..t, whatever tokens stand there. Shuffle the tokens and the set a "
           "token attends to changes, so its output changes, not only its place. The mask itself carries order, "
           "which is why decoders without any encoding can still learn positions (the open-ended experiment, "
           "and 05)."),
    hints={
        "a": N_("the gap is measured on the per-token features (`features`), before any readout: no slot is "
                "singled out there."),
        "b": N_("LayerNorm normalises each token's vector on its own, in the encoder too, whose gap is at "
                "rounding level."),
        "c": N_("rounding differences are near 1e-16 in float64, as the encoder's gap shows; the decoder's "
                "gap is of the order of the outputs themselves."),
    },
    nudge=N_("The encoder in the same cell has the same layers, the same rounding and no readout in this "
             "measurement either, so look for what only the decoder has."),
)


#: The animals of section 3's task, from which exercise 3's design draws.
ANIMALS = WhoDidWhat().entities


@checker(N_("Exercise 3 (design a task a bag of words almost solves)"))
def check_exercise_3(ex: Exercise, agents: object, patients: object) -> None:
    """``agents`` and ``patients`` (tuples of animals of :data:`ANIMALS`) must make a ``WhoDidWhat`` task whose
    exact bag-of-words ceiling is at least 0.8 and below 1: most bags name their agent, not all."""
    for name, value in (("my_agents", agents), ("my_patients", patients)):
        ex.expect(isinstance(value, (tuple, list)) and all(isinstance(v, str) for v in value),
                  _("`{name}` must be a tuple of animal names, got {value!r}").format(name=name, value=value))
        unknown = sorted(set(value) - set(ANIMALS))
        ex.expect(not unknown, _("`{name}` names {unknown}; the animals are {animals}").format(
            name=name, unknown=unknown, animals=", ".join(ANIMALS)))
    try:
        task = WhoDidWhat(agents=tuple(agents), patients=tuple(patients), held_out_pairs=())
    except ValueError as error:
        ex.fail(str(error))
    ceiling = task.bag_of_words_ceiling()
    ex.expect(ceiling < 1 - 1e-9, _("the ceiling is 1: every bag names its agent, so word order no longer matters. "
                                    "Let at least two animals act on each other."))
    ex.expect(ceiling >= 0.8 - 1e-9, _("the ceiling is {ceiling:.3f}: too many bags hold two animals that can both act. "
                                "Make most pairs ones in which only one of the two animals is ever an agent.").format(
                                    ceiling=ceiling))
    ex.passed(_("the bag-of-words ceiling of your task is {ceiling:.3f}: a model without positions gets most "
                "sentences right, and only the bags of two possible agents need word order.").format(ceiling=ceiling))

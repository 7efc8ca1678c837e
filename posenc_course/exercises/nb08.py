"""Checkers for notebook 08 (position in today's models).

Each checker and what it expects::

    check_exercise_1(predicted, actual)  predict, then run: how many of Llama 3.1's 64 rotary pairs
                                         (head 128, base 500,000, original context 8192,
                                         high_freq_factor 4) keep their frequency
    check_exercise_2(letter)             explain why: the M-RoPE order for a 40 x 40 grid of patches
    check_exercise_3(fn)                 fn(n_layers, interval) -> SmolLM3's per-layer RoPE flags
                                         (1 = the layer uses RoPE), against transformers' own config
"""

from __future__ import annotations

from collections.abc import Callable

from posenc_course.exercises import Exercise, checker, choice, prediction
from posenc_course.i18n import N_, _

__all__ = ["check_exercise_1", "check_exercise_2", "check_exercise_3"]

check_exercise_1 = prediction(
    N_("Exercise 1 (predict the pairs Llama 3.1 keeps)"), variable="predicted_kept", tolerance=2,
    too_low=N_("Pair 0's wavelength is 2 pi and the ladder climbs by 500000^(2/128), about 1.23, per pair: "
               "it takes many pairs to reach 8192 / 4 = 2048 tokens."),
    too_high=N_("The slowest pair's wavelength is nearly 500000 x 2 pi, about 3 million tokens: the ladder "
                "passes 2048 before its middle."),
    why=N_("A pair is kept while its wavelength 2 pi 500000^(2i/128) stays under 8192 / 4 = 2048, that is "
           "i < 64 ln(2048 / 2 pi) / ln 500000, about 28.2: pairs 0 to 28. Those past 8192 (i >= 35) are "
           "divided by 8, and the few between are blended."),
)

check_exercise_2 = choice(
    N_("Exercise 2 (which M-RoPE order for a 40 x 40 grid)"),
    options={
        "a": N_("Sectioned: width gets 24 pairs, the most of any axis, so it can tell more columns apart."),
        "b": N_("Interleaved: every axis gets fast and slow pairs, so near columns differ visibly and far "
                "ones stay apart."),
        "c": N_("Either: the two orders use the same 64 frequencies, only given to the axes in another "
                "order, so the scores are the same."),
        "d": N_("Sectioned: width's pairs are the slowest of the head and never wrap around within 40 "
                "columns, so no two columns alias."),
    },
    answer="b",
    why=N_("In the sectioned order width reads pairs 40-63, the slowest of the head: with base 10^6 the "
           "fastest of them turns about 1.8e-4 rad per column, some 0.007 rad across 40 columns, so a score "
           "barely sees which column a patch is in. Interleaved, width's fastest pair turns about 0.65 rad per "
           "column and its slowest still separates the far columns."),
    hints={
        "a": N_("the number of pairs matters less than their speed: width's 24 pairs in the sectioned order "
                "are the 24 slowest, turning at most about 1.8e-4 rad per column (section 2's print)."),
        "c": N_("the set of frequencies is the same, but which axis gets which is not; a score depends on "
                "delta w only through the pairs that read w."),
        "d": N_("they do not wrap, but they hardly turn at all: 40 columns add up to less than 0.01 rad, "
                "so neighbouring columns look alike."),
    },
    nudge=N_("Section 2 prints how far width's pairs turn per column in each order: compare that with what "
             "40 columns need."),
)


@checker(N_("Exercise 3 (SmolLM3's NoPE layers)"))
def check_exercise_3(ex: Exercise, no_rope_layers: Callable[[int, int], list[int]]) -> None:
    """no_rope_layers(n_layers, interval) -> SmolLM3Config's no_rope_layers (1 = the layer uses RoPE)."""
    from transformers import SmolLM3Config  # the reference: transformers' own derivation

    for n_layers, interval in [(36, 4), (8, 4), (10, 3), (5, 1)]:
        got = ex.call(no_rope_layers, n_layers, interval)
        want = list(SmolLM3Config(num_hidden_layers=n_layers, no_rope_layer_interval=interval).no_rope_layers)
        try:
            got = [int(v) for v in got]
        except (TypeError, ValueError):
            ex.fail(_("return a list of {n_layers} flags (0 or 1), got {type}").format(
                n_layers=n_layers, type=type(got).__name__))
        ex.expect(len(got) == n_layers, _("return one flag per layer ({n_layers}), got {got}").format(
            n_layers=n_layers, got=len(got)))
        if got == want:
            continue
        if got == [1 - v for v in want]:
            ex.fail(_("the flags are the wrong way round: 1 means the layer USES RoPE (despite the name)"))
        if got == [int(layer % interval != 0) for layer in range(n_layers)]:
            ex.fail(_("off by one: the NoPE layers are layers interval-1, 2*interval-1, ... (the last of each "
                      "group)"))
        ex.expect(got == want, _("for {n_layers} layers, interval {interval}: expected {want}, got {got}").format(
            n_layers=n_layers, interval=interval, want=want, got=got))
    ex.passed(_("every interval-th layer without RoPE, as SmolLM3Config derives it"))

"""Checkers for notebook 08 (position in today's models).

Each checker and what it expects::

    check_exercise_1(predicted, actual)  predict, then run: how many of Llama 3.1's 64 rotary pairs
                                         (head 128, base 500,000, original context 8192,
                                         high_freq_factor 4) keep their frequency
    check_exercise_2(letter)             explain why: the M-RoPE order for a 40 x 40 grid of patches
    check_exercise_3(fn)                 design: fn(config) -> the inverse frequencies of a Llama-family config
                                         (default, linear, llama3), against transformers' own rotary module
                                         on configs the learner has not seen; the ready-made readers
                                         (LlamaRotaryEmbedding, posenc_lib's rotary_scheme) are refused
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from torch import Tensor

from posenc_course.exercises import Exercise, ExerciseFailure, checker, choice, prediction
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
        "a": N_("Sectioned: width's pairs are the slowest of the head and never wrap around within 40 "
                "columns, so no two columns alias."),
        "b": N_("Interleaved: it gives width more pairs than the sectioned order does, so more columns can be "
                "told apart."),
        "c": N_("Either: the two orders use the same 64 frequencies, only given to the axes in another "
                "order, so the scores are the same."),
        "d": N_("Interleaved: every axis gets fast and slow pairs, so near columns differ visibly and far "
                "ones stay apart."),
    },
    answer="d",
    why=N_("In the sectioned order width reads pairs 40-63, the slowest of the head: with base 10^6 the "
           "fastest of them turns about 1.8e-4 rad per column, some 0.007 rad across 40 columns, so a score "
           "barely sees which column a patch is in, and a model learns column position slowly if at all "
           "(section 5's toy had not after 150 steps). Interleaved, width's fastest pair turns about 0.65 rad "
           "per column and its slowest still separates the far columns."),
    hints={
        "a": N_("they do not wrap, but they hardly turn at all: 40 columns add up to less than 0.01 rad, "
                "so neighbouring columns give nearly the same scores."),
        "b": N_("count again: interleaved gives width 20 pairs, sectioned 24; what differs is which "
                "frequencies width gets, not how many."),
        "c": N_("the set of frequencies is the same, but which axis gets which is not; a score depends on "
                "delta w only through the pairs that read w."),
    },
    nudge=N_("Section 2 prints how far width's pairs turn per column in each order: compare that with what "
             "40 columns need."),
)


#: Configs the learner has not seen: (shape, rope_parameters). The last shape's head_dim is not
#: hidden_size // num_attention_heads, as in Gemma and Qwen3.
_SHAPES = [dict(hidden_size=64, num_attention_heads=4, head_dim=16),
           dict(hidden_size=96, num_attention_heads=2, head_dim=48),
           dict(hidden_size=64, num_attention_heads=2, head_dim=24)]
_PARAMS = [{"rope_type": "default", "rope_theta": 123456.0},
           {"rope_type": "linear", "rope_theta": 1e6, "factor": 4.0},
           {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
            "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
           {"rope_type": "llama3", "rope_theta": 10000.0, "factor": 16.0, "low_freq_factor": 2.0,
            "high_freq_factor": 8.0, "original_max_position_embeddings": 256}]


def _llama_config(shape: dict, params: dict):
    from transformers import LlamaConfig

    return LlamaConfig(**shape, num_key_value_heads=shape["num_attention_heads"], num_hidden_layers=1,
                       intermediate_size=64, vocab_size=64, max_position_embeddings=65536,
                       rope_parameters=dict(params))


@contextlib.contextmanager
def _shortcuts_refused(used: list[str]) -> Iterator[None]:
    """Within the block, the ready-made readers of a config's frequencies raise, and append their name to
    ``used``: transformers' ``LlamaRotaryEmbedding`` and ``ROPE_INIT_FUNCTIONS``, and posenc_lib's
    ``rope_frequencies`` (behind ``RotaryPE`` and ``hf_config.rotary_scheme``). ``rope_inv_freq`` stays."""
    from unittest import mock

    from transformers import modeling_rope_utils
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    from posenc_lib.rotary import scaling

    def refused(name: str) -> Callable[..., None]:
        def refuse(*args: object, **kwargs: object) -> None:
            used.append(name)
            raise RuntimeError(f"{name} is not allowed in this exercise")
        return refuse

    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.object(LlamaRotaryEmbedding, "__init__", refused("LlamaRotaryEmbedding")))
        stack.enter_context(mock.patch.dict(modeling_rope_utils.ROPE_INIT_FUNCTIONS, {
            kind: refused(f"ROPE_INIT_FUNCTIONS[{kind!r}]") for kind in modeling_rope_utils.ROPE_INIT_FUNCTIONS}))
        stack.enter_context(mock.patch.object(scaling, "rope_frequencies",
                                              refused("posenc_lib's rope_frequencies (RotaryPE, rotary_scheme)")))
        yield


@checker(N_("Exercise 3 (design: the frequencies of a config you have not seen)"))
def check_exercise_3(ex: Exercise, inv_freq_of: Callable[[object], Tensor]) -> None:
    """inv_freq_of(config) -> (head_dim // 2,) inverse frequencies of a Llama-family config, against the model's own
    rotary module on 12 configs (3 shapes x 4 rope_parameters: default, linear, two llama3)."""
    import torch
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    from posenc_lib.rotary.rope import rope_inv_freq

    for shape in _SHAPES:
        for params in _PARAMS:
            config = _llama_config(shape, params)
            want = LlamaRotaryEmbedding(config).inv_freq.float()
            used: list[str] = []
            with _shortcuts_refused(used):
                try:
                    got = ex.call(inv_freq_of, config)
                except ExerciseFailure:
                    if not used:
                        raise
                    ex.fail(_("your reader called {name}, which computes the answer for you; compute the "
                              "frequencies from config.rope_parameters yourself (rope_inv_freq for the plain "
                              "ones is fine)").format(name=used[0]))
            label = _("{kind}, base {base:g}, head_dim {d}").format(kind=params["rope_type"],
                                                                    base=params["rope_theta"], d=shape["head_dim"])
            if not isinstance(got, torch.Tensor):
                ex.fail(_("return a tensor of head_dim // 2 frequencies, got {type}").format(type=type(got).__name__))
            got = got.detach().float().flatten()
            if got.numel() != want.numel():
                ex.fail(_("{label}: expected {n} frequencies (head_dim // 2), got {got}; the head width is "
                          "config.head_dim, which need not be hidden_size // num_attention_heads").format(
                    label=label, n=want.numel(), got=got.numel()))
            if torch.allclose(got, want, rtol=1e-5, atol=1e-12):
                continue
            plain = rope_inv_freq(shape["head_dim"], params["rope_theta"]).float()
            if torch.allclose(got, rope_inv_freq(shape["head_dim"], 10000.0).float(), rtol=1e-5):
                ex.fail(_("{label}: you used base 10,000; in transformers 5.x the base is "
                          "config.rope_parameters['rope_theta'] (section 1)").format(label=label))
            if params["rope_type"] != "default" and torch.allclose(got, plain, rtol=1e-5):
                ex.fail(_("{label}: these are the plain frequencies; rope_type {kind} rescales them "
                          "(section 2)").format(label=label, kind=params["rope_type"]))
            if params["rope_type"] == "llama3" and torch.allclose(got, plain / params["factor"], rtol=1e-5):
                ex.fail(_("{label}: every pair divided by the factor is linear scaling; llama3 keeps the fast "
                          "pairs and blends a band between (section 2)").format(label=label))
            ex.fail(_("{label}: your frequencies differ from LlamaRotaryEmbedding's by up to {gap:.2g} (relative); "
                      "check the band edges: wavelength against original_max_position_embeddings divided by "
                      "low_freq_factor and high_freq_factor").format(
                label=label, gap=((got - want).abs() / want.abs().clamp_min(1e-30)).max().item()))
    ex.passed(_("your reader gives the model's own frequencies on 12 configs it had not seen: three head widths, "
                "default, linear and two llama3 settings"))

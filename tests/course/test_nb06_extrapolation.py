"""posenc_course.nb06_extrapolation: the measurements of notebook 06."""

from __future__ import annotations

import math

import pytest
import torch

from posenc_course.data import char_corpus
from posenc_course.nb06_extrapolation import train_char_lm
from posenc_lib.analysis.lm_metrics import per_position_loss
from posenc_lib.embeddings.learnable import LearnablePE
from posenc_lib.models import TinyTransformer
from posenc_lib.rotary.rope import RotaryPE


def test_train_char_lm_learns_and_is_seeded():
    corpus = char_corpus()
    a = train_char_lm(RotaryPE(16), corpus, 16, 30, seed=3, desc=None)
    b = train_char_lm(RotaryPE(16), corpus, 16, 30, seed=3, desc=None)
    for p, q in zip(a.parameters(), b.parameters()):
        assert torch.equal(p, q)
    x = corpus.valid[5000:5257].unfold(0, 33, 32)
    untrained = TinyTransformer(64, 64, 64, 4, 2, scheme=RotaryPE(16), causal=True, pool="none")
    trained_ppl, untrained_ppl = (math.exp(per_position_loss(m, x[:, :-1], x[:, 1:]).mean().item()) for m in (a, untrained))
    assert trained_ppl < 0.5 * untrained_ppl  # 30 steps already learn the character frequencies


def test_train_char_lm_builds_a_scheme_from_its_function_after_seeding():
    """A learnable table built by the function comes from the seed, whatever ran before."""
    corpus = char_corpus()
    tables = []
    for noise in (0, 1):
        torch.manual_seed(noise)  # a different global state before each call
        model = train_char_lm(lambda: LearnablePE(64, max_len=16), corpus, 16, 1, seed=3, desc=None)
        tables.append(model.scheme.weight.detach().clone())
    assert torch.equal(tables[0], tables[1])
    with pytest.raises(TypeError, match="scheme must be a PositionScheme or a function that builds one, got int"):
        train_char_lm(3, corpus, 16, 1, seed=0)


def test_the_figures_draw_each_method_in_its_own_style():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from posenc_course.nb06_extrapolation import STYLE_INDEX, excess_figure, perplexity_panel, style

    with pytest.raises(ValueError, match="name must be one of"):
        style("RoPE + magic")
    ppl = {name: np.full((3, 4), 8.0) + i for i, name in enumerate(["RoPE", "ALiBi"])}
    fig = perplexity_panel(ppl, ["RoPE", "ALiBi"], "t", [32, 64, 128, 256], {"Kneser-Ney 6-gram": [7.6] * 4})
    assert len(fig.axes[0].lines) >= 3
    with pytest.raises(AssertionError):  # two methods of one panel may not share a colour
        perplexity_panel({**ppl, "learnable": ppl["RoPE"], "learnable (clamped)": ppl["RoPE"]},
                         ["learnable", "learnable (clamped)"], "t", [32, 64, 128, 256], {})
    fig2 = excess_figure({"RoPE": torch.zeros(3, 32)}, torch.zeros(32))
    assert fig2.axes[0].get_xlabel().startswith("position")
    assert set(STYLE_INDEX) >= {"sinusoidal", "RoPE", "T5 bias", "ALiBi", "NoPE", "Transformer-XL"}
    plt.close("all")

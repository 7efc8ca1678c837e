"""posenc_lib.analysis.lm_metrics and the causal-LM plumbing notebook 06 measures with: per-position loss,
perplexity by length, attention entropy, window masks, with_scheme."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc_lib.analysis.lm_metrics import attention_entropy, per_position_loss, perplexity_at
from posenc_lib.attention import allowed_keys
from posenc_lib.embeddings.sinusoidal import SinusoidalPE
from posenc_lib.models import LayerSpec, TinyTransformer, with_scheme
from posenc_lib.rotary.rope import RotaryPE
from posenc_lib.scheme import NoPosition
from posenc_lib.score_bias.alibi import ALiBi



def lm(scheme, seed=0):
    torch.manual_seed(seed)
    return TinyTransformer(11, 11, 16, 2, 2, scheme=scheme, causal=True, pool="none").eval()


def tokens(batch=3, seq=20, seed=0):
    return torch.randint(0, 11, (batch, seq), generator=torch.Generator().manual_seed(seed))


def test_per_position_loss_is_the_mean_cross_entropy_of_each_position():
    model = lm(RotaryPE(8))
    x, y = tokens(seed=1), tokens(seed=2)
    got = per_position_loss(model, x, y)
    with torch.no_grad():
        logits = model(x)
    want = torch.stack([F.cross_entropy(logits[:, p], y[:, p]) for p in range(x.shape[1])])
    torch.testing.assert_close(got, want)


def test_causal_loss_of_a_prefix_equals_the_prefix_of_the_loss():
    """Why one pass at 8L gives the perplexity at every shorter length: position p sees only 0..p."""
    for scheme in (RotaryPE(8), ALiBi(2), SinusoidalPE(16), NoPosition()):
        model = lm(scheme)
        x, y = tokens(seq=24), tokens(seq=24, seed=5)
        full = per_position_loss(model, x, y)
        torch.testing.assert_close(per_position_loss(model, x[:, :8], y[:, :8]), full[:8], rtol=1e-5, atol=1e-5)
        assert perplexity_at(full, [8])[0] == pytest.approx(math.exp(full[:8].mean().item()), rel=1e-6)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0.0, 8.0), min_size=1, max_size=40))
def test_perplexity_at_is_exp_of_the_prefix_mean(values):
    losses = torch.tensor(values, dtype=torch.float64)
    lengths = sorted({1, len(values), max(1, len(values) // 2)})
    for n, p in zip(lengths, perplexity_at(losses, lengths)):
        assert p == pytest.approx(math.exp(sum(values[:n]) / n), rel=1e-9)
        assert math.exp(min(values[:n])) - 1e-9 <= p <= math.exp(max(values[:n])) + 1e-9


def test_window_mask_keeps_the_last_keys_and_the_sink():
    m = allowed_keys(6, window=2, sink=1)[None, None][0, 0]
    assert m.shape == (6, 6) and m.dtype == torch.bool
    assert m.tolist() == [
        [True, False, False, False, False, False],
        [True, True, False, False, False, False],
        [True, True, True, False, False, False],
        [True, False, True, True, False, False],
        [True, False, False, True, True, False],
        [True, False, False, False, True, True],
    ]
    assert torch.equal(allowed_keys(6, window=6)[None, None][0, 0], torch.ones(6, 6, dtype=torch.bool).tril())  # a full window is causal


def test_a_window_of_the_full_length_changes_nothing_and_a_short_one_changes_late_positions_only():
    model = lm(RotaryPE(8))
    x, y = tokens(seq=16), tokens(seq=16, seed=3)
    full = per_position_loss(model, x, y)
    torch.testing.assert_close(per_position_loss(model, x, y, attn_mask=allowed_keys(16, window=16)[None, None]), full)
    short = per_position_loss(model, x, y, attn_mask=allowed_keys(16, window=4)[None, None])
    torch.testing.assert_close(short[:4], full[:4])
    assert not torch.allclose(short[4:], full[4:])


def test_with_scheme_copies_the_weights_and_leaves_the_original_alone():
    model = lm(RotaryPE(8))
    x = tokens()
    with torch.no_grad():
        before = model(x)
    twin = with_scheme(model, RotaryPE(8, scaling={"rope_type": "linear", "factor": 4.0}))
    assert all(block.attn.scheme is twin.scheme for block in twin.blocks)
    assert all(block.attn.scheme is model.scheme for block in model.blocks) and model.scheme.config.get("rope_type") is None
    with torch.no_grad():
        torch.testing.assert_close(model(x), before)
        assert not torch.allclose(twin(x), before)
        # the same scheme again gives the same function, with separate weights
        same = with_scheme(model, RotaryPE(8))
        torch.testing.assert_close(same(x), before)
    assert same.embed.weight.data_ptr() != model.embed.weight.data_ptr()
    # linear PI with factor 4 at positions 4m is plain RoPE at positions m
    with torch.no_grad():
        torch.testing.assert_close(twin(x, positions=torch.arange(20)[None] * 4), before, rtol=1e-4, atol=1e-4)


def test_attention_weights_of_a_causal_lm_with_a_window_mask():
    for scheme in (RotaryPE(8), ALiBi(2), SinusoidalPE(16)):
        model = lm(scheme)
        x = tokens(seq=12)
        maps = model.attention_weights(x)
        assert len(maps) == 2 and maps[0].shape == (3, 2, 12, 12)
        torch.testing.assert_close(maps[0].sum(-1), torch.ones(3, 2, 12))
        assert torch.all(maps[1].triu(1) == 0)  # causal
        # the weights of the first layer are those the layer itself returns
        with torch.no_grad():
            h = model.scheme.add_to_embeddings(model.embed(x), torch.arange(12)[None].expand(3, 12))
            _, w = model.blocks[0].attn(model.blocks[0].ln1(h), torch.arange(12)[None].expand(3, 12), None, True,
                                        return_weights=True)
        torch.testing.assert_close(maps[0], w)
        masked = model.attention_weights(x, attn_mask=allowed_keys(12, window=3)[None, None])
        assert torch.all(masked[0][..., 5, :3] == 0) and torch.all(masked[0][..., 5, 3:6] > 0)


def test_attention_entropy_of_uniform_and_one_hot_weights():
    uniform = torch.full((2, 5, 5), 0.2)
    torch.testing.assert_close(attention_entropy(uniform), torch.full((2, 5), math.log(5)))
    torch.testing.assert_close(attention_entropy(torch.eye(4)), torch.zeros(4))


def test_with_scheme_leaves_a_per_layer_model_as_it_was():
    """A model with one scheme per layer (LayerSpec) keeps them all; the copy gets the new scheme everywhere."""
    rope, nope = RotaryPE(8), NoPosition()
    torch.manual_seed(0)
    model = TinyTransformer(11, 11, 16, 2, 2, causal=True, pool="none",
                            layer_specs=[LayerSpec(rope), LayerSpec(nope)]).eval()
    x = torch.randint(0, 11, (2, 9), generator=torch.Generator().manual_seed(1))
    before = model(x)
    twin = with_scheme(model, RotaryPE(8, scaling={"rope_type": "linear", "factor": 2.0}))
    assert [b.attn.scheme for b in model.blocks] == [rope, nope] and model.scheme is not twin.scheme
    assert all(b.attn.scheme is twin.scheme for b in twin.blocks)
    assert torch.equal(model(x), before) and not torch.allclose(twin(x), before)

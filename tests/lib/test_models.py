"""TinyTransformer: pooling and permutation invariance, padding, KV-cache decoding, sizes, input errors."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.testing import assert_close

from posenc_lib.models import LayerSpec, TinyTransformer, last_token_logits_two_ways, with_scheme
from posenc_lib.scheme import NoPosition

SCHEMES = ["none", "embedding", "rotary", "bias"]

pytestmark = pytest.mark.usefixtures("single_thread")


def model(scheme=None, seed: int = 0, **kwargs) -> TinyTransformer:
    torch.manual_seed(seed)
    kwargs = {"d_model": 16, "n_heads": 2, "n_layers": 2} | kwargs
    return TinyTransformer(11, 5, scheme=scheme, **kwargs).double().eval()


def tokens(batch: int, seq: int, seed: int = 0) -> torch.Tensor:
    return torch.randint(1, 11, (batch, seq), generator=torch.Generator().manual_seed(seed))


# --- permutation invariance with mean pooling ----------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_mean_pooled_output_is_permutation_invariant_without_positions(seed):
    net = model(seed=seed)
    x = tokens(3, 8, seed)
    perm = torch.randperm(8, generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        assert_close(net(x[:, perm]), net(x))
        # Per token it is equivariant: the outputs move with their tokens.
        assert_close(model(seed=seed, pool="none")(x[:, perm]), model(seed=seed, pool="none")(x)[:, perm])


@pytest.mark.parametrize("name", ["embedding", "rotary", "bias"])
def test_mean_pooled_output_depends_on_order_with_positions(make_scheme, name):
    net = model(make_scheme(name, 16))
    x = tokens(3, 8)
    perm = torch.tensor([3, 0, 7, 1, 6, 2, 5, 4])
    with torch.no_grad():
        assert not torch.allclose(net(x[:, perm]), net(x), atol=1e-4)


# --- pooling and padding --------------------------------------------------------------------------


@pytest.mark.parametrize("pool, shape", [("none", (2, 6, 5)), ("mean", (2, 5)), ("first", (2, 5)), ("last", (2, 5))])
def test_output_shapes(pool, shape):
    net = model(pool=pool)
    assert net(tokens(2, 6)).shape == shape
    assert net.features(tokens(2, 6)).shape == (2, 6, 16)


@pytest.mark.parametrize("name", SCHEMES)
@pytest.mark.parametrize("pool", ["mean", "first", "last"])
def test_right_padded_batch_gives_the_unpadded_outputs(make_scheme, name, pool):
    net = model(make_scheme(name, 16), pool=pool)
    a, b = tokens(1, 6, seed=1), tokens(1, 4, seed=2)
    batch = torch.cat([a, torch.cat([b, torch.zeros(1, 2, dtype=torch.long)], dim=1)])
    mask = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])
    with torch.no_grad():
        out = net(batch, attn_mask=mask)
        assert_close(out[0], net(a)[0])
        assert_close(out[1], net(b)[0])
        assert not torch.allclose(net(batch)[1], net(b)[0], atol=1e-4)  # the mask is what makes it work


@pytest.mark.parametrize("pool", ["mean", "first", "last"])
def test_left_padded_batch_with_positions_from_the_mask(make_scheme, pool):
    """Left padding is harmless when positions count from the first real token (cumsum of the mask - 1)."""
    net = model(make_scheme("embedding", 16), pool=pool)
    b = tokens(1, 4, seed=2)
    padded = torch.cat([torch.zeros(1, 2, dtype=torch.long), b], dim=1)
    mask = torch.tensor([[False, False, True, True, True, True]])
    positions = (mask.long().cumsum(-1) - 1).clamp_min(0)
    with torch.no_grad():
        assert_close(net(padded, positions=positions, attn_mask=mask), net(b))


# --- causal decoding with a KV cache --------------------------------------------------------------


@pytest.mark.parametrize("name", SCHEMES)
def test_last_token_logits_two_ways_agree(make_scheme, name):
    net = model(make_scheme(name, 16), causal=True, pool="none")
    full, cached = last_token_logits_two_ways(net, tokens(2, 9))
    assert full.shape == cached.shape == (2, 5)
    assert_close(cached, full)


@pytest.mark.parametrize("name", SCHEMES)
def test_token_by_token_decoding_equals_full_recomputation(make_scheme, name):
    net = model(make_scheme(name, 16), causal=True, pool="none")
    x = tokens(2, 7)
    cache = net.new_cache()
    with torch.no_grad():
        steps = torch.cat([net(x[:, i : i + 1], cache=cache) for i in range(7)], dim=1)
        assert_close(steps, net(x))
    assert [len(c) for c in cache] == [7, 7]


@pytest.mark.parametrize("name", ["embedding", "rotary", "bias"])
def test_cached_step_at_the_wrong_position_differs(make_scheme, name):
    """A decode step that restarts positions at 0 (a classic cache bug) gives other logits."""
    net = model(make_scheme(name, 16), causal=True, pool="none")
    x = tokens(1, 6)
    cache = net.new_cache()
    with torch.no_grad():
        full = net(x)[:, -1]
        net(x[:, :-1], cache=cache)
        wrong = net(x[:, -1:], positions=torch.zeros(1, 1, dtype=torch.long), cache=cache)[:, -1]
    assert not torch.allclose(wrong, full, atol=1e-4)


@pytest.mark.parametrize("name", SCHEMES)
def test_left_padded_batched_decoding_with_a_cache(make_scheme, name):
    """Batched generation: left pads masked out, positions from the mask, the mask grows with the cache."""
    net = model(make_scheme(name, 16), causal=True, pool="none")
    x = tokens(2, 6)
    x[1, :2] = 0
    mask = torch.ones(2, 6, dtype=torch.bool)
    mask[1, :2] = False
    positions = (mask.long().cumsum(-1) - 1).clamp_min(0)
    cache = net.new_cache()
    with torch.no_grad():
        full = net(x, positions=positions, attn_mask=mask)
        net(x[:, :5], positions=positions[:, :5], attn_mask=mask[:, :5], cache=cache)
        step = net(x[:, 5:], positions=positions[:, 5:], attn_mask=mask, cache=cache)
        assert_close(step[:, 0], full[:, 5])
        assert_close(full[1, 2:], net(x[1:, 2:])[0])  # the padded row equals its unpadded sequence
        # A mask for the new token alone is refused, before the cache is touched.
        with pytest.raises(ValueError, match=r"attn_mask of dim 2 must have shape \(batch, k_len\) = \(2, 7\), got \(2, 1\)"):
            net(x[:, 5:], attn_mask=mask[:, 5:], cache=cache)
    assert [len(c) for c in cache] == [6, 6]


def test_causal_model_ignores_future_tokens():
    net = model(causal=True, pool="none")
    x = tokens(2, 8)
    changed = x.clone()
    changed[:, 5:] = tokens(2, 3, seed=7)
    with torch.no_grad():
        assert_close(net(changed)[:, :5], net(x)[:, :5])
        assert not torch.allclose(net(changed)[:, 5:], net(x)[:, 5:], atol=1e-4)


# --- sizes, options and errors --------------------------------------------------------------------


def test_num_parameters_counts_position_tables_but_not_buffers(make_scheme):
    base = model().num_parameters()
    d, vocab, out, layers, ff = 16, 11, 5, 2, 64
    per_layer = 2 * 2 * d + (d * 3 * d + 3 * d) + (d * d + d) + (d * ff + ff) + (ff * d + d)
    assert base == vocab * d + layers * per_layer + 2 * d + (d * out + out)
    assert model(make_scheme("embedding", 16)).num_parameters() == base + 64 * 16
    scheme = make_scheme("none", 16)
    scheme.register_buffer("table", torch.zeros(64, 16))
    assert model(scheme).num_parameters() == base


def test_embed_scale_multiplies_token_embeddings_by_sqrt_d_model():
    plain, scaled = model(), model(embed_scale=True)
    x = tokens(1, 4)
    with torch.no_grad():
        scaled.embed.weight.copy_(plain.embed.weight / 16**0.5)
        assert_close(scaled(x), plain(x))


def test_custom_embed_module_replaces_the_token_embedding():
    torch.manual_seed(0)
    net = TinyTransformer(None, 3, d_model=8, n_heads=2, n_layers=1, embed=nn.Linear(4, 8))
    assert net(torch.randn(2, 5, 4)).shape == (2, 3)


def test_bad_pool():
    with pytest.raises(ValueError, match=r"pool must be one of 'none', 'mean', 'first', 'last', got 'max'"):
        TinyTransformer(10, 2, pool="max")


def test_missing_vocab_size():
    with pytest.raises(ValueError, match=r"vocab_size is required when no embed module is given"):
        TinyTransformer(None, 2)


def test_bad_positions_reach_the_caller():
    with pytest.raises(ValueError, match=r"positions must have shape \(batch, seq\) = \(2, 6\) or \(1, 6\), got \(2, 5\)"):
        model()(tokens(2, 6), positions=torch.zeros(2, 5, dtype=torch.long))


def test_convert_rope_checkpoint_gives_the_same_model_in_the_other_layout():
    from posenc_lib.rotary.rope import RotaryPE, convert_rope_checkpoint

    HD = 16  # d_model 32 over 2 heads

    def decoder(layout: str) -> TinyTransformer:
        torch.manual_seed(0)
        return TinyTransformer(11, 11, d_model=32, n_heads=2, n_layers=2, causal=True, pool="none",
                               scheme=RotaryPE(16, layout=layout))

    interleaved, half = decoder("interleaved"), decoder("half")
    state = interleaved.state_dict()
    half.load_state_dict(convert_rope_checkpoint(state, head_dim=HD, to="half"))
    tokens = torch.randint(0, 11, (3, 9), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        torch.testing.assert_close(half(tokens), interleaved(tokens))
    back = convert_rope_checkpoint(half.state_dict(), head_dim=HD, to="interleaved")
    assert all(torch.equal(back[name], t) for name, t in state.items())
    assert all(torch.equal(interleaved.state_dict()[name], t) for name, t in state.items())  # input left as it was
    changed = {name for name, t in convert_rope_checkpoint(state, HD, "half").items() if not torch.equal(t, state[name])}
    assert changed == {f"blocks.{i}.attn.qkv.{p}" for i in range(2) for p in ("weight", "bias")}


# --- per-layer schemes and windows (LayerSpec) ----------------------------------------------------


def test_layer_specs_of_the_shared_scheme_are_the_default_model(make_scheme):
    scheme = make_scheme("rotary", 16)
    x = tokens(2, 9)
    with torch.no_grad():
        assert_close(model(scheme, causal=True, layer_specs=[LayerSpec(scheme)] * 2)(x), model(scheme, causal=True)(x))


def test_each_layer_gets_its_own_scheme_and_window(make_scheme):
    rope, nope = make_scheme("rotary", 16), NoPosition()
    net = model(causal=True, n_layers=4, layer_specs=[LayerSpec(rope, window=3)] * 3 + [LayerSpec(nope)])
    assert [b.attn.scheme for b in net.blocks] == [rope, rope, rope, nope]
    assert [b.attn.window for b in net.blocks] == [3, 3, 3, None]
    weights = net.attention_weights(tokens(1, 8))
    i, j = torch.arange(8)[:, None], torch.arange(8)[None, :]
    assert all((w[..., i - j >= 3] == 0).all() for w in weights[:3]) and (weights[3][..., i - j >= 3] > 0).all()


def test_a_nope_layer_among_rope_layers_changes_the_output(make_scheme):
    rope = make_scheme("rotary", 16)
    x = tokens(2, 9)
    with torch.no_grad():
        mixed = model(causal=True, layer_specs=[LayerSpec(rope), LayerSpec(NoPosition())])(x)
        assert not torch.allclose(mixed, model(rope, causal=True)(x), atol=1e-4)


@pytest.mark.parametrize("specs, error, match", [
    ([], ValueError, r"layer_specs must be a list of n_layers=2 LayerSpec objects, got 0 items"),
    ("rope", ValueError, r"layer_specs must be a list of n_layers=2 .*got str"),
    ([LayerSpec(NoPosition()), NoPosition()], TypeError, r"layer_specs\[1\] must be a LayerSpec, got NoPosition"),
    ([LayerSpec(NoPosition()), LayerSpec("rope")], TypeError, r"layer_specs\[1\].scheme must be a PositionScheme"),
    ([LayerSpec(NoPosition()), LayerSpec(NoPosition(), window=0)], ValueError, r"window must be an int >= 1, got 0"),
])
def test_bad_layer_specs(specs, error, match):
    with pytest.raises(error, match=match):
        model(layer_specs=specs)


@pytest.mark.parametrize("name", ["none", "rotary"])
def test_queries_and_keys_give_the_attention_weights(make_scheme, name):
    """softmax(q k^T / sqrt(head_dim) + causal mask) of the recorded q and k is the model's own attention map."""
    net = model(make_scheme(name, 16), causal=True, pool="none")
    x = tokens(2, 7)
    weights = net.attention_weights(x)
    pairs = net.queries_and_keys(x)
    assert len(pairs) == len(weights) == 2
    causal = torch.ones(7, 7, dtype=torch.bool).tril()
    for (q, k), w in zip(pairs, weights):
        assert q.shape == k.shape == (2, 2, 7, 8)
        scores = (q @ k.transpose(-2, -1) / 8**0.5).masked_fill(~causal, float("-inf"))
        assert_close(scores.softmax(-1), w)


def test_convert_rope_checkpoint_reads_metas_names_and_raises_on_none():
    """Meta's Llama reference names its projections ``layers.N.attention.wq/wk``: interleaved rows, converted to
    the half layout as Hugging Face's conversion script permutes them (q and k, never v); a state with no
    projection the function knows raises instead of coming back unchanged."""
    from posenc_lib.rotary.rope import convert_qk_weight, convert_rope_checkpoint

    torch.manual_seed(0)
    meta = {f"layers.0.attention.{name}.weight": torch.randn(32, 32) for name in ("wq", "wk", "wv", "wo")}
    half = convert_rope_checkpoint(meta, head_dim=8, to="half", n_heads=4)
    for name in ("wq", "wk"):
        key = f"layers.0.attention.{name}.weight"
        assert torch.equal(half[key], convert_qk_weight(meta[key], 4, to="half")) and not torch.equal(half[key], meta[key])
    for name in ("wv", "wo"):
        assert torch.equal(half[f"layers.0.attention.{name}.weight"], meta[f"layers.0.attention.{name}.weight"])
    with pytest.raises(ValueError, match="no query or key projection"):
        convert_rope_checkpoint({"layers.0.attention.wv.weight": torch.zeros(8, 8)}, 8, "half")


def test_with_scheme_keeps_the_layout_and_allows_the_same_one():
    """with_scheme refuses a RotaryPE of another layout on a RoPE model (the logits would change silently: 0.08 in the
    review), and still takes another scaling, or any layout on a model without RoPE."""
    from posenc_lib.rotary.rope import RotaryPE

    model = TinyTransformer(20, 20, d_model=32, n_heads=4, scheme=RotaryPE(8, layout="interleaved"), causal=True, pool="none")
    with pytest.raises(ValueError, match="layout='half'.*trained with layout='interleaved'"):
        with_scheme(model, RotaryPE(8))
    scaled = with_scheme(model, RotaryPE(8, layout="interleaved", scaling={"rope_type": "linear", "factor": 2.0}))
    assert scaled.blocks[0].attn.scheme.config["factor"] == 2.0
    assert isinstance(with_scheme(TinyTransformer(20, 20, d_model=32, n_heads=4), RotaryPE(8)).scheme, RotaryPE)

"""Grouped-query attention (``n_kv_heads``) in MultiHeadAttention, KVCache and TinyTransformer.

Checked against Hugging Face's ``LlamaAttention`` built from a ``LlamaConfig`` with
``num_key_value_heads < num_attention_heads`` (no download): the same output over a whole sequence,
and, token by token with a cache, the same output and the very keys and values Hugging Face's
``DynamicCache`` holds. Then the defining property (GQA is multi-head attention whose key/value
heads are repeated for their group of query heads), every attention path (fused SDPA, the explicit
weights, ALiBi's folded per-key bias, Transformer-XL's q/k bias), cached decoding of a model, and a
checkpoint converted between RoPE layouts. Largest differences in ``MAX_ERRORS`` (``pytest -s`` prints them).
"""

from __future__ import annotations

import pytest
import torch
import transformers  # the reference; pinned in requirements.txt
from conformance import MaxErrors
from transformers.models.llama import modeling_llama as llama

from posenc_lib import ALiBi, KVCache, MultiHeadAttention, NoPosition, RotaryPE, TinyTransformer, build_scheme
from posenc_lib.interop.hf import additive_causal_mask, attention_from_hf
from posenc_lib.interop.hf_config import rotary_scheme
from posenc_lib.models import last_token_logits_two_ways
from posenc_lib.rotary.rope import convert_rope_checkpoint

MAX_ERRORS = MaxErrors()
OUTPUT = 1e-5  # attention outputs: other summation orders
HIDDEN, HEADS, KV_HEADS, HEAD_DIM = 64, 4, 2, 16


@pytest.fixture(scope="module", autouse=True)
def report_max_errors():
    yield
    MAX_ERRORS.report("max |difference| per comparison (ours vs LlamaAttention and DynamicCache; GQA vs MHA):")


def llama_gqa(kv_heads: int = KV_HEADS, **rope) -> tuple[llama.LlamaAttention, llama.LlamaRotaryEmbedding]:
    """A tiny Llama attention layer with ``kv_heads`` key/value heads for 4 query heads (biases on), and its rotary module."""
    config = transformers.LlamaConfig(
        hidden_size=HIDDEN, num_attention_heads=HEADS, num_key_value_heads=kv_heads, head_dim=HEAD_DIM,
        num_hidden_layers=1, intermediate_size=64, vocab_size=32, attention_bias=True,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, **rope})
    config._attn_implementation = "eager"
    torch.manual_seed(21)
    return llama.LlamaAttention(config, layer_idx=0).eval(), llama.LlamaRotaryEmbedding(config)


def inputs(seq: int = 19, batch: int = 2, seed: int = 22) -> torch.Tensor:
    return torch.randn(batch, seq, HIDDEN, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("kv_heads", [KV_HEADS, 1])  # grouped-query, and multi-query attention
@pytest.mark.parametrize("rope", [{}, {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                       "high_freq_factor": 4.0, "original_max_position_embeddings": 8}])
def test_output_equals_hugging_face_llama_attention_with_fewer_key_value_heads(kv_heads, rope):
    hf, rotary = llama_gqa(kv_heads, **rope)
    ours = attention_from_hf(hf, rotary_scheme(hf.config))
    assert (ours.n_heads, ours.n_kv_heads) == (HEADS, kv_heads)
    assert ours.qkv.weight.shape == (HIDDEN + 2 * kv_heads * HEAD_DIM, HIDDEN)  # q rows, then k, then v
    x = inputs()
    with torch.no_grad():
        expected, _ = hf(x, rotary(x, torch.arange(x.shape[1])[None]), additive_causal_mask(x.shape[1]))
        got = ours(x, causal=True)
        with_weights, _ = ours(x, causal=True, return_weights=True)  # the explicit path repeats k and v itself
    name = f"LlamaAttention, {kv_heads} of {HEADS} key/value heads{', llama3' if rope else ''}"
    MAX_ERRORS.record(f"output {name}", got, expected, tol=OUTPUT)
    MAX_ERRORS.record(f"output (explicit weights) {name}", with_weights, expected, tol=OUTPUT)


def test_cached_decoding_equals_hugging_face_and_caches_its_keys_and_values():
    """A prefix, then one token at a time: each step's output is Hugging Face's, and our KVCache holds what its
    DynamicCache holds (rotated keys, values), 2 key/value heads: half the bytes of 4 heads."""
    hf, rotary = llama_gqa()
    ours = attention_from_hf(hf, rotary_scheme(hf.config))
    x = inputs(seq=12)
    theirs_cache, cache = transformers.DynamicCache(config=hf.config), KVCache()
    with torch.no_grad():
        for start, stop in ((0, 7), (7, 8), (8, 9), (9, 12)):
            step = x[:, start:stop]
            positions = torch.arange(start, stop)[None]
            mask = torch.zeros(stop - start, stop).masked_fill(
                torch.arange(stop)[None, :] > positions[0, :, None], float("-inf"))[None, None]
            expected, _ = hf(step, rotary(step, positions), mask, cache=theirs_cache)
            got = ours(step, positions.expand(2, -1), causal=True, cache=cache)
            MAX_ERRORS.record("cached decoding output, 2 of 4 key/value heads", got, expected, tol=OUTPUT)
    layer = theirs_cache.layers[0]
    assert cache.n_kv_heads == KV_HEADS and cache.k.shape == layer.keys.shape == (2, KV_HEADS, 12, HEAD_DIM)
    MAX_ERRORS.record("cached keys (rotated) vs DynamicCache", cache.k, layer.keys, tol=1e-6)
    MAX_ERRORS.record("cached values vs DynamicCache", cache.v, layer.values, tol=1e-6)
    assert cache.nbytes() == 2 * 2 * KV_HEADS * 12 * HEAD_DIM * 4  # k and v, float32: HEADS / KV_HEADS times less


@pytest.mark.parametrize("scheme", ["none", "rope", "rope-interleaved", "alibi", "t5", "transformer-xl"])
@pytest.mark.parametrize("causal", [True, False])
def test_gqa_is_multi_head_attention_with_each_key_value_head_repeated_for_its_group(scheme, causal):
    """Query head h reads key/value head h // (heads / kv_heads): the MHA layer whose k and v rows are repeated per
    group gives the same output, on every path (fused SDPA, folded ALiBi column, float mask, explicit weights)."""
    if scheme == "alibi" and not causal:
        scheme = "alibi-encoder"

    def make():
        if scheme == "rope-interleaved":
            return RotaryPE(HEAD_DIM, layout="interleaved")
        if scheme == "alibi-encoder":
            return ALiBi(HEADS, causal=False)
        return build_scheme(scheme, HIDDEN, HEADS)

    torch.manual_seed(23)
    gqa = MultiHeadAttention(HIDDEN, HEADS, make(), n_kv_heads=KV_HEADS)
    mha = MultiHeadAttention(HIDDEN, HEADS, make())
    mha.scheme.load_state_dict(gqa.scheme.state_dict())  # the scheme's parameters (T5, Transformer-XL)
    group = HEADS // KV_HEADS
    for name in ("weight", "bias"):
        q, k, v = getattr(gqa.qkv, name).split([HIDDEN, KV_HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM])
        repeat = [t.unflatten(0, (KV_HEADS, HEAD_DIM)).repeat_interleave(group, dim=0).flatten(0, 1) for t in (k, v)]
        getattr(mha.qkv, name).data.copy_(torch.cat([q, *repeat]))
    mha.out.load_state_dict(gqa.out.state_dict())
    x = inputs(seq=11)
    positions = torch.arange(11)[None] + torch.tensor([[3], [40]])  # consecutive rows (Transformer-XL's shift needs them)
    with torch.no_grad():
        expected, weights = mha(x, positions, causal=causal, return_weights=True)
        fused = gqa(x, positions, causal=causal)
        got, got_weights = gqa(x, positions, causal=causal, return_weights=True)
    MAX_ERRORS.record(f"GQA = MHA with repeated k, v ({scheme}, causal={causal})", fused, expected, tol=OUTPUT)
    MAX_ERRORS.record(f"GQA = MHA with repeated k, v ({scheme}, causal={causal})", got, expected, tol=OUTPUT)
    MAX_ERRORS.record(f"GQA weights = MHA weights ({scheme}, causal={causal})", got_weights, weights, tol=1e-6)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_a_gqa_model_decodes_with_a_cache_and_converts_between_layouts(layout):
    """TinyTransformer(n_kv_heads=2): the cache holds 2 heads per layer; cached last-token logits equal a full pass;
    convert_rope_checkpoint splits the fused qkv rows as d_model queries, then keys and values in equal parts."""
    torch.manual_seed(25)
    make = lambda to: TinyTransformer(40, 40, d_model=HIDDEN, n_heads=HEADS, n_kv_heads=KV_HEADS, n_layers=2,  # noqa: E731
                                      causal=True, pool="none", scheme=RotaryPE(HEAD_DIM, layout=to)).eval()
    model = make(layout)
    assert model.blocks[0].attn.qkv.weight.shape == (HIDDEN + 2 * KV_HEADS * HEAD_DIM, HIDDEN)
    tokens = torch.randint(0, 40, (3, 14), generator=torch.Generator().manual_seed(26))
    full, cached = last_token_logits_two_ways(model, tokens)
    MAX_ERRORS.record(f"GQA model: cached = full last-token logits ({layout})", cached, full, tol=OUTPUT)
    cache = model.new_cache()
    with torch.no_grad():
        model(tokens, cache=cache)
    assert all(c.n_kv_heads == KV_HEADS and len(c) == 14 for c in cache)
    other = "interleaved" if layout == "half" else "half"
    converted = make(other)
    converted.load_state_dict(convert_rope_checkpoint(model.state_dict(), HEAD_DIM, to=other))
    with torch.no_grad():
        MAX_ERRORS.record(f"GQA model converted {layout} -> {other}: logits", converted(tokens), model(tokens), tol=OUTPUT)


def test_n_kv_heads_equal_to_n_heads_is_the_plain_layer():
    """The default builds the same parameters, from the same random draws, as 0.2's layer: q, k, v thirds of qkv."""
    torch.manual_seed(27)
    plain = MultiHeadAttention(HIDDEN, HEADS, NoPosition())
    torch.manual_seed(27)
    explicit = MultiHeadAttention(HIDDEN, HEADS, NoPosition(), n_kv_heads=HEADS)
    assert plain.n_kv_heads == HEADS and plain.qkv.weight.shape == (3 * HIDDEN, HIDDEN)
    assert all(torch.equal(a, b) for a, b in zip(plain.state_dict().values(), explicit.state_dict().values()))


def test_torch_floor_has_the_sdpa_keyword_the_attention_passes():
    """The attention passes ``enable_gqa=`` to ``F.scaled_dot_product_attention``, which torch 2.5 added: the
    package's torch floor must be at least 2.5 (0.3 allowed 2.4, where every forward would raise a TypeError)."""
    import inspect
    import pathlib
    import tomllib

    import posenc_lib.attention

    assert "enable_gqa=" in inspect.getsource(posenc_lib.attention)
    pyproject = tomllib.loads((pathlib.Path(__file__).parents[2] / "pyproject.toml").read_text())
    floors = [dep.split(">=")[1] for dep in pyproject["project"]["dependencies"] if dep.startswith("torch>=")]
    assert len(floors) == 1 and tuple(int(part) for part in floors[0].split(".")[:2]) >= (2, 5), floors

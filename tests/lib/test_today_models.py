"""The position schemes of today's models (notebook 08) against Hugging Face transformers, on tiny configs built offline.

LongRoPE (Phi-3), proportional RoPE (Gemma 4), M-RoPE (Qwen2-VL, Qwen2.5-VL, Qwen3-VL), Llama 4's
attention temperature on NoPE layers, DeepSeek-V3's decoupled RoPE (MLA), Cohere's interleaved
layout, Gemma 3's bases by layer type. Every comparison records its largest absolute difference
in ``MAX_ERRORS``; ``pytest tests/lib/test_today_models.py -s`` prints the table at the end. Tolerances:
0 where our arithmetic is Hugging Face's, operation for operation (frequencies, tables); 1e-6 for a
rotation written another way; 1e-5 for attention outputs (other summation orders).
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import transformers  # the reference; pinned in requirements.txt, so a missing package fails
from conformance import MaxErrors  # noqa: E402
from transformers import (  # noqa: E402
    Cohere2Config,
    CohereConfig,
    DeepseekV3Config,
    Gemma3TextConfig,
    Gemma4TextConfig,
    Llama4TextConfig,
    LlamaConfig,
    Phi3Config,
    Qwen2_5_VLConfig,
    Qwen2_5_VLTextConfig,
    Qwen2VLConfig,
    Qwen2VLTextConfig,
    Qwen3VLTextConfig,
)
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS  # noqa: E402
from transformers.models.cohere import modeling_cohere as cohere  # noqa: E402
from transformers.models.cohere2 import modeling_cohere2 as cohere2  # noqa: E402
from transformers.models.deepseek_v3 import modeling_deepseek_v3 as deepseek  # noqa: E402
from transformers.models.gemma3 import modeling_gemma3 as gemma3  # noqa: E402
from transformers.models.gemma4 import modeling_gemma4 as gemma4  # noqa: E402
from transformers.models.llama import modeling_llama as llama  # noqa: E402
from transformers.models.llama4 import modeling_llama4 as llama4  # noqa: E402
from transformers.models.phi3 import modeling_phi3 as phi3  # noqa: E402
from transformers.models.qwen2_5_vl import modeling_qwen2_5_vl as qwen2_5_vl  # noqa: E402
from transformers.models.qwen2_vl import modeling_qwen2_vl as qwen2_vl  # noqa: E402
from transformers.models.qwen3_vl import modeling_qwen3_vl as qwen3_vl  # noqa: E402

from posenc_lib.interop.hf_config import rotary_scheme  # noqa: E402
from posenc_lib.attention import MultiHeadAttention  # noqa: E402
from posenc_lib.interop.hf import additive_causal_mask, attention_from_hf
from posenc_lib.rotary.decoupled import DecoupledRoPE  # noqa: E402
from posenc_lib.rotary.mrope import MRoPE, default_mrope_section, mrope_axes, mrope_cos_sin, mrope_positions  # noqa: E402
from posenc_lib.rotary.rope import convert_rope_checkpoint  # noqa: E402
from posenc_lib.rotary.rope import (
    RotaryPE,
    apply_rope_qk,
    rope_cos_sin,
    rope_inv_freq,
    rope_layout_permutation,
)
from posenc_lib.rotary.scaling import rope_frequencies  # noqa: E402
from posenc_lib.rotary.temperature import QueryTemperature, query_temperature  # noqa: E402
from posenc_lib.scheme import NoPosition  # noqa: E402

MAX_ERRORS = MaxErrors()
record = MAX_ERRORS.record
EXACT, ROTATION, OUTPUT = 0.0, 1e-6, 1e-5

HIDDEN, N_HEADS, HEAD_DIM, LAYERS = 64, 4, 16, 2
TINY = dict(hidden_size=HIDDEN, num_attention_heads=N_HEADS, num_key_value_heads=N_HEADS, num_hidden_layers=LAYERS,
            intermediate_size=64, vocab_size=128, bos_token_id=0, eos_token_id=1, pad_token_id=2)


@pytest.fixture(scope="module", autouse=True)
def report_max_errors():
    yield
    MAX_ERRORS.report()


def halves(cos: torch.Tensor) -> torch.Tensor:
    """Our half-width table as Hugging Face's full-width one: cat(cos, cos)."""
    return torch.cat((cos, cos), dim=-1)


def qk(seq: int, batch: int = 2, head_dim: int = HEAD_DIM, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(2, batch, N_HEADS, seq, head_dim, generator=gen).unbind(0)


def compare_rotation(name: str, scheme, positions: torch.Tensor, hf_tables, apply, widen=halves) -> None:
    """Our tables (widened to Hugging Face's full width by ``widen``) and rotated q, k against ``apply``'s, under ``name``."""
    hf_cos, hf_sin = hf_tables
    cos, sin = scheme.cos_sin(positions)
    record(f"cos/sin {name}", widen(cos), hf_cos, tol=EXACT)
    record(f"cos/sin {name}", widen(sin), hf_sin, tol=EXACT)
    q, k = qk(positions.shape[-1], batch=positions.shape[0])
    hf_q, hf_k = apply(q, k, hf_cos, hf_sin)
    ours_q, ours_k = scheme.rotate_qk(q, k, positions)
    record(f"rotated q, k {name}", ours_q, hf_q, tol=ROTATION)
    record(f"rotated q, k {name}", ours_k, hf_k, tol=ROTATION)


# ============================================================================ LongRoPE (Phi-3)

L0, PHI_MAX = 64, 512  # original_max_position_embeddings, max_position_embeddings: factor 8


def longrope_factors(pairs: int, seed: int = 0) -> tuple[list[float], list[float]]:
    """Fitted-looking rescale factors: short ones near 1, long ones growing from 1 to ~factor (as Phi-3's)."""
    gen = torch.Generator().manual_seed(seed)
    short = (1 + 0.5 * torch.rand(pairs, generator=gen)).tolist()
    long = torch.linspace(1.0, PHI_MAX / L0, pairs).mul(1 + 0.1 * torch.rand(pairs, generator=gen)).tolist()
    return short, long


def phi3_config(partial: float = 1.0, **rope) -> tuple[Phi3Config, dict]:
    """A tiny Phi-3 with LongRoPE, and our rope-parameter dict for the same frequencies."""
    short, long = longrope_factors(int(HEAD_DIM * partial) // 2)
    params = {"rope_type": "longrope", "rope_theta": 10000.0, "short_factor": short, "long_factor": long,
              "partial_rotary_factor": partial, **rope}
    config = Phi3Config(**TINY, max_position_embeddings=PHI_MAX, original_max_position_embeddings=L0,
                        rope_parameters=dict(params))
    ours = {**params, "original_max_position_embeddings": L0}
    if "factor" not in rope:  # Hugging Face reads the model's length; our dict carries it
        ours["max_position_embeddings"] = PHI_MAX
    return config, ours


LONGROPE_CASES = {"phi3": {}, "partial 0.5": {"partial": 0.5}, "factor given": {"factor": 4.0},
                  "attention_factor given": {"attention_factor": 1.5}}


@pytest.mark.parametrize("case", list(LONGROPE_CASES))
def test_longrope_frequencies_match_rope_init_functions(case):
    config, ours = phi3_config(**LONGROPE_CASES[case])
    for seq_len in (None, L0 // 2, L0, L0 + 1, 4 * PHI_MAX):
        hf_inv_freq, hf_factor = ROPE_INIT_FUNCTIONS["longrope"](config, seq_len=seq_len)
        inv_freq, factor = rope_frequencies(HEAD_DIM, ours, seq_len=seq_len)
        record("inv_freq longrope (ROPE_INIT_FUNCTIONS)", inv_freq, hf_inv_freq, tol=EXACT)
        assert factor == hf_factor
    expected = {"factor given": math.sqrt(1 + math.log(4.0) / math.log(L0)), "attention_factor given": 1.5}
    assert factor == pytest.approx(expected.get(case, math.sqrt(1 + math.log(PHI_MAX / L0) / math.log(L0))), abs=1e-15)


@pytest.mark.parametrize("partial", [1.0, 0.5])
def test_longrope_tables_and_rotation_match_phi3(partial):
    """Below, at and above L0: Phi3RotaryEmbedding picks short or long factors per call; so does RotaryPE."""
    config, ours = phi3_config(partial)
    hf = phi3.Phi3RotaryEmbedding(config)
    scheme = RotaryPE(HEAD_DIM, rotary_fraction=partial, scaling={k: v for k, v in ours.items() if k != "partial_rotary_factor"})
    gen = torch.Generator().manual_seed(1)
    position_sets = {
        "short": torch.arange(L0 // 2)[None],
        "short (exactly L0)": torch.arange(L0)[None],
        "long (L0 + 1)": torch.arange(L0 + 1)[None],
        "long (random, batch)": torch.randint(0, 3 * L0, (2, 40), generator=gen),
        "short again": torch.arange(10, 30)[None],  # the choice is per call, not sticky
    }
    for name, positions in position_sets.items():
        compare_rotation(f"Phi3RotaryEmbedding longrope (partial {partial})", scheme, positions,
                         hf(torch.zeros(1), positions), phi3.apply_rotary_pos_emb)
        long = positions.max() + 1 > L0
        assert torch.equal(scheme.cos_sin(positions)[0], rope_cos_sin(
            positions, scheme.inv_freq_long if long else scheme.inv_freq, scheme.attention_factor)[0]), name


@pytest.mark.slow
@torch.no_grad()
def test_longrope_choice_under_torch_compile():
    """Compiled, the short/long choice is a tensor op (torch.where), as in Hugging Face: same result as eager both ways."""
    torch._dynamo.reset()
    _, ours = phi3_config()
    scheme = RotaryPE(HEAD_DIM, scaling={k: v for k, v in ours.items() if k != "partial_rotary_factor"})
    compiled = torch.compile(scheme.rotate_qk, fullgraph=True, dynamic=False)
    for positions in (torch.arange(20)[None], torch.arange(L0 - 10, L0 + 10)[None]):
        q, k = qk(20)
        for ours_x, eager_x in zip(compiled(q, k, positions), scheme.rotate_qk(q, k, positions)):
            record("rotated q, k longrope compiled vs eager", ours_x, eager_x, tol=ROTATION)


# ============================================================================ proportional RoPE (Gemma 4) = p-RoPE

GLOBAL_HEAD_DIM = 32


def gemma4_config(full_rope: dict | None = None) -> Gemma4TextConfig:
    kwargs = {} if full_rope is None else {"rope_parameters": {
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}, "full_attention": full_rope}}
    return Gemma4TextConfig(
        **{**TINY, "num_key_value_heads": N_HEADS}, head_dim=HEAD_DIM, global_head_dim=GLOBAL_HEAD_DIM,
        layer_types=["sliding_attention", "full_attention"], vocab_size_per_layer_input=128,
        hidden_size_per_layer_input=8, **kwargs,
    )


PROPORTIONAL_CASES = {  # name -> Gemma 4's full_attention rope parameters (None: the class default, p = 0.25, theta 1e6)
    "gemma4 default": None,
    "p 0.5 factor 8": {"rope_type": "proportional", "partial_rotary_factor": 0.5, "rope_theta": 1e6, "factor": 8.0},
    "p 1": {"rope_type": "proportional", "partial_rotary_factor": 1.0, "rope_theta": 10000.0},
    "p 0.3 (not a multiple)": {"rope_type": "proportional", "partial_rotary_factor": 0.3, "rope_theta": 1e6},
}


@pytest.mark.parametrize("case", list(PROPORTIONAL_CASES))
def test_proportional_matches_gemma4(case):
    config = gemma4_config(PROPORTIONAL_CASES[case])
    params = config.rope_parameters["full_attention"]
    hf_inv_freq, hf_factor = ROPE_INIT_FUNCTIONS["proportional"](config, layer_type="full_attention")
    scheme = RotaryPE(GLOBAL_HEAD_DIM, base=params["rope_theta"], rotary_fraction=params["partial_rotary_factor"],
                      scaling={k: v for k, v in params.items() if k not in ("rope_theta", "partial_rotary_factor")})
    record("inv_freq proportional (ROPE_INIT_FUNCTIONS)", scheme.inv_freq, hf_inv_freq, tol=EXACT)
    assert scheme.attention_factor == hf_factor == 1.0
    kept = int(params["partial_rotary_factor"] * GLOBAL_HEAD_DIM // 2)
    assert scheme.rotary_dim == GLOBAL_HEAD_DIM and (scheme.inv_freq[kept:] == 0).all() and (scheme.inv_freq[:kept] > 0).all()

    hf = gemma4.Gemma4TextRotaryEmbedding(config)
    positions = torch.randint(0, 5000, (2, 24), generator=torch.Generator().manual_seed(2))
    for layer_type, ours in (("full_attention", scheme), ("sliding_attention", RotaryPE(HEAD_DIM, base=10000.0))):
        hf_cos, hf_sin = hf(torch.zeros(1), positions, layer_type)
        cos, sin = ours.cos_sin(positions)
        record("cos/sin Gemma4TextRotaryEmbedding", halves(cos), hf_cos, tol=EXACT)
        record("cos/sin Gemma4TextRotaryEmbedding", halves(sin), hf_sin, tol=EXACT)
        q, _ = qk(24, head_dim=ours.rotary_dim)
        ours_q, _ = ours.rotate_qk(q, q, positions)
        record("rotated q Gemma 4 apply_rotary_pos_emb", ours_q, gemma4.apply_rotary_pos_emb(q, hf_cos, hf_sin), tol=ROTATION)
    # the truncated pairs are not rotated at all: dims kept .. d/2 and their half-layout partners pass through
    q, k = qk(24, head_dim=GLOBAL_HEAD_DIM)
    ours_q, _ = scheme.rotate_qk(q, k, positions)
    half = GLOBAL_HEAD_DIM // 2
    for lo, hi in ((kept, half), (half + kept, GLOBAL_HEAD_DIM)):
        assert torch.equal(ours_q[..., lo:hi], q[..., lo:hi])


def test_proportional_differs_from_gpt_neox_partial_rotary():
    """The two meanings of partial_rotary_factor: p-RoPE keeps the full head's fastest frequencies; GPT-NeoX recomputes them."""
    proportional, _ = rope_frequencies(32, {"rope_type": "proportional", "partial_rotary_factor": 0.25})
    neox, _ = rope_frequencies(32, {"partial_rotary_factor": 0.25})
    assert proportional.shape == (16,) and neox.shape == (4,)
    assert torch.equal(proportional[:4], rope_inv_freq(32)[:4])  # theta_i = base^(-2i/32)
    assert torch.equal(neox, rope_inv_freq(8))  # theta_i = base^(-2i/8): another, faster-decaying set
    assert not torch.equal(proportional[:4], neox)
    full, _ = rope_frequencies(32, {"rope_type": "proportional", "partial_rotary_factor": 1.0})
    assert torch.equal(full, rope_inv_freq(32))  # p = 1 is plain RoPE


# ============================================================================ M-RoPE (Qwen2-VL, Qwen2.5-VL, Qwen3-VL)

SECTION, SECTION_3VL = [2, 3, 3], [4, 2, 2]  # Qwen2-VL's 16:24:24 and Qwen3-VL's 24:20:20, for head_dim 16


def mrope_modules():
    """(name, HF rotary module, its apply function, base, mrope_section, interleaved)."""
    text = {**TINY, "head_dim": HEAD_DIM}
    q2 = Qwen2VLTextConfig(**text, rope_parameters={"rope_type": "default", "rope_theta": 1e6, "mrope_section": SECTION})
    q25 = Qwen2_5_VLTextConfig(**text, rope_parameters={"rope_type": "default", "rope_theta": 1e6, "mrope_section": SECTION})
    q3 = Qwen3VLTextConfig(**text, rope_parameters={"rope_type": "default", "rope_theta": 5e6, "mrope_section": SECTION_3VL,
                                                    "mrope_interleaved": True})
    return [
        ("Qwen2-VL", qwen2_vl.Qwen2VLRotaryEmbedding(q2), qwen2_vl.apply_rotary_pos_emb, 1e6, SECTION, False),
        ("Qwen2.5-VL", qwen2_5_vl.Qwen2_5_VLRotaryEmbedding(q25), qwen2_5_vl.apply_rotary_pos_emb, 1e6, SECTION, False),
        ("Qwen3-VL", qwen3_vl.Qwen3VLTextRotaryEmbedding(q3), qwen3_vl.apply_rotary_pos_emb, 5e6, SECTION_3VL, True),
    ]


@pytest.mark.parametrize("index", range(3), ids=["Qwen2-VL", "Qwen2.5-VL", "Qwen3-VL"])
def test_mrope_matches_qwen_vl(index):
    name, hf, apply, base, section, interleaved = mrope_modules()[index]
    layout = mrope_positions(frames=3, height=2, width=4, n_text_before=3, n_text_after=2)  # (29, 3)
    gen = torch.Generator().manual_seed(3)
    position_sets = [layout.T[:, None, :], torch.randint(0, 4000, (3, 2, 17), generator=gen)]  # (3, batch, seq)
    inv_freq = rope_inv_freq(HEAD_DIM, base)
    for positions in position_sets:
        hf_cos, hf_sin = hf(torch.zeros(1), positions)
        cos, sin = mrope_cos_sin(positions, inv_freq, section, interleaved)
        record(f"cos/sin {type(hf).__name__}", halves(cos), hf_cos, tol=EXACT)
        record(f"cos/sin {type(hf).__name__}", halves(sin), hf_sin, tol=EXACT)
        q, k = qk(positions.shape[-1], batch=positions.shape[1])
        hf_q, hf_k = apply(q, k, hf_cos, hf_sin)
        ours_q, ours_k = apply_rope_qk(q, k, cos, sin)
        record(f"rotated q, k {name} apply_rotary_pos_emb", ours_q, hf_q, tol=ROTATION)
        record(f"rotated q, k {name} apply_rotary_pos_emb", ours_k, hf_k, tol=ROTATION)
    # the scheme: token indices looked up in the layout's coordinate table
    scheme = MRoPE(HEAD_DIM, layout, section, base=base, mrope_interleaved=interleaved)
    hf_cos, hf_sin = hf(torch.zeros(1), layout.T[:, None, :])
    q, k = qk(layout.shape[0], batch=1)
    hf_q, hf_k = apply(q, k, hf_cos, hf_sin)
    ours_q, ours_k = scheme.rotate_qk(q, k, torch.arange(layout.shape[0])[None])
    record(f"rotated q, k {name} MRoPE scheme", ours_q, hf_q, tol=ROTATION)
    record(f"rotated q, k {name} MRoPE scheme", ours_k, hf_k, tol=ROTATION)


def test_mrope_axes_follow_the_two_orderings():
    assert mrope_axes(8, [2, 3, 3]).tolist() == [0, 0, 1, 1, 1, 2, 2, 2]
    assert mrope_axes(8, [4, 2, 2], mrope_interleaved=True).tolist() == [0, 1, 2, 0, 1, 2, 0, 0]
    # Qwen3-VL's published section for head_dim 128: h and w on pairs 1, 4, ..., 58 and 2, 5, ..., 59
    axes = mrope_axes(64, [24, 20, 20], mrope_interleaved=True)
    assert (axes[1:60:3] == 1).all() and (axes[2:60:3] == 2).all() and torch.bincount(axes).tolist() == [24, 20, 20]


@given(positions=st.lists(st.integers(-5000, 100_000), min_size=1, max_size=12),
       section=st.sampled_from([(8, 0, 0), (2, 3, 3), (4, 2, 2), (0, 4, 4), (3, 3, 2)]), interleaved=st.booleans())
def test_mrope_with_equal_coordinates_is_1d_rope(positions, section, interleaved):
    """t = h = w = m (a text token): every pair turns by m theta_i, whichever axis it reads: exactly 1-D RoPE."""
    m = torch.tensor(positions)
    try:
        cos, sin = mrope_cos_sin(m.expand(3, -1), rope_inv_freq(HEAD_DIM), section, interleaved)
    except ValueError:  # a section the cycling order cannot honour
        assert interleaved
        return
    expected_cos, expected_sin = rope_cos_sin(m, rope_inv_freq(HEAD_DIM))
    assert torch.equal(cos, expected_cos) and torch.equal(sin, expected_sin)


def test_mrope_of_a_text_layout_is_rope_in_attention():
    """An MRoPE layer over text-only coordinates gives RotaryPE's attention output (same weights)."""
    n = 12
    text = torch.arange(n)[:, None].expand(n, 3)
    torch.manual_seed(0)
    ours = MultiHeadAttention(HIDDEN, N_HEADS, MRoPE(HEAD_DIM, text, SECTION_3VL, mrope_interleaved=True))
    rope = MultiHeadAttention(HIDDEN, N_HEADS, RotaryPE(HEAD_DIM))
    rope.load_state_dict(ours.state_dict())
    x = torch.randn(2, n, HIDDEN, generator=torch.Generator().manual_seed(4))
    record("MRoPE (text layout) vs RotaryPE attention", ours(x, causal=True), rope(x, causal=True), tol=EXACT)


def test_mrope_positions_match_get_rope_index():
    """Qwen2-VL's get_rope_index on a tiny video (more frames than rows or columns: the text after resumes at
    s + max(H, W)) and Qwen2.5-VL's on an image, both between text, with the vision tower's 2x2 spatial merge."""
    text = {**TINY, "rope_parameters": {"rope_type": "default", "rope_theta": 1e6, "mrope_section": SECTION}}
    vision = dict(depth=1, hidden_size=HIDDEN, num_heads=2, spatial_merge_size=2, patch_size=2, temporal_patch_size=1)
    models = [
        (qwen2_vl.Qwen2VLModel(Qwen2VLConfig(text_config=text, vision_config={**vision, "embed_dim": 16, "mlp_ratio": 1})),
         "video", (5, 2, 3)),
        (qwen2_5_vl.Qwen2_5_VLModel(Qwen2_5_VLConfig(text_config=text, vision_config={**vision, "intermediate_size": 16,
                                                                                        "out_hidden_size": HIDDEN})),
         "image", (1, 3, 2)),
    ]
    for model, kind, (frames, height, width) in models:
        before, after = 3, 4
        n_vision = frames * height * width
        ids = torch.zeros(1, before + n_vision + after, dtype=torch.long)
        token_type = torch.zeros_like(ids)
        token_type[0, before : before + n_vision] = 2 if kind == "video" else 1
        grid = torch.tensor([[frames, 2 * height, 2 * width]])  # before the 2x2 merge
        hf_positions, _ = model.get_rope_index(ids, token_type, **{f"{kind}_grid_thw": grid})
        ours = mrope_positions(frames, height, width, n_text_before=before, n_text_after=after)
        assert torch.equal(ours, hf_positions[:, 0].T), type(model).__name__
    assert ours[-after, 0] == before + max(height, width)


# ============================================================================ Llama 4: attention temperature on NoPE layers


def llama4_config(**kwargs) -> Llama4TextConfig:
    config = Llama4TextConfig(**{**TINY, "head_dim": HEAD_DIM, "intermediate_size_mlp": 64, "use_qk_norm": False,
                                 "attention_chunk_size": None, **kwargs})
    config._attn_implementation = "eager"
    return config


@pytest.mark.parametrize("floor_scale, attn_scale", [(4, 0.5), (8192, 0.1)])
def test_query_temperature_matches_llama4_nope_attention(floor_scale, attn_scale):
    """A NoPE layer of Llama 4 (use_rope 0, qk-norm off): our layer with QueryTemperature gives its attention output."""
    config = llama4_config(no_rope_layers=[0, 1], floor_scale=floor_scale, attn_scale=attn_scale)
    torch.manual_seed(5)
    hf = llama4.Llama4TextAttention(config, layer_idx=0).eval()
    assert not hf.use_rope and hf.attn_temperature_tuning
    ours = attention_from_hf(hf, QueryTemperature(floor_scale, attn_scale))
    seq = 24
    x = torch.randn(2, seq, HIDDEN, generator=torch.Generator().manual_seed(6))
    with torch.no_grad():
        expected, _ = hf(x, None, additive_causal_mask(seq))
        got = ours(x, causal=True)
    record(f"attention output Llama4TextAttention NoPE (floor_scale {floor_scale})", got, expected, tol=OUTPUT)
    if floor_scale == 4:  # the temperature really varies along this sequence
        scales = query_temperature(torch.arange(seq), floor_scale, attn_scale)
        assert scales[2] == 1 and scales[3] == pytest.approx(1 + attn_scale * math.log(2)) and scales[-1] > 1.9


# ============================================================================ DeepSeek-V3: decoupled RoPE (MLA)

NOPE, ROPE_DIM, V_DIM, KV_RANK, Q_RANK = 8, 8, 16, 16, 24
# DeepSeek-V3's rope_parameters (its config.json on the Hugging Face Hub, deepseek-ai/DeepSeek-V3), and
# DeepSeek-V2-Lite's mscale pair (deepseek-ai/DeepSeek-V2-Lite), where the softmax gain is not 1
DEEPSEEK_YARN = {
    "V3": {"rope_type": "yarn", "factor": 40.0, "original_max_position_embeddings": 4096, "beta_fast": 32,
           "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0, "rope_theta": 10000.0},
    "V2-Lite mscale": {"rope_type": "yarn", "factor": 40.0, "original_max_position_embeddings": 4096, "beta_fast": 32,
                       "beta_slow": 1, "mscale": 0.707, "mscale_all_dim": 0.707, "rope_theta": 10000.0},
}


def deepseek_config(yarn: str, interleave: bool) -> DeepseekV3Config:
    config = DeepseekV3Config(
        **TINY, qk_nope_head_dim=NOPE, qk_rope_head_dim=ROPE_DIM, v_head_dim=V_DIM, kv_lora_rank=KV_RANK,
        q_lora_rank=Q_RANK, max_position_embeddings=163840, rope_parameters=dict(DEEPSEEK_YARN[yarn]),
        rope_interleave=interleave, n_routed_experts=4, num_experts_per_tok=2, n_group=1, topk_group=1,
    )
    config._attn_implementation = "eager"
    return config


def decoupled(yarn: str, interleave: bool) -> DecoupledRoPE:
    params = dict(DEEPSEEK_YARN[yarn])
    return DecoupledRoPE(NOPE, ROPE_DIM, base=params.pop("rope_theta"), layout="interleaved" if interleave else "half",
                         scaling=params)


@pytest.mark.parametrize("yarn", list(DEEPSEEK_YARN))
def test_decoupled_rope_tables_and_scale_match_deepseek_v3(yarn):
    config = deepseek_config(yarn, interleave=True)
    hf = deepseek.DeepseekV3RotaryEmbedding(config)
    scheme = decoupled(yarn, interleave=True)
    positions = torch.randint(0, 20000, (2, 30), generator=torch.Generator().manual_seed(7))
    hf_cos, hf_sin = hf(torch.zeros(1), positions)
    cos, sin = scheme.rope.cos_sin(positions)
    record("cos/sin DeepseekV3RotaryEmbedding (YaRN)", halves(cos), hf_cos, tol=EXACT)
    record("cos/sin DeepseekV3RotaryEmbedding (YaRN)", halves(sin), hf_sin, tol=EXACT)
    assert scheme.rope.attention_factor == hf.attention_scaling
    hf_scaling = deepseek.DeepseekV3Attention(config, layer_idx=0).scaling
    assert scheme.score_scale(NOPE + ROPE_DIM) == pytest.approx(hf_scaling, rel=1e-12)
    if yarn == "V3":
        assert scheme.softmax_gain == pytest.approx((0.1 * math.log(40) + 1) ** 2)


def test_decoupled_rope_interleave_is_a_fixed_permutation_of_deepseeks():
    """apply_rotary_pos_emb_interleave returns the rotated pairs in half order (evens, then odds): our interleaved
    rotation, permuted; the scores are the same."""
    scheme = decoupled("V3", interleave=True)
    positions = torch.randint(0, 9000, (2, 20), generator=torch.Generator().manual_seed(8))
    hf_cos, hf_sin = deepseek.DeepseekV3RotaryEmbedding(deepseek_config("V3", True))(torch.zeros(1), positions)
    q, k = qk(20, head_dim=NOPE + ROPE_DIM)
    hf_q_rot, hf_k_rot = deepseek.apply_rotary_pos_emb_interleave(q[..., NOPE:], k[..., NOPE:], hf_cos, hf_sin)
    ours_q, ours_k = scheme.rotate_qk(q, k, positions)
    perm = rope_layout_permutation(ROPE_DIM)
    record("rotated q, k DeepSeek-V3 interleave (up to the permutation)", ours_q[..., NOPE:][..., perm], hf_q_rot, tol=ROTATION)
    record("rotated q, k DeepSeek-V3 interleave (up to the permutation)", ours_k[..., NOPE:][..., perm], hf_k_rot, tol=ROTATION)
    assert not torch.allclose(ours_q[..., NOPE:], hf_q_rot)  # the permutation is real
    assert torch.equal(ours_q[..., :NOPE], q[..., :NOPE])
    hf_scores = torch.cat((q[..., :NOPE], hf_q_rot), -1) @ torch.cat((k[..., :NOPE], hf_k_rot), -1).transpose(-1, -2)
    record("scores DeepSeek-V3 interleave", ours_q @ ours_k.transpose(-1, -2), hf_scores, tol=OUTPUT)


def mla_attention(module: deepseek.DeepseekV3Attention, scheme: DecoupledRoPE, x: torch.Tensor) -> torch.Tensor:
    """MLA written out from the module's weights, with our rotation: the oracle side of the comparison.

    q = W_qb norm(W_qa x) per head = [q_nope | q_rope]; the latent c = norm(W_kva x)[:kv_rank] gives per head
    [k_nope | v] = W_kvb c; k_rope = W_kva x [kv_rank:] is one vector per token, shared by all heads.
    """
    b, s, _ = x.shape
    q = module.q_b_proj(module.q_a_layernorm(module.q_a_proj(x))).view(b, s, N_HEADS, NOPE + ROPE_DIM).transpose(1, 2)
    latent, k_rope = module.kv_a_proj_with_mqa(x).split([KV_RANK, ROPE_DIM], dim=-1)
    kv = module.kv_b_proj(module.kv_a_layernorm(latent)).view(b, s, N_HEADS, NOPE + V_DIM).transpose(1, 2)
    k_nope, v = kv.split([NOPE, V_DIM], dim=-1)
    k = torch.cat((k_nope, k_rope[:, None].expand(b, N_HEADS, s, ROPE_DIM)), dim=-1)
    q, k = scheme.rotate_qk(q, k, torch.arange(s)[None])
    scores = q @ k.transpose(-1, -2) * scheme.score_scale(NOPE + ROPE_DIM) + additive_causal_mask(s)
    y = scores.softmax(-1) @ v
    return module.o_proj(y.transpose(1, 2).reshape(b, s, N_HEADS * V_DIM))


@pytest.mark.parametrize("interleave", [True, False], ids=["rope_interleave", "half"])
@pytest.mark.parametrize("yarn", list(DEEPSEEK_YARN))
def test_decoupled_rope_gives_deepseek_v3_attention_output(yarn, interleave):
    config = deepseek_config(yarn, interleave)
    torch.manual_seed(9)
    hf = deepseek.DeepseekV3Attention(config, layer_idx=0).eval()
    rotary = deepseek.DeepseekV3RotaryEmbedding(config)
    seq = 20
    x = torch.randn(2, seq, HIDDEN, generator=torch.Generator().manual_seed(10))
    positions = torch.arange(seq)[None]
    with torch.no_grad():
        expected, _ = hf(x, rotary(x, positions), additive_causal_mask(seq))
        got = mla_attention(hf, decoupled(yarn, interleave), x)
    record(f"attention output DeepseekV3Attention (MLA, {yarn})", got, expected, tol=OUTPUT)


# ============================================================================ Cohere's interleaved layout, Cohere2's local-only RoPE


def test_cohere_rotary_is_the_interleaved_layout():
    """CohereRotaryEmbedding repeats each frequency twice (repeat_interleave) and rotates (x[2i], x[2i+1]): our "interleaved"."""
    config = CohereConfig(**TINY, rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
    hf = cohere.CohereRotaryEmbedding(config)
    scheme = RotaryPE(HEAD_DIM, base=10000.0, layout="interleaved")
    positions = torch.randint(0, 8000, (2, 25), generator=torch.Generator().manual_seed(11))
    compare_rotation("CohereRotaryEmbedding (interleaved)", scheme, positions, hf(torch.zeros(1), positions),
                     cohere.apply_rotary_pos_emb, widen=lambda table: table.repeat_interleave(2, -1))


def test_cohere2_rotates_only_its_sliding_window_layers():
    """Cohere2: a sliding layer = interleaved RoPE + window; a full layer = no position at all (NoPE)."""
    window = 5
    config = Cohere2Config(**TINY, layer_types=["sliding_attention", "full_attention"], sliding_window=window,
                           rope_parameters={"rope_type": "default", "rope_theta": 50000.0})
    config._attn_implementation = "eager"
    rotary = cohere2.Cohere2RotaryEmbedding(config)
    seq = 16
    x = torch.randn(2, seq, HIDDEN, generator=torch.Generator().manual_seed(12))
    position_embeddings = rotary(x, torch.arange(seq)[None])
    torch.manual_seed(13)
    for layer, scheme, mask in ((0, RotaryPE(HEAD_DIM, base=50000.0, layout="interleaved"), additive_causal_mask(seq, window)),
                                (1, NoPosition(), additive_causal_mask(seq))):
        hf = cohere2.Cohere2Attention(config, layer_idx=layer).eval()
        ours = attention_from_hf(hf, scheme)
        assert ours.window == (window if layer == 0 else None)
        with torch.no_grad():
            expected, _ = hf(x, position_embeddings, mask)
            got = ours(x, causal=True)
        record(f"attention output Cohere2Attention ({config.layer_types[layer]})", got, expected, tol=OUTPUT)


# ============================================================================ Gemma 3: one base per layer type


def test_gemma3_bases_by_layer_type():
    """Gemma 3 (4B and larger): local layers base 1e4, global layers base 1e6 with linear scaling x8."""
    config = Gemma3TextConfig(
        **TINY, head_dim=HEAD_DIM, sliding_window=8, layer_types=["sliding_attention", "full_attention"],
        rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                         "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1_000_000.0}})
    hf = gemma3.Gemma3RotaryEmbedding(config)
    schemes = {"sliding_attention": RotaryPE(HEAD_DIM, base=10000.0),
               "full_attention": RotaryPE(HEAD_DIM, base=1e6, scaling={"rope_type": "linear", "factor": 8.0})}
    positions = torch.randint(0, 30000, (2, 21), generator=torch.Generator().manual_seed(14))
    for layer_type, scheme in schemes.items():
        compare_rotation(f"Gemma3RotaryEmbedding {layer_type}", scheme, positions,
                         hf(torch.zeros(1), positions, layer_type), gemma3.apply_rotary_pos_emb)


# ============================================================================ the bridge itself, on a plain Llama layer


LLAMA_ROPE = {
    "default": {"rope_type": "default", "rope_theta": 10000.0},
    "llama3 (L0 = 8, reached)": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                 "original_max_position_embeddings": 8, "rope_theta": 500000.0},
}


@pytest.mark.parametrize("rope", list(LLAMA_ROPE))
def test_attention_from_hf_llama_with_rope(rope):
    """A Llama layer (with bias) and our layer holding its weights, with the config's scheme (rotary_scheme)."""
    config = LlamaConfig(**TINY, head_dim=HEAD_DIM, attention_bias=True, rope_parameters=dict(LLAMA_ROPE[rope]))
    config._attn_implementation = "eager"
    torch.manual_seed(15)
    hf = llama.LlamaAttention(config, layer_idx=0).eval()
    ours = attention_from_hf(hf, rotary_scheme(config))
    seq = 18
    x = torch.randn(2, seq, HIDDEN, generator=torch.Generator().manual_seed(16))
    with torch.no_grad():
        expected, _ = hf(x, llama.LlamaRotaryEmbedding(config)(x, torch.arange(seq)[None]), additive_causal_mask(seq))
        got = ours(x, causal=True)
    record(f"attention output LlamaAttention (bias, {rope})", got, expected, tol=OUTPUT)


# ============================================================================ a checkpoint across layouts: Llama -> Llama 4


def llama_and_llama4(init_std: float = 0.3):
    """A random Hugging Face Llama (half layout) and an empty Llama 4 text model of the same dense shape (interleaved)."""
    shape = dict(vocab_size=64, hidden_size=HIDDEN, intermediate_size=128, num_hidden_layers=2, num_attention_heads=N_HEADS,
                 num_key_value_heads=2, head_dim=HEAD_DIM, max_position_embeddings=128, tie_word_embeddings=False,
                 rms_norm_eps=1e-5, initializer_range=init_std, rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
    torch.manual_seed(17)
    llama_model = transformers.LlamaForCausalLM(LlamaConfig(**shape)).eval()
    llama4_model = transformers.Llama4ForCausalLM(Llama4TextConfig(
        **shape, intermediate_size_mlp=128, no_rope_layers=[1, 1], use_qk_norm=False, moe_layers=[],
        attention_chunk_size=1024, attn_temperature_tuning=False)).eval()
    return llama_model, llama4_model


def test_a_llama_checkpoint_runs_in_llama4_once_its_qk_rows_are_permuted():
    """Llama pairs halves, Llama 4 (Meta's complex code) neighbours: convert_rope_checkpoint makes the logits equal
    (grouped-query keys included); without it the checkpoint loads silently and predicts something else."""
    llama_model, llama4_model = llama_and_llama4()
    tokens = torch.randint(0, 64, (2, 40), generator=torch.Generator().manual_seed(18))

    def rename(state):
        return {name.replace(".mlp.", ".feed_forward."): t for name, t in state.items()}

    with torch.no_grad():
        expected = llama_model(tokens).logits
        llama4_model.load_state_dict(rename(convert_rope_checkpoint(llama_model.state_dict(), HEAD_DIM, "interleaved")))
        record("logits Llama -> Llama 4 (converted)", llama4_model(tokens).logits, expected, tol=1e-3)
        llama4_model.load_state_dict(rename(llama_model.state_dict()))  # no error: the silent mistake
        skipped = llama4_model(tokens).logits
    assert (skipped.argmax(-1) == expected.argmax(-1)).float().mean() < 0.5
    back = convert_rope_checkpoint(convert_rope_checkpoint(llama_model.state_dict(), HEAD_DIM, "interleaved"), HEAD_DIM, "half")
    assert all(torch.equal(back[name], t) for name, t in llama_model.state_dict().items())
    with pytest.raises(ValueError, match=r"head_dim must divide the rows of .*q_proj.weight \(64\), got head_dim=6"):
        convert_rope_checkpoint(llama_model.state_dict(), 6, "interleaved")


def test_the_old_flag_interleaved_still_works_with_a_deprecation_warning_at_the_callers_line():
    """0.4 calls M-RoPE's order flag mrope_interleaved= (Hugging Face's config key), so that "interleaved" names
    one thing in MRoPE's constructor, the pair layout; 0.3's interleaved= stays until 0.4."""
    coords = mrope_positions(1, 3, 3, n_text_before=1)
    with pytest.warns(DeprecationWarning, match="now called mrope_interleaved") as caught:
        old = MRoPE(HEAD_DIM, coords, interleaved=True)
    assert old.mrope_interleaved and caught[0].filename == __file__
    with pytest.warns(DeprecationWarning) as caught:
        assert old.interleaved and caught[0].filename == __file__
    new = MRoPE(HEAD_DIM, coords, mrope_interleaved=True)
    assert old.mrope_section == new.mrope_section
    with pytest.warns(DeprecationWarning) as caught:
        axes = mrope_axes(8, [4, 2, 2], interleaved=True)
    assert torch.equal(axes, mrope_axes(8, [4, 2, 2], mrope_interleaved=True)) and caught[0].filename == __file__
    with pytest.warns(DeprecationWarning) as caught:
        section = default_mrope_section(64, interleaved=True)
    assert section == [24, 20, 20] and caught[0].filename == __file__
    inv_freq = rope_inv_freq(HEAD_DIM)
    with pytest.warns(DeprecationWarning) as caught:
        cos, _ = mrope_cos_sin(coords.T, inv_freq, new.mrope_section, interleaved=True)
    assert torch.equal(cos, mrope_cos_sin(coords.T, inv_freq, new.mrope_section, True)[0]) and caught[0].filename == __file__

"""posenc_lib.rotary.rope and rope_scaling against Hugging Face transformers (built from config objects, no downloads).

Every comparison records its largest absolute difference in ``MAX_ERRORS``; run with
``pytest tests/lib/test_rope_conformance.py -s`` to print the table at the end.
"""

from __future__ import annotations

import math

import pytest
import torch

import transformers  # the reference; pinned in requirements.txt, so a missing package fails
from transformers import GPTNeoXConfig, LlamaConfig  # noqa: E402
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS  # noqa: E402
from transformers.models.gpt_neox import modeling_gpt_neox as neox  # noqa: E402
from transformers.models.gptj import modeling_gptj as gptj  # noqa: E402
from transformers.models.llama import modeling_llama as llama  # noqa: E402

from posenc_lib.rotary.rope import RotaryPE, apply_rope, apply_rope_qk, rope_cos_sin, rope_inv_freq  # noqa: E402
from posenc_lib.rotary.scaling import rope_frequencies  # noqa: E402

from conformance import MaxErrors  # noqa: E402

MAX_ERRORS = MaxErrors()
record = MAX_ERRORS.record

HEAD_DIM, N_HEADS, MAX_POS = 64, 4, 256
# rope_type -> (our config, the rope_parameters for LlamaConfig(max_position_embeddings=MAX_POS))
# Hugging Face's dynamic NTK reads L0 from config.max_position_embeddings; ours from the dict.
SCALINGS = {
    "default": ({"rope_theta": 10000.0}, {"rope_type": "default", "rope_theta": 10000.0}),
    "linear": ({"rope_type": "linear", "factor": 4.0}, {"rope_type": "linear", "factor": 4.0}),
    "dynamic": (
        {"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": MAX_POS},
        {"rope_type": "dynamic", "factor": 2.0},
    ),
    "yarn": (
        {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 64, "rope_theta": 500000.0},
        {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 64, "rope_theta": 500000.0},
    ),
    "yarn_mscale_untruncated": (
        {"rope_type": "yarn", "factor": 40.0, "original_max_position_embeddings": 64, "mscale": 1.0,
         "mscale_all_dim": 0.707, "beta_fast": 24, "beta_slow": 2, "truncate": False},
        {"rope_type": "yarn", "factor": 40.0, "original_max_position_embeddings": 64, "mscale": 1.0,
         "mscale_all_dim": 0.707, "beta_fast": 24, "beta_slow": 2, "truncate": False},
    ),
    "yarn_attention_factor": (
        {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 128, "attention_factor": 1.25},
        {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 128, "attention_factor": 1.25},
    ),
    "llama3": (
        {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
         "original_max_position_embeddings": 128, "rope_theta": 500000.0},
        {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
         "original_max_position_embeddings": 128, "rope_theta": 500000.0},
    ),
    "llama3_no_band": (  # Llama 4 Scout: low_freq_factor == high_freq_factor, every wavelength kept or divided
        {"rope_type": "llama3", "factor": 16.0, "low_freq_factor": 1.0, "high_freq_factor": 1.0,
         "original_max_position_embeddings": 96, "rope_theta": 500000.0},
        {"rope_type": "llama3", "factor": 16.0, "low_freq_factor": 1.0, "high_freq_factor": 1.0,
         "original_max_position_embeddings": 96, "rope_theta": 500000.0},
    ),
}


@pytest.fixture(scope="module", autouse=True)
def report_max_errors():
    yield
    MAX_ERRORS.report()


def llama_config(rope_parameters: dict) -> LlamaConfig:
    return LlamaConfig(
        hidden_size=HEAD_DIM * N_HEADS, num_attention_heads=N_HEADS, head_dim=HEAD_DIM,
        max_position_embeddings=MAX_POS, rope_parameters=dict(rope_parameters),
    )


@pytest.mark.parametrize("name", [n for n in SCALINGS if n != "default"])
def test_inverse_frequencies_match_rope_init_functions(name):
    ours, theirs = SCALINGS[name]
    config = llama_config(theirs)
    for seq_len in ([None, MAX_POS // 2, MAX_POS, 3 * MAX_POS, 8 * MAX_POS + 5] if name == "dynamic" else [None]):
        hf_inv_freq, hf_factor = ROPE_INIT_FUNCTIONS[theirs["rope_type"]](config, seq_len=seq_len)
        inv_freq, factor = rope_frequencies(HEAD_DIM, ours, seq_len=seq_len or MAX_POS)
        assert inv_freq.dtype == torch.float32
        record(f"inv_freq {name}", inv_freq, hf_inv_freq)
        record(f"attention_factor {name}", torch.tensor(factor), torch.tensor(hf_factor), tol=1e-12)


def test_default_inverse_frequencies_match_llama():
    for base in (10000.0, 500000.0, 1e6):
        config = llama_config({"rope_type": "default", "rope_theta": base})
        hf_inv_freq, hf_factor = llama.LlamaRotaryEmbedding.compute_default_rope_parameters(config)
        record("inv_freq default", rope_inv_freq(HEAD_DIM, base), hf_inv_freq, tol=0.0)
        assert rope_frequencies(HEAD_DIM, {"rope_theta": base}) == (pytest.approx(hf_inv_freq), hf_factor)


@pytest.mark.parametrize("name", list(SCALINGS))
def test_cos_sin_match_llama_rotary_embedding(name):
    ours, theirs = SCALINGS[name]
    scheme = RotaryPE(HEAD_DIM, base=ours.get("rope_theta", 10000.0), scaling={k: v for k, v in ours.items() if k != "rope_theta"})
    gen = torch.Generator().manual_seed(0)
    position_sets = [
        torch.arange(MAX_POS).unsqueeze(0),
        torch.randint(0, 4096, (2, 33), generator=gen),  # KV-cache offsets, gaps, beyond the trained length
        torch.arange(4 * MAX_POS).unsqueeze(0),  # dynamic: longer than L0 rescales
    ]
    x = torch.zeros(1, dtype=torch.float32)
    for positions in position_sets:
        # a fresh module each time: Hugging Face's dynamic NTK keeps the largest length it has seen
        # (until one shorter than L0 comes), ours depends only on the current positions
        hf = llama.LlamaRotaryEmbedding(llama_config(theirs))
        hf_cos, hf_sin = hf(x, positions)  # (batch, seq, head_dim) = cat(half, half)
        cos, sin = scheme.cos_sin(positions, torch.float32)
        record(f"cos/sin LlamaRotaryEmbedding {name}", torch.cat((cos, cos), -1), hf_cos)
        record(f"cos/sin LlamaRotaryEmbedding {name}", torch.cat((sin, sin), -1), hf_sin)
        if name == "default":
            direct = rope_cos_sin(positions, rope_inv_freq(HEAD_DIM))
            record("cos/sin rope_cos_sin default", torch.cat((direct[0], direct[0]), -1), hf_cos)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_apply_rope_matches_apply_rotary_pos_emb(dtype):
    gen = torch.Generator().manual_seed(1)
    hf = llama.LlamaRotaryEmbedding(llama_config({"rope_type": "default", "rope_theta": 10000.0}))
    positions = torch.randint(0, 2048, (3, 40), generator=gen)
    q = torch.randn(3, N_HEADS, 40, HEAD_DIM, generator=gen).to(dtype)
    k = torch.randn(3, 2, 40, HEAD_DIM, generator=gen).to(dtype)  # grouped-query: fewer key heads
    hf_cos, hf_sin = hf(q, positions)
    hf_q, hf_k = llama.apply_rotary_pos_emb(q, k, hf_cos, hf_sin)
    cos, sin = rope_cos_sin(positions, rope_inv_freq(HEAD_DIM), dtype=dtype)
    ours_q, ours_k = apply_rope_qk(q, k, cos, sin, "half")
    if dtype == torch.float32:
        record("apply_rotary_pos_emb (Llama, half) fp32", ours_q, hf_q)
        record("apply_rotary_pos_emb (Llama, half) fp32", ours_k, hf_k)
    else:  # both round each op to bf16, in another order: apply_rope's documented 6u |pair| bound
        for name, ours, theirs, x in (("q", ours_q, hf_q, q), ("k", ours_k, hf_k, k)):
            pair = torch.cat((x[..., : HEAD_DIM // 2], x[..., : HEAD_DIM // 2]), -1).float().hypot(
                torch.cat((x[..., HEAD_DIM // 2 :], x[..., HEAD_DIM // 2 :]), -1).float())
            excess = (ours.float() - theirs.float()).abs() - 6 * 2**-8 * pair
            assert excess.max() <= 0, f"{name}: bf16 difference exceeds 6u |pair| by {excess.max():.3g}"
            record("apply_rotary_pos_emb (Llama, half) bf16", ours, theirs, tol=float("inf"))


def test_partial_rotary_matches_gpt_neox():
    """GPT-NeoX rotates the first int(head_dim * partial_rotary_factor) dims in the half layout."""
    config = GPTNeoXConfig(
        hidden_size=HEAD_DIM * N_HEADS, num_attention_heads=N_HEADS, max_position_embeddings=MAX_POS,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25},
    )
    hf = neox.GPTNeoXRotaryEmbedding(config)
    scheme = RotaryPE(HEAD_DIM, rotary_fraction=0.25)
    gen = torch.Generator().manual_seed(2)
    positions = torch.randint(0, 3000, (2, 24), generator=gen)
    q, k = torch.randn(2, 2, N_HEADS, 24, HEAD_DIM, generator=gen)
    hf_q, hf_k = neox.apply_rotary_pos_emb(q, k, *hf(q, positions))
    ours_q, ours_k = scheme.rotate_qk(q, k, positions)
    record("partial rotary 0.25 (GPT-NeoX, half)", ours_q, hf_q)
    record("partial rotary 0.25 (GPT-NeoX, half)", ours_k, hf_k)


def test_interleaved_matches_gpt_j():
    """GPT-J rotates its first rotary_dim dims in the interleaved layout (rotate_every_two)."""
    rotary_dim = 32
    gen = torch.Generator().manual_seed(3)
    positions = torch.randint(0, 2048, (2, 20), generator=gen)
    table = gptj.create_sinusoidal_positions(2048, rotary_dim)  # (max_pos, rotary_dim) = [sin | cos]
    hf_sin, hf_cos = table[positions].chunk(2, dim=-1)
    x = torch.randn(2, 20, N_HEADS, HEAD_DIM, generator=gen)  # GPT-J keeps (batch, seq, heads, head_dim)
    expected = torch.cat((gptj.apply_rotary_pos_emb(x[..., :rotary_dim], hf_sin, hf_cos), x[..., rotary_dim:]), -1)
    cos, sin = rope_cos_sin(positions, rope_inv_freq(rotary_dim))
    ours = apply_rope(x.transpose(1, 2), cos, sin, "interleaved", rotary_dim=2 * cos.shape[-1]).transpose(1, 2)
    record("interleaved partial (GPT-J rotate_every_two)", ours, expected)
    scheme = RotaryPE(HEAD_DIM, layout="interleaved", rotary_fraction=rotary_dim / HEAD_DIM)
    ours_q, _ = scheme.rotate_qk(x.transpose(1, 2), x.transpose(1, 2), positions)
    record("interleaved partial (GPT-J rotate_every_two)", ours_q.transpose(1, 2), expected)


def test_yarn_attention_factor_is_the_paper_temperature():
    """Not only equal to Hugging Face: equal to 0.1 ln(s) + 1 from the YaRN paper."""
    for factor in (2.0, 4.0, 16.0):
        _, attention_factor = rope_frequencies(HEAD_DIM, {"rope_type": "yarn", "factor": factor, "original_max_position_embeddings": 64})
        assert attention_factor == pytest.approx(0.1 * math.log(factor) + 1, abs=1e-12)

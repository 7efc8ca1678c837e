"""Every bad input across the library, in one table: each must raise the right exception type
with a message that names the offending parameter (and, where there is one, the value received).

One row per mistake a learner is likely to make: odd head_dim, d_model not divisible, heads
that do not match, positions past a learnable table or a patch grid, unknown rope type or
missing key, integer tensors where floats are needed, mismatched q/k shapes, unknown
layout/mode, grid size mismatch, LongRoPE factor lists of the wrong length, an mrope_section
that does not sum to the pairs, M-RoPE positions of the wrong rank, an unknown layer type, a
Hugging Face attention module the bridge cannot copy, ...
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import transformers

from posenc_lib.analysis.lm_metrics import per_position_loss, perplexity_at
from posenc_lib.training import accuracy, train
from posenc_lib.attention import KVCache, MultiHeadAttention, allowed_keys
from posenc_lib.conditional.peg import PEG, peg
from posenc_lib.embeddings.learnable import LearnablePE
from posenc_lib.embeddings.sinusoidal import SinusoidalPE, shift_matrix, sinusoidal_table
from posenc_lib.embeddings.tables_2d import Learnable2DPE, SinCos2DPE, sincos_2d_table
from posenc_lib.frequencies import inverse_frequencies
from posenc_lib.grid import PatchEmbed, coordinate_scale, resample_grid
from posenc_lib.interop.hf import attention_from_hf
from posenc_lib.interop.hf_config import rope_parameters
from posenc_lib.models import LayerSpec, TinyTransformer, with_scheme
from posenc_lib.qk_bias.transformer_xl import TransformerXLRelative, relative_shift
from posenc_lib.rotary.decoupled import DecoupledRoPE
from posenc_lib.rotary.mrope import MRoPE, mrope_axes, mrope_cos_sin, mrope_positions
from posenc_lib.rotary.rope import (
    RotaryPE,
    apply_rope,
    apply_rope_qk,
    convert_qk_weight,
    convert_rope_checkpoint,
    rope_cos_sin,
    rope_inv_freq,
)
from posenc_lib.rotary.rope_2d import AxialRoPE2D, MixedRoPE2D
from posenc_lib.rotary.scaling import rope_frequencies
from posenc_lib.rotary.temperature import QueryTemperature, query_temperature
from posenc_lib.scheme import NoPosition
from posenc_lib.score_bias.alibi import ALiBi, alibi_bias, alibi_slopes
from posenc_lib.score_bias.swin import SwinRelativeBias, swin_relative_position_index
from posenc_lib.score_bias.t5 import T5RelativeBias, t5_relative_bucket


def x4(batch=1, heads=2, seq=5, head_dim=8, dtype=torch.float32):
    return torch.zeros(batch, heads, seq, head_dim, dtype=dtype)


def pos(n: int, offset: int = 0, dtype=torch.long):
    return torch.arange(offset, offset + n, dtype=dtype)[None]


cs = rope_cos_sin(pos(5), rope_inv_freq(8))
LONGROPE = {"rope_type": "longrope", "short_factor": [1.0] * 4, "long_factor": [2.0] * 4,
            "original_max_position_embeddings": 8, "factor": 4.0}
video = mrope_positions(1, 2, 2)  # 4 tokens


def hf_attention(model: str, **config):
    """A tiny Hugging Face attention module (built only when its row runs)."""
    sizes = dict(hidden_size=16, num_attention_heads=2, num_hidden_layers=1, intermediate_size=16, vocab_size=8)
    sizes.update((key, config.pop(key)) for key in list(config) if key in sizes)
    if model == "llama":
        return transformers.models.llama.modeling_llama.LlamaAttention(transformers.LlamaConfig(**sizes, **config), 0)
    return transformers.models.gemma3.modeling_gemma3.Gemma3Attention(transformers.Gemma3TextConfig(**sizes, **config), 0)

tiny = TinyTransformer(7, 3, d_model=16, n_heads=2, n_layers=1)
rope_tiny = TinyTransformer(7, 7, d_model=16, n_heads=2, n_layers=1, scheme=RotaryPE(8), causal=True, pool="none")
x3 = torch.zeros(1, 5, 16)

# (id, call, exception type, regex the message must match: parameter name [and value])
BAD_INPUTS: list[tuple[str, Callable[[], object], type[Exception], str]] = [
    # ------------------------------------------------------------------ attention, model, training
    ("mha d_model not divisible", lambda: MultiHeadAttention(30, 4), ValueError, r"d_model must be .*d_model=30, n_heads=4"),
    ("mha x integer", lambda: MultiHeadAttention(16, 2)(torch.zeros(1, 5, 16, dtype=torch.long)), TypeError,
     r"x must be a floating-point tensor, got dtype torch.int64"),
    ("mha x wrong width", lambda: MultiHeadAttention(16, 2)(torch.zeros(1, 5, 12)), ValueError, r"x must have shape .*d_model=16.*\(1, 5, 12\)"),
    ("positions float", lambda: tiny(torch.zeros(1, 5, dtype=torch.long), positions=pos(5, dtype=torch.float32)), TypeError,
     r"positions must be an integer tensor.*float32"),
    ("positions wrong length", lambda: tiny(torch.zeros(1, 5, dtype=torch.long), positions=pos(4)), ValueError,
     r"positions must have shape .*got \(1, 4\)"),
    ("attn_mask not bool", lambda: tiny(torch.zeros(1, 5, dtype=torch.long), attn_mask=torch.ones(1, 5)), TypeError,
     r"attn_mask must be a bool tensor.*float32"),
    ("attn_mask wrong shape", lambda: tiny(torch.zeros(1, 5, dtype=torch.long), attn_mask=torch.ones(1, 4, dtype=torch.bool)),
     ValueError, r"attn_mask .*must have shape .*got \(1, 4\)"),
    ("model unknown pool", lambda: TinyTransformer(7, 3, pool="max"), ValueError, r"pool must be one of .*'max'"),
    ("model no vocab", lambda: TinyTransformer(None, 3), ValueError, r"vocab_size is required"),
    ("mha window 0", lambda: MultiHeadAttention(16, 2, window=0), ValueError, r"window must be an int >= 1, got 0"),
    ("mha n_kv_heads not dividing n_heads", lambda: MultiHeadAttention(16, 4, n_kv_heads=3), ValueError,
     r"n_kv_heads must divide n_heads=4 .*got 3"),
    ("mha n_kv_heads 0", lambda: MultiHeadAttention(16, 4, n_kv_heads=0), ValueError, r"n_kv_heads must be an int >= 1, got 0"),
    ("mha n_kv_heads float", lambda: MultiHeadAttention(16, 4, n_kv_heads=2.0), TypeError, r"n_kv_heads must be an int, got 2\.0"),
    ("model n_kv_heads not dividing n_heads", lambda: TinyTransformer(7, 3, n_heads=4, n_kv_heads=3), ValueError,
     r"n_kv_heads must divide n_heads=4 .*got 3"),
    ("kv cache of other heads", lambda: KVCache(torch.zeros(1, 2, 3, 4), torch.zeros(1, 2, 3, 4), pos(3)).extend(
        torch.zeros(1, 4, 1, 4), torch.zeros(1, 4, 1, 4), pos(1)), ValueError,
     r"k must have the cached batch of 1 and 2 key/value heads of head_dim 4, got shape \(1, 4, 1, 4\)"),
    ("kv cache k and v of other shapes", lambda: KVCache().extend(torch.zeros(1, 2, 3, 4), torch.zeros(1, 1, 3, 4), pos(3)),
     ValueError, r"k and v must have the same shape, got \(1, 2, 3, 4\) and \(1, 1, 3, 4\)"),
    ("model layer_specs wrong length", lambda: TinyTransformer(7, 3, n_layers=2, layer_specs=[LayerSpec(NoPosition())]),
     ValueError, r"layer_specs must be a list of n_layers=2 LayerSpec objects, got 1 items"),
    ("train steps 0", lambda: train(tiny, (torch.zeros(4, 5, dtype=torch.long), torch.zeros(4, dtype=torch.long)), steps=0),
     ValueError, r"steps must be a positive integer, got 0"),
    ("train stop_after past steps", lambda: train(tiny, (torch.zeros(4, 5, dtype=torch.long), torch.zeros(4, dtype=torch.long)), steps=3, stop_after=4),
     ValueError, r"stop_after must be an integer in 1\.\.3 \(the run's steps\), got 4"),
    ("train data lengths", lambda: train(tiny, (torch.zeros(4, 5, dtype=torch.long), torch.zeros(3, dtype=torch.long)), steps=1),
     ValueError, r"data inputs and targets differ in length: 4 vs 3"),
    ("accuracy all ignored", lambda: accuracy(tiny, torch.zeros(2, 5, dtype=torch.long), torch.full((2,), -100)),
     ValueError, r"targets must contain at least one label"),
    # ------------------------------------------------------------------ sinusoidal
    ("sinusoidal odd d_model", lambda: sinusoidal_table(8, 7), ValueError, r"d_model must be even.*got 7"),
    ("sinusoidal float d_model", lambda: sinusoidal_table(8, 8.0), TypeError, r"d_model must be an int, got 8\.0"),
    ("sinusoidal unknown layout", lambda: SinusoidalPE(8, layout="sincos"), ValueError, r"layout must be one of .*'sincos'"),
    ("sinusoidal base 1", lambda: sinusoidal_table(8, 8, base=1.0), ValueError, r"base must be .*> 1, got 1\.0"),
    ("sinusoidal integer dtype", lambda: sinusoidal_table(8, 8, dtype=torch.int64), TypeError,
     r"dtype must be a floating-point torch.dtype, got torch.int64"),
    ("sinusoidal negative position", lambda: SinusoidalPE(8)(torch.tensor([[-1, 0]])), ValueError, r"positions must be >= 0.*-1"),
    ("sinusoidal float positions", lambda: SinusoidalPE(8)(pos(3, dtype=torch.float32)), TypeError,
     r"positions must be an integer tensor.*float32"),
    ("sinusoidal x wrong width", lambda: SinusoidalPE(8).add_to_embeddings(torch.zeros(1, 3, 6), pos(3)), ValueError,
     r"x must have last dimension d_model=8.*\(1, 3, 6\)"),
    ("shift_matrix float k", lambda: shift_matrix(1.5, 8), TypeError, r"k must be an int.*1\.5"),
    # ------------------------------------------------------------------ learnable
    ("learnable position past table", lambda: LearnablePE(8, max_len=4)(pos(5)), ValueError,
     r"positions must lie in \[0, max_len\) = \[0, 4\), got max position 4"),
    ("learnable max_len 0", lambda: LearnablePE(8, max_len=0), ValueError, r"max_len must be a positive int, got 0"),
    ("learnable init_std negative", lambda: LearnablePE(8, 4, init_std=-1.0), ValueError, r"init_std must be .*> 0, got -1\.0"),
    ("learnable float positions", lambda: LearnablePE(8, 4)(pos(3, dtype=torch.float32)), TypeError,
     r"positions must be an integer tensor.*float32"),
    # ------------------------------------------------------------------ rope, rope_scaling
    ("rope odd head_dim", lambda: RotaryPE(7), ValueError, r"head_dim must be even \(sin/cos come in pairs\), got 7"),
    ("rope_inv_freq odd head_dim", lambda: rope_inv_freq(7), ValueError, r"head_dim must be even \(sin/cos come in pairs\), got 7"),
    ("rope unknown layout", lambda: RotaryPE(8, layout="llama"), ValueError, r"layout must be one of .*'llama'"),
    ("rope unknown rope_type", lambda: RotaryPE(8, scaling={"rope_type": "ntk-by-parts", "factor": 2.0}), ValueError,
     r"config\['rope_type'\] must be one of .*'ntk-by-parts'"),
    ("rope yarn missing key", lambda: RotaryPE(8, scaling={"rope_type": "yarn", "factor": 4.0}), ValueError,
     r"rope_type 'yarn' needs config key\(s\) \['original_max_position_embeddings'\]"),
    ("rope key of another type", lambda: RotaryPE(8, scaling={"rope_type": "linear", "factor": 2.0, "beta_fast": 32}),
     ValueError, r"config has key\(s\) \['beta_fast'\] that rope_type 'linear' does not use"),
    ("rope scaling not a dict", lambda: RotaryPE(8, scaling="yarn"), TypeError, r"scaling must be a dict .*got str"),
    ("rope contradicting base", lambda: RotaryPE(8, base=500.0, scaling={"rope_theta": 10000.0}), ValueError,
     r"base=500\.0 contradicts scaling\['rope_theta'\] = 10000\.0"),
    ("rope factor 0", lambda: rope_frequencies(8, {"rope_type": "linear", "factor": 0.0}), ValueError,
     r"config\['factor'\] must be a number > 0, got 0\.0"),
    ("rope llama3 low >= high", lambda: rope_frequencies(8, {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 64,
                                                             "low_freq_factor": 4.0, "high_freq_factor": 1.0}),
     ValueError, r"config\['low_freq_factor'\] must be <= config\['high_freq_factor'\], got 4\.0 and 1\.0"),
    ("rope partial factor 0", lambda: rope_frequencies(8, {"partial_rotary_factor": 0.0}), ValueError,
     r"config\['partial_rotary_factor'\] must be in \(0, 1\], got 0\.0"),
    ("rope float positions", lambda: rope_cos_sin(pos(5, dtype=torch.float32), rope_inv_freq(8)), TypeError,
     r"positions must be an integer tensor.*float32"),
    ("apply_rope integer x", lambda: apply_rope(x4(dtype=torch.long), *cs), TypeError, r"x must be a floating-point tensor.*int64"),
    ("apply_rope 3-D x", lambda: apply_rope(torch.zeros(2, 5, 8), *cs), ValueError,
     r"x must have shape \(batch, heads, seq, head_dim\), got \(2, 5, 8\)"),
    ("apply_rope odd head_dim", lambda: apply_rope(x4(head_dim=7), *cs), ValueError, r"x\.shape\[-1\] \(head_dim\) must be even, got 7"),
    ("apply_rope cos/sin shapes differ", lambda: apply_rope(x4(), cs[0], cs[1][..., :2]), ValueError,
     r"cos and sin must have the same shape"),
    ("apply_rope table for another length", lambda: apply_rope(x4(seq=6), *cs), ValueError, r"cos and sin must have shape .*\(1, 5, 4\)"),
    ("apply_rope_qk q/k mismatch", lambda: apply_rope_qk(x4(), x4(seq=4), *cs), ValueError, r"q and k must agree"),
    ("apply_rope_qk unknown layout", lambda: apply_rope_qk(x4(), x4(), *cs, layout="meta"), ValueError,
     r"layout must be one of .*'meta'"),
    ("inverse_frequencies odd dim", lambda: inverse_frequencies(7), ValueError, r"dim must be even \(sin/cos come in pairs\), got 7"),
    ("inverse_frequencies base 1", lambda: inverse_frequencies(8, base=1.0), ValueError, r"base must be a finite number > 1, got 1\.0"),
    ("inverse_frequencies float16", lambda: inverse_frequencies(8, dtype=torch.float16), ValueError,
     r"dtype must be torch\.float32 or torch\.float64, got torch\.float16"),
    ("rope q of another head_dim", lambda: RotaryPE(8).rotate_qk(x4(head_dim=6), x4(head_dim=6), pos(5)), ValueError,
     r"q\.shape\[-1\] must be head_dim=8"),
    ("convert weight heads not dividing", lambda: convert_qk_weight(torch.zeros(16, 16), n_heads=3), ValueError,
     r"n_heads must be a positive int dividing out_features=16, got 3"),
    ("longrope short_factor of the wrong length", lambda: rope_frequencies(8, {**LONGROPE, "short_factor": [1.0] * 3}),
     ValueError, r"config\['short_factor'\] must be a list of rotary_dim // 2 = 4 numbers > 0 .*got 3 entries"),
    ("longrope long_factor with a zero", lambda: RotaryPE(8, scaling={**LONGROPE, "long_factor": [1.0, 0.0, 1.0, 1.0]}),
     ValueError, r"config\['long_factor'\] must be a list of rotary_dim // 2 = 4 numbers > 0 .*\[1\.0, 0\.0, 1\.0, 1\.0\]"),
    ("longrope long_factor missing", lambda: rope_frequencies(8, {k: v for k, v in LONGROPE.items() if k != "long_factor"}),
     ValueError, r"rope_type 'longrope' needs config key\(s\) \['long_factor'\]"),
    ("longrope neither factor nor length", lambda: rope_frequencies(8, {k: v for k, v in LONGROPE.items() if k != "factor"}),
     ValueError, r"rope_type 'longrope' needs config\['factor'\] or config\['max_position_embeddings'\]"),
    ("longrope L0 of 1", lambda: rope_frequencies(8, {**LONGROPE, "original_max_position_embeddings": 1}), ValueError,
     r"config\['original_max_position_embeddings'\] \(L0, the trained context length\) must be an int >= 2, got 1"),
    ("proportional key of another type", lambda: RotaryPE(8, scaling={"rope_type": "proportional", "low_freq_factor": 1.0}),
     ValueError, r"config has key\(s\) \['low_freq_factor'\] that rope_type 'proportional' does not use"),
    # ------------------------------------------------------------------ M-RoPE, decoupled RoPE, query temperature
    ("mrope section of the wrong sum", lambda: mrope_cos_sin(torch.zeros(3, 5, dtype=torch.long), rope_inv_freq(8), [1, 1, 1]),
     ValueError, r"mrope_section must be 3 ints >= 0 \(pairs for t, h, w\) summing to the number of rotary pairs 4 .*"
                 r"got \[1, 1, 1\]"),
    ("mrope section of two axes", lambda: MRoPE(8, video, [2, 2]), ValueError,
     r"mrope_section must be 3 ints >= 0 .* got \[2, 2\]"),
    ("mrope section the interleaving cannot honour", lambda: mrope_axes(4, [0, 2, 2], mrope_interleaved=True), ValueError,
     r"mrope_section = \[0, 2, 2\] cannot be interleaved over 4 pairs .*\[2, 1, 1\] pairs per axis"),
    ("mrope positions of rank 1", lambda: mrope_cos_sin(torch.zeros(5, dtype=torch.long), rope_inv_freq(8), [2, 1, 1]),
     ValueError, r"positions must have shape \(3, batch, seq\) or \(3, seq\).*got \(5,\)"),
    ("mrope positions with 2 axes", lambda: mrope_cos_sin(torch.zeros(2, 1, 5, dtype=torch.long), rope_inv_freq(8), [2, 1, 1]),
     ValueError, r"positions must have shape \(3, batch, seq\) or \(3, seq\).*got \(2, 1, 5\)"),
    ("mrope float positions", lambda: mrope_cos_sin(torch.zeros(3, 5), rope_inv_freq(8), [2, 1, 1]), TypeError,
     r"positions must be an integer tensor.*float32"),
    ("mrope coordinates of 2 axes", lambda: MRoPE(8, torch.zeros(5, 2, dtype=torch.long)), ValueError,
     r"coordinates must have shape \(n_tokens, 3\).*got \(5, 2\)"),
    ("mrope position past the layout", lambda: MRoPE(8, video).rotate_qk(x4(), x4(), pos(5)), ValueError,
     r"positions must lie in \[0, 3\] \(the rows of the 4-token coordinate table\), got values in \[0, 4\]"),
    ("mrope 1-D token indices", lambda: MRoPE(8, video).cos_sin(torch.arange(4)), ValueError,
     r"positions must have shape \(batch, seq\) \(token indices\), got \(4,\)"),
    ("mrope zero frames", lambda: mrope_positions(0, 2, 2), ValueError, r"frames must be an int >= 1, got 0"),
    ("mrope negative text", lambda: mrope_positions(1, 2, 2, n_text_before=-1), ValueError,
     r"n_text_before must be an int >= 0, got -1"),
    ("decoupled rope q of another width", lambda: DecoupledRoPE(4, 4).rotate_qk(x4(head_dim=6), x4(head_dim=6), pos(5)),
     ValueError, r"q must have shape \(batch, heads, seq, nope_dim \+ rope_dim = 4 \+ 4\), got \(1, 2, 5, 6\)"),
    ("decoupled rope odd rope_dim", lambda: DecoupledRoPE(4, 3), ValueError, r"rope_dim must be even \(sin/cos come in pairs\), got 3"),
    ("query temperature floor_scale 0", lambda: QueryTemperature(floor_scale=0), ValueError,
     r"floor_scale must be an int >= 1, got 0"),
    ("query temperature float positions", lambda: query_temperature(pos(5, dtype=torch.float32)), TypeError,
     r"positions must be an integer tensor.*float32"),
    ("query temperature positions of another length", lambda: QueryTemperature().rotate_qk(x4(), x4(), pos(4)), ValueError,
     r"positions must have shape \(batch\|1, seq=5\), got \(1, 4\)"),
    # ------------------------------------------------------------------ notebook 08: configs and Hugging Face modules
    ("unknown layer type", lambda: rope_parameters(transformers.Gemma3TextConfig(), "global_attention"),
     ValueError, r"layer_type must be one of \['sliding_attention', 'full_attention'\].*got 'global_attention'"),
    ("per-layer-type rope without a layer type", lambda: rope_parameters(transformers.Gemma3TextConfig()),
     ValueError, r"layer_type must be given for Gemma3TextConfig.*got None"),
    ("bridge from key/value heads that do not divide the query heads",
     lambda: attention_from_hf(hf_attention("llama", num_attention_heads=4, num_key_value_heads=3)), ValueError,
     r"k_proj and v_proj of 12 and 12 rows for 4 query heads of head_dim 4; .*key/value heads .* that divide the query heads"),
    ("bridge from an attention with qk-norm", lambda: attention_from_hf(hf_attention("gemma3", num_key_value_heads=2, head_dim=8)),
     ValueError, r"module Gemma3Attention normalises queries or keys \(\['q_norm', 'k_norm'\]\)"),
    ("bridge with another score scale", lambda: attention_from_hf(hf_attention("llama"), T5RelativeBias(2)), ValueError,
     r"scheme T5RelativeBias scales the scores by 1, module LlamaAttention by 0\.35.*must equal module\.scaling"),
    ("bridge from a plain linear layer", lambda: attention_from_hf(torch.nn.Linear(4, 4)), TypeError,
     r"module must have linear layers \['q_proj', 'k_proj', 'v_proj', 'o_proj'\].*got Linear"),
    # ------------------------------------------------------------------ relative biases
    ("t5 float relative positions", lambda: t5_relative_bucket(torch.zeros(3)), TypeError,
     r"relative_position must be an integer tensor.*float32"),
    ("t5 too few buckets", lambda: T5RelativeBias(4, num_buckets=2), ValueError, r"num_buckets must give at least 2 buckets .*num_buckets=2"),
    ("t5 max_distance too small", lambda: T5RelativeBias(4, num_buckets=32, max_distance=8), ValueError,
     r"max_distance must exceed the 8 exact buckets, got max_distance=8"),
    ("t5 zero heads", lambda: T5RelativeBias(0), ValueError, r"n_heads must be an int >= 1, got 0"),
    ("t5 q/k batch mismatch", lambda: T5RelativeBias(2).score_bias(pos(3).expand(2, 3), pos(3).expand(3, 3)), ValueError,
     r"q_positions and k_positions must have the same batch size \(or 1\), got 2 and 3"),
    ("t5 1-D positions", lambda: T5RelativeBias(2).score_bias(torch.arange(3), pos(3)), ValueError,
     r"q_positions must have shape \(batch, seq\).*\(3,\)"),
    ("alibi zero heads", lambda: alibi_slopes(0), ValueError, r"n_heads must be an int >= 1, got 0"),
    ("alibi float heads", lambda: ALiBi(4.0), TypeError, r"n_heads must be an int, got 4\.0"),
    ("alibi integer slopes", lambda: alibi_bias(torch.ones(4, dtype=torch.long), pos(3), pos(3)), TypeError,
     r"slopes must be a floating-point tensor.*int64"),
    ("alibi float positions", lambda: alibi_bias(alibi_slopes(4), pos(3, dtype=torch.float32), pos(3)), TypeError,
     r"q_positions must be an integer tensor.*float32"),
    ("swin zero window", lambda: swin_relative_position_index(0, 3), ValueError, r"window_h must be an int >= 1, got 0"),
    ("swin negative prefix", lambda: SwinRelativeBias(2, 2, 2, n_prefix=-1), ValueError, r"n_prefix must be an int >= 0, got -1"),
    ("swin position past window", lambda: SwinRelativeBias(2, 2, 2).score_bias(pos(5), pos(5)), ValueError,
     r"q_positions must lie in \[0, 3\] .*2x2 window.*got values in \[0, 4\]"),
    ("compact alibi without a causal mask", lambda: MultiHeadAttention(16, 4, ALiBi(4, causal=True))(x3), ValueError,
     r"scheme ALiBi requires causal=True .*got the attention's causal=False"),
    ("bias heads do not match attention heads", lambda: MultiHeadAttention(16, 2, ALiBi(4))(x3, causal=True), ValueError,
     r"ALiBi\(n_heads=4\) does not fit an attention layer of n_heads=2"),
    ("t5 heads do not match attention heads", lambda: MultiHeadAttention(16, 2, T5RelativeBias(4))(x3), ValueError,
     r"score_bias of T5RelativeBias must broadcast to .*got shape \(1, 4, 5, 5\)"),
    ("transformer-xl d_model zero", lambda: TransformerXLRelative(0, 2), ValueError, r"d_model must be an int >= 2, got 0"),
    ("transformer-xl odd d_model", lambda: TransformerXLRelative(7, 1), ValueError, r"d_model must be even .*got 7"),
    ("transformer-xl heads not dividing", lambda: TransformerXLRelative(16, 3), ValueError,
     r"d_model must be a multiple of n_heads, got d_model=16, n_heads=3"),
    ("transformer-xl base", lambda: TransformerXLRelative(16, 2, base=1.0), ValueError, r"base must be a finite number > 1, got 1\.0"),
    ("transformer-xl heads do not match attention heads", lambda: MultiHeadAttention(16, 4, TransformerXLRelative(16, 2))(x3),
     ValueError, r"q must have shape \(batch, heads=2, seq, head_dim=8\), got \(1, 4, 5, 4\)"),
    ("transformer-xl integer q", lambda: TransformerXLRelative(16, 2).qk_bias(x4(dtype=torch.long), x4(), pos(5), pos(5)),
     TypeError, r"q must be a floating-point tensor, got dtype torch.int64"),
    ("transformer-xl positions of another length", lambda: TransformerXLRelative(16, 2).qk_bias(x4(), x4(), pos(4), pos(5)),
     ValueError, r"q_positions must have 5 columns \(one per token\), got \(1, 4\)"),
    ("transformer-xl positions not consecutive", lambda: TransformerXLRelative(16, 2).qk_bias(x4(), x4(), pos(5) * 2, pos(5)),
     ValueError, r"q_positions must be consecutive in each row .*got \[\[0, 2, 4, 6, 8\]\]"),
    ("transformer-xl float distances", lambda: TransformerXLRelative(16, 2).relative_encoding(torch.zeros(3)), TypeError,
     r"distances must be an integer tensor.*float32"),
    ("relative_shift wrong width", lambda: relative_shift(torch.zeros(2, 3, 5), k_len=4), ValueError,
     r"scores must have shape \(\.\.\., q_len, q_len \+ k_len - 1\) with k_len=4, got \(2, 3, 5\)"),
    # ------------------------------------------------------------------ vision
    ("sincos2d d_model not divisible by 4", lambda: sincos_2d_table(3, 3, 10), ValueError, r"d_model must be divisible by 4.*got 10"),
    ("learnable2d unknown mode", lambda: Learnable2DPE(8, 2, 2, mode="mul"), ValueError, r"mode must be 'add' or 'concat', got 'mul'"),
    ("learnable2d concat odd d_model", lambda: Learnable2DPE(7, 2, 2, mode="concat"), ValueError,
     r"d_model must be even for mode='concat'.*got 7"),
    ("sincos2d sequence longer than grid", lambda: SinCos2DPE(8, 2, 2, n_prefix=1).add_to_embeddings(torch.zeros(1, 6, 8), pos(6)),
     ValueError, r"positions must lie in \[0, 4\] \(1 prefix tokens \+ a 2x2 grid\), got values in \[0, 5\]"),
    ("axial rope head_dim not divisible by 4", lambda: AxialRoPE2D(6, 2, 2), ValueError, r"head_dim must be divisible by 4.*got 6"),
    ("axial rope q/k mismatch", lambda: AxialRoPE2D(8, 2, 2).rotate_qk(x4(seq=4), x4(seq=4, heads=1), pos(4)), ValueError,
     r"q and k must have the same shape"),
    ("axial rope integer q", lambda: AxialRoPE2D(8, 2, 2).rotate_qk(x4(seq=4, dtype=torch.long), x4(seq=4), pos(4)), TypeError,
     r"q must be a floating-point tensor, got dtype torch.int64"),
    ("axial rope grid too small", lambda: AxialRoPE2D(8, 2, 2).rotate_qk(x4(seq=5), x4(seq=5), pos(5)), ValueError,
     r"positions must lie in \[0, 3\].*2x2 grid"),
    ("mixed rope heads do not match", lambda: MixedRoPE2D(8, 4, 2, 2).rotate_qk(x4(seq=4), x4(seq=4), pos(4)), ValueError,
     r"q and k must have n_heads=4 heads, got 2"),
    ("resample integer table", lambda: resample_grid(torch.zeros(5, 4, dtype=torch.long), (2, 2), (3, 3)), TypeError,
     r"table must be a floating-point tensor, got dtype torch.int64"),
    ("resample grid size mismatch", lambda: resample_grid(torch.zeros(10, 4), (2, 2), (3, 3)), ValueError,
     r"table must have shape \(n_prefix \+ H\*W, d\) = \(1 \+ 2\*2, d\) for old_hw=\(2, 2\), got \(10, 4\)"),
    ("resample size 0", lambda: resample_grid(torch.zeros(5, 4), (2, 2), (0, 3)), ValueError, r"new_hw\[0\] must be an int >= 1, got 0"),
    ("resample scale instead of size", lambda: resample_grid(torch.zeros(5, 4), (2, 2), 1.5), ValueError,
     r"new_hw must be a \(height, width\) pair, got 1\.5"),
    ("axial rope unknown layout", lambda: AxialRoPE2D(8, 2, 2, layout="llama"), ValueError,
     r"layout must be one of \['half', 'interleaved'\], got 'llama'"),
    ("mixed rope unknown layout", lambda: MixedRoPE2D(8, 2, 2, 2, layout="xy"), ValueError,
     r"layout must be one of \['half', 'interleaved'\], got 'xy'"),
    ("patch embed patch does not divide the image", lambda: PatchEmbed(3, 8)(torch.zeros(2, 8, 8)), ValueError,
     r"divisible by patch_size=3, got image size \(8, 8\)"),
    ("patch embed wrong channels", lambda: PatchEmbed(2, 8, in_channels=3)(torch.zeros(2, 1, 4, 4)), ValueError,
     r"images must have shape \(batch, 3, H, W\), got \(2, 1, 4, 4\)"),
    ("patch embed 2-D image", lambda: PatchEmbed(2, 8)(torch.zeros(4, 4)), ValueError,
     r"images must have shape \(batch, 1, H, W\) or \(batch, H, W\), got \(4, 4\)"),
    ("patch embed integer image", lambda: PatchEmbed(2, 8)(torch.zeros(1, 4, 4, dtype=torch.uint8)), TypeError,
     r"images must be a floating-point tensor, got dtype torch.uint8"),
    ("patch embed patch size 0", lambda: PatchEmbed(0, 8), ValueError, r"patch_size must be an int >= 1, got 0"),
    ("sincos 2d zero scale", lambda: sincos_2d_table(2, 2, 8, scale=(0.0, 1.0)), ValueError,
     r"scale must be a \(row scale, column scale\) pair of finite numbers > 0, got \(0.0, 1.0\)"),
    ("axial rope scale not a pair", lambda: AxialRoPE2D(8, 2, 2, scale=0.5), ValueError,
     r"scale must be a \(row scale, column scale\) pair of finite numbers > 0, got 0.5"),
    ("coordinate scale bad grid", lambda: coordinate_scale((4, 4), (0, 6)), ValueError, r"new_hw\[0\] must be an int >= 1, got 0"),
    # ------------------------------------------------------------------ conditional (PEG)
    ("peg even kernel", lambda: PEG(8, 2, 2, kernel_size=4), ValueError, r"kernel_size must be odd.*got 4"),
    ("peg sequence not the grid", lambda: PEG(8, 2, 2).add_to_embeddings(torch.zeros(1, 5, 8), pos(5)), ValueError,
     r"x must have shape \(batch, n_prefix \+ grid_h\*grid_w = 0 \+ 2\*2 = 4, d_model\), got \(1, 5, 8\)"),
    ("peg integer x", lambda: peg(torch.zeros(1, 4, 8, dtype=torch.long), torch.zeros(8, 1, 3, 3), None, 2, 2), TypeError,
     r"x must be a floating-point tensor, got dtype torch.int64"),
    ("peg kernel of another width", lambda: peg(torch.zeros(1, 4, 8), torch.zeros(6, 1, 3, 3), None, 2, 2), ValueError,
     r"weight must have shape \(d_model=8, 1, k, k\) with k odd, got \(6, 1, 3, 3\)"),
    # ------------------------------------------------------------------ text data and extrapolation (notebook 06)
    ("perplexity_at length too long", lambda: perplexity_at(torch.zeros(8), [4, 9]), ValueError,
     r"lengths must be ints in \[1, 8\], got 9"),
    ("perplexity_at 2-D losses", lambda: perplexity_at(torch.zeros(2, 8), [4]), ValueError, r"losses must be a 1-D tensor.*\(2, 8\)"),
    ("window_mask window 0", lambda: allowed_keys(8, window=0)[None, None], ValueError, r"window must be an int >= 1, got 0"),
    ("window_mask negative sink", lambda: allowed_keys(8, window=2, sink=-1)[None, None], ValueError, r"sink must be an int >= 0, got -1"),
    ("with_scheme learned scheme", lambda: with_scheme(tiny, T5RelativeBias(2)), ValueError,
     r"scheme must have no parameters.*T5RelativeBias"),
    ("with_scheme not a scheme", lambda: with_scheme(tiny, "rope"), TypeError, r"scheme must be a PositionScheme, got str"),
    ("per_position_loss shapes differ", lambda: per_position_loss(tiny, torch.zeros(2, 5, dtype=torch.long),
                                                                  torch.zeros(2, 4, dtype=torch.long)), ValueError,
     r"inputs and targets must both have shape \(batch, seq\), got \(2, 5\) and \(2, 4\)"),
    # ------------------------------------------------------------------ 0.3's silent results, now errors (cold reviews)
    ("convert checkpoint recognising no key", lambda: convert_rope_checkpoint(
        {"blocks.0.attn.q.weight": torch.zeros(16, 16), "blocks.0.attn.k.weight": torch.zeros(16, 16)}, 8, "half"),
     ValueError, r"state has no query or key projection .*q_proj\.weight.*attention\.wq\.weight.*attn\.qkv\.weight.*"
                 r"blocks\.0\.attn\.q\.weight.*convert_qk_weight"),
    ("convert checkpoint head_dim against n_heads", lambda: convert_rope_checkpoint(rope_tiny.state_dict(), 4, "half",
                                                                                    n_heads=2),
     ValueError, r"head_dim \* n_heads must be the query rows of blocks\.0\.attn\.qkv\.weight \(16\), got head_dim=4 and "
                 r"n_heads=2"),
    ("convert checkpoint n_heads not an int", lambda: convert_rope_checkpoint(rope_tiny.state_dict(), 8, "half", n_heads=2.0),
     TypeError, r"n_heads must be an int, got 2\.0"),
    ("with_scheme another rope layout", lambda: with_scheme(rope_tiny, RotaryPE(8, layout="interleaved")), ValueError,
     r"scheme has layout='interleaved', but the model was trained with layout='half'.*"
     r"convert_rope_checkpoint\(model\.state_dict\(\), head_dim, to='interleaved'\)"),
    # ------------------------------------------------------------------ 0.3's late or misnamed errors, now at the cause
    ("model rope head_dim of another width", lambda: TinyTransformer(7, 7, d_model=64, n_heads=4, scheme=RotaryPE(32)),
     ValueError, r"RotaryPE\(head_dim=32\) does not fit .* d_model / n_heads = 64 / 4 = 16: build it with head_dim=16"),
    ("set_scheme rope head_dim of another width", lambda: copy_of(rope_tiny).set_scheme(RotaryPE(16)), ValueError,
     r"RotaryPE\(head_dim=16\) does not fit .* = 8"),
    ("model alibi of other heads", lambda: TinyTransformer(7, 7, n_heads=4, scheme=ALiBi(8), causal=True), ValueError,
     r"ALiBi\(n_heads=8\) does not fit an attention layer of n_heads=4"),
    ("model alibi in an encoder", lambda: TinyTransformer(7, 7, n_heads=4, scheme=ALiBi(4)), ValueError,
     r"scheme ALiBi requires causal=True .*TinyTransformer\(causal=False\).*TinyTransformer\(\.\.\., causal=True\).*"
     r"ALiBi\(n_heads, causal=False\)"),
    ("model scheme as a string", lambda: TinyTransformer(7, 7, scheme="rope"), TypeError,
     r"scheme must be a PositionScheme or None, e.g. build_scheme\('rope', d_model, n_heads\).*got 'rope'"),
    ("mha scheme as a class", lambda: MultiHeadAttention(16, 2, RotaryPE), TypeError, r"scheme must be a PositionScheme"),
    ("model n_layers 0", lambda: TinyTransformer(7, 7, n_layers=0), ValueError, r"n_layers must be an int >= 1, got 0"),
    ("model d_model negative", lambda: TinyTransformer(7, 7, d_model=-64), ValueError, r"d_model must be an int >= 1, got -64"),
    ("model vocab_size negative", lambda: TinyTransformer(-5, 7), ValueError, r"vocab_size must be an int >= 1, got -5"),
    ("mha n_heads float", lambda: MultiHeadAttention(64, 4.0), TypeError, r"n_heads must be an int, got 4\.0"),
    ("rope base 1", lambda: RotaryPE(16, base=1), ValueError, r"^base must be a number > 1, got 1$"),
    ("rope rotary_fraction 1.5", lambda: RotaryPE(16, rotary_fraction=1.5), ValueError,
     r"rotary_fraction must be a number in \(0, 1\], got 1\.5"),
    ("rope base against the dict", lambda: RotaryPE(16, base=5.0, scaling={"rope_theta": 500000.0}), ValueError,
     r"base=5\.0 contradicts scaling\['rope_theta'\] = 500000\.0"),
    ("rope legacy type against rope_type", lambda: RotaryPE(16, scaling={"type": "linear", "rope_type": "yarn"}), ValueError,
     r"config\['type'\] = 'linear' .* contradicts config\['rope_type'\] = 'yarn'"),
    ("yarn L0 negative", lambda: RotaryPE(16, scaling={"rope_type": "yarn", "factor": 4.0,
                                                       "original_max_position_embeddings": -32}), ValueError,
     r"config\['original_max_position_embeddings'\] \(L0, the trained context length\) must be an int >= 2, got -32"),
    ("yarn L0 a string", lambda: RotaryPE(16, scaling={"rope_type": "yarn", "factor": 4.0,
                                                       "original_max_position_embeddings": "64"}), ValueError,
     r"original_max_position_embeddings.*must be an int >= 2, got '64'"),
    ("dynamic L0 zero", lambda: RotaryPE(16, scaling={"rope_type": "dynamic", "factor": 4.0,
                                                      "original_max_position_embeddings": 0}), ValueError,
     r"original_max_position_embeddings.*must be an int >= 2, got 0"),
    ("llama3 low_freq_factor zero", lambda: RotaryPE(16, scaling={
        "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 64}), ValueError, r"config\['low_freq_factor'\] must be a number > 0, got 0"),
    ("factor a string", lambda: RotaryPE(16, scaling={"rope_type": "linear", "factor": "4"}), ValueError,
     r"config\['factor'\] must be a number > 0, got '4'"),
    ("model bare KVCache", lambda: rope_tiny(torch.zeros(1, 3, dtype=torch.long), cache=KVCache()), TypeError,
     r"cache must be a list of n_layers=1 KVCache objects, as model\.new_cache\(\) returns, got KVCache"),
    ("model cache on an encoder", lambda: tiny(torch.zeros(1, 3, dtype=torch.long), cache=tiny.new_cache()), ValueError,
     r"cache needs a causal model"),
    ("kv cache of another batch", lambda: KVCache(torch.zeros(2, 2, 3, 4), torch.zeros(2, 2, 3, 4), pos(3)).extend(
        torch.zeros(3, 2, 1, 4), torch.zeros(3, 2, 1, 4), pos(1)), ValueError, r"cached batch of 2 .* got shape \(3, 2, 1, 4\)"),
]


def copy_of(model):
    import copy

    return copy.deepcopy(model)


@pytest.mark.parametrize("call, exception, message", [row[1:] for row in BAD_INPUTS], ids=[row[0] for row in BAD_INPUTS])
def test_bad_input_raises_a_clear_error(call, exception, message):
    with torch.no_grad(), pytest.raises(exception, match=message):
        call()

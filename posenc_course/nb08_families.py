"""How today's model families encode position, read offline from ``transformers`` config classes (notebook 08, section 1).

:data:`FAMILIES` has one entry per family: the config a learner would load, built from its
``transformers`` config class without any download, what its scheme is called, and the course
notebook that teaches the idea. Where a class's defaults are a published checkpoint's (``BertConfig()`` is
google-bert/bert-base-uncased), the entry uses them and names that checkpoint; where they are not
(``LlamaConfig()`` is Llama-2-like with a 2048 context, ``SmolLM3Config()``'s base 2e6 is no checkpoint's),
the entry passes a named checkpoint's published values to the constructor, each with a comment naming
its source: the model's ``config.json`` on the Hugging Face Hub. Every number in :func:`family_table`
is then read from the config object by the readers below, the way transformers 5.x stores it.

The v4 -> v5 change. transformers 4.x kept the base as ``config.rope_theta`` and the scaling as
``config.rope_scaling``; 5.x keeps both in ``config.rope_parameters`` (``rope_theta`` inside it),
and for models with a base per layer type (Gemma 3 and 4) ``rope_parameters`` is a dict per layer
type. ``config.rope_theta`` no longer exists, so code written for 4.x that reads
``getattr(config, "rope_theta", 10000.0)`` silently gets 10000 for every model: Llama 3.1's
500000 becomes 10000 (:func:`legacy_rope_theta` is that code; :func:`rope_theta` reads it right).

Which layers rotate (:func:`rotating_layers`) is a per-layer decision in some families, read from
three kinds of config field:

* ``no_rope_layers`` (SmolLM3, Llama 4): one flag per layer, **1 = the layer uses RoPE** (the name
  says the opposite); by default a NoPE layer every ``no_rope_layer_interval`` = 4 layers.
* ``layer_types`` (Cohere2): RoPE only on "sliding_attention" layers, and only when the config has
  a ``sliding_window`` (Hugging Face's ``Cohere2Attention`` rotates when its window is set); the
  global layers have no position encoding at all.
* ``layer_types`` (Gemma 2/3/4): every layer rotates, with the rope parameters of its layer type.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pandas as pd
import torch
import transformers
from torch import Tensor

from posenc_lib.interop.hf_config import ROPE_ON_SLIDING_ONLY, rope_layer_types, rope_parameters, rotating_layers

__all__ = [
    "Agreement",
    "TINY",
    "hf_modeling",
    "hf_rotary",
    "llama_pair",
    "converted",
    "HeldOutVideos",
    "Family",
    "FAMILIES",
    "family_table",
    "legacy_rope_theta",
    "layer_pattern",
]

PretrainedConfig = transformers.PretrainedConfig

# Notebook 08 runs 24 language models and 12 video models through one pool of worker processes;
# joblib's loky restarts a worker whose memory has grown (its leak protection) and says so in a
# UserWarning. Each run seeds itself, so a restart changes no result: the warning is noise here.
warnings.filterwarnings("ignore", message="A worker stopped while some jobs were given to the executor",
                        category=UserWarning)


@dataclass(frozen=True)
class Family:
    """One model family: its name, how to build its config offline, its scheme, and where the course teaches it.

    config: builds the ``transformers`` config (class defaults where they are a published checkpoint's, else
        that checkpoint's published values); source: where the values come from, always a Hugging Face Hub
        model id whose config.json gives them ("class defaults = <model id> config.json" when the defaults
        match it); notebook: the course notebook that teaches the idea.
    """

    name: str
    config: Callable[[], PretrainedConfig]
    scheme: str
    notebook: str
    source: str


def _llama_3_1() -> PretrainedConfig:
    # meta-llama/Llama-3.1-8B, config.json: 128K context from an 8K pre-training length, Llama 3 scaling, 32 layers
    return transformers.LlamaConfig(
        max_position_embeddings=131072,
        rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
    )


def _llama_4() -> PretrainedConfig:
    # meta-llama/Llama-4-Scout-17B-16E, config.json (text_config): 48 layers, no_rope_layers [] (so a NoPE layer every
    # no_rope_layer_interval = 4), attention_chunk_size 8192, base 500000 with Llama 3 scaling x16 (low and high
    # frequency factors 1) from 8192, 262144 positions (the -Instruct checkpoint's config.json: 10485760 positions).
    return transformers.Llama4TextConfig(
        num_hidden_layers=48, max_position_embeddings=262144, attention_chunk_size=8192, no_rope_layers=[],
        rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 16.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 1.0, "original_max_position_embeddings": 8192},
    )


#: microsoft/Phi-3-mini-128k-instruct, config.json (the July 2024 revision, "type": "longrope"): LongRoPE's fitted
#: rescale factors, one per rotary pair (head_dim 96: 48 pairs), copied verbatim from the public copy of that
#: config.json in sdpython/onnx-diagnostic, onnx_diagnostic/torch_models/hghub/hub_data_cached_configs.py
#: (_ccached_microsoft_phi3_mini_128k_instruct); the same 48 + 48 numbers appear in t-pranavv/local-rollouts,
#: scripts/eval/long_context/eval_long_context.py (LONGROPE_PARAMS).
_PHI3_MINI_128K_SHORT_FACTOR = [
    1.1, 1.1, 1.1, 1.3000000000000003, 1.3500000000000003, 1.3500000000000003, 1.4000000000000004,
    1.5500000000000005, 2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001,
    2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001,
    2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001, 2.000000000000001,
    2.000000000000001, 2.000000000000001, 2.000000000000001, 2.0500000000000007, 2.0500000000000007,
    2.0500000000000007, 2.0500000000000007, 2.0500000000000007, 2.0500000000000007, 2.1000000000000005,
    2.1000000000000005, 2.1500000000000004, 2.25, 2.25, 2.25, 2.25, 2.25, 2.3999999999999995, 2.4499999999999993,
    2.499999999999999, 2.6999999999999984, 2.6999999999999984, 2.7499999999999982, 2.799999999999998,
    2.8999999999999977, 3.049999999999997,
]
_PHI3_MINI_128K_LONG_FACTOR = [
    1.0700000524520874, 1.1200000047683716, 1.149999976158142, 1.4199999570846558, 1.5699999332427979,
    1.7999999523162842, 2.129999876022339, 2.129999876022339, 3.009999990463257, 5.910000324249268,
    6.950000286102295, 9.070000648498535, 9.930000305175781, 10.710000038146973, 11.130000114440918,
    14.609999656677246, 15.409998893737793, 19.809999465942383, 37.279998779296875, 38.279998779296875,
    38.599998474121094, 40.12000274658203, 46.20000457763672, 50.940006256103516, 53.66000747680664,
    54.9373893737793, 56.89738845825195, 57.28738784790039, 59.98738479614258, 60.86738586425781,
    60.887386322021484, 61.71739196777344, 62.91739273071289, 62.957393646240234, 63.41739273071289,
    63.8173942565918, 63.83739471435547, 63.897396087646484, 63.93739700317383, 64.06739807128906,
    64.11434936523438, 64.12435150146484, 64.15435028076172, 64.19435119628906, 64.24435424804688,
    64.57435607910156, 64.69000244140625, 64.76000213623047,
]


def _phi_3() -> PretrainedConfig:
    # microsoft/Phi-3-mini-128k-instruct, config.json: LongRoPE from 4096 (original_max_position_embeddings) to
    # 131072 tokens, base 10000, 32 layers of 32 heads (head_dim 3072 / 32 = 96), and its two factor lists above
    return transformers.Phi3Config(
        max_position_embeddings=131072, original_max_position_embeddings=4096,
        rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0, "short_factor": _PHI3_MINI_128K_SHORT_FACTOR,
                         "long_factor": _PHI3_MINI_128K_LONG_FACTOR},
    )


def _deepseek_v3() -> PretrainedConfig:
    # deepseek-ai/DeepSeek-V3, config.json: 61 layers, YaRN x40 from 4096 to 163840 tokens, beta_fast 32, beta_slow 1,
    # DeepSeek's mscale pair (1.0, 1.0), base 10000, rope slice 64 of the 192-wide query/key head (qk_nope 128)
    return transformers.DeepseekV3Config(
        max_position_embeddings=163840,
        rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0,
                         "original_max_position_embeddings": 4096, "beta_fast": 32, "beta_slow": 1,
                         "mscale": 1.0, "mscale_all_dim": 1.0},
    )


def _gemma_3() -> PretrainedConfig:
    # google/gemma-3-12b-it, config.json (text_config): local base 10000 (rope_local_base_freq), global base 1e6
    # with linear scaling x8 (rope_scaling), window 1024, 48 layers (sliding_window_pattern 6: 5 local : 1 global),
    # 131072 positions
    return transformers.Gemma3TextConfig(
        num_hidden_layers=48, sliding_window=1024, max_position_embeddings=131072, sliding_window_pattern=6,
        rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                         "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1_000_000.0}},
    )


def _gemma_4() -> PretrainedConfig:
    # google/gemma-4-E4B-it, config.json (text_config): 42 layers (5 sliding : 1 full, so 7 full), window 512,
    # 131072 positions; sliding layers base 10000, full layers p-RoPE ("proportional", partial_rotary_factor 0.25)
    # base 1e6
    return transformers.Gemma4TextConfig(
        num_hidden_layers=42, sliding_window=512, max_position_embeddings=131072,
        rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                         "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                            "rope_theta": 1_000_000.0}},
    )


def _qwen_7b(config_class: type, **published: Any) -> Callable[[], PretrainedConfig]:
    """A Qwen 7B model: 28 layers (Qwen/Qwen2-7B-Instruct, Qwen/Qwen2-VL-7B-Instruct, Qwen/Qwen2.5-VL-7B-Instruct,
    config.json), base 1e6 (rope_theta), and whatever else ``published`` passes."""
    return lambda: config_class(num_hidden_layers=28, **published)


#: the rope parameters of Qwen/Qwen2-VL-7B-Instruct and Qwen/Qwen2.5-VL-7B-Instruct (config.json: rope_scaling
#: {"type": "mrope", "mrope_section": [16, 24, 24]}: 16 + 24 + 24 = 64 pairs of a 128-wide head; rope_theta 1e6)
_QWEN_VL_ROPE = {"rope_type": "default", "rope_theta": 1_000_000.0, "mrope_section": [16, 24, 24]}


def _qwen3_vl() -> PretrainedConfig:
    # Qwen/Qwen3-VL-8B-Instruct, config.json (text_config): 36 layers, 262144 positions, base 5e6, interleaved M-RoPE
    # (rope_scaling {"mrope_interleaved": true, "mrope_section": [24, 20, 20]}: 64 pairs of a 128-wide head)
    return transformers.Qwen3VLTextConfig(
        num_hidden_layers=36, max_position_embeddings=262144,
        rope_parameters={"rope_type": "default", "rope_theta": 5_000_000.0, "mrope_section": [24, 20, 20],
                         "mrope_interleaved": True},
    )


def _smollm3() -> PretrainedConfig:
    # HuggingFaceTB/SmolLM3-3B, config.json: 36 layers, 65536 positions, base 5e6, no_rope_layers [1, 1, 1, 0] x 9
    # (what no_rope_layer_interval 4 builds)
    return transformers.SmolLM3Config(
        num_hidden_layers=36, max_position_embeddings=65536, no_rope_layer_interval=4,
        rope_parameters={"rope_type": "default", "rope_theta": 5_000_000.0},
    )


def _cohere2() -> PretrainedConfig:
    # CohereForAI/c4ai-command-r7b-12-2024 (Command R7B), config.json: 32 layers, 8192 positions, base 50000,
    # window 4096 on 3 of every 4 layers (sliding_window_pattern 4)
    return transformers.Cohere2Config(
        num_hidden_layers=32, max_position_embeddings=8192, sliding_window=4096, sliding_window_pattern=4,
        rope_parameters={"rope_type": "default", "rope_theta": 50000.0},
    )


#: One entry per family, in the order of the course's table.
FAMILIES: list[Family] = [
    Family("BERT", transformers.BertConfig, "learned absolute", "02_learnable.ipynb",
           "class defaults = google-bert/bert-base-uncased config.json (512 positions, 12 layers)"),
    Family("GPT-2", transformers.GPT2Config, "learned absolute", "02_learnable.ipynb",
           "class defaults = openai-community/gpt2 config.json (n_positions 1024, 12 layers)"),
    Family("T5", transformers.T5Config, "relative buckets (score bias)", "05_relative_biases.ipynb",
           "class defaults = google-t5/t5-small config.json (32 buckets, max distance 128, 6 layers)"),
    Family("Bloom", lambda: transformers.BloomConfig(n_layer=24, hidden_size=1024, n_head=16),  # bigscience/bloom-560m
           "ALiBi (score bias)", "05_relative_biases.ipynb", "bigscience/bloom-560m config.json: layers, width, heads"),
    Family("GPT-NeoX / Pythia", transformers.GPTNeoXConfig, "RoPE, partial", "03_rope.ipynb",
           "class defaults = EleutherAI/gpt-neox-20b config.json (rotary_pct 0.25, base 10000, 2048 positions)"),
    Family("Phi (phi-1, phi-1.5)", transformers.PhiConfig, "RoPE, partial", "03_rope.ipynb",
           "class defaults = microsoft/phi-1 and microsoft/phi-1_5 config.json (partial_rotary_factor 0.5)"),
    Family("Llama 2", lambda: transformers.LlamaConfig(max_position_embeddings=4096),  # meta-llama/Llama-2-7b-hf: 4096
           "RoPE", "03_rope.ipynb", "meta-llama/Llama-2-7b-hf config.json: max_position_embeddings (rest = defaults)"),
    Family("Llama 3.1", _llama_3_1, "RoPE, Llama 3 scaling", "08_todays_models.ipynb",
           "meta-llama/Llama-3.1-8B config.json: rope parameters, max_position_embeddings"),
    Family("Llama 4", _llama_4, "RoPE on chunked layers, NoPE + temperature on the others", "08_todays_models.ipynb",
           "meta-llama/Llama-4-Scout-17B-16E config.json: rope parameters, NoPE layers, chunk, context"),
    Family("Mistral", lambda: transformers.MistralConfig(max_position_embeddings=32768),  # mistralai/Mistral-7B-v0.1
           "RoPE, sliding window", "03_rope.ipynb",
           "mistralai/Mistral-7B-v0.1 config.json: max_position_embeddings (window 4096, base 10000 = defaults)"),
    Family("Qwen2", _qwen_7b(transformers.Qwen2Config, rope_parameters={"rope_type": "default", "rope_theta": 1e6}),
           "RoPE", "03_rope.ipynb", "Qwen/Qwen2-7B-Instruct config.json: rope_theta, layers (32768 = default)"),
    Family("Qwen3", lambda: transformers.Qwen3Config(  # Qwen/Qwen3-8B, config.json: base 1e6, 40960 positions, 36 layers
        num_hidden_layers=36, max_position_embeddings=40960, rope_parameters={"rope_type": "default", "rope_theta": 1e6}),
           "RoPE", "03_rope.ipynb", "Qwen/Qwen3-8B config.json: rope_theta, max_position_embeddings, layers"),
    Family("Qwen2-VL", _qwen_7b(transformers.Qwen2VLTextConfig, max_position_embeddings=32768,
                                rope_parameters=_QWEN_VL_ROPE),
           "M-RoPE, sectioned (t, h, w)", "08_todays_models.ipynb",
           "Qwen/Qwen2-VL-7B-Instruct config.json: rope parameters, max_position_embeddings, layers"),
    Family("Qwen2.5-VL", _qwen_7b(transformers.Qwen2_5_VLTextConfig, max_position_embeddings=128000,
                                  rope_parameters=_QWEN_VL_ROPE),
           "M-RoPE, sectioned (t, h, w)", "08_todays_models.ipynb",
           "Qwen/Qwen2.5-VL-7B-Instruct config.json: rope parameters, max_position_embeddings, layers"),
    Family("Qwen3-VL", _qwen3_vl, "M-RoPE, interleaved (t, h, w)", "08_todays_models.ipynb",
           "Qwen/Qwen3-VL-8B-Instruct config.json: rope parameters, max_position_embeddings, layers"),
    Family("Gemma 2", transformers.Gemma2Config, "RoPE, local and global layers", "03_rope.ipynb",
           "class defaults = google/gemma-2-2b config.json (26 layers, window 4096, base 10000, 8192 positions)"),
    Family("Gemma 3", _gemma_3, "RoPE, a base per layer type", "08_todays_models.ipynb",
           "google/gemma-3-12b-it config.json: rope parameters, sliding_window, layers"),
    Family("Gemma 4", _gemma_4, "RoPE local, proportional (p-RoPE) global", "08_todays_models.ipynb",
           "google/gemma-4-E4B-it config.json: rope parameters, sliding_window, layers"),
    Family("Phi-3", _phi_3, "RoPE, LongRoPE", "08_todays_models.ipynb",
           "microsoft/Phi-3-mini-128k-instruct config.json: rope type, base, factor lists, lengths"),
    Family("DeepSeek-V3", _deepseek_v3, "decoupled RoPE (MLA), YaRN", "08_todays_models.ipynb",
           "deepseek-ai/DeepSeek-V3 config.json: rope parameters, max_position_embeddings"),
    Family("SmolLM3", _smollm3, "RoPE, NoPE every 4th layer", "08_todays_models.ipynb",
           "HuggingFaceTB/SmolLM3-3B config.json: rope_theta, max_position_embeddings, NoPE layers"),
    Family("Cohere2", _cohere2, "RoPE (interleaved) on sliding layers only", "08_todays_models.ipynb",
           "CohereForAI/c4ai-command-r7b-12-2024 config.json: rope_theta, window and pattern, layers"),
]


# ----------------------------------------------------------------------------- readers (transformers 5.x)


def legacy_rope_theta(config: PretrainedConfig) -> float:
    """The transformers 4.x habit, kept to show the bug: ``getattr(config, "rope_theta", 10000.0)``.

    In 5.x the base lives in ``config.rope_parameters``, the attribute is gone, and this returns
    10000 for every config: Llama 3.1's 500000, Qwen3's 1e6, silently. Use :func:`rope_theta`.
    """
    return getattr(config, "rope_theta", 10000.0)


def layer_pattern(flags: list[bool]) -> str:
    """Rotating layers as text: "all 32", "none", or "27 of 36: RRRN x 9" (R rotates, N does not; the shortest period)."""
    n, rotating = len(flags), sum(flags)
    if rotating in (0, n):
        return "none" if rotating == 0 else f"all {n}"
    period = next(p for p in range(1, n + 1) if all(flags[i] == flags[i % p] for i in range(n)))
    unit = "".join("R" if f else "N" for f in flags[:period])
    repeat = f" x {n // period}" + (f" + {''.join('R' if f else 'N' for f in flags[: n % period])}" if n % period else "")
    return f"{rotating} of {n}: {unit}{repeat}" if period < n else f"{rotating} of {n}: {unit}"


# ----------------------------------------------------------------------------- the table


def family_table(families: list[Family] | None = None) -> pd.DataFrame:
    """One row per family, every value read from its config object (nothing downloaded).

    Columns: family, config class, scheme, base (rope_theta; one per layer type where they differ),
    scaling type, factor, rotary fraction, context length (max_position_embeddings), layers that
    rotate (:func:`layer_pattern` of :func:`rotating_layers`, and "sliding only" for Cohere2),
    notebook (the course notebook that teaches the idea), values from (the model id whose config.json gives them).
    """
    rows = []
    for family in FAMILIES if families is None else families:
        with _quiet_transformers():
            config = family.config()
        per_type = rope_layer_types(config)
        params = {None: rope_parameters(config)} if not per_type else {t: rope_parameters(config, t) for t in per_type}
        flags = rotating_layers(config)
        rotate = layer_pattern(flags)
        if config.model_type in ROPE_ON_SLIDING_ONLY and any(flags):
            rotate = f"sliding only, {rotate}"
        rows.append({
            "family": family.name,
            "config class": type(config).__name__,
            "scheme": family.scheme,
            "base": _by_type(params, lambda p: _number(p["rope_theta"])),
            "scaling type": _by_type(params, lambda p: p.get("rope_type", "default")),
            "factor": _by_type(params, lambda p: _factor(config, p)),
            "rotary fraction": _by_type(params, lambda p: _fraction(config, p)),
            "context length": _number(getattr(config, "max_position_embeddings", None)),
            "layers that rotate": rotate,
            "notebook": family.notebook,
            "values from": family.source,
        })
    return pd.DataFrame(rows)


@contextmanager
def _quiet_transformers() -> Iterator[None]:
    """Silence transformers' logger while a published config is built, then restore its verbosity.

    Published configs trip validation notes that are not errors (Phi-3's ``original_max_position_embeddings``
    next to LongRoPE, Llama 4 Scout's equal low and high frequency factors); the table should print no stderr.
    """
    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()
    try:
        yield
    finally:
        transformers.logging.set_verbosity(verbosity)


def _by_type(params: dict[str | None, dict[str, Any] | None], value: Callable[[dict[str, Any]], str]) -> str:
    """One value, or "value (layer type) / ..." where the layer types differ; "—" without RoPE."""
    values = {t: "—" if p is None else value(p) for t, p in params.items()}
    if len(set(values.values())) == 1:
        return next(iter(values.values()))
    return " / ".join(f"{v} ({t.removesuffix('_attention')})" for t, v in values.items())


def _number(value: float | int | None) -> str:
    """500000.0 -> "500,000"; 0.25 -> "0.25"; None -> "—"."""
    if value is None:
        return "—"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:g}"


def _factor(config: PretrainedConfig, params: dict[str, Any]) -> str:
    """The scaling factor; LongRoPE without one: max_position_embeddings / original, as Hugging Face derives it."""
    if params.get("factor") is not None:
        return _number(params["factor"])
    if params.get("rope_type") == "longrope":
        original = params["original_max_position_embeddings"]
        return f"{_number(config.max_position_embeddings / original)} ({config.max_position_embeddings} / {original})"
    return "—"


def _fraction(config: PretrainedConfig, params: dict[str, Any]) -> str:
    """Rotated fraction of a head: partial_rotary_factor (p-RoPE's p for proportional), DeepSeek's rope slice, and
    M-RoPE's pairs per axis."""
    rope_dim = getattr(config, "qk_rope_head_dim", None)
    if rope_dim is not None:
        width = rope_dim + config.qk_nope_head_dim
        return f"{_number(rope_dim / width)} ({rope_dim} of {width} dims)"
    fraction = _number(params.get("partial_rotary_factor", 1.0))
    if params.get("mrope_section") is not None:
        order = "interleaved" if params.get("mrope_interleaved") else "sectioned"
        return f"{fraction} (t/h/w pairs {'/'.join(map(str, params['mrope_section']))}, {order})"
    return f"{fraction} (p-RoPE)" if params.get("rope_type") == "proportional" else fraction


# ----------------------------------------------------------------------------- section 2: the harness

#: a tiny config for whole attention layers: hidden size 64, 4 heads of 16
TINY = dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=4, num_hidden_layers=2,
            intermediate_size=64, vocab_size=128)


def hf_modeling(model: str):
    """The module ``transformers.models.<model>.modeling_<model>`` (e.g. "llama", "qwen2_vl")."""
    return importlib.import_module(f"transformers.models.{model}.modeling_{model}")


def hf_rotary(module: torch.nn.Module, positions: Tensor, *layer_type: str) -> tuple[Tensor, Tensor]:
    """A Hugging Face rotary module's (cos, sin) at positions, at half width as the library's (HF repeats the halves)."""
    cos, sin = module(torch.zeros(1), positions, *layer_type)
    return cos[..., : cos.shape[-1] // 2], sin[..., : sin.shape[-1] // 2]


class Agreement:
    """``agree(name, ours, theirs, tol)`` asserts ``|ours - theirs| <= tol`` everywhere (tol 0: bit for bit).

    Each call records the bound that held under ``name``; :attr:`bounds` is that record, name -> text.
    """

    def __init__(self) -> None:
        self.bounds: dict[str, str] = {}

    def __call__(self, name: str, ours: Tensor, theirs: Tensor, tol: float = 1e-5) -> None:
        assert ours.shape == theirs.shape, f"{name}: shapes {tuple(ours.shape)} and {tuple(theirs.shape)}"
        error = (ours.double() - theirs.double()).abs().max().item()
        assert error <= tol, f"{name}: {error:.3g} > {tol:g}"
        self.bounds[name] = "equal, bit for bit" if tol == 0 else f"within {tol:g} (rounding)"


# ----------------------------------------------------------------------------- section 3: the conversion lab


def llama_pair(init_std: float, seed: int = 9) -> tuple[torch.nn.Module, torch.nn.Module]:
    """A random Hugging Face Llama (half layout) and an empty Llama 4 text model of the same shape (interleaved).

    The Llama 4 model is configured as the same dense network: every layer rotates, no query-key
    norm, no mixture of experts, one chunk of attention, no temperature; RMSNorm epsilon 1e-5 in
    both (the two config classes default to different values). ``seed`` draws the Llama's weights.
    """
    shape = dict(vocab_size=64, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=4, head_dim=16, max_position_embeddings=128, tie_word_embeddings=False,
                 rms_norm_eps=1e-5, initializer_range=init_std,
                 rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
    torch.manual_seed(seed)
    llama = transformers.LlamaForCausalLM(transformers.LlamaConfig(**shape)).eval()
    llama4 = transformers.Llama4ForCausalLM(transformers.Llama4TextConfig(
        **shape, intermediate_size_mlp=128, no_rope_layers=[1, 1], use_qk_norm=False, moe_layers=[],
        attention_chunk_size=1024, attn_temperature_tuning=False)).eval()
    return llama, llama4


def converted(state: dict, permute: bool) -> dict:
    """Llama's state_dict under Llama 4's names (mlp -> feed_forward), W_q and W_k permuted per head if asked."""
    from posenc_lib.rotary.rope import convert_rope_checkpoint

    if permute:
        state = convert_rope_checkpoint(state, head_dim=16, to="interleaved")
    return {name.replace(".mlp.", ".feed_forward."): weight for name, weight in state.items()}


# ----------------------------------------------------------------------------- section 5: held-out videos


class HeldOutVideos:
    """A :class:`~posenc_course.data.WhenAndWhere` task whose placements of (A, B) are split once, at random.

    ``sample(n, generator)`` draws training videos from the kept placements only; :meth:`test` returns
    every held-out placement once (inputs, labels), so accuracy at the trained size measures
    generalisation to videos the model never saw. ``held_out`` is the fraction held out; the split is
    fixed by ``seed``.
    """

    def __init__(self, task: Any, held_out: float = 0.25, seed: int = 0) -> None:
        self.task = task
        cells, labels = task.placements()
        order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(seed))
        n_test = round(held_out * len(labels))
        self.test_cells, self.test_labels = cells[order[:n_test]], labels[order[:n_test]]
        self.train_cells, self.train_labels = cells[order[n_test:]], labels[order[n_test:]]

    def _videos(self, cells: Tensor) -> Tensor:
        videos = torch.zeros(len(cells), self.task.seq_len, dtype=torch.long)
        rows = torch.arange(len(cells))
        videos[rows, cells[:, 0]] = 1
        videos[rows, cells[:, 1]] = 2
        return videos

    def sample(self, n: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        """``n`` training videos, uniform over the kept placements: (n, seq_len) tokens and (n,) labels."""
        pick = torch.randint(len(self.train_labels), (n,), generator=generator)
        return self._videos(self.train_cells[pick]), self.train_labels[pick]

    def test(self) -> tuple[Tensor, Tensor]:
        """Every held-out placement once: (n_test, seq_len) tokens and (n_test,) labels."""
        return self._videos(self.test_cells), self.test_labels

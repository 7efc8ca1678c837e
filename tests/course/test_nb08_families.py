"""posenc_course.nb08_families: the table of model families, the v5 rope readers, and which layers rotate.

Which layers rotate is checked against the Hugging Face attention modules themselves, on tiny
configs: each module is run twice with the rotary tables of two different position ranges, and its
output changes exactly when the layer rotates.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch

import transformers  # the reference; pinned in requirements.txt, so a missing package fails
from transformers.models.cohere2 import modeling_cohere2 as cohere2  # noqa: E402
from transformers.models.gemma3 import modeling_gemma3 as gemma3  # noqa: E402
from transformers.models.llama4 import modeling_llama4 as llama4  # noqa: E402
from transformers.models.smollm3 import modeling_smollm3 as smollm3  # noqa: E402

from posenc_course.nb08_families import FAMILIES, family_table, layer_pattern, legacy_rope_theta
from posenc_lib.interop.hf_config import rope_parameters, rope_theta, rotary_scheme, rotating_layers

COLUMNS = ["family", "config class", "scheme", "base", "scaling type", "factor", "rotary fraction", "context length",
           "layers that rotate", "notebook", "values from"]
TINY = dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=4, num_hidden_layers=8, intermediate_size=64,
            vocab_size=128, bos_token_id=0, eos_token_id=1, pad_token_id=2)


@pytest.fixture(scope="module")
def table():
    return family_table().set_index("family")


def family(name: str):
    return next(f for f in FAMILIES if f.name == name).config()


def test_table_has_one_row_per_family_and_the_documented_columns(table):
    assert list(table.reset_index().columns) == COLUMNS
    assert list(table.index) == [f.name for f in FAMILIES]
    assert set(table["notebook"]) <= {p.name for p in (Path(__file__).parents[2] / "notebooks").glob("*.ipynb")}
    no_rope = ["BERT", "GPT-2", "T5", "Bloom"]
    assert (table.loc[no_rope, ["base", "scaling type", "rotary fraction"]] == "—").all().all()
    assert (table.loc[no_rope, "layers that rotate"] == "none").all()


@pytest.mark.parametrize("name, column, expected", [
    ("Llama 2", "base", "10,000"),
    ("Llama 2", "context length", "4,096"),
    ("Llama 3.1", "base", "500,000"),
    ("Llama 3.1", "scaling type", "llama3"),
    ("Llama 3.1", "factor", "8"),
    ("Llama 3.1", "context length", "131,072"),
    ("GPT-NeoX / Pythia", "rotary fraction", "0.25"),
    ("Phi (phi-1, phi-1.5)", "rotary fraction", "0.5"),
    ("Gemma 3", "base", "10,000 (sliding) / 1,000,000 (full)"),
    ("Gemma 3", "scaling type", "default (sliding) / linear (full)"),
    ("Gemma 4", "scaling type", "default (sliding) / proportional (full)"),
    ("Gemma 4", "rotary fraction", "1 (sliding) / 0.25 (p-RoPE) (full)"),
    ("Qwen2-VL", "rotary fraction", "1 (t/h/w pairs 16/24/24, sectioned)"),
    ("Qwen3-VL", "rotary fraction", "1 (t/h/w pairs 24/20/20, interleaved)"),
    ("Phi-3", "scaling type", "longrope"),
    ("Phi-3", "factor", "32 (131072 / 4096)"),
    ("DeepSeek-V3", "scaling type", "yarn"),
    ("DeepSeek-V3", "factor", "40"),
    ("DeepSeek-V3", "rotary fraction", "0.333333 (64 of 192 dims)"),
    ("DeepSeek-V3", "context length", "163,840"),
    ("SmolLM3", "layers that rotate", "27 of 36: RRRN x 9"),
    ("SmolLM3", "base", "5,000,000"),
    ("SmolLM3", "context length", "65,536"),
    ("Llama 4", "layers that rotate", "36 of 48: RRRN x 12"),
    ("Llama 4", "scaling type", "llama3"),
    ("Llama 4", "factor", "16"),
    ("Llama 4", "context length", "262,144"),
    ("Cohere2", "layers that rotate", "sliding only, 24 of 32: RRRN x 8"),
    ("Cohere2", "base", "50,000"),
    ("Gemma 2", "layers that rotate", "all 26"),
    ("Gemma 4", "layers that rotate", "all 42"),
    ("Qwen2.5-VL", "context length", "128,000"),
    ("Qwen3-VL", "base", "5,000,000"),
    ("Qwen3-VL", "context length", "262,144"),
])
def test_table_values_read_from_the_configs(table, name, column, expected):
    assert table.loc[name, column] == expected


def test_published_values_override_class_defaults():
    """LlamaConfig() is Llama-2-like with a 2048 context: the table passes the published values instead."""
    assert transformers.LlamaConfig().max_position_embeddings == 2048
    assert rope_theta(transformers.LlamaConfig()) == 10000.0
    assert family("Llama 3.1").rope_parameters["rope_type"] == "llama3"


def test_table_builds_quietly():
    """Published configs trip transformers' validation warnings (Llama 4 Scout's equal low and high frequency factors,
    Phi-3's original_max_position_embeddings): the table silences them while it builds, then gives the logger its
    verbosity back, so a notebook cell shows no stderr."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    library_logger = logging.getLogger("transformers")
    library_logger.addHandler(handler)
    try:
        verbosity = transformers.logging.get_verbosity()
        family_table()
        assert [r.getMessage() for r in records] == []
        assert transformers.logging.get_verbosity() == verbosity
        family("Llama 4")  # built outside the table, the warning is there: the check above can fail
        assert any("high_freq_factor" in r.getMessage() for r in records)
    finally:
        library_logger.removeHandler(handler)


def test_phi3_longrope_factors_are_one_per_pair_and_fitted():
    """Phi-3-mini-128k's short and long factor lists: one per rotary pair of its 96-wide head, each rising from the
    high-frequency pairs to the low ones, and different (the long list stretches the slow pairs ~65x)."""
    params = family("Phi-3").rope_parameters
    short, long = params["short_factor"], params["long_factor"]
    assert len(short) == len(long) == 3072 // 32 // 2
    assert short == sorted(short) and long == sorted(long)
    assert short[0] >= 1.0 and long[0] >= 1.0 and long[-1] > 60 > short[-1]


def test_v4_reader_silently_falls_back_to_10000():
    """transformers 5.x moved rope_theta into rope_parameters: the 4.x habit getattr(config, "rope_theta", 10000.0)
    gets 10000 for Llama 3.1 (500000) without any error; the v5 reader gets 500000."""
    config = family("Llama 3.1")
    assert not hasattr(config, "rope_theta")
    assert legacy_rope_theta(config) == 10000.0
    assert rope_theta(config) == 500000.0
    # even when the old keyword is passed, 5.x moves it inside rope_parameters
    old_style = transformers.LlamaConfig(rope_theta=500000.0)
    assert legacy_rope_theta(old_style) == 10000.0 and rope_theta(old_style) == 500000.0
    assert legacy_rope_theta(family("Qwen3")) == 10000.0 and rope_theta(family("Qwen3")) == 1e6


def test_rope_parameters_by_layer_type():
    gemma = family("Gemma 3")
    assert rope_theta(gemma, "sliding_attention") == 10000.0 and rope_theta(gemma, "full_attention") == 1e6
    assert rope_parameters(gemma, "full_attention")["factor"] == 8.0
    with pytest.raises(ValueError, match=r"layer_type must be given for Gemma3TextConfig.*got None"):
        rope_theta(gemma)
    with pytest.raises(ValueError, match=r"layer_type must be one of \['sliding_attention', 'full_attention'\].*'global'"):
        rope_parameters(gemma, "global")
    cohere = family("Cohere2")  # one dict shared by its layer types
    assert rope_parameters(cohere, "sliding_attention") is rope_parameters(cohere)
    assert rope_parameters(family("BERT")) is None and rope_theta(family("T5")) is None


def test_layer_pattern():
    assert layer_pattern([True, True, True, False] * 3) == "9 of 12: RRRN x 3"
    assert layer_pattern([True] * 4) == "all 4" and layer_pattern([False] * 3) == "none"
    assert layer_pattern([True, False, False]) == "1 of 3: RNN"
    assert layer_pattern([True, True, False, True, True]) == "4 of 5: RRN x 1 + RR"


# ----------------------------------------------------------------------------- which layers rotate, as the modules do it


def rotates(attention, position_embeddings, x: torch.Tensor) -> bool:
    """Does the module's output depend on the rotary tables it is given? (two position ranges, same tokens)"""
    with torch.no_grad():
        a = attention(x, position_embeddings(0), None)[0]
        b = attention(x, position_embeddings(1000), None)[0]
    return not torch.allclose(a, b)


def module_flags(config, attention_class, rotary) -> list[bool]:
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    x = torch.randn(1, 6, config.hidden_size)
    return [rotates(attention_class(config, layer_idx=i).eval(), lambda offset: rotary(torch.arange(offset, offset + 6)[None]), x)
            for i in range(config.num_hidden_layers)]


@pytest.mark.parametrize("kwargs", [{}, {"no_rope_layer_interval": 3}, {"no_rope_layers": [1, 0, 0, 1, 1, 1, 0, 1]}])
def test_rotating_layers_match_smollm3(kwargs):
    config = transformers.SmolLM3Config(**TINY, **kwargs)
    rotary = smollm3.SmolLM3RotaryEmbedding(config)
    flags = module_flags(config, smollm3.SmolLM3Attention, lambda p: rotary(torch.zeros(1), p))
    assert rotating_layers(config) == flags == [bool(smollm3.SmolLM3Attention(config, i).use_rope) for i in range(8)]
    assert not all(flags) and any(flags)


def test_rotating_layers_match_llama4():
    config = transformers.Llama4TextConfig(**TINY, head_dim=16, intermediate_size_mlp=64)
    rotary = llama4.Llama4TextRotaryEmbedding(config)
    flags = module_flags(config, llama4.Llama4TextAttention, lambda p: rotary(torch.zeros(1), p))
    assert rotating_layers(config) == flags == [True, True, True, False] * 2
    assert [bool(llama4.Llama4TextAttention(config, i).use_rope) for i in range(8)] == flags


@pytest.mark.parametrize("window", [4096, None], ids=["sliding_window", "no sliding_window"])
def test_rotating_layers_match_cohere2(window):
    """Cohere2 rotates its sliding layers only, and none at all when the config has no sliding_window."""
    config = transformers.Cohere2Config(**TINY, sliding_window=window)
    rotary = cohere2.Cohere2RotaryEmbedding(config)
    flags = module_flags(config, cohere2.Cohere2Attention, lambda p: rotary(torch.zeros(1), p))
    assert rotating_layers(config) == flags
    assert flags == ([True, True, True, False] * 2 if window else [False] * 8)


def test_rotating_layers_gemma3_every_layer_with_its_type():
    config = transformers.Gemma3TextConfig(**TINY, head_dim=16, sliding_window=8)
    rotary = gemma3.Gemma3RotaryEmbedding(config)
    config._attn_implementation = "eager"
    x = torch.randn(1, 6, 64, generator=torch.Generator().manual_seed(1))
    flags = [rotates(gemma3.Gemma3Attention(config, layer_idx=i).eval(),
                     lambda offset, t=t: rotary(torch.zeros(1), torch.arange(offset, offset + 6)[None], t), x)
             for i, t in enumerate(config.layer_types)]
    assert rotating_layers(config) == flags == [True] * 8
    assert rotating_layers(transformers.BertConfig(num_hidden_layers=3)) == [False] * 3


# rotary families -> (Hugging Face rotary module, its apply function, layer types); each built from the published config
ROTARY = {
    "GPT-NeoX / Pythia": ("gpt_neox.modeling_gpt_neox.GPTNeoXRotaryEmbedding", None),
    "Phi (phi-1, phi-1.5)": ("phi.modeling_phi.PhiRotaryEmbedding", None),
    "Llama 2": ("llama.modeling_llama.LlamaRotaryEmbedding", None),
    "Llama 3.1": ("llama.modeling_llama.LlamaRotaryEmbedding", None),
    "Mistral": ("mistral.modeling_mistral.MistralRotaryEmbedding", None),
    "Qwen2": ("qwen2.modeling_qwen2.Qwen2RotaryEmbedding", None),
    "Qwen3": ("qwen3.modeling_qwen3.Qwen3RotaryEmbedding", None),
    "Gemma 2": ("gemma2.modeling_gemma2.Gemma2RotaryEmbedding", None),
    "Gemma 3": ("gemma3.modeling_gemma3.Gemma3RotaryEmbedding", ["sliding_attention", "full_attention"]),
    "Gemma 4": ("gemma4.modeling_gemma4.Gemma4TextRotaryEmbedding", ["sliding_attention", "full_attention"]),
    "Phi-3": ("phi3.modeling_phi3.Phi3RotaryEmbedding", None),
    "SmolLM3": ("smollm3.modeling_smollm3.SmolLM3RotaryEmbedding", None),
    "Cohere2": ("cohere2.modeling_cohere2.Cohere2RotaryEmbedding", None),
}


def _module(path: str):
    module, name = path.rsplit(".", 1)
    return getattr(__import__(f"transformers.models.{module}", fromlist=[name]), name)


@pytest.mark.parametrize("name", list(ROTARY))
def test_rotary_scheme_of_each_published_config_gives_its_models_tables(name):
    """rotary_scheme(config) computes the cos/sin tables of the family's own rotary module, bit for bit, at
    positions below and far beyond the original context (LongRoPE switches its factors there)."""
    path, layer_types = ROTARY[name]
    config = family(name)
    hf = _module(path)(config)
    gen = torch.Generator().manual_seed(0)
    for layer_type in layer_types or [None]:
        ours = rotary_scheme(config, layer_type)
        for positions in (torch.arange(64)[None], torch.randint(0, 120_000, (2, 48), generator=gen)):
            hf_cos, hf_sin = hf(torch.zeros(1), positions, *([layer_type] if layer_type else []))
            cos, sin = ours.cos_sin(positions)
            # Hugging Face's full width: the halves repeated, or each pair's value twice (interleaved)
            widen = (lambda t: t.repeat_interleave(2, -1)) if ours.layout == "interleaved" else (lambda t: torch.cat((t, t), -1))
            assert torch.equal(widen(cos), hf_cos) and torch.equal(widen(sin), hf_sin), (name, layer_type)


def test_rotary_scheme_refuses_what_is_not_plain_rope():
    with pytest.raises(ValueError, match="config must have rope parameters"):
        rotary_scheme(family("BERT"))
    with pytest.raises(ValueError, match="uses M-RoPE"):
        rotary_scheme(family("Qwen2-VL"))
    with pytest.raises(ValueError, match="layer_type must be given"):
        rotary_scheme(family("Gemma 4"))
    assert rotary_scheme(family("Cohere2")).layout == "interleaved" and rotary_scheme(family("Llama 3.1")).layout == "half"

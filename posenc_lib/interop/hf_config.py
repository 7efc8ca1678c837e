"""Reading a ``transformers`` config the way transformers 5.x stores it, and the RotaryPE it describes.

transformers 4.x kept the base as ``config.rope_theta`` and the scaling as ``config.rope_scaling``;
5.x keeps both in ``config.rope_parameters`` (``rope_theta`` inside it), and for models with a base
per layer type (Gemma 3 and 4) ``rope_parameters`` is a dict per layer type.

    rope_parameters(config, layer_type)   the rope dict (of a layer type), None without RoPE
    rope_theta(config, layer_type)        the base
    rotary_scheme(config, layer_type)     the library's RotaryPE for it (base, fraction, scaling, layout)
    rotating_layers(config)               one flag per layer: does it rotate (RoPE) or not (NoPE)

Which layers rotate is a per-layer decision in some families, read from three kinds of config field:

* ``no_rope_layers`` (SmolLM3, Llama 4): one flag per layer, **1 = the layer uses RoPE** (the name
  says the opposite); by default a NoPE layer every ``no_rope_layer_interval`` = 4 layers.
* ``layer_types`` (Cohere2): RoPE only on "sliding_attention" layers, and only when the config has
  a ``sliding_window`` (Hugging Face's ``Cohere2Attention`` rotates when its window is set); the
  global layers have no position encoding at all.
* ``layer_types`` (Gemma 2/3/4): every layer rotates, with the rope parameters of its layer type.

Nothing here imports transformers: a config is read through its attributes (``pip install
posenc-lib[hf]`` brings transformers to build one).
"""

from __future__ import annotations

from typing import Any

from posenc_lib.rotary.rope import RotaryPE
from posenc_lib.rotary.scaling import standard_config

__all__ = ["rope_parameters", "rope_layer_types", "rope_theta", "rotary_scheme", "rotating_layers", "INTERLEAVED_LAYOUT",
           "ROPE_ON_SLIDING_ONLY"]

#: a ``transformers.PretrainedConfig`` (any object with its attributes)
PretrainedConfig = Any
#: model types whose attention rotates only on its sliding-window layers (Hugging Face's Cohere2Attention)
ROPE_ON_SLIDING_ONLY: frozenset[str] = frozenset({"cohere2"})
#: model types whose Hugging Face code pairs neighbouring dims, the library's "interleaved" layout (Cohere's rotate_half
#: on even and odd dims, GPT-J's rotate_every_two, Llama 4's complex numbers); every other family pairs halves
INTERLEAVED_LAYOUT: frozenset[str] = frozenset({"cohere", "cohere2", "gptj", "llama4_text"})


def rope_parameters(config: PretrainedConfig, layer_type: str | None = None) -> dict[str, Any] | None:
    """The rope parameters of ``config`` the v5 way: ``config.rope_parameters`` (base inside, as ``rope_theta``).

    A transformers 4.x config (no ``rope_parameters``) gives its ``rope_theta``, ``rope_scaling`` (its legacy
    ``type`` key read as ``rope_type``) and ``partial_rotary_factor`` as one such dict.

    For a config with a dict per layer type (Gemma 3 and 4) give ``layer_type``, one of
    ``config.layer_types``; for the others ``layer_type`` must be None or one of the config's layer
    types (they share one dict). None for a model without RoPE (BERT, GPT-2, T5, Bloom).

    Raises ValueError naming ``layer_type`` when it is unknown, or missing for a per-layer-type config.
    """
    params = getattr(config, "rope_parameters", None) or None
    if params is None and getattr(config, "rope_theta", None) is not None:  # transformers 4.x: base and scaling apart
        params = {"rope_type": "default", **(getattr(config, "rope_scaling", None) or {}), "rope_theta": config.rope_theta}
        if getattr(config, "partial_rotary_factor", None) is not None:
            params["partial_rotary_factor"] = config.partial_rotary_factor
        if "type" in params and params["rope_type"] == "default":  # 4.x's key for the type
            params["rope_type"] = params.pop("type")
    layer_types = list(dict.fromkeys(getattr(config, "layer_types", None) or []))
    if layer_type is not None and layer_type not in layer_types:
        raise ValueError(f"layer_type must be one of {layer_types} (config.layer_types of {type(config).__name__}), "
                         f"got {layer_type!r}")
    typed = rope_layer_types(config)
    if params is None or not typed:
        return params
    if layer_type is None:
        raise ValueError(f"layer_type must be given for {type(config).__name__}, whose rope_parameters has one dict "
                         f"per layer type; one of {typed}, got None")
    return params.get(layer_type)


def rope_theta(config: PretrainedConfig, layer_type: str | None = None) -> float | None:
    """The RoPE base, read correctly in transformers 5.x: ``config.rope_parameters["rope_theta"]`` (None without RoPE)."""
    params = rope_parameters(config, layer_type)
    return None if params is None else float(params["rope_theta"])


def rotary_scheme(config: PretrainedConfig, layer_type: str | None = None) -> RotaryPE:
    """The library's :class:`~posenc_lib.rotary.rope.RotaryPE` for a config's rope parameters (of ``layer_type``).

    The head width is ``config.head_dim`` (``hidden_size // num_attention_heads`` when the config has none; for a
    config whose head width varies by layer, as Gemma 4's, that of the first layer of ``layer_type``);
    the base, the rotated fraction and the scaling come from :func:`rope_parameters`, the pairing of dims from the
    model type (:data:`INTERLEAVED_LAYOUT`). Where Hugging Face reads ``max_position_embeddings`` from the
    model config, that length joins the dict: dynamic NTK's L0 (``original_max_position_embeddings``),
    LongRoPE's ``max_position_embeddings`` without a ``factor``, YaRN's ``factor`` when it is None
    (``max_position_embeddings / original_max_position_embeddings``). Not for M-RoPE (:class:`~posenc_lib.rotary.mrope.MRoPE` needs the token layout) nor
    DeepSeek's decoupled slice (:class:`~posenc_lib.rotary.decoupled.DecoupledRoPE`).

    Raises ValueError for a config without rope parameters, or with M-RoPE sections.
    """
    params = rope_parameters(config, layer_type)
    if params is None:
        raise ValueError(f"config must have rope parameters, got {type(config).__name__} without any")
    if params.get("mrope_section") is not None:
        raise ValueError(f"config {type(config).__name__} uses M-RoPE (mrope_section {params['mrope_section']}): build an "
                         "MRoPE scheme with the token layout instead")
    scaling = standard_config({key: value for key, value in params.items()
                               if key not in ("rope_theta", "partial_rotary_factor")})
    rope_type = scaling.get("rope_type")
    if rope_type == "longrope" and scaling.get("factor") is None:
        scaling["max_position_embeddings"] = config.max_position_embeddings
    if rope_type == "dynamic":  # Hugging Face's dynamic NTK takes L0 from the model config, not from the dict
        scaling["original_max_position_embeddings"] = config.max_position_embeddings
    if rope_type == "yarn" and scaling.get("factor") is None and scaling.get("original_max_position_embeddings"):
        # as Hugging Face's _compute_yarn_parameters derives it (DeepSeek-V3 gives no factor)
        scaling["factor"] = config.max_position_embeddings / scaling["original_max_position_embeddings"]
    return RotaryPE(_head_dim(config, layer_type), base=float(params["rope_theta"]), rotary_fraction=params.get("partial_rotary_factor", 1.0),
                    scaling=scaling, layout="interleaved" if config.model_type in INTERLEAVED_LAYOUT else "half")


def _head_dim(config: PretrainedConfig, layer_type: str | None) -> int:
    """The head width of the layers of ``layer_type``: per layer where the config varies it (Gemma 4), else global."""
    try:
        return getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    except RuntimeError:  # transformers' AmbiguousGlobalPerLayerAttributeError: head_dim varies by layer
        if layer_type is None:
            raise ValueError(f"layer_type must be given for {type(config).__name__}, whose head_dim varies by layer") from None
        return config.per_layer_config[config.layer_types.index(layer_type)].head_dim


def rotating_layers(config: PretrainedConfig) -> list[bool]:
    """One flag per layer: True when the layer rotates its queries and keys (RoPE), False for a NoPE layer.

    Read from ``no_rope_layers`` (1 = RoPE: SmolLM3, Llama 4), from ``layer_types`` for the models
    that rotate only their sliding-window layers (Cohere2, and only when ``sliding_window`` is set),
    else every layer of a model with rope parameters rotates and none of a model without.
    """
    n = config.num_hidden_layers
    if getattr(config, "rope_parameters", None) is None and getattr(config, "rope_theta", None) is None:
        return [False] * n
    no_rope_layers = getattr(config, "no_rope_layers", None)
    if no_rope_layers is not None:
        return [bool(flag) for flag in no_rope_layers[:n]]
    if config.model_type in ROPE_ON_SLIDING_ONLY:
        window = getattr(config, "sliding_window", None)
        return [layer_type == "sliding_attention" and window is not None for layer_type in config.layer_types[:n]]
    return [True] * n


def rope_layer_types(config: PretrainedConfig) -> list[str]:
    """The layer types that have rope parameters of their own ([] when the config has one dict for all layers)."""
    layer_types = list(dict.fromkeys(getattr(config, "layer_types", None) or []))
    params = getattr(config, "rope_parameters", None) or {}
    return [t for t in layer_types if isinstance(params.get(t), dict)]

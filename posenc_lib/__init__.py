"""posenc_lib: positional encodings for Transformers, one interface, tested against reference code.

Depends on torch alone. Position enters a Transformer through one of four hooks of a
:class:`PositionScheme` (:mod:`posenc_lib.scheme`), and the tree has one folder per kind of scheme::

    scheme                 module                                   notebook
    ---------------------  ---------------------------------------  --------
    embeddings/            added to the token embeddings (add_to_embeddings)
      SinusoidalPE         embeddings/sinusoidal.py                 01
      LearnablePE          embeddings/learnable.py                  02
      SinCos2DPE           embeddings/tables_2d.py (2-D grid)       04
      Learnable2DPE        embeddings/tables_2d.py (2-D grid)       04
    rotary/                rotation (or scaling) of queries and keys (rotate_qk)
      RotaryPE             rotary/rope.py                           03, 06, 08
      MRoPE                rotary/mrope.py                          08
      DecoupledRoPE        rotary/decoupled.py                      08
      QueryTemperature     rotary/temperature.py                    08
      AxialRoPE2D          rotary/rope_2d.py (2-D grid)             04
      MixedRoPE2D          rotary/rope_2d.py (2-D grid)             04
    score_bias/            added to the scores, a function of positions only (score_bias)
      T5RelativeBias       score_bias/t5.py                         05, 06
      ALiBi                score_bias/alibi.py                      05, 06
      SwinRelativeBias     score_bias/swin.py (2-D window)          05
    qk_bias/               added to the scores, reading the query and the key (qk_bias)
      TransformerXLRelative  qk_bias/transformer_xl.py              05, 06
    conditional/           computed from the tokens' neighbourhood, added to them (add_to_embeddings)
      PEG                  conditional/peg.py (2-D grid)            05
    none
      NoPosition           scheme.py                                00

    build_scheme(name, d_model, n_heads, ...)   registry.py: any of them by name (SCHEMES)

RoPE's frequency sets for longer contexts (linear, NTK, dynamic, YaRN, Llama 3, LongRoPE, p-RoPE) are
``scaling`` dicts of :class:`RotaryPE` (rotary/scaling.py), not schemes of their own.

The core, at the root::

    scheme.py       PositionScheme (the interface: its four hooks, rotation_tables, the score scale), NoPosition
    attention.py    MultiHeadAttention (calls rotate_qk, score_bias and qk_bias; grouped-query attention), KVCache
    models.py       TinyTransformer (calls add_to_embeddings, and rotation_tables once per forward pass; one scheme,
                    or a LayerSpec per layer)
    frequencies.py  inverse_frequencies: base^(-2i/d), the one geometric ladder of sinusoid and RoPE; LAYOUTS
    grid.py         image patches as a token sequence: grid coordinates, PatchEmbed, resample_grid
    training.py     train (AdamW, linear decay), accuracy, cross_entropy: the loop the probes use
    checks.py       the argument checks every module shares

Tools to measure and to connect::

    analysis/       probes.py (position probes, gradient and shift checks), pair_usage.py (which rotary
                    pairs a model uses), cost.py (memory and time of the position part), lm_metrics.py
                    (per-position loss, perplexity by length, attention entropy)
    interop/        hf.py (a Hugging Face attention module as MultiHeadAttention, grouped-query included),
                    hf_config.py (a RotaryPE from a transformers config); pip install posenc-lib[hf]

Every scheme above, :func:`build_scheme`, the RoPE functions, the attention and the model import from
here (``from posenc_lib import RotaryPE, apply_rope``) and from their folder
(``from posenc_lib.rotary import RotaryPE``).
"""

from .attention import KVCache, MultiHeadAttention, allowed_keys
from .conditional import PEG
from .embeddings import Learnable2DPE, LearnablePE, SinCos2DPE, SinusoidalPE
from .frequencies import LAYOUTS
from .models import LayerSpec, TinyTransformer, with_scheme
from .qk_bias import TransformerXLRelative
from .registry import SCHEMES, build_scheme
from .rotary import (
    AxialRoPE2D,
    DecoupledRoPE,
    MixedRoPE2D,
    MRoPE,
    QueryTemperature,
    RotaryPE,
    apply_rope,
    apply_rope_qk,
    rope_cos_sin,
    rope_inv_freq,
)
from .scheme import NoPosition, PositionScheme
from .score_bias import ALiBi, SwinRelativeBias, T5RelativeBias

__version__ = "0.3.0"
__all__ = [
    # the interface, the attention and the model
    "PositionScheme",
    "NoPosition",
    "MultiHeadAttention",
    "KVCache",
    "allowed_keys",
    "TinyTransformer",
    "LayerSpec",
    "with_scheme",
    "SCHEMES",
    "build_scheme",
    "LAYOUTS",
    # the schemes, by folder
    "SinusoidalPE",
    "LearnablePE",
    "SinCos2DPE",
    "Learnable2DPE",
    "RotaryPE",
    "MRoPE",
    "DecoupledRoPE",
    "QueryTemperature",
    "AxialRoPE2D",
    "MixedRoPE2D",
    "T5RelativeBias",
    "ALiBi",
    "SwinRelativeBias",
    "TransformerXLRelative",
    "PEG",
    # RoPE as functions
    "rope_inv_freq",
    "rope_cos_sin",
    "apply_rope",
    "apply_rope_qk",
]

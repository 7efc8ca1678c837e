"""posenc_lib: positional encodings for Transformers, one interface, tested against reference code.

Depends on torch alone. Position enters a Transformer in one of five places
(:mod:`posenc_lib.scheme`), and the tree has one folder per place::

    scheme                 module                                   notebook
    ---------------------  ---------------------------------------  --------
    embeddings/            added to the token embeddings
      SinusoidalPE         embeddings/sinusoidal.py                 01
      LearnablePE          embeddings/learnable.py                  02
      SinCos2DPE           embeddings/tables_2d.py (2-D grid)       04
      Learnable2DPE        embeddings/tables_2d.py (2-D grid)       04
    rotary/                rotation (or scaling) of queries and keys
      RotaryPE             rotary/rope.py                           03, 06, 08
      scalings             rotary/scaling.py: linear, NTK, dynamic, YaRN, Llama 3, LongRoPE, p-RoPE
      MRoPE                rotary/mrope.py                          08
      DecoupledRoPE        rotary/decoupled.py                      08
      QueryTemperature     rotary/temperature.py                    08
      AxialRoPE2D          rotary/rope_2d.py (2-D grid)             04
      MixedRoPE2D          rotary/rope_2d.py (2-D grid)             04
    score_bias/            added to the scores, a function of positions only
      T5RelativeBias       score_bias/t5.py                         05, 06
      ALiBi                score_bias/alibi.py                      05, 06
      SwinRelativeBias     score_bias/swin.py (2-D window)          05
    qk_bias/               added to the scores, reading the query and the key
      TransformerXLRelative qk_bias/transformer_xl.py               05, 06
    conditional/           computed from the tokens' neighbourhood
      PEG                  conditional/peg.py (2-D grid)            05
    none
      NoPosition           scheme.py                                00

    build_scheme(name, d_model, n_heads, ...)   registry.py: any of them by name (SCHEMES)

The core, at the root::

    scheme.py       PositionScheme (the interface: its four hooks, and the score scale), NoPosition
    attention.py    MultiHeadAttention (calls rotate_qk, score_bias and qk_bias), KVCache, causal_mask
    models.py       TinyTransformer (calls add_to_embeddings; one scheme, or a LayerSpec per layer)
    frequencies.py  inverse_frequencies: base^(-2i/d), the one geometric ladder of sinusoid and RoPE
    grid.py         image patches as a token sequence: grid coordinates, PatchEmbed, resample_grid
    training.py     train (AdamW, linear decay), accuracy, cross_entropy: the loop the probes use
    checks.py       the argument checks every module shares

Tools to measure and to connect::

    analysis/       probes.py (position probes, gradient and shift checks), pair_usage.py (which rotary
                    pairs a model uses), cost.py (memory and time of the position part), lm_metrics.py
                    (per-position loss, perplexity by length, attention entropy)
    interop/        hf.py (a Hugging Face attention module as MultiHeadAttention; RoPE checkpoint layouts),
                    hf_config.py (a RotaryPE from a transformers config); pip install posenc-lib[hf]
"""

from .attention import KVCache, MultiHeadAttention
from .models import TinyTransformer
from .registry import SCHEMES, build_scheme
from .scheme import NoPosition, PositionScheme

__version__ = "0.2.0"
__all__ = [
    "KVCache",
    "MultiHeadAttention",
    "NoPosition",
    "PositionScheme",
    "SCHEMES",
    "TinyTransformer",
    "build_scheme",
]

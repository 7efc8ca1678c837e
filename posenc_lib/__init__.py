"""posenc_lib: positional encodings for Transformers, one interface, tested against reference code.

The map. Position enters a Transformer in one of four places (:mod:`posenc_lib.scheme`), and the
encodings are grouped by that place::

    scheme                 module                                   notebook
    ---------------------  ---------------------------------------  --------
    added to the token embeddings
    SinusoidalPE           encodings/absolute/sinusoidal.py         01
    LearnablePE            encodings/absolute/learnable.py          02
    SinCos2DPE             encodings/vision/tables_2d.py            04
    Learnable2DPE          encodings/vision/tables_2d.py            04
    PEG                    encodings/conditional/peg.py             05
    transforming queries and keys (rotating them, or scaling q)
    RotaryPE               encodings/rotary/rope.py                 03, 06, 08
      (scaled: linear, NTK, dynamic, YaRN, Llama 3, LongRoPE; proportional = p-RoPE)
                           encodings/rotary/scaling.py              06, 08
    MRoPE                  encodings/rotary/mrope.py                08
    DecoupledRoPE          encodings/rotary/decoupled.py            08
    QueryTemperature       encodings/rotary/temperature.py          08
    AxialRoPE2D            encodings/vision/rope_2d.py              04
    MixedRoPE2D            encodings/vision/rope_2d.py              04
    biasing the attention scores
    T5RelativeBias         encodings/score_bias/relative.py         05, 06
    ALiBi                  encodings/score_bias/relative.py         05, 06
    SwinRelativeBias       encodings/score_bias/relative.py         05
    biasing the scores with terms that read q and k
    TransformerXLRelative  encodings/score_bias/relative.py         05, 06
    none
    NoPosition             scheme.py                                00

    build_scheme(name, d_model, n_heads, ...)   encodings/factory.py: any of them by name

The core, at the root:

    scheme.py      PositionScheme (the interface: its four hooks, and the score scale), NoPosition
    attention.py   MultiHeadAttention (calls rotate_qk, score_bias and qk_bias), KVCache
    models.py      TinyTransformer (calls add_to_embeddings; one scheme, or a LayerSpec per layer), convert_rope_checkpoint
    checks.py      the argument checks every module shares

Apart from the ideas::

    kernels/       the fast RoPE rotation behind apply_rope (same arithmetic, arranged for speed)
    course/        what only the course needs: data, training, diagnostics, extrapolation (06),
                   cost (05), report, plotting, vit (04's catalogue), families, hf and frequencies (08: the
                   model families' configs, a bridge from Hugging Face attention modules, which rotary
                   pairs a trained model uses), exercises
"""

from .attention import KVCache, MultiHeadAttention
from .course.training import accuracy, progress, seed_everything, train
from .encodings.factory import build_scheme
from .models import TinyTransformer
from .scheme import NoPosition, PositionScheme

__version__ = "0.1.0"
__all__ = [
    "KVCache",
    "MultiHeadAttention",
    "NoPosition",
    "PositionScheme",
    "TinyTransformer",
    "accuracy",
    "build_scheme",
    "progress",
    "seed_everything",
    "train",
]

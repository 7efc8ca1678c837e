"""Position terms that read the query and the key (``PositionScheme.qk_bias``), added to the scaled scores.

    transformer_xl.py   Transformer-XL (Dai et al. 2019): (q_i + v) . W_r r_{i-j} + u . k_j, r a sinusoid of i - j;
                        relative_shift(scores, k_len), its per-distance -> per-pair score view
"""

from .transformer_xl import TransformerXLRelative, relative_shift

__all__ = ["TransformerXLRelative", "relative_shift"]

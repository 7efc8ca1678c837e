"""Relative position biases: T5 buckets, ALiBi slopes, Swin's 2-D window table (``PositionScheme.score_bias``).

    t5.py       T5 (Raffel et al. 2020): a learned bias per bucket of the key-minus-query distance
    alibi.py    ALiBi (Press et al. 2022): a fixed per-head penalty linear in the distance
    swin.py     Swin (Liu et al. 2021): a learned bias per 2-D offset inside a window
    common.py   what the three check and share: query/key positions, one row for a shared batch

All three add a number to every attention score that depends only on *where* the query
and the key are relative to each other (never on their content), after the scale: ALiBi and
Swin after the usual ``1/sqrt(head_dim)``, T5 to unscaled scores (its ``score_scale`` is 1.0,
as in the reference; see :class:`T5RelativeBias`). As :class:`~posenc_lib.scheme.PositionScheme` objects they
override only ``score_bias`` and return a tensor broadcastable to
``(batch, heads, q_len, k_len)``.

Each scheme is also a plain function you can call on positions:

    t5_relative_bucket(rel)                   bucket id of each key-minus-query distance
    alibi_slopes(n_heads), alibi_bias(...)    ALiBi's fixed per-head slopes and its bias
    swin_relative_position_index(h, w)        index of each (query, key) pair into Swin's table

Transformer-XL (:class:`~posenc_lib.qk_bias.transformer_xl.TransformerXLRelative`, Dai et al. 2019) goes one step
further: its position terms read the query, ``(q_i + v) . W_r r_{i-j}``, plus a global content bias
``u . k_j``, so it overrides ``qk_bias`` instead of ``score_bias`` and lives in :mod:`posenc_lib.qk_bias`.

Compact forms. The softmax over keys does not change when a constant is added to a whole row
(one query), so a bias ``b(i, j)`` can be stored as ``g(j)`` alone when ``b(i, j) = f(i) + g(j)``
on every key the query may see. ALiBi under a causal mask is such a case: for ``j <= i``,
``-m * (i - j) = -m*i + m*j``, and ``-m*i`` is constant over the row, so the per-key bias
``m*j`` of shape (heads, 1, k_len) gives the same attention as the full (heads, q_len, k_len)
one (this is what BLOOM does), and :class:`~posenc_lib.attention.MultiHeadAttention` passes it to
``scaled_dot_product_attention`` as one more q/k column under ``is_causal=True``
(:func:`~posenc_lib.attention.fold_key_bias`), so no (heads, q_len, k_len) tensor is built at
all. It does *not* hold without the causal mask (``|i - j|`` is not
a sum of a function of i and one of j), and it never holds for T5: its bias is a learned,
arbitrary value per bucket of ``j - i``, and the buckets are capped and log-spaced, so it is
no sum ``f(i) + g(j)``. T5 and Swin therefore always return the full
(batch|1, heads, q_len, k_len) bias.
"""

from .alibi import ALiBi, alibi_bias, alibi_slopes
from .swin import SwinRelativeBias, swin_relative_position_index
from .t5 import T5RelativeBias, t5_relative_bucket

__all__ = ["T5RelativeBias", "ALiBi", "SwinRelativeBias", "t5_relative_bucket", "alibi_slopes", "alibi_bias",
           "swin_relative_position_index"]

"""Relative position biases: T5 buckets, ALiBi slopes, Swin's 2-D window table.

All three add a number to every attention score that depends only on *where* the query
and the key are relative to each other (never on their content), after the scale: ALiBi and
Swin after the usual ``1/sqrt(head_dim)``, T5 to unscaled scores (its ``score_scale`` is 1.0,
as in the reference; see :class:`T5RelativeBias`). As :class:`~posenc_lib.attention.PositionScheme` objects they
override only ``score_bias`` and return a tensor broadcastable to
``(batch, heads, q_len, k_len)``.

Each scheme is also a plain function you can call on positions:

    t5_relative_bucket(rel)                   bucket id of each key-minus-query distance
    alibi_slopes(n_heads), alibi_bias(...)    ALiBi's fixed per-head slopes and its bias
    swin_relative_position_index(h, w)        index of each (query, key) pair into Swin's table

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

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ...checks import check_float_tensor, check_int, check_integer_tensor, check_position_range
from ...scheme import PositionScheme

__all__ = [
    "t5_relative_bucket",
    "T5RelativeBias",
    "alibi_slopes",
    "alibi_bias",
    "ALiBi",
    "swin_relative_position_index",
    "SwinRelativeBias",
]


def _check_qk_positions(q_positions: Tensor, k_positions: Tensor) -> None:
    """Both (batch|1, len) integer tensors with broadcastable batch sizes."""
    check_integer_tensor("q_positions", q_positions)
    check_integer_tensor("k_positions", k_positions)
    for name, p in (("q_positions", q_positions), ("k_positions", k_positions)):
        if p.dim() != 2:
            raise ValueError(f"{name} must have shape (batch, seq) or (1, seq), got {tuple(p.shape)}")
    bq, bk = q_positions.shape[0], k_positions.shape[0]
    if bq != bk and 1 not in (bq, bk):
        raise ValueError(
            f"q_positions and k_positions must have the same batch size (or 1), got {bq} and {bk}"
        )


def _shared_rows(q_positions: Tensor, k_positions: Tensor) -> tuple[Tensor, Tensor]:
    """One row of each when every batch row is the same view (``default_positions`` expands one row).

    A bias is then built once, (1, heads, q_len, k_len), and broadcast over the batch, instead
    of batch identical copies. Decided from the strides alone, so it never reads the data.
    """
    if q_positions.stride(0) == 0 and k_positions.stride(0) == 0:
        return q_positions[:1], k_positions[:1]
    return q_positions, k_positions


# --------------------------------------------------------------------------- T5


def t5_relative_bucket(
    relative_position: Tensor, bidirectional: bool = True, num_buckets: int = 32, max_distance: int = 128
) -> Tensor:
    """T5's bucket of each relative position ``key_pos - query_pos`` (same shape, int64).

    With ``bidirectional`` the buckets are split in two halves by sign: ``[0, n)`` for keys at
    or before the query, ``[n, 2n)`` for keys after it (``n = num_buckets // 2``). Causal
    (``bidirectional=False``): all ``n = num_buckets`` buckets cover keys at or before the
    query, and any key after it falls into bucket 0 (the causal mask hides it anyway).

    Within a direction, distance ``d = |rel|`` gets its own bucket while ``d < n // 2`` (exact
    buckets); larger distances share log-spaced buckets up to ``max_distance``; everything
    at or beyond ``max_distance`` lands in the last bucket ``n - 1``. The log is taken in
    float32, as in the reference (Mesh TensorFlow, Hugging Face ``T5Attention``), so bucket
    boundaries agree exactly with released T5 checkpoints.
    """
    check_integer_tensor("relative_position", relative_position)
    check_int("num_buckets", num_buckets)
    check_int("max_distance", max_distance)
    n = num_buckets // 2 if bidirectional else num_buckets
    if n < 2:
        raise ValueError(
            f"num_buckets must give at least 2 buckets per direction, got num_buckets={num_buckets} "
            f"(bidirectional={bidirectional})"
        )
    max_exact = n // 2
    if max_distance <= max_exact:
        raise ValueError(
            f"max_distance must exceed the {max_exact} exact buckets, got max_distance={max_distance}"
        )
    rel = relative_position.long()
    if bidirectional:
        offset = (rel > 0).long() * n
        distance = rel.abs()
    else:
        offset = torch.zeros_like(rel)
        distance = (-rel).clamp_min(0)
    # log-spaced bucket of the distances >= max_exact (clamped first so log(0) is never taken)
    far = distance.clamp_min(max_exact).float() / max_exact
    log_bucket = max_exact + (far.log() / math.log(max_distance / max_exact) * (n - max_exact)).long()
    bucket = torch.where(distance < max_exact, distance, log_bucket.clamp_max(n - 1))
    return offset + bucket


class T5RelativeBias(PositionScheme):
    """T5's learned relative position bias: one scalar per (bucket of ``j - i``, head).

    Args:
        n_heads: number of attention heads (one bias per head and bucket).
        num_buckets: total buckets (split by direction when ``bidirectional``).
        max_distance: distances at or beyond this share the last bucket.
        bidirectional: encoder (keys on both sides) or causal decoder.

    The table is ``self.table``, an ``nn.Embedding(num_buckets, n_heads)`` initialised
    N(0, 0.02) (small, so training starts close to "no position"). As in T5, one table serves
    every layer: the model shares this one scheme object. Being an arbitrary learned function
    of the bucket, it has no compact per-key form (see the module docstring); ``score_bias``
    returns the full (batch|1, heads, q_len, k_len) tensor.

    No score scale: T5 computes ``softmax(q.k + bias)``, without ``1/sqrt(head_dim)`` (Mesh
    TensorFlow; Hugging Face ``T5Attention.scaling = 1.0``), so :meth:`score_scale` is 1.0 and
    the bias is added to unscaled scores. The factor lives in the initialisation instead:
    :class:`~posenc_lib.attention.MultiHeadAttention` built with this scheme scales its query
    projection's init by ``1/sqrt(head_dim)``, as T5 initialises q with std
    ``(d_model * d_kv) ** -0.5`` and k with ``d_model ** -0.5``.
    """

    kind = "bias"

    def __init__(self, n_heads: int, num_buckets: int = 32, max_distance: int = 128, bidirectional: bool = True):
        super().__init__()
        check_int("n_heads", n_heads)
        t5_relative_bucket(torch.zeros(1, dtype=torch.long), bidirectional, num_buckets, max_distance)  # validate
        self.n_heads, self.num_buckets, self.max_distance = n_heads, num_buckets, max_distance
        self.bidirectional = bidirectional
        self.table = nn.Embedding(num_buckets, n_heads)
        nn.init.normal_(self.table.weight, std=0.02)

    def score_scale(self, head_dim: int) -> float:
        """1.0: T5 does not scale its scores (the scale is folded into the query's initialisation)."""
        return 1.0

    def buckets(self, q_positions: Tensor, k_positions: Tensor) -> Tensor:
        """Bucket ids (batch|1, q_len, k_len) of every (query, key) pair."""
        _check_qk_positions(q_positions, k_positions)
        rel = k_positions[:, None, :] - q_positions[:, :, None]
        return t5_relative_bucket(rel, self.bidirectional, self.num_buckets, self.max_distance)

    def offset_bias(self) -> Tensor:
        """Bias of every offset ``j - i`` in ``[-max_distance, max_distance]``: (2*max_distance + 1, heads).

        Row ``r`` belongs to offset ``r - max_distance``. Offsets beyond ``max_distance`` on either
        side fall into the same (last) bucket as ``+-max_distance``, so these rows cover every pair.
        """
        m = self.max_distance
        offsets = torch.arange(-m, m + 1, device=self.table.weight.device)
        return self.table(t5_relative_bucket(offsets, self.bidirectional, self.num_buckets, m))

    def score_bias(self, q_positions: Tensor, k_positions: Tensor) -> Tensor:
        """Bias (batch|1, heads, q_len, k_len).

        The bucket (the float32 log) is computed once per distinct offset, in :meth:`offset_bias`,
        not once per (query, key) pair; the pairs only gather rows. The values are the same
        table entries as ``table(buckets(q_positions, k_positions))``, bit for bit.
        """
        _check_qk_positions(q_positions, k_positions)
        q_positions, k_positions = _shared_rows(q_positions, k_positions)
        m = self.max_distance
        rel = k_positions[:, None, :] - q_positions[:, :, None]
        row = rel.clamp_(-m, m).add_(m)
        return F.embedding(row, self.offset_bias()).permute(0, 3, 1, 2)

    def extra_repr(self) -> str:
        return (
            f"n_heads={self.n_heads}, num_buckets={self.num_buckets}, max_distance={self.max_distance}, "
            f"bidirectional={self.bidirectional}"
        )


# --------------------------------------------------------------------------- ALiBi


def _power_of_two_slopes(n: int) -> list[float]:
    return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]


def alibi_slopes(n_heads: int) -> Tensor:
    """ALiBi's fixed head slopes ``m_h``: shape (n_heads,), float32, all in (0, 1).

    For ``n`` a power of two, ``m_h = 2^(-8h/n)`` for ``h = 1..n`` (a geometric sequence from
    ``2^(-8/n)`` down to ``2^-8``). Otherwise (Press et al., reference code): the slopes of the
    nearest lower power of two ``p``, followed by every other slope of ``2p`` (the 1st, 3rd,
    5th, ...), which interleave between them, until there are ``n_heads``.
    """
    check_int("n_heads", n_heads)
    p = 2 ** math.floor(math.log2(n_heads))
    slopes = _power_of_two_slopes(p) + _power_of_two_slopes(2 * p)[0::2][: n_heads - p]
    return torch.tensor(slopes, dtype=torch.float64).float()


def alibi_bias(slopes: Tensor, q_positions: Tensor, k_positions: Tensor, compact: bool = False) -> Tensor:
    """ALiBi bias from the slopes (heads,) and integer positions (batch|1, q_len), (batch|1, k_len).

    ``compact=False``: the symmetric ``-m_h * |i - j|``, shape (batch|1, heads, q_len, k_len);
    right for any mask. ``compact=True``: the per-key ``m_h * j``, shape (batch|1, heads, 1, k_len),
    which gives the same softmax *only under a causal mask* (each row differs from the full
    form by the constant ``m_h * i``). Its values grow with the position, so at very long
    positions in low precision the compact form loses digits that the full one keeps; the
    bias is computed in at least float32 (the attention casts it to the model dtype).
    """
    check_float_tensor("slopes", slopes)
    if slopes.dim() != 1:
        raise ValueError(f"slopes must have shape (heads,), got {tuple(slopes.shape)}")
    _check_qk_positions(q_positions, k_positions)
    dtype = torch.promote_types(slopes.dtype, torch.float32)  # never multiply positions in 16-bit
    m = slopes.to(dtype)[None, :, None, None]
    if compact:
        return m * k_positions[:, None, None, :].to(dtype)
    distance = (k_positions[:, None, :] - q_positions[:, :, None]).abs()
    return -m * distance[:, None].to(dtype)


class ALiBi(PositionScheme):
    """Attention with Linear Biases (Press et al. 2022): no position vector, a fixed linear penalty.

    Args:
        n_heads: number of heads; slopes from :func:`alibi_slopes` (a non-persistent buffer).
        causal: use the compact per-key bias ``m_h * j`` (batch|1, heads, 1, k_len), exact
            only when the model applies a causal mask (a decoder; attention without
            ``causal=True`` then raises ValueError). ``causal=False`` gives the symmetric
            ``-m_h * |i - j|`` for encoders.
    """

    kind = "bias"

    def __init__(self, n_heads: int, causal: bool = True):
        super().__init__()
        self.causal = self.requires_causal = causal
        self.register_buffer("slopes", alibi_slopes(n_heads), persistent=False)

    def score_bias(self, q_positions: Tensor, k_positions: Tensor) -> Tensor:
        """(batch|1, heads, 1, k_len) when causal, else (batch|1, heads, q_len, k_len)."""
        _check_qk_positions(q_positions, k_positions)
        q_positions, k_positions = _shared_rows(q_positions, k_positions)
        return alibi_bias(self.slopes, q_positions, k_positions, compact=self.causal)

    def extra_repr(self) -> str:
        return f"n_heads={self.slopes.numel()}, causal={self.causal}"


# --------------------------------------------------------------------------- Swin


def swin_relative_position_index(window_h: int, window_w: int, n_prefix: int = 0) -> Tensor:
    """Row of the bias table used by each (query, key) pair in a ``window_h x window_w`` window.

    Tokens are the window's patches in row-major order, optionally preceded by ``n_prefix``
    class-like tokens. For two patches with coordinates (r_i, c_i), (r_j, c_j), the index is
    ``(r_i - r_j + window_h - 1) * (2*window_w - 1) + (c_i - c_j + window_w - 1)``: the 2-D
    difference shifted to be non-negative, then flattened, so it lies in
    ``[0, (2*window_h - 1)(2*window_w - 1))``. With prefix tokens, three more rows follow, as
    in BEiT: prefix->patch, patch->prefix and prefix->prefix (shared by all prefix tokens).

    Returns (n_prefix + window_h*window_w, n_prefix + window_h*window_w) int64.
    """
    check_int("window_h", window_h)
    check_int("window_w", window_w)
    check_int("n_prefix", n_prefix, minimum=0)
    rows = torch.arange(window_h).repeat_interleave(window_w)
    cols = torch.arange(window_w).repeat(window_h)
    dr = rows[:, None] - rows[None, :] + window_h - 1
    dc = cols[:, None] - cols[None, :] + window_w - 1
    patch_index = dr * (2 * window_w - 1) + dc
    if n_prefix == 0:
        return patch_index
    n_rel = (2 * window_h - 1) * (2 * window_w - 1)
    n = n_prefix + window_h * window_w
    index = torch.empty(n, n, dtype=torch.long)
    index[n_prefix:, n_prefix:] = patch_index
    index[:n_prefix, :] = n_rel  # prefix query -> any key
    index[:, :n_prefix] = n_rel + 1  # any query -> prefix key
    index[:n_prefix, :n_prefix] = n_rel + 2  # prefix -> prefix
    return index


class SwinRelativeBias(PositionScheme):
    """Swin's learned 2-D relative position bias inside one attention window.

    Args:
        n_heads: number of heads.
        window_h, window_w: window size in patches; the sequence is its patches in row-major
            order, positions ``n_prefix .. n_prefix + window_h*window_w - 1``.
        n_prefix: class-like tokens before the patches (positions ``0 .. n_prefix-1``); they
            get BEiT's three extra learned entries (see :func:`swin_relative_position_index`).

    Parameters: ``table`` of shape ((2*window_h-1)(2*window_w-1) [+3 with prefix], heads),
    truncated normal with std 0.02 as in Swin. The index is a non-persistent buffer: it is
    fully determined by the window size, so it stays out of the state_dict.
    """

    kind = "bias"

    def __init__(self, n_heads: int, window_h: int, window_w: int, n_prefix: int = 0):
        super().__init__()
        check_int("n_heads", n_heads)
        index = swin_relative_position_index(window_h, window_w, n_prefix)
        n_rows = (2 * window_h - 1) * (2 * window_w - 1) + (3 if n_prefix else 0)
        self.window_h, self.window_w, self.n_prefix = window_h, window_w, n_prefix
        self.table = nn.Parameter(torch.empty(n_rows, n_heads))
        nn.init.trunc_normal_(self.table, std=0.02)
        self.register_buffer("index", index, persistent=False)

    def score_bias(self, q_positions: Tensor, k_positions: Tensor) -> Tensor:
        """Bias (batch|1, heads, q_len, k_len); positions index into the window's token sequence."""
        _check_qk_positions(q_positions, k_positions)
        n = self.index.shape[0]
        what = f"{self.n_prefix} prefix tokens + a {self.window_h}x{self.window_w} window"
        check_position_range("q_positions", q_positions, n, what)
        check_position_range("k_positions", k_positions, n, what)
        pair_index = self.index[q_positions[:, :, None], k_positions[:, None, :]]
        return self.table[pair_index].permute(0, 3, 1, 2)

    def extra_repr(self) -> str:
        return (
            f"n_heads={self.table.shape[1]}, window=({self.window_h}, {self.window_w}), "
            f"n_prefix={self.n_prefix}"
        )

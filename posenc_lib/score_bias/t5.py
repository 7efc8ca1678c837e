"""T5's relative bias: a learned scalar per head and per log-spaced bucket of the key-minus-query offset."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from posenc_lib.checks import check_int, check_integer_tensor
from posenc_lib.scheme import PositionScheme
from posenc_lib.score_bias.common import check_qk_positions, shared_rows

__all__ = ["t5_relative_bucket", "T5RelativeBias"]


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
        check_qk_positions(q_positions, k_positions)
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
        check_qk_positions(q_positions, k_positions)
        q_positions, k_positions = shared_rows(q_positions, k_positions)
        m = self.max_distance
        rel = k_positions[:, None, :] - q_positions[:, :, None]
        row = rel.clamp_(-m, m).add_(m)
        return F.embedding(row, self.offset_bias()).permute(0, 3, 1, 2)

    def extra_repr(self) -> str:
        return (
            f"n_heads={self.n_heads}, num_buckets={self.num_buckets}, max_distance={self.max_distance}, "
            f"bidirectional={self.bidirectional}"
        )

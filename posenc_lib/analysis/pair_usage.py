"""Which rotary pairs a trained model uses (notebook 08, section 4; Barbero et al. 2024, "Round and Round We Go!").

A RoPE score is a sum over the head's pairs: ``q_m . k_n = sum_i q_m^(i) . k_n^(i)``, where pair i of
the query and of the key have been turned by ``m theta_i`` and ``n theta_i``. So each pair carries its
own part of every score, and one can ask how large each part is, and what the model loses without it.

    pair_dims(head_dim, layout)     the two dims of each pair: (n_pairs, 2)
    pair_scores(q, k, layout)       each pair's part of every score: (batch, heads, n_pairs, q_len, k_len)
    pair_usage(q, k, layout)        mean absolute part of each pair over the causal (query, key) pairs: (heads, n_pairs)
    WithoutPairs(rope, pairs)       a RoPE scheme whose given pairs of q and k are zeroed after the rotation

The rotated q and k of a trained model come from
:meth:`posenc_lib.models.TinyTransformer.queries_and_keys`.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from posenc_lib.checks import check_choice, check_even_int, check_float_tensor, is_int
from posenc_lib.rotary.rope import LAYOUTS, Layout, RotaryPE, rope_layout_permutation
from posenc_lib.scheme import PositionScheme

__all__ = ["pair_dims", "pair_scores", "pair_usage", "WithoutPairs"]


def pair_dims(head_dim: int, layout: Layout = "half") -> Tensor:
    """The dims of each rotary pair: (head_dim // 2, 2) int64, row i = the two dims pair i turns.

    "half": pair i is (i, i + head_dim/2); "interleaved": (2i, 2i + 1) (see :mod:`~posenc_lib.rotary.rope`).
    """
    check_even_int("head_dim", head_dim)
    check_choice("layout", layout, LAYOUTS)
    order = torch.arange(head_dim) if layout == "half" else rope_layout_permutation(head_dim)
    return order.reshape(2, head_dim // 2).T


def pair_scores(q: Tensor, k: Tensor, layout: Layout = "half") -> Tensor:
    """Each pair's part of every score ``q_m . k_n`` (unscaled): (batch, heads, n_pairs, q_len, k_len).

    q: (batch, heads, q_len, head_dim), k: (batch, heads, k_len, head_dim), both already rotated. Summed over
    the pairs, the parts give ``q @ k^T``.
    """
    for name, t in (("q", q), ("k", k)):
        check_float_tensor(name, t)
        if t.dim() != 4:
            raise ValueError(f"{name} must have shape (batch, heads, seq, head_dim), got {tuple(t.shape)}")
    if q.shape[:2] != k.shape[:2] or q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must agree in batch, heads and head_dim, got {tuple(q.shape)} and {tuple(k.shape)}")
    dims = pair_dims(q.shape[-1], layout).to(q.device)
    q_pairs, k_pairs = q[..., dims], k[..., dims]  # (batch, heads, seq, n_pairs, 2)
    return torch.einsum("bhmic,bhnic->bhimn", q_pairs, k_pairs)


def pair_usage(q: Tensor, k: Tensor, layout: Layout = "half") -> Tensor:
    """Mean absolute part of each pair over every causal (query m, key n <= m) pair and the batch: (heads, n_pairs).

    q, k: rotated (batch, heads, seq, head_dim), the same seq. A pair the scores do not use has a small
    mean absolute part; which pairs carry the scores is what Barbero et al. measure on Gemma (there, with norms).
    """
    parts = pair_scores(q, k, layout)
    seq = q.shape[-2]
    if k.shape[-2] != seq:
        raise ValueError(f"q and k must have the same seq (causal pairs), got {q.shape[-2]} and {k.shape[-2]}")
    causal = torch.ones(seq, seq, dtype=torch.bool, device=q.device).tril()
    return parts.abs()[..., causal].mean(dim=(0, -1))


class WithoutPairs(PositionScheme):
    """A RoPE scheme with some pairs switched off: after the rotation, those pairs of q and k are set to 0.

    The scores then lose exactly those pairs' parts (:func:`pair_scores`); the rest is untouched. For
    ablations of a trained model: ``with_scheme(model, WithoutPairs(model.scheme, [0, 1]))``.

    Args:
        rope: the :class:`~posenc_lib.rotary.rope.RotaryPE` to wrap (every dim of the head rotates).
        pairs: indices of the pairs to switch off, each in [0, head_dim // 2).
    """

    kind = "rotary"

    def __init__(self, rope: RotaryPE, pairs: Sequence[int]):
        super().__init__()
        if not isinstance(rope, RotaryPE):
            raise TypeError(f"rope must be a RotaryPE, got {type(rope).__name__}")
        if rope.rotary_dim != rope.head_dim:
            raise ValueError(f"rope must rotate its whole head (rotary_dim == head_dim), got rotary_dim={rope.rotary_dim} "
                             f"of head_dim={rope.head_dim}")
        n_pairs = rope.head_dim // 2
        pairs = list(pairs) if isinstance(pairs, (list, tuple, range)) else pairs
        if not isinstance(pairs, list) or not all(is_int(i) and 0 <= i < n_pairs for i in pairs):
            raise ValueError(f"pairs must be a list of pair indices in [0, {n_pairs}), got {pairs!r}")
        self.rope, self.pairs = rope, sorted(set(pairs))
        keep = torch.ones(rope.head_dim)
        keep[pair_dims(rope.head_dim, rope.layout)[self.pairs].reshape(-1)] = 0.0
        self.keep = keep  # plain attribute: a constant of the ablation, never in state_dict

    def extra_repr(self) -> str:
        return f"pairs={self.pairs}"

    def rotation_tables(self, positions: Tensor, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
        """The wrapped RoPE's cos and sin at ``positions``, for every layer of one forward pass."""
        return self.rope.rotation_tables(positions, dtype)

    def rotate_qk(
        self, q: Tensor, k: Tensor, positions: Tensor, tables: tuple[Tensor, Tensor] | None = None
    ) -> tuple[Tensor, Tensor]:
        """Rotate q and k (batch, heads, seq, head_dim) with the wrapped RoPE, then zero the switched-off pairs."""
        q, k = self.rope.rotate_qk(q, k, positions, tables)
        keep = self.keep.to(device=q.device, dtype=q.dtype)
        return q * keep, k * keep

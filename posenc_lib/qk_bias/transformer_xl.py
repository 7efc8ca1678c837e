"""Transformer-XL's relative attention (Dai et al. 2019): position terms that read the query (the q-k hook)."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from posenc_lib.checks import check_float_tensor, check_int, check_integer_tensor, check_number
from posenc_lib.embeddings.sinusoidal import sinusoidal_frequencies
from posenc_lib.scheme import PositionScheme
from posenc_lib.score_bias.common import check_qk_positions, shared_rows

__all__ = ["relative_shift", "TransformerXLRelative"]


def relative_shift(scores: Tensor, k_len: int) -> Tensor:
    """Transformer-XL's relative shift: per-distance scores -> per-(query, key) scores, as a view.

    ``scores[..., i, m]`` (m = 0 .. q_len + k_len - 2) is query ``i`` scored against the relative
    encoding of distance ``t = (q_len - 1) - m`` (in steps, from ``q_len - 1`` down to
    ``-(k_len - 1)``, every value ``i - j`` can take). The result holds, for key ``j``,

        out[..., i, j] = scores[..., i, (q_len - 1) - i + j]      (distance t = i - j)

    so row ``i`` is the window of row ``i`` starting ``q_len - 1 - i`` columns in. In the
    row-major block these windows follow each other at a stride of ``width - 1``: reading the
    flat block from offset ``q_len - 1`` in rows of ``width - 1`` lines them up, a view with no
    copy (Dai et al. 2019, App. B; their code does it with a zero pad and a reshape).

    Args:
        scores: (..., q_len, q_len + k_len - 1).
        k_len: number of keys (>= 1).

    Returns (..., q_len, k_len), a view of ``scores.contiguous()``.
    """
    check_float_tensor("scores", scores)
    check_int("k_len", k_len)
    if scores.dim() < 2 or scores.shape[-1] != scores.shape[-2] + k_len - 1:
        raise ValueError(
            f"scores must have shape (..., q_len, q_len + k_len - 1) with k_len={k_len}, got {tuple(scores.shape)}"
        )
    q_len, width = scores.shape[-2], scores.shape[-1]
    x = scores.contiguous()
    if q_len == 1:
        return x  # one query: its row starts at column 0 and is k_len wide
    # Element (i, j) sits at flat offset (q_len - 1) + i * (width - 1) + j of the (q_len * width) row-major
    # block: read the block from offset q_len - 1 as rows of width - 1 and keep the first k_len columns.
    flat = x.flatten(-2)[..., q_len - 1 : q_len - 1 + q_len * (width - 1)]
    return flat.unflatten(-1, (q_len, width - 1))[..., :k_len]


class TransformerXLRelative(PositionScheme):
    """Transformer-XL's relative attention (Dai et al. 2019, §3.3): position terms that read the query.

    Per head, with q_i and k_j the projected query and key as usual, the score of query i and key j is

        A(i, j) = s * [ q_i . k_j          (a) content-content
                      + q_i . W_r r_{i-j}  (b) content-position
                      + u . k_j            (c) global content bias
                      + v . W_r r_{i-j} ]  (d) global position bias

    where ``s = score_scale(head_dim) = 1/sqrt(head_dim)`` (the reference scales all four terms),
    ``r_t`` is the sinusoidal encoding of the distance ``t = i - j`` (query position minus key
    position; Transformer-XL's column order ``[sin(t w_0) .. sin(t w_{d/2-1}) | cos(t w_0) ..]``,
    ``w_k = base^(-2k/d_model)``; no learned table, so any distance works, also past the lengths
    seen in training), ``W_r`` a learned projection (d_model -> d_model, split into heads like q),
    and ``u``, ``v`` learned vectors per head. (a) is the attention's own ``q.k``; this scheme
    returns (b) + (c) + (d) from :meth:`qk_bias`, computed as ``(q_i + v) . W_r r_{i-j}`` and
    ``u . k_j``, and the attention adds it to the scaled scores as a float mask. Only distances
    enter, so the scores do not change when every position moves by the same amount.

    The ancestor is Shaw et al. (2018): a learned vector ``a_{clip(j-i, -K, K)}`` per clipped
    distance, added to the keys, ``q_i . (k_j + a_{j-i})``: the content-position term (b) with a
    table in place of ``W_r r``, and without (c) and (d).

    Cost (the relative shift, :func:`relative_shift`). Gathering ``W_r r_{i-j}`` for every pair
    needs a (q_len, k_len, head_dim) tensor per head, O(L^2 d) memory, and L^2 d multiply-adds
    for (b). Instead, the L_q + L_k - 1 distinct distances are projected once, (L_q + L_k - 1, d)
    per head, O(L d); one matmul ``(q + v) @ (W_r R)^T`` gives a (L_q, L_q + L_k - 1) score per
    distance, and a strided view (no copy) picks each pair's column. The only L^2 tensors are
    score-sized, as for any float bias. (Both signs of the distance are computed, also for a
    causal model, where the masked half of the columns is wasted: at most twice a score tensor.)

    Positions must be consecutive within each row (``q0 + arange(q_len)``, ``k0 + arange(k_len)``,
    as the model's default positions, offsets and a KV cache give); other positions raise
    ValueError (eagerly; under ``torch.compile`` they are not checked). ``q_len != k_len`` (a KV
    cache or Transformer-XL's memory of earlier segments) works: distances come from the
    positions.

    Args:
        d_model: model width (even: sin/cos pairs), the size of ``r`` and of ``W_r``.
        n_heads: heads; ``d_model`` must be divisible by it.
        base: sinusoid base (10000 as in the paper).

    Parameters: ``r_proj`` (``W_r``, an ``nn.Linear(d_model, d_model, bias=False)`` with PyTorch's
    default init, like the q/k/v projections), ``u`` and ``v`` (n_heads, head_dim), N(0, 0.02) as
    in the reference implementation. One scheme object serves every layer of a model (the
    reference has a ``W_r`` per layer, and ``u``, ``v`` shared or per layer by its ``untie_r``
    option; this library shares all three, as it shares T5's table).
    """

    kind = "qk-bias"

    def __init__(self, d_model: int, n_heads: int, base: float = 10000.0):
        super().__init__()
        check_int("d_model", d_model, 2, even=True)
        check_int("n_heads", n_heads)
        if d_model % n_heads:
            raise ValueError(f"d_model must be a multiple of n_heads, got d_model={d_model}, n_heads={n_heads}")
        self.d_model, self.n_heads, self.head_dim = d_model, n_heads, d_model // n_heads
        self.base = check_number("base", base, above=1, finite=True)
        self.r_proj = nn.Linear(d_model, d_model, bias=False)
        self.u = nn.Parameter(torch.empty(n_heads, self.head_dim))
        self.v = nn.Parameter(torch.empty(n_heads, self.head_dim))
        nn.init.normal_(self.u, std=0.02)
        nn.init.normal_(self.v, std=0.02)

    def relative_encoding(self, distances: Tensor) -> Tensor:
        """r_t of integer distances (...,): (..., d_model), ``[sin(t w) | cos(t w)]``, angles in float64."""
        check_integer_tensor("distances", distances)
        freqs = sinusoidal_frequencies(self.d_model, self.base).to(distances.device)
        angles = distances.to(torch.float64)[..., None] * freqs
        return torch.cat([angles.sin(), angles.cos()], dim=-1).to(self.r_proj.weight.dtype)

    def qk_bias(self, q: Tensor, k: Tensor, q_positions: Tensor, k_positions: Tensor) -> Tensor:
        """s * [(q_i + v) . W_r r_{i-j} + u . k_j]: (batch, heads, q_len, k_len), terms (b) + (c) + (d).

        q: (batch, heads, q_len, head_dim); k: (batch, heads, k_len, head_dim);
        q_positions: (batch|1, q_len), k_positions: (batch|1, k_len), consecutive per row.
        """
        self._check_qk(q, k, q_positions, k_positions)
        q_positions, k_positions = shared_rows(q_positions, k_positions)
        q_len, k_len = q.shape[-2], k.shape[-2]
        # distance of column m: (q0 - k0) + (q_len - 1) - m, for m = 0 .. q_len + k_len - 2
        start = q_positions[:, :1] - k_positions[:, :1] + (q_len - 1)
        distances = start - torch.arange(q_len + k_len - 1, device=q.device)  # (batch|1, q_len + k_len - 1)
        wr = self.r_proj(self.relative_encoding(distances)).to(q.dtype)  # (batch|1, R, d_model)
        wr = wr.view(*wr.shape[:2], self.n_heads, self.head_dim).transpose(1, 2)  # (batch|1, heads, R, head_dim)
        position = (q + self.v.to(q.dtype)[:, None, :]) @ wr.transpose(-1, -2)  # (b) + (d) per distance
        content = (k @ self.u.to(k.dtype)[:, :, None]).transpose(-1, -2)  # (c): (batch, heads, 1, k_len)
        return (relative_shift(position, k_len) + content) * self.score_scale(self.head_dim)

    def _check_qk(self, q: Tensor, k: Tensor, q_positions: Tensor, k_positions: Tensor) -> None:
        for name, t in (("q", q), ("k", k)):
            check_float_tensor(name, t)
            if t.dim() != 4 or t.shape[1] != self.n_heads or t.shape[-1] != self.head_dim:
                raise ValueError(
                    f"{name} must have shape (batch, heads={self.n_heads}, seq, head_dim={self.head_dim}), "
                    f"got {tuple(t.shape)} (does the scheme have the layer's d_model and n_heads?)"
                )
        check_qk_positions(q_positions, k_positions)
        for name, p, t in (("q_positions", q_positions, q), ("k_positions", k_positions, k)):
            if p.shape[-1] != t.shape[-2]:
                raise ValueError(f"{name} must have {t.shape[-2]} columns (one per token), got {tuple(p.shape)}")
            if not torch.compiler.is_compiling() and p.shape[-1] > 1 and not bool((p.diff(dim=-1) == 1).all()):
                raise ValueError(
                    f"{name} must be consecutive in each row (p0, p0 + 1, ...) for the relative shift, "
                    f"got {p.tolist() if p.numel() <= 16 else tuple(p.shape)}"
                )

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, n_heads={self.n_heads}, base={self.base:g}"

"""Multi-head self-attention that takes a position scheme (:mod:`posenc_lib.scheme`).

The layer is the textbook one, in six steps: project x to q, k, v; split them into heads;
let the scheme rotate q and k (``rotate_qk``); append k and v to the cache, if any; ask the
scheme for its score bias (``score_bias``, and ``qk_bias``, which reads q and k); attend, with
``softmax(s * q k^T + bias + mask) v`` where ``s = scheme.score_scale(head_dim)`` (``head_dim ** -0.5``
except for T5, 1.0); merge the heads and project back.
:meth:`MultiHeadAttention._attend` holds the one speed decision: how to hand the causal mask
and the bias to PyTorch's fused ``scaled_dot_product_attention``.

Grouped-query attention (GQA, Ainslie et al. 2023; Llama 2 70B and 3, Mistral, Gemma, Qwen,
SmolLM3): ``n_kv_heads`` key/value heads, each shared by ``n_heads / n_kv_heads`` query heads
(query head h reads key/value head ``h // (n_heads / n_kv_heads)``, as Hugging Face's ``repeat_kv``).
The projection, the rotation and the KV cache then hold ``n_kv_heads`` heads of keys and values: the
cache is ``n_heads / n_kv_heads`` times smaller. ``n_kv_heads = n_heads`` is multi-head attention,
``n_kv_heads = 1`` multi-query attention (Shazeer 2019).

Shapes:
    x          (batch, seq, d_model)
    positions  (batch, seq) integer positions of the tokens (0-based)
    q          (batch, heads, seq, head_dim)
    k, v       (batch, kv_heads, seq, head_dim)
    bias       broadcastable to (batch, heads, q_len, k_len)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from posenc_lib.checks import check_attn_mask, check_float_tensor, check_int, check_positions
from posenc_lib.scheme import NoPosition, PositionScheme, default_positions

__all__ = ["KVCache", "MultiHeadAttention", "fold_key_bias"]


def allowed_keys(
    q_len: int,
    k_len: int | None = None,
    *,
    causal: bool = True,
    window: int | None = None,
    sink: int = 0,
    past: int = 0,
    device: torch.device | str | None = None,
) -> Tensor:
    """Which keys each query may see: (q_len, k_len) bool, True = may attend. The one mask rule of the library.

    Query ``i`` sits at position ``past + i`` (the cache holds ``past`` earlier tokens), key ``j`` at ``j``::

        causal:   j <= i                          (a decoder sees only the past)
        window:   |i - j| < window, or j < sink   (a local layer; causal too: the last ``window`` keys)

    ``sink`` > 0 keeps the first ``sink`` keys visible through the window (the "attention sink" of
    StreamingLLM, Xiao et al. 2023). k_len defaults to ``past + q_len``. Pass ``mask[None, None]`` as
    a model's ``attn_mask`` (batch, heads broadcast).
    """
    q_len = check_int("q_len", q_len)
    past = check_int("past", past, minimum=0)
    k_len = past + q_len if k_len is None else check_int("k_len", k_len)
    sink = check_int("sink", sink, minimum=0)
    if window is not None:
        window = check_int("window", window)
    i = torch.arange(q_len, device=device)[:, None] + past
    j = torch.arange(k_len, device=device)[None, :]
    allowed = torch.ones(q_len, k_len, dtype=torch.bool, device=device)
    if causal:
        allowed = allowed & (j <= i)
    if window is not None:
        allowed = allowed & (((i - j).abs() < window) | (j < sink))
    return allowed


@dataclass
class KVCache:
    """Keys, values and key positions of the tokens seen so far, for one attention layer.

    k, v: (batch, kv_heads, cached_len, head_dim); positions: (batch, cached_len).
    Keys are stored *after* ``rotate_qk``, so a decode step only rotates the new token. Under
    grouped-query attention the cache holds the layer's ``n_kv_heads`` key/value heads, not one per
    query head: ``n_heads / n_kv_heads`` times fewer bytes (:meth:`nbytes`).
    """

    k: Tensor | None = None
    v: Tensor | None = None
    positions: Tensor | None = None

    def __len__(self) -> int:
        return 0 if self.k is None else self.k.shape[-2]

    @property
    def n_kv_heads(self) -> int | None:
        """The number of key/value heads held (None while empty)."""
        return None if self.k is None else self.k.shape[1]

    def nbytes(self) -> int:
        """Bytes held by the cached keys and values."""
        return 0 if self.k is None else self.k.nbytes + self.v.nbytes

    def extend(self, k: Tensor, v: Tensor, positions: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Append the new keys/values (batch, kv_heads, new, head_dim) and positions (batch|1, new); return the full ones."""
        if k.shape != v.shape:
            raise ValueError(f"k and v must have the same shape, got {tuple(k.shape)} and {tuple(v.shape)}")
        if self.k is not None and (k.shape[0], k.shape[1], k.shape[3]) != (self.k.shape[0], self.k.shape[1], self.k.shape[3]):
            raise ValueError(f"k must have the cached batch of {self.k.shape[0]} and {self.k.shape[1]} key/value heads of "
                             f"head_dim {self.k.shape[3]}, got shape {tuple(k.shape)} (a cache serves the batch it was "
                             f"filled with: start a new one for another batch)")
        if self.k is None:
            self.k, self.v, self.positions = k, v, positions
        else:
            self.k = torch.cat([self.k, k], dim=-2)
            self.v = torch.cat([self.v, v], dim=-2)
            self.positions = torch.cat([self.positions.expand(k.shape[0], -1), positions.expand(k.shape[0], -1)], dim=-1)
        return self.k, self.v, self.positions


def fold_key_bias(q: Tensor, k: Tensor, v: Tensor, key_bias: Tensor, scale: float) -> tuple[Tensor, Tensor, Tensor]:
    """Turn a per-key score bias into one more head dimension, so that SDPA needs no float mask.

    A bias that depends on the key only, ``b[h, j]`` (compact ALiBi's ``m_h * j``), is a dot
    product with a constant: append 1 to every query and ``b[h, j] / scale`` to key ``j``, and
    ``scale * q'.k' = scale * q.k + b[h, j]``. ``v`` gets a zero column so that all three share one
    head size (the fast SDPA kernels need that); drop it from the output with ``y[..., :head_dim]``.
    Under ``is_causal=True`` this reaches SDPA with no (heads, q_len, k_len) tensor at all: the
    extra memory is one column of q, k and v, O(L) instead of O(heads * L^2).

    Args:
        q, k, v: (batch, heads, q_len|k_len, head_dim).
        key_bias: (batch|1, heads, 1, k_len), added to the scaled scores.
        scale: the score scale SDPA must then be called with (``scale=``), usually head_dim ** -0.5.

    Returns (q', k', v'), each with head_dim + 1 columns.
    """
    if key_bias.dim() != 4 or key_bias.shape[-2] != 1 or key_bias.shape[-1] != k.shape[-2]:
        raise ValueError(
            f"key_bias must have shape (batch|1, heads, 1, k_len={k.shape[-2]}), got {tuple(key_bias.shape)}"
        )
    column = (key_bias.to(torch.promote_types(key_bias.dtype, torch.float32)) / scale).transpose(-1, -2)
    q = torch.cat([q, q.new_ones(*q.shape[:-1], 1)], dim=-1)
    k = torch.cat([k, column.to(k.dtype).expand(*k.shape[:-1], 1)], dim=-1)
    v = torch.cat([v, v.new_zeros(*v.shape[:-1], 1)], dim=-1)
    return q, k, v


class MultiHeadAttention(nn.Module):
    """Multi-head self-attention with a pluggable position scheme, and grouped-query attention.

    Args:
        d_model: model width; must be divisible by ``n_heads``.
        n_heads: number of (query) heads.
        scheme: the :class:`PositionScheme` whose ``rotate_qk``, ``score_bias`` and ``qk_bias``
            hooks this layer calls (its ``add_to_embeddings`` is the model's job).
            ``None`` means :class:`NoPosition`.
        bias: whether the q/k/v/out projections have a bias.
        window: sliding-window (local) attention: query i sees key j only when ``|i - j| < window``,
            with i and j indices in the sequence (the cache counts as earlier); under a causal
            mask that is the last ``window`` keys, i - window < j <= i, as the local layers of
            Mistral, Gemma 2/3 and Cohere2 (``sliding_window`` in Hugging Face). ``None``: global.
        n_kv_heads: key/value heads (grouped-query attention), dividing ``n_heads``; ``None``: ``n_heads``.
            The fused projection ``qkv`` then has ``d_model + 2 * n_kv_heads * head_dim`` outputs:
            the query rows, then the key rows, then the value rows (Hugging Face's ``q_proj``,
            ``k_proj``, ``v_proj`` stacked).

    Call with x: (batch, seq, d_model) and get (batch, seq, d_model).

    Score scale. Every path (fused SDPA, the folded per-key bias, the explicit weights) scales
    the scores by ``s = scheme.score_scale(head_dim)``. A scheme whose reference does not scale
    (T5: ``s = 1``) would start with scores ``sqrt(head_dim)`` times larger than the usual
    ``q.k / sqrt(head_dim)``; so, as T5 does, the factor is folded into the query projection's
    initialisation instead: its weight and bias rows are multiplied by
    ``head_dim ** -0.5 / s`` after PyTorch's default init, and the scores at initialisation are
    those of a scaled layer (up to float rounding). (T5, in Hugging Face ``T5PreTrainedModel._init_weights``:
    q ~ N(0, (d_model * d_kv) ** -0.5), k and v ~ N(0, d_model ** -0.5), that is q is
    ``d_kv ** -0.5`` times k's scale.) The fold happens once, at construction, for the scheme
    given then; a scheme swapped in later leaves the weights alone.
    """

    def __init__(
        self, d_model: int, n_heads: int, scheme: PositionScheme | None = None, bias: bool = True,
        window: int | None = None, n_kv_heads: int | None = None,
    ):
        super().__init__()
        check_int("d_model", d_model)
        check_int("n_heads", n_heads)
        if d_model % n_heads != 0:
            raise ValueError(
                f"d_model must be a positive multiple of n_heads, got d_model={d_model}, n_heads={n_heads}"
            )
        if window is not None:
            check_int("window", window)
        n_kv_heads = n_heads if n_kv_heads is None else check_int("n_kv_heads", n_kv_heads)
        if n_heads % n_kv_heads:
            raise ValueError(f"n_kv_heads must divide n_heads={n_heads} (each key/value head serves a group of query "
                             f"heads), got {n_kv_heads}")
        self.d_model, self.n_heads, self.head_dim, self.window = d_model, n_heads, d_model // n_heads, window
        self.n_kv_heads = n_kv_heads
        self.scheme = scheme if scheme is not None else NoPosition()
        if not isinstance(self.scheme, PositionScheme):
            raise TypeError(f"scheme must be a PositionScheme (e.g. build_scheme('rope', d_model, n_heads)) or None, "
                            f"got {self.scheme!r}")
        self.scheme.check_layer(n_heads, self.head_dim)
        self.qkv = nn.Linear(d_model, d_model + 2 * n_kv_heads * self.head_dim, bias=bias)
        self.out = nn.Linear(d_model, d_model, bias=bias)
        gain = (1.0 / math.sqrt(self.head_dim)) / self.scheme.score_scale(self.head_dim)
        if gain != 1.0:  # fold the scale the scheme leaves out into the query init (T5)
            with torch.no_grad():
                for p in self.qkv.parameters():
                    p[:d_model].mul_(gain)

    def forward(
        self,
        x: Tensor,
        positions: Tensor | None = None,
        attn_mask: Tensor | None = None,
        causal: bool = False,
        cache: KVCache | None = None,
        return_weights: bool = False,
        tables: Any = None,
    ) -> Tensor | tuple[Tensor, Tensor]:
        """Attend.

        Args:
            x: (batch, seq, d_model) float tensor.
            positions: (batch, seq) integer positions; default ``len(cache) .. len(cache)+seq-1``.
            attn_mask: boolean, True = may attend. (batch, k_len) masks padded keys;
                anything broadcastable to (batch, heads, q_len, k_len) is used as is.
            causal: each query sees only keys at or before its own index in the sequence
                (the cache, if any, counts as earlier).
            cache: a :class:`KVCache` to read earlier keys/values from and append to.
            return_weights: also return the attention weights (batch, heads, q_len, k_len).
            tables: the scheme's ``rotation_tables(positions, x.dtype)``, when the model computed them once for
                all its layers (RoPE's cos and sin); None: computed here.
        """
        past = 0 if cache is None else len(cache)
        positions = self._check_inputs(x, positions, attn_mask, causal, past)

        q, k, v = self.heads(x, positions, tables)  # project, split heads, rotate q and k (values never)
        k_positions = positions
        if cache is not None:
            k, v, k_positions = cache.extend(k, v, positions)  # keys are cached rotated
        bias = self.scheme.score_bias(positions, k_positions)
        qk_bias = None
        if type(self.scheme).qk_bias is not PositionScheme.qk_bias:  # a bias that reads q and k (Transformer-XL)
            qk_bias = self.scheme.qk_bias(q, self._repeat_kv(k), positions, k_positions)
        if qk_bias is not None:
            bias = qk_bias if bias is None else bias + qk_bias
        if return_weights:
            y, weights = self._attend_with_weights(q, k, v, self._mask(bias, attn_mask, causal, past, k.shape[-2], x))
            return self.out(self._merge_heads(y)), weights
        y = self._attend(q, k, v, bias, attn_mask, causal, past, x)
        return self.out(self._merge_heads(y))

    def heads(self, x: Tensor, positions: Tensor, tables: Any = None) -> tuple[Tensor, Tensor, Tensor]:
        """q, k, v of x as the scores see them: projected, split into heads, q and k turned by ``scheme.rotate_qk``.

        x: (batch, seq, d_model); positions: (batch, seq); tables: the scheme's ``rotation_tables`` for them (None:
        computed here). Returns q (batch, heads, seq, head_dim) and k, v (batch, kv_heads, seq, head_dim).
        """
        kv_width = self.n_kv_heads * self.head_dim
        q, k, v = self.qkv(x).split([self.d_model, kv_width, kv_width], dim=-1)
        q, k, v = self._split_heads(q, self.n_heads), self._split_heads(k, self.n_kv_heads), self._split_heads(v, self.n_kv_heads)
        if tables is None:
            tables = self.scheme.rotation_tables(positions, q.dtype)
        q, k = self.scheme.rotate_qk(q, k, positions) if tables is None else self.scheme.rotate_qk(q, k, positions, tables)
        return q, k, v

    def _check_inputs(
        self, x: Tensor, positions: Tensor | None, attn_mask: Tensor | None, causal: bool, past: int
    ) -> Tensor:
        """Validate the arguments of :meth:`forward`; return the positions (the default ones if None)."""
        check_float_tensor("x", x)
        if x.dim() != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"x must have shape (batch, seq, d_model={self.d_model}), got {tuple(x.shape)}")
        if self.scheme.requires_causal and not causal:
            raise ValueError(
                f"scheme {type(self.scheme).__name__} requires causal=True (its compact bias equals the full one "
                f"only under a causal mask), got the attention's causal={causal}: use a decoder (TinyTransformer(..., "
                f"causal=True)), or build the scheme for an encoder (ALiBi(n_heads, causal=False), "
                f"build_scheme('alibi', d_model, n_heads, causal=False))"
            )
        b, s, _ = x.shape
        if positions is None:
            positions = default_positions(b, s, x.device, offset=past)
        check_positions(positions, b, s)
        if attn_mask is not None:
            check_attn_mask(attn_mask, b, past + s)
        return positions

    def _split_heads(self, t: Tensor, heads: int) -> Tensor:
        """(batch, seq, heads * head_dim) -> (batch, heads, seq, head_dim)."""
        b, s, _ = t.shape
        return t.view(b, s, heads, self.head_dim).transpose(1, 2)

    def _repeat_kv(self, t: Tensor) -> Tensor:
        """Keys or values (batch, kv_heads, k_len, head_dim) with each head repeated for its group of query heads:
        (batch, heads, k_len, head_dim), head h = kv head h // group (Hugging Face's ``repeat_kv``); t itself without GQA."""
        group = self.n_heads // self.n_kv_heads
        return t if group == 1 else t.repeat_interleave(group, dim=1)

    def _merge_heads(self, t: Tensor) -> Tensor:
        """(batch, heads, seq, head_dim) -> (batch, seq, d_model)."""
        b, _, s, _ = t.shape
        return t.transpose(1, 2).reshape(b, s, self.d_model)

    def _attend(
        self, q: Tensor, k: Tensor, v: Tensor, bias: Tensor | None, attn_mask: Tensor | None, causal: bool,
        past: int, x: Tensor,
    ) -> Tensor:
        """softmax(s * q k^T + bias + mask) v with PyTorch's fused SDPA: (batch, heads, q_len, head_dim).

        The speed decision. Causal attention with no padding and no cache offset lets SDPA apply
        the causal mask itself, in memory linear in seq; a per-key bias (batch|1, heads, 1, k_len),
        such as compact ALiBi, then rides along as one extra q/k column (see :func:`fold_key_bias`).
        Anything else is folded into one (.., q_len, k_len) float mask.
        """
        sdpa_causal = causal and attn_mask is None and past == 0 and self.window is None
        scale = self.scheme.score_scale(self.head_dim)  # stated: q and k may grow by a column below
        if sdpa_causal and bias is not None:
            per_key = (bias.dim() == 4 and bias.shape[0] in (1, q.shape[0]) and bias.shape[1] in (1, self.n_heads)
                       and bias.shape[2] == 1 and bias.shape[3] == k.shape[-2])
            if per_key:  # a per-head bias column: every query head needs its own keys
                q, k, v = fold_key_bias(q, self._repeat_kv(k), self._repeat_kv(v), bias, scale)
                bias = None
            else:
                sdpa_causal = False
        mask = None if sdpa_causal else self._mask(bias, attn_mask, causal, past, k.shape[-2], x)
        gqa = k.shape[1] != q.shape[1]
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=sdpa_causal, scale=scale, enable_gqa=gqa)
        return y[..., : self.head_dim]  # drop fold_key_bias's zero value column, if any

    def _attend_with_weights(self, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None) -> tuple[Tensor, Tensor]:
        """The same attention written out, returning (output, weights (batch, heads, q_len, k_len))."""
        k, v = self._repeat_kv(k), self._repeat_kv(v)
        scores = q @ k.transpose(-2, -1) * self.scheme.score_scale(self.head_dim)
        if mask is not None:
            scores = scores + mask
        # A query allowed to see no key at all (a left pad under a causal mask) gets all-zero
        # weights, as SDPA gives it, instead of the NaN of a softmax over -inf only.
        dead = scores.isneginf().all(dim=-1, keepdim=True)
        weights = scores.masked_fill(dead, 0.0).softmax(dim=-1).masked_fill(dead, 0.0)
        return weights @ v, weights

    def _mask(
        self, bias: Tensor | None, attn_mask: Tensor | None, causal: bool, past: int, k_len: int, x: Tensor
    ) -> Tensor | None:
        """Fold the scheme's score bias, the causal, window and padding masks into one additive float mask (or None)."""
        batch, q_len = x.shape[:2]
        if bias is not None:
            target = (batch, self.n_heads, q_len, k_len)
            try:
                fits = torch.broadcast_shapes(bias.shape, target) == target
            except RuntimeError:
                fits = False
            if not fits:
                raise ValueError(
                    f"score_bias of {type(self.scheme).__name__} must broadcast to (batch, heads, q_len, k_len) "
                    f"= {target}, got shape {tuple(bias.shape)} (does the scheme have as many heads as the layer?)"
                )
        allowed = None
        if attn_mask is not None:
            allowed = attn_mask[:, None, None, :] if attn_mask.dim() == 2 else attn_mask
        if causal or self.window is not None:
            rule = allowed_keys(q_len, k_len, causal=causal, window=self.window, past=past, device=x.device)
            allowed = rule if allowed is None else allowed & rule
        if bias is None and allowed is None:
            return None
        mask = x.new_zeros(()) if bias is None else bias.to(x.dtype)
        if allowed is not None:
            mask = mask.masked_fill(~allowed, float("-inf"))
        return mask

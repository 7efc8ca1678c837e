"""The interface every positional encoding implements: a *position scheme*.

Every positional encoding in this library injects position in one (or more) of
four places, and a :class:`PositionScheme` is the object that does it:

1. ``add_to_embeddings`` - a vector added to the token embeddings before the
   first layer (sinusoidal, learnable, 2-D tables).
2. ``rotate_qk`` - a transform of queries and keys after the projection and head
   split, before the scores (RoPE and its variants; Llama 4's query temperature). Values are never touched.
   What it computes from the positions alone (RoPE's cos and sin) it may return from
   ``rotation_tables``: the model then computes it once per forward pass and hands it to every
   layer's ``rotate_qk`` as ``tables`` (as Hugging Face's models hand ``position_embeddings`` to
   every decoder layer).
3. ``score_bias`` - a tensor added to ``s * (q . k)``, with ``s = score_scale(head_dim)``
   (``1/sqrt(head_dim)``, and ``s = 1`` for T5, which does not scale) (T5, ALiBi, Swin). It
   depends on positions only.
4. ``qk_bias`` - the same, for a bias that also reads the queries and keys (after
   ``rotate_qk`` and the cache): Transformer-XL's ``q_i . W_r r_{i-j}`` and its global
   biases ``u . k_j``, ``v . W_r r_{i-j}``. A query-dependent bias has no compact per-key
   form, so the attention always passes it to SDPA inside its float mask.

The attention layer computes, per head,

    scores = score_scale(head_dim) * (q . k) + score_bias + qk_bias      weights = softmax(scores + mask)

and ``score_scale`` is a declared property of the scheme too: ``head_dim ** -0.5`` by default
(Vaswani et al.), 1.0 for T5, whose reference (Mesh TensorFlow; Hugging Face ``T5Attention``,
``scaling = 1.0``) does not scale the scores and folds the factor into the initialisation of
the query projection instead (see :class:`posenc_lib.attention.MultiHeadAttention`). ALiBi keeps
the usual scale and adds its bias after it (Hugging Face ``BloomAttention``:
``alibi.baddbmm(q, k^T, beta=1, alpha=1/sqrt(head_dim))``; ``MptAttention`` likewise).

The default of every hook is "do nothing", so :class:`NoPosition` is simply the
base class, and a scheme only overrides what it uses. One scheme object is
shared by all layers of a model (as T5 shares its bias and RoPE its tables);
:class:`posenc_lib.attention.MultiHeadAttention` calls the last three hooks,
:class:`posenc_lib.models.TinyTransformer` the first (and ``rotation_tables``, once per forward pass).

Shapes used throughout:
    x          (batch, seq, d_model)
    positions  (batch, seq) integer positions of the tokens (0-based)
    q          (batch, heads, seq, head_dim)
    k, v       (batch, kv_heads, seq, head_dim); kv_heads = heads, or fewer (grouped-query attention)
    bias       broadcastable to (batch, heads, q_len, k_len)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

__all__ = ["PositionScheme", "NoPosition", "default_positions"]


def default_positions(batch: int, seq: int, device: torch.device | None = None, offset: int = 0) -> Tensor:
    """Positions ``offset .. offset+seq-1`` for every row: shape (batch, seq), int64."""
    return torch.arange(offset, offset + seq, device=device).expand(batch, seq)


class PositionScheme(nn.Module):
    """Where position enters a Transformer. The base class adds nothing.

    Subclasses override any of the four hooks below. ``kind`` names the place
    the scheme acts ("none", "embedding", "rotary", "bias", "qk-bias"), for tables and plots.
    """

    kind: str = "none"
    #: True for a scheme whose bias is only exact under a causal mask (ALiBi's compact form);
    #: the attention module then refuses to run it without ``causal=True``.
    requires_causal: bool = False
    #: The names of the float buffers that a cast to a lower precision leaves in float32, such as RoPE's
    #: frequencies (bfloat16 would round theta_i, and every angle m * theta_i with it). ``.to(device)`` moves
    #: them; ``.to(torch.bfloat16)`` and ``.half()`` keep their float32 values on the new device; ``.double()``
    #: widens them.
    float32_buffers: tuple[str, ...] = ()

    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> PositionScheme:
        """nn.Module's ``_apply`` (behind ``.to()``, ``.cuda()``, ``.half()``, ...), except that the buffers named in
        :attr:`float32_buffers` keep their float32 values when the cast is to 16 bits: they move to the new device
        once, here, so a forward pass never recomputes or copies them."""
        kept = {name: self._buffers[name] for name in self.float32_buffers if self._buffers.get(name) is not None}
        super()._apply(fn, recurse)
        for name, old in kept.items():
            new = self._buffers[name]
            if new.dtype.is_floating_point and new.dtype.itemsize < 4:
                self._buffers[name] = old.to(new.device)
        return self

    def check_layer(self, n_heads: int, head_dim: int) -> None:
        """Raise ValueError, naming the scheme's argument and the layer's, if the scheme cannot serve an attention
        layer of ``n_heads`` query heads of width ``head_dim`` (RoPE's ``head_dim``, ALiBi's ``n_heads``).

        :class:`~posenc_lib.attention.MultiHeadAttention` calls it when it is built or given a scheme, so a
        mismatch is found there, not at the first forward pass. The base class accepts every layer.
        """

    def add_to_embeddings(self, x: Tensor, positions: Tensor) -> Tensor:
        """Return ``x`` with position added. x: (batch, seq, d_model); positions: (batch, seq)."""
        return x

    def rotation_tables(self, positions: Tensor, dtype: torch.dtype) -> Any:
        """What ``rotate_qk`` computes from the positions (batch|1, seq) alone, for q of ``dtype``; None: nothing.

        The model calls it once per forward pass and passes the result to every layer using this
        scheme as ``rotate_qk(q, k, positions, tables)`` (RoPE: its cos and sin). A scheme that returns
        something here must accept ``tables``; with None, ``rotate_qk(q, k, positions)`` is called.
        """
        return None

    def rotate_qk(self, q: Tensor, k: Tensor, positions: Tensor, tables: Any = None) -> tuple[Tensor, Tensor]:
        """Return position-transformed (q, k). q: (batch, heads, seq, head_dim); k: (batch, kv_heads, seq, head_dim);
        positions: (batch, seq); tables: what :meth:`rotation_tables` returned for these positions (None when it
        returns None)."""
        return q, k

    def score_scale(self, head_dim: int) -> float:
        """The factor ``s`` of the scores ``s * (q . k)`` before the bias: ``1 / sqrt(head_dim)`` by default.

        Computed as SDPA computes its default scale (``1.0 / sqrt`` in double precision), so a
        layer that passes it as ``scale=`` gets the very same float.
        """
        return 1.0 / math.sqrt(head_dim)

    def score_bias(self, q_positions: Tensor, k_positions: Tensor) -> Tensor | None:
        """Bias added to ``s * (q . k)`` with ``s = score_scale(head_dim)`` (``1/sqrt(head_dim)``; 1 for T5, so
        T5's bias meets unscaled scores), broadcastable to (batch, heads, q_len, k_len); None for no bias.

        q_positions: (batch, q_len); k_positions: (batch, k_len).
        """
        return None

    def qk_bias(self, q: Tensor, k: Tensor, q_positions: Tensor, k_positions: Tensor) -> Tensor | None:
        """Bias that reads q and k, added to ``s * (q . k)`` like ``score_bias``; None for none.

        q: (batch, heads, q_len, head_dim); k: (batch, heads, k_len, head_dim) (rotated and
        cached as the scores see them); positions as for ``score_bias``. Returns a tensor
        broadcastable to (batch, heads, q_len, k_len), in the units of ``s * (q . k)``.
        """
        return None


class NoPosition(PositionScheme):
    """No positional information at all: attention sees a bag of tokens."""

"""Language-model measurements by position: the loss at each position, perplexity by length, attention entropy.

A causal model's loss at position p depends only on tokens 0..p, so one forward pass over sequences
of length ``8L`` gives the loss at every position, and the perplexity of length-``nL`` sequences is
``exp(mean loss over positions 0 .. nL-1)`` (:func:`perplexity_at`): the quantity of Figure 1 of
Press et al. (2022), for every scheme whose computation does not depend on the total length.

    per_position_loss(model, x, y)   cross-entropy at each position, averaged over a batch: (seq,)
    perplexity_at(losses, lengths)   perplexity of the first n tokens for several n
    attention_entropy(weights)       entropy of each query's attention distribution, in nats
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from posenc_lib.checks import is_int
from posenc_lib.models import TinyTransformer

__all__ = ["per_position_loss", "perplexity_at", "attention_entropy"]


@torch.no_grad()
def per_position_loss(model: TinyTransformer, inputs: Tensor, targets: Tensor, attn_mask: Tensor | None = None,
                      positions: Tensor | None = None) -> Tensor:
    """Cross-entropy (nats) at each position, averaged over the batch: (seq,) float32.

    inputs, targets: (batch, seq) token ids; attn_mask and positions are passed to the model
    (e.g. ``allowed_keys(seq, window=w)[None, None]``, or clamped positions).
    """
    if inputs.dim() != 2 or inputs.shape != targets.shape:
        raise ValueError(f"inputs and targets must both have shape (batch, seq), got {tuple(inputs.shape)} "
                         f"and {tuple(targets.shape)}")
    model.eval()
    logits = model(inputs, positions=positions, attn_mask=attn_mask)
    return F.cross_entropy(logits.transpose(1, 2), targets, reduction="none").mean(dim=0)


def perplexity_at(losses: Tensor, lengths: Sequence[int]) -> list[float]:
    """Perplexity of sequences of each length n: exp(mean of ``losses[:n]``).

    losses: (seq,) per-position cross-entropy in nats (from :func:`per_position_loss`);
    every n must lie in [1, seq].
    """
    if not isinstance(losses, Tensor) or losses.dim() != 1:
        raise ValueError(f"losses must be a 1-D tensor of per-position losses, got "
                         f"{tuple(losses.shape) if isinstance(losses, Tensor) else type(losses).__name__}")
    for n in lengths:
        if not is_int(n) or not 1 <= n <= losses.numel():
            raise ValueError(f"lengths must be ints in [1, {losses.numel()}], got {n!r}")
    return [math.exp(losses[:n].double().mean().item()) for n in lengths]


def attention_entropy(weights: Tensor) -> Tensor:
    """Entropy -sum_j w_ij ln w_ij (nats) of each query's attention: (..., q_len, k_len) -> (..., q_len).

    A query spread evenly over n keys has entropy ln n; one that looks at a single key has 0.
    """
    if not isinstance(weights, Tensor) or weights.dim() < 2:
        raise ValueError("weights must be a tensor (..., q_len, k_len) of attention weights")
    return -(weights * weights.clamp_min(1e-30).log()).sum(dim=-1)

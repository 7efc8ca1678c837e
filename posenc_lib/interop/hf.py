"""A bridge from Hugging Face attention modules to the library's: the same weights, our position scheme.

:func:`attention_from_hf` builds a :class:`~posenc_lib.attention.MultiHeadAttention` that holds the
weights of a ``transformers`` attention module (``q_proj``, ``k_proj``, ``v_proj``, ``o_proj``), so
that a notebook cell can state "our layer with scheme X gives Hugging Face's attention output" and
check it. Only what both layers compute can be bridged: key/value heads dividing the query heads
(grouped-query attention: ``num_key_value_heads < num_attention_heads``), no normalisation of queries
or keys, ``heads * head_dim == hidden_size``, and the scheme's score scale equal to the module's ``scaling``. Anything else raises an error that
says what differs. The masks a Hugging Face model builds around the module (causal, padding,
chunked) are the caller's business (:func:`additive_causal_mask` builds the causal one, with or without a
window); a module's ``sliding_window`` becomes our ``window``.

Shapes: the returned layer maps x (batch, seq, hidden_size) to (batch, seq, hidden_size), like the module.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from posenc_lib.attention import MultiHeadAttention, allowed_keys
from posenc_lib.checks import is_int
from posenc_lib.scheme import NoPosition, PositionScheme

__all__ = ["attention_from_hf", "additive_causal_mask"]

_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj")
_QK_NORMS = ("q_norm", "k_norm", "qk_norm")


@torch.no_grad()
def attention_from_hf(module: nn.Module, scheme: PositionScheme | None = None) -> MultiHeadAttention:
    """Our attention layer with ``module``'s weights: fused ``qkv`` = [W_q; W_k; W_v] (and biases), ``out`` = W_o.

    Args:
        module: a Hugging Face attention module with ``q_proj``, ``k_proj``, ``v_proj``, ``o_proj``
            linear layers, a ``head_dim`` and a ``scaling`` attribute (LlamaAttention,
            Llama4TextAttention, Cohere2Attention, ...).
        scheme: the position scheme of our layer (default :class:`NoPosition`); its score scale
            must equal ``module.scaling``.

    Returns:
        A :class:`MultiHeadAttention` (d_model = hidden_size, the module's number of query heads and
        of key/value heads, bias as the module's, ``window = module.sliding_window`` when the module
        has one), in the module's dtype and device, in eval mode.

    Raises:
        TypeError: ``module`` lacks one of the four projections or is not an ``nn.Module``.
        ValueError: key/value heads that do not divide the query heads, a query/key norm,
            heads * head_dim != hidden_size, biases on some projections only, or a score scale that is
            not the module's.
    """
    if not isinstance(module, nn.Module):
        raise TypeError(f"module must be a Hugging Face attention module (nn.Module), got {type(module).__name__}")
    name = type(module).__name__
    missing = [p for p in _PROJECTIONS if not isinstance(getattr(module, p, None), nn.Linear)]
    if missing or not is_int(getattr(module, "head_dim", None)):
        raise TypeError(f"module must have linear layers {list(_PROJECTIONS)} and an int head_dim, "
                        f"got {name} without {missing or ['head_dim']}")
    norms = [n for n in _QK_NORMS if getattr(module, n, None) is not None]
    if norms:
        raise ValueError(f"module {name} normalises queries or keys ({norms}); MultiHeadAttention does not, "
                         "so it cannot give the same output")
    q, k, v, o = (getattr(module, p) for p in _PROJECTIONS)
    head_dim = module.head_dim
    d_model = q.in_features
    heads, kv_heads = q.out_features // head_dim, k.out_features // head_dim
    if (q.out_features % head_dim or k.out_features % head_dim or v.out_features != k.out_features or kv_heads < 1
            or heads % kv_heads):
        raise ValueError(
            f"module {name} has k_proj and v_proj of {k.out_features} and {v.out_features} rows for "
            f"{q.out_features / head_dim:g} query heads of head_dim {head_dim}; MultiHeadAttention needs key/value heads "
            f"(rows / head_dim, the same for k and v) that divide the query heads"
        )
    if q.out_features != d_model or o.in_features != d_model or o.out_features != d_model:
        raise ValueError(f"module {name} must have heads * head_dim == hidden_size for MultiHeadAttention, got "
                         f"{q.out_features // head_dim} * {head_dim} = {q.out_features} and hidden_size {d_model}")
    has_bias = [getattr(module, p).bias is not None for p in _PROJECTIONS]
    if len(set(has_bias)) != 1:
        raise ValueError(f"module {name} must have a bias on all of {list(_PROJECTIONS)} or on none, got {has_bias}")
    scheme = NoPosition() if scheme is None else scheme
    if not isinstance(scheme, PositionScheme):
        raise TypeError(f"scheme must be a PositionScheme, got {type(scheme).__name__}")
    ours_scale, theirs_scale = scheme.score_scale(head_dim), getattr(module, "scaling", None)
    if theirs_scale is None or not math.isclose(ours_scale, theirs_scale, rel_tol=1e-6):
        raise ValueError(f"scheme {type(scheme).__name__} scales the scores by {ours_scale:.6g}, module {name} by "
                         f"{theirs_scale}; the scheme's score_scale(head_dim={head_dim}) must equal module.scaling")
    attention = MultiHeadAttention(
        d_model, heads, scheme, bias=has_bias[0], window=getattr(module, "sliding_window", None), n_kv_heads=kv_heads
    ).to(device=q.weight.device, dtype=q.weight.dtype)
    attention.qkv.weight.copy_(torch.cat((q.weight, k.weight, v.weight)))
    attention.out.weight.copy_(o.weight)
    if has_bias[0]:
        attention.qkv.bias.copy_(torch.cat((q.bias, k.bias, v.bias)))
        attention.out.bias.copy_(o.bias)
    return attention.eval()


def additive_causal_mask(seq: int, window: int | None = None) -> torch.Tensor:
    """Hugging Face's additive attention mask for one causal sequence: (1, 1, seq, seq) float32.

    0 where query i may see key j (:func:`~posenc_lib.attention.allowed_keys`: j <= i, and i - j < window when a
    window is given), -inf elsewhere: what a Hugging Face model passes its attention modules as
    ``attention_mask`` (eager attention adds it to the scores).
    """
    allowed = allowed_keys(seq, window=window)
    return torch.zeros(seq, seq).masked_fill(~allowed, float("-inf"))[None, None]

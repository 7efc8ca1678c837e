"""Train short, test long: the measurements of notebook 06 on causal language models.

A causal model's loss at position p depends only on tokens 0..p, so one forward pass over
sequences of length ``8L`` gives the loss at every position, and the perplexity of length-``nL``
sequences is ``exp(mean loss over positions 0 .. nL-1)`` (:func:`perplexity_at`), the
quantity of Figure 1 of Press et al. (2022), for every scheme whose computation does not depend
on the total length (all except dynamic NTK, which is run once per length).

Contents::

    train_char_lm        - a TinyTransformer causal char LM trained on random windows of a corpus
    finetune_char_lm     - continue training it on longer windows (after a RoPE rescaling)
    with_scheme          - a copy of a trained model with another position scheme (RoPE scalings)
    per_position_loss    - cross-entropy at each position, averaged over a batch: (seq,)
    perplexity_at        - perplexity of the first n tokens for several n, from per-position losses
    window_mask          - a causal mask that keeps only the last ``window`` keys (plus ``sink`` first keys)
    attention_entropy    - entropy of each query's attention distribution, in nats
                           (of the maps from :meth:`~posenc_lib.models.TinyTransformer.attention_weights`)
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from ..checks import check_int, is_int
from ..scheme import PositionScheme
from .data import CharCorpus, lm_batch
from ..models import LayerSpec, TinyTransformer
from .training import seed_everything, train

__all__ = [
    "train_char_lm",
    "finetune_char_lm",
    "with_scheme",
    "per_position_loss",
    "perplexity_at",
    "window_mask",
    "attention_entropy",
]


def train_char_lm(
    scheme: PositionScheme | Callable[[], PositionScheme],
    corpus: CharCorpus,
    seq_len: int,
    steps: int,
    seed: int,
    batch_size: int = 32,
    lr: float = 3e-3,
    d_model: int = 64,
    n_heads: int = 4,
    n_layers: int = 2,
    desc: str | None = None,
    layer_specs: Callable[[], Sequence[LayerSpec]] | None = None,
) -> TinyTransformer:
    """A causal character LM (pool="none", token embeddings N(0, 1), not rescaled) trained with :func:`train`.

    Seeds everything with ``seed``, then builds the model (its weights come from that seed) and
    trains ``steps`` steps on windows of ``seq_len`` characters drawn from ``corpus.train`` by
    :func:`posenc_lib.course.data.lm_batch` (offsets from the same seed). Returns the model in eval mode.

    scheme: the position scheme, or a function that builds it. Pass the function for a scheme with
    parameters of its own (T5 bias, a learnable table): it is called after the seeding, so those
    parameters come from ``seed`` too; a scheme built by the caller was drawn before it.
    layer_specs: a function that builds one :class:`~posenc_lib.models.LayerSpec` per layer (called
    after the seeding, like ``scheme``): each layer's own scheme and window; ``scheme`` then only
    adds to the embeddings (pass :class:`~posenc_lib.scheme.NoPosition` for nothing).
    """
    check_int("seq_len", seq_len)
    check_int("steps", steps)
    gen = seed_everything(seed)
    if not isinstance(scheme, PositionScheme):
        if not callable(scheme):
            raise TypeError(f"scheme must be a PositionScheme or a function that builds one, got {type(scheme).__name__}")
        scheme = scheme()
    if layer_specs is not None and not callable(layer_specs):
        raise TypeError(f"layer_specs must be a function that builds the LayerSpec list, got {type(layer_specs).__name__}")
    model = TinyTransformer(len(corpus.vocab), len(corpus.vocab), d_model, n_heads, n_layers, scheme=scheme,
                            causal=True, pool="none", layer_specs=None if layer_specs is None else layer_specs())
    train(model, lambda _: lm_batch(corpus.train, seq_len, batch_size, gen), steps, lr=lr, desc=desc)
    return model


def finetune_char_lm(model: TinyTransformer, corpus: CharCorpus, seq_len: int, steps: int, seed: int,
                     batch_size: int = 8, lr: float = 1e-3, desc: str | None = None) -> TinyTransformer:
    """Continue training ``model`` in place on windows of ``seq_len`` (e.g. a longer context after a RoPE rescaling)."""
    check_int("seq_len", seq_len)
    check_int("steps", steps)
    gen = torch.Generator().manual_seed(seed)
    train(model, lambda _: lm_batch(corpus.train, seq_len, batch_size, gen), steps, lr=lr, desc=desc)
    return model


def with_scheme(model: TinyTransformer, scheme: PositionScheme) -> TinyTransformer:
    """A copy of ``model`` whose every layer uses ``scheme``; ``model`` itself is left as it is.

    Meant for schemes without parameters, such as a :class:`~posenc_lib.encodings.rotary.rope.RotaryPE` with
    another ``scaling`` dict: the trained weights are kept, only the frequencies change. The copy
    can be evaluated at once (zero-shot) or fine-tuned without touching the original.
    """
    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model must be a TinyTransformer, got {type(model).__name__}")
    if not isinstance(scheme, PositionScheme):
        raise TypeError(f"scheme must be a PositionScheme, got {type(scheme).__name__}")
    if next(scheme.parameters(), None) is not None:
        raise ValueError(f"scheme must have no parameters (they would be untrained), got {type(scheme).__name__}")
    # the copy shares the old schemes (model-wide and per layer) instead of copying them with their caches;
    # set_scheme then replaces every one of them in the copy, and the original keeps its own
    old = [model.scheme, *(block.attn.scheme for block in model.blocks)]
    twin = copy.deepcopy(model, memo={id(s): s for s in old})
    twin.set_scheme(scheme)
    return twin


@torch.no_grad()
def per_position_loss(model: TinyTransformer, inputs: Tensor, targets: Tensor, attn_mask: Tensor | None = None,
                      positions: Tensor | None = None) -> Tensor:
    """Cross-entropy (nats) at each position, averaged over the batch: (seq,) float32.

    inputs, targets: (batch, seq) token ids; attn_mask and positions are passed to the model
    (e.g. a :func:`window_mask`, or clamped positions).
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


def window_mask(seq_len: int, window: int, sink: int = 0) -> Tensor:
    """Causal sliding-window mask: query i may see key j when 0 <= i - j < window, or when j < sink.

    Returns a bool tensor (1, 1, seq_len, seq_len), True = may attend, to pass as ``attn_mask``.
    ``sink`` > 0 also keeps the first ``sink`` tokens visible to every later query (the
    "attention sink" of StreamingLLM, Xiao et al. 2023): keys at large, unseen distances.
    """
    check_int("seq_len", seq_len)
    check_int("window", window)
    check_int("sink", sink, minimum=0)
    i = torch.arange(seq_len)[:, None]
    j = torch.arange(seq_len)[None, :]
    allowed = ((i - j >= 0) & (i - j < window)) | ((j < sink) & (j <= i))
    return allowed[None, None]


def attention_entropy(weights: Tensor) -> Tensor:
    """Entropy -sum_j w_ij ln w_ij (nats) of each query's attention: (..., q_len, k_len) -> (..., q_len).

    A query spread evenly over n keys has entropy ln n; one that looks at a single key has 0.
    """
    if not isinstance(weights, Tensor) or weights.dim() < 2:
        raise ValueError("weights must be a tensor (..., q_len, k_len) of attention weights")
    return -(weights * weights.clamp_min(1e-30).log()).sum(dim=-1)

"""Train short, test long: the measurements of notebook 06 on causal language models.

A causal model's loss at position p depends only on tokens 0..p, so one forward pass over
sequences of length ``8L`` gives the loss at every position, and the perplexity of length-``nL``
sequences is ``exp(mean loss over positions 0 .. nL-1)`` (:func:`perplexity_at`), the
quantity of Figure 1 of Press et al. (2022), for every scheme whose computation does not depend
on the total length (all except dynamic NTK, which is run once per length).

Contents::

    train_char_lm        - a TinyTransformer causal char LM trained on random windows of a corpus
    finetune_char_lm     - continue training it on longer windows (after a RoPE rescaling)

The measurements themselves are the library's (:mod:`posenc_lib.analysis.lm_metrics`: per-position loss,
perplexity by length, attention entropy; :func:`posenc_lib.models.with_scheme`;
:func:`posenc_lib.attention.allowed_keys` for windows).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from posenc_course.data import CharCorpus, lm_batch
from posenc_course.training import seed_everything, train
from posenc_lib.checks import check_int
from posenc_lib.models import LayerSpec, TinyTransformer
from posenc_lib.scheme import PositionScheme

__all__ = [
    "train_char_lm",
    "finetune_char_lm",
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
    :func:`posenc_course.data.lm_batch` (offsets from the same seed). Returns the model in eval mode.

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

"""Tiny Transformers that take a position scheme: an encoder (classifier) and a causal decoder (LM).

Both are the same pre-LayerNorm stack; ``causal=True`` turns it into a decoder.
Position enters only through the scheme (see :mod:`posenc_lib.attention`), so swapping
encodings never changes anything else in the model. What a scheme computes from the positions
alone (RoPE's cos and sin, its ``rotation_tables``) is computed once per forward pass and handed to
every layer that uses that scheme, as Hugging Face's models hand ``position_embeddings`` to every
decoder layer. One scheme serves every layer by default;
``layer_specs`` gives each layer its own (:class:`LayerSpec`), as today's models mix layer kinds:
RoPE on three layers in four and none on the fourth (SmolLM3, Llama 4), local-window layers
with RoPE beside global ones without (Cohere2), or two RoPE bases by layer type (Gemma 3).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import torch
from torch import Tensor, nn

from posenc_lib.attention import KVCache, MultiHeadAttention
from posenc_lib.checks import check_int, check_positions
from posenc_lib.scheme import NoPosition, PositionScheme, default_positions

__all__ = ["LayerSpec", "TransformerBlock", "TinyTransformer", "last_token_logits_two_ways", "with_scheme"]

Pool = Literal["none", "mean", "first", "last"]
T = TypeVar("T")


@dataclass(frozen=True)
class LayerSpec:
    """What one layer's attention does with position: its scheme, and its window if it is local.

    Args:
        scheme: the layer's :class:`PositionScheme` (its ``rotate_qk``, ``score_bias`` and ``qk_bias`` hooks).
        window: ``None`` for global attention, else the sliding window of
            :class:`~posenc_lib.attention.MultiHeadAttention` (the last ``window`` keys under a causal mask).
    """

    scheme: PositionScheme
    window: int | None = None


class TransformerBlock(nn.Module):
    """Pre-LN block: x + attn(ln(x)), then x + mlp(ln(x)). x: (batch, seq, d_model)."""

    def __init__(
        self, d_model: int, n_heads: int, scheme: PositionScheme, d_ff: int, dropout: float = 0.0,
        window: int | None = None, n_kv_heads: int | None = None,
    ):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = MultiHeadAttention(d_model, n_heads, scheme, window=window, n_kv_heads=n_kv_heads)
        self.ln2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))
        self.drop = nn.Dropout(dropout)

    def forward(self, x: Tensor, positions: Tensor, attn_mask: Tensor | None, causal: bool, cache: KVCache | None,
                tables: Any = None) -> Tensor:
        x = x + self.drop(self.attn(self.ln1(x), positions, attn_mask, causal, cache, tables=tables))
        return x + self.drop(self.mlp(self.ln2(x)))


class TinyTransformer(nn.Module):
    """Token embedding -> scheme.add_to_embeddings -> blocks -> LayerNorm -> pool -> linear head.

    Args:
        vocab_size: number of token ids; ``None`` when ``embed`` is given.
        n_outputs: width of the output head (classes, or vocab size for a language model).
        d_model, n_heads, n_layers: size of the stack; d_model must be divisible by n_heads.
        scheme: the position scheme, shared by all layers; ``None`` = :class:`NoPosition`.
        causal: decoder (each token sees only itself and earlier tokens) instead of encoder.
        pool: "none" gives per-token outputs (batch, seq, n_outputs); "mean", "first" or "last"
            give one output per sequence (batch, n_outputs), over the real tokens only when an
            ``attn_mask`` is given (the mean of the real tokens, the first or the last real token).
        embed_scale: multiply token embeddings by sqrt(d_model) before adding position
            (as in Vaswani et al.), so that the two have comparable scales.
        embed: a module mapping inputs to (batch, seq, d_model); default ``nn.Embedding``.
            A vision model passes its patch embedding here.
        d_ff: MLP width, default 4 * d_model.
        dropout: dropout probability after the attention and the MLP of every block (0: none).
        n_kv_heads: key/value heads of every attention layer (grouped-query attention, dividing
            ``n_heads``); ``None``: ``n_heads``.
        layer_specs: one :class:`LayerSpec` per layer (``n_layers`` of them): layer i's attention
            uses ``layer_specs[i].scheme`` and window instead of ``scheme``, which then only
            adds to the embeddings (its ``add_to_embeddings``; ``None`` adds nothing). A scheme
            object may serve several layers, and its parameters (if any) are shared by them.
    """

    def __init__(
        self,
        vocab_size: int | None,
        n_outputs: int,
        d_model: int = 64,
        n_heads: int = 4,
        n_layers: int = 2,
        scheme: PositionScheme | None = None,
        causal: bool = False,
        pool: Pool = "mean",
        embed_scale: bool = False,
        embed: nn.Module | None = None,
        d_ff: int | None = None,
        dropout: float = 0.0,
        layer_specs: Sequence[LayerSpec] | None = None,
        n_kv_heads: int | None = None,
    ):
        super().__init__()
        if pool not in ("none", "mean", "first", "last"):
            raise ValueError(f"pool must be one of 'none', 'mean', 'first', 'last', got {pool!r}")
        if embed is None and vocab_size is None:
            raise ValueError("vocab_size is required when no embed module is given")
        if embed is None:
            check_int("vocab_size", vocab_size)
        check_int("n_outputs", n_outputs)
        check_int("d_model", d_model)
        check_int("n_heads", n_heads)
        check_int("n_layers", n_layers)
        if scheme is not None and not isinstance(scheme, PositionScheme):
            raise TypeError(f"scheme must be a PositionScheme or None, e.g. build_scheme('rope', d_model, n_heads) or "
                            f"RotaryPE(d_model // n_heads), got {scheme!r}")
        self.scheme = scheme if scheme is not None else NoPosition()
        if layer_specs is None:
            layer_specs = [LayerSpec(self.scheme)] * n_layers
        _check_layer_specs(layer_specs, n_layers)
        for i, spec in enumerate(layer_specs):
            where = "scheme" if spec.scheme is self.scheme else f"layer_specs[{i}].scheme"
            if spec.scheme.requires_causal and not causal:
                raise ValueError(
                    f"{where} {type(spec.scheme).__name__} requires causal=True (its compact bias equals the full one "
                    f"only under a causal mask), got TinyTransformer(causal=False): build a decoder, "
                    f"TinyTransformer(..., causal=True), or the scheme for an encoder, ALiBi(n_heads, causal=False) "
                    f"or build_scheme('alibi', d_model, n_heads, causal=False)"
                )
        self.causal, self.pool, self.d_model = causal, pool, d_model
        self.embed = embed if embed is not None else nn.Embedding(vocab_size, d_model)
        self.embed_scale = d_model**0.5 if embed_scale else 1.0
        self.blocks = nn.ModuleList(
            TransformerBlock(d_model, n_heads, spec.scheme, d_ff or 4 * d_model, dropout, spec.window, n_kv_heads)
            for spec in layer_specs
        )
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, n_outputs)

    def set_scheme(self, scheme: PositionScheme) -> None:
        """Use ``scheme`` from now on, in the model and every attention layer (in place).

        For swapping a parameter-free scheme after training: RoPE with another scaling, a 2-D
        table for a larger grid. The old scheme's parameters leave the model with it. Every layer
        gets ``scheme``, per-layer ``layer_specs`` included (their windows stay).
        """
        if not isinstance(scheme, PositionScheme):
            raise TypeError(f"scheme must be a PositionScheme, got {type(scheme).__name__}")
        for block in self.blocks:
            scheme.check_layer(block.attn.n_heads, block.attn.head_dim)
        self.scheme = scheme
        for block in self.blocks:
            block.attn.scheme = scheme

    @torch.no_grad()
    def attention_weights(
        self, inputs: Tensor, positions: Tensor | None = None, attn_mask: Tensor | None = None
    ) -> list[Tensor]:
        """The attention weights of every layer in one forward pass: a list of (batch, heads, q_len, k_len).

        Arguments as for :meth:`forward`. Each attention layer is re-run on its own input with
        ``return_weights=True`` (through a forward hook), so the maps are exactly those the model
        used. Row ``i`` of a map holds how much query ``i`` attends to each key; rows sum to 1
        (0 for a query that may see no key). Puts the model in eval mode.
        """
        return self._per_layer(
            lambda attn, x, layer_positions, mask, causal: attn.forward(x, layer_positions, mask, causal, return_weights=True)[1],
            inputs, positions, attn_mask)

    @torch.no_grad()
    def queries_and_keys(self, inputs: Tensor, positions: Tensor | None = None) -> list[tuple[Tensor, Tensor]]:
        """Every layer's queries and keys as its scores see them (rotated): a list of (q, k), q (batch, heads, seq,
        head_dim) and k (batch, kv_heads, seq, head_dim).

        Arguments as for :meth:`forward`; each layer's :meth:`~posenc_lib.attention.MultiHeadAttention.heads`
        is called on that layer's own input (a forward hook). Puts the model in eval mode.
        """
        return self._per_layer(lambda attn, x, layer_positions, mask, causal: attn.heads(x, layer_positions)[:2],
                               inputs, positions)

    def _per_layer(self, read: Callable[..., T], inputs: Tensor, positions: Tensor | None = None,
                   attn_mask: Tensor | None = None) -> list[T]:
        """``read(attention, x, positions, attn_mask, causal)`` for every layer, on the input that layer gets in one
        forward pass (through forward hooks; no cache, so nothing is extended). ``read`` must call the layer's
        ``forward`` (not the layer itself, which would run the hook again). Puts the model in eval mode."""
        found: list[T] = []

        def record(module: nn.Module, args: tuple, output: Tensor) -> None:
            found.append(read(module, *args[:4]))  # x, positions, attn_mask, causal

        hooks = [block.attn.register_forward_hook(record) for block in self.blocks]
        try:
            self.eval()
            self(inputs, positions=positions, attn_mask=attn_mask)
        finally:
            for hook in hooks:
                hook.remove()
        return found

    def new_cache(self) -> list[KVCache]:
        """One empty :class:`KVCache` per layer, for incremental decoding (a causal model only).

        Pass the list itself as ``cache=`` to every call: the prompt first, then each new token; the
        positions count on from the cache's length by default. An ``attn_mask`` (or ``positions``)
        then covers the cached tokens too: (batch, cached + seq). A greedy decoding loop::

            cache = model.new_cache()
            logits = model(prompt, cache=cache)               # (batch, seq, vocab), pool="none"
            for _ in range(n_new):
                token = logits[:, -1:].argmax(-1)             # (batch, 1)
                logits = model(token, cache=cache)
        """
        return [KVCache() for _ in self.blocks]

    def features(
        self,
        inputs: Tensor,
        positions: Tensor | None = None,
        attn_mask: Tensor | None = None,
        cache: list[KVCache] | None = None,
    ) -> Tensor:
        """Per-token hidden states after the final LayerNorm: (batch, seq, d_model).

        inputs: (batch, seq) token ids (or whatever ``embed`` takes); positions: (batch, seq),
        default counts on from the cache length; attn_mask: (batch, seq) bool, True = real token;
        with a cache it covers the cached tokens too: (batch, cached + seq).
        """
        if cache is not None:
            self._check_cache(cache)
        x = self.embed(inputs) * self.embed_scale
        b, s = x.shape[:2]
        past = 0 if cache is None else len(cache[0])
        if positions is None:
            positions = default_positions(b, s, x.device, offset=past)
        check_positions(positions, b, s)
        x = self.scheme.add_to_embeddings(x, positions)
        tables = self._rotation_tables(positions, x.dtype)
        for i, block in enumerate(self.blocks):
            x = block(x, positions, attn_mask, self.causal, None if cache is None else cache[i], tables[i])
        return self.ln_f(x)

    def _check_cache(self, cache: Any) -> None:
        """cache must be :meth:`new_cache`'s list, one KVCache per layer, and the model causal."""
        if not isinstance(cache, (list, tuple)) or len(cache) != len(self.blocks) or not all(
                isinstance(c, KVCache) for c in cache):
            got = (f"{type(cache).__name__} of {len(cache)} items" if isinstance(cache, (list, tuple))
                   else type(cache).__name__)
            raise TypeError(f"cache must be a list of n_layers={len(self.blocks)} KVCache objects, as model.new_cache() "
                            f"returns, got {got}")
        if not self.causal:
            raise ValueError("cache needs a causal model (TinyTransformer(..., causal=True)), got causal=False: an "
                             "encoder's earlier tokens attend to later ones, which a cache never shows them")

    def _rotation_tables(self, positions: Tensor, dtype: torch.dtype) -> list[Any]:
        """Each layer's ``scheme.rotation_tables(positions, dtype)``, computed once per scheme object: one cos/sin
        for all the layers that share a RoPE."""
        done: list[tuple[PositionScheme, Any]] = []
        tables = []
        for block in self.blocks:
            scheme = block.attn.scheme
            found = [t for s, t in done if s is scheme]
            if not found:
                found = [scheme.rotation_tables(positions, dtype)]
                done.append((scheme, found[0]))
            tables.append(found[0])
        return tables

    def forward(
        self,
        inputs: Tensor,
        positions: Tensor | None = None,
        attn_mask: Tensor | None = None,
        cache: list[KVCache] | None = None,
    ) -> Tensor:
        """Logits: (batch, seq, n_outputs) when pool="none", else (batch, n_outputs).

        inputs: (batch, seq) token ids (or whatever ``embed`` takes); positions: (batch|1, seq), default
        ``arange`` counting on from the cache's length; attn_mask: (batch, k_len) bool, True = real token
        (k_len = cached + seq with a cache); cache: :meth:`new_cache`'s list, one KVCache per layer (a
        causal model only), extended in place.
        """
        h = self.features(inputs, positions, attn_mask, cache)
        if self.pool == "mean":
            if attn_mask is None:
                h = h.mean(dim=1)
            else:
                w = attn_mask.to(h.dtype).unsqueeze(-1)
                h = (h * w).sum(dim=1) / w.sum(dim=1).clamp_min(1.0)
        elif self.pool in ("first", "last"):
            if attn_mask is None:
                h = h[:, 0] if self.pool == "first" else h[:, -1]
            else:
                # Index of the first / last True of each row (argmax returns the first maximum).
                real = attn_mask if self.pool == "first" else attn_mask.flip(-1)
                idx = real.to(torch.uint8).argmax(dim=-1)
                idx = idx if self.pool == "first" else attn_mask.shape[-1] - 1 - idx
                h = h[torch.arange(h.shape[0], device=h.device), idx]
        return self.head(h)

    def num_parameters(self) -> int:
        """Trainable parameters (position tables included, buffers excluded)."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad)


def _check_layer_specs(layer_specs: Sequence[LayerSpec], n_layers: int) -> None:
    """layer_specs must be a list or tuple of n_layers LayerSpec objects, each with a PositionScheme."""
    if not isinstance(layer_specs, (list, tuple)) or len(layer_specs) != n_layers:
        got = f"{len(layer_specs)} items" if isinstance(layer_specs, (list, tuple)) else type(layer_specs).__name__
        raise ValueError(f"layer_specs must be a list of n_layers={n_layers} LayerSpec objects, got {got}")
    for i, spec in enumerate(layer_specs):
        if not isinstance(spec, LayerSpec):
            raise TypeError(f"layer_specs[{i}] must be a LayerSpec, got {type(spec).__name__}")
        if not isinstance(spec.scheme, PositionScheme):
            raise TypeError(f"layer_specs[{i}].scheme must be a PositionScheme, got {type(spec.scheme).__name__}")


@torch.no_grad()
def last_token_logits_two_ways(model: TinyTransformer, tokens: Tensor) -> tuple[Tensor, Tensor]:
    """Logits of the last token computed two ways: full recomputation, and prefix + one cached step.

    Returns (full, cached), each (batch, n_outputs); they agree when the scheme handles
    cache offsets correctly. tokens: (batch, seq) with seq >= 2; model must be causal, pool="none".
    """
    full = model(tokens)[:, -1]
    cache = model.new_cache()
    model(tokens[:, :-1], cache=cache)
    cached = model(tokens[:, -1:], cache=cache)[:, -1]
    return full, cached


def with_scheme(model: TinyTransformer, scheme: PositionScheme) -> TinyTransformer:
    """A copy of ``model`` whose every layer uses ``scheme``; ``model`` itself is left as it is.

    Meant for schemes without parameters, such as a :class:`~posenc_lib.rotary.rope.RotaryPE` with
    another ``scaling`` dict: the trained weights are kept, only the frequencies change. The copy
    can be evaluated at once (zero-shot) or fine-tuned without touching the original.

    Not for another RoPE layout: the trained query and key rows pair their dims the old way, so the
    copy would compute something else. Raises ValueError then; convert the weights with
    :func:`~posenc_lib.rotary.rope.convert_rope_checkpoint` and load them into a model built with the new scheme.
    """
    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model must be a TinyTransformer, got {type(model).__name__}")
    if not isinstance(scheme, PositionScheme):
        raise TypeError(f"scheme must be a PositionScheme, got {type(scheme).__name__}")
    if next(scheme.parameters(), None) is not None:
        raise ValueError(f"scheme must have no parameters (they would be untrained), got {type(scheme).__name__}")
    trained = {getattr(block.attn.scheme, "layout", None) for block in model.blocks} - {None}
    new_layout = getattr(scheme, "layout", None)
    if scheme.kind == "rotary" and new_layout is not None and trained and trained != {new_layout}:
        raise ValueError(
            f"scheme has layout={new_layout!r}, but the model was trained with layout={sorted(trained)[0]!r}: its query "
            f"and key rows pair dims that way, and the copy would compute something else; convert them first, "
            f"convert_rope_checkpoint(model.state_dict(), head_dim, to={new_layout!r}), and load them into a model "
            f"built with the new scheme (or give the scheme layout={sorted(trained)[0]!r})"
        )
    # the copy shares the old schemes (model-wide and per layer) instead of copying them with their caches;
    # set_scheme then replaces every one of them in the copy, and the original keeps its own
    old = [model.scheme, *(block.attn.scheme for block in model.blocks)]
    twin = copy.deepcopy(model, memo={id(s): s for s in old})
    twin.set_scheme(scheme)
    return twin

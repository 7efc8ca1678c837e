"""Rotary position embedding (RoPE, Su et al. "RoFormer"): turn query/key pairs by an angle that grows with position.

Split a head of width d into d/2 pairs. At position m, pair i is rotated by the angle
``m * theta_i`` with ``theta_i = base^(-2i/d)``. Because a rotation by m followed by the
inverse of a rotation by n is a rotation by m - n, the score <R_m q, R_n k> depends on the
positions only through m - n: relative position, obtained with absolute angles.

Two layouts say which dims form a pair, and a checkpoint only works in its own one:

* ``"half"`` (Hugging Face ``rotate_half``): pair i is (x[i], x[i + d/2]), and
  ``RoPE(x) = x * [cos | cos] + rotate_half(x) * [sin | sin]``.
* ``"interleaved"`` (Meta's LLaMA reference): pair i is (x[2i], x[2i+1]), read as the complex
  number ``x[2i] + j x[2i+1]`` and multiplied by ``exp(j m theta_i)``.

The sinusoidal table (:mod:`posenc_lib.embeddings.sinusoidal`) uses the same two names for the same
two orders. :func:`rope_layout_permutation` and :func:`convert_qk_weight` translate between them.

The module follows the idea: the frequencies theta_i (:func:`rope_inv_freq`), the angles and
their cos/sin (:func:`rope_cos_sin`), the rotation, written once per layout (:func:`apply_rope`,
:func:`apply_rope_qk`), the position scheme (:class:`RotaryPE`), then the layouts and checkpoint
conversion. Longer contexts (linear, NTK, YaRN, Llama 3 scaling, LongRoPE) and truncated frequencies
(proportional RoPE) change theta_i: :mod:`.scaling`.

Tables are *half width*: ``cos, sin`` have shape (batch|1, seq, rot_dim // 2), one column
per pair, and broadcast over heads. The angles and their cos/sin are computed in float32
and cast to the model dtype last: in bfloat16 a position like 3000 is not even representable
(spacing 16), so bf16 angles are wrong by whole radians. Float64 tables (a model moved to
float64) are computed in float64 throughout, frequencies included.

Once per forward pass. A model asks :meth:`RotaryPE.rotation_tables` for cos and sin once per
forward pass, computed from the positions (no cached table, nothing read back to the host), and
hands them to every layer, as Hugging Face's models compute ``position_embeddings`` once and pass
them to each decoder layer (:class:`~posenc_lib.models.TinyTransformer` does it for every scheme).

Speed. The rotation is a few multiply-adds per element, so its cost is memory traffic, and eager
PyTorch makes one pass over memory per op. ``torch.compile`` fuses those ops into one loop (and
with the attention's other ops around them). So wrap the model, or the attention, in ``torch.compile``::

    model = TinyTransformer(vocab, vocab, d_model=64, n_heads=4, scheme=RotaryPE(head_dim=16))
    model = torch.compile(model)    # the first call compiles (seconds), later calls are fused
    logits = model(tokens)

Measured speeds beside Meta's and Hugging Face's formulas: ``docs/rope-speed.md`` (``make bench``).

Shapes:
    x, q            (batch, heads, seq, head_dim)
    k               (batch, kv_heads, seq, head_dim)  (kv_heads < heads under grouped-query attention)
    positions       (batch, seq) or (seq,) integer
    inv_freq        (rot_dim // 2,) float32
    cos, sin        (batch|1, seq, rot_dim // 2) or (seq, rot_dim // 2); rot_dim <= head_dim
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from torch import Tensor

from posenc_lib.checks import (
    check_choice,
    check_even_int,
    check_float_dtype,
    check_float_tensor,
    check_int,
    check_integer_tensor,
    check_number,
    is_int,
    is_number,
)
from posenc_lib.frequencies import LAYOUTS, Layout, even_odd_permutation, inverse_frequencies
from posenc_lib.rotary import scaling as rope_scaling
from posenc_lib.scheme import PositionScheme

__all__ = [
    "LAYOUTS",
    "rope_inv_freq",
    "rope_cos_sin",
    "rotate_half",
    "apply_rope",
    "apply_rope_qk",
    "RotaryPE",
    "rope_layout_permutation",
    "convert_qk_weight",
    "convert_rope_checkpoint",
]

# ----------------------------------------------------------------------------- the frequencies theta_i


def rope_inv_freq(head_dim: int, base: float = 10000.0, device: torch.device | str | None = None) -> Tensor:
    """RoPE inverse frequencies theta_i = base^(-2i/head_dim), i = 0 .. head_dim/2 - 1: (head_dim // 2,) float32.

    Pair i of a head turns by angle ``m * theta_i`` at position m: theta_0 = 1 rad per token
    (wavelength 2 pi), the last pair almost ``base`` times slower. Computed in float32 exactly
    as Hugging Face does (so tables agree bit for bit): :func:`posenc_lib.frequencies.inverse_frequencies`,
    the same ladder as the sinusoidal encoding's.
    Scaled variants for longer contexts: :func:`posenc_lib.rotary.scaling.rope_frequencies`.
    """
    check_even_int("head_dim", head_dim)
    base = check_number("base", base, above=1)
    return inverse_frequencies(head_dim, base, device=device)


# ----------------------------------------------------------------------------- the angles m * theta_i, as cos and sin tables


def rope_cos_sin(
    positions: Tensor, inv_freq: Tensor, attention_factor: float = 1.0, dtype: torch.dtype = torch.float32
) -> tuple[Tensor, Tensor]:
    """Half-width cos and sin of the angles ``positions * inv_freq``.

    Args:
        positions: (batch, seq) or (seq,) integer positions (any integers, negative ones too).
        inv_freq: (rot_dim // 2,) frequencies, e.g. from :func:`rope_inv_freq`.
        attention_factor: multiplies cos and sin (YaRN's temperature; 1.0 otherwise).
        dtype: dtype of the result. The angles, cos and sin are computed in float32 for
            float32 and lower precisions, and cast at the very end; in float64 for float64
            (then pass float64 frequencies too: float32 ones are off by up to 6e-8 relative,
            1e-3 rad at position 1e5 for theta = 0.2).

    Returns:
        ``(cos, sin)``, each (batch, seq, rot_dim // 2) or (seq, rot_dim // 2), on positions' device.

    Precision. The float32 angle m * theta is off the exact one by at most 2**-24 * ``|m theta|``
    (2e-3 rad at m = 32768, theta = 1); casting cos and sin to bfloat16/float16 adds the unit
    roundoff u (2**-8 / 2**-11) and the rotation about 3u more. So for positions up to M the
    rotated pair is within (2**-23 * M * max(theta) + 4u) ``|pair|`` of the exact rotation:
    0.0195 ``|pair|`` in bfloat16 and 0.0059 ``|pair|`` in float16 at M = 32768 (tests check both).
    Angles computed in bfloat16 instead are off by up to 128 theta rad at m ~ 32768 (the
    spacing of bfloat16 numbers there is 256): the rotation becomes noise.
    """
    _check_positions(positions)
    check_float_tensor("inv_freq", inv_freq)
    if inv_freq.dim() != 1:
        raise ValueError(f"inv_freq must have shape (rot_dim // 2,), got {tuple(inv_freq.shape)}")
    check_float_dtype("dtype", dtype)
    compute = torch.float64 if dtype == torch.float64 else torch.float32
    angles = positions.to(compute).unsqueeze(-1) * inv_freq.to(device=positions.device, dtype=compute)
    cos, sin = angles.cos(), angles.sin()
    if attention_factor != 1.0:
        cos, sin = cos * attention_factor, sin * attention_factor
    return cos.to(dtype), sin.to(dtype)


# ----------------------------------------------------------------------------- the rotation, once per layout


def rotate_half(x: Tensor) -> Tensor:
    """(x1, x2) -> (-x2, x1) on the two halves of the last dim: the 90-degree turn of every half-layout pair."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def _multipliers(cos: Tensor, sin: Tensor, layout: str, dtype: torch.dtype) -> tuple[Tensor, ...]:
    """Half-width cos, sin (batch|1, seq, c) as the rotation of ``layout`` multiplies by them, over heads.

    In float32 (float64 for float64 x): for "half" the full-width ``[cos | cos]`` and ``[sin | sin]``,
    for "interleaved" the complex ``cos + j sin``; each (batch|1, 1, seq, ...). Computed once for q and k.
    """
    compute = torch.float64 if dtype == torch.float64 else torch.float32
    cos, sin = cos.to(compute).unsqueeze(1), sin.to(compute).unsqueeze(1)  # (batch|1, 1, seq, c): over heads
    if layout == "half":
        return torch.cat((cos, cos), dim=-1), torch.cat((sin, sin), dim=-1)
    return (torch.complex(cos, sin),)


def _rotate(x: Tensor, multipliers: tuple[Tensor, ...], layout: str) -> Tensor:
    """The rotation: x (batch, heads, seq, head_dim) turned by :func:`_multipliers`, a new tensor.

    Computed in float32 (float64 for float64 x) and cast back to x's dtype, so that bfloat16 and
    float16 are rounded once; the first rot_dim dims rotate, the rest pass through. Per layout::

        half          x * [cos | cos] + rotate_half(x) * [sin | sin]   (the sum as one multiply-add, addcmul)
        interleaved   (x[2i] + j x[2i+1]) * (cos_i + j sin_i)           (a complex multiply)
    """
    compute = torch.float64 if x.dtype == torch.float64 else torch.float32
    rot = multipliers[0].shape[-1] * (1 if layout == "half" else 2)
    whole = rot == x.shape[-1]
    pairs = (x if whole else x[..., :rot]).to(compute)
    if layout == "half":
        cos, sin = multipliers
        rotated = torch.addcmul(pairs * cos, rotate_half(pairs), sin)
    else:
        z = pairs.unflatten(-1, (rot // 2, 2))  # a complex view needs each pair's two floats adjacent, at an even offset
        if torch.compiler.is_compiling() or z.storage_offset() % 2 or any(step % 2 for step in z.stride()[:-1]):
            z = z.contiguous()
        rotated = torch.view_as_real(torch.view_as_complex(z) * multipliers[0]).flatten(-2)
    rotated = rotated.to(x.dtype)
    return rotated if whole else torch.cat((rotated, x[..., rot:]), dim=-1)


def apply_rope(
    x: Tensor, cos: Tensor, sin: Tensor, layout: Layout = "half", *, rotary_dim: int | None = None
) -> Tensor:
    """Rotate the pairs of x by the angles whose cos and sin are given: a new tensor.

    Args:
        x: (batch, heads, seq, head_dim) float tensor (any strides).
        cos, sin: (batch|1, seq, c) or (seq, c) half-width tables from :func:`rope_cos_sin`
            (one column per pair: c = rotary_dim // 2), broadcast over heads. Hugging Face's
            ``cos, sin`` are full width (each column twice): pass their first half, ``cos[..., :c]``.
        layout: "half" (pairs (x[i], x[i + c])) or "interleaved" (pairs (x[2i], x[2i+1])).
        rotary_dim: the rotated width 2c, for partial rotary (GPT-NeoX, Phi): the first
            ``rotary_dim`` dims rotate, the rest pass through unchanged. ``None``: the whole head,
            and tables of another width raise (a full-width table of a partial rotation has the
            shape of a half-width one, and would rotate the wrong dims without a word).

    Returns:
        The rotated tensor, x's shape and dtype.

    How: the half layout is ``x * [cos | cos] + rotate_half(x) * [sin | sin]``, the interleaved one
    a complex multiply, both in float32 (float64 for float64 x) and cast back to x's dtype; autograd
    differentiates it (x, and cos and sin when they learn, as mixed 2-D RoPE's do). For speed wrap
    the model (or the attention) in ``torch.compile``: see the module docstring.

    Accuracy. bfloat16/float16 x is rotated in float32 and rounded once, so the result is within
    about 1.5u ``|pair|`` of the exact rotation of the same x and tables (u the unit roundoff:
    2**-8 for bfloat16, 2**-11 for float16; ``|pair|`` the length of the pair an element belongs
    to); the textbook formula computed in x's dtype, which rounds every product and sum, is within
    about 3u ``|pair|``. The tests check both element by element. For long positions see
    :func:`rope_cos_sin`.
    """
    check_choice("layout", layout, LAYOUTS)
    _check_x("x", x)
    cos, sin = _table_3d(cos, sin, x, rotary_dim)
    return _rotate(x, _multipliers(cos, sin, layout, x.dtype), layout)


def apply_rope_qk(
    q: Tensor, k: Tensor, cos: Tensor, sin: Tensor, layout: Layout = "half", *, rotary_dim: int | None = None
) -> tuple[Tensor, Tensor]:
    """:func:`apply_rope` on queries and keys with the same tables: two new tensors.

    q: (batch, heads, seq, head_dim); k: (batch, kv_heads, seq, head_dim) (kv_heads may differ,
    as in grouped-query attention); cos, sin: (batch|1, seq, c) or (seq, c); rotary_dim: as for
    :func:`apply_rope` (2c when only part of the head rotates).
    """
    check_choice("layout", layout, LAYOUTS)
    _check_x("q", q)
    _check_x("k", k)
    if (q.shape[0], q.shape[2], q.shape[3]) != (k.shape[0], k.shape[2], k.shape[3]) or q.dtype != k.dtype:
        raise ValueError(
            f"q and k must agree in batch, seq, head_dim and dtype, got q {tuple(q.shape)} {q.dtype} "
            f"and k {tuple(k.shape)} {k.dtype}"
        )
    multipliers = _multipliers(*_table_3d(cos, sin, q, rotary_dim), layout, q.dtype)
    return _rotate(q, multipliers, layout), _rotate(k, multipliers, layout)


# ----------------------------------------------------------------------------- the position scheme


class RotaryPE(PositionScheme):
    """RoPE as a position scheme: rotates q and k after the head split, values untouched.

    Args:
        head_dim: width of one head (even): the layer's d_model // n_heads (``build_scheme("rope",
            d_model, n_heads)`` computes it; an attention layer of another width raises when built).
        base: rope_theta, the base of the frequencies; ``None``: ``scaling["rope_theta"]`` when the dict
            has it (a Hugging Face ``rope_parameters`` dict does), else 10000 (most models).
        layout: "half" or "interleaved" (see the module docstring).
        rotary_fraction: fraction of each head that is rotated (GPT-NeoX style partial rotary);
            ``None``: ``scaling["partial_rotary_factor"]``, else 1;
            the rotated width ``int(head_dim * rotary_fraction)`` must be even. With
            ``scaling={"rope_type": "proportional"}`` it is p-RoPE's p instead: the whole head
            keeps its frequencies and the slowest pairs beyond ``int(p * head_dim / 2)`` stay unrotated.
        scaling: a Hugging Face style rope-parameter dict for longer contexts, e.g.
            ``{"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}``
            (see :func:`posenc_lib.rotary.scaling.rope_frequencies`).

    The frequencies are a non-persistent buffer ``inv_freq`` (rotary_dim // 2,), float32, as in
    torchtune's ``RotaryPositionalEmbeddings`` and Hugging Face's rotary modules: ``.to(device)``
    moves it and it is never in the ``state_dict``. A cast to bfloat16 or float16 leaves it float32
    (on the new device; :attr:`~posenc_lib.scheme.PositionScheme.float32_buffers`): the angles are
    computed in float32 and cos and sin cast to the model's dtype, never the frequencies, so a bf16
    forward pass computes nothing on the host and copies nothing to the device. (Hugging Face's
    ``LlamaRotaryEmbedding.to(torch.bfloat16)`` rounds its buffer to bfloat16.) ``.double()``
    widens it, and a float64 model's unscaled RoPE computes base^(-2i/d) in float64 (a scaled
    variant widens its float32 frequencies), so a float64 model is exact to float64 rounding at any position.

    cos and sin are computed from the positions at every call (:meth:`cos_sin`): any positions
    (KV-cache offsets, left padding, negative ones), no cached table, nothing read back to the host
    but for "dynamic" scaling, whose frequencies depend on the largest position of the call. A model
    computes them once per forward pass (:meth:`rotation_tables`) and passes them to every layer's
    :meth:`rotate_qk`.

    "longrope" keeps two sets of frequencies (buffers ``inv_freq`` and ``inv_freq_long``) and picks
    one per call, as Hugging Face does: the long factors when the call's largest position + 1
    exceeds L0 (``original_max_position_embeddings``), the short ones otherwise, for the whole batch
    (a tensor choice, no host read). So a KV-cache decode step past L0 rotates its token with the
    long set while the cached keys were rotated with the short one (Hugging Face's Phi-3 behaves the
    same way).

    "dynamic" likewise computes its frequencies from the largest position of each call (default ones
    up to L0, a larger base beyond). A KV-cache decode step past L0 rotates its token with the
    frequencies of its own length while the cached keys keep those of the calls that cached them:
    cached and full decoding then differ past L0, where the static rope_types give the same
    logits both ways (``tests/lib/test_rope.py``). (Hugging Face's dynamic
    ``rope_update`` does the same within one sequence.) Negative positions only give a length <= L0:
    the default frequencies.
    """

    kind = "rotary"
    float32_buffers = ("inv_freq", "inv_freq_long")

    def __init__(
        self,
        head_dim: int,
        base: float | None = None,
        layout: Layout = "half",
        rotary_fraction: float | None = None,
        scaling: dict[str, Any] | None = None,
    ):
        super().__init__()
        check_choice("layout", layout, LAYOUTS)
        check_even_int("head_dim", head_dim)
        if scaling is not None and not isinstance(scaling, dict):
            raise TypeError(f"scaling must be a dict of rope parameters or None, got {type(scaling).__name__}")
        config = rope_scaling.standard_config(scaling or {})
        if base is not None:
            check_number("base", base, above=1)
        if rotary_fraction is not None and not (is_number(rotary_fraction) and 0 < rotary_fraction <= 1):
            raise ValueError(f"rotary_fraction must be a number in (0, 1], got {rotary_fraction!r}")
        for key, name, value, default in (("rope_theta", "base", base, 10000.0),
                                          ("partial_rotary_factor", "rotary_fraction", rotary_fraction, 1.0)):
            if value is None:  # left at its default: the dict's value, else the default
                config.setdefault(key, default)
            elif config.setdefault(key, value) != value:
                raise ValueError(f"{name}={value!r} contradicts scaling[{key!r}] = {config[key]!r}: give one of them, "
                                 f"or the same value to both")
        self.head_dim, self.layout, self.config = head_dim, layout, config
        self.dynamic = config.get("rope_type") == "dynamic"
        # LongRoPE: the long set, used for calls whose largest position + 1 exceeds this L0
        self.long_after = config["original_max_position_embeddings"] if config.get("rope_type") == "longrope" else None
        # validates the config; for "dynamic" this is the unscaled set (lengths <= L0), for "longrope" the short one
        inv_freq, self.attention_factor = self._init_frequencies()
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.register_buffer("inv_freq_long", None if self.long_after is None else self._init_frequencies(long=True)[0],
                             persistent=False)
        self.rotary_dim = 2 * inv_freq.numel()

    def extra_repr(self) -> str:
        return f"head_dim={self.head_dim}, rotary_dim={self.rotary_dim}, layout={self.layout!r}, config={self.config}"

    def _init_frequencies(self, long: bool = False) -> tuple[Tensor, float]:
        """The float32 frequencies of the config and its attention factor (LongRoPE's long set if ``long``)."""
        length = self.long_after + 1 if long else (
            self.config.get("original_max_position_embeddings") if self.dynamic else None)
        return rope_scaling.rope_frequencies(self.head_dim, self.config, seq_len=length)

    def frequencies(self, dtype: torch.dtype = torch.float32, long: bool = False) -> Tensor:
        """theta_i as the angles for ``dtype`` tables use them: (rotary_dim // 2,), float32 (float64 for float64).

        The buffer ``inv_freq`` (``inv_freq_long`` if ``long``, LongRoPE's long set), float32 even in a
        module cast to a lower precision (:attr:`float32_buffers`); for float64 unscaled RoPE,
        base^(-2i/d) computed in float64. On the buffer's device: nothing is computed on the host.
        """
        buffer = self.inv_freq_long if long else self.inv_freq
        if dtype == torch.float64 and self.config.get("rope_type", "default") == "default":
            return inverse_frequencies(self.rotary_dim, self.config["rope_theta"], torch.float64, buffer.device)
        return buffer.to(torch.float64 if dtype == torch.float64 else torch.float32)

    def cos_sin(self, positions: Tensor, dtype: torch.dtype = torch.float32) -> tuple[Tensor, Tensor]:
        """Half-width (cos, sin) at ``positions`` (batch, seq) or (seq,): each (..., rotary_dim // 2) in dtype.

        :func:`rope_cos_sin` of :meth:`frequencies`, times the attention factor (YaRN, LongRoPE).
        """
        _check_positions(positions)
        check_float_dtype("dtype", dtype)
        if self.dynamic:  # the frequencies of the call's length: the one read of the positions on the host
            length = max(int(positions.max()) + 1, 1)  # negative positions only: a length <= L0, the unscaled set
            inv_freq, factor = rope_scaling.rope_frequencies(self.head_dim, self.config, seq_len=length)
            return rope_cos_sin(positions, inv_freq, factor, dtype)
        inv_freq = self.frequencies(dtype)
        if self.long_after is not None:  # LongRoPE's choice for the whole call, as a tensor op (as Hugging Face makes it)
            inv_freq = torch.where(positions.max() + 1 > self.long_after, self.frequencies(dtype, long=True), inv_freq)
        return rope_cos_sin(positions, inv_freq, self.attention_factor, dtype)

    def check_layer(self, n_heads: int, head_dim: int) -> None:
        """Raise ValueError unless this RoPE's head_dim is the layer's (d_model // n_heads)."""
        if head_dim != self.head_dim:
            raise ValueError(
                f"{type(self).__name__}(head_dim={self.head_dim}) does not fit an attention layer of heads of width "
                f"d_model / n_heads = {head_dim * n_heads} / {n_heads} = {head_dim}: build it with head_dim={head_dim}, "
                f"or with build_scheme(name, d_model, n_heads), which computes it"
            )

    def rotation_tables(self, positions: Tensor, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
        """cos and sin at ``positions`` (batch|1, seq) for every layer of one forward pass: :meth:`cos_sin`.

        Rows that share their positions (the default ``arange`` expanded over the batch) share one
        (1, seq, rotary_dim // 2) table.
        """
        if positions.dim() == 2 and positions.shape[0] > 1 and positions.stride(0) == 0:
            positions = positions[:1]
        return self.cos_sin(positions, dtype)

    def rotate_qk(
        self, q: Tensor, k: Tensor, positions: Tensor, tables: tuple[Tensor, Tensor] | None = None
    ) -> tuple[Tensor, Tensor]:
        """Rotate q (batch, heads, seq, head_dim) and k (batch, kv_heads, seq, head_dim) by ``positions`` (batch|1, seq).

        ``tables``: the (cos, sin) of :meth:`rotation_tables` for these positions, computed once for all
        layers; None computes them here.
        """
        if q.shape[-1] != self.head_dim:
            raise ValueError(f"q.shape[-1] must be head_dim={self.head_dim}, got {tuple(q.shape)}")
        cos, sin = self.cos_sin(positions, q.dtype) if tables is None else tables
        return apply_rope_qk(q, k, cos, sin, self.layout, rotary_dim=self.rotary_dim)


# ----------------------------------------------------------------------------- 0.2's names, until 0.4


def _rotate_half_reference(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """0.2's ``rotate_half_reference(x, cos, sin)``: now :func:`apply_rope` with ``layout="half"``."""
    return apply_rope(x, cos, sin, "half", rotary_dim=2 * cos.shape[-1])  # 0.2 rotated the tables' width


def _apply_rope_complex(x: Tensor, positions: Tensor, inv_freq: Tensor) -> Tensor:
    """0.2's ``apply_rope_complex(x, positions, inv_freq)``: now :func:`apply_rope` with ``layout="interleaved"``
    on the tables of :func:`rope_cos_sin` (float64 ones for float64 x, as 0.2 computed)."""
    dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
    cos, sin = rope_cos_sin(positions, inv_freq, dtype=dtype)
    return apply_rope(x, cos, sin, "interleaved", rotary_dim=2 * cos.shape[-1])


#: the functions 0.3 removed (one rotation per layout, issue #52): old name -> (what it now calls, the new spelling)
_REMOVED_IN_0_3 = {
    "rotate_half_reference": (_rotate_half_reference, 'apply_rope(x, cos, sin, layout="half")'),
    "apply_rope_complex": (_apply_rope_complex,
                           'apply_rope(x, *rope_cos_sin(positions, inv_freq), layout="interleaved")'),
}


def __getattr__(name: str) -> Any:
    """0.2's textbook rotations, still importable for one release: a DeprecationWarning names the call to use."""
    if name in _REMOVED_IN_0_3:
        function, new = _REMOVED_IN_0_3[name]
        warnings.warn(f"posenc_lib.rotary.rope.{name} is deprecated since 0.3 (the library has one rotation per "
                      f"layout): use {new}; {name} will be removed in posenc_lib 0.4", DeprecationWarning, stacklevel=2)
        return function
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ----------------------------------------------------------------------------- layouts and checkpoints


def rope_layout_permutation(head_dim: int) -> Tensor:
    """perm = cat(arange(0, d, 2), arange(1, d, 2)): evens then odds.

    With it, ``half(x[..., perm]) == interleaved(x)[..., perm]``: the interleaved pair
    (x[2i], x[2i+1]) lands at (i, i + d/2), where the half layout looks for it.
    """
    check_even_int("head_dim", head_dim)
    return even_odd_permutation(head_dim)


def convert_qk_weight(weight: Tensor, n_heads: int, to: Layout = "half", rotary_dim: int | None = None) -> Tensor:
    """Reorder the rows of W_q or W_k (or their bias) within each head for the other RoPE layout.

    A model trained with one layout gives the same attention scores with the other layout
    once its query and key projections are converted (values and output projection stay).
    to="half" converts an interleaved checkpoint (Meta) for the half layout (Hugging Face);
    to="interleaved" is the inverse.

    Args:
        weight: (n_heads * head_dim, in_features) projection weight, or (n_heads * head_dim,) bias.
        n_heads: number of heads the rows are split into.
        to: the layout the result is for.
        rotary_dim: rotated width per head (default head_dim); rows after it are left in place.
    """
    check_choice("to", to, LAYOUTS)
    check_float_tensor("weight", weight)
    if weight.dim() not in (1, 2):
        raise ValueError(f"weight must be (out_features, in_features) or a (out_features,) bias, got {tuple(weight.shape)}")
    if not is_int(n_heads) or n_heads < 1 or weight.shape[0] % n_heads:
        raise ValueError(f"n_heads must be a positive int dividing out_features={weight.shape[0]}, got {n_heads!r}")
    head_dim = weight.shape[0] // n_heads
    rotary_dim = head_dim if rotary_dim is None else rotary_dim
    if not is_int(rotary_dim) or not 2 <= rotary_dim <= head_dim or rotary_dim % 2:
        raise ValueError(f"rotary_dim must be an even int in [2, head_dim={head_dim}], got {rotary_dim!r}")
    perm = rope_layout_permutation(rotary_dim)
    if to == "interleaved":
        perm = torch.argsort(perm)
    perm = torch.cat((perm, torch.arange(rotary_dim, head_dim))).to(weight.device)
    per_head = weight.unflatten(0, (n_heads, head_dim))
    return per_head[:, perm].flatten(0, 1)


# ----------------------------------------------------------------------------- argument checks of this module


#: the names of query and key projections convert_rope_checkpoint recognises (suffixes of state_dict keys)
_QUERY_ROWS = ("q_proj.weight", "q_proj.bias", "attention.wq.weight")  # Hugging Face; Meta's Llama reference
_KEY_ROWS = ("k_proj.weight", "k_proj.bias", "attention.wk.weight")
_FUSED_QKV = ("attn.qkv.weight", "attn.qkv.bias")  # TinyTransformer: q, k and v rows stacked in one projection


def convert_rope_checkpoint(state: dict[str, Tensor], head_dim: int, to: Layout,
                            rotary_dim: int | None = None, n_heads: int | None = None) -> dict[str, Tensor]:
    """A copy of a state_dict for the other RoPE layout: the same scores, the same outputs.

    The rows of every query and key projection (weight and bias) are reordered within each head by
    :func:`convert_qk_weight` (``to="interleaved"`` for a half-layout checkpoint such as Hugging Face's
    Llama, ``to="half"`` for an interleaved one such as Meta's). Three namings are recognised: separate
    ``q_proj`` / ``k_proj`` (Hugging Face; each has rows // head_dim heads, so grouped-query keys
    convert too), Meta's ``attention.wq`` / ``attention.wk``, and the fused ``attn.qkv`` of
    :class:`~posenc_lib.models.TinyTransformer` (q, k, v stacked: d_model query rows, then key and
    value rows in equal parts, fewer under grouped-query attention; q and k convert).
    Values, output projections and every other tensor are copied unchanged.

    The weights do not tell the head width: any ``head_dim`` dividing the rows reorders them, and a
    wrong one gives a model that computes something else. Give ``n_heads`` (the query heads) and the
    query rows are checked against ``n_heads * head_dim``.

    Args:
        state: a ``model.state_dict()``.
        head_dim: width of one head.
        to: the layout to convert to, "half" or "interleaved".
        rotary_dim: the rotated width of a head, for partial rotary (default: the whole head).
        n_heads: the number of query heads, to check ``head_dim`` against the query rows (None: unchecked).

    Raises ValueError when no key of ``state`` is a query or key projection of the three namings
    (the copy would be the checkpoint unchanged), or when ``head_dim`` cannot split a projection's rows.
    """
    head_dim = check_even_int("head_dim", head_dim)
    check_choice("to", to, LAYOUTS)
    if n_heads is not None:
        check_int("n_heads", n_heads)
    out, converted = {}, 0
    for name, tensor in state.items():
        if name.endswith(_QUERY_ROWS + _KEY_ROWS + _FUSED_QKV):
            parts = _fused_qkv_parts(state, name) if name.endswith(_FUSED_QKV) else [tensor]
            queries = parts[0] if name.endswith(_QUERY_ROWS + _FUSED_QKV) else None
            if n_heads is not None and queries is not None and queries.shape[0] != n_heads * head_dim:
                raise ValueError(f"head_dim * n_heads must be the query rows of {name} ({queries.shape[0]}), got "
                                 f"head_dim={head_dim} and n_heads={n_heads}")
            for i, rows in enumerate(parts[:2]):  # q and k; a fused projection's v rows stay
                if rows.shape[0] % head_dim:
                    raise ValueError(f"head_dim must divide the rows of {name} ({rows.shape[0]}), got head_dim={head_dim}")
                parts[i] = convert_qk_weight(rows, rows.shape[0] // head_dim, to=to, rotary_dim=rotary_dim)
            tensor = torch.cat(parts, dim=0)
            converted += 1
        out[name] = tensor.clone()
    if not converted:
        names = sorted(state)
        raise ValueError(
            f"state has no query or key projection convert_rope_checkpoint knows (keys ending in "
            f"{list(_QUERY_ROWS + _KEY_ROWS + _FUSED_QKV)}), got {len(names)} keys {names[:6]}"
            f"{' ...' if len(names) > 6 else ''}: rename them, or convert each q and k weight with convert_qk_weight"
        )
    return out


def _fused_qkv_parts(state: dict[str, Tensor], name: str) -> list[Tensor]:
    """The q, k and v rows of a fused ``qkv`` weight or bias: d_model query rows (the weight's in_features),
    then the key and value rows, equal in number (n_kv_heads * head_dim)."""
    tensor = state[name]
    d_model = state[name.removesuffix("bias") + "weight"].shape[1] if name.endswith("bias") else tensor.shape[1]
    kv = (tensor.shape[0] - d_model) // 2
    return list(tensor.split([d_model, kv, kv], dim=0))


def _check_positions(positions: Any) -> None:
    check_integer_tensor("positions", positions)
    if positions.dim() not in (1, 2):
        raise ValueError(f"positions must have shape (seq,) or (batch, seq), got {tuple(positions.shape)}")


def _check_x(name: str, x: Any) -> None:
    check_float_tensor(name, x)
    if x.dim() != 4:
        raise ValueError(f"{name} must have shape (batch, heads, seq, head_dim), got {tuple(x.shape)}")
    if x.shape[-1] % 2:
        raise ValueError(f"{name}.shape[-1] (head_dim) must be even, got {x.shape[-1]}")


def _table_3d(cos: Tensor, sin: Tensor, x: Tensor, rotary_dim: int | None) -> tuple[Tensor, Tensor]:
    """Check half-width cos/sin against x (batch, heads, seq, head_dim) and the rotated width (None: the whole
    head); return them as (batch|1, seq, rotary_dim // 2)."""
    check_float_tensor("cos", cos)
    check_float_tensor("sin", sin)
    if cos.shape != sin.shape:
        raise ValueError(f"cos and sin must have the same shape, got {tuple(cos.shape)} and {tuple(sin.shape)}")
    if cos.dim() == 2:
        cos, sin = cos.unsqueeze(0), sin.unsqueeze(0)
    batch, heads, seq, head_dim = x.shape
    if rotary_dim is not None:
        check_even_int("rotary_dim", rotary_dim)
        if rotary_dim > head_dim:
            raise ValueError(f"rotary_dim must be <= head_dim={head_dim} (x.shape[-1]), got {rotary_dim}")
    width = (head_dim if rotary_dim is None else rotary_dim) // 2
    if cos.dim() != 3 or cos.shape[0] not in (1, batch) or cos.shape[1] != seq:
        hint = (f"; x must be (batch, heads, seq, head_dim): for a (batch, seq, heads, head_dim) one (flash-attn, "
                f"Hugging Face before the transpose) pass x.transpose(1, 2)") if cos.dim() == 3 and cos.shape[1] == heads else ""
        raise ValueError(
            f"cos and sin must have shape (batch|1, seq, rotary_dim // 2) = ({batch}|1, {seq}, {width}) "
            f"for x of shape {tuple(x.shape)}, got {tuple(cos.shape)}{hint}"
        )
    if cos.shape[2] != width:
        if rotary_dim is None and cos.shape[2] < width:
            why = (f"they turn {2 * cos.shape[2]} of the head's {head_dim} dims: pass rotary_dim={2 * cos.shape[2]} to "
                   f"rotate only those (partial rotary), or, for Hugging Face's full-width tables of a "
                   f"{cos.shape[2]}-dim rotation, cos[..., :{cos.shape[2] // 2}]")
        elif cos.shape[2] == 2 * width:
            why = f"full-width tables (Hugging Face's, each column twice)? pass cos[..., :{width}] and sin[..., :{width}]"
        else:
            why = f"one column per rotated pair: rotary_dim // 2 = {width}"
        raise ValueError(
            f"cos and sin must have rotary_dim // 2 = {width} columns for x of head_dim {head_dim} and rotary_dim="
            f"{rotary_dim}, got {cos.shape[2]} ({why})"
        )
    return cos, sin

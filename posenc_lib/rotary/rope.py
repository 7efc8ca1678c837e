"""Rotary position embedding (RoPE, Su et al. "RoFormer"): turn query/key pairs by an angle that grows with position.

Split a head of width d into d/2 pairs. At position m, pair i is rotated by the angle
``m * theta_i`` with ``theta_i = base^(-2i/d)``. Because a rotation by m followed by the
inverse of a rotation by n is a rotation by m - n, the score <R_m q, R_n k> depends on the
positions only through m - n: relative position, obtained with absolute angles.

Two layouts say which dims form a pair, and a checkpoint only works in its own one:

* ``"half"`` (Hugging Face ``rotate_half``): pair i is (x[i], x[i + d/2]).
* ``"interleaved"`` (Meta's LLaMA reference, complex numbers): pair i is (x[2i], x[2i+1]).

:func:`rope_layout_permutation` and :func:`convert_qk_weight` translate between them.

Tables are *half width*: ``cos, sin`` have shape (batch|1, seq, rot_dim // 2), one column
per pair, and broadcast over heads. The angles and their cos/sin are computed in float32
and cast to the model dtype last: in bfloat16 a position like 3000 is not even representable
(spacing 16), so bf16 angles are wrong by whole radians. Float64 tables (a model moved to
float64) are computed in float64 throughout, frequencies included.

The module follows the idea: the frequencies theta_i (:func:`rope_inv_freq`), the angles and
their cos/sin (:func:`rope_cos_sin`), the rotation formula (:func:`rotate_half_reference`,
:func:`apply_rope_complex`), the rotation as called by models (:func:`apply_rope`,
:func:`apply_rope_qk`), the position scheme (:class:`RotaryPE`), then the layouts and checkpoint
conversion. Longer contexts (linear, NTK, YaRN, Llama 3 scaling, LongRoPE) and truncated frequencies
(proportional RoPE) change theta_i: :mod:`.scaling`.

Speed. The rotation is the formula above, in plain public PyTorch ops: a few multiply-adds per
element, so its cost is memory traffic, and eager PyTorch makes one pass over memory per op.
``torch.compile`` fuses those ops into one loop (and with the attention's other ops around
them). So wrap the model, or the attention, in ``torch.compile``::

    model = TinyTransformer(vocab, vocab, d_model=64, n_heads=4, scheme=RotaryPE(head_dim=16))
    model = torch.compile(model)    # the first call compiles (seconds), later calls are fused
    logits = model(tokens)

Measured speeds beside Meta's and Hugging Face's formulas: ``docs/rope-speed.md`` (``make bench``).

Shapes:
    x, q, k         (batch, heads, seq, head_dim)
    positions       (batch, seq) or (seq,) integer
    inv_freq        (rot_dim // 2,) float32
    cos, sin        (batch|1, seq, rot_dim // 2) or (seq, rot_dim // 2); rot_dim <= head_dim
"""

from __future__ import annotations

from typing import Any, Literal

import torch
from torch import Tensor

from posenc_lib.checks import (
    check_choice,
    check_even_int,
    check_float_dtype,
    check_float_tensor,
    check_integer_tensor,
    check_number,
    is_int,
)
from posenc_lib.frequencies import even_odd_permutation, inverse_frequencies
from posenc_lib.rotary import scaling as rope_scaling
from posenc_lib.scheme import PositionScheme

__all__ = [
    "LAYOUTS",
    "rope_inv_freq",
    "rope_cos_sin",
    "rotate_half",
    "rotate_half_reference",
    "apply_rope_complex",
    "apply_rope",
    "apply_rope_qk",
    "RotaryPE",
    "rope_layout_permutation",
    "convert_qk_weight",
    "convert_rope_checkpoint",
]

Layout = Literal["half", "interleaved"]
LAYOUTS: tuple[str, ...] = ("half", "interleaved")


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


# ----------------------------------------------------------------------------- the rotation formula


def rotate_half(x: Tensor) -> Tensor:
    """(x1, x2) -> (-x2, x1) on the two halves of the last dim: the 90-degree turn of every half-layout pair."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rotate_half_reference(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """The textbook half-layout formula ``x * cat(cos, cos) + rotate_half(x) * cat(sin, sin)``.

    Readable and slow (it materialises full-width tables and four temporaries); the fast
    :func:`apply_rope` is tested against it. x: (batch, heads, seq, head_dim); cos, sin:
    (batch|1, seq, c) half width. Only the first 2c dims are rotated, the rest pass through.
    """
    _check_x("x", x)
    cos, sin = _table_3d(cos, sin, x)
    rot = 2 * cos.shape[-1]
    cos = torch.cat((cos, cos), dim=-1).unsqueeze(1)  # (batch|1, 1, seq, rot): broadcast over heads
    sin = torch.cat((sin, sin), dim=-1).unsqueeze(1)
    rotated = x[..., :rot] * cos + rotate_half(x[..., :rot]) * sin
    return torch.cat((rotated, x[..., rot:]), dim=-1).to(x.dtype)


def apply_rope_complex(x: Tensor, positions: Tensor, inv_freq: Tensor) -> Tensor:
    """Interleaved-layout RoPE with complex numbers, as in Meta's LLaMA reference.

    Pairs (x[2i], x[2i+1]) are read as complex numbers z_i and multiplied by
    ``exp(i * m * theta_i)`` (``torch.polar``); computed in float32 (float64 for float64 x) and
    cast back to x's dtype.
    x: (batch, heads, seq, head_dim); positions: (batch, seq) or (seq,); inv_freq: (c,) with
    2c <= head_dim (dims from 2c on pass through).
    """
    _check_x("x", x)
    _check_positions(positions)
    c = inv_freq.shape[-1]
    if not 1 <= c <= x.shape[-1] // 2:
        raise ValueError(f"inv_freq must have 1..head_dim // 2 = {x.shape[-1] // 2} entries, got {c}")
    compute = torch.float64 if x.dtype == torch.float64 else torch.float32
    angles = positions.to(compute).unsqueeze(-1) * inv_freq.to(device=x.device, dtype=compute)
    turn = torch.polar(torch.ones_like(angles), angles)  # (batch|seq..., c) unit complex numbers
    if turn.dim() == 3:
        turn = turn.unsqueeze(1)  # broadcast over heads
    z = torch.view_as_complex(x[..., : 2 * c].to(compute).unflatten(-1, (c, 2)).contiguous())
    rotated = torch.view_as_real(z * turn).flatten(-2)
    return torch.cat((rotated, x[..., 2 * c :].to(compute)), dim=-1).to(x.dtype)


def _rotate(x: Tensor, cos: Tensor, sin: Tensor, layout: str) -> Tensor:
    """The rotation itself: x (batch, heads, seq, head_dim) turned by half-width tables (batch|1, seq, c).

    Computed in float32 (float64 for float64 x) and cast back to x's dtype, so bfloat16/float16
    are rounded once. Half layout: ``x * cos + rotate_half(x) * sin`` with full-width tables;
    interleaved: the pairs as complex numbers times ``cos + i sin``. Dims from 2c on pass through.
    """
    c = cos.shape[-1]
    compute = torch.float64 if x.dtype == torch.float64 else torch.float32
    cos, sin = cos.to(compute).unsqueeze(1), sin.to(compute).unsqueeze(1)  # (batch|1, 1, seq, c): over heads
    pairs = x[..., : 2 * c].to(compute)
    if layout == "half":
        rotated = torch.addcmul(pairs * torch.cat((cos, cos), dim=-1), rotate_half(pairs), torch.cat((sin, sin), dim=-1))
    else:
        z = _as_complex(pairs.unflatten(-1, (c, 2)))
        rotated = torch.view_as_real(z * torch.complex(cos, sin)).flatten(-2)
    rotated = rotated.to(x.dtype)
    return rotated if 2 * c == x.shape[-1] else torch.cat((rotated, x[..., 2 * c :]), dim=-1)


def _as_complex(pairs: Tensor) -> Tensor:
    """pairs (..., c, 2) as c complex numbers: a view of their memory where it allows one, else of a copy.

    A complex number is two adjacent floats at an even offset. (Under torch.compile, always a copy:
    the compiler plans the memory itself.)
    """
    aligned = not torch.compiler.is_compiling() and pairs.storage_offset() % 2 == 0 and all(
        step % 2 == 0 for step in pairs.stride()[:-1])
    return torch.view_as_complex(pairs if aligned else pairs.contiguous())


class _Rotation(torch.autograd.Function):
    """:func:`_rotate` as one autograd node: a rotation's transpose is the rotation by -angle.

    So the backward pass is :func:`_rotate` of the gradient with ``-sin``, one more pass, instead
    of autograd through the formula's ops. For tables with no gradient.
    """

    @staticmethod
    def forward(ctx: Any, x: Tensor, cos: Tensor, sin: Tensor, layout: str) -> Tensor:
        ctx.save_for_backward(cos, sin)
        ctx.layout = layout
        return _rotate(x, cos, sin, layout)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None, None, None]:
        cos, sin = ctx.saved_tensors
        return _rotate(grad, cos, -sin, ctx.layout), None, None, None


def _rotate_formula(x: Tensor, cos: Tensor, sin: Tensor, layout: str) -> Tensor:
    """The same rotation with real pairs in x's dtype, differentiated by autograd: for tables that learn.

    (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin), pairs (x[i], x[i + c]) or (x[2i], x[2i+1]).
    Used when cos or sin require a gradient (learned frequencies, e.g. mixed 2-D RoPE).
    """
    c = cos.shape[-1]
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    x1, x2 = (x[..., :c], x[..., c : 2 * c]) if layout == "half" else (x[..., 0 : 2 * c : 2], x[..., 1 : 2 * c : 2])
    r1, r2 = x1 * cos - x2 * sin, x2 * cos + x1 * sin
    rotated = torch.cat((r1, r2), dim=-1) if layout == "half" else torch.stack((r1, r2), dim=-1).flatten(-2)
    return torch.cat((rotated, x[..., 2 * c :]), dim=-1).to(x.dtype)


# ----------------------------------------------------------------------------- the rotation as models call it


def apply_rope(x: Tensor, cos: Tensor, sin: Tensor, layout: Layout = "half") -> Tensor:
    """Rotate the pairs of x by the angles whose cos and sin are given: a new tensor.

    Args:
        x: (batch, heads, seq, head_dim) float tensor (any strides).
        cos, sin: (batch|1, seq, c) or (seq, c) half-width tables from :func:`rope_cos_sin`,
            broadcast over heads. With 2c < head_dim only the first 2c dims are rotated
            (partial rotary, as GPT-NeoX); the rest pass through unchanged.
        layout: "half" (pairs (x[i], x[i + c])) or "interleaved" (pairs (x[2i], x[2i+1])).

    Returns:
        The rotated tensor, x's shape and dtype.

    How: the half layout is ``x * cos + rotate_half(x) * sin`` (full-width tables), the interleaved
    one a complex multiply, both in float32 (float64 for float64 x) and cast back to x's dtype.
    The backward pass turns the gradient back (rotation by -angle); tables that require a
    gradient (learned frequencies) go through the real-pair formula in x's dtype and autograd.
    For speed wrap the model (or the attention) in ``torch.compile``: see the module docstring.

    Accuracy. Against the textbook formulas (:func:`rotate_half_reference`,
    :func:`apply_rope_complex`) the result differs only by rounding: at most 1e-6 in float32
    for standard-normal x. bfloat16/float16 x is rotated here in float32 and rounded once, so
    the result is within about 1.5u ``|pair|`` of the exact rotation of the same x and tables
    (u the unit roundoff: 2**-8 for bfloat16, 2**-11 for float16; ``|pair|`` the length of the
    pair an element belongs to); the textbook formula, which rounds every product and sum to
    x's dtype, is within about 3u ``|pair|``. The tests check ``|ours - textbook|`` <= 6u ``|pair|``
    (0.023 ``|pair|`` in bfloat16, 0.0029 ``|pair|`` in float16) element by element. For long
    positions see :func:`rope_cos_sin`.
    """
    check_choice("layout", layout, LAYOUTS)
    _check_x("x", x)
    cos, sin = _table_3d(cos, sin, x)
    if torch.is_grad_enabled() and (cos.requires_grad or sin.requires_grad):
        return _rotate_formula(x, cos, sin, layout)
    return _Rotation.apply(x, cos, sin, layout)


def apply_rope_qk(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor, layout: Layout = "half") -> tuple[Tensor, Tensor]:
    """:func:`apply_rope` on queries and keys with the same tables: two new tensors.

    q: (batch, heads, seq, head_dim); k: (batch, kv_heads, seq, head_dim) (kv_heads may differ,
    as in grouped-query attention); cos, sin: (batch|1, seq, c) or (seq, c).
    """
    _check_x("q", q)
    _check_x("k", k)
    if (q.shape[0], q.shape[2], q.shape[3]) != (k.shape[0], k.shape[2], k.shape[3]) or q.dtype != k.dtype:
        raise ValueError(
            f"q and k must agree in batch, seq, head_dim and dtype, got q {tuple(q.shape)} {q.dtype} "
            f"and k {tuple(k.shape)} {k.dtype}"
        )
    return apply_rope(q, cos, sin, layout), apply_rope(k, cos, sin, layout)


# ----------------------------------------------------------------------------- the position scheme


class RotaryPE(PositionScheme):
    """RoPE as a position scheme: rotates q and k after the head split, values untouched.

    Args:
        head_dim: width of one head (even).
        base: rope_theta, the base of the frequencies (10000 in most models).
        layout: "half" or "interleaved" (see the module docstring).
        rotary_fraction: fraction of each head that is rotated (GPT-NeoX style partial rotary);
            the rotated width ``int(head_dim * rotary_fraction)`` must be even. With
            ``scaling={"rope_type": "proportional"}`` it is p-RoPE's p instead: the whole head
            keeps its frequencies and the slowest pairs beyond ``int(p * head_dim / 2)`` stay unrotated.
        scaling: a Hugging Face style rope-parameter dict for longer contexts, e.g.
            ``{"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}``
            (see :func:`posenc_lib.rotary.scaling.rope_frequencies`).

    Half-width cos/sin tables are cached per (device, dtype) in a plain dict - not buffers,
    so never in ``state_dict`` and free to change with ``base`` - and grown on demand to the
    next power of two above the largest position seen. Positions may be anything (KV-cache
    offsets, left padding, negative): negative ones are computed directly. "dynamic" scaling
    recomputes the frequencies from the largest position of each call (no cache), and under
    ``torch.compile`` the tables are computed inside the graph instead of looked up. Float32
    and lower precisions share the float32 angles (cast last); float64 q and k get tables
    computed in float64, frequencies included (unscaled RoPE), so a float64 model is exact to
    float64 rounding at any position.

    "longrope" keeps two sets of frequencies and picks one per call, as Hugging Face does: the
    long factors when the call's largest position + 1 exceeds L0
    (``original_max_position_embeddings``), the short ones otherwise, for the whole batch. So a
    KV-cache decode step past L0 rotates its token with the long set while the cached keys
    were rotated with the short one (Hugging Face's Phi-3 behaves the same way).
    """

    kind = "rotary"

    def __init__(
        self,
        head_dim: int,
        base: float = 10000.0,
        layout: Layout = "half",
        rotary_fraction: float = 1.0,
        scaling: dict[str, Any] | None = None,
    ):
        super().__init__()
        check_choice("layout", layout, LAYOUTS)
        check_even_int("head_dim", head_dim)
        if scaling is not None and not isinstance(scaling, dict):
            raise TypeError(f"scaling must be a dict of rope parameters or None, got {type(scaling).__name__}")
        config = dict(scaling or {})
        for key, value in (("rope_theta", base), ("partial_rotary_factor", rotary_fraction)):
            if config.setdefault(key, value) != value:
                raise ValueError(f"scaling[{key!r}] = {config[key]!r} contradicts the argument given as {value!r}")
        self.head_dim, self.layout, self.config = head_dim, layout, config
        self.dynamic = config.get("rope_type") == "dynamic"
        # validates the config; for "dynamic" this is the unscaled set (lengths <= L0), for "longrope" the short one
        length = config.get("original_max_position_embeddings") if self.dynamic else None
        inv_freq, self.attention_factor = rope_scaling.rope_frequencies(head_dim, config, seq_len=length)
        self.inv_freq = inv_freq  # plain attribute: a table of constants, not model state
        self.rotary_dim = 2 * inv_freq.numel()
        # LongRoPE: the long set, used for calls whose largest position + 1 exceeds this L0
        self.long_after = config["original_max_position_embeddings"] if config.get("rope_type") == "longrope" else None
        self.inv_freq_long = (
            None if self.long_after is None
            else rope_scaling.rope_frequencies(head_dim, config, seq_len=self.long_after + 1)[0]
        )
        # float64 frequencies for a model moved to float64 (default RoPE: base^(-2i/rotary_dim)
        # computed in float64; a scaled variant keeps its float32 frequencies, angles in float64)
        plain = config.get("rope_type", "default") == "default"
        self.inv_freq64 = (inverse_frequencies(self.rotary_dim, config["rope_theta"], dtype=torch.float64) if plain
                           else inv_freq.double())
        self._tables: dict[tuple[torch.device, torch.dtype, bool], tuple[Tensor, Tensor]] = {}

    def extra_repr(self) -> str:
        return f"head_dim={self.head_dim}, rotary_dim={self.rotary_dim}, layout={self.layout!r}, config={self.config}"

    def _table(self, length: int, device: torch.device, dtype: torch.dtype, long: bool = False) -> tuple[Tensor, Tensor]:
        """Cached (cos, sin) for positions 0 .. >= length-1: each (n, rotary_dim // 2) in dtype on device.

        ``long``: LongRoPE's long set of frequencies (a table of its own).
        """
        cached = self._tables.get((device, dtype, long))
        if cached is not None and cached[0].shape[0] >= length:
            return cached
        if dtype in (torch.float32, torch.float64):
            n = max(256, 1 << (length - 1).bit_length())
            positions = torch.arange(n, device=device)
            table = rope_cos_sin(positions, self._frequencies(dtype, long), self.attention_factor, dtype)
        else:
            table = tuple(t.to(dtype) for t in self._table(length, device, torch.float32, long))
        self._tables[(device, dtype, long)] = table
        return table

    def _frequencies(self, dtype: torch.dtype, long: bool = False) -> Tensor:
        """The frequencies the angles are computed with: float64 ones for float64 tables, else float32.

        ``long``: LongRoPE's long set instead of the short one.
        """
        if long:
            return self.inv_freq_long.double() if dtype == torch.float64 else self.inv_freq_long
        return self.inv_freq64 if dtype == torch.float64 else self.inv_freq

    def cos_sin(self, positions: Tensor, dtype: torch.dtype = torch.float32) -> tuple[Tensor, Tensor]:
        """Half-width (cos, sin) at ``positions`` (batch, seq): each (batch, seq, rotary_dim // 2) in dtype."""
        _check_positions(positions)
        if self.dynamic:
            seq_len = int(positions.max()) + 1
            inv_freq, factor = rope_scaling.rope_frequencies(self.head_dim, self.config, seq_len=seq_len)
            return rope_cos_sin(positions, inv_freq, factor, dtype)
        if torch.compiler.is_compiling():
            inv_freq = self._frequencies(dtype).to(positions.device)
            if self.long_after is not None:  # LongRoPE's choice as a tensor op, traceable (as Hugging Face makes it)
                long = self._frequencies(dtype, long=True).to(positions.device)
                inv_freq = torch.where(positions.max() + 1 > self.long_after, long, inv_freq)
            return rope_cos_sin(positions, inv_freq, self.attention_factor, dtype)
        low, high = torch.aminmax(positions)
        long = self.long_after is not None and int(high) + 1 > self.long_after
        if int(low) < 0:
            return rope_cos_sin(positions, self._frequencies(dtype, long), self.attention_factor, dtype)
        cos, sin = self._table(int(high) + 1, positions.device, dtype, long)
        return cos[positions], sin[positions]

    def rotate_qk(self, q: Tensor, k: Tensor, positions: Tensor) -> tuple[Tensor, Tensor]:
        """Rotate q (batch, heads, seq, head_dim) and k (batch, kv_heads, seq, head_dim) by ``positions`` (batch|1, seq)."""
        if q.shape[-1] != self.head_dim:
            raise ValueError(f"q.shape[-1] must be head_dim={self.head_dim}, got {tuple(q.shape)}")
        cos, sin = self.cos_sin(positions, q.dtype)
        return apply_rope_qk(q, k, cos, sin, self.layout)


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


_QK_ROWS = ("q_proj.weight", "q_proj.bias", "k_proj.weight", "k_proj.bias")  # Hugging Face: q and k apart
_FUSED_QKV = ("attn.qkv.weight", "attn.qkv.bias")  # TinyTransformer: q, k and v rows stacked in one projection


def convert_rope_checkpoint(state: dict[str, Tensor], head_dim: int, to: Layout,
                            rotary_dim: int | None = None) -> dict[str, Tensor]:
    """A copy of a state_dict for the other RoPE layout: the same scores, the same outputs.

    The rows of every query and key projection (weight and bias) are reordered within each head by
    :func:`convert_qk_weight` (``to="interleaved"`` for a half-layout checkpoint such as Llama's,
    ``to="half"`` back). Two namings are recognised: separate ``q_proj`` / ``k_proj`` (Hugging Face;
    each has rows // head_dim heads, so grouped-query keys convert too), and the fused ``attn.qkv``
    of :class:`~posenc_lib.models.TinyTransformer` (q, k, v stacked: the first two thirds convert).
    Values, output projections and every other tensor are copied unchanged.

    Args:
        state: a ``model.state_dict()``.
        head_dim: width of one head.
        to: the layout to convert to, "half" or "interleaved".
        rotary_dim: the rotated width of a head, for partial rotary (default: the whole head).
    """
    head_dim = check_even_int("head_dim", head_dim)
    out = {}
    for name, tensor in state.items():
        if name.endswith(_QK_ROWS) or name.endswith(_FUSED_QKV):
            parts = list(tensor.chunk(3, dim=0)) if name.endswith(_FUSED_QKV) else [tensor]
            for i, rows in enumerate(parts[:2]):  # q and k; a fused projection's v rows stay
                if rows.shape[0] % head_dim:
                    raise ValueError(f"head_dim must divide the rows of {name} ({rows.shape[0]}), got head_dim={head_dim}")
                parts[i] = convert_qk_weight(rows, rows.shape[0] // head_dim, to=to, rotary_dim=rotary_dim)
            tensor = torch.cat(parts, dim=0)
        out[name] = tensor.clone()
    return out


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


def _table_3d(cos: Tensor, sin: Tensor, x: Tensor) -> tuple[Tensor, Tensor]:
    """Check half-width cos/sin against x (batch, heads, seq, head_dim); return them as (batch|1, seq, c)."""
    check_float_tensor("cos", cos)
    check_float_tensor("sin", sin)
    if cos.shape != sin.shape:
        raise ValueError(f"cos and sin must have the same shape, got {tuple(cos.shape)} and {tuple(sin.shape)}")
    if cos.dim() == 2:
        cos, sin = cos.unsqueeze(0), sin.unsqueeze(0)
    batch, _, seq, head_dim = x.shape
    if cos.dim() != 3 or cos.shape[0] not in (1, batch) or cos.shape[1] != seq or not 1 <= cos.shape[2] <= head_dim // 2:
        raise ValueError(
            f"cos and sin must have shape (batch|1, seq, rot_dim // 2) = ({batch}|1, {seq}, 1..{head_dim // 2}) "
            f"for x of shape {tuple(x.shape)}, got {tuple(cos.shape)}"
        )
    return cos, sin

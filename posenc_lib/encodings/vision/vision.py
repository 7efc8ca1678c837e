"""Position in vision Transformers: 2-D tables, 2-D RoPE, and resizing a learned grid.

An image of ``grid_h x grid_w`` patches becomes a sequence of tokens in row-major order
(patch (r, c) is token ``r * grid_w + c``), optionally preceded by ``n_prefix`` class-like
tokens. Positions index into that sequence: position ``p < n_prefix`` is a prefix token,
position ``n_prefix + r * grid_w + c`` is patch (r, c). A 1-D encoding sees patch
(r, grid_w - 1) and (r + 1, 0) as neighbours; the encodings here know rows and columns.

Tables (kind "embedding"), each also a plain function:

    sincos_2d_table / SinCos2DPE   fixed: half the channels encode the row, half the column
    learnable_2d_table / Learnable2DPE   a learned row table and column table, added or concatenated

Rotations of q and k (kind "rotary", Heo et al. 2024):

    apply_axial_rope_2d / AxialRoPE2D   half the rotary pairs turn with the column, half with the row
    apply_mixed_rope_2d / MixedRoPE2D   every pair turns with a learned per-head mix of both axes

Both follow the official code of Heo et al. (naver-ai/rope-vit, ``models/vit_rope.py``): x (the
column) comes first, in the axial tables (first pairs turned by the column) and in the mixed
frequencies (``freqs[0]`` multiplies the column). Their default pair layout is this library's
"half" one; ``layout="interleaved"`` rotates exactly as the reference code does, so a RoPE-ViT
checkpoint loads as it is (or convert its q/k weights with :func:`posenc_lib.encodings.rotary.rope.convert_qk_weight`).

And :func:`resample_grid` to carry a learned (n_prefix + H*W, d) table to another grid size,
and :class:`PatchEmbed`, which turns images into that token sequence.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ...attention import NoPosition, PositionScheme, check_int, check_integer_tensor
from ..absolute.learnable import LearnablePE
from ..score_bias.relative import _check_position_range
from ..rotary.rope import Layout, _check_layout, apply_rope, rope_cos_sin, rope_inv_freq
from ..absolute.sinusoidal import SinusoidalPE

__all__ = [
    "grid_coordinates",
    "sincos_2d_table",
    "learnable_2d_table",
    "SinCos2DPE",
    "Learnable2DPE",
    "apply_axial_rope_2d",
    "apply_mixed_rope_2d",
    "mixed_rope_init",
    "AxialRoPE2D",
    "MixedRoPE2D",
    "resample_grid",
    "PatchEmbed",
    "VIT_SCHEMES",
    "vit_scheme",
    "regrid_scheme",
    "grid_similarity",
]

Mode = Literal["add", "concat"]


def _check_grid(grid_h: int, grid_w: int, n_prefix: int) -> None:
    check_int("grid_h", grid_h)
    check_int("grid_w", grid_w)
    check_int("n_prefix", n_prefix, minimum=0)


def grid_coordinates(positions: Tensor, grid_h: int, grid_w: int, n_prefix: int = 0) -> tuple[Tensor, Tensor]:
    """Row and column of each token: two int64 tensors shaped like ``positions``.

    positions: integer (batch, seq) in ``[0, n_prefix + grid_h*grid_w)``. Prefix tokens get
    row = column = 0, which a 2-D RoPE turns into "no rotation" (as Heo et al. treat the class token).
    """
    check_integer_tensor("positions", positions)
    _check_grid(grid_h, grid_w, n_prefix)
    what = f"{n_prefix} prefix tokens + a {grid_h}x{grid_w} grid"
    _check_position_range("positions", positions, n_prefix + grid_h * grid_w, what)
    patch = positions.long() - n_prefix
    is_patch = patch >= 0
    # torch.where rather than patch.clamp_min(0): in torch 2.13, inductor fails on
    # clamp_min followed by // of an in-graph arange ("vr must not be None for symbol q2")
    return torch.where(is_patch, patch // grid_w, 0), torch.where(is_patch, patch % grid_w, 0)


# --------------------------------------------------------------------------- tables


def sincos_2d_table(
    grid_h: int, grid_w: int, d_model: int, base: float = 10000.0, n_prefix: int = 0, dtype: torch.dtype = torch.float32
) -> Tensor:
    """Fixed 2-D sin-cos encodings (MAE-style): shape (n_prefix + grid_h*grid_w, d_model).

    With ``w_k = base^(-k/(d_model/4))``, k = 0 .. d_model/4 - 1, patch (r, c) gets

        [ sin(r w) | cos(r w) | sin(c w) | cos(c w) ]      (four blocks of d_model/4)

    and prefix tokens get zero rows. Angles are computed in float64, then cast to ``dtype``.

    Channel order: this is the row-first order of Hugging Face's
    ``build_2d_sinusoidal_position_embedding``. The original MAE code (``get_2d_sincos_pos_embed``)
    builds its grid with ``np.meshgrid(grid_w, grid_h)``, so its *first* half encodes the
    column: MAE's table is ours with the two halves swapped,
    ``mae = ours[:, cat(arange(d/2, d), arange(0, d/2))]`` (Hugging Face's ``ViTMAEEmbeddings``
    swaps them too, to load MAE checkpoints). The two orders carry the same information.
    """
    _check_grid(grid_h, grid_w, n_prefix)
    check_int("d_model", d_model, minimum=4)
    if d_model % 4:
        raise ValueError(f"d_model must be divisible by 4 (sin and cos for two axes), got {d_model}")
    if isinstance(base, bool) or not isinstance(base, (int, float)) or not math.isfinite(base) or base <= 1:
        raise ValueError(f"base must be a finite number > 1, got {base!r}")
    k = torch.arange(d_model // 4, dtype=torch.float64)
    omega = torch.exp(-k / (d_model // 4) * math.log(base))
    rows = torch.arange(grid_h, dtype=torch.float64).repeat_interleave(grid_w)[:, None] * omega
    cols = torch.arange(grid_w, dtype=torch.float64).repeat(grid_h)[:, None] * omega
    grid = torch.cat([rows.sin(), rows.cos(), cols.sin(), cols.cos()], dim=1)
    return torch.cat([torch.zeros(n_prefix, d_model, dtype=torch.float64), grid]).to(dtype)


def learnable_2d_table(row: Tensor, col: Tensor, prefix: Tensor, mode: Mode = "add") -> Tensor:
    """Assemble a 2-D table from a row table and a column table: (n_prefix + H*W, d_model).

    row: (H, dim), col: (W, dim), prefix: (n_prefix, d_model) rows for the prefix tokens.
    mode "add": patch (r, c) gets ``row[r] + col[c]`` (dim = d_model);
    mode "concat": ``[row[r] | col[c]]`` (dim = d_model / 2).
    """
    if mode not in ("add", "concat"):
        raise ValueError(f"mode must be 'add' or 'concat', got {mode!r}")
    h, w = row.shape[0], col.shape[0]
    if row.dim() != 2 or col.dim() != 2 or row.shape[1] != col.shape[1]:
        raise ValueError(
            f"row and col must be (H, dim) and (W, dim) tables, got {tuple(row.shape)} and {tuple(col.shape)}"
        )
    r = row[:, None, :].expand(h, w, -1)
    c = col[None, :, :].expand(h, w, -1)
    grid = (r + c) if mode == "add" else torch.cat([r, c], dim=-1)
    grid = grid.reshape(h * w, -1)
    if prefix.dim() != 2 or prefix.shape[1] != grid.shape[1]:
        raise ValueError(f"prefix must be (n_prefix, d_model={grid.shape[1]}), got {tuple(prefix.shape)}")
    return torch.cat([prefix, grid])


class _GridTable(PositionScheme):
    """A scheme that adds ``table()[positions]`` to the embeddings; subclasses define ``table()``."""

    kind = "embedding"
    grid_h: int
    grid_w: int
    n_prefix: int

    def table(self) -> Tensor:
        """The full (n_prefix + grid_h*grid_w, d_model) table."""
        raise NotImplementedError

    def forward(self, positions: Tensor) -> Tensor:
        """Encodings of integer ``positions`` (batch, seq): (batch, seq, d_model)."""
        check_integer_tensor("positions", positions)
        what = f"{self.n_prefix} prefix tokens + a {self.grid_h}x{self.grid_w} grid"
        _check_position_range("positions", positions, self.n_prefix + self.grid_h * self.grid_w, what)
        return F.embedding(positions.long(), self.table())

    def add_to_embeddings(self, x: Tensor, positions: Tensor) -> Tensor:
        """x (batch, seq, d_model) + encodings of positions (batch|1, seq)."""
        return x + self(positions)

    def extra_repr(self) -> str:
        return f"grid=({self.grid_h}, {self.grid_w}), n_prefix={self.n_prefix}"


class SinCos2DPE(_GridTable):
    """Fixed 2-D sin-cos encoding (:func:`sincos_2d_table`) as a scheme; ``table`` is a non-persistent buffer.

    Args:
        d_model: width, divisible by 4.
        grid_h, grid_w: patch grid.
        n_prefix: leading class-like tokens (zero rows).
        base: frequency base.
    """

    def __init__(self, d_model: int, grid_h: int, grid_w: int, n_prefix: int = 0, base: float = 10000.0):
        super().__init__()
        self.grid_h, self.grid_w, self.n_prefix, self.d_model, self.base = grid_h, grid_w, n_prefix, d_model, base
        self.register_buffer("_table", sincos_2d_table(grid_h, grid_w, d_model, base, n_prefix), persistent=False)

    def table(self) -> Tensor:
        return self._table


class Learnable2DPE(_GridTable):
    """Learned row and column tables (:func:`learnable_2d_table`) as a scheme.

    Args:
        d_model: width (even for ``mode="concat"``).
        grid_h, grid_w: patch grid.
        mode: "add" (``row`` (H, d), ``col`` (W, d), summed) or "concat" (each d/2 channels).
        n_prefix: leading class-like tokens; each gets its own learned row in ``prefix``.
        init_std: N(0, init_std) initialisation of every table.

    Parameters: ``(grid_h + grid_w) * dim + n_prefix * d_model`` instead of the
    ``grid_h * grid_w * d_model`` of a 1-D table over the patches.
    """

    def __init__(
        self, d_model: int, grid_h: int, grid_w: int, mode: Mode = "add", n_prefix: int = 0, init_std: float = 0.02
    ):
        super().__init__()
        _check_grid(grid_h, grid_w, n_prefix)
        check_int("d_model", d_model)
        if mode not in ("add", "concat"):
            raise ValueError(f"mode must be 'add' or 'concat', got {mode!r}")
        if mode == "concat" and d_model % 2:
            raise ValueError(f"d_model must be even for mode='concat' (half row, half column), got {d_model}")
        if isinstance(init_std, bool) or not isinstance(init_std, (int, float)) or not init_std > 0:
            raise ValueError(f"init_std must be a number > 0, got {init_std!r}")
        self.grid_h, self.grid_w, self.n_prefix, self.mode = grid_h, grid_w, n_prefix, mode
        dim = d_model if mode == "add" else d_model // 2
        self.row = nn.Parameter(torch.randn(grid_h, dim) * init_std)
        self.col = nn.Parameter(torch.randn(grid_w, dim) * init_std)
        self.prefix = nn.Parameter(torch.randn(n_prefix, d_model) * init_std)

    def table(self) -> Tensor:
        return learnable_2d_table(self.row, self.col, self.prefix, self.mode)

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, mode={self.mode!r}"


# --------------------------------------------------------------------------- 2-D RoPE


def _check_qk(q: Tensor, k: Tensor, head_dim: int, positions: Tensor) -> None:
    for name, t in (("q", q), ("k", k)):
        if not isinstance(t, Tensor) or not t.dtype.is_floating_point:
            raise TypeError(f"{name} must be a floating-point tensor, got {getattr(t, 'dtype', type(t).__name__)}")
        if t.dim() != 4 or t.shape[-1] != head_dim:
            raise ValueError(f"{name} must have shape (batch, heads, seq, head_dim={head_dim}), got {tuple(t.shape)}")
    if q.shape != k.shape:
        raise ValueError(f"q and k must have the same shape, got {tuple(q.shape)} and {tuple(k.shape)}")
    if positions.dim() != 2 or positions.shape[-1] != q.shape[-2] or positions.shape[0] not in (1, q.shape[0]):
        raise ValueError(
            f"positions must have shape (batch, seq) = ({q.shape[0]}, {q.shape[-2]}) or (1, {q.shape[-2]}), "
            f"got {tuple(positions.shape)}"
        )


def apply_axial_rope_2d(x: Tensor, rows: Tensor, cols: Tensor, inv_freq: Tensor, layout: Layout = "half") -> Tensor:
    """Axial 2-D RoPE of x (batch, heads, seq, head_dim) with integer rows, cols (batch|1, seq).

    inv_freq: (head_dim // 4,) frequencies shared by both axes. Pairs 0 .. head_dim/4 - 1 turn
    by ``col * inv_freq`` (the x axis), the next head_dim/4 by ``row * inv_freq`` (the y axis):
    the order of Heo et al.'s official code (``compute_axial_cis`` concatenates the x table,
    then the y table). Pair i is (x[i], x[i + head_dim/2]) in the "half" layout and
    (x[2i], x[2i+1]) in the "interleaved" layout of :func:`posenc_lib.encodings.rotary.rope.apply_rope`; the
    reference code uses "interleaved". The score of a query at (r, c) and a key at (r', c')
    depends only on (r - r', c - c').
    """
    cos_c, sin_c = rope_cos_sin(cols, inv_freq, dtype=x.dtype)
    cos_r, sin_r = rope_cos_sin(rows, inv_freq, dtype=x.dtype)
    return apply_rope(x, torch.cat([cos_c, cos_r], dim=-1), torch.cat([sin_c, sin_r], dim=-1), layout=layout)


def apply_mixed_rope_2d(x: Tensor, rows: Tensor, cols: Tensor, freqs: Tensor, layout: Layout = "half") -> Tensor:
    """Mixed 2-D RoPE (Heo et al. 2024) of x (batch, heads, seq, head_dim).

    freqs: (2, heads, head_dim // 2) learned frequencies, x component first as in the official
    code's ``freqs`` (``compute_mixed_cis``): pair i of head h turns by
    ``cols * freqs[0, h, i] + rows * freqs[1, h, i]``, a frequency along any direction of the
    image plane, not only along the axes. rows, cols: integer (batch|1, seq). layout: "half"
    or "interleaved" (the reference's), as in :func:`apply_axial_rope_2d`.
    Angles are computed in at least float32 and cos/sin cast to x's dtype at the end.
    """
    b, h, s, d = x.shape
    f = freqs.to(torch.promote_types(freqs.dtype, torch.float32))  # angles never in 16-bit
    angles = cols[:, None, :, None].to(f.dtype) * f[0, None, :, None, :]
    angles = angles + rows[:, None, :, None].to(f.dtype) * f[1, None, :, None, :]  # (b|1, h, s, d/2)
    angles = angles.expand(b, h, s, d // 2).reshape(b * h, s, d // 2)
    # one "batch" row per (batch, head) pair, so the per-head tables broadcast over a single head
    out = apply_rope(x.reshape(b * h, 1, s, d), angles.cos().to(x.dtype), angles.sin().to(x.dtype), layout=layout)
    return out.reshape(b, h, s, d)


def mixed_rope_init(head_dim: int, n_heads: int, base: float = 10.0) -> Tensor:
    """Initial frequencies (2, n_heads, head_dim // 2) for :func:`apply_mixed_rope_2d`, as in Heo et al.

    Magnitudes ``base^(-k/(head_dim/4))``, k = 0 .. head_dim/4 - 1; each head draws a random
    direction phi (uses the global torch RNG): its first head_dim/4 pairs point along phi, the
    others along phi + pi/2. Row component = magnitude * sin, column component = magnitude * cos.
    """
    check_int("head_dim", head_dim, minimum=4)
    check_int("n_heads", n_heads)
    if head_dim % 4:
        raise ValueError(f"head_dim must be divisible by 4 (pairs split between two axes), got {head_dim}")
    magnitude = rope_inv_freq(head_dim // 2, base)  # (head_dim/4,)
    phi = torch.rand(n_heads, 1) * 2 * math.pi
    direction = torch.cat([phi.expand(-1, head_dim // 4), (phi + math.pi / 2).expand(-1, head_dim // 4)], dim=1)
    magnitude = magnitude.repeat(2)[None, :]
    return torch.stack([magnitude * direction.cos(), magnitude * direction.sin()])


class _GridRoPE(PositionScheme):
    """Shared plumbing of the 2-D RoPE schemes: validate, map positions to (row, col), rotate q and k."""

    kind = "rotary"
    head_dim: int
    grid_h: int
    grid_w: int
    n_prefix: int
    layout: Layout

    def _rotate(self, x: Tensor, rows: Tensor, cols: Tensor) -> Tensor:
        raise NotImplementedError

    def rotate_qk(self, q: Tensor, k: Tensor, positions: Tensor) -> tuple[Tensor, Tensor]:
        """q, k: (batch, heads, seq, head_dim); positions: integer (batch|1, seq)."""
        check_integer_tensor("positions", positions)
        _check_qk(q, k, self.head_dim, positions)
        rows, cols = grid_coordinates(positions, self.grid_h, self.grid_w, self.n_prefix)
        return self._rotate(q, rows, cols), self._rotate(k, rows, cols)

    def extra_repr(self) -> str:
        return f"head_dim={self.head_dim}, grid=({self.grid_h}, {self.grid_w}), n_prefix={self.n_prefix}, layout={self.layout!r}"


class AxialRoPE2D(_GridRoPE):
    """Axial 2-D RoPE (:func:`apply_axial_rope_2d`): the first half of the pairs use the column, the rest the row.

    Args:
        head_dim: per-head width, divisible by 4.
        grid_h, grid_w: patch grid; positions index the row-major token sequence.
        base: frequency base (100 in Heo et al. for images, since grids are short).
        n_prefix: leading class-like tokens, left unrotated.
        layout: "half" (default) or "interleaved" (the pairs of the reference code).

    ``inv_freq`` (head_dim // 4,) is a non-persistent buffer.
    """

    def __init__(
        self, head_dim: int, grid_h: int, grid_w: int, base: float = 100.0, n_prefix: int = 0, layout: Layout = "half"
    ):
        super().__init__()
        _check_grid(grid_h, grid_w, n_prefix)
        _check_layout(layout)
        self.layout = layout
        check_int("head_dim", head_dim, minimum=4)
        if head_dim % 4:
            raise ValueError(f"head_dim must be divisible by 4 (pairs split between two axes), got {head_dim}")
        self.head_dim, self.grid_h, self.grid_w, self.n_prefix = head_dim, grid_h, grid_w, n_prefix
        self.register_buffer("inv_freq", rope_inv_freq(head_dim // 2, base), persistent=False)

    def _rotate(self, x: Tensor, rows: Tensor, cols: Tensor) -> Tensor:
        return apply_axial_rope_2d(x, rows, cols, self.inv_freq, self.layout)


class MixedRoPE2D(_GridRoPE):
    """Mixed-frequency 2-D RoPE (:func:`apply_mixed_rope_2d`) with learned per-head frequencies.

    Args:
        head_dim: per-head width, divisible by 4.
        n_heads: number of heads (each learns its own frequencies).
        grid_h, grid_w: patch grid.
        base: base of the initial magnitudes (10 in Heo et al. for the mixed variant).
        n_prefix: leading class-like tokens, left unrotated.
        layout: "half" (default) or "interleaved" (the pairs of the reference code).

    Parameter ``freqs`` (2, n_heads, head_dim // 2), x (column) component first, initialised by
    :func:`mixed_rope_init`. The reference code learns one such tensor per layer; here one
    scheme (one ``freqs``) is shared by all layers, like every scheme of the library.
    """

    def __init__(
        self, head_dim: int, n_heads: int, grid_h: int, grid_w: int, base: float = 10.0, n_prefix: int = 0,
        layout: Layout = "half",
    ):
        super().__init__()
        _check_grid(grid_h, grid_w, n_prefix)
        _check_layout(layout)
        self.layout = layout
        self.freqs = nn.Parameter(mixed_rope_init(head_dim, n_heads, base))
        self.head_dim, self.n_heads = head_dim, n_heads
        self.grid_h, self.grid_w, self.n_prefix = grid_h, grid_w, n_prefix

    def _rotate(self, x: Tensor, rows: Tensor, cols: Tensor) -> Tensor:
        if x.shape[1] != self.n_heads:
            raise ValueError(f"q and k must have n_heads={self.n_heads} heads, got {x.shape[1]}")
        return apply_mixed_rope_2d(x, rows, cols, self.freqs, self.layout)


# --------------------------------------------------------------------------- resizing


def resample_grid(table: Tensor, old_hw: tuple[int, int], new_hw: tuple[int, int], n_prefix: int = 1) -> Tensor:
    """Resize a learned position table to another patch grid by bicubic interpolation.

    table: (n_prefix + H*W, d) with the prefix rows first and the patches row-major. The prefix
    rows are kept as they are; the (H, W, d) grid is interpolated in float32 with
    ``F.interpolate(mode="bicubic", align_corners=False)`` to exactly ``new_hw`` (the target
    size is passed, never a scale factor, which can round to the wrong size), and the result
    is cast back to the table's dtype. Returns (n_prefix + H'*W', d).
    """
    if not isinstance(table, Tensor) or not table.dtype.is_floating_point:
        raise TypeError(f"table must be a floating-point tensor, got {getattr(table, 'dtype', type(table).__name__)}")
    for name, hw in (("old_hw", old_hw), ("new_hw", new_hw)):
        if not (isinstance(hw, (tuple, list)) and len(hw) == 2):
            raise ValueError(f"{name} must be a (height, width) pair, got {hw!r}")
        check_int(f"{name}[0]", hw[0])
        check_int(f"{name}[1]", hw[1])
    check_int("n_prefix", n_prefix, minimum=0)
    (h, w), (new_h, new_w) = old_hw, new_hw
    if table.dim() != 2 or table.shape[0] != n_prefix + h * w:
        raise ValueError(
            f"table must have shape (n_prefix + H*W, d) = ({n_prefix} + {h}*{w}, d) for old_hw={tuple(old_hw)}, "
            f"got {tuple(table.shape)}"
        )
    d = table.shape[1]
    grid = table[n_prefix:].float().reshape(h, w, d).permute(2, 0, 1)[None]
    grid = F.interpolate(grid, size=(new_h, new_w), mode="bicubic", align_corners=False)
    return torch.cat([table[:n_prefix], grid[0].permute(1, 2, 0).reshape(new_h * new_w, d).to(table.dtype)])


# --------------------------------------------------------------------------- patch embedding


class PatchEmbed(nn.Module):
    """Cut images into square patches, project each to ``d_model``, optionally prepend class tokens.

    Input (batch, H, W) for one channel or (batch, C, H, W); output (batch, n_prefix + (H/p)*(W/p),
    d_model) with the patches in row-major order, the order every 2-D scheme of this module
    expects. It is ViT's strided convolution written as a reshape and one ``nn.Linear`` over the
    ``C * p * p`` pixels of a patch. Pass it to ``TinyTransformer(None, ..., embed=PatchEmbed(...))``.

    Args:
        patch_size: side p of a patch in pixels; must divide H and W of every input.
        d_model: width of a token.
        in_channels: C.
        n_prefix: learned class-like tokens put before the patches (0 or 1 in ViT), each
            N(0, 0.02) initialised; use the schemes with the same ``n_prefix`` and ``pool="first"``.

    Any image size works (a larger image gives a larger grid); the position scheme decides whether
    the model can use it.
    """

    def __init__(self, patch_size: int, d_model: int, in_channels: int = 1, n_prefix: int = 0):
        super().__init__()
        self.patch_size = check_int("patch_size", patch_size)
        self.in_channels = check_int("in_channels", in_channels)
        check_int("d_model", d_model)
        self.n_prefix = check_int("n_prefix", n_prefix, minimum=0)
        self.proj = nn.Linear(in_channels * patch_size * patch_size, d_model)
        self.prefix = nn.Parameter(torch.randn(n_prefix, d_model) * 0.02)

    def grid_size(self, height: int, width: int) -> tuple[int, int]:
        """(grid_h, grid_w) of an image of this size; raises if the patch size does not divide it."""
        p = self.patch_size
        if height % p or width % p:
            raise ValueError(
                f"images must have height and width divisible by patch_size={p}, got image size ({height}, {width})"
            )
        return height // p, width // p

    def forward(self, images: Tensor) -> Tensor:
        if not isinstance(images, Tensor) or not images.dtype.is_floating_point:
            raise TypeError(f"images must be a floating-point tensor, got {getattr(images, 'dtype', type(images).__name__)}")
        if images.dim() == 3 and self.in_channels == 1:
            images = images[:, None]
        if images.dim() != 4 or images.shape[1] != self.in_channels:
            raise ValueError(
                f"images must have shape (batch, {self.in_channels}, H, W)"
                + (" or (batch, H, W)" if self.in_channels == 1 else "")
                + f", got {tuple(images.shape)}"
            )
        b, c, h, w = images.shape
        gh, gw = self.grid_size(h, w)
        p = self.patch_size
        patches = images.reshape(b, c, gh, p, gw, p).permute(0, 2, 4, 1, 3, 5).reshape(b, gh * gw, c * p * p)
        tokens = self.proj(patches)
        return torch.cat([self.prefix.expand(b, -1, -1), tokens], dim=1)

    def extra_repr(self) -> str:
        return f"patch_size={self.patch_size}, in_channels={self.in_channels}, n_prefix={self.n_prefix}"


# --------------------------------------------------------------------------- a tiny ViT's schemes

#: The position schemes notebook 04 compares, by name (see :func:`vit_scheme`).
VIT_SCHEMES = ("none", "1-D learnable", "1-D sinusoidal", "2-D learnable", "2-D sin-cos", "axial RoPE", "mixed RoPE")


def vit_scheme(name: str, d_model: int, n_heads: int, grid_h: int, grid_w: int, n_prefix: int = 1) -> PositionScheme:
    """A fresh position scheme for a ViT over a ``grid_h x grid_w`` patch grid with ``n_prefix`` class tokens.

    name (one of :data:`VIT_SCHEMES`): "none" (:class:`NoPosition`); "1-D learnable" (ViT's
    table: :class:`LearnablePE` over the row-major sequence, class token included); "1-D sinusoidal"
    (:class:`SinusoidalPE` over the same index); "2-D learnable" (:class:`Learnable2DPE`, row +
    column tables added); "2-D sin-cos" (:class:`SinCos2DPE`); "axial RoPE" (:class:`AxialRoPE2D`,
    base 100) and "mixed RoPE" (:class:`MixedRoPE2D`, base 10), the last two with head_dim =
    d_model / n_heads.
    """
    _check_grid(grid_h, grid_w, n_prefix)
    check_int("d_model", d_model)
    check_int("n_heads", n_heads)
    n = n_prefix + grid_h * grid_w
    makers = {
        "none": lambda: NoPosition(),
        "1-D learnable": lambda: LearnablePE(d_model, n),
        "1-D sinusoidal": lambda: SinusoidalPE(d_model, n),
        "2-D learnable": lambda: Learnable2DPE(d_model, grid_h, grid_w, n_prefix=n_prefix),
        "2-D sin-cos": lambda: SinCos2DPE(d_model, grid_h, grid_w, n_prefix=n_prefix),
        "axial RoPE": lambda: AxialRoPE2D(d_model // n_heads, grid_h, grid_w, n_prefix=n_prefix),
        "mixed RoPE": lambda: MixedRoPE2D(d_model // n_heads, n_heads, grid_h, grid_w, n_prefix=n_prefix),
    }
    if name not in makers:
        raise ValueError(f"name must be one of {list(makers)}, got {name!r}")
    return makers[name]()


def regrid_scheme(scheme: PositionScheme, old_hw: tuple[int, int], new_hw: tuple[int, int], n_prefix: int = 1) -> PositionScheme:
    """The same scheme for another patch grid, carrying over what was learned (a new module).

    - :class:`LearnablePE` (a 1-D table over prefix + patches): its patch rows are resampled
      bicubically as an (H, W) grid by :func:`resample_grid`, the prefix rows kept apart.
    - :class:`Learnable2DPE`: the row table and the column table are each resampled along their axis.
    - :class:`SinCos2DPE`: recomputed for the new grid (same base); nothing was learned.
    - :class:`AxialRoPE2D`, :class:`MixedRoPE2D`: the same frequencies, applied to the new grid's
      row and column indices (which now run further), as Heo et al. do at a new resolution.
    - :class:`NoPosition`, :class:`SinusoidalPE`: unchanged (a sinusoid is defined for every index).
    """
    for name, hw in (("old_hw", old_hw), ("new_hw", new_hw)):
        if not (isinstance(hw, (tuple, list)) and len(hw) == 2):
            raise ValueError(f"{name} must be a (height, width) pair, got {hw!r}")
        _check_grid(hw[0], hw[1], n_prefix)
    (h, w), (new_h, new_w) = old_hw, new_hw
    if isinstance(scheme, (_GridTable, _GridRoPE)) and (scheme.grid_h, scheme.grid_w, scheme.n_prefix) != (h, w, n_prefix):
        raise ValueError(
            f"old_hw={tuple(old_hw)}, n_prefix={n_prefix} must match the scheme's grid "
            f"({scheme.grid_h}, {scheme.grid_w}), n_prefix={scheme.n_prefix}"
        )
    if isinstance(scheme, LearnablePE):
        new = LearnablePE(scheme.d_model, n_prefix + new_h * new_w, scheme.init_std)
        with torch.no_grad():
            new.weight.copy_(resample_grid(scheme.weight.detach(), (h, w), (new_h, new_w), n_prefix))
        return new
    if isinstance(scheme, Learnable2DPE):
        new = Learnable2DPE(scheme.prefix.shape[1], new_h, new_w, scheme.mode, n_prefix)
        with torch.no_grad():
            new.row.copy_(resample_grid(scheme.row.detach(), (h, 1), (new_h, 1), n_prefix=0))
            new.col.copy_(resample_grid(scheme.col.detach(), (w, 1), (new_w, 1), n_prefix=0))
            new.prefix.copy_(scheme.prefix)
        return new
    if isinstance(scheme, SinCos2DPE):
        return SinCos2DPE(scheme.d_model, new_h, new_w, n_prefix, scheme.base)
    if isinstance(scheme, AxialRoPE2D):
        new = AxialRoPE2D(scheme.head_dim, new_h, new_w, n_prefix=n_prefix, layout=scheme.layout)
        new.inv_freq.copy_(scheme.inv_freq)
        return new
    if isinstance(scheme, MixedRoPE2D):
        new = MixedRoPE2D(scheme.head_dim, scheme.n_heads, new_h, new_w, n_prefix=n_prefix, layout=scheme.layout)
        with torch.no_grad():
            new.freqs.copy_(scheme.freqs)
        return new
    if type(scheme) in (NoPosition, SinusoidalPE):
        return scheme
    raise TypeError(f"scheme must be one of the schemes of vit_scheme, got {type(scheme).__name__}")


def grid_similarity(table: Tensor, grid_h: int, grid_w: int, n_prefix: int = 0) -> Tensor:
    """Cosine similarity of every patch's position vector with every other: (grid_h, grid_w, grid_h, grid_w).

    table: (n_prefix + grid_h*grid_w, d) with the patches row-major after the prefix rows.
    ``out[r, c]`` is the (grid_h, grid_w) map of patch (r, c): the panels of the familiar ViT figure.
    """
    _check_grid(grid_h, grid_w, n_prefix)
    if not isinstance(table, Tensor) or table.dim() != 2 or table.shape[0] != n_prefix + grid_h * grid_w:
        raise ValueError(
            f"table must have shape (n_prefix + grid_h*grid_w, d) = ({n_prefix} + {grid_h}*{grid_w}, d), "
            f"got {tuple(getattr(table, 'shape', ()))}"
        )
    patches = F.normalize(table[n_prefix:].detach().double(), dim=-1)
    return (patches @ patches.T).reshape(grid_h, grid_w, grid_h, grid_w)

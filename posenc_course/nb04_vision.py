"""The position schemes of notebook 04's tiny ViT, by name, and carrying them to another grid."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from posenc_course.data import RelativeDirection
from posenc_lib.checks import check_grid, is_int
from posenc_lib.embeddings.sinusoidal import SinusoidalPE
from posenc_lib.grid import Coords, check_regrid
from posenc_lib.registry import build_scheme
from posenc_lib.scheme import NoPosition, PositionScheme

__all__ = ["VIT_SCHEMES", "vit_scheme", "regrid_scheme", "grid_similarity", "ColumnGap"]

#: The position schemes notebook 04 compares: its label -> the scheme's name in posenc_lib.registry.SCHEMES.
VIT_SCHEMES: dict[str, str] = {
    "none": "none",
    "1-D learnable": "learnable",
    "1-D sinusoidal": "sinusoidal",
    "2-D learnable": "learnable-2d",
    "2-D sin-cos": "sincos-2d",
    "axial RoPE": "axial-rope-2d",
    "mixed RoPE": "mixed-rope-2d",
    "PEG": "peg",
}


def vit_scheme(name: str, d_model: int, n_heads: int, grid_h: int, grid_w: int, n_prefix: int = 1) -> PositionScheme:
    """A fresh position scheme for a ViT over a ``grid_h x grid_w`` patch grid with ``n_prefix`` class tokens.

    name (one of :data:`VIT_SCHEMES`): "none" (:class:`NoPosition`); "1-D learnable" (ViT's
    table: :class:`LearnablePE` over the row-major sequence, class token included); "1-D sinusoidal"
    (:class:`SinusoidalPE` over the same index); "2-D learnable" (:class:`Learnable2DPE`, row +
    column tables added); "2-D sin-cos" (:class:`SinCos2DPE`); "axial RoPE" (:class:`AxialRoPE2D`,
    base 100) and "mixed RoPE" (:class:`MixedRoPE2D`, base 10), the last two with head_dim =
    d_model / n_heads; "PEG" (:class:`PEG`, CPVT's 3x3 depthwise convolution over the grid). Built by :func:`~posenc_lib.registry.build_scheme`.
    """
    if name not in VIT_SCHEMES:
        raise ValueError(f"name must be one of {list(VIT_SCHEMES)}, got {name!r}")
    return build_scheme(VIT_SCHEMES[name], d_model, n_heads, grid=(grid_h, grid_w), n_prefix=n_prefix)


def regrid_scheme(
    scheme: PositionScheme, old_hw: tuple[int, int], new_hw: tuple[int, int], n_prefix: int = 1,
    coords: Coords = "extrapolate",
) -> PositionScheme:
    """The same scheme for another patch grid, carrying over what was learned: each scheme's ``regrid``.

    coords: how the computed 2-D schemes (sin-cos, RoPE) place the new grid: "extrapolate" (the
    indices 0 .. H' - 1, beyond the trained ones) or "interpolate" (rescaled into the trained
    range by :func:`~posenc_lib.grid.coordinate_scale`). The learned tables
    are always resampled, an interpolation; the others ignore it.

    - :class:`LearnablePE` (a 1-D table over prefix + patches): its patch rows are resampled
      bicubically as an (H, W) grid, the prefix rows kept apart.
    - :class:`Learnable2DPE`: the row table and the column table are each resampled along their axis.
    - :class:`SinCos2DPE`: recomputed for the new grid (same base); nothing was learned.
    - :class:`AxialRoPE2D`, :class:`MixedRoPE2D`: the same frequencies, applied to the new grid's
      row and column indices (which now run further), as Heo et al. do at a new resolution, or to
      interpolated coordinates.
    - :class:`PEG`: the same convolution on the new grid (it only looks at neighbours).
    - :class:`NoPosition`, :class:`SinusoidalPE`: unchanged (a sinusoid is defined for every index).
    """
    if type(scheme) in (NoPosition, SinusoidalPE):  # computed from the index alone: the same on any grid
        check_regrid(scheme, old_hw, new_hw, n_prefix, coords)
        return scheme
    if not hasattr(scheme, "regrid"):
        raise TypeError(f"scheme must be one of the schemes of vit_scheme, got {type(scheme).__name__}")
    return scheme.regrid(old_hw, new_hw, n_prefix, coords=coords)


def grid_similarity(table: Tensor, grid_h: int, grid_w: int, n_prefix: int = 0) -> Tensor:
    """Cosine similarity of every patch's position vector with every other: (grid_h, grid_w, grid_h, grid_w).

    table: (n_prefix + grid_h*grid_w, d) with the patches row-major after the prefix rows.
    ``out[r, c]`` is the (grid_h, grid_w) map of patch (r, c): the panels of the familiar ViT figure.
    """
    check_grid(grid_h, grid_w, n_prefix)
    if not isinstance(table, Tensor) or table.dim() != 2 or table.shape[0] != n_prefix + grid_h * grid_w:
        raise ValueError(
            f"table must have shape (n_prefix + grid_h*grid_w, d) = ({n_prefix} + {grid_h}*{grid_w}, d), "
            f"got {tuple(getattr(table, 'shape', ()))}"
        )
    patches = F.normalize(table[n_prefix:].detach().double(), dim=-1)
    return (patches @ patches.T).reshape(grid_h, grid_w, grid_h, grid_w)


@dataclass(frozen=True)
class ColumnGap:
    """Two marked cells A and B on a ``grid_h x grid_w`` canvas; the label says whether B is ``gap`` or more columns right of A.

    The images are :class:`~posenc_course.data.RelativeDirection`'s: (2, grid_h, grid_w), channel 0
    marks A, channel 1 marks B, one 1x1 patch per cell, so every image is the same bag of patches.
    Classes (:attr:`CLASSES`): 0 "no", 1 "yes": B's column minus A's is at least ``gap``
    (rows are free). The rule is in absolute patch units: on a larger canvas of the same cells
    each offset keeps its label, unlike a rule that scales with the image (the dominant axis of an
    offset is the same at any scale). Coordinates interpolated into a smaller grid's range
    shrink the offsets, and an offset of exactly ``gap`` columns looks smaller than ``gap``.
    """

    grid_h: int = 4
    grid_w: int = 4
    gap: int = 2

    CLASSES = ("no", "yes")

    def __post_init__(self) -> None:
        for name in ("grid_h", "grid_w"):
            value = getattr(self, name)
            if not is_int(value) or value < 2:
                raise ValueError(f"{name} must be an int >= 2, got {value!r}")
        if not is_int(self.gap) or not 1 <= self.gap < self.grid_w:
            raise ValueError(f"gap must be an int from 1 to grid_w - 1 = {self.grid_w - 1} (so that both classes occur), got {self.gap!r}")

    def pairs(self) -> tuple[Tensor, Tensor]:
        """Every ordered pair of distinct cells (A, B): cell indices (n_pairs, 2) int64 (row-major) and labels (n_pairs,)."""
        n = self.grid_h * self.grid_w
        a, b = torch.meshgrid(torch.arange(n), torch.arange(n), indexing="ij")
        a, b = a.reshape(-1), b.reshape(-1)
        cells = torch.stack([a[a != b], b[a != b]], dim=1)
        return cells, (self.column_offsets(cells) >= self.gap).long()

    def column_offsets(self, cells: Tensor) -> Tensor:
        """B's column minus A's, (n,) int64, for (A, B) cell pairs (n, 2)."""
        return RelativeDirection(self.grid_h, self.grid_w).offsets(cells)[:, 1]

    def render(self, cells: Tensor) -> Tensor:
        """Images (n, 2, grid_h, grid_w) float32 of (A, B) cell pairs (n, 2)."""
        return RelativeDirection(self.grid_h, self.grid_w).render(cells)

    def split(
        self, n_test: int, n_train: int | None, generator: torch.Generator
    ) -> tuple[tuple[Tensor, Tensor], tuple[Tensor, Tensor]]:
        """A balanced random split of the pairs: ``((cells, labels) train, (cells, labels) test)``.

        n_test pairs of each class go to the test part; of the rest, n_train of each class (None:
        as many as the rarer class has left) to the training part, so both parts hold every class
        equally often and a model blind to position scores exactly 1/2. Drawn with ``generator``.
        """
        if not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
        cells, labels = self.pairs()
        per_class = [torch.nonzero(labels == k).flatten() for k in range(len(self.CLASSES))]
        fewest = min(len(p) for p in per_class)
        if not is_int(n_test) or not 1 <= n_test < fewest:
            raise ValueError(f"n_test must be an int from 1 to {fewest - 1} (the rarer class's pairs, minus one), got {n_test!r}")
        if n_train is None:
            n_train = fewest - n_test
        if not is_int(n_train) or not 1 <= n_train <= fewest - n_test:
            raise ValueError(f"n_train must be None or an int from 1 to {fewest - n_test}, got {n_train!r}")
        shuffled = [p[torch.randperm(len(p), generator=generator)] for p in per_class]
        test = torch.cat([p[:n_test] for p in shuffled])
        train = torch.cat([p[n_test : n_test + n_train] for p in shuffled])
        return (cells[train], labels[train]), (cells[test], labels[test])

# %% [markdown]
# # 04 · Position in vision transformers
#
# A Vision Transformer (ViT) cuts an image into square patches and reads them as a sequence, row
# after row. Attention alone sees a *bag* of patches ([00 · Permutation blindness](00_permutation_blindness.ipynb)),
# so position must be added; but an image is a grid, not a line. How should a grid be encoded,
# and what becomes of the code when the image grows?
#
# **What you will learn**
# - why a 1-D encoding of a row-major patch grid makes the end of one row a neighbour of the
#   start of the next;
# - the 2-D encodings (learned row + column tables, 2-D sin-cos, axial and mixed 2-D RoPE), from
#   formula to code, and what a wrong axis order does;
# - how eight schemes compare when trained (3 seeds each) on a task a bag of
#   patches cannot solve, and on real digits;
# - what a learned table and a trained model's attention look like, and what each scheme costs;
# - what happens at a larger image size, interpolated against extrapolated coordinates, and how
#   a control task tells what the coordinates do from what the task rewards.
#
# **Prerequisites:** [01 · Sinusoidal encoding](01_sinusoidal.ipynb),
# [02 · Learnable absolute encoding](02_learnable.ipynb) and [03 · RoPE](03_rope.ipynb).
#
# **Run time:** about 112 s on a laptop CPU (measured with `make execute`, one thread).

# %%
import copy
import itertools
import shutil
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
import torch
import torch.nn.functional as F
from IPython.display import display
from torch.testing import assert_close
from torch.utils.flop_counter import FlopCounterMode

from posenc_course.data import (
    DIGITS_FILE,
    DIGITS_SHA256,
    RelativeDirection,
    load_digits,
    shipped_file,
)
from posenc_course.exercises.nb04 import (
    check_exercise_1,
    check_exercise_2,
    check_exercise_3,
    check_exercise_4,
    check_exercise_5,
)
from posenc_course.floors import (
    chance,
    fixed,
    linear_readout,
    majority,
    no_position,
    with_floors,
)
from posenc_course.nb04_vision import (
    VIT_SCHEMES,
    ColumnGap,
    grid_similarity,
    regrid_scheme,
    vit_scheme,
)
from posenc_course.plotting import COLORS, MARKERS, heatmap
from posenc_course.report import checked, clearly_ahead, compare
from posenc_course.training import (
    accuracy,
    run_each,
    seed_everything,
    setup_notebook,
    train,
)
from posenc_lib.embeddings.sinusoidal import sinusoidal_table
from posenc_lib.embeddings.tables_2d import learnable_2d_table, sincos_2d_table
from posenc_lib.grid import PatchEmbed, coordinate_scale, grid_coordinates
from posenc_lib.models import TinyTransformer
from posenc_lib.rotary.rope_2d import AxialRoPE2D, MixedRoPE2D

gen = setup_notebook(0)
pd.set_option("display.width", 120)

# %% [markdown]
# ## 1 · Patches in a row: the 1-D blind spot
#
# **Question.** A ViT numbers its patches row-major: on a 4x4 grid patch (r, c) is token
# `4 r + c`. What does an encoding of that single index know about the image?
#
# Below, each patch is coloured by its distance to patch (1, 3): the index distance, the 2-D
# distance, and the cosine similarity of the 1-D sinusoidal encodings of [01](01_sinusoidal.ipynb).

# %% tags=["nbval-check-output"]
G = 4
index = torch.arange(G * G)
rows, cols = (t[0] for t in grid_coordinates(index[None], G, G))
query = 1 * G + 3  # patch (1, 3)
dist_1d = (index - query).abs().reshape(G, G).float()
dist_2d = (
    ((rows - rows[query]) ** 2 + (cols - cols[query]) ** 2)
    .float()
    .sqrt()
    .reshape(G, G)
)
sin_table = F.normalize(sinusoidal_table(G * G, 32), dim=-1)
sim_1d = (sin_table @ sin_table[query]).reshape(G, G)

fig, axes = plt.subplots(1, 3, figsize=(7.5, 2.9), layout="constrained")
for ax, m, title, label in zip(
    axes,
    (dist_1d, dist_2d, sim_1d),
    (
        "1-D index\ndistance",
        "2-D distance\nin the image",
        "1-D sinusoid:\ncosine similarity",
    ),
    ("tokens", "patches", "cosine"),
    strict=True,
):
    heatmap(ax, m.numpy(), title, "column", "row", label)
    ax.set_xticks(range(G))
    ax.set_yticks(range(G))
    ax.scatter([3], [1], marker="*", s=150, color="white", edgecolor="black")
fig.suptitle("Distance from patch (1, 3) (star) on a 4x4 grid")
plt.show()

# %% [markdown]
# **Check.** Patch (2, 0) is one token away from (1, 3) but more than 3 patches away in the image,
# while (2, 3), right below, is 4 tokens away; the sinusoidal encoding, which only knows the
# index, calls (2, 0) the more similar one.

# %% tags=["nbval-check-output"]
print(
    f"(1,3)->(2,0): 1-D distance {dist_1d[2, 0]:.0f}, 2-D distance"
    f" {dist_2d[2, 0]:.3f}, sinusoid similarity {sim_1d[2, 0]:.3f}"
)
print(
    f"(1,3)->(2,3): 1-D distance {dist_1d[2, 3]:.0f}, 2-D distance"
    f" {dist_2d[2, 3]:.3f}, sinusoid similarity {sim_1d[2, 3]:.3f}"
)
assert (
    dist_1d[2, 0] == 1
    and dist_2d[2, 0] > 3
    and dist_1d[2, 3] == 4
    and dist_2d[2, 3] == 1
)
assert sim_1d[2, 0] > sim_1d[2, 3] + 0.1

# %% [markdown]
# **Takeaway**
# - A 1-D encoding of the row-major index puts the wrap-around patch next door and the patch
#   below far away.
# - A learned 1-D table can unlearn this; a fixed one cannot.
#
# ## 2 · The 2-D encodings, from formula to code
#
# **Question.** What does each 2-D scheme compute for patch (r, c)? Patches are row-major after
# one class token; *d* is the model width, $d_h$ one head's width.
#
# **Learned row + column tables** (Dosovitskiy et al. 2021). Two learned tables,
# $R \in \mathbb{R}^{H \times d}$ and $C \in \mathbb{R}^{W \times d}$, and patch (r, c) gets
#
# $$\begin{aligned} p_{(r,c)} &= R_r + C_c && \text{(added), or}\\
# p_{(r,c)} &= [\,R_r \,\|\, C_c\,] && \text{(concatenated, each } d/2\text{ wide).} \end{aligned}$$
#
# Section 4's "2-D learnable" is the added form, $(H + W)\,d$ numbers against $H W d$ for a 1-D
# table (ViT's Appendix D.4 tried the concatenated one).

# %% tags=["nbval-check-output"]
def row_col_table(
    row: torch.Tensor, col: torch.Tensor, mode: str = "add"
) -> torch.Tensor:
    """Patch (r, c) gets row[r] + col[c] ("add") or [row[r] | col[c]]
    ("concat"): (H*W, dim)."""
    h, w = len(row), len(col)
    r = row[:, None, :].expand(
        h, w, -1
    )  # (H, W, dim): row r repeated along the row
    c = col[None, :, :].expand(
        h, w, -1
    )  # (H, W, dim): column c repeated down the column
    grid = r + c if mode == "add" else torch.cat([r, c], dim=-1)
    return grid.reshape(h * w, -1)  # row-major: patch (r, c) is row r * W + c


row_t, col_t, no_prefix = (
    torch.randn(G, 8, generator=gen),
    torch.randn(G, 8, generator=gen),
    torch.zeros(0, 8),
)
assert_close(
    row_col_table(row_t, col_t),
    learnable_2d_table(row_t, col_t, no_prefix, mode="add"),
    rtol=0,
    atol=0,
)
assert_close(
    row_col_table(row_t, col_t, "concat"),
    learnable_2d_table(row_t, col_t, torch.zeros(0, 16), mode="concat"),
    rtol=0,
    atol=0,
)
print(
    "row + column table: the inline version equals learnable_2d_table, added"
    " and concatenated"
)

# %% [markdown]
# **2-D sin-cos** (MAE, He et al. 2022). Half the channels encode the row with the sinusoids of
# [01](01_sinusoidal.ipynb), half the column, with $d/4$ frequencies $\omega_k = 10000^{-k/(d/4)}$:
#
# $$p_{(r,c)} = \big[\,\sin(r\omega) \;\|\; \cos(r\omega) \;\|\; \sin(c\omega) \;\|\; \cos(c\omega)\,\big]
# \qquad\text{(four blocks of } d/4) .$$
#
# The library puts the row first, MAE's code the column.

# %% tags=["nbval-check-output"]
def sincos_2d(
    grid_h: int, grid_w: int, d: int, base: float = 10000.0
) -> torch.Tensor:
    """[sin(r w) | cos(r w) | sin(c w) | cos(c w)] per patch: (H*W, d)."""
    omega = base ** (
        -torch.arange(d // 4, dtype=torch.float64) / (d // 4)
    )  # (d/4,)
    r = (
        torch.arange(grid_h).repeat_interleave(grid_w)[:, None] * omega
    )  # (H*W, d/4): row angle
    c = (
        torch.arange(grid_w).repeat(grid_h)[:, None] * omega
    )  # (H*W, d/4): column angle
    return torch.cat([r.sin(), r.cos(), c.sin(), c.cos()], dim=1)


ours = sincos_2d(G, G, 32)
assert_close(
    ours, sincos_2d_table(G, G, 32, dtype=torch.float64), rtol=0, atol=1e-15
)
mae_order = torch.cat([ours[:, 16:], ours[:, :16]], dim=1)  # column half first
patch_01, patch_10 = 1, G  # (0, 1) and (1, 0)
assert_close(
    mae_order[patch_01], ours[patch_10]
)  # MAE's (0, 1) is the library's (1, 0): the axes swap
print(
    "2-D sin-cos: the inline version equals sincos_2d_table (to 1e-15); MAE's"
    " order swaps the halves"
)

# %% [markdown]
# **Axial 2-D RoPE** (Heo et al. 2024). On a grid the $d_h/2$ rotary pairs of a head
# ([03](03_rope.ipynb)) are split between the axes, with frequencies $\theta_k = b^{-k/(d_h/4)}$:
# pair $k$ turns by $c\,\theta_k$ and pair $d_h/4 + k$ by $r\,\theta_k$ ($\oplus$: the rotations
# side by side, one $2\times2$ block per pair),
#
# $$\begin{aligned} q_{(r,c)} &\mapsto \Big(\textstyle\bigoplus_{k} R(c\,\theta_k)\Big) \oplus \Big(\textstyle\bigoplus_{k} R(r\,\theta_k)\Big)\; q,\\
# \text{so}\quad \langle \tilde q_{(r,c)}, \tilde k_{(r',c')}\rangle &\text{ depends only on } (r - r',\, c - c') . \end{aligned}$$
#
# The **first** half of the pairs turns with the **column**, as in Heo et al.'s
# `compute_axial_cis`. The class token sits at (0, 0), never rotated. The base $b$ is 100, Heo
# et al.'s default (`theta=100.0`): the slowest pair turns by
# $\theta_{\min} = b^{-(d_h/4 - 1)/(d_h/4)}$ per patch, and offsets here reach 3 patches:

# %% tags=["nbval-check-output"]
head_dim, max_offset = 8, G - 1
for base in (100.0, 10000.0):
    theta = base ** (-torch.arange(head_dim // 4) / (head_dim // 4))
    print(
        f"base {base:>7.0f}: frequencies {theta.numpy().round(3)}, the slowest"
        f" pair turns at most {max_offset * theta[-1]:.3f} rad across the grid"
    )
assert max_offset * 10000.0**-0.5 < 0.05 < 0.2 < max_offset * 100.0**-0.5

# %% [markdown]
# With base 10000 the slowest pair turns 0.03 rad across the whole grid: it carries no position.
# The implementation, in the library's "half" pair layout (pair $i$ is $(x_i, x_{i + d_h/2})$):

# %% tags=["nbval-check-output"]
def axial_rope(
    x: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor, base: float = 100.0
) -> torch.Tensor:
    """x (..., seq, d_h) turned by axial 2-D RoPE at (rows, cols) (seq,):
    column pairs first."""
    n = x.shape[-1] // 4
    theta = base ** (-torch.arange(n, dtype=torch.float32) / n)  # (d_h/4,)
    angles = torch.cat(
        [cols[:, None] * theta, rows[:, None] * theta], dim=1
    )  # (seq, d_h/2): x first
    x1, x2 = x[..., : 2 * n], x[..., 2 * n :]  # the two halves of every pair
    cos, sin = angles.cos(), angles.sin()
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


positions = torch.arange(1 + G * G)[None]  # class token, then 16 patches
tok_rows, tok_cols = (
    t[0] for t in grid_coordinates(positions, G, G, n_prefix=1)
)
q, k = torch.randn(2, 1, 1, 1 + G * G, head_dim, generator=gen)
axial = AxialRoPE2D(head_dim, G, G, n_prefix=1)  # base 100
assert_close(
    axial.rotate_qk(q, k, positions)[0], axial_rope(q, tok_rows, tok_cols)
)
print("axial 2-D RoPE: the inline version equals AxialRoPE2D")

# %% [markdown]
# **Mixed 2-D RoPE** (Heo et al. 2024). Every pair $i$ of head $h$ turns by a *learned* mix of
# both axes:
#
# $$\phi_{h,i}(r, c) = c\, f^{x}_{h,i} + r\, f^{y}_{h,i}, \qquad f \in \mathbb{R}^{2 \times \text{heads} \times d_h/2}\ \text{learned} ,$$
#
# a frequency along any direction of the image plane. They start along two orthogonal directions
# per head (Heo et al.'s `init_random_2d_freqs`) and are trained: **mixed RoPE is a learned
# encoding**. Axial RoPE is
# the special case $f^x = (\theta, 0)$, $f^y = (0, \theta)$.

# %% tags=["nbval-check-output"]
def mixed_rope(
    x: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor, freqs: torch.Tensor
) -> torch.Tensor:
    """x (batch, heads, seq, d_h) turned by mixed 2-D RoPE;
    freqs (2, heads, d_h/2), x component first."""
    angles = (
        cols[None, :, None] * freqs[0][:, None, :]
        + rows[None, :, None] * freqs[1][:, None, :]
    )  # (heads, seq, d_h/2)
    x1, x2 = x.chunk(2, dim=-1)
    cos, sin = angles.cos(), angles.sin()
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


q4, k4 = torch.randn(2, 1, 4, 1 + G * G, head_dim, generator=gen)
mixed = MixedRoPE2D(head_dim, 4, G, G, n_prefix=1)
assert_close(
    mixed.rotate_qk(q4, k4, positions)[0],
    mixed_rope(q4, tok_rows.float(), tok_cols.float(), mixed.freqs.detach()),
)
theta = axial.inv_freq
axis_aligned = torch.stack(
    [torch.cat([theta, 0 * theta]), torch.cat([0 * theta, theta])]
)[:, None].expand(2, 4, -1)
assert_close(
    mixed_rope(q4, tok_rows.float(), tok_cols.float(), axis_aligned),
    axial_rope(q4, tok_rows, tok_cols),
)
print(
    "mixed 2-D RoPE: the inline version equals MixedRoPE2D"
    f" ({mixed.freqs.numel()} learned frequencies); with axis-aligned"
    " frequencies it is axial RoPE"
)

# %% [markdown]
# **The axis convention, drawn.** The angle of AxialRoPE2D at every patch: pair 0 changes from
# column to column, pair 2 from row to row.

# %% tags=["nbval-check-output"]
unit = torch.cat(
    [torch.ones(head_dim // 2), torch.zeros(head_dim // 2)]
).expand(1, 1, 1 + G * G, head_dim)
turned = axial.rotate_qk(unit, unit, positions)[0][0, 0]
angles = torch.atan2(
    turned[:, head_dim // 2 :], turned[:, : head_dim // 2]
)  # (tokens, 4 pairs)
fig, axes = plt.subplots(1, 2, figsize=(6.5, 3.0), layout="constrained")
for ax, pair, what in zip(
    axes,
    (0, 2),
    ("first half: turns with the column", "second half: turns with the row"),
    strict=True,
):
    heatmap(
        ax,
        angles[1:, pair].reshape(G, G).numpy(),
        f"pair {pair} ({what.split(':')[0]}):\n{what.split(': ')[1]}",
        "column c",
        "row r",
        "angle (rad)",
    )
    ax.set_xticks(range(G))
    ax.set_yticks(range(G))
fig.suptitle("Axial 2-D RoPE, Heo et al.'s order (base 100, head_dim 8)")
plt.show()
print(
    "patch (0, 1):",
    angles[1 + 1].numpy().round(3),
    "  patch (1, 0):",
    angles[1 + G].numpy().round(3),
)
assert (angles[1 + 1, :2] != 0).all() and (
    angles[1 + 1, 2:] == 0
).all()  # a column step turns the first half
assert (angles[1 + G, :2] == 0).all() and (
    angles[1 + G, 2:] != 0
).all()  # a row step the second half

# %% [markdown]
# Loaded into code with the other order, a checkpoint sees every image transposed (section 4).
#
# **Takeaway**
# - Sin-cos splits the channels between the axes, axial RoPE the rotary pairs; mixed RoPE learns
#   a direction per pair.
# - The order of the halves is a convention (MAE and Heo et al.: column first); a short grid
#   needs a small RoPE base.

# %% [markdown]
# ## 3 · Two data sets: real digits and a task only position can solve
#
# **Question.** What do the models train on, and how well can a model do that sees only the bag
# of patches?
#
# *Digits.* The UCI 8x8 handwritten digits (1,797 images, in `data/`), cut into 2x2-pixel
# patches: a 4x4 grid of 16 tokens.
#
# *Relative direction* (`RelativeDirection`). Two marked cells A (channel 0) and B (channel 1)
# on a grid of 1x1 patches, B at offset (Δr, Δc) from A, rows growing downwards. The label is
# the **dominant axis** and its sign:
#
# $$\text{label} = \begin{cases} \text{right / left} & |\Delta c| > |\Delta r|,\ \text{by the sign of } \Delta c\\
# \text{below / above} & |\Delta r| > |\Delta c|,\ \text{by the sign of } \Delta r \end{cases}$$
#
# Ties (the diagonals) are never drawn, which leaves 184 of the 240 ordered pairs. Every image
# holds the same bag of patches, so the exact bag-of-patches ceiling is 1/4.
#
# *Held out.* Eight of the 36 offsets, (1, 2) and (1, 3) under quarter turns, are never shown in
# training. The model trains on 148 images and is tested on the 36 others: new (A, B)
# combinations at unseen offsets, though their mirror images and every cell were seen.

# %% tags=["nbval-check-output"]
x_train, y_train = load_digits("train")
x_test, y_test = load_digits("test")
task = RelativeDirection(G, G)
cells, dir_labels = task.pairs()
HELD_OUT = [
    (1, 2),
    (2, -1),
    (-1, -2),
    (-2, 1),
    (1, 3),
    (3, -1),
    (-1, -3),
    (-3, 1),
]  # two offsets, each turned 4 ways
(train_cells, train_labels), (held_cells, held_labels) = task.split(HELD_OUT)
train_images, held_images = task.render(train_cells), task.render(held_cells)
ceiling = task.bag_of_patches_ceiling()
n_offsets = len(torch.unique(task.offsets(cells), dim=0))
print(
    f"digits: {len(y_train)} train, {len(y_test)} test images of"
    f" {tuple(x_train.shape[1:])} pixels"
)
print(
    f"relative direction on a {G}x{G} grid: {len(dir_labels)} distinct images"
    f" ({n_offsets} offsets), class counts"
    f" {torch.bincount(dir_labels).tolist()}, bag-of-patches ceiling"
    f" {ceiling:.4f}"
)
print(
    f"split by offset: {len(train_labels)} training images"
    f" {torch.bincount(train_labels).tolist()}, {len(held_labels)} held out"
    f" {torch.bincount(held_labels).tolist()} (right, left, below, above)"
)

# %% [markdown]
# Every offset B can have from A, coloured by its label (grey: a tie; a cross: held out), and a
# few images, titled with B's offset.

# %% tags=["nbval-check-output"]
offset_label = np.full((2 * G - 1, 2 * G - 1), np.nan)
for (dr, dc), label in zip(
    task.offsets(cells).tolist(), dir_labels.tolist(), strict=True
):
    offset_label[dr + G - 1, dc + G - 1] = label
fig = plt.figure(figsize=(7.5, 4.2), layout="constrained")
left, right = fig.subfigures(1, 2, width_ratios=[1, 1.25])
ax = left.subplots()
cmap = plt.matplotlib.colors.ListedColormap(COLORS[:4])
cmap.set_bad("0.85")
ax.imshow(
    offset_label,
    cmap=cmap,
    vmin=-0.5,
    vmax=3.5,
    extent=(-G + 0.5, G - 0.5, G - 0.5, -G + 0.5),
)
for dr, dc in HELD_OUT:
    ax.scatter(dc, dr, marker="x", s=60, color="white", linewidth=2)
ax.scatter(0, 0, marker="o", s=80, color="black")
for name, (dr, dc) in zip(
    task.CLASSES, [(0, 2.2), (0, -2.2), (2.2, 0), (-2.2, 0)], strict=True
):
    ax.text(
        dc,
        dr + (0.55 if name in ("right", "left") else 0),
        name,
        ha="center",
        va="center",
        color="white",
        fontsize=9,
        fontweight="bold",
    )
ax.set_xticks(range(-G + 1, G))
ax.set_yticks(range(-G + 1, G))
ax.set_xlabel("column offset Δc (patches)")
ax.set_ylabel("row offset Δr (patches, down)")
ax.set_title(
    "label of B at (Δr, Δc) from A (dot)\ngrey: tie, never drawn; x: held out"
)
samples = right.subplots(2, 3)
shown = torch.randperm(
    len(dir_labels), generator=torch.Generator().manual_seed(1)
)[:6]
for ax, j in zip(samples.flat, shown.tolist(), strict=True):
    img = task.render(cells[j : j + 1])[0]
    ax.imshow(
        torch.stack([img[0], torch.zeros(G, G), img[1]], dim=-1).numpy()
    )  # A red, B blue
    dr, dc = task.offsets(cells[j : j + 1])[0].tolist()
    ax.set_title(
        f"{task.CLASSES[dir_labels[j]]}\nΔr={dr:+d}, Δc={dc:+d}", fontsize=9
    )
    ax.set_xticks([])
    ax.set_yticks([])
right.suptitle("images: A red, B blue; title: label, offset", fontsize=10)
plt.show()

# %% [markdown]
# **Check.** Ceiling 1/4, balanced classes, no held-out offset in training.

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
assert (
    ceiling == 0.25
    and torch.bincount(dir_labels).unique().numel() == 1
    and len(dir_labels) == 184
)
assert (
    torch.bincount(train_labels).unique().numel() == 1
    and torch.bincount(held_labels).unique().numel() == 1
)
assert not {tuple(o) for o in task.offsets(train_cells).tolist()} & set(
    HELD_OUT
)
assert (
    x_train.shape == (1300, 8, 8)
    and len(y_test) == 497
    and 0 <= x_train.min()
    and x_train.max() <= 1
)
checked(
    "ceiling 1/4, balanced classes, no held-out offset in training,"
    " digit split sizes"
)

# %% tags=["nbval-check-output"]
with tempfile.TemporaryDirectory() as tmp:
    bad = Path(tmp) / DIGITS_FILE
    shutil.copy(shipped_file(DIGITS_FILE, DIGITS_SHA256), bad)
    corrupted = bytearray(bad.read_bytes())
    corrupted[1000] ^= 1  # one bit flipped
    bad.write_bytes(bytes(corrupted))
    try:
        load_digits(data_dir=Path(tmp))
        raise AssertionError("a corrupted file was accepted")
    except ValueError as err:
        print("ValueError:", str(err).replace(tmp, "<tmp>")[:150], "...")
        assert DIGITS_FILE in str(err) and DIGITS_SHA256 in str(err)

# %% [markdown]
# **Takeaway**
# - The label is the axis along which B is farther from A; any model blind to position is stuck
#   at exactly 25%.
# - The held-out test asks for unseen offsets, not memory of the 148 training images.
#
# ## 4 · A tiny ViT with eight position schemes
#
# **Question.** Which encodings let a tiny ViT solve the two tasks, on images it has not seen?
#
# The model: a patch embedding (`PatchEmbed`, plus a class token), one pre-LN Transformer layer
# (d_model = 32, 4 heads), and a classifier on the class token. Only the scheme (`vit_scheme`)
# changes between runs:
#
# | scheme | where | what it knows | learned? |
# |---|---|---|---|
# | none | - | a bag of patches | - |
# | 1-D learnable (ViT) | added | a vector per index | yes |
# | 1-D sinusoidal | added | the row-major index | no |
# | 2-D learnable | added | row + column vectors | yes |
# | 2-D sin-cos (MAE) | added | row and column channels | no |
# | axial 2-D RoPE | rotates q, k | column pairs, row pairs | no |
# | mixed 2-D RoPE | rotates q, k | a learned direction per pair | yes |
# | PEG (CPVT) | added, from the tokens | a 3x3 depthwise convolution | yes |
#
# Here PEG acts before the one block; CPVT applies it after the first.
#
# AdamW, batches of 64, learning rate 5e-3: 150 steps on the 1,300 training digits (tested on
# 497), 200 steps on the 148 direction images (tested on the 36 held out); seeds 0, 1, 2 for
# every scheme.

# %% tags=["nbval-check-output"]
D_MODEL, N_HEADS, SEEDS = 32, 4, (0, 1, 2)
STEPS = {"digits": 150, "direction": 200}
TASKS = {
    # name: (patch size, channels, classes, training data,
    #        {split: (inputs, labels)})
    "digits": (
        2,
        1,
        10,
        (x_train, y_train),
        {"train": (x_train, y_train), "test": (x_test, y_test)},
    ),
    "direction": (
        1,
        2,
        4,
        (train_images, train_labels),
        {
            "train": (train_images, train_labels),
            "test": (held_images, held_labels),
        },
    ),
}


def make_vit(
    task_name: str, scheme_name: str, grid: int = G
) -> TinyTransformer:
    patch, channels, classes = TASKS[task_name][:3]
    scheme = vit_scheme(scheme_name, D_MODEL, N_HEADS, grid, grid, n_prefix=1)
    return TinyTransformer(
        None,
        classes,
        D_MODEL,
        N_HEADS,
        n_layers=1,
        scheme=scheme,
        pool="first",
        embed=PatchEmbed(patch, D_MODEL, channels, n_prefix=1),
    )


def run(
    task_name: str, scheme_name: str, seed: int
) -> tuple[TinyTransformer, dict[str, float]]:
    g = seed_everything(seed)
    model = make_vit(task_name, scheme_name)
    train(
        model,
        TASKS[task_name][3],
        STEPS[task_name],
        lr=5e-3,
        generator=g,
        desc=None,
    )
    return model, {
        split: accuracy(model, *data)
        for split, data in TASKS[task_name][4].items()
    }


def run_all(task_name: str, schemes=VIT_SCHEMES, seeds=SEEDS) -> list[dict]:
    """Train every scheme with every seed on one task (side by side:
    `run_each`); keep the models, return one row per run."""
    setups = list(itertools.product(schemes, seeds))
    rows = []
    for (scheme_name, seed), (model, acc) in zip(
        setups,
        run_each(
            lambda setup: run(task_name, *setup),
            setups,
            desc=f"{task_name}: scheme x seed",
        ),
    ):
        models[task_name, scheme_name, seed] = model
        rows.append(
            {"task": task_name, "scheme": scheme_name, "seed": seed, **acc}
        )
    return rows


models = {}
direction_rows = run_all("direction")

# %% tags=["nbval-check-output"]
held_std = pd.DataFrame(direction_rows).groupby("scheme")["test"].std()
UNSETTLED = [n for n in VIT_SCHEMES if held_std[n] > 0.1]
print(f"held-out std over seeds {SEEDS} above 0.1: {UNSETTLED}")
results = pd.DataFrame(direction_rows + run_all("digits"))


# %% tags=["nbval-check-output"]
def summary(
    df: pd.DataFrame,
    column: str,
    by: str | list[str] = "scheme",
    order=VIT_SCHEMES,
) -> pd.DataFrame:
    out = df.groupby(by, sort=False)[column].agg(
        ["mean", "std", "min", "max", "count"]
    ).rename(columns={"count": "seeds"})
    return out.reindex(order) if order is not None else out


def seeds_of(df: pd.DataFrame, column: str, **where) -> list[float]:
    """The per-seed values of ``column`` in the rows of ``df`` matching
    ``where`` (column=value)."""
    pick = np.logical_and.reduce([df[k] == v for k, v in where.items()])
    return df.loc[pick, column].tolist()


direction = results[results.task == "direction"]
digits = results[results.task == "digits"]
dir_table = pd.concat(
    {
        "train (148 images)": summary(direction, "train"),
        "held out (36 images)": summary(direction, "test"),
    },
    axis=1,
)
print(
    "direction task: accuracy over seeds (mean, sample std, min, max,"
    " number of seeds)"
)
display(dir_table.round(2))

# %% tags=["nbval-check-output"]
fig, axes = plt.subplots(
    1, 2, figsize=(7.5, 3.6), sharey=True, layout="constrained"
)
for ax, (name, df) in zip(
    axes,
    {
        "direction, held-out offsets": direction,
        "digits, test set": digits,
    }.items(),
    strict=True,
):
    sns.stripplot(
        df,
        x="test",
        y="scheme",
        order=VIT_SCHEMES,
        ax=ax,
        color=COLORS[0],
        size=5,
        jitter=0.15,
    )
    sns.pointplot(
        df,
        x="test",
        y="scheme",
        order=VIT_SCHEMES,
        ax=ax,
        color="black",
        linestyle="none",
        marker="|",
        markersize=14,
        errorbar=None,
    )
    ax.set_title(name)
    ax.set_xlabel("accuracy (dots: seeds, bar: mean)")
    ax.set_xlim(0, 1.02)
    ax.grid(axis="x", alpha=0.3)
axes[0].axvline(ceiling, color="0.4", linestyle=":")
axes[0].set_ylabel("position scheme")
fig.suptitle(
    "Accuracy on images not seen in training (every seed: 3 per scheme)"
)
plt.show()

# %% [markdown]
# **Reading the results.** By the series' rule ([02](02_learnable.ipynb)); *not separated*
# means the seeds cannot tell, often because they scatter, not that the means are close. The
# floors: the model without position, the bag of patches (exact, direction task) or the most
# frequent training label (digits; it sees no input, and its label 1 is under one test image in
# ten, hence below chance), chance, and a **linear readout**: a logistic regression on the raw
# pixels, whose fixed weight per pixel gives it absolute position.

# %% tags=["nbval-check-output"]
def held(
    scheme: str, split: str = "test", df: pd.DataFrame = direction
) -> list[float]:
    return seeds_of(df, split, scheme=scheme)


ropes = ["axial RoPE", "mixed RoPE"]
with_position = [n for n in VIT_SCHEMES if n != "none"]
print(
    f"direction, held out: RoPEs >= {min(min(held(r)) for r in ropes):.2f} in"
    f" every seed; PEG {np.mean(held('PEG', 'train')):.2f} on its training"
    f" images, {np.mean(held('PEG')):.2f} held out; 1-D sinusoid"
    f" {np.mean(held('1-D sinusoidal')):.2f}"
)
stalled = {n: sum(a < 0.9 for a in held(n, "train")) for n in with_position}
print(
    "seeds that do not fit their 148 training images (train < 0.9): "
    + ", ".join(f"{n} {k} of {len(held(n))}" for n, k in stalled.items() if k)
)
print(
    f"digits: bag of patches {np.mean(held('none', df=digits)):.2f}; schemes"
    " with position"
    f" {min(np.mean(held(n, df=digits)) for n in with_position):.2f} to"
    f" {max(np.mean(held(n, df=digits)) for n in with_position):.2f}, no"
    " ordering among them by the rule"
)
print("2-D sin-cos, held out:",
      compare(held("2-D sin-cos"), held("1-D sinusoidal"),
              names=("2-D sin-cos", "the 1-D sinusoid")))
train_offsets = task.offsets(train_cells).abs().amax(-1)
print(f"training images whose B is more than one patch from A:"
      f" {(train_offsets > 1).sum().item()} of {len(train_offsets)}")

# %% tags=["nbval-check-output"]
print("direction task, held-out offsets:")
dir_floors = with_floors(
    {n: held(n) for n in with_position},
    [no_position(held("none")),
     fixed("bag of patches", ceiling, "exact: every image, the same bag"),
     chance(4),
     linear_readout(train_images, train_labels, held_images, held_labels)],
    metric="held-out accuracy")
print("\ndigits, test set:")
digit_floors = with_floors(
    {n: held(n, df=digits) for n in with_position},
    [no_position(held("none", df=digits)), majority(y_train, y_test),
     chance(10), linear_readout(x_train, y_train, x_test, y_test)],
    metric="test accuracy")

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
assert set(held("none") + held("none", "train")) == {ceiling}  # (1)
for rope in ropes:  # (2)
    assert min(held(rope)) > 0.95
    assert clearly_ahead(held(rope), held("PEG")) and clearly_ahead(
        held(rope), held("1-D sinusoidal")
    )
assert set(UNSETTLED) == {"1-D learnable", "2-D learnable", "2-D sin-cos"}
assert {n for n, k in stalled.items() if k} == set(UNSETTLED) | {
    "1-D sinusoidal"} and stalled["1-D sinusoidal"] == 3 == 1 + stalled[
    "2-D learnable"] and stalled["2-D sin-cos"] == 1  # (takeaway)
assert all(len(held(n)) == 3 for n in VIT_SCHEMES)
LINEAR = "linear readout"
for n in ropes + ["PEG"]:  # the floors of the direction task but one
    assert dir_floors.beats(n) == [f.name for f in dir_floors.floors][:3]
for n in ropes:  # the RoPEs tie the linear readout
    assert not dir_floors.verdict(n, LINEAR).separated
for n in with_position:  # and of the digits: none ahead of the linear readout
    assert len(digit_floors.beats(n)) == 3
    assert not digit_floors.verdict(n, LINEAR).a_ahead
assert sum(digit_floors.verdict(n, LINEAR).b_ahead for n in with_position) > 3
LEARNED_TABLES = ["1-D learnable", "2-D learnable"]
assert not any(  # (3)
    compare(held(a), held(b)).separated
    for a in LEARNED_TABLES
    for b in with_position
    if b != a
)
assert min(held("PEG", "train")) > 0.95 and clearly_ahead(
    held("PEG", "train"), held("PEG")
)  # (4)
assert clearly_ahead(held("PEG"), held("1-D sinusoidal"))
assert (
    min(min(held(n, df=digits)) for n in with_position)
    > max(held("none", df=digits)) + 0.05
)  # (5)
assert not any(
    clearly_ahead(held(a, df=digits), held(b, df=digits))
    for a in with_position
    for b in with_position
)  # (6)
checked("every ordering in the reading of section 4 holds by the rule")

# %% [markdown]
# **Takeaway**
# - Held out, after 200 steps, only the two RoPEs are right in every seed (whether the others are
#   slower or unable is not tested); read from an unrotated class token, RoPE acts here as an
#   *absolute* code (§5).
# - The RoPEs, PEG, 2-D sin-cos and the 1-D sinusoid beat every floor of the direction task but
#   the linear readout; the learned tables are not separated from the floors.
# - The linear readout gets every held-out offset right and the RoPEs only tie it: the held-out
#   offsets cannot tell a rule about offsets from an absolute code. On the digits no scheme is
#   ahead of it and most are behind; the 150-step budget is one untested explanation.
# - PEG fits its training images but is clearly lower held out (0.71); why is not tested here
#   (not its 3x3 window alone: in most training images too B is over one patch from A).
# - Learned tables stall in some seeds, 2-D sin-cos in one; the 1-D sinusoid, the lowest held
#   out (0.54), fits its training images in no seed.
# - On the digits, no position gives 0.42; every seed with position beats every
#   seed without; the schemes with position are not separated from each other.

# %% [markdown]
# **A checkpoint read with the other axis order** (section 2): the axial-RoPE model of seed 0,
# loaded into code that turns the first half of the pairs with the *row*.

# %% tags=["nbval-check-output"]
t_index = (
    torch.arange(G * G).reshape(G, G).T.reshape(-1)
)  # patch j of the transposed image
order = torch.cat(
    [torch.zeros(1, dtype=torch.long), 1 + t_index]
)  # class token first
row_first = axial_rope(q, tok_cols, tok_rows)  # first half turned by the row
assert_close(
    axial.rotate_qk(q[..., order, :], k[..., order, :], positions)[0],
    row_first[..., order, :],
)
all_images = task.render(cells)
swapped_label = torch.tensor([2, 3, 0, 1])[
    dir_labels
]  # right <-> below, left <-> above
model = models["direction", "axial RoPE", 0]
with torch.no_grad():
    as_trained = model(all_images).argmax(-1)
    wrong_order = model(all_images.transpose(-1, -2)).argmax(-1)
acc_right, acc_wrong = (as_trained == dir_labels).float().mean().item(), (
    wrong_order == dir_labels
).float().mean().item()
acc_swapped = (wrong_order == swapped_label).float().mean().item()
print(
    f"axial RoPE, seed 0, all 184 images: read as trained {acc_right:.2f}; read"
    f" with the other axis order {acc_wrong:.2f}, and {acc_swapped:.2f} of its"
    " answers are the transposed direction"
)
assert acc_wrong < ceiling < 0.75 < acc_swapped

# %% [markdown]
# **Takeaway**
# - Read with the other axis order, a model right on all 184 images is wrong on all of them:
#   every answer is the transposed direction.
# - Nothing fails loudly. Check a RoPE-ViT checkpoint's axis order and its pair layout (Heo et
#   al.: interleaved pairs, `layout="interleaved"`).
#
# ## 5 · What the models learned
#
# **Question.** Does a learned table discover the grid by itself? And where does a trained model look?
#
# Each small square is one patch's map: the cosine similarity of its learned position vector
# with every other patch's, placed at that patch (the dot), as in Dosovitskiy et al. 2021, Fig. 7;
# seed 0, both tasks.

# %% tags=["nbval-check-output"]
def mosaic(sim: torch.Tensor) -> np.ndarray:
    """(H, W, H, W) similarity maps -> one image of H x W small maps,
    a blank line between maps."""
    h, w = sim.shape[:2]
    out = np.full((h * (h + 1) - 1, w * (w + 1) - 1), np.nan)
    for r in range(h):
        for c in range(w):
            out[
                r * (h + 1) : r * (h + 1) + h, c * (w + 1) : c * (w + 1) + w
            ] = sim[r, c].numpy()
    return out


def learned_table(model: TinyTransformer) -> torch.Tensor:
    return (
        model.scheme.weight
        if hasattr(model.scheme, "weight")
        else model.scheme.table()
    )


LEARNED = ["1-D learnable", "2-D learnable"]
fig, axes = plt.subplots(2, 2, figsize=(7.5, 6.8), layout="constrained")
query_r, query_c = np.meshgrid(np.arange(G), np.arange(G), indexing="ij")
for row, task_name in enumerate(TASKS):
    for col, scheme_name in enumerate(LEARNED):
        sim = grid_similarity(
            learned_table(models[task_name, scheme_name, 0]), G, G, n_prefix=1
        )
        ax = axes[row, col]
        heatmap(
            ax,
            mosaic(sim),
            f"{task_name}: {scheme_name}",
            "patch column (one map per patch)",
            "patch row",
            "cosine similarity",
            center=True,
        )
        ax.scatter(
            (query_c * (G + 1) + query_c).ravel(),
            (query_r * (G + 1) + query_r).ravel(),
            s=10,
            color="black",
            marker="o",
        )
        ax.set_xticks([])
        ax.set_yticks([])
fig.suptitle(
    "Position similarity of learned tables after training (seed 0; dot: the"
    " query patch)"
)
plt.show()

# %% [markdown]
# **Check.** "Knows the grid": mean similarity of grid neighbours minus that of patches three or
# more steps apart, per seed.

# %% tags=["nbval-check-output"]
def neighbour_contrast(sim: torch.Tensor) -> float:
    h, w = sim.shape[:2]
    r, c = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
    dist = (r.reshape(-1, 1) - r.reshape(1, -1)).abs() + (
        c.reshape(-1, 1) - c.reshape(1, -1)
    ).abs()
    flat = sim.reshape(h * w, h * w)
    return (flat[dist == 1].mean() - flat[dist >= 3].mean()).item()


contrast = pd.DataFrame(
    [
        {
            "task": t,
            "scheme": n,
            "seed": seed,
            "contrast": neighbour_contrast(
                grid_similarity(
                    learned_table(models[t, n, seed]), G, G, n_prefix=1
                )
            ),
        }
        for t in TASKS
        for n in LEARNED
        for seed in SEEDS
    ]
)
contrast_table = contrast.groupby(["task", "scheme"])["contrast"].agg(
    ["mean", "std", "min", "max"]
)
display(contrast_table.round(2))
one_d = contrast[contrast.scheme == "1-D learnable"]
assert (
    min(seeds_of(one_d, "contrast", task="direction")) > 0.5
    and max(seeds_of(one_d, "contrast", task="digits")) < 0.2
)
assert clearly_ahead(
    seeds_of(one_d, "contrast", task="direction"),
    seeds_of(one_d, "contrast", task="digits"),
)

# %% [markdown]
# **Takeaway**
# - On the direction task the 1-D table learns clear 2-D neighbourhoods in every seed (seeds 0-2,
#   contrast 1.08); on the digits it shows none (-0.08), yet its models reach 0.80 (§4).
# - The 2-D table has the grid built in: its maps are row and column bands.
#
# The axial-RoPE model's attention (seed 0) on one held-out image, mean over heads, with the
# class token and patch A as queries. Only the class token's row reaches the answer.

# %% tags=["nbval-check-output"]
j = 0
weights = model.attention_weights(held_images[j : j + 1])[0][0].mean(
    0
)  # layer 0, image 0: (tokens, tokens)
a_cell, b_cell = held_cells[j].tolist()
fig, axes = plt.subplots(1, 2, figsize=(7.0, 3.2), layout="constrained")
for ax, (name, q_tok) in zip(
    axes,
    {
        "class token": 0,
        f"patch A {divmod(a_cell, G)}\n(not used)": 1 + a_cell,
    }.items(),
    strict=True,
):
    heatmap(
        ax,
        weights[q_tok, 1:].reshape(G, G).numpy(),
        f"attention of the {name}",
        "column",
        "row",
        "weight",
    )
    ax.set_xticks(range(G))
    ax.set_yticks(range(G))
    ax.scatter(
        [a_cell % G, b_cell % G],
        [a_cell // G, b_cell // G],
        marker="o",
        s=120,
        facecolor="none",
        edgecolor="white",
        linewidth=2,
    )
fig.suptitle(
    f"Axial RoPE, held-out image: B is {task.CLASSES[held_labels[j]]} of A"
    " (circles: A and B)"
)
plt.show()
print(
    f"class token: weight on A {weights[0, 1 + a_cell]:.3f}, on B"
    f" {weights[0, 1 + b_cell]:.3f}, uniform would be {1 / 17:.3f}"
)
# every held-out image, every seed: the class token's weight on A and B
on_a_b = []
for seed in SEEDS:
    vit = models["direction", "axial RoPE", seed]
    w = vit.attention_weights(held_images)[0].mean(1)  # (images, q, k)
    on_a_b.append(w[:, 0].gather(1, 1 + held_cells).sum(-1).mean().item())
print("class token's weight on A and B, mean over the 36 held-out images,"
      f" seeds {SEEDS}: {[round(x, 2) for x in on_a_b]} (uniform: 2/17 ="
      f" {2 / 17:.2f})")
assert min(on_a_b) > 2 * (2 / 17)

# %% [markdown]
# **Takeaway**
# - On unseen images the class token puts far more of its attention on the two marked patches
#   than the 2/17 of uniform attention, in every seed: a measurement, not an explanation of RoPE's held-out accuracy (other schemes are not measured).
# - Those scores compare the unrotated class token with keys turned by each patch's own (r, c):
#   they depend on where A and B are, not on their offset. RoPE uses the offset only where one
#   patch's query meets another's key and that score reaches the output.
#
# ## 6 · Changing the resolution
#
# **Question.** A ViT trained at one image size is often used at a larger one (DeiT: 224 px,
# then 384 px). The patch grid grows; what becomes of each encoding?
#
# The 4x4 models get a 6x6 grid. `regrid_scheme` carries each scheme over:
#
# - learned tables are **resampled** as grids (`resample_grid`, bicubic; the 2-D table per
#   axis), as DeiT does: an interpolation;
# - 2-D sin-cos and the RoPEs use **extrapolated** coordinates 0-5 (as Heo et al.'s RoPE code;
#   for 2-D sin-cos our choice: MAE's code resamples its table), or
#   **interpolated** ones, $r \mapsto r\,(4 - 1)/(6 - 1)$ (`coordinate_scale`), within the
#   trained 0-3, like position interpolation ([06](06_length_extrapolation.ipynb));
# - the 1-D sinusoid keeps its formula (the index now runs to 36), PEG its convolution.
#
# Three tests, zero-shot and after 10 fine-tune steps:
# - *direction* on a larger canvas and *digits* upsampled to 12x12 pixels: shrink the coordinates
#   by 0.6 and the answer stays right, which favours interpolation (upsampling also changes the
#   patches' content);
# - a **control** with a rule in patch units (`ColumnGap`): is B at least 2 columns right of A?
#   Trained on 4x4 (64 images; tested on 32 others), fine-tuned on 320 6x6 images, tested on 400,
#   with no position, 2-D learnable, 2-D sin-cos and both RoPEs. Interpolation shrinks
#   an offset of 2 columns to 1.2: it should hurt.

# %% tags=["nbval-check-output"]
BIG = 6
scale = coordinate_scale((G, G), (BIG, BIG))
print(
    f"interpolated coordinates of the {BIG} rows:"
    f" {(torch.arange(BIG) * scale[0]).numpy().round(2)} (trained:"
    f" {list(range(G))})"
)
assert scale == (0.6, 0.6)
big_task = RelativeDirection(BIG, BIG)
(big_train_cells, big_train_labels), (big_held_cells, big_held_labels) = (
    big_task.split(HELD_OUT)
)
big_train = (big_task.render(big_train_cells), big_train_labels)
gap, big_gap = ColumnGap(G, G, gap=2), ColumnGap(BIG, BIG, gap=2)
(gap_train, gap_train_y), (gap_test, gap_test_y) = gap.split(
    16, None, torch.Generator().manual_seed(0)
)
(big_gap_train, big_gap_train_y), (big_gap_test, big_gap_test_y) = (
    big_gap.split(200, None, torch.Generator().manual_seed(0))
)
TASKS["column gap"] = (
    1,
    2,
    2,
    (gap.render(gap_train), gap_train_y),
    {
        "train": (gap.render(gap_train), gap_train_y),
        "test": (gap.render(gap_test), gap_test_y),
    },
)
STEPS["column gap"] = 200
GAP_SCHEMES = ["none", "2-D learnable", "2-D sin-cos", "axial RoPE",
               "mixed RoPE"]
gap_results = pd.DataFrame(run_all("column gap", GAP_SCHEMES))
print(
    f"column gap on {G}x{G}: {len(gap_train_y)} training images, held-out"
    f" accuracy on {len(gap_test_y)} over seeds {SEEDS}; at {BIG}x{BIG}:"
    f" {len(big_gap_train_y)} fine-tune images, {len(big_gap_test_y)} tested"
)
display(summary(gap_results, "test", order=GAP_SCHEMES).round(2))

# %%
def upsample(images: torch.Tensor) -> torch.Tensor:
    """(n, 8, 8) -> (n, 12, 12) pixels, bilinear."""
    return F.interpolate(
        images[:, None], size=(12, 12), mode="bilinear", align_corners=False
    )[:, 0]


two_columns = big_gap.column_offsets(big_gap_test) == 2  # 1.2 interpolated
MOVED = {  # task: test inputs and labels at the new size, fine-tuning data
    "direction": (big_task.render(big_held_cells), big_held_labels, big_train),
    "column gap": (
        big_gap.render(big_gap_test),
        big_gap_test_y,
        (big_gap.render(big_gap_train), big_gap_train_y),
    ),
    "digits": (upsample(x_test), y_test, (upsample(x_train), y_train)),
}
VARIANTS = {  # label: (scheme, coordinates)
    "none": ("none", "extrapolate"),
    "1-D learnable, resampled": ("1-D learnable", "extrapolate"),
    "2-D learnable, resampled": ("2-D learnable", "extrapolate"),
    "1-D sinusoid, extrapolated": ("1-D sinusoidal", "extrapolate"),
    "2-D sin-cos, extrapolated": ("2-D sin-cos", "extrapolate"),
    "2-D sin-cos, interpolated": ("2-D sin-cos", "interpolate"),
    "axial RoPE, extrapolated": ("axial RoPE", "extrapolate"),
    "axial RoPE, interpolated": ("axial RoPE", "interpolate"),
    "mixed RoPE, extrapolated": ("mixed RoPE", "extrapolate"),
    "mixed RoPE, interpolated": ("mixed RoPE", "interpolate"),
    "PEG": ("PEG", "extrapolate"),
}
STAGES = [
    f"trained {G}x{G}",
    f"zero-shot {BIG}x{BIG}",
    f"fine-tuned {BIG}x{BIG}",
]
AT_TWO = "zero-shot, offset 2"  # column gap: the pairs exactly 2 columns apart


def moved(setup: tuple) -> dict:
    """One trained model on the larger grid: its accuracy zero-shot and
    after the fine-tune."""
    task_name, variant, seed, model = setup
    inputs, labels, fine_tune_data = MOVED[task_name]
    model.set_scheme(
        regrid_scheme(
            model.scheme,
            (G, G),
            (BIG, BIG),
            n_prefix=1,
            coords=VARIANTS[variant][1],
        )
    )
    out = {STAGES[1]: accuracy(model, inputs, labels)}
    if task_name == "column gap":
        out[AT_TWO] = accuracy(model, inputs[two_columns], labels[two_columns])
    train(
        model,
        fine_tune_data,
        10,
        lr=3e-3,
        generator=torch.Generator().manual_seed(100 + seed),
        desc=None,
    )
    return out | {STAGES[2]: accuracy(model, inputs, labels)}


rows_out = []
for task_name in MOVED:
    setups = [
        (
            task_name,
            variant,
            seed,
            copy.deepcopy(models[task_name, VARIANTS[variant][0], seed]),
        )
        for variant, seed in itertools.product(VARIANTS, SEEDS)
        if task_name != "column gap" or VARIANTS[variant][0] in GAP_SCHEMES
    ]
    trained = pd.concat([results, gap_results])
    for (_, variant, seed, _), acc in zip(
        setups,
        run_each(
            moved, setups, desc=f"{task_name} at {BIG}x{BIG}: variant x seed"
        ),
    ):
        rows_out.append(
            {
                "task": task_name,
                "variant": variant,
                "seed": seed,
                STAGES[0]: seeds_of(
                    trained,
                    "test",
                    task=task_name,
                    scheme=VARIANTS[variant][0],
                    seed=seed,
                )[0],
                **acc,
            }
        )
resized = pd.DataFrame(rows_out)
res_table = pd.concat(
    {
        s: (
            resized.groupby(["task", "variant"], sort=False)[s].agg(
                ["mean", "std"]
            )
        )
        for s in STAGES
    },
    axis=1,
)
print(
    f"test accuracy at {G}x{G} and on the {BIG}x{BIG} grid (mean and std over"
    f" seeds {SEEDS})"
)
display(res_table.round(2))

# %% tags=["nbval-check-output"]
long = resized.melt(
    id_vars=["task", "variant", "seed"],
    value_vars=STAGES[1:],
    var_name="stage",
    value_name="accuracy",
)
fig, axes = plt.subplots(
    1, 3, figsize=(7.5, 5.4), sharey=True, layout="constrained"
)
fig.get_layout_engine().set(wspace=0.08)  # room between the panels' ticks
for ax, task_name in zip(axes, MOVED, strict=True):
    # every seed as a dot, the mean of the seeds as a bar
    where = dict(data=long[long.task == task_name], x="accuracy", y="variant",
                 hue="stage", order=list(VARIANTS), palette=COLORS[:2], ax=ax)
    sns.stripplot(**where, dodge=True, size=4, jitter=0.1, marker="o",
                  legend=False)
    sns.pointplot(**where, dodge=0.4, linestyle="none", markers=["|", "|"],
                  markersize=12, errorbar=None)
    ax.set_title(
        {
            "direction": "direction\n(larger canvas)",
            "column gap": "column gap ≥ 2\n(control)",
            "digits": "digits\n(upsampled)",
        }[task_name],
        fontsize=10,
    )
    ax.set_xlabel("")
    ax.set_xlim(0, 1.02)
    ax.set_xticks([0, 0.5, 1], ["0", "0.5", "1"])
    ax.grid(axis="x", alpha=0.3)
    ax.get_legend().remove()
axes[0].set_ylabel("scheme at the new size")
axes[1].set_xlabel("test accuracy (dots: seeds, bars: means)")
handles, labels_ = axes[1].get_legend_handles_labels()
fig.legend(handles, labels_, loc="outside lower center", ncols=2)
fig.suptitle(f"Models trained on {G}x{G} patches, tested on {BIG}x{BIG}")
plt.show()

# %% [markdown]
# **Reading the results.** By the rule; interpolated against extrapolated coordinates is a
# *paired* comparison (the same trained model, measured two ways).
# - *Digits, zero-shot:* no extrapolated scheme is ahead of the model without position; the
#   resampled tables and the interpolated RoPEs are. The resampled tables are ahead of every
#   extrapolated scheme (1-D learnable of axial RoPE by 0.34, needed 0.33: near the bar, a
#   hypothesis) and not separated from any interpolated one.
# - *Direction and digits:* interpolated coordinates add at least 0.2 zero-shot to every fixed
#   2-D scheme, and put both RoPEs ahead of themselves extrapolated.
# - *Column gap:* zero-shot they add less than on either task above, and none of the three is
#   ahead. On the pairs exactly 2 columns apart (all "yes"), interpolated 2-D sin-cos and mixed
#   RoPE answer "no" in nearly every case, behind their extrapolated selves (axial RoPE in two
#   seeds of three; the resampled 2-D table, an interpolation too, gets 0.16).

# %%
def at(task_name: str, variant: str, stage: str) -> list[float]:
    return seeds_of(resized, stage, task=task_name, variant=variant)


ZS, FT = STAGES[1], STAGES[2]
FIXED = ["2-D sin-cos", "axial RoPE", "mixed RoPE"]
CASES = [("direction", ZS), ("digits", ZS), ("column gap", ZS),
         ("column gap", AT_TWO), ("column gap", FT)]
verdicts = {}
print(f"interpolated against extrapolated coordinates, paired over seeds"
      f" {SEEDS}; '{AT_TWO}': the {two_columns.sum().item()} column-gap"
      " test pairs exactly 2 columns apart")
for (task_name, stage), n in itertools.product(CASES, FIXED):
    verdicts[task_name, stage, n] = v = compare(
        at(task_name, f"{n}, interpolated", stage),
        at(task_name, f"{n}, extrapolated", stage), paired=True,
        names=(f"{n} interpolated", "extrapolated"))
    print(f"{task_name}, {stage}: {v}")

none_zs = at("digits", "none", ZS)
trained_none = np.mean(at("digits", "none", STAGES[0]))
print(f"\ndigits without position: {trained_none:.2f} trained on {G}x{G},"
      f" {np.mean(none_zs):.2f} zero-shot on {BIG}x{BIG}; digits, zero-shot:")
EXTRAPOLATED = [f"{n}, extrapolated" for n in ["1-D sinusoid"] + FIXED]
INTERPOLATED = [f"{n}, interpolated" for n in FIXED]
RESAMPLED = ["1-D learnable, resampled", "2-D learnable, resampled"]
for v in RESAMPLED + INTERPOLATED + EXTRAPOLATED:
    print(compare(at("digits", v, ZS), none_zs, names=(v, "no position")))
for table, v in itertools.product(RESAMPLED, EXTRAPOLATED):
    print(compare(at("digits", table, ZS), at("digits", v, ZS),
                  names=(table, v)))
print(f"column gap, {AT_TWO}, 2-D learnable, resampled:"
      f" {np.mean(at('column gap', '2-D learnable, resampled', AT_TWO)):.2f}")

# %%
ft_floors = {}
for task_name, (inputs, labels, (tune_x, tune_y)) in MOVED.items():
    print(f"\n{task_name}, fine-tuned on {BIG}x{BIG}:")
    ft_floors[task_name] = with_floors(
        {v: at(task_name, v, FT) for v in VARIANTS if v != "none"
         and (task_name != "column gap" or VARIANTS[v][0] in GAP_SCHEMES)},
        [no_position(at(task_name, "none", FT)),
         linear_readout(tune_x, tune_y, inputs, labels),
         chance(int(labels.max()) + 1)],
        metric=f"accuracy, fine-tuned {BIG}x{BIG}")

# %% [markdown]
# Fine-tuned, beside no position (fine-tuned too), chance and a linear readout fitted on the same
# fine-tune data: no scheme is ahead of the readout on the direction task (1.000) or the digits
# (0.964, every scheme behind). On the control (0.900) the resampled 2-D table and the
# interpolated 2-D sin-cos and mixed RoPE are (2-D sin-cos by 0.048, needed 0.045: near the bar).

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
def digits_zs(v: str) -> list[float]:
    return at("digits", v, ZS)


def case(task_name: str, stage: str, names=FIXED) -> list:
    return [verdicts[task_name, stage, n] for n in names]


assert trained_none - np.mean(none_zs) > 0.2  # (1)
assert not any(clearly_ahead(digits_zs(v), none_zs) for v in EXTRAPOLATED)
assert all(clearly_ahead(digits_zs(v), none_zs)  # (2)
           for v in RESAMPLED + INTERPOLATED[1:])
for table in RESAMPLED:
    assert all(clearly_ahead(digits_zs(table), digits_zs(v))
               for v in EXTRAPOLATED)
    assert not any(  # on the direction task too (takeaway)
        compare(at(t, table, ZS), at(t, v, ZS)).separated
        for v in INTERPOLATED for t in ("digits", "direction")
    )
for task_name in ("direction", "digits"):  # (3)
    assert all(v.gap > 0.2 for v in case(task_name, ZS))
    assert all(v.a_ahead for v in case(task_name, ZS, FIXED[1:]))
    assert (  # (4)
        max(v.gap for v in case("column gap", ZS))
        < min(v.gap for v in case(task_name, ZS))
    )
assert not any(v.separated for v in case("column gap", ZS, FIXED[::2]))
for n in FIXED:  # (5)
    below = [a < 0.15 for a in at("column gap", f"{n}, interpolated", AT_TWO)]
    assert sum(below) == (2 if n == "axial RoPE" else 3)
assert all(v.b_ahead for v in case("column gap", AT_TWO, FIXED[::2]))
assert np.mean(at("column gap", "2-D learnable, resampled", AT_TWO)) < 0.3
for t in ("direction", "digits"):  # (7) fine-tuned, against the readout
    assert not any(ft_floors[t].verdict(v, "linear readout").a_ahead
                   for v in ft_floors[t].results)
assert all(ft_floors["digits"].verdict(v, "linear readout").b_ahead
           for v in ft_floors["digits"].results)
assert [v for v in ft_floors["column gap"].results
        if ft_floors["column gap"].verdict(v, "linear readout").a_ahead] == [
    "2-D learnable, resampled", "2-D sin-cos, interpolated",
    "mixed RoPE, interpolated"]
for n in FIXED:  # (6)
    assert all(i > e for i, e in zip(
        at("column gap", f"{n}, interpolated", FT),
        at("column gap", f"{n}, extrapolated", FT), strict=True))
assert sum(v.a_ahead for v in case("column gap", FT)) == 2
checked("every ordering in the reading of section 6 holds by the rule")

# %% [markdown]
# **Takeaway**
# - Where the answer survives rescaling, the resampled tables lead the fixed schemes only against
#   extrapolated coordinates; interpolated, they are not separated.
# - Part of that is built into those tasks: on the control, interpolation adds little zero-shot
#   and calls 2-column pairs "no"; after 10 fine-tune steps interpolation is above extrapolation
#   in every seed of every scheme, ahead by the rule for two of three.
# - Upsampling changes the content too: the digits model without position falls from 0.42 to
#   0.16, the floor for every zero-shot digits number.

# %% [markdown]
# ## 7 · What each scheme costs
#
# **Question.** At this size, how many parameters does each scheme add, and what does it cost
# per forward pass?

# %% tags=["nbval-check-output"]
cost = []
for scheme_name in VIT_SCHEMES:
    model = make_vit("digits", scheme_name)
    pos_params = sum(p.numel() for p in model.scheme.parameters())
    cost.append(
        {
            "scheme": scheme_name,
            "position parameters": pos_params,
            "model parameters": model.num_parameters(),
            "buffers (not trained)": sum(
                b.numel() for b in model.scheme.buffers()
            ),
        }
    )
cost = pd.DataFrame(cost).set_index("scheme")
print("counted on the models (measured):")
display(cost)

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
assert cost.loc["1-D learnable", "position parameters"] == (1 + G * G) * D_MODEL
assert cost.loc["2-D learnable", "position parameters"] == (G + G + 1) * D_MODEL
assert cost.loc["mixed RoPE", "position parameters"] == 2 * N_HEADS * (
    D_MODEL // N_HEADS // 2
)
assert cost.loc["PEG", "position parameters"] == D_MODEL * (3 * 3 + 1)
assert (
    cost.loc[
        ["none", "1-D sinusoidal", "2-D sin-cos", "axial RoPE"],
        "position parameters",
    ]
    == 0
).all()
checked("the parameter counts of section 7 match their formulas")

# %% [markdown]
# Cost per forward pass, counted: the model's FLOPs (`FlopCounterMode`, one digit image) and what
# the scheme adds: an added table (1 + 16) x 32 = 544 additions; a 2-D RoPE 3 x 2 x 16 x 32 =
# 3,072 per layer (3 operations per channel of q and k); PEG's 3x3 convolution
# 2 x 9 x 16 x 32 = 9,216 plus its residual.

# %% tags=["nbval-check-output"]
TOKENS, PATCHES = 1 + G * G, G * G
for scheme_name in VIT_SCHEMES:
    model = make_vit("digits", scheme_name)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(x_test[:1])
    kind = "peg" if scheme_name == "PEG" else model.scheme.kind
    cost.loc[scheme_name, "FLOPs / image (counted)"] = counter.get_total_flops()
    cost.loc[scheme_name, "position ops / image (formula)"] = {
        "none": 0,
        "embedding": TOKENS * D_MODEL,
        "rotary": 3 * 2 * PATCHES * D_MODEL * len(model.blocks),
        "peg": 2 * 9 * PATCHES * D_MODEL + PATCHES * D_MODEL,
    }[kind]
cost = cost.astype(int)
display(cost[["FLOPs / image (counted)", "position ops / image (formula)"]])
counted = cost["FLOPs / image (counted)"]
assert (
    counted.drop("PEG").nunique() == 1
)  # no other scheme changes the matrix products
assert (
    counted["PEG"] - counted["none"] == 2 * 9 * PATCHES * D_MODEL
)  # the counter sees PEG's convolution, as the formula
assert (cost["position ops / image (formula)"] < 0.03 * counted["none"]).all()

# %% [markdown]
# **Takeaway**
# - Position is cheap here: at most 544 parameters of 13,834 and 9,728 operations per image.
# - RoPE's work grows with the number of layers, an added table's does not.

# %% [markdown]
# ## Summary
#
# - A 1-D index makes the end of a row the neighbour of the next row's start (§1); each 2-D
#   scheme is a formula and a few lines of code (§2).
# - Held-out offsets (§4): axial and mixed RoPE right in every seed (the 1-D sinusoid 0.54), and
#   so is a linear readout of the pixels: the test cannot tell an offset rule from an absolute
#   code, which RoPE acts as here (§5). A wrong axis order transposes every answer.
# - Digits (§4): the model without position reaches 0.42; every scheme beats it, none the linear
#   readout, none another after 150 steps.
# - Growing the grid (§6): where the answer survives rescaling, interpolated coordinates are not
#   separated from the resampled tables; on the digits, extrapolated ones are not separated from
#   the model without position, which falls from 0.42 to 0.16 on the new images; on a control in
#   patch units, interpolation errs where predicted. Fine-tuned, no scheme beats a linear readout
#   except on the control.
# - Position costs little: at most 544 parameters of 13,834 (§7).
#
# ### Open-ended experiment · How few offsets can a scheme learn the rule from?
#
# **Question.** Section 4 hides 8 of the 36 offsets. Hide more: at what point does each scheme
# stop generalising the dominant-axis rule, and does the ordering of section 4 survive?
#
# **Starting setup** (paste into a new cell below section 4):
#
# ```python
# HELD_OUT = [(0, 2), (2, 0), (0, -2), (-2, 0), (1, 3), (3, -1), (-1, -3), (-3, 1),
#             (1, 2), (2, -1), (-1, -2), (-2, 1)]              # 12 of 36 offsets, balanced
# (train_cells, train_labels), (held_cells, held_labels) = task.split(HELD_OUT)
# train_images, held_images = task.render(train_cells), task.render(held_cells)
# TASKS["direction"] = (1, 2, 4, (train_images, train_labels),
#                       {"train": (train_images, train_labels), "test": (held_images, held_labels)})
# # then re-run the training cell and the results cell of section 4
# ```
#
# **What to look for.** Scheme by scheme, does held-out accuracy stay near training accuracy or
# fall towards the 0.25 ceiling? Keep the linear readout beside them: staying up is no proof of a
# rule about offsets. Use `compare` before calling any gap an ordering.
#
# ## Exercises
#
# ### Exercise 1 · Design: a 2-D code four numbers wide
# Design `table_4(grid_h, grid_w)`: a fixed `(grid_h * grid_w, 4)` position table (row-major).
# The checker tests properties on three grids: every patch gets its own vector; neighbours are
# more similar (cosine) than patches 3+ steps apart, by more than 0.2 (section 5's contrast); the
# end of a row is closer to the patch below than to the start of the next row (section 1).


# %% tags=["exercise", "nbval-check-output"]
def table_4(grid_h: int, grid_w: int) -> torch.Tensor:
    raise NotImplementedError  # your code here


check_exercise_1(table_4)

# %% [markdown]
# ### Exercise 2 · Predict, then run: the 1-D sinusoid's neighbours
# On section 1's 4x4 grid, how many patches does the 1-D sinusoid rate *strictly* more similar
# to patch (1, 3) than (2, 3), the patch right below it (not counting (1, 3) and (2, 3))? Write
# your prediction into `predicted_count`, then run the cell after it.

# %%
predicted_count = ...  # your prediction: a whole number from 0 to 14

# %% tags=["exercise", "nbval-check-output"]
closer = sim_1d.flatten() > sim_1d[2, 3] + 1e-6  # ties do not count
n_closer = int(closer.sum()) - 1  # (1, 3) itself
check_exercise_2(predicted_count, n_closer)

# %% [markdown]
# ### Exercise 3 · A wide canvas
# On a 3x6 canvas (`RelativeDirection(3, 6)`: 3 rows, 6 columns) the four directions are no
# longer equally frequent. What is the exact bag-of-patches ceiling? Use `pairs()` to count, not
# `bag_of_patches_ceiling()`.

# %% tags=["exercise", "nbval-check-output"]
my_ceiling = ...  # a number between 0 and 1

check_exercise_3(my_ceiling)

# %% [markdown]
# ### Exercise 4 · Explain why: a readout from the patches
# Keep section 4's one-layer ViT and its RoPE, but drop the class token: the classifier reads the
# mean of the patch tokens after the layer. Can the A-B offset now reach the classifier?
#
# - **(a)** Yes: each patch's output mixes values with weights set by patch-to-patch scores, which
#   depend on the A-B offset; the mean keeps them.
# - **(b)** No: a mean over the patches forgets which patch was where, so no position at all,
#   absolute or relative, can reach the classifier.
# - **(c)** No: RoPE does not rotate the values, so no patch's output carries any position, and the
#   mean of those outputs carries none either.
# - **(d)** Only with a base above 100: at base 100 the pairs barely turn across a 4x4 grid, so
#   every offset between two patches gives the same scores.

# %% tags=["exercise", "nbval-check-output"]
answer_4 = ...  # "a", "b", "c" or "d"
check_exercise_4(answer_4)

# %% [markdown]
# ### Exercise 5 · Predict, then run: axial RoPE on a 40x40 grid
# Keep $d_h = 8$ and base 100 (section 2). On a 40x40 grid, by how many radians does the
# slowest pair turn from one side of the grid to the other? Write it into `predicted_turn`,
# then run the cell after it. Would you keep base 100 there?

# %%
predicted_turn = ...  # your prediction, in radians

# %% tags=["exercise", "nbval-check-output"]
slowest = 100.0 ** (-torch.arange(head_dim // 4) / (head_dim // 4))[-1]
turn_40 = (40 - 1) * slowest.item()
check_exercise_5(predicted_turn, turn_40)

# %% [markdown]
# ## Further reading
#
# - A. Dosovitskiy et al., *[An Image is Worth 16x16 Words: Transformers for Image Recognition at
#   Scale](https://arxiv.org/abs/2010.11929)*, ICLR 2021: the ViT; 1-D learned table, its similarity maps, and 2-D and relative variants
#   that made little difference for ViT-B/16 in ImageNet 5-shot linear probes (Appendix D.4,
#   Table 8). Reference code: [`google-research/vision_transformer`](https://github.com/google-research/vision_transformer).
# - H. Touvron et al., *[Training data-efficient image transformers & distillation through
#   attention](https://arxiv.org/abs/2012.12877)* (DeiT), ICML 2021: fine-tuning at a higher resolution with a bicubically
#   resampled position table ([`facebookresearch/deit`](https://github.com/facebookresearch/deit)).
# - K. He et al., *[Masked Autoencoders Are Scalable Vision Learners](https://arxiv.org/abs/2111.06377)* (MAE), CVPR 2022: fixed 2-D
#   sin-cos encodings (`get_2d_sincos_pos_embed` in [`facebookresearch/mae`](https://github.com/facebookresearch/mae); Hugging Face's
#   `ViTMAEEmbeddings`).
# - B. Heo, S. Park, D. Han, S. Yun, *[Rotary Position Embedding for Vision Transformer](https://arxiv.org/abs/2403.13298)*, ECCV 2024:
#   axial and mixed 2-D RoPE and their behaviour at new resolutions ([`naver-ai/rope-vit`](https://github.com/naver-ai/rope-vit),
#   `models/vit_rope.py`).
# - Su Jianlin (苏剑林), *Transformer升级之路：4、二维位置的旋转式位置编码* (Transformer upgrade
#   path 4: rotary position embedding for 2-D positions, 2021-05-10),
#   [kexue.fm/archives/8397](https://kexue.fm/archives/8397): derives axial 2-D RoPE from two
#   requirements: a score that depends only on the offset, and a position that can be read back.
# - X. Chu et al., *[Conditional Positional Encodings for Vision Transformers](https://arxiv.org/abs/2102.10882)* (CPVT), ICLR 2023
#   (arXiv 2021): PEG, a convolution that generates position from the tokens and works at any grid size.
# - `docs/replication.md`: the headline results of the papers this course teaches, beside the
#   numbers its notebooks measure at toy scale, whether they agree, and why not where they do not.
# - Next: [05 · Relative biases](05_relative_biases.ipynb) (Swin's 2-D relative bias and PEG).

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ## Solutions


# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
# Exercise 1. One of many designs: each axis as a point on an arc of a
# circle (angle pi/6 per step), so one step changes the vector a little and
# the row and the column are separate channels.
def table_4(grid_h: int, grid_w: int) -> torch.Tensor:
    r = torch.arange(grid_h).repeat_interleave(grid_w) * torch.pi / 6
    c = torch.arange(grid_w).repeat(grid_h) * torch.pi / 6
    return torch.stack([r.cos(), r.sin(), c.cos(), c.sin()], dim=1)


check_exercise_1(table_4)

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
# Exercise 2. Six patches 1-3 tokens away and four 5-6 tokens away: the
# similarity depends on the index distance only.
predicted_count = 10
check_exercise_2(predicted_count, n_closer)

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
_, labels = RelativeDirection(3, 6).pairs()
my_ceiling = torch.bincount(labels).max().item() / len(
    labels
)  # one bag for every image: best = commonest class

check_exercise_3(my_ceiling)


# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
# Exercise 4. Patch A's output weighs B's value by a score that depends on
# their offset; the mean keeps it. (b) each token already holds its mix;
# (c) the weights come from rotated q and k; (d) base 100 turns usefully.
answer_4 = "a"
check_exercise_4(answer_4)

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
# Exercise 5. theta_min = 100^(-1/2) = 0.1 rad per patch, offsets up to 39: 3.9 rad. The
# slowest pair wraps past half a turn; a larger base suits a 40x40 grid.
predicted_turn = 3.9
check_exercise_5(predicted_turn, turn_40)

# %% [markdown]
# ## End of notebook 04
# <!-- Keep this cell last. "Run All" ends on the last cell, and JupyterLab unfolds the section that
#      holds it: outside "Solutions", this heading leaves the solutions folded. -->

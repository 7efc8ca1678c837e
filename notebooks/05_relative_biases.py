# %% [markdown]
# # 05 · Relative biases
#
# Notebooks 01-03 put position into a vector added to the tokens, or into a rotation of queries
# and keys. There is a third place: the attention **scores** themselves. A relative bias adds one
# number $b(i, j)$ to the score of query $i$ and key $j$, after the $1/\sqrt{d}$ scale, and that
# number depends only on where the two tokens are relative to each other. T5 learns it per bucket
# of distance, ALiBi fixes it as a straight line, Swin learns it over 2-D offsets inside a window.
# This notebook also looks at two routes that add no position at all: a convolution whose zero
# padding leaks position (PEG), and a causal decoder with no encoding (NoPE). It ends with what
# each scheme costs in time and memory, and the selection advice, backed by this series' results.
#
# **What you will learn**
# - T5's bucketed bias: exact buckets near, log-spaced far, bidirectional or causal; and what a
#   trained model puts into it;
# - ALiBi's fixed slopes (also for head counts that are not a power of two), why its compact
#   per-key form is exact under a causal mask, and how it reaches `scaled_dot_product_attention`
#   without a (heads, L, L) mask;
# - Swin's $(2M-1)\times(2M-1)$ table and its index, and BEiT's class-token variant;
# - that PEG's zero padding leaks absolute position, measured by a probe;
# - that a causal decoder with no encoding learns position while an encoder cannot;
# - how every family does on one task (3 seeds), and what each costs as the sequence grows.
#
# **Prerequisites:** [00 · Permutation blindness](00_permutation_blindness.ipynb) (the three places
# position can enter, and why an encoder without position is blind to order),
# [01 · Sinusoidal encoding](01_sinusoidal.ipynb), [02 · Learnable absolute encoding](02_learnable.ipynb)
# and [03 · RoPE](03_rope.ipynb) (the schemes compared here).
#
# **Run time:** about 24 s on a laptop CPU (measured with `make execute`, one thread), most of it
# in eighteen small training runs of 150 steps.

# %%
import itertools
import math
from functools import partial

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from torch.testing import assert_close

from posenc_lib.attention import MultiHeadAttention
from posenc_lib.course.cost import allocated_bytes, best_time, loglog_slope, position_part
from posenc_lib.course.data import lag_task
from posenc_lib.course.diagnostics import position_probe_accuracy
from posenc_lib.course.exercises.nb05 import check_exercise_1, check_exercise_2, check_exercise_3
from posenc_lib.course.plotting import COLORS, LINESTYLES, MARKERS, heatmap, line_plot
from posenc_lib.course.training import accuracy, progress, seed_everything, setup_notebook, train
from posenc_lib.encodings.conditional.peg import PEG
from posenc_lib.encodings.factory import build_scheme
from posenc_lib.encodings.score_bias.relative import (
    ALiBi,
    SwinRelativeBias,
    T5RelativeBias,
    alibi_bias,
    alibi_slopes,
    swin_relative_position_index,
    t5_relative_bucket,
)
from posenc_lib.models import TinyTransformer
from posenc_lib.scheme import NoPosition

gen = setup_notebook(0)
pd.set_option("display.width", 120)
pd.set_option("display.max_colwidth", None)


def mib(n_bytes: float) -> str:
    """Bytes as MiB with 3 significant digits."""
    return f"{n_bytes / 2**20:.3g} MiB"

# %% [markdown]
# ## 1 · T5: one learned number per bucket of distance
#
# **Question.** Shaw et al. (2018) gave every clipped offset $j - i$ its own learned vector.
# T5 (Raffel et al. 2020) keeps only a scalar per head, and shares it between offsets: how are
# offsets grouped?
#
# The offset $j - i$ (key minus query) is put into one of 32 buckets. In an encoder
# (**bidirectional**) half of them serve keys before the query, half keys after it. Within a
# direction, the first half of the buckets are **exact** (distance 0, 1, 2, ... each gets its
# own), the rest are **log-spaced** up to `max_distance` = 128, and everything farther shares the
# last bucket. A decoder (**causal**) sees no keys after the query, so all 32 buckets go to the
# past. The bias of a (query, key) pair is `table[bucket, head]`, a learned `(32, heads)` table
# shared by every layer.

# %% tags=["nbval-check-output"]
offsets = torch.arange(-160, 161)
buckets_bi = t5_relative_bucket(offsets, bidirectional=True)
buckets_causal = t5_relative_bucket(offsets, bidirectional=False)

fig, ax = plt.subplots(figsize=(8, 3.8))
line_plot(ax, offsets.numpy(), {"bidirectional (encoder)": buckets_bi.numpy(), "causal (decoder)": buckets_causal.numpy()},
          "T5 bucket of each offset (32 buckets, max_distance 128)", "offset j - i (key minus query, tokens)", "bucket id")
for x in (-128, 128):
    ax.axvline(x, color="grey", linewidth=0.8)
ax.text(-126, 29, "max_distance", fontsize=10, color="grey")
plt.show()

# %% [markdown]
# **Check.** Bidirectional: distances 0-7 have exact buckets on each side, keys after the query use
# buckets 16-31, and every distance from 128 on lands in the last bucket of its side. Causal:
# distances 0-15 are exact and every key after the query falls in bucket 0 (the mask hides it).

# %% tags=["nbval-check-output"]
past = -offsets[offsets <= 0]  # distance of a key at or before the query
assert torch.equal(t5_relative_bucket(-torch.arange(8)), torch.arange(8))
assert torch.equal(t5_relative_bucket(torch.arange(1, 8)), 16 + torch.arange(1, 8))
assert torch.equal(t5_relative_bucket(-torch.arange(16), bidirectional=False), torch.arange(16))
assert (buckets_bi[offsets <= -128] == 15).all() and (buckets_bi[offsets >= 128] == 31).all()
assert (buckets_causal[offsets > 0] == 0).all() and (buckets_causal[offsets <= -128] == 31).all()
assert (t5_relative_bucket(-past.flip(0)).diff() >= 0).all()  # never decreases with the distance
print("distinct buckets used by offsets -160..160: bidirectional", len(buckets_bi.unique()),
      "| causal", len(buckets_causal.unique()))

# %% [markdown]
# Over a sequence, each (query, key) pair gets the bucket of its offset, so the bucket map is
# constant along every diagonal (a Toeplitz matrix). Bucket ids are not a signed quantity, so a
# sequential colour map:

# %% tags=["nbval-check-output"]
L_SHOW = 48
pos = torch.arange(L_SHOW)[None]
fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
for ax, bidirectional in zip(axes, (True, False)):
    scheme = T5RelativeBias(4, bidirectional=bidirectional)
    heatmap(ax, scheme.buckets(pos, pos)[0].numpy(), f"T5 buckets, {'bidirectional' if bidirectional else 'causal'}",
            "key position j", "query position i", colorbar_label="bucket id")
plt.show()

# %% [markdown]
# The library computes the bias without bucketing all $L^2$ pairs. Only the offsets matter, and
# every offset beyond $\pm$`max_distance` shares the last bucket, so `T5RelativeBias.offset_bias()`
# buckets the 257 offsets $-128 \dots 128$ once, and each pair only **gathers** the row of its
# (clamped) offset. The result is the same table entries, bit for bit (the conformance tests in
# `tests/test_relative.py` compare it with Hugging Face's `T5Attention.compute_bias`). Below: both
# ways at $L = 1024$, their equality, and the bytes each allocates (counted exactly by
# `posenc_lib.course.cost.allocated_bytes`, temporaries included).

# %% tags=["nbval-check-output"]
t5 = T5RelativeBias(4, bidirectional=False)
pos = torch.arange(1024)[None]


def every_pair() -> torch.Tensor:
    """The textbook way: bucket of every (query, key) pair, then a table lookup."""
    return t5.table(t5.buckets(pos, pos)).permute(0, 3, 1, 2)


def gathered() -> torch.Tensor:
    """The library's way: bucket of each offset once, then gather."""
    return t5.score_bias(pos, pos)


with torch.no_grad():
    assert torch.equal(every_pair(), gathered())
bytes_pairs, bytes_gather = allocated_bytes(every_pair), allocated_bytes(gathered)
print(f"L = 1024, 4 heads: bucketing every pair allocates {mib(bytes_pairs)}, offsets + gather {mib(bytes_gather)}")
assert bytes_gather < bytes_pairs / 2

# %%
# NBVAL_IGNORE_OUTPUT
time_pairs, time_gather = best_time(every_pair, 3), best_time(gathered, 3)
print(f"time: every pair {time_pairs * 1e3:.1f} ms, offsets + gather {time_gather * 1e3:.1f} ms "
      f"({time_pairs / time_gather:.1f}x faster)")

# %% [markdown]
# **Takeaway:** T5 spends its buckets where precision matters (near the query) and lumps far
# offsets together; past `max_distance` all distances look alike. What a trained model stores in
# the table is drawn in section 6, after training on a task where the offset matters.
#
# ## 2 · ALiBi: a fixed straight line per head
#
# **Question.** Can a bias work with no parameters at all?
#
# ALiBi (Press et al. 2022) adds $-m_h\,|i - j|$ to head $h$'s scores: a penalty that grows
# linearly with distance, with a fixed slope $m_h$ per head. For $n$ heads, $n$ a power of two,
# $m_h = 2^{-8h/n}$, $h = 1..n$: a geometric sequence from $2^{-8/n}$ down to $2^{-8}$, so some
# heads look very locally and others almost uniformly. For other head counts the reference code
# takes the $p$ slopes of the power of two $p$ below $n$, then every other slope of $2p$ (which
# fall between them) until there are $n$.

# %% tags=["nbval-check-output"]
slopes8, slopes12 = alibi_slopes(8), alibi_slopes(12)
print("8 heads: ", [f"{s:.4g}" for s in slopes8.tolist()])
print("12 heads:", [f"{s:.4g}" for s in slopes12.tolist()])

fig, ax = plt.subplots(figsize=(7, 3.6))
ax.semilogy(range(1, 9), slopes8, color=COLORS[0], linestyle=LINESTYLES[0], marker=MARKERS[0], label="8 heads")
ax.semilogy(range(1, 13), slopes12, color=COLORS[1], linestyle=LINESTYLES[1], marker=MARKERS[1], label="12 heads")
ax.set(title="ALiBi slopes per head", xlabel="head h", ylabel="slope m_h (log scale)")
ax.legend()
plt.show()

# %% [markdown]
# **Check.** 8 heads: exactly $1/2, 1/4, \dots, 1/256$. 12 heads: the 8 slopes of 8 heads, then
# the 1st, 3rd, 5th and 7th slope of 16 heads ($2^{-0.5}, 2^{-1.5}, \dots$), which interleave
# with the first eight.

# %% tags=["nbval-check-output"]
assert torch.equal(slopes8, torch.tensor([2.0**-h for h in range(1, 9)]))
slopes16 = alibi_slopes(16)
assert torch.equal(slopes12[:8], slopes8) and torch.equal(slopes12[8:], slopes16[0:8:2])
assert_close(slopes12[8:], torch.tensor([2 ** -(h + 0.5) for h in range(4)]))
print("12-head slopes = 8-head slopes + every other 16-head slope")

# %% [markdown]
# The bias of two heads (steepest and flattest of 8) and the **compact** form. Under a causal mask,
# only keys $j \le i$ count, and there $-m(i - j) = -m\,i + m\,j$; the term $-m\,i$ is the same for
# every key of query $i$, and a softmax does not change when a constant is added to its whole row.
# So the per-key bias $m\,j$, shape (heads, 1, L), gives the same attention as the full
# (heads, L, L) one. BLOOM stores exactly this.

# %% tags=["nbval-check-output"]
L_SHOW = 24
pos = torch.arange(L_SHOW)[None]
full = alibi_bias(slopes8, pos, pos)                 # (1, 8, L, L)
compact = alibi_bias(slopes8, pos, pos, compact=True)  # (1, 8, 1, L)
fig, axes = plt.subplots(1, 3, figsize=(14, 4))
heatmap(axes[0], full[0, 0].numpy(), "ALiBi bias, head 1 (m = 1/2)", "key position j", "query position i",
        colorbar_label="bias added to the score")
heatmap(axes[1], full[0, 7].numpy(), "ALiBi bias, head 8 (m = 1/256)", "key position j", "query position i",
        colorbar_label="bias added to the score")
heatmap(axes[2], compact[0, :, 0].numpy(), "Compact form m_h * j, 8 heads", "key position j", "head",
        colorbar_label="bias added to the score")
plt.show()

causal = torch.ones(L_SHOW, L_SHOW, dtype=torch.bool).tril()
scores = torch.randn(1, 8, L_SHOW, L_SHOW, generator=gen)
attn_full = (scores + full).masked_fill(~causal, float("-inf")).softmax(-1)
attn_compact = (scores + compact).masked_fill(~causal, float("-inf")).softmax(-1)
assert_close(attn_compact, attn_full)
no_mask_gap = ((scores + full).softmax(-1) - (scores + compact).softmax(-1)).abs().max().item()
print(f"causal: same attention; without the mask they differ by up to {no_mask_gap:.3f}")
assert no_mask_gap > 0.1

# %% [markdown]
# **What the compact form saves, and how it reaches SDPA.** `scaled_dot_product_attention` takes
# either `is_causal=True` (it applies the mask itself, in memory linear in $L$) or an explicit
# `attn_mask`, not both. Adding a (heads, 1, L) bias and the causal mask as one float mask builds
# a (heads, L, L) tensor after all. The library avoids it with a small identity: a bias that
# depends on the key only is a dot product with a constant. Append a 1 to every query and
# $m_h j/\text{scale}$ to key $j$; then $\text{scale}\cdot q'^\top k' = \text{scale}\cdot q^\top k + m_h j$
# (`attention.fold_key_bias`; $v$ gets a zero column so all three share one head size, which the
# fast kernels need). `MultiHeadAttention` does this for any per-key bias under `causal=True`.
# Below: the layer with compact ALiBi (folded, `is_causal`) against the same layer with the full
# bias (one float mask), outputs and bytes.

# %% tags=["nbval-check-output"]
def alibi_layer(compact: bool, heads: int = 8, d_model: int = 64) -> MultiHeadAttention:
    torch.manual_seed(0)
    return MultiHeadAttention(d_model, heads, ALiBi(heads, causal=compact)).eval()


x = torch.randn(1, 512, 64, generator=gen)
layer_folded, layer_mask = alibi_layer(True), alibi_layer(False)
with torch.no_grad():
    assert_close(layer_folded(x, causal=True), layer_mask(x, causal=True), rtol=1e-4, atol=1e-5)
bytes_folded = allocated_bytes(lambda: layer_folded(x, causal=True))
bytes_mask = allocated_bytes(lambda: layer_mask(x, causal=True))
mask_bytes = 8 * 512 * 512 * 4  # one float32 (heads, L, L) tensor
print(f"one layer, L = 512, 8 heads: full bias + mask {mib(bytes_mask)}, compact folded {mib(bytes_folded)}; "
      f"one (8, 512, 512) float32 tensor is {mib(mask_bytes)}")
assert bytes_mask - bytes_folded > mask_bytes and bytes_folded < mask_bytes / 4

# %% [markdown]
# At a realistic length the difference is large. A 32-head layer (MPT-7B has 32 ALiBi heads) at a
# context of 8192 tokens: the full bias for one sequence, in float32 and bf16, against the compact
# (heads, 1, L) form.

# %% tags=["nbval-check-output"]
heads, length = 32, 8192
full_bytes = {dtype: heads * length * length * torch.finfo(dtype).bits // 8 for dtype in (torch.float32, torch.bfloat16)}
compact_bytes = heads * length * 4
print(f"32 heads, L = 8192: full (heads, L, L) bias {full_bytes[torch.float32] / 2**30:.0f} GiB in float32, "
      f"{full_bytes[torch.bfloat16] / 2**30:.0f} GiB in bf16; compact {compact_bytes / 2**10:.0f} KiB "
      f"({full_bytes[torch.float32] // compact_bytes}x less)")
assert full_bytes[torch.float32] // compact_bytes == length

# %% [markdown]
# **A caveat: precision.** The two forms are equal in exact arithmetic, not in 16-bit floats. The
# compact values $m_h j$ grow with the position (up to 511 for head 1 at $L = 1024$), and bf16
# keeps 8 significant bits, so near 511 it rounds to steps of 2; the full form's values that
# matter (near the diagonal) are small and keep their digits. Measured: the same layer in bf16,
# against a float64 run of the full form.

# %% tags=["nbval-check-output"]
x = torch.randn(1, 1024, 64, generator=gen)
with torch.no_grad():
    reference = alibi_layer(False).double()(x.double(), causal=True)
    bf16_error = {f"{form} bias": (alibi_layer(form == "compact").bfloat16()(x.bfloat16(), causal=True).double()
                                   - reference).abs().max().item() for form in ("full", "compact")}
print("bf16, L = 1024, largest deviation of the output from float64:",
      {k: round(v, 3) for k, v in bf16_error.items()},
      f"(compact / full: {bf16_error['compact bias'] / bf16_error['full bias']:.0f}x)")
assert bf16_error["compact bias"] > 5 * bf16_error["full bias"]

# %% [markdown]
# So in bf16 or fp16 at long lengths the memory saving costs accuracy (BLOOM, which uses the
# compact form, runs in bf16); in float32 both forms agree to rounding (checked above at
# $L = 512$).
#
# **Takeaway:** ALiBi has no parameters: each head gets a fixed recency penalty, geometric across
# heads. Under a causal mask it collapses to a per-key vector, and folded into q and k it needs
# no (heads, L, L) tensor at all (8 GiB per layer at 8192 tokens in float32 otherwise).
#
# ## 3 · Swin: a 2-D table for a window, and BEiT's class token
#
# **Question.** In an image, patches sit on a grid. How does a relative bias index 2-D offsets?
#
# Swin (Liu et al. 2021) attends inside windows of $M \times M$ patches. Two patches differ by
# $(\Delta r, \Delta c)$ with each in $[-(M-1), M-1]$: $(2M-1)^2$ possible offsets, one learned
# bias per offset and head. The **index** maps a (query, key) pair to its row of the table:
# shift both differences to be non-negative and flatten,
# $\text{index} = (\Delta r + M - 1)(2M - 1) + (\Delta c + M - 1)$.

# %% tags=["nbval-check-output"]
M = 3
index = swin_relative_position_index(M, M)  # (9, 9): pair of patches -> row of the 25-row table
uses = torch.bincount(index.flatten(), minlength=(2 * M - 1) ** 2).reshape(2 * M - 1, 2 * M - 1)

beit_index = swin_relative_position_index(M, M, n_prefix=1)  # (10, 10): a class token first

fig, axes = plt.subplots(1, 3, figsize=(17, 4.6))
heatmap(axes[0], index.numpy(), f"Swin index, {M}x{M} window (row-major patches)", "key patch j", "query patch i",
        colorbar_label="row of the bias table")
for i in range(M * M):
    for j in range(M * M):
        axes[0].text(j, i, int(index[i, j]), ha="center", va="center", fontsize=10,
                     color="white" if index[i, j] < 16 else "black")
heatmap(axes[1], uses.numpy(), f"How many pairs use each of the {(2 * M - 1) ** 2} table rows",
        "column offset  c_i - c_j", "row offset  r_i - r_j", colorbar_label="number of (query, key) pairs",
        extent=(-M + 0.5, M - 0.5, M - 0.5, -M + 0.5))
heatmap(axes[2], beit_index.numpy(), "BEiT: class token (0) + the same window", "key token j", "query token i",
        colorbar_label="row of the bias table")
plt.show()

# %% [markdown]
# The index is made of $M \times M$ blocks (one per pair of patch *rows*), each itself Toeplitz
# (constant along diagonals, one per column offset): a block-Toeplitz matrix. The count on the
# middle is a pyramid: offset $(0, 0)$ is used by all 9 patches, each corner offset by one pair.
# On the right, BEiT's index with a class token in front: its row and column use three extra
# table rows (25, 26, 27), the patches keep Swin's index.
#
# **Check.** The index is the formula, every table row is used, and the library's scheme gathers
# the table with it. BEiT adds a class token: it gets three more learned rows (class → patch,
# patch → class, class → class).

# %% tags=["nbval-check-output"]
rows, cols = torch.arange(M).repeat_interleave(M), torch.arange(M).repeat(M)
formula = (rows[:, None] - rows[None, :] + M - 1) * (2 * M - 1) + (cols[:, None] - cols[None, :] + M - 1)
assert torch.equal(index, formula)
assert (uses > 0).all() and uses.sum() == (M * M) ** 2 and uses[M - 1, M - 1] == M * M
swin = SwinRelativeBias(n_heads=2, window_h=M, window_w=M)
bias = swin.score_bias(torch.arange(M * M)[None], torch.arange(M * M)[None])
assert torch.equal(bias[0], swin.table[index].permute(2, 0, 1))

n_rel = (2 * M - 1) ** 2
assert torch.equal(beit_index[1:, 1:], index)
assert (beit_index[0, 1:] == n_rel).all() and (beit_index[1:, 0] == n_rel + 1).all() and beit_index[0, 0] == n_rel + 2
print(f"Swin {M}x{M}: table of {n_rel} rows; BEiT with a class token: {n_rel + 3} rows; "
      f"index shapes {tuple(index.shape)} and {tuple(beit_index.shape)}")

# %% [markdown]
# **Takeaway:** Swin's bias is T5's idea in 2-D without buckets: a window is small, so every 2-D
# offset gets its own learned value; a class token, which has no place on the grid, gets
# three extra entries of its own.
#
# ## 4 · PEG: zero padding leaks absolute position
#
# **Question.** CPVT (Chu et al. 2021) has no position table: its Position Encoding Generator (PEG)
# puts the tokens back on their grid and adds a depthwise $3\times 3$ convolution of them. A
# convolution is translation-equivariant, so where does *absolute* position come from?
#
# From the border. The convolution pads the grid with zeros, so a token at the edge sees zeros
# where an interior token sees neighbours. On a **constant** input every token is the same, so
# anything position-dependent in the output can only come from the padding. With **circular**
# padding (the grid wraps around like a torus) there is no border. Below, the output of one
# channel for a constant input, with one PEG and with three stacked (each layer's zero border
# reaches one token further in).

# %% tags=["nbval-check-output"]
G, D_PEG = 6, 16  # a 6 x 6 grid of 16-channel tokens


def peg_stack(padding: str, depth: int, seed: int = 0) -> list[PEG]:
    torch.manual_seed(seed)
    return [PEG(D_PEG, G, G, padding=padding) for _ in range(depth)]


def peg_features(pegs: list[PEG], n: int, noise: float, seed: int) -> torch.Tensor:
    """Outputs (n, G*G, D_PEG) for constant inputs (all ones) plus a little per-token noise."""
    x = 1.0 + noise * torch.randn(n, G * G, D_PEG, generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        for p in pegs:
            x = p.add_to_embeddings(x, None)
    return x


fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
for ax, (padding, depth) in zip(axes, [("zeros", 1), ("zeros", 3), ("circular", 3)]):
    out = peg_features(peg_stack(padding, depth), 1, 0.0, 0)[0, :, 0].reshape(G, G)
    heatmap(ax, out.numpy(), f"{depth} PEG, {padding} padding", "grid column", "grid row",
            colorbar_label="channel 0 output")
plt.show()

# %% [markdown]
# A **probe** makes "leaks" a number: `diagnostics.position_probe_accuracy` trains a small MLP to name
# each token's index (0-35) from its output vector, on 1024 noisy constant grids, and scores it on
# 512 others. Chance is $1/36$.

# %%
chance_peg = 1 / G**2
peg_probe = {}
for padding, depth in progress([("zeros", 1), ("zeros", 3), ("circular", 3)], desc="probes of 3 PEG stacks"):
    pegs = peg_stack(padding, depth)
    peg_probe[f"{depth} PEG, {padding}"] = position_probe_accuracy(
        peg_features(pegs, 1024, 0.1, 1), peg_features(pegs, 512, 0.1, 2), desc=None)
distinct_one = len(torch.unique(peg_features(peg_stack("zeros", 1), 1, 0.0, 0)[0], dim=0))
print(pd.Series(peg_probe, name="probe accuracy").round(3).to_string())
print(f"chance {chance_peg:.3f}; one zero-padded PEG gives {distinct_one} distinct vectors "
      f"(a ceiling of {distinct_one / G**2:.3f} for an exact probe)")

# %% [markdown]
# **Check.** Three zero-padded PEGs let the probe name the exact position of most tokens; one PEG
# only tells the nine border classes apart (corners, edges, interior), so its probe stays near
# that ceiling; circular padding leaves the probe at chance.

# %%
assert peg_probe["3 PEG, zeros"] > 0.5 > 10 * chance_peg
assert distinct_one == 9 and peg_probe["1 PEG, zeros"] < distinct_one / G**2 + 0.05
assert peg_probe["3 PEG, circular"] < 2 * chance_peg

# %% [markdown]
# **Takeaway:** a PEG's position signal is its zero border: it is absolute, it starts at the
# edges and reaches inward one kernel radius per layer. Remove the border and the signal is gone.
# A convolutional stem (as in hybrid ViTs) pads its borders the same way, so the same mechanism
# can give it implicit position (not measured here).
#
# ## 5 · NoPE: the causal mask is a position signal
#
# **Question.** Notebook 00 showed that an encoder without position is permutation-equivariant,
# so it cannot know where a token is. Does a **decoder** without position know?
#
# Haviv et al. (2022) found that causal language models trained with no positional encoding
# (NoPE) reach nearly the perplexity of those with one, and that their hidden states encode
# position; Kazemnejad et al. (2023) argued that the causal mask lets the first layer compute
# absolute position (token $i$ averages over exactly $i + 1$ tokens). Here: a 1-layer decoder with
# no encoding, trained on the task of section 6 (output the token 3 steps back), then a probe on
# its hidden states. The same weights run **without** the causal mask are an encoder.

# %%
VOCAB, SEQ, LAG, D_MODEL, HEADS, STEPS = 16, 24, 3, 32, 4, 150
train_data = lag_task(4096, SEQ, VOCAB, LAG, torch.Generator().manual_seed(100))
test_data = lag_task(512, SEQ, VOCAB, LAG, torch.Generator().manual_seed(101))
sizes = {"d_model": D_MODEL, "n_heads": HEADS, "max_len": SEQ}  # each scheme below is built for these
SCHEMES = {
    "none": partial(build_scheme, "none", **sizes),
    "sinusoidal": partial(build_scheme, "sinusoidal", **sizes),
    "learnable": partial(build_scheme, "learnable", **sizes, init_std=1.0),  # at the tokens' scale, N(0, 1): 02 §3
    "RoPE": partial(build_scheme, "rope", **sizes),
    "T5 bias": partial(build_scheme, "t5", **sizes, bidirectional=False),
    "ALiBi": partial(build_scheme, "alibi", **sizes),
}
trained: dict[tuple[str, int], TinyTransformer] = {}


def run(name: str, seed: int) -> TinyTransformer:
    """A 1-layer causal decoder with scheme ``name``, trained on the lag task (cached per name and seed)."""
    if (name, seed) not in trained:
        data_gen = seed_everything(seed)
        model = TinyTransformer(VOCAB, VOCAB, d_model=D_MODEL, n_heads=HEADS, n_layers=1, causal=True, pool="none",
                                scheme=SCHEMES[name]())
        train(model, train_data, STEPS, lr=1e-2, generator=data_gen, desc=None)
        trained[name, seed] = model
    return trained[name, seed]


nope = run("none", 0)
probe_x = (lag_task(1024, SEQ, VOCAB, LAG, torch.Generator().manual_seed(102))[0],
           lag_task(512, SEQ, VOCAB, LAG, torch.Generator().manual_seed(103))[0])
nope_probe = {}
for causal in progress((True, False), desc="probes of the NoPE decoder, with and without its mask"):
    nope.causal = causal
    with torch.no_grad():
        states = [nope.features(t) for t in probe_x]
    nope_probe["decoder (causal mask)" if causal else "same weights, no mask (encoder)"] = position_probe_accuracy(
        *states, desc=None)
nope.causal = True
chance = 1 / SEQ
print(pd.Series(nope_probe, name="probe accuracy").round(3).to_string())
print(f"chance {chance:.3f}")

# %% [markdown]
# **Check.** The decoder's states name the exact position several times more often than chance;
# without the mask the probe is at chance, as it must be for any encoder without position (its
# output at a token depends on that token and the bag of all tokens, never on the index).

# %% tags=["nbval-check-output"]
assert nope_probe["decoder (causal mask)"] > 3 * chance
assert nope_probe["same weights, no mask (encoder)"] < 1.5 * chance
print(f"decoder / chance = {nope_probe['decoder (causal mask)'] / chance:.1f}")

# %% [markdown]
# **Takeaway:** with a causal mask "no positional encoding" does not mean "no position": how
# many tokens a query can see is itself a signal. An encoder has no such signal.
#
# ## 6 · One task, every family
#
# **Question.** On one task where relative position matters, how do the families compare?
#
# The task: random tokens, and at every position output the token **3 steps back** (as in
# [03 · RoPE](03_rope.ipynb)). A 1-layer causal decoder (d_model 32, 4 heads) is trained for 150
# steps with each scheme: none, sinusoidal and learnable (added), RoPE (rotary), T5 and ALiBi
# (biases); 3 seeds each. Token accuracy on 512 held-out sequences (positions 3-23); chance is
# $1/16$.

# %%
SEEDS = (0, 1, 2)
results = pd.DataFrame([{"scheme": name, "seed": seed, "accuracy": accuracy(run(name, seed), *test_data)}
                        for name, seed in progress(list(itertools.product(SCHEMES, SEEDS)), desc="scheme x seed")])
summary = results.groupby("scheme", sort=False)["accuracy"].agg(["mean", "std"])
summary["mean ± std"] = [f"{m:.2f} ± {s:.2f}" for m, s in zip(summary["mean"], summary["std"])]  # 3 seeds
print(summary["mean ± std"].to_string())

# %% [markdown]
# **Check.** The orderings the prose claims, each with a margin of twice the larger spread.

# %% tags=["nbval-check-output"]
def beats(a: str, b: str) -> bool:
    gap = summary.loc[a, "mean"] - summary.loc[b, "mean"]
    return gap > 2 * max(summary.loc[a, "std"], summary.loc[b, "std"])


for winner in ("RoPE", "T5 bias", "sinusoidal", "learnable"):
    for loser in ("ALiBi", "none"):
        assert beats(winner, loser), (winner, loser)
assert summary.loc["RoPE", "mean"] > 0.99 and summary.loc["T5 bias", "mean"] > 0.95
assert summary.loc["ALiBi", "mean"] < 0.5 and summary.loc["none", "mean"] < 0.5
print("RoPE, T5, sinusoidal and learnable beat ALiBi and none by more than 2 std")

# %% [markdown]
# RoPE and T5 express "3 back" directly (a rotation by 3 steps; a bucket of its own), and the
# sinusoidal table gets there too. **ALiBi stays near no encoding**: its bias falls monotonically
# with distance and has no parameters, so a head can prefer *near* keys but cannot single out
# the key exactly 3 back, and with random tokens the content cannot help. That is no verdict on
# ALiBi for language modelling (its design target, with a recency prior and many layers: in
# section 4 of [06 · Length extrapolation](06_length_extrapolation.ipynb) ALiBi language models stay
# flat from $L$ to $8L$); it is what a fixed monotone bias can and cannot express. The
# learnable table solves it as well: it starts at the scale of the token embeddings, $\mathcal
# N(0, 1)$, as [02 · Learnable absolute encoding](02_learnable.ipynb) (section 3) teaches, and on
# a fixed length every position has a trained row.
#
# What did T5 learn? Its bias per head, against the offset (seed 0):

# %% tags=["nbval-check-output"]
t5_trained = run("T5 bias", 0).scheme
with torch.no_grad():
    learned = t5_trained.offset_bias()  # (2 * 128 + 1, heads); row r = offset r - 128
offs = torch.arange(-(SEQ - 1), 1)
learned_bias = learned[offs + t5_trained.max_distance]  # (SEQ, heads), offsets -23..0
fig, ax = plt.subplots(figsize=(8, 3.8))
line_plot(ax, offs.numpy(), {f"head {h + 1}": learned_bias[:, h].numpy() for h in range(HEADS)},
          "Bias learned by T5 on the lag-3 task", "offset j - i (key minus query, tokens)", "bias added to the score",
          markers=True)
ax.axvline(-LAG, color="grey", linewidth=0.8)
plt.show()
peak = offs[learned_bias.argmax(0)]
print("offset of each head's largest bias:", peak.tolist())
assert (peak == -LAG).any()

# %% [markdown]
# **Takeaway:** at least one head puts its largest bias exactly at offset $-3$: the model learned,
# in the bias table alone, where to look. On this relative task RoPE, T5, the sinusoidal and the
# learnable table solve it, ALiBi's fixed shape cannot express it, and without an encoding the decoder reaches only
# a fraction of it.
#
# ## 7 · What each scheme costs
#
# **Question.** How do time and memory of the position part grow with the sequence length $L$?
#
# The position part is the one hook each scheme uses (`posenc_lib.course.cost.position_part`): the
# added table, the rotation of q and k, or the bias. Bytes are counted exactly (every tensor the
# hook creates); times are the fastest of 5 calls, so they vary from run to run. Model size:
# d_model 128, 4 heads, one sequence. Lengths stop at 1024: beyond it a fresh (heads, L, L) bias
# passes ~32 MB, the C library hands such buffers out as new memory pages that are faulted in on
# first touch, and their time grows faster than $L^2$ (`make bench` sets the allocator so that
# this does not happen).

# %% tags=["nbval-check-output"]
LENGTHS = (128, 256, 512, 1024)
cost_sizes = {"d_model": 128, "n_heads": 4, "max_len": max(LENGTHS)}
COST_SCHEMES = {
    "sinusoidal": partial(build_scheme, "sinusoidal", **cost_sizes),
    "learnable": partial(build_scheme, "learnable", **cost_sizes),
    "RoPE": partial(build_scheme, "rope", **cost_sizes),
    "ALiBi compact": partial(build_scheme, "alibi", **cost_sizes),
    "T5 bias": partial(build_scheme, "t5", **cost_sizes),
    "ALiBi full": partial(build_scheme, "alibi", **cost_sizes, causal=False),
}
cost_bytes, cost_time = {}, {}
for name, make in COST_SCHEMES.items():
    scheme = make()
    position_part(scheme, max(LENGTHS), d_model=128, n_heads=4)()  # warm caches (RoPE's cos/sin table)
    parts = [position_part(scheme, L, d_model=128, n_heads=4) for L in LENGTHS]
    cost_bytes[name] = [allocated_bytes(p) for p in parts]
    cost_time[name] = [best_time(p, 5) for p in parts]
assert allocated_bytes(position_part(NoPosition(), max(LENGTHS))) == 0  # no encoding: nothing at all
bytes_table = pd.DataFrame(cost_bytes, index=[f"L={L}" for L in LENGTHS]).T
print("bytes allocated by the position part:")
print(bytes_table.to_string())

# %% [markdown]
# Memory is exact, so it can be read as a polynomial: fit bytes $= aL^2 + bL + c$ on three lengths
# and check it on the fourth. $a$ is the number of bytes per (query, key) pair.

# %% tags=["nbval-check-output"]
per_pair = {}
for name, values in cost_bytes.items():
    a, b, c = np.polyfit(LENGTHS[:3], values[:3], 2).round().astype(int)
    assert a * LENGTHS[3] ** 2 + b * LENGTHS[3] + c == values[3], name  # exact on the fourth length
    per_pair[name] = (a, b, c)
print(pd.DataFrame(per_pair, index=["bytes per pair (L²)", "bytes per token (L)", "constant"]).T.to_string())
assert per_pair["ALiBi compact"][0] == 0 and per_pair["ALiBi compact"][1] == (4 + 1) * 4  # (heads + 1) float32 per key
assert per_pair["T5 bias"][0] == 8 + 4 * 4  # one int64 offset index + 4 float32 head values per pair
assert all(per_pair[n][0] == 0 for n in ("sinusoidal", "learnable", "RoPE"))

# %% [markdown]
# The slopes on a log-log plot: memory grows as $L$ (slope 1) for the added tables, RoPE and
# compact ALiBi, and as $L^2$ (slope 2) for the biases that depend on the pair. Times printed
# below vary from run to run, so that cell's output (and the figure after it) is not compared by
# the tests. The memory slopes are asserted to within 0.05. Time depends on the machine, its
# threads and the fixed per-call overhead that dominates the fast hooks (their time slopes come
# out below 1), so for time the cell asserts only that the two pairwise biases grow clearly
# faster than every other scheme (a time slope at least 0.5 higher).

# %%
# NBVAL_IGNORE_OUTPUT
slopes = pd.DataFrame({name: {"memory slope": loglog_slope(LENGTHS, cost_bytes[name]),
                              "time slope": loglog_slope(LENGTHS, cost_time[name]),
                              "time at L=1024 (ms)": cost_time[name][-1] * 1e3} for name in COST_SCHEMES}).T
print(slopes.round(2).to_string())
quadratic = ["T5 bias", "ALiBi full"]
for name in COST_SCHEMES:
    assert abs(slopes.loc[name, "memory slope"] - (2 if name in quadratic else 1)) < 0.05, name
# time depends on the machine and its threads: assert only that the pairwise biases grow clearly faster
assert slopes.loc[quadratic, "time slope"].min() > slopes.drop(quadratic)["time slope"].max() + 0.5

# %%
# NBVAL_IGNORE_OUTPUT
fig, axes = plt.subplots(1, 2, figsize=(12, 4.3))
line_plot(axes[0], LENGTHS, {n: np.array(v) / 2**20 for n, v in cost_bytes.items()},
          "Memory of the position part", "sequence length L (tokens)", "bytes allocated (MiB)",
          logx=True, logy=True, markers=True)
line_plot(axes[1], LENGTHS, {n: np.array(v) * 1e3 for n, v in cost_time.items()},
          "Time of the position part", "sequence length L (tokens)", "time per call (ms)",
          logx=True, logy=True, markers=True)
for ax in axes:
    ax.set_xticks(LENGTHS, [str(L) for L in LENGTHS])
    ax.minorticks_off()
    lo, hi = ax.get_ylim()
    ref = np.array(LENGTHS, dtype=float) / LENGTHS[0]
    ax.plot(LENGTHS, lo * 3 * ref, color="grey", linewidth=0.8, linestyle=":")
    ax.plot(LENGTHS, lo * 3 * ref**2, color="grey", linewidth=0.8, linestyle="--")
    ax.text(LENGTHS[-1], lo * 3 * ref[-1], " O(L)", fontsize=10, color="grey", va="center")
    ax.text(LENGTHS[-1], lo * 3 * ref[-1] ** 2, " O(L²)", fontsize=10, color="grey", va="center")
plt.show()

# %% [markdown]
# Inside a real model the picture has one more layer: the attention scores themselves are
# $O(L^2)$ in time for every scheme, but SDPA's fused kernels keep their *memory* linear, so an
# $L^2$ bias tensor is what can make a scheme's memory quadratic. T5 and Swin always need it (their
# bias is an arbitrary function of the pair); ALiBi needs it only without a causal mask.
# `make bench` measures whole attention layers (time and profiler peak memory, L = 128-2048, every
# scheme of the library including Swin, PEG and the 2-D encodings); its tables and log-log figure
# are in `bench/results/schemes.md`.
#
# **Takeaway:** added tables, RoPE and compact ALiBi cost $O(L)$ memory; T5 and full ALiBi cost
# $O(L^2)$ (24 and more bytes per pair here), which at long contexts is the dominant cost.
#
# ## 8 · Which encoding when: the selection advice, with this series' evidence
#
# The source article, the Chinese-language tutorial *Transformer positional encoding: from sinusoidal to RoPE*, ends with advice on which encoding to choose. Here it is as situations, each
# row backed by a result of this series (notebook and section; 04 and 07 by topic).

# %% tags=["nbval-check-output"]
advice = pd.DataFrame([
    ("bidirectional encoder, fixed short inputs", "sinusoidal or learnable table",
     "00 §3 (no position: chance); 02 §6 (learnable vs sinusoidal); 05 §6 (sinusoidal solves the lag task)"),
    ("no position at all", "only in a causal decoder",
     "00 §1 (encoder is permutation-equivariant); 05 §5 (decoder learns position, encoder at chance)"),
    ("relative offsets matter (copying, local patterns)", "RoPE or a learned relative bias (T5)",
     "03 §5 (RoPE solves lag-3); 05 §6 (RoPE and T5 best, T5 learns a peak at -3)"),
    ("decoder LLM, KV cache", "RoPE, computed in float32",
     "03 §5 (cache decode = recomputation); 03 §8 (bf16 angles are wrong)"),
    ("train short, run long",
     "ALiBi; for RoPE, a short fine-tune at the long length, else NTK-aware or YaRN (softer, not flat)",
     "03 §9 (plain RoPE degrades past its length); 06 §4 (ALiBi flat to 8L, RoPE's perplexity rises; NTK-aware and YaRN "
     "lower RoPE's 8L perplexity with no training but stay far above ALiBi); 06 §8 (PI is worst zero-shot and "
     "needs its fine-tune; at this scale the same fine-tune without PI did better)"),
    ("long context, memory bound", "no (heads, L, L) bias: RoPE, or compact ALiBi under a causal mask",
     "05 §2 (compact ALiBi folded into SDPA); 05 §7 (T5 and full ALiBi grow as L²)"),
    ("images, fixed resolution", "2-D table or 2-D sin-cos; Swin bias inside windows",
     "04 (vision); 05 §3 (Swin index)"),
    ("images, variable resolution", "2-D sin-cos / 2-D RoPE, or a PEG convolution",
     "04 (vision, changing resolution); 05 §4 (PEG's zero padding carries position)"),
    ("checking what a model learned", "position probe, attention maps, ablations",
     "05 §4-5 (probes); 07 (debugging)"),
], columns=["situation", "choose", "evidence (notebook § section)"])
advice

# %% [markdown]
# ## Summary
#
# - **T5** buckets the offset $j - i$: exact buckets for distances 0-7 (0-15 causal), log-spaced
#   up to 128, one last bucket beyond; one learned scalar per bucket and head. Bucketing the
#   257 offsets once and gathering gives the same bias bit for bit, with far fewer bytes than
#   bucketing every pair (printed in section 1). Trained on the lag-3 task, a head peaks at offset −3.
# - **ALiBi**: slopes $2^{-8h/n}$ ($1/2 \dots 1/256$ for 8 heads; 12 heads take the 8-head slopes
#   plus every other 16-head slope). Under a causal mask the per-key form $m_h j$ is exact; folded
#   into q and k it reaches SDPA with `is_causal` and no (heads, L, L) mask: 8 GiB less per layer
#   for 32 heads at 8192 tokens in float32. In bf16 the compact values lose digits: the output
#   deviates ~70x more than with the full form at $L = 1024$ (0.28 against 0.004).
# - **Swin**: $(2M-1)^2$ table rows, a block-Toeplitz index; BEiT adds 3 rows for the class token.
# - **PEG**: on constant inputs, three zero-padded PEGs let a probe name most positions exactly;
#   circular padding leaves it at chance $1/36$ (numbers in section 4).
# - **NoPE**: a causal decoder's hidden states reveal position to a probe (several times
#   chance); the same weights without the mask are at chance (Haviv et al. 2022; Kazemnejad et al. 2023).
# - **One task, 3 seeds**: RoPE, T5, sinusoidal and learnable solve lag-3; ALiBi stays near no encoding
#   (its monotone bias cannot pick one offset); the table in section 6 has mean ± std.
# - **Cost**: added tables, RoPE and compact ALiBi use $O(L)$ memory; T5 (24 bytes per pair) and
#   full ALiBi $O(L^2)$; slopes 1 and 2 read off the log-log plot; `make bench` for whole layers.
#
# ## Exercises
#
# ### Exercise 1 · ALiBi slopes for any number of heads
# Write `my_alibi_slopes(n_heads)` returning the $n$ slopes as a tensor (or list): $2^{-8h/n}$ for a
# power of two, and the rule of section 2 otherwise. Do not call `alibi_slopes`.

# %% tags=["exercise", "nbval-check-output"]
def my_alibi_slopes(n_heads: int) -> torch.Tensor:
    raise NotImplementedError  # your code here


check_exercise_1(my_alibi_slopes)

# %% [markdown]
# ### Exercise 2 · Swin's index for a rectangular window
# Write `my_swin_index(window_h, window_w)` returning the `(h*w, h*w)` integer tensor of section 3
# for a window of `window_h` rows and `window_w` columns (patches in row-major order). Careful: the
# row difference is multiplied by the number of *column* offsets.

# %% tags=["exercise", "nbval-check-output"]
def my_swin_index(window_h: int, window_w: int) -> torch.Tensor:
    raise NotImplementedError  # your code here


check_exercise_2(my_swin_index)

# %% [markdown]
# ### Exercise 3 · Where do T5's exact buckets end?
# With T5's defaults (bidirectional, 32 buckets, max_distance 128), what is the smallest distance
# $d$ (key before the query) that shares its bucket with distance $d + 1$? Work it out from the
# rule, then check it with `t5_relative_bucket`.

# %% tags=["exercise", "nbval-check-output"]
first_shared_distance = ...  # your answer: an int

check_exercise_3(first_shared_distance)

# %% [markdown]
# ## Further reading
#
# - Shaw, Uszkoreit, Vaswani (2018), *Self-Attention with Relative Position Representations*: a
#   learned vector per clipped offset, the start of relative encodings.
# - Raffel et al. (2020), *Exploring the Limits of Transfer Learning with a Unified Text-to-Text
#   Transformer* (T5): the bucketed scalar bias. Reference code: Hugging Face
#   `transformers.models.t5.modeling_t5.T5Attention._relative_position_bucket` and `compute_bias`.
# - Press, Smith, Lewis (2022), *Train Short, Test Long: Attention with Linear Biases Enables Input
#   Length Extrapolation* (ALiBi). Reference code: `transformers.models.bloom.modeling_bloom`
#   (`build_alibi_tensor`, `_get_alibi_slopes`), which stores the compact per-key form.
# - Liu et al. (2021), *Swin Transformer: Hierarchical Vision Transformer using Shifted Windows*.
#   Reference code: `transformers.models.swin.modeling_swin` (`relative_position_index`).
# - Bao et al. (2022), *BEiT: BERT Pre-Training of Image Transformers*: the class-token rows.
#   Reference code: `transformers.models.beit.modeling_beit.BeitRelativePositionBias`.
# - Chu et al. (2021), *Conditional Positional Encodings for Vision Transformers* (CPVT, PEG).
# - Haviv, Ram, Press, Izsak, Levy (2022), *Transformer Language Models without Positional
#   Encodings Still Learn Positional Information*.
# - Kazemnejad et al. (2023), *The Impact of Positional Encoding on Length Generalization in
#   Transformers* (NoPE, and how the causal mask yields absolute position).
# - PyTorch: `torch.nn.functional.scaled_dot_product_attention` (`is_causal`, `attn_mask`, `scale`).

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ## Solutions

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
def my_alibi_slopes(n_heads: int) -> torch.Tensor:
    def power_of_two(n: int) -> list[float]:
        return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]

    p = 2 ** math.floor(math.log2(n_heads))  # the power of two at or below n_heads
    return torch.tensor(power_of_two(p) + power_of_two(2 * p)[0::2][: n_heads - p])


check_exercise_1(my_alibi_slopes)

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
def my_swin_index(window_h: int, window_w: int) -> torch.Tensor:
    rows = torch.arange(window_h).repeat_interleave(window_w)  # row of each patch, row-major
    cols = torch.arange(window_w).repeat(window_h)
    dr = rows[:, None] - rows[None, :] + window_h - 1  # query minus key, shifted to >= 0
    dc = cols[:, None] - cols[None, :] + window_w - 1
    return dr * (2 * window_w - 1) + dc


check_exercise_2(my_swin_index)

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
# 16 buckets per direction, half of them (8) exact: distances 0-7 have their own bucket; 8 starts
# the log-spaced part, where bucket 8 + floor(8 * log(d/8) / log(16)) is 8 for d = 8 and 9.
first_shared_distance = 8
assert t5_relative_bucket(torch.tensor([-8])) == t5_relative_bucket(torch.tensor([-9]))
check_exercise_3(first_shared_distance)

# %% [markdown]
# ## End of notebook 05
# <!-- Keep this cell last. "Run All" ends on the last cell, and JupyterLab unfolds the section that
#      holds it: outside "Solutions", this heading leaves the solutions folded. -->

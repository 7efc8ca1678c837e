# %% [markdown]
# # 05 · Relative biases
#
# Notebooks 01-03 put position into a vector added to the tokens, or into a rotation of queries
# and keys. There is a third place: the attention **scores**. A relative bias adds a number
# $b(i, j)$ to the score of query $i$ and key $j$ that depends only on where the two tokens are
# relative to each other. How can such a number be built, what does it cost, and what else can
# carry position when no encoding is given at all?
#
# **What you will learn**
# - T5's bucketed bias and ALiBi's fixed slopes, each as a formula and a few lines of code, and
#   why ALiBi's compact per-key form is exact under a causal mask;
# - Swin's 2-D table and its index, and BEiT's class-token variant;
# - Transformer-XL's four-term score and its relative shift;
# - that PEG's zero padding, and a decoder's causal mask, give a model position with no encoding;
# - how every family does on one task (3 seeds), and what each costs as the sequence grows.
#
# **Prerequisites:** [00 · Permutation blindness](00_permutation_blindness.ipynb) (the three places
# position can enter, and why an encoder without position is blind to order),
# [01 · Sinusoidal encoding](01_sinusoidal.ipynb), [02 · Learnable absolute encoding](02_learnable.ipynb)
# and [03 · RoPE](03_rope.ipynb) (the schemes compared here).
#
# **Run time:** about 43 s on a laptop CPU (measured with `make execute`, one thread), most of it
# in 21 small training runs of 150 steps (7 schemes × 3 seeds).

# %%
import itertools
import math
from functools import partial

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from torch.testing import assert_close

from posenc_course.data import lag_task
from posenc_course.exercises.nb05 import (
    check_exercise_1,
    check_exercise_2,
    check_exercise_3,
    check_exercise_4,
    check_exercise_5,
)
from posenc_course.explorers import relative_explorer, relative_values
from posenc_course.plotting import (
    COLORS,
    LINESTYLES,
    MARKERS,
    heatmap,
    line_plot,
)
from posenc_course.report import checked, compare
from posenc_course.training import (
    accuracy,
    progress,
    run_each,
    seed_everything,
    setup_notebook,
    train,
)
from posenc_lib.analysis.cost import (
    allocated_bytes,
    best_time,
    loglog_slope,
    position_part,
)
from posenc_lib.analysis.probes import position_probe_accuracy
from posenc_lib.attention import MultiHeadAttention
from posenc_lib.conditional.peg import PEG
from posenc_lib.models import TinyTransformer
from posenc_lib.qk_bias.transformer_xl import (
    TransformerXLRelative,
    relative_shift,
)
from posenc_lib.registry import build_scheme
from posenc_lib.scheme import NoPosition
from posenc_lib.score_bias.alibi import ALiBi, alibi_bias, alibi_slopes
from posenc_lib.score_bias.swin import (
    SwinRelativeBias,
    swin_relative_position_index,
)
from posenc_lib.score_bias.t5 import T5RelativeBias, t5_relative_bucket

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
# T5 (Raffel et al. 2020) keeps one scalar per head and shares it between offsets: how are
# offsets grouped?
#
# The offset $j - i$ is put into one of 32 buckets. In an encoder (**bidirectional**) half of
# them serve keys before the query, half keys after it; a decoder (**causal**) gives all 32 to
# the past. Near the query each distance has its own bucket; farther ones are **log-spaced** up to
# `max_distance` = 128, and everything beyond shares the last bucket. With $B$ buckets per side
# ($B = 16$ bidirectional, 32 causal), a key at distance $n$ gets
#
# $$\text{bucket}(n) = \begin{cases} n & n < B/2\\
# \min\Big(B - 1,\; \tfrac{B}{2} + \Big\lfloor \tfrac{B}{2}\,
# \tfrac{\log(2n/B)}{\log(2\,\text{max\_distance}/B)} \Big\rfloor\Big) & n \ge B/2 \end{cases}$$
#
# plus $B$ for keys after the query in the bidirectional case. The score is
# $q_i^\top k_j + b_{h}(\text{bucket}(j - i))$, a learned `(32, heads)` table shared by every
# layer, with no $1/\sqrt{d}$: T5 folds the scale into the initialisation of its query weights,
# and so does the library (`T5RelativeBias.score_scale()` is 1). In code, checked against the
# library (itself tested against Hugging Face's `_relative_position_bucket`):

# %% tags=["nbval-check-output"]
def t5_bucket(offset, bidirectional=True, num_buckets=32, max_distance=128):
    """T5's bucket of each offset j - i (key minus query)."""
    side = num_buckets // 2 if bidirectional else num_buckets  # B
    after = (offset > 0).long() * side if bidirectional else 0  # keys after
    n = offset.abs() if bidirectional else (-offset).clamp(min=0)  # distance
    exact = side // 2
    log_part = (
        exact
        + (
            torch.log(n / exact)
            / math.log(max_distance / exact)
            * (side - exact)
        ).long()
    )
    return after + torch.where(n < exact, n, log_part.clamp(max=side - 1))


for bi in (True, False):
    offs_all = torch.arange(-300, 301)
    assert torch.equal(
        t5_bucket(offs_all, bi), t5_relative_bucket(offs_all, bidirectional=bi)
    )
print(
    "the inline t5_bucket equals t5_relative_bucket for offsets -300..300, both"
    " kinds"
)

# %% tags=["nbval-check-output"]
offsets = torch.arange(-160, 161)
buckets_bi = t5_relative_bucket(offsets, bidirectional=True)
buckets_causal = t5_relative_bucket(offsets, bidirectional=False)

fig, ax = plt.subplots(figsize=(7.5, 3.8))
line_plot(
    ax,
    offsets.numpy(),
    {
        "bidirectional (encoder)": buckets_bi.numpy(),
        "causal (decoder)": buckets_causal.numpy(),
    },
    "T5 bucket of each offset (32 buckets, max_distance 128)",
    "offset j - i (key minus query, tokens)",
    "bucket id",
)
for x in (-128, 128):
    ax.axvline(x, color="grey", linewidth=0.8)
ax.text(-126, 29, "max_distance", fontsize=10, color="grey")
plt.show()

# %% [markdown]
# **Check.** Bidirectional: distances 0-7 are exact on each side, keys after the query use
# buckets 16-31, distances from 128 on share the last bucket. Causal: distances 0-15 are exact.
# T5 scales $q^\top k$ by 1, ALiBi by $1/\sqrt{d}$.

# %% tags=["nbval-check-output"]
past = -offsets[offsets <= 0]  # distance of a key at or before the query
print(
    "distinct buckets used by offsets -160..160: bidirectional",
    len(buckets_bi.unique()),
    "| causal",
    len(buckets_causal.unique()),
)

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
assert torch.equal(t5_relative_bucket(-torch.arange(8)), torch.arange(8))
assert torch.equal(
    t5_relative_bucket(torch.arange(1, 8)), 16 + torch.arange(1, 8)
)
assert torch.equal(
    t5_relative_bucket(-torch.arange(16), bidirectional=False), torch.arange(16)
)
assert (buckets_bi[offsets <= -128] == 15).all() and (
    buckets_bi[offsets >= 128] == 31
).all()
assert (buckets_causal[offsets > 0] == 0).all() and (
    buckets_causal[offsets <= -128] == 31
).all()
assert (
    t5_relative_bucket(-past.flip(0)).diff() >= 0
).all()  # never decreases with the distance
assert T5RelativeBias(4).score_scale(16) == 1.0 and ALiBi(4).score_scale(
    16
) == 1 / math.sqrt(16)
checked(
    "exact and log-spaced buckets on both sides, the last bucket from 128 on,"
    " the causal buckets, T5's scale 1 and ALiBi's 1/sqrt(d)"
)

# %% [markdown]
# Each (query, key) pair gets the bucket of its offset, so the bucket map is constant along every
# diagonal (a Toeplitz matrix):

# %% tags=["nbval-check-output"]
L_SHOW = 48
pos = torch.arange(L_SHOW)[None]
fig, axes = plt.subplots(1, 2, figsize=(7.5, 3.4))
for ax, bidirectional in zip(axes, (True, False)):
    scheme = T5RelativeBias(4, bidirectional=bidirectional)
    heatmap(
        ax,
        scheme.buckets(pos, pos)[0].numpy(),
        f"T5 buckets, {'bidirectional' if bidirectional else 'causal'}",
        "key position j",
        "query position i",
        colorbar_label="bucket id",
    )
plt.show()

# %% [markdown]
# **Takeaway:**
# - T5 spends its buckets near the query and lumps far offsets together; past `max_distance` all
#   distances look alike.
# - The bias depends on the offset only, and is added to the raw score $q^\top k$.

# %% [markdown] jp-MarkdownHeadingCollapsed=true tags=["deep-dive"]
# ### Deep dive (optional) · Bucketing 257 offsets instead of $L^2$ pairs
#
# The library computes the bias without bucketing all $L^2$ pairs. Only the offsets matter, and
# every offset beyond $\pm$`max_distance` shares the last bucket, so `T5RelativeBias.offset_bias()`
# buckets the 257 offsets $-128 \dots 128$ once, and each pair only **gathers** the row of its
# (clamped) offset. The result is the same table entries, bit for bit (the conformance tests in
# `tests/lib/test_relative.py` compare it with Hugging Face's `T5Attention.compute_bias`). Below: both
# ways at $L = 1024$, their equality, and the bytes each allocates (counted exactly by
# `posenc_lib.analysis.cost.allocated_bytes`, temporaries included).

# %% tags=["deep-dive", "nbval-check-output"]
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
bytes_pairs, bytes_gather = allocated_bytes(every_pair), allocated_bytes(
    gathered
)
print(
    f"L = 1024, 4 heads: bucketing every pair allocates {mib(bytes_pairs)},"
    f" offsets + gather {mib(bytes_gather)}"
)
assert bytes_gather < bytes_pairs / 2

# %% tags=["deep-dive"]
# NBVAL_IGNORE_OUTPUT
time_pairs, time_gather = best_time(every_pair, 3), best_time(gathered, 3)
print(
    f"time: every pair {time_pairs * 1e3:.1f} ms, offsets + gather"
    f" {time_gather * 1e3:.1f} ms ({time_pairs / time_gather:.1f}x faster)"
)

# %% [markdown]
# ## 2 · ALiBi: a fixed straight line per head
#
# **Question.** Can a bias work with no parameters at all?
#
# ALiBi (Press et al. 2022) adds $-m_h\,|i - j|$ to head $h$'s scores: a penalty linear in
# distance, with a fixed slope per head. For $n$ heads, $n$ a power of two, $m_h = 2^{-8h/n}$,
# $h = 1..n$: a geometric sequence from $2^{-8/n}$ down to $2^{-8}$. For other head counts the
# reference code takes the $p$ slopes of the power of two $p$ below $n$, then every other slope
# of $2p$ until there are $n$. The power-of-two case, against the library:

# %% tags=["nbval-check-output"]
def alibi_slopes_pow2(n):
    return torch.tensor([2.0 ** (-8 * h / n) for h in range(1, n + 1)])


assert torch.equal(alibi_slopes_pow2(8), alibi_slopes(8))
assert torch.equal(alibi_slopes_pow2(4), alibi_slopes(4))
print("4 heads:", alibi_slopes_pow2(4).tolist())

# %% tags=["nbval-check-output"]
slopes8, slopes12 = alibi_slopes(8), alibi_slopes(12)
print("8 heads: ", [f"{s:.4g}" for s in slopes8.tolist()])
print("12 heads:", [f"{s:.4g}" for s in slopes12.tolist()])

fig, ax = plt.subplots(figsize=(7, 3.6))
ax.semilogy(
    range(1, 9),
    slopes8,
    color=COLORS[0],
    linestyle=LINESTYLES[0],
    marker=MARKERS[0],
    label="8 heads",
)
ax.semilogy(
    range(1, 13),
    slopes12,
    color=COLORS[1],
    linestyle=LINESTYLES[1],
    marker=MARKERS[1],
    label="12 heads",
)
ax.set(
    title="ALiBi slopes per head",
    xlabel="head h",
    ylabel="slope m_h (log scale)",
)
ax.legend()
plt.show()

# %% [markdown]
# **Check.** 8 heads: exactly $1/2, 1/4, \dots, 1/256$. 12 heads: the 8 slopes of 8 heads, then
# the odd-numbered slopes of 16 heads, which interleave with them.

# %% tags=["nbval-check-output"]
assert torch.equal(slopes8, torch.tensor([2.0**-h for h in range(1, 9)]))
slopes16 = alibi_slopes(16)
assert torch.equal(slopes12[:8], slopes8) and torch.equal(
    slopes12[8:], slopes16[0:8:2]
)
assert_close(slopes12[8:], torch.tensor([2 ** -(h + 0.5) for h in range(4)]))
print("12-head slopes = 8-head slopes + every other 16-head slope")

# %% [markdown]
# Under a causal mask only keys $j \le i$ count, and there $-m(i - j) = -m\,i + m\,j$. The term
# $-m\,i$ is the same for every key of query $i$, and a softmax ignores a constant added to its
# row, so the per-key bias $m\,j$, shape (heads, 1, L), gives the same attention as the full
# (heads, L, L) one: the **compact** form, which BLOOM stores. Below, two heads and the compact form.

# %% tags=["nbval-check-output"]
L_SHOW = 24
pos = torch.arange(L_SHOW)[None]
full = alibi_bias(slopes8, pos, pos)  # (1, 8, L, L)
compact = alibi_bias(slopes8, pos, pos, compact=True)  # (1, 8, 1, L)
fig, axes = plt.subplot_mosaic(
    [["head 1", "head 8"], ["compact", "compact"]],
    figsize=(7.5, 6.0),
    height_ratios=[3, 2],
)
heatmap(
    axes["head 1"],
    full[0, 0].numpy(),
    "ALiBi bias, head 1 (m = 1/2)",
    "key position j",
    "query position i",
    colorbar_label="bias added to the score",
)
heatmap(
    axes["head 8"],
    full[0, 7].numpy(),
    "ALiBi bias, head 8 (m = 1/256)",
    "key position j",
    "query position i",
    colorbar_label="bias added to the score",
)
heatmap(
    axes["compact"],
    compact[0, :, 0].numpy(),
    "Compact form m_h * j, 8 heads",
    "key position j",
    "head",
    colorbar_label="bias added to the score",
)
plt.show()

causal = torch.ones(L_SHOW, L_SHOW, dtype=torch.bool).tril()
scores = torch.randn(1, 8, L_SHOW, L_SHOW, generator=gen)
attn_full = (scores + full).masked_fill(~causal, float("-inf")).softmax(-1)
attn_compact = (
    (scores + compact).masked_fill(~causal, float("-inf")).softmax(-1)
)
assert_close(attn_compact, attn_full)
no_mask_gap = (
    ((scores + full).softmax(-1) - (scores + compact).softmax(-1))
    .abs()
    .max()
    .item()
)
print(
    "causal: same attention; without the mask they differ by up to"
    f" {no_mask_gap:.3f}"
)
assert no_mask_gap > 0.1

# %% [markdown]
# **What the compact form saves.** A 32-head layer (as MPT-7B) at 8192 tokens: the full bias for
# one sequence in float32 and bf16, against the compact form.

# %% tags=["nbval-check-output"]
heads, length = 32, 8192
full_bytes = {
    dtype: heads * length * length * torch.finfo(dtype).bits // 8
    for dtype in (torch.float32, torch.bfloat16)
}
compact_bytes = heads * length * 4
print(
    "32 heads, L = 8192: full (heads, L, L) bias"
    f" {full_bytes[torch.float32] / 2**30:.0f} GiB in float32,"
    f" {full_bytes[torch.bfloat16] / 2**30:.0f} GiB in bf16; compact"
    f" {compact_bytes / 2**10:.0f} KiB"
    f" ({full_bytes[torch.float32] // compact_bytes}x less)"
)
assert full_bytes[torch.float32] // compact_bytes == length

# %% [markdown]
# ### Explorer · T5 buckets for a length, ALiBi for a head count
#
# **Question:** what do T5's buckets look like at the lengths a model meets, and ALiBi's slopes
# and penalties for your head count?
#
# The explorer draws T5's bucket of every offset (both kinds), ALiBi's slope per head, and the
# ALiBi bias of the last query against the keys, one labelled line per head. In JupyterLab two
# sliders choose the heads (1 to 16) and the length (8 to 256); the executed notebook shows 8
# heads at $L = 64$.
#
# **What to try.** Lengthen the sequence to 256: offsets beyond $\pm 128$ all fall into the last
# bucket of their side. Try 12 heads: the slopes are no longer in order. Each ALiBi head has its
# own range, about $1/m_h$ tokens before its penalty reaches $-1$.

# %% tags=["nbval-check-output"]
relative_explorer()

# %% tags=["nbval-check-output"]
short, long = relative_values(8, 64), relative_values(8, 256)
beyond = {
    side: set(long["t5_bidirectional"][mask].tolist())
    for side, mask in (
        ("before", long["offset"] <= -128),
        ("after", long["offset"] >= 128),
    )
}
assert beyond == {
    "before": {15},
    "after": {31},
}  # one bucket per side beyond max_distance
assert len(short["max_distance"]) == 0 and long["max_distance"].tolist() == [
    -128,
    128,
]
slopes_12 = relative_values(12, 64)["slope"]
assert np.all(np.diff(short["slope"]) < 0) and not np.all(
    np.diff(slopes_12) < 0
)
print(
    "T5 buckets beyond ±128 at L = 256:",
    beyond,
    "| 12 heads' slopes:",
    [f"{s:.3g}" for s in slopes_12],
)
print(
    "8 heads, steepest penalty on the farthest key:"
    f" {short['alibi_bias'].min():.1f} at L = 64,"
    f" {long['alibi_bias'].min():.1f} at L = 256; flattest head at L = 256:"
    f" {long['alibi_bias'][-1].min():.3f}"
)

# %% [markdown]
# With 8 heads the steepest head (slope 1/2) penalises the farthest key by 31.5 at $L = 64$ and by
# 127.5 at $L = 256$; the flattest (1/256) by 0.996 even at 256 tokens.
#
# **Takeaway:**
# - ALiBi has no parameters: each head gets a fixed recency penalty, geometric across heads.
# - Under a causal mask it collapses to a per-key vector $m_h j$: no (heads, L, L) tensor
#   (8 GiB per layer at 8192 tokens in float32 otherwise).

# %% [markdown] jp-MarkdownHeadingCollapsed=true tags=["deep-dive"]
# ### Deep dive (optional) · Compact ALiBi inside SDPA, and its cost in bf16
#
# **How the compact form reaches SDPA.** `scaled_dot_product_attention` takes
# either `is_causal=True` (it applies the mask itself, in memory linear in $L$) or an explicit
# `attn_mask`, not both. Adding a (heads, 1, L) bias and the causal mask as one float mask builds
# a (heads, L, L) tensor after all. The library avoids it with a small identity: a bias that
# depends on the key only is a dot product with a constant. Append a 1 to every query and
# $m_h j/\text{scale}$ to key $j$; then $\text{scale}\cdot q'^\top k' = \text{scale}\cdot q^\top k + m_h j$
# (`attention.fold_key_bias`; $v$ gets a zero column so all three share one head size, which the
# fast kernels need). `MultiHeadAttention` does this for any per-key bias under `causal=True`.
# Below: the layer with compact ALiBi (folded, `is_causal`) against the same layer with the full
# bias (one float mask), outputs and bytes.


# %% tags=["deep-dive", "nbval-check-output"]
def alibi_layer(
    compact: bool, heads: int = 8, d_model: int = 64
) -> MultiHeadAttention:
    torch.manual_seed(0)
    return MultiHeadAttention(
        d_model, heads, ALiBi(heads, causal=compact)
    ).eval()


x = torch.randn(1, 512, 64, generator=gen)
layer_folded, layer_mask = alibi_layer(True), alibi_layer(False)
with torch.no_grad():
    assert_close(
        layer_folded(x, causal=True),
        layer_mask(x, causal=True),
        rtol=1e-4,
        atol=1e-5,
    )
bytes_folded = allocated_bytes(lambda: layer_folded(x, causal=True))
bytes_mask = allocated_bytes(lambda: layer_mask(x, causal=True))
mask_bytes = 8 * 512 * 512 * 4  # one float32 (heads, L, L) tensor
print(
    "one layer, L = 512, 8 heads: full bias + mask over"
    f" {bytes_mask // 2**20 // 5 * 5} MiB, compact folded {mib(bytes_folded)};"
    f" one (8, 512, 512) float32 tensor is {mib(mask_bytes)}"
)
assert bytes_mask - bytes_folded > mask_bytes and bytes_folded < mask_bytes / 4

# %% [markdown] tags=["deep-dive"]
# **A caveat: precision.** The two forms are equal in exact arithmetic, not in 16-bit floats. The
# compact values $m_h j$ grow with the position (up to 511 for head 1 at $L = 1024$), and bf16
# keeps 8 significant bits, so near 511 it rounds to steps of 2; the full form's values that
# matter (near the diagonal) are small and keep their digits. Measured: the same layer in bf16,
# against a float64 run of the full form.

# %% tags=["deep-dive", "nbval-check-output"]
x = torch.randn(1, 1024, 64, generator=gen)
with torch.no_grad():
    reference = alibi_layer(False).double()(x.double(), causal=True)
    bf16_error = {
        f"{form} bias": (
            (
                alibi_layer(form == "compact")
                .bfloat16()(x.bfloat16(), causal=True)
                .double()
                - reference
            )
            .abs()
            .max()
            .item()
        )
        for form in ("full", "compact")
    }
print(
    "bf16, L = 1024, largest deviation of the output from float64:",
    {k: round(v, 3) for k, v in bf16_error.items()},
    "(compact / full:"
    f" {bf16_error['compact bias'] / bf16_error['full bias']:.0f}x)",
)
assert bf16_error["compact bias"] > 5 * bf16_error["full bias"]

# %% [markdown] tags=["deep-dive"]
# So in bf16 or fp16 at long lengths the memory saving costs accuracy (BLOOM, which uses the
# compact form, runs in bf16); in float32 both forms agree to rounding (checked above at
# $L = 512$).

# %% [markdown]
# ## 3 · Swin: a 2-D table for a window, and BEiT's class token
#
# **Question.** In an image, patches sit on a grid. How does a relative bias index 2-D offsets?
#
# Swin (Liu et al. 2021) attends inside windows of $M \times M$ patches. Two patches differ by
# $(\Delta r, \Delta c)$, each in $[-(M-1), M-1]$: one learned bias per offset and head, in a
# table of $(2M-1)^2$ rows. The **index** of a (query, key) pair shifts both differences to be
# non-negative and flattens: $\text{index} = (\Delta r + M - 1)(2M - 1) + (\Delta c + M - 1)$.

# %% tags=["nbval-check-output"]
M = 3
index = swin_relative_position_index(
    M, M
)  # (9, 9): pair of patches -> row of the 25-row table
uses = torch.bincount(index.flatten(), minlength=(2 * M - 1) ** 2).reshape(
    2 * M - 1, 2 * M - 1
)

beit_index = swin_relative_position_index(
    M, M, n_prefix=1
)  # (10, 10): a class token first

fig, axes = plt.subplot_mosaic(
    [["swin", "swin"], ["uses", "beit"]],
    figsize=(7.5, 8.2),
    height_ratios=[4.4, 3],
)
axes = [axes["swin"], axes["uses"], axes["beit"]]
heatmap(
    axes[0],
    index.numpy(),
    f"Swin index, {M}x{M} window (row-major patches)",
    "key patch j",
    "query patch i",
    colorbar_label="row of the bias table",
)
for i in range(M * M):
    for j in range(M * M):
        axes[0].text(
            j,
            i,
            int(index[i, j]),
            ha="center",
            va="center",
            fontsize=10,
            color="white" if index[i, j] < 16 else "black",
        )
heatmap(
    axes[1],
    uses.numpy(),
    f"Pairs per table row ({(2 * M - 1) ** 2} rows)",
    "column offset  c_i - c_j",
    "row offset  r_i - r_j",
    colorbar_label="(query, key) pairs",
    extent=(-M + 0.5, M - 0.5, M - 0.5, -M + 0.5),
)
heatmap(
    axes[2],
    beit_index.numpy(),
    "BEiT: class token 0 + window",
    "key token j",
    "query token i",
    colorbar_label="row of the bias table",
)
for t in range(M * M + 1):  # the class token's rows 25-27, written out
    for i, j in {(0, t), (t, 0)}:
        axes[2].text(j, i, int(beit_index[i, j]), ha="center", va="center",
                     fontsize=10, color="black")
for xy, w, h in [((-0.5, -0.5), M * M + 1, 1), ((-0.5, -0.5), 1, M * M + 1)]:
    axes[2].add_patch(plt.Rectangle(xy, w, h, fill=False, color="black", lw=2))
plt.show()

# %% [markdown]
# The index is block-Toeplitz: one block per pair of patch rows, each constant along its
# diagonals. Offset $(0, 0)$ is used by all 9 patches, each corner offset by one pair. BEiT puts
# a class token in front, with three extra table rows of its own (class → patch, patch → class,
# class → class), outlined in the last panel; the patches keep Swin's index.
#
# **Check.** The index is the formula, every table row is used, and the library's scheme gathers
# the table with it.

# %% tags=["nbval-check-output"]
n_rel = (2 * M - 1) ** 2
print(
    f"Swin {M}x{M}: table of {n_rel} rows; BEiT with a class token: {n_rel + 3}"
    f" rows; index shapes {tuple(index.shape)} and {tuple(beit_index.shape)}"
)

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
rows, cols = torch.arange(M).repeat_interleave(M), torch.arange(M).repeat(M)
formula = (rows[:, None] - rows[None, :] + M - 1) * (2 * M - 1) + (
    cols[:, None] - cols[None, :] + M - 1
)
assert torch.equal(index, formula)
assert (
    (uses > 0).all()
    and uses.sum() == (M * M) ** 2
    and uses[M - 1, M - 1] == M * M
)
swin = SwinRelativeBias(n_heads=2, window_h=M, window_w=M)
bias = swin.score_bias(torch.arange(M * M)[None], torch.arange(M * M)[None])
assert torch.equal(bias[0], swin.table[index].permute(2, 0, 1))

assert torch.equal(beit_index[1:, 1:], index)
assert (
    (beit_index[0, 1:] == n_rel).all()
    and (beit_index[1:, 0] == n_rel + 1).all()
    and beit_index[0, 0] == n_rel + 2
)
checked(
    "Swin's index is the formula, every table row is used, the scheme gathers"
    " the table with it; BEiT's rows for the class token"
)

# %% [markdown]
# **Takeaway:**
# - Swin's bias is T5's idea in 2-D without buckets: a window is small, so every 2-D offset gets
#   its own learned value.
# - A class token, which has no place on the grid, gets three entries of its own (BEiT).
#
# ## 4 · PEG: zero padding leaks absolute position
#
# **Question.** CPVT (Chu et al., ICLR 2023) has no position table: its Position Encoding
# Generator (PEG) adds a depthwise $3\times 3$ convolution of the tokens, put back on their grid.
# A convolution is translation-equivariant: where does *absolute* position come from?
#
# From the border: the convolution pads the grid with zeros, so an edge token sees zeros where an
# interior one sees neighbours. On a **constant** input only the padding can make the output
# depend on position; **circular** padding (a torus) has no border. Below, one channel of the
# output for a constant input, one PEG and three stacked. CPVT places its PEG after the first
# block; the one-layer ViT of [04](04_vision.ipynb) puts it on the embeddings.

# %% tags=["nbval-check-output"]
G, D_PEG = 6, 16  # a 6 x 6 grid of 16-channel tokens


def peg_stack(padding: str, depth: int, seed: int = 0) -> list[PEG]:
    torch.manual_seed(seed)
    return [PEG(D_PEG, G, G, padding=padding) for _ in range(depth)]


def peg_features(
    pegs: list[PEG], n: int, noise: float, seed: int
) -> torch.Tensor:
    """Outputs (n, G*G, D_PEG) for constant inputs (all ones) plus a little
    per-token noise."""
    x = 1.0 + noise * torch.randn(
        n, G * G, D_PEG, generator=torch.Generator().manual_seed(seed)
    )
    with torch.no_grad():
        for p in pegs:
            x = p.add_to_embeddings(x, None)
    return x


STACKS = [("zeros", 1), ("zeros", 3), ("circular", 3)]
outs = [
    peg_features(peg_stack(pad, depth), 1, 0.0, 0)[0, :, 0].reshape(G, G)
    for pad, depth in STACKS
]
lo, hi = min(o.min() for o in outs), max(o.max() for o in outs)
fig, axes = plt.subplots(1, 3, figsize=(7.5, 2.9))
for ax, (padding, depth), out in zip(axes, STACKS, outs):
    flat = bool(out.max() - out.min() < 1e-6)  # circular: one value
    im = heatmap(
        ax,
        out.numpy(),
        f"{depth} PEG, {padding}" + (": constant" if flat else ""),
        "grid column",
        "grid row",
        colorbar_label="channel 0 output",
    )
    im.set_clim(float(lo), float(hi))  # one colour scale for the three
plt.show()
assert float(outs[2].max() - outs[2].min()) < 1e-6  # no border, no position

# %% [markdown]
# A **probe** makes "leaks" a number: `diagnostics.position_probe_accuracy` trains a small MLP to
# name each token's index (0-35) from its output vector. Chance is $1/36$.

# %%
chance_peg = 1 / G**2
peg_probe = {}
for padding, depth in progress(
    [("zeros", 1), ("zeros", 3), ("circular", 3)], desc="probes of 3 PEG stacks"
):
    pegs = peg_stack(padding, depth)
    peg_probe[f"{depth} PEG, {padding}"] = position_probe_accuracy(
        peg_features(pegs, 1024, 0.1, 1), peg_features(pegs, 512, 0.1, 2)
    )
distinct_one = len(
    torch.unique(peg_features(peg_stack("zeros", 1), 1, 0.0, 0)[0], dim=0)
)
print(
    f"chance {chance_peg:.3f}; one zero-padded PEG gives {distinct_one}"
    f" distinct vectors (a ceiling of {distinct_one / G**2:.3f} for an exact"
    " probe)"
)
display(pd.Series(peg_probe, name="probe accuracy").round(3).to_frame())

# %% [markdown]
# **Check.** Three zero-padded PEGs let the probe name most positions; one PEG tells only the nine
# border classes apart; circular padding leaves the probe at chance.

# %%
assert peg_probe["3 PEG, zeros"] > 0.5 > 10 * chance_peg
assert (
    distinct_one == 9 and peg_probe["1 PEG, zeros"] < distinct_one / G**2 + 0.05
)
assert peg_probe["3 PEG, circular"] < 2 * chance_peg

# %% [markdown]
# **Takeaway:**
# - A PEG's position signal is its zero border: absolute, starting at the edges, one kernel
#   radius further in per layer. Remove the border and it is gone.
#
# ## 5 · NoPE: the causal mask is a position signal
#
# **Question.** An encoder without position cannot know where a token is (notebook 00). Does a
# **decoder** without position know?
#
# Haviv et al. (2022) found that causal language models with no positional encoding (NoPE) come
# close to those with one, and that their states encode position: under the causal mask token $i$
# averages over exactly $i + 1$ tokens. Here: a 1-layer decoder with no encoding, trained on the
# task of section 7, then a probe on its states; the same weights **without** the mask are an
# encoder.

# %%
VOCAB, SEQ, LAG, D_MODEL, HEADS, STEPS = 16, 24, 3, 32, 4, 150
train_data = lag_task(4096, SEQ, VOCAB, LAG, torch.Generator().manual_seed(100))
test_data = lag_task(512, SEQ, VOCAB, LAG, torch.Generator().manual_seed(101))
sizes = {
    "d_model": D_MODEL,
    "n_heads": HEADS,
    "max_len": SEQ,
}  # each scheme below is built for these
SCHEMES = {
    "none": partial(build_scheme, "none", **sizes),
    "sinusoidal": partial(build_scheme, "sinusoidal", **sizes),
    "learnable": partial(
        build_scheme, "learnable", **sizes, init_std=1.0
    ),  # at the tokens' scale, N(0, 1): 02 §3
    "RoPE": partial(build_scheme, "rope", **sizes),
    "T5 bias": partial(build_scheme, "t5", **sizes, bidirectional=False),
    "ALiBi": partial(build_scheme, "alibi", **sizes),
    "Transformer-XL": partial(build_scheme, "transformer-xl", **sizes),
}


def train_decoder(setup: tuple[str, int]) -> TinyTransformer:
    """A 1-layer causal decoder with the scheme named in ``setup``, trained on
    the lag task with its seed."""
    name, seed = setup
    data_gen = seed_everything(seed)
    model = TinyTransformer(
        VOCAB,
        VOCAB,
        d_model=D_MODEL,
        n_heads=HEADS,
        n_layers=1,
        causal=True,
        pool="none",
        scheme=SCHEMES[name](),
    )
    train(model, train_data, STEPS, lr=1e-2, generator=data_gen, desc=None)
    return model


trained = {
    ("none", 0): train_decoder(("none", 0))
}  # (scheme, seed) -> model; section 7 trains the rest
nope = trained["none", 0]
probe_x = (
    lag_task(1024, SEQ, VOCAB, LAG, torch.Generator().manual_seed(102))[0],
    lag_task(512, SEQ, VOCAB, LAG, torch.Generator().manual_seed(103))[0],
)
nope_probe = {}
for causal in progress(
    (True, False), desc="probes of the NoPE decoder, with and without its mask"
):
    nope.causal = causal
    with torch.no_grad():
        states = [nope.features(t) for t in probe_x]
    nope_probe[
        "decoder (causal mask)" if causal else "same weights, no mask (encoder)"
    ] = position_probe_accuracy(*states)
nope.causal = True
chance = 1 / SEQ
print(f"chance {chance:.3f}")
display(pd.Series(nope_probe, name="probe accuracy").round(3).to_frame())

# %% [markdown]
# **Check.** The decoder's states name the position several times more often than chance;
# without the mask the probe is at chance, as for any encoder without position.

# %% tags=["nbval-check-output"]
assert nope_probe["decoder (causal mask)"] > 3 * chance
assert nope_probe["same weights, no mask (encoder)"] < 1.5 * chance
print(f"decoder / chance = {nope_probe['decoder (causal mask)'] / chance:.1f}")

# %% [markdown]
# **Takeaway:**
# - With a causal mask "no positional encoding" does not mean "no position": how many tokens a
#   query sees is a signal. An encoder has none.

# %% [markdown]
# ## 6 · Transformer-XL: content and position in four terms
#
# **Question.** T5 and ALiBi add a number that depends on the offset alone. Can the position term
# depend on *what* the query is looking for?
#
# Transformer-XL (Dai et al. 2019) expands the score of an absolute encoding,
# $(x_i + p_i)^\top W_q^\top W_k (x_j + p_j)$, into four terms, replaces the key position by a
# relative one $r_{i-j}$ and the query's by learned vectors $u$, $v$:
#
# $$s_{ij} = \underbrace{q_i^\top k_j}_{\text{(a) content}} + \underbrace{q_i^\top W_R\, r_{i-j}}_{\text{(b) content-position}}
#   + \underbrace{u^\top k_j}_{\text{(c) global content}} + \underbrace{v^\top W_R\, r_{i-j}}_{\text{(d) global position}},$$
#
# all scaled by $1/\sqrt{d}$; $r_{i-j}$ is the fixed sinusoid of notebook 01, $W_R$ learned. Term
# (b) lets each query choose its distance; (d) is a learned function of distance, like T5's bias.
#
# **The relative shift.** Term (b) for all pairs would need an $(L, L, d)$ tensor. Instead compute
# $q_i^\top W_R r_t$ for the $2L - 1$ distances $t = L - 1, \dots, -(L - 1)$, an $(L, 2L - 1)$
# matrix, and move row $i$ so that column $j$ holds distance $i - j$: pad a column, reshape,
# drop a row.

# %% tags=["nbval-check-output"]
def rel_shift(x):  # x (..., L, 2L - 1): distances L - 1 down to -(L - 1)
    *b, L, W = x.shape
    x = torch.cat([x.new_zeros(*b, L, 1), x], -1)  # pad a column: (L, 2L)
    x = x.reshape(*b, 2 * L, L)[..., 1:, :]  # reshape, drop a row
    return x.reshape(*b, L, W)[..., :L]  # column j: distance i - j


per_distance = torch.arange(5.0)[:, None] * 10 + torch.arange(9.0)  # L = 5
print(rel_shift(per_distance))  # row i: columns 4 - i to 8 - i of row i
assert torch.equal(rel_shift(per_distance), relative_shift(per_distance, 5))

# %% [markdown]
# Row $i$ keeps the window that starts $L - 1 - i$ columns in; the library's `relative_shift`
# reads the same diagonals as one strided view, with no copy. The check below:
# `TransformerXLRelative.qk_bias` returns (b) + (c) + (d), equal to the formula pair by pair and
# unchanged when every position moves by the same amount.

# %% tags=["nbval-check-output"]
txl = TransformerXLRelative(
    D_MODEL, HEADS
)  # W_r, u and v as initialised; r is fixed
head_dim, n = D_MODEL // HEADS, 6
q, k = (torch.randn(1, HEADS, n, head_dim, generator=gen) for _ in range(2))
pos = torch.arange(n)[None]
with torch.no_grad():
    terms_bcd = txl.qk_bias(
        q, k, pos, pos
    )  # (1, heads, n, n): (b) + (c) + (d), scaled like q.k
    direct = torch.empty_like(
        terms_bcd
    )  # the formula, one (query, key) pair at a time
    for i, j in itertools.product(range(n), range(n)):
        wr = txl.r_proj(txl.relative_encoding(torch.tensor(i - j))).view(
            HEADS, head_dim
        )  # W_r r_{i-j}, per head
        b_plus_d = ((q[0, :, i] + txl.v) * wr).sum(
            -1
        )  # (q_i + v) . W_r r_{i-j}
        c = (txl.u * k[0, :, j]).sum(-1)  # u . k_j
        direct[0, :, i, j] = txl.score_scale(head_dim) * (b_plus_d + c)
    moved = txl.qk_bias(q, k, pos + 100, pos + 100)
assert_close(terms_bcd, direct)
assert torch.equal(moved, terms_bcd)
print(
    "relative shift = the pair-by-pair formula; moving every position by 100"
    " changes nothing"
)

# %% [markdown]
# **Takeaway:**
# - Transformer-XL's score has four terms; the position terms see only the distance $i - j$,
#   through a fixed sinusoid, so every distance has an encoding.
# - The relative shift computes (b) for $2L - 1$ distances instead of $L^2$ pairs of vectors.

# %% [markdown]
# ## 7 · One task, every family
#
# **Question.** On one task where relative position matters, how do the families compare?
#
# Random tokens; at every position output the token **3 steps back** (as in [03](03_rope.ipynb)).
# A 1-layer causal decoder (d_model 32, 4 heads), 150 steps per scheme, 3 seeds each. Token
# accuracy on 512 held-out sequences (positions 3-23); chance is $1/16$.

# %% tags=["nbval-check-output"]
SEEDS = (0, 1, 2)
todo = [
    setup for setup in itertools.product(SCHEMES, SEEDS) if setup not in trained
]
trained.update(
    zip(todo, run_each(train_decoder, todo, desc="scheme x seed"))
)  # side by side (02 §3)
results = pd.DataFrame(
    [
        {
            "scheme": name,
            "seed": seed,
            "accuracy": accuracy(trained[name, seed], *test_data),
        }
        for name, seed in itertools.product(SCHEMES, SEEDS)
    ]
)
summary = results.groupby("scheme", sort=False)["accuracy"].agg(["mean", "std"])
summary["mean ± std"] = [
    f"{m:.2f} ± {s:.2f}" for m, s in zip(summary["mean"], summary["std"])
]  # 3 seeds
display(summary[["mean ± std"]])
per_seed = {
    name: results.loc[results["scheme"] == name, "accuracy"].tolist()
    for name in SCHEMES
}

# %% [markdown]
# **Check.** The orderings the prose claims, by the series' rule (`report.compare`); a pair that
# fails it is *not separated*.

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
solvers = ("RoPE", "T5 bias", "sinusoidal", "learnable", "Transformer-XL")
for winner in solvers:
    for loser in ("ALiBi", "none"):
        assert compare(per_seed[winner], per_seed[loser]).a_ahead, (
            winner,
            loser,
        )
assert (
    summary.loc["RoPE", "mean"] > 0.99 and summary.loc["T5 bias", "mean"] > 0.95
)
assert summary.loc["ALiBi", "mean"] < 0.5 and summary.loc["none", "mean"] < 0.5
ranked = [
    (a, b)
    for a, b in itertools.permutations(solvers, 2)
    if compare(per_seed[a], per_seed[b]).a_ahead
]
assert not ranked, ranked
checked(
    "RoPE, T5, sinusoidal, learnable and Transformer-XL are each ahead of ALiBi"
    " and of none (10 verdicts), and no two of those five are separated"
)

# %% tags=["nbval-check-output"]
for name in ("RoPE", "sinusoidal", "learnable", "Transformer-XL"):
    print(
        f"{name} against T5 bias:"
        f" {compare(per_seed[name], per_seed['T5 bias'])}"
    )

# %% [markdown]
# RoPE, T5, Transformer-XL and the added tables solve the task; T5 (0.99) is not separated from
# the four at 1.00: its gap clears the seed spread, not the floor.
#
# **Why "none" sits at 0.23, and ALiBi with it.** The answer is one of the tokens the query sees:
# naming the commonest earlier token, a bag, scores 0.23. With 4 heads ALiBi's slopes run from
# 1/4 to 1/256, so even the steepest head weights distances 0-3 by 1, 0.78, 0.61, 0.47 (below): a
# gentle recency tilt, never a peak at distance 3. No verdict on ALiBi for language modelling
# (06 §4).

# %% tags=["nbval-check-output"]
tokens, targets = test_data
one_hot = torch.nn.functional.one_hot(tokens, VOCAB)
earlier = (
    one_hot.cumsum(1) - one_hot
)  # (n, SEQ, VOCAB): counts of the earlier tokens
bag_guess = earlier.argmax(-1)  # the commonest earlier token
bag_acc = (bag_guess == targets)[targets >= 0].float().mean().item()
steepest = alibi_slopes(HEADS)[0]
alibi_weight = torch.exp(
    -steepest * torch.arange(4)
)  # exp(-m d): the softmax factor of distance d
print(
    f"bag of earlier tokens: {bag_acc:.2f} (chance {1 / VOCAB:.3f}); no"
    f" encoding {summary.loc['none', 'mean']:.2f}, ALiBi"
    f" {summary.loc['ALiBi', 'mean']:.2f}"
)
print(
    f"ALiBi, {HEADS} heads: slopes {alibi_slopes(HEADS).tolist()}; steepest"
    " head, distances 0-3:",
    [round(w, 2) for w in alibi_weight.tolist()],
)
assert (
    abs(summary.loc["none", "mean"] - bag_acc) < 0.05 and alibi_weight[3] > 0.4
)

# %% [markdown]
# What did T5 learn? Its bias per head, against the offset (seed 0):

# %% tags=["nbval-check-output"]
t5_trained = trained["T5 bias", 0].scheme
with torch.no_grad():
    learned = (
        t5_trained.offset_bias()
    )  # (2 * 128 + 1, heads); row r = offset r - 128
offs = torch.arange(-(SEQ - 1), 1)
learned_bias = learned[
    offs + t5_trained.max_distance
]  # (SEQ, heads), offsets -23..0
fig, ax = plt.subplots(figsize=(7.5, 3.8))
line_plot(
    ax,
    offs.numpy(),
    {f"head {h + 1}": learned_bias[:, h].numpy() for h in range(HEADS)},
    "Bias learned by T5 on the lag-3 task",
    "offset j - i (key minus query, tokens)",
    "bias added to the score",
    markers=True,
)
ax.axvline(-LAG, color="grey", linewidth=0.8)
plt.show()
peak = offs[learned_bias.argmax(0)]
print("offset of each head's largest bias:", peak.tolist())
assert (peak == -LAG).any()

# %% [markdown]
# And Transformer-XL's global position term (d), $v^\top W_R\, r_{i-j}$, per head (seed 0): a
# smooth function of the distance.

# %% tags=["nbval-check-output"]
txl_trained = trained["Transformer-XL", 0].scheme
with torch.no_grad():
    wr = txl_trained.r_proj(txl_trained.relative_encoding(-offs)).view(
        len(offs), HEADS, -1
    )  # distance i - j = -offset
    term_d = (wr * txl_trained.v).sum(-1) * txl_trained.score_scale(
        D_MODEL // HEADS
    )  # (SEQ, heads)
fig, ax = plt.subplots(figsize=(7.5, 3.8))
line_plot(
    ax,
    offs.numpy(),
    {f"head {h + 1}": term_d[:, h].numpy() for h in range(HEADS)},
    "Transformer-XL's global position term (d) on the lag-3 task",
    "offset j - i (key minus query, tokens)",
    "term (d) added to the score",
    markers=True,
)
ax.axvline(-LAG, color="grey", linewidth=0.8)
plt.show()
peak_d = offs[term_d.argmax(0)]
print("offset of each head's largest term (d):", peak_d.tolist())
assert (peak_d == -LAG).any()

# %% [markdown]
# **Takeaway:**
# - T5's bias and Transformer-XL's term (d) peak exactly at offset $-3$ (every head, seed 0):
#   both learned where to look in the position terms alone.
# - ALiBi's fixed monotone bias cannot express "exactly 3 back", and stays near the bag of
#   earlier tokens.

# %% [markdown]
# ## 8 · What each scheme costs
#
# **Question.** How do time and memory of the position part grow with the sequence length $L$?
#
# The position part is each scheme's hook (`posenc_lib.analysis.cost.position_part`): the added
# table, the rotation, or the bias. Bytes are counted exactly; times are the fastest of 5 calls.
# d_model 128, 4 heads, lengths 128 to 1024.

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
    position_part(
        scheme, max(LENGTHS), d_model=128, n_heads=4
    )()  # warm caches (RoPE's cos/sin table)
    parts = [position_part(scheme, L, d_model=128, n_heads=4) for L in LENGTHS]
    cost_bytes[name] = [allocated_bytes(p) for p in parts]
    cost_time[name] = [best_time(p, 5) for p in parts]
assert (
    allocated_bytes(position_part(NoPosition(), max(LENGTHS))) == 0
)  # no encoding: nothing at all
bytes_table = pd.DataFrame(cost_bytes, index=[f"L={L}" for L in LENGTHS]).T
print("bytes allocated by the position part:")
display(bytes_table)

# %% [markdown]
# Memory is exact, so it fits a polynomial: bytes $= aL^2 + bL + c$ on three lengths, checked on
# the fourth; $a$ is the bytes per (query, key) pair.

# %% tags=["nbval-check-output"]
per_pair = {}
for name, values in cost_bytes.items():
    a, b, c = np.polyfit(LENGTHS[:3], values[:3], 2).round().astype(int)
    assert (
        a * LENGTHS[3] ** 2 + b * LENGTHS[3] + c == values[3]
    ), name  # exact on the fourth length
    per_pair[name] = (a, b, c)
display(
    pd.DataFrame(
        per_pair,
        index=["bytes per pair (L²)", "bytes per token (L)", "constant"],
    ).T
)

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
assert (
    per_pair["ALiBi compact"][0] == 0
    and per_pair["ALiBi compact"][1] == (4 + 1) * 4
)  # (heads + 1) float32 per key
assert (
    per_pair["T5 bias"][0] == 8 + 4 * 4
)  # one int64 offset index + 4 float32 head values per pair
assert all(per_pair[n][0] == 0 for n in ("sinusoidal", "learnable", "RoPE"))
checked(
    "bytes per pair: 0 for compact ALiBi and the added tables, 24 for T5"
)

# %% [markdown]
# On a log-log plot memory grows as $L$ (slope 1) for the added tables, RoPE and compact ALiBi,
# and as $L^2$ for the pairwise biases. The cell asserts the memory slopes only: times vary with
# the machine and its load (a busy machine can reorder them), so the time panel is a look, not a
# check, and its output is not compared. `make bench` times whole layers on a quiet machine.

# %%
# NBVAL_IGNORE_OUTPUT
slopes = pd.DataFrame(
    {
        name: {
            "memory slope": loglog_slope(LENGTHS, cost_bytes[name]),
            "time slope": loglog_slope(LENGTHS, cost_time[name]),
            "time at L=1024 (ms)": cost_time[name][-1] * 1e3,
        }
        for name in COST_SCHEMES
    }
).T
display(slopes.round(2))
quadratic = ["T5 bias", "ALiBi full"]
for name in COST_SCHEMES:
    assert (
        abs(slopes.loc[name, "memory slope"] - (2 if name in quadratic else 1))
        < 0.05
    ), name

# %%
# NBVAL_IGNORE_OUTPUT
fig, axes = plt.subplots(2, 1, figsize=(7.5, 7.0), sharex=True)
line_plot(
    axes[0],
    LENGTHS,
    {n: np.array(v) / 2**20 for n, v in cost_bytes.items()},
    "Memory of the position part",
    "sequence length L (tokens)",
    "bytes allocated (MiB)",
    logx=True,
    logy=True,
    markers=True,
)
line_plot(
    axes[1],
    LENGTHS,
    {n: np.array(v) * 1e3 for n, v in cost_time.items()},
    "Time of the position part",
    "sequence length L (tokens)",
    "time per call (ms)",
    logx=True,
    logy=True,
    markers=True,
)
for ax in axes:
    ax.set_xticks(LENGTHS, [str(L) for L in LENGTHS])
    ax.minorticks_off()
    lo, hi = ax.get_ylim()
    ref = np.array(LENGTHS, dtype=float) / LENGTHS[0]
    ax.plot(LENGTHS, lo * 3 * ref, color="grey", linewidth=0.8, linestyle=":")
    ax.plot(
        LENGTHS, lo * 3 * ref**2, color="grey", linewidth=0.8, linestyle="--"
    )
    ax.text(
        LENGTHS[-1],
        lo * 3 * ref[-1],
        " O(L)",
        fontsize=10,
        color="grey",
        va="center",
    )
    ax.text(
        LENGTHS[-1],
        lo * 3 * ref[-1] ** 2,
        " O(L²)",
        fontsize=10,
        color="grey",
        va="center",
    )
plt.show()

# %% [markdown]
# In a real model the scores are $O(L^2)$ in time for every scheme, but SDPA's fused kernels keep
# memory linear; an $L^2$ bias mask is what makes it quadratic. SDPA takes a bias only as such a
# mask: T5 and Swin need it there, and so does ALiBi without a causal mask. FlashAttention-2
# (`alibi_slopes`) and FlexAttention (`score_mod`) compute the bias on the fly instead, causal or
# not. `make bench` measures whole layers (`bench/results/schemes.md`).
#
# **Takeaway:**
# - Added tables, RoPE and compact ALiBi cost $O(L)$ memory.
# - T5 and full ALiBi as an SDPA mask cost $O(L^2)$; a kernel computing the bias avoids it.

# %% [markdown] jp-MarkdownHeadingCollapsed=true tags=["deep-dive"]
# ### Deep dive (optional) · Why the timed lengths stop at 1024
#
# Beyond $L = 1024$ a fresh (heads, L, L) bias passes ~32 MB. The C library hands out buffers
# that large as new memory pages, which the kernel faults in on first touch, so their time grows
# faster than $L^2$ and the time slope measures the allocator, not the scheme. `make bench` sets
# the allocator so that this does not happen, and measures whole layers up to $L = 2048$.

# %% [markdown]
# ## 9 · Which encoding when: the selection advice, with this series' evidence
#
# The source article, the Chinese tutorial 《Transformer位置编码原理与实现：从正弦编码到RoPE》,
# ends its §5.2 with advice on which encoding to choose. Here it is as situations,
# each with a number this series printed (05 by section; [03](03_rope.ipynb), [04](04_vision.ipynb),
# [06](06_length_extrapolation.ipynb)). All of it is at toy scale.
#
# | situation | choose | evidence | not shown |
# |---|---|---|---|
# | bidirectional encoder | any encoding | 05 §5: probe at chance without the mask | which one, for text |
# | causal decoder | NoPE is possible | 05 §5: probe 4.9 times chance; 06 §4: NoPE 8.55 at $L$, behind the others | NoPE at scale |
# | offsets matter | RoPE, T5, Transformer-XL | 05 §7: 1.00 or 0.99; ALiBi 0.24 | a ranking among solvers |
# | decoder with KV cache | RoPE, float32 angles | 03 §5, §8 | other schemes |
# | train short, run long | Transformer-XL or ALiBi | 06 §4: 7.45 and 8.16 at $8L$ | beyond $8L$, 4 layers |
# | longer RoPE | a short fine-tune | 06 §4, §8: 12.39 at $8L$ after 40 steps; zero-shot YaRN 18.37 | larger models |
# | memory bound | no $L^2$ bias in memory | 05 §8: T5 24 bytes per pair, compact ALiBi none | whole-model speed |
# | images | 2-D RoPE for spatial relations | 04 §4: RoPEs 1.00 held out | ViT-scale data |
# | new resolution | interpolated coordinates | 04 §6: extrapolated collapse | one change of size |
# | what a model learned | a probe, the learned bias | 05 §4: 0.788 with zero padding | whether it is used |

# %% [markdown]
# ## Summary
#
# - **T5** buckets the offset (exact near, log-spaced up to 128) and adds a learned scalar per
#   bucket and head to the unscaled score; trained on lag-3, it peaks at offset −3.
# - **ALiBi**: fixed slopes $2^{-8h/n}$; under a causal mask the per-key form $m_h j$ is exact.
# - **Swin**: $(2M-1)^2$ table rows and a block-Toeplitz index; BEiT adds 3 rows for a class token.
# - **Transformer-XL**: four terms; the position terms read sinusoidal $r_{i-j}$.
# - **PEG**'s zero padding and **NoPE**'s causal mask give position; on lag-3 every family but
#   ALiBi solves the task; T5 and full ALiBi cost $O(L^2)$ memory as an SDPA mask.

# %% [markdown]
# ### Open-ended experiment · Can T5 find a key that shares its bucket?
#
# **Question.** In a causal decoder, T5's exact buckets stop at distance 15; past it, neighbouring
# distances share a log-spaced bucket. On the lag task with a lag of 20 (or 40), can a T5 model
# still single out the one key 20 back, and what do RoPE and Transformer-XL do there?
#
# ```python
# LAG_FAR, SEQ_FAR = 20, 48
# data = lag_task(4096, SEQ_FAR, VOCAB, LAG_FAR, torch.Generator().manual_seed(100))
# test = lag_task(512, SEQ_FAR, VOCAB, LAG_FAR, torch.Generator().manual_seed(101))
# print(t5_relative_bucket(-torch.arange(16, 26), bidirectional=False))  # which distances share a bucket
# # then train as train_decoder() does, with max_len=SEQ_FAR, for "T5 bias" and "RoPE", 3 seeds each
# ```
#
# **What to look for.** The accuracy of each scheme over 3 seeds, and T5's learned bias around
# offset $-20$: a bucket shared by several distances gives them all the same bias, so the
# attention must tell them apart by content alone, which random tokens do not allow. Does
# more training, or a larger `num_buckets`, change it?

# %% [markdown]
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
# ### Exercise 4 · Explain why: compact ALiBi needs the causal mask
# Section 2 shows the compact per-key bias $m_h j$ giving the same attention as the full
# $-m_h|i - j|$ under a causal mask, and a different one without it. Why?
#
# - **(a)** The compact form $m_h j$ is not exact in float32: the large products $m_h j$ lose
#   digits that the full bias keeps.
# - **(b)** SDPA refuses a (heads, 1, L) bias without `is_causal`, so without the mask the
#   compact bias is never applied.
# - **(c)** Without the mask, keys after the query count, and there $-m|i - j|$ falls with $j$
#   while $m j$ rises.
# - **(d)** Without the mask each key has a mirror image on the other side of the query, so the
#   slopes must be doubled.

# %% tags=["exercise", "nbval-check-output"]
answer_4 = ...  # "a", "b", "c" or "d"
check_exercise_4(answer_4)

# %% [markdown]
# ### Exercise 5 · Predict, then run: ALiBi with 8 heads on the lag task
# Section 7 prints the softmax factor $e^{-m d}$ of ALiBi's steepest head for distances 0-3 with
# 4 heads. With 8 heads, what factor does the steepest head give distance 3 (distance 0 being
# 1)? Write it into `predicted_weight`, then run the cell after it.

# %%
predicted_weight = ...  # your prediction: a number between 0 and 1

# %% tags=["exercise", "nbval-check-output"]
weight_8 = math.exp(-alibi_slopes(8)[0].item() * 3)
check_exercise_5(predicted_weight, weight_8)

# %% [markdown]
# ## Further reading
#
# - Shaw, Uszkoreit, Vaswani (2018), *[Self-Attention with Relative Position Representations](https://arxiv.org/abs/1803.02155)*: a
#   learned vector per clipped offset, the start of relative encodings.
# - Raffel et al. (2020), *[Exploring the Limits of Transfer Learning with a Unified Text-to-Text
#   Transformer](https://arxiv.org/abs/1910.10683)* (T5): the bucketed scalar bias. Reference code: Hugging Face
#   [`transformers.models.t5.modeling_t5.T5Attention._relative_position_bucket`](https://github.com/huggingface/transformers/blob/main/src/transformers/models/t5/modeling_t5.py) and `compute_bias`.
# - Press, Smith, Lewis (2022), *[Train Short, Test Long: Attention with Linear Biases Enables Input
#   Length Extrapolation](https://arxiv.org/abs/2108.12409)* (ALiBi). Reference code: [`transformers.models.bloom.modeling_bloom`](https://github.com/huggingface/transformers/blob/main/src/transformers/models/bloom/modeling_bloom.py)
#   (`build_alibi_tensor`, `_get_alibi_slopes`), which stores the compact per-key form.
# - Liu et al. (2021), *[Swin Transformer: Hierarchical Vision Transformer using Shifted Windows](https://arxiv.org/abs/2103.14030)*.
#   Reference code: [`transformers.models.swin.modeling_swin`](https://github.com/huggingface/transformers/blob/main/src/transformers/models/swin/modeling_swin.py) (`relative_position_index`).
# - Bao et al. (2022), *[BEiT: BERT Pre-Training of Image Transformers](https://arxiv.org/abs/2106.08254)*: the class-token rows.
#   Reference code: [`transformers.models.beit.modeling_beit.BeitRelativePositionBias`](https://github.com/huggingface/transformers/blob/main/src/transformers/models/beit/modeling_beit.py).
# - Chu et al. (ICLR 2023; arXiv 2021), *[Conditional Positional Encodings for Vision Transformers](https://arxiv.org/abs/2102.10882)* (CPVT, PEG).
# - Haviv, Ram, Press, Izsak, Levy (2022), *[Transformer Language Models without Positional
#   Encodings Still Learn Positional Information](https://arxiv.org/abs/2203.16634)*.
# - Kazemnejad et al. (2023), *[The Impact of Positional Encoding on Length Generalization in
#   Transformers](https://arxiv.org/abs/2305.19466)* (NoPE, and how the causal mask yields absolute position).
# - PyTorch: [`torch.nn.functional.scaled_dot_product_attention`](https://pytorch.org/docs/stable/generated/torch.nn.functional.scaled_dot_product_attention.html) (`is_causal`, `attn_mask`, `scale`).
# - `docs/replication.md`: the headline results of the papers this course teaches, beside the
#   numbers its notebooks measure at toy scale, whether they agree, and why not where they do not.

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ## Solutions


# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
def my_alibi_slopes(n_heads: int) -> torch.Tensor:
    def power_of_two(n: int) -> list[float]:
        return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]

    p = 2 ** math.floor(
        math.log2(n_heads)
    )  # the power of two at or below n_heads
    return torch.tensor(
        power_of_two(p) + power_of_two(2 * p)[0::2][: n_heads - p]
    )


check_exercise_1(my_alibi_slopes)


# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
def my_swin_index(window_h: int, window_w: int) -> torch.Tensor:
    rows = torch.arange(window_h).repeat_interleave(
        window_w
    )  # row of each patch, row-major
    cols = torch.arange(window_w).repeat(window_h)
    dr = (
        rows[:, None] - rows[None, :] + window_h - 1
    )  # query minus key, shifted to >= 0
    dc = cols[:, None] - cols[None, :] + window_w - 1
    return dr * (2 * window_w - 1) + dc


check_exercise_2(my_swin_index)

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
# 16 buckets per direction, half of them (8) exact: distances 0-7 have their own bucket; 8 starts
# the log-spaced part, where bucket 8 + floor(8 * log(d/8) / log(16)) is 8 for d = 8 and 9.
first_shared_distance = 8
assert t5_relative_bucket(torch.tensor([-8])) == t5_relative_bucket(
    torch.tensor([-9])
)
check_exercise_3(first_shared_distance)

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
# Exercise 4. -m|i - j| = m j - m i only for j <= i; -m i is a constant per row (the softmax
# ignores it), but for keys after the query the sign of j flips.
answer_4 = "c"
check_exercise_4(answer_4)

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
# Exercise 5. m_1 = 2^(-8/8) = 1/2, so exp(-3/2) = 0.22.
predicted_weight = 0.22
check_exercise_5(predicted_weight, weight_8)

# %% [markdown]
# ## End of notebook 05
# <!-- Keep this cell last. "Run All" ends on the last cell, and JupyterLab unfolds the section that
#      holds it: outside "Solutions", this heading leaves the solutions folded. -->

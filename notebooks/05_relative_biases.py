# %% [markdown]
# # 05 · Relative biases
#
# Notebooks 01-03 put position into the token vectors or into a rotation of queries and keys. A
# relative bias puts it into the attention **scores**: a number $b(i, j)$ added to the score of
# query $i$ and key $j$ that depends only on their relative position. How can it be built, what
# does it cost, and what else carries position when no encoding is given?
#
# **What you will learn**
# - T5's bucketed bias and ALiBi's slopes, and why ALiBi's per-key form is exact under a causal
#   mask; Swin's 2-D index and BEiT's class token; Transformer-XL's four terms;
# - that PEG's zero padding, and a decoder's causal mask, give position with no encoding;
# - how every 1-D family does on one task (3 seeds), and what each costs as the sequence grows.
#
# **Prerequisites:** [00](00_permutation_blindness.ipynb)-[03](03_rope.ipynb) (the schemes
# compared here) and [04 · Vision](04_vision.ipynb) (its one-layer ViT and class token).
#
# **Optional:** the deep dives and the explorer (folded) can be skipped on a first read.
#
# **Run time:** about 77 s on a laptop CPU (measured with `make execute`, one thread), most of it
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
    check_exercise_6,
)
from posenc_course.explorers import relative_explorer, relative_values
from posenc_course.floors import (
    bag_of_tokens,
    chance,
    no_position,
    untrained,
    with_floors,
)
from posenc_course.plotting import (
    COLORS,
    LINESTYLES,
    MARKERS,
    heatmap,
    line_plot,
)
from posenc_course.report import checked, compare, mean_std
from posenc_course.training import (
    accuracy,
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
pd.set_option("display.width", 130)
pd.set_option("display.max_colwidth", None)


def mib(n_bytes: float) -> str:
    """Bytes as MiB with 3 significant digits."""
    return f"{n_bytes / 2**20:.3g} MiB"


# %% [markdown]
# ## 1 · T5: one learned number per bucket of distance
#
# **Question.** Shaw et al. (2018) gave every clipped offset $j - i$ its own learned vector.
# T5 (Raffel et al. 2020) keeps one scalar per head, shared between offsets: how are they
# grouped?
#
# Into 32 buckets: an encoder (**bidirectional**) gives half to keys before the query, half to
# keys after it; a decoder (**causal**) all 32 to the past. Near the query each distance has its
# own bucket; farther ones are **log-spaced** up to `max_distance` = 128.
# With $B$ buckets per side ($B = 16$ bidirectional, 32 causal), a key at distance $n$ gets
#
# $$\text{bucket}(n) = \begin{cases} n & n < B/2\\
# \min\Big(B - 1,\; \tfrac{B}{2} + \Big\lfloor \tfrac{B}{2}\,
# \tfrac{\log(2n/B)}{\log(2\,\text{max\_distance}/B)} \Big\rfloor\Big) & n \ge B/2 \end{cases}$$
#
# plus $B$ for keys after the query in the bidirectional case (a key 20 before the query:
# $8 + \lfloor 8 \log 2.5 / \log 16 \rfloor = 10$). The score is
# $q_i^\top k_j + b_{h}(\text{bucket}(j - i))$, from a learned `(32, heads)` table per stack
# (encoder, decoder) shared by its layers, with no $1/\sqrt{d}$ (T5 folds the scale into its
# query weights' initialisation). In code, checked against the library:

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
# buckets 17-31 (offset 0 counts with the keys before, so bucket 16 is never used). Causal:
# distances 0-15 are exact. The last bucket starts well before
# `max_distance`: the rounded-down log reaches $B - 1$ at distance 91 (bidirectional) and 113
# (causal).

# %% tags=["nbval-check-output"]
past = -offsets[offsets <= 0]  # distance of a key at or before the query
print(
    "distinct buckets used by offsets -160..160: bidirectional",
    len(buckets_bi.unique()),
    "| causal",
    len(buckets_causal.unique()),
)
last_from = {  # the first distance in the last bucket, before the query
    kind: int(past[t5_relative_bucket(-past, bidirectional=bi) == last].min())
    for kind, bi, last in (("bidirectional", True, 15), ("causal", False, 31))
}
print("the last bucket starts at distance:", last_from)

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
assert torch.equal(t5_relative_bucket(-torch.arange(8)), torch.arange(8))
assert torch.equal(
    t5_relative_bucket(torch.arange(1, 8)), 16 + torch.arange(1, 8)
)
assert torch.equal(
    t5_relative_bucket(-torch.arange(16), bidirectional=False), torch.arange(16)
)
assert last_from == {"bidirectional": 91, "causal": 113}
assert (buckets_bi[offsets <= -91] == 15).all() and (
    buckets_bi[offsets >= 91] == 31
).all()
assert (buckets_causal[offsets > 0] == 0).all() and (
    buckets_causal[offsets <= -113] == 31
).all()
assert (
    t5_relative_bucket(-past.flip(0)).diff() >= 0
).all()  # never decreases with the distance
assert T5RelativeBias(4).score_scale(16) == 1.0 and ALiBi(4).score_scale(
    16
) == 1 / math.sqrt(16)
checked(
    "exact and log-spaced buckets on both sides, the last bucket from 91 and"
    " 113,"
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
# - T5 spends its buckets near the query and lumps far offsets together; from distance 91
#   (encoder) or 113 (decoder) on, all distances look alike.
# - The bias depends on the offset only, and is added to the raw score $q^\top k$.

# %% [markdown] jp-MarkdownHeadingCollapsed=true tags=["deep-dive"]
# ### Deep dive (optional) · Bucketing 257 offsets instead of $L^2$ pairs
#
# The library computes the bias without bucketing all $L^2$ pairs. Only the offsets matter, and
# every offset beyond $\pm$`max_distance` shares the last bucket, so `T5RelativeBias.offset_bias()`
# buckets the 257 offsets $-128 \dots 128$ once, and each pair only **gathers** the row of its
# (clamped) offset: the same table entries, bit for bit. Below: both ways at $L = 1024$, their
# equality, and the bytes each allocates (temporaries included).

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
# ALiBi (Press et al. 2022, §3) adds $-m_h (i - j)$ to head $h$'s score of query $i$ and key
# $j \le i$: a penalty linear in distance, with a fixed slope per head. The paper's models are
# causal; for encoders the usual extension is $-m_h|i - j|$ (section 8's "ALiBi full"). For $n$ heads, $n$ a power of two, $m_h = 2^{-8h/n}$,
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
# Under a causal mask $-m(i - j) = -m\,i + m\,j$. The term $-m\,i$ is the same for every key of
# query $i$, and a softmax ignores a constant added to its row, so the per-key bias $m\,j$,
# shape (heads, 1, L), gives the same attention as the full (heads, L, L) one: the **compact**
# form, which BLOOM stores. Below, two heads and the compact form.

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

# %% [markdown] jp-MarkdownHeadingCollapsed=true tags=["deep-dive"]
# ### Deep dive (optional) · Explorer: T5 buckets for a length, ALiBi for a head count
#
# **Question:** what do T5's buckets look like at the lengths a model meets, and ALiBi's slopes
# and penalties for your head count? Sliders choose the heads (1 to 16) and the length (8 to
# 256); the executed notebook shows 8 heads at $L = 64$.
#
# **What to try.** Length 256: offsets beyond $\pm 128$ fall into the last bucket of their side.
# 12 heads: the slopes are out of order. Each ALiBi head's penalty reaches $-1$ after about
# $1/m_h$ tokens.

# %% tags=["deep-dive", "nbval-check-output"]
relative_explorer()

# %% tags=["deep-dive", "nbval-check-output"]
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

# %% [markdown] tags=["deep-dive"]
# With 8 heads the steepest head (slope 1/2) penalises the farthest key by 31.5 at $L = 64$ and by
# 127.5 at $L = 256$; the flattest (1/256) by 0.996 even at 256 tokens.

# %% [markdown]
# **Takeaway:**
# - ALiBi has no parameters: each head gets a fixed recency penalty, geometric across heads.
# - Under a causal mask it collapses to a per-key vector $m_h j$: no (heads, L, L) tensor.

# %% [markdown] jp-MarkdownHeadingCollapsed=true tags=["deep-dive"]
# ### Deep dive (optional) · Compact ALiBi inside SDPA, and its cost in bf16
#
# **How the compact form reaches SDPA.** `scaled_dot_product_attention` takes
# either `is_causal=True` (it applies the mask itself, and its fused kernels keep memory linear in $L$) or an explicit
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
# **A caveat: precision.** The two forms are equal in exact arithmetic, not in 16-bit floats.
# Measured: the same layer in bf16, against a float64 run of the full form (one input draw).

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
# So in bf16 at long lengths this layer's memory saving costs accuracy; in float32 both forms
# agree to rounding (checked above at $L = 512$). One explanation, not tested here: the compact
# values $m_h j$ grow with the position (up to 511 for head 1), where bf16's step is 2, and
# the content score added to them loses digits too; the full form's values near the diagonal
# are small. fp16 and BLOOM's own code path (it stores
# the compact form, added with `baddbmm`) are not measured.

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
# diagonals. BEiT's class token gets three table rows of its own (class → patch, patch → class,
# class → class), outlined in the last panel.
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
#   its own learned value. A class token, off the grid, gets three entries of its own (BEiT).
#
# ## 4 · PEG: zero padding leaks absolute position
#
# **Question.** CPVT (Chu et al., ICLR 2023) has no position table: its Position Encoding
# Generator (PEG) adds a depthwise $3\times 3$ convolution of the tokens, put back on their grid.
# A convolution is translation-equivariant: where does *absolute* position come from?
#
# From the border: the convolution pads the grid with zeros, so an edge token sees zeros where an
# interior one sees neighbours. On a **constant** input only the padding can make the output
# depend on position; **circular** padding (a torus) has none. Below: one output channel for a
# constant input, after one PEG and after three. CPVT places its PEG after the first block; the
# one-layer ViT of [04](04_vision.ipynb) puts it on the embeddings.

# %% tags=["nbval-check-output"]
G, D_PEG = 6, 16  # a 6 x 6 grid of 16-channel tokens
SEEDS = (0, 1, 2)  # every probe cited as evidence, and section 7's runs


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
# A **probe** makes "leaks" a number: `position_probe_accuracy` trains a small MLP to name each
# token's index (0-35) from its output vector, on constant inputs plus a little noise (0.1), so
# that no two samples are identical. Chance is $1/36$. Each of three seeds draws the PEG
# weights, the noise and the probe.

# %%
chance_peg = 1 / G**2


def probe_pegs(setup: tuple[tuple[str, int], int]) -> float:
    """The probe's accuracy on one stack ((padding, depth), seed)."""
    (padding, depth), s = setup
    pegs = peg_stack(padding, depth, s)
    return position_probe_accuracy(
        peg_features(pegs, 1024, 0.1, 1 + 10 * s),
        peg_features(pegs, 512, 0.1, 2 + 10 * s),
        seed=s,
    )


setups = list(itertools.product(STACKS, SEEDS))
peg_probe = {}  # stack -> accuracy per seed
for ((padding, depth), _), acc in zip(
    setups,
    run_each(probe_pegs, setups, desc="probes of 3 PEG stacks x 3 seeds"),
):
    peg_probe.setdefault(f"{depth} PEG, {padding}", []).append(acc)
distinct_one = len(
    torch.unique(peg_features(peg_stack("zeros", 1), 1, 0.0, 0)[0], dim=0)
)
print(
    f"chance {chance_peg:.3f}; one zero-padded PEG gives {distinct_one}"
    f" distinct vectors (a ceiling of {distinct_one / G**2:.3f} for an exact"
    " probe)"
)
display(
    pd.Series(
        {
            k: mean_std(v) for k, v in peg_probe.items()
        },
        name="probe accuracy (3 seeds)",
    ).to_frame()
)

# %% [markdown]
# **Check.** On every seed, three zero-padded PEGs let the probe name most positions; one PEG
# tells only nine classes apart (four corners, four edges, the interior); circular padding
# leaves the probe at chance.

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
assert min(peg_probe["3 PEG, zeros"]) > 0.5 > 10 * chance_peg
assert distinct_one == 9 and max(peg_probe["1 PEG, zeros"]) < (
    distinct_one / G**2 + 0.05
)
assert max(peg_probe["3 PEG, circular"]) < 2 * chance_peg
checked(
    "three zero-padded PEGs above 0.5 on every seed; one PEG within its"
    " ceiling of nine classes; circular padding below twice chance"
)

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
# Haviv et al. (2022) found that causal language models with no positional encoding (their
# "NoPos"; NoPE is Kazemnejad et al.'s later name) come close to those with one, and that their
# states encode position. Here: 1-layer decoders with no encoding (3 seeds), trained to output
# the token 3 steps back (the task of section 7), then a probe on their states; the same weights
# **without** the mask are an encoder. The floor: the same decoders untrained.

# %%
VOCAB, SEQ, LAG, D_MODEL, HEADS, STEPS = 16, 24, 3, 32, 4, 150
train_data = lag_task(4096, SEQ, VOCAB, LAG, torch.Generator().manual_seed(100))
test_data = lag_task(512, SEQ, VOCAB, LAG, torch.Generator().manual_seed(101))
sizes = {"d_model": D_MODEL, "n_heads": HEADS, "max_len": SEQ}
SCHEMES = {"none": partial(build_scheme, "none", **sizes)}  # section 7 adds


def build_decoder(
    name: str, seed: int
) -> tuple[TinyTransformer, torch.Generator]:
    """A 1-layer causal decoder with scheme ``name``, at the initial weights
    of ``seed``, and the seed's generator of training batches."""
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
    return model, data_gen


def train_decoder(setup: tuple[str, int]) -> TinyTransformer:
    """``build_decoder(*setup)``, trained on the lag task."""
    model, data_gen = build_decoder(*setup)
    train(model, train_data, STEPS, lr=1e-2, generator=data_gen, desc=None)
    return model


nope_runs = [("none", s) for s in SEEDS]
# (scheme, seed) -> model
trained = dict(zip(nope_runs, run_each(train_decoder, nope_runs)))
probe_x = (
    lag_task(1024, SEQ, VOCAB, LAG, torch.Generator().manual_seed(102))[0],
    lag_task(512, SEQ, VOCAB, LAG, torch.Generator().manual_seed(103))[0],
)
initial = run_each(lambda s: build_decoder("none", s)[0], SEEDS)
ARMS = {  # name -> (the decoder of each seed, whether the mask is on)
    "trained": ([trained["none", s] for s in SEEDS], True),
    "untrained": (initial, True),
    "no mask": ([trained["none", s] for s in SEEDS], False),
}


def probe_arm(item: tuple[str, int]) -> float:
    """The probe's accuracy on one arm's decoder of seed index ``i``."""
    arm, i = item
    models, causal = ARMS[arm]
    models[i].causal = causal
    with torch.no_grad():
        states = [models[i].features(t) for t in probe_x]
    models[i].causal = True
    return position_probe_accuracy(*states, seed=SEEDS[i])


items = list(itertools.product(ARMS, range(len(SEEDS))))
nope_probe = {arm: [] for arm in ARMS}  # arm -> accuracy per seed
for (arm, _), acc in zip(
    items,
    run_each(probe_arm, items, desc="probes: trained, untrained, no mask"),
):
    nope_probe[arm].append(acc)
chance_pos = 1 / SEQ
for arm in ("trained", "untrained"):
    over_chance = np.array(nope_probe[arm]) / chance_pos
    print(
        f"{arm} decoder / chance per seed:",
        np.round(over_chance, 2).tolist(),
        f"(mean {over_chance.mean():.1f})",
    )
print("same weights, no mask (an encoder):", mean_std(nope_probe["no mask"]))
probe_table = with_floors(
    {"trained decoder": nope_probe["trained"]},
    [untrained(nope_probe["untrained"]), chance(SEQ)],
    metric="probe accuracy (3 seeds)",
)

# %% [markdown]
# **Check.** On every seed the decoder's states name the position several times more often than
# chance; without the mask the probe is at chance, as it must be for an encoder without position
# (notebook 00). Most of it is there before training (0.136); training adds 0.071, ahead by the
# rule.

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
assert min(nope_probe["trained"]) > 3 * chance_pos
assert max(nope_probe["no mask"]) < 1.5 * chance_pos
assert probe_table.beats("trained decoder") == ["untrained", "chance"]
checked(
    "the trained decoder above 3x chance on every seed and ahead of the"
    " untrained ones and chance; no mask below 1.5x chance"
)

# %% [markdown]
# **Takeaway:**
# - With a causal mask "no positional encoding" does not mean "no position": the states carry
#   it even with random weights; without the mask they carry none.
# - *How* is not tested here. Haviv et al. conjecture that the mask lets a token infer how many
#   tokens it sees (a uniform average over $i + 1$ tokens gives each $1/(i + 1)$); Zuo et
#   al. (2025) propose another account: nearby states are similar.

# %% [markdown]
# ## 6 · Transformer-XL: content and position in four terms
#
# **Question.** T5 and ALiBi add a number that depends on the offset alone. Can the position term
# depend on *what* the query is looking for?
#
# Transformer-XL (Dai et al. 2019) expands an absolute encoding's score,
# $(x_i + p_i)^\top W_q^\top W_k (x_j + p_j)$, into four terms, with a relative $r_{i-j}$ for the
# key's position and learned vectors $u$, $v$ for the query's:
#
# $$s_{ij} = \underbrace{q_i^\top k_j}_{\text{(a) content}} + \underbrace{q_i^\top W_R\, r_{i-j}}_{\text{(b) content-position}}
#   + \underbrace{u^\top k_j}_{\text{(c) global content}} + \underbrace{v^\top W_R\, r_{i-j}}_{\text{(d) global position}},$$
#
# all scaled by $1/\sqrt{d}$; $r_{i-j}$ is the fixed sinusoid of notebook 01, $W_R$ learned. Term
# (b) lets each query choose its distance; (d) is a learned function of distance, like T5's bias.
#
# **The relative shift.** Term (b) for all pairs would need an $(L, L, d)$ tensor. Instead compute
# $q_i^\top W_R r_t$ for the $2L - 1$ distances $t = L - 1, \dots, -(L - 1)$, an $(L, 2L - 1)$
# matrix, and shift row $i$ so that column $j$ holds distance $i - j$: pad a column, reshape,
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
# Row $i$ keeps the window that starts $L - 1 - i$ columns in. The check:
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
# **Question.** On one task that needs a fixed offset, how do the families compare?
#
# Random tokens; at every position output the token **3 steps back** (as in [03](03_rope.ipynb)).
# A 1-layer causal decoder (d_model 32, 4 heads), 150 steps, 3 seeds per scheme; accuracy on
# 512 held-out sequences. It tests whether attention can *select one fixed offset*, not
# relative against absolute: with equal train and test lengths, "position $i$ looks at $i - 3$"
# serves too. The floors: no encoding (*no position*), the bag of earlier tokens (answer the
# commonest earlier token), chance ($1/16$), and ALiBi's penalty with nothing learned: the bag
# with a token $d$ back weighted $e^{-m d}$, $m$ the ALiBi slope best on these test data.

# %% tags=["nbval-check-output"]
SCHEMES.update({  # "none" is section 5's
    "sinusoidal": partial(build_scheme, "sinusoidal", **sizes),
    "learnable": partial(
        build_scheme, "learnable", **sizes, init_std=1.0
    ),  # at the tokens' scale, N(0, 1): 02 §3
    "RoPE": partial(build_scheme, "rope", **sizes),
    "T5 bias": partial(build_scheme, "t5", **sizes, bidirectional=False),
    "ALiBi": partial(build_scheme, "alibi", **sizes),
    "Transformer-XL": partial(build_scheme, "transformer-xl", **sizes),
})
todo = [
    setup for setup in itertools.product(SCHEMES, SEEDS) if setup not in trained
]
trained.update(zip(todo, run_each(train_decoder, todo, desc="scheme x seed")))
per_seed = {
    name: [accuracy(trained[name, s], *test_data) for s in SEEDS]
    for name in SCHEMES
}
tokens, targets = test_data
slopes = alibi_slopes(HEADS).tolist()
tilted = [bag_of_tokens(tokens, targets, decay=m) for m in slopes]
print("bag weighted exp(-m d), per ALiBi slope m:",
      {f"{m:g}": round(f.values[0], 3) for m, f in zip(slopes, tilted)})
alibi_bag = max(tilted, key=lambda f: f.values[0])
plain_bag = bag_of_tokens(tokens, targets)
lag_table = with_floors(
    {name: acc for name, acc in per_seed.items() if name != "none"},
    [
        no_position(per_seed["none"]),
        plain_bag,
        alibi_bag,
        chance(VOCAB),
    ],
    metric="test accuracy (3 seeds)",
)

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
solvers = ("RoPE", "T5 bias", "sinusoidal", "learnable", "Transformer-XL")
mean = {name: np.mean(acc) for name, acc in per_seed.items()}
assert all(lag_table.beats(name) == ["no position", "bag of tokens (argmax)",
                                     alibi_bag.name, "chance"]
           for name in solvers)
assert lag_table.beats("ALiBi") == ["chance"]
assert not compare(per_seed["none"], [plain_bag.values[0]] * 3).separated
assert alibi_bag.name == "bag of tokens (argmax, decay 0.0625)"
assert not lag_table.verdict("ALiBi", alibi_bag.name).separated
assert mean["RoPE"] > 0.99 and mean["T5 bias"] > 0.95
ranked = [
    (a, b)
    for a, b in itertools.permutations(solvers, 2)
    if compare(per_seed[a], per_seed[b]).a_ahead
]
assert not ranked, ranked
checked(
    "RoPE, T5, sinusoidal, learnable and Transformer-XL ahead of every floor,"
    " no two of them separated; ALiBi ahead of chance only, not separated from"
    " the bag weighted by its best slope; no position not separated from the"
    " plain bag"
)

# %% [markdown]
# RoPE, T5, Transformer-XL and the two added tables are ahead of every floor, and no two of them
# are separated (T5's 0.99 against 1.00 clears the seed spread, not the floor of two points).
#
# **ALiBi** is ahead of chance only, not separated from a rule with no learned position: the bag
# weighted with $m = 1/16$ scores 0.239, ALiBi 0.238. That is a verdict after 150 steps, not on
# ALiBi. Its steepest head ($m = 1/4$) weights distances 0-3 by 1, 0.78, 0.61, 0.47 (below): no
# single head can single out distance 3 (why: Exercise 5); whether the heads together learn a
# peak with more steps or layers is not run here.

# %% tags=["nbval-check-output"]
steepest = alibi_slopes(HEADS)[0]
alibi_weight = torch.exp(
    -steepest * torch.arange(4)
)  # exp(-m d): the softmax factor of distance d
print(
    f"ALiBi, {HEADS} heads: slopes {alibi_slopes(HEADS).tolist()}; steepest"
    " head, distances 0-3:",
    [round(w, 2) for w in alibi_weight.tolist()],
)
assert alibi_weight[3] > 0.4

# %% [markdown]
# What did T5 learn? Its bias per head (seed 0; the peaks of every seed printed):

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

def t5_peaks(seed: int) -> list[int]:
    """The offset of each head's largest learned T5 bias."""
    with torch.no_grad():
        bias = trained["T5 bias", seed].scheme.offset_bias()
    return offs[bias[offs + t5_trained.max_distance].argmax(0)].tolist()


peaks = {s: t5_peaks(s) for s in SEEDS}
print("offset of each head's largest bias, per seed:", peaks)
assert all(p == [-LAG] * HEADS for p in peaks.values())

# %% [markdown]
# And Transformer-XL's global position term (d), $v^\top W_R\, r_{i-j}$, per head (seed 0), a
# smooth function of the distance, and its peaks for every seed:

# %% tags=["nbval-check-output"]
def txl_term_d(seed: int) -> torch.Tensor:
    """Term (d) of the Transformer-XL model of ``seed``, (SEQ, heads)."""
    txl = trained["Transformer-XL", seed].scheme
    with torch.no_grad():
        wr = txl.r_proj(txl.relative_encoding(-offs)).view(
            len(offs), HEADS, -1
        )  # distance i - j = -offset
        return (wr * txl.v).sum(-1) * txl.score_scale(D_MODEL // HEADS)


term_d = txl_term_d(0)
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
peaks_d = {s: offs[txl_term_d(s).argmax(0)].tolist() for s in SEEDS}
print("offset of each head's largest term (d), per seed:", peaks_d)
assert all(p == [-LAG] * HEADS for p in peaks_d.values())

# %% [markdown]
# **Takeaway:**
# - T5's bias and Transformer-XL's term (d) peak at offset $-3$ (every head, every seed). T5's
#   bias is its only position input (without one the decoder stays at the bag). Whether
#   Transformer-XL needs term (d) is not tested: its term (b) could carry the offset too.
# - After 150 steps ALiBi is not separated from a fixed recency-weighted bag of tokens.

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
# the fourth; $a$ is the bytes per (query, key) pair, temporaries included: for T5 an int64
# offset index and four float32 head values, for full ALiBi two int64 temporaries (the
# differences and their absolute values), a float32 copy and four head values.

# %% tags=["nbval-check-output"]
per_pair = {}
for name, values in cost_bytes.items():
    a, b, c = np.polyfit(LENGTHS[:3], values[:3], 2).round().astype(int)
    assert (
        a * LENGTHS[3] ** 2 + b * LENGTHS[3] + c == values[3]
    ), name  # exact on the fourth length
    per_pair[name] = (a, b, c)
display(
    pd.Series({n: v[0] for n, v in per_pair.items()}, name="bytes per pair")
    .to_frame()
)

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
assert (
    per_pair["ALiBi compact"][0] == 0
    and per_pair["ALiBi compact"][1] == (4 + 1) * 4
)  # (heads + 1) float32 per key
assert (
    per_pair["T5 bias"][0] == 8 + 4 * 4
)  # one int64 offset index + 4 float32 head values per pair
assert per_pair["ALiBi full"][0] == 8 + 8 + 4 + 4 * 4  # int64 x2, float32, heads
assert all(per_pair[n][0] == 0 for n in ("sinusoidal", "learnable", "RoPE"))
checked(
    "bytes per pair: 0 for compact ALiBi and the added tables, 24 for T5,"
    " 36 for full ALiBi"
)

# %% [markdown]
# On a log-log plot memory grows as $L$ (slope 1) for the added tables, RoPE and compact ALiBi,
# and as $L^2$ for the pairwise biases. Times vary with the machine and its load: the time
# panel is a look, not a check.

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
# In a real model the scores take $O(L^2)$ time for every scheme, but SDPA's fused kernels keep
# memory linear unless given an $L^2$ bias mask, SDPA's only way to take a bias: T5, Swin and
# ALiBi without a causal mask need one. FlashAttention-2 (`alibi_slopes`) and FlexAttention
# (`score_mod`) compute the bias on the fly instead.
#
# **Takeaway:**
# - Added tables, RoPE and compact ALiBi cost $O(L)$ memory.
# - T5 and full ALiBi as an SDPA mask cost $O(L^2)$; a kernel computing the bias avoids it.

# %% [markdown]
# ## 9 · Which encoding when: the selection advice, with this series' evidence
#
# The source article, the Chinese tutorial 《Transformer位置编码原理与实现：从正弦编码到RoPE》,
# ends its §5.2 with advice by field (选择建议). For vision it says
# 「对于计算机视觉（ViT），可学习的1D或2D位置编码仍是主流且有效的选择，简单可靠。」
# ("For computer vision (ViT), learnable 1-D or 2-D position encodings remain
# the mainstream and effective choice, simple and reliable."), which this toy does not test at
# ViT scale. The table below is this series' own, from notebooks 00-05, for toy settings (one
# layer, 150 steps in section 7): a choice can change with depth and training length.
#
# | situation | choose | evidence | not shown |
# |---|---|---|---|
# | bidirectional encoder | some encoding | §5: the probe at chance without the mask | which one, for text |
# | causal decoder | an encoding: the mask gives some position, not an exact offset | §5: probe 5.0 times chance, 3.3 untrained (3 seeds); §7: no encoding not separated from the bag | more layers; NoPE in a language model (06) |
# | a fixed offset matters | RoPE, T5, Transformer-XL or an added table | §7: all five ahead of every floor; ALiBi not separated from a fixed weighted bag | relative against absolute; a ranking; ALiBi trained longer |
# | memory bound | no $L^2$ bias in memory | §8: T5 24 bytes per pair, compact ALiBi none | whole-model speed |
# | what a model learned | the learned bias; a probe beside its untrained floor | §7: T5's bias peaks at the offset (3 seeds); §5: trained 0.207, untrained 0.136 | whether the model uses it |
# | images, toy scale | no choice shown | 04 §4: on held-out offsets the RoPEs only tie a linear readout of absolute position | ViT-scale data |
#
# Long inputs are 06's subject, where every model is read against a Kneser-Ney n-gram.

# %% [markdown]
# ## Summary
#
# - **T5** adds a learned scalar per bucket (exact near, log-spaced up to 128) and head to the
#   unscaled score; trained on lag-3, every head peaks at offset −3 (3 seeds).
# - **ALiBi**: fixed slopes $2^{-8h/n}$; under a causal mask the per-key form $m_h j$ is exact.
# - **Swin**: $(2M-1)^2$ table rows, a block-Toeplitz index; BEiT adds 3 rows for a class token.
# - **Transformer-XL**: four terms; the position terms read sinusoidal $r_{i-j}$.
# - **PEG**'s zero padding and **NoPE**'s causal mask give position (3 seeds each).
# - On lag-3 (one layer, 150 steps) every encoding but ALiBi selects the offset, ahead of every
#   floor, absolute ones too; ALiBi is not separated from a fixed recency-weighted bag.
# - T5 and full ALiBi cost $O(L^2)$ memory as an SDPA mask.

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
# ### Exercise 2 · Predict, then run: how many pairs share one Swin table row?
# Section 3's "Pairs per table row" panel counts the (query, key) pairs that use each row for a
# $3 \times 3$ window. In Swin's $7 \times 7$ window, how many pairs use the row of offset
# $(\Delta r, \Delta c) = (2, -3)$ (query row minus key row, query column minus key column)?
# Write it into `predicted_pairs`, then run the cell after it.

# %%
predicted_pairs = ...  # your prediction: a whole number

# %% tags=["exercise", "nbval-check-output"]
index_7 = swin_relative_position_index(7, 7)
row = (2 + 7 - 1) * (2 * 7 - 1) + (-3 + 7 - 1)  # section 3's formula
check_exercise_2(predicted_pairs, int((index_7 == row).sum()))

# %% [markdown]
# ### Exercise 3 · Predict, then run: which T5 rows does training reach?
# Section 7's T5 decoder (causal, 32 buckets, `max_distance` 128) trains on sequences of 24
# tokens. How many of the 32 rows of its bias table does training change at all? Work it out
# from section 1's rule, write it into `predicted_rows`, then run the cell after it, which
# compares the trained table with the same seed's initial one.

# %%
predicted_rows = ...  # your prediction: a whole number, 0 to 32

# %% tags=["exercise", "nbval-check-output"]
t5_before = build_decoder("T5 bias", 0)[0].scheme.table.weight
t5_after = trained["T5 bias", 0].scheme.table.weight
rows_changed = int((t5_after != t5_before).any(-1).sum())
check_exercise_3(predicted_rows, rows_changed)

# %% [markdown]
# ### Exercise 4 · Explain why: compact ALiBi needs the causal mask
# Section 2 shows the compact per-key bias $m_h j$ giving the same attention as the full
# $-m_h|i - j|$ under a causal mask, and a different one without it. Why?
#
# - **(a)** In float32 the large products $m_h j$ lose digits that the full bias keeps, and the
#   mask hides that error.
# - **(b)** Full minus compact is $-m i$ for a key before the query but $m i - 2m j$ for one
#   after it, which varies with $j$.
# - **(c)** A softmax ignores a constant added to its row only when some entries of that row are
#   masked to $-\infty$.
# - **(d)** Without `is_causal`, SDPA drops a (heads, 1, L) bias that does not have the full
#   (heads, L, L) shape of the scores.

# %% tags=["exercise", "nbval-check-output"]
answer_4 = ...  # "a", "b", "c" or "d"
check_exercise_4(answer_4)

# %% [markdown]
# ### Exercise 5 · Explain why: can one ALiBi head peak at distance 3?
# In section 7's one-layer decoder the tokens are random. Can a single ALiBi head, on average
# over inputs, give the key 3 back more attention than every other key?
#
# - **(a)** No: in one layer the keys carry no position, and the head's own term $-m d$ favours
#   the nearest key.
# - **(b)** Yes: training can make the query's content score the key 3 back highest, since that
#   key holds the answer.
# - **(c)** No: the causal mask hides the key 3 back from the query, so the head never sees the
#   answer at all.
# - **(d)** Yes: the head whose penalty reaches $-1$ near distance 3 (slope about 1/3) gives that
#   distance its largest weight.

# %% tags=["exercise", "nbval-check-output"]
answer_5 = ...  # "a", "b", "c" or "d"
check_exercise_5(answer_5)

# %% [markdown]
# ### Exercise 6 · Design buckets whose last one starts at `max_distance`
# Section 1 found T5's last bucket starting well before `max_distance`. Design a causal bucketing
# that does not: `my_buckets(distance)` takes a tensor of distances (0, 1, 2, ...) and returns
# integer bucket ids such that, with 16 buckets and `max_distance` 64,
#
# - distances 0-7 each have their own bucket (bucket = distance);
# - a bucket never decreases with the distance, and every bucket 0-15 is used;
# - bucket 15 holds exactly the distances from 64 on.
#
# Many designs pass (log-spaced like T5, or evenly spaced); the checker tests these properties
# and prints how many distances each of your middle buckets holds.


# %% tags=["exercise", "nbval-check-output"]
def my_buckets(distance: torch.Tensor) -> torch.Tensor:
    raise NotImplementedError  # your code here


check_exercise_6(my_buckets)

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
#   Transformers](https://arxiv.org/abs/2305.19466)* (NoPE, and a construction by which the causal mask yields absolute position).
# - Zuo, Guerzhoy, Guerzhoy (COLING 2025), *[Position Information Emerges in Causal Transformers
#   Without Positional Encodings via Similarity of Nearby Embeddings](https://arxiv.org/abs/2501.00073)*:
#   another account of section 5's signal, in trained and untrained models.
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
# Exercise 2. The key sits 2 rows above the query and 3 columns to its right:
# 7 - 2 = 5 query rows and 7 - 3 = 4 query columns leave room for it.
predicted_pairs = (7 - 2) * (7 - 3)
check_exercise_2(predicted_pairs, int((index_7 == row).sum()))

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
# Exercise 3. Causal: 32 buckets, distances 0-15 exact (16 rows); the log part
# 16 + floor(16 log(d / 16) / log 8) gives 16, 17, 18 for d = 16..23: 19 rows.
predicted_rows = 19
reached = t5_relative_bucket(-torch.arange(SEQ), bidirectional=False)
assert reached.unique().numel() == predicted_rows
check_exercise_3(predicted_rows, rows_changed)

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
# Exercise 4. For j <= i, -m(i - j) = m j - m i: a constant per row apart
# (the softmax ignores it); for j > i the full bias is m i - m j.
answer_4 = "b"
check_exercise_4(answer_4)

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
# Exercise 5. One layer: a key is its token only, and -m d falls with d.
answer_5 = "a"
check_exercise_5(answer_5)

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
# Exercise 6. One design: log-spaced like T5, but with log2(d / 8) / 3, which
# is exactly 1 at d = 64, so the rounding down cannot reach bucket 15 early.
def my_buckets(distance: torch.Tensor) -> torch.Tensor:
    far = 8 + torch.floor(7 * torch.log2(distance.clamp(min=8) / 8) / 3).long()
    return torch.where(distance < 8, distance, far.clamp(max=15))


check_exercise_6(my_buckets)

# %% [markdown]
# ## End of notebook 05
# <!-- Keep this cell last. "Run All" ends on the last cell, and JupyterLab unfolds the section that
#      holds it: outside "Solutions", this heading leaves the solutions folded. -->

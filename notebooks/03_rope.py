# %% [markdown]
# # 03 · RoPE: rotary position embedding
#
# **The question.** Notebooks 01 and 02 *add* a position vector to each token. The attention
# score of a query at position $m$ and a key at $n$ then mixes content with both absolute
# positions, $(x_m + p_m)^\top (x_n + p_n)$, and a model trained at positions 0-11 is lost at
# 12-23 (02 §8). What we would want of a *relative* code:
#
# - the score depends on the positions only through the offset $m - n$;
# - the content still counts, undistorted: the query and the key keep their length;
# - nothing to learn and nothing to store per position, and each vector encoded alone, by its
#   own position, so a key can be cached once and reused.
#
# Rotations do exactly that: turning $q$ by $m\theta$ and $k$ by $n\theta$ changes the angle
# between them by $(n - m)\theta$ only, and changes no length. That is RoPE (Su et al.,
# RoFormer; first published on Su Jianlin's blog in March 2021), used by most open large
# language models (LLaMA, Mistral, Qwen, ...).
#
# **What you will learn**
# - why rotating 2-D pairs makes a score depend on the offset only;
# - the real and complex forms, the interleaved (Meta) and half-split (Hugging Face's Llama)
#   layouts, and converting a checkpoint between them;
# - where RoPE sits in attention, and the position of a KV-cache decode step;
# - the decay bound, float32 angles, partial rotary;
# - that plain RoPE (base 10000, no rescaling) does **not** extrapolate by itself (erratum E3),
#   and what breaks it.
#
# **Sections 1-5 are the 90-minute lesson.** Sections 6-10 are a second session.
#
# **Prerequisites:** [00 · Permutation blindness](00_permutation_blindness.ipynb) (attention,
# the position-scheme interface) and [01 · Sinusoidal encoding](01_sinusoidal.ipynb)
# (frequencies $\theta_i = 10000^{-2i/d}$, the rotation $M_k$ with $PE(p+k) = M_k\,PE(p)$).
#
# **Run time:** about 57 s on a laptop CPU (measured with `make execute`, one thread).

# %%
import itertools
import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch.testing import assert_close

from posenc_course.data import lag_task
from posenc_course.exercises.nb03 import (
    check_exercise_1,
    check_exercise_2,
    check_exercise_3,
    check_exercise_4,
)
from posenc_course.explorers import (
    ROPE_KEY,
    ROPE_QUERY,
    rope_explorer,
    rope_values,
)
from posenc_course.floors import (
    bag_of_tokens,
    chance,
    no_position,
    with_floors,
)
from posenc_course.plotting import (
    COLORS,
    LINESTYLES,
    MARKERS,
    heatmap,
    line_plot,
)
from posenc_course.report import checked, compare
from posenc_course.training import accuracy, run_each, setup_notebook, train
from posenc_lib.embeddings.sinusoidal import SinusoidalPE, shift_matrix
from posenc_lib.models import TinyTransformer, last_token_logits_two_ways
from posenc_lib.rotary.rope import (
    RotaryPE,
    apply_rope,
    convert_rope_checkpoint,
    rope_cos_sin,
    rope_inv_freq,
    rope_layout_permutation,
    rotate_half,
)

gen = setup_notebook(0)  # threads, figure style, seeds, print options
pd.set_option("display.width", 120)


def tiny(value: float, floor: float = 1e-5) -> str:
    """Format a difference that is rounding noise: "< 1e-05" when below
    ``floor``, else its value."""
    return f"< {floor:.0e}" if value < floor else f"{value:.1e}"


# %% [markdown]
# ## 1 · One pair: position as an angle
#
# **Question.** How can a dot product $q^\top k$ depend on the positions $m$ (query) and $n$
# (key) only through $m - n$?
#
# Take a 2-D query and key and turn each by an angle proportional to its position, with
# $R(\alpha) = \begin{pmatrix}\cos\alpha & -\sin\alpha\\ \sin\alpha & \cos\alpha\end{pmatrix}$.
# Rotations compose by adding angles and $R(\alpha)^\top = R(-\alpha)$, so
#
# $$\langle R(m\theta)\,q,\; R(n\theta)\,k\rangle = q^\top R(m\theta)^\top R(n\theta)\,k
#   = q^\top R\big((n-m)\theta\big)\,k .$$
#
# The absolute positions cancel; only the offset $n - m$ survives, and a rotation keeps each
# vector's length: both wants of the opening, met.


# %% tags=["nbval-check-output"]
def rotation(angle: float) -> torch.Tensor:
    """The 2x2 matrix that turns a 2-D vector by ``angle`` radians."""
    c, s = math.cos(angle), math.sin(angle)
    return torch.tensor([[c, -s], [s, c]], dtype=torch.float64)


theta = 0.4  # one frequency: radians per position
q = torch.tensor([1.0, 0.3], dtype=torch.float64)  # a query pair
k = torch.tensor([0.2, -0.9], dtype=torch.float64)  # a key pair
n_pos = 12
# scores[m, n] = <R(m theta) q, R(n theta) k>: query at m, key at n
scores_2d = torch.zeros(n_pos, n_pos, dtype=torch.float64)
for m in range(n_pos):
    for n in range(n_pos):
        scores_2d[m, n] = (rotation(m * theta) @ q) @ (rotation(n * theta) @ k)

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(7.5, 3.4))
for m in range(8):
    x_m, y_m = (rotation(m * theta) @ q).tolist()
    arrow = {"arrowstyle": "->", "color": COLORS[0], "lw": 1.5}
    arrow["alpha"] = 0.3 + 0.7 * m / 7  # later positions darker
    ax1.annotate("", xy=(x_m, y_m), xytext=(0, 0), arrowprops=arrow)
    ax1.text(1.12 * x_m, 1.12 * y_m, f"m={m}",
             ha="center", va="center", fontsize=10)
ax1.set(xlim=(-1.3, 1.3), ylim=(-1.3, 1.3), aspect="equal",
        xlabel="coordinate 1", ylabel="coordinate 2",
        title=r"Query pair at m = 0..7 ($\theta$ = 0.4)")
heatmap(ax2, scores_2d.numpy(), "Score: query at m, key at n",
        "key position n", "query position m",
        colorbar_label="score (dot product)", center=True)
plt.show()

# %% [markdown]
# The picture on the right is constant along every diagonal: the score only knows $n - m$.

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
for m in range(n_pos):
    for n in range(n_pos):
        assert_close(scores_2d[m, n], q @ rotation((n - m) * theta) @ k)
# shift both positions by c
for c in (1, 5):
    assert_close(scores_2d[c:, c:], scores_2d[:-c, :-c])
for angle in (0.4, 3.0, 1234.5):
    length = torch.linalg.vector_norm(rotation(angle) @ q)
    assert_close(length, torch.linalg.vector_norm(q))
checked(
    "every score equals q^T R((n-m) theta) k; shifting both positions by 1 or"
    " 5 changes nothing; rotations by 0.4, 3.0 and 1234.5 rad keep the norm"
)

# %% [markdown]
# **Takeaway.**
# - rotating query and key by angles proportional to their positions turns the score into a
#   function of the relative position, for any content $q, k$;
# - a rotation keeps the norm: RoPE changes directions, not lengths.
#
# ## 2 · All pairs: one frequency per pair
#
# **Question.** A head has `head_dim` = $d$ coordinates, not 2. How do we rotate it?
#
# Cut the vector into $d/2$ pairs and give pair $i$ its own frequency, those of notebook 01:
# $$\theta_i = \text{base}^{-2i/d},\qquad i = 0, \dots, d/2 - 1,\qquad \text{base} = 10000 .$$
# Position $m$ turns pair $i$ by $m\,\theta_i$: a block-diagonal rotation $R_m$ (01's $M_k$ is the
# same turn for pairs stored sine first, hence $M_k = R_k^\top$; the check below). RoFormer and
# Meta's LLaMA take neighbouring coordinates $(x_{2i}, x_{2i+1})$ as pair $i$: the
# **interleaved** layout. Written out for teaching (angles in float64):


# %%
def rope_inline(x: torch.Tensor, positions: torch.Tensor,
                base: float = 10000.0) -> torch.Tensor:
    """Rotate pair (x[2i], x[2i+1]) of every vector by positions * theta_i.

    Interleaved layout. x: (..., seq, head_dim); positions: (seq,) integers.
    Returns the same shape and dtype as x.
    """
    head_dim = x.shape[-1]
    pair_index = torch.arange(0, head_dim, 2, dtype=torch.float64)  # 2i
    theta = base ** (-pair_index / head_dim)  # (head_dim/2,)
    angle = positions.to(torch.float64)[:, None] * theta  # (seq, head_dim/2)
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    # the two coordinates of every pair
    first, second = x[..., 0::2], x[..., 1::2]
    rotated = torch.stack([first * cos - second * sin,
                           first * sin + second * cos], dim=-1)
    return rotated.flatten(-2)  # back to (..., seq, head_dim)


# %% [markdown]
# On a random query and key: each pair turns as in section 1, shifting *all* positions changes no
# score, norms are kept, and $R_k^\top$ is 01's $M_k$.

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
head_dim, seq = 64, 16
# a different query and key at every position
qs = torch.randn(seq, head_dim, dtype=torch.float64, generator=gen)
ks = torch.randn(seq, head_dim, dtype=torch.float64, generator=gen)
positions = torch.arange(seq)
rq = rope_inline(qs, positions)

pair_index = torch.arange(0, head_dim, 2, dtype=torch.float64)
theta_i = 10000.0 ** (-pair_index / head_dim)
for m, i in [(3, 0), (7, 5), (15, 31)]:
    pair = slice(2 * i, 2 * i + 2)
    assert_close(rq[m, pair], rotation(m * float(theta_i[i])) @ qs[m, pair])


def rope_scores(offset: int) -> torch.Tensor:
    """(seq, seq) scores <R_m q_m, R_n k_n>, every position + ``offset``."""
    shifted = positions + offset
    return rope_inline(qs, shifted) @ rope_inline(ks, shifted).T


for offset in (1, 37, 1000, 100_000):
    assert_close(rope_scores(offset), rope_scores(0))
rq_norm = torch.linalg.vector_norm(rq, dim=-1)
assert_close(rq_norm, torch.linalg.vector_norm(qs, dim=-1))
# rotating the identity gives the matrix whose row j is R_k e_j: R_k^T
identity = torch.eye(head_dim, dtype=torch.float64)
for k_shift in (1, 7, 250):
    r_k_transposed = rope_inline(identity, torch.full((head_dim,), k_shift))
    assert_close(shift_matrix(k_shift, head_dim), r_k_transposed)
# R_k advances (cos, sin) pairs: rows are positions, pairs cosine first
angle_p = positions.double()[:, None] * theta_i  # (seq, head_dim/2)
cos_first = torch.stack([angle_p.cos(), angle_p.sin()], -1).flatten(-2)
assert_close(rope_inline(cos_first[:-5], torch.full((seq - 5,), 5)),
             cos_first[5:])
checked(
    "pairs rotate as in section 1; scores unchanged under shifts up to 100000;"
    " norms kept; M_k = R_k^T, and R_k advances (cos, sin) pairs by k"
)

# %% [markdown]
# Give *one* fixed vector every position. Without position all 64 x 64 scores would be equal;
# with RoPE the matrix is constant along diagonals, largest on the diagonal.

# %% tags=["nbval-check-output"]
x_same = torch.randn(head_dim, dtype=torch.float64, generator=gen)
x_same = x_same.expand(64, head_dim)  # one vector at 64 positions
rx = rope_inline(x_same, torch.arange(64))
toeplitz = rx @ rx.T
# constant along diagonals
assert_close(toeplitz[5:, 5:], toeplitz[:-5, :-5])
# each row peaks at n = m (Cauchy-Schwarz)
assert torch.equal(toeplitz.argmax(dim=-1), torch.arange(64))
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(7.5, 3.4))
heatmap(ax1, toeplitz.numpy(), "Same vector at every position",
        "key position n", "query position m",
        colorbar_label="score", center=True)
line_plot(ax2, np.arange(64), {"score(m=0, n)": toeplitz[0].numpy()},
          "One row of the matrix", "relative position n - m (tokens)", "score")
plt.show()

# %% [markdown]
# The library does the same with precomputed tables: `rope_inv_freq` gives the $\theta_i$,
# `rope_cos_sin` the cos/sin tables, `apply_rope` rotates a (batch, heads, seq, head_dim) tensor:

# %% tags=["nbval-check-output"]
# (batch, heads, seq, head_dim)
x = torch.randn(2, 4, seq, head_dim, generator=gen)
inv_freq = rope_inv_freq(head_dim)
assert_close(inv_freq, theta_i.float())
cos, sin = rope_cos_sin(positions[None], inv_freq)  # each (1, seq, head_dim/2)
by_library = apply_rope(x, cos, sin, layout="interleaved")
assert_close(by_library, rope_inline(x, positions))
print("library apply_rope(layout='interleaved') == rope_inline")
print(f"fastest pair: theta_0 = {inv_freq[0]:.4f} rad/token; slowest:"
      f" theta_{head_dim // 2 - 1} = {inv_freq[-1]:.2e} rad/token")

# %% [markdown]
# ### Explorer · A query at m, a key at n
#
# **Question:** as one query and one key move, what happens to their pairs and their score?
#
# A fixed query and key of 4 pairs (head_dim 8). Top: each pair of $R_m q$ (solid) and $R_n k$
# (dashed). Bottom: the score of the query at $m$ with a key at every position 0-47, against the
# offset; the square is the key at $n$. In JupyterLab two sliders move $m$ and $n$.
#
# **What to try.** Move $m$ and $n$ together: the square does not move. Move $n$ alone: pair 0
# turns a radian per step, pair 3 a thousandth of one. Set $m = n$: the score is $q^\top k$.
# Whatever $m$ is, the curve against the offset is the same.

# %% tags=["nbval-check-output"]
rope_explorer()

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
theta_8 = rope_inv_freq(8)
pairs = [(5, 12), (6, 13), (20, 27), (40, 47), (5, 20)]
score = {mn: float(rope_values(*mn)["marker_score"][0]) for mn in pairs}
# m and n together: unchanged; n alone: it changes
together = [(6, 13), (20, 27), (40, 47)]
assert all(abs(score[mn] - score[5, 12]) < 1e-12 for mn in together)
assert abs(score[5, 20] - score[5, 12]) > 0.1
# m = n: the score is q . k
q_dot_k = sum(a * b for a, b in zip(ROPE_QUERY, ROPE_KEY))
for m in (0, 17, 47):
    assert abs(rope_values(m, m)["marker_score"][0] - q_dot_k) < 1e-12
# one curve of the offset, whatever m is
curve = {}
for m in (5, 30):
    values = rope_values(m, 0)
    curve[m] = dict(zip(values["offset"].tolist(), values["score"]))
shared = curve[5].keys() & curve[30].keys()
assert all(abs(curve[5][o] - curve[30][o]) < 1e-12 for o in shared)
checked(
    "the score is unchanged when m and n move together, changes when n moves"
    " alone, is q.k at m = n, and follows one curve of the offset; pair 0"
    f" repeats every {2 * math.pi / float(theta_8[0]):.2f} tokens"
)

# %% [markdown]
# **Takeaway.**
# - RoPE is a block-diagonal rotation with one frequency per pair, the frequencies of notebook 01;
# - fast pairs first ($\theta_0 = 1$ rad per token), slow pairs last
#   ($\theta_{d/2-1} = 10000^{-(d-2)/d}$, close to $1/10000$).
#
# ## 3 · The same thing with complex numbers
#
# **Question.** Why does Meta's reference code multiply complex numbers instead?
#
# Read the pair $(a, b)$ as the complex number $a + jb$ (the imaginary unit is $j$, as Python's
# `1j`, since $i$ numbers the pairs). Turning it by $\alpha$ is multiplying by $e^{j\alpha}$. So
# RoPE is one complex multiplication per pair, and the score becomes
# $$\langle R_m q, R_n k\rangle = \operatorname{Re}\sum_{i=0}^{d/2-1} q_i\,\overline{k_i}\,e^{j(m-n)\theta_i},$$
# with $q_i, k_i$ the complex pairs: only $m - n$ appears, now visibly. We use this form in
# section 7.


# %% tags=["nbval-check-output"]
def rope_complex_inline(x: torch.Tensor, positions: torch.Tensor,
                        base: float = 10000.0) -> torch.Tensor:
    """Interleaved RoPE as complex multiplication.

    x: (..., seq, head_dim); positions: (seq,).
    """
    head_dim = x.shape[-1]
    pair_index = torch.arange(0, head_dim, 2, dtype=torch.float64)
    theta = base ** (-pair_index / head_dim)
    angle = positions.to(torch.float64)[:, None] * theta  # (seq, head_dim/2)
    # pair (a, b) -> the complex number a + jb
    pairs = x.to(torch.float64).reshape(*x.shape[:-1], head_dim // 2, 2)
    z = torch.view_as_complex(pairs)
    # times e^{j m theta}
    rotated = z * torch.polar(torch.ones_like(angle), angle)
    return torch.view_as_real(rotated).flatten(-2).to(x.dtype)


assert_close(rope_complex_inline(qs, positions), rope_inline(qs, positions))
by_complex = rope_complex_inline(x, positions)
assert_close(by_complex, apply_rope(x, cos, sin, layout="interleaved"))

# the score formula above, for query position m and key position n
zq = torch.view_as_complex(qs.reshape(seq, head_dim // 2, 2))
zk = torch.view_as_complex(ks.reshape(seq, head_dim // 2, 2))
m, n = 11, 4
formula = (zq[m] * zk[n].conj() * torch.exp(1j * (m - n) * theta_i)).sum()
assert_close(rope_scores(0)[m, n], formula.real)
print("complex form == real form (inline and library); score = Re sum_i q_i"
      " conj(k_i) e^{j(m-n)theta_i}")

# %% [markdown]
# **Takeaway.**
# - complex multiplication and cos/sin arithmetic are two spellings of one rotation;
# - the complex form makes the dependence on $m - n$ visible; the real form is the one
#   production code uses most (the deep dive below says why).

# %% [markdown] jp-MarkdownHeadingCollapsed=true tags=["deep-dive"]
# ### Deep dive (optional) · Why production code uses the real form
#
# `view_as_complex` accepts half, float and double tensors, not bfloat16, so a complex
# implementation up-casts q and k in every layer (Meta's reference code and Hugging Face's Llama 4
# code cast to float32). The real form needs only elementwise products and a `rotate_half`, in
# any dtype: one reason Hugging Face's Llama code and `apply_rope` use it.

# %% tags=["deep-dive", "nbval-check-output"]
try:
    torch.view_as_complex(qs.bfloat16().reshape(seq, head_dim // 2, 2))
    raise AssertionError("expected a RuntimeError")
except RuntimeError as err:
    print(f"RuntimeError: {err}")
    assert "only supported for half, float and double" in str(err)
in_bf16 = apply_rope(x.bfloat16(), cos.bfloat16(), sin.bfloat16(),
                     layout="interleaved")
assert_close(in_bf16.float(), apply_rope(x, cos, sin, layout="interleaved"),
             atol=0.05, rtol=0.02)
print("the real form runs in bfloat16 as it is")

# %% [markdown]
# ## 4 · Two layouts: interleaved and half-split
#
# **Question.** Which coordinates form a pair? Codebases differ, and mixing them up is a
# common RoPE bug.
#
# - **Interleaved** (RoFormer, Meta's `llama/model.py`): pair $i$ is $(x_{2i}, x_{2i+1})$.
# - **Half-split** (Hugging Face's Llama code, `rotate_half`): pair $i$ is $(x_i, x_{i+d/2})$. With
#   $x = [x_1 \,|\, x_2]$ split in halves,
#   $\text{rotate\_half}(x) = [-x_2 \,|\, x_1]$ and
#   $\text{RoPE}(x) = x \odot [\cos\,|\,\cos] + \text{rotate\_half}(x) \odot [\sin\,|\,\sin]$.

# %% tags=["nbval-check-output"]
d_small = 16
dim_index = torch.arange(d_small)
pair_of_dim = {
    # dims 0, 1 -> pair 0; dims 2, 3 -> pair 1; ...
    "interleaved": dim_index // 2,
    # dims 0, 8 -> pair 0; dims 1, 9 -> pair 1; ...
    "half-split": dim_index % (d_small // 2),
}
fig, ax = plt.subplots(figsize=(7.5, 2.2))
heatmap(ax, torch.stack(list(pair_of_dim.values())).numpy(),
        "Which pair (frequency) each dimension belongs to",
        "dimension of the head (head_dim = 16)", "layout",
        colorbar_label="pair index i")
ax.set_yticks([0, 1], list(pair_of_dim))
for row, pair_ids in enumerate(pair_of_dim.values()):
    for dim, i in enumerate(pair_ids.tolist()):
        ax.text(dim, row, str(i), ha="center", va="center",
                color="white" if i < 4 else "black", fontsize=10)
plt.show()

# %% [markdown]
# The two layouts are the same rotation seen through a fixed permutation of the head dimension:
# gather the even coordinates first, then the odd ones,
# `perm = [0, 2, 4, ..., d-2, 1, 3, ..., d-1]`. Then
# $$\text{half}(x[\text{perm}]) = \text{interleaved}(x)[\text{perm}] .$$
# A dot product ignores the order of coordinates (if query and key share it), so the scores
# agree too.

# %% tags=["nbval-check-output"]
perm = rope_layout_permutation(head_dim)
evens_then_odds = torch.cat([torch.arange(0, head_dim, 2),
                             torch.arange(1, head_dim, 2)])
assert torch.equal(perm, evens_then_odds)
half = apply_rope(x[..., perm], cos, sin, layout="half")
assert_close(half, apply_rope(x, cos, sin, layout="interleaved")[..., perm])
# the textbook Hugging Face formula, x * [cos|cos] + rotate_half(x) * [sin|sin]
x_half = x[..., perm]
cos_full, sin_full = (torch.cat((t, t), dim=-1)[:, None] for t in (cos, sin))
assert_close(half, x_half * cos_full + rotate_half(x_half) * sin_full)
print("half(x[perm]) == interleaved(x)[perm]; library == Hugging Face"
      " rotate_half formula")

# %% [markdown]
# **Takeaway.**
# - interleaved and half-split RoPE differ only by where the pairs live;
# - the permutation above translates between them; section 6 turns it into a checkpoint converter.
#
# ## 5 · RoPE inside causal attention
#
# **Question.** Where exactly does the rotation go in a Transformer layer, and what changes when
# we decode one token at a time with a KV cache?
#
# RoPE acts on queries and keys **after** the q/k/v projection and the split into heads, and
# **before** the scores; values are never rotated, nothing is added to the embeddings (here the
# scheme's `rotate_qk` hook). We train a tiny causal decoder on a task that needs relative
# position: at every step, output the token seen **3 steps earlier**.

# %% tags=["nbval-check-output"]
VOCAB, TRAIN_LEN, LAG = 16, 32, 3


def rope_decoder(layout: str) -> TinyTransformer:
    """A 1-layer causal decoder, d_model 32 in 2 heads of 16.

    Its only position signal is RoPE.
    """
    return TinyTransformer(VOCAB, VOCAB, d_model=32, n_heads=2, n_layers=1,
                           causal=True, pool="none",
                           scheme=RotaryPE(head_dim=16, layout=layout))


train_data = lag_task(4096, TRAIN_LEN, VOCAB, LAG, gen)
test_data = lag_task(512, TRAIN_LEN, VOCAB, LAG, gen)
model = rope_decoder("interleaved")
train(model, train_data, steps=200, lr=3e-3, batch_size=64, generator=gen,
      desc="RoPE decoder")
test_acc = accuracy(model, *test_data)
print(f"test accuracy at the training length {TRAIN_LEN}: {test_acc:.3f}")
# floors: the token most frequent among the earlier ones, and chance
bag_5 = bag_of_tokens(*test_data).values[0]
print(f"floors: bag of tokens {bag_5:.3f}, chance {1 / VOCAB:.3f}")
assert test_acc > 0.99 and bag_5 < 0.3

# %% [markdown]
# The model solves the task, far above its floors: a rule that answers the earlier token seen
# most often, which knows no position, and chance. Where does it look? Its attention weights on
# one test sequence:

# %% tags=["nbval-check-output"]
seq_map = 16
tokens_map = test_data[0][:1, :seq_map]
# layer 0's weights: (batch, heads, queries, keys)
weights = model.attention_weights(tokens_map)[0]
fig, axes = plt.subplots(1, 2, figsize=(7.5, 3.4))
for head, ax in enumerate(axes):
    heatmap(ax, weights[0, head].numpy(), f"Trained RoPE decoder, head {head}",
            "key position n", "query position m",
            colorbar_label="attention weight")
plt.show()
# the weight of every query m on the key m - 3: (heads, queries)
m_idx = torch.arange(LAG, seq_map)
on_lag = weights[0][:, m_idx, m_idx - LAG]
print("mean weight on the key 3 back, per head:",
      [f"{w:.2f}" for w in on_lag.mean(-1).tolist()])
# every query: some head looks 3 back
assert on_lag.max(0).values.min() > 0.5

# %% [markdown]
# A stripe at $n = m - 3$: the model attends 3 tokens back at every query, using nothing but the
# rotation of q and k. Its attention layer redone by hand (project, split heads, rotate q and k,
# causal softmax) agrees with the library.

# %% tags=["nbval-check-output"]
attn = model.blocks[0].attn
scheme = model.scheme
h = torch.randn(2, 10, 32, generator=gen)  # (batch, seq, d_model)
pos = torch.arange(10)[None]  # (1, seq)


def split_heads(t: torch.Tensor) -> torch.Tensor:
    """(batch, seq, d_model) -> (batch, heads, seq, head_dim)."""
    batch, length, _ = t.shape
    return t.view(batch, length, attn.n_heads, attn.head_dim).transpose(1, 2)


def merge_heads(t: torch.Tensor) -> torch.Tensor:
    """(batch, heads, seq, head_dim) -> (batch, seq, d_model)."""
    return t.transpose(1, 2).reshape(t.shape[0], t.shape[2], -1)


with torch.no_grad():
    q_h, k_h, v_h = (split_heads(t) for t in attn.qkv(h).chunk(3, dim=-1))
    # rotate queries and keys only
    q_r, k_r = scheme.rotate_qk(q_h, k_h, pos)
    attended = F.scaled_dot_product_attention(q_r, k_r, v_h, is_causal=True)
    by_sdpa = attn.out(merge_heads(attended))
    scores = q_r @ k_r.transpose(-2, -1) / attn.head_dim**0.5
    future = torch.ones(10, 10, dtype=torch.bool).triu(1)
    scores = scores.masked_fill(future, float("-inf"))
    by_hand = attn.out(merge_heads(scores.softmax(-1) @ v_h))
    library = attn(h, causal=True)
assert_close(by_sdpa, library)
assert_close(by_hand, library)
print("hand-written layer (SDPA and explicit softmax) == MultiHeadAttention"
      " with RotaryPE")

# %% [markdown]
# **Why not rotate the values too?** With q and k rotated, moving the whole sequence to positions
# $c, c+1, \dots$ leaves the layer's output, and the trained model's, unchanged; rotate v as well
# and the output carries absolute positions.


# %% tags=["nbval-check-output"]
def layer_output(offset: int, rotate_values: bool) -> torch.Tensor:
    """The attention layer on ``h`` at positions offset..offset+9."""
    with torch.no_grad():
        q_r, k_r = scheme.rotate_qk(q_h, k_h, pos + offset)
        v_used = v_h
        if rotate_values:
            v_used = scheme.rotate_qk(v_h, v_h, pos + offset)[0]
        attended = F.scaled_dot_product_attention(q_r, k_r, v_used,
                                                  is_causal=True)
        return attn.out(merge_heads(attended))


def output_change(offset: int, rotate_values: bool) -> float:
    """The largest change of the output when all positions move by offset."""
    moved = layer_output(offset, rotate_values) - layer_output(0, rotate_values)
    return moved.abs().max().item()


rows = []
for offset in (7, 100):
    drift_qk = output_change(offset, rotate_values=False)
    drift_v = output_change(offset, rotate_values=True)
    rows.append({"all positions + c": offset,
                 "max |change|, q and k rotated": tiny(drift_qk),
                 "max |change|, v rotated too": f"{drift_v:.3f}"})
    assert drift_qk < 1e-5 < 0.05 < drift_v
display(pd.DataFrame(rows).set_index("all positions + c"))

tokens = test_data[0][:64]
shifted = torch.arange(TRAIN_LEN)[None] + 100
with torch.no_grad():
    assert_close(model(tokens, positions=shifted), model(tokens),
                 atol=1e-4, rtol=1e-4)
print("the trained RoPE model gives the same logits when every position is"
      " shifted by 100")

# %% [markdown]
# **The KV cache.** When generating, a model caches the keys and values of earlier tokens and
# feeds only the new one. Cached keys are *already rotated* by their positions, so the new token
# must be rotated by **its absolute position**, the cache length, not by 0. Full recomputation
# against "prefix into the cache, then one decode step":

# %% tags=["nbval-check-output"]
full, cached = last_token_logits_two_ways(model, tokens)
assert_close(cached, full)
difference = (cached - full).abs().max().item()
print("KV-cache step vs full recomputation: max |difference|", tiny(difference))

# %% [markdown]
# A decoding loop that forgets the offset rotates the new token by position 0; the cached keys
# still sit at 0..30, so every distance the query sees is wrong:

# %% tags=["nbval-check-output"]
with torch.no_grad():
    cache = model.new_cache()
    model(tokens[:, :-1], cache=cache)
    # the new token fed at position 0 instead of 31
    at_zero = torch.zeros(1, 1, dtype=torch.long)
    forgot = model(tokens[:, -1:], positions=at_zero, cache=cache)[:, -1]
target_last = test_data[1][:64, -1]
gap = (forgot - full).abs().max().item()
acc_right = (cached.argmax(-1) == target_last).float().mean().item()
acc_wrong = (forgot.argmax(-1) == target_last).float().mean().item()
print(f"offset forgotten: max |logit difference| = {gap:.2f}")
print(f"accuracy of the last prediction: offset right {acc_right:.3f},"
      f" offset forgotten {acc_wrong:.3f}")
assert gap > 1.0 and acc_right > 0.95 and acc_wrong < 0.5

# %% [markdown]
# **Takeaway.**
# - RoPE rotates q and k after the head split and before the scores, never v: the output is
#   unchanged when all position ids shift together;
# - that is not blindness to absolute position: a causal decoder still gets order from its mask
#   (the token at index $t$ attends to exactly $t+1$ tokens; exercise 2 of
#   [00](00_permutation_blindness.ipynb), and decoders without any encoding in
#   [05](05_relative_biases.ipynb));
# - a decode step must rotate the new token by its absolute position, the cache length.
#
# ## 6 · Converting a checkpoint between layouts
#
# *Second session: sections 6-10, each independent of the others.*
#
# **Question.** The model above was trained with interleaved pairs (as Meta's LLaMA checkpoints).
# What happens if we load its weights into a half-split implementation (as Hugging Face's), and
# how do we fix it?
#
# Loaded as is, it runs without error and is silently wrong, below the bag of tokens of
# section 5 (one trained model; the damage varies from model to model):

# %% tags=["nbval-check-output"]
as_is = rope_decoder("half")
as_is.load_state_dict(model.state_dict())
with torch.no_grad():
    drift = (as_is(test_data[0]) - model(test_data[0])).abs().max().item()
acc_as_is = accuracy(as_is, *test_data)
print(f"loaded without conversion: accuracy {acc_as_is:.3f}"
      f" (was {test_acc:.3f}; bag of tokens {bag_5:.3f}),"
      f" max |logit change| {drift:.2f}")
assert acc_as_is < bag_5

# %% [markdown]
# The fix permutes, **inside every head**, the output rows of $W_q$ and $W_k$ (and their biases)
# with `perm`, so that pair $i$ lands at dimensions $(i, i + d/2)$; $W_v$ and $W_o$ stay, since
# values are not rotated. `convert_qk_weight` does it on one weight, `convert_rope_checkpoint` on
# every layer of a state_dict. Converted, the model is exactly the same:

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
original = model.state_dict()
to_half = convert_rope_checkpoint(original, head_dim=16, to="half")
converted = rope_decoder("half")
converted.load_state_dict(to_half)
with torch.no_grad():
    assert_close(converted.blocks[0].attn(h, causal=True),
                 model.blocks[0].attn(h, causal=True))
    assert_close(converted(test_data[0]), model(test_data[0]))
acc_converted = accuracy(converted, *test_data)
assert acc_converted == test_acc
back = convert_rope_checkpoint(to_half, 16, "interleaved")
assert all(torch.equal(back[name], t) for name, t in original.items())
checked(
    "converted: attention outputs and logits equal, accuracy"
    f" {acc_converted:.3f}; converting back restores the checkpoint exactly"
)

# %% [markdown]
# **Takeaway.**
# - a layout mismatch does not crash, it quietly ruins the model;
# - convert by permuting the q and k rows within each head, never v or the output projection.
#
# ## 7 · Long-term decay
#
# **Question.** RoFormer claims the score "decays" as the relative distance grows. In what sense?
#
# From section 3, the score is $\operatorname{Re}\sum_i h_i e^{j(m-n)\theta_i}$ with
# $h_i = q_i \overline{k_i}$. Summation by parts (Abel) with the partial sums
# $S_r = \sum_{i=0}^{r-1} e^{j(m-n)\theta_i}$ gives (RoFormer, section 3.4.3)
# $$\Big|\sum_{i=0}^{d/2-1} h_i e^{j(m-n)\theta_i}\Big| \le \Big(\max_i |h_{i+1}-h_i|\Big)\sum_{r=1}^{d/2} |S_r|
# \qquad (h_{d/2} = 0).$$
# The content enters only through the first factor, the distance only through the second,
# plotted as $\frac{1}{d/2}\sum_{r=1}^{d/2}|S_r|$ for $d = 128$, up to 32768 tokens.

# %% tags=["nbval-check-output"]
d_rf = 128
pair_index = torch.arange(0, d_rf, 2, dtype=torch.float64)
theta_rf = 10000.0 ** (-pair_index / d_rf)  # (64,)
# distances 0 to 32768, evenly spread on a log scale
log_spaced = torch.logspace(0, math.log10(32768), 3000)
distance = torch.cat([torch.zeros(1), log_spaced]).round().unique().double()
angles = distance[:, None] * theta_rf  # (distances, d/2)
# the partial sums S_1 .. S_{d/2}, and the bound (1/(d/2)) sum_r |S_r|
partial = torch.polar(torch.ones_like(angles), angles).cumsum(-1)
bound = partial.abs().mean(-1)

# the inequality, for random pairs h_i = q_i conj(k_i), at every distance
h_pairs = torch.randn(20, d_rf // 2, dtype=torch.complex128, generator=gen)
phases = torch.exp(1j * distance[:, None] * theta_rf)
lhs = (h_pairs[:, None, :] * phases).sum(-1).abs()  # (20, distances)
# max_i |h_{i+1} - h_i|, with h_{d/2} = 0
h_end = torch.zeros(20, 1, dtype=torch.complex128)
step = torch.diff(h_pairs, dim=-1, append=h_end).abs().amax(-1)
assert (lhs <= step[:, None] * partial.abs().sum(-1) + 1e-9).all()

decades = [(1, 10), (10, 100), (100, 1000), (1000, 10000), (10000, 32769)]
rows = []
for lo, hi in decades:
    in_decade = bound[(distance >= lo) & (distance < hi)]
    rows.append({"distance": f"{lo}-{hi - 1}",
                 "mean bound": in_decade.mean().item(),
                 "max bound": in_decade.max().item()})
table = pd.DataFrame(rows).set_index("distance").round(2)
display(table)

edges = torch.logspace(0, math.log10(32769), 25, dtype=torch.float64)
centres, bin_means = [], []
for lo, hi in zip(edges[:-1], edges[1:]):
    in_bin = (distance >= lo) & (distance < hi)
    if in_bin.any():
        centres.append((lo * hi).sqrt().item())
        bin_means.append(bound[in_bin].mean().item())
fig, ax = plt.subplots(figsize=(7, 4))
label = r"$\frac{1}{d/2}\sum_r |S_r|$ (d = 128, base 10000)"
line_plot(ax, distance[1:].numpy(), {label: bound[1:].numpy()},
          "RoPE long-term decay: upper bound of the relative score",
          "relative distance |m - n| (tokens, log scale)",
          "relative upper bound", logx=True)
ax.plot(centres, bin_means, color=COLORS[1], linestyle=LINESTYLES[1],
        marker=MARKERS[1], markersize=4, label="its mean over log-spaced bins")
ax.legend()
plt.show()

# %% [markdown]
# At distance 0 every $|S_r| = r$, so the bound is $(d/2 + 1)/2 = 32.5$. It falls fast over the
# first hundred tokens, then **flattens** instead of going to zero: beyond a thousand tokens its
# average stays near 5 while single distances still reach 11-14 (table above).

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
means, peaks = table["mean bound"], table["max bound"]
assert_close(bound[0].item(), (d_rf / 2 + 1) / 2)
# the average decays ...
assert all(a > b for a, b in zip(means[:-1], means[1:]))
# ... then flattens ...
assert abs(means.iloc[3] - means.iloc[4]) < 0.1 * means.iloc[4]
# ... and the peaks stay well above 0
assert peaks.iloc[2:].min() > 0.3 * bound[0].item()
checked(
    "the bound is 32.5 at distance 0, its mean decays decade by decade, then"
    " flattens (last two decades within 10%), and its peaks stay above 30% of"
    " the start"
)

# %% [markdown]
# **Takeaway.**
# - the bound drops on average over the first few hundred tokens, then levels off: it is a bound,
#   not a promise that every far-away score is small;
# - why it levels off is not derived here (a hypothesis this notebook does not test: far away the
#   pairs' phases look unrelated, and such a sum stops cancelling).
#
# ## 8 · Precision: compute the angles in float32
#
# **Question.** Models run in bfloat16 or float16. What happens if the angles $m\theta_i$ are
# computed in that dtype too?
#
# bfloat16 keeps 8 significant bits: near position 30000 neighbouring numbers are 128 apart, so
# `position.to(bf16)` is wrong by up to 64 positions before any trigonometry. The fix (Hugging
# Face, `rope_cos_sin`): angles, cos and sin in float32, cast last. The error below: the worst
# pair's distance on the unit circle from the exact value (0 exact, 2 opposite).

# %% tags=["nbval-check-output"]
d_prec = 128
inv_freq_prec = rope_inv_freq(d_prec)
pair_index = torch.arange(0, d_prec, 2, dtype=torch.float64)
theta64 = 10000.0 ** (-pair_index / d_prec)
all_pos = torch.arange(32768)
exact = all_pos.double()[:, None] * theta64  # (positions, pairs)


def circle_error(cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Per position: the worst pair's distance from the exact unit vector."""
    return torch.hypot(cos.double() - exact.cos(),
                       sin.double() - exact.sin()).amax(-1)


def naive_cos_sin(dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """The bug: positions, frequencies, angles and cos/sin all in dtype."""
    angle = all_pos.to(dtype)[:, None] * inv_freq_prec.to(dtype)
    return angle.cos(), angle.sin()


def cast_last(dtype: torch.dtype = torch.float32):
    """The fix: angles and cos/sin in float32, cast to dtype last."""
    return rope_cos_sin(all_pos[None], inv_freq_prec, dtype=dtype)


errors = {
    "bf16 angles (naive)": circle_error(*naive_cos_sin(torch.bfloat16)),
    "fp16 angles (naive)": circle_error(*naive_cos_sin(torch.float16)),
    "float32 angles, cast to bf16": circle_error(*cast_last(torch.bfloat16)),
    "float32 angles, cast to fp16": circle_error(*cast_last(torch.float16)),
    "float32 throughout": circle_error(*cast_last()),
    # the control: exact-to-float64 angles, rounded once at the end
    "float64 angles, cast to float32": circle_error(*(
        t.float() for t in rope_cos_sin(all_pos[None], theta64,
                                        dtype=torch.float64))),
}
errors = {name: e.reshape(-1) for name, e in errors.items()}
shown = torch.logspace(0, math.log10(32767), 400).round().long().unique()
# an exact zero cannot be drawn on a log scale: show it at 1e-8
plotted = {name: e[shown].clamp_min(1e-8).numpy()
           for name, e in errors.items()}
fig, ax = plt.subplots(figsize=(7.5, 3.8))
line_plot(ax, shown.numpy(), plotted,
          "RoPE cos/sin error vs position (head_dim 128)",
          "position m (tokens, log scale)",
          "worst pair: |computed - exact| on the unit circle",
          logx=True, logy=True)
ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5))
plt.show()
at = [100, 1000, 8192, 32767]
display(pd.DataFrame(
    [[f"{e[m].item():.1e}" for m in at] for e in errors.values()],
    index=pd.Index(list(errors), name="error at position"), columns=at))

# %% [markdown]
# From position ~1000 on, bf16 angles are as good as random for the fast pairs, fp16 by 32k.
# Float32 angles are not exact: $m\theta_i$ rounded to float32 is off by a small multiple of
# $2^{-24}$ of its size ($\theta_i$ is rounded too), so **the error grows with $m$**: 3.2e-06
# at position 100, 1.7e-03 at 32767, above fp16's rounding up to 8192. The float64 control stays
# at float32's rounding; cast to bf16, the final rounding (2.5e-03 to 2.7e-03) dominates here.

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
late = all_pos >= 1000
naive_bf16 = errors["bf16 angles (naive)"]
cast_bf16 = errors["float32 angles, cast to bf16"]
assert naive_bf16[late].mean() > 1.0
assert cast_bf16.max() < 0.01
assert errors["float32 angles, cast to fp16"].max() < 0.01
assert errors["fp16 angles (naive)"][all_pos >= 16384].mean() > 1.0
ratio = (naive_bf16[late] / cast_bf16[late]).min()
assert ratio > 100
# float32 angles: the error grows with m; float64 angles: it does not
f32 = errors["float32 throughout"]
f64 = errors["float64 angles, cast to float32"]
assert f32[32767] > 100 * f32[100] and f32[32767] > 1e-3
assert f64.max() < 1e-6 and f32[32767] > 1000 * f64.max()
assert f32[32767] > errors["float32 angles, cast to fp16"][:8193].max()
checked(
    "from position 1000 on, naive bf16 angles err by more than 1 on average,"
    f" float32 angles cast last stay under 0.01, at least {ratio:.0f}x smaller;"
    " the float32 angle error grows with m, the float64 one does not"
)

# %% [markdown]
# **Takeaway.**
# - keep positions as integers, build the angles and cos/sin in float32, and cast to the model
#   dtype last (as Hugging Face's `LlamaRotaryEmbedding.forward` does);
# - float32 angles still drift in proportion to $m\theta_i$: at 32k positions more than casting
#   to fp16 costs, and the drift grows with the context length.
#
# ## 9 · Erratum: RoPE does not extrapolate by itself
#
# The source article (§4.1):
# 「长度外推性优秀：由于其数学形式，RoPE在处理远长于训练序列的文本时，性能下降相对平滑，外推能力显著优于绝对位置编码。」
# ("Excellent length extrapolation: because of its
# mathematical form, RoPE's performance degrades relatively smoothly on texts far longer than
# the training sequences, and its extrapolation is markedly better than that of absolute
# encodings.") The comparison with absolute encodings holds in part in 06's language models
# (erratum E3). Here we ask the first half: does a small RoPE decoder degrade smoothly? A common
# explanation: the slow pairs never complete a turn within the training length $L$, so beyond
# $L$ they meet new angles. How many pairs turn within $L$ ($2\pi/\theta_i \le L$)? Base 2 makes
# all of ours turn: the control.


# %% tags=["nbval-check-output"]
def full_turns(head_dim: int, length: int, base: float = 10000.0) -> int:
    """The number of pairs whose wavelength 2 pi / theta_i is <= length."""
    wavelength = 2 * math.pi / rope_inv_freq(head_dim, base).double()
    return int((wavelength <= length).sum())


settings = [("our tiny decoder", 16, TRAIN_LEN, 10000.0),
            ("our tiny decoder, base 2", 16, TRAIN_LEN, 2.0),
            ("LLaMA-2-like", 128, 4096, 10000.0)]
turns = pd.DataFrame([
    {"setting": name, "head_dim": d, "training length L": L, "base": base,
     "pairs": d // 2, "full turn within L": full_turns(d, L, base)}
    for name, d, L, base in settings
]).set_index("setting")
display(turns)
# closed form: theta_i = base^(-2i/d) has wavelength <= L
#   <=>  i <= (d/2) ln(L / 2 pi) / ln(base)
closed_form = [
    min(d // 2,
        math.floor(d / 2 * math.log(L / (2 * math.pi)) / math.log(b)) + 1)
    for d, L, b in zip(turns["head_dim"], turns["training length L"],
                       turns["base"])
]
assert turns["full turn within L"].tolist() == closed_form
assert turns.loc["our tiny decoder, base 2", "full turn within L"] == 8

# %% [markdown]
# Section 5's decoder, trained for 200 steps on batches of 32 at learning rate 0.01 (at section
# 5's 0.003 the sinusoid did not learn the task on batches of 32), in four arms, five seeds each, differing only in the scheme (seed $s$: the same initial weights and
# batches in every arm): **RoPE** (base 10000, full attention: "plain RoPE"); **RoPE, base 2**
# (the control); an **absolute sinusoid** (01's table: the article's comparison); and **no
# position**, the floor. The task needs only the token 3 steps back, a distance seen at every
# training step. Each decoder reads 256 sequences of 256 tokens (8L) once: in a causal decoder
# the query at position $p$ sees exactly what it would see in a sequence of $p + 1$ tokens. RoPE
# also runs with a window of 32 keys.


# %% tags=["nbval-check-output"]
def sliding_window(length: int, window: int) -> torch.Tensor:
    """(1, 1, length, length) mask: query i sees keys i-window+1 .. i.

    The model adds causality.
    """
    i, j = torch.arange(length)[:, None], torch.arange(length)[None, :]
    return (i - j < window)[None, None]


SEEDS, LONG = range(5), 8 * TRAIN_LEN
ARMS = {  # each arm's scheme; everything else is section 5's decoder
    "RoPE": lambda: RotaryPE(head_dim=16, layout="interleaved"),
    "RoPE, base 2": lambda: RotaryPE(head_dim=16, layout="interleaved",
                                     base=2.0),
    "absolute sinusoid": lambda: SinusoidalPE(32, max_len=LONG),
    "no position": lambda: None,
}


long_tokens, long_targets = lag_task(256, LONG, VOCAB, LAG,
                                     torch.Generator().manual_seed(100))
i, j = torch.arange(LONG)[:, None], torch.arange(LONG)[None, :]
MASKS = {"full attention": None,
         "window of 32 keys": sliding_window(LONG, TRAIN_LEN),
         "16 near + 16 farthest keys": ((i - j < 16) | (j < 16))[None, None]}


def trained_decoder(arm_seed: tuple[str, int]
                    ) -> tuple[TinyTransformer, dict[str, torch.Tensor]]:
    """Section 5's decoder, trained as above, with this arm's scheme and seed;
    then its accuracy at each query position of the long sequences, (LONG,),
    under each mask (RoPE) or full attention (the other arms)."""
    arm, seed = arm_seed
    seeded = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)  # the same initial weights in every arm
    decoder = TinyTransformer(VOCAB, VOCAB, d_model=32, n_heads=2,
                              n_layers=1, causal=True, pool="none",
                              scheme=ARMS[arm]())
    data = lag_task(4096, TRAIN_LEN, VOCAB, LAG, seeded)
    train(decoder, data, steps=200, lr=0.01, batch_size=32,
          generator=seeded, desc=None)
    masks = MASKS if arm == "RoPE" else {"full attention": None}
    with torch.no_grad():
        right = {name: (decoder(long_tokens, attn_mask=mask).argmax(-1)
                        == long_targets).float().mean(0)
                 for name, mask in masks.items()}
    return decoder, right


runs_of = [(arm, seed) for arm in ARMS for seed in SEEDS]
# twenty decoders train side by side, each read on the long sequences
trained = dict(zip(runs_of, run_each(trained_decoder, runs_of,
                                     desc="decoders, arm x seed")))
decoders = {run: decoder for run, (decoder, _) in trained.items()}
# right[arm, seed, mask]: accuracy at each query position, (LONG,)
right = {(*run, name): curve
         for run, (_, by_mask) in trained.items()
         for name, curve in by_mask.items()}
CURVES = {"RoPE, full attention": ("RoPE", "full attention"),
          "RoPE, window of 32 keys": ("RoPE", "window of 32 keys"),
          "RoPE, base 2": ("RoPE, base 2", "full attention"),
          "absolute sinusoid": ("absolute sinusoid", "full attention"),
          "no position": ("no position", "full attention")}
curves = {name: torch.stack([right[arm, s, mask] for s in SEEDS]).mean(0)
          [LAG:].numpy() for name, (arm, mask) in CURVES.items()}
fig, ax = plt.subplots(figsize=(7.5, 3.8))
line_plot(ax, np.arange(LAG, LONG), curves,
          "Lag-3 decoders on sequences 8x the training length",
          "query position (tokens)", "accuracy (mean of 5 seeds)")
ax.axvline(TRAIN_LEN - 0.5, color="black", linestyle=":", linewidth=1)
ax.text(TRAIN_LEN + 3, 0.55, "training length", fontsize=10)
ax.legend(fontsize=9, loc="center right")
plt.show()
# full attention's mean accuracy at query positions 3-31, 32-63, 128-255
full_pos = curves["RoPE, full attention"]
seen = full_pos[:TRAIN_LEN - LAG].mean()
next_32 = full_pos[TRAIN_LEN - LAG:64 - LAG].mean()
far = full_pos[128 - LAG:].mean()
print(f"RoPE, full attention: positions 3-31 {seen:.3f}, 32-63 {next_32:.3f},"
      f" 128-255 {far:.3f}")
assert seen > 0.99 and far < 0.3
assert curves["RoPE, window of 32 keys"].min() > 0.97

# %% [markdown]
# Beyond $L$ RoPE with full attention fails; with a window it does not. How badly? Each arm's
# accuracy over queries $n/2$ to $n - 1$ of all 256 sequences, beside the floors: no position,
# the bag-of-tokens rule ("answer the earlier token seen most often", exact) and chance (1/16),
# at $L$, 4L and 8L:


# %% tags=["nbval-check-output"]
def second_half(arm: str, length: int) -> list[float]:
    """Each seed's accuracy over queries length/2 .. length-1."""
    return [right[arm, s, "full attention"][length // 2:length].mean().item()
            for s in SEEDS]


floor_tables = {}
for length in (TRAIN_LEN, 4 * TRAIN_LEN, LONG):
    print(f"queries {length // 2}-{length - 1} ({length // TRAIN_LEN}L):")
    scored = long_targets[:, :length].clone()
    scored[:, :length // 2] = -100  # not scored
    floor_tables[length] = with_floors(
        {arm: second_half(arm, length)
         for arm in ARMS if arm != "no position"},
        [no_position(second_half("no position", length)),
         bag_of_tokens(long_tokens[:, :length], scored), chance(VOCAB)],
        metric=f"accuracy, queries {length // 2}-{length - 1}")

# %% [markdown]
# **Reading the tables.** At $L$ every arm, the absolute sinusoid included, is at 1.000, far
# ahead of every floor. Beyond $L$ plain RoPE does not degrade smoothly: 0.549 over queries 32-63,
# then the floors. At 4L it is not separated from any (0.124 against 0.105 without position); at
# 8L it is behind no position by 0.028 and the bag of tokens by 0.034 (needed 0.02: near the bar,
# a hypothesis). The absolute sinusoid fails too (at 4L ahead of chance only, at 8L of no floor):
# the article's comparison is 06's. Base 2 keeps 0.981 at 4L and 0.968 at 8L, ahead of every
# floor. That fits the slow-pair explanation without isolating it: base 2 changes the fast pairs
# too.
#
# Beyond $L$ keys sit at **unseen distances**, and more keys share the softmax (**dilution**).
# Two controls on the RoPE decoders separate them, read on the last query and compared paired
# (the same decoders measured two ways): **all keys, seen distances** gives the keys
# before the last 32 ids 4 to 31 steps back, the target still the only key 3 back (dilution
# only); **16 near + 16 farthest keys** shows 32 keys as in training, half at unseen distances
# (unseen distances only).

# %% tags=["nbval-check-output"]
def seen_distances(decoder: TinyTransformer, length: int) -> float:
    """The last query's accuracy when the keys before the last 32 get ids
    4 to 31 steps before it: more keys, every distance seen."""
    tokens, targets = long_tokens[:, :length], long_targets[:, length - 1]
    n_far = length - TRAIN_LEN
    steps_back = 4 + torch.arange(n_far) % (TRAIN_LEN - 4)
    positions = torch.arange(length)[None].clone()
    positions[0, :n_far] = length - 1 - steps_back
    with torch.no_grad():
        logits = decoder(tokens, positions=positions)[:, -1]
    return (logits.argmax(-1) == targets).float().mean().item()


CONTROLS = ("full attention", "window of 32 keys", "all keys, seen distances",
            "16 near + 16 farthest keys")
runs = pd.DataFrame([
    {"length": length, "control": control, "seed": seed,
     "accuracy": seen_distances(decoders["RoPE", seed], length)
     if control == "all keys, seen distances" and length > TRAIN_LEN
     else right["RoPE", seed, control if control in MASKS
                else "full attention"][length - 1].item()}
    for length in (TRAIN_LEN, 2 * TRAIN_LEN, 4 * TRAIN_LEN, LONG)
    for control in CONTROLS
    for seed in SEEDS
])
stats = (runs.groupby(["length", "control"], sort=False)["accuracy"]
         .agg(["mean", "std"]).unstack("control"))
mean, std = stats["mean"], stats["std"]
extrapolation = pd.DataFrame(
    {c: [f"{m:.3f} ± {s:.3f}" for m, s in zip(mean[c], std[c])]
     for c in CONTROLS},
    index=pd.Index(stats.index, name="length (last query), RoPE"))
extrapolation

# %% tags=["nbval-check-output"]
seeds_of = runs.set_index(["length", "control"])["accuracy"]
COMPARED = {  # (the arm the prose names first, the other)
    "seen against unseen distances": ("all keys, seen distances",
                                      "16 near + 16 farthest keys"),
    "window against full attention": ("window of 32 keys", "full attention"),
}
verdicts = {
    (length, pair): compare(seeds_of[length, a].tolist(),
                            seeds_of[length, b].tolist(), paired=True,
                            names=(a, b))
    for length in mean.index[mean.index > TRAIN_LEN]
    for pair, (a, b) in COMPARED.items()
}
for (length, _), verdict in verdicts.items():
    print(f"{length:3d} tokens: {verdict}")

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
beyond = mean.index > TRAIN_LEN
# at L every control is perfect
assert (mean.loc[TRAIN_LEN] > 0.99).all()
# neither effect: perfect; dilution alone: harmless here
assert mean["window of 32 keys"].min() > 0.97
assert mean["all keys, seen distances"].min() > 0.97
# unseen distances alone: it fails, in the mean and in every seed
unseen = mean.loc[beyond, "16 near + 16 farthest keys"]
assert unseen.max() < 0.8
# beyond 4L the seen distances and the window lead by the rule
for length in (4 * TRAIN_LEN, LONG):
    assert verdicts[length, "window against full attention"].a_ahead
assert verdicts[4 * TRAIN_LEN, "seen against unseen distances"].a_ahead
# the floors: at L every arm beats them all; beyond, RoPE and the sinusoid
# do not, and at 8L RoPE is behind no position and the bag of tokens
for arm in floor_tables[TRAIN_LEN].results:
    assert len(floor_tables[TRAIN_LEN].beats(arm)) == 3
for length, arm in itertools.product((4 * TRAIN_LEN, LONG),
                                     ("RoPE", "absolute sinusoid")):
    assert floor_tables[length].beats(arm) in ([], ["chance"])
assert not floor_tables[4 * TRAIN_LEN].beats("RoPE")
assert floor_tables[LONG].verdict("RoPE", "no position").b_ahead
assert floor_tables[LONG].verdict("RoPE", "bag of tokens (argmax)").b_ahead
# the control: with every pair turning within L, RoPE extrapolates
base_2 = floor_tables[LONG].results["RoPE, base 2"]
assert min(base_2) > 0.9 and len(floor_tables[LONG].beats("RoPE, base 2")) == 3
assert compare(base_2, floor_tables[LONG].results["RoPE"]).a_ahead
checked(
    "every control is perfect at 32 tokens; beyond it the window and all keys"
    " at seen distances stay near 1 while 16 near + 16 farthest keys stays"
    " below 0.8; at 32 tokens every arm beats every floor, beyond it RoPE and"
    " the sinusoid beat none but chance (RoPE at 256: behind the decoder"
    " without position), while base 2 is above 0.9 in every seed and beats"
    " every floor"
)

# %% [markdown]
# Dilution costs nothing here (1.000 ± 0.000 at 256 with every distance seen); unseen distances
# alone break it (0.195 ± 0.090 at 64, 0.070 ± 0.017 at 128, 0.138 ± 0.062 at 256). One tiny
# model, one key to find:
# [06](06_length_extrapolation.ipynb) measures both on language models.
#
# ## 10 · Partial rotary
#
# **Question.** Must every coordinate of a head be rotated? No. GPT-NeoX rotates the first
# quarter of each head (`rotary_pct = 0.25` in its `config.json`), Phi-2 40%
# (`partial_rotary_factor = 0.4`); the rest pass through. In the library,
# `RotaryPE(head_dim, rotary_fraction=...)`, with frequencies
# $\theta_i = \text{base}^{-2i/\text{rotary\_dim}}$; the score splits into a rotated part,
# which depends on $m - n$, and a pass-through part, which depends on neither position.

# %% tags=["nbval-check-output"]
partial = RotaryPE(head_dim=64, rotary_fraction=0.25)
print(partial)
# (batch, heads, seq, head_dim)
q_p = torch.randn(1, 2, 8, 64, dtype=torch.float64, generator=gen)
k_p = torch.randn(1, 2, 8, 64, dtype=torch.float64, generator=gen)
pos_p = torch.arange(8)[None]
rq_p, rk_p = partial.rotate_qk(q_p, k_p, pos_p)
rot = partial.rotary_dim
# 48 of 64 dims untouched; the first 16 get RoPE of width 16
assert rot == 16 and torch.equal(rq_p[..., rot:], q_p[..., rot:])
inv_freq_p = rope_inv_freq(rot).double()
cos_p, sin_p = rope_cos_sin(pos_p, inv_freq_p, dtype=torch.float64)
assert_close(rq_p[..., :rot], apply_rope(q_p[..., :rot], cos_p, sin_p))


def partial_scores(offset: int) -> torch.Tensor:
    """The scores of q_p and k_p with every position + offset."""
    q_r, k_r = partial.rotate_qk(q_p, k_p, pos_p + offset)
    return q_r @ k_r.transpose(-2, -1)


# still relative
for offset in (5, 1000):
    assert_close(partial_scores(offset), partial_scores(0))
print(f"rotary_dim = {rot} of 64; scores unchanged under shifts by 5 and 1000")

# %% [markdown]
# Give one fixed vector every position, as in section 2, and follow its score with itself as the
# distance grows. The 48 untouched coordinates add the same amount at every distance (their
# share of $|x|^2$), so the score swings less: that part matches content at any distance, the
# rotated part carries the relative position.

# %% tags=["nbval-check-output"]
one_vector = torch.randn(64, dtype=torch.float64, generator=gen)
# the same vector at positions 0..255: (batch, heads, seq, head_dim)
x_fixed = one_vector.expand(1, 1, 256, 64)
squared_norm = one_vector.square().sum()
distances = torch.arange(256)
rows = {}
for name, scheme_p in (("fully rotated (64 of 64)", RotaryPE(head_dim=64)),
                       ("partial (16 of 64)", partial)):
    r, _ = scheme_p.rotate_qk(x_fixed, x_fixed, distances[None])
    # score(0, n) / |x|^2 for n = 0..255
    rows[name] = (r[0, 0, 0] @ r[0, 0].T / squared_norm).numpy()
fig, ax = plt.subplots(figsize=(7, 3.8))
line_plot(ax, distances.numpy(), rows,
          "Score of one vector with itself vs distance",
          "distance n - m (tokens)", "score / |x|² (1 at distance 0)")
plt.show()
full_r, part_r = rows["fully rotated (64 of 64)"], rows["partial (16 of 64)"]
pass_share = float(one_vector[rot:].square().sum() / squared_norm)
# over distances 1..255
swing_full = float(full_r[1:].max() - full_r[1:].min())
swing_part = float(part_r[1:].max() - part_r[1:].min())
# the lowest possible: the pass-through share minus the rotated share
assert part_r.min() >= 2 * pass_share - 1 - 1e-9
assert swing_part < swing_full
print(f"share of |x|^2 in the 48 pass-through dims: {pass_share:.2f}; lowest"
      f" score: full {full_r.min():.2f}, partial {part_r.min():.2f}; swing"
      f" over distances 1-255: full {swing_full:.2f}, partial"
      f" {swing_part:.2f}")

# %% [markdown]
# **Takeaway.**
# - partial rotary applies RoPE to the first `rotary_dim` coordinates of each head and leaves
#   the rest alone; scores stay relative;
# - converting such a checkpoint between layouts permutes only the rotated rows
#   (`convert_qk_weight(..., rotary_dim=...)`).
#
# ## Summary
#
# - RoPE rotates each 2-D pair of the query and key by $m\theta_i$: the score depends on $m - n$
#   only, norms are kept, nothing is learned (sections 1-2); the real and complex forms are one
#   function (section 3).
# - Interleaved (Meta) and half-split (Hugging Face's Llama) layouts differ by a fixed
#   permutation of the head dimension; a checkpoint loaded in the wrong layout fails silently;
#   converting it permutes the q and k rows within each head (sections 4, 6).
# - RoPE acts on q and k after the head split, never on v; a KV-cache decode step rotates the
#   new token by the cache length (section 5).
# - The decay bound falls, then levels off (section 7); float32 angles, cast last, still drift
#   with the position (section 8); partial rotary rotates part of each head (section 10).
# - Plain RoPE does not extrapolate (erratum E3): from 4L on it is at the floors, and neither is
#   the absolute sinusoid; the controls tie the failure to unseen distances; base 2 extrapolates,
#   but the slow pairs as the cause remain a hypothesis (section 9).
#
# ### Open-ended experiment · Between base 2 and base 10000
#
# **Question.** Base 2 extrapolates, base 10000 fails (section 9). Where between them does it
# switch, and what predicts it: how many pairs turn within $L$, or how far the slowest turns?
#
# **A starting setup.** For bases 5, 10, 100 and $10^6$, add an arm to `ARMS` with
# `RotaryPE(head_dim=16, layout="interleaved", base=b)`, train three seeds with
# `trained_decoder((arm, seed))`, and read queries $n/2$ to $n - 1$ at 64, 128 and 256 tokens as
# section 9 does; `full_turns` counts the pairs that turn.
#
# **What to look for.** Whether accuracy rises with the number of pairs that turn, or jumps
# when the slowest one turns; how the seeds spread near the switch, and whether differences pass
# the series' rule (02 §3). Notebook 06 asks it for language models.

# %% [markdown]
# ## Exercises
#
# Each exercise ends in a checker: `[to do]` until you answer, then `[passed]` or `[not yet]`
# with a hint. Worked solutions are in the folded **Solutions** section at the end.
#
# ### Exercise 1 · Predict, then run: a fast pair and a slow pair
# A vector of two pairs, a fast one ($\theta = 0.4$) and a slow one ($\theta = 0.004$), each
# $(1, 0)/\sqrt{2}$, serves as query and key. At offset 0 the score is $|x|^2 = 1$. What is it
# when the key sits 5 positions after the query? Write your prediction into `predicted_score`,
# then run the cell after it.

# %%
predicted_score = ...  # your prediction: a number from -1 to 1

# %% tags=["exercise", "nbval-check-output"]
half = torch.tensor([1.0, 0.0], dtype=torch.float64) / math.sqrt(2)
m_q, n_k = 3, 8  # any two positions 5 apart
score_5 = sum(float((rotation(m_q * th) @ half) @ (rotation(n_k * th) @ half))
              for th in (0.4, 0.004))  # the fast pair, then the slow one
check_exercise_1(predicted_score, score_5)

# %% [markdown]
# ### Exercise 2 · Explain why: a shift, and a forgotten offset
# Section 5 moves position ids twice. Every position shifted by 100: the trained model's logits do
# not change. The new token of a decode step fed at position 0 instead of 31: its answer breaks.
# Both change only position ids, and the model never saw position 100. Why the difference?
#
# - **(a)** Position 100 lies beyond the training length, where RoPE extrapolates; position 0 was
#   never met by a query with cached keys in training.
# - **(b)** Shifting moves every query and key together, so each offset m - n stays; the decode
#   step moves the new query alone, changing its offsets.
# - **(c)** The cache holds unrotated keys, so a decode step rotates them again by the new token's
#   position, and position 0 undoes the rotation they needed.
# - **(d)** Shifting by 100 turns each pair by a whole number of turns, so every rotation comes
#   back to where it started; positions 0 and 31 differ by part of a turn.

# %% tags=["exercise", "nbval-check-output"]
answer_2 = ...  # "a", "b", "c" or "d"
check_exercise_2(answer_2)

# %% [markdown]
# ### Exercise 3 · Convert a weight between layouts
#
# Write `interleaved_to_half(weight, n_heads)`: `weight` is a query or key projection of shape
# (n_heads · head_dim, d_in) trained with interleaved RoPE; return the weight for a half-split
# model, without calling `convert_qk_weight`. The checker compares attention scores of the two
# layouts.


# %% tags=["exercise", "nbval-check-output"]
def interleaved_to_half(weight: torch.Tensor, n_heads: int) -> torch.Tensor:
    raise NotImplementedError  # your code here


check_exercise_3(interleaved_to_half)

# %% [markdown]
# ### Exercise 4 · Design: position ids that keep the order and stay in range
#
# Section 9's control "all keys, seen distances" put far keys out of order. Design
# `grouped_positions(length)`: (1, length) int64 ids for `length` tokens (32 to 256) that
#
# - never decrease (the order of the input is kept: equal ids are allowed);
# - put every key within 31 ids of the last query (distances seen in training);
# - leave the key 3 back at distance exactly 3, and no other key there.
#
# The checker tests these properties, then runs section 5's decoder with your ids at 64, 128
# and 256 tokens. (Grouping far tokens onto shared ids, near ones exact:
# [Self-Extend](https://arxiv.org/abs/2401.01325), Jin et al. 2024.)


# %% tags=["exercise", "nbval-check-output"]
def grouped_positions(length: int) -> torch.Tensor:
    raise NotImplementedError  # your code here


check_exercise_4(grouped_positions, model)

# %% [markdown]
# ## Further reading
#
# - J. Su, Y. Lu, S. Pan, A. Murtadha, B. Wen, Y. Liu: *[RoFormer: Enhanced Transformer with Rotary
#   Position Embedding](https://arxiv.org/abs/2104.09864)* (2021; Neurocomputing 2024). Section 3.4.3 is the decay bound of section 7.
# - Su Jianlin (苏剑林), *Transformer升级之路：2、博采众长的旋转式位置编码* (Transformer upgrade
#   path 2: rotary position embedding, 2021-03-23), [kexue.fm/archives/8265](https://kexue.fm/archives/8265)
#   on his blog 科学空间 (Scientific Spaces): RoPE as first published, with its complex-number
#   derivation, before the RoFormer paper (arXiv, April 2021).
# - EleutherAI blog: *[Rotary Embeddings: A Relative Revolution](https://blog.eleuther.ai/rotary-embeddings/)* (Biderman, Black, et al., 2021),
#   an intuitive derivation and early benchmarks.
# - Meta LLaMA reference code, [`llama/model.py`](https://github.com/meta-llama/llama/blob/main/llama/model.py): `precompute_freqs_cis` and `apply_rotary_emb`
#   (interleaved layout, complex numbers).
# - Hugging Face transformers, [`models/llama/modeling_llama.py`](https://github.com/huggingface/transformers/blob/main/src/transformers/models/llama/modeling_llama.py): `LlamaRotaryEmbedding`,
#   `rotate_half`, `apply_rotary_pos_emb` (half-split layout, float32 tables), and
#   [`convert_llama_weights_to_hf.py`](https://github.com/huggingface/transformers/blob/main/src/transformers/models/llama/convert_llama_weights_to_hf.py) (the q/k permutation of section 6).
# - This library: `posenc_lib/rotary/rope.py` (`RotaryPE`, `apply_rope`, `rope_cos_sin`,
#   `convert_qk_weight`) and `posenc_lib/rotary/scaling.py` (used in
#   [06 · Length extrapolation](06_length_extrapolation.ipynb)).
# - `docs/replication.md`: the headline results of the papers this course teaches, beside the
#   numbers its notebooks measure at toy scale, whether they agree, and why not where they do not.

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ## Solutions
# One cell per exercise: each redefines the answer and runs its checker (so the notebook
# proves that every solution passes). Try the exercise first.

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
# Exercise 1. Each pair holds half of |x|^2 and contributes half the cosine
# of its own turn: the fast pair cos(2) < 0, the slow pair cos(0.02) ~ 1.
predicted_score = 0.5 * math.cos(5 * 0.4) + 0.5 * math.cos(5 * 0.004)
check_exercise_1(predicted_score, score_5)

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
# Exercise 2. The score depends on m - n only (section 1): the shift keeps
# every offset; the forgotten offset changes the new query's offset to every
# cached key (the key 3 back sits at -28). (a) 100 was never seen either;
# (c) cached keys are stored rotated; (d) 100 rad is not whole turns.
answer_2 = "b"
check_exercise_2(answer_2)


# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
# Exercise 3
def interleaved_to_half(weight: torch.Tensor, n_heads: int) -> torch.Tensor:
    head_dim = weight.shape[0] // n_heads
    per_head = weight.reshape(n_heads, head_dim, weight.shape[1])
    # the even coordinates of each head first, then the odd ones
    evens, odds = torch.arange(0, head_dim, 2), torch.arange(1, head_dim, 2)
    return per_head[:, torch.cat([evens, odds])].reshape(weight.shape)


check_exercise_3(interleaved_to_half)


# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
# Exercise 4. The nearest 28 keys keep their true distances 0-27; the
# others share the ids of distances 28-31, in order (4 groups).
def grouped_positions(length: int) -> torch.Tensor:
    near = min(length, 28)
    far = length - near
    far_ids = torch.arange(far) * 4 // max(far, 1)  # 0..3, non-decreasing
    return torch.cat([far_ids, 4 + torch.arange(near)])[None]


check_exercise_4(grouped_positions, model)

# %% [markdown]
# ## End of notebook 03
# <!-- Keep this cell last. "Run All" ends on the last cell, and JupyterLab unfolds the section that
#      holds it: outside "Solutions", this heading leaves the solutions folded. -->

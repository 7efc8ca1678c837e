# %% [markdown]
# # 01 · Sinusoidal encoding
#
# **The question.** Notebook 00 showed that attention needs to be told where each token
# stands. What vector should position $p = 0, 1, 2, \dots$ get, to be added to the token
# embedding? Before naming any design, what we would want of it:
# - **bounded**, so that position 5000 does not swamp the token's meaning;
# - **different for every position**, and defined for every position, however long the input;
# - **smooth**: neighbouring positions get nearby vectors;
# - **the same step wherever you stand**: moving $k$ positions forward should look the same
#   at the start of a sentence and at its end.
#
# The original Transformer (Vaswani et al., 2017) answers with a fixed vector of sines and
# cosines; this notebook derives it from those wishes and checks each one.
#
# **What you will learn**
# - compute the table from its formula (frequencies in log space, angles in float64), in both
#   layouts found in real code: interleaved and concatenated;
# - read the frequencies the right way round: small index = high frequency, large index = low
#   frequency (the source article, the Chinese tutorial
#   《Transformer位置编码原理与实现：从正弦编码到RoPE》, names them the other way round: erratum E1);
# - what the dot product of two encodings measures, and how it falls with distance;
# - build the matrix $M_k$ with $PE(p+k) = M_k\,PE(p)$ for every $p$, and check it numerically;
# - why the table is a non-persistent buffer and not a parameter, and what happens past `max_len`.
#
# **Prerequisites:** [00 · Permutation blindness](00_permutation_blindness.ipynb) (why attention
# needs position information at all).
#
# **Run time:** about 20 s on a laptop CPU (measured with `make execute`, one thread).

# %%
import io
import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from torch import nn

from posenc_course.exercises.nb01 import (
    check_exercise_1,
    check_exercise_2,
    check_exercise_3,
)
from posenc_course.explorers import sinusoidal_explorer, sinusoidal_values
from posenc_course.plotting import heatmap, line_plot
from posenc_course.report import checked
from posenc_course.training import setup_notebook
from posenc_lib import TinyTransformer
from posenc_lib.embeddings.sinusoidal import (
    SinusoidalPE,
    shift_matrix,
    sinusoidal_frequencies,
    sinusoidal_layout_permutation,
    sinusoidal_table,
)
from posenc_lib.scheme import PositionScheme

gen = setup_notebook(0)  # threads, figure style, seeds, print options

# %% [markdown]
# ## 1 · The formula, built step by step
#
# **Where the design comes from.** The simplest signal is the integer $p$ itself, but it grows
# without bound: position 5000 would swamp every token embedding. Write $p$ in binary instead:
# every bit stays in $\{0, 1\}$, and bit $k$ flips every $2^k$ positions, so the low bits flicker
# and the high bits drift: a ladder of periods $2, 4, 8, \dots$. Bits jump, though, and
# neighbouring positions can differ in many of them ($7 = 0111$, $8 = 1000$). Replace each bit by
# a smooth wave of the same period and the coordinates become continuous and bounded while
# keeping the ladder. The figure shows both for positions 0 to 63, and the check below confirms
# that each wave is positive exactly where its bit is 1.

# %% tags=["nbval-check-output"]
n_bits, n_pos = 6, 64
p_int = torch.arange(n_pos)
# (64, 6): bit k of p
bits = (p_int[:, None] >> torch.arange(n_bits)) & 1
# wave k has period 2^(k+1), like bit k
waves = -torch.sin(math.pi * (p_int[:, None] + 0.5)
                   / 2.0 ** torch.arange(n_bits))
# the wave's sign is the bit
assert torch.equal(bits.bool(), waves > 0)
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(7.5, 3.2))
heatmap(ax1, bits.numpy(), "Binary counter: bit k of p",
        "bit k (period 2^(k+1))", "position p", colorbar_label="bit value")
heatmap(ax2, waves.numpy(), "The same periods as smooth waves",
        "wave k (period 2^(k+1))", "position p",
        colorbar_label="wave value", center=True)
plt.show()

# %% [markdown]
# The sinusoidal encoding is this idea with three changes: each wavelength gets a *pair*
# (a sine and a cosine, which makes a shift by $k$ positions a rotation, section 6); the
# wavelengths grow by the factor $10000^{2/d}$ from one pair to the next instead of 2, so $d/2$
# pairs span wavelengths from $2\pi$ to almost $10000 \cdot 2\pi$; and the values are real
# numbers, so nearby positions get nearby vectors.
#
# **Question:** what vector should position $p$ get? Vaswani et al. use $d/2$ pairs of
# coordinates. Pair $i$ is a point on the unit circle that turns by $\theta_i$ radians per position
# (the same letter as in RoPE, [03 · RoPE](03_rope.ipynb), which uses these very frequencies):
#
# $$PE_{p,\,2i} = \sin(p\,\theta_i), \qquad PE_{p,\,2i+1} = \cos(p\,\theta_i),$$
#
# $$\theta_i = 10000^{-2i/d}, \qquad i = 0, \dots, d/2 - 1 .$$
#
# Positions count from 0, and the sine and cosine of one pair share one frequency. (The source
# article's §3.1 gives the range as 「i=0,1,...,d_model-1」; with columns $2i$ and $2i+1$ it
# stops at $d/2 - 1$, as the article's own code, `arange(0, d_model, 2)`, has it.) The
# frequencies form a geometric sequence from $\theta_0 = 1$ down to $10000^{-(d-2)/d}$. Code
# usually computes them in log space, $\theta_i = \exp\!\big(-\tfrac{2i}{d}\ln 10000\big)$: one
# `exp` of an evenly spaced ramp.

# %% tags=["nbval-check-output"]
d_model, max_len = 64, 128

# 0, 2, 4, ..., d-2
two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
# (d/2,) radians per position
theta = torch.exp(-(two_i / d_model) * math.log(10000.0))
# 0, 1, ..., max_len-1
positions = torch.arange(max_len, dtype=torch.float64)
# (max_len, d/2): p * theta_i
angles = positions[:, None] * theta[None, :]

pe = torch.empty(max_len, d_model, dtype=torch.float64)
pe[:, 0::2] = angles.sin()   # even columns 2i: sines
pe[:, 1::2] = angles.cos()   # odd columns 2i+1: cosines
print("table shape:", tuple(pe.shape))
print("first three positions, first six columns:\n", pe[:3, :6])

# %% [markdown]
# **Check.** Log space and the direct power give the same frequencies; our table equals the
# library's `sinusoidal_table` exactly; position 0 is $[0, 1, 0, 1, \dots]$ because
# $\sin 0 = 0$ and $\cos 0 = 1$.

# %% tags=["nbval-check-output"]
library = sinusoidal_table(max_len, d_model, dtype=torch.float64)
assert torch.equal(theta, sinusoidal_frequencies(d_model))
assert torch.equal(pe, library)
print("inline table == sinusoidal_table(128, 64): exact")

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
torch.testing.assert_close(theta, 10000.0 ** (-two_i / d_model), rtol=1e-14, atol=0)
assert torch.equal(pe[0], torch.tensor([0.0, 1.0] * (d_model // 2), dtype=torch.float64))
# The default float32 table is this float64 table, rounded at the very end.
assert torch.equal(sinusoidal_table(max_len, d_model), pe.float())
checked("log-space and direct frequencies agree; PE(0) = [0, 1, 0, 1, ...]; "
        "the float32 table is the float64 one, rounded once")

# %% [markdown]
# **Takeaway:**
# - the table is a few lines of vectorised code: angles $p\,\theta_i$, sines in the even
#   columns, cosines in the odd ones;
# - compute the angles in float64 (or at least never in float16/bfloat16) and cast at the end
#   (the deep dive below measures why); notebook 03 meets the same issue in RoPE.

# %% [markdown] jp-MarkdownHeadingCollapsed=true tags=["deep-dive"]
# ### Deep dive (optional) · Why the angles are computed in float64
#
# The angle $p\,\theta_i$ grows with the position. In float32 the
# frequency and the product are each rounded to about 7 significant digits (relative error up to
# $6\cdot10^{-8}$ each), so at position $10^5$ the angle, and with it the sine, is off by the order
# of $10^{-3}$. The library computes the angles in float64 and rounds only the final values. Let us
# measure both against the exact (float64) values at positions from 10 to $10^6$.

# %% tags=["deep-dive", "nbval-check-output"]
marks = torch.tensor([1e3, 1e5, 1e6], dtype=torch.float64)
probe = torch.unique(torch.cat([torch.logspace(1, 6, 60, dtype=torch.float64).round(), marks]))  # 10 .. 1e6
# float64 reference
exact = (probe[:, None] * theta).sin()
# angles in float32
angles32 = probe.float()[:, None] * theta.float()[None, :]
err_float32_angles = (angles32.sin().double() - exact).abs().max(dim=1).values
# what the library does
err_float64_angles = (exact.float().double() - exact).abs().max(dim=1).values

fig, ax = plt.subplots(figsize=(6.4, 3.6))
line_plot(ax, probe.numpy(), {"angles in float32": err_float32_angles.numpy(),
                              "angles in float64, value cast to float32 (library)": err_float64_angles.numpy()},
          title="Error of the sine columns vs position (d_model = 64)", xlabel="position p",
          ylabel="max |error| over the sine columns", logx=True, logy=True, markers=True)
plt.show()

at = {int(p): int((probe == p).nonzero()) for p in marks}
for p, j in at.items():
    print(f"position {p:>9,}: float32 angles {err_float32_angles[j]:.1e}, float64 angles {err_float64_angles[j]:.1e}")
# at most half a float32 step: only the final rounding
assert err_float64_angles.max() <= 2**-25
# float32 angles: wrong in the third decimal at 1e5
assert err_float32_angles[at[100_000]] > 1e-3

# %% [markdown]
# ## 2 · The picture: a striped table
#
# **Question:** what does the table look like? Each column is one sine or cosine; its stripes
# are as wide as half its wavelength.

# %% tags=["nbval-check-output"]
fig, ax = plt.subplots(figsize=(7.0, 4.2))
heatmap(ax, pe.numpy(), title="Sinusoidal table (d_model = 64, interleaved)",
        xlabel="dimension j (column 2i = sin, 2i+1 = cos)", ylabel="position p",
        colorbar_label="PE[p, j]", center=True)
plt.show()

# %% [markdown]
# The columns on the left flicker from row to row, those on the right barely change. We can
# measure that: from one position to the next, pair $i$ moves along its circle by a chord of
# length $2\sin(\theta_i/2)$, the same for every $p$, and shrinking as $i$ grows.

# %% tags=["nbval-check-output"]
# (positions, pairs, [sin, cos])
pairs = pe.view(max_len, d_model // 2, 2)
# (positions-1, pairs)
step = (pairs[1:] - pairs[:-1]).norm(dim=-1)
chord = 2 * torch.sin(theta / 2)  # the formula, per pair
torch.testing.assert_close(step, chord.expand_as(step))
assert torch.all(step[0, 1:] < step[0, :-1])  # smaller for larger i
print(f"distance moved per position: pair 0 {step[0, 0]:.4f}, "
      f"pair 15 {step[0, 15]:.4f}, pair 31 {step[0, 31]:.6f}")

# %% [markdown]
# ## 3 · A few dimensions as curves

# %% tags=["nbval-check-output"]
fig, ax = plt.subplots(figsize=(7.0, 3.8))
pos = positions.numpy()
columns = {f"dim {2 * i} (pair i = {i})": pe[:, 2 * i].numpy()
           for i in (0, 4, 12, 24)}
line_plot(ax, pos, columns, title="Sine columns of the table",
          xlabel="position p", ylabel="PE[p, 2i] = sin(p theta_i)")
ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
plt.show()

# %% [markdown]
# Pair 0 repeats every $2\pi \approx 6.3$ positions (sampled at whole positions it looks jagged);
# pair 24 has barely started its first turn after 128 positions.

# %% [markdown]
# ## 4 · Wavelengths, and which dimensions are "high frequency"
#
# **Question:** how far must you move before pair $i$ repeats? Its wavelength is
#
# $$\lambda_i = \frac{2\pi}{\theta_i} = 2\pi \cdot 10000^{2i/d},$$
#
# a geometric progression from $\lambda_0 = 2\pi$ up to $2\pi \cdot 10000^{(d-2)/d}$, which tends
# to $10000 \cdot 2\pi$ as $d$ grows.
#
# **Erratum E1.** The source article (§3.1) writes
# 「对于非常长的序列（接近或超过max_len），虽然可以计算，但高频维度（i较大的维度）的波长会非常长，可能导致位置信息区分度下降。」
# ("for very long sequences (close to or beyond max_len), the encoding can still be computed,
# but the wavelengths of the high-frequency dimensions (those with larger i) become very long,
# which may make positions harder to tell apart"). The wavelengths are right; the name is backwards: **small $i$ = high
# frequency** (short wavelength, the value changes every position), **large $i$ = low frequency**
# (long wavelength, the value drifts slowly). We check it
# two ways: from the formula, and by *counting* how often each sine column changes sign in the
# first 4096 positions. A sine of wavelength $\lambda$ changes sign about $2N/\lambda$ times in $N$
# positions. Exactly: $\sin(p\,\theta_i)$ is zero at $p = k\pi/\theta_i$, $k = 1, 2, \dots$, and
# $\lfloor (N-1)\,\theta_i/\pi \rfloor$ of these lie in $(0, N-1]$. Neighbouring zeros are
# $\pi/\theta_i \ge \pi > 1$ apart (as $\theta_i \le 1$), so each one sits alone between two
# integers and gives exactly one sign change (none falls on an integer, which the count
# below confirms). So the count is $\lfloor (N-1)\,\theta_i/\pi \rfloor$.

# %% tags=["nbval-check-output"]
wavelength = 2 * math.pi / theta  # (d/2,) in positions
longest = {d: float(1 / sinusoidal_frequencies(d)[-1])  # in units of 2 pi
           for d in (64, 512, 4096)}
for d, turns in longest.items():
    print(f"d_model = {d:4d}: longest wavelength = {turns:7.1f} x 2 pi")

n_count = 4096
table = sinusoidal_table(n_count, d_model, dtype=torch.float64)
sines = table[1:, 0::2]  # positions 1..N-1 (sin 0 = 0)
flips = torch.sign(sines[1:]) != torch.sign(sines[:-1])
sign_changes = flips.sum(dim=0)  # per pair
print(f"sign changes in {n_count} positions: pair 0 -> {sign_changes[0]}, "
      f"pair 8 -> {sign_changes[8]}, pair 16 -> {sign_changes[16]}, "
      f"pair 31 -> {sign_changes[31]}")

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
assert torch.all(wavelength[1:] > wavelength[:-1])  # grows with i
assert math.isclose(wavelength[0], 2 * math.pi)
assert math.isclose(wavelength[-1], 2 * math.pi * 10000 ** ((d_model - 2) / d_model), rel_tol=1e-12)
assert longest[64] < longest[512] < longest[4096] < 10000  # approaches 10000 x 2 pi from below
predicted = torch.floor((n_count - 1) * theta / math.pi).long()
assert torch.equal(sign_changes, predicted)
assert sign_changes[0] == 1303 and torch.all(sign_changes[25:] == 0)  # pairs 25..31: none
checked("wavelengths grow from 2 pi with i; sign changes counted = "
        "floor((N-1) theta_i / pi) for every pair")

# %% tags=["nbval-check-output"]
i_idx = np.arange(d_model // 2)
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(7.5, 3.4))
line_plot(ax1, i_idx, {"wavelength 2 pi / theta_i": wavelength.numpy()},
          title="Wavelength per pair",
          xlabel="pair index i (dimensions 2i, 2i+1)",
          ylabel="wavelength (positions)", logy=True, markers=True)
ax1.get_legend().remove()
for y, text, x, ha in ((2 * math.pi, "2 pi", d_model // 2 - 1, "right"),
                       (10000 * 2 * math.pi, "10000 x 2 pi", 0, "left")):
    ax1.axhline(y, color="gray", linestyle=":", linewidth=1)
    ax1.text(x, y * (1.3 if ha == "right" else 0.55), text, ha=ha, fontsize=10)
ax1.annotate("HIGH frequency\n(short wavelength)", xy=(0, wavelength[0]),
             xytext=(3, 3e2),
             arrowprops={"arrowstyle": "->"}, fontsize=10)
ax1.annotate("LOW frequency\n(long wavelength)", xy=(31, wavelength[-1]),
             xytext=(14, 2.5e3),
             arrowprops={"arrowstyle": "->"}, fontsize=10, ha="right")
counts = {"counted in the table": sign_changes.numpy(),
          "about 2N / wavelength": 2 * n_count / wavelength.numpy()}
line_plot(ax2, i_idx, counts,
          title=f"Sine sign changes in {n_count} positions",
          xlabel="pair index i",
          ylabel="sign changes (symlog scale)", markers=True)
ax2.set_yscale("symlog", linthresh=1)
plt.show()

# %% [markdown]
# The right panel is measured on the table itself: pair 0 changes sign 1303 times in 4096
# positions, while pairs 25 to 31 never change sign at all (half their wavelength is longer than
# 4096 positions).
#
# **Takeaway:**
# - the wavelengths are spaced evenly on a log scale over four decades, from $2\pi$ to almost
#   $10000\cdot2\pi$;
# - the first pairs (high frequency) tell neighbouring positions apart;
# - the last pairs (low frequency) separate positions thousands of steps apart and are nearly
#   constant over a short sentence.

# %% [markdown]
# ## 5 · How similar are two positions?
#
# **Question:** what does the dot product of two encodings measure? Within each pair,
# $\sin a \sin b + \cos a \cos b = \cos(a - b)$, so
#
# $$PE(p) \cdot PE(q) = \sum_{i=0}^{d/2-1} \cos\big((p - q)\,\theta_i\big).$$
#
# It depends only on the offset $p - q$, not on where the two positions are, and not on the sign
# of the offset. Every encoding has the same norm, $\|PE(p)\|^2 = d/2$, so dividing by $d/2$ gives
# the cosine similarity.

# %% tags=["nbval-check-output"]
long_len = 20001
long_table = sinusoidal_table(long_len, d_model, dtype=torch.float64)
sim = pe @ pe.T / (d_model / 2)  # (128, 128) cosine similarities
offsets = positions[:, None] - positions[None, :]
by_formula = torch.cos(offsets[..., None] * theta).mean(dim=-1)
torch.testing.assert_close(sim, by_formula)

sim_k = (long_table @ long_table[0] / (d_model / 2)).numpy()  # k = 0..20000
first_rise = int(np.argmax(np.diff(sim_k) > 0))
print(f"similarity at k = 1: {sim_k[1]:.3f}; k = 10: {sim_k[10]:.3f}; "
      f"k = 100: {sim_k[100]:.3f}; k = 1000: {sim_k[1000]:.3f}")
print(f"not monotone: the similarity first rises again from k = {first_rise}"
      f" to k = {first_rise + 1}")

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
norms = long_table.norm(dim=1) ** 2
torch.testing.assert_close(norms, torch.full((long_len,), d_model / 2, dtype=torch.float64))
assert torch.allclose(sim[1:, 1:], sim[:-1, :-1], atol=1e-12)  # constant along diagonals
p0 = 64  # PE(p0+k) vs PE(p0-k), k = 1..63
assert torch.allclose(sim[p0, p0 + 1 :], sim[p0, 1:p0].flip(0), atol=1e-12)
assert sim_k[0] == 1.0 and sim_k[1:].max() < 1.0  # the peak is at k = 0 only
checked("every |PE(p)|^2 = d/2; the similarity is constant along diagonals, "
        "symmetric in the offset, and peaks at k = 0 only")

# %% tags=["nbval-check-output"]
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(7.5, 3.4))
heatmap(ax1, sim.numpy(), title="Cosine similarity of positions",
        xlabel="position q", ylabel="position p",
        colorbar_label="cos(PE(p), PE(q))")
line_plot(ax2, np.arange(1, long_len), {"cos(PE(0), PE(k))": sim_k[1:]},
          title="Similarity vs distance",
          xlabel="distance k (positions, log scale)",
          ylabel="cosine similarity", logx=True)
decades = [(1, 10), (10, 100), (100, 1000), (1000, 10000), (10000, 20000)]
decade_mean = [float(sim_k[a:b].mean()) for a, b in decades]
ax2.step([a for a, _ in decades] + [20000], decade_mean + decade_mean[-1:],
         where="post", color="black", linestyle="--",
         label="mean over each decade")
ax2.legend()
plt.show()

display(pd.DataFrame({
    "distances k": [f"{a} .. {b - 1}" for a, b in decades],
    "mean similarity": [f"{m:.3f}" for m in decade_mean],
    "max similarity": [f"{sim_k[a:b].max():.3f}" for a, b in decades]}))

# %% [markdown]
# **Check what we claim.** The similarity map is symmetric and constant along its diagonals
# (asserted above). It falls with distance *on average*, not monotonically: it ripples, as any sum
# of cosines does. Because the wavelengths span four decades evenly, each tenfold increase in
# distance decorrelates about a quarter of the pairs, and the decade means drop by about 0.25
# each. From the decade 1000-10000 on, the mean is close to zero and the similarity only
# fluctuates (peaks of 0.3-0.4 remain): it no longer tells how far apart two positions are.

# %% tags=["nbval-check-output"]
drops = np.diff(decade_mean[:4])
assert np.all(drops < 0) and np.all(np.abs(drops + 0.25) < 0.05)
assert abs(decade_mean[3]) < 0.05 and abs(decade_mean[4]) < 0.1
assert 0.3 < sim_k[1000:].max() < 0.45
print("decade-to-decade drops:", ", ".join(f"{d:.3f}" for d in drops))

# %% [markdown]
# ### Explorer · Move the position and the base
#
# **Question:** what do the position $p$ and the base (10000 in the paper) do to the encoding, to
# the similarity of $p$ with other positions, and to the wavelengths?
#
# The explorer draws, for one $p$ and one base ($d = 64$): the encoding $PE(p)$ as its sines and
# cosines, pair by pair; its cosine similarity with each of the first 64 positions; and every
# pair's wavelength, with a line at 64, the positions the middle panel shows. In JupyterLab it
# has two sliders and redraws with the library's `sinusoidal_table` at every move; in the
# executed notebook, and on paper, it shows its default setting ($p = 10$, base 10000).
#
# **What to try.**
# - Move $p$. In the top panel the fast pairs (small $i$) jump around while the slow ones barely
#   move; in the middle panel the peak follows $p$ and keeps its shape, because the similarity
#   depends on the distance only (section 5).
# - Lower the base to 100, then raise it to $10^6$. Pair 0's wavelength is $2\pi$ for every
#   base ($\theta_0 = 1$); the others grow with the base, pair $i$ as $\text{base}^{2i/d}$, so
#   the curve in the right panel pivots about its first point, steeper for a larger base. The
#   number of pairs that complete a turn within the 64 positions changes, and with it how
#   fast the similarity falls.
#
# **What to look for.** The pairs under the line at 64 are the ones that tell positions in the
# window apart; the pairs far above it are nearly constant there. A small base spends more pairs
# on short distances and makes the similarity drop (and go negative) within the window; a large one
# keeps distant positions similar. The check below measures both.

# %% tags=["nbval-check-output"]
sinusoidal_explorer()

# %% tags=["nbval-check-output"]
bases = (100.0, 10000.0, 1e6)
explored = {base: sinusoidal_values(10, base) for base in bases}
rows = []
for base, v in explored.items():
    rows.append({"base": f"{base:,.0f}",
                 "pairs turning within 64": int((v["wavelength"] <= 64).sum()),
                 "similarity at distance 30": f"{v['similarity'][40]:.2f}",
                 "lowest in the window": f"{v['similarity'].min():.2f}",
                 "pair 0 wavelength": f"{v['wavelength'][0]:.4f}"})
pd.DataFrame(rows).set_index("base")

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
# The shape around the peak does not depend on p: positions 10 and 30, at distances -10 .. 10.
assert np.allclose(sinusoidal_values(10, 10000.0)["similarity"][0:21],
                   sinusoidal_values(30, 10000.0)["similarity"][20:41], atol=1e-12)
turning = {base: int((v["wavelength"] <= 64).sum()) for base, v in explored.items()}
at_30 = {base: float(v["similarity"][40]) for base, v in explored.items()}  # p = 10, q = 40
assert turning[100.0] > turning[10000.0] > turning[1e6] and at_30[100.0] < at_30[10000.0] < at_30[1e6]
assert explored[100.0]["similarity"].min() < 0 < explored[10000.0]["similarity"].min()
assert all(math.isclose(v["wavelength"][0], 2 * math.pi) for v in explored.values())
checked("the peak keeps its shape as p moves; a larger base: fewer pairs "
        "turning, higher similarity at distance 30; pair 0 stays at 2 pi")


# %% [markdown]
# With base 100, 17 of the 32 pairs turn within the window, the similarity at distance 30 is down
# to 0.14 and somewhere in the window it is negative; with $10^6$, only 6 pairs turn and the
# similarity at distance 30 is still 0.75. The base trades resolution at short range for reach:
# the open-ended experiment at the end of this notebook pursues it.
#
# ## 6 · The key property: shifting is a fixed linear map
#
# **Question:** is there one matrix $M_k$ with $PE(p+k) = M_k\,PE(p)$ for *every* $p$? The angle
# addition formulas say yes, pair by pair:
#
# $$\begin{pmatrix}\sin((p+k)\theta)\\ \cos((p+k)\theta)\end{pmatrix}
# = \begin{pmatrix}\cos k\theta & \sin k\theta\\ -\sin k\theta & \cos k\theta\end{pmatrix}
# \begin{pmatrix}\sin p\theta\\ \cos p\theta\end{pmatrix}.$$
#
# The $2\times2$ matrix is a rotation by $k\theta$ (clockwise, because the pair lists the sine
# first; 03 meets it as $R_k^\top$) and contains $k$ but not $p$. Stack one block per
# pair on the diagonal and you have $M_k$. This is the reason Vaswani et al. give (§3.5), as a
# hypothesis: they chose sinusoids "because we hypothesized it would allow the model to easily
# learn to attend by relative positions, since for any fixed offset $k$, $PE_{pos+k}$ can be
# represented as a linear function of $PE_{pos}$". (Their other reason, that sinusoids "may
# allow the model to extrapolate", is tested in notebook 06.)

# %% tags=["nbval-check-output"]
def rotation_block(angle: float) -> torch.Tensor:
    """The 2x2 matrix mapping (sin a, cos a) to (sin(a+angle), cos(a+angle))."""
    c, s = math.cos(angle), math.sin(angle)
    return torch.tensor([[c, s], [-s, c]], dtype=torch.float64)


def build_shift(k: int) -> torch.Tensor:
    """M_k for d_model = 64: one rotation block per pair, on the diagonal."""
    return torch.block_diag(*[rotation_block(k * t) for t in theta.tolist()])


for k in (1, 2, 5, 17, 50, -3, -40):
    m_k = build_shift(k)
    # every p with p and p + k in the table
    p = torch.arange(max(0, -k), max_len - max(0, k))
    # Rows of the table are PE(p)^T: PE(p+k) = M_k PE(p) reads
    # table[p + k] = table[p] @ M_k^T.
    torch.testing.assert_close(pe[p + k], pe[p] @ m_k.T, rtol=0, atol=1e-12)
    torch.testing.assert_close(m_k, shift_matrix(k, d_model),
                               rtol=0, atol=1e-15)
    print(f"k = {k:+3d}: PE(p+k) = M_k PE(p) for all {len(p)} positions p "
          "(max error < 1e-12); M_k == shift_matrix")

# %% [markdown]
# $M_k$ is a rotation, so it preserves lengths, undoing a shift is the transpose, and two
# shifts compose into one:

# %% tags=["nbval-check-output"]
m5, m7 = shift_matrix(5, d_model), shift_matrix(7, d_model)
eye = torch.eye(d_model, dtype=torch.float64)
torch.testing.assert_close(m5 @ m5.T, eye)                          # orthogonal
# M_{-k} = M_k^T
torch.testing.assert_close(shift_matrix(-5, d_model), m5.T)
# M_5 M_7 = M_12
torch.testing.assert_close(m5 @ m7, shift_matrix(12, d_model))
print("M_k is orthogonal, M_-k = M_k^T, M_5 M_7 = M_12")

# %% tags=["nbval-check-output"]
m_small = shift_matrix(5, 16)
off_block = m_small.clone()
for i in range(0, 16, 2):
    off_block[i : i + 2, i : i + 2] = 0
# nothing outside the 2x2 blocks
assert torch.count_nonzero(off_block) == 0
fig, ax = plt.subplots(figsize=(4.8, 4.0))
heatmap(ax, m_small.numpy(), title="Shift matrix M_5 (d_model = 16)",
        xlabel="input dimension",
        ylabel="output dimension", colorbar_label="entry", center=True)
ax.set_xticks(range(0, 16, 2))
ax.set_yticks(range(0, 16, 2))
plt.show()

# %% [markdown]
# **Takeaway:**
# - "$k$ positions later" is one fixed rotation of the encoding, the same at the start and at
#   the end of a sequence;
# - so a linear layer can in principle turn "the token at $p$" into a query for "the token at
#   $p+k$" with one weight matrix for all $p$;
# - in a Transformer the encoding is added to the token embedding, so queries and keys mix
#   content and position; RoPE (notebook 03) applies the rotation to queries and keys directly.

# %% [markdown]
# ## 7 · Two layouts: interleaved and concatenated
#
# **Question:** the paper interleaves sines and cosines, $[\sin_0, \cos_0, \sin_1, \cos_1, \dots]$,
# but Hugging Face's Marian writes $[\sin_0, \sin_1, \dots \mid \cos_0, \cos_1, \dots]$. Is that
# a different encoding? No: the same numbers with the columns in another order. The library's
# tests check both layouts against Hugging Face `transformers`: the interleaved table against
# DistilBERT's `create_sinusoidal_embeddings`, the concatenated one against Marian's
# `MarianSinusoidalPositionalEmbedding` (`tests/lib/test_sinusoidal.py`).
#
# Not every concatenated table is a permutation. tensor2tensor (`get_timing_signal_1d`), the
# code the paper itself released (its conclusion links it), and fairseq
# (`SinusoidalPositionalEmbedding`) space their $h = d/2$ frequencies as
# $10000^{-i/(h-1)}$, not $10000^{-i/h}$, so the slowest pair is exactly $1/10000$; fairseq's
# docstring says it "differs slightly from the description in Section 3.5", and fairseq
# numbers positions from `padding_idx + 1`, not 0. Those are other numbers: a checkpoint of
# theirs needs their table, not ours permuted.

# %% tags=["nbval-check-output"]
concat = sinusoidal_table(max_len, d_model, layout="half",
                          dtype=torch.float64)
perm = sinusoidal_layout_permutation(d_model)
print("perm[:6] =", perm[:6].tolist(),
      "... perm[32:38] =", perm[32:38].tolist())
# concat = interleaved with columns permuted
assert torch.equal(concat, pe[:, perm])
assert torch.equal(pe, concat[:, torch.argsort(perm)])      # and back
# same dot products: section 5 holds for both
torch.testing.assert_close(concat @ concat.T, pe @ pe.T)
# the same shift map, permuted
m5_concat = shift_matrix(5, d_model, layout="half")
torch.testing.assert_close(m5_concat, m5[perm][:, perm])

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(7.5, 3.3))
heatmap(ax1, pe.numpy(), title='layout="interleaved"',
        xlabel="dimension j", ylabel="position p", center=True)
heatmap(ax2, concat.numpy(), title='layout="half" = interleaved[:, perm]',
        xlabel="dimension j",
        ylabel="position p", center=True)
plt.show()

# %% [markdown]
# For a model trained from scratch the layout does not matter: a permutation of the input columns
# is absorbed by the weight matrices that read the residual stream (their columns permuted the
# same way). It matters as soon as weights are
# *loaded*: a checkpoint trained with one layout expects its columns in that order.

# %% tags=["nbval-check-output"]
# any linear layer reading the encoding
w = torch.randn(8, d_model, dtype=torch.float64)
torch.testing.assert_close(concat @ w.T, pe @ w[:, torch.argsort(perm)].T)
# same weights, other layout: different outputs
assert not torch.allclose(concat @ w.T, pe @ w.T)
print("a layer with weights W on the concat layout == the same layer with "
      "W[:, argsort(perm)] on interleaved")

# %% [markdown]
# ## 8 · Buffer, not parameter
#
# **Question:** the table is fixed, so how should a module hold it? `SinusoidalPE` registers it as
# a **non-persistent buffer**. Three consequences, each checked below:
# 1. it is not a parameter: not counted, not given to the optimizer, never updated;
# 2. it is not in `state_dict`: checkpoints stay small and do not depend on `max_len`;
# 3. it follows the module in `.to(dtype)` and `.to(device)`.

# %% tags=["nbval-check-output"]
torch.manual_seed(0)
model = TinyTransformer(vocab_size=20, n_outputs=2, d_model=d_model,
                        n_heads=4, n_layers=1,
                        scheme=SinusoidalPE(d_model, max_len=max_len))
table = model.scheme.table
print("buffers:", [name for name, _ in model.named_buffers()])
print("state_dict keys containing 'table':",
      [k for k in model.state_dict() if "table" in k])
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
in_optimizer = any(p is table for group in optimizer.param_groups
                   for p in group["params"])
print("table given to the optimizer:", in_optimizer)

tokens = torch.randint(0, 20, (16, 32))
labels = torch.randint(0, 2, (16,))
before = table.clone()
nn.functional.cross_entropy(model(tokens), labels).backward()
optimizer.step()
assert not in_optimizer and torch.equal(model.scheme.table, before)
assert not any("table" in k for k in model.state_dict())
print("after one AdamW step the table is unchanged")


# %% [markdown]
# What if we had made it an `nn.Parameter` instead? Then it counts as $128 \times 64 = 8192$
# trainable numbers, the optimizer moves it (even rows that no input used, through weight decay),
# and it is no longer the sinusoidal table after the first step:

# %% tags=["nbval-check-output"]
class ParameterSinusoidal(PositionScheme):
    """The wrong way: the fixed table as a trainable parameter."""

    kind = "embedding"

    def __init__(self, d_model: int, max_len: int):
        super().__init__()
        self.table = nn.Parameter(sinusoidal_table(max_len, d_model))

    def add_to_embeddings(self, x, positions):
        return x + self.table[positions]


torch.manual_seed(0)
wrong = TinyTransformer(vocab_size=20, n_outputs=2, d_model=d_model,
                        n_heads=4, n_layers=1,
                        scheme=ParameterSinusoidal(d_model, max_len))
extra = wrong.num_parameters() - model.num_parameters()
wrong_opt = torch.optim.AdamW(wrong.parameters(), lr=1e-2, weight_decay=0.1)
nn.functional.cross_entropy(wrong(tokens), labels).backward()
wrong_opt.step()
fixed = sinusoidal_table(max_len, d_model)
drift = (wrong.scheme.table.detach() - fixed).abs().max().item()
print(f"extra trainable parameters: {extra}; "
      f"table entries moved by up to {drift:.4f} after one step")
assert extra == max_len * d_model and drift > 1e-3
# Rows of positions the batch never used (32..127) got zero gradient:
# only weight decay moved them,
# shrinking them by exactly the factor 1 - lr * weight_decay = 0.999.
unused = wrong.scheme.table.detach()[tokens.shape[1]:]
decayed = fixed[tokens.shape[1]:] * (1 - 1e-2 * 0.1)
torch.testing.assert_close(unused, decayed)
print("unused rows shrank by weight decay alone: factor 0.999")


# %% [markdown]
# And a *persistent* buffer would be saved in the checkpoint, tying the checkpoint to `max_len`:
# loading it into a model built with a longer table fails. With the non-persistent buffer, the round trip
# through `torch.save` / `torch.load(weights_only=True)` works and reproduces the outputs exactly,
# even into a model built with another `max_len`.

# %% tags=["nbval-check-output"]
class PersistentSinusoidal(SinusoidalPE):
    """Same as SinusoidalPE, but the table is saved in state_dict."""

    def __init__(self, d_model: int, max_len: int):
        super().__init__(d_model, max_len)
        self.register_buffer("table", sinusoidal_table(max_len, d_model),
                             persistent=True)


def build(scheme):
    torch.manual_seed(0)
    return TinyTransformer(vocab_size=20, n_outputs=2, d_model=d_model,
                           n_heads=4, n_layers=1, scheme=scheme)


try:
    saved = build(PersistentSinusoidal(d_model, 128)).state_dict()
    build(PersistentSinusoidal(d_model, 256)).load_state_dict(saved)
    raise AssertionError("expected a size mismatch")
except RuntimeError as err:
    print("persistent buffer:", next(line.strip()
          for line in str(err).splitlines() if "size mismatch" in line))

buffer = io.BytesIO()
torch.save(model.state_dict(), buffer)
buffer.seek(0)
reloaded = build(SinusoidalPE(d_model, max_len=256))
# strict: no missing/unexpected keys
reloaded.load_state_dict(torch.load(buffer, weights_only=True))
model.eval()
assert torch.equal(reloaded(tokens), model(tokens))
print("non-persistent buffer: saved and reloaded into a max_len=256 model, "
      "identical outputs")

# %% [markdown]
# Finally, `.to(...)` moves a buffer along with the parameters. We use the `meta` device (shapes
# without storage) to show a device move without needing a GPU; `.to("cuda")` works the same way.

# %% tags=["nbval-check-output"]
model64 = build(SinusoidalPE(d_model, max_len)).to(torch.float64)
assert model64.scheme.table.dtype == torch.float64
assert model64.scheme(torch.tensor([[3]])).dtype == torch.float64
model_meta = build(SinusoidalPE(d_model, max_len)).to("meta")
assert model_meta.scheme.table.device.type == "meta"
print("after .to(torch.float64):", model64.scheme.table.dtype,
      "| after .to('meta'):", model_meta.scheme.table.device)

# %% [markdown]
# ## 9 · Past `max_len`
#
# **Question:** what happens when a sequence is longer than the table? The formula is defined for
# every position, so the library's choice is: **`SinusoidalPE` extends its table**. When a
# position $\ge$ the current length is asked for, it recomputes the table (float64 angles, cast to
# the buffer's current dtype and device) with at least twice as many rows. `max_len` is only the
# size of the first cache. A learnable table cannot do this; it has no row to give (notebook 02).

# %% tags=["nbval-check-output"]
scheme = SinusoidalPE(d_model, max_len=16)
# positions 0 .. 39, past max_len = 16
out = scheme(torch.arange(40)[None, :])
rows_after_40 = scheme.table.shape[0]
print("table rows before: 16, after:", rows_after_40)
assert torch.equal(out[0], sinusoidal_table(40, d_model))  # the fresh rows
scheme(torch.tensor([[41]]))
print("asking for position 41 next: table rows", scheme.table.shape[0],
      "(doubled, so step-by-step decoding rarely recomputes)")

scheme64 = SinusoidalPE(d_model, max_len=16).to(torch.float64)
scheme64(torch.tensor([[100]]))
print("extension keeps the dtype:", scheme64.table.dtype)

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
assert rows_after_40 == 40 and scheme.table.shape == (80, d_model)
assert scheme64.table.dtype == torch.float64
assert torch.equal(scheme64.table, sinusoidal_table(101, d_model, dtype=torch.float64))
checked("the table grows to 40 rows, then doubles to 80; a float64 scheme "
        "extends in float64, equal to sinusoidal_table(101, 64)")

# %% [markdown]
# Defined is not the same as useful. A model trained on sequences of length $L$ never saw the
# encodings of positions beyond $L$; whether it copes with them is an empirical question, and for
# sinusoidal encodings the answer is mostly no ([06 · Length extrapolation](06_length_extrapolation.ipynb) measures it). What the library does
# refuse are positions that make no sense:

# %% tags=["nbval-check-output"]
for bad in (torch.tensor([[0, -1]]), torch.tensor([[0.0, 1.5]])):
    try:
        scheme(bad)
        raise AssertionError("expected an error")
    except (ValueError, TypeError) as err:
        print(f"{type(err).__name__}: {err}")


# %% [markdown]
# ## Summary
#
# - $PE_{p,2i} = \sin(p\,\theta_i)$, $PE_{p,2i+1} = \cos(p\,\theta_i)$ with $\theta_i = 10000^{-2i/d}$,
#   positions from 0; compute $\theta$ in log space and the angles in float64 (float32 angles are
#   already wrong in the third decimal at position $10^5$).
# - Small $i$ = high frequency (wavelength $2\pi$); large $i$ = low frequency (wavelength up to
#   $10000^{(d-2)/d}\cdot2\pi$, just under $10000\cdot2\pi$). The source article names them the
#   other way round (erratum E1); the sign-change count settles it.
# - $PE(p)\cdot PE(q) = \sum_i \cos((p-q)\theta_i)$: it depends only on the distance, is symmetric,
#   and falls on average by about a quarter per decade of distance until, from about $10^3$ on
#   (for $d = 64$), the plain dot product carries little distance information (learned weights
#   can still weight the slow pairs, which keep changing). Inside attention the score is
#   $PE(p)^\top W_q^\top W_k\,PE(q)$, and learned weights need not keep it a function of $p - q$
#   alone.
# - $PE(p+k) = M_k\,PE(p)$ with $M_k$ block-diagonal rotations, the same for every $p$.
# - The interleaved and concatenated layouts are one column permutation apart; it matters when
#   loading weights.
# - Hold the table in a non-persistent buffer: not trained, not saved, moved by `.to`.
#   `SinusoidalPE` extends itself past `max_len`.

# %% [markdown]
# ### Open-ended experiment · Choosing the base for a context length
#
# **Question.** Vaswani et al. (2017) give the wavelengths, a geometric progression from $2\pi$
# to $10000 \cdot 2\pi$, and the hypothesis that the encoding lets the model attend by relative
# position easily; they give no reason for the base 10000 itself. Section 5 found that with it the similarity stops telling distances apart from about $10^3$ on (for
# $d = 64$). If your inputs were 100 tokens long, or 100,000, which base would you pick, and what
# would you lose?
#
# **A starting setup:**
#
# ```python
# for base in (100.0, 10000.0, 1e6):
#     table = sinusoidal_table(20001, d_model, base=base, dtype=torch.float64)
#     sim_b = (table @ table[0] / (d_model / 2)).numpy()
#     print(base, [round(float(sim_b[a:b].mean()), 3) for a, b in decades])
# ```
#
# **What to look for.** The decade where the mean similarity first reaches about zero, as a
# function of the base (compare it with the longest wavelength, $2\pi \cdot$ base); and the
# price at short range: with a large base, how many pairs are left that change noticeably between
# neighbouring positions? Plotting `sim_b[:200]` for each base shows both.

# %% [markdown]
# ## Exercises
#
# An exercise ends in a code cell that calls its checker. Until you answer, the checker
# prints `[to do]`; a right answer prints `[passed]` and why, a wrong one `[not yet]` and a
# hint. Worked solutions are in the **Solutions** section
# at the end (folded in JupyterLab: the arrow beside its
# heading opens it, and a cell's bar shows its code).
#
# ### Exercise 1 · Predict, then run: which pairs turn within a context?
# A pair *completes a full turn* within `length` positions when its wavelength is at most
# `length`. With $d = 64$ and base 10000, how many of the 32 pairs turn fully within 512
# positions? Use what section 4 showed about the wavelengths, write your prediction into
# `predicted_turns`, and only then run the cell after it. (The same count, for RoPE's
# frequencies and the training length, is what context-extension methods such as YaRN reason
# about; see [06 · Length extrapolation](06_length_extrapolation.ipynb).)

# %%
predicted_turns = ...  # your prediction: a whole number from 0 to 32

# %% tags=["exercise", "nbval-check-output"]
turns_512 = int((2 * math.pi / theta <= 512).sum())  # wavelengths <= 512
check_exercise_1(predicted_turns, turns_512)

# %% [markdown]
# ### Exercise 2 · Explain why: a sine *and* a cosine
# Each frequency $\theta_i$ gets two columns, $\sin p\theta_i$ and $\cos p\theta_i$. Why not a
# sine alone, with twice as many frequencies?
#
# - **(a)** With both, the code of $p + k$ is one fixed linear function of the code of $p$,
#   for every $p$; a sine alone cannot give that.
# - **(b)** With a sine alone, position 0 would get the zero vector, and a model could not tell
#   the first token from a padded slot.
# - **(c)** With a sine alone, two positions far apart could get the same code, because each
#   sine repeats itself after its wavelength.
# - **(d)** A sine is an odd function, $\sin(-x) = -\sin(x)$, so a sine alone could never
#   tell the position $p$ from the position $-p$.

# %% tags=["exercise", "nbval-check-output"]
answer_2 = ...  # "a", "b", "c" or "d"
check_exercise_2(answer_2)

# %% [markdown]
# ### Exercise 3 · Design: frequencies for a short context
# A model will only ever see 64 positions, with $d = 16$ (8 sin/cos pairs). With base 10000
# most pairs are nearly constant over 64 positions (section 4). Design the 8 frequencies
# `my_theta` (radians per position, a tensor of shape `(8,)`; any spacing you like) so that
# - every $\theta_i$ lies strictly between 0 and $\pi$;
# - the slowest pair is used: over the 64 positions it turns between a quarter and a half
#   turn, $\pi/2 \le 63\,\theta_\text{min} < \pi$;
# - any two of the 64 positions get encodings at least 0.5 apart (Euclidean).
#
# The checker builds the table from your frequencies and tests the three properties.

# %% tags=["exercise", "nbval-check-output"]
my_theta = ...  # a tensor of 8 frequencies
check_exercise_3(my_theta)

# %% [markdown]
# ## Further reading
#
# - Vaswani et al., *[Attention Is All You Need](https://arxiv.org/abs/1706.03762)* (2017), section 3.5: the formula and the
#   linear-shift motivation.
# - Su Jianlin (苏剑林), *Transformer升级之路：1、Sinusoidal位置编码追根溯源* (Transformer upgrade
#   path 1: tracing the sinusoidal position encoding to its origin, 2021-03-08),
#   [kexue.fm/archives/8231](https://kexue.fm/archives/8231): works the sinusoid back from the
#   wish that two codes' dot product depend only on their offset, and explains its long-range
#   decay by an oscillatory integral.
# - tensor2tensor, `get_timing_signal_1d` ([`common_attention.py`](https://github.com/tensorflow/tensor2tensor/blob/master/tensor2tensor/layers/common_attention.py)), and fairseq,
#   `SinusoidalPositionalEmbedding` ([`fairseq/modules/sinusoidal_positional_embedding.py`](https://github.com/facebookresearch/fairseq/blob/main/fairseq/modules/sinusoidal_positional_embedding.py)):
#   the concatenated layout, with frequencies $10000^{-i/(d/2-1)}$, i.e. our formula with base
#   $10000^{h/(h-1)}$, $h = d/2$ (checked against Hugging Face's copy, `M2M100SinusoidalPositionalEmbedding`,
#   in `tests/lib/test_sinusoidal.py`).
# - Hugging Face `transformers`: [`modeling_distilbert.py`](https://github.com/huggingface/transformers/blob/main/src/transformers/models/distilbert/modeling_distilbert.py) (`create_sinusoidal_embeddings`,
#   interleaved), [`modeling_marian.py`](https://github.com/huggingface/transformers/blob/main/src/transformers/models/marian/modeling_marian.py) (`MarianSinusoidalPositionalEmbedding`, concatenated).
# - Harvard NLP, *[The Annotated Transformer](https://nlp.seas.harvard.edu/annotated-transformer/)*: `PositionalEncoding`, the
#   common pattern section 8 improves on: a persistent buffer (the default of `register_buffer`)
#   and angles computed in float32 (the deep dive of section 1 measures what that costs).
# - A. Zhang, Z. C. Lipton, M. Li, A. J. Smola, *动手学深度学习* (Dive into Deep Learning, Chinese
#   edition, v2.0.0), section 10.6, *自注意力和位置编码* (self-attention and positional encoding),
#   [zh.d2l.ai](https://zh.d2l.ai/chapter_attention-mechanisms/self-attention-and-positional-encoding.html):
#   the sinusoid as a continuous binary counter, and the rotation taking position $i$ to $i + \delta$.
# - PyTorch documentation, [`torch.nn.Module.register_buffer`](https://pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.register_buffer) (the `persistent` flag).
# - `docs/replication.md`: the headline results of the papers this course teaches, beside the
#   numbers its notebooks measure at toy scale, whether they agree, and why not where they do not.
# - Next: [02 · Learnable absolute encoding](02_learnable.ipynb) (a learned table instead of a formula) and
#   [03 · RoPE](03_rope.ipynb) (which applies
#   the rotation $M_k$ to queries and keys instead of adding a vector).

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ## Solutions
# One cell per exercise: each redefines the answer and runs its checker (so the notebook
# proves that every solution passes). Try the exercise first.

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
# Exercise 1. Pair i turns fully when 2 pi 10000^(2i/64) <= 512, i.e.
# i <= 32 log(512 / (2 pi)) / log(10000), about 15.3: pairs 0 to 15.
predicted_turns = 16
check_exercise_1(predicted_turns, turns_512)

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
# Exercise 2. (b) a zero row is still a distinct code; (c) the slow sines
# keep far positions apart; (d) an odd function does tell p from -p.
answer_2 = "a"
check_exercise_2(answer_2)


# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
# Exercise 3. Keep the geometric ladder and choose the base for the context:
# theta_min = base^(-7/8) must lie in [pi/126, pi/63), so base^(7/8) is
# between 20 and 40: a base from about 31 to 68. Base 40: 63 theta_min = 2.50.
my_theta = 40.0 ** -(torch.arange(8) / 8)
check_exercise_3(my_theta)

# %% [markdown]
# ## End of notebook 01
# <!-- Keep this cell last. "Run All" ends on the last cell, and JupyterLab unfolds the section that
#      holds it: outside "Solutions", this heading leaves the solutions folded. -->

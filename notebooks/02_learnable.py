# %% [markdown]
# # 02 · Learnable absolute encoding
#
# **The question.** Notebook 01 *designed* a position table: waves chosen by hand. Why not let
# the model find its own? BERT (512 positions), GPT-2 (1024) and ViT did exactly that: the
# position vectors are a parameter table, one row per position, trained with the rest of the
# model. What would we want of such a table, and what does it cost?
#
# - **What it buys:** nothing to design. Whatever geometry of positions the task needs, training
#   can put into the rows, and in code it is a plain `nn.Embedding`.
# - **What it costs:** $L_\text{max} \cdot d$ parameters; a hard limit, since position
#   $L_\text{max}$ has no row at all; and a row learns only from the positions training reaches.
#
# This notebook measures each of these on a small task, next to the sinusoid of notebook 01.
#
# **What you will learn**
# - what a learnable table is, and how GPT-2 and BERT initialise it;
# - that its initial scale must suit the token embeddings it is added to, and why;
# - what structure the rows acquire in training, and what happens at positions training never
#   reached, or that have no row;
# - how it compares with the sinusoid on accuracy, data and unseen positions, by the series'
#   rule for comparing trained models (introduced here);
# - why Vaswani et al. multiply token embeddings by $\sqrt{d_\text{model}}$.
#
# **Prerequisites:** [00 · Permutation blindness](00_permutation_blindness.ipynb) (why position is
# needed) and [01 · Sinusoidal encoding](01_sinusoidal.ipynb) (the fixed table we compare with).
#
# **Run time:** about 57 s on a laptop CPU (measured with `make execute`, one thread).

# %%
import itertools

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from posenc_course.data import sorting_task
from posenc_course.exercises.nb02 import (
    check_exercise_1,
    check_exercise_2,
    check_exercise_3,
    check_exercise_4,
)
from posenc_course.plotting import COLORS, heatmap, line_plot, moving_average
from posenc_course.report import checked, compare, mean_std
from posenc_course.training import (
    accuracy,
    run_each,
    seed_everything,
    setup_notebook,
    train,
)
from posenc_lib.embeddings.learnable import LearnablePE
from posenc_lib.embeddings.sinusoidal import SinusoidalPE, sinusoidal_table
from posenc_lib.models import TinyTransformer
from posenc_lib.scheme import NoPosition

gen = setup_notebook(0)  # threads, figure style, seeds, print options

# %% [markdown]
# ## 1 · The table
#
# **Question:** what exactly is a learnable encoding? A matrix $P \in \mathbb R^{L_\text{max}
# \times d}$ whose row $p$ is added to the token embedding at position $p$:
#
# $$x_p = E[\text{token}_p] + P[p], \qquad p = 0, \dots, L_\text{max} - 1 .$$
#
# `LearnablePE` holds $P$ as the parameter `weight`, drawn from $\mathcal N(0, \sigma^2)$ with
# $\sigma$ = `init_std` = 0.02 by default. That is the value Hugging Face's `_init_weights`
# uses for every embedding of GPT-2 and BERT (`initializer_range`), tokens and positions alike.
# OpenAI's own GPT-2 code drew its position table `wpe` with standard deviation 0.01, half the
# 0.02 of its token table `wte` (`model.py` in *Further reading*). In Hugging Face's GPT-2 the
# table is `self.wpe = nn.Embedding(config.max_position_embeddings, self.embed_dim)`: a lookup
# table, nothing more.

# %% tags=["nbval-check-output"]
D_MODEL, MAX_LEN = 32, 24
pe = LearnablePE(D_MODEL, MAX_LEN)
print(pe)
n_params = sum(p.numel() for p in pe.parameters())
print("parameters:", n_params, "=", MAX_LEN, "x", D_MODEL)
print(f"measured std of the initial table: {pe.weight.std().item():.4f}")

positions = torch.tensor([[0, 1, 2, 23]])
wpe = nn.Embedding.from_pretrained(pe.weight.detach())  # a wpe, our numbers
torch.testing.assert_close(pe(positions), wpe(positions), rtol=0, atol=0)
assert abs(pe.weight.std().item() - 0.02) < 0.002
print("pe(positions) == nn.Embedding lookup:", tuple(pe(positions).shape))
OPENAI_GPT2_STD = {"wte (tokens)": 0.02, "wpe (positions)": 0.01}  # model.py
print("OpenAI's GPT-2 initial std:", OPENAI_GPT2_STD)

# %% [markdown]
# **Check.** The module is an embedding lookup with 24 × 32 = 768 parameters, and the fresh
# table has the requested standard deviation. Nothing links row $p$ to row $p+1$: at
# initialisation the rows are independent random vectors.

# %% [markdown]
# **Takeaway:**
# - a learnable encoding is a lookup table of $L_\text{max} \cdot d$ parameters;
# - it has no built-in notion of order or distance: everything it knows about positions comes
#   from training.

# %% [markdown]
# ## 2 · A task that needs absolute position: sorting
#
# **Question:** which task forces a model to know *where* each output is? Sorting. The input is
# 12 random tokens from a vocabulary of 16; the target at position $p$ is the $p$-th smallest
# input token. Every output position sees the same bag of tokens, so only the index $p$ can
# tell the model which rank to output; without position a model gives every copy of a token
# the same output (notebook 00), which section 6 measures.
#
# The model is the library's `TinyTransformer` (2 layers, 2 heads, $d = 32$, per-token head).
# The learnable table has `max_len = 24` rows, twice the training length, as one sets it when
# longer inputs may come later.

# %% tags=["nbval-check-output"]
SEQ_LEN, VOCAB, STEPS = 12, 16, 150
LR = 5e-3  # AdamW from section 4 on (section 3 keeps train's default, 3e-3)
train_x, train_y = sorting_task(2048, SEQ_LEN, VOCAB,
                                torch.Generator().manual_seed(1))
test_x, test_y = sorting_task(2000, SEQ_LEN, VOCAB,
                              torch.Generator().manual_seed(2))
print("input :", train_x[0].tolist())
print("target:", train_y[0].tolist())


def build(make_scheme, token_std: float | None, embed_scale: bool = False,
          seed: int = 0) -> TinyTransformer:
    """Seed, build the scheme and the model; draw the token embeddings from
    N(0, token_std^2) (None keeps nn.Embedding's default N(0, 1))."""
    seed_everything(seed)
    model = TinyTransformer(VOCAB, VOCAB, d_model=D_MODEL, n_heads=2,
                            n_layers=2, scheme=make_scheme(), pool="none",
                            embed_scale=embed_scale)
    if token_std is not None:
        nn.init.normal_(model.embed.weight, std=token_std)
    return model


def batches(seed: int) -> torch.Generator:
    """The generator of a run's minibatches: same seed, same batches."""
    return torch.Generator().manual_seed(seed)


SEEDS = (0, 1, 2)  # every comparison of trained models uses these seeds


# %% [markdown]
# ## 3 · The initial scale: 0.02 or 1.0?
#
# **Question:** does it matter whether the table starts at $\sigma = 0.02$ or $\sigma = 1$?
# The model's first layer sees the *sum* token + position, so the answer should depend on the
# tokens' scale too. We cross two table scales with two token scales, $\mathcal N(0, 0.02^2)$
# (Hugging Face's GPT-2) and $\mathcal N(0, 1)$ (PyTorch's default for `nn.Embedding`), three
# seeds each (weights and batches). Within a seed the two tables are the same draw, 50 times
# apart. `run_each` trains the twelve runs side by side; each run seeds itself, so the results
# are those of a plain `for` loop.

# %% tags=["nbval-check-output"]
seed_everything(0)
small_table = LearnablePE(D_MODEL, MAX_LEN, init_std=0.02).weight.detach()
seed_everything(0)
large_table = LearnablePE(D_MODEL, MAX_LEN, init_std=1.0).weight.detach()
torch.testing.assert_close(large_table, 50 * small_table)  # one draw, x50

INIT_STEPS = 150


def init_run(setup: tuple[float, float, int]) -> list[float]:
    """One run of the experiment: the loss of every step."""
    token_std, init_std, seed = setup
    model = build(lambda: LearnablePE(D_MODEL, MAX_LEN, init_std=init_std),
                  token_std, seed=seed)
    return train(model, (train_x, train_y), INIT_STEPS,
                 generator=batches(seed), desc=None)


# (token std, table std, seed)
init_setups = list(itertools.product((0.02, 1.0), (0.02, 1.0), SEEDS))
init_losses = dict(zip(init_setups, run_each(
    init_run, init_setups, desc="token std x table std x seed")))

fig, axes = plt.subplots(1, 2, figsize=(7.5, 3.4), sharey=True)
for ax, token_std in zip(axes, (0.02, 1.0)):
    curves = {}
    for s in (0.02, 1.0):
        runs_ = [init_losses[token_std, s, seed] for seed in SEEDS]
        curves[f"table init_std {s}"] = moving_average(np.mean(runs_, 0))
    steps_axis = np.arange(len(curves["table init_std 0.02"])) + 10
    line_plot(ax, steps_axis, curves,
              title=f"Token embeddings N(0, {token_std}²)",
              xlabel="training step",
              ylabel="training loss (nats, mean of 3 seeds)")
plt.show()

MEASURES = {"mean loss": np.mean, "final loss": lambda l: np.mean(l[-25:]),
            "first 50 steps": lambda l: np.mean(l[:50])}
init_runs = pd.DataFrame([
    {"tokens": t, "table": s, "seed": seed,
     **{m: f(l) for m, f in MEASURES.items()}}
    for (t, s, seed), l in init_losses.items()])
init_stats = (init_runs.groupby(["tokens", "table"])[list(MEASURES)]
              .agg(["mean", "std"]))
init_stats.round(3)

# %% [markdown]
# "Mean loss" averages all 150 steps (the area under the curve: lower = learned sooner); "final
# loss" the last 25 steps, "first 50 steps" the first 50; each is a mean and a standard
# deviation over the three seeds.
#
# **The series' rule for comparing trained models.** Every later notebook uses this one rule and
# refers back here ("02 §3"). Each setting is trained with at least 3 seeds; A is *ahead* of B
# when the gap of their means exceeds **twice the larger standard deviation** *and* a **floor**,
# the smallest effect worth a verdict:
# $\bar a - \bar b > \max(2\max(s_a, s_b), f)$, with $f$ two points of accuracy, or 2% of B's
# mean for a loss or a perplexity (where lower is better). Otherwise A and B are **not
# separated**: three seeds cannot tell them apart, which never means "the same". `compare` in
# `posenc_course.report` applies it and prints the verdict with its gap, spread and floor. It
# is a cautious rule of thumb, not a significance test.

# %% tags=["nbval-check-output"]
per_run = init_runs.set_index(["tokens", "table"])


def loss_verdict(measure: str, a: tuple, b: tuple):
    """The series' rule on a loss (lower is better): setting a against b,
    each a (token std, table std) pair."""
    return compare(per_run.loc[a][measure].tolist(),
                   per_run.loc[b][measure].tolist(),
                   higher_is_better=False, relative=True)


verdicts_3 = {
    "table drowns tokens (0.02/1.0) vs matched (0.02/0.02)":
        loss_verdict("mean loss", (0.02, 0.02), (0.02, 1.0)),
    "table 50x smaller (1.0/0.02) vs matched (1.0/1.0)":
        loss_verdict("mean loss", (1.0, 1.0), (1.0, 0.02)),
    "small matched (0.02/0.02) vs large matched (1.0/1.0)":
        loss_verdict("mean loss", (0.02, 0.02), (1.0, 1.0)),
}
for what, verdict in verdicts_3.items():
    print(f"{what}:\n  mean loss, first ahead? {verdict}")

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
v = list(verdicts_3.values())
assert all(verdict.a_ahead for verdict in v), v
assert loss_verdict("final loss", (0.02, 0.02), (0.02, 1.0)).a_ahead
assert loss_verdict("first 50 steps", (1.0, 1.0), (1.0, 0.02)).a_ahead
assert loss_verdict("final loss", (1.0, 0.02), (1.0, 1.0)).a_ahead
drowned = v[0].gap
assert abs(v[1].gap) < 0.15 * abs(drowned)  # the small table costs far less
assert all(loss_verdict("mean loss", (0.02, 0.02), o).a_ahead
           for o in [(0.02, 1.0), (1.0, 0.02), (1.0, 1.0)])
checked("7 orderings of section 3 hold by the rule: 0.02/0.02 ahead of the three others; "
        "a table 50x smaller than the tokens behind over the first 50 steps and over the run, "
        "ahead at the end, at a cost under 15% of that of a table that drowns the tokens")

# %% [markdown]
# **Why.** LayerNorm divides the sum token + position by its size. With a table at 1.0 over
# tokens at 0.02, the sum is almost pure position noise, which token sits where is a 2%
# perturbation, and the loss stays high (left panel; mean loss 1.885 against 0.989). The
# opposite mismatch, a table 50 times *smaller* than the tokens, costs far less but still
# something: over the run it trails the matched 1.0/1.0 pair (1.418 against 1.340, which the
# rule separates, narrowly); it is behind over the first 50 steps, catches up, and ends lower.
# A table that starts small can grow; a table that drowns the tokens must first shrink.
#
# Matching the ratio is not the whole story: the two *matched* runs differ too, 0.02/0.02
# learning clearly faster than 1.0/1.0. A likely reason, not measured here: AdamW moves every
# weight by about the learning rate per step whatever its size, so small embeddings are
# reshaped within a few steps, unit-scale ones only by a small fraction of themselves. OpenAI's
# GPT-2 recipe, a table at half the tokens' scale and both small, sits on the safe side of both
# effects.
#
# The rest of this notebook uses small embeddings (0.02 and 0.02) where the learnable table is
# studied alone, and the same tokens for every encoding where encodings are compared (section
# 6). Section 7 returns to matching scales, for the fixed sinusoid.

# %% [markdown]
# **Takeaway:**
# - one story, two effects: the table must not drown the tokens (the costly mistake), and small
#   embeddings learn faster than large ones;
# - a table smaller than the tokens costs little, because it can grow;
# - compare trained runs by the series' rule: over 3 seeds, a gap beyond twice the larger spread
#   and the floor; otherwise "not separated".

# %% [markdown]
# ## 4 · What the table learns
#
# **Question:** the rows start as independent random vectors. Does training give them any
# structure? We train one learnable model on the 2048 training sequences (seed 0: a single
# illustration, not a comparison) and compare the cosine similarity of every pair of rows,
# $\cos(P[i], P[j])$, before and after. The third panel is the sinusoidal table of notebook 01,
# whose structure is designed.

# %% tags=["nbval-check-output"]
learned = build(lambda: LearnablePE(D_MODEL, MAX_LEN), token_std=0.02)
table_before = learned.scheme.weight.detach().clone()
learned_losses = train(learned, (train_x, train_y), STEPS, lr=LR,
                       desc="learnable, 2048 sequences")
table_after = learned.scheme.weight.detach().clone()


def cosine_matrix(table: torch.Tensor) -> torch.Tensor:
    """(n, d) rows -> (n, n) cosine similarities."""
    unit = F.normalize(table, dim=-1)
    return unit @ unit.T


fig, axes = plt.subplots(1, 3, figsize=(7.5, 2.8))
panels = [(table_before, "Learned, before"), (table_after, "Learned, after"),
          (sinusoidal_table(MAX_LEN, D_MODEL), "Sinusoidal (fixed)")]
for ax, (table, title) in zip(axes, panels):
    heatmap(ax, cosine_matrix(table).numpy(), title, "position j",
            "position i", "cosine similarity", center=True)
    ax.axhline(SEQ_LEN - 0.5, color="black", linestyle="--", linewidth=1)
    ax.axvline(SEQ_LEN - 0.5, color="black", linestyle="--", linewidth=1)
plt.show()

# %% [markdown]
# The dashed lines mark the training length: positions 0-11 were used in training, 12-23 never.
# One number summarises the structure: the mean cosine similarity of **neighbours**
# ($|i-j| = 1$) against that of **far pairs** ($|i-j| \ge 6$), over the trained positions.

# %% tags=["nbval-check-output"]
def neighbour_and_far(table: torch.Tensor, n: int = SEQ_LEN,
                      far: int = SEQ_LEN // 2) -> tuple[float, float]:
    """Mean cosine of rows at distance 1, and at distance >= far,
    among the first n rows."""
    c = cosine_matrix(table[:n])
    distance = (torch.arange(n)[:, None] - torch.arange(n)[None, :]).abs()
    return c[distance == 1].mean().item(), c[distance >= far].mean().item()


structure = pd.DataFrame(
    [neighbour_and_far(t) for t, _ in panels],
    index=["learnable, before", "learnable, after", "sinusoidal"],
    columns=["neighbours |i-j|=1", "far pairs |i-j|>=6"],
)
display(structure.round(3))
(nb_before, far_before), (nb_after, far_after) = structure.iloc[:2].values
assert abs(nb_before) < 0.15 and abs(far_before) < 0.15  # nearly orthogonal
assert nb_after > 0.5 and far_after < 0.0  # neighbours alike, far pairs apart

# %% [markdown]
# **Check.** Before training, all pairs are nearly orthogonal (random vectors in 32 dimensions).
# After training on sorting, neighbouring rows are strongly similar (0.701) and far pairs lean
# apart (mean cosine -0.440, far from opposite, which would be -1): the rows now lie in order of position, a
# band around the diagonal like the sinusoid's. Nobody told the table that position 5 lies
# between 4 and 6; the order came from the task (neighbouring ranks hold similar values). The
# untrained corner (rows 12-23) is still noise.

# %% [markdown]
# **Takeaway:**
# - a learned table finds a geometry that serves the task: here, neighbouring positions alike;
# - rows that no training sequence reaches keep their random start;
# - pretrained tables show the same kind of structure: in GPT-2's and BERT's, nearby positions
#   are more similar than distant ones (Wang & Chen, 2020, in *Further reading*).

# %% [markdown]
# ## 5 · Positions the table never saw, and the choice of `max_len`
#
# **Question:** what does the model do at positions it was never trained on? Two cases:
# positions below `max_len` that no training sequence reached (rows 12-23 here), and positions
# at or above `max_len`, which have no row at all.
#
# A row receives gradient only when its position occurs in a batch. With plain AdamW (no weight
# decay, as here) a row without gradient is never updated: rows 12-23 are *exactly* their random
# initial values.

# %% tags=["nbval-check-output"]
assert torch.equal(table_after[SEQ_LEN:], table_before[SEQ_LEN:])
assert not torch.equal(table_after[:SEQ_LEN], table_before[:SEQ_LEN])
moved = (table_after - table_before).norm(dim=1)
print("how far each row moved in training (L2 norm):")
print("  rows  0-11:", moved[:SEQ_LEN])
print("  rows 12-23:", moved[SEQ_LEN:])

# %% [markdown]
# Those rows exist, so using them raises no error. Here is the model of section 4 on the test
# set, with the same 12 tokens placed at positions 12-23 instead of 0-11 (section 8 does the
# same for three seeds of each encoding).

# %% tags=["nbval-check-output"]
shifted = torch.arange(SEQ_LEN, 2 * SEQ_LEN)[None]  # positions 12 .. 23


@torch.no_grad()
def accuracy_at(model: TinyTransformer, positions: torch.Tensor) -> float:
    """Test accuracy when the inputs are placed at ``positions`` (1, seq)."""
    logits = model(test_x, positions=positions)
    return (logits.argmax(-1) == test_y).float().mean().item()


learned_shifted = accuracy_at(learned, shifted)
learned_acc = accuracy(learned, test_x, test_y)
print(f"learnable, positions  0-11: {learned_acc:.3f}")
print(f"learnable, positions 12-23: {learned_shifted:.3f}   "
      "(untrained rows: no error, just wrong)")
assert learned_shifted < 0.5 * learned_acc

# %% [markdown]
# At position `max_len` and beyond, the table has no row. `LearnablePE` refuses with a message
# that says what to do, instead of silently clipping or wrapping the index; a bare
# `nn.Embedding` raises an `IndexError` with no hint.

# %% tags=["nbval-check-output"]
try:
    learned(torch.zeros(1, MAX_LEN + 1, dtype=torch.long))  # 25 tokens, 24 rows
    raise AssertionError("expected a ValueError")
except ValueError as err:
    print(f"ValueError: {err}")
    assert f"[0, {MAX_LEN})" in str(err)
try:
    wpe(torch.tensor([[MAX_LEN]]))
    raise AssertionError("expected an IndexError")
except IndexError as err:
    print(f"bare nn.Embedding at position {MAX_LEN}: IndexError: {err}")
print(f"GPT-2 small position table: {1024 * 768:,} parameters")
print(f"trained rows here: {int((moved > 0).sum())} of {MAX_LEN}")
assert int((moved > 0).sum()) == SEQ_LEN

# %% [markdown]
# **What this says about `max_len`.** Too small, and longer inputs are impossible. Too large, and
# you pay $L_\text{max} \cdot d$ parameters (GPT-2 small: $1024 \times 768 = 786{,}432$) for rows
# that stay random unless training reaches them, and that give wrong answers without any error
# when used. To go longer later, the table must be extended and trained further (Exercise 3
# shows one way to start the new rows).

# %% [markdown]
# **Takeaway:**
# - a row that training never reaches stays random, and the model uses it silently;
# - from `max_len` on there is no row at all, and `LearnablePE` says so;
# - set `max_len` to the longest input you will *train* on, and train on inputs that reach it.

# %% [markdown]
# ## 6 · Learnable vs sinusoidal: data, overfitting, parameters
#
# **Question:** does a table that must be learned need more data than one that is given, and
# does it overfit? We train both encodings on 64, 256 and 2048 sequences (150 steps, batches of
# 64; the smallest set is seen about 150 times), three seeds each, and measure training and test
# accuracy per token. Both arms get the same token embeddings (PyTorch's $\mathcal N(0, 1)$,
# the same draw for the same seed), which match the sinusoid's entries of size 1 (section 7). A
# model without any position is the floor.

# %% tags=["nbval-check-output"]
SIZES = (64, 256, 2048)
SCHEMES = {"learnable": lambda: LearnablePE(D_MODEL, MAX_LEN),
           "sinusoidal": lambda: SinusoidalPE(D_MODEL, max_len=MAX_LEN)}
models, rows = {}, []
setups = [(name, make_scheme, n, seed)
          for name, make_scheme in {**SCHEMES, "none": NoPosition}.items()
          for n in (SIZES if name != "none" else (2048,)) for seed in SEEDS]


def data_run(setup: tuple) -> tuple[TinyTransformer, dict]:
    """One run: an encoding, the first n training sequences, a seed;
    the model and its accuracies."""
    name, make_scheme, n, seed = setup
    model = build(make_scheme, token_std=None, seed=seed)
    train(model, (train_x[:n], train_y[:n]), STEPS, lr=LR,
          generator=batches(seed), desc=None)
    return model, {"encoding": name, "training sequences": n, "seed": seed,
                   "train accuracy": accuracy(model, train_x[:n], train_y[:n]),
                   "test accuracy": accuracy(model, test_x, test_y)}


trained = run_each(data_run, setups,
                   desc="encoding x training sequences x seed")
for (name, _, n, seed), (model, row) in zip(setups, trained):
    models[name, n, seed] = model
    rows.append(row)
runs = pd.DataFrame(rows)
runs["gap"] = runs["train accuracy"] - runs["test accuracy"]
by_run = runs.groupby(["encoding", "training sequences"], sort=False)
results = by_run[["train accuracy", "test accuracy", "gap"]].agg(
    lambda v: mean_std(v))
results

# %% tags=["nbval-check-output"]
fig, ax = plt.subplots(figsize=(6.4, 3.8))
test_mean = by_run["test accuracy"].mean()
test_std = by_run["test accuracy"].std()
line_plot(ax, SIZES,
          {name: test_mean[name].loc[list(SIZES)].to_numpy()
           for name in SCHEMES},
          title="Sorting 12 tokens: test accuracy vs data",
          xlabel="training sequences (log scale)",
          ylabel="test accuracy per token (3 seeds)", logx=True, markers=True)
for i, name in enumerate(SCHEMES):
    ax.errorbar(SIZES, test_mean[name].loc[list(SIZES)],
                yerr=test_std[name].loc[list(SIZES)], fmt="none",
                ecolor=COLORS[i], capsize=3)
ax.set_xticks(SIZES, labels=[str(n) for n in SIZES])
ax.axhline(test_mean["none", 2048], color="black", linestyle=":",
           label="no position (2048)")
ax.legend()
plt.show()

# %% [markdown]
# **Check.** Error bars: one standard deviation over the three seeds. The learnable table (A)
# against the sinusoid (B) at each data size, by the series' rule:

# %% tags=["nbval-check-output"]
per_size = runs.set_index(["encoding", "training sequences"])["test accuracy"]


def test_acc(name: str, n: int) -> list[float]:
    """Each seed's test accuracy: encoding ``name``, ``n`` sequences."""
    return per_size.loc[(name, n)].tolist()


verdict = {n: compare(test_acc("learnable", n), test_acc("sinusoidal", n))
           for n in SIZES}
none_acc = test_mean["none", 2048]
print(f"without position: {none_acc:.3f}")
for n in SIZES:
    print(f"{n:4d} sequences, learnable vs sinusoidal: {verdict[n]}")

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
mean = runs.groupby(["encoding", "training sequences"]).mean(numeric_only=True)
for name in SCHEMES:
    small, large = mean.loc[(name, 64)], mean.loc[(name, 2048)]
    assert small["train accuracy"] > 0.95 and small["gap"] > 0.2  # memorised
    assert large["test accuracy"] > 0.9 and large["gap"] < 0.03  # solved
    assert compare(test_acc(name, 256), test_acc(name, 64)).a_ahead
    assert compare(test_acc(name, 2048), test_acc(name, 256)).a_ahead
    assert compare(test_acc(name, 2048), test_acc("none", 2048)).a_ahead
assert not any(v.separated for v in verdict.values()), verdict
assert verdict[64].gap < 0 and none_acc < 0.4
checked("both encodings memorise 64 sequences and solve 2048; more data is ahead at each step; "
        "both are ahead of no position; learnable and sinusoidal are not separated at any size")

# %% [markdown]
# **Reading the numbers.**
# - **Overfitting on small data.** On 64 sequences both encodings memorise the training set and
#   get only about half of the test tokens right: the whole model memorises 64 × 12 tokens,
#   not the table alone. 256 sequences close most of the gap, 2048 close it.
# - **Data needed.** At no size does the rule separate the two encodings. At 256 and 2048 the
#   gaps are far inside spread and floor; at 64 the sinusoid's mean is higher (0.528 against
#   0.480), but the gap of 0.0483 does not clear the spread of 0.0589: not separated, which is
#   not "the same" (the open-ended experiment gives it more seeds). The common view that a
#   learned table needs much more data does not show here, and the reason is visible: every
#   training sequence has 12 tokens, so *every row is trained by every sequence*. Data per row is
#   scarce only where training rarely reaches, as section 5 showed.
# - **The paper agrees.** Vaswani et al. tried this swap in translation (Table 3, row E):
#   "nearly identical results" (BLEU 25.7 against 25.8, perplexity 4.92 for both). They kept
#   the sinusoid because it might extrapolate.
# - **Without position** the model stays near 0.2: the task really needs position.

# %% [markdown]
# **Takeaway:**
# - with the same token embeddings and enough data, three seeds do not separate a learned table
#   from the sinusoid, as Vaswani et al. found for translation;
# - on 64 sequences both memorise, and the sinusoid's higher mean is not separated by the rule;
# - a learned table is short of data only at positions that training rarely reaches.

# %% [markdown]
# ## 7 · Why multiply token embeddings by $\sqrt{d_\text{model}}$?
#
# **Question:** Vaswani et al. write "in the embedding layers, we multiply those weights by
# $\sqrt{d_\text{model}}$". Why? Section 3 gave the reason: token and position vectors are added,
# so they must start at comparable sizes. A sinusoidal row has squared norm exactly $d/2$ (each
# sin/cos pair contributes $\sin^2 + \cos^2 = 1$). Their code (tensor2tensor) draws the token
# matrix, shared with the output layer, with standard deviation $d^{-1/2}$: rows of norm about
# 1, far below the sinusoid; the factor $\sqrt d$ brings them to entries of size 1. In our
# `TinyTransformer` the factor is the switch `embed_scale=True`.
#
# The experiment: a sinusoidal model with three token initialisations, each with and without the
# factor, three seeds each. We measure the token rows' norm as they reach the position scheme,
# its ratio to the sinusoidal row norm, and the mean training loss over 60 steps.

# %% tags=["nbval-check-output"]
sin_table = SinusoidalPE(D_MODEL, max_len=MAX_LEN).table
sin_norm = sin_table.norm(dim=1).mean().item()
inits = {"N(0, 1) (PyTorch default)": None,
         "N(0, 1/d) (Vaswani et al.)": D_MODEL**-0.5,
         "N(0, 0.02²) (GPT-2)": 0.02}
SCALE_STEPS = 60


def scale_run(setup: tuple) -> dict:
    """One run: the token rows' norm as they reach the position scheme,
    and the mean training loss."""
    (init_name, token_std), embed_scale, seed = setup
    model = build(lambda: SinusoidalPE(D_MODEL, max_len=MAX_LEN), token_std,
                  embed_scale, seed=seed)
    token_norm = (model.embed.weight * model.embed_scale).norm(dim=1)
    token_norm = token_norm.mean().item()
    losses = train(model, (train_x, train_y), SCALE_STEPS, lr=LR,
                   generator=batches(seed), desc=None)
    return {"token init": init_name, "embed_scale": embed_scale,
            "seed": seed, "token row norm": token_norm,
            "token / position norm": token_norm / sin_norm,
            "mean loss": np.mean(losses)}


scale_setups = list(itertools.product(inits.items(), (False, True), SEEDS))
scale_runs = pd.DataFrame(run_each(scale_run, scale_setups,
                                   desc="token init x embed_scale x seed"))
by_setup = scale_runs.groupby(["token init", "embed_scale"], sort=False)
scales = by_setup[["token row norm", "token / position norm"]].mean()
scales["mean loss (3 seeds)"] = by_setup["mean loss"].agg(
    lambda v: mean_std(v))
print(f"sinusoidal row norm: {sin_norm:.3f} = sqrt(d/2)")
scales.round(3)

# %% [markdown]
# **Check.** With $d = 32$, Vaswani's tokens have row norm about 1 unscaled and about
# $\sqrt{32} \approx 5.7$ scaled, next to the sinusoid's $\sqrt{16} = 4$: the factor is what
# makes them match. PyTorch's default $\mathcal N(0, 1)$ is *already* at that scale; multiplied
# by $\sqrt d$ again, the tokens are 8 times larger than the sinusoid. By the series' rule:

# %% tags=["nbval-check-output"]
ratio = scales["token / position norm"]
per_setup = scale_runs.set_index(["token init", "embed_scale"])["mean loss"]
vaswani, default, gpt2 = list(inits)[1], list(inits)[0], list(inits)[2]


def faster(a: tuple, b: tuple):
    """The series' rule on the mean loss: does setup a learn faster than b?"""
    return compare(per_setup.loc[a].tolist(), per_setup.loc[b].tolist(),
                   higher_is_better=False, relative=True)


matched = ratio.between(0.5, 2)
extreme = (ratio > 5) | (ratio < 0.05)
(m1, m2), slow = list(ratio[matched].index), list(ratio[extreme].index)
print("matched, one against the other:", faster(m1, m2))
print("ratio 0.16 against ratio 0.25:", faster((gpt2, True), (vaswani, False)))

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
assert abs(sin_norm - (D_MODEL / 2) ** 0.5) < 1e-4
assert 0.5 < ratio[vaswani, True] < 2 and ratio[vaswani, False] < 0.3
assert 0.5 < ratio[default, False] < 2 and ratio[default, True] > 5
assert matched.sum() == 2 and extreme.sum() == 2
assert not faster(m1, m2).separated
assert all(faster(other, x).a_ahead
           for x in slow for other in ratio[~extreme].index)
assert faster((gpt2, True), (vaswani, False)).a_ahead
assert not any(faster(m, (gpt2, True)).a_ahead for m in (m1, m2))
checked("the factor matches Vaswani's tokens and overshoots PyTorch's default; the two matched runs "
        "are not separated; both extreme mismatches are behind every other run; ratio 0.16 is ahead "
        "of ratio 0.25 and not behind the matched runs by the rule")

# %% [markdown]
# The two runs whose tokens match the sinusoid (ratio about 1.4, one with the factor, one
# without) are not separated: the recipe does not matter once the ratio is right. The two extreme
# mismatches (tokens 8 times larger, or 35 times smaller, than the position rows) are behind every
# other run, the first by far (2.571). In between, the ratio alone does not order the runs: GPT-2's
# tokens with the factor (ratio 0.16) learned faster than Vaswani's without it (ratio 0.25). One
# likely reason, not measured here: the factor also multiplies every update of the tokens by
# $\sqrt d$, so scaled tokens grow towards the sinusoid's size faster.

# %% [markdown]
# **Takeaway:**
# - $\sqrt{d}$ is not a property of positional encodings but a correction that fits one
#   initialisation of the token embeddings (std $d^{-1/2}$);
# - the rule: token and position terms must start at comparable scales; check the ratio first,
#   though it does not order every run;
# - a learnable table can grow to meet the tokens; a fixed one cannot.

# %% [markdown]
# ## 8 · Pros and cons, measured
#
# Our copy of the source article, the Chinese tutorial
# 《Transformer位置编码原理与实现：从正弦编码到RoPE》, has nothing under its heading
# 「优点与缺点分析：」 ("pros and cons", §3.2), probably a table lost in copying (erratum E2).
# Here is one, filled with this notebook's numbers (section 6's models, three seeds each), with
# the model without position beside them.

# %% tags=["nbval-check-output"]
def unseen_acc(name: str) -> list[float]:
    """Each seed's accuracy with the inputs at positions 12-23."""
    return [accuracy_at(models[name, 2048, seed], shifted) for seed in SEEDS]


def past_max_len(name: str) -> str:
    """What the model does with an input longer than its table."""
    model = models[name, 2048, 0]
    try:
        model(torch.zeros(1, model.scheme.max_len + 1, dtype=torch.long))
    except ValueError as err:
        return f"{type(err).__name__} (no row)"
    return "computed (table extends)"


def row(name: str) -> dict:
    scheme = models[name, 2048, 0].scheme
    return {
        "position parameters": sum(p.numel() for p in scheme.parameters()),
        **{f"test acc., {n} seq.": results.loc[(name, n), "test accuracy"]
           for n in SIZES},
        "acc. at positions 12-23": mean_std(unseen_acc(name)),
        "position >= max_len": past_max_len(name),
    }


pros_cons = pd.DataFrame({name: row(name) for name in SCHEMES})
display(pros_cons)
none_seeds = test_acc("none", 2048)
print(f"no position at all (2048 seq.): {mean_std(none_seeds)}")
for name in SCHEMES:
    print(f"no position vs {name} at positions 12-23:",
          compare(none_seeds, unseen_acc(name)))

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
assert all(compare(none_seeds, unseen_acc(name)).a_ahead for name in SCHEMES)
assert all(max(unseen_acc(name)) < 0.5 * min(test_acc(name, 2048))
           for name in SCHEMES)
assert past_max_len("learnable").startswith("ValueError")
checked("at positions 12-23 both encodings fall below half their accuracy at 0-11, and the model "
        "without position is ahead of both by the rule")

# %% [markdown]
# | | pros (measured above) | cons (measured above) |
# |---|---|---|
# | **learnable** | learns the geometry the task needs (§4); not separated from the sinusoid at any data size (§6), as Vaswani et al. found for translation; an `nn.Embedding`, nothing to derive | $L_\text{max} \cdot d$ parameters (768 here, 786,432 in GPT-2 small); rows never trained stay random and give wrong answers *silently* (§5); no row at all from `max_len` on (`ValueError`); its initial scale must suit the tokens (§3) |
# | **sinusoidal** | no parameters; defined at every position, so no error past `max_len`; structure by design (§4) | defined is not learned: at positions never seen in training it fails as well; its scale is fixed, so the tokens must be matched to it (§7) |
#
# **Common to both:** at positions 12-23, never seen in training, both score *below the model
# with no position at all* (0.169 and 0.141 against 0.211): a wrong position signal is worse
# than none, because it points confidently at the wrong rank. An *absolute* encoding ties what
# the model learns to the positions it saw. Encodings that depend only on the *distance*
# between tokens ([03 · RoPE](03_rope.ipynb), [05 · Relative biases](05_relative_biases.ipynb),
# [06 · Length extrapolation](06_length_extrapolation.ipynb)) attack that.

# %% [markdown]
# ## Summary
#
# - A learnable absolute encoding is a `(max_len, d)` parameter table looked up by position and
#   added to the token embeddings (GPT-2's `wpe`, BERT's `position_embeddings`); OpenAI drew
#   GPT-2's at std 0.01, half its tokens' 0.02 (§1).
# - Its initial scale must suit the tokens: a table that drowns them learns far more slowly
#   (§3), a smaller one costs little because it can grow, and small embeddings learn fastest.
# - Trained on sorting, the rows go from random to ordered by position (§4); rows that training
#   never reaches stay random and are used silently; from `max_len` on there is no row.
# - With the same tokens, the learned table and the sinusoid are not separated at any data size
#   (§6); at unseen positions both fall below the model with no position (§8).
# - The $\sqrt d$ factor matches Vaswani's $d^{-1/2}$ tokens to the sinusoid; on tokens already
#   at that scale it overshoots (§7). Check the ratio of token to position scale first.

# %% [markdown]
# ### Open-ended experiment · Does the 64-sequence verdict survive more seeds?
#
# **Question.** Section 6's narrowest result is the sinusoid's higher mean at 64 training
# sequences: more than one standard deviation, less than the series' rule asks. Is it a
# property of the two encodings, or of seeds 0, 1 and 2? And does the lead grow when data gets
# scarcer still?
#
# **A starting setup** (copy it into a new cell; each run takes a few seconds):
#
# ```python
# setups = [(name, SCHEMES[name], 64, seed)
#           for name in SCHEMES for seed in range(6)]
# acc = {name: [] for name in SCHEMES}
# for (name, *_), (model, row) in zip(setups, run_each(data_run, setups)):
#     acc[name].append(row["test accuracy"])
# print({name: mean_std(a) for name, a in acc.items()})
# print(compare(acc["sinusoidal"], acc["learnable"]))
# ```
#
# **What to look for.** Whether the standard deviations from six seeds are close to those from
# three, and whether the verdict holds; then the same at 32 and 128 sequences. A verdict that
# flips with the seeds is why the rule asks for a margin; a gap that grows as the data shrinks
# says the fixed table's built-in smoothness is worth most when there is little to learn from.

# %% [markdown]
# ## Exercises
#
# Each exercise ends in a code cell with a checker. Until you answer, it prints `[to do]`; a
# right answer prints `[passed]`, a wrong one `[not yet]` and a hint. Worked solutions are in
# the **Solutions** section at the end (folded in JupyterLab: the arrow beside its heading opens
# it, and a cell's bar shows its code).
#
# ### Exercise 1 · Predict, then run: shift the input by one position
# The model of section 4 sorts at 0.967 accuracy (§5) with the tokens at positions 0-11. Place the
# same tokens at positions 1-12 instead: rows 1-11 are trained, only row 12 is not. What test
# accuracy do you expect? Write it into `predicted_shift` (a number from 0 to 1), then run the
# cell after it.

# %%
predicted_shift = ...  # your prediction: the accuracy at positions 1-12

# %% tags=["exercise", "nbval-check-output"]
shift_acc = accuracy_at(learned, torch.arange(1, SEQ_LEN + 1)[None])
check_exercise_1(predicted_shift, shift_acc)

# %% [markdown]
# ### Exercise 2 · Explain why: past `max_len`, and past the training length
# A learnable table cannot be used at position `max_len`, while the sinusoid computes a vector
# for any position. Yet in section 8 *both* fail at positions 12-23, which no training sequence
# reached. Which statement explains both facts?
#
# - **(a)** The learnable table's rows past `max_len` would be zero vectors, which LayerNorm
#   cannot normalise; the sinusoid fails at 12-23 because its values there exceed 1.
# - **(b)** The sinusoid does generalise past the training length because its rows are smooth
#   and defined for every $p$; only the learnable table, which has no row there, fails.
# - **(c)** The table has no row from `max_len` on; the sinusoid has one, but the model only
#   learned what the vectors of positions 0-11 mean.
# - **(d)** Both fail because position ids beyond the training length overflow their integer
#   type and wrap round to rows the model has seen.

# %% tags=["exercise", "nbval-check-output"]
answer_2 = ...  # "a", "b", "c" or "d"
check_exercise_2(answer_2)

# %% [markdown]
# ### Exercise 3 · Extending a trained table
# To fine-tune on longer inputs you need rows beyond `max_len`. Random new rows start from
# nothing; Longformer (Beltagy et al., 2020) instead initialised its 4096-row table by *copying*
# RoBERTa's 512 trained rows over and over. Write `extend_by_copying(pe, new_max_len)` returning
# a **new** `LearnablePE` with `new_max_len` rows where row $p$ is `pe.weight[p % pe.max_len]`,
# trainable, sharing no memory with `pe` (which must stay unchanged).

# %% tags=["exercise", "nbval-check-output"]
def extend_by_copying(pe: LearnablePE, new_max_len: int) -> LearnablePE:
    raise NotImplementedError  # your code here


check_exercise_3(extend_by_copying)

# %% [markdown]
# ### Exercise 4 · Matching the scales
# You use `TinyTransformer(..., embed_scale=True)` with a `SinusoidalPE`. Which standard deviation
# $\sigma$ should the token embeddings be drawn with, so that after the multiplication by
# $\sqrt{d}$ a token row has the same *mean squared norm* as a sinusoidal row? Derive it with
# pencil first, then write `matched_token_std(d_model)` returning $\sigma$ as a Python float.
# (Hint: a row of $d$ entries of variance $\sigma^2 d$ has mean squared norm $\sigma^2 d^2$.)

# %% tags=["exercise", "nbval-check-output"]
def matched_token_std(d_model: int) -> float:
    raise NotImplementedError  # your code here


check_exercise_4(matched_token_std)

# %% [markdown]
# ## Further reading
#
# - Devlin et al., *[BERT](https://arxiv.org/abs/1810.04805)* (2019) and Radford et al.,
#   *[Language Models are Unsupervised Multitask Learners](https://cdn.openai.com/better-language-models/language_models_are_unsupervised_multitask_learners.pdf)*
#   (GPT-2, 2019): learned absolute position embeddings of 512 and 1024 rows.
# - OpenAI's GPT-2 code, [`src/model.py`](https://github.com/openai/gpt-2/blob/master/src/model.py):
#   `wpe` drawn with `stddev=0.01`, `wte` with `stddev=0.02`.
# - Hugging Face `transformers`: [`modeling_gpt2.py`](https://github.com/huggingface/transformers/blob/main/src/transformers/models/gpt2/modeling_gpt2.py)
#   (`self.wpe = nn.Embedding(...)`, added to `self.wte(input_ids)`; `_init_weights` draws every
#   embedding from $\mathcal N(0, 0.02^2)$, `initializer_range`) and
#   [`modeling_bert.py`](https://github.com/huggingface/transformers/blob/main/src/transformers/models/bert/modeling_bert.py)
#   (`BertEmbeddings.position_embeddings`).
# - Wang & Chen, *[What Do Position Embeddings Learn? An Empirical Study of Pre-Trained Language
#   Model Positional Encoding](https://arxiv.org/abs/2010.04903)* (EMNLP 2020): similarity
#   structure of BERT's and GPT-2's tables.
# - Beltagy et al., *[Longformer](https://arxiv.org/abs/2004.05150)* (2020), section 5: extending
#   a learned table by copying rows.
# - Dosovitskiy et al., *[An Image is Worth 16x16 Words](https://arxiv.org/abs/2010.11929)* (ViT,
#   2021): learned position embeddings for image patches
#   ([04 · Position in vision transformers](04_vision.ipynb)).
# - Vaswani et al., *[Attention Is All You Need](https://arxiv.org/abs/1706.03762)* (2017),
#   section 3.4: the $\sqrt{d_\text{model}}$ factor; tensor2tensor,
#   [`modalities.py`](https://github.com/tensorflow/tensor2tensor/blob/master/tensor2tensor/layers/modalities.py)
#   (`SymbolModality`): the embedding drawn from $\mathcal N(0, d^{-1})$; Press & Wolf,
#   *[Using the Output Embedding to Improve Language Models](https://arxiv.org/abs/1608.05859)*
#   (2017): weight tying.
# - `docs/replication.md`: the headline results of the papers this course teaches, beside the
#   numbers its notebooks measure at toy scale, whether they agree, and why not where they do not.

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ## Solutions
# One cell per exercise: each redefines the answer and runs its checker (so the notebook
# proves that every solution passes). Try the exercise first.

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
# Exercise 1. Row p was trained to mean "output rank p"; at positions 1-12
# every token is read one rank too high, so most answers move to the
# neighbouring rank: only runs of equal tokens stay right.
predicted_shift = 0.3
check_exercise_1(predicted_shift, shift_acc)

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
# Exercise 2. (a) no row exists to be zero; the sinusoid stays in [-1, 1];
# (b) section 8 measures it failing; (d) the ids are small int64 numbers.
answer_2 = "c"
check_exercise_2(answer_2)

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
# Exercise 3
def extend_by_copying(pe: LearnablePE, new_max_len: int) -> LearnablePE:
    longer = LearnablePE(pe.d_model, new_max_len, init_std=pe.init_std)
    with torch.no_grad():
        longer.weight.copy_(pe.weight[torch.arange(new_max_len) % pe.max_len])
    return longer


check_exercise_3(extend_by_copying)

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
# Exercise 4: sigma^2 * d^2 = d / 2   =>   sigma = 1 / sqrt(2 d)
def matched_token_std(d_model: int) -> float:
    return (2 * d_model) ** -0.5


check_exercise_4(matched_token_std)

# %% [markdown]
# ## End of notebook 02
# <!-- Keep this cell last. "Run All" ends on the last cell, and JupyterLab unfolds the section that
#      holds it: outside "Solutions", this heading leaves the solutions folded. -->

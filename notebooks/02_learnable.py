# %% [markdown]
# # 02 · Learnable absolute encoding
#
# **The question.** Notebook 01 *designed* a position table. Why not let the model learn its
# own? BERT (512 positions), GPT-2 (1024) and ViT did: a parameter table, one row per
# position, trained with the rest of the model. Nothing to design; the price is
# $L_\text{max} \cdot d$ parameters, a hard limit at $L_\text{max}$, and rows that learn only
# from the positions training reaches. This notebook measures each, next to the sinusoid.
#
# **What you will learn**
# - what a learnable table is, and how GPT-2 and BERT initialise it;
# - that its initial scale must suit the token embeddings it is added to;
# - what structure the rows acquire, and what happens at positions training never reached;
# - how it compares with the sinusoid beside floors, by the series' rule (introduced here);
# - why Vaswani et al. multiply token embeddings by $\sqrt{d_\text{model}}$.
#
# **Prerequisites:** [00 · Permutation blindness](00_permutation_blindness.ipynb) (why position is
# needed) and [01 · Sinusoidal encoding](01_sinusoidal.ipynb) (the fixed table we compare with).
#
# **Run time:** about 88 s on a laptop CPU (measured with `make execute`, one thread), timed on
# one core of a 2-core server. **Study time:** one lesson of about 90 minutes.

# %%
import itertools
import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from posenc_course.data import sorting_task
from posenc_course.floors import (
    bag_of_tokens,
    chance,
    fixed,
    majority,
    no_position,
    with_floors,
)
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
# $\sigma$ = `init_std` = 0.02 by default, the value Hugging Face's `_init_weights` uses for
# every embedding of GPT-2 and BERT (`initializer_range`). OpenAI's own GPT-2 code drew its
# position table `wpe` with standard deviation 0.01, half the 0.02 of its token table `wte`
# (`model.py`). In Hugging Face's GPT-2 the table is an `nn.Embedding`: a lookup.

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
# **Check.** Nothing links row $p$ to row $p+1$: at initialisation the rows are independent
# random vectors.

# %% [markdown]
# **Takeaway:**
# - a learnable encoding is a lookup table of $L_\text{max} \cdot d$ parameters;
# - it has no built-in notion of order or distance: everything it knows about positions comes
#   from training.

# %% [markdown]
# ## 2 · A task that needs absolute position: sorting
#
# **Question:** which task forces a model to know *where* each output is? Sorting: the input
# is 12 random tokens from a vocabulary of 16, the target at position $p$ the $p$-th smallest
# input token. Every position sees the same bag of tokens, so only the index $p$ says which
# rank to output.
#
# The model: `TinyTransformer` (2 layers, 2 heads, $d = 32$, one output per token). The
# learnable table has `max_len = 24` rows, twice the training length, room for longer inputs.

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
    """The model of run ``seed``, each part drawn from its own seed: the
    scheme from seed + 100, all else from seed, so two arms with the same
    seed share every weight but the scheme's. token_std: the token
    embeddings' std (None keeps nn.Embedding's default N(0, 1))."""
    seed_everything(seed + 100)
    scheme = make_scheme()  # a learnable table draws here, on its own seed
    seed_everything(seed)
    model = TinyTransformer(VOCAB, VOCAB, d_model=D_MODEL, n_heads=2,
                            n_layers=2, scheme=scheme, pool="none",
                            embed_scale=embed_scale)
    if token_std is not None:
        nn.init.normal_(model.embed.weight, std=token_std)
    return model


def shared_weights(a: TinyTransformer, b: TinyTransformer) -> bool:
    """Whether two models hold the same weights outside the scheme."""
    sa, sb = a.state_dict(), b.state_dict()
    return all(torch.equal(sa[k], sb[k]) for k in sa if "scheme" not in k)


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
# seeds each (weights and batches). `build` draws the table from its own seed, so within a
# seed the two tables are one draw, 50 times apart, and every other weight is the same. The
# floor is a model with no position, trained the same way.

# %% tags=["nbval-check-output"]
small, large = (build(lambda: LearnablePE(D_MODEL, MAX_LEN, init_std=s), 0.02)
                for s in (0.02, 1.0))
torch.testing.assert_close(large.scheme.weight, 50 * small.scheme.weight)
assert shared_weights(small, large)  # one draw x50; the rest shared

INIT_STEPS = 150


def init_run(setup: tuple) -> tuple[list, torch.Tensor | None]:
    """One run: the loss of every step, and the trained table
    (table std None: the floor, a model with no position)."""
    token_std, init_std, seed = setup
    make = NoPosition if init_std is None else (
        lambda: LearnablePE(D_MODEL, MAX_LEN, init_std=init_std))
    model = build(make, token_std, seed=seed)
    losses = train(model, (train_x, train_y), INIT_STEPS,
                   generator=batches(seed), desc=None)
    return losses, None if init_std is None else model.scheme.weight.detach()


# (token std, table std, seed), then the floor's runs
init_setups = list(itertools.product((0.02, 1.0), (0.02, 1.0), SEEDS))
none_setups = [(0.02, None, seed) for seed in SEEDS]
init_out = dict(zip(init_setups + none_setups, run_each(
    init_run, init_setups + none_setups, desc="token std x table std x seed")))
init_losses = {setup: init_out[setup][0] for setup in init_setups}
none_losses = [init_out[setup][0] for setup in none_setups]

fig, axes = plt.subplots(1, 2, figsize=(7.5, 3.4), sharey=True)
for ax, token_std in zip(axes, (0.02, 1.0)):
    curves = {}
    for s in (0.02, 1.0):
        runs_ = [init_losses[token_std, s, seed] for seed in SEEDS]
        curves[f"table init_std {s}"] = moving_average(np.mean(runs_, 0))
    curves["no position (floor)"] = moving_average(np.mean(none_losses, 0))
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
# "Mean loss" averages all 150 steps (lower = learned sooner), "final loss" the last 25; each a
# mean and standard deviation over the three seeds. The floor (in both panels) has tokens at 0.02.
#
# **The series' rule for comparing trained models.** Every later notebook uses this one rule and
# refers back here ("02 §3"). Each setting is trained with at least 3 seeds; A is *ahead* of B
# when the gap of their means, in A's favour, exceeds **twice the larger standard deviation**
# *and* a **floor**, the smallest effect worth a verdict. For an accuracy,
# $\bar a - \bar b > \max(2\max(s_a, s_b), f)$ with $f$ two points; for a loss or a perplexity,
# where lower is better, the gap is $\bar b - \bar a$ and $f$ is 2% of B's mean. When the two
# arms share each seed (section 6), the spread is twice the standard deviation of the per-seed
# differences. Otherwise A and B are **not separated**: three seeds cannot tell them apart,
# which never means "the same". `compare`
# prints the verdict as a sentence, with the gap and the bar it had to clear; `with_floors`
# applies it to a model and its floors. A cautious rule of thumb, not a significance test.

# %% tags=["nbval-check-output"]
per_run = init_runs.set_index(["tokens", "table"])
NAMES = {(0.02, 0.02): "matched 0.02/0.02", (1.0, 0.02): "small table 1/0.02",
         (1.0, 1.0): "matched 1/1", (0.02, 1.0): "drowning table 0.02/1"}


def loss_verdict(measure: str, a: tuple, b: tuple):
    """The series' rule on a loss (lower is better): setting a against b,
    each a (token std, table std) pair."""
    return compare(per_run.loc[a][measure].tolist(),
                   per_run.loc[b][measure].tolist(),
                   higher_is_better=False, relative=True,
                   names=(NAMES[a], NAMES[b]))


verdicts_3 = {(m, a, b): loss_verdict(m, a, b) for m, a, b in [
    ("mean loss", (0.02, 0.02), (0.02, 1.0)),
    ("mean loss", (1.0, 1.0), (0.02, 1.0)),
    ("mean loss", (0.02, 0.02), (1.0, 1.0)),
    ("mean loss", (1.0, 0.02), (1.0, 1.0)),
    ("final loss", (1.0, 0.02), (1.0, 1.0))]}
for (measure, *_), v in verdicts_3.items():
    print(f"{measure}: {v}")

floors_3 = [no_position([MEASURES["final loss"](l) for l in none_losses]),
            fixed("uniform guess", math.log(VOCAB), "ln 16")]
scored_3 = with_floors(
    {NAMES[k]: per_run.loc[k]["final loss"].tolist() for k in NAMES},
    floors_3, metric="final loss (nats)", higher_is_better=False,
    relative=True)

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
v = list(verdicts_3.values())
assert v[0].a_ahead and v[1].a_ahead and v[2].a_ahead, v
assert not v[3].separated and v[4].a_ahead, v
assert all(scored_3.beats(name) == [f.name for f in floors_3]
           for name in NAMES.values())
checked("the drowning table behind both matched pairs, 0.02/0.02 ahead of "
        "1/1, the small table not separated from 1/1 over the run and ahead "
        "at the end; every setting ahead of both floors")

# %% [markdown]
# **Reading the numbers.** All four settings end ahead of both floors: each learns position.
# - **The drowning table** (0.02/1) learns slowest (mean loss 1.879 against 0.925 for
#   0.02/0.02). The ratio costs, not the table's size: the same table over tokens at 1.0 learns
#   much sooner (1.358). One explanation, not tested here: a token 50 times smaller than its
#   position row is a 2% part of what every layer reads.
# - **A table 50 times smaller than the tokens** (1/0.02) is not separated from the matched 1/1
#   over the run, and ahead of it at the end (final loss 0.545 against 0.733). One explanation,
#   not tested here: a small table can grow towards the tokens.
# - **Small embeddings learn sooner:** 0.02/0.02 is ahead of 1/1. One explanation, not tested
#   here: AdamW moves each weight by about the learning rate per step whatever its size.
#
# From here on the table studied alone starts at 0.02/0.02.

# %% [markdown]
# **Takeaway:**
# - a table that drowns the tokens is the costly mistake; one smaller than the tokens is
#   slower over the first 50 steps, then catches up;
# - compare trained runs by the series' rule, beside their floors: a gap beyond twice the
#   larger spread and the floor; otherwise "not separated".

# %% [markdown]
# ## 4 · What the table learns
#
# **Question:** the rows start as independent random vectors. Does training give them any
# structure? We train one learnable model on the 2048 training sequences (seed 0, an
# illustration) and compare the cosine similarity of every pair of rows, $\cos(P[i], P[j])$,
# before and after, beside the sinusoidal table's designed structure.

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
# The dashed lines mark the training length: positions 0-11 were trained, 12-23 never. The
# table below gives, among the trained rows, the mean cosine of **neighbours** ($|i-j| = 1$)
# and of **far pairs** ($|i-j| \ge 6$). Two clusters, rows 0-5 and 6-11, would give the same
# two numbers, so a third column asks whether the rows lie *in order*: whether their first
# principal component (the direction in which they differ most) moves one way from row 0 to
# row 11. For this model and for section 3's three 0.02/0.02 tables.

# %% tags=["nbval-check-output"]
def neighbour_and_far(table: torch.Tensor, n: int = SEQ_LEN,
                      far: int = SEQ_LEN // 2) -> tuple[float, float, bool]:
    """Mean cosine of rows at distance 1 and at distance >= far, among
    the first n rows; whether their first principal component is monotone."""
    c = cosine_matrix(table[:n])
    distance = (torch.arange(n)[:, None] - torch.arange(n)[None, :]).abs()
    rows = table[:n] - table[:n].mean(dim=0)
    pc = torch.linalg.svd(rows, full_matrices=False)[0][:, 0]  # (n,)
    step = pc.diff()
    in_order = bool((step > 0).all() or (step < 0).all())
    return (c[distance == 1].mean().item(), c[distance >= far].mean().item(),
            in_order)


tables = [t for t, _ in panels] + [init_out[0.02, 0.02, s][1] for s in SEEDS]
structure = pd.DataFrame(
    [neighbour_and_far(t) for t in tables],
    index=["learnable, before", "learnable, after", "sinusoidal"]
    + [f"section 3, 0.02/0.02, seed {s}" for s in SEEDS],
    columns=["neighbours |i-j|=1", "far pairs |i-j|>=6", "in order"],
)
display(structure.round(3))
(nb_before, far_before, _), (nb_after, far_after, _) = structure.iloc[:2].values
assert abs(nb_before) < 0.15 and abs(far_before) < 0.15  # nearly orthogonal
assert nb_after > 0.5 and far_after < 0.0  # neighbours alike, far pairs apart
seeds_3 = structure.iloc[3:]
assert ((seeds_3.iloc[:, 0] > seeds_3.iloc[:, 1] + 0.1).all()  # every seed
        and structure["in order"].iloc[[1, 3, 4, 5]].all())  # trained tables

# %% [markdown]
# **Check.** Before training, all pairs are nearly orthogonal (random vectors in 32 dimensions).
# After training on sorting, neighbouring rows are alike (0.761) and far pairs lean apart
# (-0.392; opposite would be -1), and the first principal component runs through the rows in
# order: the rows lie in order of position, a band around the diagonal like the sinusoid's, and
# so do the tables of section 3's three seeds. (The sinusoid spreads its order over several
# components; its first one turns back after row 1.) The untrained corner
# (rows 12-23) is still noise. Nobody told the table that position 5 lies between 4 and 6. One
# explanation, which this notebook does not test: neighbouring ranks of a sorted sequence often
# hold the same token, so similar rows serve them.

# %% [markdown]
# **Takeaway:**
# - a learned table acquires an ordered geometry: neighbouring positions alike, the rows in
#   order along one direction;
# - rows that no training sequence reaches keep their random start.

# %% [markdown]
# ## 5 · Positions the table never saw, and the choice of `max_len`
#
# **Question:** what does the model do at positions it was never trained on: rows 12-23, which
# no training sequence reached, and positions from `max_len` on, which have no row?
#
# A row receives gradient only when its position occurs in a batch. With plain AdamW (no weight
# decay, as here) a row without gradient never moves: rows 12-23 are *exactly* their random
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
# set, with the tokens placed at positions 12-23 instead of 0-11.

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
# From position `max_len` on, the table has no row. `LearnablePE` refuses with a message that
# says what to do; a bare `nn.Embedding` raises an `IndexError` with no hint.

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
# that stay random unless training reaches them and give wrong answers silently. To go longer
# later, extend the table and train further (exercise 3: how should the new rows start?).

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
# 64), three seeds each, and measure training and test accuracy per token. The tokens are
# PyTorch's $\mathcal N(0, 1)$, at the sinusoid's scale (section 7); the table starts at 0.02,
# section 3's small table. Within a seed the two arms share the batches and every weight but
# the position table, so the comparison is paired.

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
# **Check.** Error bars: one standard deviation over the three seeds. First the floors, on the
# same test sequences: the model without position, trained the same way on 2048 sequences; the
# best rule that sees the bag of input tokens but no position (answer the most frequent input
# token everywhere); the opposite, a rule that sees the position but no token (answer at each
# position the target most frequent there in training: small tokens first); always the label
# most frequent in training; and chance, 1 in 16.

# %% tags=["nbval-check-output"]
per_size = runs.set_index(["encoding", "training sequences"])["test accuracy"]


def test_acc(name: str, n: int) -> list[float]:
    """Each seed's test accuracy: encoding ``name``, ``n`` sequences."""
    return per_size.loc[(name, n)].tolist()


by_position = torch.stack([torch.bincount(train_y[:, p], minlength=VOCAB)
                           .argmax() for p in range(SEQ_LEN)])  # (SEQ_LEN,)
floors_6 = [no_position(test_acc("none", 2048)),
            bag_of_tokens(test_x, test_y, sees="all"),
            fixed("position only",
                  (test_y == by_position).float().mean().item(),
                  "most frequent target at each position"),
            majority(train_y, test_y), chance(VOCAB)]
scored = with_floors({f"{name}, {n} seq.": test_acc(name, n)
                      for name in SCHEMES for n in SIZES},
                     floors_6, metric="test accuracy per token")

# %% [markdown]
# Then the learnable table against the sinusoid at each data size, by the series' rule on the
# paired runs (the gap is the mean of the per-seed differences):

# %% tags=["nbval-check-output"]
verdict = {n: compare(test_acc("learnable", n), test_acc("sinusoidal", n),
                      paired=True, names=("learnable", "sinusoidal"))
           for n in SIZES}
for n in SIZES:
    print(f"{n:4d} sequences: {verdict[n]}")


@torch.no_grad()
def sorted_whole(model: TinyTransformer) -> float:
    """The fraction of test sequences with all 12 tokens right."""
    right = model(test_x).argmax(-1) == test_y  # (n, SEQ_LEN)
    return right.all(dim=1).float().mean().item()


for name in SCHEMES:
    whole = [sorted_whole(models[name, 2048, seed]) for seed in SEEDS]
    print(f"{name}, 2048 sequences: whole test sequences sorted "
          f"{mean_std(whole)}")

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
mean = runs.groupby(["encoding", "training sequences"]).mean(numeric_only=True)
for seed in SEEDS:  # the pairing: every weight but the table's
    assert shared_weights(*(build(SCHEMES[name], None, seed=seed)
                            for name in SCHEMES))
for name in SCHEMES:
    small, large = mean.loc[(name, 64)], mean.loc[(name, 2048)]
    assert small["train accuracy"] > 0.95 and small["gap"] > 0.2  # memorised
    assert large["test accuracy"] > 0.9 and large["gap"] < 0.03
    assert compare(test_acc(name, 256), test_acc(name, 64)).a_ahead
    assert compare(test_acc(name, 2048), test_acc(name, 256)).a_ahead
    for n in SIZES:
        assert scored.beats(f"{name}, {n} seq.") == [f.name for f in floors_6]
assert not any(verdict[n].separated for n in SIZES)
assert mean.loc[("none", 2048), "test accuracy"] < 0.4
checked("both encodings memorise 64 sequences and pass 0.9 per token on "
        "2048, more data "
        "ahead at each step, every arm ahead of every floor, the two encodings "
        "not separated at any size; the arms share every weight but the table's")

# %% [markdown]
# **Reading the numbers.**
# - **Floors.** Every arm, even on 64 sequences, is ahead of all five floors, among them the
#   model without position (0.211), the bag-of-tokens rule (0.213) and the position-only rule
#   (0.270).
# - **Overfitting.** On 64 sequences both memorise the training set and get about half the test
#   tokens right. The sinusoid has no trainable table and overfits as much: the model memorises,
#   not the table. 2048 sequences close the gap, per token. A sequence is sorted only when all
#   12 tokens are right: that holds for about half the test sequences (0.527 and 0.474).
# - **Data needed.** The rule separates the encodings at no size. At 64 the sinusoid's mean is
#   higher by 0.025, short of the 0.056 needed: not separated, which is not "the same". That a
#   learned table needs much more data does not show here. One explanation, not tested here:
#   every sequence has 12 tokens, so every row is trained by every sequence.
# - **The paper agrees.** Vaswani et al. tried this swap in translation (Table 3, row E):
#   "nearly identical results" (BLEU 25.7 against 25.8, perplexity 4.92 for both). They kept the
#   sinusoid because it "may allow the model to extrapolate" to longer sequences (§3.5).

# %% [markdown]
# **Takeaway:**
# - with the same tokens, three paired seeds separate the learned table from the sinusoid at
#   no data size, as Vaswani et al. found for translation;
# - on little data both memorise: the model overfits, not the table.

# %% [markdown]
# ## 7 · Why multiply token embeddings by $\sqrt{d_\text{model}}$?
#
# **Question:** Vaswani et al. write "in the embedding layers, we multiply those weights by
# $\sqrt{d_\text{model}}$" (§3.4), and give no reason. One plausible reason, explored here:
# token and position vectors are added, so they should start at comparable sizes (section 3).
# (The sinusoid's size is fixed, so this experiment cannot tell the ratio from the tokens' own
# size; rescaling the sinusoid with the tokens fixed would. It is a hypothesis here.)
# A sinusoidal row has squared norm exactly $d/2$ (each sin/cos pair gives
# $\sin^2 + \cos^2 = 1$); their code (tensor2tensor) draws tokens with standard deviation
# $d^{-1/2}$, rows of norm about 1, which $\sqrt d$ brings to entries of size 1. Another: the
# same paragraph ties the token matrix to the output layer, and the factor restores the scale
# at the input (this model's output layer is not tied, so it cannot test that).
#
# The experiment: a sinusoidal model with three token initialisations, each with and without the
# factor (`embed_scale=True`), three seeds each, beside a model with no position. We measure the
# token rows' norm, its ratio to the sinusoidal row's, and the mean training loss over 60 steps.

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
    (init_name, token_std), embed_scale, seed, make_scheme = setup
    model = build(make_scheme, token_std, embed_scale, seed=seed)
    token_norm = (model.embed.weight * model.embed_scale).norm(dim=1)
    losses = train(model, (train_x, train_y), SCALE_STEPS, lr=LR,
                   generator=batches(seed), desc=None)
    return {"token init": init_name, "embed_scale": embed_scale,
            "seed": seed, "token row norm": token_norm.mean().item(),
            "token / position norm": token_norm.mean().item() / sin_norm,
            "mean loss": np.mean(losses)}


sinusoid = SCHEMES["sinusoidal"]
scale_setups = [(init, scaled, seed, sinusoid) for init, scaled, seed
                in itertools.product(inits.items(), (False, True), SEEDS)]
none_setups = [(list(inits.items())[0], False, seed, NoPosition)
               for seed in SEEDS]
out_7 = run_each(scale_run, scale_setups + none_setups,
                 desc="token init x embed_scale x seed")
scale_runs = pd.DataFrame(out_7[:len(scale_setups)])
by_setup = scale_runs.groupby(["token init", "embed_scale"], sort=False)
scales = by_setup[["token row norm", "token / position norm"]].mean()
print(f"sinusoidal row norm: {sin_norm:.3f} = sqrt(d/2)")
scales.round(3)

# %% [markdown]
# **Check.** With $d = 32$, Vaswani's tokens have row norm about 1 unscaled and about
# $\sqrt{32} \approx 5.7$ scaled, next to the sinusoid's $\sqrt{16} = 4$: the factor is what
# makes them match. PyTorch's default $\mathcal N(0, 1)$ is *already* at that scale; multiplied
# by $\sqrt d$ again, the tokens are 8 times larger than the sinusoid. The mean loss of each
# setting, beside the floors, then the comparisons the text makes, by the series' rule:

# %% tags=["nbval-check-output"]
ratio = scales["token / position norm"]
per_setup = scale_runs.set_index(["token init", "embed_scale"])["mean loss"]
default, vaswani, gpt2 = inits
SHORT = {default: "PyTorch's", vaswani: "Vaswani's", gpt2: "GPT-2's"}


def label(setup: tuple) -> str:
    init, scaled = setup
    return f"{SHORT[init]} tokens" + (" x sqrt(d)" if scaled else "")


scored_7 = with_floors(
    {label(s): per_setup.loc[s].tolist() for s in ratio.index},
    [no_position([r["mean loss"] for r in out_7[len(scale_setups):]]),
     fixed("uniform guess", math.log(VOCAB), "ln 16")],
    metric="mean loss, 60 steps (nats)", higher_is_better=False,
    relative=True)


def faster(a: tuple, b: tuple):
    """The series' rule on the mean loss: does setup a learn sooner than b?"""
    return compare(per_setup.loc[a].tolist(), per_setup.loc[b].tolist(),
                   higher_is_better=False, relative=True,
                   names=(label(a), label(b)))


matched = ratio.between(0.5, 2)
extreme = (ratio > 5) | (ratio < 0.05)
(m1, m2), slow = list(ratio[matched].index), list(ratio[extreme].index)
print(faster(m1, m2))
print(faster((gpt2, True), (vaswani, False)))

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
overshoot = label((default, True))
assert not scored_7.verdict(overshoot, "no position").a_ahead
assert all(scored_7.beats(label(s)) == ["no position", "uniform guess"]
           for s in ratio.index if s != (default, True))
checked("the factor matches Vaswani's tokens and overshoots PyTorch's default; "
        "the two matched runs not separated; both extreme mismatches behind "
        "every other run, the overshoot not ahead of no position; ratio 0.16 "
        "ahead of ratio 0.25; every other run ahead of both floors")

# %% [markdown]
# The two runs whose tokens match the sinusoid (ratio about 1.4, one with the factor, one
# without) are not separated. The two extreme mismatches (tokens 8 times larger, or 35 times
# smaller, than the position rows) are behind every other run, the first by far (2.571): over
# these 60 steps it is not even ahead of the model with no position (2.520). Every other run
# is ahead of both floors. In between, the ratio alone does not order the runs: GPT-2's tokens
# with the factor (ratio 0.16) learned sooner than Vaswani's without it (ratio 0.25). One
# explanation, which this notebook does not test: the factor also multiplies every update of
# the tokens by $\sqrt d$, so scaled tokens grow towards the sinusoid's size sooner.

# %% [markdown]
# **Takeaway:**
# - $\sqrt{d}$ is not a property of positional encodings; it fits one initialisation of the
#   token embeddings (std $d^{-1/2}$), and matching the scales is one explanation for it;
# - a fixed table's scale cannot move: match the tokens to it, and check the ratio first,
#   though it does not order every run.

# %% [markdown]
# ## 8 · Pros and cons, measured
#
# Our copy of the source article, the Chinese tutorial
# 《Transformer位置编码原理与实现：从正弦编码到RoPE》, has nothing under its heading
# 「优点与缺点分析：」 ("pros and cons", §3.2), probably a table lost in copying (erratum E2).
# Here is one, with section 6's models (three seeds each) and their accuracy at positions 12-23
# beside section 6's floors.

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


display(pd.DataFrame({name: row(name) for name in SCHEMES}))
unseen = with_floors({f"{name} at 12-23": unseen_acc(name) for name in SCHEMES},
                     floors_6, metric="test accuracy per token")

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
for name in SCHEMES:
    assert unseen.verdict(f"{name} at 12-23", "no position").b_ahead
    assert max(unseen_acc(name)) < 0.5 * min(test_acc(name, 2048))
assert past_max_len("learnable").startswith("ValueError")
checked("at positions 12-23 both encodings fall below half their accuracy at "
        "0-11, and behind the model without position by the rule")

# %% [markdown]
# | | pros (measured above) | cons (measured above) |
# |---|---|---|
# | **learnable** | learns an ordered geometry (§4); not separated from the sinusoid at any data size (§6); an `nn.Embedding` | $L_\text{max} \cdot d$ parameters (768 here); untrained rows give wrong answers *silently* (§5); no row from `max_len` on; its initial scale must suit the tokens (§3) |
# | **sinusoidal** | no parameters; a vector at every position, so no error past `max_len` | defined is not learned: at shifted positions 12-23 it fails too (§8, exercise 2); its scale is fixed, so the tokens must match it (§7) |
#
# **Common to both:** at positions 12-23, never seen in training, both are *behind the model with
# no position at all* (0.169 and 0.141 against 0.211): a wrong position signal is worse than
# none. Read it with care: exercise 2 asks what this shifted test does, and does not, show.
# Encodings that depend only on the *distance* between tokens
# ([03 · RoPE](03_rope.ipynb), [05 · Relative biases](05_relative_biases.ipynb),
# [06 · Length extrapolation](06_length_extrapolation.ipynb)) do not tie the answer to where
# the sequence starts.

# %% [markdown]
# ## Summary
#
# - A learnable absolute encoding is a `(max_len, d)` parameter table looked up by position and
#   added to the token embeddings (GPT-2's `wpe`, BERT's `position_embeddings`) (§1).
# - Its initial scale must suit the tokens: a table that drowns them learns far more slowly;
#   a smaller one starts slower and catches up (§3).
# - Trained on sorting, the rows become ordered by position (§4); rows training never reaches
#   stay random and are used silently; from `max_len` on there is no row (§5).
# - With the same tokens, the learned table and the sinusoid are not separated at any data size,
#   both far ahead of the floors (§6); at shifted positions both fall behind no position (§8).
# - $\sqrt d$ matches Vaswani's $d^{-1/2}$ tokens to the sinusoid and overshoots on tokens
#   already at that scale (§7): check the ratio of token to position scale first.

# %% [markdown]
# ### Open-ended experiment · Does the 64-sequence verdict survive more seeds?
#
# **Question.** Section 6's narrowest result is the sinusoid's higher mean at 64 training
# sequences, short of what the rule asks. A property of the encodings, or of seeds 0-2? Does
# the lead grow when data gets scarcer still?
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
# print(compare(acc["sinusoidal"], acc["learnable"], paired=True,
#               names=("sinusoidal", "learnable")))
# ```
#
# **What to look for.** Whether six seeds' spread matches three's and the verdict holds; then
# 32 and 128 sequences. A gap that grows as data shrinks would suggest the fixed table's
# built-in smoothness is worth most when there is little to learn from.

# %% [markdown]
# ## Exercises
#
# Each exercise ends in a code cell with a checker. Until you answer, it prints `[to do]`; a
# right answer prints `[passed]`, a wrong one `[not yet]` and a hint. Worked solutions are in
# the **Solutions** section at the end (folded in JupyterLab: the arrow beside its heading opens
# it, and a cell's bar shows its code).
#
# ### Exercise 1 · Predict, then run: shift the input by one position
# The model of section 4 gets 0.958 of the test tokens right (§5) at positions 0-11. Place the
# same tokens at positions 1-12 instead: rows 1-11 are trained, only row 12 is not. What test
# accuracy do you expect? Write it into `predicted_shift` (a number from 0 to 1), then run the
# cell after it.

# %%
predicted_shift = ...  # your prediction: the accuracy at positions 1-12

# %% tags=["exercise", "nbval-check-output"]
shift_acc = accuracy_at(learned, torch.arange(1, SEQ_LEN + 1)[None])
check_exercise_1(predicted_shift, shift_acc)

# %% [markdown]
# ### Exercise 2 · Explain why: what the shifted test shows
# Section 8 places the test inputs at positions 12-23, which no training sequence reached,
# and both encodings fall behind the model with no position. What does this test show?
#
# - **(a)** Neither encoding extrapolates in length: on inputs of 24 tokens both would fail
#   the same way at positions 12-23.
# - **(b)** Both models read each rank off the absolute index, so even a perfect reading of
#   positions 12-23 gives wrong ranks.
# - **(c)** Rows 12-23 of the learnable table are random, and the sinusoid's vectors at 12-23
#   are too small for the model to notice.
# - **(d)** Neither model learned to sort: each memorised which token stands at which position
#   in the training sequences.

# %% tags=["exercise", "nbval-check-output"]
answer_2 = ...  # "a", "b", "c" or "d"
check_exercise_2(answer_2)

# %% [markdown]
# ### Exercise 3 · Design: new rows for a longer table
# To fine-tune on longer inputs you need rows beyond `max_len`. Section 5 showed what random
# rows do. Design `extend_table(pe, new_max_len)`: it returns a **new**, trainable `LearnablePE`
# with `new_max_len` rows, leaves `pe` unchanged and shares no memory with it, keeps the
# trained rows as they are, and starts the new rows so that fine-tuning begins from something
# like a trained table: each new row at the scale of the trained rows, neighbouring new rows
# alike (mean cosine at least 0.5) but not equal, and the first new row alike to the last
# trained one (cosine at least 0.5), so the table does not jump at the join. Any design with
# these properties passes; the checker tests them on tables shaped like a trained one.

# %% tags=["exercise", "nbval-check-output"]
def extend_table(pe: LearnablePE, new_max_len: int) -> LearnablePE:
    raise NotImplementedError  # your code here


check_exercise_3(extend_table)


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
#   Model Positional Encoding](https://arxiv.org/abs/2010.04903)* (EMNLP 2020): whether the
#   position tables of pre-trained models such as BERT and GPT-2 learn the meaning of positions
#   (its code, [MiuLab/PE-Study](https://github.com/MiuLab/PE-Study), fits regressions of absolute
#   and relative position on the tables), and how the choice of table affects tasks.
# - Beltagy et al., *[Longformer](https://arxiv.org/abs/2004.05150)* (2020), section 5: extending
#   a learned table by copying rows (exercise 3 asks what happens at the join).
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
# Exercise 2. (a) the inputs keep their length, only their positions move;
# (c) a sinusoidal row has the same norm everywhere; (d) both sort unseen
# sequences at 0.95 per token (section 6).
answer_2 = "b"
check_exercise_2(answer_2)

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
# Exercise 3. One design: walk back and forth through the trained rows
# (0, 1, ..., L-1, L-2, ..., 1, 0, 1, ...): trained scale, trained order,
# and row L repeats row L-2, a neighbour of row L-1. Longformer (Beltagy et
# al., 2020, section 5) copied RoBERTa's 512 rows over and over instead,
# which puts row 0 right after row 511: the join this checker rejects.
def extend_table(pe: LearnablePE, new_max_len: int) -> LearnablePE:
    L = pe.max_len
    walk = torch.cat([torch.arange(L), torch.arange(L - 2, 0, -1)])
    longer = LearnablePE(pe.d_model, new_max_len, init_std=pe.init_std)
    with torch.no_grad():
        rows = walk[torch.arange(new_max_len) % len(walk)]
        longer.weight.copy_(pe.weight[rows])
    return longer


check_exercise_3(extend_table)

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
# Exercise 4: sigma^2 * d^2 = d / 2   =>   sigma = 1 / sqrt(2 d)
def matched_token_std(d_model: int) -> float:
    return (2 * d_model) ** -0.5


check_exercise_4(matched_token_std)

# %% [markdown]
# ## End of notebook 02
# <!-- Keep this cell last. "Run All" ends on the last cell, and JupyterLab unfolds the section that
#      holds it: outside "Solutions", this heading leaves the solutions folded. -->

# %% [markdown]
# # 07 · Debugging and practice
#
# A broken positional encoding rarely crashes: the accuracy is a little worse than it should
# be, or fine in training and wrong in batched generation. This notebook turns the series into
# checks (`posenc_lib.analysis.probes`, for your own models) and a zoo of bugs, each
# reproduced, measured and caught.
#
# **What you will learn**
# - the **position probe**: *absolute*, *relative* or *none*, and what a start token and the
#   causal mask add; the source article's version, run (erratum E7 of
#   《Transformer位置编码原理与实现：从正弦编码到RoPE》);
# - a **gradient check** that catches a detached learnable table;
# - **attention maps** with position working, and lost;
# - **padding**: left padding needs position ids from the mask (`cumsum - 1`) for absolute
#   encodings (erratum E6); relative schemes are immune, except under dynamic NTK;
# - a **bug zoo** of seven common bugs, and a one-page checklist.
#
# **Prerequisites:** [00 · Permutation blindness](00_permutation_blindness.ipynb),
# [02 · Learnable absolute encoding](02_learnable.ipynb), [03 · RoPE](03_rope.ipynb),
# [05 · Relative biases](05_relative_biases.ipynb) and, for section 4's dynamic NTK,
# [06 · Length extrapolation](06_length_extrapolation.ipynb).
#
# **Run time:** about 80 s on a laptop CPU (measured with `make execute`, one thread), most of it
# in section 1's probes and eighteen small decoders.

# %%
import copy
import itertools

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn
from torch.testing import assert_close

from posenc_course.data import lag_task
from posenc_course.exercises.nb07 import (
    check_exercise_1,
    check_exercise_2,
    check_exercise_3,
    check_exercise_4,
    check_exercise_5,
)
from posenc_course.plotting import COLORS, heatmap
from posenc_course import floors
from posenc_course.report import checked, clearly_ahead, compare, mean_std
from posenc_course.training import (
    accuracy,
    cross_entropy,
    progress,
    run_each,
    seed_everything,
    setup_notebook,
    train,
)
from posenc_lib.analysis.probes import (
    permutation_sensitivity,
    position_ids_from_mask,
    position_probe,
    row_gradient_norms,
    shift_sensitivity,
)
from posenc_lib.embeddings.learnable import LearnablePE
from posenc_lib.embeddings.sinusoidal import SinusoidalPE
from posenc_lib.models import (
    TinyTransformer,
    last_token_logits_two_ways,
    with_scheme,
)
from posenc_lib.registry import build_scheme
from posenc_lib.rotary.rope import RotaryPE, convert_rope_checkpoint
from posenc_lib.scheme import NoPosition

gen = setup_notebook(0)
pd.set_option("display.width", 120)

D_MODEL, N_HEADS, HEAD_DIM = 32, 2, 16
SIZES = {"d_model": D_MODEL, "n_heads": N_HEADS, "max_len": 128}
# every 1-D scheme of the library, for an encoder (causal=False) or a decoder
SCHEMES = {
    "NoPosition": lambda causal: build_scheme("none", **SIZES),
    "SinusoidalPE": lambda causal: build_scheme("sinusoidal", **SIZES),
    "LearnablePE": lambda causal: build_scheme("learnable", **SIZES),
    "RotaryPE": lambda causal: build_scheme("rope", **SIZES),
    "T5RelativeBias": lambda causal: build_scheme(
        "t5", **SIZES, bidirectional=not causal
    ),
    "ALiBi": lambda causal: build_scheme("alibi", **SIZES, causal=causal),
}


def make(scheme, causal: bool, seed: int = 0) -> TinyTransformer:
    """A seeded 1-layer TinyTransformer, 16 tokens, 16 outputs per token."""
    seed_everything(seed)
    return TinyTransformer(
        16,
        16,
        d_model=D_MODEL,
        n_heads=N_HEADS,
        n_layers=1,
        scheme=scheme,
        causal=causal,
        pool="none",
    )


def build(name: str, causal: bool, seed: int = 0) -> TinyTransformer:
    """``make`` with the scheme ``name`` of SCHEMES, built after seeding."""
    seed_everything(seed)
    return make(SCHEMES[name](causal), causal, seed)


# %% [markdown]
# ## 1 · The position probe: who gets absolute position?
#
# **Question:** after adding a positional encoding, how do you know the model can *use* it? The
# probe (`probe` below, `position_probe` written out) feeds 16 copies of one token and trains
# the model for 100 steps to output each index $0, \dots, 15$: what it gets right comes from
# position.
#
# What to expect. With identical tokens every value vector is the same, so attention returns
# that vector whatever its weights: a scheme that only *reweights* attention (RoPE, T5, ALiBi)
# gives every token the same output, and the probe stays at chance, $1/16$, **exactly**. Only a
# vector *added* to the embeddings (sinusoidal, learnable) makes the tokens differ. A variant
# puts one distinct token at index 0, like a BOS token. In a decoder the causal mask then lets
# token $i$ see $i+1$ keys: with equal weights it puts $1/(i+1)$ on the one distinct value, a
# share that differs at every position.
#
# Three checks on untrained models: does the output change when the scheme is removed, same
# weights (`with_scheme(model, NoPosition())`), when all positions move by 50
# (`shift_sensitivity`), when the tokens are shuffled (`permutation_sensitivity`, notebook 00,
# outputs put back in place)? Rounding level means "no".

# %% tags=["nbval-check-output"]
PROBE_LEN, SEEDS = 16, (0, 1, 2)
MORE_SEEDS = tuple(range(10))  # where three seeds spread widely


def probe(model: TinyTransformer, start_token: bool = False) -> float:
    """Train on identical tokens to output each index; return the accuracy."""
    tokens = torch.zeros(1, PROBE_LEN, dtype=torch.long)  # token 0 everywhere
    targets = torch.arange(PROBE_LEN)[None].clone()  # target: the index
    if start_token:  # a distinct token 1 at index 0, not scored
        tokens[0, 0], targets[0, 0] = 1, -100
    train(model, (tokens, targets), 100, lr=1e-2, batch_size=1, desc=None)
    with torch.no_grad():
        predicted = model(tokens).argmax(-1)
    scored = targets != -100
    return (predicted[scored] == targets[scored]).float().mean().item()


def probe_run(setup: tuple) -> float:
    """Probe accuracy: one scheme, encoder/decoder, start token or not, seed."""
    name, causal, start_token, seed = setup
    return probe(build(name, causal, seed), start_token=start_token)


WIDE = [("RotaryPE", False), ("T5RelativeBias", False), ("ALiBi", False),
        ("T5RelativeBias", True)]  # (scheme, causal), with a start token
probe_setups = list(
    itertools.product(SCHEMES, (False, True), (False, True), SEEDS)
) + [
    (name, causal, True, seed)
    for name, causal in WIDE
    for seed in MORE_SEEDS[len(SEEDS):]
]
# side by side (02 §3)
accuracies = run_each(
    probe_run,
    probe_setups,
    desc="scheme x encoder/decoder x start token x seed",
)
probes = pd.DataFrame([
    {
        "scheme": name,
        "model": "decoder" if causal else "encoder",
        "start token": start_token,
        "seed": seed,
        "accuracy": acc,
    }
    for (name, causal, start_token, seed), acc in zip(probe_setups, accuracies)
])

# %%
words = torch.randint(0, 16, (4, PROBE_LEN), generator=gen)
structure = {}
for name in SCHEMES:
    for causal in (False, True):
        model = build(name, causal, seed=0).eval()
        with torch.no_grad():  # the same weights without the scheme
            removed = with_scheme(model, NoPosition())(words) - model(words)
        structure[name, "decoder" if causal else "encoder"] = {
            "scheme matters": removed.abs().max().item(),
            "order matters": permutation_sensitivity(model, words),
            "shift by 50 matters": shift_sensitivity(model, words, 50),
        }


# %%
def verdict(row: pd.Series) -> str:
    """What the scheme gives the model by itself, measured in the table."""
    if row["probe"] > 0.9:
        return "absolute"
    if row["scheme matters"] < 1e-4:  # removing it changes nothing
        # order without any position: the causal mask
        return "none" if row["order matters"] < 1e-4 else "none (mask: order)"
    # the scheme changes the outputs, a common shift does not
    return "relative" if row["shift by 50 matters"] < 1e-4 else "unclear"


stats = probes.groupby(["scheme", "model", "start token"], sort=False)[
    "accuracy"
]
means = stats.mean().unstack("start token")
summary = pd.DataFrame(structure).T
summary.index.names = ["scheme", "model"]
summary["probe"] = means[False]
summary["probe, start token"] = means[True]
summary["verdict"] = summary.apply(verdict, axis=1)
shown = summary.copy()
# 2 decimals
spread = stats.agg(lambda runs: mean_std(runs, digits=2)).unstack("start token")
shown["probe"], shown["probe, start token"] = spread[False], spread[True]
for column in ("scheme matters", "order matters", "shift by 50 matters"):
    shown[column] = [
        f"{v:.1e}" if v > 1e-4 else "< 1e-4" for v in summary[column]
    ]
print(
    f"probe accuracy, mean ± std over {len(SEEDS)} seeds ({len(MORE_SEEDS)}"
    " for the relative encoders and the T5 decoder with a start token);"
    " chance ="
    f" 1/{PROBE_LEN} = {1 / PROBE_LEN:.4f} (1/{PROBE_LEN - 1} ="
    f" {1 / (PROBE_LEN - 1):.4f} with a start token)"
)
print(
    "scheme, order, shift by 50 matters: max |logit change| of an untrained"
    " model when the scheme is removed, the tokens shuffled, the positions"
    " shifted (< 1e-4: rounding only)"
)
shown

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
acc = probes.set_index(["scheme", "model", "start token"])["accuracy"]
for (name, where), row in summary.iterrows():
    if name in ("SinusoidalPE", "LearnablePE"):
        assert (acc[name, where, False] == 1.0).all() and row[
            "shift by 50 matters"
        ] > 1e-3
        assert row["verdict"] == "absolute"
    else:  # identical tokens -> identical outputs: chance exactly, on every seed
        assert np.allclose(acc[name, where, False], 1 / PROBE_LEN)
        # only differences of positions matter
        assert row["shift by 50 matters"] < 1e-4
assert summary.loc[("NoPosition", "encoder"), "verdict"] == "none"
assert summary.loc[("NoPosition", "encoder"), "order matters"] < 1e-5
# every scheme changes the outputs of its untrained model; no position changes nothing
none = summary.index.get_level_values("scheme") == "NoPosition"
assert (summary["scheme matters"][~none] > 1e-3).all()
assert (summary["scheme matters"][none] < 1e-4).all()
# a RoPE that rotates nothing (every position id 0) fails the measured check
rope_decoder = build("RotaryPE", causal=True).eval()
with torch.no_grad():
    rotates_nothing = rope_decoder(words, positions=torch.zeros_like(words))
    rotates_nothing -= with_scheme(rope_decoder, NoPosition())(words)
assert rotates_nothing.abs().max() < 1e-4  # its verdict: "none (mask: order)"
# a start token does not help
assert np.allclose(acc["NoPosition", "encoder", True], 1 / (PROBE_LEN - 1))
# Orderings of trained probes use the series' rule (02 §3); a model at chance on every seed
# (NoPosition encoder with a start token, any relative scheme without one) is the reference.
at_chance = acc["NoPosition", "encoder", True].tolist()
assert summary.loc[("NoPosition", "decoder"), "verdict"] == "none (mask: order)"
for name in ("NoPosition", "RotaryPE", "T5RelativeBias", "ALiBi"):
    runs = acc[name, "decoder", True]  # with a start token: absolute position
    assert (
        clearly_ahead(runs.tolist(), acc[name, "decoder", False].tolist())
        and runs.min() > 0.5
    ), (name, runs.tolist())
for name in ("RotaryPE", "T5RelativeBias", "ALiBi"):
    assert summary.loc[(name, "encoder"), "verdict"] == "relative"
    assert summary.loc[(name, "decoder"), "verdict"] == "relative"
    assert len(acc[name, "encoder", True]) == len(MORE_SEEDS)
assert len(acc["T5RelativeBias", "decoder", True]) == len(MORE_SEEDS)
# encoder + start token: RoPE learns it
assert clearly_ahead(acc["RotaryPE", "encoder", True].tolist(), at_chance)
# T5 and ALiBi encoders: some seeds at chance or near it, others far above
for name in ("T5RelativeBias", "ALiBi"):
    runs = acc[name, "encoder", True]
    assert runs.min() < 0.35 and runs.max() > 0.5, (name, runs.tolist())
# the probe written out above is the library's position_probe, run for run
for name, causal, start in (("LearnablePE", False, False), ("RotaryPE", True, True)):
    library = position_probe(build(name, causal), PROBE_LEN, start_token=start)
    assert probe(build(name, causal), start) == library, (name, library)
checked(
    "the inline probe gives position_probe's accuracy;"
    f" verdicts {summary['verdict'].value_counts().to_dict()} (a RoPE decoder"
    " that rotates nothing would get 'none (mask: order)'); the relative"
    " schemes exactly at chance without a start token, every decoder and"
    " RoPE's encoder clearly above it with one"
)

# %% [markdown]
# With a start token the probes stand beside their floors: chance (1/15) and the same kind of
# model without position, trained the same way. The verdicts apply the series' rule
# ([02 §3](02_learnable.ipynb)).

# %%
SHORT = {"RotaryPE": "RoPE", "T5RelativeBias": "T5", "ALiBi": "ALiBi"}
start_tables = {}
for where in ("decoder", "encoder"):
    print(f"{where}s with a start token:")
    start_tables[where] = floors.with_floors(
        {f"{short} {where}": acc[name, where, True].tolist()
         for name, short in SHORT.items()},
        [floors.no_position(acc["NoPosition", where, True].tolist()),
         floors.chance(PROBE_LEN - 1)],
        metric="probe accuracy", digits=2,
    )
t5_encoder = acc["T5RelativeBias", "encoder", True]
t5_at_chance = int(np.isclose(t5_encoder, 1 / (PROBE_LEN - 1)).sum())
print(
    f"T5 encoder with a start token: {t5_at_chance} of {len(t5_encoder)} seeds"
    f" exactly at chance (1/{PROBE_LEN - 1})"
)

# %% jupyter={"source_hidden": true}
for short in SHORT.values():
    decoder, encoder = start_tables["decoder"], start_tables["encoder"]
    assert decoder.verdict(f"{short} decoder", "chance").a_ahead
    # no scheme beats the no-position decoder
    assert not decoder.verdict(f"{short} decoder", "no position").a_ahead
assert start_tables["encoder"].verdict("RoPE encoder", "no position").a_ahead
assert not start_tables["encoder"].verdict("T5 encoder", "no position").a_ahead

# %% [markdown]
# **Reading the tables.**
# - **Absolute, relative:** only the *added* encodings solve the probe (1.00 on every seed) and
#   change under a common shift. RoPE, T5 and ALiBi sit exactly at chance, yet removing them
#   changes the outputs and a shift does not: *relative*, measured (a RoPE that rotates nothing
#   would read "none").
# - **None:** removing the scheme changes nothing; a decoder still sees order, through the mask.
# - **With a start token** the decoder without position learns absolute position (1.00), and no
#   relative decoder is ahead of it: for this probe, in a decoder, the mask is enough. In an
#   encoder RoPE is ahead of both floors, ALiBi just over the bar (a hypothesis, by the rule),
#   and T5 is not separated from them, most seeds exactly at chance. Yet T5 carries position
#   (the untrained checks): the probe did not learn, which says nothing about the encoding.

# %% [markdown]
# **The source article's test, run (E7).** Its §6.3:
# 「用一个只有位置编码作为输入（词嵌入设为零）的小Transformer来学习这个任务」 ("a small Transformer
# whose only input is the position encoding, word embeddings set to zero, learns this task"), and
# 「如果模型无法快速学会，说明位置编码的信息注入可能有问题。」 ("if the model cannot learn it quickly,
# position injection may be faulty"). Run here with details it does not name: a decoder, a start
# token, token embeddings zeroed and frozen.

# %% tags=["nbval-check-output"]
def e7_run(setup: tuple) -> float:
    """The article's test: word embeddings set to zero (and frozen)."""
    name, seed = setup
    model = build(name, causal=True, seed=seed)
    model.embed.weight.data.zero_()
    model.embed.weight.requires_grad_(False)
    return probe(model, start_token=True)


e7_setups = list(itertools.product(SCHEMES, SEEDS))
e7 = pd.Series(
    run_each(e7_run, e7_setups, desc="article's test x seed"),
    index=pd.MultiIndex.from_tuples(e7_setups, names=["scheme", "seed"]),
)
e7_table = floors.with_floors(
    {name: e7[name].tolist() for name in SCHEMES if name != "NoPosition"},
    [floors.no_position(e7["NoPosition"].tolist()),
     floors.chance(PROBE_LEN - 1)],
    metric="article's test (decoder, start token)", digits=2,
)

# %% jupyter={"source_hidden": true}
for name in SCHEMES:
    if name in ("SinusoidalPE", "LearnablePE"):
        assert (e7[name] == 1.0).all()
    else:  # chance exactly, on every seed
        assert np.allclose(e7[name], 1 / (PROBE_LEN - 1)), (name, e7[name])

# %% [markdown]
# RoPE, T5 and ALiBi sit exactly at chance on every seed, start token notwithstanding
# (Exercise 5 asks why); the added encodings score 1.00. The test only asks "is a vector added
# to the input?", so it declares every relative scheme broken, notebook 08's models included:
# erratum E7. Instead, use the untrained checks of the first table: exact, no training, and
# they fail a RoPE that rotates nothing, in a decoder too. The probe with a start token, in an
# encoder, is **one-sided**: ahead of the no-position floor (RoPE), position arrives; at chance,
# no verdict, since a probe that did not train scores like a broken encoding (T5). Whether a
# trained model *uses* relative position takes a task that needs an offset, trained beside the
# no-position floor (section 3).

# %% [markdown]
# **Takeaway:**
# - a relative encoding gives a model no absolute position *by itself*;
# - real inputs have boundaries (a BOS token, the causal mask) that models use to learn it: when
#   a probe finds absolute position, check where it comes from.

# %% [markdown]
# ## 2 · Gradient check: which rows of a learnable table train?
#
# **Question:** a learnable table must receive gradient, but only at the rows a batch uses. A
# right-padded batch of lengths 4, 7 and 10 (max_len 128), the loss on the real tokens only;
# `row_gradient_norms` reads the gradient of every row after `backward()`.

# %% tags=["nbval-check-output"]
lengths = torch.tensor([4, 7, 10])
mask = torch.arange(10)[None] < lengths[:, None]  # (3, 10), True = real token
tokens = torch.randint(1, 16, (3, 10), generator=gen).masked_fill(~mask, 0)
targets = torch.randint(0, 16, (3, 10), generator=gen).masked_fill(~mask, -100)
model = build("LearnablePE", causal=False, seed=0)
cross_entropy(model(tokens, attn_mask=mask), targets).backward()
norms = row_gradient_norms(model.scheme.weight)
uses = mask.sum(0)  # real tokens at each position

fig, ax = plt.subplots(figsize=(7.5, 3.2))
ax.bar(np.arange(16), norms[:16].numpy(), color=COLORS[0])
ax.set(
    title="Gradient reaching each row of the learnable table",
    xlabel="row (position; rows 16-127 not shown)",
    ylabel="L2 norm of the row's gradient",
)
plt.show()
print("real tokens at each position:", uses.tolist())
print(
    "gradient norm of rows 0-9    :", [round(v, 4) for v in norms[:10].tolist()]
)
print(
    "rows with gradient:", norms.nonzero().flatten().tolist(), "of", len(norms)
)

# %% [markdown]
# **Check.** Rows 0-9 receive gradient, rows 10-127 exactly none (Exercise 3 asks why). Read
# the chart for zero or not, not by height: here row 8, used by one sequence, gets more than
# row 2, used by all three, but in most other batches less (below). Split by sequence, row 2's
# three norms add up to far more than their sum's norm: they point different ways.

# %% tags=["nbval-check-output"]
logits = model(tokens, attn_mask=mask)
per_token = F.cross_entropy(
    logits.flatten(0, 1), targets.flatten(), reduction="none"
).view(3, 10)  # 0 at the ignored pads
parts = []
for row in range(3):  # one sequence's share of the loss, backpropagated alone
    model.zero_grad()
    (per_token[row].sum() / mask.sum()).backward(retain_graph=True)
    parts.append(model.scheme.weight.grad[2].clone())
part_norms = [p.norm().item() for p in parts]
print(
    "row 2, each sequence's gradient norm:",
    [round(v, 4) for v in part_norms],
    f"sum {sum(part_norms):.4f}; norm of their sum"
    f" {torch.stack(parts).sum(0).norm().item():.4f}",
)

ratios = []
for seed in range(40):  # other batches of this shape, each with its own model
    draw = torch.Generator().manual_seed(100 + seed)
    other_tokens = torch.randint(1, 16, (3, 10), generator=draw)
    other_targets = torch.randint(0, 16, (3, 10), generator=draw)
    other = build("LearnablePE", causal=False, seed=100 + seed)
    cross_entropy(
        other(other_tokens.masked_fill(~mask, 0), attn_mask=mask),
        other_targets.masked_fill(~mask, -100),
    ).backward()
    other_norms = row_gradient_norms(other.scheme.weight)
    ratios.append((other_norms[8] / other_norms[2]).item())
print(
    f"row 8 / row 2 in {len(ratios)} other batches: median"
    f" {np.median(ratios):.2f}; row 8 ahead in {sum(r > 1 for r in ratios)}"
)

# %% jupyter={"source_hidden": true}
assert torch.allclose(torch.stack(parts).sum(0).norm(), norms[2])
assert np.median(ratios) < 1  # this batch's row 8 > row 2 is the exception
assert sum(part_norms) > 1.5 * norms[2]  # they partly cancel
assert (norms[:10] > 0).all() and (norms[10:] == 0).all()
assert torch.equal(
    norms > 0, torch.cat([uses > 0, torch.zeros(118, dtype=torch.bool)])
)
# in this batch, one sequence gives more gradient than three
assert uses[8] < uses[2] and norms[8] > 1.05 * norms[2]

# %% [markdown]
# **The common bug.** A table that never trains: detached (`.detach()`, `.data`,
# `torch.no_grad()`) or frozen. Nothing fails; the model trains around it. A learnable scheme
# whose author wrote `self.weight.detach()`, on section 1's probe:


# %%
class DetachedPE(LearnablePE):
    """The bug: the table is read through .detach(): no gradient reaches it."""

    def add_to_embeddings(
        self, x: torch.Tensor, positions: torch.Tensor
    ) -> torch.Tensor:
        return x + self.weight.detach()[positions]


detached_runs, moved = [], 0.0
for seed in progress(SEEDS, desc="detached table, seeds"):
    seed_everything(seed)  # the table's rows, then the rest: as in section 1
    buggy = make(DetachedPE(D_MODEL, 128), causal=False, seed=seed)
    before = buggy.scheme.weight.detach().clone()
    detached_runs.append(position_probe(buggy, PROBE_LEN))
    moved = max(
        moved, (buggy.scheme.weight.detach() - before).abs().max().item()
    )
healthy_runs = acc["LearnablePE", "encoder", False].tolist()  # section 1
print(f"largest change of any table entry in training: {moved}")
detached_table = floors.with_floors(
    {"healthy table (section 1)": healthy_runs,
     "detached table": detached_runs},
    [floors.chance(PROBE_LEN)], metric="probe accuracy", digits=2,
)
# paired: seed i of both starts from the same weights, table included
paired = compare(healthy_runs, detached_runs, paired=True,
                 names=("healthy table", "detached table"))
print(paired)

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
assert moved == 0.0  # the table never trains
# above what a position-blind model gets, on every seed, far above on average
assert min(detached_runs) > 1 / PROBE_LEN and np.mean(detached_runs) > 0.25
checked("the detached table never moved; its probe above chance on every seed")

# %% [markdown]
# The probe does not name this bug: it stays far above chance, since the random rows still
# differ, a fixed code the layers above learn to read; its shortfall against the healthy table
# (the lines above, paired seed by seed) is easy to take for noise. The one symptom is a table
# that never moved, which the gradient check reports:

# %% tags=["nbval-check-output"]
for label, weight in [
    ("detached", buggy.scheme.weight),
    ("frozen", LearnablePE(D_MODEL, 128).weight.requires_grad_(False)),
]:
    try:
        row_gradient_norms(weight)
        raise AssertionError("expected a ValueError")
    except ValueError as err:
        print(f"{label}: ValueError: {err}")
        assert (
            ("grad is None" in str(err))
            if label == "detached"
            else ("frozen" in str(err))
        )

# %% [markdown]
# **Takeaway:** after one `backward()`, look at the gradient of the table:
# - rows the batch uses have non-zero gradient, the others exactly zero;
# - `grad is None`: the table is detached or frozen, which the probe does not notice.

# %% [markdown]
# ## 3 · Attention maps as a diagnostic
#
# **Question:** what does a working position signal look like inside a trained model, and a lost
# one? Small RoPE decoders (three seeds) learn to repeat the token 3 steps back (notebook 03);
# we look at their attention with the right positions and with every position id 0, as a
# pipeline that forgets them would. The maps show seed 0.

# %% tags=["nbval-check-output"]
VOCAB, SEQ, LAG = 16, 16, 3
lag_train, lag_test = lag_task(2048, SEQ, VOCAB, LAG, gen), lag_task(
    512, SEQ, VOCAB, LAG, gen
)


def lag_decoder(setup: tuple) -> TinyTransformer:
    """A decoder, RoPE or no position, trained on the lag-3 task, 150 steps."""
    kind, seed = setup
    scheme = RotaryPE(HEAD_DIM, layout="interleaved") if kind == "RoPE" else (
        NoPosition())
    model = make(scheme, True, seed)
    batches = torch.Generator().manual_seed(seed)
    train(model, lag_train, 150, generator=batches, desc=None)
    return model


# one decoder per kind and seed, side by side
lag3_setups = list(itertools.product(("RoPE", "none"), SEEDS))
lag3_models = dict(zip(lag3_setups, run_each(
    lag_decoder, lag3_setups, desc="lag-3 decoders x seed")))
rope_models = [lag3_models["RoPE", seed] for seed in SEEDS]
rope_model = rope_models[0]  # seed 0: the maps below, and section 5
zeros = torch.zeros(1, SEQ, dtype=torch.long)
healthy = rope_model.attention_weights(lag_test[0][:1])[0][0]  # (heads, q, k)
broken = rope_model.attention_weights(lag_test[0][:1], positions=zeros)[0][0]

fig, axes = plt.subplots(2, 2, figsize=(7.5, 6.2))
for col, (maps, title) in enumerate(
    [(healthy, "right positions"), (broken, "all position ids 0")]
):
    for head in range(N_HEADS):
        heatmap(
            axes[head, col],
            maps[head].numpy(),
            f"Head {head}, {title}",
            "key position",
            "query position",
            "attention weight",
        )
fig.suptitle("Seed 0's decoder, one test sequence")
plt.show()


# %% tags=["nbval-check-output"]
def mass_at_offset(maps: torch.Tensor, offset: int) -> torch.Tensor:
    """Mean weight a query i >= offset puts on key i - offset, per head."""
    return maps.diagonal(-offset, dim1=-2, dim2=-1).mean(-1)


keep = lag_test[1] != -100
no_ids = zeros.expand(512, -1)  # every position id 0
acc_healthy, acc_broken, weights, entropy = [], [], [], []
for seed, model in zip(SEEDS, rope_models):
    acc_healthy.append(accuracy(model, *lag_test))
    with torch.no_grad():
        wrong = model(lag_test[0], positions=no_ids).argmax(-1)
    acc_broken.append((wrong[keep] == lag_test[1][keep]).float().mean().item())
    for label, ids in (("right positions", None), ("all ids 0", no_ids[:64])):
        # maps of 64 test sequences: (64, heads, q, k)
        maps = model.attention_weights(lag_test[0][:64], ids)[0]
        weights += [
            {"seed": seed, "offset": k, "positions": label,
             # the head with the most weight there (mean of the sequences)
             "weight": mass_at_offset(maps, k).mean(0).max().item()}
            for k in range(6)
        ]
        # row entropy over a uniform row's, log(i + 1), for queries 1-15
        rows = -(maps * maps.clamp_min(1e-12).log()).sum(-1)[..., 1:]
        share = (rows / torch.arange(2, SEQ + 1).log()).mean().item()
        entropy.append({"seed": seed, "positions": label, "share": share})
weights, entropy = pd.DataFrame(weights), pd.DataFrame(entropy)
print(
    "row entropy / a uniform row's (queries 1-15), mean ± std over seeds: "
    + ", ".join(f"{label} {mean_std(runs, 2)}" for label, runs in
                entropy.groupby("positions", sort=False)["share"])
)
print(
    "largest weight of a head at each offset back, mean of 64 sequences,"
    f" mean ± std over {len(SEEDS)} seeds:"
)
weights.groupby(["offset", "positions"], sort=False)["weight"].agg(
    lambda runs: mean_std(runs, 2)
).unstack("positions").rename_axis(columns=None)

# %% [markdown]
# **Check.** The healthy maps are stripes parallel to the diagonal: each query puts most of its
# weight on the key 3 back, the task's lag (0.83 of a head's weight). With every position 0 RoPE
# rotates nothing: the stripes dissolve, yet the rows stay peaked (0.64 of a uniform row's
# entropy) at offsets that vary from row to row. The floors: a decoder
# without position trained the same way, and a rule that knows which tokens came earlier and
# how often, not where (`bag_of_tokens`: the most frequent, or one drawn).

# %% tags=["nbval-check-output"]
acc_none = [accuracy(lag3_models["none", seed], *lag_test) for seed in SEEDS]
lag_table = floors.with_floors(
    {"RoPE, right positions": acc_healthy, "RoPE, all ids 0": acc_broken},
    [floors.no_position(acc_none),
     floors.bag_of_tokens(*lag_test),
     floors.bag_of_tokens(*lag_test, rule="sample"),
     floors.chance(VOCAB)],
    metric="lag-3 test accuracy", digits=2,
)

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
per_seed = weights.set_index(["positions", "offset"])["weight"]
at_lag = per_seed["right positions", LAG]
lost = compare(acc_healthy, acc_broken, paired=True,
               names=("right positions", "all ids 0"))
bag = "bag of tokens (argmax)"
assert min(acc_healthy) > 0.99 and max(acc_broken) < 0.3
assert lost.a_ahead, lost
# a rule that ignores order does better than the model with all ids 0
assert lag_table.verdict("RoPE, all ids 0", bag).b_ahead
assert all(lag_table.verdict("RoPE, right positions", f.name).a_ahead
           for f in lag_table.floors)
assert at_lag.min() > 0.6 and per_seed["all ids 0"].max() < 0.4
share = entropy.set_index(["positions", "seed"])["share"]
assert share["all ids 0"].max() < 0.85  # rows far from uniform
checked(
    "on every seed, accuracy above 0.99 with the right positions and below"
    f" 0.3 with all ids 0 ({lost});"
    " more than 0.6 of a head's weight on the key 3 back, under 0.4 on any"
    " offset with all ids 0"
)

# %% [markdown]
# With all ids 0 the models score 0.16, behind the bag of earlier tokens (0.25) and the decoder
# without position (0.24): a rule with no order does better, so the 0.16 needs no order to
# explain it.

# %% [markdown]
# **Takeaway:**
# - a position-based task shows structure tied to the diagonal (stripes, a local band, a column
#   at the start token);
# - maps that do not change with the positions mean position is not getting through.

# %% [markdown]
# ## 4 · Padding: right is harmless, left needs position ids from the mask
#
# **Question:** does padding change the outputs of the real tokens? Three ways to pad the same
# three sequences (lengths 5, 9 and 12), for every scheme, in a decoder (right padding in an
# encoder too):
#
# - **right** padding, attention mask, default positions $0, 1, \dots$;
# - **left** padding (batched generation), attention mask, default positions: a row with 7 pad
#   slots puts its first real token at position 7;
# - **left** padding, positions from the mask: `position_ids_from_mask(mask)` (cumulative sum
#   of the mask minus one, pads 0), as Hugging Face's `generate` does.
#
# We compare the real tokens' logits with each sequence run alone. To make position matter in
# these untrained models, the learnable table and the T5 bias start at std 1.

# %%
PAD_LENGTHS, PADDED = (5, 9, 12), 12
seqs = [torch.randint(1, 16, (n,), generator=gen) for n in PAD_LENGTHS]


def pad(side: str, width: int = PADDED) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids (3, width), pad id 0 on the given side; mask (True = real)."""
    mask = torch.zeros(len(seqs), width, dtype=torch.bool)
    for row, s in enumerate(seqs):
        mask[row, : len(s)] = True
    if side == "left":
        mask = mask.flip(-1)
    tokens = torch.zeros(len(seqs), width, dtype=torch.long)
    tokens[mask] = torch.cat(seqs)
    return tokens, mask


def padded_gap(
    model: TinyTransformer,
    side: str,
    from_mask: bool = False,
    width: int = PADDED,
) -> float:
    """Max |logit difference| of real tokens: padded batch vs each alone."""
    tokens, mask = pad(side, width)
    positions = position_ids_from_mask(mask) if from_mask else None
    with torch.no_grad():
        out = model(tokens, positions=positions, attn_mask=mask)
        alone = torch.cat([model(s[None])[0] for s in seqs])
    return (out[mask] - alone).abs().max().item()


def padding_model(name: str, causal: bool) -> TinyTransformer:
    model = build(name, causal, seed=0)
    for (
        p
    ) in (
        model.scheme.parameters()
    ):  # learnable table, T5 bias: as large as the tokens
        nn.init.normal_(p, std=1.0)
    return model


# %%
gaps = {}
for name in SCHEMES:
    decoder = padding_model(name, causal=True)
    gaps[name] = {
        "encoder, right": padded_gap(
            padding_model(name, causal=False), "right"
        ),
        "decoder, right": padded_gap(decoder, "right"),
        "decoder, left, default positions": padded_gap(decoder, "left"),
        "decoder, left, positions from mask": padded_gap(
            decoder, "left", from_mask=True
        ),
    }
gaps = pd.DataFrame(gaps).T
print("max |logit(padded) - logit(alone)| over real tokens, float32:")
gaps.map(lambda v: "0" if v == 0 else f"{v:.0e}" if v < 1e-4 else f"{v:.2f}")

# %% [markdown]
# **Check.** Right padding with a mask changes nothing beyond float32 rounding (a few
# $10^{-7}$). Left padding with default positions moves the two *absolute* encodings far beyond
# rounding. RoPE, T5 and ALiBi (like no encoding) are **immune in exact arithmetic**: every real
# token moves by the same number of pad slots, and they see only differences of positions (for
# RoPE: $\langle R_{m+p}q, R_{n+p}k\rangle = \langle R_m q, R_n k\rangle$); in float32, up to
# rounding. With positions from the mask, every scheme gives the unpadded result.

# %%
rounding = 1e-5
left = gaps["decoder, left, default positions"]
immune = left.drop(["SinusoidalPE", "LearnablePE"])
print(f"largest float32 difference of an immune scheme: {immune.max():.1e}")

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
assert (gaps["encoder, right"] < rounding).all() and (
    gaps["decoder, right"] < rounding
).all()
assert (gaps["decoder, left, positions from mask"] < rounding).all()
assert (left[["SinusoidalPE", "LearnablePE"]] > 0.5).all()
assert (immune < rounding).all()
checked(
    "right padding and left padding with positions from the mask: every scheme"
    " within 1e-5 of the unpadded run; left padding, default positions: the"
    " absolute encodings move by more than 0.5, the others stay within 1e-5"
)

# %% [markdown]
# **Not immune: a scaling that depends on the length.** Dynamic NTK
# ([06](06_length_extrapolation.ipynb)) grows the RoPE base with the sequence length $L$ past
# $L_0$, taken from the largest position id of the call (as Hugging Face's per-call length,
# without its cache). An untrained RoPE model with dynamic NTK ($L_0 = 8$, factor 4), also
# right-padded to 12, 16 and 24 slots:

# %% tags=["nbval-check-output"]
DYNAMIC_NTK = {
    "rope_type": "dynamic",
    "factor": 4.0,
    "original_max_position_embeddings": 8,
}
dynamic = {
    causal: make(RotaryPE(HEAD_DIM, scaling=DYNAMIC_NTK), causal=causal)
    for causal in (False, True)
}
dynamic_gaps = {
    "encoder, right": padded_gap(dynamic[False], "right"),
    "decoder, right": padded_gap(dynamic[True], "right"),
    "decoder, left, default positions": padded_gap(dynamic[True], "left"),
    "decoder, left, positions from mask": padded_gap(
        dynamic[True], "left", from_mask=True
    ),
}
by_width = {
    width: padded_gap(dynamic[True], "right", width=width)
    for width in (12, 16, 24)
}
print(
    "RotaryPE with dynamic NTK: max |logit(padded) - logit(alone)| over real"
    " tokens, float32"
)
for setting, gap in dynamic_gaps.items():
    print(f"  {setting:36s} {gap:.1e}")
print(
    "  decoder, right, padded to "
    + ", ".join(f"{w} slots: {g:.1e}" for w, g in by_width.items())
)
# far above rounding
assert all(
    gap > 100 * rounding for gap in [*dynamic_gaps.values(), *by_width.values()]
)
assert by_width[24] > 1.5 * by_width[12]  # more padding, a larger change

# %% [markdown]
# Every setting moves the real tokens' logits far above rounding, positions from the mask
# included: the ids are right, but the frequencies follow the batch's longest sequence, not
# each sequence; with default ids they follow the padded width, so the more padding, the larger
# the change. Batching sequences of similar length reduces it; the cure is a scaling that does
# not depend on the length (linear, static NTK, YaRN, notebook 06).

# %% [markdown]
# The source article (§6.3) says of padded training batches that adding the position code
# 「不需要特殊处理」 ("needs no special handling"), because the mask stops attention to the pads.
# It does not discuss left padding, where the mask protects the attention, not the positions
# (erratum E6). Decoders with a learnable table (std 1), or none (the floor), three seeds, 300
# steps: on section 3's lag-3 task (*relative*) and on "repeat the first token" (*absolute*),
# tested on 512 sequences of random lengths 6 to 16, left-padded to 16.


# %% tags=["nbval-check-output"]
def first_token_task(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Random tokens (n, 16); every target is the sequence's first token."""
    tokens = torch.randint(0, VOCAB, (n, SEQ), generator=gen)
    return tokens, tokens[:, :1].expand(-1, SEQ).clone()


first_train, first_test = first_token_task(2048), first_token_task(512)
TASKS = {
    "lag 3 (relative task)": (lag_train, lag_test),
    "first token (absolute task)": (first_train, first_test),
}


def table_decoder(setup: tuple) -> TinyTransformer:
    """A decoder with a learnable table (std 1), or none, trained on a task."""
    task, kind, seed = setup
    seed_everything(seed)  # the table's rows, then the rest of the model
    scheme = LearnablePE(D_MODEL, SEQ, init_std=1.0) if kind == "table" else (
        NoPosition())
    model = make(scheme, True, seed)
    batches = torch.Generator().manual_seed(seed)
    train(model, TASKS[task][0], 300, generator=batches, desc=None)
    return model


both_setups = list(itertools.product(TASKS, ("table", "none"), SEEDS))
both_models = dict(zip(
    both_setups,
    run_each(table_decoder, both_setups, desc="decoders x seed"),
))
table_models = {(task, seed): both_models[task, "table", seed]
                for task in TASKS for seed in SEEDS}
# seed 0's models: the row below, and section 5
abs_model = table_models["lag 3 (relative task)", 0]
first_model = table_models["first token (absolute task)", 0]

# %% tags=["nbval-check-output"]
test_lengths = torch.randint(6, SEQ + 1, (512,), generator=gen)
# (512, 16), left padding
left_mask = torch.arange(SEQ)[None] >= (SEQ - test_lengths)[:, None]


def left_pad(
    tokens: torch.Tensor, targets: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Keep the first test_lengths[row] tokens of each row, moved right."""
    padded, padded_targets = torch.zeros_like(tokens), torch.full_like(
        targets, -100
    )
    for row, n in enumerate(test_lengths.tolist()):
        padded[row, SEQ - n :], padded_targets[row, SEQ - n :] = (
            tokens[row, :n],
            targets[row, :n],
        )
    return padded, padded_targets


def left_padded_accuracy(
    model: TinyTransformer, data: tuple, from_mask: bool
) -> float:
    tokens, targets = left_pad(*data)
    positions = position_ids_from_mask(left_mask) if from_mask else None
    with torch.no_grad():
        pred = model(tokens, positions=positions, attn_mask=left_mask).argmax(
            -1
        )
    real = targets != -100
    return (pred[real] == targets[real]).float().mean().item()


# every case and floor is scored on the positions a left-padded row keeps
kept = torch.arange(SEQ)[None] < test_lengths[:, None]  # (512, 16)


def on_kept(targets: torch.Tensor) -> torch.Tensor:
    """The targets, -100 (not scored) where a left-padded row has no token."""
    return targets.masked_fill(~kept, -100)


CASES = {  # None: not padded; else left padded, positions from the mask?
    "not padded": None,
    "left padded, default positions": False,
    "left padded, positions from mask": True,
}
padding_runs = pd.DataFrame([
    {"task": task, "seed": seed, "case": case, "accuracy": (
        accuracy(model, TASKS[task][1][0], on_kept(TASKS[task][1][1]))
        if from_mask is None
        else left_padded_accuracy(model, TASKS[task][1], from_mask)
    )}
    for (task, seed), model in table_models.items()
    for case, from_mask in CASES.items()
])
BAG_SEES = {"lag 3 (relative task)": "earlier",
            "first token (absolute task)": "so far"}
padding_tables = {}
for task, (_, test) in TASKS.items():
    print(f"{task}; everything on the positions the padded rows keep:")
    runs = padding_runs[padding_runs["task"] == task]
    padding_tables[task] = floors.with_floors(
        {case: runs[runs["case"] == case]["accuracy"].tolist()
         for case in CASES},
        [floors.no_position([accuracy(both_models[task, "none", seed],
                                      test[0], on_kept(test[1]))
                             for seed in SEEDS]),
         floors.bag_of_tokens(test[0], on_kept(test[1]),
                              sees=BAG_SEES[task]),
         floors.chance(VOCAB)],
        metric="test accuracy", digits=2,
    )

# %% tags=["nbval-check-output"]
row = int(test_lengths.argmin())
tokens, targets = (t[row : row + 1] for t in left_pad(*first_test))
with torch.no_grad():
    wrong = first_model(tokens, attn_mask=left_mask[row : row + 1]).argmax(-1)[
        0
    ]
    right = first_model(
        tokens,
        positions=position_ids_from_mask(left_mask[row : row + 1]),
        attn_mask=left_mask[row : row + 1],
    ).argmax(-1)[0]
real = left_mask[row]
print(
    f"one left-padded row of the first-token task ({int(test_lengths[row])}"
    " real tokens), seed 0's model:"
)
print("  input tokens                :", tokens[0][real].tolist())
print("  default positions           :", torch.arange(SEQ)[real].tolist())
print(
    "  positions from mask         :",
    position_ids_from_mask(left_mask[row : row + 1])[0][real].tolist(),
)
print("  target                      :", targets[0][real].tolist())
print("  output, default positions   :", wrong[real].tolist())
print("  output, positions from mask :", right[real].tolist())
# where the first-token models look: a head's largest weight on the first
# real token, mean over the real queries of the 512 left-padded test rows
first_slot = SEQ - test_lengths  # where each row's first real token sits
padded_first = left_pad(*first_test)[0]
on_first = {}
for label, ids in (("default positions", None),
                   ("positions from mask", position_ids_from_mask(left_mask))):
    on_first[label] = [
        model.attention_weights(padded_first, ids, left_mask)[0][
            torch.arange(512), :, :, first_slot
        ].amax(1)[left_mask].mean().item()
        for model in (table_models["first token (absolute task)", seed]
                      for seed in SEEDS)
    ]
print(
    "weight on the first real token, mean ± std over seeds: "
    + ", ".join(f"{k} {mean_std(v, 2)}" for k, v in on_first.items())
)

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
per_case = padding_runs.pivot(
    index=["task", "seed"], columns="case", values="accuracy"
)
lag_runs, first_runs = (per_case.loc[task] for task in TASKS)
default = first_runs["left padded, default positions"].tolist()
# relative task: every seed survives the shift
assert (lag_runs > 0.99).all().all()
assert (first_runs.drop(columns="left padded, default positions") > 0.99).all(
).all() and max(default) < 0.6
restored = {
    case: compare(first_runs[case].tolist(), default, paired=True,
                  names=(case, "default positions"))
    for case in ("not padded", "left padded, positions from mask")
}
assert all(verdict.a_ahead for verdict in restored.values()), restored
for table in padding_tables.values():  # ahead of every floor
    for case in ("not padded", "left padded, positions from mask"):
        assert all(table.verdict(case, f.name).a_ahead for f in table.floors)
assert torch.equal(right[real], targets[0][real]) and not torch.equal(
    wrong[real], targets[0][real]
)
assert min(on_first["positions from mask"]) > 0.9
assert max(on_first["default positions"]) < 0.6
checked(
    "on every seed, the lag-3 model stays above 0.99 in the three cases; the"
    " first-token model is above 0.99 unpadded and with positions from the"
    " mask, below 0.6 with default positions; "
    + "; ".join(str(verdict) for verdict in restored.values())
    + "; seed 0's row above: right only with positions from the mask"
)

# %% [markdown]
# The lag-3 models survive: their task is the same at every position they learned. The
# first-token models fail: the first real token of a row of $n$ tokens sits at position $16 - n$,
# and the model looks for position 0, a masked pad (a head puts 1.00 of its weight on the first
# token with ids from the mask, 0.41 with default ids). At 0.30 they fall behind the bag of
# tokens (0.38) and the decoder without position (0.44), scored on the same positions: wrong
# positions are worse than none. Positions from the mask restore them, ahead of every floor.

# %% [markdown]
# **Takeaway:**
# - pad on the right when you can;
# - when you pad on the left (batched generation), take the position ids from the mask,
#   `cumsum(mask) - 1`, and count on from there in every decode step (Exercise 2);
# - a scaling that depends on the length (dynamic NTK) rotates a sequence differently in a
#   batch than alone, even with ids from the mask.

# %% [markdown]
# ## 5 · A bug zoo
#
# Seven common bugs, each run, measured, and caught by a check or a library error.
#
# ### 5.1 · Wrong RoPE layout when loading weights
# The RoPE models of section 3 were trained with interleaved pairs (Meta's layout). Loading their
# weights into a half-split model (Hugging Face's layout) raises nothing:

# %% tags=["nbval-check-output"]
def loaded_as_half(model: TinyTransformer) -> TinyTransformer:
    """A new RoPE decoder, default layout "half", with ``model``'s weights."""
    half = build("RotaryPE", causal=True, seed=1)
    half.load_state_dict(model.state_dict())
    return half


half_models = [loaded_as_half(model) for model in rope_models]
half_model = half_models[0]  # seed 0: the golden-output test below
acc_loaded = [accuracy(model, *lag_test) for model in half_models]
print(
    f"lag-3 accuracy over {len(SEEDS)} seeds: trained"
    f" {mean_std(acc_healthy, 2)}, loaded into the other layout"
    f" {mean_std(acc_loaded, 2)}"
)
assert max(acc_loaded) < 0.5

# %% [markdown]
# **Caught by** a golden-output test: after loading a checkpoint, compare logits on a fixed batch
# with those of the implementation it came from. The fix converts the q and k rows of every head
# (`convert_rope_checkpoint` applies `convert_qk_weight` to each $W_q$ and $W_k$, notebook 03).

# %% tags=["nbval-check-output"]
golden_batch = lag_test[0][:8]
with torch.no_grad():
    golden = rope_model(golden_batch)
try:
    with torch.no_grad():
        assert_close(half_model(golden_batch), golden)
    raise RuntimeError("the layout bug was not caught")
except AssertionError as err:
    print("golden-output test:", str(err).splitlines()[0])
    assert "not close" in str(err)

# q, k rows per head
half_model.load_state_dict(
    convert_rope_checkpoint(rope_model.state_dict(), HEAD_DIM, to="half")
)
with torch.no_grad():
    assert_close(half_model(golden_batch), golden)
print("after convert_rope_checkpoint: golden-output test passes")

# %% [markdown]
# ### 5.2 · Half-precision angles
# Computing the angles $m\theta_i$ in the model's dtype. Section 3's RoPE models in bfloat16,
# all positions shifted by 0, 1000 and 4000 (RoPE should not care), with the library's float32
# angles and with bfloat16 ones. (The source article, §4.2, warns instead that
# `theta ** (2i/dim)` may overflow 「当theta很大时」 ("when theta is large"): true only in
# float16, for a base above 65504. The problem is $m\theta_i$ in low precision: erratum E8.)


# %% tags=["nbval-check-output"]
class Bf16AnglesRoPE(RotaryPE):
    """The bug: positions and angles in the model dtype."""

    def cos_sin(
        self, positions: torch.Tensor, dtype: torch.dtype = torch.float32
    ):
        angle = positions.to(dtype)[..., None] * self.inv_freq.to(dtype)
        return angle.cos(), angle.sin()


def shifted_accuracy(model: TinyTransformer, shift: int) -> float:
    with torch.no_grad():
        pred = model(
            lag_test[0], positions=torch.arange(SEQ)[None] + shift
        ).argmax(-1)
    return (pred[keep] == lag_test[1][keep]).float().mean().item()


def in_bf16(model: TinyTransformer) -> dict[str, TinyTransformer]:
    """``model`` in bfloat16, with the library's angles and with the bug."""
    library = copy.deepcopy(model).to(torch.bfloat16)
    buggy = copy.deepcopy(library)  # same weights
    buggy.set_scheme(Bf16AnglesRoPE(HEAD_DIM, layout="interleaved"))
    return {"float32 angles (library)": library, "bf16 angles (bug)": buggy}


bf16_models = [in_bf16(model) for model in rope_models]
# seed 0's pair: Exercise 4
bf16_library, bf16_buggy = bf16_models[0].values()
bf16_runs = pd.DataFrame([
    {"angles": angles, "shift": f"positions + {shift}", "seed": seed,
     "accuracy": shifted_accuracy(model, shift)}
    for seed, pair in zip(SEEDS, bf16_models)
    for angles, model in pair.items()
    for shift in (0, 1000, 4000)
])
precision = bf16_runs.pivot(
    index=["angles", "seed"], columns="shift", values="accuracy"
)
print(f"lag-3 accuracy in bfloat16, mean ± std over {len(SEEDS)} seeds:")
bf16_runs.groupby(["angles", "shift"], sort=False)["accuracy"].agg(
    lambda runs: mean_std(runs, 2)
).unstack("shift").rename_axis(columns=None)

# %% [markdown]
# **Caught by** the shift check: a RoPE model's outputs must not move, beyond rounding, when all
# positions shift.

# %% tags=["nbval-check-output"]
shift_ok, shift_bug = (
    [shift_sensitivity(pair[angles], lag_test[0][:64], 4000)
     for pair in bf16_models]
    for angles in ("float32 angles (library)", "bf16 angles (bug)")
)
print(
    "max |logit change| for positions + 4000 in bfloat16, over"
    f" {len(SEEDS)} seeds: library {mean_std(shift_ok, 2)}, bf16 angles"
    f" {mean_std(shift_bug, 2)}"
)
library_acc, buggy_acc = precision.loc["float32 angles (library)"], (
    precision.loc["bf16 angles (bug)"].drop(columns="positions + 0")
)
assert library_acc.min().min() > 0.99 and buggy_acc.max().max() < 0.5
assert max(shift_ok) < 0.25 < 2.0 < min(shift_bug)

# %% [markdown]
# ### 5.3 · Odd `head_dim`
# Sin/cos and RoPE work on pairs, so the width must be even. A hand-written table with $d = 15$
# fails with a message about tensor sizes, not the width:


# %% tags=["nbval-check-output"]
def handwritten_sinusoidal(max_len: int, d: int) -> torch.Tensor:
    pe = torch.zeros(max_len, d)
    angle = torch.arange(max_len)[:, None] * 10000.0 ** (
        -torch.arange(0, d, 2) / d
    )
    pe[:, 0::2], pe[:, 1::2] = angle.sin(), angle.cos()
    return pe


# (what is built, the error it must raise, a fragment of its message)
odd_widths = [
    (
        lambda: handwritten_sinusoidal(8, 15),
        RuntimeError,
        "must match the existing size",
    ),
    (
        lambda: SinusoidalPE(15),
        ValueError,
        "d_model must be even (sin/cos come in pairs), got 15",
    ),
    (
        lambda: RotaryPE(head_dim=15),
        ValueError,
        "head_dim must be even (sin/cos come in pairs), got 15",
    ),
]
for build_it, expected, fragment in odd_widths:
    try:
        build_it()
        raise AssertionError("expected an error")
    except (RuntimeError, ValueError) as err:
        print(f"{type(err).__name__}: {err}")
        assert type(err) is expected and fragment in str(err), (expected, err)

# %% [markdown]
# **Caught by** the library's argument checks, which name the parameter and the rule.
#
# ### 5.4 · Positions past a learnable table's `max_len`
# The lag-3 models of section 4 have 16 rows. A common "fix" for the index error is to clamp
# positions to the last row. On 24 tokens:

# %% tags=["nbval-check-output"]
long_tokens, long_targets = lag_task(256, 24, VOCAB, LAG, gen)
clamped_ids = torch.arange(24).clamp(max=SEQ - 1)[None]
early, late = [], []
for seed in SEEDS:  # section 4's lag-3 models
    with torch.no_grad():
        clamped = table_models["lag 3 (relative task)", seed](
            long_tokens, positions=clamped_ids
        ).argmax(-1)
    hit = (clamped == long_targets).float()
    early.append(hit[:, LAG:SEQ].mean().item())
    late.append(hit[:, SEQ:].mean().item())
print(
    f"lag-3 accuracy with clamped positions, over {len(SEEDS)} seeds:"
    f" positions 3-15 {mean_std(early, 2)}, positions 16-23"
    f" {mean_std(late, 2)}"
)
assert min(early) > 0.99 and max(late) < 0.5

# %% [markdown]
# **Caught by** `LearnablePE`, which refuses positions it has no row for, and says what to do:

# %% tags=["nbval-check-output"]
try:
    abs_model(long_tokens)
    raise AssertionError("expected a ValueError")
except ValueError as err:
    print(f"ValueError: {err}")
    assert "max_len" in str(err) and "max position 23" in str(err)

# %% [markdown]
# ### 5.5 · A forgotten $1/\sqrt{d}$ in attention
# Hand-written attention that forgets to divide the scores by $\sqrt{d_\text{head}}$. With unit
# variance queries and keys, a score is a sum of $d$ products, so its spread grows like
# $\sqrt d$ and the softmax saturates. For a head of width 64, 32 keys, random q and k:


# %% tags=["nbval-check-output"]
def handwritten_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: bool = True
):
    scores = q @ k.transpose(-2, -1)
    if scale:
        scores = scores / q.shape[-1] ** 0.5
    return scores.softmax(-1) @ v, scores.softmax(-1)


q, k, v = torch.randn(3, 1, 4, 32, 64, generator=gen).unbind(0)
saturation = {}
for label, scale in (("with 1/sqrt(d)", True), ("forgotten", False)):
    _, weights = handwritten_attention(q, k, v, scale)
    entropy = -(weights * weights.clamp_min(1e-12).log()).sum(-1).mean().item()
    saturation[label] = {
        "largest weight per row (mean)": weights.amax(-1).mean().item(),
        "row entropy (nats; uniform = 3.47)": entropy,
    }
pd.DataFrame(saturation).T.round(3)

# %% [markdown]
# Without the scale the rows are nearly one-hot before anything is learned, and a checkpoint
# trained with the scale computes something else. T5 is the bug in reverse: it does **not**
# scale its scores (Hugging Face's `T5Attention` folds the factor into the queries'
# initialisation). Scale as the model you copy does (`score_scale(head_dim)`). **Caught by**
# comparing with PyTorch's `scaled_dot_product_attention` on random inputs (`scale=1.0` for T5):

# %% tags=["nbval-check-output"]
reference = F.scaled_dot_product_attention(q, k, v)
assert_close(handwritten_attention(q, k, v)[0], reference)
try:
    assert_close(handwritten_attention(q, k, v, scale=False)[0], reference)
    raise RuntimeError("the missing scale was not caught")
except AssertionError as err:
    print("comparison with SDPA:", str(err).splitlines()[0])
    assert "not close" in str(err)

# %% tags=["nbval-check-output"]
top = {
    label: row["largest weight per row (mean)"]
    for label, row in saturation.items()
}
assert top["forgotten"] > 0.8 > 0.4 > top["with 1/sqrt(d)"]
unscaled = F.scaled_dot_product_attention(q, k, v, scale=1.0)
assert_close(handwritten_attention(q, k, v, scale=False)[0], unscaled)
scales = {
    name: build_scheme(name, **SIZES).score_scale(64)
    for name in ("t5", "alibi", "rope")
}
print("score scale for head_dim 64:", scales)
assert scales == {"t5": 1.0, "alibi": 0.125, "rope": 0.125}

# %% [markdown]
# ### 5.6 · A KV-cache decode step without the position offset
# A hand-written generation loop feeds the prompt, then each new token alone, at position 0
# instead of `len(cache)`. Section 4's lag-3 models, predicting each test sequence's last token:

# %% tags=["nbval-check-output"]
prompt, last = lag_test[0][:, :-1], lag_test[0][:, -1:]
target_last = lag_test[1][:, -1]


def decode_last(model: TinyTransformer) -> tuple[torch.Tensor, torch.Tensor]:
    """Last-token logits: full recomputation, and the buggy cached step."""
    with torch.no_grad():
        full = model(lag_test[0])[:, -1]
        cache = model.new_cache()
        model(prompt, cache=cache)
        forgot = model(
            last, positions=torch.zeros(512, 1, dtype=torch.long), cache=cache
        )[:, -1]
    return full, forgot


lag_models = [table_models["lag 3 (relative task)", seed] for seed in SEEDS]
decoded = [decode_last(model) for model in lag_models]  # section 4's models
last_right = {
    way: [(pair[i].argmax(-1) == target_last).float().mean().item()
          for pair in decoded]
    for i, way in enumerate(("full recomputation", "cached step at position 0"))
}
print(
    f"accuracy of the last prediction, over {len(SEEDS)} seeds: "
    + ", ".join(f"{way} {mean_std(acc, 2)}" for way, acc in last_right.items())
)

# %% [markdown]
# **Caught by** the cache test: "prefix into the cache, then one step" must equal a full
# recomputation (`last_token_logits_two_ways`). The library's step counts on from the cache
# length:

# %% tags=["nbval-check-output"]
for model in lag_models:
    full_logits, cached_logits = last_token_logits_two_ways(
        model, lag_test[0][:64]
    )
    assert_close(cached_logits, full_logits)
gaps_last = [(forgot - full).abs().max().item() for full, forgot in decoded]
print(
    f"library decode step == full recomputation on {len(SEEDS)} seeds; buggy"
    f" step differs by up to {mean_std(gaps_last, 2)} logits"
)
buggy_last = last_right["cached step at position 0"]
assert min(gaps_last) > 1.0 and max(buggy_last) < 0.5

# %% [markdown]
# ### 5.7 · Position applied to v as well as q and k
# RoPE must leave the values alone; a layer that rotates v too carries absolute position into
# its output. The RoPE models' attention layers by hand, with and without rotating v:

# %%
h = torch.randn(4, SEQ, D_MODEL, generator=gen)


def rope_layer(
    model: TinyTransformer, positions: torch.Tensor, rotate_v: bool
) -> torch.Tensor:
    """A trained attention layer on ``h``; ``rotate_v`` adds the bug."""
    attn = model.blocks[0].attn
    with torch.no_grad():
        q, k, v = (
            t.view(4, SEQ, N_HEADS, HEAD_DIM).transpose(1, 2)
            for t in attn.qkv(h).chunk(3, dim=-1)
        )
        q, k = attn.scheme.rotate_qk(q, k, positions)
        if rotate_v:
            v = attn.scheme.rotate_qk(v, v, positions)[0]
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return attn.out(y.transpose(1, 2).reshape(4, SEQ, D_MODEL))


def drift(model: TinyTransformer, rotate_v: bool) -> float:
    """Max |output change| of the layer when all positions move by 100."""
    base = torch.arange(SEQ)[None]
    moved = rope_layer(model, base + 100, rotate_v)
    return (moved - rope_layer(model, base, rotate_v)).abs().max().item()


drifts = {
    rotate_v: [drift(model, rotate_v) for model in rope_models]
    for rotate_v in (False, True)
}
print(
    "max |output change| when all positions move by 100, section 3's"
    f" {len(SEEDS)} models: q, k rotated at most {max(drifts[False]):.1e};"
    f" v rotated too {mean_std(drifts[True], 2)}"
)

# %% [markdown]
# **Caught by** the shift check of section 1, on the layer itself.

# %%
assert max(drifts[False]) < 1e-4 < 0.05 < min(drifts[True])

# %% [markdown]
# ## 6 · A checklist: adding position to a model
#
# | # | Check | How | Where |
# |---|---|---|---|
# | 1 | Position arrives, of the expected kind | untrained: removing the scheme changes outputs, a shift does (absolute) or not (relative); probe: above its floors shows position, at chance nothing | §1; `with_scheme`, `shift_sensitivity`, `permutation_sensitivity`, `position_probe` |
# | 2 | A learnable table trains at the rows used | row gradients after one `backward()`; `grad is None`: detached or frozen | §2; `row_gradient_norms` |
# | 3 | The trained model uses position | diagonal attention maps change with wrong positions | §3; `TinyTransformer.attention_weights` |
# | 4 | Padding does not change real tokens | padded vs unpadded outputs; left padding: `cumsum(mask) - 1` | §4; `position_ids_from_mask` |
# | 5 | A checkpoint matches its source, layout included | golden-output test after loading | §5.1; `convert_qk_weight` |
# | 6 | Angles in float32 | shift check in the model dtype at large positions | §5.2; `rope_cos_sin` |
# | 7 | Even widths where pairs are used | a clear library error | §5.3 |
# | 8 | Positions inside a learned table | `LearnablePE` raises past `max_len`; never clamp | §5.4 |
# | 9 | Scores scaled as in the reference model ($1/\sqrt{d}$ for ALiBi, none for T5) | compare with `scaled_dot_product_attention` | §5.5 |
# | 10 | A decode step uses the right positions | cached step == full recomputation | §5.6; `last_token_logits_two_ways` |
# | 11 | Position touches q and k only (RoPE) | shift check on the attention layer | §5.7 |
# | 12 | Token and position vectors have matching scales | row norms before the first layer | [02](02_learnable.ipynb), section 7 |

# %% [markdown]
# ## Summary
#
# - **Probe** (§1): only *added* encodings give absolute position on identical tokens; RoPE, T5
#   and ALiBi stay exactly at chance, and untrained checks show them relative. With a start token
#   every decoder learns it, the one without position too; the article's test keeps the
#   relative schemes at chance (E7), and a probe at chance is no verdict.
# - **Gradients** (§2) reach a learnable table exactly at the rows real tokens use; a detached
#   table escapes the probe, not the gradient check (or a weight diff).
# - **Attention maps** (§3): with all position ids 0, RoPE decoders lose their stripes and fall
#   from 1.00 to 0.16, behind a bag of earlier tokens (0.25).
# - **Padding** (§4): left padding with default positions breaks absolute encodings on tasks
#   that read absolute position (first-token models: 1.00 -> 0.30; lag-3 models survive; E6); `cumsum(mask) - 1` fixes them; relative schemes are immune,
#   dynamic NTK is not.
# - **Bug zoo** (§5): seven bugs, each caught by a check or an error.

# %% [markdown]
# ### Open-ended experiment · And float16?
#
# Exercise 4 finds where bfloat16 angles break. Where should float16 (11 significant bits)
# break, and does it? Start from a copy of `Bf16AnglesRoPE` whose `cos_sin` uses
# `torch.float16`, the model in float16, and `shifted_accuracy` at shifts around your
# prediction; compare with `torch.tensor(2049.0, dtype=torch.float16)`. Which matters more for
# a lag-3 task: the rounding of the position or of the angle $m\theta_i$?

# %% [markdown]
# ## Exercises
#
# ### Exercise 1 · Position ids of packed documents
# Training often packs short documents one after another into a row, with no padding
# (Hugging Face's `DataCollatorWithFlattening` does); each document must still count its
# positions from 0. Write `packed_position_ids(doc_ids)`: `doc_ids` (batch, seq) int64 labels
# each token's document (a run of equal ids is one document; the ids are labels, not counts);
# return (batch, seq) int64, each token's index inside its own document.
# Example: `[[5, 5, 5, 2, 2]]` gives `[[0, 1, 2, 0, 1]]`.


# %% tags=["exercise", "nbval-check-output"]
def packed_position_ids(doc_ids: torch.Tensor) -> torch.Tensor:
    raise NotImplementedError  # your code here


check_exercise_1(packed_position_ids)

# %% [markdown]
# ### Exercise 2 · The positions of a batched decode step
# A left-padded batch of prompts has gone through a causal model with positions from the mask,
# filling the KV cache. Now `n_new` more tokens per row are fed at once. Write
# `decode_positions(attn_mask, n_new)`: `attn_mask` (batch, prompt_len) is the prompt's mask;
# return the (batch, n_new) int64 positions of the new tokens. The checker runs a model with a
# learnable table both ways and compares with each row recomputed without padding.


# %% tags=["exercise", "nbval-check-output"]
def decode_positions(attn_mask: torch.Tensor, n_new: int) -> torch.Tensor:
    raise NotImplementedError  # your code here


check_exercise_2(decode_positions)

# %% [markdown]
# ### Exercise 3 · Which rows will train?
# Predict the gradient check of section 2 without running it: `rows_with_gradient(positions,
# attn_mask, max_len)` gets the (batch, seq) positions and mask of a batch fed to a model with a
# learnable table of `max_len` rows (loss on real tokens only); return a (max_len,) bool tensor,
# True for the rows that will receive non-zero gradient. The checker runs the backward pass.


# %% tags=["exercise", "nbval-check-output"]
def rows_with_gradient(
    positions: torch.Tensor, attn_mask: torch.Tensor, max_len: int
) -> torch.Tensor:
    raise NotImplementedError  # your code here


check_exercise_3(rows_with_gradient)

# %% [markdown]
# ### Exercise 4 · Predict, then run: where do bfloat16 angles break?
# Section 5.2's model with bfloat16 angles was perfect at the training positions and far below
# that at positions + 1000. The next cell runs seed 0's pair at the shifts
# 0, 64, 128, ..., 512 and finds the first shift at which the buggy model falls below 0.9.
# Write your prediction of that shift into `predicted_break` first, then run the cell: it shows the curve once you have predicted.

# %%
predicted_break = ...  # your prediction: one of 0, 64, 128, ..., 512

# %% tags=["exercise", "nbval-check-output"]
SHIFTS = list(range(0, 513, 64))
curve = {s: shifted_accuracy(bf16_buggy, s) for s in SHIFTS}
first_break = next(s for s in SHIFTS if curve[s] < 0.9)
check_exercise_4(predicted_break, first_break)
if predicted_break is not ...:  # the curve, once you have predicted
    print({s: round(a, 2) for s, a in curve.items()})

# %% [markdown]
# ### Exercise 5 · Explain why: the article's test and the start token
# In section 1 a RoPE decoder learned absolute position from a start token; in the article's
# test (word embeddings zeroed) the same decoder with the same start token stays exactly at
# chance on every seed. Why?
#
# - **(a)** Zero embeddings make every score zero, so attention is uniform, and a uniform
#   average over the earlier tokens carries no position.
# - **(b)** Frozen embeddings get no gradient, so during training the model cannot learn to tell
#   the start token from the other tokens.
# - **(c)** Zeroing the embeddings zeroes the start token's too, so nothing in the decoder's
#   input marks index 0 as different any more.
# - **(d)** With zero embeddings the causal mask has nothing to act on, so it no longer hides the
#   later tokens and the decoder behaves as an encoder.

# %% tags=["exercise", "nbval-check-output"]
answer_5 = ...  # "a", "b", "c" or "d"
check_exercise_5(answer_5)

# %% [markdown]
# ## Further reading
#
# - Hugging Face `transformers` ([`generation/utils.py`](https://github.com/huggingface/transformers/blob/main/src/transformers/generation/utils.py)): `GenerationMixin._prepare_position_ids_for_generation`
#   computes `attention_mask.long().cumsum(-1) - 1` with pads set to 0 (in 4.x releases, GPT-2's and
#   Llama's `prepare_inputs_for_generation` did it, with pads at 1), and each decode step continues
#   from the last position + 1 (`_update_model_kwargs_for_generation`). The tokenizers'
#   `padding_side="left"` for batched generation. `tests/lib/test_diagnostics.py` checks
#   `position_ids_from_mask` against it, and against a GPT-2 built from a config.
# - Hugging Face [`convert_llama_weights_to_hf.py`](https://github.com/huggingface/transformers/blob/main/src/transformers/models/llama/convert_llama_weights_to_hf.py): the q/k permutation between Meta's interleaved
#   and Hugging Face's half-split RoPE layout (notebook 03, section 6).
# - Haviv et al., *[Transformer Language Models without Positional Encodings Still Learn Positional
#   Information](https://arxiv.org/abs/2203.16634)* (2022): the causal mask as a position signal (their conjecture), with probes of trained language models.
# - Kazemnejad et al., *[The Impact of Positional Encoding on Length Generalization in Transformers](https://arxiv.org/abs/2305.19466)*
#   (2023): NoPE, relative and absolute schemes compared.
# - Su et al., *[RoFormer](https://arxiv.org/abs/2104.09864)* (2021); Raffel et al., *[T5](https://arxiv.org/abs/1910.10683)* (2020); Press et al., *[ALiBi](https://arxiv.org/abs/2108.12409)* (2022); Vaswani
#   et al., *[Attention Is All You Need](https://arxiv.org/abs/1706.03762)* (2017), section 3.2.1 (the $1/\sqrt{d_k}$ scale).
# - This library: `posenc_lib/analysis/probes.py` (every check of this notebook), `posenc_lib/rotary/rope.py`
#   (`rope_cos_sin` computes angles in float32), `posenc_lib/embeddings/learnable.py` (the `max_len` error).
# - `docs/replication.md`: the headline results of the papers this course teaches, beside the
#   numbers its notebooks measure at toy scale, whether they agree, and why not where they do not.

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ## Solutions


# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
def packed_position_ids(doc_ids: torch.Tensor) -> torch.Tensor:
    slot = torch.arange(doc_ids.shape[-1]).expand_as(doc_ids)
    starts = torch.ones_like(doc_ids, dtype=torch.bool)  # a document begins
    starts[:, 1:] = doc_ids[:, 1:] != doc_ids[:, :-1]
    # the slot of the latest start so far, subtracted from each slot
    return slot - torch.where(starts, slot, 0).cummax(-1).values


check_exercise_1(packed_position_ids)


# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
def decode_positions(attn_mask: torch.Tensor, n_new: int) -> torch.Tensor:
    # The next position of each row is the number of its real tokens so far, whatever the padding.
    return attn_mask.long().sum(-1, keepdim=True) + torch.arange(n_new)


check_exercise_2(decode_positions)


# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
def rows_with_gradient(
    positions: torch.Tensor, attn_mask: torch.Tensor, max_len: int
) -> torch.Tensor:
    rows = torch.zeros(max_len, dtype=torch.bool)
    rows[positions[attn_mask.bool()]] = True  # only real tokens reach the loss
    return rows


check_exercise_3(rows_with_gradient)

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
# positions s .. s + 15 are all exact in bfloat16 while s + 15 <= 256;
# from 256 on, odd positions round to even ones
predicted_break = 256
check_exercise_4(predicted_break, first_break)
print({s: round(a, 2) for s, a in curve.items()})

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
check_exercise_5("c")  # identical inputs, identical values (section 1)

# %% [markdown]
# ## End of notebook 07
# <!-- Keep this cell last. "Run All" ends on the last cell, and JupyterLab unfolds the section that
#      holds it: outside "Solutions", this heading leaves the solutions folded. -->

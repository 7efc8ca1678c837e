# %% [markdown]
# # 00 · Permutation blindness
#
# *Why a Transformer needs position information at all.*
#
# **The question.** "The cat chases the mouse" and "the mouse chases the cat" hold the same
# words; only their order tells who chases whom. Does a Transformer see that order? Its central
# operation, self-attention, mixes every token with every other by content. Nothing in the
# formula says which token came first. Before we learn *how* to give a model positions
# (notebooks 01-08), we ask *whether* it needs them, and when ignoring order is what one
# wants.
#
# **What you will learn**
# - Check that self-attention without positions is *permutation-equivariant* (shuffle the
#   tokens and the outputs are shuffled the same way), and that mean pooling makes the model
#   *permutation-invariant*: it sees a bag of tokens.
# - Read trained results beside their floors: an encoder without positions stays at the
#   bag-of-words ceiling on a who-did-what task; with an encoding it solves it, as does a
#   classifier that reads only adjacent word pairs.
# - Weigh adding a position vector against concatenating one.
# - Name the places where position can enter a Transformer (how `posenc_lib` is organised),
#   and tell absolute from relative encodings.
# - Say when "no position" is the right design: sets.
#
# **Prerequisites:** PyTorch tensors and `nn.Module`; the scaled dot-product attention
# formula. No earlier notebook is needed: this is the first one.
#
# **Run time:** about 77 s on a laptop CPU (measured with `make execute`, one thread), timed on
# one core of a 2-core server. **Study time:** one lesson of about 90 minutes.

# %%
import math
from itertools import permutations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch

from posenc_course.data import Vocab, WhoDidWhat
from posenc_course.exercises.nb00 import (
    ANIMALS,
    LOPSIDED_TASK,
    check_exercise_1,
    check_exercise_2,
    check_exercise_3,
)
from posenc_course.floors import chance, fixed, no_position, with_floors
from posenc_course.plotting import heatmap, line_plot, moving_average
from posenc_course.report import checked, formatted, rounding
from posenc_course.training import (
    accuracy,
    progress,
    seed_everything,
    setup_notebook,
    train,
)
from posenc_lib.attention import MultiHeadAttention
from posenc_lib.embeddings.learnable import LearnablePE
from posenc_lib.embeddings.sinusoidal import SinusoidalPE
from posenc_lib.models import TinyTransformer, TransformerBlock
from posenc_lib.scheme import NoPosition, PositionScheme

gen = setup_notebook(0)  # threads, figure style, seeds; gen: random data

# %% [markdown]
# ## 1. Does attention know where a token is?
#
# **Question.** If we shuffle the tokens of a sequence, does attention notice, or does each
# token get the same output, just in its new place? The picture: the library's attention
# layer (`MultiHeadAttention`, 4 heads, scheme `NoPosition`: no position information at all)
# on 6 random token vectors, then on the same vectors shuffled. The labels name the tokens.

# %% tags=["nbval-check-output"]
d_model, n_heads, seq = 16, 4, 6
attn = MultiHeadAttention(d_model, n_heads, NoPosition()).double().eval()
X = 3 * torch.randn(1, seq, d_model, generator=gen, dtype=torch.float64)
P = torch.tensor([3, 0, 5, 1, 4, 2])  # a shuffle: new row i holds token P[i]
with torch.no_grad():
    Y, Y_p = attn(X), attn(X[:, P])  # (batch, seq, d_model) each
rows, rows_p = [f"t{i}" for i in range(seq)], [f"t{i}" for i in P.tolist()]
fig, axes = plt.subplots(2, 2, figsize=(7.5, 5.0))
panels = [(X[0], "input X", rows), (Y[0], "output Attn(X)", rows),
          (X[0, P], "shuffled input X[P]", rows_p),
          (Y_p[0], "output Attn(X[P])", rows_p)]
for ax, (matrix, title, labels) in zip(axes.flat, panels):
    heatmap(ax, matrix.numpy(), title, "feature index", "token",
            colorbar_label="value (no unit)", center=True)
    ax.set_yticks(range(seq), labels)
    ax.set_xticks(range(0, d_model, 3))
plt.show()

# %% [markdown]
# The bottom-right rows are the top-right rows, reordered exactly like the inputs: each
# token's output travelled with it. **Why.** Stack the $n$ token vectors as the rows of
# $X \in \mathbb{R}^{n \times d}$. One head computes
#
# $$\mathrm{Attn}(X) = \mathrm{softmax}(S)\, X W_v, \qquad
#   S = \tfrac{1}{\sqrt{d_h}}(XW_q)(XW_k)^\top .$$
#
# Shuffle the tokens with a permutation matrix $P$ (one 1 in each row and column). The
# scores become $P S P^\top$: rows *and* columns shuffled the same way. Permuting a row's
# entries permutes its softmax the same way, so
# $\mathrm{softmax}(PSP^\top) = P\,\mathrm{softmax}(S)\,P^\top$, and since $P^\top P = I$:
#
# $$\mathrm{Attn}(PX) = P\,\mathrm{softmax}(S)\,P^\top P X W_v = P\,\mathrm{Attn}(X).$$
#
# The formula in a few lines, in float64, so that the only differences left are rounding
# errors, far below $10^{-12}$:

# %% tags=["nbval-check-output"]
def attention(X, W_q, W_k, W_v):
    """One head without positions. X: (n, d); W_q, W_k, W_v: (d, d_h)."""
    scores = (X @ W_q) @ (X @ W_k).T / W_k.shape[1] ** 0.5  # (n, n)
    return torch.softmax(scores, dim=-1) @ (X @ W_v)  # (n, d_h)


n, d, d_h = 5, 8, 4
X_small = torch.randn(n, d, dtype=torch.float64, generator=gen)
W_q, W_k, W_v = (torch.randn(d, d_h, dtype=torch.float64, generator=gen)
                 for _ in range(3))
out = attention(X_small, W_q, W_k, W_v)
for trial in range(3):
    perm = torch.randperm(n, generator=gen)
    out_p = attention(X_small[perm], W_q, W_k, W_v)
    torch.testing.assert_close(out_p, out[perm])  # Attn(PX) == P Attn(X)
    gap = rounding((out_p - out[perm]).abs().max())
    print(f"P = {perm.tolist()}: max |Attn(X[P]) - Attn(X)[P]| = {gap}")

# %% [markdown]
# **Check.** The library's layer adds heads and projections that act token by token, so the
# argument carries over; the hidden cell below tries five more shuffles on it, outputs and
# attention weights.

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
with torch.no_grad():
    Y, A = attn(X, return_weights=True)  # A: (batch, heads, seq, seq)
    for trial in range(5):
        perm = torch.randperm(seq, generator=gen)
        Y_p, A_p = attn(X[:, perm], return_weights=True)
        torch.testing.assert_close(Y_p, Y[:, perm])
        torch.testing.assert_close(A_p, A[:, :, perm][:, :, :, perm])
checked("5 shuffles: MultiHeadAttention's outputs and weights move with "
        "their tokens (float64 rounding)")

# %% [markdown]
# ### The whole encoder
# An encoder is attention plus parts that act on each token separately (embedding, LayerNorm,
# MLP, residuals), so the whole stack is equivariant too. Averaging over tokens ("mean
# pooling") then removes the order: the pooled output is *invariant*. `TinyTransformer` with
# `pool="none"` returns one output per token, with `pool="mean"` one per sequence.

# %% tags=["nbval-check-output"]
torch.manual_seed(0)
sizes = dict(vocab_size=20, n_outputs=3, d_model=32, n_heads=4, n_layers=2)
encoder = TinyTransformer(**sizes, pool="none").double().eval()
pooled = TinyTransformer(**sizes, pool="mean").double().eval()
tokens = torch.randint(0, 20, (4, 10), generator=gen)  # (batch, seq) token ids
with torch.no_grad():
    perm = torch.randperm(10, generator=gen)
    moved = (encoder(tokens[:, perm]) - encoder(tokens)[:, perm]).abs().max()
    still = (pooled(tokens[:, perm]) - pooled(tokens)).abs().max()
print(f"per-token outputs, shuffled back: max |diff| {rounding(moved)}")
print(f"mean-pooled output: max |diff| {rounding(still)}")
assert moved < 1e-12 and still < 1e-12

# %% [markdown]
# **Takeaway:**
# - without position information a Transformer encoder cannot tell one order of its tokens
#   from another: per-token outputs move with the tokens, the pooled output does not move;
# - whatever it computes from a sentence, it computes from the *bag* (multiset) of tokens.

# %% [markdown]
# ## 2. "The cat chases the mouse"
#
# **Question.** Two sentences with opposite meanings and the same bag of words: does a model
# without positions give them different representations? The source article opens (§1) with
# a Chinese pair: 「对于“我爱北京”和“北京爱我”这两个词序完全不同的输入，如果不做任何处理，它会计算出几乎相同的注意力权重」
# ("for 'I love Beijing' and 'Beijing loves me', two inputs with entirely different word
# orders, without any treatment it would compute almost the same attention weights"). It is
# the same bag of four characters; we tokenise Chinese by character. A `Vocab` maps tokens
# to ids.

# %% tags=["nbval-check-output"]
pairs = {
    "English": ("the cat chases the mouse", "the mouse chases the cat",
                str.split),
    "Chinese": ("我爱北京", "北京爱我", list),
}
vocabs = {lang: Vocab.from_texts([a, b], split)
          for lang, (a, b, split) in pairs.items()}
for lang, (a, b, split) in pairs.items():
    ids_a, ids_b = vocabs[lang].encode(split(a)), vocabs[lang].encode(split(b))
    assert sorted(ids_a.tolist()) == sorted(ids_b.tolist())  # the same bag
    print(f"{lang}: {ids_a.tolist()} / {ids_b.tolist()}")

# %% [markdown]
# Now feed each pair to two untrained models with the same weights (same seed) and different
# schemes: `NoPosition`, or the original Transformer's sinusoidal encoding (`SinusoidalPE`,
# notebook 01: a fixed vector added at each position). The table compares the mean-pooled
# representations of the two sentences.

# %% tags=["nbval-check-output"]
def make_model(vocab_size: int, scheme: PositionScheme) -> TinyTransformer:
    torch.manual_seed(0)  # the same weights for every scheme
    return TinyTransformer(vocab_size, n_outputs=2, d_model=32, n_heads=4,
                           n_layers=2, scheme=scheme).double().eval()


rows = []
for lang, (a, b, split) in pairs.items():
    vocab = vocabs[lang]
    ids_a, ids_b = vocab.encode(split(a))[None], vocab.encode(split(b))[None]
    row = {"pair": f"{a} / {b}"}
    for name, scheme in (("no position", NoPosition()),
                         ("sinusoidal", SinusoidalPE(32))):
        model = make_model(len(vocab), scheme)
        with torch.no_grad():
            h_a = model.features(ids_a).mean(dim=1)
            h_b = model.features(ids_b).mean(dim=1)
        row[f"{name}: max |diff|"] = (h_a - h_b).abs().max().item()
        row[f"{name}: cosine"] = torch.cosine_similarity(h_a, h_b).item()
    rows.append(row)
similarity = pd.DataFrame(rows).set_index("pair")
formatted(similarity, {c: rounding if "diff" in c else "{:.4f}"
                       for c in similarity.columns})

# %% [markdown]
# Without positions the two sentences are the same point (differences at float64 rounding,
# cosine 1): not "almost the same", as the article puts it, but the same, up to the order of
# the tokens. With the sinusoidal encoding they differ, though only slightly (cosine still
# close to 1): an untrained model need not separate them far, only at all, and section 3
# asks whether training uses that. It is worse than "the sentence vectors agree": by
# equivariance, the hidden state of the *token* "cat" is the same whether the cat chases or
# is chased. No later layer can recover who did what.

# %% tags=["nbval-check-output"]
vocab = vocabs["English"]
blind = make_model(len(vocab), NoPosition())
s1, s2 = "the cat chases the mouse".split(), "the mouse chases the cat".split()
with torch.no_grad():
    h1 = blind.features(vocab.encode(s1)[None])[0]  # (seq, d_model)
    h2 = blind.features(vocab.encode(s2)[None])[0]
cat_agent, cat_patient = h1[s1.index("cat")], h2[s2.index("cat")]
gap = rounding((cat_agent - cat_patient).abs().max())
print(f"'cat' as agent vs as patient: max |diff| {gap}")

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
torch.testing.assert_close(cat_agent, cat_patient)
assert (similarity["no position: max |diff|"] < 1e-12).all()
assert (similarity["no position: cosine"] > 1 - 1e-12).all()
assert (similarity["sinusoidal: max |diff|"] > 0.05).all()
same = [make_model(20, s).state_dict()
        for s in (NoPosition(), SinusoidalPE(32))]
assert all(torch.equal(same[0][k], same[1][k]) for k in same[0])
checked("both pairs: identical without positions, apart with the sinusoidal "
        "encoding; the two models share every weight")

# %% [markdown]
# **Takeaway:**
# - two sentences with the same bag of tokens are one input to a model without positions,
#   down to the hidden state of each token;
# - the same weights with a position encoding tell them apart.

# %% [markdown]
# ## 3. A task that needs word order: who did what to whom?
#
# **Question.** Section 2 was about untrained models. Can training make up for the missing
# order? We need a task that only word order solves, and the exact best score of a model that
# sees only the bag of tokens.
#
# `posenc_course.data.WhoDidWhat` writes short sentences and asks for the **agent** (the one
# who acts), in the active voice ("the cat chases the small mouse") and the passive ("the
# mouse was chased by the cat"), with optional adjectives, so the agent moves. The sentence
# with agent and patient swapped is exactly as likely. Three pairs of animals (e.g. cat and
# bird) occur only in the test split: a high test accuracy means the model learned the
# *rule*, not the sentences.

# %% tags=["nbval-check-output"]
task = WhoDidWhat()
examples, agents = task.sample(6, seed_everything(0), split="train")
for ids, agent in zip(examples, agents):
    sentence = " ".join(task.vocab.decode(ids))
    print(f"{sentence:<46} agent = {task.entities[agent]}")

# %% [markdown]
# How well can a bag-of-words model do *at best*? `bag_of_words_ceiling` enumerates every
# sentence the generator can produce, groups them by their bag of tokens, and credits each
# bag with its most likely agent. Here every bag has both animals as agent equally often:
# the ceiling is a coin flip, and the best cross-entropy that of a fair coin, $\ln 2$.

# %% tags=["nbval-check-output"]
ceiling = {split: task.bag_of_words_ceiling(split)
           for split in ("train", "test")}
print(f"bag-of-words ceiling: train {ceiling['train']:.3f}, "
      f"test {ceiling['test']:.3f}; best loss ln 2 = {math.log(2):.3f} nats")

# %% [markdown]
# Now train `TinyTransformer` classifiers that are identical (width 32, 2 layers, 300 steps
# of 64 fresh sentences from the training split) except for how they may see order, with
# three seeds: an encoder without positions, the same encoder with the sinusoidal encoding,
# and a third arm section 1 did not cover, a *causal decoder* without positions (each token
# attends only to itself and earlier tokens; it reads its answer at the last slot). Seed $s$
# fixes the initial weights and the batches of all three arms.

# %% tags=["nbval-check-output"]
test_x, test_y = task.sample(2000, torch.Generator().manual_seed(1), "test")
train_x, train_y = task.sample(2000, torch.Generator().manual_seed(2), "train")
arms = {"no position": dict(scheme=NoPosition()),
        "sinusoidal": dict(scheme=SinusoidalPE(32)),
        "decoder, no position": dict(scheme=NoPosition(), causal=True,
                                     pool="last")}
seeds = (0, 1, 2)
models, losses = {}, {}
runs = [(name, seed) for seed in seeds for name in arms]
for name, seed in progress(runs, desc="training 3 arms x 3 seeds"):
    torch.manual_seed(seed)
    model = TinyTransformer(len(task.vocab), task.n_classes, d_model=32,
                            n_heads=4, n_layers=2, **arms[name])
    batches = torch.Generator().manual_seed(3 + seed)
    draw = lambda step: task.sample(64, batches, split="train")  # noqa: E731
    losses[name, seed] = train(model, draw, steps=300, desc=None)
    models[name, seed] = model

# %% [markdown]
# One row per trained model. Besides the accuracies, the column "names a present animal"
# counts how often the predicted agent is one of the two animals in the sentence at all.

# %% tags=["nbval-check-output"]
entity_ids = task.vocab.encode(list(task.entities))
present = (test_x[:, :, None] == entity_ids).any(dim=1)  # (n, animals)
results = []
for (name, seed), model in models.items():
    with torch.no_grad():
        pred = model(test_x).argmax(-1)
    results.append({
        "arm": name, "seed": seed,
        "train-split accuracy": accuracy(model, train_x, train_y),
        "test accuracy (unseen pairs)": accuracy(model, test_x, test_y),
        "names a present animal": present[torch.arange(len(pred)), pred]
        .float().mean().item(),
        "final loss": float(np.mean(losses[name, seed][-50:])),
    })
table = pd.DataFrame(results).set_index(["arm", "seed"]).sort_index()
formatted(table, {c: "{:.3f}" for c in table.columns})

# %% [markdown]
# A trained result means something only beside its **floors**: what a sceptic would get
# without the idea under test, on the same test sentences. Here: the encoder without
# positions, trained the same way; the exact bag-of-words ceiling; chance, a uniform guess
# among the six animals; and the sceptic's strongest, a **bigram classifier**: a logistic
# regression on the counts of adjacent word pairs ("cat chases", "the cat", "cat" before the
# pad), fitted on the 2000 training-split sentences. It sees order, two words at a time.

# %% tags=["nbval-check-output"]
V = len(task.vocab)  # token 0 is the pad


def bigram_counts(x: torch.Tensor) -> torch.Tensor:
    """(n, seq) token ids -> (n, V * V) counts of adjacent pairs."""
    x = torch.cat([x, torch.zeros_like(x[:, :1])], dim=1)  # a final pad
    pair = x[:, :-1] * V + x[:, 1:]
    return torch.zeros(len(x), V * V).scatter_add_(1, pair,
                                                   torch.ones(pair.shape))


bigram = torch.nn.Linear(V * V, task.n_classes)
torch.nn.init.zeros_(bigram.weight), torch.nn.init.zeros_(bigram.bias)
optimiser = torch.optim.Adam(bigram.parameters(), lr=0.05)
counts = bigram_counts(train_x)
for step in range(200):  # full batch from zero: no seed involved
    optimiser.zero_grad()
    torch.nn.functional.cross_entropy(bigram(counts), train_y).backward()
    optimiser.step()
with torch.no_grad():
    right = bigram(bigram_counts(test_x)).argmax(-1) == test_y
bigram_acc = right.float().mean().item()
print(f"bigram classifier on the unseen pairs: {bigram_acc:.3f}")

# %% [markdown]
# The series reads each comparison with one rule (`compare`, docs/comparison.md, taught in
# notebook 02): A is ahead of B when the mean gap clears twice the seed standard deviation
# and 0.02.

# %% tags=["nbval-check-output"]
acc = table["test accuracy (unseen pairs)"]
floors = [no_position(acc["no position"].tolist()),
          fixed("bag of words", ceiling["test"], "exact ceiling"),
          chance(task.n_classes),
          fixed("bigram classifier", bigram_acc, "word pairs, fitted")]
scored = with_floors({name: acc[name].tolist()
                      for name in ("sinusoidal", "decoder, no position")},
                     floors, metric="test accuracy (unseen pairs)")

# %% [markdown]
# The loss curves, one line per seed: the blind encoders level off just above $\ln 2$, the
# bag-of-words optimum; the other two arms go on down.

# %% tags=["nbval-check-output"]
fig, ax = plt.subplots()
curves = {f"{name}, seed {seed}": moving_average(loss)
          for (name, seed), loss in sorted(losses.items())}
steps = np.arange(len(next(iter(curves.values())))) + 10
line_plot(ax, steps, curves, "Who did what: training loss, 3 seeds",
          "training step", "cross-entropy (nats, 10-step mean)", logy=True)
ax.axhline(math.log(2), color="black", linewidth=1, linestyle=":")
ax.text(300, math.log(2) * 0.92, "ln 2: best from a bag of words",
        ha="right", va="top", fontsize=10)
plt.show()

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
blind_runs, sin_runs = table.loc["no position"], table.loc["sinusoidal"]
causal_runs = table.loc["decoder, no position"]
off = blind_runs["train-split accuracy"] - ceiling["train"]
assert (off.abs() < 0.03).all()
assert (blind_runs["test accuracy (unseen pairs)"] < ceiling["test"]).all()
assert (blind_runs["final loss"] > math.log(2) - 0.03).all()
for runs_ in (sin_runs, causal_runs):
    assert (runs_[["train-split accuracy", "test accuracy (unseen pairs)"]]
            >= 0.95).all().all() and (runs_["final loss"] < 0.1).all()
for arm in ("sinusoidal", "decoder, no position"):
    assert scored.beats(arm) == ["no position", "bag of words", "chance"]
    assert scored.verdict(arm, "no position").gap > 0.4
    assert not scored.verdict(arm, "bigram classifier").separated
assert bigram_acc > 0.99
named = blind_runs["names a present animal"]
assert 0.65 < named[0] < 0.85 and (named[1:] > 0.99).all()
assert len({m.num_parameters() for m in models.values()}) == 1  # a buffer
checked("3 seeds: blind encoders at the ceiling on training pairs, below it "
        "on unseen pairs; the sinusoidal encoder and the causal decoder "
        ">= 0.95, ahead of the floors without order and level with the "
        "bigram classifier; same parameter count")

# %% [markdown]
# The encoder without positions sits at the coin-flip ceiling on the training split: it
# cannot know which of the two animals acted. With the sinusoidal encoding the same network
# solves the task on every seed, on animal pairs it never saw together, ahead of the three
# floors that see no order. It is not separated from the bigram classifier, which gets every
# unseen pair right too ("cat chases" names an active agent, "cat" before the pad a passive
# one). So this task shows *whether* a model sees order, not how good a way of giving it
# order is.
#
# **The headline is about encoders.** The causal decoder has no position encoding either,
# and it solves the task too (the table's third arm). It differs from the blind encoder in
# its mask and in reading its answer at the last slot; section 1's argument assumed that
# every token attends to every other (exercise 2 asks what changes without that). Which of
# the two differences matters here is the open-ended experiment's question. Decoders without
# any encoding (NoPE) return in notebook 05.
#
# On the unseen pairs, seed 0's blind model names an absent animal in about a quarter of its
# answers (0.762 name a present one); seeds 1 and 2 never do.

# %% [markdown]
# **Takeaway:**
# - the blind encoders are not badly trained: their loss levels off just above $\ln 2$, the
#   best a bag of words allows, and their accuracy on training pairs sits at its ceiling;
# - an encoder needs positions: with them, the same network solves the task on unseen pairs;
#   a causal decoder without positions solves it too (through its mask or its last-slot
#   readout: the open-ended experiment's question);
# - a detail seen on one seed (absent animals named) is a hypothesis until other seeds agree.

# %% [markdown]
# ## 4. Adding or concatenating the position vector?
#
# **Question.** How should a position vector $p_i$ meet the token embedding $e_i$? The
# original Transformer *adds* them: the width stays $d$. The alternative is to *concatenate*
# $[e_i; p_i]$, keeping the two apart in a wider model. A linear layer on a concatenation is
# the sum of two linear maps, one per part:
#
# $$W\,[e; p] = W_e\, e + W_p\, p \quad\text{with } W = [W_e \;\; W_p],$$
#
# so concatenating is adding after separate projections; adding asks the model to keep both
# kinds of information apart inside the same $d$ dimensions. The identity, numerically:

# %% tags=["nbval-check-output"]
d_tok, d_pos, d_out = 8, 4, 5
e = torch.randn(d_tok, dtype=torch.float64, generator=gen)
p = torch.randn(d_pos, dtype=torch.float64, generator=gen)
W = torch.randn(d_out, d_tok + d_pos, dtype=torch.float64, generator=gen)
W_e, W_p = W[:, :d_tok], W[:, d_tok:]
torch.testing.assert_close(W @ torch.cat([e, p]), W_e @ e + W_p @ p)
print("W [e; p] == W_e e + W_p p")

# %% [markdown]
# What concatenation costs: every block (attention $4d^2$, MLP $8d^2$ weights) grows with
# the *square* of the width. The table counts parameters with the library's own
# `TransformerBlock` for the size of the original Transformer base's encoder (width 512,
# 6 layers, 8 heads, a vocabulary of about 37 000 tokens, Vaswani et al. Table 3, "base").
# Its positions are sinusoids, which have no parameters.

# %% tags=["nbval-check-output"]
def parameter_count(d_token: int, d_position: int, concatenate: bool,
                    vocab_size: int = 37_000, n_layers: int = 6,
                    n_heads: int = 8) -> dict[str, int]:
    """Parameters of an encoder with sinusoidal positions (which have none)."""
    width = d_token + d_position if concatenate else d_token
    with torch.device("meta"):
        block = TransformerBlock(width, n_heads, NoPosition(), d_ff=4 * width)
    per_layer = sum(p.numel() for p in block.parameters())
    tokens = vocab_size * d_token
    return {"width": width, "token table": tokens, "per layer": per_layer,
            "total": tokens + n_layers * per_layer}


options = {
    "add (d = 512)": parameter_count(512, 512, concatenate=False),
    "concatenate 512 + 64": parameter_count(512, 64, concatenate=True),
    "concatenate 512 + 512": parameter_count(512, 512, concatenate=True),
    "concatenate 256 + 256 (same width)": parameter_count(256, 256, True),
}
costs = pd.DataFrame(options).T
add_layer = costs.loc["add (d = 512)", "per layer"]
costs["per layer vs add"] = costs["per layer"] / add_layer
ratio = costs.loc["concatenate 512 + 512", "per layer vs add"]
assert 3.9 < ratio < 4.01  # twice the width, about 4x the weights
formatted(costs, {"per layer vs add": "{:.2f}x"}
          | {c: "{:,}" for c in costs.columns[:-1]})

# %% [markdown]
# Concatenating a full-width position vector doubles the width and quadruples the weights
# of every layer. Keeping the width fixed instead halves the room left for the tokens'
# meaning. Adding costs no width: with sinusoids it costs nothing at all, and a learned
# table (notebook 02) costs only its own rows. The Transformer, BERT, GPT-2 and ViT all
# add. (RoPE and the relative biases of later notebooks sidestep the question: they add no
# vector to the embeddings.)

# %% [markdown]
# **Takeaway:**
# - a linear layer on $[e; p]$ is $W_e e + W_p p$: concatenating is adding with separate
#   projections;
# - concatenation pays for it in width, and the weights grow with its square.

# %% [markdown]
# ## 5. The map: where position can enter
#
# **Question.** If attention needs position, where can we put it? Every encoding in this
# series plugs into one of three places: the embeddings, the queries and keys, or the
# scores, which can be biased by position alone (T5, ALiBi) or by a term that also reads the
# query (Transformer-XL). So `posenc_lib.scheme.PositionScheme` has four hooks, each "do
# nothing" by default (exactly `NoPosition`). The score of query $q$ and key $k$ is
#
# $$\text{score} = s\; q\cdot k + \text{biases}, \qquad s = 1/\sqrt{d_h},
#   \text{ and } s = 1 \text{ for T5},$$
#
# because T5 does not scale its scores (it folds the factor into the initialisation of the
# queries); the hook `score_scale(head_dim)` returns $s$.
#
# | hook | called | what it does |
# |---|---|---|
# | `add_to_embeddings(x, positions)` | once, before the first block | adds a vector to each token's embedding (a row per position; PEG's is computed from the tokens) |
# | `rotate_qk(q, k, positions)` | in every attention layer | transforms queries and keys (never values) |
# | `score_bias(q_positions, k_positions)` | in every attention layer | adds a bias of the positions to $s\,q\cdot k$ |
# | `qk_bias(q, k, q_positions, k_positions)` | in every attention layer | adds a bias that also reads q and k |
#
# One scheme object is shared by all layers.

# %% [markdown]
# ### Absolute or relative?
# An **absolute** encoding gives each position its own signal; a **relative** one makes the
# position part of each score depend only on the offset $i - j$. A test: move every position by 7 (as if the
# sentence started later). A relative scheme gives the same outputs, an absolute one does
# not. A second test repeats section 1: does a shuffle still just shuffle the outputs? Both
# on the 1-D schemes, float64, untrained:

# %% tags=["nbval-check-output"]
from posenc_lib.rotary.rope import RotaryPE
from posenc_lib.score_bias.alibi import ALiBi
from posenc_lib.score_bias.t5 import T5RelativeBias

one_d_schemes = {
    "NoPosition": NoPosition,
    "SinusoidalPE": lambda: SinusoidalPE(32),
    "LearnablePE": lambda: LearnablePE(32, max_len=64),
    "RotaryPE": lambda: RotaryPE(head_dim=8),
    "T5RelativeBias": lambda: T5RelativeBias(n_heads=4),
    "ALiBi": lambda: ALiBi(n_heads=4, causal=False),
}
tokens = torch.randint(0, 20, (2, 12), generator=gen)
positions = torch.arange(12)[None]
perm = torch.randperm(12, generator=gen)
rows = []
for name, scheme in one_d_schemes.items():
    torch.manual_seed(0)
    model = TinyTransformer(**sizes, pool="none", scheme=scheme())
    model = model.double().eval()
    with torch.no_grad():
        out = model.features(tokens, positions)
        shifted = model.features(tokens, positions + 7)
        shuffled = model.features(tokens[:, perm], positions)
    rows.append({"scheme": name,
                 "change after shifting all positions by 7":
                 (shifted - out).abs().max().item(),
                 "change after shuffling the tokens":
                 (shuffled - out[:, perm]).abs().max().item()})
tests = pd.DataFrame(rows).set_index("scheme")
shift, shuffle = tests.iloc[:, 0], tests.iloc[:, 1]
tests["encodes"] = np.where(shuffle < 1e-9, "nothing (bag of tokens)",
                            np.where(shift < 1e-5, "relative offsets",
                                     "absolute positions"))
formatted(tests, {c: rounding for c in tests.columns[:2]})

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
expected = {"NoPosition": "nothing (bag of tokens)",
            "SinusoidalPE": "absolute positions",
            "LearnablePE": "absolute positions", "RotaryPE": "relative offsets",
            "T5RelativeBias": "relative offsets", "ALiBi": "relative offsets"}
assert tests["encodes"].to_dict() == expected, tests
assert T5RelativeBias(n_heads=4).score_scale(8) == 1.0
assert math.isclose(NoPosition().score_scale(8), 8 ** -0.5)
checked("6 schemes sorted by the shift and shuffle tests as the map says; "
        "s = 1 for T5, 1/sqrt(d_h) otherwise")

# %% [markdown]
# Shifting changes nothing for RoPE, T5 and ALiBi (what is left is float64 rounding), and
# changes the outputs of the two absolute encodings. Every scheme except `NoPosition` breaks
# the permutation symmetry.
#
# | notebook | topic | hook |
# |---|---|---|
# | 01 | sinusoidal | `add_to_embeddings` (absolute) |
# | 02 | learnable table | `add_to_embeddings` (absolute) |
# | 03 | RoPE | `rotate_qk` (relative) |
# | 04 | vision: 2-D tables and 2-D RoPE | `add_to_embeddings` / `rotate_qk` on the patch grid |
# | 05 | T5, ALiBi, Swin; Transformer-XL; PEG; NoPE | `score_bias`, `qk_bias` (relative) |
# | 06 | length extrapolation | all of them, trained short and tested long |
# | 07 | debugging and practice | all of them |

# %% [markdown]
# **Takeaway:**
# - position enters in one of three places: the embeddings, a rotation of q and k, or the
#   scores (a bias of positions, or one that also reads the query);
# - a shift test tells absolute encodings from relative ones; a shuffle test tells either
#   from none.

# %% [markdown] jp-MarkdownHeadingCollapsed=true tags=["deep-dive"]
# ### Deep dive (optional) · Which hooks each library class uses
#
# Computed from the library's code: the hooks each scheme class overrides. PEG (05) uses
# `add_to_embeddings`, but what it adds is a convolution of the tokens, not a row per
# position, and CPVT applies it after the first encoder block, not before it.

# %% tags=["deep-dive", "nbval-check-output"]
from posenc_lib.conditional.peg import PEG
from posenc_lib.embeddings.tables_2d import Learnable2DPE, SinCos2DPE
from posenc_lib.qk_bias.transformer_xl import TransformerXLRelative
from posenc_lib.rotary.rope_2d import AxialRoPE2D, MixedRoPE2D
from posenc_lib.score_bias.swin import SwinRelativeBias

HOOKS = ("add_to_embeddings", "rotate_qk", "score_bias", "qk_bias",
         "score_scale")
catalogue = {  # scheme class -> (family, notebook that teaches it)
    SinusoidalPE: ("sinusoidal (Vaswani et al.)", "01"),
    LearnablePE: ("learnable table (BERT, GPT-2)", "02"),
    RotaryPE: ("rotary, RoPE (RoFormer, LLaMA)", "03, 06"),
    SinCos2DPE: ("2-D sin-cos (MAE)", "04"),
    Learnable2DPE: ("2-D learnable (row + column)", "04"),
    AxialRoPE2D: ("2-D axial RoPE", "04"),
    MixedRoPE2D: ("2-D mixed RoPE (Heo et al.)", "04"),
    T5RelativeBias: ("T5 bucketed relative bias", "05, 06"),
    ALiBi: ("ALiBi linear bias", "05, 06"),
    SwinRelativeBias: ("Swin 2-D relative bias", "05"),
    TransformerXLRelative: ("Transformer-XL relative attention", "05, 06"),
    PEG: ("PEG: a convolution of the tokens (CPVT)", "05"),
}


def overrides(cls: type) -> str:
    base = PositionScheme
    return ", ".join(h for h in HOOKS
                     if getattr(cls, h) is not getattr(base, h))


hook_table = pd.DataFrame([
    {"scheme": cls.__name__, "family": family, "notebook": notebook,
     "kind": cls.kind, "overrides": overrides(cls)}
    for cls, (family, notebook) in catalogue.items()
]).set_index("scheme")
assert all(hook_table["overrides"] != "")  # every scheme uses a hook
hook_table

# %% [markdown]
# ## 6. When order should not matter: sets
#
# **Question.** Is blindness to order always a defect? Some inputs have no order: the
# points of a point cloud, the objects in a scene, the items in a basket. For such a *set*
# every ordering is the same input, and the answer must not depend on the ordering the data
# happens to come in. A Transformer without positions, with mean pooling, guarantees that
# for all $n!$ orderings at once; models for sets (the Set Transformer of Lee et al., 2019;
# the set anomaly detection of the UvA Transformer tutorial) leave positions out on purpose.
#
# A model *with* positions would have to learn the invariance from the orderings it sees. A set
# of 5 distinct tokens, all $5! = 120$ orderings, one untrained model per scheme (same
# weights, as in section 2): how many different pooled outputs does each give?

# %% tags=["nbval-check-output"]
elements = torch.tensor([3, 7, 11, 2, 16])  # a set of 5 token ids
orderings = torch.tensor(list(permutations(elements.tolist())))  # (120, 5)
spread_rows = []
for name, scheme in (("no position", NoPosition()),
                     ("sinusoidal", SinusoidalPE(32))):
    model = make_model(20, scheme)
    with torch.no_grad():
        pooled_out = model.features(orderings).mean(dim=1)  # (120, d_model)
    distinct = len(torch.unique((pooled_out * 1e6).round(), dim=0))
    spread = (pooled_out - pooled_out.mean(0)).abs().max().item()
    spread_rows.append({"scheme": name, "orderings": len(orderings),
                        "distinct pooled outputs": distinct,
                        "largest deviation from their mean": spread})
set_table = pd.DataFrame(spread_rows).set_index("scheme")
formatted(set_table, {"largest deviation from their mean": rounding})

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
assert set_table.loc["no position", "distinct pooled outputs"] == 1
assert set_table.loc["sinusoidal", "distinct pooled outputs"] == 120
assert set_table.loc["no position", "largest deviation from their mean"] < 1e-12
checked("120 orderings of one set: one pooled output without positions, "
        "120 different ones with the sinusoidal encoding")

# %% [markdown]
# Without positions, all 120 orderings give one output, exactly: the model cannot get the
# invariance wrong. With the sinusoidal encoding they give 120 different outputs, and
# training would have to make them agree, ordering by ordering. "No position" is a design
# choice: the wrong one for sentences, the right one for sets.

# %% [markdown]
# **Takeaway:**
# - for a set, permutation invariance is the property we want, and attention without
#   positions plus pooling has it exactly;
# - add positions only where order carries meaning.

# %% [markdown]
# ## Summary
# - Attention without positions satisfies $\mathrm{Attn}(PX) = P\,\mathrm{Attn}(X)$, and so
#   does a whole encoder; with mean pooling the output does not move. It sees a bag of tokens.
# - "The cat chases the mouse" and "the mouse chases the cat" are one input without
#   positions, two with a sinusoidal encoding.
# - On who-did-what, encoders without positions stay at or below the exact bag-of-words
#   ceiling; with positions they solve it on unseen pairs, ahead of every floor without order
#   and level with a bigram classifier. A causal decoder without positions solves it too.
# - Adding keeps the width; concatenating a full-width vector quadruples the weights per
#   layer. Position enters in the embeddings, a q/k rotation or the scores; a shift test tells
#   absolute encodings from relative ones.
# - For sets, ignoring order is the point: no position plus pooling is invariant exactly.

# %% [markdown]
# ### Open-ended experiment · The mask, or the last slot?
#
# **Question.** Section 3's causal decoder differs from the blind encoder twice: the mask,
# and reading its answer at the last slot (a pad for short sentences). Which one solves the
# task? Train each change alone, three seeds, and read them against section 3's floors.
#
# ```python
# for causal, pool in ((False, "last"), (True, "mean")):
#     torch.manual_seed(0)
#     model = TinyTransformer(len(task.vocab), task.n_classes, d_model=32,
#                             n_heads=4, n_layers=2, causal=causal, pool=pool)
#     batches = torch.Generator().manual_seed(3)
#     train(model, lambda step: task.sample(64, batches, split="train"), 300)
#     print(causal, pool, accuracy(model, test_x, test_y))
# ```
#
# **What to look for.** Whether the encoder reading the last slot leaves the ceiling (hint:
# what is the last token of a sentence that fills every slot?), and whether the decoder
# still generalises when it averages slots that saw only a prefix.

# %% [markdown]
# ## Exercises
# An exercise ends in a code cell that calls its checker. Until you answer, the checker
# prints `[to do]`; a right answer prints `[passed]` and why, a wrong one `[not yet]` and a
# hint. Worked solutions are in the **Solutions** section at the end of the notebook (folded
# in JupyterLab: the arrow beside its heading opens it, and a cell's bar shows its code).
#
# ### Exercise 1 · Predict, then run: a lopsided task
# In `LOPSIDED_TASK` the agent is the cat or the dog (uniformly), and the patient is any
# *other* animal among cat, dog and mouse (uniformly): the mouse is never an agent. What is
# the best accuracy a bag-of-words model can reach? Work it out on paper and write your
# prediction into `predicted_ceiling` *before* you run the cell after it, which computes the
# exact ceiling as section 3 did.

# %% tags=["nbval-check-output"]
print("agents:", LOPSIDED_TASK.agents, " patients:", LOPSIDED_TASK.patients)

# %%
predicted_ceiling = ...  # your prediction: a number between 0 and 1

# %% tags=["exercise", "nbval-check-output"]
check_exercise_1(predicted_ceiling, LOPSIDED_TASK.bag_of_words_ceiling())

# %% [markdown]
# ### Exercise 2 · Explain why: the decoder's gap
# A decoder (`TinyTransformer(..., causal=True)`) lets each token attend only to itself and
# earlier tokens. The cell below shuffles 8 tokens three times and measures the equivariance
# gap, $\max |f(\text{tokens}[P]) - f(\text{tokens})[P]|$ over the per-token features, for
# an encoder and for a causal decoder, both untrained and without positions.

# %% tags=["nbval-check-output"]
def equivariance_gap(model, tokens, perm) -> float:
    with torch.no_grad():
        f = model.features
        moved = f(tokens[:, perm]) - f(tokens)[:, perm]
    return moved.abs().max().item()


shuffles = [torch.randperm(8, generator=gen) for _ in range(3)]
few = torch.randint(0, 20, (1, 8), generator=gen)
for causal in (False, True):
    torch.manual_seed(0)
    model = TinyTransformer(**sizes, causal=causal).double().eval()
    gaps = [equivariance_gap(model, few, s) for s in shuffles]
    kind = "causal decoder" if causal else "encoder"
    print(f"{kind:>14}: smallest gap {rounding(min(gaps))}, "
          f"largest {rounding(max(gaps))}")

# %% [markdown]
# Why is the decoder's gap far from zero?
#
# - **(a)** The decoder reads its answer at the last slot, and a shuffle puts a different
#   token into that slot.
# - **(b)** LayerNorm normalises over the whole sequence, so its statistics change when the
#   tokens are put in another order.
# - **(c)** Floating-point sums depend on the order of their terms, and after a shuffle the
#   decoder adds up its rows in a new order.
# - **(d)** The mask is fixed in index space: after a shuffle, a token sees a different set
#   of earlier tokens.

# %% tags=["exercise", "nbval-check-output"]
answer_2 = ...  # "a", "b", "c" or "d"
check_exercise_2(answer_2)

# %% [markdown]
# ### Exercise 3 · Design: a task a bag of words almost solves
# Section 3's task gives a model without positions a coin flip. Design a `WhoDidWhat` task, by choosing its `agents` and its `patients`
# among `ANIMALS`, on which a bag of words is right at least 80% of the time *but not always*:
# a task where word order still matters, but rarely. The checker computes the exact ceiling of
# your task, as section 3 did.

# %% tags=["exercise", "nbval-check-output"]
print("animals:", ANIMALS)
my_agents = ...  # a tuple of animals, e.g. ("cat", "dog")
my_patients = ...  # a tuple of animals
check_exercise_3(my_agents, my_patients)

# %% [markdown]
# ## Further reading
# - Vaswani et al., 2017, *[Attention Is All You Need](https://arxiv.org/abs/1706.03762)*, section 3.5 (why the model needs
#   positional encodings, and the sinusoidal one).
# - Yun et al., 2020, *[Are Transformers universal approximators of sequence-to-sequence
#   functions?](https://arxiv.org/abs/1912.10077)* (permutation equivariance of attention without positions, stated and used).
# - Zaheer et al., 2017, *[Deep Sets](https://arxiv.org/abs/1703.06114)*, and Lee et al., 2019, *[Set Transformer](https://arxiv.org/abs/1810.00825)*
#   (models for sets, where permutation invariance is the goal).
# - Lippe, *[UvA Deep Learning Tutorial 6: Transformers and Multi-Head Attention](https://uvadlc-notebooks.readthedocs.io/en/latest/tutorial_notebooks/tutorial6/Transformers_and_MHAttention.html)*
#   (set anomaly detection: a Transformer without positional encoding, on purpose).
# - A. Zhang, Z. C. Lipton, M. Li, A. J. Smola, *动手学深度学习* (Dive into Deep Learning, Chinese
#   edition, v2.0.0), section 10.6, *自注意力和位置编码* (self-attention and positional encoding),
#   [zh.d2l.ai](https://zh.d2l.ai/chapter_attention-mechanisms/self-attention-and-positional-encoding.html):
#   self-attention beside CNNs and RNNs, and why it needs the order added as positional encoding.
# - Shaw et al., 2018, *[Self-Attention with Relative Position Representations](https://arxiv.org/abs/1803.02155)* (the first
#   relative scheme), and Su et al., *[RoFormer](https://arxiv.org/abs/2104.09864)* (RoPE).
# - Haviv et al., 2022, *[Transformer Language Models without Positional Encodings Still Learn
#   Positional Information](https://arxiv.org/abs/2203.16634)* (the causal mask as a source of order, see exercise 2).
# - Reference code: Hugging Face transformers, [`modeling_bert.py`](https://github.com/huggingface/transformers/blob/main/src/transformers/models/bert/modeling_bert.py) (learned position embeddings
#   added to the token embeddings) and [`modeling_llama.py`](https://github.com/huggingface/transformers/blob/main/src/transformers/models/llama/modeling_llama.py) (`LlamaRotaryEmbedding`, applied to
#   queries and keys); `posenc_lib/scheme.py` in this repository (the four hooks and the score scale).
# - `docs/replication.md`: the headline results of the papers this course teaches, beside the
#   numbers its notebooks measure at toy scale, whether they agree, and why not where they do not.

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ## Solutions
# One cell per exercise: each sets the answer and runs its checker (so the notebook proves
# that every solution passes). Try the exercise first.

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
# Exercise 1. Ordered pairs (agent, patient), each with probability 1/2 * 1/2:
#   (cat, dog), (dog, cat): same bag {cat, dog}, either agent: right 1/2
#   (cat, mouse), (dog, mouse): the agent is the one not the mouse: right always
# Verbs, voice and adjectives are drawn independently of who is who: no help.
predicted_ceiling = 0.5 * 0.5 + 0.5 * 1.0
check_exercise_1(predicted_ceiling, LOPSIDED_TASK.bag_of_words_ceiling())

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
# Exercise 2. (a): the gap is over per-token features, before any readout;
# (b): LayerNorm acts on each token alone; (c): rounding is near 1e-16.
answer_2 = "d"
check_exercise_2(answer_2)

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
# Exercise 3. Two possible agents and three animals that never act: the agent
# picks one of its 4 others, so a bag holds both cat and dog 1/4 of the time
# (a coin flip) and names its agent otherwise: 1/4 * 1/2 + 3/4 = 0.875.
my_agents = ("cat", "dog")
my_patients = ("cat", "dog", "mouse", "bird", "fox")
check_exercise_3(my_agents, my_patients)


# %% [markdown]
# ## End of notebook 00
# <!-- Keep this cell last. "Run All" ends on the last cell, and JupyterLab unfolds the section that
#      holds it: outside "Solutions", this heading leaves the solutions folded. -->

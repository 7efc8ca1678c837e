# %% [markdown]
# # 00 · Permutation blindness
#
# *Why a Transformer needs position information at all.*
#
# **What you will learn**
# - Self-attention without positions is *permutation-equivariant*: shuffle the input tokens and
#   the outputs come out shuffled the same way, with the same values. You will check this to
#   float precision, not take it on trust.
# - With mean pooling the whole model becomes *permutation-invariant*: it sees a bag of tokens.
#   "The cat chases the mouse" and "the mouse chases the cat" get the same representation.
# - A trained model on a task that can only be solved from word order stays at chance without
#   positions, and solves it once a position encoding is added.
# - Adding a position vector versus concatenating one: what each costs, in parameters.
# - The map of the series: the places where position can enter a Transformer, which is
#   also how the library `posenc_lib` is organised.
#
# **Prerequisites:** PyTorch tensors and `nn.Module`; the scaled dot-product attention formula.
# No earlier notebook is needed: this is the first one.
#
# **Run time:** about 16 s on a laptop CPU (measured with `make execute`, one thread).

# %%
import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch

from posenc_course.data import Vocab, WhoDidWhat
from posenc_course.exercises.nb00 import (
    EXERCISE_3_TASK,
    check_exercise_1,
    check_exercise_2,
    check_exercise_3,
)
from posenc_course.plotting import heatmap, line_plot, moving_average
from posenc_course.report import formatted, rounding
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

gen = setup_notebook(0)  # one thread, the series' figure style, seeds; gen draws this notebook's random data

# %% [markdown]
# ## 1. Does attention know where a token is?
#
# Stack the $n$ token vectors of a sequence as the rows of $X \in \mathbb{R}^{n \times d}$.
# One attention head computes
#
# $$\mathrm{Attn}(X) = \mathrm{softmax}\!\Big(\tfrac{(XW_q)(XW_k)^\top}{\sqrt{d_h}}\Big)\, X W_v .$$
#
# Shuffle the tokens with a permutation matrix $P$ (each row and column holds a single 1).
# The score matrix becomes $P S P^\top$: rows *and* columns are shuffled the same way. A
# row-wise softmax does not care in which order a row's entries come, so
# $\mathrm{softmax}(PSP^\top) = P\,\mathrm{softmax}(S)\,P^\top$, and since $P^\top P = I$:
#
# $$\mathrm{Attn}(PX) = P\,\mathrm{softmax}(S)\,P^\top P X W_v = P\,\mathrm{Attn}(X).$$
#
# The output for each token does not depend on where the token stands, only on which other
# tokens are present. The output projection acts row by row and does not change this, and
# neither do several heads. First the formula itself, in a few lines of PyTorch and in float64 so
# that the only differences left are rounding errors near $10^{-16}$:

# %% tags=["nbval-check-output"]
def attention(X: torch.Tensor, W_q: torch.Tensor, W_k: torch.Tensor, W_v: torch.Tensor) -> torch.Tensor:
    """One attention head without positions. X: (n, d), one token per row; W_q, W_k, W_v: (d, d_h)."""
    scores = (X @ W_q) @ (X @ W_k).T / W_k.shape[1] ** 0.5  # (n, n): how much token i attends to token j
    return torch.softmax(scores, dim=-1) @ (X @ W_v)         # (n, d_h): a weighted mean of the values


n, d, d_h = 5, 8, 4
X_small = torch.randn(n, d, dtype=torch.float64, generator=gen)
W_q, W_k, W_v = (torch.randn(d, d_h, dtype=torch.float64, generator=gen) for _ in range(3))
out = attention(X_small, W_q, W_k, W_v)
for trial in range(3):
    P = torch.randperm(n, generator=gen)
    out_p = attention(X_small[P], W_q, W_k, W_v)
    torch.testing.assert_close(out_p, out[P])  # Attn(PX) == P Attn(X)
    print(f"P = {P.tolist()}: max |Attn(X[P]) - Attn(X)[P]| = {rounding((out_p - out[P]).abs().max())}")

# %% [markdown]
# The library's `MultiHeadAttention` does the same with several heads, a fused q/k/v
# projection and an output projection. With the scheme `NoPosition` (no position information
# at all) it must be equivariant too, and its attention weights must be shuffled along both
# axes:

# %% tags=["nbval-check-output"]
d_model, n_heads, seq = 16, 4, 6
attn = MultiHeadAttention(d_model, n_heads, NoPosition()).double().eval()
X = 3 * torch.randn(1, seq, d_model, generator=gen, dtype=torch.float64)  # (batch, seq, d_model)

with torch.no_grad():
    Y, A = attn(X, return_weights=True)  # Y (1, seq, d_model); A (1, heads, seq, seq)
    for trial in range(5):
        P = torch.randperm(seq, generator=gen)
        Y_p, A_p = attn(X[:, P], return_weights=True)
        torch.testing.assert_close(Y_p, Y[:, P])  # outputs move with their inputs
        torch.testing.assert_close(A_p, A[:, :, P][:, :, :, P])  # weights: rows and columns shuffled
        print(f"P = {P.tolist()}: max |Attn(X[P]) - Attn(X)[P]| = {rounding((Y_p - Y[:, P]).abs().max())}")

# %% [markdown]
# Every shuffle passes, and the differences are at the level of float64 rounding (shown as a
# bound, because their exact digits depend on the CPU).
# The picture shows the same thing: each output row travels with its input row (the labels
# on the left say which token a row belongs to).

# %% tags=["nbval-check-output"]
P = torch.tensor([3, 0, 5, 1, 4, 2])
with torch.no_grad():
    Y_p = attn(X[:, P])
labels, labels_p = [f"t{i}" for i in range(seq)], [f"t{i}" for i in P.tolist()]
fig, axes = plt.subplots(2, 2, figsize=(7.5, 5.0))
panels = [(X[0], "input X", labels), (Y[0], "output Attn(X)", labels),
          (X[0, P], "shuffled input X[P]", labels_p), (Y_p[0], "output Attn(X[P])", labels_p)]
for ax, (matrix, title, rows) in zip(axes.flat, panels):
    heatmap(ax, matrix.numpy(), title, "feature index", "token", colorbar_label="value (no unit)", center=True)
    ax.set_yticks(range(seq), rows)
    ax.set_xticks(range(0, d_model, 3))
plt.show()

# %% [markdown]
# **The check:** the bottom-right rows are the top-right rows, reordered exactly like the inputs.
#
# ### The whole encoder
# A Transformer encoder is attention plus parts that act on each token separately (embedding
# lookup, LayerNorm, the MLP, residual additions), so the whole stack is equivariant too.
# Averaging over tokens ("mean pooling", as a classifier does) then removes the order
# entirely: the pooled output is *invariant* under any shuffle. The library's `TinyTransformer`
# with `pool="none"` returns one output per token, with `pool="mean"` one per sequence.

# %% tags=["nbval-check-output"]
torch.manual_seed(0)
encoder = TinyTransformer(vocab_size=20, n_outputs=3, d_model=32, n_heads=4, n_layers=2, pool="none").double().eval()
pooled = TinyTransformer(vocab_size=20, n_outputs=3, d_model=32, n_heads=4, n_layers=2, pool="mean").double().eval()
tokens = torch.randint(0, 20, (4, 10), generator=gen)  # (batch, seq) token ids
with torch.no_grad():
    for trial in range(5):
        P = torch.randperm(10, generator=gen)
        torch.testing.assert_close(encoder(tokens[:, P]), encoder(tokens)[:, P])  # equivariant per token
        torch.testing.assert_close(pooled(tokens[:, P]), pooled(tokens))  # invariant after pooling
print("2-layer encoder: per-token outputs are equivariant, mean-pooled outputs invariant (5 shuffles)")

# %% [markdown]
# **Takeaway:**
# - without position information a Transformer encoder cannot tell one order of its tokens from
#   another: its per-token outputs move with the tokens, its pooled output does not move at all;
# - whatever it computes from a sentence, it computes from the *bag* (multiset) of its tokens.

# %% [markdown]
# ## 2. "The cat chases the mouse"
#
# Two sentences with opposite meanings and the same bag of words. The Chinese pair
# 我爱北京 ("I love Beijing") / 北京爱我 ("Beijing loves me") is the same bag of four
# characters too; we tokenise Chinese by character. A `Vocab` maps tokens to ids.

# %% tags=["nbval-check-output"]
pairs = {
    "English": ("the cat chases the mouse", "the mouse chases the cat", str.split),
    "Chinese": ("我爱北京", "北京爱我", list),
}
vocabs = {lang: Vocab.from_texts([a, b], tokenize) for lang, (a, b, tokenize) in pairs.items()}
for lang, (a, b, tokenize) in pairs.items():
    ids_a, ids_b = vocabs[lang].encode(tokenize(a)), vocabs[lang].encode(tokenize(b))
    assert sorted(ids_a.tolist()) == sorted(ids_b.tolist())  # the same bag of tokens
    print(f"{lang}: {tokenize(a)} -> {ids_a.tolist()}   {tokenize(b)} -> {ids_b.tolist()}")

# %% [markdown]
# Now feed each pair to two untrained models that are identical in every weight (same seed)
# and differ only in the position scheme: `NoPosition`, or the sinusoidal encoding of the
# original Transformer (`SinusoidalPE`, the subject of notebook 01, which adds a fixed vector
# to the token embedding at each position). We compare the mean-pooled representations
# (`model.features` gives the per-token hidden states, shape (batch, seq, d_model)).

# %% tags=["nbval-check-output"]
def make_model(vocab_size: int, scheme: PositionScheme) -> TinyTransformer:
    torch.manual_seed(0)  # the same weights for every scheme (these schemes have no parameters)
    return TinyTransformer(vocab_size, n_outputs=2, d_model=32, n_heads=4, n_layers=2, scheme=scheme).double().eval()


rows = []
for lang, (a, b, tokenize) in pairs.items():
    vocab = vocabs[lang]
    blind, with_pe = make_model(len(vocab), NoPosition()), make_model(len(vocab), SinusoidalPE(32))
    assert all(torch.equal(p, q) for p, q in zip(blind.state_dict().values(), with_pe.state_dict().values()))
    ids_a, ids_b = vocab.encode(tokenize(a))[None], vocab.encode(tokenize(b))[None]
    row = {"pair": f"{a} / {b}"}
    with torch.no_grad():
        for name, model in (("no position", blind), ("sinusoidal", with_pe)):
            h_a, h_b = model.features(ids_a).mean(dim=1), model.features(ids_b).mean(dim=1)
            row[f"{name}: max |diff|"] = (h_a - h_b).abs().max().item()
            row[f"{name}: cosine"] = torch.cosine_similarity(h_a, h_b).item()
        torch.testing.assert_close(blind.features(ids_a).mean(1), blind.features(ids_b).mean(1))
        assert row["sinusoidal: max |diff|"] > 0.05
    rows.append(row)
similarity = pd.DataFrame(rows).set_index("pair")
formatted(similarity, {c: rounding if "diff" in c else "{:.4f}" for c in similarity.columns})

# %% [markdown]
# Without positions the two sentences are the same point (differences at float64 rounding
# level, cosine 1); with the sinusoidal encoding they are different points. It is worse than "the sentence
# vectors agree": by equivariance, the hidden state of the *token* "cat" is the same whether the
# cat chases or is chased. No later layer can recover who did what.

# %% tags=["nbval-check-output"]
vocab, blind = vocabs["English"], make_model(len(vocabs["English"]), NoPosition())
s1, s2 = "the cat chases the mouse".split(), "the mouse chases the cat".split()
with torch.no_grad():
    h1, h2 = blind.features(vocab.encode(s1)[None])[0], blind.features(vocab.encode(s2)[None])[0]
cat_as_agent, cat_as_patient = h1[s1.index("cat")], h2[s2.index("cat")]
torch.testing.assert_close(cat_as_agent, cat_as_patient)
print(f"'cat' as agent vs as patient: max |diff| {rounding((cat_as_agent - cat_as_patient).abs().max())}")

# %% [markdown]
# ## 3. A task that needs word order: who did what to whom?
#
# `posenc_course.data.WhoDidWhat` writes short sentences and asks for the **agent** (the one who
# acts). Sentences come in the active voice ("the cat chases the small mouse") and in the
# passive ("the mouse was chased by the cat"), with optional adjectives, so the agent is not
# always at the same position. Both entities are always present, and the sentence with agent
# and patient swapped is exactly as likely, so a model that sees only the bag of tokens can
# do no better than a coin flip between the two animals.
#
# Three unordered pairs of animals (e.g. cat and bird) never occur in the training split and
# form the test split: a high test accuracy then means the model learned the *rule*, not the
# sentences.

# %% tags=["nbval-check-output"]
task = WhoDidWhat()
data_gen = seed_everything(0)
examples, agents = task.sample(6, data_gen, split="train")
for ids, agent in zip(examples, agents):
    print(f"{' '.join(task.vocab.decode(ids)):<50} agent = {task.entities[agent]}")
print(f"\nvocabulary: {len(task.vocab)} tokens, sentences padded to {task.seq_len}, {task.n_classes} classes")

# %% [markdown]
# How well can a bag-of-words model do *at best*? `bag_of_words_ceiling` answers exactly: it
# enumerates every sentence the generator can produce with its probability, groups them by
# their bag of tokens, and credits each bag with its most likely agent. The best cross-entropy
# for such a model is then the entropy of a fair coin, $\ln 2 \approx 0.693$.

# %% tags=["nbval-check-output"]
ceiling = {split: task.bag_of_words_ceiling(split) for split in ("train", "test")}
print(f"bag-of-words ceiling: train split {ceiling['train']:.4f}, test split {ceiling['test']:.4f}")
assert all(abs(c - 0.5) < 1e-9 for c in ceiling.values())

# %% [markdown]
# Now train two `TinyTransformer` classifiers that are identical (width 32, 2 layers, same
# seed, same batches, 300 steps) except for the position scheme. Each step draws a fresh batch
# of 64 sentences from the training split, so neither model can memorise a fixed data set.

# %% tags=["nbval-check-output"]
test_x, test_y = task.sample(2000, torch.Generator().manual_seed(1), split="test")
train_x, train_y = task.sample(2000, torch.Generator().manual_seed(2), split="train")
schemes = {"no position": NoPosition, "sinusoidal": lambda: SinusoidalPE(32)}
models, losses = {}, {}
for name, scheme in progress(schemes.items(), total=len(schemes), desc="training both models"):
    torch.manual_seed(0)
    models[name] = TinyTransformer(len(task.vocab), task.n_classes, d_model=32, n_heads=4, n_layers=2, scheme=scheme())
    batches = torch.Generator().manual_seed(3)
    losses[name] = train(models[name], lambda step: task.sample(64, batches, split="train"), steps=300, desc=None)

# %% tags=["nbval-check-output"]
def present_entities(inputs: torch.Tensor) -> torch.Tensor:
    """(n, seq) token ids -> (n, n_classes) bool: which entities occur in each sentence."""
    entity_ids = task.vocab.encode(list(task.entities))
    return (inputs[:, :, None] == entity_ids).any(dim=1)


results = []
for name, model in models.items():
    with torch.no_grad():
        pred = model(test_x).argmax(-1)
    results.append({
        "position scheme": name,
        "parameters": model.num_parameters(),
        "train-split accuracy": accuracy(model, train_x, train_y),
        "test accuracy (unseen pairs)": accuracy(model, test_x, test_y),
        "answers one of the two animals": present_entities(test_x)[torch.arange(len(pred)), pred].float().mean().item(),
        "bag-of-words ceiling": ceiling["test"],
    })
table = pd.DataFrame(results).set_index("position scheme")
acc = table["test accuracy (unseen pairs)"]
blind = table.loc["no position"]
assert abs(blind["train-split accuracy"] - ceiling["train"]) < 0.03, blind  # at chance
assert blind["test accuracy (unseen pairs)"] < ceiling["test"], blind  # below it on unseen pairs
assert 0.15 < 1 - blind["answers one of the two animals"] < 0.35, blind  # names an absent animal ~1/4 of the time
assert acc["sinusoidal"] >= 0.95 and table.loc["sinusoidal", "train-split accuracy"] >= 0.95, acc
assert table["parameters"].nunique() == 1  # the sinusoidal table is a buffer, not a parameter
formatted(table, {c: "{:.3f}" for c in table.columns if c != "parameters"})

# %% [markdown]
# Same size, same data, same steps. Without positions the model sits at the 50% ceiling on
# sentences from the training split: it cannot know which of the two animals acted. On the
# unseen pairs it does even worse than a coin: about a quarter of its answers name an animal
# that is not in the sentence at all (the "answers one of the two animals" column, computed on
# the test sentences). With the sinusoidal encoding the same network
# solves the task, on animal pairs it never saw together. The loss curves tell the same story:
# the blind model's loss levels off just above $\ln 2$, the bag-of-words optimum.

# %% tags=["nbval-check-output"]
fig, ax = plt.subplots()
curves = {name: moving_average(loss) for name, loss in losses.items()}
line_plot(ax, np.arange(len(curves["sinusoidal"])) + 10, curves, "Who did what: training loss",
          "training step", "cross-entropy (nats, 10-step mean)", logy=True)
ax.axhline(math.log(2), color="black", linewidth=1, linestyle=":")
ax.text(300, math.log(2) * 0.92, "ln 2: best possible from a bag of words", ha="right", va="top", fontsize=10)
plt.show()
final = {name: float(np.mean(loss[-50:])) for name, loss in losses.items()}
print({name: f"{value:.3f}" for name, value in final.items()})
assert final["no position"] > math.log(2) - 0.03 and final["sinusoidal"] < 0.1

# %% [markdown]
# **Takeaway:**
# - the blind model is not badly trained: it has reached the best loss a bag of words allows;
# - word order is information it never receives; the same network with positions solves the
#   task, on animal pairs it never saw together.

# %% [markdown]
# ## 4. Adding or concatenating the position vector?
#
# The original Transformer *adds* a position vector $p_i$ to the token embedding $e_i$:
# the model width stays $d$. The obvious alternative is to *concatenate* $[e_i; p_i]$, keeping
# the two apart, which makes every layer wider. A linear layer applied to a concatenation is
# the sum of two linear maps, one per part:
#
# $$W\,[e; p] = W_e\, e + W_p\, p \quad\text{with } W = [W_e \;\; W_p],$$
#
# so concatenation amounts to adding, after giving tokens and positions their own projections.
# Adding instead asks the model to keep both kinds of information apart inside the same $d$
# dimensions. First the identity, numerically:

# %% tags=["nbval-check-output"]
d_tok, d_pos, d_out = 8, 4, 5
e, p = torch.randn(d_tok, dtype=torch.float64, generator=gen), torch.randn(d_pos, dtype=torch.float64, generator=gen)
W = torch.randn(d_out, d_tok + d_pos, dtype=torch.float64, generator=gen)
torch.testing.assert_close(W @ torch.cat([e, p]), W[:, :d_tok] @ e + W[:, d_tok:] @ p)
print("W [e; p] == W_e e + W_p p")

# %% [markdown]
# What concatenation costs: every block (attention $4d^2$, MLP $8d^2$ weights) grows with the
# *square* of the width. The table counts parameters with the library's own `TransformerBlock`
# for a model of the size of the original Transformer base (width 512, 6 layers, 8 heads,
# a 37 000-token vocabulary, 512 learnable positions). The blocks are built on PyTorch's `meta`
# device, which records shapes without allocating memory.

# %% tags=["nbval-check-output"]
def parameter_count(d_token: int, d_position: int, concatenate: bool, vocab_size: int = 37_000,
                    max_len: int = 512, n_layers: int = 6, n_heads: int = 8) -> dict[str, int]:
    width = d_token + d_position if concatenate else d_token
    with torch.device("meta"):
        block = TransformerBlock(width, n_heads, NoPosition(), d_ff=4 * width)
        position = LearnablePE(d_position, max_len)
    per_layer = sum(p.numel() for p in block.parameters())
    embeddings = vocab_size * d_token + position.weight.numel()
    return {"width": width, "token + position tables": embeddings, "per layer": per_layer,
            "total": embeddings + n_layers * per_layer}


options = {
    "add (d = 512)": parameter_count(512, 512, concatenate=False),
    "concatenate 512 + 64": parameter_count(512, 64, concatenate=True),
    "concatenate 512 + 512": parameter_count(512, 512, concatenate=True),
    "concatenate 256 + 256 (same width)": parameter_count(256, 256, concatenate=True),
}
costs = pd.DataFrame(options).T
costs["per layer vs add"] = costs["per layer"] / costs.loc["add (d = 512)", "per layer"]
assert costs.loc["add (d = 512)", "width"] == 512 and costs.loc["concatenate 512 + 512", "width"] == 1024
assert 3.9 < costs.loc["concatenate 512 + 512", "per layer vs add"] < 4.01  # twice the width, ~4x the weights
formatted(costs, {"per layer vs add": "{:.2f}x"} | {c: "{:,}" for c in costs.columns[:-1]})

# %% [markdown]
# Concatenating a full-width position vector doubles the width and quadruples the weights of
# every layer. Keeping the width fixed instead halves the room left for the tokens' meaning.
# Adding costs no parameters at all; the Transformer, BERT, GPT-2 and ViT all add. (RoPE and the relative biases of later notebooks sidestep the
# question entirely: they add no vector to the embeddings at all.)

# %% [markdown]
# ## 5. The map: where position can enter
#
# Every encoding in this series plugs into the same Transformer in one of three places: the
# embeddings, the queries and keys, or the attention scores. Scores can be biased by position
# alone (T5, ALiBi) or by a term that also reads the query (Transformer-XL), so the scores have
# two hooks, and `posenc_lib.scheme.PositionScheme` has four; each defaults to "do nothing"
# (which is exactly `NoPosition`). The scores are $s\,q\cdot k$ plus the biases, with the scale
# $s = 1/\sqrt{d_h}$ except for T5, which does not scale its scores (it folds the factor into the
# initialisation of the queries; the hook `score_scale(head_dim)` says which):
#
# | hook | called by | what it does | shapes |
# |---|---|---|---|
# | `add_to_embeddings(x, positions)` | the model, once, before the first block | adds a vector per position to the token embeddings | x (batch, seq, d_model) |
# | `rotate_qk(q, k, positions)` | every attention layer, after the head split | transforms queries and keys (never values) | q, k (batch, heads, seq, head_dim) |
# | `score_bias(q_positions, k_positions)` | every attention layer | adds a bias of the positions to the scaled scores | broadcastable to (batch, heads, q_len, k_len) |
# | `qk_bias(q, k, q_positions, k_positions)` | every attention layer | adds a bias that also reads q and k (Transformer-XL's content-position terms) | (batch, heads, q_len, k_len) |
#
# One scheme object is shared by all layers. The table below is computed from the library's
# code: for each scheme class, which hooks it overrides.

# %% tags=["nbval-check-output"]
from posenc_lib.conditional.peg import PEG
from posenc_lib.embeddings.tables_2d import Learnable2DPE, SinCos2DPE
from posenc_lib.qk_bias.transformer_xl import TransformerXLRelative
from posenc_lib.rotary.rope import RotaryPE
from posenc_lib.rotary.rope_2d import AxialRoPE2D, MixedRoPE2D
from posenc_lib.score_bias.alibi import ALiBi
from posenc_lib.score_bias.swin import SwinRelativeBias
from posenc_lib.score_bias.t5 import T5RelativeBias

HOOKS = ("add_to_embeddings", "rotate_qk", "score_bias", "qk_bias", "score_scale")
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
    PEG: ("conditional, PEG convolution (CPVT)", "05"),
}
hook_table = pd.DataFrame([
    {"scheme": cls.__name__, "family": family, "notebook": notebook, "kind": cls.kind,
     "overrides": ", ".join(h for h in HOOKS if getattr(cls, h) is not getattr(PositionScheme, h))}
    for cls, (family, notebook) in catalogue.items()
]).set_index("scheme")
assert all(hook_table["overrides"] != "")  # every scheme uses at least one hook
hook_table

# %% [markdown]
# ### Absolute or relative?
# The other way to sort the families is by *what* they encode. An **absolute** encoding gives
# each position its own signal; a **relative** one only makes scores depend on the offset
# $i - j$ between a query and a key. A clean test: run the same tokens with every position
# moved by 7 (as if the sentence started later in a document). A relative scheme gives the
# same outputs; an absolute one does not. A second test repeats section 1: does a shuffle of
# the tokens still just shuffle the outputs? Both tests on the 1-D schemes, in float64,
# untrained:

# %% tags=["nbval-check-output"]
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
P = torch.randperm(12, generator=gen)
rows = []
for name, scheme in one_d_schemes.items():
    torch.manual_seed(0)
    model = TinyTransformer(20, 3, d_model=32, n_heads=4, n_layers=2, pool="none", scheme=scheme()).double().eval()
    with torch.no_grad():
        out = model.features(tokens, positions)
        shift_gap = (model.features(tokens, positions + 7) - out).abs().max().item()
        shuffle_gap = (model.features(tokens[:, P], positions) - out[:, P]).abs().max().item()
    rows.append({"scheme": name, "change after shifting all positions by 7": shift_gap,
                 "change after shuffling the tokens": shuffle_gap})
tests = pd.DataFrame(rows).set_index("scheme")
tests["encodes"] = np.where(tests.iloc[:, 1] < 1e-9, "nothing (bag of tokens)",
                            np.where(tests.iloc[:, 0] < 1e-5, "relative offsets", "absolute positions"))
expected = {"NoPosition": "nothing (bag of tokens)", "SinusoidalPE": "absolute positions",
            "LearnablePE": "absolute positions", "RotaryPE": "relative offsets",
            "T5RelativeBias": "relative offsets", "ALiBi": "relative offsets"}
assert tests["encodes"].to_dict() == expected, tests
formatted(tests, {c: rounding for c in tests.columns[:2]})

# %% [markdown]
# Shifting changes nothing for RoPE, T5 and ALiBi (what is left is float64 rounding: in a
# float64 model the library computes RoPE's angles in float64 too; [03 · RoPE](03_rope.ipynb)
# explains why the precision of the angles matters), and changes the outputs of the two
# absolute encodings. Every scheme except `NoPosition` breaks
# the permutation symmetry.
#
# | notebook | topic | hook |
# |---|---|---|
# | 01 | sinusoidal | `add_to_embeddings` (absolute) |
# | 02 | learnable table | `add_to_embeddings` (absolute) |
# | 03 | RoPE | `rotate_qk` (relative) |
# | 04 | vision: 2-D tables and 2-D RoPE | `add_to_embeddings` / `rotate_qk` on the patch grid |
# | 05 | T5, ALiBi, Swin biases; Transformer-XL; PEG; NoPE | `score_bias`, `qk_bias` (relative); PEG and NoPE are special |
# | 06 | length extrapolation | all of them, trained short and tested long |
# | 07 | debugging and practice | all of them |

# %% [markdown]
# ## Summary
# - Attention without positions satisfies $\mathrm{Attn}(PX) = P\,\mathrm{Attn}(X)$ for every
#   permutation $P$ (checked to float64 rounding), and so does a whole encoder; with mean pooling the
#   output does not change at all. Such a model sees a bag of tokens.
# - "The cat chases the mouse" and "the mouse chases the cat" (and 我爱北京 / 北京爱我) get
#   identical representations without positions, different ones with a sinusoidal encoding.
# - On a who-did-what task, a model without positions is stuck at the exact bag-of-words
#   ceiling of 50% (loss $\ln 2$); the same model with positions solves it, on unseen pairs.
# - Adding a position vector keeps the width; concatenating a full-width one quadruples the
#   per-layer weights, or halves the room for content at a fixed width.
# - Position enters in one of three places (embeddings, q/k rotation, the scores: a bias of
#   positions, or one that reads the query), and
#   encodings are absolute or relative, which a shift test tells apart.

# %% [markdown]
# ### Open-ended experiment · Is a causal mask enough?
#
# **Question.** Exercise 2 shows that a causal mask breaks the permutation symmetry: a token at
# index $t$ attends to exactly $t + 1$ tokens. Is that enough to *learn* who did what, with no
# position encoding at all? Notebook 07 finds that decoders without an encoding learn absolute
# position on a probe; does that carry over to a task with meaning?
#
# **A starting setup** (about as long as section 3's training cell):
#
# ```python
# torch.manual_seed(0)
# causal = TinyTransformer(len(task.vocab), task.n_classes, d_model=32, n_heads=4, n_layers=2,
#                          scheme=NoPosition(), causal=True, pool="last")
# batches = torch.Generator().manual_seed(3)
# train(causal, lambda step: task.sample(64, batches, split="train"), steps=300, desc="causal, no position")
# print(accuracy(causal, train_x, train_y), accuracy(causal, test_x, test_y))
# ```
#
# **What to look for.** Whether the accuracy leaves the 50% ceiling at all, on the training
# split and on the unseen pairs; how it changes with `pool="mean"` (each token saw only its
# prefix) instead of `pool="last"` (the last slot, a pad for short sentences, saw the whole
# sentence); and with 600 steps instead of 300. Repeat with three seeds before you believe a difference (the series'
# rule, 02 §3).

# %% [markdown]
# ## Exercises
# Each exercise ends in a code cell with a stub: replace `raise NotImplementedError` (or the
# `...`) by your answer and run the cell. Until then the checker prints `[to do]`; a right
# answer prints `[passed]`, a wrong one `[not yet]` and a hint. Worked solutions are in the
# **Solutions** section at the end of the notebook (folded in JupyterLab: the arrow beside
# its heading opens it, and a cell's bar shows its code).
#
# ### Exercise 1 · Undo a shuffle
# Write `inverse_permutation(perm)`, which returns the permutation `inv` (int64) with
# `perm[inv] == inv[perm] == arange(n)`, so that `x[:, perm][:, inv]` is `x` again. The checker
# then uses your function to show that shuffling, running a 2-layer encoder and un-shuffling
# gives back every original output.

# %% tags=["exercise", "nbval-check-output"]
def inverse_permutation(perm: torch.Tensor) -> torch.Tensor:
    raise NotImplementedError  # your code here


check_exercise_1(inverse_permutation)

# %% [markdown]
# ### Exercise 2 · A causal mask breaks the symmetry
# A decoder (`TinyTransformer(..., causal=True)`) lets each token attend only to itself and
# earlier tokens. Write `equivariance_gap(model, tokens, perm)`, the largest absolute
# difference between `model.features(tokens[:, perm])` and `model.features(tokens)[:, perm]`,
# as a Python float. The checker runs it on an encoder and on a causal decoder, both without
# positions. Before you run it: which of the two do you expect to have a gap of zero, and why?

# %% tags=["exercise", "nbval-check-output"]
def equivariance_gap(model: TinyTransformer, tokens: torch.Tensor, perm: torch.Tensor) -> float:
    raise NotImplementedError  # your code here


check_exercise_2(equivariance_gap)

# %% [markdown]
# ### Exercise 3 · A lopsided task
# In `EXERCISE_3_TASK` the agent is the cat or the dog (uniformly), and the patient is any
# *other* animal among cat, dog and mouse (uniformly): the mouse is never an agent. What is
# the best accuracy a bag-of-words model can reach? Work it out on paper, then pass the number
# to `check_exercise_3`.

# %% tags=["nbval-check-output"]
print(EXERCISE_3_TASK.agents, EXERCISE_3_TASK.patients)

# %% tags=["exercise", "nbval-check-output"]
answer = ...  # your number here
check_exercise_3(answer)

# %% [markdown]
# ## Further reading
# - Vaswani et al., 2017, *[Attention Is All You Need](https://arxiv.org/abs/1706.03762)*, section 3.5 (why the model needs
#   positional encodings, and the sinusoidal one).
# - Yun et al., 2020, *[Are Transformers universal approximators of sequence-to-sequence
#   functions?](https://arxiv.org/abs/1912.10077)* (permutation equivariance of attention without positions, stated and used).
# - Shaw et al., 2018, *[Self-Attention with Relative Position Representations](https://arxiv.org/abs/1803.02155)* (the first
#   relative scheme), and Su et al., *[RoFormer](https://arxiv.org/abs/2104.09864)* (RoPE).
# - Haviv et al., 2022, *[Transformer Language Models without Positional Encodings Still Learn
#   Positional Information](https://arxiv.org/abs/2203.16634)* (the causal mask as a source of order, see exercise 2).
# - Reference code: Hugging Face transformers, [`modeling_bert.py`](https://github.com/huggingface/transformers/blob/main/src/transformers/models/bert/modeling_bert.py) (learned position embeddings
#   added to the token embeddings) and [`modeling_llama.py`](https://github.com/huggingface/transformers/blob/main/src/transformers/models/llama/modeling_llama.py) (`LlamaRotaryEmbedding`, applied to
#   queries and keys); `posenc_lib/scheme.py` in this repository (the four hooks and the score scale).

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ## Solutions
# One cell per exercise: each redefines the answer and runs its checker (so the notebook
# proves that every solution passes). Try the exercise first.

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
# Exercise 1
def inverse_permutation(perm: torch.Tensor) -> torch.Tensor:
    inv = torch.empty_like(perm)
    inv[perm] = torch.arange(len(perm))  # the token that went to slot i came from perm[i]
    return inv


check_exercise_1(inverse_permutation)

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
# Exercise 2
def equivariance_gap(model: TinyTransformer, tokens: torch.Tensor, perm: torch.Tensor) -> float:
    with torch.no_grad():
        return (model.features(tokens[:, perm]) - model.features(tokens)[:, perm]).abs().max().item()


# The decoder is *not* equivariant: after a shuffle, a token sees a different set of earlier
# tokens. The causal mask itself carries order information, which is why decoders without any
# encoding (NoPE) can still learn positions; notebook 05 (relative biases) shows it.
check_exercise_2(equivariance_gap)

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
# Exercise 3. Ordered pairs (agent, patient), each with probability 1/2 * 1/2:
#   (cat, dog), (dog, cat): same bag {cat, dog}, both agents equally likely -> best guess right 1/2
#   (cat, mouse), (dog, mouse): the bag names the agent (whichever is not the mouse) -> right always
# Verbs, voice and adjectives are drawn independently of who is who, so they do not help.
answer = 0.5 * 0.5 + 0.5 * 1.0
check_exercise_3(answer)

# %% [markdown]
# ## End of notebook 00
# <!-- Keep this cell last. "Run All" ends on the last cell, and JupyterLab unfolds the section that
#      holds it: outside "Solutions", this heading leaves the solutions folded. -->

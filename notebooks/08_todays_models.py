# %% [markdown]
# # 08 · Position in today's models
#
# Notebooks 00-07 built each encoding from its paper. A learner who then loads Llama 3.1, Gemma 3,
# Qwen2.5-VL, DeepSeek-V3, Phi-3 or SmolLM3 meets schemes the papers of 2017-2023 do not show:
# frequencies rescaled per band (Llama 3) or per pair (LongRoPE), one base for local layers and
# another for global ones, three-dimensional positions for video (M-RoPE), layers with no position
# encoding at all between RoPE layers, RoPE on only part of each head. This notebook reads those
# schemes off the models' own configuration, rebuilds each in `posenc_lib`, proves it equal to the
# model's own code in Hugging Face `transformers`, and then trains tiny models to see what two of
# the new ideas do.
#
# **What you will learn**
# - how to read a model's position scheme off its `transformers` config, and the field that moved
#   between versions (`rope_scaling` and `rope_theta` went into `rope_parameters`), with the silent
#   fall-back to base 10000 that code written for the old field meets;
# - the schemes of today's models, each computed by `posenc_lib` and asserted equal to the model's
#   own code on tiny configs: Llama 3 and LongRoPE frequencies, a base per layer type (Gemma 3),
#   truncated frequencies (Gemma 4's "proportional" RoPE), M-RoPE in its two orderings (Qwen2-VL,
#   Qwen3-VL), NoPE layers and Llama 4's attention temperature, DeepSeek's decoupled RoPE, Cohere's
#   interleaved layout with RoPE on local layers only;
# - how to convert a checkpoint between the two RoPE layouts across two model classes, and why a
#   test on a freshly initialised model can miss a skipped permutation;
# - measured, 3 seeds each: what NoPE layers and local-window RoPE do past the training length;
#   which rotary frequencies a tiny trained model uses, and what truncating the slowest ones
#   (p-RoPE) changes;
# - measured: M-RoPE against 1-D RoPE and per-frame 2-D RoPE on a tiny video task, and why the
#   order in which M-RoPE hands out its pairs matters.
#
# **Prerequisites:** [03 · RoPE](03_rope.ipynb) (layouts, conversion, partial rotary),
# [04 · Position in vision transformers](04_vision.ipynb) (2-D RoPE),
# [05 · Relative biases](05_relative_biases.ipynb) (NoPE),
# [06 · Length extrapolation](06_length_extrapolation.ipynb) (the character LM, PI, NTK-aware, YaRN)
# and [07 · Debugging and practice](07_debugging.ipynb) (layout bugs).
#
# **Run time:** about 98 s on a laptop CPU (measured with `make execute`, one thread), most of it in
# 18 training runs of a character LM and 12 of a tiny video classifier.

# %%
import itertools
import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
import transformers
from transformers.models.gemma3.modeling_gemma3 import Gemma3RotaryEmbedding
from transformers.models.gemma4.modeling_gemma4 import (
    Gemma4TextRotaryEmbedding,
)
from transformers.models.llama.modeling_llama import (
    LlamaAttention,
    LlamaRotaryEmbedding,
)
from transformers.models.phi3.modeling_phi3 import Phi3RotaryEmbedding
from transformers.models.qwen2_vl.modeling_qwen2_vl import (
    Qwen2VLRotaryEmbedding,
)
from transformers.models.qwen3_vl.modeling_qwen3_vl import (
    Qwen3VLTextRotaryEmbedding,
)

from posenc_course.data import WhenAndWhere, char_corpus, lm_eval_windows
from posenc_course.exercises.nb08 import (
    check_exercise_1,
    check_exercise_2,
    check_exercise_3,
)
from posenc_course.nb06_extrapolation import train_char_lm
from posenc_course.nb08_families import (
    FAMILIES,
    family_table,
    layer_pattern,
    legacy_rope_theta,
)
from posenc_course.plotting import COLORS, LINESTYLES, MARKERS
from posenc_course.report import clearly_ahead, mean_std, rounding
from posenc_course.training import (
    accuracy,
    run_each,
    seed_everything,
    setup_notebook,
    train,
)
from posenc_lib.analysis.lm_metrics import per_position_loss, perplexity_at
from posenc_lib.analysis.pair_usage import WithoutPairs, pair_usage
from posenc_lib.interop.hf import additive_causal_mask, attention_from_hf
from posenc_lib.interop.hf_config import (
    rope_theta,
    rotary_scheme,
    rotating_layers,
)
from posenc_lib.models import LayerSpec, TinyTransformer, with_scheme
from posenc_lib.rotary.decoupled import DecoupledRoPE
from posenc_lib.rotary.mrope import (
    MRoPE,
    mrope_axes,
    mrope_cos_sin,
    mrope_positions,
)
from posenc_lib.rotary.rope import (
    RotaryPE,
    convert_rope_checkpoint,
    rope_cos_sin,
    rope_inv_freq,
)
from posenc_lib.rotary.temperature import QueryTemperature, query_temperature
from posenc_lib.scheme import NoPosition

gen = setup_notebook(0)
pd.set_option("display.width", 140)
transformers.logging.set_verbosity_error()  # tiny configs make transformers warn about sizes; the checks below speak
print("transformers", transformers.__version__)

# %% [markdown]
# ## 1 · Position in the wild
#
# **Question:** which position scheme does each model family a learner loads use, and where does
# its configuration say so?
#
# `family_table` builds each family's configuration from its `transformers` config class, offline
# (no download): the class defaults where they are a published model's, and otherwise the values
# of a named published checkpoint, passed to the class (the table's column "values from" names it,
# and `posenc_course/nb08_families.py` the `config.json` each value comes from). Every other column is
# read from the config object the way `transformers` 5.x stores it. The first table says what each
# family does and which notebook teaches the idea; the second gives the numbers.

# %% tags=["nbval-check-output"]
families = family_table().set_index("family")
families["taught in"] = families["notebook"].str[:2]  # the notebook's number (links below the tables)
display(families[["scheme", "layers that rotate", "taught in"]])
display(families[["base", "scaling type", "factor", "rotary fraction", "context length"]])

# %% [markdown]
# Where the course teaches each idea: learned tables in [02](02_learnable.ipynb); T5's buckets,
# ALiBi and NoPE in [05](05_relative_biases.ipynb); RoPE, its layouts and partial rotary in
# [03](03_rope.ipynb); PI, NTK-aware and YaRN in [06](06_length_extrapolation.ipynb); everything
# newer (Llama 3 bands, LongRoPE, bases per layer type, p-RoPE, M-RoPE, NoPE layers, decoupled RoPE)
# in this notebook's section 2, and what some of it does, trained, in sections 4 and 5.
#
# The table in words: learned tables (BERT, GPT-2) and score biases (T5, Bloom's ALiBi) belong to
# the older families; every family since 2022 rotates. Within RoPE, what varies is the base
# (10,000 to 5,000,000), how the frequencies are rescaled for long contexts (Llama 3's bands,
# LongRoPE's per-pair factors, YaRN), how much of each head rotates, which axis each pair reads
# (M-RoPE), and which layers rotate at all.
#
# **The field that moved.** `transformers` 4.x kept the base as `config.rope_theta` and the long-context
# settings as `config.rope_scaling`; 5.x keeps both in one dict, `config.rope_parameters`, with the
# base inside it (and one such dict per layer type for Gemma 3 and 4). A line written for 4.x,
# `getattr(config, "rope_theta", 10000.0)`, still runs on a 5.x config: it silently finds no such
# attribute and falls back to its default.

# %% tags=["nbval-check-output"]
config_of = {family.name: family.config for family in FAMILIES}  # family name -> builds its transformers config
llama31 = config_of["Llama 3.1"]()
print("config.rope_parameters:", llama31.rope_parameters)
print("hasattr(config, 'rope_theta'):", hasattr(llama31, "rope_theta"))
print(f"the 4.x habit reads base {legacy_rope_theta(llama31):,.0f}; rope_parameters says {rope_theta(llama31):,.0f}")
assert legacy_rope_theta(llama31) == 10000.0 and rope_theta(llama31) == 500000.0
wrong, right = (RotaryPE(128, base=b).inv_freq for b in (legacy_rope_theta(llama31), rope_theta(llama31)))
print(f"slowest pair's wavelength: {2 * math.pi / wrong[-1]:,.0f} tokens with the wrong base, "
      f"{2 * math.pi / right[-1]:,.0f} with the right one")

# %% [markdown]
# No error, no warning: a model loaded with base 10,000 instead of 500,000 turns its slowest pair
# about 50 times too fast, and its long-context behaviour is silently another model's.
#
# **Which layers rotate.** Three families decide per layer. SmolLM3 and Llama 4 carry a flag per
# layer, `no_rope_layers`, where **1 means the layer uses RoPE** (the name says the opposite); by
# default every fourth layer has no position encoding. Cohere2 rotates only its sliding-window
# (local) layers; its global layers have none. `rotating_layers` reads the flags, and we check them
# against what the Hugging Face attention modules themselves do:

# %% tags=["nbval-check-output"]
patterns = {}
for name in ("SmolLM3", "Llama 4", "Cohere2", "Gemma 3"):
    patterns[name] = layer_pattern(rotating_layers(config_of[name]()))
    print(f"{name:8s} {patterns[name]}")

# %% [markdown]
# (R: a layer with RoPE, N: a layer without.) The unit tests check `rotating_layers` against the
# per-layer flags of the Hugging Face modules (`use_rope` of SmolLM3's and Llama 4's attention, the
# window that switches Cohere2's rotation on).
#
# **Takeaway:**
# - Read a model's position scheme from `config.rope_parameters` (5.x), never from a default.
# - Today's RoPE models differ in base, rescaling, rotated fraction, pair-to-axis assignment and
#   which layers rotate: section 2 rebuilds each.
#
# ## 2 · Each scheme in `posenc_lib`, equal to the model's own code
#
# **Question:** does the library compute what the models compute?
#
# For each scheme we build the model's own module (a rotary module from the published config of
# section 1; a whole attention layer from a tiny config, hidden size 64 and 4 heads of 16), give it
# and the library the same input, and assert that the results agree: the cos/sin tables, the
# rotated queries and keys, and, where position changes more than the rotation, the attention
# layer's output, through `attention_from_hf`, which copies a Hugging Face attention module's
# weights into the library's `MultiHeadAttention`. `agree` asserts, and records the bound that held.

# %%
TINY = dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=4, num_hidden_layers=2, intermediate_size=64,
            vocab_size=128)  # heads of 64 / 4 = 16
errors = {}


def agree(name: str, ours: torch.Tensor, theirs: torch.Tensor, tol: float = 1e-5) -> None:
    """Assert |ours - theirs| <= tol everywhere (tol 0: bit for bit); record the bound that held under ``name``."""
    assert ours.shape == theirs.shape, f"{name}: shapes {tuple(ours.shape)} and {tuple(theirs.shape)}"
    error = (ours.double() - theirs.double()).abs().max().item()
    assert error <= tol, f"{name}: {error:.3g} > {tol:g}"
    errors[name] = "equal, bit for bit" if tol == 0 else f"within {tol:g} (rounding)"


def hf_rotary(module, positions, *layer_type):
    """A Hugging Face rotary module's full-width (cos, sin) at positions, as our half width (HF repeats the halves)."""
    cos, sin = module(torch.zeros(1), positions, *layer_type)
    return cos[..., : cos.shape[-1] // 2], sin[..., : sin.shape[-1] // 2]


x = torch.randn(2, 40, 64, generator=torch.Generator().manual_seed(1))  # a batch of hidden states
positions = torch.arange(40)[None]

# %% [markdown]
# ### Frequencies and bases, from the published configs
#
# Notebook 06 rescaled every frequency alike (PI), through the base (NTK-aware) or with a ramp
# (YaRN). Three newer ways:
#
# - **Llama 3.1** rescales by band: pairs whose wavelength is shorter than $L_0/4$
#   (`high_freq_factor` 4, $L_0$ = 8192) keep their frequency, pairs longer than $L_0$
#   (`low_freq_factor` 1) are divided by the factor 8, and the band between is blended.
# - **LongRoPE** (Phi-3) divides pair $i$ by its own factor, found by search: `short_factor` for
#   sequences up to $L_0$ = 4096, `long_factor` beyond, and multiplies cos and sin by
#   $\sqrt{1 + \ln s / \ln L_0}$ with $s$ = 131072 / 4096.
# - **Gemma 3** gives its local layers base 10,000 and its global layers base 1,000,000 with linear
#   scaling ×8; **Gemma 4**'s global layers use "proportional" RoPE: the frequencies of the full
#   head, of which only the fastest quarter turn (`partial_rotary_factor` 0.25), the rest get
#   frequency 0. That is Barbero et al.'s **p-RoPE**, and not GPT-NeoX's partial rotary (notebook
#   03), which recomputes the frequencies over the rotated width.
#
# `rotary_scheme(config, layer_type)` reads a config's rope parameters and builds the library's
# `RotaryPE`; we compare its cos/sin tables with those of each model's own rotary module, at
# positions within the original context and far beyond it (where LongRoPE switches to its long
# factors), for the published configs of section 1 (Phi-3's 48 short and 48 long factors included).

# %% tags=["nbval-check-output"]
ROTARY = [("Llama 3.1", LlamaRotaryEmbedding, None), ("Phi-3", Phi3RotaryEmbedding, None),
          ("Gemma 3", Gemma3RotaryEmbedding, "sliding_attention"), ("Gemma 3", Gemma3RotaryEmbedding, "full_attention"),
          ("Gemma 4", Gemma4TextRotaryEmbedding, "sliding_attention"), ("Gemma 4", Gemma4TextRotaryEmbedding, "full_attention")]
near, far = torch.arange(0, 4096, 8)[None], torch.randint(4096, 131072, (1, 256), generator=torch.Generator().manual_seed(2))
schemes = {}
for name, rotary_class, layer_type in ROTARY:
    config = config_of[name]()
    schemes[name, layer_type] = ours = rotary_scheme(config, layer_type)
    for at in (near, far):
        agree(f"{name}{f' ({layer_type})' if layer_type else ''}: cos, sin", torch.cat(ours.cos_sin(at)),
              torch.cat(hf_rotary(rotary_class(config), at, *[layer_type] * bool(layer_type))), tol=0.0)
p_rope = schemes["Gemma 4", "full_attention"]
turning = int((p_rope.inv_freq > 0).sum())
assert torch.equal(p_rope.inv_freq[:turning], rope_inv_freq(p_rope.head_dim, 1e6)[:turning])  # the full head's fastest
print(f"Gemma 4 global layers: {turning} of {p_rope.inv_freq.numel()} pairs turn (head {p_rope.head_dim}), "
      f"the rest have frequency 0")
phi3 = schemes["Phi-3", None]
print(f"Phi-3 LongRoPE attention factor: {phi3.attention_factor:.4f}")
assert phi3.attention_factor == math.sqrt(1 + math.log(131072 / 4096) / math.log(4096))

# %% tags=["nbval-check-output"]
fig, ax = plt.subplots(figsize=(7.5, 3.8))
curves = {"Llama 3.1 (factor 8, bands)": schemes["Llama 3.1", None].inv_freq / rope_inv_freq(128, 500000.0),
          "Phi-3, beyond 4096 (long factors)": phi3.inv_freq_long / rope_inv_freq(96, 10000.0),
          "Phi-3, up to 4096 (short factors)": phi3.inv_freq / rope_inv_freq(96, 10000.0),
          "Gemma 4 global (p-RoPE 0.25)": p_rope.inv_freq / rope_inv_freq(512, 1e6)}
for k, (label, ratio) in enumerate(curves.items()):
    fraction = np.arange(ratio.numel()) / ratio.numel()  # pair i of n, as a fraction of the head
    ax.plot(fraction, ratio.clamp_min(1e-3).numpy(), color=COLORS[k], linestyle=LINESTYLES[k], marker=MARKERS[k],
            markevery=max(1, ratio.numel() // 8), label=label)
ax.set_yscale("log")
ax.set(title="Rescaled / plain frequency of each pair (0 drawn at the bottom)", xlabel="pair index / pairs per head "
       "(fast pairs left, slow right)", ylabel="new frequency / plain frequency (log scale)", ylim=(5e-4, 2))
ax.legend(fontsize=9, loc="lower left")
plt.show()
bands = schemes["Llama 3.1", None].inv_freq / rope_inv_freq(128, 500000.0)
print(f"Llama 3.1, 64 pairs: {int((bands == 1).sum())} kept, {int(((bands < 1) & (bands > 1 / 8)).sum())} blended, "
      f"{int((bands == 1 / 8).sum())} divided by 8")

# %% [markdown]
# The three curves are three answers to "which pairs should slow down for a longer context?":
# Llama 3.1 keeps the fast pairs and slows the slow ones by 8, LongRoPE slows every pair by its own
# searched factor, and only past the original length, and p-RoPE stops the slow pairs altogether.
#
# A frequency table is not yet a model. On a tiny Llama layer with Llama 3 scaling (here with $L_0 = 32$,
# so that 40 positions reach past it), the library's attention layer, holding Hugging Face's weights,
# gives Hugging Face's output:

# %%
llama3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 32, "rope_theta": 500000.0}
config = transformers.LlamaConfig(**TINY, max_position_embeddings=256, rope_parameters=dict(llama3))
config._attn_implementation = "eager"
torch.manual_seed(3)
hf = LlamaAttention(config, layer_idx=0).eval()
with torch.no_grad():
    agree("Llama 3 scaling: attention output", attention_from_hf(hf, rotary_scheme(config))(x, causal=True),
          hf(x, LlamaRotaryEmbedding(config)(x, positions), additive_causal_mask(40))[0])

# %% [markdown]
# ### M-RoPE (Qwen2-VL, Qwen2.5-VL, Qwen3-VL): three coordinates, one per pair
#
# A video token has three coordinates: its frame $t$, row $h$ and column $w$. M-RoPE turns each
# pair by **one** of them, $p_i \theta_i$ with $p_i \in \{t, h, w\}$, so a score depends on the
# three offsets $(\Delta t, \Delta h, \Delta w)$, each through its own pairs. `mrope_section`
# $(s_t, s_h, s_w)$ says how many pairs each axis gets; the two model generations hand them out in
# different orders:
#
# - **sectioned** (Qwen2-VL, Qwen2.5-VL, `mrope_section` 16, 24, 24 of 64 pairs): the first $s_t$
#   pairs read $t$, the next $s_h$ read $h$, the last $s_w$ read $w$;
# - **interleaved** (Qwen3-VL, 24, 20, 20): the pairs cycle $t, h, w, t, h, w, \dots$.
#
# Since pair $i$'s frequency falls with $i$, the order decides which frequencies each axis gets:

# %% tags=["nbval-check-output"]
fig, ax = plt.subplots(figsize=(7.5, 2.6))
for row, (label, section, interleaved) in enumerate([("sectioned (Qwen2-VL)", [16, 24, 24], False),
                                                     ("interleaved (Qwen3-VL)", [24, 20, 20], True)]):
    axes_of_pairs = mrope_axes(64, section, interleaved)
    for axis, (name, hatch) in enumerate([("t (frame)", ""), ("h (row)", "///"), ("w (column)", "...")]):
        pairs = torch.nonzero(axes_of_pairs == axis).flatten().numpy()
        ax.bar(pairs, 0.8, bottom=row, width=1.0, color=COLORS[axis], hatch=hatch, edgecolor="white",
               label=name if row == 0 else None)
ax.set(title="Which coordinate each rotary pair of a 128-wide head reads", xlabel="pair index i (frequency falls with i)",
       yticks=[0.4, 1.4], yticklabels=["sectioned\n(Qwen2-VL)", "interleaved\n(Qwen3-VL)"], xlim=(-0.5, 63.5))
ax.legend(ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.35))
plt.show()
sectioned_w = mrope_axes(64, [16, 24, 24]) == 2
theta = rope_inv_freq(128, 1e6)
print(f"sectioned: width reads pairs 40-63, the fastest of which turns {theta[sectioned_w].max():.2e} rad per column; "
      f"interleaved: width's fastest pair turns {theta[mrope_axes(64, [24, 20, 20], True) == 2].max():.2f}")

# %% tags=["nbval-check-output"]
coords = mrope_positions(frames=3, height=2, width=4, n_text_before=3, n_text_after=2)  # (t, h, w) of 29 tokens
print("coordinates (t, h, w) of the first 7 and last 3 tokens:", coords[:7].tolist(), coords[-3:].tolist())
for name, config_class, rotary_class, section, interleaved in [
    ("Qwen2-VL", transformers.Qwen2VLTextConfig, Qwen2VLRotaryEmbedding, [2, 3, 3], False),
    ("Qwen3-VL", transformers.Qwen3VLTextConfig, Qwen3VLTextRotaryEmbedding, [4, 2, 2], True),
]:
    config = config_class(**TINY, head_dim=16, rope_parameters={"rope_type": "default", "rope_theta": 1e6,
                                                                "mrope_section": section})
    rotary = rotary_class(config)
    ours = MRoPE(16, coords, section, base=1e6, interleaved=interleaved)
    agree(f"{name} M-RoPE: cos, sin", torch.cat(ours.cos_sin(torch.arange(29)[None])),
          torch.cat(hf_rotary(rotary, coords.T[:, None, :])), tol=0.0)
    # a text token has t = h = w = its index: M-RoPE is then exactly 1-D RoPE, in either order
    text = torch.arange(29)
    assert all(torch.equal(a, b) for a, b in zip(mrope_cos_sin(text.expand(3, -1), ours.inv_freq, section, interleaved),
                                                 rope_cos_sin(text, ours.inv_freq)))

# %% [markdown]
# The coordinates follow `get_rope_index` of the Qwen models (the unit tests compare them): text
# counts 0, 1, 2; a video starting at index 3 gives its token $(f, r, c)$ the coordinates
# $(3+f, 3+r, 3+c)$, and the text after it resumes at $3 + \max(H, W)$. And since a text token has
# $t = h = w$, M-RoPE on text is plain RoPE, in either order (asserted).
#
# ### NoPE layers and Llama 4's attention temperature
#
# Llama 4 rotates three layers in four (local, chunked attention) and gives the fourth, global,
# layer no position encoding at all. Without RoPE, such a layer's attention spreads thinner as the
# context grows; Llama 4 counters it by multiplying the queries of its NoPE layers by a temperature
# that grows with the position $m$: $1 + s \ln\!\big(1 + \lfloor (m+1)/F \rfloor\big)$
# (`attn_scale` $s$ = 0.1, `floor_scale` $F$ = 8192). In the library that is a position scheme of
# its own, `QueryTemperature`, whose `rotate_qk` scales $q$ and leaves $k$ alone. We check a whole
# Llama 4 NoPE attention layer, with $F = 4$ so that the temperature changes within 40 tokens:

# %% tags=["nbval-check-output"]
config = transformers.Llama4TextConfig(**TINY, head_dim=16, intermediate_size_mlp=64, use_qk_norm=False, attention_chunk_size=None,
                                       no_rope_layers=[0, 1], floor_scale=4, attn_scale=0.1)
config._attn_implementation = "eager"
torch.manual_seed(5)
hf = transformers.models.llama4.modeling_llama4.Llama4TextAttention(config, layer_idx=0).eval()
assert not hf.use_rope and hf.attn_temperature_tuning
with torch.no_grad():
    agree("Llama 4 NoPE layer + temperature: attention output",
          attention_from_hf(hf, QueryTemperature(floor_scale=4, attn_scale=0.1))(x, causal=True),
          hf(x, None, additive_causal_mask(40))[0])
    wrong = (attention_from_hf(hf, NoPosition())(x, causal=True) - hf(x, None, additive_causal_mask(40))[0]).abs().max().item()
print(f"without the temperature the output differs by up to {wrong:.3f}")
assert wrong > 0.01
m = torch.tensor([0, 8190, 8191, 65535, 1_048_575])
print("Llama 4's temperature at positions", m.tolist(), ":", [round(float(t), 3) for t in query_temperature(m)])

# %% [markdown]
# The temperature is exactly 1 up to position 8190 and grows with the logarithm of the number of
# 8192-token blocks after that: 1.069 from position 8191, 1.22 at 64K tokens, 1.486 at 1M.
#
# ### DeepSeek-V3: decoupled RoPE beside compressed keys
#
# DeepSeek's multi-head latent attention (MLA) stores one compressed vector per token instead of
# keys and values per head. RoPE cannot go through that compression (a rotation depends on the
# position, the compression does not), so each head's query and key get a **separate small slice**
# that rotates (`qk_rope_head_dim` 64, beside 128 that do not, `qk_nope_head_dim`), and the rotated
# key slice is one vector per token shared by all heads. `DecoupledRoPE` rotates the trailing
# slice. DeepSeek-V3 also uses YaRN ×40 and the interleaved layout (`rope_interleave`), which its
# Hugging Face code turns into the half layout on the fly: its rotated slice is ours with the dims
# permuted (evens, then odds), and the scores are the same.

# %%
yarn = {"rope_type": "yarn", "factor": 40.0, "original_max_position_embeddings": 4096, "beta_fast": 32, "beta_slow": 1,
        "mscale": 1.0, "mscale_all_dim": 1.0}
config = transformers.DeepseekV3Config(**TINY, qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=16, kv_lora_rank=16,
                                       q_lora_rank=24, rope_parameters={**yarn, "rope_theta": 10000.0},
                                       rope_interleave=True, n_routed_experts=4, num_experts_per_tok=2, n_group=1, topk_group=1)
deepseek = transformers.models.deepseek_v3.modeling_deepseek_v3
ours = DecoupledRoPE(nope_dim=8, rope_dim=8, base=10000.0, layout="interleaved", scaling=yarn)
at = torch.randint(0, 20000, (2, 40), generator=torch.Generator().manual_seed(6))
cos, sin = deepseek.DeepseekV3RotaryEmbedding(config)(torch.zeros(1), at)
agree("DeepSeek-V3 (YaRN x40): cos, sin", torch.cat(ours.rope.cos_sin(at)), torch.cat((cos[..., :4], sin[..., :4])), 0.0)
q, k = torch.randn(2, 2, 4, 40, 16, generator=torch.Generator().manual_seed(7)).unbind(0)
their_q, their_k = deepseek.apply_rotary_pos_emb_interleave(q[..., 8:], k[..., 8:], cos, sin)
our_q, our_k = ours.rotate_qk(q, k, at)
evens_then_odds = torch.tensor([0, 2, 4, 6, 1, 3, 5, 7])
agree("DeepSeek-V3: rotated slice (up to the permutation)", our_q[..., 8:][..., evens_then_odds], their_q, 1e-6)
assert torch.equal(our_q[..., :8], q[..., :8])  # the other slice is not touched
agree("DeepSeek-V3: scores", our_q @ our_k.transpose(-1, -2),
      torch.cat((q[..., :8], their_q), -1) @ torch.cat((k[..., :8], their_k), -1).transpose(-1, -2), 1e-4)

# %% [markdown]
# The unit tests also rebuild a whole MLA layer from the module's weights with this rotation and
# compare its output with `DeepseekV3Attention`'s.
#
# ### Cohere2: the interleaved layout, on local layers only
#
# Cohere's models pair the dims as Meta's LLaMA did, $(x_{2i}, x_{2i+1})$: our "interleaved" layout
# (notebook 03). Cohere2 (Command R7B) rotates only its sliding-window layers; its global layers have
# no position encoding at all. One `attention_from_hf` per layer kind: on the local layer the scheme
# `rotary_scheme(config)` builds (it reads the interleaved layout off the model type) and the module's
# window, on the global one `NoPosition`:

# %%
config = transformers.Cohere2Config(**TINY, layer_types=["sliding_attention", "full_attention"], sliding_window=6,
                                    rope_parameters={"rope_type": "default", "rope_theta": 50000.0})
config._attn_implementation = "eager"
cohere2 = transformers.models.cohere2.modeling_cohere2
position_embeddings = cohere2.Cohere2RotaryEmbedding(config)(x, positions)
torch.manual_seed(8)
assert rotary_scheme(config).layout == "interleaved"  # read from the model type: Cohere pairs neighbours
for layer, scheme, mask in ((0, rotary_scheme(config), additive_causal_mask(40, window=6)), (1, NoPosition(), additive_causal_mask(40))):
    hf = cohere2.Cohere2Attention(config, layer_idx=layer).eval()
    with torch.no_grad():
        agree(f"Cohere2 {config.layer_types[layer]} layer: attention output", attention_from_hf(hf, scheme)(x, causal=True),
              hf(x, position_embeddings, mask)[0])

# %% [markdown]
# **Check.** Every comparison above is an assertion; here is what each one asserted. Tables agree
# bit for bit (the library computes them with Hugging Face's float32 operations, in the same order);
# rotations and attention outputs, computed in another order, agree to rounding. (The last digits
# of a rounding difference depend on the CPU, so the table states the bound each check held to.)

# %% tags=["nbval-check-output"]
display(pd.Series(errors, name="ours against Hugging Face").to_frame())

# %% [markdown]
# **Takeaway:**
# - Every scheme of section 1 is in `posenc_lib` and computes what the model's own code computes:
#   `rope_frequencies` types "llama3", "longrope" and "proportional" (p-RoPE), `rotary_scheme` to
#   build them from a config, `LayerSpec` for a scheme per layer type, `MRoPE` in both orders,
#   `QueryTemperature`, `DecoupledRoPE`, and the "interleaved" layout.
# - M-RoPE's two orders give the axes different frequencies; section 5 measures what that does.
#
# ## 3 · A layout-conversion lab on real model classes
#
# **Question:** Hugging Face's Llama pairs dims as halves, $(x_i, x_{i+d/2})$; Llama 4's code pairs
# them as neighbours, $(x_{2i}, x_{2i+1})$, with Meta's complex numbers. Can a Llama checkpoint run
# in the other class, and what happens if the conversion is skipped?
#
# Notebook 03 derived the recipe: permute the rows of $W_q$ and $W_k$ within each head (never $W_v$,
# $W_o$), `convert_qk_weight(W, n_heads, to="interleaved")`; `convert_rope_checkpoint` does it to every
# `q_proj` and `k_proj` of a Hugging Face state dict. Here on two real classes: a tiny
# randomly initialised `LlamaForCausalLM`, and a `Llama4ForCausalLM` configured as the same dense
# network (every layer rotates, no query-key norm, no mixture of experts, one chunk of attention),
# whose weights we copy over with and without the permutation.

# %% tags=["nbval-check-output"]
def llama_pair(init_std: float) -> tuple[torch.nn.Module, torch.nn.Module]:
    """A random Hugging Face Llama (half layout) and an empty Llama 4 text model of the same shape (interleaved)."""
    shape = dict(vocab_size=64, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=4, head_dim=16, max_position_embeddings=128, tie_word_embeddings=False,
                 rms_norm_eps=1e-5, initializer_range=init_std, rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
    torch.manual_seed(9)
    llama = transformers.LlamaForCausalLM(transformers.LlamaConfig(**shape)).eval()
    llama4 = transformers.Llama4ForCausalLM(transformers.Llama4TextConfig(
        **shape, intermediate_size_mlp=128, no_rope_layers=[1, 1], use_qk_norm=False, moe_layers=[],
        attention_chunk_size=1024, attn_temperature_tuning=False)).eval()
    return llama, llama4


def converted(state: dict, permute: bool) -> dict:
    """Llama's state_dict under Llama 4's names (mlp -> feed_forward), W_q and W_k permuted per head if asked."""
    if permute:
        state = convert_rope_checkpoint(state, head_dim=16, to="interleaved")  # convert_qk_weight on each q_proj, k_proj
    return {name.replace(".mlp.", ".feed_forward."): weight for name, weight in state.items()}


eps = (transformers.LlamaConfig().rms_norm_eps, transformers.Llama4TextConfig().rms_norm_eps)
print(f"RMSNorm epsilon by default: LlamaConfig {eps[0]:g}, Llama4TextConfig {eps[1]:g} (set to 1e-05 for both above)")
tokens = torch.randint(0, 64, (4, 48), generator=torch.Generator().manual_seed(10))
lab = {}
for init_std in (0.02, 0.3):
    llama, llama4 = llama_pair(init_std)
    with torch.no_grad():
        reference = llama(tokens).logits
        for permute in (True, False):
            llama4.load_state_dict(converted(llama.state_dict(), permute), strict=True)
            logits = llama4(tokens).logits
            lab[(init_std, permute)] = ((logits - reference).abs().max().item(),
                                        (logits.argmax(-1) == reference.argmax(-1)).float().mean().item())
report = pd.DataFrame([(std, "yes" if p else "skipped", "< 1e-4" if diff < 1e-4 else rounding(diff), f"{top1:.3f}")
                       for (std, p), (diff, top1) in lab.items()],
                      columns=["init std", "permutation", "max |logit difference|", "same top-1 token"])
display(report)
assert lab[(0.02, True)][0] < 1e-5 and lab[(0.3, True)][0] < 1e-3  # converted: the same model
assert lab[(0.02, False)][1] > 0.95  # skipped, at the usual init: almost every prediction survives
assert lab[(0.3, False)][1] < 0.5  # skipped, with attention as sharp as a trained model's: most do not

# %% [markdown]
# **Check.** With the permutation, the Llama 4 class computes the Llama checkpoint's logits up to
# rounding; `load_state_dict(strict=True)` succeeded in all four runs: nothing complains when the
# permutation is skipped. At the usual initialisation (standard deviation 0.02), attention is nearly
# uniform, position matters little, and the wrong layout changes the logits only in the third
# decimal (a share of 0.995 of the predicted tokens unchanged): a conversion test on a fresh model
# passes with or without the fix. With weights at 0.3, attention is sharp, as in a trained model, and the
# same mistake changes most predictions.
#
# **Takeaway:**
# - Converting between layouts is a per-head permutation of $W_q$ and $W_k$; it loads silently
#   whether or not it was done.
# - Test a conversion with sharp attention (a trained checkpoint, or large random weights), and
#   compare logits, not the absence of errors.
#
# ## 4 · Trained: NoPE layers, local RoPE, and the frequencies a model uses
#
# **Question:** SmolLM3 and Llama 4 drop RoPE from every fourth layer; Cohere2 keeps RoPE only on
# local-window layers. What does each do past the training length? And which of its rotary pairs
# does a trained model use?
#
# The setting is notebook 06's: causal character LMs trained for 100 steps on windows of
# $L = 32$ characters of five Shakespeare tragedies, evaluated on the held-out *Macbeth* at $L$ to
# $8L$. The models have 4 layers (so that "one layer in four" means something), width 32, 2 heads
# of 16 (8 rotary pairs each). Six settings, 3 seeds each:
#
# - **all RoPE** and **all NoPE** (no position encoding, the causal mask alone);
# - **NoPE 1 in 4**: RoPE on layers 0-2, none on layer 3 (SmolLM3's pattern);
# - **local RoPE + global NoPE**: layers 0-2 rotate and see only the last 16 keys (a sliding
#   window of $L/2$), layer 3 sees every key and has no position encoding (Cohere2's pattern);
# - **p-RoPE 0.5** and **p-RoPE 0.25**: every layer rotates only the fastest half or quarter of its
#   pairs, the others get frequency 0 (Gemma 4's "proportional"; the two fastest pairs, kept by
#   p-RoPE 0.25, have wavelengths 6.3 and 19.9, both shorter than $L$).

# %% tags=["nbval-check-output"]
corpus = char_corpus()
L, STEPS, LR, SEEDS = 32, 100, 8e-3, [0, 1, 2]
LENGTHS = [L, 2 * L, 4 * L, 8 * L]
inputs, targets = lm_eval_windows(corpus.valid, 8 * L, 32)


def rope(**kwargs) -> RotaryPE:
    return RotaryPE(16, **kwargs)


LAYERS = {
    "all RoPE": lambda: [LayerSpec(rope())] * 4,
    "all NoPE": lambda: [LayerSpec(NoPosition())] * 4,
    "NoPE 1 in 4": lambda: [LayerSpec(rope())] * 3 + [LayerSpec(NoPosition())],
    "local RoPE + global NoPE": lambda: [LayerSpec(rope(), window=L // 2)] * 3 + [LayerSpec(NoPosition())],
    "p-RoPE 0.5": lambda: [LayerSpec(rope(rotary_fraction=0.5, scaling={"rope_type": "proportional"}))] * 4,
    "p-RoPE 0.25": lambda: [LayerSpec(rope(rotary_fraction=0.25, scaling={"rope_type": "proportional"}))] * 4,
}
setups = list(itertools.product(LAYERS, SEEDS))
trained = run_each(lambda s: train_char_lm(NoPosition(), corpus, L, STEPS, s[1], lr=LR, d_model=32, n_heads=2,
                                           n_layers=4, layer_specs=LAYERS[s[0]]), setups, desc="setting x seed")
lms = dict(zip(setups, trained))
evaluated = run_each(lambda model: perplexity_at(per_position_loss(model, inputs, targets), LENGTHS), trained)
ppl = {name: np.array([p for (n, _), p in zip(setups, evaluated) if n == name]) for name in LAYERS}

# %% tags=["nbval-check-output"]
table = pd.DataFrame({name: [mean_std(v[:, j], digits=2) for j in range(len(LENGTHS))] for name, v in ppl.items()},
                     index=[f"{n} ({n // L}L)" for n in LENGTHS]).T
table["ppl(8L) / ppl(L)"] = [f"{v.mean(0)[-1] / v.mean(0)[0]:.3f}" for v in ppl.values()]
table.index.name = "perplexity (mean ± std, 3 seeds)"
display(table)

fig, ax = plt.subplots(figsize=(7.5, 4.4))
for k, (name, v) in enumerate(ppl.items()):
    ax.plot(LENGTHS, v.mean(0), color=COLORS[k], linestyle=LINESTYLES[k], marker=MARKERS[k], label=name)
    ax.fill_between(LENGTHS, v.min(0), v.max(0), color=COLORS[k], alpha=0.15)
ax.set_xscale("log", base=2)
ax.set_xticks(LENGTHS, [str(n) for n in LENGTHS])
ax.minorticks_off()
ax.axvline(L, color="grey", linewidth=1)
ax.set(title="Trained at L = 32, evaluated longer (4 layers; mean of 3 seeds, range shaded)",
       xlabel="evaluation length (characters, log scale)", ylabel="validation perplexity (Macbeth)")
ax.legend(ncol=2, fontsize=9, loc="upper left")
plt.show()

# %% [markdown]
# **Check**, by the series' rule (a gap of the means over twice the larger seed spread):

# %% tags=["nbval-check-output"]
mean = {name: v.mean(0) for name, v in ppl.items()}
growth = {name: m[-1] / m[0] for name, m in mean.items()}


def clearly_below(a: str, b: str, at: int) -> bool:
    """Setting a has lower perplexity than b at LENGTHS[at], by the series' rule (floor: 2% of b's perplexity)."""
    return clearly_ahead(ppl[a][:, at], ppl[b][:, at], higher_is_better=False, relative=True)


hybrid = "local RoPE + global NoPE"
assert growth[hybrid] < 1.05 and growth["all RoPE"] > 1.2 and growth["NoPE 1 in 4"] > 1.2
assert all(clearly_below(hybrid, name, at) for name in LAYERS if name != hybrid for at in (2, 3))
assert all(clearly_below(hybrid, "all NoPE", at) for at in range(4))
assert not clearly_below("NoPE 1 in 4", "all RoPE", 3) and not clearly_below("all RoPE", "NoPE 1 in 4", 3)
assert all(clearly_below(name, "all NoPE", 0) for name in LAYERS if name != "all NoPE") and growth["all NoPE"] < 1.05
assert clearly_below("p-RoPE 0.25", "all RoPE", 2) and not clearly_below("p-RoPE 0.5", "all RoPE", 2)
print({name: round(float(g), 3) for name, g in growth.items()}, "(ppl(8L) / ppl(L))")

# %% [markdown]
# **What the numbers say.**
# - **Local RoPE + global NoPE** stays flat (13.09 at $L$, 12.83 at $8L$) and is the best setting
#   at $4L$ and $8L$, by the rule; it is also ahead of all-NoPE at every length. Its RoPE layers never
#   see a distance beyond their 16-key window, whatever the sequence length, so they never meet an
#   unseen angle; the global NoPE layer has no angles to meet.
# - **One NoPE layer in four does not stop RoPE's rise** at this scale: 17.04 at $8L$, within the seed
#   spread of all-RoPE's 16.93 (their ratios $8L$/$L$: 1.273 and 1.280). Three RoPE layers that see
#   unseen distances are enough to fail.
# - **All NoPE** is flat (× 1.035) but worst at $L$ (14.77); **all RoPE** is ahead of it at $L$
#   (13.23) and rises most.
# - **p-RoPE 0.25** rises less than RoPE (14.72 against 15.85 at $4L$, ahead by the rule; × 1.108
#   from $L$ to $8L$), **p-RoPE 0.5** not measurably (15.93 at $4L$).
#
# Where this sits against the published results: Cohere's report on this design (Yang et al. 2025,
# "Rope to Nope and Back Again") finds the local-RoPE/global-NoPE hybrid better at long context than
# RoPE everywhere, as here. SmolLM3's and Llama 4's NoPE layers come with other long-context measures
# (rescaled RoPE, long-context training, chunked attention); here, alone, one NoPE layer in four does
# not extrapolate.
#
# ### Which rotary pairs does the trained model use?
#
# A RoPE score is a sum over pairs, $q_m \cdot k_n = \sum_i q_m^{(i)} \cdot k_n^{(i)}$. For the
# all-RoPE models we measure each pair's mean $|q_m^{(i)} \cdot k_n^{(i)}|$ over the causal
# query-key pairs of the evaluation windows (`pair_usage`, on the rotated queries and keys that
# `queries_and_keys` records), and the cost at $L$ of switching each pair off (`WithoutPairs`: that
# pair of $q$ and $k$ set to 0 after the rotation, every other weight as trained).

# %% tags=["nbval-check-output"]
rope_models = [lms["all RoPE", s] for s in SEEDS]
short = (inputs[:, :L], targets[:, :L])


def usage_share(model) -> np.ndarray:
    """Each layer's pair usage as shares of that layer's total: (layers, pairs), averaged over heads."""
    usage = torch.stack([pair_usage(q, k).mean(0) for q, k in model.queries_and_keys(short[0])]).double()
    return (usage / usage.sum(-1, keepdim=True)).numpy()


def ppl_at_L(model) -> float:
    return perplexity_at(per_position_loss(model, *short), [L])[0]


shares = np.stack([usage_share(model) for model in rope_models])  # (seeds, layers, pairs)
switched_off = np.array([[ppl_at_L(with_scheme(model, WithoutPairs(model.blocks[0].attn.scheme, [i]))) - ppl_at_L(model)
                          for i in range(8)] for model in rope_models])  # (seeds, pairs)
wavelength = (2 * math.pi / rope_inv_freq(16).double()).numpy()

fig, axes = plt.subplots(1, 2, figsize=(7.5, 3.4))
for layer in range(4):
    axes[0].plot(range(8), shares[:, layer].mean(0), color=COLORS[layer], linestyle=LINESTYLES[layer],
                 marker=MARKERS[layer], label=f"layer {layer}")
axes[0].set(title="Share of the scores per pair", xlabel="pair i (wavelength grows with i)", ylabel="share of mean |part|")
axes[0].legend(fontsize=9)
for seed in range(3):
    axes[1].plot(range(8), switched_off[seed], color=COLORS[seed], marker=MARKERS[seed], linestyle="none",
                 label=f"seed {seed}")
axes[1].axhline(0, color="grey", linewidth=1)
axes[1].set(title="Cost of switching one pair off", xlabel="pair i", ylabel="perplexity increase at L")
axes[1].legend(fontsize=9)
plt.show()
print("wavelength of pairs 0-7 (characters):", np.round(wavelength, 1).tolist())
print("share of the scores carried by pairs 0-2, per layer (mean of 3 seeds):", np.round(shares[:, :, :3].sum(-1).mean(0), 2).tolist())
print("perplexity increase at L when a pair is switched off (mean of 3 seeds):", np.round(switched_off.mean(0), 2).tolist())
fast, slow = switched_off[:, :3], switched_off[:, 3:]
assert (shares[:, :, :3].sum(-1) > 3 / 8).all()  # the 3 fastest pairs carry more than their count's share, in every layer
assert fast.min(axis=1).min() > slow.max(axis=1).max() - 0.05 and (fast.mean(1) > 4 * slow.mean(1)).all()

# %% [markdown]
# **What the numbers say.** In this tiny character model the **fast** pairs do the work: pairs 0-2
# (wavelengths 6.3 to 62.8 characters) carry 0.51 to 0.7 of the scores, depending on the layer
# (their count's share would be 3/8), and switching one of them off raises the perplexity at $L$ by
# 0.35 to 0.96 on average, against at most 0.09 for any of the five slow pairs, which the model hardly
# uses (their angles barely change within $L$). That departs from Barbero et al.
# (2024): in Gemma 7B they find the *lowest* frequencies carrying the largest parts, used as
# position-free "semantic" channels, and the high frequencies kept for a few positional heads.
# A 100-step character model lives on local patterns, and has no use yet for semantic channels.
#
# It is also why p-RoPE behaves as it does above: turning off the rotation of the slow half
# (p-RoPE 0.5) takes away angles the model did not use, and changes nothing measurable; keeping only
# the two fastest pairs (p-RoPE 0.25), whose wavelengths fit inside $L$, means that every angle the
# model meets past $L$ is one it has seen, and the rise past $L$ shrinks.
#
# **Takeaway:**
# - Local-window RoPE beside a global NoPE layer extrapolates here; one NoPE layer in four alone does not.
# - A tiny character LM uses its fast pairs; truncating slow ones (p-RoPE) costs nothing, and
#   truncating to pairs that turn within $L$ reduces the rise past $L$.
#
# ## 5 · M-RoPE on a tiny video task
#
# **Question:** does giving each axis its own coordinate help on a task where the answer depends on
# where *and* when, and does the order of the pairs matter?
#
# `WhenAndWhere`: a video of 4 frames of 3 × 3 patches, one token per patch, flattened frame after
# frame. Two patches are marked, A and B (in different frames and columns); the label says whether
# B comes later than A, and whether it is to its right: 4 classes. Every video is the same bag of
# tokens, so only positions tell the label. Four ways of placing the tokens, with the same 12
# rotary pairs per head and the same frequencies (base 100, as 2-D RoPE for images in notebook 04,
# since the axes are short):
#
# - **1-D RoPE**: the flattened index $n$, as if the video were text;
# - **2-D RoPE per frame**: $(h, w)$ of the patch within its frame, the time pairs left unrotated
#   ($t = 0$ for every frame);
# - **M-RoPE, sectioned** (Qwen2-VL) and **M-RoPE, interleaved** (Qwen3-VL): $(t, h, w)$, 4 pairs each.
#
# Before training: the best accuracy any model could reach from the offset of B relative to A alone,
# as each arm sees it (`WhenAndWhere.ceiling`, exact):

# %% tags=["nbval-check-output"]
task = WhenAndWhere(frames=4, height=3, width=3)
ceilings = {
    "1-D RoPE": task.ceiling(lambda o: o @ torch.tensor([task.height * task.width, task.width, 1])),
    "2-D RoPE per frame": task.ceiling(lambda o: o[:, 1:]),
    "M-RoPE (t, h, w)": task.ceiling(lambda o: o),
}
print({name: round(c, 3) for name, c in ceilings.items()})
assert ceilings["2-D RoPE per frame"] == 0.5 and ceilings["M-RoPE (t, h, w)"] == 1.0 and 0.5 < ceilings["1-D RoPE"] < 1

# %% [markdown]
# Per frame, "earlier" and "later" look alike: a coin toss, 0.5. The flattened index mixes the axes:
# $\Delta n = 9\,\Delta t + 3\,\Delta h + \Delta w$, and, for instance, B one frame later, one row
# down and two columns left of A ($\Delta n = 9 + 3 - 2 = 10$) gives the same $\Delta n$ as B one frame
# later and one column right ($9 + 1$), with the other label. So $\Delta n$ alone cannot always tell.
# Only $(\Delta t, \Delta h, \Delta w)$ determines the label.
#
# Each arm trains for 150 steps (batch 32, 2 layers, width 48, 2 heads of 24), 3 seeds, and is
# tested on fresh videos of the trained size, and of a larger one, 5 × 5 patches per frame (with
# the coordinate table of that size: a new resolution, as vision-language models meet every day).

# %%
BASE, SECTION = 100.0, [4, 4, 4]
LARGER = WhenAndWhere(frames=4, height=5, width=5)


def arm_scheme(arm: str, video: WhenAndWhere):
    """The position scheme of one arm for videos of ``video``'s size."""
    coords = mrope_positions(video.frames, video.height, video.width)  # (t, h, w) per token
    if arm == "1-D RoPE":
        return RotaryPE(24, base=BASE)
    if arm == "2-D RoPE per frame":
        coords = coords * torch.tensor([0, 1, 1])
    return MRoPE(24, coords, SECTION, base=BASE, interleaved=arm != "M-RoPE, sectioned")


ARMS = ["1-D RoPE", "2-D RoPE per frame", "M-RoPE, sectioned", "M-RoPE, interleaved"]


def train_video(setup: tuple[str, int]) -> tuple[float, float]:
    """Train one arm with one seed; return its accuracy on 2048 fresh videos of the trained size and of LARGER."""
    arm, seed = setup
    data = seed_everything(seed)
    model = TinyTransformer(task.VOCAB_SIZE, task.n_classes, d_model=48, n_heads=2, n_layers=2,
                            scheme=arm_scheme(arm, task))
    train(model, lambda _: task.sample(32, data), 150, lr=3e-3, desc=None)
    test = torch.Generator().manual_seed(100)
    larger = with_scheme(model, arm_scheme(arm, LARGER))
    return accuracy(model, *task.sample(2048, test)), accuracy(larger, *LARGER.sample(2048, test))


video_setups = list(itertools.product(ARMS, SEEDS))
video_acc = dict(zip(video_setups, run_each(train_video, video_setups, desc="arm x seed")))
acc = {arm: np.array([video_acc[arm, s] for s in SEEDS]) for arm in ARMS}  # (seeds, 2): trained size, 5 x 5
display(pd.DataFrame({arm: [mean_std(v[:, 0]), mean_std(v[:, 1])] for arm, v in acc.items()},
                     index=["3 x 3 (trained size)", "5 x 5 (new resolution)"]).T.rename_axis("accuracy (mean ± std, 3 seeds)"))

# %% tags=["nbval-check-output"]
fig, ax = plt.subplots(figsize=(7.5, 3.8))
for k, size in enumerate(["3 x 3 (trained size)", "5 x 5 (new resolution)"]):  # one colour and marker per size
    for row, arm in enumerate(ARMS):
        ax.scatter(acc[arm][:, k], [row + 0.15 * (2 * k - 1)] * len(SEEDS), color=COLORS[3 * k], marker=MARKERS[k],
                   s=45, label=size if row == 0 else None, zorder=3)
for level, text in [(0.25, "chance"), (0.5, "no time")]:
    ax.axvline(level, color="grey", linewidth=1, linestyle=LINESTYLES[1])
    ax.text(level + 0.005, -0.3, text, fontsize=9, color="grey")
ax.set_yticks(range(len(ARMS)), ARMS)
ax.invert_yaxis()
ax.set(title="When and where: test accuracy of each seed (4 classes)", xlabel="test accuracy", xlim=(0.2, 1.02))
ax.legend(title="test videos", loc="center right", fontsize=9)
plt.show()

# %% tags=["nbval-check-output"]
interleaved = acc["M-RoPE, interleaved"]
for other in ARMS[:-1]:
    for j in range(2):
        assert clearly_ahead(interleaved[:, j], acc[other][:, j]), (other, j)
assert acc["2-D RoPE per frame"].max() <= 0.5 + 0.05  # at its ceiling, no higher
assert acc["M-RoPE, sectioned"].max() <= 0.5 + 0.05  # sees (t, h, w), learns no more than per-frame positions
assert acc["1-D RoPE"][:, 0].max() < ceilings["1-D RoPE"]  # below what Δn alone allows ...
assert clearly_ahead(acc["1-D RoPE"][:, 0], acc["1-D RoPE"][:, 1])  # ... and lower still at the new resolution
print("M-RoPE, interleaved: lowest accuracy of any seed:", round(float(interleaved.min()), 3))

# %% [markdown]
# **What the numbers say.**
# - **Interleaved M-RoPE** solves the task, at the trained size (1.000) and at the new resolution
#   (0.985; no seed below 0.954), and is ahead of every other arm at both by the series' rule. Its coordinates are the same kind of thing
#   at any frame size, so the new resolution changes nothing it relies on.
# - **2-D RoPE per frame** stays at its ceiling of 0.5: it learns left and right, and cannot know
#   which frame comes first.
# - **1-D RoPE** learns less than even $\Delta n$ allows at the trained size (0.537 against a ceiling
#   of 0.679), and loses more at 5 × 5 (0.322), where every $\Delta n$ means another offset than in
#   training.
# - **Sectioned M-RoPE** sees $(t, h, w)$ and still stays at 0.5: its width pairs are the 4 slowest
#   of 12, the fastest of which turns 0.046 rad per column (printed below), so columns 0 to 2 look almost
#   alike; this is what Qwen3-VL's interleaved order fixes ("full-frequency allocation
#   over time, width, and height", in the Qwen3-VL release). At production scale (64 pairs, base
#   $10^6$, grids of dozens of patches) the slow width pairs still turn by visible amounts; at this
#   scale they do not.

# %% tags=["nbval-check-output"]
theta = rope_inv_freq(24, BASE)
for order, interleaved_order in (("sectioned", False), ("interleaved", True)):
    axis = mrope_axes(12, SECTION, interleaved_order)
    print(f"{order:11s}: fastest pair per axis (t, h, w), rad per step:",
          [round(float(theta[axis == a].max()), 3) for a in range(3)])

# %% [markdown]
# **Takeaway:**
# - Give each axis its own coordinate: M-RoPE sees "when" and "where" apart, and keeps them apart at a
#   new resolution; 1-D positions mix them, per-frame positions lose time.
# - Which pairs each axis gets matters as much: the sectioned order leaves one axis only slow
#   frequencies.
#
# ## Summary
#
# - Today's models differ in the base, the rescaling (Llama 3 bands, LongRoPE per pair, YaRN), how
#   much of each head rotates (partial, p-RoPE, DeepSeek's decoupled slice), which coordinate each pair
#   reads (M-RoPE) and which layers rotate (NoPE layers, local-only RoPE). Read them from
#   `config.rope_parameters`; the 4.x field `rope_theta` is gone, and code that reads it falls back to
#   10,000 without a word.
# - Every one of those schemes is in `posenc_lib` and equal to the model's own code on tiny configs
#   (section 2: tables bit for bit, rotations and attention outputs to rounding).
# - A layout conversion is a per-head permutation of $W_q$, $W_k$; skipping it loads without error,
#   and hides on a freshly initialised model.
# - Trained at $L = 32$: local-window RoPE with a global NoPE layer stays flat to $8L$; one NoPE layer
#   in four does not. The tiny model uses its fast pairs; p-RoPE that keeps only pairs turning within
#   $L$ rises less.
# - On a tiny video task, interleaved M-RoPE solves "when and where", at a new resolution too; 1-D and
#   per-frame 2-D RoPE cannot express it, and sectioned M-RoPE gives width too slow a rotation here.

# %% [markdown]
# ### Open-ended experiment · How wide a window, how many NoPE layers?
#
# **Question.** Section 4's hybrid used a window of $L/2$ on three RoPE layers and one global NoPE
# layer. Does it stay flat with a window of $L$ (every distance the RoPE layers meet past $L$ is then
# still one they trained on)? With two global NoPE layers? With RoPE on the global layer too (Gemma 3's
# choice, with a larger base)?
#
# ```python
# LAYERS_MORE = {
#     "window L": lambda: [LayerSpec(rope(), window=L)] * 3 + [LayerSpec(NoPosition())],
#     "2 global NoPE": lambda: [LayerSpec(rope(), window=L // 2)] * 2 + [LayerSpec(NoPosition())] * 2,
#     "global RoPE, base 1e6": lambda: [LayerSpec(rope(), window=L // 2)] * 3 + [LayerSpec(rope(base=1e6))],
# }
# more = run_each(lambda s: train_char_lm(NoPosition(), corpus, L, STEPS, s[1], lr=LR, d_model=32, n_heads=2,
#                                         n_layers=4, layer_specs=LAYERS_MORE[s[0]]), list(itertools.product(LAYERS_MORE, SEEDS)))
# ```
#
# **What to look for.** Perplexity at $L$ and at $8L$ against section 4's hybrid, with 3 seeds and
# the series' rule; and where, inside a 256-character sequence, the global-RoPE variant starts to rise
# (06 §5's per-position loss).

# %% [markdown]
# ## Exercises
#
# ### Exercise 1 · Llama 3's frequency bands
#
# Write `llama3_frequencies(inv_freq, factor, low_freq_factor, high_freq_factor, original)`: given the
# plain frequencies (a 1-D tensor), return Llama 3.1's: wavelengths $2\pi/\theta$ below
# `original / high_freq_factor` kept, above `original / low_freq_factor` divided by `factor`, and in
# between the blend $(1 - s)\,\theta/\text{factor} + s\,\theta$ with
# $s = (\text{original}/\lambda - \text{low}) / (\text{high} - \text{low})$. Do not call `rope_frequencies`.

# %% tags=["exercise", "nbval-check-output"]
def llama3_frequencies(inv_freq: torch.Tensor, factor: float, low_freq_factor: float, high_freq_factor: float,
                       original: int) -> torch.Tensor:
    raise NotImplementedError  # your code here


check_exercise_1(llama3_frequencies)

# %% [markdown]
# ### Exercise 2 · Which coordinate does each pair read?
#
# Write `pair_axes(n_pairs, section, interleaved)`: a list of `n_pairs` ints, 0 (t), 1 (h) or 2 (w),
# saying which coordinate M-RoPE's pair $i$ reads, in the sectioned order (Qwen2-VL) or the
# interleaved one (Qwen3-VL: pair $i$ reads h when $i \bmod 3 = 1$ and $i < 3 s_h$, w when
# $i \bmod 3 = 2$ and $i < 3 s_w$, t otherwise). Do not call `mrope_axes`.

# %% tags=["exercise", "nbval-check-output"]
def pair_axes(n_pairs: int, section: list[int], interleaved: bool) -> list[int]:
    raise NotImplementedError  # your code here


check_exercise_2(pair_axes)

# %% [markdown]
# ### Exercise 3 · SmolLM3's NoPE layers
#
# SmolLM3's config gives `no_rope_layer_interval` $= k$ and derives one flag per layer,
# **1 = the layer uses RoPE**: every $k$-th layer (layers $k-1, 2k-1, \dots$) has none. Write
# `no_rope_layers(n_layers, interval)` returning that list of 0/1 flags. The checker compares with
# `transformers`' own `SmolLM3Config`.

# %% tags=["exercise", "nbval-check-output"]
def no_rope_layers(n_layers: int, interval: int) -> list[int]:
    raise NotImplementedError  # your code here


check_exercise_3(no_rope_layers)

# %% [markdown]
# ## Further reading
#
# - Meta, *[The Llama 3 Herd of Models](https://arxiv.org/abs/2407.21783)* (2024): Llama 3.1's
#   context extension; its frequency bands are `_compute_llama3_parameters` in Hugging Face's
#   [`modeling_rope_utils.py`](https://github.com/huggingface/transformers/blob/main/src/transformers/modeling_rope_utils.py).
# - Y. Ding et al.: *[LongRoPE: Extending LLM Context Window Beyond 2 Million Tokens](https://arxiv.org/abs/2402.13753)* (2024),
#   the per-pair factors of Phi-3.
# - Gemma Team: *[Gemma 3 Technical Report](https://arxiv.org/abs/2503.19786)* (2025): local and global
#   layers, two bases.
# - F. Barbero, A. Vitvitskyi, C. Perivolaropoulos, R. Pascanu, P. Veličković: *[Round and Round We Go!
#   What makes Rotary Positional Encodings useful?](https://arxiv.org/abs/2410.06205)* (ICLR 2025): which
#   frequencies Gemma uses, and p-RoPE.
# - P. Wang et al.: *[Qwen2-VL: Enhancing Vision-Language Model's Perception of the World at Any
#   Resolution](https://arxiv.org/abs/2409.12191)* (2024): M-RoPE; and the
#   [Qwen3-VL repository](https://github.com/QwenLM/Qwen3-VL): interleaved M-RoPE.
# - DeepSeek-AI: *[DeepSeek-V2: A Strong, Economical, and Efficient Mixture-of-Experts Language
#   Model](https://arxiv.org/abs/2405.04434)* (2024), where MLA and decoupled RoPE are introduced, and
#   *[DeepSeek-V3 Technical Report](https://arxiv.org/abs/2412.19437)* (2024).
# - Hugging Face: *[SmolLM3: smol, multilingual, long-context reasoner](https://huggingface.co/blog/smollm3)* (2025):
#   NoPE on every fourth layer.
# - B. Yang, B. Venkitesh, D. Talupuru, H. Lin, D. Cairuz, P. Blunsom, A. Locatelli: *[Rope to Nope and
#   Back Again: A New Hybrid Attention Strategy](https://arxiv.org/abs/2501.18795)* (2025): RoPE on local
#   layers, NoPE on global ones, as in Cohere's Command models.
# - This library: `posenc_lib/rotary/mrope.py`, `posenc_lib/rotary/scaling.py`,
#   `posenc_course/nb08_families.py`, `posenc_lib/analysis/pair_usage.py`.

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ## Solutions

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
def llama3_frequencies(inv_freq: torch.Tensor, factor: float, low_freq_factor: float, high_freq_factor: float,
                       original: int) -> torch.Tensor:
    wavelength = 2 * math.pi / inv_freq
    smooth = (original / wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor)
    blended = (1 - smooth) * inv_freq / factor + smooth * inv_freq
    out = torch.where(wavelength > original / low_freq_factor, inv_freq / factor, inv_freq)
    middle = (wavelength >= original / high_freq_factor) & (wavelength <= original / low_freq_factor)
    return torch.where(middle, blended, out)


check_exercise_1(llama3_frequencies)


# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
def pair_axes(n_pairs: int, section: list[int], interleaved: bool) -> list[int]:
    if not interleaved:
        return [axis for axis, count in enumerate(section) for _ in range(count)]
    return [1 if i % 3 == 1 and i < 3 * section[1] else 2 if i % 3 == 2 and i < 3 * section[2] else 0
            for i in range(n_pairs)]


check_exercise_2(pair_axes)


# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
def no_rope_layers(n_layers: int, interval: int) -> list[int]:
    return [int((layer + 1) % interval != 0) for layer in range(n_layers)]


check_exercise_3(no_rope_layers)

# %% [markdown]
# ## End of notebook 08
# <!-- Keep this cell last. "Run All" ends on the last cell, and JupyterLab unfolds the section that
#      holds it: outside "Solutions", this heading leaves the solutions folded. -->

# %% [markdown]
# # 08 · Position in today's models
#
# Today's models (Llama 3.1, Phi-3, Gemma 3, Qwen2.5-VL, DeepSeek-V3) use schemes that the papers
# of notebooks 00-07 do not show. **Why did each family depart from plain RoPE, and what exactly
# does each compute?**
#
# *RoPE in three lines* (notebook 03): split a head's query and key into pairs of dims; turn pair
# $i$ of the token at position $m$ by the angle $m\,\theta_i$, with $\theta_i = b^{-2i/d}$ (base
# $b$, head width $d$); a score then depends on the offset $m - n$ only. Early pairs turn fast,
# late pairs slowly. Three pressures explain most departures:
#
# - **Longer contexts.** Models train at 4K-8K tokens and serve 128K or more, where the slow pairs
#   reach angles never seen (notebook 06): the frequencies are rescaled (Llama 3.1's bands,
#   Phi-3's LongRoPE, DeepSeek's YaRN), the slow pairs stopped (Gemma 4's p-RoPE), or some layers
#   drop position (SmolLM3, Llama 4, Cohere2).
# - **Memory.** The key-value cache grows with the context: local-window layers keep only their
#   window; DeepSeek caches one compressed vector per token (and one small rotated key), which
#   plain RoPE does not survive.
# - **Images and video.** A video token has a frame, a row and a column (Qwen2-VL's M-RoPE).
#
# **What you will learn**
# - read a model's position scheme off its `transformers` config, without the silent fall-back
#   to base 10000;
# - write each of these schemes in a few lines, equal to the model's own code;
# - convert a checkpoint between the two RoPE layouts, and test it so a skipped permutation shows;
# - measure, beside floors, what a local window does past the training length and what
#   M-RoPE's pair order changes (and, optionally, which rotary pairs a small model uses).
#
# **Prerequisites:** [03 · RoPE](03_rope.ipynb) (layouts, partial rotary),
# [04 · Position in vision transformers](04_vision.ipynb) (2-D RoPE),
# [05 · Relative biases](05_relative_biases.ipynb) (ALiBi, NoPE),
# [06 · Length extrapolation](06_length_extrapolation.ipynb) (PI, YaRN) and
# [07 · Debugging and practice](07_debugging.ipynb) (layout bugs).
#
# **Two sessions** of 90 minutes: sections 1-2 with exercises 1 and 3, then sections 3-5 with
# exercise 2. The folded *deep dives* are optional.
#
# **Run time:** about 118 s on a laptop CPU (measured with `make execute`, one thread), most of it in
# 18 training runs of a tiny video classifier; the language models are notebook 06's, loaded.
# %%
import copy
import itertools
import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
import transformers

from posenc_course import floors
from posenc_course import nb06_extrapolation as nb06
from posenc_course import nb08_families as nb08
from posenc_course.data import WhenAndWhere, char_corpus, lm_eval_windows
from posenc_course.exercises.nb08 import (
    check_exercise_1, check_exercise_2, check_exercise_3)
from posenc_course.plotting import COLORS, LINESTYLES, MARKERS
from posenc_course.report import checked, compare, mean_std, rounding
from posenc_course.training import (
    accuracy, run_each, seed_everything, setup_notebook, train)
from posenc_lib.models import TinyTransformer, with_scheme
from posenc_lib.analysis import lm_metrics, pair_usage
from posenc_lib.interop import hf, hf_config
from posenc_lib.rotary import mrope, rope, temperature
from posenc_lib.rotary.decoupled import DecoupledRoPE
from posenc_lib.scheme import NoPosition

gen = setup_notebook(0)
transformers.logging.set_verbosity_error()  # tiny configs make it warn
print("transformers", transformers.__version__)

# %% [markdown]
# ## 1 · Position in the wild
#
# **Question:** which position scheme does each family use, and where does its configuration
# say so?
#
# `family_table` builds each family's config offline from its `transformers` class, with a
# published checkpoint's values, and reads every column from it.

# %% tags=["nbval-check-output"]
families = nb08.family_table().set_index("family")
families["taught in"] = families["notebook"].str[:2]  # the notebook's number
display(families[["scheme", "layers that rotate", "taught in"]])
display(families[["base", "scaling type", "factor", "rotary fraction",
                  "context length"]])  # max_position_embeddings

# %% [markdown]
# Most families since 2022 rotate; Bloom (2022, in the table), MPT (2023) and Baichuan2-13B
# (2023) add ALiBi's score bias instead.
# "context length" is the config's `max_position_embeddings`, not always the context a model
# card promises (Command R7B's card gives more than its config's 8,192).
#
# **The field that moved.** `transformers` 4.x kept the base in `config.rope_theta` and the
# long-context settings in `config.rope_scaling`; 5.x keeps both in `config.rope_parameters`.
# Code for 4.x, `getattr(config, "rope_theta", 10000.0)`, still runs on a 5.x config and returns
# its default:
# %% tags=["nbval-check-output"]
config_of = {family.name: family.config for family in nb08.FAMILIES}
llama31 = config_of["Llama 3.1"]()
print("config.rope_parameters:", llama31.rope_parameters)
old_way = nb08.legacy_rope_theta(llama31)  # getattr(config, "rope_theta", 1e4)
right_way = hf_config.rope_theta(llama31)
print(f"the 4.x habit reads base {old_way:,.0f}; rope_parameters says "
      f"{right_way:,.0f}")
assert old_way == 10000.0 and right_way == 500000.0
slowest = [2 * math.pi / rope.rope_inv_freq(128, b)[-1]
           for b in (old_way, right_way)]
print(f"slowest pair's wavelength: {slowest[0]:,.0f} tokens with the wrong "
      f"base, {slowest[1]:,.0f} with the right one")

# %% [markdown]
# No error, no warning: the slowest pair turns about 50 times too fast.
#
# **Which layers rotate.** SmolLM3 and Llama 4 carry a flag per layer, `no_rope_layers`, where
# **1 means the layer uses RoPE** (the name says the opposite): by default every fourth layer
# has none. Cohere2 rotates only its sliding-window layers. `rotating_layers` reads the flags
# (R: rotates, N: does not).

# %% tags=["nbval-check-output"]
for name in ("SmolLM3", "Llama 4", "Cohere2", "Gemma 3"):
    flags = hf_config.rotating_layers(config_of[name]())
    print(f"{name:8s} {nb08.layer_pattern(flags)}")

# %% [markdown]
# **Takeaway:**
# - Read a model's position scheme from `config.rope_parameters` (5.x), never from a default.
# - Today's models differ in base, rescaling, rotated fraction, which axis each pair reads and
#   which layers rotate; not every one rotates.

# %% [markdown]
# ## 2 · Each scheme: formula, a few lines, the model's own code
#
# **Question:** what does each scheme compute, and does ours compute exactly that?
#
# The picture: new over plain frequency $\theta_i = b^{-2i/d}$ of each pair $i$ (base $b$, head
# width $d$), for section 1's configs (`rotary_scheme(config, layer_type)`).

# %% tags=["nbval-check-output"]
hf_llama, hf_phi3, hf_gemma3, hf_gemma4 = (
    nb08.hf_modeling(m) for m in ("llama", "phi3", "gemma3", "gemma4"))
schemes = {(name, kind): hf_config.rotary_scheme(config_of[name](), kind)
           for name, kind in [("Llama 3.1", None), ("Phi-3", None),
                              ("Gemma 3", "sliding_attention"),
                              ("Gemma 3", "full_attention"),
                              ("Gemma 4", "sliding_attention"),
                              ("Gemma 4", "full_attention")]}
llama_rope, phi3 = schemes["Llama 3.1", None], schemes["Phi-3", None]
p_rope = schemes["Gemma 4", "full_attention"]
plain = {128: rope.rope_inv_freq(128, 500000.0),
         96: rope.rope_inv_freq(96, 1e4),
         512: rope.rope_inv_freq(512, 1e6)}
curves = {"Llama 3.1 (factor 8, bands)": llama_rope.inv_freq / plain[128],
          "Phi-3, up to 4096 (short factors)": phi3.inv_freq / plain[96],
          "Phi-3, beyond 4096 (long factors)": phi3.inv_freq_long / plain[96],
          "Gemma 4 global (p-RoPE 0.25)": p_rope.inv_freq / plain[512]}
fig, ax = plt.subplots(figsize=(7.5, 3.8))
for k, (label, ratio) in enumerate(curves.items()):
    fraction = np.arange(ratio.numel()) / ratio.numel()  # i / pairs per head
    ax.plot(fraction, ratio.clamp_min(1e-3).numpy(), color=COLORS[k],
            linestyle=LINESTYLES[k], marker=MARKERS[k],
            markevery=max(1, ratio.numel() // 8), label=label)
ax.set_yscale("log")
ax.set(title="Rescaled / plain frequency of each pair (0 drawn at the bottom)",
       xlabel="pair index / pairs per head (fast pairs left, slow right)",
       ylabel="new / plain frequency (log)", ylim=(5e-4, 2))
ax.legend(fontsize=9, loc="lower left")
plt.show()

# %% [markdown]
# Three answers to "which pairs should slow down?": Llama 3.1 divides only the slow ones by 8;
# LongRoPE divides each pair by its own factor; p-RoPE stops the slow pairs.
#
# ### Llama 3.1: three bands
#
# With the wavelength $\lambda_i = 2\pi/\theta_i$, the original context $L_0 = 8192$, the factor
# $s = 8$, `low_freq_factor` $\alpha = 1$ and `high_freq_factor` $\beta = 4$:
#
# $$\theta_i' = (1-\gamma_i)\,\frac{\theta_i}{s} + \gamma_i\,\theta_i,\qquad
#   \gamma_i = \operatorname{clip}\!\Big(\frac{L_0/\lambda_i - \alpha}{\beta - \alpha}, 0, 1\Big):$$
#
# pairs with $\lambda_i < L_0/\beta$ keep their frequency, pairs with $\lambda_i > L_0/\alpha$ are
# divided by $s$, and the band between is blended. (With $\alpha = \beta$, as in Llama 4's
# config, there is no blend: one step at $L_0/\alpha$.)
# %% tags=["nbval-check-output"]
theta = plain[128]
wavelength = 2 * math.pi / theta
s, alpha, beta, L0 = 8.0, 1.0, 4.0, 8192
gamma = ((L0 / wavelength - alpha) / (beta - alpha)).clamp(0, 1)
llama3_freq = (1 - gamma) * theta / s + gamma * theta
torch.testing.assert_close(llama3_freq, llama_rope.inv_freq)
print(f"the bands give Llama 3.1's inv_freq: kept below a wavelength of "
      f"{L0 / beta:,.0f} tokens, divided by {s:g} above {L0 / alpha:,.0f}")

# %% [markdown]
# ### LongRoPE (Phi-3): a factor per pair, chosen per sequence
#
# Pair $i$ is divided by its own factor $f_i$, found by search:
# $\theta_i' = \theta_i / f_i$, with `short_factor` while the sequence stays within
# $L_0 = 4096$ tokens and `long_factor` once it goes beyond; cos and sin are multiplied by
# $a = \sqrt{1 + \ln s / \ln L_0}$, $s = 131072/4096$.

# %% tags=["nbval-check-output"]
phi3_params = config_of["Phi-3"]().rope_parameters
short_f = torch.tensor(phi3_params["short_factor"])
long_f = torch.tensor(phi3_params["long_factor"])
a = math.sqrt(1 + math.log(131072 / 4096) / math.log(4096))
torch.testing.assert_close(plain[96] / short_f, phi3.inv_freq)
torch.testing.assert_close(plain[96] / long_f, phi3.inv_freq_long)
assert math.isclose(a, phi3.attention_factor)
print(f"short factors {short_f.min():.2f} to {short_f.max():.2f}, "
      f"long factors {long_f.min():.2f} to {long_f.max():.2f}; a = {a:.4f}")

# %% [markdown]
# The short factors already slow the slow pairs to about a third within 4096 tokens. The switch is
# **per sequence**: Hugging Face's Phi-3 takes the long factors once the sequence's largest
# position passes 4095, for every position, the early ones too. A key-value cache filled with the
# short factors is stale once a generation crosses 4096 tokens (`transformers` drops it there and
# recomputes):
# %% tags=["nbval-check-output"]
phi3_module = hf_phi3.Phi3RotaryEmbedding(config_of["Phi-3"]())
cos_short = nb08.hf_rotary(phi3_module, torch.tensor([[100, 4095]]))[0]
cos_long = nb08.hf_rotary(phi3_module, torch.tensor([[100, 4096]]))[0]
stale = (cos_short[0, 0] - cos_long[0, 0]).abs().max().item()
print(f"the cos table (cos times a) at position 100 changes by up to "
      f"{stale:.2f} when the sequence reaches position 4096")
assert stale > 0.1

# %% [markdown]
# ### p-RoPE (Gemma 4) and a base per layer type (Gemma 3)
#
# Gemma 4's global layers use "proportional" RoPE, Barbero et al.'s **p-RoPE**: the frequencies
# of the full head, of which only the fastest fraction $p$ turn, $\theta_i' = \theta_i$ for
# $i < p\,d/2$ and $0$ beyond ($p$ = `partial_rotary_factor` 0.25). It is not GPT-NeoX's
# partial rotary (notebook 03), which recomputes the frequencies over the rotated width. Gemma 3
# gives its local layers base 10,000 and its global ones the frequencies of base 1,000,000
# divided by 8 (linear scaling): $\theta_i' = \theta_i/8$.

# %% tags=["nbval-check-output"]
d, p = p_rope.head_dim, 0.25
keep = torch.arange(d // 2) < p * d / 2
torch.testing.assert_close(torch.where(keep, plain[512], 0.0), p_rope.inv_freq)
gemma3_global = schemes["Gemma 3", "full_attention"]
theta_g3 = rope.rope_inv_freq(gemma3_global.head_dim, 1e6)
torch.testing.assert_close(theta_g3 / 8, gemma3_global.inv_freq)
print(f"Gemma 4 global layers: {int(keep.sum())} of {d // 2} pairs turn")

# %% [markdown]
# Against the models' own rotary modules, within and far beyond the original context (a bound
# of 0 is bit for bit):

# %%
agree = nb08.Agreement()
module_of = {"Llama 3.1": hf_llama.LlamaRotaryEmbedding,
             "Phi-3": hf_phi3.Phi3RotaryEmbedding,
             "Gemma 3": hf_gemma3.Gemma3RotaryEmbedding,
             "Gemma 4": hf_gemma4.Gemma4TextRotaryEmbedding}
near = torch.arange(0, 4096, 8)[None]
far = torch.randint(4096, 131072, (1, 256),
                    generator=torch.Generator().manual_seed(2))
for (name, kind), ours in schemes.items():
    module = module_of[name](config_of[name]())
    for at in (near, far):
        theirs = nb08.hf_rotary(module, at, *[kind] * bool(kind))
        label = f"{name}{f' {kind}' if kind else ''}: cos, sin"
        agree(label, torch.cat(ours.cos_sin(at)), torch.cat(theirs), tol=0.0)

# %% [markdown]
# Then a whole layer: `attention_from_hf` copies a tiny Llama attention layer with Llama 3
# scaling ($L_0 = 32$) and grouped-query attention (2 key/value heads, 4 query heads) into
# the library's layer, which gives the same output:

# %%
x = torch.randn(2, 40, 64, generator=torch.Generator().manual_seed(1))
positions = torch.arange(40)[None]
llama3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
          "high_freq_factor": 4.0, "original_max_position_embeddings": 32,
          "rope_theta": 500000.0}
# grouped-query attention: 2 key/value heads for 4 queries (Llama 3: 8 for 32)
config = transformers.LlamaConfig(**{**nb08.TINY, "num_key_value_heads": 2},
                                  max_position_embeddings=256,
                                  rope_parameters=dict(llama3))
config._attn_implementation = "eager"
torch.manual_seed(3)
module = hf_llama.LlamaAttention(config, layer_idx=0).eval()
with torch.no_grad():
    ours = hf.attention_from_hf(module, hf_config.rotary_scheme(config))
    assert (ours.n_heads, ours.n_kv_heads) == (4, 2)
    theirs = module(x, hf_llama.LlamaRotaryEmbedding(config)(x, positions),
                    hf.additive_causal_mask(40))[0]
    agree("Llama 3 scaling: attention output", ours(x, causal=True), theirs)

# %% [markdown]
# ### M-RoPE (Qwen2-VL, Qwen2.5-VL, Qwen3-VL): three coordinates, one per pair
#
# M-RoPE turns pair $i$ by **one** coordinate, the angle $p_{a(i)}\,\theta_i$ with axis
# $a(i) \in \{t, h, w\}$ (frame, row, column). `mrope_section` $(s_t, s_h, s_w)$ says how many
# pairs each axis gets, in one of two orders:
#
# - **sectioned** (Qwen2-VL, Qwen2.5-VL; 16, 24, 24 of 64 pairs): $a(i) = t$ for $i < s_t$,
#   $h$ for the next $s_h$, $w$ for the last $s_w$;
# - **interleaved** (Qwen3-VL; 24, 20, 20): $a(i) = h$ if $i \bmod 3 = 1$ and $i < 3s_h$, $w$ if
#   $i \bmod 3 = 2$ and $i < 3s_w$, $t$ otherwise.
#
# Since $\theta_i$ falls with $i$, the order decides each axis's frequencies:

# %% tags=["nbval-check-output"]
def axes_of(n_pairs: int, section: list[int], interleaved: bool):
    """M-RoPE's a(i): 0 (t), 1 (h) or 2 (w) for each pair i."""
    if not interleaved:
        return torch.repeat_interleave(torch.arange(3), torch.tensor(section))
    i = torch.arange(n_pairs)
    is_h = (i % 3 == 1) & (i < 3 * section[1])
    is_w = (i % 3 == 2) & (i < 3 * section[2])
    return is_h.long() + 2 * is_w.long()


ORDERS = [("sectioned\n(Qwen2-VL)", [16, 24, 24], False),
          ("interleaved\n(Qwen3-VL)", [24, 20, 20], True)]
fig, ax = plt.subplots(figsize=(7.5, 2.6))
for row, (label, section, interleaved) in enumerate(ORDERS):
    pair_axis = axes_of(64, section, interleaved)
    assert torch.equal(pair_axis, mrope.mrope_axes(64, section, interleaved))
    for axis, (name, hatch) in enumerate(
            [("t (frame)", ""), ("h (row)", "///"), ("w (column)", "...")]):
        pairs = torch.nonzero(pair_axis == axis).flatten().numpy()
        ax.bar(pairs, 0.8, bottom=row, width=1.0, color=COLORS[axis],
               hatch=hatch, edgecolor="white", label=name if row == 0 else None)
ax.set(title="Which coordinate each rotary pair of a 128-wide head reads",
       xlabel="pair index i (frequency falls with i)", yticks=[0.4, 1.4],
       yticklabels=[label for label, *_ in ORDERS], xlim=(-0.5, 63.5))
ax.legend(ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.35))
plt.show()
theta_vl = rope.rope_inv_freq(128, 1e6)
for label, section, interleaved in ORDERS:
    fastest_w = theta_vl[axes_of(64, section, interleaved) == 2].max()
    print(f"{label.split()[0]}: width's fastest pair turns "
          f"{fastest_w:.3g} rad per column")

# %% [markdown]
# The positions come from the model's `get_rope_index`, and the rules differ by model and
# version. In `transformers` 5.x, Qwen2-VL: text counts 0, 1, 2, ...; a video starting at index
# $s$ gives token (frame $f$, row $r$, column $c$) the coordinates $(s+f, s+r, s+c)$; text after
# it resumes at $s + \max(H, W)$. On text, $t = h = w$: M-RoPE is plain RoPE. The angles in a
# few lines, against Qwen2-VL's and Qwen3-VL's modules:

# %% tags=["nbval-check-output"]
coords = mrope.mrope_positions(frames=3, height=2, width=4, n_text_before=3,
                               n_text_after=2)  # (29, 3): t, h, w per token
print("(t, h, w) of tokens 0-6:", coords[:7].tolist())
print("(t, h, w) of the last 3:", coords[-3:].tolist())
qwen2_vl, qwen3_vl = (nb08.hf_modeling(m) for m in ("qwen2_vl", "qwen3_vl"))
theta16 = rope.rope_inv_freq(16, 1e6)
for name, config_class, module_class, section, interleaved in [
        ("Qwen2-VL", transformers.Qwen2VLTextConfig,
         qwen2_vl.Qwen2VLRotaryEmbedding, [2, 3, 3], False),
        ("Qwen3-VL", transformers.Qwen3VLTextConfig,
         qwen3_vl.Qwen3VLTextRotaryEmbedding, [4, 2, 2], True)]:
    angle = coords[:, axes_of(8, section, interleaved)] * theta16  # (29, 8)
    config = config_class(**nb08.TINY, head_dim=16, rope_parameters={
        "rope_type": "default", "rope_theta": 1e6, "mrope_section": section})
    theirs = nb08.hf_rotary(module_class(config), coords.T[:, None, :])
    ours = torch.cat((angle.cos(), angle.sin()))[None]
    agree(f"{name} M-RoPE: cos, sin", ours, torch.cat(theirs, 1), tol=1e-6)

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
for section, interleaved in (([2, 3, 3], False), ([4, 2, 2], True)):
    ours = mrope.MRoPE(16, coords, section, base=1e6,
                       mrope_interleaved=interleaved)
    inline = coords[:, axes_of(8, section, interleaved)] * theta16
    torch.testing.assert_close(torch.cat(ours.cos_sin(torch.arange(29)[None])),
                               torch.stack((inline.cos(), inline.sin())))
    text = torch.arange(29)  # a text token: t = h = w = its index
    for a, b in zip(mrope.mrope_cos_sin(text.expand(3, -1), ours.inv_freq,
                                        section, interleaved),
                    rope.rope_cos_sin(text, ours.inv_freq)):
        assert torch.equal(a, b)
checked("the library's MRoPE gives the inline angles in both orders; on text "
        "(t = h = w) M-RoPE equals 1-D RoPE bit for bit")

# %% [markdown] jp-MarkdownHeadingCollapsed=true tags=["deep-dive"]
# ### Deep dive (optional) · Llama 4's temperature, DeepSeek's decoupled slice, Cohere2
#
# **NoPE layers and Llama 4's attention temperature.** Llama 4's global layers (one in four)
# have no position encoding, and their attention spreads thinner as the context grows, so their
# queries are scaled by a temperature growing with the position $m$:
#
# $$q_m' = \tau(m)\,q_m,\qquad \tau(m) = 1 + \sigma \ln\!\big(1 + \lfloor (m+1)/F \rfloor\big),$$
#
# with `attn_scale` $\sigma = 0.1$ and `floor_scale` $F = 8192$.

# %% tags=["deep-dive", "nbval-check-output"]
m = torch.tensor([0, 8190, 8191, 65535, 1_048_575])
tau = 1 + 0.1 * torch.log1p(torch.floor((m + 1) / 8192))
torch.testing.assert_close(tau, temperature.query_temperature(m))
print("Llama 4's temperature at positions", m.tolist(), ":",
      [round(float(t), 3) for t in tau])

# %% [markdown] tags=["deep-dive"]
# $\tau$ is 1 up to position 8190 and 1.486 at a million tokens. The check: a whole Llama 4
# NoPE attention layer, with $F = 4$ so that $\tau$ changes within 40 tokens:

# %% tags=["deep-dive", "nbval-check-output"]
config = transformers.Llama4TextConfig(
    **nb08.TINY, head_dim=16, intermediate_size_mlp=64, use_qk_norm=False,
    attention_chunk_size=None, no_rope_layers=[0, 1], floor_scale=4,
    attn_scale=0.1)
config._attn_implementation = "eager"
torch.manual_seed(5)
module = nb08.hf_modeling("llama4").Llama4TextAttention(config, layer_idx=0)
module = module.eval()
assert not module.use_rope and module.attn_temperature_tuning
with torch.no_grad():
    theirs = module(x, None, hf.additive_causal_mask(40))[0]
    tempered = temperature.QueryTemperature(floor_scale=4, attn_scale=0.1)
    agree("Llama 4 NoPE layer + temperature: attention output",
          hf.attention_from_hf(module, tempered)(x, causal=True), theirs)
    plain_out = hf.attention_from_hf(module, NoPosition())(x, causal=True)
    wrong = (plain_out - theirs).abs().max().item()
print(f"without the temperature the output differs by up to {wrong:.3f}")
assert wrong > 0.01

# %% [markdown] tags=["deep-dive"]
# **DeepSeek-V3: decoupled RoPE beside compressed keys.** DeepSeek's multi-head latent attention
# (MLA) caches one compressed vector $c_n = W^{DKV} x_n$ per token; head $h$'s key is
# $W^{UK}_h c_n$, never decompressed: the up-projection moves to the
# query side, $q^\top W^{UK}_h c_n = (W^{UK\top}_h q)^\top c_n$. A RoPE rotation between them,
# $q^\top R_{n-m} W^{UK}_h c_n$, depends on the offset, and $W^{UK}_h$ could no longer be absorbed.
# So position gets a **separate slice**: a rotated query part $q^R_{m,h}$ per head and one rotated
# key $k^R_n$ per token shared by the heads (`qk_rope_head_dim` 64), cached beside $c_n$:
#
# $$s_{mn}^h = \big(W^{UK\top}_h q^C_{m,h}\big)^{\!\top} c_n
#   + \mathrm{RoPE}_m(q^R_{m,h})^\top\,\mathrm{RoPE}_n(k^R_n).$$
#
# DeepSeek-V3 rotates that slice with YaRN ×40, in the interleaved layout (Hugging Face's code
# permutes it to halves). Plain YaRN scales cos and sin by its gain $\mu$, so the rotated part of
# a score grows by $\mu^2$; DeepSeek leaves cos and sin unscaled and puts $\mu^2$ in the softmax
# scale, $\mu^2/\sqrt{d}$ with $\mu = 0.1 \ln 40 + 1$, so it covers the unrotated part too. On a
# tiny config, slices of 8 and 8:
# %% tags=["deep-dive", "nbval-check-output"]
yarn = {"rope_type": "yarn", "factor": 40.0, "beta_fast": 32, "beta_slow": 1,
        "original_max_position_embeddings": 4096, "mscale": 1.0,
        "mscale_all_dim": 1.0}
q, k = torch.randn(2, 2, 4, 40, 16,
                   generator=torch.Generator().manual_seed(7)).unbind(0)
at = torch.randint(0, 20000, (2, 40),
                   generator=torch.Generator().manual_seed(6))
slice_rope = rope.RotaryPE(8, base=1e4, layout="interleaved", scaling=yarn)
q_rot, k_rot = slice_rope.rotate_qk(q[..., 8:], k[..., 8:], at)
our_q = torch.cat((q[..., :8], q_rot), -1)  # the first 8 dims are not rotated
our_k = torch.cat((k[..., :8], k_rot), -1)
mu = 0.1 * math.log(40) + 1
print(f"YaRN gain mu = {mu:.3f}; in the softmax scale mu^2 = {mu ** 2:.3f}")

# %% tags=["deep-dive", "nbval-check-output"]
config = transformers.DeepseekV3Config(
    **nb08.TINY, qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=16,
    kv_lora_rank=16, q_lora_rank=24, rope_interleave=True,
    rope_parameters={**yarn, "rope_theta": 10000.0}, n_routed_experts=4,
    num_experts_per_tok=2, n_group=1, topk_group=1)
deepseek = nb08.hf_modeling("deepseek_v3")
cos, sin = deepseek.DeepseekV3RotaryEmbedding(config)(torch.zeros(1), at)
their_q, their_k = deepseek.apply_rotary_pos_emb_interleave(
    q[..., 8:], k[..., 8:], cos, sin)
evens_then_odds = torch.tensor([0, 2, 4, 6, 1, 3, 5, 7])
agree("DeepSeek-V3: rotated slice (dims permuted)",
      q_rot[..., evens_then_odds], their_q, 1e-6)
agree("DeepSeek-V3: scores", our_q @ our_k.transpose(-1, -2),
      torch.cat((q[..., :8], their_q), -1)
      @ torch.cat((k[..., :8], their_k), -1).transpose(-1, -2), 1e-4)
gain = deepseek.DeepseekV3Attention(config, layer_idx=0).scaling * 16 ** 0.5
print(f"DeepseekV3Attention's softmax scale x sqrt(d): {gain:.3f}")
assert math.isclose(gain, mu ** 2, rel_tol=1e-6)

# %% jupyter={"source_hidden": true} tags=["deep-dive", "remove-input", "nbval-check-output"]
decoupled = DecoupledRoPE(nope_dim=8, rope_dim=8, base=10000.0,
                          layout="interleaved", scaling=yarn)
lib_q, lib_k = decoupled.rotate_qk(q, k, at)
assert torch.equal(lib_q, our_q) and torch.equal(lib_k, our_k)
agree("DeepSeek-V3 (YaRN x40): cos, sin", torch.cat(slice_rope.cos_sin(at)),
      torch.cat((cos[..., :4], sin[..., :4])), 0.0)
assert math.isclose(decoupled.softmax_gain, mu ** 2, rel_tol=1e-12)
checked("DecoupledRoPE rotates as the inline slice does and carries the gain "
        "mu^2; its cos/sin tables equal DeepSeek-V3's bit for bit")

# %% [markdown] tags=["deep-dive"]
# **Cohere2: the interleaved layout, on local layers only.** Cohere pairs dims as neighbours,
# $(x_{2i}, x_{2i+1})$ (notebook 03). One check per layer kind:
# %% tags=["deep-dive"]
config = transformers.Cohere2Config(
    **nb08.TINY, layer_types=["sliding_attention", "full_attention"],
    sliding_window=6, rope_parameters={"rope_type": "default",
                                       "rope_theta": 50000.0})
config._attn_implementation = "eager"
cohere2 = nb08.hf_modeling("cohere2")
cos_sin = cohere2.Cohere2RotaryEmbedding(config)(x, positions)
torch.manual_seed(8)
assert hf_config.rotary_scheme(config).layout == "interleaved"
for layer, scheme, mask in (
        (0, hf_config.rotary_scheme(config),
         hf.additive_causal_mask(40, window=6)),
        (1, NoPosition(), hf.additive_causal_mask(40))):
    module = cohere2.Cohere2Attention(config, layer_idx=layer).eval()
    with torch.no_grad():
        agree(f"Cohere2 {config.layer_types[layer]} layer: attention output",
              hf.attention_from_hf(module, scheme)(x, causal=True),
              module(x, cos_sin, mask)[0])

# %% [markdown]
# **Check.** Every bound asserted above: tables bit for bit (the same float32 operations in the
# same order), rotations and outputs to rounding.

# %% tags=["nbval-check-output"]
display(pd.Series(agree.bounds, name="ours against Hugging Face").to_frame())

# %% [markdown]
# **Takeaway:**
# - Each scheme is a short formula on top of RoPE: a change to the frequencies (bands, per-pair
#   factors, p-RoPE), the positions (M-RoPE), the queries (Llama 4's temperature) or which slice
#   rotates (DeepSeek's MLA).
# - `posenc_lib` computes each exactly as the model's own code does; watch LongRoPE's
#   per-sequence switch, which the config does not spell out.

# %% [markdown]
# ## 3 · A layout-conversion lab on real model classes
#
# **Question:** Hugging Face's Llama pairs dims as halves, $(x_i, x_{i+d/2})$; Llama 4's code
# pairs them as neighbours, $(x_{2i}, x_{2i+1})$. Can a Llama checkpoint run in the other
# class, and what happens if the conversion is skipped?
#
# Notebook 03's recipe permutes the rows of $W_q$ and $W_k$ within each head
# (`convert_rope_checkpoint`). We copy a tiny random `LlamaForCausalLM` into a
# `Llama4ForCausalLM` built as the same dense network, with and without the permutation, at two
# initial scales, three seeds each.

# %% tags=["nbval-check-output"]
tokens = torch.randint(0, 64, (4, 48),
                       generator=torch.Generator().manual_seed(10))
LAB_SEEDS = (0, 1, 2)


def flatness(weights: torch.Tensor) -> float:
    """Attention entropy over its uniform maximum ln(keys seen), queries 1+."""
    entropy = -(weights * weights.clamp_min(1e-30).log()).sum(-1)
    return (entropy[..., 1:] / torch.arange(2, 49).log()).mean().item()


lab, flat = {}, {}
for init_std, seed in itertools.product((0.02, 0.3), LAB_SEEDS):
    llama, llama4 = nb08.llama_pair(init_std, seed)
    with torch.no_grad():
        llama.set_attn_implementation("eager")  # returns its weights
        weights = llama(tokens, output_attentions=True).attentions
        flat[init_std, seed] = np.mean([flatness(w) for w in weights])
        reference = llama(tokens).logits
        for permute in (True, False):
            state = nb08.converted(llama.state_dict(), permute)
            llama4.load_state_dict(state, strict=True)
            logits = llama4(tokens).logits
            same = logits.argmax(-1) == reference.argmax(-1)
            lab[init_std, permute, seed] = (
                (logits - reference).abs().max().item(),
                same.float().mean().item())
report = pd.DataFrame(
    [(std, "yes" if p else "skipped",
      "< 1e-4" if max(lab[std, p, s][0] for s in LAB_SEEDS) < 1e-4
      else rounding(max(lab[std, p, s][0] for s in LAB_SEEDS)),
      mean_std([lab[std, p, s][1] for s in LAB_SEEDS]))
     for std, p in itertools.product((0.02, 0.3), (True, False))],
    columns=["init std", "permutation", "max |logit difference|",
             "same top-1 token (mean ± std, 3 seeds)"])
display(report)
print("attention entropy / its uniform maximum (1: uniform): at least",
      round(min(flat[0.02, s] for s in LAB_SEEDS), 2), "at init 0.02, at most",
      round(max(flat[0.3, s] for s in LAB_SEEDS), 2), "at 0.3 (3 seeds)")

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
for seed in LAB_SEEDS:
    assert lab[0.02, True, seed][0] < 1e-5 and lab[0.3, True, seed][0] < 1e-3
    assert lab[0.02, False, seed][1] > 0.95  # skipped, usual init: survive
    assert lab[0.3, False, seed][1] < 0.5  # skipped, sharp attention: not
    assert flat[0.02, seed] > 0.99 and flat[0.3, seed] < 0.5
checked("on every seed, converted: the same logits; skipped: over 0.95 of the "
        "top-1 tokens unchanged at init 0.02, under half at 0.3")

# %% [markdown]
# Converted, the Llama 4 class gives the checkpoint's logits; skipped, `load_state_dict` still
# succeeds. At the usual initialisation (0.02) attention is uniform (entropy at its maximum,
# 1.0) and a share of 0.993 of the predictions survives the wrong layout: a test on a fresh model
# passes either way. At 0.3 attention is sharp (entropy 0.24 of its maximum at most) and most
# predictions change. That trained models are as sharp is an assumption here, not measured.

# %% [markdown]
# **Takeaway:**
# - Converting between layouts is a per-head permutation of $W_q$ and $W_k$; it loads silently
#   whether or not it was done.
# - Test a conversion with sharp attention (a trained checkpoint, or large random weights), and
#   compare logits, not the absence of errors.

# %% [markdown]
# ## 4 · Trained: what a local window bounds, and the frequencies a model uses
#
# **Question:** Cohere2 and Gemma 2 and 3 limit many of their layers to a local window of
# recent keys. What does a window change past the training length, and which rotary pairs does
# a trained model use?
#
# We measure on models that beat a character trigram: notebook 06's base models (4 layers, 4
# heads of 16, i.e. 8 rotary pairs; 3000 steps at $L = 32$ characters; 3 seeds), on held-out
# *Macbeth* at $L$ to $8L$. The experiment: the same RoPE weights as trained, and with every
# layer limited to a local window of the last $L$ keys. The control: 06's models without
# position, with and without the window. "Perplexity at $n$" is over the first $n$ positions of
# each window (`perplexity_at`), not at position $n$ alone.
# %% tags=["nbval-check-output"]
corpus = char_corpus()
L, SEEDS, VOCAB = 32, [0, 1, 2], len(corpus.vocab)
LENGTHS = [L, 2 * L, 4 * L, 8 * L]
inputs, targets = lm_eval_windows(corpus.valid, 8 * L, 32)
base = nb06.load_base_models(VOCAB, names=("RoPE", "NoPE"), seeds=SEEDS)


def windowed(model: TinyTransformer, window: int) -> TinyTransformer:
    """A copy of ``model`` whose layers attend to their last ``window`` keys."""
    model = copy.deepcopy(model)
    for block in model.blocks:
        block.attn.window = window
    return model


ARMS_4 = {"RoPE": ("RoPE", None), "RoPE, window L": ("RoPE", L),
          "no position": ("NoPE", None), "no position, window L": ("NoPE", L)}
ppl = {}
for arm, (name, window) in ARMS_4.items():
    models = [base[name, s] for s in SEEDS]
    if window:
        models = [windowed(m, window) for m in models]
    ppl[arm] = np.array([lm_metrics.perplexity_at(lm_metrics.per_position_loss(
        m, inputs, targets), LENGTHS) for m in models])  # (seeds, lengths)
table = pd.DataFrame(
    {arm: [mean_std(v[:, j], digits=2) for j in range(len(LENGTHS))]
     for arm, v in ppl.items()},
    index=[f"{n} ({n // L}L)" for n in LENGTHS]).T
table.index.name = "perplexity (mean ± std, 3 seeds)"
display(table)

# %% tags=["nbval-check-output"]
fig, ax = plt.subplots(figsize=(7.5, 4.0))
for k, (arm, v) in enumerate(ppl.items()):
    for s in range(len(SEEDS)):  # every seed
        ax.plot(LENGTHS, v[s], color=COLORS[k], linestyle=LINESTYLES[k],
                marker=MARKERS[k], label=arm if s == 0 else None)
ax.set_xscale("log", base=2)
ax.set_yscale("log")
ax.set_xticks(LENGTHS, [str(n) for n in LENGTHS])
ax.minorticks_off()
ax.axvline(L, color="grey", linewidth=1)
ax.set(title="06's models trained at L = 32, evaluated longer (each seed)",
       xlabel="evaluation length (characters, log scale)",
       ylabel="validation perplexity (log)")
ax.legend(fontsize=9, loc="upper left")
plt.show()

# %% [markdown]
# **Check**, beside the floors: the models without position, and interpolated Kneser-Ney
# 3- and 6-grams counted on the same training text. "Needed" is the gap the series' rule asks
# for: twice the larger seed spread, and at least 2% of the floor's perplexity.

# %% tags=["nbval-check-output"]
ppl_tables = {}
for j in (0, 3):  # at L and at 8L
    n = LENGTHS[j]
    print(f"at {n} characters ({n // L}L):")
    ppl_tables[n] = floors.with_floors(
        {arm: ppl[arm][:, j] for arm in ("RoPE", "RoPE, window L")},
        [floors.no_position(ppl["no position"][:, j]),
         *(floors.kneser_ney(corpus.train, inputs, targets, order=order,
                             vocab_size=VOCAB, length=n) for order in (3, 6))],
        metric=f"perplexity at {n}", higher_is_better=False, relative=True,
        digits=2)

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
at_L, at_8L = ppl_tables[L], ppl_tables[8 * L]
growth = {arm: v.mean(0)[-1] / v.mean(0)[0] for arm, v in ppl.items()}
# at L the window changes nothing: a query there sees at most L keys
assert np.allclose(ppl["RoPE"][:, 0], ppl["RoPE, window L"][:, 0])
assert all(at_L.verdict(arm, "Kneser-Ney 3-gram").a_ahead
           for arm in at_L.results)
assert growth["RoPE"] > 3 and growth["no position"] > 1.5
assert growth["RoPE, window L"] < 1.1 < 1.5 < growth["no position, window L"]
assert all(at_8L.verdict("RoPE, window L", f).a_ahead
           for f in ("no position", "Kneser-Ney 3-gram"))
assert compare(ppl["RoPE, window L"][:, 3], ppl["RoPE"][:, 3],
               higher_is_better=False, relative=True).a_ahead
assert compare(ppl["no position"][:, 1], ppl["no position, window L"][:, 1],
               higher_is_better=False, relative=True).a_ahead
assert not any(table.verdict(arm, "Kneser-Ney 6-gram").separated
               for table, arm in [(at_L, "RoPE"), (at_8L, "RoPE, window L")])
checked("at L every RoPE model beats the 3-gram; past L the RoPE models rise "
        "more than threefold, the windowed ones stay within 10% and beat the "
        "3-gram and the models without position at 8L; at L and, windowed, at "
        "8L they are not separated from the 6-gram; the window does not keep "
        "the models without position flat")

# %% [markdown]
# **What the numbers say.**
# - At $L$ the RoPE models beat the 3-gram; they are not separated from the 6-gram or the
#   models without position: as good as a well-smoothed 6-gram, not better.
# - **As trained, RoPE rises** past $L$ (06 §4). **Limited to the last $L$ keys, the same
#   weights stay flat** to $8L$: ahead of the 3-gram and of the models without position there,
#   level with the 6-gram (not separated). In a window of $L$ every query-key distance is one
#   the model trained on.
# - **The control:** the window does not keep the models without position flat, so shortening
#   the context is not by itself what keeps RoPE flat. That the window helps RoPE by bounding
#   its distances is the explanation [06 §6](06_length_extrapolation.ipynb) tests (the same
#   number of keys, some at unseen distances); this section alone does not separate the two.
# - Why the models without position rise is not tested here. Haviv et al.'s conjecture (they
#   count the keys a query sees, a count that is new past $L$) cannot be the whole story: in a
#   window the count never passes $L$, yet with the window they rise more at $2L$.
#
# Cohere2 and Gemma train with their windows and keep global layers for the whole context, which
# this task does not test; nor are SmolLM3's "NoPE 1 in 4", the hybrid or p-RoPE trained here
# (the open-ended experiment trains them at 06's size).

# %% [markdown]
# **Takeaway:**
# - A local window bounds the distances a RoPE layer meets, at every length: the same weights
#   that rise sixfold past $L$ stay flat when limited to the last $L$ keys.
# - Read a trained result beside its floors: these models are level with a 6-gram, so they
#   carry claims about position, not about beating a good n-gram.

# %% [markdown] jp-MarkdownHeadingCollapsed=true tags=["deep-dive"]
# ### Deep dive (optional) · Which rotary pairs does a trained model use?
#
# A RoPE score is a sum over pairs, $q_m \cdot k_n = \sum_i q_m^{(i)} \cdot k_n^{(i)}$. For 06's
# RoPE models we measure each pair's mean $|q_m^{(i)} \cdot k_n^{(i)}|$ over the causal query-key
# pairs (`pair_usage`, on the rotated queries and keys), and the cost at $L$ of switching each
# pair off (`WithoutPairs`: that pair of $q$ and $k$ set to 0 after the rotation, every weight as
# trained). The angle pair $i$ turns across $L$ is $L\,\theta_i$. The control: the same
# measurement on 06's models without position, whose pairs of dims do not turn.

# %% tags=["deep-dive", "nbval-check-output"]
rope_models = [base["RoPE", s] for s in SEEDS]
short = (inputs[:, :L], targets[:, :L])


def usage_share(model) -> np.ndarray:
    """Each layer's pair usage as shares of its total: (layers, pairs)."""
    usage = torch.stack([pair_usage.pair_usage(q, k).mean(0) for q, k
                         in model.queries_and_keys(short[0])]).double()
    return (usage / usage.sum(-1, keepdim=True)).numpy()


def ppl_at_L(model) -> float:
    loss = lm_metrics.per_position_loss(model, *short)
    return lm_metrics.perplexity_at(loss, [L])[0]


def without(model, i: int):
    scheme = pair_usage.WithoutPairs(model.blocks[0].attn.scheme, [i])
    return with_scheme(model, scheme)


shares = np.stack([usage_share(m) for m in rope_models])  # seeds, layers, pairs
control = np.stack([usage_share(base["NoPE", s]) for s in SEEDS])  # no turn
switched_off = np.array([[ppl_at_L(without(m, i)) - ppl_at_L(m)
                          for i in range(8)] for m in rope_models])
theta8 = rope.rope_inv_freq(16).double()

fig, axes = plt.subplots(1, 2, figsize=(7.5, 3.4))
for layer in range(4):
    axes[0].plot(range(8), shares[:, layer].mean(0), color=COLORS[layer],
                 linestyle=LINESTYLES[layer], marker=MARKERS[layer],
                 label=f"layer {layer}")
axes[0].set(title="Share of the scores per pair",
            xlabel="pair i (slower with i)", ylabel="share of mean |part|")
axes[0].legend(fontsize=9)
for seed in range(3):
    axes[1].plot(range(8), switched_off[seed], color=COLORS[seed],
                 marker=MARKERS[seed], linestyle="none", label=f"seed {seed}")
axes[1].axhline(0, color="grey", linewidth=1)
axes[1].set(title="Cost of switching one pair off", xlabel="pair i",
            ylabel="perplexity increase at L")
axes[1].legend(fontsize=9)
plt.show()
print("radians pair i turns across L:",
      np.round((L * theta8).numpy(), 2).tolist())
print("share of the scores in pairs 0-2, per layer:",
      np.round(shares[:, :, :3].sum(-1).mean(0), 2).tolist())
print("the same without position (control):",
      np.round(control[:, :, :3].sum(-1).mean(0), 2).tolist())
print("perplexity increase when pair i is off:",
      np.round(switched_off.mean(0), 2).tolist())

# %% jupyter={"source_hidden": true} tags=["deep-dive", "remove-input", "nbval-check-output"]
fast, slow = switched_off[:, :3], switched_off[:, 3:]
assert shares[:, :, :3].sum(-1).min() > control[:, :, :3].sum(-1).max()
assert fast.min(axis=1).min() > slow.max(axis=1).max() + 0.1
assert (fast.mean(1) > 4 * slow.mean(1)).all()
checked("in every seed and layer pairs 0-2 carry a larger share of the scores "
        "than in any seed and layer of the models without position; "
        "switching any of them off costs more than any of pairs 3-7")

# %% [markdown] tags=["deep-dive"]
# **What the numbers say.** These models lean on their **fast** pairs: pairs 0-2 carry about
# 0.7 of the scores in every layer, against about 0.38 in the models without position (their
# count's share is 3/8), and switching pair 0 or 2 off costs far more than any of pairs 3-7
# (why pair 1, between them, costs little is not tested here).
# This measures scores, not Barbero et al.'s per-frequency norms. Barbero et al. (2025) find
# that Gemma 7B builds its positional heads from the highest frequencies but mostly uses the
# lowest, which they suspect carry meaning, not position; they propose p-RoPE (section 2).

# %% [markdown]
# ## 5 · M-RoPE on a tiny video task
#
# **Question:** does giving each axis its own coordinate help where the answer depends on where
# *and* when, and does the order of the pairs matter?
#
# `WhenAndWhere`: 4 frames of 3 × 3 patches, one token per patch. Two patches are marked, A and
# B; the label says whether B comes later than A and whether it is to its right: 4 classes.
# Four arms, 12 rotary pairs per head, base 100:
#
# - **1-D RoPE**: the flattened index $n$, as if the video were text;
# - **2-D RoPE per frame**: $(h, w)$ within the frame, the time pairs unrotated;
# - **M-RoPE, sectioned** and **M-RoPE, interleaved**: $(t, h, w)$, 4 pairs each; and, as a
#   control for the order, **sectioned with the axes reversed** ($w$ on the fastest pairs).
#
# First, the best accuracy any model could reach from B's offset to A as each arm sees it
# (`WhenAndWhere.ceiling`, exact):
# %% tags=["nbval-check-output"]
task = WhenAndWhere(frames=4, height=3, width=3)
flat = torch.tensor([task.height * task.width, task.width, 1])
ceilings = {"1-D RoPE": task.ceiling(lambda o: o @ flat),
            "2-D RoPE per frame": task.ceiling(lambda o: o[:, 1:]),
            "M-RoPE (t, h, w)": task.ceiling(lambda o: o)}
print({name: round(c, 3) for name, c in ceilings.items()})
assert ceilings["2-D RoPE per frame"] == 0.5
assert ceilings["M-RoPE (t, h, w)"] == 1

# %% [markdown]
# Per frame, "earlier" and "later" look alike: 0.5. The flattened index mixes the axes,
# $\Delta n = 9\,\Delta t + 3\,\Delta h + \Delta w$: one frame later, one row down, two columns left
# ($\Delta n = 10$) looks like one frame later, one column right ($9 + 1$), with the other label.
#
# A quarter of the 648 placements of A and B is held out: each arm trains on the rest (150
# steps, 2 layers, width 48, 3 seeds) and is tested on the held-out placements and on 5 × 5
# frames (a new resolution). Floors: the model without position trained the same way, the
# majority class, chance.
# %%
BASE, SECTION = 100.0, [4, 4, 4]
split = nb08.HeldOutVideos(task, held_out=0.25, seed=0)
LARGER = WhenAndWhere(frames=4, height=5, width=5)
ARMS = ["1-D RoPE", "2-D RoPE per frame", "M-RoPE, sectioned",
        "M-RoPE, interleaved"]
REVERSED = "sectioned, axes reversed"  # the order's control


def arm_scheme(arm: str, video: WhenAndWhere):
    """The position scheme of one arm for videos of ``video``'s size."""
    coords = mrope.mrope_positions(video.frames, video.height, video.width)
    if arm == "no position":
        return NoPosition()
    if arm == "1-D RoPE":
        return rope.RotaryPE(24, base=BASE)
    if arm == "2-D RoPE per frame":
        coords = coords * torch.tensor([0, 1, 1])  # t = 0 for every frame
    if arm == REVERSED:  # (w, h, t): width on the fastest pairs, time slowest
        return mrope.MRoPE(24, coords.flip(-1), SECTION, base=BASE,
                           mrope_interleaved=False)
    return mrope.MRoPE(24, coords, SECTION, base=BASE,
                       mrope_interleaved=arm != "M-RoPE, sectioned")


def train_video(setup: tuple[str, int]) -> tuple[float, ...]:
    """Accuracy on the held-out placements, on 2048 videos of LARGER, and
    of the held-out placements' two halves of the label: "when", "where"."""
    arm, seed = setup
    data = seed_everything(seed)
    model = TinyTransformer(task.VOCAB_SIZE, task.n_classes, d_model=48,
                            n_heads=2, n_layers=2, scheme=arm_scheme(arm, task))
    train(model, lambda _: split.sample(32, data), 150, lr=3e-3, desc=None)
    larger = with_scheme(model, arm_scheme(arm, LARGER))
    test = torch.Generator().manual_seed(100)
    x, y = split.test()
    with torch.no_grad():
        guess = model(x).argmax(-1)  # label = 2 * later + right
    return (accuracy(model, x, y), accuracy(larger, *LARGER.sample(2048, test)),
            (guess // 2 == y // 2).float().mean().item(),
            (guess % 2 == y % 2).float().mean().item())


video_setups = list(itertools.product([*ARMS, "no position", REVERSED], SEEDS))
video_acc = dict(zip(video_setups, run_each(train_video, video_setups,
                                            desc="arm x seed")))
acc = {arm: np.array([video_acc[arm, s] for s in SEEDS])
       for arm in [*ARMS, "no position", REVERSED]}
print(f"{len(split.train_labels)} training placements, "
      f"{len(split.test_labels)} held out")
larger_labels = LARGER.sample(2048, torch.Generator().manual_seed(100))[1]
video_tables = {}
for k, (size, labels) in enumerate([("3 x 3, held out", split.test_labels),
                                    ("5 x 5", larger_labels)]):
    print(f"test videos {size}:")
    video_tables[size] = floors.with_floors(
        {arm: acc[arm][:, k] for arm in ARMS},
        [floors.no_position(acc["no position"][:, k]),
         floors.majority(split.train_labels, labels),
         floors.chance(task.n_classes)],
        metric=f"accuracy, {size}")

# %%
fig, ax = plt.subplots(figsize=(7.5, 3.8))
SIZES = ["3 x 3, held out", "5 x 5 (new resolution)"]
for k, size in enumerate(SIZES):  # one colour and marker per test set
    for row, arm in enumerate(ARMS):
        ax.scatter(acc[arm][:, k], [row + 0.15 * (2 * k - 1)] * len(SEEDS),
                   color=COLORS[3 * k], marker=MARKERS[k], s=45, zorder=3,
                   label=size if row == 0 else None)
for level, text in [(0.25, "chance"), (0.5, "per-frame ceiling")]:
    ax.axvline(level, color="grey", linewidth=1, linestyle=LINESTYLES[1])
    ax.text(level + 0.005, -0.3, text, fontsize=9, color="grey")
ax.set_yticks(range(len(ARMS)), ARMS)
ax.invert_yaxis()
ax.set(title="When and where: test accuracy of each seed (4 classes)",
       xlabel="test accuracy", xlim=(0.2, 1.02))
ax.legend(title="test videos", loc="center right", fontsize=9)
plt.show()
theta12 = rope.rope_inv_freq(24, BASE)
for order, interleaved_order in (("sectioned", False), ("interleaved", True)):
    axis = mrope.mrope_axes(12, SECTION, interleaved_order)
    print(f"{order:11s}: fastest pair per axis (t, h, w), rad per step:",
          [round(float(theta12[axis == a].max()), 3) for a in range(3)])
print("M-RoPE, interleaved, lowest seed at 5 x 5:",
      round(float(acc["M-RoPE, interleaved"][:, 1].min()), 3))
halves = pd.DataFrame({a: acc[a][:, 2:].mean(0) for a in [*ARMS, REVERSED]},
                      index=['"when" right', '"where" right']).T
display(halves.round(3).rename_axis("held out, mean of 3 seeds"))

# %% jupyter={"source_hidden": true} tags=["remove-input", "nbval-check-output"]
interleaved = acc["M-RoPE, interleaved"]
assert all(compare(interleaved[:, j], acc[other][:, j]).a_ahead
           for other in ARMS[:-1] for j in range(2))
assert acc["2-D RoPE per frame"][:, :2].max() <= 0.55  # at its ceiling
assert acc["M-RoPE, sectioned"][:, :2].max() <= 0.55  # no more than per-frame
for arm, learned in (("M-RoPE, sectioned", 2), ("2-D RoPE per frame", 3),
                     (REVERSED, 3)):
    assert acc[arm][:, learned].min() > 0.95  # one half of the label...
    assert acc[arm][:, 5 - learned].max() < 0.6  # ...and the other at chance
assert acc["1-D RoPE"][:, 0].max() < ceilings["1-D RoPE"]  # below Δn's
assert compare(acc["1-D RoPE"][:, 0], acc["1-D RoPE"][:, 1]).a_ahead
assert all(video_tables[size].verdict("M-RoPE, interleaved", f.name).a_ahead
           for size in video_tables for f in video_tables[size].floors)
checked("interleaved M-RoPE is ahead of every other arm on both test sets; "
        "per-frame 2-D RoPE and sectioned M-RoPE stay at 0.5, on every seed "
        "sectioned with 'when' learned and 'where' at chance, per-frame and "
        "sectioned with the axes reversed the reverse; 1-D RoPE is below its "
        "ceiling, and lower still at 5 x 5")

# %% [markdown]
# **What the numbers say.**
# - **Interleaved M-RoPE** generalises: 1.000 on the held-out placements, 0.945 at 5 × 5
#   (lowest seed 0.834), ahead of every other arm and of every floor on both by the series' rule.
# - **2-D RoPE per frame** stays near or below its ceiling of 0.5; **1-D RoPE** stays below what $\Delta n$
#   allows (0.547 against 0.679) and falls to chance at 5 × 5 (0.245).
# - **Sectioned M-RoPE** stays at 0.5 after 150 steps: "when" right on every held-out
#   placement, "where" at chance (per-frame 2-D RoPE: the reverse). **The control**, the same
#   order with the axes reversed, learns "where" and not "when": in 150 steps the axis on the
#   4 slowest pairs is the one not learned. Why (a hypothesis): the fastest of them turns 0.046
#   rad per step, so neighbours give nearly the same scores. Longer training is not run here,
#   and may well learn it (a cold reader's longer runs did, on two seeds of three): a result
#   about this budget, not about what the order can represent.
#
# This is not "sectioned M-RoPE fails in Qwen2-VL". Its width pairs turn even less (0.000178
# rad per column, section 2). One plausible reason, not tested here: its vision encoder, a ViT
# with its own 2-D RoPE, may write each patch's row and column into the token's content. Here
# every video holds the same tokens (one A, one B, the rest empty), so only the rotation can
# tell them apart.

# %% [markdown]
# **Takeaway:**
# - Give each axis its own coordinate: M-RoPE keeps "when" and "where" apart, on unseen videos
#   and at a new resolution; 1-D positions mix them, per-frame positions lose time.
# - Which pairs each axis gets matters when the rotation carries the position: here the
#   sectioned order, which leaves width only slow frequencies, had not learned "where" after
#   150 steps (longer training not tested).

# %% [markdown]
# ## Summary
#
# - Today's models left plain RoPE for longer contexts, memory and video. Read their scheme from
#   `config.rope_parameters`: code for the 4.x field silently gets base 10,000.
# - Each scheme is a few lines on top of RoPE (section 2); LongRoPE switches per sequence,
#   DeepSeek moves YaRN's gain from cos and sin into the softmax scale.
# - Skipping a layout conversion (a per-head permutation of $W_q$, $W_k$) loads without error
#   and hides on a fresh model.
# - Limited to a window of $L$ keys, 06's RoPE models stay flat to $8L$, level with a 6-gram;
#   the window does not help models without position.
# - Interleaved M-RoPE solves "when and where" on held-out videos and at a new resolution; the
#   sectioned order had not learned "where" after 150 steps (longer training not tested).

# %% [markdown]
# ### Open-ended experiment · Train the layer patterns
#
# **Question.** Section 4 added a window after training. Trained at 06's size, how do "no RoPE
# on every fourth layer" (SmolLM3, Llama 4), local RoPE layers with a global NoPE layer
# (Cohere2) and p-RoPE (Gemma 4) behave past $L$? `train_char_lm` takes one
# `LayerSpec(scheme, window)` per layer:
#
# ```python
# from posenc_lib.models import LayerSpec
# local = lambda: LayerSpec(rope.RotaryPE(16), window=L)
# hybrid = lambda: [local()] * 3 + [LayerSpec(NoPosition())]
# model = train_char_lm(NoPosition(), corpus, L, 3000, seed, lr=5e-3,
#                       d_model=64, n_heads=4, n_layers=4, layer_specs=hybrid)
# ```
#
# (about four CPU-minutes a model), three seeds each. **Look for** perplexity at $L$ and $8L$
# beside section 4's floors, the hybrid against local RoPE on every layer (its control), and
# whether "NoPE 1 in 4" rises like all-RoPE.

# %% [markdown]
# ## Exercises
#
# An exercise ends in a code cell that calls its checker: `[to do]` until you answer,
# `[passed]` and why, or `[not yet]` and a hint. Worked solutions are in the **Solutions**
# section at the end.
#
# ### Exercise 1 · Predict, then run: which pairs does Llama 3.1 keep?
# Llama 3.1's head has 64 pairs, base 500,000, original context $L_0 = 8192$ and
# `high_freq_factor` 4. How many pairs keep their frequency unchanged? Reason from the
# wavelengths (pair 0's is $2\pi$; each pair's is $500000^{2/128}$ times the last's), write your
# prediction into `predicted_kept`, and only then run the cell after it.

# %%
predicted_kept = ...  # your prediction: a whole number from 0 to 64

# %% tags=["exercise", "nbval-check-output"]
wavelengths = 2 * math.pi / rope.rope_inv_freq(128, 500000.0)
kept = int((wavelengths < 8192 / 4).sum())
check_exercise_1(predicted_kept, kept)

# %% [markdown]
# ### Exercise 2 · Explain why: which M-RoPE order for a 40 × 40 grid?
# A vision-language model with 64 pairs per head and base $10^6$ reads images of 40 × 40
# patches, and (as in section 5's toy) the rotation is the only thing that tells a patch's
# column. Which order of M-RoPE's pairs (`mrope_section` 16, 24, 24 sectioned; 24, 20, 20
# interleaved) would you choose, and why?
#
# - **(a)** Sectioned: width's pairs are the slowest of the head and never wrap around within 40
#   columns, so no two columns alias.
# - **(b)** Interleaved: it gives width more pairs than the sectioned order does, so more
#   columns can be told apart.
# - **(c)** Either: the two orders use the same 64 frequencies, only given to the axes in
#   another order, so the scores are the same.
# - **(d)** Interleaved: every axis gets fast and slow pairs, so near columns differ visibly and
#   far ones stay apart.

# %% tags=["exercise", "nbval-check-output"]
answer_2 = ...  # "a", "b", "c" or "d"
check_exercise_2(answer_2)

# %% [markdown]
# ### Exercise 3 · Design: read a config you have not seen
#
# Section 2 read Llama 3.1's frequencies off its config. Write `inv_freq_of(config)`, a reader
# for any Llama-family `transformers` config: return the `head_dim // 2` inverse frequencies its
# `rope_parameters` ask for, for `rope_type` "default", "linear" (every pair divided by `factor`)
# and "llama3". Read everything from the config, and compute the frequencies yourself:
# `rope.rope_inv_freq` for the plain ones is fine, the library's config readers and the model's
# rotary module are not. The checker builds twelve configs you have not seen (other bases, head
# widths, factors and band edges) and compares your reader with `LlamaRotaryEmbedding` on each.

# %% tags=["exercise", "nbval-check-output"]
def inv_freq_of(config) -> torch.Tensor:
    raise NotImplementedError  # your code here


check_exercise_3(inv_freq_of)

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
# - Su Jianlin (苏剑林), *缓存与效果的极限拉扯：从MHA、MQA、GQA到MLA* (The tug of war between
#   cache and quality: from MHA, MQA and GQA to MLA, 2024-05-13),
#   [kexue.fm/archives/10091](https://kexue.fm/archives/10091): why RoPE cannot be absorbed into
#   MLA's compressed cache, and the decoupled rotated slice, one key shared by the heads.
# - Hugging Face: *[SmolLM3: smol, multilingual, long-context reasoner](https://huggingface.co/blog/smollm3)* (2025):
#   NoPE on every fourth layer.
# - B. Yang, B. Venkitesh, D. Talupuru, H. Lin, D. Cairuz, P. Blunsom, A. Locatelli: *[Rope to Nope and
#   Back Again: A New Hybrid Attention Strategy](https://arxiv.org/abs/2501.18795)* (2025): RoPE on local
#   layers, NoPE on global ones, as in Cohere's Command models.
# - This library: `posenc_lib/rotary/mrope.py`, `posenc_lib/rotary/scaling.py`,
#   `posenc_course/nb08_families.py`, `posenc_lib/analysis/pair_usage.py`.
# - `docs/replication.md`: the headline results of the papers this course teaches, beside the
#   numbers its notebooks measure at toy scale, whether they agree, and why not where they do not.

# %% [markdown] jp-MarkdownHeadingCollapsed=true
# ## Solutions
# One cell per exercise: each sets the answer and runs its checker. Try the exercise first.

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
# pair i is kept while 2 pi 500000^(2i/128) < 2048,
# that is i < 64 ln(2048 / 2 pi) / ln 500000, about 28.2: pairs 0-28
predicted_kept = 29
check_exercise_1(predicted_kept, kept)

# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
check_exercise_2("d")  # section 2: sectioned width pairs barely turn


# %% jupyter={"source_hidden": true} tags=["solution", "nbval-check-output"]
def inv_freq_of(config) -> torch.Tensor:
    p, d = config.rope_parameters, config.head_dim  # not hidden_size // heads
    theta = rope.rope_inv_freq(d, p["rope_theta"])
    if p["rope_type"] == "linear":
        return theta / p["factor"]
    if p["rope_type"] == "llama3":  # section 2's bands, from the config
        wavelength = 2 * math.pi / theta
        low, high = p["low_freq_factor"], p["high_freq_factor"]
        ratio = p["original_max_position_embeddings"] / wavelength
        gamma = ((ratio - low) / (high - low)).clamp(0, 1)
        return (1 - gamma) * theta / p["factor"] + gamma * theta
    return theta


check_exercise_3(inv_freq_of)

# %% [markdown]
# ## End of notebook 08
# <!-- Keep this cell last. "Run All" ends on the last cell, and JupyterLab unfolds the section that
#      holds it: outside "Solutions", this heading leaves the solutions folded. -->

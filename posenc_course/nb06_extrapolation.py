"""Train short, test long: the models and measurements of notebook 06 on causal language models.

A causal model's loss at position p depends only on tokens 0..p, so one forward pass over
sequences of length ``8L`` gives the loss at every position, and the perplexity of length-``nL``
sequences is ``exp(mean loss over positions 0 .. nL-1)`` (:func:`perplexity_at`), the
quantity of Figure 1 of Press et al. (2022), for every scheme whose computation does not depend
on the total length (all except dynamic NTK, which is run once per length).

Contents::

    CHECKPOINT_CONFIG    - the size and training of 06's 21 base models (7 schemes x 3 seeds)
    base_schemes         - the seven position schemes, as functions that build them
    train_base_model     - one base model: the library's training loop (AdamW, linear decay) on the corpus
    save_checkpoint      - a trained model's weights (float16) and loss curve, as safetensors
    load_base_models     - the shipped checkpoints, each checked against the manifest's SHA-256
    train_char_lm        - a TinyTransformer causal char LM trained on random windows of a corpus
    draw, perplexity_panel, training_curves_figure, excess_figure,
                           onset_figure, wavelength_figure - the figures, one style per method (STYLE_INDEX)

The base models are trained by ``tools/train_06_checkpoints.py`` (``make checkpoints-06``) under the
reference numerics and shipped in ``data/checkpoints/06/`` with ``manifest.json``; the notebook loads
them and retrains the start of one run live. The measurements themselves are the library's
(:mod:`posenc_lib.analysis.lm_metrics`: per-position loss, perplexity by length, attention entropy;
:func:`posenc_lib.models.with_scheme`; :func:`posenc_lib.attention.allowed_keys` for windows).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from posenc_course.data import CharCorpus, lm_batch
from posenc_course.training import seed_everything, train
from posenc_lib.checks import check_int
from posenc_lib.embeddings.learnable import LearnablePE
from posenc_lib.embeddings.sinusoidal import SinusoidalPE
from posenc_lib.models import LayerSpec, TinyTransformer
from posenc_lib.qk_bias.transformer_xl import TransformerXLRelative
from posenc_lib.rotary.rope import RotaryPE
from posenc_lib.scheme import NoPosition, PositionScheme
from posenc_lib.score_bias.alibi import ALiBi
from posenc_lib.score_bias.t5 import T5RelativeBias

__all__ = [
    "CHECKPOINT_CONFIG",
    "CHECKPOINT_DIR",
    "SCHEME_NAMES",
    "base_schemes",
    "build_base_model",
    "train_base_model",
    "save_checkpoint",
    "checkpoint_file",
    "load_manifest",
    "load_base_model",
    "load_base_models",
    "train_char_lm",
    "STYLE_INDEX",
    "style",
    "draw",
    "training_curves_figure",
    "perplexity_panel",
    "excess_figure",
    "onset_figure",
    "wavelength_figure",
]

#: The 21 base models of notebook 06: their size and their training (one run per scheme and seed).
#: Chosen by measurement against the notebook's character 4-gram (perplexity 9.14 at L on its 32
#: evaluation windows), seed 0 unless said: with 2 layers and 2000 steps RoPE reaches 8.57 and the
#: learnable table 8.44, NoPE only 10.57 (its slowest learner); NoPE with 4 layers reaches 9.06 after
#: 2000 steps and 8.62 / 8.45 (seeds 0, 1) after 3000, about 225 s of CPU each. So: 4 layers, 3000 steps
#: (about 3 million training characters; some 430 kB per checkpoint as float16).
CHECKPOINT_CONFIG: dict[str, int | float] = {
    "seq_len": 32,  # L, the training length
    "d_model": 64,
    "n_heads": 4,
    "n_layers": 4,
    "batch_size": 32,
    "steps": 3000,
    "lr": 5e-3,  # AdamW, decaying linearly to 10% over the run
}

SCHEME_NAMES = ("sinusoidal", "learnable", "RoPE", "ALiBi", "T5 bias", "NoPE", "Transformer-XL")
SEEDS = (0, 1, 2)

#: Where the shipped checkpoints live (one safetensors file per scheme and seed, and manifest.json).
CHECKPOINT_DIR = Path(__file__).resolve().parent.parent / "data" / "checkpoints" / "06"
MAKE_HINT = "run `make checkpoints-06` to train them again (tools/train_06_checkpoints.py)"


def base_schemes(config: dict = CHECKPOINT_CONFIG) -> dict[str, Callable[[], PositionScheme]]:
    """The seven position schemes of notebook 06, each as a function that builds it (after the seeding).

    learnable: a table of L rows at the tokens' scale (02 §3); T5 bias: causal, 32 buckets,
    max_distance L (every distance from L - 1 on in the last bucket, which training reaches at
    distance L - 1 only); Transformer-XL: sinusoidal r_{i-j} with learned W_r, u, v.
    """
    d, heads, L = config["d_model"], config["n_heads"], config["seq_len"]
    return {
        "sinusoidal": lambda: SinusoidalPE(d),
        "learnable": lambda: LearnablePE(d, max_len=L, init_std=1.0),
        "RoPE": lambda: RotaryPE(d // heads),
        "ALiBi": lambda: ALiBi(heads),
        "T5 bias": lambda: T5RelativeBias(heads, num_buckets=32, max_distance=L, bidirectional=False),
        "NoPE": lambda: NoPosition(),
        "Transformer-XL": lambda: TransformerXLRelative(d, heads),
    }


def _check_name(name: str) -> None:
    if name not in SCHEME_NAMES:
        raise ValueError(f"unknown scheme {name!r}; the base models are {', '.join(SCHEME_NAMES)}")


def build_base_model(name: str, vocab_size: int, config: dict = CHECKPOINT_CONFIG) -> TinyTransformer:
    """A fresh causal character LM with scheme ``name`` (weights from the current random state)."""
    _check_name(name)
    return TinyTransformer(vocab_size, vocab_size, config["d_model"], config["n_heads"], config["n_layers"],
                           scheme=base_schemes(config)[name](), causal=True, pool="none")


def train_base_model(name: str, seed: int, corpus: CharCorpus, config: dict = CHECKPOINT_CONFIG,
                     stop_after: int | None = None, desc: str | None = None) -> tuple[TinyTransformer, list[float]]:
    """Train one base model of notebook 06; return it (in eval mode) and the loss of every step.

    Seed, build the model (its weights and any weights of its scheme come from ``seed``), then
    ``config["steps"]`` AdamW steps (weight decay 0.01) of :func:`posenc_lib.training.train` on
    random windows of ``config["seq_len"]`` characters of ``corpus.train`` (offsets from the same
    seed), the learning rate decaying linearly from ``config["lr"]`` to 10% of it.
    stop_after: stop after this many steps of the same run (same schedule): its first steps exactly.
    desc: label of a progress bar (:func:`posenc_course.training.progress`); ``None`` trains silently.
    """
    check_int("seed", seed, minimum=0)
    gen = seed_everything(seed)
    model = build_base_model(name, len(corpus.vocab), config)

    def batch(step: int) -> tuple[torch.Tensor, torch.Tensor]:  # (B, L) inputs, (B, L) next chars
        return lm_batch(corpus.train, config["seq_len"], config["batch_size"], gen)

    losses = train(model, batch, config["steps"], lr=config["lr"], weight_decay=0.01, stop_after=stop_after,
                   desc=desc)
    return model, losses


def checkpoint_file(name: str, seed: int, directory: Path = CHECKPOINT_DIR) -> Path:
    """The file of base model ``name``, seed ``seed``: e.g. ``t5-bias_seed0.safetensors``."""
    _check_name(name)
    return Path(directory) / f"{name.lower().replace(' ', '-')}_seed{seed}.safetensors"


def save_checkpoint(model: TinyTransformer, losses: Sequence[float], path: Path) -> str:
    """Write the model's parameters as float16 and its loss curve (float32) to ``path``; return the SHA-256."""
    tensors = {f"param.{k}": v.detach().to(torch.float16).contiguous() for k, v in model.named_parameters()}
    tensors["losses"] = torch.tensor(list(losses), dtype=torch.float32)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_manifest(directory: Path = CHECKPOINT_DIR) -> dict:
    """``manifest.json`` of the shipped checkpoints: config, steps, final losses, SHA-256 per file."""
    path = Path(directory) / "manifest.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: the checkpoints of notebook 06 are not there; {MAKE_HINT}")
    return json.loads(path.read_text())


def load_base_model(name: str, seed: int, vocab_size: int,
                    directory: Path = CHECKPOINT_DIR) -> tuple[TinyTransformer, torch.Tensor]:
    """One shipped base model (float16 weights, evaluated in float32, eval mode) and its loss curve.

    Raises FileNotFoundError or ValueError, naming the file, when it is missing or its SHA-256
    differs from the manifest's.
    """
    manifest = load_manifest(directory)
    path = checkpoint_file(name, seed, directory)
    entry = manifest["files"].get(path.name)
    if entry is None:
        raise ValueError(f"{path.name} is not in {Path(directory) / 'manifest.json'}; {MAKE_HINT}")
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing; {MAKE_HINT}")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != entry["sha256"]:
        raise ValueError(f"{path} has SHA-256 {digest}, the manifest records {entry['sha256']}:"
                         f" the file is damaged or from another run; {MAKE_HINT}")
    tensors = load_file(str(path))
    torch.manual_seed(0)  # the weights are overwritten; this only keeps the global state predictable
    model = build_base_model(name, vocab_size, manifest["config"])
    params = dict(model.named_parameters())
    stored = {k.removeprefix("param."): v for k, v in tensors.items() if k.startswith("param.")}
    if set(stored) != set(params) or any(stored[k].shape != params[k].shape for k in params):
        raise ValueError(f"{path} does not hold the parameters of a {name} model of this config; {MAKE_HINT}")
    with torch.no_grad():
        for k, p in params.items():
            p.copy_(stored[k].to(torch.float32))
    model.eval()
    return model, tensors["losses"]


def load_base_models(vocab_size: int, names: Sequence[str] = SCHEME_NAMES, seeds: Sequence[int] = SEEDS,
                     directory: Path = CHECKPOINT_DIR) -> dict[tuple[str, int], TinyTransformer]:
    """Every shipped base model, ``{(name, seed): model}`` (see :func:`load_base_model`)."""
    return {(name, s): load_base_model(name, s, vocab_size, directory)[0] for name in names for s in seeds}


def train_char_lm(
    scheme: PositionScheme | Callable[[], PositionScheme],
    corpus: CharCorpus,
    seq_len: int,
    steps: int,
    seed: int,
    batch_size: int = 32,
    lr: float = 3e-3,
    d_model: int = 64,
    n_heads: int = 4,
    n_layers: int = 2,
    desc: str | None = None,
    layer_specs: Callable[[], Sequence[LayerSpec]] | None = None,
) -> TinyTransformer:
    """A causal character LM (pool="none", token embeddings N(0, 1), not rescaled) trained with :func:`train`.

    Seeds everything with ``seed``, then builds the model (its weights come from that seed) and
    trains ``steps`` steps on windows of ``seq_len`` characters drawn from ``corpus.train`` by
    :func:`posenc_course.data.lm_batch` (offsets from the same seed). Returns the model in eval mode.

    scheme: the position scheme, or a function that builds it. Pass the function for a scheme with
    parameters of its own (T5 bias, a learnable table): it is called after the seeding, so those
    parameters come from ``seed`` too; a scheme built by the caller was drawn before it.
    layer_specs: a function that builds one :class:`~posenc_lib.models.LayerSpec` per layer (called
    after the seeding, like ``scheme``): each layer's own scheme and window; ``scheme`` then only
    adds to the embeddings (pass :class:`~posenc_lib.scheme.NoPosition` for nothing).
    """
    check_int("seq_len", seq_len)
    check_int("steps", steps)
    gen = seed_everything(seed)
    if not isinstance(scheme, PositionScheme):
        if not callable(scheme):
            raise TypeError(f"scheme must be a PositionScheme or a function that builds one, got {type(scheme).__name__}")
        scheme = scheme()
    if layer_specs is not None and not callable(layer_specs):
        raise TypeError(f"layer_specs must be a function that builds the LayerSpec list, got {type(layer_specs).__name__}")
    model = TinyTransformer(len(corpus.vocab), len(corpus.vocab), d_model, n_heads, n_layers, scheme=scheme,
                            causal=True, pool="none", layer_specs=None if layer_specs is None else layer_specs())
    train(model, lambda _: lm_batch(corpus.train, seq_len, batch_size, gen), steps, lr=lr, desc=desc)
    return model


# ----------------------------------------------------------------- figures of notebook 06
#: One (colour, dash, marker) per method, the same in every figure of notebook 06: within a panel no
#: two methods share a colour or a marker (:func:`perplexity_panel` asserts it), so the figures read in
#: black and white. Indices into :data:`posenc_course.plotting.COLORS`, ``LINESTYLES`` and ``MARKERS``.
STYLE_INDEX: dict[str, tuple[int, int]] = {
    "sinusoidal": (0, 0),
    "learnable": (1, 1),
    "learnable (clamped)": (1, 1),
    "RoPE": (2, 2),
    "T5 bias": (3, 3),
    "ALiBi": (4, 4),
    "NoPE": (5, 5),
    "RoPE + PI ×8": (6, 6),
    "RoPE + NTK-aware": (0, 3),
    "RoPE + dynamic NTK": (1, 3),
    "RoPE + YaRN": (3, 4),
    "RoPE + PI ×2": (0, 6),
    "RoPE + PI ×4": (1, 6),
    "RoPE + PI ×2 + fine-tune": (3, 0),
    "RoPE + PI ×4 + fine-tune": (5, 0),
    "RoPE + PI ×8 + fine-tune": (1, 0),
    "RoPE + fine-tune": (4, 3),
    "Transformer-XL": (6, 7),
}


def style(name: str) -> tuple[str, object, str]:
    """(colour, line style, marker) of a method of notebook 06 (:data:`STYLE_INDEX`)."""
    from posenc_course.plotting import COLORS, LINESTYLES, MARKERS

    if name not in STYLE_INDEX:
        raise ValueError(f"name must be one of {list(STYLE_INDEX)}, got {name!r}")
    c, d = STYLE_INDEX[name]
    return COLORS[c], LINESTYLES[d], MARKERS[c]


def draw(ax, x, y, name: str, **kwargs) -> None:
    """One method's line in its colour, dash and marker, labelled with its name unless ``label`` is given."""
    color, dash, marker = style(name)
    kwargs.setdefault("label", name)
    ax.plot(x, y, color=color, linestyle=dash, marker=marker, **kwargs)


def training_curves_figure(curves: dict, live: Sequence[float], steps: int, smooth: int = 100):
    """The stored training curves ``{(scheme, seed): losses}``, smoothed over ``smooth`` steps, one
    legend entry per scheme, with the steps rerun live (``live``, not smoothed) in black."""
    import matplotlib.pyplot as plt
    import numpy as np

    from posenc_course.plotting import moving_average

    x = np.arange(smooth, steps + 1)  # the last step of each window
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    for (name, s), curve in curves.items():
        kwargs = {} if s == 0 else {"label": None}
        draw(ax, x, moving_average(curve.tolist(), smooth), name, linewidth=1, markevery=400, **kwargs)
    ax.plot(np.arange(1, len(live) + 1), live, color="black", linewidth=0.8,
            label="RoPE, seed 0: steps rerun here (not smoothed)")
    ax.set_ylim(1.2, 3.2)
    ax.set(title=f"Training loss of the {len(curves)} models ({len(curves) // 3} schemes × 3 seeds)",
           xlabel="training step (32 windows of 32 characters each)",
           ylabel=f"cross-entropy (nats), mean of {smooth} steps")
    ax.legend(ncol=2, fontsize=9)
    return fig


def perplexity_panel(ppl: dict, names: Sequence[str], title: str, lengths: Sequence[int],
                     yardstick: dict[str, Sequence[float]]):
    """Figure 1 of Press et al. at toy scale: each method's mean perplexity (3 seeds, range shaded)
    against the evaluation length, log-log, with the n-gram floors ``yardstick`` in grey."""
    import matplotlib.pyplot as plt

    from posenc_course.plotting import LINESTYLES

    assert len({style(n)[0] for n in names}) == len({style(n)[2] for n in names}) == len(names), names
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    for name in names:
        v = ppl[name]
        draw(ax, lengths, v.mean(0), name)
        ax.fill_between(lengths, v.min(0), v.max(0), color=style(name)[0], alpha=0.15)
    for (name, values), dash in zip(yardstick.items(), (LINESTYLES[5], LINESTYLES[7], LINESTYLES[6])):
        ax.plot(lengths, values, color="grey", linestyle=dash, label=f"character {name}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set(title=title, xlabel="evaluation length (characters, log scale)",
           ylabel="validation perplexity (Macbeth, log scale)")
    ax.set_xticks(lengths, [f"{n}" for n in lengths])
    ax.set_yticks([8, 11, 16, 25, 40, 60], ["8", "11", "16", "25", "40", "60"])
    ax.minorticks_off()
    ax.axvline(lengths[0], color="grey", linewidth=1)
    ax.legend(ncol=2, fontsize=9, loc="upper left")
    return fig


def excess_figure(excess: dict, ngram_loss: torch.Tensor, early: tuple[int, int] = (6, 13),
                  late: tuple[int, int] = (24, 31)):
    """Each model's loss minus the n-gram's at each position of a window (mean of its seeds), with the
    two ranges of positions compared shaded; ``excess`` maps a name to a (seeds, L) tensor in nats."""
    import matplotlib.pyplot as plt
    import numpy as np

    length = len(ngram_loss)
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    for name, e in excess.items():
        draw(ax, np.arange(length), e.mean(0).numpy(), name, markevery=4)
    ax.axhline(0, color="grey", linewidth=1)
    for lo, hi in (early, late):
        ax.axvspan(lo - 0.5, hi + 0.5, color="grey", alpha=0.12)
    ax.set(title="Loss above the Kneser-Ney 6-gram's inside the training length",
           xlabel="position in a window of L characters",
           ylabel="model minus 6-gram (nats, mean of 3 seeds)")
    ax.legend(ncol=2, fontsize=9)
    return fig


def onset_figure(x, curves: dict, seq_len: int, window: int):
    """Each model's smoothed loss above the 6-gram's at each position ``x`` of the long windows, with the
    training length ``seq_len`` marked."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    for name, curve in curves.items():
        draw(ax, x, curve, name, markevery=24)
    ax.set(title="Loss above the Kneser-Ney 6-gram's, at each position",
           xlabel="position in the sequence (characters)",
           ylabel=f"model minus 6-gram (nats), smoothed over {window}")
    ax.set_ylim(top=ax.get_ylim()[1] + 0.6)  # room for the legend
    ax.legend(ncol=2, loc="upper center")
    ax.axvline(seq_len, color="grey", linewidth=1)
    ax.text(seq_len + 2, ax.get_ylim()[0] + 0.02, f"L = {seq_len}", va="bottom")
    return fig


def wavelength_figure(wavelength, new_over_old: dict, seq_len: int):
    """Two panels: each RoPE pair's wavelength against the training length and 8 times it; each
    rescaling's new/old frequency per pair (``new_over_old``: name -> (pairs,) ratios)."""
    import matplotlib.pyplot as plt
    import numpy as np

    from posenc_course.plotting import COLORS, LINESTYLES, MARKERS

    fig, axes = plt.subplots(2, 1, figsize=(7.5, 7.2), sharex=True)
    i = np.arange(len(wavelength))
    axes[0].semilogy(i, wavelength, color=COLORS[0], marker=MARKERS[0], label="wavelength $2\\pi/\\theta_i$")
    for k, (n, label) in enumerate([(seq_len, f"training length L = {seq_len}"), (8 * seq_len, f"8L = {8 * seq_len}")]):
        axes[0].axhline(n, color=COLORS[k + 1], linestyle=LINESTYLES[k + 1], label=label)
    axes[0].set(title=f"RoPE wavelength per pair (head_dim {2 * len(wavelength)}, base 10000)",
                xlabel="pair index i", ylabel="wavelength (characters, log scale)")
    axes[0].legend()
    for name, ratio in new_over_old.items():
        draw(axes[1], i, ratio, name)
    axes[1].set_yscale("log", base=2)
    axes[1].set_yticks([1 / 8, 1 / 4, 1 / 2, 1], ["1/8", "1/4", "1/2", "1"])
    axes[1].minorticks_off()
    axes[1].set(title="Rescaled / original frequency per pair, factor 8", xlabel="pair index i",
                ylabel="new frequency / old frequency (log scale)")
    axes[1].legend()
    return fig

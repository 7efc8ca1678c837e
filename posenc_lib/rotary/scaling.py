"""RoPE frequencies for longer contexts and other frequency sets: linear, NTK-aware, dynamic NTK, YaRN, Llama 3,
LongRoPE, proportional (p-RoPE).

One function, :func:`rope_frequencies`, turns a rope-parameter dict into the inverse
frequencies ``theta_i`` (:func:`~posenc_lib.frequencies.inverse_frequencies` for plain RoPE) of :mod:`posenc_lib.rotary.rope` and the *attention factor* that
multiplies cos and sin (so the attention logits scale by its square).

The dict uses the keys and meanings of Hugging Face's ``rope_parameters``
(transformers 5.x, ``modeling_rope_utils.py``), and the float32 frequencies agree with it
bit for bit in every configuration ``tests/lib/test_rope_conformance.py`` tries. One key differs: Hugging Face's
dynamic NTK reads the trained length from the model config's
``max_position_embeddings``; here it is ``original_max_position_embeddings`` in the
same dict, like every other scaled type (and :class:`posenc_lib.rotary.rope.RotaryPE` computes it from
the positions of each call, where Hugging Face's module keeps the largest length it has seen
until a sequence shorter than L0 comes). "ntk" (the static NTK-aware rule,
base' = base * s^(d/(d-2)), used without fine-tuning) has no Hugging Face type.

Each type is one entry of :data:`ROPE_SCALINGS` (as Hugging Face's ``ROPE_INIT_FUNCTIONS``):
the keys it reads and the function that computes its frequencies. Adding a type is adding
an entry.

============  =================================================================
rope_type     what changes (s = factor, L0 = original_max_position_embeddings)
============  =================================================================
default       nothing: theta_i = base^(-2i/d)
linear        every theta_i / s (positions squeezed into the trained range)
ntk           base * s^(d/(d-2)): high frequencies barely move, low ones ~ / s
dynamic       ntk with s' = s*L/L0 - (s-1) for the current length L > L0, else default
yarn          per-frequency ramp between theta_i / s (slow dims) and theta_i (fast dims),
              and cos, sin times 0.1 ln(s) + 1
llama3        wavelengths above L0/low_freq_factor / s, below L0/high_freq_factor kept,
              a smooth blend between
longrope      theta_i / r_i with one fitted factor r_i per pair: ``short_factor`` while the
              current length L <= L0, ``long_factor`` beyond; cos, sin times
              sqrt(1 + ln(s) / ln(L0)) at every length (Phi-3)
proportional  theta_i = base^(-2i/d) over the full head, 0 for the slowest pairs beyond
              int(p d / 2) (not rotated), all / s (Gemma 4; Barbero et al.'s p-RoPE)
============  =================================================================

``partial_rotary_factor`` p means two different things, both read by :func:`rope_frequencies`
(``_rotary_dim``), one code path:

* every type but "proportional" (GPT-NeoX, Phi, Phi-3): only the first ``int(p d)`` dims of a
  head rotate, and the frequencies are those of a head of that width,
  theta_i = base^(-2i/(p d)), i < p d / 2; the other ``d - p d`` dims pass through. The result
  has ``p d / 2`` frequencies.
* "proportional" (Gemma 4's global layers): the frequencies are those of the full head,
  theta_i = base^(-2i/d), and the ``d/2 - int(p d / 2)`` slowest pairs get theta = 0, so their
  angle is 0 at every position (cos 1, sin 0: not rotated). The result has ``d / 2`` frequencies,
  and the unrotated dims are the slowest pairs of the head's layout (in the half layout dims
  ``int(p d/2) .. d/2`` and their partners ``d/2 + int(p d/2) .. d``), not its tail. This is
  Barbero et al.'s p-RoPE ("Round and Round We Go! What makes Rotary Positional Encodings
  useful?", 2024): keep the fraction p of fastest frequencies and truncate the lowest ones,
  which carry almost no position over the context and serve as semantic channels.

LongRoPE's key ``factor`` s only sets the attention factor; Hugging Face derives it, when it is
absent, from the model config's ``max_position_embeddings / original_max_position_embeddings``
(Phi-3 gives no factor). Here that length is the optional key ``max_position_embeddings`` of the
same dict; when both are given, ``factor`` wins, as in Hugging Face.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from posenc_lib.checks import check_even_int, check_number, is_int, is_number
from posenc_lib.frequencies import inverse_frequencies, wavelengths

__all__ = ["RopeScaling", "ROPE_SCALINGS", "ROPE_TYPES", "rope_frequencies", "standard_config", "yarn_mscale"]

#: computes (inv_freq (dim // 2,) float32, attention_factor) from (base, rotary dim, config, seq_len)
Frequencies = Callable[[float, int, dict[str, Any], "int | None"], tuple[Tensor, float]]


@dataclass(frozen=True)
class RopeScaling:
    """One rope_type: the config keys it reads (key -> required?) and the function computing its frequencies.

    ``full_width``: the type keeps the whole head and reads ``partial_rotary_factor`` itself
    (proportional RoPE zeroes the slowest frequencies); otherwise the factor narrows the rotated
    width (GPT-NeoX). See the module docstring.
    """

    keys: dict[str, bool]
    frequencies: Frequencies
    full_width: bool = False


def yarn_mscale(scale: float, coefficient: float = 1.0) -> float:
    """YaRN's temperature 0.1 * coefficient * ln(scale) + 1 (1 for scale <= 1).

    With coefficient 1 it is the paper's sqrt(1/t) that multiplies cos and sin. DeepSeek's
    configs split it into ``mscale`` and ``mscale_all_dim``: cos and sin get
    ``yarn_mscale(s, mscale) / yarn_mscale(s, mscale_all_dim)`` and the attention's softmax scale
    ``yarn_mscale(s, mscale_all_dim) ** 2`` (:class:`~posenc_lib.rotary.decoupled.DecoupledRoPE`).
    """
    return 1.0 if scale <= 1 else 0.1 * coefficient * math.log(scale) + 1.0


def _ntk_base(base: float, scale: float, dim: int) -> float:
    """NTK-aware base: base * scale^(d/(d-2)), which divides the slowest frequency by exactly ``scale``."""
    return base * scale ** (dim / (dim - 2))


def _default(base: float, dim: int, config: dict[str, Any], seq_len: int | None) -> tuple[Tensor, float]:
    """Plain RoPE: theta_i = base^(-2i/d)."""
    return inverse_frequencies(dim, base), 1.0


def _linear(base: float, dim: int, config: dict[str, Any], seq_len: int | None) -> tuple[Tensor, float]:
    """Position interpolation (Chen et al. 2023): every theta_i / s."""
    return inverse_frequencies(dim, base) / config["factor"], 1.0


def _ntk(base: float, dim: int, config: dict[str, Any], seq_len: int | None) -> tuple[Tensor, float]:
    """Static NTK-aware scaling: a larger base, base * s^(d/(d-2))."""
    return inverse_frequencies(dim, _ntk_base(base, config["factor"], dim)), 1.0


def _dynamic(base: float, dim: int, config: dict[str, Any], seq_len: int | None) -> tuple[Tensor, float]:
    """Dynamic NTK: the NTK base for the current length L, s' = s*L/L0 - (s-1) (default RoPE up to L0)."""
    if seq_len is None or not is_int(seq_len) or seq_len < 1:
        raise ValueError(f"rope_type 'dynamic' needs the argument seq_len of rope_frequencies, the current length (a "
                         f"positive int), got {seq_len!r}")
    original = config["original_max_position_embeddings"]
    factor = config["factor"]
    length = max(int(seq_len), original)
    return inverse_frequencies(dim, _ntk_base(base, factor * length / original - (factor - 1), dim)), 1.0


def _yarn(base: float, dim: int, config: dict[str, Any], seq_len: int | None) -> tuple[Tensor, float]:
    """YaRN (Peng et al. 2023): ramp between interpolation and extrapolation, plus attention temperature."""
    factor = config["factor"]
    original = config["original_max_position_embeddings"]
    beta_fast = config.get("beta_fast") or 32  # rotations over L0 above which a dim is left as is
    beta_slow = config.get("beta_slow") or 1  # rotations below which a dim is fully interpolated

    attention_factor = config.get("attention_factor")
    if attention_factor is None:
        m, m_all = config.get("mscale"), config.get("mscale_all_dim")
        attention_factor = yarn_mscale(factor, m) / yarn_mscale(factor, m_all) if m and m_all else yarn_mscale(factor)

    def dim_of(rotations: float) -> float:
        # the (fractional) pair index whose wavelength fits `rotations` times into L0
        return dim * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low, high = dim_of(beta_fast), dim_of(beta_slow)
    if config.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001  # avoid dividing by zero, as Hugging Face does
    # the paper's gamma: 1 for fast dims (i <= low: keep theta), 0 for slow dims (i >= high: theta / factor)
    gamma = 1 - ((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low)).clamp(0, 1)
    wavelength = wavelengths(dim, base)  # per radian: 1 / theta_i
    inv_freq = 1 / (factor * wavelength) * (1 - gamma) + 1 / wavelength * gamma
    return inv_freq, float(attention_factor)


def _llama3(base: float, dim: int, config: dict[str, Any], seq_len: int | None) -> tuple[Tensor, float]:
    """Llama 3.1: divide long wavelengths by factor, keep short ones, blend in between."""
    factor, low, high = config["factor"], config["low_freq_factor"], config["high_freq_factor"]
    check_number("config['low_freq_factor']", low, above=0)
    check_number("config['high_freq_factor']", high, above=0)
    if not low <= high:
        raise ValueError(f"config['low_freq_factor'] must be <= config['high_freq_factor'], got {low!r} and {high!r}")
    theta = inverse_frequencies(dim, base)
    original = config["original_max_position_embeddings"]
    wavelength = 2 * math.pi / theta
    scaled = torch.where(wavelength > original / low, theta / factor, theta)
    if low == high:  # no band to blend (Llama 4 Scout): every wavelength is either kept or divided
        return scaled, 1.0
    smooth = (original / wavelength - low) / (high - low)  # 0 at L0/low, 1 at L0/high
    blended = (1 - smooth) * scaled / factor + smooth * scaled
    medium = (wavelength >= original / high) & (wavelength <= original / low)
    return torch.where(medium, blended, scaled), 1.0


def _longrope(base: float, dim: int, config: dict[str, Any], seq_len: int | None) -> tuple[Tensor, float]:
    """LongRoPE (Ding et al. 2024; Phi-3): theta_i / r_i, r = long_factor beyond L0, short_factor up to it.

    The attention factor sqrt(1 + ln(s) / ln(L0)) (1 for s <= 1) applies at every length, with s =
    ``factor`` or ``max_position_embeddings / L0``.
    """
    original = config["original_max_position_embeddings"]
    pairs = dim // 2
    for key in ("short_factor", "long_factor"):
        rescale = config[key]
        if (not isinstance(rescale, (list, tuple)) or len(rescale) != pairs
                or not all(is_number(r) and r > 0 for r in rescale)):
            got = f"{len(rescale)} entries" if isinstance(rescale, (list, tuple)) else type(rescale).__name__
            raise ValueError(
                f"config[{key!r}] must be a list of rotary_dim // 2 = {pairs} numbers > 0 (one per rotary pair), "
                f"got {got}: {rescale!r}"
            )
    factor = config.get("factor")
    if factor is None:
        if config.get("max_position_embeddings") is None:
            raise ValueError(
                "rope_type 'longrope' needs config['factor'] or config['max_position_embeddings'] (factor = "
                f"max_position_embeddings / original_max_position_embeddings, as Hugging Face derives it); got keys {sorted(config)}"
            )
        factor = config["max_position_embeddings"] / original
    attention_factor = config.get("attention_factor")
    if attention_factor is None:
        attention_factor = 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(original))
    long = seq_len is not None and seq_len > original
    rescale = torch.tensor(config["long_factor" if long else "short_factor"], dtype=torch.float32)
    return 1.0 / (rescale * wavelengths(dim, base)), float(attention_factor)


def _proportional(base: float, dim: int, config: dict[str, Any], seq_len: int | None) -> tuple[Tensor, float]:
    """Proportional RoPE (Gemma 4) = p-RoPE: full-head frequencies, the slowest pairs beyond int(p d / 2) at 0; / s.

    ``dim`` is the full head width here (``full_width``); p is ``partial_rotary_factor``.
    """
    kept = int(config.get("partial_rotary_factor", 1.0) * dim // 2)
    theta = inverse_frequencies(dim, base)
    theta = torch.where(torch.arange(dim // 2) < kept, theta, torch.zeros_like(theta))
    return theta / config.get("factor", 1.0), 1.0


#: Every rope_type, in the order of the table above.
ROPE_SCALINGS: dict[str, RopeScaling] = {
    "default": RopeScaling({}, _default),
    "linear": RopeScaling({"factor": True}, _linear),
    "ntk": RopeScaling({"factor": True}, _ntk),
    "dynamic": RopeScaling({"factor": True, "original_max_position_embeddings": True}, _dynamic),
    "yarn": RopeScaling(
        {
            "factor": True,
            "original_max_position_embeddings": True,
            "attention_factor": False,
            "beta_fast": False,
            "beta_slow": False,
            "mscale": False,
            "mscale_all_dim": False,
            "truncate": False,
        },
        _yarn,
    ),
    "llama3": RopeScaling(
        {"factor": True, "original_max_position_embeddings": True, "low_freq_factor": True, "high_freq_factor": True},
        _llama3,
    ),
    "longrope": RopeScaling(
        {
            "short_factor": True,
            "long_factor": True,
            "original_max_position_embeddings": True,
            "factor": False,
            "max_position_embeddings": False,
            "attention_factor": False,
        },
        _longrope,
    ),
    "proportional": RopeScaling({"factor": False}, _proportional, full_width=True),
}
ROPE_TYPES: tuple[str, ...] = tuple(ROPE_SCALINGS)
_COMMON = {"rope_type": False, "rope_theta": False, "partial_rotary_factor": False}


def standard_config(config: dict[str, Any]) -> dict[str, Any]:
    """A copy of a rope-parameter dict with the transformers 4.x key ``type`` read as ``rope_type`` (as Hugging Face's
    ``standardize_rope_params`` reads it): Llama 2 era configs say ``{"type": "linear", "factor": 4.0}``, and
    transformers 5 keeps ``type`` beside the ``rope_type`` it adds. Raises ValueError when the two disagree."""
    if not isinstance(config, dict):
        raise TypeError(f"config must be a dict of rope parameters or None, got {type(config).__name__}")
    config = dict(config)
    if "type" in config:
        legacy = config.pop("type")
        if config.setdefault("rope_type", legacy) != legacy:
            raise ValueError(f"config['type'] = {legacy!r} (transformers 4.x's name) contradicts config['rope_type'] = "
                             f"{config['rope_type']!r}")
    return config


def rope_frequencies(head_dim: int, config: dict[str, Any] | None, seq_len: int | None = None) -> tuple[Tensor, float]:
    """Inverse frequencies and attention factor for a RoPE variant.

    Args:
        head_dim: width of one attention head (the rotated width is
            ``int(head_dim * partial_rotary_factor)``, which must be even; "proportional" rotates
            the full width and reads the factor itself, see the module docstring).
        config: rope parameters with Hugging Face's keys, e.g.
            ``{"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}``;
            ``None`` means default RoPE with base 10000. ``rope_theta`` defaults to 10000.
        seq_len: current sequence length; required by "dynamic"; "longrope" takes its long
            factors when it is given and exceeds L0 (ignored otherwise).

    Returns:
        ``(inv_freq, attention_factor)``: inv_freq (rot_dim // 2,) float32 on the CPU;
        attention_factor a float that multiplies cos and sin (1.0 except for YaRN and LongRoPE).

    Raises:
        ValueError: unknown rope_type, unknown or missing key, bad value, odd rotary width,
            "dynamic" without ``seq_len``, LongRoPE factor lists of the wrong length.
    """
    config = {} if config is None else standard_config(config)
    rope_type = _check_config(config)
    scaling = ROPE_SCALINGS[rope_type]
    dim = _rotary_dim(head_dim, config, scaling.full_width)
    base = float(config.get("rope_theta", 10000.0))
    return scaling.frequencies(base, dim, config, seq_len)


def _check_config(config: dict[str, Any]) -> str:
    """Validate keys and values of a rope-parameter dict; return its rope_type."""
    if not isinstance(config, dict):
        raise TypeError(f"config must be a dict of rope parameters or None, got {type(config).__name__}")
    rope_type = config.get("rope_type", "default")
    if rope_type not in ROPE_SCALINGS:
        raise ValueError(f"config['rope_type'] must be one of {list(ROPE_TYPES)}, got {rope_type!r}")
    allowed = {**_COMMON, **ROPE_SCALINGS[rope_type].keys}
    unknown = sorted(set(config) - set(allowed))
    if unknown:
        raise ValueError(
            f"config has key(s) {unknown} that rope_type {rope_type!r} does not use; allowed keys: {sorted(allowed)}"
        )
    missing = sorted(key for key, required in allowed.items() if required and config.get(key) is None)
    if missing:
        raise ValueError(f"rope_type {rope_type!r} needs config key(s) {missing}; got keys {sorted(config)}")
    if config.get("factor") is not None and not (is_number(config["factor"]) and config["factor"] > 0):
        raise ValueError(f"config['factor'] must be a number > 0, got {config['factor']!r}")
    original = config.get("original_max_position_embeddings")
    if original is not None and not (is_int(original) and original >= 2):
        raise ValueError(f"config['original_max_position_embeddings'] (L0, the trained context length) must be an int "
                         f">= 2, got {original!r}")
    check_number("config['rope_theta']", config.get("rope_theta", 10000.0), above=1)
    return rope_type


def _rotary_dim(head_dim: int, config: dict[str, Any], full_width: bool = False) -> int:
    """Width the frequencies are computed for: int(head_dim * partial_rotary_factor), as Hugging Face truncates
    it (must be even), or head_dim itself for a ``full_width`` type, which reads the factor as p-RoPE's p."""
    check_even_int("head_dim", head_dim)
    fraction = config.get("partial_rotary_factor", 1.0)
    if not (is_number(fraction) and 0 < fraction <= 1):
        raise ValueError(f"config['partial_rotary_factor'] must be in (0, 1], got {fraction!r}")
    if full_width:
        return head_dim
    dim = int(head_dim * fraction)
    if dim < 2 or dim % 2:
        raise ValueError(
            f"head_dim * partial_rotary_factor (RotaryPE's rotary_fraction) must give an even rotary width >= 2, "
            f"got int({head_dim} * {fraction}) = {dim}"
        )
    return dim

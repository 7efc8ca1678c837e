"""Transforms of queries and keys by position (``PositionScheme.rotate_qk``); values are never touched.

    rope.py         RoPE: frequencies, cos/sin tables, the rotation (one formula per layout), RotaryPE, layout conversion
    scaling.py      the frequency sets by rope_type: linear, NTK, dynamic, YaRN, Llama 3, LongRoPE, proportional
    mrope.py        M-RoPE (Qwen2-VL, Qwen3-VL): each pair turns with the token's t, h or w coordinate
    decoupled.py    DeepSeek's decoupled RoPE (MLA): only a trailing slice of each head rotates
    temperature.py  Llama 4's attention temperature: q scaled by a slow function of position (no rotation)
    rope_2d.py      2-D RoPE for image patches: axial (rows and columns, each half the pairs) and mixed (learned)
"""

from .decoupled import DecoupledRoPE
from .mrope import MRoPE, mrope_cos_sin, mrope_positions
from .rope import (
    LAYOUTS,
    RotaryPE,
    apply_rope,
    apply_rope_qk,
    convert_qk_weight,
    convert_rope_checkpoint,
    rope_cos_sin,
    rope_inv_freq,
    rope_layout_permutation,
    rotate_half,
)
from .rope_2d import AxialRoPE2D, MixedRoPE2D, apply_axial_rope_2d, apply_mixed_rope_2d
from .scaling import ROPE_TYPES, rope_frequencies
from .temperature import QueryTemperature, query_temperature

__all__ = [
    "RotaryPE", "MRoPE", "DecoupledRoPE", "QueryTemperature", "AxialRoPE2D", "MixedRoPE2D",
    "LAYOUTS", "rope_inv_freq", "rope_cos_sin", "rotate_half", "apply_rope", "apply_rope_qk", "rope_frequencies",
    "ROPE_TYPES", "rope_layout_permutation", "convert_qk_weight", "convert_rope_checkpoint", "mrope_cos_sin",
    "mrope_positions", "query_temperature", "apply_axial_rope_2d", "apply_mixed_rope_2d",
]

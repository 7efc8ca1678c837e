"""Transforms of queries and keys by position (``PositionScheme.rotate_qk``); values are never touched.

    rope.py         RoPE: frequencies, cos/sin tables, the rotation in both layouts, RotaryPE, layout conversion
    scaling.py      the frequency sets by rope_type: linear, NTK, dynamic, YaRN, Llama 3, LongRoPE, proportional
    mrope.py        M-RoPE (Qwen2-VL, Qwen3-VL): each pair turns with the token's t, h or w coordinate
    decoupled.py    DeepSeek's decoupled RoPE (MLA): only a trailing slice of each head rotates
    temperature.py  Llama 4's attention temperature: q scaled by a slow function of position (no rotation)
    rope_2d.py      2-D RoPE for image patches: axial (rows and columns, each half the pairs) and mixed (learned)
"""

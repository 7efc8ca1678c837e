"""Position added to the token embeddings (``PositionScheme.add_to_embeddings``), before the first layer.

    sinusoidal.py   Vaswani et al.'s fixed sin/cos table: any position, a linear shift between positions
    learnable.py    a learned (max_len, d_model) table (GPT-2, BERT, ViT)
    tables_2d.py    2-D grid tables for image patches: sin-cos per axis (MAE) and a learned row + column table
"""

from .learnable import LearnablePE
from .sinusoidal import SinusoidalPE, shift_matrix, sinusoidal_frequencies, sinusoidal_layout_permutation, sinusoidal_table
from .tables_2d import Learnable2DPE, SinCos2DPE, learnable_2d_table, sincos_2d_table

__all__ = ["SinusoidalPE", "LearnablePE", "SinCos2DPE", "Learnable2DPE", "sinusoidal_frequencies", "sinusoidal_table",
           "sinusoidal_layout_permutation", "shift_matrix", "sincos_2d_table", "learnable_2d_table"]

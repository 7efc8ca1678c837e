"""Position added to the token embeddings (``PositionScheme.add_to_embeddings``), before the first layer.

    sinusoidal.py   Vaswani et al.'s fixed sin/cos table: any position, a linear shift between positions
    learnable.py    a learned (max_len, d_model) table (GPT-2, BERT, ViT)
    tables_2d.py    2-D grid tables for image patches: sin-cos per axis (MAE) and a learned row + column table
"""

"""Position terms that read the query and the key (``PositionScheme.qk_bias``), added to the scaled scores.

    transformer_xl.py   Transformer-XL (Dai et al. 2019): (q_i + v) . W_r r_{i-j} + u . k_j, r a sinusoid of i - j
"""

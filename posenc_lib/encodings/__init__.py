"""The positional encodings, one package per place where position enters a Transformer.

    absolute/     added to the token embeddings: a table indexed by position (sinusoidal, learnable)
    rotary/       transforms queries and keys by position: RoPE, its scalings, M-RoPE, decoupled RoPE, Llama 4's temperature
    score_bias/   added to the attention scores: a function of the offset between tokens (T5, ALiBi, Swin)
    conditional/  computed from the tokens' neighbourhood on the image grid (PEG)
    vision/       the 2-D variants for a grid of image patches: 2-D tables and 2-D RoPE

Every scheme is a :class:`posenc_lib.scheme.PositionScheme`.
"""

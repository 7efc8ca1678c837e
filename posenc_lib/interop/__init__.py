"""Connecting to Hugging Face ``transformers`` (installed with ``pip install posenc-lib[hf]``).

    hf.py          a transformers attention module as a MultiHeadAttention (grouped-query included); Hugging Face's causal mask
    hf_config.py   rope parameters of a transformers config, and the RotaryPE it describes
"""

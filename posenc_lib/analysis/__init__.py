"""Measuring what position does in a model.

    probes.py        position ids of a padded batch, table gradients, position probes, shift and permutation checks
    pair_usage.py    which rotary pairs a trained model's scores use, and a model without some pairs
    cost.py          bytes allocated and time taken by a scheme's position part; log-log slopes
    lm_metrics.py    per-position loss, perplexity by context length, attention entropy
"""

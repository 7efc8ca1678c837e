"""Relative position as a bias on the attention scores (``PositionScheme.score_bias``)."""

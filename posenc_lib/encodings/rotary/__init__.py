"""Rotary position embedding: queries and keys rotated by position (``PositionScheme.rotate_qk``)."""

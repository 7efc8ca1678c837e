"""Absolute position tables, added to the token embeddings (``PositionScheme.add_to_embeddings``)."""

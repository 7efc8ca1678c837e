"""Position for a grid of image patches: 2-D tables (added to the embeddings) and 2-D RoPE (rotating q and k)."""

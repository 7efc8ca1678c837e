"""Conditional position encoding: generated from the tokens themselves by a convolution on the grid (PEG)."""

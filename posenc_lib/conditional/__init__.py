"""Position computed from the tokens themselves (``add_to_embeddings`` with a function of the content).

    peg.py   Chu et al.'s positional encoding generator: a depthwise convolution over the 2-D patch grid
"""

from .peg import PEG, peg

__all__ = ["PEG", "peg"]

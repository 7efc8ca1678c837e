"""posenc_lib: positional encodings for Transformers, one interface, tested against reference code.

Modules:
    attention   - PositionScheme (the interface), NoPosition, MultiHeadAttention, KVCache
    models      - TinyTransformer (encoder or causal decoder) taking any scheme
    training    - seed_everything, progress bars, the training loop
    plotting    - the series' figure style and helpers
    data        - the small synthetic tasks and shipped data the notebooks train on
"""

from .attention import KVCache, MultiHeadAttention
from .scheme import NoPosition, PositionScheme
from .models import TinyTransformer
from .course.training import accuracy, progress, seed_everything, train

__version__ = "0.1.0"
__all__ = [
    "KVCache",
    "MultiHeadAttention",
    "NoPosition",
    "PositionScheme",
    "TinyTransformer",
    "accuracy",
    "progress",
    "seed_everything",
    "train",
]

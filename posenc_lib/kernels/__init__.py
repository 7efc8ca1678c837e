"""Speed machinery: the same arithmetic as the readable encodings, arranged to be fast (tested against them).

One guard for every compiled path (``torch.compile``, here and in the tests): inductor's on-disk cache
of compiled kernels (``TORCHINDUCTOR_CACHE_DIR``, by default ``<tmp>/torchinductor_<user>``) does not
tell apart kernels built under different ``ATEN_CPU_CAPABILITY`` levels. Measured here with torch
2.13 on an AVX-512 CPU: a tiny model compiled once with the native level, then again in another
process under ``ATEN_CPU_CAPABILITY=avx2`` (the course's reference numerics) with the same cache,
returned NaN. So when the level is forced and the cache folder is not chosen by the user, each level
gets a folder of its own, ``<tmp>/torchinductor_<user>_<level>``.
"""

from __future__ import annotations

import getpass
import os
import re
import tempfile


def _separate_inductor_cache() -> None:
    """Point inductor at a cache folder of this ATEN_CPU_CAPABILITY level (nothing when unset or already chosen)."""
    level = os.environ.get("ATEN_CPU_CAPABILITY")
    if not level or "TORCHINDUCTOR_CACHE_DIR" in os.environ:
        return
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = f"uid_{os.getuid()}" if hasattr(os, "getuid") else "unknown_user"
    name = re.sub(r"[^\w.-]", "_", f"torchinductor_{user}_{level}")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(tempfile.gettempdir(), name)


_separate_inductor_cache()

"""Which floating-point kernels this process runs, and whether they reproduce the course's numbers.

PyTorch's own vectorised kernels (ATen), oneDNN and MKL each pick their code by instruction set,
so one seeded training run ends in different last bits on an AMD laptop and on an Intel one, and a
few hundred training steps grow those bits into a different third decimal. Three environment
variables, read once when each library starts, pin most of the code paths on an x86-64 CPU with AVX2::

    ATEN_CPU_CAPABILITY=avx2   PyTorch's kernels: softmax, attention, elementwise, Adam
    ONEDNN_MAX_CPU_ISA=AVX2    oneDNN: convolutions
    MKL_CBWR=COMPATIBLE        MKL's matrix products, the same on Intel and AMD (MKL_CBWR=AVX2 is
                               faster, but Intel documents it as reproducible on Intel CPUs only)

With one intra-op thread they are the course's *reference numerics*, recorded with the digest they
give in ``reference_numerics.json`` beside this file; the committed notebooks were executed under
them. ``make`` and the project's Jupyter kernel set them (``tools/numerics_env.py``). They do not pin
everything: an Intel Xeon with AVX-512 and AMX gave another digest than the AMD EPYC of the reference
(measured 2026-12-02; a few trained numbers of 05, 07 and 08 differ in the last digits, see the README).

Whether a machine reproduces the reference is decided by measurement, not by CPU name:
:func:`probe_digest` trains a tiny model with every kind of operation the notebooks use and hashes
each bit of the result. Run ``python -m posenc_course.numerics`` to see this machine's verdict.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import os
import platform
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from posenc_course.i18n import N_, _

__all__ = ["REFERENCE_FILE", "reference", "record_reference", "numerics_in_force", "probe_digest",
           "reproduces_reference", "notice", "describe", "DIFFERS", "separate_inductor_cache"]

#: The file of the reference settings, thread count and digest (written by ``make execute``, read by ``make test``).
REFERENCE_FILE = Path(__file__).with_name("reference_numerics.json")


def reference() -> dict[str, Any]:
    """The recorded reference: ``{"settings": {VAR: value}, "threads": int, "digest": str}``."""
    return json.loads(REFERENCE_FILE.read_text(encoding="utf-8"))


def record_reference(digest: str) -> str:
    """Record ``digest`` as the reference (``make execute`` does, after executing every notebook)."""
    record = reference()
    previous, record["digest"] = record["digest"], digest
    REFERENCE_FILE.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return f"reference digest {digest[:16]} recorded (was {previous[:16] or 'empty'})"


def numerics_in_force() -> dict[str, str]:
    """What this process computes with: kernel levels, MKL mode, threads, processor."""
    return {
        "PyTorch kernels": torch.backends.cpu.get_cpu_capability(),
        "oneDNN": os.environ.get("ONEDNN_MAX_CPU_ISA", "native"),
        "MKL": os.environ.get("MKL_CBWR", "native"),
        "threads": str(torch.get_num_threads()),
        "processor": platform.machine() or "unknown",
    }


class _Probe(nn.Module):
    """A few layers that use what the notebooks use: embeddings plus sin/cos positions, layer norm,
    matrix products, softmax attention and SDPA (causal), a depthwise and a full 2-D convolution,
    bicubic interpolation, GELU. Input: (batch, 16) token ids; output: (batch, 16, vocab) logits."""

    def __init__(self, vocab: int = 12, d: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.embed = nn.Embedding(vocab, d)
        self.norm = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.depthwise = nn.Conv2d(d, d, 3, padding=1, groups=d)
        self.conv = nn.Conv2d(d, d, 3, padding=1)
        self.grid = nn.Parameter(torch.randn(1, d, 3, 3))
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
        self.out = nn.Linear(d, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        b, n = tokens.shape
        d = self.embed.embedding_dim
        angles = torch.arange(n)[:, None] * torch.exp(torch.arange(0, d, 2) * (-9.2 / d))[None]
        x = self.embed(tokens) + torch.cat([angles.sin(), angles.cos()], dim=-1)
        q, k, v = self.qkv(self.norm(x)).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        causal = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        weights = torch.softmax(q @ k.transpose(-2, -1) / (d // self.heads) ** 0.5, dim=-1)
        x = x + (causal + weights @ v).transpose(1, 2).reshape(b, n, d)
        image = x.transpose(1, 2).reshape(b, d, 4, 4)
        grid = F.interpolate(self.grid, size=(4, 4), mode="bicubic", align_corners=False)
        x = x + self.conv(self.depthwise(image) + grid).flatten(2).transpose(1, 2)
        return self.out(x + self.mlp(x))


def probe_digest(steps: int = 40) -> str:
    """Train the probe model for ``steps`` AdamW steps and return a SHA-256 of every bit it ends with.

    Two processes give the same digest only if their kernels round identically; the probe is seeded
    on its own and leaves the global random state as it found it.
    """
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(0)
        model = _Probe()
        tokens = torch.randint(0, 12, (8, 16), generator=torch.Generator().manual_seed(0))
        targets = tokens.roll(1, dims=1)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
        digest = hashlib.sha256()
        for _ in range(steps):
            loss = F.cross_entropy(model(tokens).flatten(0, 1), targets.flatten())
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            digest.update(loss.detach().numpy().tobytes())
        for tensor in model.state_dict().values():
            digest.update(tensor.numpy().tobytes())
        return digest.hexdigest()
    finally:
        torch.random.set_rng_state(state)


def reproduces_reference() -> bool:
    """Whether this process computes exactly as the reference did (probe digest equal to the record)."""
    return probe_digest() == reference()["digest"]


#: The one sentence a notebook prints where this machine does not reproduce the reference numerics
#: (in English; :func:`notice` says it in the current language, :mod:`posenc_course.i18n`).
DIFFERS = N_("This computer's arithmetic rounds differently from the machine that produced the printed "
             "numbers: trained results may differ in the last digits.")


def notice(matches: bool | None = None) -> str:
    """What a notebook's first cell says about the numerics: nothing (``""``) on a machine that
    reproduces the reference, else :data:`DIFFERS` in the current language, one plain sentence."""
    matches = reproduces_reference() if matches is None else matches
    return "" if matches else _(DIFFERS)


def describe(matches: bool | None = None) -> str:
    """One line for the command line and ``make``: the numerics in force and whether they are the reference."""
    matches = reproduces_reference() if matches is None else matches
    now = numerics_in_force()
    settings = (f"PyTorch kernels {now['PyTorch kernels']}, oneDNN {now['oneDNN']}, MKL {now['MKL']}, "
                f"{now['threads']} thread{'s' if now['threads'] != '1' else ''}")
    if matches:
        return f"Numerics: the course's reference ({settings}); the numbers printed are the ones the text quotes."
    return (f"Numerics: this machine's own ({settings}, {now['processor']}), not the course's reference: "
            "trained numbers may differ from the text in the last digits; every claim is still checked "
            "by an assertion.")


def separate_inductor_cache() -> None:
    """Point inductor at a cache folder of this ATEN_CPU_CAPABILITY level (nothing when unset or already chosen).

    Inductor's on-disk cache of compiled kernels (``TORCHINDUCTOR_CACHE_DIR``, by default
    ``<tmp>/torchinductor_<user>``) does not tell apart kernels built under different
    ``ATEN_CPU_CAPABILITY`` levels. Measured with torch 2.13 on an AVX-512 CPU: a tiny model compiled
    once with the native level, then again in another process under ``ATEN_CPU_CAPABILITY=avx2``
    (the course's reference numerics) with the same cache, returned NaN. So when the level is forced
    and the cache folder is not chosen by the user, each level gets a folder of its own,
    ``<tmp>/torchinductor_<user>_<level>``. Called by the tests and the benchmark before they
    compile anything; the library itself leaves the environment alone.
    """
    level = os.environ.get("ATEN_CPU_CAPABILITY")
    if not level or "TORCHINDUCTOR_CACHE_DIR" in os.environ:
        return
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = f"uid_{os.getuid()}" if hasattr(os, "getuid") else "unknown_user"
    name = re.sub(r"[^\w.-]", "_", f"torchinductor_{user}_{level}")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(tempfile.gettempdir(), name)


def _main(argv: list[str]) -> int:
    """``python -m posenc_course.numerics [--record | --check]``: print, record or check this machine's digest."""
    digest = probe_digest()
    if argv == ["--record"]:
        print(record_reference(digest))
        return 0
    matches = digest == reference()["digest"]
    if argv == ["--check"]:
        print(describe(matches))
        return 0 if matches else 1
    if argv:
        raise SystemExit(f"usage: python -m posenc_course.numerics [--record | --check], got {' '.join(argv)!r}")
    print(f"probe digest {digest}\nrecorded     {reference()['digest']}\n{describe(matches)}")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))

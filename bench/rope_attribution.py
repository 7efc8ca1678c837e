"""Why a library RoPE row misses its peer: each peer is also timed doing the work the library does and it does not.

    python bench/rope_attribution.py            # the cells docs/rope-speed.md discusses (make bench's settings)
    python bench/rope_attribution.py --quick    # tiny shapes, a smoke test in seconds

Rows, per cell (shape, dtype), each a ratio to the first row of its group, round by round:

* interleaved, eager: Meta's complex multiply with its table ready (``freqs_cis``); the same multiply
  with the table built from half-width cos/sin in every call (as the library's API takes them); the
  library's ``apply_rope_qk``.
* half, compiled: Hugging Face's ``rotate_half`` formula with full-width tables ready; with the tables
  built from half-width cos/sin in every call; computed in float32 and rounded once (as the library
  does); the library's ``apply_rope_qk``.

Every row rotates q and k by the same angles (``rows`` is what the test checks); only the work
around the multiply differs.
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections.abc import Callable

import torch
from torch import Tensor
from torch.utils.benchmark import Timer

from bench.rope_bench import hf_rotate_half as _hf
from bench.rope_bench import meta_complex as _meta
from posenc_lib.rotary import apply_rope_qk, rope_cos_sin, rope_inv_freq, rotate_half

Pair = tuple[Tensor, Tensor]


def _full(half: Tensor) -> Tensor:
    """(1, seq, d/2) -> (1, 1, seq, d): Hugging Face's full-width table."""
    return torch.cat((half, half), -1)[:, None]


def rows(shape: tuple[int, int, int, int], dtype: torch.dtype, compile: bool = True) -> dict[str, Callable[[], Pair]]:
    """The timed calls of one cell, grouped by the prefix before ':' (the first of a group is its baseline)."""
    gen = torch.Generator().manual_seed(0)
    q, k = (torch.randn(shape, generator=gen).to(dtype) for _ in range(2))
    cos, sin = rope_cos_sin(torch.arange(shape[2])[None], rope_inv_freq(shape[3]))  # (1, seq, d/2) float32
    ready = torch.complex(cos[0], sin[0])
    cos_d, sin_d = _full(cos).to(dtype), _full(sin).to(dtype)

    def hf_from_half(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor) -> Pair:
        return _hf(q, k, _full(cos).to(q.dtype), _full(sin).to(q.dtype))

    def hf_float32(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor) -> Pair:
        c, s = _full(cos), _full(sin)
        turn = lambda x: (x.float() * c + rotate_half(x.float()) * s).to(x.dtype)  # noqa: E731
        return turn(q), turn(k)

    def library_half(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor) -> Pair:
        return apply_rope_qk(q, k, cos, sin, "half")

    fast = (lambda f: torch.compile(f, dynamic=False, fullgraph=True)) if compile else (lambda f: f)
    hf, hf_half, hf_f32, lib_half = fast(_hf), fast(hf_from_half), fast(hf_float32), fast(library_half)
    return {
        "interleaved eager: Meta, table ready": lambda: _meta(q, k, ready),
        "interleaved eager: Meta, table from cos/sin": lambda: _meta(q, k, torch.complex(cos[0], sin[0])),
        "interleaved eager: library": lambda: apply_rope_qk(q, k, cos, sin, "interleaved"),
        "half compiled: HF, tables ready": lambda: hf(q, k, cos_d, sin_d),
        "half compiled: HF, tables from cos/sin": lambda: hf_half(q, k, cos, sin),
        "half compiled: HF in float32": lambda: hf_f32(q, k, cos, sin),
        "half compiled: library": lambda: lib_half(q, k, cos, sin),
    }


def measure(cases: dict[str, Callable[[], Pair]], rounds: int, min_run_time: float) -> dict[str, list[float]]:
    """Seconds per call of every row, in interleaved rounds (round r starts r rows later)."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    names = list(cases)
    with torch.no_grad():
        for fn in cases.values():
            fn(), fn()  # compile and warm up
        for r in range(rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                timer = Timer("f()", globals={"f": cases[name]}, num_threads=torch.get_num_threads())
                times[name].append(timer.blocked_autorange(min_run_time=min_run_time).median)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny shapes, one short round")
    args = parser.parse_args()
    cells = ([((1, 2, 8, 8), torch.float32)] if args.quick else
             [((8, 8, 256, 64), torch.float32), ((8, 8, 256, 64), torch.bfloat16), ((1, 32, 2048, 128), torch.bfloat16)])
    for shape, dtype in cells:
        times = measure(rows(shape, dtype), rounds=1 if args.quick else 9, min_run_time=0.01 if args.quick else 0.5)
        print(f"\n{shape} {dtype}, {torch.get_num_threads()} threads, load {os.getloadavg()[0]:.2f}")
        for group in dict.fromkeys(name.split(":")[0] for name in times):
            members = [name for name in times if name.startswith(group + ":")]
            base = times[members[0]]
            for name in members:
                ratios = [a / b for a, b in zip(times[name], base)]
                spread = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
                print(f"  {name:45s} {statistics.median(times[name]) * 1e6:9.1f} us  "
                      f"{statistics.median(ratios):.2f}x ({spread[0]:.2f}-{spread[2]:.2f})")


if __name__ == "__main__":
    main()

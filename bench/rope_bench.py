"""RoPE speed: the library's rotation beside the formulas people copy, eager and under torch.compile.

Rows of every (shape, dtype, mode) cell, each rotating q and k (batch, heads, seq, head_dim) by
positions 0..seq-1 into new tensors:

* ``HF rotate_half`` (peer, half layout): Hugging Face's ``q * cos + rotate_half(q) * sin`` with
  full-width tables in q's dtype (``apply_rotary_pos_emb`` of ``modeling_llama.py``).
* ``Meta complex`` (peer, interleaved layout): Meta's Llama reference, pairs as complex numbers in
  float32 times ``freqs_cis`` (``torch.polar``), then ``type_as(q)`` (``apply_rotary_emb``).
* ``library half`` / ``library interleaved``: :func:`posenc_lib.rotary.rope.apply_rope_qk`.
* ``..., hand-written backward`` (fwd+bwd only, not a library row): the library's formula with 0.2's
  custom backward (an ``autograd.Function`` whose backward is the same rotation by -angle) instead of
  autograd's: the measurement behind dropping it.

Each row eager and ``compiled``: the same function under ``torch.compile(dynamic=False)``,
compiled (forward, and backward for fwd+bwd) during the correctness check, before any timing.
Modes: ``fwd`` under ``torch.no_grad``; ``fwd+bwd`` with q, k leaves that require grad, the call
then ``torch.autograd.backward`` with fixed output gradients (gradients reset to None each time).

Every row is reported as a ratio to the fastest peer of its layout in the same cell, taken round
by round; the target: the fastest library row of each layout within 1.05x of that peer.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from bench.common import Timing, format_seconds, interleaved_times
from posenc_lib.rotary.rope import _multipliers, _rotate, apply_rope_qk, rope_cos_sin, rope_inv_freq

SHAPES: tuple[tuple[int, int, int, int], ...] = ((8, 8, 256, 64), (1, 32, 2048, 128))
DTYPES: tuple[torch.dtype, ...] = (torch.float32, torch.bfloat16)
MODES: tuple[str, ...] = ("fwd", "fwd+bwd")
LAYOUTS: tuple[str, ...] = ("half", "interleaved")
LIMIT = 1.05  # the library within 5% of the fastest peer of its layout
_DTYPE_NAMES = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16", torch.float64: "fp64"}


# ----------------------------------------------------------------------------- the peers, from their published formulas


def hf_rotate_half(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor) -> tuple[Tensor, Tensor]:
    """Hugging Face: x * cos + rotate_half(x) * sin, tables (1, 1, seq, head_dim) in x's dtype."""

    def rotate_half(x: Tensor) -> Tensor:
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
        return torch.cat((-x2, x1), dim=-1)

    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def meta_complex(q: Tensor, k: Tensor, freqs_cis: Tensor) -> tuple[Tensor, Tensor]:
    """Meta's Llama: pairs (x[2i], x[2i+1]) as complex64 times freqs_cis (seq, head_dim/2), back to x's dtype."""

    def turn(x: Tensor) -> Tensor:
        z = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(z * freqs_cis).flatten(3).type_as(x)

    return turn(q), turn(k)


def library(layout: str) -> Callable[..., tuple[Tensor, Tensor]]:
    def rotate(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor) -> tuple[Tensor, Tensor]:
        return apply_rope_qk(q, k, cos, sin, layout)

    rotate.__name__ = f"library_{layout}"
    return rotate


class _HandWrittenBackward(torch.autograd.Function):
    """0.2's design: the library's rotation with its backward written by hand, the same rotation by -angle."""

    @staticmethod
    def forward(ctx, x: Tensor, cos: Tensor, sin: Tensor, layout: str) -> Tensor:  # type: ignore[override]
        ctx.save_for_backward(cos, sin)
        ctx.layout = layout
        return _rotate(x, _multipliers(cos, sin, layout, x.dtype), layout)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None, None, None]:  # type: ignore[override]
        cos, sin = ctx.saved_tensors
        return _rotate(grad, _multipliers(cos, -sin, ctx.layout, grad.dtype), ctx.layout), None, None, None


def hand_written_backward(layout: str) -> Callable[..., tuple[Tensor, Tensor]]:
    """The library's formula with the hand-written backward (the alternative to autograd's)."""
    def rotate(q: Tensor, k: Tensor, cos: Tensor, sin: Tensor) -> tuple[Tensor, Tensor]:
        return _HandWrittenBackward.apply(q, cos, sin, layout), _HandWrittenBackward.apply(k, cos, sin, layout)

    rotate.__name__ = f"hand_written_{layout}"
    return rotate


# ----------------------------------------------------------------------------- inputs and rows


@dataclass
class RopeInputs:
    """One (shape, dtype) cell's tensors, built outside the timing. angles: (seq, head_dim/2) float32."""

    q: Tensor
    k: Tensor
    dq: Tensor
    dk: Tensor
    angles: Tensor
    tables: dict[str, tuple[Tensor, ...]]  # the table arguments of each method family


def make_inputs(shape: Sequence[int], dtype: torch.dtype, seed: int = 0, base: float = 10000.0) -> RopeInputs:
    if len(shape) != 4 or shape[-1] % 2:
        raise ValueError(f"shape must be (batch, heads, seq, head_dim) with an even head_dim, got {tuple(shape)}")
    gen = torch.Generator().manual_seed(seed)
    q, k, dq, dk = (torch.randn(tuple(shape), generator=gen).to(dtype) for _ in range(4))
    positions = torch.arange(shape[2])
    inv_freq = rope_inv_freq(shape[3], base)
    angles = positions.float()[:, None] * inv_freq  # float32, as every method computes them
    full = torch.cat((angles, angles), dim=-1)[None, None]
    tables = {
        "hf": (full.cos().to(dtype), full.sin().to(dtype)),
        "meta": (torch.polar(torch.ones_like(angles), angles),),
        "library": rope_cos_sin(positions[None], inv_freq, dtype=dtype),
    }
    return RopeInputs(q, k, dq, dk, angles, tables)


@dataclass(frozen=True)
class Method:
    name: str
    layout: str
    peer: bool
    family: str  # which tables it takes
    fn: Callable[..., tuple[Tensor, Tensor]]
    alternative: bool = False  # a design the library did not take, timed in fwd+bwd only; never a library row

    @property
    def library(self) -> bool:
        return not self.peer and not self.alternative


def _methods() -> list[Method]:
    plain = [Method("HF rotate_half", "half", True, "hf", hf_rotate_half),
             Method("Meta complex", "interleaved", True, "meta", meta_complex),
             Method("library half", "half", False, "library", library("half")),
             Method("library interleaved", "interleaved", False, "library", library("interleaved")),
             Method("library half, hand-written backward", "half", False, "library", hand_written_backward("half"), True),
             Method("library interleaved, hand-written backward", "interleaved", False, "library",
                    hand_written_backward("interleaved"), True)]
    rows = []
    for m in plain:
        compiled = torch.compile(m.fn, dynamic=False, fullgraph=True, recompile_limit=64, isolate_recompiles=True)
        rows += [m, Method(f"{m.name}, compiled", m.layout, m.peer, m.family, compiled, m.alternative)]
    return rows


METHODS: list[Method] = _methods()
METHOD_NAMES: list[str] = [m.name for m in METHODS]
PEERS: dict[str, list[str]] = {layout: [m.name for m in METHODS if m.peer and m.layout == layout] for layout in LAYOUTS}


def methods(mode: str) -> list[Method]:
    """The rows timed in ``mode``: every row in fwd+bwd; the alternatives' forward is the library's, so not in fwd."""
    return [m for m in METHODS if mode != "fwd" or not m.alternative]


def _call(m: Method, x: RopeInputs, mode: str, q: Tensor, k: Tensor) -> Callable[[], object]:
    tables = x.tables[m.family]
    if mode == "fwd":
        def forward() -> object:
            with torch.no_grad():
                return m.fn(q, k, *tables)
        return forward

    def forward_backward() -> object:
        outs = m.fn(q, k, *tables)
        torch.autograd.backward(outs, (x.dq, x.dk))
        grads = (q.grad, k.grad)
        q.grad = k.grad = None
        return outs, grads
    return forward_backward


def cases(x: RopeInputs, mode: str) -> dict[str, Callable[[], object]]:
    """The timed call of every row in this mode (fwd+bwd on leaves of their own, shared by the rows)."""
    if mode == "fwd":
        q, k = x.q, x.k
    else:
        q, k = x.q.clone().requires_grad_(), x.k.clone().requires_grad_()
    return {m.name: _call(m, x, mode, q, k) for m in methods(mode)}


# ----------------------------------------------------------------------------- correctness before timing


def _reference(x: Tensor, angles: Tensor, layout: str, sign: float = 1.0) -> Tensor:
    """x turned by sign * angles in float64, pairs of the layout."""
    c = angles.shape[-1]
    cos, sin = angles.double().cos(), sign * angles.double().sin()
    x = x.double()
    x1, x2 = (x[..., :c], x[..., c:]) if layout == "half" else (x[..., 0::2], x[..., 1::2])
    r1, r2 = x1 * cos - x2 * sin, x2 * cos + x1 * sin
    return torch.cat((r1, r2), -1) if layout == "half" else torch.stack((r1, r2), -1).flatten(-2)


def check_methods(x: RopeInputs) -> None:
    """Every row's outputs (and gradients: the inverse rotation of the output gradients) against float64.

    Runs every compiled row once in each mode, so compiling happens here, not in the timing.
    """
    tol = 1e-5 if x.q.dtype == torch.float32 else 0.05
    for mode in MODES:
        for name, case in cases(x, mode).items():
            layout = next(m.layout for m in METHODS if m.name == name)
            got = case()
            outs, grads = (got, None) if mode == "fwd" else got
            expected = [_reference(t, x.angles, layout) for t in (x.q, x.k)]
            for out, want in zip(outs, expected):
                err = (out.double() - want).abs().max().item()
                assert err <= tol, f"{name} ({mode}): output off by {err:.3g}"
            if grads is not None:
                for grad, seed in zip(grads, (x.dq, x.dk)):
                    err = (grad.double() - _reference(seed, x.angles, layout, -1.0)).abs().max().item()
                    assert err <= tol, f"{name} ({mode}): gradient off by {err:.3g}"


# ----------------------------------------------------------------------------- timing


@dataclass(frozen=True)
class RopeResult:
    shape: tuple[int, ...]
    dtype: torch.dtype
    mode: str
    method: str
    timing: Timing


def run_rope_bench(shapes: Sequence[Sequence[int]] = SHAPES, rounds: int = 7, threads: int = 2,
                   min_block_s: float = 0.02, max_other_cores: float | None = None) -> list[RopeResult]:
    """Check, then time every row of every (shape, dtype, mode) cell in interleaved rounds (a round during which
    other processes took more than ``max_other_cores`` cores is measured again)."""
    results = []
    for shape in shapes:
        for dtype in DTYPES:
            x = make_inputs(shape, dtype)
            check_methods(x)
            for mode in MODES:
                times = interleaved_times(cases(x, mode), rounds=rounds, threads=threads, min_block_s=min_block_s,
                                          max_other_cores=max_other_cores)
                results += [RopeResult(tuple(shape), dtype, mode, name, t) for name, t in times.items()]
    return results


@dataclass(frozen=True)
class Ratio:
    """A time ratio measured round by round (both timed in the same interleaved rounds): median and quartiles."""

    median: float
    low: float
    high: float

    @classmethod
    def of(cls, numerator: Timing, denominator: Timing) -> Ratio:
        per_round = [a / b for a, b in zip(numerator.samples, denominator.samples)]
        if len(per_round) < 2:
            return cls(per_round[0], per_round[0], per_round[0])
        low, median, high = statistics.quantiles(per_round, n=4, method="inclusive")
        return cls(median, low, high)

    def __str__(self) -> str:
        """1.05× (0.98–1.12): the median and the middle half of the rounds (first to third quartile)."""
        return f"{self.median:.2f}× ({self.low:.2f}–{self.high:.2f})"


def _cells(results: Sequence[RopeResult]) -> dict[tuple, dict[str, Timing]]:
    cells: dict[tuple, dict[str, Timing]] = {}
    for r in results:
        cells.setdefault((r.shape, r.dtype, r.mode), {})[r.method] = r.timing
    return cells


def fastest_peer(cell: dict[str, Timing], layout: str) -> str:
    return min(PEERS[layout], key=lambda name: cell[name].median)


@dataclass(frozen=True)
class Target:
    """The fastest library row of a layout against the fastest peer of that layout in one cell."""

    cell: tuple
    layout: str
    row: str
    peer: str
    ratio: Ratio

    @property
    def met(self) -> bool:
        return self.ratio.median <= LIMIT

    @property
    def text(self) -> str:
        shape, dtype, mode = self.cell
        return f"{_DTYPE_NAMES[dtype]} {mode} {shape}, {self.layout}: {self.row} vs {self.peer}"


def evaluate_targets(results: Sequence[RopeResult]) -> list[Target]:
    targets = []
    for cell, times in _cells(results).items():
        for layout in LAYOUTS:
            peer = fastest_peer(times, layout)
            ours = min((m.name for m in METHODS if m.library and m.layout == layout), key=lambda n: times[n].median)
            targets.append(Target(cell, layout, ours, peer, Ratio.of(times[ours], times[peer])))
    return targets


RATIO_NOTE = (
    "Each ratio is the row's time over the fastest peer of its layout in the same cell (half: `HF rotate_half` "
    "eager or compiled; interleaved: `Meta complex` eager or compiled; the peer is marked *), taken round by "
    "round: the median over rounds and, in brackets, the middle half of the rounds (first to third quartile). "
    "The `hand-written backward` rows (fwd+bwd only) are the library's formula with 0.2's custom backward (the "
    "rotation by -angle, an `autograd.Function`) instead of autograd's: not library rows, the measurement behind "
    "dropping it."
)


def rope_tables_markdown(results: Sequence[RopeResult]) -> str:
    """One table per shape: rows = methods, columns = (dtype, mode): time and ratio to the fastest peer of the layout."""
    cells = _cells(results)
    shapes = list(dict.fromkeys(r.shape for r in results))
    columns = [(d, m) for d in dict.fromkeys(r.dtype for r in results) for m in MODES]
    parts = [RATIO_NOTE]
    for shape in shapes:
        head = "| method | " + " | ".join(f"{_DTYPE_NAMES[d]} {m} | ratio" for d, m in columns) + " |"
        rows = [head, "|---|" + "---:|---:|" * len(columns)]
        for m in METHODS:
            row = []
            for d, mode in columns:
                times = cells.get((shape, d, mode))
                if times is None or m.name not in times:
                    row += ["n/a", "n/a"]
                    continue
                peer = fastest_peer(times, m.layout)
                star = "*" if m.name == peer else ""
                row += [format_seconds(times[m.name].median), f"{Ratio.of(times[m.name], times[peer])}{star}"]
            rows.append(f"| {m.name} | " + " | ".join(row) + " |")
        timings = [(cell, next(iter(times.values()))) for cell, times in cells.items() if cell[0] == shape]
        spread = max(t.spread for (s, _, _), times in cells.items() if s == shape for t in times.values())
        discarded = sum(t.discarded for _, t in timings)
        loads = [t.other_cores for _, t in timings if t.other_cores is not None]
        load = f"; other processes' CPU during a kept round: at most {max(loads):.2f} cores" if loads else ""
        parts.append(f"### (batch, heads, seq, head_dim) = {shape}\n\n" + "\n".join(rows)
                     + f"\n\nLargest spread in this table (interquartile range over rounds / median): {spread:.0%}. "
                     + f"Rounds discarded because other processes took CPU: {discarded}{load}.")
    return "\n\n".join(parts)


def targets_markdown(targets: Sequence[Target]) -> str:
    met = sum(t.met for t in targets)
    lines = [f"The fastest library row of each layout within {LIMIT:.2f}× the fastest peer of that layout: "
             f"{met} of {len(targets)} met.", "",
             "| cell, layout: fastest library row vs fastest peer | ratio | target | |", "|---|---:|---:|---|"]
    lines += [f"| {t.text} | {t.ratio} | ≤ {LIMIT:.2f}× | {'MET' if t.met else 'NOT MET'} |" for t in targets]
    return "\n".join(lines)

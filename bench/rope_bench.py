"""How fast is RoPE? The library against the memory floor and the two textbook formulas.

RoPE does a handful of multiply-adds per element it reads, so on a CPU its speed is set by
memory traffic. The fair yardstick is therefore the *floor*: the time to copy q and k into
preallocated tensors (read every element once, write it once). Every method is reported as a
multiple of that floor, measured in the same interleaved rounds.

Methods (q, k: (batch, heads, seq, head_dim); the tables are built once, outside the timing):

* ``rounding alone`` (bfloat16/float16 only): ``copy_`` of float32 copies of q and k into
  preallocated tensors of the benchmark dtype: the cost of rounding every result once, which
  any RoPE that computes in float32 (all of them here) pays on top of its memory traffic.
* ``rotate_half formula``: Hugging Face's ``q * cos + rotate_half(q) * sin`` with full-width
  cos/sin of shape (1, 1, seq, head_dim), allocating its outputs as it does in a model.
* ``complex formula``: Meta LLaMA's ``view_as_real(view_as_complex(q) * freqs_cis)`` with a
  (seq, head_dim/2) complex64 table; float32 only (PyTorch has no bfloat16 complex dtype).
* ``library <layout>, in place``: ``apply_rope_qk(q, k, cos, sin, layout, inplace=True)``.
  Timing it repeatedly on the same q and k just keeps turning them; nothing is re-copied, like
  the floor. In bfloat16 the rounded cos/sin do not keep norms exactly (cos^2 + sin^2 differs
  from 1 by up to ~2^-8), so over some 10^4 turns values drift by orders of magnitude (towards
  overflow, or towards subnormals whose arithmetic is very slow): the case's q and k are restored
  from the inputs, untimed, before every round (a round makes a few thousand calls at most).
* ``library <layout>, out=``: ``apply_rope_qk(q, k, cos, sin, layout, out=(q_out, k_out))`` into
  preallocated buffers: exactly the floor's reads and writes.
* ``library <layout>, new output``: ``apply_rope_qk(q, k, cos, sin, layout)``: allocates its
  outputs, like the two formulas; this is also the path autograd uses.
* ``library half, compiled, ...`` (with ``compiled=True``, the default): the same three calls with
  ``compiled=True``, the library's torch.compile path (inductor's one-pass loop for the half
  layout; the interleaved layout has no compiled variant), compiled during the correctness check,
  before any timing.

Forward + backward: q and k are leaves that require grad; one call runs the method and then
``torch.autograd.backward((q_out, k_out), (dq_out, dk_out))`` with preallocated output
gradients, and resets ``q.grad``/``k.grad`` to None so nothing accumulates (each backward writes
fresh gradient tensors, as a training step does). No scalar loss, so no extra ops. The
forward+backward floor is four copies into preallocated tensors (q, k, and the two gradients),
i.e. twice the forward floor's traffic. In-place and out= variants do not apply (autograd
forbids both on tensors it records).

Before timing, every method's output (and, for forward+backward, its gradients) is checked
against a float64 rotation of the same inputs, so a fast wrong kernel cannot win.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from posenc_lib.encodings.rotary.rope import apply_rope, apply_rope_qk, rope_cos_sin

from .common import Timing, format_seconds, interleaved_times

__all__ = [
    "SHAPES",
    "DTYPES",
    "MODES",
    "rotate_half_formula",
    "complex_formula",
    "RopeInputs",
    "make_inputs",
    "method_names",
    "check_methods",
    "RopeResult",
    "run_rope_bench",
    "rope_tables_markdown",
    "Target",
    "evaluate_targets",
    "targets_markdown",
]

SHAPES: tuple[tuple[int, int, int, int], ...] = ((8, 8, 256, 64), (1, 32, 2048, 128))
DTYPES: tuple[torch.dtype, ...] = (torch.float32, torch.bfloat16)
MODES: tuple[str, ...] = ("fwd", "fwd+bwd")
LAYOUTS: tuple[str, ...] = ("half", "interleaved")
FLOOR = "floor (copy_ into buffers)"
ROTATE_HALF = "rotate_half formula (HF)"
COMPLEX = "complex formula (Meta)"
ROUNDING = "rounding alone (copy_ from float32)"
_DTYPE_NAMES = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16", torch.float64: "fp64"}


# ----------------------------------------------------------------------------- the textbook formulas


def _rotate_half(x: Tensor) -> Tensor:
    """(x1, x2) -> (-x2, x1) on the two halves of the last dim."""
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rotate_half_formula(q: Tensor, k: Tensor, cos_full: Tensor, sin_full: Tensor) -> tuple[Tensor, Tensor]:
    """Hugging Face style RoPE. q, k: (batch, heads, seq, d); cos_full, sin_full: (1, 1, seq, d) in q's dtype."""
    return q * cos_full + _rotate_half(q) * sin_full, k * cos_full + _rotate_half(k) * sin_full


def complex_formula(q: Tensor, k: Tensor, freqs_cis: Tensor) -> tuple[Tensor, Tensor]:
    """Meta LLaMA style RoPE (interleaved pairs). q, k: (batch, heads, seq, d); freqs_cis: (seq, d/2) complex64."""

    def turn(x: Tensor) -> Tensor:
        z = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(z * freqs_cis).flatten(-2).type_as(x)

    return turn(q), turn(k)


# ----------------------------------------------------------------------------- inputs


@dataclass
class RopeInputs:
    """Inputs of one (shape, dtype) cell, all built outside the timed code.

    q, k, dq, dk: (batch, heads, seq, head_dim) in the benchmark dtype (dq, dk seed the backward);
    angles: (seq, head_dim/2) float32, position m times theta_i, shared by every method's tables.
    """

    q: Tensor
    k: Tensor
    dq: Tensor
    dk: Tensor
    angles: Tensor
    cos: Tensor  # (1, seq, head_dim/2), the library's half-width table
    sin: Tensor
    cos_full: Tensor  # (1, 1, seq, head_dim), rotate_half's full-width table
    sin_full: Tensor
    freqs_cis: Tensor | None  # (seq, head_dim/2) complex64; None when the dtype has no complex type


def make_inputs(shape: Sequence[int], dtype: torch.dtype, seed: int = 0, base: float = 10000.0) -> RopeInputs:
    """Random q, k, gradient seeds and every method's tables for positions 0..seq-1."""
    if len(shape) != 4 or shape[-1] % 2:
        raise ValueError(f"shape must be (batch, heads, seq, head_dim) with an even head_dim, got {tuple(shape)}")
    gen = torch.Generator().manual_seed(seed)
    q, k, dq, dk = (torch.randn(tuple(shape), generator=gen).to(dtype) for _ in range(4))
    seq, head_dim = shape[2], shape[3]
    inv_freq = 1.0 / base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    positions = torch.arange(seq)
    angles = positions.float()[:, None] * inv_freq[None, :]  # float32, as both reference codes do
    cos, sin = rope_cos_sin(positions[None], inv_freq, dtype=dtype)
    full = torch.cat((angles, angles), dim=-1)[None, None]
    freqs_cis = torch.polar(torch.ones_like(angles), angles) if dtype == torch.float32 else None
    return RopeInputs(q, k, dq, dk, angles, cos, sin, full.cos().to(dtype), full.sin().to(dtype), freqs_cis)


# ----------------------------------------------------------------------------- the methods


VARIANTS: tuple[str, ...] = ("in place", "out=", "new output")
COMPILED_LAYOUTS: tuple[str, ...] = ("half",)  # the layouts apply_rope(compiled=True) compiles


def _library_rows(compiled: bool) -> list[tuple[str, str, bool]]:
    """(row name, layout, compiled flag) of every library row, in table order."""
    rows = []
    for layout in LAYOUTS:
        for flag in (False, True) if compiled and layout in COMPILED_LAYOUTS else (False,):
            rows += [(f"library {layout}, {'compiled, ' if flag else ''}{variant}", layout, flag) for variant in VARIANTS]
    return rows


def method_names(compiled: bool = True) -> list[str]:
    """Row labels in table order (with ``compiled``, also the library's torch.compile path)."""
    return [FLOOR, ROUNDING, ROTATE_HALF, COMPLEX] + [name for name, _, _ in _library_rows(compiled)]


def _forward_cases(
    x: RopeInputs, compiled: bool = True
) -> tuple[dict[str, Callable[[], object]], dict[str, Callable[[], object]]]:
    """One zero-argument function per method computing the forward only (no autograd).

    Also returns, for the in-place methods, the (untimed) reset that restores their q and k.
    """
    q_dst, k_dst = torch.empty_like(x.q), torch.empty_like(x.k)

    def floor() -> None:
        q_dst.copy_(x.q)
        k_dst.copy_(x.k)

    cases: dict[str, Callable[[], object]] = {
        FLOOR: floor,
        ROTATE_HALF: lambda: rotate_half_formula(x.q, x.k, x.cos_full, x.sin_full),
    }
    resets: dict[str, Callable[[], object]] = {}
    if x.freqs_cis is not None:
        cases[COMPLEX] = lambda: complex_formula(x.q, x.k, x.freqs_cis)
    if x.q.dtype in (torch.bfloat16, torch.float16):  # what rounding float32 results to the dtype costs by itself
        q32, k32 = x.q.float(), x.k.float()
        cases[ROUNDING] = lambda: (q_dst.copy_(q32), k_dst.copy_(k32))
    for name, layout, flag in _library_rows(compiled):
        if name.endswith("in place"):
            q_own, k_own = x.q.clone(), x.k.clone()  # turned again and again, in place
            cases[name] = lambda q=q_own, k=k_own, lay=layout, flag=flag: apply_rope_qk(
                q, k, x.cos, x.sin, lay, inplace=True, compiled=flag)
            resets[name] = lambda q=q_own, k=k_own: (q.copy_(x.q), k.copy_(x.k))
        elif name.endswith("out="):
            outs = (torch.empty_like(x.q), torch.empty_like(x.k))
            cases[name] = lambda lay=layout, flag=flag, outs=outs: apply_rope_qk(
                x.q, x.k, x.cos, x.sin, lay, compiled=flag, out=outs)
        else:
            cases[name] = lambda lay=layout, flag=flag: apply_rope_qk(x.q, x.k, x.cos, x.sin, lay, compiled=flag)
    return cases, resets


def _autograd_methods(x: RopeInputs, compiled: bool = True) -> dict[str, Callable[[Tensor, Tensor], tuple[Tensor, Tensor]]]:
    """Differentiable (q, k) -> (q_out, k_out) per method that supports autograd."""
    methods: dict[str, Callable[[Tensor, Tensor], tuple[Tensor, Tensor]]] = {
        ROTATE_HALF: lambda q, k: rotate_half_formula(q, k, x.cos_full, x.sin_full),
    }
    if x.freqs_cis is not None:
        methods[COMPLEX] = lambda q, k: complex_formula(q, k, x.freqs_cis)
    for name, layout, flag in _library_rows(compiled):
        if name.endswith("new output"):
            methods[name] = lambda q, k, lay=layout, flag=flag: apply_rope_qk(q, k, x.cos, x.sin, lay, compiled=flag)
    return methods


def _forward_backward_cases(x: RopeInputs, compiled: bool = True) -> dict[str, Callable[[], object]]:
    """One zero-argument function per method running forward then backward with fixed output gradients."""
    bufs = [torch.empty_like(t) for t in (x.q, x.k, x.dq, x.dk)]

    def floor() -> None:
        for dst, src in zip(bufs, (x.q, x.k, x.dq, x.dk)):
            dst.copy_(src)

    cases: dict[str, Callable[[], object]] = {FLOOR: floor}
    for name, method in _autograd_methods(x, compiled).items():
        q, k = x.q.clone().requires_grad_(), x.k.clone().requires_grad_()

        def step(q: Tensor = q, k: Tensor = k, method: Callable = method) -> None:
            torch.autograd.backward(method(q, k), (x.dq, x.dk))
            q.grad = k.grad = None

        cases[name] = step
    return cases


# ----------------------------------------------------------------------------- correctness first


def _reference(x: Tensor, angles: Tensor, layout: str, sign: float = 1.0) -> Tensor:
    """Exact (float64) rotation of x's pairs by sign * angles (seq, head_dim/2)."""
    xd, c = x.double(), angles.shape[-1]
    cos, sin = angles.double().cos(), sign * angles.double().sin()
    x1, x2 = (xd[..., :c], xd[..., c:]) if layout == "half" else (xd[..., 0::2], xd[..., 1::2])
    r1, r2 = x1 * cos - x2 * sin, x2 * cos + x1 * sin
    return torch.cat((r1, r2), dim=-1) if layout == "half" else torch.stack((r1, r2), dim=-1).flatten(-2)


def _layout_of(name: str) -> str:
    return "interleaved" if name == COMPLEX or "interleaved" in name else "half"


def _tolerance(dtype: torch.dtype) -> dict[str, float]:
    # bf16: output rounding (2^-9 relative) plus rounded cos/sin and products, |x| up to ~5.
    return {"rtol": 2e-2, "atol": 4e-2} if dtype == torch.bfloat16 else {"rtol": 1e-5, "atol": 2e-5}


def check_methods(x: RopeInputs, compiled: bool = True) -> None:
    """Assert that every method rotates q and k (and back-propagates) like the float64 reference."""
    tol = _tolerance(x.q.dtype)
    expected = {lay: (_reference(x.q, x.angles, lay), _reference(x.k, x.angles, lay)) for lay in LAYOUTS}
    cases, resets = _forward_cases(x, compiled)
    for name, fn in cases.items():
        if name in (FLOOR, ROUNDING):  # yardsticks, not rotations
            continue
        if name in resets:  # an in-place case turns its own copies of q, k: start them from the inputs
            resets[name]()
        got = fn()
        for out, ref in zip(got, expected[_layout_of(name)]):
            torch.testing.assert_close(out.double(), ref, **tol, msg=lambda m, name=name: f"{name}: {m}")
    for name, method in _autograd_methods(x, compiled).items():
        q, k = x.q.clone().requires_grad_(), x.k.clone().requires_grad_()
        torch.autograd.backward(method(q, k), (x.dq, x.dk))
        for grad, seed in ((q.grad, x.dq), (k.grad, x.dk)):
            ref = _reference(seed, x.angles, _layout_of(name), sign=-1.0)  # the inverse rotation
            torch.testing.assert_close(grad.double(), ref, **tol, msg=lambda m, name=name: f"{name} grad: {m}")


# ----------------------------------------------------------------------------- running and reporting


@dataclass(frozen=True)
class RopeResult:
    """One timed cell: a method at a (shape, dtype, mode)."""

    shape: tuple[int, int, int, int]
    dtype: torch.dtype
    mode: str
    method: str
    timing: Timing


def run_rope_bench(
    shapes: Sequence[Sequence[int]] = SHAPES,
    dtypes: Sequence[torch.dtype] = DTYPES,
    rounds: int = 5,
    threads: int = 2,
    min_block_s: float = 0.02,
    compiled: bool = True,
    log: Callable[[str], None] = print,
) -> list[RopeResult]:
    """Check, then time, every method at every (shape, dtype, mode); methods interleaved within a cell.

    ``compiled`` includes the library's torch.compile path (its first call per shape and dtype
    compiles, during the check, before any timing).
    """
    results = []
    for shape in shapes:
        for dtype in dtypes:
            x = make_inputs(shape, dtype)
            check_methods(x, compiled)
            for mode in MODES:
                cases, resets = _forward_cases(x, compiled) if mode == "fwd" else (_forward_backward_cases(x, compiled), {})
                times = interleaved_times(cases, rounds, threads, min_block_s, reset=resets)
                floor = times[FLOOR].median
                log(f"rope {tuple(shape)} {_DTYPE_NAMES[dtype]} {mode}: " + ", ".join(
                    f"{name} {format_seconds(t.median)} ({t.median / floor:.2f}x)" for name, t in times.items()))
                results += [RopeResult(tuple(shape), dtype, mode, name, t) for name, t in times.items()]
            del x
    return results


def _lookup(results: Sequence[RopeResult]) -> dict[tuple, Timing]:
    return {(r.shape, r.dtype, r.mode, r.method): r.timing for r in results}


def rope_tables_markdown(results: Sequence[RopeResult]) -> str:
    """One markdown table per shape: rows = methods, columns = (dtype, mode) time and ratio to the floor."""
    table = _lookup(results)
    shapes = list(dict.fromkeys(r.shape for r in results))
    dtypes = list(dict.fromkeys(r.dtype for r in results))
    columns = [(d, m) for d in dtypes for m in MODES]
    parts = []
    for shape in shapes:
        head = "| method | " + " | ".join(f"{_DTYPE_NAMES[d]} {m} | × floor" for d, m in columns) + " |"
        rule = "|---|" + "---:|---:|" * len(columns)
        rows = []
        for name in method_names(compiled=True):  # rows that were not run are left out
            cells = []
            for d, m in columns:
                t, floor = table.get((shape, d, m, name)), table.get((shape, d, m, FLOOR))
                cells += ["n/a", "n/a"] if t is None or floor is None else [
                    format_seconds(t.median), f"{t.median / floor.median:.2f}×"]
            if any(c != "n/a" for c in cells):
                rows.append(f"| {name} | " + " | ".join(cells) + " |")
        spread = max(table[key].spread for key in table if key[0] == shape)
        parts.append(
            f"### (batch, heads, seq, head_dim) = {shape}\n\n" + "\n".join([head, rule, *rows])
            + f"\n\nLargest spread in this table (interquartile range over rounds / median): {spread:.0%}."
        )
    return "\n\n".join(parts)


@dataclass(frozen=True)
class Target:
    """One acceptance target and what was measured."""

    text: str
    measured: float
    limit: float
    kind: str  # "max": measured <= limit passes; "min": measured >= limit passes

    @property
    def met(self) -> bool:
        return self.measured <= self.limit if self.kind == "max" else self.measured >= self.limit


def evaluate_targets(results: Sequence[RopeResult]) -> list[Target]:
    """The issue's speed targets, per layout, on whichever shapes and dtypes were run.

    A forward target is judged on the layout's fastest library row (eager or compiled; in place,
    out= or new output), and the target's text names that row; forward+backward on the fastest
    autograd row (new output, eager or compiled).
    """
    table = _lookup(results)
    targets = []

    def best(shape, dtype, mode, layout):
        """(row, time / floor) of the fastest library row of the layout, or None."""
        floor = table.get((shape, dtype, mode, FLOOR))
        rows = [(t.median, name) for (sh, dt, mo, name), t in table.items()
                if (sh, dt, mo) == (shape, dtype, mode) and name.startswith(f"library {layout},")]
        if floor is None or not rows:
            return None
        seconds, name = min(rows)
        return name, seconds / floor.median

    limits = {
        ((8, 8, 256, 64), torch.float32): 2.0,
        ((1, 32, 2048, 128), torch.float32): 1.5,
        ((8, 8, 256, 64), torch.bfloat16): 3.0,
        ((1, 32, 2048, 128), torch.bfloat16): 3.0,
    }
    for layout in LAYOUTS:
        for (shape, dtype), limit in limits.items():
            found = best(shape, dtype, "fwd", layout)
            if found is not None:
                targets.append(Target(f"{found[0]}: forward {_DTYPE_NAMES[dtype]} {shape} ≤ {limit}× floor",
                                      found[1], limit, "max"))
        shape = (1, 32, 2048, 128)
        found, formula = best(shape, torch.float32, "fwd", layout), table.get((shape, torch.float32, "fwd", ROTATE_HALF))
        if found is not None and formula is not None:
            fastest = table[(shape, torch.float32, "fwd", found[0])].median
            targets.append(Target(f"{found[0]}: ≥ 4× faster than rotate_half, forward fp32 {shape}",
                                  formula.median / fastest, 4.0, "min"))
        for shape in SHAPES:
            found = best(shape, torch.float32, "fwd+bwd", layout)
            if found is not None:
                targets.append(Target(f"{found[0]}: forward+backward fp32 {shape} ≤ 4× floor", found[1], 4.0, "max"))
    return targets


def targets_markdown(targets: Sequence[Target]) -> str:
    """Targets as a markdown table with the measured ratio and met / MISSED."""
    rows = [f"| {t.text} | {t.measured:.2f}× | {'met' if t.met else 'MISSED'} |" for t in targets]
    return "\n".join(["| target | measured | status |", "|---|---:|---|", *rows])

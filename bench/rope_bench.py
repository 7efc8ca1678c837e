"""How fast is RoPE? The library against the memory floors and the peers a CPU user would pick instead.

RoPE does a handful of multiply-adds per element it reads, so on a CPU its speed is set by
memory traffic. The fair yardstick is therefore a *floor*: the cheapest pass over q and k that
reads and writes what the method must. Each kind of method has its own floor, measured in the
same interleaved rounds, and every method is reported as a multiple of its kind's floor:

* ``floor, in place (mul_(1.0))``: ``q.mul_(1.0); k.mul_(1.0)`` on the case's own q and k (read
  every element, write it back where it was): the floor of the ``in place`` rows.
* ``floor, out= (copy_ into buffers)``: ``copy_`` of q and k into preallocated tensors: the floor
  of the ``out=`` rows and of ``rounding alone``.
* ``floor, new output (clone)``: ``q.clone(); k.clone()``, allocating the outputs and copying into
  them: the floor of the ``new output`` rows and of the peers, which allocate their outputs.
* ``floor, fwd+bwd (copy_ of q, k, dq, dk)``: four copies into preallocated tensors (q, k and the
  two gradients), i.e. twice the out= floor's traffic: the floor of every forward+backward row.

Methods (q, k: (batch, heads, seq, head_dim); the tables are built once, outside the timing):

* ``rounding alone`` (bfloat16/float16 only): ``copy_`` of float32 copies of q and k (forward+backward:
  and of the two output gradients) into preallocated tensors of the benchmark dtype: the cost of
  rounding every result once, which any RoPE that computes in float32 (all of them here) pays on
  top of its memory traffic. The bf16 targets are set against it.
* ``fixed cost`` (with the compiled rows): the library's compiled ``out=`` call on the last position
  alone, what a call costs besides its loop; the reasons of the targets not met quote it.
* ``rotate_half formula``: Hugging Face's ``q * cos + rotate_half(q) * sin`` with full-width
  cos/sin of shape (1, 1, seq, head_dim), allocating its outputs as it does in a model.
* ``rotate_half formula (HF), compiled``: the same formula under ``torch.compile`` (inductor,
  static shapes), as a CPU user of Hugging Face's code would run it; each (shape, dtype) compiles
  during the correctness check, before any timing, forward and backward alike (a few seconds each).
* ``complex formula``: Meta LLaMA's ``view_as_real(view_as_complex(q) * freqs_cis)`` with a
  (seq, head_dim/2) complex64 table; float32 only (PyTorch has no bfloat16 complex dtype).
* ``library <layout>, in place``: ``apply_rope_qk(q, k, cos, sin, layout, inplace=True)``.
  Timing it repeatedly on the same q and k just keeps turning them; nothing is re-copied, like
  its floor. In bfloat16 the rounded cos/sin do not keep norms exactly (cos^2 + sin^2 differs
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
fresh gradient tensors, as a training step does). No scalar loss, so no extra ops. In-place and
out= variants do not apply (autograd forbids both on tensors it records).

Before timing, every method's output (and, for forward+backward, its gradients) is checked
against a float64 rotation of the same inputs, so a fast wrong kernel cannot win.

Ratios are taken round by round (:class:`Ratio`): the median and the quartiles of the per-round
ratios. :func:`evaluate_targets` judges issue #23's targets and, for each one not met, says why
with the measurements of the same run (:func:`_why`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
import statistics
from dataclasses import dataclass, replace

import torch
from torch import Tensor

from posenc_lib.rotary.rope import apply_rope, apply_rope_qk, rope_cos_sin

from .common import Timing, format_seconds, interleaved_times

__all__ = [
    "SHAPES",
    "DTYPES",
    "MODES",
    "rotate_half_formula",
    "complex_formula",
    "floor_of",
    "RopeInputs",
    "make_inputs",
    "method_names",
    "check_methods",
    "RopeResult",
    "run_rope_bench",
    "rope_tables_markdown",
    "FIXED_COST",
    "Ratio",
    "Target",
    "evaluate_targets",
    "targets_markdown",
]

SHAPES: tuple[tuple[int, int, int, int], ...] = ((8, 8, 256, 64), (1, 32, 2048, 128))
DTYPES: tuple[torch.dtype, ...] = (torch.float32, torch.bfloat16)
MODES: tuple[str, ...] = ("fwd", "fwd+bwd")
LAYOUTS: tuple[str, ...] = ("half", "interleaved")
FLOOR_IN_PLACE = "floor, in place (mul_(1.0))"
FLOOR_OUT = "floor, out= (copy_ into buffers)"
FLOOR_NEW = "floor, new output (clone)"
FLOOR_FWD_BWD = "floor, fwd+bwd (copy_ of q, k, dq, dk)"
FLOORS: tuple[str, ...] = (FLOOR_IN_PLACE, FLOOR_OUT, FLOOR_NEW, FLOOR_FWD_BWD)
ROTATE_HALF = "rotate_half formula (HF)"
ROTATE_HALF_COMPILED = "rotate_half formula (HF), compiled"
COMPLEX = "complex formula (Meta)"
ROUNDING = "rounding alone (copy_ from float32)"
FIXED_COST = "fixed cost: library half, compiled, out= on one position"
_DTYPE_NAMES = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16", torch.float64: "fp64"}


# ----------------------------------------------------------------------------- the textbook formulas


def _rotate_half(x: Tensor) -> Tensor:
    """(x1, x2) -> (-x2, x1) on the two halves of the last dim."""
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rotate_half_formula(q: Tensor, k: Tensor, cos_full: Tensor, sin_full: Tensor) -> tuple[Tensor, Tensor]:
    """Hugging Face style RoPE. q, k: (batch, heads, seq, d); cos_full, sin_full: (1, 1, seq, d) in q's dtype."""
    return q * cos_full + _rotate_half(q) * sin_full, k * cos_full + _rotate_half(k) * sin_full


# one static-shape graph per (shape, dtype, grad mode), like the library's compiled path
_rotate_half_compiled = torch.compile(rotate_half_formula, dynamic=False, fullgraph=True, recompile_limit=64,
                                      isolate_recompiles=True)


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
    return [*FLOORS, ROUNDING, *([FIXED_COST] if compiled else []), ROTATE_HALF, ROTATE_HALF_COMPILED, COMPLEX] + [
        name for name, _, _ in _library_rows(compiled)]


def floor_of(method: str, mode: str) -> str:
    """The floor a method is scored against: its own kind's (forward+backward: four copies)."""
    if mode == "fwd+bwd":
        return FLOOR_FWD_BWD
    if method in FLOORS:
        return method
    if method.endswith("in place"):
        return FLOOR_IN_PLACE
    if method.endswith("out=") or method in (ROUNDING, FIXED_COST):
        return FLOOR_OUT
    return FLOOR_NEW


def _forward_cases(
    x: RopeInputs, compiled: bool = True
) -> tuple[dict[str, Callable[[], object]], dict[str, Callable[[], object]]]:
    """One zero-argument function per method computing the forward only (no autograd).

    Also returns, for the in-place methods, the (untimed) reset that restores their q and k.
    """
    q_dst, k_dst = torch.empty_like(x.q), torch.empty_like(x.k)
    q_own, k_own = x.q.clone(), x.k.clone()  # multiplied by 1.0 again and again: never changed

    def floor_out() -> None:
        q_dst.copy_(x.q)
        k_dst.copy_(x.k)

    cases: dict[str, Callable[[], object]] = {
        FLOOR_IN_PLACE: lambda: (q_own.mul_(1.0), k_own.mul_(1.0)),
        FLOOR_OUT: floor_out,
        FLOOR_NEW: lambda: (x.q.clone(), x.k.clone()),
        ROTATE_HALF: lambda: rotate_half_formula(x.q, x.k, x.cos_full, x.sin_full),
        ROTATE_HALF_COMPILED: lambda: _rotate_half_compiled(x.q, x.k, x.cos_full, x.sin_full),
    }
    resets: dict[str, Callable[[], object]] = {}
    if x.freqs_cis is not None:
        cases[COMPLEX] = lambda: complex_formula(x.q, x.k, x.freqs_cis)
    if x.q.dtype in (torch.bfloat16, torch.float16):  # what rounding float32 results to the dtype costs by itself
        q32, k32 = x.q.float(), x.k.float()
        cases[ROUNDING] = lambda: (q_dst.copy_(q32), k_dst.copy_(k32))
    if compiled:  # the same call on the last position alone: what a call costs besides the loop's work
        q_one, k_one = x.q[:, :, -1:].clone(), x.k[:, :, -1:].clone()
        outs_one = (torch.empty_like(q_one), torch.empty_like(k_one))
        cases[FIXED_COST] = lambda: apply_rope_qk(q_one, k_one, x.cos[:, -1:], x.sin[:, -1:], "half", compiled=True,
                                                  out=outs_one)
    for name, layout, flag in _library_rows(compiled):
        if name.endswith("in place"):
            q_turned, k_turned = x.q.clone(), x.k.clone()  # turned again and again, in place
            cases[name] = lambda q=q_turned, k=k_turned, lay=layout, flag=flag: apply_rope_qk(
                q, k, x.cos, x.sin, lay, inplace=True, compiled=flag)
            resets[name] = lambda q=q_turned, k=k_turned: (q.copy_(x.q), k.copy_(x.k))
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
        ROTATE_HALF_COMPILED: lambda q, k: _rotate_half_compiled(q, k, x.cos_full, x.sin_full),
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

    cases: dict[str, Callable[[], object]] = {FLOOR_FWD_BWD: floor}
    if x.q.dtype in (torch.bfloat16, torch.float16):  # rounding the two outputs and the two gradients
        wide = [t.float() for t in (x.q, x.k, x.dq, x.dk)]
        cases[ROUNDING] = lambda: [dst.copy_(src) for dst, src in zip(bufs, wide)]
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
        if name in (*FLOORS, ROUNDING):  # yardsticks, not rotations
            continue
        if name in resets:  # an in-place case turns its own copies of q, k: start them from the inputs
            resets[name]()
        got = fn()
        positions = slice(-1, None) if name == FIXED_COST else slice(None)
        for out, ref in zip(got, expected[_layout_of(name)]):
            torch.testing.assert_close(out.double(), ref[:, :, positions], **tol, msg=lambda m, name=name: f"{name}: {m}")
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
    compiles, during the check, before any timing, as the compiled rotate_half peer always does).
    """
    results = []
    for shape in shapes:
        for dtype in dtypes:
            x = make_inputs(shape, dtype)
            check_methods(x, compiled)
            for mode in MODES:
                cases, resets = _forward_cases(x, compiled) if mode == "fwd" else (_forward_backward_cases(x, compiled), {})
                times = interleaved_times(cases, rounds, threads, min_block_s, reset=resets)
                log(f"rope {tuple(shape)} {_DTYPE_NAMES[dtype]} {mode}: " + ", ".join(
                    f"{name} {format_seconds(t.median)} ({t.median / times[floor_of(name, mode)].median:.2f}x)"
                    for name, t in times.items()))
                results += [RopeResult(tuple(shape), dtype, mode, name, t) for name, t in times.items()]
            del x
    return results


def _lookup(results: Sequence[RopeResult]) -> dict[tuple, Timing]:
    return {(r.shape, r.dtype, r.mode, r.method): r.timing for r in results}


@dataclass(frozen=True)
class Ratio:
    """A time ratio measured round by round (both timed in the same interleaved rounds): median and quartiles."""

    median: float
    low: float  # first quartile over rounds
    high: float  # third quartile over rounds

    @classmethod
    def of(cls, numerator: Timing, denominator: Timing) -> Ratio:
        per_round = [a / b for a, b in zip(numerator.samples, denominator.samples)]
        if len(per_round) < 2:
            return cls(per_round[0], per_round[0], per_round[0])
        low, median, high = statistics.quantiles(per_round, n=4, method="inclusive")
        return cls(median, low, high)

    def __str__(self) -> str:
        """1.05× (0.98–1.12): the median and, over several rounds, the middle half of the rounds."""
        spread = f" ({self.low:.2f}–{self.high:.2f})" if self.high > self.low else ""
        return f"{self.median:.2f}×{spread}"


FLOOR_NOTE = (
    f"Each \"× floor\" is the row's time over the floor of its kind, timed in the same rounds, taken round by "
    f"round: the median over rounds and, in brackets, the middle half of the rounds (first to third quartile). "
    f"`in place` rows "
    f"over `{FLOOR_IN_PLACE}`; `out=` rows and `{ROUNDING}` over `{FLOOR_OUT}`; `new output` rows and the "
    f"peers (rotate_half, eager and compiled; complex), which allocate their outputs, over `{FLOOR_NEW}`; "
    f"every fwd+bwd cell over `{FLOOR_FWD_BWD}`."
)


def rope_tables_markdown(results: Sequence[RopeResult]) -> str:
    """One markdown table per shape: rows = methods, columns = (dtype, mode) time and ratio to the row's floor."""
    table = _lookup(results)
    shapes = list(dict.fromkeys(r.shape for r in results))
    dtypes = list(dict.fromkeys(r.dtype for r in results))
    columns = [(d, m) for d in dtypes for m in MODES]
    parts = [FLOOR_NOTE]
    for shape in shapes:
        head = "| method | " + " | ".join(f"{_DTYPE_NAMES[d]} {m} | × floor" for d, m in columns) + " |"
        rule = "|---|" + "---:|---:|" * len(columns)
        rows = []
        for name in method_names(compiled=True):  # rows that were not run are left out
            cells = []
            for d, m in columns:
                t, floor = table.get((shape, d, m, name)), table.get((shape, d, m, floor_of(name, m)))
                cells += ["n/a", "n/a"] if t is None or floor is None else [
                    format_seconds(t.median), str(Ratio.of(t, floor))]
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
    """One acceptance target and what was measured: a ratio of two rows' times, round by round."""

    text: str
    ratio: Ratio
    limit: float
    kind: str  # "max": measured <= limit passes; "min": measured >= limit passes
    why: str = ""  # when not met: what stands in the way, with the measurements of the same run that show it

    @property
    def measured(self) -> float:
        return self.ratio.median

    @property
    def met(self) -> bool:
        return self.measured <= self.limit if self.kind == "max" else self.measured >= self.limit


PEERS: tuple[str, ...] = (ROTATE_HALF, ROTATE_HALF_COMPILED, COMPLEX)


def evaluate_targets(results: Sequence[RopeResult]) -> list[Target]:
    """The issue's speed targets, on whichever shapes and dtypes were run.

    * every library row (eager and compiled): forward fp32 within 1.3× its own kind's floor;
    * the fastest library row of each layout no slower than the fastest peer, in every
      (shape, dtype, mode) where a peer ran;
    * the fastest library row of each layout: forward+backward fp32 within 1.5× its floor;
    * the fastest library row of each layout in bf16, forward and forward+backward: within 1.5×
      ``rounding alone`` of the same mode (rounding every result to bf16 once, which every
      method here pays, costs more than the bf16 copy itself).

    Each target's text names the row it was judged on; the peers' measured value is the fastest
    peer's time over the library row's (at least 1.0: the library is no slower). "Fastest" is by
    median time; every ratio is taken round by round (:class:`Ratio`).
    """
    table = _lookup(results)
    cells = list(dict.fromkeys((r.shape, r.dtype, r.mode) for r in results))
    library = {layout: [name for name, lay, _ in _library_rows(compiled=True) if lay == layout] for layout in LAYOUTS}

    def ratio(cell: tuple, numerator: str, denominator: str) -> Ratio:
        return Ratio.of(table[(*cell, numerator)], table[(*cell, denominator)])

    def fastest(cell: tuple, names: Sequence[str]) -> str | None:
        """The fastest of names that ran in cell (by median), or None."""
        return min((n for n in names if (*cell, n) in table), key=lambda n: table[(*cell, n)].median, default=None)

    def where(cell: tuple) -> str:
        return f"{cell[2]} {_DTYPE_NAMES[cell[1]]} {cell[0]}"

    def target(cell: tuple, text: str, measured: Ratio, limit: float, kind: str, row: str, goal: str) -> Target:
        judged = Target(text, measured, limit, kind)
        return judged if judged.met else replace(judged, why=_why(cell, row, goal, table))

    targets = []
    for cell in (c for c in cells if c[1:] == (torch.float32, "fwd")):
        for name in (n for layout in LAYOUTS for n in library[layout] if (*cell, n) in table):
            floor = floor_of(name, cell[2])
            targets.append(target(cell, f"{name}: {where(cell)} ≤ 1.3× {floor}", ratio(cell, name, floor), 1.3, "max",
                                  name, "floor"))
    bests = [(cell, best) for cell in cells for layout in LAYOUTS if (best := fastest(cell, library[layout]))]
    for cell, best in bests:
        if peer := fastest(cell, PEERS):
            targets.append(target(cell, f"{best}: {where(cell)} no slower than the fastest peer ({peer})",
                                  ratio(cell, peer, best), 1.0, "min", best, "peer"))
    for cell, best in bests:
        if cell[1:] == (torch.float32, "fwd+bwd"):
            targets.append(target(cell, f"{best}: {where(cell)} ≤ 1.5× {FLOOR_FWD_BWD}",
                                  ratio(cell, best, FLOOR_FWD_BWD), 1.5, "max", best, "floor"))
    for cell, best in bests:
        if cell[1] == torch.bfloat16 and (*cell, ROUNDING) in table:
            targets.append(target(cell, f"{best}: {where(cell)} ≤ 1.5× {ROUNDING}", ratio(cell, best, ROUNDING), 1.5,
                                  "max", best, "rounding"))
    return targets


def _why(cell: tuple, row: str, goal: str, table: dict[tuple, Timing]) -> str:
    """What keeps ``row`` from its goal ("floor", "peer" or "rounding") in cell (shape, dtype, mode).

    Each reason is the mechanism (see posenc_lib/kernels/rope.py) and the measurements of the same
    run that show it; "" where this benchmark has no such measurement.
    """
    shape, dtype, mode = cell

    def measured(numerator: str, denominator: str, at: tuple = cell) -> str:
        if (*at, numerator) not in table or (*at, denominator) not in table:
            return "n/a"
        return f"{Ratio.of(table[(*at, numerator)], table[(*at, denominator)]).median:.2f}×"

    forward = (shape, dtype, "fwd")
    if mode == "fwd+bwd":  # two passes of the forward's method: what holds the forward back holds both
        return (f"the forward and the backward pass are one pass each of the forward's method, which alone takes "
                f"{measured(row, floor_of(row, 'fwd'), forward)} its floor: " + _why(forward, row, goal, table))
    if "interleaved" in row and dtype != torch.float32:
        return (f"{_DTYPE_NAMES[dtype]} has no complex dtype, so each block is widened to float32, turned by one complex "
                f"multiply and rounded back: three passes, where rounding alone is one ({measured(ROUNDING, FLOOR_OUT)} "
                f"a {_DTYPE_NAMES[dtype]} copy)")
    if "interleaved" in row:
        return (f"one complex multiply by PyTorch's kernel, which costs more than a copy: Meta's formula, the "
                f"same multiply into a new output, takes {measured(COMPLEX, FLOOR_NEW)} a clone")
    if row.startswith("library half, compiled, in place"):
        return ("inductor's loop stores the first half of each pair before it loads that half for the second, so in place "
                "writes a scratch block and copies it back: two passes where the floor makes one (the loop alone, out=: "
                f"{measured('library half, compiled, out=', FLOOR_OUT)} a copy; a copy: "
                f"{measured(FLOOR_OUT, FLOOR_IN_PLACE)} the in-place pass)")
    if row.startswith("library half, compiled, "):  # out= or new output: one loop
        reference = ROUNDING if goal == "rounding" else floor_of(row, mode)
        fixed, call, yardstick = (table.get((*cell, name)) for name in (FIXED_COST, row, reference))
        split = "n/a" if fixed is None or call is None or yardstick is None else (
            f"{format_seconds(fixed.median)}, {fixed.median / call.median:.0%} of this call; the loop alone, less that "
            f"cost: {(call.median - fixed.median) / yardstick.median:.2f}× `{reference}`")
        return (f"one loop that reads q and k once and writes them once; beyond a copy it costs its multiply-adds, which "
                f"show where q and k sit in the cache, and a fixed cost per call (the same call on one position: "
                f"{split})")
    if row.startswith("library half, ") and "compiled" not in row:
        variant = row.removeprefix("library half, ")
        compiled = f"library half, compiled, {variant}"
        return ("eager PyTorch has no one-pass op for half-layout pairs (complex numbers need the two members side by "
                "side): four element-wise ops on the two halves, five in place; the same call with compiled=True: "
                f"{measured(compiled, floor_of(compiled, mode))} its floor")
    return ""


def targets_markdown(targets: Sequence[Target]) -> str:
    """Targets as a markdown table: the measured ratio (median, middle half of the rounds), the limit, met / NOT MET
    and, for a target not met, why."""
    rows = [f"| {t.text} | {t.ratio} | {'≤' if t.kind == 'max' else '≥'} {t.limit}× | "
            f"{'met' if t.met else 'NOT MET'} | {t.why or ('' if t.met else 'not explained by this benchmark')} |"
            for t in targets]
    return "\n".join(["| target | measured | limit | status | why not |", "|---|---:|---:|---|---|", *rows])

"""Where the series' training time goes, and its run-time target (issue #23).

Most of a notebook's run time is training tiny models with :func:`posenc_course.training.train`.
This part takes the two model sizes the series trains most, 02's sorter (2 layers, width 32, a
batch of 64 x 12 tokens) and 06's character LM (2 layers, width 64, RoPE, causal, 32 x 32 tokens),
and measures a step of :func:`~posenc_course.training.train` on each, in fresh processes, under three
settings:

* ``reference``: the course's reference numerics (:mod:`posenc_course.numerics`), what the
  notebooks run; its step is profiled by operation (``torch.profiler``, self time);
* ``native``: the machine's own kernels (the three variables unset);
* ``2 threads``: the reference settings with two intra-op threads.

Each setting also trains a fresh model of each size for a fixed number of steps and hashes every
bit of its parameters: a cut that changes the hash changes the notebooks' results, which the
issue rules out. The target rows judge the series' run times from ``build/timings.json`` (this
machine's latest ``make execute``) where it covers notebooks 00-07, else from the catalog (the
reference machine's record).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor, nn
from torch.profiler import ProfilerActivity, profile, record_function

from posenc_course.data import lm_batch
from posenc_course.training import seed_everything, train
from posenc_lib.embeddings.sinusoidal import SinusoidalPE
from posenc_lib.rotary.rope import RotaryPE
from posenc_lib.models import TinyTransformer
from tools.catalog import load_catalog
from tools.numerics_env import machine_env

ROOT = Path(__file__).resolve().parent.parent
TIMINGS = ROOT / "build" / "timings.json"
SETTINGS: tuple[str, ...] = ("reference", "native", "2 threads")
SERIES = tuple(f"{i:02d}" for i in range(8))  # notebooks 00-07, the target
SERIES_LIMIT_S, NOTEBOOK_LIMIT_S = 240.0, 75.0
HASH_STEPS = 20
PROFILED_STEPS = 30
CATEGORIES: tuple[str, ...] = ("matrix products (MKL)", "fused attention (SDPA)", "AdamW", "GELU", "drawing the batch",
                               "other operations", "Python and dispatch")


@dataclass(frozen=True)
class Model:
    """One of the two model sizes: TinyTransformer arguments and the (batch, seq) of a step."""

    name: str
    vocab: int
    d_model: int
    n_heads: int
    batch: int
    seq: int
    rope: bool  # RoPE and a causal mask (06's LM); else a sinusoidal table, bidirectional (02's sorter)


MODELS: tuple[Model, ...] = (
    Model("02: sorter, width 32, 64 x 12 tokens", 16, 32, 2, 64, 12, rope=False),
    Model("06: char LM, width 64, RoPE, 32 x 32 tokens", 64, 64, 4, 32, 32, rope=True),
)


def category(op: str) -> str:
    """The row of the profile that a recorded operation, and everything it calls, goes to."""
    if op in ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"):
        return CATEGORIES[0]
    if "scaled_dot_product" in op or "flash_attention" in op:
        return CATEGORIES[1]
    if op.startswith(("Optimizer.step", "aten::_foreach")):
        return CATEGORIES[2]
    if op.startswith("aten::gelu"):
        return CATEGORIES[3]
    if op == "batch":  # the record_function around drawing a step's batch
        return CATEGORIES[4]
    return CATEGORIES[5]


def category_in_context(names_outermost_first: Sequence[str]) -> str:
    """The row of an operation's self time, given its name and its callers' (outermost first): the outermost
    one with a row of its own decides, so AdamW's element-wise work counts as AdamW, not as other operations."""
    return next((c for c in map(category, names_outermost_first) if c != CATEGORIES[5]), CATEGORIES[5])


# ----------------------------------------------------------------------------- the worker (a fresh process)


def _build(model: Model, seed: int = 0) -> tuple[nn.Module, torch.Generator]:
    """The model of one size, built after seeding (as the notebooks do), and the generator of its batches."""
    gen = seed_everything(seed)
    head_dim = model.d_model // model.n_heads
    scheme = RotaryPE(head_dim) if model.rope else SinusoidalPE(model.d_model, max_len=2 * model.seq)
    return TinyTransformer(model.vocab, model.vocab, d_model=model.d_model, n_heads=model.n_heads, n_layers=2,
                           scheme=scheme, causal=model.rope, pool="none"), gen


def _data(model: Model, gen: torch.Generator) -> Callable[[int], tuple[Tensor, Tensor]]:
    """``train``'s data function: each step's batch drawn as the notebooks draw theirs (02: rows of a fixed
    data set of 2048 sequences, as ``train`` samples a data set; 06: windows at random offsets of a long
    text, :func:`lm_batch`), under a profiler label. Random tokens stand in for the data, whose values do
    not change the time of a step."""
    if model.rope:
        text = torch.randint(0, model.vocab, (200_000,), generator=gen)

        def draw() -> tuple[Tensor, Tensor]:
            return lm_batch(text, model.seq, model.batch, gen)
    else:
        inputs = torch.randint(0, model.vocab, (2048, model.seq), generator=gen)
        targets = inputs.sort(dim=1).values

        def draw() -> tuple[Tensor, Tensor]:
            idx = torch.randint(0, inputs.shape[0], (model.batch,), generator=gen)
            return inputs[idx], targets[idx]

    def batch(_: int) -> tuple[Tensor, Tensor]:
        with record_function("batch"):
            return draw()

    return batch


def _measure(model: Model, steps: int = 40, profiled_steps: int = PROFILED_STEPS,
             hash_steps: int = HASH_STEPS) -> dict:
    """Seconds per step (median of 5 calls of ``train``), the profile's shares over ``profiled_steps`` steps, and
    the parameters' hash after ``hash_steps`` steps from a fresh model (the test takes fewer steps of each)."""
    net, gen = _build(model)
    data = _data(model, gen)
    train(net, data, 5, desc=None)  # warm-up
    blocks = []
    for _ in range(5):
        t0 = time.perf_counter()
        train(net, data, steps // 5, desc=None)
        blocks.append((time.perf_counter() - t0) / (steps // 5))
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        t0 = time.perf_counter()
        train(net, data, profiled_steps, desc=None)
        wall = time.perf_counter() - t0
    shares = dict.fromkeys(CATEGORIES, 0.0)
    for event in prof.events():
        chain, parent = [event.name], event.cpu_parent
        while parent is not None:
            chain.append(parent.name)
            parent = parent.cpu_parent
        shares[category_in_context(chain[::-1])] += event.self_cpu_time_total * 1e-6
    shares["Python and dispatch"] = max(0.0, wall - sum(shares.values()))
    total = sum(shares.values())

    net, gen = _build(model, seed=1)  # the bits: a fresh model trained HASH_STEPS steps
    train(net, _data(model, gen), hash_steps, desc=None)
    digest = hashlib.sha256()
    for tensor in net.state_dict().values():
        digest.update(tensor.detach().numpy().tobytes())
    return {"step_s": sorted(blocks)[2], "shares": {k: v / total for k, v in shares.items()},
            "hash": digest.hexdigest(), "capability": torch.backends.cpu.get_cpu_capability()}


def _worker(setting: str) -> None:
    torch.set_num_threads(2 if setting == "2 threads" else 1)
    print(json.dumps({m.name: _measure(m) for m in MODELS}))


# ----------------------------------------------------------------------------- the parent


def _env(setting: str) -> dict[str, str]:
    """This process's environment with the setting's numerics (the reference's from tools/numerics_env.py)."""
    env = {k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_CBWR")}
    threads = "2" if setting == "2 threads" else "1"
    env.update(OMP_NUM_THREADS=threads, MKL_NUM_THREADS=threads)
    if setting != "native":
        env.update({k: v for k, v in machine_env().items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                                                        "POSENC_NUM_THREADS")})
    return env


def run_series_bench() -> dict[str, dict]:
    """Every setting in a fresh process: {setting: {model name: measurement}}."""
    results = {}
    for setting in SETTINGS:
        out = subprocess.run([sys.executable, "-m", "bench.series_bench", "--worker", setting], cwd=ROOT,
                             env=_env(setting), capture_output=True, text=True, check=True)
        results[setting] = json.loads(out.stdout.strip().splitlines()[-1])
    return results


def run_times() -> tuple[dict[str, float], str]:
    """Run times of notebooks 00-07 in seconds, and where they come from."""
    if TIMINGS.exists():
        timings = {stem[:2]: s for stem, s in json.loads(TIMINGS.read_text()).items()}
        if all(n in timings for n in SERIES):
            return ({n: timings[n] for n in SERIES},
                    f"this machine's latest `make execute` (`build/timings.json`, {time.strftime('%Y-%m-%d %H:%M', time.gmtime(TIMINGS.stat().st_mtime))} UTC)")
    catalog = {e.stem[:2]: e.run_time_s for e in load_catalog()}
    return {n: float(catalog[n]) for n in SERIES}, "the catalog (`notebooks/catalog.toml`: the reference machine's `make execute`)"


def series_markdown(results: dict[str, dict], times: dict[str, float], source: str) -> str:
    """The step times, the profile and the bits of every setting, then the two targets with their status."""
    ref = results["reference"]
    lines = ["| model | setting | ms per step | × reference | parameters after "
             f"{HASH_STEPS} steps |", "|---|---|---:|---:|---|"]
    for m in MODELS:
        for setting in SETTINGS:
            r = results[setting][m.name]
            same = "the reference's, bit for bit" if r["hash"] == ref[m.name]["hash"] else "differ from the reference's"
            lines.append(f"| {m.name} | {setting} ({r['capability']}) | {r['step_s'] * 1e3:.2f} | "
                         f"{r['step_s'] / ref[m.name]['step_s']:.2f}× | {same} |")
    profile = ["| where a step's time goes (reference numerics) | " + " | ".join(m.name for m in MODELS) + " |",
               "|---|" + "---:|" * len(MODELS)]
    for cat in CATEGORIES:
        profile.append(f"| {cat} | " + " | ".join(f"{ref[m.name]['shares'][cat]:.0%}" for m in MODELS) + " |")

    total, worst = sum(times.values()), max(times, key=times.get)
    mm = [f"{ref[m.name]['shares'][CATEGORIES[0]]:.0%}" for m in MODELS]
    faster = {s: [ref[m.name]["step_s"] / results[s][m.name]["step_s"] for m in MODELS] for s in SETTINGS[1:]}
    keeps = {s: all(results[s][m.name]["hash"] == ref[m.name]["hash"] for m in MODELS) for s in SETTINGS[1:]}
    cuts = "; ".join(f"{s}: a step {min(v):.2f}-{max(v):.2f}× as fast, "
                     f"{'the same bits' if keeps[s] else 'other bits (a changed result)'}" for s, v in faster.items())
    why = (f"matrix products take {' and '.join(mm)} of a step of the two models under the reference numerics "
           f"(MKL_CBWR=COMPATIBLE, MKL's SSE2 branch); the settings that would cut that: {cuts}")
    targets = [("notebooks 00-07 together", total, SERIES_LIMIT_S), (f"the slowest of 00-07 ({worst})", times[worst],
                                                                     NOTEBOOK_LIMIT_S)]
    rows = ["| target | measured | limit | status | why not |", "|---|---:|---:|---|---|"]
    for text, value, limit in targets:
        met = value <= limit
        rows.append(f"| {text} ≤ {limit:.0f} s | {value:.0f} s | ≤ {limit:.0f} s | {'met' if met else 'NOT MET'} | "
                    f"{'' if met else why} |")
    per_notebook = ", ".join(f"{n} {s:.0f} s" for n, s in times.items())
    return ("\n".join(lines) + "\n\n" + "\n".join(profile) + "\n\n## Targets\n\n"
            + f"Run times from {source}: {per_notebook}.\n\n" + "\n".join(rows))


SERIES_METHOD = """\
## How it is measured

- Each setting runs in a fresh Python process (the kernel variables are read when the libraries
  start): `reference` with the variables of `tools/numerics_env.py` and one thread, as the
  notebooks; `native` with `ATEN_CPU_CAPABILITY`, `ONEDNN_MAX_CPU_ISA` and `MKL_CBWR` unset;
  `2 threads` the reference with two intra-op threads.
- A step is one of `posenc_course.training.train` (the notebooks' loop): drawing the batch
  (02: 64 rows of a data set of 2048 sequences; 06: 32 windows at random offsets of a 200 000-token
  text), forward, cross-entropy, `zero_grad`, backward, AdamW (`foreach`, learning rate 3e-3), the
  learning-rate schedule, reading the loss. After 5 warm-up steps, 5 calls of `train` of 8 steps
  each (each call starts its own AdamW and schedule, as a notebook's run does); the median call's
  time per step.
- Profile: 30 more steps under `torch.profiler` (CPU), the self time of every recorded operation
  given to the row of its outermost caller that has one (matrix products: `aten::mm`, `addmm`,
  `bmm`, `baddbmm`; attention: the SDPA kernels and their backward; AdamW: `Optimizer.step` and
  everything inside it; GELU and its backward; drawing the batch), else to other operations; `Python and dispatch`
  is the wall time of those steps outside every recorded operation. The profiler adds a cost to each operation, so
  small operations weigh a little more here than without it.
- Bits: a fresh model (seed 1) trained 20 steps on fresh batches in each setting; the SHA-256 of
  its parameters compared with the reference setting's.
"""


def main(argv: Sequence[str]) -> int:
    if len(argv) == 2 and argv[0] == "--worker" and argv[1] in SETTINGS:
        _worker(argv[1])
        return 0
    raise SystemExit(f"usage: python -m bench.series_bench --worker {{{'|'.join(SETTINGS)}}}, got {' '.join(argv)!r}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

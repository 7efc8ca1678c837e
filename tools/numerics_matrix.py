"""Execute every notebook under a matrix of CPU numerics: the claims must hold under all of them.

    python tools/numerics_matrix.py notebooks/*.ipynb          # what `make numerics-matrix` runs
    python tools/numerics_matrix.py --tag notebooks/*.ipynb    # also re-derive the nbval-check-output tags
    python tools/numerics_matrix.py --configs native notebooks/07_debugging.ipynb

Each configuration forces other kernels than the reference (posenc_course/numerics.py): PyTorch's
kernel level (the portable ``default``, ``avx2``, or the machine's native one), oneDNN's ISA cap,
MKL's reproducibility mode, and 1 or 2 threads. Every notebook is executed under each one into
build/numerics-matrix/<config>/. The run fails on any error, which includes every failed assertion
of a notebook, and on any change, against the committed notebook, of an output tagged
``nbval-check-output``: those are the outputs ``make test`` still compares on a machine that does
not reproduce the reference (lax mode), so they must not depend on the CPU.

With ``--tag``, a code cell gets that tag when its outputs came out identical (after the nbval
sanitizers) under every configuration, and loses it otherwise; the tags are written into the
committed .ipynb and its paired .py.
"""

from __future__ import annotations

import argparse
import configparser
import json
import multiprocessing
import os
import re
import resource
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat

from tools.catalog import longest_first
from tools.execute import execute

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "build" / "numerics-matrix"
SANITIZE = ROOT / "tools" / "nbval_sanitize.cfg"
TAG = "nbval-check-output"
KNOBS = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_CBWR")
FRESH = multiprocessing.get_context("spawn")
NATIVE = None  # the variable unset: the library picks its kernels for this CPU

#: name -> (kernel settings, threads). Together with the reference that `make test` runs (avx2 / AVX2 /
#: COMPATIBLE, 1 thread), every knob takes at least two values: PyTorch's portable ``default``
#: level, ``avx2`` and the machine's native one (AVX-512 on most Intel servers); oneDNN capped at
#: SSE4.1, at AVX2 and uncapped; MKL's COMPATIBLE and AVX2 modes (on AMD the latter falls back to
#: MKL's own dispatch) and no mode at all; 1 and 2 threads.
CONFIGS: dict[str, tuple[dict[str, str | None], int]] = {
    "native-2threads": ({"ATEN_CPU_CAPABILITY": NATIVE, "ONEDNN_MAX_CPU_ISA": NATIVE, "MKL_CBWR": NATIVE}, 2),
    "default": ({"ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "SSE41", "MKL_CBWR": "AVX2"}, 1),
}


def config_env(name: str) -> dict[str, str]:
    """The full environment of configuration ``name`` (this process's, knobs replaced)."""
    settings, threads = CONFIGS[name]
    env = {k: v for k, v in os.environ.items() if k not in KNOBS}
    env.update({k: v for k, v in settings.items() if v is not NATIVE})
    env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads), POSENC_NUM_THREADS=str(threads))
    env["POSENC_WORKERS"] = "1"  # the matrix runs notebooks side by side itself: their own workers would oversubscribe
    if threads > 1:
        # A two-thread notebook shares the cores with another notebook: OpenMP's idle threads then sleep instead of
        # spinning, which changes no result (the probe digest is the same either way) and keeps both notebooks going.
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    return env


def _run(job: tuple[str, Path]) -> tuple[str, str, float, float, str]:
    """Execute one notebook under one configuration (in a fresh worker process):
    (config, stem, wall seconds, CPU seconds of the kernel and this worker, error)."""
    name, path = job
    env = config_env(name)  # from the inherited environment, before it is replaced
    os.environ.clear()
    os.environ.update(env)
    start = time.perf_counter()
    try:
        execute(path, OUT / name, timeout=3600)  # a cell under the portable kernels can take minutes
        error = ""
    except Exception as exc:  # nbclient's CellExecutionError carries the cell and its traceback
        error = f"{type(exc).__name__}: {exc}"
    cpu = sum(getattr(resource.getrusage(who), field) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
              for field in ("ru_utime", "ru_stime"))  # the kernel is this worker's child, waited for
    return name, path.stem, time.perf_counter() - start, cpu, error


def load_sanitizers() -> list[tuple[re.Pattern[str], str]]:
    """The regex/replace pairs of tools/nbval_sanitize.cfg, as nbval applies them."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(SANITIZE, encoding="utf-8")
    return [(re.compile(parser[s]["regex"]), parser[s]["replace"]) for s in parser.sections()]


def comparable(cell: nbformat.NotebookNode, sanitizers: list[tuple[re.Pattern[str], str]]) -> list:
    """A code cell's outputs as nbval compares them: text and data without images, sanitized."""

    def clean(text: str) -> str:
        for pattern, replacement in sanitizers:
            text = pattern.sub(replacement, text)
        return text

    outputs = []
    for out in cell.get("outputs", []):
        if out.output_type == "stream":
            outputs.append((out.name, clean(out.text)))
        elif out.output_type == "error":
            outputs.append(("error", out.ename, clean(out.evalue)))
        else:
            data = {k: clean(v if isinstance(v, str) else "".join(v)) for k, v in out.get("data", {}).items()
                    if not k.startswith("image/")}
            outputs.append((out.output_type, json.dumps(data, sort_keys=True)))
    return outputs


def code_cells(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [c for c in nb.cells if c.cell_type == "code"]


def differing_cells(committed: Path, executed: Path, sanitizers) -> dict[int, float | None]:
    """Code cells (by index among code cells) whose outputs differ between the two files, each with
    the largest change of a printed number (None where the outputs differ in more than numbers)."""
    a = code_cells(nbformat.read(committed, as_version=4))
    b = code_cells(nbformat.read(executed, as_version=4))
    if len(a) != len(b):
        raise SystemExit(f"{executed}: {len(b)} code cells, the committed notebook has {len(a)}")
    differ = {}
    for i, (x, y) in enumerate(zip(a, b)):
        ours, theirs = comparable(x, sanitizers), comparable(y, sanitizers)
        if ours != theirs:
            differ[i] = largest_change(json.dumps(ours), json.dumps(theirs))
    return differ


def largest_change(ours: str, theirs: str) -> float | None:
    """Largest |difference| between corresponding numbers of two texts that differ only in numbers."""
    number = r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?"
    if re.sub(number, "#", ours) != re.sub(number, "#", theirs):
        return None
    return max(abs(float(p) - float(q)) for p, q in zip(re.findall(number, ours), re.findall(number, theirs)))


def write_tags(path: Path, unstable: set[int]) -> int:
    """Tag the stable cells of ``path`` (outputs present, not ignored) and untag the rest; sync the .py."""
    nb = nbformat.read(path, as_version=4)
    tagged = 0
    for i, cell in enumerate(code_cells(nb)):
        tags = [t for t in cell.metadata.get("tags", []) if t != TAG]
        ignored = "NBVAL_IGNORE_OUTPUT" in cell.source or "NBVAL_SKIP" in cell.source or "raises-exception" in tags
        if i not in unstable and cell.outputs and not ignored:
            tags.append(TAG)
            tagged += 1
        if tags:
            cell.metadata["tags"] = tags
        else:
            cell.metadata.pop("tags", None)
    nbformat.write(nb, path)
    subprocess.run([sys.executable, "-m", "jupytext", "--sync", "--quiet", str(path)], check=True)
    return tagged


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--configs", nargs="+", choices=sorted(CONFIGS), default=list(CONFIGS))
    parser.add_argument("--tag", action="store_true", help="re-derive the nbval-check-output tags")
    parser.add_argument("--jobs", type=int, default=2, help="notebooks run at once")
    parser.add_argument("--no-execute", action="store_true",
                        help="compare (and tag from) the executed copies a previous run left in build/numerics-matrix/")
    args = parser.parse_args(argv)

    configs = args.configs
    start = time.perf_counter()
    results = []
    if args.no_execute:
        results = [(c, p.stem, "" if (OUT / c / p.name).exists() else "not executed") for c in configs
                   for p in args.notebooks]
    if not args.no_execute:
        # One pool for every configuration, the longest notebooks first (each notebook under every configuration
        # before the next notebook), so that no core waits at the end of one configuration for the next to start.
        jobs = [(c, p.resolve()) for p in longest_first(args.notebooks) for c in configs]
        cpu_total = 0.0
        with ProcessPoolExecutor(max_workers=max(1, args.jobs), mp_context=FRESH,
                                 max_tasks_per_child=1) as pool:  # a fresh process (and zmq context) per notebook
            for name, stem, seconds, cpu, error in pool.map(_run, jobs):
                cpu_total += cpu
                print(f"{name:>15} {stem}: {seconds:.1f} s ({cpu:.0f} s of CPU)"
                      f"{'  FAILED ' + error.splitlines()[0] if error else ''}", flush=True)
                results.append((name, stem, error))
        print(f"executed {len(jobs)} notebook runs in {time.perf_counter() - start:.0f} s, {cpu_total:.0f} s of CPU")

    sanitizers = load_sanitizers()
    failures = [f"{name} {stem}: {error}" for name, stem, error in results if error]
    unstable: dict[Path, set[int]] = {p: set() for p in args.notebooks}
    for path in args.notebooks:
        tagged = {i for i, c in enumerate(code_cells(nbformat.read(path, as_version=4)))
                  if TAG in c.metadata.get("tags", [])}
        for name in configs:
            executed = OUT / name / path.name
            if any(r[0] == name and r[1] == path.stem and r[2] for r in results):
                continue
            differ = differing_cells(path, executed, sanitizers)
            unstable[path].update(differ)
            changes = [c for c in differ.values() if c is not None]
            print(f"{name:>14} {path.stem}: {len(differ)} code cells print other outputs than the committed ones"
                  + (f" (cells {sorted(differ)}; largest change of a printed number {max(changes):.3g})"
                     if changes else f" (cells {sorted(differ)})" if differ else ""))
            if not args.tag:
                failures += [f"{name} {path.stem}: code cell {i} is tagged {TAG} but its output changed"
                             for i in sorted(tagged & set(differ))]
    if args.tag:  # a notebook that failed anywhere keeps its tags: nothing is known about its outputs
        failed = {stem for _, stem, error in results if error}
        for path in args.notebooks:
            if path.stem not in failed:
                print(f"{path.stem}: {write_tags(path, unstable[path])} cells tagged {TAG}")
    print(f"numerics matrix ({', '.join(configs)}): {time.perf_counter() - start:.0f} s, "
          f"{'passed' if not failures else 'FAILED'}")
    for failure in failures:
        print("  " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

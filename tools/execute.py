"""Execute notebooks deterministically, in place (or into another folder).

    python tools/execute.py notebooks/00_*.ipynb            # in place
    python tools/execute.py --out build/notebooks nb.ipynb  # write executed copies elsewhere

nbclient with no timing metadata and merged stream outputs, run from the notebook's own
folder, gives byte-identical files run after run (the Makefile also fixes the thread count
and sets POSENC_DETERMINISTIC so progress bars print no rates). The notebook metadata written is
what JupyterLab writes on saving (lab_metadata), so opening a notebook does not change it. Prints each notebook's
wall time and writes them to build/timings.json.

Executed in place, the notebooks' outputs come from this machine's numerics, so the probe digest
of those numerics is recorded, before the first notebook runs, as the reference
(posenc_course/reference_numerics.json), which tells `make test` where it can compare outputs
strictly. It is recorded only when every numbered notebook is executed in the run, so the record
never mixes two machines.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from jupytext.config import load_jupytext_config
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
TIMINGS = ROOT / "build" / "timings.json"
KERNEL = "python3"  # the kernelspec `make setup` installs into .venv ("Python 3 (posenc)")


def execute(path: Path, out_dir: Path | None = None, timeout: int = 600) -> float:
    """Execute one notebook; return its wall time in seconds."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name=KERNEL,
        record_timing=False,
        coalesce_streams=True,
        resources={"metadata": {"path": str(path.parent.resolve())}},
    )
    start = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - start
    nb.metadata = lab_metadata(path.parent, nb.metadata["language_info"])
    _relative_tracebacks(nb)
    target = (out_dir / path.name) if out_dir else path
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)
    return elapsed


def lab_metadata(notebook_dir: Path, language_info: dict) -> dict:
    """The notebook-level metadata JupyterLab writes when it saves a notebook of ``notebook_dir``.

    Committing exactly this keeps a notebook unchanged when a student opens, runs and saves it:
    the kernelspec ``make setup`` installs (name and display name), the ``language_info`` the kernel
    reports (``language_info``, as nbclient recorded it), and, for a notebook paired by a jupytext
    configuration (``notebooks/jupytext.toml``), the two metadata filters jupytext adds from it.
    """
    spec = KernelSpecManager().get_kernel_spec(KERNEL)
    config = load_jupytext_config(str(notebook_dir.resolve()))  # None outside notebooks/: no pairing there
    paired = {} if config is None else {"jupytext": {"cell_metadata_filter": config.cell_metadata_filter,
                                                     "notebook_metadata_filter": config.notebook_metadata_filter}}
    return {
        **paired,
        "kernelspec": {"display_name": spec.display_name, "language": spec.language, "name": KERNEL},
        "language_info": dict(language_info),
    }


def _relative_tracebacks(nb: nbformat.NotebookNode) -> None:
    """Write paths inside the repository relative to it in error tracebacks (cells tagged
    ``raises-exception``), so the executed file does not depend on where the clone lives."""
    prefix = str(ROOT) + "/"
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                out["traceback"] = [line.replace(prefix, "") for line in out["traceback"]]


def execute_all(paths: list[Path], out_dir: Path | None = None, jobs: int = 1) -> dict[str, float]:
    """Execute the notebooks, ``jobs`` at a time (each kernel uses its own thread count), print each
    one's wall time and record it in build/timings.json.

    Returns every recorded time, by notebook stem (earlier runs of other notebooks included).
    """
    timings = json.loads(TIMINGS.read_text()) if TIMINGS.exists() else {}
    if out_dir is None:  # before executing: each notebook's first cell reports against the record
        _record_numerics(paths)
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                             max_tasks_per_child=1) as pool:  # a fresh process (and zmq context) per notebook
        for path, seconds in zip(paths, pool.map(execute, paths, [out_dir] * len(paths))):
            timings[path.stem] = round(seconds, 1)
            print(f"{path.name}: {seconds:.1f} s", flush=True)
            TIMINGS.parent.mkdir(parents=True, exist_ok=True)
            TIMINGS.write_text(json.dumps(timings, indent=2, sort_keys=True) + "\n")
    return timings


def _record_numerics(paths: list[Path]) -> None:
    """Record this machine's probe digest as the reference, if ``paths`` were all the notebooks."""
    from posenc_course import numerics

    digest = numerics.probe_digest()
    if digest == numerics.reference()["digest"]:
        return
    every = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if sorted(p.resolve() for p in paths) == every:
        print(numerics.record_reference(digest))
    else:
        print("warning: these notebooks were executed under numerics other than the reference the rest were "
              "executed under (probe digest differs); run `make execute` to execute them all", file=sys.stderr)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=None, help="folder for executed copies (default: in place)")
    parser.add_argument("--jobs", type=int, default=1, help="notebooks executed at once (default 1: clean timings)")
    args = parser.parse_args(argv)
    execute_all(args.notebooks, args.out, args.jobs)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

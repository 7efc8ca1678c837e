"""Reproducibility, progress bars, parallel runs, and the library's training loop with the series' progress bar.

Everything a notebook trains goes through :func:`train` (:func:`posenc_lib.training.train` with a bar), so
every experiment in the series is seeded the same way and reports progress the same way.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import random
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import numpy as np
import torch
from torch import Tensor, nn
from tqdm.std import tqdm

from posenc_lib.training import Batch, accuracy, cross_entropy
from posenc_lib.training import train as _train

__all__ = [
    "NOTEBOOK_THREADS",
    "setup_notebook",
    "seed_everything",
    "live_widgets",
    "close_widgets",
    "progress",
    "run_each",
    "worker_count",
    "train",
    "accuracy",
    "cross_entropy",
]

T = TypeVar("T")
R = TypeVar("R")


def seed_everything(seed: int = 0) -> torch.Generator:
    """Seed Python, NumPy and PyTorch, make PyTorch pick deterministic kernels.

    Returns a fresh ``torch.Generator`` seeded with ``seed`` for data sampling.
    """
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True, warn_only=True)
    return torch.Generator().manual_seed(seed)


#: Intra-op threads every notebook runs with, wherever it runs (JupyterLab, ``make execute``, nbval):
#: the course's models are tiny, and one thread is both faster and repeatable (see the Makefile).
#: The environment variable ``POSENC_NUM_THREADS`` overrides it (``make numerics-matrix`` tries 2).
NOTEBOOK_THREADS = 1

#: True once :func:`setup_notebook` has run in this process (posenc_course.kernel points a NameError
#: raised before it to the setup cell).
notebook_set_up = False


def setup_notebook(seed: int = 0) -> torch.Generator:
    """First call of every notebook: thread count, the series' figure style, seeds, print options.

    Fixing the threads here (not only in the Makefile) makes a notebook opened in JupyterLab run
    as it was measured. Prints nothing where this machine reproduces the reference numerics the
    printed numbers come from, and one plain sentence where it does not
    (:func:`posenc_course.numerics.notice`). Returns the seeded data generator of :func:`seed_everything`.
    """
    from posenc_course.numerics import notice
    from posenc_course.plotting import use_style  # plotting imports matplotlib; keep it out of library-only imports

    threads = os.environ.get("POSENC_NUM_THREADS", str(NOTEBOOK_THREADS))
    if not threads.isdigit() or int(threads) < 1:
        raise ValueError(f"POSENC_NUM_THREADS must be a positive integer, got {threads!r}")
    torch.set_num_threads(int(threads))
    if line := notice():
        print(line)
    use_style()
    torch.set_printoptions(precision=4, sci_mode=False)
    global notebook_set_up
    notebook_set_up = True
    return seed_everything(seed)


class _FinalStateBar(tqdm):
    """A text bar that prints only its final state, once, when it closes: ``delay=inf`` keeps every
    earlier state off the output, and closing lifts the delay for the last display."""

    def close(self) -> None:
        self.delay = 0
        super().close()


def _in_jupyter_kernel() -> bool:
    """True when running in a Jupyter kernel (JupyterLab, nbclient), not in a terminal or a test."""
    ipython = sys.modules.get("IPython")
    return ipython is not None and type(ipython.get_ipython()).__name__ == "ZMQInteractiveShell"


@functools.cache
def _widget_bar() -> type:
    """tqdm's widget bar (``tqdm.notebook``), which turns into its final line of text when it closes.

    While it runs, JupyterLab draws the widget. When it closes (finished, failed or interrupted), its
    output is replaced, in place, by the text of its last state ("scheme x seed: 100%|...| 21/21
    [00:34<00:00, ...]"), and its widgets are closed: the saved notebook holds that line, which every
    frontend shows, instead of a widget that a reopened notebook could no longer find.
    """
    from IPython.display import display
    from tqdm.notebook import tqdm as notebook_bar

    class WidgetBar(notebook_bar):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, display=False, **kwargs)
            self.handle = display(self.container, display_id=True)
            self.displayed = True

        def close(self) -> None:
            if self.disable:  # closed already (tqdm disables a bar as it closes it)
                return
            super().close()
            if self.handle is not None:  # None outside a kernel, where display() only prints
                self.handle.update({"text/plain": str(self)}, raw=True)
            close_widgets(self.container)

    return WidgetBar


def close_widgets(widget: Any) -> None:
    """Close ``widget``, the widgets it holds (``children``), and their layouts and styles: the kernel lets
    go of them, and JupyterLab no longer saves their state with the notebook."""
    for child in getattr(widget, "children", ()):
        close_widgets(child)
    for part in (getattr(widget, "layout", None), getattr(widget, "style", None), widget):
        if part is not None:
            part.close()


def live_widgets() -> bool:
    """True where output goes to a live Jupyter frontend that can draw widgets: a Jupyter kernel, with
    ``ipywidgets`` installed and ``POSENC_DETERMINISTIC`` unset (``make execute`` and nbval set it, so
    that an executed notebook holds plain, repeatable output; ``make lab`` does not)."""
    return (not os.environ.get("POSENC_DETERMINISTIC") and _in_jupyter_kernel()
            and importlib.util.find_spec("ipywidgets") is not None)


def progress(iterable: Iterable[T], total: int | None = None, desc: str | None = None) -> tqdm:
    """A progress bar over ``iterable``, one per experiment (``train(..., desc=None)`` runs silently inside).

    - With the environment variable ``POSENC_DETERMINISTIC`` set (``make execute`` and nbval
      set it; ``make lab`` does not): one line of text on stdout, the final state, with no time
      or rate, so an executed notebook is identical from run to run.
    - In a Jupyter kernel: a live widget bar when ``ipywidgets`` is installed (JupyterLab
      draws it; it becomes its final line of text when it closes, see :func:`_widget_bar`),
      otherwise live text on stdout; stderr stays for warnings.
    - Elsewhere (a terminal): tqdm's usual live text bar on stderr.
    """
    if os.environ.get("POSENC_DETERMINISTIC"):
        return _FinalStateBar(
            iterable, total=total, desc=desc, file=sys.stdout, mininterval=float("inf"), delay=float("inf"),
            ascii=True, bar_format="{desc}: {percentage:3.0f}%|{bar:20}| {n_fmt}/{total_fmt}{postfix}",
        )
    if live_widgets():
        return _widget_bar()(iterable, total=total, desc=desc)
    if _in_jupyter_kernel():
        return tqdm(iterable, total=total, desc=desc, file=sys.stdout, ascii=True)
    return tqdm(iterable, total=total, desc=desc, file=sys.stderr, ascii=True, dynamic_ncols=True)


def worker_count(n_items: int, threads: int) -> int:
    """Worker processes for :func:`run_each`: ``POSENC_WORKERS`` if set, else as many as the cores
    hold at ``threads`` each, at most 4 (more threads than cores make OpenMP threads wait on each other)."""
    value = os.environ.get("POSENC_WORKERS", str(max(1, min((os.cpu_count() or 1) // threads, 4))))
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"POSENC_WORKERS must be a positive integer, got {value!r}")
    return max(1, min(int(value), n_items))


def _run_item(fn: Callable[[T], R], item: T, threads: int) -> R:
    """One item of :func:`run_each`: the caller's thread count, and the global generators at seed 0."""
    torch.set_num_threads(threads)
    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)
    return fn(item)


def run_each(fn: Callable[[T], R], items: Sequence[T], desc: str | None = None) -> list[R]:
    """``[fn(item) for item in items]``, the items spread over worker processes, with one progress bar.

    For the loops over seeds and settings that make up most of a notebook's run time: each item
    is one independent training run, so several can run at once, each in its own process with
    the notebook's thread count (one) and numerics (the environment the kernel started with).
    The result is the same list, in the same order, whatever the number of workers: each item
    starts with Python's, NumPy's and PyTorch's global generators seeded with 0, and ``fn``
    seeds what it draws (:func:`seed_everything` with the item's seed). The caller's own
    generators are left as they were.

    desc: label of the progress bar, which counts finished items; ``None``: no bar.
    Workers: ``POSENC_WORKERS`` (default: as many as the cores hold at the notebook's thread count,
    at most 4); 1 runs the items here, in this process. ``fn`` and the items travel to the workers
    by value (joblib's cloudpickle), so ``fn`` may be a function or lambda defined in a notebook;
    the results come back the same way.
    """
    items = list(items)
    threads = torch.get_num_threads()
    workers = worker_count(len(items), threads)

    def counted(results: Iterable[R]) -> Iterable[R]:
        return progress(results, total=len(items), desc=desc) if desc is not None else results

    if workers == 1:
        state = random.getstate(), np.random.get_state(), torch.get_rng_state()
        try:
            return list(counted(_run_item(fn, item, threads) for item in items))
        finally:
            random.setstate(state[0])
            np.random.set_state(state[1])
            torch.set_rng_state(state[2])
    from joblib import Parallel, delayed, parallel_config

    with parallel_config(backend="loky", inner_max_num_threads=threads):
        results = Parallel(n_jobs=workers, return_as="generator")(delayed(_run_item)(fn, item, threads) for item in items)
        return list(counted(results))


def train(model: nn.Module, data: Batch | Callable[[int], Batch], steps: int, *args: object,
          desc: str | None = "training", **kwargs: object) -> list[float]:
    """:func:`posenc_lib.training.train` (same arguments: lr, batch_size, weight_decay, generator,
    loss_fn) with the series' progress bar (:func:`progress`) labelled ``desc``.

    desc: ``None`` trains silently, for runs inside an experiment whose own bar counts them.
    """
    bar = (lambda steps_range: progress(steps_range, desc=desc)) if desc is not None else None  # counts stop_after too
    return _train(model, data, steps, *args, progress=bar, **kwargs)

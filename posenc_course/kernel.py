"""What the project kernel ("Python 3 (posenc)") loads as it starts: an IPython extension.

tools/numerics_env.py installs the kernel with ``--IPKernelApp.extensions=posenc_course.kernel``, so
JupyterLab, ``make execute`` and nbval kernels all load it; a kernel without it only lacks the hint.

A ``NameError`` in a kernel that has not run the notebook's setup cell (:func:`posenc_course.training.
setup_notebook`), typically a cell run after a kernel restart, gets a note under its traceback that
says how to get the cells above run: Run > Run All Above Selected Cell. Once the setup cell has run,
a ``NameError`` is shown as usual.
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any

from posenc_course.i18n import N_, _

__all__ = ["RUN_ABOVE", "load_ipython_extension", "unload_ipython_extension"]

RUN_ABOVE = N_("This kernel has not run the notebook's setup cell yet (it was restarted, or the notebook was just "
             "opened): the cells above define what this cell uses. Run them first: Run > Run All Above Selected "
             "Cell, then this cell again.")


def _setup_has_run() -> bool:
    training = sys.modules.get("posenc_course.training")
    return bool(getattr(training, "notebook_set_up", False))


def _name_error(shell: Any, etype: type[BaseException], value: BaseException, tb: TracebackType | None,
                tb_offset: int | None = None) -> None:
    """IPython's custom exception handler for NameError: the usual traceback, with :data:`RUN_ABOVE` noted
    under it while the setup cell has not run."""
    note = _(RUN_ABOVE)  # in the reader's language (posenc_course.i18n)
    if not _setup_has_run() and note not in getattr(value, "__notes__", []):
        value.add_note(note)
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)


def load_ipython_extension(shell: Any) -> None:
    shell.set_custom_exc((NameError,), _name_error)


def unload_ipython_extension(shell: Any) -> None:
    shell.set_custom_exc((), None)

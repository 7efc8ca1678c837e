"""Open the series in JupyterLab, as a student meets it: ``make lab`` (or ``python tools/lab.py``).

    python tools/lab.py                  # the server on notebooks/, a browser tab opens
    python tools/lab.py --port 8899      # extra options go to `jupyter lab`

How the server is started (:func:`lab_command`, :func:`lab_environment`; the JupyterLab test
``tests/tools/test_lab.py`` starts it the same way):

- rooted at ``notebooks/``: jupytext finds the pairing there (``notebooks/jupytext.toml``), so
  saving a notebook also writes its ``.py``; the ``.py`` twins (:data:`TWINS`) are hidden from the
  file browser, and a ``.py`` opened anyway opens as a notebook (``overrides.json``);
- ``tools/lab/`` as JupyterLab's application settings directory: its ``overrides.json`` turns
  off the "official Jupyter news" pop-up and the update check (both would contact a website),
  and saves the widgets' state with the notebook (``saveState``), so a reopened notebook draws
  its explorers again instead of "Error displaying widget: model not found";
- :func:`before_save` runs on every save (the server's ``pre_save_hook``): the saved notebook
  keeps its solutions folded however the reader peeked, and a widget whose state is not saved
  with it leaves its static picture instead of a dangling reference;
- without ``POSENC_DETERMINISTIC`` (the Makefile exports it for ``make execute`` and nbval), so
  progress bars are live widgets instead of the final-state text of an executed notebook;
- with this checkout first on ``PYTHONPATH`` (the server imports :func:`before_save` from it);
- with ``--allow-root``: as root JupyterLab refuses to start otherwise.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
SETTINGS = ROOT / "tools" / "lab"  # holds overrides.json

#: The notebooks' paired scripts (``NN_name.py`` beside ``NN_name.ipynb``; see notebooks/jupytext.toml),
#: hidden in the file browser besides jupyter_server's own hidden names.
TWINS = "[0-9][0-9]_*.py"

SOLUTIONS_HEADING = "## Solutions"
SOLUTIONS_HEADING_ZH = "## 参考答案"  # the Chinese notebooks' (notebooks/zh/, tools/i18n_notebooks.py)
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def lab_command(notebook_dir: Path = NOTEBOOKS, *options: str) -> list[str]:
    """The ``jupyter lab`` command line for a server rooted at ``notebook_dir``, plus ``options``."""
    from jupyter_server.services.contents.manager import ContentsManager

    hidden = ", ".join(f'"{glob}"' for glob in [*ContentsManager.class_traits()["hide_globs"].default(), TWINS])
    return [sys.executable, "-m", "jupyterlab", f"--notebook-dir={notebook_dir}",
            f"--LabApp.app_settings_dir={SETTINGS}", f"--ContentsManager.hide_globs=[{hidden}]",
            "--ContentsManager.pre_save_hook=tools.lab.before_save", "--allow-root", *options]


def lab_environment(env: Mapping[str, str] = os.environ) -> dict[str, str]:
    """``env`` without ``POSENC_DETERMINISTIC`` (the kernels show live progress bars), with this checkout
    first on ``PYTHONPATH``."""
    kept = {name: value for name, value in env.items() if name != "POSENC_DETERMINISTIC"}
    kept["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    return kept


def keep_solutions_folded(notebook: dict[str, Any]) -> None:
    """Fold the "Solutions" section and hide every solution's code (cells tagged ``solution``), in place,
    as the notebooks are committed: opening them to peek does not change what is saved."""
    for cell in notebook["cells"]:
        metadata = cell.setdefault("metadata", {})
        if cell["cell_type"] == "markdown" and "".join(cell["source"]).startswith((SOLUTIONS_HEADING, SOLUTIONS_HEADING_ZH)):
            metadata["jp-MarkdownHeadingCollapsed"] = True
        if "solution" in metadata.get("tags", []):  # "jupyter" first, where the committed .py has it
            jupyter = {**metadata.get("jupyter", {}), "source_hidden": True}
            cell["metadata"] = {"jupyter": jupyter, **{k: v for k, v in metadata.items() if k != "jupyter"}}


def keep_widgets_drawable(notebook: dict[str, Any]) -> None:
    """Let every saved widget output be drawn when the notebook is reopened, in place.

    JupyterLab saves the state of the widgets its kernel holds (``saveState`` in overrides.json) in the
    notebook's metadata; a widget output whose model is not among them (its kernel restarted or never
    ran it in this session) would show "Error displaying widget: model not found". Such an output
    loses its widget view and keeps the rest of its bundle: an explorer's figure (image/png) and text.
    Empty widget state is not saved at all.
    """
    saved = notebook.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_VIEW in data and data[WIDGET_VIEW].get("model_id") not in saved and len(data) > 1:
                del data[WIDGET_VIEW]
    if not saved:
        notebook.get("metadata", {}).pop("widgets", None)


def before_save(model: dict[str, Any], **_: Any) -> None:
    """The server's pre-save hook: :func:`keep_solutions_folded` and :func:`keep_widgets_drawable` on a notebook.

    jupytext writes the ``.ipynb`` first and the ``.py`` from the same cells after it, so the ``.py``
    keeps the solutions folded too.
    """
    if model.get("type") == "notebook":
        keep_solutions_folded(model["content"])
        keep_widgets_drawable(model["content"])


def main(argv: list[str]) -> int:
    command = lab_command(NOTEBOOKS, *argv)
    os.execve(command[0], command, lab_environment())  # replaces this process: Ctrl-C stops the server


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

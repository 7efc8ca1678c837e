"""Open the series in JupyterLab, as a student meets it: ``make lab`` (or ``python tools/lab.py``).

    python tools/lab.py                  # the server on notebooks/, a browser tab opens
    python tools/lab.py --port 8899      # extra options go to `jupyter lab`

How the server is started (:func:`lab_command`, :func:`lab_environment`; the JupyterLab test
``tests/tools/test_lab.py`` starts it the same way):

- rooted at ``notebooks/``: jupytext finds the pairing there (``notebooks/jupytext.toml``), so
  saving a notebook also writes its ``.py``;
- ``tools/lab/`` as JupyterLab's application settings directory: its ``overrides.json`` turns
  off the "official Jupyter news" pop-up and the update check (both would contact a website);
- without ``POSENC_DETERMINISTIC`` (the Makefile exports it for ``make execute`` and nbval), so
  progress bars are live widgets instead of the final-state text of an executed notebook;
- with ``--allow-root``: as root JupyterLab refuses to start otherwise.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
SETTINGS = ROOT / "tools" / "lab"  # holds overrides.json


def lab_command(notebook_dir: Path = NOTEBOOKS, *options: str) -> list[str]:
    """The ``jupyter lab`` command line for a server rooted at ``notebook_dir``, plus ``options``."""
    return [sys.executable, "-m", "jupyterlab", f"--notebook-dir={notebook_dir}",
            f"--LabApp.app_settings_dir={SETTINGS}", "--allow-root", *options]


def lab_environment(env: Mapping[str, str] = os.environ) -> dict[str, str]:
    """``env`` without ``POSENC_DETERMINISTIC``, so the kernels show live progress bars."""
    return {name: value for name, value in env.items() if name != "POSENC_DETERMINISTIC"}


def main(argv: list[str]) -> int:
    command = lab_command(NOTEBOOKS, *argv)
    os.execve(command[0], command, lab_environment())  # replaces this process: Ctrl-C stops the server


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

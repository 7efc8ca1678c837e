"""The project kernel's IPython extension (posenc_course.kernel), in a real kernel started with the project
kernel's command (tools/numerics_env.py's kernel_argv) from a temporary kernelspec."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from jupyter_client.manager import start_new_kernel

from posenc_course.kernel import RUN_ABOVE
from tools.numerics_env import DISPLAY_NAME, kernel_argv


@pytest.fixture(scope="module")
def kernel(tmp_path_factory) -> Iterator:
    spec_dir = tmp_path_factory.mktemp("jupyter") / "kernels" / "posenc-test"
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({"argv": kernel_argv(), "display_name": DISPLAY_NAME,
                                                      "language": "python"}), encoding="utf-8")
    previous = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = str(spec_dir.parent.parent)
    try:
        manager, client = start_new_kernel(kernel_name="posenc-test", startup_timeout=120,
                                           cwd=str(Path(__file__).resolve().parents[2]))
    finally:
        os.environ.pop("JUPYTER_PATH") if previous is None else os.environ.update(JUPYTER_PATH=previous)
    try:
        yield client
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def _run(client, code: str) -> list[dict]:
    """The outputs of ``code`` (error outputs as {"ename", "evalue", "traceback"})."""
    outputs = []
    client.execute_interactive(code, timeout=120, output_hook=lambda msg: outputs.append(msg["content"])
                               if msg["msg_type"] in ("error", "stream") else None)
    return outputs


def _text(outputs: list[dict]) -> str:
    return "\n".join("\n".join(o.get("traceback", [])) + o.get("text", "") for o in outputs)


def test_a_name_error_before_the_setup_cell_points_to_the_cells_above(kernel):
    outputs = _run(kernel, "model")
    assert [o["ename"] for o in outputs if "ename" in o] == ["NameError"]
    assert RUN_ABOVE in _text(outputs) and "Run All Above" in RUN_ABOVE


def test_after_the_setup_cell_a_name_error_is_the_usual_one(kernel):
    assert _run(kernel, "from posenc_course.training import setup_notebook\ngen = setup_notebook(0)") == []
    outputs = _run(kernel, "model")
    assert [o["ename"] for o in outputs if "ename" in o] == ["NameError"]
    assert "name 'model' is not defined" in _text(outputs) and RUN_ABOVE not in _text(outputs)


def test_other_errors_are_untouched(kernel):
    outputs = _run(kernel, "1 / 0")
    assert [o["ename"] for o in outputs if "ename" in o] == ["ZeroDivisionError"] and RUN_ABOVE not in _text(outputs)

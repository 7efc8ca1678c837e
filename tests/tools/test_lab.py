"""JupyterLab as a student meets it, driven in headless Chromium: open notebook 00, Run All, answer an
exercise wrongly, save; then run an explorer (posenc_course.explorers) and move one of its sliders.

The server is started as `make lab` starts it (tools/lab.py: rooted at the notebooks' folder, the
project's settings overrides, POSENC_DETERMINISTIC unset), on a free localhost port, on a temporary
copy of the notebook and its pairing configuration, with its own Jupyter config, settings, workspace
and runtime folders; the committed files are not touched. One session (about 30 s) records what the
student sees; each test below checks one part of it.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import jupytext
import nbformat
import pytest
from playwright.sync_api import Page, sync_playwright

from tools.check_site import CHROMIUM, CHROMIUM_FLAGS
from tools.lab import NOTEBOOKS, lab_command, lab_environment

STEM = "00_permutation_blindness"  # the first notebook (about 25 s)
TOKEN = "posenc-lab-test"
WRONG_ANSWER = 'answer_2 = "c"  # a wrong answer, typed by the test'  # exercise 2: explain why (multiple choice)
STUB = 'answer_2 = ...  # "a", "b", "c" or "d"'  # the committed stub of exercise 2
NEWS_PROMPT = "official Jupyter news"

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} is missing (make setup installs it)")

# JavaScript run in the page; `window.jupyterapp` is exposed by --LabApp.expose_app_in_browser.
READY = """async () => {
  const app = window.jupyterapp;
  await app.started; await app.restored;
  const panel = app.shell.currentWidget;
  await panel.context.ready; await panel.sessionContext.ready;
  return panel.sessionContext.session?.kernel?.name ?? null;
}"""
IDLE = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const code = panel.content.widgets.filter(c => c.model.type === 'code');
  return panel.sessionContext.session?.kernel?.status === 'idle'
      && code.every(c => c.model.executionCount !== null && !c.node.classList.contains('jp-mod-running'))
      && code.some(c => c.model.executionCount !== null);
}"""
CELLS = """() => window.jupyterapp.shell.currentWidget.content.widgets.map(c => ({
  type: c.model.type,
  tags: c.model.getMetadata('tags') ?? [],
  source: c.model.sharedModel.getSource(),
  hidden: c.isHidden,  // under a collapsed heading
  headingCollapsed: c.model.type === 'markdown' ? c.headingCollapsed : null,
  inputHidden: c.inputHidden,
  outputHidden: c.model.type === 'code' ? c.outputHidden : null,
  executionCount: c.model.type === 'code' ? c.model.executionCount : null,
  outputs: c.model.type === 'code' ? c.model.outputs.toJSON() : [],
}))"""
RUN_CELL = """async ([index, source]) => {
  const app = window.jupyterapp;
  const notebook = app.shell.currentWidget.content;
  notebook.widgets[index].model.sharedModel.setSource(source);
  notebook.activeCellIndex = index;
  await app.commands.execute('notebook:run-cell');
}"""
EXPLORER_NOTEBOOK = "explorer.ipynb"  # a scratch notebook: the setup call and one explorer, as in 05
EXPLORER_CELLS = ["from posenc_course.explorers import relative_explorer\n"
                  "from posenc_course.training import setup_notebook\n\ngen = setup_notebook(0)",
                  "relative_explorer()"]
# The explorer's output as drawn: sliders with their readouts, and the figure image inside the widget.
EXPLORER_VIEW = """() => {
  const out = [...document.querySelectorAll('.jp-Cell')].at(-1).querySelector('.jp-OutputArea');
  return {sliders: out.querySelectorAll('.widget-slider').length,
          readouts: [...out.querySelectorAll('.widget-readout')].map(r => r.textContent.trim()),
          image: out.querySelector('img.widget-image')?.src ?? null,
          plainImages: [...out.querySelectorAll('img:not(.widget-image)')].filter(i => i.checkVisibility()).length};
}"""
SAVE = """async () => {
  const app = window.jupyterapp;
  await app.commands.execute('docmanager:save');
  return app.shell.currentWidget.context.model.dirty;
}"""


@dataclass
class Session:
    """What one JupyterLab session showed and wrote."""

    kernel: str | None
    cells: list[dict]  # after Run All
    wrong_cell: dict  # the exercise-2 cell after running the wrong answer
    visible_passed: int  # output areas with a visible "[passed]" line
    visible_news_prompt: int
    saved_ipynb: dict
    saved_py: str
    committed_ipynb: dict
    committed_py: str
    seconds: float
    server_log: str
    explorer: dict  # the explorer notebook: its output, the view before and after moving a slider


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_server(url: str, server: subprocess.Popen, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"jupyter lab exited with status {server.returncode} before answering {url}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"jupyter lab did not answer {url} within {timeout:.0f} s")


def _wait(page: Page, script: str, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(script):
        if time.monotonic() > deadline:
            raise TimeoutError(f"JupyterLab: {what} did not happen within {timeout_s:.0f} s")
        time.sleep(0.25)


def _drive(page: Page, url: str) -> tuple:
    page.goto(url)
    page.wait_for_function(f"() => window.jupyterapp?.shell.currentWidget?.context?.path === '{STEM}.ipynb'",
                           timeout=60_000)
    kernel = page.evaluate(READY)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    _wait(page, IDLE, 180, "Run All")
    cells = page.evaluate(CELLS)
    visible_passed = sum(loc.is_visible() for loc in page.locator(".jp-OutputArea-output", has_text="[passed]").all())
    visible_news = sum(loc.is_visible() for loc in page.get_by_text(NEWS_PROMPT).all())
    stub = next(i for i, c in enumerate(cells) if "exercise" in c["tags"] and "check_exercise_2" in c["source"])
    before = cells[stub]["executionCount"]
    page.evaluate(RUN_CELL, [stub, f"{WRONG_ANSWER}\ncheck_exercise_2(answer_2)"])
    _wait(page, f"() => window.jupyterapp.shell.currentWidget.content.widgets[{stub}].model.executionCount > {before}"
                f" && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle'",
          60, "running the edited exercise cell")
    wrong_cell = page.evaluate(CELLS)[stub]
    dirty = page.evaluate(SAVE)
    assert dirty is False, "the notebook is still marked changed after saving"
    return kernel, cells, wrong_cell, visible_passed, visible_news


def _explore(page: Page, url: str) -> dict:
    """Run the explorer notebook, then move the first slider one step with the keyboard, as a reader does."""
    page.goto(url)
    page.wait_for_function(f"() => window.jupyterapp?.shell.currentWidget?.context?.path === '{EXPLORER_NOTEBOOK}'",
                           timeout=60_000)
    page.evaluate(READY)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    _wait(page, IDLE, 120, "Run All in the explorer notebook")
    page.wait_for_selector(".jp-OutputArea img.widget-image", timeout=30_000)
    before = page.evaluate(EXPLORER_VIEW)
    handle = page.locator(".jp-OutputArea .widget-slider .noUi-handle").first
    handle.focus()
    page.keyboard.press("ArrowRight")
    deadline = time.monotonic() + 30
    while (after := page.evaluate(EXPLORER_VIEW))["image"] == before["image"] and time.monotonic() < deadline:
        time.sleep(0.25)
    return {"before": before, "after": after, "outputs": page.evaluate(CELLS)[-1]["outputs"]}


@pytest.fixture(scope="module")
def session() -> Iterator[Session]:
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="posenc-lab-") as tmp:
        folder = Path(tmp)
        notebooks = folder / "notebooks"
        notebooks.mkdir()
        for name in (f"{STEM}.ipynb", f"{STEM}.py", "jupytext.toml"):
            shutil.copy2(NOTEBOOKS / name, notebooks / name)
        scratch = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in EXPLORER_CELLS])
        scratch.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (posenc)", "language": "python"}
        nbformat.write(scratch, notebooks / EXPLORER_NOTEBOOK)
        env = lab_environment() | {name: str(folder / name.lower()) for name in (
            "JUPYTER_CONFIG_DIR", "JUPYTER_RUNTIME_DIR", "JUPYTERLAB_SETTINGS_DIR", "JUPYTERLAB_WORKSPACES_DIR")}
        port = _free_port()
        command = lab_command(notebooks, "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
                              "--ServerApp.port_retries=0", f"--IdentityProvider.token={TOKEN}",
                              "--LabApp.expose_app_in_browser=True")
        log_path = folder / "server.log"
        with open(log_path, "w") as log:
            server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=folder)
        try:
            _wait_for_server(f"http://127.0.0.1:{port}/api/status?token={TOKEN}", server)
            with sync_playwright() as pw:
                context = pw.chromium.launch_persistent_context(
                    str(folder / "chromium"), executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS, headless=True,
                    viewport={"width": 1280, "height": 900}, ignore_default_args=["--enable-automation"])
                try:
                    page = context.new_page()
                    observed = _drive(page, f"http://127.0.0.1:{port}/lab/tree/{STEM}.ipynb?token={TOKEN}")
                    explorer = _explore(page, f"http://127.0.0.1:{port}/lab/tree/{EXPLORER_NOTEBOOK}?token={TOKEN}")
                finally:
                    context.close()
        finally:
            server.terminate()
            server.wait(timeout=30)
        yield Session(
            *observed,
            saved_ipynb=json.loads((notebooks / f"{STEM}.ipynb").read_text(encoding="utf-8")),
            saved_py=(notebooks / f"{STEM}.py").read_text(encoding="utf-8"),
            committed_ipynb=json.loads((NOTEBOOKS / f"{STEM}.ipynb").read_text(encoding="utf-8")),
            committed_py=(NOTEBOOKS / f"{STEM}.py").read_text(encoding="utf-8"),
            seconds=time.monotonic() - start,
            server_log=log_path.read_text(encoding="utf-8", errors="replace"),
            explorer=explorer,
        )


def _text(outputs: list[dict]) -> str:
    return "".join(o.get("text", "") if isinstance(o.get("text", ""), str) else "".join(o["text"]) for o in outputs)


def test_the_notebook_picks_the_project_kernel(session):
    assert session.kernel == "python3", session.server_log[-2000:]


def test_run_all_runs_every_cell_without_an_error(session):
    code = [c for c in session.cells if c["type"] == "code"]
    assert all(c["executionCount"] is not None for c in code)
    errors = [(i, o["ename"], o["evalue"]) for i, c in enumerate(session.cells) for o in c["outputs"]
              if o["output_type"] == "error"]
    assert not errors, errors


def test_nothing_but_warnings_on_stderr(session):
    stderr = [(i, o["text"]) for i, c in enumerate(session.cells) for o in c["outputs"]
              if o["output_type"] == "stream" and o["name"] == "stderr" and "Warning" not in o["text"]]
    assert not stderr, stderr


def test_training_shows_one_live_widget_bar_per_experiment(session):
    [training] = [c for c in session.cells if "progress(" in c["source"] and "train(" in c["source"]]
    widgets = [o for o in training["outputs"] if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert len(widgets) == 1, training["outputs"]


def test_no_solution_output_is_visible_before_the_solution_is_opened(session):
    solutions = [c for c in session.cells if "solution" in c["tags"]]
    assert solutions and all(c["outputs"] for c in solutions)  # they ran, and printed [passed]
    # Running a cell unfolds its output (JupyterLab 4.6 resets outputs_hidden), so the folded
    # Solutions section is what keeps them out of sight after Run All.
    [heading] = [c for c in session.cells if c["source"].startswith("## Solutions")]
    assert heading["headingCollapsed"] is True
    assert all(c["hidden"] for c in solutions), [(c["source"][:30], c["hidden"]) for c in solutions]
    assert session.visible_passed == 0


def test_a_wrong_answer_shows_the_hint_alone(session):
    outputs = session.wrong_cell["outputs"]
    assert [o["output_type"] for o in outputs] == ["stream"], outputs  # no error output: Run All would go on
    text = _text(outputs)
    assert text.startswith("[not yet] Exercise 2") and "both models are untrained" in text, text
    assert "Traceback" not in text and "File " not in text and "exercises" not in text, text


def test_saving_writes_the_paired_script(session):
    assert WRONG_ANSWER in session.saved_py and WRONG_ANSWER not in session.committed_py
    paired = jupytext.reads(session.saved_py, "py:percent")
    solutions = [c for c in paired.cells if "solution" in c.metadata.get("tags", [])]
    assert solutions and all(c.metadata.get("jupyter") == {"source_hidden": True} for c in solutions), [
        c.metadata for c in solutions]
    # apart from the student's edit, the .py is the committed one
    assert session.saved_py.replace(WRONG_ANSWER, STUB) == session.committed_py


def test_running_and_saving_leave_the_metadata_as_committed(session):
    assert session.saved_ipynb["metadata"] == session.committed_ipynb["metadata"]
    saved_cells = [c["metadata"] for c in session.saved_ipynb["cells"]]
    committed_cells = [c["metadata"] for c in session.committed_ipynb["cells"]]
    assert saved_cells == committed_cells


def test_no_news_pop_up(session):
    assert session.visible_news_prompt == 0


def test_an_explorer_shows_sliders_that_redraw_its_figure(session):
    before, after = session.explorer["before"], session.explorer["after"]
    assert before["sliders"] == 2 and before["readouts"] == ["8", "64"], before  # heads, length L
    assert before["image"] and before["plainImages"] == 0  # the widget, not the fallback figure
    assert after["readouts"] == ["9", "64"] and after["image"] != before["image"], after
    [output] = session.explorer["outputs"]
    assert output["data"].keys() >= {"application/vnd.jupyter.widget-view+json", "image/png", "text/plain"}
    assert output["data"]["text/plain"].startswith("<Figure size")  # what nbval compares, as executed


def test_the_session_fits_in_make_test(session):
    assert session.seconds < 120, f"the JupyterLab session took {session.seconds:.0f} s"

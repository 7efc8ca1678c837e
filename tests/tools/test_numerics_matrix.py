"""The numerics matrix compares outputs as nbval does, and tags only what stayed the same."""

from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

from tools import numerics_matrix as matrix


def notebook(*outputs: list) -> nbformat.NotebookNode:
    return new_notebook(cells=[new_code_cell(f"print({i})", outputs=o) for i, o in enumerate(outputs)])


def stream(text: str) -> nbformat.NotebookNode:
    return new_output("stream", name="stdout", text=text)


def figure(png: str) -> nbformat.NotebookNode:
    return new_output("display_data", data={"image/png": png, "text/plain": "<Figure size 640x480 with 1 Axes>"})


def test_the_configurations_cover_every_knob():
    values = {}
    reference = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_CBWR": "COMPATIBLE"}
    for knob in matrix.KNOBS:
        values[knob] = {reference[knob]} | {settings[knob] for settings, _ in matrix.CONFIGS.values()}
    assert values["ATEN_CPU_CAPABILITY"] == {"default", "avx2", matrix.NATIVE}
    assert len(values["ONEDNN_MAX_CPU_ISA"]) == 3 and len(values["MKL_CBWR"]) == 3
    assert {threads for _, threads in matrix.CONFIGS.values()} | {1} == {1, 2}


def test_config_env_unsets_native_knobs_and_sets_threads(monkeypatch):
    monkeypatch.setenv("MKL_CBWR", "COMPATIBLE")
    env = matrix.config_env("native-2threads")
    assert not set(matrix.KNOBS) & set(env)
    assert env["OMP_NUM_THREADS"] == env["POSENC_NUM_THREADS"] == "2"
    assert matrix.config_env("default")["ATEN_CPU_CAPABILITY"] == "default"


def test_comparison_skips_images_and_applies_the_sanitizers(tmp_path):
    sanitizers = matrix.load_sanitizers()
    a = notebook([stream("loss 0.25 [00:01<00:00, 3.2it/s]\n"), figure("AAAA")], [stream("0.622\n")])
    b = notebook([stream("loss 0.25 [00:03<00:00, 1.1it/s]\n"), figure("BBBB")], [stream("0.667\n")])
    nbformat.write(a, tmp_path / "a.ipynb")
    nbformat.write(b, tmp_path / "b.ipynb")
    differ = matrix.differing_cells(tmp_path / "a.ipynb", tmp_path / "b.ipynb", sanitizers)
    assert list(differ) == [1] and differ[1] == pytest.approx(0.045)


def test_largest_change_only_where_the_texts_differ_in_numbers_alone():
    assert matrix.largest_change("acc 0.622 ± 0.139", "acc 0.667 ± 0.200") == pytest.approx(0.061)
    assert matrix.largest_change("verdict: absolute", "verdict: none") is None


def test_tags_go_to_stable_cells_with_outputs_only(tmp_path, monkeypatch):
    monkeypatch.setattr(matrix.subprocess, "run", lambda *args, **kwargs: None)  # no .py to sync here
    nb = notebook([stream("same\n")], [stream("differs\n")], [])
    nb.cells[1].metadata["tags"] = [matrix.TAG, "exercise"]
    path = tmp_path / "n.ipynb"
    nbformat.write(nb, path)
    assert matrix.write_tags(path, unstable={1}) == 1
    tags = [c.metadata.get("tags") for c in nbformat.read(path, as_version=4).cells]
    assert tags == [[matrix.TAG], ["exercise"], None]


@pytest.mark.parametrize("source", ["# NBVAL_IGNORE_OUTPUT\nprint(1)", "# NBVAL_SKIP\nprint(1)"])
def test_ignored_cells_are_never_tagged(tmp_path, monkeypatch, source):
    monkeypatch.setattr(matrix.subprocess, "run", lambda *args, **kwargs: None)
    nb = notebook([stream("1\n")])
    nb.cells[0].source = source
    nbformat.write(nb, tmp_path / "n.ipynb")
    assert matrix.write_tags(tmp_path / "n.ipynb", unstable=set()) == 0

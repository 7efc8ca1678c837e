"""The explorers (posenc_course.explorers): their values against the library and the properties the
notebooks state, the static figure, the ipywidgets UI, how a notebook shows them, and the export the
site's script draws from (tests/tools/test_site.py and tests/tools/test_check_site.py check the site itself)."""

from __future__ import annotations

import base64
import itertools
import json
import math

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc_course import explorers as ex
from posenc_course import training
from posenc_course.plotting import MAX_WIDTH_IN, use_style
from posenc_lib.embeddings.sinusoidal import sinusoidal_frequencies, sinusoidal_table
from posenc_lib.rotary.rope import rope_inv_freq
from posenc_lib.rotary.scaling import rope_frequencies
from posenc_lib.score_bias.alibi import alibi_bias, alibi_slopes
from posenc_lib.score_bias.t5 import t5_relative_bucket

BASES = st.sampled_from([10.0, 100.0, 1000.0, 10000.0, 1e5, 1e6])


@pytest.fixture(autouse=True)
def series_style():
    """The figures are drawn in the series' style (setup_notebook sets it in a notebook)."""
    with plt.rc_context():
        use_style()
        yield
    plt.close("all")


# --- the values: the library's numbers, and the properties the notebooks state -----------------------


def test_sinusoidal_values_are_the_table_row_its_similarities_and_wavelengths():
    v = ex.sinusoidal_values(10, 1000.0, d_model=16, n_positions=20)
    table = sinusoidal_table(20, 16, base=1000.0, dtype=torch.float64)
    assert np.array_equal(v["sine"], table[10, 0::2].numpy()) and np.array_equal(v["cosine"], table[10, 1::2].numpy())
    cosine = torch.nn.functional.cosine_similarity(table, table[10][None], dim=-1).numpy()
    np.testing.assert_allclose(v["similarity"], cosine, rtol=0, atol=1e-12)
    np.testing.assert_allclose(v["wavelength"], 2 * math.pi / sinusoidal_frequencies(16, 1000.0).numpy(), rtol=1e-15)
    assert v["marker"].tolist() == [10] and v["shown"].tolist() == [20] and len(v["position"]) == 20


@settings(max_examples=30, deadline=None)
@given(p=st.integers(0, 63), q=st.integers(0, 63), base=BASES)
def test_sinusoidal_similarity_is_symmetric_peaks_at_p_and_depends_on_the_distance_only(p, q, base):
    at_p, at_q = ex.sinusoidal_values(p, base), ex.sinusoidal_values(q, base)
    assert abs(at_p["similarity"][q] - at_q["similarity"][p]) < 1e-12
    assert abs(at_p["similarity"][p] - 1) < 1e-12 and at_p["similarity"].max() <= 1 + 1e-12
    shift = q - p  # the similarity curve of q is the curve of p moved by q - p, where both are drawn
    lo, hi = max(0, -shift), min(64, 64 - shift)
    np.testing.assert_allclose(at_p["similarity"][lo:hi], at_q["similarity"][lo + shift:hi + shift], atol=1e-12)


def test_rope_values_are_the_library_rotations_and_their_scores():
    v = ex.rope_values(7, 30)
    q, k = torch.tensor(ex.ROPE_QUERY, dtype=torch.float64), torch.tensor(ex.ROPE_KEY, dtype=torch.float64)
    inv_freq = rope_inv_freq(8).double()

    def turned(x, positions):  # Meta's complex form, another path than the explorer's apply_rope
        angles = positions.double()[:, None] * inv_freq
        z = torch.view_as_complex(x.reshape(*x.shape[:-1], 4, 2).contiguous())
        return torch.view_as_real(z * torch.polar(torch.ones_like(angles), angles)).flatten(-2)

    keys = turned(k.expand(48, 8), torch.arange(48))
    query = turned(q[None], torch.tensor([7]))[0]
    np.testing.assert_allclose(v["q_rotated"], query.reshape(4, 2).numpy(), atol=1e-12)
    np.testing.assert_allclose(v["k_rotated"], keys[30].reshape(4, 2).numpy(), atol=1e-12)
    np.testing.assert_allclose(v["score"], (keys @ query).numpy(), atol=1e-12)
    assert v["offset"].tolist() == list(range(-7, 41)) and v["marker_offset"].tolist() == [23]
    assert v["marker_score"][0] == v["score"][30]
    bound = float(q.norm() * k.norm())
    assert np.all(np.abs(v["score"]) <= bound) and v["score_limits"].tolist() == pytest.approx([-1.05 * bound, 1.05 * bound])


@settings(max_examples=40, deadline=None)
@given(m=st.integers(0, 47), n=st.integers(0, 47), c=st.integers(-47, 47))
def test_rope_score_is_unchanged_when_m_and_n_move_together_and_rotations_keep_lengths(m, n, c):
    c = min(max(c, -min(m, n)), 47 - max(m, n))  # keep both positions on the grid
    v, moved = ex.rope_values(m, n), ex.rope_values(m + c, n + c)
    assert abs(v["marker_score"][0] - moved["marker_score"][0]) < 1e-12
    assert v["marker_offset"].tolist() == moved["marker_offset"].tolist()
    pairs = np.asarray(ex.ROPE_QUERY).reshape(4, 2)
    np.testing.assert_allclose(np.linalg.norm(v["q_rotated"], axis=1), np.linalg.norm(pairs, axis=1), atol=1e-12)


def test_rope_score_of_a_query_and_key_at_one_position_is_their_dot_product():
    q_dot_k = float(np.dot(ex.ROPE_QUERY, ex.ROPE_KEY))
    assert all(abs(ex.rope_values(m, m)["marker_score"][0] - q_dot_k) < 1e-12 for m in (0, 13, 47))
    assert abs(ex.rope_values(5, 20)["marker_score"][0] - ex.rope_values(5, 12)["marker_score"][0]) > 0.1


@pytest.mark.parametrize("heads, length", [(1, 2), (8, 64), (12, 256), (16, 8)])
def test_relative_values_are_the_library_buckets_slopes_and_biases(heads, length):
    v = ex.relative_values(heads, length)
    offsets = torch.arange(-(length - 1), length)
    assert v["offset"].tolist() == offsets.tolist()
    assert np.array_equal(v["t5_bidirectional"], t5_relative_bucket(offsets, True).numpy())
    assert np.array_equal(v["t5_causal"], t5_relative_bucket(offsets, False).numpy())
    assert np.array_equal(v["slope"], alibi_slopes(heads).double().numpy()) and v["head"].tolist() == list(range(1, heads + 1))
    keys = torch.as_tensor(v["key"])
    assert keys[0] == 0 and keys[-1] == length - 1 and len(keys) == min(17, length) and torch.all(keys.diff() > 0)
    expected = alibi_bias(alibi_slopes(heads), torch.tensor([[length - 1]]), keys[None])[0, :, 0, :]
    np.testing.assert_array_equal(v["alibi_bias"], expected.double().numpy())
    assert np.all(v["alibi_bias"][:, -1] == 0)  # the last query against itself
    assert v["max_distance"].tolist() == ([-128, 128] if length > 128 else [])
    low, high = v["bias_limits"]
    assert low <= v["alibi_bias"].min() and high >= 0


@pytest.mark.parametrize("method", list(ex.CONTEXT_METHODS))
@pytest.mark.parametrize("factor", [1.0, 1.5, 8.0, 32.0])
def test_context_values_are_rope_frequencies(method, factor):
    v = ex.context_values(method, factor)
    config = {"rope_type": method, "factor": factor, "original_max_position_embeddings": 4096}
    seq_len = None
    if method in ("linear", "ntk"):
        del config["original_max_position_embeddings"]
    elif method == "dynamic":
        config["factor"], seq_len = 1.0, int(factor * 4096)
    elif method == "llama3":
        config |= {"low_freq_factor": 1.0, "high_freq_factor": 4.0}
    scaled = rope_frequencies(128, config, seq_len)[0].double().numpy()
    plain = rope_inv_freq(128).double().numpy()
    np.testing.assert_array_equal(v["ratio"], scaled / plain)
    np.testing.assert_allclose(v["scaled_wavelength"], 2 * math.pi / scaled, rtol=1e-15)
    np.testing.assert_allclose(v["wavelength"], 2 * math.pi / plain, rtol=1e-15)
    assert v["trained"].tolist() == [4096] and v["target"].tolist() == [factor * 4096]
    assert np.all(np.diff(v["ratio"]) <= 1e-7)  # every rule slows a pair at least as much as the faster ones
    assert np.all(v["ratio"] <= 1 + 1e-6) and np.all(v["ratio"] >= 1 / factor - 1e-6)
    if factor == 1.0:
        np.testing.assert_allclose(v["ratio"], 1, rtol=0, atol=1e-6)  # nothing to extend: nothing moves


def test_context_rules_keep_fast_pairs_and_interpolate_slow_ones_as_notebook_06_says():
    values = {method: ex.context_values(method, 8.0) for method in ex.CONTEXT_METHODS}
    slow = values["linear"]["wavelength"] > 4096
    np.testing.assert_allclose(values["linear"]["ratio"], 1 / 8)
    for method in ("yarn", "llama3"):
        np.testing.assert_allclose(values[method]["ratio"][slow], 1 / 8, rtol=1e-6)
        assert values[method]["ratio"][0] == 1
    assert np.all(values["llama3"]["ratio"][values["llama3"]["wavelength"] < 1024] == 1)
    assert values["ntk"]["ratio"][0] == 1 and abs(values["ntk"]["ratio"][-1] - 1 / 8) < 1e-6
    np.testing.assert_array_equal(values["dynamic"]["ratio"], values["ntk"]["ratio"])


# --- the description: controls, panels, ticks --------------------------------------------------------


@pytest.mark.parametrize("name", list(ex.EXPLORERS))
def test_every_series_reads_arrays_the_values_function_returns(name):
    explorer = ex.EXPLORERS[name]
    values = explorer.values(explorer.default_state)
    drawn = ex.panel_arrays(explorer, values)
    mosaic = {key for row in explorer.mosaic for key in row}
    assert mosaic == {p.key for p in explorer.panels}
    for panel in explorer.panels:
        assert panel.title and panel.xlabel and panel.ylabel
        for axis in ("x", "y"):
            low, high = drawn[f"{panel.key}:{axis}lim"]
            ticks, labels = drawn[f"{panel.key}:{axis}ticks"]
            assert low < high and len(ticks) == len(labels) >= 2
            assert all(low - 1e-9 * (high - low) <= t <= high + 1e-9 * (high - low) for t in ticks)
    assert explorer.call == f"{name}_explorer" and callable(getattr(ex, explorer.call))


def test_axis_ticks():
    assert ex.axis_ticks(0, 63, "linear") == ((0.0, 20.0, 40.0, 60.0), ("0", "20", "40", "60"))
    assert ex.axis_ticks(-47, 47, "linear") == ((-40.0, -20.0, 0.0, 20.0, 40.0), ("−40", "−20", "0", "20", "40"))
    assert ex.axis_ticks(-1.05, 1.05, "linear")[1] == ("−1", "−0.5", "0", "0.5", "1")
    values, labels = ex.axis_ticks(2.0, 4e6, "log")
    assert values == (10.0, 100.0, 1000.0, 1e4, 1e5, 1e6) and labels[0] == "10^1" and labels[-1] == "10^6"
    assert ex.axis_ticks(1e-9, 1e9, "log")[1] == ("10^−9", "10^−7", "10^−5", "10^−3", "10^−1", "10^1", "10^3", "10^5", "10^7", "10^9")


def test_a_control_must_offer_its_default():
    with pytest.raises(ValueError, match="default 5 is not one of its options"):
        ex.Control("x", "x", (1, 2), 5)


# --- the static figure ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(ex.EXPLORERS))
def test_the_static_figure_fits_the_column_with_readable_titled_panels(name):
    explorer = ex.EXPLORERS[name]
    fig = ex.explorer_figure(explorer)
    assert fig.get_size_inches()[0] <= MAX_WIDTH_IN
    assert fig.get_suptitle() == explorer.caption(explorer.default_state)
    assert {ax.get_title() for ax in fig.axes} == {p.title for p in explorer.panels}
    fig.canvas.draw()
    sizes = [t.get_fontsize() for t in fig.findobj(plt.Text) if t.get_text() and t.get_visible()]
    assert min(sizes) >= 10  # the series' smallest text: axis labels, ticks and legends at 10 pt


def test_the_static_figure_draws_the_values_of_the_state_asked_for():
    fig = ex.explorer_figure(ex.SINUSOIDAL, {"position": 3, "base": 100.0})
    ax = next(a for a in fig.axes if a.get_title().startswith("Similarity"))
    line = ax.get_lines()[0]
    np.testing.assert_array_equal(line.get_ydata(), ex.sinusoidal_values(3, 100.0)["similarity"])
    assert "position p = 3, base = 100" in fig.get_suptitle()


# --- in a notebook: widgets where a frontend draws them, the static figure everywhere else ---------------


@pytest.fixture
def displayed(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj, **kwargs: shown.append((obj, kwargs)))
    return shown


def test_without_a_widget_frontend_the_explorer_shows_its_static_figure(displayed, monkeypatch):
    monkeypatch.setenv("POSENC_DETERMINISTIC", "1")
    monkeypatch.setattr(training, "_in_jupyter_kernel", lambda: True)  # a kernel, but make execute / nbval
    before = plt.get_fignums()
    ex.rope_explorer()
    [(figure, kwargs)] = displayed
    assert isinstance(figure, plt.Figure) and kwargs == {}
    assert figure.get_suptitle() == ex.ROPE.caption(ex.ROPE.default_state)
    assert plt.get_fignums() == before  # closed: the inline backend does not show it a second time


def test_with_a_widget_frontend_the_output_is_the_widget_with_the_static_figure_as_fallback(displayed, monkeypatch):
    monkeypatch.delenv("POSENC_DETERMINISTIC", raising=False)
    monkeypatch.setattr(training, "_in_jupyter_kernel", lambda: True)
    assert training.live_widgets()
    ex.context_explorer()
    [(bundle, kwargs)] = displayed
    assert kwargs == {"raw": True}
    assert bundle.keys() == {"application/vnd.jupyter.widget-view+json", "image/png", "text/plain"}
    reference = ex.explorer_figure(ex.CONTEXT)
    assert bundle["text/plain"] == repr(reference)  # what nbval compares, as in the static output
    assert base64.b64decode(bundle["image/png"]) == ex._png(reference)  # the static figure, for viewers without widgets


def test_interactive_can_be_forced_either_way(displayed):
    ex.sinusoidal_explorer(interactive=True)
    ex.sinusoidal_explorer(interactive=False)
    assert isinstance(displayed[0][0], dict) and isinstance(displayed[1][0], plt.Figure)


def test_live_widgets_needs_a_kernel_and_no_deterministic_run(monkeypatch):
    monkeypatch.delenv("POSENC_DETERMINISTIC", raising=False)
    assert not training.live_widgets()  # pytest is no Jupyter kernel
    monkeypatch.setattr(training, "_in_jupyter_kernel", lambda: True)
    assert training.live_widgets()
    monkeypatch.setenv("POSENC_DETERMINISTIC", "1")
    assert not training.live_widgets()


def test_the_widget_redraws_with_the_library_while_a_control_moves():
    import ipywidgets

    box = ex.explorer_widget(ex.RELATIVE)
    controls, image = box.children
    sliders = {w.description: w for w in controls.children}
    assert set(sliders) == {"heads", "length L"} and isinstance(image, ipywidgets.Image)
    assert all(isinstance(w, ipywidgets.SelectionSlider) and w.continuous_update for w in sliders.values())
    first = image.value
    sliders["heads"].value = 12
    assert image.value != first
    assert image.value == ex.LiveFigure(ex.RELATIVE).png({"n_heads": 12, "length": 64})  # that setting, drawn afresh
    menu = ex.explorer_widget(ex.CONTEXT).children[0].children[0]
    assert isinstance(menu, ipywidgets.Dropdown) and menu.options[0] == ("PI (linear)", "linear")


def _settings(explorer: ex.Explorer) -> list[dict]:
    """A walk over the controls: each control to its first, last and a middle option, one after the other."""
    state, walk = dict(explorer.default_state), []
    for c in explorer.controls:
        for value in (c.options[0], c.options[-1], c.options[len(c.options) // 2]):
            state = {**state, c.name: value}
            walk.append(state)
    return walk


@pytest.mark.parametrize("name", list(ex.EXPLORERS))
def test_a_figure_redrawn_in_place_is_the_figure_drawn_afresh(name):
    """The live figure keeps its background and layout while it can: nothing of an earlier setting stays.

    Same artists with the same data, titles, limits and ticks; the same pixels where the walk keeps the
    layout (constrained layout starts from the axes' last positions, so a re-run may shift a panel by a
    fraction of a pixel: the relative explorer's ticks change with its controls)."""
    explorer = ex.EXPLORERS[name]
    live = ex.LiveFigure(explorer)
    first = live.png()
    for state in _settings(explorer):
        afresh = ex.LiveFigure(explorer)
        redrawn_png, afresh_png = live.png(state), afresh.png(state)
        assert _drawn(live) == _drawn(afresh), state
        if name != "relative":
            assert redrawn_png == afresh_png, state
    assert name == "relative" or live.png() == first


def _drawn(live: ex.LiveFigure) -> list:
    """What a live figure shows, artist by artist."""
    def describe(artist):
        if hasattr(artist, "get_xydata"):
            return ("line", artist.get_xydata().round(9).tolist(), artist.get_color(), artist.get_linestyle())
        if hasattr(artist, "xy"):
            return ("arrow", tuple(np.round(artist.xy, 9)))
        if hasattr(artist, "get_texts"):
            return ("legend", [t.get_text() for t in artist.get_texts()])
        return (type(artist).__name__, getattr(artist, "get_text", lambda: None)())

    fig = live.figure
    shown = [describe(a) for a in [*fig.texts, *fig.legends]]
    for ax in fig.axes:
        shown.append((ax.get_title(), ax.get_xlim(), ax.get_ylim(), [t.get_text() for t in ax.get_xticklabels()],
                      [t.get_text() for t in ax.get_yticklabels()], [describe(a) for a in ex._changing(ax)]))
    return shown


def _pixels(png: bytes) -> np.ndarray:
    from io import BytesIO

    from PIL import Image

    return np.asarray(Image.open(BytesIO(png))).astype(int)


@pytest.mark.parametrize("name", list(ex.EXPLORERS))
def test_the_live_figure_is_the_static_figure_at_screen_resolution(name):
    """Same panels, title and drawing as the static figure; 96 px per inch at the live size (the 01 explorer's
    wider and shorter than its static figure), so the 01 explorer fits a screen."""
    explorer = ex.EXPLORERS[name]
    live = ex.LiveFigure(explorer)
    height, width = _pixels(live.png()).shape[:2]
    size = explorer.live_figsize or explorer.figsize
    assert (width, height) == (int(size[0] * ex.LIVE_DPI), int(size[1] * ex.LIVE_DPI))
    assert height <= 620  # with the sliders' row (about 40 px): under the ~660 px a 1280x800 screen shows of a notebook
    if name == "sinusoidal":
        assert height <= 450 and width <= 830  # sliders and figure within ~560 px, in a 1280 px window's column
    static = ex.explorer_figure(explorer)
    assert live.figure.get_suptitle() == static.get_suptitle()
    assert [a.get_title() for a in live.figure.axes] == [a.get_title() for a in static.axes]


def test_showing_an_explorer_again_closes_the_widgets_shown_before(displayed):
    """Re-running an explorer's cell leaves one live copy in the kernel, the one JupyterLab saves."""
    ex.sinusoidal_explorer(interactive=True)
    first = ex._SHOWN["sinusoidal"]
    parts = [first, *first.children, *first.children[0].children]
    ex.sinusoidal_explorer(interactive=True)
    assert ex._SHOWN["sinusoidal"] is not first
    assert all(w.comm is None for w in parts)  # closed
    assert ex._SHOWN["sinusoidal"].comm is not None or ex._SHOWN["sinusoidal"].model_id


# --- the site: the library's values on the whole control grid ---------------------------------------------


@pytest.fixture(scope="module")
def exported() -> dict[str, dict]:
    return {name: ex.export_explorer(explorer) for name, explorer in ex.EXPLORERS.items()}


def lookup(data: dict, key: str, indices: dict[str, int]):
    """What the site's script does (posenc_explorer.js, lookup): row-major index over the key's controls."""
    entry, index = data["values"][key], 0
    sizes = {c["name"]: len(c["options"]) for c in data["controls"]}
    for name in entry["controls"]:
        index = index * sizes[name] + indices[name]
    return entry["arrays"][index]


@pytest.mark.parametrize("name", list(ex.EXPLORERS))
def test_each_explorer_adds_under_1_mb_to_the_site(name, exported):
    size = len(json.dumps(exported[name], ensure_ascii=False, separators=(",", ":")).encode())
    assert size < 1_000_000, f"{name}: {size / 1e6:.2f} MB"


@pytest.mark.parametrize("name", list(ex.EXPLORERS))
def test_the_export_holds_the_library_values_of_every_setting(name, exported):
    explorer, data = ex.EXPLORERS[name], exported[name]
    assert [c["name"] for c in data["controls"]] == [c.name for c in explorer.controls]
    grid = [range(len(c.options)) for c in explorer.controls]
    corners = [tuple(0 for _ in grid), tuple(len(g) - 1 for g in grid),
               tuple(c.options.index(c.default) for c in explorer.controls)]
    rng = np.random.default_rng(0)
    picks = corners + [tuple(int(rng.integers(len(g))) for g in grid) for _ in range(5)]
    for pick in picks:
        state = {c.name: c.options[i] for c, i in zip(explorer.controls, pick)}
        indices = {c.name: i for c, i in zip(explorer.controls, pick)}
        drawn = ex.panel_arrays(explorer, explorer.values(state))
        assert set(drawn) == set(data["values"])
        for key, value in drawn.items():
            got, want = lookup(data, key, indices), value
            if isinstance(want, np.ndarray) or (isinstance(want, list) and not isinstance(want[0], list)):
                np.testing.assert_allclose(np.asarray(got, dtype=float), np.asarray(want, dtype=float), rtol=5e-4, atol=1e-12)
            else:  # ticks: (values, labels)
                np.testing.assert_allclose(got[0], want[0], rtol=5e-4)
                assert got[1] == list(want[1])


def test_the_export_stores_each_array_once_per_setting_of_the_controls_it_depends_on(exported):
    values = exported["sinusoidal"]["values"]
    assert values["wavelength"]["controls"] == ["base"] and len(values["wavelength"]["arrays"]) == 6
    assert values["sine"]["controls"] == ["position", "base"] and len(values["sine"]["arrays"]) == 64 * 6
    assert values["pair"]["controls"] == [] and len(values["pair"]["arrays"]) == 1
    rope = exported["rope"]["values"]
    assert rope["q_rotated"]["controls"] == ["query_position"] and rope["k_rotated"]["controls"] == ["key_position"]
    assert rope["marker_score"]["controls"] == ["query_position", "key_position"]


def test_the_export_carries_the_series_style_whatever_the_callers(exported):
    with plt.rc_context({"lines.linewidth": 0.5}):
        again = ex.export_explorer(ex.CONTEXT)
    assert again["style"] == exported["context"]["style"]
    assert again["style"]["linewidth"] == 1.8 and again["style"]["dashes"][0] == []
    assert again["style"]["dashes"][1] == [round(3.7 * 1.8, 2), round(1.6 * 1.8, 2)]  # matplotlib's "--", scaled


def test_every_control_of_the_grid_changes_something_drawn(exported):
    for name, data in exported.items():
        used = {c for entry in data["values"].values() for c in entry["controls"]}
        assert used == {c["name"] for c in data["controls"]}, name


@pytest.mark.parametrize("name", list(ex.EXPLORERS))
def test_the_export_is_deterministic(name, exported):
    assert json.dumps(ex.export_explorer(ex.EXPLORERS[name])) == json.dumps(exported[name])


def test_grid_sizes_are_what_the_site_shows():
    sizes = {name: math.prod(len(c.options) for c in e.controls) for name, e in ex.EXPLORERS.items()}
    assert sizes == {"sinusoidal": 64 * 6, "rope": 48 * 48, "relative": 16 * 6, "context": 5 * 11}
    assert list(itertools.chain.from_iterable(c.options for c in ex.CONTEXT.controls[:1])) == list(ex.CONTEXT_METHODS)

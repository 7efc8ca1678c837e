"""Every figure of the executed notebooks fits the site's text column (the series' house rule)."""

from __future__ import annotations

import base64
import struct
from pathlib import Path

import nbformat
import pytest

from posenc_course.plotting import MAX_WIDTH_IN

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
DPI = 150  # use_style's figure.dpi


def png_size(data: str) -> tuple[int, int]:
    """(width, height) in pixels of a base64 PNG, from its IHDR chunk."""
    raw = base64.b64decode(data[:64])
    if raw[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    return struct.unpack(">II", raw[16:24])


def test_png_size_reads_the_header():
    one_by_two = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAACCAYAAACZgbYnAAAAC0lEQVR4nGNggAEAAAoAAX+AdF4AAAAASUVORK5CYII="
    assert png_size(one_by_two) == (1, 2)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_figure_is_at_most_the_column_width(path):
    nb = nbformat.read(path, as_version=4)
    limit = round((MAX_WIDTH_IN + 0.2) * DPI)  # + the inline backend's padding, 0.1 in on each side
    too_wide = []
    figures = 0
    for i, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        for out in cell.get("outputs", []):
            if "image/png" in out.get("data", {}):
                figures += 1
                width, _ = png_size(out["data"]["image/png"])
                if width > limit:
                    too_wide.append(f"code cell {i}: {width} px ({width / DPI:.1f} in)")
    assert figures, f"{path.name} shows no figure"
    assert not too_wide, (f"{path.name}: figures wider than {MAX_WIDTH_IN} in at {DPI} dpi ({limit} px): "
                          + "; ".join(too_wide) + " (stack or wrap the panels, see plotting.MAX_WIDTH_IN)")

"""The plotting helpers the notebooks share."""

from __future__ import annotations

import numpy as np
import pytest

from posenc_course.plotting import moving_average


def test_moving_average_is_the_mean_of_each_window():
    values = [1.0, 2.0, 6.0, 3.0, 8.0]
    np.testing.assert_allclose(moving_average(values, window=2), [1.5, 4.0, 4.5, 5.5])
    np.testing.assert_allclose(moving_average(values, window=1), values)
    assert moving_average(values, window=5).shape == (1,)


@pytest.mark.parametrize("window", [0, 6, 2.0])
def test_moving_average_rejects_a_window_that_does_not_fit(window):
    with pytest.raises(ValueError, match=r"window must be an int in \[1, len\(values\)=5\]"):
        moving_average([1.0] * 5, window=window)


def test_style_is_sharp_and_no_text_is_smaller_than_the_axis_labels():
    import matplotlib as mpl
    from matplotlib.font_manager import FontProperties

    from posenc_course.plotting import use_style

    with mpl.rc_context():
        use_style()
        assert mpl.rcParams["figure.dpi"] >= 150 and mpl.rcParams["savefig.dpi"] >= 150
        size = lambda key: FontProperties(size=mpl.rcParams[key]).get_size_in_points()  # noqa: E731
        assert all(size(key) >= size("axes.labelsize") for key in ("legend.fontsize", "xtick.labelsize", "ytick.labelsize"))

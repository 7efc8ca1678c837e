"""Set-up for the course's tests: the exercise checkers in strict mode."""

from __future__ import annotations

import pytest

from posenc_course.exercises import strict


@pytest.fixture
def strict_checkers():
    """Make the exercise checkers raise ExerciseFailure on a wrong answer instead of printing the hint.

    In a notebook a wrong answer prints "[not yet] ..." and the notebook runs on; a test wants to
    assert on the rejection and its hint. Opt in per module with
    ``pytestmark = pytest.mark.usefixtures("strict_checkers")``.
    """
    with strict():
        yield

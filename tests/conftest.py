"""Shared test set-up: reproducible Hypothesis runs, and three tiny position schemes for testing the core.

The schemes below are deliberately minimal stand-ins for the three places a real encoding acts
(embedding, rotation of q/k, score bias); they let the core tests check position plumbing
(KV-cache offsets, masks, symmetry) without depending on the encodings under test elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from hypothesis import settings
from torch import Tensor, nn

from posenc_course.numerics import separate_inductor_cache
from posenc_lib.scheme import NoPosition, PositionScheme

separate_inductor_cache()  # before any test compiles: one inductor cache per forced ATEN_CPU_CAPABILITY level

# Same examples on every run and machine; no per-example deadline (2 shared CPU cores are slow and noisy).
settings.register_profile("posenc", derandomize=True, deadline=None, print_blob=True)
settings.load_profile("posenc")


# The order in which xdist (--dist loadfile: whole files, handed out in collection order to whichever worker is free)
# starts the work, longest first, so that the two workers finish together instead of one starting a long file
# when the other is nearly done. `make test` runs the notebooks (nbval) in the same session: they come first, in
# the order given on the command line (the catalog's run times, longest first); then the test files that take a
# minute or more (a site render and browser check, the catalogs' extraction, benchmarks); then the rest. Two
# long files are marked out of `make test` and run where CI runs them: the JupyterLab session (jupyterlab,
# `make check-lab`) and the browser check's own tests (checksite, `make check-site`); they stay listed for a
# plain `pytest tests`, which runs every file. test_i18n.py extracts the
# catalogs' English once (tools/i18n.templates, under a lock): early and on one worker, so that the other files
# that need it find it cached instead of waiting for it side by side.
LONGEST_FIRST = ("tests/tools/test_site.py", "tests/tools/test_i18n.py", "tests/tools/test_check_site.py",
                 "tests/tools/test_bench.py", "tests/tools/test_lab.py")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}

    def key(item: pytest.Item) -> int:
        path = item.nodeid.split("::")[0]
        return -1 if path.endswith(".ipynb") else rank.get(path, len(rank))

    items.sort(key=key)  # stable: the notebooks keep the command line's order, the rest their own


@pytest.fixture(autouse=True)
def _english_messages(monkeypatch):
    """The tests read the course's English lines: a ``POSENC_LANG`` in the caller's environment (the
    Chinese edition, posenc_course/i18n.py) would translate them. Tests of the Chinese set it themselves."""
    monkeypatch.delenv("POSENC_LANG", raising=False)


class AddedTable(PositionScheme):
    """Adds a random fixed row per position to the embeddings (a learnable-table stand-in)."""

    kind = "embedding"

    def __init__(self, max_len: int, d_model: int):
        super().__init__()
        self.table = nn.Parameter(torch.randn(max_len, d_model, generator=torch.Generator().manual_seed(1)))

    def add_to_embeddings(self, x: Tensor, positions: Tensor) -> Tensor:
        return x + self.table[positions].to(x.dtype)


class PairRotation(PositionScheme):
    """Rotates each pair (x[2i], x[2i+1]) of q and k by the angle position / (i + 1) (a RoPE stand-in)."""

    kind = "rotary"

    def rotate_qk(self, q: Tensor, k: Tensor, positions: Tensor) -> tuple[Tensor, Tensor]:
        return self._rotate(q, positions), self._rotate(k, positions)

    @staticmethod
    def _rotate(x: Tensor, positions: Tensor) -> Tensor:
        freqs = 1.0 / torch.arange(1, x.shape[-1] // 2 + 1, dtype=x.dtype)
        angle = positions[:, None, :, None].to(x.dtype) * freqs  # (batch, 1, seq, head_dim/2)
        x1, x2 = x[..., 0::2], x[..., 1::2]
        cos, sin = angle.cos(), angle.sin()
        return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


class DistanceBias(PositionScheme):
    """Adds -0.5 |i - j| to the scores (an ALiBi stand-in)."""

    kind = "bias"

    def score_bias(self, q_positions: Tensor, k_positions: Tensor) -> Tensor:
        distance = q_positions[:, None, :, None] - k_positions[:, None, None, :]
        return -0.5 * distance.abs().to(torch.float32)


@pytest.fixture
def single_thread():
    """Run a test on one intra-op thread, then restore the count.

    The core tests use tiny tensors: a second OpenMP thread only adds synchronisation, which
    on a busy 2-core machine made them 10-50x slower. Opt in per module with
    ``pytestmark = pytest.mark.usefixtures("single_thread")``; other tests keep the default.
    """
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


SchemeFactory = Callable[[str, int], PositionScheme]


@pytest.fixture
def make_scheme() -> SchemeFactory:
    """``make_scheme(name, d_model)`` with name in "none", "embedding", "rotary", "bias"."""

    def make(name: str, d_model: int) -> PositionScheme:
        schemes = {
            "none": NoPosition,
            "embedding": lambda: AddedTable(64, d_model),
            "rotary": PairRotation,
            "bias": DistanceBias,
        }
        return schemes[name]()

    return make

"""posenc_lib.analysis.pair_usage: each pair's part of the scores, its usage, and switching pairs off."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.testing import assert_close

from posenc_lib.analysis.pair_usage import WithoutPairs, pair_dims, pair_scores, pair_usage
from posenc_lib.models import TinyTransformer, with_scheme
from posenc_lib.rotary.rope import RotaryPE

pytestmark = pytest.mark.usefixtures("single_thread")


def randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_pair_dims_of_both_layouts():
    assert pair_dims(8, "half").tolist() == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert pair_dims(8, "interleaved").tolist() == [[0, 1], [2, 3], [4, 5], [6, 7]]


@settings(max_examples=25)
@given(layout=st.sampled_from(["half", "interleaved"]), head_dim=st.sampled_from([2, 4, 8, 16]), seed=st.integers(0, 999))
def test_the_parts_sum_to_the_scores_and_follow_the_rotation(layout, head_dim, seed):
    q, k = randn(2, 3, 5, head_dim, seed=seed), randn(2, 3, 6, head_dim, seed=seed + 1)
    parts = pair_scores(q, k, layout)
    assert parts.shape == (2, 3, head_dim // 2, 5, 6)
    assert_close(parts.sum(2), q @ k.transpose(-1, -2))
    # a pair's part is a 2-D dot product: turning query and key by the same angle leaves it unchanged
    rope = RotaryPE(head_dim, layout=layout)
    shift = torch.full((1, 5), 7)
    q_turned, _ = rope.rotate_qk(q, q, shift)
    k_turned, _ = rope.rotate_qk(k, k, torch.full((1, 6), 7))
    assert_close(pair_scores(q_turned, k_turned, layout), parts)


def test_usage_counts_causal_pairs_only_and_sees_a_dead_pair():
    q, k = randn(2, 2, 6, 8), randn(2, 2, 6, 8, seed=1)
    q[..., [1, 5]] = 0.0  # pair 1 of the half layout is off
    usage = pair_usage(q, k)
    assert usage.shape == (2, 4) and (usage[:, 1] == 0).all() and (usage[:, [0, 2, 3]] > 0).all()
    causal = torch.ones(6, 6, dtype=torch.bool).tril()
    assert_close(usage, pair_scores(q, k).abs()[..., causal].mean(dim=(0, -1)))
    k_future = k.clone()
    k_future[:, :, -1] = 1e6  # the last key is seen only by the last query: one causal pair, not the others
    assert not torch.allclose(pair_usage(q, k_future), usage)


def test_without_pairs_removes_exactly_their_parts_of_the_scores():
    rope = RotaryPE(8, layout="interleaved")
    off = WithoutPairs(rope, [0, 3])
    q, k = randn(1, 2, 5, 8), randn(1, 2, 5, 8, seed=2)
    positions = torch.arange(5)[None]
    full_q, full_k = rope.rotate_qk(q, k, positions)
    cut_q, cut_k = off.rotate_qk(q, k, positions)
    expected = pair_scores(full_q, full_k, "interleaved")[:, :, [1, 2]].sum(2)
    assert_close(cut_q @ cut_k.transpose(-1, -2), expected)


def test_without_pairs_in_a_model_changes_the_output_and_none_changes_nothing():
    torch.manual_seed(0)
    rope = RotaryPE(8)
    model = TinyTransformer(11, 11, 16, 2, 2, scheme=rope, causal=True, pool="none").double().eval()
    x = torch.randint(0, 11, (2, 9), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        assert_close(with_scheme(model, WithoutPairs(rope, []))(x), model(x))
        assert not torch.allclose(with_scheme(model, WithoutPairs(rope, [0]))(x), model(x), atol=1e-4)


@pytest.mark.parametrize("call, error, match", [
    (lambda: WithoutPairs("rope", [0]), TypeError, r"rope must be a RotaryPE, got str"),
    (lambda: WithoutPairs(RotaryPE(8), [4]), ValueError, r"pairs must be a list of pair indices in \[0, 4\), got \[4\]"),
    (lambda: WithoutPairs(RotaryPE(8, rotary_fraction=0.5), [0]), ValueError, r"rope must rotate its whole head"),
    (lambda: pair_scores(randn(2, 3, 8), randn(2, 3, 8)), ValueError, r"q must have shape \(batch, heads, seq, head_dim\)"),
    (lambda: pair_usage(randn(1, 2, 5, 8), randn(1, 2, 6, 8)), ValueError, r"q and k must have the same seq"),
    (lambda: pair_dims(7), ValueError, r"head_dim"),
])
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()

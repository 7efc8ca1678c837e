"""diagnostics.position_probe_accuracy: a probe that names each token's position from its hidden state."""

from __future__ import annotations

import pytest
import torch

from posenc_lib.analysis.probes import position_probe_accuracy


def _states(n: int, seq: int, d: int, with_position: bool, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    noise = torch.randn(n, seq, d, generator=gen)
    if not with_position:
        return noise
    code = torch.randn(seq, d, generator=torch.Generator().manual_seed(99))
    return noise * 0.3 + code


@pytest.mark.parametrize("hidden", [0, 16])
def test_probe_reads_position_when_present_and_is_at_chance_when_absent(hidden):
    seq = 8
    present = position_probe_accuracy(_states(256, seq, 12, True, 0), _states(128, seq, 12, True, 1),
                                      hidden=hidden, steps=150)
    absent = position_probe_accuracy(_states(256, seq, 12, False, 0), _states(128, seq, 12, False, 1),
                                     hidden=hidden, steps=150)
    assert present > 0.95
    assert absent < 2.0 / seq


def test_probe_bad_input():
    good = torch.randn(4, 5, 3)
    with pytest.raises(ValueError, match="train_states must be a float tensor"):
        position_probe_accuracy(torch.zeros(4, 5, 3, dtype=torch.long), good)
    with pytest.raises(ValueError, match="test_states must be a float tensor"):
        position_probe_accuracy(good, torch.randn(4, 5))
    with pytest.raises(ValueError, match="test_states must have the"):
        position_probe_accuracy(good, torch.randn(4, 6, 3))
    with pytest.raises(ValueError, match="hidden must be"):
        position_probe_accuracy(good, good, hidden=-1)

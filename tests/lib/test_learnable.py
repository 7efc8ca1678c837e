"""LearnablePE: shapes, initialisation, errors, gradients, serialisation, dtypes; the sorting task of notebook 02."""

from __future__ import annotations

import io

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc_lib.embeddings.learnable import LearnablePE
from posenc_lib.models import TinyTransformer
from posenc_lib.scheme import PositionScheme


def test_is_an_embedding_scheme_with_a_parameter_table():
    pe = LearnablePE(d_model=16, max_len=10)
    assert isinstance(pe, PositionScheme) and pe.kind == "embedding"
    assert isinstance(pe.weight, torch.nn.Parameter) and pe.weight.shape == (10, 16)
    assert [name for name, _ in pe.named_parameters()] == ["weight"]
    assert "max_len=10" in repr(pe) and "d_model=16" in repr(pe)


@pytest.mark.parametrize("shape", [(3, 7), (1, 7), (2, 1), (4, 0)])
def test_forward_looks_up_rows(shape):
    pe = LearnablePE(d_model=8, max_len=12)
    positions = torch.randint(0, 12, shape, generator=torch.Generator().manual_seed(1))
    out = pe(positions)
    assert out.shape == (*shape, 8)
    torch.testing.assert_close(out, pe.weight[positions], rtol=0, atol=0)


def test_add_to_embeddings_adds_the_rows_and_broadcasts_over_batch():
    pe = LearnablePE(d_model=8, max_len=12)
    x = torch.randn(3, 5, 8)
    positions = torch.arange(2, 7)[None]  # (1, seq)
    torch.testing.assert_close(pe.add_to_embeddings(x, positions), x + pe.weight[2:7][None], rtol=0, atol=0)


@settings(max_examples=12, deadline=None)
@given(init_std=st.sampled_from([1e-3, 0.02, 0.1, 1.0, 3.0]), seed=st.integers(0, 2**16))
def test_initial_std_matches_init_std(init_std, seed):
    torch.manual_seed(seed)
    w = LearnablePE(d_model=64, max_len=512, init_std=init_std).weight.detach()
    # 32768 samples: the std estimate is within ~0.4% (1 sigma); allow 3%.
    assert abs(w.std().item() / init_std - 1) < 0.03
    assert abs(w.mean().item()) < 0.03 * init_std


def test_default_init_std_is_gpt2s():
    torch.manual_seed(0)
    pe = LearnablePE(d_model=64, max_len=256)
    assert pe.init_std == 0.02
    assert abs(pe.weight.std().item() - 0.02) < 0.001


def test_reset_parameters_redraws():
    pe = LearnablePE(d_model=8, max_len=4)
    with torch.no_grad():
        pe.weight.fill_(5.0)
    pe.reset_parameters()
    assert pe.weight.abs().max() < 1.0


@pytest.mark.parametrize("bad", [[[0, 1, 12]], [[12]], [[3, 40, 2]]])
def test_position_past_the_table_raises_with_a_clear_message(bad):
    pe = LearnablePE(d_model=8, max_len=12)
    high = max(bad[0])
    with pytest.raises(ValueError, match=rf"positions .*\[0, 12\).*max position {high}.*Raise max_len"):
        pe(torch.tensor(bad))


def test_negative_position_raises():
    pe = LearnablePE(d_model=8, max_len=12)
    with pytest.raises(ValueError, match=r"positions .*min position -1"):
        pe(torch.tensor([[0, -1, 3]]))


def test_a_sequence_longer_than_max_len_fails_in_the_model():
    model = TinyTransformer(vocab_size=5, n_outputs=2, d_model=16, n_heads=2, n_layers=1,
                            scheme=LearnablePE(16, max_len=8))
    model(torch.zeros(2, 8, dtype=torch.long))  # exactly max_len positions: fine
    with pytest.raises(ValueError, match=r"max position 8"):
        model(torch.zeros(2, 9, dtype=torch.long))


@pytest.mark.parametrize("positions", [torch.tensor([[0.0, 1.0]]), torch.tensor([[True, False]]), [[0, 1]]])
def test_non_integer_positions_raise_type_error(positions):
    with pytest.raises(TypeError, match="positions must be an integer tensor"):
        LearnablePE(d_model=8, max_len=12)(positions)


def test_int32_positions_work():
    pe = LearnablePE(d_model=8, max_len=12)
    positions = torch.tensor([[1, 5]], dtype=torch.int32)
    torch.testing.assert_close(pe(positions), pe(positions.long()), rtol=0, atol=0)


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"d_model": 0, "max_len": 4}, ValueError, r"d_model must be a positive int, got 0"),
        ({"d_model": 8, "max_len": -2}, ValueError, r"max_len must be a positive int, got -2"),
        ({"d_model": 8.0, "max_len": 4}, TypeError, r"d_model must be an int, got float"),
        ({"d_model": 8, "max_len": True}, TypeError, r"max_len must be an int, got bool"),
        ({"d_model": 8, "max_len": 4, "init_std": 0.0}, ValueError, r"init_std must be a finite float > 0, got 0.0"),
        ({"d_model": 8, "max_len": 4, "init_std": -0.02}, ValueError, r"init_std .* got -0.02"),
        ({"d_model": 8, "max_len": 4, "init_std": float("nan")}, ValueError, r"init_std .* got nan"),
        ({"d_model": 8, "max_len": 4, "init_std": "0.02"}, TypeError, r"init_std must be a float, got str"),
    ],
)
def test_bad_constructor_arguments(kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        LearnablePE(**kwargs)


def test_gradient_reaches_only_the_used_rows():
    pe = LearnablePE(d_model=4, max_len=8)
    positions = torch.tensor([[0, 2, 2, 5]])
    pe(positions).sum().backward()
    grad = pe.weight.grad
    used = torch.tensor([0, 2, 5])
    unused = torch.tensor([1, 3, 4, 6, 7])
    assert torch.all(grad[unused] == 0)
    torch.testing.assert_close(grad[used], torch.tensor([1.0, 2.0, 1.0])[:, None].expand(3, 4))


def test_rows_never_used_in_training_stay_at_their_initial_values():
    torch.manual_seed(0)
    pe = LearnablePE(d_model=8, max_len=16)
    model = TinyTransformer(vocab_size=5, n_outputs=2, d_model=8, n_heads=2, n_layers=1, scheme=pe)
    init = pe.weight.detach().clone()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)
    for _ in range(3):
        loss = model(torch.randint(0, 5, (4, 10))).logsumexp(-1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert torch.equal(pe.weight[10:], init[10:])
    assert not torch.equal(pe.weight[:10], init[:10])


def test_state_dict_round_trip_with_weights_only_load():
    torch.manual_seed(3)
    pe = LearnablePE(d_model=8, max_len=12, init_std=0.5)
    buffer = io.BytesIO()
    torch.save(pe.state_dict(), buffer)
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)
    assert set(state) == {"weight"}
    restored = LearnablePE(d_model=8, max_len=12)
    restored.load_state_dict(state)
    assert torch.equal(restored.weight, pe.weight)
    positions = torch.tensor([[0, 11, 4]])
    assert torch.equal(restored(positions), pe(positions))


def test_add_to_embeddings_checks_the_width():
    with pytest.raises(ValueError, match=r"x must have last dimension d_model=8, got shape \(2, 3, 6\)"):
        LearnablePE(d_model=8, max_len=12).add_to_embeddings(torch.zeros(2, 3, 6), torch.arange(3)[None])


def test_to_float64():
    pe = LearnablePE(d_model=8, max_len=12).to(torch.float64)
    assert pe.weight.dtype == torch.float64
    x = torch.zeros(2, 3, 8, dtype=torch.float64)
    out = pe.add_to_embeddings(x, torch.arange(3)[None])
    assert out.dtype == torch.float64
    torch.testing.assert_close(out[0], pe.weight[:3], rtol=0, atol=0)
    model = TinyTransformer(vocab_size=5, n_outputs=2, d_model=8, n_heads=2, n_layers=1,
                            scheme=LearnablePE(8, max_len=6)).to(torch.float64)
    assert model(torch.zeros(1, 6, dtype=torch.long)).dtype == torch.float64

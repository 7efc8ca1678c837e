"""Training helpers: reproducibility, the deterministic progress bar, input checks, accuracy."""

from __future__ import annotations

import importlib.util
import re

import pytest
import torch

from posenc_course import training
from posenc_course.training import accuracy, cross_entropy, progress, seed_everything, train
from posenc_lib.models import TinyTransformer

pytestmark = pytest.mark.usefixtures("single_thread")


def sorting_data(generator: torch.Generator, n: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    """A small task: is the first token larger than the last one? (needs position to solve)."""
    x = torch.randint(0, 8, (n, 6), generator=generator)
    return x, (x[:, 0] > x[:, -1]).long()


def run(seed: int) -> list[float]:
    gen = seed_everything(seed)
    data = sorting_data(gen)
    net = TinyTransformer(8, 2, d_model=16, n_heads=2, n_layers=1)
    return train(net, data, steps=15, batch_size=16, generator=gen, desc=None)


def test_seeded_training_is_reproducible():
    first, second = run(0), run(0)
    assert len(first) == 15
    assert first == second  # bit-for-bit, not approximately
    assert run(1) != first  # and the seed matters


def test_stop_after_is_exactly_the_first_steps_of_the_longer_run():
    gen = seed_everything(0)
    data = sorting_data(gen)
    nets, curves = [], []
    for stop in (None, 6):
        seed_everything(0)
        net = TinyTransformer(8, 2, d_model=16, n_heads=2, n_layers=1)
        curves.append(train(net, data, steps=15, batch_size=16, desc=None,
                            generator=torch.Generator().manual_seed(1), stop_after=stop))
        nets.append(net)
    assert len(curves[1]) == 6 and curves[1] == curves[0][:6]  # same schedule, bit for bit
    seed_everything(0)
    short = TinyTransformer(8, 2, d_model=16, n_heads=2, n_layers=1)
    alone = train(short, data, steps=6, batch_size=16, desc=None, generator=torch.Generator().manual_seed(1))
    assert alone[1:] != curves[1][1:]  # a 6-step run decays its rate faster: not the same steps


def test_seed_everything_seeds_the_returned_generator_and_torch():
    gen = seed_everything(3)
    assert gen.initial_seed() == 3
    assert torch.initial_seed() == 3


def test_training_reduces_the_loss_on_a_fixed_batch():
    gen = seed_everything(0)
    x = torch.randint(0, 8, (16, 6), generator=gen)
    y = (x == 7).any(dim=1).long()  # a bag-of-tokens task, solvable without positions
    net = TinyTransformer(8, 2, d_model=16, n_heads=2, n_layers=1)
    losses = train(net, (x, y), steps=40, lr=1e-2, batch_size=16, generator=gen, desc=None)
    assert sum(losses[-5:]) / 5 < 0.5 * sum(losses[:5]) / 5
    assert accuracy(net, x, y) == 1.0
    assert not net.training  # train() leaves the model in eval mode


def test_train_accepts_a_batch_function():
    gen = seed_everything(0)
    net = TinyTransformer(8, 2, d_model=16, n_heads=2, n_layers=1)
    seen = []

    def batch(step: int):
        seen.append(step)
        return sorting_data(gen, n=8)

    assert len(train(net, batch, steps=3, desc=None)) == 3
    assert seen == [0, 1, 2]


def test_progress_bar_in_deterministic_mode_prints_its_final_state_on_stdout(monkeypatch, capsys):
    monkeypatch.setenv("POSENC_DETERMINISTIC", "1")
    net = TinyTransformer(8, 2, d_model=16, n_heads=2, n_layers=1)
    train(net, sorting_data(seed_everything(0)), steps=30, batch_size=8, desc="demo")
    captured = capsys.readouterr()
    frames = [f for f in re.split(r"[\r\n]+", captured.out) if f.strip()]
    assert len(frames) == 1  # only the final state: a loop that prints is not interleaved with bar states
    assert re.fullmatch(r"demo: 100%\|#{20}\| 30/30, loss=\d\.\d{4}", frames[0])
    assert not re.search(r"\d+:\d\d|it/s|s/it|\?", captured.out)  # no elapsed/remaining time, no rate
    assert captured.err == ""  # stderr is for warnings (JupyterLab shows it in red)


@pytest.mark.parametrize("deterministic", [True, False])
def test_train_without_desc_is_silent(deterministic, monkeypatch, capsys):
    """An experiment's own bar counts its runs; the runs inside print nothing."""
    if deterministic:
        monkeypatch.setenv("POSENC_DETERMINISTIC", "1")
    else:
        monkeypatch.delenv("POSENC_DETERMINISTIC", raising=False)
    net = TinyTransformer(8, 2, d_model=16, n_heads=2, n_layers=1)
    train(net, sorting_data(seed_everything(0)), steps=5, batch_size=8, desc=None)
    assert capsys.readouterr() == ("", "")


def test_progress_bar_interactive_mode_does_show_a_rate(monkeypatch, capsys):
    """The counter-case: without POSENC_DETERMINISTIC, in a terminal, the bar is tqdm's usual one, with time and rate."""
    monkeypatch.delenv("POSENC_DETERMINISTIC", raising=False)
    assert list(progress(range(3), total=3, desc="demo")) == [0, 1, 2]
    assert re.search(r"\d+:\d\d.*it/s", capsys.readouterr().err)


def test_progress_bar_in_a_jupyter_kernel_is_a_widget_or_live_text_on_stdout(monkeypatch, capsys):
    from tqdm.notebook import tqdm as widget_bar

    monkeypatch.delenv("POSENC_DETERMINISTIC", raising=False)
    monkeypatch.setattr(training, "_in_jupyter_kernel", lambda: True)
    assert isinstance(progress(range(3), desc="demo"), widget_bar)  # ipywidgets is pinned
    capsys.readouterr()
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None if name == "ipywidgets" else real_find_spec(name))
    bar = progress(range(3), desc="demo")
    assert not isinstance(bar, widget_bar) and list(bar) == [0, 1, 2]
    captured = capsys.readouterr()
    assert "demo: 100%" in captured.out and captured.err == ""


def test_not_in_a_jupyter_kernel_here():
    assert not training._in_jupyter_kernel()


@pytest.mark.parametrize("steps", [0, -3, 2.5, True])
def test_train_rejects_steps_that_are_not_positive_integers(steps):
    net = TinyTransformer(8, 2, d_model=16, n_heads=2, n_layers=1)
    with pytest.raises(ValueError, match=rf"steps must be a positive integer, got {re.escape(repr(steps))}"):
        train(net, sorting_data(torch.Generator().manual_seed(0)), steps=steps)


def test_train_rejects_inputs_and_targets_of_different_length():
    net = TinyTransformer(8, 2, d_model=16, n_heads=2, n_layers=1)
    x, y = sorting_data(torch.Generator().manual_seed(0), n=10)
    with pytest.raises(ValueError, match=r"data inputs and targets differ in length: 10 vs 9"):
        train(net, (x, y[:9]), steps=1)


def test_accuracy_and_ignored_targets():
    class Fixed(torch.nn.Module):
        def forward(self, x):
            return torch.nn.functional.one_hot(x, 3).float()  # predicts the input token itself

    x = torch.tensor([[0, 1, 2, 2]])
    assert accuracy(Fixed(), x, torch.tensor([[0, 1, 0, 0]])) == 0.5
    assert accuracy(Fixed(), x, torch.tensor([[0, 1, -100, -100]])) == 1.0
    with pytest.raises(ValueError, match=r"targets must contain at least one label other than -100, got shape \(1, 4\)"):
        accuracy(Fixed(), x, torch.full((1, 4), -100))


def test_cross_entropy_ignores_minus_100_per_token():
    logits = torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(0))
    targets = torch.tensor([[1, -100, 2], [0, 3, -100]])
    keep = targets != -100
    expected = torch.nn.functional.cross_entropy(logits[keep], targets[keep])
    torch.testing.assert_close(cross_entropy(logits, targets), expected)


def trained_net(seed: int) -> tuple[list[float], dict[str, torch.Tensor]]:
    """One independent run for run_each: its losses and its final weights."""
    gen = seed_everything(seed)
    net = TinyTransformer(8, 2, d_model=16, n_heads=2, n_layers=1)
    losses = train(net, sorting_data(gen), steps=10, batch_size=16, generator=gen, desc=None)
    return losses, net.state_dict()


@pytest.mark.parametrize("workers", ["1", "2"])
def test_run_each_gives_the_loop_s_results_in_order_bit_for_bit(monkeypatch, workers):
    monkeypatch.setenv("POSENC_WORKERS", workers)
    seeds = [2, 0, 1]
    loop = [trained_net(seed) for seed in seeds]
    torch.manual_seed(123)
    before = torch.get_rng_state()
    each = training.run_each(trained_net, seeds)
    assert torch.equal(torch.get_rng_state(), before)  # the caller's generator is untouched
    for (loop_losses, loop_weights), (losses, weights) in zip(loop, each, strict=True):
        assert losses == loop_losses
        assert all(torch.equal(weights[k], loop_weights[k]) for k in loop_weights)


def test_run_each_works_with_a_lambda_and_starts_every_item_from_seed_0(monkeypatch):
    """Items that draw without seeding still get the same numbers, on any number of workers."""
    draws = {}
    for workers in ("1", "2"):
        monkeypatch.setenv("POSENC_WORKERS", workers)
        draws[workers] = training.run_each(lambda n: torch.rand(n).tolist(), [2, 3, 2])
    assert draws["1"] == draws["2"]
    assert draws["1"][0] == draws["1"][2]
    torch.manual_seed(0)
    assert draws["1"][0] == torch.rand(2).tolist()


def test_run_each_counts_finished_items_on_its_bar(monkeypatch, capsys):
    monkeypatch.setenv("POSENC_DETERMINISTIC", "1")
    monkeypatch.setenv("POSENC_WORKERS", "1")
    assert training.run_each(lambda x: x * x, [1, 2, 3], desc="squares") == [1, 4, 9]
    out = capsys.readouterr().out
    assert "squares: 100%" in out and "3/3" in out


def test_run_each_passes_a_worker_s_error_on(monkeypatch):
    monkeypatch.setenv("POSENC_WORKERS", "2")
    with pytest.raises(ValueError, match="steps must be a positive integer, got 0"):
        training.run_each(lambda steps: train(TinyTransformer(8, 2, d_model=16, n_heads=2, n_layers=1),
                                              sorting_data(torch.Generator()), steps=steps, desc=None), [3, 0])


@pytest.mark.parametrize("value", ["0", "two", "-1"])
def test_run_each_rejects_a_bad_worker_count(monkeypatch, value):
    monkeypatch.setenv("POSENC_WORKERS", value)
    with pytest.raises(ValueError, match=f"POSENC_WORKERS must be a positive integer, got '{value}'"):
        training.run_each(abs, [1, 2])


def test_run_each_uses_as_many_workers_as_the_cores_hold_at_the_thread_count(monkeypatch):
    monkeypatch.delenv("POSENC_WORKERS", raising=False)
    monkeypatch.setattr(training.os, "cpu_count", lambda: 8)
    assert training.worker_count(10, threads=1) == 4 and training.worker_count(10, threads=2) == 4
    assert training.worker_count(10, threads=4) == 2 and training.worker_count(10, threads=16) == 1
    assert training.worker_count(3, threads=1) == 3  # never more workers than items
    monkeypatch.setattr(training.os, "cpu_count", lambda: 2)
    assert training.worker_count(10, threads=2) == 1  # the numerics matrix's 2-thread run: one at a time

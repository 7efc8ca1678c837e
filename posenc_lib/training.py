"""The small training loop every experiment and probe of the library uses: AdamW, a linear decay, nothing else.

    train(model, data, steps)       AdamW for ``steps`` steps on a fixed data set or a batch function
    accuracy(model, inputs, targets) fraction of correct argmax predictions (-100 targets skipped)
    cross_entropy(logits, targets)  for (batch, classes) or per-token (batch, seq, classes) logits

A progress bar is the caller's: ``train(..., progress=fn)`` wraps the steps with ``fn(range(steps))``
and reports the running loss through the wrapper's ``set_postfix_str`` when it has one (tqdm's bars do).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["train", "accuracy", "cross_entropy", "Batch"]

Batch = tuple[Tensor, Tensor]


def cross_entropy(logits: Tensor, targets: Tensor) -> Tensor:
    """Cross-entropy for (batch, classes) or per-token (batch, seq, classes) logits; -100 targets are ignored."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=-100)


def train(
    model: nn.Module,
    data: Batch | Callable[[int], Batch],
    steps: int,
    lr: float = 3e-3,
    batch_size: int = 64,
    weight_decay: float = 0.0,
    generator: torch.Generator | None = None,
    loss_fn: Callable[[Tensor, Tensor], Tensor] = cross_entropy,
    progress: Callable[[range], Iterable[int]] | None = None,
    stop_after: int | None = None,
) -> list[float]:
    """Train ``model`` with AdamW for ``steps`` steps; return the loss of every step.

    data: either a fixed data set ``(inputs, targets)`` from which minibatches of ``batch_size``
    rows are drawn with ``generator``, or a function ``step -> (inputs, targets)`` that makes
    each batch. The learning rate decays linearly to 10% over the run.
    progress: wraps the steps, ``progress(range(steps))``, e.g. a tqdm bar; ``None`` trains silently.
    The bar's ``set_postfix_str`` (when it has one) gets the mean loss of the last 20 steps at the end,
    and its ``close`` (when it has one) is called after the last step.
    stop_after: stop after this many of the ``steps`` steps, keeping the run's schedule: the model and
    losses are exactly those of the first ``stop_after`` steps of the full run (``None``: all of them).
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or steps <= 0:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    stop = steps if stop_after is None else stop_after
    if isinstance(stop, bool) or not isinstance(stop, int) or not 0 < stop <= steps:
        raise ValueError(f"stop_after must be an integer in 1..{steps} (the run's steps), got {stop_after!r}")
    if isinstance(data, tuple):
        inputs, targets = data
        if inputs.shape[0] != targets.shape[0]:
            raise ValueError(f"data inputs and targets differ in length: {inputs.shape[0]} vs {targets.shape[0]}")
        gen = generator if generator is not None else torch.Generator().manual_seed(0)

        def batch(_: int) -> Batch:
            idx = torch.randint(0, inputs.shape[0], (min(batch_size, inputs.shape[0]),), generator=gen)
            return inputs[idx], targets[idx]
    else:
        batch = data
    # foreach: one call per step for all parameters (the same arithmetic as the per-tensor loop, bit for bit)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay, foreach=True)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 - 0.9 * s / steps)
    model.train()
    losses: list[float] = []
    bar = progress(range(stop)) if progress is not None else None
    for step in bar if bar is not None else range(stop):
        x, y = batch(step)
        loss = loss_fn(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
        if step == stop - 1 and hasattr(bar, "set_postfix_str"):
            bar.set_postfix_str(f"loss={sum(losses[-20:]) / len(losses[-20:]):.4f}", refresh=False)
    if hasattr(bar, "close"):
        bar.close()
    model.eval()
    return losses


@torch.no_grad()
def accuracy(model: nn.Module, inputs: Tensor, targets: Tensor, batch_size: int = 1024) -> float:
    """Fraction of correct argmax predictions; per-token targets of -100 are skipped."""
    model.eval()
    correct = total = 0
    for i in range(0, inputs.shape[0], batch_size):
        pred = model(inputs[i : i + batch_size]).argmax(-1)
        y = targets[i : i + batch_size]
        keep = y != -100
        correct += (pred[keep] == y[keep]).sum().item()
        total += keep.sum().item()
    if total == 0:
        raise ValueError(f"targets must contain at least one label other than -100, got shape {tuple(targets.shape)}")
    return correct / total

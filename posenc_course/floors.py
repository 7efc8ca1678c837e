"""Floors: what a sceptic's baseline scores on the same data, printed as rows of a trained-results table.

A trained model's accuracy of 0.16 means nothing alone: it is good if chance is 0.06 and poor if
"guess the most frequent token seen so far" scores 0.26 on the same sequences. Every trained
result in the course stands beside the floors a sceptic would ask for, computed on the data the
model is evaluated on, and the text says which it beats by the series' rule
(:func:`posenc_course.report.compare`; docs/comparison.md). This module computes the floors and
prints the table.

A :class:`Floor` is a named score: one number for a rule computed deterministically, or one per
seed for a model trained as a floor. The rules::

    chance(n_classes)                         1 / n_classes
    majority(train_targets, eval_targets)     always the label most frequent in training
    bag_of_tokens(inputs, targets)            the token most frequent among the earlier ones (or one
                                              drawn from them): for "which token is the answer" tasks;
                                              decay=m weights a token d back by exp(-m d)
    kneser_ney(train, inputs, targets, ...)   an interpolated Kneser-Ney n-gram's perplexity on the
                                              same windows, with the same history (posenc_course.kneser_ney)
    linear_readout(train_x, train_y, x, y)    a logistic regression on the raw input: fixed weights per
                                              input coordinate, so absolute position comes with the index
    no_position(per_seed)                     the same model trained the same way, scheme "none"
    untrained(per_seed)                       the same model and seeds at initialisation, no training
    trained(name, per_seed, note)             any other model trained as a floor
    fixed(name, value, note)                  any other number computed exactly (an exact ceiling, ...)

:func:`with_floors` prints the models' results and the floors as one table, the floor rows marked
``floor``, then one line per model saying which floors it is ahead of, not separated from or
behind, with the gap and the bar it had to clear. It returns a :class:`FloorTable` whose
:meth:`FloorTable.verdict` gives each comparison's :class:`~posenc_course.report.Verdict` for the
notebook's assertions. ``tests/course/test_floors_in_notebooks.py`` checks that every notebook
that trains prints such a table.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import pandas as pd
import torch
from IPython.display import display
from torch import Tensor

from posenc_course.kneser_ney import KneserNey
from posenc_course.report import Verdict, compare, format_gap
from posenc_lib.checks import check_int, is_int, is_number

__all__ = ["Floor", "FLOOR_ROW", "chance", "majority", "bag_of_tokens", "kneser_ney", "linear_readout",
           "no_position", "untrained", "trained", "fixed", "FloorTable", "with_floors"]

#: The label of a floor's row in the printed table (a model's row is labelled "model").
FLOOR_ROW = "floor"


@dataclass(frozen=True)
class Floor:
    """A floor: a baseline's score on the data the models are evaluated on.

    name: what the table calls it ("chance", "no position", "Kneser-Ney 6-gram").
    values: one number for a rule computed deterministically (it has no seed spread), or one per
        seed (at least 3) for a model trained as a floor.
    note: one phrase saying how it was computed, printed beside it ("1/16", "trained the same way").
    """

    name: str
    values: tuple[float, ...]
    note: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"name must be a non-empty string, got {self.name!r}")
        values = tuple(float(v) for v in self.values)
        if not (len(values) == 1 or len(values) >= 3) or not all(math.isfinite(v) for v in values):
            raise ValueError(f"values must be one finite number (a fixed rule) or at least 3 (one per seed), "
                             f"got {self.values!r}")
        object.__setattr__(self, "values", values)

    @property
    def is_fixed(self) -> bool:
        """True for a rule computed deterministically (one value, no seed spread)."""
        return len(self.values) == 1


def fixed(name: str, value: float, note: str = "") -> Floor:
    """A floor computed exactly, e.g. ``fixed("bag of words", task.bag_of_words_ceiling(), "exact ceiling")``."""
    if not is_number(value):
        raise TypeError(f"value must be a real number, got {type(value).__name__} {value!r}")
    return Floor(name, (float(value),), note)


def trained(name: str, per_seed: Sequence[float], note: str = "trained the same way") -> Floor:
    """A model trained as a floor: one result per seed (at least 3), compared with the models by the rule."""
    return Floor(name, tuple(per_seed), note)


def no_position(per_seed: Sequence[float]) -> Floor:
    """The floor every position scheme must beat: the same model, data, seeds and training, with scheme "none".

    Train it with the models (e.g. ``"none"`` as one more arm of the same ``run_each``) and pass its
    per-seed results here; the table labels the row ``floor  no position``.
    """
    return trained("no position", per_seed, "same model and training, scheme none")


def untrained(per_seed: Sequence[float]) -> Floor:
    """What the architecture gives before any learning: the same model, built with the same seeds, measured
    at its initial weights (no training step).

    For a result measured on a trained model's states (a probe): build the model exactly as the
    training function does for each seed, skip the training, measure it the same way, and pass one
    result per seed here; the table labels the row ``floor  untrained``.
    """
    return trained("untrained", per_seed, "same model and seeds, no training")


def chance(n_classes: int) -> Floor:
    """Accuracy of a uniform guess among ``n_classes`` classes: 1 / n_classes."""
    check_int("n_classes", n_classes, minimum=2)
    return Floor("chance", (1.0 / n_classes,), f"1/{n_classes}")


def _check_targets(name: str, t: object) -> Tensor:
    if not isinstance(t, Tensor) or t.dtype != torch.long or t.dim() not in (1, 2):
        got = f"shape {tuple(t.shape)}, dtype {t.dtype}" if isinstance(t, Tensor) else type(t).__name__
        raise TypeError(f"{name} must be a 1-D or 2-D int64 tensor of labels (-100: not scored), got {got}")
    if not bool((t != -100).any()):
        raise ValueError(f"{name} must hold at least one label other than -100 (not scored)")
    return t


def majority(train_targets: Tensor, eval_targets: Tensor) -> Floor:
    """Accuracy on ``eval_targets`` of always answering the label most frequent in ``train_targets``.

    train_targets, eval_targets: int64 labels, any shape ((n,) or (n, T)); -100 marks an entry
    that is not scored (as in the loss). A tie goes to the smallest label.
    """
    train_targets, eval_targets = _check_targets("train_targets", train_targets), _check_targets(
        "eval_targets", eval_targets)
    labels = train_targets[train_targets != -100]
    if int(labels.min()) < 0:
        raise ValueError(f"train_targets must be labels >= 0 (or -100), got {int(labels.min())}")
    label = int(torch.bincount(labels).argmax())  # argmax returns the first of tied maxima
    scored = eval_targets[eval_targets != -100]
    return Floor("majority", ((scored == label).double().mean().item(),), f"always label {label}")


def bag_of_tokens(inputs: Tensor, targets: Tensor, *, sees: Literal["earlier", "so far", "all"] = "earlier",
                  rule: Literal["argmax", "sample"] = "argmax", decay: float = 0.0) -> Floor:
    """Expected accuracy of answering with a token the input holds, chosen from their counts alone.

    For tasks whose answer is one of the input's tokens (repeat the token k back, sort, copy):
    a rule that knows which tokens are there and how often, but not where.

    inputs: (n, T) int64 token ids. targets: (n, T) per-position answers, or (n,) one answer per
        sequence (it then sees the whole sequence); -100 is not scored.
    sees: what the rule counts at position p: "earlier", the tokens 0..p-1 (the default: the
        answer of a "which earlier token" task is among them); "so far", the tokens 0..p (all a
        causal decoder sees there); "all", the whole sequence (what an encoder sees).
    rule: "argmax" answers the token counted most often (a tie split evenly between the tied
        tokens); "sample" draws one of the tokens counted, each as often as it occurs (accuracy: the
        target's share of them). Both are expectations, computed exactly: no random draw. A position
        with nothing counted guesses uniformly among the ids 0..V-1 (V: the largest id seen + 1).
    decay: 0 counts every token once. m > 0 counts a token d positions from the one scored with
        weight exp(-m d), a fixed recency tilt: ALiBi's penalty -m d with no learned part (the
        softmax's normalisation does not change which token weighs most). Per-position targets only.
    """
    if not isinstance(inputs, Tensor) or inputs.dtype != torch.long or inputs.dim() != 2:
        got = f"shape {tuple(inputs.shape)}, dtype {inputs.dtype}" if isinstance(inputs, Tensor) else \
            type(inputs).__name__
        raise TypeError(f"inputs must be an (n, T) int64 tensor of token ids, got {got}")
    targets = _check_targets("targets", targets)
    if targets.shape != inputs.shape and targets.shape != inputs.shape[:1]:
        raise ValueError(f"targets must have shape (n, T) or (n,) for inputs of shape {tuple(inputs.shape)}, "
                         f"got {tuple(targets.shape)}")
    if sees not in ("earlier", "so far", "all"):
        raise ValueError(f"sees must be 'earlier', 'so far' or 'all', got {sees!r}")
    if rule not in ("argmax", "sample"):
        raise ValueError(f"rule must be 'argmax' or 'sample', got {rule!r}")
    if int(inputs.min()) < 0:
        raise ValueError(f"inputs must be token ids >= 0, got {int(inputs.min())}")
    per_sequence = targets.dim() == 1
    if not is_number(decay) or not math.isfinite(decay) or decay < 0:
        raise ValueError(f"decay must be a finite number >= 0, got {decay!r}")
    if decay and per_sequence:
        raise ValueError(f"decay needs per-position targets of shape {tuple(inputs.shape)} (a distance to the "
                         f"position scored), got one target per sequence, shape {tuple(targets.shape)}")
    if decay:  # weight[p, j]: what token j counts for position p, exp(-decay |p - j|) where p sees j
        p = torch.arange(inputs.shape[1])
        distance = (p[:, None] - p[None, :]).double()
        every = torch.ones_like(distance, dtype=torch.bool)
        sees_j = {"earlier": distance > 0, "so far": distance >= 0, "all": every}[sees]
        weight = torch.exp(-decay * distance.abs()) * sees_j
    vocab = int(max(inputs.max(), targets.max())) + 1
    hits, scored = 0.0, 0
    for start in range(0, len(inputs), 256):  # (chunk, T, V) counts stay small
        x, y = inputs[start: start + 256], targets[start: start + 256]
        tokens = torch.nn.functional.one_hot(x, vocab).double()  # (chunk, T, V)
        if decay:
            counts = torch.einsum("pj,njv->npv", weight, tokens)
        elif per_sequence or sees == "all":
            counts = tokens.sum(1, keepdim=True).expand_as(tokens)
        else:
            counts = tokens.cumsum(1) - (tokens if sees == "earlier" else 0)
        if per_sequence:
            counts, y = counts[:, :1], y[:, None]
        keep = y != -100
        counts, y = counts[keep], y[keep]  # (m, V) what each scored answer's rule counted, (m,) answers
        counts = torch.where(counts.sum(1, keepdim=True) > 0, counts, 1.0)  # nothing counted: uniform
        of_target = counts.gather(1, y[:, None]).squeeze(1)
        if rule == "argmax":
            best = counts.max(1).values
            hits += ((of_target == best).double() / (counts == best[:, None]).sum(1)).sum().item()
        else:
            hits += (of_target / counts.sum(1)).sum().item()
        scored += len(y)
    counted = {"earlier": "the earlier tokens", "so far": "the tokens so far", "all": "the sequence"}[
        "all" if per_sequence else sees]
    note = f"the token most frequent in {counted}" if rule == "argmax" else f"a token drawn from {counted}"
    if decay:
        note = f"the heaviest of {counted}" if rule == "argmax" else f"a token drawn from {counted}"
        return Floor(f"bag of tokens ({rule}, decay {decay:g})", (hits / scored,), f"{note}, weight exp(-{decay:g} d)")
    return Floor(f"bag of tokens ({rule})", (hits / scored,), note)


def kneser_ney(train: Tensor, inputs: Tensor, targets: Tensor, *, order: int, vocab_size: int,
               length: int | None = None) -> Floor:
    """Perplexity of an interpolated Kneser-Ney ``order``-gram counted on ``train``, on the models' windows.

    train: the training text as token ids (1-D int64), the text the models were trained on.
    inputs, targets: (n, T) evaluation windows (:func:`posenc_course.data.lm_eval_windows`); each
        position sees what a causal model sees, the window's earlier tokens only
        (:meth:`posenc_course.kneser_ney.KneserNey.window_losses`).
    length: score the windows' first ``length`` positions (default all T), as ``perplexity_at`` does.
    """
    model = KneserNey(train, order, vocab_size)
    value = model.perplexity(inputs, targets, length)
    return Floor(f"Kneser-Ney {order}-gram", (value,), "interpolated, counted on the training text")


def linear_readout(train_inputs: Tensor, train_targets: Tensor, eval_inputs: Tensor, eval_targets: Tensor, *,
                   weight_decay: float = 1e-3) -> Floor:
    """Accuracy on the evaluation set of a multinomial logistic regression on the raw inputs, flattened.

    For classifiers of images or grids: a linear model has one weight per input coordinate, so it
    knows absolute position through the input index, with no encoding and no training budget to
    speak of. A model that does not beat it has not shown that its positional encoding adds
    anything a fixed linear readout lacks.

    train_inputs, eval_inputs: (n, ...) float tensors, flattened to (n, features).
    train_targets, eval_targets: (n,) int64 class labels.
    weight_decay: the L2 penalty on the weights (not the biases), added to the mean cross-entropy.
    Fitted by L-BFGS in float64 from zero weights to convergence: deterministic, no seed.
    """
    for name, x in (("train_inputs", train_inputs), ("eval_inputs", eval_inputs)):
        if not isinstance(x, Tensor) or not x.is_floating_point() or x.dim() < 2:
            got = f"shape {tuple(x.shape)}, dtype {x.dtype}" if isinstance(x, Tensor) else type(x).__name__
            raise TypeError(f"{name} must be an (n, ...) floating-point tensor, got {got}")
    for name, y, x in (("train_targets", train_targets, train_inputs), ("eval_targets", eval_targets, eval_inputs)):
        _check_targets(name, y)
        if y.shape != x.shape[:1]:
            raise ValueError(f"{name} must have shape ({x.shape[0]},), one label per input, got {tuple(y.shape)}")
        if int(y.min()) < 0:
            raise ValueError(f"{name} must be class labels >= 0, got {int(y.min())}")
    if train_inputs[0].numel() != eval_inputs[0].numel():
        raise ValueError(f"eval_inputs must have {train_inputs[0].numel()} features per input, as train_inputs, "
                         f"got {eval_inputs[0].numel()}")
    if not is_number(weight_decay) or weight_decay < 0:
        raise ValueError(f"weight_decay must be a number >= 0, got {weight_decay!r}")
    x = train_inputs.reshape(len(train_inputs), -1).to(torch.float64)
    n_classes = int(max(train_targets.max(), eval_targets.max())) + 1
    weight = torch.zeros(x.shape[1], n_classes, dtype=torch.float64, requires_grad=True)
    bias = torch.zeros(n_classes, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([weight, bias], max_iter=1000, tolerance_grad=1e-10, tolerance_change=1e-14,
                            line_search_fn="strong_wolfe")

    def closure() -> Tensor:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(x @ weight + bias, train_targets)
        loss = loss + weight_decay * weight.square().sum()
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        logits = eval_inputs.reshape(len(eval_inputs), -1).to(torch.float64) @ weight + bias
        value = (logits.argmax(-1) == eval_targets).double().mean().item()
    return Floor("linear readout", (value,), f"logistic regression on the raw input, L2 {weight_decay:g}")


@dataclass(frozen=True)
class FloorTable:
    """The models' results and their floors, as :func:`with_floors` printed them.

    results: model name -> one result per seed. floors: the floors, in table order.
    The comparison settings are those of :func:`~posenc_course.report.compare`.
    """

    results: Mapping[str, tuple[float, ...]]
    floors: tuple[Floor, ...]
    metric: str
    higher_is_better: bool = True
    relative: bool = False
    floor: float = 0.02
    digits: int = 3

    def verdict(self, model: str, floor: str) -> Verdict:
        """The series' rule on ``model`` against the floor named ``floor`` (A: the model, B: the floor).

        A fixed floor is a constant with no seed spread: the gap is the model's mean minus it, the
        spread twice the model's seed standard deviation, the effect-size floor the same as between
        two models (``compare(per_seed, [value] * len(per_seed))``). A trained floor is compared
        like any other setting, unpaired.
        """
        if model not in self.results:
            raise ValueError(f"model must be one of {list(self.results)}, got {model!r}")
        floors = {f.name: f for f in self.floors}
        if floor not in floors:
            raise ValueError(f"floor must be one of {list(floors)}, got {floor!r}")
        a, b = self.results[model], floors[floor]
        b_values = b.values * len(a) if b.is_fixed else b.values
        return compare(a, b_values, higher_is_better=self.higher_is_better, relative=self.relative,
                       floor=self.floor, names=(model, floor))

    def beats(self, model: str) -> list[str]:
        """The floors ``model`` is ahead of by the rule, in table order."""
        return [f.name for f in self.floors if self.verdict(model, f.name).a_ahead]

    def rows(self) -> list[tuple[str, str, str, str]]:
        """The table's rows: ("model" | "floor", name, "mean ± std" or the value, how the floor was made)."""
        def shown(values: Sequence[float]) -> str:
            if len(values) == 1:
                return f"{values[0]:.{self.digits}f}"
            mean = sum(values) / len(values)
            sd = (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5
            return f"{mean:.{self.digits}f} ± {sd:.{self.digits}f}"

        return ([("model", name, shown(v), "") for name, v in self.results.items()]
                + [(FLOOR_ROW, f.name, shown(f.values), f.note) for f in self.floors])

    def lines(self) -> list[str]:
        """One line per model: the floors it is ahead of, not separated from, and behind, with gap and bar."""
        out = []
        for model in self.results:
            ahead, level, behind = [], [], []
            for f in self.floors:
                v = self.verdict(model, f.name)
                if v.a_ahead:
                    ahead.append(f"{f.name} by {format_gap(v.gap)} (needed {format_gap(v.bar)})")
                elif v.b_ahead:
                    behind.append(f"{f.name} by {format_gap(-v.gap)} (needed {format_gap(v.bar)})")
                else:
                    level.append(f"{f.name} (gap {format_gap(abs(v.gap))}, needed {format_gap(v.bar)})")
            parts = [f"ahead of {', '.join(ahead)}" if ahead else "",
                     f"not separated from {', '.join(level)}" if level else "",
                     f"behind {', '.join(behind)}" if behind else ""]
            out.append(f"{model} " + "; ".join(p for p in parts if p) + ".")
        return out

    def frame(self) -> pd.DataFrame:
        """The table as a DataFrame of text: index ("model" | "floor", name); columns the metric and how
        each floor is computed."""
        rows = self.rows()
        return pd.DataFrame([r[2:] for r in rows], columns=[self.metric, "how the floor is computed"],
                            index=pd.MultiIndex.from_tuples([r[:2] for r in rows]))

    def __str__(self) -> str:
        return "\n".join([self.frame().to_string(), *self.lines()])

    def __repr__(self) -> str:
        return f"FloorTable({len(self.results)} models, {len(self.floors)} floors; {self.metric})"


def with_floors(results: Mapping[str, Sequence[float]], floors: Sequence[Floor], *, metric: str,
                higher_is_better: bool = True, relative: bool = False, floor: float = 0.02,
                digits: int = 3) -> FloorTable:
    """Print the models' results beside their floors, and which floors each model beats by the series' rule.

    results: model name -> one result per seed (at least 3), e.g. ``{"RoPE": [0.91, 0.93, 0.90]}``.
    floors: at least one :class:`Floor` (:func:`chance`, :func:`majority`, :func:`bag_of_tokens`,
        :func:`kneser_ney`, :func:`no_position`, :func:`untrained`, ...), computed on the same data as the results.
    metric: the column's name ("test accuracy", "perplexity at L").
    higher_is_better, relative, floor: as in :func:`~posenc_course.report.compare` (for a
        perplexity: ``higher_is_better=False, relative=True``).
    digits: decimals shown in the table.

    Displays the table (a DataFrame: an HTML table in a notebook; a model's rows labelled ``model``,
    the floors' rows ``floor``), then prints one line per model: "RoPE ahead of chance by 0.84
    (needed 0.02); behind no position by 0.03 (needed 0.02)." Returns the :class:`FloorTable`, for
    assertions (``table.verdict("RoPE", "chance").a_ahead``); assign it, so the cell shows only the
    table and the lines.
    """
    if not isinstance(results, Mapping) or not results:
        raise ValueError(f"results must be a non-empty mapping of model name -> one result per seed, got {results!r}")
    per_model = {}
    for name, values in results.items():
        values = tuple(float(v) for v in values)
        if len(values) < 3:
            raise ValueError(f"results[{name!r}] must hold one result per seed, at least 3, got {len(values)}")
        per_model[name] = values
    floors = tuple(floors)
    if not floors or not all(isinstance(f, Floor) for f in floors):
        raise ValueError(f"floors must be at least one Floor (chance, majority, bag_of_tokens, kneser_ney, "
                         f"no_position, untrained, trained, fixed), got {floors!r}")
    names = [f.name for f in floors] + list(per_model)
    if len(set(names)) != len(names):
        raise ValueError(f"models and floors must have distinct names, got {names}")
    if not is_int(digits) or not 0 <= digits <= 6:
        raise ValueError(f"digits must be an int in [0, 6], got {digits!r}")
    if not isinstance(metric, str) or not metric.strip():
        raise ValueError(f"metric must be the non-empty name of the measure, got {metric!r}")
    table = FloorTable(per_model, floors, metric, higher_is_better, relative, floor, digits)
    lines = table.lines()  # the rule's own checks (floor >= 0, booleans) run before anything is shown
    display(table.frame())
    print("\n".join(lines))
    return table

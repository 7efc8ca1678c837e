"""An interpolated Kneser-Ney n-gram language model: the count-based floor a trained language model must beat.

A character model that scores perplexity 8 has learned something only if a well-smoothed n-gram,
counted on the same training text and scored on the same windows, does worse. Kneser-Ney smoothing
(Kneser & Ney, 1995; the interpolated form of Chen & Goodman, 1998, section 3.5) is the standard
such n-gram. With ``c`` the counts in the training text, ``D`` a discount in (0, 1], ``h`` a history
of ``k - 1`` tokens, ``h'`` the history without its first token and ``V`` the vocabulary size:

    P_k(w | h) = max(c(h w) - D, 0) / c(h .)  +  D N(h .) / c(h .)  P'_{k-1}(w | h')

where ``c(h .)`` counts ``h`` followed by any token and ``N(h .)`` the distinct tokens seen after
``h``. The lower orders ``P'`` are the same formula with *continuation counts* in place of
``c``: ``N(. h w)``, the number of distinct tokens seen *before* ``h w`` (a token that follows
many contexts is a good guess in a new one, which is Kneser-Ney's idea). Order 1 interpolates
with the uniform distribution, ``1 / V``, so a token never seen keeps a probability. A history
never seen (``c(h .) = 0``) leaves the whole mass to the lower order. Every distribution sums to 1.

Reference implementations: KenLM (``lmplz``, modified Kneser-Ney with three discounts per order)
and NLTK's ``nltk.lm.KneserNeyInterpolated``. NLTK's is exact but computes each probability in
Python (minutes for 06's evaluation windows); KenLM needs a compiled binary. This one is a few
vectorised lookups in torch: every n-gram is an integer code (its tokens as digits in base
``V``), counts are ``torch.unique`` and lookups ``torch.searchsorted``. One discount per order
and kind of count, ``D = n1 / (n1 + 2 n2)`` (n1, n2: the n-grams counted exactly once and
twice), as in Chen & Goodman.

**The same history as the models.** A model scoring position ``p`` of an evaluation window sees
the window's tokens ``0 .. p`` and nothing before the window, so :meth:`KneserNey.window_losses`
gives the n-gram the same: the last ``min(p + 1, order - 1)`` tokens of the window. With a
history of ``j < order - 1`` tokens it is the ``(j + 1)``-gram model counted on the same text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from posenc_lib.checks import check_int, is_number

__all__ = ["KneserNey"]


@dataclass(frozen=True)
class _Level:
    """The counts of one order, as the formula reads them (all 1-D tensors sorted by their keys).

    grams, counts: every k-gram code seen and its count (raw counts, or continuation counts).
    histories, totals, types: every (k-1)-gram code that precedes one of them, the sum of the
    counts of its k-grams (``c(h .)``) and how many distinct tokens follow it (``N(h .)``).
    discount: D of this level.
    """

    grams: Tensor
    counts: Tensor
    histories: Tensor
    totals: Tensor
    types: Tensor
    discount: float

    @classmethod
    def of(cls, grams: Tensor, counts: Tensor, vocab_size: int, discount: float | None) -> _Level:
        histories, inverse, types = torch.unique_consecutive(grams // vocab_size, return_inverse=True,
                                                             return_counts=True)
        totals = torch.zeros(len(histories), dtype=torch.float64).scatter_add_(0, inverse, counts.double())
        if discount is None:  # Chen & Goodman: n1 / (n1 + 2 n2), 0.75 where it is undefined
            n1, n2 = int((counts == 1).sum()), int((counts == 2).sum())
            discount = n1 / (n1 + 2 * n2) if n1 > 0 else 0.75
        return cls(grams, counts.double(), histories, totals, types.double(), discount)

    @staticmethod
    def _find(keys: Tensor, values: Tensor, query: Tensor) -> Tensor:
        """``values[keys == q]`` for every q of ``query``, 0 where ``keys`` lacks it."""
        if len(keys) == 0:
            return torch.zeros(query.shape, dtype=torch.float64)
        at = torch.searchsorted(keys, query.contiguous()).clamp(max=len(keys) - 1)
        return torch.where(keys[at] == query, values[at], 0.0)

    def count(self, grams: Tensor) -> Tensor:
        return self._find(self.grams, self.counts, grams)

    def history(self, histories: Tensor) -> tuple[Tensor, Tensor]:
        return self._find(self.histories, self.totals, histories), self._find(self.histories, self.types, histories)


class KneserNey:
    """An interpolated Kneser-Ney n-gram model of ``order`` (n), counted on a sequence of token ids.

    ids: the training text, a 1-D int64 tensor (or a list) of token ids in ``[0, vocab_size)``,
        at least ``order`` of them.
    order: n, the longest n-gram (1: a unigram; 6: five tokens of history).
    vocab_size: V; ``V ** order`` must fit in an int64 (each n-gram is one integer code).
    discount: one D in (0, 1] for every order, or None (default) for ``n1 / (n1 + 2 n2)`` per order.

    ``model.distribution(history)`` is P(. | history), shape (V,) float64;
    ``model.window_losses(inputs, targets)`` the loss of every position of evaluation windows.
    """

    def __init__(self, ids: Tensor | Sequence[int], order: int, vocab_size: int,
                 discount: float | None = None) -> None:
        check_int("order", order)
        check_int("vocab_size", vocab_size, minimum=2)
        if vocab_size**order >= 2**63:
            raise ValueError(f"vocab_size ** order must fit in an int64 (each n-gram is one integer code), "
                             f"got vocab_size={vocab_size}, order={order}")
        if discount is not None and not (is_number(discount) and 0 < discount <= 1):
            raise ValueError(f"discount must be a number in (0, 1] or None (estimated per order), got {discount!r}")
        ids = torch.as_tensor(ids)
        if ids.dim() != 1 or ids.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8):
            raise TypeError(f"ids must be a 1-D tensor (or list) of integer token ids, got shape "
                            f"{tuple(ids.shape)}, dtype {ids.dtype}")
        if len(ids) < order:
            raise ValueError(f"ids must hold at least order={order} tokens, got {len(ids)}")
        if len(ids) and not (0 <= int(ids.min()) and int(ids.max()) < vocab_size):
            raise ValueError(f"ids must lie in [0, vocab_size={vocab_size}), got values in "
                             f"[{int(ids.min())}, {int(ids.max())}]")
        self.order, self.vocab_size = order, vocab_size
        ids = ids.long()
        codes, seen = ids, []  # seen[k - 1]: the distinct k-gram codes, sorted, and their counts
        for k in range(1, order + 1):
            if k > 1:
                codes = codes[:-1] * vocab_size + ids[k - 1:]
            seen.append(torch.unique(codes, return_counts=True))
        # top[k]: raw counts c(h w); low[k]: continuation counts N(. h w), for the lower orders k < n
        self.top = {k: _Level.of(*seen[k - 1], vocab_size, discount) for k in range(1, order + 1)}
        self.low = {}
        for k in range(1, order):
            longer = seen[k][0]  # distinct (k+1)-grams u h w; drop u, count the distinct u per h w
            grams, counts = torch.unique(longer % vocab_size**k, return_counts=True)
            self.low[k] = _Level.of(grams, counts, vocab_size, discount)

    def __repr__(self) -> str:
        return f"KneserNey(order={self.order}, vocab_size={self.vocab_size})"

    def _prob(self, k: int, histories: Tensor, tokens: Tensor, lower: bool) -> Tensor:
        """P_k(tokens | histories), (m,) float64: histories (m,) codes of k-1 tokens, tokens (m,) ids.

        lower: read the continuation counts (a lower order inside the interpolation), else the raw counts.
        """
        level = self.low[k] if lower else self.top[k]
        d = level.discount
        if k == 1:
            total, types = level.totals.sum(), level.types.sum()
            if total == 0:
                return torch.full(tokens.shape, 1.0 / self.vocab_size, dtype=torch.float64)
            return ((level.count(tokens) - d).clamp(min=0) + d * types / self.vocab_size) / total
        shorter = self._prob(k - 1, histories % self.vocab_size ** (k - 2), tokens, lower=True)
        total, types = level.history(histories)
        count = level.count(histories * self.vocab_size + tokens)
        mixed = ((count - d).clamp(min=0) + d * types * shorter) / total.clamp(min=1)
        return torch.where(total > 0, mixed, shorter)

    def _codes(self, windows: Tensor) -> Tensor:
        """Integer codes of token windows (..., j) -> (...): the tokens as digits in base V."""
        codes = torch.zeros(windows.shape[:-1], dtype=torch.long)
        for j in range(windows.shape[-1]):
            codes = codes * self.vocab_size + windows[..., j]
        return codes

    def _check_ids(self, name: str, ids: Tensor) -> None:
        if not isinstance(ids, Tensor) or ids.dtype != torch.long:
            got = f"dtype {ids.dtype}" if isinstance(ids, Tensor) else type(ids).__name__
            raise TypeError(f"{name} must be an int64 tensor of token ids, got {got}")
        if ids.numel() and not (0 <= int(ids.min()) and int(ids.max()) < self.vocab_size):
            raise ValueError(f"{name} must lie in [0, vocab_size={self.vocab_size}), got values in "
                             f"[{int(ids.min())}, {int(ids.max())}]")

    def distribution(self, history: Tensor | Sequence[int]) -> Tensor:
        """P(w | history) for every token w: (V,) float64, summing to 1.

        history: the earlier tokens, oldest first (any length; the last ``order - 1`` are read,
        fewer when it is shorter: with none, the order-1 model).
        """
        history = torch.as_tensor(history, dtype=torch.long).reshape(-1)
        self._check_ids("history", history)
        history = history[max(0, len(history) - (self.order - 1)):]
        tokens = torch.arange(self.vocab_size)
        code = self._codes(history[None])
        return self._prob(len(history) + 1, code.expand(self.vocab_size), tokens, lower=False)

    def window_losses(self, inputs: Tensor, targets: Tensor) -> Tensor:
        """-ln P(targets[i, p] | inputs[i, max(0, p + 2 - order) : p + 1]): (n, T) float64, in nats.

        inputs, targets: (n, T) int64, as :func:`posenc_course.data.lm_eval_windows` gives them
        (targets are the inputs shifted by one). Position p sees what a causal model sees there:
        the window's tokens 0..p, of which the last ``order - 1``; nothing before the window.
        ``exp(losses[:, :n].mean())`` is the perplexity of the windows' first n positions.
        """
        self._check_ids("inputs", inputs)
        self._check_ids("targets", targets)
        if inputs.dim() != 2 or inputs.shape != targets.shape:
            raise ValueError(f"inputs and targets must both have shape (n, T), got {tuple(inputs.shape)} "
                             f"and {tuple(targets.shape)}")
        losses = torch.empty(inputs.shape, dtype=torch.float64)
        n, length = inputs.shape
        for j in range(1, self.order):  # j tokens of history: positions j-1 (or all from order-2 on)
            first = j - 1
            last = length - 1 if j == self.order - 1 else min(first, length - 1)
            if first > length - 1:
                break
            windows = inputs.unfold(1, j, 1)[:, first + 1 - j: last + 2 - j]  # (n, positions, j)
            tokens = targets[:, first: last + 1]
            p = self._prob(j + 1, self._codes(windows).reshape(-1), tokens.reshape(-1), lower=False)
            losses[:, first: last + 1] = -p.log().reshape(n, -1)
        if self.order == 1:
            losses[:] = -self._prob(1, torch.zeros(targets.numel(), dtype=torch.long), targets.reshape(-1),
                                    lower=False).log().reshape(n, length)
        return losses

    def perplexity(self, inputs: Tensor, targets: Tensor, length: int | None = None) -> float:
        """exp(mean loss) over the windows' first ``length`` positions (default: all of them)."""
        losses = self.window_losses(inputs, targets)
        if length is None:
            length = losses.shape[1]
        check_int("length", length)
        if length > losses.shape[1]:
            raise ValueError(f"length must be at most the windows' {losses.shape[1]} positions, got {length}")
        return math.exp(losses[:, :length].mean().item())

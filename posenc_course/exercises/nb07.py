"""Checkers for notebook 07 (debugging and practice).

Each checker and the function it expects::

    check_exercise_1(fn)  fn(doc_ids) -> (batch, seq) position ids of packed documents: each token's index in
                          its own document (a run of equal ids)
    check_exercise_2(fn)  fn(attn_mask, n_new) -> (batch, n_new) positions of the new tokens of a left-padded,
                          cached decode step
    check_exercise_3(fn)  fn(positions, attn_mask, max_len) -> (max_len,) bool: the rows of a learnable table
                          that receive gradient from the batch
    check_exercise_4(predicted, actual)  predict, then run: the first shift of the list at which the RoPE
                          model with bfloat16 angles falls below 0.9
    check_exercise_5(letter)  explain why: the article's test (zeroed embeddings) keeps a RoPE decoder with a
                          start token exactly at chance
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from posenc_course.exercises import Exercise, checker, choice, prediction
from posenc_course.i18n import N_, _
from posenc_course.training import cross_entropy
from posenc_lib.analysis.probes import position_ids_from_mask, row_gradient_norms
from posenc_lib.embeddings.learnable import LearnablePE
from posenc_lib.models import TinyTransformer

__all__ = ["check_exercise_1", "check_exercise_2", "check_exercise_3", "check_exercise_4", "check_exercise_5"]


def _mask(lengths: list[int], seq: int, side: str) -> Tensor:
    """(len(lengths), seq) bool mask with each row's real tokens on the right or left."""
    mask = torch.arange(seq)[None] < torch.tensor(lengths)[:, None]
    return mask.flip(-1) if side == "left" else mask


def _check_int_tensor(ex: Exercise, got: object, shape: tuple[int, ...], what: str) -> Tensor:
    """``got`` as int64 after checking it is an integer tensor of ``shape`` (``what``: the shape in words, translated)."""
    ex.expect(isinstance(got, Tensor), _("return a torch.Tensor, got {type}").format(type=type(got).__name__))
    ex.expect(tuple(got.shape) == shape, _("expected shape {shape} ({what}), got {got_shape}").format(
        shape=shape, what=what, got_shape=tuple(got.shape)))
    ex.expect(not got.dtype.is_floating_point and got.dtype != torch.bool,
              _("position ids must be integers (torch.long), got dtype {dtype}").format(dtype=got.dtype))
    return got.long()


def _packed_ids(doc_ids: Tensor) -> Tensor:
    """Each token's index inside its own document, for rows of documents packed one after another."""
    slot = torch.arange(doc_ids.shape[-1]).expand_as(doc_ids)
    starts = torch.ones_like(doc_ids, dtype=torch.bool)
    starts[:, 1:] = doc_ids[:, 1:] != doc_ids[:, :-1]
    return slot - torch.where(starts, slot, 0).cummax(-1).values


@checker(N_("Exercise 1 (position ids of packed documents)"))
def check_exercise_1(ex: Exercise, fn: Callable[[Tensor], Tensor]) -> None:
    """fn(doc_ids) must count each packed document's tokens from 0, whatever the documents' ids."""
    cases = [torch.tensor([[0, 0, 0, 1, 1, 2, 2, 2]]), torch.tensor([[3, 3, 3, 3, 3]]),
             torch.tensor([[0, 1, 1, 1, 1, 1], [4, 4, 9, 9, 9, 12]]),
             torch.tensor([[7, 7, 2, 2, 2, 5, 5]])]
    for doc_ids in cases:
        got = _check_int_tensor(ex, ex.call(fn, doc_ids.clone()), tuple(doc_ids.shape), _("one position per token"))
        want = _packed_ids(doc_ids)
        if torch.equal(got, want):
            continue
        shown = _("for doc_ids {doc_ids} you returned {got}").format(doc_ids=doc_ids.tolist(), got=got.tolist())
        ex.expect(not torch.equal(got, torch.arange(doc_ids.shape[1]).expand_as(got)),
                  _("the ids run on across documents: each packed document starts again at position 0; {shown}")
                  .format(shown=shown))
        ex.expect(not torch.equal(got, want + 1),
                  _("off by one: a document's first token has position 0; {shown}").format(shown=shown))
        ex.fail(_("a document's tokens must get 0, 1, 2, ... in order, restarting where the id changes "
                  "(the ids are labels, not counts); {shown}").format(shown=shown))
    ex.passed(_("every packed document counts from 0 on {n} batches, whatever its id").format(n=len(cases)))


def _tiny_decoder(max_len: int = 16) -> TinyTransformer:
    """A random causal decoder with a learnable table as large as its N(0, 1) tokens (position matters)."""
    torch.manual_seed(7)
    scheme = LearnablePE(16, max_len, init_std=1.0)
    return TinyTransformer(12, 12, d_model=16, n_heads=2, n_layers=1, scheme=scheme, causal=True, pool="none").eval()


@checker(N_("Exercise 2 (positions of a batched decode step)"))
def check_exercise_2(ex: Exercise, fn: Callable[[Tensor, int], Tensor]) -> None:
    """fn(mask, n_new) must continue every left-padded row from its number of real tokens."""
    model, gen = _tiny_decoder(), torch.Generator().manual_seed(3)
    lengths, prompt_len = [2, 6, 4], 6
    mask = _mask(lengths, prompt_len, "left")
    prompt = torch.randint(1, 12, (3, prompt_len), generator=gen).masked_fill(~mask, 0)
    for n_new in (1, 3):
        new = torch.randint(1, 12, (3, n_new), generator=gen)
        got = _check_int_tensor(ex, ex.call(fn, mask.clone(), n_new), (3, n_new), "(batch, n_new)")
        want = mask.long().sum(-1, keepdim=True) + torch.arange(n_new)
        shown = _("for prompts of {lengths} real tokens left-padded to {prompt_len}, n_new={n_new}: got {got}").format(
            lengths=lengths, prompt_len=prompt_len, n_new=n_new, got=got.tolist())
        ex.expect(not torch.equal(got, torch.arange(prompt_len, prompt_len + n_new).expand(3, -1)),
                  _("you counted the pad slots: the new tokens follow each row's real tokens, not the padded length; "
                    "{shown}").format(shown=shown))
        ex.expect(not torch.equal(got, want - 1), _("off by one: with n real tokens at positions 0..n-1, the next one "
                                                    "is at position n; {shown}").format(shown=shown))
        with torch.no_grad():
            cache = model.new_cache()
            model(prompt, positions=position_ids_from_mask(mask), attn_mask=mask, cache=cache)
            full_mask = torch.cat([mask, torch.ones(3, n_new, dtype=torch.bool)], dim=-1)
            cached = model(new, positions=got, attn_mask=full_mask, cache=cache)
            for row, n in enumerate(lengths):
                alone = model(torch.cat([prompt[row, prompt_len - n:], new[row]])[None])[0, -n_new:]
                gap = (cached[row] - alone).abs().max().item()
                ex.expect(gap < 1e-4, _("row {row} ({n} real tokens) differs from its unpadded recomputation by "
                                        "{gap:.3f} logits; {shown}").format(row=row, n=n, gap=gap, shown=shown))
    ex.passed(_("every row's new tokens match the unpadded recomputation (n_new = 1 and 3)"))


@checker(N_("Exercise 3 (which rows will train)"))
def check_exercise_3(ex: Exercise, fn: Callable[[Tensor, Tensor, int], Tensor]) -> None:
    """fn(positions, mask, max_len) must predict which table rows get non-zero gradient."""
    max_len, gen = 12, torch.Generator().manual_seed(4)
    left = _mask([3, 7, 5], 8, "left")
    right = _mask([2, 5], 8, "right")
    cases = [
        (N_("right padding, default positions"), torch.arange(8).expand(2, -1), right),
        (N_("left padding, default positions"), torch.arange(8).expand(3, -1), left),
        (N_("left padding, positions from the mask"), position_ids_from_mask(left), left),
        (N_("left padding, positions from the mask + 4"), position_ids_from_mask(left) + 4, left),
    ]
    for label, positions, mask in cases:
        model = _tiny_decoder(max_len)
        tokens = torch.randint(1, 12, mask.shape, generator=gen).masked_fill(~mask, 0)
        targets = torch.randint(0, 12, mask.shape, generator=gen).masked_fill(~mask, -100)
        cross_entropy(model(tokens, positions=positions.contiguous(), attn_mask=mask), targets).backward()
        truth = row_gradient_norms(model.scheme.weight) > 0
        got = ex.call(fn, positions.clone(), mask.clone(), max_len)
        ex.expect(isinstance(got, Tensor) and got.dtype == torch.bool and tuple(got.shape) == (max_len,),
                  _("return a ({max_len},) bool tensor, got {got}").format(
                      max_len=max_len,
                      got=f"{tuple(got.shape)} {got.dtype}" if isinstance(got, Tensor) else type(got).__name__))
        if torch.equal(got, truth):
            continue
        shown = _("{label}: positions {positions}, mask {mask}; you said rows {said}, the gradient reached rows "
                  "{reached}").format(label=_(label), positions=positions.tolist(), mask=mask.long().tolist(),
                                      said=got.nonzero().flatten().tolist(),
                                      reached=truth.nonzero().flatten().tolist())
        all_slots = torch.zeros(max_len, dtype=torch.bool)
        all_slots[positions.flatten()] = True
        ex.expect(not torch.equal(got, all_slots), _("padded slots train nothing: the mask hides them from the real "
                                                     "tokens and the loss ignores their outputs; {shown}").format(
                                                         shown=shown))
        ex.fail(shown)
    ex.passed(_("matches the measured gradient in {n} batches").format(n=len(cases)))


check_exercise_4 = prediction(
    N_("Exercise 4 (predict where bfloat16 angles break)"), variable="predicted_break", tolerance=32,
    nudge=N_("Which positions does the model see at a given shift, and from which whole number on can bfloat16 "
             "no longer store every one of them?"),
    too_low=N_("bfloat16 keeps 8 significant bits: every whole number up to 256 is exact, so positions below "
               "256 are not rounded at all."),
    too_high=N_("above 256 bfloat16 keeps only every second whole number, so two neighbouring positions "
                "already share one value: the offset 3 back is then wrong for some tokens."),
    why=N_("The model sees the positions shift to shift + 15. bfloat16 represents every whole number up to 256 "
           "exactly and only even ones above, so the first shift whose positions pass 256 is the first at which "
           "some offsets come out as 2 or 4 instead of 3; a lag-3 model needs exactly 3. The fastest pair has "
           "theta = 1, so its angle is the position: whether the angle's rounding or the position's breaks it is "
           "the open-ended experiment's question."),
)

check_exercise_5 = choice(
    N_("Exercise 5 (why the article's test keeps RoPE at chance)"),
    options={
        "a": N_("Zero embeddings make every score zero, so attention is uniform, and a uniform average over the "
                "earlier tokens carries no position."),
        "b": N_("Frozen embeddings get no gradient, so during training the model cannot learn to tell the start "
                "token from the other tokens."),
        "c": N_("Zeroing the embeddings zeroes the start token's too, so nothing in the decoder's input marks index "
                "0 as different any more."),
        "d": N_("With zero embeddings the causal mask has nothing to act on, so it no longer hides the later "
                "tokens and the decoder behaves as an encoder."),
    },
    answer="c",
    why=N_("Zeroed, every token's input vector is the same, the start token's included, so every value vector "
           "is the same v, and attention returns sum_j a_ij v = v at every position whatever the weights a_ij. "
           "RoPE, T5 and ALiBi change only the weights; an added encoding changes the inputs, so it passes."),
    hints={
        "a": N_("in section 1 the decoder without position learned absolute position from a start token: "
                "averaging over 1, 2, 3, ... earlier tokens carries position when the values differ."),
        "b": N_("the sinusoidal and learnable models pass the same test with the same frozen zero embeddings: "
                "the frozen table is not what stops RoPE."),
        "d": N_("the mask is applied to the scores, whatever the inputs: query i still attends over i + 1 keys, "
                "as in section 1."),
    },
    nudge=N_("Compare what the decoder receives at the start token and at any other position in this test with "
             "what it received in section 1's probe with a start token."),
)

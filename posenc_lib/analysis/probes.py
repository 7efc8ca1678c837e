"""Checks that tell whether position information reaches a model, and arrives right (notebook 07).

Each function is one habit worth having when adding or debugging a positional encoding:

    position_ids_from_mask(mask)       position ids of a padded batch: cumsum(mask) - 1 on real tokens
    row_gradient_norms(weight)         which rows of a learnable table received gradient, and how much
    position_probe(model, seq_len)     can the model output each token's index when every token is alike?
    position_probe_accuracy(h, h')     can a small probe read each token's index off frozen hidden states?
    shift_sensitivity(model, x, c)     does the output change when every position moves by c (absolute use)?
    permutation_sensitivity(model, x)  does the output depend on token order at all?

Attention maps, the visual check, come from :meth:`posenc_lib.models.TinyTransformer.attention_weights`.

Shapes used throughout (as in :mod:`posenc_lib.attention`):
    inputs, positions, attn_mask   (batch, seq)
    per-token logits               (batch, seq, n_outputs)
    attention weights              (batch, heads, q_len, k_len), one tensor per layer
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch import Tensor, nn

from posenc_lib.checks import check_int, check_integer_tensor, is_int
from posenc_lib.models import TinyTransformer
from posenc_lib.scheme import default_positions
from posenc_lib.training import accuracy, train

__all__ = [
    "position_ids_from_mask",
    "row_gradient_norms",
    "position_probe",
    "position_probe_accuracy",
    "shift_sensitivity",
    "permutation_sensitivity",
]


def position_ids_from_mask(attn_mask: Tensor, pad_position: int = 0) -> Tensor:
    """Position ids of a padded batch, counted over the real tokens only.

    ``positions = cumsum(mask, dim=-1) - 1`` numbers the real tokens of each row 0, 1, 2, ...
    wherever they sit, so a left-padded row gets the same positions as the row without padding.
    Padded slots get ``pad_position`` (default 0): any valid row of a table, so the lookup never
    fails; their value does not matter as long as the attention mask hides them and their outputs
    are ignored. This is what Hugging Face's ``generate`` computes (transformers 5.x,
    ``GenerationMixin._prepare_position_ids_for_generation``, pads at 0; older releases' GPT-2
    ``prepare_inputs_for_generation`` put 1 there).

    Args:
        attn_mask: (batch, seq) bool, or 0/1 integer as in Hugging Face: True/1 = real token.
        pad_position: the position id given to padded slots, an int >= 0.

    Returns:
        (batch, seq) int64 position ids.
    """
    if not isinstance(attn_mask, Tensor):
        raise TypeError(f"attn_mask must be a (batch, seq) bool or 0/1 integer tensor, got {type(attn_mask).__name__}")
    if attn_mask.dtype.is_floating_point or attn_mask.is_complex():
        raise TypeError(f"attn_mask must be a bool or 0/1 integer tensor, got dtype {attn_mask.dtype}")
    if attn_mask.dim() != 2:
        raise ValueError(f"attn_mask must have shape (batch, seq), got {tuple(attn_mask.shape)}")
    if attn_mask.dtype != torch.bool and attn_mask.numel() and not ((attn_mask == 0) | (attn_mask == 1)).all():
        raise ValueError(f"attn_mask must hold only 0 and 1, got values {sorted(set(attn_mask.unique().tolist()))}")
    pad_position = check_int("pad_position", pad_position, minimum=0)
    real = attn_mask.bool()
    return (real.long().cumsum(dim=-1) - 1).masked_fill(~real, pad_position)


def row_gradient_norms(weight: Tensor) -> Tensor:
    """L2 norm of the gradient of every row of a position table, after ``loss.backward()``.

    Row ``p`` of a learnable table receives gradient only if some token at position ``p``
    influenced the loss, so the norms show which positions a batch trained. ``weight.grad is
    None`` is the classic bug: the table was frozen (``requires_grad=False``), detached from the
    graph, or never used; this function raises ValueError saying so.

    Args:
        weight: (rows, d) parameter, e.g. ``LearnablePE.weight``.

    Returns:
        (rows,) float tensor; 0 for rows no token used.
    """
    if not isinstance(weight, Tensor):
        raise TypeError(f"weight must be a (rows, d) tensor, got {type(weight).__name__}")
    if weight.dim() != 2:
        raise ValueError(f"weight must have shape (rows, d), got {tuple(weight.shape)}")
    if not weight.requires_grad:
        raise ValueError(
            "weight.requires_grad is False: the table is frozen and will never train "
            "(set requires_grad=True, or make it an nn.Parameter)"
        )
    if weight.grad is None:
        raise ValueError(
            "weight.grad is None after backward: no gradient reached the table. Is it detached from the graph "
            "(.detach(), .data, torch.no_grad()), a copy rather than the parameter, or not used by the forward pass?"
        )
    return weight.grad.detach().norm(dim=-1)


def _check_per_token_model(model: nn.Module, name: str = "model") -> None:
    if not isinstance(model, TinyTransformer):
        raise TypeError(f"{name} must be a TinyTransformer, got {type(model).__name__}")
    if model.pool != "none":
        raise ValueError(f"{name} must give per-token outputs (pool='none'), got pool={model.pool!r}")


def position_probe(
    model: TinyTransformer,
    seq_len: int,
    steps: int = 100,
    lr: float = 1e-2,
    start_token: bool = False,
    progress: Callable[[range], Iterable[int]] | None = None,
) -> float:
    """Train ``model`` to output each token's index when all tokens are the same; return its accuracy.

    The input is one sequence of ``seq_len`` copies of token 0, so the token embeddings carry no
    information and only position can tell the tokens apart. The target of the token at index
    ``p`` is ``p``. A model that receives absolute position solves it (accuracy 1); a model whose
    only position signal is relative (RoPE, T5, ALiBi) or none gives every token the same output
    (accuracy ``1/seq_len``): with identical values, attention returns the same vector whatever
    its weights.

    ``start_token=True`` puts token 1 at index 0 (as a BOS token) and scores indices 1..seq_len-1
    only (chance ``1/(seq_len-1)``): the attention paid to the one distinct token can now depend
    on its distance, and relative schemes (and a causal mask alone) may recover absolute position.

    Args:
        model: a fresh :class:`TinyTransformer` with ``pool="none"``, at least ``seq_len`` outputs,
            and a vocabulary of at least 2 tokens (1 without ``start_token``). It is trained in place.
        seq_len: length of the probe sequence (>= 2).
        steps, lr: the training run (full batch: the probe has one sequence).
        start_token: put a distinct token at index 0 (see above).
        progress: wraps the training steps (e.g. a tqdm bar); ``None`` trains silently.

    Returns:
        The fraction of probed tokens whose argmax output equals their index.
    """
    _check_per_token_model(model)
    seq_len = check_int("seq_len", seq_len, minimum=2)
    if model.head.out_features < seq_len:
        raise ValueError(f"model must have at least seq_len={seq_len} outputs, got {model.head.out_features}")
    if isinstance(model.embed, nn.Embedding) and model.embed.num_embeddings < 1 + start_token:
        raise ValueError(f"model's vocabulary must have at least {1 + start_token} tokens for start_token={start_token}, "
                         f"got {model.embed.num_embeddings}")
    inputs = torch.zeros(1, seq_len, dtype=torch.long)
    targets = torch.arange(seq_len)[None].clone()
    if start_token:
        inputs[0, 0], targets[0, 0] = 1, -100
    train(model, (inputs, targets), steps, lr=lr, batch_size=1, progress=progress)
    with torch.no_grad():
        predicted = model(inputs).argmax(-1)
    probed = targets != -100
    return (predicted[probed] == targets[probed]).float().mean().item()


@torch.no_grad()
def shift_sensitivity(model: TinyTransformer, inputs: Tensor, shift: int) -> float:
    """``max |model(inputs, positions + shift) - model(inputs)|``: 0 (up to rounding) when only relative position matters.

    An absolute encoding (sinusoidal, learnable) changes the output; RoPE and relative biases
    do not, in exact arithmetic. inputs: (batch, seq) token ids; shift: an int >= 0.
    """
    _check_per_token_model(model)
    check_integer_tensor("inputs", inputs)
    if inputs.dim() != 2:
        raise ValueError(f"inputs must have shape (batch, seq), got {tuple(inputs.shape)}")
    shift = check_int("shift", shift, minimum=0)
    model.eval()
    positions = default_positions(*inputs.shape)
    return (model(inputs, positions=positions + shift) - model(inputs, positions=positions)).abs().max().item()


@torch.no_grad()
def permutation_sensitivity(model: TinyTransformer, inputs: Tensor, generator: torch.Generator | None = None) -> float:
    """``max |model(inputs[:, perm]) - model(inputs)[:, perm]|`` over a random permutation of the tokens.

    0 (up to rounding) means the per-token outputs just move with their tokens: the model does not
    see word order at all (an encoder without position). inputs: (batch, seq) token ids.
    """
    _check_per_token_model(model)
    check_integer_tensor("inputs", inputs)
    if inputs.dim() != 2 or inputs.shape[1] < 2:
        raise ValueError(f"inputs must have shape (batch, seq) with seq >= 2, got {tuple(inputs.shape)}")
    gen = generator if generator is not None else torch.Generator().manual_seed(0)
    perm = torch.randperm(inputs.shape[1], generator=gen)
    model.eval()
    return (model(inputs[:, perm]) - model(inputs)[:, perm]).abs().max().item()


def position_probe_accuracy(
    train_states: Tensor,
    test_states: Tensor,
    hidden: int = 64,
    steps: int = 300,
    lr: float = 1e-2,
    seed: int = 0,
    progress: Callable[[range], Iterable[int]] | None = None,
) -> float:
    """How well a small probe reads each token's position index off its hidden state.

    A probe is a classifier trained on frozen features: here it sees one token's vector and
    must name that token's index ``0 .. seq-1`` in its sequence. Chance is ``1 / seq``; a probe
    at chance means the states carry no (recoverable) absolute position.

    Args:
        train_states: (n, seq, d) float hidden states (detached) to train the probe on.
        test_states: (m, seq, d) hidden states of other sequences, to score it on.
        hidden: width of the probe's one hidden layer (ReLU); 0 gives a linear probe.
        steps, lr: AdamW training of the probe with :func:`train` (batches of 64 sequences).
        seed: seeds the probe's initialisation and its batches.
        progress: wraps the training steps (e.g. a tqdm bar); ``None`` trains silently.

    Returns the probe's accuracy on ``test_states``: the fraction of tokens whose position it
    names exactly.
    """
    for name, t in (("train_states", train_states), ("test_states", test_states)):
        if not isinstance(t, Tensor) or not t.dtype.is_floating_point or t.dim() != 3:
            got = f"shape {tuple(t.shape)}, dtype {t.dtype}" if isinstance(t, Tensor) else type(t).__name__
            raise ValueError(f"{name} must be a float tensor of shape (n, seq, d), got {got}")
    if test_states.shape[1:] != train_states.shape[1:]:
        raise ValueError(
            f"test_states must have the (seq, d) of train_states {tuple(train_states.shape[1:])}, "
            f"got {tuple(test_states.shape[1:])}"
        )
    if not is_int(hidden) or hidden < 0:
        raise ValueError(f"hidden must be an int >= 0 (0 = linear probe), got {hidden!r}")
    seq, d = train_states.shape[1:]
    torch.manual_seed(seed)
    probe = nn.Linear(d, seq) if hidden == 0 else nn.Sequential(nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, seq))
    targets = torch.arange(seq).expand(train_states.shape[0], seq)
    train(probe, (train_states.detach(), targets), steps, lr=lr, generator=torch.Generator().manual_seed(seed),
          progress=progress)
    return accuracy(probe, test_states.detach(), torch.arange(seq).expand(test_states.shape[0], seq))

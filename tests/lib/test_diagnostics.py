"""posenc_lib.analysis.probes: position ids from a mask, row gradients, the position probe, shift/permutation checks, maps."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.testing import assert_close

from posenc_lib.training import cross_entropy
from posenc_lib.analysis.probes import (
    permutation_sensitivity,
    position_ids_from_mask,
    position_probe,
    row_gradient_norms,
    shift_sensitivity,
)
from posenc_lib.embeddings.learnable import LearnablePE
from posenc_lib.embeddings.sinusoidal import SinusoidalPE
from posenc_lib.models import TinyTransformer
from posenc_lib.rotary.rope import RotaryPE
from posenc_lib.scheme import NoPosition
from posenc_lib.score_bias.alibi import ALiBi
from posenc_lib.score_bias.t5 import T5RelativeBias

pytestmark = pytest.mark.usefixtures("single_thread")


def model(scheme=None, causal: bool = False, seed: int = 0, n_layers: int = 1, vocab: int = 12) -> TinyTransformer:
    torch.manual_seed(seed)
    return TinyTransformer(vocab, 12, d_model=16, n_heads=2, n_layers=n_layers, scheme=scheme, causal=causal,
                           pool="none").eval()


def padded_mask(lengths: list[int], seq: int, side: str) -> torch.Tensor:
    mask = torch.arange(seq)[None] < torch.tensor(lengths)[:, None]
    return mask.flip(-1) if side == "left" else mask


# --- position_ids_from_mask ----------------------------------------------------------------------


@given(lengths=st.lists(st.integers(0, 9), min_size=1, max_size=5), extra=st.integers(0, 3),
       side=st.sampled_from(["left", "right"]), pad_position=st.integers(0, 5))
def test_real_tokens_count_from_zero_whatever_the_padding(lengths, extra, side, pad_position):
    seq = max(lengths) + extra
    if seq == 0:
        return
    mask = padded_mask(lengths, seq, side)
    ids = position_ids_from_mask(mask, pad_position)
    assert ids.dtype == torch.long and ids.shape == mask.shape
    for row, n in enumerate(lengths):
        assert ids[row][mask[row]].tolist() == list(range(n))
        assert (ids[row][~mask[row]] == pad_position).all()
    assert torch.equal(position_ids_from_mask(mask.long(), pad_position), ids)  # 0/1 integers as in HF


@settings(max_examples=15)
@given(lengths=st.lists(st.integers(1, 7), min_size=2, max_size=3), side=st.sampled_from(["left", "right"]),
       name=st.sampled_from(["learnable", "sinusoidal", "rope"]))
def test_padded_batch_with_ids_from_the_mask_equals_each_sequence_alone(lengths, side, name):
    scheme = {"learnable": lambda: LearnablePE(16, 8, init_std=1.0), "sinusoidal": lambda: SinusoidalPE(16),
              "rope": lambda: RotaryPE(8)}[name]()
    net = model(scheme, causal=True).double()
    seq = max(lengths)
    mask = padded_mask(lengths, seq, side)
    gen = torch.Generator().manual_seed(sum(lengths))
    seqs = [torch.randint(1, 12, (n,), generator=gen) for n in lengths]
    tokens = torch.zeros(len(lengths), seq, dtype=torch.long)
    tokens[mask] = torch.cat(seqs)
    with torch.no_grad():
        out = net(tokens, positions=position_ids_from_mask(mask), attn_mask=mask)
        alone = torch.cat([net(s[None])[0] for s in seqs])
    assert_close(out[mask], alone)


def test_left_padding_without_ids_from_the_mask_moves_an_absolute_encoding():
    net = model(LearnablePE(16, 8, init_std=1.0), causal=True)
    mask = padded_mask([3, 6], 6, "left")
    tokens = torch.randint(1, 12, (2, 6), generator=torch.Generator().manual_seed(0)).masked_fill(~mask, 0)
    with torch.no_grad():
        alone = net(tokens[:1, 3:])[0]
        assert not torch.allclose(net(tokens, attn_mask=mask)[0, 3:], alone, atol=1e-3)
        assert_close(net(tokens, positions=position_ids_from_mask(mask), attn_mask=mask)[0, 3:], alone)


@pytest.mark.parametrize(
    ("mask", "pad_position", "error", "match"),
    [
        ([[1, 0]], 0, TypeError, "attn_mask must be a"),
        (torch.ones(2, 3), 0, TypeError, "dtype torch.float32"),
        (torch.ones(2, 3, 1, dtype=torch.bool), 0, ValueError, r"shape \(batch, seq\), got \(2, 3, 1\)"),
        (torch.tensor([[0, 1, 2]]), 0, ValueError, r"only 0 and 1, got values \[0, 1, 2\]"),
        (torch.ones(1, 3, dtype=torch.bool), -1, ValueError, "pad_position must be an int >= 0, got -1"),
        (torch.ones(1, 3, dtype=torch.bool), 0.5, TypeError, "pad_position must be an int"),
    ],
)
def test_position_ids_from_mask_rejects_bad_input(mask, pad_position, error, match):
    with pytest.raises(error, match=match):
        position_ids_from_mask(mask, pad_position)


# --- row_gradient_norms ---------------------------------------------------------------------------


def test_only_rows_used_by_real_tokens_get_gradient():
    net = model(LearnablePE(16, 10))
    mask = padded_mask([2, 5], 6, "right")
    tokens = torch.randint(1, 12, (2, 6), generator=torch.Generator().manual_seed(1))
    targets = torch.randint(0, 12, (2, 6), generator=torch.Generator().manual_seed(2)).masked_fill(~mask, -100)
    cross_entropy(net(tokens, attn_mask=mask), targets).backward()
    norms = row_gradient_norms(net.scheme.weight)
    assert norms.shape == (10,)
    assert (norms[:5] > 0).all() and (norms[5:] == 0).all()


def test_row_gradient_norms_finds_a_detached_or_frozen_table():
    pe = LearnablePE(4, 6)
    (pe.weight.detach()[[0, 1]].sum() * torch.ones(1, requires_grad=True)).sum().backward()
    with pytest.raises(ValueError, match="grad is None"):
        row_gradient_norms(pe.weight)
    with pytest.raises(ValueError, match="frozen"):
        row_gradient_norms(pe.weight.requires_grad_(False))


@pytest.mark.parametrize(("weight", "error", "match"), [
    ([[1.0]], TypeError, "weight must be a"),
    (torch.zeros(3, requires_grad=True), ValueError, r"shape \(rows, d\), got \(3,\)"),
])
def test_row_gradient_norms_rejects_bad_input(weight, error, match):
    with pytest.raises(error, match=match):
        row_gradient_norms(weight)


# --- position_probe -------------------------------------------------------------------------------


def test_probe_separates_absolute_from_relative_and_none():
    assert position_probe(model(SinusoidalPE(16)), 8, steps=60) == 1.0
    for scheme, causal in [(None, False), (None, True), (RotaryPE(8), False), (ALiBi(2), True),
                           (T5RelativeBias(2), False)]:
        # identical tokens -> identical outputs: chance exactly, however long it trains
        assert position_probe(model(scheme, causal), 8, steps=5) == pytest.approx(1 / 8)


def test_probe_with_a_start_token_scores_the_other_tokens_only():
    assert position_probe(model(None, causal=False), 8, steps=5, start_token=True) == pytest.approx(1 / 7)
    assert position_probe(model(None, causal=True), 8, steps=150, start_token=True) > 0.5


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"model": "nope"}, TypeError, "model must be a TinyTransformer"),
    ({"seq_len": 1}, ValueError, "seq_len must be an int >= 2, got 1"),
    ({"seq_len": 13}, ValueError, "at least seq_len=13 outputs, got 12"),
    ({"model": model(vocab=1), "start_token": True}, ValueError, "at least 2 tokens"),
])
def test_probe_rejects_bad_input(kwargs, error, match):
    args = {"model": model(), "seq_len": 8, "steps": 1} | kwargs
    with pytest.raises(error, match=match):
        position_probe(**args)


def test_probe_needs_per_token_outputs():
    pooled = TinyTransformer(4, 8, d_model=16, n_heads=2, n_layers=1, pool="mean")
    with pytest.raises(ValueError, match="pool='none'"):
        position_probe(pooled, 8, steps=1)


# --- shift and permutation sensitivity ------------------------------------------------------------


@pytest.mark.parametrize(("scheme", "absolute"), [
    (lambda: SinusoidalPE(16), True), (lambda: LearnablePE(16, 64, init_std=1.0), True),
    (lambda: RotaryPE(8), False), (lambda: T5RelativeBias(2, bidirectional=False), False), (lambda: ALiBi(2), False),
    (NoPosition, False),
])
def test_shift_sensitivity_tells_absolute_from_relative(scheme, absolute):
    net = model(scheme(), causal=True)
    x = torch.randint(0, 12, (3, 10), generator=torch.Generator().manual_seed(0))
    change = shift_sensitivity(net, x, 40)
    assert change > 1e-2 if absolute else change < 1e-4
    assert shift_sensitivity(net, x, 0) == 0.0


def test_permutation_sensitivity_is_zero_only_for_an_encoder_without_position():
    x = torch.randint(0, 12, (3, 10), generator=torch.Generator().manual_seed(0))
    assert permutation_sensitivity(model(None), x) < 1e-5
    assert permutation_sensitivity(model(None, causal=True), x) > 1e-2
    assert permutation_sensitivity(model(RotaryPE(8)), x) > 1e-3


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda net: shift_sensitivity(net, torch.zeros(2, 3), 1), TypeError, "inputs must be an integer tensor"),
    (lambda net: shift_sensitivity(net, torch.zeros(3, dtype=torch.long), 1), ValueError, r"\(batch, seq\)"),
    (lambda net: shift_sensitivity(net, torch.zeros(1, 3, dtype=torch.long), -2), ValueError, "shift must be"),
    (lambda net: permutation_sensitivity(net, torch.zeros(1, 1, dtype=torch.long)), ValueError, "seq >= 2"),
])
def test_sensitivity_checks_reject_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call(model())


# --- TinyTransformer.attention_weights, the maps looked at in notebook 07 -----------------------------


@pytest.mark.parametrize("causal", [False, True])
def test_attention_weights_are_the_maps_the_model_uses(causal):
    net = model(RotaryPE(8), causal=causal, n_layers=2)
    x = torch.randint(0, 12, (2, 7), generator=torch.Generator().manual_seed(0))
    maps = net.attention_weights(x)
    assert len(maps) == 2 and all(m.shape == (2, 2, 7, 7) for m in maps)
    assert_close(maps[0].sum(-1), torch.ones(2, 2, 7))
    if causal:
        assert (maps[1].triu(1) == 0).all()
    with torch.no_grad():  # layer 0 by hand: the attention on the first LayerNorm of the embeddings
        h = net.blocks[0].ln1(net.embed(x))
        _, expected = net.blocks[0].attn(h, torch.arange(7)[None], None, causal, return_weights=True)
    assert_close(maps[0], expected)
    assert all(not block.attn._forward_hooks for block in net.blocks)   # hooks removed


def test_attention_weights_honour_positions_and_mask():
    net = model(RotaryPE(8), causal=True)
    x = torch.randint(0, 12, (2, 5), generator=torch.Generator().manual_seed(0))
    mask = padded_mask([2, 5], 5, "right")
    maps = net.attention_weights(x, positions=position_ids_from_mask(mask), attn_mask=mask)[0]
    assert (maps[0, :, :, 2:] == 0).all()
    assert not torch.allclose(net.attention_weights(x, positions=torch.zeros(2, 5, dtype=torch.long))[0],
                              net.attention_weights(x)[0])
    with pytest.raises(ValueError, match="positions must have shape"):
        net.attention_weights(x, positions=torch.zeros(2, 4, dtype=torch.long))


# --- conformance with Hugging Face transformers ---------------------------------------------------


@given(lengths=st.lists(st.integers(0, 8), min_size=1, max_size=4), side=st.sampled_from(["left", "right"]))
def test_position_ids_match_transformers_generate(lengths, side):
    from transformers.generation.utils import GenerationMixin

    seq = max(max(lengths), 1)
    mask = padded_mask(lengths, seq, side).long()                     # Hugging Face masks are 0/1 integers
    input_ids = torch.zeros_like(mask)
    # The method reads only its arguments when an attention mask is given (self is not used).
    reference = GenerationMixin._prepare_position_ids_for_generation(None, input_ids, {"attention_mask": mask})
    assert torch.equal(position_ids_from_mask(mask), reference)


def test_ids_from_the_mask_make_a_left_padded_gpt2_match_its_unpadded_run():
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=20, n_positions=16, n_embd=16, n_layer=1, n_head=2, attn_implementation="eager")
    gpt2 = GPT2LMHeadModel(config).eval()
    with torch.no_grad():
        gpt2.transformer.wpe.weight.normal_(std=1.0)                # make position matter in an untrained model
    mask = padded_mask([3, 6], 6, "left")
    tokens = torch.randint(1, 20, (2, 6), generator=torch.Generator().manual_seed(0)).masked_fill(~mask, 0)
    with torch.no_grad():
        alone = gpt2(tokens[:1, 3:]).logits[0]
        right = gpt2(tokens, attention_mask=mask.long(), position_ids=position_ids_from_mask(mask)).logits[0, 3:]
        wrong = gpt2(tokens, attention_mask=mask.long(), position_ids=torch.arange(6)[None].expand(2, -1)).logits[0, 3:]
    assert_close(right, alone, atol=1e-5, rtol=1e-5)
    assert not torch.allclose(wrong, alone, atol=1e-2)

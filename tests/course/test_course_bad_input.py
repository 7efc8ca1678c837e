"""Every bad input to the course package (tasks, data, explorers, 04's scheme catalogue), in one table: each
must raise the right exception type with a message that names the offending parameter (and the value).

The library's own table is tests/lib/test_bad_input.py.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from posenc_course.data import (
    RelativeDirection,
    Vocab,
    WhoDidWhat,
    char_corpus,
    lm_batch,
    lm_eval_windows,
    load_digits,
    sorting_task,
)
from posenc_course.explorers import context_values, relative_values, rope_values, sinusoidal_values
from posenc_course.floors import Floor, bag_of_tokens, chance, fixed, majority, with_floors
from posenc_course.kneser_ney import KneserNey
from posenc_course.nb04_vision import grid_similarity, regrid_scheme, vit_scheme
from posenc_lib.embeddings.tables_2d import SinCos2DPE
from posenc_lib.score_bias.alibi import ALiBi


# (id, call, exception type, regex the message must match: parameter name [and value])
BAD_INPUTS: list[tuple[str, Callable[[], object], type[Exception], str]] = [
    # ------------------------------------------------------------------ data
    ("vocab duplicate tokens", lambda: Vocab(("<pad>", "the", "the")), ValueError, r"tokens must be distinct, got duplicates \['the'\]"),
    ("vocab unknown word", lambda: Vocab(("<pad>", "the")).encode(["the", "cat"]), ValueError,
     r"pieces contain tokens not in the vocabulary: \['cat'\]"),
    ("task unknown split", lambda: WhoDidWhat().sample(4, torch.Generator(), split="val"), ValueError,
     r"split must be 'all', 'train' or 'test', got 'val'"),
    ("task no generator", lambda: WhoDidWhat().sample(4, generator=0), TypeError, r"generator must be a torch.Generator, got int"),
    ("sorting vocab too small", lambda: sorting_task(4, 5, 1, torch.Generator()), ValueError, r"vocab_size must be an int >= 2, got 1"),
    # ------------------------------------------------------------------ floors and the n-gram
    ("kn order 0", lambda: KneserNey([0, 1, 0], 0, 3), ValueError, r"order must be an int >= 1, got 0"),
    ("kn vocabulary of 1", lambda: KneserNey([0, 0], 2, 1), ValueError, r"vocab_size must be an int >= 2, got 1"),
    ("kn discount above 1", lambda: KneserNey([0, 1, 0], 2, 3, discount=1.5), ValueError,
     r"discount must be a number in \(0, 1\] or None .*got 1.5"),
    ("kn id out of the vocabulary", lambda: KneserNey([0, 1, 5], 2, 3), ValueError,
     r"ids must lie in \[0, vocab_size=3\), got values in \[0, 5\]"),
    ("kn text shorter than the order", lambda: KneserNey([0], 2, 3), ValueError, r"ids must hold at least order=2 tokens, got 1"),
    ("kn codes past int64", lambda: KneserNey([0, 1], 2, 2**32), ValueError, r"vocab_size \*\* order must fit in an int64"),
    ("kn float windows", lambda: KneserNey([0, 1, 0], 2, 3).window_losses(torch.zeros(2, 3), torch.zeros(2, 3).long()),
     TypeError, r"inputs must be an int64 tensor of token ids, got dtype torch.float32"),
    ("kn windows of two shapes", lambda: KneserNey([0, 1, 0], 2, 3).window_losses(
        torch.zeros(2, 3).long(), torch.zeros(2, 4).long()), ValueError, r"inputs and targets must both have shape \(n, T\)"),
    ("kn history out of the vocabulary", lambda: KneserNey([0, 1, 0], 2, 3).distribution([7]), ValueError,
     r"history must lie in \[0, vocab_size=3\), got values in \[7, 7\]"),
    ("chance of one class", lambda: chance(1), ValueError, r"n_classes must be an int >= 2, got 1"),
    ("bag of tokens float inputs", lambda: bag_of_tokens(torch.zeros(2, 4), torch.zeros(2, 4).long()), TypeError,
     r"inputs must be an \(n, T\) int64 tensor of token ids, got shape \(2, 4\), dtype torch.float32"),
    ("bag of tokens targets of another shape", lambda: bag_of_tokens(torch.zeros(2, 4).long(), torch.zeros(2, 2).long()),
     ValueError, r"targets must have shape \(n, T\) or \(n,\) for inputs of shape \(2, 4\), got \(2, 2\)"),
    ("bag of tokens unknown rule", lambda: bag_of_tokens(torch.zeros(2, 4).long(), torch.zeros(2, 4).long(), rule="mode"),
     ValueError, r"rule must be 'argmax' or 'sample', got 'mode'"),
    ("bag of tokens unknown view", lambda: bag_of_tokens(torch.zeros(2, 4).long(), torch.zeros(2, 4).long(), sees="past"),
     ValueError, r"sees must be 'earlier', 'so far' or 'all', got 'past'"),
    ("bag of tokens negative decay", lambda: bag_of_tokens(torch.zeros(2, 4).long(), torch.zeros(2, 4).long(),
                                                            decay=-0.5),
     ValueError, r"decay must be a finite number >= 0, got -0.5"),
    ("bag of tokens decay per sequence", lambda: bag_of_tokens(torch.zeros(2, 4).long(), torch.zeros(2).long(),
                                                                decay=0.5),
     ValueError, r"decay needs per-position targets of shape \(2, 4\)"),
    ("bag of tokens nothing scored", lambda: bag_of_tokens(torch.zeros(2, 4).long(), torch.full((2, 4), -100)), ValueError,
     r"targets must hold at least one label other than -100"),
    ("majority float labels", lambda: majority(torch.tensor([0.5]), torch.tensor([0])), TypeError,
     r"train_targets must be a 1-D or 2-D int64 tensor of labels"),
    ("fixed floor from text", lambda: fixed("x", "0.5"), TypeError, r"value must be a real number, got str '0.5'"),
    ("floor of two seeds", lambda: Floor("x", (0.1, 0.2)), ValueError,
     r"values must be one finite number \(a fixed rule\) or at least 3 \(one per seed\), got \(0.1, 0.2\)"),
    ("floor table without results", lambda: with_floors({}, [chance(4)], metric="accuracy"), ValueError,
     r"results must be a non-empty mapping of model name -> one result per seed, got \{\}"),
    ("floor table with two seeds", lambda: with_floors({"RoPE": [0.9, 0.8]}, [chance(4)], metric="accuracy"), ValueError,
     r"results\['RoPE'\] must hold one result per seed, at least 3, got 2"),
    ("floor table without floors", lambda: with_floors({"RoPE": [0.9, 0.8, 0.7]}, [], metric="accuracy"), ValueError,
     r"floors must be at least one Floor .*got \(\)"),
    ("floor table a number for a floor", lambda: with_floors({"RoPE": [0.9, 0.8, 0.7]}, [0.25], metric="accuracy"),
     ValueError, r"floors must be at least one Floor .*got \(0.25,\)"),
    ("floor table a name twice", lambda: with_floors({"chance": [0.3, 0.2, 0.1]}, [chance(4)], metric="accuracy"),
     ValueError, r"models and floors must have distinct names, got \['chance', 'chance'\]"),
    ("floor table negative effect floor", lambda: with_floors({"RoPE": [0.9, 0.8, 0.7]}, [chance(4)], metric="accuracy",
                                                               floor=-1), ValueError, r"floor must be a number >= 0, got -1"),
    ("floor table no metric", lambda: with_floors({"RoPE": [0.9, 0.8, 0.7]}, [chance(4)], metric=""), ValueError,
     r"metric must be the non-empty name of the measure, got ''"),
    # ------------------------------------------------------------------ vision
    ("vit scheme unknown name", lambda: vit_scheme("3-D RoPE", 32, 4, 4, 4), ValueError,
     r"name must be one of \[.*'axial RoPE'.*\], got '3-D RoPE'"),
    ("regrid scheme grid mismatch", lambda: regrid_scheme(SinCos2DPE(8, 2, 2, n_prefix=1), (3, 3), (4, 4)), ValueError,
     r"old_hw=\(3, 3\), n_prefix=1 must match the scheme's grid \(2, 2\), n_prefix=1"),
    ("regrid scheme unknown kind", lambda: regrid_scheme(ALiBi(2), (2, 2), (3, 3)), TypeError,
     r"scheme must be one of the schemes of vit_scheme, got ALiBi"),
    ("regrid scheme unknown coords", lambda: regrid_scheme(SinCos2DPE(8, 2, 2, n_prefix=1), (2, 2), (4, 4), coords="stretch"),
     ValueError, r"coords must be one of .*'interpolate'.*got 'stretch'"),
    ("grid similarity wrong table", lambda: grid_similarity(torch.zeros(5, 4), 2, 3), ValueError,
     r"table must have shape \(n_prefix \+ grid_h\*grid_w, d\) = \(0 \+ 2\*3, d\), got \(5, 4\)"),
    # ------------------------------------------------------------------ data: images
    ("digits unknown split", lambda: load_digits("valid"), ValueError, r"split must be 'all', 'train' or 'test', got 'valid'"),
    ("digits n_test too large", lambda: load_digits("test", n_test=1797), ValueError, r"n_test must be an int in \[1, 1796\], got 1797"),
    ("direction grid too small", lambda: RelativeDirection(1, 4), ValueError, r"grid_h must be an int >= 2, got 1"),
    ("direction n not positive", lambda: RelativeDirection().sample(0, torch.Generator()), ValueError,
     r"n must be a positive integer, got 0"),
    ("direction no generator", lambda: RelativeDirection().sample(4, 0), TypeError, r"generator must be a torch.Generator, got int"),
    ("direction held-out tie", lambda: RelativeDirection(4, 4).split([(1, 1)]), ValueError,
     r"held_out must be a non-empty list of \(row offset, column offset\) pairs allowed on a 4x4 canvas.*got \[\(1, 1\)\]"),
    ("direction held-out beyond the grid", lambda: RelativeDirection(4, 4).split([(0, 4)]), ValueError,
     r"held_out must be .* got \[\(0, 4\)\]"),
    ("direction offsets of a flat tensor", lambda: RelativeDirection().offsets(torch.zeros(4, dtype=torch.long)), ValueError,
     r"cells must be an \(n, 2\) tensor of \(A, B\) cell indices, got torch.Size\(\[4\]\)"),
    # ------------------------------------------------------------------ text data and extrapolation (notebook 06)
    ("corpus missing", lambda: char_corpus("no_such_corpus.txt", "0" * 64), FileNotFoundError,
     r"no_such_corpus\.txt.*missing"),
    ("corpus wrong checksum", lambda: char_corpus(sha256="0" * 64), ValueError,
     r"shakespeare_tragedies\.txt.*SHA-256 .*expected 0{64}"),
    ("lm_batch float ids", lambda: lm_batch(torch.zeros(100), 8, 2, torch.Generator()), TypeError,
     r"ids must be a 1-D int64 tensor.*float32"),
    ("lm_batch too short", lambda: lm_batch(torch.zeros(8, dtype=torch.long), 8, 2, torch.Generator()), ValueError,
     r"seq_len \+ 1 = 9 must not exceed the 8 ids"),
    ("lm_batch no generator", lambda: lm_batch(torch.zeros(100, dtype=torch.long), 8, 2, 0), TypeError,
     r"generator must be a torch.Generator, got int"),
    ("lm_eval_windows too many", lambda: lm_eval_windows(torch.zeros(100, dtype=torch.long), 10, 10), ValueError,
     r"n \* seq_len \+ 1 = 101 ids needed for 10 windows, got 100"),
    ("lm_eval_windows seq_len 0", lambda: lm_eval_windows(torch.zeros(100, dtype=torch.long), 0, 2), ValueError,
     r"seq_len must be an int >= 1, got 0"),
    ("explorer position past the positions shown", lambda: sinusoidal_values(64, 10000.0), ValueError,
     r"position must be < n_positions=64, got 64"),
    ("explorer negative position", lambda: sinusoidal_values(-1, 10000.0), ValueError, r"position must be an int >= 0, got -1"),
    ("explorer base 1", lambda: sinusoidal_values(3, 1.0), ValueError, r"base must be a finite number > 1, got 1.0"),
    ("explorer key position past the grid", lambda: rope_values(0, 48), ValueError, r"key_position must be < n_positions=48, got 48"),
    ("explorer query and key of two lengths", lambda: rope_values(0, 1, query=(1.0, 2.0), key=(1.0,)), ValueError,
     r"query and key must be 1-D and of one length, got shapes \(2,\) and \(1,\)"),
    ("explorer no heads", lambda: relative_values(0, 8), ValueError, r"n_heads must be an int >= 1, got 0"),
    ("explorer unknown method", lambda: context_values("ntk-by-parts", 2.0), ValueError,
     r"method must be one of \['linear', 'ntk', 'dynamic', 'yarn', 'llama3'\], got 'ntk-by-parts'"),
    ("explorer factor below 1", lambda: context_values("yarn", 0.5), ValueError, r"factor must be >= 1 \(an extension\), got 0.5"),
]


@pytest.mark.parametrize("call, exception, message", [row[1:] for row in BAD_INPUTS], ids=[row[0] for row in BAD_INPUTS])
def test_bad_input_raises_a_clear_error(call, exception, message):
    with torch.no_grad(), pytest.raises(exception, match=message):
        call()

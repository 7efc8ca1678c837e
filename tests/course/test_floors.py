"""Floors (posenc_course.floors): each rule by hand on a few sequences, the table with its floor rows,
and the verdicts a model gets against a fixed floor and a trained one."""

from __future__ import annotations

import pytest
import torch

from posenc_course import floors
from posenc_course.data import char_corpus, lag_task, lm_eval_windows
from posenc_course.kneser_ney import KneserNey
from posenc_course.floors import (FLOOR_ROW, Floor, bag_of_tokens, chance, fixed, majority, no_position, untrained,
                                  with_floors)
from posenc_course.report import compare

# two sequences of 4 tokens; per-position targets, -100 where nothing is scored
INPUTS = torch.tensor([[1, 2, 1, 3],
                       [0, 0, 2, 2]])
TARGETS = torch.tensor([[-100, 1, 2, 1],
                        [-100, 0, 0, 0]])


def test_chance_and_majority_by_hand():
    assert chance(16).values == (1 / 16,) and chance(16).note == "1/16"
    train = torch.tensor([2, 2, 1, 0, 2, -100])
    assert majority(train, torch.tensor([2, 1, 2, 2])).values == (0.75,)
    assert majority(torch.tensor([1, 0, 0, 1]), torch.tensor([0, 1])).values == (0.5,)  # tie: label 0
    assert "label 0" in majority(torch.tensor([1, 0, 0, 1]), torch.tensor([0, 1])).note


def test_bag_of_tokens_by_hand():
    """The earlier tokens, argmax. Row 0: p=1 has seen {1}: right (target 1); p=2 {1, 2}: a tie, right
    half the time (target 2); p=3 {1, 2, 1}: answers 1, right. Row 1: p=1 {0}: right; p=2 {0, 0}:
    right; p=3 {0, 0, 2}: right. (1 + 0.5 + 1 + 1 + 1 + 1) / 6."""
    assert bag_of_tokens(INPUTS, TARGETS).values == pytest.approx((5.5 / 6,))
    # sampling: the target's share of the tokens counted: 1, 1/2, 2/3, 1, 1, 2/3
    assert bag_of_tokens(INPUTS, TARGETS, rule="sample").values == pytest.approx(((3 + 1 / 2 + 4 / 3) / 6,))
    # so far (0..p): row 0: p=1 {1, 2} tie, 1/2; p=2 {1, 2, 1}: wrong; p=3 {1, 2, 1, 3}: right;
    # row 1: p=1 {0, 0}: right; p=2 {0, 0, 2}: right; p=3 {0, 0, 2, 2}: a tie, 1/2
    assert bag_of_tokens(INPUTS, TARGETS, sees="so far").values == pytest.approx((4 / 6,))
    # the whole row at every position: row 0 answers 1 (right twice), row 1 ties 0 and 2 (half, three times)
    assert bag_of_tokens(INPUTS, TARGETS, sees="all").values == pytest.approx(((2 + 1.5) / 6,))
    # one answer per sequence reads the whole row
    assert bag_of_tokens(INPUTS, torch.tensor([1, 2])).values == pytest.approx(((1 + 0.5) / 2,))
    # nothing counted yet (position 0, earlier tokens): a uniform guess among the 4 ids
    assert bag_of_tokens(INPUTS[:1, :1], torch.tensor([[3]])).values == pytest.approx((1 / 4,))


def test_bag_of_tokens_on_the_lag_task_is_above_chance_and_sampling_is_below_argmax():
    """07 §3's task (lag 3, 16 tokens, length 16): the most frequent earlier token is right about a
    quarter of the time, a token drawn from them about a fifth (the issue's 0.26 and 0.19)."""
    x, y = lag_task(512, 16, 16, 3, torch.Generator().manual_seed(0))
    argmax, sample = bag_of_tokens(x, y).values[0], bag_of_tokens(x, y, rule="sample").values[0]
    assert 1 / 16 < sample < argmax
    assert argmax == pytest.approx(0.26, abs=0.01) and sample == pytest.approx(0.19, abs=0.01)


def test_a_decayed_bag_weights_each_earlier_token_by_its_distance_by_hand():
    """decay=m weights a token d back by exp(-m d). Row 0, p=3 sees 1 (d=3), 2 (d=2), 1 (d=1): token 1
    weighs e^-3m + e^-m, token 2 e^-2m. With m=1, 0.05 + 0.37 > 0.14: answers 1, right. p=2 sees
    1 (d=2), 2 (d=1): the tie of the plain bag goes to 2, the nearer, right. Row 1, p=3 sees 0, 0, 2
    (d=3, 2, 1): 0 weighs e^-3 + e^-2 = 0.19 < e^-1 = 0.37: answers 2, wrong (target 0). So rows 0
    and 1 score 3 and 2 of 3, where the plain bag scores 2.5 and 3."""
    floor = bag_of_tokens(INPUTS, TARGETS, decay=1.0)
    assert floor.values == pytest.approx((5 / 6,))
    assert floor.name == "bag of tokens (argmax, decay 1)" and "exp(-1 d)" in floor.note
    # sampling: the target's share of the weight; row 0, p=2: e^-1 / (e^-2 + e^-1)
    e = torch.exp(-torch.arange(4.0)).tolist()
    shares = [1, e[1] / (e[2] + e[1]), (e[3] + e[1]) / (e[3] + e[2] + e[1]), 1, 1, (e[3] + e[2]) / (e[3] + e[2] + e[1])]
    assert bag_of_tokens(INPUTS, TARGETS, rule="sample", decay=1.0).values == pytest.approx((sum(shares) / 6,))
    # so far: the token at distance 0 weighs 1, the most; row 0, p=1 now answers 2 (wrong), p=2 1 (wrong)
    assert bag_of_tokens(INPUTS, TARGETS, sees="so far", decay=1.0).values[0] < floor.values[0]


def test_a_tiny_decay_breaks_the_plain_bags_ties_towards_the_nearer_token():
    """As decay -> 0 the weighted counts order tokens as the plain counts do, except that a tie goes to
    the token seen last instead of being split: the two scores differ, a little."""
    x, y = lag_task(256, 16, 16, 3, torch.Generator().manual_seed(0))
    plain, tilted = bag_of_tokens(x, y).values[0], bag_of_tokens(x, y, decay=1e-6).values[0]
    assert tilted != plain and abs(tilted - plain) < 0.05
    # ALiBi's slope 1/16 on 05's task scores about what ALiBi did there (0.238; 05 section 7)
    x, y = lag_task(512, 24, 16, 3, torch.Generator().manual_seed(101))
    assert bag_of_tokens(x, y, decay=1 / 16).values[0] == pytest.approx(0.239, abs=0.001)


def test_the_untrained_floor_is_one_result_per_seed():
    floor = untrained([0.134, 0.137, 0.137])
    assert floor.name == "untrained" and not floor.is_fixed and "no training" in floor.note
    table = with_floors({"trained": [0.205, 0.207, 0.209]}, [floor], metric="probe accuracy")
    assert table.beats("trained") == ["untrained"]


def test_the_kneser_ney_floor_is_a_perplexity_of_the_same_windows():
    corpus = char_corpus()
    inputs, targets = lm_eval_windows(corpus.valid, 256, 32)  # 06's windows
    floor = floors.kneser_ney(corpus.train, inputs, targets, order=3, vocab_size=len(corpus.vocab), length=32)
    model = KneserNey(corpus.train, 3, len(corpus.vocab))
    assert floor.name == "Kneser-Ney 3-gram" and floor.is_fixed
    assert floor.values[0] == model.perplexity(inputs, targets, 32) and 8 < floor.values[0] < 15


def test_a_floor_is_one_number_or_one_per_seed():
    assert fixed("bag of words", 0.5).is_fixed and not no_position([0.1, 0.2, 0.3]).is_fixed
    with pytest.raises(ValueError, match="name must be"):
        Floor(" ", (0.1,))


RESULTS = {"RoPE": [0.91, 0.93, 0.92], "sinusoidal": [0.30, 0.26, 0.28]}
FLOORS = [no_position([0.27, 0.28, 0.29]), fixed("bag of tokens", 0.667, "most frequent earlier token"), chance(16)]


def test_the_table_marks_its_floor_rows_and_says_which_floors_each_model_beats(capsys):
    """Outside a notebook the DataFrame prints as text (display falls back to print)."""
    table = with_floors(RESULTS, FLOORS, metric="test accuracy")
    out = capsys.readouterr().out
    rows = out.splitlines()
    frame = table.frame()
    assert frame.index.tolist() == [("model", "RoPE"), ("model", "sinusoidal"), (FLOOR_ROW, "no position"),
                                    (FLOOR_ROW, "bag of tokens"), (FLOOR_ROW, "chance")]
    assert frame["test accuracy"].tolist() == ["0.920 ± 0.010", "0.280 ± 0.020", "0.280 ± 0.010", "0.667", "0.062"]
    assert frame["how the floor is computed"].tolist()[2:] == [
        "same model and training, scheme none", "most frequent earlier token", "1/16"]
    assert rows[0].split()[:2] == ["test", "accuracy"] and rows[3].startswith(f"{FLOOR_ROW} no position")
    assert rows[6:] == [
        "RoPE ahead of no position by 0.64 (needed 0.02), bag of tokens by 0.25 (needed 0.02), chance by 0.86"
        " (needed 0.02).",
        "sinusoidal ahead of chance by 0.22 (needed 0.04); not separated from no position (gap < 0.001, needed"
        " 0.04); behind bag of tokens by 0.39 (needed 0.04).",
    ]
    assert table.beats("RoPE") == ["no position", "bag of tokens", "chance"]
    assert table.beats("sinusoidal") == ["chance"]
    assert repr(table) == "FloorTable(2 models, 3 floors; test accuracy)"


def test_a_fixed_floor_is_a_constant_with_the_models_spread_and_the_same_effect_floor():
    table = with_floors(RESULTS, FLOORS, metric="test accuracy")
    v = table.verdict("sinusoidal", "chance")
    same = compare(RESULTS["sinusoidal"], [1 / 16] * 3)
    assert (v.gap, v.spread, v.floor, v.paired) == (same.gap, same.spread, same.floor, False)
    assert v.names == ("sinusoidal", "chance")
    trained_floor = table.verdict("sinusoidal", "no position")
    assert trained_floor.spread == compare(RESULTS["sinusoidal"], [0.27, 0.28, 0.29]).spread


def test_a_perplexity_table_reads_lower_as_better_and_a_relative_floor(capsys):
    table = with_floors({"RoPE": [7.6, 7.7, 7.65]}, [fixed("Kneser-Ney 6-gram", 7.53), fixed("unigram", 26.0)],
                        metric="perplexity at L", higher_is_better=False, relative=True, digits=2)
    out = capsys.readouterr().out
    assert "7.65 ± 0.05" in out
    assert "RoPE ahead of unigram by 18.35 (needed 0.52); not separated from Kneser-Ney 6-gram" in out
    assert table.verdict("RoPE", "Kneser-Ney 6-gram").bar == pytest.approx(0.02 * 7.53)


def test_a_bad_table_is_refused_before_anything_is_printed(capsys):
    """(The bad inputs themselves are rows of tests/course/test_course_bad_input.py.)"""
    with pytest.raises(ValueError, match="floor must be a number >= 0"):
        with_floors(RESULTS, FLOORS, metric="accuracy", floor=-1)
    assert capsys.readouterr().out == ""


def test_table_verdict_names_an_unknown_model_or_floor():
    table = with_floors(RESULTS, FLOORS, metric="test accuracy")
    with pytest.raises(ValueError, match="model must be one of"):
        table.verdict("ALiBi", "chance")
    with pytest.raises(ValueError, match="floor must be one of"):
        table.verdict("RoPE", "majority")


def test_linear_readout_knows_position_through_the_input_index():
    """Where the label is which pixel is lit, a linear readout is perfect on pixels it trained on,
    and knows nothing of a pixel it never saw lit (its weights there stay at the prior): a model
    with no notion of position but the input's index."""
    eye = torch.eye(6).reshape(6, 2, 3)  # image k lights pixel k; its label is k % 3
    labels = torch.arange(6) % 3
    seen = floors.linear_readout(eye[:5], labels[:5], eye[:5], labels[:5])
    assert seen.values == (1.0,) and seen.name == "linear readout" and "L2 0.001" in seen.note
    # pixel 5 never lit in training: every class scores its bias alone, and the biases favour the
    # labels seen twice (0 and 1) over label 2, seen once: it answers 0 or 1, never the right 2
    unseen = floors.linear_readout(eye[:5], labels[:5], eye[5:], labels[5:])
    assert unseen.values == (0.0,)


@pytest.mark.parametrize("call, error, match", [
    (lambda: floors.linear_readout(torch.ones(4, 3, dtype=torch.long), torch.zeros(4, dtype=torch.long),
                                   torch.ones(2, 3), torch.zeros(2, dtype=torch.long)),
     TypeError, "train_inputs must be an \\(n, ...\\) floating-point tensor"),
    (lambda: floors.linear_readout(torch.ones(4, 3), torch.zeros(3, dtype=torch.long),
                                   torch.ones(2, 3), torch.zeros(2, dtype=torch.long)),
     ValueError, "train_targets must have shape \\(4,\\)"),
    (lambda: floors.linear_readout(torch.ones(4, 3), torch.zeros(4, dtype=torch.long),
                                   torch.ones(2, 5), torch.zeros(2, dtype=torch.long)),
     ValueError, "eval_inputs must have 3 features per input"),
    (lambda: floors.linear_readout(torch.ones(4, 3), torch.zeros(4, dtype=torch.long),
                                   torch.ones(2, 3), torch.zeros(2, dtype=torch.long), weight_decay=-1),
     ValueError, "weight_decay must be a number >= 0, got -1"),
])
def test_linear_readout_names_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()

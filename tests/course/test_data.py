"""posenc_course.data: the Vocab and the WhoDidWhat word-order task."""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from posenc_course.data import PAD, Vocab, WhenAndWhere, WhoDidWhat, lag_task, sorting_task


# ----------------------------------------------------------------------------- Vocab
def test_vocab_from_texts_orders_specials_then_first_appearance():
    vocab = Vocab.from_texts(["the cat chases the mouse", "the mouse chases the cat"])
    assert vocab.tokens == (PAD, "the", "cat", "chases", "mouse")
    assert len(vocab) == 5


def test_vocab_character_tokens_for_chinese():
    vocab = Vocab.from_texts(["我爱北京", "北京爱我"], tokenize=list)
    a, b = vocab.encode(list("我爱北京")), vocab.encode(list("北京爱我"))
    assert a.tolist() == [1, 2, 3, 4] and b.tolist() == [3, 4, 2, 1]
    assert sorted(a.tolist()) == sorted(b.tolist())


def test_vocab_encode_decode_round_trip_and_padding_skipped():
    vocab = Vocab.from_texts(["a b c"])
    ids = vocab.encode(["c", "a", PAD, "b"])
    assert ids.dtype == torch.long and ids.tolist() == [3, 1, 0, 2]
    assert vocab.decode(ids) == ["c", "a", "b"]
    assert vocab.decode(ids, skip=()) == ["c", "a", PAD, "b"]


def test_vocab_errors_name_the_problem():
    vocab = Vocab.from_texts(["a b"])
    with pytest.raises(ValueError, match=r"pieces .*\['zebra'\]"):
        vocab.encode(["a", "zebra"])
    with pytest.raises(ValueError, match=r"ids must be integers in \[0, 3\), got \[7\]"):
        vocab.decode([1, 7])
    with pytest.raises(ValueError, match=r"distinct.*\['a'\]"):
        Vocab(("a", "b", "a"))
    with pytest.raises(TypeError, match="tokens must all be str"):
        Vocab(("a", 3))


# ----------------------------------------------------------------------------- WhoDidWhat
def test_sentence_forms():
    verb = ("chases", "chased")
    assert WhoDidWhat.sentence("cat", "mouse", verb, False, "big", None) == "the big cat chases the mouse".split()
    assert WhoDidWhat.sentence("cat", "mouse", verb, True, None, "old") == "the mouse was chased by the old cat".split()


def test_sample_is_seeded_shaped_and_labels_the_agent():
    task = WhoDidWhat()
    x1, y1 = task.sample(500, torch.Generator().manual_seed(0))
    x2, y2 = task.sample(500, torch.Generator().manual_seed(0))
    assert torch.equal(x1, x2) and torch.equal(y1, y2)
    assert x1.shape == (500, task.seq_len) and x1.dtype == torch.long and y1.shape == (500,)
    for ids, label in zip(x1, y1):
        words = task.vocab.decode(ids)
        entities = [w for w in words if w in task.entities]
        assert len(entities) == 2 and entities[0] != entities[1]  # both entities always present
        agent = entities[1] if "by" in words else entities[0]  # read the agent from the grammar
        assert task.entities[label] == agent
        # right padding only
        n = len(words)
        assert (ids[n:] == task.vocab.index[PAD]).all() and (ids[:n] != task.vocab.index[PAD]).all()


def test_sample_uses_every_form():
    task = WhoDidWhat()
    x, _ = task.sample(2000, torch.Generator().manual_seed(1))
    sentences = [task.vocab.decode(row) for row in x]
    assert any("by" in s for s in sentences) and any("by" not in s for s in sentences)
    assert any(len(s) == task.seq_len for s in sentences) and any(len(s) == 5 for s in sentences)


def test_enumeration_is_a_distribution_and_matches_sampling():
    task = WhoDidWhat(p_adjective=0.3, p_passive=0.25)
    outcomes = list(task.enumerate())
    assert abs(sum(w for *_, w in outcomes) - 1.0) < 1e-12
    assert len({tuple(words) for words, _, _ in outcomes}) == len(outcomes)  # each sentence once
    n = 20000
    x, _ = task.sample(n, torch.Generator().manual_seed(2))
    passive_rate = sum("by" in task.vocab.decode(row) for row in x) / n
    assert abs(passive_rate - 0.25) < 0.02
    expected_lengths = Counter()
    for words, _, w in outcomes:
        expected_lengths[len(words)] += w
    seen = Counter(len(task.vocab.decode(row)) for row in x)
    for length, p in expected_lengths.items():
        assert abs(seen[length] / n - p) < 0.02, (length, seen[length] / n, p)


def test_splits_separate_held_out_pairs():
    task = WhoDidWhat()
    held = {frozenset(p) for p in task.held_out_pairs}
    for split, inside in (("train", False), ("test", True)):
        x, _ = task.sample(300, torch.Generator().manual_seed(3), split=split)
        for row in x:
            pair = frozenset(w for w in task.vocab.decode(row) if w in task.entities)
            assert (pair in held) == inside
        assert abs(sum(w for *_, w in task.enumerate(split)) - 1.0) < 1e-12


def test_bag_of_words_ceiling_symmetric_task_is_one_half():
    task = WhoDidWhat()
    for split in ("all", "train", "test"):
        assert abs(task.bag_of_words_ceiling(split) - 0.5) < 1e-12


def test_bag_of_words_ceiling_detects_a_leak():
    # The mouse is never an agent: a bag containing "mouse" gives the answer away.
    lopsided = WhoDidWhat(agents=("cat", "dog"), patients=("cat", "dog", "mouse"), held_out_pairs=())
    assert abs(lopsided.bag_of_words_ceiling() - 0.75) < 1e-12
    # Only one possible agent: the bag answers every time.
    trivial = WhoDidWhat(agents=("cat",), patients=("cat", "mouse"), held_out_pairs=())
    assert abs(trivial.bag_of_words_ceiling() - 1.0) < 1e-12


def test_vocab_and_sizes():
    task = WhoDidWhat()
    assert task.vocab.tokens[0] == PAD and len(set(task.vocab.tokens)) == len(task.vocab)
    assert task.n_classes == len(task.entities) == 6
    assert WhoDidWhat(p_passive=0.0).seq_len == 7
    assert WhoDidWhat(p_passive=0.0, p_adjective=0.0).seq_len == 5
    x, _ = WhoDidWhat(p_passive=0.0, p_adjective=0.0).sample(10, torch.Generator().manual_seed(0))
    assert (x != 0).all()  # every sentence fills the width exactly


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"p_passive": 1.5}, r"p_passive must be a probability in \[0, 1\], got 1.5"),
        ({"p_adjective": -0.1}, r"p_adjective must be a probability"),
        ({"agents": ("cat", "cat")}, r"agents must be distinct strings"),
        ({"agents": ("cat",), "patients": ("cat",), "held_out_pairs": ()}, r"patient other than itself"),
        ({"verbs": (("chases",),)}, r"verbs must be \(active, participle\) string pairs"),
        ({"adjectives": ()}, r"p_adjective=0.5 > 0 needs at least one adjective"),
        ({"held_out_pairs": (("cat", "unicorn"),)}, r"held_out_pairs must be pairs of known entities"),
    ],
)
def test_invalid_configuration_raises(kwargs, message):
    with pytest.raises(ValueError, match=message):
        WhoDidWhat(**kwargs)


def test_invalid_calls_raise():
    task = WhoDidWhat()
    with pytest.raises(ValueError, match="n must be a positive integer, got 0"):
        task.sample(0, torch.Generator())
    with pytest.raises(TypeError, match="generator must be a torch.Generator, got int"):
        task.sample(3, 0)
    with pytest.raises(ValueError, match="split must be 'all', 'train' or 'test', got 'valid'"):
        task.sample(3, torch.Generator(), split="valid")
    with pytest.raises(ValueError, match="split 'test' is empty"):
        WhoDidWhat(held_out_pairs=()).bag_of_words_ceiling("test")


def test_lag_task_targets_are_the_tokens_lag_steps_back():
    tokens, targets = lag_task(5, 12, vocab_size=7, lag=3, generator=torch.Generator().manual_seed(0))
    assert tokens.shape == targets.shape == (5, 12) and int(tokens.max()) < 7
    assert (targets[:, :3] == -100).all()
    assert torch.equal(targets[:, 3:], tokens[:, :-3])
    again, _ = lag_task(5, 12, vocab_size=7, lag=3, generator=torch.Generator().manual_seed(0))
    assert torch.equal(tokens, again)


@pytest.mark.parametrize(
    "kwargs, match",
    [({"lag": 12}, r"lag must be smaller than length=12, got 12"), ({"lag": 0}, r"lag must be an int >= 1, got 0"),
     ({"vocab_size": 1}, r"vocab_size must be an int >= 2, got 1")],
)
def test_lag_task_rejects_bad_arguments(kwargs, match):
    args = {"n": 2, "length": 12, "vocab_size": 7, "lag": 3, "generator": torch.Generator()} | kwargs
    with pytest.raises(ValueError, match=match):
        lag_task(**args)


def test_shipped_file_verifies_the_checksum(tmp_path):
    import hashlib

    from posenc_course.data import shipped_file

    (tmp_path / "x.txt").write_bytes(b"hello")
    good = hashlib.sha256(b"hello").hexdigest()
    assert shipped_file("x.txt", good, data_dir=tmp_path) == tmp_path / "x.txt"
    with pytest.raises(ValueError, match=r"x\.txt.*SHA-256.*expected " + "0" * 64):
        shipped_file("x.txt", "0" * 64, data_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match=r"missing\.txt.*missing"):
        shipped_file("missing.txt", good, data_dir=tmp_path)


# ----------------------------------------------------------------- images (notebook 04)
def test_shipped_digits_match_the_recorded_checksum_and_readme():
    import hashlib

    from posenc_course.data import DATA_DIR, DIGITS_FILE, DIGITS_SHA256

    data = (DATA_DIR / DIGITS_FILE).read_bytes()
    assert hashlib.sha256(data).hexdigest() == DIGITS_SHA256
    readme = (DATA_DIR / "README.md").read_text()
    assert DIGITS_SHA256 in readme and f"{len(data):,} bytes" in readme and "CC BY 4.0" in readme


def test_load_digits_shapes_range_and_fixed_split():
    from posenc_course.data import load_digits

    images, labels = load_digits()
    assert images.shape == (1797, 8, 8) and images.dtype == torch.float32 and labels.dtype == torch.long
    assert images.min() == 0 and images.max() == 1 and (images * 16 == (images * 16).round()).all()
    assert torch.bincount(labels).tolist() == [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]
    train_x, train_y = load_digits("train")
    test_x, test_y = load_digits("test")
    assert len(train_y) == 1300 and len(test_y) == 497
    # the two splits partition the data set, and the split is the same on every call
    rows = {tuple(r) for r in torch.cat([train_x, test_x]).reshape(-1, 64).tolist()}
    assert len(rows) == len({tuple(r) for r in images.reshape(-1, 64).tolist()})
    assert torch.equal(load_digits("test")[0], test_x)
    assert torch.equal(load_digits("train", n_test=100)[1][:10], load_digits("train", n_test=100)[1][:10])


def test_load_digits_refuses_a_changed_file(tmp_path):
    from posenc_course.data import DATA_DIR, DIGITS_FILE, load_digits

    data = bytearray((DATA_DIR / DIGITS_FILE).read_bytes())
    data[500] ^= 1
    (tmp_path / DIGITS_FILE).write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"digits\.csv\.gz.*SHA-256"):
        load_digits(data_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match="digits.csv.gz"):
        load_digits(data_dir=tmp_path / "nowhere")


@pytest.mark.parametrize("grid", [(2, 2), (3, 3), (4, 4), (6, 6), (3, 6), (5, 2)])
def test_relative_direction_ceiling_equals_the_largest_class_share(grid):
    """Every image is the same bag, so the exact ceiling is the commonest label's share (1/4 on a square)."""
    from posenc_course.data import RelativeDirection

    task = RelativeDirection(*grid)
    _, labels = task.pairs()
    share = torch.bincount(labels, minlength=4).max().item() / len(labels)
    assert task.bag_of_patches_ceiling() == pytest.approx(share, abs=1e-12)
    if grid[0] == grid[1]:
        assert task.bag_of_patches_ceiling() == 0.25


def test_relative_direction_labels_and_images():
    from posenc_course.data import RelativeDirection

    task = RelativeDirection(4, 5)
    cells, labels = task.pairs()
    ra, ca, rb, cb = cells[:, 0] // 5, cells[:, 0] % 5, cells[:, 1] // 5, cells[:, 1] % 5
    assert ((rb - ra).abs() != (cb - ca).abs()).all(), "ties are never drawn"
    for k, name in enumerate(task.CLASSES):
        pick = labels == k
        dr, dc = rb[pick] - ra[pick], cb[pick] - ca[pick]
        expected = {"right": dc > dr.abs(), "left": -dc > dr.abs(), "below": dr > dc.abs(), "above": -dr > dc.abs()}[name]
        assert expected.all(), name
    images = task.render(cells)
    assert images.shape == (len(labels), 2, 4, 5) and (images.sum(dim=(2, 3)) == 1).all()
    assert images[0, 0].flatten().argmax() == cells[0, 0] and images[0, 1].flatten().argmax() == cells[0, 1]
    x1, y1 = task.sample(50, torch.Generator().manual_seed(3))
    x2, y2 = task.sample(50, torch.Generator().manual_seed(3))
    assert torch.equal(x1, x2) and torch.equal(y1, y2) and x1.shape == (50, 2, 4, 5)
    assert len(y1.unique()) == 4


def test_relative_direction_split_by_offset_holds_out_every_placement_of_an_offset():
    from posenc_course.data import RelativeDirection

    task = RelativeDirection(4, 4)
    held = [(0, 2), (2, 0), (1, 3)]
    (train_cells, train_labels), (held_cells, held_labels) = task.split(held)
    cells, _ = task.pairs()
    assert len(train_labels) + len(held_labels) == len(cells) == 184
    assert {tuple(o) for o in task.offsets(held_cells).tolist()} == set(held)
    assert not {tuple(o) for o in task.offsets(train_cells).tolist()} & set(held)
    # (0, 2): 4 rows x 2 columns of A; (2, 0): 2 x 4; (1, 3): 3 x 1
    assert len(held_labels) == 8 + 8 + 3
    assert task.offsets(torch.tensor([[0, 15], [5, 4]])).tolist() == [[3, 3], [0, -1]]
# ----------------------------------------------------------------------------- character corpus (notebook 06)
def test_char_corpus_loads_the_shipped_file_with_a_fixed_split():
    import hashlib

    from posenc_course.data import CORPUS_FILE, CORPUS_SHA256, CORPUS_VALID_START, DATA_DIR, char_corpus

    raw = (DATA_DIR / CORPUS_FILE).read_bytes()
    assert hashlib.sha256(raw).hexdigest() == CORPUS_SHA256
    assert b"gutenberg" not in raw.lower()  # the distributor's header, footer and name are stripped
    corpus = char_corpus()
    assert len(corpus.vocab) == len(set(corpus.text)) == 64 and list(corpus.vocab.tokens) == sorted(corpus.vocab.tokens)
    assert corpus.train.numel() + corpus.valid.numel() == len(corpus.text) == len(raw)
    assert corpus.decode(corpus.valid[: len(CORPUS_VALID_START)]) == CORPUS_VALID_START  # Macbeth starts the split
    assert corpus.decode(corpus.train) + corpus.decode(corpus.valid) == corpus.text
    assert corpus.encode("Out, damned spot!").tolist() == corpus.vocab.encode(list("Out, damned spot!")).tolist()
    assert char_corpus().train.equal(corpus.train)  # the same split every time


def test_char_corpus_names_a_missing_or_corrupt_file(tmp_path):
    import hashlib

    from posenc_course.data import char_corpus

    text = b"PLAY ONE\nto be or not\n\nPLAY TWO\nthat is it\n"
    (tmp_path / "tiny.txt").write_bytes(text)
    good = hashlib.sha256(text).hexdigest()
    corpus = char_corpus("tiny.txt", good, valid_start="PLAY TWO", data_dir=tmp_path)
    assert corpus.decode(corpus.valid) == "PLAY TWO\nthat is it\n"
    with pytest.raises(FileNotFoundError, match=r"gone\.txt.*missing"):
        char_corpus("gone.txt", good, data_dir=tmp_path)
    (tmp_path / "tiny.txt").write_bytes(text.replace(b"not", b"NOT"))
    with pytest.raises(ValueError, match=r"tiny\.txt.*SHA-256 [0-9a-f]{64}, expected " + good):
        char_corpus("tiny.txt", good, data_dir=tmp_path)
    (tmp_path / "tiny.txt").write_bytes(text)
    with pytest.raises(ValueError, match=r"valid_start 'ACT V' must occur in .*tiny\.txt"):
        char_corpus("tiny.txt", good, valid_start="ACT V", data_dir=tmp_path)


def test_lm_batch_targets_are_the_next_token_and_windows_are_seeded():
    from posenc_course.data import lm_batch

    ids = torch.arange(1000)
    x, y = lm_batch(ids, 16, 8, torch.Generator().manual_seed(1))
    assert x.shape == y.shape == (8, 16) and x.dtype == torch.long
    assert torch.equal(y, x + 1)  # consecutive ids: the target is the next one
    assert torch.equal(x[:, 1:], x[:, :-1] + 1) and int(y.max()) <= 999
    x2, _ = lm_batch(ids, 16, 8, torch.Generator().manual_seed(1))
    assert torch.equal(x, x2)


def test_lm_eval_windows_are_fixed_and_do_not_overlap():
    from posenc_course.data import lm_eval_windows

    x, y = lm_eval_windows(torch.arange(100), 10, 9)
    assert x.shape == (9, 10) and torch.equal(x.flatten(), torch.arange(90)) and torch.equal(y, x + 1)
    x, y = lm_eval_windows(torch.arange(91), 10, 9)  # 9 * 10 + 1 ids are just enough
    assert int(y.max()) == 90


# --- WhenAndWhere (notebook 08) -------------------------------------------------------------------


def test_when_and_where_placements_labels_and_balance():
    task = WhenAndWhere(frames=4, height=3, width=3)
    cells, labels = task.placements()
    offsets = task.offsets(cells)
    assert (offsets[:, 0] != 0).all() and (offsets[:, 2] != 0).all()
    assert torch.equal(labels, 2 * (offsets[:, 0] > 0).long() + (offsets[:, 2] > 0).long())
    assert torch.bincount(labels).tolist() == [len(labels) // 4] * 4
    assert task.coordinates(torch.tensor([0, 10, 35])).tolist() == [[0, 0, 0], [1, 0, 1], [3, 2, 2]]


def test_when_and_where_samples_are_one_a_one_b_and_their_label():
    task = WhenAndWhere(frames=3, height=2, width=4)
    videos, labels = task.sample(64, torch.Generator().manual_seed(0))
    assert videos.shape == (64, task.seq_len) and ((videos == 1).sum(1) == 1).all() and ((videos == 2).sum(1) == 1).all()
    cells = torch.stack([(videos == 1).long().argmax(1), (videos == 2).long().argmax(1)], dim=1)
    offsets = task.offsets(cells)
    assert torch.equal(labels, 2 * (offsets[:, 0] > 0).long() + (offsets[:, 2] > 0).long())
    again, _ = task.sample(64, torch.Generator().manual_seed(0))
    assert torch.equal(again, videos)


def test_when_and_where_ceilings():
    task = WhenAndWhere(frames=4, height=3, width=3)
    assert task.ceiling(lambda o: o) == 1.0
    assert task.ceiling(lambda o: o[:, 1:]) == 0.5  # no time: "later" and "earlier" are a coin toss
    assert task.ceiling(lambda o: torch.zeros(len(o))) == 0.25  # nothing: the largest class share
    flat = task.ceiling(lambda o: o @ torch.tensor([9, 3, 1]))  # the offset in the flattened sequence
    assert 0.5 < flat < 1.0
    with pytest.raises(ValueError, match=r"view must return an \(n,\) or \(n, k\) tensor"):
        task.ceiling(lambda o: o[:3])


@pytest.mark.parametrize("kwargs, match", [({"frames": 1}, r"frames must be an int >= 2, got 1"),
                                           ({"width": 1}, r"width must be an int >= 2, got 1"),
                                           ({"height": 0}, r"height must be an int >= 1, got 0")])
def test_when_and_where_bad_sizes(kwargs, match):
    with pytest.raises(ValueError, match=match):
        WhenAndWhere(**kwargs)


# ----------------------------------------------------------------- the sorting task of notebook 02
def test_sorting_task_targets_are_the_sorted_inputs():
    x, y = sorting_task(50, 9, 7, torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (50, 9) and x.dtype == y.dtype == torch.long
    assert x.min() >= 0 and x.max() < 7
    assert torch.equal(y, x.sort(dim=1).values)
    assert torch.all(y[:, 1:] >= y[:, :-1])
    x2, _ = sorting_task(50, 9, 7, torch.Generator().manual_seed(0))
    assert torch.equal(x, x2)


@pytest.mark.parametrize(
    ("args", "error", "pattern"),
    [
        ((0, 5, 4), ValueError, r"n must be an int >= 1, got 0"),
        ((3, 0, 4), ValueError, r"seq_len must be an int >= 1, got 0"),
        ((3, 5, 1), ValueError, r"vocab_size must be an int >= 2, got 1"),
        ((3, 5.0, 4), ValueError, r"seq_len must be an int >= 1, got 5.0"),
    ],
)
def test_sorting_task_rejects_bad_sizes(args, error, pattern):
    with pytest.raises(error, match=pattern):
        sorting_task(*args, torch.Generator())


def test_sorting_task_needs_a_generator():
    with pytest.raises(TypeError, match="generator must be a torch.Generator, got int"):
        sorting_task(3, 5, 4, 0)

"""Small synthetic tasks and the tokenisation helpers the notebooks train on.

Everything here is seeded through a ``torch.Generator`` the caller passes in, so a
notebook that fixes its seed gets the same data on every run.

Contents::

    PAD          - the padding token "<pad>" (id 0 in Vocab.from_texts and WhoDidWhat vocabularies)
    Vocab        - a fixed list of token strings <-> integer ids
    WhoDidWhat   - "who did what to whom": sentences whose label (the agent) can only be
                   read from word order, with an exact bag-of-words ceiling
    sorting_task - sort a sequence of tokens: output p is the p-th smallest token, which
                   needs absolute position (notebook 02)
    lag_task     - repeat the token ``lag`` steps back: a relative-position task for a causal
                   decoder (notebook 03)
    shipped_file - the path of a file shipped in ``data/``, after checking its SHA-256
    load_digits  - the UCI 8x8 handwritten digits (shipped file), with a fixed train/test split
    RelativeDirection - two marked cells on a grid, label = direction of one from the other:
                   a bag of patches is at chance, with an exact bag-of-patches ceiling (notebook 04)
    WhenAndWhere - two marked patches in a tiny video, label = when and where one is seen from the
                   other; exact ceilings of what an offset tells (notebook 08)
    char_corpus  - the shipped Shakespeare corpus as character ids, with a fixed train/validation
                   split (notebook 06); lm_batch / lm_eval_windows cut it into LM windows
"""

from __future__ import annotations

import hashlib
import itertools
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import torch
from torch import Tensor

from posenc_lib.checks import is_int

__all__ = [
    "PAD", "DATA_DIR", "Vocab", "WhoDidWhat", "sorting_task", "lag_task", "shipped_file",
    "DIGITS_FILE", "DIGITS_SHA256", "load_digits", "RelativeDirection", "WhenAndWhere",
    "CORPUS_FILE", "CORPUS_SHA256", "CORPUS_VALID_START", "CharCorpus", "char_corpus", "lm_batch", "lm_eval_windows",
]

#: The padding token (id 0 in the vocabularies of Vocab.from_texts and WhoDidWhat).
PAD = "<pad>"

#: The repository's ``data/`` folder: small data sets shipped with the course (see data/README.md).
DATA_DIR = Path(__file__).resolve().parents[1] / "data"

Split = Literal["all", "train", "test"]


@dataclass(frozen=True)
class Vocab:
    """A fixed, ordered list of distinct token strings; a token's id is its index.

    Example: ``Vocab.from_texts(["the cat", "the dog"])`` has tokens
    ``("<pad>", "the", "cat", "dog")`` (specials first, then first appearance).
    """

    tokens: tuple[str, ...]
    index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        tokens = tuple(self.tokens)
        if not all(isinstance(t, str) for t in tokens):
            raise TypeError(f"tokens must all be str, got types {sorted({type(t).__name__ for t in tokens})}")
        duplicates = sorted({t for t in tokens if tokens.count(t) > 1})
        if duplicates:
            raise ValueError(f"tokens must be distinct, got duplicates {duplicates}")
        object.__setattr__(self, "tokens", tokens)
        object.__setattr__(self, "index", {t: i for i, t in enumerate(tokens)})

    @classmethod
    def from_texts(
        cls,
        texts: Iterable[str],
        tokenize: Callable[[str], Sequence[str]] = str.split,
        specials: Sequence[str] = (PAD,),
    ) -> Vocab:
        """Specials first, then every token of ``texts`` (split by ``tokenize``) in order of first appearance.

        Use ``tokenize=list`` for character-level tokens (e.g. Chinese text).
        """
        seen = dict.fromkeys(specials)
        for text in texts:
            seen.update(dict.fromkeys(tokenize(text)))
        return cls(tuple(seen))

    def __len__(self) -> int:
        return len(self.tokens)

    def encode(self, pieces: Sequence[str]) -> Tensor:
        """Token strings -> ids, shape (len(pieces),) int64. Unknown tokens raise ValueError."""
        unknown = [p for p in pieces if p not in self.index]
        if unknown:
            raise ValueError(f"pieces contain tokens not in the vocabulary: {unknown}; known tokens: {list(self.tokens)}")
        return torch.tensor([self.index[p] for p in pieces], dtype=torch.long)

    def decode(self, ids: Tensor | Sequence[int], skip: Sequence[str] = (PAD,)) -> list[str]:
        """Ids (1-D) -> token strings, leaving out the tokens in ``skip`` (padding by default)."""
        ids = ids.tolist() if isinstance(ids, Tensor) else list(ids)
        bad = [i for i in ids if not isinstance(i, int) or not 0 <= i < len(self.tokens)]
        if bad:
            raise ValueError(f"ids must be integers in [0, {len(self.tokens)}), got {bad}")
        return [self.tokens[i] for i in ids if self.tokens[i] not in skip]


@dataclass(frozen=True)
class WhoDidWhat:
    """"Who did what to whom": the label is the agent of a short sentence.

    Active:  ``the [adj] AGENT verb the [adj] PATIENT``           e.g. "the cat chases the small mouse"
    Passive: ``the [adj] PATIENT was participle by the [adj] AGENT``  e.g. "the mouse was chased by the cat"

    Both entities are always present, and nothing but word order says which one is the agent:
    swapping them gives a sentence with the same bag of tokens and the same probability (when
    ``patients`` is the same list as ``agents``), so a model that sees only the bag of tokens
    cannot beat 50%. :meth:`bag_of_words_ceiling` computes that ceiling exactly for any
    configuration, by enumerating every sentence the generator can produce.

    Sampling: the (agent, patient) pair is drawn as agent uniform over ``agents`` then patient
    uniform over ``patients`` minus the agent; the verb uniformly; passive voice with
    probability ``p_passive``; each entity independently gets an adjective (uniform over
    ``adjectives``) with probability ``p_adjective``. Sentences are right-padded with
    :data:`PAD` to :attr:`seq_len` tokens.

    ``held_out_pairs`` are unordered entity pairs that appear only in the "test" split, so a
    test accuracy measures a rule learned from word order, not memorised sentences.
    """

    agents: tuple[str, ...] = ("cat", "dog", "mouse", "bird", "fox", "bear")
    patients: tuple[str, ...] | None = None
    verbs: tuple[tuple[str, str], ...] = (("chases", "chased"), ("sees", "seen"), ("bites", "bitten"), ("feeds", "fed"))
    adjectives: tuple[str, ...] = ("big", "small", "old")
    p_adjective: float = 0.5
    p_passive: float = 0.5
    held_out_pairs: tuple[tuple[str, str], ...] = (("cat", "bird"), ("dog", "fox"), ("mouse", "bear"))

    def __post_init__(self) -> None:
        if self.patients is None:
            object.__setattr__(self, "patients", self.agents)
        for name in ("agents", "patients", "adjectives"):
            values = getattr(self, name)
            if not all(isinstance(v, str) for v in values) or len(set(values)) != len(values):
                raise ValueError(f"{name} must be distinct strings, got {values!r}")
        if not self.agents or any(not set(self.patients) - {a} for a in self.agents):
            raise ValueError(
                f"agents must be non-empty and every agent needs a patient other than itself, "
                f"got agents={self.agents}, patients={self.patients}"
            )
        if not self.verbs or not all(isinstance(v, tuple) and len(v) == 2 and all(isinstance(w, str) for w in v) for v in self.verbs):
            raise ValueError(f"verbs must be (active, participle) string pairs, got {self.verbs!r}")
        for name in ("p_adjective", "p_passive"):
            p = getattr(self, name)
            if not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
                raise ValueError(f"{name} must be a probability in [0, 1], got {p!r}")
        if self.p_adjective > 0 and not self.adjectives:
            raise ValueError(f"p_adjective={self.p_adjective} > 0 needs at least one adjective, got adjectives=()")
        unknown = sorted({e for pair in self.held_out_pairs for e in pair} - set(self.entities))
        if unknown or any(len(pair) != 2 for pair in self.held_out_pairs):
            raise ValueError(f"held_out_pairs must be pairs of known entities {self.entities}, got {self.held_out_pairs!r}")

    # ----------------------------------------------------------------- vocabulary
    @property
    def entities(self) -> tuple[str, ...]:
        """The classes of the label, agents first, then the patients that are not agents."""
        return tuple(dict.fromkeys(self.agents + self.patients))

    @property
    def vocab(self) -> Vocab:
        """PAD, function words, adjectives, entities, verb forms."""
        words = ("the", "was", "by", *self.adjectives, *self.entities, *itertools.chain(*self.verbs))
        return Vocab((PAD, *dict.fromkeys(words)))

    @property
    def seq_len(self) -> int:
        """The length every sentence is padded to, that of the longest sentence the task can produce."""
        adjective = "adj" if self.p_adjective > 0 else None
        return len(self.sentence("a", "p", self.verbs[0], self.p_passive > 0, adjective, adjective))

    @property
    def n_classes(self) -> int:
        return len(self.entities)

    # ----------------------------------------------------------------- generation
    @staticmethod
    def sentence(agent: str, patient: str, verb: tuple[str, str], passive: bool, adj_first: str | None,
                 adj_second: str | None) -> list[str]:
        """The words of one sentence; ``adj_first`` goes with the entity mentioned first."""
        first, second = (patient, agent) if passive else (agent, patient)
        middle = ["was", verb[1], "by"] if passive else [verb[0]]
        return ["the", *([adj_first] if adj_first else []), first, *middle,
                "the", *([adj_second] if adj_second else []), second]

    def _pairs(self, split: Split) -> list[tuple[str, str, float]]:
        """(agent, patient, probability) of every ordered pair in ``split``, renormalised to sum to 1."""
        if split not in ("all", "train", "test"):
            raise ValueError(f"split must be 'all', 'train' or 'test', got {split!r}")
        held = {frozenset(p) for p in self.held_out_pairs}
        pairs = []
        for a in self.agents:
            others = [p for p in self.patients if p != a]
            for p in others:
                is_test = frozenset((a, p)) in held
                if split == "all" or (split == "test") == is_test:
                    pairs.append((a, p, 1.0 / (len(self.agents) * len(others))))
        if not pairs:
            raise ValueError(f"split {split!r} is empty for held_out_pairs={self.held_out_pairs}")
        total = sum(w for *_, w in pairs)
        return [(a, p, w / total) for a, p, w in pairs]

    def _adjective_choices(self) -> list[tuple[str | None, float]]:
        choices = [(None, 1.0 - self.p_adjective)] + [(a, self.p_adjective / len(self.adjectives)) for a in self.adjectives]
        return [(a, w) for a, w in choices if w > 0]

    def enumerate(self, split: Split = "all") -> Iterator[tuple[list[str], str, float]]:
        """Every sentence the generator can produce: (words, agent, probability); probabilities sum to 1."""
        voices = [(v, w) for v, w in ((False, 1.0 - self.p_passive), (True, self.p_passive)) if w > 0]
        adjectives = self._adjective_choices()
        for (agent, patient, w_pair), verb, (passive, w_voice), (adj1, w1), (adj2, w2) in itertools.product(
            self._pairs(split), self.verbs, voices, adjectives, adjectives
        ):
            weight = w_pair / len(self.verbs) * w_voice * w1 * w2
            yield self.sentence(agent, patient, verb, passive, adj1, adj2), agent, weight

    def bag_of_words_ceiling(self, split: Split = "all") -> float:
        """Best expected accuracy of ANY classifier that sees only the multiset of tokens (exact).

        Sentences are grouped by their sorted tokens; within a bag the best guess is the most
        probable agent, so the ceiling is the sum over bags of that agent's probability.
        """
        by_bag: dict[tuple[str, ...], dict[str, float]] = defaultdict(lambda: defaultdict(float))
        for words, agent, weight in self.enumerate(split):
            by_bag[tuple(sorted(words))][agent] += weight
        return sum(max(agents.values()) for agents in by_bag.values())

    def sample(self, n: int, generator: torch.Generator, split: Split = "all") -> tuple[Tensor, Tensor]:
        """``n`` random sentences: inputs (n, seq_len) int64 token ids, right-padded; targets (n,) agent class ids."""
        if not isinstance(n, int) or n <= 0:
            raise ValueError(f"n must be a positive integer, got {n!r}")
        if not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
        pairs = self._pairs(split)
        adjectives = self._adjective_choices()
        pair_idx = torch.multinomial(torch.tensor([w for *_, w in pairs]), n, replacement=True, generator=generator)
        verb_idx = torch.randint(len(self.verbs), (n,), generator=generator)
        passive = torch.rand(n, generator=generator) < self.p_passive
        adj_idx = torch.multinomial(torch.tensor([w for _, w in adjectives]), 2 * n, replacement=True,
                                    generator=generator).view(n, 2)
        vocab, classes = self.vocab, {e: i for i, e in enumerate(self.entities)}
        inputs = torch.full((n, self.seq_len), vocab.index[PAD], dtype=torch.long)
        targets = torch.empty(n, dtype=torch.long)
        for row in range(n):
            agent, patient, _ = pairs[pair_idx[row]]
            words = self.sentence(agent, patient, self.verbs[verb_idx[row]], bool(passive[row]),
                                  adjectives[adj_idx[row, 0]][0], adjectives[adj_idx[row, 1]][0])
            inputs[row, : len(words)] = vocab.encode(words)
            targets[row] = classes[agent]
        return inputs, targets


# ----------------------------------------------------------------- sorting (notebook 02)
def sorting_task(n: int, seq_len: int, vocab_size: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """Sort a sequence: ``n`` rows of ``seq_len`` tokens drawn uniformly from ``0 .. vocab_size-1`` (repeats allowed).

    Returns inputs (n, seq_len) int64 and per-token targets (n, seq_len) int64: the target at
    position ``p`` is the ``p``-th smallest input token. Every output position sees the same bag
    of tokens, so the answer at position ``p`` depends on ``p`` itself: an encoder must know the
    absolute position of each output to solve it.
    """
    for name, value, low in (("n", n, 1), ("seq_len", seq_len, 1), ("vocab_size", vocab_size, 2)):
        if not is_int(value) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    inputs = torch.randint(0, vocab_size, (n, seq_len), generator=generator)
    return inputs, inputs.sort(dim=1).values




def lag_task(n: int, length: int, vocab_size: int, lag: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """Random token sequences (n, length) and per-token targets: the token ``lag`` steps back.

    The first ``lag`` targets have no answer and are -100 (ignored by the loss and by accuracy).
    Only the distance to the target token matters, so a causal decoder with a relative encoding
    (RoPE) solves it at any position.
    """
    for name, value, low in (("n", n, 1), ("length", length, 2), ("vocab_size", vocab_size, 2), ("lag", lag, 1)):
        if not is_int(value) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    if lag >= length:
        raise ValueError(f"lag must be smaller than length={length}, got {lag}")
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    tokens = torch.randint(0, vocab_size, (n, length), generator=generator)
    targets = torch.full_like(tokens, -100)
    targets[:, lag:] = tokens[:, :-lag]
    return tokens, targets


# ----------------------------------------------------------------- shipped data files
def shipped_file(name: str, sha256: str, data_dir: Path | None = None) -> Path:
    """Path of the shipped file ``data_dir / name`` (default :data:`DATA_DIR`), after checking its SHA-256.

    Raises FileNotFoundError naming the path when the file is missing, and ValueError naming the
    file, the expected and the actual checksum when its bytes differ (a corrupt or edited copy):
    a loader never reads data it has not verified.
    """
    path = (DATA_DIR if data_dir is None else Path(data_dir)) / name
    if not path.is_file():
        raise FileNotFoundError(f"data file {str(path)!r} is missing; it ships with the repository (see data/README.md)")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != sha256:
        raise ValueError(
            f"data file {str(path)!r} has SHA-256 {digest}, expected {sha256}: the file is corrupt or was changed "
            "(restore it with `git checkout -- data/`)"
        )
    return path


# ----------------------------------------------------------------- images (notebook 04)
#: The UCI 8x8 handwritten digits as scikit-learn ships them (see data/README.md, tools/prepare_digits.py).
DIGITS_FILE = "digits.csv.gz"
DIGITS_SHA256 = "09f66e6debdee2cd2b5ae59e0d6abbb73fc2b0e0185d2e1957e9ebb51e23aa22"


def load_digits(split: Split = "all", n_test: int = 497, data_dir: Path | None = None) -> tuple[Tensor, Tensor]:
    """The 1,797 UCI handwritten digits: images (n, 8, 8) float32 in [0, 1] and labels (n,) int64 in 0..9.

    Each pixel is the number (0..16) of ink pixels in a 4x4 block of a 32x32 scan, divided by 16.
    The file is checked against its SHA-256 before it is read (:func:`shipped_file`).
    split: "all" in file order, or a fixed random split (a permutation from seed 0, the same on every
    machine): "test" is its first ``n_test`` images, "train" the rest.
    """
    import gzip

    import numpy as np

    if split not in ("all", "train", "test"):
        raise ValueError(f"split must be 'all', 'train' or 'test', got {split!r}")
    if not is_int(n_test) or not 0 < n_test < 1797:
        raise ValueError(f"n_test must be an int in [1, 1796], got {n_test!r}")
    path = shipped_file(DIGITS_FILE, DIGITS_SHA256, data_dir)
    table = torch.from_numpy(np.loadtxt(gzip.open(path, "rt"), delimiter=",", dtype=np.float32))
    images, labels = (table[:, :64] / 16).reshape(-1, 8, 8), table[:, 64].long()
    if split != "all":
        order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(0))
        keep = order[:n_test] if split == "test" else order[n_test:]
        images, labels = images[keep], labels[keep]
    return images, labels


@dataclass(frozen=True)
class RelativeDirection:
    """Two marked cells on a ``grid_h x grid_w`` canvas; the label is the direction of B seen from A.

    An image is (2, grid_h, grid_w): channel 0 is 1 at A's cell, channel 1 is 1 at B's cell, all else 0.
    With 1x1 patches every image is the same bag of patches (one A, one B, the rest empty), so
    only *where* the patches are tells the label. Classes (:attr:`CLASSES`): 0 "right", 1 "left",
    2 "below", 3 "above": the axis along which B is farther from A (rows grow downwards), and
    the sign. Pairs with ``|row offset| == |column offset|`` (ties) are never drawn.

    Sampling: (A, B) uniform over all ordered pairs of cells without a tie. A larger canvas
    (a larger grid) asks the same question about a larger grid of patches.
    """

    grid_h: int = 6
    grid_w: int = 6

    CLASSES = ("right", "left", "below", "above")

    def __post_init__(self) -> None:
        for name in ("grid_h", "grid_w"):
            value = getattr(self, name)
            if not is_int(value) or value < 2:
                raise ValueError(f"{name} must be an int >= 2, got {value!r}")

    @property
    def n_classes(self) -> int:
        return len(self.CLASSES)

    def pairs(self) -> tuple[Tensor, Tensor]:
        """Every allowed (A, B): cell indices (n_pairs, 2) int64 (row-major ``r * grid_w + c``) and labels (n_pairs,)."""
        n = self.grid_h * self.grid_w
        a, b = torch.meshgrid(torch.arange(n), torch.arange(n), indexing="ij")
        a, b = a.reshape(-1), b.reshape(-1)
        dr = b // self.grid_w - a // self.grid_w
        dc = b % self.grid_w - a % self.grid_w
        keep = dr.abs() != dc.abs()
        a, b, dr, dc = a[keep], b[keep], dr[keep], dc[keep]
        horizontal = dc.abs() > dr.abs()
        labels = torch.where(horizontal, torch.where(dc > 0, 0, 1), torch.where(dr > 0, 2, 3))
        return torch.stack([a, b], dim=1), labels

    def offsets(self, cells: Tensor) -> Tensor:
        """Offset of B from A, (n, 2) int64 ``(row offset, column offset)``, for (A, B) cell pairs (n, 2)."""
        if not isinstance(cells, Tensor) or cells.dim() != 2 or cells.shape[1] != 2:
            raise ValueError(f"cells must be an (n, 2) tensor of (A, B) cell indices, got {getattr(cells, 'shape', cells)!r}")
        row, col = cells // self.grid_w, cells % self.grid_w
        return torch.stack([row[:, 1] - row[:, 0], col[:, 1] - col[:, 0]], dim=1)

    def split(self, held_out: Iterable[tuple[int, int]]) -> tuple[tuple[Tensor, Tensor], tuple[Tensor, Tensor]]:
        """Split every allowed pair by the offset of B from A: ``((cells, labels) train, (cells, labels) held out)``.

        held_out: ``(row offset, column offset)`` pairs; every pair whose offset is one of them goes
        to the held-out part, so a model trained on the rest never sees those offsets, at any
        placement. Each must be an offset the canvas allows (not a tie, within the grid).
        """
        cells, labels = self.pairs()
        offsets = self.offsets(cells)
        allowed = {tuple(o) for o in offsets.tolist()}
        held = [tuple(o) for o in held_out]
        bad = [o for o in held if o not in allowed]
        if bad or not held:
            raise ValueError(
                f"held_out must be a non-empty list of (row offset, column offset) pairs allowed on a "
                f"{self.grid_h}x{self.grid_w} canvas (|row offset| != |column offset|), got {held!r}"
            )
        is_held = (offsets[:, None, :] == torch.tensor(held)[None]).all(-1).any(-1)
        return (cells[~is_held], labels[~is_held]), (cells[is_held], labels[is_held])

    def render(self, cells: Tensor) -> Tensor:
        """Images (n, 2, grid_h, grid_w) float32 of (A, B) cell pairs (n, 2)."""
        images = torch.zeros(cells.shape[0], 2, self.grid_h * self.grid_w)
        rows = torch.arange(cells.shape[0])
        images[rows, 0, cells[:, 0]] = 1.0
        images[rows, 1, cells[:, 1]] = 1.0
        return images.reshape(-1, 2, self.grid_h, self.grid_w)

    def sample(self, n: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        """``n`` random images (n, 2, grid_h, grid_w) float32 and their labels (n,) int64."""
        if not is_int(n) or n <= 0:
            raise ValueError(f"n must be a positive integer, got {n!r}")
        if not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
        cells, labels = self.pairs()
        pick = torch.randint(len(labels), (n,), generator=generator)
        return self.render(cells[pick]), labels[pick]

    def bag_of_patches_ceiling(self) -> float:
        """Best expected accuracy of ANY classifier that sees only the multiset of 1x1 patches (exact).

        Every allowed pair is rendered; images are grouped by their sorted list of patch
        vectors, and within a group the best guess is the most frequent label, so the ceiling
        is the sum over groups of that label's share. Every image here has the same bag, so the
        ceiling is the largest class share: 1/4 on a square grid.
        """
        cells, labels = self.pairs()
        patches = self.render(cells).flatten(2).transpose(1, 2)  # (n_pairs, cells, 2)
        by_bag: dict[tuple, Counter] = defaultdict(Counter)
        for bag, label in zip(patches.tolist(), labels.tolist(), strict=True):
            by_bag[tuple(sorted(map(tuple, bag)))][label] += 1
        return sum(max(c.values()) for c in by_bag.values()) / len(labels)
@dataclass(frozen=True)
class WhenAndWhere:
    """A tiny video with two marked patches, A and B; the label says when and where B is, seen from A.

    The video is ``frames`` frames of ``height x width`` patches, one token each, frame after frame and
    row-major within a frame: token ``f * height * width + r * width + c`` is patch (r, c) of frame f.
    Token 1 marks A, token 2 marks B, every other patch is 0. The label (:attr:`CLASSES`) is
    ``2 * [B is in a later frame than A] + [B is in a column right of A's]``: it needs time *and* space.
    A and B never share a frame or a column (so both questions have an answer); their rows are free.
    Every video is the same bag of tokens, so only where the two tokens sit tells the label.

    Sampling is uniform over the allowed placements (:meth:`placements`); :meth:`ceiling` gives the best
    accuracy any classifier can reach from a given view of B's offset from A, exactly.
    """

    frames: int = 4
    height: int = 3
    width: int = 3

    CLASSES = ("earlier, left", "earlier, right", "later, left", "later, right")
    #: tokens: 0 an empty patch, 1 = A, 2 = B
    VOCAB_SIZE = 3

    def __post_init__(self) -> None:
        for name in ("frames", "height", "width"):
            value = getattr(self, name)
            if not is_int(value) or value < (1 if name == "height" else 2):
                raise ValueError(f"{name} must be an int >= {1 if name == 'height' else 2}, got {value!r}")

    @property
    def n_classes(self) -> int:
        return len(self.CLASSES)

    @property
    def seq_len(self) -> int:
        return self.frames * self.height * self.width

    def coordinates(self, token: Tensor) -> Tensor:
        """(frame, row, column) of token indices (...,) int64: (..., 3) int64."""
        per_frame = self.height * self.width
        return torch.stack([token // per_frame, token % per_frame // self.width, token % self.width], dim=-1)

    def placements(self) -> tuple[Tensor, Tensor]:
        """Every allowed (A, B): token indices (n, 2) int64 and labels (n,) int64."""
        a, b = torch.meshgrid(torch.arange(self.seq_len), torch.arange(self.seq_len), indexing="ij")
        cells = torch.stack([a.reshape(-1), b.reshape(-1)], dim=1)
        offset = self.offsets(cells)
        keep = (offset[:, 0] != 0) & (offset[:, 2] != 0)
        cells, offset = cells[keep], offset[keep]
        return cells, 2 * (offset[:, 0] > 0).long() + (offset[:, 2] > 0).long()

    def offsets(self, cells: Tensor) -> Tensor:
        """B's offset from A, (n, 3) int64 (frames, rows, columns), for (A, B) token pairs (n, 2)."""
        if not isinstance(cells, Tensor) or cells.dim() != 2 or cells.shape[1] != 2:
            raise ValueError(f"cells must be an (n, 2) tensor of (A, B) token indices, got {getattr(cells, 'shape', cells)!r}")
        coords = self.coordinates(cells)
        return coords[:, 1] - coords[:, 0]

    def sample(self, n: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        """``n`` random videos: inputs (n, seq_len) int64 tokens and labels (n,) int64."""
        if not is_int(n) or n <= 0:
            raise ValueError(f"n must be a positive integer, got {n!r}")
        if not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
        cells, labels = self.placements()
        pick = torch.randint(len(labels), (n,), generator=generator)
        videos = torch.zeros(n, self.seq_len, dtype=torch.long)
        rows = torch.arange(n)
        videos[rows, cells[pick, 0]] = 1
        videos[rows, cells[pick, 1]] = 2
        return videos, labels[pick]

    def ceiling(self, view: Callable[[Tensor], Tensor]) -> float:
        """Best expected accuracy (exact) of ANY classifier that sees only ``view(offset)`` of B's offset from A.

        view: maps the offsets (n, 3) (frames, rows, columns) to what is seen, (n,) or (n, k) integers,
        e.g. ``lambda o: o`` (everything), ``lambda o: o[:, 1:]`` (rows and columns only, no time),
        ``lambda o: o @ torch.tensor([height * width, width, 1])`` (the offset in the flattened sequence).
        Placements are grouped by what is seen; within a group the best guess is the most frequent
        label, so the ceiling is the sum over groups of that label's share.
        """
        cells, labels = self.placements()
        seen = view(self.offsets(cells))
        if not isinstance(seen, Tensor) or seen.shape[0] != len(labels) or seen.dim() > 2:
            raise ValueError(f"view must return an (n,) or (n, k) tensor for n = {len(labels)} offsets, "
                             f"got {getattr(seen, 'shape', type(seen).__name__)}")
        groups: dict[tuple, Counter] = defaultdict(Counter)
        for key, label in zip(seen.reshape(len(labels), -1).tolist(), labels.tolist(), strict=True):
            groups[tuple(key)][label] += 1
        return sum(max(c.values()) for c in groups.values()) / len(labels)


# ----------------------------------------------------------------- character corpus (notebook 06)
#: The shipped corpus, six Shakespeare tragedies, public domain (see data/README.md and tools/prepare_corpus.py).
CORPUS_FILE = "shakespeare_tragedies.txt"
CORPUS_SHA256 = "c9f22c1162741d6c6881a430bf07c88e542d22306ae330a31f3c9d1376994ce9"
#: Where the validation split starts (the last play of the file; training uses the five before it).
CORPUS_VALID_START = "MACBETH\n\nby William Shakespeare\n"


@dataclass(frozen=True)
class CharCorpus:
    """A character-level corpus: its text, a char vocabulary and the train/validation ids.

    ``vocab`` has one token per distinct character, sorted (no specials: every id is a real
    character). ``train`` and ``valid`` are 1-D int64 tensors of character ids; ``valid`` is
    the text from ``valid_start`` on (a whole held-out play for the shipped corpus).
    """

    text: str
    vocab: Vocab
    train: Tensor
    valid: Tensor

    def encode(self, text: str) -> Tensor:
        """Characters -> ids (len(text),) int64; unknown characters raise ValueError."""
        return self.vocab.encode(list(text))

    def decode(self, ids: Tensor | Sequence[int]) -> str:
        """Ids (1-D) -> the string they spell."""
        return "".join(self.vocab.decode(ids, skip=()))


def char_corpus(
    name: str = CORPUS_FILE,
    sha256: str = CORPUS_SHA256,
    valid_start: str = CORPUS_VALID_START,
    data_dir: Path | None = None,
) -> CharCorpus:
    """Load a shipped ASCII text file as a :class:`CharCorpus`, split where ``valid_start`` first occurs.

    The file is checked by :func:`shipped_file` first (a missing file raises FileNotFoundError,
    a corrupt one ValueError, both naming the file and what was expected). The defaults load
    notebook 06's corpus: five plays to train on, Macbeth to validate on.
    """
    path = shipped_file(name, sha256, data_dir)
    text = path.read_bytes().decode("ascii")
    split = text.find(valid_start)
    if split <= 0:
        raise ValueError(f"valid_start {valid_start!r} must occur in {str(path)!r} after its first character")
    chars = sorted(set(text))
    vocab = Vocab(tuple(chars))
    lookup = torch.zeros(128, dtype=torch.long)
    lookup[torch.tensor([ord(c) for c in chars])] = torch.arange(len(chars))
    ids = lookup[torch.frombuffer(bytearray(text.encode("ascii")), dtype=torch.uint8).long()]
    return CharCorpus(text, vocab, ids[:split].clone(), ids[split:].clone())


def _check_windows(ids: Tensor, seq_len: int, count: int, count_name: str) -> None:
    if not isinstance(ids, Tensor) or ids.dim() != 1 or ids.dtype != torch.long:
        got = f"shape {tuple(ids.shape)}, dtype {ids.dtype}" if isinstance(ids, Tensor) else type(ids).__name__
        raise TypeError(f"ids must be a 1-D int64 tensor of token ids, got {got}")
    for arg, value in (("seq_len", seq_len), (count_name, count)):
        if not is_int(value) or value < 1:
            raise ValueError(f"{arg} must be an int >= 1, got {value!r}")
    if ids.numel() < seq_len + 1:
        raise ValueError(f"seq_len + 1 = {seq_len + 1} must not exceed the {ids.numel()} ids given")


def lm_batch(ids: Tensor, seq_len: int, batch_size: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """A language-model batch: ``batch_size`` windows of ``seq_len`` + 1 ids at random offsets of ``ids``.

    Returns inputs (batch_size, seq_len) and targets (batch_size, seq_len) int64, the targets
    being the inputs shifted by one (the next character). Offsets come from ``generator``.
    """
    _check_windows(ids, seq_len, batch_size, "batch_size")
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    starts = torch.randint(0, ids.numel() - seq_len, (batch_size,), generator=generator)
    windows = ids[starts[:, None] + torch.arange(seq_len + 1)]
    return windows[:, :-1], windows[:, 1:]


def lm_eval_windows(ids: Tensor, seq_len: int, n: int) -> tuple[Tensor, Tensor]:
    """``n`` fixed, non-overlapping windows from the start of ``ids``: inputs and targets (n, seq_len).

    The same ids always give the same windows, so every model is scored on the same text.
    Raises ValueError when ``ids`` holds fewer than ``n * seq_len + 1`` ids.
    """
    _check_windows(ids, seq_len, n, "n")
    if ids.numel() < n * seq_len + 1:
        raise ValueError(f"n * seq_len + 1 = {n * seq_len + 1} ids needed for {n} windows, got {ids.numel()}")
    starts = torch.arange(n) * seq_len
    windows = ids[starts[:, None] + torch.arange(seq_len + 1)]
    return windows[:, :-1], windows[:, 1:]

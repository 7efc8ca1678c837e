"""The contract every position scheme in the library keeps, checked on one small model per scheme.

A TinyTransformer using the scheme
  * round-trips through ``torch.save`` / ``torch.load(weights_only=True)`` of its state_dict
    with identical outputs,
  * keeps derived caches (tables, indices, frequencies) out of the state_dict, also after they
    grew for positions past their initial size,
  * still works after ``.to(torch.float64)``, with outputs close to float32,
  * compiles with ``torch.compile(fullgraph=True)`` (backend aot_eager: one graph, no break) to the eager outputs,
and each scheme overrides exactly the hook its ``kind`` names; 1-D schemes in a causal model
give the same last-token logits with a KV cache as with a full pass.

Every scheme uses the same input: a batch of 2 sequences of 10 tokens, which for the vision
schemes is 1 class token + a 3x3 patch grid.
"""

from __future__ import annotations

import copy
import importlib
import io
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch

import posenc_lib
from posenc_lib.analysis.pair_usage import WithoutPairs
from posenc_lib.conditional.peg import PEG
from posenc_lib.embeddings.learnable import LearnablePE
from posenc_lib.embeddings.sinusoidal import SinusoidalPE
from posenc_lib.embeddings.tables_2d import Learnable2DPE, SinCos2DPE
from posenc_lib.models import TinyTransformer, last_token_logits_two_ways
from posenc_lib.qk_bias.transformer_xl import TransformerXLRelative
from posenc_lib.registry import SCHEMES, build_scheme
from posenc_lib.rotary.decoupled import DecoupledRoPE
from posenc_lib.rotary.mrope import MRoPE, mrope_positions
from posenc_lib.rotary.rope import RotaryPE
from posenc_lib.rotary.rope_2d import AxialRoPE2D, MixedRoPE2D
from posenc_lib.rotary.temperature import QueryTemperature
from posenc_lib.scheme import NoPosition, PositionScheme
from posenc_lib.score_bias.alibi import ALiBi
from posenc_lib.score_bias.swin import SwinRelativeBias
from posenc_lib.score_bias.t5 import T5RelativeBias

D_MODEL, N_HEADS, VOCAB, SEQ = 32, 4, 13, 10
HEAD_DIM = D_MODEL // N_HEADS
GRID = dict(grid_h=3, grid_w=3, n_prefix=1)  # 1 + 3*3 = SEQ tokens


@dataclass(frozen=True)
class Case:
    name: str
    make: Callable[[], PositionScheme]
    causal: bool = False
    far_offset: int = 0  # > 0: also run at positions offset.. to grow the scheme's caches
    grid: bool = False  # a 2-D scheme: positions index a 1 + 3x3 token grid

    def __str__(self) -> str:
        return self.name


CASES = [
    Case("none", NoPosition),
    Case("sinusoidal-interleaved", lambda: SinusoidalPE(D_MODEL, max_len=16), far_offset=100),
    Case("sinusoidal-half", lambda: SinusoidalPE(D_MODEL, max_len=16, layout="half"), far_offset=100),
    Case("learnable", lambda: LearnablePE(D_MODEL, max_len=16)),
    Case("rope-half", lambda: RotaryPE(HEAD_DIM), causal=True, far_offset=1000),
    Case("rope-interleaved", lambda: RotaryPE(HEAD_DIM, layout="interleaved"), causal=True, far_offset=1000),
    Case(
        "rope-yarn",
        lambda: RotaryPE(HEAD_DIM, scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8}),
        causal=True,
        far_offset=1000,
    ),
    Case(  # L0 = 8 < SEQ: the long factors in every call
        "rope-longrope",
        lambda: RotaryPE(HEAD_DIM, scaling={"rope_type": "longrope", "short_factor": [1.0, 1.1, 1.3, 2.0],
                                            "long_factor": [1.0, 2.0, 4.0, 8.0], "original_max_position_embeddings": 8,
                                            "max_position_embeddings": 64}),
        causal=True,
        far_offset=1000,
    ),
    Case("rope-proportional", lambda: RotaryPE(HEAD_DIM, rotary_fraction=0.5, scaling={"rope_type": "proportional"}),
         causal=True, far_offset=1000),
    # M-RoPE over 1 text token then a 1 x 3 x 3 grid: SEQ tokens, positions index the table
    Case("mrope-sectioned", lambda: MRoPE(HEAD_DIM, mrope_positions(1, 3, 3, n_text_before=1)), causal=True),
    Case("mrope-interleaved", lambda: MRoPE(HEAD_DIM, mrope_positions(1, 3, 3, n_text_before=1), mrope_interleaved=True),
         causal=True),
    Case(
        "decoupled-rope-yarn",
        lambda: DecoupledRoPE(4, 4, layout="interleaved", scaling={
            "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8, "mscale": 0.707,
            "mscale_all_dim": 0.707}),
        causal=True,
        far_offset=1000,
    ),
    Case("query-temperature", lambda: QueryTemperature(floor_scale=4, attn_scale=0.5), causal=True, far_offset=1000),
    Case("t5-bidirectional", lambda: T5RelativeBias(N_HEADS, num_buckets=16, max_distance=32), far_offset=500),
    Case(
        "t5-causal",
        lambda: T5RelativeBias(N_HEADS, num_buckets=16, max_distance=32, bidirectional=False),
        causal=True,
        far_offset=500,
    ),
    Case("alibi-causal", lambda: ALiBi(N_HEADS, causal=True), causal=True, far_offset=500),
    Case("alibi-symmetric", lambda: ALiBi(N_HEADS, causal=False), far_offset=500),
    Case("transformer-xl", lambda: TransformerXLRelative(D_MODEL, N_HEADS), far_offset=1000),
    Case("transformer-xl-causal", lambda: TransformerXLRelative(D_MODEL, N_HEADS), causal=True, far_offset=1000),
    Case("swin", lambda: SwinRelativeBias(N_HEADS, window_h=3, window_w=3, n_prefix=1), grid=True),
    Case("learnable2d-add", lambda: Learnable2DPE(D_MODEL, mode="add", **GRID), grid=True),
    Case("learnable2d-concat", lambda: Learnable2DPE(D_MODEL, mode="concat", **GRID), grid=True),
    Case("sincos2d", lambda: SinCos2DPE(D_MODEL, **GRID), grid=True),
    Case("axial-rope2d", lambda: AxialRoPE2D(HEAD_DIM, **GRID), grid=True),
    Case("mixed-rope2d", lambda: MixedRoPE2D(HEAD_DIM, N_HEADS, **GRID), grid=True),
    Case("peg", lambda: PEG(D_MODEL, **GRID), grid=True),
]

# The registry's every entry, at its defaults: a scheme added to SCHEMES is checked without editing this file.
# (A wrapper around another scheme, such as analysis.pair_usage.WithoutPairs, is not a scheme of its own.)
WRAPPERS = {WithoutPairs, PositionScheme}  # and the interface itself


def _registered(name: str) -> Case:
    try:
        build_scheme(name, D_MODEL, N_HEADS, max_len=16)
    except ValueError as err:  # a 2-D scheme asks for its grid
        if "grid" not in str(err):
            raise
        return Case(f"registry:{name}", lambda: build_scheme(name, D_MODEL, N_HEADS, grid=(3, 3), n_prefix=1),
                    grid=True)
    return Case(f"registry:{name}", lambda: build_scheme(name, D_MODEL, N_HEADS, max_len=16), causal=True)


REGISTERED = [_registered(name) for name in SCHEMES]
CASES = CASES + REGISTERED


def _model(case: Case, seed: int = 0, causal: bool | None = None) -> TinyTransformer:
    torch.manual_seed(seed)
    causal = case.causal if causal is None else causal
    model = TinyTransformer(
        VOCAB, 5, d_model=D_MODEL, n_heads=N_HEADS, n_layers=1, scheme=case.make(), causal=causal, pool="none"
    )
    return model.eval()


def _tokens() -> torch.Tensor:
    return torch.randint(0, VOCAB, (2, SEQ), generator=torch.Generator().manual_seed(1))


def _far_positions(case: Case) -> torch.Tensor:
    return torch.arange(case.far_offset, case.far_offset + SEQ)[None]


@pytest.fixture(params=CASES, ids=str)
def case(request) -> Case:
    return request.param


def test_every_public_scheme_class_is_registered_and_every_registered_scheme_is_checked():
    """A new scheme class anywhere in the library must be in the registry; the registry's entries are all cases."""
    public = set()
    for info in pkgutil.walk_packages(posenc_lib.__path__, "posenc_lib."):
        module = importlib.import_module(info.name)
        public |= {obj for name in getattr(module, "__all__", [])
                   if isinstance(obj := getattr(module, name), type) and issubclass(obj, PositionScheme)}
    public -= WRAPPERS
    registered = {type(case.make()) for case in REGISTERED}
    assert public == registered, f"not in posenc_lib.registry.SCHEMES: {public - registered}"
    assert {type(case.make()) for case in CASES} >= registered


HOOK_OF_KIND = {"none": set(), "embedding": {"add_to_embeddings"}, "rotary": {"rotate_qk"}, "bias": {"score_bias"},
                "qk-bias": {"qk_bias"}}


def test_kind_names_the_hook_the_scheme_overrides(case):
    scheme = case.make()
    overridden = {
        hook for hook in ("add_to_embeddings", "rotate_qk", "score_bias", "qk_bias")
        if getattr(type(scheme), hook) is not getattr(PositionScheme, hook)
    }
    assert scheme.kind in HOOK_OF_KIND and overridden == HOOK_OF_KIND[scheme.kind]


@pytest.mark.parametrize("case", [c for c in CASES if not c.grid], ids=str)  # images are not decoded token by token
def test_kv_cache_decode_matches_full_pass(case):
    model = _model(case, causal=True)
    full, cached = last_token_logits_two_ways(model, _tokens())
    torch.testing.assert_close(cached, full, rtol=1e-5, atol=1e-5)


@torch.no_grad()
def test_state_dict_round_trip_with_weights_only_load(case):
    model = _model(case, seed=0)
    tokens = _tokens()
    expected = model(tokens)
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)
    fresh = _model(case, seed=1)
    assert not torch.equal(fresh(tokens), expected), "a different seed must give a different model"
    fresh.load_state_dict(state, strict=True)
    torch.testing.assert_close(fresh(tokens), expected, rtol=0, atol=0)


@torch.no_grad()
def test_caches_stay_out_of_state_dict(case):
    model = _model(case)
    scheme = model.scheme
    params = {name for name, _ in scheme.named_parameters()}
    assert set(scheme.state_dict()) == params, "a scheme saves its parameters and nothing else"
    keys_before = set(model.state_dict())
    model(_tokens())
    if case.far_offset:
        model(_tokens(), positions=_far_positions(case))  # grows tables / caches
    assert set(model.state_dict()) == keys_before
    fresh = _model(case, seed=1)
    fresh.load_state_dict(model.state_dict(), strict=True)
    if case.far_offset:
        torch.testing.assert_close(
            fresh(_tokens(), positions=_far_positions(case)), model(_tokens(), positions=_far_positions(case))
        )


@torch.no_grad()
def test_float64_conversion(case):
    model = _model(case)
    tokens = _tokens()
    positions = _far_positions(case) if case.far_offset else None
    y32 = model(tokens, positions=positions)
    model64 = copy.deepcopy(model).to(torch.float64)
    assert all(t.dtype == torch.float64 for t in model64.state_dict().values())
    y64 = model64(tokens, positions=positions)
    assert y64.dtype == torch.float64
    torch.testing.assert_close(y64.float(), y32, rtol=1e-4, atol=1e-5)


# Compiled with the "aot_eager" backend: Dynamo captures the whole model as one graph (fullgraph: a graph break
# fails) and AOTAutograd traces it, which is where a scheme can break compilation. Inductor, the default backend,
# then generates and builds C++ for the captured graph: that is PyTorch's to get right, and a C++ build costs 1-3 s
# a model on 2 cores (about 18 s for a process's first) against well under 1 s here. Inductor itself compiles RoPE
# (test_rope.py::test_torch_compile_fullgraph), LongRoPE (test_today_models.py) and the benchmark's compiled methods.
@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
@torch.no_grad()
def test_torch_compile_fullgraph_matches_eager(case):
    torch._dynamo.reset()  # each model is a fresh compile; keeps dynamo's recompile limit out of the way
    model = _model(case)
    tokens = _tokens()
    compiled = torch.compile(model, fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(compiled(tokens), model(tokens), rtol=1e-5, atol=1e-5)

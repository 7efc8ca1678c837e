"""The benchmark code (bench/), on tiny shapes: it measures the right thing and cannot rot."""

from __future__ import annotations

import time

import pytest
import torch

from bench import rope_bench, series_bench
from bench.common import (
    allocation_profile,
    format_bytes,
    format_seconds,
    interleaved_times,
)
from bench.run import main
from bench.schemes_bench import discover_schemes, grid_shape, growth_exponent, scheme_memory

# ----------------------------------------------------------------------------- measuring tools


def test_allocation_profile_counts_exact_bytes_from_the_call_start():
    alive_before = torch.ones(3_000_000)  # 12 MB that must not count
    kept = []

    def fn():
        kept.append(torch.empty(1_000_000))  # 4 MB kept after the call
        scratch = torch.empty(2_000_000)  # 8 MB freed inside
        del scratch
        return torch.empty(500_000)  # 2 MB, released after the call

    peak, retained = allocation_profile(fn)
    assert (peak, retained) == (4_000_000 + 8_000_000, 4_000_000)
    # a second call starts from its own zero although the first call's 4 MB are still alive
    assert allocation_profile(fn) == (12_000_000, 4_000_000)
    assert alive_before.sum() == 3_000_000


def test_allocation_profile_sees_a_kernel_result_but_not_what_existed_before():
    x = torch.randn(1000, 1000)
    cache = {}

    def fn():
        if "table" not in cache:  # built by the first (warm-up) call only
            cache["table"] = torch.empty(5_000_000)
        return x @ x  # 4 MB result

    assert allocation_profile(fn) == (24_000_000, 20_000_000)
    assert allocation_profile(fn) == (4_000_000, 0)


def test_interleaved_times_rank_cases_and_validate():
    times = interleaved_times(
        {"short": lambda: time.sleep(0.001), "long": lambda: time.sleep(0.02)}, rounds=3, threads=1, min_block_s=0.0
    )
    assert set(times) == {"short", "long"}
    assert all(len(t.samples) == 3 and t.spread >= 0 for t in times.values())
    assert times["short"].median >= 0.001 and times["long"].median >= 0.02
    assert times["long"].median > times["short"].median
    with pytest.raises(ValueError, match="rounds must be an integer >= 1, got 0"):
        interleaved_times({"a": lambda: None}, rounds=0, threads=1)
    with pytest.raises(ValueError, match="threads must be an integer >= 1, got 0"):
        interleaved_times({"a": lambda: None}, rounds=1, threads=0)
    with pytest.raises(ValueError, match="cases"):
        interleaved_times({}, rounds=1, threads=1)
    with pytest.raises(ValueError, match=r"reset names cases that do not exist: \['b'\]"):
        interleaved_times({"a": lambda: None}, rounds=1, threads=1, reset={"b": lambda: None})


def test_a_round_under_load_is_discarded_and_measured_again(monkeypatch):
    """Other processes' CPU during a round (fed here: 1.5 cores, then 0.05) sends the round back after a pause;
    a round that never gets quiet is kept after max_tries, with its load on record."""
    from bench import common

    loads = iter([1.5, 0.05, 1.5, 1.5, 0.0] + [0.0] * 10)
    monkeypatch.setattr(common, "other_cores", lambda since: next(loads))
    times = interleaved_times({"a": lambda: None, "b": lambda: None}, rounds=3, threads=1, min_block_s=0.0,
                              max_other_cores=0.2, max_tries=2, pause_s=0.0)
    # round 1: discarded, then kept (0.05); round 2: 1.5 twice, the second kept (max_tries); round 3: kept (0.0)
    assert all(len(t.samples) == 3 and t.discarded == 2 and t.other_cores == 1.5 for t in times.values())
    quiet = interleaved_times({"a": lambda: None}, rounds=2, threads=1, min_block_s=0.0)  # no threshold: keeps all
    assert quiet["a"].discarded == 0


def test_other_cores_reads_the_machine_less_this_process():
    from bench.common import cpu_snapshot, other_cores

    since = cpu_snapshot()
    end = time.perf_counter() + 0.3
    while time.perf_counter() < end:  # this process busy: not counted as other processes' load
        pass
    load = other_cores(since)
    assert load is None or 0.0 <= load <= 2.5


def test_reset_runs_before_every_round_of_its_case():
    state = {"calls": 0, "resets": 0}

    def case():
        state["calls"] += 1

    interleaved_times({"a": case, "b": lambda: None}, rounds=4, threads=1, min_block_s=0.0,
                      reset={"a": lambda: state.update(resets=state["resets"] + 1)})
    assert state["resets"] == 4 and state["calls"] >= 4


def test_formatting():
    assert [format_seconds(s) for s in (2.5e-6, 1.234e-4, 0.0123, 1.5, 250e-6)] == [
        "2.5 µs", "123 µs", "12.3 ms", "1.5 s", "250 µs"]
    assert [format_bytes(b) for b in (512, 2048, 3 * 2**20, 1.5 * 2**30)] == ["512 B", "2 KiB", "3 MiB", "1.5 GiB"]


# ----------------------------------------------------------------------------- RoPE


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_peers_rotate_like_the_float64_reference(dtype):
    """The peers (eager) and the library's rows, forward and backward, against float64; compiled rows in make bench."""
    x = rope_bench.make_inputs((2, 3, 16, 8), dtype)
    tol = 1e-5 if dtype == torch.float32 else 0.05
    for method in rope_bench.METHODS:
        if method.name.endswith(", compiled"):
            continue
        q, k = x.q.clone().requires_grad_(), x.k.clone().requires_grad_()
        outs = method.fn(q, k, *x.tables[method.family])
        torch.autograd.backward(outs, (x.dq, x.dk))
        for got, want in ((outs[0], x.q), (outs[1], x.k)):
            assert (got.double() - rope_bench._reference(want, x.angles, method.layout)).abs().max() <= tol, method.name
        assert (q.grad.double() - rope_bench._reference(x.dq, x.angles, method.layout, -1.0)).abs().max() <= tol


def test_rows_layouts_and_peers():
    rb = rope_bench
    assert rb.PEERS == {"half": ["HF rotate_half", "HF rotate_half, compiled"],
                        "interleaved": ["Meta complex", "Meta complex, compiled"]}
    assert {m.name for m in rb.METHODS if m.library} == {
        "library half", "library half, compiled", "library interleaved", "library interleaved, compiled"}
    alternatives = {m.name for m in rb.METHODS if m.alternative}
    assert alternatives == {f"library {layout}, hand-written backward{c}" for layout in ("half", "interleaved")
                            for c in ("", ", compiled")}
    x = rb.make_inputs((1, 2, 8, 8), torch.float32)
    assert set(rb.cases(x, "fwd")) == set(rb.METHOD_NAMES) - alternatives and set(rb.cases(x, "fwd+bwd")) == set(rb.METHOD_NAMES)


def test_the_check_catches_a_wrong_layout(monkeypatch):
    x = rope_bench.make_inputs((1, 2, 8, 8), torch.float32)
    swapped = [rope_bench.Method(m.name, m.layout, m.peer, m.family, rope_bench.library(
        {"half": "interleaved", "interleaved": "half"}[m.layout])) if m.name == "library half" else m
        for m in rope_bench.METHODS if not m.name.endswith(", compiled")]
    monkeypatch.setattr(rope_bench, "METHODS", swapped)
    with pytest.raises(AssertionError, match="library half \\(fwd\\): output off"):
        rope_bench.check_methods(x)


def test_ratios_and_targets_against_the_fastest_peer_of_the_layout():
    rb = rope_bench
    timing = lambda s: rb.Timing(s, (s, s))  # noqa: E731
    cell = ((8, 8, 256, 64), torch.float32, "fwd")
    times = {"HF rotate_half": 4.0, "HF rotate_half, compiled": 2.0, "Meta complex": 3.0, "Meta complex, compiled": 5.0,
             "library half": 6.0, "library half, compiled": 2.1, "library interleaved": 3.3,
             "library interleaved, compiled": 4.0}
    results = [rb.RopeResult(cell[0], cell[1], cell[2], name, timing(s)) for name, s in times.items()]
    targets = {t.layout: t for t in rb.evaluate_targets(results)}
    assert (targets["half"].row, targets["half"].peer, round(targets["half"].ratio.median, 3)) == (
        "library half, compiled", "HF rotate_half, compiled", 1.05)
    assert targets["half"].met and not targets["interleaved"].met
    assert (targets["interleaved"].peer, round(targets["interleaved"].ratio.median, 3)) == ("Meta complex", 1.1)
    table = rb.rope_tables_markdown(results)
    assert "| library half | 6 s | 3.00× (3.00–3.00) |" in table and "| HF rotate_half, compiled | 2 s | 1.00× (1.00–1.00)* |" in table
    assert "| Meta complex | 3 s | 1.00× (1.00–1.00)* |" in table and "| library interleaved | 3.3 s | 1.10× (1.10–1.10) |" in table
    markdown = rb.targets_markdown(list(targets.values()))
    assert "1 of 2 met" in markdown and "| NOT MET |" in markdown and "| MET |" in markdown


def test_ratios_are_taken_round_by_round():
    rb = rope_bench
    ratio = rb.Ratio.of(rb.Timing(4.0, (2.0, 4.0, 9.0, 4.0, 5.0)), rb.Timing(2.0, (1.0, 2.0, 3.0, 1.0, 2.0)))
    assert (ratio.median, ratio.low, ratio.high) == (2.5, 2.0, 3.0)  # per round: 2, 2, 3, 4, 2.5
    assert str(ratio) == "2.50× (2.00–3.00)"  # every ratio with its interquartile range, even a single round's
    assert str(rb.Ratio.of(rb.Timing(3.0, (3.0,)), rb.Timing(2.0, (2.0,)))) == "1.50× (1.50–1.50)"


# ----------------------------------------------------------------------------- schemes


def test_every_library_scheme_is_benchmarked():
    found, missing = discover_schemes()
    assert missing == []
    names = {spec.name for spec in found}
    assert {"NoPosition", "SinusoidalPE", "LearnablePE", "RotaryPE half", "T5RelativeBias", "ALiBi full (h, L, L)",
            "ALiBi compact (h, 1, L)", "SwinRelativeBias"} <= names


def test_grid_shape_and_growth_exponent():
    assert [grid_shape(n) for n in (1, 2, 128, 256, 2048)] == [(1, 1), (1, 2), (8, 16), (16, 16), (32, 64)]
    with pytest.raises(ValueError, match="power of two to form a patch grid, got 100"):
        grid_shape(100)
    assert growth_exponent([64, 128], [1.0, 4.0]) == pytest.approx(2.0)
    assert growth_exponent([64, 128, 256], [5.0, 1.0, 2.0]) == pytest.approx(1.0)


def test_full_biases_grow_as_l_squared_and_tables_as_l():
    found = {spec.name: spec for spec in discover_schemes()[0]}
    d_model, n_heads = 16, 2

    def exponent(name: str, lengths: tuple[int, int], setting: str = "bidirectional") -> float:
        memory = [sum(scheme_memory(found[name], n, setting, d_model, n_heads)) for n in lengths]
        return growth_exponent(lengths, memory)

    # from L=1024 on, the scratch of the CPU flash-attention kernel grows as L (below, its blocking changes)
    for name in ("NoPosition", "SinusoidalPE", "LearnablePE", "RotaryPE half", "AxialRoPE2D"):
        assert exponent(name, (1024, 2048)) < 1.2, name
    for name in ("T5RelativeBias", "ALiBi full (h, L, L)", "SwinRelativeBias", "Transformer-XL (relative shift)"):
        assert exponent(name, (256, 512)) > 1.8, name
    # the compact ALiBi bias is (h, 1, L) and rides into SDPA as a q/k column under is_causal: no (L, L) tensor
    assert exponent("ALiBi compact (h, 1, L)", (256, 512), "causal") < 1.2
    resident, peak = scheme_memory(found["ALiBi full (h, L, L)"], 512, "bidirectional", d_model, n_heads)
    assert resident == n_heads * 4 and peak >= n_heads * 512 * 512 * 4  # the slopes; the float32 bias
    with pytest.raises(ValueError, match="setting must be one of"):
        scheme_memory(found["NoPosition"], 16, "encoder", d_model, n_heads)


# ----------------------------------------------------------------------------- the series' training time


def test_series_categories_split_a_training_step():
    assert series_bench.category("aten::addmm") == "matrix products (MKL)"
    assert series_bench.category("aten::_scaled_dot_product_flash_attention_for_cpu_backward") == "fused attention (SDPA)"
    assert series_bench.category("aten::_foreach_lerp_") == "AdamW"
    assert series_bench.category("aten::gelu_backward") == "GELU"
    assert series_bench.category("aten::softmax") == "other operations"
    assert series_bench.category("batch") == "drawing the batch"
    # an operation's callers decide: AdamW's element-wise work is AdamW's, an mm inside is still AdamW's
    assert series_bench.category_in_context(["Optimizer.step#AdamW.step", "aten::_foreach_mul_", "aten::mul_"]) == "AdamW"
    assert series_bench.category_in_context(["aten::linear", "aten::addmm"]) == "matrix products (MKL)"
    assert series_bench.category_in_context(["aten::layer_norm", "aten::native_layer_norm"]) == "other operations"


def test_series_measure_profiles_a_step_and_hashes_the_bits():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for rope in (True, False):  # 06's kind of batches and 02's
            small = series_bench.Model("tiny", 8, 16, 2, 4, 6, rope=rope)
            a, b = (series_bench._measure(small, steps=5, profiled_steps=3, hash_steps=3) for _ in range(2))
            assert a["hash"] == b["hash"]  # one setting, one process: the same bits
            assert set(a["shares"]) == set(series_bench.CATEGORIES) and abs(sum(a["shares"].values()) - 1) < 1e-9
            assert all(a["shares"][c] > 0 for c in ("matrix products (MKL)", "AdamW", "drawing the batch"))
            assert a["step_s"] > 0
    finally:
        torch.set_num_threads(threads)


def _series_results(ref_s: float, native_hash: str) -> dict:
    shares = dict.fromkeys(series_bench.CATEGORIES, 0.0) | {"matrix products (MKL)": 0.6, "other operations": 0.4}
    one = {"step_s": ref_s, "shares": shares, "hash": "h", "capability": "AVX2"}
    return {s: {m.name: dict(one, hash=native_hash if s == "native" else "h", step_s=ref_s / (2 if s == "native" else 1))
                for m in series_bench.MODELS} for s in series_bench.SETTINGS}


def test_series_targets_follow_the_issue_and_say_why():
    fast = series_bench.series_markdown(_series_results(0.01, "h"), dict.fromkeys(series_bench.SERIES, 20.0), "test")
    assert fast.count("| met |") == 2 and "NOT MET" not in fast and "160 s" in fast
    slow_times = dict.fromkeys(series_bench.SERIES, 20.0) | {"06": 80.0}
    slow = series_bench.series_markdown(_series_results(0.01, "other"), slow_times, "test")
    assert "| the slowest of 00-07 (06) ≤ 75 s | 80 s | ≤ 75 s | NOT MET |" in slow  # 220 s together: met
    assert "| notebooks 00-07 together ≤ 240 s | 220 s | ≤ 240 s | met |" in slow
    assert "60% and 60% of a step" in slow and "native: a step 2.00-2.00× as fast, other bits" in slow
    assert "2 threads: a step 1.00-1.00× as fast, the same bits" in slow


# ----------------------------------------------------------------------------- end to end


def test_make_bench_quick_writes_every_result(tmp_path, capsys):
    threads = torch.get_num_threads()
    try:
        assert main(["--quick", "--rounds", "1", "--scheme-rounds", "1", "--threads", "1", "--out", str(tmp_path)]) == 0
    finally:  # main sets the process's thread count (a command's job); later tests in this process keep theirs
        torch.set_num_threads(threads)
    rope_md = (tmp_path / "rope.md").read_text()
    for name in rope_bench.METHOD_NAMES:
        assert f"| {name} |" in rope_md
    assert "torch threads (Timer num_threads): 1" in rope_md and torch.__version__ in rope_md
    assert "load average (1 / 5 / 15 min), at the start; at the end: " in rope_md  # how busy the machine was
    schemes_md = (tmp_path / "schemes.md").read_text()
    assert "### bidirectional: memory" in schemes_md and "### causal: time" in schemes_md
    assert (tmp_path / "schemes.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(tmp_path.glob("*.tmp"))
    out = capsys.readouterr().out
    assert all(f"| {name} |" in out for name in rope_bench.METHOD_NAMES) and rope_bench.RATIO_NOTE in rope_md
    assert "within 1.05× the fastest peer of that layout" in rope_md


def test_the_attribution_rows_rotate_alike():
    """bench/rope_attribution.py: the rows of a group (one layout) compute the same rotation (eager here), so the
    timing compares the work around it; bf16 rows agree to bf16's rounding of one rotation."""
    from bench.rope_attribution import rows
    for dtype, tol in ((torch.float32, 1e-6), (torch.bfloat16, 2e-2)):
        cases = rows((1, 2, 8, 8), dtype, compile=False)
        for layout in ("interleaved", "half"):
            outs = [fn() for name, fn in cases.items() if name.startswith(layout)]
            assert len(outs) >= 3
            for q, k in outs[1:]:
                torch.testing.assert_close(q.float(), outs[0][0].float(), atol=tol, rtol=tol)
                torch.testing.assert_close(k.float(), outs[0][1].float(), atol=tol, rtol=tol)
